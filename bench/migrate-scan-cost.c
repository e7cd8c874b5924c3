/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What lazy NUMA migration's scan and planner cost per page on this host, on a real process
 * (seed 002, issue 20): a child allocates MIB MiB of 4 KiB pages and touches them; then, REPS
 * times each, with the CPU time of the calling thread:
 *
 *   scan        migrate_scan(): /proc/PID/maps, pagemap read 4096 entries per read(), and a
 *               move_pages(2) query of 16384 pages per call, leaving out pages on the target
 *   scan-1      the same walk with one pread() of pagemap and one move_pages(2) query per page
 *               (what the chunked reads save)
 *   plan-mild   migrate_plan_next() over every page, every second one referenced (Mild)
 *   plan-severe the same with Severe (re-checks the remainder every round)
 *
 * and prints "NAME total_ms ns_per_page" (median of REPS). Needs root for the frame numbers
 * (without them pagemap reads as all absent on kernels that hide them). Works on one node: the
 * target is a node that is not the pages' (node 1, which need not exist: the query answers with
 * the node a page is on either way).
 *
 * usage: migrate-scan-cost MIB [REPS] [N]   (N: pages per round for the plans, default 1024)
 */
#include <errno.h>
#include <fcntl.h>
#include <numaif.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "migrate.h"

static uint64_t thread_ns(void) {
        struct timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;
        return x < y ? -1 : x > y;
}

static uint64_t median(uint64_t *v, unsigned n) {
        qsort(v, n, sizeof(*v), cmp_u64);
        return v[n / 2];
}

/* The scan's walk done page by page: one pread() and one move_pages() query per present page. */
static int scan_per_page(pid_t pid, const MigrateScan *ref, size_t *ret_kept) {
        char path[64];
        int fd, node, r = 0;
        size_t kept = 0;

        (void) snprintf(path, sizeof(path), "/proc/%d/pagemap", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        for (size_t i = 0; i < ref->n_present; i++) {
                uint64_t e;
                void *a = (void *) (uintptr_t) ref->pages[i].vaddr;
                if (pread(fd, &e, sizeof(e), (off_t) (ref->pages[i].vaddr / 4096 * 8)) != sizeof(e)) {
                        r = -EIO;
                        break;
                }
                if (!(e >> 63))
                        continue;
                if (move_pages(pid, 1, &a, NULL, &node, 0) < 0) {
                        r = -errno;
                        break;
                }
                kept += node != 1;
        }
        close(fd);
        *ret_kept = kept;
        return r;
}

static bool every_second(size_t page, void *userdata) {
        (void) userdata;
        return page % 2 == 0;
}

static uint64_t plan_ns(MigratePolicy policy, size_t n_pages, size_t n) {
        MigratePlan *p = NULL;
        size_t *batch = malloc(n * sizeof(size_t));
        uint64_t t0;

        if (!batch || migrate_plan_new(policy, n_pages, n, &p) < 0)
                abort();
        t0 = thread_ns();
        while (migrate_plan_next(p, every_second, NULL, batch, NULL) > 0)
                ;
        t0 = thread_ns() - t0;
        migrate_plan_free(p);
        free(batch);
        return t0;
}

int main(int argc, char *argv[]) {
        unsigned long mib;
        unsigned reps = 5;
        size_t n = 1024, n_pages;
        int pipefd[2];
        pid_t child;
        char c;
        const uint8_t target = 1 << 1;
        uint64_t *t;
        MigrateScan s = {};

        if (argc < 2 || argc > 4) {
                fprintf(stderr, "usage: %s MIB [REPS] [N]\n", argv[0]);
                return 2;
        }
        mib = strtoul(argv[1], NULL, 10);
        if (argc > 2)
                reps = (unsigned) strtoul(argv[2], NULL, 10);
        if (argc > 3)
                n = strtoul(argv[3], NULL, 10);
        if (mib == 0 || reps == 0 || n == 0) {
                fprintf(stderr, "migrate-scan-cost: MIB, REPS and N must be positive\n");
                return 2;
        }
        n_pages = mib * 256;
        t = calloc(reps, sizeof(uint64_t));
        if (!t || pipe(pipefd) < 0)
                return 1;
        child = fork();
        if (child < 0)
                return 1;
        if (child == 0) {
                char *m = mmap(NULL, n_pages * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
                if (m == MAP_FAILED)
                        _exit(1);
                (void) madvise(m, n_pages * 4096, MADV_NOHUGEPAGE);
                for (size_t i = 0; i < n_pages; i++)
                        m[i * 4096] = 1;
                (void) write(pipefd[1], "r", 1);
                pause();
                _exit(0);
        }
        close(pipefd[1]);
        if (read(pipefd[0], &c, 1) != 1) {
                fprintf(stderr, "migrate-scan-cost: the child did not get its memory\n");
                return 1;
        }

        for (unsigned r = 0; r < reps; r++) {
                uint64_t t0 = thread_ns();
                migrate_scan_done(&s);
                if (migrate_scan("/proc", &child, 1, &target, 1, false, &s) < 0) {
                        fprintf(stderr, "migrate-scan-cost: migrate_scan failed\n");
                        kill(child, SIGKILL);
                        return 1;
                }
                t[r] = thread_ns() - t0;
        }
        printf("# %zu pages allocated, %zu present in the scan, %zu off node 1\n", n_pages, s.n_present, s.n_pages);
        printf("scan %.1f %.0f\n", median(t, reps) / 1e6, (double) median(t, reps) / (double) s.n_present);
        {
                /* The per-page walk needs every present page's address: scan once more without a target. */
                MigrateScan all = {};
                size_t kept = 0;
                if (migrate_scan("/proc", &child, 1, NULL, 0, false, &all) < 0)
                        return 1;
                for (unsigned r = 0; r < reps; r++) {
                        uint64_t t0 = thread_ns();
                        if (scan_per_page(child, &all, &kept) < 0) {
                                fprintf(stderr, "migrate-scan-cost: the per-page walk failed\n");
                                kill(child, SIGKILL);
                                return 1;
                        }
                        t[r] = thread_ns() - t0;
                }
                printf("scan-1 %.1f %.0f\n", median(t, reps) / 1e6, (double) median(t, reps) / (double) all.n_present);
                migrate_scan_done(&all);
        }
        for (unsigned r = 0; r < reps; r++)
                t[r] = plan_ns(MIGRATE_MILD, n_pages, n);
        printf("plan-mild %.1f %.0f\n", median(t, reps) / 1e6, (double) median(t, reps) / (double) n_pages);
        for (unsigned r = 0; r < reps; r++)
                t[r] = plan_ns(MIGRATE_SEVERE, n_pages, n);
        printf("plan-severe %.1f %.0f\n", median(t, reps) / 1e6, (double) median(t, reps) / (double) n_pages);
        migrate_scan_done(&s);
        kill(child, SIGKILL);
        (void) waitpid(child, NULL, 0);
        free(t);
        return 0;
}
