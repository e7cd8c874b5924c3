/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/support/log.h>

#include "alloc-util.h"
#include "log.h"
#include "parse-util.h"
#include "path-util.h"
#include "rpc-internal.h"
#include "string-util.h"

static pthread_mutex_t grpc_users_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned grpc_users;

/* gRPC prints its errors to stderr itself, including ones this layer returns to its caller as an
 * errno (a port in use, a peer that went away). The caller decides what is worth a message; gRPC's
 * own lines are kept for debugging, except the one it writes just before it aborts. */
static void log_grpc(gpr_log_func_args *a) {
        int level = startswith(a->message, "assertion failed") ? LOG_CRIT : LOG_DEBUG;

        log_full(level, "gRPC %s:%d: %s", a->file, a->line, a->message);
}

void rpc_grpc_ref(void) {
        pthread_mutex_lock(&grpc_users_lock);
        if (grpc_users++ == 0) {
                gpr_set_log_function(log_grpc);
                grpc_init();
        }
        pthread_mutex_unlock(&grpc_users_lock);
}

void rpc_grpc_unref(void) {
        pthread_mutex_lock(&grpc_users_lock);
        /* Blocking: gRPC's threads are gone when the last user is, so that a process's exit
         * (and ASan's leak check) does not race with them. */
        if (--grpc_users == 0)
                grpc_shutdown_blocking();
        pthread_mutex_unlock(&grpc_users_lock);
}

uint64_t rpc_options_max_message(const RpcOptions *o) {
        return o && o->max_message_bytes > 0 ? o->max_message_bytes : RPC_MAX_MESSAGE_DEFAULT;
}

void rpc_args_init(RpcArgs *a, const RpcOptions *o) {
        int max = (int) MIN(rpc_options_max_message(o), (uint64_t) INT32_MAX);

        a->args[0] = (grpc_arg) { .type = GRPC_ARG_INTEGER,
                                  .key = (char *) GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH,
                                  .value.integer = max };
        a->args[1] = (grpc_arg) { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_MAX_SEND_MESSAGE_LENGTH,
                                  .value.integer = max };
        /* gRPC sets SO_REUSEPORT by default: a second server on a port in use would "succeed" and
         * get half the connections. */
        a->args[2] = (grpc_arg) { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_ALLOW_REUSEPORT,
                                  .value.integer = 0 };
        /* HTTP/2's flow-control window per stream: with gRPC's default (64 KiB, grown by its BDP probe a
         * step per round trip) a stream moves a few window's worth per round trip, and at 50 ms a 1.4 MB
         * ToC took 5.1 s to arrive (measured through a 50 ms delay proxy); with 8 MiB, 91 ms. The window
         * bounds what a sender may have in flight, not what is allocated: the receiver's memory only
         * grows when its application does not read. */
        a->args[3] = (grpc_arg) { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES,
                                  .value.integer = RPC_STREAM_WINDOW_BYTES };
        a->channel_args = (grpc_channel_args) { .num_args = 4, .args = a->args };
        if (o && o->reconnect_backoff_max_usec > 0) {
                int ms = (int) MIN(DIV_ROUND_UP(o->reconnect_backoff_max_usec, USEC_PER_MSEC), (uint64_t) INT32_MAX);

                /* Both bounds: gRPC's first wait (1 s) would otherwise exceed a lower maximum. */
                a->args[4] = (grpc_arg) { .type = GRPC_ARG_INTEGER, .key = (char *) GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
                                          .value.integer = ms };
                a->args[5] = (grpc_arg) { .type = GRPC_ARG_INTEGER,
                                          .key = (char *) GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
                                          .value.integer = MIN(ms, 1000) };
                a->channel_args.num_args = 6;
        }
}

static void free_copy(void *p) {
        free(p);
}

grpc_byte_buffer *rpc_buffer_new(const void *data, size_t size) {
        void *copy = NULL;

        if (size > 0) {
                copy = memdup(data, size);
                if (!copy)
                        return NULL;
        }
        return rpc_buffer_take(copy, size);
}

grpc_byte_buffer *rpc_buffer_take(void *data, size_t size) {
        grpc_byte_buffer *bb;
        grpc_slice slice;

        if (size == 0) {
                free(data);
                slice = grpc_empty_slice();
        } else
                /* The slice owns data from here on, and frees it when gRPC is done with it. */
                slice = grpc_slice_new(data, size, free_copy);
        bb = grpc_raw_byte_buffer_create(&slice, 1);
        grpc_slice_unref(slice);
        return bb;
}

int rpc_buffer_read(grpc_byte_buffer *bb, void **ret, size_t *ret_size) {
        grpc_byte_buffer_reader reader;
        grpc_slice slice;
        size_t n, at = 0;
        uint8_t *buf;

        if (!grpc_byte_buffer_reader_init(&reader, bb))
                return -EBADMSG;
        /* Slice by slice into one buffer: a single copy of what came off the wire (readall()
         * would make a second). */
        n = grpc_byte_buffer_length(reader.buffer_out);
        buf = malloc(n + 1);
        if (!buf) {
                grpc_byte_buffer_reader_destroy(&reader);
                return -ENOMEM;
        }
        while (grpc_byte_buffer_reader_next(&reader, &slice)) {
                size_t k = GRPC_SLICE_LENGTH(slice);

                if (k > n - at) {
                        grpc_slice_unref(slice);
                        grpc_byte_buffer_reader_destroy(&reader);
                        free(buf);
                        return -EBADMSG;
                }
                if (k > 0)
                        memcpy(buf + at, GRPC_SLICE_START_PTR(slice), k);
                at += k;
                grpc_slice_unref(slice);
        }
        grpc_byte_buffer_reader_destroy(&reader);
        buf[at] = 0;
        *ret = buf;
        *ret_size = at;
        return 0;
}

gpr_timespec rpc_deadline(usec_t timeout) {
        if (timeout == USEC_INFINITY || timeout > (usec_t) INT64_MAX)
                return gpr_inf_future(GPR_CLOCK_MONOTONIC);
        return gpr_time_add(gpr_now(GPR_CLOCK_MONOTONIC),
                            gpr_time_from_micros((int64_t) timeout, GPR_TIMESPAN));
}

char *rpc_slice_to_string(grpc_slice s) {
        size_t n = GRPC_SLICE_LENGTH(s);
        char *p = malloc(n + 1);

        if (!p)
                return NULL;
        if (n > 0)
                memcpy(p, GRPC_SLICE_START_PTR(s), n);
        p[n] = 0;
        return p;
}

bool rpc_pluck(grpc_completion_queue *cq, void *tag) {
        grpc_event ev = grpc_completion_queue_pluck(cq, tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

        return ev.type == GRPC_OP_COMPLETE && ev.success;
}

void rpc_cq_destroy(grpc_completion_queue *cq) {
        if (!cq)
                return;
        grpc_completion_queue_shutdown(cq);
        /* A pluck queue reports its shutdown to a pluck of any tag once it is empty. */
        while (grpc_completion_queue_pluck(cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
               GRPC_QUEUE_SHUTDOWN)
                ;
        grpc_completion_queue_destroy(cq);
}

bool rpc_address_is_valid(const char *a) {
        const char *path = startswith(a, "unix:"), *colon;
        unsigned port;

        if (path)
                return path_is_normalized_absolute(path);
        colon = strrchr(a, ':');
        if (!colon || colon == a || safe_atou(colon + 1, &port) < 0 || port == 0 || port > 65535)
                return false;
        if (a[0] == '[' && colon[-1] != ']')
                return false;
        for (const char *p = a; p < colon; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]", *p))
                        return false;
        return true;
}
