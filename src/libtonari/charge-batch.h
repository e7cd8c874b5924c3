/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "path-util.h"
#include "time-util.h"

/*
 * What one thread of a libtonari user has measured but not yet reported, per target slice, and
 * when each target may be reported next. Pure: no I/O, no clocks; the caller passes CLOCK_MONOTONIC
 * readings in and does the sending (charge.c).
 *
 * Amounts are kept in nanoseconds, as the thread CPU clock gives them; reports carry whole
 * microseconds and the rest stays pending, so nothing is lost to rounding however short each
 * measurement is.
 */

/* Microseconds of CLOCK_MONOTONIC. A target is reported at most once per interval: at 500 ms a
 * collector busy for every tenant at once costs tonarid two calls per second per tenant and
 * thread, and a tenant's quota is shortened within about half a second of the work, no later
 * than tonarid itself takes in new charges while it holds a shortened quota (up to ten CFS
 * periods of 100 ms). At 100 ms the calls were most of tonarid's CPU time in the log flood of
 * bench/borrow-logflood with N = 5 (docs/BENCHMARKS.md, issue 16).
 *
 * The intervals lie on a fixed grid per target that starts with its first report: one report per
 * interval of the grid, made by the first charge that finds the current interval without one.
 * Counting the interval from each report instead lets a thread whose work comes in bursts, such
 * as a copier whose container's quota lets it run once per period, report a little later in each
 * burst until the due time passes the end of one; that period then gets no report and the next
 * one two periods' worth, and the tenant's quota swings. */
#define CHARGE_INTERVAL_USEC (500 * USEC_PER_MSEC)

/* Microseconds. tonarid's limit for one ChargeCPU, and the most kept pending per target. */
#define CHARGE_USEC_MAX USEC_PER_HOUR
#define CHARGE_PENDING_MAX_NSEC (CHARGE_USEC_MAX * NSEC_PER_USEC)

/* Targets one thread may have at once. The entry of a target that has had nothing added for an
 * interval, nothing left to send and no interval running is reused, so this bounds only targets
 * in use within one interval or with time pending while tonarid is unreachable; real collectors
 * serve a few dozen containers per thread. */
#define CHARGE_TARGETS_MAX 1024U

typedef struct ChargeEntry {
        char target[NAME_MAX_LEN + 1];
        uint64_t pending_nsec;   /* at most CHARGE_PENDING_MAX_NSEC */
        usec_t last_add_usec;    /* CLOCK_MONOTONIC of the last charge_batch_add() */
        usec_t slot_usec;        /* CLOCK_MONOTONIC start of the grid interval of the last report
                                  * attempt, sent or failed */
        bool reported;           /* slot_usec is valid */
} ChargeEntry;

typedef struct ChargeBatch {
        ChargeEntry *entries;
        size_t n_entries;
} ChargeBatch;

/* Frees the entries; the batch is empty and reusable afterwards. */
void charge_batch_done(ChargeBatch *b);

/* A slice name tonarid accepts: name_is_valid() with NAME_MAX_LEN. */
bool charge_target_is_valid(const char *target) _pure_;

/* The entry for target, or NULL. */
ChargeEntry *charge_batch_find(ChargeBatch *b, const char *target);

/*
 * Adds nsec to target's pending time at now_usec, creating its entry if needed; what would take it
 * above CHARGE_PENDING_MAX_NSEC is dropped. A new entry takes the place of one that, at now_usec,
 * has less than a microsecond pending and neither an add nor a report within the interval; that
 * remainder is given up.
 * Returns 0, -EINVAL for an invalid target, -E2BIG when CHARGE_TARGETS_MAX targets are in use,
 * -ENOMEM. *ret_entry (optional) is the target's entry, valid until the next call that adds one.
 */
int charge_batch_add(ChargeBatch *b, const char *target, uint64_t nsec, usec_t now_usec,
                     ChargeEntry **ret_entry);

/* Whole microseconds a report for e would carry now (0: nothing to send). */
usec_t charge_entry_report_usec(const ChargeEntry *e) _pure_;

/* True if e has something to send and no report attempt in the grid interval now_usec is in. */
bool charge_entry_due(const ChargeEntry *e, usec_t now_usec) _pure_;

/*
 * Records a report attempt at now_usec that carried usec (from charge_entry_report_usec()):
 * on success usec leaves the pending time; either way the grid interval now_usec is in has had
 * its report (the first attempt starts the grid at now_usec).
 */
void charge_entry_reported(ChargeEntry *e, usec_t usec, bool success, usec_t now_usec);
