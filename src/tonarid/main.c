/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include <systemd/sd-daemon.h>

#include "alloc-util.h"
#include "bus-util.h"
#include "fd-util.h"
#include "log.h"
#include "manager-bus.h"
#include "manager.h"
#include "option-util.h"
#include "slice-util.h"
#include "string-util.h"

static const char *arg_bus_address = NULL;
static const char *arg_bus_introspect = NULL;
static const char *arg_config = TONARI_CONF_FILE;
static bool arg_dump_config = false;
static int arg_log_level = -1;

static void help(void) {
        printf("%s [OPTIONS...]\n"
               "\n"
               "tonari isolation manager: keeps co-located tenants from hurting each other.\n"
               "\n"
               "  -h --help                 Show this help and exit\n"
               "     --version              Show the version and exit\n"
               "     --bus-address=ADDRESS  Connect to this D-Bus address instead of the system bus\n"
               "                            (default: $DBUS_SYSTEM_BUS_ADDRESS, else the system bus)\n"
               "     --bus-introspect=PATH  Write the introspection XML of the D-Bus interfaces\n"
               "                            tonarid implements to PATH ('-' for stdout) and exit\n"
               "     --config=PATH          Read configuration from PATH and PATH.d/*.conf\n"
               "                            (default: %s)\n"
               "     --dump-config          Print the effective configuration and exit\n"
               "     --log-level=LEVEL      Log at LEVEL (emerg...debug), overriding LogLevel=\n"
               "\n"
               "See the tonarid(8) man page for details.\n",
               program_invocation_short_name, TONARI_CONF_FILE);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_BUS_ADDRESS = ARG_COMMON_MAX,
                ARG_BUS_INTROSPECT,
                ARG_CONFIG,
                ARG_DUMP_CONFIG,
                ARG_LOG_LEVEL,
        };
        static const struct option options[] = {
                COMMON_OPTIONS,
                { "bus-address", required_argument, NULL, ARG_BUS_ADDRESS },
                { "bus-introspect", required_argument, NULL, ARG_BUS_INTROSPECT },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "dump-config", no_argument, NULL, ARG_DUMP_CONFIG },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                {},
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case ARG_BUS_ADDRESS:
                        if (bus_address_from_option(optarg, &arg_bus_address) < 0)
                                return -EINVAL;
                        break;
                case ARG_BUS_INTROSPECT:
                        if (isempty(optarg))
                                return log_error_errno(EINVAL, "--bus-introspect= requires a path or '-'.");
                        arg_bus_introspect = optarg;
                        break;
                case ARG_CONFIG:
                        if (isempty(optarg))
                                return log_error_errno(EINVAL, "--config= requires a path.");
                        arg_config = optarg;
                        break;
                case ARG_DUMP_CONFIG:
                        arg_dump_config = true;
                        break;
                case ARG_LOG_LEVEL:
                        arg_log_level = log_level_from_string(optarg);
                        if (arg_log_level < 0)
                                return log_error_errno(EINVAL,
                                                       "Invalid --log-level= value '%s': expected emerg, alert, "
                                                       "crit, err, warning, notice, info, debug or 0-7.",
                                                       optarg);
                        break;
                default:
                        return parse_common_option(c, "tonarid", help);
                }

        r = refuse_positional_args(argc, argv);
        if (r < 0)
                return r;
        return 1;
}

static int add_objects_for_introspection(sd_bus *bus, void *userdata) {
        return manager_bus_add_objects(bus, userdata);
}

static int do_introspect(const char *path) {
        _cleanup_free_ char *xml = NULL, *slice_xml = NULL, *job_xml = NULL;
        int r;

        /* One document with every interface the service org.tonari.Manager1 implements: the manager
         * object's, plus the slice objects' and the migration jobs' interfaces. */
        r = bus_introspect(add_objects_for_introspection, NULL, TONARI_MANAGER_PATH, &xml);
        if (r >= 0)
                r = bus_introspect(add_objects_for_introspection, NULL, SLICE_OBJECT_PREFIX "/example", &slice_xml);
        if (r >= 0)
                r = bus_introspect_add_interface(&xml, slice_xml, "org.tonari.Slice1");
        if (r >= 0)
                r = bus_introspect_add_interface(&xml, slice_xml, "org.tonari.Borrowing1");
        if (r >= 0)
                r = bus_introspect(add_objects_for_introspection, NULL, MIGRATE_JOB_OBJECT_PREFIX "/1", &job_xml);
        if (r >= 0)
                r = bus_introspect_add_interface(&xml, job_xml, MIGRATE_JOB_INTERFACE);
        if (r < 0)
                return log_error_errno(r, "Failed to generate introspection data: %m");
        return bus_introspect_write(xml, path);
}

static int run(int argc, char *argv[]) {
        _cleanup_(manager_freep) Manager *m = NULL;
        int r;

        log_open();

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;
        if (arg_log_level >= 0)
                log_set_max_level(arg_log_level);

        if (arg_bus_introspect)
                return do_introspect(arg_bus_introspect);

        r = manager_new(arg_config, arg_bus_address, arg_log_level, &m);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate manager: %m");

        r = manager_load_config(m);
        if (r < 0)
                return log_error_errno(r, "Refusing to start with an invalid configuration ('%s').", arg_config);

        if (arg_dump_config) {
                manager_config_dump(&m->config, stdout);
                return fflush(stdout) == 0 ? 0 : log_error_errno(errno, "Failed to write to stdout: %m");
        }

        (void) sd_notify(false, "STATUS=Starting...");

        r = manager_start(m);
        if (r < 0)
                return r;
        return manager_run(m);
}

int main(int argc, char *argv[]) {
        int r;

        r = run(argc, argv);
        if (r < 0)
                (void) sd_notifyf(false, "STATUS=Failed: %s\nERRNO=%i", strerror(ERRNO_VALUE(r)), ERRNO_VALUE(r));
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
