/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"
#include "migrate-plan.h"
#include "time-util.h"

/*
 * The edges of lazy NUMA migration (seed 002) and the engine that drives them on its own thread:
 *
 *  scan   /proc/PID/maps + /proc/PID/pagemap (present pages and their frame numbers; needs
 *         CAP_SYS_ADMIN for the frame numbers), move_pages(2) without a target to learn each
 *         page's node; pages already on a target node are left out.
 *  idle   /sys/kernel/mm/page_idle/bitmap: every scanned frame is marked idle once, and a page is
 *         "referenced" when its idle bit has been cleared since (a frame the kernel does not track,
 *         e.g. a THP tail, reads as referenced).
 *  move   move_pages(2) through libnuma, n pages per call, one call per process and batch.
 *
 * The engine runs a job to its end on a worker thread (tonarid's event loop stays free): it
 * scans, plans (migrate-plan.h) and moves a batch every interval, then scans again for pages that
 * appeared meanwhile (forked processes, new allocations before the cpuset changed) up to
 * MIGRATE_PASSES_MAX times. At every pass the worker moves to the CPUs the slice's processes may
 * run on (migrate_worker_cpus(): no TLB shootdowns to a CPU running them, the cost stays on the
 * slice's CPUs) unless MigrateConfig.worker_any_cpu. Progress is read with migrate_engine_progress() from any thread; the
 * engine writes to an eventfd when it has finished.
 */

#define MIGRATE_PASSES_MAX 3
/* How long the engine watches the referenced bits before its first walk (at least one interval). */
#define MIGRATE_OBSERVE_USEC (1000U * 1000U)
#define MIGRATE_PAGE_IDLE_PATH "/sys/kernel/mm/page_idle/bitmap"

/* The processes to move, read again at every pass (e.g. a slice's cgroup tree). Called on the engine's thread. */
typedef int (*MigratePidsFunc)(void *userdata, pid_t **ret, size_t *ret_n);

typedef struct MigrateConfig {
        MigratePolicy policy;        /* Periodical, Severe or Mild */
        uint64_t batch_pages;        /* n: pages per move_pages() round */
        usec_t interval_usec;        /* t: pause between rounds */
        unsigned cpu_budget_percent; /* 0: none; else the pause grows so that the engine stays within it */
        const uint8_t *target_nodes; /* "ay" bitmask, copied */
        size_t target_nodes_size;
        const char *proc;            /* "/proc" */
        const char *page_idle;       /* MIGRATE_PAGE_IDLE_PATH, or NULL: no referenced bits (Severe and Mild act as Periodical) */
        MigratePidsFunc get_pids;
        void *get_pids_userdata;     /* must outlive the engine */
        bool worker_any_cpu;         /* false: the worker runs on the slice's CPUs (migrate_worker_cpus()) */
} MigrateConfig;

typedef enum MigrateEngineState {
        MIGRATE_ENGINE_SCANNING,
        MIGRATE_ENGINE_MOVING,
        MIGRATE_ENGINE_DONE,
        MIGRATE_ENGINE_CANCELLED,
        MIGRATE_ENGINE_FAILED,
        _MIGRATE_ENGINE_STATE_MAX,
} MigrateEngineState;

const char *migrate_engine_state_to_string(MigrateEngineState s) _const_;

typedef struct MigrateProgress {
        MigrateEngineState state;
        int error;                /* FAILED: negative errno */
        uint64_t pages_total;     /* pages found off the target nodes, all passes */
        uint64_t pages_moved;
        uint64_t pages_failed;    /* could not move: busy, locked, shared with other processes */
        uint64_t pages_gone;      /* unmapped or their process exited before their turn */
        uint64_t hot_pages_moved; /* moved because they were referenced */
        uint64_t rounds;
        uint64_t checks;          /* referenced checks (the policies' overhead) */
        usec_t cpu_usec;          /* the engine thread's CPU time */
        /* Where that CPU time went: */
        usec_t scan_cpu_usec;     /*   maps, pagemap and the node query of every pass's scan */
        usec_t idle_cpu_usec;     /*   marking frames idle and reading the bitmap back */
        usec_t move_cpu_usec;     /*   move_pages(2) calls that move */
        uint64_t move_calls;      /* move_pages(2) calls that move */
        uint64_t passes;          /* scans of the slice's processes (see MIGRATE_PASSES_MAX) */
        uint64_t pages_scanned;   /* present pages looked at by the scans, on the target nodes or not */
        usec_t started_usec;      /* CLOCK_MONOTONIC */
        usec_t finished_usec;     /* 0 until it finished */
        usec_t hot_local_usec;    /* when the last referenced page of the first pass was moved; 0 before */
        bool referenced;          /* referenced bits were used */
        bool worker_pinned;       /* the worker ran on the slice's CPUs (the last pass), not on all of tonarid's */
} MigrateProgress;

typedef struct MigrateEngine MigrateEngine;

/* Starts the worker thread. Returns -EINVAL for a bad config (policy eager, n = 0, no nodes). */
int migrate_engine_start(const MigrateConfig *config, MigrateEngine **ret);
/* Asks the worker to stop after the batch in hand; returns at once. */
void migrate_engine_cancel(MigrateEngine *e);
/* Readable (EPOLLIN) once the engine has finished: done, cancelled or failed. */
int migrate_engine_fd(MigrateEngine *e) _pure_;
void migrate_engine_progress(MigrateEngine *e, MigrateProgress *ret);
/* Cancels, waits for the thread (at most one batch) and frees. */
MigrateEngine *migrate_engine_free(MigrateEngine *e);
DEFINE_TRIVIAL_CLEANUP_FUNC(MigrateEngine *, migrate_engine_free);

/* Pages of one scan: the process, the page's address and frame. */
typedef struct MigratePage {
        uint64_t vaddr;
        uint64_t pfn;
        uint32_t proc; /* index into MigrateScan.pids */
} MigratePage;

typedef struct MigrateScan {
        pid_t *pids;
        size_t n_pids;
        MigratePage *pages;
        size_t n_pages;
        size_t n_present; /* present pages read from pagemap, before leaving out those on a target node */
} MigrateScan;

/*
 * The present pages of pids that are not on a node of target (NULL: every present page), in walk
 * order. Processes that exit meanwhile are skipped. With keep_hidden, pages present in pagemap
 * that move_pages(2) answers with -ENOENT are kept too: before Linux 6.5 it cannot see a page
 * whose entry waits for a NUMA hinting fault (kernel.numa_balancing=1), and such a page may become
 * movable once the process touches it. (-EFAULT stays out: the shared zero page, never moved.)
 * Thread-safe.
 */
int migrate_scan(const char *proc, const pid_t *pids, size_t n_pids, const uint8_t *target, size_t target_size,
                 bool keep_hidden, MigrateScan *ret);

/* Whether the page at vaddr of pid is present (pagemap), 0 or 1; -ESRCH/-ENOENT when pid is gone. */
int migrate_page_present(const char *proc, pid_t pid, uint64_t vaddr);
void migrate_scan_done(MigrateScan *s);

/*
 * Where each page of s is (the node, or a negative errno as move_pages(2) reports it), into
 * ret_nodes (s->n_pages entries).
 */
int migrate_scan_query_nodes(const MigrateScan *s, int *ret_nodes);
