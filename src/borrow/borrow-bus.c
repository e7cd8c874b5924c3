/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "alloc-util.h"
#include "borrow-bus.h"
#include "borrow-internal.h"
#include "bus-errors.h"
#include "bus-util.h"
#include "log.h"
#include "slice-bus.h"
#include "slice-util.h"
#include "string-util.h"

#define BORROWING_INTERFACE "org.tonari.Borrowing1"

static BorrowManager *manager_of(void *userdata) {
        return userdata ? *(BorrowManager **) userdata : NULL;
}

static int check_manager(BorrowManager *bm, sd_bus_error *error) {
        return bus_slice_check_manager(bm ? bm->slices : NULL, error);
}

/* Replies with an array of contents whose elements append() adds, if there are slices. */
static int reply_list(sd_bus_message *m, BorrowManager *bm, const char *contents,
                      int (*append)(sd_bus_message *reply, void *userdata), sd_bus_error *error) {
        int r;

        r = check_manager(bm, error);
        if (r < 0)
                return r;
        return bus_reply_array(m, contents, append, bm);
}

/* Reads a slice name and finds the slice. */
/* ---- ChargeCPU */

int bus_borrow_method_charge_cpu(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BorrowManager *bm = manager_of(userdata);
        uint64_t usec;
        pid_t pid = 0;
        Slice *s;
        int r;

        r = check_manager(bm, error);
        if (r < 0)
                return r;
        r = borrow_verify_charger(m, bm, &pid, error);
        if (r < 0)
                return r;
        r = bus_slice_read_existing(m, bm->slices, &s, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "t", &usec);
        if (r < 0)
                return r;
        if (usec == 0 || usec > BORROW_CHARGE_MAX_USEC)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Invalid CPU time %" PRIu64 " µs: expected 1 to %" PRIu64 " µs per call.", usec,
                                         (uint64_t) BORROW_CHARGE_MAX_USEC);
        /* A charger inside the slice spends the slice's own CPU already: charging it again would
         * make the slice pay twice. */
        if (pid > 0 && borrow_process_in_slice(bm, s, pid) > 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "The caller (PID %d) runs in slice '%s' itself: its CPU time is charged "
                                         "to that slice already.",
                                         (int) pid, s->name);

        r = borrow_manager_charge(bm, s, usec);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to charge slice '%s': %m", s->name);
        log_debug("Charged %" PRIu64 " µs to slice '%s' for PID %d.", usec, s->name, (int) pid);
        return sd_bus_reply_method_return(m, NULL);
}

/* ---- AddProxy, RemoveProxy, ListProxies */

int bus_borrow_method_add_proxy(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BorrowManager *bm = manager_of(userdata);
        const char *cgroup, *why;
        BorrowProxy *p;
        uint32_t pid;
        Slice *s;
        int r;

        r = bus_verify_privileged(m, error);
        if (r < 0)
                return r;
        r = check_manager(bm, error);
        if (r < 0)
                return r;
        r = bus_slice_read_existing(m, bm->slices, &s, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "us", &pid, &cgroup);
        if (r < 0)
                return r;
        if ((pid > 0) == !isempty(cgroup))
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                        "Give exactly one helper: a PID (and an empty cgroup), or a cgroup path (and "
                                        "PID 0).");
        if (pid > INT32_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid PID %" PRIu32 ".", pid);

        r = borrow_manager_add_proxy(bm, s, (pid_t) pid, cgroup, &p);
        if (r < 0) {
                _cleanup_free_ char *e = cescape(cgroup);
                char helper[64];

                if (pid > 0)
                        (void) snprintf(helper, sizeof(helper), "process %" PRIu32, pid);
                switch (r) {
                case -ESRCH:
                        return sd_bus_error_setf(error, TONARI_ERROR_NO_SUCH_PROCESS, "No process %" PRIu32 ".", pid);
                case -EPERM:
                case -EBADF:
                case -EBADMSG: {
                        const BorrowTarget *t = borrow_manager_find_target(bm, s->name);

                        errno = -r;
                        return sd_bus_error_setf(error, TONARI_ERROR_KERNEL_CHARGE_REFUSED,
                                                 "The kernel refused to charge %s to slice '%s' (cpu.cfs_charge_procs of "
                                                 "cgroup /%s): %m.",
                                                 pid > 0 ? helper : "the helper", s->name,
                                                 t && t->kernel_cgroup ? t->kernel_cgroup : "?");
                }
                case -ENOENT:
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "No cgroup '%s'.", strna(e));
                case -EEXIST:
                        return sd_bus_error_setf(error, TONARI_ERROR_PROXY_EXISTS, "%s%s%s has a proxy already.",
                                                 pid > 0 ? helper : "cgroup '", pid > 0 ? "" : strna(e),
                                                 pid > 0 ? "" : "'");
                case -ELOOP:
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "%s%s%s is inside slice '%s' or contains it: its CPU time is that "
                                                 "slice's already.",
                                                 pid > 0 ? helper : "cgroup '", pid > 0 ? "" : strna(e),
                                                 pid > 0 ? "" : "'", s->name);
                case -EINVAL:
                        why = pid > 0 ? "a kernel thread, PID 1 or tonarid itself cannot be a helper"
                                      : "expected an absolute, normalized cgroup path without whitespace, as in "
                                        "/proc/PID/cgroup";
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid helper %s%s%s: %s.",
                                                 pid > 0 ? helper : "'", pid > 0 ? "" : strna(e), pid > 0 ? "" : "'",
                                                 why);
                default:
                        return sd_bus_error_set_errnof(error, r, "Failed to add a proxy for slice '%s': %m", s->name);
                }
        }

        if (p->pid > 0)
                log_struct(LOG_INFO, "TONARI_SLICE=%s", s->name, "TONARI_PROXY_ID=%" PRIu32, p->id,
                           "TONARI_HELPER_PID=%i", (int) p->pid, "TONARI_CALLER_UID=%d", (int) bus_sender_uid(m),
                           LOG_MESSAGE("Added proxy %" PRIu32 ": CPU time of process %i is charged to slice '%s'.",
                                       p->id, (int) p->pid, s->name));
        else
                log_struct(LOG_INFO, "TONARI_SLICE=%s", s->name, "TONARI_PROXY_ID=%" PRIu32, p->id,
                           "TONARI_HELPER_CGROUP=%s", p->cgroup, "TONARI_CALLER_UID=%d", (int) bus_sender_uid(m),
                           LOG_MESSAGE("Added proxy %" PRIu32 ": CPU time of cgroup %s is charged to slice '%s'.",
                                       p->id, p->cgroup, s->name));
        return sd_bus_reply_method_return(m, "u", p->id);
}

int bus_borrow_method_remove_proxy(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        BorrowManager *bm = manager_of(userdata);
        BorrowProxy *p;
        uint32_t id;
        int r;

        r = bus_verify_privileged(m, error);
        if (r < 0)
                return r;
        r = check_manager(bm, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "u", &id);
        if (r < 0)
                return r;
        p = borrow_manager_find_proxy(bm, id);
        if (!p)
                return sd_bus_error_setf(error, TONARI_ERROR_NO_SUCH_PROXY, "No proxy %" PRIu32 ".", id);
        r = borrow_manager_remove_proxy(bm, p, "asked to");
        if (r < 0 && p->kernel)
                return sd_bus_error_set_errnof(error, r,
                                               "Failed to remove proxy %" PRIu32 " (stop the kernel charging process %d "
                                               "to slice '%s'): %m",
                                               id, (int) p->pid, p->target);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to remove proxy %" PRIu32 ": %m", id);
        return sd_bus_reply_method_return(m, NULL);
}

static int append_proxies(sd_bus_message *reply, void *userdata) {
        BorrowManager *bm = userdata;
        int r;

        for (BorrowProxy *p = bm->proxies; p; p = p->next) {
                r = sd_bus_message_append(reply, "(usustt)", p->id, p->target, (uint32_t) p->pid, strempty(p->cgroup),
                                          p->last_usec, borrow_proxy_charged(p));
                if (r < 0)
                        return r;
        }
        return 0;
}

int bus_borrow_method_list_proxies(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return reply_list(m, manager_of(userdata), "(usustt)", append_proxies, error);
}

/* ---- ListBorrowing and org.tonari.Borrowing1 */

static const BorrowAccount zero_account;

/* The account of a slice: all zero for a slice that was never charged. */
static const BorrowTarget *slice_target(BorrowManager *bm, Slice *s) {
        BorrowTarget *t = borrow_manager_find_target(bm, s->name);

        if (t && t->slice_id != 0 && t->slice_id != s->id)
                return NULL; /* a previous slice of that name */
        return t;
}

/*
 * The account as callers see it: on the kernel path the debt is the kernel's (what
 * cpu.cfs_borrowing_us says: charges handed over, and what on-behalf charges could not take from the
 * current period), and what was handed over and is no longer outstanding has been repaid.
 */
static BorrowAccount target_view(BorrowTarget *t) {
        BorrowAccount a = t ? t->account : zero_account;
        usec_t debt = 0;

        if (t && t->enforcement == BORROW_ENFORCEMENT_KERNEL && borrow_target_kernel_debt(t, &debt) >= 0) {
                uint64_t owed = a.forgiven_usec + debt;

                a.debt_usec += debt;
                a.repaid_usec += a.borrowed_usec > owed ? a.borrowed_usec - owed : 0;
        }
        return a;
}

static int append_borrowing(sd_bus_message *reply, void *userdata) {
        BorrowManager *bm = userdata;
        int r;

        SLICE_MANAGER_FOREACH(s, bm->slices) {
                BorrowTarget *t;
                BorrowAccount view;
                const BorrowAccount *a = &view;

                if (s->state == SLICE_CREATING)
                        continue;
                t = (BorrowTarget *) slice_target(bm, s);
                view = target_view(t);
                r = sd_bus_message_append(reply, "(sttttttttttt)", s->name, a->borrowed_usec, a->debt_usec,
                                          a->repaid_usec, a->forgiven_usec, a->periods_shortened,
                                          t ? t->limit_usec : USEC_INFINITY, t ? t->period_usec : 0,
                                          a->forgiven_cap_usec, a->forgiven_floor_usec, a->forgiven_overrun_usec,
                                          t ? t->dropped_usec : 0);
                if (r < 0)
                        return r;
        }
        return 0;
}

int bus_borrow_method_list_borrowing(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return reply_list(m, manager_of(userdata), "(sttttttttttt)", append_borrowing, error);
}

static int borrowing_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                          sd_bus_error *error) {
        BorrowManager *bm = manager_of(userdata);

        (void) bus;
        (void) interface;
        (void) error;
        /* Without a manager (introspection) every path below the prefix stands for a slice. */
        if (!userdata) {
                *found = NULL;
                return 1;
        }
        if (!bm || !bm->slices || !slice_manager_find_by_path(bm->slices, path))
                return 0;
        *found = bm;
        return 1;
}

static int property_get_account(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        BorrowManager *bm = userdata;
        Slice *s = slice_manager_find_by_path(bm->slices, path);
        BorrowTarget *t = s ? (BorrowTarget *) slice_target(bm, s) : NULL;
        BorrowAccount view;
        const BorrowAccount *a = &view;
        uint64_t v;

        (void) bus;
        (void) interface;
        (void) error;
        if (streq(property, "Enforcement"))
                return sd_bus_message_append(reply, "s",
                                             borrow_enforcement_to_string(t ? t->enforcement : BORROW_ENFORCEMENT_NONE));
        view = target_view(t);
        if (streq(property, "BorrowedUSec"))
                v = a->borrowed_usec;
        else if (streq(property, "DebtUSec"))
                v = a->debt_usec;
        else if (streq(property, "RepaidUSec"))
                v = a->repaid_usec;
        else if (streq(property, "ForgivenUSec"))
                v = a->forgiven_usec;
        else if (streq(property, "ForgivenCapUSec"))
                v = a->forgiven_cap_usec;
        else if (streq(property, "ForgivenFloorUSec"))
                v = a->forgiven_floor_usec;
        else if (streq(property, "ForgivenOverrunUSec"))
                v = a->forgiven_overrun_usec;
        else if (streq(property, "DroppedUSec"))
                v = t ? t->dropped_usec : 0;
        else if (streq(property, "OverrunUSec"))
                v = a->overrun_usec;
        else if (streq(property, "PeriodsShortened"))
                v = a->periods_shortened;
        else if (streq(property, "CPUQuotaLimitUSec"))
                v = t ? t->limit_usec : USEC_INFINITY;
        else
                return -EINVAL;
        return sd_bus_message_append(reply, "t", v);
}

/* Counters change every period: read on Get, never announced (like the slice's usage). */
static const sd_bus_vtable borrowing_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("BorrowedUSec", "t", property_get_account, 0, 0),
        SD_BUS_PROPERTY("DebtUSec", "t", property_get_account, 0, 0),
        SD_BUS_PROPERTY("RepaidUSec", "t", property_get_account, 0, 0),
        SD_BUS_PROPERTY("ForgivenUSec", "t", property_get_account, 0, 0),
        SD_BUS_PROPERTY("ForgivenCapUSec", "t", property_get_account, 0, 0),
        SD_BUS_PROPERTY("ForgivenFloorUSec", "t", property_get_account, 0, 0),
        SD_BUS_PROPERTY("ForgivenOverrunUSec", "t", property_get_account, 0, 0),
        SD_BUS_PROPERTY("DroppedUSec", "t", property_get_account, 0, 0),
        SD_BUS_PROPERTY("OverrunUSec", "t", property_get_account, 0, 0),
        SD_BUS_PROPERTY("PeriodsShortened", "t", property_get_account, 0, 0),
        SD_BUS_PROPERTY("CPUQuotaLimitUSec", "t", property_get_account, 0, 0),
        SD_BUS_PROPERTY("Enforcement", "s", property_get_account, 0, 0),
        SD_BUS_VTABLE_END,
};

int bus_borrow_add_objects(sd_bus *bus, BorrowManager **manager) {
        return sd_bus_add_fallback_vtable(bus, NULL, SLICE_OBJECT_PREFIX, BORROWING_INTERFACE, borrowing_vtable,
                                          borrowing_find, manager);
}
