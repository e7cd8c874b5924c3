/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which borrowing path a target takes on tonari's kernel, and reading the kernel's files. */
#include <errno.h>

#include "borrow-kernel-policy.h"
#include "tests.h"

START_TEST(test_choose) {
        static const BorrowKernelFiles none = {}, paper = { .borrowing = true },
                                       both = { .borrowing = true, .charge_procs = true };
        bool on_behalf = true;

        /* A stock kernel: the userspace ledger, whatever the configuration says. */
        for (int m = 0; m < _BORROW_ENFORCEMENT_MODE_MAX; m++) {
                ck_assert_int_eq(borrow_enforcement_choose(m, none, &on_behalf), BORROW_ENFORCEMENT_USERSPACE);
                ck_assert(!on_behalf);
        }
        /* The full series: debts to the kernel, helpers charged as they run. */
        ck_assert_int_eq(borrow_enforcement_choose(BORROW_ENFORCEMENT_MODE_AUTO, both, &on_behalf),
                         BORROW_ENFORCEMENT_KERNEL);
        ck_assert(on_behalf);
        /* Only the paper's file (patch 1 alone): debts to the kernel, helpers sampled. */
        ck_assert_int_eq(borrow_enforcement_choose(BORROW_ENFORCEMENT_MODE_AUTO, paper, &on_behalf),
                         BORROW_ENFORCEMENT_KERNEL);
        ck_assert(!on_behalf);
        /* Enforcement=kernel-paper: the paper's interface even where the kernel could charge. */
        ck_assert_int_eq(borrow_enforcement_choose(BORROW_ENFORCEMENT_MODE_KERNEL_PAPER, both, &on_behalf),
                         BORROW_ENFORCEMENT_KERNEL);
        ck_assert(!on_behalf);
        /* Enforcement=userspace: the stock kernel's path on tonari's kernel too. */
        ck_assert_int_eq(borrow_enforcement_choose(BORROW_ENFORCEMENT_MODE_USERSPACE, both, &on_behalf),
                         BORROW_ENFORCEMENT_USERSPACE);
        ck_assert(!on_behalf);
        ck_assert_int_eq(borrow_enforcement_choose(BORROW_ENFORCEMENT_MODE_AUTO, both, NULL), BORROW_ENFORCEMENT_KERNEL);
}
END_TEST

START_TEST(test_strings) {
        ck_assert_int_eq(borrow_enforcement_mode_from_string("auto"), BORROW_ENFORCEMENT_MODE_AUTO);
        ck_assert_int_eq(borrow_enforcement_mode_from_string("kernel-paper"), BORROW_ENFORCEMENT_MODE_KERNEL_PAPER);
        ck_assert_int_eq(borrow_enforcement_mode_from_string("userspace"), BORROW_ENFORCEMENT_MODE_USERSPACE);
        ck_assert_int_eq(borrow_enforcement_mode_from_string("kernel"), -EINVAL);
        ck_assert_int_eq(borrow_enforcement_mode_from_string(""), -EINVAL);
        ck_assert_int_eq(borrow_enforcement_mode_from_string(NULL), -EINVAL);
        ck_assert_str_eq(borrow_enforcement_mode_to_string(BORROW_ENFORCEMENT_MODE_KERNEL_PAPER), "kernel-paper");
        ck_assert_ptr_null(borrow_enforcement_mode_to_string(_BORROW_ENFORCEMENT_MODE_MAX));
        ck_assert_str_eq(borrow_enforcement_to_string(BORROW_ENFORCEMENT_KERNEL), "kernel");
        ck_assert_str_eq(borrow_enforcement_to_string(BORROW_ENFORCEMENT_USERSPACE), "userspace");
        ck_assert_str_eq(borrow_enforcement_to_string(BORROW_ENFORCEMENT_NONE), "");
        ck_assert_ptr_null(borrow_enforcement_to_string(-1));
}
END_TEST

START_TEST(test_cgroup_choose) {
        /* CPUQuota= lives in the slice's own cgroup: charge there, write nothing. */
        ck_assert_int_eq(borrow_kernel_cgroup_choose(500 * USEC_PER_MSEC), BORROW_KERNEL_CGROUP_SLICE);
        /* Without one a charge would only be counted: the capacity goes into the limit cgroup. */
        ck_assert_int_eq(borrow_kernel_cgroup_choose(USEC_INFINITY), BORROW_KERNEL_CGROUP_LIMIT);
}
END_TEST

START_TEST(test_debt_room) {
        BorrowPolicy p = BORROW_POLICY_DEFAULT;
        usec_t forgiven = 1;

        ck_assert_uint_eq(borrow_kernel_debt_room(&p, 0, 2 * USEC_PER_SEC, &forgiven), 2 * USEC_PER_SEC);
        ck_assert_uint_eq(forgiven, 0);
        /* The ledger's cap holds for the kernel's debt too; beyond it the charge is forgiven. */
        ck_assert_uint_eq(borrow_kernel_debt_room(&p, 9 * USEC_PER_SEC, 3 * USEC_PER_SEC, &forgiven), USEC_PER_SEC);
        ck_assert_uint_eq(forgiven, 2 * USEC_PER_SEC);
        ck_assert_uint_eq(borrow_kernel_debt_room(&p, 10 * USEC_PER_SEC, 5, &forgiven), 0);
        ck_assert_uint_eq(forgiven, 5);
        /* The kernel may owe more than the cap (a debt written before a smaller MaxDebtSec=). */
        ck_assert_uint_eq(borrow_kernel_debt_room(&p, 20 * USEC_PER_SEC, 5, NULL), 0);
}
END_TEST

START_TEST(test_charge_procs) {
        ck_assert_int_eq(borrow_charge_procs_contains("", 42), 0);
        ck_assert_int_eq(borrow_charge_procs_contains("42\n", 42), 1);
        ck_assert_int_eq(borrow_charge_procs_contains("7\n42\n99\n", 42), 1);
        ck_assert_int_eq(borrow_charge_procs_contains("7\n420\n99", 42), 0);
        ck_assert_int_eq(borrow_charge_procs_contains("4\n", 42), 0);
        static const char *const bad[] = { "x\n", "42 \n", "\n", "7\n\n42\n", "-42\n", "+42\n", "0\n",
                                           "99999999999999999\n", " 42\n", "2147483648\n" };
        FOREACH_ELEMENT(b, bad)
                ck_assert_msg(borrow_charge_procs_contains(*b, 42) == -EBADMSG, "accepted '%s'", *b);
}
END_TEST

START_TEST(test_debt_parse) {
        usec_t u = 1;

        ck_assert_int_eq(borrow_kernel_debt_parse("0\n", &u), 0);
        ck_assert_uint_eq(u, 0);
        ck_assert_int_eq(borrow_kernel_debt_parse("300000\n", &u), 0);
        ck_assert_uint_eq(u, 300000);
        ck_assert_int_eq(borrow_kernel_debt_parse("17", &u), 0);
        ck_assert_uint_eq(u, 17);
        static const char *const bad[] = { "", "\n", "-1\n", "1 2\n", "abc\n", "18446744073709551615\n",
                                           "99999999999999999999999\n", " 5\n" };
        FOREACH_ELEMENT(b, bad)
                ck_assert_msg(borrow_kernel_debt_parse(*b, &u) == -EBADMSG, "accepted '%s'", *b);
        ck_assert_int_eq(borrow_kernel_debt_parse(NULL, &u), -EBADMSG);
}
END_TEST

TEST_SUITE("borrow-kernel-policy", test_choose, test_strings, test_cgroup_choose, test_debt_room, test_charge_procs,
           test_debt_parse)
