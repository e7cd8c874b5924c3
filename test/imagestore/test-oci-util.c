/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>

#include "../unit/tests.h"
#include "alloc-util.h"
#include "oci-util.h"
#include "string-util.h"

#define D1 "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
#define D2 "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

static void check_ref(const char *s, ImageTransport t, const char *host, const char *repo, const char *tag,
                      bool has_digest, const char *path, const char *name) {
        _cleanup_image_reference_ ImageReference *r = NULL;
        _cleanup_free_ char *n = NULL;

        ck_assert_msg(image_reference_parse(s, &r) == 0, "refused: %s", s);
        ck_assert_int_eq(r->transport, t);
        ck_assert_pstr_eq(r->host, host);
        ck_assert_pstr_eq(r->repository, repo);
        ck_assert_pstr_eq(r->tag, tag);
        ck_assert(r->has_digest == has_digest);
        ck_assert_pstr_eq(r->path, path);
        ck_assert_int_eq(image_reference_default_name(r, &n), 0);
        ck_assert_str_eq(n, name);
}

START_TEST(test_references) {
        ImageReference *r = NULL;

        check_ref("docker://127.0.0.1:5000/library/busybox:1.36", IMAGE_TRANSPORT_REGISTRY, "127.0.0.1:5000",
                  "library/busybox", "1.36", false, NULL, "127.0.0.1:5000/library/busybox:1.36");
        check_ref("docker://localhost:5000/tonari/test", IMAGE_TRANSPORT_REGISTRY, "localhost:5000", "tonari/test",
                  "latest", false, NULL, "localhost:5000/tonari/test:latest");
        check_ref("docker://[::1]:5000/a@" D1, IMAGE_TRANSPORT_REGISTRY, "[::1]:5000", "a", NULL, true, NULL,
                  "[::1]:5000/a@" D1);
        check_ref("docker://registry.example/a/b-c__d.e:tag@" D1, IMAGE_TRANSPORT_REGISTRY, "registry.example",
                  "a/b-c__d.e", "tag", true, NULL, "registry.example/a/b-c__d.e:tag");
        check_ref("oci:/srv/images/layout:v1", IMAGE_TRANSPORT_OCI_LAYOUT, NULL, NULL, "v1", false,
                  "/srv/images/layout", "layout:v1");
        check_ref("oci:/srv/images/layout", IMAGE_TRANSPORT_OCI_LAYOUT, NULL, NULL, NULL, false,
                  "/srv/images/layout", "layout");
        check_ref("oci-archive:/tmp/img.tar:latest", IMAGE_TRANSPORT_OCI_ARCHIVE, NULL, NULL, "latest", false,
                  "/tmp/img.tar", "img.tar:latest");
        check_ref("docker-archive:/tmp/d.tar", IMAGE_TRANSPORT_DOCKER_ARCHIVE, NULL, NULL, NULL, false, "/tmp/d.tar",
                  "d.tar");
        check_ref("docker-archive:/tmp/d.tar:busybox:1", IMAGE_TRANSPORT_DOCKER_ARCHIVE, NULL, "busybox", "1", false,
                  "/tmp/d.tar", "busybox:1");
        check_ref("docker-archive:/tmp/d.tar:localhost:5000/x/y:2", IMAGE_TRANSPORT_DOCKER_ARCHIVE, NULL,
                  "localhost:5000/x/y", "2", false, "/tmp/d.tar", "localhost:5000/x/y:2");

        const char *bad[] = {
                "", "busybox", "busybox:latest", "docker://busybox", "docker:///busybox", "docker://host/",
                "docker://host/Upper", "docker://host/a//b", "docker://host/a-", "docker://host/a:",
                "docker://host/a:-tag", "docker://host/a:" "t234567890123456789012345678901234567890123456789012345678901234"
                "5678901234567890123456789012345678901234567890123456789012345678901", "docker://host:0/a",
                "docker://host:65536/a", "docker://host:x/a", "docker://-host/a", "docker://[::1/a",
                "docker://host/a@sha256:abc", "docker://host/a@md5:abc", "docker://host/a b", "docker://host/a\n",
                "oci:relative/path", "oci:/", "oci:/a/../b", "oci:/a//b", "oci:/a:", "oci:/a:bad tag",
                "oci-archive:", "docker-archive:/a:notag", "docker-archive:/a:Repo:tag", "docker-archive:/a:r:",
                "http://host/a", "docker-archive:/a/:r:t",
        };
        FOREACH_ELEMENT(b, bad) {
                ck_assert_msg(image_reference_parse(*b, &r) == -EINVAL, "accepted: %s", *b);
                ck_assert_ptr_null(r);
        }
        ck_assert_int_eq(image_reference_parse(NULL, &r), -EINVAL);
}
END_TEST

START_TEST(test_grammars) {
        ck_assert(oci_tag_is_valid("v1.2_3-rc"));
        ck_assert(oci_tag_is_valid("_x"));
        ck_assert(!oci_tag_is_valid(".x"));
        ck_assert(!oci_tag_is_valid(""));
        ck_assert(!oci_tag_is_valid("a/b"));
        ck_assert(oci_repository_is_valid("a"));
        ck_assert(oci_repository_is_valid("a---b/c__d/e.f/g_h"));
        ck_assert(!oci_repository_is_valid("a___b"));
        ck_assert(!oci_repository_is_valid("a..b"));
        ck_assert(!oci_repository_is_valid("/a"));
        ck_assert(!oci_repository_is_valid("a/"));
        ck_assert(!oci_repository_is_valid("_a"));
}
END_TEST

START_TEST(test_platforms) {
        OciPlatform host = {};
        OciPlatform amd64 = { .os = (char *) "linux", .architecture = (char *) "amd64" };
        OciPlatform arm64 = { .os = (char *) "linux", .architecture = (char *) "arm64" };
        OciPlatform want_arm64v8 = { .os = (char *) "linux", .architecture = (char *) "arm64", .variant = (char *) "v8" };
        OciPlatform armv7 = { .os = (char *) "linux", .architecture = (char *) "arm", .variant = (char *) "v7" };
        OciPlatform want_armv6 = { .os = (char *) "linux", .architecture = (char *) "arm", .variant = (char *) "v6" };
        OciPlatform any = {};
        OciPlatform want_linux = { .os = (char *) "linux" };

        ck_assert_int_eq(oci_platform_host(&host), 0);
        ck_assert_str_eq(host.os, "linux");
#if defined(__x86_64__)
        ck_assert_str_eq(host.architecture, "amd64");
        ck_assert(oci_platform_matches(&amd64, &host));
        ck_assert(!oci_platform_matches(&arm64, &host));
#endif
        oci_platform_done(&host);
        ck_assert_ptr_null(host.os);

        ck_assert(oci_platform_matches(&arm64, &want_arm64v8));
        ck_assert(!oci_platform_matches(&armv7, &want_armv6));
        ck_assert(oci_platform_matches(&armv7, &any));
        ck_assert(oci_platform_matches(&armv7, &want_linux));
        ck_assert(!oci_platform_matches(&any, &want_linux));
}
END_TEST

static int parse(const char *json, const char *ct, OciManifest **ret, char **err) {
        return oci_manifest_parse(json, strlen(json), ct, ret, err);
}

#define CONFIG_DESC "{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" D1 "\",\"size\":7}"
#define LAYER(mt, size) "{\"mediaType\":\"" mt "\",\"digest\":\"" D2 "\",\"size\":" size "}"
#define OCI_GZ "application/vnd.oci.image.layer.v1.tar+gzip"

START_TEST(test_manifests) {
        _cleanup_oci_manifest_ OciManifest *m = NULL;
        _cleanup_free_ char *err = NULL;

        ck_assert_int_eq(parse("{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\","
                               "\"config\":" CONFIG_DESC ",\"layers\":[" LAYER(OCI_GZ, "100") ","
                               LAYER("application/vnd.oci.image.layer.v1.tar+zstd", "0") ","
                               LAYER("application/vnd.oci.image.layer.v1.tar", "5") "]}\n",
                               NULL, &m, &err), 0);
        ck_assert_int_eq(m->kind, OCI_DOCUMENT_MANIFEST);
        ck_assert_uint_eq(m->config.size, 7);
        ck_assert_uint_eq(m->n_layers, 3);
        ck_assert_uint_eq(m->layers[0].size, 100);
        ck_assert_int_eq(m->layers[0].compression, OCI_COMPRESSION_GZIP);
        ck_assert_int_eq(m->layers[1].compression, OCI_COMPRESSION_ZSTD);
        ck_assert_int_eq(m->layers[2].compression, OCI_COMPRESSION_NONE);
        m = oci_manifest_free(m);

        /* Docker schema 2, kind from the Content-Type; no mediaType in an OCI document: by shape. */
        ck_assert_int_eq(parse("{\"schemaVersion\":2,\"config\":{\"mediaType\":\"application/vnd.docker.container.image.v1+json\","
                               "\"digest\":\"" D1 "\",\"size\":1},\"layers\":["
                               LAYER("application/vnd.docker.image.rootfs.diff.tar.gzip", "3") "]}",
                               "application/vnd.docker.distribution.manifest.v2+json; charset=utf-8", &m, &err), 0);
        ck_assert_str_eq(m->media_type, "application/vnd.oci.image.manifest.v1+json");
        m = oci_manifest_free(m);
        ck_assert_int_eq(parse("{\"schemaVersion\":2,\"config\":" CONFIG_DESC ",\"layers\":[]}", "application/json",
                               &m, &err), 0);
        ck_assert_uint_eq(m->n_layers, 0);
        m = oci_manifest_free(m);

        /* Index with platforms, and selection. */
        ck_assert_int_eq(parse("{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":["
                               "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" D1 "\",\"size\":9,"
                               "\"platform\":{\"os\":\"linux\",\"architecture\":\"arm64\",\"variant\":\"v8\"},"
                               "\"annotations\":{\"org.opencontainers.image.ref.name\":\"v1\",\"other\":\"x\"}},"
                               "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" D2 "\",\"size\":8,"
                               "\"platform\":{\"os\":\"linux\",\"architecture\":\"amd64\"}},"
                               "{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" D2 "\",\"size\":8,"
                               "\"platform\":{\"os\":\"unknown\",\"architecture\":\"unknown\"}}]}",
                               NULL, &m, &err), 0);
        ck_assert_int_eq(m->kind, OCI_DOCUMENT_INDEX);
        ck_assert_uint_eq(m->n_manifests, 3);
        ck_assert_str_eq(m->manifests[0].ref_name, "v1");
        ck_assert_ptr_null(m->manifests[1].ref_name);
        const OciDescriptor *d = NULL;
        OciPlatform amd64 = { .os = (char *) "linux", .architecture = (char *) "amd64" };
        OciPlatform s390x = { .os = (char *) "linux", .architecture = (char *) "s390x" };
        ck_assert_int_eq(oci_index_select(m, &amd64, &d, &err), 0);
        ck_assert_ptr_eq(d, &m->manifests[1]);
        ck_assert_int_eq(oci_index_select(m, &s390x, &d, &err), -ENOENT);
        ck_assert_str_eq(err, "no image for linux/s390x in the index (it has: linux/arm64/v8, linux/amd64, unknown/unknown)");
        m = oci_manifest_free(m);
}
END_TEST

START_TEST(test_manifest_rejections) {
        static const struct {
                const char *json, *content_type;
                int error;
                const char *message;
        } cases[] = {
                { "{\"schemaVersion\":1,\"name\":\"x\"}", NULL, -EOPNOTSUPP, "Docker schema 1 manifests are not supported" },
                { "{\"schemaVersion\":3}", NULL, -EBADMSG, "unknown schemaVersion 3" },
                { "{\"schemaVersion\":\"2\"}", NULL, -EBADMSG, "\"schemaVersion\" is missing or not an integer" },
                { "[1]", NULL, -EBADMSG, "document is not a JSON object" },
                { "{\"schemaVersion\":2,", NULL, -EBADMSG, "invalid JSON: document ends early" },
                { "{\"schemaVersion\":2} {}", NULL, -EBADMSG, "trailing data after the JSON document at byte 20" },
                { "{\"schemaVersion\":2}", NULL, -EBADMSG, "neither an image manifest nor an index" },
                { "{\"schemaVersion\":2,\"mediaType\":\"text/html\"}", NULL, -EOPNOTSUPP,
                  "media type \"text/html\" is not an image manifest or index" },
                { "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\"manifests\":[]}",
                  "application/vnd.oci.image.manifest.v1+json", -EBADMSG,
                  "the document's media type \"application/vnd.oci.image.index.v1+json\" contradicts its Content-Type "
                  "\"application/vnd.oci.image.manifest.v1+json\"" },
                { "{\"schemaVersion\":2,\"layers\":[]}", NULL, -EBADMSG, "\"config\" is missing" },
                { "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:00\",\"size\":1},\"layers\":[]}",
                  NULL, -EBADMSG, "config: invalid digest \"sha256:00\"" },
                { "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha512:00\",\"size\":1},\"layers\":[]}",
                  NULL, -EOPNOTSUPP, "config: digest algorithm of \"sha512:00\" is not supported (only sha256)" },
                { "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" D1 "\",\"size\":-1},\"layers\":[]}",
                  NULL, -EBADMSG, "config: invalid size -1" },
                { "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" D1 "\",\"size\":1.5},\"layers\":[]}",
                  NULL, -EBADMSG, "config: \"size\" is missing or not an integer" },
                { "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" D1 "\",\"size\":99999999999},\"layers\":[]}",
                  NULL, -E2BIG, "config of 99999999999 bytes, more than 8388608" },
                { "{\"schemaVersion\":2,\"config\":{\"mediaType\":\"application/vnd.example.artifact\",\"digest\":\"" D1 "\",\"size\":1},\"layers\":[]}",
                  NULL, -EOPNOTSUPP, "config media type \"application/vnd.example.artifact\" is not a container image's" },
                { "{\"schemaVersion\":2,\"config\":" CONFIG_DESC ",\"layers\":[" LAYER("application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", "1") "]}",
                  NULL, -EOPNOTSUPP, "layers[0]: media type \"application/vnd.docker.image.rootfs.foreign.diff.tar.gzip\" is not supported (foreign layers are not fetched)" },
                { "{\"schemaVersion\":2,\"config\":" CONFIG_DESC ",\"layers\":[" LAYER(OCI_GZ, "1") ",{\"digest\":\"" D1 "\",\"size\":1}]}",
                  NULL, -EBADMSG, "\"mediaType\" is missing" },
                { "{\"schemaVersion\":2,\"config\":" CONFIG_DESC ",\"layers\":{}}", NULL, -EBADMSG, "\"layers\" is missing or not an array" },
        };
        FOREACH_ELEMENT(c, cases) {
                _cleanup_oci_manifest_ OciManifest *m = NULL;
                _cleanup_free_ char *err = NULL;

                ck_assert_int_eq(parse(c->json, c->content_type, &m, &err), c->error);
                ck_assert_ptr_null(m);
                ck_assert_str_eq(err, c->message);
        }

        /* NUL inside, too many layers, too big. */
        _cleanup_oci_manifest_ OciManifest *m = NULL;
        _cleanup_free_ char *err = NULL, *many = NULL;
        ck_assert_int_eq(oci_manifest_parse("{\"a\":\"\0\"}", 9, NULL, &m, &err), -EBADMSG);
        size_t cap = 200 * 200;
        many = malloc(cap);
        ck_assert_ptr_nonnull(many);
        int n = snprintf(many, cap, "{\"schemaVersion\":2,\"config\":" CONFIG_DESC ",\"layers\":[");
        for (unsigned i = 0; i < OCI_LAYERS_MAX + 1; i++)
                n += snprintf(many + n, cap - (size_t) n, "%s" LAYER(OCI_GZ, "1"), i ? "," : "");
        n += snprintf(many + n, cap - (size_t) n, "]}");
        ck_assert_int_eq(oci_manifest_parse(many, (size_t) n, NULL, &m, &err), -E2BIG);
        ck_assert_str_eq(err, "129 entries in \"layers\", more than 128");
        ck_assert_int_eq(oci_manifest_parse(many, OCI_MANIFEST_MAX_BYTES + 1, NULL, &m, &err), -E2BIG);
}
END_TEST

START_TEST(test_configs) {
        _cleanup_oci_image_config_ OciImageConfig *c = NULL;
        _cleanup_free_ char *err = NULL;
        const char *good = "{\"architecture\":\"amd64\",\"os\":\"linux\",\"config\":{\"Cmd\":[\"sh\"]},"
                           "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D1 "\",\"" D2 "\"]}}";
        char hex[DIGEST_STRING_MAX];

        ck_assert_int_eq(oci_image_config_parse(good, strlen(good), &c, &err), 0);
        ck_assert_str_eq(c->platform.os, "linux");
        ck_assert_str_eq(c->platform.architecture, "amd64");
        ck_assert_ptr_null(c->platform.variant);
        ck_assert_uint_eq(c->n_diff_ids, 2);
        ck_assert_str_eq(digest_to_string(&c->diff_ids[1], hex), D2);
        c = oci_image_config_free(c);

        static const struct {
                const char *json;
                int error;
                const char *message;
        } bad[] = {
                { "{\"os\":\"linux\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[]}}", -EBADMSG, "\"architecture\" is missing" },
                { "{\"os\":\"linux\",\"architecture\":\"amd64\"}", -EBADMSG, "\"rootfs\" is missing or not an object" },
                { "{\"os\":\"linux\",\"architecture\":\"amd64\",\"rootfs\":{\"type\":\"x\",\"diff_ids\":[]}}", -EBADMSG,
                  "rootfs type \"x\" is not \"layers\"" },
                { "{\"os\":\"linux\",\"architecture\":\"amd64\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:0\"]}}",
                  -EBADMSG, "rootfs.diff_ids[0]: invalid digest \"sha256:0\"" },
                { "{\"os\":\"linux\",\"architecture\":\"amd64\",\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[7]}}",
                  -EBADMSG, "rootfs.diff_ids[0]: invalid digest \"n/a\"" },
                { "{\"os\":1,\"architecture\":\"amd64\"}", -EBADMSG, "\"os\" is not a string" },
        };
        FOREACH_ELEMENT(b, bad) {
                ck_assert_int_eq(oci_image_config_parse(b->json, strlen(b->json), &c, &err), b->error);
                ck_assert_ptr_null(c);
                ck_assert_str_eq(err, b->message);
        }
}
END_TEST

TEST_SUITE("oci-util", test_references, test_grammars, test_platforms, test_manifests, test_manifest_rejections,
           test_configs)
