/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The hog limiter in tonarid: per hog-limited slice, a timer that samples the slice's managed
 * processes with taskstats, runs the policy and moves processes between the group's cgroups.
 * See limiter.h for the layout and the rules.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "limiter.h"
#include "log.h"
#include "parse-util.h"
#include "proc-util.h"
#include "string-util.h"
#include "strv.h"

#define LIMITER_SIGNAL_PATH "/org/tonari/Manager1"
#define LIMITER_SIGNAL_INTERFACE "org.tonari.Manager1"

typedef struct Proc {
        pid_t pid;
        TaskstatsProcess *tp; /* its /proc files held open; NULL when they could not be */
        uint64_t start_ticks;
        char comm[TASKSTATS_COMM_MAX + 1];
        LimiterClass class; /* the cgroup it is in */
        bool seen;
        bool have_prev;
        usec_t prev_ts, prev_cpu, prev_cpu_delay, prev_blkio_delay;
        uint64_t prev_io;
        bool prev_delays;
        bool prev_run_delay; /* prev_cpu_delay is the scheduler's run delay */
        double cpu_percent, io_bytes_per_sec, delay_percent;
        usec_t since_realtime_usec;
} Proc;

typedef struct LimiterSlice {
        LimiterManager *manager;
        char *name;
        uint64_t cgroup_id;
        HogLimitingMode mode;
        LimiterSliceOverrides overrides;
        LimiterParams params;
        char *group; /* the managed group's cgroup path */
        LimiterPolicy *policy;
        sd_event_source *timer;
        Proc *procs;
        size_t n_procs;
} LimiterSlice;

struct LimiterManager {
        sd_event *event;
        sd_bus *bus;
        SliceManager *slices;
        Taskstats *ts;
        TaskstatsSupport support;
        LimiterParams defaults;
        char *state_file;
        LimiterSlice **lslices;
        size_t n_lslices;
        char **io_devices; /* "MAJ:MIN" of every disk, for io.max */
        LimiterStats stats;
};

static const char *const mode_table[_HOG_LIMITING_MODE_MAX] = {
        [HOG_LIMITING_NO] = "no",
        [HOG_LIMITING_YES] = "yes",
        [HOG_LIMITING_OBSERVE] = "observe",
};

const char *hog_limiting_mode_to_string(HogLimitingMode m) {
        return m >= 0 && m < _HOG_LIMITING_MODE_MAX ? mode_table[m] : NULL;
}

HogLimitingMode hog_limiting_mode_from_string(const char *s) {
        if (!s)
                return _HOG_LIMITING_MODE_INVALID;
        for (HogLimitingMode m = 0; m < _HOG_LIMITING_MODE_MAX; m++)
                if (streq(s, mode_table[m]))
                        return m;
        return _HOG_LIMITING_MODE_INVALID;
}

static CGroupRoot *root_of(LimiterManager *m) {
        return slice_manager_cgroup_root(m->slices);
}

static int cgroup_version(LimiterManager *m) {
        return cgroup_root_version(root_of(m));
}

/* The cgroup that holds the slice's processes: its scope (systemd) or itself (cgroupfs). */
static int group_of(Slice *s, char **ret) {
        char *p;

        if (!s->cgroup)
                return -ENODATA;
        p = s->scope ? strjoin(s->cgroup, "/", s->scope) : strdup(s->cgroup);
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

static int child_path(const LimiterSlice *l, const char *child, char **ret) {
        char *p = strjoin(l->group, "/", child);
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

/* Every disk of the host: not loop, ram or zram devices, nor removable ones (floppy, CD-ROM);
 * partitions are not in /sys/block. */
static int find_io_devices(char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        d = opendir("/sys/block");
        if (!d)
                return -errno;
        while ((de = readdir(d))) {
                _cleanup_free_ char *path = NULL, *dev = NULL, *removable = NULL, *rpath = NULL;

                if (de->d_name[0] == '.' || startswith(de->d_name, "loop") || startswith(de->d_name, "ram") ||
                    startswith(de->d_name, "zram"))
                        continue;
                rpath = strjoin("/sys/block/", de->d_name, "/removable");
                if (!rpath)
                        return -ENOMEM;
                if (read_one_line_file(rpath, &removable) >= 0 && streq(removable, "1"))
                        continue;
                path = strjoin("/sys/block/", de->d_name, "/dev");
                if (!path)
                        return -ENOMEM;
                if (read_one_line_file(path, &dev) < 0)
                        continue;
                if (strv_consume(&l, TAKE_PTR(dev)) < 0)
                        return -ENOMEM;
        }
        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

/* ---- the group's cgroups and their limits */

static int write_limits(LimiterSlice *l) {
        CGroupRoot *root = root_of(l->manager);
        _cleanup_free_ char *cpu = NULL, *io = NULL;
        char buf[128];
        int r;

        r = child_path(l, "cpu-limited", &cpu);
        if (r >= 0)
                r = child_path(l, "io-limited", &io);
        if (r < 0)
                return r;

        if (cgroup_version(l->manager) == 2) {
                (void) snprintf(buf, sizeof(buf), "%" PRIu64, l->params.cpu_limit_weight);
                r = cgroup_write_file(root, NULL, cpu, "cpu.weight", buf);
                if (r < 0)
                        return r;
                STRV_FOREACH(dev, l->manager->io_devices) {
                        (void) snprintf(buf, sizeof(buf), "%s rbps=%" PRIu64 " wbps=%" PRIu64, *dev,
                                        l->params.io_limit_bytes_per_sec, l->params.io_limit_bytes_per_sec);
                        r = cgroup_write_file(root, NULL, io, "io.max", buf);
                        if (r < 0)
                                log_debug_errno(r, "io.max of '%s' for %s not written, ignoring: %m", l->name, *dev);
                }
                return 0;
        }

        /* v1: cpu.shares is CPUWeight scaled as systemd does (100 ↔ 1024), at least 2. */
        (void) snprintf(buf, sizeof(buf), "%" PRIu64, MAX(l->params.cpu_limit_weight * 1024 / 100, (uint64_t) 2));
        r = cgroup_write_file(root, "cpu", cpu, "cpu.shares", buf);
        if (r < 0)
                return r;
        STRV_FOREACH(dev, l->manager->io_devices) {
                (void) snprintf(buf, sizeof(buf), "%s %" PRIu64, *dev, l->params.io_limit_bytes_per_sec);
                r = cgroup_write_file(root, "blkio", io, "blkio.throttle.write_bps_device", buf);
                if (r >= 0)
                        r = cgroup_write_file(root, "blkio", io, "blkio.throttle.read_bps_device", buf);
                if (r < 0)
                        log_debug_errno(r, "blkio throttle of '%s' for %s not written, ignoring: %m", l->name, *dev);
        }
        return 0;
}

static const char *const group_children[] = { "unlimited", "cpu-limited", "io-limited", LIMITER_GROUP_UNMANAGED };

/*
 * Makes the group's cgroups. v2: the group must hold no process once it has children with
 * controllers: its processes go to "unlimited" (cgroup_make_leaf() never writes above the group).
 * The memory controller is asked for too: without it io.max cannot throttle buffered writeback.
 */
static int make_group(LimiterSlice *l) {
        static const char *const with_memory[] = { "cpu", "io", "memory", NULL };
        static const char *const without_memory[] = { "cpu", "io", NULL };
        CGroupRoot *root = root_of(l->manager);
        int r;

        if (cgroup_version(l->manager) == 2) {
                r = cgroup_make_leaf(root, l->group, "unlimited", with_memory);
                if (r < 0) {
                        log_warning_errno(r, "Cannot enable the memory controller below '%s' (/%s): io.max of "
                                          "io-limited will not throttle buffered writeback: %m",
                                          l->name, l->group);
                        r = cgroup_make_leaf(root, l->group, "unlimited", without_memory);
                }
                if (r < 0)
                        return r;
                for (size_t i = 1; i < ELEMENTSOF(group_children); i++) {
                        r = cgroup_make_leaf(root, l->group, group_children[i], without_memory);
                        if (r < 0)
                                return r;
                }
                return write_limits(l);
        }

        for (size_t i = 0; i < ELEMENTSOF(group_children); i++) {
                _cleanup_free_ char *p = NULL;

                r = child_path(l, group_children[i], &p);
                if (r < 0)
                        return r;
                r = cgroup_create(root, p);
                if (r < 0)
                        return r;
        }
        return write_limits(l);
}

static int move_to(LimiterSlice *l, const char *child, pid_t pid) {
        _cleanup_free_ char *p = NULL;
        int r;

        r = child_path(l, child, &p);
        if (r < 0)
                return r;
        return cgroup_attach(root_of(l->manager), p, pid);
}

/* v1 only: processes attached to the slice after it became a group are managed from then on. */
static void adopt_strays(LimiterSlice *l) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;

        if (cgroup_version(l->manager) != 1)
                return;
        if (cgroup_get_pids(root_of(l->manager), l->group, &pids, &n) < 0)
                return;
        for (size_t i = 0; i < n; i++)
                (void) move_to(l, "unlimited", pids[i]);
}

/* ---- state file: one line per hog-limited slice */

static int save_state(LimiterManager *m) {
        _cleanup_free_ char *text = NULL;
        size_t size = 0;
        FILE *f;
        int r;

        if (!m->state_file)
                return 0;
        f = open_memstream(&text, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_lslices; i++) {
                LimiterSlice *l = m->lslices[i];
                fprintf(f, "%s %" PRIu64 " %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", l->name,
                        l->cgroup_id, hog_limiting_mode_to_string(l->mode), l->overrides.interval_usec,
                        l->overrides.window_usec, l->overrides.io_limit_bytes_per_sec, l->overrides.cpu_limit_weight,
                        l->overrides.cpu_hog_percent);
        }
        if (fclose(f) != 0)
                return -ENOMEM;
        r = write_file_atomic(m->state_file, strempty(text));
        if (r < 0)
                return log_warning_errno(r, "Cannot write '%s', hog limiting will not be re-adopted after a "
                                         "restart: %m", m->state_file);
        return 0;
}

/* ---- per-slice state */

static int cmp_proc(const void *a, const void *b) {
        pid_t x = ((const Proc *) a)->pid, y = ((const Proc *) b)->pid;
        return x < y ? -1 : x > y;
}

/* l->procs is sorted by PID after every round. */
static Proc *find_proc(LimiterSlice *l, pid_t pid) {
        Proc key = { .pid = pid };

        if (l->n_procs == 0)
                return NULL;
        return bsearch(&key, l->procs, l->n_procs, sizeof(Proc), cmp_proc);
}

static void procs_free(Proc *procs, size_t n) {
        for (size_t i = 0; i < n; i++)
                taskstats_process_close(procs[i].tp);
        free(procs);
}

static LimiterSlice *limiter_slice_free(LimiterSlice *l) {
        if (!l)
                return NULL;
        sd_event_source_disable_unref(l->timer);
        limiter_policy_free(l->policy);
        procs_free(l->procs, l->n_procs);
        free(l->group);
        free(l->name);
        return mfree(l);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(LimiterSlice *, limiter_slice_free);

static LimiterSlice *find_lslice(LimiterManager *m, const char *name) {
        for (size_t i = 0; i < m->n_lslices; i++)
                if (streq(m->lslices[i]->name, name))
                        return m->lslices[i];
        return NULL;
}

static void drop_lslice(LimiterManager *m, LimiterSlice *l) {
        for (size_t i = 0; i < m->n_lslices; i++)
                if (m->lslices[i] == l) {
                        memmove(m->lslices + i, m->lslices + i + 1, (m->n_lslices - i - 1) * sizeof(LimiterSlice *));
                        m->n_lslices--;
                        break;
                }
        limiter_slice_free(l);
}

static void params_for(LimiterManager *m, const LimiterSliceOverrides *o, HogLimitingMode mode, LimiterParams *ret) {
        LimiterParams p = m->defaults;

        if (o->interval_usec > 0)
                p.interval_usec = o->interval_usec;
        if (o->window_usec > 0)
                p.window_usec = o->window_usec;
        if (o->io_limit_bytes_per_sec > 0) {
                p.io_limit_bytes_per_sec = o->io_limit_bytes_per_sec;
                /* A hog moves at least twice the limit, else limiting would not slow it. */
                p.io_hog_bytes_per_sec = MAX(m->defaults.io_hog_bytes_per_sec, 2 * o->io_limit_bytes_per_sec);
        }
        if (o->cpu_limit_weight > 0)
                p.cpu_limit_weight = o->cpu_limit_weight;
        if (o->cpu_hog_percent > 0)
                p.cpu_hog_percent = (double) o->cpu_hog_percent;
        /* The window holds at least one interval and fits the policy's history. */
        if (p.window_usec < p.interval_usec)
                p.window_usec = p.interval_usec;
        p.observe_only = mode == HOG_LIMITING_OBSERVE;
        *ret = p;
}

/* ---- one round */

static void emit_decision(LimiterSlice *l, const LimiterDecision *d) {
        LimiterManager *m = l->manager;

        if (!m->bus || !d->applied)
                return;
        if (d->action == LIMITER_LIMIT)
                (void) sd_bus_emit_signal(m->bus, LIMITER_SIGNAL_PATH, LIMITER_SIGNAL_INTERFACE, "ProcessLimited",
                                          "sussdd", l->name, (uint32_t) d->pid, limiter_class_to_string(d->class),
                                          limiter_reason_to_string(d->reason), d->cpu_percent, d->io_bytes_per_sec);
        else if (d->action == LIMITER_RELEASE)
                (void) sd_bus_emit_signal(m->bus, LIMITER_SIGNAL_PATH, LIMITER_SIGNAL_INTERFACE, "ProcessReleased",
                                          "sus", l->name, (uint32_t) d->pid, limiter_reason_to_string(d->reason));
}

static const char *fmt_percent(char buf[static 16], double v) {
        if (isnan(v))
                return "n/a";
        (void) snprintf(buf, 16, "%.1f%%", v);
        return buf;
}

/* from: the class the process is in (for a release: the one it leaves). */
static void log_decision(LimiterSlice *l, const LimiterDecision *d, const char *comm, LimiterClass from, int error) {
        const char *action = limiter_action_to_string(d->action), *class = limiter_class_to_string(d->class),
                   *reason = limiter_reason_to_string(d->reason);
        char what[160], cd[16], bd[16];
        bool cpu = d->class == LIMITER_CPU_LIMITED || from == LIMITER_CPU_LIMITED;

        if (d->action == LIMITER_LIMIT)
                (void) snprintf(what, sizeof(what), "%s %s process %i (%s) to %s (%s)",
                                d->applied ? "Limited" : "Would limit", l->name, (int) d->pid, comm, class, reason);
        else if (d->action == LIMITER_RELEASE)
                (void) snprintf(what, sizeof(what), "%s %s process %i (%s) from %s (%s)",
                                d->applied ? "Released" : "Would release", l->name, (int) d->pid, comm,
                                strna(limiter_class_to_string(from)), reason);
        else
                (void) snprintf(what, sizeof(what), "Kept %s process %i (%s) %s: the others improved", l->name,
                                (int) d->pid, comm, class);

        log_struct_errno(error < 0 ? LOG_WARNING : LOG_INFO, error, "TONARI_SLICE=%s", l->name, "TONARI_PID=%i",
                         (int) d->pid, "TONARI_COMM=%s", comm, "TONARI_ACTION=%s", action, "TONARI_CLASS=%s", class,
                         "TONARI_REASON=%s", reason, "TONARI_APPLIED=%s", d->applied && error >= 0 ? "yes" : "no",
                         "TONARI_CPU_PERCENT=%.1f", d->cpu_percent, "TONARI_CPU_PERCENT_LIFETIME=%.1f",
                         d->cpu_percent_lifetime, "TONARI_IO_BYTES_PER_SEC=%.0f", d->io_bytes_per_sec,
                         "TONARI_IO_COUNT_PER_SEC=%.1f", d->io_count_per_sec, "TONARI_OTHERS=%u", d->before.n,
                         "TONARI_OTHERS_CPU_PERCENT_BEFORE=%.1f", d->before.cpu_percent,
                         "TONARI_OTHERS_CPU_PERCENT_AFTER=%.1f", d->after.cpu_percent,
                         "TONARI_OTHERS_IO_COUNT_PER_SEC_BEFORE=%.1f", d->before.io_count_per_sec,
                         "TONARI_OTHERS_IO_COUNT_PER_SEC_AFTER=%.1f", d->after.io_count_per_sec,
                         "TONARI_OTHERS_CPU_DELAY_PERCENT=%.1f", d->after.cpu_delay_percent,
                         "TONARI_OTHERS_BLKIO_DELAY_PERCENT=%.1f", d->after.blkio_delay_percent,
                         "TONARI_PSI_SOME_AVG10=%.2f", d->after.psi_some_avg10, "TONARI_LIMITED_USEC=%" PRIu64,
                         d->limited_usec, "TONARI_TOTAL_BEFORE=%.1f", d->total_before, "TONARI_TOTAL_AFTER=%.1f",
                         d->total_after, "TONARI_HOLDOFF_USEC=%" PRIu64, d->holdoff_usec,
                         LOG_MESSAGE("%s: cpu %.1f%%, io %.0f B/s, %.1f calls/s; others (%u) cpu %.1f%% → %.1f%%, "
                                     "io calls %.1f/s → %.1f/s, cpu delay %s, blkio delay %s; all %.*f → %.*f %s%s%s.",
                                     what, d->cpu_percent, d->io_bytes_per_sec, d->io_count_per_sec, d->before.n,
                                     d->before.cpu_percent, d->after.cpu_percent, d->before.io_count_per_sec,
                                     d->after.io_count_per_sec, fmt_percent(cd, d->after.cpu_delay_percent),
                                     fmt_percent(bd, d->after.blkio_delay_percent), cpu ? 1 : 0, d->total_before,
                                     cpu ? 1 : 0, d->total_after, cpu ? "% cpu" : "B/s",
                                     error < 0 ? ", not applied: " : "", error < 0 ? strerror(ERRNO_VALUE(error)) : ""));
}

/* Moves the process the decision names, if it is still that process (PID and start time). */
static int apply_decision(LimiterSlice *l, const LimiterDecision *d) {
        uint64_t ticks;
        int r;

        if (!d->applied || d->action == LIMITER_KEEP)
                return 0;
        r = proc_pid_start_time("/proc", d->pid, &ticks);
        if (r < 0)
                return r;
        if (ticks != d->start_time_ticks)
                return -ESRCH; /* the PID now belongs to another process: never limit it by mistake */
        return move_to(l, limiter_class_to_string(d->action == LIMITER_LIMIT ? d->class : LIMITER_UNLIMITED), d->pid);
}

static int read_pressure_avg10(LimiterSlice *l, const char *file, double *ret) {
        _cleanup_free_ char *text = NULL;
        const char *p;
        int r;

        r = cgroup_read_file(root_of(l->manager), NULL, l->group, file, &text);
        if (r < 0)
                return r;
        p = startswith(text, "some avg10=");
        if (!p)
                return -EBADMSG;
        *ret = strtod(p, NULL);
        return 0;
}

static void read_pressure(LimiterSlice *l, LimiterPressure *ret) {
        *ret = (LimiterPressure) {};
        if (cgroup_version(l->manager) != 2)
                return;
        if (read_pressure_avg10(l, "cpu.pressure", &ret->cpu_some_avg10) >= 0 &&
            read_pressure_avg10(l, "io.pressure", &ret->io_some_avg10) >= 0)
                ret->valid = true;
}

static double rate(uint64_t a, uint64_t b, usec_t dt, double scale) {
        return dt > 0 && b >= a ? scale * (double) (b - a) / (double) dt : 0;
}

/*
 * One sample of pid: through the files the previous round held open, else through newly opened
 * ones (they fail with ESRCH when the process with that PID is gone, even if another has it now),
 * else with plain queries (too many open files). A process asleep without CPU or I/O since its
 * last sample costs two reads, no netlink query (taskstats_process_sample_changed()). *tp is
 * handed over: the caller keeps it on success.
 */
static int sample_one(LimiterManager *m, pid_t pid, TaskstatsProcess **tp, TaskstatsSample *ret) {
        int r;

        if (*tp) {
                r = taskstats_process_sample_changed(m->ts, *tp, ret);
                if (r != -ESRCH)
                        return r;
                *tp = taskstats_process_close(*tp);
        }
        r = taskstats_process_open(m->ts, pid, tp);
        if (r == -ESRCH)
                return r;
        if (r < 0)
                return taskstats_query_process(m->ts, pid, ret);
        return taskstats_process_sample_changed(m->ts, *tp, ret);
}

static int sample_classes(LimiterSlice *l, LimiterSample **samples_p, Proc **procs_p, size_t *n_p,
                          size_t *allocated_p) {
        LimiterManager *m = l->manager;
        LimiterSample *samples = *samples_p;
        Proc *procs = *procs_p;
        size_t n = *n_p, allocated = *allocated_p;
        int r = 0;

        for (LimiterClass c = 0; c < _LIMITER_CLASS_MAX; c++) {
                _cleanup_free_ char *path = NULL;
                _cleanup_free_ pid_t *pids = NULL;
                size_t k = 0;

                r = child_path(l, limiter_class_to_string(c), &path);
                if (r < 0)
                        goto finish;
                r = cgroup_get_pids(root_of(m), path, &pids, &k);
                if (r == -ENOENT)
                        continue;
                if (r < 0)
                        goto finish;
                if (n + k > allocated) {
                        size_t a = MAX(n + k, 2 * allocated);
                        LimiterSample *ns = reallocarray(samples, a, sizeof(LimiterSample));
                        if (!ns) {
                                r = -ENOMEM;
                                goto finish;
                        }
                        samples = ns;
                        Proc *np = reallocarray(procs, a, sizeof(Proc));
                        if (!np) {
                                r = -ENOMEM;
                                goto finish;
                        }
                        procs = np;
                        allocated = a;
                }
                for (size_t i = 0; i < k; i++) {
                        TaskstatsProcess *tp = NULL;
                        TaskstatsSample s;
                        Proc *old, *p;

                        old = find_proc(l, pids[i]);
                        if (old)
                                tp = TAKE_PTR(old->tp);
                        if (sample_one(m, pids[i], &tp, &s) < 0) {
                                taskstats_process_close(tp);
                                continue; /* gone meanwhile, or a zombie */
                        }
                        p = &procs[n];
                        if (old && old->start_ticks == s.start_time_ticks)
                                *p = *old;
                        else {
                                TaskstatsSample t;

                                /* New, or the PID was reused: nothing of the old one carries over. */
                                *p = (Proc) { .pid = pids[i], .start_ticks = s.start_time_ticks };
                                if (taskstats_query_pid(m->ts, pids[i], &t) >= 0)
                                        memcpy(p->comm, t.comm, sizeof(p->comm));
                                p->since_realtime_usec = now(CLOCK_REALTIME);
                        }
                        p->tp = tp;
                        if (p->class != c)
                                p->since_realtime_usec = now(CLOCK_REALTIME);
                        p->class = c;

                        usec_t cpu = s.utime_usec + s.stime_usec;
                        uint64_t io = s.read_bytes + s.write_bytes;
                        if (p->have_prev) {
                                usec_t dt = s.timestamp_usec - p->prev_ts;
                                p->cpu_percent = rate(p->prev_cpu, cpu, dt, 100.0);
                                p->io_bytes_per_sec = rate(p->prev_io, io, dt, (double) USEC_PER_SEC);
                                p->delay_percent = s.have_delays && p->prev_delays
                                                           ? rate(p->prev_cpu_delay + p->prev_blkio_delay,
                                                                  s.cpu_delay_usec + s.blkio_delay_usec, dt, 100.0)
                                                   : s.have_run_delay && p->prev_run_delay
                                                           ? rate(p->prev_cpu_delay, s.run_delay_usec, dt, 100.0)
                                                           : NAN;
                        } else
                                p->delay_percent = NAN;
                        p->have_prev = true;
                        p->prev_ts = s.timestamp_usec;
                        p->prev_cpu = cpu;
                        p->prev_io = io;
                        p->prev_delays = s.have_delays;
                        p->prev_run_delay = !s.have_delays && s.have_run_delay;
                        p->prev_cpu_delay = s.have_delays ? s.cpu_delay_usec : s.run_delay_usec;
                        p->prev_blkio_delay = s.blkio_delay_usec;

                        samples[n] = (LimiterSample) {
                                .pid = s.pid,
                                .start_time_ticks = s.start_time_ticks,
                                .timestamp_usec = s.timestamp_usec,
                                .elapsed_usec = s.elapsed_usec,
                                .cpu_usec = cpu,
                                .io_bytes = io,
                                .io_count = s.read_syscalls + s.write_syscalls,
                                .have_delays = s.have_delays,
                                .cpu_delay_usec = s.cpu_delay_usec,
                                .blkio_delay_usec = s.blkio_delay_usec,
                                .have_run_delay = s.have_run_delay,
                                .run_delay_usec = s.run_delay_usec,
                                .class = c,
                        };
                        /* The policy's input, one line per process and round: at debug level a run
                         * can be replayed (test/limiter/recorded/). */
                        log_debug("hog-sample %s %i %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64
                                  " %" PRIu64 " %d %" PRIu64 " %" PRIu64 " %s %d %" PRIu64,
                                  l->name, (int) s.pid, s.start_time_ticks, s.timestamp_usec, s.elapsed_usec,
                                  (uint64_t) cpu, io, samples[n].io_count, s.have_delays, s.cpu_delay_usec,
                                  s.blkio_delay_usec, limiter_class_to_string(c), s.have_run_delay,
                                  s.run_delay_usec);
                        n++;
                }
        }

        r = 0;
finish:
        *samples_p = samples;
        *procs_p = procs;
        *n_p = n;
        *allocated_p = allocated;
        return r;
}

/* Collects the processes of the group's children, and samples them. */
static int sample_slice(LimiterSlice *l, LimiterSample **ret, size_t *ret_n) {
        _cleanup_free_ LimiterSample *samples = NULL;
        Proc *procs = NULL;
        size_t n = 0, allocated = 0;
        int r;

        adopt_strays(l);
        r = sample_classes(l, &samples, &procs, &n, &allocated);
        if (r < 0) {
                procs_free(procs, n);
                return r;
        }
        if (n > 1)
                qsort(procs, n, sizeof(Proc), cmp_proc);
        procs_free(l->procs, l->n_procs); /* what the new array did not take over */
        l->procs = procs;
        l->n_procs = n;
        *ret = TAKE_PTR(samples);
        *ret_n = n;
        return 0;
}

static int limiter_slice_round(LimiterSlice *l) {
        LimiterManager *m = l->manager;
        _cleanup_free_ LimiterSample *samples = NULL;
        _cleanup_free_ LimiterDecision *d = NULL;
        LimiterPressure pressure;
        size_t n = 0;
        int r, k;

        r = sample_slice(l, &samples, &n);
        if (r < 0)
                return r;
        read_pressure(l, &pressure);
        log_debug("hog-round %s %zu %d %.2f %.2f", l->name, n, pressure.valid, pressure.cpu_some_avg10,
                  pressure.io_some_avg10);
        k = limiter_policy_step(l->policy, samples, n, &pressure, &d);
        if (k < 0)
                return k;
        for (int i = 0; i < k; i++) {
                Proc *p = find_proc(l, d[i].pid);
                const char *comm = p && p->comm[0] ? p->comm : "?";

                r = apply_decision(l, &d[i]);
                log_decision(l, &d[i], comm, p ? p->class : d[i].class, r);
                if (r < 0)
                        continue;
                emit_decision(l, &d[i]);
                if (d[i].applied && d[i].action == LIMITER_LIMIT)
                        m->stats.n_limited++;
                else if (d[i].applied && d[i].action == LIMITER_RELEASE)
                        m->stats.n_released++;
                if (p && d[i].applied && d[i].action != LIMITER_KEEP) {
                        p->class = d[i].action == LIMITER_LIMIT ? d[i].class : LIMITER_UNLIMITED;
                        p->since_realtime_usec = now(CLOCK_REALTIME);
                }
        }
        return 0;
}

static int on_timer(sd_event_source *source, uint64_t usec, void *userdata) {
        LimiterSlice *l = userdata;
        LimiterManager *m = l->manager;
        usec_t start = now(CLOCK_MONOTONIC);
        Slice *s;
        int r;

        s = slice_manager_find(m->slices, l->name);
        if (!s || (l->cgroup_id != 0 && s->cgroup_id != 0 && s->cgroup_id != l->cgroup_id)) {
                log_info("Slice '%s' is gone, it is no longer hog-limited.", l->name);
                drop_lslice(m, l);
                (void) save_state(m);
                return 0;
        }

        if (l->cgroup_id == 0 && s->cgroup_id != 0) {
                l->cgroup_id = s->cgroup_id; /* read once systemd made the slice */
                (void) save_state(m);
        }
        (void) taskstats_refresh_delay_accounting(m->ts);
        r = limiter_slice_round(l);
        if (r < 0)
                log_warning_errno(r, "Hog limiting round of slice '%s' failed, trying again next interval: %m",
                                  l->name);
        m->stats.n_rounds++;
        m->stats.work_usec += now(CLOCK_MONOTONIC) - start;
        r = sd_event_source_set_time(source, usec + l->params.interval_usec);
        if (r >= 0)
                r = sd_event_source_set_enabled(source, SD_EVENT_ONESHOT);
        if (r < 0)
                log_error_errno(r, "Cannot schedule the next hog limiting round of slice '%s': %m", l->name);
        return 0;
}

/* Limited processes found in the group are the policy's, as confirmed: a restart releases nothing. */
static void adopt_limited(LimiterSlice *l) {
        for (LimiterClass c = LIMITER_CPU_LIMITED; c < _LIMITER_CLASS_MAX; c++) {
                _cleanup_free_ char *path = NULL;
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;

                if (child_path(l, limiter_class_to_string(c), &path) < 0 ||
                    cgroup_get_pids(root_of(l->manager), path, &pids, &n) < 0)
                        continue;
                for (size_t i = 0; i < n; i++) {
                        uint64_t ticks;

                        if (proc_pid_start_time("/proc", pids[i], &ticks) < 0)
                                continue;
                        if (limiter_policy_adopt(l->policy, pids[i], ticks, c) >= 0)
                                log_struct(LOG_INFO, "TONARI_SLICE=%s", l->name, "TONARI_PID=%i", (int) pids[i],
                                           "TONARI_CLASS=%s", limiter_class_to_string(c), "TONARI_ACTION=adopt",
                                           LOG_MESSAGE("Adopted %s process %i, found in %s.", l->name, (int) pids[i],
                                                       limiter_class_to_string(c)));
                }
        }
}

static int limiter_slice_start(LimiterManager *m, Slice *s, HogLimitingMode mode, const LimiterSliceOverrides *o,
                               bool adopting, char **ret_why) {
        _cleanup_(limiter_slice_freep) LimiterSlice *l = NULL;
        LimiterSlice **a;
        int r;

        l = new0(LimiterSlice, 1);
        if (!l)
                return -ENOMEM;
        l->manager = m;
        l->mode = mode;
        l->overrides = *o;
        l->cgroup_id = s->cgroup_id;
        l->name = strdup(s->name);
        if (!l->name)
                return -ENOMEM;
        r = group_of(s, &l->group);
        if (r < 0)
                return r;
        if (s->scope && cgroup_exists(root_of(m), l->group) <= 0)
                return -ENOENT;

        params_for(m, o, mode, &l->params);
        r = limiter_params_validate(&l->params);
        if (r < 0) {
                if (ret_why)
                        (void) asprintf(ret_why,
                                        "invalid hog limiting parameters: the window must be 1 to %d intervals",
                                        LIMITER_HISTORY_MAX - 2);
                return r;
        }
        r = limiter_policy_new(&l->params, &l->policy);
        if (r < 0)
                return r;

        r = make_group(l);
        if (r < 0)
                return log_error_errno(r, "Failed to make the hog limiting groups of slice '%s' (/%s): %m", l->name,
                                       l->group);
        /* AttachProcesses() and RegisterProcesses() put processes here from now on. */
        s->attach_leaf = "unlimited";
        if (adopting || mode == HOG_LIMITING_YES)
                adopt_limited(l);

        r = sd_event_add_time_relative(m->event, &l->timer, CLOCK_MONOTONIC, l->params.interval_usec,
                                       USEC_PER_MSEC * 10, on_timer, l);
        if (r < 0)
                return r;
        a = reallocarray(m->lslices, m->n_lslices + 1, sizeof(LimiterSlice *));
        if (!a)
                return -ENOMEM;
        m->lslices = a;
        m->lslices[m->n_lslices++] = TAKE_PTR(l);
        return 0;
}

/* ---- mode changes */

/* Lifts every limit of the group (HogLimiting=no) and, where the kernel lets it, removes it. */
static void limiter_slice_stop(LimiterSlice *l) {
        CGroupRoot *root = root_of(l->manager);

        for (LimiterClass c = LIMITER_CPU_LIMITED; c < _LIMITER_CLASS_MAX; c++) {
                _cleanup_free_ char *path = NULL;
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;

                if (child_path(l, limiter_class_to_string(c), &path) < 0 || cgroup_get_pids(root, path, &pids, &n) < 0)
                        continue;
                for (size_t i = 0; i < n; i++) {
                        if (move_to(l, "unlimited", pids[i]) < 0)
                                continue;
                        log_struct(LOG_INFO, "TONARI_SLICE=%s", l->name, "TONARI_PID=%i", (int) pids[i],
                                   "TONARI_ACTION=release", "TONARI_CLASS=%s", limiter_class_to_string(c),
                                   "TONARI_REASON=hog-limiting-off",
                                   LOG_MESSAGE("Released %s process %i from %s (hog limiting switched off).", l->name,
                                               (int) pids[i], limiter_class_to_string(c)));
                        if (l->manager->bus)
                                (void) sd_bus_emit_signal(l->manager->bus, LIMITER_SIGNAL_PATH,
                                                          LIMITER_SIGNAL_INTERFACE, "ProcessReleased", "sus", l->name,
                                                          (uint32_t) pids[i], "hog-limiting-off");
                }
        }

        /* v1: the processes go back to the slice's own cgroup, and the children away. v2: the
         * group cannot hold processes while its children are there; the children stay while
         * "unlimited" or "unmanaged" has processes (a switch back on finds them). */
        for (size_t i = 0; i < ELEMENTSOF(group_children); i++) {
                _cleanup_free_ char *path = NULL;
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;

                if (child_path(l, group_children[i], &path) < 0)
                        continue;
                if (cgroup_version(l->manager) == 1 && cgroup_get_pids(root, path, &pids, &n) >= 0)
                        for (size_t k = 0; k < n; k++)
                                (void) cgroup_attach(root, l->group, pids[k]);
                (void) cgroup_remove(root, path);
        }
}

int limiter_manager_set_mode(LimiterManager *m, Slice *s, HogLimitingMode mode, const LimiterSliceOverrides *o,
                             char **ret_why) {
        static const LimiterSliceOverrides none = {};
        LimiterSlice *l;
        int r;

        if (mode < 0 || mode >= _HOG_LIMITING_MODE_MAX)
                return -EINVAL;
        if (!o)
                o = &none;

        l = find_lslice(m, s->name);
        if (mode == HOG_LIMITING_NO) {
                if (!l)
                        return 0;
                limiter_slice_stop(l);
                /* v2: the group holds no process while "unlimited" is left with processes in it. */
                _cleanup_free_ char *unlimited = NULL;
                if (cgroup_version(m) == 1 || child_path(l, "unlimited", &unlimited) < 0 ||
                    cgroup_exists(root_of(m), unlimited) <= 0)
                        s->attach_leaf = NULL;
                drop_lslice(m, l);
                log_struct(LOG_INFO, "TONARI_SLICE=%s", s->name, "TONARI_HOG_LIMITING=no",
                           LOG_MESSAGE("Hog limiting of slice '%s' switched off.", s->name));
                return save_state(m);
        }
        if (m->support.error < 0)
                return -EOPNOTSUPP;

        if (l) {
                LimiterParams p;

                /* A change of mode or parameters keeps what the policy knows. */
                params_for(m, o, mode, &p);
                r = limiter_params_validate(&p);
                if (r < 0) {
                        if (ret_why)
                                (void) asprintf(ret_why,
                                                "invalid hog limiting parameters: the window must be 1 to %d "
                                                "intervals",
                                                LIMITER_HISTORY_MAX - 2);
                        return r;
                }
                r = limiter_policy_set_params(l->policy, &p);
                if (r < 0)
                        return r;
                l->params = p;
                l->mode = mode;
                l->overrides = *o;
                r = write_limits(l);
                if (r < 0)
                        return r;
        } else {
                r = limiter_slice_start(m, s, mode, o, false, ret_why);
                if (r < 0)
                        return r;
                l = m->lslices[m->n_lslices - 1];
        }
        log_struct(LOG_INFO, "TONARI_SLICE=%s", s->name, "TONARI_HOG_LIMITING=%s", hog_limiting_mode_to_string(mode),
                   "TONARI_MONITOR_INTERVAL_USEC=%" PRIu64, l->params.interval_usec,
                   "TONARI_WINDOW_USEC=%" PRIu64, l->params.window_usec, "TONARI_IO_LIMIT_BYTES_PER_SEC=%" PRIu64,
                   l->params.io_limit_bytes_per_sec, "TONARI_CPU_LIMIT_WEIGHT=%" PRIu64, l->params.cpu_limit_weight,
                   LOG_MESSAGE("Hog limiting of slice '%s': %s, every %" PRIu64 " ms over %" PRIu64
                               " ms, io-limited %" PRIu64 " B/s, cpu-limited weight %" PRIu64 " (/%s).",
                               s->name, hog_limiting_mode_to_string(mode), l->params.interval_usec / USEC_PER_MSEC,
                               l->params.window_usec / USEC_PER_MSEC, l->params.io_limit_bytes_per_sec,
                               l->params.cpu_limit_weight, l->group));
        return save_state(m);
}

HogLimitingMode limiter_manager_get_mode(LimiterManager *m, const Slice *s) {
        LimiterSlice *l = m ? find_lslice(m, s->name) : NULL;
        return l ? l->mode : HOG_LIMITING_NO;
}

/* What of cgroup (absolute, from /proc/PID/cgroup) is below group (relative), or NULL. */
static const char *path_startswith_cgroup(const char *cgroup, const char *group) {
        const char *rest;

        if (cgroup[0] != '/')
                return NULL;
        rest = startswith(cgroup + 1, group);
        if (!rest || rest[0] != '/')
                return NULL;
        return rest + 1;
}

/* The managed group and class a process is in, if any: its cgroup is <group>/<class>. */
static LimiterSlice *managed_by(LimiterManager *m, pid_t pid, const char **ret_child) {
        _cleanup_free_ char *cg = NULL;
        int r;

        /* On a hybrid host the v2 line names the (controller-less) unified hierarchy: ask the one
         * the groups are in. */
        r = proc_pid_cgroup_controller("/proc", pid, cgroup_version(m) == 1 ? "cpu" : NULL, &cg);
        if (r < 0)
                return NULL;
        for (size_t i = 0; i < m->n_lslices; i++) {
                const char *rest = path_startswith_cgroup(cg, m->lslices[i]->group);
                if (!rest)
                        continue;
                for (size_t k = 0; k < ELEMENTSOF(group_children); k++)
                        if (streq(rest, group_children[k])) {
                                if (ret_child)
                                        *ret_child = group_children[k];
                                return m->lslices[i];
                        }
        }
        return NULL;
}

static LimiterRefusal check_process(LimiterManager *m, pid_t pid, uid_t uid) {
        _cleanup_free_ char *dir = NULL;
        struct stat st;
        int r;

        if (pid <= 0)
                return LIMITER_REFUSED_NO_PROCESS;
        if (pid == 1 || pid == getpid())
                return LIMITER_REFUSED_PROTECTED;
        r = proc_pid_is_kernel_thread("/proc", pid);
        if (r < 0)
                return LIMITER_REFUSED_NO_PROCESS;
        if (r > 0)
                return LIMITER_REFUSED_KERNEL_THREAD;
        if (uid != 0) {
                if (asprintf(&dir, "/proc/%i", (int) pid) < 0)
                        return LIMITER_REFUSED_NO_PROCESS;
                if (stat(dir, &st) < 0)
                        return LIMITER_REFUSED_NO_PROCESS;
                if (st.st_uid != uid)
                        return LIMITER_REFUSED_NOT_OWNED;
        }
        return LIMITER_REFUSED_NONE;
}

int limiter_manager_check_register(LimiterManager *m, Slice *s, const pid_t *pids, size_t n, uid_t uid,
                                   pid_t *ret_bad, LimiterRefusal *ret_refusal) {
        if (!find_lslice(m, s->name))
                return -ENOTCONN;
        for (size_t i = 0; i < n; i++) {
                LimiterRefusal why = check_process(m, pids[i], uid);
                const char *child = NULL;

                if (why == LIMITER_REFUSED_NONE && managed_by(m, pids[i], &child) && !streq(child, LIMITER_GROUP_UNMANAGED))
                        why = LIMITER_REFUSED_REGISTERED;
                for (size_t k = 0; k < i && why == LIMITER_REFUSED_NONE; k++)
                        if (pids[k] == pids[i])
                                why = LIMITER_REFUSED_REGISTERED;
                if (why != LIMITER_REFUSED_NONE) {
                        *ret_bad = pids[i];
                        *ret_refusal = why;
                        return -EINVAL;
                }
        }
        return 0;
}

int limiter_manager_unregister(LimiterManager *m, Slice *s, const pid_t *pids, size_t n, uid_t uid,
                               pid_t *ret_bad, LimiterRefusal *ret_refusal) {
        LimiterSlice *l;
        int r;

        l = find_lslice(m, s->name);
        if (!l)
                return -ENOTCONN;
        for (size_t i = 0; i < n; i++) {
                LimiterRefusal why = check_process(m, pids[i], uid);
                const char *child = NULL;

                if (why == LIMITER_REFUSED_NONE &&
                    (managed_by(m, pids[i], &child) != l || streq(child, LIMITER_GROUP_UNMANAGED)))
                        why = LIMITER_REFUSED_NOT_REGISTERED;
                if (why != LIMITER_REFUSED_NONE) {
                        *ret_bad = pids[i];
                        *ret_refusal = why;
                        return -EINVAL;
                }
        }
        for (size_t i = 0; i < n; i++) {
                const char *child = NULL;

                (void) managed_by(m, pids[i], &child);
                r = move_to(l, LIMITER_GROUP_UNMANAGED, pids[i]);
                if (r < 0) {
                        *ret_bad = pids[i];
                        *ret_refusal = r == -ESRCH ? LIMITER_REFUSED_NO_PROCESS : LIMITER_REFUSED_NONE;
                        return r;
                }
                if (child && !streq(child, "unlimited") && m->bus)
                        (void) sd_bus_emit_signal(m->bus, LIMITER_SIGNAL_PATH, LIMITER_SIGNAL_INTERFACE,
                                                  "ProcessReleased", "sus", l->name, (uint32_t) pids[i],
                                                  "unregistered");
                log_struct(LOG_INFO, "TONARI_SLICE=%s", l->name, "TONARI_PID=%i", (int) pids[i],
                           "TONARI_CALLER_UID=%d", (int) uid, "TONARI_ACTION=unregister", "TONARI_CLASS=%s",
                           strna(child),
                           LOG_MESSAGE("Unregistered %s process %i (was %s).", l->name, (int) pids[i], strna(child)));
        }
        return 0;
}

/* ---- queries */

int limiter_manager_foreach_process(LimiterManager *m, limiter_process_func_t f, void *userdata) {
        int r;

        if (!m)
                return 0;
        for (size_t i = 0; i < m->n_lslices; i++) {
                LimiterSlice *l = m->lslices[i];

                for (size_t k = 0; k < l->n_procs; k++) {
                        const Proc *p = &l->procs[k];
                        LimiterProcessInfo info = {
                                .slice = l->name,
                                .pid = p->pid,
                                .comm = p->comm,
                                .class = p->class,
                                .cpu_percent = p->cpu_percent,
                                .io_bytes_per_sec = p->io_bytes_per_sec,
                                .delay_percent = p->delay_percent,
                                .since_realtime_usec = p->since_realtime_usec,
                        };

                        if (p->class == LIMITER_CPU_LIMITED)
                                (void) snprintf(info.limit, sizeof(info.limit), "cpu.weight=%" PRIu64,
                                                l->params.cpu_limit_weight);
                        else if (p->class == LIMITER_IO_LIMITED)
                                (void) snprintf(info.limit, sizeof(info.limit), "io=%" PRIu64 "B/s",
                                                l->params.io_limit_bytes_per_sec);
                        r = f(&info, userdata);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

void limiter_manager_get_stats(LimiterManager *m, LimiterStats *ret) {
        *ret = (LimiterStats) {};
        if (!m)
                return;
        *ret = m->stats;
        ret->n_slices = m->n_lslices;
        for (size_t i = 0; i < m->n_lslices; i++)
                ret->n_processes += m->lslices[i]->n_procs;
}

const TaskstatsSupport *limiter_manager_support(LimiterManager *m) {
        return &m->support;
}

SliceManager *limiter_manager_slices(LimiterManager *m) {
        return m->slices;
}

int limiter_manager_configure(LimiterManager *m, const LimiterSettings *settings) {
        int r;

        r = limiter_params_validate(&settings->defaults);
        if (r < 0)
                return r;
        m->defaults = settings->defaults;
        for (size_t i = 0; i < m->n_lslices; i++) {
                LimiterSlice *l = m->lslices[i];
                LimiterParams p;

                params_for(m, &l->overrides, l->mode, &p);
                if (limiter_params_validate(&p) < 0 || limiter_policy_set_params(l->policy, &p) < 0)
                        continue;
                l->params = p;
                (void) write_limits(l);
        }
        return 0;
}

/* ---- life cycle */

static void load_state(LimiterManager *m) {
        _cleanup_free_ char *text = NULL;
        char *line, *save = NULL;

        if (!m->state_file || read_full_file(m->state_file, &text, NULL) < 0)
                return;
        for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char name[256], mode_s[16];
                uint64_t id;
                LimiterSliceOverrides o = {};
                HogLimitingMode mode;
                Slice *s;
                int r;

                if (sscanf(line, "%255s %" SCNu64 " %15s %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64,
                           name, &id, mode_s, &o.interval_usec, &o.window_usec, &o.io_limit_bytes_per_sec,
                           &o.cpu_limit_weight, &o.cpu_hog_percent) != 8)
                        continue;
                mode = hog_limiting_mode_from_string(mode_s);
                s = slice_manager_find(m->slices, name);
                if (mode <= HOG_LIMITING_NO || !s || (id != 0 && s->cgroup_id != 0 && s->cgroup_id != id)) {
                        log_info("Not adopting hog limiting of slice '%s': the slice is gone.", name);
                        continue;
                }
                r = limiter_slice_start(m, s, mode, &o, true, NULL);
                if (r < 0)
                        log_warning_errno(r, "Cannot adopt hog limiting of slice '%s', ignoring: %m", name);
                else
                        log_info("Adopted hog limiting of slice '%s' (%s).", name, mode_s);
        }
}

int limiter_manager_new(sd_event *event, sd_bus *bus, SliceManager *slices, const LimiterSettings *settings,
                        LimiterManager **ret) {
        _cleanup_(limiter_manager_freep) LimiterManager *m = NULL;
        int r;

        r = limiter_params_validate(&settings->defaults);
        if (r < 0)
                return r;
        m = new0(LimiterManager, 1);
        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(event);
        m->bus = bus ? sd_bus_ref(bus) : NULL;
        m->slices = slices;
        m->defaults = settings->defaults;
        if (settings->state_file) {
                m->state_file = strdup(settings->state_file);
                if (!m->state_file)
                        return -ENOMEM;
        }
        /* Two open files per managed process (TaskstatsProcess): as many as the hard limit allows;
         * beyond it samples fall back to opening the files each time. */
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) >= 0 && rl.rlim_cur < rl.rlim_max) {
                rl.rlim_cur = rl.rlim_max;
                (void) setrlimit(RLIMIT_NOFILE, &rl);
        }

        r = find_io_devices(&m->io_devices);
        if (r < 0)
                log_warning_errno(r, "Cannot list the disks in /sys/block, io-limited will not be limited: %m");

        r = taskstats_probe("/proc", &m->support);
        if (r < 0)
                m->support = (TaskstatsSupport) { .error = r };
        if (m->support.error >= 0) {
                r = taskstats_new("/proc", &m->ts);
                if (r < 0)
                        m->support.error = r;
        }
        if (m->support.error >= 0)
                load_state(m);

        *ret = TAKE_PTR(m);
        return 0;
}

LimiterManager *limiter_manager_free(LimiterManager *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_lslices; i++)
                limiter_slice_free(m->lslices[i]);
        free(m->lslices);
        taskstats_free(m->ts);
        strv_free(m->io_devices);
        free(m->state_file);
        sd_bus_unref(m->bus);
        sd_event_unref(m->event);
        return mfree(m);
}
