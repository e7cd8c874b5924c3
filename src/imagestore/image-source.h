/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Where a pull reads an image from, behind one interface: an OCI distribution registry, an OCI
 * image layout directory, an oci-archive (a tar of a layout) or a docker-archive ("docker save").
 * Archives are extracted first, into a directory the caller names (below the store's tmp/): only
 * the names the format defines are written, as regular files, so an archive cannot write outside
 * it. A docker-archive has no manifest: one is made from its manifest.json (a Docker schema 2
 * manifest naming its files by their sha256), so that every source looks like a registry.
 *
 * Documents and blobs are verified against their digests and sizes by the caller as they arrive
 * (image_source_get_document() verifies what it returns itself).
 */

#include <stdbool.h>
#include <stddef.h>

#include "cancel.h"
#include "digest.h"
#include "oci-util.h"
#include "registry.h"

typedef struct ImageSource ImageSource;

typedef struct ImageSourceOptions {
        bool plain_http;       /* registry: HTTP instead of HTTPS */
        const char *ca_file;   /* registry: CA bundle, NULL for the system's */
        const char *work_dir;  /* archives: an empty directory to extract into; removed by free */
        const Cancel *cancel;  /* asked during transfers and extraction; must outlive the source */
} ImageSourceOptions;

int image_source_open(const ImageReference *ref, const ImageSourceOptions *options, ImageSource **ret,
                      char **ret_error);
ImageSource *image_source_free(ImageSource *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(ImageSource *, image_source_free);
#define _cleanup_image_source_ _cleanup_(image_source_freep)

/*
 * The manifest or index the reference names (digest NULL), or the document with that digest.
 * ret_content_type is what the source says the type is (a registry's Content-Type, a layout's
 * descriptor media type), or NULL.
 */
int image_source_get_document(ImageSource *s, const Digest *digest, char **ret_data, size_t *ret_size,
                              char **ret_content_type, Digest *ret_digest, char **ret_error);

/* Streams a blob of d->size bytes to sink. */
int image_source_get_blob(ImageSource *s, const OciDescriptor *d, registry_sink_t sink, void *userdata,
                          char **ret_error);
