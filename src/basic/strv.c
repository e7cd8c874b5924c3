/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>

#include "alloc-util.h"
#include "strv.h"

char **strv_free(char **l) {
        STRV_FOREACH(s, l)
                free(*s);
        free(l);
        return NULL;
}

size_t strv_length(char *const *l) {
        size_t n = 0;

        if (l)
                while (l[n])
                        n++;
        return n;
}

int strv_consume(char ***l, char *value) {
        size_t n = strv_length(*l);
        char **c;

        if (!value)
                return -EINVAL;
        c = reallocarray(*l, n + 2, sizeof(char *));
        if (!c) {
                free(value);
                return -ENOMEM;
        }
        c[n] = value;
        c[n + 1] = NULL;
        *l = c;
        return 0;
}

int strv_extend(char ***l, const char *value) {
        char *v = strdup(value);

        if (!v)
                return -ENOMEM;
        return strv_consume(l, v);
}

char *strv_find(char *const *l, const char *s) {
        for (char *const *i = l; i && *i; i++)
                if (streq(*i, s))
                        return *i;
        return NULL;
}

char **strv_copy(char *const *l) {
        _cleanup_strv_free_ char **c = new0(char *, strv_length(l) + 1);

        if (!c)
                return NULL;
        for (size_t i = 0; l && l[i]; i++) {
                c[i] = strdup(l[i]);
                if (!c[i])
                        return NULL;
        }
        return TAKE_PTR(c);
}

int strv_split(const char *s, const char *separators, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        int r;

        for (const char *p = s; *p;) {
                size_t n;

                p += strspn(p, separators);
                n = strcspn(p, separators);
                if (n == 0)
                        break;
                char *t = strndup(p, n);
                if (!t)
                        return -ENOMEM;
                r = strv_consume(&l, t);
                if (r < 0)
                        return r;
                p += n;
        }

        if (!l) {
                l = new0(char *, 1);
                if (!l)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}

char *strv_join(char *const *l, const char *separator) {
        size_t sl = strlen(separator), n = 0;
        char *r, *p;

        for (char *const *i = l; i && *i; i++)
                n += strlen(*i) + (i == l ? 0 : sl);

        r = new(char, n + 1);
        if (!r)
                return NULL;
        p = r;
        *p = '\0';
        for (char *const *i = l; i && *i; i++) {
                if (i != l)
                        p = stpcpy(p, separator);
                p = stpcpy(p, *i);
        }
        return r;
}

static int str_compare(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

void strv_sort(char **l) {
        size_t n = strv_length(l);

        if (n > 1)
                qsort(l, n, sizeof(char *), str_compare);
}
