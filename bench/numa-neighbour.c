/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CPU-bound neighbour of bench/numa-migrate (seed 002: does a migration take CPU from an
 * unrelated process?): spins on a fixed chunk of arithmetic and, every INTERVAL_MS, prints
 *
 *   t_ms chunks
 *
 * t_ms the CLOCK_MONOTONIC time in milliseconds (numa-workload's clock), chunks the chunks done
 * since the last line. With "now" as its only argument it prints the current t_ms and exits.
 * Stops after DURATION_S seconds or on SIGTERM.
 *
 * usage: numa-neighbour DURATION_S [INTERVAL_MS] | numa-neighbour now
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t stop;

static uint64_t mono_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static void on_term(int sig) {
        (void) sig;
        stop = 1;
}

int main(int argc, char *argv[]) {
        unsigned long duration_s, interval_ms = 100;
        uint64_t end, next, chunks = 0;
        volatile uint64_t x = 1;
        char *e;

        if (argc == 2 && strcmp(argv[1], "now") == 0) {
                printf("%llu\n", (unsigned long long) mono_ms());
                return 0;
        }
        if (argc < 2 || argc > 3) {
                fprintf(stderr, "usage: %s DURATION_S [INTERVAL_MS] | %s now\n", argv[0], argv[0]);
                return 2;
        }
        duration_s = strtoul(argv[1], &e, 10);
        if (*e || duration_s == 0) {
                fprintf(stderr, "numa-neighbour: invalid DURATION_S '%s'\n", argv[1]);
                return 2;
        }
        if (argc == 3) {
                interval_ms = strtoul(argv[2], &e, 10);
                if (*e || interval_ms == 0) {
                        fprintf(stderr, "numa-neighbour: invalid INTERVAL_MS '%s'\n", argv[2]);
                        return 2;
                }
        }
        signal(SIGTERM, on_term);
        signal(SIGINT, on_term);
        end = mono_ms() + duration_s * 1000;
        next = mono_ms() + interval_ms;
        while (!stop) {
                uint64_t t;

                for (unsigned i = 0; i < 100000; i++)
                        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
                chunks++;
                t = mono_ms();
                if (t >= next) {
                        printf("%llu %llu\n", (unsigned long long) t, (unsigned long long) chunks);
                        fflush(stdout);
                        chunks = 0;
                        next += interval_ms;
                        if (next <= t)
                                next = t + interval_ms;
                }
                if (t >= end)
                        break;
        }
        return 0;
}
