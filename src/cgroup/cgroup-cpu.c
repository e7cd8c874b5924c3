/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CFS bandwidth: the CPU time a cgroup may use per period (v2 cpu.max; v1 cpu.cfs_quota_us and
 * cpu.cfs_period_us, which the kernel checks write by write against the hierarchy), and the
 * number of periods the kernel has counted.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "alloc-util.h"
#include "cgroup-internal.h"

int cgroup_set_cpu_max(CGroupRoot *r, const char *path, usec_t quota_usec, usec_t period_usec) {
        char buf[64];

        assert_return(r, -EINVAL);
        if (period_usec < CGROUP_CPU_QUOTA_PERIOD_MIN_USEC || period_usec > CGROUP_CPU_QUOTA_PERIOD_MAX_USEC)
                return -ERANGE;
        if (quota_usec != USEC_INFINITY && (quota_usec < CGROUP_CPU_QUOTA_MIN_USEC || quota_usec > (usec_t) INT64_MAX))
                return -ERANGE;

        if (r->version == 1)
                return cgroup_v1_write_cpu_quota(r, path,
                                                 quota_usec == USEC_INFINITY ? -1 : (int64_t) quota_usec,
                                                 period_usec);
        if (quota_usec == USEC_INFINITY)
                (void) snprintf(buf, sizeof(buf), "max %" PRIu64, period_usec);
        else
                (void) snprintf(buf, sizeof(buf), "%" PRIu64 " %" PRIu64, quota_usec, period_usec);
        return cgroup_write_file(r, NULL, path, "cpu.max", buf);
}

int cgroup_read_cpu_periods(CGroupRoot *r, const char *path, uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        int k;

        assert_return(r, -EINVAL);
        assert_return(ret, -EINVAL);

        k = cgroup_read_file(r, "cpu", path, "cpu.stat", &text);
        if (k < 0)
                return k;
        return cgroup_cpu_stat_parse(text, "nr_periods", ret);
}

/* Whether q/p lies between q1/p1 and q2/p2 (inclusive); all positive. */
static bool ratio_between(uint64_t q, uint64_t p, uint64_t q1, uint64_t p1, uint64_t q2, uint64_t p2) {
        unsigned __int128 x1 = (unsigned __int128) q * p1, y1 = (unsigned __int128) q1 * p;
        unsigned __int128 x2 = (unsigned __int128) q * p2, y2 = (unsigned __int128) q2 * p;

        /* q/p ≥ q1/p1 ⇔ q·p1 ≥ q1·p */
        return (x1 >= y1 && x2 <= y2) || (x1 <= y1 && x2 >= y2);
}

/*
 * v1 keeps quota and period in two files, and the kernel checks every single write against the
 * hierarchy: a cgroup's quota/period ratio may not exceed its parent's, nor fall below any of its
 * children's (EINVAL). The kernel does not require quota ≤ period (that is how more than one CPU
 * is granted). So the state between the two writes must be valid too:
 *   - period unchanged: one write;
 *   - to "no quota" (-1): quota first, then the period — a cgroup without quota passes any check;
 *   - from "no quota": period first, then quota;
 *   - otherwise whichever order's intermediate ratio lies between the old and the new ratio (then
 *     it is as valid as they are); if neither does (e.g. 10000/100000 → 30000/200000 makes 30% or
 *     5% in between), through "no quota" for a moment: quota -1, period, quota.
 */
int cgroup_v1_write_cpu_quota(CGroupRoot *root, const char *path, int64_t quota, uint64_t period) {
        uint64_t cur_period;
        int64_t cur_quota;
        int k;

        k = cgroup_read_u64(root, "cpu", path, "cpu.cfs_period_us", &cur_period);
        if (k < 0)
                return k;
        k = cgroup_read_i64(root, "cpu", path, "cpu.cfs_quota_us", &cur_quota);
        if (k < 0)
                return k;

        if (cur_period != period) {
                bool period_first;

                if (quota < 0 || cur_quota <= 0 || cur_period == 0)
                        period_first = cur_quota <= 0;
                else if (ratio_between((uint64_t) quota, cur_period, (uint64_t) cur_quota, cur_period,
                                       (uint64_t) quota, period))
                        period_first = false;
                else if (ratio_between((uint64_t) cur_quota, period, (uint64_t) cur_quota, cur_period,
                                       (uint64_t) quota, period))
                        period_first = true;
                else {
                        k = cgroup_write_i64(root, "cpu", path, "cpu.cfs_quota_us", -1);
                        if (k < 0)
                                return k;
                        period_first = true;
                }

                if (!period_first) {
                        k = cgroup_write_i64(root, "cpu", path, "cpu.cfs_quota_us", quota);
                        if (k < 0)
                                return k;
                }
                k = cgroup_write_u64(root, "cpu", path, "cpu.cfs_period_us", period);
                if (k < 0 || !period_first)
                        return k;
        }
        return cgroup_write_i64(root, "cpu", path, "cpu.cfs_quota_us", quota);
}
