/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "image-db.h"
#include "json-util.h"
#include "string-util.h"

#define IMAGE_DB_FILE "images.json"
#define IMAGE_DB_TMP "images.json.new"
/* The file format's version; a newer relay may add fields, an older one refuses a newer major. */
#define IMAGE_DB_VERSION 1
#define IMAGE_DB_MAX_BYTES (256U * 1024U * 1024U)

static void layer_record_done(LayerRecord *l) {
        l->media_type = mfree(l->media_type);
}

ImageRecord *image_record_free(ImageRecord *r) {
        if (!r)
                return NULL;
        free(r->name);
        free(r->source);
        oci_platform_done(&r->platform);
        for (size_t i = 0; i < r->n_layers; i++)
                layer_record_done(&r->layers[i]);
        free(r->layers);
        return mfree(r);
}

static int strdup_maybe(const char *s, char **ret) {
        *ret = NULL;
        if (!s)
                return 0;
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int image_record_copy(const ImageRecord *r, ImageRecord **ret) {
        _cleanup_image_record_ ImageRecord *c = NULL;

        c = new0(ImageRecord, 1);
        if (!c)
                return -ENOMEM;
        *c = (ImageRecord) {
                .manifest_digest = r->manifest_digest,
                .config_digest = r->config_digest,
                .has_index_digest = r->has_index_digest,
                .index_digest = r->index_digest,
                .pulled_usec = r->pulled_usec,
        };
        if (strdup_maybe(r->name, &c->name) < 0 || strdup_maybe(r->source, &c->source) < 0 ||
            strdup_maybe(r->platform.os, &c->platform.os) < 0 ||
            strdup_maybe(r->platform.architecture, &c->platform.architecture) < 0 ||
            strdup_maybe(r->platform.variant, &c->platform.variant) < 0)
                return -ENOMEM;
        c->layers = new0(LayerRecord, r->n_layers);
        if (!c->layers)
                return -ENOMEM;
        for (size_t i = 0; i < r->n_layers; i++) {
                c->layers[i] = r->layers[i];
                c->layers[i].media_type = NULL;
                c->n_layers++;
                if (strdup_maybe(r->layers[i].media_type, &c->layers[i].media_type) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(c);
        return 0;
}

bool image_name_is_valid(const char *name) {
        size_t n;

        if (!name)
                return false;
        n = strlen(name);
        if (n == 0 || n > 255)
                return false;
        for (size_t i = 0; i < n; i++)
                if ((unsigned char) name[i] <= ' ' || (unsigned char) name[i] >= 0x7f)
                        return false;
        return true;
}

void image_db_done(ImageDb *db) {
        for (size_t i = 0; i < db->n_images; i++)
                image_record_free(db->images[i]);
        db->images = mfree(db->images);
        db->n_images = 0;
        for (size_t i = 0; i < db->n_layers; i++)
                free(db->layers[i].blobs);
        db->layers = mfree(db->layers);
        db->n_layers = 0;
}

/* Layers */

LayerInfo *image_db_find_layer(const ImageDb *db, const Digest *diff_id) {
        for (size_t i = 0; i < db->n_layers; i++)
                if (digest_equal(&db->layers[i].diff_id, diff_id))
                        return &db->layers[i];
        return NULL;
}

bool layer_info_has_blob(const LayerInfo *l, const LayerBlob *b) {
        for (size_t i = 0; i < l->n_blobs; i++)
                if (digest_equal(&l->blobs[i].digest, &b->digest) && l->blobs[i].size == b->size &&
                    l->blobs[i].compression == b->compression)
                        return true;
        return false;
}

int layer_info_add_blob(LayerInfo *l, const LayerBlob *b) {
        LayerBlob *a;

        if (layer_info_has_blob(l, b))
                return 0;
        a = reallocarray(l->blobs, l->n_blobs + 1, sizeof(LayerBlob));
        if (!a)
                return -ENOMEM;
        l->blobs = a;
        l->blobs[l->n_blobs++] = *b;
        return 0;
}

int image_db_put_layer(ImageDb *db, const LayerInfo *l) {
        LayerInfo copy = *l, *old = image_db_find_layer(db, &l->diff_id), *a;

        copy.blobs = NULL;
        copy.n_blobs = 0;
        for (size_t i = 0; i < l->n_blobs; i++)
                if (layer_info_add_blob(&copy, &l->blobs[i]) < 0) {
                        free(copy.blobs);
                        return -ENOMEM;
                }
        if (old) {
                free(old->blobs);
                *old = copy;
                return 0;
        }
        a = reallocarray(db->layers, db->n_layers + 1, sizeof(LayerInfo));
        if (!a) {
                free(copy.blobs);
                return -ENOMEM;
        }
        db->layers = a;
        db->layers[db->n_layers++] = copy;
        return 0;
}

int image_db_remove_layer(ImageDb *db, const Digest *diff_id) {
        LayerInfo *l = image_db_find_layer(db, diff_id);

        if (!l)
                return 0;
        free(l->blobs);
        *l = db->layers[--db->n_layers];
        return 1;
}

bool image_db_layer_referenced(const ImageDb *db, const Digest *diff_id) {
        for (size_t i = 0; i < db->n_images; i++)
                for (size_t k = 0; k < db->images[i]->n_layers; k++)
                        if (digest_equal(&db->images[i]->layers[k].diff_id, diff_id))
                                return true;
        return false;
}

/* JSON */

static int add(json_object *o, const char *key, json_object *v) {
        if (!v || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

static int add_digest(json_object *o, const char *key, const Digest *d) {
        char buf[DIGEST_STRING_MAX];

        return add(o, key, json_object_new_string(digest_to_string(d, buf)));
}

static int add_u64(json_object *o, const char *key, uint64_t v) {
        /* json-c's int64 holds every value tonari records (sizes, counts, microseconds). */
        return add(o, key, json_object_new_int64((int64_t) v));
}

static int add_string(json_object *o, const char *key, const char *s) {
        return s ? add(o, key, json_object_new_string(s)) : 0;
}

static int record_to_json(const ImageRecord *r, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object(), *p = json_object_new_object();
        json_object *layers;
        int k;

        if (!o || !p)
                return -ENOMEM;
        if ((k = add_string(o, "name", r->name)) < 0 || (k = add_string(o, "source", r->source)) < 0 ||
            (k = add_digest(o, "manifestDigest", &r->manifest_digest)) < 0 ||
            (k = add_digest(o, "configDigest", &r->config_digest)) < 0 ||
            (r->has_index_digest && (k = add_digest(o, "indexDigest", &r->index_digest)) < 0) ||
            (k = add_u64(o, "pulledUSec", r->pulled_usec)) < 0 || (k = add_string(p, "os", r->platform.os)) < 0 ||
            (k = add_string(p, "architecture", r->platform.architecture)) < 0 ||
            (k = add_string(p, "variant", r->platform.variant)) < 0)
                return k;
        k = add(o, "platform", json_object_get(p));
        if (k < 0)
                return k;

        layers = json_object_new_array();
        k = add(o, "layers", layers);
        if (k < 0)
                return k;
        for (size_t i = 0; i < r->n_layers; i++) {
                const LayerRecord *l = &r->layers[i];
                json_object *lo = json_object_new_object();

                if (!lo || json_object_array_add(layers, lo) < 0) {
                        json_object_put(lo);
                        return -ENOMEM;
                }
                if ((k = add_digest(lo, "digest", &l->digest)) < 0 || (k = add_digest(lo, "diffID", &l->diff_id)) < 0 ||
                    (k = add_string(lo, "mediaType", l->media_type)) < 0 ||
                    (k = add_u64(lo, "size", l->size_bytes)) < 0 ||
                    (k = add_u64(lo, "unpackedBytes", l->unpacked_bytes)) < 0 ||
                    (k = add_u64(lo, "tocBytes", l->toc_bytes)) < 0 ||
                    (k = add_u64(lo, "tocEntries", l->toc_entries)) < 0 ||
                    (k = add_digest(lo, "tocDigest", &l->toc_digest)) < 0)
                        return k;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static int layer_to_json(const LayerInfo *l, json_object **ret) {
        _cleanup_json_ json_object *o = json_object_new_object();
        json_object *blobs;
        int k;

        if (!o)
                return -ENOMEM;
        if ((k = add_digest(o, "diffID", &l->diff_id)) < 0 || (k = add_digest(o, "tocDigest", &l->toc_digest)) < 0 ||
            (k = add_u64(o, "tocBytes", l->toc_bytes)) < 0 || (k = add_u64(o, "tocEntries", l->toc_entries)) < 0 ||
            (k = add_u64(o, "unpackedBytes", l->unpacked_bytes)) < 0)
                return k;
        blobs = json_object_new_array();
        k = add(o, "blobs", blobs);
        if (k < 0)
                return k;
        for (size_t i = 0; i < l->n_blobs; i++) {
                json_object *b = json_object_new_object();

                if (!b || json_object_array_add(blobs, b) < 0) {
                        json_object_put(b);
                        return -ENOMEM;
                }
                if ((k = add_digest(b, "digest", &l->blobs[i].digest)) < 0 ||
                    (k = add_u64(b, "size", l->blobs[i].size)) < 0 ||
                    (k = add_string(b, "compression", oci_compression_to_string(l->blobs[i].compression))) < 0)
                        return k;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static int get_string(json_object *o, const char *key, bool required, char **ret) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v)) {
                *ret = NULL;
                return required ? -EBADMSG : 0;
        }
        if (!json_object_is_type(v, json_type_string))
                return -EBADMSG;
        *ret = strdup(json_object_get_string(v));
        return *ret ? 0 : -ENOMEM;
}

static int get_digest(json_object *o, const char *key, Digest *ret) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_string))
                return -EBADMSG;
        return digest_from_string(json_object_get_string(v), ret) < 0 ? -EBADMSG : 0;
}

static int get_u64(json_object *o, const char *key, uint64_t *ret) {
        json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !json_object_is_type(v, json_type_int) ||
            json_object_get_int64(v) < 0)
                return -EBADMSG;
        *ret = (uint64_t) json_object_get_int64(v);
        return 0;
}

static int record_from_json(json_object *o, ImageRecord **ret) {
        _cleanup_image_record_ ImageRecord *r = NULL;
        json_object *p, *layers;
        int k;

        if (!json_object_is_type(o, json_type_object))
                return -EBADMSG;
        r = new0(ImageRecord, 1);
        if (!r)
                return -ENOMEM;
        if ((k = get_string(o, "name", true, &r->name)) < 0 || (k = get_string(o, "source", false, &r->source)) < 0 ||
            (k = get_digest(o, "manifestDigest", &r->manifest_digest)) < 0 ||
            (k = get_digest(o, "configDigest", &r->config_digest)) < 0 ||
            (k = get_u64(o, "pulledUSec", &r->pulled_usec)) < 0)
                return k;
        if (!image_name_is_valid(r->name))
                return -EBADMSG;
        if (json_object_object_get_ex(o, "indexDigest", NULL)) {
                k = get_digest(o, "indexDigest", &r->index_digest);
                if (k < 0)
                        return k;
                r->has_index_digest = true;
        }
        if (json_object_object_get_ex(o, "platform", &p)) {
                if ((k = get_string(p, "os", false, &r->platform.os)) < 0 ||
                    (k = get_string(p, "architecture", false, &r->platform.architecture)) < 0 ||
                    (k = get_string(p, "variant", false, &r->platform.variant)) < 0)
                        return k;
        }
        if (!json_object_object_get_ex(o, "layers", &layers) || !json_object_is_type(layers, json_type_array) ||
            json_object_array_length(layers) > OCI_LAYERS_MAX)
                return -EBADMSG;
        r->layers = new0(LayerRecord, json_object_array_length(layers));
        if (!r->layers)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(layers); i++) {
                json_object *lo = json_object_array_get_idx(layers, i);
                LayerRecord *l = &r->layers[i];

                if (!json_object_is_type(lo, json_type_object))
                        return -EBADMSG;
                r->n_layers++;
                if ((k = get_digest(lo, "digest", &l->digest)) < 0 || (k = get_digest(lo, "diffID", &l->diff_id)) < 0 ||
                    (k = get_string(lo, "mediaType", false, &l->media_type)) < 0 ||
                    (k = get_u64(lo, "size", &l->size_bytes)) < 0 ||
                    (k = get_u64(lo, "unpackedBytes", &l->unpacked_bytes)) < 0 ||
                    (k = get_u64(lo, "tocBytes", &l->toc_bytes)) < 0 ||
                    (k = get_u64(lo, "tocEntries", &l->toc_entries)) < 0)
                        return k;
                /* Not in files of 0.2.0: the layer's record has it. */
                if (json_object_object_get_ex(lo, "tocDigest", NULL) &&
                    (k = get_digest(lo, "tocDigest", &l->toc_digest)) < 0)
                        return k;
        }
        *ret = TAKE_PTR(r);
        return 0;
}

static int layer_from_json(json_object *o, LayerInfo *ret) {
        LayerInfo l = {};
        json_object *blobs;
        int k;

        if (!json_object_is_type(o, json_type_object))
                return -EBADMSG;
        if ((k = get_digest(o, "diffID", &l.diff_id)) < 0 || (k = get_digest(o, "tocDigest", &l.toc_digest)) < 0 ||
            (k = get_u64(o, "tocBytes", &l.toc_bytes)) < 0 || (k = get_u64(o, "tocEntries", &l.toc_entries)) < 0 ||
            (k = get_u64(o, "unpackedBytes", &l.unpacked_bytes)) < 0)
                return k;
        if (!json_object_object_get_ex(o, "blobs", &blobs) || !json_object_is_type(blobs, json_type_array))
                return -EBADMSG;
        for (size_t i = 0; i < json_object_array_length(blobs); i++) {
                json_object *b = json_object_array_get_idx(blobs, i), *c;
                LayerBlob blob = {};

                if (!json_object_is_type(b, json_type_object) || (k = get_digest(b, "digest", &blob.digest)) < 0 ||
                    (k = get_u64(b, "size", &blob.size)) < 0 || !json_object_object_get_ex(b, "compression", &c) ||
                    oci_compression_from_string(json_object_get_string(c), &blob.compression) < 0)
                        k = k < 0 ? k : -EBADMSG;
                else
                        k = layer_info_add_blob(&l, &blob);
                if (k < 0) {
                        free(l.blobs);
                        return k;
                }
        }
        *ret = l;
        return 0;
}

/* A 0.2.0 file: a record for each layer its images name, with what they say of it. */
static int layers_from_images(ImageDb *db) {
        for (size_t i = 0; i < db->n_images; i++)
                for (size_t k = 0; k < db->images[i]->n_layers; k++) {
                        const LayerRecord *r = &db->images[i]->layers[k];
                        LayerInfo *l = image_db_find_layer(db, &r->diff_id);
                        LayerBlob b = { .digest = r->digest, .size = r->size_bytes };
                        int e;

                        if (!l) {
                                e = image_db_put_layer(db, &(LayerInfo) { .diff_id = r->diff_id, .legacy = true });
                                if (e < 0)
                                        return e;
                                l = image_db_find_layer(db, &r->diff_id);
                        }
                        /* 0.2.0 verified each blob it recorded against the layer's diff_id. */
                        if (oci_layer_compression(r->media_type, &b.compression) >= 0) {
                                e = layer_info_add_blob(l, &b);
                                if (e < 0)
                                        return e;
                        }
                }
        return 0;
}

static int compare_records(const void *a, const void *b) {
        return strcmp((*(ImageRecord *const *) a)->name, (*(ImageRecord *const *) b)->name);
}

int image_db_load(ImageDb *db, int dir_fd, char **ret_error) {
        _cleanup_json_ json_object *root = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *data = NULL;
        json_object *v, *images, *layers;
        ImageDb new_db = {};
        size_t n;
        int k;

        fd = openat(dir_fd, IMAGE_DB_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                if (errno != ENOENT)
                        return set_error_message(ret_error, -errno, IMAGE_DB_FILE ": %m");
                *db = new_db;
                return 0;
        }
        k = read_full_fd(fd, IMAGE_DB_MAX_BYTES, &data, &n);
        if (k == -E2BIG)
                return set_error_message(ret_error, k, IMAGE_DB_FILE " is larger than %u bytes", IMAGE_DB_MAX_BYTES);
        if (k < 0)
                return set_error_message(ret_error, k, IMAGE_DB_FILE ": %s", strerror(-k));

        root = json_tokener_parse(data);
        if (!root || !json_object_is_type(root, json_type_object))
                return set_error_message(ret_error, -EBADMSG, IMAGE_DB_FILE " is not a JSON object");
        if (!json_object_object_get_ex(root, "version", &v) || !json_object_is_type(v, json_type_int))
                return set_error_message(ret_error, -EBADMSG, IMAGE_DB_FILE " has no version");
        if (json_object_get_int(v) != IMAGE_DB_VERSION)
                return set_error_message(ret_error, -EPROTONOSUPPORT, IMAGE_DB_FILE " has version %d, this relay reads %d",
                                         json_object_get_int(v), IMAGE_DB_VERSION);
        if (!json_object_object_get_ex(root, "images", &images) || !json_object_is_type(images, json_type_array))
                return set_error_message(ret_error, -EBADMSG, IMAGE_DB_FILE " has no image list");

        new_db.images = new0(ImageRecord *, json_object_array_length(images));
        if (!new_db.images)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(images); i++) {
                k = record_from_json(json_object_array_get_idx(images, i), &new_db.images[i]);
                if (k < 0) {
                        image_db_done(&new_db);
                        return set_error_message(ret_error, k, IMAGE_DB_FILE ": image %zu is damaged", i);
                }
                new_db.n_images++;
        }
        qsort(new_db.images, new_db.n_images, sizeof(ImageRecord *), compare_records);
        for (size_t i = 1; i < new_db.n_images; i++)
                if (streq(new_db.images[i - 1]->name, new_db.images[i]->name)) {
                        image_db_done(&new_db);
                        return set_error_message(ret_error, -EBADMSG, IMAGE_DB_FILE ": \"%s\" appears twice",
                                                 new_db.images[i]->name);
                }

        if (!json_object_object_get_ex(root, "layers", &layers)) {
                k = layers_from_images(&new_db);
                if (k < 0) {
                        image_db_done(&new_db);
                        return k;
                }
        } else if (!json_object_is_type(layers, json_type_array)) {
                image_db_done(&new_db);
                return set_error_message(ret_error, -EBADMSG, IMAGE_DB_FILE " has no layer list");
        } else
                for (size_t i = 0; i < json_object_array_length(layers); i++) {
                        LayerInfo l;

                        k = layer_from_json(json_object_array_get_idx(layers, i), &l);
                        if (k >= 0 && image_db_find_layer(&new_db, &l.diff_id))
                                k = -EBADMSG;
                        if (k >= 0) {
                                k = image_db_put_layer(&new_db, &l);
                                free(l.blobs);
                        }
                        if (k < 0) {
                                image_db_done(&new_db);
                                return set_error_message(ret_error, k, IMAGE_DB_FILE ": layer %zu is damaged", i);
                        }
                }
        *db = new_db;
        return 0;
}

int image_db_save(const ImageDb *db, int dir_fd) {
        _cleanup_json_ json_object *root = json_object_new_object();
        _cleanup_close_ int fd = -EBADF;
        json_object *images = json_object_new_array(), *layers;
        const char *text;
        size_t n, done = 0;
        int k;

        if (!root || !images) {
                json_object_put(images);
                return -ENOMEM;
        }
        if ((k = add(root, "version", json_object_new_int(IMAGE_DB_VERSION))) < 0 ||
            (k = add(root, "images", images)) < 0)
                return k;
        layers = json_object_new_array();
        k = add(root, "layers", layers);
        if (k < 0)
                return k;
        for (size_t i = 0; i < db->n_layers; i++) {
                json_object *o;

                /* Not known yet (0.2.0): written without, learned again at the next start. */
                if (db->layers[i].legacy)
                        continue;
                k = layer_to_json(&db->layers[i], &o);
                if (k < 0)
                        return k;
                if (json_object_array_add(layers, o) < 0) {
                        json_object_put(o);
                        return -ENOMEM;
                }
        }
        for (size_t i = 0; i < db->n_images; i++) {
                json_object *o;

                k = record_to_json(db->images[i], &o);
                if (k < 0)
                        return k;
                if (json_object_array_add(images, o) < 0) {
                        json_object_put(o);
                        return -ENOMEM;
                }
        }

        text = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED);
        n = strlen(text);
        fd = openat(dir_fd, IMAGE_DB_TMP, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        while (done < n) {
                ssize_t r = write(fd, text + done, n - done);

                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0)
                        return -errno;
                done += (size_t) r;
        }
        if (write(fd, "\n", 1) != 1 || fsync(fd) < 0)
                return -errno;
        if (renameat(dir_fd, IMAGE_DB_TMP, dir_fd, IMAGE_DB_FILE) < 0)
                return -errno;
        /* The rename itself must survive a crash too. */
        return fsync(dir_fd) < 0 ? -errno : 0;
}

static ssize_t find_index(const ImageDb *db, const char *name_or_digest) {
        Digest d;
        bool by_digest = digest_from_string(name_or_digest, &d) >= 0;

        for (size_t i = 0; i < db->n_images; i++)
                if (by_digest ? digest_equal(&db->images[i]->manifest_digest, &d) :
                                streq(db->images[i]->name, name_or_digest))
                        return (ssize_t) i;
        return -1;
}

const ImageRecord *image_db_find(const ImageDb *db, const char *name_or_digest) {
        ssize_t i = find_index(db, name_or_digest);

        return i < 0 ? NULL : db->images[i];
}

int image_db_put(ImageDb *db, ImageRecord *r, ImageRecord **ret_old) {
        ImageRecord **a;
        size_t at = 0;

        for (size_t i = 0; i < db->n_images; i++) {
                int c = strcmp(db->images[i]->name, r->name);

                if (c == 0) {
                        if (ret_old)
                                *ret_old = db->images[i];
                        else
                                image_record_free(db->images[i]);
                        db->images[i] = r;
                        return 0;
                }
                if (c < 0)
                        at = i + 1;
        }
        a = reallocarray(db->images, db->n_images + 1, sizeof(ImageRecord *));
        if (!a)
                return -ENOMEM;
        db->images = a;
        memmove(a + at + 1, a + at, (db->n_images - at) * sizeof(ImageRecord *));
        a[at] = r;
        db->n_images++;
        if (ret_old)
                *ret_old = NULL;
        return 0;
}

int image_db_remove(ImageDb *db, const char *name_or_digest, ImageRecord **ret) {
        ssize_t i = find_index(db, name_or_digest);

        if (i < 0)
                return -ENOENT;
        if (ret)
                *ret = db->images[i];
        else
                image_record_free(db->images[i]);
        memmove(db->images + i, db->images + i + 1, (db->n_images - (size_t) i - 1) * sizeof(ImageRecord *));
        db->n_images--;
        return 0;
}
