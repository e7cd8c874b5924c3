/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "time-util.h"

/*
 * The hog limiter's policy (seed 001 §4): pure, no I/O, no globals, no logging. The daemon samples
 * every process of a managed slice once per interval, hands the samples to limiter_policy_step()
 * and applies the decisions it gets back (moves processes between the slice's child cgroups
 * "unlimited", "cpu-limited" and "io-limited"), logging each with the numbers it carries.
 *
 * The paper's rules:
 *  - a process is a hog when it uses the most of a resource over the usage window (10 s);
 *    cpu_usage = 100·(utime+stime)/(now−start) (eq. 1–3), here over the window once the policy has
 *    seen the process for that long, over the time it has seen it before; a process the policy has
 *    not yet sampled in two rounds (observed for one interval of its own) is neither a hog nor one
 *    of the others: its counters since its start describe its start-up and whatever it did before
 *    it was registered, and two processes started together share a CPU by chance at first (§5.2:
 *    the manager acts once it has gathered data);
 *  - the biggest hog of a resource is limited (CPU: cpu.weight 1; I/O: io.max 5 MB/s);
 *  - the limit is confirmed if the others improve (their CPU use or I/O count grows) within the
 *    next window, else it comes off;
 *  - an I/O-limited process whose I/O count drops to 0 is released; a limited process is released
 *    when the others change their behaviour (contention ended): judged on the last interval, for
 *    a confirmed limit and one still waiting for confirmation alike, and placed again as soon as
 *    the others want the resource again (with a band between the two thresholds: no flapping).
 * Additions the paper lacked: the contention signal can also be direct (the others' CPU run-queue
 * delay and block I/O delay from delay accounting, and the slice's PSI), a limit is never placed
 * when nobody else wants the resource, a process whose limit did not help is not limited again for
 * a hold-off time, and a limit belongs to one process (PID and start time), never to a PID.
 * And one for resources that, unlike the paper's hard disk, lose nothing to sharing (a token
 * bucket, an SSD, a CPU): a limit only moves capacity from the hog to the others, so when the
 * others leave what the hog gave up unused (the resource's total use under the limit falls by
 * waste_percent), the limit costs more than it gives and comes off, with a hold-off that doubles
 * each time it happens again to the same process.
 */

/* Samples of one process the policy keeps: enough for a window of up to HISTORY_MAX - 2 intervals. */
#define LIMITER_HISTORY_MAX 16

typedef enum LimiterClass {
        LIMITER_UNLIMITED,
        LIMITER_CPU_LIMITED,
        LIMITER_IO_LIMITED,
        _LIMITER_CLASS_MAX,
        _LIMITER_CLASS_INVALID = -EINVAL,
} LimiterClass;

typedef enum LimiterAction {
        LIMITER_LIMIT,   /* move to the class's cgroup */
        LIMITER_KEEP,    /* the limit was confirmed: the others improved */
        LIMITER_RELEASE, /* move back to "unlimited" */
        _LIMITER_ACTION_MAX,
        _LIMITER_ACTION_INVALID = -EINVAL,
} LimiterAction;

typedef enum LimiterReason {
        LIMITER_REASON_CPU_HOG,               /* limit */
        LIMITER_REASON_IO_HOG,                /* limit */
        LIMITER_REASON_IMPROVED,              /* keep */
        LIMITER_REASON_NO_IMPROVEMENT,        /* release: the others did not improve within the window */
        LIMITER_REASON_IO_COUNT_ZERO,         /* release: an I/O-limited process stopped doing I/O */
        LIMITER_REASON_CLASS_CHANGED,         /* release: the process no longer uses what it is limited on */
        LIMITER_REASON_CONTENTION_ENDED,      /* release: nobody else wants the resource any more */
        LIMITER_REASON_RESOURCE_IDLED,        /* release: the others left what the hog gave up unused */
        LIMITER_REASON_NOT_LIMITED_BY_POLICY, /* release: in a limited cgroup, but not limited by us
                                               * (a reused PID, a forked child, someone else moved it) */
        _LIMITER_REASON_MAX,
        _LIMITER_REASON_INVALID = -EINVAL,
} LimiterReason;

typedef struct LimiterParams {
        /* How often the daemon samples (MonitorIntervalSec=). 3 s: §5.2 found shorter intervals do
         * not gather enough to judge and 3–4 s the best. The policy sizes its history by it. */
        usec_t interval_usec;
        /* Usage is averaged over this window (§4: "the last 10 seconds"); also how long a new limit
         * has to show an improvement. */
        usec_t window_usec;
        /* What the daemon applies: io.max of "io-limited" (5 MB/s: §5.1.1's best total) and
         * cpu.weight of "cpu-limited" (1: §5.1.2's best). The policy only reports them. */
        uint64_t io_limit_bytes_per_sec;
        uint64_t cpu_limit_weight;
        /* Hog thresholds over the window. The paper does not give its numbers. A CPU hog uses at
         * least half a CPU; an I/O hog moves at least twice the I/O limit, else the limit would
         * not slow it. */
        double cpu_hog_percent;
        uint64_t io_hog_bytes_per_sec;
        /* Direct contention: the others together wait this share of wall time (percent; 10 means
         * 100 ms per second) for a CPU or for block I/O, or the slice's PSI "some avg10" (percent)
         * is at least psi_avg10. */
        double delay_contention_percent;
        double psi_avg10;
        /* Confirmation: the others' progress grows, or their delay shrinks, by this much (percent). */
        double improvement_percent;
        /* Contention ended: the others' CPU demand (use + wait, percent of a CPU, summed) or their
         * storage I/O is below this: nobody is left to protect. */
        double others_idle_cpu_percent;
        uint64_t others_idle_io_bytes_per_sec;
        /* A process released for NO_IMPROVEMENT is not limited again for this long, unless a
         * direct signal shows contention: the paper's speculative limit would otherwise flap. One
         * released for RESOURCE_IDLED is not limited again for this long whatever the signals say,
         * twice as long the second time in a row, up to 8 times. */
        usec_t holdoff_usec;
        /* RESOURCE_IDLED: over an interval under the limit, the hog's and the others' use of the
         * resource together fell by at least this share (percent) below their use over the window
         * before the limit. 0 turns the rule off (the paper's policy). */
        double waste_percent;
        /* Compute decisions but do not expect them applied: the policy keeps the classes it would
         * have set to itself and marks decisions applied=false. */
        bool observe_only;
} LimiterParams;

#define LIMITER_PARAMS_DEFAULT                                                                         \
        ((LimiterParams) {                                                                             \
                .interval_usec = 3 * USEC_PER_SEC,                                                     \
                .window_usec = 10 * USEC_PER_SEC,                                                      \
                .io_limit_bytes_per_sec = 5000000,                                                     \
                .cpu_limit_weight = 1,                                                                 \
                .cpu_hog_percent = 50.0,                                                               \
                .io_hog_bytes_per_sec = 10000000,                                                      \
                .delay_contention_percent = 10.0,                                                      \
                .psi_avg10 = 10.0,                                                                     \
                .improvement_percent = 10.0,                                                           \
                .others_idle_cpu_percent = 10.0,                                                       \
                .others_idle_io_bytes_per_sec = 100000,                                                \
                .holdoff_usec = 30 * USEC_PER_SEC,                                                     \
                .waste_percent = 25.0,                                                                 \
        })

/* -EINVAL for zero intervals, a window shorter than an interval or longer than the history holds
 * (LIMITER_HISTORY_MAX - 2 intervals), thresholds that are negative or not numbers, a
 * waste_percent above 100. */
int limiter_params_validate(const LimiterParams *p);

/* One process in one interval: cumulative counters since the process started. */
typedef struct LimiterSample {
        pid_t pid;
        uint64_t start_time_ticks; /* with pid, the identity */
        usec_t timestamp_usec;     /* CLOCK_MONOTONIC of the sample */
        usec_t elapsed_usec;       /* since the process started */
        usec_t cpu_usec;           /* utime + stime */
        uint64_t io_bytes;         /* storage read + write bytes */
        uint64_t io_count;         /* read + write syscalls: the paper's "I/O count" */
        bool have_delays;
        usec_t cpu_delay_usec;
        usec_t blkio_delay_usec;
        /* Without delay accounting: the time spent runnable waiting for a CPU as the scheduler
         * counts it always (/proc/<pid>/schedstat), the CPU wait then; the block I/O wait stays
         * unknown. */
        bool have_run_delay;
        usec_t run_delay_usec;
        LimiterClass class; /* where the process is now (the cgroup it is in) */
} LimiterSample;

/* The slice's pressure (cpu.pressure and io.pressure "some avg10", percent), if the daemon has it. */
typedef struct LimiterPressure {
        bool valid;
        double cpu_some_avg10;
        double io_some_avg10;
} LimiterPressure;

/* The processes other than the one decided on, summed: what a limit is meant to help. */
typedef struct LimiterOthers {
        unsigned n;
        double cpu_percent;       /* their CPU use, percent of one CPU */
        double io_bytes_per_sec;  /* their storage I/O */
        double io_count_per_sec;  /* their read/write calls */
        double cpu_delay_percent; /* their wait for a CPU; NAN without delay accounting */
        double blkio_delay_percent;
        double psi_some_avg10;    /* the slice's, for the resource decided on; NAN if not given */
} LimiterOthers;

typedef struct LimiterDecision {
        pid_t pid;
        uint64_t start_time_ticks;
        LimiterAction action;
        LimiterClass class; /* the class to put it in */
        LimiterReason reason;
        bool applied;       /* false in observe-only mode */

        /* The process: over the window (what the policy observed of it, up to the window), and
         * the paper's eq. 3 over its lifetime. */
        double cpu_percent;
        double cpu_percent_lifetime;
        double io_bytes_per_sec;
        double io_count_per_sec;
        /* ... and in the last interval, which the release rules look at. */
        double cpu_percent_interval;
        double io_bytes_per_sec_interval;
        /* The others: before the limit (over the window before it), and now (since the limit for
         * KEEP and NO_IMPROVEMENT, the last interval otherwise). */
        LimiterOthers before;
        LimiterOthers after;
        /* Since the limit was placed; 0 for LIMIT. */
        usec_t limited_usec;
        /* The resource decided on, used by the process and the others together (percent of a CPU
         * or bytes per second): over the window before the limit, and in the last interval. */
        double total_before;
        double total_after;
        /* RESOURCE_IDLED and NO_IMPROVEMENT: not limited again before this much time passed. */
        usec_t holdoff_usec;
} LimiterDecision;

typedef struct LimiterPolicy LimiterPolicy;

int limiter_policy_new(const LimiterParams *params, LimiterPolicy **ret);
LimiterPolicy *limiter_policy_free(LimiterPolicy *p);
static inline void limiter_policy_freep(LimiterPolicy **p) {
        limiter_policy_free(*p);
}
#define _cleanup_limiter_policy_free_ _cleanup_(limiter_policy_freep)

/* New parameters take effect at the next step; state (limits, history) is kept. */
int limiter_policy_set_params(LimiterPolicy *p, const LimiterParams *params);
const LimiterParams *limiter_policy_get_params(const LimiterPolicy *p);

/*
 * Re-adoption after a daemon restart: the process (pid, start time) was limited in class by an
 * earlier instance and is to stay so, as confirmed. Without this, a process found in a limited
 * cgroup is released (NOT_LIMITED_BY_POLICY). -EINVAL for LIMITER_UNLIMITED.
 */
int limiter_policy_adopt(LimiterPolicy *p, pid_t pid, uint64_t start_time_ticks, LimiterClass class);

/*
 * One interval: samples of every managed process (any order; a process missing from them is gone
 * and forgotten), the slice's pressure or NULL. Returns the number of decisions and an array of
 * them in *ret (the caller frees it; NULL when there are none). Samples with a PID that appears
 * twice or with a timestamp before the previous one of the same process give -EINVAL, and the
 * state is left as it was.
 */
int limiter_policy_step(LimiterPolicy *p, const LimiterSample *samples, size_t n_samples,
                        const LimiterPressure *pressure, LimiterDecision **ret);

/* The class the policy holds for a process, or -ESRCH if it does not know it. */
int limiter_policy_get_class(const LimiterPolicy *p, pid_t pid, uint64_t start_time_ticks, LimiterClass *ret);
size_t limiter_policy_n_processes(const LimiterPolicy *p);

const char *limiter_class_to_string(LimiterClass c) _const_;
LimiterClass limiter_class_from_string(const char *s) _pure_;
const char *limiter_action_to_string(LimiterAction a) _const_;
const char *limiter_reason_to_string(LimiterReason r) _const_;
