/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

/*
 * Logging for tonari's binaries.
 *
 * Plain messages go to stderr. When stderr is connected to the journal (systemd sets
 * $JOURNAL_STREAM for the service) each line carries a "<N>" syslog priority prefix, so journald
 * stores the right priority without a second connection. log_struct() messages carry extra journal
 * fields (TONARI_SLICE=, TONARI_REASON=, ...) and are sent natively with sd_journal_sendv() when the
 * journal is the target; on a console only their MESSAGE= is printed.
 *
 * The log_*_errno() forms take a positive or negative errno, make it available to %m, and return it
 * negated, so "return log_error_errno(r, \"...: %m\");" works. The plain forms return 0.
 */

typedef enum LogTarget {
        LOG_TARGET_AUTO,    /* journal if stderr is the service's journal stream, else console */
        LOG_TARGET_CONSOLE, /* plain lines on stderr */
        LOG_TARGET_JOURNAL, /* "<N>"-prefixed lines on stderr, structured messages via sd-journal */
        _LOG_TARGET_MAX,
        _LOG_TARGET_INVALID = -EINVAL,
} LogTarget;

/* Decides where messages go; call once at start and again after changing the target. */
void log_open(void);

void log_set_target(LogTarget target);
LogTarget log_get_target(void);
/* The target in effect after resolving LOG_TARGET_AUTO. */
LogTarget log_get_effective_target(void);
const char *log_target_to_string(LogTarget t) _const_;
LogTarget log_target_from_string(const char *s) _pure_;

void log_set_max_level(int level);
int log_get_max_level(void) _pure_;
/* "emerg" ... "debug" or "0" ... "7"; returns -EINVAL for anything else. */
int log_level_from_string(const char *s) _pure_;
const char *log_level_to_string(int level) _const_;

int log_internal(int level, int error, const char *file, int line, const char *func, const char *format,
                 ...) _printf_(6, 7);

/* Fields are "KEY=format", args..., terminated by NULL; exactly one should be a MESSAGE= field. */
int log_struct_internal(int level, int error, const char *file, int line, const char *func,
                        const char *format, ...) _printf_(6, 0) _sentinel_;

#define log_full_errno(level, error, ...)                                                              \
        ({                                                                                             \
                int _level = (level), _e = (error);                                                    \
                log_get_max_level() >= _level                                                          \
                        ? log_internal(_level, _e, __FILE__, __LINE__, __func__, __VA_ARGS__)          \
                        : -ERRNO_VALUE(_e);                                                            \
        })

#define log_full(level, ...) ((void) log_full_errno((level), 0, __VA_ARGS__))

#define log_debug(...) log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...) log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...) log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...) log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(error, ...) log_full_errno(LOG_DEBUG, (error), __VA_ARGS__)
#define log_info_errno(error, ...) log_full_errno(LOG_INFO, (error), __VA_ARGS__)
#define log_notice_errno(error, ...) log_full_errno(LOG_NOTICE, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, (error), __VA_ARGS__)
#define log_error_errno(error, ...) log_full_errno(LOG_ERR, (error), __VA_ARGS__)

#define log_oom() log_error_errno(ENOMEM, "Out of memory.")

#define LOG_MESSAGE(fmt, ...) "MESSAGE=" fmt, ##__VA_ARGS__

#define log_struct_errno(level, error, ...)                                                            \
        ({                                                                                             \
                int _level = (level), _e = (error);                                                    \
                log_get_max_level() >= _level                                                          \
                        ? log_struct_internal(_level, _e, __FILE__, __LINE__, __func__, __VA_ARGS__,   \
                                              NULL)                                                    \
                        : -ERRNO_VALUE(_e);                                                            \
        })
#define log_struct(level, ...) ((void) log_struct_errno((level), 0, __VA_ARGS__))
