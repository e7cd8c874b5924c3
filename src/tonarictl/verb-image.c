/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "format-util.h"
#include "log.h"
#include "relay.pb-c.h"
#include "rpc-proto.h"
#include "string-util.h"
#include "table.h"
#include "time-util.h"
#include "toc.h"
#include "tonarictl.h"
#include "verb-image.h"
#include "verb-imagefs.h"

#define RELAY "/tonari.relay.v1.Relay/"
/* Listing, showing and removing are quick; a relay that does not answer in this time is stuck. */
#define CALL_TIMEOUT_USEC (30 * USEC_PER_SEC)

static int connect_relay(RpcChannel **ret) {
        int r = rpc_channel_new(arg_relay, NULL, ret);

        if (r < 0)
                return log_error_errno(r, "Invalid relay address '%s': expected unix:/PATH or HOST:PORT.", arg_relay);
        return 0;
}

static int report(const char *what, int r, const char *message) {
        if (r == -EAGAIN && message && strstr(message, "connect"))
                return log_error_errno(r, "Failed to %s: the relay at '%s' cannot be reached (%s).", what, arg_relay,
                                       message);
        return log_error_errno(r, "Failed to %s: %s", what, message ?: strerror(-r));
}

static json_object *image_json(const Tonari__Relay__V1__Image *m) {
        json_object *o = json_object_new_object(), *layers = json_object_new_array();

        if (!o || !layers) {
                json_object_put(o);
                json_object_put(layers);
                return NULL;
        }
        json_object_object_add(o, "name", json_object_new_string(m->name));
        json_object_object_add(o, "source", json_object_new_string(m->source));
        json_object_object_add(o, "manifestDigest", json_object_new_string(m->manifest_digest));
        json_object_object_add(o, "configDigest", json_object_new_string(m->config_digest));
        if (m->platform) {
                json_object_object_add(o, "os", json_object_new_string(m->platform->os));
                json_object_object_add(o, "architecture", json_object_new_string(m->platform->architecture));
                if (!isempty(m->platform->variant))
                        json_object_object_add(o, "variant", json_object_new_string(m->platform->variant));
        }
        json_object_object_add(o, "pulledUSec", json_object_new_int64((int64_t) m->pulled_usec));
        json_object_object_add(o, "layers", layers);
        for (size_t i = 0; i < m->n_layers; i++) {
                const Tonari__Relay__V1__Layer *l = m->layers[i];
                json_object *x = json_object_new_object();

                if (!x || json_object_array_add(layers, x) < 0) {
                        json_object_put(x);
                        json_object_put(o);
                        return NULL;
                }
                json_object_object_add(x, "digest", json_object_new_string(l->digest));
                json_object_object_add(x, "diffID", json_object_new_string(l->diff_id));
                json_object_object_add(x, "mediaType", json_object_new_string(l->media_type));
                json_object_object_add(x, "size", json_object_new_int64((int64_t) l->size_bytes));
                json_object_object_add(x, "unpackedBytes", json_object_new_int64((int64_t) l->unpacked_bytes));
                json_object_object_add(x, "tocBytes", json_object_new_int64((int64_t) l->toc_bytes));
                json_object_object_add(x, "tocEntries", json_object_new_int64((int64_t) l->toc_entries));
                if (!isempty(l->toc_digest))
                        json_object_object_add(x, "tocDigest", json_object_new_string(l->toc_digest));
        }
        return o;
}

static uint64_t image_bytes(const Tonari__Relay__V1__Image *m, bool unpacked) {
        uint64_t sum = 0;

        for (size_t i = 0; i < m->n_layers; i++)
                sum += unpacked ? m->layers[i]->unpacked_bytes : m->layers[i]->size_bytes;
        return sum;
}

static int parse_platform(Tonari__Relay__V1__Platform *p, char **ret_copy) {
        _cleanup_free_ char *copy = strdup(arg_platform);
        char *arch, *variant;

        if (!copy)
                return log_oom();
        arch = strchr(copy, '/');
        if (!arch || arch == copy || !arch[1])
                return log_error_errno(EINVAL, "Invalid --platform= value '%s': expected OS/ARCH[/VARIANT].",
                                       arg_platform);
        *arch++ = 0;
        variant = strchr(arch, '/');
        if (variant)
                *variant++ = 0;
        if (strchr(strempty(variant), '/'))
                return log_error_errno(EINVAL, "Invalid --platform= value '%s': expected OS/ARCH[/VARIANT].",
                                       arg_platform);
        p->os = copy;
        p->architecture = arch;
        p->variant = variant ?: (char *) "";
        *ret_copy = TAKE_PTR(copy);
        return 0;
}

static void show_progress(const Tonari__Relay__V1__PullProgress *p, bool tty, int *last_phase,
                          char *last_layer, size_t last_layer_size) {
        static const char *const phases[] = { "", "resolving", "fetching", "unpacking", "present", "done" };
        char done[FORMAT_BYTES_MAX], total[FORMAT_BYTES_MAX];
        const char *phase = (unsigned) p->phase < ELEMENTSOF(phases) ? phases[p->phase] : "?";
        /* "sha256:" and 12 hex digits are how people tell layers apart. */
        int short_len = (int) MIN(strlen(p->layer_digest), (size_t) 19);

        if (tty) {
                fprintf(stderr, "\r\033[K[%u/%u] %s", p->layers_done, p->layers_total, phase);
                if (!isempty(p->layer_digest))
                        fprintf(stderr, " %.*s %s / %s", short_len, p->layer_digest,
                                format_bytes(done, sizeof(done), p->layer_done_bytes),
                                format_bytes(total, sizeof(total), p->layer_total_bytes));
                if (p->phase == TONARI__RELAY__V1__PULL_PROGRESS__PHASE__PHASE_DONE)
                        fputc('\n', stderr);
                fflush(stderr);
                return;
        }
        /* Not a terminal: one line per step, none per byte. */
        if ((int) p->phase == *last_phase && streq(p->layer_digest, last_layer))
                return;
        *last_phase = (int) p->phase;
        snprintf(last_layer, last_layer_size, "%s", p->layer_digest);
        if (p->phase != TONARI__RELAY__V1__PULL_PROGRESS__PHASE__PHASE_DONE)
                fprintf(stderr, "[%u/%u] %s %.*s\n", p->layers_done, p->layers_total, phase, short_len,
                        p->layer_digest);
}

static int image_pull(int argc, char *argv[]) {
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_rpc_stream_ RpcStream *s = NULL;
        _cleanup_proto_ Tonari__Relay__V1__PullProgress *last = NULL;
        _cleanup_free_ char *err = NULL, *platform_copy = NULL;
        Tonari__Relay__V1__PullRequest req = TONARI__RELAY__V1__PULL_REQUEST__INIT;
        Tonari__Relay__V1__Platform platform = TONARI__RELAY__V1__PLATFORM__INIT;
        char last_layer[DIGEST_STRING_MAX] = "";
        bool tty = arg_json == JSON_OFF && isatty(STDERR_FILENO);
        int last_phase = -1, r;

        req.source = argv[1];
        req.name = argc > 2 ? argv[2] : (char *) "";
        req.plain_http = arg_plain_http;
        if (arg_platform) {
                r = parse_platform(&platform, &platform_copy);
                if (r < 0)
                        return r;
                req.platform = &platform;
        }

        r = connect_relay(&c);
        if (r < 0)
                return r;
        r = rpc_stream_open_proto(c, RELAY "Pull", &req.base, USEC_INFINITY, &s);
        if (r < 0)
                return report("start the pull", r, NULL);
        for (;;) {
                Tonari__Relay__V1__PullProgress *p = NULL;

                r = rpc_stream_next_proto(s, &tonari__relay__v1__pull_progress__descriptor, (ProtobufCMessage **) &p,
                                          &err);
                if (r < 0) {
                        if (tty)
                                fputc('\n', stderr);
                        _cleanup_free_ char *what = strjoin("pull '", argv[1], "'");

                        return report(what ?: "pull", r, err);
                }
                if (r == 0)
                        break;
                if (arg_json == JSON_OFF)
                        show_progress(p, tty, &last_phase, last_layer, sizeof(last_layer));
                rpc_proto_freep(&last);
                last = p;
        }
        if (!last || !last->image)
                return log_error_errno(EPROTO, "The relay ended the pull without saying which image it stored.");

        if (arg_json != JSON_OFF) {
                json_object *j = image_json(last->image);

                if (!j)
                        return log_oom();
                r = print_json(j);
                json_object_put(j);
                return r;
        }
        {
                char size[FORMAT_BYTES_MAX], unpacked[FORMAT_BYTES_MAX];

                printf("%s: %zu layers, %s (%s unpacked), %s\n", last->image->name, last->image->n_layers,
                       format_bytes(size, sizeof(size), image_bytes(last->image, false)),
                       format_bytes(unpacked, sizeof(unpacked), image_bytes(last->image, true)),
                       last->image->manifest_digest);
        }
        return 0;
}

static int image_list(int argc, char *argv[]) {
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_proto_ Tonari__Relay__V1__ListImagesResponse *resp = NULL;
        Tonari__Relay__V1__ListImagesRequest req = TONARI__RELAY__V1__LIST_IMAGES_REQUEST__INIT;
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_json_ json_object *j = NULL;
        _cleanup_free_ char *err = NULL;
        int r;

        r = connect_relay(&c);
        if (r < 0)
                return r;
        r = rpc_unary_proto(c, RELAY "ListImages", &req.base, &tonari__relay__v1__list_images_response__descriptor,
                            CALL_TIMEOUT_USEC, (ProtobufCMessage **) &resp, &err);
        if (r < 0)
                return report("list images", r, err);

        if (arg_json != JSON_OFF) {
                j = json_object_new_array();
                if (!j)
                        return log_oom();
                for (size_t i = 0; i < resp->n_images; i++) {
                        json_object *o = image_json(resp->images[i]);

                        if (!o || json_object_array_add(j, o) < 0) {
                                json_object_put(o);
                                return log_oom();
                        }
                }
                return print_json(j);
        }

        t = table_new(5, "NAME", "LAYERS", "SIZE", "UNPACKED", "PULLED");
        if (!t)
                return log_oom();
        for (size_t i = 0; i < resp->n_images; i++) {
                const Tonari__Relay__V1__Image *m = resp->images[i];
                char layers[16], size[FORMAT_BYTES_MAX], unpacked[FORMAT_BYTES_MAX], when[FORMAT_TIMESTAMP_MAX];

                snprintf(layers, sizeof(layers), "%zu", m->n_layers);
                r = table_add_row(t, m->name, layers, format_bytes(size, sizeof(size), image_bytes(m, false)),
                                  format_bytes(unpacked, sizeof(unpacked), image_bytes(m, true)),
                                  format_timestamp(when, sizeof(when), m->pulled_usec));
                if (r < 0)
                        return log_oom();
        }
        r = table_print(t, stdout, arg_legend);
        if (r >= 0 && arg_legend)
                printf("\n%zu images.\n", resp->n_images);
        return r;
}

static int image_show(int argc, char *argv[]) {
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_proto_ Tonari__Relay__V1__Image *m = NULL;
        Tonari__Relay__V1__GetImageRequest req = TONARI__RELAY__V1__GET_IMAGE_REQUEST__INIT;
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_free_ char *err = NULL;
        char when[FORMAT_TIMESTAMP_MAX];
        int r;

        req.name = argv[1];
        r = connect_relay(&c);
        if (r < 0)
                return r;
        r = rpc_unary_proto(c, RELAY "GetImage", &req.base, &tonari__relay__v1__image__descriptor, CALL_TIMEOUT_USEC,
                            (ProtobufCMessage **) &m, &err);
        if (r < 0) {
                _cleanup_free_ char *what = strjoin("show image '", argv[1], "'");

                return report(what ?: "show image", r, err);
        }
        if (arg_json != JSON_OFF) {
                _cleanup_json_ json_object *j = image_json(m);

                return j ? print_json(j) : log_oom();
        }

        printf("        Name: %s\n"
               "      Source: %s\n"
               "    Manifest: %s\n"
               "      Config: %s\n"
               "    Platform: %s/%s%s%s\n"
               "      Pulled: %s\n",
               m->name, m->source, m->manifest_digest, m->config_digest, m->platform ? m->platform->os : "?",
               m->platform ? m->platform->architecture : "?",
               m->platform && !isempty(m->platform->variant) ? "/" : "",
               m->platform ? m->platform->variant : "", format_timestamp(when, sizeof(when), m->pulled_usec));
        putchar('\n');
        t = table_new(6, "LAYER", "DIFF ID", "SIZE", "UNPACKED", "TOC", "ENTRIES");
        if (!t)
                return log_oom();
        for (size_t i = 0; i < m->n_layers; i++) {
                const Tonari__Relay__V1__Layer *l = m->layers[i];
                char size[FORMAT_BYTES_MAX], unpacked[FORMAT_BYTES_MAX], toc[FORMAT_BYTES_MAX], entries[24];
                char digest[20], diff_id[20];

                snprintf(digest, sizeof(digest), "%.19s", l->digest);
                snprintf(diff_id, sizeof(diff_id), "%.19s", l->diff_id);
                snprintf(entries, sizeof(entries), "%" PRIu64, l->toc_entries);
                r = table_add_row(t, digest, diff_id, format_bytes(size, sizeof(size), l->size_bytes),
                                  format_bytes(unpacked, sizeof(unpacked), l->unpacked_bytes),
                                  format_bytes(toc, sizeof(toc), l->toc_bytes), entries);
                if (r < 0)
                        return log_oom();
        }
        return table_print(t, stdout, arg_legend);
}

static int image_remove(int argc, char *argv[]) {
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_proto_ Tonari__Relay__V1__RemoveImageResponse *resp = NULL;
        Tonari__Relay__V1__RemoveImageRequest req = TONARI__RELAY__V1__REMOVE_IMAGE_REQUEST__INIT;
        _cleanup_free_ char *err = NULL;
        int r;

        r = connect_relay(&c);
        if (r < 0)
                return r;
        for (int i = 1; i < argc; i++) {
                req.name = argv[i];
                r = rpc_unary_proto(c, RELAY "RemoveImage", &req.base,
                                    &tonari__relay__v1__remove_image_response__descriptor, CALL_TIMEOUT_USEC,
                                    (ProtobufCMessage **) &resp, &err);
                if (r < 0) {
                        _cleanup_free_ char *what = strjoin("remove image '", argv[i], "'");

                        return report(what ?: "remove image", r, err);
                }
                if (arg_json == JSON_OFF && resp->n_unreferenced_layers > 0)
                        printf("%s removed; %zu layers are no longer used (reclaimed by 'image gc').\n", argv[i],
                               resp->n_unreferenced_layers);
                rpc_proto_freep(&resp);
                resp = NULL;
        }
        return 0;
}

static int image_gc(int argc, char *argv[]) {
        _cleanup_rpc_channel_ RpcChannel *c = NULL;
        _cleanup_proto_ Tonari__Relay__V1__GCResponse *resp = NULL;
        Tonari__Relay__V1__GCRequest req = TONARI__RELAY__V1__GCREQUEST__INIT;
        _cleanup_free_ char *err = NULL;
        char freed[FORMAT_BYTES_MAX];
        int r;

        req.dry_run = arg_dry_run;
        r = connect_relay(&c);
        if (r < 0)
                return r;
        r = rpc_unary_proto(c, RELAY "GC", &req.base, &tonari__relay__v1__gcresponse__descriptor, USEC_INFINITY,
                            (ProtobufCMessage **) &resp, &err);
        if (r < 0)
                return report("collect garbage", r, err);
        if (arg_json != JSON_OFF) {
                _cleanup_json_ json_object *j = json_object_new_object();

                if (!j)
                        return log_oom();
                json_object_object_add(j, "dryRun", json_object_new_boolean(arg_dry_run));
                json_object_object_add(j, "blobsRemoved", json_object_new_int64((int64_t) resp->blobs_removed));
                json_object_object_add(j, "layersRemoved", json_object_new_int64((int64_t) resp->layers_removed));
                json_object_object_add(j, "objectsRemoved", json_object_new_int64((int64_t) resp->objects_removed));
                json_object_object_add(j, "freedBytes", json_object_new_int64((int64_t) resp->freed_bytes));
                return print_json(j);
        }
        printf("%s %" PRIu64 " blobs, %" PRIu64 " layers and %" PRIu64 " content objects: %s.\n",
               arg_dry_run ? "Would remove" : "Removed", resp->blobs_removed, resp->layers_removed,
               resp->objects_removed, format_bytes(freed, sizeof(freed), resp->freed_bytes));
        return 0;
}

static int image_toc(int argc, char *argv[]) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_toc_ Toc *t = NULL;
        int r;

        /* O_NONBLOCK: a FIFO is refused by toc_open_fd() instead of waited on. */
        fd = open(argv[1], O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return log_error_errno(errno, "Failed to open '%s': %m", argv[1]);
        r = toc_open_fd(fd, &t);
        if (r == -EPROTONOSUPPORT)
                return log_error_errno(r, "'%s' is a ToC of a version this tonarictl does not read.", argv[1]);
        if (r < 0)
                return log_error_errno(r, "'%s' is not a valid ToC: %m", argv[1]);
        r = toc_dump(t, stdout, arg_json != JSON_OFF);
        if (r < 0)
                return log_error_errno(r, "Failed to print '%s': %m", argv[1]);
        return 0;
}

int verb_image(int argc, char *argv[]) {
        static const SubVerb verbs[] = {
                { "pull", " SOURCE [NAME]", 1, 2, image_pull },
                { "list", "", 0, 0, image_list },
                { "show", " NAME", 1, 1, image_show },
                { "remove", " NAME...", 1, ARGS_ANY, image_remove },
                { "gc", "", 0, 0, image_gc },
                { "toc", " FILE", 1, 1, image_toc },
                { "mount", " IMAGE TARGET", 2, 2, image_mount },
                { "unmount", " TARGET...", 1, ARGS_ANY, image_unmount },
                { "mounts", "", 0, 0, image_mounts },
                { "status", "", 0, 0, image_status },
        };

        return dispatch_subverb(verbs, ELEMENTSOF(verbs), "pull, list, show, remove, gc, toc, mount, unmount, mounts or status",
                                image_list, argc, argv);
}
