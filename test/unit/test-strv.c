/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "alloc-util.h"
#include "string-util.h"
#include "strv.h"
#include "tests.h"

START_TEST(test_strv_basics) {
        _cleanup_strv_free_ char **l = NULL, **c = NULL;
        _cleanup_free_ char *j = NULL;

        ck_assert_uint_eq(strv_length(NULL), 0);
        ck_assert(strv_isempty(NULL));
        ck_assert_ptr_null(strv_free(NULL));

        ck_assert_int_eq(strv_extend(&l, "b"), 0);
        ck_assert_int_eq(strv_extend(&l, "a"), 0);
        ck_assert_int_eq(strv_consume(&l, strdup("c")), 0);
        ck_assert_int_eq(strv_consume(&l, NULL), -EINVAL);
        ck_assert_uint_eq(strv_length(l), 3);
        ck_assert(strv_contains(l, "a"));
        ck_assert(!strv_contains(l, "d"));

        strv_sort(l);
        j = strv_join(l, ", ");
        ck_assert_str_eq(j, "a, b, c");

        c = strv_copy(l);
        ck_assert_ptr_nonnull(c);
        ck_assert_ptr_ne(c[0], l[0]);
        ck_assert_str_eq(c[2], "c");
        ck_assert_ptr_null(c[3]);
}
END_TEST

START_TEST(test_strv_split) {
        _cleanup_strv_free_ char **l = NULL, **e = NULL;
        _cleanup_free_ char *j = NULL, *k = NULL;

        ck_assert_int_eq(strv_split("  a b\t\tc  ", " \t", &l), 0);
        ck_assert_uint_eq(strv_length(l), 3);
        j = strv_join(l, "|");
        ck_assert_str_eq(j, "a|b|c");

        /* Nothing but separators gives an empty (not NULL) list. */
        ck_assert_int_eq(strv_split(" \n ", " \n", &e), 0);
        ck_assert_ptr_nonnull(e);
        ck_assert_uint_eq(strv_length(e), 0);
        k = strv_join(e, ",");
        ck_assert_str_eq(k, "");
}
END_TEST

START_TEST(test_string_util) {
        char s[] = "  \t hello world \n";
        _cleanup_free_ char *j = NULL, *d = NULL;

        ck_assert_str_eq(startswith("tonari-foo.slice", "tonari-"), "foo.slice");
        ck_assert_ptr_null(startswith("tonari", "tonari-"));
        ck_assert_str_eq(endswith("a.conf", ".conf"), ".conf");
        ck_assert_ptr_null(endswith("conf", "a.conf"));
        ck_assert_str_eq(strstrip(s), "hello world");
        ck_assert(string_has_cc("a\nb"));
        ck_assert(string_has_cc("a\x7f"));
        ck_assert(!string_has_cc("naïve ok"));
        j = strjoin("a", "/", "b");
        ck_assert_str_eq(j, "a/b");
        ck_assert_int_eq(free_and_strdup(&d, "x"), 0);
        ck_assert_str_eq(d, "x");
        ck_assert_int_eq(free_and_strdup(&d, NULL), 0);
        ck_assert_ptr_null(d);
        ck_assert_str_eq(strna(NULL), "n/a");
        ck_assert(isempty(""));
        ck_assert(isempty(NULL));
}
END_TEST

START_TEST(test_cescape) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "plain", "plain" },
                { "", "" },
                { "a\nb", "a\\nb" },
                { "\n<0>fake emergency", "\\n<0>fake emergency" },
                { "tab\there", "tab\\there" },
                { "\x01\x1b[31m\x7f", "\\x01\\x1b[31m\\x7f" },
                { "q'\"\\", "q\\'\\\"\\\\" },
                { "naïve 隣", "naïve 隣" },                 /* valid UTF-8 stays */
                { "\xff\xfe", "\\xff\\xfe" },           /* invalid bytes escaped */
                { "\xc0\xaf", "\\xc0\\xaf" },           /* overlong '/' */
                { "\xed\xa0\x80", "\\xed\\xa0\\x80" },    /* surrogate */
                { "\xe9", "\\xe9" },                     /* truncated sequence */
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_free_ char *e = cescape(cases[i].in);
                ck_assert_ptr_nonnull(e);
                ck_assert_str_eq(e, cases[i].out);
                ck_assert(!string_has_cc(e));
        }
}
END_TEST

TEST_SUITE("strv", test_strv_basics, test_strv_split, test_string_util, test_cescape)
