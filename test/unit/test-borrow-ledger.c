/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "borrow-ledger.h"
#include "tests.h"

#define MS USEC_PER_MSEC

static void assert_balanced(const BorrowAccount *a) {
        ck_assert_uint_eq(a->borrowed_usec + a->overrun_usec, a->debt_usec + a->repaid_usec + a->forgiven_usec);
        /* Every microsecond forgiven has its reason. */
        ck_assert_uint_eq(a->forgiven_usec, a->forgiven_cap_usec + a->forgiven_floor_usec + a->forgiven_overrun_usec);
}

START_TEST(test_policy) {
        BorrowPolicy p = BORROW_POLICY_DEFAULT;

        ck_assert_int_eq(borrow_policy_validate(&p), 0);
        p.floor_usec = 999;
        ck_assert_int_eq(borrow_policy_validate(&p), -EINVAL);
        p = (BorrowPolicy) { .floor_usec = 5 * MS, .max_debt_usec = 4 * MS, .repay_percent = 100 };
        ck_assert_int_eq(borrow_policy_validate(&p), -EINVAL);
        p = BORROW_POLICY_DEFAULT;
        ck_assert_uint_eq(p.repay_percent, 50);
        p.repay_percent = 0;
        ck_assert_int_eq(borrow_policy_validate(&p), -EINVAL);
        p.repay_percent = 101;
        ck_assert_int_eq(borrow_policy_validate(&p), -EINVAL);
        p.repay_percent = 1;
        ck_assert_int_eq(borrow_policy_validate(&p), 0);
        p.repay_percent = 100;
        ck_assert_int_eq(borrow_policy_validate(&p), 0);
}
END_TEST

START_TEST(test_charge_bad_input) {
        BorrowPolicy p = BORROW_POLICY_DEFAULT;
        BorrowAccount a = {};
        usec_t added = 42;

        ck_assert_int_eq(borrow_account_charge(&a, &p, 0, &added), -EINVAL);
        ck_assert_int_eq(borrow_account_charge(&a, &p, BORROW_CHARGE_MAX_USEC + 1, &added), -ERANGE);
        ck_assert_int_eq(borrow_account_charge(&a, &p, UINT64_MAX, &added), -ERANGE);
        ck_assert_uint_eq(added, 42);
        ck_assert_uint_eq(a.borrowed_usec, 0);
        ck_assert_uint_eq(a.debt_usec, 0);
}
END_TEST

START_TEST(test_cap) {
        BorrowPolicy p = { .floor_usec = 1 * MS, .max_debt_usec = 100 * MS, .repay_percent = 100 };
        BorrowAccount a = {};
        usec_t added;

        ck_assert_int_eq(borrow_account_charge(&a, &p, 70 * MS, &added), 0);
        ck_assert_uint_eq(added, 70 * MS);
        ck_assert_int_eq(borrow_account_charge(&a, &p, 50 * MS, &added), 0);
        ck_assert_uint_eq(added, 30 * MS);
        ck_assert_uint_eq(a.debt_usec, 100 * MS);
        ck_assert_uint_eq(a.forgiven_usec, 20 * MS);
        ck_assert_uint_eq(a.forgiven_cap_usec, 20 * MS); /* beyond the cap: that is the reason */
        ck_assert_int_eq(borrow_account_charge(&a, &p, BORROW_CHARGE_MAX_USEC, &added), 0);
        ck_assert_uint_eq(added, 0);
        ck_assert_uint_eq(a.borrowed_usec, 120 * MS + BORROW_CHARGE_MAX_USEC);
        assert_balanced(&a);
}
END_TEST

/* The two branches of §6.3.3, period by period, with the kernel's 1 ms floor. */
START_TEST(test_period_paper) {
        BorrowPolicy p = BORROW_POLICY_DEFAULT;
        BorrowAccount a = {};

        p.repay_percent = BORROW_REPAY_PAPER_PERCENT;

        /* No debt: the configured quota, nothing counted. */
        ck_assert_uint_eq(borrow_account_period(&a, &p, 50 * MS), 50 * MS);
        ck_assert_uint_eq(a.periods_shortened, 0);

        /* debt 120 ms, quota 50 ms: floor, floor, then 50 - 20. */
        ck_assert_int_eq(borrow_account_charge(&a, &p, 120 * MS, NULL), 0);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 50 * MS), 1 * MS);
        ck_assert_uint_eq(a.debt_usec, 70 * MS);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 50 * MS), 1 * MS);
        ck_assert_uint_eq(a.debt_usec, 20 * MS);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 50 * MS), 30 * MS);
        ck_assert_uint_eq(a.debt_usec, 0);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 50 * MS), 50 * MS);
        ck_assert_uint_eq(a.periods_shortened, 3);
        ck_assert_uint_eq(a.repaid_usec, 49 * MS + 49 * MS + 20 * MS);
        ck_assert_uint_eq(a.forgiven_usec, 2 * MS);
        assert_balanced(&a);
}
END_TEST

/* debt just below the quota: quota - debt would be below the floor, so the floor applies and
 * the rest of the debt is forgiven (it is cleared, as in the paper's second branch). */
START_TEST(test_period_floor_clamp) {
        BorrowPolicy p = { .floor_usec = 5 * MS, .max_debt_usec = 10 * USEC_PER_SEC, .repay_percent = 100 };
        BorrowAccount a = {};

        ck_assert_int_eq(borrow_account_charge(&a, &p, 18 * MS, NULL), 0);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 20 * MS), 5 * MS);
        ck_assert_uint_eq(a.debt_usec, 0);
        ck_assert_uint_eq(a.repaid_usec, 15 * MS);
        ck_assert_uint_eq(a.forgiven_usec, 3 * MS);
        assert_balanced(&a);

        /* Exactly the quota: debt >= quota branch. */
        ck_assert_int_eq(borrow_account_charge(&a, &p, 20 * MS, NULL), 0);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 20 * MS), 5 * MS);
        ck_assert_uint_eq(a.debt_usec, 0);
        assert_balanced(&a);
}
END_TEST

/* A quota at or below the floor cannot be shortened: the debt is written off at once. */
START_TEST(test_period_quota_below_floor) {
        BorrowPolicy p = { .floor_usec = 2 * MS, .max_debt_usec = 10 * USEC_PER_SEC, .repay_percent = 50 };
        BorrowAccount a = {};

        ck_assert_int_eq(borrow_account_charge(&a, &p, 7 * MS, NULL), 0);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 2 * MS), 2 * MS);
        ck_assert_uint_eq(a.debt_usec, 0);
        ck_assert_uint_eq(a.forgiven_usec, 7 * MS);
        ck_assert_uint_eq(a.periods_shortened, 0);
        assert_balanced(&a);
}
END_TEST

/* A slice without a quota is measured against its capacity. */
START_TEST(test_capacity) {
        BorrowPolicy p = BORROW_POLICY_DEFAULT;
        BorrowAccount a = {};
        usec_t cap = borrow_capacity_usec(100 * MS, 2);

        p.repay_percent = BORROW_REPAY_PAPER_PERCENT;
        ck_assert_uint_eq(cap, 200 * MS);
        ck_assert_uint_eq(borrow_capacity_usec(100 * MS, 0), 100 * MS);
        ck_assert_uint_eq(borrow_capacity_usec(UINT64_MAX / 2, 4), UINT64_MAX);
        ck_assert_int_eq(borrow_account_charge(&a, &p, 250 * MS, NULL), 0);
        ck_assert_uint_eq(borrow_account_period(&a, &p, cap), 1 * MS);
        ck_assert_uint_eq(borrow_account_period(&a, &p, cap), 150 * MS);
        ck_assert_uint_eq(a.debt_usec, 0);
        assert_balanced(&a);
}
END_TEST

/* Random charges and periods against a straightforward model of the rules, for the paper's
 * repayment and paced ones. */
static const unsigned model_percents[] = { 100, 99, 50, 30, 1 };

/* check's assertions report every passing call to the parent process (a pipe write each): in a
 * loop of a million steps, assert only what failed. */
#define QUIET_CHECK(cond, assertion)                                                                    \
        do {                                                                                           \
                if (!(cond))                                                                           \
                        assertion;                                                                     \
        } while (0)

static void random_against_model(unsigned percent) {
        BorrowPolicy p = { .floor_usec = 1 * MS, .max_debt_usec = 500 * MS, .repay_percent = percent };
        BorrowAccount a = {};
        uint64_t model_debt = 0, total = 0;
        unsigned seed = 20261122 + percent;

        for (unsigned i = 0; i < 200000; i++) {
                if (rand_r(&seed) % 3 == 0) {
                        usec_t q = 1 + (usec_t) (rand_r(&seed) % (200 * MS)), e, expect, due;

                        /* The installment in floating point, rounded up: independent of the
                         * integer arithmetic under test. */
                        due = (usec_t) ceil((double) model_debt * p.repay_percent / 100.0);
                        if (due < p.floor_usec)
                                due = model_debt < p.floor_usec ? model_debt : p.floor_usec;
                        if (model_debt == 0 || q <= p.floor_usec) {
                                expect = q;
                                model_debt = 0;
                        } else if (due >= q) {
                                expect = p.floor_usec;
                                model_debt -= q;
                        } else {
                                expect = q - due < p.floor_usec ? p.floor_usec : q - due;
                                model_debt -= due;
                        }
                        e = borrow_account_period(&a, &p, q);
                        QUIET_CHECK(e == expect, ck_assert_uint_eq(e, expect));
                        QUIET_CHECK(e <= q, ck_assert_uint_le(e, q));
                } else {
                        usec_t c = 1 + (usec_t) (rand_r(&seed) % (80 * MS)), added, want;
                        int r;

                        r = borrow_account_charge(&a, &p, c, &added);
                        QUIET_CHECK(r == 0, ck_assert_int_eq(r, 0));
                        want = model_debt + c > p.max_debt_usec ? p.max_debt_usec - model_debt : c;
                        QUIET_CHECK(added == want, ck_assert_uint_eq(added, want));
                        model_debt += added;
                        total += c;
                }
                QUIET_CHECK(a.debt_usec == model_debt, ck_assert_uint_eq(a.debt_usec, model_debt));
                QUIET_CHECK(a.debt_usec <= p.max_debt_usec, ck_assert_uint_le(a.debt_usec, p.max_debt_usec));
                QUIET_CHECK(a.borrowed_usec == total, ck_assert_uint_eq(a.borrowed_usec, total));
                QUIET_CHECK(a.borrowed_usec + a.overrun_usec == a.debt_usec + a.repaid_usec + a.forgiven_usec &&
                                    a.forgiven_usec == a.forgiven_cap_usec + a.forgiven_floor_usec +
                                                               a.forgiven_overrun_usec,
                            assert_balanced(&a));
        }
        assert_balanced(&a);
        ck_assert_uint_gt(a.periods_shortened, 0);
        ck_assert_uint_gt(a.repaid_usec, 0);
}

START_TEST(test_random_against_model) {
        for (size_t i = 0; i < ELEMENTSOF(model_percents); i++)
                random_against_model(model_percents[i]);
}
END_TEST

/* Paced: half the debt per period, at least the floor's worth, the rest when it is smaller. */
START_TEST(test_period_paced) {
        BorrowPolicy p = BORROW_POLICY_DEFAULT;
        BorrowAccount a = {};
        static const usec_t expect[][2] = {
                /* quota applied, debt left; quota 50 ms, debt 120 ms */
                { 1 * MS, 70 * MS },          /* due 60 >= 50: the floor, debt -= quota */
                { 15 * MS, 35 * MS },         /* due 35 */
                { 32500, 17500 },             /* due 17.5 */
                { 41250, 8750 },              /* due 8.75 */
                { 45625, 4375 },              /* due 4.375 */
                { 47812, 2187 },              /* due 2187.5, rounded up */
                { 48906, 1093 },              /* due 1093.5, rounded up */
                { 49 * MS, 93 },              /* due 546.5 < the floor: the floor's worth */
                { 49907, 0 },                 /* the 93 µs left */
                { 50 * MS, 0 },
        };

        ck_assert_int_eq(borrow_account_charge(&a, &p, 120 * MS, NULL), 0);
        ck_assert_uint_eq(borrow_account_installment(&a, &p), 60 * MS);
        for (size_t i = 0; i < ELEMENTSOF(expect); i++) {
                ck_assert_uint_eq(borrow_account_period(&a, &p, 50 * MS), expect[i][0]);
                ck_assert_uint_eq(a.debt_usec, expect[i][1]);
                assert_balanced(&a);
        }
        ck_assert_uint_eq(a.periods_shortened, 9);
        ck_assert_uint_eq(a.forgiven_usec, 1 * MS);

        /* No overflow in the installment, whatever the debt. */
        a = (BorrowAccount) { .debt_usec = UINT64_MAX - 1 };
        p.floor_usec = 1 * MS;
        ck_assert_uint_eq(borrow_account_installment(&a, &p), UINT64_MAX / 2);
        p.repay_percent = 99;
        ck_assert_uint_le(borrow_account_installment(&a, &p), UINT64_MAX - 1);
        ck_assert_uint_gt(borrow_account_installment(&a, &p), UINT64_MAX / 100 * 98);
        p.repay_percent = 1;
        a.debt_usec = 150 * MS;
        ck_assert_uint_eq(borrow_account_installment(&a, &p), 1500);
        a.debt_usec = 99;
        ck_assert_uint_eq(borrow_account_installment(&a, &p), 99);
}
END_TEST

/*
 * Why repayment is paced by default. A model of the log flood: the target runs whatever quota it
 * is left (it always has work), and its helper spends k times that in the same period, charged
 * to the target at the period's end. With k > 1 the paper's rule (repay everything next period)
 * swings between the floor and the full quota, and in every full period target plus helper take
 * far more than the quota; paced repayment settles where target plus helper use exactly it.
 */
static usec_t worst_overshoot(unsigned percent, double k) {
        BorrowPolicy p = BORROW_POLICY_DEFAULT;
        BorrowAccount a = {};
        const usec_t quota = 25 * MS;
        usec_t worst = 0;

        p.repay_percent = percent;
        for (unsigned period = 0; period < 200; period++) {
                usec_t ran = borrow_account_period(&a, &p, quota), helper = (usec_t) (k * (double) ran);

                if (period >= 100 && ran + helper > quota)
                        worst = MAX(worst, ran + helper - quota);
                ck_assert_int_eq(borrow_account_charge(&a, &p, helper, NULL), 0);
                assert_balanced(&a);
        }
        return worst;
}

START_TEST(test_paced_damps) {
        /* The paper's rule: a full period now and then, when target and helper take 2.1 and 2.5
         * times the quota. */
        ck_assert_uint_gt(worst_overshoot(100, 1.1), 20 * MS);
        ck_assert_uint_gt(worst_overshoot(100, 1.5), 20 * MS);
        /* Paced: within 1 % of the quota once settled, up to a helper 2.5 times as costly. */
        ck_assert_uint_le(worst_overshoot(50, 1.1), 250);
        ck_assert_uint_le(worst_overshoot(50, 1.5), 250);
        ck_assert_uint_le(worst_overshoot(50, 2.5), 250);
        ck_assert_uint_le(worst_overshoot(30, 2.5), 250);
        /* A helper cheaper than the target never needed pacing. */
        ck_assert_uint_le(worst_overshoot(100, 0.5), 250);
}
END_TEST

/* Overrun is owed like a charge, capped like one, counted apart from what was borrowed, repaid
 * after the charges, and forgiven once nothing charged is left. */
START_TEST(test_overrun) {
        BorrowPolicy p = { .floor_usec = 1 * MS, .max_debt_usec = 10 * MS, .repay_percent = 100 };
        BorrowAccount a = {};

        ck_assert_uint_eq(borrow_account_overrun(&a, &p, 0), 0);
        ck_assert_int_eq(borrow_account_charge(&a, &p, 6 * MS, NULL), 0);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 20 * MS), 14 * MS);
        /* The slice ran 15 ms in that period instead of 14, and helpers spent 3 ms more. */
        ck_assert_uint_eq(borrow_account_overrun(&a, &p, 1 * MS), 1 * MS);
        ck_assert_int_eq(borrow_account_charge(&a, &p, 3 * MS, NULL), 0);
        ck_assert_uint_eq(a.debt_usec, 4 * MS);
        ck_assert_uint_eq(a.overrun_debt_usec, 1 * MS);
        ck_assert_uint_eq(a.borrowed_usec, 9 * MS);
        ck_assert_uint_eq(a.overrun_usec, 1 * MS);
        assert_balanced(&a);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 20 * MS), 16 * MS);
        ck_assert_uint_eq(a.overrun_debt_usec, 0);
        ck_assert_uint_eq(a.repaid_usec, 10 * MS);
        assert_balanced(&a);

        /* Overrun alone is forgiven at the next period, not repaid. */
        ck_assert_uint_eq(borrow_account_overrun(&a, &p, 2 * MS), 2 * MS);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 20 * MS), 20 * MS);
        ck_assert_uint_eq(a.debt_usec, 0);
        ck_assert_uint_eq(a.overrun_debt_usec, 0);
        ck_assert_uint_eq(a.forgiven_usec, 2 * MS);
        ck_assert_uint_eq(a.forgiven_overrun_usec, 2 * MS);
        ck_assert_uint_eq(a.periods_shortened, 2);
        assert_balanced(&a);

        /* Charges first: 9 ms charged and 1 ms overrun (the cap forgives 1 ms more), repaid at
         * 30 % a period; the overrun is left when the charges are paid, and forgiven. */
        ck_assert_int_eq(borrow_account_charge(&a, &p, 9 * MS, NULL), 0);
        ck_assert_uint_eq(borrow_account_overrun(&a, &p, 2 * MS), 1 * MS);
        p.repay_percent = 30;
        ck_assert_uint_eq(borrow_account_period(&a, &p, 20 * MS), 17 * MS);
        ck_assert_uint_eq(a.debt_usec, 7 * MS);
        ck_assert_uint_eq(a.overrun_debt_usec, 1 * MS);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 20 * MS), 17900);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 20 * MS), 18530);
        ck_assert_uint_eq(a.debt_usec, 3430);
        ck_assert_uint_eq(a.overrun_debt_usec, 1 * MS);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 20 * MS), 18971);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 20 * MS), 19 * MS);
        ck_assert_uint_eq(a.debt_usec, 1401);
        ck_assert_uint_eq(a.overrun_debt_usec, 1 * MS);
        /* The floor's worth: the 401 µs charged, then 599 µs of the overrun. */
        ck_assert_uint_eq(borrow_account_period(&a, &p, 20 * MS), 19 * MS);
        ck_assert_uint_eq(a.debt_usec, 401);
        ck_assert_uint_eq(a.overrun_debt_usec, 401);
        ck_assert_uint_eq(borrow_account_period(&a, &p, 20 * MS), 20 * MS); /* overrun alone: forgiven */
        ck_assert_uint_eq(a.debt_usec, 0);
        assert_balanced(&a);
}
END_TEST

START_TEST(test_saturation) {
        BorrowPolicy p = BORROW_POLICY_DEFAULT;
        BorrowAccount a = { .borrowed_usec = UINT64_MAX - 5, .forgiven_usec = UINT64_MAX - 5 };

        p.max_debt_usec = 1 * MS;
        ck_assert_int_eq(borrow_account_charge(&a, &p, 10 * MS, NULL), 0);
        ck_assert_uint_eq(a.borrowed_usec, UINT64_MAX);
        ck_assert_uint_eq(a.forgiven_usec, UINT64_MAX);
        ck_assert_uint_eq(a.debt_usec, 1 * MS);
}
END_TEST

/* A limit in force is kept within the tolerance, and a held period repays exactly what it took. */
START_TEST(test_keep_and_hold) {
        BorrowPolicy p = BORROW_POLICY_DEFAULT;
        BorrowAccount a = {};

        /* quota 40 ms: tolerance 10 ms. debt 30 ms: the plan is 40 - 15 = 25 ms. */
        ck_assert_uint_eq(borrow_limit_tolerance(&p, 40 * MS), 10 * MS);
        ck_assert_uint_eq(borrow_limit_tolerance(&p, 2 * MS), 1 * MS);
        ck_assert_int_eq(borrow_account_charge(&a, &p, 30 * MS, NULL), 0);
        /* 20 ms in force is within 5 ms of the plan and covered: kept, 20 ms repaid. */
        ck_assert_uint_eq(borrow_account_period_keep(&a, &p, 40 * MS, 20 * MS), 20 * MS);
        ck_assert_uint_eq(a.debt_usec, 10 * MS);
        ck_assert_uint_eq(a.repaid_usec, 20 * MS);
        assert_balanced(&a);
        /* Now 20 ms would take more than the 10 ms owed: the plan, 40 - 5. */
        ck_assert_uint_eq(borrow_account_period_keep(&a, &p, 40 * MS, 20 * MS), 35 * MS);
        ck_assert_uint_eq(a.debt_usec, 5 * MS);
        /* Far from the plan (40 - 2.5 ms against 1 ms in force): the plan. */
        ck_assert_uint_eq(borrow_account_period_keep(&a, &p, 40 * MS, 1 * MS), 37500);
        /* No limit in force: borrow_account_period(). */
        ck_assert_uint_eq(borrow_account_period_keep(&a, &p, 40 * MS, USEC_INFINITY), 38750);
        assert_balanced(&a);

        /* Held periods: quota - limit repaid, never more than owed, nothing without a debt. */
        a = (BorrowAccount) {};
        ck_assert_int_eq(borrow_account_charge(&a, &p, 30 * MS, NULL), 0);
        ck_assert_uint_eq(borrow_account_period_at(&a, 40 * MS, 20 * MS), 20 * MS);
        ck_assert_uint_eq(borrow_account_period_at(&a, 40 * MS, 20 * MS), 10 * MS);
        ck_assert_uint_eq(borrow_account_period_at(&a, 40 * MS, 20 * MS), 0);
        ck_assert_uint_eq(borrow_account_period_at(&a, 40 * MS, 40 * MS), 0);
        ck_assert_uint_eq(a.debt_usec, 0);
        ck_assert_uint_eq(a.repaid_usec, 30 * MS);
        ck_assert_uint_eq(a.periods_shortened, 2);
        assert_balanced(&a);
}
END_TEST

TEST_SUITE("borrow-ledger", test_policy, test_charge_bad_input, test_cap, test_period_paper,
           test_period_floor_clamp, test_period_quota_below_floor, test_capacity, test_random_against_model, test_period_paced, test_paced_damps,
           test_overrun, test_saturation, test_keep_and_hold)
