/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tests.h's own promise: a test's temporary directory is gone after the suite ran, also when the
 * test failed an assertion, aborted or timed out (check's forked test process then never runs its
 * exit handlers). The test runs an inner suite, this same program with $TONARI_TMPDIR_REPORT set,
 * whose tests each make their directory, write its path to the report, and then fail in one of
 * those ways; afterwards none of the reported paths may exist.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fileio.h"
#include "string-util.h"
#include "tests.h"

/* The inner suite's tests. */

static void report_tmpdir(void) {
        const char *dir = test_tmpdir();
        _cleanup_free_ char *file = strjoin(dir, "/left-behind");
        FILE *f;

        ck_assert_ptr_nonnull(file);
        f = fopen(file, "we");
        ck_assert_ptr_nonnull(f);
        fclose(f);
        f = fopen(getenv("TONARI_TMPDIR_REPORT"), "ae");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "%s\n", dir);
        fclose(f);
}

START_TEST(inner_fails) {
        report_tmpdir();
        ck_assert_msg(false, "failing on purpose");
}
END_TEST

START_TEST(inner_aborts) {
        report_tmpdir();
        abort();
}
END_TEST

START_TEST(inner_times_out) {
        report_tmpdir();
        for (;;)
                pause();
}
END_TEST

START_TEST(inner_passes) {
        report_tmpdir();
}
END_TEST

static int run_inner(void) {
        Suite *s = suite_create("tmpdir-inner");
        TCase *tc = tcase_create("core");

        tcase_set_timeout(tc, 1);
        tcase_add_test(tc, inner_fails);
        tcase_add_test(tc, inner_aborts);
        tcase_add_test(tc, inner_times_out);
        tcase_add_test(tc, inner_passes);
        suite_add_tcase(s, tc);
        return run_suite(s);
}

/* The outer test. */

START_TEST(test_removed_after_failure_and_timeout) {
        _cleanup_free_ char *report = strjoin(test_tmpdir(), "/report"), *log = strjoin(test_tmpdir(), "/log"),
                            *dirs = NULL, *out = NULL;
        unsigned n = 0;
        int status;
        pid_t pid;

        ck_assert_ptr_nonnull(report);
        ck_assert_ptr_nonnull(log);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

                /* Not TAP on our stdout, where meson reads this test's results. */
                if (fd < 0 || dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0)
                        _exit(127);
                if (setenv("TONARI_TMPDIR_REPORT", report, 1) < 0 || setenv("CK_FORK", "yes", 1) < 0 ||
                    setenv("CK_VERBOSITY", "normal", 1) < 0 || unsetenv("CK_TAP_LOG_FILE_NAME") < 0 ||
                    unsetenv("CK_RUN_CASE") < 0 || unsetenv("CK_RUN_SUITE") < 0)
                        _exit(127);
                execl("/proc/self/exe", "test-tmpdir", (char *) NULL);
                _exit(127);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);

        /* The inner suite really failed, aborted and timed out... */
        ck_assert_int_eq(read_full_file(log, &out, NULL), 0);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == EXIT_FAILURE, "inner suite: status %d, %s",
                      status, out);
        ck_assert_msg(strstr(out, "failing on purpose"), "%s", out);
        ck_assert_msg(strstr(out, "signal 6"), "%s", out);
        ck_assert_msg(strstr(out, "Test timeout expired"), "%s", out);

        /* ...after each test made its directory, and nothing of them is left. */
        ck_assert_int_eq(read_full_file(report, &dirs, NULL), 0);
        for (char *line = strtok(dirs, "\n"); line; line = strtok(NULL, "\n")) {
                char *slash = strrchr(line, '/');

                ck_assert_msg(access(line, F_OK) < 0 && errno == ENOENT, "%s is left behind", line);
                ck_assert_ptr_nonnull(slash);
                *slash = 0; /* the suite's directory */
                ck_assert_msg(access(line, F_OK) < 0 && errno == ENOENT, "%s is left behind", line);
                n++;
        }
        ck_assert_uint_eq(n, 4);
}
END_TEST

int main(void) {
        Suite *s;
        TCase *tc;

        if (getenv("TONARI_TMPDIR_REPORT"))
                return run_inner();

        s = suite_create("tmpdir");
        tc = tcase_create("core");
        tcase_add_test(tc, test_removed_after_failure_and_timeout);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
