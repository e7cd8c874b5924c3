/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <limits.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "alloc-util.h"
#include "digest.h"
#include "string-util.h"

struct Hasher {
        EVP_MD_CTX *ctx;
};

static int unhex(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        /* Upper case is refused: OCI digests are lowercase, and one spelling keeps file names and
         * comparisons of strings exact. */
        return -EINVAL;
}

int digest_from_hex(const char *s, Digest *ret) {
        Digest d;

        if (!s || strlen(s) != DIGEST_HEX_LEN)
                return -EINVAL;
        for (size_t i = 0; i < DIGEST_SIZE; i++) {
                int hi = unhex(s[2 * i]), lo = unhex(s[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -EINVAL;
                d.bytes[i] = (uint8_t) (hi << 4 | lo);
        }
        *ret = d;
        return 0;
}

int digest_from_string(const char *s, Digest *ret) {
        const char *hex, *colon;

        if (!s)
                return -EINVAL;
        hex = startswith(s, DIGEST_PREFIX);
        if (hex)
                return digest_from_hex(hex, ret);

        /* OCI's grammar: algorithm components of [a-z0-9] joined by [+._-], then ':' and an encoded
         * part of [a-zA-Z0-9=_-]. Well-formed but not sha256 is "not supported", not "invalid". */
        colon = strchr(s, ':');
        if (!colon || colon == s || !colon[1])
                return -EINVAL;
        for (const char *p = s; p < colon; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789+._-", *p))
                        return -EINVAL;
        for (const char *p = colon + 1; *p; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789=_-", *p))
                        return -EINVAL;
        return -EOPNOTSUPP;
}

char *digest_to_hex(const Digest *d, char buf[static DIGEST_HEX_LEN + 1]) {
        static const char hexdigits[] = "0123456789abcdef";

        for (size_t i = 0; i < DIGEST_SIZE; i++) {
                buf[2 * i] = hexdigits[d->bytes[i] >> 4];
                buf[2 * i + 1] = hexdigits[d->bytes[i] & 0xf];
        }
        buf[DIGEST_HEX_LEN] = 0;
        return buf;
}

char *digest_to_string(const Digest *d, char buf[static DIGEST_STRING_MAX]) {
        memcpy(buf, DIGEST_PREFIX, STRLEN(DIGEST_PREFIX));
        digest_to_hex(d, buf + STRLEN(DIGEST_PREFIX));
        return buf;
}

int hasher_new(Hasher **ret) {
        _cleanup_(hasher_freep) Hasher *h = NULL;

        h = new0(Hasher, 1);
        if (!h)
                return -ENOMEM;
        h->ctx = EVP_MD_CTX_new();
        if (!h->ctx)
                return -ENOMEM;
        if (EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1)
                return -EIO;
        *ret = TAKE_PTR(h);
        return 0;
}

int hasher_update(Hasher *h, const void *data, size_t size) {
        if (size > 0 && EVP_DigestUpdate(h->ctx, data, size) != 1)
                return -EIO;
        return 0;
}

int hasher_finish(Hasher *h, Digest *ret) {
        Digest d;
        unsigned n = 0;

        if (EVP_DigestFinal_ex(h->ctx, d.bytes, &n) != 1 || n != DIGEST_SIZE)
                return -EIO;
        if (EVP_DigestInit_ex(h->ctx, EVP_sha256(), NULL) != 1)
                return -EIO;
        *ret = d;
        return 0;
}

Hasher *hasher_free(Hasher *h) {
        if (!h)
                return NULL;
        EVP_MD_CTX_free(h->ctx);
        return mfree(h);
}

int digest_buffer(const void *data, size_t size, Digest *ret) {
        Digest d;
        unsigned n = 0;

        if (EVP_Digest(data, size, d.bytes, &n, EVP_sha256(), NULL) != 1 || n != DIGEST_SIZE)
                return -EIO;
        *ret = d;
        return 0;
}

int digest_hmac(const void *key, size_t key_size, const void *data, size_t size, Digest *ret) {
        Digest d;
        unsigned n = 0;

        if (key_size > INT_MAX ||
            !HMAC(EVP_sha256(), key, (int) key_size, data, size, d.bytes, &n) || n != DIGEST_SIZE)
                return -EIO;
        *ret = d;
        return 0;
}
