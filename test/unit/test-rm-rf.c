/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "rm-rf.h"
#include "tests.h"

START_TEST(test_rm_rf_children) {
        _cleanup_close_ int dir = -EBADF, outside = -EBADF;
        const char *tmp = test_tmpdir();

        dir = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dir, 0);
        ck_assert_int_eq(mkdirat(dir, "keep", 0700), 0);
        outside = openat(dir, "keep/file", O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        ck_assert_int_ge(outside, 0);

        ck_assert_int_eq(mkdirat(dir, "victim", 0700), 0);
        ck_assert_int_eq(mkdirat(dir, "victim/a", 0700), 0);
        ck_assert_int_eq(mkdirat(dir, "victim/a/b", 0500), 0);
        safe_close(openat(dir, "victim/a/f", O_CREAT | O_WRONLY | O_CLOEXEC, 0));
        /* A link out of the tree: removed itself, its target untouched. */
        ck_assert_int_eq(symlinkat("../../keep", dir, "victim/a/link"), 0);

        _cleanup_close_ int victim = openat(dir, "victim", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(victim, 0);
        ck_assert_int_eq(rm_rf_children(victim), 0);
        ck_assert_int_eq(faccessat(dir, "victim", F_OK, 0), 0);
        ck_assert_int_eq(faccessat(dir, "victim/a", F_OK, AT_SYMLINK_NOFOLLOW), -1);
        ck_assert_int_eq(faccessat(dir, "keep/file", F_OK, 0), 0);

        /* Again on the same fd, whose offset is at the end now, and on an empty directory. */
        ck_assert_int_eq(mkdirat(dir, "victim/again", 0700), 0);
        ck_assert_int_eq(rm_rf_children(victim), 0);
        ck_assert_int_eq(faccessat(dir, "victim/again", F_OK, 0), -1);

        ck_assert_int_eq(rm_rf_at(dir, "victim"), 0);
        ck_assert_int_eq(faccessat(dir, "victim", F_OK, 0), -1);
        ck_assert_int_eq(rm_rf_at(dir, "victim"), 0);
        ck_assert_int_eq(rm_rf_children(outside), -ENOTDIR);
}
END_TEST

TEST_SUITE("rm-rf", test_rm_rf_children)
