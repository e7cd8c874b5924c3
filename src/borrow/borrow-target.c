/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Targets: one per slice that was ever charged, with its account. While it owes something or a
 * shortened quota is in force, a tick per CFS period asks the ledger for the next quota and writes
 * it for the slice's processes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "borrow-internal.h"
#include "log.h"
#include "parse-util.h"
#include "string-util.h"

static void target_overrun(BorrowTarget *t, usec_t period, unsigned periods);

BorrowTarget *borrow_manager_find_target(BorrowManager *m, const char *name) {
        for (BorrowTarget *t = m->targets; t; t = t->next)
                if (streq(t->name, name))
                        return t;
        return NULL;
}

int borrow_target_new(BorrowManager *m, Slice *s, BorrowTarget **ret) {
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

void borrow_target_free(BorrowTarget *t) {
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
        free(t->kernel_cgroup);
        free(t);
}

/* The slice a target belongs to, or NULL if it was removed (a slice of the same name created
 * since is a different tenant and does not inherit the debt). */
Slice *borrow_target_slice(BorrowTarget *t) {
        Slice *s = t->manager->slices ? slice_manager_find(t->manager->slices, t->name) : NULL;

        if (!s || (t->slice_id != 0 && s->id != t->slice_id))
                return NULL;
        t->slice_id = s->id;
        return s;
}

/* The quota per period the ledger works against: CPUQuota=, or the CPUs the slice may use. */
void borrow_target_quota(BorrowTarget *t, Slice *s, usec_t *ret_quota, usec_t *ret_period) {
        const CGroupSettings *c = &s->settings;
        usec_t period = slice_cpu_quota_period(s);
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
int borrow_target_write(BorrowTarget *t, Slice *s, usec_t limit, usec_t period) {
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

                /* Lifted on the slice's own cgroup, its configured CPUQuota= is back. */
                r = slice_set_cpu_quota_override(s, t->limit_cgroup, limit, period);
                t->writes++;
                t->manager->stats.n_writes++;
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

/* Forgets the account of a removed slice and its proxies, and writes that down at once: nothing of
 * it may come back after a crash. */
void borrow_target_drop(BorrowTarget *t, const char *why) {
        BorrowManager *m = t->manager;
        char a[FORMAT_TIMESPAN_MAX];

        borrow_proxies_drop(m, t->name, t->slice_id, why);
        if (t->account.debt_usec > 0)
                log_struct(LOG_INFO, "TONARI_SLICE=%s", t->name, "TONARI_REASON=slice-removed",
                           "TONARI_DEBT_USEC=%" PRIu64, t->account.debt_usec,
                           LOG_MESSAGE("Slice '%s' %s while it owed %s of CPU time; the debt is dropped.", t->name,
                                       why, fmt_ms(a, t->account.debt_usec)));
        borrow_target_free(t);
        borrow_manager_save_now(m);
}

/*
 * How many of the periods after the next one keep the limit just written without a tick: as many
 * (up to BORROW_HOLD_PERIODS_MAX) as the debt still owed after the next period (what helpers
 * spent, and what the slice overran while repaying it) pays for in full at that limit. A held
 * period never repays more than is owed (charges that arrive meanwhile only add to the debt),
 * nor more slowly than borrow_account_period() would have repaid the debt owed at the tick (that
 * debt only shrinks, and its installment with it), and costs no wake-up, no sample of the
 * slice's proxies, no read of its usage and no cpu.max write: a slice in steady debt is handled
 * every few periods instead of every period. What is charged meanwhile is seen at the next tick,
 * at most BORROW_HOLD_PERIODS_MAX periods later.
 */
static unsigned target_hold(BorrowTarget *t, usec_t quota) {
        const BorrowAccount *a = &t->account;
        usec_t n;

        if (t->limit_usec == USEC_INFINITY || t->limit_usec >= quota || !borrow_target_aligned(t, t->period_usec))
                return 0;
        n = a->debt_usec / (quota - t->limit_usec);
        return (unsigned) MIN(n, (usec_t) BORROW_HOLD_PERIODS_MAX);
}

/* How many held periods have passed since the last tick (a tick may come early: the probe
 * re-aligns ticks when it finds the period boundaries). */
static unsigned target_held_done(BorrowTarget *t) {
        usec_t n = now(CLOCK_MONOTONIC), period = t->period_usec, passed;

        if (t->held_periods == 0 || t->limit_usec == USEC_INFINITY || period == 0 || period == USEC_INFINITY ||
            n < t->tick_at)
                return 0;
        passed = (n - t->tick_at + period / 2) / period;
        return passed > 1 ? (unsigned) MIN(passed - 1, (usec_t) t->held_periods) : 0;
}

static int on_target_tick(sd_event_source *es, uint64_t usec, void *userdata) {
        BorrowTarget *t = userdata;
        BorrowManager *m = t->manager;
        usec_t start = now(CLOCK_MONOTONIC), quota, period, limit, want, debt;
        bool was_limited = t->limit_usec != USEC_INFINITY;
        unsigned held;
        Slice *s;
        int r;

        (void) es;
        (void) usec;

        s = borrow_target_slice(t);
        if (!s) {
                borrow_target_drop(t, "was removed");
                return 0;
        }
        if (s->state == SLICE_CREATING)
                return borrow_target_arm(t, slice_cpu_quota_period(s));

        /* The proxies working for this slice are read now, so that the period about to begin
         * repays their work up to its start and not only up to their last regular sample. */
        for (BorrowProxy *p = m->proxies, *next; p; p = next) {
                next = p->next;
                if (streq(p->target, t->name))
                        borrow_proxy_sample(p);
        }
        /* The limit written at the last tick was in force on the same cgroup since, for the
         * period that tick began and the ones it held the limit for. */
        held = target_held_done(t);
        if (t->period_usec != 0 && t->period_usec != USEC_INFINITY)
                target_overrun(t, t->period_usec, held + 1);
        for (unsigned i = 0; i < held; i++)
                (void) borrow_account_period_at(&t->account, t->quota_usec, t->limit_usec);
        t->held_periods = 0;
        t->tick_at = start;
        debt = t->account.debt_usec;

        borrow_target_quota(t, s, &quota, &period);
        /* A limit in force that is close enough to the next one stays (one cpu.max write fewer). */
        limit = borrow_account_period_keep(&t->account, &m->policy, quota,
                                           period == t->period_usec ? t->limit_usec : USEC_INFINITY);
        want = limit < quota ? limit : USEC_INFINITY;
        t->quota_usec = quota;
        if (want != USEC_INFINITY || t->account.debt_usec > 0 || was_limited)
                borrow_manager_mark_dirty(m);

        if (want != t->limit_usec || period != t->period_usec) {
                r = borrow_target_write(t, s, want, period);
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
                borrow_target_probe_start(t, period);

        if (t->limit_usec == USEC_INFINITY && t->account.debt_usec == 0) {
                if (was_limited)
                        target_log_end(t, s->settings.cpu_quota_per_sec_usec == USEC_INFINITY ? USEC_INFINITY : quota,
                                       period);
                t->limit_cgroup = mfree(t->limit_cgroup);
                borrow_target_probe_stop(t);
                (void) sd_event_source_set_enabled(t->timer, SD_EVENT_OFF);
                borrow_proxies_untick(m, t);
                /* Repaid (or forgiven): the end of the episode is written at once, so that a crash
                 * cannot bring the last second's debt back. */
                if ((was_limited || debt > 0) && borrow_state_file_save_target(m, t) < 0)
                        borrow_manager_save_now(m);
        } else {
                t->held_periods = target_hold(t, quota);
                if (borrow_timer_arm(m, &t->timer, borrow_target_next_tick(t, period) + t->held_periods * period,
                                     on_target_tick, t, "borrow-period") < 0) {
                        t->held_periods = 0;
                        borrow_proxies_untick(m, t); /* no tick to sample them */
                }
        }

        m->stats.n_ticks++;
        m->stats.work_usec += now(CLOCK_MONOTONIC) - start;
        return 0;
}

/*
 * Owes again what the slice ran beyond the shortened limit since the last tick. Only between two
 * ticks on the kernel's period boundaries of limit_cgroup, `periods` periods apart (one, or more
 * when the limit was held): such an interval is whole kernel periods at one limit, in which the
 * slice cannot legitimately run more than the limit each, whereas an interval across a boundary
 * may hold the ends of two periods and two quotas.
 */
static void target_overrun(BorrowTarget *t, usec_t period, unsigned periods) {
        BorrowManager *m = t->manager;
        usec_t n = now(CLOCK_MONOTONIC), usage, last = t->usage_usec, last_at = t->usage_at, used, allowed;
        char a[FORMAT_TIMESPAN_MAX];

        t->usage_usec = USEC_INFINITY;
        if (t->limit_usec == USEC_INFINITY || !t->limit_cgroup || !m->slices || !borrow_target_aligned(t, period) ||
            cgroup_read_cpu_usage(slice_manager_cgroup_root(m->slices), t->limit_cgroup, &usage) < 0)
                return;
        t->usage_usec = usage;
        t->usage_at = n;
        if (last == USEC_INFINITY || usage < last || n - last_at < period / 2 ||
            n - last_at > period * periods + period / 2)
                return;

        used = usage - last;
        allowed = t->limit_usec * (n - last_at) / period;
        if (used <= allowed)
                return;
        (void) borrow_account_overrun(&t->account, &m->policy, used - allowed);
        log_debug("Slice '%s' ran %s beyond its shortened quota in the last period; owed again.", t->name,
                  fmt_ms(a, used - allowed));
}

/* Schedules the next tick (see borrow_target_next_tick()). */
int borrow_target_arm(BorrowTarget *t, usec_t period) {
        return borrow_timer_arm(t->manager, &t->timer, borrow_target_next_tick(t, period), on_target_tick, t,
                                "borrow-period");
}

/* The period of the slice a target belongs to, for a target whose tick is not running. */
static usec_t target_period(BorrowTarget *t) {
        Slice *s = borrow_target_slice(t);
        return s ? slice_cpu_quota_period(s) : CGROUP_CPU_QUOTA_PERIOD_DEFAULT_USEC;
}

/* Whether the target's period tick is running (it repays a debt or lifts a limit). */
bool borrow_target_ticking(const BorrowTarget *t) {
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
int borrow_target_charge(BorrowManager *m, Slice *s, usec_t usec, bool durable) {
        BorrowTarget *t = borrow_manager_find_target(m, s->name);
        BorrowAccount before;
        bool created = false;
        int r;

        if (t && t->slice_id != 0 && t->slice_id != s->id) {
                borrow_target_drop(t, "was removed and created again");
                t = NULL;
        }
        if (!t) {
                r = borrow_target_new(m, s, &t);
                if (r < 0)
                        return r;
                created = true;
        }
        r = borrow_target_prepare(t, s);
        if (r < 0)
                /* Undecided (the cgroup could not be read): the ledger takes this charge, and its
                 * debt keeps the target on the userspace path until repaid. */
                log_debug_errno(r, "Slice '%s': cannot tell whether the kernel enforces borrowing, charging in "
                                "userspace: %m", s->name);
        if (t->enforcement == BORROW_ENFORCEMENT_KERNEL) {
                /* The debt is the kernel's now: it survives a crash of tonarid without the state
                 * file, which keeps only the counters (within BORROW_SAVE_USEC). */
                if (usec > BORROW_CHARGE_MAX_USEC)
                        return -ERANGE;
                r = borrow_target_kernel_charge(t, usec);
                if (r == -ENOENT) {
                        /* The cgroup charged is gone (the slice's scope ended; the kernel dropped its
                         * helpers' charges with it): decide again, and move the helpers along. */
                        t->kernel_cgroup = mfree(t->kernel_cgroup);
                        t->enforcement = BORROW_ENFORCEMENT_NONE;
                        if (borrow_target_prepare(t, s) >= 0 && t->enforcement == BORROW_ENFORCEMENT_KERNEL)
                                r = borrow_target_kernel_charge(t, usec);
                        else
                                t->enforcement = BORROW_ENFORCEMENT_USERSPACE;
                        borrow_proxies_kernel_moved(m, t);
                }
                if (r >= 0) {
                        borrow_manager_mark_dirty(m);
                        return 0;
                }
                if (r != -ENOENT)
                        return r;
                /* Nowhere in the kernel to put it now: the ledger keeps it, as on a stock kernel. */
                t->enforcement = BORROW_ENFORCEMENT_USERSPACE;
                borrow_proxies_kernel_moved(m, t);
        }
        before = t->account;
        r = borrow_account_charge(&t->account, &m->policy, usec, NULL);
        if (r >= 0 && durable)
                r = borrow_state_file_save_target(m, t);
        if (r < 0) {
                if (created)
                        borrow_target_free(t);
                else
                        t->account = before;
                return r;
        }
        if (!durable)
                borrow_manager_mark_dirty(m);
        if (!borrow_target_ticking(t))
                return borrow_target_arm(t, target_period(t));
        return 0;
}

int borrow_manager_charge(BorrowManager *m, Slice *s, usec_t usec) {
        if (usec == 0)
                return -EINVAL;
        if (usec > BORROW_CHARGE_MAX_USEC)
                return -ERANGE;
        return borrow_target_charge(m, s, usec, true);
}
