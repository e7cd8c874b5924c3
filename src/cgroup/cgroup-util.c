/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Resource settings ↔ the text of the kernel's interface files (pure: no I/O): cpu.max and v1's
 * quota, weights and their v1 ranges, limits, io.max and v1's throttle files.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "alloc-util.h"
#include "cgroup-util.h"
#include "parse-util.h"
#include "string-util.h"
#include "strv.h"

/* The kernel's dev_t has 12 bits of major and 20 bits of minor (MINORBITS). */
#define KERNEL_MAJOR_MAX 0xfffU
#define KERNEL_MINOR_MAX 0xfffffU

/* cgroup v1 ranges and defaults: cpu.shares 2..262144 (the scheduler's MIN_SHARES/MAX_SHARES),
 * blkio.weight 10..1000 (CFQ's, kept by BFQ's legacy interface). */
#define CPU_SHARES_MIN UINT64_C(2)
#define CPU_SHARES_MAX UINT64_C(262144)
#define CPU_SHARES_DEFAULT UINT64_C(1024)
#define BLKIO_WEIGHT_MIN UINT64_C(10)
#define BLKIO_WEIGHT_MAX UINT64_C(1000)
#define BLKIO_WEIGHT_DEFAULT UINT64_C(500)

static const char *const io_limit_keys[_CGROUP_IO_LIMIT_TYPE_MAX] = {
        [CGROUP_IO_RBPS] = "rbps",
        [CGROUP_IO_WBPS] = "wbps",
        [CGROUP_IO_RIOPS] = "riops",
        [CGROUP_IO_WIOPS] = "wiops",
};

/* A copy of a one-value kernel file's text without its single trailing newline. */
static char *strdup_value(const char *text) {
        size_t n = strlen(text);

        if (n > 0 && text[n - 1] == '\n')
                n--;
        return strndup(text, n);
}

/* a * b / c without overflow, saturated at limit. */
static uint64_t mul_div_sat(uint64_t a, uint64_t b, uint64_t c, uint64_t limit) {
        unsigned __int128 v = (unsigned __int128) a * b / c;

        return v > limit ? limit : (uint64_t) v;
}

usec_t cgroup_cpu_quota_per_period(usec_t quota_per_sec_usec, usec_t period_usec) {
        if (quota_per_sec_usec == USEC_INFINITY)
                return USEC_INFINITY;
        if (period_usec == USEC_INFINITY)
                period_usec = CGROUP_CPU_QUOTA_PERIOD_DEFAULT_USEC;

        /* As systemd: the share of one second scaled to the period, rounded down, but never below
         * the kernel's minimum quota (it refuses less than 1 ms). A finite quota never becomes
         * USEC_INFINITY ("none"); the kernel refuses absurdly large values itself. */
        return MAX(mul_div_sat(quota_per_sec_usec, period_usec, USEC_PER_SEC, USEC_INFINITY - 1),
                   CGROUP_CPU_QUOTA_MIN_USEC);
}

int cgroup_cpu_max_format(usec_t quota_per_sec_usec, usec_t period_usec, char **ret) {
        char *s;
        int n;

        assert_return(ret, -EINVAL);

        if (period_usec == USEC_INFINITY)
                period_usec = CGROUP_CPU_QUOTA_PERIOD_DEFAULT_USEC;
        if (period_usec < CGROUP_CPU_QUOTA_PERIOD_MIN_USEC || period_usec > CGROUP_CPU_QUOTA_PERIOD_MAX_USEC)
                return -ERANGE;

        if (quota_per_sec_usec == USEC_INFINITY)
                n = asprintf(&s, "max %" PRIu64, period_usec);
        else
                n = asprintf(&s, "%" PRIu64 " %" PRIu64,
                             cgroup_cpu_quota_per_period(quota_per_sec_usec, period_usec), period_usec);
        if (n < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int cgroup_cpu_max_parse(const char *text, usec_t *ret_quota_per_sec_usec, usec_t *ret_period_usec) {
        _cleanup_free_ char *t = NULL;
        uint64_t quota, period;
        char *sp;

        assert_return(text, -EINVAL);

        t = strdup_value(text);
        if (!t)
                return -ENOMEM;
        /* The kernel prints exactly "QUOTA PERIOD" or "max PERIOD". */
        sp = strchr(t, ' ');
        if (!sp)
                return -EINVAL;
        *sp = '\0';

        if (safe_atou64(sp + 1, &period) < 0 || period < CGROUP_CPU_QUOTA_PERIOD_MIN_USEC ||
            period > CGROUP_CPU_QUOTA_PERIOD_MAX_USEC)
                return -EINVAL;
        if (streq(t, "max"))
                quota = USEC_INFINITY;
        else if (safe_atou64(t, &quota) < 0 || quota < CGROUP_CPU_QUOTA_MIN_USEC)
                return -EINVAL;

        if (ret_quota_per_sec_usec)
                /* Back to time per second, rounded down: exact for every value
                 * cgroup_cpu_quota_per_period() produced from a whole number of µs per period. */
                *ret_quota_per_sec_usec = quota == USEC_INFINITY ? USEC_INFINITY
                                                                 : mul_div_sat(quota, USEC_PER_SEC, period,
                                                                               USEC_INFINITY - 1);
        if (ret_period_usec)
                /* The file cannot say whether the default period was chosen or set: report the
                 * default as "default", the inverse of cgroup_cpu_max_format(). */
                *ret_period_usec = period == CGROUP_CPU_QUOTA_PERIOD_DEFAULT_USEC ? USEC_INFINITY : period;
        return 0;
}

/* (macro.h's CLAMP nests MIN in MAX, which -Wshadow refuses.) */
static uint64_t clamp_u64(uint64_t v, uint64_t lo, uint64_t hi) {
        return v < lo ? lo : v > hi ? hi : v;
}

uint64_t cgroup_cpu_weight_to_shares(uint64_t weight) {
        if (weight == CGROUP_WEIGHT_UNSET)
                return CPU_SHARES_DEFAULT;
        return clamp_u64(mul_div_sat(weight, CPU_SHARES_DEFAULT, CGROUP_WEIGHT_DEFAULT, UINT64_MAX),
                         CPU_SHARES_MIN, CPU_SHARES_MAX);
}

/* weight → v1 value rounds down; rounding up on the way back makes weight → v1 → weight the
 * identity wherever the v1 range can hold the weight. */
static uint64_t v1_to_weight(uint64_t v, uint64_t v1_default) {
        unsigned __int128 w = ((unsigned __int128) v * CGROUP_WEIGHT_DEFAULT + v1_default - 1) / v1_default;

        return w > CGROUP_WEIGHT_MAX ? CGROUP_WEIGHT_MAX
                                     : clamp_u64((uint64_t) w, CGROUP_WEIGHT_MIN, CGROUP_WEIGHT_MAX);
}

uint64_t cgroup_cpu_shares_to_weight(uint64_t shares) {
        return v1_to_weight(shares, CPU_SHARES_DEFAULT);
}

uint64_t cgroup_io_weight_to_blkio(uint64_t weight) {
        if (weight == CGROUP_WEIGHT_UNSET)
                return BLKIO_WEIGHT_DEFAULT;
        return clamp_u64(mul_div_sat(weight, BLKIO_WEIGHT_DEFAULT, CGROUP_WEIGHT_DEFAULT, UINT64_MAX),
                         BLKIO_WEIGHT_MIN, BLKIO_WEIGHT_MAX);
}

uint64_t cgroup_blkio_to_io_weight(uint64_t blkio_weight) {
        return v1_to_weight(blkio_weight, BLKIO_WEIGHT_DEFAULT);
}

/* "max" or a decimal number, no newline. */
static int limit_parse_token(const char *s, uint64_t *ret) {
        if (streq(s, "max")) {
                *ret = CGROUP_LIMIT_MAX;
                return 0;
        }
        return safe_atou64(s, ret) < 0 ? -EINVAL : 0;
}

int cgroup_limit_parse(const char *text, uint64_t *ret) {
        _cleanup_free_ char *t = NULL;
        uint64_t v;

        assert_return(text, -EINVAL);

        t = strdup_value(text);
        if (!t)
                return -ENOMEM;
        if (limit_parse_token(t, &v) < 0)
                return -EINVAL;
        if (ret)
                *ret = v;
        return 0;
}

char *cgroup_limit_format(uint64_t value, char *buf, size_t size) {
        int n;

        if (!buf || size == 0)
                return NULL;
        if (value == CGROUP_LIMIT_MAX)
                n = snprintf(buf, size, "max");
        else
                n = snprintf(buf, size, "%" PRIu64, value);
        if (n < 0 || (size_t) n >= size)
                return NULL;
        return buf;
}

int cgroup_devnum_parse(const char *s, dev_t *ret) {
        _cleanup_free_ char *maj = NULL;
        const char *colon;
        uint32_t a, b;

        colon = strchr(s, ':');
        if (!colon)
                return -EINVAL;
        maj = strndup(s, colon - s);
        if (!maj)
                return -ENOMEM;
        if (safe_atou32(maj, &a) < 0 || safe_atou32(colon + 1, &b) < 0)
                return -EINVAL;
        if (a > KERNEL_MAJOR_MAX || b > KERNEL_MINOR_MAX)
                return -EINVAL;
        *ret = makedev(a, b);
        return 0;
}

/* The path an adopted limit is reported under: the device as the kernel names it. */
static char *devnum_block_path(dev_t devnum) {
        char *p;

        if (asprintf(&p, "/dev/block/%u:%u", major(devnum), minor(devnum)) < 0)
                return NULL;
        return p;
}

int cgroup_io_max_format_line(dev_t devnum, const uint64_t limit[], char **ret) {
        char v[_CGROUP_IO_LIMIT_TYPE_MAX][STRLEN("18446744073709551615") + 1];
        char *s;

        assert_return(limit, -EINVAL);
        assert_return(ret, -EINVAL);

        for (size_t i = 0; i < _CGROUP_IO_LIMIT_TYPE_MAX; i++)
                (void) cgroup_limit_format(limit[i], v[i], sizeof(v[i]));
        if (asprintf(&s, "%u:%u %s=%s %s=%s %s=%s %s=%s", major(devnum), minor(devnum),
                     io_limit_keys[CGROUP_IO_RBPS], v[CGROUP_IO_RBPS], io_limit_keys[CGROUP_IO_WBPS],
                     v[CGROUP_IO_WBPS], io_limit_keys[CGROUP_IO_RIOPS], v[CGROUP_IO_RIOPS],
                     io_limit_keys[CGROUP_IO_WIOPS], v[CGROUP_IO_WIOPS]) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int io_limit_type_from_key(const char *key) {
        for (size_t i = 0; i < _CGROUP_IO_LIMIT_TYPE_MAX; i++)
                if (streq(key, io_limit_keys[i]))
                        return (int) i;
        return -EINVAL;
}

bool cgroup_key_is_valid(const char *s, size_t n) {
        if (n == 0)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '_' ||
                      s[i] == '.'))
                        return false;
        return true;
}

int cgroup_parse_lines(const char *text, const char *field_separators, CGroupLineParser parse_line,
                       void *userdata) {
        _cleanup_strv_free_ char **lines = NULL;
        int r;

        r = strv_split(text, "\n", &lines);
        if (r < 0)
                return r;
        STRV_FOREACH(line, lines) {
                _cleanup_strv_free_ char **f = NULL;

                r = strv_split(*line, field_separators, &f);
                if (r < 0)
                        return r;
                r = parse_line(f, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

int cgroup_io_max_parse(const char *text, CGroupIODeviceLimit **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **lines = NULL;
        CGroupIODeviceLimit *list = NULL;
        size_t n = 0;
        int r;

        assert_return(text, -EINVAL);
        assert_return(ret, -EINVAL);
        assert_return(ret_n, -EINVAL);

        r = strv_split(text, "\n", &lines);
        if (r < 0)
                return r;

        list = new0(CGroupIODeviceLimit, strv_length(lines));
        if (!list)
                return -ENOMEM;

        STRV_FOREACH(line, lines) {
                _cleanup_strv_free_ char **f = NULL;
                CGroupIODeviceLimit *l = list + n;
                bool seen[_CGROUP_IO_LIMIT_TYPE_MAX] = {};
                dev_t devnum;

                r = strv_split(*line, " ", &f);
                if (r < 0)
                        goto fail;
                r = -EINVAL;
                if (strv_isempty(f) || cgroup_devnum_parse(f[0], &devnum) < 0)
                        goto fail;
                for (size_t i = 0; i < n; i++)
                        if (list[i].devnum == devnum)
                                goto fail; /* one line per device */

                l->devnum = devnum;
                for (size_t i = 0; i < _CGROUP_IO_LIMIT_TYPE_MAX; i++)
                        l->limit[i] = CGROUP_LIMIT_MAX;
                l->path = devnum_block_path(devnum);
                if (!l->path) {
                        r = -ENOMEM;
                        goto fail;
                }
                n++;

                for (char **t = f + 1; *t; t++) {
                        const char *eq = strchr(*t, '=');
                        _cleanup_free_ char *key = NULL;
                        int type;

                        if (!eq || !cgroup_key_is_valid(*t, eq - *t))
                                goto fail;
                        key = strndup(*t, eq - *t);
                        if (!key) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        type = io_limit_type_from_key(key);
                        if (type < 0)
                                continue; /* a key a later kernel may add: not ours to interpret */
                        if (seen[type] || limit_parse_token(eq + 1, &l->limit[type]) < 0)
                                goto fail;
                        seen[type] = true;
                }
                /* The kernel prints all four on every line. */
                for (size_t i = 0; i < _CGROUP_IO_LIMIT_TYPE_MAX; i++)
                        if (!seen[i])
                                goto fail;
        }

        if (n == 0)
                list = mfree(list);
        *ret = list;
        *ret_n = n;
        return 0;

fail:
        cgroup_io_limits_free(list, n);
        return r;
}

static const char *const blkio_throttle_files[_CGROUP_IO_LIMIT_TYPE_MAX] = {
        [CGROUP_IO_RBPS] = "blkio.throttle.read_bps_device",
        [CGROUP_IO_WBPS] = "blkio.throttle.write_bps_device",
        [CGROUP_IO_RIOPS] = "blkio.throttle.read_iops_device",
        [CGROUP_IO_WIOPS] = "blkio.throttle.write_iops_device",
};

const char *cgroup_blkio_throttle_file(CGroupIOLimitType t) {
        return t >= 0 && t < _CGROUP_IO_LIMIT_TYPE_MAX ? blkio_throttle_files[t] : NULL;
}

int cgroup_blkio_throttle_parse(const char *text, int type, CGroupIODeviceLimit **list, size_t *n) {
        _cleanup_strv_free_ char **lines = NULL;
        _cleanup_free_ dev_t *devs = NULL;
        _cleanup_free_ uint64_t *values = NULL;
        _cleanup_strv_free_ char **new_paths = NULL;
        CGroupIODeviceLimit *l;
        size_t k = 0, n_new = 0;
        int r;

        assert_return(text, -EINVAL);
        assert_return(type >= 0 && type < _CGROUP_IO_LIMIT_TYPE_MAX, -EINVAL);
        assert_return(list, -EINVAL);
        assert_return(n, -EINVAL);

        r = strv_split(text, "\n", &lines);
        if (r < 0)
                return r;
        devs = new(dev_t, strv_length(lines));
        values = new(uint64_t, strv_length(lines));
        if (!devs || !values)
                return -ENOMEM;

        /* Parse and validate everything before touching *list, so that a failure leaves it as it was. */
        STRV_FOREACH(line, lines) {
                _cleanup_strv_free_ char **f = NULL;

                r = strv_split(*line, " ", &f);
                if (r < 0)
                        return r;
                if (strv_length(f) != 2 || cgroup_devnum_parse(f[0], &devs[k]) < 0 ||
                    safe_atou64(f[1], &values[k]) < 0)
                        return -EINVAL;
                /* Writing 0 removes a limit, so the kernel never shows one. */
                if (values[k] == 0)
                        return -EINVAL;
                for (size_t i = 0; i < k; i++)
                        if (devs[i] == devs[k])
                                return -EINVAL;
                if (!cgroup_io_limits_find(*list, *n, devs[k])) {
                        char *path = devnum_block_path(devs[k]);

                        if (!path)
                                return -ENOMEM;
                        r = strv_consume(&new_paths, path);
                        if (r < 0)
                                return r;
                        n_new++;
                }
                k++;
        }

        if (n_new > 0) {
                l = reallocarray(*list, *n + n_new, sizeof(CGroupIODeviceLimit));
                if (!l)
                        return -ENOMEM;
                *list = l;
        }

        /* Nothing can fail from here on. */
        for (size_t i = 0, p = 0; i < k; i++) {
                CGroupIODeviceLimit *e = cgroup_io_limits_find(*list, *n, devs[i]);
                if (!e) {
                        e = *list + (*n)++;
                        *e = (CGroupIODeviceLimit) { .path = TAKE_PTR(new_paths[p]), .devnum = devs[i] };
                        p++;
                        for (size_t j = 0; j < _CGROUP_IO_LIMIT_TYPE_MAX; j++)
                                e->limit[j] = CGROUP_LIMIT_MAX;
                }
                e->limit[type] = values[i];
        }
        return 0;
}
