/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "json-util.h"
#include "string-util.h"
#include "toc-format.h"
#include "toc.h"

/*
 * The reader never maps a file: a mapping can change under it (another process writing the file)
 * or fault (SIGBUS when the file is truncated), and both would defeat the validation at open.
 * toc_open_fd() and toc_open_owned() keep bytes nobody else writes; every accessor still checks
 * the offsets and lengths it follows, so that a reader is memory-safe on its own and not only by
 * the validation it passed once.
 */
struct Toc {
        const uint8_t *data;
        size_t size;
        bool owned;
        uint32_t chunk_size;
        uint64_t n_entries;
        const uint8_t *entries;
        uint32_t entry_size;
        const uint8_t *strings;
        uint64_t strings_size;
        const uint8_t *extra;
        uint64_t extra_size;
        uint32_t known_flags; /* TOC_FLAG_* of the ToC's minor version */
};

/* [off, off + len) within [0, size), without overflow. */
static bool in_range(uint64_t off, uint64_t len, uint64_t size) {
        return off <= size && len <= size - off;
}

static const uint8_t *entry_at(const Toc *t, uint64_t i) {
        return t->entries + i * t->entry_size;
}

/*
 * The record as it is. Pointers are only made for offsets inside their section (NULL otherwise),
 * so that reading an unvalidated record never computes an address outside the mapping.
 */
static void read_entry_raw(const Toc *t, uint64_t i, TocEntry *e) {
        const uint8_t *p = entry_at(t, i);
        uint32_t name_off = toc_get32(p + TOC_E_NAME_OFF), target_off = toc_get32(p + TOC_E_TARGET_OFF);

        *e = (TocEntry) {
                .ino = i,
                .parent = toc_get64(p + TOC_E_PARENT),
                .name_len = toc_get32(p + TOC_E_NAME_LEN),
                .type = p[TOC_E_TYPE],
                .flags = p[TOC_E_FLAGS],
                .mode = toc_get32(p + TOC_E_MODE),
                .uid = toc_get32(p + TOC_E_UID),
                .gid = toc_get32(p + TOC_E_GID),
                .nlink = toc_get32(p + TOC_E_NLINK),
                .mtime_nsec = toc_get32(p + TOC_E_MTIME_NSEC),
                .size = toc_get64(p + TOC_E_SIZE),
                .mtime_sec = (int64_t) toc_get64(p + TOC_E_MTIME_SEC),
                .rdev_major = toc_get32(p + TOC_E_RDEV_MAJOR),
                .rdev_minor = toc_get32(p + TOC_E_RDEV_MINOR),
                .first_child = toc_get64(p + TOC_E_FIRST_CHILD),
                .n_children = toc_get32(p + TOC_E_N_CHILDREN),
                .n_chunks = toc_get32(p + TOC_E_N_CHUNKS),
                .link = toc_get64(p + TOC_E_LINK),
                .target_len = toc_get32(p + TOC_E_TARGET_LEN),
                .content_off = toc_get64(p + TOC_E_CONTENT_OFF),
                .xattrs_off = toc_get64(p + TOC_E_XATTRS_OFF),
                .n_xattrs = toc_get32(p + TOC_E_N_XATTRS),
        };
        if (in_range(name_off, e->name_len, t->strings_size))
                e->name = (const char *) t->strings + name_off;
        if (in_range(target_off, e->target_len, t->strings_size))
                e->target = (const char *) t->strings + target_off;
        if (e->type == TOC_TYPE_REGULAR && in_range(e->content_off, DIGEST_SIZE, t->extra_size))
                e->digest = t->extra + e->content_off;
}

/*
 * A record for the accessors: the index within the table, and every pointer the caller will follow
 * inside its section. -EBADMSG for a record that is not (the ToC was validated at open, so only a
 * reader bug or memory that changed gets there, and neither may become an out-of-bounds read).
 */
static int read_entry(const Toc *t, uint64_t i, TocEntry *e) {
        if (i >= t->n_entries)
                return -ENOENT;
        read_entry_raw(t, i, e);
        if ((!e->name && i != 0) || (!e->target && e->target_len != 0) ||
            (e->type == TOC_TYPE_REGULAR &&
             (!e->digest || !in_range(e->content_off, (uint64_t) DIGEST_SIZE * (1 + (uint64_t) e->n_chunks),
                                      t->extra_size))) ||
            (e->n_xattrs > 0 && !in_range(e->xattrs_off, (uint64_t) e->n_xattrs * TOC_XATTR_SIZE, t->extra_size)) ||
            (e->type == TOC_TYPE_DIRECTORY && e->n_children > 0 &&
             (e->first_child <= i || e->first_child > t->n_entries || e->n_children > t->n_entries - e->first_child)) ||
            (i > 0 && e->parent >= i) || e->link >= t->n_entries)
                return -EBADMSG;
        if (i == 0)
                e->name = "";
        return 0;
}

static int compare_names(const char *a, size_t la, const char *b, size_t lb) {
        int c = memcmp(a, b, MIN(la, lb));

        return c != 0 ? c : (la < lb ? -1 : la > lb);
}

static bool bytes_clean(const char *s, size_t n, bool allow_slash) {
        for (size_t i = 0; i < n; i++)
                if (s[i] == 0 || (!allow_slash && s[i] == '/'))
                        return false;
        return true;
}

/* Everything a later call relies on, checked once. */
static int validate(Toc *t) {
        const uint8_t *h = t->data;
        uint64_t entries_off, strings_off, extra_off, file_size;
        uint32_t header_size;

        if (t->size < TOC_HEADER_SIZE_V1 || memcmp(h + TOC_OFF_MAGIC, TOC_MAGIC, 8) != 0)
                return -EBADMSG;
        if (toc_get16(h + TOC_OFF_MAJOR) != TOC_VERSION_MAJOR)
                return -EPROTONOSUPPORT;
        /* The flags an entry may have are those of its minor version (1.0: opaque only). */
        t->known_flags = toc_get16(h + TOC_OFF_MINOR) >= 1 ? TOC_FLAG_OPAQUE | TOC_FLAG_IMPLIED : TOC_FLAG_OPAQUE;

        {
                Digest sum;

                if (digest_buffer(h + TOC_CHECKSUMMED_FROM, t->size - TOC_CHECKSUMMED_FROM, &sum) < 0)
                        return -EIO;
                if (memcmp(sum.bytes, h + TOC_OFF_CHECKSUM, DIGEST_SIZE) != 0)
                        return -EBADMSG;
        }

        header_size = toc_get32(h + TOC_OFF_HEADER_SIZE);
        file_size = toc_get64(h + TOC_OFF_FILE_SIZE);
        t->chunk_size = toc_get32(h + TOC_OFF_CHUNK_SIZE);
        t->n_entries = toc_get64(h + TOC_OFF_N_ENTRIES);
        entries_off = toc_get64(h + TOC_OFF_ENTRIES);
        t->entry_size = toc_get32(h + TOC_OFF_ENTRY_SIZE);
        strings_off = toc_get64(h + TOC_OFF_STRINGS);
        t->strings_size = toc_get64(h + TOC_OFF_STRINGS_SIZE);
        extra_off = toc_get64(h + TOC_OFF_EXTRA);
        t->extra_size = toc_get64(h + TOC_OFF_EXTRA_SIZE);

        if (file_size != t->size || header_size < TOC_HEADER_SIZE_V1 || header_size > t->size ||
            t->chunk_size < TOC_CHUNK_SIZE_MIN || t->entry_size < TOC_ENTRY_SIZE_V1 || t->n_entries == 0 ||
            entries_off < header_size || t->n_entries > (t->size - MIN(entries_off, t->size)) / t->entry_size ||
            !in_range(strings_off, t->strings_size, t->size) || !in_range(extra_off, t->extra_size, t->size) ||
            t->strings_size > UINT32_MAX)
                return -EBADMSG;
        t->entries = h + entries_off;
        t->strings = h + strings_off;
        t->extra = h + extra_off;

        for (uint64_t i = 0; i < t->n_entries; i++) {
                TocEntry e, p;

                read_entry_raw(t, i, &e);
                if (!e.name || !e.target)
                        return -EBADMSG;
                if (e.type < TOC_TYPE_REGULAR || e.type >= _TOC_TYPE_MAX || (e.flags & ~t->known_flags) ||
                    ((e.flags & TOC_FLAG_IMPLIED) && e.type != TOC_TYPE_DIRECTORY) ||
                    e.mode > 07777 || e.parent >= t->n_entries || e.link >= t->n_entries)
                        return -EBADMSG;

                if (i == 0) {
                        if (e.type != TOC_TYPE_DIRECTORY || e.parent != 0 || e.name_len != 0)
                                return -EBADMSG;
                } else {
                        if (e.name_len == 0 || e.name_len > TOC_NAME_MAX || !bytes_clean(e.name, e.name_len, false) ||
                            (e.name_len == 1 && e.name[0] == '.') ||
                            (e.name_len == 2 && e.name[0] == '.' && e.name[1] == '.'))
                                return -EBADMSG;
                        /* The entry must be one of its parent's children: with children always
                         * after their parent, that also rules out cycles. */
                        read_entry_raw(t, e.parent, &p);
                        if (p.type != TOC_TYPE_DIRECTORY || e.parent >= i || i < p.first_child ||
                            i - p.first_child >= p.n_children)
                                return -EBADMSG;
                }

                if (e.type == TOC_TYPE_DIRECTORY) {
                        if (e.n_children > 0 && (e.first_child <= i || e.first_child > t->n_entries ||
                                                 e.n_children > t->n_entries - e.first_child))
                                return -EBADMSG;
                        for (uint32_t k = 0; k < e.n_children; k++) {
                                TocEntry a, b;

                                read_entry_raw(t, e.first_child + k, &b);
                                if (b.parent != i || !b.name)
                                        return -EBADMSG;
                                if (k == 0)
                                        continue;
                                read_entry_raw(t, e.first_child + k - 1, &a);
                                if (!a.name || compare_names(a.name, a.name_len, b.name, b.name_len) >= 0)
                                        return -EBADMSG;
                        }
                        if (e.link != i)
                                return -EBADMSG;
                } else if (e.n_children != 0 || e.flags != 0)
                        return -EBADMSG;

                if (e.type == TOC_TYPE_SYMLINK) {
                        if (e.target_len == 0 || e.target_len > TOC_TARGET_MAX ||
                            !bytes_clean(e.target, e.target_len, true))
                                return -EBADMSG;
                } else if (e.target_len != 0)
                        return -EBADMSG;

                if (e.type == TOC_TYPE_REGULAR) {
                        uint64_t want = e.size > t->chunk_size ? (e.size - 1) / t->chunk_size + 1 : 0;

                        if (e.n_chunks != want || !in_range(e.content_off, (uint64_t) DIGEST_SIZE * (1 + e.n_chunks),
                                                            t->extra_size))
                                return -EBADMSG;
                } else if (e.n_chunks != 0 || e.size != 0)
                        return -EBADMSG;

                if (e.n_xattrs > 0) {
                        if (!in_range(e.xattrs_off, (uint64_t) e.n_xattrs * TOC_XATTR_SIZE, t->extra_size))
                                return -EBADMSG;
                        for (uint32_t k = 0; k < e.n_xattrs; k++) {
                                const uint8_t *x = t->extra + e.xattrs_off + (uint64_t) k * TOC_XATTR_SIZE;
                                uint32_t name_off = toc_get32(x + TOC_X_NAME_OFF), name_len = toc_get32(x + TOC_X_NAME_LEN);

                                if (name_len == 0 || name_len > TOC_NAME_MAX ||
                                    !in_range(name_off, name_len, t->strings_size) ||
                                    !bytes_clean((const char *) t->strings + name_off, name_len, true) ||
                                    !in_range(toc_get64(x + TOC_X_VALUE_OFF), toc_get32(x + TOC_X_VALUE_LEN),
                                              t->extra_size))
                                        return -EBADMSG;
                        }
                }

                if (e.type == TOC_TYPE_WHITEOUT && e.mode != 0)
                        return -EBADMSG;
                /* Fields that mean nothing for this entry are zero: one spelling per ToC. */
                if ((e.type != TOC_TYPE_REGULAR && e.content_off != 0) || (e.n_xattrs == 0 && e.xattrs_off != 0) ||
                    toc_get16(entry_at(t, i) + TOC_E_RESERVED) != 0 || toc_get32(entry_at(t, i) + TOC_E_RESERVED2) != 0 ||
                    (e.type != TOC_TYPE_CHAR && e.type != TOC_TYPE_BLOCK && (e.rdev_major | e.rdev_minor) != 0) ||
                    (e.type != TOC_TYPE_DIRECTORY && e.first_child != 0))
                        return -EBADMSG;
                if (e.link != i) {
                        /* A second name: the first name owns the inode and has the same type. */
                        TocEntry o;

                        read_entry_raw(t, e.link, &o);
                        if (o.link != e.link || o.type != e.type || e.type == TOC_TYPE_WHITEOUT)
                                return -EBADMSG;
                }
        }
        return 0;
}

int toc_open_buffer(const void *data, size_t size, Toc **ret) {
        Toc *t;
        int r;

        t = new0(Toc, 1);
        if (!t)
                return -ENOMEM;
        t->data = data;
        t->size = size;
        r = validate(t);
        if (r < 0) {
                free(t);
                return r;
        }
        *ret = t;
        return 0;
}

int toc_open_owned(void *data, size_t size, Toc **ret) {
        Toc *t;
        int r;

        r = toc_open_buffer(data, size, &t);
        if (r < 0)
                return r;
        t->owned = true;
        *ret = t;
        return 0;
}

int toc_open_fd(int fd, Toc **ret) {
        _cleanup_free_ char *data = NULL;
        struct stat st;
        size_t size;
        Toc *t;
        int r;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADMSG;
        r = read_full_fd(fd, TOC_SIZE_MAX, &data, &size);
        if (r == -E2BIG)
                return -EBADMSG;
        if (r < 0)
                return r;
        r = toc_open_owned(data, size, &t);
        if (r < 0)
                return r;
        TAKE_PTR(data);
        *ret = t;
        return 0;
}

Toc *toc_free(Toc *t) {
        if (!t)
                return NULL;
        if (t->owned)
                free((void *) t->data);
        return mfree(t);
}

const void *toc_data(const Toc *t, size_t *ret_size) {
        *ret_size = t->size;
        return t->data;
}

uint64_t toc_n_entries(const Toc *t) {
        return t->n_entries;
}

uint32_t toc_chunk_size(const Toc *t) {
        return t->chunk_size;
}

int toc_get(const Toc *t, uint64_t ino, TocEntry *ret) {
        return read_entry(t, ino, ret);
}

int toc_child(const Toc *t, const TocEntry *dir, uint32_t i, TocEntry *ret) {
        TocEntry c;
        int r;

        if (dir->type != TOC_TYPE_DIRECTORY)
                return -ENOTDIR;
        if (i >= dir->n_children)
                return -ENOENT;
        /* dir may come from the caller: its child range is checked here again. */
        if (dir->first_child > t->n_entries || i >= t->n_entries - dir->first_child)
                return -EBADMSG;
        r = read_entry(t, dir->first_child + i, &c);
        if (r < 0)
                return r == -ENOENT ? -EBADMSG : r;
        if (c.parent != dir->ino)
                return -EBADMSG;
        *ret = c;
        return 0;
}

int toc_lookup(const Toc *t, uint64_t dir, const char *name, size_t name_len, uint64_t *ret) {
        TocEntry d;
        uint32_t lo = 0, hi;
        int r;

        r = read_entry(t, dir, &d);
        if (r < 0)
                return r;
        if (d.type != TOC_TYPE_DIRECTORY)
                return -ENOTDIR;
        hi = d.n_children;
        while (lo < hi) {
                uint32_t mid = lo + (hi - lo) / 2;
                TocEntry c;
                int k;

                r = toc_child(t, &d, mid, &c);
                if (r < 0)
                        return r;
                k = compare_names(c.name, c.name_len, name, name_len);
                if (k == 0) {
                        *ret = c.ino;
                        return 0;
                }
                if (k < 0)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -ENOENT;
}

int toc_resolve(const Toc *t, const char *path, uint64_t *ret) {
        uint64_t cur = 0;
        int r;

        for (const char *p = path; *p;) {
                size_t len = strcspn(p, "/");

                if (len == 0)
                        return -EINVAL;
                r = toc_lookup(t, cur, p, len, &cur);
                if (r < 0)
                        return r;
                p += len;
                if (*p == '/')
                        p++;
        }
        *ret = cur;
        return 0;
}

int toc_xattr(const Toc *t, const TocEntry *e, uint32_t i, TocXattrView *ret) {
        uint64_t at = e->xattrs_off + (uint64_t) i * TOC_XATTR_SIZE, value_off;
        uint32_t name_off, name_len, value_len;
        const uint8_t *x;

        if (i >= e->n_xattrs)
                return -ENOENT;
        if (e->xattrs_off > t->extra_size || !in_range(at, TOC_XATTR_SIZE, t->extra_size))
                return -EBADMSG;
        x = t->extra + at;
        name_off = toc_get32(x + TOC_X_NAME_OFF);
        name_len = toc_get32(x + TOC_X_NAME_LEN);
        value_off = toc_get64(x + TOC_X_VALUE_OFF);
        value_len = toc_get32(x + TOC_X_VALUE_LEN);
        if (name_len == 0 || !in_range(name_off, name_len, t->strings_size) ||
            !in_range(value_off, value_len, t->extra_size))
                return -EBADMSG;
        *ret = (TocXattrView) {
                .name = (const char *) t->strings + name_off,
                .name_len = name_len,
                .value = t->extra + value_off,
                .size = value_len,
        };
        return 0;
}

int toc_chunk(const Toc *t, const TocEntry *e, uint32_t i, Digest *ret) {
        uint64_t at;

        if (e->type != TOC_TYPE_REGULAR || i >= e->n_chunks)
                return -ENOENT;
        at = e->content_off + (uint64_t) DIGEST_SIZE * (1 + (uint64_t) i);
        if (e->content_off > t->extra_size || !in_range(at, DIGEST_SIZE, t->extra_size))
                return -EBADMSG;
        memcpy(ret->bytes, t->extra + at, DIGEST_SIZE);
        return 0;
}

int toc_path(const Toc *t, uint64_t ino, char *buf, size_t size) {
        size_t pos = size;
        TocEntry e;
        int r;

        if (ino >= t->n_entries || size == 0)
                return -EINVAL;
        buf[--pos] = 0;
        /* Parents have smaller numbers (read_entry() checks it each step): this ends. */
        while (ino != 0) {
                r = read_entry(t, ino, &e);
                if (r < 0)
                        return r;
                if (e.name_len + (pos < size - 1) > pos)
                        return -ENAMETOOLONG;
                if (pos < size - 1)
                        buf[--pos] = '/';
                pos -= e.name_len;
                memcpy(buf + pos, e.name, e.name_len);
                ino = e.parent;
        }
        memmove(buf, buf + pos, size - pos);
        return 0;
}

int toc_stats(const Toc *t, uint64_t *ret_entries, uint64_t *ret_unpacked_bytes) {
        uint64_t bytes = 0;
        int r;

        for (uint64_t i = 0; i < t->n_entries; i++) {
                TocEntry e;

                r = read_entry(t, i, &e);
                if (r < 0)
                        return r;
                /* Hard links once: the name that owns the inode counts. */
                if (e.type == TOC_TYPE_REGULAR && e.link == i)
                        bytes += e.size;
        }
        *ret_entries = t->n_entries;
        *ret_unpacked_bytes = bytes;
        return 0;
}

int toc_for_each_content(const Toc *t, int (*f)(const Digest *d, void *userdata), void *userdata) {
        int r;

        for (uint64_t i = 0; i < t->n_entries; i++) {
                TocEntry e;
                Digest d;

                r = read_entry(t, i, &e);
                if (r < 0)
                        return r;
                if (e.type != TOC_TYPE_REGULAR || e.link != i)
                        continue;
                memcpy(d.bytes, e.digest, DIGEST_SIZE);
                r = f(&d, userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Dump */

const char *toc_type_to_string(TocType t) {
        switch (t) {
        case TOC_TYPE_REGULAR:
                return "regular";
        case TOC_TYPE_DIRECTORY:
                return "directory";
        case TOC_TYPE_SYMLINK:
                return "symlink";
        case TOC_TYPE_CHAR:
                return "char";
        case TOC_TYPE_BLOCK:
                return "block";
        case TOC_TYPE_FIFO:
                return "fifo";
        case TOC_TYPE_SOCKET:
                return "socket";
        case TOC_TYPE_WHITEOUT:
                return "whiteout";
        case TOC_TYPE_HARDLINK:
                return "hardlink";
        default:
                return NULL;
        }
}


static void mode_string(const TocEntry *e, char buf[static 11]) {
        static const char types[] = "?-dlcbpsw"; /* by TocType */
        uint32_t m = e->mode;

        buf[0] = types[e->type < sizeof(types) - 1 ? e->type : 0];
        buf[1] = m & 0400 ? 'r' : '-';
        buf[2] = m & 0200 ? 'w' : '-';
        buf[3] = m & 04000 ? (m & 0100 ? 's' : 'S') : (m & 0100 ? 'x' : '-');
        buf[4] = m & 040 ? 'r' : '-';
        buf[5] = m & 020 ? 'w' : '-';
        buf[6] = m & 02000 ? (m & 010 ? 's' : 'S') : (m & 010 ? 'x' : '-');
        buf[7] = m & 04 ? 'r' : '-';
        buf[8] = m & 02 ? 'w' : '-';
        buf[9] = m & 01000 ? (m & 01 ? 't' : 'T') : (m & 01 ? 'x' : '-');
        buf[10] = 0;
}

static char *hex(const uint8_t *p, size_t n) {
        static const char digits[] = "0123456789abcdef";
        char *s = malloc(2 * n + 1);

        if (!s)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                s[2 * i] = digits[p[i] >> 4];
                s[2 * i + 1] = digits[p[i] & 15];
        }
        s[2 * n] = 0;
        return s;
}

static int dump_json(const Toc *t, FILE *f) {
        _cleanup_json_ json_object *root = json_object_new_object();
        json_object *entries = json_object_new_array();
        char path[TOC_PATH_MAX + 1];

        if (!root || !entries || json_object_object_add(root, "entries", entries) < 0) {
                json_object_put(entries);
                return -ENOMEM;
        }
        json_object_object_add(root, "version", json_object_new_int(TOC_VERSION_MAJOR));
        json_object_object_add(root, "chunk_size", json_object_new_int64(t->chunk_size));

        for (uint64_t i = 0; i < t->n_entries; i++) {
                json_object *o = json_object_new_object(), *x;
                TocEntry e;
                int r;

                if (!o || json_object_array_add(entries, o) < 0) {
                        json_object_put(o);
                        return -ENOMEM;
                }
                r = read_entry(t, i, &e);
                if (r >= 0)
                        r = toc_path(t, i, path, sizeof(path));
                if (r < 0)
                        return r;
                json_object_object_add(o, "inode", json_object_new_int64((int64_t) i));
                json_object_object_add(o, "path", json_object_new_string(path));
                json_object_object_add(o, "type", json_object_new_string(toc_type_to_string(e.type)));
                json_object_object_add(o, "mode", json_object_new_int64(e.mode));
                json_object_object_add(o, "uid", json_object_new_int64(e.uid));
                json_object_object_add(o, "gid", json_object_new_int64(e.gid));
                json_object_object_add(o, "nlink", json_object_new_int64(e.nlink));
                json_object_object_add(o, "size", json_object_new_int64((int64_t) e.size));
                json_object_object_add(o, "mtime_sec", json_object_new_int64(e.mtime_sec));
                json_object_object_add(o, "mtime_nsec", json_object_new_int64(e.mtime_nsec));
                if (e.link != i)
                        json_object_object_add(o, "link_inode", json_object_new_int64((int64_t) e.link));
                if (e.flags & TOC_FLAG_OPAQUE)
                        json_object_object_add(o, "opaque", json_object_new_boolean(true));
                if (e.flags & TOC_FLAG_IMPLIED)
                        json_object_object_add(o, "implied", json_object_new_boolean(true));
                if (e.type == TOC_TYPE_SYMLINK)
                        json_object_object_add(o, "target", json_object_new_string_len(e.target, (int) e.target_len));
                if (e.type == TOC_TYPE_CHAR || e.type == TOC_TYPE_BLOCK) {
                        json_object_object_add(o, "rdev_major", json_object_new_int64(e.rdev_major));
                        json_object_object_add(o, "rdev_minor", json_object_new_int64(e.rdev_minor));
                }
                if (e.type == TOC_TYPE_REGULAR) {
                        _cleanup_free_ char *d = hex(e.digest, DIGEST_SIZE);
                        _cleanup_free_ char *s = d ? strjoin("sha256:", d) : NULL;

                        if (!s)
                                return -ENOMEM;
                        json_object_object_add(o, "digest", json_object_new_string(s));
                        if (e.n_chunks > 0) {
                                json_object *c = json_object_new_array();

                                json_object_object_add(o, "chunks", c);
                                for (uint32_t k = 0; k < e.n_chunks; k++) {
                                        _cleanup_free_ char *ch = hex(e.digest + DIGEST_SIZE * (1 + k), DIGEST_SIZE);

                                        if (!ch)
                                                return -ENOMEM;
                                        json_object_array_add(c, json_object_new_string(ch));
                                }
                        }
                }
                x = json_object_new_object();
                json_object_object_add(o, "xattrs", x);
                for (uint32_t k = 0; k < e.n_xattrs; k++) {
                        _cleanup_free_ char *name = NULL, *value = NULL;
                        TocXattrView v;

                        r = toc_xattr(t, &e, k, &v);
                        if (r < 0)
                                return r;
                        name = memdup_suffix0(v.name, v.name_len);
                        value = hex(v.value, v.size);
                        if (!name || !value)
                                return -ENOMEM;
                        json_object_object_add(x, name, json_object_new_string(value));
                }
        }
        fprintf(f, "%s\n", json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED));
        return 0;
}

int toc_dump(const Toc *t, FILE *f, bool json) {
        char path[TOC_PATH_MAX + 1], mode[11];

        if (json)
                return dump_json(t, f);

        for (uint64_t i = 0; i < t->n_entries; i++) {
                TocEntry e;
                int r;

                r = read_entry(t, i, &e);
                if (r >= 0)
                        r = toc_path(t, i, path, sizeof(path));
                if (r < 0)
                        return r;
                mode_string(&e, mode);
                fprintf(f, "%6" PRIu64 " %s %3" PRIu32 " %5" PRIu32 " %5" PRIu32 " ", i, mode, e.nlink, e.uid, e.gid);
                if (e.type == TOC_TYPE_CHAR || e.type == TOC_TYPE_BLOCK)
                        fprintf(f, "%4" PRIu32 ",%4" PRIu32, e.rdev_major, e.rdev_minor);
                else
                        fprintf(f, "%9" PRIu64, e.size);
                fprintf(f, " %" PRIi64 ".%09" PRIu32 " /%s", e.mtime_sec, e.mtime_nsec, path);
                if (e.type == TOC_TYPE_SYMLINK)
                        fprintf(f, " -> %.*s", (int) e.target_len, e.target);
                if (e.link != i)
                        fprintf(f, " => #%" PRIu64, e.link);
                if (e.type == TOC_TYPE_WHITEOUT)
                        fputs(" (whiteout)", f);
                if (e.flags & TOC_FLAG_OPAQUE)
                        fputs(" (opaque)", f);
                if (e.flags & TOC_FLAG_IMPLIED)
                        fputs(" (implied)", f);
                if (e.type == TOC_TYPE_REGULAR && e.link == i) {
                        _cleanup_free_ char *d = hex(e.digest, DIGEST_SIZE);

                        fprintf(f, " sha256:%s", strna(d));
                        if (e.n_chunks > 0)
                                fprintf(f, " (%" PRIu32 " chunks)", e.n_chunks);
                }
                for (uint32_t k = 0; k < e.n_xattrs; k++) {
                        TocXattrView v;

                        r = toc_xattr(t, &e, k, &v);
                        if (r < 0)
                                return r;
                        fprintf(f, " %.*s=%zuB", (int) v.name_len, v.name, v.size);
                }
                fputc('\n', f);
        }
        return 0;
}
