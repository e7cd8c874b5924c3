/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tonari-imagefs's manager (see imagefs-manager.h).
 *
 * Restart survival: with a forwarder (tonari-imagefs-fd, imagefs-fd.c, config->forwarder) the mounts
 * and their /dev/fuse connections belong to it; this process serves them and can restart or crash at
 * any time (docs/ARCHITECTURE.md, "Restart survival").
 */
#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <dirent.h>
#include <sys/eventfd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "alloc-util.h"
#include "bus-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "imagefs-bus.h"
#include "imagefs-cache.h"
#include "imagefs-conf.h"
#include "imagefs-fuse.h"
#include "imagefs-manager.h"
#include "imagefs-prefetch.h"
#include "imagefs-relay.h"
#include "imagefs-toc.h"
#include "log.h"
#include "mkdir.h"
#include "parse-util.h"
#include "path-util.h"
#include "string-util.h"

/* An image mounted on a target by MountImage or MountOverlay. */
typedef struct ImageMount {
        char *target;
        char *image;
        char *upperdir, *workdir; /* NULL: read-only */
        ImagefsMount **layers;    /* bottom first; each owned by the manager's mounts, shared */
        ImagefsImageLayer *infos; /* the same layers as the relay described them (for the state file) */
        size_t n_layers;
        bool use_toc;
} ImageMount;

struct ImagefsManager {
        sd_event *event;
        sd_bus *bus;
        char *relay_address;
        char *mount_directory;
        bool exit_when_idle;
        ImagefsCache *cache;
        char *cache_directory;
        uint64_t cache_max_bytes;
        usec_t read_timeout_usec;
        char *stats_file;
        char *forwarder;
        char *state_file;

        ImagefsRelay **relays;
        size_t n_relays;
        ImagefsMount **mounts;
        size_t n_mounts;

        int notify_fd;
        sd_event_source *notify_source;

        ImageMount *images;
        size_t n_images;

        /* Mounts whose stop gave up on a busy thread: they, the relays and the cache stay allocated. */
        size_t n_abandoned;
};

static bool is_mount_root(const char *path);

static void format_counters(ImagefsMount *mount, char *buf, size_t size) {
        ImagefsCounters c;

        imagefs_mount_counters(mount, &c);
        snprintf(buf, size,
                 "layer=%s mountpoint=%s toc=%s metadata_round_trips=%" PRIu64 " content_round_trips=%" PRIu64
                 " bytes_fetched=%" PRIu64 " cache_hits=%" PRIu64 " cache_misses=%" PRIu64 " toc_bytes=%" PRIu64
                 " toc_load_usec=%" PRIu64 " errors=%" PRIu64 " prefetch_files=%" PRIu64 " prefetch_bytes=%" PRIu64
                 " prefetch_waits=%" PRIu64 " prefetch_usec=%" PRIu64,
                 imagefs_mount_layer(mount), imagefs_mount_path(mount), imagefs_mount_has_toc(mount) ? "yes" : "no",
                 c.metadata_round_trips, c.content_round_trips, c.bytes_fetched, c.cache_hits, c.cache_misses,
                 c.toc_bytes, c.toc_load_usec, c.errors, c.prefetch.files, c.prefetch.bytes, c.prefetch.waits,
                 c.prefetch.usec);
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

static void unmount_all_images(ImagefsManager *m);

/* unmount: for good, with a forwarder too (else its mount stays for the next worker to serve). */
static void remove_mount(ImagefsManager *m, size_t i, bool unmount) {
        char line[1024];

        format_counters(m->mounts[i], line, sizeof(line));
        if (unmount)
                imagefs_mount_unmount(m->mounts[i]);
        else
                (void) imagefs_mount_stop(m->mounts[i]);
        if (imagefs_mount_abandoned(m->mounts[i]))
                m->n_abandoned++;
        log_struct(LOG_INFO, LOG_MESSAGE("Unmounted %s: %s", imagefs_mount_path(m->mounts[i]), line),
                   "TONARI_LAYER=%s", imagefs_mount_layer(m->mounts[i]));
        imagefs_mount_free(m->mounts[i]);
        memmove(m->mounts + i, m->mounts + i + 1, (m->n_mounts - i - 1) * sizeof(m->mounts[0]));
        m->n_mounts--;
}

/* Whether an image stacks the layer mount: it stays (ended or not) until the image is unmounted. */
static bool layer_in_use(const ImagefsManager *m, const ImagefsMount *mount, const ImageMount *except) {
        for (size_t i = 0; i < m->n_images; i++) {
                if (&m->images[i] == except)
                        continue;
                for (size_t j = 0; j < m->images[i].n_layers; j++)
                        if (m->images[i].layers[j] == mount)
                                return true;
        }
        return false;
}

static int on_mount_ended(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        ImagefsManager *m = userdata;
        uint64_t v;

        (void) read(fd, &v, sizeof(v));
        /* The ended mounts' counters too, before they go. */
        (void) imagefs_manager_write_stats(m);
        /* A session that ended on a mount that is still there: the forwarder went away (it restarts, its
         * mounts wait in the fd store). Serving only the other mounts would leave that one without a
         * worker for good: this process exits instead, and the next one attaches to all of them. */
        if (m->forwarder)
                for (size_t i = 0; i < m->n_mounts; i++)
                        if (!imagefs_mount_running(m->mounts[i]) && is_mount_root(imagefs_mount_path(m->mounts[i]))) {
                                log_warning("The forwarder ended the session of %s, which is still mounted: "
                                            "exiting, to take the mounts over again when restarted.",
                                            imagefs_mount_path(m->mounts[i]));
                                return sd_event_exit(sd_event_source_get_event(s), -ECONNRESET);
                        }
        for (size_t i = m->n_mounts; i > 0; i--)
                if (!imagefs_mount_running(m->mounts[i - 1]) && !layer_in_use(m, m->mounts[i - 1], NULL))
                        remove_mount(m, i - 1, false);
        if (m->n_mounts == 0 && m->exit_when_idle) {
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
        m->cache_max_bytes = config->cache_max_bytes;
        m->cache_directory = strdup(config->cache_directory);
        if (!m->cache_directory)
                return log_oom();
        m->exit_when_idle = config->exit_when_idle;
        if (config->relay) {
                m->relay_address = strdup(config->relay);
                if (!m->relay_address)
                        return log_oom();
        }
        if (config->mount_directory) {
                m->mount_directory = strdup(config->mount_directory);
                if (!m->mount_directory)
                        return log_oom();
        }
        if (config->stats_file) {
                m->stats_file = strdup(config->stats_file);
                if (!m->stats_file)
                        return log_oom();
        }
        if (config->forwarder) {
                m->forwarder = strdup(config->forwarder);
                if (!m->forwarder)
                        return log_oom();
        }
        if (config->state_file) {
                m->state_file = strdup(config->state_file);
                if (!m->state_file)
                        return log_oom();
        }

        r = imagefs_cache_new(config->cache_directory, config->cache_max_bytes, &m->cache);
        if (r == -EBUSY)
                return log_error_errno(r, "Cache directory '%s' is in use by another process.", config->cache_directory);
        if (r < 0)
                return log_error_errno(r, "Failed to open cache directory '%s': %m", config->cache_directory);
        if (!imagefs_cache_keeps_verification(m->cache))
                log_info("Cache directory '%s': no verification records (its file system has no trusted.* "
                         "attributes or this process lacks CAP_SYS_ADMIN): cached contents are verified again "
                         "after every start.", config->cache_directory);

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
        unmount_all_images(m);
        free(m->images);
        sd_bus_flush_close_unref(m->bus);
        free(m->relay_address);
        free(m->mount_directory);
        free(m->cache_directory);
        while (m->n_mounts > 0)
                remove_mount(m, m->n_mounts - 1, false);
        free(m->mounts);
        if (m->n_abandoned == 0) {
                for (size_t i = 0; i < m->n_relays; i++)
                        imagefs_relay_free(m->relays[i]);
                free(m->relays);
                imagefs_cache_free(m->cache);
        }
        sd_event_source_unref(m->notify_source);
        safe_close(m->notify_fd);
        sd_event_unref(m->event);
        free(m->stats_file);
        free(m->forwarder);
        free(m->state_file);
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
                    uint64_t *ret_bytes, char **ret_message) {
        _cleanup_free_ char *err = NULL;
        _cleanup_free_ void *data = NULL;
        char want[DIGEST_STRING_MAX], got[DIGEST_STRING_MAX];
        size_t size;
        Digest announced, d;
        int r;

        r = imagefs_relay_get_toc(relay, q->layer, m->read_timeout_usec, &data, &size, &announced, &err);
        if (r == -ETIMEDOUT)
                return set_error_message(ret_message, r, "The relay %s could not be reached within %" PRIu64 " ms for "
                                         "the ToC of layer %s%s%s", q->relay, m->read_timeout_usec / USEC_PER_MSEC,
                                         q->layer, err ? ": " : ".", strempty(err));
        if (r == -EBADMSG)
                return set_error_message(ret_message, r, "The ToC of layer %s from %s is corrupt: %s.", q->layer,
                                         q->relay, strna(err));
        /* DATA_LOSS: the relay found its stored ToC damaged (it says so, possibly after some pieces). */
        if (r == -EUCLEAN)
                return set_error_message(ret_message, -EBADMSG, "The ToC of layer %s from %s is corrupt: %s.",
                                         q->layer, q->relay, err ?: strerror(-r));
        if (r < 0)
                return set_error_message(ret_message, r, "Failed to get the ToC of layer %s from %s: %s", q->layer,
                                         q->relay, err ?: strerror(-r));
        if (q->toc_digest && !digest_equal(q->toc_digest, &announced))
                return set_error_message(ret_message, -EBADMSG, "The relay announced ToC %s for layer %s, expected %s.",
                                         digest_to_string(&announced, got), q->layer,
                                         digest_to_string(q->toc_digest, want));
        r = digest_buffer(data, size, &d);
        if (r < 0)
                return set_error_message(ret_message, r, "Failed to hash the ToC of layer %s: %s", q->layer,
                                         strerror(-r));
        if (!digest_equal(&d, q->toc_digest ?: &announced))
                return set_error_message(ret_message, -EBADMSG, "The ToC of layer %s from %s is corrupt: its %zu bytes "
                                         "have digest %s, not %s.", q->layer, q->relay, size,
                                         digest_to_string(&d, got), digest_to_string(q->toc_digest ?: &announced, want));
        /* Verified above: opening it needs no second hash. */
        r = toc_open_owned(data, size, ret);
        if (r < 0)
                return set_error_message(ret_message, r, "The ToC of layer %s from %s (%zu bytes, digest %s) is "
                                         "malformed: %s", q->layer, q->relay, size, digest_to_string(&d, want),
                                         strerror(-r));
        TAKE_PTR(data);
        *ret_bytes = size;
        return 0;
}

/* A layer's ToC loaded ahead of its mount, at the same time as its image's other layers'. */
typedef struct PreloadedToc {
        bool wanted;                 /* to load (else the layer is mounted already, or has no ToC) */
        ImagefsMountRequest request; /* relay, layer and toc_digest: what load_toc() reads */
        ImagefsManager *manager;
        ImagefsRelay *relay;
        int r;
        Toc *toc;
        uint64_t bytes;
        usec_t usec;
        char *message;
} PreloadedToc;

/* ToCs loaded at once at most: a thread each. */
#define PRELOAD_THREADS_MAX 16

static void *preload_run(void *userdata) {
        PreloadedToc *p = userdata;
        usec_t start = now(CLOCK_MONOTONIC);

        p->r = load_toc(p->manager, p->relay, &p->request, &p->toc, &p->bytes, &p->message);
        p->usec = now(CLOCK_MONOTONIC) - start;
        return NULL;
}

/*
 * Loads the wanted ToCs of p[0..n) at the same time, a thread each, as concurrent streams on the
 * relay's one channel (one connection): an image's ToCs cost one round trip together, not one per
 * layer, and the hashing and parsing of each runs beside the others'. Each result (or error and
 * message) stays in p[i] for add_mount().
 */
static void preload_tocs(ImagefsManager *m, ImagefsRelay *relay, PreloadedToc *p, size_t n) {
        usec_t start = now(CLOCK_MONOTONIC);
        uint64_t bytes = 0;
        size_t loaded = 0;

        for (size_t base = 0; base < n; base += PRELOAD_THREADS_MAX) {
                pthread_t threads[PRELOAD_THREADS_MAX];
                bool started[PRELOAD_THREADS_MAX] = {};
                size_t end = MIN(n, base + PRELOAD_THREADS_MAX);

                for (size_t i = base; i < end; i++) {
                        if (!p[i].wanted)
                                continue;
                        p[i].manager = m;
                        p[i].relay = relay;
                        /* No thread to be had: loaded here, one after the other. */
                        if (pthread_create(&threads[i - base], NULL, preload_run, &p[i]) == 0)
                                started[i - base] = true;
                        else
                                (void) preload_run(&p[i]);
                }
                for (size_t i = base; i < end; i++)
                        if (started[i - base])
                                (void) pthread_join(threads[i - base], NULL);
        }
        for (size_t i = 0; i < n; i++)
                if (p[i].wanted && p[i].r >= 0) {
                        loaded++;
                        bytes += p[i].bytes;
                }
        if (loaded > 1)
                log_info("Loaded the ToCs of %zu layers (%" PRIu64 " bytes) at once in %" PRIu64 " us.", loaded, bytes,
                         now(CLOCK_MONOTONIC) - start);
}

static void preloaded_done(PreloadedToc *p, size_t n) {
        for (size_t i = 0; p && i < n; i++) {
                toc_free(p[i].toc);
                free(p[i].message);
        }
        free(p);
}

/* Loads the layer's ToC (ToC mode) unless pre brings it (taken over, or its error returned), verifies it,
 * mounts: on failure *ret_message says why. A prefetch is started at once, or, with ret_prefetch, left
 * to the caller to start (after the image's other layers are mounted: its stream would compete with
 * their ToCs). */
static int add_mount(ImagefsManager *m, const ImagefsMountRequest *q, PreloadedToc *pre, ImagefsMount **ret,
                     ImagefsPrefetch **ret_prefetch, char **ret_message) {
        ImagefsMountConfig config = {
                .layer = q->layer,
                .mountpoint = q->mountpoint,
                .timeout_usec = m->read_timeout_usec,
                .forwarder = m->forwarder,
        };
        ImagefsMount *mount = NULL, **n;
        ImagefsPrefetch *prefetch = NULL;
        ImagefsRelay *relay;
        Toc *toc = NULL;
        uint64_t toc_bytes = 0;
        usec_t start, load_usec = 0;
        Digest d;
        int r;

        if (digest_from_string(q->layer, &d) < 0)
                return set_error_message(ret_message, -EINVAL, "Invalid layer digest '%s'.", q->layer);
        r = get_relay(m, q->relay, &relay);
        if (r < 0)
                return set_error_message(ret_message, r, "Failed to set up relay '%s': %s", q->relay, strerror(-r));
        if (q->use_toc && pre && pre->wanted) {
                if (pre->r < 0) {
                        if (ret_message)
                                *ret_message = TAKE_PTR(pre->message);
                        return pre->r;
                }
                toc = TAKE_PTR(pre->toc);
                toc_bytes = pre->bytes;
                load_usec = pre->usec;
        } else if (q->use_toc) {
                start = now(CLOCK_MONOTONIC);
                r = load_toc(m, relay, q, &toc, &toc_bytes, ret_message);
                if (r < 0)
                        return r;
                load_usec = now(CLOCK_MONOTONIC) - start;
        }
        n = reallocarray(m->mounts, m->n_mounts + 1, sizeof(*n));
        if (!n) {
                toc_free(toc);
                return -ENOMEM;
        }
        m->mounts = n;
        r = imagefs_mount_new(&config, toc, relay, m->cache, &mount);
        if (r < 0) {
                toc_free(toc);
                return -ENOMEM;
        }
        imagefs_mount_set_toc_load(mount, toc_bytes, load_usec);
        if (toc && q->n_lowers > 0) {
                Toc *lower_dirs = NULL;

                r = imagefs_lower_dirs_new(toc, q->lowers, q->n_lowers, &lower_dirs);
                if (r < 0) {
                        imagefs_mount_free(mount);
                        return set_error_message(ret_message, r, "Failed to resolve the implied directories of layer %s: %s",
                                                 q->layer, strerror(-r));
                }
                imagefs_mount_set_lower_dirs(mount, lower_dirs);
        }
        if (toc && (q->prefetch_list || q->record_opened)) {
                r = imagefs_prefetch_new(&(ImagefsPrefetchConfig) {
                                                 .layer = q->layer,
                                                 .list_path = q->prefetch_list,
                                                 .record_path = q->record_opened,
                                                 .timeout_usec = m->read_timeout_usec,
                                         },
                                         toc, relay, m->cache, &prefetch);
                if (r < 0) {
                        imagefs_mount_free(mount);
                        return log_error_errno(r, "Failed to read the prefetch list '%s' of layer %s: %m",
                                               strna(q->prefetch_list), q->layer);
                }
                imagefs_mount_set_prefetch(mount, prefetch);
        }
        r = imagefs_mount_start(mount, m->notify_fd);
        if (r < 0) {
                imagefs_mount_free(mount);
                return set_error_message(ret_message, r, "Failed to mount layer %s on '%s'%s%s%s: %s", q->layer,
                                         q->mountpoint, m->forwarder ? " through the forwarder '" : "",
                                         strempty(m->forwarder), m->forwarder ? "'" : "", strerror(-r));
        }
        if (ret_prefetch)
                *ret_prefetch = prefetch;
        else if (prefetch) {
                r = imagefs_prefetch_start(prefetch);
                if (r < 0)
                        log_warning_errno(r, "Failed to start the prefetch of layer %s, ignoring: %m", q->layer);
        }
        m->mounts[m->n_mounts++] = mount;
        log_struct(LOG_INFO,
                   LOG_MESSAGE("Mounted layer %s on %s (%s, ToC of %" PRIu64 " bytes loaded in %" PRIu64 " us).", q->layer,
                               q->mountpoint, q->use_toc ? "ToC mode" : "no-ToC mode", toc_bytes, load_usec),
                   "TONARI_LAYER=%s", q->layer);
        if (ret)
                *ret = mount;
        return 0;
}

static int add_one_mount(ImagefsManager *m, const ImagefsMountRequest *q, PreloadedToc *pre,
                         ImagefsPrefetch **ret_prefetch);

int imagefs_manager_add_mounts(ImagefsManager *m, const ImagefsMountRequest *q, size_t n) {
        _cleanup_free_ ImagefsPrefetch **prefetches = NULL;
        PreloadedToc *pre = NULL;
        ImagefsRelay *relay;
        size_t i;
        int r = 0;

        prefetches = new0(ImagefsPrefetch *, n);
        pre = new0(PreloadedToc, n);
        if (!prefetches || !pre) {
                free(pre);
                return log_oom();
        }
        /* The ToCs of the layers of one relay at once (command lines name one relay). */
        for (i = 0; i < n; i++)
                if (q[i].use_toc && streq(q[i].relay, q[0].relay))
                        pre[i] = (PreloadedToc) {
                                .wanted = true,
                                .request = { .relay = q[i].relay, .layer = q[i].layer, .toc_digest = q[i].toc_digest },
                        };
        r = get_relay(m, q[0].relay, &relay);
        if (r < 0) {
                preloaded_done(pre, n);
                return log_error_errno(r, "Failed to set up relay '%s': %m", q[0].relay);
        }
        preload_tocs(m, relay, pre, n);
        for (i = 0; i < n; i++) {
                r = add_one_mount(m, &q[i], &pre[i], &prefetches[i]);
                if (r < 0)
                        break;
        }
        preloaded_done(pre, n);
        /* Every layer mounted (or one failed): now the prefetch streams, which would have competed with
         * the ToCs of the layers above. */
        for (size_t j = 0; r >= 0 && j < n; j++)
                if (prefetches[j]) {
                        int k = imagefs_prefetch_start(prefetches[j]);

                        if (k < 0)
                                log_warning_errno(k, "Failed to start the prefetch of layer %s, ignoring: %m", q[j].layer);
                }
        return r;
}

int imagefs_manager_add_mount(ImagefsManager *m, const ImagefsMountRequest *q) {
        return add_one_mount(m, q, NULL, NULL);
}

static int add_one_mount(ImagefsManager *m, const ImagefsMountRequest *q, PreloadedToc *pre, ImagefsPrefetch **ret_prefetch) {
        _cleanup_free_ char *message = NULL;
        _cleanup_free_ const Toc **lowers = NULL;
        ImagefsMountRequest s = *q;
        int r;

        if (q->stacked && q->use_toc && m->n_mounts > 0) {
                lowers = new(const Toc *, m->n_mounts);
                if (!lowers)
                        return log_oom();
                for (size_t i = 0; i < m->n_mounts; i++)
                        lowers[i] = imagefs_mount_toc(m->mounts[m->n_mounts - 1 - i]); /* the nearest first */
                s.lowers = lowers;
                s.n_lowers = m->n_mounts;
        }
        r = add_mount(m, &s, pre, NULL, ret_prefetch, &message);
        if (r == -ENOMEM)
                return log_oom();
        if (r < 0)
                return log_error_errno(r, "%s", message ?: strerror(-r));
        return 0;
}

int imagefs_manager_run(ImagefsManager *m) {
        usec_t deadline;
        int r;

        (void) sd_notify(false, "READY=1");
        r = sd_event_loop(m->event);
        (void) sd_notify(false, "STOPPING=1");
        (void) imagefs_manager_write_stats(m);
        /* Every session told to end first, then one wait for all of them: the stop takes as long as one
         * mount's, however many there are. */
        for (size_t i = 0; i < m->n_mounts; i++)
                imagefs_mount_stop_begin(m->mounts[i]);
        deadline = now(CLOCK_REALTIME) + IMAGEFS_STOP_WAIT_USEC;
        for (size_t i = 0; i < m->n_mounts; i++)
                if (imagefs_mount_stop_finish(m->mounts[i], deadline) == -ETIMEDOUT)
                        log_struct(LOG_WARNING,
                                   LOG_MESSAGE("A request on %s is still being answered, not waiting for it%s.",
                                               imagefs_mount_path(m->mounts[i]),
                                               m->forwarder ? ": the forwarder passes it to the next worker"
                                                            : ""),
                                   "TONARI_LAYER=%s", imagefs_mount_layer(m->mounts[i]));
        while (m->n_mounts > 0)
                remove_mount(m, m->n_mounts - 1, false);
        return r;
}

bool imagefs_manager_threads_left(const ImagefsManager *m) {
        return m->n_abandoned > 0;
}

/* Daemon mode: images. */

_printf_(4, 5) static int fail(ImagefsError *e, ImagefsFailure failure, int r, const char *format, ...) {
        va_list ap;

        e->failure = failure;
        free(e->message);
        e->message = NULL;
        va_start(ap, format);
        if (vasprintf(&e->message, format, ap) < 0)
                e->message = NULL;
        va_end(ap);
        log_info("Refused: %s", strna(e->message));
        return r;
}

/* A directory given by the caller: absolute, normalized, there. option: it goes into overlayfs's options,
 * which split on ',' and ':' (and take '\\' as an escape). */
static int check_directory(const char *what, const char *path, bool option, ImagefsError *e) {
        _cleanup_free_ char *q = cescape(path);
        struct stat st;

        if (!q)
                return -ENOMEM;
        if (!path_is_normalized_absolute(path))
                return fail(e, IMAGEFS_FAILURE_INVALID_PATH, -EINVAL,
                            "Invalid %s '%s': expected an absolute path without '.', '..' or '//' components.", what, q);
        if (option && strpbrk(path, ",:\\"))
                return fail(e, IMAGEFS_FAILURE_INVALID_PATH, -EINVAL,
                            "Invalid %s '%s': overlayfs cannot take a path with ',', ':' or '\\'.", what, q);
        if (stat(path, &st) < 0) {
                if (errno == ENOENT)
                        return fail(e, IMAGEFS_FAILURE_NO_SUCH_DIRECTORY, -ENOENT, "The %s '%s' does not exist.", what, q);
                return fail(e, IMAGEFS_FAILURE_FAILED, -errno, "Cannot use %s '%s': %s", what, q, strerror(errno));
        }
        if (!S_ISDIR(st.st_mode))
                return fail(e, IMAGEFS_FAILURE_NOT_A_DIRECTORY, -ENOTDIR, "The %s '%s' is not a directory.", what, q);
        return 0;
}

static ImageMount *find_image(ImagefsManager *m, const char *target) {
        for (size_t i = 0; i < m->n_images; i++)
                if (streq(m->images[i].target, target))
                        return &m->images[i];
        return NULL;
}

static bool is_mount_root(const char *path) {
        struct statx stx;

        return statx(AT_FDCWD, path, AT_STATX_DONT_SYNC, STATX_BASIC_STATS, &stx) >= 0 &&
               (stx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) && (stx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* The mount of layer diff_id on the layers lower (bottom first, n_lower of them), shared with the images
 * that have the same layers below it: the mount is named by the chain's digest (OCI's ChainID, the
 * layer's diff_id for a bottom layer), since its implied directories take their attributes from the
 * layers below. Mounted now if it is not yet. */
/* The directory a layer is mounted on below MountDirectory=, named by its chain. 16 hex digits: short
 * enough for overlayfs's option page to hold ~90 layers' paths; a prefix two layers share is refused
 * (the mount point is in use). */
static int layer_dir(ImagefsManager *m, const Digest *id, bool use_toc, char **ret) {
        char hex[DIGEST_HEX_LEN + 1];

        digest_to_hex(id, hex);
        return asprintf(ret, "%s/layers/%.16s%s", m->mount_directory, hex, use_toc ? "" : "-notoc") < 0 ? -ENOMEM : 0;
}

static ImagefsMount *find_layer_mount(ImagefsManager *m, const char *dir) {
        for (size_t i = 0; i < m->n_mounts; i++)
                if (streq(imagefs_mount_path(m->mounts[i]), dir) && imagefs_mount_running(m->mounts[i]))
                        return m->mounts[i];
        return NULL;
}

static int get_layer(ImagefsManager *m, const ImagefsImageLayer *l, ImagefsMount *const *lower, size_t n_lower,
                     const Digest *chain, bool use_toc, bool adopt, PreloadedToc *pre, ImagefsMount **ret,
                     ImagefsError *e) {
        _cleanup_free_ char *dir = NULL, *message = NULL;
        _cleanup_free_ const Toc **lowers = NULL;
        char layer[DIGEST_STRING_MAX];
        struct stat st;
        int r;

        digest_to_string(&l->diff_id, layer);
        r = layer_dir(m, chain, use_toc, &dir);
        if (r < 0)
                return r;
        if (adopt && n_lower > 0 && !is_mount_root(dir)) {
                /* A predecessor that named layer mounts by diff_id alone: taken over under that name. */
                _cleanup_free_ char *old = NULL;

                r = layer_dir(m, &l->diff_id, use_toc, &old);
                if (r < 0)
                        return r;
                if (is_mount_root(old))
                        free_and_replace(dir, old);
        }
        *ret = find_layer_mount(m, dir);
        if (*ret)
                return 0;
        if (use_toc && n_lower > 0) {
                lowers = new(const Toc *, n_lower);
                if (!lowers)
                        return -ENOMEM;
                for (size_t i = 0; i < n_lower; i++)
                        lowers[i] = imagefs_mount_toc(lower[n_lower - 1 - i]); /* the nearest first */
        }
        /* A layer mount a killed daemon left behind cannot be stat()ed (ENOTCONN): detach it. */
        if (!adopt && stat(dir, &st) < 0 && errno == ENOTCONN)
                (void) umount2(dir, MNT_DETACH);
        if (adopt) {
                /* The forwarder's mount of our predecessor: taken over as it is. */
                if (!is_mount_root(dir))
                        return fail(e, IMAGEFS_FAILURE_NOT_MOUNTED, -ENOENT, "Layer %s is no longer mounted on '%s'.",
                                    layer, dir);
        } else {
                r = mkdirat_p(AT_FDCWD, dir, 0755);
                if (r < 0)
                        return fail(e, IMAGEFS_FAILURE_FAILED, r, "Failed to create '%s': %s", dir, strerror(-r));
                if (is_mount_root(dir))
                        return fail(e, IMAGEFS_FAILURE_FAILED, -EBUSY, "The mount point '%s' of layer %s is in use.", dir,
                                    layer);
        }

        r = add_mount(m, &(ImagefsMountRequest) {
                .relay = m->relay_address,
                .layer = layer,
                .mountpoint = dir,
                .use_toc = use_toc,
                .toc_digest = l->has_toc_digest ? &l->toc_digest : NULL,
                .lowers = lowers,
                .n_lowers = lowers ? n_lower : 0,
        }, pre, ret, NULL, &message);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                if (!adopt)
                        (void) rmdir(dir);
                return fail(e,
                            r == -ETIMEDOUT ? IMAGEFS_FAILURE_RELAY_UNREACHABLE :
                            r == -EBADMSG   ? IMAGEFS_FAILURE_BAD_TOC :
                                              IMAGEFS_FAILURE_FAILED,
                            r, "%s", message ?: strerror(-r));
        }
        return 0;
}

/* OCI's ChainID: the bottom layer's diff_id, then sha256("CHAIN DIFF_ID") up the stack. */
static int layer_chain(Digest *chain, const Digest *diff_id, bool bottom) {
        char text[2 * DIGEST_STRING_MAX + 1], a[DIGEST_STRING_MAX], b[DIGEST_STRING_MAX];

        if (bottom) {
                *chain = *diff_id;
                return 0;
        }
        digest_to_string(chain, a);
        digest_to_string(diff_id, b);
        snprintf(text, sizeof(text), "%s %s", a, b);
        return digest_buffer(text, strlen(text), chain);
}

/* Stops the layer mounts of image that no other image uses. */
static void release_layers(ImagefsManager *m, ImageMount *image) {
        for (size_t j = 0; j < image->n_layers; j++) {
                _cleanup_free_ char *dir = NULL;

                if (layer_in_use(m, image->layers[j], image))
                        continue;
                /* A layer twice in one image: once is enough. */
                for (size_t k = 0; k < j; k++)
                        if (image->layers[k] == image->layers[j])
                                goto next;
                for (size_t i = 0; i < m->n_mounts; i++)
                        if (m->mounts[i] == image->layers[j]) {
                                dir = strdup(imagefs_mount_path(m->mounts[i]));
                                remove_mount(m, i, true);
                                break;
                        }
                if (dir)
                        (void) rmdir(dir);
        next:;
        }
}

static void image_mount_done(ImageMount *image) {
        free(image->target);
        free(image->image);
        free(image->upperdir);
        free(image->workdir);
        free(image->layers);
        free(image->infos);
}

static void remove_image(ImagefsManager *m, ImageMount *image) {
        size_t i = image - m->images;

        release_layers(m, image);
        image_mount_done(image);
        memmove(m->images + i, m->images + i + 1, (m->n_images - i - 1) * sizeof(m->images[0]));
        m->n_images--;
}

/* A new entry at the end of the image table, with no layer attached yet (n_layers 0). */
static int image_append(ImagefsManager *m, const char *target, const char *image, const char *upperdir,
                        const char *workdir, bool use_toc, const ImagefsImageLayer *layers, size_t n_layers,
                        ImageMount **ret) {
        ImageMount *n;

        n = reallocarray(m->images, m->n_images + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        m->images = n;
        n = &m->images[m->n_images];
        *n = (ImageMount) {
                .target = strdup(target),
                .image = strdup(image),
                .upperdir = upperdir ? strdup(upperdir) : NULL,
                .workdir = workdir ? strdup(workdir) : NULL,
                .layers = new0(ImagefsMount *, n_layers),
                .infos = memdup(layers, n_layers * sizeof(ImagefsImageLayer)),
                .use_toc = use_toc,
        };
        m->n_images++;
        if (!n->target || !n->image || !n->layers || !n->infos || (upperdir && (!n->upperdir || !n->workdir))) {
                remove_image(m, n);
                return -ENOMEM;
        }
        *ret = n;
        return 0;
}

static int overlay_options(ImagefsManager *m, ImagefsMount **layers, size_t n, const char *upperdir,
                           const char *workdir, char **ret) {
        _cleanup_free_ char *o = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        size_t size;

        f = open_memstream(&o, &size);
        if (!f)
                return -ENOMEM;
        fputs("lowerdir=", f);
        for (size_t i = n; i > 0; i--)
                fprintf(f, "%s%s", imagefs_mount_path(layers[i - 1]), i > 1 ? ":" : "");
        /* overlayfs wants two lower layers when there is no upper one: an empty directory under a
         * one-layer image changes nothing. */
        if (n == 1 && !upperdir)
                fprintf(f, ":%s/empty", m->mount_directory);
        if (upperdir)
                fprintf(f, ",upperdir=%s,workdir=%s", upperdir, workdir);
        if (fflush(f) != 0 || ferror(f))
                return -ENOMEM;
        f = safe_fclose(f);
        *ret = TAKE_PTR(o);
        return 0;
}

/*
 * The state file (with a forwarder): the images mounted, so that the next process (after a restart or
 * a crash) takes them over. Fields end with a NUL byte (paths may hold any other): the magic, then per
 * image its target, name, upper and work directory ("" for read-only), "1" or "0" for the ToC, the
 * number of layers, and per layer (bottom first) its diff_id and its ToC's digest ("" when the relay
 * named none). Replaced atomically after every change.
 */
#define STATE_MAGIC "TNRIFS1"

static void save_state(ImagefsManager *m) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;

        if (!m->state_file || !m->forwarder)
                return;
        if (asprintf(&tmp, "%s.tmp", m->state_file) < 0) {
                log_oom();
                return;
        }
        f = fopen(tmp, "we");
        if (!f) {
                log_warning_errno(errno, "Failed to create '%s', a restart will lose the mounts: %m", tmp);
                return;
        }
        fputs(STATE_MAGIC, f);
        fputc(0, f);
        for (size_t i = 0; i < m->n_images; i++) {
                const ImageMount *image = &m->images[i];

                fprintf(f, "%s%c%s%c%s%c%s%c%c%c%zu%c", image->target, 0, image->image, 0, strempty(image->upperdir),
                        0, strempty(image->workdir), 0, image->use_toc ? '1' : '0', 0, image->n_layers, 0);
                for (size_t j = 0; j < image->n_layers; j++) {
                        char d[DIGEST_STRING_MAX];

                        fprintf(f, "%s%c", digest_to_string(&image->infos[j].diff_id, d), 0);
                        fprintf(f, "%s%c", image->infos[j].has_toc_digest ? digest_to_string(&image->infos[j].toc_digest, d) : "",
                                0);
                }
        }
        if (fflush(f) != 0 || ferror(f) || rename(tmp, m->state_file) < 0) {
                log_warning_errno(errno ?: EIO, "Failed to write '%s', a restart will lose the mounts: %m",
                                  m->state_file);
                (void) unlink(tmp);
        }
}

/* The next field of the state file, or NULL at its end (or at a field without its NUL). */
static const char *state_field(const char *data, size_t size, size_t *offset) {
        const char *p = data + *offset, *e;

        if (*offset >= size)
                return NULL;
        e = memchr(p, 0, size - *offset);
        if (!e)
                return NULL;
        *offset = (size_t) (e - data) + 1;
        return p;
}

/* The ToCs of an image's layers that are not mounted yet, loaded at once (ToC mode); *ret is for
 * get_layer(), layer by layer, and preloaded_done(). NULL without the ToC. */
static int preload_image(ImagefsManager *m, const ImagefsImageLayer *layers, size_t n_layers, bool use_toc,
                         PreloadedToc **ret) {
        _cleanup_free_ char *names = NULL;
        PreloadedToc *pre;
        ImagefsRelay *relay;
        Digest chain;
        int r;

        *ret = NULL;
        if (!use_toc || n_layers == 0)
                return 0;
        r = get_relay(m, m->relay_address, &relay);
        if (r < 0)
                return r;
        pre = new0(PreloadedToc, n_layers);
        names = new(char, n_layers * DIGEST_STRING_MAX);
        if (!pre || !names) {
                free(pre);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n_layers; i++) {
                _cleanup_free_ char *dir = NULL;

                r = layer_chain(&chain, &layers[i].diff_id, i == 0);
                if (r >= 0)
                        r = layer_dir(m, &chain, use_toc, &dir);
                if (r < 0) {
                        preloaded_done(pre, n_layers);
                        return r;
                }
                if (find_layer_mount(m, dir))
                        continue;
                pre[i] = (PreloadedToc) {
                        .wanted = true,
                        .request = {
                                .relay = m->relay_address,
                                .layer = digest_to_string(&layers[i].diff_id, names + i * DIGEST_STRING_MAX),
                                .toc_digest = layers[i].has_toc_digest ? &layers[i].toc_digest : NULL,
                        },
                };
        }
        preload_tocs(m, relay, pre, n_layers);
        /* The layer names' memory is ours; what add_mount() reads of a request is copied by then. */
        for (size_t i = 0; i < n_layers; i++)
                pre[i].request.layer = NULL;
        *ret = pre;
        return 0;
}

/* One image of the state file: its layers attached again, its overlay (still mounted) kept. */
static int adopt_image(ImagefsManager *m, const char *target, const char *image, const char *upperdir,
                       const char *workdir, bool use_toc, ImagefsImageLayer *layers, size_t n_layers) {
        _cleanup_(imagefs_error_done) ImagefsError e = {};
        PreloadedToc *pre = NULL;
        ImageMount *n;
        Digest chain;
        int r;

        if (!is_mount_root(target)) {
                /* Unmounted while no process served it: its layers go below, with the other orphans. */
                log_info("Image '%s' is no longer mounted on %s, forgetting it.", image, target);
                return 0;
        }
        r = image_append(m, target, image, upperdir, workdir, use_toc, layers, n_layers, &n);
        if (r < 0)
                return r;
        /* The ToCs of all its layers at once: the stall readers see is one load, not one per layer. */
        r = preload_image(m, layers, n_layers, use_toc, &pre);
        if (r < 0) {
                remove_image(m, n);
                return r;
        }
        for (size_t i = 0; i < n_layers; i++) {
                r = layer_chain(&chain, &layers[i].diff_id, i == 0);
                if (r >= 0)
                        r = get_layer(m, &layers[i], n->layers, i, &chain, use_toc, true, pre ? &pre[i] : NULL,
                                      &n->layers[i], &e);
                if (r < 0) {
                        preloaded_done(pre, n_layers);
                        /* Not served, the overlay on it would fail every reader: detached, with the layers. */
                        log_error("Failed to take image '%s' on %s over: %s Unmounting it.", image, target,
                                  strna(e.message));
                        (void) umount2(target, UMOUNT_NOFOLLOW | MNT_DETACH);
                        remove_image(m, n);
                        return r == -ENOMEM ? r : 0;
                }
                n->n_layers++;
        }
        preloaded_done(pre, n_layers);
        log_struct(LOG_INFO,
                   LOG_MESSAGE("Took image '%s' on %s over (%zu layers%s, %s%s).", image, target, n_layers,
                               use_toc ? "" : " without ToC", upperdir ? "writable in " : "read-only", strempty(upperdir)),
                   "TONARI_IMAGE=%s", image, "TONARI_TARGET=%s", target);
        return 0;
}

/* Layer mounts below MountDirectory= that no image of the state file stacks (a crash between a layer's
 * mount and the state's update): unmounted. */
static void unmount_orphan_layers(ImagefsManager *m) {
        _cleanup_free_ char *layers = path_join(m->mount_directory, "layers");
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        if (!layers)
                return;
        d = opendir(layers);
        if (!d)
                return;
        while ((de = readdir(d))) {
                _cleanup_free_ char *dir = NULL;
                bool ours = false;

                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                dir = path_join(layers, de->d_name);
                if (!dir)
                        continue;
                for (size_t i = 0; i < m->n_mounts; i++)
                        if (streq(imagefs_mount_path(m->mounts[i]), dir))
                                ours = true;
                if (ours)
                        continue;
                if (is_mount_root(dir)) {
                        log_info("Unmounting layer mount %s, which no image uses.", dir);
                        if (umount2(dir, MNT_DETACH) < 0)
                                log_warning_errno(errno, "Failed to unmount '%s', ignoring: %m", dir);
                }
                (void) rmdir(dir);
        }
}

int imagefs_manager_adopt(ImagefsManager *m) {
        _cleanup_free_ char *data = NULL;
        size_t size = 0, offset = 0;
        int r;

        if (!m->forwarder || !m->state_file)
                return 0;
        r = read_full_file(m->state_file, &data, &size);
        if (r == -ENOENT) {
                unmount_orphan_layers(m);
                return 0;
        }
        if (r < 0)
                return log_error_errno(r, "Failed to read the state file '%s': %m", m->state_file);
        if (!streq_ptr(state_field(data, size, &offset), STATE_MAGIC))
                return log_error_errno(EBADMSG, "The state file '%s' is not one of tonari-imagefs (no '%s' at "
                                       "its start).", m->state_file, STATE_MAGIC);
        while (offset < size) {
                const char *target, *image, *upper, *work, *toc, *count;
                _cleanup_free_ ImagefsImageLayer *layers = NULL;
                unsigned n_layers = 0;

                target = state_field(data, size, &offset);
                image = state_field(data, size, &offset);
                upper = state_field(data, size, &offset);
                work = state_field(data, size, &offset);
                toc = state_field(data, size, &offset);
                count = state_field(data, size, &offset);
                if (!count || !path_is_normalized_absolute(target) || sscanf(count, "%u", &n_layers) != 1 ||
                    n_layers == 0 || n_layers > 4096)
                        return log_error_errno(EBADMSG, "The state file '%s' is malformed at byte %zu.", m->state_file,
                                               offset);
                layers = new0(ImagefsImageLayer, n_layers);
                if (!layers)
                        return log_oom();
                for (unsigned i = 0; i < n_layers; i++) {
                        const char *diff_id = state_field(data, size, &offset);
                        const char *toc_digest = state_field(data, size, &offset);

                        if (!toc_digest || digest_from_string(diff_id, &layers[i].diff_id) < 0 ||
                            (!isempty(toc_digest) && digest_from_string(toc_digest, &layers[i].toc_digest) < 0))
                                return log_error_errno(EBADMSG, "The state file '%s' has a malformed layer of image "
                                                       "'%s' before byte %zu.", m->state_file, image, offset);
                        layers[i].has_toc_digest = !isempty(toc_digest);
                }
                r = adopt_image(m, target, image, isempty(upper) ? NULL : upper, isempty(work) ? NULL : work,
                                streq(toc, "1"), layers, n_layers);
                if (r < 0)
                        return log_oom();
        }
        unmount_orphan_layers(m);
        save_state(m);
        log_info("Took %zu images over from the state file %s.", m->n_images, m->state_file);
        return 0;
}

int imagefs_manager_mount_image(ImagefsManager *m, const char *image, const char *target, const char *upperdir,
                                const char *workdir, bool use_toc, ImagefsError *e) {
        _cleanup_free_ ImagefsImageLayer *layers = NULL;
        _cleanup_free_ ImagefsMount **mounts = NULL;
        _cleanup_free_ char *err = NULL, *options = NULL, *qimage = NULL, *empty = NULL;
        PreloadedToc *pre = NULL;
        ImageMount *n;
        Digest chain;
        ImagefsRelay *relay;
        size_t n_layers = 0;
        usec_t start = now(CLOCK_MONOTONIC);
        int r;

        assert(m->relay_address && m->mount_directory);
        qimage = cescape(image);
        if (!qimage)
                return -ENOMEM;
        if (isempty(image) || string_has_cc(image))
                return fail(e, IMAGEFS_FAILURE_NO_SUCH_IMAGE, -EINVAL, "Invalid image name '%s'.", qimage);
        r = check_directory("target", target, false, e);
        if (r < 0)
                return r;
        if (upperdir) {
                r = check_directory("upper directory", upperdir, true, e);
                if (r < 0)
                        return r;
                r = check_directory("work directory", workdir, true, e);
                if (r < 0)
                        return r;
                if (streq(upperdir, workdir) || path_equal_or_below(upperdir, workdir) ||
                    path_equal_or_below(workdir, upperdir))
                        return fail(e, IMAGEFS_FAILURE_INVALID_PATH, -EINVAL,
                                    "The upper directory '%s' and the work directory '%s' must be apart.", upperdir,
                                    workdir);
        }
        if (find_image(m, target))
                return fail(e, IMAGEFS_FAILURE_ALREADY_MOUNTED, -EEXIST, "An image is mounted on '%s' already.", target);
        if (is_mount_root(target))
                return fail(e, IMAGEFS_FAILURE_ALREADY_MOUNTED, -EEXIST,
                            "Something is mounted on '%s' already (it is a mount point).", target);

        r = get_relay(m, m->relay_address, &relay);
        if (r < 0)
                return fail(e, IMAGEFS_FAILURE_FAILED, r, "Failed to set up relay '%s': %s", m->relay_address,
                            strerror(-r));
        r = imagefs_relay_get_image(relay, image, m->read_timeout_usec, &layers, &n_layers, &err);
        if (r == -ENOENT)
                return fail(e, IMAGEFS_FAILURE_NO_SUCH_IMAGE, r, "The relay %s has no image '%s'%s%s", m->relay_address,
                            qimage, err ? ": " : ".", strempty(err));
        if (r == -ETIMEDOUT)
                return fail(e, IMAGEFS_FAILURE_RELAY_UNREACHABLE, r,
                            "The relay %s could not be reached within %" PRIu64 " ms%s%s", m->relay_address,
                            m->read_timeout_usec / USEC_PER_MSEC, err ? ": " : ".", strempty(err));
        if (r < 0)
                return fail(e, IMAGEFS_FAILURE_FAILED, r, "Failed to get image '%s' from %s: %s", qimage,
                            m->relay_address, err ?: strerror(-r));

        if (!upperdir && n_layers == 1) {
                empty = path_join(m->mount_directory, "empty");
                if (!empty)
                        return -ENOMEM;
                r = mkdirat_p(AT_FDCWD, empty, 0755);
                if (r < 0)
                        return fail(e, IMAGEFS_FAILURE_FAILED, r, "Failed to create '%s': %s", empty, strerror(-r));
        }

        /* Counted at once, so that a failure below releases the layers mounted so far. */
        r = image_append(m, target, image, upperdir, workdir, use_toc, layers, n_layers, &n);
        if (r < 0)
                return r;
        /* The ToCs of the layers not mounted yet, all at once: one round trip for the image. */
        r = preload_image(m, layers, n_layers, use_toc, &pre);
        if (r < 0) {
                remove_image(m, n);
                return r;
        }
        for (size_t i = 0; i < n_layers; i++) {
                r = layer_chain(&chain, &layers[i].diff_id, i == 0);
                if (r >= 0)
                        r = get_layer(m, &layers[i], n->layers, i, &chain, use_toc, false, pre ? &pre[i] : NULL,
                                      &n->layers[i], e);
                if (r < 0) {
                        preloaded_done(pre, n_layers);
                        remove_image(m, n);
                        return r;
                }
                n->n_layers++;
        }
        preloaded_done(pre, n_layers);
        r = overlay_options(m, n->layers, n->n_layers, upperdir, workdir, &options);
        if (r < 0) {
                remove_image(m, n);
                return r;
        }
        if (mount("overlay", target, "overlay", upperdir ? 0 : MS_RDONLY, options) < 0) {
                r = -errno;
                remove_image(m, n);
                if (r == -EINVAL && strlen(options) >= 4000)
                        return fail(e, IMAGEFS_FAILURE_FAILED, r, "Failed to mount image '%s' on '%s': its %zu layers "
                                    "are more than overlayfs's options can name.", qimage, target, n_layers);
                return fail(e, IMAGEFS_FAILURE_FAILED, r, "Failed to mount overlayfs on '%s' (%s): %s", target, options,
                            strerror(-r));
        }
        save_state(m);
        log_struct(LOG_INFO,
                   LOG_MESSAGE("Mounted image '%s' on %s (%zu layers%s, %s%s, %" PRIu64 " ms).", qimage, target,
                               n_layers, use_toc ? "" : " without ToC", upperdir ? "writable in " : "read-only",
                               strempty(upperdir),
                               (now(CLOCK_MONOTONIC) - start) / USEC_PER_MSEC),
                   "TONARI_IMAGE=%s", image, "TONARI_TARGET=%s", target);
        return 0;
}

int imagefs_manager_unmount_image(ImagefsManager *m, const char *target, ImagefsError *e) {
        _cleanup_free_ char *q = cescape(target);
        ImageMount *image;

        if (!q)
                return -ENOMEM;
        if (!path_is_normalized_absolute(target))
                return fail(e, IMAGEFS_FAILURE_INVALID_PATH, -EINVAL,
                            "Invalid target '%s': expected an absolute path without '.', '..' or '//' components.", q);
        image = find_image(m, target);
        if (!image)
                return fail(e, IMAGEFS_FAILURE_NOT_MOUNTED, -ENOENT, "No image is mounted on '%s'.", q);
        /* EINVAL: no longer a mount point (unmounted from outside); the layers go all the same. */
        if (umount2(target, UMOUNT_NOFOLLOW) < 0 && errno != EINVAL) {
                if (errno == EBUSY)
                        return fail(e, IMAGEFS_FAILURE_BUSY, -EBUSY, "The image on '%s' is in use.", q);
                return fail(e, IMAGEFS_FAILURE_FAILED, -errno, "Failed to unmount '%s': %s", q, strerror(errno));
        }
        log_struct(LOG_INFO, LOG_MESSAGE("Unmounted image '%s' from %s.", image->image, target),
                   "TONARI_IMAGE=%s", image->image, "TONARI_TARGET=%s", target);
        remove_image(m, image);
        save_state(m);
        return 0;
}

/* At exit: the overlays are detached (a container still using one keeps it until it exits; its
 * layers' connections end with this process). With a forwarder they all stay, served again by the next
 * process, which finds them in the state file. */
static void unmount_all_images(ImagefsManager *m) {
        if (m->forwarder) {
                while (m->n_images > 0)
                        image_mount_done(&m->images[--m->n_images]);
                return;
        }
        while (m->n_images > 0) {
                ImageMount *image = &m->images[m->n_images - 1];

                if (umount2(image->target, UMOUNT_NOFOLLOW | MNT_DETACH) < 0 && errno != EINVAL)
                        log_warning_errno(errno, "Failed to unmount '%s', ignoring: %m", image->target);
                remove_image(m, image);
        }
}

size_t imagefs_manager_n_images(const ImagefsManager *m) {
        return m->n_images;
}

void imagefs_manager_image_info(ImagefsManager *m, size_t i, ImagefsImageInfo *ret) {
        const ImageMount *image = &m->images[i];

        *ret = (ImagefsImageInfo) {
                .target = image->target,
                .image = image->image,
                .upperdir = image->upperdir,
                .workdir = image->workdir,
                .n_layers = image->n_layers,
        };
        for (size_t j = 0; j < image->n_layers; j++) {
                ImagefsCounters c;

                imagefs_mount_counters(image->layers[j], &c);
                ret->counters.metadata_round_trips += c.metadata_round_trips;
                ret->counters.content_round_trips += c.content_round_trips;
                ret->counters.bytes_fetched += c.bytes_fetched;
                ret->counters.cache_hits += c.cache_hits;
                ret->counters.cache_misses += c.cache_misses;
                ret->counters.toc_bytes += c.toc_bytes;
                ret->counters.toc_load_usec += c.toc_load_usec;
                ret->counters.errors += c.errors;
        }
}

const char *imagefs_manager_relay(const ImagefsManager *m) {
        return m->relay_address;
}

const char *imagefs_manager_cache_directory(const ImagefsManager *m) {
        return m->cache_directory;
}

uint64_t imagefs_manager_cache_max_bytes(const ImagefsManager *m) {
        return m->cache_max_bytes;
}

uint64_t imagefs_manager_cache_bytes(ImagefsManager *m) {
        uint64_t bytes, entries;

        imagefs_cache_usage(m->cache, &bytes, &entries);
        return bytes;
}

usec_t imagefs_manager_read_timeout_usec(const ImagefsManager *m) {
        return m->read_timeout_usec;
}

int imagefs_manager_connect_bus(ImagefsManager *m, const char *address) {
        int r;

        r = bus_open(address, "tonari-imagefs", &m->bus);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to %s: %m", address ?: "the system bus");
        r = imagefs_bus_add_objects(m->bus, m);
        if (r < 0)
                return log_error_errno(r, "Failed to register the D-Bus objects: %m");
        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");
        /* Losing the bus means nobody can reach us any more: exit (the mounts go), let systemd restart us. */
        r = sd_bus_set_exit_on_disconnect(m->bus, true);
        if (r < 0)
                return log_error_errno(r, "Failed to set exit-on-disconnect: %m");
        r = sd_bus_request_name(m->bus, IMAGEFS_BUS_NAME, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to acquire bus name '%s': %m", IMAGEFS_BUS_NAME);
        return 0;
}

static const char *const feature_table[_IMAGEFS_FEATURE_MAX] = {
        [IMAGEFS_FEATURE_FUSE] = "fuse",
        [IMAGEFS_FEATURE_OVERLAYFS] = "overlayfs",
        [IMAGEFS_FEATURE_FDSTORE] = "fdstore",
        [IMAGEFS_FEATURE_FORWARDER] = "forwarder",
        [IMAGEFS_FEATURE_RESEND] = "resend",
};

const char *imagefs_feature_to_string(ImagefsFeature f) {
        return f >= 0 && f < _IMAGEFS_FEATURE_MAX ? feature_table[f] : NULL;
}

void imagefs_feature_describe(ImagefsFeature f, const char *forwarder, bool forwarder_runs, const char *release,
                              bool *ret_available, const char **ret_detail) {
        unsigned major, minor;
        bool resend;

        switch (f) {
        case IMAGEFS_FEATURE_FORWARDER:
                *ret_available = forwarder;
                if (forwarder)
                        *ret_detail = "in use: mounts and the requests in flight survive a restart or kill of "
                                      "tonari-imagefs (on every kernel)";
                else if (forwarder_runs)
                        *ret_detail = "tonari-imagefs-fd runs but is not used (Forwarder=): a restart of "
                                      "tonari-imagefs ends its mounts and fails the requests in flight";
                else
                        *ret_detail = "not available (tonari-imagefs-fd does not run): a restart of "
                                      "tonari-imagefs ends its mounts and fails the requests in flight";
                return;
        case IMAGEFS_FEATURE_RESEND:
                resend = parse_kernel_release(release, &major, &minor) >= 0 &&
                         (major > 6 || (major == 6 && minor >= 9));
                *ret_available = resend;
                if (resend)
                        *ret_detail = forwarder ? "the kernel resends requests in flight: they survive a "
                                                  "restart of tonari-imagefs-fd too"
                                                : "the kernel resends requests in flight, but only a "
                                                  "forwarder keeps the mounts over a restart";
                else
                        *ret_detail = forwarder ? "kernel before 6.9: requests tonari-imagefs-fd holds when it "
                                                  "restarts are lost (their callers hang): restart it idle"
                                                : "kernel before 6.9, no forwarder: requests in flight at a "
                                                  "restart of tonari-imagefs are lost";
                return;
        default:
                *ret_available = false;
                *ret_detail = NULL;
        }
}

void imagefs_feature_detect(const ImagefsManager *m, ImagefsFeature f, bool *ret_available, const char **ret_detail) {
        _cleanup_free_ char *filesystems = NULL;
        struct utsname u;
        bool module = false;
        struct stat st;

        switch (f) {
        case IMAGEFS_FEATURE_FORWARDER:
        case IMAGEFS_FEATURE_RESEND: {
                _cleanup_free_ char *dir = strdup(IMAGEFS_FORWARDER_AUTO_SOCKET);

                if (dir)
                        *strrchr(dir, '/') = 0;
                imagefs_feature_describe(f, m->forwarder, dir && stat(dir, &st) >= 0 && S_ISDIR(st.st_mode),
                                         uname(&u) >= 0 ? u.release : NULL, ret_available, ret_detail);
                return;
        }
        case IMAGEFS_FEATURE_FUSE:
                *ret_available = access("/dev/fuse", R_OK | W_OK) >= 0;
                *ret_detail = *ret_available ? "/dev/fuse" : "no usable /dev/fuse: no layer can be mounted";
                return;
        case IMAGEFS_FEATURE_OVERLAYFS:
                if (read_full_file("/proc/filesystems", &filesystems, NULL) >= 0 && strstr(filesystems, "\toverlay\n")) {
                        *ret_available = true;
                        *ret_detail = "overlay in /proc/filesystems";
                        return;
                }
                if (uname(&u) >= 0) {
                        _cleanup_free_ char *dir = strjoin("/lib/modules/", u.release, "/kernel/fs/overlayfs");
                        module = dir && access(dir, F_OK) >= 0;
                }
                *ret_available = module;
                *ret_detail = module ? "the overlay module, loaded at the first mount"
                                     : "this kernel has no overlayfs: images cannot be stacked";
                return;
        case IMAGEFS_FEATURE_FDSTORE:
                /* The store comes with a service manager's notification socket (systemd's
                 * FileDescriptorStoreMax=); a process started by hand has none. */
                *ret_available = !!getenv("NOTIFY_SOCKET");
                *ret_detail = *ret_available ? "the service manager's file descriptor store ($NOTIFY_SOCKET)"
                                             : "not started by a service manager: no file descriptor store, a "
                                               "restart ends the mounts";
                return;
        default:
                *ret_available = false;
                *ret_detail = NULL;
        }
}
