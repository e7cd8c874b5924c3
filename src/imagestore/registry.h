/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * A client of one OCI distribution registry (distribution-spec "pull"), over libcurl: manifests
 * and blobs, anonymous bearer tokens, redirects to blob storage. One client serves one thread at a
 * time; it keeps its connection and its token between requests.
 *
 * Errors: -ENOENT (404), -EACCES (401 after a token, 403), -EAGAIN (429 or 5xx: the registry says
 * to come back later), -ECONNREFUSED / -EHOSTUNREACH / -ETIMEDOUT (could not talk to it),
 * -EBADMSG (content does not match its digest, malformed answer), -E2BIG (larger than announced or
 * allowed), -EPROTO (any other HTTP status). Each comes with a message in *ret_error naming the
 * URL and what the registry said.
 */

#include <stdbool.h>
#include <stdint.h>

#include "cancel.h"
#include "digest.h"

typedef struct RegistryClient RegistryClient;

/* host is "name[:port]" or "[v6]:port"; plain_http talks HTTP instead of HTTPS. */
int registry_client_new(const char *host, bool plain_http, RegistryClient **ret);
RegistryClient *registry_client_free(RegistryClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(RegistryClient *, registry_client_free);
#define _cleanup_registry_client_ _cleanup_(registry_client_freep)

/* CA bundle for HTTPS (tests use their own); NULL: the system's. */
int registry_client_set_ca_file(RegistryClient *c, const char *path);
/* Asked at least once a second during every transfer (also a stalled one): when it says so, the
 * transfer stops and the call fails with -ECANCELED. c keeps the pointer. */
void registry_client_set_cancel(RegistryClient *c, const Cancel *cancel);

/*
 * Fetches a manifest or index by tag or by digest ("sha256:..."). A manifest fetched by digest is
 * verified against it. ret_digest is the digest of the bytes received.
 */
int registry_get_manifest(RegistryClient *c, const char *repository, const char *reference, char **ret_data,
                          size_t *ret_size, char **ret_content_type, Digest *ret_digest, char **ret_error);

/*
 * Streams a blob of the given size to sink, which returns 0 or a negative errno to stop. The
 * caller verifies the digest (the store's writer does while it writes); more bytes than size stop
 * the transfer with -E2BIG, fewer end it with -EBADMSG.
 */
typedef int (*registry_sink_t)(const void *data, size_t size, void *userdata);
int registry_get_blob(RegistryClient *c, const char *repository, const Digest *digest, uint64_t size,
                      registry_sink_t sink, void *userdata, char **ret_error);
