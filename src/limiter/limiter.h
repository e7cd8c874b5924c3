/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "limiter-policy.h"
#include "macro.h"
#include "slice.h"
#include "taskstats.h"

/*
 * Hog limiting in tonarid (seed 001; docs/ARCHITECTURE.md, "Hog limiting"). A slice with
 * HogLimiting=yes is the paper's Managed group: its processes live in child cgroups of the cgroup
 * that holds the slice's processes (cgroupfs: the slice's own cgroup; systemd: its delegated
 * scope):
 *
 *   <group>/unlimited     where registered processes start
 *   <group>/cpu-limited   cpu.weight (v1 cpu.shares) = CPUWeight
 *   <group>/io-limited    io.max (v1 blkio.throttle.*_bps_device) = IOLimit on every disk
 *   <group>/unmanaged     processes unregistered again: not sampled, not limited
 *
 * The membership is the state: a restart reads it back (limited processes stay limited, as
 * confirmed) and nothing is lost. The slice's own cgroup and its settings (CPUQuota= etc.) are
 * never written. Every round samples each process with taskstats, hands the samples to the pure
 * policy and applies its decisions, each logged once with the numbers behind it and announced
 * with ProcessLimited / ProcessReleased.
 */

typedef enum HogLimitingMode {
        HOG_LIMITING_NO,
        HOG_LIMITING_YES,
        HOG_LIMITING_OBSERVE, /* sample, decide and log, change nothing */
        _HOG_LIMITING_MODE_MAX,
        _HOG_LIMITING_MODE_INVALID = -EINVAL,
} HogLimitingMode;

const char *hog_limiting_mode_to_string(HogLimitingMode m) _const_;
HogLimitingMode hog_limiting_mode_from_string(const char *s) _pure_;

#define LIMITER_GROUP_UNMANAGED "unmanaged"

typedef struct LimiterManager LimiterManager;

typedef struct LimiterSettings {
        LimiterParams defaults; /* [HogLimiting] of tonarid.conf; slices may override some */
        const char *state_file; /* which slices are hog-limited, with what; NULL: not persisted */
} LimiterSettings;

/*
 * Probes taskstats; when it is unusable *ret is still made (ListManagedProcesses works, empty)
 * and limiter_manager_support() says why, so that the property can be refused with the reason.
 * Slices listed in the state file are adopted.
 */
int limiter_manager_new(sd_event *event, sd_bus *bus, SliceManager *slices, const LimiterSettings *settings,
                        LimiterManager **ret);
/* Stops sampling; leaves every process where it is (a restart adopts them). */
LimiterManager *limiter_manager_free(LimiterManager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(LimiterManager *, limiter_manager_free);

const TaskstatsSupport *limiter_manager_support(LimiterManager *m) _pure_;
SliceManager *limiter_manager_slices(LimiterManager *m) _pure_;
/* New defaults apply to slices without their own values from the next round. */
int limiter_manager_configure(LimiterManager *m, const LimiterSettings *settings);

/* Per-slice overrides; fields with their "unset" value take the default. */
typedef struct LimiterSliceOverrides {
        usec_t interval_usec;            /* 0: default */
        usec_t window_usec;              /* 0: default */
        uint64_t io_limit_bytes_per_sec; /* 0: default */
        uint64_t cpu_limit_weight;       /* 0: default */
        uint64_t cpu_hog_percent;        /* 0: default; a CPU hog uses at least this much of a CPU */
} LimiterSliceOverrides;

/*
 * Sets the slice's mode. YES/OBSERVE: makes the group's cgroups, moves the processes the slice
 * has into "unlimited" and starts sampling; NO: lifts every limit and stops. -EOPNOTSUPP when
 * taskstats is unusable (limiter_manager_support() says why), -EINVAL for parameters the policy
 * refuses (*ret_why says which), -ENOENT when a systemd slice has no scope yet (no processes).
 */
int limiter_manager_set_mode(LimiterManager *m, Slice *s, HogLimitingMode mode, const LimiterSliceOverrides *o,
                             char **ret_why);
HogLimitingMode limiter_manager_get_mode(LimiterManager *m, const Slice *s);

/* Why a PID was refused by register/unregister. */
typedef enum LimiterRefusal {
        LIMITER_REFUSED_NONE,
        LIMITER_REFUSED_NO_PROCESS,
        LIMITER_REFUSED_KERNEL_THREAD,
        LIMITER_REFUSED_PROTECTED,      /* PID 1, tonarid itself */
        LIMITER_REFUSED_NOT_OWNED,      /* not the caller's */
        LIMITER_REFUSED_REGISTERED,     /* managed already (here or in another slice), or given twice */
        LIMITER_REFUSED_NOT_REGISTERED, /* unregister: not managed by this slice */
} LimiterRefusal;

/*
 * Whether processes may be registered: uid is the caller's (0 reaches every process, others only
 * their own). -EINVAL with *ret_bad and *ret_refusal set for a refused PID; -ENOTCONN when the
 * slice is not hog-limited. The move itself is the slice's attach, which puts processes into
 * "unlimited" (Slice.attach_leaf): with systemd through AttachProcessesToUnit(), since a
 * process may leave another unit's cgroup only through systemd.
 */
int limiter_manager_check_register(LimiterManager *m, Slice *s, const pid_t *pids, size_t n, uid_t uid,
                                   pid_t *ret_bad, LimiterRefusal *ret_refusal);
/* Lifts any limit and moves them to "unmanaged", where they are neither sampled nor limited. */
int limiter_manager_unregister(LimiterManager *m, Slice *s, const pid_t *pids, size_t n, uid_t uid,
                               pid_t *ret_bad, LimiterRefusal *ret_refusal);

/* One managed process as ListManagedProcesses shows it. */
typedef struct LimiterProcessInfo {
        const char *slice;
        pid_t pid;
        const char *comm;
        LimiterClass class;
        char limit[64];           /* "cpu.weight=1", "io.max=5000000B/s", "" */
        double cpu_percent;       /* last interval */
        double io_bytes_per_sec;  /* last interval */
        double delay_percent;     /* CPU + block I/O delay, last interval; NAN without delay accounting */
        usec_t since_realtime_usec; /* when it entered its class (0 unknown) */
} LimiterProcessInfo;

typedef int (*limiter_process_func_t)(const LimiterProcessInfo *info, void *userdata);
int limiter_manager_foreach_process(LimiterManager *m, limiter_process_func_t f, void *userdata);

typedef struct LimiterStats {
        uint64_t n_slices;
        uint64_t n_processes;
        uint64_t n_rounds;
        uint64_t n_limited; /* decisions that limited */
        uint64_t n_released;
        usec_t work_usec;   /* spent in sampling rounds */
} LimiterStats;
void limiter_manager_get_stats(LimiterManager *m, LimiterStats *ret);
