/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The store's image metadata: which names exist and what each names (manifest, config, layer
 * chain, platform). One JSON file, STORE/images.json, replaced atomically (write, fsync, rename)
 * on every change, so a crash leaves the old or the new list, never a mix. It is small (a few
 * hundred bytes per image) and read once at start.
 *
 * The image records are the roots of garbage collection: a blob, layer or content object is live
 * when an image names it (directly, or through a live layer's ToC).
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
} LayerRecord;

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
static inline void image_record_freep(ImageRecord **r) {
        image_record_free(*r);
}
#define _cleanup_image_record_ _cleanup_(image_record_freep)
int image_record_copy(const ImageRecord *r, ImageRecord **ret);

typedef struct ImageDb {
        ImageRecord **images; /* sorted by name */
        size_t n_images;
} ImageDb;

void image_db_done(ImageDb *db);

/* Reads dir_fd/images.json; a missing file is an empty database. -EBADMSG if it is damaged. */
int image_db_load(ImageDb *db, int dir_fd, char **ret_error);
/* Writes dir_fd/images.json atomically. */
int image_db_save(const ImageDb *db, int dir_fd);

/* By name, or by manifest digest ("sha256:..."). NULL if none. */
const ImageRecord *image_db_find(const ImageDb *db, const char *name_or_digest);
/* Adds r (taking it), replacing an image of the same name, which is handed back in *ret_old. */
int image_db_put(ImageDb *db, ImageRecord *r, ImageRecord **ret_old);
/* Removes by name or manifest digest; the record is handed back. -ENOENT if none. */
int image_db_remove(ImageDb *db, const char *name_or_digest, ImageRecord **ret);

/* Names images can be stored under: printable, no whitespace, 1..255 bytes. */
bool image_name_is_valid(const char *name) _pure_;
