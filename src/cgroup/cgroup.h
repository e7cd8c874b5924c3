/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup-util.h"
#include "macro.h"

/*
 * The one reader and writer of cgroup interface files, for cgroup v2 and v1.
 *
 * A CGroupRoot is a cgroup file system rooted at a directory: normally /sys/fs/cgroup, in tests
 * a fake tree. If <dir>/cgroup.controllers exists it is a v2 hierarchy; otherwise each v1
 * controller hierarchy is expected at <dir>/<controller> (cpu, cpuacct, cpuset, blkio, memory,
 * pids; Debian's co-mounted "cpu,cpuacct" is reached through its symlinks). Paths of cgroups are
 * relative to the root ("tonari.slice/web") and are the same in every v1 hierarchy.
 *
 * Settings use systemd's units and meaning (systemd.resource-control(5)); this layer maps them
 * to the kernel files of the version at hand. What a version cannot express fails with
 * -EOPNOTSUPP and names the setting.
 */

typedef struct CGroupRoot CGroupRoot;

/* cgroup-root.c: the root and the file primitives. */

/* Opens the cgroup file system at dir; -ENOMEDIUM if neither a v2 nor any v1 hierarchy is there. */
int cgroup_root_new(const char *dir, CGroupRoot **ret);
CGroupRoot *cgroup_root_free(CGroupRoot *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(CGroupRoot *, cgroup_root_free);

/* procfs for cgroup_attach_many() to find where processes are ("/proc"; a fake tree in tests). */
int cgroup_root_set_proc(CGroupRoot *r, const char *proc);

/* 1 or 2. */
int cgroup_root_version(const CGroupRoot *r) _pure_;
const char *cgroup_root_dir(const CGroupRoot *r) _pure_;
/* v2: listed in the root's cgroup.controllers; v1: its hierarchy directory exists. */
bool cgroup_root_has_controller(const CGroupRoot *r, const char *controller);

/*
 * The primitive every function below uses: one interface file. controller selects the v1
 * hierarchy and is ignored on v2. path and file are validated (no "..", no absolute path).
 */
int cgroup_read_file(CGroupRoot *r, const char *controller, const char *path, const char *file, char **ret);
int cgroup_write_file(CGroupRoot *r, const char *controller, const char *path, const char *file,
                      const char *value);

/* 1 if path is a cgroup (in any hierarchy), 0 if not, -ENOTDIR if the name is an interface file. */
int cgroup_exists(CGroupRoot *r, const char *path);
/* The child cgroups of path (names only, sorted). */
int cgroup_list_children(CGroupRoot *r, const char *path, char ***ret);
/* The processes in path itself (v2 cgroup.procs; v1 the cpu hierarchy, else the first one). */
int cgroup_get_pids(CGroupRoot *r, const char *path, pid_t **ret, size_t *ret_n);

/* cgroup-tree.c: changes to the tree, all or nothing. */

/*
 * Creates path (and missing parents). v2: enables cpu, io, memory, pids, cpuset in each parent's
 * cgroup.subtree_control as far as the root offers them. v1: creates the directory in every
 * hierarchy; in cpuset, copies cpuset.cpus and cpuset.mems from the parent first (the kernel
 * refuses tasks in an empty cpuset). Returns 1 if created, 0 if it existed. A name taken by
 * something that is not a directory (an interface file of the parent) fails with -ENOTDIR. On
 * failure the directories this call made are removed again, in every hierarchy.
 */
int cgroup_create(CGroupRoot *r, const char *path);
/*
 * v2, inside a delegated subtree: creates parent/leaf, moves every process of parent into it and
 * enables controllers (NULL-terminated names, e.g. "cpu") in parent's cgroup.subtree_control,
 * so parent's children can be limited while parent itself holds no process. Never writes above
 * parent. Returns 1 if it created the leaf or moved processes, 0 if there was nothing to do.
 */
int cgroup_make_leaf(CGroupRoot *r, const char *parent, const char *leaf, const char *const *controllers);
/*
 * Removes path in every hierarchy; -EBUSY while it has processes or children. All or nothing: if
 * the kernel refuses one hierarchy after others are gone, those are made again with the settings
 * cgroup_read_settings() found before. Returns 1 if something was removed, 0 if nothing was there.
 */
int cgroup_remove(CGroupRoot *r, const char *path);

/*
 * Moves the processes into path (every v1 hierarchy). All or nothing: where that takes more than one
 * write, each process's cgroup in each hierarchy is read from procfs first, and if the kernel
 * refuses a move (-ESRCH: a process is gone), every process moved so far is put back, and
 * *failed (if given) is the index of the process that failed. -ENOENT if path is not a cgroup
 * in every hierarchy.
 */
int cgroup_attach_many(CGroupRoot *r, const char *path, const pid_t *pids, size_t n_pids, size_t *failed);
int cgroup_attach(CGroupRoot *r, const char *path, pid_t pid);

/* cgroup-cpu.c: CFS bandwidth. */

/*
 * Writes one CFS bandwidth limit: quota_usec of CPU time per period_usec (USEC_INFINITY: no
 * limit). v2 cpu.max; v1 cpu.cfs_quota_us and cpu.cfs_period_us in the order the kernel accepts.
 * -ERANGE for a quota below 1 ms or a period outside 1 ms..1 s.
 */
int cgroup_set_cpu_max(CGroupRoot *r, const char *path, usec_t quota_usec, usec_t period_usec);
/*
 * How many CFS bandwidth periods of path have ended (cpu.stat nr_periods, v2 and v1). The count
 * only moves while a limit is set and the cgroup runs; it tells where the kernel's periods start.
 */
int cgroup_read_cpu_periods(CGroupRoot *r, const char *path, uint64_t *ret);

/* cgroup-apply.c */

/*
 * Writes the settings selected by mask. The first setting the hierarchy cannot express fails
 * with -EOPNOTSUPP and *ret_unsupported (if given) names it with its systemd name and the reason,
 * e.g. "MemoryHigh= (cgroup v1 has no memory.high)"; settings before it may have been written.
 */
int cgroup_apply(CGroupRoot *r, const char *path, const CGroupSettings *s, CGroupSettingMask mask,
                 char **ret_unsupported);

/* cgroup-read.c */

/*
 * The inode number of path's directory (v1: in the hierarchy cgroup_get_pids() reads). The kernel
 * gives every cgroup it creates a new one and does not reuse them while it runs (on v2 it is the
 * cgroup ID): a cgroup removed and made again under the same path is told apart by it.
 */
int cgroup_get_id(CGroupRoot *r, const char *path, uint64_t *ret);
/* Reads back what cgroup_apply() writes (for adoption after a restart). */
int cgroup_read_settings(CGroupRoot *r, const char *path, CGroupSettings *ret);
int cgroup_read_usage(CGroupRoot *r, const char *path, CGroupUsage *ret);
/* The CPU time path's processes used so far, µs (v2 cpu.stat usage_usec, v1 cpuacct.usage). */
int cgroup_read_cpu_usage(CGroupRoot *r, const char *path, usec_t *ret);
