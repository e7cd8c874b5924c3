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
#include "rpc.h"
#include "string-util.h"
#include "time-util.h"

#define MIB (1024U * 1024U)

static atomic_int stream_result = 1;
static atomic_ullong stream_returned_usec;

static int echo(RpcCall *c, const void *req, size_t size, void *userdata) {
        return rpc_call_reply(c, req, size);
}

static int fail_enoent(RpcCall *c, const void *req, size_t size, void *userdata) {
        rpc_call_set_error(c, "no image \"%.*s\"", (int) size, (const char *) req);
        return -ENOENT;
}

static int slow(RpcCall *c, const void *req, size_t size, void *userdata) {
        usleep(1500 * 1000);
        return rpc_call_reply(c, "late", 4);
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

static RpcServer *server(const char *address, unsigned threads, int *ret_port) {
        RpcOptions o = { .threads = threads };
        RpcServer *s = NULL;

        ck_assert_int_eq(rpc_server_new(&o, &s), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Echo", RPC_UNARY, 0, echo, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Fail", RPC_UNARY, 0, fail_enoent, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Slow", RPC_UNARY, RPC_METHOD_BLOCKING, slow, NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Pieces", RPC_SERVER_STREAM, RPC_METHOD_BLOCKING, pieces,
                                               NULL), 0);
        ck_assert_int_eq(rpc_server_add_method(s, "/test.T/Echo", RPC_UNARY, 0, echo, NULL), -EEXIST);
        ck_assert_int_eq(rpc_server_add_method(s, "Echo", RPC_UNARY, 0, echo, NULL), -EINVAL);
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
        ck_assert_int_eq(rpc_unary(c, "/test.T/Echo", "hello", 5, 5 * USEC_PER_SEC, &reply, &size, &err), 0);
        ck_assert_uint_eq(size, 5);
        ck_assert_str_eq(reply, "hello");
        reply = mfree(reply);
        /* Empty messages are messages. */
        ck_assert_int_eq(rpc_unary(c, "/test.T/Echo", NULL, 0, 5 * USEC_PER_SEC, &reply, &size, &err), 0);
        ck_assert_uint_eq(size, 0);
        reply = mfree(reply);

        ck_assert_int_eq(rpc_unary(c, "/test.T/Fail", "x:1", 3, 5 * USEC_PER_SEC, &reply, &size, &err), -ENOENT);
        ck_assert_str_eq(err, "no image \"x:1\"");
        ck_assert_ptr_null(reply);
        ck_assert_int_eq(rpc_unary(c, "/test.T/Nope", "", 0, 5 * USEC_PER_SEC, &reply, &size, &err), -EOPNOTSUPP);
        ck_assert_str_eq(err, "unknown method \"/test.T/Nope\"");
        ck_assert_int_eq(rpc_unary(c, "/test.T/Slow", "", 0, 200 * USEC_PER_MSEC, &reply, &size, &err), -ETIMEDOUT);
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
        ck_assert_int_eq(rpc_server_listen(s, a, 0600, NULL), 0);
        ck_assert_int_eq(rpc_server_start(s), 0);

        /* The server refuses to receive it. */
        ck_assert_int_eq(rpc_channel_new(a, NULL, &c), 0);
        ck_assert_int_eq(rpc_unary(c, "/test.T/Echo", big, 3 * MIB, 5 * USEC_PER_SEC, &reply, &size, &err), -EMSGSIZE);
        /* The client refuses to send it. */
        ck_assert_int_eq(rpc_channel_new(a, &two, &small), 0);
        ck_assert_int_eq(rpc_unary(small, "/test.T/Echo", big, 3 * MIB, 5 * USEC_PER_SEC, &reply, &size, &err),
                         -EMSGSIZE);
        /* Below the limit it goes through. */
        ck_assert_int_eq(rpc_unary(small, "/test.T/Echo", big, MIB, 5 * USEC_PER_SEC, &reply, &size, &err), 0);
        ck_assert_uint_eq(size, MIB);
        free(reply);
}
END_TEST

START_TEST(test_stream_1gib) {
        _cleanup_free_ char *a = unix_address(), *err = NULL;
        _cleanup_rpc_server_ RpcServer *s = server(a, 2, NULL);
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_rpc_stream_ RpcStream *st = NULL;
        const char *env = getenv("TONARI_RPC_STREAM_MIB");
        unsigned long count = env ? strtoul(env, NULL, 10) : 1024, i = 0;
        char req[32];
        usec_t start;
        void *msg;
        size_t size;
        int r;

        snprintf(req, sizeof(req), "%lu", count);
        ck_assert_int_eq(rpc_channel_new(a, NULL, &c), 0);
        start = now(CLOCK_MONOTONIC);
        ck_assert_int_eq(rpc_stream_open(c, "/test.T/Pieces", req, strlen(req), 120 * USEC_PER_SEC, &st), 0);
        while ((r = rpc_stream_next(st, &msg, &size, &err)) > 0) {
                const uint8_t *b = msg;
                unsigned long index;
                size_t wrong = 0;

                ck_assert_uint_eq(size, MIB);
                memcpy(&index, b, sizeof(index));
                ck_assert_uint_eq(index, i);
                /* Every byte after the index; one assertion per piece (check's are costly). */
                for (size_t k = sizeof(index); k < MIB; k++)
                        wrong += b[k] != (i & 0xff);
                ck_assert_uint_eq(wrong, 0);
                free(msg);
                i++;
        }
        ck_assert_msg(r == 0, "stream ended with %d: %s", r, strna(err));
        ck_assert_uint_eq(i, count);
        printf("# %lu MiB streamed in %.2f s: %.0f MiB/s\n", count,
               (double) (now(CLOCK_MONOTONIC) - start) / USEC_PER_SEC,
               (double) count / ((double) (now(CLOCK_MONOTONIC) - start) / USEC_PER_SEC));
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
}
END_TEST

static void *call_slow(void *userdata) {
        RpcChannel *c = userdata;
        void *reply = NULL;
        size_t size;

        ck_assert_int_eq(rpc_unary(c, "/test.T/Slow", "", 0, 10 * USEC_PER_SEC, &reply, &size, NULL), 0);
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

                ck_assert_int_eq(rpc_unary(c, "/test.T/Echo", "x", 1, 5 * USEC_PER_SEC, &reply, &size, NULL), 0);
                free(reply);
        }
        ck_assert_uint_lt(now(CLOCK_MONOTONIC) - start, 500 * USEC_PER_MSEC);
        ck_assert_int_eq(pthread_join(t, NULL), 0);
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
        rpc_server_shutdown(s, 300 * USEC_PER_MSEC);
        ck_assert_uint_lt(now(CLOCK_MONOTONIC) - start, 3 * USEC_PER_SEC);
        ck_assert_int_eq(atomic_load(&stream_result), -ECANCELED);

        /* The client sees what was in flight, then the cancellation. */
        while ((r = rpc_stream_next(st, &msg, &size, &err)) > 0)
                free(msg);
        ck_assert_int_lt(r, 0);
}
END_TEST

int main(void) {
        Suite *s = suite_create("rpc-loopback");
        TCase *tc = tcase_create("core");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_unary_unix);
        tcase_add_test(tc, test_unary_tcp);
        tcase_add_test(tc, test_message_size);
        tcase_add_test(tc, test_stream_1gib);
        tcase_add_test(tc, test_stream_cancelled);
        tcase_add_test(tc, test_addresses_in_use);
        tcase_add_test(tc, test_slow_call_does_not_block);
        tcase_add_test(tc, test_shutdown_during_stream);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
