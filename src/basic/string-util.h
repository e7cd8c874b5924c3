/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

static inline bool isempty(const char *s) {
        return !s || s[0] == '\0';
}

static inline const char *strempty(const char *s) {
        return s ?: "";
}

static inline const char *strna(const char *s) {
        return s ?: "n/a";
}

/* Equal strings, where NULL equals only NULL. */
static inline bool streq_ptr(const char *a, const char *b) {
        return a && b ? streq(a, b) : a == b;
}

static inline const char *yes_no(bool b) {
        return b ? "yes" : "no";
}

/* Returns the rest of s after prefix, or NULL if s does not start with prefix. */
char *startswith(const char *s, const char *prefix) _pure_;
char *endswith(const char *s, const char *suffix) _pure_;

/* Removes leading and trailing whitespace in place; returns the start of the stripped string. */
char *strstrip(char *s);

/* True if s contains an ASCII control character (including DEL). */
bool string_has_cc(const char *s) _pure_;

/*
 * Escapes a string for safe inclusion in a log line or error message: control characters, '\\',
 * quotes and bytes ≥ 0x80 that are not part of valid UTF-8 become C escapes (\n, \x01, ...).
 * NULL on allocation failure.
 */
char *cescape(const char *s);

/* Concatenates its arguments up to a NULL; returns NULL on allocation failure. */
char *strjoin_real(const char *x, ...) _sentinel_;
#define strjoin(a, ...) strjoin_real((a), __VA_ARGS__, NULL)

int free_and_strdup(char **p, const char *s);

/*
 * For functions that explain their errors to the caller: replaces *ret_message (when ret_message is
 * not NULL) with the formatted text and returns r, so that "return set_error_message(ret_error,
 * -EBADMSG, ...)" fails in one line. Out of memory leaves *ret_message NULL, never r changed.
 */
int set_error_message(char **ret_message, int r, const char *format, ...) _printf_(3, 4);
