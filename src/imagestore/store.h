/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The relay's content-addressed store on the local file system (tonari-relay(8), FILES):
 *
 *   STORE/lock                         held (flock) by the one process that owns the store
 *   STORE/tmp/                         writes in progress; emptied when the store is opened
 *   STORE/blobs/sha256/ab/abcd...      manifests, configs, layer tars: bytes as the source had them
 *   STORE/objects/sha256/ab/abcd...    contents of regular files of unpacked layers
 *   STORE/layers/sha256/ab/abcd...     a layer's ToC (tonari-toc(5)), named by the layer's diff_id
 *
 * Everything under blobs/ and objects/ is named by the sha256 of its bytes, verified while it was
 * written, and appears by rename(2) only once complete: a crash or a failed pull leaves at most
 * files in tmp/. Identical content written twice, also concurrently, is stored once. The two
 * fan-out levels keep directories at a few thousand entries for stores of millions of objects.
 *
 * Durability: blobs are fsync'ed before they appear. Objects are not, one by one (a layer has
 * thousands); whoever publishes something that refers to them calls store_sync() first.
 */

#include <stdint.h>

#include "digest.h"

typedef struct Store Store;
typedef struct StoreWriter StoreWriter;

typedef enum StoreKind {
        STORE_BLOB,
        STORE_OBJECT,
        /* Named by the digest of something else (the layer's uncompressed tar), so not verified
         * by the writer: the unpacker verified the tar while it read it. */
        STORE_LAYER,
        _STORE_KIND_MAX,
} StoreKind;

/* Opens (and creates) the store at path. -EBUSY when another process holds it. */
int store_open(const char *path, Store **ret);
Store *store_free(Store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(Store *, store_free);
#define _cleanup_store_ _cleanup_(store_freep)

const char *store_root(const Store *s);
/* A directory fd of the store's root, valid until store_free(). */
int store_root_fd(const Store *s);

/* The path of an item relative to the store's root: "objects/sha256/ab/abcd...". */
int store_item_path(StoreKind kind, const Digest *d, char **ret);

/* Every item of a kind, in no particular order (for garbage collection). */
int store_list(Store *s, StoreKind kind, Digest **ret, size_t *ret_n);

/* 1 if present, 0 if not. */
int store_has(Store *s, StoreKind kind, const Digest *d);
/* A read-only fd of the item; -ENOENT if absent, -EUCLEAN if it is not a regular file. */
int store_open_item(Store *s, StoreKind kind, const Digest *d);
/* Removes the item; 0 if it was not there. */
int store_remove_item(Store *s, StoreKind kind, const Digest *d);

/* syncfs() of the store's file system: everything written so far is durable. */
int store_sync(Store *s);

/*
 * Writing one item. expected may be NULL when the digest is learned from the content (objects);
 * max_bytes (UINT64_MAX for no limit) stops a source that sends more than it announced. For
 * STORE_LAYER, expected is required and is the item's name.
 */
int store_writer_new(Store *s, StoreKind kind, const Digest *expected, uint64_t max_bytes, StoreWriter **ret);
/* -EFBIG past max_bytes; the writer is then unusable. */
int store_writer_write(StoreWriter *w, const void *data, size_t size);
/*
 * Verifies and publishes. -EBADMSG when the content does not match the expected digest: nothing is
 * stored. Returns 1 if this writer stored the item, 0 if it was already present. A STORE_LAYER item
 * is always stored, replacing one of the same name.
 */
int store_writer_commit(StoreWriter *w, Digest *ret_digest, uint64_t *ret_size);
/* STORE_LAYER only: the file, for writers that write themselves (the ToC writer). */
int store_writer_fd(StoreWriter *w);
/* Bytes written so far. */
uint64_t store_writer_size(const StoreWriter *w);
/* Without commit, discards what was written. */
StoreWriter *store_writer_free(StoreWriter *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(StoreWriter *, store_writer_free);
#define _cleanup_store_writer_ _cleanup_(store_writer_freep)
