/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "log.h"
#include "string-util.h"
#include "tests.h"

static char *stderr_path;

/* Points stderr at a fresh temp file; check runs each test in its own process. */
static void capture_stderr(void) {
        int fd;

        stderr_path = strjoin(test_tmpdir(), "/stderr");
        ck_assert_ptr_nonnull(stderr_path);
        fd = open(stderr_path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(dup2(fd, STDERR_FILENO), STDERR_FILENO);
        safe_close(fd);
}

static char *captured(void) {
        char *buf = NULL;

        ck_assert_int_eq(read_full_file(stderr_path, &buf, NULL), 0);
        return buf;
}

static void pretend_journal_stream(void) {
        struct stat st;
        char v[64];

        ck_assert_int_eq(fstat(STDERR_FILENO, &st), 0);
        snprintf(v, sizeof(v), "%lu:%lu", (unsigned long) st.st_dev, (unsigned long) st.st_ino);
        setenv("JOURNAL_STREAM", v, 1);
}

START_TEST(test_levels) {
        ck_assert_int_eq(log_level_from_string("debug"), LOG_DEBUG);
        ck_assert_int_eq(log_level_from_string("err"), LOG_ERR);
        ck_assert_int_eq(log_level_from_string("0"), LOG_EMERG);
        ck_assert_int_eq(log_level_from_string("7"), LOG_DEBUG);
        ck_assert_int_eq(log_level_from_string("8"), -EINVAL);
        ck_assert_int_eq(log_level_from_string("DEBUG"), -EINVAL);
        ck_assert_int_eq(log_level_from_string(""), -EINVAL);
        ck_assert_int_eq(log_level_from_string("-1"), -EINVAL);
        ck_assert_str_eq(log_level_to_string(LOG_WARNING), "warning");
        ck_assert_ptr_null(log_level_to_string(8));
        ck_assert_int_eq(log_target_from_string("journal"), LOG_TARGET_JOURNAL);
        ck_assert_int_eq(log_target_from_string("kmsg"), -EINVAL);
        ck_assert_str_eq(log_target_to_string(LOG_TARGET_AUTO), "auto");
}
END_TEST

START_TEST(test_console) {
        _cleanup_free_ char *out = NULL;

        unsetenv("JOURNAL_STREAM");
        capture_stderr();
        log_open();
        ck_assert_int_eq(log_get_effective_target(), LOG_TARGET_CONSOLE);
        log_set_max_level(LOG_INFO);

        errno = 77;
        ck_assert_int_eq(log_error_errno(-ENOENT, "open '%s': %m", "x"), -ENOENT);
        ck_assert_int_eq(errno, 77); /* preserved */
        ck_assert_int_eq(log_warning_errno(EACCES, "second"), -EACCES);
        ck_assert_int_eq(log_debug_errno(EIO, "filtered"), -EIO); /* still returns the error */
        log_debug("filtered too");
        log_info("plain %d", 3);

        out = captured();
        ck_assert_str_eq(out, "open 'x': No such file or directory\nsecond\nplain 3\n");
}
END_TEST

START_TEST(test_journal_prefix) {
        _cleanup_free_ char *out = NULL;

        capture_stderr();
        pretend_journal_stream();
        log_open();
        ck_assert_int_eq(log_get_effective_target(), LOG_TARGET_JOURNAL);

        log_info("hello");
        log_error("two\nlines");
        log_set_target(LOG_TARGET_CONSOLE);
        log_open();
        log_info("forced console");

        out = captured();
        ck_assert_str_eq(out, "<6>hello\n<3>two\n<3>lines\nforced console\n");
}
END_TEST

START_TEST(test_journal_stream_mismatch) {
        capture_stderr();
        setenv("JOURNAL_STREAM", "1:1", 1);
        log_open();
        ck_assert_int_eq(log_get_effective_target(), LOG_TARGET_CONSOLE);
        setenv("JOURNAL_STREAM", "garbage", 1);
        log_open();
        ck_assert_int_eq(log_get_effective_target(), LOG_TARGET_CONSOLE);
}
END_TEST

START_TEST(test_struct_args) {
        _cleanup_free_ char *out = NULL;

        unsetenv("JOURNAL_STREAM");
        capture_stderr();
        log_open();

        /* Each field consumes exactly its own arguments, whatever their types. */
        ck_assert_int_eq(log_struct_errno(LOG_INFO, ENOENT, "A=%d", 1, "B=%s", "two", "C=%llu", 3ULL, "D=%.1f", 4.5,
                                          "E=%*d", 3, 5, "F=%m", "G=100%%", "H=%c%hd%ld%zu%p", 'x', (short) 6, 7L,
                                          (size_t) 8, (void *) NULL,
                                          LOG_MESSAGE("msg %s %d: %m", "ok", 42)),
                         -ENOENT);
        out = captured();
        ck_assert_str_eq(out, "msg ok 42: No such file or directory\n");
}
END_TEST

START_TEST(test_struct_journal_fallback) {
        _cleanup_free_ char *out = NULL;

        /* Without a journal socket the structured message still reaches stderr, with its priority. */
        if (access("/run/systemd/journal/socket", F_OK) == 0)
                return; /* a real journal would take the message; covered by the VM test instead */
        capture_stderr();
        pretend_journal_stream();
        log_open();
        log_struct(LOG_NOTICE, "TONARI_SLICE=%s", "web", LOG_MESSAGE("Throttled slice '%s'.", "web"));
        out = captured();
        ck_assert_str_eq(out, "<5>Throttled slice 'web'.\n");
}
END_TEST

START_TEST(test_truncation) {
        _cleanup_free_ char *big = malloc(20000), *out = NULL;

        memset(big, 'x', 19999);
        big[19999] = '\0';
        unsetenv("JOURNAL_STREAM");
        capture_stderr();
        log_open();
        log_info("%s", big);
        out = captured();
        ck_assert_uint_lt(strlen(out), 5000);
        ck_assert_uint_gt(strlen(out), 4000);
        ck_assert_int_eq(out[strlen(out) - 1], '\n');
        ck_assert_ptr_null(strchr(out, '\n') == out + strlen(out) - 1 ? NULL : out);
}
END_TEST

TEST_SUITE("log", test_levels, test_console, test_journal_prefix, test_journal_stream_mismatch, test_struct_args,
           test_struct_journal_fallback, test_truncation)
