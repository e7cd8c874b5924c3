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
 * Every charged microsecond ends up in exactly one bucket, so at any time
 *     borrowed = debt + repaid + forgiven
 * where repaid is quota actually taken away from the target, and forgiven is what the policy
 * wrote off: charges beyond the debt cap, and the floor the target keeps while in debt.
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
} BorrowPolicy;

#define BORROW_FLOOR_MIN_USEC (1 * USEC_PER_MSEC)
#define BORROW_FLOOR_DEFAULT_USEC BORROW_FLOOR_MIN_USEC
#define BORROW_MAX_DEBT_DEFAULT_USEC (10 * USEC_PER_SEC)
/* One charge covers at most this much: more than an hour of CPU in one report is a bug or an
 * overflow in the caller, not work done for a tenant. */
#define BORROW_CHARGE_MAX_USEC USEC_PER_HOUR

#define BORROW_POLICY_DEFAULT                                                                          \
        ((BorrowPolicy) { .floor_usec = BORROW_FLOOR_DEFAULT_USEC, .max_debt_usec = BORROW_MAX_DEBT_DEFAULT_USEC })

typedef struct BorrowAccount {
        usec_t debt_usec;           /* outstanding */
        uint64_t borrowed_usec;     /* everything charged */
        uint64_t repaid_usec;       /* quota taken away in shortened periods */
        uint64_t forgiven_usec;     /* over the cap, and the floor kept while in debt */
        uint64_t periods_shortened; /* periods whose quota was below the configured one */
} BorrowAccount;

/* -EINVAL unless BORROW_FLOOR_MIN_USEC <= floor and floor <= max_debt. */
int borrow_policy_validate(const BorrowPolicy *p);

/*
 * Records that usec of CPU were spent for the account's slice. -EINVAL for 0, -ERANGE above
 * BORROW_CHARGE_MAX_USEC (nothing recorded). What would take the debt above the cap is forgiven.
 * Returns the amount added to the debt.
 */
int borrow_account_charge(BorrowAccount *a, const BorrowPolicy *p, usec_t usec, usec_t *ret_added);

/*
 * One period (§6.3.3). quota_usec is the target's quota for this period (> 0). Returns the quota
 * to apply for it:
 *   no debt:             quota, unchanged;
 *   debt >= quota:       the floor; debt -= quota;
 *   debt <  quota:       quota - debt, but not below the floor; debt = 0.
 * A floor above the quota leaves the quota as it is (there is nothing to shorten) and forgives.
 */
usec_t borrow_account_period(BorrowAccount *a, const BorrowPolicy *p, usec_t quota_usec);

/*
 * The quota a slice without CPUQuota= is measured against: one full period on every CPU it may
 * run on. Charging such a slice caps it below that capacity until the debt is repaid.
 */
usec_t borrow_capacity_usec(usec_t period_usec, unsigned n_cpus) _const_;
