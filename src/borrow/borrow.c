/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "alloc-util.h"
#include "borrow-state.h"
#include "borrow.h"
#include "fd-util.h"
#include "fileio.h"
#include "log.h"
#include "parse-util.h"
#include "path-util.h"
#include "proc-util.h"
#include "string-util.h"
#include "strv.h"

/*
 * The state file is written before a caller is told that a change is done (ChargeCPU(), AddProxy(),
 * RemoveProxy(), RemoveSlice()), when something is dropped (a proxy whose helper ended, a slice's
 * account, a debt repaid) and after start-up; the progress of repayment and of proxy samples is
 * written at most this often, and at exit. A crash loses at most this much of that progress, and a
 * repaying ledger does not turn into a busy disk.
 */
#define BORROW_SAVE_USEC USEC_PER_SEC

/* Finding where the kernel's periods begin: cpu.stat is read period/20 apart until nr_periods
 * moves, then, one period later, period/400 apart (250 µs at 100 ms) around the same spot. */
#define BORROW_PROBE_COARSE 20
#define BORROW_PROBE_FINE 400
/* A cgroup whose period count did not move (it did not run) is looked at again this many
 * periods later. */
#define BORROW_PROBE_RETRY_PERIODS 10
#define BORROW_BOUNDARY_TRUST_USEC (60 * USEC_PER_SEC)

typedef enum BorrowProbeStage {
        BORROW_PROBE_IDLE,
        BORROW_PROBE_COARSE_STAGE,
        BORROW_PROBE_FINE_STAGE,
} BorrowProbeStage;

static void target_free(BorrowTarget *t);
static int save_state(BorrowManager *m, const BorrowProxy *skip);
static void proxy_free(BorrowProxy *p);
static void borrow_proxy_log_removed(BorrowProxy *p, const char *reason);
static int target_arm(BorrowTarget *t, usec_t period);
static void target_overrun(BorrowTarget *t, usec_t period);
static int on_probe(sd_event_source *es, uint64_t usec, void *userdata);
static void target_probe_start(BorrowTarget *t, usec_t period);
static void target_probe_stop(BorrowTarget *t);
static void proxy_sample(BorrowProxy *p);

/* Progress: written within BORROW_SAVE_USEC. */
static void mark_dirty(BorrowManager *m) {
        m->dirty = true;
        if (m->save_timer)
                (void) sd_event_source_set_enabled(m->save_timer, SD_EVENT_ONESHOT);
}

/* A change nobody waits for but that must not come back after a crash (a drop): written now, and
 * if that fails, retried with the progress. */
static void save_now(BorrowManager *m) {
        int r;

        mark_dirty(m);
        r = save_state(m, NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to save the borrowing state to '%s', will retry: %m", m->state_file);
}

static char *fmt_ms(char buf[static FORMAT_TIMESPAN_MAX], usec_t u) {
        return format_timespan(buf, FORMAT_TIMESPAN_MAX, u, 100);
}

/* ---- targets */

BorrowTarget *borrow_manager_find_target(BorrowManager *m, const char *name) {
        for (BorrowTarget *t = m->targets; t; t = t->next)
                if (streq(t->name, name))
                        return t;
        return NULL;
}

static int target_new(BorrowManager *m, Slice *s, BorrowTarget **ret) {
        _cleanup_free_ BorrowTarget *t = NULL;

        t = new0(BorrowTarget, 1);
        if (!t)
                return -ENOMEM;
        *t = (BorrowTarget){ .manager = m,
                             .limit_usec = USEC_INFINITY,
                             .boundary_usec = USEC_INFINITY,
                             .usage_usec = USEC_INFINITY,
                             .configured_per_sec_usec = USEC_INFINITY,
                             .configured_period_usec = USEC_INFINITY,
                             .slice_id = s->id,
                             .cgroup_id = s->cgroup_id };
        t->name = strdup(s->name);
        if (!t->name)
                return -ENOMEM;
        t->next = m->targets;
        m->targets = t;
        *ret = TAKE_PTR(t);
        return 0;
}

static void target_free(BorrowTarget *t) {
        if (!t)
                return;
        for (BorrowTarget **p = &t->manager->targets; *p; p = &(*p)->next)
                if (*p == t) {
                        *p = t->next;
                        break;
                }
        sd_event_source_disable_unref(t->timer);
        sd_event_source_disable_unref(t->probe);
        free(t->name);
        free(t->limit_cgroup);
        free(t->boundary_cgroup);
        free(t);
}

/* The slice a target belongs to, or NULL if it was removed (a slice of the same name created
 * since is a different tenant and does not inherit the debt). */
static Slice *target_slice(BorrowTarget *t) {
        Slice *s = t->manager->slices ? slice_manager_find(t->manager->slices, t->name) : NULL;

        if (!s || (t->slice_id != 0 && s->id != t->slice_id))
                return NULL;
        t->slice_id = s->id;
        return s;
}

/* The slice's CFS period: CPUQuotaPeriodSec=, or the kernel's default. */
static usec_t slice_period(const Slice *s) {
        return s->settings.cpu_quota_period_usec == USEC_INFINITY ? CGROUP_CPU_QUOTA_PERIOD_DEFAULT_USEC
                                                                  : s->settings.cpu_quota_period_usec;
}

/* The quota per period the ledger works against: CPUQuota=, or the CPUs the slice may use. */
static void target_quota(BorrowTarget *t, Slice *s, usec_t *ret_quota, usec_t *ret_period) {
        const CGroupSettings *c = &s->settings;
        usec_t period = slice_period(s);
        unsigned n;

        if (c->cpu_quota_per_sec_usec != USEC_INFINITY) {
                *ret_quota = cgroup_cpu_quota_per_period(c->cpu_quota_per_sec_usec, period);
                *ret_period = period;
                return;
        }
        n = c->allowed_cpus ? index_list_count(c->allowed_cpus, c->allowed_cpus_size) : 0;
        if (n == 0)
                n = t->manager->n_cpus;
        *ret_quota = borrow_capacity_usec(period, n);
        *ret_period = period;
}

/* Writes limit (USEC_INFINITY: lift it) for the slice's processes. */
static int target_write(BorrowTarget *t, Slice *s, usec_t limit, usec_t period) {
        CGroupRoot *root = s->manager->cgroup_root;
        usec_t value = limit;
        int r;

        for (unsigned attempt = 0;; attempt++) {
                if (!t->limit_cgroup) {
                        r = slice_cpu_limit_cgroup(s, &t->limit_own, &t->limit_cgroup);
                        if (r == -ENOENT && limit == USEC_INFINITY)
                                return 0; /* the scope is gone, and with it the limit */
                        if (r < 0)
                                return r;
                        if (t->limit_own) {
                                /* What to write back when the limit ends: the slice's own setting. */
                                t->configured_per_sec_usec = s->settings.cpu_quota_per_sec_usec;
                                t->configured_period_usec = s->settings.cpu_quota_period_usec;
                        }
                }

                value = limit;
                if (limit == USEC_INFINITY && t->limit_own) {
                        /* The slice's own cgroup: put its configured CPUQuota= back. */
                        period = slice_period(s);
                        value = cgroup_cpu_quota_per_period(s->settings.cpu_quota_per_sec_usec, period);
                }
                r = cgroup_set_cpu_max(root, t->limit_cgroup, value, period);
                t->writes++;
                t->manager->n_writes++;
                if (r != -ENOENT || attempt > 0)
                        break;
                /* The scope ended and was made anew: find (and make) its leaf again. */
                t->limit_cgroup = mfree(t->limit_cgroup);
                t->boundary_usec = USEC_INFINITY;
                if (limit == USEC_INFINITY)
                        return 0;
        }
        return r;
}

static void target_log_start(BorrowTarget *t, usec_t debt, usec_t quota, usec_t limit, usec_t period) {
        char a[FORMAT_TIMESPAN_MAX], b[FORMAT_TIMESPAN_MAX], c[FORMAT_TIMESPAN_MAX], d[FORMAT_TIMESPAN_MAX];

        log_struct(LOG_INFO, "TONARI_SLICE=%s", t->name, "TONARI_REASON=borrowed-cpu",
                   "TONARI_DEBT_USEC=%" PRIu64, debt,
                   "TONARI_QUOTA_USEC=%" PRIu64, quota, "TONARI_LIMIT_USEC=%" PRIu64, limit,
                   "TONARI_PERIOD_USEC=%" PRIu64, period,
                   LOG_MESSAGE("Slice '%s' owes %s of CPU time that helpers spent for it: shortening its quota "
                               "from %s to %s per %s period until repaid.",
                               t->name, fmt_ms(a, debt), fmt_ms(b, quota),
                               fmt_ms(c, limit), fmt_ms(d, period)));
}

static void target_log_end(BorrowTarget *t, usec_t quota, usec_t period) {
        char a[FORMAT_TIMESPAN_MAX], b[FORMAT_TIMESPAN_MAX], c[FORMAT_TIMESPAN_MAX], d[FORMAT_TIMESPAN_MAX],
                e[FORMAT_TIMESPAN_MAX], f[FORMAT_TIMESPAN_MAX];

        log_struct(LOG_INFO, "TONARI_SLICE=%s", t->name, "TONARI_REASON=debt-repaid",
                   "TONARI_BORROWED_USEC=%" PRIu64, t->account.borrowed_usec,
                   "TONARI_REPAID_USEC=%" PRIu64, t->account.repaid_usec,
                   "TONARI_FORGIVEN_USEC=%" PRIu64, t->account.forgiven_usec,
                   "TONARI_OVERRUN_USEC=%" PRIu64, t->account.overrun_usec,
                   "TONARI_PERIODS_SHORTENED=%" PRIu64, t->account.periods_shortened,
                   LOG_MESSAGE("Slice '%s' has repaid its borrowed CPU time: quota back to %s per %s period "
                               "(in total %s borrowed, %s overrun, %s repaid, %s forgiven, %" PRIu64
                               " periods shortened).",
                               t->name, quota == USEC_INFINITY ? "unlimited" : fmt_ms(a, quota), fmt_ms(b, period),
                               fmt_ms(c, t->account.borrowed_usec), fmt_ms(f, t->account.overrun_usec),
                               fmt_ms(d, t->account.repaid_usec), fmt_ms(e, t->account.forgiven_usec),
                               t->account.periods_shortened));
}

/* Forgets the proxies of the slice name/slice_id (removed); not written yet. */
static void proxies_drop(BorrowManager *m, const char *name, uint64_t slice_id, const char *why) {
        /* Proxies for a removed slice have nobody to charge; those added for a new slice of the
         * same name are that slice's. */
        for (BorrowProxy *p = m->proxies, *next; p; p = next) {
                next = p->next;
                if (streq(p->target, name) && (p->slice_id == 0 || p->slice_id == slice_id)) {
                        borrow_proxy_log_removed(p, why);
                        proxy_free(p);
                }
        }
        if (!m->proxies)
                (void) sd_event_source_set_enabled(m->sample_timer, SD_EVENT_OFF);
}

/* Forgets the account of a removed slice and its proxies, and writes that down at once: nothing of
 * it may come back after a crash. */
static void target_drop(BorrowTarget *t, const char *why) {
        BorrowManager *m = t->manager;
        char a[FORMAT_TIMESPAN_MAX];

        proxies_drop(m, t->name, t->slice_id, why);
        if (t->account.debt_usec > 0)
                log_struct(LOG_INFO, "TONARI_SLICE=%s", t->name, "TONARI_REASON=slice-removed",
                           "TONARI_DEBT_USEC=%" PRIu64, t->account.debt_usec,
                           LOG_MESSAGE("Slice '%s' %s while it owed %s of CPU time; the debt is dropped.", t->name,
                                       why, fmt_ms(a, t->account.debt_usec)));
        target_free(t);
        save_now(m);
}

static int on_target_tick(sd_event_source *es, uint64_t usec, void *userdata) {
        BorrowTarget *t = userdata;
        BorrowManager *m = t->manager;
        usec_t start = now(CLOCK_MONOTONIC), quota, period, limit, want, debt;
        bool was_limited = t->limit_usec != USEC_INFINITY;
        Slice *s;
        int r;

        (void) es;
        (void) usec;

        s = target_slice(t);
        if (!s) {
                target_drop(t, "was removed");
                return 0;
        }
        if (s->state == SLICE_CREATING)
                return target_arm(t, slice_period(s));

        /* The proxies working for this slice are read now, so that the period about to begin
         * repays their work up to its start and not only up to their last regular sample. */
        for (BorrowProxy *p = m->proxies, *next; p; p = next) {
                next = p->next;
                if (streq(p->target, t->name))
                        proxy_sample(p);
        }
        /* The limit written at the last tick was in force on the same cgroup since. */
        if (t->period_usec != 0 && t->period_usec != USEC_INFINITY)
                target_overrun(t, t->period_usec);
        debt = t->account.debt_usec;

        target_quota(t, s, &quota, &period);
        limit = borrow_account_period(&t->account, &m->policy, quota);
        want = limit < quota ? limit : USEC_INFINITY;
        t->quota_usec = quota;
        if (want != USEC_INFINITY || t->account.debt_usec > 0 || was_limited)
                mark_dirty(m);

        if (want != t->limit_usec || period != t->period_usec) {
                r = target_write(t, s, want, period);
                if (r < 0) {
                        log_struct_errno(LOG_WARNING, r, "TONARI_SLICE=%s", t->name,
                                         LOG_MESSAGE("Failed to %s the CPU quota of slice '%s' (cgroup /%s), will retry "
                                                     "next period: %m",
                                                     want == USEC_INFINITY ? "restore" : "shorten", t->name,
                                                     strna(t->limit_cgroup)));
                        t->limit_cgroup = mfree(t->limit_cgroup);
                        t->boundary_usec = USEC_INFINITY;
                } else {
                        if (!was_limited && want != USEC_INFINITY)
                                target_log_start(t, debt, quota, want, period);
                        t->limit_usec = want;
                        t->period_usec = period;
                }
        }
        if (t->limit_usec != USEC_INFINITY)
                target_probe_start(t, period);

        if (t->limit_usec == USEC_INFINITY && t->account.debt_usec == 0) {
                if (was_limited)
                        target_log_end(t, s->settings.cpu_quota_per_sec_usec == USEC_INFINITY ? USEC_INFINITY : quota,
                                       period);
                t->limit_cgroup = mfree(t->limit_cgroup);
                target_probe_stop(t);
                (void) sd_event_source_set_enabled(t->timer, SD_EVENT_OFF);
                /* Repaid (or forgiven): the end of the episode is written at once, so that a crash
                 * cannot bring the last second's debt back. */
                if (was_limited || debt > 0)
                        save_now(m);
        } else
                (void) target_arm(t, period);

        m->n_ticks++;
        m->work_usec += now(CLOCK_MONOTONIC) - start;
        return 0;
}

/*
 * Whether boundary_usec tells where the periods of the cgroup written to begin. Between two
 * episodes of debt limit_cgroup is unset and the boundary found before is assumed to hold; the
 * first write shows whether the cgroup is the same. A boundary is trusted for a minute: a scope
 * made anew under the same name starts its periods elsewhere.
 */
static bool target_aligned(const BorrowTarget *t, usec_t period) {
        return t->boundary_usec != USEC_INFINITY && t->boundary_period_usec == period && t->boundary_cgroup &&
               (!t->limit_cgroup || streq(t->limit_cgroup, t->boundary_cgroup)) &&
               now(CLOCK_MONOTONIC) < t->boundary_usec + BORROW_BOUNDARY_TRUST_USEC;
}

/*
 * When the next tick is due: about one period from now, and, once the kernel's period boundaries
 * are known, just before one of them. The margin is the probe's resolution, the most the
 * boundary found can be late by, so a write lands at most that much before the kernel's own
 * refill (which then hands out the same new quota) instead of in the middle of a period.
 */
static usec_t target_next_tick(const BorrowTarget *t, usec_t period) {
        usec_t n = now(CLOCK_MONOTONIC), lead = period / BORROW_PROBE_FINE, earliest, k;

        if (!target_aligned(t, period))
                return n + period;
        earliest = n + period / 2 + lead;
        k = earliest <= t->boundary_usec ? 0 : (earliest - t->boundary_usec + period - 1) / period;
        return t->boundary_usec + k * period - lead;
}

/*
 * Owes again what the slice ran beyond the shortened limit since the last tick. Only between two
 * ticks on the kernel's period boundaries of limit_cgroup, one period apart: such an interval is
 * one kernel period, in which the slice cannot legitimately run more than the limit, whereas an
 * interval across a boundary may hold the ends of two periods and two quotas.
 */
static void target_overrun(BorrowTarget *t, usec_t period) {
        BorrowManager *m = t->manager;
        usec_t n = now(CLOCK_MONOTONIC), usage, last = t->usage_usec, last_at = t->usage_at, used, allowed;
        char a[FORMAT_TIMESPAN_MAX];

        t->usage_usec = USEC_INFINITY;
        if (t->limit_usec == USEC_INFINITY || !t->limit_cgroup || !m->slices || !target_aligned(t, period) ||
            cgroup_read_cpu_usage(m->slices->cgroup_root, t->limit_cgroup, &usage) < 0)
                return;
        t->usage_usec = usage;
        t->usage_at = n;
        if (last == USEC_INFINITY || usage < last || n - last_at < period / 2 || n - last_at > period * 3 / 2)
                return;

        used = usage - last;
        allowed = t->limit_usec * (n - last_at) / period;
        if (used <= allowed)
                return;
        (void) borrow_account_overrun(&t->account, &m->policy, used - allowed);
        log_debug("Slice '%s' ran %s beyond its shortened quota in the last period; owed again.", t->name,
                  fmt_ms(a, used - allowed));
}

/* Schedules the next tick (see target_next_tick()). */
static int target_arm(BorrowTarget *t, usec_t period) {
        /* Accuracy 1 µs: sd-event's default (250 ms) would merge ticks of several periods. */
        usec_t when = target_next_tick(t, period);
        int r;

        if (!t->timer) {
                r = sd_event_add_time(t->manager->event, &t->timer, CLOCK_MONOTONIC, when, 1, on_target_tick, t);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(t->timer, "borrow-period");
                return 0;
        }
        r = sd_event_source_set_time(t->timer, when);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(t->timer, SD_EVENT_ONESHOT);
}

static void target_probe_stop(BorrowTarget *t) {
        t->probe_stage = BORROW_PROBE_IDLE;
        (void) sd_event_source_set_enabled(t->probe, SD_EVENT_OFF);
}

static int target_probe_read(BorrowTarget *t, uint64_t *ret) {
        Slice *s = target_slice(t);

        if (!s || !t->limit_cgroup)
                return -ENOENT;
        t->manager->n_probe_reads++;
        return cgroup_read_cpu_periods(s->manager->cgroup_root, t->limit_cgroup, ret);
}

static int target_probe_schedule(BorrowTarget *t, usec_t when) {
        int r;

        if (!t->probe) {
                r = sd_event_add_time(t->manager->event, &t->probe, CLOCK_MONOTONIC, when, 1, on_probe, t);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(t->probe, "borrow-probe");
                return 0;
        }
        r = sd_event_source_set_time(t->probe, when);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(t->probe, SD_EVENT_ONESHOT);
}

/* Starts looking for the period boundaries of the cgroup a limit was just written to. */
static void target_probe_start(BorrowTarget *t, usec_t period) {
        usec_t n = now(CLOCK_MONOTONIC);
        uint64_t periods;

        if (t->probe_stage != BORROW_PROBE_IDLE || target_aligned(t, period) || n < t->probe_retry)
                return;
        if (target_probe_read(t, &periods) < 0)
                return; /* no cpu.stat period count: ticks stay one period apart */
        t->probe_periods = periods;
        t->probe_last = now(CLOCK_MONOTONIC);
        t->probe_deadline = t->probe_last + 2 * period + period / BORROW_PROBE_COARSE;
        t->probe_stage = BORROW_PROBE_COARSE_STAGE;
        if (target_probe_schedule(t, t->probe_last + period / BORROW_PROBE_COARSE) < 0)
                t->probe_stage = BORROW_PROBE_IDLE;
}

static int on_probe(sd_event_source *es, uint64_t usec, void *userdata) {
        BorrowTarget *t = userdata;
        BorrowManager *m = t->manager;
        usec_t start = now(CLOCK_MONOTONIC), period = t->period_usec, at, next;
        char a[FORMAT_TIMESPAN_MAX], b[FORMAT_TIMESPAN_MAX];
        uint64_t periods;
        int r;

        (void) es;
        (void) usec;

        r = target_probe_read(t, &periods);
        at = now(CLOCK_MONOTONIC);
        if (r < 0) {
                log_debug_errno(r, "Slice '%s': cannot read the CFS period count of /%s, ticks stay unaligned: %m",
                                t->name, strna(t->limit_cgroup));
                target_probe_stop(t);
                t->probe_retry = at + BORROW_PROBE_RETRY_PERIODS * period;
                goto finish;
        }

        if (periods == t->probe_periods) {
                if (at <= t->probe_deadline)
                        next = at + period / (t->probe_stage == BORROW_PROBE_FINE_STAGE ? BORROW_PROBE_FINE
                                                                                         : BORROW_PROBE_COARSE);
                else if (t->probe_stage == BORROW_PROBE_FINE_STAGE) {
                        /* The period that began earlier did not come round again: start over. */
                        t->probe_stage = BORROW_PROBE_COARSE_STAGE;
                        t->probe_deadline = at + 2 * period + period / BORROW_PROBE_COARSE;
                        next = at + period / BORROW_PROBE_COARSE;
                } else {
                        /* The cgroup did not run with its limit: there is no period to find. */
                        target_probe_stop(t);
                        t->probe_retry = at + BORROW_PROBE_RETRY_PERIODS * period;
                        goto finish;
                }
        } else if (t->probe_stage == BORROW_PROBE_COARSE_STAGE) {
                /* A period began in (probe_last, at]: one period later, look there finely. */
                next = t->probe_last + period - period / BORROW_PROBE_FINE;
                if (next <= at)
                        next = at + period / BORROW_PROBE_FINE;
                t->probe_deadline = at + period + period / BORROW_PROBE_FINE;
                t->probe_stage = BORROW_PROBE_FINE_STAGE;
        } else {
                /* A period began in (probe_last, at], and at most period/400 before at. */
                r = free_and_strdup(&t->boundary_cgroup, t->limit_cgroup);
                if (r < 0) {
                        target_probe_stop(t);
                        goto finish;
                }
                t->boundary_usec = at;
                t->boundary_period_usec = period;
                target_probe_stop(t);
                log_debug("Slice '%s': the CFS periods of /%s begin %s into each %s interval of the monotonic clock.",
                          t->name, t->limit_cgroup, fmt_ms(a, at % period), fmt_ms(b, period));
                if (t->timer && t->limit_usec != USEC_INFINITY)
                        (void) target_arm(t, period);
                goto finish;
        }

        t->probe_periods = periods;
        t->probe_last = at;
        if (target_probe_schedule(t, next) < 0)
                target_probe_stop(t);
finish:
        m->work_usec += now(CLOCK_MONOTONIC) - start;
        return 0;
}

/* The period of the slice a target belongs to, for a target whose tick is not running. */
static usec_t target_period(BorrowTarget *t) {
        Slice *s = target_slice(t);
        return s ? slice_period(s) : CGROUP_CPU_QUOTA_PERIOD_DEFAULT_USEC;
}

/* Whether the target's period tick is running (it repays a debt or lifts a limit). */
static bool target_ticking(const BorrowTarget *t) {
        int enabled = SD_EVENT_OFF;

        if (t && t->timer)
                (void) sd_event_source_get_enabled(t->timer, &enabled);
        return enabled != SD_EVENT_OFF;
}

/*
 * Charges usec to slice s. durable: the state file has it when this returns, or the charge is undone
 * and the error returned (the caller is told "done" only for what a crash cannot take back);
 * otherwise (proxy samples) it is written with the progress.
 */
static int target_charge(BorrowManager *m, Slice *s, usec_t usec, bool durable) {
        BorrowTarget *t = borrow_manager_find_target(m, s->name);
        BorrowAccount before;
        bool created = false;
        int r;

        if (t && t->slice_id != 0 && t->slice_id != s->id) {
                target_drop(t, "was removed and created again");
                t = NULL;
        }
        if (!t) {
                r = target_new(m, s, &t);
                if (r < 0)
                        return r;
                created = true;
        }
        before = t->account;
        r = borrow_account_charge(&t->account, &m->policy, usec, NULL);
        if (r >= 0 && durable)
                r = save_state(m, NULL);
        if (r < 0) {
                if (created)
                        target_free(t);
                else
                        t->account = before;
                return r;
        }
        if (!durable)
                mark_dirty(m);
        if (!target_ticking(t))
                return target_arm(t, target_period(t));
        return 0;
}

int borrow_manager_charge(BorrowManager *m, Slice *s, usec_t usec) {
        if (usec == 0)
                return -EINVAL;
        if (usec > BORROW_CHARGE_MAX_USEC)
                return -ERANGE;
        return target_charge(m, s, usec, true);
}

/* ---- proxies */

BorrowProxy *borrow_manager_find_proxy(BorrowManager *m, uint32_t id) {
        for (BorrowProxy *p = m->proxies; p; p = p->next)
                if (p->id == id)
                        return p;
        return NULL;
}

static void proxy_free(BorrowProxy *p) {
        if (!p)
                return;
        for (BorrowProxy **q = &p->manager->proxies; *q; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        break;
                }
        sd_event_source_disable_unref(p->exit_source);
        safe_close(p->pidfd);
        free(p->target);
        free(p->cgroup);
        free(p);
}

/* The helper's CPU time now. -ESRCH once the process has exited (its PID may be someone else's). */
static int proxy_read(BorrowProxy *p, usec_t *ret) {
        if (p->pid > 0) {
                struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
                struct timespec ts;
                clockid_t clock;

                if (clock_getcpuclockid(p->pid, &clock) != 0 || clock_gettime(clock, &ts) < 0)
                        return -ESRCH;
                /* Read first, then make sure the process behind the PID was ours all along. */
                if (poll(&pfd, 1, 0) != 0)
                        return -ESRCH;
                *ret = timespec_load(&ts);
                return 0;
        }

        return cgroup_read_cpu_usage(p->manager->slices->cgroup_root, p->cgroup + 1, ret);
}

static void borrow_proxy_log_removed(BorrowProxy *p, const char *reason) {
        char a[FORMAT_TIMESPAN_MAX];

        if (p->pid > 0)
                log_struct(LOG_INFO, "TONARI_SLICE=%s", p->target, "TONARI_PROXY_ID=%" PRIu32, p->id,
                           "TONARI_HELPER_PID=%i", (int) p->pid, "TONARI_CHARGED_USEC=%" PRIu64, p->charged_usec,
                           LOG_MESSAGE("Removed proxy %" PRIu32 " (process %i working for slice '%s', %s charged): %s.",
                                       p->id, (int) p->pid, p->target, fmt_ms(a, p->charged_usec), reason));
        else
                log_struct(LOG_INFO, "TONARI_SLICE=%s", p->target, "TONARI_PROXY_ID=%" PRIu32, p->id,
                           "TONARI_HELPER_CGROUP=%s", p->cgroup, "TONARI_CHARGED_USEC=%" PRIu64, p->charged_usec,
                           LOG_MESSAGE("Removed proxy %" PRIu32 " (cgroup %s working for slice '%s', %s charged): %s.",
                                       p->id, p->cgroup, p->target, fmt_ms(a, p->charged_usec), reason));
}

static void proxy_forget(BorrowProxy *p, const char *reason) {
        BorrowManager *m = p->manager;

        borrow_proxy_log_removed(p, reason);
        proxy_free(p);
        if (!m->proxies)
                (void) sd_event_source_set_enabled(m->sample_timer, SD_EVENT_OFF);
}

void borrow_proxy_remove(BorrowProxy *p, const char *reason) {
        BorrowManager *m = p->manager;

        proxy_forget(p, reason);
        save_now(m);
}

int borrow_manager_remove_proxy(BorrowManager *m, BorrowProxy *p, const char *reason) {
        int r;

        /* Written without it first: if that fails, the proxy stays, and the caller is told. */
        r = save_state(m, p);
        if (r < 0)
                return r;
        proxy_forget(p, reason);
        return 0;
}

static void proxy_sample(BorrowProxy *p) {
        BorrowManager *m = p->manager;
        Slice *s = m->slices ? slice_manager_find(m->slices, p->target) : NULL;
        usec_t cur, delta;
        int r;

        r = proxy_read(p, &cur);
        if (r == -ESRCH)
                return borrow_proxy_remove(p, "the helper process exited");
        if (r == -ENOENT)
                return borrow_proxy_remove(p, "the helper cgroup was removed");
        if (r < 0) {
                log_warning_errno(r, "Failed to read the CPU time of proxy %" PRIu32 "'s helper, ignoring: %m", p->id);
                return;
        }
        if (!s || (p->slice_id != 0 && s->id != p->slice_id))
                return borrow_proxy_remove(p, "its slice was removed");
        p->slice_id = s->id;

        /* A cgroup's counter can only go down if it was removed and made again. */
        delta = cur > p->last_usec ? cur - p->last_usec : 0;
        p->last_usec = cur;
        if (delta == 0)
                return;
        delta = MIN(delta, BORROW_CHARGE_MAX_USEC);
        r = target_charge(m, s, delta, false);
        if (r < 0)
                log_warning_errno(r, "Failed to charge %" PRIu64 " µs to slice '%s' for proxy %" PRIu32 ", ignoring: %m",
                                  delta, s->name, p->id);
        else
                p->charged_usec += delta;
}

static int on_sample(sd_event_source *es, uint64_t usec, void *userdata) {
        BorrowManager *m = userdata;
        usec_t start = now(CLOCK_MONOTONIC);

        (void) usec;
        for (BorrowProxy *p = m->proxies, *next; p; p = next) {
                next = p->next;
                /* A slice whose tick runs has its proxies sampled by the tick itself. */
                if (!target_ticking(borrow_manager_find_target(m, p->target)))
                        proxy_sample(p);
        }
        m->work_usec += now(CLOCK_MONOTONIC) - start;
        if (!m->proxies)
                return sd_event_source_set_enabled(es, SD_EVENT_OFF);
        return sd_event_source_set_time_relative(es, BORROW_SAMPLE_USEC);
}

static int on_helper_exit(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        BorrowProxy *p = userdata;

        (void) es;
        (void) fd;
        (void) revents;
        /* Its CPU time since the last sample is lost with it: at most one sample interval. */
        borrow_proxy_remove(p, "the helper process exited");
        return 0;
}

static int start_sampling(BorrowManager *m) {
        int r;

        if (!m->sample_timer) {
                r = sd_event_add_time_relative(m->event, &m->sample_timer, CLOCK_MONOTONIC, BORROW_SAMPLE_USEC, 1,
                                               on_sample, m);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(m->sample_timer, "borrow-proxies");
        }
        return sd_event_source_set_enabled(m->sample_timer, SD_EVENT_ON);
}

static int pidfd_open_helper(pid_t pid) {
        int fd = (int) syscall(SYS_pidfd_open, pid, 0);
        return fd < 0 ? -errno : fd;
}

/* Sets up p's helper; with expect_start, a PID whose start time differs is somebody else. */
static int proxy_attach_helper(BorrowProxy *p, bool expect_start) {
        BorrowManager *m = p->manager;
        int r;

        if (p->pid > 0) {
                ProcStat st;

                p->pidfd = pidfd_open_helper(p->pid);
                if (p->pidfd < 0)
                        return p->pidfd == -EINVAL ? -ESRCH : p->pidfd;
                /* Between pidfd_open() and this read the PID cannot be reused: the pidfd pins it. */
                r = proc_pid_stat("/proc", p->pid, &st);
                if (r < 0)
                        return r;
                if (expect_start && st.start_time_ticks != p->start_time_ticks)
                        return -ESRCH;
                p->start_time_ticks = st.start_time_ticks;
                r = sd_event_add_io(m->event, &p->exit_source, p->pidfd, EPOLLIN, on_helper_exit, p);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(p->exit_source, "borrow-helper-exit");
        }
        return 0;
}

static int proxy_new(BorrowManager *m, uint32_t id, const char *target, pid_t pid, const char *cgroup,
                     BorrowProxy **ret) {
        BorrowProxy *p;

        p = new0(BorrowProxy, 1);
        if (!p)
                return -ENOMEM;
        *p = (BorrowProxy){ .manager = m, .id = id, .pid = pid, .pidfd = -EBADF };
        p->target = strdup(target);
        if (!p->target || (cgroup && !(p->cgroup = strdup(cgroup)))) {
                free(p->target);
                free(p);
                return -ENOMEM;
        }
        /* Appended: listings come out in the order the proxies were added. */
        BorrowProxy **q = &m->proxies;
        while (*q)
                q = &(*q)->next;
        *q = p;
        m->last_proxy_id = MAX(m->last_proxy_id, id);
        *ret = p;
        return 0;
}

int borrow_process_in_slice(BorrowManager *m, Slice *s, pid_t pid) {
        _cleanup_free_ char *cg = NULL;
        int r;

        (void) m;
        if (!s->cgroup)
                return 0;
        r = proc_pid_cgroup("/proc", pid, &cg);
        if (r < 0)
                return r;
        return path_equal_or_below(cg + 1, s->cgroup);
}

int borrow_manager_add_proxy(BorrowManager *m, Slice *s, pid_t pid, const char *cgroup, BorrowProxy **ret) {
        BorrowProxy *p;
        int r;

        if ((pid > 0) == !isempty(cgroup))
                return -EINVAL;

        if (pid > 0) {
                r = proc_pid_is_kernel_thread("/proc", pid);
                if (r < 0)
                        return r;
                if (r > 0 || pid == 1 || pid == getpid())
                        return -EINVAL;
                r = borrow_process_in_slice(m, s, pid);
                if (r < 0)
                        return r;
                if (r > 0)
                        return -ELOOP;
                for (p = m->proxies; p; p = p->next)
                        if (p->pid == pid)
                                return -EEXIST;
        } else {
                const char *rel;

                if (!path_is_normalized_absolute(cgroup) || strpbrk(cgroup, " \t\n"))
                        return -EINVAL;
                rel = cgroup + 1;
                /* Inside the slice its CPU is the slice's already; above it, it contains the
                 * slice's own CPU time, which would be charged to it a second time. */
                if (path_equal_or_below(rel, s->cgroup) || path_equal_or_below(s->cgroup, rel) || isempty(rel))
                        return -ELOOP;
                r = cgroup_exists(m->slices->cgroup_root, rel);
                if (r < 0)
                        return r;
                if (r == 0)
                        return -ENOENT;
                for (p = m->proxies; p; p = p->next)
                        if (p->cgroup && streq(p->cgroup, cgroup))
                                return -EEXIST;
        }
        if (m->last_proxy_id == UINT32_MAX)
                return -E2BIG;

        r = proxy_new(m, m->last_proxy_id + 1, s->name, pid, pid > 0 ? NULL : cgroup, &p);
        if (r < 0)
                return r;
        p->slice_id = s->id;
        p->cgroup_id = s->cgroup_id;
        r = proxy_attach_helper(p, false);
        if (r >= 0)
                r = proxy_read(p, &p->last_usec);
        if (r >= 0)
                r = start_sampling(m);
        /* On disk before the caller gets its id. */
        if (r >= 0)
                r = save_state(m, NULL);
        if (r < 0) {
                proxy_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

size_t borrow_manager_count_proxies(BorrowManager *m) {
        size_t n = 0;
        for (BorrowProxy *p = m ? m->proxies : NULL; p; p = p->next)
                n++;
        return n;
}

/* ---- state file */

/* The slice a proxy works for, or NULL if it was removed (see target_slice()). */
static Slice *proxy_slice(BorrowProxy *p) {
        Slice *s = p->manager->slices ? slice_manager_find(p->manager->slices, p->target) : NULL;

        if (!s || (p->slice_id != 0 && s->id != p->slice_id))
                return NULL;
        return s;
}

/*
 * Replaces the state file with what is in memory (without skip, a proxy about to go), atomically:
 * a crash leaves the old file or the new one. Accounts and proxies of slices that no longer exist
 * are never written. It costs tens of µs (docs/BENCHMARKS.md).
 */
static int save_state(BorrowManager *m, const BorrowProxy *skip) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        usec_t start = now(CLOCK_MONOTONIC);
        int r = 0;

        if (!m->state_file)
                return 0;
        tmp = strjoin(m->state_file, ".tmp");
        if (!tmp)
                return -ENOMEM;
        f = fopen(tmp, "we");
        if (!f)
                return -errno;
        fputs(BORROW_STATE_HEADER "\n", f);
        for (BorrowTarget *t = m->targets; t; t = t->next) {
                _cleanup_free_ char *line = NULL;
                BorrowStateEntry e = { .kind = BORROW_STATE_TARGET,
                                       .cgroup_id = t->cgroup_id,
                                       .account = t->account,
                                       .limit_usec = t->limit_usec,
                                       .period_usec = t->period_usec,
                                       .limit_own = t->limit_own,
                                       .configured_per_sec_usec = t->configured_per_sec_usec,
                                       .configured_period_usec = t->configured_period_usec };

                if (!target_slice(t))
                        continue;
                strncpy(e.name, t->name, NAME_MAX_LEN);
                r = borrow_state_format(&e, &line);
                if (r < 0)
                        goto fail;
                fprintf(f, "%s\n", line);
        }
        for (BorrowProxy *p = m->proxies; p; p = p->next) {
                _cleanup_free_ char *line = NULL;
                BorrowStateEntry e = { .kind = BORROW_STATE_PROXY,
                                       .cgroup_id = p->cgroup_id,
                                       .id = p->id,
                                       .pid = p->pid,
                                       .start_time_ticks = p->start_time_ticks,
                                       .cgroup = p->cgroup,
                                       .last_usec = p->last_usec,
                                       .charged_usec = p->charged_usec };

                if (p == skip || !proxy_slice(p))
                        continue;
                strncpy(e.name, p->target, NAME_MAX_LEN);
                r = borrow_state_format(&e, &line);
                if (r < 0)
                        goto fail;
                fprintf(f, "%s\n", line);
        }
        /*
         * No fsync(): what the file must survive is a crash of tonarid, and for that a complete file
         * renamed over the old one is enough. It lives in /run, which a reboot empties together with
         * the cgroups and units it describes; an fsync() there is free on tmpfs but cost 3-5 ms on
         * the development host's ext4 /run, each charge waiting for it (docs/BENCHMARKS.md).
         */
        if (fflush(f) != 0 || ferror(f)) {
                r = errno > 0 ? -errno : -EIO;
                goto fail;
        }
        if (rename(tmp, m->state_file) < 0) {
                r = -errno;
                goto fail;
        }
        m->dirty = false;
        m->n_state_writes++;
        m->state_write_usec += now(CLOCK_MONOTONIC) - start;
        return 0;
fail:
        (void) unlink(tmp);
        return r;
}

static int on_save(sd_event_source *es, uint64_t usec, void *userdata) {
        BorrowManager *m = userdata;
        int r;

        (void) usec;
        if (m->dirty) {
                r = save_state(m, NULL);
                if (r < 0)
                        log_warning_errno(r, "Failed to save the borrowing state to '%s', will retry: %m", m->state_file);
        }
        (void) sd_event_source_set_time_relative(es, BORROW_SAVE_USEC);
        return sd_event_source_set_enabled(es, m->dirty ? SD_EVENT_ONESHOT : SD_EVENT_OFF);
}

/*
 * The slice an entry of the state file belongs to: the one of that name whose cgroup has the id the
 * entry names. Else NULL, and why: a slice of that name made after the one the entry was written for
 * (while tonarid was not running, or before a crash lost the entry's removal) is another tenant.
 */
static Slice *entry_slice(BorrowManager *m, const BorrowStateEntry *e, const char **ret_why) {
        Slice *s = m->slices ? slice_manager_find(m->slices, e->name) : NULL;

        if (!s) {
                *ret_why = "no longer exists";
                return NULL;
        }
        if (s->cgroup_id == 0 || s->cgroup_id != e->cgroup_id) {
                *ret_why = "was removed and made again";
                return NULL;
        }
        return s;
}

static void restore_target(BorrowManager *m, BorrowStateEntry *e) {
        const char *why = NULL;
        Slice *s = entry_slice(m, e, &why);
        BorrowTarget *t;
        char a[FORMAT_TIMESPAN_MAX];

        if (!s) {
                if (e->account.debt_usec > 0)
                        log_info("Slice '%s' %s; dropping its recorded debt of %s.", e->name, why,
                                 fmt_ms(a, e->account.debt_usec));
                return;
        }
        if (target_new(m, s, &t) < 0)
                return (void) log_oom();
        t->account = e->account;
        /* A state file cannot make the overrun part larger than the debt it is part of. */
        t->account.overrun_debt_usec = MIN(t->account.overrun_debt_usec, t->account.debt_usec);
        t->limit_usec = e->limit_usec;
        t->period_usec = e->period_usec;
        t->limit_own = e->limit_own;
        t->configured_per_sec_usec = e->configured_per_sec_usec;
        t->configured_period_usec = e->configured_period_usec;

        if (t->limit_usec != USEC_INFINITY && t->limit_own) {
                usec_t period = slice_period(s);

                /* tonarid stopped while the slice's own cpu.max held the shortened quota, so
                 * adoption read that back as the slice's setting: put the configured one back. */
                if (period == t->period_usec &&
                    cgroup_cpu_quota_per_period(s->settings.cpu_quota_per_sec_usec, period) == t->limit_usec) {
                        s->settings.cpu_quota_per_sec_usec = t->configured_per_sec_usec;
                        s->settings.cpu_quota_period_usec = t->configured_period_usec;
                }
                t->limit_cgroup = strdup(s->cgroup);
                if (!t->limit_cgroup)
                        return (void) log_oom();
        }
        if (t->account.debt_usec > 0 || t->limit_usec != USEC_INFINITY)
                (void) target_arm(t, slice_period(s));
}

static void restore_proxy(BorrowManager *m, BorrowStateEntry *e) {
        const char *why = NULL;
        Slice *s = entry_slice(m, e, &why);
        BorrowProxy *p;
        int r;

        if (!s) {
                log_info("Dropping proxy %" PRIu32 ": slice '%s' %s.", e->id, e->name, why);
                return;
        }
        r = proxy_new(m, e->id, e->name, e->pid, e->cgroup, &p);
        if (r < 0)
                return (void) log_oom();
        p->slice_id = s->id;
        p->cgroup_id = s->cgroup_id;
        p->start_time_ticks = e->start_time_ticks;
        p->last_usec = e->last_usec;
        p->charged_usec = e->charged_usec;
        r = proxy_attach_helper(p, true);
        if (r < 0) {
                log_info("Dropping proxy %" PRIu32 " for slice '%s': its helper %s is gone.", e->id, e->name,
                         e->pid > 0 ? "process" : "cgroup");
                proxy_free(p);
                return;
        }
        /* The first sample charges what the helper spent while tonarid was down. */
        (void) start_sampling(m);
}

static int load_state(BorrowManager *m) {
        _cleanup_free_ char *text = NULL;
        _cleanup_strv_free_ char **lines = NULL;
        unsigned n = 0;
        int r;

        r = read_full_file(m->state_file, &text, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return log_warning_errno(r, "Failed to read the borrowing state '%s', starting without: %m",
                                         m->state_file);
        r = strv_split(text, "\n", &lines);
        if (r < 0)
                return r;
        if (!lines[0] || !streq(lines[0], BORROW_STATE_HEADER)) {
                log_warning("Borrowing state '%s' is not in a format this tonarid knows; starting without it.",
                            m->state_file);
                return 0;
        }
        STRV_FOREACH(l, lines + 1) {
                _cleanup_(borrow_state_entry_done) BorrowStateEntry e = BORROW_STATE_ENTRY_INIT;

                n++;
                if (isempty(*l) || (*l)[0] == '#')
                        continue;
                r = borrow_state_parse(*l, &e);
                if (r < 0) {
                        _cleanup_free_ char *esc = cescape(*l);
                        log_warning("%s:%u: ignoring malformed line '%s'.", m->state_file, n + 1, strna(esc));
                        continue;
                }
                if (e.kind == BORROW_STATE_TARGET)
                        restore_target(m, &e);
                else if (!borrow_manager_find_proxy(m, e.id))
                        restore_proxy(m, &e);
        }
        return 0;
}

/* ---- manager */

/* A slice was removed: its account and proxies go, on disk before the caller hears of it. */
static void on_slice_removed(Slice *s, void *userdata) {
        BorrowManager *m = userdata;
        BorrowTarget *t = borrow_manager_find_target(m, s->name);

        if (t && (t->slice_id == 0 || t->slice_id == s->id))
                target_drop(t, "was removed"); /* with its proxies, and written */
        else {
                proxies_drop(m, s->name, s->id, "its slice was removed");
                save_now(m);
        }
}

int borrow_manager_new(sd_event *event, SliceManager *slices, const BorrowSettings *settings, BorrowManager **ret) {
        _cleanup_(borrow_manager_freep) BorrowManager *m = NULL;
        long n;
        int r;

        m = new0(BorrowManager, 1);
        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(event);
        m->slices = slices;
        r = borrow_manager_configure(m, settings);
        if (r < 0)
                return r;
        n = sysconf(_SC_NPROCESSORS_ONLN);
        m->n_cpus = n > 0 ? (unsigned) n : 1;
        if (settings->state_file) {
                m->state_file = strdup(settings->state_file);
                if (!m->state_file)
                        return -ENOMEM;
        }

        r = sd_event_add_time_relative(event, &m->save_timer, CLOCK_MONOTONIC, BORROW_SAVE_USEC, 0, on_save, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(m->save_timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(m->save_timer, "borrow-save");

        if (slices)
                slice_manager_set_removed_callback(slices, on_slice_removed, m);
        if (m->state_file && slices) {
                (void) load_state(m);
                /* What start-up dropped or corrected is written now: a crash must not bring back
                 * what was dropped. */
                save_now(m);
        }
        *ret = TAKE_PTR(m);
        return 0;
}

void borrow_manager_forget_chargers(BorrowManager *m) {
        for (size_t i = 0; i < BORROW_CHARGERS_MAX; i++) {
                free(m->chargers[i].sender);
                m->chargers[i] = (BorrowCharger) {};
        }
}

int borrow_manager_configure(BorrowManager *m, const BorrowSettings *settings) {
        if (borrow_policy_validate(&settings->policy) < 0 || settings->n_allow_uids > BORROW_ALLOW_MAX ||
            settings->n_allow_gids > BORROW_ALLOW_MAX)
                return -EINVAL;
        /* A remembered group check may no longer hold. */
        borrow_manager_forget_chargers(m);
        m->policy = settings->policy;
        m->n_allow_uids = settings->n_allow_uids;
        if (m->n_allow_uids > 0)
                memcpy(m->allow_uids, settings->allow_uids, m->n_allow_uids * sizeof(uint32_t));
        m->n_allow_gids = settings->n_allow_gids;
        if (m->n_allow_gids > 0)
                memcpy(m->allow_gids, settings->allow_gids, m->n_allow_gids * sizeof(uint32_t));
        return 0;
}

BorrowManager *borrow_manager_free(BorrowManager *m) {
        int r;

        if (!m)
                return NULL;

        /* Nothing stays shortened while nobody repays: lift every limit in force. The debt is
         * kept in the state file and repaid after the next start. */
        for (BorrowTarget *t = m->targets; t; t = t->next) {
                Slice *s;

                if (t->limit_usec == USEC_INFINITY)
                        continue;
                s = target_slice(t);
                if (s && target_write(t, s, USEC_INFINITY, t->period_usec) >= 0) {
                        t->limit_usec = USEC_INFINITY;
                        m->dirty = true;
                }
        }
        if (m->dirty) {
                r = save_state(m, NULL);
                if (r < 0)
                        log_warning_errno(r, "Failed to save the borrowing state to '%s': %m", m->state_file);
        }
        if (m->slices)
                slice_manager_set_removed_callback(m->slices, NULL, NULL);

        while (m->proxies)
                proxy_free(m->proxies);
        while (m->targets)
                target_free(m->targets);
        sd_event_source_disable_unref(m->sample_timer);
        sd_event_source_disable_unref(m->save_timer);
        sd_event_unref(m->event);
        free(m->state_file);
        borrow_manager_forget_chargers(m);
        return mfree(m);
}
