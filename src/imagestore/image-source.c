/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "image-source.h"
#include "json-util.h"
#include "mkdir.h"
#include "path-util.h"
#include "rm-rf.h"
#include "string-util.h"
#include "tar-util.h"

/* index.json and a docker-archive's manifest.json are small; anything larger is not one. */
#define LAYOUT_INDEX_MAX_BYTES (4U * 1024U * 1024U)
/* A docker-archive holds a few files per layer; this many entries is an attack, not an image. */
#define ARCHIVE_ENTRIES_MAX 100000U
#define READ_CHUNK_BYTES (1024U * 1024U)

typedef struct DockerArchiveFile {
        Digest digest;
        char *path; /* relative to the work directory */
} DockerArchiveFile;

struct ImageSource {
        ImageTransport transport;
        char *tag;

        RegistryClient *registry;
        char *repository;
        bool has_digest;
        Digest digest;

        const Cancel *cancel;

        int layout_fd; /* an OCI layout (given, or extracted from an oci-archive) */
        int work_fd;   /* archives: where they were extracted */
        char *work_dir;

        /* docker-archive: the manifest made for it, and the files its descriptors name */
        char *synthetic;
        size_t synthetic_size;
        Digest synthetic_digest;
        DockerArchiveFile *files;
        size_t n_files;
};

ImageSource *image_source_free(ImageSource *s) {
        if (!s)
                return NULL;
        registry_client_free(s->registry);
        free(s->repository);
        free(s->tag);
        safe_close(s->layout_fd);
        if (s->work_fd >= 0) {
                /* Only what this source extracted; the directory itself is the caller's. */
                (void) rm_rf_children(s->work_fd);
                safe_close(s->work_fd);
        }
        free(s->work_dir);
        free(s->synthetic);
        for (size_t i = 0; i < s->n_files; i++)
                free(s->files[i].path);
        free(s->files);
        return mfree(s);
}

/*
 * Opens a file of the source for reading: a regular file, or -EBADMSG. O_NONBLOCK, so that a FIFO
 * (or a device) is seen and refused here instead of blocking the open until someone writes to it;
 * on a regular file the flag changes nothing.
 */
static int open_regular_at(int dir_fd, const char *path) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = openat(dir_fd, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        return TAKE_FD(fd);
}

/* What read_file_at() failed of, for messages. */
static const char *read_error(int r) {
        return r == -EBADMSG ? "not a regular file" : r == -E2BIG ? "too large" : strerror(-r);
}

/* Reads all of a regular file below dir_fd, refusing more than max bytes. */
static int read_file_at(int dir_fd, const char *path, size_t max, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = open_regular_at(dir_fd, path);

        return fd < 0 ? fd : read_full_fd(fd, max, ret, ret_size);
}

/* Streams a file below dir_fd to sink, checking it has exactly size bytes. */
static int stream_file_at(int dir_fd, const char *path, uint64_t size, const Cancel *cancel, registry_sink_t sink,
                          void *userdata, char **ret_error) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        uint64_t done = 0;
        struct stat st;
        int r;

        fd = open_regular_at(dir_fd, path);
        if (fd == -EBADMSG)
                return set_error_message(ret_error, fd, "%s is not a regular file", path);
        if (fd < 0)
                return set_error_message(ret_error, fd, "%s: %s", path, strerror(-fd));
        if (fstat(fd, &st) < 0)
                return -errno;
        if ((uint64_t) st.st_size != size)
                return set_error_message(ret_error, -EBADMSG, "%s has %" PRIu64 " bytes, its descriptor says %" PRIu64,
                                         path, (uint64_t) st.st_size, size);
        buf = malloc(READ_CHUNK_BYTES);
        if (!buf)
                return -ENOMEM;
        while (done < size) {
                ssize_t k;

                if (cancel_requested(cancel))
                        return set_error_message(ret_error, -ECANCELED, "cancelled");
                k = read(fd, buf, READ_CHUNK_BYTES);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return set_error_message(ret_error, -errno, "%s: %m", path);
                }
                if (k == 0)
                        return set_error_message(ret_error, -EBADMSG, "%s ended early", path);
                r = sink(buf, (size_t) k, userdata);
                if (r < 0)
                        return set_error_message(ret_error, r, "%s: %s", path, strerror(-r));
                done += (uint64_t) k;
        }
        return 0;
}

static int blob_path(const Digest *d, char buf[static STRLEN("blobs/sha256/") + DIGEST_HEX_LEN + 1]) {
        memcpy(buf, "blobs/sha256/", STRLEN("blobs/sha256/"));
        digest_to_hex(d, buf + STRLEN("blobs/sha256/"));
        return 0;
}

/* Archives */

typedef bool (*name_filter_t)(const char *name);

static bool oci_archive_name(const char *name) {
        const char *hex;
        Digest d;

        if (streq(name, "oci-layout") || streq(name, "index.json"))
                return true;
        hex = startswith(name, "blobs/sha256/");
        return hex && digest_from_hex(hex, &d) >= 0;
}

static bool docker_archive_name(const char *name) {
        /* manifest.json, <hex>.json, <hex>/layer.tar, blobs/sha256/<hex>, repositories: names
         * of a few safe characters, at most three levels deep. */
        unsigned depth = 0;

        if (!path_is_normalized_relative(name))
                return false;
        for (const char *p = name; *p; p++) {
                if (*p == '/')
                        depth++;
                else if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-", *p))
                        return false;
        }
        return depth <= 2;
}

/*
 * Extracts the regular files of the archive at path whose names pass filter into work_fd. Other
 * entries (directories, links, devices, names the format does not define) are skipped: nothing
 * is created that the filter did not allow.
 */
static int extract_archive(const char *path, int work_fd, name_filter_t filter, const Cancel *cancel,
                           char **ret_error) {
        _cleanup_(tar_locale_leave) locale_t old_locale = (locale_t) 0;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_archive_ struct archive *a = NULL;
        struct archive_entry *e;
        unsigned n_entries = 0;
        int r = 0, k;

        /* Member names are bytes: an archive with a non-ASCII name is not refused (tar-util.h). */
        r = tar_locale_enter(&old_locale);
        if (r < 0)
                return r;
        /* Opened here rather than by libarchive: a FIFO at path is refused, not waited on. */
        fd = open_regular_at(AT_FDCWD, path);
        if (fd == -EBADMSG)
                return set_error_message(ret_error, fd, "%s is not a regular file", path);
        if (fd < 0)
                return set_error_message(ret_error, fd, "%s: %s", path, strerror(-fd));
        a = archive_read_new();
        if (!a)
                return -ENOMEM;
        archive_read_support_filter_all(a);
        archive_read_support_format_tar(a);
        if (archive_read_open_fd(a, fd, READ_CHUNK_BYTES) != ARCHIVE_OK) {
                k = archive_errno(a);
                return set_error_message(ret_error, k > 0 ? -k : -EBADMSG, "%s: %s", path,
                                         archive_error_string(a));
        }

        while ((k = tar_next_header(a, &e)) == ARCHIVE_OK) {
                const char *name = archive_entry_pathname(e);
                _cleanup_close_ int out = -EBADF;
                const void *block;
                size_t size;
                la_int64_t offset;

                if (++n_entries > ARCHIVE_ENTRIES_MAX)
                        return set_error_message(ret_error, -E2BIG, "%s: more than %u entries", path,
                                                 ARCHIVE_ENTRIES_MAX);
                if (cancel_requested(cancel))
                        return set_error_message(ret_error, -ECANCELED, "cancelled");
                if (!name)
                        continue;
                while (startswith(name, "./"))
                        name += 2;
                if (archive_entry_filetype(e) != AE_IFREG || !filter(name))
                        continue;

                r = mkdirat_parents(work_fd, name, 0700);
                if (r < 0)
                        return r;
                /* O_EXCL: a name twice in the archive is refused, not silently replaced. */
                out = openat(work_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (out < 0)
                        return set_error_message(ret_error, errno == EEXIST ? -EBADMSG : -errno,
                                                 "%s: \"%s\": %s", path, name,
                                                 errno == EEXIST ? "appears twice" : strerror(errno));
                while ((k = archive_read_data_block(a, &block, &size, &offset)) == ARCHIVE_OK) {
                        if (cancel_requested(cancel))
                                return set_error_message(ret_error, -ECANCELED, "cancelled");
                        ssize_t n = pwrite(out, block, size, offset);

                        /* A short write sets no errno: the one there is stale. */
                        if (n != (ssize_t) size) {
                                r = n < 0 ? -errno : -EIO;
                                return set_error_message(ret_error, r, "%s: %s", name, strerror(-r));
                        }
                }
                if (k != ARCHIVE_EOF)
                        return set_error_message(ret_error, -EBADMSG, "%s: \"%s\": %s", path, name,
                                                 archive_error_string(a));
        }
        if (k != ARCHIVE_EOF)
                r = set_error_message(ret_error, -EBADMSG, "%s: %s", path, archive_error_string(a));
        return r;
}

/* Layouts */

static int layout_check(int fd, char **ret_error) {
        _cleanup_json_ json_object *j = NULL;
        _cleanup_free_ char *data = NULL;
        json_object *v;
        size_t size;
        int r;

        r = read_file_at(fd, "oci-layout", 4096, &data, &size);
        if (r < 0)
                return set_error_message(ret_error, r == -ENOENT ? -EBADMSG : r, "not an OCI image layout (oci-layout: %s)",
                                         read_error(r));
        j = json_tokener_parse(data);
        if (!j || !json_object_object_get_ex(j, "imageLayoutVersion", &v) || !json_object_is_type(v, json_type_string))
                return set_error_message(ret_error, -EBADMSG, "oci-layout is not a layout's JSON");
        if (!startswith(json_object_get_string(v), "1."))
                return set_error_message(ret_error, -EOPNOTSUPP, "image layout version \"%s\" is not supported",
                                         json_object_get_string(v));
        return 0;
}

static int layout_top(ImageSource *s, char **ret_data, size_t *ret_size, char **ret_content_type, Digest *ret_digest,
                      char **ret_error) {
        _cleanup_oci_manifest_ OciManifest *index = NULL;
        _cleanup_free_ char *data = NULL, *doc = NULL;
        const OciDescriptor *found = NULL;
        char path[STRLEN("blobs/sha256/") + DIGEST_HEX_LEN + 1];
        size_t size, n_named = 0;
        Digest d;
        int r;

        r = read_file_at(s->layout_fd, "index.json", LAYOUT_INDEX_MAX_BYTES, &data, &size);
        if (r < 0)
                return set_error_message(ret_error, r, "index.json: %s", read_error(r));
        r = oci_manifest_parse(data, size, NULL, &index, ret_error);
        if (r < 0)
                return r;
        if (index->kind != OCI_DOCUMENT_INDEX)
                return set_error_message(ret_error, -EBADMSG, "index.json is not an image index");

        for (size_t i = 0; i < index->n_manifests; i++) {
                const OciDescriptor *e = &index->manifests[i];

                if (s->tag ? streq_ptr(e->ref_name, s->tag) : true) {
                        found = e;
                        n_named++;
                }
        }
        if (n_named == 0)
                return set_error_message(ret_error, -ENOENT, "the layout has no image tagged \"%s\"", strna(s->tag));
        if (n_named > 1)
                return set_error_message(ret_error, -EINVAL, s->tag ? "the layout has %zu images tagged \"%s\""
                                                                   : "the layout has %zu images; name one with :TAG%s",
                                         n_named, strempty(s->tag));
        if (found->size > OCI_MANIFEST_MAX_BYTES)
                return set_error_message(ret_error, -E2BIG, "manifest of %" PRIu64 " bytes", found->size);

        blob_path(&found->digest, path);
        r = read_file_at(s->layout_fd, path, OCI_MANIFEST_MAX_BYTES, &doc, &size);
        if (r < 0)
                return set_error_message(ret_error, r == -ENOENT ? -EBADMSG : r, "%s: %s", path, read_error(r));
        r = digest_buffer(doc, size, &d);
        if (r < 0)
                return r;
        if (size != found->size || !digest_equal(&d, &found->digest))
                return set_error_message(ret_error, -EBADMSG, "%s does not match its descriptor in index.json", path);

        if (ret_content_type) {
                *ret_content_type = strdup(found->media_type);
                if (!*ret_content_type)
                        return -ENOMEM;
        }
        *ret_data = TAKE_PTR(doc);
        *ret_size = size;
        if (ret_digest)
                *ret_digest = d;
        return 0;
}

/* docker-archive */

static int hash_file_at(int dir_fd, const char *path, const Cancel *cancel, Digest *ret, uint64_t *ret_size,
                        bool *ret_gzip, bool *ret_zstd) {
        _cleanup_hasher_ Hasher *h = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        uint64_t size = 0;
        int r;

        fd = open_regular_at(dir_fd, path);
        if (fd < 0)
                return fd;
        buf = malloc(READ_CHUNK_BYTES);
        if (!buf)
                return -ENOMEM;
        r = hasher_new(&h);
        if (r < 0)
                return r;
        for (;;) {
                ssize_t k;

                if (cancel_requested(cancel))
                        return -ECANCELED;
                k = read(fd, buf, READ_CHUNK_BYTES);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                if (size == 0) {
                        *ret_gzip = k >= 2 && buf[0] == 0x1f && buf[1] == 0x8b;
                        *ret_zstd = k >= 4 && buf[0] == 0x28 && buf[1] == 0xb5 && buf[2] == 0x2f && buf[3] == 0xfd;
                }
                r = hasher_update(h, buf, (size_t) k);
                if (r < 0)
                        return r;
                size += (uint64_t) k;
        }
        *ret_size = size;
        return hasher_finish(h, ret);
}

static int add_file(ImageSource *s, const char *path, const Digest *d) {
        DockerArchiveFile *f = reallocarray(s->files, s->n_files + 1, sizeof(DockerArchiveFile));

        if (!f)
                return -ENOMEM;
        s->files = f;
        f[s->n_files].path = strdup(path);
        if (!f[s->n_files].path)
                return -ENOMEM;
        f[s->n_files].digest = *d;
        s->n_files++;
        return 0;
}

static json_object *descriptor_json(const char *media_type, const Digest *d, uint64_t size) {
        char buf[DIGEST_STRING_MAX];
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        if (json_object_object_add(o, "mediaType", json_object_new_string(media_type)) < 0 ||
            json_object_object_add(o, "size", json_object_new_int64((int64_t) size)) < 0 ||
            json_object_object_add(o, "digest", json_object_new_string(digest_to_string(d, buf))) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

/* Picks the manifest.json entry, hashes its files and writes the Docker schema 2 manifest for it. */
static int docker_archive_prepare(ImageSource *s, const ImageReference *ref, char **ret_error) {
        _cleanup_json_ json_object *list = NULL, *manifest = NULL;
        _cleanup_free_ char *data = NULL, *want = NULL;
        json_object *entry = NULL, *config, *layers, *out_layers, *v;
        const char *text;
        size_t size, n;
        int r;

        r = read_file_at(s->work_fd, "manifest.json", LAYOUT_INDEX_MAX_BYTES, &data, &size);
        if (r < 0)
                return set_error_message(ret_error, r == -ENOENT ? -EBADMSG : r, "manifest.json: %s", read_error(r));
        list = json_tokener_parse(data);
        if (!list || !json_object_is_type(list, json_type_array))
                return set_error_message(ret_error, -EBADMSG, "manifest.json is not a JSON array");
        n = json_object_array_length(list);

        if (ref->repository) {
                want = strjoin(ref->repository, ":", ref->tag);
                if (!want)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++) {
                json_object *e = json_object_array_get_idx(list, i), *tags;

                if (!want) {
                        if (n > 1)
                                return set_error_message(ret_error, -EINVAL,
                                                         "the archive has %zu images; name one with :REPOSITORY:TAG", n);
                        entry = e;
                        break;
                }
                if (!json_object_object_get_ex(e, "RepoTags", &tags) || !json_object_is_type(tags, json_type_array))
                        continue;
                for (size_t k = 0; k < json_object_array_length(tags); k++) {
                        const char *tag = json_object_get_string(json_object_array_get_idx(tags, k));
                        const char *rest = tag ? endswith(tag, want) : NULL;

                        /* Tools write the name with the registry they assume in front of it
                         * ("REGISTRY/REPOSITORY:TAG"): the name matches whole or after a '/'. */
                        if (rest && (rest == tag || rest[-1] == '/'))
                                entry = e;
                }
                if (entry)
                        break;
        }
        if (!entry)
                return set_error_message(ret_error, -ENOENT, "the archive has no image \"%s\"", strna(want));
        if (!json_object_is_type(entry, json_type_object) || !json_object_object_get_ex(entry, "Config", &config) ||
            !json_object_is_type(config, json_type_string) || !json_object_object_get_ex(entry, "Layers", &layers) ||
            !json_object_is_type(layers, json_type_array))
                return set_error_message(ret_error, -EBADMSG, "manifest.json: entry without Config or Layers");
        if (json_object_array_length(layers) > OCI_LAYERS_MAX)
                return set_error_message(ret_error, -E2BIG, "manifest.json: more than %u layers", OCI_LAYERS_MAX);

        manifest = json_object_new_object();
        out_layers = json_object_new_array();
        if (!manifest || !out_layers) {
                json_object_put(out_layers);
                return -ENOMEM;
        }
        if (json_object_object_add(manifest, "schemaVersion", json_object_new_int(2)) < 0 ||
            json_object_object_add(manifest, "mediaType",
                                   json_object_new_string("application/vnd.docker.distribution.manifest.v2+json")) < 0) {
                json_object_put(out_layers);
                return -ENOMEM;
        }

        for (size_t i = 0; i <= json_object_array_length(layers); i++) {
                bool is_config = i == json_object_array_length(layers), gzip = false, zstd = false;
                const char *path, *mt;
                uint64_t fsize = 0;
                Digest d;

                v = is_config ? config : json_object_array_get_idx(layers, i);
                path = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
                if (!path || !docker_archive_name(path)) {
                        json_object_put(out_layers);
                        return set_error_message(ret_error, -EBADMSG, "manifest.json names \"%s\", which is not a file of "
                                                 "the archive", strna(path));
                }
                r = hash_file_at(s->work_fd, path, s->cancel, &d, &fsize, &gzip, &zstd);
                if (r < 0) {
                        json_object_put(out_layers);
                        return set_error_message(ret_error, r == -ENOENT ? -EBADMSG : r, "%s: %s", path,
                                                 read_error(r));
                }
                r = add_file(s, path, &d);
                if (r < 0) {
                        json_object_put(out_layers);
                        return r;
                }
                mt = is_config ? "application/vnd.docker.container.image.v1+json" :
                     gzip      ? "application/vnd.docker.image.rootfs.diff.tar.gzip" :
                     zstd      ? "application/vnd.oci.image.layer.v1.tar+zstd" :
                                 "application/vnd.docker.image.rootfs.diff.tar";
                v = descriptor_json(mt, &d, fsize);
                if (!v || (is_config ? json_object_object_add(manifest, "config", v) : json_object_array_add(out_layers, v)) < 0) {
                        json_object_put(v);
                        json_object_put(out_layers);
                        return -ENOMEM;
                }
        }
        if (json_object_object_add(manifest, "layers", out_layers) < 0) {
                json_object_put(out_layers);
                return -ENOMEM;
        }

        text = json_object_to_json_string_ext(manifest, JSON_C_TO_STRING_PLAIN);
        s->synthetic = strdup(text);
        if (!s->synthetic)
                return -ENOMEM;
        s->synthetic_size = strlen(text);
        return digest_buffer(s->synthetic, s->synthetic_size, &s->synthetic_digest);
}

/* The interface */

int image_source_open(const ImageReference *ref, const ImageSourceOptions *options, ImageSource **ret,
                      char **ret_error) {
        _cleanup_(image_source_freep) ImageSource *s = NULL;
        int r;

        s = new0(ImageSource, 1);
        if (!s)
                return -ENOMEM;
        s->layout_fd = s->work_fd = -EBADF;
        s->transport = ref->transport;
        s->cancel = options ? options->cancel : NULL;
        if (ref->tag) {
                s->tag = strdup(ref->tag);
                if (!s->tag)
                        return -ENOMEM;
        }

        switch (ref->transport) {
        case IMAGE_TRANSPORT_REGISTRY:
                r = registry_client_new(ref->host, options && options->plain_http, &s->registry);
                if (r < 0)
                        return set_error_message(ret_error, r, "invalid registry host \"%s\"", ref->host);
                if (options && options->ca_file) {
                        r = registry_client_set_ca_file(s->registry, options->ca_file);
                        if (r < 0)
                                return r;
                }
                registry_client_set_cancel(s->registry, s->cancel);
                s->repository = strdup(ref->repository);
                if (!s->repository)
                        return -ENOMEM;
                s->has_digest = ref->has_digest;
                s->digest = ref->digest;
                break;

        case IMAGE_TRANSPORT_OCI_LAYOUT:
                s->layout_fd = open(ref->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (s->layout_fd < 0)
                        return set_error_message(ret_error, -errno, "%s: %m", ref->path);
                r = layout_check(s->layout_fd, ret_error);
                if (r < 0)
                        return r;
                break;

        case IMAGE_TRANSPORT_OCI_ARCHIVE:
        case IMAGE_TRANSPORT_DOCKER_ARCHIVE:
                if (!options || !options->work_dir)
                        return -EINVAL;
                s->work_fd = open(options->work_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (s->work_fd < 0)
                        return -errno;
                r = extract_archive(ref->path, s->work_fd,
                                    ref->transport == IMAGE_TRANSPORT_OCI_ARCHIVE ? oci_archive_name : docker_archive_name,
                                    s->cancel, ret_error);
                if (r < 0)
                        return r;
                if (ref->transport == IMAGE_TRANSPORT_OCI_ARCHIVE) {
                        s->layout_fd = fcntl(s->work_fd, F_DUPFD_CLOEXEC, 3);
                        if (s->layout_fd < 0)
                                return -errno;
                        r = layout_check(s->layout_fd, ret_error);
                } else
                        r = docker_archive_prepare(s, ref, ret_error);
                if (r < 0)
                        return r;
                break;

        default:
                return -EINVAL;
        }

        *ret = TAKE_PTR(s);
        return 0;
}

int image_source_get_document(ImageSource *s, const Digest *digest, char **ret_data, size_t *ret_size,
                              char **ret_content_type, Digest *ret_digest, char **ret_error) {
        _cleanup_free_ char *data = NULL;
        char path[STRLEN("blobs/sha256/") + DIGEST_HEX_LEN + 1], buf[DIGEST_STRING_MAX];
        size_t size;
        Digest d;
        int r;

        switch (s->transport) {
        case IMAGE_TRANSPORT_REGISTRY:
                if (digest)
                        return registry_get_manifest(s->registry, s->repository, digest_to_string(digest, buf), ret_data,
                                                     ret_size, ret_content_type, ret_digest, ret_error);
                return registry_get_manifest(s->registry, s->repository,
                                             s->has_digest ? digest_to_string(&s->digest, buf) : s->tag, ret_data,
                                             ret_size, ret_content_type, ret_digest, ret_error);

        case IMAGE_TRANSPORT_DOCKER_ARCHIVE:
                if (digest && !digest_equal(digest, &s->synthetic_digest))
                        return set_error_message(ret_error, -ENOENT, "no document %s in the archive",
                                                 digest_to_string(digest, buf));
                *ret_data = memdup(s->synthetic, s->synthetic_size + 1);
                if (!*ret_data)
                        return -ENOMEM;
                *ret_size = s->synthetic_size;
                if (ret_content_type)
                        *ret_content_type = NULL;
                if (ret_digest)
                        *ret_digest = s->synthetic_digest;
                return 0;

        default:
                if (!digest)
                        return layout_top(s, ret_data, ret_size, ret_content_type, ret_digest, ret_error);
                blob_path(digest, path);
                r = read_file_at(s->layout_fd, path, OCI_MANIFEST_MAX_BYTES, &data, &size);
                if (r < 0)
                        return set_error_message(ret_error, r, "%s: %s", path, read_error(r));
                r = digest_buffer(data, size, &d);
                if (r < 0)
                        return r;
                if (!digest_equal(&d, digest))
                        return set_error_message(ret_error, -EBADMSG, "%s does not match its digest", path);
                *ret_data = TAKE_PTR(data);
                *ret_size = size;
                if (ret_content_type)
                        *ret_content_type = NULL;
                if (ret_digest)
                        *ret_digest = d;
                return 0;
        }
}

int image_source_get_blob(ImageSource *s, const OciDescriptor *d, registry_sink_t sink, void *userdata,
                          char **ret_error) {
        char path[STRLEN("blobs/sha256/") + DIGEST_HEX_LEN + 1], buf[DIGEST_STRING_MAX];

        switch (s->transport) {
        case IMAGE_TRANSPORT_REGISTRY:
                return registry_get_blob(s->registry, s->repository, &d->digest, d->size, sink, userdata, ret_error);

        case IMAGE_TRANSPORT_DOCKER_ARCHIVE:
                for (size_t i = 0; i < s->n_files; i++)
                        if (digest_equal(&s->files[i].digest, &d->digest))
                                return stream_file_at(s->work_fd, s->files[i].path, d->size, s->cancel, sink,
                                                      userdata, ret_error);
                return set_error_message(ret_error, -ENOENT, "no blob %s in the archive", digest_to_string(&d->digest, buf));

        default:
                blob_path(&d->digest, path);
                return stream_file_at(s->layout_fd, path, d->size, s->cancel, sink, userdata, ret_error);
        }
}
