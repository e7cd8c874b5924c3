/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * layer_unpack() on tars written byte by byte here, so that the test controls exactly what the
 * headers say: names in several scripts and names that are not UTF-8 at all, in every way a tar
 * can carry them (ustar fields, pax records as Go's archive/tar writes them, pax records with
 * hdrcharset=BINARY as GNU tar and Python write them), each compared byte for byte with the ToC,
 * in the "C" locale and in a UTF-8 one.
 */
#include <fcntl.h>
#include <locale.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../unit/tests.h"
#include "alloc-util.h"
#include "fd-util.h"
#include "layer-unpack.h"
#include "store.h"
#include "string-util.h"
#include "toc.h"

typedef struct Tar {
        uint8_t *data;
        size_t size;
} Tar;

static uint8_t *tar_grow(Tar *t, size_t n) {
        uint8_t *p = realloc(t->data, t->size + n);

        ck_assert_ptr_nonnull(p);
        t->data = p;
        memset(p + t->size, 0, n);
        t->size += n;
        return p + t->size - n;
}

static void octal(uint8_t *field, size_t width, uint64_t v) {
        char buf[32];

        snprintf(buf, sizeof(buf), "%0*llo", (int) width - 1, (unsigned long long) v);
        memcpy(field, buf, width - 1);
}

/* One ustar header; name and link are copied as bytes (at most 100 each). */
static void tar_header(Tar *t, const char *name, char type, uint64_t size, const char *link) {
        uint8_t *h = tar_grow(t, 512);
        unsigned sum = 0;

        ck_assert_uint_le(strlen(name), 100);
        memcpy(h, name, strlen(name));
        octal(h + 100, 8, type == '5' ? 0755 : 0644);
        octal(h + 108, 8, 0);
        octal(h + 116, 8, 0);
        /* Sizes beyond the 11 octal digits go into a pax record; the field then says 0. */
        octal(h + 124, 12, size < 077777777777ULL ? size : 0);
        octal(h + 136, 12, 1700000000);
        h[156] = (uint8_t) type;
        if (link) {
                ck_assert_uint_le(strlen(link), 100);
                memcpy(h + 157, link, strlen(link));
        }
        memcpy(h + 257, "ustar", 6);
        memcpy(h + 263, "00", 2);
        memset(h + 148, ' ', 8);
        for (size_t i = 0; i < 512; i++)
                sum += h[i];
        snprintf((char *) h + 148, 8, "%06o", sum);
}

static void tar_data(Tar *t, const void *data, size_t size) {
        uint8_t *p = tar_grow(t, (size + 511) / 512 * 512);

        memcpy(p, data, size);
}

/* A pax extended header with the records given as "key", "value" pairs (NULL-terminated). */
static void tar_pax(Tar *t, ...) {
        _cleanup_free_ char *body = NULL;
        size_t n = 0;
        va_list ap;

        va_start(ap, t);
        for (const char *k; (k = va_arg(ap, const char *));) {
                const char *v = va_arg(ap, const char *);
                size_t len = strlen(k) + strlen(v) + 3, digits = 1;
                char *b;

                /* The record's length counts its own digits. */
                while (snprintf(NULL, 0, "%zu", len + digits) > (int) digits)
                        digits++;
                b = realloc(body, n + len + digits + 1);
                ck_assert_ptr_nonnull(b);
                body = b;
                n += (size_t) sprintf(body + n, "%zu %s=%s\n", len + digits, k, v);
        }
        va_end(ap);
        tar_header(t, "PaxHeaders/x", 'x', n, NULL);
        tar_data(t, body, n);
}

static void tar_file(Tar *t, const char *name, const char *content) {
        tar_header(t, name, '0', strlen(content), NULL);
        tar_data(t, content, strlen(content));
}

static void tar_end(Tar *t) {
        tar_grow(t, 1024);
}

/* Unpacks the tar into a fresh store: 0 and its ToC, or the error. */
static int unpack(const Tar *t, LayerStats *stats, Toc **ret, char **ret_error) {
        _cleanup_free_ char *dir = NULL, *blob = NULL;
        _cleanup_free_ void *toc = NULL;
        _cleanup_store_ Store *s = NULL;
        _cleanup_close_ int blob_fd = -EBADF;
        static unsigned counter;
        size_t toc_size;
        int r;

        ck_assert_int_ge(asprintf(&dir, "%s/store%u", test_tmpdir(), counter), 0);
        ck_assert_int_ge(asprintf(&blob, "%s/layer%u.tar", test_tmpdir(), counter), 0);
        counter++;
        ck_assert_int_eq(store_open(dir, &s), 0);
        blob_fd = open(blob, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ck_assert_int_ge(blob_fd, 0);
        ck_assert_int_eq(write(blob_fd, t->data, t->size), (ssize_t) t->size);
        ck_assert_int_eq(lseek(blob_fd, 0, SEEK_SET), 0);

        r = layer_unpack(s, blob_fd, OCI_COMPRESSION_NONE, NULL, &toc, &toc_size, stats, ret_error);
        if (r < 0)
                return r;
        ck_assert_int_eq(toc_open_owned(toc, toc_size, ret), 0);
        TAKE_PTR(toc);
        return 0;
}

/* What the names tar holds, as bytes. */
static const struct {
        const char *path;
        TocType type;
        const char *target; /* symlinks */
} names[] = {
        { "multi", TOC_TYPE_DIRECTORY },
        /* Hungarian (Debian's ca-certificates ships this one), Japanese, Cyrillic, emoji. */
        { "multi/NetLock_Arany_=Class_Gold=_F\xc5\x91tan\xc3\xbas\xc3\xadtv\xc3\xa1ny.crt", TOC_TYPE_REGULAR },
        { "multi/\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe3\x83\x95\xe3\x82\xa1\xe3\x82\xa4\xe3\x83\xab",
          TOC_TYPE_REGULAR },
        { "multi/\xd0\x9a\xd0\xb8\xd1\x80\xd0\xb8\xd0\xbb\xd0\xbb\xd0\xb8\xd1\x86\xd0\xb0", TOC_TYPE_REGULAR },
        { "multi/\xf0\x9f\x98\x80\xf0\x9f\x9a\x80", TOC_TYPE_REGULAR },
        /* Decomposed (NFD) "é": a UTF-8 locale's conversion would compose it to "\xc3\xa9". */
        { "multi/cafe\xcc\x81", TOC_TYPE_REGULAR },
        /* Not UTF-8: a pax path as Go writes it, one with hdrcharset=BINARY, a ustar name. */
        { "multi/go-\xff\xfe-latin1-\xe9t\xe9", TOC_TYPE_REGULAR },
        { "multi/binary-\xe9t\xe9-\xc3", TOC_TYPE_REGULAR },
        { "ustar-\xe9t\xe9", TOC_TYPE_REGULAR },
        /* A symlink and a hard link whose targets are such names. */
        { "multi/\xd0\xbb\xd0\xb8\xd0\xbd\xd0\xba", TOC_TYPE_SYMLINK,
          "NetLock_Arany_=Class_Gold=_F\xc5\x91tan\xc3\xbas\xc3\xadtv\xc3\xa1ny.crt" },
        { "multi/hard-\xe3\x83\xaa\xe3\x83\xb3\xe3\x82\xaf", TOC_TYPE_REGULAR },
};

static void make_names_tar(Tar *t) {
        tar_header(t, "multi/", '5', 0, NULL);
        for (size_t i = 1; i <= 5; i++) {
                tar_pax(t, "path", names[i].path, NULL);
                tar_file(t, "PaxHeaders/name", names[i].path);
        }
        tar_pax(t, "path", names[6].path, NULL);
        tar_file(t, "PaxHeaders/name", names[6].path);
        tar_pax(t, "hdrcharset", "BINARY", "path", names[7].path, NULL);
        tar_file(t, "PaxHeaders/name", names[7].path);
        tar_file(t, names[8].path, names[8].path);
        tar_pax(t, "path", names[9].path, "linkpath", names[9].target, NULL);
        tar_header(t, "PaxHeaders/name", '2', 0, "PaxHeaders/target");
        tar_pax(t, "path", names[10].path, "linkpath", names[2].path, NULL);
        tar_header(t, "PaxHeaders/name", '1', 0, "PaxHeaders/target");
        tar_end(t);
}

static void check_names(void) {
        _cleanup_free_ char *err = NULL;
        _cleanup_toc_ Toc *toc = NULL;
        Tar t = {};
        LayerStats stats;
        int r;

        make_names_tar(&t);
        r = unpack(&t, &stats, &toc, &err);
        free(t.data);
        ck_assert_msg(r >= 0, "unpack: %s", strna(err));
        /* The root and every name, and nothing else. */
        ck_assert_uint_eq(toc_n_entries(toc), ELEMENTSOF(names) + 1);
        ck_assert_uint_eq(stats.entries, ELEMENTSOF(names) + 1);

        FOREACH_ELEMENT(n, names) {
                char path[TOC_PATH_MAX + 1];
                uint64_t ino;
                TocEntry e;

                ck_assert_msg(toc_resolve(toc, n->path, &ino) == 0, "\"%s\" is not in the ToC", n->path);
                ck_assert_int_eq(toc_get(toc, ino, &e), 0);
                ck_assert_int_eq(e.type, n->type);
                ck_assert_int_eq(toc_path(toc, ino, path, sizeof(path)), 0);
                ck_assert_str_eq(path, n->path);
                if (n->target) {
                        ck_assert_uint_eq(e.target_len, strlen(n->target));
                        ck_assert(memcmp(e.target, n->target, e.target_len) == 0);
                }
                if (n->type == TOC_TYPE_REGULAR) {
                        /* Each file holds its own name (the hard link its target's). */
                        const char *content = e.link == ino ? n->path : names[2].path;
                        Digest want;

                        ck_assert_uint_eq(e.size, strlen(content));
                        ck_assert_int_eq(digest_buffer(content, strlen(content), &want), 0);
                        ck_assert(memcmp(e.digest, want.bytes, DIGEST_SIZE) == 0);
                }
        }
}

START_TEST(test_names_are_bytes_in_c_locale) {
        /* The relay never calls setlocale(): this is the locale it runs in. */
        check_names();
}
END_TEST

START_TEST(test_names_are_bytes_in_utf8_locale) {
        if (!setlocale(LC_ALL, "C.UTF-8")) {
                fprintf(stderr, "no C.UTF-8 locale here: the C locale's case covers the conversion\n");
                return;
        }
        check_names();
}
END_TEST

START_TEST(test_other_warnings_refused) {
        _cleanup_free_ char *err = NULL;
        Toc *toc = NULL;
        Tar t = {};
        LayerStats stats;

        /* A malformed pax record is still refused: only the names' conversion warning is taken. */
        tar_header(&t, "PaxHeaders/x", 'x', 8, NULL);
        tar_data(&t, "9x path\n", 8);
        tar_file(&t, "file", "x");
        tar_end(&t);
        ck_assert_int_eq(unpack(&t, &stats, &toc, &err), -EBADMSG);
        free(t.data);
}
END_TEST

START_TEST(test_huge_declared_size) {
        _cleanup_free_ char *err = NULL;
        Toc *toc = NULL;
        Tar t = {};
        LayerStats stats;

        /* 2^50 bytes declared, ten there: refused as the truncated entry it is, without an
         * allocation the size of the claim (the chunk digests of 2^50 bytes would take 32 GiB;
         * under ASan that allocation aborts, elsewhere it fails with ENOMEM). */
        tar_pax(&t, "size", "1125899906842624", NULL);
        tar_header(&t, "huge", '0', 0, NULL);
        tar_data(&t, "0123456789", 10);
        tar_end(&t);
        ck_assert_int_eq(unpack(&t, &stats, &toc, &err), -EBADMSG);
        ck_assert_msg(startswith(err, "layer entry \"huge\""), "%s", err);
        free(t.data);
}
END_TEST

TEST_SUITE("layer-unpack", test_names_are_bytes_in_c_locale, test_names_are_bytes_in_utf8_locale,
           test_other_warnings_refused, test_huge_declared_size);
