/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The cost of entering and leaving a libtonari domain: prepares ROOT (a cgroup2 directory that
 * this process is moved into first), makes domain "movecost", then times N enter/leave pairs
 * (each call alone, CLOCK_MONOTONIC) and prints the median and the 99th percentile of each in
 * microseconds. With --threads the calling thread moves (threaded cgroups, cgroup.threads).
 * usage: tonari-domain-movecost [--threads] ROOT N
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tonari/domain.h>

static double now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static double pct(double *v, int n, double p) {
        qsort(v, n, sizeof(double), cmp);
        return v[(int) (p * (n - 1))];
}

int main(int argc, char **argv) {
        unsigned flags = 0;
        TonariDomain *d;
        char path[4096], pid[32];
        double *enter, *leave;
        int n, r, fd, a = 1;

        if (argc > 1 && strcmp(argv[1], "--threads") == 0) {
                flags = TONARI_DOMAIN_THREADED;
                a++;
        }
        if (argc != a + 2 || (n = atoi(argv[a + 1])) <= 0) {
                fprintf(stderr, "usage: tonari-domain-movecost [--threads] ROOT N\n");
                return 2;
        }
        /* Into ROOT, so that tonari_domain_prepare() moves this process to ROOT/_home. */
        snprintf(path, sizeof(path), "%s/cgroup.procs", argv[a]);
        snprintf(pid, sizeof(pid), "%d", (int) getpid());
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, pid, strlen(pid)) < 0) {
                fprintf(stderr, "cannot move into %s: %m\n", path);
                return 1;
        }
        close(fd);
        r = tonari_domain_prepare(argv[a], flags);
        if (r < 0) {
                fprintf(stderr, "tonari_domain_prepare(%s): %s\n", argv[a], strerror(-r));
                return 1;
        }
        r = tonari_domain_open(argv[a], "movecost", flags | TONARI_DOMAIN_CREATE, &d);
        if (r < 0) {
                fprintf(stderr, "tonari_domain_open: %s\n", strerror(-r));
                return 1;
        }
        enter = calloc(n, sizeof(double));
        leave = calloc(n, sizeof(double));
        if (!enter || !leave)
                return 1;
        for (int i = 0; i < n; i++) {
                double t0 = now_usec(), t1, t2;

                r = tonari_domain_enter(d);
                t1 = now_usec();
                if (r >= 0)
                        r = tonari_domain_leave(d);
                t2 = now_usec();
                if (r < 0) {
                        fprintf(stderr, "move %d: %s\n", i, strerror(-r));
                        return 1;
                }
                enter[i] = t1 - t0;
                leave[i] = t2 - t1;
        }
        printf("moves=%d enter_p50_us=%.2f enter_p99_us=%.2f leave_p50_us=%.2f leave_p99_us=%.2f\n", n,
               pct(enter, n, 0.5), pct(enter, n, 0.99), pct(leave, n, 0.5), pct(leave, n, 0.99));
        tonari_domain_close(d);
        return 0;
}
