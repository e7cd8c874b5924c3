/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* CGroupSettings: freeing, copying, looking up and validating (pure). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-util.h"
#include "cgroup-util.h"

bool cgroup_weight_is_valid(uint64_t w) {
        return w == CGROUP_WEIGHT_UNSET || (w >= CGROUP_WEIGHT_MIN && w <= CGROUP_WEIGHT_MAX);
}

bool cgroup_io_limit_is_none(const CGroupIODeviceLimit *l) {
        for (size_t t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++)
                if (l->limit[t] != CGROUP_LIMIT_MAX)
                        return false;
        return true;
}

void cgroup_io_limits_free(CGroupIODeviceLimit *l, size_t n) {
        for (size_t i = 0; i < n; i++)
                free(l[i].path);
        free(l);
}

void cgroup_settings_done(CGroupSettings *s) {
        if (!s)
                return;
        cgroup_io_limits_free(s->io_limits, s->n_io_limits);
        free(s->allowed_cpus);
        free(s->allowed_mems);
        *s = CGROUP_SETTINGS_INIT;
}

static int mask_copy(const uint8_t *mask, size_t size, uint8_t **ret) {
        uint8_t *c;

        if (!mask) {
                *ret = NULL;
                return 0;
        }
        c = new(uint8_t, size);
        if (!c)
                return -ENOMEM;
        if (size > 0)
                memcpy(c, mask, size);
        *ret = c;
        return 0;
}

/* dst is overwritten, not freed: pass an empty one. */
int cgroup_settings_copy(CGroupSettings *dst, const CGroupSettings *src) {
        _cleanup_(cgroup_settings_done) CGroupSettings c = CGROUP_SETTINGS_INIT;
        int r;

        assert_return(dst, -EINVAL);
        assert_return(src, -EINVAL);

        c.cpu_weight = src->cpu_weight;
        c.cpu_quota_per_sec_usec = src->cpu_quota_per_sec_usec;
        c.cpu_quota_period_usec = src->cpu_quota_period_usec;
        c.io_weight = src->io_weight;
        c.memory_max = src->memory_max;
        c.memory_high = src->memory_high;

        if (src->n_io_limits > 0) {
                c.io_limits = new0(CGroupIODeviceLimit, src->n_io_limits);
                if (!c.io_limits)
                        return -ENOMEM;
                for (size_t i = 0; i < src->n_io_limits; i++) {
                        CGroupIODeviceLimit *l = c.io_limits + i;

                        *l = src->io_limits[i];
                        l->path = NULL;
                        c.n_io_limits++; /* so that the cleanup frees what is already copied */
                        if (src->io_limits[i].path) {
                                l->path = strdup(src->io_limits[i].path);
                                if (!l->path)
                                        return -ENOMEM;
                        }
                }
        }

        r = mask_copy(src->allowed_cpus, src->allowed_cpus_size, &c.allowed_cpus);
        if (r < 0)
                return r;
        c.allowed_cpus_size = src->allowed_cpus_size;
        r = mask_copy(src->allowed_mems, src->allowed_mems_size, &c.allowed_mems);
        if (r < 0)
                return r;
        c.allowed_mems_size = src->allowed_mems_size;

        *dst = c;
        c = CGROUP_SETTINGS_INIT;
        return 0;
}

CGroupIODeviceLimit *cgroup_io_limits_find(CGroupIODeviceLimit *l, size_t n, dev_t devnum) {
        for (size_t i = 0; i < n; i++)
                if (l[i].devnum == devnum)
                        return l + i;
        return NULL;
}

CGroupIODeviceLimit *cgroup_settings_find_io_limit(const CGroupSettings *s, dev_t devnum) {
        return s ? cgroup_io_limits_find(s->io_limits, s->n_io_limits, devnum) : NULL;
}
