/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <unistd.h>

#include "../unit/tests.h"
#include "alloc-util.h"
#include "fd-util.h"
#include "image-db.h"
#include "string-util.h"

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

TEST_SUITE("image-db", test_image_db_round_trip, test_image_db_damaged)
