/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "borrow-ledger.h"
#include "macro.h"

/*
 * Which enforcement path a borrowing target takes, pure (no I/O; borrow-kernel.c does the cgroup
 * reads and writes). tonari's kernel series (kernel/patches) adds two files to the cgroup v2 cpu
 * controller: cpu.cfs_borrowing_us (a debt the kernel repays from the following periods' quota
 * without refilling the current one) and cpu.cfs_charge_procs (a pidfd written there makes that
 * process's CPU time count against the group's bandwidth as it runs). Where a target's cgroup has
 * them, tonarid hands its debts to the kernel and lets helper processes charge the target
 * directly, and runs no period tick for it; elsewhere the userspace ledger and its tick enforce.
 */

/* [Borrow] Enforcement=: what tonarid may use. */
typedef enum BorrowEnforcementMode {
        BORROW_ENFORCEMENT_MODE_AUTO,         /* the kernel's files where the cgroup has them */
        BORROW_ENFORCEMENT_MODE_KERNEL_PAPER, /* only cpu.cfs_borrowing_us: helpers are sampled */
        BORROW_ENFORCEMENT_MODE_USERSPACE,    /* the ledger and the period tick, as on stock kernels */
        _BORROW_ENFORCEMENT_MODE_MAX,
        _BORROW_ENFORCEMENT_MODE_INVALID = -EINVAL,
} BorrowEnforcementMode;

/* What a target uses. */
typedef enum BorrowEnforcement {
        BORROW_ENFORCEMENT_NONE,      /* not decided yet (never charged) */
        BORROW_ENFORCEMENT_USERSPACE, /* ledger + a cpu.max write per period */
        BORROW_ENFORCEMENT_KERNEL,    /* cpu.cfs_borrowing_us (+ cpu.cfs_charge_procs) */
        _BORROW_ENFORCEMENT_MAX,
        _BORROW_ENFORCEMENT_INVALID = -EINVAL,
} BorrowEnforcement;

const char *borrow_enforcement_mode_to_string(BorrowEnforcementMode m) _const_;
BorrowEnforcementMode borrow_enforcement_mode_from_string(const char *s) _pure_;
const char *borrow_enforcement_to_string(BorrowEnforcement e) _const_;

/* What the kernel offers in a target's cgroup. */
typedef struct BorrowKernelFiles {
        bool borrowing;    /* cpu.cfs_borrowing_us */
        bool charge_procs; /* cpu.cfs_charge_procs */
} BorrowKernelFiles;

/*
 * The path for a target: BORROW_ENFORCEMENT_KERNEL when the mode allows it and the cgroup has
 * cpu.cfs_borrowing_us, else userspace. *ret_on_behalf: helper processes are charged by the kernel
 * as they run (cpu.cfs_charge_procs present and the mode is auto); otherwise they are sampled.
 */
BorrowEnforcement borrow_enforcement_choose(BorrowEnforcementMode mode, BorrowKernelFiles files, bool *ret_on_behalf);

/*
 * Where the kernel path charges and which quota makes the charges bite. A charge bills the named
 * group only (not its ancestors), and only a group with a quota in cpu.max is throttled by it. A
 * slice with CPUQuota= has that quota in its own cgroup (systemd keeps it there): charges go
 * there and nothing is written. A slice without one is treated as the userspace ledger treats it,
 * measured against its capacity (every CPU it may use, a full period each): tonarid writes that
 * capacity as the quota of the slice's CPU-limit cgroup (the leaf of its scope, or its own cgroup)
 * and charges that one. The capacity takes nothing from the slice it could use otherwise.
 */
typedef enum BorrowKernelCgroup {
        BORROW_KERNEL_CGROUP_SLICE, /* the slice's cgroup; its CPUQuota= is the quota */
        BORROW_KERNEL_CGROUP_LIMIT, /* the CPU-limit cgroup, with the capacity written as quota */
} BorrowKernelCgroup;

BorrowKernelCgroup borrow_kernel_cgroup_choose(usec_t cpu_quota_per_sec_usec) _const_;

/*
 * A debt handed to cpu.cfs_borrowing_us, under the same cap as the ledger's (max_debt_usec): with
 * outstanding already owed, returns how much of usec to write; the rest is forgiven (*ret_forgiven).
 */
usec_t borrow_kernel_debt_room(const BorrowPolicy *p, usec_t outstanding, usec_t usec, usec_t *ret_forgiven);

/*
 * Whether cpu.cfs_charge_procs (text: one PID per line) lists pid: 1 or 0; -EBADMSG for anything
 * else than decimal PIDs one per line.
 */
int borrow_charge_procs_contains(const char *text, pid_t pid);

/* The value of cpu.cfs_borrowing_us ("N\n", µs). -EBADMSG for anything else. */
int borrow_kernel_debt_parse(const char *text, usec_t *ret);
