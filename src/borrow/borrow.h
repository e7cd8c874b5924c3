/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-event.h>

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

typedef struct BorrowManager BorrowManager;
typedef struct BorrowTarget BorrowTarget;
typedef struct BorrowProxy BorrowProxy;

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
};

#define BORROW_ALLOW_MAX 64

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

typedef struct BorrowSettings {
        BorrowPolicy policy;
        const char *state_file; /* NULL: nothing persisted */
        /* Who may call ChargeCPU() besides root ([Borrow] AllowUsers=, AllowGroups=). */
        const uint32_t *allow_uids;
        size_t n_allow_uids;
        const uint32_t *allow_gids;
        size_t n_allow_gids;
} BorrowSettings;

struct BorrowManager {
        sd_event *event;
        SliceManager *slices; /* not owned; NULL when slices are unavailable */
        BorrowPolicy policy;
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
        uint64_t n_state_writes;       /* state file written, for GetStatus() */
        usec_t state_write_usec;       /* time spent writing it */
        unsigned n_cpus;               /* online, for slices without AllowedCPUs= */
        /* Overhead of enforcement, for GetStatus(): time spent in period ticks and proxy samples. */
        usec_t work_usec;
        uint64_t n_ticks;
        uint64_t n_writes;
        uint64_t n_probe_reads; /* cpu.stat reads spent finding period boundaries */
        /* Recent ChargeCPU() callers; forgotten when the access lists change. */
        BorrowCharger chargers[BORROW_CHARGERS_MAX];
};

/* Proxies are sampled this often: the CFS period systemd and the kernel default to. */
#define BORROW_SAMPLE_USEC (100 * USEC_PER_MSEC)

int borrow_manager_new(sd_event *event, SliceManager *slices, const BorrowSettings *settings, BorrowManager **ret);
/* Puts configured quotas back (nothing stays shortened while tonarid is down) and saves the state. */
BorrowManager *borrow_manager_free(BorrowManager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(BorrowManager *, borrow_manager_free);

/* Takes the policy and the access lists from settings (tonarid.conf reloaded); not the state file. */
int borrow_manager_configure(BorrowManager *m, const BorrowSettings *settings);

BorrowTarget *borrow_manager_find_target(BorrowManager *m, const char *name) _pure_;

/* Forgets the remembered ChargeCPU() callers. */
void borrow_manager_forget_chargers(BorrowManager *m);

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
/* Drops p (its helper ended, ...) and writes that down at once. */
void borrow_proxy_remove(BorrowProxy *p, const char *reason);
size_t borrow_manager_count_proxies(BorrowManager *m); /* m may be NULL */

/* Whether the cgroup a process is in (absolute path) lies in slice s or below it. */
int borrow_process_in_slice(BorrowManager *m, Slice *s, pid_t pid);
