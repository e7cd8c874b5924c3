/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <limits.h>
#include <stdio.h>
#include <syslog.h>

#include "conf-parser.h"
#include "log.h"

/* Listen= and InsecureRegistries= hold short lists; addresses are "unix:PATH" or "HOST:PORT". */
#define RELAY_LIST_MAX 16
#define RELAY_ADDRESS_MAX (PATH_MAX + 8)

typedef struct RelayAddressList {
        size_t n;
        char items[RELAY_LIST_MAX][RELAY_ADDRESS_MAX];
} RelayAddressList;

/*
 * tonari-relay.conf: every field has a built-in default, documented in tonari-relay(8) and in the
 * shipped tonari-relay.conf, where each setting appears commented out with its default.
 */
typedef struct RelayConfig {
        int log_level;                     /* [Relay] LogLevel= */
        LogTarget log_target;              /* [Relay] LogTarget= */
        char store[PATH_MAX];              /* [Relay] Store= */
        RelayAddressList listen;           /* [Relay] Listen= */
        unsigned socket_mode;              /* [Relay] SocketMode=, for unix: listeners */
        unsigned threads;                  /* [Relay] Threads= */
        unsigned blocking_threads;         /* [Relay] BlockingThreads= */
        uint64_t max_message_bytes;        /* [Relay] MaxMessageSize= */
        uint64_t toc_memory_max;           /* [Relay] ToCMemoryMax=, bytes */
        RelayAddressList insecure;         /* [Pull] InsecureRegistries= */
        char ca_file[PATH_MAX];            /* [Pull] CAFile=, empty: the system's */
} RelayConfig;

/*
 * Store=/var/lib/tonari-relay: what StateDirectory=tonari-relay gives the unit. Listen: a unix
 * socket in the unit's RuntimeDirectory; TCP only when the operator opens it (the protocol has
 * no authentication: see tonari-relay(8), SECURITY). SocketMode=0660: the socket's group (root's)
 * reaches it, nobody else. Threads=4: calls that block on disk or on a registry run on their own
 * threads anyway (see src/rpc); these serve the short ones. BlockingThreads=256: pulls, reads and
 * ToC transfers at once; that many keep any disk's queue full. MaxMessageSize=16M: ToC and Read
 * pieces are at most 1 MiB; 16 MiB leaves room for an image list of thousands of images.
 * ToCMemoryMax=256M: ToCs the calls without ToC answer from are held in memory, verified; a large
 * Debian layer's is ~15 MB, so this holds the working set of a few dozen images, and it is what
 * the relay's memory may grow by for ToCs whatever its clients ask (GetToC streams the file).
 */
#define RELAY_CONFIG_DEFAULTS                                                                          \
        ((RelayConfig){ .log_level = LOG_INFO,                                                         \
                        .log_target = LOG_TARGET_AUTO,                                                 \
                        .store = "/var/lib/tonari-relay",                                              \
                        .listen = { .n = 1, .items = { "unix:/run/tonari-relay/relay.sock" } },        \
                        .socket_mode = 0660,                                                           \
                        .threads = 4,                                                                  \
                        .blocking_threads = 256,                                                       \
                        .max_message_bytes = 16U * 1024U * 1024U,                                      \
                        .toc_memory_max = 256U * 1024U * 1024U })

int relay_config_load(const char *path, RelayConfig *ret, char ***ret_files);
void relay_config_dump(const RelayConfig *c, FILE *f);
/* Whether the registry host may be pulled over plain HTTP. */
bool relay_config_insecure(const RelayConfig *c, const char *host);
