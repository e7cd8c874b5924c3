/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <limits.h>
#include <stdio.h>
#include <syslog.h>

#include "conf-parser.h"
#include "imagefs-fd-protocol.h"
#include "imagefs-manager.h"
#include "log.h"
#include "time-util.h"

/* "unix:/PATH" or "HOST:PORT" (rpc_address_is_valid()). */
#define IMAGEFS_RELAY_ADDRESS_MAX (PATH_MAX + 8)

/*
 * tonari-imagefs.conf(5): every field has a built-in default, documented there and in the shipped
 * tonari-imagefs.conf, where each setting appears commented out with its default.
 */
typedef struct ImagefsConfig {
        int log_level;                          /* [ImageFS] LogLevel= */
        LogTarget log_target;                   /* [ImageFS] LogTarget= */
        char relay[IMAGEFS_RELAY_ADDRESS_MAX];  /* [ImageFS] Relay= */
        char cache_directory[PATH_MAX];         /* [ImageFS] CacheDirectory= */
        uint64_t cache_max_bytes;               /* [ImageFS] CacheMaxBytes= */
        usec_t read_timeout_usec;               /* [ImageFS] ReadTimeoutSec= */
        char mount_directory[PATH_MAX];         /* [ImageFS] MountDirectory=: where the layers are mounted */
        char forwarder[PATH_MAX];               /* [ImageFS] Forwarder=: "auto", "no" or the forwarder's socket */
} ImagefsConfig;

/*
 * Relay=: the socket the relay's unit listens on (tonari-relay(8)), on the same node. CacheDirectory=:
 * what CacheDirectory=tonari-imagefs gives the unit. MountDirectory=: in the unit's RuntimeDirectory, so
 * the layers' mount points go with the service. The others: see imagefs-manager.h.
 */
#define IMAGEFS_CONFIG_DEFAULTS                                                                        \
        ((ImagefsConfig){ .log_level = LOG_INFO,                                                       \
                          .log_target = LOG_TARGET_AUTO,                                               \
                          .relay = "unix:/run/tonari-relay/relay.sock",                                \
                          .cache_directory = "/var/cache/tonari-imagefs",                              \
                          .cache_max_bytes = IMAGEFS_CACHE_MAX_DEFAULT_BYTES,                          \
                          .read_timeout_usec = IMAGEFS_READ_TIMEOUT_DEFAULT_USEC,                      \
                          .mount_directory = "/run/tonari-imagefs",                                    \
                          .forwarder = "auto" })

/* Forwarder=auto: tonari-imagefs-fd's socket, when it exists at start. */
#define IMAGEFS_FORWARDER_AUTO_SOCKET IMAGEFS_FD_SOCKET_DEFAULT
/* Daemon mode with a forwarder: the images mounted, in MountDirectory=. */
#define IMAGEFS_STATE_FILE_NAME "images.state"

/* Loads path and path.d/ *.conf over the defaults; errors are logged (file, line, value). */
int imagefs_config_load(const char *path, ImagefsConfig *ret, char ***ret_files);
void imagefs_config_dump(const ImagefsConfig *c, FILE *f);
