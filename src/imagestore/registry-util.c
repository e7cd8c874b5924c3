/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <strings.h>

#include "alloc-util.h"
#include "json-util.h"
#include "registry-util.h"
#include "string-util.h"

/* A token is a JWT or an opaque string; anything this long is not one a registry would accept. */
#define BEARER_TOKEN_MAX 65536

void bearer_challenge_done(BearerChallenge *c) {
        c->realm = mfree(c->realm);
        c->service = mfree(c->service);
        c->scope = mfree(c->scope);
}

static bool is_token_char(char c) {
        /* c != 0: strchr() finds the terminating NUL too. */
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               (c != 0 && strchr("!#$%&'*+-.^_`|~", c));
}

static const char *skip_ws(const char *p) {
        while (*p == ' ' || *p == '\t')
                p++;
        return p;
}

int bearer_challenge_parse(const char *header, BearerChallenge *ret) {
        BearerChallenge c = {};
        const char *p;
        int r = -EBADMSG;

        if (!header)
                return -EBADMSG;
        p = skip_ws(header);
        if (strncasecmp(p, "Bearer", 6) != 0 || (p[6] != ' ' && p[6] != '\t'))
                return strncasecmp(p, "Bearer", 6) == 0 && p[6] == 0 ? -EBADMSG : -EOPNOTSUPP;
        p = skip_ws(p + 6);

        while (*p) {
                _cleanup_free_ char *value = NULL;
                const char *name = p;
                size_t name_len, n = 0;

                while (is_token_char(*p))
                        p++;
                name_len = (size_t) (p - name);
                if (name_len == 0 || *p != '=')
                        goto fail;
                p++;

                value = malloc(strlen(p) + 1);
                if (!value) {
                        r = -ENOMEM;
                        goto fail;
                }
                if (*p == '"') {
                        for (p++; *p != '"'; p++) {
                                if (*p == 0)
                                        goto fail;
                                if (*p == '\\' && p[1])
                                        p++;
                                value[n++] = *p;
                        }
                        p++;
                } else
                        while (is_token_char(*p) || *p == '/' || *p == ':')
                                value[n++] = *p++;
                value[n] = 0;

                char **field = name_len == 5 && strncasecmp(name, "realm", 5) == 0     ? &c.realm
                               : name_len == 7 && strncasecmp(name, "service", 7) == 0 ? &c.service
                               : name_len == 5 && strncasecmp(name, "scope", 5) == 0   ? &c.scope
                                                                                       : NULL;
                if (field && !*field)
                        *field = TAKE_PTR(value);

                p = skip_ws(p);
                if (*p == ',')
                        p = skip_ws(p + 1);
                else if (*p)
                        goto fail;
        }

        if (!c.realm)
                goto fail;
        if (!startswith(c.realm, "https://") && !startswith(c.realm, "http://")) {
                r = -EINVAL;
                goto fail;
        }
        *ret = c;
        return 0;
fail:
        bearer_challenge_done(&c);
        return r;
}

int bearer_token_parse(const void *data, size_t size, char **ret) {
        _cleanup_json_ json_object *root = NULL;
        json_tokener *tok;
        json_object *v;
        const char *t;

        if (size > BEARER_TOKEN_MAX * 2 || size > INT32_MAX)
                return -E2BIG;
        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        root = json_tokener_parse_ex(tok, data, (int) size);
        if (json_tokener_get_error(tok) != json_tokener_success)
                root = (json_object_put(root), NULL);
        json_tokener_free(tok);
        if (!root || !json_object_is_type(root, json_type_object))
                return -EBADMSG;

        if ((!json_object_object_get_ex(root, "token", &v) || !json_object_is_type(v, json_type_string)) &&
            (!json_object_object_get_ex(root, "access_token", &v) ||
             !json_object_is_type(v, json_type_string)))
                return -EBADMSG;
        t = json_object_get_string(v);
        if (isempty(t) || strlen(t) > BEARER_TOKEN_MAX)
                return -EBADMSG;
        /* It goes into an HTTP header: no control characters, no spaces. */
        for (const char *q = t; *q; q++)
                if ((unsigned char) *q <= ' ' || *q == 0x7f)
                        return -EBADMSG;
        *ret = strdup(t);
        return *ret ? 0 : -ENOMEM;
}
