/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

#include "borrow-kernel-policy.h"
#include "borrow-ledger.h"
#include "macro.h"
#include "slice.h"

/*
 * CPU borrowing (seed 000; docs/ARCHITECTURE.md, "CPU borrowing"): CPU time that helpers spent
 * for a slice is charged to it (ChargeCPU(), libtonari, or proxies that tonarid samples) and
 * repaid by shortening the slice's CFS quota in the following periods, on stock kernels.
 *
 * A BorrowTarget exists for every slice that was ever charged, for its counters; its period timer
 * runs only while it owes something or a shortened quota is in force. Targets and proxies are
 * saved to a state file, so a restart of tonarid loses neither debt nor proxies: every change a
 * caller is told of is in the file before the reply, so is every drop, and the progress of
 * repayment at most a second later. Entries name the slice's cgroup id, so that nothing of a
 * removed slice carries over to a new one of the same name.
 */

/* Opaque outside src/borrow/ (their insides: borrow-internal.h). */
typedef struct BorrowManager BorrowManager;
typedef struct BorrowTarget BorrowTarget;
typedef struct BorrowProxy BorrowProxy;

#define BORROW_ALLOW_MAX 64

typedef struct BorrowSettings {
        BorrowPolicy policy;
        BorrowEnforcementMode enforcement; /* [Borrow] Enforcement= */
        const char *state_file; /* NULL: nothing persisted */
        /* Who may call ChargeCPU() besides root ([Borrow] AllowUsers=, AllowGroups=). */
        const uint32_t *allow_uids;
        size_t n_allow_uids;
        const uint32_t *allow_gids;
        size_t n_allow_gids;
} BorrowSettings;

int borrow_manager_new(sd_event *event, SliceManager *slices, const BorrowSettings *settings, BorrowManager **ret);
/* Puts configured quotas back (nothing stays shortened while tonarid is down) and saves the state. */
BorrowManager *borrow_manager_free(BorrowManager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(BorrowManager *, borrow_manager_free);

/* What enforcing and persisting borrowing costs, for GetStatus(). */
typedef struct BorrowStats {
        uint64_t n_proxies;
        usec_t work_usec;          /* spent in period ticks, boundary probes and proxy samples */
        uint64_t n_ticks;          /* period ticks */
        uint64_t n_writes;         /* cgroup writes of quotas */
        uint64_t n_probe_reads;    /* cpu.stat reads spent finding period boundaries */
        uint64_t n_state_writes;   /* state file written */
        uint64_t n_journal_writes; /* lines appended to its journal */
        usec_t state_write_usec;   /* time spent writing both */
        uint64_t n_kernel_targets; /* slices enforced by the kernel (counted when asked) */
        uint64_t n_kernel_writes;  /* writes to cpu.cfs_borrowing_us and cpu.cfs_charge_procs */
} BorrowStats;

/* The counters of m; all zero for m NULL (borrowing unavailable). */
void borrow_manager_get_stats(BorrowManager *m, BorrowStats *ret);

/* Takes the policy and the access lists from settings (tonarid.conf reloaded); not the state file. */
int borrow_manager_configure(BorrowManager *m, const BorrowSettings *settings);

/*
 * Charges usec of CPU spent for slice s. -EINVAL for 0, -ERANGE above BORROW_CHARGE_MAX_USEC.
 * Starts repayment with the next period. The charge is in the state file when this returns 0; if
 * the file cannot be written, the charge is undone and the error returned.
 */
int borrow_manager_charge(BorrowManager *m, Slice *s, usec_t usec);

/*
 * Adds a proxy: pid (> 0) or cgroup (absolute, as in /proc/PID/cgroup) works for slice s, and its
 * CPU time is charged to s. -ESRCH: no such process; -ENOENT: no such cgroup; -EINVAL: a kernel
 * thread, PID 1, tonarid, or a helper inside s or above it (its CPU is already s's, or contains
 * s's); -EEXIST: that helper already has a proxy. In the state file when this returns.
 */
int borrow_manager_add_proxy(BorrowManager *m, Slice *s, pid_t pid, const char *cgroup, BorrowProxy **ret);
BorrowProxy *borrow_manager_find_proxy(BorrowManager *m, uint32_t id) _pure_;
/* Removes p on request: gone from the state file when this returns 0; else p stays. */
int borrow_manager_remove_proxy(BorrowManager *m, BorrowProxy *p, const char *reason);
