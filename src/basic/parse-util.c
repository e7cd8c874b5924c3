/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "alloc-util.h"
#include "parse-util.h"
#include "string-util.h"

int safe_atou64(const char *s, uint64_t *ret) {
        unsigned long long v;
        char *end;

        if (!s || !isdigit((unsigned char) s[0]))
                return -EINVAL;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || *end != '\0')
                return -EINVAL;
        if (ret)
                *ret = (uint64_t) v;
        return 0;
}

/* safe_atou64(), and -ERANGE above max: the narrower types below. */
static int atou64_max(const char *s, uint64_t max, uint64_t *ret) {
        uint64_t v;
        int r;

        r = safe_atou64(s, &v);
        if (r < 0)
                return r;
        if (v > max)
                return -ERANGE;
        *ret = v;
        return 0;
}

int safe_atou32(const char *s, uint32_t *ret) {
        uint64_t v;
        int r = atou64_max(s, UINT32_MAX, &v);

        if (r >= 0 && ret)
                *ret = (uint32_t) v;
        return r;
}

int safe_atou(const char *s, unsigned *ret) {
        uint64_t v;
        int r = atou64_max(s, UINT_MAX, &v);

        if (r >= 0 && ret)
                *ret = (unsigned) v;
        return r;
}

int safe_atoi64(const char *s, int64_t *ret) {
        bool negative = s && s[0] == '-';
        uint64_t v;
        int r;

        /* The digits are safe_atou64()'s; a magnitude of 2^63 is INT64_MIN only. */
        r = atou64_max(negative ? s + 1 : s, negative ? (uint64_t) INT64_MAX + 1 : INT64_MAX, &v);
        if (r < 0)
                return r;
        if (ret)
                *ret = !negative ? (int64_t) v : v > INT64_MAX ? INT64_MIN : -(int64_t) v;
        return 0;
}

int safe_atoi(const char *s, int *ret) {
        int64_t v;
        int r;

        r = safe_atoi64(s, &v);
        if (r < 0)
                return r;
        if (v < INT_MIN || v > INT_MAX)
                return -ERANGE;
        if (ret)
                *ret = (int) v;
        return 0;
}

int parse_boolean(const char *s) {
        static const char *const yes[] = { "1", "yes", "y", "true", "t", "on" };
        static const char *const no[] = { "0", "no", "n", "false", "f", "off" };

        if (!s)
                return -EINVAL;
        FOREACH_ELEMENT(i, yes)
                if (strcasecmp(s, *i) == 0)
                        return 1;
        FOREACH_ELEMENT(i, no)
                if (strcasecmp(s, *i) == 0)
                        return 0;
        return -EINVAL;
}

/* Reads "123" or "123.456" at *p: integer part and the fraction as numerator/denominator. */
static int parse_decimal(const char **p, uint64_t *ret_int, uint64_t *ret_frac, uint64_t *ret_frac_div) {
        const char *s = *p;
        uint64_t v = 0, frac = 0, div = 1;

        if (!isdigit((unsigned char) *s))
                return -EINVAL;
        for (; isdigit((unsigned char) *s); s++) {
                if (v > (UINT64_MAX - (uint64_t) (*s - '0')) / 10)
                        return -ERANGE;
                v = v * 10 + (uint64_t) (*s - '0');
        }
        if (*s == '.') {
                s++;
                if (!isdigit((unsigned char) *s))
                        return -EINVAL;
                for (; isdigit((unsigned char) *s); s++)
                        /* Digits beyond 10^18 cannot change any result we compute; ignore them. */
                        if (div < UINT64_C(1000000000000000000)) {
                                frac = frac * 10 + (uint64_t) (*s - '0');
                                div *= 10;
                        }
        }
        *p = s;
        *ret_int = v;
        *ret_frac = frac;
        *ret_frac_div = div;
        return 0;
}

/* a * m + frac/div * m without overflow, rounding the fractional part down. */
static int scale_decimal(uint64_t a, uint64_t frac, uint64_t div, uint64_t m, uint64_t *ret) {
        uint64_t whole, part;

        if (m != 0 && a > UINT64_MAX / m)
                return -ERANGE;
        whole = a * m;
        /* frac < div ≤ 10^18; split m so the product cannot overflow. */
        part = (uint64_t) (((unsigned __int128) frac * m) / div);
        if (whole > UINT64_MAX - part)
                return -ERANGE;
        *ret = whole + part;
        return 0;
}

int parse_size(const char *s, uint64_t base, uint64_t *ret) {
        static const char suffixes[] = "KMGTPE";
        uint64_t sum = 0;
        const char *p = s;
        bool any = false;

        if (!s || (base != 1000 && base != 1024))
                return -EINVAL;

        for (;;) {
                uint64_t v, frac, div, mult = 1, part;
                const char *e;
                int r;

                while (isspace((unsigned char) *p))
                        p++;
                if (*p == '\0')
                        break;

                r = parse_decimal(&p, &v, &frac, &div);
                if (r < 0)
                        return r;
                while (isspace((unsigned char) *p))
                        p++;

                if (*p == 'B')
                        p++;
                else if (*p != '\0' && (e = strchr(suffixes, *p))) {
                        for (size_t i = 0; i <= (size_t) (e - suffixes); i++)
                                mult *= base;
                        p++;
                } else if (*p != '\0' && !isdigit((unsigned char) *p))
                        return -EINVAL;
                else if (frac != 0)
                        return -EINVAL; /* "1.5" bytes makes no sense */

                r = scale_decimal(v, frac, div, mult, &part);
                if (r < 0)
                        return r;
                if (sum > UINT64_MAX - part)
                        return -ERANGE;
                sum += part;
                any = true;
        }

        if (!any)
                return -EINVAL;
        if (ret)
                *ret = sum;
        return 0;
}

int parse_percent_unbounded(const char *s) {
        _cleanup_free_ char *n = NULL;
        const char *pc;
        unsigned v;
        int r;

        if (!s)
                return -EINVAL;
        pc = endswith(s, "%");
        if (!pc)
                return -EINVAL;
        n = strndup(s, pc - s);
        if (!n)
                return -ENOMEM;
        r = safe_atou(n, &v);
        if (r < 0)
                return r;
        if (v > INT_MAX)
                return -ERANGE;
        return (int) v;
}

int parse_percent(const char *s) {
        int r = parse_percent_unbounded(s);

        if (r < 0)
                return r;
        if (r > 100)
                return -ERANGE;
        return r;
}

int parse_permyriad_unbounded(const char *s) {
        const char *p = s, *pc;
        uint64_t v, frac, div, result;
        int r;

        if (!s)
                return -EINVAL;
        pc = endswith(s, "%");
        if (!pc)
                return -EINVAL;
        r = parse_decimal(&p, &v, &frac, &div);
        if (r < 0)
                return r;
        if (p != pc)
                return -EINVAL;
        if (div > 100)
                return -EINVAL; /* more precision than 0.01% is not representable */
        r = scale_decimal(v, frac, div, 100, &result);
        if (r < 0)
                return r;
        if (result > INT_MAX)
                return -ERANGE;
        return (int) result;
}

static int mask_set(uint8_t **mask, size_t *size, unsigned i) {
        size_t need = i / 8 + 1;

        if (need > *size) {
                uint8_t *m = realloc(*mask, need);
                if (!m)
                        return -ENOMEM;
                memset(m + *size, 0, need - *size);
                *mask = m;
                *size = need;
        }
        (*mask)[i / 8] |= (uint8_t) (1u << (i % 8));
        return 0;
}

int parse_index_list(const char *s, unsigned max_index, uint8_t **ret_mask, size_t *ret_size) {
        _cleanup_free_ uint8_t *mask = NULL;
        size_t size = 0;
        const char *p = s;

        if (!s)
                return -EINVAL;

        for (;;) {
                unsigned lo, hi;
                char *end;
                int r;

                p += strspn(p, ", \t\n");
                if (*p == '\0')
                        break;

                if (!isdigit((unsigned char) *p))
                        return -EINVAL;
                errno = 0;
                unsigned long v = strtoul(p, &end, 10);
                if (errno == ERANGE || v > max_index)
                        return -ERANGE;
                lo = hi = (unsigned) v;
                p = end;
                if (*p == '-') {
                        p++;
                        if (!isdigit((unsigned char) *p))
                                return -EINVAL;
                        errno = 0;
                        v = strtoul(p, &end, 10);
                        if (errno == ERANGE || v > max_index)
                                return -ERANGE;
                        hi = (unsigned) v;
                        p = end;
                        if (hi < lo)
                                return -EINVAL;
                }
                if (*p != '\0' && !strchr(", \t\n", *p))
                        return -EINVAL;

                for (unsigned i = lo;; i++) {
                        r = mask_set(&mask, &size, i);
                        if (r < 0)
                                return r;
                        if (i == hi)
                                break;
                }
        }

        *ret_mask = TAKE_PTR(mask);
        *ret_size = size;
        return 0;
}

static bool mask_test(const uint8_t *mask, size_t size, size_t i) {
        return i / 8 < size && (mask[i / 8] & (1u << (i % 8)));
}

char *format_index_list(const uint8_t *mask, size_t size) {
        size_t bits = size * 8, len = 0, cap = 1;
        char *buf = calloc(1, cap);

        if (!buf)
                return NULL;
        for (size_t i = 0; i < bits; i++) {
                size_t j = i;
                char item[2 * 21 + 3];
                int n;

                if (!mask_test(mask, size, i))
                        continue;
                while (j + 1 < bits && mask_test(mask, size, j + 1))
                        j++;
                if (j == i)
                        n = snprintf(item, sizeof(item), "%s%zu", len > 0 ? "," : "", i);
                else
                        n = snprintf(item, sizeof(item), "%s%zu-%zu", len > 0 ? "," : "", i, j);
                if (len + (size_t) n + 1 > cap) {
                        char *b = realloc(buf, len + (size_t) n + 1);
                        if (!b)
                                return mfree(buf);
                        buf = b;
                        cap = len + (size_t) n + 1;
                }
                memcpy(buf + len, item, (size_t) n + 1);
                len += (size_t) n;
                i = j;
        }
        return buf;
}

unsigned index_list_count(const uint8_t *mask, size_t size) {
        unsigned n = 0;

        for (size_t i = 0; i < size; i++)
                n += (unsigned) __builtin_popcount(mask[i]);
        return n;
}

int parse_kernel_release(const char *s, unsigned *ret_major, unsigned *ret_minor) {
        unsigned v[2] = {};
        const char *p = s;

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < 2; i++) {
                size_t n = strspn(p, "0123456789");
                char buf[11];

                if (n == 0 || n >= sizeof(buf))
                        return n == 0 ? -EINVAL : -ERANGE;
                memcpy(buf, p, n);
                buf[n] = 0;
                if (safe_atou(buf, &v[i]) < 0)
                        return -ERANGE;
                p += n;
                if (i == 0) {
                        if (*p != '.')
                                return -EINVAL;
                        p++;
                } else if (*p != 0 && !strchr(".-+_", *p))
                        return -EINVAL;
        }
        *ret_major = v[0];
        *ret_minor = v[1];
        return 0;
}
