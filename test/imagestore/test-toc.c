/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "../unit/tests.h"
#include "alloc-util.h"
#include "fd-util.h"
#include "string-util.h"
#include "toc-format.h"
#include "toc.h"
#include "time-util.h"

static void add(TocWriter *w, const char *parent, const char *name, TocType type, uint32_t mode) {
        TocEntrySpec s = { .parent = parent, .name = name, .type = type, .mode = mode, .mtime_sec = 1000 };

        ck_assert_msg(toc_writer_add(w, &s) == 0, "adding %s/%s", parent, name);
}

static void add_file(TocWriter *w, const char *parent, const char *name, uint64_t size, uint8_t seed) {
        _cleanup_free_ Digest *chunks = NULL;
        TocEntrySpec s = { .parent = parent, .name = name, .type = TOC_TYPE_REGULAR, .mode = 0644, .size = size,
                           .uid = 1000, .gid = 100, .mtime_sec = 1700000000, .mtime_nsec = 123456789 };
        size_t n = size > TOC_CHUNK_SIZE_DEFAULT ? (size + TOC_CHUNK_SIZE_DEFAULT - 1) / TOC_CHUNK_SIZE_DEFAULT : 0;

        memset(s.content.digest.bytes, seed, DIGEST_SIZE);
        if (n > 0) {
                chunks = new0(Digest, n);
                for (size_t i = 0; i < n; i++)
                        memset(chunks[i].bytes, seed + 1 + (int) i, DIGEST_SIZE);
                s.content.chunks = chunks;
                s.content.n_chunks = n;
        }
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
}

static void finish(TocWriter *w, void **ret, size_t *ret_size) {
        ck_assert_int_eq(toc_writer_finish_buffer(w, ret, ret_size), 0);
}

static uint64_t resolve(const Toc *t, const char *path) {
        uint64_t ino = UINT64_MAX;

        ck_assert_msg(toc_resolve(t, path, &ino) == 0, "resolving %s", path);
        return ino;
}

START_TEST(test_round_trip) {
        _cleanup_(toc_writer_freep) TocWriter *w = NULL;
        _cleanup_toc_ Toc *t = NULL;
        _cleanup_free_ void *buf = NULL;
        char long_name[TOC_NAME_MAX + 1], path[TOC_PATH_MAX + 1];
        const uint8_t binary[] = { 0, 1, 2, 0xff, 0 };
        TocXattr xattrs[] = {
                { .name = "security.capability", .value = binary, .size = sizeof(binary) },
                { .name = "user.empty", .value = NULL, .size = 0 },
        };
        TocEntrySpec s;
        TocEntry e;
        TocXattrView x;
        Digest d;
        size_t size;
        uint64_t ino;

        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w), 0);
        memset(long_name, 'n', TOC_NAME_MAX);
        long_name[TOC_NAME_MAX] = 0;

        /* Parents implied and given later; any order. */
        add_file(w, "usr/bin", "sh", 5, 0x11);
        add(w, "", "usr", TOC_TYPE_DIRECTORY, 0750);
        add_file(w, "usr/bin", "big", 3 * TOC_CHUNK_SIZE_DEFAULT + 1, 0x20);
        add_file(w, "", long_name, 0, 0x30);
        s = (TocEntrySpec) { .parent = "usr/bin", .name = "ls", .type = TOC_TYPE_SYMLINK, .mode = 0777,
                             .link_target = "../../bin/../etc/shadow" };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        s = (TocEntrySpec) { .parent = "dev", .name = "null", .type = TOC_TYPE_CHAR, .mode = 0666, .rdev_major = 1,
                             .rdev_minor = 3 };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        s = (TocEntrySpec) { .parent = "dev", .name = "loop0", .type = TOC_TYPE_BLOCK, .mode = 0660, .rdev_major = 7 };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        add(w, "run", "fifo", TOC_TYPE_FIFO, 0600);
        add(w, "run", "sock", TOC_TYPE_SOCKET, 0755);
        add(w, "etc", "gone", TOC_TYPE_WHITEOUT, 0);
        ck_assert_int_eq(toc_writer_set_opaque(w, "var/lib"), 0);
        s = (TocEntrySpec) { .parent = "usr/bin", .name = "su", .type = TOC_TYPE_REGULAR, .mode = 04755, .uid = 0,
                             .xattrs = xattrs, .n_xattrs = 2 };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        /* Two more names of usr/bin/su, one through the other. */
        s = (TocEntrySpec) { .parent = "sbin", .name = "su2", .type = TOC_TYPE_HARDLINK, .link_target = "usr/bin/su" };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        s = (TocEntrySpec) { .parent = "", .name = "su3", .type = TOC_TYPE_HARDLINK, .link_target = "sbin/su2" };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        s = (TocEntrySpec) { .parent = "", .name = "", .type = TOC_TYPE_DIRECTORY, .mode = 0700, .mtime_sec = -5 };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);

        finish(w, &buf, &size);
        ck_assert_int_eq(toc_open_buffer(buf, size, &t), 0);
        ck_assert_uint_eq(toc_chunk_size(t), TOC_CHUNK_SIZE_DEFAULT);
        /* root, usr, usr/bin + 4, the long name, dev + 2, run + 2, etc + 1, var + 1, sbin + 1, su3 */
        ck_assert_uint_eq(toc_n_entries(t), 21);

        ck_assert_int_eq(toc_get(t, 0, &e), 0);
        ck_assert_int_eq(e.type, TOC_TYPE_DIRECTORY);
        ck_assert_uint_eq(e.mode, 0700);
        ck_assert_int_eq(e.mtime_sec, -5);
        ck_assert_uint_eq(e.nlink, 2 + 6); /* dev etc run sbin usr var */

        ino = resolve(t, "usr");
        ck_assert_int_eq(toc_get(t, ino, &e), 0);
        ck_assert_uint_eq(e.mode, 0750);
        ck_assert_int_eq(toc_get(t, resolve(t, "usr/bin"), &e), 0);
        ck_assert_uint_eq(e.mode, 0755); /* implied */
        ck_assert_uint_eq(e.uid, 0);
        ck_assert_uint_eq(e.n_children, 4);

        ck_assert_int_eq(toc_get(t, resolve(t, "usr/bin/sh"), &e), 0);
        ck_assert_int_eq(e.type, TOC_TYPE_REGULAR);
        ck_assert_uint_eq(e.size, 5);
        ck_assert_uint_eq(e.uid, 1000);
        ck_assert_uint_eq(e.gid, 100);
        ck_assert_int_eq(e.mtime_sec, 1700000000);
        ck_assert_uint_eq(e.mtime_nsec, 123456789);
        ck_assert_uint_eq(e.digest[0], 0x11);
        ck_assert_uint_eq(e.n_chunks, 0);
        ck_assert_uint_eq(e.nlink, 1);

        ck_assert_int_eq(toc_get(t, resolve(t, "usr/bin/big"), &e), 0);
        ck_assert_uint_eq(e.n_chunks, 4);
        ck_assert_int_eq(toc_chunk(t, &e, 3, &d), 0);
        ck_assert_uint_eq(d.bytes[31], 0x24);
        ck_assert_int_eq(toc_chunk(t, &e, 4, &d), -ENOENT);

        ck_assert_int_eq(toc_get(t, resolve(t, "usr/bin/ls"), &e), 0);
        ck_assert_int_eq(e.type, TOC_TYPE_SYMLINK);
        ck_assert_uint_eq(e.target_len, strlen("../../bin/../etc/shadow"));
        ck_assert(memcmp(e.target, "../../bin/../etc/shadow", e.target_len) == 0);

        ck_assert_int_eq(toc_get(t, resolve(t, "dev/null"), &e), 0);
        ck_assert_int_eq(e.type, TOC_TYPE_CHAR);
        ck_assert_uint_eq(e.rdev_major, 1);
        ck_assert_uint_eq(e.rdev_minor, 3);
        ck_assert_int_eq(toc_get(t, resolve(t, "dev/loop0"), &e), 0);
        ck_assert_int_eq(e.type, TOC_TYPE_BLOCK);
        ck_assert_int_eq(toc_get(t, resolve(t, "run/fifo"), &e), 0);
        ck_assert_int_eq(e.type, TOC_TYPE_FIFO);
        ck_assert_int_eq(toc_get(t, resolve(t, "run/sock"), &e), 0);
        ck_assert_int_eq(e.type, TOC_TYPE_SOCKET);
        ck_assert_int_eq(toc_get(t, resolve(t, "etc/gone"), &e), 0);
        ck_assert_int_eq(e.type, TOC_TYPE_WHITEOUT);
        ck_assert_int_eq(toc_get(t, resolve(t, "var/lib"), &e), 0);
        ck_assert_uint_eq(e.flags, TOC_FLAG_OPAQUE | TOC_FLAG_IMPLIED); /* only named through var/lib/.wh..wh..opq */
        ck_assert_int_eq(toc_get(t, resolve(t, long_name), &e), 0);
        ck_assert_uint_eq(e.name_len, TOC_NAME_MAX);

        /* The hard link group: three names, one inode, the first name's attributes. */
        uint64_t su = resolve(t, "usr/bin/su"), su2 = resolve(t, "sbin/su2"), su3 = resolve(t, "su3");
        ck_assert_int_eq(toc_get(t, su, &e), 0);
        ck_assert_uint_eq(e.link, su);
        ck_assert_uint_eq(e.nlink, 3);
        ck_assert_uint_eq(e.mode, 04755);
        ck_assert_uint_eq(e.n_xattrs, 2);
        ck_assert_int_eq(toc_xattr(t, &e, 0, &x), 0);
        ck_assert_uint_eq(x.name_len, strlen("security.capability"));
        ck_assert(memcmp(x.name, "security.capability", x.name_len) == 0);
        ck_assert_uint_eq(x.size, sizeof(binary));
        ck_assert(memcmp(x.value, binary, sizeof(binary)) == 0);
        ck_assert_int_eq(toc_xattr(t, &e, 1, &x), 0);
        ck_assert_uint_eq(x.size, 0);
        ck_assert_int_eq(toc_xattr(t, &e, 2, &x), -ENOENT);
        ck_assert_int_eq(toc_get(t, su2, &e), 0);
        ck_assert_uint_eq(e.link, su);
        ck_assert_uint_eq(e.nlink, 3);
        ck_assert_uint_eq(e.mode, 04755);
        ck_assert_uint_eq(e.n_xattrs, 2);
        ck_assert_int_eq(toc_get(t, su3, &e), 0);
        ck_assert_uint_eq(e.link, su);

        /* Lookups that fail, paths back. */
        ck_assert_int_eq(toc_resolve(t, "usr/bin/nope", &ino), -ENOENT);
        ck_assert_int_eq(toc_resolve(t, "usr/bin/sh/x", &ino), -ENOTDIR);
        ck_assert_int_eq(toc_lookup(t, 0, "usr", 2, &ino), -ENOENT);
        ck_assert_int_eq(toc_lookup(t, 9999, "usr", 3, &ino), -ENOENT);
        ck_assert_int_eq(toc_path(t, su2, path, sizeof(path)), 0);
        ck_assert_str_eq(path, "sbin/su2");
        ck_assert_int_eq(toc_path(t, 0, path, sizeof(path)), 0);
        ck_assert_str_eq(path, "");
        ck_assert_int_eq(toc_path(t, su2, path, 5), -ENAMETOOLONG);

        /* Children are sorted and consecutive. */
        ck_assert_int_eq(toc_get(t, 0, &e), 0);
        for (uint32_t k = 1; k < e.n_children; k++) {
                TocEntry a, b;

                ck_assert_int_eq(toc_get(t, e.first_child + k - 1, &a), 0);
                ck_assert_int_eq(toc_get(t, e.first_child + k, &b), 0);
                ck_assert_int_lt(memcmp(a.name, b.name, MIN(a.name_len, b.name_len)) ?: (int) a.name_len - (int) b.name_len, 0);
        }
}
END_TEST

START_TEST(test_replacement_rules) {
        _cleanup_(toc_writer_freep) TocWriter *w = NULL;
        _cleanup_toc_ Toc *t = NULL;
        _cleanup_free_ void *buf = NULL;
        TocEntry e;
        size_t size;
        uint64_t ino;

        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w), 0);
        add_file(w, "a/b", "f", 1, 1);
        add(w, "a", "b", TOC_TYPE_DIRECTORY, 0700); /* directory again: children stay */
        add_file(w, "x", "y", 1, 2);
        add_file(w, "", "x", 2, 3);                   /* file replaces a directory and its children */
        add_file(w, "", "same", 1, 4);
        add_file(w, "", "same", 9, 5);                /* the last wins */
        add(w, "", "gone", TOC_TYPE_WHITEOUT, 0);
        add_file(w, "", "gone", 1, 6);                /* whited out, then re-created */
        ck_assert_int_eq(toc_writer_set_opaque(w, "a"), 0);
        add(w, "", "a", TOC_TYPE_DIRECTORY, 0711);   /* opaque stays */

        /* Below a file: no. */
        TocEntrySpec s = { .parent = "x", .name = "z", .type = TOC_TYPE_WHITEOUT };
        ck_assert_int_eq(toc_writer_add(w, &s), -ENOTDIR);
        ck_assert_int_eq(toc_writer_set_opaque(w, "same"), -ENOTDIR);

        finish(w, &buf, &size);
        ck_assert_int_eq(toc_open_buffer(buf, size, &t), 0);
        ck_assert_int_eq(toc_get(t, resolve(t, "a/b"), &e), 0);
        ck_assert_uint_eq(e.mode, 0700);
        ck_assert_uint_eq(e.n_children, 1);
        ck_assert_int_eq(toc_get(t, resolve(t, "x"), &e), 0);
        ck_assert_int_eq(e.type, TOC_TYPE_REGULAR);
        ck_assert_int_eq(toc_resolve(t, "x/y", &ino), -ENOTDIR);
        ck_assert_int_eq(toc_get(t, resolve(t, "same"), &e), 0);
        ck_assert_uint_eq(e.size, 9);
        ck_assert_int_eq(toc_get(t, resolve(t, "gone"), &e), 0);
        ck_assert_int_eq(e.type, TOC_TYPE_REGULAR);
        ck_assert_int_eq(toc_get(t, resolve(t, "a"), &e), 0);
        ck_assert_uint_eq(e.flags, TOC_FLAG_OPAQUE);
        ck_assert_uint_eq(e.mode, 0711);
        ck_assert_uint_eq(toc_n_entries(t), 7); /* root a a/b a/b/f gone same x */
}
END_TEST

START_TEST(test_bad_input) {
        _cleanup_(toc_writer_freep) TocWriter *w = NULL;
        _cleanup_free_ char *deep = NULL;
        _cleanup_free_ void *buf = NULL;
        size_t size;
        static const char *const bad_names[] = { ".", "..", "a/b", ".wh.x", ".wh..wh..opq" };
        static const char *const bad_parents[] = { "/abs", "a//b", "a/", "a/../b", "../x", "./a" };
        TocEntrySpec s;

        ck_assert_int_eq(toc_writer_new(100, &w), -EINVAL);
        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w), 0);
        FOREACH_ELEMENT(n, bad_names) {
                s = (TocEntrySpec) { .parent = "", .name = *n, .type = TOC_TYPE_DIRECTORY };
                ck_assert_msg(toc_writer_add(w, &s) == -EINVAL, "accepted %s", *n);
        }
        FOREACH_ELEMENT(p, bad_parents) {
                s = (TocEntrySpec) { .parent = *p, .name = "x", .type = TOC_TYPE_DIRECTORY };
                ck_assert_msg(toc_writer_add(w, &s) == -EINVAL, "accepted parent %s", *p);
        }
        char too_long[TOC_NAME_MAX + 2];
        memset(too_long, 'x', sizeof(too_long) - 1);
        too_long[sizeof(too_long) - 1] = 0;
        s = (TocEntrySpec) { .parent = "", .name = too_long, .type = TOC_TYPE_DIRECTORY };
        ck_assert_int_eq(toc_writer_add(w, &s), -EINVAL);
        deep = malloc(TOC_PATH_MAX + 100);
        for (size_t i = 0; i < TOC_PATH_MAX + 98; i += 2)
                memcpy(deep + i, "a/", 2);
        deep[TOC_PATH_MAX + 97] = 0;
        s = (TocEntrySpec) { .parent = deep, .name = "x", .type = TOC_TYPE_DIRECTORY };
        ck_assert_int_eq(toc_writer_add(w, &s), -EINVAL);
        /* Specs that do not add up. */
        s = (TocEntrySpec) { .parent = "", .name = "f", .type = TOC_TYPE_REGULAR, .size = 2 * TOC_CHUNK_SIZE_DEFAULT };
        ck_assert_int_eq(toc_writer_add(w, &s), -EINVAL);
        s = (TocEntrySpec) { .parent = "", .name = "l", .type = TOC_TYPE_SYMLINK };
        ck_assert_int_eq(toc_writer_add(w, &s), -EINVAL);
        s = (TocEntrySpec) { .parent = "", .name = "", .type = TOC_TYPE_REGULAR };
        ck_assert_int_eq(toc_writer_add(w, &s), -EINVAL);
        s = (TocEntrySpec) { .parent = "", .name = "t", .type = 42 };
        ck_assert_int_eq(toc_writer_add(w, &s), -EINVAL);

        /* A hard link to nothing, or to a directory, fails at finish. */
        s = (TocEntrySpec) { .parent = "", .name = "h", .type = TOC_TYPE_HARDLINK, .link_target = "missing" };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        ck_assert_int_eq(toc_writer_finish_buffer(w, &buf, &size), -EINVAL);
        add(w, "", "missing", TOC_TYPE_DIRECTORY, 0755);
        ck_assert_int_eq(toc_writer_finish_buffer(w, &buf, &size), -EINVAL);
        s = (TocEntrySpec) { .parent = "", .name = "h", .type = TOC_TYPE_HARDLINK, .link_target = "h" };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        ck_assert_int_eq(toc_writer_finish_buffer(w, &buf, &size), -ELOOP);
}
END_TEST

static void rechecksum(uint8_t *p, size_t size) {
        Digest d;

        ck_assert_int_eq(digest_buffer(p + TOC_CHECKSUMMED_FROM, size - TOC_CHECKSUMMED_FROM, &d), 0);
        memcpy(p + TOC_OFF_CHECKSUM, d.bytes, DIGEST_SIZE);
}

START_TEST(test_corrupt_input) {
        _cleanup_(toc_writer_freep) TocWriter *w = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        Toc *t = NULL;
        size_t size;

        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w), 0);
        add_file(w, "a", "f", 3 * TOC_CHUNK_SIZE_DEFAULT, 1);
        add(w, "a", "d", TOC_TYPE_DIRECTORY, 0755);
        TocXattr x = { .name = "user.x", .value = "v", .size = 1 };
        TocEntrySpec s = { .parent = "", .name = "l", .type = TOC_TYPE_SYMLINK, .link_target = "a", .xattrs = &x,
                           .n_xattrs = 1 };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        ck_assert_int_eq(toc_writer_finish_buffer(w, (void **) &buf, &size), 0);
        ck_assert_int_eq(toc_open_buffer(buf, size, &t), 0);
        t = toc_free(t);

        /* Any flipped byte, any truncation. */
        for (size_t i = 0; i < size; i++) {
                buf[i] ^= 0x40;
                ck_assert_msg(toc_open_buffer(buf, size, &t) < 0, "flip at %zu accepted", i);
                buf[i] ^= 0x40;
        }
        for (size_t n = 0; n < size; n++)
                ck_assert_msg(toc_open_buffer(buf, n, &t) == -EBADMSG, "truncation to %zu accepted", n);

        /* Another major version is refused as such; a newer minor is read. */
        toc_put16(buf + TOC_OFF_MAJOR, 2);
        ck_assert_int_eq(toc_open_buffer(buf, size, &t), -EPROTONOSUPPORT);
        toc_put16(buf + TOC_OFF_MAJOR, 1);
        toc_put16(buf + TOC_OFF_MINOR, 7);
        rechecksum(buf, size);
        ck_assert_int_eq(toc_open_buffer(buf, size, &t), 0);
        t = toc_free(t);

        /* Well checksummed, but inconsistent: each caught by the validation, not the checksum. */
        static const struct {
                size_t off;
                unsigned width;
                uint64_t value;
        } lies[] = {
                { TOC_OFF_N_ENTRIES, 8, 1000 },
                { TOC_OFF_STRINGS_SIZE, 8, 1ULL << 40 },
                { TOC_OFF_EXTRA, 8, UINT64_MAX - 3 },
                { TOC_OFF_CHUNK_SIZE, 4, 1024 },
                { TOC_OFF_ENTRY_SIZE, 4, 8 },
                { TOC_OFF_HEADER_SIZE, 4, 8 },
                { TOC_OFF_FILE_SIZE, 8, 3 },
                { TOC_HEADER_SIZE_V1 + TOC_E_NAME_LEN, 4, 1 },                        /* root with a name */
                { TOC_HEADER_SIZE_V1 + TOC_E_FIRST_CHILD, 8, 0 },                     /* root its own child */
                { TOC_HEADER_SIZE_V1 + TOC_E_N_CHILDREN, 4, 50 },
                { TOC_HEADER_SIZE_V1 + TOC_ENTRY_SIZE_V1 + TOC_E_PARENT, 8, 99 },
                { TOC_HEADER_SIZE_V1 + TOC_ENTRY_SIZE_V1 + TOC_E_TYPE, 1, 9 },
                { TOC_HEADER_SIZE_V1 + TOC_ENTRY_SIZE_V1 + TOC_E_NAME_OFF, 4, UINT32_MAX },
                { TOC_HEADER_SIZE_V1 + TOC_ENTRY_SIZE_V1 + TOC_E_MODE, 4, 010000 },
                { TOC_HEADER_SIZE_V1 + TOC_ENTRY_SIZE_V1 + TOC_E_LINK, 8, 0 },
                /* Entries: 0 root, 1 a, 2 l, 3 a/d, 4 a/f (3 chunks) */
                { TOC_HEADER_SIZE_V1 + 4 * TOC_ENTRY_SIZE_V1 + TOC_E_N_CHUNKS, 4, 2 },
                { TOC_HEADER_SIZE_V1 + 4 * TOC_ENTRY_SIZE_V1 + TOC_E_CONTENT_OFF, 8, 1ULL << 32 },
                { TOC_HEADER_SIZE_V1 + 4 * TOC_ENTRY_SIZE_V1 + TOC_E_SIZE, 8, 1 },
                { TOC_HEADER_SIZE_V1 + 3 * TOC_ENTRY_SIZE_V1 + TOC_E_CONTENT_OFF, 8, 32 },
                { TOC_HEADER_SIZE_V1 + 3 * TOC_ENTRY_SIZE_V1 + TOC_E_RESERVED2, 4, 1 },
                { TOC_HEADER_SIZE_V1 + 4 * TOC_ENTRY_SIZE_V1 + TOC_E_PARENT, 8, 2 },
                { TOC_HEADER_SIZE_V1 + 2 * TOC_ENTRY_SIZE_V1 + TOC_E_N_XATTRS, 4, 1000 }, /* l */
                { TOC_HEADER_SIZE_V1 + 2 * TOC_ENTRY_SIZE_V1 + TOC_E_TARGET_LEN, 4, 0 },
                { TOC_HEADER_SIZE_V1 + 2 * TOC_ENTRY_SIZE_V1 + TOC_E_FLAGS, 1, TOC_FLAG_OPAQUE },
        };
        FOREACH_ELEMENT(l, lies) {
                _cleanup_free_ uint8_t *copy = memdup(buf, size);

                if (l->width == 8)
                        toc_put64(copy + l->off, l->value);
                else if (l->width == 4)
                        toc_put32(copy + l->off, (uint32_t) l->value);
                else
                        copy[l->off] = (uint8_t) l->value;
                rechecksum(copy, size);
                ck_assert_msg(toc_open_buffer(copy, size, &t) == -EBADMSG, "lie at %zu accepted", l->off);
        }
}
END_TEST

static int count_contents(const Digest *d, void *userdata) {
        unsigned *n = userdata;

        ck_assert(d->bytes[0] == 0x0a || d->bytes[0] == 0x0b);
        (*n)++;
        return 0;
}

/* Directories a layer names only through deeper paths are marked implied (1.1), and lose the mark
 * when the layer has their entry after all; a 1.0 ToC still loads, but not with the 1.1 flag. */
START_TEST(test_implied) {
        _cleanup_(toc_writer_freep) TocWriter *w = NULL;
        _cleanup_toc_ Toc *t = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        TocEntry e;
        size_t size;
        uint64_t ino;

        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w), 0);
        /* No "./": the root too. Names as real images have them: UTF-8, a hard link, a symlink, a
         * whiteout and an opaque directory below implied ones. */
        add_file(w, "usr/share/doc/bäckerei", "Főtanúsítvány.crt", 10, 1);
        add(w, "usr/share", "doc", TOC_TYPE_DIRECTORY, 0750); /* after its child: no longer implied */
        TocEntrySpec l = { .parent = "usr/lib/日本語", .name = "link", .type = TOC_TYPE_HARDLINK,
                           .link_target = "usr/share/doc/bäckerei/Főtanúsítvány.crt" };
        ck_assert_int_eq(toc_writer_add(w, &l), 0);
        TocEntrySpec sl = { .parent = "etc/alternatives", .name = "awk", .type = TOC_TYPE_SYMLINK,
                            .link_target = "/usr/bin/mawk", .mode = 0777 };
        ck_assert_int_eq(toc_writer_add(w, &sl), 0);
        add(w, "var/cache", "gone", TOC_TYPE_WHITEOUT, 0);
        ck_assert_int_eq(toc_writer_set_opaque(w, "opt/empty"), 0);
        add(w, "", "etc", TOC_TYPE_DIRECTORY, 0755);
        finish(w, (void **) &buf, &size);
        ck_assert_int_eq(toc_open_buffer(buf, size, &t), 0);

        const char *implied[] = { "", "usr", "usr/share", "usr/share/doc/bäckerei", "usr/lib", "usr/lib/日本語",
                                  "etc/alternatives", "var", "var/cache", "opt", "opt/empty" };
        for (size_t i = 0; i < ELEMENTSOF(implied); i++) {
                ck_assert_int_eq(toc_get(t, resolve(t, implied[i]), &e), 0);
                ck_assert_msg(e.flags & TOC_FLAG_IMPLIED, "'%s' not implied", implied[i]);
                ck_assert_uint_eq(e.mode, 0755);
                ck_assert_uint_eq(e.uid, 0);
                ck_assert_int_eq(e.mtime_sec, 0);
        }
        ck_assert_int_eq(toc_get(t, resolve(t, "opt/empty"), &e), 0);
        ck_assert_uint_eq(e.flags, TOC_FLAG_IMPLIED | TOC_FLAG_OPAQUE);
        const char *explicit[] = { "usr/share/doc", "etc", "usr/share/doc/bäckerei/Főtanúsítvány.crt",
                                   "usr/lib/日本語/link", "etc/alternatives/awk", "var/cache/gone" };
        for (size_t i = 0; i < ELEMENTSOF(explicit); i++) {
                ck_assert_int_eq(toc_get(t, resolve(t, explicit[i]), &e), 0);
                ck_assert_msg(!(e.flags & TOC_FLAG_IMPLIED), "'%s' implied", explicit[i]);
        }
        ck_assert_int_eq(toc_get(t, resolve(t, "usr/share/doc"), &e), 0);
        ck_assert_uint_eq(e.mode, 0750);
        ck_assert_uint_eq(toc_get16(buf + TOC_OFF_MINOR), 1);
        t = toc_free(t);

        /* The same bytes as a 1.0 ToC: the flag was not defined then, so it is corruption. */
        toc_put16(buf + TOC_OFF_MINOR, 0);
        rechecksum(buf, size);
        ck_assert_int_eq(toc_open_buffer(buf, size, &t), -EBADMSG);
        /* A later minor knows it. */
        toc_put16(buf + TOC_OFF_MINOR, 2);
        rechecksum(buf, size);
        ck_assert_int_eq(toc_open_buffer(buf, size, &t), 0);
        t = toc_free(t);
        buf = mfree(buf);
        w = toc_writer_free(w);

        /* A 1.0 ToC (no implied entries: the layer names every directory) loads as before. */
        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w), 0);
        add(w, "", "", TOC_TYPE_DIRECTORY, 0700);
        add(w, "", "etc", TOC_TYPE_DIRECTORY, 0755);
        add_file(w, "etc", "hostname", 5, 2);
        finish(w, (void **) &buf, &size);
        toc_put16(buf + TOC_OFF_MINOR, 0);
        rechecksum(buf, size);
        ck_assert_int_eq(toc_open_buffer(buf, size, &t), 0);
        ck_assert_int_eq(toc_get(t, 0, &e), 0);
        ck_assert_uint_eq(e.flags, 0);
        ck_assert_uint_eq(e.mode, 0700);
        ck_assert_int_eq(toc_resolve(t, "etc/hostname", &ino), 0);
        t = toc_free(t);

        /* Implied is for directories only. */
        toc_put16(buf + TOC_OFF_MINOR, 1);
        buf[toc_get64(buf + TOC_OFF_ENTRIES) + ino * toc_get32(buf + TOC_OFF_ENTRY_SIZE) + TOC_E_FLAGS] |= TOC_FLAG_IMPLIED;
        rechecksum(buf, size);
        ck_assert_int_eq(toc_open_buffer(buf, size, &t), -EBADMSG);
}
END_TEST

START_TEST(test_file_and_contents) {
        _cleanup_(toc_writer_freep) TocWriter *w = NULL;
        _cleanup_free_ char *path = strjoin(test_tmpdir(), "/toc");
        _cleanup_close_ int fd = -EBADF;
        _cleanup_toc_ Toc *t = NULL;
        uint64_t entries, bytes;
        unsigned seen = 0;

        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w), 0);
        add_file(w, "", "a", 1, 0x0a);
        add_file(w, "", "b", 1, 0x0b);
        TocEntrySpec s = { .parent = "", .name = "c", .type = TOC_TYPE_HARDLINK, .link_target = "a" };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(toc_writer_finish_fd(w, fd, &entries, &bytes), 0);
        ck_assert_uint_eq(entries, 4);
        ck_assert_uint_eq(bytes, (uint64_t) lseek(fd, 0, SEEK_CUR));
        ck_assert_int_eq(toc_open_fd(fd, &t), 0);
        ck_assert_uint_eq(toc_n_entries(t), 4);
        /* The reader has the bytes: the file truncated or rewritten under it changes nothing (a
         * mapping would have died of SIGBUS here). */
        ck_assert_int_eq(ftruncate(fd, 0), 0);
        ck_assert_int_eq(ftruncate(fd, 4096), 0);

        /* Each content once: the hard link owns none. */
        ck_assert_int_eq(toc_for_each_content(t, count_contents, &seen), 0);
        ck_assert_uint_eq(seen, 2);
        ck_assert_int_eq(toc_stats(t, &entries, &bytes), 0);
        ck_assert_uint_eq(entries, 4);
        ck_assert_uint_eq(bytes, 2); /* a and b; c is a's other name */
}
END_TEST

/*
 * Memory that changes after validation (the relay's ToC cache once mapped files that could): every
 * accessor checks what it follows again, and refuses with -EBADMSG rather than read out of bounds
 * or loop. The three damages the relay met, and others of the same kind.
 */
START_TEST(test_damage_after_open) {
        _cleanup_(toc_writer_freep) TocWriter *w = NULL;
        _cleanup_free_ uint8_t *buf = NULL, *pristine = NULL;
        _cleanup_toc_ Toc *t = NULL;
        char path[TOC_PATH_MAX + 1];
        uint64_t ino, root_off, f_off, e1_off, entries_off, entry_size, f, l;
        TocEntry root, e;
        TocXattrView x;
        Digest d;
        size_t size;

        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w), 0);
        add_file(w, "a", "f", 3 * TOC_CHUNK_SIZE_DEFAULT, 1);
        TocXattr xa = { .name = "user.x", .value = "v", .size = 1 };
        TocEntrySpec s = { .parent = "", .name = "l", .type = TOC_TYPE_SYMLINK, .link_target = "a", .xattrs = &xa,
                           .n_xattrs = 1 };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        ck_assert_int_eq(toc_writer_finish_buffer(w, (void **) &buf, &size), 0);
        pristine = memdup(buf, size);
        ck_assert_ptr_nonnull(pristine);
        ck_assert_int_eq(toc_open_buffer(buf, size, &t), 0);

        entries_off = toc_get64(buf + TOC_OFF_ENTRIES);
        entry_size = toc_get32(buf + TOC_OFF_ENTRY_SIZE);
        root_off = entries_off;
        e1_off = entries_off + entry_size;
        f = resolve(t, "a/f");
        l = resolve(t, "l");
        f_off = entries_off + f * entry_size;

        /* name_len = 100000 in the first entry after the root. */
        toc_put32(buf + e1_off + TOC_E_NAME_LEN, 100000);
        ck_assert_int_eq(toc_get(t, 1, &e), -EBADMSG);
        ck_assert_int_eq(toc_get(t, 0, &root), 0);
        ck_assert_int_eq(toc_child(t, &root, 0, &e), -EBADMSG);
        ck_assert_int_eq(toc_lookup(t, 0, "a", 1, &ino), -EBADMSG);
        ck_assert_int_eq(toc_path(t, 1, path, sizeof(path)), -EBADMSG);
        memcpy(buf, pristine, size);

        /* The root's n_children = 0xffffffff: its children end at the table's end. */
        toc_put32(buf + root_off + TOC_E_N_CHILDREN, UINT32_MAX);
        ck_assert_int_eq(toc_get(t, 0, &root), -EBADMSG);
        ck_assert_int_eq(toc_lookup(t, 0, "zzz", 3, &ino), -EBADMSG);
        /* A directory entry the caller kept from before: checked again per child. */
        memcpy(buf, pristine, size);
        ck_assert_int_eq(toc_get(t, 0, &root), 0);
        root.n_children = UINT32_MAX;
        ck_assert_int_eq(toc_child(t, &root, 2, &e), -EBADMSG);
        ck_assert_int_eq(toc_child(t, &root, UINT32_MAX - 1, &e), -EBADMSG);

        /* A parent that is not before its child: toc_path() would loop. */
        toc_put64(buf + f_off + TOC_E_PARENT, f);
        ck_assert_int_eq(toc_path(t, f, path, sizeof(path)), -EBADMSG);
        memcpy(buf, pristine, size);

        /* Content, chunk and xattr offsets beyond the extra section. */
        ck_assert_int_eq(toc_get(t, f, &e), 0);
        toc_put64(buf + f_off + TOC_E_CONTENT_OFF, UINT64_MAX - 8);
        ck_assert_int_eq(toc_get(t, f, &e), -EBADMSG);
        e.content_off = UINT64_MAX - 8;
        ck_assert_int_eq(toc_chunk(t, &e, 1, &d), -EBADMSG);
        memcpy(buf, pristine, size);
        ck_assert_int_eq(toc_get(t, l, &e), 0);
        e.xattrs_off = UINT64_MAX - 8;
        ck_assert_int_eq(toc_xattr(t, &e, 0, &x), -EBADMSG);
        ck_assert_int_eq(toc_get(t, l, &e), 0);
        ck_assert_int_eq(toc_xattr(t, &e, 0, &x), 0);
        toc_put32(buf + toc_get64(buf + TOC_OFF_EXTRA) + e.xattrs_off + TOC_X_VALUE_LEN, UINT32_MAX);
        ck_assert_int_eq(toc_xattr(t, &e, 0, &x), -EBADMSG);
        memcpy(buf, pristine, size);

        /* Undamaged again: everything answers. */
        ck_assert_int_eq(toc_path(t, f, path, sizeof(path)), 0);
        ck_assert_str_eq(path, "a/f");
}
END_TEST

/* Not a test of correctness: the numbers the benchmark quotes (printed as TAP comments). */
START_TEST(test_lookup_rate) {
        _cleanup_(toc_writer_freep) TocWriter *w = NULL;
        _cleanup_toc_ Toc *t = NULL;
        _cleanup_free_ void *buf = NULL;
        unsigned n_dirs = 100, per_dir = 1000;
        uint64_t found = 0;
        size_t size;
        usec_t start;

        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w), 0);
        for (unsigned d = 0; d < n_dirs; d++)
                for (unsigned f = 0; f < per_dir; f++) {
                        char dir[32], name[32];

                        snprintf(dir, sizeof(dir), "usr/share/d%u", d);
                        snprintf(name, sizeof(name), "file-%u.txt", f);
                        add_file(w, dir, name, 100, (uint8_t) f);
                }
        start = now(CLOCK_MONOTONIC);
        finish(w, &buf, &size);
        printf("# %u entries: ToC of %zu bytes (%.1f bytes per entry), written in %.0f ms\n", n_dirs * per_dir,
               size, (double) size / (n_dirs * per_dir), (double) (now(CLOCK_MONOTONIC) - start) / USEC_PER_MSEC);
        start = now(CLOCK_MONOTONIC);
        ck_assert_int_eq(toc_open_buffer(buf, size, &t), 0);
        printf("# opened (checksum and validation) in %.1f ms\n", (double) (now(CLOCK_MONOTONIC) - start) / USEC_PER_MSEC);

        start = now(CLOCK_MONOTONIC);
        for (unsigned i = 0; i < 1000000; i++) {
                char path[64];
                uint64_t ino;

                snprintf(path, sizeof(path), "usr/share/d%u/file-%u.txt", (i * 7919) % n_dirs, (i * 104729) % per_dir);
                found += toc_resolve(t, path, &ino) == 0;
        }
        ck_assert_uint_eq(found, 1000000);
        printf("# path resolutions (4 lookups each): %.0f per second\n",
               1e6 / ((double) (now(CLOCK_MONOTONIC) - start) / USEC_PER_SEC));
}
END_TEST

TEST_SUITE("toc", test_round_trip, test_replacement_rules, test_implied, test_bad_input, test_corrupt_input, test_file_and_contents,
           test_damage_after_open, test_lookup_rate)
