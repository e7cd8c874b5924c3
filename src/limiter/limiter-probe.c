/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * limiter-probe: samples processes with taskstats every interval and prints one line per process
 * per interval, and what the hog-limiting policy would decide (observe-only). A tool for the
 * limiter's benchmark and for trying the policy on real workloads; not installed.
 *
 *   limiter-probe [--interval=SEC] [--count=N] [--no-policy] PID...
 *   limiter-probe --features
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "limiter-policy.h"
#include "log.h"
#include "parse-util.h"
#include "taskstats.h"

typedef struct Tracked {
        pid_t pid;
        bool gone;
        bool have_prev;
        TaskstatsSample prev;
        char comm[TASKSTATS_COMM_MAX + 1];
} Tracked;

static void on_exit_record(const TaskstatsSample *s, void *userdata) {
        Tracked *t = userdata;

        for (; t->pid > 0; t++)
                if (s->kind == TASKSTATS_TASK && s->pid == t->pid && !t->gone &&
                    (!t->have_prev || taskstats_same_start_time(s->start_time_ticks, t->prev.start_time_ticks))) {
                        printf("exit pid=%i comm=%s code=%u cpu_usec=%" PRIu64 " read_bytes=%" PRIu64
                               " write_bytes=%" PRIu64 "\n",
                               (int) s->pid, s->comm, s->exit_code, s->utime_usec + s->stime_usec, s->read_bytes,
                               s->write_bytes);
                        t->gone = true;
                }
}

static double pct(uint64_t a, uint64_t b, usec_t dt) {
        return dt > 0 && b >= a ? 100.0 * (double) (b - a) / (double) dt : 0;
}

static double per_sec(uint64_t a, uint64_t b, usec_t dt) {
        return dt > 0 && b >= a ? (double) (b - a) * USEC_PER_SEC / (double) dt : 0;
}

static void print_sample(const Tracked *t, const TaskstatsSample *s) {
        const TaskstatsSample *p = &t->prev;
        usec_t dt = s->timestamp_usec - p->timestamp_usec;

        printf("pid=%i comm=%s cpu=%.1f%% cpu_lifetime=%.1f%% read=%.0fB/s write=%.0fB/s calls=%.0f/s",
               (int) s->pid, t->comm, pct(p->utime_usec + p->stime_usec, s->utime_usec + s->stime_usec, dt),
               pct(0, s->utime_usec + s->stime_usec, s->elapsed_usec), per_sec(p->read_bytes, s->read_bytes, dt),
               per_sec(p->write_bytes, s->write_bytes, dt),
               per_sec(p->read_syscalls + p->write_syscalls, s->read_syscalls + s->write_syscalls, dt));
        if (s->have_delays && p->have_delays)
                printf(" cpu_delay=%.1f%% blkio_delay=%.1f%%", pct(p->cpu_delay_usec, s->cpu_delay_usec, dt),
                       pct(p->blkio_delay_usec, s->blkio_delay_usec, dt));
        else
                printf(" cpu_delay=n/a blkio_delay=n/a");
        printf("\n");
}

static void print_decision(const LimiterDecision *d) {
        printf("policy: %s pid=%i class=%s reason=%s cpu=%.1f%% cpu_lifetime=%.1f%% io=%.0fB/s "
               "others_before: cpu=%.1f%% io_calls=%.1f/s cpu_delay=%.1f%% blkio_delay=%.1f%% "
               "others_after: cpu=%.1f%% io_calls=%.1f/s cpu_delay=%.1f%% blkio_delay=%.1f%%\n",
               limiter_action_to_string(d->action), (int) d->pid, limiter_class_to_string(d->class),
               limiter_reason_to_string(d->reason), d->cpu_percent, d->cpu_percent_lifetime, d->io_bytes_per_sec,
               d->before.cpu_percent, d->before.io_count_per_sec, d->before.cpu_delay_percent,
               d->before.blkio_delay_percent, d->after.cpu_percent, d->after.io_count_per_sec,
               d->after.cpu_delay_percent, d->after.blkio_delay_percent);
}

int main(int argc, char *argv[]) {
        static const struct option options[] = {
                { "interval", required_argument, NULL, 'i' },
                { "count", required_argument, NULL, 'c' },
                { "no-policy", no_argument, NULL, 'n' },
                { "features", no_argument, NULL, 'f' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        _cleanup_(taskstats_freep) Taskstats *ts = NULL;
        _cleanup_(limiter_policy_freep) LimiterPolicy *policy = NULL;
        _cleanup_free_ Tracked *tracked = NULL;
        _cleanup_free_ LimiterSample *samples = NULL;
        LimiterParams params = LIMITER_PARAMS_DEFAULT;
        unsigned count = 0, n;
        bool use_policy = true;
        int c, r;

        log_open();
        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'i':
                        r = parse_sec(optarg, &params.interval_usec);
                        if (r < 0 || params.interval_usec == 0)
                                return log_error_errno(r < 0 ? r : EINVAL, "Invalid interval '%s'.", optarg), 1;
                        break;
                case 'c':
                        if (safe_atou(optarg, &count) < 0)
                                return log_error("Invalid count '%s'.", optarg), 1;
                        break;
                case 'n':
                        use_policy = false;
                        break;
                case 'f': {
                        TaskstatsSupport s;

                        r = taskstats_probe("/proc", &s);
                        if (r < 0)
                                return log_error_errno(r, "Failed to probe taskstats: %m"), 1;
                        printf("%s\n", taskstats_support_to_string(&s));
                        return s.error == 0 ? 0 : 1;
                }
                case 'h':
                        printf("%s [--interval=SEC] [--count=N] [--no-policy] PID...\n%s --features\n", argv[0],
                               argv[0]);
                        return 0;
                default:
                        return 1;
                }
        if (optind >= argc)
                return log_error("No PIDs given."), 1;

        n = (unsigned) (argc - optind);
        tracked = new0(Tracked, n + 1);
        samples = new(LimiterSample, n);
        if (!tracked || !samples)
                return log_oom(), 1;
        for (unsigned i = 0; i < n; i++) {
                int pid;

                if (safe_atoi(argv[optind + i], &pid) < 0 || pid <= 0)
                        return log_error("Invalid PID '%s'.", argv[optind + i]), 1;
                tracked[i].pid = pid;
        }

        if (params.window_usec < params.interval_usec)
                params.window_usec = params.interval_usec;
        params.observe_only = true;
        if (use_policy) {
                r = limiter_policy_new(&params, &policy);
                if (r < 0)
                        return log_error_errno(r, "Invalid policy parameters: %m"), 1;
        }

        r = taskstats_new("/proc", &ts);
        if (r < 0)
                return log_error_errno(r, "Failed to open taskstats: %m"), 1;
        r = taskstats_watch_exits(ts);
        if (r < 0)
                log_warning_errno(r, "Failed to watch exits, continuing without: %m");

        for (unsigned round = 0; count == 0 || round <= count; round++) {
                size_t k = 0;
                bool any = false;

                (void) taskstats_refresh_delay_accounting(ts);
                for (unsigned i = 0; i < n; i++) {
                        Tracked *t = &tracked[i];
                        TaskstatsSample s;

                        if (t->gone)
                                continue;
                        /* The name once, from the task; the numbers of the whole process. */
                        if (!t->have_prev && taskstats_query_pid(ts, t->pid, &s) >= 0)
                                memcpy(t->comm, s.comm, sizeof(t->comm));
                        r = taskstats_query_process(ts, t->pid, &s);
                        if (r == -ESRCH || (r >= 0 && t->have_prev && s.start_time_ticks != t->prev.start_time_ticks)) {
                                printf("gone pid=%i\n", (int) t->pid);
                                t->gone = true;
                                continue;
                        }
                        if (r < 0)
                                return log_error_errno(r, "Failed to query PID %i: %m", (int) t->pid), 1;
                        any = true;
                        if (t->have_prev)
                                print_sample(t, &s);
                        t->prev = s;
                        t->have_prev = true;
                        samples[k++] = (LimiterSample) {
                                .pid = s.pid,
                                .start_time_ticks = s.start_time_ticks,
                                .timestamp_usec = s.timestamp_usec,
                                .elapsed_usec = s.elapsed_usec,
                                .cpu_usec = s.utime_usec + s.stime_usec,
                                .io_bytes = s.read_bytes + s.write_bytes,
                                .io_count = s.read_syscalls + s.write_syscalls,
                                .have_delays = s.have_delays,
                                .cpu_delay_usec = s.cpu_delay_usec,
                                .blkio_delay_usec = s.blkio_delay_usec,
                        };
                }
                if (policy) {
                        _cleanup_free_ LimiterDecision *d = NULL;

                        r = limiter_policy_step(policy, samples, k, NULL, &d);
                        if (r < 0)
                                return log_error_errno(r, "Policy step failed: %m"), 1;
                        for (int i = 0; i < r; i++)
                                print_decision(&d[i]);
                }
                (void) fflush(stdout);
                if (!any)
                        break;

                /* Sleep until the next round, reporting exits as they come. */
                for (usec_t end = now(CLOCK_MONOTONIC) + params.interval_usec, t; (t = now(CLOCK_MONOTONIC)) < end;) {
                        struct pollfd p = { .fd = taskstats_exit_fd(ts), .events = POLLIN };

                        if (poll(&p, p.fd >= 0, (int) DIV_ROUND_UP(end - t, USEC_PER_MSEC)) < 0 && errno != EINTR)
                                return log_error_errno(errno, "poll() failed: %m"), 1;
                        if (p.fd >= 0 && (p.revents & POLLIN)) {
                                r = taskstats_drain_exits(ts, on_exit_record, tracked);
                                if (r == -ENOBUFS)
                                        log_warning("Exit records were lost.");
                                else if (r < 0)
                                        return log_error_errno(r, "Failed to read exit records: %m"), 1;
                        }
                }
        }
        return 0;
}
