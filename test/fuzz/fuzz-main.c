/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A driver for fuzz targets without libFuzzer: "fuzz-toc-reader FILE|DIR..." feeds every file to
 * the target once (the regression run of a corpus, under the project's normal or ASan build);
 * "fuzz-toc-reader --write-seeds DIR" writes a few valid ToCs made by the writer, the seed corpus
 * of the libFuzzer run. With --expect=valid (or --expect=invalid) every input must also be accepted
 * (refused) by toc_open_buffer() as it is, and every DIR must hold at least one input: a replay
 * whose seeds are all refused tests nothing beyond the first check.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "string-util.h"
#include "toc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef enum Expect {
        EXPECT_ANY,
        EXPECT_VALID,
        EXPECT_INVALID,
} Expect;

static int run_file(const char *path, Expect expect) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r;

        r = read_full_file(path, &data, &size);
        if (r < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(-r));
                return r;
        }
        if (expect != EXPECT_ANY) {
                Toc *t = NULL;

                r = toc_open_buffer(data, size, &t);
                toc_free(t);
                if ((r >= 0) != (expect == EXPECT_VALID)) {
                        fprintf(stderr, "%s: %s, expected it to be %s\n", path,
                                r >= 0 ? "accepted" : strerror(-r), expect == EXPECT_VALID ? "accepted" : "refused");
                        return -EBADMSG;
                }
        }
        LLVMFuzzerTestOneInput((const uint8_t *) data, size);
        return 0;
}

static int write_seed(const char *dir, const char *name, TocWriter *w) {
        _cleanup_free_ char *path = strjoin(dir, "/", name);
        _cleanup_close_ int fd = -EBADF;

        if (!path)
                return -ENOMEM;
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        return toc_writer_finish_fd(w, fd, NULL, NULL);
}

/* A layer as real ones are (ToC 1.1): a "./" entry, directories named by the archive beside ones
 * only implied by deeper names (one of them opaque), UTF-8 names, a hard link, a symlink, a
 * whiteout. */
static int write_seed_implied(const char *dir) {
        _cleanup_(toc_writer_freep) TocWriter *w = NULL;
        int r;

        r = toc_writer_new(TOC_CHUNK_SIZE_MIN, &w);
        if (r < 0)
                return r;
        TocEntrySpec specs[] = {
                { .parent = "", .name = "", .type = TOC_TYPE_DIRECTORY, .mode = 0755, .mtime_sec = 1700000000 },
                { .parent = "usr/share/ca-certificates/mozilla", .name = "NetLock_Arany_=Class_Gold=_Főtanúsítvány.crt",
                  .type = TOC_TYPE_REGULAR, .mode = 0644, .size = 1391 },
                { .parent = "usr/share", .name = "ca-certificates", .type = TOC_TYPE_DIRECTORY, .mode = 0755,
                  .uid = 0, .gid = 0, .mtime_sec = 1700000001 },
                { .parent = "etc/ssl/certs", .name = "NetLock_Arany.pem", .type = TOC_TYPE_SYMLINK, .mode = 0777,
                  .link_target = "/usr/share/ca-certificates/mozilla/NetLock_Arany_=Class_Gold=_Főtanúsítvány.crt" },
                { .parent = "usr/lib/日本語", .name = "同じ", .type = TOC_TYPE_HARDLINK,
                  .link_target = "usr/share/ca-certificates/mozilla/NetLock_Arany_=Class_Gold=_Főtanúsítvány.crt" },
                { .parent = "var/cache/apt", .name = "pkgcache.bin", .type = TOC_TYPE_WHITEOUT },
        };
        for (size_t i = 0; i < ELEMENTSOF(specs); i++) {
                r = toc_writer_add(w, &specs[i]);
                if (r < 0)
                        return r;
        }
        r = toc_writer_set_opaque(w, "var/lib/dpkg");
        if (r < 0)
                return r;
        return write_seed(dir, "seed-implied.toc", w);
}

static int write_seeds(const char *dir) {
        static const uint8_t value[] = { 0, 1, 2, 3 };
        TocXattr x = { .name = "user.seed", .value = value, .size = sizeof(value) };
        Digest chunks[2] = {};
        int r;

        for (int kind = 0; kind < 3; kind++) {
                _cleanup_(toc_writer_freep) TocWriter *w = NULL;
                char name[32];

                r = toc_writer_new(TOC_CHUNK_SIZE_MIN, &w);
                if (r < 0)
                        return r;
                TocEntrySpec specs[] = {
                        { .parent = "usr/bin", .name = "sh", .type = TOC_TYPE_REGULAR, .mode = 0755, .size = 7 },
                        { .parent = "usr/bin", .name = "big", .type = TOC_TYPE_REGULAR, .mode = 04755,
                          .size = 2 * TOC_CHUNK_SIZE_MIN, .content = { .chunks = chunks, .n_chunks = 2 },
                          .xattrs = &x, .n_xattrs = 1 },
                        { .parent = "", .name = "link", .type = TOC_TYPE_SYMLINK, .mode = 0777, .link_target = "usr" },
                        { .parent = "dev", .name = "null", .type = TOC_TYPE_CHAR, .mode = 0666, .rdev_major = 1,
                          .rdev_minor = 3 },
                        { .parent = "etc", .name = "gone", .type = TOC_TYPE_WHITEOUT },
                        { .parent = "", .name = "hard", .type = TOC_TYPE_HARDLINK, .link_target = "usr/bin/big" },
                };
                for (size_t i = 0; i < (size_t) (kind == 0 ? 1 : kind == 1 ? 3 : 6); i++) {
                        r = toc_writer_add(w, &specs[i]);
                        if (r < 0)
                                return r;
                }
                if (kind == 2 && (r = toc_writer_set_opaque(w, "etc")) < 0)
                        return r;
                snprintf(name, sizeof(name), "seed-%d.toc", kind);
                r = write_seed(dir, name, w);
                if (r < 0)
                        return r;
        }
        return write_seed_implied(dir);
}

int main(int argc, char *argv[]) {
        Expect expect = EXPECT_ANY;
        unsigned n = 0;
        int i = 1, r;

        if (argc == 3 && streq(argv[1], "--write-seeds"))
                return write_seeds(argv[2]) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
        if (argc > 1 && startswith(argv[1], "--expect=")) {
                if (streq(argv[1], "--expect=valid"))
                        expect = EXPECT_VALID;
                else if (streq(argv[1], "--expect=invalid"))
                        expect = EXPECT_INVALID;
                else {
                        fprintf(stderr, "%s: expected --expect=valid or --expect=invalid\n", argv[1]);
                        return EXIT_FAILURE;
                }
                i++;
        }

        for (; i < argc; i++) {
                _cleanup_closedir_ DIR *d = opendir(argv[i]);
                struct dirent *de;
                unsigned in_dir = 0;

                if (!d) {
                        r = run_file(argv[i], expect);
                        if (r < 0)
                                return EXIT_FAILURE;
                        n++;
                        continue;
                }
                while ((de = readdir(d))) {
                        _cleanup_free_ char *p = NULL;

                        if (de->d_name[0] == '.')
                                continue;
                        p = strjoin(argv[i], "/", de->d_name);
                        if (!p || run_file(p, expect) < 0)
                                return EXIT_FAILURE;
                        in_dir++;
                }
                if (in_dir == 0 && expect != EXPECT_ANY) {
                        fprintf(stderr, "%s: no inputs\n", argv[i]);
                        return EXIT_FAILURE;
                }
                n += in_dir;
        }
        printf("%u inputs%s, no fault\n", n,
               expect == EXPECT_VALID ? " accepted" : expect == EXPECT_INVALID ? " refused" : "");
        return n > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
