/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* protobuf-c messages over the rpc layer. Unpacked messages are freed with
 * protobuf_c_message_free_unpacked(). */

#include <protobuf-c/protobuf-c.h>

#include "rpc.h"

/* -EBADMSG when data is not a valid message of the descriptor's type. */
int rpc_proto_unpack(const ProtobufCMessageDescriptor *d, const void *data, size_t size,
                     ProtobufCMessage **ret);

/* The address of m's field called name if m has one holding a single value of type t, else NULL: for
 * code that serves several message types with a field in common. */
const void *rpc_proto_field(const ProtobufCMessage *m, const char *name, ProtobufCType t);

/* For "_cleanup_proto_ Foo *m = NULL;" with any unpacked message type. */
static inline void rpc_proto_freep(void *p) {
        ProtobufCMessage **m = p;

        if (*m)
                protobuf_c_message_free_unpacked(*m, NULL);
}
#define _cleanup_proto_ _cleanup_(rpc_proto_freep)

/* A handler's request, unpacked; a malformed one fails the call as -EINVAL with a message. */
int rpc_call_unpack(RpcCall *c, const ProtobufCMessageDescriptor *d, const void *data, size_t size,
                    ProtobufCMessage **ret);

/* rpc_call_reply() and rpc_call_send() of m, packed (and not copied again). */
int rpc_call_reply_proto(RpcCall *c, const ProtobufCMessage *m);
int rpc_call_send_proto(RpcCall *c, const ProtobufCMessage *m);

/* rpc_unary() with the request packed and the reply unpacked as a message of type reply: a reply
 * that is not one is -EBADMSG. */
int rpc_unary_proto(RpcChannel *c, const char *method, const ProtobufCMessage *request,
                    const ProtobufCMessageDescriptor *reply, usec_t timeout, ProtobufCMessage **ret,
                    char **ret_error);
int rpc_stream_open_proto(RpcChannel *c, const char *method, const ProtobufCMessage *request, usec_t timeout,
                          RpcStream **ret);
/* 1 and a message, 0 at the end, or a negative errno (as rpc_stream_next()); a message not of
 * type d is -EBADMSG. */
int rpc_stream_next_proto(RpcStream *s, const ProtobufCMessageDescriptor *d, ProtobufCMessage **ret,
                          char **ret_error);
