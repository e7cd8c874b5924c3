/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which enforcement path a borrowing target takes: pure (borrow-kernel-policy.h). */
#include <errno.h>
#include <string.h>

#include "borrow-kernel-policy.h"
#include "parse-util.h"
#include "string-util.h"

static const char *const mode_table[_BORROW_ENFORCEMENT_MODE_MAX] = {
        [BORROW_ENFORCEMENT_MODE_AUTO] = "auto",
        [BORROW_ENFORCEMENT_MODE_KERNEL_PAPER] = "kernel-paper",
        [BORROW_ENFORCEMENT_MODE_USERSPACE] = "userspace",
};

static const char *const enforcement_table[_BORROW_ENFORCEMENT_MAX] = {
        [BORROW_ENFORCEMENT_NONE] = "",
        [BORROW_ENFORCEMENT_USERSPACE] = "userspace",
        [BORROW_ENFORCEMENT_KERNEL] = "kernel",
};

const char *borrow_enforcement_mode_to_string(BorrowEnforcementMode m) {
        return m >= 0 && m < _BORROW_ENFORCEMENT_MODE_MAX ? mode_table[m] : NULL;
}

BorrowEnforcementMode borrow_enforcement_mode_from_string(const char *s) {
        for (int i = 0; s && i < _BORROW_ENFORCEMENT_MODE_MAX; i++)
                if (streq(s, mode_table[i]))
                        return i;
        return _BORROW_ENFORCEMENT_MODE_INVALID;
}

const char *borrow_enforcement_to_string(BorrowEnforcement e) {
        return e >= 0 && e < _BORROW_ENFORCEMENT_MAX ? enforcement_table[e] : NULL;
}

BorrowEnforcement borrow_enforcement_choose(BorrowEnforcementMode mode, BorrowKernelFiles files, bool *ret_on_behalf) {
        bool kernel = mode != BORROW_ENFORCEMENT_MODE_USERSPACE && files.borrowing;

        if (ret_on_behalf)
                *ret_on_behalf = kernel && mode == BORROW_ENFORCEMENT_MODE_AUTO && files.charge_procs;
        return kernel ? BORROW_ENFORCEMENT_KERNEL : BORROW_ENFORCEMENT_USERSPACE;
}

BorrowKernelCgroup borrow_kernel_cgroup_choose(usec_t cpu_quota_per_sec_usec) {
        return cpu_quota_per_sec_usec == USEC_INFINITY ? BORROW_KERNEL_CGROUP_LIMIT : BORROW_KERNEL_CGROUP_SLICE;
}

usec_t borrow_kernel_debt_room(const BorrowPolicy *p, usec_t outstanding, usec_t usec, usec_t *ret_forgiven) {
        usec_t room = outstanding >= p->max_debt_usec ? 0 : p->max_debt_usec - outstanding, take = MIN(usec, room);

        if (ret_forgiven)
                *ret_forgiven = usec - take;
        return take;
}

int borrow_charge_procs_contains(const char *text, pid_t pid) {
        bool found = false;

        for (const char *p = text; p && *p;) {
                const char *nl = strchrnul(p, '\n');
                char buf[16];
                uint32_t v;

                if (nl == p || (size_t) (nl - p) >= sizeof(buf))
                        return -EBADMSG;
                memcpy(buf, p, nl - p);
                buf[nl - p] = 0;
                if (buf[0] < '0' || buf[0] > '9' || safe_atou32(buf, &v) < 0 || v == 0 || v > INT32_MAX)
                        return -EBADMSG;
                if ((pid_t) v == pid)
                        found = true;
                p = *nl ? nl + 1 : nl;
        }
        return found;
}

int borrow_kernel_debt_parse(const char *text, usec_t *ret) {
        char buf[24];
        size_t n = text ? strlen(text) : 0;
        uint64_t v;

        if (n > 0 && text[n - 1] == '\n')
                n--;
        if (n == 0 || n >= sizeof(buf))
                return -EBADMSG;
        memcpy(buf, text, n);
        buf[n] = 0;
        if (buf[0] < '0' || buf[0] > '9' || safe_atou64(buf, &v) < 0 || v == USEC_INFINITY)
                return -EBADMSG;
        *ret = v;
        return 0;
}
