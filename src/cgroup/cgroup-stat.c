/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel's usage files parsed (pure): cpu.stat, v2 io.stat, v1 blkio io_service_bytes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "alloc-util.h"
#include "cgroup-util.h"
#include "parse-util.h"
#include "string-util.h"
#include "strv.h"

typedef struct CPUStatKey {
        const char *key;
        uint64_t value;
        bool found;
} CPUStatKey;

/* Flat keyed: "KEY VALUE" per line, all numbers. */
static int cpu_stat_line(char **f, void *userdata) {
        CPUStatKey *k = userdata;
        uint64_t v;

        if (strv_length(f) != 2 || !cgroup_key_is_valid(f[0], strlen(f[0])) || safe_atou64(f[1], &v) < 0)
                return -EINVAL;
        if (streq(f[0], k->key)) {
                if (k->found)
                        return -EINVAL;
                k->value = v;
                k->found = true;
        }
        return 0;
}

int cgroup_cpu_stat_parse(const char *text, const char *key, uint64_t *ret) {
        CPUStatKey k = { .key = key };
        int r;

        assert_return(text, -EINVAL);
        assert_return(key, -EINVAL);

        r = cgroup_parse_lines(text, " ", cpu_stat_line, &k);
        if (r < 0)
                return r;
        if (!k.found)
                return -EINVAL;
        if (ret)
                *ret = k.value;
        return 0;
}

/* Read and write bytes summed over the devices (and v1's operations). */
typedef struct IOBytes {
        uint64_t rbytes;
        uint64_t wbytes;
} IOBytes;

static int add_checked(uint64_t *sum, uint64_t v) {
        if (*sum > UINT64_MAX - v)
                return -EINVAL;
        *sum += v;
        return 0;
}

static int parse_io_bytes(const char *text, CGroupLineParser parse_line, uint64_t *ret_rbytes, uint64_t *ret_wbytes) {
        IOBytes b = {};
        int r;

        assert_return(text, -EINVAL);

        r = cgroup_parse_lines(text, " ", parse_line, &b);
        if (r < 0)
                return r;
        if (ret_rbytes)
                *ret_rbytes = b.rbytes;
        if (ret_wbytes)
                *ret_wbytes = b.wbytes;
        return 0;
}

/* Nested keyed: "MAJ:MIN KEY=VALUE ..." per device. Other keys (dbytes, cost.vrate=1.5 of iocost, ...)
 * are not ours and may have values that are not integers. */
static int io_stat_line(char **f, void *userdata) {
        IOBytes *b = userdata;
        bool seen_r = false, seen_w = false;
        dev_t devnum;

        if (strv_isempty(f) || cgroup_devnum_parse(f[0], &devnum) < 0)
                return -EINVAL;
        for (char **t = f + 1; *t; t++) {
                const char *eq = strchr(*t, '=');
                const char *v;
                uint64_t x;

                if (!eq || !cgroup_key_is_valid(*t, eq - *t))
                        return -EINVAL;
                if ((v = startswith(*t, "rbytes="))) {
                        if (seen_r || safe_atou64(v, &x) < 0 || add_checked(&b->rbytes, x) < 0)
                                return -EINVAL;
                        seen_r = true;
                } else if ((v = startswith(*t, "wbytes="))) {
                        if (seen_w || safe_atou64(v, &x) < 0 || add_checked(&b->wbytes, x) < 0)
                                return -EINVAL;
                        seen_w = true;
                }
        }
        return 0;
}

int cgroup_io_stat_parse(const char *text, uint64_t *ret_rbytes, uint64_t *ret_wbytes) {
        return parse_io_bytes(text, io_stat_line, ret_rbytes, ret_wbytes);
}

/* Sync, Async, Discard, Total, and whatever a later kernel adds: a capitalized word. */
static bool blkio_op_is_valid(const char *s) {
        if (!(s[0] >= 'A' && s[0] <= 'Z'))
                return false;
        for (s++; *s; s++)
                if (!(*s >= 'a' && *s <= 'z'))
                        return false;
        return true;
}

/* "MAJ:MIN Read|Write|Sync|Async|Discard|Total N" per device and operation, then "Total N". */
static int blkio_bytes_line(char **f, void *userdata) {
        IOBytes *b = userdata;
        size_t nf = strv_length(f);
        dev_t devnum;
        uint64_t v;

        if (nf == 2 && streq(f[0], "Total"))
                return safe_atou64(f[1], NULL) < 0 ? -EINVAL : 0;
        if (nf != 3 || cgroup_devnum_parse(f[0], &devnum) < 0 || safe_atou64(f[2], &v) < 0)
                return -EINVAL;
        if (streq(f[1], "Read"))
                return add_checked(&b->rbytes, v);
        if (streq(f[1], "Write"))
                return add_checked(&b->wbytes, v);
        return blkio_op_is_valid(f[1]) ? 0 : -EINVAL;
}

int cgroup_blkio_bytes_parse(const char *text, uint64_t *ret_rbytes, uint64_t *ret_wbytes) {
        return parse_io_bytes(text, blkio_bytes_line, ret_rbytes, ret_wbytes);
}
