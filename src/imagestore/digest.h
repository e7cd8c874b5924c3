/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Content digests as OCI writes them: "sha256:" and 64 lowercase hex digits. sha256 is the only
 * algorithm the image relay accepts; a manifest naming another one ("sha512:...") is refused with
 * -EOPNOTSUPP rather than trusted unverified.
 */

#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define DIGEST_SIZE 32
#define DIGEST_HEX_LEN (DIGEST_SIZE * 2)
#define DIGEST_PREFIX "sha256:"
/* "sha256:" + 64 hex digits + NUL. */
#define DIGEST_STRING_MAX (STRLEN(DIGEST_PREFIX) + DIGEST_HEX_LEN + 1)

typedef struct Digest {
        uint8_t bytes[DIGEST_SIZE];
} Digest;

/* Parses "sha256:<64 lowercase hex>". -EOPNOTSUPP for another well-formed algorithm, -EINVAL else. */
int digest_from_string(const char *s, Digest *ret);

/* Parses 64 lowercase hex digits without the algorithm (the store's file names). */
int digest_from_hex(const char *s, Digest *ret);

/* Writes "sha256:<hex>" into buf and returns buf. */
char *digest_to_string(const Digest *d, char buf[static DIGEST_STRING_MAX]);

/* The hex part alone: buf must hold DIGEST_HEX_LEN + 1 bytes. */
char *digest_to_hex(const Digest *d, char buf[static DIGEST_HEX_LEN + 1]);

static inline int digest_compare(const Digest *a, const Digest *b) {
        return memcmp(a->bytes, b->bytes, DIGEST_SIZE);
}

static inline bool digest_equal(const Digest *a, const Digest *b) {
        return digest_compare(a, b) == 0;
}

/* Streaming sha256. */
typedef struct Hasher Hasher;

int hasher_new(Hasher **ret);
int hasher_update(Hasher *h, const void *data, size_t size);
/* Ends the stream and resets the hasher, so that it can hash the next stream. */
int hasher_finish(Hasher *h, Digest *ret);
Hasher *hasher_free(Hasher *h);
DEFINE_TRIVIAL_CLEANUP_FUNC(Hasher *, hasher_free);
#define _cleanup_hasher_ _cleanup_(hasher_freep)

/* sha256 of one buffer. */
int digest_buffer(const void *data, size_t size, Digest *ret);

/* HMAC-SHA256 of one buffer under key (RFC 2104). */
int digest_hmac(const void *key, size_t key_size, const void *data, size_t size, Digest *ret);
