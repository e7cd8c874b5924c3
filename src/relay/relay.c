/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <string.h>
#include <time.h>

#include "alloc-util.h"
#include "log.h"
#include "relay.h"

/* A restart stops within these: calls in flight get this long to finish, then are cancelled; a
 * cancelled call's work stops within a piece of it (a read, a tar entry, a second of a stalled
 * transfer), and one that has not after the second bound is left behind by exiting. 10 s in all,
 * well within systemd's default stop timeout of 90 s. */
#define RELAY_SHUTDOWN_GRACE_USEC (5 * USEC_PER_SEC)
#define RELAY_SHUTDOWN_CANCEL_USEC (5 * USEC_PER_SEC)

int relay_new(const RelayConfig *c, Relay **ret) {
        Relay *r = new0(Relay, 1);

        if (!r)
                return -ENOMEM;
        r->config = *c;
        pthread_mutex_init(&r->toc_lock, NULL);
        pthread_cond_init(&r->toc_freed, NULL);
        *ret = r;
        return 0;
}

int relay_start(Relay *r) {
        _cleanup_free_ char *err = NULL;
        RpcOptions o = {
                .max_message_bytes = r->config.max_message_bytes,
                .threads = r->config.threads,
                .max_blocking_threads = r->config.blocking_threads,
        };
        int k;

        k = image_store_open(r->config.store, &r->store, &err);
        if (k < 0)
                return log_error_errno(k, "Failed to open the store: %s", strna(err));

        k = rpc_server_new(&o, &r->server);
        if (k < 0)
                return log_error_errno(k, "Failed to create the rpc server: %m");
        k = relay_register_relay_service(r);
        if (k >= 0)
                k = relay_register_layers_service(r);
        if (k < 0)
                return log_error_errno(k, "Failed to register the services: %m");

        for (size_t i = 0; i < r->config.listen.n; i++) {
                const char *a = r->config.listen.items[i];
                int port = 0;

                k = rpc_server_listen(r->server, a, r->config.socket_mode, &port);
                if (k == -EADDRINUSE)
                        return log_error_errno(k, "Failed to listen on '%s': in use by another process.", a);
                if (k < 0)
                        return log_error_errno(k, "Failed to listen on '%s': %m", a);
                log_info("Listening on %s.", a);
        }
        k = rpc_server_start(r->server);
        if (k < 0)
                return log_error_errno(k, "Failed to start serving: %m");
        return 0;
}

int relay_stop(Relay *r) {
        return r->server ? rpc_server_shutdown(r->server, RELAY_SHUTDOWN_GRACE_USEC, RELAY_SHUTDOWN_CANCEL_USEC) : 0;
}

Relay *relay_free(Relay *r) {
        if (!r)
                return NULL;
        rpc_server_free(r->server);
        for (size_t i = 0; i < RELAY_TOC_CACHE_MAX; i++)
                toc_free(r->tocs[i].toc);
        image_store_free(r->store);
        pthread_cond_destroy(&r->toc_freed);
        pthread_mutex_destroy(&r->toc_lock);
        return mfree(r);
}

int relay_toc_get_cached(Relay *r, const Digest *diff_id, Toc **ret, Digest *ret_digest) {
        int k = -ENOENT;

        pthread_mutex_lock(&r->toc_lock);
        for (size_t i = 0; i < RELAY_TOC_CACHE_MAX; i++)
                if (r->tocs[i].toc && !r->tocs[i].gone && digest_equal(&r->tocs[i].diff_id, diff_id)) {
                        r->tocs[i].users++;
                        r->tocs[i].last_used = ++r->toc_clock;
                        *ret = r->tocs[i].toc;
                        if (ret_digest)
                                *ret_digest = r->tocs[i].toc_digest;
                        k = 0;
                        break;
                }
        pthread_mutex_unlock(&r->toc_lock);
        return k;
}

/* Makes room for bytes more within ToCMemoryMax=, dropping cached ToCs no call holds, least
 * recently used first. Under toc_lock. */
static int toc_reserve(Relay *r, uint64_t bytes) {
        if (bytes > r->config.toc_memory_max)
                return -E2BIG;
        while (r->toc_bytes + bytes > r->config.toc_memory_max) {
                RelayToc *victim = NULL;

                for (size_t i = 0; i < RELAY_TOC_CACHE_MAX; i++) {
                        RelayToc *s = &r->tocs[i];

                        if (s->toc && s->users == 0 && (!victim || s->last_used < victim->last_used))
                                victim = s;
                }
                if (!victim)
                        return -ENOMEM;
                r->toc_bytes -= victim->bytes;
                toc_free(victim->toc);
                *victim = (RelayToc) {};
        }
        r->toc_bytes += bytes;
        return 0;
}

int relay_toc_get(Relay *r, const Digest *diff_id, Toc **ret) {
        RelayToc *slot = NULL;
        LayerInfo info;
        Toc *t = NULL;
        int k;

        if (relay_toc_get_cached(r, diff_id, ret, NULL) >= 0)
                return 0;
        k = image_store_layer(r->store, diff_id, &info);
        if (k < 0)
                return k;
        pthread_mutex_lock(&r->toc_lock);
        k = toc_reserve(r, info.toc_bytes);
        pthread_mutex_unlock(&r->toc_lock);
        if (k < 0)
                return k;

        /* Read and verified outside the lock: a large ToC takes milliseconds. */
        k = image_store_load_toc(r->store, &info, &t);

        pthread_mutex_lock(&r->toc_lock);
        if (k < 0) {
                r->toc_bytes -= info.toc_bytes;
                pthread_cond_broadcast(&r->toc_freed);
                pthread_mutex_unlock(&r->toc_lock);
                return k;
        }
        for (size_t i = 0; i < RELAY_TOC_CACHE_MAX; i++) {
                RelayToc *s = &r->tocs[i];

                if (s->toc && !s->gone && digest_equal(&s->diff_id, diff_id)) {
                        /* Another call read it meanwhile. */
                        s->users++;
                        s->last_used = ++r->toc_clock;
                        *ret = s->toc;
                        r->toc_bytes -= info.toc_bytes;
                        pthread_cond_broadcast(&r->toc_freed);
                        pthread_mutex_unlock(&r->toc_lock);
                        toc_free(t);
                        return 0;
                }
                /* An empty slot, else the least recently used one no call holds. */
                if (!s->toc) {
                        if (!slot || slot->toc)
                                slot = s;
                } else if (s->users == 0 && (!slot || (slot->toc && s->last_used < slot->last_used)))
                        slot = s;
        }
        if (!slot) {
                /* Every slot is in use: serve this call from a ToC of its own (still counted). */
                pthread_mutex_unlock(&r->toc_lock);
                *ret = t;
                return 1;
        }
        if (slot->toc) {
                r->toc_bytes -= slot->bytes;
                toc_free(slot->toc);
        }
        *slot = (RelayToc) { .diff_id = *diff_id, .toc_digest = info.toc_digest, .toc = t, .bytes = info.toc_bytes,
                             .users = 1, .last_used = ++r->toc_clock };
        pthread_mutex_unlock(&r->toc_lock);
        *ret = t;
        return 0;
}

void relay_toc_put(Relay *r, Toc *t) {
        size_t size;

        pthread_mutex_lock(&r->toc_lock);
        for (size_t i = 0; i < RELAY_TOC_CACHE_MAX; i++)
                if (r->tocs[i].toc == t) {
                        RelayToc *s = &r->tocs[i];

                        s->users--;
                        if (s->gone && s->users == 0) {
                                r->toc_bytes -= s->bytes;
                                *s = (RelayToc) {};
                        } else
                                t = NULL;
                        pthread_cond_broadcast(&r->toc_freed);
                        pthread_mutex_unlock(&r->toc_lock);
                        toc_free(t);
                        return;
                }
        /* Not cached (relay_toc_get() returned 1): it was this call's own. */
        (void) toc_data(t, &size);
        r->toc_bytes -= size;
        pthread_cond_broadcast(&r->toc_freed);
        pthread_mutex_unlock(&r->toc_lock);
        toc_free(t);
}

void relay_toc_forget_removed(Relay *r) {
        pthread_mutex_lock(&r->toc_lock);
        for (size_t i = 0; i < RELAY_TOC_CACHE_MAX; i++) {
                RelayToc *s = &r->tocs[i];
                LayerInfo l;

                /* The store's lock nests inside ours nowhere else: taking it here is safe. */
                if (!s->toc || s->gone || image_store_layer(r->store, &s->diff_id, &l) >= 0)
                        continue;
                if (s->users > 0) {
                        s->gone = true;
                        continue;
                }
                r->toc_bytes -= s->bytes;
                toc_free(s->toc);
                *s = (RelayToc) {};
        }
        pthread_cond_broadcast(&r->toc_freed);
        pthread_mutex_unlock(&r->toc_lock);
}

int relay_toc_memory_acquire(Relay *r, RpcCall *call, uint64_t bytes) {
        int k;

        pthread_mutex_lock(&r->toc_lock);
        for (;;) {
                struct timespec until;

                k = toc_reserve(r, bytes);
                if (k != -ENOMEM)
                        break;
                /* Held by other calls: one of them ends soon, or this call does. */
                if (rpc_call_cancelled(call)) {
                        k = -ECANCELED;
                        break;
                }
                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += 100 * 1000 * 1000;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                (void) pthread_cond_timedwait(&r->toc_freed, &r->toc_lock, &until);
        }
        pthread_mutex_unlock(&r->toc_lock);
        return k;
}

void relay_toc_memory_release(Relay *r, uint64_t bytes) {
        pthread_mutex_lock(&r->toc_lock);
        r->toc_bytes -= bytes;
        pthread_cond_broadcast(&r->toc_freed);
        pthread_mutex_unlock(&r->toc_lock);
}
