/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "alloc-util.h"
#include "log.h"
#include "slice-util.h"
#include "slice-internal.h"
#include "string-util.h"
#include "strv.h"

/*
 * The cgroupfs backend, for hosts where systemd does not manage the cgroup tree: each slice is the
 * directory tonari.slice/<name> below the configured root, in the v2 hierarchy or in every v1
 * hierarchy; a name that is also a cgroup interface file ("memory.stat") gets a leading '_' there
 * (cgroup_name_escape()). Everything here is synchronous: done() is called before the function
 * returns.
 */

static int cgroupfs_path(const char *name, char **ret) {
        _cleanup_free_ char *dir = NULL;
        char *p;
        int r;

        r = cgroup_name_escape(name, &dir);
        if (r < 0)
                return r;
        p = strjoin(SLICE_CGROUPFS_PARENT "/", dir);
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

static int cgroupfs_adopt(SliceManager *m) {
        _cleanup_strv_free_ char **children = NULL;
        int r;

        r = cgroup_list_children(m->cgroup_root, SLICE_CGROUPFS_PARENT, &children);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;

        STRV_FOREACH(c, children) {
                _cleanup_free_ char *name = NULL;
                Slice *s;

                if (cgroup_name_unescape(*c, &name) < 0 || !slice_name_is_valid(name)) {
                        _cleanup_free_ char *e = cescape(*c);
                        log_warning("Slices: ignoring '%s/%s': not a directory of a valid slice name.",
                                    SLICE_CGROUPFS_PARENT, strna(e));
                        continue;
                }
                r = slice_new(m, name, &s);
                if (r < 0)
                        return r;
                r = cgroupfs_path(name, &s->cgroup);
                if (r < 0)
                        return r;
                r = cgroup_read_settings(m->cgroup_root, s->cgroup, &s->settings);
                if (r < 0)
                        log_warning_errno(r, "Slices: cannot read the settings of '%s', showing defaults: %m", name);
                r = slice_adopted(s);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int cgroupfs_create(Slice *s, CGroupSettingMask mask, SliceDoneFunc done, void *userdata) {
        CGroupRoot *root = s->manager->cgroup_root;
        _cleanup_free_ char *unsupported = NULL;
        int r;

        r = cgroupfs_path(s->name, &s->cgroup);
        if (r < 0)
                return r;

        r = cgroup_create(root, s->cgroup);
        if (r < 0) {
                done(s, r, "cannot create the cgroup", userdata);
                return 0;
        }
        if (r == 0) {
                /* Someone made it behind our back since we adopted what existed. */
                done(s, -EEXIST, "its cgroup already exists", userdata);
                return 0;
        }

        r = cgroup_apply(root, s->cgroup, &s->settings, mask, &unsupported);
        if (r < 0) {
                /* All or nothing: a slice that got only some of its settings must not stay. */
                (void) cgroup_remove(root, s->cgroup);
                done(s, r, unsupported, userdata);
                return 0;
        }
        done(s, 0, NULL, userdata);
        return 0;
}

static int cgroupfs_apply(Slice *s, const CGroupSettings *settings, CGroupSettingMask mask, SliceDoneFunc done,
                          void *userdata) {
        _cleanup_free_ char *unsupported = NULL;
        int r;

        r = cgroup_apply(s->manager->cgroup_root, s->cgroup, settings, mask, &unsupported);
        if (r < 0 && r != -EOPNOTSUPP)
                /* The kernel refused a value after others were written: put back what was in
                 * effect, so the cgroup and the slice's properties keep agreeing. Unsupported
                 * settings are found before anything is written. */
                (void) cgroup_apply(s->manager->cgroup_root, s->cgroup, &s->settings, mask, NULL);
        done(s, r < 0 ? r : 0, unsupported, userdata);
        return 0;
}

static int cgroupfs_attach(Slice *s, const uint32_t *pids, size_t n_pids, SliceDoneFunc done, void *userdata) {
        _cleanup_free_ pid_t *p = new0(pid_t, n_pids);
        _cleanup_free_ char *leaf = NULL;
        size_t failed = SIZE_MAX;
        int r;

        if (!p)
                return -ENOMEM;
        if (s->attach_leaf) {
                leaf = strjoin(s->cgroup, "/", s->attach_leaf);
                if (!leaf)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n_pids; i++)
                p[i] = (pid_t) pids[i];
        /* All or nothing: if one process cannot be moved, none is (cgroup_attach_many()). */
        r = cgroup_attach_many(s->manager->cgroup_root, leaf ?: s->cgroup, p, n_pids, &failed);
        if (r < 0) {
                char which[32] = "", msg[128];

                if (failed < n_pids)
                        (void) snprintf(which, sizeof(which), "process %" PRIu32 ": ", pids[failed]);
                (void) snprintf(msg, sizeof(msg), "%s%s; no process was moved", which, strerror(ERRNO_VALUE(r)));
                done(s, r, msg, userdata);
                return 0;
        }
        done(s, 0, NULL, userdata);
        return 0;
}

static int cgroupfs_remove(Slice *s, SliceDoneFunc done, void *userdata) {
        /* All or nothing as well (cgroup_remove()). */
        int r = cgroup_remove(s->manager->cgroup_root, s->cgroup);
        done(s, r == -ENOENT ? 0 : r, r == -EBUSY ? "it still has processes" : NULL, userdata);
        return 0;
}

/* One implementation; the name tells users which hierarchy it writes. */
SLICE_BACKEND_DEFINE(slice_backend_cgroupfs_v2, "cgroupfs-v2", cgroupfs);
SLICE_BACKEND_DEFINE(slice_backend_cgroupfs_v1, "cgroupfs-v1", cgroupfs);
