/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * tonari-imagefs-fd, the forwarder: the small long-lived process that owns the /dev/fuse connections
 * of tonari-imagefs's mounts, so that the worker (tonari-imagefs: ToCs, cache, relay) can be restarted
 * or killed at any time without a reader seeing an error or hanging (docs/ARCHITECTURE.md, "Restart
 * survival"; the protocol: imagefs-fd-protocol.h).
 *
 * It mounts on a worker's request, reads every request from /dev/fuse, keeps it by its unique id until
 * the answer came back, and passes it to the worker attached to that mount. When the worker goes away
 * (exit, crash, kill -9) the unanswered requests stay; the next worker that attaches gets the FUSE_INIT
 * the kernel sent once (its answer is dropped: the kernel got one already) and then every unanswered
 * request again, in order. Under systemd the /dev/fuse fds also go to the fd store, with a state file
 * per mount under the state directory, so that a restarted forwarder takes its mounts back.
 */

#include "time-util.h"

typedef struct Forwarder Forwarder;

typedef struct ForwarderConfig {
        const char *socket_path;     /* where workers connect */
        const char *state_directory; /* one file per mount, to take mounts back from the fd store */
        usec_t worker_timeout_usec;  /* no worker this long: requests fail with EIO; 0: they wait */
} ForwarderConfig;

/* --worker-timeout=: as long as tonari-imagefs's ReadTimeoutSec= default; a restart takes well under
 * a second, so only a worker that cannot start (no relay for its ToCs, a crash loop) reaches it. */
#define FORWARDER_WORKER_TIMEOUT_DEFAULT_USEC (30 * USEC_PER_SEC)

int forwarder_new(const ForwarderConfig *config, Forwarder **ret);
Forwarder *forwarder_free(Forwarder *f);
static inline void forwarder_freep(Forwarder **f) {
        forwarder_free(*f);
}
/* Until SIGTERM/SIGINT. Mounts outlive it when their fds are in systemd's fd store; without systemd
 * they are detached (lazily unmounted) on exit, since nothing could serve them. */
int forwarder_run(Forwarder *f);
