/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A helper that works for a tenant in bursts, as a log copier does for a service that logs tens of
 * times a second, driven through libtonari's batching (charge-batch.c, the pure half of
 * tonari_charge_switch()) into tonarid's ledger, period by period as the enforcer runs it: the
 * fraction of the helper's CPU time that gets charged, while it works and once it has flushed.
 */
#include <inttypes.h>

#include "borrow-ledger.h"
#include "charge-batch.h"
#include "tests.h"

#define MS USEC_PER_MSEC
#define PERIOD_USEC (100 * MS)

typedef struct Flood {
        usec_t every_usec; /* a burst starts this often */
        usec_t burst_usec; /* CPU time the helper spends in each burst */
        usec_t wake_usec;  /* ... in wake-ups this far apart (each one a switch) */
} Flood;

static void drive(const Flood *f, usec_t run_usec) {
        BorrowPolicy policy = BORROW_POLICY_DEFAULT;
        BorrowAccount a = {};
        ChargeBatch b = {};
        uint64_t spent_nsec = 0, measured_nsec = 0;
        usec_t next_period = PERIOD_USEC;

        for (usec_t t = 0; t < run_usec; t += f->every_usec) {
                /* A burst: one wake-up per wake_usec, each spending its share of the burst, ended
                 * by a switch that adds it and reports when the target's interval has passed. */
                for (usec_t w = 0; w < f->burst_usec; w += f->wake_usec) {
                        usec_t now_usec = t + w + f->wake_usec, cost = MIN(f->wake_usec, f->burst_usec - w);
                        ChargeEntry *e;

                        spent_nsec += cost * NSEC_PER_USEC;
                        measured_nsec += cost * NSEC_PER_USEC;
                        ck_assert_int_eq(charge_batch_add(&b, "web", cost * NSEC_PER_USEC, now_usec, &e), 0);
                        if (charge_entry_due(e, now_usec)) {
                                usec_t usec = charge_entry_report_usec(e);

                                ck_assert_int_eq(borrow_account_charge(&a, &policy, usec, NULL), 0);
                                charge_entry_reported(e, usec, true, now_usec);
                        }
                        /* The enforcer's period ticks in between: a 50 % quota. */
                        for (; next_period <= now_usec; next_period += PERIOD_USEC)
                                (void) borrow_account_period(&a, &policy, PERIOD_USEC / 2);
                }
        }

        /* While the helper works, at most about one interval of its work is pending. */
        ck_assert_msg(a.borrowed_usec * 100 >= spent_nsec / NSEC_PER_USEC * 95,
                      "every %" PRIu64 " µs a burst of %" PRIu64 " µs: %" PRIu64 " of %" PRIu64 " µs charged",
                      f->every_usec, f->burst_usec, a.borrowed_usec, spent_nsec / NSEC_PER_USEC);

        /* The helper exits (tonari_charge_flush()): everything but less than a microsecond. */
        ChargeEntry *e = charge_batch_find(&b, "web");
        ck_assert_ptr_nonnull(e);
        if (charge_entry_report_usec(e) > 0) {
                usec_t usec = charge_entry_report_usec(e);
                ck_assert_int_eq(borrow_account_charge(&a, &policy, usec, NULL), 0);
                charge_entry_reported(e, usec, true, run_usec);
        }
        ck_assert_uint_eq(a.borrowed_usec, measured_nsec / NSEC_PER_USEC);
        ck_assert_uint_eq(a.borrowed_usec + a.overrun_usec, a.debt_usec + a.repaid_usec + a.forgiven_usec);
        /* Below the cap nothing is forgiven for the cap; the floor is, and is counted as such. */
        ck_assert_uint_eq(a.forgiven_cap_usec, 0);
        ck_assert_uint_eq(a.forgiven_usec, a.forgiven_floor_usec + a.forgiven_overrun_usec);
        charge_batch_done(&b);
}

START_TEST(test_bursts) {
        static const Flood floods[] = {
                { .every_usec = 50 * MS, .burst_usec = 3 * MS, .wake_usec = 100 },     /* 20/s, 3 ms */
                { .every_usec = 20 * MS, .burst_usec = 1 * MS, .wake_usec = 50 },      /* 50/s, 1 ms */
                { .every_usec = 100 * MS, .burst_usec = 10 * MS, .wake_usec = 200 },   /* 10/s, 10 ms */
                { .every_usec = 300 * MS, .burst_usec = 5 * MS, .wake_usec = 5 * MS }, /* rarer than the interval */
                { .every_usec = 1 * MS, .burst_usec = 30, .wake_usec = 30 },           /* slow and steady */
                { .every_usec = 100, .burst_usec = 60, .wake_usec = 20 },              /* a yes flood */
        };

        FOREACH_ELEMENT(f, floods)
                drive(f, 10 * USEC_PER_SEC);
}
END_TEST

TEST_SUITE("borrow-bursts", test_bursts)
