/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The rpc layer against itself: a server and clients in one process, over a unix socket and TCP. */
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "../unit/tests.h"
#include "alloc-util.h"
#include "fd-util.h"
#include "rpc-proto.h"
#include "rpc.h"
#include "string-util.h"
#include "test-rpc.pb-c.h"
#include "time-util.h"

#define MIB (1024U * 1024U)
/* For calls that answer at once: long enough for a loaded machine and ASan. */
#define TIMEOUT (5 * USEC_PER_SEC)

static atomic_int stream_result = 1;
static atomic_ullong stream_returned_usec;

static int echo(RpcCall *c, const void *req, size_t size, void *userdata) {
        return rpc_call_reply(c, req, size);
}

static int fail_enoent(RpcCall *c, const void *req, size_t size, void *userdata) {
        rpc_call_set_error(c, "no image \"%.*s\"", (int) size, (const char *) req);
        return -ENOENT;
}

/* A message longer than a client accepts in metadata (a path 5000 directories deep). */
static int fail_long(RpcCall *c, const void *req, size_t size, void *userdata) {
        _cleanup_free_ char *path = malloc(5000 * 2 + 1);

        ck_assert_ptr_nonnull(path);
        for (int i = 0; i < 5000; i++)
                memcpy(path + 2 * i, "a/", 2);
        path[5000 * 2 - 1] = 0;
        rpc_call_set_error(c, "layer entry \"%s\": invalid path", path);
        return -EBADMSG;
}

/* Replies with as many bytes as the request asks for. */
static int sized(RpcCall *c, const void *req, size_t size, void *userdata) {
        size_t n = strtoul(req, NULL, 10);
        _cleanup_free_ uint8_t *buf = calloc(1, n ?: 1);

        ck_assert_ptr_nonnull(buf);
        return rpc_call_reply(c, buf, n);
}

/* The rules of a unary call, from the inside. */
static int misuse(RpcCall *c, const void *req, size_t size, void *userdata) {
        ck_assert_int_eq(rpc_call_send(c, "x", 1), -EINVAL);
        ck_assert(!rpc_call_cancelled(c));
        if (size == 0)
                return 0; /* no reply: the handler's bug, reported as such */
        ck_assert_int_eq(rpc_call_reply(c, "first", 5), 0);
        ck_assert_int_eq(rpc_call_reply(c, "second", 6), -EBUSY);
        return 0;
}

/* protobuf-c both ways: the request's piece back with its index doubled, or in a stream of
 * "index" pieces. */
static int proto_echo(RpcCall *c, const void *req, size_t size, void *userdata) {
        Tonari__Test__V1__Piece *p;
        int r;

        r = rpc_proto_unpack(&tonari__test__v1__piece__descriptor, req, size, (ProtobufCMessage **) &p);
        if (r < 0) {
                rpc_call_set_error(c, "not a Piece");
                return r;
        }
        p->index *= 2;
        r = rpc_call_reply_proto(c, &p->base);
        protobuf_c_message_free_unpacked(&p->base, NULL);
        return r;
}

static int proto_pieces(RpcCall *c, const void *req, size_t size, void *userdata) {
        Tonari__Test__V1__Piece *p;
        int r = 0;

        r = rpc_proto_unpack(&tonari__test__v1__piece__descriptor, req, size, (ProtobufCMessage **) &p);
        if (r < 0)
                return r;
        for (uint64_t i = 0; i < p->index && r >= 0; i++) {
                uint8_t data[64];
                Tonari__Test__V1__Piece q = TONARI__TEST__V1__PIECE__INIT;

                memset(data, (int) i, sizeof(data));
                q.index = i;
                q.name = p->name;
                q.data = (ProtobufCBinaryData) { .len = sizeof(data), .data = data };
                r = rpc_call_send_proto(c, &q.base);
        }
        protobuf_c_message_free_unpacked(&p->base, NULL);
        return r;
}

static atomic_int slow_cancelled, slow_running, slow_running_max;

/* Work for as many ms as the request says (none: 1.5 s), given up when the client is gone (as a
 * pull would). */
static int slow(RpcCall *c, const void *req, size_t size, void *userdata) {
        unsigned long ms = size > 0 ? strtoul(req, NULL, 10) : 1500;
        int running = atomic_fetch_add(&slow_running, 1) + 1, r = 0;

        for (int max = atomic_load(&slow_running_max); running > max;)
                if (atomic_compare_exchange_weak(&slow_running_max, &max, running))
                        break;
        for (unsigned long i = 0; i < ms / 10; i++) {
                if (rpc_call_cancelled(c)) {
                        atomic_fetch_add(&slow_cancelled, 1);
                        r = -ECANCELED;
                        break;
                }
                usleep(10 * 1000);
        }
        atomic_fetch_sub(&slow_running, 1);
        return r < 0 ? r : rpc_call_reply(c, "late", 4);
}

/* Streams "count" pieces of 1 MiB (count from the request; 0: until cancelled). Each piece is
 * filled with its index, so the client can check order and content. */
static int pieces(RpcCall *c, const void *req, size_t size, void *userdata) {
        _cleanup_free_ uint8_t *buf = malloc(MIB);
        unsigned long count = strtoul(req, NULL, 10);
        int r = 0;

        ck_assert_ptr_nonnull(buf);
        for (unsigned long i = 0; count == 0 || i < count; i++) {
                memset(buf, (int) (i & 0xff), MIB);
                memcpy(buf, &i, sizeof(i));
                r = rpc_call_send(c, buf, MIB);
                if (r < 0)
                        break;
        }
        atomic_store(&stream_result, r);
        atomic_store(&stream_returned_usec, now(CLOCK_MONOTONIC));
        return r;
}

static atomic_int stuck_running;

/* Work that never looks at its call (a read that blocks, a library that does not return): the
 * server's shutdown must be bounded anyway. */
static int stuck(RpcCall *c, const void *req, size_t size, void *userdata) {
        atomic_store(&stuck_running, 1);
        sleep(3);
        return rpc_call_reply(c, "late", 4);
}

static RpcServer *server(const char *address, unsigned threads, int *ret_port) {
        RpcOptions o = { .threads = threads };
        RpcServer *s = NULL;

        ck_assert_int_eq(rpc_server_new(&o, &s), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Echo", RPC_UNARY, 0, echo, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Fail", RPC_UNARY, 0, fail_enoent, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/FailLong", RPC_UNARY, 0, fail_long, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Slow", RPC_UNARY, RPC_METHOD_BLOCKING, slow, NULL),
                         0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Pieces", RPC_SERVER_STREAM, RPC_METHOD_BLOCKING, pieces,
                                               NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Sized", RPC_UNARY, 0, sized, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Stuck", RPC_UNARY, RPC_METHOD_BLOCKING, stuck, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Misuse", RPC_UNARY, 0, misuse, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/ProtoEcho", RPC_UNARY, 0, proto_echo, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/ProtoPieces", RPC_SERVER_STREAM, 0, proto_pieces,
                                               NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Echo", RPC_UNARY, 0, echo, NULL), -EEXIST);
        ck_assert_int_eq(rpc_server_add_method(s, "Echo", RPC_UNARY, 0, echo, NULL), -EINVAL);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Odd", (RpcMethodKind) 7, 0, echo, NULL), -EINVAL);
        ck_assert_int_eq(rpc_server_listen(s, address, 0600, ret_port), 0);
        ck_assert_int_eq(rpc_server_start(s), 0);
        return s;
}

static char *unix_address(void) {
        char *a = strjoin("unix:", test_tmpdir(), "/rpc.sock");

        ck_assert_ptr_nonnull(a);
        return a;
}

static void check_unary(const char *target) {
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_free_ void *reply = NULL;
        _cleanup_free_ char *err = NULL;
        size_t size;

        ck_assert_int_eq(rpc_channel_new(target, NULL, &c), 0);
        ck_assert_int_eq(rpc_unary(c, "/test.T/Echo", "hello", 5, TIMEOUT, &reply, &size, &err), 0);
        ck_assert_uint_eq(size, 5);
        ck_assert_str_eq(reply, "hello");
        reply = mfree(reply);
        /* Empty messages are messages. */
        ck_assert_int_eq(rpc_unary(c, "/test.T/Echo", NULL, 0, TIMEOUT, &reply, &size, &err), 0);
        ck_assert_uint_eq(size, 0);
        reply = mfree(reply);

        ck_assert_int_eq(rpc_unary(c, "/test.T/Fail", "x:1", 3, TIMEOUT, &reply, &size, &err), -ENOENT);
        ck_assert_str_eq(err, "no image \"x:1\"");
        ck_assert_ptr_null(reply);
        /* A message of 10 kB arrives as what it says (shortened in the middle), not as the client's
         * "received initial metadata size exceeds limit". */
        ck_assert_int_eq(rpc_unary(c, "/test.T/FailLong", "", 0, TIMEOUT, &reply, &size, &err), -EINVAL);
        ck_assert_uint_le(strlen(err), RPC_STATUS_MESSAGE_MAX);
        ck_assert_msg(startswith(err, "layer entry \"a/a/") && endswith(err, "a/a\": invalid path") &&
                      strstr(err, "..."), "%s", err);
        ck_assert_int_eq(rpc_unary(c, "/test.T/Nope", "", 0, TIMEOUT, &reply, &size, &err), -EOPNOTSUPP);
        ck_assert_str_eq(err, "unknown method \"/test.T/Nope\"");
        ck_assert_int_eq(rpc_unary(c, "/test.T/Slow", "", 0, 200 * USEC_PER_MSEC, &reply, &size, &err),
                         -ETIMEDOUT);
        /* Sequential small calls: what a lookup without the ToC costs at least. */
        {
                usec_t start = now(CLOCK_MONOTONIC);

                for (unsigned i = 0; i < 1000; i++) {
                        char req[16];
                        int n = snprintf(req, sizeof(req), "%u", i);

                        ck_assert_int_eq(rpc_unary(c, "/test.T/Echo", req, (size_t) n, TIMEOUT, &reply,
                                                   &size, &err), 0);
                        ck_assert_str_eq(reply, req);
                        reply = mfree(reply);
                }
                printf("# %s: 1000 small unary calls, %.1f us each\n", target,
                       (double) (now(CLOCK_MONOTONIC) - start) / 1000.0);
        }

        /* The handler learns that nobody waits for it any more. */
        for (int i = 0; i < 100 && atomic_load(&slow_cancelled) == 0; i++)
                usleep(10 * 1000);
        ck_assert_int_eq(atomic_load(&slow_cancelled), 1);
        atomic_store(&slow_cancelled, 0);

        ck_assert_int_eq(rpc_unary(c, "/test.T/Misuse", "y", 1, TIMEOUT, &reply, &size, &err), 0);
        ck_assert_uint_eq(size, 5);
        ck_assert_str_eq(reply, "first");
        reply = mfree(reply);
        ck_assert_int_eq(rpc_unary(c, "/test.T/Misuse", NULL, 0, TIMEOUT, &reply, &size, &err), -EPROTO);
        ck_assert_str_eq(err, "/test.T/Misuse: the handler sent no reply");
        ck_assert_ptr_null(reply);
}

START_TEST(test_unary_unix) {
        _cleanup_free_ char *a = unix_address();
        _cleanup_rpc_server_ RpcServer *s = server(a, 2, NULL);
        struct stat st;

        ck_assert_int_eq(stat(a + 5, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
        ck_assert_uint_eq(st.st_mode & 0777, 0600);
        check_unary(a);
        s = rpc_server_free(s);
        /* The socket goes with the server. */
        ck_assert_int_eq(stat(a + 5, &st), -1);
}
END_TEST

START_TEST(test_unary_tcp) {
        _cleanup_rpc_server_ RpcServer *s = NULL;
        _cleanup_free_ char *target = NULL;
        int port = 0;

        s = server("127.0.0.1:0", 2, &port);
        ck_assert_int_gt(port, 0);
        ck_assert_int_ge(asprintf(&target, "127.0.0.1:%d", port), 0);
        check_unary(target);
}
END_TEST

START_TEST(test_message_size) {
        _cleanup_free_ char *a = unix_address(), *err = NULL;
        _cleanup_free_ uint8_t *big = calloc(3, MIB);
        _cleanup_rpc_server_ RpcServer *s = NULL;
        _cleanup_rpc_channel_ RpcChannel *c = NULL, *small = NULL;
        RpcOptions two = { .max_message_bytes = 2 * MIB };
        void *reply = NULL;
        size_t size;

        ck_assert_ptr_nonnull(big);
        ck_assert_int_eq(rpc_server_new(&two, &s), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Echo", RPC_UNARY, 0, echo, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Sized", RPC_UNARY, 0, sized, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Stuck", RPC_UNARY, RPC_METHOD_BLOCKING, stuck, NULL), 0);
        ck_assert_int_eq(rpc_server_listen(s, a, 0600, NULL), 0);
        ck_assert_int_eq(rpc_server_start(s), 0);

        /* The server refuses to receive it. */
        ck_assert_int_eq(rpc_channel_new(a, NULL, &c), 0);
        ck_assert_int_eq(rpc_unary(c, "/test.T/Echo", big, 3 * MIB, TIMEOUT, &reply, &size, &err),
                         -EMSGSIZE);
        /* The client refuses to send it. */
        ck_assert_int_eq(rpc_channel_new(a, &two, &small), 0);
        ck_assert_int_eq(rpc_unary(small, "/test.T/Echo", big, 3 * MIB, TIMEOUT, &reply, &size, &err),
                         -EMSGSIZE);
        /* Below the limit it goes through. */
        ck_assert_int_eq(rpc_unary(small, "/test.T/Echo", big, MIB, TIMEOUT, &reply, &size, &err), 0);
        ck_assert_uint_eq(size, MIB);
        reply = mfree(reply);
        /* The server refuses to send a reply over its limit. */
        ck_assert_int_eq(rpc_unary(c, "/test.T/Sized", "3145728", 7, TIMEOUT, &reply, &size, &err),
                         -EMSGSIZE);
        ck_assert_ptr_null(reply);
        ck_assert_int_eq(rpc_unary(c, "/test.T/Sized", "2097152", 7, TIMEOUT, &reply, &size, &err), 0);
        ck_assert_uint_eq(size, 2 * MIB);
        reply = mfree(reply);
}
END_TEST

START_TEST(test_message_size_client_receive) {
        _cleanup_free_ char *a = unix_address(), *err = NULL;
        _cleanup_rpc_server_ RpcServer *s = server(a, 2, NULL);
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        RpcOptions two = { .max_message_bytes = 2 * MIB };
        void *reply = NULL;
        size_t size;

        /* The server (16 MiB) sends it, the client (2 MiB) refuses to take it. */
        ck_assert_int_eq(rpc_channel_new(a, &two, &c), 0);
        ck_assert_int_eq(rpc_unary(c, "/test.T/Sized", "3145728", 7, TIMEOUT, &reply, &size, &err),
                         -EMSGSIZE);
        ck_assert_ptr_null(reply);
        ck_assert_ptr_nonnull(err);
        /* The default limit: 16 MiB passes, one byte more does not. */
        ck_assert_uint_eq(RPC_MAX_MESSAGE_DEFAULT, 16 * MIB);
        c = rpc_channel_free(c);
        ck_assert_int_eq(rpc_channel_new(a, NULL, &c), 0);
        ck_assert_int_eq(rpc_unary(c, "/test.T/Sized", "16777216", 8, TIMEOUT, &reply, &size, &err), 0);
        ck_assert_uint_eq(size, 16 * MIB);
        reply = mfree(reply);
        ck_assert_int_eq(rpc_unary(c, "/test.T/Sized", "16777217", 8, TIMEOUT, &reply, &size, &err),
                         -EMSGSIZE);
}
END_TEST

START_TEST(test_unreachable) {
        _cleanup_free_ char *a = unix_address(), *err = NULL;
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_rpc_stream_ RpcStream *st = NULL;
        void *reply = NULL;
        size_t size;
        usec_t start;

        ck_assert_int_eq(rpc_channel_new("", NULL, &c), -EINVAL);
        ck_assert_int_eq(rpc_channel_new("unix:relative", NULL, &c), -EINVAL);
        ck_assert_int_eq(rpc_channel_new("/no/scheme", NULL, &c), -EINVAL);
        ck_assert_int_eq(rpc_channel_new(a, NULL, &c), 0);
        ck_assert_int_eq(rpc_unary(c, "Echo", "", 0, USEC_PER_SEC, &reply, &size, &err), -EINVAL);

        /* Nobody listens: UNAVAILABLE at once, not at the deadline. */
        start = now(CLOCK_MONOTONIC);
        ck_assert_int_eq(rpc_unary(c, "/test.T/Echo", "", 0, 30 * USEC_PER_SEC, &reply, &size, &err),
                         -EAGAIN);
        ck_assert_ptr_nonnull(err);
        ck_assert_int_eq(rpc_stream_open(c, "/test.T/Pieces", "1", 1, 30 * USEC_PER_SEC, &st), 0);
        ck_assert_int_eq(rpc_stream_next(st, &reply, &size, &err), -EAGAIN);
        /* The end stays the end. */
        ck_assert_int_eq(rpc_stream_next(st, &reply, &size, &err), -EAGAIN);
        ck_assert_uint_lt(now(CLOCK_MONOTONIC) - start, 5 * USEC_PER_SEC);
}
END_TEST

START_TEST(test_proto) {
        _cleanup_free_ char *a = unix_address(), *err = NULL;
        _cleanup_rpc_server_ RpcServer *s = server(a, 2, NULL);
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_rpc_stream_ RpcStream *st = NULL;
        Tonari__Test__V1__Piece req = TONARI__TEST__V1__PIECE__INIT, *p = NULL;
        uint8_t data[3] = { 1, 2, 3 };
        uint64_t i = 0;
        int r;

        ck_assert_int_eq(rpc_channel_new(a, NULL, &c), 0);
        req.index = 21;
        req.name = (char *) "layer";
        req.data = (ProtobufCBinaryData) { .len = sizeof(data), .data = data };
        ck_assert_int_eq(rpc_unary_proto(c, "/test.T/ProtoEcho", &req.base, &tonari__test__v1__piece__descriptor,
                                         TIMEOUT, (ProtobufCMessage **) &p, &err), 0);
        ck_assert_uint_eq(p->index, 42);
        ck_assert_str_eq(p->name, "layer");
        ck_assert_uint_eq(p->data.len, 3);
        ck_assert_int_eq(memcmp(p->data.data, data, 3), 0);
        protobuf_c_message_free_unpacked(&p->base, NULL);
        p = NULL;

        /* Bytes that are no Piece: refused by the server's unpack, and by the client's. */
        ck_assert_int_eq(rpc_unary(c, "/test.T/ProtoEcho", "\xff\xff\xff", 3, TIMEOUT, NULL, NULL, &err),
                         -EINVAL);
        ck_assert_str_eq(err, "not a Piece");
        req.index = 0;
        ck_assert_int_eq(rpc_unary_proto(c, "/test.T/Misuse", &req.base, &tonari__test__v1__piece__descriptor,
                                         TIMEOUT, (ProtobufCMessage **) &p, &err), -EBADMSG);
        ck_assert_ptr_null(p);

        req.index = 100;
        ck_assert_int_eq(rpc_stream_open_proto(c, "/test.T/ProtoPieces", &req.base, TIMEOUT, &st), 0);
        while ((r = rpc_stream_next_proto(st, &tonari__test__v1__piece__descriptor, (ProtobufCMessage **) &p,
                                          &err)) > 0) {
                ck_assert_uint_eq(p->index, i);
                ck_assert_str_eq(p->name, "layer");
                ck_assert_uint_eq(p->data.len, 64);
                ck_assert_uint_eq(p->data.data[63], i & 0xff);
                protobuf_c_message_free_unpacked(&p->base, NULL);
                p = NULL;
                i++;
        }
        ck_assert_int_eq(r, 0);
        ck_assert_uint_eq(i, 100);
}
END_TEST

START_TEST(test_stream_1gib) {
        _cleanup_free_ char *a = unix_address(), *err = NULL;
        _cleanup_rpc_server_ RpcServer *s = server(a, 2, NULL);
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_rpc_stream_ RpcStream *st = NULL;
        const char *env = getenv("TONARI_RPC_STREAM_MIB");
        unsigned long count = env ? strtoul(env, NULL, 10) : 1024, i = 0;
        _cleanup_free_ uint8_t *expected = malloc(MIB);
        char req[32];
        usec_t start, took;
        void *msg;
        size_t size;
        int r;

        ck_assert_ptr_nonnull(expected);
        snprintf(req, sizeof(req), "%lu", count);
        ck_assert_int_eq(rpc_channel_new(a, NULL, &c), 0);
        start = now(CLOCK_MONOTONIC);
        ck_assert_int_eq(rpc_stream_open(c, "/test.T/Pieces", req, strlen(req), 120 * USEC_PER_SEC, &st), 0);
        while ((r = rpc_stream_next(st, &msg, &size, &err)) > 0) {
                /* Every byte: the piece the handler made for this index, in this order. */
                memset(expected, (int) (i & 0xff), MIB);
                memcpy(expected, &i, sizeof(i));
                ck_assert_uint_eq(size, MIB);
                ck_assert_msg(memcmp(msg, expected, MIB) == 0, "piece %lu differs", i);
                free(msg);
                i++;
        }
        took = now(CLOCK_MONOTONIC) - start;
        ck_assert_msg(r == 0, "stream ended with %d: %s", r, strna(err));
        ck_assert_uint_eq(i, count);
        printf("# %lu MiB streamed and verified in %.2f s: %.0f MiB/s\n", count, (double) took / USEC_PER_SEC,
               (double) count / ((double) took / USEC_PER_SEC));
}
END_TEST

START_TEST(test_stream_cancelled) {
        _cleanup_free_ char *a = unix_address(), *err = NULL;
        _cleanup_rpc_server_ RpcServer *s = server(a, 2, NULL);
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_rpc_stream_ RpcStream *st = NULL;
        usec_t cancelled_at;
        void *msg;
        size_t size;

        ck_assert_int_eq(rpc_channel_new(a, NULL, &c), 0);
        ck_assert_int_eq(rpc_stream_open(c, "/test.T/Pieces", "0", 1, 60 * USEC_PER_SEC, &st), 0);
        for (int i = 0; i < 3; i++) {
                ck_assert_int_eq(rpc_stream_next(st, &msg, &size, &err), 1);
                free(msg);
        }
        cancelled_at = now(CLOCK_MONOTONIC);
        rpc_stream_cancel(st);
        ck_assert_int_eq(rpc_stream_next(st, &msg, &size, &err), -ECANCELED);

        /* The endless handler notices at its next send and returns. */
        while (atomic_load(&stream_result) == 1 && now(CLOCK_MONOTONIC) - cancelled_at < 5 * USEC_PER_SEC)
                usleep(10 * 1000);
        ck_assert_int_eq(atomic_load(&stream_result), -ECANCELED);
        ck_assert_uint_lt(atomic_load(&stream_returned_usec) - cancelled_at, 2 * USEC_PER_SEC);
        printf("# handler returned %.1f ms after the cancel\n",
               (double) (atomic_load(&stream_returned_usec) - cancelled_at) / USEC_PER_MSEC);
}
END_TEST

START_TEST(test_stream_deadline) {
        _cleanup_free_ char *a = unix_address(), *err = NULL;
        _cleanup_rpc_server_ RpcServer *s = server(a, 2, NULL);
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_rpc_stream_ RpcStream *st = NULL;
        usec_t start;
        void *msg;
        size_t size;
        int r, n = 0;

        /* An endless stream the client does not read: the server's sends block (flow control)
         * until the deadline ends the call. */
        ck_assert_int_eq(rpc_channel_new(a, NULL, &c), 0);
        start = now(CLOCK_MONOTONIC);
        ck_assert_int_eq(rpc_stream_open(c, "/test.T/Pieces", "0", 1, 300 * USEC_PER_MSEC, &st), 0);
        while (atomic_load(&stream_result) == 1 && now(CLOCK_MONOTONIC) - start < 5 * USEC_PER_SEC)
                usleep(10 * 1000);
        ck_assert_int_eq(atomic_load(&stream_result), -ECANCELED);
        ck_assert_uint_lt(atomic_load(&stream_returned_usec) - start, 2 * USEC_PER_SEC);
        /* Not long before the deadline either (gRPC's timers round to milliseconds). */
        ck_assert_uint_ge(atomic_load(&stream_returned_usec) - start, 250 * USEC_PER_MSEC);

        while ((r = rpc_stream_next(st, &msg, &size, &err)) > 0) {
                free(msg);
                n++;
        }
        ck_assert_int_eq(r, -ETIMEDOUT);
        printf("# handler returned %.0f ms after the call began (deadline 300 ms); %d pieces reached the client\n",
               (double) (atomic_load(&stream_returned_usec) - start) / USEC_PER_MSEC, n);
}
END_TEST

START_TEST(test_addresses_in_use) {
        _cleanup_free_ char *a = unix_address(), *other = NULL, *file = NULL;
        _cleanup_rpc_server_ RpcServer *s = NULL, *t = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int port = 0, again;

        s = server("127.0.0.1:0", 1, &port);
        ck_assert_int_eq(rpc_server_new(NULL, &t), 0);
        ck_assert_int_eq(asprintf(&other, "127.0.0.1:%d", port) > 0, 1);
        ck_assert_int_eq(rpc_server_listen(t, other, 0600, &again), -EADDRINUSE);
        t = rpc_server_free(t);
        s = rpc_server_free(s);

        /* A live unix socket is not taken over; a stale one is; a file is left alone. */
        s = server(a, 1, NULL);
        ck_assert_int_eq(rpc_server_new(NULL, &t), 0);
        ck_assert_int_eq(rpc_server_listen(t, a, 0600, NULL), -EADDRINUSE);
        t = rpc_server_free(t);
        s = rpc_server_free(s);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        strcpy(sa.sun_path, a + 5);
        ck_assert_int_eq(bind(fd, (struct sockaddr *) &sa, sizeof(sa)), 0);
        fd = safe_close(fd); /* bound, never listened: stale */
        s = server(a, 1, NULL);
        check_unary(a);
        s = rpc_server_free(s);

        file = strjoin(test_tmpdir(), "/file");
        fd = open(file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        free(other);
        other = strjoin("unix:", file);
        ck_assert_int_eq(rpc_server_new(NULL, &t), 0);
        ck_assert_int_eq(rpc_server_listen(t, other, 0600, NULL), -EADDRINUSE);
        ck_assert_int_eq(access(file, F_OK), 0);
        ck_assert_int_eq(rpc_server_listen(t, "unix:relative", 0600, NULL), -EINVAL);
        free(other);
        other = strjoin("unix:", test_tmpdir(), "/missing/rpc.sock");
        ck_assert_int_eq(rpc_server_listen(t, other, 0600, NULL), -ENOENT);
        free(other);
        other = strjoin("unix:", file, "/rpc.sock");
        ck_assert_int_eq(rpc_server_listen(t, other, 0600, NULL), -ENOTDIR);
        t = rpc_server_free(t);

        /* The mode is exact, whatever the umask; the umask is the caller's again afterwards. */
        {
                mode_t old_mask = umask(027);
                struct stat st;

                ck_assert_int_eq(rpc_server_new(NULL, &t), 0);
                ck_assert_int_eq(rpc_server_listen(t, a, 0666, NULL), 0);
                ck_assert_int_eq(stat(a + 5, &st), 0);
                ck_assert_uint_eq(st.st_mode & 07777, 0666);
                ck_assert_uint_eq(umask(old_mask), 027);
        }
        /* Never started, freed: the socket goes too. */
        t = rpc_server_free(t);
        ck_assert_int_eq(access(a + 5, F_OK), -1);
}
END_TEST

static void *call_slow(void *userdata) {
        RpcChannel *c = userdata;
        void *reply = NULL;
        size_t size;

        ck_assert_int_eq(rpc_unary(c, "/test.T/Slow", "", 0, 10 * USEC_PER_SEC, &reply, &size, NULL), 0);
        ck_assert_str_eq(reply, "late");
        ck_assert_int_eq(atomic_load(&slow_cancelled), 0);
        free(reply);
        return NULL;
}

START_TEST(test_slow_call_does_not_block) {
        _cleanup_free_ char *a = unix_address();
        /* One pool thread: the fast calls can only be served if the slow one is not on it. */
        _cleanup_rpc_server_ RpcServer *s = server(a, 1, NULL);
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        pthread_t t;
        usec_t start;

        ck_assert_int_eq(rpc_channel_new(a, NULL, &c), 0);
        ck_assert_int_eq(pthread_create(&t, NULL, call_slow, c), 0);
        usleep(200 * 1000);
        start = now(CLOCK_MONOTONIC);
        for (int i = 0; i < 10; i++) {
                void *reply = NULL;
                size_t size;

                ck_assert_int_eq(rpc_unary(c, "/test.T/Echo", "x", 1, TIMEOUT, &reply, &size, NULL), 0);
                free(reply);
        }
        ck_assert_uint_lt(now(CLOCK_MONOTONIC) - start, 500 * USEC_PER_MSEC);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
}
END_TEST

static void *call_slow_300ms(void *userdata) {
        RpcChannel *c = userdata;
        void *reply = NULL;
        size_t size;

        ck_assert_int_eq(rpc_unary(c, "/test.T/Slow", "300", 3, 10 * USEC_PER_SEC, &reply, &size, NULL), 0);
        ck_assert_str_eq(reply, "late");
        free(reply);
        return NULL;
}

START_TEST(test_blocking_threads_bounded) {
        _cleanup_free_ char *a = unix_address();
        _cleanup_rpc_server_ RpcServer *s = NULL;
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        RpcOptions o = { .threads = 1, .max_blocking_threads = 2 };
        pthread_t t[5];
        usec_t start, took;

        ck_assert_int_eq(rpc_server_new(&o, &s), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Echo", RPC_UNARY, 0, echo, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Slow", RPC_UNARY, RPC_METHOD_BLOCKING, slow, NULL),
                         0);
        ck_assert_int_eq(rpc_server_listen(s, a, 0600, NULL), 0);
        ck_assert_int_eq(rpc_server_start(s), 0);
        ck_assert_int_eq(rpc_channel_new(a, NULL, &c), 0);

        /* Five calls of 300 ms on two threads: three rounds, never more than two at once. */
        start = now(CLOCK_MONOTONIC);
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                ck_assert_int_eq(pthread_create(&t[i], NULL, call_slow_300ms, c), 0);
        usleep(100 * 1000);
        /* Meanwhile the pool is free for quick calls. */
        for (int i = 0; i < 10; i++) {
                void *reply = NULL;
                size_t size;
                usec_t before = now(CLOCK_MONOTONIC);

                ck_assert_int_eq(rpc_unary(c, "/test.T/Echo", "x", 1, TIMEOUT, &reply, &size, NULL), 0);
                ck_assert_uint_lt(now(CLOCK_MONOTONIC) - before, 100 * USEC_PER_MSEC);
                free(reply);
        }
        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                ck_assert_int_eq(pthread_join(t[i], NULL), 0);
        took = now(CLOCK_MONOTONIC) - start;
        ck_assert_int_eq(atomic_load(&slow_running_max), 2);
        ck_assert_uint_ge(took, 850 * USEC_PER_MSEC);
        ck_assert_uint_lt(took, 5 * USEC_PER_SEC);
        printf("# 5 blocking calls of 300 ms on 2 threads: %.0f ms\n", (double) took / USEC_PER_MSEC);
}
END_TEST

START_TEST(test_shutdown_during_stream) {
        _cleanup_free_ char *a = unix_address(), *err = NULL;
        _cleanup_rpc_server_ RpcServer *s = server(a, 2, NULL);
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_rpc_stream_ RpcStream *st = NULL;
        usec_t start;
        void *msg;
        size_t size;
        int r;

        ck_assert_int_eq(rpc_channel_new(a, NULL, &c), 0);
        ck_assert_int_eq(rpc_stream_open(c, "/test.T/Pieces", "0", 1, 60 * USEC_PER_SEC, &st), 0);
        ck_assert_int_eq(rpc_stream_next(st, &msg, &size, &err), 1);
        free(msg);

        /* The client stops reading; the server must still stop within its grace. */
        start = now(CLOCK_MONOTONIC);
        ck_assert_int_eq(rpc_server_shutdown(s, 300 * USEC_PER_MSEC, USEC_INFINITY), 0);
        ck_assert_uint_lt(now(CLOCK_MONOTONIC) - start, 3 * USEC_PER_SEC);
        ck_assert_int_eq(atomic_load(&stream_result), -ECANCELED);

        /* The client sees what was in flight, then the cancellation. */
        while ((r = rpc_stream_next(st, &msg, &size, &err)) > 0)
                free(msg);
        ck_assert_int_lt(r, 0);
}
END_TEST

typedef struct StuckCall {
        RpcChannel *channel;
        int result;
} StuckCall;

static void *call_stuck(void *userdata) {
        StuckCall *call = userdata;
        _cleanup_free_ char *err = NULL;
        void *reply = NULL;
        size_t size;

        call->result = rpc_unary(call->channel, "/test.T/Stuck", "", 0, 60 * USEC_PER_SEC, &reply, &size, &err);
        free(reply);
        return NULL;
}

START_TEST(test_shutdown_bounded) {
        _cleanup_free_ char *a = unix_address();
        /* Not freed: a handler still runs when the shutdown gives up, as it says. */
        static RpcServer *s;
        StuckCall call = { .result = 1 };
        pthread_t t;
        usec_t start;

        s = server(a, 2, NULL);
        ck_assert_int_eq(rpc_channel_new(a, NULL, &call.channel), 0);
        ck_assert_int_eq(pthread_create(&t, NULL, call_stuck, &call), 0);
        for (int i = 0; i < 500 && !atomic_load(&stuck_running); i++)
                usleep(10 * 1000);
        ck_assert(atomic_load(&stuck_running));

        start = now(CLOCK_MONOTONIC);
        ck_assert_int_eq(rpc_server_shutdown(s, 100 * USEC_PER_MSEC, 300 * USEC_PER_MSEC), -ETIMEDOUT);
        ck_assert_uint_lt(now(CLOCK_MONOTONIC) - start, 1500 * USEC_PER_MSEC);
        /* The client was told at the cancel (the server is going away: UNAVAILABLE), not when the
         * handler ends. */
        ck_assert_int_eq(pthread_join(t, NULL), 0);
        ck_assert_int_eq(call.result, -EAGAIN);
        ck_assert_uint_lt(now(CLOCK_MONOTONIC) - start, 1500 * USEC_PER_MSEC);
        rpc_channel_free(call.channel);
}
END_TEST

int main(void) {
        Suite *s = suite_create("rpc-loopback");
        TCase *tc = tcase_create("core");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_unary_unix);
        tcase_add_test(tc, test_unary_tcp);
        tcase_add_test(tc, test_message_size);
        tcase_add_test(tc, test_message_size_client_receive);
        tcase_add_test(tc, test_unreachable);
        tcase_add_test(tc, test_proto);
        tcase_add_test(tc, test_stream_1gib);
        tcase_add_test(tc, test_stream_cancelled);
        tcase_add_test(tc, test_stream_deadline);
        tcase_add_test(tc, test_addresses_in_use);
        tcase_add_test(tc, test_slow_call_does_not_block);
        tcase_add_test(tc, test_blocking_threads_bounded);
        tcase_add_test(tc, test_shutdown_during_stream);
        tcase_add_test(tc, test_shutdown_bounded);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
