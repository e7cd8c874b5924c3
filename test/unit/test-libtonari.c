/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtonari's public API without tonarid: argument checks, the state of a thread's measurement
 * and what each function returns when no report can be delivered. Every test runs in its own
 * process (check forks), so each starts with a fresh thread state; reports go to a socket that
 * does not exist. Delivered reports are tested against a real tonarid in test-borrow.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include <tonari/charge.h>

#include "tests.h"

static void no_bus(void) {
        ck_assert_int_eq(setenv("TONARI_BUS_ADDRESS", "unix:path=/nonexistent/tonari-unit-bus", 1), 0);
}

static unsigned long long thread_cpu_nsec(void) {
        struct timespec ts;

        ck_assert_int_eq(clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts), 0);
        return (unsigned long long) ts.tv_sec * 1000000000ULL + (unsigned long long) ts.tv_nsec;
}

/* Spends a few milliseconds of this thread's CPU time, so that a measurement has something to
 * report. */
static void burn_cpu(void) {
        unsigned long long start = thread_cpu_nsec();
        volatile unsigned long long x = 0;

        while (thread_cpu_nsec() - start < 3000000ULL)
                x++;
}

START_TEST(test_begin_end) {
        no_bus();
        ck_assert_int_eq(tonari_charge_end(), -EALREADY);
        ck_assert_int_eq(tonari_charge_begin(NULL), -EINVAL);
        ck_assert_int_eq(tonari_charge_begin(""), -EINVAL);
        ck_assert_int_eq(tonari_charge_begin("../web"), -EINVAL);
        ck_assert_int_eq(tonari_charge_begin("-web"), -EINVAL);

        ck_assert_int_eq(tonari_charge_begin("web"), 0);
        /* Measurements do not nest. */
        ck_assert_int_eq(tonari_charge_begin("web"), -EBUSY);
        ck_assert_int_eq(tonari_charge_begin("db"), -EBUSY);
        burn_cpu();
        /* The first report for a target goes out at once; there is no bus. */
        ck_assert_int_eq(tonari_charge_end(), -ENOTCONN);
        /* Closed in any case. */
        ck_assert_int_eq(tonari_charge_end(), -EALREADY);
}
END_TEST

START_TEST(test_switch) {
        no_bus();
        /* An invalid name changes nothing: no measurement is open afterwards. */
        ck_assert_int_eq(tonari_charge_switch(NULL), -EINVAL);
        ck_assert_int_eq(tonari_charge_switch("a/b"), -EINVAL);
        ck_assert_int_eq(tonari_charge_end(), -EALREADY);

        /* Without an open measurement it opens one and sends nothing. */
        ck_assert_int_eq(tonari_charge_switch("web"), 0);
        ck_assert_int_eq(tonari_charge_begin("web"), -EBUSY);

        /* With one open: the previous target's first report fails, the new measurement is open
         * all the same. */
        burn_cpu();
        ck_assert_int_eq(tonari_charge_switch("db"), -ENOTCONN);
        ck_assert_int_eq(tonari_charge_begin("db"), -EBUSY);

        /* An invalid name leaves the open measurement alone. */
        ck_assert_int_eq(tonari_charge_switch("a b"), -EINVAL);
        ck_assert_int_eq(tonari_charge_begin("db"), -EBUSY);

        /* Within the interval after the failed attempt "web" is not tried again. */
        burn_cpu();
        ck_assert_int_eq(tonari_charge_switch("web"), -ENOTCONN); /* "db"'s first report */
        burn_cpu();
        ck_assert_int_eq(tonari_charge_switch("web"), 0);
        ck_assert_int_eq(tonari_charge_end(), 0);
        ck_assert_int_eq(tonari_charge_end(), -EALREADY);

        /* What could not be sent stays pending: flush tries it and fails. */
        ck_assert_int_eq(tonari_charge_flush(), -ENOTCONN);
}
END_TEST

START_TEST(test_add_and_flush) {
        no_bus();
        ck_assert_int_eq(tonari_charge_flush(), 0);
        ck_assert_int_eq(tonari_charge_add(NULL, 1), -EINVAL);
        ck_assert_int_eq(tonari_charge_add("web", TONARI_CHARGE_USEC_MAX + 1), -ERANGE);
        ck_assert_int_eq(tonari_charge_add("web", 0), 0);
        ck_assert_int_eq(tonari_charge_flush(), 0);
        ck_assert_int_eq(tonari_charge_add("web", 1000), -ENOTCONN);
        /* An open measurement is not affected by tonari_charge_add(). */
        ck_assert_int_eq(tonari_charge_begin("db"), 0);
        ck_assert_int_eq(tonari_charge_add("web", 1000), 0);
        ck_assert_int_eq(tonari_charge_begin("db"), -EBUSY);
        ck_assert_int_eq(tonari_charge_end(), -ENOTCONN);
        ck_assert_int_eq(tonari_charge_flush(), -ENOTCONN);
}
END_TEST

static Suite *libtonari_suite(void) {
        Suite *s = suite_create("libtonari");
        TCase *tc = tcase_create("core");

        tcase_add_test(tc, test_begin_end);
        tcase_add_test(tc, test_switch);
        tcase_add_test(tc, test_add_and_flush);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        return run_suite(libtonari_suite());
}
