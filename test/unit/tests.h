/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <check.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>

static inline int test_tmpdir_remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) st;
        (void) flag;
        (void) ftw;
        (void) remove(path);
        return 0;
}

static inline void test_tmpdir_remove_tree(const char *path) {
        (void) nftw(path, test_tmpdir_remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

/*
 * The temporary directories of the tests live under one directory that the process running the
 * suite owns: check runs each test in a forked process that leaves through _exit() or abort()
 * when an assertion fails and is killed when it times out, so the test's process never gets to
 * clean up; its parent does, after the suite ran, whatever became of the tests.
 */
static char test_tmpdir_base[] = "/tmp/tonari-unit.XXXXXX";
static int test_tmpdir_base_made;
static char test_tmpdir_path[sizeof(test_tmpdir_base) + sizeof("/XXXXXX")];
static int test_tmpdir_made;

static inline void test_tmpdir_base_remove(void) {
        if (test_tmpdir_base_made)
                test_tmpdir_remove_tree(test_tmpdir_base);
        test_tmpdir_base_made = 0;
}

/*
 * Runs a check suite the way meson expects: meson sets CK_TAP_LOG_FILE_NAME=- so results are TAP
 * on stdout, one line per test; the exit status says whether all passed. The tests' temporary
 * directories are removed afterwards, also those of tests that failed or timed out.
 */
static inline int run_suite(Suite *s) {
        SRunner *sr = srunner_create(s);
        int failed;

        if (!mkdtemp(test_tmpdir_base)) {
                perror("mkdtemp");
                srunner_free(sr);
                return EXIT_FAILURE;
        }
        test_tmpdir_base_made = 1;
        srunner_run_all(sr, CK_ENV);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        test_tmpdir_base_remove();
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/*
 * A fresh directory for the calling test (check forks one process per test; later calls in the
 * same process return the same directory), inside the suite's directory that run_suite() removes.
 * Called outside run_suite(), the directory is removed when the process exits normally.
 */
static inline const char *test_tmpdir(void) {
        if (test_tmpdir_made)
                return test_tmpdir_path;
        if (!test_tmpdir_base_made) {
                ck_assert_msg(mkdtemp(test_tmpdir_base) != NULL, "mkdtemp(%s) failed", test_tmpdir_base);
                test_tmpdir_base_made = 1;
                ck_assert_int_eq(atexit(test_tmpdir_base_remove), 0);
        }
        (void) snprintf(test_tmpdir_path, sizeof(test_tmpdir_path), "%s/XXXXXX", test_tmpdir_base);
        ck_assert_msg(mkdtemp(test_tmpdir_path) != NULL, "mkdtemp(%s) failed", test_tmpdir_path);
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
