/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>

#include "alloc-util.h"
#include "conf-parser.h"
#include "oci-util.h"
#include "parse-util.h"
#include "path-util.h"
#include "relay-conf.h"
#include "rpc.h"
#include "string-util.h"
#include "strv.h"

static bool registry_host_is_valid(const char *h) {
        /* The host part of an image reference: validated by the reference parser itself. */
        _cleanup_(image_reference_freep) ImageReference *r = NULL;
        _cleanup_free_ char *ref = strjoin("docker://", h, "/x");

        return ref && image_reference_parse(ref, &r) >= 0 && streq(r->host, h);
}

static int parse_listen_address(const char *word, void *ret) {
        if (!rpc_address_is_valid(word) || strlen(word) >= RELAY_ADDRESS_MAX)
                return -EINVAL;
        strcpy(ret, word);
        return 0;
}

static int parse_registry_host(const char *word, void *ret) {
        if (!registry_host_is_valid(word) || strlen(word) >= RELAY_ADDRESS_MAX)
                return -EINVAL;
        strcpy(ret, word);
        return 0;
}

static int config_parse_listen(const char *file, unsigned line, const char *section, const char *key,
                               const char *value, void *data) {
        RelayAddressList *l = data;

        return config_parse_word_list(file, line, key, value, l->items, &l->n, RELAY_LIST_MAX, RELAY_ADDRESS_MAX,
                                      parse_listen_address,
                                      "expected unix:/absolute/path, HOST:PORT or [IPV6]:PORT");
}

static int config_parse_registries(const char *file, unsigned line, const char *section, const char *key,
                                   const char *value, void *data) {
        RelayAddressList *l = data;

        return config_parse_word_list(file, line, key, value, l->items, &l->n, RELAY_LIST_MAX, RELAY_ADDRESS_MAX,
                                      parse_registry_host, "expected a registry host such as 127.0.0.1:5000");
}

static const ConfigItem relay_config_table[] = {
        CONFIG_ITEM("Relay", "LogLevel", config_parse_log_level, RelayConfig, log_level),
        CONFIG_ITEM("Relay", "LogTarget", config_parse_log_target, RelayConfig, log_target),
        CONFIG_ITEM("Relay", "Store", config_parse_path, RelayConfig, store),
        CONFIG_ITEM("Relay", "Listen", config_parse_listen, RelayConfig, listen),
        CONFIG_ITEM("Relay", "SocketMode", config_parse_mode, RelayConfig, socket_mode),
        CONFIG_ITEM("Relay", "Threads", config_parse_unsigned, RelayConfig, threads),
        CONFIG_ITEM("Relay", "BlockingThreads", config_parse_unsigned, RelayConfig, blocking_threads),
        CONFIG_ITEM("Relay", "MaxMessageSize", config_parse_size, RelayConfig, max_message_bytes),
        CONFIG_ITEM("Relay", "ToCMemoryMax", config_parse_size, RelayConfig, toc_memory_max),
        CONFIG_ITEM("Pull", "InsecureRegistries", config_parse_registries, RelayConfig, insecure),
        CONFIG_ITEM("Pull", "CAFile", config_parse_path, RelayConfig, ca_file),
        {},
};

int relay_config_load(const char *path, RelayConfig *ret, char ***ret_files) {
        const RelayConfig defaults = RELAY_CONFIG_DEFAULTS;
        _cleanup_strv_free_ char **files = NULL;
        RelayConfig c = defaults;
        int r;

        /* Listen= adds to the list like InsecureRegistries=; the default socket is only used when
         * no file names any. */
        c.listen.n = 0;
        r = config_parse(path, relay_config_table, &c, &defaults, &files);
        if (r < 0)
                return r;
        if (c.listen.n == 0)
                c.listen = defaults.listen;
        if (c.threads > 256)
                return log_error_errno(EINVAL, "%s: [Relay] Threads=%u: expected 1 to 256.", path, c.threads);
        if (c.blocking_threads > 4096)
                return log_error_errno(EINVAL, "%s: [Relay] BlockingThreads=%u: expected 1 to 4096.", path,
                                       c.blocking_threads);
        if (c.max_message_bytes < 2U * 1024U * 1024U || c.max_message_bytes > 1024U * 1024U * 1024U)
                return log_error_errno(EINVAL,
                                       "%s: [Relay] MaxMessageSize=%" PRIu64 ": expected 2M (a 1 MiB piece and its "
                                       "framing) to 1G.",
                                       path, c.max_message_bytes);
        if (c.toc_memory_max < 1024U * 1024U)
                return log_error_errno(EINVAL, "%s: [Relay] ToCMemoryMax=%" PRIu64 ": expected at least 1M.", path,
                                       c.toc_memory_max);

        *ret = c;
        if (ret_files)
                *ret_files = TAKE_PTR(files);
        return 0;
}

void relay_config_dump(const RelayConfig *c, FILE *f) {
        fprintf(f,
                "[Relay]\n"
                "LogLevel=%s\n"
                "LogTarget=%s\n"
                "Store=%s\n"
                "Listen=",
                log_level_to_string(c->log_level), log_target_to_string(c->log_target), c->store);
        for (size_t i = 0; i < c->listen.n; i++)
                fprintf(f, "%s%s", i > 0 ? " " : "", c->listen.items[i]);
        fprintf(f,
                "\nSocketMode=%04o\n"
                "Threads=%u\n"
                "BlockingThreads=%u\n"
                "MaxMessageSize=%" PRIu64 "\n"
                "ToCMemoryMax=%" PRIu64 "\n"
                "\n"
                "[Pull]\n"
                "InsecureRegistries=",
                c->socket_mode, c->threads, c->blocking_threads, c->max_message_bytes, c->toc_memory_max);
        for (size_t i = 0; i < c->insecure.n; i++)
                fprintf(f, "%s%s", i > 0 ? " " : "", c->insecure.items[i]);
        fprintf(f, "\nCAFile=%s\n", c->ca_file);
}

bool relay_config_insecure(const RelayConfig *c, const char *host) {
        for (size_t i = 0; i < c->insecure.n; i++)
                if (streq(c->insecure.items[i], host))
                        return true;
        return false;
}
