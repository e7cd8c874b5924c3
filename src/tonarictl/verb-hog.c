/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "alloc-util.h"
#include "log.h"
#include "parse-util.h"
#include "string-util.h"
#include "strv.h"
#include "table.h"
#include "time-util.h"
#include "tonarictl.h"
#include "verb-hog.h"

/* ListManagedProcesses() → a(susssdddt): slice, pid, comm, class, limit, cpu %, io B/s, delay %, since. */
static int process_row(sd_bus_message *reply, Table *t, json_object *o) {
        char pid_s[16], cpu_s[16], io_s[32], delay_s[16], since_s[FORMAT_TIMESTAMP_MAX];
        const char *slice, *comm, *class, *limit;
        double cpu, io, delay;
        uint32_t pid;
        uint64_t since;
        int r;

        r = sd_bus_message_read(reply, "(susssdddt)", &slice, &pid, &comm, &class, &limit, &cpu, &io, &delay, &since);
        if (r <= 0)
                return r;
        (void) snprintf(pid_s, sizeof(pid_s), "%" PRIu32, pid);
        (void) snprintf(cpu_s, sizeof(cpu_s), "%.1f%%", cpu);
        if (io >= 1e6)
                (void) snprintf(io_s, sizeof(io_s), "%.1fM", io / 1e6);
        else if (io >= 1e3)
                (void) snprintf(io_s, sizeof(io_s), "%.1fK", io / 1e3);
        else
                (void) snprintf(io_s, sizeof(io_s), "%.0f", io);
        if (delay >= 0)
                (void) snprintf(delay_s, sizeof(delay_s), "%.1f%%", delay);
        r = table_add_row(t, slice, pid_s, comm, class, isempty(limit) ? NULL : limit, cpu_s, io_s,
                          delay >= 0 ? delay_s : NULL,
                          since > 0 ? format_timestamp(since_s, sizeof(since_s), since) : NULL);
        if (r < 0)
                return -ENOMEM;

        json_object_object_add(o, "slice", json_object_new_string(slice));
        json_object_object_add(o, "pid", json_object_new_uint64(pid));
        json_object_object_add(o, "comm", json_object_new_string(comm));
        json_object_object_add(o, "class", json_object_new_string(class));
        json_object_object_add(o, "limit", isempty(limit) ? NULL : json_object_new_string(limit));
        json_object_object_add(o, "cpu_percent", json_object_new_double(cpu));
        json_object_object_add(o, "io_bytes_per_sec", json_object_new_double(io));
        json_object_object_add(o, "delay_percent", delay >= 0 ? json_object_new_double(delay) : NULL);
        json_object_object_add(o, "since_usec", since > 0 ? json_object_new_uint64(since) : NULL);
        return 1;
}

/* One listing: as a table (or "No managed processes."), or as one JSON array. */
static int list_once(void) {
        Table *t = table_new(9, "SLICE", "PID", "COMM", "CLASS", "LIMIT", "CPU", "IO/S", "DELAY", "SINCE");

        return print_manager_list("ListManagedProcesses", "list managed processes", "(susssdddt)", t, process_row,
                                  "managed processes",
                                  "CPU, IO/S, DELAY: over the last monitor interval; DELAY: waiting for a CPU or for "
                                  "block I/O (needs delay accounting).");
}

static int hog_list(int argc, char *argv[]) {
        return list_once();
}

/* A live table, refreshed every SECONDS (1 by default) until interrupted; with --json one array per line. */
static int hog_watch(int argc, char *argv[]) {
        usec_t every = USEC_PER_SEC;
        int r;

        if (argc > 1 && (parse_sec(argv[1], &every) < 0 || every < 100 * USEC_PER_MSEC || every == USEC_INFINITY)) {
                _cleanup_free_ char *e = cescape(argv[1]);
                return log_error_errno(EINVAL, "Invalid refresh interval '%s': expected a time span of at least 100ms.",
                                       strna(e));
        }
        for (;;) {
                if (arg_json == JSON_OFF && isatty(STDOUT_FILENO))
                        fputs("\033[H\033[2J", stdout); /* home, clear: a table that stays in place */
                r = list_once();
                if (r < 0)
                        return r;
                (void) fflush(stdout);
                (void) usleep((useconds_t) every);
        }
}

/* hog set SLICE no|yes|observe [MonitorIntervalSec=TIME] [WindowSec=TIME] [IOLimit=BYTES/s] [CPUWeight=N] */
static int hog_set(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL;
        const char *name = argv[1], *mode = argv[2];
        int r;

        r = check_slice_name(name);
        if (r < 0)
                return r;
        if (!STR_IN_SET(mode, "no", "yes", "observe")) {
                _cleanup_free_ char *e = cescape(mode);
                return log_error_errno(EINVAL, "Invalid mode '%s': expected no, yes or observe.", strna(e));
        }
        r = connect_bus(&bus);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &call, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "SetHogLimiting");
        if (r >= 0)
                r = sd_bus_message_append(call, "ss", name, mode);
        if (r >= 0)
                r = sd_bus_message_open_container(call, 'a', "(sv)");
        if (r < 0)
                return log_oom();
        for (int i = 3; i < argc; i++) {
                _cleanup_free_ char *key = NULL, *e = cescape(argv[i]);
                const char *eq = strchr(argv[i], '='), *value;
                uint64_t v;
                usec_t u;

                if (!eq)
                        return log_error_errno(EINVAL, "Invalid assignment '%s': expected KEY=VALUE.", strna(e));
                key = strndup(argv[i], (size_t) (eq - argv[i]));
                if (!key)
                        return log_oom();
                value = eq + 1;
                if (streq(key, "MonitorIntervalSec") || streq(key, "WindowSec")) {
                        if (parse_sec(value, &u) < 0 || u == 0 || u == USEC_INFINITY)
                                return log_error_errno(EINVAL, "Invalid '%s': expected a time span such as 3s.",
                                                       strna(e));
                        r = sd_bus_message_append(call, "(sv)",
                                                  streq(key, "WindowSec") ? "WindowUSec" : "MonitorIntervalUSec", "t",
                                                  (uint64_t) u);
                } else if (streq(key, "IOLimit")) {
                        /* Bytes per second, K/M/G in 1000s as systemd's bandwidth settings. */
                        if (parse_size(value, 1000, &v) < 0 || v == 0)
                                return log_error_errno(EINVAL, "Invalid '%s': expected bytes per second, e.g. 5M.",
                                                       strna(e));
                        r = sd_bus_message_append(call, "(sv)", "IOLimitBytesPerSec", "t", v);
                } else if (streq(key, "CPUWeight")) {
                        if (safe_atou64(value, &v) < 0 || v < 1 || v > 10000)
                                return log_error_errno(EINVAL, "Invalid '%s': expected 1 to 10000.", strna(e));
                        r = sd_bus_message_append(call, "(sv)", "CPUWeight", "t", v);
                } else if (streq(key, "CPUHogPercent")) {
                        r = parse_percent(value);
                        if (r < 1)
                                return log_error_errno(EINVAL, "Invalid '%s': expected 1%% to 100%%.", strna(e));
                        r = sd_bus_message_append(call, "(sv)", "CPUHogPercent", "t", (uint64_t) r);
                } else
                        return log_error_errno(EINVAL,
                                               "Unknown setting in '%s': expected MonitorIntervalSec=, WindowSec=, "
                                               "IOLimit=, CPUWeight= or CPUHogPercent=.",
                                               strna(e));
                if (r < 0)
                        return log_oom();
        }
        r = sd_bus_message_close_container(call);
        if (r < 0)
                return log_oom();
        r = sd_bus_call(bus, call, 0, &error, NULL);
        if (r < 0) {
                if (asprintf(&what, "set hog limiting of slice '%s'", name) < 0)
                        return log_oom();
                return report_bus_error(what, &error, r);
        }
        return 0;
}

static int call_with_pids(const char *member, const char *verb, int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ uint32_t *pids = NULL;
        _cleanup_free_ char *what = NULL;
        const char *name = argv[1];
        int r;

        r = check_slice_name(name);
        if (r < 0)
                return r;
        pids = new(uint32_t, argc - 2);
        if (!pids)
                return log_oom();
        for (int i = 2; i < argc; i++)
                if (safe_atou32(argv[i], &pids[i - 2]) < 0 || pids[i - 2] == 0 || pids[i - 2] > INT32_MAX) {
                        _cleanup_free_ char *e = cescape(argv[i]);
                        return log_error_errno(EINVAL, "Invalid PID '%s'.", strna(e));
                }
        r = connect_bus(&bus);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &call, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, member);
        if (r >= 0)
                r = sd_bus_message_append(call, "s", name);
        if (r >= 0)
                r = sd_bus_message_append_array(call, 'u', pids, (size_t) (argc - 2) * sizeof(uint32_t));
        if (r < 0)
                return log_oom();
        r = sd_bus_call(bus, call, 0, &error, NULL);
        if (r < 0) {
                if (asprintf(&what, "%s processes %s slice '%s'", verb, streq(verb, "register") ? "in" : "of",
                             name) < 0)
                        return log_oom();
                return report_bus_error(what, &error, r);
        }
        return 0;
}

static int hog_register(int argc, char *argv[]) {
        return call_with_pids("RegisterProcesses", "register", argc, argv);
}

static int hog_unregister(int argc, char *argv[]) {
        return call_with_pids("UnregisterProcesses", "unregister", argc, argv);
}

static const SubVerb hog_verbs[] = {
        { "list", "", 0, 0, hog_list },
        { "watch", " [SECONDS]", 0, 1, hog_watch },
        { "set", " SLICE no|yes|observe [SETTING...]", 2, ARGS_ANY, hog_set },
        { "register", " SLICE PID...", 2, ARGS_ANY, hog_register },
        { "unregister", " SLICE PID...", 2, ARGS_ANY, hog_unregister },
};

int verb_hog(int argc, char *argv[]) {
        return dispatch_subverb(hog_verbs, ELEMENTSOF(hog_verbs), "list, watch, set, register or unregister", hog_list,
                                argc, argv);
}
