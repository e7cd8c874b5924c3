/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include "macro.h"
#include "time-util.h"

/*
 * The borrowing ledger (seed 000, §6.3.3), pure: per target slice the CPU time other slices'
 * processes spent for it (its debt), repaid by shortening the target's CPU quota in the following
 * periods. No I/O; the enforcer applies what borrow_account_period() returns.
 *
 * The paper repays the whole debt as soon as it can (repay_percent = 100). When the helper's work
 * grows with the time the target runs (a log copier draining what the target writes) and costs
 * more than that time, repaying everything one period late makes the target's quota swing between
 * the floor and the full quota: a full period makes a debt larger than the quota, which leaves the
 * next period at the floor, which makes almost no debt, and so on; in every full period the
 * target and its helper together take more than the target's share. Repaying a fixed share of
 * the debt per period damps that loop (see docs/ARCHITECTURE.md, "Paced repayment").
 *
 * Every charged microsecond ends up in exactly one bucket, so at any time
 *     borrowed + overrun = debt + repaid + forgiven
 * where repaid is quota actually taken away from the target, forgiven is what the policy wrote
 * off, and overrun is CPU time the target ran beyond a shortened quota (see
 * borrow_account_overrun()). Each write-off is a deliberate policy, counted by its reason:
 *     forgiven = forgiven_cap + forgiven_floor + forgiven_overrun
 * charges beyond the debt cap (max_debt_usec), the floor the target keeps in every period while in
 * debt (and a whole debt when the floor leaves nothing to shorten), and a debt of overrun alone.
 */

typedef struct BorrowPolicy {
        /* Quota per period a target keeps while it is in debt. The kernel refuses CFS quotas
         * below 1 ms, so that is the default and the minimum. */
        usec_t floor_usec;
        /* Outstanding debt per target is capped here; charges beyond it are forgiven. The default
         * (10 s) is 100 periods of a full CPU: enough for any burst a helper can cause between
         * two periods, small enough that a broken or hostile charger cannot starve a slice for
         * longer than that. */
        usec_t max_debt_usec;
        /* Share of the outstanding debt due in each period, 1..100. 100 is §6.3.3 as written;
         * below it, the installment is this share of the debt, but at least the floor's worth
         * (or the whole debt when that is smaller), so that a small debt does not trickle on. */
        unsigned repay_percent;
} BorrowPolicy;

#define BORROW_FLOOR_MIN_USEC (1 * USEC_PER_MSEC)
#define BORROW_FLOOR_DEFAULT_USEC BORROW_FLOOR_MIN_USEC
#define BORROW_MAX_DEBT_DEFAULT_USEC (10 * USEC_PER_SEC)
#define BORROW_REPAY_PAPER_PERCENT 100U
#define BORROW_REPAY_DEFAULT_PERCENT 50U
/* One charge covers at most this much: more than an hour of CPU in one report is a bug or an
 * overflow in the caller, not work done for a tenant. */
#define BORROW_CHARGE_MAX_USEC USEC_PER_HOUR

#define BORROW_POLICY_DEFAULT                                                                          \
        ((BorrowPolicy) { .floor_usec = BORROW_FLOOR_DEFAULT_USEC,                                   \
                          .max_debt_usec = BORROW_MAX_DEBT_DEFAULT_USEC,                               \
                          .repay_percent = BORROW_REPAY_DEFAULT_PERCENT })

typedef struct BorrowAccount {
        usec_t debt_usec;           /* outstanding */
        uint64_t borrowed_usec;     /* everything charged */
        uint64_t repaid_usec;       /* quota taken away in shortened periods */
        uint64_t forgiven_usec;     /* the sum of the three below */
        uint64_t forgiven_cap_usec;      /* charges beyond max_debt_usec */
        uint64_t forgiven_floor_usec;    /* the floor kept while in debt */
        uint64_t forgiven_overrun_usec;  /* debts of overrun alone, written off */
        uint64_t periods_shortened; /* periods whose quota was below the configured one */
        uint64_t overrun_usec;      /* run beyond shortened quotas, owed again */
        usec_t overrun_debt_usec;   /* the part of debt_usec that is overrun (repaid last) */
} BorrowAccount;

/* -EINVAL unless BORROW_FLOOR_MIN_USEC <= floor, floor <= max_debt and 1 <= repay_percent <= 100. */
int borrow_policy_validate(const BorrowPolicy *p);

/*
 * Records that usec of CPU were spent for the account's slice. -EINVAL for 0, -ERANGE above
 * BORROW_CHARGE_MAX_USEC (nothing recorded). What would take the debt above the cap is forgiven.
 * Returns the amount added to the debt.
 */
int borrow_account_charge(BorrowAccount *a, const BorrowPolicy *p, usec_t usec, usec_t *ret_added);

/*
 * Records that the target ran usec beyond the shortened quota of a period. The kernel lets a
 * cgroup overrun its quota a little (it notices at the next scheduler event) and takes the
 * overrun from the next period, but a cpu.max write resets that account, and a shortened quota
 * is written every period it changes. The overrun is owed again here instead, like a charge but
 * counted apart from what helpers spent. 0 is a no-op; what would exceed the debt cap is
 * forgiven. Returns the amount added to the debt.
 *
 * Overrun is owed only while helpers' charges are being repaid: a shortened period overruns too,
 * so a debt of overrun alone would keep the slice shortened for ever. borrow_account_period()
 * repays charges first and forgives the overrun left once nothing charged remains.
 */
usec_t borrow_account_overrun(BorrowAccount *a, const BorrowPolicy *p, usec_t usec);

/*
 * The part of the debt due in the next period under the policy's repay_percent (the whole debt
 * at 100).
 */
usec_t borrow_account_installment(const BorrowAccount *a, const BorrowPolicy *p);

/*
 * One period (§6.3.3, applied to the installment due). quota_usec is the target's quota for this
 * period (> 0). Returns the quota to apply for it:
 *   no debt:              quota, unchanged;
 *   installment >= quota: the floor; debt -= quota;
 *   installment <  quota: quota - installment, but not below the floor; debt -= installment.
 * A floor above the quota leaves the quota as it is (there is nothing to shorten) and forgives,
 * and so does a debt that is all overrun (see borrow_account_overrun()).
 */
usec_t borrow_account_period(BorrowAccount *a, const BorrowPolicy *p, usec_t quota_usec);

/*
 * A limit in force is kept while the one borrow_account_period() would give differs from it by at
 * most this much (the policy's floor, or 1/BORROW_LIMIT_TOLERANCE_DIVISOR of the quota if that is
 * more): each change is a cpu.max write, which on a stock kernel also refills the period's quota.
 */
#define BORROW_LIMIT_TOLERANCE_DIVISOR 4U
usec_t borrow_limit_tolerance(const BorrowPolicy *p, usec_t quota_usec) _pure_;

/*
 * Like borrow_account_period(), for a target whose limit in force is current_usec: if the quota
 * borrow_account_period() would give is within borrow_limit_tolerance() of it, and the debt of
 * what helpers spent covers a whole period at current_usec, the period is repaid at current_usec
 * instead (repaid += quota - current, nothing forgiven) and current_usec is returned, so that the
 * limit need not be written again. The debt is repaid exactly either way; only its pace differs,
 * by at most the tolerance per period. A current_usec outside [floor, quota) (no limit in force)
 * is borrow_account_period().
 */
usec_t borrow_account_period_keep(BorrowAccount *a, const BorrowPolicy *p, usec_t quota_usec, usec_t current_usec);

/*
 * Records a period in which limit_usec (< quota_usec) was in force without borrow_account_period()
 * being asked (a held limit, see BORROW_HOLD_PERIODS_MAX): quota - limit is repaid, at most what is
 * owed. Returns what was repaid.
 */
usec_t borrow_account_period_at(BorrowAccount *a, usec_t quota_usec, usec_t limit_usec);

/*
 * The quota a slice without CPUQuota= is measured against: one full period on every CPU it may
 * run on. Charging such a slice caps it below that capacity until the debt is repaid.
 */
usec_t borrow_capacity_usec(usec_t period_usec, unsigned n_cpus) _const_;
