/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "log.h"
#include "parse-util.h"
#include "path-util.h"
#include "string-util.h"
#include "table.h"
#include "time-util.h"
#include "tonarictl.h"
#include "verb-borrow.h"

static const char *fmt_usec(char buf[static FORMAT_TIMESPAN_MAX], uint64_t u) {
        if (u == UINT64_MAX)
                return NULL; /* prints as "-" */
        return format_timespan(buf, FORMAT_TIMESPAN_MAX, u, USEC_PER_MSEC / 10);
}

/* The bus borrow_list() reads each slice's Enforcement property on (not part of ListBorrowing()). */
static sd_bus *enforcement_bus;

/* "kernel", "userspace", or "" for a slice never charged; NULL if it cannot be read. */
static char *slice_enforcement(const char *name) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL;
        char *v = NULL;

        if (!enforcement_bus || sd_bus_path_encode("/org/tonari/slice", name, &path) < 0 ||
            sd_bus_get_property_string(enforcement_bus, "org.tonari.Manager1", path, "org.tonari.Borrowing1",
                                       "Enforcement", &error, &v) < 0)
                return NULL;
        return v;
}

/* ListBorrowing() → a(sttttttttttt): name, borrowed, debt, repaid, forgiven, shortened, limit, period,
 * forgiven for the debt cap, for the floor, for overrun, and dropped. */
static int borrow_row(sd_bus_message *reply, Table *t, json_object *o) {
        char b[FORMAT_TIMESPAN_MAX], d[FORMAT_TIMESPAN_MAX], rp[FORMAT_TIMESPAN_MAX], f[FORMAT_TIMESPAN_MAX],
                l[2 * FORMAT_TIMESPAN_MAX + 8], q[FORMAT_TIMESPAN_MAX], p[FORMAT_TIMESPAN_MAX], sh[21],
                dr[FORMAT_TIMESPAN_MAX], why[64];
        uint64_t borrowed, debt, repaid, forgiven, shortened, limit, period, fcap, ffloor, foverrun, dropped;
        const char *name;
        int r;

        r = sd_bus_message_read(reply, "(sttttttttttt)", &name, &borrowed, &debt, &repaid, &forgiven, &shortened,
                                &limit, &period, &fcap, &ffloor, &foverrun, &dropped);
        if (r <= 0)
                return r;
        (void) snprintf(sh, sizeof(sh), "%" PRIu64, shortened);
        if (limit != UINT64_MAX)
                (void) snprintf(l, sizeof(l), "%s/%s", fmt_usec(q, limit), fmt_usec(p, period));
        /* Why it was forgiven, largest share first: the policy a reader would change. */
        (void) snprintf(why, sizeof(why), "%s", forgiven == 0 ? ""
                        : fcap >= ffloor && fcap >= foverrun ? "debt-cap"
                        : ffloor >= foverrun ? "floor" : "overrun");
        _cleanup_free_ char *enforcement = slice_enforcement(name);
        r = table_add_row(t, name, fmt_usec(b, borrowed), fmt_usec(d, debt), fmt_usec(rp, repaid),
                          fmt_usec(f, forgiven), forgiven == 0 ? NULL : why, fmt_usec(dr, dropped), sh,
                          limit == UINT64_MAX ? NULL : l, isempty(enforcement) ? NULL : enforcement);
        if (r < 0)
                return -ENOMEM;
        json_object_object_add(o, "enforcement", isempty(enforcement) ? NULL : json_object_new_string(enforcement));

        json_object_object_add(o, "slice", json_object_new_string(name));
        json_object_object_add(o, "borrowed_usec", json_object_new_uint64(borrowed));
        json_object_object_add(o, "debt_usec", json_object_new_uint64(debt));
        json_object_object_add(o, "repaid_usec", json_object_new_uint64(repaid));
        json_object_object_add(o, "forgiven_usec", json_object_new_uint64(forgiven));
        json_object_object_add(o, "forgiven_cap_usec", json_object_new_uint64(fcap));
        json_object_object_add(o, "forgiven_floor_usec", json_object_new_uint64(ffloor));
        json_object_object_add(o, "forgiven_overrun_usec", json_object_new_uint64(foverrun));
        json_object_object_add(o, "dropped_usec", json_object_new_uint64(dropped));
        json_object_object_add(o, "periods_shortened", json_object_new_uint64(shortened));
        json_object_object_add(o, "limit_usec", limit == UINT64_MAX ? NULL : json_object_new_uint64(limit));
        json_object_object_add(o, "period_usec",
                               limit == UINT64_MAX ? NULL : json_object_new_uint64(period));
        return 1;
}

static int borrow_list(int argc, char *argv[]) {
        Table *t = table_new(10, "SLICE", "BORROWED", "DEBT", "REPAID", "FORGIVEN", "WHY", "DROPPED", "SHORTENED",
                             "LIMIT", "ENFORCEMENT");
        int r;

        /* Without it the column shows "-"; the list itself reports any bus error. */
        (void) connect_bus(&enforcement_bus);
        r = print_manager_list("ListBorrowing", "list borrowing", "(sttttttttttt)", t, borrow_row, "slices",
                                  "FORGIVEN: written off by policy; WHY: the largest reason (debt-cap: charges beyond\n"
                                  "MaxDebtSec=; floor: the quota (MinQuotaSec=) a slice keeps in debt; overrun: a debt\n"
                                  "of overrun alone).\n"
                                  "DROPPED: helper CPU time proxies saw but could not charge.\n"
                                  "LIMIT: the shortened quota per period in force while a slice repays its debt.\n"
                                  "ENFORCEMENT: kernel (tonari's kernel repays debts and charges helper processes as\n"
                                  "they run) or userspace (a shortened quota written every period).");
        enforcement_bus = sd_bus_flush_close_unref(enforcement_bus);
        return r;
}

static int borrow_charge(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL;
        const char *name = argv[1];
        usec_t usec;
        int r;

        r = check_slice_name(name);
        if (r < 0)
                return r;
        /* A bare number is in µs, as ChargeCPU() takes it; "20ms", "1.5s" as in systemd. */
        if (parse_time(argv[2], 1, &usec) < 0 || usec == 0 || usec == USEC_INFINITY) {
                _cleanup_free_ char *e = cescape(argv[2]);
                return log_error_errno(EINVAL, "Invalid CPU time '%s': expected a time span such as 20ms or 1500us.",
                                       strna(e));
        }

        r = connect_bus(&bus);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "ChargeCPU", &error, NULL, "st", name,
                               (uint64_t) usec);
        if (r < 0) {
                if (asprintf(&what, "charge slice '%s'", name) < 0)
                        return log_oom();
                return report_bus_error(what, &error, r);
        }
        return 0;
}

static int borrow_add_proxy(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL;
        const char *name = argv[1], *helper = argv[2], *cgroup = "";
        uint32_t pid = 0, id;
        int r;

        r = check_slice_name(name);
        if (r < 0)
                return r;
        if (helper[0] == '/')
                cgroup = helper;
        else if (safe_atou32(helper, &pid) < 0 || pid == 0 || pid > INT32_MAX) {
                _cleanup_free_ char *e = cescape(helper);
                return log_error_errno(EINVAL,
                                       "Invalid helper '%s': expected a PID or a cgroup path as in /proc/PID/cgroup "
                                       "(starting with '/').",
                                       strna(e));
        }

        r = connect_bus(&bus);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "AddProxy", &error, &reply, "sus",
                               name, pid, cgroup);
        if (r < 0) {
                if (asprintf(&what, "add a proxy for slice '%s'", name) < 0)
                        return log_oom();
                return report_bus_error(what, &error, r);
        }
        r = sd_bus_message_read(reply, "u", &id);
        if (r < 0)
                return log_parse_error("AddProxy", r);
        if (arg_json != JSON_OFF) {
                _cleanup_json_ json_object *j = json_object_new_object();
                if (!j)
                        return log_oom();
                json_object_object_add(j, "id", json_object_new_uint64(id));
                return print_json(j);
        }
        printf("%" PRIu32 "\n", id);
        return 0;
}

static int borrow_remove_proxy(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL;
        uint32_t id;
        int r;

        if (safe_atou32(argv[1], &id) < 0 || id == 0) {
                _cleanup_free_ char *e = cescape(argv[1]);
                return log_error_errno(EINVAL, "Invalid proxy ID '%s': expected a positive number.", strna(e));
        }
        r = connect_bus(&bus);
        if (r < 0)
                return r;
        r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "RemoveProxy", &error, NULL, "u", id);
        if (r < 0) {
                if (asprintf(&what, "remove proxy %" PRIu32, id) < 0)
                        return log_oom();
                return report_bus_error(what, &error, r);
        }
        return 0;
}

/* ListProxies() → a(usustt): id, slice, pid (0 for a cgroup), cgroup ("" for a process), the helper's CPU time at the last sample, charged. */
static int proxy_row(sd_bus_message *reply, Table *t, json_object *o) {
        char id_s[11], helper[32], c[FORMAT_TIMESPAN_MAX];
        const char *slice, *cgroup;
        uint32_t id, pid;
        uint64_t cpu, charged;
        int r;

        r = sd_bus_message_read(reply, "(usustt)", &id, &slice, &pid, &cgroup, &cpu, &charged);
        if (r <= 0)
                return r;
        (void) snprintf(id_s, sizeof(id_s), "%" PRIu32, id);
        (void) snprintf(helper, sizeof(helper), "process %" PRIu32, pid);
        r = table_add_row(t, id_s, slice, fmt_usec(c, charged), pid > 0 ? helper : cgroup);
        if (r < 0)
                return -ENOMEM;

        json_object_object_add(o, "id", json_object_new_uint64(id));
        json_object_object_add(o, "slice", json_object_new_string(slice));
        json_object_object_add(o, "pid", pid > 0 ? json_object_new_uint64(pid) : NULL);
        json_object_object_add(o, "cgroup", pid > 0 ? NULL : json_object_new_string(cgroup));
        json_object_object_add(o, "charged_usec", json_object_new_uint64(charged));
        return 1;
}

static int borrow_proxies(int argc, char *argv[]) {
        Table *t = table_new(4, "ID", "SLICE", "CHARGED", "HELPER");

        return print_manager_list("ListProxies", "list proxies", "(usustt)", t, proxy_row, "proxies", NULL);
}

static const SubVerb borrow_verbs[] = {
        { "list", "", 0, 0, borrow_list },
        { "charge", " SLICE TIME", 2, 2, borrow_charge },
        { "add-proxy", " SLICE PID|CGROUP", 2, 2, borrow_add_proxy },
        { "remove-proxy", " ID", 1, 1, borrow_remove_proxy },
        { "proxies", "", 0, 0, borrow_proxies },
};

int verb_borrow(int argc, char *argv[]) {
        return dispatch_subverb(borrow_verbs, ELEMENTSOF(borrow_verbs), "list, charge, add-proxy, remove-proxy or proxies",
                                borrow_list, argc, argv);
}
