/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Pure pieces of the OCI distribution client: the bearer challenge and the token response. */

#include <stddef.h>

typedef struct BearerChallenge {
        char *realm;
        char *service; /* NULL when the challenge names none */
        char *scope;   /* NULL when the challenge names none */
} BearerChallenge;

void bearer_challenge_done(BearerChallenge *c);

/*
 * Parses a WWW-Authenticate header value (RFC 7235 with the auth-params of the distribution
 * spec's token flow): 'Bearer realm="https://auth/token",service="registry",scope="repository:a:pull"'.
 * -EOPNOTSUPP for another scheme (Basic: tonari pulls anonymously), -EBADMSG when malformed or
 * without a realm, -EINVAL when the realm is not an http(s) URL.
 */
int bearer_challenge_parse(const char *header, BearerChallenge *ret);

/* The token of a token server's JSON answer ("token", or OAuth2's "access_token"). */
int bearer_token_parse(const void *data, size_t size, char **ret);
