/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include "alloc-util.h"
#include "relay-proto.h"
#include "string-util.h"

int image_proto_init(ImageProto *p, const ImageRecord *r) {
        ImageProto q = {
                .image = TONARI__RELAY__V1__IMAGE__INIT,
                .platform = TONARI__RELAY__V1__PLATFORM__INIT,
        };

        q.layers = new0(Tonari__Relay__V1__Layer, r->n_layers);
        q.layer_ptrs = new0(Tonari__Relay__V1__Layer *, r->n_layers);
        q.digests = calloc(2 + 3 * r->n_layers, sizeof(*q.digests));
        if (!q.layers || !q.layer_ptrs || !q.digests) {
                image_proto_done(&q);
                return -ENOMEM;
        }

        q.image.name = r->name;
        q.image.source = (char *) strempty(r->source);
        q.image.manifest_digest = digest_to_string(&r->manifest_digest, q.digests[0]);
        q.image.config_digest = digest_to_string(&r->config_digest, q.digests[1]);
        q.image.pulled_usec = r->pulled_usec;
        q.platform.os = (char *) strempty(r->platform.os);
        q.platform.architecture = (char *) strempty(r->platform.architecture);
        q.platform.variant = (char *) strempty(r->platform.variant);

        for (size_t i = 0; i < r->n_layers; i++) {
                const LayerRecord *l = &r->layers[i];
                Tonari__Relay__V1__Layer *m = &q.layers[i];

                *m = (Tonari__Relay__V1__Layer) TONARI__RELAY__V1__LAYER__INIT;
                m->digest = digest_to_string(&l->digest, q.digests[2 + 3 * i]);
                m->diff_id = digest_to_string(&l->diff_id, q.digests[3 + 3 * i]);
                m->toc_digest = digest_to_string(&l->toc_digest, q.digests[4 + 3 * i]);
                m->media_type = (char *) strempty(l->media_type);
                m->size_bytes = l->size_bytes;
                m->unpacked_bytes = l->unpacked_bytes;
                m->toc_bytes = l->toc_bytes;
                m->toc_entries = l->toc_entries;
                q.layer_ptrs[i] = m;
        }
        q.image.n_layers = r->n_layers;
        q.image.layers = q.layer_ptrs;
        *p = q;
        /* The image points at its own platform: set it on the copy that stays. */
        p->image.platform = &p->platform;
        return 0;
}

void image_proto_done(ImageProto *p) {
        p->layers = mfree(p->layers);
        p->layer_ptrs = mfree(p->layer_ptrs);
        p->digests = mfree(p->digests);
}

Tonari__Relay__V1__PullProgress__Phase pull_phase_to_proto(PullPhase phase) {
        switch (phase) {
        case PULL_RESOLVING:
                return TONARI__RELAY__V1__PULL_PROGRESS__PHASE__PHASE_RESOLVING;
        case PULL_FETCHING:
                return TONARI__RELAY__V1__PULL_PROGRESS__PHASE__PHASE_FETCHING;
        case PULL_UNPACKING:
                return TONARI__RELAY__V1__PULL_PROGRESS__PHASE__PHASE_UNPACKING;
        case PULL_LAYER_PRESENT:
                return TONARI__RELAY__V1__PULL_PROGRESS__PHASE__PHASE_LAYER_PRESENT;
        case PULL_DONE:
                return TONARI__RELAY__V1__PULL_PROGRESS__PHASE__PHASE_DONE;
        }
        return TONARI__RELAY__V1__PULL_PROGRESS__PHASE__PHASE_UNSPECIFIED;
}
