/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fileio.h"
#include "parse-util.h"
#include "proc-util.h"
#include "string-util.h"
#include "strv.h"

/* include/linux/sched.h: "I am a kernel thread". */
#define PF_KTHREAD 0x00200000U

int proc_stat_parse(const char *text, ProcStat *ret) {
        /* The fields wanted, by their number in proc(5), in order; the others (some of them
         * negative, like priority and nice) are skipped. */
        static const unsigned wanted[] = { 4, 9, 14, 15, 20, 22 };
        uint64_t v[ELEMENTSOF(wanted)];
        const char *close, *p;
        size_t k = 0;

        /* "pid (comm) state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt cmajflt utime stime
         * cutime cstime priority nice num_threads itrealvalue starttime ..."; comm may contain anything,
         * so parse from its last ')'. Read once per process and round by the hog limiter: no
         * allocation. */
        close = strrchr(text, ')');
        if (!close || close[1] != ' ' || !close[2] || close[3] != ' ')
                return -EBADMSG;
        p = close + 4;
        for (unsigned field = 4; k < ELEMENTSOF(wanted); field++) {
                size_t n = strcspn(p, " \n");
                char buf[24];

                if (n == 0)
                        return -EBADMSG;
                if (field == wanted[k]) {
                        if (n >= sizeof(buf))
                                return -EBADMSG;
                        memcpy(buf, p, n);
                        buf[n] = 0;
                        if (safe_atou64(buf, &v[k++]) < 0)
                                return -EBADMSG;
                }
                p += n;
                if (*p == ' ')
                        p++;
        }
        if (v[0] > INT32_MAX || v[1] > UINT32_MAX || v[4] > UINT32_MAX)
                return -EBADMSG;

        *ret = (ProcStat){
                .state = close[2],
                .ppid = (pid_t) v[0],
                .flags = (unsigned) v[1],
                .utime_ticks = v[2],
                .stime_ticks = v[3],
                .num_threads = (unsigned) v[4],
                .start_time_ticks = v[5],
        };
        return 0;
}

/* The text of /proc/<pid>/<name>; -ESRCH if there is no such process. */
static int read_pid_file(const char *proc, pid_t pid, const char *name, char **ret) {
        _cleanup_free_ char *p = NULL;
        char dir[32];
        int r;

        if (pid <= 0)
                return -EINVAL;
        (void) snprintf(dir, sizeof(dir), "%i", (int) pid);
        p = strjoin(proc, "/", dir, "/", name);
        if (!p)
                return -ENOMEM;
        r = read_full_file(p, ret, NULL);
        return r == -ENOENT ? -ESRCH : r;
}

int proc_pid_stat(const char *proc, pid_t pid, ProcStat *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_pid_file(proc, pid, "stat", &text);
        if (r < 0)
                return r;
        return proc_stat_parse(text, ret);
}

int proc_pid_start_time(const char *proc, pid_t pid, uint64_t *ret_ticks) {
        ProcStat st;
        int r;

        r = proc_pid_stat(proc, pid, &st);
        if (r < 0)
                return r;
        *ret_ticks = st.start_time_ticks;
        return 0;
}

static uint64_t ticks_per_sec(void) {
        long hz = sysconf(_SC_CLK_TCK);

        /* USER_HZ is 100 on every Linux architecture tonari builds for; sysconf() only fails if the
         * C library has no idea, and then 100 is still right. */
        return hz > 0 ? (uint64_t) hz : 100;
}

usec_t proc_ticks_to_usec(uint64_t ticks) {
        uint64_t hz = ticks_per_sec();

        if (ticks <= (USEC_INFINITY - 1) / USEC_PER_SEC)
                return ticks * USEC_PER_SEC / hz;
        if (ticks / hz >= (USEC_INFINITY - 1) / USEC_PER_SEC)
                return USEC_INFINITY; /* saturate: 584,000 years */
        return ticks / hz * USEC_PER_SEC + ticks % hz * USEC_PER_SEC / hz;
}

uint64_t proc_usec_to_ticks(usec_t usec) {
        uint64_t hz = ticks_per_sec();

        return usec / USEC_PER_SEC * hz + usec % USEC_PER_SEC * hz / USEC_PER_SEC;
}

int proc_io_parse(const char *text, ProcIO *ret) {
        static const struct {
                const char *key;
                size_t offset;
        } fields[] = {
                { "rchar", offsetof(ProcIO, rchar) },
                { "wchar", offsetof(ProcIO, wchar) },
                { "syscr", offsetof(ProcIO, syscr) },
                { "syscw", offsetof(ProcIO, syscw) },
                { "read_bytes", offsetof(ProcIO, read_bytes) },
                { "write_bytes", offsetof(ProcIO, write_bytes) },
                { "cancelled_write_bytes", offsetof(ProcIO, cancelled_write_bytes) },
        };
        ProcIO io = {};
        unsigned seen = 0;

        /* "key: value" lines; keys the kernel may add later are ignored, but every known one must
         * be there exactly once. Read once per process and round by the hog limiter: no allocation. */
        for (const char *l = text, *end; *l; l = *end ? end + 1 : end) {
                const char *colon;
                char buf[24];
                uint64_t v;

                end = strchrnul(l, '\n');
                if (end == l)
                        continue;
                colon = memchr(l, ':', end - l);
                if (!colon || colon[1] != ' ')
                        return -EBADMSG;
                for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
                        size_t n = end - colon - 2;

                        if (strlen(fields[i].key) != (size_t) (colon - l) || !strneq(l, fields[i].key, colon - l))
                                continue;
                        if ((seen & (1U << i)) || n == 0 || n >= sizeof(buf))
                                return -EBADMSG;
                        memcpy(buf, colon + 2, n);
                        buf[n] = 0;
                        if (safe_atou64(buf, &v) < 0)
                                return -EBADMSG;
                        memcpy((uint8_t *) &io + fields[i].offset, &v, sizeof(v));
                        seen |= 1U << i;
                }
        }
        if (seen != (1U << ELEMENTSOF(fields)) - 1)
                return -EBADMSG;
        *ret = io;
        return 0;
}

int proc_pid_io(const char *proc, pid_t pid, ProcIO *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_pid_file(proc, pid, "io", &text);
        if (r < 0)
                return r;
        return proc_io_parse(text, ret);
}

int proc_schedstat_parse(const char *text, ProcSchedstat *ret) {
        unsigned long long on_cpu, run_delay, slices;

        /* "<ns on CPU> <ns runnable waiting for a CPU> <timeslices>" */
        if (sscanf(text, "%llu %llu %llu", &on_cpu, &run_delay, &slices) != 3)
                return -EBADMSG;
        *ret = (ProcSchedstat){ .on_cpu_nsec = on_cpu, .run_delay_nsec = run_delay, .timeslices = slices };
        return 0;
}

int proc_pid_schedstat(const char *proc, pid_t pid, ProcSchedstat *ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_pid_file(proc, pid, "schedstat", &text);
        if (r < 0)
                return r;
        return proc_schedstat_parse(text, ret);
}

int proc_pid_is_kernel_thread(const char *proc, pid_t pid) {
        ProcStat st;
        int r;

        r = proc_pid_stat(proc, pid, &st);
        if (r < 0)
                return r;
        return !!(st.flags & PF_KTHREAD);
}

int proc_cgroup_parse_controller(const char *text, const char *controller, char **ret) {
        _cleanup_strv_free_ char **lines = NULL;
        const char *found = NULL;
        int r;

        /* "0::/path" (v2) or "N:controller,list:/path" (v1, one line per hierarchy). Every line is
         * checked, also after the one that is looked for. */
        r = strv_split(text, "\n", &lines);
        if (r < 0)
                return r;
        STRV_FOREACH(l, lines) {
                const char *c = strchr(*l, ':'), *p;

                if (!c || !(p = strchr(c + 1, ':')) || p[1] != '/')
                        return -EBADMSG;
                if (startswith(*l, "0::")) {
                        if (!controller)
                                found = p + 1;
                        continue;
                }
                if (!controller)
                        continue;
                _cleanup_free_ char *list = strndup(c + 1, p - c - 1);
                _cleanup_strv_free_ char **controllers = NULL;
                if (!list)
                        return -ENOMEM;
                r = strv_split(list, ",", &controllers);
                if (r < 0)
                        return r;
                if (strv_contains(controllers, controller))
                        found = p + 1;
        }
        if (!found)
                return -ENODATA;

        char *s = strdup(found);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int proc_cgroup_parse(const char *text, char **ret) {
        int r;

        /* The v2 line wins; on v1 the hierarchy holding "cpu" is the one tonari places processes by. */
        r = proc_cgroup_parse_controller(text, NULL, ret);
        if (r != -ENODATA)
                return r;
        return proc_cgroup_parse_controller(text, "cpu", ret);
}

int proc_pid_cgroup_controller(const char *proc, pid_t pid, const char *controller, char **ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_pid_file(proc, pid, "cgroup", &text);
        if (r < 0)
                return r;
        return proc_cgroup_parse_controller(text, controller, ret);
}

int proc_pid_cgroup(const char *proc, pid_t pid, char **ret) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_pid_file(proc, pid, "cgroup", &text);
        if (r < 0)
                return r;
        return proc_cgroup_parse(text, ret);
}

int proc_maps_parse_line(const char *line, ProcMapsEntry *ret) {
        unsigned long long start, end;
        char perms[5];
        int consumed = 0;
        const char *path;

        if (!line || !ret)
                return -EINVAL;
        if (sscanf(line, "%llx-%llx %4s %*x %*x:%*x %*u%n", &start, &end, perms, &consumed) != 3 || consumed == 0)
                return -EINVAL;
        if (end <= start || strlen(perms) != 4)
                return -EINVAL;
        path = line + consumed;
        path += strspn(path, " \t");
        *ret = (ProcMapsEntry) {
                .start = start,
                .end = end,
                .special = strncmp(path, "[vsyscall]", 10) == 0 || strncmp(path, "[vvar]", 6) == 0 ||
                           strncmp(path, "[vdso]", 6) == 0,
        };
        memcpy(ret->perms, perms, sizeof(perms));
        return 0;
}
