/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Which cgroup hierarchies a system has mounted (CGroupMode), from the files the kernel exposes under
 * a root directory that tests replace with a fake tree.
 */
#include <errno.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "cgroup-util.h"
#include "fileio.h"
#include "parse-util.h"
#include "path-util.h"
#include "strv.h"

static const char *const cgroup_mode_table[_CGROUP_MODE_MAX] = {
        [CGROUP_MODE_NONE] = "none",
        [CGROUP_MODE_LEGACY] = "legacy",
        [CGROUP_MODE_HYBRID] = "hybrid",
        [CGROUP_MODE_UNIFIED] = "unified",
};

const char *cgroup_mode_to_string(CGroupMode m) {
        return m >= 0 && m < _CGROUP_MODE_MAX ? cgroup_mode_table[m] : NULL;
}

/* "subsys_name hierarchy num_cgroups enabled"; the header line is a comment ("#subsys_name ..."). */
static int proc_cgroups_line(char **f, void *userdata) {
        char ***controllers = userdata;
        unsigned hierarchy, enabled;

        if (!strv_isempty(f) && f[0][0] == '#')
                return 0;
        if (strv_length(f) != 4 || safe_atou(f[1], &hierarchy) < 0 || safe_atou(f[3], &enabled) < 0)
                return -EBADMSG;
        if (hierarchy == 0 || enabled == 0)
                return 0;
        return strv_extend(controllers, f[0]);
}

int cgroup_parse_proc_cgroups(const char *text, char ***ret_controllers) {
        _cleanup_strv_free_ char **controllers = NULL;
        int r;

        r = cgroup_parse_lines(text, " \t", proc_cgroups_line, &controllers);
        if (r < 0)
                return r;
        *ret_controllers = TAKE_PTR(controllers);
        return 0;
}

static int read_controllers(const char *root, const char *file, char ***ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        int r;

        path = path_join(root, file);
        if (!path)
                return -ENOMEM;
        r = read_full_file(path, &text, NULL);
        if (r < 0)
                return r;
        return strv_split(text, " \n", ret);
}

int cgroup_detect(const char *root, CGroupMode *ret_mode, char ***ret_v2_controllers,
                  char ***ret_v1_controllers) {
        _cleanup_strv_free_ char **v2 = NULL, **v1 = NULL;
        _cleanup_free_ char *path = NULL, *text = NULL;
        CGroupMode mode;
        int r;

        path = path_join(root, "proc/cgroups");
        if (!path)
                return -ENOMEM;
        r = read_full_file(path, &text, NULL);
        if (r >= 0) {
                r = cgroup_parse_proc_cgroups(text, &v1);
                if (r < 0)
                        return r;
        } else if (r != -ENOENT)
                return r;

        r = read_controllers(root, "sys/fs/cgroup/cgroup.controllers", &v2);
        if (r >= 0)
                mode = CGROUP_MODE_UNIFIED;
        else if (r != -ENOENT)
                return r;
        else {
                r = read_controllers(root, "sys/fs/cgroup/unified/cgroup.controllers", &v2);
                if (r >= 0)
                        mode = CGROUP_MODE_HYBRID;
                else if (r != -ENOENT)
                        return r;
                else
                        mode = strv_isempty(v1) ? CGROUP_MODE_NONE : CGROUP_MODE_LEGACY;
        }

        *ret_mode = mode;
        if (ret_v2_controllers)
                *ret_v2_controllers = TAKE_PTR(v2);
        if (ret_v1_controllers)
                *ret_v1_controllers = TAKE_PTR(v1);
        return 0;
}
