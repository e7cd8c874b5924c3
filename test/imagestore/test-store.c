/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/tests.h"
#include "alloc-util.h"
#include "digest.h"
#include "fd-util.h"
#include "store.h"
#include "string-util.h"

/* sha256("abc"), FIPS 180-2 appendix B.1. */
#define ABC_HEX "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

static unsigned count_entries(const char *dir) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;
        unsigned n = 0;

        ck_assert_ptr_nonnull(d);
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        return n;
}

static char *store_dir(void) {
        char *p = strjoin(test_tmpdir(), "/store");

        ck_assert_ptr_nonnull(p);
        return p;
}

START_TEST(test_digest_strings) {
        char buf[DIGEST_STRING_MAX];
        Digest d, e;

        ck_assert_int_eq(digest_buffer("abc", 3, &d), 0);
        ck_assert_str_eq(digest_to_string(&d, buf), "sha256:" ABC_HEX);
        ck_assert_int_eq(digest_from_string("sha256:" ABC_HEX, &e), 0);
        ck_assert(digest_equal(&d, &e));
        ck_assert_int_eq(digest_from_hex(ABC_HEX, &e), 0);
        ck_assert(digest_equal(&d, &e));

        ck_assert_int_eq(digest_from_string("sha512:" ABC_HEX, &e), -EOPNOTSUPP);
        ck_assert_int_eq(digest_from_string("sha256+b64u:abc_-=", &e), -EOPNOTSUPP);
        ck_assert_int_eq(digest_from_string("sha256:" ABC_HEX "0", &e), -EINVAL);
        ck_assert_int_eq(digest_from_string("sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD", &e), -EINVAL);
        ck_assert_int_eq(digest_from_string(ABC_HEX, &e), -EINVAL);
        ck_assert_int_eq(digest_from_string("SHA256:" ABC_HEX, &e), -EINVAL);
        ck_assert_int_eq(digest_from_string(":" ABC_HEX, &e), -EINVAL);
        ck_assert_int_eq(digest_from_string("sha256:", &e), -EINVAL);
        ck_assert_int_eq(digest_from_string("sha256:../../etc/passwd", &e), -EINVAL);
        ck_assert_int_eq(digest_from_string("", &e), -EINVAL);
        ck_assert_int_eq(digest_from_string(NULL, &e), -EINVAL);
}
END_TEST

START_TEST(test_hasher_streams) {
        _cleanup_hasher_ Hasher *h = NULL;
        Digest d, whole;

        ck_assert_int_eq(hasher_new(&h), 0);
        ck_assert_int_eq(hasher_update(h, "a", 1), 0);
        ck_assert_int_eq(hasher_update(h, "", 0), 0);
        ck_assert_int_eq(hasher_update(h, "bc", 2), 0);
        ck_assert_int_eq(hasher_finish(h, &d), 0);
        ck_assert_int_eq(digest_buffer("abc", 3, &whole), 0);
        ck_assert(digest_equal(&d, &whole));
        /* finish resets: the next stream starts from nothing. */
        ck_assert_int_eq(hasher_update(h, "abc", 3), 0);
        ck_assert_int_eq(hasher_finish(h, &d), 0);
        ck_assert(digest_equal(&d, &whole));
}
END_TEST

START_TEST(test_store_write_and_read) {
        _cleanup_free_ char *root = store_dir(), *rel = NULL, *tmp = NULL;
        _cleanup_store_ Store *s = NULL;
        _cleanup_store_writer_ StoreWriter *w = NULL;
        _cleanup_close_ int fd = -EBADF;
        char buf[8] = {};
        uint64_t size;
        Digest d, abc;
        struct stat st;

        ck_assert_int_eq(store_open(root, &s), 0);
        ck_assert_int_eq(digest_buffer("abc", 3, &abc), 0);
        ck_assert_int_eq(store_has(s, STORE_BLOB, &abc), 0);

        ck_assert_int_eq(store_writer_new(s, STORE_BLOB, &abc, 3, &w), 0);
        ck_assert_int_eq(store_writer_write(w, "ab", 2), 0);
        ck_assert_int_eq(store_writer_write(w, "c", 1), 0);
        ck_assert_uint_eq(store_writer_size(w), 3);
        ck_assert_int_eq(store_writer_commit(w, &d, &size), 1);
        ck_assert(digest_equal(&d, &abc));
        ck_assert_uint_eq(size, 3);

        ck_assert_int_eq(store_has(s, STORE_BLOB, &abc), 1);
        ck_assert_int_eq(store_has(s, STORE_OBJECT, &abc), 0);
        ck_assert_int_eq(store_item_path(STORE_BLOB, &abc, &rel), 0);
        ck_assert_str_eq(rel, "blobs/sha256/ba/" ABC_HEX);
        ck_assert_int_eq(fstatat(store_root_fd(s), rel, &st, 0), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0400);
        ck_assert_uint_eq(st.st_size, 3);

        fd = store_open_item(s, STORE_BLOB, &abc);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(read(fd, buf, sizeof(buf)), 3);
        ck_assert_str_eq(buf, "abc");

        tmp = strjoin(root, "/tmp");
        ck_assert_uint_eq(count_entries(tmp), 0);

        ck_assert_int_eq(store_remove_item(s, STORE_BLOB, &abc), 1);
        ck_assert_int_eq(store_remove_item(s, STORE_BLOB, &abc), 0);
        ck_assert_int_eq(store_open_item(s, STORE_BLOB, &abc), -ENOENT);
        ck_assert_int_eq(store_sync(s), 0);
}
END_TEST

START_TEST(test_store_rejects_wrong_content) {
        _cleanup_free_ char *root = store_dir(), *tmp = NULL, *objects = NULL;
        _cleanup_store_ Store *s = NULL;
        StoreWriter *w = NULL;
        Digest abc;

        ck_assert_int_eq(store_open(root, &s), 0);
        ck_assert_int_eq(digest_buffer("abc", 3, &abc), 0);

        /* A corrupted blob: the digest does not match, nothing is stored, nothing is left. */
        ck_assert_int_eq(store_writer_new(s, STORE_BLOB, &abc, UINT64_MAX, &w), 0);
        ck_assert_int_eq(store_writer_write(w, "abd", 3), 0);
        ck_assert_int_eq(store_writer_commit(w, NULL, NULL), -EBADMSG);
        ck_assert_int_eq(store_writer_commit(w, NULL, NULL), -EBADF);
        w = store_writer_free(w);
        ck_assert_int_eq(store_has(s, STORE_BLOB, &abc), 0);

        /* More than announced. */
        ck_assert_int_eq(store_writer_new(s, STORE_OBJECT, NULL, 4, &w), 0);
        ck_assert_int_eq(store_writer_write(w, "abc", 3), 0);
        ck_assert_int_eq(store_writer_write(w, "de", 2), -EFBIG);
        ck_assert_int_eq(store_writer_write(w, "d", 1), -EBADF);
        ck_assert_int_eq(store_writer_commit(w, NULL, NULL), -EBADF);
        w = store_writer_free(w);

        /* Abandoned without commit. */
        ck_assert_int_eq(store_writer_new(s, STORE_OBJECT, NULL, UINT64_MAX, &w), 0);
        ck_assert_int_eq(store_writer_write(w, "abc", 3), 0);
        w = store_writer_free(w);
        ck_assert_int_eq(store_has(s, STORE_OBJECT, &abc), 0);

        tmp = strjoin(root, "/tmp");
        objects = strjoin(root, "/objects/sha256");
        ck_assert_uint_eq(count_entries(tmp), 0);
        ck_assert_uint_eq(count_entries(objects), 0);
}
END_TEST

START_TEST(test_store_same_content_once) {
        _cleanup_free_ char *root = store_dir(), *dir = NULL;
        _cleanup_store_ Store *s = NULL;
        StoreWriter *a = NULL, *b = NULL;
        Digest da, db;

        ck_assert_int_eq(store_open(root, &s), 0);
        /* Two writers of the same content at once, as two layers containing the same file. */
        ck_assert_int_eq(store_writer_new(s, STORE_OBJECT, NULL, UINT64_MAX, &a), 0);
        ck_assert_int_eq(store_writer_new(s, STORE_OBJECT, NULL, UINT64_MAX, &b), 0);
        ck_assert_int_eq(store_writer_write(a, "same", 4), 0);
        ck_assert_int_eq(store_writer_write(b, "same", 4), 0);
        ck_assert_int_eq(store_writer_commit(b, &db, NULL), 1);
        ck_assert_int_eq(store_writer_commit(a, &da, NULL), 0);
        ck_assert(digest_equal(&da, &db));
        a = store_writer_free(a);
        b = store_writer_free(b);

        char hex[DIGEST_HEX_LEN + 1];
        digest_to_hex(&da, hex);
        ck_assert_int_ge(asprintf(&dir, "%s/objects/sha256/%.2s", root, hex), 0);
        ck_assert_uint_eq(count_entries(dir), 1);
        free(dir);
        dir = strjoin(root, "/tmp");
        ck_assert_uint_eq(count_entries(dir), 0);

        /* An empty object is an object too. */
        ck_assert_int_eq(store_writer_new(s, STORE_OBJECT, NULL, 0, &a), 0);
        ck_assert_int_eq(store_writer_commit(a, &da, NULL), 1);
        a = store_writer_free(a);
        ck_assert_str_eq(digest_to_hex(&da, hex), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}
END_TEST

START_TEST(test_store_owned_once_and_cleaned) {
        _cleanup_free_ char *root = store_dir(), *leftover = NULL;
        _cleanup_store_ Store *s = NULL, *t = NULL;
        struct stat st;

        ck_assert_int_eq(store_open("relative/store", &s), -EINVAL);
        ck_assert_int_eq(store_open(root, &s), 0);
        ck_assert_uint_eq(stat(root, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0700);
        ck_assert_int_eq(store_open(root, &t), -EBUSY);

        /* What a dead writer left in tmp/ is gone when the store is opened again. */
        leftover = strjoin(root, "/tmp/w.dead/deeper");
        ck_assert_int_eq(mkdirat(store_root_fd(s), "tmp/w.dead", 0700), 0);
        ck_assert_int_eq(mkdirat(store_root_fd(s), "tmp/w.dead/deeper", 0700), 0);
        safe_close(openat(store_root_fd(s), "tmp/w.partial", O_CREAT | O_WRONLY | O_CLOEXEC, 0400));
        s = store_free(s);

        ck_assert_int_eq(store_open(root, &t), 0);
        free(leftover);
        leftover = strjoin(root, "/tmp");
        ck_assert_uint_eq(count_entries(leftover), 0);
}
END_TEST

START_TEST(test_store_layers_and_list) {
        _cleanup_free_ char *root = store_dir();
        _cleanup_store_ Store *s = NULL;
        _cleanup_free_ Digest *list = NULL;
        StoreWriter *w = NULL;
        Digest name, got, objs[3];
        uint64_t size;
        size_t n;

        ck_assert_int_eq(store_open(root, &s), 0);
        memset(name.bytes, 0xab, DIGEST_SIZE);
        ck_assert_int_eq(store_writer_new(s, STORE_LAYER, NULL, UINT64_MAX, &w), -EINVAL);
        ck_assert_int_eq(store_writer_new(s, STORE_LAYER, &name, UINT64_MAX, &w), 0);
        ck_assert_int_ge(store_writer_fd(w), 0);
        ck_assert_int_eq(write(store_writer_fd(w), "toc!", 4), 4);
        ck_assert_int_eq(store_writer_commit(w, &got, &size), 1);
        ck_assert(digest_equal(&got, &name));
        ck_assert_uint_eq(size, 4);
        w = store_writer_free(w);
        ck_assert_int_eq(store_has(s, STORE_LAYER, &name), 1);

        /* Objects need a writer that hashes: no fd for them. */
        ck_assert_int_eq(store_writer_new(s, STORE_OBJECT, NULL, UINT64_MAX, &w), 0);
        ck_assert_int_eq(store_writer_fd(w), -EBADF);
        w = store_writer_free(w);

        for (unsigned i = 0; i < 3; i++) {
                char c = (char) ('a' + i);

                ck_assert_int_eq(store_writer_new(s, STORE_OBJECT, NULL, UINT64_MAX, &w), 0);
                ck_assert_int_eq(store_writer_write(w, &c, 1), 0);
                ck_assert_int_eq(store_writer_commit(w, &objs[i], NULL), 1);
                w = store_writer_free(w);
        }
        /* Not the store's: ignored by the listing. */
        ck_assert_int_eq(mkdirat(store_root_fd(s), "objects/sha256/zz", 0700), 0);

        ck_assert_int_eq(store_list(s, STORE_OBJECT, &list, &n), 0);
        ck_assert_uint_eq(n, 3);
        for (unsigned i = 0; i < 3; i++) {
                bool found = false;

                for (size_t k = 0; k < n; k++)
                        found = found || digest_equal(&list[k], &objs[i]);
                ck_assert(found);
        }
        free(list);
        list = NULL;
        ck_assert_int_eq(store_list(s, STORE_LAYER, &list, &n), 0);
        ck_assert_uint_eq(n, 1);
        ck_assert(digest_equal(&list[0], &name));
        free(list);
        list = NULL;
        ck_assert_int_eq(store_list(s, STORE_BLOB, &list, &n), 0);
        ck_assert_uint_eq(n, 0);
}
END_TEST

TEST_SUITE("store", test_digest_strings, test_hasher_streams, test_store_write_and_read,
           test_store_rejects_wrong_content, test_store_same_content_once, test_store_owned_once_and_cleaned,
           test_store_layers_and_list)
