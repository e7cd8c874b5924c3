/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What a cgroup is and has now: its ID, the settings cgroup_apply() writes read back from the
 * kernel's files (for adoption after a restart), and its usage counters.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "cgroup-internal.h"
#include "parse-util.h"
#include "string-util.h"
#include "strv.h"

/* Largest CPU and memory node indexes any kernel accepts (NR_CPUS ≤ 8192, NODES_SHIFT ≤ 10). */
#define CPU_INDEX_MAX 8191U
#define NODE_INDEX_MAX 1023U

/* The v1 memory controller shows "no limit" as PAGE_COUNTER_MAX pages in bytes; every value from
 * 2^62 on is far beyond any real memory and is read as "no limit" as well. */
#define V1_MEMORY_UNLIMITED_MIN (UINT64_C(1) << 62)

int cgroup_read_cpu_usage(CGroupRoot *r, const char *path, usec_t *ret) {
        _cleanup_free_ char *text = NULL;
        uint64_t v;
        int k;

        assert_return(r, -EINVAL);
        assert_return(ret, -EINVAL);

        if (r->version == 2) {
                k = cgroup_read_file(r, NULL, path, "cpu.stat", &text);
                if (k < 0)
                        return k;
                return cgroup_cpu_stat_parse(text, "usage_usec", ret);
        }
        k = cgroup_read_u64(r, "cpuacct", path, "cpuacct.usage", &v);
        if (k < 0)
                return k;
        *ret = v / NSEC_PER_USEC; /* v1 counts nanoseconds */
        return 0;
}

int cgroup_get_id(CGroupRoot *r, const char *path, uint64_t *ret) {
        _cleanup_free_ char *p = NULL;
        struct stat st;
        int k;

        assert_return(r, -EINVAL);
        assert_return(ret, -EINVAL);

        k = cgroup_fs_path(r, cgroup_primary_hierarchy(r), path, NULL, &p);
        if (k < 0)
                return k;
        if (stat(p, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        *ret = (uint64_t) st.st_ino;
        return 0;
}

/* cgroup_read_settings() */

/* ENOENT: the controller is not enabled for the cgroup, its setting is the default. */
#define OPTIONAL(k) ((k) == -ENOENT ? 0 : (k))

/* 1 with the file's text, 0 if there is no such file (its controller is not enabled there). */
static int read_optional(CGroupRoot *r, const char *controller, const char *path, const char *file, char **ret) {
        int k = cgroup_read_file(r, controller, path, file, ret);

        if (k == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        return k < 0 ? k : 1;
}

static int read_cpuset_mask(CGroupRoot *r, const char *path, const char *file, unsigned max_index,
                            uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ uint8_t *mask = NULL, *parent_mask = NULL;
        _cleanup_free_ char *v = NULL, *parent = NULL, *pv = NULL;
        size_t size, parent_size;
        int k;

        k = cgroup_read_value(r, "cpuset", path, file, &v);
        if (k < 0)
                return k;
        if (parse_index_list(v, max_index, &mask, &size) < 0)
                return -EINVAL;

        if (r->version == 1 && path[0] != '\0') {
                /* v1 cannot say "unrestricted"; cgroup_apply() writes the parent's value for it. */
                parent = cgroup_path_parent(path);
                if (!parent)
                        return -ENOMEM;
                k = cgroup_read_value(r, "cpuset", parent, file, &pv);
                if (k < 0)
                        return k;
                if (parse_index_list(pv, max_index, &parent_mask, &parent_size) < 0)
                        return -EINVAL;
                if (size == parent_size && (size == 0 || memcmp(mask, parent_mask, size) == 0))
                        mask = mfree(mask);
        }

        if (!mask)
                size = 0;
        *ret = TAKE_PTR(mask);
        *ret_size = size;
        return 0;
}

/* v2 io.weight: "default N", then "MAJ:MIN N" for devices with their own (tonari sets none). */
static int io_weight_parse(const char *text, uint64_t *ret) {
        _cleanup_free_ char *line = strndup(text, strcspn(text, "\n"));
        const char *v;

        if (!line)
                return -ENOMEM;
        v = startswith(line, "default ");
        if (!v || safe_atou64(v, ret) < 0)
                return -EINVAL;
        return 0;
}

static uint64_t v1_memory_limit(uint64_t v) {
        long page = sysconf(_SC_PAGESIZE);

        if (v >= V1_MEMORY_UNLIMITED_MIN)
                return CGROUP_LIMIT_MAX;
        if (page > 0 && v == (uint64_t) (LONG_MAX / page) * (uint64_t) page)
                return CGROUP_LIMIT_MAX; /* 32-bit: PAGE_COUNTER_MAX is LONG_MAX pages */
        return v;
}

/* A "max"-or-number file (memory.max, memory.high); *ret is left as it is if there is no such file. */
static int read_optional_limit(CGroupRoot *r, const char *path, const char *file, uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        int k;

        k = read_optional(r, NULL, path, file, &text);
        return k > 0 ? cgroup_limit_parse(text, ret) : k;
}

/* A weight as CGroupSettings keeps it: the kernel's default is "not set". */
static uint64_t weight_unset_if_default(uint64_t w) {
        return w == CGROUP_WEIGHT_DEFAULT ? CGROUP_WEIGHT_UNSET : w;
}

/* v2 cpu.weight and io.weight hold systemd's weights as they are. */
static int weight_from_v2(uint64_t v, uint64_t *ret) {
        if (!cgroup_weight_is_valid(v) || v == CGROUP_WEIGHT_UNSET)
                return -EINVAL;
        *ret = weight_unset_if_default(v);
        return 0;
}

static int read_settings_v2(CGroupRoot *r, const char *path, CGroupSettings *t) {
        _cleanup_free_ char *text = NULL;
        uint64_t v;
        int k;

        k = cgroup_read_u64(r, NULL, path, "cpu.weight", &v);
        if (k >= 0)
                k = weight_from_v2(v, &t->cpu_weight);
        if (OPTIONAL(k) < 0)
                return k;

        k = read_optional(r, NULL, path, "cpu.max", &text);
        if (k > 0)
                k = cgroup_cpu_max_parse(text, &t->cpu_quota_per_sec_usec, &t->cpu_quota_period_usec);
        if (k < 0)
                return k;
        text = mfree(text);

        k = cgroup_read_file(r, NULL, path, "io.weight", &text);
        if (k >= 0)
                k = io_weight_parse(text, &v);
        if (k >= 0)
                k = weight_from_v2(v, &t->io_weight);
        if (OPTIONAL(k) < 0)
                return k;
        text = mfree(text);

        k = read_optional(r, NULL, path, "io.max", &text);
        if (k > 0)
                k = cgroup_io_max_parse(text, &t->io_limits, &t->n_io_limits);
        if (k < 0)
                return k;
        text = mfree(text);

        k = read_optional_limit(r, path, "memory.max", &t->memory_max);
        if (k < 0)
                return k;
        return read_optional_limit(r, path, "memory.high", &t->memory_high);
}

static int read_settings_v1(CGroupRoot *r, const char *path, CGroupSettings *t) {
        uint64_t v, period;
        int64_t quota;
        int k;

        k = cgroup_read_u64(r, "cpu", path, "cpu.shares", &v);
        if (k >= 0)
                t->cpu_weight = weight_unset_if_default(cgroup_cpu_shares_to_weight(v));
        else if (OPTIONAL(k) < 0)
                return k;

        k = cgroup_read_u64(r, "cpu", path, "cpu.cfs_period_us", &period);
        if (k >= 0) {
                _cleanup_free_ char *cpu_max = NULL;

                k = cgroup_read_i64(r, "cpu", path, "cpu.cfs_quota_us", &quota);
                if (k < 0)
                        return k;
                if (quota < -1)
                        return -EINVAL;
                /* The same numbers as v2's cpu.max, and one conversion for both. */
                if (quota < 0)
                        k = asprintf(&cpu_max, "max %" PRIu64, period);
                else
                        k = asprintf(&cpu_max, "%" PRIi64 " %" PRIu64, quota, period);
                if (k < 0)
                        return -ENOMEM;
                k = cgroup_cpu_max_parse(cpu_max, &t->cpu_quota_per_sec_usec, &t->cpu_quota_period_usec);
                if (k < 0)
                        return k;
        } else if (OPTIONAL(k) < 0)
                return k;

        k = cgroup_read_u64(r, "blkio", path, "blkio.weight", &v);
        if (k >= 0)
                t->io_weight = weight_unset_if_default(cgroup_blkio_to_io_weight(v));
        else if (OPTIONAL(k) < 0)
                return k;

        for (size_t type = 0; type < _CGROUP_IO_LIMIT_TYPE_MAX; type++) {
                _cleanup_free_ char *text = NULL;

                k = read_optional(r, "blkio", path, cgroup_blkio_throttle_file(type), &text);
                if (k > 0)
                        k = cgroup_blkio_throttle_parse(text, (int) type, &t->io_limits, &t->n_io_limits);
                if (k < 0)
                        return k;
        }

        k = cgroup_read_u64(r, "memory", path, "memory.limit_in_bytes", &v);
        if (k >= 0)
                t->memory_max = v1_memory_limit(v);
        else if (OPTIONAL(k) < 0)
                return k;
        return 0;
}

/* A device whose four limits are all "max" has no limit: the kernel would not list it. */
static void io_limits_drop_none(CGroupSettings *t) {
        size_t n = 0;

        for (size_t i = 0; i < t->n_io_limits; i++) {
                if (cgroup_io_limit_is_none(t->io_limits + i)) {
                        free(t->io_limits[i].path);
                        continue;
                }
                t->io_limits[n++] = t->io_limits[i];
        }
        t->n_io_limits = n;
        if (n == 0)
                t->io_limits = mfree(t->io_limits);
}

int cgroup_read_settings(CGroupRoot *r, const char *path, CGroupSettings *ret) {
        _cleanup_(cgroup_settings_done) CGroupSettings t = CGROUP_SETTINGS_INIT;
        int k;

        assert_return(r, -EINVAL);
        assert_return(ret, -EINVAL);

        k = cgroup_must_exist(r, path);
        if (k < 0)
                return k;

        k = r->version == 2 ? read_settings_v2(r, path, &t) : read_settings_v1(r, path, &t);
        if (k < 0)
                return k;
        io_limits_drop_none(&t);

        k = read_cpuset_mask(r, path, "cpuset.cpus", CPU_INDEX_MAX, &t.allowed_cpus, &t.allowed_cpus_size);
        if (OPTIONAL(k) < 0)
                return k;
        k = read_cpuset_mask(r, path, "cpuset.mems", NODE_INDEX_MAX, &t.allowed_mems, &t.allowed_mems_size);
        if (OPTIONAL(k) < 0)
                return k;

        *ret = t;
        t = CGROUP_SETTINGS_INIT;
        return 0;
}

/* cgroup_read_usage() */

int cgroup_read_usage(CGroupRoot *r, const char *path, CGroupUsage *ret) {
        CGroupUsage u = {
                .cpu_usage_usec = UINT64_MAX,
                .io_read_bytes = UINT64_MAX,
                .io_write_bytes = UINT64_MAX,
                .memory_current = UINT64_MAX,
                .n_tasks = UINT64_MAX,
        };
        bool v2;
        _cleanup_free_ char *text = NULL;
        int k;

        assert_return(r, -EINVAL);
        assert_return(ret, -EINVAL);

        k = cgroup_must_exist(r, path);
        if (k < 0)
                return k;
        v2 = r->version == 2;

        /* A file that is missing means the kernel does not count it here: UINT64_MAX. */
        k = cgroup_read_cpu_usage(r, path, &u.cpu_usage_usec);
        if (OPTIONAL(k) < 0)
                return k;

        k = cgroup_read_file(r, "blkio", path, v2 ? "io.stat" : "blkio.throttle.io_service_bytes_recursive",
                             &text);
        if (k >= 0)
                k = v2 ? cgroup_io_stat_parse(text, &u.io_read_bytes, &u.io_write_bytes)
                       : cgroup_blkio_bytes_parse(text, &u.io_read_bytes, &u.io_write_bytes);
        if (OPTIONAL(k) < 0)
                return k;

        k = cgroup_read_u64(r, "memory", path, v2 ? "memory.current" : "memory.usage_in_bytes", &u.memory_current);
        if (OPTIONAL(k) < 0)
                return k;

        /* pids.current counts tasks (threads) of the whole subtree; without the pids controller
         * the processes in the cgroup itself are the best count there is. */
        k = cgroup_read_u64(r, "pids", path, "pids.current", &u.n_tasks);
        if (k == -ENOENT) {
                _cleanup_free_ pid_t *pids = NULL;
                size_t n;

                k = cgroup_get_pids(r, path, &pids, &n);
                if (k >= 0)
                        u.n_tasks = n;
        }
        if (k < 0)
                return k;

        *ret = u;
        return 0;
}
