/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdatomic.h>
#include <string.h>

#include "alloc-util.h"
#include "path-util.h"
#include "rpc-internal.h"
#include "string-util.h"

struct RpcChannel {
        grpc_channel *channel;
};

struct RpcStream {
        grpc_call *call;
        grpc_completion_queue *cq;
        grpc_metadata_array initial, trailing;
        grpc_status_code status;
        grpc_slice details;
        bool status_started, status_received, ended;
        atomic_bool cancelled;
};

enum {
        TAG_BATCH = 1,
        TAG_STATUS,
};
#define TAG(t) ((void *) (uintptr_t) (t))

static bool target_is_valid(const char *t) {
        const char *path = startswith(t, "unix:");

        if (path)
                return path_is_normalized_absolute(path);
        /* host:port; gRPC resolves the host. */
        return !isempty(t) && strchr(t, ':') && !strpbrk(t, " \t\r\n/") && t[0] != ':';
}

int rpc_channel_new(const char *target, const RpcOptions *o, RpcChannel **ret) {
        grpc_channel_credentials *creds;
        RpcChannel *c;
        RpcArgs args;

        if (!target || !target_is_valid(target))
                return -EINVAL;
        c = new0(RpcChannel, 1);
        if (!c)
                return -ENOMEM;
        rpc_grpc_ref();
        rpc_args_init(&args, o);
        creds = grpc_insecure_credentials_create();
        c->channel = grpc_channel_create(target, creds, &args.channel_args);
        grpc_channel_credentials_release(creds);
        if (!c->channel) {
                free(c);
                rpc_grpc_unref();
                return -ENOMEM;
        }
        *ret = c;
        return 0;
}

RpcChannel *rpc_channel_free(RpcChannel *c) {
        if (!c)
                return NULL;
        grpc_channel_destroy(c->channel);
        free(c);
        rpc_grpc_unref();
        return NULL;
}

static grpc_call *create_call(RpcChannel *c, const char *method, grpc_completion_queue *cq, usec_t timeout) {
        grpc_slice m = grpc_slice_from_copied_string(method);
        grpc_call *call;

        call = grpc_channel_create_call(c->channel, NULL, GRPC_PROPAGATE_DEFAULTS, cq, m, NULL,
                                        rpc_deadline(timeout), NULL);
        grpc_slice_unref(m);
        return call;
}

/* The status as an errno, and its message. */
static int status_result(grpc_status_code status, grpc_slice details, char **ret_error) {
        int r = rpc_status_to_errno((int) status);

        if (r < 0 && ret_error) {
                char *m = rpc_slice_to_string(details);

                if (m && isempty(m)) {
                        char buf[32];

                        free(m);
                        m = strdup(rpc_status_to_string((int) status, buf));
                }
                free(*ret_error);
                *ret_error = m;
        }
        return r;
}

int rpc_unary(RpcChannel *c, const char *method, const void *request, size_t size, usec_t timeout,
              void **ret_reply, size_t *ret_size, char **ret_error) {
        grpc_metadata_array initial, trailing;
        grpc_byte_buffer *req = NULL, *reply = NULL;
        grpc_status_code status = GRPC_STATUS_UNKNOWN;
        grpc_slice details = grpc_empty_slice();
        grpc_completion_queue *cq;
        grpc_call *call = NULL;
        grpc_op ops[6] = {};
        int r;

        if (!method || method[0] != '/')
                return -EINVAL;
        cq = grpc_completion_queue_create_for_pluck(NULL);
        if (!cq)
                return -ENOMEM;
        grpc_metadata_array_init(&initial);
        grpc_metadata_array_init(&trailing);
        req = rpc_buffer_new(request, size);
        call = req ? create_call(c, method, cq, timeout) : NULL;
        if (!call) {
                r = -ENOMEM;
                goto finish;
        }

        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[1].op = GRPC_OP_SEND_MESSAGE;
        ops[1].data.send_message.send_message = req;
        ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial;
        ops[4].op = GRPC_OP_RECV_MESSAGE;
        ops[4].data.recv_message.recv_message = &reply;
        ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        ops[5].data.recv_status_on_client.trailing_metadata = &trailing;
        ops[5].data.recv_status_on_client.status = &status;
        ops[5].data.recv_status_on_client.status_details = &details;
        if (grpc_call_start_batch(call, ops, ELEMENTSOF(ops), TAG(TAG_BATCH), NULL) != GRPC_CALL_OK) {
                r = -EIO;
                goto finish;
        }
        /* The batch completes with the status in every case (its success flag says nothing more). */
        (void) rpc_pluck(cq, TAG(TAG_BATCH));

        r = status_result(status, details, ret_error);
        if (r < 0)
                goto finish;
        if (!reply) {
                r = -EPROTO;
                if (ret_error) {
                        free(*ret_error);
                        *ret_error = strdup("the server sent no reply");
                }
                goto finish;
        }
        if (ret_reply) {
                r = rpc_buffer_read(reply, ret_reply, ret_size);
                if (r < 0)
                        goto finish;
        }
        r = 0;
finish:
        if (reply)
                grpc_byte_buffer_destroy(reply);
        if (req)
                grpc_byte_buffer_destroy(req);
        grpc_slice_unref(details);
        grpc_metadata_array_destroy(&initial);
        grpc_metadata_array_destroy(&trailing);
        if (call)
                grpc_call_unref(call);
        rpc_cq_destroy(cq);
        return r;
}

RpcStream *rpc_stream_free(RpcStream *s) {
        if (!s)
                return NULL;
        if (s->call) {
                if (s->status_started && !s->status_received) {
                        grpc_call_cancel(s->call, NULL);
                        (void) rpc_pluck(s->cq, TAG(TAG_STATUS));
                }
                grpc_call_unref(s->call);
        }
        grpc_slice_unref(s->details);
        grpc_metadata_array_destroy(&s->initial);
        grpc_metadata_array_destroy(&s->trailing);
        rpc_cq_destroy(s->cq);
        free(s);
        return NULL;
}

int rpc_stream_open(RpcChannel *c, const char *method, const void *request, size_t size, usec_t timeout,
                    RpcStream **ret) {
        grpc_byte_buffer *req;
        grpc_op ops[4] = {}, st = {};
        RpcStream *s;
        bool ok;

        if (!method || method[0] != '/')
                return -EINVAL;
        s = new0(RpcStream, 1);
        if (!s)
                return -ENOMEM;
        s->details = grpc_empty_slice();
        grpc_metadata_array_init(&s->initial);
        grpc_metadata_array_init(&s->trailing);
        s->cq = grpc_completion_queue_create_for_pluck(NULL);
        if (s->cq)
                s->call = create_call(c, method, s->cq, timeout);
        req = s->call ? rpc_buffer_new(request, size) : NULL;
        if (!req) {
                rpc_stream_free(s);
                return -ENOMEM;
        }

        /* The status is collected from the start; next() waits for it at the end of the stream. */
        st.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
        st.data.recv_status_on_client.trailing_metadata = &s->trailing;
        st.data.recv_status_on_client.status = &s->status;
        st.data.recv_status_on_client.status_details = &s->details;
        if (grpc_call_start_batch(s->call, &st, 1, TAG(TAG_STATUS), NULL) != GRPC_CALL_OK) {
                grpc_byte_buffer_destroy(req);
                rpc_stream_free(s);
                return -EIO;
        }
        s->status_started = true;

        ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
        ops[1].op = GRPC_OP_SEND_MESSAGE;
        ops[1].data.send_message.send_message = req;
        ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
        ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
        ops[3].data.recv_initial_metadata.recv_initial_metadata = &s->initial;
        ok = grpc_call_start_batch(s->call, ops, ELEMENTSOF(ops), TAG(TAG_BATCH), NULL) == GRPC_CALL_OK;
        if (ok)
                (void) rpc_pluck(s->cq, TAG(TAG_BATCH));
        grpc_byte_buffer_destroy(req);
        if (!ok) {
                rpc_stream_free(s);
                return -EIO;
        }
        /* A failure to connect or a refused call shows as the status at the first next(). */
        *ret = s;
        return 0;
}

static int cancelled(char **ret_error) {
        if (ret_error) {
                free(*ret_error);
                *ret_error = strdup("cancelled by the client");
        }
        return -ECANCELED;
}

int rpc_stream_next(RpcStream *s, void **ret_message, size_t *ret_size, char **ret_error) {
        grpc_byte_buffer *bb = NULL;
        grpc_op op = { .op = GRPC_OP_RECV_MESSAGE };
        int r;

        if (atomic_load(&s->cancelled))
                return cancelled(ret_error);
        if (!s->ended) {
                op.data.recv_message.recv_message = &bb;
                if (grpc_call_start_batch(s->call, &op, 1, TAG(TAG_BATCH), NULL) != GRPC_CALL_OK)
                        return -EIO;
                (void) rpc_pluck(s->cq, TAG(TAG_BATCH));
                if (bb) {
                        r = rpc_buffer_read(bb, ret_message, ret_size);
                        grpc_byte_buffer_destroy(bb);
                        return r < 0 ? r : 1;
                }
                s->ended = true;
        }

        if (!s->status_received) {
                (void) rpc_pluck(s->cq, TAG(TAG_STATUS));
                s->status_received = true;
        }
        if (atomic_load(&s->cancelled))
                return cancelled(ret_error);
        return status_result(s->status, s->details, ret_error);
}

void rpc_stream_cancel(RpcStream *s) {
        atomic_store(&s->cancelled, true);
        grpc_call_cancel(s->call, NULL);
}
