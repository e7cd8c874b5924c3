/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <sys/sysmacros.h>

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

/* Resource settings ↔ kernel files. */

static CGroupIODeviceLimit io_limit(unsigned maj, unsigned min, uint64_t rbps, uint64_t wbps, uint64_t riops,
                                    uint64_t wiops) {
        char *path = NULL;

        ck_assert_int_ge(asprintf(&path, "/dev/block/%u:%u", maj, min), 0);
        return (CGroupIODeviceLimit) {
                .path = path,
                .devnum = makedev(maj, min),
                .limit = { rbps, wbps, riops, wiops },
        };
}

START_TEST(test_settings_done_copy_find) {
        _cleanup_(cgroup_settings_done) CGroupSettings s = CGROUP_SETTINGS_INIT;
        _cleanup_(cgroup_settings_done) CGroupSettings c = CGROUP_SETTINGS_INIT;
        const uint8_t cpus[] = { 0x0f, 0x01 }, mems[] = { 0x02 };

        cgroup_settings_done(NULL);
        cgroup_settings_done(&s); /* on an empty one */
        ck_assert_uint_eq(s.cpu_weight, CGROUP_WEIGHT_UNSET);

        s.cpu_weight = 200;
        s.cpu_quota_per_sec_usec = 500000;
        s.cpu_quota_period_usec = 50000;
        s.io_weight = 300;
        s.memory_max = 1 << 30;
        s.memory_high = 1 << 29;
        s.io_limits = new0(CGroupIODeviceLimit, 2);
        ck_assert_ptr_nonnull(s.io_limits);
        s.io_limits[0] = io_limit(254, 0, CGROUP_LIMIT_MAX, 5000000, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX);
        s.io_limits[1] = io_limit(8, 16, 1, 2, 3, 4);
        s.n_io_limits = 2;
        s.allowed_cpus = new(uint8_t, 2);
        memcpy(s.allowed_cpus, cpus, 2);
        s.allowed_cpus_size = 2;
        s.allowed_mems = new(uint8_t, 1);
        memcpy(s.allowed_mems, mems, 1);
        s.allowed_mems_size = 1;

        ck_assert_int_eq(cgroup_settings_copy(&c, &s), 0);
        ck_assert_uint_eq(c.cpu_weight, 200);
        ck_assert_uint_eq(c.cpu_quota_per_sec_usec, 500000);
        ck_assert_uint_eq(c.cpu_quota_period_usec, 50000);
        ck_assert_uint_eq(c.io_weight, 300);
        ck_assert_uint_eq(c.memory_max, 1 << 30);
        ck_assert_uint_eq(c.memory_high, 1 << 29);
        ck_assert_uint_eq(c.n_io_limits, 2);
        /* deep: nothing shared */
        ck_assert_ptr_ne(c.io_limits, s.io_limits);
        ck_assert_ptr_ne(c.io_limits[0].path, s.io_limits[0].path);
        ck_assert_str_eq(c.io_limits[0].path, "/dev/block/254:0");
        ck_assert_str_eq(c.io_limits[1].path, "/dev/block/8:16");
        ck_assert_uint_eq(c.io_limits[0].limit[CGROUP_IO_WBPS], 5000000);
        ck_assert_uint_eq(c.io_limits[1].limit[CGROUP_IO_WIOPS], 4);
        ck_assert_ptr_ne(c.allowed_cpus, s.allowed_cpus);
        ck_assert_uint_eq(c.allowed_cpus_size, 2);
        ck_assert_mem_eq(c.allowed_cpus, cpus, 2);
        ck_assert_uint_eq(c.allowed_mems_size, 1);
        ck_assert_mem_eq(c.allowed_mems, mems, 1);

        /* changing the original leaves the copy alone */
        s.io_limits[1].limit[CGROUP_IO_WIOPS] = 99;
        s.allowed_cpus[0] = 0;
        ck_assert_uint_eq(c.io_limits[1].limit[CGROUP_IO_WIOPS], 4);
        ck_assert_uint_eq(c.allowed_cpus[0], 0x0f);

        ck_assert_ptr_eq(cgroup_settings_find_io_limit(&c, makedev(8, 16)), c.io_limits + 1);
        ck_assert_ptr_eq(cgroup_settings_find_io_limit(&c, makedev(254, 0)), c.io_limits);
        ck_assert_ptr_null(cgroup_settings_find_io_limit(&c, makedev(8, 0)));
        ck_assert_ptr_null(cgroup_settings_find_io_limit(NULL, makedev(8, 0)));

        /* done resets to the defaults, so a done one is reusable */
        cgroup_settings_done(&s);
        ck_assert_ptr_null(s.io_limits);
        ck_assert_uint_eq(s.n_io_limits, 0);
        ck_assert_ptr_null(s.allowed_cpus);
        ck_assert_ptr_null(s.allowed_mems);
        ck_assert_uint_eq(s.cpu_weight, CGROUP_WEIGHT_UNSET);
        ck_assert_uint_eq(s.cpu_quota_per_sec_usec, USEC_INFINITY);
        ck_assert_uint_eq(s.memory_max, CGROUP_LIMIT_MAX);
        ck_assert_ptr_null(cgroup_settings_find_io_limit(&s, makedev(8, 16)));
}
END_TEST

START_TEST(test_settings_copy_sparse) {
        _cleanup_(cgroup_settings_done) CGroupSettings s = CGROUP_SETTINGS_INIT;
        _cleanup_(cgroup_settings_done) CGroupSettings c = CGROUP_SETTINGS_INIT;

        /* defaults only: nothing allocated */
        ck_assert_int_eq(cgroup_settings_copy(&c, &s), 0);
        ck_assert_ptr_null(c.io_limits);
        ck_assert_ptr_null(c.allowed_cpus);
        ck_assert_uint_eq(c.io_weight, CGROUP_WEIGHT_UNSET);
        cgroup_settings_done(&c);

        /* an entry without a path, an empty but present mask */
        s.io_limits = new0(CGroupIODeviceLimit, 1);
        s.io_limits[0].devnum = makedev(8, 0);
        s.io_limits[0].limit[CGROUP_IO_RBPS] = 7;
        s.n_io_limits = 1;
        s.allowed_mems = new0(uint8_t, 1);
        s.allowed_mems_size = 0;
        ck_assert_int_eq(cgroup_settings_copy(&c, &s), 0);
        ck_assert_ptr_null(c.io_limits[0].path);
        ck_assert_uint_eq(c.io_limits[0].limit[CGROUP_IO_RBPS], 7);
        ck_assert_ptr_nonnull(c.allowed_mems);
        ck_assert_uint_eq(c.allowed_mems_size, 0);
        ck_assert_ptr_null(c.allowed_cpus);

        ck_assert_int_eq(cgroup_settings_copy(NULL, &s), -EINVAL);
        ck_assert_int_eq(cgroup_settings_copy(&c, NULL), -EINVAL);
}
END_TEST

START_TEST(test_cpu_quota_per_period) {
        /* 20% of a CPU: 200 ms per second, 20 ms per 100 ms */
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(200000, 100000), 20000);
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(200000, USEC_INFINITY), 20000); /* default period */
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(200000, 50000), 10000);
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(200000, USEC_PER_SEC), 200000);
        /* more than one CPU */
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(2 * USEC_PER_SEC, 100000), 200000);
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(1500000, 10000), 15000);
        /* rounding down, as systemd: 33.3333% */
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(333333, 100000), 33333);
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(19999, 100000), 1999);
        /* never below the kernel's 1 ms */
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(1000, 100000), 1000);
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(0, 100000), 1000);
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(9999, 100000), 1000);
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(10000, 100000), 1000);
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(10010, 100000), 1001);
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(200000, 1000), 1000); /* 200 µs → 1 ms */
        /* none stays none */
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(USEC_INFINITY, 100000), USEC_INFINITY);
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(USEC_INFINITY, USEC_INFINITY), USEC_INFINITY);
        /* no overflow: saturates below "none" */
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(USEC_INFINITY - 1, USEC_PER_SEC), USEC_INFINITY - 1);
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(UINT64_C(1) << 60, 500000), UINT64_C(1) << 59);
        ck_assert_uint_eq(cgroup_cpu_quota_per_period(USEC_INFINITY - 1, 100000), (USEC_INFINITY - 1) / 10);
}
END_TEST

START_TEST(test_cpu_max_format) {
        char *s = (char *) "untouched";

        ck_assert_int_eq(cgroup_cpu_max_format(USEC_INFINITY, USEC_INFINITY, &s), 0);
        ck_assert_str_eq(s, "max 100000");
        free(s);
        ck_assert_int_eq(cgroup_cpu_max_format(USEC_INFINITY, 250000, &s), 0);
        ck_assert_str_eq(s, "max 250000");
        free(s);
        ck_assert_int_eq(cgroup_cpu_max_format(200000, USEC_INFINITY, &s), 0);
        ck_assert_str_eq(s, "20000 100000");
        free(s);
        ck_assert_int_eq(cgroup_cpu_max_format(200000, 50000, &s), 0);
        ck_assert_str_eq(s, "10000 50000");
        free(s);
        ck_assert_int_eq(cgroup_cpu_max_format(1, 100000, &s), 0);
        ck_assert_str_eq(s, "1000 100000");
        free(s);
        ck_assert_int_eq(cgroup_cpu_max_format(4 * USEC_PER_SEC, USEC_PER_SEC, &s), 0);
        ck_assert_str_eq(s, "4000000 1000000");
        free(s);
        ck_assert_int_eq(cgroup_cpu_max_format(500000, 1000, &s), 0); /* the smallest period */
        ck_assert_str_eq(s, "1000 1000");
        free(s);

        /* periods the kernel refuses */
        s = (char *) "untouched";
        ck_assert_int_eq(cgroup_cpu_max_format(200000, 999, &s), -ERANGE);
        ck_assert_int_eq(cgroup_cpu_max_format(200000, 0, &s), -ERANGE);
        ck_assert_int_eq(cgroup_cpu_max_format(USEC_INFINITY, USEC_PER_SEC + 1, &s), -ERANGE);
        ck_assert_str_eq(s, "untouched");
        ck_assert_int_eq(cgroup_cpu_max_format(200000, 100000, NULL), -EINVAL);
}
END_TEST

START_TEST(test_cpu_max_parse) {
        usec_t q = 1, p = 1;

        ck_assert_int_eq(cgroup_cpu_max_parse("max 100000\n", &q, &p), 0);
        ck_assert_uint_eq(q, USEC_INFINITY);
        ck_assert_uint_eq(p, USEC_INFINITY); /* the default period reads as "default" */
        ck_assert_int_eq(cgroup_cpu_max_parse("max 100000", &q, &p), 0);
        ck_assert_uint_eq(q, USEC_INFINITY);
        ck_assert_int_eq(cgroup_cpu_max_parse("20000 100000\n", &q, &p), 0);
        ck_assert_uint_eq(q, 200000);
        ck_assert_uint_eq(p, USEC_INFINITY);
        ck_assert_int_eq(cgroup_cpu_max_parse("10000 50000\n", &q, &p), 0);
        ck_assert_uint_eq(q, 200000);
        ck_assert_uint_eq(p, 50000);
        ck_assert_int_eq(cgroup_cpu_max_parse("max 250000\n", &q, &p), 0);
        ck_assert_uint_eq(q, USEC_INFINITY);
        ck_assert_uint_eq(p, 250000);
        ck_assert_int_eq(cgroup_cpu_max_parse("150000 100000\n", &q, &p), 0);
        ck_assert_uint_eq(q, 1500000);
        /* rounding down on the way back */
        ck_assert_int_eq(cgroup_cpu_max_parse("33333 100000\n", &q, &p), 0);
        ck_assert_uint_eq(q, 333330);
        ck_assert_int_eq(cgroup_cpu_max_parse("1000 30000\n", &q, &p), 0);
        ck_assert_uint_eq(q, 33333);
        /* the kernel's bounds are accepted */
        ck_assert_int_eq(cgroup_cpu_max_parse("1000 1000\n", &q, &p), 0);
        ck_assert_uint_eq(q, USEC_PER_SEC);
        ck_assert_uint_eq(p, 1000);
        ck_assert_int_eq(cgroup_cpu_max_parse("1000 1000000\n", &q, &p), 0);
        ck_assert_uint_eq(q, 1000);
        ck_assert_uint_eq(p, USEC_PER_SEC);
        /* a quota the kernel would refuse anyway cannot overflow here either */
        ck_assert_int_eq(cgroup_cpu_max_parse("18446744073709551614 1000\n", &q, &p), 0);
        ck_assert_uint_eq(q, USEC_INFINITY - 1);
        /* NULL outputs are fine */
        ck_assert_int_eq(cgroup_cpu_max_parse("20000 100000\n", NULL, NULL), 0);
}
END_TEST

START_TEST(test_cpu_max_parse_garbage) {
        static const char *const bad[] = {
                "",
                "\n",
                "max",
                "max\n",
                "20000",
                "max  100000",
                " max 100000",
                "max 100000 ",
                "max 100000 1",
                "max\t100000",
                "max 100000\n\n",
                "max 100000\nmax 100000\n",
                "MAX 100000",
                "maxi 100000",
                "max 0",
                "max 999",
                "max 1000001",
                "max -100000",
                "max +100000",
                "max 0x100",
                "max 100000x",
                "999 100000",
                "0 100000",
                "-1 100000",
                "20000.5 100000",
                "18446744073709551616 100000",
                "max 18446744073709551616",
                "20000 100000\r\n",
                "\xff 100000",
        };
        usec_t q = 42, p = 43;

        FOREACH_ELEMENT(b, bad) {
                ck_assert_msg(cgroup_cpu_max_parse(*b, &q, &p) == -EINVAL, "accepted '%s'", *b);
                ck_assert_uint_eq(q, 42);
                ck_assert_uint_eq(p, 43);
        }
        ck_assert_int_eq(cgroup_cpu_max_parse(NULL, &q, &p), -EINVAL);
}
END_TEST

START_TEST(test_cpu_max_round_trip) {
        static const usec_t periods[] = { 1000, 2000, 10000, 20000, 50000, 100000, 200000, 500000, 1000000 };

        /* Every whole percentage (up to 64 CPUs) at every period that divides a second evenly
         * enough survives format → parse unchanged. */
        FOREACH_ELEMENT(period, periods)
                for (usec_t pct = 1; pct <= 6400; pct++) {
                        _cleanup_free_ char *s = NULL;
                        usec_t q = pct * 10000, qq, pp;

                        /* below 1 ms per period the kernel's minimum wins */
                        if (q * *period / USEC_PER_SEC < 1000)
                                continue;
                        ck_assert_int_eq(cgroup_cpu_max_format(q, *period, &s), 0);
                        ck_assert_int_eq(cgroup_cpu_max_parse(s, &qq, &pp), 0);
                        ck_assert_msg(qq == q, "%" PRIu64 "%% at %" PRIu64 ": '%s' → %" PRIu64, pct,
                                      *period, s, qq);
                        ck_assert_uint_eq(pp, *period == 100000 ? USEC_INFINITY : *period);
                }
}
END_TEST

START_TEST(test_cpu_weight_shares) {
        ck_assert_uint_eq(cgroup_cpu_weight_to_shares(CGROUP_WEIGHT_UNSET), 1024);
        ck_assert_uint_eq(cgroup_cpu_weight_to_shares(100), 1024);
        ck_assert_uint_eq(cgroup_cpu_weight_to_shares(1), 10); /* 10.24, rounded down */
        ck_assert_uint_eq(cgroup_cpu_weight_to_shares(50), 512);
        ck_assert_uint_eq(cgroup_cpu_weight_to_shares(333), 3409);
        ck_assert_uint_eq(cgroup_cpu_weight_to_shares(10000), 102400);
        /* clamped to the kernel's 2..262144 */
        ck_assert_uint_eq(cgroup_cpu_weight_to_shares(0), 2);
        ck_assert_uint_eq(cgroup_cpu_weight_to_shares(25600), 262144);
        ck_assert_uint_eq(cgroup_cpu_weight_to_shares(30000), 262144);
        ck_assert_uint_eq(cgroup_cpu_weight_to_shares(UINT64_MAX - 1), 262144); /* no overflow */

        ck_assert_uint_eq(cgroup_cpu_shares_to_weight(1024), 100);
        ck_assert_uint_eq(cgroup_cpu_shares_to_weight(10), 1);
        ck_assert_uint_eq(cgroup_cpu_shares_to_weight(512), 50);
        ck_assert_uint_eq(cgroup_cpu_shares_to_weight(102400), 10000);
        ck_assert_uint_eq(cgroup_cpu_shares_to_weight(1025), 101); /* rounded up */
        ck_assert_uint_eq(cgroup_cpu_shares_to_weight(2), 1);
        ck_assert_uint_eq(cgroup_cpu_shares_to_weight(0), 1);
        ck_assert_uint_eq(cgroup_cpu_shares_to_weight(262144), 10000);
        ck_assert_uint_eq(cgroup_cpu_shares_to_weight(UINT64_MAX), 10000);

        for (uint64_t w = CGROUP_WEIGHT_MIN; w <= CGROUP_WEIGHT_MAX; w++)
                ck_assert_uint_eq(cgroup_cpu_shares_to_weight(cgroup_cpu_weight_to_shares(w)), w);
}
END_TEST

START_TEST(test_io_weight_blkio) {
        ck_assert_uint_eq(cgroup_io_weight_to_blkio(CGROUP_WEIGHT_UNSET), 500);
        ck_assert_uint_eq(cgroup_io_weight_to_blkio(100), 500);
        ck_assert_uint_eq(cgroup_io_weight_to_blkio(3), 15);
        ck_assert_uint_eq(cgroup_io_weight_to_blkio(150), 750);
        ck_assert_uint_eq(cgroup_io_weight_to_blkio(200), 1000);
        /* clamped to the kernel's 10..1000 */
        ck_assert_uint_eq(cgroup_io_weight_to_blkio(1), 10);
        ck_assert_uint_eq(cgroup_io_weight_to_blkio(0), 10);
        ck_assert_uint_eq(cgroup_io_weight_to_blkio(201), 1000);
        ck_assert_uint_eq(cgroup_io_weight_to_blkio(10000), 1000);
        ck_assert_uint_eq(cgroup_io_weight_to_blkio(UINT64_MAX - 1), 1000);

        ck_assert_uint_eq(cgroup_blkio_to_io_weight(500), 100);
        ck_assert_uint_eq(cgroup_blkio_to_io_weight(10), 2);
        ck_assert_uint_eq(cgroup_blkio_to_io_weight(12), 3); /* 2.4, rounded up */
        ck_assert_uint_eq(cgroup_blkio_to_io_weight(1000), 200);
        ck_assert_uint_eq(cgroup_blkio_to_io_weight(0), 1);
        ck_assert_uint_eq(cgroup_blkio_to_io_weight(UINT64_MAX), 10000);

        for (uint64_t w = 2; w <= 200; w++)
                ck_assert_uint_eq(cgroup_blkio_to_io_weight(cgroup_io_weight_to_blkio(w)), w);
}
END_TEST

START_TEST(test_limit_parse) {
        static const char *const bad[] = {
                "", "\n", "-1", " 1", "1 ", "1\n\n", "\n1", "MAX", "Max", "maxx", "max ", "1k", "1M", "0x10",
                "+1", "1.0", "18446744073709551616", "99999999999999999999999", "in\nfinity", "max\nmax",
        };
        uint64_t v = 42;

        ck_assert_int_eq(cgroup_limit_parse("max\n", &v), 0);
        ck_assert_uint_eq(v, CGROUP_LIMIT_MAX);
        ck_assert_int_eq(cgroup_limit_parse("max", &v), 0);
        ck_assert_uint_eq(v, CGROUP_LIMIT_MAX);
        ck_assert_int_eq(cgroup_limit_parse("0\n", &v), 0);
        ck_assert_uint_eq(v, 0);
        ck_assert_int_eq(cgroup_limit_parse("268435456\n", &v), 0);
        ck_assert_uint_eq(v, 268435456);
        ck_assert_int_eq(cgroup_limit_parse("18446744073709551614", &v), 0);
        ck_assert_uint_eq(v, UINT64_MAX - 1);
        ck_assert_int_eq(cgroup_limit_parse("18446744073709551615", &v), 0);
        ck_assert_uint_eq(v, CGROUP_LIMIT_MAX);
        ck_assert_int_eq(cgroup_limit_parse("5", NULL), 0);

        v = 42;
        FOREACH_ELEMENT(b, bad) {
                ck_assert_msg(cgroup_limit_parse(*b, &v) == -EINVAL, "accepted '%s'", *b);
                ck_assert_uint_eq(v, 42);
        }
        ck_assert_int_eq(cgroup_limit_parse(NULL, &v), -EINVAL);
}
END_TEST

START_TEST(test_limit_format) {
        char buf[21], small[4];

        ck_assert_str_eq(cgroup_limit_format(CGROUP_LIMIT_MAX, buf, sizeof(buf)), "max");
        ck_assert_str_eq(cgroup_limit_format(0, buf, sizeof(buf)), "0");
        ck_assert_str_eq(cgroup_limit_format(268435456, buf, sizeof(buf)), "268435456");
        ck_assert_str_eq(cgroup_limit_format(UINT64_MAX - 1, buf, sizeof(buf)), "18446744073709551614");
        ck_assert_ptr_eq(cgroup_limit_format(1, buf, sizeof(buf)), buf);
        /* too small: NULL, never a truncated number */
        ck_assert_str_eq(cgroup_limit_format(CGROUP_LIMIT_MAX, small, sizeof(small)), "max");
        ck_assert_str_eq(cgroup_limit_format(999, small, sizeof(small)), "999");
        ck_assert_ptr_null(cgroup_limit_format(1000, small, sizeof(small)));
        ck_assert_ptr_null(cgroup_limit_format(CGROUP_LIMIT_MAX, small, 3));
        ck_assert_ptr_null(cgroup_limit_format(UINT64_MAX - 1, buf, 20));
        ck_assert_ptr_null(cgroup_limit_format(1, buf, 0));
        ck_assert_ptr_null(cgroup_limit_format(1, NULL, 10));
}
END_TEST

START_TEST(test_io_max_format_line) {
        const uint64_t some[] = { 1000, CGROUP_LIMIT_MAX, 10, CGROUP_LIMIT_MAX };
        const uint64_t none[] = { CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX };
        const uint64_t all[] = { 1, 2, 3, UINT64_MAX - 1 };
        char *s = (char *) "untouched";

        ck_assert_int_eq(cgroup_io_max_format_line(makedev(8, 16), some, &s), 0);
        ck_assert_str_eq(s, "8:16 rbps=1000 wbps=max riops=10 wiops=max");
        free(s);
        ck_assert_int_eq(cgroup_io_max_format_line(makedev(254, 0), none, &s), 0);
        ck_assert_str_eq(s, "254:0 rbps=max wbps=max riops=max wiops=max");
        free(s);
        ck_assert_int_eq(cgroup_io_max_format_line(makedev(4095, 1048575), all, &s), 0);
        ck_assert_str_eq(s, "4095:1048575 rbps=1 wbps=2 riops=3 wiops=18446744073709551614");
        free(s);
        ck_assert_int_eq(cgroup_io_max_format_line(makedev(8, 0), NULL, &s), -EINVAL);
        ck_assert_int_eq(cgroup_io_max_format_line(makedev(8, 0), some, NULL), -EINVAL);
}
END_TEST

START_TEST(test_io_max_parse) {
        CGroupIODeviceLimit *l = NULL;
        size_t n = 42;

        ck_assert_int_eq(cgroup_io_max_parse("8:16 rbps=2097152 wbps=max riops=max wiops=120\n"
                                             "254:0 rbps=max wbps=5000000 riops=max wiops=max\n",
                                             &l, &n),
                         0);
        ck_assert_uint_eq(n, 2);
        ck_assert_uint_eq(l[0].devnum, makedev(8, 16));
        ck_assert_str_eq(l[0].path, "/dev/block/8:16");
        ck_assert_uint_eq(l[0].limit[CGROUP_IO_RBPS], 2097152);
        ck_assert_uint_eq(l[0].limit[CGROUP_IO_WBPS], CGROUP_LIMIT_MAX);
        ck_assert_uint_eq(l[0].limit[CGROUP_IO_RIOPS], CGROUP_LIMIT_MAX);
        ck_assert_uint_eq(l[0].limit[CGROUP_IO_WIOPS], 120);
        ck_assert_uint_eq(l[1].devnum, makedev(254, 0));
        ck_assert_str_eq(l[1].path, "/dev/block/254:0");
        ck_assert_uint_eq(l[1].limit[CGROUP_IO_WBPS], 5000000);
        cgroup_settings_done(&(CGroupSettings) { .io_limits = l, .n_io_limits = n });

        /* key order does not matter; keys a later kernel may add are skipped */
        ck_assert_int_eq(cgroup_io_max_parse("8:0 wiops=4 riops=3 wbps=2 rbps=1 future_key=x", &l, &n), 0);
        ck_assert_uint_eq(n, 1);
        ck_assert_uint_eq(l[0].limit[CGROUP_IO_RBPS], 1);
        ck_assert_uint_eq(l[0].limit[CGROUP_IO_WBPS], 2);
        ck_assert_uint_eq(l[0].limit[CGROUP_IO_RIOPS], 3);
        ck_assert_uint_eq(l[0].limit[CGROUP_IO_WIOPS], 4);
        cgroup_settings_done(&(CGroupSettings) { .io_limits = l, .n_io_limits = n });

        /* an empty io.max: no limits */
        l = (CGroupIODeviceLimit *) 0x1;
        ck_assert_int_eq(cgroup_io_max_parse("", &l, &n), 0);
        ck_assert_ptr_null(l);
        ck_assert_uint_eq(n, 0);
}
END_TEST

START_TEST(test_io_max_parse_garbage) {
        static const char *const bad[] = {
                "8:0",
                "8:0 rbps=1 wbps=2 riops=3",                             /* one missing */
                "8:0 rbps=1 rbps=2 wbps=max riops=max wiops=max",        /* twice */
                "8:0 rbps=x wbps=max riops=max wiops=max",
                "8:0 rbps= wbps=max riops=max wiops=max",
                "8:0 rbps=-1 wbps=max riops=max wiops=max",
                "8:0 rbps=1k wbps=max riops=max wiops=max",
                "8:0 rbps=18446744073709551616 wbps=max riops=max wiops=max",
                "8:0 rbps wbps=max riops=max wiops=max",
                "8:0 =1 rbps=1 wbps=max riops=max wiops=max",
                "8:0 RBPS=1 rbps=1 wbps=max riops=max wiops=max",
                "8 rbps=1 wbps=max riops=max wiops=max",
                "8:0:1 rbps=1 wbps=max riops=max wiops=max",
                "-8:0 rbps=1 wbps=max riops=max wiops=max",
                "8:-0 rbps=1 wbps=max riops=max wiops=max",
                "4096:0 rbps=1 wbps=max riops=max wiops=max",  /* beyond the kernel's 12-bit major */
                "8:1048576 rbps=1 wbps=max riops=max wiops=max", /* and 20-bit minor */
                ":0 rbps=1 wbps=max riops=max wiops=max",
                "rbps=1 wbps=max riops=max wiops=max",
                "8:0 rbps=1 wbps=max riops=max wiops=max\n8:0 rbps=2 wbps=max riops=max wiops=max",
                "8:0 rbps=1 wbps=max riops=max wiops=max\ngarbage",
                "8:0\trbps=1 wbps=max riops=max wiops=max",
        };
        CGroupIODeviceLimit *l = (CGroupIODeviceLimit *) 0x1;
        size_t n = 42;

        FOREACH_ELEMENT(b, bad) {
                ck_assert_msg(cgroup_io_max_parse(*b, &l, &n) == -EINVAL, "accepted '%s'", *b);
                ck_assert_ptr_eq(l, (CGroupIODeviceLimit *) 0x1);
                ck_assert_uint_eq(n, 42);
        }
        ck_assert_int_eq(cgroup_io_max_parse(NULL, &l, &n), -EINVAL);
}
END_TEST

static int throttle_parse(CGroupSettings *s, const char *text, int type) {
        return cgroup_blkio_throttle_parse(text, type, &s->io_limits, &s->n_io_limits);
}

START_TEST(test_blkio_throttle_parse) {
        _cleanup_(cgroup_settings_done) CGroupSettings s = CGROUP_SETTINGS_INIT;
        CGroupIODeviceLimit *e;

        ck_assert_int_eq(throttle_parse(&s, "8:0 1000\n8:16 2000\n", CGROUP_IO_RBPS), 0);
        ck_assert_uint_eq(s.n_io_limits, 2);
        ck_assert_str_eq(s.io_limits[0].path, "/dev/block/8:0");
        ck_assert_uint_eq(s.io_limits[0].limit[CGROUP_IO_RBPS], 1000);
        ck_assert_uint_eq(s.io_limits[0].limit[CGROUP_IO_WBPS], CGROUP_LIMIT_MAX);
        ck_assert_uint_eq(s.io_limits[0].limit[CGROUP_IO_RIOPS], CGROUP_LIMIT_MAX);
        ck_assert_uint_eq(s.io_limits[0].limit[CGROUP_IO_WIOPS], CGROUP_LIMIT_MAX);

        /* merging: a known device gets another type, a new one is appended */
        ck_assert_int_eq(throttle_parse(&s, "8:16 3000\n254:0 5000000\n", CGROUP_IO_WBPS), 0);
        ck_assert_uint_eq(s.n_io_limits, 3);
        e = cgroup_settings_find_io_limit(&s, makedev(8, 16));
        ck_assert_ptr_nonnull(e);
        ck_assert_uint_eq(e->limit[CGROUP_IO_RBPS], 2000);
        ck_assert_uint_eq(e->limit[CGROUP_IO_WBPS], 3000);
        e = cgroup_settings_find_io_limit(&s, makedev(254, 0));
        ck_assert_ptr_nonnull(e);
        ck_assert_str_eq(e->path, "/dev/block/254:0");
        ck_assert_uint_eq(e->limit[CGROUP_IO_RBPS], CGROUP_LIMIT_MAX);
        ck_assert_uint_eq(e->limit[CGROUP_IO_WBPS], 5000000);

        ck_assert_int_eq(throttle_parse(&s, "254:0 100\n", CGROUP_IO_RIOPS), 0);
        ck_assert_int_eq(throttle_parse(&s, "254:0 200", CGROUP_IO_WIOPS), 0);
        ck_assert_int_eq(throttle_parse(&s, "", CGROUP_IO_WIOPS), 0);
        ck_assert_uint_eq(s.n_io_limits, 3);
        e = cgroup_settings_find_io_limit(&s, makedev(254, 0));
        ck_assert_uint_eq(e->limit[CGROUP_IO_RIOPS], 100);
        ck_assert_uint_eq(e->limit[CGROUP_IO_WIOPS], 200);
        /* an existing value of the same type is replaced */
        ck_assert_int_eq(throttle_parse(&s, "8:0 7\n", CGROUP_IO_RBPS), 0);
        ck_assert_uint_eq(s.io_limits[0].limit[CGROUP_IO_RBPS], 7);
        ck_assert_uint_eq(s.n_io_limits, 3);
}
END_TEST

START_TEST(test_blkio_throttle_parse_garbage) {
        static const char *const bad[] = {
                "8:0 0", /* writing 0 removes a limit: the kernel never shows one */
                "8:0",
                "8:0 1 2",
                "8:0 -1",
                "8:0 max",
                "8:0 1k",
                "8:0 18446744073709551616",
                "8 1",
                "4096:0 1",
                "x:0 1",
                "8:0\t1",
                "8:0 1\n8:0 2",
                "8:16 1\n8:0 x", /* the valid first line is not kept either */
        };
        _cleanup_(cgroup_settings_done) CGroupSettings s = CGROUP_SETTINGS_INIT;

        ck_assert_int_eq(throttle_parse(&s, "8:0 1000\n", CGROUP_IO_RBPS), 0);
        FOREACH_ELEMENT(b, bad) {
                ck_assert_msg(throttle_parse(&s, *b, CGROUP_IO_RBPS) == -EINVAL, "accepted '%s'", *b);
                /* a failure leaves the list as it was */
                ck_assert_uint_eq(s.n_io_limits, 1);
                ck_assert_uint_eq(s.io_limits[0].limit[CGROUP_IO_RBPS], 1000);
        }
        ck_assert_int_eq(throttle_parse(&s, "8:0 1", -1), -EINVAL);
        ck_assert_int_eq(throttle_parse(&s, "8:0 1", _CGROUP_IO_LIMIT_TYPE_MAX), -EINVAL);
        ck_assert_int_eq(throttle_parse(&s, NULL, CGROUP_IO_RBPS), -EINVAL);
        ck_assert_uint_eq(s.io_limits[0].limit[CGROUP_IO_RBPS], 1000);
}
END_TEST

START_TEST(test_cpu_stat_parse) {
        static const char *const bad[] = {
                "",
                "user_usec 1\n",                        /* no usage_usec */
                "usage_usec 1\nusage_usec 2\n",
                "usage_usec x\n",
                "usage_usec\n",
                "usage_usec 1 2\n",
                "usage_usec -1\n",
                "usage_usec 18446744073709551616\n",
                "usage_usec 1\nuser_usec\n",           /* a broken line anywhere */
                "usage_usec 1\nUser 2\n",
                "usage_usec\t1\n",
                "usage_usec 1.5\n",
        };
        usec_t u = 42;

        ck_assert_int_eq(cgroup_cpu_stat_parse("usage_usec 123456\n"
                                                     "user_usec 100000\n"
                                                     "system_usec 23456\n"
                                                     "core_sched.force_idle_usec 0\n"
                                                     "nr_periods 10\n"
                                                     "nr_throttled 3\n"
                                                     "throttled_usec 5000\n"
                                                     "nr_bursts 0\n"
                                                     "burst_usec 0\n",
                                               "usage_usec", &u),
                         0);
        ck_assert_uint_eq(u, 123456);
        ck_assert_int_eq(cgroup_cpu_stat_parse("user_usec 1\nusage_usec 18446744073709551615", "usage_usec", &u), 0);
        ck_assert_uint_eq(u, UINT64_MAX);
        /* v1's cpu controller: the period count the borrowing enforcer locks onto */
        ck_assert_int_eq(cgroup_cpu_stat_parse("nr_periods 7\nnr_throttled 2\nthrottled_time 1234\n", "nr_periods", &u),
                         0);
        ck_assert_uint_eq(u, 7);
        ck_assert_int_eq(cgroup_cpu_stat_parse("nr_periods 7\n", "nr_throttled", &u), -EINVAL);
        ck_assert_uint_eq(u, 7);

        u = 42;
        FOREACH_ELEMENT(b, bad) {
                ck_assert_msg(cgroup_cpu_stat_parse(*b, "usage_usec", &u) == -EINVAL, "accepted '%s'", *b);
                ck_assert_uint_eq(u, 42);
        }
}
END_TEST

START_TEST(test_io_stat_parse) {
        static const char *const bad[] = {
                "8:16 rbytes=x wbytes=1\n",
                "8:16 rbytes=-1\n",
                "8:16 rbytes=1 rbytes=2\n",
                "8:16 wbytes=1 wbytes=2\n",
                "8:16 rbytes\n",
                "8:16 =5\n",
                "rbytes=1 wbytes=2\n",
                "8:16\n8 rbytes=1\n",
                "8:0 rbytes=18446744073709551615\n8:1 rbytes=1\n", /* the sum overflows */
                "8:0 wbytes=18446744073709551615\n8:1 wbytes=1\n",
                "8:0 rbytes=18446744073709551616\n",
        };
        uint64_t rb = 42, wb = 43;

        ck_assert_int_eq(cgroup_io_stat_parse("8:16 rbytes=1459200 wbytes=314773504 rios=192 wios=353 "
                                              "dbytes=0 dios=0\n"
                                              "254:0 rbytes=100 wbytes=200 rios=1 wios=2 dbytes=0 dios=0 "
                                              "cost.vrate=135.97 cost.usage=33 cost.wait=0\n",
                                              &rb, &wb),
                         0);
        ck_assert_uint_eq(rb, 1459300);
        ck_assert_uint_eq(wb, 314773704);
        ck_assert_int_eq(cgroup_io_stat_parse("", &rb, &wb), 0);
        ck_assert_uint_eq(rb, 0);
        ck_assert_uint_eq(wb, 0);
        /* a device line with nothing to count yet */
        ck_assert_int_eq(cgroup_io_stat_parse("8:0\n8:16 wbytes=5\n", &rb, &wb), 0);
        ck_assert_uint_eq(rb, 0);
        ck_assert_uint_eq(wb, 5);
        ck_assert_int_eq(cgroup_io_stat_parse("8:0 rbytes=1", NULL, NULL), 0);

        rb = 42;
        wb = 43;
        FOREACH_ELEMENT(b, bad) {
                ck_assert_msg(cgroup_io_stat_parse(*b, &rb, &wb) == -EINVAL, "accepted '%s'", *b);
                ck_assert_uint_eq(rb, 42);
                ck_assert_uint_eq(wb, 43);
        }
}
END_TEST

START_TEST(test_blkio_bytes_parse) {
        static const char *const bad[] = {
                "254:0 Read x\n",
                "254:0 read 5\n",
                "254:0 Read 5 6\n",
                "254:0 Read\n",
                "254:0 Re4d 5\n",
                "254 Read 5\n",
                "Total\n",
                "Total x\n",
                "Total 1 2\n",
                "garbage\n",
                "254:0 Read 18446744073709551615\n8:0 Read 1\n",
                "254:0 Write 18446744073709551616\n",
        };
        uint64_t rb = 42, wb = 43;

        ck_assert_int_eq(cgroup_blkio_bytes_parse("254:0 Read 4096\n"
                                                  "254:0 Write 8192\n"
                                                  "254:0 Sync 12288\n"
                                                  "254:0 Async 0\n"
                                                  "254:0 Discard 0\n"
                                                  "254:0 Total 12288\n"
                                                  "8:0 Read 1\n"
                                                  "8:0 Write 2\n"
                                                  "8:0 Sync 3\n"
                                                  "8:0 Async 0\n"
                                                  "8:0 Discard 0\n"
                                                  "8:0 Total 3\n"
                                                  "Total 12291\n",
                                                  &rb, &wb),
                         0);
        ck_assert_uint_eq(rb, 4097);
        ck_assert_uint_eq(wb, 8194);
        ck_assert_int_eq(cgroup_blkio_bytes_parse("Total 0\n", &rb, &wb), 0);
        ck_assert_uint_eq(rb, 0);
        ck_assert_uint_eq(wb, 0);

        rb = 42;
        wb = 43;
        FOREACH_ELEMENT(b, bad) {
                ck_assert_msg(cgroup_blkio_bytes_parse(*b, &rb, &wb) == -EINVAL, "accepted '%s'", *b);
                ck_assert_uint_eq(rb, 42);
                ck_assert_uint_eq(wb, 43);
        }
}
END_TEST

/* Names that are interface files get a '_' on disk; the mapping is one-to-one and round-trips. */
START_TEST(test_name_escape) {
        static const char *const reserved[] = {
                "cpu.shares", "memory.stat", "pids.max", "cpuacct.usage", "memory.limit_in_bytes",
                "cgroup.procs", "cgroup.anything", "io.max", "blkio.weight", "cpuset.cpus", "hugetlb.2MB.max",
                "rdma.max", "misc.current", "irq.pressure", "net_cls.classid", "perf_event.x", "devices.list",
                "freezer.state", "tasks", "notify_on_release", "release_agent", "cpu.",
        };
        static const char *const plain[] = {
                "web", "a", "_web", "__web", "_", "cpu", "memory", "web.memory.stat", "cpux.shares", "Cpu.shares",
                "tasks2", "my-tasks", "io", "x.cpu.max", "cpu@1", "cpu:max",
        };
        char *e = NULL, *u = NULL;

        FOREACH_ELEMENT(n, reserved) {
                _cleanup_free_ char *under = strjoin("_", *n), *twice = strjoin("__", *n);

                ck_assert_msg(cgroup_name_needs_escape(*n), "'%s' not escaped", *n);
                ck_assert_int_eq(cgroup_name_escape(*n, &e), 0);
                ck_assert_str_eq(e, under);
                ck_assert_int_eq(cgroup_name_unescape(e, &u), 0);
                ck_assert_str_eq(u, *n);
                e = mfree(e);
                u = mfree(u);
                /* "_memory.stat" as a name must not be mistaken for the escaped "memory.stat" */
                ck_assert(cgroup_name_needs_escape(under));
                ck_assert_int_eq(cgroup_name_escape(under, &e), 0);
                ck_assert_str_eq(e, twice);
                ck_assert_int_eq(cgroup_name_unescape(e, &u), 0);
                ck_assert_str_eq(u, under);
                e = mfree(e);
                u = mfree(u);
                /* a directory with a reserved name is none tonari makes */
                ck_assert_int_eq(cgroup_name_unescape(*n, &u), -EINVAL);
                ck_assert_ptr_null(u);
        }
        FOREACH_ELEMENT(n, plain) {
                ck_assert_msg(!cgroup_name_needs_escape(*n), "'%s' escaped", *n);
                ck_assert_int_eq(cgroup_name_escape(*n, &e), 0);
                ck_assert_str_eq(e, *n);
                ck_assert_int_eq(cgroup_name_unescape(*n, &u), 0);
                ck_assert_str_eq(u, *n);
                e = mfree(e);
                u = mfree(u);
        }
}
END_TEST

/* The helpers the conversion and usage parsers share, and the weight range both validators use. */
START_TEST(test_weight_is_valid) {
        ck_assert(cgroup_weight_is_valid(CGROUP_WEIGHT_UNSET));
        ck_assert(cgroup_weight_is_valid(CGROUP_WEIGHT_MIN));
        ck_assert(cgroup_weight_is_valid(CGROUP_WEIGHT_DEFAULT));
        ck_assert(cgroup_weight_is_valid(CGROUP_WEIGHT_MAX));
        ck_assert(!cgroup_weight_is_valid(0));
        ck_assert(!cgroup_weight_is_valid(CGROUP_WEIGHT_MAX + 1));
        ck_assert(!cgroup_weight_is_valid(UINT64_MAX - 1));
}
END_TEST

START_TEST(test_io_limit_is_none) {
        CGroupIODeviceLimit l = io_limit(8, 0, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX,
                                         CGROUP_LIMIT_MAX);

        ck_assert(cgroup_io_limit_is_none(&l));
        for (size_t t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++) {
                l.limit[t] = 1;
                ck_assert(!cgroup_io_limit_is_none(&l));
                l.limit[t] = CGROUP_LIMIT_MAX;
        }
        free(l.path);
}
END_TEST

START_TEST(test_blkio_throttle_file) {
        ck_assert_str_eq(cgroup_blkio_throttle_file(CGROUP_IO_RBPS), "blkio.throttle.read_bps_device");
        ck_assert_str_eq(cgroup_blkio_throttle_file(CGROUP_IO_WBPS), "blkio.throttle.write_bps_device");
        ck_assert_str_eq(cgroup_blkio_throttle_file(CGROUP_IO_RIOPS), "blkio.throttle.read_iops_device");
        ck_assert_str_eq(cgroup_blkio_throttle_file(CGROUP_IO_WIOPS), "blkio.throttle.write_iops_device");
        ck_assert_ptr_null(cgroup_blkio_throttle_file(_CGROUP_IO_LIMIT_TYPE_MAX));
}
END_TEST

START_TEST(test_tokens) {
        dev_t d = makedev(1, 1);

        ck_assert_int_eq(cgroup_devnum_parse("8:16", &d), 0);
        ck_assert_uint_eq(major(d), 8);
        ck_assert_uint_eq(minor(d), 16);
        ck_assert_int_eq(cgroup_devnum_parse("4095:1048575", &d), 0);
        ck_assert_uint_eq(major(d), 4095);
        ck_assert_uint_eq(minor(d), 1048575);
        FOREACH_ELEMENT(b, ((const char *const[]) { "", "8", "8:", ":16", "4096:0", "0:1048576", "8:16x", "-8:1",
                                                   "8 :16" })) {
                d = makedev(1, 1);
                ck_assert_msg(cgroup_devnum_parse(*b, &d) == -EINVAL, "accepted '%s'", *b);
                ck_assert_uint_eq(d, makedev(1, 1));
        }

        ck_assert(cgroup_key_is_valid("rbytes", 6));
        ck_assert(cgroup_key_is_valid("cost.vrate", 10));
        ck_assert(cgroup_key_is_valid("nr_periods=5", 10)); /* only the first n characters count */
        ck_assert(!cgroup_key_is_valid("", 0));
        ck_assert(!cgroup_key_is_valid("Read", 4));
        ck_assert(!cgroup_key_is_valid("a-b", 3));
}
END_TEST

static int count_line(char **f, void *userdata) {
        size_t *n = userdata;

        if (streq(f[0], "stop"))
                return -EBADMSG;
        *n += strv_length(f);
        return 0;
}

START_TEST(test_parse_lines) {
        size_t n = 0;

        ck_assert_int_eq(cgroup_parse_lines("a b\n\nc\td e\n", " ", count_line, &n), 0);
        ck_assert_uint_eq(n, 4); /* "a" "b", then "c\td" "e": empty lines skipped, only ' ' splits */
        n = 0;
        ck_assert_int_eq(cgroup_parse_lines("c\td e\n", " \t", count_line, &n), 0);
        ck_assert_uint_eq(n, 3);
        n = 0;
        ck_assert_int_eq(cgroup_parse_lines("a\nstop\nb c\n", " ", count_line, &n), -EBADMSG);
        ck_assert_uint_eq(n, 1); /* stopped at the failing line */
        n = 0;
        ck_assert_int_eq(cgroup_parse_lines("", " ", count_line, &n), 0);
        ck_assert_uint_eq(n, 0);
}
END_TEST

TEST_SUITE("cgroup-util", test_parse_proc_cgroups, test_detect_unified, test_detect_hybrid,
           test_detect_legacy_and_none, test_detect_garbage, test_settings_done_copy_find,
           test_settings_copy_sparse, test_cpu_quota_per_period, test_cpu_max_format, test_cpu_max_parse,
           test_cpu_max_parse_garbage, test_cpu_max_round_trip, test_cpu_weight_shares, test_io_weight_blkio,
           test_limit_parse, test_limit_format, test_io_max_format_line, test_io_max_parse,
           test_io_max_parse_garbage, test_blkio_throttle_parse, test_blkio_throttle_parse_garbage,
           test_cpu_stat_parse, test_io_stat_parse, test_blkio_bytes_parse, test_name_escape, test_weight_is_valid,
           test_io_limit_is_none, test_blkio_throttle_file, test_tokens, test_parse_lines)
