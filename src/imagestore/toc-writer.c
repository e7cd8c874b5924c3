/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc-util.h"
#include "string-util.h"
#include "toc-format.h"
#include "toc.h"

/* Hard link chains longer than this are a loop or an attack. */
#define HARDLINK_DEPTH_MAX 64
#define XATTRS_MAX 1024U

typedef struct Node {
        char *name;
        struct Node *parent;
        struct Node *hash_next;
        TocType type;
        uint32_t flags, mode, uid, gid, rdev_major, rdev_minor, mtime_nsec;
        uint64_t size;
        int64_t mtime_sec;
        char *target; /* symlink target, or a hard link's path */
        char **xattr_names;
        uint8_t **xattr_values;
        size_t *xattr_sizes;
        size_t n_xattrs;
        TocContent content;

        struct Node **children;
        size_t n_children, allocated;

        /* At finish. */
        struct Node *link; /* the primary of a hard link; itself otherwise */
        uint32_t link_count;
        uint64_t ino;
        uint64_t content_off, xattrs_off;
} Node;

struct TocWriter {
        uint32_t chunk_size;
        Node *root;
        Node **buckets;
        size_t n_buckets, n_nodes;
};

static void node_clear_payload(Node *n) {
        n->target = mfree(n->target);
        for (size_t i = 0; i < n->n_xattrs; i++) {
                free(n->xattr_names[i]);
                free(n->xattr_values[i]);
        }
        n->xattr_names = mfree(n->xattr_names);
        n->xattr_values = mfree(n->xattr_values);
        n->xattr_sizes = mfree(n->xattr_sizes);
        n->n_xattrs = 0;
        n->content.chunks = mfree(n->content.chunks);
        n->content.n_chunks = 0;
}

static size_t hash_key(const Node *parent, const char *name) {
        /* FNV-1a over the parent's address and the name. */
        uint64_t h = 1469598103934665603ULL;
        uintptr_t p = (uintptr_t) parent;

        for (size_t i = 0; i < sizeof(p); i++) {
                h ^= (p >> (8 * i)) & 0xff;
                h *= 1099511628211ULL;
        }
        for (const char *c = name; *c; c++) {
                h ^= (uint8_t) *c;
                h *= 1099511628211ULL;
        }
        return (size_t) h;
}

static Node *hash_find(TocWriter *w, const Node *parent, const char *name) {
        for (Node *n = w->buckets[hash_key(parent, name) % w->n_buckets]; n; n = n->hash_next)
                if (n->parent == parent && streq(n->name, name))
                        return n;
        return NULL;
}

static int hash_grow(TocWriter *w) {
        size_t n = w->n_buckets * 2;
        Node **b = new0(Node *, n);

        if (!b)
                return -ENOMEM;
        for (size_t i = 0; i < w->n_buckets; i++)
                for (Node *x = w->buckets[i], *next; x; x = next) {
                        size_t k = hash_key(x->parent, x->name) % n;

                        next = x->hash_next;
                        x->hash_next = b[k];
                        b[k] = x;
                }
        free(w->buckets);
        w->buckets = b;
        w->n_buckets = n;
        return 0;
}

static void hash_remove(TocWriter *w, Node *n) {
        for (Node **p = &w->buckets[hash_key(n->parent, n->name) % w->n_buckets]; *p; p = &(*p)->hash_next)
                if (*p == n) {
                        *p = n->hash_next;
                        return;
                }
}

static void node_free_tree(Node *n) {
        for (size_t i = 0; i < n->n_children; i++)
                node_free_tree(n->children[i]);
        free(n->children);
        node_clear_payload(n);
        free(n->name);
        free(n);
}

static void unhash_tree(TocWriter *w, Node *n) {
        for (size_t i = 0; i < n->n_children; i++)
                unhash_tree(w, n->children[i]);
        hash_remove(w, n);
        w->n_nodes--;
}

/* Removes n and everything below it from the writer. */
static void node_remove(TocWriter *w, Node *n) {
        Node *p = n->parent;

        unhash_tree(w, n);
        for (size_t i = 0; i < p->n_children; i++)
                if (p->children[i] == n) {
                        memmove(p->children + i, p->children + i + 1, (p->n_children - i - 1) * sizeof(Node *));
                        p->n_children--;
                        break;
                }
        node_free_tree(n);
}

static Node *node_new(TocWriter *w, Node *parent, const char *name) {
        Node *n = new0(Node, 1);

        if (!n)
                return NULL;
        n->name = strdup(name);
        if (!n->name) {
                free(n);
                return NULL;
        }
        n->parent = parent;
        n->type = TOC_TYPE_DIRECTORY;
        n->mode = 0755;
        return n;
}

/* Links a new node into its parent and the table. */
static int node_attach(TocWriter *w, Node *n) {
        Node *p = n->parent;
        size_t k;

        if (p->n_children == p->allocated) {
                size_t a = p->allocated * 2 + 4;
                Node **c = reallocarray(p->children, a, sizeof(Node *));

                if (!c)
                        return -ENOMEM;
                p->children = c;
                p->allocated = a;
        }
        if (w->n_nodes >= w->n_buckets && hash_grow(w) < 0)
                return -ENOMEM;
        p->children[p->n_children++] = n;
        k = hash_key(p, n->name) % w->n_buckets;
        n->hash_next = w->buckets[k];
        w->buckets[k] = n;
        w->n_nodes++;
        return 0;
}

int toc_writer_new(uint32_t chunk_size, TocWriter **ret) {
        TocWriter *w;

        if (chunk_size < TOC_CHUNK_SIZE_MIN)
                return -EINVAL;
        w = new0(TocWriter, 1);
        if (!w)
                return -ENOMEM;
        w->chunk_size = chunk_size;
        w->n_buckets = 1024;
        w->buckets = new0(Node *, w->n_buckets);
        w->root = w->buckets ? node_new(w, NULL, "") : NULL;
        if (!w->root) {
                free(w->buckets);
                free(w);
                return -ENOMEM;
        }
        /* Until the layer has a "./" entry. */
        w->root->flags |= TOC_FLAG_IMPLIED;
        *ret = w;
        return 0;
}

TocWriter *toc_writer_free(TocWriter *w) {
        if (!w)
                return NULL;
        node_free_tree(w->root);
        free(w->buckets);
        return mfree(w);
}

static bool name_ok(const char *name) {
        size_t n = strlen(name);

        return n > 0 && n <= TOC_NAME_MAX && !streq(name, ".") && !streq(name, "..") && !strchr(name, '/') &&
                !startswith(name, ".wh.");
}

/* The directory at path ("" is the root), made with its parents when missing. */
static int walk(TocWriter *w, const char *path, Node **ret) {
        Node *d = w->root;
        const char *p = path;
        int r;

        if (strlen(path) > TOC_PATH_MAX)
                return -EINVAL;
        while (*p) {
                char name[TOC_NAME_MAX + 1];
                size_t len = strcspn(p, "/");
                Node *c;

                if (len == 0 || len > TOC_NAME_MAX)
                        return -EINVAL;
                memcpy(name, p, len);
                name[len] = 0;
                if (!name_ok(name))
                        return -EINVAL;
                c = hash_find(w, d, name);
                if (!c) {
                        /* Implied by a deeper name: a plain directory until the layer says more. */
                        c = node_new(w, d, name);
                        if (!c)
                                return -ENOMEM;
                        c->flags |= TOC_FLAG_IMPLIED;
                        r = node_attach(w, c);
                        if (r < 0) {
                                node_free_tree(c);
                                return r;
                        }
                } else if (c->type != TOC_TYPE_DIRECTORY)
                        return -ENOTDIR;
                d = c;
                p += len;
                if (*p == '/') {
                        p++;
                        if (!*p)
                                return -EINVAL;
                }
        }
        *ret = d;
        return 0;
}

static int set_payload(TocWriter *w, Node *n, const TocEntrySpec *s) {
        n->type = s->type;
        n->mode = s->mode & 07777;
        n->uid = s->uid;
        n->gid = s->gid;
        n->size = s->type == TOC_TYPE_REGULAR ? s->size : 0;
        n->mtime_sec = s->mtime_sec;
        n->mtime_nsec = s->mtime_nsec;
        n->rdev_major = s->type == TOC_TYPE_CHAR || s->type == TOC_TYPE_BLOCK ? s->rdev_major : 0;
        n->rdev_minor = s->type == TOC_TYPE_CHAR || s->type == TOC_TYPE_BLOCK ? s->rdev_minor : 0;
        if (s->type == TOC_TYPE_SYMLINK || s->type == TOC_TYPE_HARDLINK) {
                n->target = strdup(s->link_target);
                if (!n->target)
                        return -ENOMEM;
        }
        if (s->type == TOC_TYPE_REGULAR) {
                n->content.digest = s->content.digest;
                if (s->content.n_chunks > 0) {
                        n->content.chunks = memdup(s->content.chunks, s->content.n_chunks * sizeof(Digest));
                        if (!n->content.chunks)
                                return -ENOMEM;
                        n->content.n_chunks = s->content.n_chunks;
                }
        }
        if (s->n_xattrs > 0 && s->type != TOC_TYPE_HARDLINK && s->type != TOC_TYPE_WHITEOUT) {
                n->xattr_names = new0(char *, s->n_xattrs);
                n->xattr_values = new0(uint8_t *, s->n_xattrs);
                n->xattr_sizes = new0(size_t, s->n_xattrs);
                if (!n->xattr_names || !n->xattr_values || !n->xattr_sizes)
                        return -ENOMEM;
                for (size_t i = 0; i < s->n_xattrs; i++) {
                        n->xattr_names[i] = strdup(s->xattrs[i].name);
                        n->xattr_values[i] = memdup(s->xattrs[i].value, s->xattrs[i].size);
                        n->n_xattrs++;
                        if (!n->xattr_names[i] || !n->xattr_values[i])
                                return -ENOMEM;
                        n->xattr_sizes[i] = s->xattrs[i].size;
                }
        }
        return 0;
}

static int check_spec(const TocWriter *w, const TocEntrySpec *s) {
        uint64_t chunks;

        switch (s->type) {
        case TOC_TYPE_REGULAR:
                chunks = s->size > w->chunk_size ? (s->size + w->chunk_size - 1) / w->chunk_size : 0;
                if (s->content.n_chunks != chunks || (chunks > 0 && !s->content.chunks))
                        return -EINVAL;
                break;
        case TOC_TYPE_SYMLINK:
        case TOC_TYPE_HARDLINK:
                if (isempty(s->link_target) || strlen(s->link_target) > TOC_TARGET_MAX)
                        return -EINVAL;
                break;
        case TOC_TYPE_DIRECTORY:
        case TOC_TYPE_CHAR:
        case TOC_TYPE_BLOCK:
        case TOC_TYPE_FIFO:
        case TOC_TYPE_SOCKET:
        case TOC_TYPE_WHITEOUT:
                break;
        default:
                return -EINVAL;
        }
        if (s->n_xattrs > XATTRS_MAX)
                return -EINVAL;
        for (size_t i = 0; i < s->n_xattrs; i++) {
                size_t n = s->xattrs[i].name ? strlen(s->xattrs[i].name) : 0;

                if (n == 0 || n > TOC_NAME_MAX || s->xattrs[i].size > UINT32_MAX ||
                    (s->xattrs[i].size > 0 && !s->xattrs[i].value))
                        return -EINVAL;
        }
        return 0;
}

int toc_writer_add(TocWriter *w, const TocEntrySpec *s) {
        Node *parent, *n;
        int r;

        if (!s || !s->parent || !s->name)
                return -EINVAL;
        r = check_spec(w, s);
        if (r < 0)
                return r;

        if (isempty(s->parent) && isempty(s->name)) {
                /* The layer's root directory. */
                if (s->type != TOC_TYPE_DIRECTORY)
                        return -EINVAL;
                n = w->root;
                node_clear_payload(n);
                n->flags &= ~TOC_FLAG_IMPLIED;
                return set_payload(w, n, s);
        }
        if (!name_ok(s->name) || strlen(s->parent) + 1 + strlen(s->name) > TOC_PATH_MAX)
                return -EINVAL;
        r = walk(w, s->parent, &parent);
        if (r < 0)
                return r;

        n = hash_find(w, parent, s->name);
        if (n && n->type == TOC_TYPE_DIRECTORY && s->type == TOC_TYPE_DIRECTORY) {
                /* A directory again (or at last, after being implied): new attributes, same children,
                 * opaque stays. */
                node_clear_payload(n);
                n->flags &= ~TOC_FLAG_IMPLIED;
                return set_payload(w, n, s);
        }
        if (n)
                node_remove(w, n);

        n = node_new(w, parent, s->name);
        if (!n)
                return -ENOMEM;
        r = set_payload(w, n, s);
        if (r >= 0)
                r = node_attach(w, n);
        if (r < 0) {
                node_free_tree(n);
                return r;
        }
        return 0;
}

int toc_writer_set_opaque(TocWriter *w, const char *path) {
        Node *d;
        int r;

        if (!path)
                return -EINVAL;
        r = walk(w, path, &d);
        if (r < 0)
                return r;
        d->flags |= TOC_FLAG_OPAQUE;
        return 0;
}

/* Finish */

typedef struct Buf {
        uint8_t *data;
        size_t size, allocated;
} Buf;

static int buf_reserve(Buf *b, size_t n, uint8_t **ret) {
        if (n == 0) {
                *ret = NULL;
                return 0;
        }
        if (n > SIZE_MAX - b->size)
                return -ENOMEM;
        if (b->size + n > b->allocated) {
                size_t a = MAX(b->allocated * 2, b->size + n) + 4096;
                uint8_t *d = realloc(b->data, a);

                if (!d)
                        return -ENOMEM;
                b->data = d;
                b->allocated = a;
        }
        *ret = b->data + b->size;
        memset(*ret, 0, n);
        b->size += n;
        return 0;
}

static int buf_append(Buf *b, const void *data, size_t n, uint64_t *ret_off) {
        uint8_t *p;
        int r;

        *ret_off = b->size;
        r = buf_reserve(b, n, &p);
        if (r < 0)
                return r;
        if (n > 0)
                memcpy(p, data, n);
        return 0;
}

static int compare_nodes(const void *a, const void *b) {
        return strcmp((*(Node *const *) a)->name, (*(Node *const *) b)->name);
}

/* Follows a hard link's path to the entry that owns the inode. */
static int resolve_link(TocWriter *w, Node *n, Node **ret) {
        Node *t = n;

        for (unsigned depth = 0; t->type == TOC_TYPE_HARDLINK; depth++) {
                _cleanup_free_ char *copy = NULL;
                char *slash;
                Node *dir;

                if (depth > HARDLINK_DEPTH_MAX)
                        return -ELOOP;
                copy = strdup(t->target);
                if (!copy)
                        return -ENOMEM;
                slash = strrchr(copy, '/');
                if (slash)
                        *slash = 0;
                /* Walking may not create: a missing target is an error, not a new directory. */
                dir = w->root;
                if (slash) {
                        const char *p = copy;

                        while (*p) {
                                char name[TOC_NAME_MAX + 1];
                                size_t len = strcspn(p, "/");

                                if (len == 0 || len > TOC_NAME_MAX)
                                        return -EINVAL;
                                memcpy(name, p, len);
                                name[len] = 0;
                                dir = hash_find(w, dir, name);
                                if (!dir || dir->type != TOC_TYPE_DIRECTORY)
                                        return -EINVAL;
                                p += len + (p[len] == '/');
                        }
                }
                t = hash_find(w, dir, slash ? slash + 1 : copy);
                if (!t)
                        return -EINVAL;
        }
        if (t->type == TOC_TYPE_DIRECTORY || t->type == TOC_TYPE_WHITEOUT)
                return -EINVAL;
        *ret = t;
        return 0;
}

/* Every node, breadth first: each directory's children end up consecutive. */
static int order(TocWriter *w, Node ***ret, size_t *ret_n) {
        Node **all;
        size_t n = 1;

        all = new0(Node *, w->n_nodes + 1);
        if (!all)
                return -ENOMEM;
        all[0] = w->root;
        for (size_t i = 0; i < n; i++) {
                Node *d = all[i];

                d->ino = i;
                if (d->n_children == 0)
                        continue;
                qsort(d->children, d->n_children, sizeof(Node *), compare_nodes);
                for (size_t k = 0; k < d->n_children; k++)
                        all[n++] = d->children[k];
        }
        *ret = all;
        *ret_n = n;
        return 0;
}

static int build(TocWriter *w, Buf *out, uint64_t *ret_entries) {
        _cleanup_free_ Node **all = NULL;
        Buf strings = {}, extra = {};
        uint8_t *header, *entries;
        size_t n;
        int r;

        r = order(w, &all, &n);
        if (r < 0)
                return r;

        /* Hard links: primaries and link counts. */
        for (size_t i = 0; i < n; i++) {
                all[i]->link = all[i];
                all[i]->link_count = 1;
        }
        for (size_t i = 0; i < n; i++)
                if (all[i]->type == TOC_TYPE_HARDLINK) {
                        Node *t;

                        r = resolve_link(w, all[i], &t);
                        if (r < 0)
                                goto finish;
                        all[i]->link = t;
                        t->link_count++;
                }

        /* Content and xattrs of primaries into extra; names and targets into strings. */
        for (size_t i = 0; i < n; i++) {
                Node *x = all[i];

                if (x->link != x)
                        continue;
                if (x->type == TOC_TYPE_REGULAR) {
                        r = buf_append(&extra, x->content.digest.bytes, DIGEST_SIZE, &x->content_off);
                        for (size_t k = 0; r >= 0 && k < x->content.n_chunks; k++) {
                                uint64_t ignored;

                                r = buf_append(&extra, x->content.chunks[k].bytes, DIGEST_SIZE, &ignored);
                        }
                        if (r < 0)
                                goto finish;
                }
                if (x->n_xattrs > 0) {
                        uint64_t records;
                        uint8_t *rec;

                        r = buf_reserve(&extra, x->n_xattrs * TOC_XATTR_SIZE, &rec);
                        if (r < 0)
                                goto finish;
                        records = extra.size - x->n_xattrs * TOC_XATTR_SIZE;
                        x->xattrs_off = records;
                        for (size_t k = 0; k < x->n_xattrs; k++) {
                                uint64_t name_off, value_off;

                                r = buf_append(&strings, x->xattr_names[k], strlen(x->xattr_names[k]), &name_off);
                                if (r >= 0)
                                        r = buf_append(&extra, x->xattr_values[k], x->xattr_sizes[k], &value_off);
                                if (r < 0)
                                        goto finish;
                                rec = extra.data + records + k * TOC_XATTR_SIZE;
                                toc_put32(rec + TOC_X_NAME_OFF, (uint32_t) name_off);
                                toc_put32(rec + TOC_X_NAME_LEN, (uint32_t) strlen(x->xattr_names[k]));
                                toc_put64(rec + TOC_X_VALUE_OFF, value_off);
                                toc_put32(rec + TOC_X_VALUE_LEN, (uint32_t) x->xattr_sizes[k]);
                        }
                }
        }
        if (strings.size > UINT32_MAX) {
                r = -E2BIG;
                goto finish;
        }

        /* What a reader would refuse (TOC_SIZE_MAX) is not written. */
        if ((uint64_t) n > TOC_SIZE_MAX / TOC_ENTRY_SIZE_V1) {
                r = -E2BIG;
                goto finish;
        }
        r = buf_reserve(out, TOC_HEADER_SIZE_V1 + n * TOC_ENTRY_SIZE_V1, &header);
        if (r < 0)
                goto finish;
        entries = header + TOC_HEADER_SIZE_V1;
        for (size_t i = 0; i < n; i++) {
                Node *x = all[i], *p = x->link;
                uint8_t *e = entries + i * TOC_ENTRY_SIZE_V1;
                uint64_t name_off = 0, target_off = 0;
                uint32_t nlink = p->link_count, subdirs = 0;

                r = buf_append(&strings, x->name, strlen(x->name), &name_off);
                if (r >= 0 && p->type == TOC_TYPE_SYMLINK)
                        r = buf_append(&strings, p->target, strlen(p->target), &target_off);
                if (r < 0)
                        goto finish;
                if (strings.size > UINT32_MAX) {
                        r = -E2BIG;
                        goto finish;
                }
                if (x->type == TOC_TYPE_DIRECTORY) {
                        for (size_t k = 0; k < x->n_children; k++)
                                subdirs += x->children[k]->type == TOC_TYPE_DIRECTORY;
                        nlink = 2 + subdirs;
                }

                toc_put64(e + TOC_E_PARENT, x->parent ? x->parent->ino : 0);
                toc_put32(e + TOC_E_NAME_OFF, (uint32_t) name_off);
                toc_put32(e + TOC_E_NAME_LEN, (uint32_t) strlen(x->name));
                e[TOC_E_TYPE] = (uint8_t) p->type;
                e[TOC_E_FLAGS] = (uint8_t) x->flags;
                toc_put32(e + TOC_E_MODE, p->mode);
                toc_put32(e + TOC_E_UID, p->uid);
                toc_put32(e + TOC_E_GID, p->gid);
                toc_put32(e + TOC_E_NLINK, nlink);
                toc_put32(e + TOC_E_MTIME_NSEC, p->mtime_nsec);
                toc_put64(e + TOC_E_SIZE, p->size);
                toc_put64(e + TOC_E_MTIME_SEC, (uint64_t) p->mtime_sec);
                toc_put32(e + TOC_E_RDEV_MAJOR, p->rdev_major);
                toc_put32(e + TOC_E_RDEV_MINOR, p->rdev_minor);
                if (x->type == TOC_TYPE_DIRECTORY && x->n_children > 0) {
                        toc_put64(e + TOC_E_FIRST_CHILD, x->children[0]->ino);
                        toc_put32(e + TOC_E_N_CHILDREN, (uint32_t) x->n_children);
                }
                toc_put32(e + TOC_E_N_CHUNKS, p->type == TOC_TYPE_REGULAR ? (uint32_t) p->content.n_chunks : 0);
                toc_put64(e + TOC_E_LINK, p->ino);
                toc_put32(e + TOC_E_TARGET_OFF, (uint32_t) target_off);
                toc_put32(e + TOC_E_TARGET_LEN, p->type == TOC_TYPE_SYMLINK ? (uint32_t) strlen(p->target) : 0);
                toc_put64(e + TOC_E_CONTENT_OFF, p->type == TOC_TYPE_REGULAR ? p->content_off : 0);
                toc_put64(e + TOC_E_XATTRS_OFF, p->n_xattrs > 0 ? p->xattrs_off : 0);
                toc_put32(e + TOC_E_N_XATTRS, (uint32_t) p->n_xattrs);
        }

        {
                uint64_t strings_off, extra_off;
                Digest sum;

                if ((uint64_t) out->size + strings.size + extra.size > TOC_SIZE_MAX) {
                        r = -E2BIG;
                        goto finish;
                }
                r = buf_append(out, strings.data, strings.size, &strings_off);
                if (r >= 0)
                        r = buf_append(out, extra.data, extra.size, &extra_off);
                if (r < 0)
                        goto finish;
                header = out->data;
                memcpy(header + TOC_OFF_MAGIC, TOC_MAGIC, 8);
                toc_put16(header + TOC_OFF_MAJOR, TOC_VERSION_MAJOR);
                toc_put16(header + TOC_OFF_MINOR, TOC_VERSION_MINOR);
                toc_put32(header + TOC_OFF_CHUNK_SIZE, w->chunk_size);
                toc_put32(header + TOC_OFF_HEADER_SIZE, TOC_HEADER_SIZE_V1);
                toc_put64(header + TOC_OFF_FILE_SIZE, out->size);
                toc_put64(header + TOC_OFF_N_ENTRIES, n);
                toc_put64(header + TOC_OFF_ENTRIES, TOC_HEADER_SIZE_V1);
                toc_put32(header + TOC_OFF_ENTRY_SIZE, TOC_ENTRY_SIZE_V1);
                toc_put64(header + TOC_OFF_STRINGS, strings_off);
                toc_put64(header + TOC_OFF_STRINGS_SIZE, strings.size);
                toc_put64(header + TOC_OFF_EXTRA, extra_off);
                toc_put64(header + TOC_OFF_EXTRA_SIZE, extra.size);
                r = digest_buffer(header + TOC_CHECKSUMMED_FROM, out->size - TOC_CHECKSUMMED_FROM, &sum);
                if (r < 0)
                        goto finish;
                memcpy(header + TOC_OFF_CHECKSUM, sum.bytes, DIGEST_SIZE);
        }
        *ret_entries = n;
        r = 0;
finish:
        free(strings.data);
        free(extra.data);
        return r;
}

int toc_writer_finish_buffer(TocWriter *w, void **ret, size_t *ret_size) {
        Buf out = {};
        uint64_t n;
        int r;

        r = build(w, &out, &n);
        if (r < 0) {
                free(out.data);
                return r;
        }
        *ret = out.data;
        *ret_size = out.size;
        return 0;
}

int toc_writer_finish_fd(TocWriter *w, int fd, uint64_t *ret_entries, uint64_t *ret_bytes) {
        Buf out = {};
        size_t done = 0;
        uint64_t n;
        int r;

        r = build(w, &out, &n);
        while (r >= 0 && done < out.size) {
                ssize_t k = write(fd, out.data + done, out.size - done);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        r = -errno;
                else
                        done += (size_t) k;
        }
        free(out.data);
        if (r < 0)
                return r;
        if (ret_entries)
                *ret_entries = n;
        if (ret_bytes)
                *ret_bytes = done;
        return 0;
}
