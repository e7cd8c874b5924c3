/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>

#include "borrow-ledger.h"
#include "tests.h"

#define MS USEC_PER_MSEC

static void assert_balanced(const BorrowAccount *a) {
        ck_assert_uint_eq(a->borrowed_usec, a->debt_usec + a->repaid_usec + a->forgiven_usec);
}

START_TEST(test_policy) {
        BorrowPolicy p = BORROW_POLICY_DEFAULT;

        ck_assert_int_eq(borrow_policy_validate(&p), 0);
        p.floor_usec = 999;
        ck_assert_int_eq(borrow_policy_validate(&p), -EINVAL);
        p = (BorrowPolicy) { .floor_usec = 5 * MS, .max_debt_usec = 4 * MS };
        ck_assert_int_eq(borrow_policy_validate(&p), -EINVAL);
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
        BorrowPolicy p = { .floor_usec = 1 * MS, .max_debt_usec = 100 * MS };
        BorrowAccount a = {};
        usec_t added;

        ck_assert_int_eq(borrow_account_charge(&a, &p, 70 * MS, &added), 0);
        ck_assert_uint_eq(added, 70 * MS);
        ck_assert_int_eq(borrow_account_charge(&a, &p, 50 * MS, &added), 0);
        ck_assert_uint_eq(added, 30 * MS);
        ck_assert_uint_eq(a.debt_usec, 100 * MS);
        ck_assert_uint_eq(a.forgiven_usec, 20 * MS);
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
        BorrowPolicy p = { .floor_usec = 5 * MS, .max_debt_usec = 10 * USEC_PER_SEC };
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
        BorrowPolicy p = { .floor_usec = 2 * MS, .max_debt_usec = 10 * USEC_PER_SEC };
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

/* Random charges and periods against a straightforward model of the rules. */
START_TEST(test_random_against_model) {
        BorrowPolicy p = { .floor_usec = 1 * MS, .max_debt_usec = 500 * MS };
        BorrowAccount a = {};
        uint64_t model_debt = 0, total = 0;
        unsigned seed = 20261122;

        for (unsigned i = 0; i < 200000; i++) {
                if (rand_r(&seed) % 3 == 0) {
                        usec_t q = 1 + (usec_t) (rand_r(&seed) % (200 * MS)), e, expect;

                        if (model_debt == 0 || q <= p.floor_usec) {
                                expect = q;
                                model_debt = 0;
                        } else if (model_debt >= q) {
                                expect = p.floor_usec;
                                model_debt -= q;
                        } else {
                                expect = q - model_debt < p.floor_usec ? p.floor_usec : q - model_debt;
                                model_debt = 0;
                        }
                        e = borrow_account_period(&a, &p, q);
                        ck_assert_uint_eq(e, expect);
                        ck_assert_uint_le(e, q);
                } else {
                        usec_t c = 1 + (usec_t) (rand_r(&seed) % (80 * MS)), added;

                        ck_assert_int_eq(borrow_account_charge(&a, &p, c, &added), 0);
                        ck_assert_uint_eq(added, model_debt + c > p.max_debt_usec ? p.max_debt_usec - model_debt : c);
                        model_debt += added;
                        total += c;
                }
                ck_assert_uint_eq(a.debt_usec, model_debt);
                ck_assert_uint_le(a.debt_usec, p.max_debt_usec);
                ck_assert_uint_eq(a.borrowed_usec, total);
                assert_balanced(&a);
        }
        ck_assert_uint_gt(a.periods_shortened, 0);
        ck_assert_uint_gt(a.repaid_usec, 0);
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

TEST_SUITE("borrow-ledger", test_policy, test_charge_bad_input, test_cap, test_period_paper,
           test_period_floor_clamp, test_period_quota_below_floor, test_capacity, test_random_against_model,
           test_saturation)
