/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Private to src/rpc/: its library is built with -DTONARI_FOLDER_RPC (meson.build), nothing else is. */
#ifndef TONARI_FOLDER_RPC
#error "rpc-internal.h is private to src/rpc/; use rpc.h"
#endif

/* What rpc-server.c and rpc-client.c share; gRPC's headers are included here and nowhere else. */

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>

#include "rpc.h"

/* grpc_init() and the last grpc_shutdown_blocking(), counted across servers and channels. */
void rpc_grpc_ref(void);
void rpc_grpc_unref(void);

/* HTTP/2 flow-control window of each stream (GRPC_ARG_HTTP2_STREAM_LOOKAHEAD_BYTES): 8 MiB, a few
 * times the bandwidth-delay product of a 50 ms path at a few hundred Mbit/s (see rpc-common.c). */
#define RPC_STREAM_WINDOW_BYTES (8 * 1024 * 1024)

/* The channel arguments every server and channel gets. */
typedef struct RpcArgs {
        grpc_arg args[6];
        grpc_channel_args channel_args;
} RpcArgs;
void rpc_args_init(RpcArgs *a, const RpcOptions *o);

uint64_t rpc_options_max_message(const RpcOptions *o);

/* A byte buffer holding a copy of data; NULL on allocation failure. */
grpc_byte_buffer *rpc_buffer_new(const void *data, size_t size);
/* A byte buffer around data (malloc'ed), which it takes in every case; NULL on allocation failure. */
grpc_byte_buffer *rpc_buffer_take(void *data, size_t size);
/* The bytes of a byte buffer, malloc'ed and NUL-terminated beyond size. */
int rpc_buffer_read(grpc_byte_buffer *bb, void **ret, size_t *ret_size);

/* rpc_call_reply() and rpc_call_send() for a buffer (malloc'ed) that they take in every case, so
 * that a message packed for sending is not copied once more. */
int rpc_call_reply_take(RpcCall *c, void *data, size_t size);
int rpc_call_send_take(RpcCall *c, void *data, size_t size);

/* Relative timeout → absolute deadline; USEC_INFINITY → none. */
gpr_timespec rpc_deadline(usec_t timeout);

/* A slice's bytes as a C string (malloc'ed); NULL on allocation failure. */
char *rpc_slice_to_string(grpc_slice s);

/* Waits for tag on a pluck queue; returns whether the operation succeeded. */
bool rpc_pluck(grpc_completion_queue *cq, void *tag);
/* Shuts a pluck queue down, drains it and destroys it. */
void rpc_cq_destroy(grpc_completion_queue *cq);
