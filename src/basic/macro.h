/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _pure_ __attribute__((pure))
#define _const_ __attribute__((const))
#define _sentinel_ __attribute__((sentinel))
#define _warn_unused_result_ __attribute__((warn_unused_result))
#define _likely_(x) (__builtin_expect(!!(x), 1))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))

#define _CONCAT(a, b) a##b
#define CONCAT(a, b) _CONCAT(a, b)
#define UNIQ_T(x, uniq) CONCAT(__unique_prefix_, CONCAT(x, uniq))

/* Number of elements of a real array; refuses to compile for a pointer. */
#define ELEMENTSOF(x)                                                                                  \
        (__builtin_choose_expr(!__builtin_types_compatible_p(typeof(x), typeof(&*(x))),                 \
                               sizeof(x) / sizeof((x)[0]), (void) 0))

/* array is evaluated once: a compound literal written twice would be two different arrays. */
#define FOREACH_ELEMENT(i, array)                                                                      \
        for (typeof(&(array)[0]) i = (array), CONCAT(i, _end_) = i + ELEMENTSOF(array); i < CONCAT(i, _end_); i++)

/* Unique local names, so that MIN(MAX(...)) does not shadow itself. */

#define __MIN(aq, a, bq, b)                                                                            \
        ({                                                                                             \
                const typeof(a) UNIQ_T(A, aq) = (a);                                                   \
                const typeof(b) UNIQ_T(B, bq) = (b);                                                   \
                UNIQ_T(A, aq) < UNIQ_T(B, bq) ? UNIQ_T(A, aq) : UNIQ_T(B, bq);                         \
        })
#define __MAX(aq, a, bq, b)                                                                            \
        ({                                                                                             \
                const typeof(a) UNIQ_T(A, aq) = (a);                                                   \
                const typeof(b) UNIQ_T(B, bq) = (b);                                                   \
                UNIQ_T(A, aq) > UNIQ_T(B, bq) ? UNIQ_T(A, aq) : UNIQ_T(B, bq);                         \
        })
#define MIN(a, b) __MIN(__COUNTER__, (a), __COUNTER__, (b))
#define MAX(a, b) __MAX(__COUNTER__, (a), __COUNTER__, (b))
#define CLAMP(x, lo, hi) MIN(MAX((x), (lo)), (hi))
#define DIV_ROUND_UP(x, y)                                                                             \
        ({                                                                                             \
                const typeof(x) _x = (x);                                                              \
                const typeof(y) _y = (y);                                                              \
                (_x / _y + !!(_x % _y));                                                               \
        })

/* Length of a string literal, usable in constant expressions. */
#define STRLEN(x) (sizeof("" x "") - 1)

#define streq(a, b) (strcmp((a), (b)) == 0)
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)

/* Hands ownership of a pointer or fd out of a cleanup-managed local. */
#define TAKE_PTR(p)                                                                                    \
        ({                                                                                             \
                typeof(p) *_pp = &(p);                                                                 \
                typeof(p) _p = *_pp;                                                                   \
                *_pp = NULL;                                                                           \
                _p;                                                                                    \
        })
#define TAKE_FD(fd)                                                                                    \
        ({                                                                                             \
                int *_fdp = &(fd);                                                                     \
                int _fd = *_fdp;                                                                       \
                *_fdp = -EBADF;                                                                        \
                _fd;                                                                                   \
        })

/* Defines funcp(), suitable for _cleanup_(), for the destructor func; it is called for non-NULL
 * only, so a destructor that does not accept NULL serves too. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                        \
        static inline void func##p(type *p) {                                                          \
                if (*p)                                                                                \
                        (void) func(*p);                                                               \
        }

/* errno as a negative value; never 0, so a caller can always return it as a failure. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

#define ERRNO_VALUE(e) (abs(e))

/* Argument checks at the edge of an API: return the error instead of asserting. */
#define assert_return(expr, r)                                                                         \
        do {                                                                                           \
                if (_unlikely_(!(expr)))                                                               \
                        return (r);                                                                    \
        } while (false)
