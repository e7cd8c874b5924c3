/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The relay's image store: pulls, image records, layers, garbage collection. Thread-safe: the
 * relay's rpc threads call it concurrently.
 *
 * Concurrency: a layer (by diff_id) is fetched and unpacked by one pull at a time; a second pull
 * that needs it waits and then finds it present. Pulls hold the store shared, GC exclusively, so
 * GC never deletes what a pull in flight has written but not yet recorded.
 */

#include <stdbool.h>
#include <stdint.h>

#include "cancel.h"
#include "digest.h"
#include "image-db.h"
#include "oci-util.h"
#include "toc.h"

typedef struct ImageStore ImageStore;

/* Opens the store at path (creating it); -EBUSY when another process has it open. */
int image_store_open(const char *path, ImageStore **ret, char **ret_error);
ImageStore *image_store_free(ImageStore *is);
DEFINE_TRIVIAL_CLEANUP_FUNC(ImageStore *, image_store_free);
#define _cleanup_image_store_ _cleanup_(image_store_freep)

typedef enum PullPhase {
        PULL_RESOLVING = 1,
        PULL_FETCHING,
        PULL_UNPACKING,
        PULL_LAYER_PRESENT,
        PULL_DONE,
} PullPhase;

typedef struct PullProgress {
        PullPhase phase;
        const Digest *layer; /* blob digest: FETCHING, UNPACKING, LAYER_PRESENT */
        uint64_t layer_done_bytes, layer_total_bytes;
        unsigned layers_done, layers_total;
        const ImageRecord *image; /* DONE */
} PullProgress;

/* Called from the pulling thread; returning a negative errno cancels the pull. */
typedef int (*pull_progress_t)(const PullProgress *p, void *userdata);

typedef struct PullOptions {
        const char *source;
        const char *name;           /* NULL: derived from source */
        const OciPlatform *platform; /* NULL: this host's */
        bool plain_http;
        const char *ca_file;
        /* Asked between pieces of work, also while waiting for another pull or for GC: the pull
         * ends with -ECANCELED (and leaves no image) soon after it says so. */
        const Cancel *cancel;
} PullOptions;

int image_store_pull(ImageStore *is, const PullOptions *o, pull_progress_t progress, void *userdata,
                     ImageRecord **ret, char **ret_error);

/* Copies of the records, sorted by name. */
int image_store_list(ImageStore *is, ImageRecord ***ret, size_t *ret_n);
void image_record_list_free(ImageRecord **list, size_t n);
/* By name or manifest digest; -ENOENT. */
int image_store_get(ImageStore *is, const char *name, ImageRecord **ret);
/* Forgets a name. ret_unreferenced (optional): diff_ids of layers no image uses any more. */
int image_store_remove(ImageStore *is, const char *name, Digest **ret_unreferenced, size_t *ret_n);

typedef struct GcStats {
        uint64_t blobs_removed, layers_removed, objects_removed, freed_bytes;
} GcStats;

/* cancel (optional) is asked while GC waits for the pulls in flight to finish. */
int image_store_gc(ImageStore *is, bool dry_run, const Cancel *cancel, GcStats *ret, char **ret_error);

/* A layer's record (without its blobs); -ENOENT if the store has none. */
int image_store_layer(ImageStore *is, const Digest *diff_id, LayerInfo *ret);
/*
 * A layer's ToC, read into memory and verified against the record l (from image_store_layer()):
 * its size and sha256, then the ToC's own validation. -EUCLEAN when the file is missing or is not
 * what the record says (damage in the store).
 */
int image_store_load_toc(ImageStore *is, const LayerInfo *l, Toc **ret);
/*
 * A layer's ToC file for streaming, read-only, with its record: -ENOENT without a record, -EUCLEAN
 * when the file is missing, not a regular file or not of the recorded size. The caller verifies
 * the sha256 of what it reads against ret_info->toc_digest.
 */
int image_store_open_toc(ImageStore *is, const Digest *diff_id, LayerInfo *ret_info);
/* A content object, read-only; -ENOENT if absent. */
int image_store_open_object(ImageStore *is, const Digest *d);
