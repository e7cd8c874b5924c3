/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "migrate.h"
#include "proc-util.h"

#define PAGEMAP_PRESENT (UINT64_C(1) << 63)
#define PAGEMAP_PFN_MASK ((UINT64_C(1) << 55) - 1)
/* Entries read from pagemap per read(), and pages asked per move_pages() query. */
#define PAGEMAP_CHUNK 4096
#define QUERY_CHUNK 16384

static bool node_in(const uint8_t *mask, size_t size, int node) {
        if (node < 0 || (size_t) node / 8 >= size)
                return false;
        return mask[node / 8] & (1U << (node % 8));
}

void migrate_scan_done(MigrateScan *s) {
        if (!s)
                return;
        free(s->pids);
        free(s->pages);
        *s = (MigrateScan) {};
}

static int add_page(MigrateScan *s, size_t *allocated, uint64_t vaddr, uint64_t pfn, uint32_t proc) {
        if (s->n_pages == *allocated) {
                size_t k = MAX((size_t) 4096, *allocated * 2);
                MigratePage *a = reallocarray(s->pages, k, sizeof(MigratePage));
                if (!a)
                        return -ENOMEM;
                s->pages = a;
                *allocated = k;
        }
        s->pages[s->n_pages++] = (MigratePage) { .vaddr = vaddr, .pfn = pfn, .proc = proc };
        return 0;
}

/* The present pages of one process; -ESRCH/-ENOENT when it is gone. */
static int scan_one(const char *proc, pid_t pid, uint32_t index, MigrateScan *s, size_t *allocated) {
        char path[64];
        _cleanup_fclose_ FILE *maps = NULL;
        _cleanup_close_ int pagemap = -EBADF;
        _cleanup_free_ uint64_t *entries = NULL;
        _cleanup_free_ char *line = NULL;
        size_t line_size = 0;
        long page_size = sysconf(_SC_PAGESIZE);
        int r;

        (void) snprintf(path, sizeof(path), "%s/%d/maps", proc, (int) pid);
        maps = fopen(path, "re");
        if (!maps)
                return -errno;
        (void) snprintf(path, sizeof(path), "%s/%d/pagemap", proc, (int) pid);
        pagemap = open(path, O_RDONLY | O_CLOEXEC);
        if (pagemap < 0)
                return -errno;
        entries = malloc(PAGEMAP_CHUNK * sizeof(uint64_t));
        if (!entries)
                return -ENOMEM;

        while (getline(&line, &line_size, maps) > 0) {
                ProcMapsEntry e;

                if (proc_maps_parse_line(line, &e) < 0 || e.special)
                        continue;
                for (uint64_t a = e.start; a < e.end;) {
                        size_t want = MIN((uint64_t) PAGEMAP_CHUNK, (e.end - a) / page_size);
                        ssize_t k = pread(pagemap, entries, want * sizeof(uint64_t),
                                          (off_t) (a / page_size * sizeof(uint64_t)));
                        if (k < 0)
                                return -errno;
                        if (k == 0)
                                break;
                        for (size_t i = 0; i < (size_t) k / sizeof(uint64_t); i++) {
                                uint64_t pfn = entries[i] & PAGEMAP_PFN_MASK;
                                if (!(entries[i] & PAGEMAP_PRESENT))
                                        continue;
                                r = add_page(s, allocated, a + i * page_size, pfn, index);
                                if (r < 0)
                                        return r;
                        }
                        a += (uint64_t) k / sizeof(uint64_t) * page_size;
                }
        }
        return 0;
}

int migrate_page_present(const char *proc, pid_t pid, uint64_t vaddr) {
        char path[64];
        _cleanup_close_ int fd = -EBADF;
        uint64_t entry;
        ssize_t k;

        (void) snprintf(path, sizeof(path), "%s/%d/pagemap", proc, (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        k = pread(fd, &entry, sizeof(entry), (off_t) (vaddr / (uint64_t) sysconf(_SC_PAGESIZE) * sizeof(entry)));
        if (k < 0)
                return -errno;
        return k == sizeof(entry) && (entry & PAGEMAP_PRESENT);
}

int migrate_scan_query_nodes(const MigrateScan *s, int *ret_nodes) {
        _cleanup_free_ void **addrs = NULL;
        size_t i = 0;

        addrs = malloc(QUERY_CHUNK * sizeof(void *));
        if (!addrs)
                return -ENOMEM;
        while (i < s->n_pages) {
                uint32_t proc = s->pages[i].proc;
                size_t k = 0;

                while (i + k < s->n_pages && k < QUERY_CHUNK && s->pages[i + k].proc == proc) {
                        addrs[k] = (void *) (uintptr_t) s->pages[i + k].vaddr;
                        k++;
                }
                if (numa_move_pages(s->pids[proc], k, addrs, NULL, ret_nodes + i, 0) < 0) {
                        int r = -errno;
                        for (size_t j = 0; j < k; j++)
                                ret_nodes[i + j] = r;
                }
                i += k;
        }
        return 0;
}

int migrate_scan(const char *proc, const pid_t *pids, size_t n_pids, const uint8_t *target, size_t target_size,
                 bool keep_hidden, MigrateScan *ret) {
        _cleanup_(migrate_scan_done) MigrateScan s = {};
        _cleanup_free_ int *nodes = NULL;
        size_t allocated = 0, kept = 0;
        int r;

        if (!proc || !ret || (n_pids > 0 && !pids))
                return -EINVAL;
        s.pids = malloc(MAX(n_pids, (size_t) 1) * sizeof(pid_t));
        if (!s.pids)
                return -ENOMEM;
        for (size_t i = 0; i < n_pids; i++) {
                size_t before = s.n_pages;
                r = scan_one(proc, pids[i], (uint32_t) s.n_pids, &s, &allocated);
                if (r == -ESRCH || r == -ENOENT) { /* it exited meanwhile: forget what was read */
                        s.n_pages = before;
                        continue;
                }
                if (r < 0)
                        return r;
                s.pids[s.n_pids++] = pids[i];
        }
        s.n_present = s.n_pages;
        if (target && s.n_pages > 0) {
                nodes = malloc(s.n_pages * sizeof(int));
                if (!nodes)
                        return -ENOMEM;
                r = migrate_scan_query_nodes(&s, nodes);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < s.n_pages; i++)
                        if ((nodes[i] >= 0 && !node_in(target, target_size, nodes[i])) ||
                            (keep_hidden && nodes[i] == -ENOENT))
                                s.pages[kept++] = s.pages[i];
                s.n_pages = kept;
        }
        *ret = s;
        s = (MigrateScan) {};
        return 0;
}
