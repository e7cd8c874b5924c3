/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Names of cgroups and the directories they live in (pure). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-util.h"
#include "cgroup-util.h"
#include "string-util.h"

/* The prefixes of the kernel's cgroup interface files (v1 and v2, Linux 6.x): "cgroup." for the
 * core, one per controller, and "irq." for v2's irq.pressure. */
static const char *const kernel_file_prefixes[] = {
        "cgroup", "blkio", "cpu", "cpuacct", "cpuset", "debug", "devices", "dmem", "freezer", "hugetlb",
        "io", "irq", "memory", "misc", "net_cls", "net_prio", "perf_event", "pids", "rdma",
};
/* v1's core files without a prefix. */
static const char *const kernel_plain_files[] = { "tasks", "notify_on_release", "release_agent" };

static bool cgroup_name_is_reserved(const char *name) {
        const char *dot = strchr(name, '.');

        FOREACH_ELEMENT(f, kernel_plain_files)
                if (streq(name, *f))
                        return true;
        if (!dot)
                return false;
        FOREACH_ELEMENT(p, kernel_file_prefixes)
                if (strlen(*p) == (size_t) (dot - name) && strneq(name, *p, dot - name))
                        return true;
        return false;
}

bool cgroup_name_needs_escape(const char *name) {
        /* "_x" needs it exactly if "x" does, or "_x" would read as the escaped "x"; no reserved name
         * starts with '_'. */
        return cgroup_name_is_reserved(name + strspn(name, "_"));
}

int cgroup_name_escape(const char *name, char **ret) {
        char *s;

        assert_return(name && ret, -EINVAL);

        s = cgroup_name_needs_escape(name) ? strjoin("_", name) : strdup(name);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int cgroup_name_unescape(const char *dir, char **ret) {
        const char *name = dir;
        char *s;

        assert_return(dir && ret, -EINVAL);

        if (dir[0] == '_' && cgroup_name_needs_escape(dir + 1))
                name = dir + 1;
        else if (cgroup_name_needs_escape(dir))
                return -EINVAL; /* a reserved name without its '_': not a directory we make */
        s = strdup(name);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}
