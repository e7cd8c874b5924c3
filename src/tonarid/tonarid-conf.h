/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <limits.h>
#include <stdio.h>
#include <syslog.h>

#include "borrow-kernel-policy.h"
#include "borrow-ledger.h"
#include "conf-parser.h"
#include "limiter-policy.h"
#include "log.h"
#include "migrate-job.h"
#include "slice.h"

/*
 * tonarid.conf: the daemon's settings. Every field has a built-in default (below), documented in
 * tonarid.conf(5) and in the shipped tonarid.conf, where each setting appears commented out with
 * its default value; a test checks that the three agree.
 */
typedef struct ManagerConfig {
        int log_level;                      /* [Manager] LogLevel=, syslog priority */
        LogTarget log_target;               /* [Manager] LogTarget= */
        char runtime_directory[PATH_MAX];   /* [Manager] RuntimeDirectory=, state kept across restarts */
        SliceBackendType slice_backend;     /* [Slices] Backend= */
        char slice_cgroup_root[PATH_MAX];   /* [Slices] CgroupRoot=, for the cgroupfs backend */
        usec_t borrow_min_quota_usec;       /* [Borrow] MinQuotaSec= */
        usec_t borrow_max_debt_usec;        /* [Borrow] MaxDebtSec= */
        unsigned borrow_repay_percent;      /* [Borrow] RepayPerPeriod= */
        BorrowEnforcementMode borrow_enforcement; /* [Borrow] Enforcement= */
        ConfigIdList borrow_allow_users;    /* [Borrow] AllowUsers= */
        ConfigIdList borrow_allow_groups;   /* [Borrow] AllowGroups= */
        usec_t hog_interval_usec;           /* [HogLimiting] MonitorIntervalSec= */
        usec_t hog_window_usec;             /* [HogLimiting] WindowSec= */
        uint64_t hog_io_limit_bytes_per_sec; /* [HogLimiting] IOLimitBytesPerSec= */
        unsigned hog_cpu_weight;            /* [HogLimiting] CPUWeight= */
        unsigned hog_waste_percent;         /* [HogLimiting] IdleLimitPercent= */
        usec_t hog_holdoff_usec;            /* [HogLimiting] HoldOffSec= */
        MigrateDefaults migrate;            /* [Migration] MemoryMigration=, MigrationBatchPages=,
                                             * MigrationIntervalSec=, MigrationCPUBudget= */
} ManagerConfig;

/*
 * LogLevel=info: every action on a tenant is logged at info (see STYLE); debug is for developers.
 * Backend=auto: systemd where it manages the tree, cgroupfs elsewhere. CgroupRoot=/sys/fs/cgroup:
 * where the kernel mounts cgroups. RuntimeDirectory=/run/tonari: what systemd's RuntimeDirectory=
 * gives the unit (kept across restarts by RuntimeDirectoryPreserve=yes, gone at reboot, as is
 * the debt it holds). MinQuotaSec=1ms: the smallest CFS quota the kernel takes. MaxDebtSec=10s:
 * see BORROW_MAX_DEBT_DEFAULT_USEC. RepayPerPeriod=50%: half the debt per period damps the swing
 * described in borrow-ledger.h and still clears a debt within a few periods. Enforcement=auto: the kernel's
 * borrowing files where tonari's kernel has them (borrow-kernel-policy.h), the userspace ledger elsewhere. AllowUsers=/AllowGroups= empty: only root charges.
 * [HogLimiting]: the seed paper's best settings (see LIMITER_PARAMS_DEFAULT): MonitorIntervalSec=3s (§5.2),
 * WindowSec=10s (§4), IOLimitBytesPerSec=5000000 (§5.1.1, 5 MB/s), CPUWeight=1 (§5.1.2).
 * [Migration]: MIGRATE_DEFAULTS, seed 002's: mild, n = 45000 pages, t = 1s, no CPU budget.
 */
#define MANAGER_CONFIG_DEFAULTS                                                                        \
        ((ManagerConfig){ .log_level = LOG_INFO,                                                       \
                          .log_target = LOG_TARGET_AUTO,                                               \
                          .runtime_directory = "/run/tonari",                                          \
                          .slice_backend = SLICE_BACKEND_AUTO,                                         \
                          .slice_cgroup_root = "/sys/fs/cgroup",                                       \
                          .borrow_min_quota_usec = BORROW_FLOOR_DEFAULT_USEC,                          \
                          .borrow_max_debt_usec = BORROW_MAX_DEBT_DEFAULT_USEC,                        \
                          .borrow_repay_percent = BORROW_REPAY_DEFAULT_PERCENT,                        \
                          .borrow_enforcement = BORROW_ENFORCEMENT_MODE_AUTO,                          \
                          .hog_interval_usec = 3 * USEC_PER_SEC,                                       \
                          .hog_window_usec = 10 * USEC_PER_SEC,                                        \
                          .hog_io_limit_bytes_per_sec = 5000000,                                       \
                          .hog_cpu_weight = 1,                                                         \
                          .hog_waste_percent = 25,                                                     \
                          .hog_holdoff_usec = 30 * USEC_PER_SEC,                                       \
                          .migrate = MIGRATE_DEFAULTS })

/*
 * Loads path and the *.conf files in path.d/ over the defaults. On failure *ret is untouched and the error has
 * been logged with file, line and value.
 */
int manager_config_load(const char *path, ManagerConfig *ret, char ***ret_files);

/* Writes the configuration in tonarid.conf syntax; --dump-config. */
void manager_config_dump(const ManagerConfig *c, FILE *f);
