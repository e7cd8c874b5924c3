/* SPDX-License-Identifier: LGPL-2.1-or-later */
#define FUSE_USE_VERSION 312

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <fuse_lowlevel.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "imagefs-fd-protocol.h"
#include "imagefs-fuse.h"
#include "imagefs-toc.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

/* ToC mode: the kernel keeps entries and attributes this long (seconds): the image never changes, so
 * "forever" is right; a day bounds what an entry the kernel no longer needs holds in its cache. */
#define TOC_CACHE_SEC 86400.0
/* Threads of one mount's session at most: a read that waits for the relay holds one, lookups must not
 * wait behind a few of those. */
#define MOUNT_MAX_THREADS 16
/* After aborting the connection (no forwarder): what a thread still does fails at once, but for a
 * thread waiting for the relay. */
#define STOP_ABORT_WAIT_USEC (200 * USEC_PER_MSEC)
/* Entries asked of the relay per ReadDir in no-ToC mode: about what a 4 KiB readdir buffer holds. */
#define READDIR_BATCH 64U
/* Open files are found by their number in a table of this many chains. */
#define HANDLE_BUCKETS 256U
/* How long attaching waits for the forwarder's answer (it answers at once unless it is stuck). */
#define ATTACH_TIMEOUT_SEC 10

typedef struct Handle Handle;

struct ImagefsMount {
        char *layer;
        char *mountpoint;
        usec_t timeout_usec;
        Toc *toc;
        Toc *lower_dirs; /* the attributes of implied directories, from the layers below (or NULL) */
        ImagefsRelay *relay;
        ImagefsCache *cache;

        char *forwarder;   /* the forwarder's socket, NULL: /dev/fuse is this process's own */
        int channel_fd;    /* with a forwarder: the connection the session reads (the session owns it) */

        /* Open files by number. The numbers carry a random generation, so that a worker that takes over
         * a mount tells the files its predecessor opened (and opens them again lazily) from its own. */
        pthread_mutex_t handles_lock;
        Handle *handles[HANDLE_BUCKETS];
        uint64_t fh_generation, fh_next;

        struct fuse_session *session;
        pthread_t thread;
        bool thread_started;
        bool stopping;  /* the session was told to end */
        bool abandoned; /* a stop gave up waiting for its threads: nothing of it may be freed */
        int notify_fd;
        dev_t dev;
        bool running; /* atomic */

        ImagefsCounters counters; /* atomic fields */
        ImagefsPrefetch *prefetch;
};

struct Handle {
        Handle *next;
        uint64_t fh;
        ImagefsCacheEntry *entry;
        uint64_t inode;
        Digest digest;
};

#define COUNT(m, field, n) __atomic_add_fetch(&(m)->counters.field, (n), __ATOMIC_RELAXED)

static double timeout_of(const ImagefsMount *m) {
        return m->toc ? TOC_CACHE_SEC : 0.0;
}

/* The path of an entry for messages ("#N" without a ToC). */
static void describe(const ImagefsMount *m, uint64_t entry, char *buf, size_t size) {
        if (!m->toc || toc_path(m->toc, entry, buf, size) < 0)
                snprintf(buf, size, "#%" PRIu64, entry);
}

/* Every failure that is not the caller's (a relay away, damage, a bug) is EIO to FUSE, counted, and logged
 * once here with what it concerned. */
static int io_error(ImagefsMount *m, int r, const char *what, uint64_t entry, const char *relay_error) {
        char path[TOC_PATH_MAX + 1];

        COUNT(m, errors, 1);
        describe(m, entry, path, sizeof(path));
        log_struct_errno(LOG_WARNING, r, LOG_MESSAGE("Layer %s: %s of '%s' failed: %s%s%m", m->layer, what, path,
                                                     strempty(relay_error), relay_error ? ": " : ""),
                         "TONARI_LAYER=%s", m->layer, "TONARI_PATH=%s", path);
        return EIO;
}

/* A relay's answer as FUSE's errno: what the layer says (no such name, not a directory) passes, the rest
 * is an I/O error. */
static int relay_errno(ImagefsMount *m, int r, const char *what, uint64_t entry, const char *relay_error) {
        if (r == -ENOENT)
                return ENOENT;
        if (r == -ENOTDIR || (r == -EINVAL && relay_error && strstr(relay_error, "not a directory")))
                return ENOTDIR;
        return io_error(m, r, what, entry, relay_error);
}

/* The ToC the xattrs and attributes of an entry come from: an implied directory's lower one's, if any. */
static const Toc *toc_of(ImagefsMount *m, uint64_t *entry) {
        uint64_t lower;

        if (m->lower_dirs && imagefs_lower_dir_of(m->lower_dirs, *entry, &lower) >= 0) {
                *entry = lower;
                return m->lower_dirs;
        }
        return m->toc;
}

/* A node of the ToC, an implied directory with its lower one's attributes (tonari-toc(5)). */
static int toc_node(ImagefsMount *m, uint64_t entry, ImagefsNode *ret) {
        ImagefsNode l;
        uint64_t lower = entry;
        int r;

        r = imagefs_toc_node(m->toc, entry, ret);
        if (r < 0 || !ret->implied || toc_of(m, &lower) == m->toc || imagefs_toc_node(m->lower_dirs, lower, &l) < 0)
                return r;
        ret->mode = l.mode;
        ret->uid = l.uid;
        ret->gid = l.gid;
        ret->mtime_sec = l.mtime_sec;
        ret->mtime_nsec = l.mtime_nsec;
        return 0;
}

static int node_of(ImagefsMount *m, fuse_ino_t ino, ImagefsNode *ret) {
        _cleanup_free_ char *err = NULL;
        uint64_t entry;
        int r;

        r = imagefs_entry_of(ino, &entry);
        if (r < 0)
                return ENOENT;
        if (m->toc) {
                r = toc_node(m, entry, ret);
                if (r == -ENOENT)
                        return ENOENT;
                return r < 0 ? io_error(m, r, "getattr", entry, NULL) : 0;
        }
        COUNT(m, metadata_round_trips, 1);
        r = imagefs_relay_getattr(m->relay, m->layer, entry, m->timeout_usec, ret, &err);
        return r < 0 ? relay_errno(m, r, "getattr", entry, err) : 0;
}

/* The entry of a request's node; false when there is none (and the request is answered). */
static bool entry_of_request(fuse_req_t req, fuse_ino_t ino, uint64_t *ret) {
        if (imagefs_entry_of(ino, ret) < 0) {
                fuse_reply_err(req, ENOENT);
                return false;
        }
        return true;
}

static void entry_param(const ImagefsMount *m, const ImagefsNode *n, struct fuse_entry_param *ret) {
        *ret = (struct fuse_entry_param) {
                .ino = imagefs_nodeid(n->entry),
                .attr_timeout = timeout_of(m),
                .entry_timeout = timeout_of(m),
        };
        imagefs_node_stat(n, &ret->attr);
}

static void op_init(void *userdata, struct fuse_conn_info *conn) {
        ImagefsMount *m = userdata;

        /* Always readdirplus: in ToC mode the attributes are free, and the lookups it saves are not. */
        conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;
        if (m->toc && (conn->capable & FUSE_CAP_CACHE_SYMLINKS))
                conn->want |= FUSE_CAP_CACHE_SYMLINKS;
        if (conn->capable & FUSE_CAP_SPLICE_WRITE)
                conn->want |= FUSE_CAP_SPLICE_WRITE;
        conn->time_gran = 1;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name) {
        ImagefsMount *m = fuse_req_userdata(req);
        struct fuse_entry_param e;
        ImagefsNode node;
        uint64_t dir, child;
        int r;

        if (!entry_of_request(req, parent, &dir))
                return;
        if (m->toc) {
                r = toc_lookup(m->toc, dir, name, strlen(name), &child);
                if (r == -ENOENT) {
                        /* A negative entry, cached as long as positive ones. */
                        e = (struct fuse_entry_param) { .ino = 0, .entry_timeout = timeout_of(m) };
                        fuse_reply_entry(req, &e);
                        return;
                }
                if (r == -ENOTDIR) {
                        fuse_reply_err(req, ENOTDIR);
                        return;
                }
                if (r >= 0)
                        r = toc_node(m, child, &node);
                if (r < 0) {
                        fuse_reply_err(req, io_error(m, r, "lookup", dir, NULL));
                        return;
                }
        } else {
                _cleanup_free_ char *err = NULL;

                COUNT(m, metadata_round_trips, 1);
                r = imagefs_relay_lookup(m->relay, m->layer, dir, name, m->timeout_usec, &node, &err);
                if (r < 0) {
                        fuse_reply_err(req, relay_errno(m, r, "lookup", dir, err));
                        return;
                }
        }
        entry_param(m, &node, &e);
        fuse_reply_entry(req, &e);
}

static void op_forget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
        /* Nodes are the layer's entries: nothing is allocated per lookup. */
        fuse_reply_none(req);
}

static void op_forget_multi(fuse_req_t req, size_t count, struct fuse_forget_data *forgets) {
        fuse_reply_none(req);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        ImagefsMount *m = fuse_req_userdata(req);
        ImagefsNode node;
        struct stat st;
        int r;

        r = node_of(m, ino, &node);
        if (r > 0) {
                fuse_reply_err(req, r);
                return;
        }
        imagefs_node_stat(&node, &st);
        fuse_reply_attr(req, &st, timeout_of(m));
}

static void op_readlink(fuse_req_t req, fuse_ino_t ino) {
        ImagefsMount *m = fuse_req_userdata(req);
        _cleanup_free_ char *target = NULL, *err = NULL;
        uint64_t entry;
        int r;

        if (!entry_of_request(req, ino, &entry))
                return;
        if (m->toc) {
                TocEntry e;

                r = toc_get(m->toc, entry, &e);
                if (r == -ENOENT) {
                        fuse_reply_err(req, ENOENT);
                        return;
                }
                if (r >= 0 && e.type != TOC_TYPE_SYMLINK) {
                        fuse_reply_err(req, EINVAL);
                        return;
                }
                if (r >= 0) {
                        target = memdup_suffix0(e.target, e.target_len);
                        if (!target)
                                r = -ENOMEM;
                }
                if (r < 0) {
                        fuse_reply_err(req, io_error(m, r, "readlink", entry, NULL));
                        return;
                }
        } else {
                COUNT(m, metadata_round_trips, 1);
                r = imagefs_relay_readlink(m->relay, m->layer, entry, m->timeout_usec, &target, &err);
                if (r == -EINVAL) {
                        fuse_reply_err(req, EINVAL);
                        return;
                }
                if (r < 0) {
                        fuse_reply_err(req, relay_errno(m, r, "readlink", entry, err));
                        return;
                }
        }
        fuse_reply_readlink(req, target);
}

/* Opens ino's content: a handle, or the errno to answer (positive). */
static int handle_open(ImagefsMount *m, fuse_ino_t ino, Handle **ret) {
        _cleanup_free_ Digest *chunks = NULL;
        _cleanup_free_ Handle *h = NULL;
        ImagefsContent content;
        ImagefsNode node;
        int r;

        r = node_of(m, ino, &node);
        if (r > 0)
                return r;
        if (node.type != TOC_TYPE_REGULAR || !node.has_digest)
                return node.type == TOC_TYPE_DIRECTORY ? EISDIR : EINVAL;
        content = (ImagefsContent) { .digest = node.digest, .size = node.size };
        if (m->toc) {
                /* With the ToC, a large file is verified (and fetched) by chunk. */
                TocEntry e;

                r = toc_get(m->toc, node.entry, &e);
                if (r >= 0 && e.n_chunks > 0) {
                        chunks = new(Digest, e.n_chunks);
                        if (!chunks)
                                r = -ENOMEM;
                        for (uint32_t i = 0; r >= 0 && i < e.n_chunks; i++)
                                r = toc_chunk(m->toc, &e, i, &chunks[i]);
                        content.chunks = chunks;
                        content.n_chunks = e.n_chunks;
                        content.chunk_size = toc_chunk_size(m->toc);
                }
                if (r < 0)
                        return io_error(m, r, "open", node.entry, NULL);
        }
        h = new0(Handle, 1);
        if (!h)
                return ENOMEM;
        h->inode = node.entry;
        h->digest = node.digest;
        imagefs_prefetch_opened(m->prefetch, node.entry);
        r = imagefs_cache_get(m->cache, &content, &h->entry);
        if (r < 0)
                return io_error(m, r, "open (cache)", node.entry, NULL);
        *ret = TAKE_PTR(h);
        return 0;
}

static Handle *handle_free(ImagefsMount *m, Handle *h) {
        if (h) {
                imagefs_cache_unref(m->cache, h->entry);
                free(h);
        }
        return NULL;
}

/* Under the lock. */
static Handle **handle_slot(ImagefsMount *m, uint64_t fh) {
        Handle **p = &m->handles[fh % HANDLE_BUCKETS];

        while (*p && (*p)->fh != fh)
                p = &(*p)->next;
        return p;
}

/* Files its predecessor opened are opened again by the worker that took a mount over: the number the
 * kernel holds stays, and leads to the same content. */
static int handle_get(ImagefsMount *m, uint64_t fh, fuse_ino_t ino, Handle **ret) {
        Handle *h, **p;
        int r;

        pthread_mutex_lock(&m->handles_lock);
        h = *handle_slot(m, fh);
        pthread_mutex_unlock(&m->handles_lock);
        if (h) {
                *ret = h;
                return 0;
        }
        if ((fh >> 32) == m->fh_generation)
                /* One of ours, released: the kernel never does that. */
                return EBADF;
        r = handle_open(m, ino, &h);
        if (r > 0)
                return r;
        h->fh = fh;
        pthread_mutex_lock(&m->handles_lock);
        p = handle_slot(m, fh);
        if (*p) {
                /* Another thread of ours was first. */
                handle_free(m, h);
                h = *p;
        } else
                *p = h;
        pthread_mutex_unlock(&m->handles_lock);
        *ret = h;
        return 0;
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        ImagefsMount *m = fuse_req_userdata(req);
        Handle *h = NULL, **p;
        int r;

        if ((fi->flags & O_ACCMODE) != O_RDONLY) {
                fuse_reply_err(req, EROFS);
                return;
        }
        r = handle_open(m, ino, &h);
        if (r > 0) {
                fuse_reply_err(req, r);
                return;
        }
        pthread_mutex_lock(&m->handles_lock);
        do
                h->fh = (m->fh_generation << 32) | (uint32_t) m->fh_next++;
        while (*(p = handle_slot(m, h->fh)));
        *p = h;
        pthread_mutex_unlock(&m->handles_lock);
        fi->fh = h->fh;
        fi->keep_cache = 1;
        if (fuse_reply_open(req, fi) != 0) {
                pthread_mutex_lock(&m->handles_lock);
                p = handle_slot(m, fi->fh);
                *p = h->next;
                pthread_mutex_unlock(&m->handles_lock);
                handle_free(m, h);
        }
}

typedef struct FetchContext {
        ImagefsMount *mount;
        Handle *handle;
        char *error;
} FetchContext;

static int fetch(uint64_t offset, uint64_t size, imagefs_sink_t sink, void *sink_userdata, void *userdata) {
        FetchContext *c = userdata;

        COUNT(c->mount, content_round_trips, 1);
        return imagefs_relay_read(c->mount->relay, c->mount->layer, c->handle->inode, offset, size,
                                  c->mount->timeout_usec, sink, sink_userdata, &c->error);
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        ImagefsMount *m = fuse_req_userdata(req);
        struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
        FetchContext c = { .mount = m };
        uint64_t fetched = 0;
        bool hit = false;
        int fd = -EBADF, r;
        Handle *h;

        r = handle_get(m, fi->fh, ino, &h);
        if (r > 0) {
                fuse_reply_err(req, r);
                return;
        }
        c.handle = h;
        /* A content the prefetch stream still brings is not asked for twice. */
        imagefs_prefetch_wait(m->prefetch, &h->digest);
        r = imagefs_cache_prepare(m->cache, h->entry, (uint64_t) off, size, fetch, &c, &fd, &fetched, &hit);
        if (r < 0) {
                char path[TOC_PATH_MAX + 1], digest[DIGEST_STRING_MAX];

                COUNT(m, errors, 1);
                describe(m, h->inode, path, sizeof(path));
                digest_to_string(&h->digest, digest);
                if (r == -EBADMSG || r == -EUCLEAN)
                        log_struct_errno(LOG_ERR, r,
                                         LOG_MESSAGE("Layer %s: %s of '%s' do not match its digest %s, refusing them.",
                                                     m->layer, r == -EBADMSG ? "bytes the relay sent" : "cached bytes",
                                                     path, digest),
                                         "TONARI_LAYER=%s", m->layer, "TONARI_PATH=%s", path, "TONARI_DIGEST=%s", digest);
                else
                        log_struct_errno(LOG_WARNING, r,
                                         LOG_MESSAGE("Layer %s: reading '%s' (%s) failed: %s%s%m", m->layer, path, digest,
                                                     strempty(c.error), c.error ? ": " : ""),
                                         "TONARI_LAYER=%s", m->layer, "TONARI_PATH=%s", path, "TONARI_DIGEST=%s", digest);
                free(c.error);
                fuse_reply_err(req, EIO);
                return;
        }
        free(c.error);
        COUNT(m, bytes_fetched, fetched);
        if (hit)
                COUNT(m, cache_hits, 1);
        else
                COUNT(m, cache_misses, 1);
        buf.buf[0].flags = FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK;
        buf.buf[0].fd = fd;
        buf.buf[0].pos = off;
        fuse_reply_data(req, &buf, 0);
}

static void op_release(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi) {
        ImagefsMount *m = fuse_req_userdata(req);
        Handle *h, **p;

        pthread_mutex_lock(&m->handles_lock);
        p = handle_slot(m, fi->fh);
        h = *p;
        if (h)
                *p = h->next;
        pthread_mutex_unlock(&m->handles_lock);
        /* Not found: one a predecessor opened and nobody read since. */
        handle_free(m, h);
        fuse_reply_err(req, 0);
}

typedef struct DirBuffer {
        fuse_req_t req;
        ImagefsMount *mount;
        bool plus;
        char *buf;
        size_t size, used;
} DirBuffer;

/* 1 when the entry did not fit (the listing continues at its offset next time). */
static int dir_add(DirBuffer *b, const char *name, const ImagefsNode *node, fuse_ino_t ino, mode_t type, off_t next) {
        size_t n;

        if (b->plus) {
                struct fuse_entry_param e = {};

                if (node)
                        entry_param(b->mount, node, &e);
                else {
                        /* "." and "..": the kernel takes no reference for them. */
                        e.attr.st_ino = ino;
                        e.attr.st_mode = type;
                }
                n = fuse_add_direntry_plus(b->req, b->buf + b->used, b->size - b->used, name, &e, next);
        } else {
                struct stat st = { .st_ino = ino, .st_mode = type };

                if (node)
                        imagefs_node_stat(node, &st);
                n = fuse_add_direntry(b->req, b->buf + b->used, b->size - b->used, name, &st, next);
        }
        if (n > b->size - b->used)
                return 1;
        b->used += n;
        return 0;
}

static int relay_dirent(const char *name, const ImagefsNode *node, uint64_t next_offset, void *userdata) {
        DirBuffer *b = userdata;

        return dir_add(b, name, node, imagefs_nodeid(node->entry), 0, (off_t) (next_offset + 2));
}

static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus) {
        ImagefsMount *m = fuse_req_userdata(req);
        _cleanup_free_ char *buf = NULL, *err = NULL;
        DirBuffer b = { .req = req, .mount = m, .plus = plus, .size = size };
        uint64_t dir, parent = 0;
        TocEntry d;
        int r;

        if (!entry_of_request(req, ino, &dir))
                return;
        b.buf = buf = malloc(size ?: 1);
        if (!buf) {
                fuse_reply_err(req, ENOMEM);
                return;
        }
        if (m->toc) {
                r = toc_get(m->toc, dir, &d);
                if (r < 0) {
                        fuse_reply_err(req, r == -ENOENT ? ENOENT : io_error(m, r, "readdir", dir, NULL));
                        return;
                }
                if (d.type != TOC_TYPE_DIRECTORY) {
                        fuse_reply_err(req, ENOTDIR);
                        return;
                }
                parent = d.parent;
        }
        /* Offsets: 1 after ".", 2 after "..", 2 + n after the layer's n-th entry of the directory. */
        if (off < 1 && dir_add(&b, ".", NULL, ino, S_IFDIR, 1) > 0)
                goto reply;
        if (off < 2 && dir_add(&b, "..", NULL, imagefs_nodeid(parent), S_IFDIR, 2) > 0)
                goto reply;
        if (m->toc) {
                for (uint64_t i = (uint64_t) MAX(off, (off_t) 2) - 2; i < d.n_children; i++) {
                        char name[TOC_NAME_MAX + 1];
                        ImagefsNode node;
                        TocEntry c;

                        r = toc_child(m->toc, &d, (uint32_t) i, &c);
                        if (r >= 0)
                                r = toc_node(m, c.ino, &node);
                        if (r < 0) {
                                fuse_reply_err(req, io_error(m, r, "readdir", dir, NULL));
                                return;
                        }
                        memcpy(name, c.name, MIN(c.name_len, (size_t) TOC_NAME_MAX));
                        name[MIN(c.name_len, (size_t) TOC_NAME_MAX)] = 0;
                        if (dir_add(&b, name, &node, imagefs_nodeid(node.entry), 0, (off_t) (i + 3)) > 0)
                                break;
                }
        } else {
                COUNT(m, metadata_round_trips, 1);
                r = imagefs_relay_readdir(m->relay, m->layer, dir, (uint64_t) MAX(off, (off_t) 2) - 2, READDIR_BATCH,
                                          m->timeout_usec, relay_dirent, &b, &err);
                if (r < 0) {
                        fuse_reply_err(req, relay_errno(m, r, "readdir", dir, err));
                        return;
                }
        }
reply:
        fuse_reply_buf(req, buf, b.used);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        do_readdir(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi) {
        do_readdir(req, ino, size, off, true);
}

static void reply_xattr(fuse_req_t req, const void *value, size_t len, size_t size) {
        if (size == 0)
                fuse_reply_xattr(req, len);
        else if (len > size)
                fuse_reply_err(req, ERANGE);
        else
                fuse_reply_buf(req, value, len);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size) {
        ImagefsMount *m = fuse_req_userdata(req);
        _cleanup_free_ void *owned = NULL;
        _cleanup_free_ char *err = NULL;
        const void *value;
        size_t len;
        uint64_t entry;
        int r;

        if (!entry_of_request(req, ino, &entry))
                return;
        if (m->toc) {
                uint64_t e = entry;
                const Toc *t = toc_of(m, &e);

                r = imagefs_toc_getxattr(t, e, name, &value, &len);
                if (r == -ENODATA || r == -ENOENT) {
                        fuse_reply_err(req, -r);
                        return;
                }
                if (r < 0) {
                        fuse_reply_err(req, io_error(m, r, "getxattr", entry, NULL));
                        return;
                }
        } else if (imagefs_xattr_hidden(name, strlen(name))) {
                ImagefsNode node;

                /* Only the opaque marker of this namespace is shown, and the relay says it in the entry. */
                if (!streq(name, IMAGEFS_OPAQUE_XATTR)) {
                        fuse_reply_err(req, ENODATA);
                        return;
                }
                r = node_of(m, ino, &node);
                if (r > 0) {
                        fuse_reply_err(req, r);
                        return;
                }
                if (!node.opaque) {
                        fuse_reply_err(req, ENODATA);
                        return;
                }
                value = "y";
                len = 1;
        } else {
                COUNT(m, metadata_round_trips, 1);
                r = imagefs_relay_getxattr(m->relay, m->layer, entry, name, m->timeout_usec, &owned, &len, &err);
                if (r == -ENOENT) {
                        /* The relay says NOT_FOUND for a missing attribute and for a missing inode alike. */
                        fuse_reply_err(req, ENODATA);
                        return;
                }
                if (r < 0) {
                        fuse_reply_err(req, relay_errno(m, r, "getxattr", entry, err));
                        return;
                }
                value = owned;
        }
        reply_xattr(req, value, len, size);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
        ImagefsMount *m = fuse_req_userdata(req);
        _cleanup_free_ char *buf = NULL, *err = NULL;
        size_t len;
        uint64_t entry;
        int r;

        if (!entry_of_request(req, ino, &entry))
                return;
        if (size > 0) {
                buf = malloc(size);
                if (!buf) {
                        fuse_reply_err(req, ENOMEM);
                        return;
                }
        }
        if (m->toc) {
                uint64_t e = entry;
                const Toc *t = toc_of(m, &e);

                r = imagefs_toc_listxattr(t, e, buf, size, &len);
        }
        else {
                _cleanup_strv_free_ char **names = NULL;
                _cleanup_free_ size_t *lens = NULL;
                ImagefsNode node;
                size_t n;

                r = node_of(m, ino, &node);
                if (r > 0) {
                        fuse_reply_err(req, r);
                        return;
                }
                COUNT(m, metadata_round_trips, 1);
                r = imagefs_relay_listxattr(m->relay, m->layer, entry, m->timeout_usec, &names, &err);
                if (r < 0) {
                        fuse_reply_err(req, relay_errno(m, r, "listxattr", entry, err));
                        return;
                }
                n = strv_length(names);
                lens = new(size_t, n ?: 1);
                if (!lens) {
                        fuse_reply_err(req, ENOMEM);
                        return;
                }
                for (size_t i = 0; i < n; i++)
                        lens[i] = strlen(names[i]);
                r = imagefs_xattr_list((const char *const *) names, lens, n, node.opaque, buf, size, &len);
        }
        if (r == -ERANGE) {
                fuse_reply_err(req, ERANGE);
                return;
        }
        if (r < 0) {
                fuse_reply_err(req, r == -ENOENT ? ENOENT : io_error(m, r, "listxattr", entry, NULL));
                return;
        }
        if (size == 0)
                fuse_reply_xattr(req, len);
        else
                fuse_reply_buf(req, buf, len);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino) {
        ImagefsMount *m = fuse_req_userdata(req);
        struct statvfs st = {
                .f_bsize = 4096,
                .f_frsize = 4096,
                .f_files = m->toc ? toc_n_entries(m->toc) : 0,
                .f_namemax = TOC_NAME_MAX,
        };

        fuse_reply_statfs(req, &st);
}

static const struct fuse_lowlevel_ops ops = {
        .init = op_init,
        .lookup = op_lookup,
        .forget = op_forget,
        .forget_multi = op_forget_multi,
        .getattr = op_getattr,
        .readlink = op_readlink,
        .open = op_open,
        .read = op_read,
        .release = op_release,
        .readdir = op_readdir,
        .readdirplus = op_readdirplus,
        .getxattr = op_getxattr,
        .listxattr = op_listxattr,
        .statfs = op_statfs,
};

int imagefs_mount_new(const ImagefsMountConfig *config, Toc *toc, ImagefsRelay *relay, ImagefsCache *cache,
                      ImagefsMount **ret) {
        ImagefsMount *m;

        m = new0(ImagefsMount, 1);
        if (!m)
                return -ENOMEM;
        m->notify_fd = -EBADF;
        m->channel_fd = -EBADF;
        m->layer = strdup(config->layer);
        m->mountpoint = strdup(config->mountpoint);
        m->forwarder = config->forwarder ? strdup(config->forwarder) : NULL;
        if (!m->layer || !m->mountpoint || (config->forwarder && !m->forwarder)) {
                free(m->layer);
                free(m->mountpoint);
                free(m->forwarder);
                free(m);
                return -ENOMEM;
        }
        pthread_mutex_init(&m->handles_lock, NULL);
        if (getrandom(&m->fh_generation, sizeof(m->fh_generation), 0) != sizeof(m->fh_generation))
                m->fh_generation = (uint64_t) now(CLOCK_REALTIME) ^ (uint64_t) getpid();
        m->fh_generation &= UINT32_MAX;
        m->timeout_usec = config->timeout_usec;
        m->relay = relay;
        m->cache = cache;
        m->toc = toc;
        *ret = m;
        return 0;
}

static void *session_thread(void *userdata) {
        ImagefsMount *m = userdata;
        struct fuse_loop_config *config = fuse_loop_cfg_create();
        uint64_t one = 1;
        int r;

        if (!config)
                r = -ENOMEM;
        else {
                fuse_loop_cfg_set_max_threads(config, MOUNT_MAX_THREADS);
                /* A forwarder's connection cannot be cloned; its messages are whole, so threads share it. */
                fuse_loop_cfg_set_clone_fd(config, !m->forwarder);
                r = fuse_session_loop_mt(m->session, config);
                fuse_loop_cfg_destroy(config);
        }
        if (r != 0)
                log_debug("Session of %s ended: %d", m->mountpoint, r);
        __atomic_store_n(&m->running, false, __ATOMIC_RELEASE);
        if (m->notify_fd >= 0)
                (void) write(m->notify_fd, &one, sizeof(one));
        return NULL;
}

/* The forwarder's connection as libfuse's device: one message per request and per answer. */
static ssize_t channel_read(int fd, void *buf, size_t size, void *userdata) {
        ssize_t n = recv(fd, buf, size, 0);

        if (n == 0) {
                /* The forwarder is gone (or the mount, or this worker stops): the end of the session. */
                errno = ENODEV;
                return -1;
        }
        return n;
}

static ssize_t channel_writev(int fd, struct iovec *iov, int count, void *userdata) {
        struct msghdr mh = { .msg_iov = iov, .msg_iovlen = (size_t) count };
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);

        /* An answer nobody takes any more: the forwarder passes the request again to the next worker. */
        if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
                errno = ENOENT;
        return n;
}

static const struct fuse_custom_io channel_io = {
        .read = channel_read,
        .writev = channel_writev,
};

/* Asks the forwarder for the mount at m->mountpoint (new or its predecessor's): the connection. */
static int forwarder_attach(ImagefsMount *m, const char *fsname, int *ret_fd) {
        union {
                struct sockaddr sa;
                struct sockaddr_un un;
        } sa = { .un.sun_family = AF_UNIX };
        struct timeval tv = { .tv_sec = ATTACH_TIMEOUT_SEC };
        int size = IMAGEFS_FD_SOCKET_BUFFER_BYTES;
        _cleanup_free_ char *state = NULL, *msg = NULL;
        _cleanup_close_ int fd = -EBADF;
        char answer[64];
        ssize_t n;
        int len;

        if (strlen(m->forwarder) >= sizeof(sa.un.sun_path))
                return -EINVAL;
        strcpy(sa.un.sun_path, m->forwarder);
        if (asprintf(&state, "layer=%s relay=%s mode=%s", m->layer, imagefs_relay_address(m->relay),
                     m->toc ? "toc" : "no-toc") < 0)
                return -ENOMEM;
        len = asprintf(&msg, "ATTACH%c%s%c%s%c%s%c", 0, m->mountpoint, 0, fsname, 0, state, 0);
        if (len < 0)
                return -ENOMEM;
        fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;
        /* The forwarder may be restarting (its socket gone or not listening yet): tried again for a while. */
        for (unsigned i = 0;; i++) {
                if (connect(fd, &sa.sa, sizeof(sa.un)) >= 0)
                        break;
                if ((errno != ENOENT && errno != ECONNREFUSED && errno != EAGAIN) || i >= ATTACH_TIMEOUT_SEC * 10) {
                        /* Not to be taken for the mount point's errors. */
                        log_debug_errno(errno, "Failed to connect to the forwarder at '%s': %m", m->forwarder);
                        return -ENOTCONN;
                }
                if (i == 0)
                        log_info("Waiting for the forwarder at '%s' to listen.", m->forwarder);
                (void) usleep(100 * 1000);
        }
        if (send(fd, msg, (size_t) len, MSG_NOSIGNAL) < 0)
                return -errno;
        n = recv(fd, answer, sizeof(answer) - 1, 0);
        if (n < 0)
                return errno == EAGAIN ? -ETIMEDOUT : -errno;
        answer[n] = 0;
        if (n >= 4 && memcmp(answer, "ERR", 4) == 0)
                return -ERRNO_VALUE(atoi(answer + 4) ?: EIO);
        if (n < 3 || memcmp(answer, "OK", 3) != 0)
                return -EPROTO;
        log_debug("Forwarder: %s %s", m->mountpoint, answer + 3);
        tv = (struct timeval) {};
        if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;
        *ret_fd = TAKE_FD(fd);
        return 0;
}

int imagefs_mount_start(ImagefsMount *m, int notify_fd) {
        _cleanup_free_ char *options = NULL, *fsname = NULL;
        char hex[DIGEST_HEX_LEN + 1] = "";
        struct statx stx;
        Digest d;
        int r;

        if (digest_from_string(m->layer, &d) >= 0)
                digest_to_hex(&d, hex);
        /* Read-only, for everyone (overlayfs and containers read it as other users), permissions checked
         * by the kernel from the modes; nosuid and nodev: the layer is only ever used through an overlay,
         * whose own mount decides those. */
        if (asprintf(&options, "ro,nosuid,nodev,allow_other,default_permissions,fsname=tonari-imagefs:%.12s,"
                               "subtype=tonari-imagefs",
                     hex) < 0)
                return -ENOMEM;
        if (asprintf(&fsname, "tonari-imagefs:%.12s", hex) < 0)
                return -ENOMEM;
        char *argv[] = { (char *) "tonari-imagefs", (char *) "-o", options, NULL };
        struct fuse_args args = FUSE_ARGS_INIT(3, argv);

        m->session = fuse_session_new(&args, &ops, sizeof(ops), m);
        /* Parsing may have copied the arguments. */
        fuse_opt_free_args(&args);
        if (!m->session)
                return -EINVAL;
        if (m->forwarder) {
                /* The forwarder mounts (or has mounted) and owns /dev/fuse; the session reads its socket. */
                int fd = -EBADF;

                r = forwarder_attach(m, fsname, &fd);
                if (r >= 0) {
                        r = fuse_session_custom_io(m->session, &channel_io, fd);
                        if (r < 0)
                                safe_close(fd);
                }
                if (r < 0) {
                        fuse_session_destroy(m->session);
                        m->session = NULL;
                        return r;
                }
                m->channel_fd = fd;
        } else if (fuse_session_mount(m->session, m->mountpoint) != 0) {
                fuse_session_destroy(m->session);
                m->session = NULL;
                return -EIO;
        }
        m->notify_fd = notify_fd;
        m->running = true;
        r = pthread_create(&m->thread, NULL, session_thread, m);
        if (r != 0) {
                m->running = false;
                if (!m->forwarder)
                        fuse_session_unmount(m->session);
                fuse_session_destroy(m->session);
                m->channel_fd = -EBADF;
                m->session = NULL;
                return -r;
        }
        m->thread_started = true;
        /* The connection's number, to abort it if ever needed. Without asking the file system: the root's
         * attributes are there since the mount. */
        if (statx(AT_FDCWD, m->mountpoint, AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &stx) >= 0)
                m->dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
        return 0;
}

bool imagefs_mount_running(ImagefsMount *m) {
        return __atomic_load_n(&m->running, __ATOMIC_ACQUIRE);
}

/* Aborts the connection through fusectl: every request in flight fails, the session's threads end. */
static void abort_connection(ImagefsMount *m) {
        char path[64];
        int fd;

        snprintf(path, sizeof(path), "/sys/fs/fuse/connections/%u/abort", minor(m->dev));
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
                log_warning_errno(errno, "Failed to open %s, ignoring: %m", path);
                return;
        }
        if (write(fd, "1", 1) < 0)
                log_warning_errno(errno, "Failed to abort the connection of %s, ignoring: %m", m->mountpoint);
        safe_close(fd);
}

void imagefs_mount_stop_begin(ImagefsMount *m) {
        if (!m->session || !m->thread_started || m->stopping)
                return;
        m->stopping = true;
        fuse_session_exit(m->session);
        if (m->forwarder)
                /* Every thread's read ends; the mount and what it was asked stay with the forwarder, which
                 * sees the connection end and keeps every request this process has not answered (an
                 * answer a thread sends from now on fails, and the next worker gets the request again). */
                (void) shutdown(m->channel_fd, SHUT_RDWR);
        else if (imagefs_mount_running(m))
                fuse_session_unmount(m->session);
}

static int join_until(ImagefsMount *m, usec_t deadline_usec) {
        struct timespec ts = {
                .tv_sec = (time_t) (deadline_usec / USEC_PER_SEC),
                .tv_nsec = (long) (deadline_usec % USEC_PER_SEC * NSEC_PER_USEC),
        };

        return -pthread_timedjoin_np(m->thread, NULL, &ts);
}

int imagefs_mount_stop_finish(ImagefsMount *m, usec_t deadline_usec) {
        if (!m->session)
                return 0;
        if (m->abandoned)
                return -ETIMEDOUT;
        if (m->thread_started) {
                int r;

                imagefs_mount_stop_begin(m);
                r = join_until(m, deadline_usec);
                if (r == -ETIMEDOUT && !m->forwarder) {
                        /* Without fusectl (systemd mounts it at boot) nothing can end a connection that
                         * an overlay still uses. */
                        log_warning("Mount %s is still in use, aborting its connection.", m->mountpoint);
                        abort_connection(m);
                        r = join_until(m, now(CLOCK_REALTIME) + STOP_ABORT_WAIT_USEC);
                }
                if (r == -ETIMEDOUT) {
                        /* A thread still works on a request: it waits for the relay (up to
                         * ReadTimeoutSec=) or for a fetch another thread does. Its answer is of no use
                         * any more (with a forwarder the next worker gets the request again; without
                         * one the connection is gone), so the process must not wait for it: the
                         * session, and whatever it uses, are left as they are until the process exits. */
                        m->abandoned = true;
                        return r;
                }
                if (r < 0)
                        return r;
                m->thread_started = false;
        }
        if (!m->forwarder)
                fuse_session_unmount(m->session);
        fuse_session_destroy(m->session);
        m->session = NULL;
        m->channel_fd = -EBADF;
        m->stopping = false;
        return 0;
}

int imagefs_mount_stop(ImagefsMount *m) {
        /* A stop for good (an unmount): bounded for the process's sake as well. */
        return imagefs_mount_stop_finish(m, now(CLOCK_REALTIME) + IMAGEFS_STOP_WAIT_USEC);
}

bool imagefs_mount_abandoned(const ImagefsMount *m) {
        return m->abandoned;
}

void imagefs_mount_unmount(ImagefsMount *m) {
        /* With a forwarder, the unmount ends its connection, it closes the worker's, the session ends. */
        if (m->forwarder && m->session && umount2(m->mountpoint, 0) < 0 && errno == EBUSY)
                (void) umount2(m->mountpoint, MNT_DETACH);
        imagefs_mount_stop(m);
}

ImagefsMount *imagefs_mount_free(ImagefsMount *m) {
        if (!m)
                return NULL;
        if (imagefs_mount_stop(m) == -ETIMEDOUT) {
                /* Its threads still use it, its ToC, and the caller's relay and cache: the process is
                 * about to exit (imagefs_mount_stop_finish()). */
                log_debug("Leaving mount %s to its busy threads.", m->mountpoint);
                return NULL;
        }
        /* Its thread reads the ToC. */
        imagefs_prefetch_free(m->prefetch);
        for (size_t i = 0; i < HANDLE_BUCKETS; i++)
                while (m->handles[i]) {
                        Handle *h = m->handles[i];

                        m->handles[i] = h->next;
                        handle_free(m, h);
                }
        pthread_mutex_destroy(&m->handles_lock);
        toc_free(m->toc);
        toc_free(m->lower_dirs);
        free(m->forwarder);
        free(m->layer);
        free(m->mountpoint);
        return mfree(m);
}

const char *imagefs_mount_layer(const ImagefsMount *m) {
        return m->layer;
}

const char *imagefs_mount_path(const ImagefsMount *m) {
        return m->mountpoint;
}

bool imagefs_mount_has_toc(const ImagefsMount *m) {
        return m->toc;
}

void imagefs_mount_set_toc_load(ImagefsMount *m, uint64_t bytes, usec_t load_usec) {
        m->counters.toc_bytes = bytes;
        m->counters.toc_load_usec = load_usec;
}

void imagefs_mount_set_lower_dirs(ImagefsMount *m, Toc *lower_dirs) {
        toc_free(m->lower_dirs);
        m->lower_dirs = lower_dirs;
}

const Toc *imagefs_mount_toc(const ImagefsMount *m) {
        return m->toc;
}

void imagefs_mount_set_prefetch(ImagefsMount *m, ImagefsPrefetch *p) {
        imagefs_prefetch_free(m->prefetch);
        m->prefetch = p;
}

void imagefs_mount_counters(ImagefsMount *m, ImagefsCounters *ret) {
        *ret = (ImagefsCounters) {
#define LOAD(f) .f = __atomic_load_n(&m->counters.f, __ATOMIC_RELAXED)
                LOAD(metadata_round_trips),
                LOAD(content_round_trips),
                LOAD(bytes_fetched),
                LOAD(cache_hits),
                LOAD(cache_misses),
                LOAD(toc_bytes),
                LOAD(toc_load_usec),
                LOAD(errors),
#undef LOAD
        };
        imagefs_prefetch_counters(m->prefetch, &ret->prefetch);
}
