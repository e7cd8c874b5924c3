/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "migrate.h"
#include "slice.h"

/*
 * Migration jobs (seed 002; docs/ARCHITECTURE.md, "NUMA migration"): moving a slice to other NUMA
 * nodes without the kernel's eager migration, on cgroup v2 (where a narrowed cpuset.mems moves
 * every page at once, under cgroup locks):
 *
 *   1. widen   AllowedMemoryNodes= becomes old ∪ new (the kernel moves nothing: every page is
 *              allowed where it is), AllowedCPUs= the CPUs of the new nodes;
 *   2. move    the engine (migrate.h) moves the pages lazily, n every t, referenced first;
 *   3. narrow  AllowedMemoryNodes= becomes new: nothing is left for the kernel to move but the
 *              pages the engine could not move.
 *
 * Policy eager skips 1 and 2. While a job moves pages a state file in the runtime directory names
 * its target: a restarted tonarid finds a slice whose nodes are still wider than that target and
 * resumes. A cancelled job leaves the slice on old ∪ new nodes (and the new nodes' CPUs), which is
 * consistent: every page is allowed where it is, and a later change narrows it.
 */

typedef struct MigrateManager MigrateManager;

typedef struct MigrateDefaults {
        MigratePolicy policy;        /* MemoryMigration= */
        uint64_t batch_pages;        /* MigrationBatchPages= */
        usec_t interval_usec;        /* MigrationIntervalSec= */
        unsigned cpu_budget_percent; /* MigrationCPUBudget=, 0: none */
        bool worker_any_cpu;         /* [Migration] WorkerCPUs=any (default slice: see migrate_worker_cpus()) */
} MigrateDefaults;

#define MIGRATE_DEFAULTS                                                                               \
        ((MigrateDefaults) { .policy = MIGRATE_MILD, .batch_pages = MIGRATE_BATCH_PAGES_DEFAULT,       \
                             .interval_usec = MIGRATE_INTERVAL_USEC_DEFAULT })

#define MIGRATE_JOB_OBJECT_PREFIX "/org/tonari/job"
#define MIGRATE_JOB_INTERFACE "org.tonari.Job1"

/*
 * state_dir: where unfinished jobs are recorded (NULL: not recorded); page_idle: the idle bitmap
 * (NULL: none; Severe and Mild then act as Periodical). Resumes the jobs recorded there whose
 * slices still have wide nodes; takes AllowedMemoryNodes= changes from the slice layer.
 */
int migrate_manager_new(sd_event *event, sd_bus *bus, SliceManager *slices, const char *state_dir,
                        const char *page_idle, MigrateManager **ret);
/* Stops the engines (the state files stay: the next start resumes). */
MigrateManager *migrate_manager_free(MigrateManager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(MigrateManager *, migrate_manager_free);

size_t migrate_manager_count(MigrateManager *m) _pure_;

/*
 * The policy and tunables of the jobs started from now on by a change of AllowedMemoryNodes= and
 * the starting point of MigrateMemory()'s options (tonarid.conf [Migration]; MIGRATE_DEFAULTS
 * until set). Jobs already running keep theirs. d must pass migrate_tunables_validate().
 */
void migrate_manager_set_defaults(MigrateManager *m, const MigrateDefaults *d);

/* D-Bus (migrate-bus.c): methods of org.tonari.Manager1; userdata points at the MigrateManager pointer. */
int bus_migrate_method_migrate_memory(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_migrate_method_list_jobs(sd_bus_message *m, void *userdata, sd_bus_error *error);
/* org.tonari.Job1 below MIGRATE_JOB_OBJECT_PREFIX. */
int bus_migrate_add_objects(sd_bus *bus, MigrateManager **manager);
