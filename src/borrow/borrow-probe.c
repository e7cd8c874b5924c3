/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where the kernel's CFS periods of a limited cgroup begin, found by watching cpu.stat nr_periods,
 * so that a target's ticks land just before a period boundary (see BorrowTarget.boundary_usec).
 */
#include <errno.h>

#include "alloc-util.h"
#include "borrow-internal.h"
#include "log.h"
#include "string-util.h"

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

static int on_probe(sd_event_source *es, uint64_t usec, void *userdata);

/*
 * Whether boundary_usec tells where the periods of the cgroup written to begin. Between two
 * episodes of debt limit_cgroup is unset and the boundary found before is assumed to hold; the
 * first write shows whether the cgroup is the same. A boundary is trusted for a minute: a scope
 * made anew under the same name starts its periods elsewhere.
 */
bool borrow_target_aligned(const BorrowTarget *t, usec_t period) {
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
usec_t borrow_target_next_tick(const BorrowTarget *t, usec_t period) {
        usec_t n = now(CLOCK_MONOTONIC), lead = period / BORROW_PROBE_FINE, earliest, k;

        if (!borrow_target_aligned(t, period))
                return n + period;
        earliest = n + period / 2 + lead;
        k = earliest <= t->boundary_usec ? 0 : (earliest - t->boundary_usec + period - 1) / period;
        return t->boundary_usec + k * period - lead;
}

void borrow_target_probe_stop(BorrowTarget *t) {
        t->probe_stage = BORROW_PROBE_IDLE;
        (void) sd_event_source_set_enabled(t->probe, SD_EVENT_OFF);
}

static int target_probe_read(BorrowTarget *t, uint64_t *ret) {
        Slice *s = borrow_target_slice(t);

        if (!s || !t->limit_cgroup)
                return -ENOENT;
        t->manager->stats.n_probe_reads++;
        return cgroup_read_cpu_periods(slice_manager_cgroup_root(t->manager->slices), t->limit_cgroup, ret);
}

static int target_probe_schedule(BorrowTarget *t, usec_t when) {
        return borrow_timer_arm(t->manager, &t->probe, when, on_probe, t, "borrow-probe");
}

/* Starts looking for the period boundaries of the cgroup a limit was just written to. */
void borrow_target_probe_start(BorrowTarget *t, usec_t period) {
        usec_t n = now(CLOCK_MONOTONIC);
        uint64_t periods;

        if (t->probe_stage != BORROW_PROBE_IDLE || borrow_target_aligned(t, period) || n < t->probe_retry)
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
                borrow_target_probe_stop(t);
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
                        borrow_target_probe_stop(t);
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
                        borrow_target_probe_stop(t);
                        goto finish;
                }
                t->boundary_usec = at;
                t->boundary_period_usec = period;
                borrow_target_probe_stop(t);
                log_debug("Slice '%s': the CFS periods of /%s begin %s into each %s interval of the monotonic clock.",
                          t->name, t->limit_cgroup, fmt_ms(a, at % period), fmt_ms(b, period));
                if (t->timer && t->limit_usec != USEC_INFINITY)
                        (void) borrow_target_arm(t, period);
                goto finish;
        }

        t->probe_periods = periods;
        t->probe_last = at;
        if (target_probe_schedule(t, next) < 0)
                borrow_target_probe_stop(t);
finish:
        m->stats.work_usec += now(CLOCK_MONOTONIC) - start;
        return 0;
}
