/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The content cache of tonari-imagefs: regular files' contents in a local directory, one file per
 * content digest, shared by every mount of the process (an image's layers, and other images, share
 * contents). A file's bytes are served only after they matched the ToC: by chunk when the ToC has
 * chunk digests (large files: a read fetches and verifies the 1 MiB pieces it touches), else whole.
 * Bytes whose file changed (its ctime) since they were verified are verified again before their next
 * use. A content found in the directory at start (a previous process's) is verified again before its
 * first use unless its verification record says it was verified whole in this boot and its file is
 * the same as then.
 *
 * Verification records ("<64 hex>.verified"): written once a complete content matched its digest, they
 * bind the digest to this boot's ID and the file's inode number, size, mtime and ctime under an
 * HMAC-SHA256 whose key lives in the directory's "trusted.tonari-imagefs.verification-key" extended
 * attribute (made on first use). Who can forge one: only a process with CAP_SYS_ADMIN (trusted.*
 * attributes are invisible to everyone else), who can replace the daemon anyway. Any change to the
 * file after it was recorded changes its ctime, which only the kernel sets (to the present: moving it
 * back needs CAP_SYS_TIME), so the record no longer matches; a file replaced has another inode; a
 * reboot voids every record (so does a crash: records are not synced). Not covered: bytes changed
 * below the file system (a disk's bit rot) during one boot. Where the key cannot be kept (no trusted.*
 * attributes, no CAP_SYS_ADMIN) there are no records and every start verifies again.
 *
 * On disk: "<64 hex>" holds a complete content, "<64 hex>.part" one being filled (removed at start:
 * which of its pieces were written is known only in memory), "<64 hex>.verified" a content's record. A lock file keeps a second process out.
 * CacheMaxBytes= bounds the sum of the files' sizes: the least recently used contents that no open file
 * holds are removed when a fetch goes beyond it (a content in use may exceed it for a while).
 *
 * Thread-safe: FUSE calls it from several threads. A content's pieces are fetched under its own lock,
 * so two readers of the same missing piece fetch it once.
 */

#include <stdbool.h>
#include <stdint.h>

#include "digest.h"

typedef struct ImagefsCache ImagefsCache;
typedef struct ImagefsCacheEntry ImagefsCacheEntry;

typedef struct ImagefsContent {
        Digest digest;       /* of the whole content: the cache's key */
        uint64_t size;
        uint32_t chunk_size; /* with chunks */
        const Digest *chunks; /* n_chunks digests of [i * chunk_size, ...), or NULL: verified whole */
        uint32_t n_chunks;
} ImagefsContent;

/* Takes the bytes of a fetch in order. */
typedef int (*imagefs_sink_t)(const void *data, size_t size, void *userdata);
/* Fetches [offset, offset + size) of a content and gives it to sink: 0, or a negative errno. */
typedef int (*imagefs_fetch_t)(uint64_t offset, uint64_t size, imagefs_sink_t sink, void *sink_userdata,
                               void *userdata);

/* dir is made if missing. max_bytes 0: no bound. -EBUSY when another process uses dir. */
int imagefs_cache_new(const char *dir, uint64_t max_bytes, ImagefsCache **ret);
ImagefsCache *imagefs_cache_free(ImagefsCache *c);
static inline void imagefs_cache_freep(ImagefsCache **c) {
        imagefs_cache_free(*c);
}

/* A reference to the content's entry (made if new). chunks are copied. -EINVAL for chunks that do not
 * cover size. */
int imagefs_cache_get(ImagefsCache *c, const ImagefsContent *content, ImagefsCacheEntry **ret);
void imagefs_cache_unref(ImagefsCache *c, ImagefsCacheEntry *e);

/*
 * Makes [offset, offset + size) of the content verified bytes of the cache file, fetching what is
 * missing through fetch: on success the file to read them from (valid while e is held), the number
 * of bytes fetched, and whether all of them were there already (a hit). Errors: -EBADMSG when fetched
 * bytes do not match their digest (nothing of them is kept), -EUCLEAN when cached bytes do not (the
 * content is dropped from the cache: the next reader fetches it again), else what fetch returned.
 */
int imagefs_cache_prepare(ImagefsCache *c, ImagefsCacheEntry *e, uint64_t offset, uint64_t size,
                          imagefs_fetch_t fetch, void *userdata, int *ret_fd, uint64_t *ret_fetched, bool *ret_hit);

/* Whether verification records are kept and trusted here (the key could be kept in the directory). */
bool imagefs_cache_keeps_verification(ImagefsCache *c);
/* Cached bytes read back and hashed again, since the cache was opened. */
uint64_t imagefs_cache_rehashed_bytes(ImagefsCache *c);

/* The sum of the cache files' sizes, and the number of contents known. */
void imagefs_cache_usage(ImagefsCache *c, uint64_t *ret_bytes, uint64_t *ret_entries);
