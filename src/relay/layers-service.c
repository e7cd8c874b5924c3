/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tonari.layers.v1.Layers: the ToC, file contents, and the calls without ToC. */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "layers.pb-c.h"
#include "relay.h"
#include "rpc-proto.h"
#include "string-util.h"

#define SERVICE "tonari.layers.v1.Layers"
/* Pieces of content: the size the protocol promises clients at most. */
#define PIECE_BYTES (1024U * 1024U)
/* Pieces of a ToC: smaller, since many clients fetch ToCs at once (every node mounting an image)
 * and each transfer holds a piece read and a piece packed in memory; at 256 KiB a 15 MB ToC is
 * 60 messages, which costs nothing measurable. */
#define TOC_PIECE_BYTES (256U * 1024U)
#define TOC_TRANSFER_BYTES (2U * TOC_PIECE_BYTES)


static int parse_layer(RpcCall *call, const char *s, Digest *ret) {
        int r = digest_from_string(s, ret);

        if (r < 0)
                rpc_call_set_error(call, "invalid layer digest \"%s\"", strna(s));
        return r < 0 ? -EINVAL : 0;
}

/* The layer's ToC for this call; the message names what is missing. */
static int open_toc(Relay *relay, RpcCall *call, const char *layer, Toc **ret) {
        Digest d;
        int r;

        r = parse_layer(call, layer, &d);
        if (r < 0)
                return r;
        r = relay_toc_get(relay, &d, ret);
        if (r == -ENOENT)
                rpc_call_set_error(call, "no layer %s", layer);
        else if (r == -EUCLEAN)
                rpc_call_set_error(call, "the table of contents of layer %s is damaged", layer);
        else if (r == -ENOMEM)
                rpc_call_set_error(call, "the tables of contents other calls hold fill ToCMemoryMax=; try again");
        else if (r == -E2BIG)
                rpc_call_set_error(call, "the table of contents of layer %s is larger than ToCMemoryMax=: use GetToC",
                                   layer);
        return r < 0 ? r : 0;
}

/* A ToC in memory is validated and checked on each access: an error there is damage, never a
 * read out of bounds. */
static int damaged(RpcCall *call, const char *layer, int r) {
        if (r == -EBADMSG) {
                rpc_call_set_error(call, "the table of contents of layer %s is damaged", layer);
                return -EUCLEAN;
        }
        return r;
}

static int get_entry(Toc *t, RpcCall *call, const char *layer, uint64_t ino, TocEntry *ret) {
        int r = toc_get(t, ino, ret);

        if (r == -ENOENT)
                rpc_call_set_error(call, "no inode %" PRIu64, ino);
        return damaged(call, layer, r);
}

static Tonari__Layers__V1__Type type_to_proto(TocType t) {
        /* The protocol's numbers are the ToC's. */
        return t >= TOC_TYPE_REGULAR && t <= TOC_TYPE_WHITEOUT ? (Tonari__Layers__V1__Type) t :
                                                                 TONARI__LAYERS__V1__TYPE__TYPE_UNSPECIFIED;
}

static void entry_to_proto(const TocEntry *e, Tonari__Layers__V1__Entry *m, char digest[static DIGEST_STRING_MAX]) {
        *m = (Tonari__Layers__V1__Entry) TONARI__LAYERS__V1__ENTRY__INIT;
        m->inode = e->ino;
        m->type = type_to_proto(e->type);
        m->mode = e->mode;
        m->uid = e->uid;
        m->gid = e->gid;
        m->size = e->type == TOC_TYPE_SYMLINK ? e->target_len : e->size;
        m->mtime_sec = e->mtime_sec;
        m->mtime_nsec = e->mtime_nsec;
        m->nlink = e->nlink;
        m->rdev_major = e->rdev_major;
        m->rdev_minor = e->rdev_minor;
        m->opaque = !!(e->flags & TOC_FLAG_OPAQUE);
        m->link_inode = e->link;
        if (e->type == TOC_TYPE_REGULAR) {
                Digest d;

                memcpy(d.bytes, e->digest, DIGEST_SIZE);
                m->content_digest = digest_to_string(&d, digest);
        }
}

/* The first piece carries the size and the digest the store recorded, so that a client checks what
 * it assembled against the record, not against bytes it was sent. */
static int send_toc_piece(RpcCall *call, const uint8_t *data, size_t n, uint64_t offset, uint64_t total,
                          const Digest *digest) {
        Tonari__Layers__V1__ToCPiece m = TONARI__LAYERS__V1__TO_CPIECE__INIT;
        char buf[DIGEST_STRING_MAX];

        m.offset = offset;
        m.data.data = (uint8_t *) data;
        m.data.len = n;
        if (offset == 0) {
                m.total_bytes = total;
                m.digest = digest_to_string(digest, buf);
        }
        return rpc_call_send_proto(call, &m.base);
}

static int send_toc(Relay *relay, RpcCall *call, const char *layer, const Digest *d) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        _cleanup_hasher_ Hasher *h = NULL;
        LayerInfo info;
        Digest sum;
        Toc *t;
        int r = 0;

        /* In memory already: those bytes were verified against the store's record when read. */
        if (relay_toc_get_cached(relay, d, &t, &sum) >= 0) {
                size_t n;
                const uint8_t *p = toc_data(t, &n);

                for (size_t off = 0; r >= 0 && off < n; off += TOC_PIECE_BYTES)
                        r = send_toc_piece(call, p + off, MIN((size_t) TOC_PIECE_BYTES, n - off), off, n, &sum);
                relay_toc_put(relay, t);
                return r;
        }

        /*
         * Else streamed from the file, a piece at a time (memory does not grow with the ToC or with
         * the number of clients), hashed as it is read: a file that is not what the store recorded
         * ends the call with DATA_LOSS, never with OK. Clients check the digest of what they
         * assembled too, before they use a byte of it.
         */
        fd = image_store_open_toc(relay->store, d, &info);
        if (fd == -ENOENT) {
                rpc_call_set_error(call, "no layer %s", layer);
                return fd;
        }
        if (fd == -EUCLEAN)
                rpc_call_set_error(call, "the table of contents of layer %s is damaged", layer);
        if (fd < 0)
                return fd;
        buf = malloc(TOC_PIECE_BYTES);
        if (!buf)
                return -ENOMEM;
        r = hasher_new(&h);
        if (r < 0)
                return r;
        for (uint64_t off = 0; off < info.toc_bytes;) {
                size_t n = (size_t) MIN((uint64_t) TOC_PIECE_BYTES, info.toc_bytes - off);
                ssize_t k = pread(fd, buf, n, (off_t) off);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        break; /* shorter than recorded: the digest below says so */
                r = hasher_update(h, buf, (size_t) k);
                if (r >= 0)
                        r = send_toc_piece(call, buf, (size_t) k, off, info.toc_bytes, &info.toc_digest);
                if (r < 0)
                        return r;
                off += (uint64_t) k;
        }
        r = hasher_finish(h, &sum);
        if (r < 0)
                return r;
        if (!digest_equal(&sum, &info.toc_digest)) {
                rpc_call_set_error(call, "the table of contents of layer %s is damaged: what was sent does not "
                                   "match its digest",
                                   layer);
                return -EUCLEAN;
        }
        return 0;
}

static int handle_get_toc(RpcCall *call, const void *data, size_t size, void *userdata) {
        Relay *relay = userdata;
        Digest d;
        int r;

        _cleanup_proto_ Tonari__Layers__V1__GetToCRequest *req = NULL;

        r = rpc_call_unpack(call, &tonari__layers__v1__get_to_crequest__descriptor, data, size, (ProtobufCMessage **) &req);
        if (r < 0)
                return r;
        if ((req->max_major_version ?: 1) < TOC_VERSION_MAJOR) {
                rpc_call_set_error(call, "the relay has ToCs of version %d only", TOC_VERSION_MAJOR);
                return -EBUSY; /* FAILED_PRECONDITION */
        }
        r = parse_layer(call, req->layer, &d);
        if (r < 0)
                return r;

        /* Memory for the pieces in flight, within ToCMemoryMax= with the ToCs themselves. */
        r = relay_toc_memory_acquire(relay, call, TOC_TRANSFER_BYTES);
        if (r < 0)
                return r;
        r = send_toc(relay, call, req->layer, &d);
        relay_toc_memory_release(relay, TOC_TRANSFER_BYTES);
        return r;
}

/* A call about an inode of a layer: the layer's ToC, held for the call, and the inode's entry. */
typedef struct LayerCall {
        Relay *relay;
        RpcCall *call;
        const char *layer;
        uint64_t ino; /* as the request names it */
        Toc *toc;
        TocEntry entry;
} LayerCall;

/* What a method needs of the inode its request names in "inode". */
enum {
        NO_ENTRY = -1, /* nothing: the request names no such inode */
        ANY_TYPE = 0,  /* its entry, whatever its type */
                       /* else its entry, which must be of that TocType */
};

/* Done with the ToC before the call is: a long stream of content holds no ToC memory. */
static void layer_call_release(LayerCall *c) {
        if (c->toc)
                relay_toc_put(c->relay, c->toc);
        c->toc = NULL;
}

static int check_type(LayerCall *c, TocType want) {
        static const char *const what[_TOC_TYPE_MAX] = {
                [TOC_TYPE_REGULAR] = "a regular file",
                [TOC_TYPE_DIRECTORY] = "a directory",
                [TOC_TYPE_SYMLINK] = "a symbolic link",
        };

        if (c->entry.type == want)
                return 0;
        rpc_call_set_error(c->call, "inode %" PRIu64 " is not %s", c->ino, what[want]);
        return want == TOC_TYPE_DIRECTORY ? -ENOTDIR : -EINVAL;
}

/*
 * The one shape of the Layers calls without ToC: unpack the request (of type d, with a "layer" and,
 * unless want is NO_ENTRY, an "inode"), hold the layer's ToC, find the inode's entry and check its
 * type, then let reply build the answer; the ToC is given back however that ends.
 */
static int layer_call(RpcCall *call, const void *data, size_t size, Relay *relay,
                      const ProtobufCMessageDescriptor *d, int want,
                      int (*reply)(LayerCall *c, const ProtobufCMessage *req)) {
        _cleanup_proto_ ProtobufCMessage *req = NULL;
        LayerCall c = { .relay = relay, .call = call };
        const char *const *layer;
        const uint64_t *ino;
        int r;

        r = rpc_call_unpack(call, d, data, size, &req);
        if (r < 0)
                return r;
        layer = rpc_proto_field(req, "layer", PROTOBUF_C_TYPE_STRING);
        ino = rpc_proto_field(req, "inode", PROTOBUF_C_TYPE_UINT64);
        assert(layer && (want == NO_ENTRY || ino));
        c.layer = *layer;
        c.ino = ino ? *ino : 0;

        r = open_toc(relay, call, c.layer, &c.toc);
        if (r < 0)
                return r;
        if (want != NO_ENTRY)
                r = get_entry(c.toc, call, c.layer, c.ino, &c.entry);
        if (r >= 0 && want > ANY_TYPE)
                r = check_type(&c, want);
        if (r >= 0)
                r = reply(&c, req);
        layer_call_release(&c);
        return r;
}

static int read_content(LayerCall *c, const ProtobufCMessage *m) {
        const Tonari__Layers__V1__ReadRequest *req = (const void *) m;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        uint64_t end, off, content_bytes = c->entry.size;
        Digest d;
        int r;

        memcpy(d.bytes, c->entry.digest, DIGEST_SIZE);
        layer_call_release(c);

        fd = image_store_open_object(c->relay->store, &d);
        if (fd < 0) {
                rpc_call_set_error(c->call, "the content of inode %" PRIu64 " is missing from the store", req->inode);
                return fd == -ENOENT ? -EUCLEAN : fd;
        }
        end = req->length == 0 || req->length > content_bytes - MIN(req->offset, content_bytes) ?
                      content_bytes :
                      req->offset + req->length;
        buf = malloc(PIECE_BYTES);
        if (!buf)
                return -ENOMEM;
        for (off = req->offset; off < end;) {
                Tonari__Layers__V1__ReadPiece p = TONARI__LAYERS__V1__READ_PIECE__INIT;
                ssize_t k = pread(fd, buf, (size_t) MIN((uint64_t) PIECE_BYTES, end - off), (off_t) off);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0) {
                        rpc_call_set_error(c->call, "the content of inode %" PRIu64 " is shorter than its size",
                                           req->inode);
                        return -EUCLEAN;
                }
                p.offset = off;
                p.data.data = buf;
                p.data.len = (size_t) k;
                r = rpc_call_send_proto(c->call, &p.base);
                if (r < 0)
                        return r;
                off += (uint64_t) k;
        }
        return 0;
}

/* ReadRanges: at most this many ranges in one call (the client's list of files to prefetch: an image
 * layer rarely has more regular files than that, and the request stays a few MiB at most). */
#define RANGES_MAX 65536U

typedef struct RangeSource {
        Digest digest;
        uint64_t offset, end;
} RangeSource;

typedef struct RangeBatcher {
        RpcCall *call;
        uint8_t *buf;                /* PIECE_BYTES */
        size_t used;
        Tonari__Layers__V1__RangeData pieces[64];
        Tonari__Layers__V1__RangeData *ptrs[64];
        size_t n;
} RangeBatcher;

static int batch_flush(RangeBatcher *b) {
        Tonari__Layers__V1__RangeBatch m = TONARI__LAYERS__V1__RANGE_BATCH__INIT;
        int r;

        if (b->n == 0)
                return 0;
        for (size_t i = 0; i < b->n; i++)
                b->ptrs[i] = &b->pieces[i];
        m.n_pieces = b->n;
        m.pieces = b->ptrs;
        r = rpc_call_send_proto(b->call, &m.base);
        b->n = 0;
        b->used = 0;
        return r;
}

/* The bytes of one range into the batch, sent whenever the batch is full. */
static int batch_range(RangeBatcher *b, int fd, uint32_t index, uint64_t inode, uint64_t off, uint64_t end) {
        int r;

        while (off < end) {
                ssize_t k;

                if (b->used == PIECE_BYTES || b->n == ELEMENTSOF(b->pieces)) {
                        r = batch_flush(b);
                        if (r < 0)
                                return r;
                }
                k = pread(fd, b->buf + b->used, (size_t) MIN((uint64_t) (PIECE_BYTES - b->used), end - off), (off_t) off);
                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0) {
                        rpc_call_set_error(b->call, "the content of inode %" PRIu64 " is shorter than its size", inode);
                        return -EUCLEAN;
                }
                b->pieces[b->n] = (Tonari__Layers__V1__RangeData) TONARI__LAYERS__V1__RANGE_DATA__INIT;
                b->pieces[b->n].range = index;
                b->pieces[b->n].offset = off;
                b->pieces[b->n].data.data = b->buf + b->used;
                b->pieces[b->n].data.len = (size_t) k;
                b->n++;
                b->used += (size_t) k;
                off += (uint64_t) k;
        }
        return 0;
}

static int read_ranges(LayerCall *c, const ProtobufCMessage *m) {
        const Tonari__Layers__V1__ReadRangesRequest *req = (const void *) m;
        _cleanup_free_ RangeSource *sources = NULL;
        _cleanup_free_ uint8_t *buf = NULL;
        RangeBatcher b = { .call = c->call };
        size_t n = 0;
        int r = 0;

        if (req->n_ranges > RANGES_MAX) {
                rpc_call_set_error(c->call, "%zu ranges asked, at most %u per call", req->n_ranges, RANGES_MAX);
                return -EINVAL;
        }
        /* Every range checked against the ToC first, the ToC given back before the bytes flow; a bad
         * range ends the call after the ranges before it, as the protocol says. */
        sources = new(RangeSource, req->n_ranges ?: 1);
        if (!sources)
                return -ENOMEM;
        for (; n < req->n_ranges; n++) {
                const Tonari__Layers__V1__Range *q = req->ranges[n];

                c->ino = q->inode;
                r = get_entry(c->toc, c->call, c->layer, q->inode, &c->entry);
                if (r >= 0)
                        r = check_type(c, TOC_TYPE_REGULAR);
                if (r < 0)
                        break;
                memcpy(sources[n].digest.bytes, c->entry.digest, DIGEST_SIZE);
                sources[n].offset = MIN(q->offset, c->entry.size);
                sources[n].end = q->length == 0 || q->length > c->entry.size - sources[n].offset ?
                                         c->entry.size :
                                         sources[n].offset + q->length;
        }
        layer_call_release(c);

        b.buf = buf = malloc(PIECE_BYTES);
        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                _cleanup_close_ int fd = -EBADF;
                int k;

                if (sources[i].offset >= sources[i].end)
                        continue;
                fd = image_store_open_object(c->relay->store, &sources[i].digest);
                if (fd < 0) {
                        rpc_call_set_error(c->call, "the content of inode %" PRIu64 " is missing from the store",
                                           req->ranges[i]->inode);
                        return fd == -ENOENT ? -EUCLEAN : fd;
                }
                k = batch_range(&b, fd, (uint32_t) i, req->ranges[i]->inode, sources[i].offset, sources[i].end);
                if (k < 0)
                        return k;
        }
        if (r < 0) {
                /* The error set above, after the data of the good ranges. */
                int k = batch_flush(&b);

                return k < 0 ? k : r;
        }
        return batch_flush(&b);
}

static int reply_entry(LayerCall *c, const ProtobufCMessage *req) {
        Tonari__Layers__V1__Entry m;
        char digest[DIGEST_STRING_MAX];

        entry_to_proto(&c->entry, &m, digest);
        return rpc_call_reply_proto(c->call, &m.base);
}

static int lookup(LayerCall *c, const ProtobufCMessage *m) {
        const Tonari__Layers__V1__LookupRequest *req = (const void *) m;
        uint64_t ino;
        int r;

        if (isempty(req->name) || strchr(req->name, '/') || streq(req->name, ".") || streq(req->name, "..")) {
                rpc_call_set_error(c->call, "invalid name \"%s\"", req->name);
                return -EINVAL;
        }
        r = damaged(c->call, c->layer, toc_lookup(c->toc, req->parent, req->name, strlen(req->name), &ino));
        if (r == -ENOENT)
                rpc_call_set_error(c->call, "no \"%s\" in inode %" PRIu64, req->name, req->parent);
        else if (r == -ENOTDIR)
                rpc_call_set_error(c->call, "inode %" PRIu64 " is not a directory", req->parent);
        if (r >= 0)
                r = get_entry(c->toc, c->call, c->layer, ino, &c->entry);
        if (r >= 0)
                r = reply_entry(c, m);
        return r;
}

static int readdir_batches(LayerCall *c, const ProtobufCMessage *m) {
        const Tonari__Layers__V1__ReadDirRequest *req = (const void *) m;
        /* Entries per batch: a few hundred names fit easily in one message. */
        enum { BATCH = 256 };
        Tonari__Layers__V1__DirEntry entries[BATCH], *ptrs[BATCH];
        Tonari__Layers__V1__Entry attrs[BATCH];
        char names[BATCH][TOC_NAME_MAX + 1], digests[BATCH][DIGEST_STRING_MAX];
        const TocEntry *d = &c->entry;
        uint64_t sent = 0, i;
        int r = 0;

        for (i = req->offset; r >= 0 && i < d->n_children && (req->max_entries == 0 || sent < req->max_entries);) {
                Tonari__Layers__V1__DirBatch b = TONARI__LAYERS__V1__DIR_BATCH__INIT;
                size_t n = 0;

                for (; n < BATCH && i < d->n_children && (req->max_entries == 0 || sent < req->max_entries);
                     n++, i++) {
                        TocEntry e;

                        r = toc_child(c->toc, d, (uint32_t) i, &e);
                        if (r < 0) {
                                rpc_call_set_error(c->call, "the table of contents of layer %s is damaged", c->layer);
                                r = -EUCLEAN;
                                break;
                        }
                        memcpy(names[n], e.name, e.name_len);
                        names[n][e.name_len] = 0;
                        entry_to_proto(&e, &attrs[n], digests[n]);
                        entries[n] = (Tonari__Layers__V1__DirEntry) TONARI__LAYERS__V1__DIR_ENTRY__INIT;
                        entries[n].name = names[n];
                        entries[n].entry = &attrs[n];
                        entries[n].next_offset = i + 1;
                        ptrs[n] = &entries[n];
                        sent++;
                }
                if (r < 0)
                        break;
                b.n_entries = n;
                b.entries = ptrs;
                r = rpc_call_send_proto(c->call, &b.base);
        }
        return r;
}

static int readlink_target(LayerCall *c, const ProtobufCMessage *req) {
        Tonari__Layers__V1__ReadLinkResponse m = TONARI__LAYERS__V1__READ_LINK_RESPONSE__INIT;
        _cleanup_free_ char *target = NULL;

        target = memdup_suffix0(c->entry.target, c->entry.target_len);
        if (!target)
                return -ENOMEM;
        m.target = target;
        return rpc_call_reply_proto(c->call, &m.base);
}

static int listxattr_names(LayerCall *c, const ProtobufCMessage *req) {
        Tonari__Layers__V1__ListXattrResponse m = TONARI__LAYERS__V1__LIST_XATTR_RESPONSE__INIT;
        char **names;
        int r = 0;

        names = new0(char *, c->entry.n_xattrs);
        if (!names)
                return -ENOMEM;
        for (uint32_t k = 0; r >= 0 && k < c->entry.n_xattrs; k++) {
                TocXattrView x;

                r = damaged(c->call, c->layer, toc_xattr(c->toc, &c->entry, k, &x));
                if (r < 0)
                        break;
                names[k] = memdup_suffix0(x.name, x.name_len);
                m.n_names = k + 1;
                if (!names[k])
                        r = -ENOMEM;
        }
        if (r >= 0) {
                m.names = names;
                r = rpc_call_reply_proto(c->call, &m.base);
        }
        for (size_t k = 0; k < m.n_names; k++)
                free(names[k]);
        free(names);
        return r;
}

static int getxattr_value(LayerCall *c, const ProtobufCMessage *m) {
        const Tonari__Layers__V1__GetXattrRequest *req = (const void *) m;
        Tonari__Layers__V1__GetXattrResponse reply = TONARI__LAYERS__V1__GET_XATTR_RESPONSE__INIT;
        _cleanup_free_ uint8_t *value = NULL;
        bool found = false;
        int r = 0;

        for (uint32_t k = 0; r >= 0 && k < c->entry.n_xattrs && !found; k++) {
                TocXattrView x;

                r = damaged(c->call, c->layer, toc_xattr(c->toc, &c->entry, k, &x));
                if (r < 0)
                        break;
                if (x.name_len == strlen(req->name) && memcmp(x.name, req->name, x.name_len) == 0) {
                        value = memdup(x.value, x.size);
                        r = value ? 0 : -ENOMEM;
                        reply.value.len = x.size;
                        found = true;
                }
        }
        if (r < 0)
                return r;
        if (!found) {
                rpc_call_set_error(c->call, "inode %" PRIu64 " has no extended attribute \"%s\"", req->inode,
                                   req->name);
                return -ENOENT;
        }
        reply.value.data = value;
        return rpc_call_reply_proto(c->call, &reply.base);
}

/* The handlers: which request, what of its inode, which reply. */
#define DEFINE_LAYER_HANDLER(name, request, want, reply)                                               \
        static int name(RpcCall *call, const void *data, size_t size, void *userdata) {                \
                return layer_call(call, data, size, userdata, &tonari__layers__v1__##request##__descriptor, \
                                  want, reply);                                                        \
        }

DEFINE_LAYER_HANDLER(handle_read, read_request, TOC_TYPE_REGULAR, read_content)
DEFINE_LAYER_HANDLER(handle_read_ranges, read_ranges_request, NO_ENTRY, read_ranges)
DEFINE_LAYER_HANDLER(handle_lookup, lookup_request, NO_ENTRY, lookup)
DEFINE_LAYER_HANDLER(handle_getattr, get_attr_request, ANY_TYPE, reply_entry)
DEFINE_LAYER_HANDLER(handle_readdir, read_dir_request, TOC_TYPE_DIRECTORY, readdir_batches)
DEFINE_LAYER_HANDLER(handle_readlink, read_link_request, TOC_TYPE_SYMLINK, readlink_target)
DEFINE_LAYER_HANDLER(handle_listxattr, list_xattr_request, ANY_TYPE, listxattr_names)
DEFINE_LAYER_HANDLER(handle_getxattr, get_xattr_request, ANY_TYPE, getxattr_value)

int relay_register_layers_service(Relay *r) {
        static const RpcMethod methods[] = {
                /* Streams of content wait for the disk and the client: threads of their own. */
                { "GetToC", RPC_SERVER_STREAM, RPC_METHOD_BLOCKING, handle_get_toc },
                { "Read", RPC_SERVER_STREAM, RPC_METHOD_BLOCKING, handle_read },
                { "ReadRanges", RPC_SERVER_STREAM, RPC_METHOD_BLOCKING, handle_read_ranges },
                { "Lookup", RPC_UNARY, 0, handle_lookup },
                { "GetAttr", RPC_UNARY, 0, handle_getattr },
                { "ReadDir", RPC_SERVER_STREAM, 0, handle_readdir },
                { "ReadLink", RPC_UNARY, 0, handle_readlink },
                { "ListXattr", RPC_UNARY, 0, handle_listxattr },
                { "GetXattr", RPC_UNARY, 0, handle_getxattr },
        };

        return rpc_server_add_service(r->server, SERVICE, methods, ELEMENTSOF(methods), r);
}
