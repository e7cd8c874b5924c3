/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What the files of src/borrow/ share and nobody else includes: one file a job (docs/ARCHITECTURE.md,
 * "CPU borrowing"):
 *   borrow-manager.c     the BorrowManager: life cycle, configuration, slices removed
 *   borrow-target.c      per-slice accounts, the period tick that shortens the quota
 *   borrow-probe.c       where the kernel's CFS periods begin, for the tick to land before them
 *   borrow-proxy.c       helpers whose CPU time is sampled and charged
 *   borrow-state-file.c  the state file that carries debt and proxies over a restart
 *   borrow-access.c      which callers may charge
 *   borrow-bus.c         the D-Bus methods and org.tonari.Borrowing1
 *   borrow-ledger.c, borrow-state.c  pure: the ledger and the state file's line format
 */

#include <systemd/sd-bus.h>

#include "borrow-state.h"
#include "borrow.h"
#include "time-util.h"

/*
 * The state file is written before a caller is told that a change is done (ChargeCPU(), AddProxy(),
 * RemoveProxy(), RemoveSlice()), when something is dropped (a proxy whose helper ended, a slice's
 * account, a debt repaid) and after start-up; the progress of repayment and of proxy samples is
 * written at most this often, and at exit. A crash loses at most this much of that progress, and a
 * repaying ledger does not turn into a busy disk.
 */
#define BORROW_SAVE_USEC USEC_PER_SEC

static inline char *fmt_ms(char buf[static FORMAT_TIMESPAN_MAX], usec_t u) {
        return format_timespan(buf, FORMAT_TIMESPAN_MAX, u, 100);
}

/* borrow-target.c */
int borrow_target_new(BorrowManager *m, Slice *s, BorrowTarget **ret);
void borrow_target_free(BorrowTarget *t);
/* The slice a target belongs to, or NULL if it was removed (a slice of the same name created
 * since is a different tenant and does not inherit the debt). */
Slice *borrow_target_slice(BorrowTarget *t);
/* Writes limit (USEC_INFINITY: lift it) for the slice's processes. */
int borrow_target_write(BorrowTarget *t, Slice *s, usec_t limit, usec_t period);
/* Forgets the account of a removed slice and its proxies, and writes that down at once. */
void borrow_target_drop(BorrowTarget *t, const char *why);
/* Schedules the next tick (see borrow_target_next_tick()). */
int borrow_target_arm(BorrowTarget *t, usec_t period);
/* Whether the target's period tick is running (it repays a debt or lifts a limit). */
bool borrow_target_ticking(const BorrowTarget *t);
/* Charges usec to slice s; durable: in the state file when this returns, or undone. */
int borrow_target_charge(BorrowManager *m, Slice *s, usec_t usec, bool durable);

/* borrow-probe.c */
/* Whether boundary_usec tells where the periods of the cgroup written to begin. */
bool borrow_target_aligned(const BorrowTarget *t, usec_t period);
/* When the next tick is due: about one period from now, just before a boundary once known. */
usec_t borrow_target_next_tick(const BorrowTarget *t, usec_t period);
/* Starts looking for the period boundaries of the cgroup a limit was just written to. */
void borrow_target_probe_start(BorrowTarget *t, usec_t period);
void borrow_target_probe_stop(BorrowTarget *t);

/* borrow-proxy.c */
int borrow_proxy_new(BorrowManager *m, uint32_t id, const char *target, pid_t pid, const char *cgroup,
                     BorrowProxy **ret);
void borrow_proxy_free(BorrowProxy *p);
/* Sets up p's helper; with expect_start, a PID whose start time differs is somebody else. */
int borrow_proxy_attach_helper(BorrowProxy *p, bool expect_start);
/* Reads the helper's CPU time and charges what it spent since the last sample. */
void borrow_proxy_sample(BorrowProxy *p);
/* The slice a proxy works for, or NULL if it was removed (see borrow_target_slice()). */
Slice *borrow_proxy_slice(BorrowProxy *p);
/* Forgets the proxies of the slice name/slice_id (removed); not written yet. */
void borrow_proxies_drop(BorrowManager *m, const char *name, uint64_t slice_id, const char *why);
int borrow_manager_start_sampling(BorrowManager *m);

/* borrow-state-file.c */
/* Progress: written within BORROW_SAVE_USEC. */
void borrow_manager_mark_dirty(BorrowManager *m);
/* A drop: written now, and if that fails, retried with the progress. */
void borrow_manager_save_now(BorrowManager *m);
/* Replaces the state file with what is in memory, without skip (a proxy about to go). */
int borrow_state_file_save(BorrowManager *m, const BorrowProxy *skip);
int borrow_state_file_on_save(sd_event_source *es, uint64_t usec, void *userdata);
/* Restores targets and proxies of the slices that still exist. */
int borrow_state_file_load(BorrowManager *m);

/* borrow-access.c */
/* Root, or a user or group tonarid.conf allows to charge; *ret_pid: the caller's PID, or 0. */
int borrow_verify_charger(sd_bus_message *m, BorrowManager *bm, pid_t *ret_pid, sd_bus_error *error);
