/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * tonari-imagefs's manager: the mounts of one process, the relays they read from (one channel per
 * address), the content cache they share, and the event loop (signals now; the D-Bus edge,
 * imagefs-bus.c, attaches to the same loop and calls imagefs_manager_add_mount() and friends).
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "digest.h"
#include "imagefs-fuse.h"
#include "time-util.h"

/* ReadTimeoutSec=: a request that needs the relay fails with EIO after this long without it. Long
 * enough to ride out a relay's restart, short enough that a container sees an error rather than a
 * hang. */
#define IMAGEFS_READ_TIMEOUT_DEFAULT_USEC (30 * USEC_PER_SEC)
/* CacheMaxBytes=: 10 GiB, a few large images' contents on a worker's disk. */
#define IMAGEFS_CACHE_MAX_DEFAULT_BYTES (10ULL * 1024ULL * 1024ULL * 1024ULL)

typedef struct ImagefsManager ImagefsManager;

typedef struct ImagefsManagerConfig {
        const char *relay;           /* daemon mode: the relay images are mounted from */
        const char *mount_directory; /* daemon mode: where layers are mounted (made if missing) */
        bool exit_when_idle;         /* command-line mode: exit when the last mount went away */
        const char *cache_directory;
        uint64_t cache_max_bytes;
        usec_t read_timeout_usec;
        const char *stats_file;      /* written on SIGUSR1 and at exit; NULL: logged only */
        const char *forwarder;       /* tonari-imagefs-fd's socket; NULL: mounts are this process's own */
        const char *state_file;      /* daemon mode with a forwarder: the images mounted, for the next process */
} ImagefsManagerConfig;

typedef struct ImagefsMountRequest {
        const char *relay;           /* "unix:/path" or "host:port" */
        const char *layer;           /* diff_id */
        const char *mountpoint;
        bool use_toc;
        const Digest *toc_digest;    /* the ToC's digest from GetImage; NULL: the one GetToC announces */
        const char *prefetch_list;   /* ToC mode: paths to stream into the cache after mounting, or NULL */
        const char *record_opened;   /* ToC mode: where to write the files opened at the end, or NULL */
        const Toc *const *lowers;    /* ToC mode: the layers below it in an image, the nearest first: its
                                      * implied directories take their attributes (read during the call) */
        size_t n_lowers;
        bool stacked;                /* ToC mode, instead of lowers: the mounts added before are the
                                      * layers below it, bottom first (--stacked) */
} ImagefsMountRequest;

int imagefs_manager_new(const ImagefsManagerConfig *config, ImagefsManager **ret);
ImagefsManager *imagefs_manager_free(ImagefsManager *m);
static inline void imagefs_manager_freep(ImagefsManager **m) {
        imagefs_manager_free(*m);
}

/* Loads the layer's ToC (ToC mode), verifies it, mounts. Logs its errors. */
int imagefs_manager_add_mount(ImagefsManager *m, const ImagefsMountRequest *request);
/* The same for n layers (command-line mode): their ToCs loaded at once (one relay round trip for all),
 * mounted in order, and their prefetch streams started only when every one is mounted. Stops at the
 * first failure (the mounts made so far stay). */
int imagefs_manager_add_mounts(ImagefsManager *m, const ImagefsMountRequest *requests, size_t n);
/* Until SIGTERM/SIGINT, or until no mount is left (all unmounted from outside); then unmounts all (with
 * a forwarder: ends its sessions, the mounts stay), waiting IMAGEFS_STOP_WAIT_USEC at most. */
int imagefs_manager_run(ImagefsManager *m);
/* Whether a stop left threads busy (imagefs_mount_stop_finish()): the process must end with _exit(),
 * since those threads still use what exit() would tear down. */
bool imagefs_manager_threads_left(const ImagefsManager *m) _pure_;
/* The counters of every mount, one line each, to the stats file (atomically) and the log. */
int imagefs_manager_write_stats(ImagefsManager *m);

/*
 * Daemon mode (org.tonari.ImageFS1, imagefs-bus.c): whole images, each layer mounted once below
 * MountDirectory= and shared by every image that has it, stacked with overlayfs on a target directory.
 * A refused request says why as one of these and a message that quotes what was given.
 */
typedef enum ImagefsFailure {
        IMAGEFS_FAILURE_INVALID_PATH,      /* relative, "..", not normalized, or a character overlayfs splits on */
        IMAGEFS_FAILURE_NO_SUCH_DIRECTORY, /* target, upperdir or workdir missing */
        IMAGEFS_FAILURE_NOT_A_DIRECTORY,
        IMAGEFS_FAILURE_ALREADY_MOUNTED,
        IMAGEFS_FAILURE_NOT_MOUNTED,       /* Unmount of a target that is no mount of ours */
        IMAGEFS_FAILURE_BUSY,              /* Unmount of a target still in use */
        IMAGEFS_FAILURE_NO_SUCH_IMAGE,     /* the relay does not know the image */
        IMAGEFS_FAILURE_RELAY_UNREACHABLE, /* not within ReadTimeoutSec= */
        IMAGEFS_FAILURE_BAD_TOC,           /* corrupt, truncated, or not the digest the image names */
        IMAGEFS_FAILURE_FAILED,            /* anything else: the message says what */
} ImagefsFailure;

typedef struct ImagefsError {
        ImagefsFailure failure;
        char *message; /* malloc'ed; NULL when out of memory */
} ImagefsError;

static inline void imagefs_error_done(ImagefsError *e) {
        free(e->message);
        e->message = NULL;
}

typedef struct ImagefsImageInfo {
        const char *target;
        const char *image;
        const char *upperdir;  /* NULL for MountImage */
        const char *workdir;
        size_t n_layers;
        ImagefsCounters counters; /* the sum over its layers (a layer shared by two images counts in both) */
} ImagefsImageInfo;

/* MountImage (upperdir and workdir NULL: read-only) and MountOverlay. use_toc false: the layers answer
 * every metadata request with a round trip to the relay (the baseline; such layer mounts are not shared
 * with ToC-mode ones). Logs what it did. */
int imagefs_manager_mount_image(ImagefsManager *m, const char *image, const char *target, const char *upperdir,
                                const char *workdir, bool use_toc, ImagefsError *ret_error);
int imagefs_manager_unmount_image(ImagefsManager *m, const char *target, ImagefsError *ret_error);
size_t imagefs_manager_n_images(const ImagefsManager *m) _pure_;
/* Image i (< imagefs_manager_n_images()); pointers valid until the next change. */
void imagefs_manager_image_info(ImagefsManager *m, size_t i, ImagefsImageInfo *ret);

/* Daemon mode with a forwarder: takes over the images of the state file that are still mounted (their
 * layers attached again to the forwarder's mounts, their overlays kept), unmounts the layer mounts none
 * of them uses. After a restart or a crash, before the bus. Logs its errors. */
int imagefs_manager_adopt(ImagefsManager *m);

/* Daemon mode: connects to the bus (address NULL: the system bus), takes org.tonari.ImageFS1. */
int imagefs_manager_connect_bus(ImagefsManager *m, const char *address);
const char *imagefs_manager_relay(const ImagefsManager *m) _pure_;
const char *imagefs_manager_cache_directory(const ImagefsManager *m) _pure_;
uint64_t imagefs_manager_cache_max_bytes(const ImagefsManager *m) _pure_;
uint64_t imagefs_manager_cache_bytes(ImagefsManager *m);
usec_t imagefs_manager_read_timeout_usec(const ImagefsManager *m) _pure_;

/* What this host offers tonari-imagefs, as the Features property: (name, available, detail). */
typedef enum ImagefsFeature {
        IMAGEFS_FEATURE_FUSE,
        IMAGEFS_FEATURE_OVERLAYFS,
        IMAGEFS_FEATURE_FDSTORE,
        IMAGEFS_FEATURE_FORWARDER, /* this process mounts through tonari-imagefs-fd */
        IMAGEFS_FEATURE_RESEND,    /* the kernel resends requests in flight (FUSE_NOTIFY_RESEND, 6.9) */
        _IMAGEFS_FEATURE_MAX,
} ImagefsFeature;
const char *imagefs_feature_to_string(ImagefsFeature f) _const_;
/* detail: a static string, saying for the forwarder and resend what a reader is promised. */
void imagefs_feature_detect(const ImagefsManager *m, ImagefsFeature f, bool *ret_available, const char **ret_detail);
/* The pure part of the forwarder and resend features: forwarder the socket in use (NULL: none),
 * forwarder_runs whether tonari-imagefs-fd's runtime directory exists, release uname(2)'s. */
void imagefs_feature_describe(ImagefsFeature f, const char *forwarder, bool forwarder_runs, const char *release,
                              bool *ret_available, const char **ret_detail);
