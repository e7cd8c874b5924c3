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

/*
 * ToCs kept open for the calls without ToC, read into memory and verified against the store's
 * record (a lookup must not re-read and re-validate a layer's whole table each time). Their bytes
 * are the relay's own: a ToC file changed or truncated on disk cannot change or fault what a call
 * is reading. All ToCs in memory together, cached or held by a call, stay within ToCMemoryMax=.
 */
#define RELAY_TOC_CACHE_MAX 64

typedef struct RelayToc {
        Digest diff_id;
        Digest toc_digest; /* what it was verified against */
        Toc *toc;
        size_t bytes;
        unsigned users;
        uint64_t last_used;
        bool gone; /* GC removed the layer: freed when its last user is done, found by nobody */
} RelayToc;

typedef struct Relay {
        RelayConfig config;
        ImageStore *store;
        RpcServer *server;

        pthread_mutex_t toc_lock;
        RelayToc tocs[RELAY_TOC_CACHE_MAX];
        uint64_t toc_clock;
        uint64_t toc_bytes; /* in memory: cached, held by calls of their own, being read or sent */
        pthread_cond_t toc_freed;
} Relay;

int relay_new(const RelayConfig *c, Relay **ret);
/* Opens the store, registers the methods, listens, starts serving. */
int relay_start(Relay *r);
/* Ends the calls in flight within a bound; -ETIMEDOUT when a call's work would not stop: the relay
 * is then still in use, must not be freed, and the process should exit. */
int relay_stop(Relay *r);
Relay *relay_free(Relay *r);
DEFINE_TRIVIAL_CLEANUP_FUNC(Relay *, relay_free);

/*
 * The open ToC of a layer, for the duration of one call. -ENOENT if the store has no such layer,
 * -EUCLEAN if its ToC is not what the store recorded, -ENOMEM when ToCMemoryMax= is taken by ToCs
 * other calls hold, -E2BIG when the ToC alone is larger than that.
 */
int relay_toc_get(Relay *r, const Digest *diff_id, Toc **ret);
/* The same, only if the ToC is in memory already (-ENOENT if not), with the digest it matched. */
int relay_toc_get_cached(Relay *r, const Digest *diff_id, Toc **ret, Digest *ret_digest);
void relay_toc_put(Relay *r, Toc *t);
/* After GC: ToCs of layers the store no longer has are no longer served. */
void relay_toc_forget_removed(Relay *r);
/*
 * Memory a ToC transfer needs (its pieces in flight), from ToCMemoryMax= too: waits while ToCs that
 * calls hold take it all, -ECANCELED when the call ends meanwhile.
 */
int relay_toc_memory_acquire(Relay *r, RpcCall *call, uint64_t bytes);
void relay_toc_memory_release(Relay *r, uint64_t bytes);

int relay_register_relay_service(Relay *r);
int relay_register_layers_service(Relay *r);
