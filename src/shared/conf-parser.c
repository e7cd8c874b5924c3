/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <ini.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc-util.h"
#include "conf-parser.h"
#include "fd-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

typedef struct ParseState {
        const char *path;
        FILE *f;
        unsigned line;
        const ConfigItem *table;
        void *base;
        int error; /* first error, negative errno */
} ParseState;

/* inih reads through this so that we know the line number of every assignment it reports. */
static char *reader(char *str, int num, void *stream) {
        ParseState *s = stream;
        char *l;

        l = fgets(str, num, s->f);
        if (!l)
                return NULL;
        s->line++;
        if (!strchr(l, '\n') && !feof(s->f)) {
                /* Longer than libinih's line buffer: it would read the tail as a new line. */
                if (s->error == 0)
                        s->error = log_error_errno(E2BIG, "%s:%u: Line too long (more than %i characters).",
                                                   s->path, s->line, num - 2);
                /* Swallow the rest of the line. */
                int c;
                while ((c = fgetc(s->f)) != EOF && c != '\n')
                        ;
                str[0] = '\0'; /* inih sees an empty line */
        }
        return l;
}

static int handler(void *user, const char *section, const char *key, const char *value) {
        ParseState *s = user;
        int r;

        for (const ConfigItem *i = s->table; i->section; i++) {
                if (!streq(i->section, section) || !streq(i->key, key))
                        continue;
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

int config_parse_file(const char *path, const ConfigItem *table, void *base) {
        _cleanup_fclose_ FILE *f = NULL;
        ParseState s = { .path = path, .table = table, .base = base };
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
        return 0;
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

int config_parse(const char *main_file, const ConfigItem *table, void *base, char ***ret_files) {
        _cleanup_strv_free_ char **dropins = NULL, **read_files = NULL;
        _cleanup_free_ char *dir = NULL;
        int r;

        r = config_parse_file(main_file, table, base);
        if (r == -ENOENT)
                log_debug("Configuration file '%s' does not exist, using built-in defaults.", main_file);
        else if (r < 0)
                return r;
        else if (strv_extend(&read_files, main_file) < 0)
                return log_oom();

        dir = strjoin(main_file, ".d");
        if (!dir)
                return log_oom();
        r = list_dropins(dir, &dropins);
        if (r < 0)
                return r;

        STRV_FOREACH(f, dropins) {
                r = config_parse_file(*f, table, base);
                if (r == -ENOENT) /* removed under our feet */
                        continue;
                if (r < 0)
                        return r;
                if (strv_extend(&read_files, *f) < 0)
                        return log_oom();
        }

        if (ret_files)
                *ret_files = TAKE_PTR(read_files);
        return 0;
}

int config_parse_log_level(const char *file, unsigned line, const char *section, const char *key,
                           const char *value, void *data) {
        int *level = data, l;

        l = log_level_from_string(value);
        if (l < 0) {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL,
                                       "%s:%u: Invalid %s= value '%s': expected emerg, alert, crit, err, "
                                       "warning, notice, info, debug or 0-7.",
                                       file, line, key, strna(e));
        }
        *level = l;
        return 0;
}

int config_parse_log_target(const char *file, unsigned line, const char *section, const char *key,
                            const char *value, void *data) {
        LogTarget *target = data, t;

        t = log_target_from_string(value);
        if (t < 0) {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected auto, console or journal.",
                                       file, line, key, strna(e));
        }
        *target = t;
        return 0;
}
