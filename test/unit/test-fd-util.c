/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "tests.h"

static unsigned count_entries(DIR *d) {
        struct dirent *de;
        unsigned n = 0;

        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        return n;
}

START_TEST(test_opendir_fd_reads_from_the_start) {
        _cleanup_close_ int dir = -EBADF;
        _cleanup_closedir_ DIR *first = NULL, *again = NULL;

        dir = open(test_tmpdir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dir, 0);
        for (const char *n = "abc"; *n; n++) {
                char name[2] = { *n, 0 };
                ck_assert_int_eq(mkdirat(dir, name, 0700), 0);
        }

        ck_assert_int_eq(opendir_fd(dir, &first), 0);
        ck_assert_uint_eq(count_entries(first), 3);
        /* The first stream moved the shared offset to the end; a new one starts over. */
        ck_assert_int_eq(opendir_fd(dir, &again), 0);
        ck_assert_uint_eq(count_entries(again), 3);
        closedir(TAKE_PTR(first));
        closedir(TAKE_PTR(again));
        /* The caller's descriptor is still its own. */
        ck_assert_int_eq(fcntl(dir, F_GETFD), FD_CLOEXEC);
        ck_assert_int_eq(opendir_fd(-EBADF, &first), -EBADF);
}
END_TEST

START_TEST(test_opendirat) {
        _cleanup_close_ int dir = -EBADF;
        _cleanup_closedir_ DIR *d = NULL;

        dir = open(test_tmpdir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dir, 0);
        ck_assert_int_eq(mkdirat(dir, "sub", 0700), 0);
        ck_assert_int_eq(mkdirat(dir, "sub/x", 0700), 0);
        ck_assert_int_eq(symlinkat("sub", dir, "link"), 0);

        ck_assert_int_eq(opendirat(dir, "sub", &d), 0);
        ck_assert_uint_eq(count_entries(d), 1);
        ck_assert_int_eq(opendirat(dir, "missing", &d), -ENOENT);
        /* Never through a symlink: O_NOFOLLOW with O_DIRECTORY gives ELOOP or ENOTDIR. */
        {
                DIR *l = NULL;
                int r = opendirat(dir, "link", &l);

                ck_assert(r == -ELOOP || r == -ENOTDIR);
                ck_assert_ptr_null(l);
        }
}
END_TEST

TEST_SUITE("fd-util", test_opendir_fd_reads_from_the_start, test_opendirat)
