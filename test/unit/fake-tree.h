/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc-util.h"
#include "string-util.h"
#include "tests.h"

/*
 * Fake kernel trees (/proc, /sys, cgroupfs) in a temp dir for the code that takes a root
 * directory. Each check test runs in its own process, so a static root is fine.
 */
static const char *fake_root;

static inline void fake_root_new(void) {
        fake_root = test_tmpdir();
}

/* Writes root/relpath with content, creating parent directories. */
static inline void fake_file(const char *relpath, const char *content) {
        _cleanup_free_ char *p = strjoin(fake_root, "/", relpath);
        FILE *f;

        for (char *s = p + strlen(fake_root) + 1; (s = strchr(s, '/')); s++) {
                *s = '\0';
                (void) mkdir(p, 0755);
                *s = '/';
        }
        f = fopen(p, "we");
        ck_assert_msg(f != NULL, "cannot create %s", p);
        fputs(content, f);
        fclose(f);
}

static inline void fake_dir(const char *relpath) {
        _cleanup_free_ char *keep = strjoin(relpath, "/.keep");
        fake_file(keep, "");
}

#define PROC_CGROUPS_HYBRID                                                                            \
        "#subsys_name\thierarchy\tnum_cgroups\tenabled\n"                                              \
        "cpuset\t3\t1\t1\n"                                                                            \
        "cpu\t1\t1\t1\n"                                                                               \
        "cpuacct\t2\t1\t1\n"                                                                           \
        "blkio\t7\t1\t1\n"                                                                             \
        "memory\t4\t32\t1\n"                                                                           \
        "net_cls\t0\t1\t1\n"                                                                           \
        "hugetlb\t0\t1\t1\n"                                                                           \
        "pids\t8\t1\t1\n"                                                                              \
        "rdma\t9\t1\t0\n"

#define PROC_CGROUPS_UNIFIED                                                                           \
        "#subsys_name\thierarchy\tnum_cgroups\tenabled\n"                                              \
        "cpuset\t0\t40\t1\n"                                                                           \
        "cpu\t0\t40\t1\n"                                                                              \
        "memory\t0\t40\t1\n"                                                                           \
        "pids\t0\t40\t1\n"
