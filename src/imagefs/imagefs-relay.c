/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc-util.h"
#include "imagefs-relay.h"
#include "layers.pb-c.h"
#include "relay.pb-c.h"
#include "rpc-proto.h"
#include "string-util.h"
#include "strv.h"

#define LAYERS "/tonari.layers.v1.Layers/"
/* How often a relay that cannot be reached is tried again within a call's deadline: often enough that
 * a relay back after a restart is noticed at once, rarely enough to cost nothing while it is away. */
#define RELAY_RETRY_USEC (100 * USEC_PER_MSEC)
/* gRPC waits up to this long (with 20% jitter) between reconnection attempts while calls fail; its default
 * grows to 120 s. A reconnection attempt costs a connect(2): twice a second is nothing. (gRPC 1.51 may
 * still take a few seconds more to try again once its channel went idle.) */
#define RELAY_RECONNECT_MAX_USEC (500 * USEC_PER_MSEC)

struct ImagefsRelay {
        char *address;
        RpcChannel *channel;
        /* Until then (CLOCK_MONOTONIC, atomic), calls that find the relay unreachable fail at once: a
         * call waited a whole timeout for it a moment ago. Without this, requests queued behind that
         * call (readahead of one file waits on the content's lock) would each wait a timeout of their
         * own, one after the other: a reader saw EIO only after 12 timeouts in TEST-08. */
        usec_t down_until_usec;
};

int imagefs_relay_new(const char *address, ImagefsRelay **ret) {
        RpcOptions o = { .reconnect_backoff_max_usec = RELAY_RECONNECT_MAX_USEC };
        ImagefsRelay *r;
        int k;

        r = new0(ImagefsRelay, 1);
        if (!r)
                return -ENOMEM;
        r->address = strdup(address);
        if (!r->address) {
                free(r);
                return -ENOMEM;
        }
        k = rpc_channel_new(address, &o, &r->channel);
        if (k < 0) {
                imagefs_relay_free(r);
                return k;
        }
        *ret = r;
        return 0;
}

ImagefsRelay *imagefs_relay_free(ImagefsRelay *r) {
        if (!r)
                return NULL;
        rpc_channel_free(r->channel);
        free(r->address);
        return mfree(r);
}

const char *imagefs_relay_address(const ImagefsRelay *r) {
        return r->address;
}

/* Whether a call that failed with k may be tried again before deadline (and waits for that). A relay that
 * cannot be reached is UNAVAILABLE; a call caught in a connection that just broke is CANCELLED (the
 * client cancels no call that it would try again). */
static bool retry(ImagefsRelay *r, int k, usec_t deadline) {
        usec_t n;

        if (k != -EAGAIN && k != -ECANCELED)
                return false;
        n = now(CLOCK_MONOTONIC);
        if (n + RELAY_RETRY_USEC >= deadline || n < __atomic_load_n(&r->down_until_usec, __ATOMIC_RELAXED))
                return false;
        (void) usleep(RELAY_RETRY_USEC);
        return true;
}

static usec_t deadline_of(usec_t timeout) {
        usec_t n = now(CLOCK_MONOTONIC);

        return timeout == USEC_INFINITY || timeout > USEC_INFINITY - n ? USEC_INFINITY : n + timeout;
}

static usec_t left(usec_t deadline) {
        usec_t n = now(CLOCK_MONOTONIC);

        if (deadline == USEC_INFINITY)
                return USEC_INFINITY;
        return deadline > n ? deadline - n : 1;
}

/* An unreachable relay that stayed so until the deadline is a timeout to the caller. A call that waited
 * its whole timeout for it makes the calls of the next timeout fail at once (see down_until_usec). */
static int final_error(ImagefsRelay *r, int k, usec_t deadline, usec_t timeout) {
        usec_t n;

        if (k != -EAGAIN && k != -ECANCELED)
                return k;
        n = now(CLOCK_MONOTONIC);
        if (timeout != USEC_INFINITY && n + RELAY_RETRY_USEC >= deadline)
                __atomic_store_n(&r->down_until_usec, n + timeout, __ATOMIC_RELAXED);
        return -ETIMEDOUT;
}

static int unary(ImagefsRelay *r, const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *d,
                 usec_t timeout, ProtobufCMessage **ret, char **ret_error) {
        usec_t deadline = deadline_of(timeout);
        int k;

        do
                k = rpc_unary_proto(r->channel, method, req, d, left(deadline), ret, ret_error);
        while (k < 0 && retry(r, k, deadline));
        return final_error(r, k, deadline, timeout);
}

static void node_from_proto(const Tonari__Layers__V1__Entry *m, ImagefsNode *ret) {
        *ret = (ImagefsNode) {
                .entry = m->link_inode,
                .type = (TocType) m->type,
                .mode = m->mode & 07777,
                .uid = m->uid,
                .gid = m->gid,
                .nlink = m->nlink,
                .size = m->size,
                .mtime_sec = m->mtime_sec,
                .mtime_nsec = m->mtime_nsec,
                .rdev_major = m->rdev_major,
                .rdev_minor = m->rdev_minor,
                .opaque = m->opaque && m->type == TONARI__LAYERS__V1__TYPE__TYPE_DIRECTORY,
        };
        if (m->type == TONARI__LAYERS__V1__TYPE__TYPE_REGULAR && digest_from_string(m->content_digest, &ret->digest) >= 0)
                ret->has_digest = true;
}

static bool node_valid(const Tonari__Layers__V1__Entry *m) {
        return m->type >= TONARI__LAYERS__V1__TYPE__TYPE_REGULAR && m->type <= TONARI__LAYERS__V1__TYPE__TYPE_WHITEOUT &&
               (m->type != TONARI__LAYERS__V1__TYPE__TYPE_REGULAR || !isempty(m->content_digest));
}

/* A call answered with an Entry. */
static int unary_node(ImagefsRelay *r, const char *method, const ProtobufCMessage *req, usec_t timeout,
                      ImagefsNode *ret, char **ret_error) {
        _cleanup_proto_ Tonari__Layers__V1__Entry *m = NULL;
        int k;

        k = unary(r, method, req, &tonari__layers__v1__entry__descriptor, timeout, (ProtobufCMessage **) &m, ret_error);
        if (k < 0)
                return k;
        if (!node_valid(m))
                return -EBADMSG;
        node_from_proto(m, ret);
        return 0;
}

int imagefs_relay_get_toc(ImagefsRelay *r, const char *layer, usec_t timeout, void **ret_data, size_t *ret_size,
                          Digest *ret_digest, char **ret_error) {
        Tonari__Layers__V1__GetToCRequest req = TONARI__LAYERS__V1__GET_TO_CREQUEST__INIT;
        usec_t deadline = deadline_of(timeout);
        int k;

        req.layer = (char *) layer;
        req.max_major_version = TOC_VERSION_MAJOR;
        for (;;) {
                _cleanup_rpc_stream_ RpcStream *s = NULL;
                _cleanup_free_ uint8_t *data = NULL;
                uint64_t got = 0, total = 0;
                Digest digest;

                k = rpc_stream_open_proto(r->channel, LAYERS "GetToC", &req.base, left(deadline), &s);
                while (k >= 0) {
                        _cleanup_proto_ Tonari__Layers__V1__ToCPiece *p = NULL;

                        k = rpc_stream_next_proto(s, &tonari__layers__v1__to_cpiece__descriptor, (ProtobufCMessage **) &p,
                                                  ret_error);
                        if (k <= 0)
                                break;
                        if (p->offset != got)
                                return set_error_message(ret_error, -EBADMSG, "a piece at offset %" PRIu64 " where offset %" PRIu64 " was due",
                                               p->offset, got);
                        if (got == 0) {
                                if (p->total_bytes == 0 || p->total_bytes > TOC_SIZE_MAX ||
                                    digest_from_string(p->digest, &digest) < 0)
                                        return set_error_message(ret_error, -EBADMSG, "a first piece announcing %" PRIu64 " bytes and digest '%s'",
                                                       p->total_bytes, p->digest);
                                total = p->total_bytes;
                                data = malloc(total);
                                if (!data)
                                        return -ENOMEM;
                        }
                        if (p->data.len > total - got)
                                return set_error_message(ret_error, -EBADMSG, "%zu bytes at offset %" PRIu64 ", beyond the %" PRIu64 " bytes announced",
                                               p->data.len, got, total);
                        memcpy(data + got, p->data.data, p->data.len);
                        got += p->data.len;
                }
                if (k == 0) {
                        if (got != total || got == 0)
                                return set_error_message(ret_error, -EBADMSG, "truncated at offset %" PRIu64 " of %" PRIu64 " bytes", got, total);
                        *ret_data = TAKE_PTR(data);
                        *ret_size = (size_t) got;
                        *ret_digest = digest;
                        return 0;
                }
                if (got > 0 || !retry(r, k, deadline))
                        return final_error(r, k, deadline, timeout);
        }
}

int imagefs_relay_read(ImagefsRelay *r, const char *layer, uint64_t inode, uint64_t offset, uint64_t length,
                       usec_t timeout, imagefs_sink_t sink, void *userdata, char **ret_error) {
        Tonari__Layers__V1__ReadRequest req = TONARI__LAYERS__V1__READ_REQUEST__INIT;
        usec_t deadline = deadline_of(timeout);
        int k;

        if (length == 0)
                return 0;
        req.layer = (char *) layer;
        req.inode = inode;
        req.offset = offset;
        req.length = length;
        for (;;) {
                _cleanup_rpc_stream_ RpcStream *s = NULL;
                uint64_t got = 0;

                k = rpc_stream_open_proto(r->channel, LAYERS "Read", &req.base, left(deadline), &s);
                while (k >= 0) {
                        _cleanup_proto_ Tonari__Layers__V1__ReadPiece *p = NULL;

                        k = rpc_stream_next_proto(s, &tonari__layers__v1__read_piece__descriptor, (ProtobufCMessage **) &p,
                                                  ret_error);
                        if (k <= 0)
                                break;
                        if (p->offset != offset + got || p->data.len > length - got)
                                return -EBADMSG;
                        k = sink(p->data.data, p->data.len, userdata);
                        if (k < 0)
                                return k;
                        got += p->data.len;
                }
                if (k == 0)
                        return 0;
                if (got > 0 || !retry(r, k, deadline))
                        return final_error(r, k, deadline, timeout);
        }
}

struct ImagefsRangeStream {
        ImagefsRelay *relay;
        Tonari__Layers__V1__ReadRangesRequest req;
        Tonari__Layers__V1__Range *ranges;
        Tonari__Layers__V1__Range **ptrs;
        char *layer;
        usec_t deadline, timeout;
        RpcStream *stream;
        Tonari__Layers__V1__RangeBatch *batch;
        size_t next_piece;
        bool delivered;
        pthread_mutex_t lock; /* stream and cancelled, for imagefs_range_stream_cancel() */
        bool cancelled;
        uint32_t range;   /* where the next piece must be: this range ... */
        uint64_t offset;  /* ... at this offset, or a later range */
};

ImagefsRangeStream *imagefs_range_stream_free(ImagefsRangeStream *s) {
        if (!s)
                return NULL;
        if (s->batch)
                protobuf_c_message_free_unpacked(&s->batch->base, NULL);
        rpc_stream_free(s->stream); /* cancels a stream not read to its end */
        pthread_mutex_destroy(&s->lock);
        free(s->ranges);
        free(s->ptrs);
        free(s->layer);
        return mfree(s);
}

int imagefs_relay_read_ranges(ImagefsRelay *r, const char *layer, const ImagefsRange *ranges, size_t n,
                              usec_t timeout, ImagefsRangeStream **ret) {
        _cleanup_(imagefs_range_stream_freep) ImagefsRangeStream *s = NULL;

        s = new0(ImagefsRangeStream, 1);
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        s->relay = r;
        s->deadline = deadline_of(timeout);
        s->timeout = timeout;
        s->layer = strdup(layer);
        s->ranges = new(Tonari__Layers__V1__Range, n ?: 1);
        s->ptrs = new(Tonari__Layers__V1__Range *, n ?: 1);
        if (!s->layer || !s->ranges || !s->ptrs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                s->ranges[i] = (Tonari__Layers__V1__Range) TONARI__LAYERS__V1__RANGE__INIT;
                s->ranges[i].inode = ranges[i].inode;
                s->ranges[i].offset = ranges[i].offset;
                s->ranges[i].length = ranges[i].length;
                s->ptrs[i] = &s->ranges[i];
        }
        s->req = (Tonari__Layers__V1__ReadRangesRequest) TONARI__LAYERS__V1__READ_RANGES_REQUEST__INIT;
        s->req.layer = s->layer;
        s->req.n_ranges = n;
        s->req.ranges = s->ptrs;
        s->offset = n > 0 ? ranges[0].offset : 0;
        *ret = TAKE_PTR(s);
        return 0;
}

int imagefs_range_stream_next(ImagefsRangeStream *s, uint32_t *ret_range, uint64_t *ret_offset, const void **ret_data,
                              size_t *ret_size, char **ret_error) {
        const Tonari__Layers__V1__RangeData *p;
        const Tonari__Layers__V1__Range *q;
        int k;

        while (!s->batch || s->next_piece >= s->batch->n_pieces) {
                if (s->batch)
                        protobuf_c_message_free_unpacked(&s->batch->base, NULL);
                s->batch = NULL;
                s->next_piece = 0;
                if (!s->stream) {
                        pthread_mutex_lock(&s->lock);
                        k = s->cancelled ? -ECANCELED :
                                           rpc_stream_open_proto(s->relay->channel, LAYERS "ReadRanges", &s->req.base,
                                                                 left(s->deadline), &s->stream);
                        pthread_mutex_unlock(&s->lock);
                        if (k < 0)
                                return k == -ECANCELED ? k : final_error(s->relay, k, s->deadline, s->timeout);
                }
                k = rpc_stream_next_proto(s->stream, &tonari__layers__v1__range_batch__descriptor,
                                          (ProtobufCMessage **) &s->batch, ret_error);
                if (k == 0)
                        return 0;
                if (k < 0) {
                        s->batch = NULL;
                        if (__atomic_load_n(&s->cancelled, __ATOMIC_RELAXED))
                                return -ECANCELED;
                        /* Nothing delivered yet: a relay away may come back before the deadline. */
                        if (!s->delivered && !__atomic_load_n(&s->cancelled, __ATOMIC_RELAXED) &&
                            retry(s->relay, k, s->deadline)) {
                                pthread_mutex_lock(&s->lock);
                                s->stream = rpc_stream_free(s->stream);
                                pthread_mutex_unlock(&s->lock);
                                if (ret_error)
                                        *ret_error = mfree(*ret_error);
                                continue;
                        }
                        return final_error(s->relay, k, s->deadline, s->timeout);
                }
        }
        p = s->batch->pieces[s->next_piece++];
        if (p->range >= s->req.n_ranges || p->range < s->range)
                return -EBADMSG;
        q = s->ranges + p->range;
        if (p->range > s->range) {
                s->range = p->range;
                s->offset = q->offset;
        }
        if (p->offset != s->offset || (q->length > 0 && p->data.len > q->offset + q->length - p->offset))
                return -EBADMSG;
        s->offset += p->data.len;
        s->delivered = true;
        *ret_range = p->range;
        *ret_offset = p->offset;
        *ret_data = p->data.data;
        *ret_size = p->data.len;
        return 1;
}

void imagefs_range_stream_cancel(ImagefsRangeStream *s) {
        pthread_mutex_lock(&s->lock);
        __atomic_store_n(&s->cancelled, true, __ATOMIC_RELAXED);
        if (s->stream)
                rpc_stream_cancel(s->stream);
        pthread_mutex_unlock(&s->lock);
}

int imagefs_relay_lookup(ImagefsRelay *r, const char *layer, uint64_t parent, const char *name, usec_t timeout,
                         ImagefsNode *ret, char **ret_error) {
        Tonari__Layers__V1__LookupRequest req = TONARI__LAYERS__V1__LOOKUP_REQUEST__INIT;

        req.layer = (char *) layer;
        req.parent = parent;
        req.name = (char *) name;
        return unary_node(r, LAYERS "Lookup", &req.base, timeout, ret, ret_error);
}

int imagefs_relay_getattr(ImagefsRelay *r, const char *layer, uint64_t inode, usec_t timeout, ImagefsNode *ret,
                          char **ret_error) {
        Tonari__Layers__V1__GetAttrRequest req = TONARI__LAYERS__V1__GET_ATTR_REQUEST__INIT;

        req.layer = (char *) layer;
        req.inode = inode;
        return unary_node(r, LAYERS "GetAttr", &req.base, timeout, ret, ret_error);
}

int imagefs_relay_readdir(ImagefsRelay *r, const char *layer, uint64_t inode, uint64_t offset, uint32_t max_entries,
                          usec_t timeout, imagefs_dirent_t f, void *userdata, char **ret_error) {
        Tonari__Layers__V1__ReadDirRequest req = TONARI__LAYERS__V1__READ_DIR_REQUEST__INIT;
        usec_t deadline = deadline_of(timeout);
        int k;

        req.layer = (char *) layer;
        req.inode = inode;
        req.offset = offset;
        req.max_entries = max_entries;
        for (;;) {
                _cleanup_rpc_stream_ RpcStream *s = NULL;
                bool delivered = false;

                k = rpc_stream_open_proto(r->channel, LAYERS "ReadDir", &req.base, left(deadline), &s);
                while (k >= 0) {
                        _cleanup_proto_ Tonari__Layers__V1__DirBatch *b = NULL;

                        k = rpc_stream_next_proto(s, &tonari__layers__v1__dir_batch__descriptor, (ProtobufCMessage **) &b,
                                                  ret_error);
                        if (k <= 0)
                                break;
                        for (size_t i = 0; i < b->n_entries; i++) {
                                const Tonari__Layers__V1__DirEntry *de = b->entries[i];
                                ImagefsNode node;

                                if (!de->entry || !node_valid(de->entry) || isempty(de->name))
                                        return -EBADMSG;
                                node_from_proto(de->entry, &node);
                                k = f(de->name, &node, de->next_offset, userdata);
                                delivered = true;
                                if (k != 0) {
                                        rpc_stream_cancel(s);
                                        return k < 0 ? k : 0;
                                }
                        }
                }
                if (k == 0)
                        return 0;
                if (delivered || !retry(r, k, deadline))
                        return final_error(r, k, deadline, timeout);
        }
}

int imagefs_relay_readlink(ImagefsRelay *r, const char *layer, uint64_t inode, usec_t timeout, char **ret_target,
                           char **ret_error) {
        Tonari__Layers__V1__ReadLinkRequest req = TONARI__LAYERS__V1__READ_LINK_REQUEST__INIT;
        _cleanup_proto_ Tonari__Layers__V1__ReadLinkResponse *m = NULL;
        char *t;
        int k;

        req.layer = (char *) layer;
        req.inode = inode;
        k = unary(r, LAYERS "ReadLink", &req.base, &tonari__layers__v1__read_link_response__descriptor, timeout,
                  (ProtobufCMessage **) &m, ret_error);
        if (k < 0)
                return k;
        t = strdup(m->target);
        if (!t)
                return -ENOMEM;
        *ret_target = t;
        return 0;
}

int imagefs_relay_listxattr(ImagefsRelay *r, const char *layer, uint64_t inode, usec_t timeout, char ***ret_names,
                            char **ret_error) {
        Tonari__Layers__V1__ListXattrRequest req = TONARI__LAYERS__V1__LIST_XATTR_REQUEST__INIT;
        _cleanup_proto_ Tonari__Layers__V1__ListXattrResponse *m = NULL;
        _cleanup_strv_free_ char **names = NULL;
        int k;

        req.layer = (char *) layer;
        req.inode = inode;
        k = unary(r, LAYERS "ListXattr", &req.base, &tonari__layers__v1__list_xattr_response__descriptor, timeout,
                  (ProtobufCMessage **) &m, ret_error);
        if (k < 0)
                return k;
        names = new0(char *, 1);
        if (!names)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_names; i++) {
                k = strv_extend(&names, m->names[i]);
                if (k < 0)
                        return k;
        }
        *ret_names = TAKE_PTR(names);
        return 0;
}

int imagefs_relay_getxattr(ImagefsRelay *r, const char *layer, uint64_t inode, const char *name, usec_t timeout,
                           void **ret_value, size_t *ret_size, char **ret_error) {
        Tonari__Layers__V1__GetXattrRequest req = TONARI__LAYERS__V1__GET_XATTR_REQUEST__INIT;
        _cleanup_proto_ Tonari__Layers__V1__GetXattrResponse *m = NULL;
        void *v;
        int k;

        req.layer = (char *) layer;
        req.inode = inode;
        req.name = (char *) name;
        k = unary(r, LAYERS "GetXattr", &req.base, &tonari__layers__v1__get_xattr_response__descriptor, timeout,
                  (ProtobufCMessage **) &m, ret_error);
        if (k < 0)
                return k;
        v = memdup(m->value.data, m->value.len);
        if (!v && m->value.len > 0)
                return -ENOMEM;
        *ret_value = v;
        *ret_size = m->value.len;
        return 0;
}

int imagefs_relay_get_image(ImagefsRelay *r, const char *name, usec_t timeout, ImagefsImageLayer **ret_layers,
                            size_t *ret_n_layers, char **ret_error) {
        _cleanup_proto_ Tonari__Relay__V1__Image *m = NULL;
        Tonari__Relay__V1__GetImageRequest req = TONARI__RELAY__V1__GET_IMAGE_REQUEST__INIT;
        _cleanup_free_ ImagefsImageLayer *layers = NULL;
        int k;

        req.name = (char *) name;
        k = unary(r, "/tonari.relay.v1.Relay/GetImage", &req.base, &tonari__relay__v1__image__descriptor, timeout,
                  (ProtobufCMessage **) &m, ret_error);
        if (k < 0)
                return k;
        if (m->n_layers == 0)
                return set_error_message(ret_error, -EBADMSG, "the relay describes image '%s' without layers", name);
        layers = new0(ImagefsImageLayer, m->n_layers);
        if (!layers)
                return -ENOMEM;
        for (size_t i = 0; i < m->n_layers; i++) {
                const Tonari__Relay__V1__Layer *l = m->layers[i];

                if (digest_from_string(l->diff_id, &layers[i].diff_id) < 0 ||
                    (!isempty(l->toc_digest) && digest_from_string(l->toc_digest, &layers[i].toc_digest) < 0))
                        return set_error_message(ret_error, -EBADMSG, "the relay describes layer %zu of image '%s' with diff_id '%s' and "
                                       "ToC digest '%s'", i, name, l->diff_id, l->toc_digest);
                layers[i].has_toc_digest = !isempty(l->toc_digest);
        }
        *ret_n_layers = m->n_layers;
        *ret_layers = TAKE_PTR(layers);
        return 0;
}
