/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* tonari.relay.v1.Relay: Pull, ListImages, GetImage, RemoveImage, GC. */

#include <errno.h>
#include <inttypes.h>

#include "alloc-util.h"
#include "log.h"
#include "oci-util.h"
#include "relay-proto.h"
#include "relay.h"
#include "rpc-proto.h"
#include "string-util.h"
#include "time-util.h"

#define SERVICE "tonari.relay.v1.Relay"


typedef struct PullCall {
        RpcCall *call;
        usec_t checked;
        bool cancelled;
} PullCall;

/* Whether the client is gone (or the relay shuts down): asked between pieces of a pull's work, so
 * at most every 50 ms of it asks the rpc layer. */
static bool call_cancelled(void *userdata) {
        PullCall *pc = userdata;
        usec_t t = now(CLOCK_MONOTONIC);

        if (!pc->cancelled && t - pc->checked >= 50 * USEC_PER_MSEC) {
                pc->checked = t;
                pc->cancelled = rpc_call_cancelled(pc->call);
        }
        return pc->cancelled;
}

static int pull_progress(const PullProgress *p, void *userdata) {
        PullCall *pc = userdata;
        Tonari__Relay__V1__PullProgress m = TONARI__RELAY__V1__PULL_PROGRESS__INIT;
        ImageProto image = {};
        char layer[DIGEST_STRING_MAX];
        int r;

        m.phase = pull_phase_to_proto(p->phase);
        if (p->layer)
                m.layer_digest = digest_to_string(p->layer, layer);
        m.layer_done_bytes = p->layer_done_bytes;
        m.layer_total_bytes = p->layer_total_bytes;
        m.layers_done = p->layers_done;
        m.layers_total = p->layers_total;
        if (p->image) {
                r = image_proto_init(&image, p->image);
                if (r < 0)
                        return r;
                m.image = &image.image;
        }
        r = rpc_call_send_proto(pc->call, &m.base);
        image_proto_done(&image);
        /* The client went away: the pull stops (and leaves nothing half-visible). */
        return r;
}

static int handle_pull(RpcCall *call, const void *data, size_t size, void *userdata) {
        Relay *relay = userdata;
        _cleanup_image_reference_ ImageReference *ref = NULL;
        _cleanup_image_record_ ImageRecord *rec = NULL;
        _cleanup_free_ char *err = NULL;
        OciPlatform platform = {};
        PullCall pc = { .call = call };
        Cancel cancel = { .cancelled = call_cancelled, .userdata = &pc };
        PullOptions o = { .cancel = &cancel };
        int r;

        _cleanup_proto_ Tonari__Relay__V1__PullRequest *req = NULL;

        r = rpc_call_unpack(call, &tonari__relay__v1__pull_request__descriptor, data, size, (ProtobufCMessage **) &req);
        if (r < 0)
                return r;

        r = image_reference_parse(req->source, &ref);
        if (r < 0) {
                rpc_call_set_error(call, "invalid image source \"%s\"", req->source);
                return -EINVAL;
        }
        if (req->plain_http && ref->transport == IMAGE_TRANSPORT_REGISTRY &&
            !relay_config_insecure(&relay->config, ref->host)) {
                rpc_call_set_error(call, "plain HTTP to \"%s\" is not allowed: it is not in [Pull] InsecureRegistries=",
                                   ref->host);
                return -EPERM;
        }
        o.source = req->source;
        o.name = isempty(req->name) ? NULL : req->name;
        o.plain_http = req->plain_http;
        o.ca_file = isempty(relay->config.ca_file) ? NULL : relay->config.ca_file;
        if (req->platform) {
                platform.os = isempty(req->platform->os) ? (char *) "linux" : req->platform->os;
                platform.architecture = isempty(req->platform->architecture) ? NULL : req->platform->architecture;
                platform.variant = isempty(req->platform->variant) ? NULL : req->platform->variant;
                o.platform = &platform;
        }

        log_info("Pulling '%s'.", req->source);
        r = image_store_pull(relay->store, &o, pull_progress, &pc, &rec, &err);
        if (r < 0) {
                if (r == -ECANCELED)
                        log_info("Pull of '%s' cancelled by the client.", req->source);
                else
                        log_warning("Pull of '%s' failed: %s", req->source, strna(err));
                rpc_call_set_error(call, "%s", err ?: strerror(-r));
                return r;
        }
        {
                uint64_t bytes = 0;

                for (size_t i = 0; i < rec->n_layers; i++)
                        bytes += rec->layers[i].unpacked_bytes;
                log_info("Pulled '%s' as '%s': %zu layers, %" PRIu64 " bytes unpacked.", req->source, rec->name,
                         rec->n_layers, bytes);
        }
        return 0;
}

static int handle_list(RpcCall *call, const void *data, size_t size, void *userdata) {
        Relay *relay = userdata;
        Tonari__Relay__V1__ListImagesResponse m = TONARI__RELAY__V1__LIST_IMAGES_RESPONSE__INIT;
        _cleanup_free_ ImageProto *protos = NULL;
        _cleanup_free_ Tonari__Relay__V1__Image **ptrs = NULL;
        ImageRecord **list = NULL;
        size_t n = 0, done = 0;
        int r;

        r = image_store_list(relay->store, &list, &n);
        if (r < 0)
                return r;
        protos = new0(ImageProto, n);
        ptrs = new0(Tonari__Relay__V1__Image *, n);
        if (!protos || !ptrs)
                r = -ENOMEM;
        for (; r >= 0 && done < n; done++) {
                r = image_proto_init(&protos[done], list[done]);
                if (r >= 0)
                        ptrs[done] = &protos[done].image;
        }
        if (r >= 0) {
                m.n_images = n;
                m.images = ptrs;
                r = rpc_call_reply_proto(call, &m.base);
        }
        for (size_t i = 0; i < done; i++)
                image_proto_done(&protos[i]);
        image_record_list_free(list, n);
        return r;
}

static int handle_get(RpcCall *call, const void *data, size_t size, void *userdata) {
        Relay *relay = userdata;
        _cleanup_image_record_ ImageRecord *rec = NULL;
        ImageProto p = {};
        int r;

        _cleanup_proto_ Tonari__Relay__V1__GetImageRequest *req = NULL;

        r = rpc_call_unpack(call, &tonari__relay__v1__get_image_request__descriptor, data, size, (ProtobufCMessage **) &req);
        if (r < 0)
                return r;
        r = image_store_get(relay->store, req->name, &rec);
        if (r == -ENOENT) {
                rpc_call_set_error(call, "no image \"%s\"", req->name);
                return r;
        }
        if (r < 0)
                return r;
        r = image_proto_init(&p, rec);
        if (r < 0)
                return r;
        r = rpc_call_reply_proto(call, &p.image.base);
        image_proto_done(&p);
        return r;
}

static int handle_remove(RpcCall *call, const void *data, size_t size, void *userdata) {
        Relay *relay = userdata;
        Tonari__Relay__V1__RemoveImageResponse m = TONARI__RELAY__V1__REMOVE_IMAGE_RESPONSE__INIT;
        _cleanup_free_ Digest *gone = NULL;
        _cleanup_free_ char (*strings)[DIGEST_STRING_MAX] = NULL;
        _cleanup_free_ char **ptrs = NULL;
        size_t n = 0;
        int r;

        _cleanup_proto_ Tonari__Relay__V1__RemoveImageRequest *req = NULL;

        r = rpc_call_unpack(call, &tonari__relay__v1__remove_image_request__descriptor, data, size, (ProtobufCMessage **) &req);
        if (r < 0)
                return r;
        r = image_store_remove(relay->store, req->name, &gone, &n);
        if (r == -ENOENT) {
                rpc_call_set_error(call, "no image \"%s\"", req->name);
                return r;
        }
        if (r < 0)
                return r;
        log_info("Removed image '%s'; %zu layers are no longer used.", req->name, n);
        strings = calloc(n ?: 1, sizeof(*strings));
        ptrs = new0(char *, n);
        if (!strings || !ptrs)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                ptrs[i] = digest_to_string(&gone[i], strings[i]);
        m.n_unreferenced_layers = n;
        m.unreferenced_layers = ptrs;
        return rpc_call_reply_proto(call, &m.base);
}

static int handle_gc(RpcCall *call, const void *data, size_t size, void *userdata) {
        Relay *relay = userdata;
        Tonari__Relay__V1__GCResponse m = TONARI__RELAY__V1__GCRESPONSE__INIT;
        _cleanup_free_ char *err = NULL;
        PullCall pc = { .call = call };
        Cancel cancel = { .cancelled = call_cancelled, .userdata = &pc };
        GcStats s;
        int r;

        _cleanup_proto_ Tonari__Relay__V1__GCRequest *req = NULL;

        r = rpc_call_unpack(call, &tonari__relay__v1__gcrequest__descriptor, data, size, (ProtobufCMessage **) &req);
        if (r < 0)
                return r;
        r = image_store_gc(relay->store, req->dry_run, &cancel, &s, &err);
        if (r < 0) {
                rpc_call_set_error(call, "%s", err ?: strerror(-r));
                return r;
        }
        if (!req->dry_run)
                relay_toc_forget_removed(relay);
        log_info("Garbage collection%s: %" PRIu64 " blobs, %" PRIu64 " layers, %" PRIu64 " objects, %" PRIu64
                 " bytes.",
                 req->dry_run ? " (dry run)" : "", s.blobs_removed, s.layers_removed, s.objects_removed,
                 s.freed_bytes);
        m.blobs_removed = s.blobs_removed;
        m.layers_removed = s.layers_removed;
        m.objects_removed = s.objects_removed;
        m.freed_bytes = s.freed_bytes;
        return rpc_call_reply_proto(call, &m.base);
}

int relay_register_relay_service(Relay *r) {
        static const RpcMethod methods[] = {
                { "Pull", RPC_SERVER_STREAM, RPC_METHOD_BLOCKING, handle_pull },
                { "ListImages", RPC_UNARY, 0, handle_list },
                { "GetImage", RPC_UNARY, 0, handle_get },
                { "RemoveImage", RPC_UNARY, 0, handle_remove },
                { "GC", RPC_UNARY, RPC_METHOD_BLOCKING, handle_gc },
        };

        return rpc_server_add_service(r->server, SERVICE, methods, ELEMENTSOF(methods), r);
}
