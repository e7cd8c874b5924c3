/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "format-util.h"
#include "string-util.h"
#include "tests.h"

static char *write_temp(const char *content, size_t len) {
        char *path = strjoin(test_tmpdir(), "/file");
        int fd;

        ck_assert_ptr_nonnull(path);
        fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, content, len), (ssize_t) len);
        safe_close(fd);
        return path;
}

START_TEST(test_read_files) {
        _cleanup_free_ char *p = write_temp("0-1\nsecond\n", 11), *buf = NULL, *line = NULL;
        size_t size;

        ck_assert_int_eq(read_full_file(p, &buf, &size), 0);
        ck_assert_uint_eq(size, 11);
        ck_assert_str_eq(buf, "0-1\nsecond\n");
        ck_assert_int_eq(read_one_line_file(p, &line), 0);
        ck_assert_str_eq(line, "0-1");
        unlink(p);

        buf = mfree(buf);
        ck_assert_int_eq(read_full_file("/nonexistent/tonari", &buf, &size), -ENOENT);
        ck_assert_ptr_null(buf);
}
END_TEST

START_TEST(test_read_file_too_big) {
        _cleanup_free_ char *p = write_temp("", 0), *buf = NULL;
        int fd = open(p, O_WRONLY | O_CLOEXEC);

        /* A sparse file just over the limit: refused, not read into memory. */
        ck_assert_int_eq(ftruncate(fd, READ_FULL_FILE_MAX + 1), 0);
        safe_close(fd);
        ck_assert_int_eq(read_full_file(p, &buf, NULL), -E2BIG);
        ck_assert_ptr_null(buf);
        unlink(p);
}
END_TEST

START_TEST(test_write_file_atomic) {
        _cleanup_free_ char *p = strjoin(test_tmpdir(), "/state"), *tmp = strjoin(test_tmpdir(), "/state.tmp"),
                            *bad = strjoin(test_tmpdir(), "/missing/state"), *buf = NULL;

        ck_assert_int_eq(write_file_atomic(p, "one\n"), 0);
        ck_assert_int_eq(write_file_atomic(p, "two\n"), 0);
        ck_assert_int_eq(read_full_file(p, &buf, NULL), 0);
        ck_assert_str_eq(buf, "two\n");
        ck_assert_int_eq(access(tmp, F_OK), -1);
        /* A directory that does not exist: an error, nothing left behind. */
        ck_assert_int_eq(write_file_atomic(bad, "x"), -ENOENT);
        unlink(p);
}
END_TEST

START_TEST(test_proc_file) {
        _cleanup_free_ char *buf = NULL;

        /* Files in /proc report size 0 and must still be read whole. */
        ck_assert_int_eq(read_full_file("/proc/self/status", &buf, NULL), 0);
        ck_assert_ptr_nonnull(strstr(buf, "Pid:"));
}
END_TEST

START_TEST(test_format_bytes) {
        char buf[FORMAT_BYTES_MAX];

        ck_assert_str_eq(format_bytes(buf, sizeof(buf), 0), "0B");
        ck_assert_str_eq(format_bytes(buf, sizeof(buf), 1023), "1023B");
        ck_assert_str_eq(format_bytes(buf, sizeof(buf), 1024), "1.0K");
        ck_assert_str_eq(format_bytes(buf, sizeof(buf), 5 * 1024 * 1024 + 110000), "5.1M");
        ck_assert_str_eq(format_bytes(buf, sizeof(buf), 3ULL << 30), "3.0G");
        ck_assert_str_eq(format_bytes(buf, sizeof(buf), (1ULL << 62) + 1), "4.0E");
        ck_assert_str_eq(format_bytes(buf, sizeof(buf), UINT64_MAX - 1), "15.9E");
        ck_assert_str_eq(format_bytes(buf, sizeof(buf), UINT64_MAX), "infinity");
}
END_TEST

TEST_SUITE("fileio", test_read_files, test_read_file_too_big, test_write_file_atomic, test_proc_file, test_format_bytes)
