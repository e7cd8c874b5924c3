/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * tonari.relay.v1 messages made from the image store's records. The messages borrow the record's
 * strings; digests are formatted into the ImageProto itself. Keep the record alive until the
 * message is packed.
 */

#include "image-db.h"
#include "imagestore.h"
#include "relay.pb-c.h"

typedef struct ImageProto {
        Tonari__Relay__V1__Image image;
        Tonari__Relay__V1__Platform platform;
        Tonari__Relay__V1__Layer *layers;
        Tonari__Relay__V1__Layer **layer_ptrs;
        /* manifest, config, then two per layer (digest, diff_id) */
        char (*digests)[DIGEST_STRING_MAX];
} ImageProto;

int image_proto_init(ImageProto *p, const ImageRecord *r);
void image_proto_done(ImageProto *p);

/* The proto enum of a pull phase. */
Tonari__Relay__V1__PullProgress__Phase pull_phase_to_proto(PullPhase phase) _const_;
