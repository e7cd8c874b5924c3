/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "migrate-plan.h"
#include "tests.h"

/* A synthetic page set: hot[i] says whether page i is referenced; touched counts checks per page. */
typedef struct PageSet {
        size_t n;
        bool *hot;
        unsigned *touched;
} PageSet;

static bool referenced(size_t page, void *userdata) {
        PageSet *s = userdata;
        ck_assert_uint_lt(page, s->n);
        s->touched[page]++;
        return s->hot[page];
}

static PageSet *pageset_new(size_t n, unsigned hot_every) {
        PageSet *s = calloc(1, sizeof(*s));
        ck_assert_ptr_nonnull(s);
        s->n = n;
        s->hot = calloc(n ? n : 1, sizeof(bool));
        s->touched = calloc(n ? n : 1, sizeof(unsigned));
        ck_assert_ptr_nonnull(s->hot);
        ck_assert_ptr_nonnull(s->touched);
        for (size_t i = 0; hot_every > 0 && i < n; i++)
                s->hot[i] = i % hot_every == 0;
        return s;
}

static void pageset_free(PageSet *s) {
        free(s->hot);
        free(s->touched);
        free(s);
}

typedef struct Run {
        size_t rounds;
        size_t *order; /* every page handed out, in order */
        size_t n_order;
        size_t referenced;
        uint64_t checks;
        size_t first_cold_at; /* position in order of the first cold page */
        size_t last_hot_at;   /* position in order of the last hot page */
} Run;

static Run run_plan(MigratePolicy policy, PageSet *s, size_t batch) {
        _cleanup_(migrate_plan_freep) MigratePlan *p = NULL;
        Run r = { .first_cold_at = SIZE_MAX };
        size_t *buf = malloc(batch * sizeof(size_t));
        bool *seen = calloc(s->n ? s->n : 1, sizeof(bool));

        ck_assert_ptr_nonnull(buf);
        ck_assert_ptr_nonnull(seen);
        r.order = malloc((s->n ? s->n : 1) * sizeof(size_t));
        ck_assert_ptr_nonnull(r.order);
        ck_assert_int_eq(migrate_plan_new(policy, s->n, batch, &p), 0);
        for (;;) {
                size_t nref = 99, k = migrate_plan_next(p, referenced, s, buf, &nref);
                if (k == 0)
                        break;
                ck_assert_uint_le(k, batch);
                ck_assert_uint_le(nref, k);
                r.rounds++;
                r.referenced += nref;
                for (size_t i = 0; i < k; i++) {
                        ck_assert_uint_lt(buf[i], s->n);
                        ck_assert_msg(!seen[buf[i]], "page %zu handed out twice", buf[i]);
                        seen[buf[i]] = true;
                        if (s->hot[buf[i]])
                                r.last_hot_at = r.n_order;
                        else if (r.first_cold_at == SIZE_MAX)
                                r.first_cold_at = r.n_order;
                        r.order[r.n_order++] = buf[i];
                }
                /* Every batch but the last is full. */
                if (migrate_plan_remaining(p) > 0)
                        ck_assert_uint_eq(k, batch);
                ck_assert_uint_eq(migrate_plan_remaining(p), s->n - r.n_order);
        }
        ck_assert_uint_eq(r.n_order, s->n);
        ck_assert_uint_eq(migrate_plan_next(p, referenced, s, buf, NULL), 0);
        r.checks = migrate_plan_checks(p);
        free(buf);
        free(seen);
        return r;
}

START_TEST(test_policy_names) {
        ck_assert_str_eq(migrate_policy_to_string(MIGRATE_MILD), "mild");
        ck_assert_int_eq(migrate_policy_from_string("eager"), MIGRATE_EAGER);
        ck_assert_int_eq(migrate_policy_from_string("periodical"), MIGRATE_PERIODICAL);
        ck_assert_int_eq(migrate_policy_from_string("severe"), MIGRATE_SEVERE);
        ck_assert_int_eq(migrate_policy_from_string("mild"), MIGRATE_MILD);
        ck_assert_int_eq(migrate_policy_from_string("Mild"), -EINVAL);
        ck_assert_int_eq(migrate_policy_from_string(""), -EINVAL);
        ck_assert_int_eq(migrate_policy_from_string(NULL), -EINVAL);
        ck_assert_ptr_null(migrate_policy_to_string(_MIGRATE_POLICY_MAX));
        ck_assert_ptr_null(migrate_policy_to_string(-1));
        ck_assert(migrate_policy_uses_referenced(MIGRATE_SEVERE));
        ck_assert(!migrate_policy_uses_referenced(MIGRATE_PERIODICAL));
}
END_TEST

START_TEST(test_bad_input) {
        MigratePlan *p = NULL;
        ck_assert_int_eq(migrate_plan_new(MIGRATE_MILD, 10, 0, &p), -EINVAL);
        ck_assert_int_eq(migrate_plan_new(MIGRATE_EAGER, 10, 5, &p), -EINVAL);
        ck_assert_int_eq(migrate_plan_new(_MIGRATE_POLICY_MAX, 10, 5, &p), -EINVAL);
        ck_assert_int_eq(migrate_plan_new(MIGRATE_MILD, 10, 5, NULL), -EINVAL);
        ck_assert_ptr_null(p);
        ck_assert_ptr_null(migrate_plan_free(NULL));
        ck_assert_uint_eq(migrate_plan_remaining(NULL), 0);
}
END_TEST

START_TEST(test_empty) {
        PageSet *s = pageset_new(0, 2);
        for (MigratePolicy p = MIGRATE_PERIODICAL; p <= MIGRATE_MILD; p++) {
                Run r = run_plan(p, s, 7);
                ck_assert_uint_eq(r.rounds, 0);
                ck_assert_uint_eq(r.checks, 0);
                free(r.order);
        }
        pageset_free(s);
}
END_TEST

START_TEST(test_periodical_walk_order) {
        PageSet *s = pageset_new(1000, 2);
        Run r = run_plan(MIGRATE_PERIODICAL, s, 64);

        ck_assert_uint_eq(r.rounds, (1000 + 63) / 64);
        ck_assert_uint_eq(r.checks, 0);
        ck_assert_uint_eq(r.referenced, 0);
        for (size_t i = 0; i < r.n_order; i++)
                ck_assert_uint_eq(r.order[i], i);
        /* Periodical needs no referenced bits at all. */
        ck_assert_uint_eq(s->touched[0], 0);
        free(r.order);
        pageset_free(s);
}
END_TEST

/* Half the pages hot, spread evenly (the paper's workload touches 4 of 8 GB sparsely). */
START_TEST(test_referenced_first) {
        const size_t N = 10000, n = 500;

        for (MigratePolicy pol = MIGRATE_SEVERE; pol <= MIGRATE_MILD; pol++) {
                PageSet *s = pageset_new(N, 2);
                Run r = run_plan(pol, s, n);

                ck_assert_uint_eq(r.rounds, N / n);
                ck_assert_uint_eq(r.referenced, N / 2);
                /* Every hot page goes before every cold one: the hot half is local after half the rounds. */
                ck_assert_uint_eq(r.last_hot_at, N / 2 - 1);
                ck_assert_uint_eq(r.first_cold_at, N / 2);
                /* The cold ones follow in walk order. */
                for (size_t i = N / 2 + 1; i < N; i++)
                        ck_assert_uint_lt(r.order[i - 1], r.order[i]);
                free(r.order);
                pageset_free(s);
        }
}
END_TEST

/* The paper's cost: Mild checks each page once (O(N)), Severe N²/2n + N/2 when nothing is hot. */
START_TEST(test_check_counts) {
        const size_t N = 8000, n = 400;
        PageSet *s = pageset_new(N, 0);
        Run mild = run_plan(MIGRATE_MILD, s, n);
        Run severe;

        ck_assert_uint_eq(mild.checks, N);
        for (size_t i = 0; i < N; i++)
                ck_assert_uint_eq(s->touched[i], 1);
        memset(s->touched, 0, N * sizeof(unsigned));

        severe = run_plan(MIGRATE_SEVERE, s, n);
        /* The walk checks N; then each of the N/n rounds re-checks the remainder: N, N-n, ..., n. */
        uint64_t expect = N;
        for (size_t left = N; left > 0; left -= n)
                expect += left;
        ck_assert_uint_eq(severe.checks, expect);
        ck_assert_uint_ge(severe.checks, (uint64_t) N * N / (2 * n) + N / 2);
        /* Smaller batches cost Severe quadratically more, Mild nothing. */
        Run severe_small = run_plan(MIGRATE_SEVERE, s, n / 4);
        Run mild_small = run_plan(MIGRATE_MILD, s, n / 4);
        ck_assert_uint_gt(severe_small.checks, 3 * severe.checks);
        ck_assert_uint_eq(mild_small.checks, N);
        free(mild.order);
        free(severe.order);
        free(severe_small.order);
        free(mild_small.order);
        pageset_free(s);
}
END_TEST

/* Pages that become hot after the walk: Severe finds them next round, Mild does not look. */
typedef struct Warming {
        PageSet *set;
        size_t calls;
        size_t warm_from_call;
        size_t warm_page;
} Warming;

static bool referenced_warming(size_t page, void *userdata) {
        Warming *w = userdata;
        w->calls++;
        if (w->calls >= w->warm_from_call && page == w->warm_page)
                return true;
        return w->set->hot[page];
}

START_TEST(test_severe_rechecks) {
        const size_t N = 100, n = 10;

        for (MigratePolicy pol = MIGRATE_SEVERE; pol <= MIGRATE_MILD; pol++) {
                PageSet *s = pageset_new(N, 0);
                Warming w = { .set = s, .warm_from_call = 2 * N + 1, .warm_page = 95 };
                _cleanup_(migrate_plan_freep) MigratePlan *p = NULL;
                size_t buf[10], nref;

                ck_assert_int_eq(migrate_plan_new(pol, N, n, &p), 0);
                /* Nothing hot: the first round walks everything, then takes the remainder's head. */
                ck_assert_uint_eq(migrate_plan_next(p, referenced_warming, &w, buf, &nref), n);
                ck_assert_uint_eq(nref, 0);
                ck_assert_uint_eq(buf[0], 0);
                /* Page 95 is now hot. */
                ck_assert_uint_eq(migrate_plan_next(p, referenced_warming, &w, buf, &nref), n);
                if (pol == MIGRATE_SEVERE) {
                        ck_assert_uint_eq(nref, 1);
                        ck_assert_uint_eq(buf[0], 95);
                } else {
                        ck_assert_uint_eq(nref, 0);
                        ck_assert_uint_eq(buf[0], 10);
                }
                pageset_free(s);
        }
}
END_TEST

/* A batch larger than the set, and a batch of one. */
START_TEST(test_batch_extremes) {
        PageSet *s = pageset_new(37, 3);
        for (MigratePolicy pol = MIGRATE_PERIODICAL; pol <= MIGRATE_MILD; pol++) {
                Run big = run_plan(pol, s, 1000);
                Run one = run_plan(pol, s, 1);
                ck_assert_uint_eq(big.rounds, 1);
                ck_assert_uint_eq(one.rounds, 37);
                if (pol != MIGRATE_PERIODICAL)
                        ck_assert_uint_eq(one.first_cold_at, 13); /* pages 0,3,...,36 are hot: 13 */
                free(big.order);
                free(one.order);
        }
        pageset_free(s);
}
END_TEST

START_TEST(test_pace) {
        /* No budget: the configured interval. */
        ck_assert_uint_eq(migrate_pace_interval_usec(50000, 1000000, 0), 1000000);
        ck_assert_uint_eq(migrate_pace_interval_usec(50000, 1000000, 100), 1000000);
        /* 10 %: a batch of 200 ms needs 1.8 s of pause. */
        ck_assert_uint_eq(migrate_pace_interval_usec(200000, 1000000, 10), 1800000);
        /* A short batch keeps the interval. */
        ck_assert_uint_eq(migrate_pace_interval_usec(10000, 1000000, 10), 1000000);
        /* 50 %: pause equal to the batch. */
        ck_assert_uint_eq(migrate_pace_interval_usec(300000, 1000, 50), 300000);
        ck_assert_uint_eq(migrate_pace_interval_usec(UINT64_MAX, 1000, 1), UINT64_MAX);

        /* Over the job: no budget, the interval. */
        ck_assert_uint_eq(migrate_pace_pause_usec(500000, 1000000, 100000, 0), 100000);
        /* 10 %: 500 ms of CPU after 2 s needs 3 s more; after 6 s the interval is enough. */
        ck_assert_uint_eq(migrate_pace_pause_usec(500000, 2000000, 100000, 10), 3000000);
        ck_assert_uint_eq(migrate_pace_pause_usec(500000, 6000000, 100000, 10), 100000);
        /* A watch without CPU is not lost: 100 ms of CPU after 1 s idle at 10 %: the interval. */
        ck_assert_uint_eq(migrate_pace_pause_usec(100000, 1000000, 20000, 10), 20000);
        /* 50 %: 1 s of CPU in 1.5 s: 0.5 s more. */
        ck_assert_uint_eq(migrate_pace_pause_usec(1000000, 1500000, 1000, 50), 500000);
        ck_assert_uint_eq(migrate_pace_pause_usec(UINT64_MAX, 0, 1000, 1), UINT64_MAX);
}
END_TEST

START_TEST(test_tunables) {
        char err[256];

        ck_assert_int_eq(migrate_tunables_validate(45000, 1000000, 10, err, sizeof(err)), 0);
        ck_assert_int_eq(migrate_tunables_validate(0, 1000000, 10, err, sizeof(err)), -ERANGE);
        ck_assert_ptr_nonnull(strstr(err, "'0'"));
        ck_assert_int_eq(migrate_tunables_validate(UINT64_MAX, 1000000, 10, err, sizeof(err)), -ERANGE);
        ck_assert_ptr_nonnull(strstr(err, "MigrationBatchPages '18446744073709551615'"));
        ck_assert_int_eq(migrate_tunables_validate(10, 999, 10, err, sizeof(err)), -ERANGE);
        ck_assert_ptr_nonnull(strstr(err, "MigrationIntervalUSec '999'"));
        ck_assert_int_eq(migrate_tunables_validate(10, 1000, 101, err, sizeof(err)), -ERANGE);
        ck_assert_ptr_nonnull(strstr(err, "MigrationCPUBudget '101'"));
        ck_assert_int_eq(migrate_tunables_validate(MIGRATE_BATCH_PAGES_MAX, MIGRATE_INTERVAL_USEC_MAX, 0, NULL, 0), 0);
}
END_TEST

static cpu_set_t cpus(const char *list) {
        cpu_set_t s;

        CPU_ZERO(&s);
        for (const char *p = list; *p; p++)
                if (*p >= '0' && *p <= '9')
                        CPU_SET(*p - '0', &s);
        return s;
}

START_TEST(test_worker_cpus) {
        cpu_set_t all = cpus("0123"), one = cpus("1"), eight = cpus("01234567"), got;

        /* The slice on CPU 1 of 0-3: the worker goes there. */
        ck_assert(migrate_worker_cpus(&all, &one, &got));
        ck_assert_int_eq(CPU_COUNT(&got), 1);
        ck_assert(CPU_ISSET(1, &got));
        /* Partly outside what the worker may use: the CPUs in both. */
        {
                cpu_set_t two = cpus("23"), slice = cpus("3567");
                ck_assert(migrate_worker_cpus(&two, &slice, &got));
                ck_assert_int_eq(CPU_COUNT(&got), 1);
                ck_assert(CPU_ISSET(3, &got));
        }
        /* Nowhere in common, or no slice processes: where it may run, not narrowed. */
        {
                cpu_set_t two = cpus("01"), slice = cpus("23"), none = cpus("");
                ck_assert(!migrate_worker_cpus(&two, &slice, &got));
                ck_assert(CPU_EQUAL(&got, &two));
                ck_assert(!migrate_worker_cpus(&two, &none, &got));
                ck_assert(CPU_EQUAL(&got, &two));
        }
        /* The slice may run everywhere the worker may: the same set, not narrower. */
        ck_assert(!migrate_worker_cpus(&all, &eight, &got));
        ck_assert(CPU_EQUAL(&got, &all));
}
END_TEST

TEST_SUITE("migrate-plan", test_policy_names, test_bad_input, test_empty, test_periodical_walk_order,
           test_referenced_first, test_check_counts, test_severe_rechecks, test_batch_extremes, test_pace, test_tunables,
           test_worker_cpus)
