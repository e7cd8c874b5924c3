/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "macro.h"

/* How the cgroup hierarchies are mounted under <root>/sys/fs/cgroup. */
typedef enum CGroupMode {
        CGROUP_MODE_NONE,    /* nothing mounted */
        CGROUP_MODE_LEGACY,  /* v1 controller hierarchies only */
        CGROUP_MODE_HYBRID,  /* v1 controllers, plus cgroup2 at /sys/fs/cgroup/unified */
        CGROUP_MODE_UNIFIED, /* cgroup2 at /sys/fs/cgroup */
        _CGROUP_MODE_MAX,
} CGroupMode;

const char *cgroup_mode_to_string(CGroupMode m) _const_;

/*
 * Parses the text of /proc/cgroups and returns the controllers that are enabled and attached to a
 * v1 hierarchy (hierarchy id != 0), in file order.
 */
int cgroup_parse_proc_cgroups(const char *text, char ***ret_controllers);

/*
 * Detects the cgroup mode of the system whose filesystem starts at root ("/" normally; a fake tree
 * in tests) from the files the kernel exposes: <root>/sys/fs/cgroup{,/unified}/cgroup.controllers
 * and <root>/proc/cgroups. Returns the v2 controllers (of the cgroup2 root; NULL if none is
 * mounted) and the v1 controllers with a hierarchy.
 */
int cgroup_detect(const char *root, CGroupMode *ret_mode, char ***ret_v2_controllers, char ***ret_v1_controllers);
