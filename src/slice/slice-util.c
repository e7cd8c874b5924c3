/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "alloc-util.h"
#include "cgroup-util.h"
#include "parse-util.h"
#include "path-util.h"
#include "slice-util.h"
#include "string-util.h"
#include "strv.h"

bool slice_name_is_valid(const char *name) {
        return name_is_valid(name, NAME_MAX_LEN);
}

static bool unit_char_is_plain(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
               c == ':';
}

int slice_unit_name(const char *name, const char *suffix, char **ret) {
        char *u, *p;

        if (!slice_name_is_valid(name))
                return -EINVAL;
        u = new(char, STRLEN(SLICE_UNIT_PREFIX) + strlen(name) * 4 + strlen(suffix) + 1);
        if (!u)
                return -ENOMEM;
        p = stpcpy(u, SLICE_UNIT_PREFIX);
        for (const char *c = name; *c; c++)
                if (unit_char_is_plain(*c))
                        *p++ = *c;
                else
                        p += sprintf(p, "\\x%02x", (unsigned char) *c);
        strcpy(p, suffix);
        *ret = u;
        return 0;
}

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -EINVAL;
}

int slice_name_from_unit(const char *unit, const char *suffix, char **ret) {
        _cleanup_free_ char *name = NULL, *check = NULL;
        const char *s, *e;
        char *p;

        s = startswith(unit, SLICE_UNIT_PREFIX);
        e = endswith(unit, suffix);
        if (!s || !e || e <= s)
                return -EINVAL;
        name = new(char, e - s + 1);
        if (!name)
                return -ENOMEM;
        for (p = name; s < e; s++) {
                if (*s == '\\') {
                        int hi, lo;
                        if (e - s < 4 || s[1] != 'x' || (hi = unhex(s[2])) < 0 || (lo = unhex(s[3])) < 0)
                                return -EINVAL;
                        *p++ = (char) (hi << 4 | lo);
                        s += 3;
                } else if (unit_char_is_plain(*s))
                        *p++ = *s;
                else
                        return -EINVAL; /* e.g. a raw '-': a nested slice, not one of ours */
        }
        *p = '\0';

        /* Only the canonical spelling is ours: "tonari-a\x5fb.slice" is not "a_b". */
        if (slice_unit_name(name, suffix, &check) < 0 || !streq(check, unit))
                return -EINVAL;
        *ret = TAKE_PTR(name);
        return 0;
}

static int fail(char **ret_error, int error, const char *format, ...) _printf_(3, 4);
static int fail(char **ret_error, int error, const char *format, ...) {
        va_list ap;

        if (ret_error) {
                va_start(ap, format);
                if (vasprintf(ret_error, format, ap) < 0)
                        *ret_error = NULL;
                va_end(ap);
        }
        return -error;
}

static bool weight_ok(uint64_t w) {
        return w == CGROUP_WEIGHT_UNSET || (w >= CGROUP_WEIGHT_MIN && w <= CGROUP_WEIGHT_MAX);
}

/* Indexes in mask that are not in online; the first one, or -1. */
static int64_t first_not_online(const uint8_t *mask, size_t size, const uint8_t *online, size_t online_size) {
        for (size_t i = 0; i < size * 8; i++)
                if ((mask[i / 8] & (1u << (i % 8))) &&
                    !(i / 8 < online_size && (online[i / 8] & (1u << (i % 8)))))
                        return (int64_t) i;
        return -1;
}

int slice_settings_validate(const CGroupSettings *s, CGroupSettingMask mask, const uint8_t *online_cpus,
                            size_t online_cpus_size, const uint8_t *online_nodes, size_t online_nodes_size,
                            char **ret_error) {
        if ((mask & CGROUP_MASK_CPU_WEIGHT) && !weight_ok(s->cpu_weight))
                return fail(ret_error, ERANGE, "Invalid CPUWeight %" PRIu64 ": expected 1-10000.", s->cpu_weight);
        if ((mask & CGROUP_MASK_IO_WEIGHT) && !weight_ok(s->io_weight))
                return fail(ret_error, ERANGE, "Invalid IOWeight %" PRIu64 ": expected 1-10000.", s->io_weight);

        if (mask & CGROUP_MASK_CPU_QUOTA) {
                usec_t period = s->cpu_quota_period_usec == USEC_INFINITY ? CGROUP_CPU_QUOTA_PERIOD_DEFAULT_USEC
                                                                          : s->cpu_quota_period_usec;
                if (period < CGROUP_CPU_QUOTA_PERIOD_MIN_USEC || period > CGROUP_CPU_QUOTA_PERIOD_MAX_USEC)
                        return fail(ret_error, ERANGE,
                                    "Invalid CPUQuotaPeriodUSec %" PRIu64 ": the kernel accepts 1ms to 1s.", period);
                if (s->cpu_quota_per_sec_usec != USEC_INFINITY &&
                    (s->cpu_quota_per_sec_usec == 0 ||
                     (unsigned __int128) s->cpu_quota_per_sec_usec * period <
                             (unsigned __int128) CGROUP_CPU_QUOTA_MIN_USEC * USEC_PER_SEC))
                        return fail(ret_error, ERANGE,
                                    "Invalid CPUQuotaPerSecUSec %" PRIu64 ": %" PRIu64 " us per period of %" PRIu64
                                    " us is below the kernel's minimum of 1ms.",
                                    s->cpu_quota_per_sec_usec,
                                    (uint64_t) ((unsigned __int128) s->cpu_quota_per_sec_usec * period / USEC_PER_SEC),
                                    period);
        }

        if ((mask & CGROUP_MASK_MEMORY_MAX) && s->memory_max == 0)
                return fail(ret_error, ERANGE, "Invalid MemoryMax 0: use a positive size, or UINT64_MAX for none.");
        if ((mask & CGROUP_MASK_MEMORY_HIGH) && s->memory_high == 0)
                return fail(ret_error, ERANGE, "Invalid MemoryHigh 0: use a positive size, or UINT64_MAX for none.");

        if (mask & CGROUP_MASK_IO_LIMITS)
                for (size_t i = 0; i < s->n_io_limits; i++) {
                        const CGroupIODeviceLimit *l = &s->io_limits[i];
                        /* Adopted limits whose device is gone have no device number: they can still
                         * be removed. The cgroupfs backend refuses to write them. */
                        if (!l->path)
                                return fail(ret_error, EINVAL, "IO limit without a device path.");
                        for (int t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++)
                                if (l->limit[t] == 0)
                                        return fail(ret_error, ERANGE,
                                                    "Invalid IO limit 0 for '%s': use a positive value, or "
                                                    "UINT64_MAX to remove the limit.",
                                                    l->path);
                }

        if ((mask & CGROUP_MASK_ALLOWED_CPUS) && online_cpus) {
                int64_t bad = first_not_online(s->allowed_cpus, s->allowed_cpus_size, online_cpus, online_cpus_size);
                if (bad >= 0)
                        return fail(ret_error, EINVAL, "Invalid AllowedCPUs: CPU %" PRIi64 " is not online.", bad);
        }
        if ((mask & CGROUP_MASK_ALLOWED_MEMS) && online_nodes) {
                int64_t bad = first_not_online(s->allowed_mems, s->allowed_mems_size, online_nodes, online_nodes_size);
                if (bad >= 0)
                        return fail(ret_error, EINVAL, "Invalid AllowedMemoryNodes: NUMA node %" PRIi64 " is not online.",
                                    bad);
        }
        return 0;
}

int slice_mask_to_properties(CGroupSettingMask mask, char ***ret) {
        static const struct {
                CGroupSettingMask mask;
                const char *names[4];
        } table[] = {
                { CGROUP_MASK_CPU_WEIGHT, { "CPUWeight" } },
                { CGROUP_MASK_CPU_QUOTA, { "CPUQuotaPerSecUSec", "CPUQuotaPeriodUSec" } },
                { CGROUP_MASK_IO_WEIGHT, { "IOWeight" } },
                { CGROUP_MASK_IO_LIMITS,
                  { "IOReadBandwidthMax", "IOWriteBandwidthMax", "IOReadIOPSMax", "IOWriteIOPSMax" } },
                { CGROUP_MASK_MEMORY_MAX, { "MemoryMax" } },
                { CGROUP_MASK_MEMORY_HIGH, { "MemoryHigh" } },
                { CGROUP_MASK_ALLOWED_CPUS, { "AllowedCPUs" } },
                { CGROUP_MASK_ALLOWED_MEMS, { "AllowedMemoryNodes" } },
        };
        _cleanup_strv_free_ char **l = NULL;

        FOREACH_ELEMENT(e, table) {
                if (!(mask & e->mask))
                        continue;
                for (size_t i = 0; i < ELEMENTSOF(e->names) && e->names[i]; i++)
                        if (strv_extend(&l, e->names[i]) < 0)
                                return -ENOMEM;
        }
        if (!l) {
                l = new0(char *, 1);
                if (!l)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(l);
        return 0;
}
