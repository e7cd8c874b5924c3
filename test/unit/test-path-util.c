/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <limits.h>
#include <string.h>

#include "alloc-util.h"
#include "path-util.h"
#include "tests.h"

START_TEST(test_name_is_valid) {
        char long_name[NAME_MAX_LEN + 2];

        const char *good[] = { "web", "tenant_1", "a", "db.primary", "x-y", "user@1000", "a:b", "A9", "_" };
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                ck_assert_msg(name_is_valid(good[i], NAME_MAX_LEN), "'%s' rejected", good[i]);

        /* Traversal, separators, control characters, shell and unit-file metacharacters, non-ASCII. */
        const char *bad[] = { "",       ".",       "..",       "../x",     "a/b",        "/",     "/etc",
                              ".hidden", "-rf",    "a\nb",     "a\tb",     "a b",        "a\x7f", "a;b",
                              "$(id)",  "`id`",    "a|b",      "a*",       "naïve",      "a\\b",  "a%b",
                              "a,b",    "a=b",     "a'b",      "a\"b",     "\xff\xfe",   "a\rb",  "a\x01" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(!name_is_valid(bad[i], NAME_MAX_LEN), "'%s' accepted", bad[i]);
        ck_assert(!name_is_valid(NULL, NAME_MAX_LEN));

        memset(long_name, 'a', sizeof(long_name));
        long_name[NAME_MAX_LEN] = '\0';
        ck_assert(name_is_valid(long_name, NAME_MAX_LEN));
        long_name[NAME_MAX_LEN] = 'a';
        long_name[NAME_MAX_LEN + 1] = '\0';
        ck_assert(!name_is_valid(long_name, NAME_MAX_LEN));
}
END_TEST

START_TEST(test_filename_is_valid) {
        char big[NAME_MAX + 2];

        ck_assert(filename_is_valid("tonarid.conf"));
        ck_assert(filename_is_valid("..."));
        ck_assert(filename_is_valid(".conf"));
        ck_assert(!filename_is_valid(""));
        ck_assert(!filename_is_valid("."));
        ck_assert(!filename_is_valid(".."));
        ck_assert(!filename_is_valid("a/b"));
        ck_assert(!filename_is_valid("a\n"));
        memset(big, 'x', sizeof(big));
        big[NAME_MAX] = '\0';
        ck_assert(filename_is_valid(big));
        big[NAME_MAX] = 'x';
        big[NAME_MAX + 1] = '\0';
        ck_assert(!filename_is_valid(big));
}
END_TEST

START_TEST(test_path_is_normalized_absolute) {
        _cleanup_free_ char *huge = NULL;

        const char *good[] = { "/", "/dev/vda", "/sys/fs/cgroup/tonari.slice", "/a/.b/c..", "/a/..." };
        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                ck_assert_msg(path_is_normalized_absolute(good[i]), "'%s' rejected", good[i]);

        const char *bad[] = { "",         "dev/vda",   "./x",   "/a/../b", "/..",     "/a/..", "/./a",
                              "/a/./b",   "/a//b",     "//a",   "/a/",     "/a\n/b",  "/a\x01", "/.",
                              "../etc/passwd" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(!path_is_normalized_absolute(bad[i]), "'%s' accepted", bad[i]);
        ck_assert(!path_is_normalized_absolute(NULL));

        huge = malloc(PATH_MAX + 2);
        for (size_t i = 0; i <= PATH_MAX; i++)
                huge[i] = i % 10 == 0 ? '/' : 'a';
        huge[PATH_MAX + 1] = '\0';
        ck_assert(!path_is_normalized_absolute(huge));
}
END_TEST

START_TEST(test_path_is_normalized_relative) {
        const char *good[] = { "a", "blobs/sha256/ab", "a/.b/c..", "...", "a b/c" };
        FOREACH_ELEMENT(g, good)
                ck_assert_msg(path_is_normalized_relative(*g), "'%s' rejected", *g);

        const char *bad[] = { "", "/", "/a", "./a", "a/./b", "a/../b", "..", ".", "a//b", "a/", "a\n", "../etc/passwd" };
        FOREACH_ELEMENT(b, bad)
                ck_assert_msg(!path_is_normalized_relative(*b), "'%s' accepted", *b);
        ck_assert(!path_is_normalized_relative(NULL));
}
END_TEST

START_TEST(test_path_join) {
        _cleanup_free_ char *a = path_join("/", "proc/cgroups"), *b = path_join("/tmp/root/", "/sys/x"),
                            *c = path_join("rel", "x");

        ck_assert_str_eq(a, "/proc/cgroups");
        ck_assert_str_eq(b, "/tmp/root/sys/x");
        ck_assert_str_eq(c, "rel/x");
}
END_TEST

TEST_SUITE("path-util", test_name_is_valid, test_filename_is_valid, test_path_is_normalized_absolute,
           test_path_is_normalized_relative, test_path_join)
