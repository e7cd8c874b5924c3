/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <unistd.h>

#include "fake-tree.h"
#include "host-features.h"

static void assert_feature(const Features *f, FeatureId id, bool available, const char *detail_part) {
        ck_assert_msg(f->feature[id].available == available, "%s: expected %s", feature_to_string(id),
                      available ? "available" : "unavailable");
        ck_assert_msg(strstr(f->feature[id].detail, detail_part), "%s: detail '%s' lacks '%s'",
                      feature_to_string(id), f->feature[id].detail, detail_part);
}

/* The VM test bed: systemd, cgroup v2, two NUMA nodes, custom kernel with page_idle. */
START_TEST(test_vm_like_host) {
        Features f;

        fake_root_new();
        fake_dir("run/systemd/system");
        fake_file("proc/cgroups", PROC_CGROUPS_UNIFIED);
        fake_file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_file("sys/devices/system/node/online", "0-1\n");
        fake_file("sys/kernel/mm/page_idle/bitmap", "");
        fake_file("proc/pressure/cpu", "some avg10=0.00\n");

        ck_assert_int_eq(features_detect(fake_root, &f), 0);
        ck_assert_int_eq(f.cgroup_mode, CGROUP_MODE_UNIFIED);
        ck_assert_uint_eq(f.numa_nodes, 2);
        assert_feature(&f, FEATURE_SYSTEMD, true, "PID 1");
        assert_feature(&f, FEATURE_CGROUP_V2, true, "controllers: cpuset cpu io memory pids");
        assert_feature(&f, FEATURE_CGROUP_V1, false, "no v1");
        assert_feature(&f, FEATURE_NUMA, true, "2 nodes online (0-1)");
        assert_feature(&f, FEATURE_PAGE_IDLE, true, "present");
        assert_feature(&f, FEATURE_PSI, true, "present");
        assert_feature(&f, FEATURE_KERNEL_BORROWING, false, "no cpu.cfs_borrowing_us");
        assert_feature(&f, FEATURE_KERNEL_LAZY_MIGRATE, false, "no cpuset.lazy_migrate");
        features_done(&f);
        features_done(&f); /* idempotent */
}
END_TEST

/* The development machine: no systemd, hybrid cgroups, one node, no page_idle, no PSI. */
START_TEST(test_dev_like_host) {
        Features f;

        fake_root_new();
        fake_file("proc/cgroups", PROC_CGROUPS_HYBRID);
        fake_file("sys/fs/cgroup/unified/cgroup.controllers", "hugetlb\n");
        fake_file("sys/devices/system/node/online", "0\n");

        ck_assert_int_eq(features_detect(fake_root, &f), 0);
        ck_assert_int_eq(f.cgroup_mode, CGROUP_MODE_HYBRID);
        ck_assert_uint_eq(f.numa_nodes, 1);
        assert_feature(&f, FEATURE_SYSTEMD, false, "not booted with systemd");
        assert_feature(&f, FEATURE_CGROUP_V2, false, "hybrid hierarchy");
        assert_feature(&f, FEATURE_CGROUP_V2, false, "hugetlb");
        assert_feature(&f, FEATURE_CGROUP_V1, true, "controllers: cpuset cpu cpuacct blkio memory pids");
        assert_feature(&f, FEATURE_NUMA, false, "1 node online (0)");
        assert_feature(&f, FEATURE_PAGE_IDLE, false, "CONFIG_IDLE_PAGE_TRACKING");
        assert_feature(&f, FEATURE_PSI, false, "CONFIG_PSI");
        assert_feature(&f, FEATURE_KERNEL_BORROWING, false, "needs the unified cgroup hierarchy");
        assert_feature(&f, FEATURE_KERNEL_LAZY_MIGRATE, false, "needs the unified cgroup hierarchy");
        features_done(&f);
}
END_TEST

START_TEST(test_odd_numa) {
        Features f;

        fake_root_new();
        fake_file("proc/cgroups", PROC_CGROUPS_UNIFIED);
        ck_assert_int_eq(features_detect(fake_root, &f), 0);
        ck_assert_uint_eq(f.numa_nodes, 0);
        assert_feature(&f, FEATURE_NUMA, false, "missing");
        assert_feature(&f, FEATURE_CGROUP_V2, false, "no cgroup2");
        features_done(&f);

        fake_file("sys/devices/system/node/online", "0,2-3\n");
        ck_assert_int_eq(features_detect(fake_root, &f), 0);
        assert_feature(&f, FEATURE_NUMA, true, "3 nodes online (0,2-3)");
        features_done(&f);

        fake_file("sys/devices/system/node/online", "zero\n");
        ck_assert_int_eq(features_detect(fake_root, &f), 0);
        assert_feature(&f, FEATURE_NUMA, false, "cannot parse online node list 'zero'");
        features_done(&f);
}
END_TEST

/* cpu.cfs_borrowing_us is looked for in the top-level cgroups: only the patched kernel has it. */
START_TEST(test_kernel_borrowing) {
        Features f;

        fake_root_new();
        fake_file("proc/cgroups", PROC_CGROUPS_UNIFIED);
        fake_file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_file("sys/fs/cgroup/cpu.stat", "usage_usec 1\n");
        fake_file("sys/fs/cgroup/init.scope/cpu.max", "max 100000\n");
        ck_assert_int_eq(features_detect(fake_root, &f), 0);
        assert_feature(&f, FEATURE_KERNEL_BORROWING, false, "no cpu.cfs_borrowing_us in the top-level cgroups");
        features_done(&f);

        /* A file of that name is not a cgroup. */
        fake_file("sys/fs/cgroup/cpu.cfs_borrowing_us", "0\n");
        ck_assert_int_eq(features_detect(fake_root, &f), 0);
        assert_feature(&f, FEATURE_KERNEL_BORROWING, false, "no cpu.cfs_borrowing_us");
        features_done(&f);

        fake_file("sys/fs/cgroup/system.slice/cpu.cfs_borrowing_us", "0\n");
        ck_assert_int_eq(features_detect(fake_root, &f), 0);
        assert_feature(&f, FEATURE_KERNEL_BORROWING, true,
                       "cpu.cfs_borrowing_us in /sys/fs/cgroup/system.slice (no cpu.cfs_charge_procs)");
        features_done(&f);

        fake_file("sys/fs/cgroup/system.slice/cpu.cfs_charge_procs", "");
        ck_assert_int_eq(features_detect(fake_root, &f), 0);
        assert_feature(&f, FEATURE_KERNEL_BORROWING, true,
                       "cpu.cfs_borrowing_us and cpu.cfs_charge_procs in /sys/fs/cgroup/system.slice");
        ck_assert_str_eq(feature_to_string(FEATURE_KERNEL_BORROWING), "kernel-borrowing");
        features_done(&f);
}
END_TEST

/* On a fresh boot no top-level cgroup may have the cpu controller yet: a later refresh finds the
 * files once one has, and a positive answer is kept even if they go again. */
START_TEST(test_kernel_borrowing_refresh) {
        _cleanup_free_ char *gone = NULL;
        Features f;

        fake_root_new();
        fake_file("proc/cgroups", PROC_CGROUPS_UNIFIED);
        fake_file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_file("sys/fs/cgroup/init.scope/cgroup.procs", "1\n");
        ck_assert_int_eq(features_detect(fake_root, &f), 0);
        assert_feature(&f, FEATURE_KERNEL_BORROWING, false, "cpu controller not enabled in any of them yet");
        ck_assert_int_eq(features_refresh(fake_root, &f), 0);
        assert_feature(&f, FEATURE_KERNEL_BORROWING, false, "no cpu.cfs_borrowing_us");

        fake_file("sys/fs/cgroup/system.slice/cpu.cfs_borrowing_us", "0\n");
        fake_file("sys/fs/cgroup/system.slice/cpu.cfs_charge_procs", "");
        ck_assert_int_eq(features_refresh(fake_root, &f), 0);
        assert_feature(&f, FEATURE_KERNEL_BORROWING, true,
                       "cpu.cfs_borrowing_us and cpu.cfs_charge_procs in /sys/fs/cgroup/system.slice");

        gone = strjoin(fake_root, "/sys/fs/cgroup/system.slice/cpu.cfs_borrowing_us");
        ck_assert_ptr_nonnull(gone);
        ck_assert_int_eq(unlink(gone), 0);
        ck_assert_int_eq(features_refresh(fake_root, &f), 0);
        assert_feature(&f, FEATURE_KERNEL_BORROWING, true, "in /sys/fs/cgroup/system.slice");
        features_done(&f);
}
END_TEST

/* cpuset.lazy_migrate likewise, in a top-level cgroup with the cpuset controller; found by a refresh
 * once one has it, independently of the borrowing files. */
START_TEST(test_kernel_lazy_migrate) {
        Features f;

        fake_root_new();
        fake_file("proc/cgroups", PROC_CGROUPS_UNIFIED);
        fake_file("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_file("sys/fs/cgroup/cpuset.lazy_migrate", "0\n"); /* a file, not a cgroup */
        fake_file("sys/fs/cgroup/system.slice/cpu.cfs_borrowing_us", "0\n");
        ck_assert_int_eq(features_detect(fake_root, &f), 0);
        assert_feature(&f, FEATURE_KERNEL_LAZY_MIGRATE, false,
                       "no cpuset.lazy_migrate in the top-level cgroups (kernel without tonari's kernel/patches, "
                       "or the cpuset controller not enabled in any of them yet)");
        assert_feature(&f, FEATURE_KERNEL_BORROWING, true, "in /sys/fs/cgroup/system.slice");

        fake_file("sys/fs/cgroup/machine.slice/cpuset.lazy_migrate", "0\n");
        ck_assert_int_eq(features_refresh(fake_root, &f), 0);
        assert_feature(&f, FEATURE_KERNEL_LAZY_MIGRATE, true,
                       "cpuset.lazy_migrate in /sys/fs/cgroup/machine.slice (no cpuset.lazy_migrate_policy");
        features_done(&f);

        fake_file("sys/fs/cgroup/machine.slice/cpuset.lazy_migrate_policy", "mild\n");
        ck_assert_int_eq(features_detect(fake_root, &f), 0);
        assert_feature(&f, FEATURE_KERNEL_LAZY_MIGRATE, true,
                       "cpuset.lazy_migrate and cpuset.lazy_migrate_policy in /sys/fs/cgroup/machine.slice");
        ck_assert_str_eq(feature_to_string(FEATURE_KERNEL_LAZY_MIGRATE), "kernel-lazy-migrate");
        features_done(&f);
}
END_TEST

TEST_SUITE("host-features", test_vm_like_host, test_dev_like_host, test_odd_numa, test_kernel_borrowing,
           test_kernel_borrowing_refresh, test_kernel_lazy_migrate)
