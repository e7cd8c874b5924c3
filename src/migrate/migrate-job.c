/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "log.h"
#include "migrate-internal.h"
#include "mkdir.h"
#include "parse-util.h"
#include "string-util.h"

static const char *const job_state_table[_JOB_STATE_MAX] = {
        [JOB_WIDENING] = "widening", [JOB_MOVING] = "moving",       [JOB_NARROWING] = "narrowing",
        [JOB_DONE] = "done",         [JOB_CANCELLED] = "cancelled", [JOB_FAILED] = "failed",
};

const char *job_state_to_string(JobState s) {
        if (s < 0 || s >= _JOB_STATE_MAX)
                return NULL;
        return job_state_table[s];
}

MigrateJob *migrate_manager_find_job(MigrateManager *m, uint32_t id) {
        for (MigrateJob *j = m ? m->jobs : NULL; j; j = j->next)
                if (j->id == id)
                        return j;
        return NULL;
}

MigrateJob *migrate_manager_find_job_by_slice(MigrateManager *m, const char *slice) {
        for (MigrateJob *j = m ? m->jobs : NULL; j; j = j->next)
                if (streq(j->slice, slice))
                        return j;
        return NULL;
}

size_t migrate_manager_count(MigrateManager *m) {
        size_t n = 0;
        for (MigrateJob *j = m ? m->jobs : NULL; j; j = j->next)
                n++;
        return n;
}

static char *state_path(MigrateManager *m, const char *slice) {
        if (!m->state_dir)
                return NULL;
        return strjoin(m->state_dir, "/", slice, ".job");
}

static MigrateJob *job_free(MigrateJob *j) {
        if (!j)
                return NULL;
        if (j->manager) {
                MigrateJob **p = &j->manager->jobs;
                while (*p && *p != j)
                        p = &(*p)->next;
                if (*p)
                        *p = j->next;
        }
        sd_event_source_disable_unref(j->engine_source);
        migrate_engine_free(j->engine);
        free(j->object_path);
        free(j->slice);
        free(j->cgroup);
        free(j->target);
        free(j->message);
        free(j);
        return NULL;
}

void migrate_job_progress(MigrateJob *j, MigrateProgress *ret) {
        if (j->engine)
                migrate_engine_progress(j->engine, ret);
        else
                *ret = j->progress;
}

/* The slice the job is about, if it still exists. */
static Slice *job_slice(MigrateJob *j) {
        Slice *s = slice_manager_find(j->manager->slices, j->slice);
        return s && s->id == j->slice_id ? s : NULL;
}

static void job_save(MigrateJob *j) {
        _cleanup_free_ char *path = state_path(j->manager, j->slice), *tmp = NULL, *nodes = NULL;
        _cleanup_fclose_ FILE *f = NULL;

        if (!path)
                return;
        tmp = strjoin(path, ".tmp");
        nodes = format_index_list(j->target, j->target_size);
        if (!tmp || !nodes)
                return (void) log_oom();
        f = fopen(tmp, "we");
        if (!f) {
                log_warning_errno(errno, "Failed to record migration job of slice '%s' in '%s', a restart will not resume it: %m",
                                  j->slice, tmp);
                return;
        }
        fprintf(f, "Nodes=%s\nMemoryMigration=%s\nMigrationBatchPages=%" PRIu64 "\nMigrationIntervalUSec=%" PRIu64
                   "\nMigrationCPUBudget=%u\nCGroupID=%" PRIu64 "\n",
                nodes, migrate_policy_to_string(j->tunables.policy), j->tunables.batch_pages, j->tunables.interval_usec,
                j->tunables.cpu_budget_percent, j->cgroup_id);
        if (fflush(f) != 0 || ferror(f) || rename(tmp, path) < 0) {
                log_warning_errno(errno ?: EIO, "Failed to write '%s', a restart will not resume the job: %m", path);
                (void) unlink(tmp);
        }
}

static void job_forget_state(MigrateJob *j) {
        _cleanup_free_ char *path = state_path(j->manager, j->slice);
        if (path && unlink(path) < 0 && errno != ENOENT)
                log_warning_errno(errno, "Failed to remove '%s', ignoring: %m", path);
}

static void job_finish(MigrateJob *j, JobState state, const char *message) {
        MigrateProgress p;
        _cleanup_free_ char *nodes = format_index_list(j->target, j->target_size);

        if (j->engine) {
                migrate_engine_progress(j->engine, &j->progress);
                j->engine_source = sd_event_source_disable_unref(j->engine_source);
                j->engine = migrate_engine_free(j->engine);
        }
        p = j->progress;
        j->state = state;
        if (message)
                (void) free_and_strdup(&j->message, message);
        job_forget_state(j);
        log_struct(state == JOB_FAILED ? LOG_WARNING : LOG_INFO, "TONARI_SLICE=%s", j->slice,
                   "TONARI_REASON=memory-migration", "TONARI_JOB=%" PRIu32, j->id,
                   "TONARI_PAGES_MOVED=%" PRIu64, p.pages_moved, "TONARI_PAGES_FAILED=%" PRIu64, p.pages_failed,
                   "TONARI_PAGES_GONE=%" PRIu64, p.pages_gone,
                   "TONARI_CPU_USEC=%" PRIu64, p.cpu_usec, "TONARI_SCAN_CPU_USEC=%" PRIu64, p.scan_cpu_usec,
                   "TONARI_IDLE_CPU_USEC=%" PRIu64, p.idle_cpu_usec, "TONARI_MOVE_CPU_USEC=%" PRIu64, p.move_cpu_usec,
                   "TONARI_MOVE_CALLS=%" PRIu64, p.move_calls, "TONARI_PASSES=%" PRIu64, p.passes,
                   "TONARI_PAGES_SCANNED=%" PRIu64, p.pages_scanned, "TONARI_ROUNDS=%" PRIu64, p.rounds,
                   "TONARI_HOT_PAGES_MOVED=%" PRIu64, p.hot_pages_moved, "TONARI_WORKER_PINNED=%d", p.worker_pinned,
                   "TONARI_PAGES_TOTAL=%" PRIu64, p.pages_total, "TONARI_RESULT=%s", job_state_to_string(state),
                   "TONARI_HOT_LOCAL_USEC=%" PRIu64, p.hot_local_usec > p.started_usec ? p.hot_local_usec - p.started_usec : 0,
                   "TONARI_ELAPSED_USEC=%" PRIu64, p.finished_usec > p.started_usec ? p.finished_usec - p.started_usec : 0,
                   LOG_MESSAGE("Migration of slice '%s' to nodes %s %s (%s): %" PRIu64 " of %" PRIu64
                               " pages moved (%" PRIu64 " referenced first), %" PRIu64 " failed, %" PRIu64
                               " gone, %" PRIu64 " ms CPU%s%s.",
                               j->slice, strna(nodes), job_state_to_string(state),
                               migrate_policy_to_string(j->tunables.policy), p.pages_moved, p.pages_total,
                               p.hot_pages_moved, p.pages_failed, p.pages_gone, p.cpu_usec / 1000,
                               j->message ? ": " : "", strempty(j->message)));
        if (j->manager->bus)
                (void) sd_bus_emit_signal(j->manager->bus, "/org/tonari/Manager1", "org.tonari.Manager1", "JobRemoved",
                                          "uoss", j->id, j->object_path, j->slice, job_state_to_string(state));
        job_free(j);
}

static void narrowed(Slice *s, int error, const char *message, void *userdata) {
        MigrateJob *j = userdata;
        (void) s;
        if (error < 0)
                return job_finish(j, JOB_FAILED, message ?: "cannot narrow the slice's memory nodes");
        job_finish(j, j->cancel_requested ? JOB_CANCELLED : JOB_DONE, NULL);
}

static void job_narrow(MigrateJob *j) {
        Slice *s = job_slice(j);
        int r;

        if (!s)
                return job_finish(j, JOB_FAILED, "the slice was removed");
        j->state = JOB_NARROWING;
        r = slice_set_memory_nodes(s, j->target, j->target_size, NULL, 0, narrowed, j);
        if (r < 0) {
                _cleanup_free_ char *m = NULL;
                (void) set_error_message(&m, r, "cannot narrow the slice's memory nodes: %s", strerror(-r));
                job_finish(j, JOB_FAILED, m);
        }
}

static int on_engine_done(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        MigrateJob *j = userdata;
        MigrateProgress p;

        (void) es;
        (void) fd;
        (void) revents;
        migrate_engine_progress(j->engine, &p);
        if (p.state != MIGRATE_ENGINE_DONE && p.state != MIGRATE_ENGINE_CANCELLED && p.state != MIGRATE_ENGINE_FAILED)
                return 0;
        j->progress = p;
        j->engine_source = sd_event_source_disable_unref(j->engine_source);
        j->engine = migrate_engine_free(j->engine);
        if (p.state == MIGRATE_ENGINE_CANCELLED) {
                job_finish(j, JOB_CANCELLED, NULL);
                return 0;
        }
        if (p.state == MIGRATE_ENGINE_FAILED) {
                _cleanup_free_ char *m = NULL;
                (void) set_error_message(&m, p.error, "moving pages failed: %s", strerror(-p.error));
                job_finish(j, JOB_FAILED, m);
                return 0;
        }
        job_narrow(j);
        return 0;
}

static int job_get_pids(void *userdata, pid_t **ret, size_t *ret_n) {
        MigrateJob *j = userdata;
        return slice_cgroup_get_pids(slice_manager_cgroup_root(j->manager->slices), j->cgroup, ret, ret_n);
}

static int job_start_engine(MigrateJob *j) {
        MigrateConfig c = {
                .policy = j->tunables.policy,
                .batch_pages = j->tunables.batch_pages,
                .interval_usec = j->tunables.interval_usec,
                .cpu_budget_percent = j->tunables.cpu_budget_percent,
                .target_nodes = j->target,
                .target_nodes_size = j->target_size,
                .proc = "/proc",
                .page_idle = j->manager->page_idle,
                .get_pids = job_get_pids,
                .get_pids_userdata = j,
                .worker_any_cpu = j->tunables.worker_any_cpu,
        };
        int r;

        job_save(j);
        r = migrate_engine_start(&c, &j->engine);
        if (r < 0)
                return r;
        r = sd_event_add_io(j->manager->event, &j->engine_source, migrate_engine_fd(j->engine), EPOLLIN,
                            on_engine_done, j);
        if (r < 0)
                return r;
        j->state = JOB_MOVING;
        return 0;
}

static void widened(Slice *s, int error, const char *message, void *userdata) {
        MigrateJob *j = userdata;
        int r;

        (void) s;
        if (error < 0)
                return job_finish(j, JOB_FAILED, message ?: "cannot widen the slice's memory nodes");
        if (j->cancel_requested)
                return job_finish(j, JOB_CANCELLED, NULL);
        r = job_start_engine(j);
        if (r < 0) {
                _cleanup_free_ char *m = NULL;
                (void) set_error_message(&m, r, "cannot start moving pages: %s", strerror(-r));
                job_finish(j, JOB_FAILED, m);
        }
}

/* The CPUs of the nodes in mask (/sys/devices/system/node/nodeN/cpulist), NULL if none. */
static int cpus_of_nodes(const uint8_t *mask, size_t size, uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ uint8_t *cpus = NULL;
        size_t n_cpus = 0;

        for (size_t i = 0; i < size * 8; i++) {
                _cleanup_free_ char *line = NULL;
                _cleanup_free_ uint8_t *m = NULL;
                size_t k = 0;
                char path[80];
                int r;

                if (!(mask[i / 8] & (1U << (i % 8))))
                        continue;
                (void) snprintf(path, sizeof(path), "/sys/devices/system/node/node%zu/cpulist", i);
                r = read_one_line_file(path, &line);
                if (r < 0)
                        return r;
                r = parse_index_list(line, 8191, &m, &k);
                if (r < 0)
                        return r;
                if (k > n_cpus) {
                        uint8_t *a = realloc(cpus, k);
                        if (!a)
                                return -ENOMEM;
                        memset(a + n_cpus, 0, k - n_cpus);
                        cpus = a;
                        n_cpus = k;
                }
                for (size_t b = 0; b < k; b++)
                        cpus[b] |= m[b];
        }
        if (index_list_count(cpus, n_cpus) == 0) {
                *ret = NULL;
                *ret_size = 0;
                return 0;
        }
        *ret = TAKE_PTR(cpus);
        *ret_size = n_cpus;
        return 0;
}

static int job_new(MigrateManager *m, Slice *s, const uint8_t *target, size_t target_size,
                   const MigrateDefaults *tunables, MigrateJob **ret) {
        MigrateJob *j = new0(MigrateJob, 1);
        char path[sizeof(MIGRATE_JOB_OBJECT_PREFIX) + 16];

        if (!j)
                return -ENOMEM;
        j->id = ++m->last_id;
        (void) snprintf(path, sizeof(path), MIGRATE_JOB_OBJECT_PREFIX "/%" PRIu32, j->id);
        j->object_path = strdup(path);
        j->slice = strdup(s->name);
        j->cgroup = s->cgroup ? strdup(s->cgroup) : NULL;
        j->target = memdup(target, target_size);
        j->target_size = target_size;
        j->slice_id = s->id;
        j->cgroup_id = s->cgroup_id;
        j->tunables = *tunables;
        j->created_usec = now(CLOCK_MONOTONIC);
        if (!j->object_path || !j->slice || !j->cgroup || !j->target) {
                job_free(j);
                return -ENOMEM;
        }
        j->manager = m;
        j->next = m->jobs;
        m->jobs = j;
        *ret = j;
        return 0;
}

int migrate_job_start(MigrateManager *m, Slice *s, const uint8_t *target, size_t target_size,
                      const MigrateDefaults *tunables, char **ret_path, char **ret_error) {
        _cleanup_free_ uint8_t *wide = NULL, *cpus = NULL;
        _cleanup_free_ char *path = NULL;
        size_t wide_size = 0, n_cpus = 0;
        MigrateJob *j;
        int r;

        r = cpus_of_nodes(target, target_size, &cpus, &n_cpus);
        if (r < 0)
                return set_error_message(ret_error, r, "cannot read the CPUs of the target nodes: %s", strerror(-r));
        if (tunables->policy != MIGRATE_EAGER && s->settings.allowed_mems) {
                wide_size = MAX(target_size, s->settings.allowed_mems_size);
                wide = new0(uint8_t, wide_size);
                if (!wide)
                        return -ENOMEM;
                for (size_t i = 0; i < wide_size; i++)
                        wide[i] = (i < target_size ? target[i] : 0) |
                                  (i < s->settings.allowed_mems_size ? s->settings.allowed_mems[i] : 0);
        }
        r = job_new(m, s, target, target_size, tunables, &j);
        if (r < 0)
                return r;
        /* The backend may be done at once (cgroupfs) and the job gone before this returns. */
        path = strdup(j->object_path);
        if (!path) {
                job_free(j);
                return -ENOMEM;
        }
        log_struct(LOG_INFO, "TONARI_SLICE=%s", s->name, "TONARI_REASON=memory-migration", "TONARI_JOB=%" PRIu32, j->id,
                   LOG_MESSAGE("Migrating slice '%s' (%s, %" PRIu64 " pages every %" PRIu64 " ms, CPU budget %u%%).",
                               s->name, migrate_policy_to_string(tunables->policy), tunables->batch_pages,
                               tunables->interval_usec / 1000, tunables->cpu_budget_percent));
        if (tunables->policy == MIGRATE_EAGER) {
                /* The kernel moves every page while the new cpuset.mems is written. */
                j->state = JOB_NARROWING;
                r = slice_set_memory_nodes(s, target, target_size, cpus, n_cpus, narrowed, j);
        } else {
                /* Unrestricted slices stay unrestricted while moving: no page is anywhere it may not be. */
                j->state = JOB_WIDENING;
                r = slice_set_memory_nodes(s, wide, wide_size, cpus, n_cpus, widened, j);
        }
        if (r < 0) {
                job_free(j);
                return set_error_message(ret_error, r, "cannot change the slice's nodes: %s", strerror(-r));
        }
        if (ret_path)
                *ret_path = TAKE_PTR(path);
        return 0;
}

void migrate_job_cancel(MigrateJob *j) {
        j->cancel_requested = true;
        if (j->state == JOB_MOVING && j->engine)
                migrate_engine_cancel(j->engine);
}

/* ---- AllowedMemoryNodes= from SetSliceProperties() */

static int on_memory_nodes(Slice *s, const uint8_t *mems, size_t mems_size, bool alone, sd_bus_message *msg,
                           sd_bus_error *error, void *userdata) {
        MigrateManager *m = userdata;
        _cleanup_free_ char *why = NULL;
        MigrateJob *j = migrate_manager_find_job_by_slice(m, s->name);
        int r;

        (void) msg;
        if (j)
                return sd_bus_error_setf(error, "org.tonari.Error.SliceBusy",
                                         "Slice '%s' is being migrated (job %" PRIu32 "); cancel it or wait.", s->name, j->id);
        if (!alone || m->defaults.policy == MIGRATE_EAGER || index_list_count(mems, mems_size) == 0)
                return 0;
        r = migrate_job_start(m, s, mems, mems_size, &m->defaults, NULL, &why);
        if (r < 0)
                return sd_bus_error_setf(error, "org.tonari.Error.JobFailed", "Cannot migrate slice '%s': %s", s->name,
                                         why ?: strerror(-r));
        return 1;
}

/* ---- resuming after a restart */

static int parse_state(const char *text, uint8_t **ret_nodes, size_t *ret_size, MigrateDefaults *t, uint64_t *ret_cgroup_id) {
        _cleanup_free_ char *copy = strdup(text);
        char *line, *save = NULL;
        bool have_nodes = false;

        if (!copy)
                return -ENOMEM;
        for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *v = strchr(line, '=');
                uint64_t u;
                if (!v)
                        return -EINVAL;
                *v++ = 0;
                if (streq(line, "Nodes")) {
                        if (parse_index_list(v, 1023, ret_nodes, ret_size) < 0)
                                return -EINVAL;
                        have_nodes = true;
                } else if (streq(line, "MemoryMigration")) {
                        t->policy = migrate_policy_from_string(v);
                        if (t->policy < 0 || t->policy == MIGRATE_EAGER)
                                return -EINVAL;
                } else {
                        if (safe_atou64(v, &u) < 0)
                                return -EINVAL;
                        if (streq(line, "MigrationBatchPages"))
                                t->batch_pages = u;
                        else if (streq(line, "MigrationIntervalUSec"))
                                t->interval_usec = u;
                        else if (streq(line, "MigrationCPUBudget"))
                                t->cpu_budget_percent = (unsigned) MIN(u, (uint64_t) 1000);
                        else if (streq(line, "CGroupID"))
                                *ret_cgroup_id = u;
                }
        }
        if (!have_nodes || migrate_tunables_validate(t->batch_pages, t->interval_usec, t->cpu_budget_percent, NULL, 0) < 0)
                return -EINVAL;
        return 0;
}

static bool strictly_wider(const uint8_t *now, size_t now_size, const uint8_t *target, size_t target_size) {
        bool more = false;
        if (!now) /* unrestricted */
                return true;
        for (size_t i = 0; i < MAX(now_size, target_size); i++) {
                uint8_t a = i < now_size ? now[i] : 0, b = i < target_size ? target[i] : 0;
                if ((a & b) != b)
                        return false;
                if (a & ~b)
                        more = true;
        }
        return more;
}

static void resume_one(MigrateManager *m, const char *file) {
        _cleanup_free_ char *path = strjoin(m->state_dir, "/", file), *text = NULL, *name = NULL;
        _cleanup_free_ uint8_t *nodes = NULL;
        MigrateDefaults t = MIGRATE_DEFAULTS;
        size_t size = 0;
        uint64_t cgroup_id = 0;
        const char *dot = endswith(file, ".job");
        MigrateJob *j;
        Slice *s;
        int r;

        if (!path || !dot)
                return;
        name = strndup(file, dot - file);
        if (!name)
                return (void) log_oom();
        r = read_full_file(path, &text, NULL);
        if (r >= 0)
                r = parse_state(text, &nodes, &size, &t, &cgroup_id);
        t.worker_any_cpu = m->defaults.worker_any_cpu; /* tonarid.conf's, not the job's */
        s = slice_manager_find(m->slices, name);
        if (r < 0 || !s || s->cgroup_id != cgroup_id || s->state != SLICE_ACTIVE ||
            !strictly_wider(s->settings.allowed_mems, s->settings.allowed_mems_size, nodes, size)) {
                log_info("Not resuming the migration of slice '%s' recorded in '%s': %s.", name, path,
                         r < 0 ? "the record cannot be read" : !s ? "no such slice" : s->cgroup_id != cgroup_id ? "another slice of that name"
                         : "its memory nodes are not wider than the target");
                (void) unlink(path);
                return;
        }
        r = job_new(m, s, nodes, size, &t, &j);
        if (r < 0)
                return (void) log_oom();
        j->resumed = true;
        r = job_start_engine(j);
        if (r < 0) {
                log_warning_errno(r, "Failed to resume the migration of slice '%s': %m", name);
                job_finish(j, JOB_FAILED, "cannot resume");
                return;
        }
        log_struct(LOG_INFO, "TONARI_SLICE=%s", name, "TONARI_REASON=memory-migration", "TONARI_JOB=%" PRIu32, j->id,
                   LOG_MESSAGE("Resumed the migration of slice '%s' (%s) after a restart.", name,
                               migrate_policy_to_string(t.policy)));
}

static void resume_jobs(MigrateManager *m) {
        _cleanup_(closedirp) DIR *d = NULL;
        struct dirent *de;

        if (!m->state_dir)
                return;
        d = opendir(m->state_dir);
        if (!d)
                return;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.' && endswith(de->d_name, ".job"))
                        resume_one(m, de->d_name);
}

int migrate_manager_new(sd_event *event, sd_bus *bus, SliceManager *slices, const char *state_dir,
                        const char *page_idle, MigrateManager **ret) {
        MigrateManager *m = new0(MigrateManager, 1);

        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(event);
        m->bus = bus ? sd_bus_ref(bus) : NULL;
        m->slices = slices;
        m->defaults = MIGRATE_DEFAULTS;
        m->state_dir = state_dir ? strdup(state_dir) : NULL;
        m->page_idle = page_idle ? strdup(page_idle) : NULL;
        if ((state_dir && !m->state_dir) || (page_idle && !m->page_idle)) {
                migrate_manager_free(m);
                return -ENOMEM;
        }
        if (m->state_dir && mkdirat_p(AT_FDCWD, m->state_dir, 0755) < 0)
                log_warning_errno(errno, "Failed to create '%s', migration jobs will not survive a restart: %m", m->state_dir);
        slice_manager_set_memory_nodes_callback(slices, on_memory_nodes, m);
        resume_jobs(m);
        *ret = m;
        return 0;
}

void migrate_manager_set_defaults(MigrateManager *m, const MigrateDefaults *d) {
        assert(m);
        assert(d);
        m->defaults = *d;
}

MigrateManager *migrate_manager_free(MigrateManager *m) {
        if (!m)
                return NULL;
        slice_manager_set_memory_nodes_callback(m->slices, NULL, NULL);
        while (m->jobs)
                job_free(m->jobs);
        sd_bus_unref(m->bus);
        sd_event_unref(m->event);
        free(m->state_dir);
        free(m->page_idle);
        free(m);
        return NULL;
}
