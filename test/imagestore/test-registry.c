/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The registry client against a real docker-registry that test-registry.sh started and filled
 * with make-test-image's image (TEST_REGISTRY_HOST, TEST_REGISTRY_DATA, TEST_REPOSITORY, TEST_TAG).
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <unistd.h>

#include "../unit/tests.h"
#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "oci-util.h"
#include "registry.h"
#include "store.h"
#include "string-util.h"

static const char *env(const char *name) {
        const char *v = getenv(name);

        ck_assert_msg(v, "$%s is not set: run this test through test-registry.sh", name);
        return v;
}

/* HTTPS with the registry's own certificate as CA when TEST_REGISTRY_CA is set, plain HTTP else. */
static RegistryClient *client(void) {
        const char *ca = getenv("TEST_REGISTRY_CA");
        RegistryClient *c = NULL;

        ck_assert_int_eq(registry_client_new(env("TEST_REGISTRY_HOST"), !ca, &c), 0);
        if (ca)
                ck_assert_int_eq(registry_client_set_ca_file(c, ca), 0);
        return c;
}

static OciManifest *fetch_manifest(RegistryClient *c, Digest *ret_digest) {
        _cleanup_free_ char *data = NULL, *ct = NULL, *err = NULL;
        OciManifest *m = NULL;
        size_t size;

        ck_assert_msg(registry_get_manifest(c, env("TEST_REPOSITORY"), env("TEST_TAG"), &data, &size, &ct,
                                            ret_digest, &err) == 0, "%s", strna(err));
        ck_assert_int_eq(oci_manifest_parse(data, size, ct, &m, &err), 0);
        return m;
}

static int to_writer(const void *data, size_t size, void *userdata) {
        return store_writer_write(userdata, data, size);
}

static int to_writer_null(const void *data, size_t size, void *userdata) {
        return 0;
}

START_TEST(test_manifests) {
        _cleanup_registry_client_ RegistryClient *c = client();
        _cleanup_oci_manifest_ OciManifest *m = NULL;
        _cleanup_free_ char *data = NULL, *ct = NULL, *err = NULL;
        char ref[DIGEST_STRING_MAX];
        Digest d, again;
        size_t size;

        m = fetch_manifest(c, &d);
        ck_assert_int_eq(m->kind, OCI_DOCUMENT_MANIFEST);
        ck_assert_uint_eq(m->n_layers, 4);
        ck_assert_int_eq(m->layers[0].compression, OCI_COMPRESSION_GZIP);

        /* By digest: the same document, verified. */
        ck_assert_int_eq(registry_get_manifest(c, env("TEST_REPOSITORY"), digest_to_string(&d, ref), &data, &size,
                                               &ct, &again, &err), 0);
        ck_assert(digest_equal(&d, &again));

        /* Unknown tag, unknown digest, unknown repository: 404 with the registry's words. */
        ck_assert_int_eq(registry_get_manifest(c, env("TEST_REPOSITORY"), "no-such-tag", NULL, NULL, NULL, NULL, &err),
                         -ENOENT);
        ck_assert_msg(strstr(err, "HTTP 404") && strstr(err, "MANIFEST_UNKNOWN"), "%s", err);
        again = d;
        again.bytes[0] ^= 1;
        ck_assert_int_eq(registry_get_manifest(c, env("TEST_REPOSITORY"), digest_to_string(&again, ref), NULL, NULL,
                                               NULL, NULL, &err), -ENOENT);
        ck_assert_int_eq(registry_get_manifest(c, "tonari/none", "v1", NULL, NULL, NULL, NULL, &err), -ENOENT);
        ck_assert_msg(strstr(err, "HTTP 404"), "%s", err);

        /* Refused before any request. */
        ck_assert_int_eq(registry_get_manifest(c, "../etc", "v1", NULL, NULL, NULL, NULL, &err), -EINVAL);
        ck_assert_str_eq(err, "invalid repository \"../etc\"");
        ck_assert_int_eq(registry_get_manifest(c, "tonari/test", "v1/../x", NULL, NULL, NULL, NULL, &err), -EINVAL);
}
END_TEST

START_TEST(test_blobs_into_store) {
        _cleanup_registry_client_ RegistryClient *c = client();
        _cleanup_oci_manifest_ OciManifest *m = NULL;
        _cleanup_free_ char *root = strjoin(test_tmpdir(), "/store"), *err = NULL;
        _cleanup_store_ Store *s = NULL;
        uint64_t total = 0;
        Digest d;

        ck_assert_int_eq(store_open(root, &s), 0);
        m = fetch_manifest(c, &d);
        for (size_t i = 0; i <= m->n_layers; i++) {
                const OciDescriptor *desc = i < m->n_layers ? &m->layers[i] : &m->config;
                _cleanup_store_writer_ StoreWriter *w = NULL;
                uint64_t size;
                Digest got;

                ck_assert_int_eq(store_writer_new(s, STORE_BLOB, &desc->digest, desc->size, &w), 0);
                ck_assert_msg(registry_get_blob(c, env("TEST_REPOSITORY"), &desc->digest, desc->size, to_writer, w,
                                                &err) == 0, "%s", strna(err));
                ck_assert_int_eq(store_writer_commit(w, &got, &size), 1);
                ck_assert(digest_equal(&got, &desc->digest));
                ck_assert_uint_eq(size, desc->size);
                ck_assert_int_eq(store_has(s, STORE_BLOB, &desc->digest), 1);
                total += size;
        }
        ck_assert_uint_gt(total, 1000000); /* busybox is in there */

        /* A registry that sends more, or less, than the manifest announced. */
        ck_assert_int_eq(registry_get_blob(c, env("TEST_REPOSITORY"), &m->config.digest, m->config.size - 1,
                                           to_writer, NULL, &err), -E2BIG);
        ck_assert_msg(strstr(err, "more data than expected"), "%s", err);
        {
                _cleanup_store_writer_ StoreWriter *w = NULL;

                ck_assert_int_eq(store_writer_new(s, STORE_OBJECT, NULL, UINT64_MAX, &w), 0);
                ck_assert_int_eq(registry_get_blob(c, env("TEST_REPOSITORY"), &m->config.digest, m->config.size + 1,
                                                   to_writer, w, &err), -EBADMSG);
                ck_assert_msg(strstr(err, "blob ended after"), "%s", err);
        }
        /* Unknown blob. */
        ck_assert_int_eq(registry_get_blob(c, env("TEST_REPOSITORY"), &d, 10, to_writer, NULL, &err), -ENOENT);
}
END_TEST

START_TEST(test_corrupted_blob) {
        _cleanup_registry_client_ RegistryClient *c = client();
        _cleanup_oci_manifest_ OciManifest *m = NULL;
        _cleanup_free_ char *root = strjoin(test_tmpdir(), "/store"), *err = NULL, *path = NULL, *saved = NULL;
        _cleanup_store_ Store *s = NULL;
        _cleanup_store_writer_ StoreWriter *w = NULL;
        char hex[DIGEST_HEX_LEN + 1];
        _cleanup_close_ int fd = -EBADF;
        char byte;
        Digest d;

        ck_assert_int_eq(store_open(root, &s), 0);
        m = fetch_manifest(c, &d);

        /* The registry stores blobs by digest and serves them unverified: flip one byte of the
         * config in its storage. */
        digest_to_hex(&m->config.digest, hex);
        ck_assert_int_ge(asprintf(&path, "%s/blobs/sha256/%.2s/%s/data", env("TEST_REGISTRY_DATA"), hex, hex), 0);
        fd = open(path, O_RDWR | O_CLOEXEC);
        ck_assert_msg(fd >= 0, "%s: %m", path);
        ck_assert_int_eq(pread(fd, &byte, 1, 2), 1);
        byte ^= 0x20;
        ck_assert_int_eq(pwrite(fd, &byte, 1, 2), 1);

        ck_assert_int_eq(store_writer_new(s, STORE_BLOB, &m->config.digest, m->config.size, &w), 0);
        ck_assert_int_eq(registry_get_blob(c, env("TEST_REPOSITORY"), &m->config.digest, m->config.size, to_writer, w,
                                           &err), 0);
        ck_assert_int_eq(store_writer_commit(w, NULL, NULL), -EBADMSG);
        ck_assert_int_eq(store_has(s, STORE_BLOB, &m->config.digest), 0);

        byte ^= 0x20;
        ck_assert_int_eq(pwrite(fd, &byte, 1, 2), 1);
}
END_TEST

START_TEST(test_unreachable) {
        _cleanup_registry_client_ RegistryClient *c = NULL;
        _cleanup_free_ char *err = NULL, *host = NULL;
        struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        socklen_t len = sizeof(sa);
        _cleanup_close_ int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        /* A port that was just free and is not listened on: refused at once. */
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        ck_assert_int_eq(getsockname(fd, (struct sockaddr *) &sa, &len), 0);
        ck_assert_int_ge(asprintf(&host, "127.0.0.1:%u", ntohs(sa.sin_port)), 0);
        ck_assert_int_eq(registry_client_new(host, true, &c), 0);
        ck_assert_int_eq(registry_get_manifest(c, "tonari/test", "v1", NULL, NULL, NULL, NULL, &err), -ECONNREFUSED);
        ck_assert_msg(strstr(err, host), "%s", err);

        ck_assert_int_eq(registry_client_new("host/path", true, &c), -EINVAL);
        ck_assert_int_eq(registry_client_new("", false, &c), -EINVAL);
}
END_TEST

/* Only when the registry demands tokens (TOKEN_REQUESTS is the token server's request log). */
START_TEST(test_token_flow) {
        _cleanup_registry_client_ RegistryClient *c = NULL;
        _cleanup_oci_manifest_ OciManifest *m = NULL;
        _cleanup_free_ char *err = NULL, *before = NULL, *log = NULL;
        const char *requests = getenv("TOKEN_REQUESTS"), *mine;
        size_t size, before_size = 0;
        Digest d;

        if (!requests)
                return;
        /* The other tests ran against this registry too: look at this test's requests only. */
        (void) read_full_file(requests, &before, &before_size);
        c = client();
        m = fetch_manifest(c, &d);
        /* The token is kept: the blob needs no second token request. */
        ck_assert_int_eq(registry_get_blob(c, env("TEST_REPOSITORY"), &m->config.digest, m->config.size, to_writer_null,
                                           NULL, &err), 0);
        ck_assert_int_eq(read_full_file(requests, &log, &size), 0);
        ck_assert_uint_gt(size, before_size);
        mine = log + before_size;
        ck_assert_msg(strstr(mine, "scope=repository%3Atonari%2Ftest%3Apull") && strstr(mine, "service=tonari-test"),
                      "%s", mine);
        ck_assert_msg(strchr(mine, '\n') == log + size - 1, "more than one token request: %s", mine);

        /* The token server refuses this repository's pull: the registry says 401 again. */
        ck_assert_int_eq(registry_get_manifest(c, "private/test", "v1", NULL, NULL, NULL, NULL, &err), -EACCES);
        ck_assert_msg(strstr(err, "HTTP 401"), "%s", err);
}
END_TEST

/* Only over HTTPS: a certificate nobody vouches for is refused, and plain HTTP is not HTTPS. */
START_TEST(test_tls_verified) {
        _cleanup_registry_client_ RegistryClient *c = NULL;
        _cleanup_free_ char *err = NULL;

        if (!getenv("TEST_REGISTRY_CA"))
                return;
        ck_assert_int_eq(registry_client_new(env("TEST_REGISTRY_HOST"), false, &c), 0);
        ck_assert_int_eq(registry_get_manifest(c, env("TEST_REPOSITORY"), env("TEST_TAG"), NULL, NULL, NULL, NULL, &err),
                         -EPROTO);
        ck_assert_msg(strstr(err, "certificate"), "%s", err);
        c = registry_client_free(c);
        ck_assert_int_eq(registry_client_new(env("TEST_REGISTRY_HOST"), true, &c), 0);
        ck_assert_int_lt(registry_get_manifest(c, env("TEST_REPOSITORY"), env("TEST_TAG"), NULL, NULL, NULL, NULL, &err),
                         0);
}
END_TEST

int main(void) {
        Suite *s = suite_create("registry");
        TCase *tc = tcase_create("core");
        int r;

        curl_global_init(CURL_GLOBAL_DEFAULT);
        tcase_add_test(tc, test_manifests);
        tcase_add_test(tc, test_blobs_into_store);
        tcase_add_test(tc, test_corrupted_blob);
        tcase_add_test(tc, test_unreachable);
        tcase_add_test(tc, test_token_flow);
        tcase_add_test(tc, test_tls_verified);
        suite_add_tcase(s, tc);
        r = run_suite(s);
        curl_global_cleanup();
        return r;
}
