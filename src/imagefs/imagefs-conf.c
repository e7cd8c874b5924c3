/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <string.h>
#include <sys/un.h>

#include "alloc-util.h"
#include "imagefs-conf.h"
#include "path-util.h"
#include "rpc.h"
#include "string-util.h"
#include "strv.h"

static int config_parse_relay(const char *file, unsigned line, const char *section, const char *key,
                              const char *value, void *data) {
        char *relay = data;

        if (!rpc_address_is_valid(value) || strlen(value) >= IMAGEFS_RELAY_ADDRESS_MAX) {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected unix:/absolute/path, "
                                       "HOST:PORT or [IPV6]:PORT.", file, line, key, strna(e));
        }
        strcpy(relay, value);
        return 0;
}

static int config_parse_forwarder(const char *file, unsigned line, const char *section, const char *key,
                                  const char *value, void *data) {
        char *forwarder = data;

        if (!streq(value, "auto") && !streq(value, "no") &&
            (!path_is_normalized_absolute(value) || strlen(value) >= sizeof(((struct sockaddr_un *) NULL)->sun_path))) {
                _cleanup_free_ char *e = cescape(value);
                return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected auto, no, or the absolute "
                                       "path of tonari-imagefs-fd's socket.", file, line, key, strna(e));
        }
        strcpy(forwarder, value);
        return 0;
}

static const ConfigItem imagefs_config_table[] = {
        CONFIG_ITEM("ImageFS", "LogLevel", config_parse_log_level, ImagefsConfig, log_level),
        CONFIG_ITEM("ImageFS", "LogTarget", config_parse_log_target, ImagefsConfig, log_target),
        CONFIG_ITEM("ImageFS", "Relay", config_parse_relay, ImagefsConfig, relay),
        CONFIG_ITEM("ImageFS", "CacheDirectory", config_parse_path, ImagefsConfig, cache_directory),
        CONFIG_ITEM("ImageFS", "CacheMaxBytes", config_parse_size, ImagefsConfig, cache_max_bytes),
        CONFIG_ITEM("ImageFS", "ReadTimeoutSec", config_parse_sec, ImagefsConfig, read_timeout_usec),
        CONFIG_ITEM("ImageFS", "MountDirectory", config_parse_path, ImagefsConfig, mount_directory),
        CONFIG_ITEM("ImageFS", "Forwarder", config_parse_forwarder, ImagefsConfig, forwarder),
        {},
};

int imagefs_config_load(const char *path, ImagefsConfig *ret, char ***ret_files) {
        const ImagefsConfig defaults = IMAGEFS_CONFIG_DEFAULTS;
        _cleanup_strv_free_ char **files = NULL;
        ImagefsConfig c = defaults;
        int r;

        r = config_parse(path, imagefs_config_table, &c, &defaults, &files);
        if (r < 0)
                return r;
        /* A read that waits for the relay holds a FUSE thread and a reader: a day is beyond any outage
         * worth waiting for, and below it a timeout of 0 would fail every read. */
        if (c.read_timeout_usec == 0 || c.read_timeout_usec > USEC_PER_DAY)
                return log_error_errno(EINVAL, "%s: [ImageFS] ReadTimeoutSec=%" PRIu64 "us: expected 1us to 1d.", path,
                                       c.read_timeout_usec);
        if (path_equal_or_below(c.mount_directory, c.cache_directory) ||
            path_equal_or_below(c.cache_directory, c.mount_directory))
                return log_error_errno(EINVAL, "%s: [ImageFS] MountDirectory=%s and CacheDirectory=%s must not "
                                       "contain each other.", path, c.mount_directory, c.cache_directory);

        *ret = c;
        if (ret_files)
                *ret_files = TAKE_PTR(files);
        return 0;
}

void imagefs_config_dump(const ImagefsConfig *c, FILE *f) {
        fprintf(f,
                "[ImageFS]\n"
                "LogLevel=%s\n"
                "LogTarget=%s\n"
                "Relay=%s\n"
                "CacheDirectory=%s\n"
                "CacheMaxBytes=%" PRIu64 "\n"
                "ReadTimeoutSec=%" PRIu64 "us\n"
                "MountDirectory=%s\n"
                "Forwarder=%s\n",
                log_level_to_string(c->log_level), log_target_to_string(c->log_target), c->relay,
                c->cache_directory, c->cache_max_bytes, c->read_timeout_usec, c->mount_directory, c->forwarder);
}
