/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cgroup_apply(): systemd's resource settings written to the interface files of the cgroup
 * version at hand. Each setting is one step that first only checks whether the hierarchy can
 * express it, so that an unsupported setting leaves the cgroup untouched, and then writes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "alloc-util.h"
#include "cgroup-internal.h"
#include "parse-util.h"
#include "string-util.h"
#include "strv.h"

typedef struct Apply {
        CGroupRoot *root;
        const char *path;
        const CGroupSettings *s;
        char **enabled; /* v2: the cgroup's cgroup.controllers */
        bool write;     /* false: only find out whether the hierarchy can express the setting */
} Apply;

static int unsupported(char **ret_unsupported, const char *setting, const char *reason_fmt, ...)
        _printf_(3, 4);

static int unsupported(char **ret_unsupported, const char *setting, const char *reason_fmt, ...) {
        _cleanup_free_ char *reason = NULL;
        va_list ap;
        int n;

        if (!ret_unsupported)
                return -EOPNOTSUPP;

        va_start(ap, reason_fmt);
        n = vasprintf(&reason, reason_fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        *ret_unsupported = strjoin(setting, " (", reason, ")");
        if (!*ret_unsupported)
                return -ENOMEM;
        return -EOPNOTSUPP;
}

/*
 * 1: the controller for setting is there, go on. A setting left at its default needs no file:
 * without the controller that is 0 (nothing to do), anything else -EOPNOTSUPP.
 */
static int need_controller(Apply *a, const char *setting, bool is_default, const char *v2, const char *v1,
                           char **ret_unsupported) {
        const char *c = a->root->version == 2 ? v2 : v1;
        bool have = a->root->version == 2 ? strv_contains(a->enabled, c)
                                          : cgroup_root_has_controller(a->root, c);

        if (have)
                return 1;
        if (is_default)
                return 0;
        return unsupported(ret_unsupported, setting, "no %s controller", c);
}

static int apply_cpu_weight(Apply *a, char **ret_unsupported) {
        uint64_t w = a->s->cpu_weight;
        int k;

        k = need_controller(a, "CPUWeight=", w == CGROUP_WEIGHT_UNSET, "cpu", "cpu", ret_unsupported);
        if (k <= 0 || !a->write)
                return MIN(k, 0);

        if (a->root->version == 2)
                return cgroup_write_u64(a->root, NULL, a->path, "cpu.weight",
                                        w == CGROUP_WEIGHT_UNSET ? CGROUP_WEIGHT_DEFAULT : w);
        return cgroup_write_u64(a->root, "cpu", a->path, "cpu.shares", cgroup_cpu_weight_to_shares(w));
}

static int apply_cpu_quota(Apply *a, char **ret_unsupported) {
        const CGroupSettings *s = a->s;
        _cleanup_free_ char *v = NULL;
        usec_t period, quota;
        bool is_default;
        int k;

        is_default = s->cpu_quota_per_sec_usec == USEC_INFINITY && s->cpu_quota_period_usec == USEC_INFINITY;
        k = need_controller(a, "CPUQuota=", is_default, "cpu", "cpu", ret_unsupported);
        if (k <= 0 || !a->write)
                return MIN(k, 0);

        if (a->root->version == 2) {
                k = cgroup_cpu_max_format(s->cpu_quota_per_sec_usec, s->cpu_quota_period_usec, &v);
                if (k < 0)
                        return k;
                return cgroup_write_file(a->root, NULL, a->path, "cpu.max", v);
        }

        period = s->cpu_quota_period_usec == USEC_INFINITY ? CGROUP_CPU_QUOTA_PERIOD_DEFAULT_USEC
                                                           : s->cpu_quota_period_usec;
        quota = cgroup_cpu_quota_per_period(s->cpu_quota_per_sec_usec, period);
        /* Beyond INT64_MAX the kernel's s64 file cannot hold it: let the kernel refuse the value. */
        return cgroup_v1_write_cpu_quota(a->root, a->path,
                                         quota == USEC_INFINITY ? -1 : (int64_t) MIN(quota, (usec_t) INT64_MAX),
                                         period);
}

static int apply_io_weight(Apply *a, char **ret_unsupported) {
        uint64_t w = a->s->io_weight;
        const char *file = a->root->version == 2 ? "io.weight" : "blkio.weight";
        _cleanup_free_ char *cur = NULL, *v = NULL;
        int k;

        k = need_controller(a, "IOWeight=", w == CGROUP_WEIGHT_UNSET, "io", "blkio", ret_unsupported);
        if (k <= 0)
                return k;

        /* Weights exist only with a scheduler that has them (BFQ, v2's iocost; v1's CFQ). */
        k = cgroup_read_file(a->root, "blkio", a->path, file, &cur);
        if (k == -ENOENT)
                return w == CGROUP_WEIGHT_UNSET
                               ? 0
                               : unsupported(ret_unsupported, "IOWeight=",
                                             "no %s: the device's scheduler has no weights", file);
        if (k < 0 || !a->write)
                return MIN(k, 0);

        if (a->root->version == 1)
                return cgroup_write_u64(a->root, "blkio", a->path, file, cgroup_io_weight_to_blkio(w));
        if (asprintf(&v, "default %" PRIu64, w == CGROUP_WEIGHT_UNSET ? CGROUP_WEIGHT_DEFAULT : w) < 0)
                return -ENOMEM;
        return cgroup_write_file(a->root, NULL, a->path, file, v);
}

static const char *const io_limit_settings[_CGROUP_IO_LIMIT_TYPE_MAX] = {
        [CGROUP_IO_RBPS] = "IOReadBandwidthMax=",
        [CGROUP_IO_WBPS] = "IOWriteBandwidthMax=",
        [CGROUP_IO_RIOPS] = "IOReadIOPSMax=",
        [CGROUP_IO_WIOPS] = "IOWriteIOPSMax=",
};

/* The name of the first IO limit setting with a value; NULL if no device has any limit. */
static const char *io_limits_first_setting(const CGroupSettings *s) {
        for (size_t t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++)
                for (size_t i = 0; i < s->n_io_limits; i++)
                        if (s->io_limits[i].limit[t] != CGROUP_LIMIT_MAX)
                                return io_limit_settings[t];
        return NULL;
}

/* The limits in the cgroup now: v2 io.max, v1 the four throttle files. */
static int io_limits_read(Apply *a, const char *setting, char **ret_unsupported, CGroupIODeviceLimit **ret,
                          size_t *ret_n) {
        CGroupIODeviceLimit *l = NULL;
        size_t n = 0;
        int k;

        for (size_t t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++) {
                _cleanup_free_ char *text = NULL;
                const char *file = a->root->version == 2 ? "io.max" : cgroup_blkio_throttle_file(t);

                k = cgroup_read_file(a->root, "blkio", a->path, file, &text);
                if (k == -ENOENT)
                        k = setting ? unsupported(ret_unsupported, setting,
                                                  "no %s: the kernel has no block I/O throttling", file)
                                    : 1;
                if (k == 1)
                        break; /* nothing to read, nothing to remove */
                if (k < 0)
                        goto fail;
                if (a->root->version == 2) {
                        k = cgroup_io_max_parse(text, &l, &n);
                        if (k < 0)
                                goto fail;
                        break;
                }
                k = cgroup_blkio_throttle_parse(text, (int) t, &l, &n);
                if (k < 0)
                        goto fail;
        }

        *ret = l;
        *ret_n = n;
        return 0;

fail:
        cgroup_settings_done(&(CGroupSettings) { .io_limits = l, .n_io_limits = n });
        return k;
}

static int apply_io_limits(Apply *a, char **ret_unsupported) {
        _cleanup_(cgroup_settings_done) CGroupSettings cur = CGROUP_SETTINGS_INIT;
        const CGroupSettings *s = a->s;
        const char *setting = io_limits_first_setting(s);
        int k;

        k = need_controller(a, setting ?: io_limit_settings[0], !setting, "io", "blkio", ret_unsupported);
        if (k <= 0)
                return k;
        k = io_limits_read(a, setting, ret_unsupported, &cur.io_limits, &cur.n_io_limits);
        if (k < 0 || !a->write)
                return k;

        if (a->root->version == 2) {
                /* Devices no longer listed lose all four limits. */
                for (size_t i = 0; i < cur.n_io_limits; i++) {
                        const uint64_t none[_CGROUP_IO_LIMIT_TYPE_MAX] = {
                                CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX
                        };
                        _cleanup_free_ char *line = NULL;

                        if (cgroup_settings_find_io_limit(s, cur.io_limits[i].devnum))
                                continue;
                        k = cgroup_io_max_format_line(cur.io_limits[i].devnum, none, &line);
                        if (k < 0)
                                return k;
                        k = cgroup_write_file(a->root, NULL, a->path, "io.max", line);
                        if (k < 0)
                                return k;
                }
                for (size_t i = 0; i < s->n_io_limits; i++) {
                        const CGroupIODeviceLimit *l = s->io_limits + i;
                        _cleanup_free_ char *line = NULL;

                        if (cgroup_io_limit_is_none(l) && !cgroup_settings_find_io_limit(&cur, l->devnum))
                                continue;
                        k = cgroup_io_max_format_line(l->devnum, l->limit, &line);
                        if (k < 0)
                                return k;
                        k = cgroup_write_file(a->root, NULL, a->path, "io.max", line);
                        if (k < 0)
                                return k;
                }
                return 0;
        }

        /* v1: "MAJ:MIN VALUE" per device and file; 0 removes a limit. */
        for (size_t t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++) {
                for (size_t i = 0; i < cur.n_io_limits; i++) {
                        dev_t devnum = cur.io_limits[i].devnum;
                        const CGroupIODeviceLimit *want = cgroup_settings_find_io_limit(s, devnum);
                        char line[64];

                        if (cur.io_limits[i].limit[t] == CGROUP_LIMIT_MAX ||
                            (want && want->limit[t] != CGROUP_LIMIT_MAX))
                                continue;
                        (void) snprintf(line, sizeof(line), "%u:%u 0", major(devnum), minor(devnum));
                        k = cgroup_write_file(a->root, "blkio", a->path, cgroup_blkio_throttle_file(t), line);
                        if (k < 0)
                                return k;
                }
                for (size_t i = 0; i < s->n_io_limits; i++) {
                        const CGroupIODeviceLimit *l = s->io_limits + i;
                        char line[64];

                        if (l->limit[t] == CGROUP_LIMIT_MAX)
                                continue;
                        (void) snprintf(line, sizeof(line), "%u:%u %" PRIu64, major(l->devnum),
                                        minor(l->devnum), l->limit[t]);
                        k = cgroup_write_file(a->root, "blkio", a->path, cgroup_blkio_throttle_file(t), line);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

static int apply_memory_max(Apply *a, char **ret_unsupported) {
        uint64_t v = a->s->memory_max;
        char buf[STRLEN("18446744073709551615") + 1];
        int k;

        k = need_controller(a, "MemoryMax=", v == CGROUP_LIMIT_MAX, "memory", "memory", ret_unsupported);
        if (k <= 0 || !a->write)
                return MIN(k, 0);

        if (a->root->version == 2)
                return cgroup_write_file(a->root, NULL, a->path, "memory.max",
                                         cgroup_limit_format(v, buf, sizeof(buf)));
        if (v == CGROUP_LIMIT_MAX)
                return cgroup_write_file(a->root, "memory", a->path, "memory.limit_in_bytes", "-1");
        return cgroup_write_u64(a->root, "memory", a->path, "memory.limit_in_bytes", v);
}

static int apply_memory_high(Apply *a, char **ret_unsupported) {
        uint64_t v = a->s->memory_high;
        char buf[STRLEN("18446744073709551615") + 1];
        int k;

        if (a->root->version == 1)
                /* No limit is what v1 always has. */
                return v == CGROUP_LIMIT_MAX
                               ? 0
                               : unsupported(ret_unsupported, "MemoryHigh=", "cgroup v1 has no memory.high");

        k = need_controller(a, "MemoryHigh=", v == CGROUP_LIMIT_MAX, "memory", "memory", ret_unsupported);
        if (k <= 0 || !a->write)
                return MIN(k, 0);
        return cgroup_write_file(a->root, NULL, a->path, "memory.high",
                                 cgroup_limit_format(v, buf, sizeof(buf)));
}

static int apply_cpuset(Apply *a, const char *setting, const uint8_t *mask, size_t size, const char *file,
                        char **ret_unsupported) {
        _cleanup_free_ char *v = NULL;
        bool empty = !mask || index_list_count(mask, size) == 0;
        int k;

        k = need_controller(a, setting, empty, "cpuset", "cpuset", ret_unsupported);
        if (k <= 0 || !a->write)
                return MIN(k, 0);

        if (empty && a->root->version == 1) {
                /* v1 has no "inherit": an empty cpuset holds no tasks. Unrestricted is the parent's. */
                _cleanup_free_ char *parent = cgroup_path_parent(a->path);

                if (!parent)
                        return -ENOMEM;
                k = cgroup_read_value(a->root, "cpuset", parent, file, &v);
                if (k < 0)
                        return k;
        } else {
                /* v2: "" inherits the parent's. */
                v = format_index_list(mask, mask ? size : 0);
                if (!v)
                        return -ENOMEM;
        }
        return cgroup_write_file(a->root, "cpuset", a->path, file, v);
}

static int apply_allowed_cpus(Apply *a, char **ret_unsupported) {
        return apply_cpuset(a, "AllowedCPUs=", a->s->allowed_cpus, a->s->allowed_cpus_size, "cpuset.cpus",
                            ret_unsupported);
}

static int apply_allowed_mems(Apply *a, char **ret_unsupported) {
        return apply_cpuset(a, "AllowedMemoryNodes=", a->s->allowed_mems, a->s->allowed_mems_size,
                            "cpuset.mems", ret_unsupported);
}

static const struct {
        CGroupSettingMask mask;
        int (*apply)(Apply *a, char **ret_unsupported);
} apply_steps[] = {
        { CGROUP_MASK_CPU_WEIGHT, apply_cpu_weight },
        { CGROUP_MASK_CPU_QUOTA, apply_cpu_quota },
        { CGROUP_MASK_IO_WEIGHT, apply_io_weight },
        { CGROUP_MASK_IO_LIMITS, apply_io_limits },
        { CGROUP_MASK_MEMORY_MAX, apply_memory_max },
        { CGROUP_MASK_MEMORY_HIGH, apply_memory_high },
        { CGROUP_MASK_ALLOWED_CPUS, apply_allowed_cpus },
        { CGROUP_MASK_ALLOWED_MEMS, apply_allowed_mems },
};

/* Values no kernel accepts, refused before anything is written. */
static int settings_check(const CGroupSettings *s, CGroupSettingMask mask) {
        if ((mask & CGROUP_MASK_CPU_WEIGHT) && !cgroup_weight_is_valid(s->cpu_weight))
                return -EINVAL;
        if ((mask & CGROUP_MASK_IO_WEIGHT) && !cgroup_weight_is_valid(s->io_weight))
                return -EINVAL;
        if ((mask & CGROUP_MASK_CPU_QUOTA) && s->cpu_quota_period_usec != USEC_INFINITY &&
            (s->cpu_quota_period_usec < CGROUP_CPU_QUOTA_PERIOD_MIN_USEC ||
             s->cpu_quota_period_usec > CGROUP_CPU_QUOTA_PERIOD_MAX_USEC))
                return -EINVAL;
        if (mask & CGROUP_MASK_IO_LIMITS) {
                if (s->n_io_limits > 0 && !s->io_limits)
                        return -EINVAL;
                for (size_t i = 0; i < s->n_io_limits; i++) {
                        const CGroupIODeviceLimit *l = s->io_limits + i;

                        /* A block device; each once. */
                        if (major(l->devnum) == 0)
                                return -EINVAL;
                        for (size_t j = 0; j < i; j++)
                                if (s->io_limits[j].devnum == l->devnum)
                                        return -EINVAL;
                        /* 0 would mean "no limit" to v1: not a limit anyone means. */
                        for (size_t t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++)
                                if (l->limit[t] == 0)
                                        return -EINVAL;
                }
        }
        return 0;
}

int cgroup_apply(CGroupRoot *r, const char *path, const CGroupSettings *s, CGroupSettingMask mask,
                 char **ret_unsupported) {
        _cleanup_strv_free_ char **enabled = NULL;
        Apply a;
        int k;

        assert_return(r, -EINVAL);
        assert_return(s, -EINVAL);
        assert_return((mask & ~_CGROUP_MASK_ALL) == 0, -EINVAL);
        k = cgroup_path_check(path);
        if (k < 0)
                return k;
        k = settings_check(s, mask);
        if (k < 0)
                return k;

        k = cgroup_must_exist(r, path);
        if (k < 0)
                return k;
        if (mask == 0)
                return 0;

        if (r->version == 2) {
                /* What this cgroup got from its parent: the controllers whose files it has. */
                _cleanup_free_ char *text = NULL;

                k = cgroup_read_file(r, NULL, path, "cgroup.controllers", &text);
                if (k < 0)
                        return k;
                k = strv_split(text, " \n", &enabled);
                if (k < 0)
                        return k;
        }

        a = (Apply) { .root = r, .path = path, .s = s, .enabled = enabled };

        /* First find out whether everything can be expressed, so that an unsupported setting
         * leaves the cgroup untouched; then write. */
        for (int pass = 0; pass < 2; pass++) {
                a.write = pass == 1;
                FOREACH_ELEMENT(step, apply_steps) {
                        if (!(mask & step->mask))
                                continue;
                        k = step->apply(&a, ret_unsupported);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}
