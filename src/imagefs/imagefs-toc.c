/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "alloc-util.h"
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

/* Whether something in layer t above path's own name hides the layers below t at path: a proper
 * ancestor that is not a directory (a whiteout, a file) or is opaque. */
static bool hides_below(const Toc *t, const char *path) {
        uint64_t cur = 0;

        for (const char *p = path; *p;) {
                size_t len = strcspn(p, "/");
                TocEntry e;

                if (!p[len])
                        return false; /* path's own name: not an ancestor */
                if (toc_lookup(t, cur, p, len, &cur) < 0)
                        return false; /* not in this layer: neither is anything below */
                if (toc_get(t, cur, &e) < 0 || e.type != TOC_TYPE_DIRECTORY || (e.flags & TOC_FLAG_OPAQUE))
                        return true;
                p += len + 1;
        }
        return false;
}

/* The directory at path in the nearest layer below upper that has it without the implied flag, as
 * unpacking upper over them would keep it; -ENOENT when none does or it is hidden. */
static int find_lower_dir(const Toc *upper, const Toc *const *lowers, size_t n_lowers, const char *path,
                          const Toc **ret_toc, TocEntry *ret) {
        const Toc *above = upper;

        for (size_t j = 0; j < n_lowers; above = lowers[j++]) {
                uint64_t ino;
                TocEntry e;

                if (hides_below(above, path))
                        return -ENOENT;
                if (toc_resolve(lowers[j], path, &ino) < 0)
                        continue;
                if (toc_get(lowers[j], ino, &e) < 0 || e.type != TOC_TYPE_DIRECTORY)
                        return -ENOENT;
                if (e.flags & TOC_FLAG_IMPLIED)
                        continue;
                *ret_toc = lowers[j];
                *ret = e;
                return 0;
        }
        return -ENOENT;
}

static int add_lower_dir(TocWriter *w, const Toc *upper, const TocEntry *implied, const Toc *lower,
                         const TocEntry *e) {
        _cleanup_free_ TocXattr *xattrs = NULL;
        char name[17];
        size_t n = 0;
        int r;

        if (e->n_xattrs > 0) {
                xattrs = new0(TocXattr, e->n_xattrs);
                if (!xattrs)
                        return -ENOMEM;
        }
        for (; n < e->n_xattrs; n++) {
                TocXattrView x;

                r = toc_xattr(lower, e, (uint32_t) n, &x);
                if (r >= 0 && !(xattrs[n].name = strndup(x.name, x.name_len)))
                        r = -ENOMEM;
                if (r < 0)
                        goto finish;
                xattrs[n].value = x.value;
                xattrs[n].size = x.size;
        }
        snprintf(name, sizeof(name), "%016" PRIx64, implied->ino);
        r = toc_writer_add(w, &(TocEntrySpec) {
                .parent = "",
                .name = name,
                .type = TOC_TYPE_DIRECTORY,
                .mode = e->mode,
                .uid = e->uid,
                .gid = e->gid,
                .mtime_sec = e->mtime_sec,
                .mtime_nsec = e->mtime_nsec,
                .xattrs = xattrs,
                .n_xattrs = n,
        });
        /* The upper layer's own mark stays: opaque hides the lower contents, not the lower attributes. */
        if (r >= 0 && (implied->flags & TOC_FLAG_OPAQUE))
                r = toc_writer_set_opaque(w, name);
finish:
        for (size_t i = 0; i < n; i++)
                free((char *) xattrs[i].name);
        return r;
}

int imagefs_lower_dirs_new(const Toc *upper, const Toc *const *lowers, size_t n_lowers, Toc **ret) {
        _cleanup_(toc_writer_freep) TocWriter *w = NULL;
        _cleanup_free_ char *path = NULL;
        void *data = NULL;
        size_t size, found = 0;
        int r;

        path = malloc(TOC_PATH_MAX + 1);
        if (!path)
                return -ENOMEM;
        r = toc_writer_new(TOC_CHUNK_SIZE_MIN, &w);
        if (r < 0)
                return r;
        for (uint64_t i = 0; i < toc_n_entries(upper); i++) {
                const Toc *lower;
                TocEntry e, l;

                r = toc_get(upper, i, &e);
                if (r < 0)
                        return r;
                if (e.type != TOC_TYPE_DIRECTORY || !(e.flags & TOC_FLAG_IMPLIED))
                        continue;
                r = toc_path(upper, i, path, TOC_PATH_MAX + 1);
                if (r < 0)
                        return r;
                if (find_lower_dir(upper, lowers, n_lowers, path, &lower, &l) < 0)
                        continue; /* nothing below: the made-up attributes are what unpacking makes too */
                r = add_lower_dir(w, upper, &e, lower, &l);
                if (r == -EINVAL)
                        continue; /* xattrs a ToC writer refuses (a hostile lower ToC): made-up attributes */
                if (r < 0)
                        return r;
                found++;
        }
        if (found == 0) {
                *ret = NULL;
                return 0;
        }
        r = toc_writer_finish_buffer(w, &data, &size);
        if (r < 0)
                return r;
        r = toc_open_owned(data, size, ret);
        if (r < 0)
                free(data);
        return r;
}

int imagefs_lower_dir_of(const Toc *lower_dirs, uint64_t entry, uint64_t *ret) {
        char name[17];

        if (!lower_dirs)
                return -ENOENT;
        snprintf(name, sizeof(name), "%016" PRIx64, entry);
        return toc_lookup(lower_dirs, 0, name, 16, ret);
}
