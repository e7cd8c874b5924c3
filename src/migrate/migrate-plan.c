/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "migrate-plan.h"

static const char *const policy_table[_MIGRATE_POLICY_MAX] = {
        [MIGRATE_EAGER] = "eager",
        [MIGRATE_PERIODICAL] = "periodical",
        [MIGRATE_SEVERE] = "severe",
        [MIGRATE_MILD] = "mild",
};

const char *migrate_policy_to_string(MigratePolicy p) {
        if (p < 0 || p >= _MIGRATE_POLICY_MAX)
                return NULL;
        return policy_table[p];
}

MigratePolicy migrate_policy_from_string(const char *s) {
        if (!s)
                return _MIGRATE_POLICY_INVALID;
        for (int i = 0; i < _MIGRATE_POLICY_MAX; i++)
                if (strcmp(policy_table[i], s) == 0)
                        return (MigratePolicy) i;
        return _MIGRATE_POLICY_INVALID;
}

bool migrate_policy_uses_referenced(MigratePolicy p) {
        return p == MIGRATE_SEVERE || p == MIGRATE_MILD;
}

struct MigratePlan {
        MigratePolicy policy;
        size_t n_pages;
        size_t batch_pages;
        size_t walk_next;  /* the walk's position: pages before it have been looked at */
        size_t *rem;       /* the remainder list (pages walked past, not referenced), in walk order */
        size_t n_rem;
        size_t handed_out;
        uint64_t checks;
};

int migrate_plan_new(MigratePolicy policy, size_t n_pages, size_t batch_pages, MigratePlan **ret) {
        MigratePlan *p;

        if (!ret || batch_pages == 0)
                return -EINVAL;
        if (policy != MIGRATE_PERIODICAL && policy != MIGRATE_SEVERE && policy != MIGRATE_MILD)
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        *p = (MigratePlan) { .policy = policy, .n_pages = n_pages, .batch_pages = batch_pages };
        if (migrate_policy_uses_referenced(policy) && n_pages > 0) {
                p->rem = malloc(n_pages * sizeof(size_t));
                if (!p->rem) {
                        free(p);
                        return -ENOMEM;
                }
        }
        *ret = p;
        return 0;
}

MigratePlan *migrate_plan_free(MigratePlan *p) {
        if (!p)
                return NULL;
        free(p->rem);
        free(p);
        return NULL;
}

size_t migrate_plan_remaining(const MigratePlan *p) {
        return p ? p->n_pages - p->handed_out : 0;
}

uint64_t migrate_plan_checks(const MigratePlan *p) {
        return p ? p->checks : 0;
}

static bool check(MigratePlan *p, MigrateReferencedFunc referenced, void *userdata, size_t page) {
        p->checks++;
        return referenced && referenced(page, userdata);
}

/* Severe: one pass over the remainder, taking referenced pages (up to room), compacting the rest. */
static size_t take_referenced_from_rem(MigratePlan *p, MigrateReferencedFunc referenced, void *userdata,
                                       size_t *out, size_t room) {
        size_t taken = 0, kept = 0, i;

        for (i = 0; i < p->n_rem && taken < room; i++) {
                size_t page = p->rem[i];
                if (check(p, referenced, userdata, page))
                        out[taken++] = page;
                else
                        p->rem[kept++] = page;
        }
        /* Stopped early: the unchecked tail stays as it is. */
        for (; i < p->n_rem; i++)
                p->rem[kept++] = p->rem[i];
        p->n_rem = kept;
        return taken;
}

/* The remainder's head, in walk order, without checks. */
static size_t take_head_from_rem(MigratePlan *p, size_t *out, size_t room) {
        size_t k = MIN(room, p->n_rem);

        if (k == 0)
                return 0; /* rem may be NULL for an empty set: memcpy() must not see it */
        memcpy(out, p->rem, k * sizeof(size_t));
        memmove(p->rem, p->rem + k, (p->n_rem - k) * sizeof(size_t));
        p->n_rem -= k;
        return k;
}

size_t migrate_plan_next(MigratePlan *p, MigrateReferencedFunc referenced, void *userdata, size_t *ret_pages,
                         size_t *ret_referenced) {
        size_t n = 0, n_referenced = 0;

        if (!p || !ret_pages)
                return 0;

        if (p->policy == MIGRATE_PERIODICAL) {
                while (n < p->batch_pages && p->walk_next < p->n_pages)
                        ret_pages[n++] = p->walk_next++;
                p->handed_out += n;
                if (ret_referenced)
                        *ret_referenced = 0;
                return n;
        }

        /* Severe and Mild: the walk goes on until the batch is full of referenced pages. */
        while (n < p->batch_pages && p->walk_next < p->n_pages) {
                size_t page = p->walk_next++;
                if (check(p, referenced, userdata, page))
                        ret_pages[n++] = page;
                else
                        p->rem[p->n_rem++] = page;
        }
        n_referenced = n;

        if (n < p->batch_pages && p->walk_next >= p->n_pages) {
                if (p->policy == MIGRATE_SEVERE) {
                        size_t k = take_referenced_from_rem(p, referenced, userdata, ret_pages + n, p->batch_pages - n);
                        n += k;
                        n_referenced += k;
                }
                n += take_head_from_rem(p, ret_pages + n, p->batch_pages - n);
        }

        p->handed_out += n;
        if (ret_referenced)
                *ret_referenced = n_referenced;
        return n;
}

uint64_t migrate_pace_interval_usec(uint64_t batch_cpu_usec, uint64_t interval_usec, unsigned budget_percent) {
        uint64_t pause;

        if (budget_percent == 0 || budget_percent >= 100)
                return interval_usec;
        /* cpu / (cpu + pause) ≤ b  ⇔  pause ≥ cpu · (100 − b) / b; cpu is at most a few seconds. */
        if (batch_cpu_usec > UINT64_MAX / 100)
                return UINT64_MAX;
        pause = (batch_cpu_usec * (100 - budget_percent) + budget_percent - 1) / budget_percent;
        return MAX(pause, interval_usec);
}

uint64_t migrate_pace_pause_usec(uint64_t job_cpu_usec, uint64_t elapsed_usec, uint64_t interval_usec,
                                 unsigned budget_percent) {
        uint64_t wall;

        if (budget_percent == 0 || budget_percent >= 100)
                return interval_usec;
        if (job_cpu_usec > UINT64_MAX / 100)
                return UINT64_MAX;
        /* cpu / (elapsed + pause) ≤ b  ⇔  pause ≥ cpu · 100 / b − elapsed */
        wall = (job_cpu_usec * 100 + budget_percent - 1) / budget_percent;
        return MAX(wall > elapsed_usec ? wall - elapsed_usec : 0, interval_usec);
}

bool migrate_worker_cpus(const cpu_set_t *allowed, const cpu_set_t *slice, cpu_set_t *ret) {
        cpu_set_t both;

        CPU_AND(&both, allowed, slice);
        if (CPU_COUNT(&both) == 0) {
                *ret = *allowed;
                return false;
        }
        *ret = both;
        return !CPU_EQUAL(&both, allowed);
}

int migrate_tunables_validate(uint64_t batch_pages, uint64_t interval_usec, uint64_t budget_percent, char *ret_error,
                              size_t size) {
        if (batch_pages == 0 || batch_pages > MIGRATE_BATCH_PAGES_MAX) {
                if (ret_error)
                        (void) snprintf(ret_error, size,
                                        "Invalid MigrationBatchPages '%" PRIu64 "': must be 1..%u pages.", batch_pages,
                                        MIGRATE_BATCH_PAGES_MAX);
                return -ERANGE;
        }
        if (interval_usec < MIGRATE_INTERVAL_USEC_MIN || interval_usec > MIGRATE_INTERVAL_USEC_MAX) {
                if (ret_error)
                        (void) snprintf(ret_error, size,
                                        "Invalid MigrationIntervalUSec '%" PRIu64 "': must be 1 ms..1 h (1000..%llu µs).",
                                        interval_usec, (unsigned long long) MIGRATE_INTERVAL_USEC_MAX);
                return -ERANGE;
        }
        if (budget_percent > 100) {
                if (ret_error)
                        (void) snprintf(ret_error, size,
                                        "Invalid MigrationCPUBudget '%" PRIu64 "': must be 1..100 percent, or 0 for none.",
                                        budget_percent);
                return -ERANGE;
        }
        return 0;
}
