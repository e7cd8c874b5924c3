/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tonari.layers.v1 as tonari-imagefs will use it, against a running relay (test-relay.sh):
 *   test-layers-client ADDRESS LAYER-DIFF-ID TOC-FILE
 * fetches the layer's ToC over GetToC and checks it is the store's file byte for byte; then, for
 * every entry of that ToC, asks the calls without ToC (Lookup, GetAttr, ReadLink, ListXattr,
 * GetXattr, ReadDir) and checks each answer against the ToC, and reads every regular file with
 * Read, checking its sha256 against the ToC's content digest. Prints the numbers it checked.
 *
 * and then reads all regular files again in one ReadRanges call, and once more with a directory among them
 * (refused after the files before it).
 *
 * Single calls, for tests that break things (test-relay-hardening.sh) and for bench/:
 *   test-layers-client readdir ADDRESS LAYER INODE   "OK <n> entries <names...>"
 *   test-layers-client gettoc ADDRESS LAYER FILE     "OK <bytes> <digest>", the ToC written to FILE
 *   test-layers-client gettoc-many ADDRESS LAYER N   N GetToC calls at once, each read to its end
 * A failed call prints "ERROR <errno name> <message>" and exits 3.
 */
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "alloc-util.h"
#include "digest.h"
#include "fd-util.h"
#include "fileio.h"
#include "layers.pb-c.h"
#include "rpc-proto.h"
#include "string-util.h"
#include "toc.h"

#define LAYERS "/tonari.layers.v1.Layers/"
#define TIMEOUT (30 * USEC_PER_SEC)

#define CHECK(cond, ...)                                                                               \
        do {                                                                                           \
                if (!(cond)) {                                                                         \
                        fprintf(stderr, "FAILED %s:%d: ", __FILE__, __LINE__);                         \
                        fprintf(stderr, __VA_ARGS__);                                                  \
                        fputc('\n', stderr);                                                           \
                        exit(EXIT_FAILURE);                                                            \
                }                                                                                      \
        } while (0)

static RpcChannel *channel;
static char *layer;

static ProtobufCMessage *unary(const char *method, const ProtobufCMessage *req, const ProtobufCMessageDescriptor *d,
                               int expect) {
        _cleanup_free_ char *err = NULL;
        ProtobufCMessage *m = NULL;
        int r;

        r = rpc_unary_proto(channel, method, req, d, TIMEOUT, &m, &err);
        CHECK(r == expect, "%s: %d (%s), expected %d", method, r, strna(err), expect);
        return m;
}

static void check_entry(const Toc *t, const TocEntry *e, const Tonari__Layers__V1__Entry *m) {
        CHECK(m->inode == e->ino, "inode %" PRIu64 " vs %" PRIu64, m->inode, e->ino);
        CHECK((int) m->type == (int) e->type, "type of %" PRIu64, e->ino);
        CHECK(m->mode == e->mode && m->uid == e->uid && m->gid == e->gid && m->nlink == e->nlink,
              "attributes of %" PRIu64, e->ino);
        CHECK(m->mtime_sec == e->mtime_sec && m->mtime_nsec == e->mtime_nsec, "mtime of %" PRIu64, e->ino);
        CHECK(m->link_inode == e->link, "link of %" PRIu64, e->ino);
        CHECK(m->opaque == !!(e->flags & TOC_FLAG_OPAQUE), "opaque of %" PRIu64, e->ino);
        if (e->type == TOC_TYPE_REGULAR) {
                char d[DIGEST_STRING_MAX];
                Digest x;

                memcpy(x.bytes, e->digest, DIGEST_SIZE);
                CHECK(streq(m->content_digest, digest_to_string(&x, d)), "digest of %" PRIu64, e->ino);
                CHECK(m->size == e->size, "size of %" PRIu64, e->ino);
        }
}

static int fail(int r, const char *message) {
        printf("ERROR %s %s\n", strerrorname_np(-r) ?: "?", strna(message));
        return 3;
}

static int cmd_readdir(const char *inode) {
        Tonari__Layers__V1__ReadDirRequest rd = TONARI__LAYERS__V1__READ_DIR_REQUEST__INIT;
        _cleanup_rpc_stream_ RpcStream *s = NULL;
        _cleanup_free_ char *err = NULL, *names = NULL;
        uint64_t n = 0;
        int r;

        rd.layer = layer;
        rd.inode = strtoull(inode, NULL, 10);
        r = rpc_stream_open_proto(channel, LAYERS "ReadDir", &rd.base, TIMEOUT, &s);
        if (r < 0)
                return fail(r, NULL);
        for (;;) {
                Tonari__Layers__V1__DirBatch *b = NULL;

                r = rpc_stream_next_proto(s, &tonari__layers__v1__dir_batch__descriptor, (ProtobufCMessage **) &b, &err);
                if (r < 0)
                        return fail(r, err);
                if (r == 0)
                        break;
                for (size_t x = 0; x < b->n_entries; x++, n++)
                        if (n < 8) {
                                char *j = strjoin(strempty(names), " ", b->entries[x]->name);

                                CHECK(j, "oom");
                                free_and_replace(names, j);
                        }
                protobuf_c_message_free_unpacked(&b->base, NULL);
        }
        printf("OK %" PRIu64 " entries%s\n", n, strempty(names));
        return 0;
}

/* One GetToC to its end: the bytes into fd (if >= 0), the size and the digest announced. */
static int get_toc(int fd, uint64_t *ret_size, char ret_digest[static DIGEST_STRING_MAX], char **ret_error) {
        Tonari__Layers__V1__GetToCRequest req = TONARI__LAYERS__V1__GET_TO_CREQUEST__INIT;
        _cleanup_rpc_stream_ RpcStream *s = NULL;
        uint64_t got = 0;
        int r;

        req.layer = layer;
        r = rpc_stream_open_proto(channel, LAYERS "GetToC", &req.base, TIMEOUT, &s);
        if (r < 0)
                return r;
        for (;;) {
                Tonari__Layers__V1__ToCPiece *p = NULL;

                r = rpc_stream_next_proto(s, &tonari__layers__v1__to_cpiece__descriptor, (ProtobufCMessage **) &p,
                                          ret_error);
                if (r <= 0)
                        break;
                if (p->offset == 0)
                        snprintf(ret_digest, DIGEST_STRING_MAX, "%s", p->digest);
                if (fd >= 0)
                        CHECK(pwrite(fd, p->data.data, p->data.len, (off_t) p->offset) == (ssize_t) p->data.len, "write");
                got += p->data.len;
                protobuf_c_message_free_unpacked(&p->base, NULL);
        }
        *ret_size = got;
        return r;
}

static int cmd_gettoc(const char *path) {
        _cleanup_close_ int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        _cleanup_free_ char *err = NULL;
        char digest[DIGEST_STRING_MAX] = "";
        uint64_t size;
        int r;

        CHECK(fd >= 0, "%s: %m", path);
        r = get_toc(fd, &size, digest, &err);
        if (r < 0)
                return fail(r, err);
        printf("OK %" PRIu64 " %s\n", size, digest);
        return 0;
}

static void *get_toc_thread(void *userdata) {
        _cleanup_free_ char *err = NULL;
        char digest[DIGEST_STRING_MAX];
        uint64_t size;
        int r;

        r = get_toc(-EBADF, &size, digest, &err);
        CHECK(r == 0, "GetToC: %s", strna(err));
        *(uint64_t *) userdata = size;
        return NULL;
}

static int cmd_gettoc_many(const char *count) {
        unsigned n = (unsigned) strtoul(count, NULL, 10);
        _cleanup_free_ pthread_t *threads = new0(pthread_t, n);
        _cleanup_free_ uint64_t *sizes = new0(uint64_t, n);

        CHECK(n > 0 && threads && sizes, "bad count or oom");
        for (unsigned i = 0; i < n; i++)
                CHECK(pthread_create(&threads[i], NULL, get_toc_thread, &sizes[i]) == 0, "pthread_create");
        for (unsigned i = 0; i < n; i++)
                CHECK(pthread_join(threads[i], NULL) == 0, "pthread_join");
        for (unsigned i = 1; i < n; i++)
                CHECK(sizes[i] == sizes[0], "sizes differ");
        printf("OK %u calls of %" PRIu64 " bytes\n", n, sizes[0]);
        return 0;
}

/*
 * ReadRanges over ranges (inode, offset 0, length 0) of the ToC: each range's bytes in order and equal
 * to the ToC's digest, as far as the call goes; returns the call's result and the number of ranges
 * whose bytes all came.
 */
static int read_ranges(const Toc *t, const uint64_t *inodes, size_t n, uint64_t *ret_bytes, size_t *ret_complete,
                       char **ret_error) {
        Tonari__Layers__V1__ReadRangesRequest rq = TONARI__LAYERS__V1__READ_RANGES_REQUEST__INIT;
        _cleanup_free_ Tonari__Layers__V1__Range *ranges = new(Tonari__Layers__V1__Range, n);
        _cleanup_free_ Tonari__Layers__V1__Range **ptrs = new(Tonari__Layers__V1__Range *, n);
        _cleanup_rpc_stream_ RpcStream *s = NULL;
        _cleanup_hasher_ Hasher *h = NULL;
        uint64_t got = 0, bytes = 0;
        size_t cur = 0, complete = 0;
        TocEntry e;
        Digest d;
        int r;

        CHECK(ranges && ptrs && hasher_new(&h) == 0, "oom");
        for (size_t i = 0; i < n; i++) {
                ranges[i] = (Tonari__Layers__V1__Range) TONARI__LAYERS__V1__RANGE__INIT;
                ranges[i].inode = inodes[i];
                ptrs[i] = &ranges[i];
        }
        rq.layer = layer;
        rq.n_ranges = n;
        rq.ranges = ptrs;
        CHECK(rpc_stream_open_proto(channel, LAYERS "ReadRanges", &rq.base, TIMEOUT, &s) == 0, "ReadRanges");
        /* A range is complete when its bytes match once the stream moved past it (or ended). */
#define FINISH_RANGE()                                                                                         \
        do {                                                                                                   \
                CHECK(toc_get(t, inodes[cur], &e) == 0, "toc_get");                                            \
                CHECK(got == e.size, "ReadRanges: range %zu has %" PRIu64 " of %" PRIu64 " bytes", cur, got, e.size); \
                CHECK(hasher_finish(h, &d) == 0 && memcmp(d.bytes, e.digest, DIGEST_SIZE) == 0,                \
                      "ReadRanges: range %zu does not match the ToC's digest", cur);                            \
                complete++;                                                                                    \
                got = 0;                                                                                       \
        } while (0)
        for (;;) {
                Tonari__Layers__V1__RangeBatch *b = NULL;

                r = rpc_stream_next_proto(s, &tonari__layers__v1__range_batch__descriptor, (ProtobufCMessage **) &b,
                                          ret_error);
                if (r <= 0)
                        break;
                CHECK(b->n_pieces > 0, "ReadRanges: an empty batch");
                for (size_t k = 0; k < b->n_pieces; k++) {
                        const Tonari__Layers__V1__RangeData *p = b->pieces[k];

                        CHECK(p->range >= cur && p->range < n, "ReadRanges: range %u after %zu", p->range, cur);
                        /* Ranges skipped are empty files. */
                        while (cur < p->range) {
                                FINISH_RANGE();
                                cur++;
                        }
                        CHECK(p->offset == got, "ReadRanges: range %zu piece at %" PRIu64, cur, p->offset);
                        (void) hasher_update(h, p->data.data, p->data.len);
                        got += p->data.len;
                        bytes += p->data.len;
                }
                protobuf_c_message_free_unpacked(&b->base, NULL);
        }
        /* At the end, or at an error: the ranges of regular files up to the first that is none. */
        for (; cur < n; cur++) {
                CHECK(toc_get(t, inodes[cur], &e) == 0, "toc_get");
                if (e.type != TOC_TYPE_REGULAR)
                        break;
                FINISH_RANGE();
        }
#undef FINISH_RANGE
        *ret_bytes = bytes;
        *ret_complete = complete;
        return r;
}

int main(int argc, char *argv[]) {
        _cleanup_free_ char *local = NULL, *remote = NULL, *err = NULL;
        _cleanup_toc_ Toc *t = NULL;
        size_t local_size, remote_size = 0, total = 0;
        unsigned long n_lookups = 0, n_reads = 0, n_xattrs = 0, n_dirs = 0;
        uint64_t read_bytes = 0;
        int r;

        if (argc == 5 && (streq(argv[1], "readdir") || streq(argv[1], "gettoc") || streq(argv[1], "gettoc-many"))) {
                layer = argv[3];
                CHECK(rpc_channel_new(argv[2], NULL, &channel) == 0, "channel to %s", argv[2]);
                r = streq(argv[1], "readdir") ? cmd_readdir(argv[4]) :
                    streq(argv[1], "gettoc")  ? cmd_gettoc(argv[4]) :
                                                cmd_gettoc_many(argv[4]);
                rpc_channel_free(channel);
                return r;
        }
        CHECK(argc == 4, "usage: test-layers-client ADDRESS LAYER TOC-FILE");
        layer = argv[2];
        CHECK(rpc_channel_new(argv[1], NULL, &channel) == 0, "channel to %s", argv[1]);
        CHECK(read_full_file(argv[3], &local, &local_size) == 0, "reading %s", argv[3]);

        /* GetToC: the pieces in order, the whole equal to the store's file and to its digest. */
        {
                Tonari__Layers__V1__GetToCRequest req = TONARI__LAYERS__V1__GET_TO_CREQUEST__INIT;
                _cleanup_rpc_stream_ RpcStream *s = NULL;
                char want[DIGEST_STRING_MAX] = "";
                Digest d;

                req.layer = layer;
                CHECK(rpc_stream_open_proto(channel, LAYERS "GetToC", &req.base, TIMEOUT, &s) == 0, "GetToC");
                remote = malloc(local_size + 1);
                CHECK(remote, "oom");
                for (;;) {
                        Tonari__Layers__V1__ToCPiece *p = NULL;

                        r = rpc_stream_next_proto(s, &tonari__layers__v1__to_cpiece__descriptor, (ProtobufCMessage **) &p,
                                                  &err);
                        CHECK(r >= 0, "GetToC: %s", strna(err));
                        if (r == 0)
                                break;
                        CHECK(p->offset == remote_size, "piece at %" PRIu64 ", expected %zu", p->offset, remote_size);
                        if (p->offset == 0) {
                                total = p->total_bytes;
                                snprintf(want, sizeof(want), "%s", p->digest);
                        }
                        CHECK(remote_size + p->data.len <= local_size, "more ToC than the store has");
                        memcpy(remote + remote_size, p->data.data, p->data.len);
                        remote_size += p->data.len;
                        protobuf_c_message_free_unpacked(&p->base, NULL);
                }
                CHECK(remote_size == local_size && total == local_size, "ToC size %zu, store %zu", remote_size, local_size);
                CHECK(memcmp(remote, local, local_size) == 0, "ToC differs from the store's");
                CHECK(digest_buffer(remote, remote_size, &d) == 0, "digest");
                char got[DIGEST_STRING_MAX];
                CHECK(streq(want, digest_to_string(&d, got)), "ToC digest %s, announced %s", got, want);
        }

        CHECK(toc_open_buffer(remote, remote_size, &t) == 0, "the ToC received does not open");

        for (uint64_t i = 0; i < toc_n_entries(t); i++) {
                Tonari__Layers__V1__GetAttrRequest ga = TONARI__LAYERS__V1__GET_ATTR_REQUEST__INIT;
                Tonari__Layers__V1__Entry *m;
                TocEntry e;

                (void) toc_get(t, i, &e);
                ga.layer = layer;
                ga.inode = i;
                m = (Tonari__Layers__V1__Entry *) unary(LAYERS "GetAttr", &ga.base, &tonari__layers__v1__entry__descriptor, 0);
                check_entry(t, &e, m);
                protobuf_c_message_free_unpacked(&m->base, NULL);

                if (i > 0) {
                        Tonari__Layers__V1__LookupRequest lk = TONARI__LAYERS__V1__LOOKUP_REQUEST__INIT;
                        _cleanup_free_ char *name = memdup_suffix0(e.name, e.name_len);

                        lk.layer = layer;
                        lk.parent = e.parent;
                        lk.name = name;
                        m = (Tonari__Layers__V1__Entry *) unary(LAYERS "Lookup", &lk.base,
                                                                &tonari__layers__v1__entry__descriptor, 0);
                        CHECK(m->inode == i, "Lookup of %s gave %" PRIu64 ", not %" PRIu64, name, m->inode, i);
                        protobuf_c_message_free_unpacked(&m->base, NULL);
                        n_lookups++;
                }

                if (e.type == TOC_TYPE_SYMLINK) {
                        Tonari__Layers__V1__ReadLinkRequest rl = TONARI__LAYERS__V1__READ_LINK_REQUEST__INIT;
                        Tonari__Layers__V1__ReadLinkResponse *l;

                        rl.layer = layer;
                        rl.inode = i;
                        l = (Tonari__Layers__V1__ReadLinkResponse *) unary(
                                LAYERS "ReadLink", &rl.base, &tonari__layers__v1__read_link_response__descriptor, 0);
                        CHECK(strlen(l->target) == e.target_len && memcmp(l->target, e.target, e.target_len) == 0,
                              "ReadLink of %" PRIu64, i);
                        protobuf_c_message_free_unpacked(&l->base, NULL);
                }

                if (e.n_xattrs > 0) {
                        Tonari__Layers__V1__ListXattrRequest lx = TONARI__LAYERS__V1__LIST_XATTR_REQUEST__INIT;
                        Tonari__Layers__V1__ListXattrResponse *names;

                        lx.layer = layer;
                        lx.inode = i;
                        names = (Tonari__Layers__V1__ListXattrResponse *) unary(
                                LAYERS "ListXattr", &lx.base, &tonari__layers__v1__list_xattr_response__descriptor, 0);
                        CHECK(names->n_names == e.n_xattrs, "ListXattr of %" PRIu64, i);
                        for (size_t k = 0; k < names->n_names; k++) {
                                Tonari__Layers__V1__GetXattrRequest gx = TONARI__LAYERS__V1__GET_XATTR_REQUEST__INIT;
                                Tonari__Layers__V1__GetXattrResponse *v;
                                TocXattrView x;

                                (void) toc_xattr(t, &e, (uint32_t) k, &x);
                                gx.layer = layer;
                                gx.inode = i;
                                gx.name = names->names[k];
                                v = (Tonari__Layers__V1__GetXattrResponse *) unary(
                                        LAYERS "GetXattr", &gx.base, &tonari__layers__v1__get_xattr_response__descriptor, 0);
                                CHECK(v->value.len == x.size && (x.size == 0 || memcmp(v->value.data, x.value, x.size) == 0),
                                      "GetXattr %s of %" PRIu64, names->names[k], i);
                                protobuf_c_message_free_unpacked(&v->base, NULL);
                                n_xattrs++;
                        }
                        protobuf_c_message_free_unpacked(&names->base, NULL);
                }

                if (e.type == TOC_TYPE_DIRECTORY) {
                        Tonari__Layers__V1__ReadDirRequest rd = TONARI__LAYERS__V1__READ_DIR_REQUEST__INIT;
                        _cleanup_rpc_stream_ RpcStream *s = NULL;
                        uint64_t k = 0;

                        rd.layer = layer;
                        rd.inode = i;
                        CHECK(rpc_stream_open_proto(channel, LAYERS "ReadDir", &rd.base, TIMEOUT, &s) == 0, "ReadDir");
                        for (;;) {
                                Tonari__Layers__V1__DirBatch *b = NULL;

                                r = rpc_stream_next_proto(s, &tonari__layers__v1__dir_batch__descriptor,
                                                          (ProtobufCMessage **) &b, &err);
                                CHECK(r >= 0, "ReadDir %" PRIu64 ": %s", i, strna(err));
                                if (r == 0)
                                        break;
                                for (size_t x = 0; x < b->n_entries; x++, k++) {
                                        TocEntry c;

                                        (void) toc_get(t, e.first_child + k, &c);
                                        CHECK(strlen(b->entries[x]->name) == c.name_len &&
                                              memcmp(b->entries[x]->name, c.name, c.name_len) == 0 &&
                                              b->entries[x]->entry->inode == c.ino && b->entries[x]->next_offset == k + 1,
                                              "ReadDir %" PRIu64 " entry %" PRIu64, i, k);
                                }
                                protobuf_c_message_free_unpacked(&b->base, NULL);
                        }
                        CHECK(k == e.n_children, "ReadDir %" PRIu64 ": %" PRIu64 " of %u entries", i, k, e.n_children);
                        n_dirs++;
                }

                if (e.type == TOC_TYPE_REGULAR && e.link == i) {
                        Tonari__Layers__V1__ReadRequest rq = TONARI__LAYERS__V1__READ_REQUEST__INIT;
                        _cleanup_rpc_stream_ RpcStream *s = NULL;
                        _cleanup_hasher_ Hasher *h = NULL;
                        uint64_t got = 0;
                        Digest d;

                        rq.layer = layer;
                        rq.inode = i;
                        CHECK(hasher_new(&h) == 0, "hasher");
                        CHECK(rpc_stream_open_proto(channel, LAYERS "Read", &rq.base, TIMEOUT, &s) == 0, "Read");
                        for (;;) {
                                Tonari__Layers__V1__ReadPiece *p = NULL;

                                r = rpc_stream_next_proto(s, &tonari__layers__v1__read_piece__descriptor,
                                                          (ProtobufCMessage **) &p, &err);
                                CHECK(r >= 0, "Read %" PRIu64 ": %s", i, strna(err));
                                if (r == 0)
                                        break;
                                CHECK(p->offset == got, "Read %" PRIu64 ": piece at %" PRIu64, i, p->offset);
                                (void) hasher_update(h, p->data.data, p->data.len);
                                got += p->data.len;
                                protobuf_c_message_free_unpacked(&p->base, NULL);
                        }
                        CHECK(got == e.size, "Read %" PRIu64 ": %" PRIu64 " of %" PRIu64 " bytes", i, got, e.size);
                        CHECK(hasher_finish(h, &d) == 0 && memcmp(d.bytes, e.digest, DIGEST_SIZE) == 0,
                              "Read %" PRIu64 ": content does not match the ToC's digest", i);
                        n_reads++;
                        read_bytes += got;
                }
        }

        /* All regular files in one ReadRanges call: the same bytes as the Reads. Then the same with the root
         * directory in the middle: the files before it, then the error. */
        {
                _cleanup_free_ uint64_t *inodes = new(uint64_t, toc_n_entries(t) + 1);
                size_t n = 0, complete;
                uint64_t bytes;

                CHECK(inodes, "oom");
                for (uint64_t i = 0; i < toc_n_entries(t); i++) {
                        TocEntry e;

                        CHECK(toc_get(t, i, &e) == 0, "toc_get");
                        if (e.type == TOC_TYPE_REGULAR && e.link == i)
                                inodes[n++] = i;
                }
                r = read_ranges(t, inodes, n, &bytes, &complete, &err);
                CHECK(r == 0, "ReadRanges: %s", strna(err));
                CHECK(complete == n && bytes == read_bytes, "ReadRanges: %zu of %zu ranges, %" PRIu64 " of %" PRIu64 " bytes",
                      complete, n, bytes, read_bytes);
                if (n >= 2) {
                        memmove(inodes + n / 2 + 1, inodes + n / 2, (n - n / 2) * sizeof(uint64_t));
                        inodes[n / 2] = 0;
                        err = mfree(err);
                        r = read_ranges(t, inodes, n / 2 + 1, &bytes, &complete, &err);
                        CHECK(r == -EINVAL && complete == n / 2, "ReadRanges with a directory: %d (%s), %zu ranges", r,
                              strna(err), complete);
                        err = mfree(err);
                }
                printf("ReadRanges: %zu files in one call (%" PRIu64 " bytes), a directory refused after %zu\n", n,
                       read_bytes, n / 2);
        }

        /* What a client can get wrong. */
        {
                Tonari__Layers__V1__GetAttrRequest ga = TONARI__LAYERS__V1__GET_ATTR_REQUEST__INIT;
                Tonari__Layers__V1__LookupRequest lk = TONARI__LAYERS__V1__LOOKUP_REQUEST__INIT;

                ga.layer = layer;
                ga.inode = toc_n_entries(t);
                (void) unary(LAYERS "GetAttr", &ga.base, &tonari__layers__v1__entry__descriptor, -ENOENT);
                ga.layer = (char *) "sha256:0000000000000000000000000000000000000000000000000000000000000000";
                ga.inode = 0;
                (void) unary(LAYERS "GetAttr", &ga.base, &tonari__layers__v1__entry__descriptor, -ENOENT);
                ga.layer = (char *) "not-a-digest";
                (void) unary(LAYERS "GetAttr", &ga.base, &tonari__layers__v1__entry__descriptor, -EINVAL);
                lk.layer = layer;
                lk.parent = 0;
                lk.name = (char *) "..";
                (void) unary(LAYERS "Lookup", &lk.base, &tonari__layers__v1__entry__descriptor, -EINVAL);
                lk.name = (char *) "no-such-name";
                (void) unary(LAYERS "Lookup", &lk.base, &tonari__layers__v1__entry__descriptor, -ENOENT);
        }

        printf("ToC of %zu bytes; %" PRIu64 " entries, %lu lookups, %lu directories, %lu xattrs, %lu files read (%" PRIu64
               " bytes): all as in the ToC\n",
               remote_size, toc_n_entries(t), n_lookups, n_dirs, n_xattrs, n_reads, read_bytes);
        rpc_channel_free(channel);
        return EXIT_SUCCESS;
}
