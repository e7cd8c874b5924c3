/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/tests.h"
#include "alloc-util.h"
#include "fd-util.h"
#include "image-db.h"
#include "imagestore.h"
#include "store.h"
#include "string-util.h"
#include "toc.h"

static ImageRecord *make(const char *name, uint8_t seed, size_t n_layers) {
        ImageRecord *r = new0(ImageRecord, 1);

        ck_assert_ptr_nonnull(r);
        r->name = strdup(name);
        r->source = strjoin("oci:/srv/", name);
        memset(r->manifest_digest.bytes, seed, DIGEST_SIZE);
        memset(r->config_digest.bytes, seed + 1, DIGEST_SIZE);
        r->platform.os = strdup("linux");
        r->platform.architecture = strdup("amd64");
        r->pulled_usec = 1700000000000000ULL + seed;
        r->layers = new0(LayerRecord, n_layers);
        for (size_t i = 0; i < n_layers; i++) {
                LayerRecord *l = &r->layers[r->n_layers++];

                memset(l->digest.bytes, seed + 2 + (int) i, DIGEST_SIZE);
                memset(l->diff_id.bytes, seed + 100 + (int) i, DIGEST_SIZE);
                l->media_type = strdup("application/vnd.oci.image.layer.v1.tar+gzip");
                l->size_bytes = 1000 + i;
                l->unpacked_bytes = 5000000000ULL + i; /* beyond 32 bits */
                l->toc_bytes = 300 + i;
                l->toc_entries = 7 + i;
        }
        return r;
}

START_TEST(test_image_db_round_trip) {
        _cleanup_close_ int dir = open(test_tmpdir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_(image_db_done) ImageDb db = {}, again = {};
        _cleanup_free_ char *err = NULL;
        ImageRecord *old = NULL, *removed = NULL;
        char buf[DIGEST_STRING_MAX];

        ck_assert_int_ge(dir, 0);
        ck_assert_int_eq(image_db_load(&db, dir, &err), 0);
        ck_assert_uint_eq(db.n_images, 0);

        ck_assert_int_eq(image_db_put(&db, make("zeta:1", 10, 2), &old), 0);
        ck_assert_ptr_null(old);
        ck_assert_int_eq(image_db_put(&db, make("alpha:1", 20, 1), &old), 0);
        ck_assert_int_eq(image_db_put(&db, make("mid:1", 30, 0), &old), 0);
        ck_assert_str_eq(db.images[0]->name, "alpha:1");
        ck_assert_str_eq(db.images[2]->name, "zeta:1");
        /* Same name: replaced, old handed back. */
        ck_assert_int_eq(image_db_put(&db, make("mid:1", 40, 3), &old), 0);
        ck_assert_ptr_nonnull(old);
        ck_assert_uint_eq(old->manifest_digest.bytes[0], 30);
        old = image_record_free(old);
        ck_assert_uint_eq(db.n_images, 3);

        ck_assert_int_eq(image_db_save(&db, dir), 0);
        ck_assert_int_eq(faccessat(dir, "images.json.new", F_OK, 0), -1);
        ck_assert_int_eq(image_db_load(&again, dir, &err), 0);
        ck_assert_uint_eq(again.n_images, 3);
        const ImageRecord *m = image_db_find(&again, "mid:1");
        ck_assert_ptr_nonnull(m);
        ck_assert_uint_eq(m->n_layers, 3);
        ck_assert_uint_eq(m->layers[2].unpacked_bytes, 5000000002ULL);
        ck_assert_uint_eq(m->layers[1].diff_id.bytes[31], 141);
        ck_assert_str_eq(m->platform.architecture, "amd64");
        ck_assert_ptr_null(m->platform.variant);
        ck_assert_uint_eq(m->pulled_usec, 1700000000000040ULL);
        ck_assert_ptr_eq(image_db_find(&again, digest_to_string(&m->manifest_digest, buf)), m);
        ck_assert_ptr_null(image_db_find(&again, "nope"));

        ImageRecord *copy = NULL;
        ck_assert_int_eq(image_record_copy(m, &copy), 0);
        ck_assert_str_eq(copy->layers[0].media_type, m->layers[0].media_type);
        ck_assert_ptr_ne(copy->layers[0].media_type, m->layers[0].media_type);
        image_record_free(copy);

        ck_assert_int_eq(image_db_remove(&again, "alpha:1", &removed), 0);
        ck_assert_str_eq(removed->name, "alpha:1");
        image_record_free(removed);
        ck_assert_int_eq(image_db_remove(&again, "alpha:1", NULL), -ENOENT);
        ck_assert_uint_eq(again.n_images, 2);
        ck_assert_str_eq(again.images[0]->name, "mid:1");
}
END_TEST

static void write_db(int dir, const char *text) {
        _cleanup_close_ int fd = openat(dir, "images.json", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t) strlen(text));
}

START_TEST(test_image_db_damaged) {
        _cleanup_close_ int dir = open(test_tmpdir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_(image_db_done) ImageDb db = {};
        _cleanup_free_ char *err = NULL;

        write_db(dir, "{\"version\": 2, \"images\": []}");
        ck_assert_int_eq(image_db_load(&db, dir, &err), -EPROTONOSUPPORT);
        ck_assert_str_eq(err, "images.json has version 2, this relay reads 1");
        write_db(dir, "{\"version\": 1, \"images\": [{\"name\": \"a\"}]}");
        ck_assert_int_eq(image_db_load(&db, dir, &err), -EBADMSG);
        ck_assert_str_eq(err, "images.json: image 0 is damaged");
        write_db(dir, "{\"version\": 1");
        ck_assert_int_eq(image_db_load(&db, dir, &err), -EBADMSG);
        ck_assert_uint_eq(db.n_images, 0);

        ck_assert(image_name_is_valid("127.0.0.1:5000/tonari/test:v1"));
        ck_assert(!image_name_is_valid(""));
        ck_assert(!image_name_is_valid("a b"));
        ck_assert(!image_name_is_valid("a\n"));
}
END_TEST

START_TEST(test_layer_records) {
        _cleanup_close_ int dir = open(test_tmpdir(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        _cleanup_(image_db_done) ImageDb db = {}, again = {};
        _cleanup_free_ char *err = NULL;
        LayerBlob b = { .size = 42, .compression = OCI_COMPRESSION_ZSTD };
        LayerInfo l = { .toc_bytes = 1234, .toc_entries = 5, .unpacked_bytes = 6000000000ULL, .blobs = &b, .n_blobs = 1 };
        const LayerInfo *found;

        memset(l.diff_id.bytes, 1, DIGEST_SIZE);
        memset(l.toc_digest.bytes, 2, DIGEST_SIZE);
        memset(b.digest.bytes, 3, DIGEST_SIZE);
        ck_assert_int_eq(image_db_put_layer(&db, &l), 0);
        b.compression = OCI_COMPRESSION_GZIP; /* copied: the record keeps zstd */
        ck_assert_int_eq(image_db_put_layer(&db, &(LayerInfo) { .diff_id = { .bytes = { 9 } } }), 0);
        ck_assert_int_eq(image_db_save(&db, dir), 0);
        ck_assert_int_eq(image_db_load(&again, dir, &err), 0);
        ck_assert_uint_eq(again.n_layers, 2);
        found = image_db_find_layer(&again, &l.diff_id);
        ck_assert_ptr_nonnull(found);
        ck_assert(!found->legacy);
        ck_assert(digest_equal(&found->toc_digest, &l.toc_digest));
        ck_assert_uint_eq(found->toc_bytes, 1234);
        ck_assert_uint_eq(found->toc_entries, 5);
        ck_assert_uint_eq(found->unpacked_bytes, 6000000000ULL);
        ck_assert_uint_eq(found->n_blobs, 1);
        ck_assert(!layer_info_has_blob(found, &b));
        b.compression = OCI_COMPRESSION_ZSTD;
        ck_assert(layer_info_has_blob(found, &b));
        ck_assert_int_eq(image_db_remove_layer(&again, &l.diff_id), 1);
        ck_assert_int_eq(image_db_remove_layer(&again, &l.diff_id), 0);
        ck_assert_ptr_null(image_db_find_layer(&again, &l.diff_id));
        ck_assert_uint_eq(again.n_layers, 1);
}
END_TEST

/*
 * A store written by 0.2.0: images.json without layer records, and (as 0.2.0 wrote for a layer
 * pulled while present but unused) "0B unpacked, 0 entries". Opened, the numbers and the ToC's
 * digest come from the ToC itself.
 */
START_TEST(test_upgrade_from_0_2_0) {
        _cleanup_(toc_writer_freep) TocWriter *w = NULL;
        _cleanup_free_ char *store = strjoin(test_tmpdir(), "/store"), *path = NULL, *text = NULL, *err = NULL;
        _cleanup_free_ void *toc = NULL;
        _cleanup_(image_store_freep) ImageStore *is = NULL;
        _cleanup_image_record_ ImageRecord *r = NULL;
        _cleanup_close_ int fd = -EBADF, dir = -EBADF;
        char diff_id[DIGEST_STRING_MAX], hex[DIGEST_HEX_LEN + 1];
        Store *s = NULL;
        Digest d, want;
        size_t size;

        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w), 0);
        TocEntrySpec f = { .parent = "etc", .name = "f", .type = TOC_TYPE_REGULAR, .mode = 0644, .size = 6000 };
        ck_assert_int_eq(toc_writer_add(w, &f), 0);
        ck_assert_int_eq(toc_writer_finish_buffer(w, &toc, &size), 0);
        ck_assert_int_eq(digest_buffer(toc, size, &want), 0);

        memset(d.bytes, 0x5a, DIGEST_SIZE);
        digest_to_string(&d, diff_id);
        digest_to_hex(&d, hex);
        ck_assert_int_eq(store_open(store, &s), 0);
        s = store_free(s);
        ck_assert_int_ge(asprintf(&path, "%s/layers/sha256/5a", store), 0);
        ck_assert_int_eq(mkdir(path, 0700), 0);
        free(path);
        ck_assert_int_ge(asprintf(&path, "%s/layers/sha256/5a/%s", store, hex), 0);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0400);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, toc, size), (ssize_t) size);
        ck_assert_int_ge(asprintf(&text,
                                  "{\"version\": 1, \"images\": [{\"name\": \"u2\", \"pulledUSec\": 1, "
                                  "\"manifestDigest\": \"%s\", \"configDigest\": \"%s\", \"layers\": [{\"digest\": "
                                  "\"%s\", \"diffID\": \"%s\", \"mediaType\": \"application/vnd.oci.image.layer.v1.tar\", "
                                  "\"size\": 9, \"unpackedBytes\": 0, \"tocBytes\": 0, \"tocEntries\": 0}]}]}",
                                  diff_id, diff_id, diff_id, diff_id),
                         0);
        dir = open(store, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(dir, 0);
        write_db(dir, text);

        ck_assert_int_eq(image_store_open(store, &is, &err), 0);
        ck_assert_int_eq(image_store_get(is, "u2", &r), 0);
        ck_assert_uint_eq(r->layers[0].unpacked_bytes, 6000);
        ck_assert_uint_eq(r->layers[0].toc_entries, 3);
        ck_assert_uint_eq(r->layers[0].toc_bytes, size);
        ck_assert(digest_equal(&r->layers[0].toc_digest, &want));
        /* Written back: the next start finds the records. */
        is = image_store_free(is);
        ImageDb db = {};
        ck_assert_int_eq(image_db_load(&db, dir, &err), 0);
        ck_assert_uint_eq(db.n_layers, 1);
        ck_assert(!db.layers[0].legacy);
        ck_assert_uint_eq(db.layers[0].n_blobs, 1);
        ck_assert_uint_eq(db.images[0]->layers[0].toc_entries, 3);
        image_db_done(&db);
}
END_TEST

TEST_SUITE("image-db", test_image_db_round_trip, test_image_db_damaged, test_layer_records, test_upgrade_from_0_2_0)
