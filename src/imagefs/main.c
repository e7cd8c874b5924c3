/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "imagefs-manager.h"
#include "log.h"
#include "parse-util.h"
#include "string-util.h"

/* One process serves many mounts: --layer= and --mountpoint= may be repeated, paired in order, and so
 * may --toc-digest= (all or none). */
#define MOUNTS_MAX 128
static const char *arg_relay = NULL;
static const char *arg_layers[MOUNTS_MAX];
static const char *arg_mountpoints[MOUNTS_MAX];
static Digest arg_toc_digests[MOUNTS_MAX];
static size_t arg_n_layers = 0, arg_n_mountpoints = 0, arg_n_toc_digests = 0;
static const char *arg_cache_dir = NULL;
static const char *arg_stats_file = NULL;
static bool arg_toc = true;
static uint64_t arg_cache_max_bytes = IMAGEFS_CACHE_MAX_DEFAULT_BYTES;
static usec_t arg_read_timeout_usec = IMAGEFS_READ_TIMEOUT_DEFAULT_USEC;

static void help(void) {
        printf("%s [OPTIONS...]\n"
               "\n"
               "tonari image file system: serves a layer of tonari-relay's store as a read-only FUSE\n"
               "file system, to be stacked with overlayfs.\n"
               "\n"
               "  -h --help                 Show this help and exit\n"
               "     --version              Show the version and exit\n"
               "     --relay=ADDRESS        The relay: unix:/path or host:port\n"
               "     --layer=DIGEST         The layer's diff_id (sha256:...)\n"
               "     --toc-digest=DIGEST    The digest the layer's ToC must have (from the image)\n"
               "     --mountpoint=PATH      Where to mount it\n"
               "                            (all three may be repeated: one process, many mounts)\n"
               "     --no-toc               Ask the relay for every metadata request (the baseline)\n"
               "     --cache-dir=PATH       Content cache directory (CacheDirectory=)\n"
               "     --cache-max=BYTES      Bound of the cache (CacheMaxBytes=, default 10G, 0: none)\n"
               "     --read-timeout=SEC     Longest wait for the relay per request (ReadTimeoutSec=,\n"
               "                            default 30s)\n"
               "     --stats-file=PATH      Write the counters there on SIGUSR1 and at exit\n"
               "     --log-level=LEVEL      Log level (default: info)\n",
               program_invocation_short_name);
}

static int parse_argv(int argc, char *argv[]) {
        enum {
                ARG_VERSION = 0x100,
                ARG_RELAY,
                ARG_LAYER,
                ARG_TOC_DIGEST,
                ARG_MOUNTPOINT,
                ARG_NO_TOC,
                ARG_CACHE_DIR,
                ARG_CACHE_MAX,
                ARG_READ_TIMEOUT,
                ARG_STATS_FILE,
                ARG_LOG_LEVEL,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "relay", required_argument, NULL, ARG_RELAY },
                { "layer", required_argument, NULL, ARG_LAYER },
                { "toc-digest", required_argument, NULL, ARG_TOC_DIGEST },
                { "mountpoint", required_argument, NULL, ARG_MOUNTPOINT },
                { "no-toc", no_argument, NULL, ARG_NO_TOC },
                { "cache-dir", required_argument, NULL, ARG_CACHE_DIR },
                { "cache-max", required_argument, NULL, ARG_CACHE_MAX },
                { "read-timeout", required_argument, NULL, ARG_READ_TIMEOUT },
                { "stats-file", required_argument, NULL, ARG_STATS_FILE },
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
                        printf("tonari-imagefs %s\n", PACKAGE_VERSION);
                        return 0;
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
                case ARG_NO_TOC:
                        arg_toc = false;
                        break;
                case ARG_CACHE_DIR:
                        arg_cache_dir = optarg;
                        break;
                case ARG_CACHE_MAX:
                        r = parse_size(optarg, 1024, &arg_cache_max_bytes);
                        if (r < 0)
                                return log_error_errno(r, "Invalid --cache-max= '%s'.", optarg);
                        break;
                case ARG_READ_TIMEOUT:
                        r = parse_sec(optarg, &arg_read_timeout_usec);
                        if (r < 0 || arg_read_timeout_usec == 0)
                                return log_error_errno(EINVAL, "Invalid --read-timeout= '%s'.", optarg);
                        break;
                case ARG_STATS_FILE:
                        arg_stats_file = optarg;
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
        if (!arg_relay || arg_n_layers == 0 || !arg_cache_dir)
                return log_error_errno(EINVAL, "--relay=, --layer=, --mountpoint= and --cache-dir= are required.");
        if (arg_n_mountpoints != arg_n_layers || (arg_n_toc_digests > 0 && arg_n_toc_digests != arg_n_layers))
                return log_error_errno(EINVAL, "Each --layer= needs its --mountpoint= (and --toc-digest=, if any).");
        return 1;
}

static int run(int argc, char *argv[]) {
        _cleanup_(imagefs_manager_freep) ImagefsManager *m = NULL;
        ImagefsManagerConfig config;
        int r;

        log_open();
        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        config = (ImagefsManagerConfig) {
                .cache_directory = arg_cache_dir,
                .cache_max_bytes = arg_cache_max_bytes,
                .read_timeout_usec = arg_read_timeout_usec,
                .stats_file = arg_stats_file,
        };
        r = imagefs_manager_new(&config, &m);
        if (r < 0)
                return r;
        for (size_t i = 0; i < arg_n_layers; i++) {
                r = imagefs_manager_add_mount(m, &(ImagefsMountRequest) {
                        .relay = arg_relay,
                        .layer = arg_layers[i],
                        .mountpoint = arg_mountpoints[i],
                        .use_toc = arg_toc,
                        .toc_digest = arg_n_toc_digests > 0 ? &arg_toc_digests[i] : NULL,
                });
                if (r < 0)
                        return r;
        }
        return imagefs_manager_run(m);
}

int main(int argc, char *argv[]) {
        return run(argc, argv) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
