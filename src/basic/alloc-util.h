/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"

static inline void *malloc_multiply(size_t size, size_t n) {
        if (size > 0 && n > SIZE_MAX / size)
                return NULL;
        return malloc(size * n ?: 1);
}

#define new(t, n) ((t *) malloc_multiply(sizeof(t), (n)))
#define new0(t, n) ((t *) calloc((n) ?: 1, sizeof(t)))

/* A copy of size bytes at p; NULL on allocation failure. */
static inline void *memdup(const void *p, size_t size) {
        void *q = malloc(size ?: 1);
        if (q && size > 0)
                memcpy(q, p, size);
        return q;
}

/* The first size bytes at p as a NUL-terminated string, for data that is not one (a name in a
 * mapped table, a header line): unlike strndup() it never looks past size for a terminator. */
static inline char *memdup_suffix0(const void *p, size_t size) {
        char *q = malloc(size + 1);

        if (!q)
                return NULL;
        if (size > 0)
                memcpy(q, p, size);
        q[size] = 0;
        return q;
}

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

static inline void freep(void *p) {
        free(*(void **) p);
}

#define _cleanup_free_ _cleanup_(freep)

/* Frees *a and moves b into it, leaving b NULL. */
#define free_and_replace(a, b)                                                                         \
        ({                                                                                             \
                typeof(a) *_a = &(a);                                                                  \
                typeof(b) *_b = &(b);                                                                  \
                free(*_a);                                                                             \
                *_a = *_b;                                                                             \
                *_b = NULL;                                                                            \
                0;                                                                                     \
        })
