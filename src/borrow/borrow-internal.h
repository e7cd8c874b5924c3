/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Private to src/borrow/: its library is built with -DTONARI_FOLDER_BORROW (meson.build), nothing else is. */
#ifndef TONARI_FOLDER_BORROW
#error "borrow-internal.h is private to src/borrow/; use borrow.h"
#endif

/*
 * What the files of src/borrow/ share and nobody else includes: one file a job (docs/ARCHITECTURE.md,
 * "CPU borrowing"):
 *   borrow-manager.c     the BorrowManager: life cycle, configuration, slices removed
 *   borrow-target.c      per-slice accounts, the period tick that shortens the quota
 *   borrow-probe.c       where the kernel's CFS periods begin, for the tick to land before them
 *   borrow-proxy.c       helpers whose CPU time is sampled and charged
 *   borrow-kernel.c      the kernel path: debts to cpu.cfs_borrowing_us, helpers in cpu.cfs_charge_procs
 *   borrow-state-file.c  the state file that carries debt and proxies over a restart
 *   borrow-access.c      which callers may charge
 *   borrow-bus.c         the D-Bus methods and org.tonari.Borrowing1
 *   borrow-ledger.c, borrow-state.c  pure: the ledger and the state file's line format
 *   borrow-kernel-policy.c           pure: which path a target takes, the kernel files' formats
 */

#include <systemd/sd-bus.h>

#include "borrow-kernel-policy.h"
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

/*
 * What answers a ChargeCPU() or ends a repayment is written as one line appended to a journal next to
 * the state file (STATE.journal) rather than as a whole new file: a libtonari copier charges up to
 * ten times a second per container, and rewriting the file each time was most of what tonarid spent
 * on it (docs/BENCHMARKS.md). Each snapshot names a generation; the journal belongs to one and is
 * started afresh after each snapshot, so its lines apply only on top of the snapshot they follow.
 * Past this size a whole snapshot is written instead.
 */
#define BORROW_JOURNAL_MAX_BYTES (256U * 1024U)

/* Proxies are sampled this often: the CFS period systemd and the kernel default to. */
#define BORROW_SAMPLE_USEC (100 * USEC_PER_MSEC)
/* A tick keeps a steady limit for at most this many further periods (see target_hold()): a slice
 * whose debt is that large sits at the same limit for all of them whatever is charged meanwhile,
 * so a tick about once a second changes nothing but tonarid's cost. At 3 the ticks of indebted
 * slices were most of tonarid's CPU time in bench/borrow-logflood at N = 5 (issue 16). */
#define BORROW_HOLD_PERIODS_MAX 9U

struct BorrowTarget {
        BorrowManager *manager;
        BorrowTarget *next;
        char *name;
        uint64_t slice_id;       /* Slice.id it belongs to */
        uint64_t cgroup_id;      /* Slice.cgroup_id of it: what the state file tells slices apart by */
        BorrowAccount account;
        sd_event_source *timer;  /* one tick per CFS period while enforcing */
        usec_t period_usec;      /* of the limit in force */
        usec_t quota_usec;       /* the configured quota per period the ledger last used */
        usec_t limit_usec;       /* quota per period written now; USEC_INFINITY: none (configured in force) */
        char *limit_cgroup;      /* where limit_usec is written */
        bool limit_own;          /* limit_cgroup is the slice's own cgroup (cgroupfs): restore on end */
        usec_t configured_per_sec_usec; /* limit_own: the slice's CPUQuota= to write back */
        usec_t configured_period_usec;
        uint64_t writes;         /* cgroup writes done for this target */
        /* Periods after the one the last tick began in which the limit stays as it is without a
         * tick (see target_hold()); the next tick accounts for them first. */
        unsigned held_periods;
        usec_t tick_at;          /* CLOCK_MONOTONIC of the last tick */
        /* CPU time proxies saw their helpers spend for this slice but could not charge (a charge
         * that failed, a sample above BORROW_CHARGE_MAX_USEC); since tonarid started. */
        uint64_t dropped_usec;
        /* limit_cgroup's CPU time at the last tick, to see how far the slice ran beyond the
         * limit (borrow_account_overrun()); USEC_INFINITY: not read, or not on a boundary. */
        usec_t usage_usec;
        usec_t usage_at;
        /*
         * Where the kernel's periods of limit_cgroup begin. Every cpu.max write refills the
         * quota at once, so a write in the middle of a period would hand out a second quota in
         * it; ticks are therefore put just before a period boundary, found by watching
         * cpu.stat nr_periods (see on_probe()).
         */
        usec_t boundary_usec;        /* CLOCK_MONOTONIC start of one period; USEC_INFINITY: unknown */
        usec_t boundary_period_usec; /* the period it belongs to */
        char *boundary_cgroup;       /* the cgroup it was found on */
        sd_event_source *probe;
        unsigned probe_stage;        /* BorrowProbeStage */
        uint64_t probe_periods;      /* nr_periods at the last read */
        usec_t probe_last;           /* when it was read */
        usec_t probe_deadline;       /* no new period by then: the cgroup does not run */
        usec_t probe_retry;          /* no new probe before this */
        /*
         * The path this target takes (borrow-kernel-policy.h), decided at its first charge or
         * proxy. On the kernel path, debts go to kernel_cgroup's cpu.cfs_borrowing_us, helper
         * processes (on_behalf) to its cpu.cfs_charge_procs, and no tick runs.
         */
        BorrowEnforcement enforcement;
        bool on_behalf;
        char *kernel_cgroup;
        bool kernel_capacity;        /* kernel_cgroup gets the slice's capacity as its quota */
};

struct BorrowProxy {
        BorrowManager *manager;
        BorrowProxy *next;
        uint32_t id;
        char *target;
        uint64_t slice_id;         /* Slice.id of target */
        uint64_t cgroup_id;        /* Slice.cgroup_id of target */
        pid_t pid;                 /* a helper process, or 0 */
        int pidfd;
        uint64_t start_time_ticks; /* with pid: tells a reused PID apart */
        char *cgroup;              /* or a helper cgroup, relative to the cgroup root */
        usec_t last_usec;          /* the helper's CPU time at the last sample */
        uint64_t charged_usec;
        sd_event_source *exit_source;
        /* The kernel charges the helper process to the target as it runs (cpu.cfs_charge_procs):
         * not sampled; last_usec is its CPU time when that began, charged_usec what came before. */
        bool kernel;
};

/*
 * A bus connection that called ChargeCPU(), as far as the access check needs it. Asking the bus
 * for a sender's credentials is a round trip through dbus-daemon plus reads of /proc; a copier
 * charging ten times a second per container would pay it at every call (measured in the VM: the
 * daemons spent about 4 ms of CPU per call). The credentials of a connection are those of the
 * process that opened it and do not change, and a unique name is never given to another
 * connection while the bus runs (tonarid exits when it loses the bus), so they are asked once per
 * connection. Supplementary groups are those at the first call of the connection.
 */
typedef struct BorrowCharger {
        char *sender;    /* unique bus name; NULL: slot free */
        uid_t uid;
        pid_t pid;       /* 0: unknown */
        bool in_group;   /* the effective or a supplementary group is in allow_gids */
        usec_t used;     /* CLOCK_MONOTONIC of the last call, to replace the oldest */
} BorrowCharger;

/* Connections remembered; more chargers than this are asked again (oldest replaced first). */
#define BORROW_CHARGERS_MAX 32

struct BorrowManager {
        sd_event *event;
        SliceManager *slices; /* not owned; NULL when slices are unavailable */
        BorrowPolicy policy;
        BorrowEnforcementMode enforcement_mode;
        uint32_t allow_uids[BORROW_ALLOW_MAX];
        size_t n_allow_uids;
        uint32_t allow_gids[BORROW_ALLOW_MAX];
        size_t n_allow_gids;
        char *state_file;
        BorrowTarget *targets;
        BorrowProxy *proxies;
        uint32_t last_proxy_id;
        sd_event_source *sample_timer; /* proxies, every BORROW_SAMPLE_USEC while there are any */
        sd_event_source *save_timer;
        bool dirty;
        /* The journal next to the state file: lines appended for targets since the snapshot of
         * generation (borrow-state-file.c). */
        char *journal_file;
        int journal_fd;
        size_t journal_size;
        uint64_t generation;
        unsigned n_cpus;               /* online, for slices without AllowedCPUs= */
        /* Overhead of enforcement and of the state file, for GetStatus() (n_proxies is counted
         * when asked). */
        BorrowStats stats;
        /* Recent ChargeCPU() callers; forgotten when the access lists change. */
        BorrowCharger chargers[BORROW_CHARGERS_MAX];
};

static inline char *fmt_ms(char buf[static FORMAT_TIMESPAN_MAX], usec_t u) {
        return format_timespan(buf, FORMAT_TIMESPAN_MAX, u, 100);
}

/* borrow-manager.c */
/*
 * Arms *source, a one-shot CLOCK_MONOTONIC timer of m's event loop, for when (made on first use,
 * with description). Accuracy 1 µs: sd-event's default (250 ms) would merge ticks of several periods.
 */
int borrow_timer_arm(BorrowManager *m, sd_event_source **source, usec_t when, sd_event_time_handler_t handler,
                     void *userdata, const char *description);

/* borrow-target.c */
BorrowTarget *borrow_manager_find_target(BorrowManager *m, const char *name) _pure_;
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

/* The quota per period the ledger works against: CPUQuota=, or the CPUs the slice may use. */
void borrow_target_quota(BorrowTarget *t, Slice *s, usec_t *ret_quota, usec_t *ret_period);

/* borrow-kernel.c */
/*
 * Decides t's path if not yet decided; on the kernel path, makes sure kernel_cgroup has a quota for
 * charges to bite (the slice's capacity where it has no CPUQuota=). Errors: reading or writing the
 * cgroup failed (the path stays undecided).
 */
int borrow_target_prepare(BorrowTarget *t, Slice *s);
/* Hands usec of debt to the kernel, capped as the ledger caps it. */
int borrow_target_kernel_charge(BorrowTarget *t, usec_t usec);
/* What the kernel says t owes now (cpu.cfs_borrowing_us). */
int borrow_target_kernel_debt(BorrowTarget *t, usec_t *ret);
/*
 * Makes the kernel charge p's helper process to t as it runs. If it already does (tonarid
 * restarted), nothing is written and 1 is returned. -ESRCH: the helper exited; -EPERM, -EINVAL,
 * -EBADF: the kernel refused.
 */
int borrow_proxy_kernel_attach(BorrowProxy *p, BorrowTarget *t);
/* Stops the kernel charging p's helper; 0 if it was not (any more). */
int borrow_proxy_kernel_detach(BorrowProxy *p);

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
/* On the kernel path, lets the kernel charge p's helper process (1), or leaves it to sampling (0). */
int borrow_proxy_setup_kernel(BorrowProxy *p, Slice *s, bool restoring);
/* t's kernel cgroup changed or went: its kernel-charged proxies follow it, or are sampled from now on. */
void borrow_proxies_kernel_moved(BorrowManager *m, BorrowTarget *t);
/* What p's helper has had charged so far. */
uint64_t borrow_proxy_charged(BorrowProxy *p);
/* Reads the helper's CPU time and charges what it spent since the last sample. */
void borrow_proxy_sample(BorrowProxy *p);
/* t's period tick stopped: its sampled proxies go back to the sample timer, which sleeps while
 * every sampled proxy's slice ticks. */
void borrow_proxies_untick(BorrowManager *m, const BorrowTarget *t);
/* The slice a proxy works for, or NULL if it was removed (see borrow_target_slice()). */
Slice *borrow_proxy_slice(BorrowProxy *p);
/* Forgets the proxies of the slice name/slice_id (removed); not written yet. */
void borrow_proxies_drop(BorrowManager *m, const char *name, uint64_t slice_id, const char *why);
int borrow_manager_start_sampling(BorrowManager *m);
/* Drops p (its helper ended, ...) and writes that down at once. */
void borrow_proxy_remove(BorrowProxy *p, const char *reason);
size_t borrow_manager_count_proxies(BorrowManager *m); /* m may be NULL */
/* Whether the cgroup a process is in (absolute path) lies in slice s or below it. */
int borrow_process_in_slice(BorrowManager *m, Slice *s, pid_t pid);

/* borrow-state-file.c */
/* Progress: written within BORROW_SAVE_USEC. */
void borrow_manager_mark_dirty(BorrowManager *m);
/* A drop: written now, and if that fails, retried with the progress. */
void borrow_manager_save_now(BorrowManager *m);
/* Replaces the state file with what is in memory, without skip (a proxy about to go). */
int borrow_state_file_save(BorrowManager *m, const BorrowProxy *skip);
/* Writes t's account down now: a line appended to the journal (or, failing that, the whole file). */
int borrow_state_file_save_target(BorrowManager *m, const BorrowTarget *t);
int borrow_state_file_on_save(sd_event_source *es, uint64_t usec, void *userdata);
/* Restores targets and proxies of the slices that still exist. */
int borrow_state_file_load(BorrowManager *m);

/* borrow-access.c */
/* Root, or a user or group tonarid.conf allows to charge; *ret_pid: the caller's PID, or 0. */
int borrow_verify_charger(sd_bus_message *m, BorrowManager *bm, pid_t *ret_pid, sd_bus_error *error);
/* Forgets the remembered ChargeCPU() callers. */
void borrow_manager_forget_chargers(BorrowManager *m);
