/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * tonari-relay: the image store served over the rpc layer as tonari.relay.v1.Relay and
 * tonari.layers.v1.Layers (protocols/tonari/). relay.c owns the pieces; relay-service.c and
 * layers-service.c hold the method handlers.
 */

#include <pthread.h>

#include "imagestore.h"
#include "relay-conf.h"
#include "rpc.h"
#include "toc.h"

/* ToCs kept open (read into memory and validated) for the calls without ToC: a lookup must not
 * re-validate a layer's whole table each time. */
#define RELAY_TOC_CACHE_MAX 64

typedef struct RelayToc {
        Digest diff_id;
        Toc *toc;
        unsigned users;
        uint64_t last_used;
} RelayToc;

typedef struct Relay {
        RelayConfig config;
        ImageStore *store;
        RpcServer *server;

        pthread_mutex_t toc_lock;
        RelayToc tocs[RELAY_TOC_CACHE_MAX];
        uint64_t toc_clock;
} Relay;

int relay_new(const RelayConfig *c, Relay **ret);
/* Opens the store, registers the methods, listens, starts serving. */
int relay_start(Relay *r);
void relay_stop(Relay *r);
Relay *relay_free(Relay *r);
static inline void relay_freep(Relay **r) {
        relay_free(*r);
}

/* The open ToC of a layer, for the duration of one call; -ENOENT if the store has no such layer. */
int relay_toc_get(Relay *r, const Digest *diff_id, Toc **ret);
void relay_toc_put(Relay *r, Toc *t);

int relay_register_relay_service(Relay *r);
int relay_register_layers_service(Relay *r);
