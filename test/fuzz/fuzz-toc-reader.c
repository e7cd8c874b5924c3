/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz target for the ToC reader: whatever the input, toc_open_buffer() either refuses it or
 * returns a ToC whose every entry, child, lookup, path, xattr and chunk can be read without a fault
 * (the reader's promise to tonari-imagefs, which serves a relay's ToC to the kernel); and when the
 * bytes change after they were validated, every accessor still stays within them and ends.
 *
 * Built by libFuzzer (test/fuzz/run-fuzz-toc-reader) and, for regression runs, with fuzz-main.c.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "toc-format.h"
#include "toc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const uint8_t *data, size_t size) {
        char path[TOC_PATH_MAX + 1];
        volatile uint64_t sink = 0;
        Toc *t = NULL;

        if (toc_open_buffer(data, size, &t) < 0)
                return;

        for (uint64_t i = 0; i < toc_n_entries(t); i++) {
                TocEntry e;
                uint64_t found;

                if (toc_get(t, i, &e) < 0)
                        abort();
                if (toc_path(t, i, path, sizeof(path)) >= 0 && toc_resolve(t, path, &found) >= 0)
                        sink += found;
                if (i > 0 && (toc_lookup(t, e.parent, e.name, e.name_len, &found) < 0 || found != i))
                        abort(); /* every entry is found under its own name in its parent */
                for (uint32_t k = 0; e.type == TOC_TYPE_DIRECTORY && k < e.n_children; k++) {
                        TocEntry c;

                        if (toc_child(t, &e, k, &c) < 0 || c.parent != i)
                                abort();
                }
                for (uint32_t k = 0; k < e.n_xattrs; k++) {
                        TocXattrView x;

                        if (toc_xattr(t, &e, k, &x) < 0)
                                abort();
                        sink += x.name_len + x.size + (x.size ? x.value[x.size - 1] : 0) + (uint8_t) x.name[0];
                }
                for (uint32_t k = 0; k < e.n_chunks; k++) {
                        Digest d;

                        if (toc_chunk(t, &e, k, &d) < 0)
                                abort();
                        sink += d.bytes[31];
                }
                if (e.type == TOC_TYPE_REGULAR)
                        sink += e.digest[31];
                if (e.target_len > 0)
                        sink += (uint8_t) e.target[e.target_len - 1];
                sink += e.name_len ? (uint8_t) e.name[e.name_len - 1] : 0;
        }
        toc_free(t);
}

/* Validated, then changed: accessors may refuse (-EBADMSG) but never read outside or loop. */
static void walk_damaged(uint8_t *data, size_t size) {
        char path[TOC_PATH_MAX + 1];
        volatile uint64_t sink = 0;
        Toc *t = NULL;

        if (toc_open_buffer(data, size, &t) < 0)
                return;
        /* Eight bytes past the header, chosen by the input itself. */
        for (size_t k = 0; k < 8 && size > TOC_HEADER_SIZE_V1; k++) {
                size_t at = TOC_HEADER_SIZE_V1 + (data[k] * 131u + k * 977u) % (size - TOC_HEADER_SIZE_V1);

                data[at] ^= (uint8_t) (0x80 >> k) | data[size - 1 - k];
        }
        for (uint64_t i = 0; i < toc_n_entries(t); i++) {
                TocEntry e;
                uint64_t found;

                if (toc_get(t, i, &e) < 0)
                        continue;
                if (toc_path(t, i, path, sizeof(path)) >= 0 && toc_resolve(t, path, &found) >= 0)
                        sink += found;
                (void) toc_lookup(t, i, "x", 1, &found);
                for (uint32_t k = 0; e.type == TOC_TYPE_DIRECTORY && k < e.n_children && k < 4096; k++) {
                        TocEntry c;

                        if (toc_child(t, &e, k, &c) < 0)
                                break;
                        sink += c.name_len ? (uint8_t) c.name[c.name_len - 1] : 0;
                }
                for (uint32_t k = 0; k < e.n_xattrs && k < 4096; k++) {
                        TocXattrView x;

                        if (toc_xattr(t, &e, k, &x) < 0)
                                break;
                        sink += x.name_len + x.size + (x.size ? x.value[x.size - 1] : 0) + (uint8_t) x.name[0];
                }
                for (uint32_t k = 0; k < e.n_chunks && k < 4096; k++) {
                        Digest d;

                        if (toc_chunk(t, &e, k, &d) < 0)
                                break;
                        sink += d.bytes[31];
                }
                if (e.type == TOC_TYPE_REGULAR)
                        sink += e.digest[31];
                if (e.target_len > 0)
                        sink += (uint8_t) e.target[e.target_len - 1];
        }
        toc_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        uint8_t *copy;
        Digest d;

        /* As given: the checksum refuses nearly everything. */
        walk(data, size);

        /* With the checksum made right, so that mutations reach the structural checks behind it. */
        if (size < TOC_CHECKSUMMED_FROM || !(copy = malloc(size)))
                return 0;
        memcpy(copy, data, size);
        if (digest_buffer(copy + TOC_CHECKSUMMED_FROM, size - TOC_CHECKSUMMED_FROM, &d) >= 0) {
                memcpy(copy + TOC_OFF_CHECKSUM, d.bytes, DIGEST_SIZE);
                walk(copy, size);
                walk_damaged(copy, size);
        }
        free(copy);
        return 0;
}
