/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * tonari-imagefs's manager: the mounts of one process, the relays they read from (one channel per
 * address), the content cache they share, and the event loop (signals now; the D-Bus edge,
 * imagefs-bus.c, attaches to the same loop and calls imagefs_manager_add_mount() and friends).
 */

#include <stdbool.h>
#include <stdint.h>

#include "digest.h"
#include "time-util.h"

/* ReadTimeoutSec=: a request that needs the relay fails with EIO after this long without it. Long
 * enough to ride out a relay's restart, short enough that a container sees an error rather than a
 * hang. */
#define IMAGEFS_READ_TIMEOUT_DEFAULT_USEC (30 * USEC_PER_SEC)
/* CacheMaxBytes=: 10 GiB, a few large images' contents on a worker's disk. */
#define IMAGEFS_CACHE_MAX_DEFAULT_BYTES (10ULL * 1024ULL * 1024ULL * 1024ULL)

typedef struct ImagefsManager ImagefsManager;

typedef struct ImagefsManagerConfig {
        const char *cache_directory;
        uint64_t cache_max_bytes;
        usec_t read_timeout_usec;
        const char *stats_file;      /* written on SIGUSR1 and at exit; NULL: logged only */
} ImagefsManagerConfig;

typedef struct ImagefsMountRequest {
        const char *relay;           /* "unix:/path" or "host:port" */
        const char *layer;           /* diff_id */
        const char *mountpoint;
        bool use_toc;
        const Digest *toc_digest;    /* the ToC's digest from GetImage; NULL: the one GetToC announces */
} ImagefsMountRequest;

int imagefs_manager_new(const ImagefsManagerConfig *config, ImagefsManager **ret);
ImagefsManager *imagefs_manager_free(ImagefsManager *m);
static inline void imagefs_manager_freep(ImagefsManager **m) {
        imagefs_manager_free(*m);
}

/* Loads the layer's ToC (ToC mode), verifies it, mounts. Logs its errors. */
int imagefs_manager_add_mount(ImagefsManager *m, const ImagefsMountRequest *request);
/* Until SIGTERM/SIGINT, or until no mount is left (all unmounted from outside); then unmounts all. */
int imagefs_manager_run(ImagefsManager *m);
/* The counters of every mount, one line each, to the stats file (atomically) and the log. */
int imagefs_manager_write_stats(ImagefsManager *m);
