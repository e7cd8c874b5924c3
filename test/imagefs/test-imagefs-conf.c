/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <unistd.h>

#include "../unit/tests.h"
#include "alloc-util.h"
#include "imagefs-conf.h"
#include "fileio.h"
#include "string-util.h"

static char *put(const char *name, const char *content) {
        char *p = strjoin(test_tmpdir(), "/", name);
        FILE *f;

        ck_assert_ptr_nonnull(p);
        f = fopen(p, "we");
        ck_assert_ptr_nonnull(f);
        fputs(content, f);
        fclose(f);
        return p;
}

START_TEST(test_imagefs_conf_defaults) {
        _cleanup_free_ char *path = strjoin(test_tmpdir(), "/none.conf");
        ImagefsConfig c;

        ck_assert_int_eq(imagefs_config_load(path, &c, NULL), 0);
        ck_assert_str_eq(c.relay, "unix:/run/tonari-relay/relay.sock");
        ck_assert_str_eq(c.cache_directory, "/var/cache/tonari-imagefs");
        ck_assert_str_eq(c.mount_directory, "/run/tonari-imagefs");
        ck_assert_str_eq(c.forwarder, "auto");
        ck_assert_uint_eq(c.cache_max_bytes, 10ULL * 1024 * 1024 * 1024);
        ck_assert_uint_eq(c.read_timeout_usec, 30 * USEC_PER_SEC);
}
END_TEST

START_TEST(test_imagefs_conf_settings_and_dropins) {
        _cleanup_free_ char *path = put("imagefs.conf", "[ImageFS]\nRelay=10.0.0.1:7000\nCacheDirectory=/srv/cache\n"
                                                         "CacheMaxBytes=2G\nReadTimeoutSec=5s\nMountDirectory=/run/x\n"
                                                         "Forwarder=/run/fd/fd.sock\n");
        _cleanup_free_ char *dir = strjoin(path, ".d"), *drop = NULL, *dump = NULL;
        size_t size;
        ImagefsConfig c, d;
        FILE *f;

        ck_assert_int_eq(mkdir(dir, 0755), 0);
        drop = put("imagefs.conf.d/50-relay.conf", "[ImageFS]\nRelay=unix:/run/other.sock\nReadTimeoutSec=\n");
        ck_assert_int_eq(imagefs_config_load(path, &c, NULL), 0);
        ck_assert_str_eq(c.relay, "unix:/run/other.sock");
        ck_assert_str_eq(c.cache_directory, "/srv/cache");
        ck_assert_str_eq(c.forwarder, "/run/fd/fd.sock");
        ck_assert_uint_eq(c.cache_max_bytes, 2ULL * 1024 * 1024 * 1024);
        /* Reset to the default by the drop-in's empty assignment. */
        ck_assert_uint_eq(c.read_timeout_usec, 30 * USEC_PER_SEC);
        ck_assert_str_eq(c.mount_directory, "/run/x");

        f = open_memstream(&dump, &size);
        imagefs_config_dump(&c, f);
        fclose(f);
        ck_assert_int_eq(unlink(drop), 0);
        free(path);
        path = put("imagefs.conf", dump);
        ck_assert_int_eq(imagefs_config_load(path, &d, NULL), 0);
        ck_assert_str_eq(d.relay, c.relay);
        ck_assert_uint_eq(d.read_timeout_usec, c.read_timeout_usec);
        ck_assert_uint_eq(d.cache_max_bytes, c.cache_max_bytes);
        ck_assert_str_eq(d.mount_directory, c.mount_directory);
        ck_assert_str_eq(d.forwarder, c.forwarder);
        (void) rmdir(dir);
}
END_TEST

START_TEST(test_imagefs_conf_refused) {
        static const char *const bad[] = {
                "[ImageFS]\nRelay=relay.sock\n",
                "[ImageFS]\nRelay=unix:relative.sock\n",
                "[ImageFS]\nRelay=unix:/run/../x.sock\n",
                "[ImageFS]\nRelay=host:0\n",
                "[ImageFS]\nCacheDirectory=cache\n",
                "[ImageFS]\nCacheMaxBytes=lots\n",
                "[ImageFS]\nReadTimeoutSec=0\n",
                "[ImageFS]\nReadTimeoutSec=2d\n",
                "[ImageFS]\nMountDirectory=/var/cache/tonari-imagefs/m\n",
                "[ImageFS]\nForwarder=fd.sock\n",
                "[ImageFS]\nForwarder=/run/../fd.sock\n",
                "[ImageFS]\nForwarder=yes\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_free_ char *path = put("bad.conf", bad[i]);
                ImagefsConfig c;

                ck_assert_msg(imagefs_config_load(path, &c, NULL) == -EINVAL, "accepted: %s", bad[i]);
        }
}
END_TEST

/* The shipped file shows every setting with its default, commented out: uncommented, it loads to the
 * built-in defaults. */
START_TEST(test_imagefs_conf_shipped_file) {
        const ImagefsConfig defaults = IMAGEFS_CONFIG_DEFAULTS;
        const char *shipped = getenv("SHIPPED_IMAGEFS_CONF");
        _cleanup_free_ char *text = NULL, *uncommented = NULL, *path = NULL;
        unsigned settings = 0;
        size_t size, n = 0;
        ImagefsConfig c;

        ck_assert_msg(shipped, "$SHIPPED_IMAGEFS_CONF is not set");
        ck_assert_int_eq(read_full_file(shipped, &text, &size), 0);
        uncommented = malloc(size + 1);
        ck_assert_ptr_nonnull(uncommented);
        for (const char *line = text; *line;) {
                size_t len = strcspn(line, "\n");
                if (line[0] == '#' && len > 1 && line[1] != ' ' && strchr(line, '=') < line + len) {
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
        ck_assert_uint_eq(settings, 8);
        path = put("shipped.conf", uncommented);
        ck_assert_int_eq(imagefs_config_load(path, &c, NULL), 0);
        ck_assert_int_eq(memcmp(&c, &defaults, sizeof(c)), 0);
}
END_TEST

TEST_SUITE("imagefs-conf", test_imagefs_conf_defaults, test_imagefs_conf_settings_and_dropins, test_imagefs_conf_refused,
           test_imagefs_conf_shipped_file)
