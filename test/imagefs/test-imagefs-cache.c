/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "../unit/tests.h"
#include "alloc-util.h"
#include "fd-util.h"
#include "imagefs-cache.h"

#define CHUNK 4096U

/* A content of size bytes, its digest and chunk digests, and a fake relay that serves it. */
typedef struct Fake {
        uint8_t *data;
        uint64_t size;
        Digest digest;
        Digest chunks[16];
        uint32_t n_chunks;
        unsigned fetches;
        uint64_t fetched;
        bool wrong;   /* serve one wrong byte */
        bool short_;  /* serve one byte less */
        int error;    /* fail with this */
} Fake;

static void fake_init(Fake *f, uint64_t size, unsigned seed, bool chunked) {
        *f = (Fake) { .size = size };
        f->data = malloc(size ?: 1);
        ck_assert_ptr_nonnull(f->data);
        srand(seed);
        for (uint64_t i = 0; i < size; i++)
                f->data[i] = (uint8_t) rand();
        ck_assert_int_eq(digest_buffer(f->data, size, &f->digest), 0);
        if (chunked) {
                f->n_chunks = (uint32_t) ((size + CHUNK - 1) / CHUNK);
                ck_assert_uint_le(f->n_chunks, ELEMENTSOF(f->chunks));
                for (uint32_t i = 0; i < f->n_chunks; i++)
                        ck_assert_int_eq(digest_buffer(f->data + i * CHUNK, MIN((uint64_t) CHUNK, size - i * CHUNK),
                                                       &f->chunks[i]),
                                         0);
        }
}

static ImagefsContent content_of(const Fake *f) {
        return (ImagefsContent) { .digest = f->digest, .size = f->size, .chunk_size = f->n_chunks > 0 ? CHUNK : 0,
                                  .chunks = f->n_chunks > 0 ? f->chunks : NULL, .n_chunks = f->n_chunks };
}

static int fake_fetch(uint64_t offset, uint64_t size, imagefs_sink_t sink, void *sink_userdata, void *userdata) {
        Fake *f = userdata;
        _cleanup_free_ uint8_t *copy = NULL;
        uint64_t half = size / 2;
        int r;

        f->fetches++;
        if (f->error)
                return f->error;
        ck_assert_uint_le(offset + size, f->size);
        copy = memdup(f->data + offset, size);
        if (f->wrong)
                copy[size - 1] ^= 0x80;
        if (f->short_)
                size--;
        /* In two pieces, as a stream would. */
        r = sink(copy, half, sink_userdata);
        if (r >= 0)
                r = sink(copy + half, size - half, sink_userdata);
        if (r >= 0)
                f->fetched += size;
        return r;
}

/* Reads [offset, offset + size) through the cache and checks the bytes. */
static int read_check(ImagefsCache *c, ImagefsCacheEntry *e, Fake *f, uint64_t offset, uint64_t size, bool *ret_hit) {
        _cleanup_free_ uint8_t *buf = malloc(size ?: 1);
        uint64_t fetched;
        bool hit;
        int fd, r;
        ssize_t k;

        r = imagefs_cache_prepare(c, e, offset, size, fake_fetch, f, &fd, &fetched, &hit);
        if (r < 0)
                return r;
        k = pread(fd, buf, size, (off_t) offset);
        ck_assert_int_eq(k, (ssize_t) MIN(size, f->size - MIN(offset, f->size)));
        ck_assert_mem_eq(buf, f->data + offset, (size_t) k);
        if (ret_hit)
                *ret_hit = hit;
        return 0;
}

static char *path_of(const char *dir, const Fake *f, const char *suffix) {
        char hex[DIGEST_HEX_LEN + 1], *p;

        ck_assert_int_ge(asprintf(&p, "%s/%s%s", dir, digest_to_hex(&f->digest, hex), suffix), 0);
        return p;
}

static void flip(const char *path, off_t offset) {
        _cleanup_close_ int fd = open(path, O_RDWR | O_CLOEXEC);
        uint8_t b;

        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(pread(fd, &b, 1, offset), 1);
        b ^= 1;
        ck_assert_int_eq(pwrite(fd, &b, 1, offset), 1);
}

START_TEST(test_whole) {
        _cleanup_(imagefs_cache_freep) ImagefsCache *c = NULL;
        ImagefsCacheEntry *e;
        ImagefsContent ct;
        Fake f;
        bool hit;

        fake_init(&f, 10000, 1, false);
        ct = content_of(&f);
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 0, &c), 0);
        ck_assert_int_eq(imagefs_cache_get(c, &ct, &e), 0);
        /* A file without chunk digests is fetched and verified whole, whatever range is read. */
        ck_assert_int_eq(read_check(c, e, &f, 5000, 10, &hit), 0);
        ck_assert(!hit);
        ck_assert_uint_eq(f.fetches, 1);
        ck_assert_uint_eq(f.fetched, 10000);
        ck_assert_int_eq(read_check(c, e, &f, 0, 20000, &hit), 0);
        ck_assert(hit);
        ck_assert_uint_eq(f.fetches, 1);
        /* Past the end: nothing to fetch or read. */
        ck_assert_int_eq(read_check(c, e, &f, 10000, 10, &hit), 0);
        imagefs_cache_unref(c, e);

        /* Complete contents are named by their digest. */
        _cleanup_free_ char *p = path_of(test_tmpdir(), &f, "");
        ck_assert_int_eq(access(p, F_OK), 0);
        free(f.data);
}
END_TEST

START_TEST(test_chunks) {
        _cleanup_(imagefs_cache_freep) ImagefsCache *c = NULL;
        ImagefsCacheEntry *e;
        ImagefsContent ct;
        Fake f;
        bool hit;

        fake_init(&f, 3 * CHUNK + 100, 2, true);
        ct = content_of(&f);
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 0, &c), 0);
        ck_assert_int_eq(imagefs_cache_get(c, &ct, &e), 0);
        /* Only the chunks a read touches. */
        ck_assert_int_eq(read_check(c, e, &f, CHUNK + 10, 10, &hit), 0);
        ck_assert_uint_eq(f.fetched, CHUNK);
        _cleanup_free_ char *part = path_of(test_tmpdir(), &f, ".part"), *whole = path_of(test_tmpdir(), &f, "");
        ck_assert_int_eq(access(part, F_OK), 0);
        ck_assert_int_eq(read_check(c, e, &f, CHUNK - 1, 2, &hit), 0);
        ck_assert(!hit);
        ck_assert_uint_eq(f.fetched, 2 * CHUNK);
        ck_assert_int_eq(read_check(c, e, &f, 0, 2 * CHUNK, &hit), 0);
        ck_assert(hit);
        /* The last, short chunk; the file is complete with the one left. */
        ck_assert_int_eq(read_check(c, e, &f, 3 * CHUNK, 4096, &hit), 0);
        ck_assert_uint_eq(f.fetched, 2 * CHUNK + 100);
        ck_assert_int_eq(access(whole, F_OK), -1);
        ck_assert_int_eq(read_check(c, e, &f, 0, f.size, &hit), 0);
        ck_assert(!hit);
        ck_assert_uint_eq(f.fetched, 3 * CHUNK + 100);
        ck_assert_int_eq(read_check(c, e, &f, 0, f.size, &hit), 0);
        ck_assert(hit);
        ck_assert_int_eq(access(whole, F_OK), 0);
        ck_assert_int_eq(access(part, F_OK), -1);
        imagefs_cache_unref(c, e);

        /* Chunk digests that do not cover the size are refused. */
        ct.n_chunks = 2;
        f.digest.bytes[0] ^= 1;
        ct.digest = f.digest;
        ck_assert_int_eq(imagefs_cache_get(c, &ct, &e), -EINVAL);
        free(f.data);
}
END_TEST

START_TEST(test_wrong_bytes) {
        _cleanup_(imagefs_cache_freep) ImagefsCache *c = NULL;
        ImagefsCacheEntry *e;
        ImagefsContent ct;
        Fake f;
        bool hit;

        fake_init(&f, 2 * CHUNK, 3, true);
        ct = content_of(&f);
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 0, &c), 0);
        ck_assert_int_eq(imagefs_cache_get(c, &ct, &e), 0);
        /* Bytes that do not match are refused and not kept: the next read fetches again. */
        f.wrong = true;
        ck_assert_int_eq(read_check(c, e, &f, 0, 10, &hit), -EBADMSG);
        ck_assert_int_eq(read_check(c, e, &f, 0, 10, &hit), -EBADMSG);
        ck_assert_uint_eq(f.fetches, 2);
        f.wrong = false;
        f.short_ = true;
        ck_assert_int_eq(read_check(c, e, &f, 0, 10, &hit), -EBADMSG);
        f.short_ = false;
        f.error = -ETIMEDOUT;
        ck_assert_int_eq(read_check(c, e, &f, 0, 10, &hit), -ETIMEDOUT);
        f.error = 0;
        ck_assert_int_eq(read_check(c, e, &f, 0, 10, &hit), 0);
        ck_assert(!hit);
        ck_assert_uint_eq(f.fetches, 5);
        imagefs_cache_unref(c, e);
        free(f.data);
}
END_TEST

START_TEST(test_damage_and_restart) {
        _cleanup_(imagefs_cache_freep) ImagefsCache *c = NULL;
        ImagefsCacheEntry *e;
        ImagefsContent ct;
        Fake f;
        bool hit;

        fake_init(&f, 3 * CHUNK, 4, true);
        ct = content_of(&f);
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 0, &c), 0);
        ck_assert_int_eq(imagefs_cache_get(c, &ct, &e), 0);
        ck_assert_int_eq(read_check(c, e, &f, 0, f.size, &hit), 0);
        imagefs_cache_unref(c, e);
        _cleanup_free_ char *whole = path_of(test_tmpdir(), &f, "");

        /* A second process on the same directory is refused. */
        ImagefsCache *other;
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 0, &other), -EBUSY);

        /* After a restart: verified again before use; good bytes are a hit. */
        c = imagefs_cache_free(c);
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 0, &c), 0);
        ck_assert_int_eq(imagefs_cache_get(c, &ct, &e), 0);
        ck_assert_int_eq(read_check(c, e, &f, 0, 10, &hit), 0);
        ck_assert(hit);
        ck_assert_uint_eq(f.fetches, 3);

        /* Damaged while in use (its ctime changes): refused, dropped from the cache. */
        flip(whole, 2 * CHUNK + 7);
        ck_assert_int_eq(read_check(c, e, &f, 0, 10, &hit), 0); /* chunk 0 is still good */
        ck_assert_int_eq(read_check(c, e, &f, 2 * CHUNK, 10, &hit), -EUCLEAN);
        ck_assert_int_eq(access(whole, F_OK), -1);
        imagefs_cache_unref(c, e);
        /* The next reader fetches it again. */
        ck_assert_int_eq(imagefs_cache_get(c, &ct, &e), 0);
        ck_assert_int_eq(read_check(c, e, &f, 0, f.size, &hit), 0);
        ck_assert(!hit);
        imagefs_cache_unref(c, e);

        /* Damaged while no process ran. */
        c = imagefs_cache_free(c);
        flip(whole, 5);
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 0, &c), 0);
        ck_assert_int_eq(imagefs_cache_get(c, &ct, &e), 0);
        ck_assert_int_eq(read_check(c, e, &f, 0, 10, &hit), -EUCLEAN);
        imagefs_cache_unref(c, e);

        /* Truncated: as good as damaged, the size says so at once. */
        ck_assert_int_eq(imagefs_cache_get(c, &ct, &e), 0);
        ck_assert_int_eq(read_check(c, e, &f, 0, f.size, &hit), 0);
        imagefs_cache_unref(c, e);
        c = imagefs_cache_free(c);
        ck_assert_int_eq(truncate(whole, 100), 0);
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 0, &c), 0);
        ck_assert_int_eq(imagefs_cache_get(c, &ct, &e), 0);
        ck_assert_int_eq(read_check(c, e, &f, 0, 10, &hit), 0);
        ck_assert(!hit);
        imagefs_cache_unref(c, e);
        free(f.data);
}
END_TEST

START_TEST(test_part_removed_at_start) {
        _cleanup_(imagefs_cache_freep) ImagefsCache *c = NULL;
        ImagefsCacheEntry *e;
        ImagefsContent ct;
        Fake f;
        bool hit;

        fake_init(&f, 2 * CHUNK, 5, true);
        ct = content_of(&f);
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 0, &c), 0);
        ck_assert_int_eq(imagefs_cache_get(c, &ct, &e), 0);
        ck_assert_int_eq(read_check(c, e, &f, 0, 10, &hit), 0);
        imagefs_cache_unref(c, e);
        _cleanup_free_ char *part = path_of(test_tmpdir(), &f, ".part");
        ck_assert_int_eq(access(part, F_OK), 0);
        c = imagefs_cache_free(c);
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 0, &c), 0);
        ck_assert_int_eq(access(part, F_OK), -1);
        free(f.data);
}
END_TEST

START_TEST(test_eviction) {
        _cleanup_(imagefs_cache_freep) ImagefsCache *c = NULL;
        ImagefsCacheEntry *e[3];
        ImagefsContent ct[3];
        Fake f[3];
        uint64_t bytes, entries;
        bool hit;

        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 25000, &c), 0);
        for (unsigned i = 0; i < 3; i++) {
                fake_init(&f[i], 10000, 10 + i, false);
                ct[i] = content_of(&f[i]);
        }
        _cleanup_free_ char *p0 = path_of(test_tmpdir(), &f[0], ""), *p1 = path_of(test_tmpdir(), &f[1], ""),
                            *p2 = path_of(test_tmpdir(), &f[2], "");

        /* Contents held are never evicted: over the bound for a while. */
        for (unsigned i = 0; i < 3; i++) {
                ck_assert_int_eq(imagefs_cache_get(c, &ct[i], &e[i]), 0);
                ck_assert_int_eq(read_check(c, e[i], &f[i], 0, 10, &hit), 0);
        }
        imagefs_cache_usage(c, &bytes, &entries);
        ck_assert_uint_eq(bytes, 30000);
        ck_assert_uint_eq(entries, 3);
        /* The first one let go of goes, since the total is over the bound; then it fits. */
        imagefs_cache_unref(c, e[1]);
        imagefs_cache_unref(c, e[2]);
        imagefs_cache_unref(c, e[0]);
        imagefs_cache_usage(c, &bytes, &entries);
        ck_assert_uint_eq(bytes, 20000);
        ck_assert_uint_eq(entries, 2);
        ck_assert_int_eq(access(p1, F_OK), -1);
        ck_assert_int_eq(access(p0, F_OK), 0);
        ck_assert_int_eq(access(p2, F_OK), 0);

        /* Used in the order 0, 2 (1 is fetched again): that evicts 0, the least recently used. */
        FOREACH_ELEMENT(i, ((const unsigned[]) { 0, 2, 1 })) {
                ck_assert_int_eq(imagefs_cache_get(c, &ct[*i], &e[*i]), 0);
                ck_assert_int_eq(read_check(c, e[*i], &f[*i], 0, 10, &hit), 0);
                ck_assert(hit == (*i != 1));
                imagefs_cache_unref(c, e[*i]);
        }
        ck_assert_int_eq(access(p0, F_OK), -1);
        ck_assert_int_eq(access(p1, F_OK), 0);
        ck_assert_int_eq(access(p2, F_OK), 0);

        /* At start, the files found count, and a lower bound evicts at once. */
        c = imagefs_cache_free(c);
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 15000, &c), 0);
        imagefs_cache_usage(c, &bytes, &entries);
        ck_assert_uint_eq(bytes, 10000);
        ck_assert_uint_eq(entries, 1);
        for (unsigned i = 0; i < 3; i++)
                free(f[i].data);
}
END_TEST

/* Copies the file at from over to (both in the cache directory). */
static void copy_file(const char *from, const char *to) {
        _cleanup_close_ int in = open(from, O_RDONLY | O_CLOEXEC), out = -EBADF;
        uint8_t buf[512];
        ssize_t k;

        ck_assert_int_ge(in, 0);
        out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(out, 0);
        while ((k = read(in, buf, sizeof(buf))) > 0)
                ck_assert_int_eq(write(out, buf, (size_t) k), k);
        ck_assert_int_eq(k, 0);
}

/* Opens the cache at dir again and reads all of f: whether it was a hit, and the bytes hashed again. */
static int reopen_and_read(ImagefsCache **c, const char *dir, Fake *f, bool *ret_hit, uint64_t *ret_rehashed) {
        ImagefsContent ct = content_of(f);
        ImagefsCacheEntry *e;
        int r;

        *c = imagefs_cache_free(*c);
        ck_assert_int_eq(imagefs_cache_new(dir, 0, c), 0);
        ck_assert_int_eq(imagefs_cache_get(*c, &ct, &e), 0);
        r = read_check(*c, e, f, 0, f->size, ret_hit);
        imagefs_cache_unref(*c, e);
        *ret_rehashed = imagefs_cache_rehashed_bytes(*c);
        return r;
}

START_TEST(test_verification_records) {
        _cleanup_(imagefs_cache_freep) ImagefsCache *c = NULL;
        ImagefsCacheEntry *e;
        ImagefsContent ct;
        uint64_t rehashed;
        struct stat st;
        Fake f, g;
        bool hit, records;

        fake_init(&f, 3 * CHUNK, 20, true);
        fake_init(&g, 5000, 21, false);
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 0, &c), 0);
        records = imagefs_cache_keeps_verification(c);
        if (!records)
                /* Without CAP_SYS_ADMIN or trusted.* attributes: no records, every start verifies. */
                ck_assert_int_eq(getxattr(test_tmpdir(), "trusted.tonari-imagefs.verification-key", NULL, 0), -1);
        FOREACH_ELEMENT(x, ((Fake *[]) { &f, &g })) {
                ct = content_of(*x);
                ck_assert_int_eq(imagefs_cache_get(c, &ct, &e), 0);
                ck_assert_int_eq(read_check(c, e, *x, 0, (*x)->size, &hit), 0);
                imagefs_cache_unref(c, e);
        }
        ck_assert_uint_eq(imagefs_cache_rehashed_bytes(c), 0);
        _cleanup_free_ char *whole = path_of(test_tmpdir(), &f, ""), *record = path_of(test_tmpdir(), &f, ".verified"),
                            *g_record = path_of(test_tmpdir(), &g, ".verified");
        ck_assert_int_eq(access(record, F_OK), records ? 0 : -1);

        /* A restart: a recorded content is a hit without reading it back; else it is verified again. */
        ck_assert_int_eq(reopen_and_read(&c, test_tmpdir(), &f, &hit, &rehashed), 0);
        ck_assert(hit);
        ck_assert_uint_eq(rehashed, records ? 0 : f.size);
        ck_assert_uint_eq(f.fetches, 3);
        if (!records) {
                free(f.data);
                free(g.data);
                return;
        }

        /* Damaged while no process ran, its mtime put back: the ctime still differs, so it is verified
         * again and refused, and dropped with its record. */
        ck_assert_int_eq(stat(whole, &st), 0);
        flip(whole, CHUNK + 3);
        ck_assert_int_eq(utimensat(AT_FDCWD, whole, (const struct timespec[]) { st.st_atim, st.st_mtim }, 0), 0);
        ck_assert_int_eq(reopen_and_read(&c, test_tmpdir(), &f, &hit, &rehashed), -EUCLEAN);
        ck_assert_uint_gt(rehashed, 0);
        ck_assert_int_eq(access(whole, F_OK), -1);
        ck_assert_int_eq(access(record, F_OK), -1);

        /* Fetched again and recorded; then replaced by a copy of itself, damaged (another inode) with the
         * old record put back: refused. */
        ck_assert_int_eq(reopen_and_read(&c, test_tmpdir(), &f, &hit, &rehashed), 0);
        ck_assert(!hit);
        c = imagefs_cache_free(c);
        _cleanup_free_ char *saved = path_of(test_tmpdir(), &f, ".saved"), *copy = path_of(test_tmpdir(), &f, ".copy");
        copy_file(record, saved);
        copy_file(whole, copy);
        flip(copy, 1);
        ck_assert_int_eq(rename(copy, whole), 0);
        ck_assert_int_eq(rename(saved, record), 0);
        ck_assert_int_eq(reopen_and_read(&c, test_tmpdir(), &f, &hit, &rehashed), -EUCLEAN);
        ck_assert_uint_gt(rehashed, 0);

        /* Another content's record under this one's name (valid, but for another digest and inode):
         * verified again; here the bytes are good, so they are served and recorded anew. */
        ck_assert_int_eq(reopen_and_read(&c, test_tmpdir(), &f, &hit, &rehashed), 0);
        c = imagefs_cache_free(c);
        copy_file(g_record, record);
        ck_assert_int_eq(reopen_and_read(&c, test_tmpdir(), &f, &hit, &rehashed), 0);
        ck_assert(hit);
        ck_assert_uint_eq(rehashed, f.size);
        ck_assert_int_eq(reopen_and_read(&c, test_tmpdir(), &f, &hit, &rehashed), 0);
        ck_assert_uint_eq(rehashed, 0);

        /* A record whose MAC does not match (one bit of it flipped): verified again. */
        c = imagefs_cache_free(c);
        flip(record, 10);
        ck_assert_int_eq(reopen_and_read(&c, test_tmpdir(), &f, &hit, &rehashed), 0);
        ck_assert_uint_eq(rehashed, f.size);

        /* Another key (as another directory's): every record is void. */
        c = imagefs_cache_free(c);
        ck_assert_int_eq(removexattr(test_tmpdir(), "trusted.tonari-imagefs.verification-key"), 0);
        ck_assert_int_eq(reopen_and_read(&c, test_tmpdir(), &f, &hit, &rehashed), 0);
        ck_assert_uint_eq(rehashed, f.size);

        /* A record whose content is gone is removed at start. */
        c = imagefs_cache_free(c);
        ck_assert_int_eq(unlink(whole), 0);
        ck_assert_int_eq(imagefs_cache_new(test_tmpdir(), 0, &c), 0);
        ck_assert_int_eq(access(record, F_OK), -1);
        free(f.data);
        free(g.data);
}
END_TEST

TEST_SUITE("imagefs-cache", test_whole, test_chunks, test_wrong_bytes, test_damage_and_restart,
           test_part_removed_at_start, test_eviction, test_verification_records)
