/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * limiter-policy.h on synthetic sample sequences: a few processes whose behaviour is set per
 * interval (CPU use, storage I/O, waits), cumulated into counters as the kernel would, sampled
 * every MonitorIntervalSec= and fed to the policy; the decisions are applied the way the daemon
 * will (the process's class changes) unless observe-only.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "alloc-util.h"
#include "limiter-policy.h"
#include "tests.h"

#define MAX_PROCS 1000
#define MB 1000000.0

typedef struct Proc {
        pid_t pid;
        uint64_t start_time_ticks;
        usec_t born;
        bool alive;
        LimiterClass class;
        /* cumulative, as taskstats has them */
        double cpu, io_bytes, io_count, cpu_delay, blkio_delay;
        /* behaviour this interval: percent of a CPU, per second, percent of wall time */
        double b_cpu, b_io_bytes, b_io_count, b_cpu_delay, b_blkio_delay;
} Proc;

typedef struct Sim {
        LimiterPolicy *policy;
        Proc procs[MAX_PROCS];
        size_t n;
        usec_t now;
        bool delays;
        LimiterPressure pressure;
        LimiterDecision *d;
        int n_d;
} Sim;

static Sim *sim_new(const LimiterParams *params) {
        Sim *s = new0(Sim, 1);

        ck_assert_ptr_nonnull(s);
        ck_assert_int_eq(limiter_policy_new(params ?: &LIMITER_PARAMS_DEFAULT, &s->policy), 0);
        s->now = 1000 * USEC_PER_SEC;
        return s;
}

static void sim_free(Sim *s) {
        limiter_policy_free(s->policy);
        free(s->d);
        free(s);
}

static Proc *sim_spawn(Sim *s, pid_t pid) {
        Proc *p = &s->procs[s->n++];

        *p = (Proc) {
                .pid = pid,
                .start_time_ticks = s->now / 10000, /* ticks of 10 ms */
                .born = s->now,
                .alive = true,
        };
        return p;
}

static void behave(Proc *p, double cpu, double io_bytes, double io_count, double cpu_delay, double blkio_delay) {
        p->b_cpu = cpu;
        p->b_io_bytes = io_bytes;
        p->b_io_count = io_count;
        p->b_cpu_delay = cpu_delay;
        p->b_blkio_delay = blkio_delay;
}

static const LimiterDecision *decision(const Sim *s, pid_t pid) {
        for (int i = 0; i < s->n_d; i++)
                if (s->d[i].pid == pid)
                        return &s->d[i];
        return NULL;
}

/* Advances one interval, samples every live process, steps the policy, applies what it says. */
static int sim_interval(Sim *s) {
        usec_t dt = limiter_policy_get_params(s->policy)->interval_usec;
        _cleanup_free_ LimiterSample *samples = new(LimiterSample, s->n);
        size_t n = 0;

        ck_assert_ptr_nonnull(samples);
        s->now += dt;
        for (size_t i = 0; i < s->n; i++) {
                Proc *p = &s->procs[i];
                double sec = (double) dt / USEC_PER_SEC;

                if (!p->alive)
                        continue;
                p->cpu += p->b_cpu / 100.0 * (double) dt;
                p->io_bytes += p->b_io_bytes * sec;
                p->io_count += p->b_io_count * sec;
                p->cpu_delay += p->b_cpu_delay / 100.0 * (double) dt;
                p->blkio_delay += p->b_blkio_delay / 100.0 * (double) dt;
                samples[n] = (LimiterSample) {
                        .pid = p->pid,
                        .start_time_ticks = p->start_time_ticks,
                        /* The daemon samples one process after the other. */
                        .timestamp_usec = s->now + n * 50,
                        .elapsed_usec = s->now - p->born,
                        .cpu_usec = (usec_t) p->cpu,
                        .io_bytes = (uint64_t) p->io_bytes,
                        .io_count = (uint64_t) p->io_count,
                        .have_delays = s->delays,
                        .cpu_delay_usec = s->delays ? (usec_t) p->cpu_delay : 0,
                        .blkio_delay_usec = s->delays ? (usec_t) p->blkio_delay : 0,
                        .class = p->class,
                };
                n++;
        }
        s->d = mfree(s->d);
        s->n_d = limiter_policy_step(s->policy, samples, n, &s->pressure, &s->d);
        ck_assert_int_ge(s->n_d, 0);
        for (int i = 0; i < s->n_d; i++) {
                const LimiterDecision *d = &s->d[i];

                if (getenv("TEST_LIMITER_DEBUG"))
                        fprintf(stderr, "t=%" PRIu64 "s pid %i %s %s %s cpu %.1f%% io %.0f B/s\n",
                                (s->now - 1000 * USEC_PER_SEC) / USEC_PER_SEC, (int) d->pid,
                                limiter_action_to_string(d->action), limiter_class_to_string(d->class),
                                limiter_reason_to_string(d->reason), d->cpu_percent, d->io_bytes_per_sec);
                ck_assert_int_eq(d->applied, !limiter_policy_get_params(s->policy)->observe_only);
                if (!d->applied)
                        continue;
                for (size_t j = 0; j < s->n; j++)
                        if (s->procs[j].alive && s->procs[j].pid == d->pid &&
                            s->procs[j].start_time_ticks == d->start_time_ticks)
                                s->procs[j].class = d->class;
        }
        return s->n_d;
}

/* The round in which the policy samples the processes spawned since the last one for the first
 * time: it has not observed them for an interval of their own yet and judges nobody. */
static void sim_first_round(Sim *s) {
        int n = sim_interval(s);

        ck_assert_msg(n == 0, "first round: %s %i %s (%s), cpu %.1f%%", limiter_action_to_string(s->d[0].action),
                      (int) s->d[0].pid, limiter_class_to_string(s->d[0].class),
                      limiter_reason_to_string(s->d[0].reason), s->d[0].cpu_percent);
}

static void assert_decision(const Sim *s, pid_t pid, LimiterAction action, LimiterClass class, LimiterReason reason) {
        const LimiterDecision *d = decision(s, pid);

        ck_assert_msg(d, "no decision for %i", (int) pid);
        ck_assert_msg(d->action == action && d->class == class && d->reason == reason,
                      "pid %i: %s %s %s, expected %s %s %s", (int) pid, limiter_action_to_string(d->action),
                      limiter_class_to_string(d->class), limiter_reason_to_string(d->reason),
                      limiter_action_to_string(action), limiter_class_to_string(class),
                      limiter_reason_to_string(reason));
}

static void assert_near(double actual, double expected) {
        ck_assert_msg(fabs(actual - expected) <= 0.02 * fabs(expected) + 0.5, "%f, expected %f", actual, expected);
}

/* The common start: PID 100 computes all the time, PID 200 computes 40% of the time and does some
 * I/O. Observed for an interval, the first is limited on suspicion (no delay accounting, no PSI). */
static Sim *sim_cpu_hog_limited(const LimiterParams *params, Proc **ret_hog, Proc **ret_other) {
        Sim *s = sim_new(params);
        Proc *hog = sim_spawn(s, 100), *other = sim_spawn(s, 200);

        behave(hog, 100, 0, 0, 0, 0);
        behave(other, 40, 0, 5, 0, 0);
        sim_first_round(s);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_CPU_LIMITED, LIMITER_REASON_CPU_HOG);
        ck_assert_int_eq(decision(s, 100)->applied, !(params && params->observe_only));
        *ret_hog = hog;
        *ret_other = other;
        return s;
}

/* §4, §5.1.2: a process computing all the time starves one that alternates; it is limited, the
 * other's CPU use grows, the limit stays; when the other stops wanting the CPU, it comes off. */
START_TEST(test_cpu_hog_confirmed) {
        Sim *s = sim_new(NULL);
        Proc *hog = sim_spawn(s, 100), *victim = sim_spawn(s, 200);

        behave(hog, 100, 0, 0, 0, 0);
        behave(victim, 40, 0, 5, 0, 0);
        sim_first_round(s);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_CPU_LIMITED, LIMITER_REASON_CPU_HOG);
        const LimiterDecision *d = decision(s, 100);
        assert_near(d->cpu_percent, 100);
        assert_near(d->cpu_percent_lifetime, 100);
        ck_assert_uint_eq(d->before.n, 1);
        assert_near(d->before.cpu_percent, 40);
        ck_assert(isnan(d->before.cpu_delay_percent)); /* no delay accounting */
        ck_assert(isnan(d->before.psi_some_avg10));
        ck_assert_int_eq(hog->class, LIMITER_CPU_LIMITED);

        /* cpu.weight 1: the other gets nearly all it wants. */
        behave(hog, 60, 0, 0, 0, 0);
        behave(victim, 90, 0, 5, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_KEEP, LIMITER_CPU_LIMITED, LIMITER_REASON_IMPROVED);
        d = decision(s, 100);
        assert_near(d->before.cpu_percent, 40);
        assert_near(d->after.cpu_percent, 90);
        ck_assert_uint_eq(d->limited_usec, 3 * USEC_PER_SEC);

        /* Nothing to say while it lasts. */
        for (int i = 0; i < 5; i++)
                ck_assert_int_eq(sim_interval(s), 0);
        ck_assert_int_eq(hog->class, LIMITER_CPU_LIMITED);

        /* The other sleeps now: nobody to protect. */
        behave(hog, 100, 0, 0, 0, 0);
        behave(victim, 0, 0, 0, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_CONTENTION_ENDED);
        d = decision(s, 100);
        assert_near(d->after.cpu_percent, 0);
        ck_assert_uint_eq(d->limited_usec, 21 * USEC_PER_SEC);
        ck_assert_int_eq(hog->class, LIMITER_UNLIMITED);

        /* And it is not limited again while the other sleeps. */
        for (int i = 0; i < 5; i++)
                ck_assert_int_eq(sim_interval(s), 0);
        sim_free(s);
}
END_TEST

/* §4 Fig. 5, §5.1.1: a writer hogs the disk; limited to 5 MB/s the other's CPU use goes up; when
 * the writer stops writing, its limit is lifted. */
START_TEST(test_io_hog_released_at_io_zero) {
        Sim *s = sim_new(NULL);
        Proc *dd = sim_spawn(s, 100), *other = sim_spawn(s, 200);

        behave(dd, 10, 50 * MB, 50, 0, 0);
        behave(other, 20, 1 * MB, 10, 0, 0);
        sim_first_round(s);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_IO_LIMITED, LIMITER_REASON_IO_HOG);
        const LimiterDecision *d = decision(s, 100);
        assert_near(d->io_bytes_per_sec, 50 * MB);
        assert_near(d->before.io_bytes_per_sec, 1 * MB);

        /* The other takes up the disk the hog gave up (else the limit would idle it). */
        behave(dd, 2, 5 * MB, 5, 0, 0);
        behave(other, 70, 45 * MB, 40, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_KEEP, LIMITER_IO_LIMITED, LIMITER_REASON_IMPROVED);
        assert_near(decision(s, 100)->after.io_count_per_sec, 40);

        ck_assert_int_eq(sim_interval(s), 0);

        behave(dd, 1, 0, 0, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_IO_COUNT_ZERO);
        d = decision(s, 100);
        assert_near(d->io_bytes_per_sec_interval, 0);
        ck_assert_int_eq(dd->class, LIMITER_UNLIMITED);
        sim_free(s);
}
END_TEST

/* Start-up: a busy loop (PID 100) and a process computing 100 ms of every 150 ms (PID 200) start
 * together on one CPU and are registered at once. Over their first second they shared the CPU by
 * chance, the interpreter's start-up counting: 47 % and 55 %. From then on the loop gets 67 % and
 * the other 33 %. Judged by its rate since its start, the other looked like the hog and was
 * limited, and the loop's progress then "confirmed" that limit. Judged only after an interval
 * observed, over that interval, the loop is limited and the other never. */
START_TEST(test_startup_not_judged) {
        LimiterParams params = LIMITER_PARAMS_DEFAULT;
        const LimiterDecision *d;

        params.interval_usec = USEC_PER_SEC;
        params.window_usec = 3 * USEC_PER_SEC;
        Sim *s = sim_new(&params);
        Proc *hog = sim_spawn(s, 100), *victim = sim_spawn(s, 200);

        behave(hog, 47, 0, 0, 0, 0);
        behave(victim, 55, 0, 0, 0, 0);
        sim_first_round(s);
        ck_assert_int_eq(victim->class, LIMITER_UNLIMITED);

        behave(hog, 67, 0, 0, 0, 0);
        behave(victim, 33, 0, 0, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_CPU_LIMITED, LIMITER_REASON_CPU_HOG);
        d = decision(s, 100);
        /* Over the interval observed, not since its start (57 %). */
        assert_near(d->cpu_percent, 67);
        assert_near(d->cpu_percent_lifetime, 57);
        assert_near(d->before.cpu_percent, 33);

        /* cpu.weight 1: the other gets the 67 % it wants; the limit is confirmed and stays. */
        behave(hog, 33, 0, 0, 0, 0);
        behave(victim, 67, 0, 0, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_KEEP, LIMITER_CPU_LIMITED, LIMITER_REASON_IMPROVED);
        for (int i = 0; i < 10; i++)
                ck_assert_int_eq(sim_interval(s), 0);
        ck_assert_int_eq(hog->class, LIMITER_CPU_LIMITED);
        ck_assert_int_eq(victim->class, LIMITER_UNLIMITED);
        sim_free(s);
}
END_TEST

/* A process just registered is nobody's victim yet: a loop alone is not limited in the round in
 * which a newcomer is first sampled (its lifetime rate says 40 %), but in the next one, when the
 * newcomer was observed wanting the CPU for an interval. */
START_TEST(test_unobserved_not_a_victim) {
        Sim *s = sim_new(NULL);
        Proc *hog = sim_spawn(s, 100);

        behave(hog, 100, 0, 0, 0, 0);
        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(sim_interval(s), 0);

        Proc *other = sim_spawn(s, 200);
        behave(other, 40, 0, 5, 0, 0);
        sim_first_round(s);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_CPU_LIMITED, LIMITER_REASON_CPU_HOG);
        ck_assert_uint_eq(decision(s, 100)->before.n, 1);
        ck_assert_int_eq(other->class, LIMITER_UNLIMITED);
        sim_free(s);
}
END_TEST

/* A limit that does not help comes off after the window, and is not tried again for the hold-off. */
START_TEST(test_no_improvement) {
        Proc *hog, *other;
        Sim *s = sim_cpu_hog_limited(NULL, &hog, &other);
        const LimiterDecision *d;
        int i;


        /* The other's work does not change: the two did not compete. Three intervals (9 s) are still
         * within the window; the fourth (12 s) is past it. */
        behave(hog, 95, 0, 0, 0, 0);
        for (i = 0; i < 3; i++)
                ck_assert_int_eq(sim_interval(s), 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_NO_IMPROVEMENT);
        d = decision(s, 100);
        ck_assert_uint_eq(d->limited_usec, 12 * USEC_PER_SEC);
        assert_near(d->before.cpu_percent, 40);
        assert_near(d->after.cpu_percent, 40);

        /* Hold-off 30 s: nine intervals (27 s) quiet, the tenth (30 s) tries again. */
        for (i = 0; i < 9; i++)
                ck_assert_int_eq(sim_interval(s), 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_CPU_LIMITED, LIMITER_REASON_CPU_HOG);
        sim_free(s);
}
END_TEST

/* With delay accounting, the others' wait decides: a limit where they wait, none where they do not
 * (the paper would have tried), and confirmation when their wait shrinks. */
START_TEST(test_direct_signal) {
        Sim *s = sim_new(NULL);
        Proc *hog = sim_spawn(s, 100), *other = sim_spawn(s, 200);

        s->delays = true;
        behave(hog, 100, 0, 0, 0, 0);
        behave(other, 40, 0, 0, 0, 0); /* it gets what it wants: there are two CPUs */
        for (int i = 0; i < 5; i++)
                ck_assert_int_eq(sim_interval(s), 0);

        /* Now it waits 600 ms of every second: 3 s of that in the window (10-13 s) is over 10%. */
        behave(other, 40, 0, 0, 60, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_CPU_LIMITED, LIMITER_REASON_CPU_HOG);
        const LimiterDecision *d = decision(s, 100);
        ck_assert_msg(d->before.cpu_delay_percent >= 10 && d->before.cpu_delay_percent <= 18, "%f",
                      d->before.cpu_delay_percent);
        assert_near(d->after.cpu_delay_percent, 60);
        assert_near(d->before.blkio_delay_percent, 0);
        sim_free(s);
}
END_TEST

START_TEST(test_direct_signal_limit_and_confirm) {
        Sim *s = sim_new(NULL);
        Proc *hog = sim_spawn(s, 100), *other = sim_spawn(s, 200);

        s->delays = true;
        behave(hog, 100, 0, 0, 0, 0);
        behave(other, 40, 0, 0, 60, 0);
        sim_first_round(s);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_CPU_LIMITED, LIMITER_REASON_CPU_HOG);
        assert_near(decision(s, 100)->before.cpu_delay_percent, 60);

        /* Its wait shrinks but it does no more work (it was waiting for something else too). */
        behave(hog, 60, 0, 0, 0, 0);
        behave(other, 40, 0, 0, 5, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_KEEP, LIMITER_CPU_LIMITED, LIMITER_REASON_IMPROVED);
        assert_near(decision(s, 100)->after.cpu_delay_percent, 5);
        sim_free(s);
}
END_TEST

/* The slice's PSI as the signal: pressure, a limit; no pressure, none. */
START_TEST(test_psi_signal) {
        Sim *s = sim_new(NULL);
        Proc *hog = sim_spawn(s, 100), *other = sim_spawn(s, 200);

        s->pressure = (LimiterPressure) { .valid = true, .cpu_some_avg10 = 0.5, .io_some_avg10 = 0 };
        behave(hog, 100, 0, 0, 0, 0);
        behave(other, 40, 0, 0, 0, 0);
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(sim_interval(s), 0);

        s->pressure.cpu_some_avg10 = 35.0;
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_CPU_LIMITED, LIMITER_REASON_CPU_HOG);
        assert_near(decision(s, 100)->before.psi_some_avg10, 35.0);

        /* Pressure falls by more than 10%: confirmed, although the other does no more work. */
        s->pressure.cpu_some_avg10 = 12.0;
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_KEEP, LIMITER_CPU_LIMITED, LIMITER_REASON_IMPROVED);
        assert_near(decision(s, 100)->after.psi_some_avg10, 12.0);
        sim_free(s);
}
END_TEST

/* A hog alone has nobody to starve: no limit, with or without delay accounting. */
START_TEST(test_alone) {
        Sim *s = sim_new(NULL);
        Proc *hog = sim_spawn(s, 100), *idle = sim_spawn(s, 200);

        behave(hog, 100, 80 * MB, 100, 0, 0);
        behave(idle, 0, 0, 0, 0, 0);
        for (int i = 0; i < 10; i++)
                ck_assert_int_eq(sim_interval(s), 0);
        sim_free(s);
}
END_TEST

/* A limited process that turns to other work is released: CPU-limited and now writing, CPU-limited
 * and now sleeping, I/O-limited and now computing. */
START_TEST(test_class_changed) {
        Proc *hog, *other;
        Sim *s = sim_cpu_hog_limited(NULL, &hog, &other);

        behave(other, 90, 0, 5, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_KEEP, LIMITER_CPU_LIMITED, LIMITER_REASON_IMPROVED);

        behave(hog, 5, 40 * MB, 40, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_CLASS_CHANGED);
        assert_near(decision(s, 100)->io_bytes_per_sec_interval, 40 * MB);

        /* Again, and this time it goes to sleep. */
        behave(hog, 100, 0, 0, 0, 0);
        behave(other, 40, 0, 5, 0, 0);
        for (int i = 0; i < 4 && decision(s, 100)->action != LIMITER_LIMIT; i++)
                (void) sim_interval(s);
        ck_assert_int_eq(hog->class, LIMITER_CPU_LIMITED);
        behave(hog, 2, 0, 0, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_CLASS_CHANGED);

        /* An I/O hog that starts to compute. */
        Proc *dd = sim_spawn(s, 300);
        behave(hog, 0, 0, 0, 0, 0);
        behave(dd, 5, 60 * MB, 60, 0, 0);
        behave(other, 20, 1 * MB, 10, 0, 0);
        sim_first_round(s);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 300, LIMITER_LIMIT, LIMITER_IO_LIMITED, LIMITER_REASON_IO_HOG);
        behave(dd, 95, 1 * MB, 1, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 300, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_CLASS_CHANGED);
        sim_free(s);
}
END_TEST

/* A PID reused by another process (another start time) is a new process: it does not inherit the
 * limit, the hold-off or the pending confirmation, and is released if it turns up in a limited
 * cgroup (a forked child does too). */
START_TEST(test_pid_reuse) {
        Proc *hog, *other;
        Sim *s = sim_cpu_hog_limited(NULL, &hog, &other);
        LimiterClass c;

        uint64_t old_start = hog->start_time_ticks;
        ck_assert_int_eq(limiter_policy_get_class(s->policy, 100, old_start, &c), 0);
        ck_assert_int_eq(c, LIMITER_CPU_LIMITED);

        /* It exits; PID 100 goes to a new process, which the daemon finds in cpu-limited (the
         * cgroup of its parent, say). */
        hog->alive = false;
        Proc *reuse = sim_spawn(s, 100);
        reuse->class = LIMITER_CPU_LIMITED;
        ck_assert_uint_ne(reuse->start_time_ticks, old_start);
        behave(reuse, 100, 0, 0, 0, 0);
        behave(other, 90, 0, 5, 0, 0); /* the other improves, but not thanks to the new process */
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_NOT_LIMITED_BY_POLICY);
        ck_assert_uint_eq(decision(s, 100)->start_time_ticks, reuse->start_time_ticks);
        ck_assert_int_eq(limiter_policy_get_class(s->policy, 100, old_start, &c), -ESRCH);
        ck_assert_int_eq(limiter_policy_get_class(s->policy, 100, reuse->start_time_ticks, &c), 0);
        ck_assert_int_eq(c, LIMITER_UNLIMITED);
        ck_assert_int_eq(reuse->class, LIMITER_UNLIMITED);

        /* It is a hog in its own right and the other is busy: judged afresh once observed for an
         * interval (this round's), limited, never confirmed by the old limit. */
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_CPU_LIMITED, LIMITER_REASON_CPU_HOG);
        sim_free(s);
}
END_TEST

START_TEST(test_pid_reuse_no_holdoff) {
        Sim *s = sim_new(NULL);
        Proc *hog = sim_spawn(s, 100), *other = sim_spawn(s, 200);

        behave(hog, 100, 0, 0, 0, 0);
        behave(other, 40, 0, 5, 0, 0);
        sim_first_round(s);
        for (int i = 0; i < 5; i++)
                (void) sim_interval(s);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_NO_IMPROVEMENT);

        /* The old process is in its hold-off; a new one with its PID is not: limited once observed. */
        hog->alive = false;
        Proc *reuse = sim_spawn(s, 100);
        behave(reuse, 100, 0, 0, 0, 0);
        sim_first_round(s);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_CPU_LIMITED, LIMITER_REASON_CPU_HOG);
        sim_free(s);
}
END_TEST

/* Observe-only: the same decisions, marked not applied; nothing moves, and the policy keeps what it
 * would have done to itself rather than re-deciding it every interval. */
START_TEST(test_observe_only) {
        LimiterParams params = LIMITER_PARAMS_DEFAULT;
        LimiterClass c;

        Proc *hog, *other;

        params.observe_only = true;
        Sim *s = sim_cpu_hog_limited(&params, &hog, &other);
        ck_assert_int_eq(hog->class, LIMITER_UNLIMITED);
        ck_assert_int_eq(limiter_policy_get_class(s->policy, 100, hog->start_time_ticks, &c), 0);
        ck_assert_int_eq(c, LIMITER_CPU_LIMITED);

        /* Nothing changed for real, so nothing improves: released after the window. */
        ck_assert_int_eq(sim_interval(s), 0);
        ck_assert_int_eq(sim_interval(s), 0);
        ck_assert_int_eq(sim_interval(s), 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_NO_IMPROVEMENT);
        ck_assert(!decision(s, 100)->applied);
        sim_free(s);
}
END_TEST

/* Restart: the new instance adopts the limits it finds and does not release them. */
START_TEST(test_adopt) {
        Sim *s = sim_new(NULL);
        Proc *hog = sim_spawn(s, 100), *other = sim_spawn(s, 200);

        hog->class = LIMITER_CPU_LIMITED;
        ck_assert_int_eq(limiter_policy_adopt(s->policy, 100, hog->start_time_ticks, LIMITER_UNLIMITED), -EINVAL);
        ck_assert_int_eq(limiter_policy_adopt(s->policy, 0, 1, LIMITER_CPU_LIMITED), -EINVAL);
        ck_assert_int_eq(limiter_policy_adopt(s->policy, 100, hog->start_time_ticks, LIMITER_CPU_LIMITED), 0);
        ck_assert_uint_eq(limiter_policy_n_processes(s->policy), 1);

        behave(hog, 60, 0, 0, 0, 0);
        behave(other, 90, 0, 5, 0, 0);
        for (int i = 0; i < 4; i++)
                ck_assert_int_eq(sim_interval(s), 0);
        ck_assert_uint_eq(limiter_policy_n_processes(s->policy), 2);

        behave(other, 0, 0, 0, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_CONTENTION_ENDED);
        sim_free(s);
}
END_TEST

/* The daemon could not move the process (or someone moved it back): the policy accepts that. */
START_TEST(test_move_failed) {
        Proc *hog, *other;
        Sim *s = sim_cpu_hog_limited(NULL, &hog, &other);
        LimiterClass c;

        hog->class = LIMITER_UNLIMITED; /* undo */
        behave(other, 90, 0, 5, 0, 0);
        /* No confirmation of a limit that is not there; the hog is judged again from scratch. */
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_CPU_LIMITED, LIMITER_REASON_CPU_HOG);
        ck_assert_int_eq(limiter_policy_get_class(s->policy, 100, hog->start_time_ticks, &c), 0);
        ck_assert_int_eq(c, LIMITER_CPU_LIMITED);
        sim_free(s);
}
END_TEST

/* The window: a process that idled for a long time and starts computing is a hog once the history
 * covers the window, although its lifetime average (the paper's eq. 3) is low. */
START_TEST(test_window) {
        Sim *s = sim_new(NULL);
        Proc *late = sim_spawn(s, 100), *other = sim_spawn(s, 200);
        const LimiterDecision *d = NULL;
        int i;

        behave(late, 0, 0, 0, 0, 0);
        behave(other, 40, 0, 5, 0, 0);
        for (i = 0; i < 30; i++) /* 90 s */
                ck_assert_int_eq(sim_interval(s), 0);
        behave(late, 100, 0, 0, 0, 0);
        for (i = 0; i < 5 && !(d = decision(s, 100)); i++)
                (void) sim_interval(s);
        ck_assert_ptr_nonnull(d);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_CPU_LIMITED, LIMITER_REASON_CPU_HOG);
        /* Over 12 s (the newest point at least 10 s old) of which 9 s were busy... or all 12. */
        ck_assert_msg(d->cpu_percent >= 50 && d->cpu_percent <= 100.5, "%f", d->cpu_percent);
        ck_assert_msg(d->cpu_percent_lifetime < 30, "%f", d->cpu_percent_lifetime);
        assert_near(d->cpu_percent_interval, 100);
        sim_free(s);
}
END_TEST

START_TEST(test_bad_input) {
        _cleanup_(limiter_policy_freep) LimiterPolicy *p = NULL;
        LimiterDecision *d = NULL;
        LimiterParams params = LIMITER_PARAMS_DEFAULT;
        LimiterSample s[2] = {
                { .pid = 1, .start_time_ticks = 5, .timestamp_usec = 10 * USEC_PER_SEC, .elapsed_usec = USEC_PER_SEC },
                { .pid = 1, .start_time_ticks = 5, .timestamp_usec = 10 * USEC_PER_SEC, .elapsed_usec = USEC_PER_SEC },
        };

        ck_assert_int_eq(limiter_policy_new(&params, &p), 0);
        ck_assert_int_eq(limiter_policy_step(p, s, 2, NULL, &d), -EINVAL); /* one PID twice */
        ck_assert_uint_eq(limiter_policy_n_processes(p), 0);
        ck_assert_int_eq(limiter_policy_step(p, s, 1, NULL, &d), 0);
        ck_assert_ptr_null(d);
        ck_assert_uint_eq(limiter_policy_n_processes(p), 1);
        s[0].timestamp_usec -= 1; /* back in time */
        ck_assert_int_eq(limiter_policy_step(p, s, 1, NULL, &d), -EINVAL);
        ck_assert_uint_eq(limiter_policy_n_processes(p), 1);
        s[0].timestamp_usec += 1;
        s[0].class = _LIMITER_CLASS_MAX;
        ck_assert_int_eq(limiter_policy_step(p, s, 1, NULL, &d), -EINVAL);
        s[0].class = LIMITER_UNLIMITED;
        s[0].pid = 0;
        ck_assert_int_eq(limiter_policy_step(p, s, 1, NULL, &d), -EINVAL);
        /* No samples: everything is forgotten. */
        ck_assert_int_eq(limiter_policy_step(p, NULL, 0, NULL, &d), 0);
        ck_assert_uint_eq(limiter_policy_n_processes(p), 0);

        ck_assert_int_eq(limiter_params_validate(&params), 0);
        params.interval_usec = 0;
        ck_assert_int_eq(limiter_params_validate(&params), -EINVAL);
        params = LIMITER_PARAMS_DEFAULT;
        params.window_usec = USEC_PER_SEC; /* shorter than the interval */
        ck_assert_int_eq(limiter_params_validate(&params), -EINVAL);
        params = LIMITER_PARAMS_DEFAULT;
        params.window_usec = 15 * params.interval_usec; /* more than the history holds */
        ck_assert_int_eq(limiter_params_validate(&params), -EINVAL);
        params.window_usec = 14 * params.interval_usec;
        ck_assert_int_eq(limiter_params_validate(&params), 0);
        params = LIMITER_PARAMS_DEFAULT;
        params.cpu_hog_percent = NAN;
        ck_assert_int_eq(limiter_params_validate(&params), -EINVAL);
        params = LIMITER_PARAMS_DEFAULT;
        params.improvement_percent = -1;
        ck_assert_int_eq(limiter_params_validate(&params), -EINVAL);
        params = LIMITER_PARAMS_DEFAULT;
        params.cpu_limit_weight = 0;
        ck_assert_int_eq(limiter_params_validate(&params), -EINVAL);
        params.cpu_limit_weight = 10001;
        ck_assert_int_eq(limiter_params_validate(&params), -EINVAL);
        ck_assert_int_eq(limiter_policy_set_params(p, &params), -EINVAL);
        ck_assert_uint_eq(limiter_policy_get_params(p)->cpu_limit_weight, 1);
        params.cpu_limit_weight = 2;
        ck_assert_int_eq(limiter_policy_set_params(p, &params), 0);
        ck_assert_uint_eq(limiter_policy_get_params(p)->cpu_limit_weight, 2);
        ck_assert_ptr_null(limiter_policy_free(NULL));
}
END_TEST

START_TEST(test_defaults_and_strings) {
        const LimiterParams p = LIMITER_PARAMS_DEFAULT;

        /* The paper's numbers. */
        ck_assert_uint_eq(p.interval_usec, 3 * USEC_PER_SEC);
        ck_assert_uint_eq(p.window_usec, 10 * USEC_PER_SEC);
        ck_assert_uint_eq(p.io_limit_bytes_per_sec, 5000000);
        ck_assert_uint_eq(p.cpu_limit_weight, 1);
        ck_assert(!p.observe_only);

        for (LimiterClass c = 0; c < _LIMITER_CLASS_MAX; c++)
                ck_assert_int_eq(limiter_class_from_string(limiter_class_to_string(c)), c);
        ck_assert_str_eq(limiter_class_to_string(LIMITER_IO_LIMITED), "io-limited");
        ck_assert_int_eq(limiter_class_from_string("limited"), _LIMITER_CLASS_INVALID);
        ck_assert_int_eq(limiter_class_from_string(NULL), _LIMITER_CLASS_INVALID);
        ck_assert_ptr_null(limiter_class_to_string(_LIMITER_CLASS_MAX));
        ck_assert_ptr_null(limiter_class_to_string(-1));
        for (LimiterReason r = 0; r < _LIMITER_REASON_MAX; r++)
                ck_assert_ptr_nonnull(limiter_reason_to_string(r));
        ck_assert_str_eq(limiter_reason_to_string(LIMITER_REASON_NO_IMPROVEMENT), "confirmed-no-improvement");
        ck_assert_str_eq(limiter_reason_to_string(LIMITER_REASON_IO_COUNT_ZERO), "io-count-dropped-to-0");
        ck_assert_str_eq(limiter_reason_to_string(LIMITER_REASON_CONTENTION_ENDED), "contention-ended");
        ck_assert_str_eq(limiter_reason_to_string(LIMITER_REASON_CLASS_CHANGED), "class-changed");
        ck_assert_ptr_null(limiter_reason_to_string(_LIMITER_REASON_MAX));
        for (LimiterAction a = 0; a < _LIMITER_ACTION_MAX; a++)
                ck_assert_ptr_nonnull(limiter_action_to_string(a));
}
END_TEST

/* Counts the decisions of one kind over n intervals. */
static unsigned run_count(Sim *s, unsigned n, LimiterAction action) {
        unsigned k = 0;

        for (unsigned i = 0; i < n; i++) {
                (void) sim_interval(s);
                for (int j = 0; j < s->n_d; j++)
                        k += s->d[j].action == action;
        }
        return k;
}

/* The paper's writer next to one that writes as well, both waiting for the disk: a limit. */
static Sim *sim_io_hog_limited(Proc **ret_hog, Proc **ret_other) {
        Sim *s = sim_new(NULL);
        Proc *hog = sim_spawn(s, 100), *other = sim_spawn(s, 200);

        s->delays = true;
        behave(hog, 10, 35 * MB, 35, 0, 60);
        behave(other, 5, 15 * MB, 15, 0, 60);
        sim_first_round(s);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_IO_LIMITED, LIMITER_REASON_IO_HOG);
        assert_near(decision(s, 100)->total_before, 50 * MB);
        *ret_hog = hog;
        *ret_other = other;
        return s;
}

/* The others stop right after the limit, before any confirmation: the limit comes off at the
 * next round (one interval), not a window later as confirmed-no-improvement; and is placed again
 * at the first round in which they write again. */
START_TEST(test_contention_ended_unconfirmed) {
        Proc *hog, *other;
        Sim *s = sim_io_hog_limited(&hog, &other);
        const LimiterDecision *d;

        behave(hog, 2, 5 * MB, 5, 0, 90);
        behave(other, 1, 0, 0, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_CONTENTION_ENDED);
        d = decision(s, 100);
        ck_assert_uint_eq(d->limited_usec, 3 * USEC_PER_SEC);
        assert_near(d->after.io_bytes_per_sec, 0);
        ck_assert_uint_eq(d->holdoff_usec, 0);

        /* Alone, it is not limited, however much it writes. */
        behave(hog, 10, 50 * MB, 50, 0, 60);
        ck_assert_int_eq(run_count(s, 5, LIMITER_LIMIT), 0);

        /* The other writes again and waits: limited in the same round. */
        behave(hog, 10, 35 * MB, 35, 0, 60);
        behave(other, 5, 15 * MB, 15, 0, 60);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_IO_LIMITED, LIMITER_REASON_IO_HOG);
        sim_free(s);
}
END_TEST

/* A confirmed limit (the other takes up the disk the hog gave up) comes off in the round after the
 * other stops, and is placed again in the round after it starts again; twice over, no hold-off. */
START_TEST(test_contention_ended_and_back) {
        Proc *hog, *other;
        Sim *s = sim_io_hog_limited(&hog, &other);

        for (int cycle = 0; cycle < 2; cycle++) {
                if (cycle > 0) {
                        /* Alone for a window: not limited; then the other writes again. */
                        behave(hog, 10, 50 * MB, 50, 0, 60);
                        ck_assert_int_eq(run_count(s, 4, LIMITER_LIMIT), 0);
                        behave(hog, 10, 35 * MB, 35, 0, 60);
                        behave(other, 5, 15 * MB, 15, 0, 60);
                        ck_assert_int_eq(sim_interval(s), 1);
                        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_IO_LIMITED, LIMITER_REASON_IO_HOG);
                }
                behave(hog, 2, 5 * MB, 5, 0, 90);
                behave(other, 12, 44 * MB, 44, 0, 20);
                ck_assert_int_eq(sim_interval(s), 1);
                assert_decision(s, 100, LIMITER_KEEP, LIMITER_IO_LIMITED, LIMITER_REASON_IMPROVED);
                assert_near(decision(s, 100)->total_after, 49 * MB);
                ck_assert_int_eq(run_count(s, 3, LIMITER_RELEASE), 0);

                /* The other computes now, no I/O: released at the next round. */
                behave(other, 100, 0, 0, 0, 0);
                ck_assert_int_eq(sim_interval(s), 1);
                assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_CONTENTION_ENDED);
                ck_assert_int_eq(hog->class, LIMITER_UNLIMITED);
        }
        sim_free(s);
}
END_TEST

/* Noise in the others' use around the "idle" threshold neither releases nor re-limits over and
 * over: limits need twice what releases them (I/O 100 kB/s vs 200 kB/s; CPU 10 % vs 20 %). */
START_TEST(test_no_flapping_on_noise) {
        Proc *hog, *other;
        Sim *s = sim_cpu_hog_limited(NULL, &hog, &other);
        unsigned releases = 0, limits = 0;

        behave(hog, 60, 0, 0, 0, 0);
        behave(other, 90, 0, 5, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_KEEP, LIMITER_CPU_LIMITED, LIMITER_REASON_IMPROVED);

        /* The other's demand swings 8 % - 18 % - 12 % of a CPU: one release, at its first dip. */
        behave(hog, 100, 0, 0, 0, 0);
        for (int i = 0; i < 30; i++) {
                behave(other, i % 3 == 0 ? 8 : i % 3 == 1 ? 18 : 12, 0, 1, 0, 0);
                (void) sim_interval(s);
                for (int j = 0; j < s->n_d; j++) {
                        releases += s->d[j].action == LIMITER_RELEASE;
                        limits += s->d[j].action == LIMITER_LIMIT;
                }
        }
        ck_assert_uint_eq(releases, 1);
        ck_assert_uint_eq(limits, 0);
        sim_free(s);

        /* The same for I/O, with the other's writes swinging 60 - 190 kB/s around a limit placed
         * while it wrote 15 MB/s: released once, not limited again. */
        s = sim_io_hog_limited(&hog, &other);
        releases = limits = 0;
        for (int i = 0; i < 30; i++) {
                behave(hog, 10, i == 0 ? 5 * MB : 50 * MB, 50, 0, 0);
                behave(other, 1, i % 2 == 0 ? 60000 : 190000, 2, 0, 0);
                (void) sim_interval(s);
                for (int j = 0; j < s->n_d; j++) {
                        releases += s->d[j].action == LIMITER_RELEASE;
                        limits += s->d[j].action == LIMITER_LIMIT;
                }
        }
        ck_assert_uint_eq(releases, 1);
        ck_assert_uint_eq(limits, 0);
        sim_free(s);
}
END_TEST

/* §5.1.1 on a disk that loses nothing to sharing (a token bucket): the other writes a third of the
 * time and computes the rest, so under the limit the disk stands mostly idle (15 + 5 of 50 MB/s).
 * The limit comes off after one interval and is not placed again for the hold-off, although the
 * others wait for the disk each time they write; 30 s, then 60 s. */
START_TEST(test_limit_idles_resource) {
        Proc *hog, *other;
        Sim *s = sim_io_hog_limited(&hog, &other);
        const LimiterDecision *d;
        unsigned n;

        behave(hog, 2, 5 * MB, 5, 0, 90);
        behave(other, 60, 15 * MB, 15, 0, 25);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_RESOURCE_IDLED);
        d = decision(s, 100);
        assert_near(d->total_before, 50 * MB);
        assert_near(d->total_after, 20 * MB);
        ck_assert_uint_eq(d->holdoff_usec, 30 * USEC_PER_SEC);

        /* Contention as before: nine rounds (27 s) without a limit, the tenth (30 s) limits. */
        behave(hog, 10, 35 * MB, 35, 0, 60);
        behave(other, 5, 15 * MB, 15, 0, 60);
        ck_assert_int_eq(run_count(s, 9, LIMITER_LIMIT), 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_IO_LIMITED, LIMITER_REASON_IO_HOG);

        behave(hog, 2, 5 * MB, 5, 0, 90);
        behave(other, 60, 15 * MB, 15, 0, 25);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_RESOURCE_IDLED);
        ck_assert_uint_eq(decision(s, 100)->holdoff_usec, 60 * USEC_PER_SEC);
        behave(hog, 10, 35 * MB, 35, 0, 60);
        behave(other, 5, 15 * MB, 15, 0, 60);
        n = run_count(s, 19, LIMITER_LIMIT);
        ck_assert_int_eq(n, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_IO_LIMITED, LIMITER_REASON_IO_HOG);
        sim_free(s);

        /* A hog that stops in the middle of an interval (2 of its 5 MB/s) left the disk idle by
         * itself: no hold-off for that; the next round releases it as io-count-dropped-to-0. */
        s = sim_io_hog_limited(&hog, &other);
        behave(hog, 1, 2 * MB, 2, 0, 40);
        behave(other, 60, 15 * MB, 15, 0, 25);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_KEEP, LIMITER_IO_LIMITED, LIMITER_REASON_IMPROVED);
        behave(hog, 0, 0, 0, 0, 0);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_RELEASE, LIMITER_UNLIMITED, LIMITER_REASON_IO_COUNT_ZERO);
        sim_free(s);

        /* The paper's rule alone (waste_percent=0): the limit stays. */
        LimiterParams params = LIMITER_PARAMS_DEFAULT;
        params.waste_percent = 0;
        s = sim_new(&params);
        hog = sim_spawn(s, 100);
        other = sim_spawn(s, 200);
        s->delays = true;
        behave(hog, 10, 35 * MB, 35, 0, 60);
        behave(other, 5, 15 * MB, 15, 0, 60);
        sim_first_round(s);
        ck_assert_int_eq(sim_interval(s), 1);
        behave(hog, 2, 5 * MB, 5, 0, 90);
        behave(other, 60, 15 * MB, 15, 0, 25);
        ck_assert_int_eq(run_count(s, 10, LIMITER_RELEASE), 0);
        ck_assert_int_eq(hog->class, LIMITER_IO_LIMITED);
        sim_free(s);
}
END_TEST

/* The paper's hard disk: two writers lose throughput to seeks (20 + 5 MB/s together), one alone
 * streams (5 + 40): the limit raises the total and stays. */
START_TEST(test_limit_on_seeking_disk_kept) {
        Sim *s = sim_new(NULL);
        Proc *hog = sim_spawn(s, 100), *other = sim_spawn(s, 200);

        s->delays = true;
        behave(hog, 10, 20 * MB, 20, 0, 80);
        behave(other, 5, 5 * MB, 5, 0, 80);
        sim_first_round(s);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_LIMIT, LIMITER_IO_LIMITED, LIMITER_REASON_IO_HOG);
        behave(hog, 2, 5 * MB, 5, 0, 95);
        behave(other, 20, 40 * MB, 40, 0, 30);
        ck_assert_int_eq(sim_interval(s), 1);
        assert_decision(s, 100, LIMITER_KEEP, LIMITER_IO_LIMITED, LIMITER_REASON_IMPROVED);
        ck_assert_int_eq(run_count(s, 10, LIMITER_RELEASE), 0);
        ck_assert_int_eq(hog->class, LIMITER_IO_LIMITED);
        sim_free(s);
}
END_TEST

/*
 * The paper's §5.1.1 and §5.1.2 in a fluid model of the test bed: one CPU, and a disk of 50 MB/s
 * that serves any number of writers with no loss (a token bucket: work-conserving, unlike the
 * paper's hard disk). Process 1 writes 100 MB per task (2 s alone) or computes 5 s per task;
 * process 2 writes 50 MB (1 s alone), then computes 2 s. Tasks count as the bench's worker counts
 * them (each phase half a task, by tenths). Ticks of 10 ms; the policy runs every 3 s on the
 * counters the kernel would have (no delay accounting, the scheduler's run delay), and its
 * decisions take effect at once. Modes: no manager, process 1 limited from the start (static),
 * the policy, and an oracle that limits process 1 exactly while process 2 writes (the best any
 * limiter can do on this disk; for §5.1.2 the same switch, which changes nothing there: the best
 * on the CPU is the limit kept on, "static").
 */
typedef enum ModelMode {
        MODEL_NONE,
        MODEL_STATIC,
        MODEL_POLICY,
        MODEL_ORACLE,
        _MODEL_MODE_MAX,
} ModelMode;

typedef struct ModelProc {
        bool computes_only; /* process 1 of §5.1.2 */
        bool alternates;    /* process 2: write, then compute */
        double phase_left;  /* MB to write or CPU seconds to compute in the current phase */
        bool computing;
        double tasks;
        double cpu_usec, io_bytes, io_count, run_delay_usec;
        LimiterClass class;
} ModelProc;

#define MODEL_DISK_MBPS 50.0
#define MODEL_TICK_USEC (10 * USEC_PER_MSEC)

static void model_phase_start(ModelProc *p) {
        if (p->computes_only)
                p->phase_left = 5.0;
        else if (!p->alternates)
                p->phase_left = 100.0;
        else
                p->phase_left = p->computing ? 2.0 : 50.0;
}

static void model_progress(ModelProc *p, double amount) {
        double total = p->computes_only ? 5.0 : !p->alternates ? 100.0 : p->computing ? 2.0 : 50.0;
        double share = p->alternates ? 0.5 : 1.0; /* of a task, per phase */

        /* The rest of a tick after a phase ends is lost (at most 10 ms a phase): it is in the
         * other phase's unit. */
        double step = MIN(amount, p->phase_left);

        p->phase_left -= step;
        p->tasks += share * step / total;
        if (p->phase_left <= 1e-9) {
                if (p->alternates)
                        p->computing = !p->computing;
                model_phase_start(p);
        }
}

/* Tasks of both processes after seconds; io: §5.1.1 (else §5.1.2). */
static double model_run(bool io, ModelMode mode, double seconds, unsigned *ret_limits) {
        _cleanup_(limiter_policy_freep) LimiterPolicy *policy = NULL;
        ModelProc p[2] = {
                { .computes_only = !io },
                { .alternates = true },
        };
        usec_t t0 = 1000 * USEC_PER_SEC, now = t0, next = t0 + 3 * USEC_PER_SEC;
        unsigned limits = 0;

        ck_assert_int_eq(limiter_policy_new(&LIMITER_PARAMS_DEFAULT, &policy), 0);
        for (int i = 0; i < 2; i++)
                model_phase_start(&p[i]);
        if (mode == MODEL_STATIC)
                p[0].class = io ? LIMITER_IO_LIMITED : LIMITER_CPU_LIMITED;

        while (now < t0 + (usec_t) (seconds * USEC_PER_SEC)) {
                double dt = (double) MODEL_TICK_USEC / USEC_PER_SEC;
                bool writes[2], runs[2];

                if (mode == MODEL_ORACLE)
                        p[0].class = !p[1].computing ? (io ? LIMITER_IO_LIMITED : LIMITER_CPU_LIMITED)
                                                     : LIMITER_UNLIMITED;
                for (int i = 0; i < 2; i++) {
                        writes[i] = !p[i].computes_only && !(p[i].alternates && p[i].computing);
                        runs[i] = !writes[i];
                }

                /* The disk: fair shares, a capped writer's rest to the other. */
                double cap0 = p[0].class == LIMITER_IO_LIMITED ? 5.0 : INFINITY, bw[2] = {};
                if (writes[0] && writes[1]) {
                        bw[0] = MIN(cap0, MODEL_DISK_MBPS / 2);
                        bw[1] = MODEL_DISK_MBPS - bw[0];
                } else if (writes[0])
                        bw[0] = MIN(cap0, MODEL_DISK_MBPS);
                else if (writes[1])
                        bw[1] = MODEL_DISK_MBPS;

                /* The CPU: by weight, 1 for cpu-limited, 100 otherwise. */
                double w0 = p[0].class == LIMITER_CPU_LIMITED ? 1.0 : 100.0, cpu[2] = {};
                if (runs[0] && runs[1]) {
                        cpu[0] = w0 / (w0 + 100.0);
                        cpu[1] = 1.0 - cpu[0];
                } else
                        for (int i = 0; i < 2; i++)
                                cpu[i] = runs[i] ? 1.0 : 0.0;

                for (int i = 0; i < 2; i++) {
                        p[i].io_bytes += bw[i] * MB * dt;
                        p[i].io_count += bw[i] * dt; /* 1 MB writes */
                        p[i].cpu_usec += (cpu[i] + (writes[i] ? 0.05 : 0.0)) * MODEL_TICK_USEC;
                        p[i].run_delay_usec += runs[i] ? (1.0 - cpu[i]) * MODEL_TICK_USEC : 0;
                        model_progress(&p[i], writes[i] ? bw[i] * dt : cpu[i] * dt);
                }
                now += MODEL_TICK_USEC;

                if (mode != MODEL_POLICY || now < next)
                        continue;
                next += 3 * USEC_PER_SEC;
                LimiterSample samples[2];
                for (int i = 0; i < 2; i++)
                        samples[i] = (LimiterSample) {
                                .pid = 100 + i,
                                .start_time_ticks = 1,
                                .timestamp_usec = now,
                                .elapsed_usec = now - t0,
                                .cpu_usec = (usec_t) p[i].cpu_usec,
                                .io_bytes = (uint64_t) p[i].io_bytes,
                                .io_count = (uint64_t) p[i].io_count,
                                .have_run_delay = true,
                                .run_delay_usec = (usec_t) p[i].run_delay_usec,
                                .class = p[i].class,
                        };
                _cleanup_free_ LimiterDecision *d = NULL;
                int n = limiter_policy_step(policy, samples, 2, NULL, &d);
                ck_assert_int_ge(n, 0);
                for (int k = 0; k < n; k++) {
                        p[d[k].pid - 100].class = d[k].class;
                        limits += d[k].action == LIMITER_LIMIT;
                }
        }
        if (ret_limits)
                *ret_limits = limits;
        return p[0].tasks + p[1].tasks;
}

START_TEST(test_work_conserving_model) {
        for (int io = 1; io >= 0; io--)
                for (int len = 0; len < 2; len++) {
                        double seconds = len == 0 ? 10 : 300, sum[_MODEL_MODE_MAX];
                        unsigned limits = 0;

                        for (ModelMode m = 0; m < _MODEL_MODE_MAX; m++)
                                sum[m] = model_run(io, m, seconds, m == MODEL_POLICY ? &limits : NULL);
                        printf("# model %s, %.0f s: tasks none %.2f, static %.2f (%.2f), policy %.2f (%.2f, %u limits), "
                               "oracle %.2f (%.2f)\n",
                               io ? "§5.1.1 io" : "§5.1.2 cpu", seconds, sum[MODEL_NONE], sum[MODEL_STATIC],
                               sum[MODEL_STATIC] / sum[MODEL_NONE], sum[MODEL_POLICY],
                               sum[MODEL_POLICY] / sum[MODEL_NONE], limits, sum[MODEL_ORACLE],
                               sum[MODEL_ORACLE] / sum[MODEL_NONE]);
                        if (io) {
                                /* The ceiling: (1/3) / (2.5/4) = 1.067; a limit kept on loses. */
                                ck_assert_msg(fabs(sum[MODEL_ORACLE] / sum[MODEL_NONE] - 1.067) < 0.05 || len == 0,
                                              "oracle %.3f", sum[MODEL_ORACLE] / sum[MODEL_NONE]);
                                ck_assert(sum[MODEL_STATIC] < 0.8 * sum[MODEL_NONE]);
                                /* The policy tries the limit once per hold-off and loses one interval
                                 * each time: within 5 % of no manager over 5 minutes. */
                                if (len == 1)
                                        ck_assert_msg(sum[MODEL_POLICY] >= 0.95 * sum[MODEL_NONE], "policy %.3f",
                                                      sum[MODEL_POLICY] / sum[MODEL_NONE]);
                        } else if (len == 1)
                                /* cpu.weight gives way by itself: a limit kept on only orders the
                                 * work (process 2's short tasks first) and gains. */
                                ck_assert(sum[MODEL_POLICY] >= sum[MODEL_NONE]);
                }
}
END_TEST

/* 1000 processes per interval, a few hogs among them: a step must stay cheap. */
START_TEST(test_thousand_processes) {
        Sim *s = sim_new(NULL);
        struct timespec a, b;
        usec_t total = 0, worst = 0;
        unsigned limits = 0;
        const int steps = 50;

        for (int i = 0; i < MAX_PROCS; i++) {
                Proc *p = sim_spawn(s, 1000 + 7 * i);

                if (i % 100 == 0)
                        behave(p, 100, 0, 0, 0, 0);
                else
                        behave(p, 1, 10000, 2, 0, 0);
        }
        /* Shuffled order: the policy sorts. */
        for (int i = 0; i < MAX_PROCS; i += 2) {
                Proc t = s->procs[i];
                s->procs[i] = s->procs[MAX_PROCS - 1 - i];
                s->procs[MAX_PROCS - 1 - i] = t;
        }
        for (int i = 0; i < steps; i++) {
                ck_assert_int_eq(clock_gettime(CLOCK_MONOTONIC, &a), 0);
                (void) sim_interval(s);
                ck_assert_int_eq(clock_gettime(CLOCK_MONOTONIC, &b), 0);
                usec_t t = timespec_load(&b) - timespec_load(&a);
                total += t;
                worst = MAX(worst, t);
                for (int j = 0; j < s->n_d; j++)
                        limits += s->d[j].action == LIMITER_LIMIT;
        }
        printf("# 1000 processes: %" PRIu64 " us per interval on average, %" PRIu64 " us at worst "
               "(sampling simulation included), %u limits\n",
               total / steps, worst, limits);
        ck_assert_uint_eq(limiter_policy_n_processes(s->policy), MAX_PROCS);
        ck_assert_uint_ge(limits, 1);
        /* The interval is 3 s; the policy may take a three-hundredth of it on average even under
         * ASan, on a machine shared with others' builds. */
        ck_assert_uint_lt(total / steps, 10 * USEC_PER_MSEC);
        sim_free(s);
}
END_TEST

TEST_SUITE("limiter-policy", test_cpu_hog_confirmed, test_io_hog_released_at_io_zero, test_startup_not_judged,
           test_unobserved_not_a_victim, test_no_improvement,
           test_direct_signal, test_direct_signal_limit_and_confirm, test_psi_signal, test_alone,
           test_class_changed, test_pid_reuse, test_pid_reuse_no_holdoff, test_observe_only, test_adopt,
           test_move_failed, test_window, test_bad_input, test_defaults_and_strings, test_thousand_processes,
           test_contention_ended_unconfirmed, test_contention_ended_and_back, test_no_flapping_on_noise,
           test_limit_idles_resource, test_limit_on_seeking_disk_kept, test_work_conserving_model)
