/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * limiter-policy.h on samples recorded from tonarid on real workloads (test/limiter/recorded/,
 * tonarid's "hog-sample"/"hog-round" debug lines, see the README there): every round is fed to a
 * fresh policy with the parameters the run had, and the decisions must be the ones the header of
 * the recording names (# expect ACTION PID CLASS REASON, in order, per PID). A process is where
 * its first sample found it, and then where the policy put it, whatever the recording says later:
 * the daemon applies the policy's decisions, and this one's may differ from the recording
 * tonarid's in what and when (a move of the recording tonarid's is not one by someone else).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "alloc-util.h"
#include "fileio.h"
#include "limiter-policy.h"
#include "string-util.h"
#include "tests.h"

#define MAX_SAMPLES 4096
#define MAX_EXPECT 32

typedef struct Expect {
        char action[16], class[16], reason[40];
        int pid;
        bool seen;
} Expect;

typedef struct Moved {
        int pid;
        LimiterClass class;
} Moved;

typedef struct Replay {
        LimiterParams params;
        Moved moved[MAX_EXPECT];
        size_t n_moved;
        Expect expect[MAX_EXPECT];
        size_t n_expect;
        size_t n_rounds, n_decisions;
} Replay;

static void check_decision(Replay *rp, const LimiterDecision *d) {
        /* The next unseen expectation of this PID must match. */
        for (size_t i = 0; i < rp->n_expect; i++) {
                Expect *e = &rp->expect[i];

                if (e->seen || e->pid != d->pid)
                        continue;
                ck_assert_msg(streq(e->action, limiter_action_to_string(d->action)) &&
                                      streq(e->class, limiter_class_to_string(d->class)) &&
                                      streq(e->reason, limiter_reason_to_string(d->reason)),
                              "round %zu: expected %s %d %s %s, got %s %d %s %s", rp->n_rounds, e->action, e->pid,
                              e->class, e->reason, limiter_action_to_string(d->action), (int) d->pid,
                              limiter_class_to_string(d->class), limiter_reason_to_string(d->reason));
                e->seen = true;
                return;
        }
        ck_abort_msg("round %zu: unexpected decision %s %d %s %s", rp->n_rounds, limiter_action_to_string(d->action),
                     (int) d->pid, limiter_class_to_string(d->class), limiter_reason_to_string(d->reason));
}

static void replay_move(Replay *rp, const LimiterDecision *d) {
        size_t i;

        for (i = 0; i < rp->n_moved; i++)
                if (rp->moved[i].pid == d->pid)
                        break;
        if (i == rp->n_moved) {
                ck_assert_uint_lt(rp->n_moved, MAX_EXPECT);
                rp->n_moved++;
        }
        rp->moved[i] = (Moved) { .pid = d->pid, .class = d->class };
}

static LimiterClass replay_class(Replay *rp, int pid, LimiterClass recorded) {
        for (size_t i = 0; i < rp->n_moved; i++)
                if (rp->moved[i].pid == pid)
                        return rp->moved[i].class;
        /* First seen: where the recording found it. */
        ck_assert_uint_lt(rp->n_moved, MAX_EXPECT);
        rp->moved[rp->n_moved++] = (Moved) { .pid = pid, .class = recorded };
        return recorded;
}

static void replay(const char *name) {
        _cleanup_free_ char *path = strjoin(RECORDED_DIR "/", name), *text = NULL;
        _cleanup_free_ LimiterSample *samples = new(LimiterSample, MAX_SAMPLES);
        _cleanup_(limiter_policy_freep) LimiterPolicy *policy = NULL;
        Replay rp = { .params = LIMITER_PARAMS_DEFAULT };
        size_t n = 0;
        char *save = NULL;

        ck_assert_ptr_nonnull(samples);
        ck_assert_int_eq(read_full_file(path, &text, NULL), 0);
        for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                const char *p;
                char slice[64], class[16];
                LimiterSample s = {};
                int have_delays, valid;
                LimiterPressure pressure = {};

                if ((p = startswith(line, "# params "))) {
                        double cpu_hog;
                        uint64_t interval, window;
                        ck_assert_int_eq(sscanf(p, "interval_usec=%" SCNu64 " window_usec=%" SCNu64 " cpu_hog_percent=%lf",
                                                &interval, &window, &cpu_hog),
                                         3);
                        rp.params.interval_usec = interval;
                        rp.params.window_usec = window;
                        rp.params.cpu_hog_percent = cpu_hog;
                } else if ((p = startswith(line, "# expect "))) {
                        Expect *e = &rp.expect[rp.n_expect++];
                        ck_assert_uint_le(rp.n_expect, MAX_EXPECT);
                        ck_assert_int_eq(sscanf(p, "%15s %d %15s %39s", e->action, &e->pid, e->class, e->reason), 4);
                } else if ((p = startswith(line, "hog-sample "))) {
                        uint64_t start, ts, elapsed, cpu, io, count, cd, bd, rd = 0;
                        int pid, have_rd = 0, k;
                        /* Recordings before the run delay end after the class. */
                        k = sscanf(p,
                                   "%63s %d %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64 " %" SCNu64
                                   " %d %" SCNu64 " %" SCNu64 " %15s %d %" SCNu64,
                                   slice, &pid, &start, &ts, &elapsed, &cpu, &io, &count, &have_delays, &cd, &bd,
                                   class, &have_rd, &rd);
                        ck_assert(k == 12 || k == 14);
                        s = (LimiterSample) {
                                .pid = pid, .start_time_ticks = start, .timestamp_usec = ts, .elapsed_usec = elapsed,
                                .cpu_usec = cpu, .io_bytes = io, .io_count = count, .have_delays = have_delays,
                                .cpu_delay_usec = cd, .blkio_delay_usec = bd,
                                .have_run_delay = have_rd, .run_delay_usec = rd,
                                .class = limiter_class_from_string(class),
                        };
                        ck_assert_int_ge(s.class, 0);
                        s.class = replay_class(&rp, pid, s.class);
                        ck_assert_uint_lt(n, MAX_SAMPLES);
                        samples[n++] = s;
                } else if ((p = startswith(line, "hog-round "))) {
                        _cleanup_free_ LimiterDecision *d = NULL;
                        size_t k;
                        int r;

                        if (!policy)
                                ck_assert_int_eq(limiter_policy_new(&rp.params, &policy), 0);
                        ck_assert_int_eq(sscanf(p, "%63s %zu %d %lf %lf", slice, &k, &valid, &pressure.cpu_some_avg10,
                                                &pressure.io_some_avg10),
                                         5);
                        ck_assert_uint_eq(k, n);
                        pressure.valid = valid;
                        r = limiter_policy_step(policy, samples, n, &pressure, &d);
                        ck_assert_int_ge(r, 0);
                        for (int i = 0; i < r; i++) {
                                check_decision(&rp, &d[i]);
                                replay_move(&rp, &d[i]);
                        }
                        rp.n_decisions += (size_t) r;
                        rp.n_rounds++;
                        n = 0;
                }
        }
        ck_assert_uint_gt(rp.n_rounds, 0);
        ck_assert_uint_gt(rp.n_expect, 0);
        for (size_t i = 0; i < rp.n_expect; i++)
                ck_assert_msg(rp.expect[i].seen, "%s: expected decision %s %d %s %s was not made", name,
                              rp.expect[i].action, rp.expect[i].pid, rp.expect[i].class, rp.expect[i].reason);
}

START_TEST(test_cpu_hog_recorded) {
        replay("cpu-hog.log");
}
END_TEST

START_TEST(test_io_hog_recorded) {
        replay("io-hog.log");
}
END_TEST

TEST_SUITE("limiter-replay", test_cpu_hog_recorded, test_io_hog_recorded)
