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

/* Indexes in mask that are not in online; the first one, or -1. */
static int64_t first_not_online(const uint8_t *mask, size_t size, const uint8_t *online, size_t online_size) {
        for (size_t i = 0; i < size * 8; i++)
                if ((mask[i / 8] & (1u << (i % 8))) &&
                    !(i / 8 < online_size && (online[i / 8] & (1u << (i % 8)))))
                        return (int64_t) i;
        return -1;
}

static const char *const io_limit_properties[_CGROUP_IO_LIMIT_TYPE_MAX] = {
        [CGROUP_IO_RBPS] = "IOReadBandwidthMax",
        [CGROUP_IO_WBPS] = "IOWriteBandwidthMax",
        [CGROUP_IO_RIOPS] = "IOReadIOPSMax",
        [CGROUP_IO_WIOPS] = "IOWriteIOPSMax",
};

static bool io_limit_is_iops(CGroupIOLimitType t) {
        return t == CGROUP_IO_RIOPS || t == CGROUP_IO_WIOPS;
}

int slice_settings_validate(const CGroupSettings *s, CGroupSettingMask mask, uint64_t page_size,
                            const uint8_t *online_cpus, size_t online_cpus_size, const uint8_t *online_nodes,
                            size_t online_nodes_size, char **ret_error) {
        page_size = MAX(page_size, UINT64_C(1));

        if ((mask & CGROUP_MASK_CPU_WEIGHT) && !cgroup_weight_is_valid(s->cpu_weight))
                return fail(ret_error, ERANGE, "Invalid CPUWeight %" PRIu64 ": expected 1-10000.", s->cpu_weight);
        if ((mask & CGROUP_MASK_IO_WEIGHT) && !cgroup_weight_is_valid(s->io_weight))
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

        /* The kernel counts memory in pages and rounds a limit down to them: below one page it
         * would hold 0, which kills every process that is attached (systemd refuses 0 too). */
        if ((mask & CGROUP_MASK_MEMORY_MAX) && s->memory_max < page_size)
                return fail(ret_error, ERANGE,
                            "Invalid MemoryMax %" PRIu64 ": below one page (%" PRIu64 " bytes), the smallest limit "
                            "the kernel can hold; use at least %" PRIu64 ", or UINT64_MAX for none.",
                            s->memory_max, page_size, page_size);
        if ((mask & CGROUP_MASK_MEMORY_HIGH) && s->memory_high < page_size)
                return fail(ret_error, ERANGE,
                            "Invalid MemoryHigh %" PRIu64 ": below one page (%" PRIu64 " bytes), the smallest limit "
                            "the kernel can hold; use at least %" PRIu64 ", or UINT64_MAX for none.",
                            s->memory_high, page_size, page_size);

        if (mask & CGROUP_MASK_IO_LIMITS)
                for (size_t i = 0; i < s->n_io_limits; i++) {
                        const CGroupIODeviceLimit *l = &s->io_limits[i];
                        /* Adopted limits whose device is gone have no device number: they can still
                         * be removed. The cgroupfs backend refuses to write them. */
                        if (!l->path)
                                return fail(ret_error, EINVAL, "IO limit without a device path.");
                        for (int t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++) {
                                if (l->limit[t] == 0)
                                        return fail(ret_error, ERANGE,
                                                    "Invalid IO limit 0 for '%s': use a positive value, or "
                                                    "UINT64_MAX to remove the limit.",
                                                    l->path);
                                /* The kernel keeps IOPS limits in 32 bits, UINT32_MAX meaning none:
                                 * a larger value would be cut to its low bits (v1) or be none (v2). */
                                if (io_limit_is_iops(t) && l->limit[t] != CGROUP_LIMIT_MAX &&
                                    l->limit[t] > SLICE_IOPS_MAX)
                                        return fail(ret_error, ERANGE,
                                                    "Invalid %s %" PRIu64 " for '%s': the kernel holds at most %" PRIu64
                                                    ", or UINT64_MAX for none.",
                                                    io_limit_properties[t], l->limit[t], l->path,
                                                    (uint64_t) SLICE_IOPS_MAX);
                        }
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

static bool round_to_pages(uint64_t *v, uint64_t page_size) {
        uint64_t r;

        if (*v == CGROUP_LIMIT_MAX || *v < page_size)
                return false;
        r = *v - *v % page_size;
        if (r == *v)
                return false;
        *v = r;
        return true;
}

CGroupSettingMask slice_settings_round(CGroupSettings *s, CGroupSettingMask mask, uint64_t page_size) {
        CGroupSettingMask changed = 0;

        page_size = MAX(page_size, UINT64_C(1));
        if ((mask & CGROUP_MASK_MEMORY_MAX) && round_to_pages(&s->memory_max, page_size))
                changed |= CGROUP_MASK_MEMORY_MAX;
        if ((mask & CGROUP_MASK_MEMORY_HIGH) && round_to_pages(&s->memory_high, page_size))
                changed |= CGROUP_MASK_MEMORY_HIGH;
        return changed;
}

static int report_add(char ***report, const char *format, ...) _printf_(2, 3);
static int report_add(char ***report, const char *format, ...) {
        va_list ap;
        char *t;
        int n;

        va_start(ap, format);
        n = vasprintf(&t, format, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        return strv_consume(report, t);
}

/* Drops the indexes of mask that are not in online; true if there were any. */
static bool mask_keep_online(uint8_t *mask, size_t size, const uint8_t *online, size_t online_size) {
        bool changed = false;

        for (size_t i = 0; i < size; i++) {
                uint8_t keep = i < online_size ? mask[i] & online[i] : 0;

                changed = changed || keep != mask[i];
                mask[i] = keep;
        }
        return changed;
}

int slice_settings_make_valid(CGroupSettings *s, uint64_t page_size, const uint8_t *online_cpus,
                              size_t online_cpus_size, const uint8_t *online_nodes, size_t online_nodes_size,
                              CGroupSettingMask *ret_changed, char **ret_report) {
        _cleanup_strv_free_ char **report = NULL;
        CGroupSettingMask changed;
        char *joined;
        int r = 0;

        page_size = MAX(page_size, UINT64_C(1));

        /* What the API rounds, rounded. */
        changed = slice_settings_round(s, _CGROUP_MASK_ALL, page_size);
        if (changed & CGROUP_MASK_MEMORY_MAX)
                r = report_add(&report, "MemoryMax= not a whole number of pages (rounded down to %" PRIu64 ")",
                               s->memory_max);
        if (r >= 0 && (changed & CGROUP_MASK_MEMORY_HIGH))
                r = report_add(&report, "MemoryHigh= not a whole number of pages (rounded down to %" PRIu64 ")",
                               s->memory_high);

        /* What it refuses, replaced by the nearest value it accepts. */
        for (CGroupSettingMask m = 1; r >= 0 && m < _CGROUP_MASK_ALL; m <<= 1) {
                _cleanup_free_ char *why = NULL;

                if (slice_settings_validate(s, m, page_size, online_cpus, online_cpus_size, online_nodes,
                                            online_nodes_size, &why) >= 0)
                        continue;
                changed |= m;
                r = report_add(&report, "%s", strna(why));
                if (r < 0)
                        break;

                switch (m) {
                case CGROUP_MASK_CPU_WEIGHT:
                        s->cpu_weight = MIN(MAX(s->cpu_weight, CGROUP_WEIGHT_MIN), CGROUP_WEIGHT_MAX);
                        break;
                case CGROUP_MASK_IO_WEIGHT:
                        s->io_weight = MIN(MAX(s->io_weight, CGROUP_WEIGHT_MIN), CGROUP_WEIGHT_MAX);
                        break;
                case CGROUP_MASK_CPU_QUOTA: {
                        usec_t period;

                        if (s->cpu_quota_period_usec != USEC_INFINITY &&
                            (s->cpu_quota_period_usec < CGROUP_CPU_QUOTA_PERIOD_MIN_USEC ||
                             s->cpu_quota_period_usec > CGROUP_CPU_QUOTA_PERIOD_MAX_USEC))
                                s->cpu_quota_period_usec = USEC_INFINITY;
                        period = s->cpu_quota_period_usec == USEC_INFINITY ? CGROUP_CPU_QUOTA_PERIOD_DEFAULT_USEC
                                                                           : s->cpu_quota_period_usec;
                        /* The smallest quota per second that gives the kernel's minimum per period. */
                        if (s->cpu_quota_per_sec_usec != USEC_INFINITY)
                                s->cpu_quota_per_sec_usec = MAX(s->cpu_quota_per_sec_usec,
                                                                (CGROUP_CPU_QUOTA_MIN_USEC * USEC_PER_SEC + period - 1) /
                                                                        period);
                        break;
                }
                case CGROUP_MASK_MEMORY_MAX:
                        s->memory_max = page_size;
                        break;
                case CGROUP_MASK_MEMORY_HIGH:
                        s->memory_high = page_size;
                        break;
                case CGROUP_MASK_IO_LIMITS: {
                        size_t n = 0;

                        for (size_t i = 0; i < s->n_io_limits; i++) {
                                CGroupIODeviceLimit *l = s->io_limits + i;

                                if (!l->path)
                                        continue; /* no device to name: dropped */
                                for (int t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++)
                                        if (l->limit[t] == 0)
                                                l->limit[t] = CGROUP_LIMIT_MAX;
                                        else if (io_limit_is_iops(t) && l->limit[t] != CGROUP_LIMIT_MAX)
                                                l->limit[t] = MIN(l->limit[t], (uint64_t) SLICE_IOPS_MAX);
                                s->io_limits[n++] = *l;
                        }
                        s->n_io_limits = n;
                        break;
                }
                case CGROUP_MASK_ALLOWED_CPUS:
                        if (online_cpus)
                                (void) mask_keep_online(s->allowed_cpus, s->allowed_cpus_size, online_cpus,
                                                        online_cpus_size);
                        break;
                case CGROUP_MASK_ALLOWED_MEMS:
                        if (online_nodes)
                                (void) mask_keep_online(s->allowed_mems, s->allowed_mems_size, online_nodes,
                                                        online_nodes_size);
                        break;
                case _CGROUP_MASK_ALL:
                        break;
                }
        }
        if (r < 0)
                return r;

        if (strv_isempty(report))
                joined = strdup("");
        else
                joined = strv_join(report, "; ");
        if (!joined)
                return -ENOMEM;
        *ret_changed = changed;
        *ret_report = joined;
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
