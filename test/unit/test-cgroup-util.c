/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include "cgroup-util.h"
#include "fake-tree.h"
#include "strv.h"

static char *joined(char **l) {
        char *s = strv_join(l, " ");
        ck_assert_ptr_nonnull(s);
        return s;
}

START_TEST(test_parse_proc_cgroups) {
        _cleanup_strv_free_ char **c = NULL;
        _cleanup_free_ char *s = NULL;

        ck_assert_int_eq(cgroup_parse_proc_cgroups(PROC_CGROUPS_HYBRID, &c), 0);
        s = joined(c);
        /* hierarchy 0 (not on v1) and enabled 0 are left out */
        ck_assert_str_eq(s, "cpuset cpu cpuacct blkio memory pids");
        c = strv_free(c);

        ck_assert_int_eq(cgroup_parse_proc_cgroups(PROC_CGROUPS_UNIFIED, &c), 0);
        ck_assert_uint_eq(strv_length(c), 0);

        ck_assert_int_eq(cgroup_parse_proc_cgroups("#h\ncpu 1 1\n", &c), -EBADMSG);
        ck_assert_int_eq(cgroup_parse_proc_cgroups("cpu x 1 1\n", &c), -EBADMSG);
        ck_assert_int_eq(cgroup_parse_proc_cgroups("cpu 1 1 1 extra\n", &c), -EBADMSG);
}
END_TEST

START_TEST(test_detect_unified) {
        _cleanup_strv_free_ char **v2 = NULL, **v1 = NULL;
        _cleanup_free_ char *s = NULL;
        CGroupMode mode;

        fake_root_new();
        fake_file("proc/cgroups", PROC_CGROUPS_UNIFIED);
        fake_file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
        ck_assert_int_eq(cgroup_detect(fake_root, &mode, &v2, &v1), 0);
        ck_assert_int_eq(mode, CGROUP_MODE_UNIFIED);
        s = joined(v2);
        ck_assert_str_eq(s, "cpuset cpu io memory pids");
        ck_assert_uint_eq(strv_length(v1), 0);
}
END_TEST

START_TEST(test_detect_hybrid) {
        _cleanup_strv_free_ char **v2 = NULL, **v1 = NULL;
        _cleanup_free_ char *s2 = NULL, *s1 = NULL;
        CGroupMode mode;

        fake_root_new();
        fake_file("proc/cgroups", PROC_CGROUPS_HYBRID);
        fake_file("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
        fake_dir("sys/fs/cgroup/cpu");
        ck_assert_int_eq(cgroup_detect(fake_root, &mode, &v2, &v1), 0);
        ck_assert_int_eq(mode, CGROUP_MODE_HYBRID);
        s2 = joined(v2);
        s1 = joined(v1);
        ck_assert_str_eq(s2, "hugetlb");
        ck_assert_str_eq(s1, "cpuset cpu cpuacct blkio memory pids");
        ck_assert_str_eq(cgroup_mode_to_string(mode), "hybrid");
}
END_TEST

START_TEST(test_detect_legacy_and_none) {
        _cleanup_strv_free_ char **v2 = NULL, **v1 = NULL;
        CGroupMode mode;

        fake_root_new();
        fake_file("proc/cgroups", PROC_CGROUPS_HYBRID);
        ck_assert_int_eq(cgroup_detect(fake_root, &mode, &v2, &v1), 0);
        ck_assert_int_eq(mode, CGROUP_MODE_LEGACY);
        ck_assert_ptr_null(v2);
        ck_assert_uint_eq(strv_length(v1), 6);
        v1 = strv_free(v1);

        fake_file("proc/cgroups", "#subsys_name\thierarchy\tnum_cgroups\tenabled\n");
        ck_assert_int_eq(cgroup_detect(fake_root, &mode, NULL, NULL), 0);
        ck_assert_int_eq(mode, CGROUP_MODE_NONE);
}
END_TEST

START_TEST(test_detect_garbage) {
        CGroupMode mode = CGROUP_MODE_UNIFIED;

        fake_root_new();
        fake_file("proc/cgroups", "this is not /proc/cgroups\n");
        ck_assert_int_eq(cgroup_detect(fake_root, &mode, NULL, NULL), -EBADMSG);
        ck_assert_int_eq(mode, CGROUP_MODE_UNIFIED); /* untouched on failure */
}
END_TEST

TEST_SUITE("cgroup-util", test_parse_proc_cgroups, test_detect_unified, test_detect_hybrid,
           test_detect_legacy_and_none, test_detect_garbage)
