/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target for tonari-imagefs's client-side ToC loading: the bytes a relay sends as a layer's ToC
 * go through imagefs_toc_load() (digest check, then the reader's validation) and, when accepted,
 * every entry through what the FUSE edge answers the kernel with: imagefs_toc_node() (hard links
 * resolved), imagefs_node_stat(), listxattr (sizing and filling, a too-small buffer), getxattr of
 * every listed name and of the opaque marker, lookups of each name in its parent. None of that may
 * fault or disagree with itself; bytes whose digest is not the expected one are refused whatever
 * they hold.
 *
 * Built by libFuzzer (test/fuzz/run-fuzz-imagefs-toc) and, for regression runs, with fuzz-main.c.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>

#include "digest.h"
#include "imagefs-toc.h"
#include "toc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const Toc *t) {
        volatile uint64_t sink = 0;
        char list[4096];

        for (uint64_t i = 0; i < toc_n_entries(t); i++) {
                ImagefsNode n;
                struct stat st;
                TocEntry e;
                size_t len, len2;
                int r;

                if (imagefs_toc_node(t, i, &n) < 0)
                        abort(); /* the reader validated every entry and every hard link */
                if (n.entry >= toc_n_entries(t))
                        abort();
                imagefs_node_stat(&n, &st);
                sink += st.st_mode + st.st_size + st.st_rdev;

                r = imagefs_toc_listxattr(t, i, NULL, 0, &len);
                if (r < 0)
                        abort();
                r = imagefs_toc_listxattr(t, i, list, sizeof(list), &len2);
                if (r == -ERANGE && len <= sizeof(list))
                        abort();
                if (r >= 0) {
                        if (len2 != len)
                                abort();
                        for (size_t at = 0; at < len;) {
                                const char *name = list + at;
                                size_t l = strnlen(name, len - at);
                                const void *value;
                                size_t vsize;

                                if (l == len - at)
                                        abort(); /* every name is NUL-terminated */
                                if (imagefs_xattr_hidden(name, l) && strcmp(name, IMAGEFS_OPAQUE_XATTR) != 0)
                                        abort(); /* a layer's trusted.overlay.* never reaches overlayfs */
                                if (imagefs_toc_getxattr(t, i, name, &value, &vsize) < 0 &&
                                    strcmp(name, IMAGEFS_OPAQUE_XATTR) != 0)
                                        abort(); /* what is listed can be read */
                                at += l + 1;
                        }
                }
                if (len > 1 && imagefs_toc_listxattr(t, i, list, len - 1, &len2) != -ERANGE)
                        abort();
                {
                        const void *value;
                        size_t vsize;

                        if (imagefs_toc_getxattr(t, i, IMAGEFS_OPAQUE_XATTR, &value, &vsize) >= 0)
                                sink += vsize;
                }
                if (i > 0 && toc_get(t, i, &e) >= 0) {
                        uint64_t found;

                        if (toc_lookup(t, e.parent, e.name, e.name_len, &found) < 0 || found != i)
                                abort();
                }
        }
}

/* The layer stacked on itself: every implied directory found below is a directory of the result,
 * with the attributes of a directory that is not implied. */
static void lower_dirs(const Toc *t) {
        Toc *dirs = NULL;

        if (imagefs_lower_dirs_new(t, (const Toc *[]) { t, t }, 2, &dirs) < 0)
                abort(); /* a valid ToC never fails it (but for memory) */
        for (uint64_t i = 0; dirs && i < toc_n_entries(t); i++) {
                ImagefsNode n;
                uint64_t lower;

                if (imagefs_lower_dir_of(dirs, i, &lower) < 0)
                        continue;
                if (imagefs_toc_node(dirs, lower, &n) < 0 || n.type != TOC_TYPE_DIRECTORY || n.implied)
                        abort();
        }
        toc_free(dirs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        Digest d, other;
        void *copy;
        Toc *t = NULL;

        if (size == 0 || digest_buffer(data, size, &d) < 0)
                return 0;

        /* The bytes under a digest that is not theirs: refused, and the caller keeps them. */
        other = d;
        other.bytes[0] ^= 1;
        copy = malloc(size);
        if (!copy)
                return 0;
        memcpy(copy, data, size);
        if (imagefs_toc_load(copy, size, &other, &t) != -EBADMSG || t)
                abort();

        /* Under their own digest: accepted if the reader accepts them; the Toc owns the copy then. */
        if (imagefs_toc_load(copy, size, &d, &t) < 0) {
                free(copy);
                return 0;
        }
        walk(t);
        lower_dirs(t);
        toc_free(t);
        return 0;
}
