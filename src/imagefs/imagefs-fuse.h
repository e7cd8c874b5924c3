/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The FUSE edge of tonari-imagefs: one mount of one layer, served by libfuse's low-level API from a
 * multithreaded session loop on a thread of its own (many mounts per process).
 *
 * ToC mode: every metadata request is answered from the layer's ToC in memory, with long entry and
 * attribute timeouts and cached symlinks and pages (the image never changes): no request reaches the
 * relay but reads of content that is not in the cache. No-ToC mode (the paper's baseline): each
 * lookup, getattr, readdir, readlink and xattr request is one call to the relay, and nothing is cached
 * by the kernel but pages.
 */

#include <stdbool.h>
#include <stdint.h>

#include "imagefs-cache.h"
#include "imagefs-prefetch.h"
#include "imagefs-relay.h"
#include "time-util.h"
#include "toc.h"

typedef struct ImagefsMount ImagefsMount;

/* How long a stop waits for the session's threads to finish what they do (after unmounting, or after
 * ending the connection to the forwarder) before it aborts the connection (without a forwarder) or
 * leaves them (with one). A request answered from the ToC or the cache takes microseconds; only one
 * that waits for the relay (up to ReadTimeoutSec=, 30 s by default) takes longer, and waiting for it
 * would make a restart as slow as a stalled relay. Well under systemd's stop timeouts, restarts
 * included. */
#define IMAGEFS_STOP_WAIT_USEC (1 * USEC_PER_SEC)

typedef struct ImagefsCounters {
        uint64_t metadata_round_trips; /* calls to the relay for metadata (0 in ToC mode) */
        uint64_t content_round_trips;  /* Read calls */
        uint64_t bytes_fetched;        /* content bytes from the relay, verified */
        uint64_t cache_hits;           /* reads served from the cache alone */
        uint64_t cache_misses;         /* reads that fetched */
        uint64_t toc_bytes;
        uint64_t toc_load_usec;        /* GetToC, verification and opening */
        uint64_t errors;               /* requests answered with EIO */
        ImagefsPrefetchCounters prefetch;
} ImagefsCounters;

typedef struct ImagefsMountConfig {
        const char *layer;        /* diff_id, "sha256:..." */
        const char *mountpoint;
        usec_t timeout_usec;      /* ReadTimeoutSec=: longest wait for the relay in one request */
        const char *forwarder;    /* tonari-imagefs-fd's socket: it owns the mount; NULL: this process */
} ImagefsMountConfig;

/* toc: the layer's verified ToC, taken on success; NULL for no-ToC mode. relay and cache are the
 * caller's and must outlive the mount. */
int imagefs_mount_new(const ImagefsMountConfig *config, Toc *toc, ImagefsRelay *relay, ImagefsCache *cache,
                      ImagefsMount **ret);
/* Mounts and starts serving. When the session ends by itself (unmounted from outside), the mount
 * writes to notify_fd (an eventfd) and imagefs_mount_running() turns false. */
int imagefs_mount_start(ImagefsMount *m, int notify_fd);
bool imagefs_mount_running(ImagefsMount *m);
/* Unmounts (if still mounted) and waits for the session's threads, a bounded time. A mount still in
 * use (an overlay on it) is detached; its connection is aborted if requests keep it alive. With a
 * forwarder, only ends this process's session: the mount stays, and what it is asked (including what
 * this process had read but not answered) waits for the next worker to attach.
 *
 * In two halves, so that a process with many mounts waits once for all of them: _begin() tells the
 * session to end and returns; _finish() waits for its threads until deadline_usec (CLOCK_REALTIME).
 * A thread still busy then (waiting for the relay) is not waited for: -ETIMEDOUT, and the mount is
 * abandoned -- imagefs_mount_free() frees nothing of it, and the relay and cache it was given must
 * stay too, until the process exits (with _exit(): its threads still run). imagefs_mount_stop() is
 * both halves with the default wait. */
void imagefs_mount_stop_begin(ImagefsMount *m);
int imagefs_mount_stop_finish(ImagefsMount *m, usec_t deadline_usec);
int imagefs_mount_stop(ImagefsMount *m);
bool imagefs_mount_abandoned(const ImagefsMount *m) _pure_;
/* Unmounts for good, with a forwarder too, then stops. */
void imagefs_mount_unmount(ImagefsMount *m);
ImagefsMount *imagefs_mount_free(ImagefsMount *m);

const char *imagefs_mount_layer(const ImagefsMount *m) _pure_;
const char *imagefs_mount_path(const ImagefsMount *m) _pure_;
bool imagefs_mount_has_toc(const ImagefsMount *m) _pure_;
void imagefs_mount_set_toc_load(ImagefsMount *m, uint64_t bytes, usec_t load_usec);
/* Before imagefs_mount_start(): the attributes its implied directories take from the layers below
 * (imagefs_lower_dirs_new()), taken over; NULL: none. */
void imagefs_mount_set_lower_dirs(ImagefsMount *m, Toc *lower_dirs);
/* The layer's ToC; NULL in no-ToC mode. */
const Toc *imagefs_mount_toc(const ImagefsMount *m) _pure_;
/* Before imagefs_mount_start(): the mount takes p, tells it the files opened and lets reads wait for
 * its stream; p is freed with the mount. */
void imagefs_mount_set_prefetch(ImagefsMount *m, ImagefsPrefetch *p);
void imagefs_mount_counters(ImagefsMount *m, ImagefsCounters *ret);
