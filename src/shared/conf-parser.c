/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <ini.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "alloc-util.h"
#include "conf-parser.h"
#include "fd-util.h"
#include "log.h"
#include "parse-util.h"
#include "path-util.h"
#include "string-util.h"
#include "strv.h"
#include "time-util.h"

typedef struct ParseState {
        const char *path;
        FILE *f;
        unsigned line;
        const ConfigItem *table;
        void *base;
        const void *defaults;
        int error; /* first error, negative errno */
} ParseState;

static void parse_error(ParseState *s, int error, const char *message) {
        if (s->error == 0)
                s->error = log_error_errno(error, "%s:%u: %s", s->path, s->line, message);
}

/*
 * inih reads through this, so that we know the line number of every assignment, and so that
 * lines reach it in the form our syntax promises: leading whitespace removed (inih would take an
 * indented line as a continuation of the previous value) and ':' refused as a separator.
 */
static char *reader(char *str, int num, void *stream) {
        ParseState *s = stream;
        size_t skip, sep;
        char *l;

        l = fgets(str, num, s->f);
        if (!l)
                return NULL;
        s->line++;
        if (!strchr(l, '\n') && !feof(s->f)) {
                /* Longer than libinih's line buffer: it would read the tail as a new line. */
                char msg[64];
                int c;

                (void) snprintf(msg, sizeof(msg), "Line too long (more than %i characters).", num - 2);
                parse_error(s, E2BIG, msg);
                while ((c = fgetc(s->f)) != EOF && c != '\n')
                        ;
                str[0] = '\0'; /* inih sees an empty line */
                return l;
        }

        skip = strspn(l, " \t");
        memmove(l, l + skip, strlen(l + skip) + 1);

        if (!strchr("#;[\r\n", l[0]) && l[0] != '\0') {
                sep = strcspn(l, "=:");
                if (l[sep] == ':') {
                        parse_error(s, EINVAL, "Expected 'Key=Value': ':' does not separate keys from values.");
                        str[0] = '\0';
                }
        }
        return l;
}

static int handler(void *user, const char *section, const char *key, const char *value) {
        ParseState *s = user;
        int r;

        for (const ConfigItem *i = s->table; i->section; i++) {
                if (!streq(i->section, section) || !streq(i->key, key))
                        continue;
                if (isempty(value) && s->defaults) {
                        /* "Key=" restores the built-in default, as in systemd's files. */
                        memcpy((uint8_t *) s->base + i->offset, (const uint8_t *) s->defaults + i->offset, i->size);
                        return 1;
                }
                r = i->parse(s->path, s->line, section, key, value, (uint8_t *) s->base + i->offset);
                if (r < 0 && s->error == 0)
                        s->error = r;
                return 1;
        }

        _cleanup_free_ char *k = cescape(key), *sec = cescape(section);
        log_warning("%s:%u: Unknown setting '%s=' in section [%s], ignoring.", s->path, s->line, strna(k),
                    strna(sec));
        return 1;
}

int config_parse_file(const char *path, const ConfigItem *table, void *base, const void *defaults) {
        _cleanup_fclose_ FILE *f = NULL;
        ParseState s = { .path = path, .table = table, .base = base, .defaults = defaults };
        struct stat st;
        int r;

        f = fopen(path, "re");
        if (!f) {
                if (errno == ENOENT)
                        return -ENOENT;
                return log_error_errno(errno, "Failed to open configuration file '%s': %m", path);
        }
        if (fstat(fileno(f), &st) < 0)
                return log_error_errno(errno, "Failed to stat configuration file '%s': %m", path);
        if (S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3)) {
                log_debug("Configuration file '%s' is masked (/dev/null), skipping.", path);
                return 0;
        }
        if (!S_ISREG(st.st_mode))
                return log_error_errno(EISDIR, "Configuration file '%s' is not a regular file.", path);
        s.f = f;

        r = ini_parse_stream(reader, &s, handler, &s);
        if (s.error < 0)
                return s.error;
        if (ferror(f))
                return log_error_errno(EIO, "Failed to read configuration file '%s'.", path);
        if (r < 0)
                return log_error_errno(ENOMEM, "%s: Failed to parse: out of memory.", path);
        if (r > 0)
                /* inih reports the first line it could not make sense of (no '=', unclosed '['). */
                return log_error_errno(EINVAL, "%s:%u: Syntax error: expected '[Section]' or 'Key=Value'.",
                                       path, (unsigned) r);
        return 1;
}

static int list_dropins(const char *dir, char ***ret) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_strv_free_ char **files = NULL;
        struct dirent *de;
        int r;

        d = opendir(dir);
        if (!d) {
                if (errno == ENOENT) {
                        *ret = NULL;
                        return 0;
                }
                return log_error_errno(errno, "Failed to open drop-in directory '%s': %m", dir);
        }

        while ((errno = 0, de = readdir(d))) {
                if (de->d_name[0] == '.' || !endswith(de->d_name, ".conf"))
                        continue;
                r = strv_consume(&files, strjoin(dir, "/", de->d_name));
                if (r < 0)
                        return log_oom();
        }
        if (errno != 0)
                return log_error_errno(errno, "Failed to read drop-in directory '%s': %m", dir);

        strv_sort(files);
        *ret = TAKE_PTR(files);
        return 0;
}

int config_parse(const char *main_file, const ConfigItem *table, void *base, const void *defaults,
                 char ***ret_files) {
        _cleanup_strv_free_ char **dropins = NULL, **read_files = NULL;
        _cleanup_free_ char *dir = NULL;
        int r;

        r = config_parse_file(main_file, table, base, defaults);
        if (r == -ENOENT)
                log_debug("Configuration file '%s' does not exist, using built-in defaults.", main_file);
        else if (r < 0)
                return r;
        else if (r > 0 && strv_extend(&read_files, main_file) < 0)
                return log_oom();

        dir = strjoin(main_file, ".d");
        if (!dir)
                return log_oom();
        r = list_dropins(dir, &dropins);
        if (r < 0)
                return r;

        STRV_FOREACH(f, dropins) {
                r = config_parse_file(*f, table, base, defaults);
                if (r == -ENOENT) {
                        /* A dangling symlink, or removed while we read the directory. */
                        log_warning("Ignoring drop-in '%s': it does not exist (dangling symlink?).", *f);
                        continue;
                }
                if (r < 0)
                        return r;
                if (r > 0 && strv_extend(&read_files, *f) < 0)
                        return log_oom();
        }

        if (ret_files)
                *ret_files = TAKE_PTR(read_files);
        return 0;
}

DEFINE_CONFIG_PARSE_ENUM(config_parse_log_level, int, log_level_from_string,
                         "emerg, alert, crit, err, warning, notice, info, debug or 0-7")
DEFINE_CONFIG_PARSE_ENUM(config_parse_log_target, LogTarget, log_target_from_string, "auto, console or journal")

int config_parse_path(const char *file, unsigned line, const char *section, const char *key, const char *value,
                      void *data) {
        char *path = data;

        if (!path_is_normalized_absolute(value)) {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected an absolute, normalized path.",
                                       file, line, key, strna(e));
        }
        strcpy(path, value); /* path_is_normalized_absolute() guarantees it fits in PATH_MAX */
        return 0;
}

int config_parse_sec(const char *file, unsigned line, const char *section, const char *key, const char *value,
                     void *data) {
        usec_t *u = data, v;

        (void) section;
        if (parse_sec(value, &v) < 0 || v == USEC_INFINITY) {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected a time span such as 1ms or 10s.",
                                       file, line, key, strna(e));
        }
        *u = v;
        return 0;
}

int config_parse_percent(const char *file, unsigned line, const char *section, const char *key,
                         const char *value, void *data) {
        unsigned *u = data;
        int v;

        (void) section;
        v = parse_percent(value);
        if (v < 0) {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected a percentage from 0%% to 100%%.",
                                       file, line, key, strna(e));
        }
        *u = (unsigned) v;
        return 0;
}

static int resolve_id(const char *word, bool group, uint32_t *ret) {
        char buf[4096];
        uint32_t id;

        if (safe_atou32(word, &id) >= 0) {
                if (id == UINT32_MAX) /* (uid_t) -1: "nobody in particular" */
                        return -EINVAL;
        } else if (!group) {
                struct passwd pw, *res = NULL;

                if (getpwnam_r(word, &pw, buf, sizeof(buf), &res) != 0 || !res)
                        return -ENOENT;
                id = res->pw_uid;
        } else {
                struct group gr, *res = NULL;

                if (getgrnam_r(word, &gr, buf, sizeof(buf), &res) != 0 || !res)
                        return -ENOENT;
                id = res->gr_gid;
        }
        *ret = id;
        return 0;
}

int config_parse_word_list(const char *file, unsigned line, const char *key, const char *value, void *items,
                           size_t *n, size_t max, size_t item_size, int (*parse_word)(const char *word, void *ret),
                           const char *why) {
        _cleanup_strv_free_ char **words = NULL;
        _cleanup_free_ void *item = NULL;
        int r;

        r = strv_split(value, " \t", &words);
        item = malloc(item_size);
        if (r < 0 || !item)
                return log_oom();
        STRV_FOREACH(w, words) {
                if (parse_word(*w, item) < 0) {
                        _cleanup_free_ char *e = cescape(*w);
                        return log_error_errno(EINVAL, "%s:%u: Invalid %s= entry '%s': %s.", file, line, key,
                                               strna(e), why);
                }
                if (*n >= max)
                        return log_error_errno(E2BIG, "%s:%u: %s= lists more than %zu entries.", file, line, key,
                                               max);
                memcpy((uint8_t *) items + *n * item_size, item, item_size);
                (*n)++;
        }
        return 0;
}

static int parse_user(const char *word, void *ret) {
        return resolve_id(word, false, ret);
}

static int parse_group(const char *word, void *ret) {
        return resolve_id(word, true, ret);
}

int config_parse_user_list(const char *file, unsigned line, const char *section, const char *key,
                           const char *value, void *data) {
        ConfigIdList *l = data;

        (void) section;
        return config_parse_word_list(file, line, key, value, l->ids, &l->n, CONFIG_ID_LIST_MAX, sizeof(uint32_t),
                                      parse_user, "no such user");
}

int config_parse_group_list(const char *file, unsigned line, const char *section, const char *key,
                            const char *value, void *data) {
        ConfigIdList *l = data;

        (void) section;
        return config_parse_word_list(file, line, key, value, l->ids, &l->n, CONFIG_ID_LIST_MAX, sizeof(uint32_t),
                                      parse_group, "no such group");
}

int config_parse_unsigned(const char *file, unsigned line, const char *section, const char *key,
                          const char *value, void *data) {
        unsigned *u = data, v;

        (void) section;
        if (safe_atou(value, &v) < 0 || v == 0) {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected a positive integer.", file,
                                       line, key, strna(e));
        }
        *u = v;
        return 0;
}

int config_parse_size(const char *file, unsigned line, const char *section, const char *key, const char *value,
                      void *data) {
        uint64_t *u = data, v;

        (void) section;
        if (parse_size(value, 1024, &v) < 0 || v == 0) {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected a size such as 4M or 1G.",
                                       file, line, key, strna(e));
        }
        *u = v;
        return 0;
}

int config_parse_mode(const char *file, unsigned line, const char *section, const char *key, const char *value,
                      void *data) {
        unsigned *u = data;
        unsigned long v;
        char *end;

        (void) section;
        errno = 0;
        v = strtoul(value, &end, 8);
        if (errno != 0 || end == value || *end || v > 07777 || value[0] == '-' || value[0] == '+') {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected an octal mode such as 0660.",
                                       file, line, key, strna(e));
        }
        *u = (unsigned) v;
        return 0;
}
