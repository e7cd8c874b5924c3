/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "imagefs-fd-protocol.h"
#include "imagefs-fd.h"
#include "log.h"
#include "parse-util.h"
#include "string-util.h"

#define STATE_DIRECTORY_DEFAULT "/run/tonari-imagefs-fd/state"

static const char *arg_socket = IMAGEFS_FD_SOCKET_DEFAULT;
static const char *arg_state_directory = STATE_DIRECTORY_DEFAULT;
static usec_t arg_worker_timeout_usec = FORWARDER_WORKER_TIMEOUT_DEFAULT_USEC;

static void help(void) {
        printf("%s [OPTIONS...]\n"
               "\n"
               "Owns the FUSE connections of tonari-imagefs's mounts and passes their requests to the\n"
               "tonari-imagefs worker attached, again after the worker was restarted or killed.\n"
               "\n"
               "  -h --help                 Show this help and exit\n"
               "     --version              Show the version and exit\n"
               "     --socket=PATH          Where workers connect (default " IMAGEFS_FD_SOCKET_DEFAULT ")\n"
               "     --state-directory=PATH A file per mount, for a restart of the forwarder\n"
               "                            (default " STATE_DIRECTORY_DEFAULT ")\n"
               "     --worker-timeout=SEC   Without a worker this long, requests fail with EIO\n"
               "                            (default 30s; 0: they wait for one)\n"
               "     --log-level=LEVEL      Log level (default: info)\n",
               program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_SOCKET,
                ARG_STATE_DIRECTORY,
                ARG_WORKER_TIMEOUT,
                ARG_LOG_LEVEL,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "socket", required_argument, NULL, ARG_SOCKET },
                { "state-directory", required_argument, NULL, ARG_STATE_DIRECTORY },
                { "worker-timeout", required_argument, NULL, ARG_WORKER_TIMEOUT },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                {},
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("tonari-imagefs-fd %s\n", PACKAGE_VERSION);
                        return 0;
                case ARG_SOCKET:
                        if (optarg[0] != '/')
                                return log_error_errno(EINVAL, "--socket= must be an absolute path, got '%s'.", optarg);
                        arg_socket = optarg;
                        break;
                case ARG_STATE_DIRECTORY:
                        if (optarg[0] != '/')
                                return log_error_errno(EINVAL, "--state-directory= must be an absolute path, got '%s'.",
                                                       optarg);
                        arg_state_directory = optarg;
                        break;
                case ARG_WORKER_TIMEOUT:
                        r = parse_sec(optarg, &arg_worker_timeout_usec);
                        if (r < 0)
                                return log_error_errno(r, "Invalid --worker-timeout= '%s'.", optarg);
                        break;
                case ARG_LOG_LEVEL:
                        r = log_level_from_string(optarg);
                        if (r < 0)
                                return log_error_errno(r, "Invalid --log-level= '%s'.", optarg);
                        log_set_max_level(r);
                        break;
                case '?':
                        return -EINVAL;
                default:
                        return log_error_errno(EINVAL, "Unhandled option %i.", c);
                }
        if (optind < argc)
                return log_error_errno(EINVAL, "%s takes no positional arguments, got '%s'.",
                                       program_invocation_short_name, argv[optind]);
        return 1;
}

static int run(int argc, char *argv[]) {
        _cleanup_(forwarder_freep) Forwarder *f = NULL;
        int r;

        log_open();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;
        r = forwarder_new(&(ForwarderConfig) {
                .socket_path = arg_socket,
                .state_directory = arg_state_directory,
                .worker_timeout_usec = arg_worker_timeout_usec,
        }, &f);
        if (r < 0)
                return r;
        return forwarder_run(f);
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
