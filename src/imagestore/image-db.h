/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The store's metadata: which names exist and what each names (manifest, config, layer chain,
 * platform), and what the store knows of each unpacked layer. One JSON file, STORE/images.json,
 * replaced atomically (write, fsync, rename) on every change, so a crash leaves the old or the new
 * list, never a mix. It is small (a few hundred bytes per image and layer) and read once at start.
 *
 * The image records are the roots of garbage collection: a blob, layer or content object is live
 * when an image names it (directly, or through a live layer's ToC).
 *
 * The layer records are the store's word on its ToCs: a ToC file is trusted only when its size
 * and sha256 are those recorded when its layer was unpacked (or, for a store written by 0.2.0,
 * when it was first validated after the upgrade).
 */

#include <stdint.h>

#include "digest.h"
#include "oci-util.h"

typedef struct LayerRecord {
        Digest digest;    /* of the blob, as the manifest names it */
        Digest diff_id;   /* of the uncompressed tar: the name of the unpacked layer */
        char *media_type;
        uint64_t size_bytes;
        uint64_t unpacked_bytes;
        uint64_t toc_bytes;
        uint64_t toc_entries;
        Digest toc_digest; /* of the ToC file, as its LayerInfo says */
} LayerRecord;

/* A blob known to decompress to a layer: fetched, its digest and the diff_id of its content
 * verified. */
typedef struct LayerBlob {
        Digest digest;
        uint64_t size;
        OciCompression compression;
} LayerBlob;

/* What the store knows of one unpacked layer (STORE/layers/sha256/XX/DIFF-ID). */
typedef struct LayerInfo {
        Digest diff_id;
        Digest toc_digest; /* sha256 of the whole ToC file */
        uint64_t toc_bytes;
        uint64_t toc_entries;
        uint64_t unpacked_bytes; /* regular files' sizes, hard links once: from the ToC */
        LayerBlob *blobs;
        size_t n_blobs;
        bool legacy; /* loaded from a 0.2.0 file: toc_* and unpacked_bytes not known yet */
} LayerInfo;

typedef struct ImageRecord {
        char *name;
        char *source;
        Digest manifest_digest;
        Digest config_digest;
        /* The index the manifest was selected from, if any: a blob to keep too. */
        bool has_index_digest;
        Digest index_digest;
        OciPlatform platform;
        LayerRecord *layers;
        size_t n_layers;
        uint64_t pulled_usec;
} ImageRecord;

ImageRecord *image_record_free(ImageRecord *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(ImageRecord *, image_record_free);
#define _cleanup_image_record_ _cleanup_(image_record_freep)
int image_record_copy(const ImageRecord *r, ImageRecord **ret);

typedef struct ImageDb {
        ImageRecord **images; /* sorted by name */
        size_t n_images;
        LayerInfo *layers;    /* in no particular order */
        size_t n_layers;
} ImageDb;

void image_db_done(ImageDb *db);

/* Reads dir_fd/images.json; a missing file is an empty database. -EBADMSG if it is damaged. A file
 * without layer records (0.2.0) gets one per layer its images name, marked legacy. */
int image_db_load(ImageDb *db, int dir_fd, char **ret_error);
/* Writes dir_fd/images.json atomically. */
int image_db_save(const ImageDb *db, int dir_fd);

/* By name, or by manifest digest ("sha256:..."). NULL if none. */
const ImageRecord *image_db_find(const ImageDb *db, const char *name_or_digest);
/* Adds r (taking it), replacing an image of the same name, which is handed back in *ret_old. */
int image_db_put(ImageDb *db, ImageRecord *r, ImageRecord **ret_old);
/* Removes by name or manifest digest; the record is handed back. -ENOENT if none. */
int image_db_remove(ImageDb *db, const char *name_or_digest, ImageRecord **ret);

/* The record of a layer; NULL if none. */
LayerInfo *image_db_find_layer(const ImageDb *db, const Digest *diff_id);
/* Adds a layer record (copied), replacing one of the same diff_id. */
int image_db_put_layer(ImageDb *db, const LayerInfo *l);
/* Forgets a layer; 0 if it was not known. */
int image_db_remove_layer(ImageDb *db, const Digest *diff_id);
/* Adds a verified blob to a layer's record (once). */
int layer_info_add_blob(LayerInfo *l, const LayerBlob *b);
bool layer_info_has_blob(const LayerInfo *l, const LayerBlob *b) _pure_;
/* Whether an image record names the layer. */
bool image_db_layer_referenced(const ImageDb *db, const Digest *diff_id) _pure_;

/* Names images can be stored under: printable, no whitespace, 1..255 bytes. */
bool image_name_is_valid(const char *name) _pure_;
