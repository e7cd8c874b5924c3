/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Private to src/cgroup/: its library is built with -DTONARI_FOLDER_CGROUP (meson.build), nothing else is. */
#ifndef TONARI_FOLDER_CGROUP
#error "cgroup-internal.h is private to src/cgroup/; use cgroup.h"
#endif

/*
 * What the files behind cgroup.h share: the CGroupRoot itself and the primitives of cgroup-root.c
 * that the tree, CPU, apply and read files build on. Private to src/cgroup: callers use cgroup.h.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "cgroup.h"

struct CGroupRoot {
        char *dir;
        int version;
        /*
         * What the loops over hierarchies walk: v1, the controller directories that exist; v2, one
         * entry "" (the controller argument of a path is ignored there).
         */
        char **hierarchies;
        char **v2_controllers; /* v2: the root's cgroup.controllers */
        char *proc;            /* procfs, for where a process was before a move ("/proc") */
        /*
         * Whether the hierarchies are the kernel's cgroup file systems. Anything else is a fake tree
         * (tests), where interface files are plain files: a write creates a missing one, as the
         * kernel would have created it with the cgroup, and removing a cgroup removes them first,
         * as they go with the cgroup on the kernel's. There, a missing file stays an error.
         */
        bool kernel;
};

/* The hierarchy whose cgroup.procs and children stand for the cgroup on v1. */
const char *cgroup_primary_hierarchy(const CGroupRoot *r) _pure_;

/* "" is the root cgroup; anything else is relative and normalized: "a/b", never "/a", "a/../b",
 * "a//b", "a/", "." or control characters. */
int cgroup_path_check(const char *path);
/* cgroup_path_check(), and path is not the root cgroup: what create and remove act on. */
int cgroup_path_check_not_root(const char *path);
/* <dir>[/<controller>][/<path>][/<file>]; file may be NULL for the cgroup's directory. */
int cgroup_fs_path(const CGroupRoot *r, const char *controller, const char *path, const char *file,
                   char **ret);
/* The parent of a cgroup path: "a/b" → "a", "a" → "" (the root). */
char *cgroup_path_parent(const char *path);

/* The file's text without surrounding whitespace (the kernel ends every value with a newline). */
int cgroup_read_value(CGroupRoot *r, const char *controller, const char *path, const char *file, char **ret);
int cgroup_read_u64(CGroupRoot *r, const char *controller, const char *path, const char *file, uint64_t *ret);
int cgroup_read_i64(CGroupRoot *r, const char *controller, const char *path, const char *file, int64_t *ret);
int cgroup_write_u64(CGroupRoot *r, const char *controller, const char *path, const char *file, uint64_t v);
int cgroup_write_i64(CGroupRoot *r, const char *controller, const char *path, const char *file, int64_t v);

/* 1 if the cgroup's directory exists in hierarchy h, 0 if not, -ENOTDIR if the name is a file. */
int cgroup_dir_exists(CGroupRoot *r, const char *h, const char *path);
/* cgroup_exists(), with -ENOENT for "no": for the functions that act on an existing cgroup. */
int cgroup_must_exist(CGroupRoot *r, const char *path);
/* The subdirectories of path in hierarchy h (names only, sorted). */
int cgroup_list_subdirs(CGroupRoot *r, const char *h, const char *path, char ***ret);
/* The processes in cgroup.procs of path in hierarchy h, sorted, each once. */
int cgroup_read_pids(CGroupRoot *r, const char *h, const char *path, pid_t **ret, size_t *ret_n);

/* v1 cpu.cfs_quota_us (-1: none) and cpu.cfs_period_us, written in an order the kernel accepts. */
int cgroup_v1_write_cpu_quota(CGroupRoot *r, const char *path, int64_t quota, uint64_t period);
