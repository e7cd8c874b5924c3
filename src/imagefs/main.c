/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "bus-util.h"
#include "fd-util.h"
#include "imagefs-bus.h"
#include "imagefs-conf.h"
#include "imagefs-manager.h"
#include "log.h"
#include "mkdir.h"
#include "option-util.h"
#include "parse-util.h"
#include "path-util.h"
#include "rpc.h"
#include "string-util.h"

/* One process serves many mounts: --layer= and --mountpoint= may be repeated, paired in order, and so
 * may --toc-digest= (all or none). */
#define MOUNTS_MAX 128
static const char *arg_relay = NULL;
static const char *arg_config = TONARI_IMAGEFS_CONF_FILE;
static const char *arg_bus_address = NULL;
static const char *arg_bus_introspect = NULL;
static bool arg_dump_config = false;
static bool arg_cache_max_set = false, arg_read_timeout_set = false;
static int arg_log_level = -1;
static const char *arg_layers[MOUNTS_MAX];
static const char *arg_mountpoints[MOUNTS_MAX];
static Digest arg_toc_digests[MOUNTS_MAX];
static const char *arg_prefetch[MOUNTS_MAX];
static const char *arg_record[MOUNTS_MAX];
static size_t arg_n_layers = 0, arg_n_mountpoints = 0, arg_n_toc_digests = 0, arg_n_prefetch = 0, arg_n_record = 0;
static const char *arg_cache_dir = NULL;
static const char *arg_stats_file = NULL;
static const char *arg_forwarder = NULL;
static bool arg_toc = true;
static bool arg_stacked = false;
static uint64_t arg_cache_max_bytes = IMAGEFS_CACHE_MAX_DEFAULT_BYTES;
static usec_t arg_read_timeout_usec = IMAGEFS_READ_TIMEOUT_DEFAULT_USEC;

static void help(void) {
        printf("%s [OPTIONS...]\n"
               "\n"
               "tonari image file system: serves the layers of tonari-relay's store as read-only FUSE\n"
               "file systems, stacked with overlayfs.\n"
               "\n"
               "Without --layer= it is the service org.tonari.ImageFS1, configured by tonari-imagefs.conf\n"
               "(images mounted with 'tonarictl image mount'); with --layer= it mounts the layers named\n"
               "on the command line and exits when they are unmounted.\n"
               "\n"
               "  -h --help                 Show this help and exit\n"
               "     --version              Show the version and exit\n"
               "     --config=PATH          Service: read configuration from PATH and PATH.d/*.conf\n"
               "                            (default: %s)\n"
               "     --dump-config          Service: print the effective configuration and exit\n"
               "     --bus-address=ADDRESS  Service: connect to this D-Bus address instead of the\n"
               "                            system bus\n"
               "     --bus-introspect=PATH  Write the introspection XML of org.tonari.ImageFS1 to PATH\n"
               "                            ('-' for stdout) and exit\n"
               "     --relay=ADDRESS        The relay: unix:/path or host:port (Relay=)\n"
               "     --layer=DIGEST         The layer's diff_id (sha256:...)\n"
               "     --toc-digest=DIGEST    The digest the layer's ToC must have (from the image)\n"
               "     --mountpoint=PATH      Where to mount it\n"
               "     --prefetch=PATH        A list of paths in the layer (one a line) to stream into\n"
               "                            the cache in one call once every layer is mounted\n"
               "     --record-opened=PATH   Write the paths of the files opened to PATH at the end\n"
               "                            (the next run's --prefetch= list)\n"
               "                            (all five may be repeated: one process, many mounts;\n"
               "                            their ToCs are loaded at once)\n"
               "     --no-toc               Ask the relay for every metadata request (the baseline)\n"
               "     --stacked              The --layer= are one image's, bottom first: a directory a\n"
               "                            layer only implies takes the attributes of the layers below\n"
               "     --cache-dir=PATH       Content cache directory (CacheDirectory=)\n"
               "     --cache-max=BYTES      Bound of the cache (CacheMaxBytes=, default 10G, 0: none)\n"
               "     --read-timeout=SEC     Longest wait for the relay per request (ReadTimeoutSec=,\n"
               "                            default 30s)\n"
               "     --stats-file=PATH      Write the counters there on SIGUSR1 and at exit\n"
               "     --forwarder=SOCKET     Mount through tonari-imagefs-fd (its socket): the mounts and\n"
               "                            their requests outlive this process's restart or crash\n"
               "                            (service: overrides Forwarder=, default: auto)\n"
               "     --log-level=LEVEL      Log level, overriding LogLevel= (default: info)\n"
               "\n"
               "See the tonari-imagefs(8) man page for details.\n",
               program_invocation_short_name, TONARI_IMAGEFS_CONF_FILE);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_RELAY = ARG_COMMON_MAX,
                ARG_LAYER,
                ARG_TOC_DIGEST,
                ARG_MOUNTPOINT,
                ARG_PREFETCH,
                ARG_RECORD_OPENED,
                ARG_NO_TOC,
                ARG_STACKED,
                ARG_CACHE_DIR,
                ARG_CACHE_MAX,
                ARG_READ_TIMEOUT,
                ARG_STATS_FILE,
                ARG_FORWARDER,
                ARG_LOG_LEVEL,
                ARG_CONFIG,
                ARG_DUMP_CONFIG,
                ARG_BUS_ADDRESS,
                ARG_BUS_INTROSPECT,
        };
        static const struct option options[] = {
                COMMON_OPTIONS,
                { "relay", required_argument, NULL, ARG_RELAY },
                { "layer", required_argument, NULL, ARG_LAYER },
                { "toc-digest", required_argument, NULL, ARG_TOC_DIGEST },
                { "mountpoint", required_argument, NULL, ARG_MOUNTPOINT },
                { "prefetch", required_argument, NULL, ARG_PREFETCH },
                { "record-opened", required_argument, NULL, ARG_RECORD_OPENED },
                { "no-toc", no_argument, NULL, ARG_NO_TOC },
                { "stacked", no_argument, NULL, ARG_STACKED },
                { "cache-dir", required_argument, NULL, ARG_CACHE_DIR },
                { "cache-max", required_argument, NULL, ARG_CACHE_MAX },
                { "read-timeout", required_argument, NULL, ARG_READ_TIMEOUT },
                { "stats-file", required_argument, NULL, ARG_STATS_FILE },
                { "forwarder", required_argument, NULL, ARG_FORWARDER },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "dump-config", no_argument, NULL, ARG_DUMP_CONFIG },
                { "bus-address", required_argument, NULL, ARG_BUS_ADDRESS },
                { "bus-introspect", required_argument, NULL, ARG_BUS_INTROSPECT },
                {},
        };
        int c, r;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case ARG_RELAY:
                        arg_relay = optarg;
                        break;
                case ARG_LAYER:
                        if (arg_n_layers >= MOUNTS_MAX)
                                return log_error_errno(E2BIG, "At most %d mounts.", MOUNTS_MAX);
                        arg_layers[arg_n_layers++] = optarg;
                        break;
                case ARG_TOC_DIGEST:
                        if (arg_n_toc_digests >= MOUNTS_MAX)
                                return log_error_errno(E2BIG, "At most %d mounts.", MOUNTS_MAX);
                        if (digest_from_string(optarg, &arg_toc_digests[arg_n_toc_digests]) < 0)
                                return log_error_errno(EINVAL, "Invalid --toc-digest= '%s'.", optarg);
                        arg_n_toc_digests++;
                        break;
                case ARG_MOUNTPOINT:
                        if (arg_n_mountpoints >= MOUNTS_MAX)
                                return log_error_errno(E2BIG, "At most %d mounts.", MOUNTS_MAX);
                        arg_mountpoints[arg_n_mountpoints++] = optarg;
                        break;
                case ARG_PREFETCH:
                        if (arg_n_prefetch >= MOUNTS_MAX)
                                return log_error_errno(E2BIG, "At most %d mounts.", MOUNTS_MAX);
                        arg_prefetch[arg_n_prefetch++] = optarg;
                        break;
                case ARG_RECORD_OPENED:
                        if (arg_n_record >= MOUNTS_MAX)
                                return log_error_errno(E2BIG, "At most %d mounts.", MOUNTS_MAX);
                        arg_record[arg_n_record++] = optarg;
                        break;
                case ARG_NO_TOC:
                        arg_toc = false;
                        break;
                case ARG_STACKED:
                        arg_stacked = true;
                        break;
                case ARG_CACHE_DIR:
                        arg_cache_dir = optarg;
                        break;
                case ARG_CACHE_MAX:
                        r = parse_size(optarg, 1024, &arg_cache_max_bytes);
                        if (r < 0)
                                return log_error_errno(r, "Invalid --cache-max= '%s'.", optarg);
                        arg_cache_max_set = true;
                        break;
                case ARG_READ_TIMEOUT:
                        r = parse_sec(optarg, &arg_read_timeout_usec);
                        if (r < 0 || arg_read_timeout_usec == 0)
                                return log_error_errno(EINVAL, "Invalid --read-timeout= '%s'.", optarg);
                        arg_read_timeout_set = true;
                        break;
                case ARG_STATS_FILE:
                        arg_stats_file = optarg;
                        break;
                case ARG_FORWARDER:
                        if (optarg[0] != '/')
                                return log_error_errno(EINVAL, "--forwarder= must be an absolute path, got '%s'.", optarg);
                        arg_forwarder = optarg;
                        break;
                case ARG_LOG_LEVEL:
                        r = log_level_from_string(optarg);
                        if (r < 0)
                                return log_error_errno(r, "Invalid --log-level= '%s'.", optarg);
                        arg_log_level = r;
                        break;
                case ARG_CONFIG:
                        if (isempty(optarg))
                                return log_error_errno(EINVAL, "--config= requires a path.");
                        arg_config = optarg;
                        break;
                case ARG_DUMP_CONFIG:
                        arg_dump_config = true;
                        break;
                case ARG_BUS_ADDRESS:
                        if (bus_address_from_option(optarg, &arg_bus_address) < 0)
                                return -EINVAL;
                        break;
                case ARG_BUS_INTROSPECT:
                        arg_bus_introspect = optarg;
                        break;
                default:
                        return parse_common_option(c, "tonari-imagefs", help);
                }
        r = refuse_positional_args(argc, argv);
        if (r < 0)
                return r;
        if (arg_n_layers == 0)
                return 1; /* the service */
        if (!arg_relay || !arg_cache_dir)
                return log_error_errno(EINVAL, "--layer= needs --relay=, --mountpoint= and --cache-dir=.");
        if (arg_n_mountpoints != arg_n_layers || (arg_n_toc_digests > 0 && arg_n_toc_digests != arg_n_layers) ||
            (arg_n_prefetch > 0 && arg_n_prefetch != arg_n_layers) || (arg_n_record > 0 && arg_n_record != arg_n_layers))
                return log_error_errno(EINVAL, "Each --layer= needs its --mountpoint= (and --toc-digest=, --prefetch=, "
                                               "--record-opened=, if any).");
        if (!arg_toc && (arg_n_prefetch > 0 || arg_n_record > 0))
                return log_error_errno(EINVAL, "--prefetch= and --record-opened= need the ToC, not --no-toc.");
        return 1;
}

/* The loop, then the end of the process: with a thread still answering a request that no one waits for
 * any more (imagefs_manager_threads_left()), nothing may be torn down under it. */
static int run_manager(ImagefsManager *m) {
        int r = imagefs_manager_run(m);

        if (imagefs_manager_threads_left(m)) {
                fflush(stdout);
                _exit(r < 0 ? EXIT_FAILURE : EXIT_SUCCESS);
        }
        return r;
}

static int do_introspect(const char *path) {
        _cleanup_free_ char *xml = NULL;
        int r;

        r = imagefs_bus_introspect(&xml);
        if (r < 0)
                return log_error_errno(r, "Failed to generate introspection data: %m");
        return bus_introspect_write(xml, path);
}

/* The service: tonari-imagefs.conf, the command line's overrides, the bus. */
static int run_service(void) {
        _cleanup_(imagefs_manager_freep) ImagefsManager *m = NULL;
        _cleanup_free_ char *state_file = NULL;
        const char *forwarder = NULL;
        ImagefsConfig c;
        int r;

        r = imagefs_config_load(arg_config, &c, NULL);
        if (r < 0)
                return r;
        if (arg_relay) {
                if (!rpc_address_is_valid(arg_relay) || strlen(arg_relay) >= sizeof(c.relay))
                        return log_error_errno(EINVAL, "Invalid --relay= '%s': expected unix:/absolute/path or "
                                               "HOST:PORT.", arg_relay);
                strcpy(c.relay, arg_relay);
        }
        if (arg_cache_dir) {
                if (!path_is_normalized_absolute(arg_cache_dir) || strlen(arg_cache_dir) >= sizeof(c.cache_directory))
                        return log_error_errno(EINVAL, "Invalid --cache-dir= '%s': expected an absolute path.",
                                               arg_cache_dir);
                strcpy(c.cache_directory, arg_cache_dir);
        }
        if (arg_cache_max_set)
                c.cache_max_bytes = arg_cache_max_bytes;
        if (arg_read_timeout_set)
                c.read_timeout_usec = arg_read_timeout_usec;
        if (arg_log_level >= 0)
                c.log_level = arg_log_level;
        if (arg_dump_config) {
                imagefs_config_dump(&c, stdout);
                return 0;
        }
        log_set_max_level(c.log_level);
        log_set_target(c.log_target);

        r = mkdirat_p(AT_FDCWD, c.mount_directory, 0755);
        if (r < 0)
                return log_error_errno(r, "Failed to create MountDirectory= '%s': %m", c.mount_directory);
        /* --forwarder= wins; Forwarder=auto: the forwarder's socket if its unit ran since boot (its runtime
         * directory is kept over its restarts; attaching waits a little for a restarting forwarder). */
        if (arg_forwarder)
                forwarder = arg_forwarder;
        else if (streq(c.forwarder, "auto")) {
                _cleanup_free_ char *dir = strdup(IMAGEFS_FORWARDER_AUTO_SOCKET);
                struct stat st;

                if (!dir)
                        return log_oom();
                *strrchr(dir, '/') = 0;
                if (stat(dir, &st) >= 0 && S_ISDIR(st.st_mode))
                        forwarder = IMAGEFS_FORWARDER_AUTO_SOCKET;
        } else if (!streq(c.forwarder, "no"))
                forwarder = c.forwarder;
        state_file = path_join(c.mount_directory, IMAGEFS_STATE_FILE_NAME);
        if (!state_file)
                return log_oom();
        r = imagefs_manager_new(&(ImagefsManagerConfig) {
                .relay = c.relay,
                .mount_directory = c.mount_directory,
                .cache_directory = c.cache_directory,
                .cache_max_bytes = c.cache_max_bytes,
                .read_timeout_usec = c.read_timeout_usec,
                .stats_file = arg_stats_file,
                .forwarder = forwarder,
                .state_file = state_file,
        }, &m);
        if (r < 0)
                return r;
        if (forwarder) {
                log_info("Mounting through the forwarder at %s: mounts survive a restart of this service.", forwarder);
                r = imagefs_manager_adopt(m);
                if (r < 0)
                        return r;
        } else
                /* Nothing survived the previous process: its list would only mislead the next one. */
                (void) unlink(state_file);
        r = imagefs_manager_connect_bus(m, arg_bus_address);
        if (r < 0)
                return r;
        log_info("tonari-imagefs %s serving %s, relay %s, cache %s.", PACKAGE_VERSION, IMAGEFS_BUS_NAME, c.relay,
                 c.cache_directory);
        return run_manager(m);
}

static int run(int argc, char *argv[]) {
        _cleanup_(imagefs_manager_freep) ImagefsManager *m = NULL;
        _cleanup_free_ ImagefsMountRequest *requests = NULL;
        ImagefsManagerConfig config;
        int r;

        log_open();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;
        if (arg_bus_introspect)
                return do_introspect(arg_bus_introspect);
        if (arg_n_layers == 0)
                return run_service();
        if (arg_log_level >= 0)
                log_set_max_level(arg_log_level);

        config = (ImagefsManagerConfig) {
                .cache_directory = arg_cache_dir,
                .cache_max_bytes = arg_cache_max_bytes,
                .read_timeout_usec = arg_read_timeout_usec,
                .stats_file = arg_stats_file,
                .exit_when_idle = true,
                .forwarder = arg_forwarder,
        };
        r = imagefs_manager_new(&config, &m);
        if (r < 0)
                return r;
        requests = new0(ImagefsMountRequest, arg_n_layers);
        if (!requests)
                return log_oom();
        for (size_t i = 0; i < arg_n_layers; i++)
                requests[i] = (ImagefsMountRequest) {
                        .relay = arg_relay,
                        .layer = arg_layers[i],
                        .mountpoint = arg_mountpoints[i],
                        .use_toc = arg_toc,
                        .stacked = arg_stacked,
                        .toc_digest = arg_n_toc_digests > 0 ? &arg_toc_digests[i] : NULL,
                        .prefetch_list = arg_n_prefetch > 0 ? arg_prefetch[i] : NULL,
                        .record_opened = arg_n_record > 0 ? arg_record[i] : NULL,
                };
        r = imagefs_manager_add_mounts(m, requests, arg_n_layers);
        if (r < 0)
                return r;
        return run_manager(m);
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
