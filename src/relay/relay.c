/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <string.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "log.h"
#include "relay.h"

/* A restart stops within this: calls in flight get this long to finish, then are cancelled. */
#define RELAY_SHUTDOWN_GRACE_USEC (5 * USEC_PER_SEC)

int relay_new(const RelayConfig *c, Relay **ret) {
        Relay *r = new0(Relay, 1);

        if (!r)
                return -ENOMEM;
        r->config = *c;
        pthread_mutex_init(&r->toc_lock, NULL);
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

void relay_stop(Relay *r) {
        if (r->server)
                rpc_server_shutdown(r->server, RELAY_SHUTDOWN_GRACE_USEC);
}

Relay *relay_free(Relay *r) {
        if (!r)
                return NULL;
        rpc_server_free(r->server);
        for (size_t i = 0; i < RELAY_TOC_CACHE_MAX; i++)
                toc_free(r->tocs[i].toc);
        image_store_free(r->store);
        pthread_mutex_destroy(&r->toc_lock);
        return mfree(r);
}

int relay_toc_get(Relay *r, const Digest *diff_id, Toc **ret) {
        _cleanup_close_ int fd = -EBADF;
        RelayToc *slot = NULL;
        Toc *t = NULL;
        int k;

        pthread_mutex_lock(&r->toc_lock);
        for (size_t i = 0; i < RELAY_TOC_CACHE_MAX; i++)
                if (r->tocs[i].toc && digest_equal(&r->tocs[i].diff_id, diff_id)) {
                        r->tocs[i].users++;
                        r->tocs[i].last_used = ++r->toc_clock;
                        *ret = r->tocs[i].toc;
                        pthread_mutex_unlock(&r->toc_lock);
                        return 0;
                }
        pthread_mutex_unlock(&r->toc_lock);

        /* Opened outside the lock: validation of a large ToC takes milliseconds. */
        fd = image_store_open_toc(r->store, diff_id);
        if (fd < 0)
                return fd;
        k = toc_open_fd(fd, &t);
        if (k < 0)
                return k == -EBADMSG ? -EUCLEAN : k; /* a damaged store, not a bad request */

        pthread_mutex_lock(&r->toc_lock);
        for (size_t i = 0; i < RELAY_TOC_CACHE_MAX; i++) {
                RelayToc *s = &r->tocs[i];

                if (s->toc && digest_equal(&s->diff_id, diff_id)) {
                        /* Another call opened it meanwhile. */
                        s->users++;
                        s->last_used = ++r->toc_clock;
                        *ret = s->toc;
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
                /* Every slot is in use: serve this call from a ToC of its own. */
                pthread_mutex_unlock(&r->toc_lock);
                *ret = t;
                return 1;
        }
        toc_free(slot->toc);
        *slot = (RelayToc) { .diff_id = *diff_id, .toc = t, .users = 1, .last_used = ++r->toc_clock };
        pthread_mutex_unlock(&r->toc_lock);
        *ret = t;
        return 0;
}

void relay_toc_put(Relay *r, Toc *t) {
        pthread_mutex_lock(&r->toc_lock);
        for (size_t i = 0; i < RELAY_TOC_CACHE_MAX; i++)
                if (r->tocs[i].toc == t) {
                        r->tocs[i].users--;
                        pthread_mutex_unlock(&r->toc_lock);
                        return;
                }
        pthread_mutex_unlock(&r->toc_lock);
        /* Not cached (relay_toc_get() returned 1): it was this call's own. */
        toc_free(t);
}
