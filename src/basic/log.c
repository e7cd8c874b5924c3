/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <printf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include <wchar.h>

#include <systemd/sd-journal.h>

#include "alloc-util.h"
#include "log.h"
#include "parse-util.h"
#include "string-util.h"

/* Longest line written in one go; longer messages are truncated, never split. */
#define LOG_LINE_MAX 4096
/* More journal fields than this in one log_struct() call is a programming error; extras are dropped. */
#define LOG_STRUCT_FIELDS_MAX 32

static int log_max_level = LOG_INFO;
static LogTarget log_target = LOG_TARGET_AUTO;
static LogTarget log_effective_target = LOG_TARGET_CONSOLE;
/* sd_journal_sendv() reports success when journald is absent; only send when its socket exists. */
static bool log_journal_socket = false;

static const char *const log_level_table[] = {
        [LOG_EMERG] = "emerg",   [LOG_ALERT] = "alert",   [LOG_CRIT] = "crit", [LOG_ERR] = "err",
        [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice", [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

static const char *const log_target_table[_LOG_TARGET_MAX] = {
        [LOG_TARGET_AUTO] = "auto",
        [LOG_TARGET_CONSOLE] = "console",
        [LOG_TARGET_JOURNAL] = "journal",
};

/* systemd passes "device:inode" of the journal stream it connected to stdout/stderr. */
static bool stderr_is_journal_stream(void) {
        const char *e = getenv("JOURNAL_STREAM"), *colon;
        _cleanup_free_ char *dev_s = NULL;
        uint64_t dev, ino;
        struct stat st;

        if (!e)
                return false;
        colon = strchr(e, ':');
        if (!colon)
                return false;
        dev_s = strndup(e, colon - e);
        if (!dev_s)
                return false;
        if (safe_atou64(dev_s, &dev) < 0 || safe_atou64(colon + 1, &ino) < 0)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return (uint64_t) st.st_dev == dev && (uint64_t) st.st_ino == ino;
}

void log_open(void) {
        log_journal_socket = access("/run/systemd/journal/socket", F_OK) >= 0;
        if (log_target == LOG_TARGET_AUTO)
                log_effective_target = stderr_is_journal_stream() ? LOG_TARGET_JOURNAL : LOG_TARGET_CONSOLE;
        else
                log_effective_target = log_target;
}

void log_set_target(LogTarget target) {
        if (target >= 0 && target < _LOG_TARGET_MAX)
                log_target = target;
}

LogTarget log_get_target(void) {
        return log_target;
}

LogTarget log_get_effective_target(void) {
        return log_effective_target;
}

const char *log_target_to_string(LogTarget t) {
        return t >= 0 && t < _LOG_TARGET_MAX ? log_target_table[t] : NULL;
}

LogTarget log_target_from_string(const char *s) {
        for (LogTarget t = 0; t < _LOG_TARGET_MAX; t++)
                if (streq(s, log_target_table[t]))
                        return t;
        return _LOG_TARGET_INVALID;
}

void log_set_max_level(int level) {
        if (level >= LOG_EMERG && level <= LOG_DEBUG)
                log_max_level = level;
}

int log_get_max_level(void) {
        return log_max_level;
}

int log_level_from_string(const char *s) {
        unsigned u;

        for (int i = 0; i < (int) ELEMENTSOF(log_level_table); i++)
                if (streq(s, log_level_table[i]))
                        return i;
        if (safe_atou(s, &u) >= 0 && u <= LOG_DEBUG)
                return (int) u;
        return -EINVAL;
}

const char *log_level_to_string(int level) {
        if (level < 0 || level >= (int) ELEMENTSOF(log_level_table))
                return NULL;
        return log_level_table[level];
}

static void write_line(int level, const char *text) {
        char buf[LOG_LINE_MAX + 8];
        int n;

        if (log_effective_target == LOG_TARGET_JOURNAL)
                n = snprintf(buf, sizeof(buf), "<%i>%s\n", level, text);
        else
                n = snprintf(buf, sizeof(buf), "%s\n", text);
        if (n < 0)
                return;
        if ((size_t) n >= sizeof(buf)) {
                n = sizeof(buf) - 1;
                buf[n - 1] = '\n';
        }
        /* One write() per line so concurrent writers do not interleave inside a line. */
        (void) !write(STDERR_FILENO, buf, n);
}

/* Every line gets its own priority prefix: journald treats each line of a stream as one entry. */
static void write_message(int level, char *text) {
        for (char *line = text, *nl; line; line = nl) {
                nl = strchr(line, '\n');
                if (nl)
                        *nl++ = '\0';
                if (nl && *nl == '\0')
                        nl = NULL;
                write_line(level, line);
        }
}

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format, ...) {
        char text[LOG_LINE_MAX];
        int saved_errno = errno;
        va_list ap;

        (void) file;
        (void) line;
        (void) func;

        if (error != 0)
                errno = ERRNO_VALUE(error);
        va_start(ap, format);
        (void) vsnprintf(text, sizeof(text), format, ap);
        va_end(ap);

        write_message(level, text);
        errno = saved_errno;
        return -ERRNO_VALUE(error);
}

/* Consumes from ap the arguments that format refers to, so the next field's format lines up. */
static int skip_format_args(const char *format, va_list *ap) {
        int types[64];
        size_t n;

        n = parse_printf_format(format, ELEMENTSOF(types), types);
        if (n > ELEMENTSOF(types))
                return -E2BIG;
        for (size_t i = 0; i < n; i++) {
                int t = types[i];
                switch (t & ~PA_FLAG_MASK) {
                case PA_INT:
                case PA_CHAR:
                        if (t & PA_FLAG_LONG_LONG)
                                (void) va_arg(*ap, long long);
                        else if (t & PA_FLAG_LONG)
                                (void) va_arg(*ap, long);
                        else
                                (void) va_arg(*ap, int);
                        break;
                case PA_WCHAR:
                        (void) va_arg(*ap, wint_t);
                        break;
                case PA_STRING:
                case PA_WSTRING:
                case PA_POINTER:
                        (void) va_arg(*ap, void *);
                        break;
                case PA_FLOAT:
                case PA_DOUBLE:
                        if (t & PA_FLAG_LONG_DOUBLE)
                                (void) va_arg(*ap, long double);
                        else
                                (void) va_arg(*ap, double);
                        break;
                default:
                        return -EINVAL;
                }
        }
        return 0;
}

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
int log_struct_internal(int level, int error, const char *file, int line, const char *func, const char *format,
                        ...) {
        char *fields[LOG_STRUCT_FIELDS_MAX] = {};
        int saved_errno = errno;
        const char *message = NULL;
        size_t n = 0;
        va_list ap;

        va_start(ap, format);
        for (const char *f = format; f; f = va_arg(ap, const char *)) {
                va_list aq;
                char *s;
                int k;

                if (error != 0)
                        errno = ERRNO_VALUE(error);
                va_copy(aq, ap);
                k = vasprintf(&s, f, aq);
                va_end(aq);
                if (skip_format_args(f, &ap) < 0) {
                        if (k >= 0)
                                free(s);
                        break;
                }
                if (k < 0)
                        continue;
                if (n >= ELEMENTSOF(fields)) {
                        free(s);
                        continue;
                }
                if (!message)
                        message = startswith(s, "MESSAGE=");
                fields[n++] = s;
        }
        va_end(ap);

        if (log_effective_target == LOG_TARGET_JOURNAL && log_journal_socket) {
                struct iovec iov[LOG_STRUCT_FIELDS_MAX + 6];
                char prio[STRLEN("PRIORITY=") + 4], code_line[STRLEN("CODE_LINE=") + 12];
                char errno_field[STRLEN("ERRNO=") + 12];
                _cleanup_free_ char *code_file = NULL, *code_func = NULL, *ident = NULL;
                size_t k = 0;

                (void) snprintf(prio, sizeof(prio), "PRIORITY=%i", level);
                (void) snprintf(code_line, sizeof(code_line), "CODE_LINE=%i", line);
                code_file = strjoin("CODE_FILE=", file);
                code_func = strjoin("CODE_FUNC=", func);
                ident = strjoin("SYSLOG_IDENTIFIER=", program_invocation_short_name);

                for (size_t i = 0; i < n; i++)
                        iov[k++] = (struct iovec){ fields[i], strlen(fields[i]) };
                iov[k++] = (struct iovec){ prio, strlen(prio) };
                iov[k++] = (struct iovec){ code_line, strlen(code_line) };
                if (code_file)
                        iov[k++] = (struct iovec){ code_file, strlen(code_file) };
                if (code_func)
                        iov[k++] = (struct iovec){ code_func, strlen(code_func) };
                if (ident)
                        iov[k++] = (struct iovec){ ident, strlen(ident) };
                if (error != 0) {
                        (void) snprintf(errno_field, sizeof(errno_field), "ERRNO=%i", ERRNO_VALUE(error));
                        iov[k++] = (struct iovec){ errno_field, strlen(errno_field) };
                }

                if (sd_journal_sendv(iov, (int) k) >= 0)
                        message = NULL; /* delivered; nothing left for stderr */
        }

        if (message) {
                char text[LOG_LINE_MAX];
                (void) snprintf(text, sizeof(text), "%s", message);
                write_message(level, text);
        }

        for (size_t i = 0; i < n; i++)
                free(fields[i]);
        errno = saved_errno;
        return -ERRNO_VALUE(error);
}
#pragma GCC diagnostic pop
