/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <curl/curl.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>

#include "log.h"
#include "option-util.h"
#include "relay.h"
#include "string-util.h"

static const char *arg_config = TONARI_RELAY_CONF_FILE;
static bool arg_dump_config = false;

static void help(void) {
        printf("%s [OPTIONS...]\n"
               "\n"
               "tonari image relay: pulls container images once and serves their layers.\n"
               "\n"
               "  -h --help                 Show this help and exit\n"
               "     --version              Show the version and exit\n"
               "     --config=PATH          Read configuration from PATH and PATH.d/*.conf\n"
               "                            (default: %s)\n"
               "     --dump-config          Print the effective configuration and exit\n"
               "\n"
               "See the tonari-relay(8) man page for details.\n",
               program_invocation_short_name, TONARI_RELAY_CONF_FILE);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_CONFIG = ARG_COMMON_MAX,
                ARG_DUMP_CONFIG,
        };
        static const struct option options[] = {
                COMMON_OPTIONS,
                { "config", required_argument, NULL, ARG_CONFIG },
                { "dump-config", no_argument, NULL, ARG_DUMP_CONFIG },
                {},
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case ARG_CONFIG:
                        if (isempty(optarg))
                                return log_error_errno(EINVAL, "--config= requires a path.");
                        arg_config = optarg;
                        break;
                case ARG_DUMP_CONFIG:
                        arg_dump_config = true;
                        break;
                default:
                        return parse_common_option(c, "tonari-relay", help);
                }
        r = refuse_positional_args(argc, argv);
        return r < 0 ? r : 1;
}

static int run(int argc, char *argv[]) {
        _cleanup_(relay_freep) Relay *relay = NULL;
        RelayConfig config;
        sigset_t mask;
        int r, sig;

        log_open();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;
        r = relay_config_load(arg_config, &config, NULL);
        if (r < 0)
                return r;
        if (arg_dump_config) {
                relay_config_dump(&config, stdout);
                return 0;
        }
        log_set_max_level(config.log_level);
        log_set_target(config.log_target);

        /* Blocked before gRPC and libcurl start threads, so that only sigwait() below sees them. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        r = -pthread_sigmask(SIG_BLOCK, &mask, NULL);
        if (r < 0)
                return log_error_errno(r, "Failed to block signals: %m");
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
                return log_error_errno(EIO, "Failed to initialize libcurl.");

        r = relay_new(&config, &relay);
        if (r < 0)
                return log_error_errno(r, "Failed to set up: %m");
        r = relay_start(relay);
        if (r < 0)
                return r;

        (void) sd_notify(false, "READY=1\nSTATUS=Serving.");
        log_info("tonari-relay %s serving the store %s.", PACKAGE_VERSION, config.store);

        for (;;) {
                r = sigwait(&mask, &sig);
                if (r != 0)
                        return log_error_errno(r, "sigwait() failed: %m");
                if (sig == SIGHUP) {
                        log_info("SIGHUP: the relay reads its configuration at start only; restart it to apply changes.");
                        continue;
                }
                break;
        }
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Finishing calls in flight.");
        log_info("Stopping on %s.", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        r = relay_stop(relay);
        if (r == -ETIMEDOUT) {
                /* A call's work blocks somewhere that never looks at its call: exiting is the only
                 * bounded way out, and leaves nothing half-visible (pulls publish by rename). */
                log_warning("Calls still running 5 s after they were cancelled; exiting without waiting for them.");
                _exit(EXIT_FAILURE);
        }
        relay = relay_free(relay);
        curl_global_cleanup();
        return 0;
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
