/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A CGI program that burns CPU: QUERY_STRING "ms=N" (default 10) makes it spin until it has used N
 * milliseconds of its own CPU time, then it answers with the CPU and wall time it took, in
 * microseconds, and the cgroup it ran in: "cpu_us=… wall_us=… cgroup=/…". "crash=1" makes it die
 * of SIGSEGV first, "io=BYTES" writes that many bytes to a file in $TMPDIR (or /var/tmp) with
 * O_DIRECT-free fsync. The busy loop of seed 003's Fig 5 and of TEST-19-apache.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long long now_usec(clockid_t c) {
        struct timespec ts;

        clock_gettime(c, &ts);
        return (long long) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long long param(const char *q, const char *key, long long def) {
        size_t n = strlen(key);

        for (const char *p = q; p && *p; p = strchr(p, '&') ? strchr(p, '&') + 1 : NULL)
                if (strncmp(p, key, n) == 0 && p[n] == '=')
                        return atoll(p + n + 1);
        return def;
}

/* The cgroup v2 path of this process ("0::/path" in /proc/self/cgroup), or "?". */
static void own_cgroup(char *buf, size_t size) {
        char line[4096];
        FILE *f = fopen("/proc/self/cgroup", "re");

        snprintf(buf, size, "?");
        if (!f)
                return;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "0::", 3) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        snprintf(buf, size, "%s", line + 3);
                        break;
                }
        fclose(f);
}

int main(void) {
        const char *q = getenv("QUERY_STRING");
        long long ms = param(q, "ms", 10), io = param(q, "io", 0);
        long long wall0 = now_usec(CLOCK_MONOTONIC), cpu0 = now_usec(CLOCK_PROCESS_CPUTIME_ID);
        volatile unsigned long x = 0;
        char cg[4096];

        if (param(q, "crash", 0))
                raise(SIGSEGV);
        while (now_usec(CLOCK_PROCESS_CPUTIME_ID) - cpu0 < ms * 1000)
                for (int i = 0; i < 1000; i++)
                        x++;
        if (io > 0) {
                char path[256], buf[65536];
                const char *dir = getenv("TONARI_SPIN_DIR") ? getenv("TONARI_SPIN_DIR") : "/var/tmp";
                int fd;

                memset(buf, 'x', sizeof(buf));
                snprintf(path, sizeof(path), "%s/tonari-spin.%d", dir, (int) getpid());
                fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
                if (fd >= 0) {
                        for (long long left = io; left > 0; left -= (long long) sizeof(buf))
                                if (write(fd, buf, left < (long long) sizeof(buf) ? (size_t) left : sizeof(buf)) < 0)
                                        break;
                        fsync(fd);
                        close(fd);
                        unlink(path);
                }
        }
        own_cgroup(cg, sizeof(cg));
        printf("Content-Type: text/plain\r\n\r\ncpu_us=%lld wall_us=%lld cgroup=%s\n",
               now_usec(CLOCK_PROCESS_CPUTIME_ID) - cpu0, now_usec(CLOCK_MONOTONIC) - wall0, cg);
        return 0;
}
