/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/*
 * The pure part of lazy NUMA migration (seed 002): in which order, and how many at a time, the
 * pages of a slice are moved. No I/O: pages are indexes 0..n_pages-1 in the order of the page walk
 * (virtual address order, process by process), and whether a page was referenced is asked through
 * a callback, so the three policies of the paper are tested on synthetic page sets.
 *
 *  Periodical  the walk hands out every page in walk order, n at a time (throttling only).
 *  Severe      the walk puts referenced pages in the batch and the others in a remainder list;
 *              once the walk is done, every round checks the whole remainder again and takes the
 *              referenced pages first, topping up with the remainder's head: N²/2n + N/2 checks.
 *  Mild        like Severe during the walk; afterwards the remainder goes out in walk order
 *              without further checks: N checks.
 *
 * Unlike the paper's kernel loop, a round that finishes the walk with fewer than n pages in hand
 * tops the batch up from the remainder (Severe checking, Mild in order), so that every batch but
 * the last is full and the number of rounds is ⌈N/n⌉ for every policy.
 */

typedef enum MigratePolicy {
        MIGRATE_EAGER,      /* no engine: the kernel moves everything when cpuset.mems narrows */
        MIGRATE_PERIODICAL,
        MIGRATE_SEVERE,
        MIGRATE_MILD,
        _MIGRATE_POLICY_MAX,
        _MIGRATE_POLICY_INVALID = -EINVAL,
} MigratePolicy;

const char *migrate_policy_to_string(MigratePolicy p) _const_;
MigratePolicy migrate_policy_from_string(const char *s) _pure_;
/* Whether the policy asks for referenced bits (Severe, Mild). */
bool migrate_policy_uses_referenced(MigratePolicy p) _const_;

/* Whether page (an index given to migrate_plan_new()) has been referenced. */
typedef bool (*MigrateReferencedFunc)(size_t page, void *userdata);

typedef struct MigratePlan MigratePlan;

/*
 * A plan over n_pages pages handed out batch_pages at a time. policy must be Periodical, Severe
 * or Mild (-EINVAL otherwise), batch_pages ≥ 1 (-EINVAL).
 */
int migrate_plan_new(MigratePolicy policy, size_t n_pages, size_t batch_pages, MigratePlan **ret);
MigratePlan *migrate_plan_free(MigratePlan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(MigratePlan *, migrate_plan_free);

/*
 * The next batch: at most batch_pages page indexes into ret_pages (room for batch_pages), their
 * number returned; 0 when every page has been handed out. *ret_referenced (may be NULL): how many
 * of them were found referenced. referenced is called only by Severe and Mild (may be NULL for
 * Periodical).
 */
size_t migrate_plan_next(MigratePlan *p, MigrateReferencedFunc referenced, void *userdata, size_t *ret_pages,
                         size_t *ret_referenced);

/* Pages not handed out yet. */
size_t migrate_plan_remaining(const MigratePlan *p) _pure_;
/* Referenced checks made so far (the paper's overhead measure). */
uint64_t migrate_plan_checks(const MigratePlan *p) _pure_;

/*
 * The engine's pacing under a CPU budget (MigrationCPUBudget=, beyond the paper): given the CPU
 * time the last batch took and the configured interval, the pause before the next batch so that
 * batch CPU / (batch CPU + pause) stays at or below budget_percent (1..100; 0 = no budget: the
 * configured interval). Never less than interval_usec.
 */
uint64_t migrate_pace_interval_usec(uint64_t batch_cpu_usec, uint64_t interval_usec, unsigned budget_percent) _const_;

/*
 * The same over the whole job, which is what the budget is measured against: given the CPU time
 * the job has taken so far and the wall time since it started, the pause before the next batch
 * so that job CPU / (elapsed + pause) comes down to budget_percent. The CPU of scans and of idle
 * page tracking and an overshoot of earlier pauses are made up for; time spent without CPU (the
 * first watch of the referenced bits) is not lost. Never less than interval_usec; no budget: the
 * interval.
 */
uint64_t migrate_pace_pause_usec(uint64_t job_cpu_usec, uint64_t elapsed_usec, uint64_t interval_usec,
                                 unsigned budget_percent) _const_;

/*
 * Where the engine's worker thread runs (beyond the paper): on the CPUs the slice's processes may
 * run on. move_pages(2) unmaps each page it moves and must flush that page from the TLB of every
 * CPU the process is running on at that moment, with an IPI it waits for; a worker on the slice's
 * own CPUs preempts the slice's process there instead (the CPU switches address spaces, so no
 * other CPU holds the process's TLB entries), and what the migration costs is taken from the
 * slice's CPUs, not from its neighbours'. allowed: the CPUs the worker may use (tonarid's);
 * slice: the union of the slice's processes' affinity masks. Into ret: their intersection, or
 * allowed when it is empty (the slice may run nowhere the worker may). Returns whether ret is
 * narrower than allowed.
 */
bool migrate_worker_cpus(const cpu_set_t *allowed, const cpu_set_t *slice, cpu_set_t *ret);

/* Limits of the tunables (MigrationBatchPages=, MigrationIntervalSec=, MigrationCPUBudget=). */
#define MIGRATE_BATCH_PAGES_DEFAULT 45000U         /* the paper's n: a tenth of what its host moved per second */
#define MIGRATE_BATCH_PAGES_MAX (16U * 1024 * 1024) /* 64 GiB of 4 KiB pages in one call */
#define MIGRATE_INTERVAL_USEC_DEFAULT (1000U * 1000U) /* the paper's t = 1000 ms */
#define MIGRATE_INTERVAL_USEC_MIN (1000U)             /* 1 ms: less is a busy loop */
#define MIGRATE_INTERVAL_USEC_MAX (3600ULL * 1000U * 1000U)

/* Checks the tunables; on failure -ERANGE and a message quoting the value in ret_error (size bytes). */
int migrate_tunables_validate(uint64_t batch_pages, uint64_t interval_usec, uint64_t budget_percent, char *ret_error,
                              size_t size);
