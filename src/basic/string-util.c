/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-util.h"
#include "string-util.h"

char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);

        if (strncmp(s, prefix, l) != 0)
                return NULL;
        return (char *) s + l;
}

char *endswith(const char *s, const char *suffix) {
        size_t sl = strlen(s), pl = strlen(suffix);

        if (pl > sl || memcmp(s + sl - pl, suffix, pl) != 0)
                return NULL;
        return (char *) s + sl - pl;
}

char *strstrip(char *s) {
        char *e;

        while (isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                e--;
        *e = '\0';
        return s;
}

bool string_has_cc(const char *s) {
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p < ' ' || *p == 0x7f)
                        return true;
        return false;
}

/* Length of the valid UTF-8 sequence at s, or 0 if there is none. */
static size_t utf8_sequence_len(const unsigned char *s) {
        size_t n;
        uint32_t cp;

        if (s[0] < 0x80)
                return 1;
        if ((s[0] & 0xe0) == 0xc0) {
                n = 2;
                cp = s[0] & 0x1f;
        } else if ((s[0] & 0xf0) == 0xe0) {
                n = 3;
                cp = s[0] & 0x0f;
        } else if ((s[0] & 0xf8) == 0xf0) {
                n = 4;
                cp = s[0] & 0x07;
        } else
                return 0;
        for (size_t i = 1; i < n; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        /* Reject overlong forms, surrogates and values beyond Unicode. */
        if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
            (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
                return 0;
        return n;
}

char *cescape(const char *s) {
        const unsigned char *p = (const unsigned char *) s;
        char *r, *t;

        /* Worst case every byte becomes "\xNN". */
        r = new(char, strlen(s) * 4 + 1);
        if (!r)
                return NULL;

        for (t = r; *p;) {
                size_t n = utf8_sequence_len(p);

                switch (*p) {
                case '\n': t = stpcpy(t, "\\n"); p++; continue;
                case '\t': t = stpcpy(t, "\\t"); p++; continue;
                case '\r': t = stpcpy(t, "\\r"); p++; continue;
                case '\\': t = stpcpy(t, "\\\\"); p++; continue;
                case '\'': t = stpcpy(t, "\\'"); p++; continue;
                case '"': t = stpcpy(t, "\\\""); p++; continue;
                }
                if (*p < ' ' || *p == 0x7f || n == 0) {
                        t += sprintf(t, "\\x%02x", *p);
                        p++;
                        continue;
                }
                memcpy(t, p, n);
                t += n;
                p += n;
        }
        *t = '\0';
        return r;
}

char *strjoin_real(const char *x, ...) {
        va_list ap;
        size_t l = 0;
        char *r, *p;

        va_start(ap, x);
        for (const char *t = x; t; t = va_arg(ap, const char *)) {
                size_t n = strlen(t);
                if (n > SIZE_MAX - l - 1) {
                        va_end(ap);
                        return NULL;
                }
                l += n;
        }
        va_end(ap);

        r = new(char, l + 1);
        if (!r)
                return NULL;

        p = r;
        va_start(ap, x);
        for (const char *t = x; t; t = va_arg(ap, const char *))
                p = stpcpy(p, t);
        va_end(ap);
        return r;
}

int free_and_strdup(char **p, const char *s) {
        char *t = NULL;

        if (s) {
                t = strdup(s);
                if (!t)
                        return -ENOMEM;
        }
        free(*p);
        *p = t;
        return 0;
}

int set_error_message(char **ret_message, int r, const char *format, ...) {
        va_list ap;
        char *m;

        if (!ret_message)
                return r;
        va_start(ap, format);
        if (vasprintf(&m, format, ap) < 0)
                m = NULL;
        va_end(ap);
        free(*ret_message);
        *ret_message = m;
        return r;
}
