/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <inttypes.h>
#include <stdio.h>

#include "alloc-util.h"
#include "json-util.h"
#include "oci-util.h"
#include "path-util.h"
#include "string-util.h"

#define MT_OCI_MANIFEST "application/vnd.oci.image.manifest.v1+json"
#define MT_OCI_INDEX "application/vnd.oci.image.index.v1+json"
#define MT_OCI_CONFIG "application/vnd.oci.image.config.v1+json"
#define MT_DOCKER_MANIFEST "application/vnd.docker.distribution.manifest.v2+json"
#define MT_DOCKER_LIST "application/vnd.docker.distribution.manifest.list.v2+json"
#define MT_DOCKER_CONFIG "application/vnd.docker.container.image.v1+json"
#define MT_DOCKER_SCHEMA1 "application/vnd.docker.distribution.manifest.v1+json"
#define MT_DOCKER_SCHEMA1_SIGNED "application/vnd.docker.distribution.manifest.v1+prettyjws"

static const struct {
        const char *media_type;
        OciCompression compression;
} layer_types[] = {
        {"application/vnd.oci.image.layer.v1.tar", OCI_COMPRESSION_NONE},
        {"application/vnd.oci.image.layer.v1.tar+gzip", OCI_COMPRESSION_GZIP},
        {"application/vnd.oci.image.layer.v1.tar+zstd", OCI_COMPRESSION_ZSTD},
        {"application/vnd.docker.image.rootfs.diff.tar", OCI_COMPRESSION_NONE},
        {"application/vnd.docker.image.rootfs.diff.tar.gzip", OCI_COMPRESSION_GZIP},
        {"application/vnd.docker.image.rootfs.diff.tar.zstd", OCI_COMPRESSION_ZSTD},
};

/* Image references */

ImageReference *image_reference_free(ImageReference *r) {
        if (!r)
                return NULL;
        free(r->host);
        free(r->repository);
        free(r->tag);
        free(r->path);
        return mfree(r);
}

bool oci_tag_is_valid(const char *tag) {
        size_t n;

        /* [a-zA-Z0-9_][a-zA-Z0-9._-]{0,127} */
        if (!tag || !*tag)
                return false;
        n = strlen(tag);
        if (n > 128 || tag[0] == '.' || tag[0] == '-')
                return false;
        for (size_t i = 0; i < n; i++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", tag[i]))
                        return false;
        return true;
}

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

bool oci_repository_is_valid(const char *repo) {
        /* Components [a-z0-9]+ joined by '.', '_', '__' or any run of '-', separated by '/'. */
        if (!repo || !*repo || strlen(repo) > 255)
                return false;
        for (const char *p = repo;;) {
                if (!is_lower_alnum(*p))
                        return false;
                while (is_lower_alnum(*p))
                        p++;
                if (*p == 0)
                        return true;
                if (*p == '/') {
                        p++;
                        continue;
                }
                if (*p == '.')
                        p++;
                else if (*p == '_')
                        p += p[1] == '_' ? 2 : 1;
                else if (*p == '-')
                        while (*p == '-')
                                p++;
                else
                        return false;
        }
}

static bool host_is_valid(const char *host) {
        const char *colon, *end;

        if (!host || !*host || strlen(host) > 255)
                return false;
        if (host[0] == '[') {
                end = strchr(host, ']');
                if (!end || end == host + 1)
                        return false;
                for (const char *p = host + 1; p < end; p++)
                        if (!strchr("0123456789abcdefABCDEF:.", *p))
                                return false;
                colon = end[1] == ':' ? end + 1 : NULL;
                if (!colon && end[1])
                        return false;
        } else {
                colon = strchr(host, ':');
                end = colon ?: host + strlen(host);
                if (end == host)
                        return false;
                for (const char *p = host; p < end; p++)
                        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-", *p))
                                return false;
                if (host[0] == '-' || host[0] == '.')
                        return false;
        }
        if (colon) {
                unsigned long port = 0;
                const char *p = colon + 1;

                if (!*p || strlen(p) > 5)
                        return false;
                for (; *p; p++) {
                        if (*p < '0' || *p > '9')
                                return false;
                        port = port * 10 + (unsigned long) (*p - '0');
                }
                if (port == 0 || port > 65535)
                        return false;
        }
        return true;
}

/* "REPO" or "HOST[:PORT]/REPO", as "docker save" names images. */
static bool repository_maybe_with_host_is_valid(const char *s) {
        _cleanup_free_ char *host = NULL;
        const char *slash = strchr(s, '/');

        if (oci_repository_is_valid(s))
                return true;
        if (!slash)
                return false;
        host = strndup(s, (size_t) (slash - s));
        return host && host_is_valid(host) && oci_repository_is_valid(slash + 1);
}

static int parse_registry_reference(const char *s, ImageReference *r) {
        _cleanup_free_ char *copy = strdup(s);
        char *slash, *at, *colon, *repo;
        int k;

        if (!copy)
                return -ENOMEM;

        slash = strchr(copy, '/');
        if (!slash)
                return -EINVAL;
        *slash = 0;
        if (!host_is_valid(copy))
                return -EINVAL;
        repo = slash + 1;

        at = strrchr(repo, '@');
        if (at) {
                *at = 0;
                k = digest_from_string(at + 1, &r->digest);
                if (k < 0)
                        return -EINVAL;
                r->has_digest = true;
        }
        colon = strrchr(repo, ':');
        if (colon && !strchr(colon, '/')) {
                *colon = 0;
                if (!oci_tag_is_valid(colon + 1))
                        return -EINVAL;
                r->tag = strdup(colon + 1);
                if (!r->tag)
                        return -ENOMEM;
        }
        if (!oci_repository_is_valid(repo))
                return -EINVAL;
        if (!r->tag && !r->has_digest) {
                r->tag = strdup("latest");
                if (!r->tag)
                        return -ENOMEM;
        }
        r->host = strdup(copy);
        r->repository = strdup(repo);
        if (!r->host || !r->repository)
                return -ENOMEM;
        return 0;
}

static int parse_local_reference(const char *s, ImageReference *r) {
        _cleanup_free_ char *copy = strdup(s);
        char *colon, *rest;

        if (!copy)
                return -ENOMEM;
        colon = strchr(copy, ':');
        if (colon)
                *colon = 0;
        if (!path_is_normalized_absolute(copy) || strcmp(copy, "/") == 0)
                return -EINVAL;
        rest = colon ? colon + 1 : NULL;

        if (rest && r->transport == IMAGE_TRANSPORT_DOCKER_ARCHIVE) {
                /* REPO:TAG naming one of the archive's images; REPO may carry a host and port. */
                char *tag = strrchr(rest, ':');

                if (!tag || tag == rest || strchr(tag, '/'))
                        return -EINVAL;
                *tag++ = 0;
                if (!oci_tag_is_valid(tag))
                        return -EINVAL;
                if (!repository_maybe_with_host_is_valid(rest))
                        return -EINVAL;
                r->repository = strdup(rest);
                r->tag = strdup(tag);
                if (!r->repository || !r->tag)
                        return -ENOMEM;
        } else if (rest) {
                if (!oci_tag_is_valid(rest))
                        return -EINVAL;
                r->tag = strdup(rest);
                if (!r->tag)
                        return -ENOMEM;
        }
        r->path = strdup(copy);
        return r->path ? 0 : -ENOMEM;
}

int image_reference_parse(const char *s, ImageReference **ret) {
        static const char *const prefixes[_IMAGE_TRANSPORT_MAX] = {
                [IMAGE_TRANSPORT_REGISTRY] = "docker://",
                [IMAGE_TRANSPORT_OCI_LAYOUT] = "oci:",
                [IMAGE_TRANSPORT_OCI_ARCHIVE] = "oci-archive:",
                [IMAGE_TRANSPORT_DOCKER_ARCHIVE] = "docker-archive:",
        };
        _cleanup_image_reference_ ImageReference *r = NULL;
        const char *rest = NULL;
        int k;

        if (!s || string_has_cc(s) || strlen(s) > 4096)
                return -EINVAL;
        r = new0(ImageReference, 1);
        if (!r)
                return -ENOMEM;
        for (ImageTransport t = 0; t < _IMAGE_TRANSPORT_MAX && !rest; t++) {
                rest = startswith(s, prefixes[t]);
                r->transport = t;
        }
        if (!rest)
                return -EINVAL;

        if (r->transport == IMAGE_TRANSPORT_REGISTRY)
                k = parse_registry_reference(rest, r);
        else
                k = parse_local_reference(rest, r);
        if (k < 0)
                return k;
        *ret = TAKE_PTR(r);
        return 0;
}

int image_reference_default_name(const ImageReference *r, char **ret) {
        char *name;

        if (r->transport == IMAGE_TRANSPORT_REGISTRY) {
                char buf[DIGEST_STRING_MAX];

                if (r->tag)
                        name = strjoin(r->host, "/", r->repository, ":", r->tag);
                else
                        name = strjoin(r->host, "/", r->repository, "@", digest_to_string(&r->digest, buf));
        } else if (r->transport == IMAGE_TRANSPORT_DOCKER_ARCHIVE && r->repository)
                name = strjoin(r->repository, ":", r->tag);
        else {
                const char *base = strrchr(r->path, '/') + 1;

                name = r->tag ? strjoin(base, ":", r->tag) : strdup(base);
        }
        if (!name)
                return -ENOMEM;
        *ret = name;
        return 0;
}

/* Platforms */

void oci_platform_done(OciPlatform *p) {
        p->os = mfree(p->os);
        p->architecture = mfree(p->architecture);
        p->variant = mfree(p->variant);
}

int oci_platform_host(OciPlatform *ret) {
        /* GOARCH names of the architectures Debian builds tonari for. */
#if defined(__x86_64__)
        const char *arch = "amd64", *variant = NULL;
#elif defined(__aarch64__)
        const char *arch = "arm64", *variant = "v8";
#elif defined(__i386__)
        const char *arch = "386", *variant = NULL;
#elif defined(__arm__)
        const char *arch = "arm", *variant = "v7";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        const char *arch = "ppc64le", *variant = NULL;
#elif defined(__s390x__)
        const char *arch = "s390x", *variant = NULL;
#elif defined(__riscv) && __riscv_xlen == 64
        const char *arch = "riscv64", *variant = NULL;
#else
#error "unknown architecture: add its GOARCH name"
#endif
        OciPlatform p = {
                .os = strdup("linux"),
                .architecture = strdup(arch),
                .variant = variant ? strdup(variant) : NULL,
        };

        if (!p.os || !p.architecture || (variant && !p.variant)) {
                oci_platform_done(&p);
                return -ENOMEM;
        }
        *ret = p;
        return 0;
}

static bool field_matches(const char *have, const char *want) {
        return isempty(want) || streq_ptr(have, want);
}

bool oci_platform_matches(const OciPlatform *have, const OciPlatform *want) {
        /* arm64 images usually leave out the only variant there is. */
        if (!isempty(want->variant) && isempty(have->variant) && streq_ptr(want->architecture, "arm64") &&
            streq(want->variant, "v8"))
                return field_matches(have->os, want->os) &&
                       field_matches(have->architecture, want->architecture);
        return field_matches(have->os, want->os) && field_matches(have->architecture, want->architecture) &&
               field_matches(have->variant, want->variant);
}

/* JSON documents */

static int parse_json(const void *data, size_t size, json_object **ret, char **ret_error) {
        json_tokener *tok;
        json_object *j;
        enum json_tokener_error e;
        size_t end;

        if (size > INT32_MAX)
                return set_error_message(ret_error, -E2BIG, "document of %zu bytes", size);
        if (memchr(data, 0, size))
                return set_error_message(ret_error, -EBADMSG, "document contains a NUL byte");
        tok = json_tokener_new();
        if (!tok)
                return -ENOMEM;
        j = json_tokener_parse_ex(tok, data, (int) size);
        e = json_tokener_get_error(tok);
        end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);
        if (!j || e != json_tokener_success) {
                json_object_put(j);
                return set_error_message(ret_error, -EBADMSG, "invalid JSON: %s",
                                         e == json_tokener_continue ? "document ends early"
                                                                    : json_tokener_error_desc(e));
        }
        for (size_t i = end; i < size; i++)
                if (!strchr(" \t\r\n", ((const char *) data)[i])) {
                        json_object_put(j);
                        return set_error_message(ret_error, -EBADMSG,
                                                 "trailing data after the JSON document at byte %zu", i);
                }
        if (!json_object_is_type(j, json_type_object)) {
                json_object_put(j);
                return set_error_message(ret_error, -EBADMSG, "document is not a JSON object");
        }
        *ret = j;
        return 0;
}

/* A string member: 0 and *ret = NULL when absent, -EBADMSG when not a string. */
static int get_string(json_object *o, const char *key, const char **ret, char **ret_error) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null)) {
                *ret = NULL;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return set_error_message(ret_error, -EBADMSG, "\"%s\" is not a string", key);
        *ret = json_object_get_string(v);
        if (strlen(*ret) != (size_t) json_object_get_string_len(v))
                return set_error_message(ret_error, -EBADMSG, "\"%s\" contains a NUL character", key);
        return 0;
}

static int dup_string(json_object *o, const char *key, bool required, char **ret, char **ret_error) {
        const char *s;
        int r;

        r = get_string(o, key, &s, ret_error);
        if (r < 0)
                return r;
        if (!s) {
                if (required)
                        return set_error_message(ret_error, -EBADMSG, "\"%s\" is missing", key);
                *ret = NULL;
                return 0;
        }
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

static int parse_platform(json_object *o, OciPlatform *ret, char **ret_error) {
        OciPlatform p = {};
        int r;

        if (!json_object_is_type(o, json_type_object))
                return set_error_message(ret_error, -EBADMSG, "\"platform\" is not an object");
        r = dup_string(o, "os", true, &p.os, ret_error);
        if (r >= 0)
                r = dup_string(o, "architecture", true, &p.architecture, ret_error);
        if (r >= 0)
                r = dup_string(o, "variant", false, &p.variant, ret_error);
        if (r < 0) {
                oci_platform_done(&p);
                return r;
        }
        *ret = p;
        return 0;
}

static void descriptor_done(OciDescriptor *d) {
        d->media_type = mfree(d->media_type);
        d->ref_name = mfree(d->ref_name);
        oci_platform_done(&d->platform);
}

static int parse_descriptor(json_object *o, const char *what, OciDescriptor *ret, char **ret_error) {
        OciDescriptor d = {};
        json_object *v;
        const char *digest;
        int64_t size;
        int r;

        if (!json_object_is_type(o, json_type_object))
                return set_error_message(ret_error, -EBADMSG, "%s is not an object", what);

        r = dup_string(o, "mediaType", true, &d.media_type, ret_error);
        if (r < 0)
                goto fail;
        r = get_string(o, "digest", &digest, ret_error);
        if (r < 0)
                goto fail;
        r = digest_from_string(digest, &d.digest);
        if (r == -EOPNOTSUPP) {
                r = set_error_message(ret_error, r,
                                      "%s: digest algorithm of \"%s\" is not supported (only sha256)", what,
                                      digest);
                goto fail;
        }
        if (r < 0) {
                r = set_error_message(ret_error, -EBADMSG, "%s: invalid digest \"%s\"", what, strna(digest));
                goto fail;
        }
        if (!json_object_object_get_ex(o, "size", &v) || !json_object_is_type(v, json_type_int)) {
                r = set_error_message(ret_error, -EBADMSG, "%s: \"size\" is missing or not an integer",
                                      what);
                goto fail;
        }
        size = json_object_get_int64(v);
        if (size < 0 || (size == INT64_MAX && errno == ERANGE)) {
                r = set_error_message(ret_error, -EBADMSG, "%s: invalid size %s", what,
                                      json_object_to_json_string(v));
                goto fail;
        }
        d.size = (uint64_t) size;

        if (json_object_object_get_ex(o, "platform", &v)) {
                r = parse_platform(v, &d.platform, ret_error);
                if (r < 0)
                        goto fail;
        }
        if (json_object_object_get_ex(o, "annotations", &v)) {
                if (!json_object_is_type(v, json_type_object)) {
                        r = set_error_message(ret_error, -EBADMSG, "%s: \"annotations\" is not an object", what);
                        goto fail;
                }
                r = dup_string(v, "org.opencontainers.image.ref.name", false, &d.ref_name, ret_error);
                if (r < 0)
                        goto fail;
        }
        *ret = d;
        return 0;
fail:
        descriptor_done(&d);
        return r;
}

OciManifest *oci_manifest_free(OciManifest *m) {
        if (!m)
                return NULL;
        free(m->media_type);
        descriptor_done(&m->config);
        for (size_t i = 0; i < m->n_layers; i++)
                descriptor_done(&m->layers[i]);
        free(m->layers);
        for (size_t i = 0; i < m->n_manifests; i++)
                descriptor_done(&m->manifests[i]);
        free(m->manifests);
        return mfree(m);
}

static int kind_of_media_type(const char *mt, OciDocumentKind *ret, char **ret_error) {
        if (streq(mt, MT_OCI_MANIFEST) || streq(mt, MT_DOCKER_MANIFEST))
                *ret = OCI_DOCUMENT_MANIFEST;
        else if (streq(mt, MT_OCI_INDEX) || streq(mt, MT_DOCKER_LIST))
                *ret = OCI_DOCUMENT_INDEX;
        else if (streq(mt, MT_DOCKER_SCHEMA1) || streq(mt, MT_DOCKER_SCHEMA1_SIGNED))
                return set_error_message(ret_error, -EOPNOTSUPP,
                                         "Docker schema 1 manifests are not supported");
        else
                return set_error_message(ret_error, -EOPNOTSUPP,
                                         "media type \"%s\" is not an image manifest or index", mt);
        return 0;
}

static int parse_descriptor_array(json_object *root, const char *key, size_t max, OciDescriptor **ret,
                                  size_t *ret_n, char **ret_error) {
        json_object *a;
        OciDescriptor *d;
        size_t n;

        if (!json_object_object_get_ex(root, key, &a) || !json_object_is_type(a, json_type_array))
                return set_error_message(ret_error, -EBADMSG, "\"%s\" is missing or not an array", key);
        n = json_object_array_length(a);
        if (n > max)
                return set_error_message(ret_error, -E2BIG, "%zu entries in \"%s\", more than %zu", n, key,
                                         max);
        d = new0(OciDescriptor, n);
        if (!d)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                char what[64];
                int r;

                snprintf(what, sizeof(what), "%s[%zu]", key, i);
                r = parse_descriptor(json_object_array_get_idx(a, i), what, &d[i], ret_error);
                if (r < 0) {
                        for (size_t k = 0; k < i; k++)
                                descriptor_done(&d[k]);
                        free(d);
                        return r;
                }
        }
        *ret = d;
        *ret_n = n;
        return 0;
}

int oci_manifest_parse(const void *data, size_t size, const char *content_type, OciManifest **ret,
                       char **ret_error) {
        _cleanup_json_ json_object *root = NULL;
        _cleanup_oci_manifest_ OciManifest *m = NULL;
        _cleanup_free_ char *ct = NULL;
        const char *mt;
        json_object *v;
        bool have_kind = false;
        int r;

        if (size > OCI_MANIFEST_MAX_BYTES)
                return set_error_message(ret_error, -E2BIG, "manifest of %zu bytes, more than %u", size,
                                         OCI_MANIFEST_MAX_BYTES);
        r = parse_json(data, size, &root, ret_error);
        if (r < 0)
                return r;

        m = new0(OciManifest, 1);
        if (!m)
                return -ENOMEM;

        if (!json_object_object_get_ex(root, "schemaVersion", &v) || !json_object_is_type(v, json_type_int))
                return set_error_message(ret_error, -EBADMSG,
                                         "\"schemaVersion\" is missing or not an integer");
        if (json_object_get_int64(v) == 1)
                return set_error_message(ret_error, -EOPNOTSUPP,
                                         "Docker schema 1 manifests are not supported");
        if (json_object_get_int64(v) != 2)
                return set_error_message(ret_error, -EBADMSG, "unknown schemaVersion %s",
                                         json_object_to_json_string(v));

        /* The registry's Content-Type, without parameters, when it names a kind; a registry that
         * says "application/json" or nothing leaves it to the document. */
        if (!isempty(content_type) && !startswith(content_type, "application/json")) {
                ct = strndup(content_type, strcspn(content_type, "; \t"));
                if (!ct)
                        return -ENOMEM;
                r = kind_of_media_type(ct, &m->kind, ret_error);
                if (r < 0)
                        return r;
                have_kind = true;
        }

        r = dup_string(root, "mediaType", false, &m->media_type, ret_error);
        if (r < 0)
                return r;
        if (m->media_type) {
                OciDocumentKind k;

                r = kind_of_media_type(m->media_type, &k, ret_error);
                if (r < 0)
                        return r;
                if (have_kind && k != m->kind)
                        return set_error_message(
                                ret_error, -EBADMSG,
                                "the document's media type \"%s\" contradicts its Content-Type \"%s\"",
                                m->media_type, ct);
                m->kind = k;
                have_kind = true;
        }
        if (!have_kind) {
                if (json_object_object_get_ex(root, "manifests", NULL))
                        m->kind = OCI_DOCUMENT_INDEX;
                else if (json_object_object_get_ex(root, "layers", NULL))
                        m->kind = OCI_DOCUMENT_MANIFEST;
                else
                        return set_error_message(ret_error, -EBADMSG,
                                                 "neither an image manifest nor an index");
        }
        if (!m->media_type) {
                m->media_type = strdup(m->kind == OCI_DOCUMENT_INDEX ? MT_OCI_INDEX : MT_OCI_MANIFEST);
                if (!m->media_type)
                        return -ENOMEM;
        }

        if (m->kind == OCI_DOCUMENT_INDEX) {
                r = parse_descriptor_array(root, "manifests", OCI_INDEX_ENTRIES_MAX, &m->manifests,
                                           &m->n_manifests, ret_error);
                if (r < 0)
                        return r;
                *ret = TAKE_PTR(m);
                return 0;
        }

        if (!json_object_object_get_ex(root, "config", &v))
                return set_error_message(ret_error, -EBADMSG, "\"config\" is missing");
        r = parse_descriptor(v, "config", &m->config, ret_error);
        if (r < 0)
                return r;
        if (!streq(m->config.media_type, MT_OCI_CONFIG) && !streq(m->config.media_type, MT_DOCKER_CONFIG))
                return set_error_message(ret_error, -EOPNOTSUPP,
                                         "config media type \"%s\" is not a container image's",
                                         m->config.media_type);
        if (m->config.size > OCI_CONFIG_MAX_BYTES)
                return set_error_message(ret_error, -E2BIG, "config of %" PRIu64 " bytes, more than %u",
                                         m->config.size, OCI_CONFIG_MAX_BYTES);

        r = parse_descriptor_array(root, "layers", OCI_LAYERS_MAX, &m->layers, &m->n_layers, ret_error);
        if (r < 0)
                return r;
        for (size_t i = 0; i < m->n_layers; i++) {
                mt = m->layers[i].media_type;
                if (oci_layer_compression(mt, &m->layers[i].compression) < 0)
                        return set_error_message(ret_error, -EOPNOTSUPP,
                                                 "layers[%zu]: media type \"%s\" is not supported%s", i, mt,
                                                 strstr(mt, "nondistributable") || strstr(mt, "foreign")
                                                         ? " (foreign layers are not fetched)"
                                                         : "");
        }

        *ret = TAKE_PTR(m);
        return 0;
}

int oci_layer_compression(const char *media_type, OciCompression *ret) {
        FOREACH_ELEMENT (t, layer_types)
                if (streq_ptr(media_type, t->media_type)) {
                        *ret = t->compression;
                        return 0;
                }
        return -EOPNOTSUPP;
}

const char *oci_compression_to_string(OciCompression c) {
        static const char *const names[_OCI_COMPRESSION_MAX] = {
                [OCI_COMPRESSION_NONE] = "none",
                [OCI_COMPRESSION_GZIP] = "gzip",
                [OCI_COMPRESSION_ZSTD] = "zstd",
        };

        return c >= 0 && c < _OCI_COMPRESSION_MAX ? names[c] : NULL;
}

int oci_compression_from_string(const char *s, OciCompression *ret) {
        for (OciCompression c = 0; c < _OCI_COMPRESSION_MAX; c++)
                if (streq_ptr(s, oci_compression_to_string(c))) {
                        *ret = c;
                        return 0;
                }
        return -EINVAL;
}

int oci_index_select(const OciManifest *index, const OciPlatform *want, const OciDescriptor **ret,
                     char **ret_error) {
        _cleanup_free_ char *seen = NULL;

        if (index->kind != OCI_DOCUMENT_INDEX)
                return -EINVAL;
        for (size_t i = 0; i < index->n_manifests; i++) {
                const OciDescriptor *d = &index->manifests[i];

                if (!streq(d->media_type, MT_OCI_MANIFEST) && !streq(d->media_type, MT_DOCKER_MANIFEST))
                        continue;
                if (oci_platform_matches(&d->platform, want)) {
                        *ret = d;
                        return 0;
                }
        }

        for (size_t i = 0; i < index->n_manifests; i++) {
                const OciPlatform *p = &index->manifests[i].platform;
                char *n = strjoin(strempty(seen), seen ? ", " : "", strna(p->os), "/",
                                  strna(p->architecture), p->variant ? "/" : "", strempty(p->variant));

                if (!n)
                        return -ENOMEM;
                free_and_replace(seen, n);
        }
        return set_error_message(ret_error, -ENOENT, "no image for %s/%s%s%s in the index (it has: %s)",
                                 strna(want->os), strna(want->architecture), want->variant ? "/" : "",
                                 strempty(want->variant), seen ?: "nothing");
}

OciImageConfig *oci_image_config_free(OciImageConfig *c) {
        if (!c)
                return NULL;
        oci_platform_done(&c->platform);
        free(c->diff_ids);
        return mfree(c);
}

int oci_image_config_parse(const void *data, size_t size, OciImageConfig **ret, char **ret_error) {
        _cleanup_json_ json_object *root = NULL;
        _cleanup_oci_image_config_ OciImageConfig *c = NULL;
        json_object *rootfs, *ids;
        const char *type;
        size_t n;
        int r;

        if (size > OCI_CONFIG_MAX_BYTES)
                return set_error_message(ret_error, -E2BIG, "config of %zu bytes, more than %u", size,
                                         OCI_CONFIG_MAX_BYTES);
        r = parse_json(data, size, &root, ret_error);
        if (r < 0)
                return r;
        c = new0(OciImageConfig, 1);
        if (!c)
                return -ENOMEM;

        r = parse_platform(root, &c->platform, ret_error);
        if (r < 0)
                return r;

        if (!json_object_object_get_ex(root, "rootfs", &rootfs) ||
            !json_object_is_type(rootfs, json_type_object))
                return set_error_message(ret_error, -EBADMSG, "\"rootfs\" is missing or not an object");
        r = get_string(rootfs, "type", &type, ret_error);
        if (r < 0)
                return r;
        if (!streq_ptr(type, "layers"))
                return set_error_message(ret_error, -EBADMSG, "rootfs type \"%s\" is not \"layers\"",
                                         strna(type));
        if (!json_object_object_get_ex(rootfs, "diff_ids", &ids) ||
            !json_object_is_type(ids, json_type_array))
                return set_error_message(ret_error, -EBADMSG,
                                         "\"rootfs.diff_ids\" is missing or not an array");
        n = json_object_array_length(ids);
        if (n > OCI_LAYERS_MAX)
                return set_error_message(ret_error, -E2BIG, "%zu diff_ids, more than %u", n, OCI_LAYERS_MAX);
        c->diff_ids = new0(Digest, n);
        if (!c->diff_ids)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                json_object *v = json_object_array_get_idx(ids, i);
                const char *s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;

                r = digest_from_string(s, &c->diff_ids[i]);
                if (r < 0)
                        return set_error_message(ret_error, r == -EOPNOTSUPP ? r : -EBADMSG,
                                                 "rootfs.diff_ids[%zu]: %s digest \"%s\"", i,
                                                 r == -EOPNOTSUPP ? "unsupported" : "invalid", strna(s));
        }
        c->n_diff_ids = n;

        *ret = TAKE_PTR(c);
        return 0;
}
