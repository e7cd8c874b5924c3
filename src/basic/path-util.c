/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <limits.h>
#include <string.h>

#include "alloc-util.h"
#include "path-util.h"
#include "string-util.h"

static bool char_is_name_char(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               strchr("_.:@-", c);
}

bool name_is_valid(const char *s, size_t max_len) {
        size_t n;

        if (isempty(s))
                return false;
        n = strnlen(s, max_len + 1);
        if (n > max_len)
                return false;
        if (s[0] == '.' || s[0] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!char_is_name_char(s[i]))
                        return false;
        return true;
}

bool filename_is_valid(const char *s) {
        if (isempty(s))
                return false;
        if (streq(s, ".") || streq(s, ".."))
                return false;
        if (strchr(s, '/'))
                return false;
        if (strnlen(s, NAME_MAX + 1) > NAME_MAX)
                return false;
        return !string_has_cc(s);
}

/* Components of a path without leading '/': none empty, ".", ".." or longer than NAME_MAX. */
static bool components_are_normalized(const char *p) {
        for (;;) {
                size_t l = strcspn(p, "/");

                if (l == 0)
                        return false; /* "//" */
                if ((l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
                        return false;
                if (l > NAME_MAX)
                        return false;
                if (p[l] == '\0')
                        return true;
                p += l + 1;
        }
}

static bool path_is_normalized(const char *s, bool absolute) {
        size_t n;

        if (!s || (s[0] == '/') != absolute)
                return false;
        n = strnlen(s, PATH_MAX);
        if (n == 0 || n >= PATH_MAX)
                return false;
        if (string_has_cc(s))
                return false;
        if (absolute && n == 1)
                return true;
        if (s[n - 1] == '/')
                return false;
        return components_are_normalized(absolute ? s + 1 : s);
}

bool path_is_normalized_absolute(const char *s) {
        return path_is_normalized(s, true);
}

bool path_is_normalized_relative(const char *s) {
        return path_is_normalized(s, false);
}

bool path_equal_or_below(const char *path, const char *prefix) {
        size_t n = strlen(prefix);

        while (n > 1 && prefix[n - 1] == '/')
                n--;
        if (strncmp(path, prefix, n) != 0)
                return false;
        return path[n] == '\0' || path[n] == '/' || (n == 1 && prefix[0] == '/');
}

char *path_join(const char *a, const char *b) {
        size_t la = strlen(a);

        while (la > 0 && a[la - 1] == '/')
                la--;
        while (*b == '/')
                b++;

        char *r = new(char, la + 1 + strlen(b) + 1);
        if (!r)
                return NULL;
        memcpy(r, a, la);
        r[la] = '/';
        strcpy(r + la + 1, b);
        return r;
}
