/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <sys/sysmacros.h>

#include "../unit/tests.h"
#include "alloc-util.h"
#include "imagefs-toc.h"
#include "string-util.h"

/*
 * A layer with what imagefs must present specially: an opaque directory, a whiteout, hard links,
 * devices, a symlink, and attributes of overlayfs's own namespace that the layer must not pass on.
 */
static void make_layer(void **ret, size_t *ret_size) {
        _cleanup_(toc_writer_freep) TocWriter *w = NULL;
        const uint8_t binary[] = { 0, 1, 2, 0xff, 0 };
        TocXattr dir_xattrs[] = {
                { .name = "user.note", .value = "hello", .size = 5 },
                { .name = "trusted.overlay.redirect", .value = "/etc", .size = 4 },
                { .name = "trusted.overlay.opaque", .value = "n", .size = 1 },
        };
        TocXattr file_xattrs[] = {
                { .name = "security.capability", .value = binary, .size = sizeof(binary) },
        };
        TocXattr many[100];
        char names[100][32];
        TocEntrySpec s;

        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w), 0);
        s = (TocEntrySpec) { .parent = "", .name = "opaque", .type = TOC_TYPE_DIRECTORY, .mode = 0755, .xattrs = dir_xattrs,
                             .n_xattrs = ELEMENTSOF(dir_xattrs) };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        ck_assert_int_eq(toc_writer_set_opaque(w, "opaque"), 0);
        s = (TocEntrySpec) { .parent = "opaque", .name = "file", .type = TOC_TYPE_REGULAR, .mode = 04755, .uid = 1000,
                             .gid = 100, .size = 3 * TOC_CHUNK_SIZE_DEFAULT + 1, .mtime_sec = 1700000000,
                             .mtime_nsec = 123456789, .xattrs = file_xattrs, .n_xattrs = 1 };
        memset(s.content.digest.bytes, 0x42, DIGEST_SIZE);
        Digest chunks[4];
        for (size_t i = 0; i < ELEMENTSOF(chunks); i++)
                memset(chunks[i].bytes, 0x50 + (int) i, DIGEST_SIZE);
        s.content.chunks = chunks;
        s.content.n_chunks = ELEMENTSOF(chunks);
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        s = (TocEntrySpec) { .parent = "", .name = "link", .type = TOC_TYPE_HARDLINK, .link_target = "opaque/file" };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        s = (TocEntrySpec) { .parent = "", .name = "plain", .type = TOC_TYPE_DIRECTORY, .mode = 0700 };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        s = (TocEntrySpec) { .parent = "plain", .name = "gone", .type = TOC_TYPE_WHITEOUT };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        s = (TocEntrySpec) { .parent = "plain", .name = "null", .type = TOC_TYPE_CHAR, .mode = 0666, .rdev_major = 1,
                             .rdev_minor = 3 };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        s = (TocEntrySpec) { .parent = "plain", .name = "sym", .type = TOC_TYPE_SYMLINK, .mode = 0777,
                             .link_target = "../opaque/file" };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        for (size_t i = 0; i < ELEMENTSOF(many); i++) {
                snprintf(names[i], sizeof(names[i]), "user.attr%03zu", i);
                many[i] = (TocXattr) { .name = names[i], .value = names[i], .size = strlen(names[i]) };
        }
        s = (TocEntrySpec) { .parent = "plain", .name = "many", .type = TOC_TYPE_FIFO, .mode = 0600, .xattrs = many,
                             .n_xattrs = ELEMENTSOF(many) };
        ck_assert_int_eq(toc_writer_add(w, &s), 0);
        ck_assert_int_eq(toc_writer_finish_buffer(w, ret, ret_size), 0);
}

static Toc *open_layer(void) {
        void *data;
        size_t size;
        Digest d;
        Toc *t;

        make_layer(&data, &size);
        ck_assert_int_eq(digest_buffer(data, size, &d), 0);
        ck_assert_int_eq(imagefs_toc_load(data, size, &d, &t), 0);
        return t;
}

static uint64_t resolve(const Toc *t, const char *path) {
        uint64_t e;

        ck_assert_msg(toc_resolve(t, path, &e) == 0, "resolving %s", path);
        return e;
}

START_TEST(test_numbers) {
        uint64_t e;

        ck_assert_int_eq(imagefs_entry_of(0, &e), -ENOENT);
        ck_assert_int_eq(imagefs_entry_of(UINT64_MAX, &e), -ENOENT);
        ck_assert_int_eq(imagefs_entry_of(1, &e), 0);
        ck_assert_uint_eq(e, 0);
        ck_assert_uint_eq(imagefs_nodeid(41), 42);
}
END_TEST

START_TEST(test_nodes_and_stat) {
        _cleanup_(toc_freep) Toc *t = open_layer();
        ImagefsNode n, l;
        struct stat st;

        /* The root is node 1. */
        ck_assert_int_eq(imagefs_toc_node(t, 0, &n), 0);
        imagefs_node_stat(&n, &st);
        ck_assert_uint_eq(st.st_ino, 1);
        ck_assert(S_ISDIR(st.st_mode));

        /* A hard link is the node of the group's first name: one inode to the kernel. */
        ck_assert_int_eq(imagefs_toc_node(t, resolve(t, "opaque/file"), &n), 0);
        ck_assert_int_eq(imagefs_toc_node(t, resolve(t, "link"), &l), 0);
        ck_assert_uint_eq(n.entry, l.entry);
        ck_assert_uint_eq(n.entry, resolve(t, "opaque/file"));
        ck_assert(l.has_digest);
        ck_assert_uint_eq(l.digest.bytes[0], 0x42);
        imagefs_node_stat(&l, &st);
        ck_assert_uint_eq(st.st_ino, imagefs_nodeid(n.entry));
        ck_assert_uint_eq(st.st_mode, S_IFREG | 04755);
        ck_assert_uint_eq(st.st_nlink, 2);
        ck_assert_uint_eq(st.st_uid, 1000);
        ck_assert_uint_eq(st.st_gid, 100);
        ck_assert_int_eq(st.st_size, 3 * TOC_CHUNK_SIZE_DEFAULT + 1);
        ck_assert_int_eq(st.st_blocks, (3 * TOC_CHUNK_SIZE_DEFAULT + 1 + 511) / 512);
        ck_assert_int_eq(st.st_mtim.tv_sec, 1700000000);
        ck_assert_int_eq(st.st_mtim.tv_nsec, 123456789);

        /* A whiteout is what overlayfs expects in a lower layer: a character device 0/0. */
        ck_assert_int_eq(imagefs_toc_node(t, resolve(t, "plain/gone"), &n), 0);
        imagefs_node_stat(&n, &st);
        ck_assert_uint_eq(st.st_mode, S_IFCHR);
        ck_assert_uint_eq(st.st_rdev, makedev(0, 0));
        ck_assert(!n.has_digest);

        ck_assert_int_eq(imagefs_toc_node(t, resolve(t, "plain/null"), &n), 0);
        imagefs_node_stat(&n, &st);
        ck_assert_uint_eq(st.st_mode, S_IFCHR | 0666);
        ck_assert_uint_eq(st.st_rdev, makedev(1, 3));

        ck_assert_int_eq(imagefs_toc_node(t, resolve(t, "plain/sym"), &n), 0);
        imagefs_node_stat(&n, &st);
        ck_assert(S_ISLNK(st.st_mode));
        ck_assert_int_eq(st.st_size, strlen("../opaque/file"));

        ck_assert_int_eq(imagefs_toc_node(t, resolve(t, "plain"), &n), 0);
        ck_assert(!n.opaque);
        ck_assert_int_eq(imagefs_toc_node(t, resolve(t, "opaque"), &n), 0);
        ck_assert(n.opaque);

        ck_assert_int_eq(imagefs_toc_node(t, toc_n_entries(t), &n), -ENOENT);
}
END_TEST

START_TEST(test_xattrs) {
        _cleanup_(toc_freep) Toc *t = open_layer();
        const char want[] = "user.note\0trusted.overlay.opaque";
        char buf[4096];
        const void *v;
        size_t len, size;

        /* The layer's own overlay attributes are hidden; the opaque marker is imagefs's. */
        ck_assert_int_eq(imagefs_toc_listxattr(t, resolve(t, "opaque"), NULL, 0, &len), 0);
        ck_assert_uint_eq(len, sizeof(want));
        ck_assert_int_eq(imagefs_toc_listxattr(t, resolve(t, "opaque"), buf, sizeof(buf), &len), 0);
        ck_assert_uint_eq(len, sizeof(want));
        ck_assert_mem_eq(buf, want, sizeof(want));
        ck_assert_int_eq(imagefs_toc_listxattr(t, resolve(t, "opaque"), buf, sizeof(want) - 1, &len), -ERANGE);

        ck_assert_int_eq(imagefs_toc_getxattr(t, resolve(t, "opaque"), "trusted.overlay.opaque", &v, &size), 0);
        ck_assert_uint_eq(size, 1);
        ck_assert_mem_eq(v, "y", 1);
        ck_assert_int_eq(imagefs_toc_getxattr(t, resolve(t, "opaque"), "trusted.overlay.redirect", &v, &size), -ENODATA);
        ck_assert_int_eq(imagefs_toc_getxattr(t, resolve(t, "opaque"), "user.note", &v, &size), 0);
        ck_assert_uint_eq(size, 5);
        ck_assert_mem_eq(v, "hello", 5);
        ck_assert_int_eq(imagefs_toc_getxattr(t, resolve(t, "opaque"), "user.none", &v, &size), -ENODATA);

        /* A plain directory has no marker. */
        ck_assert_int_eq(imagefs_toc_listxattr(t, resolve(t, "plain"), buf, sizeof(buf), &len), 0);
        ck_assert_uint_eq(len, 0);
        ck_assert_int_eq(imagefs_toc_getxattr(t, resolve(t, "plain"), "trusted.overlay.opaque", &v, &size), -ENODATA);

        /* Binary values unchanged, through the hard link too. */
        ck_assert_int_eq(imagefs_toc_getxattr(t, resolve(t, "link"), "security.capability", &v, &size), 0);
        ck_assert_uint_eq(size, 5);
        ck_assert_mem_eq(v, ((const uint8_t[]) { 0, 1, 2, 0xff, 0 }), 5);

        /* More attributes than one batch of the listing. */
        ck_assert_int_eq(imagefs_toc_listxattr(t, resolve(t, "plain/many"), buf, sizeof(buf), &len), 0);
        ck_assert_uint_eq(len, 100 * (strlen("user.attr000") + 1));
        ck_assert_str_eq(buf + 99 * (strlen("user.attr000") + 1), "user.attr099");
        ck_assert_int_eq(imagefs_toc_getxattr(t, resolve(t, "plain/many"), "user.attr077", &v, &size), 0);
        ck_assert_mem_eq(v, "user.attr077", size);
}
END_TEST

START_TEST(test_xattr_list) {
        const char *names[] = { "user.a", "trusted.overlay.origin", "user.b\0x", "", "trusted.overlay." };
        const size_t lens[] = { 6, 22, 8, 0, 16 };
        char buf[64];
        size_t len;

        /* Hidden, empty and NUL-containing names are left out. */
        ck_assert_int_eq(imagefs_xattr_list(names, lens, ELEMENTSOF(names), false, buf, sizeof(buf), &len), 0);
        ck_assert_uint_eq(len, 7);
        ck_assert_mem_eq(buf, "user.a", 7);
        ck_assert_int_eq(imagefs_xattr_list(names, lens, ELEMENTSOF(names), true, NULL, 0, &len), 0);
        ck_assert_uint_eq(len, 7 + sizeof(IMAGEFS_OPAQUE_XATTR));
        ck_assert_int_eq(imagefs_xattr_list(names, lens, ELEMENTSOF(names), true, buf, 7, &len), -ERANGE);
        ck_assert(imagefs_xattr_hidden("trusted.overlay.x", 17));
        ck_assert(!imagefs_xattr_hidden("trusted.overlay", 15));
        ck_assert(!imagefs_xattr_hidden("user.overlay.opaque", 19));
}
END_TEST

START_TEST(test_load) {
        _cleanup_free_ void *data = NULL;
        size_t size;
        Digest d, other;
        Toc *t;

        make_layer(&data, &size);
        ck_assert_int_eq(digest_buffer(data, size, &d), 0);
        other = d;
        other.bytes[0] ^= 1;
        /* Another digest: refused, whatever the bytes are. */
        ck_assert_int_eq(imagefs_toc_load(data, size, &other, &t), -EBADMSG);
        /* Truncated: the digest says so. */
        ck_assert_int_eq(imagefs_toc_load(data, size - 1, &d, &t), -EBADMSG);
        /* Damaged bytes whose digest is given anyway: the ToC's own checksum says so. */
        ((uint8_t *) data)[size - 1] ^= 1;
        ck_assert_int_eq(digest_buffer(data, size, &other), 0);
        ck_assert_int_eq(imagefs_toc_load(data, size, &other, &t), -EBADMSG);
        ((uint8_t *) data)[size - 1] ^= 1;
        ck_assert_int_eq(imagefs_toc_load(data, size, &d, &t), 0);
        TAKE_PTR(data);
        ck_assert_uint_eq(toc_n_entries(t), 9);
        toc_free(t);
}
END_TEST

static Toc *open_writer(TocWriter *w) {
        void *data = NULL;
        size_t size;
        Toc *t = NULL;

        ck_assert_int_eq(toc_writer_finish_buffer(w, &data, &size), 0);
        ck_assert_int_eq(toc_open_owned(data, size, &t), 0);
        return t;
}

static void put(TocWriter *w, const char *parent, const char *name, TocType type, uint32_t mode, uint32_t uid,
                const TocXattr *xattrs, size_t n_xattrs) {
        TocEntrySpec s = { .parent = parent, .name = name, .type = type, .mode = mode, .uid = uid, .gid = uid,
                           .mtime_sec = 1600000000 + mode, .xattrs = xattrs, .n_xattrs = n_xattrs };

        ck_assert_msg(toc_writer_add(w, &s) == 0, "adding %s/%s", parent, name);
}

/* The attributes of implied directories (tonari-toc(5)) from the layers below: the nearest that has
 * the directory for real, unless a whiteout, a file or an opaque directory above hides it. */
START_TEST(test_lower_dirs) {
        _cleanup_(toc_writer_freep) TocWriter *w0 = NULL, *w1 = NULL, *w2 = NULL;
        _cleanup_toc_ Toc *l0 = NULL, *l1 = NULL, *up = NULL, *dirs = NULL;
        TocXattr x = { .name = "user.tonari.dir", .value = "下の層", .size = strlen("下の層") };
        const void *value;
        ImagefsNode node;
        uint64_t ino, lower;
        size_t len;
        char list[64];

        /* Bottom: the real directories. */
        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w0), 0);
        put(w0, "", "", TOC_TYPE_DIRECTORY, 0755, 0, NULL, 0);
        put(w0, "", "var", TOC_TYPE_DIRECTORY, 0755, 0, NULL, 0);
        put(w0, "var", "lib", TOC_TYPE_DIRECTORY, 0711, 5, NULL, 0);
        put(w0, "var/lib", "日本語", TOC_TYPE_DIRECTORY, 0750, 1000, &x, 1);
        put(w0, "", "hidden", TOC_TYPE_DIRECTORY, 0700, 0, NULL, 0);
        put(w0, "hidden", "sub", TOC_TYPE_DIRECTORY, 0701, 0, NULL, 0);
        put(w0, "", "gone", TOC_TYPE_DIRECTORY, 0700, 0, NULL, 0);
        put(w0, "", "tmp", TOC_TYPE_DIRECTORY, 01777, 0, NULL, 0);
        l0 = open_writer(w0);
        /* Middle: var/lib/日本語 only implied (skipped), hidden opaque, gone whited out, a file. */
        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w1), 0);
        put(w1, "var/lib/日本語", "file", TOC_TYPE_REGULAR, 0644, 0, NULL, 0);
        put(w1, "", "hidden", TOC_TYPE_DIRECTORY, 0705, 7, NULL, 0);
        ck_assert_int_eq(toc_writer_set_opaque(w1, "hidden"), 0);
        put(w1, "", "gone", TOC_TYPE_WHITEOUT, 0, 0, NULL, 0);
        l1 = open_writer(w1);
        /* Top: everything implied. */
        ck_assert_int_eq(toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &w2), 0);
        put(w2, "var/lib/日本語", "new", TOC_TYPE_REGULAR, 0644, 0, NULL, 0);
        put(w2, "hidden/sub", "f", TOC_TYPE_REGULAR, 0644, 0, NULL, 0);
        put(w2, "gone/x", "y", TOC_TYPE_REGULAR, 0644, 0, NULL, 0);
        put(w2, "tmp", "f", TOC_TYPE_REGULAR, 0644, 0, NULL, 0);
        put(w2, "new/dir", "f", TOC_TYPE_REGULAR, 0644, 0, NULL, 0);
        ck_assert_int_eq(toc_writer_set_opaque(w2, "tmp"), 0);
        up = open_writer(w2);

        ck_assert_int_eq(imagefs_lower_dirs_new(up, (const Toc *[]) { l1, l0 }, 2, &dirs), 0);
        ck_assert_ptr_nonnull(dirs);
        /* Found below, through the middle layer's implied one. */
        ck_assert_int_eq(toc_resolve(up, "var/lib/日本語", &ino), 0);
        ck_assert_int_eq(imagefs_lower_dir_of(dirs, ino, &lower), 0);
        ck_assert_int_eq(imagefs_toc_node(dirs, lower, &node), 0);
        ck_assert_uint_eq(node.mode, 0750);
        ck_assert_uint_eq(node.uid, 1000);
        ck_assert_uint_eq(node.gid, 1000);
        ck_assert_int_eq(node.mtime_sec, 1600000000 + 0750);
        ck_assert_int_eq(imagefs_toc_getxattr(dirs, lower, "user.tonari.dir", &value, &len), 0);
        ck_assert_uint_eq(len, strlen("下の層"));
        ck_assert(memcmp(value, "下の層", len) == 0);
        ck_assert_int_eq(toc_resolve(up, "var/lib", &ino), 0);
        ck_assert_int_eq(imagefs_lower_dir_of(dirs, ino, &lower), 0);
        ck_assert_int_eq(imagefs_toc_node(dirs, lower, &node), 0);
        ck_assert_uint_eq(node.mode, 0711);
        ck_assert_uint_eq(node.uid, 5);
        /* The root too. */
        ck_assert_int_eq(imagefs_lower_dir_of(dirs, 0, &lower), 0);
        ck_assert_int_eq(imagefs_toc_node(dirs, lower, &node), 0);
        ck_assert_uint_eq(node.mode, 0755);
        ck_assert_int_eq(node.mtime_sec, 1600000000 + 0755);
        /* The middle layer's own (opaque) hidden, and nothing below it. */
        ck_assert_int_eq(toc_resolve(up, "hidden", &ino), 0);
        ck_assert_int_eq(imagefs_lower_dir_of(dirs, ino, &lower), 0);
        ck_assert_int_eq(imagefs_toc_node(dirs, lower, &node), 0);
        ck_assert_uint_eq(node.mode, 0705);
        ck_assert_int_eq(toc_resolve(up, "hidden/sub", &ino), 0);
        ck_assert_int_eq(imagefs_lower_dir_of(dirs, ino, &lower), -ENOENT);
        /* Whited out in the middle: neither it nor below it. */
        ck_assert_int_eq(toc_resolve(up, "gone", &ino), 0);
        ck_assert_int_eq(imagefs_lower_dir_of(dirs, ino, &lower), -ENOENT);
        ck_assert_int_eq(toc_resolve(up, "gone/x", &ino), 0);
        ck_assert_int_eq(imagefs_lower_dir_of(dirs, ino, &lower), -ENOENT);
        /* Nowhere below: made-up attributes, as unpacking makes. */
        ck_assert_int_eq(toc_resolve(up, "new/dir", &ino), 0);
        ck_assert_int_eq(imagefs_lower_dir_of(dirs, ino, &lower), -ENOENT);
        /* Sticky tmp from below, with the upper layer's opaque mark. */
        ck_assert_int_eq(toc_resolve(up, "tmp", &ino), 0);
        ck_assert_int_eq(imagefs_lower_dir_of(dirs, ino, &lower), 0);
        ck_assert_int_eq(imagefs_toc_node(dirs, lower, &node), 0);
        ck_assert_uint_eq(node.mode, 01777);
        ck_assert(node.opaque);
        ck_assert_int_eq(imagefs_toc_listxattr(dirs, lower, list, sizeof(list), &len), 0);
        ck_assert_uint_eq(len, strlen(IMAGEFS_OPAQUE_XATTR) + 1);
        /* No lower layer, or none with anything: NULL. */
        dirs = toc_free(dirs);
        ck_assert_int_eq(imagefs_lower_dirs_new(up, NULL, 0, &dirs), 0);
        ck_assert_ptr_null(dirs);
}
END_TEST

TEST_SUITE("imagefs-toc", test_lower_dirs, test_numbers, test_nodes_and_stat, test_xattrs, test_xattr_list, test_load)
