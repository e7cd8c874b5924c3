/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <check.h>
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
