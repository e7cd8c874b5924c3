/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "alloc-util.h"
#include "macro.h"
#include "string-util.h"
#include "slice-util.h"
#include "strv.h"
#include "tests.h"

START_TEST(test_unit_names) {
        static const struct {
                const char *name, *unit;
        } cases[] = {
                { "web", "tonari-web.slice" },
                { "db.primary", "tonari-db.primary.slice" },
                { "a-b", "tonari-a\\x2db.slice" },        /* '-' would nest the slice */
                { "user@1000", "tonari-user\\x401000.slice" }, /* '@' marks templates */
                { "t:1_x", "tonari-t:1_x.slice" },
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                _cleanup_free_ char *u = NULL, *back = NULL;
                ck_assert_int_eq(slice_unit_name(cases[i].name, ".slice", &u), 0);
                ck_assert_str_eq(u, cases[i].unit);
                ck_assert_int_eq(slice_name_from_unit(u, ".slice", &back), 0);
                ck_assert_str_eq(back, cases[i].name);
        }

        _cleanup_free_ char *scope = NULL;
        ck_assert_int_eq(slice_unit_name("web", ".scope", &scope), 0);
        ck_assert_str_eq(scope, "tonari-web.scope");

        /* Not ours, or not canonical, or hostile. */
        const char *bad_units[] = { "tonari.slice",       "tonari-.slice",       "system.slice",
                                    "tonari-a-b.slice",   "tonari-a\\x5fb.slice", "tonari-a\\x2.slice",
                                    "tonari-a\\xzz.slice", "tonari-..slice",      "tonari-\\x2e\\x2e.slice",
                                    "tonari-web.scope",   "tonari-\\x2dx.slice" };
        for (size_t i = 0; i < sizeof(bad_units) / sizeof(bad_units[0]); i++) {
                _cleanup_free_ char *n = NULL;
                ck_assert_msg(slice_name_from_unit(bad_units[i], ".slice", &n) == -EINVAL, "'%s' accepted", bad_units[i]);
        }

        const char *bad_names[] = { "", ".", "..", "../x", "a/b", "-x", ".x", "a b", "a\n", "naïve" };
        for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
                _cleanup_free_ char *u = NULL;
                ck_assert_msg(slice_unit_name(bad_names[i], ".slice", &u) == -EINVAL, "'%s' accepted", bad_names[i]);
        }
}
END_TEST

static int validate(const CGroupSettings *s, CGroupSettingMask mask, char **err) {
        static const uint8_t cpus[] = { 0x03 }, nodes[] = { 0x03 }; /* CPUs 0-1, nodes 0-1 online */
        return slice_settings_validate(s, mask, 4096, cpus, sizeof(cpus), nodes, sizeof(nodes), err);
}

START_TEST(test_validate) {
        CGroupSettings s = CGROUP_SETTINGS_INIT;
        char *err = NULL;

        ck_assert_int_eq(validate(&s, _CGROUP_MASK_ALL, &err), 0);

        s.cpu_weight = 0;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_CPU_WEIGHT, &err), -ERANGE);
        ck_assert_str_eq(err, "Invalid CPUWeight 0: expected 1-10000.");
        err = mfree(err);
        s.cpu_weight = 10000;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_CPU_WEIGHT, NULL), 0);
        s.cpu_weight = 10001;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_CPU_WEIGHT, NULL), -ERANGE);
        ck_assert_int_eq(validate(&s, CGROUP_MASK_IO_WEIGHT, NULL), 0); /* not in mask: not checked */

        /* 10 ms per second = 1 ms per 100 ms period: the kernel's minimum. */
        s = CGROUP_SETTINGS_INIT;
        s.cpu_quota_per_sec_usec = 10000;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_CPU_QUOTA, NULL), 0);
        s.cpu_quota_per_sec_usec = 9999;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_CPU_QUOTA, &err), -ERANGE);
        ck_assert_str_eq(err, "Invalid CPUQuotaPerSecUSec 9999: 999 us per period of 100000 us is below the kernel's "
                              "minimum of 1ms.");
        err = mfree(err);
        s.cpu_quota_per_sec_usec = 0;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_CPU_QUOTA, NULL), -ERANGE);
        /* With a 1 s period, 1 ms per second is enough. */
        s.cpu_quota_per_sec_usec = 1000;
        s.cpu_quota_period_usec = USEC_PER_SEC;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_CPU_QUOTA, NULL), 0);
        s.cpu_quota_period_usec = USEC_PER_SEC + 1;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_CPU_QUOTA, NULL), -ERANGE);
        s.cpu_quota_period_usec = 999;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_CPU_QUOTA, NULL), -ERANGE);
        s.cpu_quota_per_sec_usec = UINT64_MAX; /* huge quotas do not overflow the check */
        s.cpu_quota_period_usec = USEC_PER_SEC;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_CPU_QUOTA, NULL), 0);

        /* Memory limits: at least one page, what the kernel can hold (it stores 1..4095 as 0). */
        s = CGROUP_SETTINGS_INIT;
        s.memory_max = 0;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_MEMORY_MAX, NULL), -ERANGE);
        FOREACH_ELEMENT(v, ((const uint64_t[]) { 1, 4095 })) {
                s.memory_max = *v;
                ck_assert_int_eq(validate(&s, CGROUP_MASK_MEMORY_MAX, &err), -ERANGE);
                ck_assert_msg(strstr(err, "below one page (4096 bytes)"), "%s", err);
                err = mfree(err);
                s.memory_high = *v;
                ck_assert_int_eq(validate(&s, CGROUP_MASK_MEMORY_HIGH, &err), -ERANGE);
                ck_assert_msg(startswith(err, "Invalid MemoryHigh "), "%s", err);
                err = mfree(err);
        }
        s.memory_max = s.memory_high = 4096;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_MEMORY_MAX | CGROUP_MASK_MEMORY_HIGH, NULL), 0);
        s.memory_max = s.memory_high = 4097; /* accepted, and rounded (below) */
        ck_assert_int_eq(validate(&s, CGROUP_MASK_MEMORY_MAX | CGROUP_MASK_MEMORY_HIGH, NULL), 0);
        s.memory_max = s.memory_high = CGROUP_LIMIT_MAX;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_MEMORY_MAX | CGROUP_MASK_MEMORY_HIGH, NULL), 0);
        /* other page sizes */
        s.memory_max = 16383;
        ck_assert_int_eq(slice_settings_validate(&s, CGROUP_MASK_MEMORY_MAX, 16384, NULL, 0, NULL, 0, NULL), -ERANGE);
        s.memory_max = 16384;
        ck_assert_int_eq(slice_settings_validate(&s, CGROUP_MASK_MEMORY_MAX, 16384, NULL, 0, NULL, 0, NULL), 0);

        /* IOPS limits: the kernel keeps 32 bits */
        CGroupIODeviceLimit l = { .path = (char *) "/dev/vda", .devnum = 0xfe00,
                                  .limit = { CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX, UINT32_MAX, CGROUP_LIMIT_MAX } };
        s = CGROUP_SETTINGS_INIT;
        s.io_limits = &l;
        s.n_io_limits = 1;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_IO_LIMITS, &err), -ERANGE);
        ck_assert_str_eq(err, "Invalid IOReadIOPSMax 4294967295 for '/dev/vda': the kernel holds at most 4294967294, "
                              "or UINT64_MAX for none.");
        err = mfree(err);
        l.limit[CGROUP_IO_RIOPS] = UINT32_MAX - 1;
        l.limit[CGROUP_IO_WBPS] = UINT64_C(1) << 40; /* bandwidth: 64 bits */
        ck_assert_int_eq(validate(&s, CGROUP_MASK_IO_LIMITS, NULL), 0);
        l.limit[CGROUP_IO_WIOPS] = UINT64_C(1) << 32;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_IO_LIMITS, NULL), -ERANGE);

        /* Masks must stay within what is online. */
        uint8_t two[] = { 0x04 }, big[] = { 0, 0, 0x80 };
        s = CGROUP_SETTINGS_INIT;
        s.allowed_cpus = two;
        s.allowed_cpus_size = 1;
        ck_assert_int_eq(validate(&s, CGROUP_MASK_ALLOWED_CPUS, &err), -EINVAL);
        ck_assert_str_eq(err, "Invalid AllowedCPUs: CPU 2 is not online.");
        err = mfree(err);
        s.allowed_cpus = NULL;
        s.allowed_cpus_size = 0;
        s.allowed_mems = big;
        s.allowed_mems_size = sizeof(big);
        ck_assert_int_eq(validate(&s, CGROUP_MASK_ALLOWED_MEMS, &err), -EINVAL);
        ck_assert_str_eq(err, "Invalid AllowedMemoryNodes: NUMA node 23 is not online.");
        err = mfree(err);
        /* Unknown online sets: not checked here (the kernel still refuses). */
        ck_assert_int_eq(slice_settings_validate(&s, CGROUP_MASK_ALLOWED_MEMS, 4096, NULL, 0, NULL, 0, NULL), 0);
}
END_TEST

START_TEST(test_round) {
        CGroupSettings s = CGROUP_SETTINGS_INIT;

        s.memory_max = 1000000;
        s.memory_high = 8192;
        ck_assert_int_eq(slice_settings_round(&s, _CGROUP_MASK_ALL, 4096), CGROUP_MASK_MEMORY_MAX);
        ck_assert_uint_eq(s.memory_max, 999424);
        ck_assert_uint_eq(s.memory_high, 8192);
        s.memory_high = 12287;
        ck_assert_int_eq(slice_settings_round(&s, CGROUP_MASK_MEMORY_MAX, 4096), 0); /* only the mask */
        ck_assert_uint_eq(s.memory_high, 12287);
        ck_assert_int_eq(slice_settings_round(&s, CGROUP_MASK_MEMORY_HIGH, 4096), CGROUP_MASK_MEMORY_HIGH);
        ck_assert_uint_eq(s.memory_high, 8192);
        s.memory_max = CGROUP_LIMIT_MAX;
        ck_assert_int_eq(slice_settings_round(&s, _CGROUP_MASK_ALL, 4096), 0);
        ck_assert_uint_eq(s.memory_max, CGROUP_LIMIT_MAX);
}
END_TEST

/* What adoption does with values the API refuses: the nearest accepted ones, and a report. */
START_TEST(test_make_valid) {
        _cleanup_(cgroup_settings_done) CGroupSettings s = CGROUP_SETTINGS_INIT;
        const uint8_t cpus[] = { 0x03 }, nodes[] = { 0x01 };
        CGroupSettingMask changed = 42;
        char *report = NULL;

        /* valid: nothing changes */
        s.memory_max = 1 << 20;
        s.cpu_quota_per_sec_usec = 200000;
        ck_assert_int_eq(slice_settings_make_valid(&s, 4096, cpus, 1, nodes, 1, &changed, &report), 0);
        ck_assert_int_eq(changed, 0);
        ck_assert_str_eq(report, "");
        report = mfree(report);

        /* MemoryMax 0, as the v1 kernel stores 1..4095; a quota that rounds below 1 ms per period */
        s.memory_max = 0;
        s.memory_high = 1000000;
        s.cpu_quota_per_sec_usec = 3333;
        s.cpu_quota_period_usec = 300000;
        s.cpu_weight = 0;
        s.allowed_cpus = malloc(1);
        s.allowed_cpus[0] = 0x06;
        s.allowed_cpus_size = 1;
        s.io_limits = new0(CGroupIODeviceLimit, 1);
        s.io_limits[0] = (CGroupIODeviceLimit) { .path = strdup("/dev/vda"), .devnum = 0xfe00,
                                                 .limit = { 0, 5000000, UINT64_C(1) << 33, CGROUP_LIMIT_MAX } };
        s.n_io_limits = 1;
        ck_assert_int_eq(slice_settings_make_valid(&s, 4096, cpus, 1, nodes, 1, &changed, &report), 0);
        ck_assert_int_eq(changed, CGROUP_MASK_MEMORY_MAX | CGROUP_MASK_MEMORY_HIGH | CGROUP_MASK_CPU_QUOTA |
                                          CGROUP_MASK_CPU_WEIGHT | CGROUP_MASK_ALLOWED_CPUS | CGROUP_MASK_IO_LIMITS);
        ck_assert_uint_eq(s.memory_max, 4096);
        ck_assert_uint_eq(s.memory_high, 999424);
        ck_assert_uint_eq(s.cpu_quota_per_sec_usec, 3334);
        ck_assert_uint_eq(s.cpu_quota_period_usec, 300000);
        ck_assert_uint_eq(s.cpu_weight, 1);
        ck_assert_uint_eq(s.allowed_cpus[0], 0x02);
        ck_assert_uint_eq(s.io_limits[0].limit[CGROUP_IO_RBPS], CGROUP_LIMIT_MAX);
        ck_assert_uint_eq(s.io_limits[0].limit[CGROUP_IO_WBPS], 5000000);
        ck_assert_uint_eq(s.io_limits[0].limit[CGROUP_IO_RIOPS], UINT32_MAX - 1);
        ck_assert_msg(strstr(report, "Invalid MemoryMax 0: below one page"), "%s", report);
        ck_assert_msg(strstr(report, "MemoryHigh= not a whole number of pages (rounded down to 999424)"), "%s", report);
        ck_assert_msg(strstr(report, "CPU 2 is not online"), "%s", report);
        report = mfree(report);
        /* and now all of it is what the API accepts */
        ck_assert_int_eq(slice_settings_validate(&s, _CGROUP_MASK_ALL, 4096, cpus, 1, nodes, 1, NULL), 0);
        ck_assert_int_eq(slice_settings_make_valid(&s, 4096, cpus, 1, nodes, 1, &changed, &report), 0);
        ck_assert_int_eq(changed, 0);
        free(report);
}
END_TEST

START_TEST(test_mask_to_properties) {
        _cleanup_strv_free_ char **l = NULL, **e = NULL;
        _cleanup_free_ char *j = NULL;

        ck_assert_int_eq(slice_mask_to_properties(CGROUP_MASK_CPU_QUOTA | CGROUP_MASK_ALLOWED_MEMS, &l), 0);
        j = strv_join(l, " ");
        ck_assert_str_eq(j, "CPUQuotaPerSecUSec CPUQuotaPeriodUSec AllowedMemoryNodes");
        ck_assert_int_eq(slice_mask_to_properties(0, &e), 0);
        ck_assert_uint_eq(strv_length(e), 0);
}
END_TEST

TEST_SUITE("slice-util", test_unit_names, test_validate, test_round, test_make_valid, test_mask_to_properties)
