/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "../unit/tests.h"
#include "alloc-util.h"
#include "registry-util.h"
#include "string-util.h"

START_TEST(test_bearer_challenges) {
        BearerChallenge c = {};

        ck_assert_int_eq(bearer_challenge_parse("Bearer realm=\"https://auth.example/token\",service=\"registry.example\","
                                                "scope=\"repository:library/busybox:pull\"", &c), 0);
        ck_assert_str_eq(c.realm, "https://auth.example/token");
        ck_assert_str_eq(c.service, "registry.example");
        ck_assert_str_eq(c.scope, "repository:library/busybox:pull");
        bearer_challenge_done(&c);
        ck_assert_ptr_null(c.realm);

        /* Case, spaces, token (unquoted) values, escapes, unknown parameters, no scope. */
        ck_assert_int_eq(bearer_challenge_parse("  bearer  Realm = \"http://127.0.0.1:5001/t?a=1\" , error=\"insufficient\\\"scope\","
                                                "service=reg", &c), -EBADMSG);
        ck_assert_int_eq(bearer_challenge_parse("bearer Realm=\"http://127.0.0.1:5001/t?a=1\", error=\"x\\\"y\", service=reg",
                                                &c), 0);
        ck_assert_str_eq(c.realm, "http://127.0.0.1:5001/t?a=1");
        ck_assert_str_eq(c.service, "reg");
        ck_assert_ptr_null(c.scope);
        bearer_challenge_done(&c);

        ck_assert_int_eq(bearer_challenge_parse("Basic realm=\"Registry\"", &c), -EOPNOTSUPP);
        ck_assert_int_eq(bearer_challenge_parse("Bearer", &c), -EBADMSG);
        ck_assert_int_eq(bearer_challenge_parse("Bearer service=\"x\"", &c), -EBADMSG);
        ck_assert_int_eq(bearer_challenge_parse("Bearer realm=\"unterminated", &c), -EBADMSG);
        ck_assert_int_eq(bearer_challenge_parse("Bearer realm=\"ftp://x/\"", &c), -EINVAL);
        ck_assert_int_eq(bearer_challenge_parse("Bearer realm=\"file:///etc/passwd\"", &c), -EINVAL);
        ck_assert_int_eq(bearer_challenge_parse("Bearer realm=\"https://x/\" junk", &c), -EBADMSG);
        ck_assert_int_eq(bearer_challenge_parse(NULL, &c), -EBADMSG);
        ck_assert_ptr_null(c.realm);
}
END_TEST

static int token(const char *json, char **ret) {
        return bearer_token_parse(json, strlen(json), ret);
}

START_TEST(test_bearer_tokens) {
        _cleanup_free_ char *t = NULL;

        ck_assert_int_eq(token("{\"token\":\"abc.def.ghi\",\"expires_in\":300}", &t), 0);
        ck_assert_str_eq(t, "abc.def.ghi");
        t = mfree(t);
        ck_assert_int_eq(token("{\"access_token\":\"xyz\"}", &t), 0);
        ck_assert_str_eq(t, "xyz");
        t = mfree(t);

        ck_assert_int_eq(token("{\"token\":\"\"}", &t), -EBADMSG);
        ck_assert_int_eq(token("{\"token\":\"a b\"}", &t), -EBADMSG);
        ck_assert_int_eq(token("{\"token\":\"a\\r\\nX-Injected: 1\"}", &t), -EBADMSG);
        ck_assert_int_eq(token("{\"token\":7}", &t), -EBADMSG);
        ck_assert_int_eq(token("[\"token\"]", &t), -EBADMSG);
        ck_assert_int_eq(token("{\"token\":\"abc\"", &t), -EBADMSG);
        ck_assert_int_eq(token("", &t), -EBADMSG);
        ck_assert_ptr_null(t);
}
END_TEST

TEST_SUITE("registry-util", test_bearer_challenges, test_bearer_tokens)
