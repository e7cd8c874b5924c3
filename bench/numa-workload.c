/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The workload of seed 002's experiment (bench/numa-migrate, TEST-20-migrate): allocates MIB MiB,
 * touches every page once, then reads and writes one byte of every HOT_EVERY-th page in a loop
 * (the paper's process touches 4 of its 8 GB sparsely). Every INTERVAL_MS it reports, on stdout:
 *
 *   t_ms hot_pct all_pct max_iter_us iters
 *
 * t_ms the CLOCK_MONOTONIC time in milliseconds (the clock of the benchmark's other programs),
 * the share of its hot and of all its pages on node TARGET in percent with one decimal, the longest
 * pass over the hot set and the passes done in that interval. The hot share comes from a
 * move_pages(2) query of the hot pages, the share of all pages from the kernel's own count in
 * /proc/self/numa_maps: with automatic NUMA balancing on (Debian's kernel on two nodes), a page
 * waiting for a NUMA hinting fault is answered with -ENOENT by move_pages(2) on kernels before 6.5
 * (follow_page() refuses its PROT_NONE entry), which would count every cold page as not moved. Hot
 * pages are touched every pass and leave that state at once; the few caught in it are left out. It waits for a line on stdin before allocating (so that it can be
 * moved into a slice first) and prints "ready" once its memory is touched. Stops after DURATION_S
 * seconds or on SIGTERM.
 *
 * usage: numa-workload MIB HOT_EVERY TARGET DURATION_S [INTERVAL_MS]
 */
#include <errno.h>
#include <numaif.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static atomic_bool stop;
static atomic_uint_fast64_t max_iter_us, iters;
static char *mem;
static size_t n_pages, page_size, hot_every;
static int target;

static uint64_t mono_us(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000 + (uint64_t) ts.tv_nsec / 1000;
}

static void on_term(int sig) {
        (void) sig;
        atomic_store(&stop, true);
}

/* Percent (×10) of the pages (every step-th) on the target node, of those move_pages(2) can see. */
static unsigned share_on_target(void **addrs, int *status, size_t step) {
        size_t n = 0, on = 0, hidden = 0;
        for (size_t i = 0; i < n_pages; i += step)
                addrs[n++] = mem + i * page_size;
        for (size_t i = 0; i < n; i += 65536) {
                size_t k = n - i < 65536 ? n - i : 65536;
                if (move_pages(0, k, addrs + i, NULL, status + i, 0) < 0)
                        for (size_t j = 0; j < k; j++)
                                status[i + j] = -errno;
        }
        for (size_t i = 0; i < n; i++) {
                on += status[i] == target;
                hidden += status[i] == -ENOENT || status[i] == -EFAULT; /* every page was touched */
        }
        return n > hidden ? (unsigned) (on * 1000 / (n - hidden)) : 0;
}

/* Percent (×10) of the whole area on the target node, from the Nx= counts of its numa_maps line. */
static unsigned numa_maps_share(void) {
        char key[32], *line = NULL;
        size_t size = 0, on = 0;
        FILE *f = fopen("/proc/self/numa_maps", "re");

        if (!f)
                return 0;
        (void) snprintf(key, sizeof(key), "%lx ", (unsigned long) (uintptr_t) mem);
        while (getline(&line, &size, f) > 0) {
                if (strncmp(line, key, strlen(key)) != 0)
                        continue;
                for (char *p = strstr(line, " N"); p; p = strstr(p + 1, " N")) {
                        int node;
                        unsigned long count;
                        if (sscanf(p, " N%d=%lu", &node, &count) == 2 && node == target)
                                on += count;
                }
                break;
        }
        free(line);
        fclose(f);
        return n_pages ? (unsigned) (on * 1000 / n_pages) : 0;
}

static void *sampler(void *arg) {
        unsigned interval_ms = *(unsigned *) arg;
        void **addrs = malloc(n_pages * sizeof(void *));
        int *status = malloc(n_pages * sizeof(int));

        if (!addrs || !status)
                abort();
        while (!atomic_load(&stop)) {
                uint64_t t = mono_us();
                unsigned hot = share_on_target(addrs, status, hot_every);
                unsigned all = numa_maps_share();
                printf("%llu %u.%u %u.%u %llu %llu\n", (unsigned long long) (t / 1000), hot / 10, hot % 10,
                       all / 10, all % 10, (unsigned long long) atomic_exchange(&max_iter_us, 0),
                       (unsigned long long) atomic_exchange(&iters, 0));
                fflush(stdout);
                t = mono_us() - t;
                if (t < interval_ms * 1000ULL)
                        usleep((useconds_t) (interval_ms * 1000ULL - t));
        }
        free(addrs);
        free(status);
        return NULL;
}

int main(int argc, char *argv[]) {
        unsigned long mib, duration_s;
        unsigned interval_ms = 100;
        char line[16];
        pthread_t thread;
        uint64_t end;
        volatile uint64_t sum = 0;

        if (argc < 5 || argc > 6) {
                fprintf(stderr, "usage: %s MIB HOT_EVERY TARGET DURATION_S [INTERVAL_MS]\n", argv[0]);
                return 2;
        }
        mib = strtoul(argv[1], NULL, 10);
        hot_every = strtoul(argv[2], NULL, 10);
        target = atoi(argv[3]);
        duration_s = strtoul(argv[4], NULL, 10);
        if (argc == 6)
                interval_ms = (unsigned) strtoul(argv[5], NULL, 10);
        if (mib == 0 || hot_every == 0 || interval_ms == 0) {
                fprintf(stderr, "numa-workload: MIB, HOT_EVERY and INTERVAL_MS must be positive\n");
                return 2;
        }
        signal(SIGTERM, on_term);
        signal(SIGINT, on_term);
        if (!fgets(line, sizeof(line), stdin))
                return 1;

        page_size = (size_t) sysconf(_SC_PAGESIZE);
        n_pages = mib * 1024 * 1024 / page_size;
        /* Between two inaccessible pages: the area never merges with a neighbour, so that its own
         * line in numa_maps starts at mem. */
        mem = mmap(NULL, (n_pages + 2) * page_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED) {
                perror("mmap");
                return 1;
        }
        mem += page_size;
        if (mprotect(mem, n_pages * page_size, PROT_READ | PROT_WRITE) < 0) {
                perror("mprotect");
                return 1;
        }
        /* 4 KiB pages: idle page tracking and move_pages(2) see each page on its own. */
        (void) madvise(mem, n_pages * page_size, MADV_NOHUGEPAGE);
        for (size_t i = 0; i < n_pages; i++)
                mem[i * page_size] = (char) i;
        printf("ready %zu pages\n", n_pages);
        fflush(stdout);

        if (pthread_create(&thread, NULL, sampler, &interval_ms) != 0)
                return 1;
        end = mono_us() + duration_s * 1000000ULL;
        while (!atomic_load(&stop) && mono_us() < end) {
                uint64_t t0 = mono_us(), d;
                for (size_t i = 0; i < n_pages; i += hot_every) {
                        sum += (unsigned char) mem[i * page_size + 64];
                        mem[i * page_size + 64]++;
                }
                d = mono_us() - t0;
                if (d > atomic_load(&max_iter_us))
                        atomic_store(&max_iter_us, d);
                atomic_fetch_add(&iters, 1);
        }
        atomic_store(&stop, true);
        pthread_join(thread, NULL);
        return 0;
}
