/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "rpc-internal.h"
#include "rpc-proto.h"

static int pack(const ProtobufCMessage *m, uint8_t **ret, size_t *ret_size) {
        size_t n = protobuf_c_message_get_packed_size(m);
        uint8_t *buf = malloc(n ?: 1);

        if (!buf)
                return -ENOMEM;
        if (protobuf_c_message_pack(m, buf) != n) {
                free(buf);
                return -EIO;
        }
        *ret = buf;
        *ret_size = n;
        return 0;
}

int rpc_proto_unpack(const ProtobufCMessageDescriptor *d, const void *data, size_t size,
                     ProtobufCMessage **ret) {
        ProtobufCMessage *m = protobuf_c_message_unpack(d, NULL, size, data);

        if (!m)
                return -EBADMSG;
        *ret = m;
        return 0;
}

const void *rpc_proto_field(const ProtobufCMessage *m, const char *name, ProtobufCType t) {
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(m->descriptor, name);

        if (!f || f->type != t || f->label == PROTOBUF_C_LABEL_REPEATED)
                return NULL;
        return (const uint8_t *) m + f->offset;
}

int rpc_call_reply_proto(RpcCall *c, const ProtobufCMessage *m) {
        uint8_t *buf;
        size_t n;
        int r;

        r = pack(m, &buf, &n);
        return r < 0 ? r : rpc_call_reply_take(c, buf, n);
}

int rpc_call_send_proto(RpcCall *c, const ProtobufCMessage *m) {
        uint8_t *buf;
        size_t n;
        int r;

        /* A piece of a layer is packed once and handed to gRPC as it is. */
        r = pack(m, &buf, &n);
        return r < 0 ? r : rpc_call_send_take(c, buf, n);
}

int rpc_unary_proto(RpcChannel *c, const char *method, const ProtobufCMessage *request,
                    const ProtobufCMessageDescriptor *reply, usec_t timeout, ProtobufCMessage **ret,
                    char **ret_error) {
        _cleanup_free_ uint8_t *buf = NULL;
        _cleanup_free_ void *answer = NULL;
        size_t n, answer_size;
        int r;

        r = pack(request, &buf, &n);
        if (r < 0)
                return r;
        r = rpc_unary(c, method, buf, n, timeout, &answer, &answer_size, ret_error);
        if (r < 0)
                return r;
        return rpc_proto_unpack(reply, answer, answer_size, ret);
}

int rpc_stream_open_proto(RpcChannel *c, const char *method, const ProtobufCMessage *request, usec_t timeout,
                          RpcStream **ret) {
        _cleanup_free_ uint8_t *buf = NULL;
        size_t n;
        int r;

        r = pack(request, &buf, &n);
        return r < 0 ? r : rpc_stream_open(c, method, buf, n, timeout, ret);
}

int rpc_stream_next_proto(RpcStream *s, const ProtobufCMessageDescriptor *d, ProtobufCMessage **ret,
                          char **ret_error) {
        _cleanup_free_ void *data = NULL;
        size_t size;
        int r;

        r = rpc_stream_next(s, &data, &size, ret_error);
        if (r <= 0)
                return r;
        r = rpc_proto_unpack(d, data, size, ret);
        return r < 0 ? r : 1;
}

int rpc_call_unpack(RpcCall *c, const ProtobufCMessageDescriptor *d, const void *data, size_t size,
                    ProtobufCMessage **ret) {
        if (rpc_proto_unpack(d, data, size, ret) < 0) {
                rpc_call_set_error(c, "malformed %s", d->name);
                return -EINVAL;
        }
        return 0;
}
