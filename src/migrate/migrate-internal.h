/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#ifndef TONARI_FOLDER_MIGRATE
#error "migrate-internal.h is private to src/migrate/; use migrate-job.h"
#endif

#include "migrate-job.h"

typedef enum JobState {
        JOB_WIDENING,
        JOB_MOVING,
        JOB_NARROWING,
        JOB_DONE,
        JOB_CANCELLED,
        JOB_FAILED,
        _JOB_STATE_MAX,
} JobState;

typedef struct MigrateJob MigrateJob;

struct MigrateJob {
        MigrateManager *manager;
        MigrateJob *next;
        uint32_t id;
        char *object_path;
        char *slice;        /* name */
        uint64_t slice_id;  /* Slice.id: a re-created slice of the same name is another one */
        uint64_t cgroup_id;
        char *cgroup;       /* a copy, for the engine's thread */
        uint8_t *target;
        size_t target_size;
        MigrateDefaults tunables;
        JobState state;
        bool cancel_requested;
        bool resumed;
        char *message;      /* why it failed */
        MigrateEngine *engine;
        sd_event_source *engine_source;
        MigrateProgress progress; /* the engine's, copied when it finished */
        usec_t created_usec;
};

struct MigrateManager {
        sd_event *event;
        sd_bus *bus;
        SliceManager *slices;
        char *state_dir;
        char *page_idle;
        MigrateDefaults defaults;
        MigrateJob *jobs;
        uint32_t last_id;
};

const char *job_state_to_string(JobState s) _const_;
MigrateJob *migrate_manager_find_job(MigrateManager *m, uint32_t id) _pure_;
MigrateJob *migrate_manager_find_job_by_slice(MigrateManager *m, const char *slice) _pure_;
/*
 * Starts a job for slice s and returns its object path (the job may be over already when this
 * returns, if the backend changed the nodes at once); on failure *ret_error may say why.
 */
int migrate_job_start(MigrateManager *m, Slice *s, const uint8_t *target, size_t target_size,
                      const MigrateDefaults *tunables, char **ret_path, char **ret_error);
void migrate_job_cancel(MigrateJob *j);
/* The engine's progress now (or at its end). */
void migrate_job_progress(MigrateJob *j, MigrateProgress *ret);
