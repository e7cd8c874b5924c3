/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>

#include "borrow-ledger.h"

static uint64_t add_saturating(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int borrow_policy_validate(const BorrowPolicy *p) {
        if (p->floor_usec < BORROW_FLOOR_MIN_USEC || p->floor_usec > p->max_debt_usec)
                return -EINVAL;
        if (p->repay_percent < 1 || p->repay_percent > 100)
                return -EINVAL;
        return 0;
}

static void forgive(uint64_t *total, uint64_t *reason, uint64_t usec) {
        *total = add_saturating(*total, usec);
        *reason = add_saturating(*reason, usec);
}

/* Adds usec to the debt up to the cap and forgives the rest; returns what was added. */
static usec_t debt_add(BorrowAccount *a, const BorrowPolicy *p, usec_t usec) {
        usec_t room = a->debt_usec < p->max_debt_usec ? p->max_debt_usec - a->debt_usec : 0, added = MIN(usec, room);

        a->debt_usec += added;
        forgive(&a->forgiven_usec, &a->forgiven_cap_usec, usec - added);
        return added;
}

int borrow_account_charge(BorrowAccount *a, const BorrowPolicy *p, usec_t usec, usec_t *ret_added) {
        usec_t added;

        if (usec == 0)
                return -EINVAL;
        if (usec > BORROW_CHARGE_MAX_USEC)
                return -ERANGE;

        added = debt_add(a, p, usec);
        a->borrowed_usec = add_saturating(a->borrowed_usec, usec);
        if (ret_added)
                *ret_added = added;
        return 0;
}

usec_t borrow_account_overrun(BorrowAccount *a, const BorrowPolicy *p, usec_t usec) {
        usec_t added = debt_add(a, p, usec);

        a->overrun_debt_usec += added;
        a->overrun_usec = add_saturating(a->overrun_usec, usec);
        return added;
}

usec_t borrow_account_installment(const BorrowAccount *a, const BorrowPolicy *p) {
        usec_t d = a->debt_usec, due;

        if (p->repay_percent >= 100)
                return d;
        /* d * percent / 100, rounded up, without overflowing for any debt. */
        due = d / 100 * p->repay_percent + (d % 100 * p->repay_percent + 99) / 100;
        return MIN(d, MAX(due, p->floor_usec));
}

/* The quota borrow_account_period() gives the next period and what that pays off the debt, without
 * applying it; false if instead the whole debt is written off (or there is none). */
static bool period_plan(const BorrowAccount *a, const BorrowPolicy *p, usec_t quota_usec, usec_t *ret_effective,
                        usec_t *ret_paid) {
        usec_t due;

        if (a->debt_usec == 0 || quota_usec == 0 || p->floor_usec >= quota_usec ||
            a->debt_usec <= a->overrun_debt_usec)
                return false;
        due = borrow_account_installment(a, p);
        if (due >= quota_usec) {
                *ret_effective = p->floor_usec;
                *ret_paid = quota_usec;
        } else {
                *ret_effective = MAX(quota_usec - due, p->floor_usec);
                *ret_paid = due;
        }
        return true;
}

static usec_t period_apply(BorrowAccount *a, const BorrowPolicy *p, usec_t quota_usec, usec_t effective, usec_t paid) {
        /* What helpers spent is repaid first: a slice whose helpers stopped reaches a debt of
         * overrun alone within a bounded number of periods, and that is forgiven (below). */
        if (paid > a->debt_usec - a->overrun_debt_usec)
                a->overrun_debt_usec -= paid - (a->debt_usec - a->overrun_debt_usec);
        a->debt_usec -= paid;
        a->repaid_usec = add_saturating(a->repaid_usec, quota_usec - effective);
        forgive(&a->forgiven_usec, &a->forgiven_floor_usec, paid - (quota_usec - effective));
        a->periods_shortened = add_saturating(a->periods_shortened, 1);
        return effective;
}

usec_t borrow_account_period(BorrowAccount *a, const BorrowPolicy *p, usec_t quota_usec) {
        usec_t effective, paid;

        if (a->debt_usec == 0 || quota_usec == 0)
                return quota_usec;

        if (!period_plan(a, p, quota_usec, &effective, &paid)) {
                /* Nothing can be taken away, or only overrun is owed: the debt is written off
                 * rather than carried on forever. */
                if (p->floor_usec >= quota_usec)
                        forgive(&a->forgiven_usec, &a->forgiven_floor_usec, a->debt_usec);
                else
                        forgive(&a->forgiven_usec, &a->forgiven_overrun_usec, a->debt_usec);
                a->debt_usec = 0;
                a->overrun_debt_usec = 0;
                return quota_usec;
        }
        return period_apply(a, p, quota_usec, effective, paid);
}

usec_t borrow_limit_tolerance(const BorrowPolicy *p, usec_t quota_usec) {
        return MAX(p->floor_usec, quota_usec / BORROW_LIMIT_TOLERANCE_DIVISOR);
}

usec_t borrow_account_period_keep(BorrowAccount *a, const BorrowPolicy *p, usec_t quota_usec, usec_t current_usec) {
        usec_t effective, paid;

        if (current_usec < p->floor_usec || current_usec >= quota_usec ||
            !period_plan(a, p, quota_usec, &effective, &paid))
                return borrow_account_period(a, p, quota_usec);
        /* Kept only while the debt covers the whole period at it: never more taken than owed. */
        if (effective == current_usec ||
            (effective > current_usec ? effective - current_usec : current_usec - effective) >
                    borrow_limit_tolerance(p, quota_usec) ||
            quota_usec - current_usec > a->debt_usec - a->overrun_debt_usec)
                return period_apply(a, p, quota_usec, effective, paid);
        return period_apply(a, p, quota_usec, current_usec, quota_usec - current_usec);
}

usec_t borrow_account_period_at(BorrowAccount *a, usec_t quota_usec, usec_t limit_usec) {
        usec_t paid;

        if (limit_usec >= quota_usec || a->debt_usec == 0)
                return 0;
        paid = MIN(quota_usec - limit_usec, a->debt_usec);
        if (paid > a->debt_usec - a->overrun_debt_usec)
                a->overrun_debt_usec -= paid - (a->debt_usec - a->overrun_debt_usec);
        a->debt_usec -= paid;
        a->repaid_usec = add_saturating(a->repaid_usec, paid);
        a->periods_shortened = add_saturating(a->periods_shortened, 1);
        return paid;
}

usec_t borrow_capacity_usec(usec_t period_usec, unsigned n_cpus) {
        if (n_cpus == 0)
                n_cpus = 1;
        if (period_usec > UINT64_MAX / n_cpus)
                return UINT64_MAX;
        return period_usec * n_cpus;
}
