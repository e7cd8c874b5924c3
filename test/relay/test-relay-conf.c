/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <unistd.h>

#include "../unit/tests.h"
#include "alloc-util.h"
#include "fileio.h"
#include "relay-conf.h"
#include "string-util.h"
#include "strv.h"

static char *put(const char *content) {
        char *p = strjoin(test_tmpdir(), "/tonari-relay.conf");
        FILE *f;

        ck_assert_ptr_nonnull(p);
        f = fopen(p, "we");
        ck_assert_ptr_nonnull(f);
        fputs(content, f);
        fclose(f);
        return p;
}

START_TEST(test_relay_defaults) {
        _cleanup_free_ char *path = strjoin(test_tmpdir(), "/none.conf");
        RelayConfig c;

        ck_assert_int_eq(relay_config_load(path, &c, NULL), 0);
        ck_assert_str_eq(c.store, "/var/lib/tonari-relay");
        ck_assert_uint_eq(c.listen.n, 1);
        ck_assert_str_eq(c.listen.items[0], "unix:/run/tonari-relay/relay.sock");
        ck_assert_uint_eq(c.socket_mode, 0660);
        ck_assert_uint_eq(c.threads, 4);
        ck_assert_uint_eq(c.blocking_threads, 256);
        ck_assert_uint_eq(c.max_message_bytes, 16U * 1024U * 1024U);
        ck_assert_uint_eq(c.toc_memory_max, 256U * 1024U * 1024U);
        ck_assert_uint_eq(c.insecure.n, 0);
        ck_assert_str_eq(c.ca_file, "");
        ck_assert(!relay_config_insecure(&c, "127.0.0.1:5000"));
}
END_TEST

START_TEST(test_relay_settings) {
        _cleanup_free_ char *path = put("[Relay]\nStore=/srv/relay\nListen=unix:/run/r.sock 127.0.0.1:7000\n"
                                        "Listen=[::1]:7001\nSocketMode=0600\nThreads=8\nBlockingThreads=16\nMaxMessageSize=32M\n"
                                        "ToCMemoryMax=64M\n"
                                        "[Pull]\nInsecureRegistries=127.0.0.1:5000 registry.local\nCAFile=/etc/ca.pem\n");
        _cleanup_free_ char *dump = NULL;
        size_t size;
        RelayConfig c;
        FILE *f;

        ck_assert_int_eq(relay_config_load(path, &c, NULL), 0);
        ck_assert_str_eq(c.store, "/srv/relay");
        ck_assert_uint_eq(c.listen.n, 3);
        ck_assert_str_eq(c.listen.items[1], "127.0.0.1:7000");
        ck_assert_str_eq(c.listen.items[2], "[::1]:7001");
        ck_assert_uint_eq(c.socket_mode, 0600);
        ck_assert_uint_eq(c.threads, 8);
        ck_assert_uint_eq(c.blocking_threads, 16);
        ck_assert_uint_eq(c.max_message_bytes, 32U * 1024U * 1024U);
        ck_assert_uint_eq(c.toc_memory_max, 64U * 1024U * 1024U);
        ck_assert(relay_config_insecure(&c, "127.0.0.1:5000"));
        ck_assert(relay_config_insecure(&c, "registry.local"));
        ck_assert(!relay_config_insecure(&c, "127.0.0.1:5001"));
        ck_assert_str_eq(c.ca_file, "/etc/ca.pem");

        f = open_memstream(&dump, &size);
        relay_config_dump(&c, f);
        fclose(f);
        ck_assert_msg(strstr(dump, "Listen=unix:/run/r.sock 127.0.0.1:7000 [::1]:7001\n") &&
                      strstr(dump, "MaxMessageSize=33554432\n") && strstr(dump, "SocketMode=0600\n"), "%s", dump);

        /* What the dump says loads back to the same settings. */
        _cleanup_free_ char *again = put(dump);
        RelayConfig d;
        ck_assert_int_eq(relay_config_load(again, &d, NULL), 0);
        ck_assert_str_eq(d.store, c.store);
        ck_assert_uint_eq(d.listen.n, c.listen.n);
        for (size_t i = 0; i < c.listen.n; i++)
                ck_assert_str_eq(d.listen.items[i], c.listen.items[i]);
        ck_assert_uint_eq(d.insecure.n, c.insecure.n);
        ck_assert_uint_eq(d.socket_mode, c.socket_mode);
        ck_assert_uint_eq(d.threads, c.threads);
        ck_assert_uint_eq(d.blocking_threads, c.blocking_threads);
        ck_assert_uint_eq(d.max_message_bytes, c.max_message_bytes);
        ck_assert_uint_eq(d.toc_memory_max, c.toc_memory_max);
        ck_assert_int_eq(d.log_level, c.log_level);
        ck_assert_str_eq(d.ca_file, c.ca_file);
}
END_TEST

START_TEST(test_relay_bad_values) {
        static const char *const bad[] = {
                "[Relay]\nListen=/run/no-scheme.sock\n",
                "[Relay]\nListen=unix:relative.sock\n",
                "[Relay]\nListen=host:0\n",
                "[Relay]\nListen=host:99999\n",
                "[Relay]\nListen=:7000\n",
                "[Relay]\nListen=[::1:7000\n",
                "[Relay]\nSocketMode=0999\n",
                "[Relay]\nSocketMode=rw\n",
                "[Relay]\nThreads=0\n",
                "[Relay]\nThreads=1000\n",
                "[Relay]\nBlockingThreads=0\n",
                "[Relay]\nBlockingThreads=5000\n",
                "[Relay]\nMaxMessageSize=1M\n",
                "[Relay]\nToCMemoryMax=64K\n",
                "[Relay]\nStore=relative\n",
                "[Pull]\nInsecureRegistries=http://x\n",
                "[Pull]\nInsecureRegistries=host/path\n",
        };
        FOREACH_ELEMENT(b, bad) {
                _cleanup_free_ char *path = put(*b);
                RelayConfig c;

                ck_assert_msg(relay_config_load(path, &c, NULL) == -EINVAL, "accepted: %s", *b);
        }
}
END_TEST

/* The shipped file shows every setting with its default, commented out: uncommented, it changes
 * nothing. */
START_TEST(test_relay_shipped_file) {
        _cleanup_free_ char *text = NULL, *uncommented = NULL, *path = NULL;
        const char *shipped = getenv("SHIPPED_RELAY_CONF");
        const RelayConfig defaults = RELAY_CONFIG_DEFAULTS;
        size_t size, n = 0, settings = 0;
        RelayConfig c;

        ck_assert_msg(shipped, "$SHIPPED_RELAY_CONF is not set");
        ck_assert_int_eq(read_full_file(shipped, &text, &size), 0);
        uncommented = malloc(size + 1);
        ck_assert_ptr_nonnull(uncommented);
        for (const char *line = text; *line;) {
                size_t len = strcspn(line, "\n");

                /* "#Key=value" lines become settings; the prose comments ("#  ...") stay. */
                if (line[0] == '#' && line[1] >= 'A' && line[1] <= 'Z') {
                        line++;
                        len--;
                        settings++;
                }
                memcpy(uncommented + n, line, len);
                n += len;
                line += len;
                if (*line == '\n') {
                        uncommented[n++] = '\n';
                        line++;
                }
        }
        uncommented[n] = 0;
        ck_assert_uint_eq(settings, 11);
        path = put(uncommented);
        ck_assert_int_eq(relay_config_load(path, &c, NULL), 0);
        ck_assert_str_eq(c.store, defaults.store);
        ck_assert_uint_eq(c.listen.n, 1);
        ck_assert_str_eq(c.listen.items[0], defaults.listen.items[0]);
        ck_assert_uint_eq(c.socket_mode, defaults.socket_mode);
        ck_assert_uint_eq(c.threads, defaults.threads);
        ck_assert_uint_eq(c.blocking_threads, defaults.blocking_threads);
        ck_assert_uint_eq(c.max_message_bytes, defaults.max_message_bytes);
        ck_assert_uint_eq(c.toc_memory_max, defaults.toc_memory_max);
        ck_assert_int_eq(c.log_level, defaults.log_level);
        ck_assert_int_eq(c.log_target, defaults.log_target);
        ck_assert_uint_eq(c.insecure.n, 0);
        ck_assert_str_eq(c.ca_file, "");
}
END_TEST

TEST_SUITE("relay-conf", test_relay_defaults, test_relay_settings, test_relay_bad_values, test_relay_shipped_file)
