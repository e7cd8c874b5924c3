/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <unistd.h>

#include "alloc-util.h"
#include "parse-util.h"
#include "path-util.h"
#include "slice-assign.h"
#include "string-util.h"
#include "time-util.h"

/*
 * Largest index accepted in AllowedCPUs= and AllowedMemoryNodes=: the kernel's own maxima on
 * x86-64 (NR_CPUS ≤ 8192, MAX_NUMNODES = 1 << 10). Whether an index exists on this host is the
 * daemon's question; this bound only keeps a typo like "0-4000000000" from building a 500 MB mask.
 */
#define CPU_INDEX_MAX 8191U
#define NODE_INDEX_MAX 1023U

/* Weights as in cgroup v2 cpu.weight and io.weight, and in systemd's CPUWeight=/IOWeight=. */
#define WEIGHT_MIN UINT64_C(1)
#define WEIGHT_MAX UINT64_C(10000)

typedef enum SettingKind {
        SETTING_WEIGHT,       /* t: 1..10000 */
        SETTING_CPU_QUOTA,    /* t: N% → µs per second */
        SETTING_TIME,         /* t: time span in µs */
        SETTING_IO_BANDWIDTH, /* a(st): path, bytes per second (base 1000) */
        SETTING_IO_IOPS,      /* a(st): path, operations per second */
        SETTING_MEMORY,       /* t: bytes (base 1024), N% of physical memory, infinity */
        SETTING_INDEX_LIST,   /* ay: bitmask */
} SettingKind;

typedef struct Setting {
        const char *name;     /* as on the command line */
        const char *property; /* on the bus, systemd's name */
        SettingKind kind;
        unsigned max_index;   /* SETTING_INDEX_LIST only */
} Setting;

/* Order as in the table of slice-assign.h; the "known properties" message lists them this way. */
static const Setting settings[] = {
        { "CPUWeight", "CPUWeight", SETTING_WEIGHT },
        { "CPUQuota", "CPUQuotaPerSecUSec", SETTING_CPU_QUOTA },
        { "CPUQuotaPeriodSec", "CPUQuotaPeriodUSec", SETTING_TIME },
        { "IOWeight", "IOWeight", SETTING_WEIGHT },
        { "IOReadBandwidthMax", "IOReadBandwidthMax", SETTING_IO_BANDWIDTH },
        { "IOWriteBandwidthMax", "IOWriteBandwidthMax", SETTING_IO_BANDWIDTH },
        { "IOReadIOPSMax", "IOReadIOPSMax", SETTING_IO_IOPS },
        { "IOWriteIOPSMax", "IOWriteIOPSMax", SETTING_IO_IOPS },
        { "MemoryMax", "MemoryMax", SETTING_MEMORY },
        { "MemoryHigh", "MemoryHigh", SETTING_MEMORY },
        { "AllowedCPUs", "AllowedCPUs", SETTING_INDEX_LIST, CPU_INDEX_MAX },
        { "AllowedMemoryNodes", "AllowedMemoryNodes", SETTING_INDEX_LIST, NODE_INDEX_MAX },
};

/* A fully parsed value: nothing is appended to the message before parsing has succeeded. */
typedef struct Value {
        uint64_t number;   /* 't', or the limit of an IO entry */
        char *path;        /* IO entry; NULL for an empty list (remove every limit of the kind) */
        uint8_t *mask;     /* 'ay'; NULL with mask_size 0 for an empty mask */
        size_t mask_size;
} Value;

static void value_done(Value *v) {
        free(v->path);
        free(v->mask);
}

static const Setting *setting_find(const char *name, size_t len) {
        FOREACH_ELEMENT(s, settings)
                if (strlen(s->name) == len && strneq(s->name, name, len))
                        return s;
        return NULL;
}

static int physical_memory_bytes(uint64_t *ret) {
        long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGESIZE);

        if (pages <= 0 || page_size <= 0)
                return -EOPNOTSUPP;
        if ((uint64_t) pages > UINT64_MAX / (uint64_t) page_size)
                return -ERANGE;
        *ret = (uint64_t) pages * (uint64_t) page_size;
        return 0;
}

/*
 * Each parser returns 0, or -EINVAL with *ret_reason saying what was expected (a static string),
 * or another negative errno for failures that are not the user's (no memory, no sysconf()).
 */

static int parse_weight(const char *s, Value *v, const char **ret_reason) {
        uint64_t w;

        if (isempty(s)) {
                v->number = UINT64_MAX;
                return 0;
        }
        if (safe_atou64(s, &w) < 0 || w < WEIGHT_MIN || w > WEIGHT_MAX) {
                *ret_reason = "expected an integer from 1 to 10000, or an empty value to reset it";
                return -EINVAL;
        }
        v->number = w;
        return 0;
}

static int parse_cpu_quota(const char *s, Value *v, const char **ret_reason) {
        int p;

        if (isempty(s)) {
                v->number = UINT64_MAX;
                return 0;
        }
        p = parse_permyriad_unbounded(s);
        if (p == -ERANGE) {
                *ret_reason = "the percentage is too large";
                return -EINVAL;
        }
        if (p < 0) {
                *ret_reason = endswith(s, "%")
                                      ? "expected a percentage such as 20% or 12.5%, with at most two decimals"
                                      : "expected a percentage such as 20%";
                return -EINVAL;
        }
        if (p == 0) {
                *ret_reason = "the quota must be greater than 0%";
                return -EINVAL;
        }
        /* 1% of one CPU is 10 ms per second: one permyriad is 100 µs per second. */
        v->number = (uint64_t) p * 100;
        return 0;
}

static int parse_timespan(const char *s, Value *v, const char **ret_reason) {
        usec_t t;
        int r;

        if (isempty(s)) {
                v->number = UINT64_MAX;
                return 0;
        }
        r = parse_sec(s, &t);
        if (r < 0) {
                *ret_reason = r == -ERANGE ? "the time span is too long"
                                           : "expected a time span such as 100ms or 1s";
                return -EINVAL;
        }
        if (t == 0) {
                *ret_reason = "the period must be greater than 0";
                return -EINVAL;
        }
        v->number = t; /* "infinity" is USEC_INFINITY, the same as resetting */
        return 0;
}

static int parse_io_limit(const char *s, SettingKind kind, Value *v, const char **ret_reason) {
        const char *expected =
                kind == SETTING_IO_BANDWIDTH
                        ? "expected a device path and bytes per second, such as '/dev/vda 5M'"
                        : "expected a device path and operations per second, such as '/dev/vda 1000'";
        _cleanup_free_ char *path = NULL;
        const char *limit;
        uint64_t n;
        int r;

        if (isempty(s)) {
                v->path = NULL; /* an empty list */
                return 0;
        }

        limit = strchr(s, ' ');
        if (!limit || limit == s) {
                *ret_reason = limit ? "the device path must be absolute, such as /dev/vda" : expected;
                return -EINVAL;
        }
        path = strndup(s, limit - s);
        if (!path)
                return -ENOMEM;
        limit += strspn(limit, " ");
        if (*limit == '\0') {
                *ret_reason = expected;
                return -EINVAL;
        }
        if (!path_is_normalized_absolute(path)) {
                *ret_reason = "the device path must be absolute and normalized, such as /dev/vda";
                return -EINVAL;
        }

        if (streq(limit, "infinity"))
                n = UINT64_MAX; /* removes this device's limit */
        else {
                /* systemd takes both bandwidths and IOPS with decimal multiples: 5M is 5000000. */
                r = parse_size(limit, 1000, &n);
                if (r == -ERANGE) {
                        *ret_reason = "the limit is too large";
                        return -EINVAL;
                }
                if (r < 0) {
                        *ret_reason = kind == SETTING_IO_BANDWIDTH
                                              ? "expected bytes per second after the path, such as 5M "
                                                "(base 1000), or infinity"
                                              : "expected operations per second after the path, such as 1000 "
                                                "or 2K (base 1000), or infinity";
                        return -EINVAL;
                }
                if (n == 0 || n == UINT64_MAX) {
                        *ret_reason = "the limit must be greater than 0 (infinity removes it)";
                        return -EINVAL;
                }
        }

        v->path = TAKE_PTR(path);
        v->number = n;
        return 0;
}

static int parse_memory(const char *s, Value *v, const char **ret_reason) {
        static const char expected[] = "expected bytes such as 512M or 2G (base 1024), a percentage of "
                                       "physical memory such as 50%, or infinity";
        uint64_t n;
        int r;

        if (isempty(s) || streq(s, "infinity")) {
                v->number = UINT64_MAX;
                return 0;
        }

        if (endswith(s, "%")) {
                uint64_t physical;
                int p = parse_permyriad_unbounded(s);

                if (p == -ERANGE || (p >= 0 && (p == 0 || p > 10000))) {
                        *ret_reason = "a percentage of physical memory must be greater than 0% and at "
                                      "most 100%";
                        return -EINVAL;
                }
                if (p < 0) {
                        *ret_reason = expected;
                        return -EINVAL;
                }
                r = physical_memory_bytes(&physical);
                if (r < 0)
                        return r;
                v->number = (uint64_t) (((unsigned __int128) physical * (unsigned) p) / 10000);
                return 0;
        }

        r = parse_size(s, 1024, &n);
        if (r == -ERANGE) {
                *ret_reason = "the size is too large";
                return -EINVAL;
        }
        if (r < 0) {
                *ret_reason = expected;
                return -EINVAL;
        }
        v->number = n;
        return 0;
}

static int parse_indexes(const char *s, const Setting *setting, Value *v, const char **ret_reason) {
        bool cpus = setting->max_index == CPU_INDEX_MAX;
        int r;

        r = parse_index_list(s, setting->max_index, &v->mask, &v->mask_size);
        if (r == -ENOMEM)
                return r;
        if (r == -ERANGE) {
                *ret_reason = cpus ? "a CPU index is out of range (at most 8191)"
                                   : "a memory node index is out of range (at most 1023)";
                return -EINVAL;
        }
        if (r < 0) {
                *ret_reason = cpus ? "expected a list of CPU indexes such as 0-3,5, or nothing for no "
                                     "restriction"
                                   : "expected a list of memory node indexes such as 0-1, or nothing for no "
                                     "restriction";
                return -EINVAL;
        }
        return 0;
}

static int parse_value(const Setting *setting, const char *s, Value *v, const char **ret_reason) {
        switch (setting->kind) {
        case SETTING_WEIGHT:
                return parse_weight(s, v, ret_reason);
        case SETTING_CPU_QUOTA:
                return parse_cpu_quota(s, v, ret_reason);
        case SETTING_TIME:
                return parse_timespan(s, v, ret_reason);
        case SETTING_IO_BANDWIDTH:
        case SETTING_IO_IOPS:
                return parse_io_limit(s, setting->kind, v, ret_reason);
        case SETTING_MEMORY:
                return parse_memory(s, v, ret_reason);
        case SETTING_INDEX_LIST:
                return parse_indexes(s, setting, v, ret_reason);
        }
        return -EINVAL;
}

static int append_value(sd_bus_message *m, const Setting *setting, const Value *v) {
        int r;

        r = sd_bus_message_open_container(m, 'r', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append_basic(m, 's', setting->property);
        if (r < 0)
                return r;

        switch (setting->kind) {
        case SETTING_WEIGHT:
        case SETTING_CPU_QUOTA:
        case SETTING_TIME:
        case SETTING_MEMORY:
                r = sd_bus_message_append(m, "v", "t", v->number);
                break;
        case SETTING_IO_BANDWIDTH:
        case SETTING_IO_IOPS:
                r = v->path ? sd_bus_message_append(m, "v", "a(st)", 1, v->path, v->number)
                            : sd_bus_message_append(m, "v", "a(st)", 0);
                break;
        case SETTING_INDEX_LIST:
                r = sd_bus_message_open_container(m, 'v', "ay");
                if (r < 0)
                        return r;
                r = sd_bus_message_append_array(m, 'y', v->mask, v->mask_size);
                if (r < 0)
                        return r;
                r = sd_bus_message_close_container(m);
                break;
        }
        if (r < 0)
                return r;

        return sd_bus_message_close_container(m);
}

static char *known_names(void) {
        size_t len = 0;
        char *s, *p;

        FOREACH_ELEMENT(i, settings)
                len += strlen(i->name) + 2;
        s = new(char, len + 1);
        if (!s)
                return NULL;
        p = s;
        FOREACH_ELEMENT(i, settings)
                p = stpcpy(stpcpy(p, i->name), i + 1 < settings + ELEMENTSOF(settings) ? ", " : "");
        return s;
}

/* Sets *ret_error (if wanted) to the message and returns error, or -ENOMEM if there is no memory for it. */
static int fail(char **ret_error, int error, const char *format, ...) _printf_(3, 4);
static int fail(char **ret_error, int error, const char *format, ...) {
        va_list ap;
        char *msg;
        int k;

        if (!ret_error)
                return error;
        va_start(ap, format);
        k = vasprintf(&msg, format, ap);
        va_end(ap);
        if (k < 0)
                return -ENOMEM;
        *ret_error = msg;
        return error;
}

int slice_assignment_append(sd_bus_message *m, const char *assignment, char **ret_error) {
        _cleanup_free_ char *escaped = NULL, *escaped_value = NULL, *known = NULL;
        _cleanup_(value_done) Value v = {};
        const Setting *setting;
        const char *eq, *reason = NULL;
        int r;

        assert_return(m, -EINVAL);
        assert_return(assignment, -EINVAL);

        eq = strchr(assignment, '=');
        if (!eq || eq == assignment) {
                escaped = cescape(assignment);
                if (!escaped)
                        return -ENOMEM;
                return fail(ret_error, -EINVAL,
                            eq ? "Invalid assignment '%s': the property name before '=' is missing."
                               : "Invalid assignment '%s': expected PROPERTY=VALUE, such as CPUQuota=20%%.",
                            escaped);
        }

        setting = setting_find(assignment, eq - assignment);
        if (!setting) {
                _cleanup_free_ char *name = strndup(assignment, eq - assignment);

                if (!name)
                        return -ENOMEM;
                escaped = cescape(name);
                known = known_names();
                if (!escaped || !known)
                        return -ENOMEM;
                return fail(ret_error, -ENOENT, "Unknown slice property '%s'. Known properties: %s.",
                            escaped, known);
        }

        eq++;
        /* No parser below needs a control character, and none may reach the daemon's logs. */
        if (string_has_cc(eq))
                reason = "control characters are not allowed";
        else {
                r = parse_value(setting, eq, &v, &reason);
                if (r < 0 && !reason)
                        return r;
        }
        if (reason) {
                escaped_value = cescape(eq);
                if (!escaped_value)
                        return -ENOMEM;
                return fail(ret_error, -EINVAL, "Invalid %s= value '%s': %s.", setting->name, escaped_value,
                            reason);
        }

        return append_value(m, setting, &v);
}
