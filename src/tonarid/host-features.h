/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "cgroup-util.h"

/*
 * What this host offers the capabilities that build on it. Probed at start-up, and what can appear
 * later (the kernel's borrowing files, once the cpu controller is enabled) again on every read;
 * exported as the Features property: (name, available, detail), where detail says what was found
 * or why not.
 */
typedef enum FeatureId {
        FEATURE_SYSTEMD,   /* systemd is PID 1: slices can be systemd units */
        FEATURE_CGROUP_V2, /* a cgroup2 hierarchy with controllers */
        FEATURE_CGROUP_V1, /* v1 controller hierarchies */
        FEATURE_NUMA,      /* more than one NUMA node online */
        FEATURE_PAGE_IDLE, /* idle page tracking, for referenced-first migration */
        FEATURE_PSI,       /* pressure stall information */
        FEATURE_SLICES,    /* tonari's slices, and which backend realizes them (set by the manager) */
        FEATURE_CPU_BORROWING, /* charging helpers' CPU time to slices, and how it is enforced */
        FEATURE_KERNEL_BORROWING, /* the kernel's cpu.cfs_borrowing_us (tonari's kernel/patches) */
        FEATURE_MEMORY_MIGRATION, /* lazy NUMA migration jobs, and where referenced bits come from */
        FEATURE_HOG_LIMITING,  /* taskstats usable for hog limiting, or why not (set by the manager) */
        FEATURE_KERNEL_LAZY_MIGRATE, /* the kernel's cpuset.lazy_migrate (tonari's kernel/patches) */
        _FEATURE_MAX,
} FeatureId;

typedef struct Feature {
        bool available;
        char *detail;
} Feature;

typedef struct Features {
        Feature feature[_FEATURE_MAX];
        CGroupMode cgroup_mode;
        unsigned numa_nodes; /* 0 when the kernel exposes no node information */
} Features;

const char *feature_to_string(FeatureId id) _const_;

/* Probes the system whose filesystem starts at root ("/" normally, a fake tree in tests). */
int features_detect(const char *root, Features *ret);
void features_done(Features *f);
/* Probes again what may have appeared since: the kernel-borrowing and kernel-lazy-migrate entries
 * while they are negative. */
int features_refresh(const char *root, Features *f);
/* Sets one entry; detail is formatted. */
int features_set(Features *f, FeatureId id, bool available, const char *format, ...) _printf_(4, 5);
