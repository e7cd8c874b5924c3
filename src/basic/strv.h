/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/* NULL-terminated arrays of strings. NULL is a valid empty list everywhere. */

char **strv_free(char **l);
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

size_t strv_length(char *const *l) _pure_;
static inline bool strv_isempty(char *const *l) {
        return !l || !*l;
}

/* Appends value, taking ownership of it (freed on failure). */
int strv_consume(char ***l, char *value);
/* Appends a copy of value. */
int strv_extend(char ***l, const char *value);

char *strv_find(char *const *l, const char *s) _pure_;
#define strv_contains(l, s) (!!strv_find((l), (s)))

char **strv_copy(char *const *l);
/* Splits at any of the separator characters; empty fields are dropped. */
int strv_split(const char *s, const char *separators, char ***ret);
/* Joins with separator; NULL on allocation failure. */
char *strv_join(char *const *l, const char *separator);
void strv_sort(char **l);

#define STRV_FOREACH(s, l) for (char **s = (l); s && *s; s++)
#define STRV_MAKE(...) ((char *[]){ __VA_ARGS__, NULL })
/* True if x equals one of the listed strings. */
#define STR_IN_SET(x, ...) (!!strv_find((char *const *) ((const char *const[]){ __VA_ARGS__, NULL }), (x)))
