/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "alloc-util.h"
#include "bus-json.h"
#include "log.h"
#include "parse-util.h"
#include "path-util.h"
#include "slice-assign.h"
#include "slice-format.h"
#include "string-util.h"
#include "strv.h"
#include "time-util.h"
#include "tonarictl.h"
#include "verb-slice.h"

static int append_assignments(sd_bus_message *m, char **assignments) {
        int r;

        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return log_error_errno(r, "Failed to build the request: %m");
        STRV_FOREACH(a, assignments) {
                _cleanup_free_ char *message = NULL;

                r = slice_assignment_append(m, *a, &message);
                /* A bad value (-EINVAL) or an unknown name (-ENOENT): both the user's mistake. */
                if ((r == -EINVAL || r == -ENOENT) && message) {
                        log_error("%s", message);
                        return -EINVAL;
                }
                if (r < 0)
                        return log_error_errno(r == -ENOENT ? EINVAL : r, "Failed to build the request: %m");
        }
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return log_error_errno(r, "Failed to build the request: %m");
        return 0;
}

/* CreateSlice(s name, a(sv) properties) and SetSliceProperties(s name, a(sv) properties). */
static int call_with_assignments(const char *member, const char *action, const char *name,
                                 char **assignments) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL;
        int r;

        r = check_slice_name(name);
        if (r < 0)
                return r;

        /* Messages need a connection, so the assignments are checked after connecting, but before
         * anything is sent. */
        r = connect_bus(&bus);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, member);
        if (r >= 0)
                r = sd_bus_message_append_basic(m, 's', name);
        if (r < 0)
                return log_error_errno(r, "Failed to build the request: %m");
        r = append_assignments(m, assignments);
        if (r < 0)
                return r;

        r = sd_bus_call(bus, m, 0, &error, NULL);
        if (r < 0) {
                if (asprintf(&what, "%s slice '%s'", action, name) < 0)
                        return log_oom();
                return report_bus_error(what, &error, r);
        }
        return 0;
}

static int slice_create(int argc, char *argv[]) {
        return call_with_assignments("CreateSlice", "create", argv[1], argv + 2);
}

static int slice_set(int argc, char *argv[]) {
        return call_with_assignments("SetSliceProperties", "change", argv[1], argv + 2);
}

static int slice_show(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL, *properties = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL, *text = NULL;
        const char *name = argv[1], *path;
        size_t size = 0;
        FILE *f;
        int r;

        r = check_slice_name(name);
        if (r < 0)
                return r;
        if (asprintf(&what, "get slice '%s'", name) < 0)
                return log_oom();

        r = connect_bus(&bus);
        if (r < 0)
                return r;

        r = call_read_only(bus, MANAGER_PATH, MANAGER_INTERFACE, "GetSlice", &error, &reply, "s", name);
        if (r < 0)
                return report_bus_error(what, &error, r);
        r = sd_bus_message_read_basic(reply, 'o', &path);
        if (r < 0)
                return log_parse_error("GetSlice", r);

        r = call_read_only(bus, path, "org.freedesktop.DBus.Properties", "GetAll", &error, &properties, "s",
                           SLICE_INTERFACE);
        if (r < 0) {
                /* Removed between the two calls: the same answer as if it had been gone before. */
                if (sd_bus_error_has_names(&error, SD_BUS_ERROR_UNKNOWN_OBJECT,
                                           SD_BUS_ERROR_UNKNOWN_INTERFACE)) {
                        log_error("Failed to %s: the slice was removed meanwhile.", what);
                        return -ENOENT;
                }
                return report_bus_error(what, &error, r);
        }

        if (arg_json != JSON_OFF) {
                _cleanup_json_ json_object *j = NULL;

                r = bus_message_read_json(properties, &j);
                if (r < 0)
                        return log_parse_error("GetAll", r);
                return print_json(j);
        }

        /* Rendered in full first, so that a malformed reply prints nothing half-way. */
        f = open_memstream(&text, &size);
        if (!f)
                return log_oom();
        r = slice_properties_print(properties, f);
        if (fclose(f) != 0 && r >= 0)
                r = -ENOMEM;
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_parse_error("GetAll", r);
        fputs(text, stdout);
        return 0;
}

static int slice_list(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ SliceListEntry *entries = NULL;
        size_t n;
        int r;

        r = call_manager_read_only("ListSlices", "list slices", &bus, &reply);
        if (r < 0)
                return r;
        r = slice_list_read(reply, &entries, &n);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_parse_error("ListSlices", r);

        if (arg_json != JSON_OFF) {
                _cleanup_json_ json_object *j = NULL;

                r = slice_list_to_json(entries, n, &j);
                if (r < 0)
                        return log_oom();
                return print_json(j);
        }
        r = slice_list_print(entries, n, stdout, arg_legend);
        if (r < 0)
                return log_oom();
        return 0;
}

static int slice_attach(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ uint32_t *pids = NULL;
        _cleanup_free_ char *what = NULL;
        const char *name = argv[1];
        size_t n = (size_t) argc - 2;
        int r;

        r = check_slice_name(name);
        if (r < 0)
                return r;

        pids = new(uint32_t, n);
        if (!pids)
                return log_oom();
        for (size_t i = 0; i < n; i++) {
                const char *s = argv[2 + i];

                /* Decimal digits only: no sign, no blanks, no 0x; 0 would mean "the caller" in some APIs. */
                if (safe_atou32(s, &pids[i]) < 0 || pids[i] == 0 || pids[i] > INT32_MAX) {
                        _cleanup_free_ char *e = cescape(s);
                        if (!e)
                                return log_oom();
                        return log_error_errno(EINVAL, "Invalid PID '%s': expected a positive process ID.",
                                               e);
                }
        }

        r = connect_bus(&bus);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE,
                                           "AttachProcesses");
        if (r >= 0)
                r = sd_bus_message_append_basic(m, 's', name);
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'u', pids, n * sizeof(uint32_t));
        if (r < 0)
                return log_error_errno(r, "Failed to build the request: %m");

        r = sd_bus_call(bus, m, 0, &error, NULL);
        if (r < 0) {
                if (asprintf(&what, "attach processes to slice '%s'", name) < 0)
                        return log_oom();
                return report_bus_error(what, &error, r);
        }
        return 0;
}

static int slice_remove(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL;
        const char *name = argv[1];
        int r;

        r = check_slice_name(name);
        if (r < 0)
                return r;
        if (arg_move_to && streq(arg_move_to, name))
                return log_error_errno(EINVAL, "Cannot move the processes of slice '%s' into itself.", name);

        r = connect_bus(&bus);
        if (r < 0)
                return r;

        /* "" asks the daemon to refuse (SliceBusy) while the slice has processes. */
        r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "RemoveSlice", &error, NULL,
                               "ss", name, strempty(arg_move_to));
        if (r < 0) {
                if (asprintf(&what, "remove slice '%s'", name) < 0)
                        return log_oom();
                return report_bus_error(what, &error, r);
        }
        return 0;
}

/* ---- slice migrate NAME NODES [SETTING=VALUE...] [--wait] */

#define JOB_INTERFACE "org.tonari.Job1"

/* MemoryMigration=, MigrationBatchPages=, MigrationIntervalSec=, MigrationCPUBudget= as a{sv} options. */
static int append_migrate_option(sd_bus_message *m, const char *assignment) {
        _cleanup_free_ char *name = NULL, *e = NULL;
        const char *eq = strchr(assignment, '='), *value;
        uint64_t u;
        usec_t usec;
        int r;

        if (!eq)
                goto invalid;
        name = strndup(assignment, eq - assignment);
        if (!name)
                return log_oom();
        value = eq + 1;
        if (streq(name, "MemoryMigration"))
                return sd_bus_message_append(m, "{sv}", "MemoryMigration", "s", value);
        if (streq(name, "MigrationBatchPages")) {
                if (safe_atou64(value, &u) < 0 || u == 0)
                        goto invalid;
                return sd_bus_message_append(m, "{sv}", "MigrationBatchPages", "t", u);
        }
        if (streq(name, "MigrationIntervalSec")) {
                if (parse_time(value, USEC_PER_SEC, &usec) < 0)
                        goto invalid;
                return sd_bus_message_append(m, "{sv}", "MigrationIntervalUSec", "t", (uint64_t) usec);
        }
        if (streq(name, "MigrationCPUBudget")) {
                r = parse_percent(value);
                if (r < 0 && safe_atou64(value, &u) >= 0 && u <= 100)
                        r = (int) u;
                if (r < 0)
                        goto invalid;
                return sd_bus_message_append(m, "{sv}", "MigrationCPUBudget", "u", (uint32_t) r);
        }
invalid:
        e = cescape(assignment);
        log_error("Invalid migration setting '%s': expected MemoryMigration=eager|periodical|severe|mild, "
                  "MigrationBatchPages=N (pages), MigrationIntervalSec=TIME or MigrationCPUBudget=N%%.", strna(e));
        return -EINVAL;
}

/* One Properties.GetAll() per refresh (a call for each property cost the small test bed's CPUs
 * more than the lazy migration itself saved). */
static void print_progress(sd_bus *bus, const char *path, bool final) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        uint64_t total = 0, moved = 0, failed = 0, hot = 0, rate = 0, cpu_nsec = 0;
        _cleanup_free_ char *state = NULL;
        char bar[41];
        unsigned pct, fill;
        int r;

        r = call_read_only(bus, path, "org.freedesktop.DBus.Properties", "GetAll", &error, &reply, "s", JOB_INTERFACE);
        if (r < 0)
                return; /* the job just ended: JobRemoved follows */
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r > 0) {
                const char *key;
                uint64_t *t = NULL;

                r = sd_bus_message_enter_container(reply, 'e', "sv");
                if (r <= 0)
                        break;
                r = sd_bus_message_read_basic(reply, 's', &key);
                if (r < 0)
                        break;
                if (streq(key, "PagesTotal"))
                        t = &total;
                else if (streq(key, "PagesMoved"))
                        t = &moved;
                else if (streq(key, "PagesFailed"))
                        t = &failed;
                else if (streq(key, "HotPagesMoved"))
                        t = &hot;
                else if (streq(key, "PagesPerSecond"))
                        t = &rate;
                else if (streq(key, "CPUUsageNSec"))
                        t = &cpu_nsec;
                if (t)
                        r = sd_bus_message_read(reply, "v", "t", t);
                else if (streq(key, "State")) {
                        const char *v;
                        r = sd_bus_message_read(reply, "v", "s", &v);
                        if (r >= 0 && free_and_strdup(&state, v) < 0)
                                r = -ENOMEM;
                } else
                        r = sd_bus_message_skip(reply, "v");
                if (r < 0)
                        break;
                r = sd_bus_message_exit_container(reply);
        }
        if (r < 0)
                return;
        pct = total > 0 ? (unsigned) ((moved + failed) * 100 / total) : 0;
        fill = pct * (sizeof(bar) - 1) / 100;
        memset(bar, '#', fill);
        memset(bar + fill, '.', sizeof(bar) - 1 - fill);
        bar[sizeof(bar) - 1] = 0;
        fprintf(stderr, "%s[%s] %3u%% %s: %" PRIu64 "/%" PRIu64 " pages moved (%" PRIu64 " hot), %" PRIu64
                " failed, %" PRIu64 " pages/s, CPU %" PRIu64 " ms%s",
                isatty(STDERR_FILENO) ? "\r" : "", bar, pct, strna(state), moved, total, hot, failed, rate,
                cpu_nsec / 1000000, isatty(STDERR_FILENO) && !final ? "\033[K" : "\n");
        fflush(stderr);
}

typedef struct WaitState {
        const char *path;
        char *result;
} WaitState;

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        WaitState *w = userdata;
        const char *path, *slice, *result;
        uint32_t id;

        if (sd_bus_message_read(m, "uoss", &id, &path, &slice, &result) < 0)
                return 0;
        if (streq(path, w->path) && !w->result)
                w->result = strdup(result);
        return 0;
}

static int slice_migrate(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_slot_unrefp) sd_bus_slot *slot = NULL;
        _cleanup_free_ char *what = NULL, *path_copy = NULL;
        _cleanup_free_ uint8_t *nodes = NULL;
        size_t n_nodes = 0;
        const char *name = argv[1], *path;
        WaitState w = {};
        int r;

        r = check_slice_name(name);
        if (r < 0)
                return r;
        r = parse_index_list(argv[2], 1023, &nodes, &n_nodes);
        if (r < 0 || n_nodes == 0) {
                _cleanup_free_ char *e = cescape(argv[2]);
                return log_error_errno(EINVAL, "Invalid node list '%s': expected NUMA node numbers such as 1 or 0-1.",
                                       strna(e));
        }
        r = connect_bus(&bus);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &m, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "MigrateMemory");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", name);
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'y', nodes, n_nodes);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "{sv}");
        if (r < 0)
                return log_error_errno(r, "Failed to build the request: %m");
        for (int i = 3; i < argc; i++) {
                r = append_migrate_option(m, argv[i]);
                if (r < 0)
                        return r == -EINVAL ? r : log_error_errno(r, "Failed to build the request: %m");
        }
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return log_error_errno(r, "Failed to build the request: %m");

        /* Subscribe before the job exists, so that its end cannot slip by. */
        if (arg_wait) {
                r = sd_bus_match_signal(bus, &slot, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "JobRemoved",
                                        on_job_removed, &w);
                if (r < 0)
                        return log_error_errno(r, "Failed to subscribe to JobRemoved: %m");
        }
        r = sd_bus_call(bus, m, 0, &error, &reply);
        if (r < 0) {
                if (asprintf(&what, "migrate slice '%s'", name) < 0)
                        return log_oom();
                return report_bus_error(what, &error, r);
        }
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return log_error_errno(r, "Failed to read the reply: %m");
        path_copy = strdup(path);
        if (!path_copy)
                return log_oom();
        if (!arg_wait) {
                printf("%s\n", path_copy);
                return 0;
        }
        w.path = path_copy;
        while (!w.result) {
                usec_t until = now(CLOCK_MONOTONIC) + USEC_PER_SEC / 2;
                for (;;) {
                        usec_t t = now(CLOCK_MONOTONIC);
                        r = sd_bus_process(bus, NULL);
                        if (r < 0)
                                return log_error_errno(r, "Lost the connection to tonarid: %m");
                        if (w.result || t >= until)
                                break;
                        if (r == 0 && sd_bus_wait(bus, until - t) < 0)
                                break;
                }
                if (!w.result)
                        print_progress(bus, path_copy, false);
        }
        fprintf(stderr, "%s", isatty(STDERR_FILENO) ? "\n" : "");
        printf("%s %s\n", path_copy, w.result);
        if (streq(w.result, "done"))
                r = 0;
        else
                r = log_error_errno(streq(w.result, "cancelled") ? ECANCELED : EIO, "Migration of slice '%s' %s.", name,
                                    w.result);
        free(w.result);
        return r;
}

static const SubVerb slice_verbs[] = {
        { "create", " NAME [ASSIGNMENT...]", 1, ARGS_ANY, slice_create },
        { "set", " NAME ASSIGNMENT...", 2, ARGS_ANY, slice_set },
        { "show", " NAME", 1, 1, slice_show },
        { "list", "", 0, 0, slice_list },
        { "attach", " NAME PID...", 2, ARGS_ANY, slice_attach },
        { "remove", " NAME [--move-to=SLICE]", 1, 1, slice_remove },
        { "migrate", " NAME NODES [SETTING=VALUE...] [--wait]", 2, ARGS_ANY, slice_migrate },
};

int verb_slice(int argc, char *argv[]) {
        return dispatch_subverb(slice_verbs, ELEMENTSOF(slice_verbs), "create, set, show, list, attach, remove or migrate", NULL, argc, argv);
}
