/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "host-features.h"
#include "fd-util.h"
#include "fileio.h"
#include "parse-util.h"
#include "path-util.h"
#include "string-util.h"
#include "strv.h"

/* Node ids above this are rejected when parsing; the kernel's MAX_NUMNODES is 1024 at most. */
#define NUMA_NODE_MAX 1023

static const char *const feature_table[_FEATURE_MAX] = {
        [FEATURE_SYSTEMD] = "systemd",     [FEATURE_CGROUP_V2] = "cgroup-v2", [FEATURE_CGROUP_V1] = "cgroup-v1",
        [FEATURE_NUMA] = "numa",           [FEATURE_PAGE_IDLE] = "page-idle", [FEATURE_PSI] = "psi",
        [FEATURE_SLICES] = "slices",
        [FEATURE_CPU_BORROWING] = "cpu-borrowing",
        [FEATURE_KERNEL_BORROWING] = "kernel-borrowing",
        [FEATURE_MEMORY_MIGRATION] = "memory-migration",
        [FEATURE_HOG_LIMITING] = "hog-limiting",
        [FEATURE_KERNEL_LAZY_MIGRATE] = "kernel-lazy-migrate",
};

const char *feature_to_string(FeatureId id) {
        return id >= 0 && id < _FEATURE_MAX ? feature_table[id] : NULL;
}

static int path_exists_under(const char *root, const char *path) {
        _cleanup_free_ char *p = path_join(root, path);
        struct stat st;

        if (!p)
                return -ENOMEM;
        if (stat(p, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        return 1;
}

int features_set(Features *f, FeatureId id, bool available, const char *format, ...) {
        va_list ap;
        char *s;
        int r;

        va_start(ap, format);
        r = vasprintf(&s, format, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        free(f->feature[id].detail);
        f->feature[id] = (Feature){ .available = available, .detail = s };
        return 0;
}

static int detect_cgroups(const char *root, Features *f) {
        _cleanup_strv_free_ char **v2 = NULL, **v1 = NULL;
        _cleanup_free_ char *v2s = NULL, *v1s = NULL;
        int r;

        r = cgroup_detect(root, &f->cgroup_mode, &v2, &v1);
        if (r < 0)
                return r;
        v2s = strv_join(v2, " ");
        v1s = strv_join(v1, " ");
        if (!v2s || !v1s)
                return -ENOMEM;

        switch (f->cgroup_mode) {
        case CGROUP_MODE_UNIFIED:
                r = features_set(f, FEATURE_CGROUP_V2, true, "unified hierarchy at /sys/fs/cgroup, controllers: %s",
                                isempty(v2s) ? "none" : v2s);
                break;
        case CGROUP_MODE_HYBRID:
                r = features_set(f, FEATURE_CGROUP_V2, false,
                                "hybrid hierarchy: cgroup2 at /sys/fs/cgroup/unified has controllers: %s",
                                isempty(v2s) ? "none" : v2s);
                break;
        default:
                r = features_set(f, FEATURE_CGROUP_V2, false, "no cgroup2 hierarchy mounted");
        }
        if (r < 0)
                return r;

        if (strv_isempty(v1))
                return features_set(f, FEATURE_CGROUP_V1, false, "no v1 controller hierarchies mounted");
        return features_set(f, FEATURE_CGROUP_V1, true, "controllers: %s", v1s);
}

static int detect_numa(const char *root, Features *f) {
        _cleanup_free_ char *path = NULL, *online = NULL, *list = NULL;
        _cleanup_free_ uint8_t *mask = NULL;
        size_t size;
        int r;

        path = path_join(root, "sys/devices/system/node/online");
        if (!path)
                return -ENOMEM;
        r = read_one_line_file(path, &online);
        if (r == -ENOENT) {
                f->numa_nodes = 0;
                return features_set(f, FEATURE_NUMA, false,
                                   "no NUMA information (/sys/devices/system/node/online missing)");
        }
        if (r < 0)
                return r;
        r = parse_index_list(online, NUMA_NODE_MAX, &mask, &size);
        if (r < 0)
                return features_set(f, FEATURE_NUMA, false, "cannot parse online node list '%s'", online);

        f->numa_nodes = index_list_count(mask, size);
        list = format_index_list(mask, size);
        if (!list)
                return -ENOMEM;
        if (f->numa_nodes < 2)
                return features_set(f, FEATURE_NUMA, false, "%u node online (%s): nothing to migrate between",
                                   f->numa_nodes, list);
        return features_set(f, FEATURE_NUMA, true, "%u nodes online (%s)", f->numa_nodes, list);
}

/*
 * The kernel interfaces of tonari's kernel patches (kernel/patches) exist in every non-root cgroup
 * with their controller, so the top-level cgroups (init.scope, system.slice, ...) are where to look.
 * Finds the first top-level cgroup with file; *ret_companion tells whether it also has companion.
 * Returns 1 and the cgroup's name, 0 when none has the file, or a negative errno.
 */
static int top_level_cgroup_with(const char *root, const char *file, const char *companion, char **ret_name,
                                 bool *ret_companion) {
        _cleanup_free_ char *top = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        struct stat st;

        top = path_join(root, "sys/fs/cgroup");
        if (!top)
                return -ENOMEM;
        d = opendir(top);
        if (!d)
                return -errno;
        while ((errno = 0, de = readdir(d))) {
                _cleanup_free_ char *path = NULL, *other = NULL;

                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                path = path_join(de->d_name, file);
                other = path_join(de->d_name, companion);
                if (!path || !other)
                        return -ENOMEM;
                if (fstatat(dirfd(d), path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
                        if (errno == ENOENT)
                                continue;
                        return -errno;
                }
                *ret_companion = fstatat(dirfd(d), other, &st, AT_SYMLINK_NOFOLLOW) >= 0;
                *ret_name = strdup(de->d_name);
                return *ret_name ? 1 : -ENOMEM;
        }
        return errno != 0 ? -errno : 0;
}

/*
 * cpu.cfs_borrowing_us, and cpu.cfs_charge_procs with it (0001, 0003). systemd enables the cpu
 * controller in a top-level cgroup only once some unit asks for CPU settings, so on a fresh boot
 * none may have it yet: then the answer is "not yet", and features_refresh() looks again.
 */
static int detect_kernel_borrowing(const char *root, Features *f) {
        _cleanup_free_ char *name = NULL;
        bool charge;
        int r;

        if (f->cgroup_mode != CGROUP_MODE_UNIFIED)
                return features_set(f, FEATURE_KERNEL_BORROWING, false,
                                    "needs the unified cgroup hierarchy (cgroup v2 cpu controller)");
        r = top_level_cgroup_with(root, "cpu.cfs_borrowing_us", "cpu.cfs_charge_procs", &name, &charge);
        if (r < 0)
                return r;
        if (r == 0)
                return features_set(f, FEATURE_KERNEL_BORROWING, false,
                                    "no cpu.cfs_borrowing_us in the top-level cgroups (kernel without tonari's "
                                    "kernel/patches, or the cpu controller not enabled in any of them yet)");
        if (!charge)
                return features_set(f, FEATURE_KERNEL_BORROWING, true,
                                    "cpu.cfs_borrowing_us in /sys/fs/cgroup/%s (no cpu.cfs_charge_procs)", name);
        return features_set(f, FEATURE_KERNEL_BORROWING, true,
                            "cpu.cfs_borrowing_us and cpu.cfs_charge_procs in /sys/fs/cgroup/%s", name);
}

/*
 * cpuset.lazy_migrate, with cpuset.lazy_migrate_policy (0006, 0007): the same, with the cpuset
 * controller, which systemd enables once a unit asks for CPU or memory node settings.
 */
static int detect_kernel_lazy_migrate(const char *root, Features *f) {
        _cleanup_free_ char *name = NULL;
        bool policy;
        int r;

        if (f->cgroup_mode != CGROUP_MODE_UNIFIED)
                return features_set(f, FEATURE_KERNEL_LAZY_MIGRATE, false,
                                    "needs the unified cgroup hierarchy (cgroup v2 cpuset controller)");
        r = top_level_cgroup_with(root, "cpuset.lazy_migrate", "cpuset.lazy_migrate_policy", &name, &policy);
        if (r < 0)
                return r;
        if (r == 0)
                return features_set(f, FEATURE_KERNEL_LAZY_MIGRATE, false,
                                    "no cpuset.lazy_migrate in the top-level cgroups (kernel without tonari's "
                                    "kernel/patches, or the cpuset controller not enabled in any of them yet)");
        if (!policy)
                return features_set(f, FEATURE_KERNEL_LAZY_MIGRATE, true,
                                    "cpuset.lazy_migrate in /sys/fs/cgroup/%s (no cpuset.lazy_migrate_policy: "
                                    "address order only)",
                                    name);
        return features_set(f, FEATURE_KERNEL_LAZY_MIGRATE, true,
                            "cpuset.lazy_migrate and cpuset.lazy_migrate_policy in /sys/fs/cgroup/%s", name);
}

int features_refresh(const char *root, Features *f) {
        int r;

        assert(f);

        /* Once found, an interface stays: only a negative answer can change. */
        if (!f->feature[FEATURE_KERNEL_BORROWING].available) {
                r = detect_kernel_borrowing(root, f);
                if (r < 0)
                        return r;
        }
        if (!f->feature[FEATURE_KERNEL_LAZY_MIGRATE].available)
                return detect_kernel_lazy_migrate(root, f);
        return 0;
}

int features_detect(const char *root, Features *ret) {
        Features f = {};
        int r;

        r = path_exists_under(root, "run/systemd/system");
        if (r < 0)
                goto fail;
        r = r ? features_set(&f, FEATURE_SYSTEMD, true, "systemd is PID 1 (/run/systemd/system exists)")
              : features_set(&f, FEATURE_SYSTEMD, false, "not booted with systemd (/run/systemd/system missing)");
        if (r < 0)
                goto fail;

        r = detect_cgroups(root, &f);
        if (r < 0)
                goto fail;
        r = detect_numa(root, &f);
        if (r < 0)
                goto fail;
        r = detect_kernel_borrowing(root, &f);
        if (r < 0)
                goto fail;
        r = detect_kernel_lazy_migrate(root, &f);
        if (r < 0)
                goto fail;

        r = path_exists_under(root, "sys/kernel/mm/page_idle/bitmap");
        if (r < 0)
                goto fail;
        r = r ? features_set(&f, FEATURE_PAGE_IDLE, true, "/sys/kernel/mm/page_idle/bitmap present")
              : features_set(&f, FEATURE_PAGE_IDLE, false,
                            "no /sys/kernel/mm/page_idle/bitmap (kernel without CONFIG_IDLE_PAGE_TRACKING)");
        if (r < 0)
                goto fail;

        /* Known once the manager has chosen a backend. */
        r = features_set(&f, FEATURE_SLICES, false, "not set up yet");
        if (r >= 0)
                r = features_set(&f, FEATURE_CPU_BORROWING, false, "not set up yet");
        if (r >= 0)
                r = features_set(&f, FEATURE_MEMORY_MIGRATION, false, "not set up yet");
        if (r >= 0)
                r = features_set(&f, FEATURE_HOG_LIMITING, false, "not set up yet");
        if (r < 0)
                goto fail;

        r = path_exists_under(root, "proc/pressure/cpu");
        if (r < 0)
                goto fail;
        r = r ? features_set(&f, FEATURE_PSI, true, "/proc/pressure present")
              : features_set(&f, FEATURE_PSI, false, "no /proc/pressure (kernel without CONFIG_PSI, or psi=0)");
        if (r < 0)
                goto fail;

        *ret = f;
        return 0;

fail:
        features_done(&f);
        return r;
}

void features_done(Features *f) {
        if (!f)
                return;
        for (FeatureId i = 0; i < _FEATURE_MAX; i++)
                f->feature[i].detail = mfree(f->feature[i].detail);
}
