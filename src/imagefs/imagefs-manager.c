/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tonari-imagefs's manager (see imagefs-manager.h).
 *
 * Restart survival on Linux 6.1 — the design proposed for the next step (not implemented here):
 *
 * A FUSE mount lives as long as someone holds its /dev/fuse connection, not as long as the process
 * that mounted it. The problem is the requests in flight: a request the kernel handed to a daemon
 * (read(2) on /dev/fuse returned it) is answered by that daemon or never; the kernel resends
 * unanswered requests only from 6.9 on (FUSE_NOTIFY_RESEND), and 6.1 has no way to ask again. A
 * daemon that dies with a lookup in hand leaves a process in D state forever (or until the connection
 * is aborted, which kills the mount). So the process that reads /dev/fuse must outlive upgrades:
 *
 *   tonari-imagefs-fd  a small long-lived process per node (hundreds of lines, rarely changed, no gRPC,
 *                      no ToC parsing): it opens /dev/fuse and mounts for each layer (or receives the
 *                      connection fds from systemd's fd store, FDSTORE=1 with FDNAME=layer digest, after
 *                      its own restart), reads requests, keeps each one in a table by its unique id
 *                      until a reply for that id came back, and passes them over a SOCK_SEQPACKET socket
 *                      to the worker; replies travel the other way and are written to /dev/fuse;
 *   tonari-imagefs     the worker (everything in this folder: ToCs, cache, relay client): restartable
 *                      at any time. On restart it connects to tonari-imagefs-fd, gets the list of
 *                      mounts (layer, relay, ToC digest, mode) and the table of unanswered requests,
 *                      and the forwarder re-dispatches those to it. Lookups are idempotent (entry
 *                      numbers are stable), so answering a request twice is impossible and answering it
 *                      late is harmless. FUSE_INIT is answered once by the forwarder and its negotiated
 *                      capabilities are handed to each worker generation.
 *
 * State a worker rebuilds from nothing: ToCs (fetched again, or kept in a memfd that the forwarder
 * holds and hands over: no network needed), the cache (its directory; contents are verified again on
 * first use anyway), counters (lost, or kept by the forwarder). Open file handles are the forwarder's
 * numbers, mapped to (inode, digest) in its table, so a new worker opens its cache entries lazily.
 * The forwarder itself is kept in systemd's fd store too (FileDescriptorStoreMax=, the /dev/fuse fds
 * and the socket), so even it can be restarted, with the one caveat that requests it had read but not
 * yet passed on are lost: its loop therefore never blocks between read(2) and recording a request.
 * On 6.9+ the forwarder becomes optional: the worker holds the fds in the fd store and asks the kernel
 * to resend with FUSE_NOTIFY_RESEND after a restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "imagefs-cache.h"
#include "imagefs-fuse.h"
#include "imagefs-manager.h"
#include "imagefs-relay.h"
#include "imagefs-toc.h"
#include "log.h"
#include "string-util.h"

struct ImagefsManager {
        sd_event *event;
        ImagefsCache *cache;
        usec_t read_timeout_usec;
        char *stats_file;

        ImagefsRelay **relays;
        size_t n_relays;
        ImagefsMount **mounts;
        size_t n_mounts;

        int notify_fd;
        sd_event_source *notify_source;
};

static void format_counters(ImagefsMount *mount, char *buf, size_t size) {
        ImagefsCounters c;

        imagefs_mount_counters(mount, &c);
        snprintf(buf, size,
                 "layer=%s mountpoint=%s toc=%s metadata_round_trips=%" PRIu64 " content_round_trips=%" PRIu64
                 " bytes_fetched=%" PRIu64 " cache_hits=%" PRIu64 " cache_misses=%" PRIu64 " toc_bytes=%" PRIu64
                 " toc_load_usec=%" PRIu64 " errors=%" PRIu64,
                 imagefs_mount_layer(mount), imagefs_mount_path(mount), imagefs_mount_has_toc(mount) ? "yes" : "no",
                 c.metadata_round_trips, c.content_round_trips, c.bytes_fetched, c.cache_hits, c.cache_misses,
                 c.toc_bytes, c.toc_load_usec, c.errors);
}

int imagefs_manager_write_stats(ImagefsManager *m) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char line[1024];
        uint64_t bytes, entries;

        imagefs_cache_usage(m->cache, &bytes, &entries);
        for (size_t i = 0; i < m->n_mounts; i++) {
                format_counters(m->mounts[i], line, sizeof(line));
                log_info("%s", line);
        }
        log_info("cache_bytes=%" PRIu64 " cache_entries=%" PRIu64, bytes, entries);
        if (!m->stats_file)
                return 0;

        if (asprintf(&tmp, "%s.tmp", m->stats_file) < 0)
                return log_oom();
        f = fopen(tmp, "we");
        if (!f)
                return log_error_errno(errno, "Failed to create '%s': %m", tmp);
        for (size_t i = 0; i < m->n_mounts; i++) {
                format_counters(m->mounts[i], line, sizeof(line));
                fprintf(f, "%s\n", line);
        }
        fprintf(f, "cache_bytes=%" PRIu64 " cache_entries=%" PRIu64 "\n", bytes, entries);
        if (fflush(f) != 0 || ferror(f)) {
                (void) unlink(tmp);
                return log_error_errno(EIO, "Failed to write '%s'.", tmp);
        }
        if (rename(tmp, m->stats_file) < 0) {
                (void) unlink(tmp);
                return log_error_errno(errno, "Failed to rename '%s': %m", tmp);
        }
        return 0;
}

static void remove_mount(ImagefsManager *m, size_t i) {
        char line[1024];

        format_counters(m->mounts[i], line, sizeof(line));
        imagefs_mount_stop(m->mounts[i]);
        log_struct(LOG_INFO, LOG_MESSAGE("Unmounted %s: %s", imagefs_mount_path(m->mounts[i]), line),
                   "TONARI_LAYER=%s", imagefs_mount_layer(m->mounts[i]));
        imagefs_mount_free(m->mounts[i]);
        memmove(m->mounts + i, m->mounts + i + 1, (m->n_mounts - i - 1) * sizeof(m->mounts[0]));
        m->n_mounts--;
}

static int on_mount_ended(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ImagefsManager *m = userdata;
        uint64_t v;

        (void) read(fd, &v, sizeof(v));
        /* The ended mounts' counters too, before they go. */
        (void) imagefs_manager_write_stats(m);
        for (size_t i = m->n_mounts; i > 0; i--)
                if (!imagefs_mount_running(m->mounts[i - 1]))
                        remove_mount(m, i - 1);
        if (m->n_mounts == 0) {
                log_info("No mounts left, exiting.");
                return sd_event_exit(sd_event_source_get_event(s), 0);
        }
        return 0;
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_stats(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        (void) imagefs_manager_write_stats(userdata);
        return 0;
}

int imagefs_manager_new(const ImagefsManagerConfig *config, ImagefsManager **ret) {
        _cleanup_(imagefs_manager_freep) ImagefsManager *m = NULL;
        sigset_t mask;
        int r;

        m = new0(ImagefsManager, 1);
        if (!m)
                return log_oom();
        m->notify_fd = -EBADF;
        m->read_timeout_usec = config->read_timeout_usec;
        if (config->stats_file) {
                m->stats_file = strdup(config->stats_file);
                if (!m->stats_file)
                        return log_oom();
        }

        r = imagefs_cache_new(config->cache_directory, config->cache_max_bytes, &m->cache);
        if (r == -EBUSY)
                return log_error_errno(r, "Cache directory '%s' is in use by another process.", config->cache_directory);
        if (r < 0)
                return log_error_errno(r, "Failed to open cache directory '%s': %m", config->cache_directory);

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m");
        /* Blocked in every thread: main() blocks them before gRPC and FUSE start theirs. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGUSR1);
        r = -pthread_sigmask(SIG_BLOCK, &mask, NULL);
        if (r < 0)
                return log_error_errno(r, "Failed to block signals: %m");
        r = sd_event_add_signal(m->event, NULL, SIGTERM, on_terminate, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, on_terminate, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGUSR1, on_stats, m);
        if (r < 0)
                return log_error_errno(r, "Failed to install signal handlers: %m");

        m->notify_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (m->notify_fd < 0)
                return log_error_errno(errno, "Failed to create eventfd: %m");
        r = sd_event_add_io(m->event, &m->notify_source, m->notify_fd, EPOLLIN, on_mount_ended, m);
        if (r < 0)
                return log_error_errno(r, "Failed to watch eventfd: %m");

        *ret = TAKE_PTR(m);
        return 0;
}

ImagefsManager *imagefs_manager_free(ImagefsManager *m) {
        if (!m)
                return NULL;
        while (m->n_mounts > 0)
                remove_mount(m, m->n_mounts - 1);
        free(m->mounts);
        for (size_t i = 0; i < m->n_relays; i++)
                imagefs_relay_free(m->relays[i]);
        free(m->relays);
        imagefs_cache_free(m->cache);
        sd_event_source_unref(m->notify_source);
        safe_close(m->notify_fd);
        sd_event_unref(m->event);
        free(m->stats_file);
        return mfree(m);
}

static int get_relay(ImagefsManager *m, const char *address, ImagefsRelay **ret) {
        ImagefsRelay **n;
        int r;

        for (size_t i = 0; i < m->n_relays; i++)
                if (streq(imagefs_relay_address(m->relays[i]), address)) {
                        *ret = m->relays[i];
                        return 0;
                }
        n = reallocarray(m->relays, m->n_relays + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        m->relays = n;
        r = imagefs_relay_new(address, &m->relays[m->n_relays]);
        if (r < 0)
                return r;
        *ret = m->relays[m->n_relays++];
        return 0;
}

static int load_toc(ImagefsManager *m, ImagefsRelay *relay, const ImagefsMountRequest *q, Toc **ret,
                    uint64_t *ret_bytes) {
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ void *data = NULL;
        char want[DIGEST_STRING_MAX], got[DIGEST_STRING_MAX];
        size_t size;
        Digest announced;
        int r;

        r = imagefs_relay_get_toc(relay, q->layer, m->read_timeout_usec, &data, &size, &announced, &err);
        if (r < 0)
                return log_error_errno(r, "Failed to get the ToC of layer %s from %s: %s%s%m", q->layer, q->relay,
                                       strempty(err), err ? ": " : "");
        if (q->toc_digest && !digest_equal(q->toc_digest, &announced))
                return log_error_errno(EBADMSG, "The relay announced ToC %s for layer %s, expected %s.",
                                       digest_to_string(&announced, got), q->layer, digest_to_string(q->toc_digest, want));
        r = imagefs_toc_load(data, size, q->toc_digest ?: &announced, ret);
        if (r < 0)
                return log_error_errno(r, "The ToC of layer %s from %s does not match its digest %s or is malformed: %m",
                                       q->layer, q->relay, digest_to_string(&announced, want));
        TAKE_PTR(data);
        *ret_bytes = size;
        return 0;
}

int imagefs_manager_add_mount(ImagefsManager *m, const ImagefsMountRequest *q) {
        ImagefsMountConfig config = {
                .layer = q->layer,
                .mountpoint = q->mountpoint,
                .timeout_usec = m->read_timeout_usec,
        };
        ImagefsMount *mount = NULL, **n;
        ImagefsRelay *relay;
        Toc *toc = NULL;
        uint64_t toc_bytes = 0;
        usec_t start, load_usec = 0;
        Digest d;
        int r;

        if (digest_from_string(q->layer, &d) < 0)
                return log_error_errno(EINVAL, "Invalid layer digest '%s'.", q->layer);
        r = get_relay(m, q->relay, &relay);
        if (r < 0)
                return log_error_errno(r, "Failed to set up relay '%s': %m", q->relay);
        if (q->use_toc) {
                start = now(CLOCK_MONOTONIC);
                r = load_toc(m, relay, q, &toc, &toc_bytes);
                if (r < 0)
                        return r;
                load_usec = now(CLOCK_MONOTONIC) - start;
        }
        n = reallocarray(m->mounts, m->n_mounts + 1, sizeof(*n));
        if (!n) {
                toc_free(toc);
                return log_oom();
        }
        m->mounts = n;
        r = imagefs_mount_new(&config, toc, relay, m->cache, &mount);
        if (r < 0) {
                toc_free(toc);
                return log_oom();
        }
        imagefs_mount_set_toc_load(mount, toc_bytes, load_usec);
        r = imagefs_mount_start(mount, m->notify_fd);
        if (r < 0) {
                imagefs_mount_free(mount);
                return log_error_errno(r, "Failed to mount layer %s on '%s': %m", q->layer, q->mountpoint);
        }
        m->mounts[m->n_mounts++] = mount;
        log_struct(LOG_INFO,
                   LOG_MESSAGE("Mounted layer %s on %s (%s, ToC of %" PRIu64 " bytes loaded in %" PRIu64 " us).", q->layer,
                               q->mountpoint, q->use_toc ? "ToC mode" : "no-ToC mode", toc_bytes, load_usec),
                   "TONARI_LAYER=%s", q->layer);
        return 0;
}

int imagefs_manager_run(ImagefsManager *m) {
        int r;

        (void) sd_notify(false, "READY=1");
        r = sd_event_loop(m->event);
        (void) sd_notify(false, "STOPPING=1");
        (void) imagefs_manager_write_stats(m);
        while (m->n_mounts > 0)
                remove_mount(m, m->n_mounts - 1);
        return r;
}
