/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The image store without the relay, for the shell tests:
 *   imagestore-tool pull STORE SOURCE [NAME] [--plain-http] [--platform=OS/ARCH[/VARIANT]]
 *                                                             prints "layer <diff_id> <toc path>" lines
 *   imagestore-tool toc FILE                                  the ToC as JSON (toc_dump)
 *   imagestore-tool remove STORE NAME
 *   imagestore-tool gc STORE [--dry-run]                      prints the GcStats
 *   imagestore-tool list STORE                                names, one per line
 *   imagestore-tool lookup-rate TOC                           path resolutions per second over every entry
 * Exit status: 0, or the errno of the failure; the error message goes to stderr.
 */
#include <curl/curl.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "imagestore.h"
#include "store.h"
#include "string-util.h"
#include "time-util.h"
#include "toc.h"

static int progress(const PullProgress *p, void *userdata) {
        static const char *const phases[] = { "", "resolving", "fetching", "unpacking", "present", "done" };
        char d[DIGEST_STRING_MAX];

        fprintf(stderr, "pull: %s %s %" PRIu64 "/%" PRIu64 " layers %u/%u\n", phases[p->phase],
                p->layer ? digest_to_string(p->layer, d) : "-", p->layer_done_bytes, p->layer_total_bytes,
                p->layers_done, p->layers_total);
        return 0;
}

static int fail(int r, const char *what, const char *message) {
        fprintf(stderr, "imagestore-tool: %s: %s\n", what, message ?: strerror(-r));
        return -r;
}

int main(int argc, char *argv[]) {
        _cleanup_image_store_ ImageStore *is = NULL;
        _cleanup_free_ char *err = NULL;
        int r;

        if (argc >= 3 && streq(argv[1], "toc")) {
                _cleanup_close_ int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
                _cleanup_toc_ Toc *t = NULL;

                if (fd < 0)
                        return fail(-errno, argv[2], NULL);
                r = toc_open_fd(fd, &t);
                if (r < 0)
                        return fail(r, argv[2], NULL);
                r = toc_dump(t, stdout, true);
                return r < 0 ? fail(r, "dump", NULL) : 0;
        }
        if (argc >= 3 && streq(argv[1], "lookup-rate")) {
                _cleanup_close_ int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
                _cleanup_toc_ Toc *t = NULL;
                _cleanup_free_ char *paths = NULL;
                uint64_t n, resolved = 0, components = 0;
                usec_t start, elapsed;

                if (fd < 0)
                        return fail(-errno, argv[2], NULL);
                r = toc_open_fd(fd, &t);
                if (r < 0)
                        return fail(r, argv[2], NULL);
                n = toc_n_entries(t);
                paths = malloc(n * (TOC_PATH_MAX + 1));
                if (!paths)
                        return fail(-ENOMEM, "paths", NULL);
                for (uint64_t i = 0; i < n; i++)
                        if (toc_path(t, i, paths + i * (TOC_PATH_MAX + 1), TOC_PATH_MAX + 1) < 0)
                                return fail(-EIO, "path", NULL);
                /* Every entry's path, in a scattered order, for at least a second. */
                start = now(CLOCK_MONOTONIC);
                do {
                        for (uint64_t k = 0; k < n; k++) {
                                const char *p = paths + ((k * 2654435761ULL) % n) * (TOC_PATH_MAX + 1);
                                uint64_t ino;

                                if (toc_resolve(t, p, &ino) < 0)
                                        return fail(-EIO, p, "does not resolve");
                                resolved++;
                                components += *p ? 1 : 0;
                                for (const char *c = p; *c; c++)
                                        components += *c == '/';
                        }
                        elapsed = now(CLOCK_MONOTONIC) - start;
                } while (elapsed < USEC_PER_SEC);
                printf("entries %" PRIu64 " resolutions_per_sec %.0f lookups_per_sec %.0f\n", n,
                       (double) resolved * USEC_PER_SEC / (double) elapsed,
                       (double) components * USEC_PER_SEC / (double) elapsed);
                return 0;
        }
        if (argc < 3)
                return fail(-EINVAL, "usage", "pull|toc|remove|gc|list|lookup-rate ...");

        curl_global_init(CURL_GLOBAL_DEFAULT);
        r = image_store_open(argv[2], &is, &err);
        if (r < 0)
                return fail(r, argv[2], err);

        if (streq(argv[1], "pull") && argc >= 4) {
                _cleanup_image_record_ ImageRecord *rec = NULL;
                PullOptions o = { .source = argv[3] };

                _cleanup_free_ char *platform = NULL;
                OciPlatform p = {};

                for (int i = 4; i < argc; i++) {
                        const char *v;

                        if (streq(argv[i], "--plain-http"))
                                o.plain_http = true;
                        else if ((v = startswith(argv[i], "--platform="))) {
                                /* OS/ARCH[/VARIANT] */
                                platform = strdup(v);
                                if (!platform)
                                        return fail(-ENOMEM, "platform", NULL);
                                p.os = platform;
                                p.architecture = strchr(platform, '/');
                                if (!p.architecture)
                                        return fail(-EINVAL, "platform", "expected OS/ARCH[/VARIANT]");
                                *p.architecture++ = 0;
                                p.variant = strchr(p.architecture, '/');
                                if (p.variant)
                                        *p.variant++ = 0;
                                o.platform = &p;
                        } else
                                o.name = argv[i];
                }
                r = image_store_pull(is, &o, progress, NULL, &rec, &err);
                if (r < 0)
                        return fail(r, argv[3], err);
                for (size_t i = 0; i < rec->n_layers; i++) {
                        _cleanup_free_ char *path = NULL;
                        char hex[DIGEST_HEX_LEN + 1];

                        r = store_item_path(STORE_LAYER, &rec->layers[i].diff_id, &path);
                        if (r < 0)
                                return fail(r, "path", NULL);
                        printf("layer %s %s/%s %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 "\n",
                               digest_to_hex(&rec->layers[i].diff_id, hex), argv[2], path, rec->layers[i].size_bytes,
                               rec->layers[i].unpacked_bytes, rec->layers[i].toc_bytes, rec->layers[i].toc_entries);
                }
                printf("name %s\n", rec->name);
        } else if (streq(argv[1], "remove") && argc == 4) {
                r = image_store_remove(is, argv[3], NULL, NULL);
                if (r < 0)
                        return fail(r, argv[3], NULL);
        } else if (streq(argv[1], "gc")) {
                GcStats s;

                r = image_store_gc(is, argc > 3 && streq(argv[3], "--dry-run"), NULL, &s, &err);
                if (r < 0)
                        return fail(r, "gc", err);
                printf("blobs %" PRIu64 " layers %" PRIu64 " objects %" PRIu64 " bytes %" PRIu64 "\n", s.blobs_removed,
                       s.layers_removed, s.objects_removed, s.freed_bytes);
        } else if (streq(argv[1], "list")) {
                ImageRecord **list = NULL;
                size_t n;

                r = image_store_list(is, &list, &n);
                if (r < 0)
                        return fail(r, "list", NULL);
                for (size_t i = 0; i < n; i++)
                        printf("%s\n", list[i]->name);
                image_record_list_free(list, n);
        } else
                return fail(-EINVAL, "usage", "pull|toc|remove|gc|list ...");

        image_store_free(TAKE_PTR(is));
        curl_global_cleanup();
        return 0;
}
