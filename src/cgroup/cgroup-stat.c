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

int cgroup_cpu_stat_parse(const char *text, const char *key, uint64_t *ret) {
        _cleanup_strv_free_ char **lines = NULL;
        uint64_t value = 0;
        bool found = false;
        int r;

        assert_return(text, -EINVAL);
        assert_return(key, -EINVAL);

        r = strv_split(text, "\n", &lines);
        if (r < 0)
                return r;
        /* Flat keyed: "KEY VALUE" per line, all numbers. */
        STRV_FOREACH(line, lines) {
                _cleanup_strv_free_ char **f = NULL;
                uint64_t v;

                r = strv_split(*line, " ", &f);
                if (r < 0)
                        return r;
                if (strv_length(f) != 2 || !cgroup_key_is_valid(f[0], strlen(f[0])) || safe_atou64(f[1], &v) < 0)
                        return -EINVAL;
                if (streq(f[0], key)) {
                        if (found)
                                return -EINVAL;
                        value = v;
                        found = true;
                }
        }
        if (!found)
                return -EINVAL;
        if (ret)
                *ret = value;
        return 0;
}

static int add_checked(uint64_t *sum, uint64_t v) {
        if (*sum > UINT64_MAX - v)
                return -EINVAL;
        *sum += v;
        return 0;
}

int cgroup_io_stat_parse(const char *text, uint64_t *ret_rbytes, uint64_t *ret_wbytes) {
        _cleanup_strv_free_ char **lines = NULL;
        uint64_t rbytes = 0, wbytes = 0;
        int r;

        assert_return(text, -EINVAL);

        r = strv_split(text, "\n", &lines);
        if (r < 0)
                return r;
        /* Nested keyed: "MAJ:MIN KEY=VALUE ..." per device. Other keys (dbytes, cost.vrate=1.5 of
         * iocost, ...) are not ours and may have values that are not integers. */
        STRV_FOREACH(line, lines) {
                _cleanup_strv_free_ char **f = NULL;
                bool seen_r = false, seen_w = false;
                dev_t devnum;

                r = strv_split(*line, " ", &f);
                if (r < 0)
                        return r;
                if (strv_isempty(f) || cgroup_devnum_parse(f[0], &devnum) < 0)
                        return -EINVAL;
                for (char **t = f + 1; *t; t++) {
                        const char *eq = strchr(*t, '=');
                        const char *v;
                        uint64_t x;

                        if (!eq || !cgroup_key_is_valid(*t, eq - *t))
                                return -EINVAL;
                        if ((v = startswith(*t, "rbytes="))) {
                                if (seen_r || safe_atou64(v, &x) < 0 || add_checked(&rbytes, x) < 0)
                                        return -EINVAL;
                                seen_r = true;
                        } else if ((v = startswith(*t, "wbytes="))) {
                                if (seen_w || safe_atou64(v, &x) < 0 || add_checked(&wbytes, x) < 0)
                                        return -EINVAL;
                                seen_w = true;
                        }
                }
        }

        if (ret_rbytes)
                *ret_rbytes = rbytes;
        if (ret_wbytes)
                *ret_wbytes = wbytes;
        return 0;
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

int cgroup_blkio_bytes_parse(const char *text, uint64_t *ret_rbytes, uint64_t *ret_wbytes) {
        _cleanup_strv_free_ char **lines = NULL;
        uint64_t rbytes = 0, wbytes = 0;
        int r;

        assert_return(text, -EINVAL);

        r = strv_split(text, "\n", &lines);
        if (r < 0)
                return r;
        /* "MAJ:MIN Read|Write|Sync|Async|Discard|Total N" per device and operation, then "Total N". */
        STRV_FOREACH(line, lines) {
                _cleanup_strv_free_ char **f = NULL;
                size_t nf;
                dev_t devnum;
                uint64_t v;

                r = strv_split(*line, " ", &f);
                if (r < 0)
                        return r;
                nf = strv_length(f);
                if (nf == 2 && streq(f[0], "Total")) {
                        if (safe_atou64(f[1], NULL) < 0)
                                return -EINVAL;
                        continue;
                }
                if (nf != 3 || cgroup_devnum_parse(f[0], &devnum) < 0 || safe_atou64(f[2], &v) < 0)
                        return -EINVAL;
                if (streq(f[1], "Read")) {
                        if (add_checked(&rbytes, v) < 0)
                                return -EINVAL;
                } else if (streq(f[1], "Write")) {
                        if (add_checked(&wbytes, v) < 0)
                                return -EINVAL;
                } else if (!blkio_op_is_valid(f[1]))
                        return -EINVAL;
        }

        if (ret_rbytes)
                *ret_rbytes = rbytes;
        if (ret_wbytes)
                *ret_wbytes = wbytes;
        return 0;
}
