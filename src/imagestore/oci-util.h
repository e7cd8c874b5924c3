/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Pure parsing of what an image pull reads before any layer: the image reference an operator
 * types, and the JSON documents of the OCI image and distribution specifications (image manifest,
 * image index / Docker manifest list, image config). Nothing here does I/O; every limit that
 * protects the relay from a hostile source is checked here, with the offending value in the
 * message the caller is handed.
 */

#include <stdint.h>

#include "digest.h"

/* Sizes a relay accepts. The distribution spec asks registries to accept manifests of at least
 * 4 MiB, so a larger one is not an image any registry would serve. */
#define OCI_MANIFEST_MAX_BYTES (4U * 1024U * 1024U)
#define OCI_CONFIG_MAX_BYTES (8U * 1024U * 1024U)
/* overlayfs stacks at most 500 lower layers; images beyond 128 layers are not built in practice
 * (Docker refuses them), so a manifest with more is refused rather than half-served. */
#define OCI_LAYERS_MAX 128U
#define OCI_INDEX_ENTRIES_MAX 1024U

typedef enum ImageTransport {
        IMAGE_TRANSPORT_REGISTRY,       /* docker://HOST[:PORT]/REPO[:TAG][@DIGEST] */
        IMAGE_TRANSPORT_OCI_LAYOUT,     /* oci:/PATH[:TAG] */
        IMAGE_TRANSPORT_OCI_ARCHIVE,    /* oci-archive:/PATH[:TAG] */
        IMAGE_TRANSPORT_DOCKER_ARCHIVE, /* docker-archive:/PATH[:REPO:TAG] */
        _IMAGE_TRANSPORT_MAX,
} ImageTransport;

typedef struct ImageReference {
        ImageTransport transport;
        char *host;       /* registry: "host" or "host:port" */
        char *repository; /* registry: "library/busybox"; docker-archive: optional REPO */
        char *tag;        /* NULL when not given (registry with a digest, layout's only image) */
        bool has_digest;  /* registry: "@sha256:..." */
        Digest digest;
        char *path;       /* local transports: an absolute path */
} ImageReference;

ImageReference *image_reference_free(ImageReference *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(ImageReference *, image_reference_free);
#define _cleanup_image_reference_ _cleanup_(image_reference_freep)

/*
 * Parses a source as tonari-relay(8) documents it. A registry reference without tag and digest
 * gets the tag "latest". There is no default registry: the host is always written. Local paths
 * must be absolute, normalized and must not contain ':'. -EINVAL for anything else.
 */
int image_reference_parse(const char *s, ImageReference **ret);
/* The name an image pulled from r is stored under when none is given: "REPO:TAG", "REPO@DIGEST",
 * or for local sources the file name of the path with ":TAG" if given. */
int image_reference_default_name(const ImageReference *r, char **ret);

/* OCI tag and repository grammars (distribution-spec). */
bool oci_tag_is_valid(const char *tag) _pure_;
bool oci_repository_is_valid(const char *repo) _pure_;

typedef struct OciPlatform {
        char *os;
        char *architecture;
        char *variant;
} OciPlatform;

void oci_platform_done(OciPlatform *p);
/* The platform of this host ("linux", GOARCH of the build's architecture, variant "v8" on arm64). */
int oci_platform_host(OciPlatform *ret);
/* Whether an index entry's platform satisfies want: empty fields of want match anything. */
bool oci_platform_matches(const OciPlatform *have, const OciPlatform *want) _pure_;

typedef enum OciCompression {
        OCI_COMPRESSION_NONE,
        OCI_COMPRESSION_GZIP,
        OCI_COMPRESSION_ZSTD,
        _OCI_COMPRESSION_MAX,
} OciCompression;

/* A layer media type's compression; -EOPNOTSUPP for media types tonari does not pull. */
int oci_layer_compression(const char *media_type, OciCompression *ret);
/* "none", "gzip", "zstd" (the image store's records), and back (-EINVAL). */
const char *oci_compression_to_string(OciCompression c) _const_;
int oci_compression_from_string(const char *s, OciCompression *ret);

typedef struct OciDescriptor {
        char *media_type;
        Digest digest;
        uint64_t size;
        OciPlatform platform; /* index entries only */
        char *ref_name;       /* index entries: annotation org.opencontainers.image.ref.name (a layout's tag) */
        OciCompression compression; /* layers only */
} OciDescriptor;

typedef enum OciDocumentKind {
        OCI_DOCUMENT_MANIFEST,
        OCI_DOCUMENT_INDEX,
        _OCI_DOCUMENT_KIND_MAX,
} OciDocumentKind;

typedef struct OciManifest {
        OciDocumentKind kind;
        char *media_type;
        /* OCI_DOCUMENT_MANIFEST */
        OciDescriptor config;
        OciDescriptor *layers;
        size_t n_layers;
        /* OCI_DOCUMENT_INDEX */
        OciDescriptor *manifests;
        size_t n_manifests;
} OciManifest;

OciManifest *oci_manifest_free(OciManifest *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(OciManifest *, oci_manifest_free);
#define _cleanup_oci_manifest_ _cleanup_(oci_manifest_freep)

/*
 * Parses an image manifest or an index (Docker schema 2 manifest and manifest list included).
 * content_type is the registry's Content-Type or NULL; when given and not JSON of a known kind
 * the document is refused, when NULL the document's own mediaType, or its shape, decides.
 * -EBADMSG for malformed JSON or missing/invalid fields, -EOPNOTSUPP for a valid document of a
 * kind tonari does not pull (schema 1, foreign layers, unknown layer media types), -E2BIG beyond
 * the limits above. ret_error (optional) receives a message naming the offending field or value.
 */
int oci_manifest_parse(const void *data, size_t size, const char *content_type, OciManifest **ret,
                       char **ret_error);

/* The index entry for want; -ENOENT if none matches (ret_error lists the platforms there are). */
int oci_index_select(const OciManifest *index, const OciPlatform *want, const OciDescriptor **ret,
                     char **ret_error);

typedef struct OciImageConfig {
        OciPlatform platform;
        Digest *diff_ids;
        size_t n_diff_ids;
} OciImageConfig;

OciImageConfig *oci_image_config_free(OciImageConfig *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(OciImageConfig *, oci_image_config_free);
#define _cleanup_oci_image_config_ _cleanup_(oci_image_config_freep)

/* Parses an image config; only what the relay needs (platform, rootfs.diff_ids) is kept. */
int oci_image_config_parse(const void *data, size_t size, OciImageConfig **ret, char **ret_error);
