/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

/*
 * Runs a check suite the way meson expects: meson sets CK_TAP_LOG_FILE_NAME=- so results are TAP
 * on stdout, one line per test; the exit status says whether all passed.
 */
static inline int run_suite(Suite *s) {
        SRunner *sr = srunner_create(s);
        int failed;

        srunner_run_all(sr, CK_ENV);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

static inline int test_tmpdir_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        (void) remove(path);
        return 0;
}

static char test_tmpdir_path[] = "/tmp/tonari-unit.XXXXXX";
static int test_tmpdir_made;

static inline void test_tmpdir_remove(void) {
        (void) nftw(test_tmpdir_path, test_tmpdir_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * A fresh directory for the calling test, removed with everything in it when the test's process
 * exits (check forks one process per test, and a failed assertion exits too). Later calls in the
 * same process return the same directory.
 */
static inline const char *test_tmpdir(void) {
        if (test_tmpdir_made)
                return test_tmpdir_path;
        ck_assert_msg(mkdtemp(test_tmpdir_path) != NULL, "mkdtemp(%s) failed", test_tmpdir_path);
        ck_assert_int_eq(atexit(test_tmpdir_remove), 0);
        test_tmpdir_made = 1;
        return test_tmpdir_path;
}

/* Builds a one-case suite from a list of test functions. */
#define TEST_SUITE(name, ...)                                                                          \
        int main(void) {                                                                               \
                Suite *s = suite_create(name);                                                         \
                TCase *tc = tcase_create("core");                                                      \
                const TTest *const tests[] = { __VA_ARGS__ };                                          \
                for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)                          \
                        tcase_add_test(tc, tests[i]);                                                  \
                suite_add_tcase(s, tc);                                                                \
                return run_suite(s);                                                                   \
        }
