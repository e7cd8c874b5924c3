/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Prefetch and its record, per mount of a layer in ToC mode.
 *
 * Prefetch: a list of paths in the layer (one per line, "usr/bin/python3" or "/usr/bin/python3"),
 * typically the files an earlier run of the same image opened. Right after the mount a thread of its
 * own asks the relay for all their contents in ONE ReadRanges call and writes the stream into the
 * content cache as it arrives, verified against the ToC like any fetch: a cold start pays one round
 * trip and the bytes, not a round trip per file. A reader that wants a content still on its way waits
 * for it (at most the mount's read timeout) instead of asking the relay itself; one that the stream
 * has passed finds it in the cache. A prefetch that fails (relay away, wrong bytes) stops; readers then
 * fetch for themselves, as without it.
 *
 * Record: the paths of the regular files opened through the mount, in the order of their first open,
 * written (atomically) to a file when the mount ends: the prefetch list of the next run.
 *
 * Thread-safe: FUSE threads call imagefs_prefetch_opened() and imagefs_prefetch_wait() while the
 * prefetch thread runs.
 */

#include <stdint.h>

#include "digest.h"
#include "imagefs-cache.h"
#include "imagefs-relay.h"
#include "time-util.h"
#include "toc.h"

typedef struct ImagefsPrefetch ImagefsPrefetch;

typedef struct ImagefsPrefetchConfig {
        const char *layer;
        const char *list_path;   /* the paths to prefetch, or NULL */
        const char *record_path; /* where to write the record at the end, or NULL */
        usec_t timeout_usec;     /* ReadTimeoutSec=: the longest a reader waits, and the stream's start */
} ImagefsPrefetchConfig;

/* Reads and resolves the list (paths not in the layer, or not regular files, are skipped and counted).
 * toc, relay and cache must outlive the object. -EINVAL for a ToC-less mount; errors of reading the
 * list. */
int imagefs_prefetch_new(const ImagefsPrefetchConfig *config, const Toc *toc, ImagefsRelay *relay,
                         ImagefsCache *cache, ImagefsPrefetch **ret);
/* Starts the stream (nothing to do without a list). */
int imagefs_prefetch_start(ImagefsPrefetch *p);
/* Stops the stream (cancelled if still running), writes the record, frees. NULL-safe. */
ImagefsPrefetch *imagefs_prefetch_free(ImagefsPrefetch *p);

/* FUSE open of regular file entry (the group's first name for hard links). NULL-safe. */
void imagefs_prefetch_opened(ImagefsPrefetch *p, uint64_t entry);
/* Before a read of content d: waits while the stream still has it to deliver. NULL-safe. */
void imagefs_prefetch_wait(ImagefsPrefetch *p, const Digest *d);

typedef struct ImagefsPrefetchCounters {
        uint64_t files;          /* contents in the list (after resolving and deduplication) */
        uint64_t skipped;        /* paths of the list that are no regular file of the layer */
        uint64_t bytes;          /* bytes that came in the stream and went into the cache */
        uint64_t calls;          /* ReadRanges calls */
        uint64_t waits;          /* reads that waited for the stream */
        uint64_t usec;           /* from the start to the end of the stream */
} ImagefsPrefetchCounters;
void imagefs_prefetch_counters(ImagefsPrefetch *p, ImagefsPrefetchCounters *ret);
