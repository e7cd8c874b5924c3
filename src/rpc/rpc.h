/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * tonari's rpc layer: the only code that calls gRPC core. Messages are opaque bytes here;
 * rpc-proto.h packs protobuf-c messages into them. Unary and server-streaming calls, over unix
 * sockets ("unix:/path") and TCP ("host:port", "[v6]:port").
 *
 * Errors are negative errno values on both sides, carried as gRPC status codes with a message
 * (the table is in rpc-status.h). A handler's -ENOENT with the message "no image \"x\"" arrives
 * at the client as -ENOENT with that message.
 *
 * Threads: gRPC runs its own. Calls to methods added with RPC_METHOD_BLOCKING (a pull that takes
 * minutes, a stream of file content) run each on a thread of its own, up to
 * RpcOptions.max_blocking_threads; such a thread takes the next waiting blocking call when its own
 * is done, and ends when none waits. All other calls run on a pool of RpcOptions.threads threads,
 * so that a slow call never delays a lookup. A non-blocking handler must therefore be quick: while
 * all pool threads are busy, further calls to such methods wait. Handlers may run concurrently with
 * each other and must be thread-safe.
 *
 * gRPC starts threads at the first server or channel: a daemon must fork (or daemonize) before.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"
#include "rpc-status.h"
#include "time-util.h"

/* Bytes, sent and received, on both sides. Large enough for the biggest message tonari sends (1 MiB
 * pieces, lists of images); gRPC's default receive limit (4 MiB) would refuse an image list of a
 * large store. Small enough that one call cannot make a peer allocate without bound. A message over
 * the limit fails the call with RESOURCE_EXHAUSTED, i.e. -EMSGSIZE. */
#define RPC_MAX_MESSAGE_DEFAULT (16U * 1024U * 1024U)
/* Threads of the server's pool for quick calls: as many as the cores of a small storage node, since
 * such a handler computes rather than waits. */
#define RPC_THREADS_DEFAULT 4U
/* Threads for calls to blocking methods at most: each waits on a disk or a registry, and 256 of
 * those keep any disk's queue full. A call beyond waits until one of them is free. */
#define RPC_BLOCKING_THREADS_DEFAULT 256U

typedef struct RpcOptions {
        uint64_t max_message_bytes;    /* sent and received; 0: RPC_MAX_MESSAGE_DEFAULT */
        unsigned threads;              /* server pool; 0: RPC_THREADS_DEFAULT */
        unsigned max_blocking_threads; /* server; 0: RPC_BLOCKING_THREADS_DEFAULT */
        /* Client: the longest wait between attempts to reconnect to a server that went away;
         * 0: gRPC's (up to 120 s, growing from 1 s). A client that must notice a restarted server
         * within seconds (tonari-imagefs) sets it low. */
        usec_t reconnect_backoff_max_usec;
} RpcOptions;

/* Server */

typedef struct RpcServer RpcServer;
typedef struct RpcCall RpcCall;

typedef enum RpcMethodKind {
        RPC_UNARY,
        RPC_SERVER_STREAM,
} RpcMethodKind;

#define RPC_METHOD_BLOCKING (1U << 0)

/*
 * A handler gets the request's bytes (valid until it returns). A unary handler calls
 * rpc_call_reply() once; a streaming one calls rpc_call_send() for each message. It returns 0, or
 * a negative errno that becomes the call's status, with the message set by rpc_call_set_error()
 * (or strerror() when none was set).
 */
typedef int (*rpc_handler_t)(RpcCall *call, const void *request, size_t size, void *userdata);

int rpc_server_new(const RpcOptions *o, RpcServer **ret);
/* path: "/package.Service/Method". Before rpc_server_start(). */
int rpc_server_add_method(RpcServer *s, const char *path, RpcMethodKind kind, unsigned flags,
                          rpc_handler_t handler, void *userdata);

typedef struct RpcMethod {
        const char *name; /* "Method" */
        RpcMethodKind kind;
        unsigned flags;
        rpc_handler_t handler;
} RpcMethod;
/* rpc_server_add_method() of each of a service's methods, as "/package.Service/Method", all with the
 * same userdata. service: "package.Service". */
int rpc_server_add_service(RpcServer *s, const char *service, const RpcMethod *methods, size_t n_methods,
                           void *userdata);
/*
 * Before rpc_server_start(). "unix:/path": a stale socket at path is replaced, a live one (some
 * process accepts on it) is -EADDRINUSE, so is anything else there; a missing directory is
 * -ENOENT. The socket is created with unix_mode (the umask is changed for that moment) and removed
 * by rpc_server_free(). "host:port": port 0 picks a free port, returned in *ret_port; a port in use
 * is -EADDRINUSE (ports are never shared with another server).
 */
int rpc_server_listen(RpcServer *s, const char *address, unsigned unix_mode, int *ret_port);
int rpc_server_start(RpcServer *s);
/*
 * Stops accepting calls, lets running ones finish for up to grace, then cancels them (their sends
 * fail with -ECANCELED, rpc_call_cancelled() says true) and waits up to cancel_wait for every
 * handler to return. 0 when all did; -ETIMEDOUT when some handler still runs (one that blocks
 * somewhere that never looks at its call): the server is then still in use and must not be freed,
 * and the process should exit. USEC_INFINITY waits for as long as it takes.
 */
int rpc_server_shutdown(RpcServer *s, usec_t grace, usec_t cancel_wait);
/* Shuts down (no grace) if needed, and frees. */
RpcServer *rpc_server_free(RpcServer *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(RpcServer *, rpc_server_free);
#define _cleanup_rpc_server_ _cleanup_(rpc_server_freep)

/* The reply of a unary call (copied), sent when the handler returns 0. Once; -EBUSY after that,
 * -EINVAL in a streaming call. */
int rpc_call_reply(RpcCall *c, const void *data, size_t size);
/* One message of a stream. Blocks while the client does not read (flow control); -ECANCELED when
 * the client went away, cancelled, or the deadline passed: the handler should return then. */
int rpc_call_send(RpcCall *c, const void *data, size_t size);
/* The status message for the error the handler is about to return. */
void rpc_call_set_error(RpcCall *c, const char *format, ...) _printf_(2, 3);
/* Whether the client cancelled (or the deadline passed) as far as is known now. */
bool rpc_call_cancelled(RpcCall *c);

/* Client */

typedef struct RpcChannel RpcChannel;
typedef struct RpcStream RpcStream;

/* Whether a is an address in the syntax tonari accepts for a server or a channel: "unix:/absolute/path"
 * (normalized), "HOST:PORT" or "[V6]:PORT" with a port from 1 to 65535. Checks form, not reachability. */
bool rpc_address_is_valid(const char *a) _pure_;

/* target: "unix:/path" or "host:port". Connects lazily, at the first call. */
int rpc_channel_new(const char *target, const RpcOptions *o, RpcChannel **ret);
RpcChannel *rpc_channel_free(RpcChannel *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(RpcChannel *, rpc_channel_free);
#define _cleanup_rpc_channel_ _cleanup_(rpc_channel_freep)

/*
 * A unary call; timeout is relative (USEC_INFINITY: none). On success the reply is in
 * *ret_reply (malloc'ed, NUL-terminated beyond size). On failure the negative errno of the status,
 * and its message in *ret_error (optional; NULL or a malloc'ed string, which it replaces). A server
 * that cannot be reached gives -EAGAIN (UNAVAILABLE) at once rather than waiting for it.
 */
int rpc_unary(RpcChannel *c, const char *method, const void *request, size_t size, usec_t timeout,
              void **ret_reply, size_t *ret_size, char **ret_error);

/* A server-streaming call; timeout (relative) covers the whole stream, and its passing fails the
 * server's next send. A refused call shows at the first rpc_stream_next(). */
int rpc_stream_open(RpcChannel *c, const char *method, const void *request, size_t size, usec_t timeout,
                    RpcStream **ret);
/* 1 and a message (malloc'ed), 0 at the end of a successful stream, or the status as a negative
 * errno with its message. After rpc_stream_cancel(): -ECANCELED. */
int rpc_stream_next(RpcStream *s, void **ret_message, size_t *ret_size, char **ret_error);
/* Cancels the call: the server's next send fails. Safe to call from another thread. */
void rpc_stream_cancel(RpcStream *s);
RpcStream *rpc_stream_free(RpcStream *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(RpcStream *, rpc_stream_free);
#define _cleanup_rpc_stream_ _cleanup_(rpc_stream_freep)
