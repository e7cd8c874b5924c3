/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "imagefs-toc.h"
#include "macro.h"

int imagefs_entry_of(uint64_t nodeid, uint64_t *ret) {
        if (nodeid == 0 || nodeid == UINT64_MAX)
                return -ENOENT;
        *ret = nodeid - 1;
        return 0;
}

int imagefs_toc_node(const Toc *t, uint64_t entry, ImagefsNode *ret) {
        TocEntry e;
        int r;

        r = toc_get(t, entry, &e);
        if (r < 0)
                return r;
        if (e.link != entry) {
                r = toc_get(t, e.link, &e);
                if (r < 0)
                        return r;
        }
        *ret = (ImagefsNode) {
                .entry = e.ino,
                .type = e.type,
                .mode = e.mode,
                .uid = e.uid,
                .gid = e.gid,
                .nlink = e.nlink,
                .size = e.size,
                .mtime_sec = e.mtime_sec,
                .mtime_nsec = e.mtime_nsec,
                .rdev_major = e.rdev_major,
                .rdev_minor = e.rdev_minor,
                .opaque = e.type == TOC_TYPE_DIRECTORY && (e.flags & TOC_FLAG_OPAQUE),
                .implied = e.type == TOC_TYPE_DIRECTORY && (e.flags & TOC_FLAG_IMPLIED),
                .has_digest = e.type == TOC_TYPE_REGULAR && e.digest,
        };
        if (ret->has_digest)
                memcpy(ret->digest.bytes, e.digest, DIGEST_SIZE);
        /* stat(2) of a symlink says the length of its target. */
        if (e.type == TOC_TYPE_SYMLINK)
                ret->size = e.target_len;
        return 0;
}

static mode_t type_to_mode(TocType t) {
        switch (t) {
        case TOC_TYPE_REGULAR:
                return S_IFREG;
        case TOC_TYPE_DIRECTORY:
                return S_IFDIR;
        case TOC_TYPE_SYMLINK:
                return S_IFLNK;
        case TOC_TYPE_CHAR:
        case TOC_TYPE_WHITEOUT:
                return S_IFCHR;
        case TOC_TYPE_BLOCK:
                return S_IFBLK;
        case TOC_TYPE_FIFO:
                return S_IFIFO;
        case TOC_TYPE_SOCKET:
                return S_IFSOCK;
        default:
                return S_IFREG;
        }
}

void imagefs_node_stat(const ImagefsNode *n, struct stat *ret) {
        struct stat st = {
                .st_ino = imagefs_nodeid(n->entry),
                .st_mode = type_to_mode(n->type) | (n->type == TOC_TYPE_WHITEOUT ? 0 : (n->mode & 07777)),
                .st_nlink = MAX(n->nlink, 1U),
                .st_uid = n->uid,
                .st_gid = n->gid,
                .st_size = (off_t) n->size,
                .st_blksize = 4096,
                .st_blocks = (blkcnt_t) DIV_ROUND_UP(n->size, 512U),
        };

        if (n->type == TOC_TYPE_CHAR || n->type == TOC_TYPE_BLOCK)
                st.st_rdev = makedev(n->rdev_major, n->rdev_minor);
        /* An image has one time per entry; access and change times show it too. */
        st.st_mtim = (struct timespec) { .tv_sec = (time_t) n->mtime_sec, .tv_nsec = (long) n->mtime_nsec };
        st.st_atim = st.st_ctim = st.st_mtim;
        *ret = st;
}

bool imagefs_xattr_hidden(const char *name, size_t len) {
        return len >= STRLEN(IMAGEFS_HIDDEN_XATTR_PREFIX) &&
               memcmp(name, IMAGEFS_HIDDEN_XATTR_PREFIX, STRLEN(IMAGEFS_HIDDEN_XATTR_PREFIX)) == 0;
}

int imagefs_xattr_list(const char *const *names, const size_t *lens, size_t n, bool opaque, char *buf, size_t size,
                       size_t *ret_len) {
        size_t len = 0;

        for (size_t i = 0; i <= n; i++) {
                const char *name;
                size_t l;

                if (i < n) {
                        name = names[i];
                        l = lens[i];
                        /* A name with a NUL in it cannot be listed (nor asked for). */
                        if (l == 0 || imagefs_xattr_hidden(name, l) || memchr(name, 0, l))
                                continue;
                } else if (opaque) {
                        name = IMAGEFS_OPAQUE_XATTR;
                        l = STRLEN(IMAGEFS_OPAQUE_XATTR);
                } else
                        break;
                if (size > 0) {
                        if (len + l + 1 > size)
                                return -ERANGE;
                        memcpy(buf + len, name, l);
                        buf[len + l] = 0;
                }
                len += l + 1;
        }
        *ret_len = len;
        return 0;
}

int imagefs_toc_listxattr(const Toc *t, uint64_t entry, char *buf, size_t size, size_t *ret_len) {
        const char *names[64];
        size_t lens[64], len = 0;
        ImagefsNode node;
        TocEntry e;
        int r;

        r = imagefs_toc_node(t, entry, &node);
        if (r < 0)
                return r;
        r = toc_get(t, node.entry, &e);
        if (r < 0)
                return r;
        /* In batches, so that any number of attributes needs no allocation. */
        for (uint32_t i = 0; i < e.n_xattrs || i == 0;) {
                size_t n = 0, l;

                for (; i < e.n_xattrs && n < ELEMENTSOF(names); i++, n++) {
                        TocXattrView x;

                        r = toc_xattr(t, &e, i, &x);
                        if (r < 0)
                                return r;
                        names[n] = x.name;
                        lens[n] = x.name_len;
                }
                r = imagefs_xattr_list(names, lens, n, i >= e.n_xattrs && node.opaque, size > 0 ? buf + len : NULL,
                                       size > 0 ? size - len : 0, &l);
                if (r < 0)
                        return r;
                len += l;
                if (i >= e.n_xattrs)
                        break;
        }
        *ret_len = len;
        return 0;
}

int imagefs_toc_getxattr(const Toc *t, uint64_t entry, const char *name, const void **ret_value, size_t *ret_size) {
        size_t len = strlen(name);
        ImagefsNode node;
        TocEntry e;
        int r;

        r = imagefs_toc_node(t, entry, &node);
        if (r < 0)
                return r;
        if (imagefs_xattr_hidden(name, len)) {
                if (node.opaque && streq(name, IMAGEFS_OPAQUE_XATTR)) {
                        *ret_value = "y";
                        *ret_size = 1;
                        return 0;
                }
                return -ENODATA;
        }
        r = toc_get(t, node.entry, &e);
        if (r < 0)
                return r;
        for (uint32_t i = 0; i < e.n_xattrs; i++) {
                TocXattrView x;

                r = toc_xattr(t, &e, i, &x);
                if (r < 0)
                        return r;
                if (x.name_len == len && memcmp(x.name, name, len) == 0) {
                        *ret_value = x.value;
                        *ret_size = x.size;
                        return 0;
                }
        }
        return -ENODATA;
}

int imagefs_toc_load(void *data, size_t size, const Digest *expected, Toc **ret) {
        Digest d;
        int r;

        r = digest_buffer(data, size, &d);
        if (r < 0)
                return r;
        if (!digest_equal(&d, expected))
                return -EBADMSG;
        return toc_open_owned(data, size, ret);
}
