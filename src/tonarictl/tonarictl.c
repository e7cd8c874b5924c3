/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "alloc-util.h"
#include "bus-errors.h"
#include "bus-json.h"
#include "bus-util.h"
#include "format-util.h"
#include "log.h"
#include "option-util.h"
#include "path-util.h"
#include "string-util.h"
#include "table.h"
#include "time-util.h"
#include "tonarictl.h"
#include "verb-borrow.h"
#include "verb-imagefs.h"
#include "verb-hog.h"
#if TONARICTL_IMAGE
#include "verb-image.h"
#endif
#include "verb-slice.h"

/*
 * Exit codes, documented in tonarictl(1); scripts rely on them, never renumber. Functions return
 * negative errno as everywhere else; exit_status() maps the few that have their own code.
 */
enum {
        EXIT_USAGE = 2,         /* -EINVAL: bad command line or arguments the daemon refused */
        EXIT_NOT_RUNNING = 3,   /* -ESRCH: tonarid is not running, or the bus is unreachable */
        EXIT_ACCESS_DENIED = 4, /* -EACCES, -EPERM: the caller lacks the privileges for this call */
        EXIT_NO_SUCH_SLICE = 5, /* -ENOENT: org.tonari.Error.NoSuchSlice, the named slice does not exist */
};

static int exit_status(int r) {
        if (r >= 0)
                return EXIT_SUCCESS;
        switch (-r) {
        case EINVAL:
                return EXIT_USAGE;
        case ESRCH:
                return EXIT_NOT_RUNNING;
        case EACCES:
        case EPERM:
                return EXIT_ACCESS_DENIED;
        case ENOENT:
                return EXIT_NO_SUCH_SLICE;
        default:
                return EXIT_FAILURE;
        }
}

const char *arg_bus_address = NULL;
JsonMode arg_json = JSON_OFF;
bool arg_legend = true;
const char *arg_move_to = NULL;
bool arg_wait = false;
const char *arg_relay = "unix:/run/tonari-relay/relay.sock";
bool arg_plain_http = false;
bool arg_dry_run = false;
const char *arg_platform = NULL;
const char *arg_upperdir = NULL;
const char *arg_workdir = NULL;

int dispatch_subverb(const SubVerb *verbs, size_t n_verbs, const char *expected, int (*default_verb)(int, char **),
                     int argc, char *argv[]) {
        _cleanup_free_ char *e = NULL;

        if (argc < 2) {
                if (default_verb)
                        return default_verb(argc, argv);
                return log_error_errno(EINVAL, "'%s' needs a command: %s. See '%s --help'.", argv[0], expected,
                                       program_invocation_short_name);
        }
        for (size_t i = 0; i < n_verbs; i++) {
                const SubVerb *v = verbs + i;
                int n = argc - 2;

                if (!streq(argv[1], v->name))
                        continue;
                if (n < v->min_args || n > v->max_args)
                        return log_error_errno(EINVAL, "Wrong number of arguments: expected '%s %s%s'.", argv[0],
                                               v->name, v->arguments);
                return v->run(argc - 1, argv + 1);
        }
        e = cescape(argv[1]);
        if (!e)
                return log_oom();
        return log_error_errno(EINVAL, "Unknown %s command '%s': expected %s.", argv[0], e, expected);
}

int log_parse_error(const char *member, int r) {
        log_error_errno(r, "Failed to parse the reply of %s(): %m", member);
        return -EBADMSG;
}

/* The daemon checks names again; checking here gives exit status 2 without a round trip. */
int check_slice_name(const char *name) {
        _cleanup_free_ char *e = NULL;

        if (name_is_valid(name, NAME_MAX_LEN))
                return 0;
        e = cescape(name);
        if (!e)
                return log_oom();
        return log_error_errno(EINVAL,
                               "Invalid slice name '%s': expected 1 to 64 of the characters "
                               "A-Z a-z 0-9 _ . : @ -, not starting with '.' or '-'.",
                               e);
}

/*
 * Explains a failed connection or call; returns -ESRCH, -EACCES, -ENOENT (no such slice) or the
 * error's errno (see exit_status()). Exit codes 3 and 5 are decided by the error names checked
 * here only, never by an errno that sd-bus derives from some other error name.
 */
int report_bus_error(const char *what, const sd_bus_error *error, int r) {
        bool is_set = sd_bus_error_is_set(error);

        if (sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER)) {
                log_error("tonarid is not running: %s has no owner on %s.", BUS_NAME,
                          arg_bus_address ? arg_bus_address : "the system bus");
                log_error("Start it with 'systemctl start tonarid', or point --bus-address= at its bus.");
                return -ESRCH;
        }
        if (!is_set && (r == -ENOENT || r == -ECONNREFUSED)) {
                log_error("tonarid is not running: cannot connect to %s: %s",
                          arg_bus_address ? arg_bus_address : "the system bus", strerror(ERRNO_VALUE(r)));
                return -ESRCH;
        }
        if (sd_bus_error_has_name(error, SD_BUS_ERROR_ACCESS_DENIED) ||
            (!is_set && (r == -EACCES || r == -EPERM))) {
                log_error("Failed to %s: access denied: %s", what, bus_error_message(error, r));
                log_error("This needs root privileges; try again as root.");
                return -EACCES;
        }

        log_error("Failed to %s: %s", what, bus_error_message(error, r));
        /* With a D-Bus error, the exit status comes from its name alone: sd-bus's errno for a name
         * can mislead (org.freedesktop.DBus.Error.Failed maps to EACCES, UnknownProperty to
         * ENOENT). Everything not named here is a plain failure. */
        if (sd_bus_error_has_name(error, TONARI_ERROR_NO_SUCH_SLICE))
                return -ENOENT;
        if (sd_bus_error_has_name(error, SD_BUS_ERROR_INVALID_ARGS))
                return -EINVAL;
        if (is_set)
                return -EIO;
        return r < 0 ? r : -EIO;
}

int connect_bus(sd_bus **ret) {
        int r;

        r = bus_open(arg_bus_address, "tonarictl", ret);
        if (r < 0)
                return report_bus_error("connect to the bus", NULL, r);
        return 0;
}

int print_json(json_object *j) {
        int flags = arg_json == JSON_PRETTY ? JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED
                                            : JSON_C_TO_STRING_PLAIN;

        puts(json_object_to_json_string_ext(j, flags | JSON_C_TO_STRING_NOSLASHESCAPE));
        return 0;
}

static const char *json_get_string(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
                       ? json_object_get_string(v)
                       : NULL;
}

static uint64_t json_get_uint64(json_object *o, const char *key) {
        json_object *v;
        return json_object_object_get_ex(o, key, &v) ? json_object_get_uint64(v) : 0;
}

int features_to_objects(json_object *status) {
        json_object *features, *list;

        if (!json_object_object_get_ex(status, "Features", &features) ||
            !json_object_is_type(features, json_type_array))
                return 0;
        list = json_object_new_array();
        if (!list)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(features); i++) {
                json_object *f = json_object_array_get_idx(features, i), *o;
                if (json_object_array_length(f) != 3)
                        continue;
                o = json_object_new_object();
                if (!o) {
                        json_object_put(list);
                        return -ENOMEM;
                }
                json_object_object_add(o, "name", json_object_get(json_object_array_get_idx(f, 0)));
                json_object_object_add(o, "available", json_object_get(json_object_array_get_idx(f, 1)));
                json_object_object_add(o, "detail", json_object_get(json_object_array_get_idx(f, 2)));
                json_object_array_add(list, o);
        }
        json_object_object_add(status, "Features", list);
        return 0;
}

static int print_status_human(json_object *s) {
        char since[FORMAT_TIMESTAMP_MAX], ago[FORMAT_TIMESPAN_MAX], cpu[FORMAT_TIMESPAN_MAX],
                mem[FORMAT_BYTES_MAX];
        json_object *files;
        size_t n_files;
        usec_t uptime;

        printf("tonarid %s\n", strna(json_get_string(s, "Version")));
        printf("      State: %s\n", strna(json_get_string(s, "State")));
        printf("        PID: %" PRIu64 "\n", json_get_uint64(s, "PID"));
        uptime = json_get_uint64(s, "UptimeUSec");
        printf("    Started: %s (%s ago)\n",
               format_timestamp(since, sizeof(since), json_get_uint64(s, "StartTimestamp")),
               format_timespan(ago, sizeof(ago), uptime, uptime < USEC_PER_SEC ? USEC_PER_MSEC : USEC_PER_SEC));
        printf("   CPU time: %s\n", format_timespan(cpu, sizeof(cpu), json_get_uint64(s, "CPUUsageUSec"), USEC_PER_MSEC));
        printf("Memory peak: %s\n", format_bytes(mem, sizeof(mem), json_get_uint64(s, "MemoryPeakBytes")));
        printf("  Log level: %s\n", strna(json_get_string(s, "LogLevel")));
        if (!isempty(json_get_string(s, "SliceBackend")))
                printf("     Slices: %" PRIu64 " (%s backend)\n", json_get_uint64(s, "Slices"),
                       json_get_string(s, "SliceBackend"));
        else
                printf("     Slices: not available (see the slices feature below)\n");

        n_files = json_object_object_get_ex(s, "ConfigFiles", &files) ? json_object_array_length(files) : 0;
        if (n_files == 0)
                printf("     Config: built-in defaults\n");
        for (size_t i = 0; i < n_files; i++)
                printf("%s%s\n", i == 0 ? "     Config: " : "             ",
                       json_object_get_string(json_object_array_get_idx(files, i)));

        return print_features(s);
}

int print_features(json_object *status) {
        _cleanup_(table_freep) Table *t = NULL;
        json_object *features;

        if (!json_object_object_get_ex(status, "Features", &features))
                return 0;
        t = table_new(3, "FEATURE", "AVAILABLE", "DETAIL");
        if (!t)
                return log_oom();
        for (size_t i = 0; i < json_object_array_length(features); i++) {
                json_object *f = json_object_array_get_idx(features, i);
                if (table_add_row(t, json_get_string(f, "name"),
                                  yes_no(json_object_get_boolean(json_object_object_get(f, "available"))),
                                  json_get_string(f, "detail")) < 0)
                        return log_oom();
        }
        putchar('\n');
        return table_print(t, stdout, arg_legend);
}

static int call_read_onlyv(sd_bus *bus, const char *destination, const char *path, const char *interface,
                           const char *member, sd_bus_error *error, sd_bus_message **ret_reply, const char *types,
                           va_list ap) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &call, destination, path, interface, member);
        if (r < 0)
                return r;
        r = sd_bus_message_set_auto_start(call, false);
        if (r < 0)
                return r;
        if (types) {
                r = sd_bus_message_appendv(call, types, ap);
                if (r < 0)
                        return r;
        }
        return sd_bus_call(bus, call, 0, error, ret_reply);
}

/*
 * Calls a method of tonarid that only reads. Reading must not start the daemon through D-Bus
 * activation, so auto-start is off: a stopped tonarid is reported as not running (exit 3) instead.
 */
int call_read_only(sd_bus *bus, const char *path, const char *interface, const char *member,
                   sd_bus_error *error, sd_bus_message **ret_reply, const char *types, ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = call_read_onlyv(bus, BUS_NAME, path, interface, member, error, ret_reply, types, ap);
        va_end(ap);
        return r;
}

/* The same for another service (tonari-imagefs). */
int call_read_only_on(sd_bus *bus, const char *destination, const char *path, const char *interface,
                      const char *member, sd_bus_error *error, sd_bus_message **ret_reply, const char *types, ...) {
        va_list ap;
        int r;

        va_start(ap, types);
        r = call_read_onlyv(bus, destination, path, interface, member, error, ret_reply, types, ap);
        va_end(ap);
        return r;
}

int call_manager_read_only(const char *member, const char *what, sd_bus **ret_bus, sd_bus_message **ret_reply) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        sd_bus_message *reply = NULL;
        int r;

        r = connect_bus(&bus);
        if (r < 0)
                return r;
        r = call_read_only(bus, MANAGER_PATH, MANAGER_INTERFACE, member, &error, &reply, NULL);
        if (r < 0)
                return report_bus_error(what, &error, r);
        *ret_bus = TAKE_PTR(bus);
        *ret_reply = reply;
        return 0;
}

/*
 * The list verbs: member's reply is an array of element; row() reads one element (0 after the last)
 * into a row of t and into the JSON object o. Printed as --json= says, else as the table, or as
 * "No <none>." when empty; footer (optional) follows the table with the legend.
 */
int print_manager_list(const char *member, const char *what, const char *element, Table *table,
                      int (*row)(sd_bus_message *reply, Table *t, json_object *o), const char *none,
                      const char *footer) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(table_freep) Table *t = table;
        _cleanup_json_ json_object *j = NULL;
        size_t n = 0;
        int r;

        r = call_manager_read_only(member, what, &bus, &reply);
        if (r < 0)
                return r;

        j = json_object_new_array();
        if (!t || !j)
                return log_oom();
        r = sd_bus_message_enter_container(reply, 'a', element);
        if (r < 0)
                return log_parse_error(member, r);
        for (;; n++) {
                _cleanup_json_ json_object *o = json_object_new_object();

                if (!o)
                        return log_oom();
                r = row(reply, t, o);
                if (r == -ENOMEM)
                        return log_oom();
                if (r < 0)
                        return log_parse_error(member, r);
                if (r == 0)
                        break;
                if (json_object_array_add(j, o) < 0)
                        return log_oom();
                TAKE_PTR(o);
        }
        if (arg_json != JSON_OFF)
                return print_json(j);
        if (n == 0) {
                if (arg_legend)
                        printf("No %s.\n", none);
                return 0;
        }
        r = table_print(t, stdout, arg_legend);
        if (r < 0)
                return log_oom();
        if (arg_legend && footer)
                printf("\n%s\n", footer);
        return 0;
}

static int verb_status(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_json_ json_object *status = NULL;
        int r;

        if (argc > 1)
                return log_error_errno(EINVAL, "'status' takes no arguments, got '%s'.", argv[1]);

        r = call_manager_read_only("GetStatus", "get the status of tonarid", &bus, &reply);
        if (r < 0)
                return r;

        r = bus_message_read_json(reply, &status);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the reply of GetStatus(): %m");
        r = features_to_objects(status);
        if (r < 0)
                return log_oom();

        if (arg_json != JSON_OFF)
                return print_json(status);
        return print_status_human(status);
}

static int verb_log_level(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *level;
        int r;

        if (argc > 2)
                return log_error_errno(EINVAL, "'log-level' takes at most one argument, got %i.", argc - 1);
        if (argc == 2 && log_level_from_string(argv[1]) < 0)
                return log_error_errno(EINVAL,
                                       "Invalid log level '%s': expected emerg, alert, crit, err, warning, "
                                       "notice, info, debug or 0-7.",
                                       argv[1]);

        r = connect_bus(&bus);
        if (r < 0)
                return r;

        if (argc == 2) {
                r = sd_bus_call_method(bus, BUS_NAME, MANAGER_PATH, MANAGER_INTERFACE, "SetLogLevel", &error, NULL,
                                       "s", argv[1]);
                if (r < 0)
                        return report_bus_error("set the log level", &error, r);
                return 0;
        }

        r = call_read_only(bus, MANAGER_PATH, "org.freedesktop.DBus.Properties", "Get", &error, &reply, "ss",
                           MANAGER_INTERFACE, "LogLevel");
        if (r < 0)
                return report_bus_error("get the log level", &error, r);
        r = sd_bus_message_read(reply, "v", "s", &level);
        if (r < 0)
                return log_error_errno(r, "Failed to parse the LogLevel property: %m");
        if (arg_json != JSON_OFF) {
                _cleanup_json_ json_object *j = json_object_new_object();
                if (!j || json_object_object_add(j, "LogLevel", json_object_new_string(level)) < 0)
                        return log_oom();
                return print_json(j);
        }
        puts(level);
        return 0;
}

static void help(void) {
        printf("%s [OPTIONS...] COMMAND ...\n"
               "\n"
               "Query and control the tonari isolation manager (tonarid).\n"
               "\n"
               "Commands:\n"
               "  status                 Show the daemon's state, its cost and the host's features\n"
               "                         (the default command)\n"
               "  log-level [LEVEL]      Show the daemon's log level, or set it (root only)\n"
               "\n"
               "Slice commands:\n"
               "  slice list             List the slices with their tasks, CPU time and memory\n"
               "  slice show NAME        Show every property of a slice\n"
               "  slice create NAME [ASSIGNMENT...]\n"
               "                         Create a slice, e.g. with CPUQuota=20%% (root only)\n"
               "  slice set NAME ASSIGNMENT...\n"
               "                         Change settings of a slice (root only)\n"
               "  slice attach NAME PID...\n"
               "                         Move processes into a slice (root only)\n"
               "  slice remove NAME      Remove a slice without processes, or with --move-to=\n"
               "                         one whose processes go to another slice (root only)\n"
               "  slice migrate NAME NODES [SETTING=VALUE...]\n"
               "                         Move a slice's memory and CPUs to NUMA nodes lazily,\n"
               "                         referenced pages first; prints the job (root only).\n"
               "                         Settings: MemoryMigration=eager|periodical|severe|mild\n"
               "                         MigrationBatchPages=N MigrationIntervalSec=TIME\n"
               "                         MigrationCPUBudget=N%%; unset: tonarid.conf [Migration]\n"
               "  borrow [list]          CPU time each slice borrowed from helpers, its debt,\n"
               "                         what was forgiven and why, what proxies could not\n"
               "                         charge, the shortened quota while it repays, and\n"
               "                         whether the kernel or tonarid enforces it\n"
               "  borrow charge SLICE TIME\n"
               "                         Charge CPU time spent for SLICE, e.g. 20ms (root, or\n"
               "                         users allowed in tonarid.conf)\n"
               "  borrow add-proxy SLICE PID|CGROUP\n"
               "                         Charge a helper process's or cgroup's CPU time to\n"
               "                         SLICE from now on; prints the proxy ID (root only)\n"
               "  borrow remove-proxy ID Stop charging for a proxy (root only)\n"
               "  borrow proxies         List the proxies and what each has charged\n"
               "  hog [list]             Processes under hog limiting: class, limit, CPU, I/O,\n"
               "                         delay, and since when\n"
               "  hog watch [SECONDS]    The same as a live table (--json: one array per refresh)\n"
               "  hog set SLICE no|yes|observe [MonitorIntervalSec=TIME] [WindowSec=TIME]\n"
               "          [IOLimit=BYTES] [CPUWeight=N] [CPUHogPercent=N%%]\n"
               "                         Switch hog limiting of a slice (root only)\n"
               "  hog register SLICE PID...\n"
               "                         Put processes under hog limiting (root: any; users:\n"
               "                         their own)\n"
               "  hog unregister SLICE PID...\n"
               "                         Take them out again\n"
               "\n"
               "Image commands (tonari-relay over gRPC, see --relay=; package tonari-relay):\n"
               "  image pull SOURCE [NAME]\n"
               "                         Pull an image into the relay's store once, e.g.\n"
               "                         docker://HOST:PORT/REPO:TAG, oci:/PATH:TAG,\n"
               "                         oci-archive:/PATH, docker-archive:/PATH\n"
               "  image [list]           List the relay's images\n"
               "  image show NAME        Show an image and its layers\n"
               "  image remove NAME...   Forget images; their unused layers stay until 'image gc'\n"
               "  image gc               Delete what no image uses (--dry-run: only count it)\n"
               "  image toc FILE         Print a layer's table of contents (tonari-toc(5))\n"
               "\n"
               "Image mounts (tonari-imagefs over D-Bus; package tonari-imagefs):\n"
               "  image mount IMAGE TARGET\n"
               "                         Mount a relay's image read-only on the directory TARGET;\n"
               "                         with --upper= and --work=: writable, overlayfs (root only)\n"
               "  image unmount TARGET...\n"
               "                         Unmount images (root only)\n"
               "  image mounts           List the mounted images and their counters\n"
               "  image status           Show tonari-imagefs's settings, the host's features and\n"
               "                         what a restart of it keeps (the forwarder, the kernel)\n"
               "\n"
               "Assignments (systemd.resource-control(5) syntax; an empty value resets):\n"
               "  CPUWeight=1..10000  CPUQuota=N%%  CPUQuotaPeriodSec=TIME  IOWeight=1..10000\n"
               "  IOReadBandwidthMax=PATH BYTES  IOWriteBandwidthMax=PATH BYTES\n"
               "  IOReadIOPSMax=PATH N  IOWriteIOPSMax=PATH N\n"
               "  MemoryMax=BYTES|N%%|infinity  MemoryHigh=BYTES|N%%|infinity\n"
               "  AllowedCPUs=LIST  AllowedMemoryNodes=LIST\n"
               "\n"
               "Options:\n"
               "  -h --help              Show this help and exit\n"
               "     --version           Show the version and exit\n"
               "     --bus-address=ADDR  Talk to tonarid on this D-Bus address instead of the\n"
               "                         system bus\n"
               "     --json[=MODE]       Print JSON: 'pretty' (the default), 'short' or 'off'\n"
               "     --no-legend         Do not print table headers and footers\n"
               "     --move-to=SLICE     With 'slice remove': move the slice's processes to\n"
               "                         SLICE first\n"
               "     --relay=ADDRESS     The relay for image commands: unix:/PATH or HOST:PORT\n"
               "                         (default: unix:/run/tonari-relay/relay.sock)\n"
               "     --plain-http        With 'image pull': talk HTTP to the registry (the relay\n"
               "                         must list it in InsecureRegistries=)\n"
               "     --platform=OS/ARCH[/VARIANT]\n"
               "                         With 'image pull': which image of an index to take\n"
               "     --dry-run           With 'image gc': count, delete nothing\n"
               "     --upper=PATH        With 'image mount': overlayfs's upper directory\n"
               "     --work=PATH         With 'image mount': overlayfs's work directory\n"
               "     --wait              With 'slice migrate': show the job's progress until it\n"
               "                         ends; fail unless it is done\n"
               "\n"
               "Exit status: 0 success, 1 failure, 2 invalid usage, 3 tonarid not running,\n"
               "4 access denied, 5 no such slice or image. See the tonarictl(1) man page for details.\n",
               program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_BUS_ADDRESS = ARG_COMMON_MAX,
                ARG_JSON,
                ARG_NO_LEGEND,
                ARG_MOVE_TO,
                ARG_RELAY,
                ARG_PLAIN_HTTP,
                ARG_PLATFORM,
                ARG_DRY_RUN,
                ARG_UPPER,
                ARG_WORK,
                ARG_WAIT,
        };
        static const struct option options[] = {
                COMMON_OPTIONS,
                { "bus-address", required_argument, NULL, ARG_BUS_ADDRESS },
                { "json", optional_argument, NULL, ARG_JSON },
                { "no-legend", no_argument, NULL, ARG_NO_LEGEND },
                { "move-to", required_argument, NULL, ARG_MOVE_TO },
                { "relay", required_argument, NULL, ARG_RELAY },
                { "plain-http", no_argument, NULL, ARG_PLAIN_HTTP },
                { "platform", required_argument, NULL, ARG_PLATFORM },
                { "dry-run", no_argument, NULL, ARG_DRY_RUN },
                { "upper", required_argument, NULL, ARG_UPPER },
                { "work", required_argument, NULL, ARG_WORK },
                { "wait", no_argument, NULL, ARG_WAIT },
                {},
        };
        int c;

        /* Options may come before or after the command, as with systemctl. */
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case ARG_BUS_ADDRESS:
                        if (bus_address_from_option(optarg, &arg_bus_address) < 0)
                                return -EINVAL;
                        break;
                case ARG_JSON:
                        if (!optarg || streq(optarg, "pretty"))
                                arg_json = JSON_PRETTY;
                        else if (streq(optarg, "short"))
                                arg_json = JSON_SHORT;
                        else if (streq(optarg, "off"))
                                arg_json = JSON_OFF;
                        else
                                return log_error_errno(EINVAL,
                                                       "Invalid --json= mode '%s': expected pretty, short or off.",
                                                       optarg);
                        break;
                case ARG_NO_LEGEND:
                        arg_legend = false;
                        break;
                case ARG_MOVE_TO:
                        if (!name_is_valid(optarg, NAME_MAX_LEN)) {
                                _cleanup_free_ char *e = cescape(optarg);
                                if (!e)
                                        return log_oom();
                                return log_error_errno(EINVAL,
                                                       "Invalid --move-to= value '%s': expected the name of "
                                                       "another slice.",
                                                       e);
                        }
                        arg_move_to = optarg;
                        break;
                case ARG_RELAY:
                        if (isempty(optarg))
                                return log_error_errno(EINVAL, "--relay= requires an address.");
                        arg_relay = optarg;
                        break;
                case ARG_PLAIN_HTTP:
                        arg_plain_http = true;
                        break;
                case ARG_PLATFORM:
                        arg_platform = optarg;
                        break;
                case ARG_DRY_RUN:
                        arg_dry_run = true;
                        break;
                case ARG_UPPER:
                        arg_upperdir = optarg;
                        break;
                case ARG_WORK:
                        arg_workdir = optarg;
                        break;
                case ARG_WAIT:
                        arg_wait = true;
                        break;
                default:
                        return parse_common_option(c, "tonarictl", help);
                }
        return 1;
}

#if !TONARICTL_IMAGE
/*
 * The image commands talk gRPC, which this tonarictl does not link (hosts without a relay should
 * not need libgrpc): they are in tonarictl-relay, from the tonari-relay package, which gets the
 * whole command line. Which one (documented in tonarictl(1)): $TONARICTL_RELAY if set; else, when
 * this tonarictl runs from the top of a meson build directory (it holds meson-private/), the
 * tonarictl-relay of that build, so that a build tree never runs an installed helper of another
 * version; else the installed one.
 */
static char **saved_argv;

/* The directory of this tonarictl if it is the top of a meson build directory, else NULL. */
static char *build_dir(void) {
        _cleanup_free_ char *exe = NULL, *marker = NULL;
        char *slash;
        struct stat st;

        exe = realpath("/proc/self/exe", NULL);
        if (!exe)
                return NULL;
        slash = strrchr(exe, '/');
        if (!slash || slash == exe)
                return NULL;
        *slash = 0;
        marker = path_join(exe, "meson-private");
        if (!marker || stat(marker, &st) < 0 || !S_ISDIR(st.st_mode))
                return NULL;
        return TAKE_PTR(exe);
}

static int verb_image_helper(int argc, char *argv[]) {
        _cleanup_free_ char *dir = NULL, *built = NULL;
        const char *helper = secure_getenv("TONARICTL_RELAY");

        /* Mounts are D-Bus calls to tonari-imagefs: no gRPC, no helper. */
        if (verb_imagefs_handles(argc, argv))
                return verb_imagefs(argc, argv);

        if (!helper) {
                dir = build_dir();
                if (dir) {
                        built = path_join(dir, "tonarictl-relay");
                        if (!built)
                                return log_oom();
                }
                helper = built ?: TONARICTL_RELAY_PATH;
        }

        execv(helper, saved_argv);
        if (errno != ENOENT)
                return log_error_errno(errno, "Failed to run %s: %m", helper);
        if (dir)
                return log_error_errno(ENOPKG,
                                       "'image' commands need tonarictl-relay (the tonari-relay package ships it); "
                                       "this tonarictl runs from the build directory %s, which has none (%s is "
                                       "missing): build it there (-Drelay=enabled), or set $TONARICTL_RELAY.",
                                       dir, helper);
        return log_error_errno(ENOPKG, "'image' commands need the tonari-relay package (%s is missing).", helper);
}
#endif

static const struct {
        const char *name;
        int (*run)(int argc, char *argv[]);
} verbs[] = {
        { "status", verb_status },
        { "log-level", verb_log_level },
        { "slice", verb_slice },
        { "borrow", verb_borrow },
        { "hog", verb_hog },
#if TONARICTL_IMAGE
        { "image", verb_image },
#else
        { "image", verb_image_helper },
#endif
};

int main(int argc, char *argv[]) {
        int r;

        log_open();
#if !TONARICTL_IMAGE
        saved_argv = argv;
#endif

        r = parse_argv(argc, argv);
        if (r <= 0)
                return exit_status(r);

        argc -= optind;
        argv += optind;
        /* Global for getopt's sake (options go anywhere), but meaningful to one verb only. */
        if (arg_move_to && !(argc >= 2 && streq(argv[0], "slice") && streq(argv[1], "remove"))) {
                log_error("Option --move-to= is only valid with 'slice remove'.");
                return EXIT_USAGE;
        }
        if (arg_wait && !(argc >= 2 && streq(argv[0], "slice") && streq(argv[1], "migrate"))) {
                log_error("Option --wait is only valid with 'slice migrate'.");
                return EXIT_USAGE;
        }
        if (argc == 0) {
                char *default_argv[] = { (char *) "status", NULL };
                return exit_status(verb_status(1, default_argv));
        }

        FOREACH_ELEMENT(v, verbs)
                if (streq(argv[0], v->name))
                        return exit_status(v->run(argc, argv));

        log_error("Unknown command '%s'. See '%s --help'.", argv[0], program_invocation_short_name);
        return EXIT_USAGE;
}
