/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-util.h"
#include "limiter-policy.h"

/* Resources a limit is placed on; index into the per-resource state. */
typedef enum Resource {
        RESOURCE_CPU,
        RESOURCE_IO,
        _RESOURCE_MAX,
} Resource;

/* Growth smaller than this is noise, whatever the ratio: one hundredth of a CPU, one call a second. */
#define MIN_CPU_GAIN_PERCENT 1.0
#define MIN_IO_COUNT_GAIN_PER_SEC 1.0

/* Hysteresis: a limit is placed when the others want at least this many times what counts as
 * "idle" (others_idle_*), and comes off for CONTENTION_ENDED when they want less than "idle". */
#define OTHERS_WANT_BAND 2.0

/* The RESOURCE_IDLED hold-off doubles per repeat, up to 2^3 times holdoff_usec. */
#define IDLED_HOLDOFF_MAX_SHIFT 3

typedef struct Point {
        usec_t t;
        usec_t cpu;
        uint64_t io_bytes;
        uint64_t io_count;
        bool have_delays;
        usec_t cpu_delay;
        usec_t blkio_delay;
        /* Where cpu_delay comes from: 0 nowhere, 1 delay accounting, 2 the scheduler's run delay
         * (LimiterSample.run_delay_usec); rates only between points of the same source. */
        uint8_t cpu_delay_source;
} Point;

typedef struct Rates {
        double cpu;         /* percent of one CPU */
        double io_bytes;    /* per second */
        double io_count;    /* per second */
        double cpu_delay;   /* percent of wall time; NAN if unknown */
        double blkio_delay; /* percent of wall time; NAN if unknown */
} Rates;

typedef struct Mark {
        uint64_t id; /* of the limit it was taken for; 0 none */
        Point at;
} Mark;

typedef struct Entry {
        pid_t pid;
        uint64_t start_time_ticks;
        usec_t elapsed;     /* at the newest point */
        Point origin;       /* the process's start: every counter 0 */
        Point hist[LIMITER_HISTORY_MAX];
        unsigned n_hist;    /* oldest first */
        LimiterClass class; /* as the policy holds it */
        bool ours;          /* limited by this policy (or adopted) */
        bool confirmed;
        usec_t limited_at;
        uint64_t limit_id;
        LimiterOthers before;
        usec_t holdoff_until;
        bool holdoff_hard;      /* the hold-off holds whatever the direct signals say */
        unsigned n_idled;       /* RESOURCE_IDLED releases in a row (reset by a confirmed, useful limit) */
        double total_before;    /* the resource's use by it and the others over the window before the limit */
        Mark mark[_RESOURCE_MAX];

        /* per step */
        Rates window, interval;
        double lifetime_cpu;
        bool decided;
        LimiterClass released_from; /* when released in this step: the class it left */
} Entry;

typedef struct Pending {
        uint64_t id; /* 0: none */
        pid_t pid;
        uint64_t start_time_ticks;
} Pending;

struct LimiterPolicy {
        LimiterParams params;
        Entry *entries; /* sorted by PID; one per PID */
        size_t n_entries;
        uint64_t last_id;
        Pending pending[_RESOURCE_MAX];
};

typedef struct Decisions {
        LimiterDecision *d;
        size_t n, allocated;
} Decisions;

static const char *const class_table[_LIMITER_CLASS_MAX] = {
        [LIMITER_UNLIMITED] = "unlimited",
        [LIMITER_CPU_LIMITED] = "cpu-limited",
        [LIMITER_IO_LIMITED] = "io-limited",
};

static const char *const action_table[_LIMITER_ACTION_MAX] = {
        [LIMITER_LIMIT] = "limit",
        [LIMITER_KEEP] = "keep",
        [LIMITER_RELEASE] = "release",
};

static const char *const reason_table[_LIMITER_REASON_MAX] = {
        [LIMITER_REASON_CPU_HOG] = "cpu-hog",
        [LIMITER_REASON_IO_HOG] = "io-hog",
        [LIMITER_REASON_IMPROVED] = "others-improved",
        [LIMITER_REASON_NO_IMPROVEMENT] = "confirmed-no-improvement",
        [LIMITER_REASON_IO_COUNT_ZERO] = "io-count-dropped-to-0",
        [LIMITER_REASON_CLASS_CHANGED] = "class-changed",
        [LIMITER_REASON_CONTENTION_ENDED] = "contention-ended",
        [LIMITER_REASON_RESOURCE_IDLED] = "limit-idled-resource",
        [LIMITER_REASON_NOT_LIMITED_BY_POLICY] = "not-limited-by-policy",
};

const char *limiter_class_to_string(LimiterClass c) {
        return c >= 0 && c < _LIMITER_CLASS_MAX ? class_table[c] : NULL;
}

LimiterClass limiter_class_from_string(const char *s) {
        for (LimiterClass c = 0; s && c < _LIMITER_CLASS_MAX; c++)
                if (strcmp(s, class_table[c]) == 0)
                        return c;
        return _LIMITER_CLASS_INVALID;
}

const char *limiter_action_to_string(LimiterAction a) {
        return a >= 0 && a < _LIMITER_ACTION_MAX ? action_table[a] : NULL;
}

const char *limiter_reason_to_string(LimiterReason r) {
        return r >= 0 && r < _LIMITER_REASON_MAX ? reason_table[r] : NULL;
}

static bool threshold_ok(double v) {
        return isfinite(v) && v >= 0;
}

int limiter_params_validate(const LimiterParams *p) {
        if (p->interval_usec == 0 || p->window_usec < p->interval_usec)
                return -EINVAL;
        if (p->window_usec / p->interval_usec > LIMITER_HISTORY_MAX - 2)
                return -EINVAL;
        if (!threshold_ok(p->cpu_hog_percent) || !threshold_ok(p->delay_contention_percent) ||
            !threshold_ok(p->psi_avg10) || !threshold_ok(p->improvement_percent) ||
            !threshold_ok(p->others_idle_cpu_percent) || !threshold_ok(p->waste_percent) ||
            p->waste_percent > 100.0)
                return -EINVAL;
        if (p->cpu_limit_weight < 1 || p->cpu_limit_weight > 10000 || p->io_limit_bytes_per_sec == 0)
                return -EINVAL;
        return 0;
}

int limiter_policy_new(const LimiterParams *params, LimiterPolicy **ret) {
        LimiterPolicy *p;
        int r;

        r = limiter_params_validate(params);
        if (r < 0)
                return r;
        p = new0(LimiterPolicy, 1);
        if (!p)
                return -ENOMEM;
        p->params = *params;
        *ret = p;
        return 0;
}

LimiterPolicy *limiter_policy_free(LimiterPolicy *p) {
        if (!p)
                return NULL;
        free(p->entries);
        return mfree(p);
}

int limiter_policy_set_params(LimiterPolicy *p, const LimiterParams *params) {
        int r;

        r = limiter_params_validate(params);
        if (r < 0)
                return r;
        p->params = *params;
        return 0;
}

const LimiterParams *limiter_policy_get_params(const LimiterPolicy *p) {
        return &p->params;
}

size_t limiter_policy_n_processes(const LimiterPolicy *p) {
        return p->n_entries;
}

static Entry *find_entry(const LimiterPolicy *p, pid_t pid) {
        size_t lo = 0, hi = p->n_entries;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (p->entries[mid].pid == pid)
                        return &p->entries[mid];
                if (p->entries[mid].pid < pid)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return NULL;
}

int limiter_policy_get_class(const LimiterPolicy *p, pid_t pid, uint64_t start_time_ticks, LimiterClass *ret) {
        Entry *e = find_entry(p, pid);

        if (!e || e->start_time_ticks != start_time_ticks)
                return -ESRCH;
        *ret = e->class;
        return 0;
}

static void pending_clear_for(LimiterPolicy *p, const Entry *e) {
        for (Resource r = 0; r < _RESOURCE_MAX; r++)
                if (p->pending[r].id != 0 && p->pending[r].pid == e->pid &&
                    p->pending[r].start_time_ticks == e->start_time_ticks)
                        p->pending[r] = (Pending) {};
}

int limiter_policy_adopt(LimiterPolicy *p, pid_t pid, uint64_t start_time_ticks, LimiterClass class) {
        Entry *e;

        if (pid <= 0 || (class != LIMITER_CPU_LIMITED && class != LIMITER_IO_LIMITED))
                return -EINVAL;

        e = find_entry(p, pid);
        if (e)
                pending_clear_for(p, e);
        else {
                Entry *n = reallocarray(p->entries, p->n_entries + 1, sizeof(Entry));
                size_t i;

                if (!n)
                        return -ENOMEM;
                p->entries = n;
                for (i = p->n_entries; i > 0 && p->entries[i - 1].pid > pid; i--)
                        p->entries[i] = p->entries[i - 1];
                e = &p->entries[i];
                p->n_entries++;
        }
        /* No history: the first sample starts it. Confirmed, since the earlier instance kept it. */
        *e = (Entry) {
                .pid = pid,
                .start_time_ticks = start_time_ticks,
                .class = class,
                .ours = true,
                .confirmed = true,
        };
        return 0;
}

static double rate_percent(uint64_t a, uint64_t b, usec_t dt) {
        return b > a ? 100.0 * (double) (b - a) / (double) dt : 0.0;
}

static double rate_per_sec(uint64_t a, uint64_t b, usec_t dt) {
        return b > a ? (double) (b - a) * (double) USEC_PER_SEC / (double) dt : 0.0;
}

static Rates rates_between(const Point *a, const Point *b) {
        usec_t dt = b->t > a->t ? b->t - a->t : 0;
        bool delays = a->have_delays && b->have_delays;
        bool cpu_delays = a->cpu_delay_source != 0 && a->cpu_delay_source == b->cpu_delay_source;

        if (dt == 0)
                return (Rates) {
                        .cpu_delay = cpu_delays ? 0.0 : NAN,
                        .blkio_delay = delays ? 0.0 : NAN,
                };
        /* Counters only grow; a delay total that wrapped or was reset reads as 0 for that span. */
        return (Rates) {
                .cpu = rate_percent(a->cpu, b->cpu, dt),
                .io_bytes = rate_per_sec(a->io_bytes, b->io_bytes, dt),
                .io_count = rate_per_sec(a->io_count, b->io_count, dt),
                .cpu_delay = cpu_delays ? rate_percent(a->cpu_delay, b->cpu_delay, dt) : NAN,
                .blkio_delay = delays ? rate_percent(a->blkio_delay, b->blkio_delay, dt) : NAN,
        };
}

static const Point *newest(const Entry *e) {
        return &e->hist[e->n_hist - 1];
}

/* Sampled in two rounds: the policy has seen the process for one interval of its own. Before
 * that, its counters only tell what it did before it was registered (its start-up, in another
 * cgroup, next to other processes), and it is neither judged nor counted among the others. */
static bool entry_observed(const Entry *e) {
        return e->n_hist >= 2;
}

static void entry_compute(Entry *e, usec_t window) {
        const Point *now = newest(e), *ref = &e->hist[0];

        /* The window starts at the newest point at least a window old. Before the history reaches
         * that far back, at the oldest point: the paper's eq. 3 over what was observed, not since
         * the process started. Before the policy observed it for an interval, both are over its
         * lifetime, reported but judged on by nothing (entry_observed()). */
        for (unsigned i = e->n_hist; i > 0; i--)
                if (now->t - e->hist[i - 1].t >= window) {
                        ref = &e->hist[i - 1];
                        break;
                }
        if (!entry_observed(e))
                ref = &e->origin;
        e->window = rates_between(ref, now);
        e->interval = rates_between(entry_observed(e) ? &e->hist[e->n_hist - 2] : &e->origin, now);
        e->lifetime_cpu = rates_between(&e->origin, now).cpu;
        e->decided = false;
        e->released_from = LIMITER_UNLIMITED;
}

static void entry_push(Entry *e, const LimiterSample *s, usec_t window) {
        Point pt = {
                .t = s->timestamp_usec,
                .cpu = s->cpu_usec,
                .io_bytes = s->io_bytes,
                .io_count = s->io_count,
                .have_delays = s->have_delays,
                .cpu_delay = s->have_delays ? s->cpu_delay_usec : s->have_run_delay ? s->run_delay_usec : 0,
                .blkio_delay = s->have_delays ? s->blkio_delay_usec : 0,
                .cpu_delay_source = s->have_delays ? 1 : s->have_run_delay ? 2 : 0,
        };
        unsigned keep = 0;

        /* Drop points older than the newest one that is at least a window old: never needed again. */
        for (unsigned i = e->n_hist; i > 0; i--)
                if (pt.t - e->hist[i - 1].t >= window) {
                        keep = i - 1;
                        break;
                }
        if (e->n_hist - keep >= LIMITER_HISTORY_MAX)
                keep = e->n_hist - (LIMITER_HISTORY_MAX - 1);
        if (keep > 0) {
                memmove(e->hist, e->hist + keep, (e->n_hist - keep) * sizeof(Point));
                e->n_hist -= keep;
        }
        e->hist[e->n_hist++] = pt;
        e->elapsed = s->elapsed_usec;
        e->origin = (Point) {
                .t = s->timestamp_usec > s->elapsed_usec ? s->timestamp_usec - s->elapsed_usec : 0,
                .have_delays = s->have_delays,
                .cpu_delay_source = s->have_delays ? 1 : s->have_run_delay ? 2 : 0,
        };
}

static int cmp_sample_ptr(const void *a, const void *b) {
        const LimiterSample *x = *(const LimiterSample *const *) a, *y = *(const LimiterSample *const *) b;

        return (x->pid > y->pid) - (x->pid < y->pid);
}

static LimiterDecision *decision_add(Decisions *ds, const LimiterPolicy *p, const Entry *e, LimiterAction action,
                                     LimiterClass class, LimiterReason reason) {
        if (ds->n == ds->allocated) {
                size_t na = ds->allocated ? ds->allocated * 2 : 8;
                LimiterDecision *n = reallocarray(ds->d, na, sizeof(LimiterDecision));

                if (!n)
                        return NULL;
                ds->d = n;
                ds->allocated = na;
        }
        LimiterDecision *d = &ds->d[ds->n++];
        *d = (LimiterDecision) {
                .pid = e->pid,
                .start_time_ticks = e->start_time_ticks,
                .action = action,
                .class = class,
                .reason = reason,
                .applied = !p->params.observe_only,
                .cpu_percent = e->window.cpu,
                .cpu_percent_lifetime = e->lifetime_cpu,
                .io_bytes_per_sec = e->window.io_bytes,
                .io_count_per_sec = e->window.io_count,
                .cpu_percent_interval = e->interval.cpu,
                .io_bytes_per_sec_interval = e->interval.io_bytes,
        };
        return d;
}

static void others_add(LimiterOthers *o, const Rates *r) {
        o->n++;
        o->cpu_percent += r->cpu;
        o->io_bytes_per_sec += r->io_bytes;
        o->io_count_per_sec += r->io_count;
        o->cpu_delay_percent += r->cpu_delay; /* NAN stays NAN: one unknown makes the sum unknown */
        o->blkio_delay_percent += r->blkio_delay;
}

static void others_set_psi(LimiterOthers *o, const LimiterPressure *pressure, Resource res) {
        o->psi_some_avg10 = !pressure || !pressure->valid ? NAN
                            : res == RESOURCE_CPU         ? pressure->cpu_some_avg10
                                                          : pressure->io_some_avg10;
}

/* The unlimited processes other than e, over the window or the last interval. */
static LimiterOthers others_of(const LimiterPolicy *p, const Entry *e, bool window, const LimiterPressure *pressure,
                               Resource res) {
        LimiterOthers o = {};

        for (size_t i = 0; i < p->n_entries; i++) {
                const Entry *x = &p->entries[i];

                if (x == e || x->class != LIMITER_UNLIMITED || !entry_observed(x))
                        continue;
                others_add(&o, window ? &x->window : &x->interval);
        }
        others_set_psi(&o, pressure, res);
        return o;
}

/* The others marked when limit id was placed, from the mark to now. */
static LimiterOthers others_since_mark(const LimiterPolicy *p, uint64_t id, Resource res,
                                       const LimiterPressure *pressure) {
        LimiterOthers o = {};

        for (size_t i = 0; i < p->n_entries; i++) {
                const Entry *x = &p->entries[i];

                if (x->mark[res].id != id || x->class != LIMITER_UNLIMITED)
                        continue;
                Rates r = rates_between(&x->mark[res].at, newest(x));
                others_add(&o, &r);
        }
        others_set_psi(&o, pressure, res);
        return o;
}

static bool grew(double before, double after, double min_gain, double improvement_percent) {
        return after - before >= min_gain && after >= before * (1.0 + improvement_percent / 100.0);
}

static bool shrank(double before, double after, double threshold, double improvement_percent) {
        /* Only a wait that was contention counts: a drop from nearly nothing is noise. */
        return !isnan(before) && !isnan(after) && before >= threshold &&
               after <= before * (1.0 - improvement_percent / 100.0);
}

static bool others_improved(const LimiterParams *pp, const LimiterOthers *before, const LimiterOthers *after,
                            Resource res) {
        /* The paper: the others' CPU use or I/O count grew. */
        if (grew(before->cpu_percent, after->cpu_percent, MIN_CPU_GAIN_PERCENT, pp->improvement_percent) ||
            grew(before->io_count_per_sec, after->io_count_per_sec, MIN_IO_COUNT_GAIN_PER_SEC,
                 pp->improvement_percent))
                return true;
        /* Directly: they wait less for the resource, or the slice is under less pressure. */
        if (res == RESOURCE_CPU ? shrank(before->cpu_delay_percent, after->cpu_delay_percent,
                                         pp->delay_contention_percent, pp->improvement_percent)
                                : shrank(before->blkio_delay_percent, after->blkio_delay_percent,
                                         pp->delay_contention_percent, pp->improvement_percent))
                return true;
        return shrank(before->psi_some_avg10, after->psi_some_avg10, pp->psi_avg10, pp->improvement_percent);
}

/* Someone other than the hog uses the resource, at least band times what counts as idle: there is
 * somebody to protect. band is 1 to keep a limit, OTHERS_WANT_BAND to place one. */
static bool others_want(const LimiterParams *pp, const LimiterOthers *o, Resource res, double band) {
        if (o->n == 0)
                return false;
        if (res == RESOURCE_CPU) {
                double demand = o->cpu_percent + (isnan(o->cpu_delay_percent) ? 0.0 : o->cpu_delay_percent);
                return demand >= band * pp->others_idle_cpu_percent;
        }
        return o->io_bytes_per_sec >= band * (double) pp->others_idle_io_bytes_per_sec ||
               (!isnan(o->blkio_delay_percent) && o->blkio_delay_percent >= band * pp->delay_contention_percent / 2);
}

static double rates_use(const Rates *r, Resource res) {
        return res == RESOURCE_CPU ? r->cpu : r->io_bytes;
}

static double others_use(const LimiterOthers *o, Resource res) {
        return res == RESOURCE_CPU ? o->cpu_percent : o->io_bytes_per_sec;
}

/* -1 no direct signal available, 0 available and calm, 1 contention. */
static int direct_contention(const LimiterParams *pp, const LimiterOthers *o, Resource res) {
        double delay = res == RESOURCE_CPU ? o->cpu_delay_percent : o->blkio_delay_percent;
        int r = -1;

        if (o->n > 0 && !isnan(delay))
                r = delay >= pp->delay_contention_percent;
        if (!isnan(o->psi_some_avg10) && r < 1)
                r = o->psi_some_avg10 >= pp->psi_avg10;
        return r;
}

static int entry_release(LimiterPolicy *p, Decisions *ds, Entry *e, LimiterReason reason, const LimiterOthers *after,
                         usec_t now) {
        LimiterDecision *d = decision_add(ds, p, e, LIMITER_RELEASE, LIMITER_UNLIMITED, reason);

        if (!d)
                return -ENOMEM;
        d->before = e->before;
        if (after)
                d->after = *after;
        d->limited_usec = e->ours && e->n_hist > 0 && newest(e)->t > e->limited_at ? newest(e)->t - e->limited_at : 0;
        d->total_before = e->total_before;
        if (reason == LIMITER_REASON_NO_IMPROVEMENT) {
                d->holdoff_usec = p->params.holdoff_usec;
                e->holdoff_hard = false;
        } else if (reason == LIMITER_REASON_RESOURCE_IDLED) {
                d->holdoff_usec = p->params.holdoff_usec << MIN(e->n_idled, (unsigned) IDLED_HOLDOFF_MAX_SHIFT);
                e->holdoff_hard = true;
                e->n_idled++;
        }
        else if (e->confirmed)
                e->n_idled = 0; /* a limit that was worth it to the end: the back-off starts over */
        if (d->holdoff_usec > 0)
                e->holdoff_until = now + d->holdoff_usec;
        pending_clear_for(p, e);
        e->released_from = e->class;
        e->class = LIMITER_UNLIMITED;
        e->ours = e->confirmed = false;
        e->limit_id = 0;
        e->decided = true;
        return 0;
}

/* The merge of the samples into the state, built aside so a bad input changes nothing. */
static int merge_samples(LimiterPolicy *p, const LimiterSample *samples, size_t n, Entry **ret, usec_t *ret_now) {
        _cleanup_free_ const LimiterSample **sorted = NULL;
        _cleanup_free_ Entry *entries = NULL;
        usec_t now = 0;
        size_t j = 0;

        sorted = new(const LimiterSample *, n);
        entries = new(Entry, n);
        if (!sorted || !entries)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (samples[i].pid <= 0 || samples[i].class < 0 || samples[i].class >= _LIMITER_CLASS_MAX)
                        return -EINVAL;
                sorted[i] = &samples[i];
                now = MAX(now, samples[i].timestamp_usec);
        }
        qsort(sorted, n, sizeof(*sorted), cmp_sample_ptr);

        for (size_t i = 0; i < n; i++) {
                const LimiterSample *s = sorted[i];
                Entry *e = &entries[i];

                if (i > 0 && sorted[i - 1]->pid == s->pid)
                        return -EINVAL;
                while (j < p->n_entries && p->entries[j].pid < s->pid)
                        j++;
                if (j < p->n_entries && p->entries[j].pid == s->pid &&
                    p->entries[j].start_time_ticks == s->start_time_ticks) {
                        *e = p->entries[j];
                        if (e->n_hist > 0 && s->timestamp_usec < newest(e)->t)
                                return -EINVAL;
                } else
                        /* New, or the PID now belongs to another process: nothing carries over. */
                        *e = (Entry) {
                                .pid = s->pid,
                                .start_time_ticks = s->start_time_ticks,
                                .class = LIMITER_UNLIMITED,
                        };
                entry_push(e, s, p->params.window_usec);
        }
        *ret = TAKE_PTR(entries);
        *ret_now = now;
        return 0;
}

static bool pending_alive(const LimiterPolicy *p, const Pending *pd) {
        const Entry *e = find_entry(p, pd->pid);

        return e && e->start_time_ticks == pd->start_time_ticks && e->limit_id == pd->id && e->class != LIMITER_UNLIMITED;
}

static int reconcile_classes(LimiterPolicy *p, Decisions *ds, const LimiterSample *samples, size_t n, usec_t now) {
        int r;

        if (p->params.observe_only)
                return 0; /* nothing was moved; the classes the policy holds are the truth */

        for (size_t i = 0; i < n; i++) {
                const LimiterSample *s = &samples[i];
                Entry *e = find_entry(p, s->pid);

                if (s->class == e->class)
                        continue;
                if (s->class == LIMITER_UNLIMITED) {
                        /* Released behind our back, or our move did not happen: accept it. */
                        pending_clear_for(p, e);
                        e->class = LIMITER_UNLIMITED;
                        e->ours = e->confirmed = false;
                        e->limit_id = 0;
                        continue;
                }
                /* In a limited cgroup the policy did not put it in: a forked child of a limited
                 * process, a reused PID, or a move by someone else. Limits are per process. */
                e->class = s->class;
                e->ours = false;
                r = entry_release(p, ds, e, LIMITER_REASON_NOT_LIMITED_BY_POLICY, NULL, now);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int confirm_pending(LimiterPolicy *p, Decisions *ds, const LimiterPressure *pressure, usec_t now) {
        int r;

        for (Resource res = 0; res < _RESOURCE_MAX; res++) {
                Pending *pd = &p->pending[res];

                if (pd->id == 0)
                        continue;
                if (!pending_alive(p, pd)) {
                        *pd = (Pending) {};
                        continue;
                }
                Entry *e = find_entry(p, pd->pid);
                if (e->decided || newest(e)->t <= e->limited_at)
                        continue;

                LimiterOthers after = others_since_mark(p, pd->id, res, pressure);
                if (others_improved(&p->params, &e->before, &after, res)) {
                        LimiterDecision *d = decision_add(ds, p, e, LIMITER_KEEP, e->class, LIMITER_REASON_IMPROVED);
                        if (!d)
                                return -ENOMEM;
                        LimiterOthers current = others_of(p, e, false, pressure, res);
                        d->before = e->before;
                        d->after = after;
                        d->limited_usec = newest(e)->t - e->limited_at;
                        d->total_before = e->total_before;
                        d->total_after = rates_use(&e->interval, res) + others_use(&current, res);
                        e->confirmed = true;
                        e->decided = true;
                        *pd = (Pending) {};
                } else if (newest(e)->t - e->limited_at >= p->params.window_usec) {
                        r = entry_release(p, ds, e, LIMITER_REASON_NO_IMPROVEMENT, &after, now);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int release_rules(LimiterPolicy *p, Decisions *ds, const LimiterPressure *pressure, usec_t now) {
        const LimiterParams *pp = &p->params;
        int r;

        for (size_t i = 0; i < p->n_entries; i++) {
                Entry *e = &p->entries[i];
                LimiterReason reason;

                if (e->decided || e->class == LIMITER_UNLIMITED || !e->ours || e->n_hist < 2)
                        continue;
                /* Judge only an interval spent entirely under the limit. */
                if (e->hist[e->n_hist - 2].t < e->limited_at)
                        continue;

                Resource res = e->class == LIMITER_CPU_LIMITED ? RESOURCE_CPU : RESOURCE_IO;
                LimiterOthers after = others_of(p, e, false, pressure, res);
                double demand = e->interval.cpu + (isnan(e->interval.cpu_delay) ? 0.0 : e->interval.cpu_delay);
                double total_after = rates_use(&e->interval, res) + others_use(&after, res);
                /* Only io.max can idle a resource, and only while the hog presses against it (moves
                 * at least 80 % of the limit): a hog that slowed down or stopped by itself during
                 * the interval is no waste of the limit's. cpu.weight (and
                 * cpu.shares) give the CPU to whoever runs: a limited CPU hog never leaves it idle,
                 * a drop of the CPU total has other causes. */
                bool held = res == RESOURCE_IO && e->interval.io_bytes >= 0.8 * (double) pp->io_limit_bytes_per_sec;

                if (res == RESOURCE_IO && e->interval.io_bytes == 0)
                        /* The paper counts block-device operations; the kernel counts their bytes:
                         * no bytes, no operations. */
                        reason = LIMITER_REASON_IO_COUNT_ZERO;
                else if (res == RESOURCE_IO && e->interval.cpu >= pp->cpu_hog_percent)
                        reason = LIMITER_REASON_CLASS_CHANGED; /* computes now; io.max is beside the point */
                else if (res == RESOURCE_CPU && (e->interval.io_bytes >= (double) pp->io_hog_bytes_per_sec ||
                                                 demand < pp->cpu_hog_percent / 2))
                        reason = LIMITER_REASON_CLASS_CHANGED; /* does I/O now, or stopped computing */
                else if (!others_want(pp, &after, res, 1.0))
                        /* Judged on the last interval, confirmed or not: waiting for the window
                         * to confirm kept a hog limited for up to a window after the others left. */
                        reason = LIMITER_REASON_CONTENTION_ENDED;
                else if (pp->waste_percent > 0 && held &&
                         total_after < e->total_before * (1.0 - pp->waste_percent / 100.0))
                        reason = LIMITER_REASON_RESOURCE_IDLED;
                else
                        continue;

                r = entry_release(p, ds, e, reason, &after, now);
                if (r < 0)
                        return r;
                ds->d[ds->n - 1].total_after = total_after;
        }
        return 0;
}

static int place_limits(LimiterPolicy *p, Decisions *ds, const LimiterPressure *pressure, usec_t now) {
        const LimiterParams *pp = &p->params;

        for (Resource res = 0; res < _RESOURCE_MAX; res++) {
                double threshold = res == RESOURCE_CPU ? pp->cpu_hog_percent : (double) pp->io_hog_bytes_per_sec;
                Entry *hog = NULL;
                double best = -1;

                LimiterClass class = res == RESOURCE_CPU ? LIMITER_CPU_LIMITED : LIMITER_IO_LIMITED;
                bool just_released = false;

                /* One unconfirmed limit per resource at a time: an improvement is then attributable. */
                if (p->pending[res].id != 0)
                        continue;
                /* A limit of this resource came off in this step: the numbers of the last interval
                 * are those of the limit (the released one looks small, the one it held back big);
                 * the next step judges on an interval without it. */
                for (size_t i = 0; i < p->n_entries && !just_released; i++)
                        just_released = p->entries[i].decided && p->entries[i].released_from == class;
                if (just_released)
                        continue;

                /* The biggest user over the window that is one now as well: a process that just
                 * stopped is no hog, whatever its average. */
                for (size_t i = 0; i < p->n_entries; i++) {
                        Entry *e = &p->entries[i];
                        double use = res == RESOURCE_CPU ? e->window.cpu : e->window.io_bytes;
                        double use_now = res == RESOURCE_CPU ? e->interval.cpu : e->interval.io_bytes;

                        if (e->class != LIMITER_UNLIMITED || !entry_observed(e) || use < threshold ||
                            use_now < threshold || use <= best)
                                continue;
                        hog = e;
                        best = use;
                }
                /* Just released (or judged otherwise) in this step: its numbers are the biggest but
                 * stale for a limit; the next step judges again rather than picking the runner-up. */
                if (!hog || hog->decided)
                        continue;

                /* Whether anybody else wants the resource, and waits for it, is a question of now;
                 * their progress over the window is the baseline a limit must improve on. */
                LimiterOthers before = others_of(p, hog, true, pressure, res);
                LimiterOthers current = others_of(p, hog, false, pressure, res);
                if (!others_want(pp, &current, res, OTHERS_WANT_BAND))
                        continue;
                /* With delay accounting or PSI, they decide. Without, the paper's way: limit on
                 * suspicion and let the confirmation judge, but not again right after a limit that
                 * did not help. After one that left the resource idle, not whatever they say. */
                int direct = direct_contention(pp, &current, res);
                if (direct == 0 || ((direct < 0 || hog->holdoff_hard) && now < hog->holdoff_until))
                        continue;

                LimiterDecision *d = decision_add(ds, p, hog, LIMITER_LIMIT, class,
                                                  res == RESOURCE_CPU ? LIMITER_REASON_CPU_HOG : LIMITER_REASON_IO_HOG);
                if (!d)
                        return -ENOMEM;
                d->before = before;
                d->after = current;
                d->total_before = best + others_use(&before, res);
                d->total_after = rates_use(&hog->interval, res) + others_use(&current, res);

                hog->class = class;
                hog->total_before = d->total_before;
                hog->ours = true;
                hog->confirmed = false;
                /* Its own sample's time, not the round's: the processes of a round are sampled one
                 * after the other, and "an interval spent entirely under the limit" starts here. */
                hog->limited_at = newest(hog)->t;
                hog->limit_id = ++p->last_id;
                hog->before = before;
                hog->decided = true;
                p->pending[res] = (Pending) {
                        .id = hog->limit_id,
                        .pid = hog->pid,
                        .start_time_ticks = hog->start_time_ticks,
                };
                for (size_t i = 0; i < p->n_entries; i++) {
                        Entry *x = &p->entries[i];

                        if (x != hog && x->class == LIMITER_UNLIMITED && entry_observed(x))
                                x->mark[res] = (Mark) { .id = hog->limit_id, .at = *newest(x) };
                }
        }
        return 0;
}

int limiter_policy_step(LimiterPolicy *p, const LimiterSample *samples, size_t n_samples,
                        const LimiterPressure *pressure, LimiterDecision **ret) {
        Decisions ds = {};
        Entry *entries = NULL;
        usec_t now = 0;
        int r;

        r = merge_samples(p, samples, n_samples, &entries, &now);
        if (r < 0)
                return r;
        free(p->entries);
        p->entries = entries;
        p->n_entries = n_samples;

        for (size_t i = 0; i < p->n_entries; i++)
                entry_compute(&p->entries[i], p->params.window_usec);

        /* The release rules first: a limit whose others left, or that idles the resource, comes
         * off rather than being confirmed because the others' progress grew meanwhile. */
        r = reconcile_classes(p, &ds, samples, n_samples, now);
        if (r >= 0)
                r = release_rules(p, &ds, pressure, now);
        if (r >= 0)
                r = confirm_pending(p, &ds, pressure, now);
        if (r >= 0)
                r = place_limits(p, &ds, pressure, now);
        if (r < 0) {
                free(ds.d);
                return r;
        }

        *ret = ds.d;
        return (int) ds.n;
}
