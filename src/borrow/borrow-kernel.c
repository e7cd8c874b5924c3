/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel path (borrow-kernel-policy.h): on tonari's kernel a target's debts are written to
 * cpu.cfs_borrowing_us, which the kernel repays from the following periods without touching the
 * current one, and its helper processes are written (as pidfds) to cpu.cfs_charge_procs, so that the
 * kernel charges their CPU time to the target as they run. No tick, no sample, no cpu.max rewrite.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "borrow-internal.h"
#include "log.h"
#include "string-util.h"

#define BORROWING_FILE "cpu.cfs_borrowing_us"
#define CHARGE_FILE "cpu.cfs_charge_procs"

static CGroupRoot *root_of(BorrowManager *m) {
        return slice_manager_cgroup_root(m->slices);
}

static int file_present(CGroupRoot *root, const char *cgroup, const char *file) {
        _cleanup_free_ char *v = NULL;
        int r = cgroup_read_file(root, "cpu", cgroup, file, &v);

        if (r == -ENOENT)
                return 0;
        return r < 0 ? r : 1;
}

/* The capacity as kernel_cgroup's quota, unless a quota is there already. */
static int target_ensure_quota(BorrowTarget *t, Slice *s) {
        BorrowManager *m = t->manager;
        _cleanup_free_ char *max = NULL;
        usec_t quota, period;
        int r;

        if (!t->kernel_capacity)
                return 0;
        r = cgroup_read_file(root_of(m), "cpu", t->kernel_cgroup, "cpu.max", &max);
        if (r < 0)
                return r;
        if (!startswith(max, "max"))
                return 0;
        borrow_target_quota(t, s, &quota, &period);
        r = cgroup_set_cpu_max(root_of(m), t->kernel_cgroup, quota, period);
        m->stats.n_writes++;
        if (r < 0)
                return r;
        log_info("Slice '%s' has no CPUQuota=: its capacity, %" PRIu64 " µs per %" PRIu64 " µs period, is now the quota "
                 "of cgroup /%s, so that the CPU time the kernel charges to it counts.",
                 t->name, quota, period, t->kernel_cgroup);
        return 0;
}

int borrow_target_prepare(BorrowTarget *t, Slice *s) {
        BorrowManager *m = t->manager;
        _cleanup_free_ char *cg = NULL;
        BorrowKernelFiles files = {};
        BorrowEnforcement e;
        bool own, capacity;
        int r;

        if (t->enforcement == BORROW_ENFORCEMENT_USERSPACE)
                return 0;
        if (t->enforcement == BORROW_ENFORCEMENT_KERNEL)
                return target_ensure_quota(t, s);

        /* A debt of the userspace ledger (or a limit it wrote) is finished the way it was begun. */
        if (m->enforcement_mode == BORROW_ENFORCEMENT_MODE_USERSPACE || !m->slices || !s->cgroup ||
            t->account.debt_usec > 0 || t->limit_usec != USEC_INFINITY) {
                t->enforcement = BORROW_ENFORCEMENT_USERSPACE;
                return 0;
        }
        /* A stock kernel, told by the slice's own cgroup where it has the cpu controller: no need
         * to make the leaf of its scope just to look there. */
        r = file_present(root_of(m), s->cgroup, "cpu.max");
        if (r > 0)
                r = file_present(root_of(m), s->cgroup, BORROWING_FILE);
        else if (r == 0)
                r = 1; /* no cpu controller there: look where the charge would go */
        if (r == 0) {
                t->enforcement = BORROW_ENFORCEMENT_USERSPACE;
                return 0;
        }
        capacity = borrow_kernel_cgroup_choose(s->settings.cpu_quota_per_sec_usec) == BORROW_KERNEL_CGROUP_LIMIT;
        if (capacity) {
                r = slice_cpu_limit_cgroup(s, &own, &cg);
                if (r < 0)
                        return r;
        } else {
                cg = strdup(s->cgroup);
                if (!cg)
                        return -ENOMEM;
        }
        r = file_present(root_of(m), cg, BORROWING_FILE);
        if (r < 0)
                return r;
        files.borrowing = r > 0;
        r = file_present(root_of(m), cg, CHARGE_FILE);
        if (r < 0)
                return r;
        files.charge_procs = r > 0;

        e = borrow_enforcement_choose(m->enforcement_mode, files, &t->on_behalf);
        if (e == BORROW_ENFORCEMENT_KERNEL) {
                t->kernel_cgroup = TAKE_PTR(cg);
                t->kernel_capacity = capacity;
                r = target_ensure_quota(t, s);
                if (r < 0) {
                        t->kernel_cgroup = mfree(t->kernel_cgroup);
                        return r;
                }
                log_info("Slice '%s': borrowed CPU time is enforced by the kernel in cgroup /%s (%s).", t->name,
                         t->kernel_cgroup,
                         t->on_behalf ? "debts in " BORROWING_FILE ", helper processes in " CHARGE_FILE
                                      : "debts in " BORROWING_FILE ", helpers sampled");
        }
        t->enforcement = e;
        return 0;
}

int borrow_target_kernel_debt(BorrowTarget *t, usec_t *ret) {
        _cleanup_free_ char *v = NULL;
        int r;

        if (!t->kernel_cgroup)
                return -ENODATA;
        r = cgroup_read_file(root_of(t->manager), "cpu", t->kernel_cgroup, BORROWING_FILE, &v);
        if (r < 0)
                return r;
        return borrow_kernel_debt_parse(v, ret);
}

int borrow_target_kernel_charge(BorrowTarget *t, usec_t usec) {
        BorrowManager *m = t->manager;
        usec_t outstanding, take, forgiven;
        char buf[24];
        int r;

        r = borrow_target_kernel_debt(t, &outstanding);
        if (r < 0)
                return r;
        take = borrow_kernel_debt_room(&m->policy, outstanding, usec, &forgiven);
        if (take > 0) {
                (void) snprintf(buf, sizeof(buf), "%" PRIu64, take);
                r = cgroup_write_file(root_of(m), "cpu", t->kernel_cgroup, BORROWING_FILE, buf);
                m->stats.n_kernel_writes++;
                if (r < 0)
                        return r;
        }
        t->account.borrowed_usec += usec;
        t->account.forgiven_usec += forgiven;
        t->account.forgiven_cap_usec += forgiven;
        return 0;
}

int borrow_proxy_kernel_attach(BorrowProxy *p, BorrowTarget *t) {
        BorrowManager *m = p->manager;
        _cleanup_free_ char *list = NULL;
        char buf[16];
        int r;

        r = cgroup_read_file(root_of(m), "cpu", t->kernel_cgroup, CHARGE_FILE, &list);
        if (r < 0)
                return r;
        r = borrow_charge_procs_contains(list, p->pid);
        if (r < 0)
                return r;
        if (r > 0)
                return 1;
        (void) snprintf(buf, sizeof(buf), "+%d", p->pidfd);
        r = cgroup_write_file(root_of(m), "cpu", t->kernel_cgroup, CHARGE_FILE, buf);
        m->stats.n_kernel_writes++;
        return r;
}

int borrow_proxy_kernel_detach(BorrowProxy *p) {
        BorrowManager *m = p->manager;
        BorrowTarget *t = borrow_manager_find_target(m, p->target);
        char buf[16];
        int r;

        if (!p->kernel || !t || !t->kernel_cgroup || p->pidfd < 0)
                return 0;
        (void) snprintf(buf, sizeof(buf), "-%d", p->pidfd);
        r = cgroup_write_file(root_of(m), "cpu", t->kernel_cgroup, CHARGE_FILE, buf);
        m->stats.n_kernel_writes++;
        /* Not charging (any more), the helper gone or the cgroup removed: nothing left to stop. */
        if (r == -ENOENT || r == -ESRCH)
                return 0;
        return r;
}
