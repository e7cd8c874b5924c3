/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Unpacking one layer blob into the store: every regular file's content becomes a content object
 * (stored once however many layers and images contain it), everything else about every entry goes
 * into the layer's ToC (tonari-toc(5)). OCI whiteouts become WHITEOUT entries and opaque markers
 * the OPAQUE flag; nothing of the tar is trusted as a path on this host: names are only ever keys
 * in the ToC, so "../", absolute names and symlinks that point anywhere cannot write outside the
 * store. What the layer's tar may not contain is refused with -EBADMSG and a message naming the
 * entry: names with ".." components or NUL, names longer than the ToC allows, hard links to
 * entries that are not in the layer, headers beyond the limits below. Both functions stop with
 * -ECANCELED between two reads when cancel says so.
 */

#include <stdint.h>

#include "cancel.h"
#include "digest.h"
#include "oci-util.h"
#include "store.h"

typedef struct LayerStats {
        Digest diff_id;          /* sha256 of the uncompressed tar, as read */
        uint64_t new_objects;    /* content objects this layer added to the store */
        /* Of the ToC, and read back from it (toc_stats()): what the layer record keeps. */
        Digest toc_digest;
        uint64_t toc_bytes;
        uint64_t entries;        /* entries in the ToC */
        uint64_t unpacked_bytes; /* sum of regular files' sizes, hard links counted once */
} LayerStats;

/*
 * Reads the layer blob from blob_fd (compressed as given), stores its files' contents as objects
 * in s and returns its ToC (malloc'ed) in *ret_toc. The caller compares ret->diff_id with the image
 * config's and publishes the ToC.
 */
int layer_unpack(Store *s, int blob_fd, OciCompression compression, const Cancel *cancel, void **ret_toc,
                 size_t *ret_toc_size, LayerStats *ret, char **ret_error);

/* The diff_id of a layer blob (decompressed as given and hashed, not unpacked). */
int layer_diff_id(int blob_fd, OciCompression compression, const Cancel *cancel, Digest *ret, char **ret_error);
