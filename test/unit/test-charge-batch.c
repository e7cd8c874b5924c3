/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "charge-batch.h"
#include "tests.h"

#define MS USEC_PER_MSEC
/* An arbitrary CLOCK_MONOTONIC reading to start from. */
#define T0 (1000 * USEC_PER_SEC)

static ChargeEntry *add(ChargeBatch *b, const char *target, uint64_t nsec, usec_t now_usec) {
        ChargeEntry *e = NULL;

        ck_assert_int_eq(charge_batch_add(b, target, nsec, now_usec, &e), 0);
        ck_assert_ptr_nonnull(e);
        ck_assert_str_eq(e->target, target);
        return e;
}

/* What charge.c does when a target is due: report everything, successfully or not. */
static usec_t report(ChargeEntry *e, bool success, usec_t now_usec) {
        usec_t usec = charge_entry_report_usec(e);

        charge_entry_reported(e, usec, success, now_usec);
        return usec;
}

START_TEST(test_first_report_is_due_at_once) {
        ChargeBatch b = {};
        ChargeEntry *e;

        e = add(&b, "web", 2500, T0);
        ck_assert(charge_entry_due(e, T0));
        ck_assert_uint_eq(charge_entry_report_usec(e), 2);
        charge_batch_done(&b);
}
END_TEST

START_TEST(test_interval_gating) {
        ChargeBatch b = {};
        ChargeEntry *e;

        e = add(&b, "web", 10 * MS * NSEC_PER_USEC, T0);
        ck_assert_uint_eq(report(e, true, T0), 10 * MS);
        ck_assert_uint_eq(e->pending_nsec, 0);

        /* Time measured within the interval waits. */
        e = add(&b, "web", 3 * MS * NSEC_PER_USEC, T0 + 1);
        ck_assert(!charge_entry_due(e, T0 + 1));
        ck_assert(!charge_entry_due(e, T0 + CHARGE_INTERVAL_USEC / 2));
        ck_assert(!charge_entry_due(e, T0 + CHARGE_INTERVAL_USEC - 1));
        e = add(&b, "web", 4 * MS * NSEC_PER_USEC, T0 + CHARGE_INTERVAL_USEC - 1);
        ck_assert(!charge_entry_due(e, T0 + CHARGE_INTERVAL_USEC - 1));

        /* From the interval on, everything pending goes in one report. */
        ck_assert(charge_entry_due(e, T0 + CHARGE_INTERVAL_USEC));
        ck_assert_uint_eq(report(e, true, T0 + CHARGE_INTERVAL_USEC), 7 * MS);
        ck_assert(!charge_entry_due(e, T0 + CHARGE_INTERVAL_USEC));

        /* The intervals lie on a grid that started with the first report: a late report (here
         * in the fourth interval) does not push the next one later. */
        e = add(&b, "web", 1 * MS * NSEC_PER_USEC, T0 + 3 * CHARGE_INTERVAL_USEC + CHARGE_INTERVAL_USEC / 2);
        ck_assert(charge_entry_due(e, T0 + 3 * CHARGE_INTERVAL_USEC + CHARGE_INTERVAL_USEC / 2));
        ck_assert_uint_eq(report(e, true, T0 + 3 * CHARGE_INTERVAL_USEC + CHARGE_INTERVAL_USEC / 2), 1 * MS);
        e = add(&b, "web", 1 * MS * NSEC_PER_USEC, T0 + 4 * CHARGE_INTERVAL_USEC - 1);
        ck_assert(!charge_entry_due(e, T0 + 4 * CHARGE_INTERVAL_USEC - 1));
        ck_assert(charge_entry_due(e, T0 + 4 * CHARGE_INTERVAL_USEC));
        ck_assert_uint_eq(report(e, true, T0 + 4 * CHARGE_INTERVAL_USEC), 1 * MS);
        /* ... and at most one report per interval of the grid. */
        e = add(&b, "web", 1 * MS * NSEC_PER_USEC, T0 + 5 * CHARGE_INTERVAL_USEC - 1);
        ck_assert(!charge_entry_due(e, T0 + 5 * CHARGE_INTERVAL_USEC - 1));
        ck_assert(charge_entry_due(e, T0 + 5 * CHARGE_INTERVAL_USEC));

        /* A clock reading before the last report never makes a target due. */
        ck_assert(!charge_entry_due(e, T0));

        ck_assert_uint_eq(b.n_entries, 1);
        charge_batch_done(&b);
}
END_TEST

START_TEST(test_nothing_to_send) {
        ChargeBatch b = {};
        ChargeEntry *e;

        /* Less than a microsecond is never sent alone: ChargeCPU takes whole microseconds > 0. */
        e = add(&b, "web", 999, T0);
        ck_assert_uint_eq(charge_entry_report_usec(e), 0);
        ck_assert(!charge_entry_due(e, T0));
        ck_assert(!charge_entry_due(e, T0 + USEC_PER_HOUR));
        e = add(&b, "web", 0, T0);
        ck_assert(!charge_entry_due(e, T0));
        e = add(&b, "web", 1, T0);
        ck_assert(charge_entry_due(e, T0));
        ck_assert_uint_eq(report(e, true, T0), 1);
        ck_assert_uint_eq(e->pending_nsec, 0);
        charge_batch_done(&b);
}
END_TEST

START_TEST(test_sub_usec_carry) {
        ChargeBatch b = {};
        ChargeEntry *e = NULL;
        uint64_t added_nsec = 0, sent_usec = 0;
        usec_t t = T0;

        /* Thousands of short measurements, each a fraction of a microsecond over a whole one, as
         * a log copier's small reads and writes give: rounding each down would lose a third. */
        for (unsigned i = 0; i < 10000; i++) {
                uint64_t nsec = 1000 + 333 + (i % 7);

                e = add(&b, "web", nsec, t);
                added_nsec += nsec;
                if (charge_entry_due(e, t))
                        sent_usec += report(e, true, t);
                t += 37; /* µs between measurements */
        }
        ck_assert_uint_lt(e->pending_nsec, CHARGE_INTERVAL_USEC * NSEC_PER_USEC);
        ck_assert_uint_eq(sent_usec * NSEC_PER_USEC + e->pending_nsec, added_nsec);

        /* A final flush sends all whole microseconds; less than one stays. */
        sent_usec += report(e, true, t);
        ck_assert_uint_lt(e->pending_nsec, NSEC_PER_USEC);
        ck_assert_uint_eq(sent_usec, added_nsec / NSEC_PER_USEC);
        ck_assert_uint_eq(e->pending_nsec, added_nsec % NSEC_PER_USEC);

        /* The remainder counts towards the next report. */
        e = add(&b, "web", NSEC_PER_USEC - e->pending_nsec, t + CHARGE_INTERVAL_USEC);
        ck_assert_uint_eq(report(e, true, t + CHARGE_INTERVAL_USEC), 1);
        ck_assert_uint_eq(e->pending_nsec, 0);
        charge_batch_done(&b);
}
END_TEST

START_TEST(test_failed_report_keeps_pending) {
        ChargeBatch b = {};
        ChargeEntry *e;

        e = add(&b, "web", 5 * MS * NSEC_PER_USEC + 700, T0);
        ck_assert_uint_eq(report(e, false, T0), 5 * MS);
        ck_assert_uint_eq(e->pending_nsec, 5 * MS * NSEC_PER_USEC + 700);

        /* Retried once per interval, not at every measurement. */
        e = add(&b, "web", 1 * MS * NSEC_PER_USEC, T0 + 10 * MS);
        ck_assert(!charge_entry_due(e, T0 + 10 * MS));
        ck_assert(charge_entry_due(e, T0 + CHARGE_INTERVAL_USEC));
        ck_assert_uint_eq(report(e, true, T0 + CHARGE_INTERVAL_USEC), 6 * MS);
        ck_assert_uint_eq(e->pending_nsec, 700);
        charge_batch_done(&b);
}
END_TEST

START_TEST(test_cap) {
        ChargeBatch b = {};
        ChargeEntry *e;
        usec_t t = T0;

        /* tonarid is gone: every report fails, time keeps coming, what is kept stops at an hour. */
        e = add(&b, "web", 40 * 60 * USEC_PER_SEC * NSEC_PER_USEC, t);
        ck_assert_uint_eq(report(e, false, t), 40 * 60 * USEC_PER_SEC);
        e = add(&b, "web", 40 * 60 * USEC_PER_SEC * NSEC_PER_USEC, t += CHARGE_INTERVAL_USEC);
        ck_assert_uint_eq(e->pending_nsec, CHARGE_PENDING_MAX_NSEC);
        ck_assert_uint_eq(charge_entry_report_usec(e), CHARGE_USEC_MAX);
        ck_assert_uint_eq(report(e, false, t), USEC_PER_HOUR);

        /* No overflow, whatever is added. */
        e = add(&b, "web", UINT64_MAX, t);
        ck_assert_uint_eq(e->pending_nsec, CHARGE_PENDING_MAX_NSEC);
        e = add(&b, "web", UINT64_MAX - 1, t);
        ck_assert_uint_eq(e->pending_nsec, CHARGE_PENDING_MAX_NSEC);

        /* One report never carries more than tonarid accepts in one ChargeCPU. */
        ck_assert_uint_eq(report(e, true, t + CHARGE_INTERVAL_USEC), CHARGE_USEC_MAX);
        ck_assert_uint_eq(e->pending_nsec, 0);

        /* A fresh target is capped too. */
        e = add(&b, "db", UINT64_MAX, t);
        ck_assert_uint_eq(e->pending_nsec, CHARGE_PENDING_MAX_NSEC);
        charge_batch_done(&b);
}
END_TEST

START_TEST(test_reported_more_than_pending) {
        ChargeBatch b = {};
        ChargeEntry *e;

        /* A caller's mistake must not wrap the pending time around. */
        e = add(&b, "web", 2345, T0);
        charge_entry_reported(e, 7, true, T0);
        ck_assert_uint_eq(e->pending_nsec, 345);
        charge_entry_reported(e, UINT64_MAX, true, T0);
        ck_assert_uint_eq(e->pending_nsec, 345);
        charge_batch_done(&b);
}
END_TEST

START_TEST(test_multiple_targets) {
        ChargeBatch b = {};
        ChargeEntry *web, *db;

        web = add(&b, "web", 3 * MS * NSEC_PER_USEC, T0);
        ck_assert_uint_eq(report(web, true, T0), 3 * MS);

        /* Another target has its own interval and its own pending time. */
        db = add(&b, "db", 2 * MS * NSEC_PER_USEC, T0 + 10 * MS);
        ck_assert(charge_entry_due(db, T0 + 10 * MS));
        ck_assert_uint_eq(report(db, true, T0 + 10 * MS), 2 * MS);

        web = add(&b, "web", 1 * MS * NSEC_PER_USEC, T0 + 20 * MS);
        ck_assert(!charge_entry_due(web, T0 + 20 * MS));
        db = add(&b, "db", 5 * MS * NSEC_PER_USEC, T0 + 20 * MS);
        ck_assert(!charge_entry_due(db, T0 + 20 * MS));

        ck_assert(charge_entry_due(charge_batch_find(&b, "web"), T0 + CHARGE_INTERVAL_USEC));
        ck_assert(!charge_entry_due(charge_batch_find(&b, "db"), T0 + CHARGE_INTERVAL_USEC));
        ck_assert(charge_entry_due(charge_batch_find(&b, "db"), T0 + 10 * MS + CHARGE_INTERVAL_USEC));
        ck_assert_uint_eq(charge_entry_report_usec(charge_batch_find(&b, "web")), 1 * MS);
        ck_assert_uint_eq(charge_entry_report_usec(charge_batch_find(&b, "db")), 5 * MS);

        /* Names are compared exactly. */
        ck_assert_ptr_null(charge_batch_find(&b, "WEB"));
        ck_assert_ptr_null(charge_batch_find(&b, "we"));
        ck_assert_ptr_null(charge_batch_find(&b, "web2"));
        ck_assert_uint_eq(b.n_entries, 2);
        charge_batch_done(&b);
        ck_assert_uint_eq(b.n_entries, 0);
        ck_assert_ptr_null(b.entries);
        charge_batch_done(&b);
}
END_TEST

START_TEST(test_target_limit_and_reuse) {
        ChargeBatch b = {};
        ChargeEntry *e;
        char name[16];

        for (unsigned i = 0; i < CHARGE_TARGETS_MAX; i++) {
                snprintf(name, sizeof(name), "t%u", i);
                (void) add(&b, name, 1500, T0);
        }
        ck_assert_uint_eq(b.n_entries, CHARGE_TARGETS_MAX);
        ck_assert_int_eq(charge_batch_add(&b, "one-too-many", 1, T0, NULL), -E2BIG);
        /* Known targets still take time. */
        ck_assert_int_eq(charge_batch_add(&b, "t7", 1, T0, NULL), 0);

        /* Sent, but within their interval: still in use. */
        for (size_t i = 0; i < b.n_entries; i++)
                (void) report(&b.entries[i], true, T0);
        ck_assert_int_eq(charge_batch_add(&b, "one-too-many", 1, T0 + CHARGE_INTERVAL_USEC - 1, NULL),
                         -E2BIG);

        /* Once the interval has passed, an entry with less than a microsecond is taken over. */
        ck_assert_int_eq(charge_batch_add(&b, "one-too-many", 1000, T0 + CHARGE_INTERVAL_USEC, &e), 0);
        ck_assert_str_eq(e->target, "one-too-many");
        ck_assert_uint_eq(e->pending_nsec, 1000);
        ck_assert(charge_entry_due(e, T0 + CHARGE_INTERVAL_USEC));
        ck_assert_uint_eq(b.n_entries, CHARGE_TARGETS_MAX);
        ck_assert_ptr_null(charge_batch_find(&b, "t0"));
        ck_assert_ptr_nonnull(charge_batch_find(&b, "t1"));

        /* Entries are taken over without waiting for the table to fill, but only when idle. */
        ChargeBatch d = {};
        e = add(&d, "a", 500, T0);
        (void) add(&d, "b", 500, T0 + 50 * MS);
        ck_assert_uint_eq(d.n_entries, 2);
        ck_assert_uint_eq(charge_batch_find(&d, "a")->pending_nsec, 500);
        e = add(&d, "c", 1, T0 + CHARGE_INTERVAL_USEC);
        ck_assert_uint_eq(d.n_entries, 2);
        ck_assert_ptr_null(charge_batch_find(&d, "a"));
        ck_assert_uint_eq(e->pending_nsec, 1);
        ck_assert_uint_eq(charge_batch_find(&d, "b")->pending_nsec, 500);
        charge_batch_done(&d);

        /* An entry with time still to send is never taken over, however old. */
        ChargeBatch c = {};
        for (unsigned i = 0; i < CHARGE_TARGETS_MAX; i++) {
                snprintf(name, sizeof(name), "t%u", i);
                e = add(&c, name, 1500, T0);
                charge_entry_reported(e, charge_entry_report_usec(e), false, T0);
        }
        ck_assert_int_eq(charge_batch_add(&c, "one-too-many", 1, T0 + USEC_PER_HOUR, NULL), -E2BIG);

        charge_batch_done(&b);
        charge_batch_done(&c);
}
END_TEST

START_TEST(test_target_names) {
        static const char *const valid[] = {
                "a", "web", "tenant_1", "a.b", "a:b", "user@host", "x-y", "A9", "a..",
                /* 64 characters, the longest */
                "0123456789012345678901234567890123456789012345678901234567890123",
        };
        static const char *const invalid[] = {
                "", ".", "..", "...", ".hidden", "-x", "--charge", "a/b", "/", "../etc", "a b", " a", "a\t",
                "a\nb", "a\x01", "\x1b[31m", "a\x7f", "caf\xc3\xa9", "a*", "a?", "$HOME", "a;b", "a'b",
                "a\"b", "a\\b", "a%s",
                /* 65 characters */
                "01234567890123456789012345678901234567890123456789012345678901234",
        };
        ChargeBatch b = {};

        FOREACH_ELEMENT(n, valid) {
                ck_assert_msg(charge_target_is_valid(*n), "'%s' should be valid", *n);
                ck_assert_int_eq(charge_batch_add(&b, *n, 1, T0, NULL), 0);
        }
        ck_assert_uint_eq(b.n_entries, ELEMENTSOF(valid));

        FOREACH_ELEMENT(n, invalid) {
                ck_assert_msg(!charge_target_is_valid(*n), "invalid name #%zu accepted",
                              (size_t) (n - invalid));
                ck_assert_int_eq(charge_batch_add(&b, *n, 1, T0, NULL), -EINVAL);
        }
        ck_assert(!charge_target_is_valid(NULL));
        ck_assert_int_eq(charge_batch_add(&b, NULL, 1, T0, NULL), -EINVAL);

        /* Far too long. */
        char *long_name = malloc(1024 * 1024);
        ck_assert_ptr_nonnull(long_name);
        memset(long_name, 'a', 1024 * 1024 - 1);
        long_name[1024 * 1024 - 1] = '\0';
        ck_assert(!charge_target_is_valid(long_name));
        free(long_name);

        /* Nothing was added for any invalid name. */
        ck_assert_uint_eq(b.n_entries, ELEMENTSOF(valid));
        charge_batch_done(&b);
}
END_TEST

TEST_SUITE("charge-batch",
           test_first_report_is_due_at_once,
           test_interval_gating,
           test_nothing_to_send,
           test_sub_usec_carry,
           test_failed_report_keeps_pending,
           test_cap,
           test_reported_more_than_pending,
           test_multiple_targets,
           test_target_limit_and_reuse,
           test_target_names)
