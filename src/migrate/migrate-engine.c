/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <numa.h>
#include <numaif.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "migrate.h"

struct MigrateEngine {
        MigrateConfig config;
        uint8_t *target;
        size_t target_size;
        int *target_list; /* the target nodes in order, for spreading pages over them */
        size_t n_target_list;
        char *proc;
        char *page_idle;
        int done_fd;

        /* Pages that failed to move in an earlier pass, sorted after each pass: not tried again. */
        struct FailedPage {
                pid_t pid;
                uint64_t vaddr;
        } *failed;
        size_t n_failed, failed_allocated;

        cpu_set_t worker_allowed; /* the thread's CPUs at its start (tonarid's) */
        bool have_worker_allowed;

        pthread_t thread;
        bool thread_started;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        bool cancel;              /* under lock */
        MigrateProgress progress; /* under lock */
};

static const char *const state_table[_MIGRATE_ENGINE_STATE_MAX] = {
        [MIGRATE_ENGINE_SCANNING] = "scanning", [MIGRATE_ENGINE_MOVING] = "moving",
        [MIGRATE_ENGINE_DONE] = "done",         [MIGRATE_ENGINE_CANCELLED] = "cancelled",
        [MIGRATE_ENGINE_FAILED] = "failed",
};

const char *migrate_engine_state_to_string(MigrateEngineState s) {
        if (s < 0 || s >= _MIGRATE_ENGINE_STATE_MAX)
                return NULL;
        return state_table[s];
}


static bool is_cancelled(MigrateEngine *e) {
        bool c;
        pthread_mutex_lock(&e->lock);
        c = e->cancel;
        pthread_mutex_unlock(&e->lock);
        return c;
}

/* Sleeps up to usec; true if cancelled meanwhile. */
static bool pause_or_cancel(MigrateEngine *e, usec_t usec) {
        struct timespec until;
        bool c;

        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += (time_t) (usec / USEC_PER_SEC);
        until.tv_nsec += (long) (usec % USEC_PER_SEC) * 1000;
        if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&e->lock);
        while (!e->cancel)
                if (pthread_cond_timedwait(&e->wake, &e->lock, &until) == ETIMEDOUT)
                        break;
        c = e->cancel;
        pthread_mutex_unlock(&e->lock);
        return c;
}

static void update(MigrateEngine *e, void (*f)(MigrateProgress *p, const void *arg), const void *arg) {
        pthread_mutex_lock(&e->lock);
        f(&e->progress, arg);
        e->progress.cpu_usec = now(CLOCK_THREAD_CPUTIME_ID);
        pthread_mutex_unlock(&e->lock);
}

/*
 * Referenced bits: one snapshot of the idle bitmap over the scanned frames. The kernel handles
 * every frame of a range it is given (on a read, each page on an LRU list is looked up and
 * referenced; an idle one costs a reverse-mapping walk), so the bitmap is read and written only in
 * the runs of words that hold scanned frames, not over everything between the lowest and the
 * highest frame (most of a node, with the slice's pages spread over it).
 */
typedef struct IdleRun {
        size_t word; /* index into marked/now */
        size_t n_words;
} IdleRun;

/* Words without a scanned frame between two runs before they are read as separate runs. */
#define IDLE_RUN_GAP_WORDS 2

typedef struct IdleMap {
        int fd;
        uint64_t first_word; /* bitmap word of the lowest frame */
        size_t n_words;
        uint64_t *marked;    /* the frames marked idle */
        uint64_t *now;       /* the latest read */
        IdleRun *runs;
        size_t n_runs;
        const MigrateScan *scan;
} IdleMap;

static void idle_map_done(IdleMap *m) {
        safe_close(m->fd);
        free(m->marked);
        free(m->now);
        free(m->runs);
        *m = (IdleMap) { .fd = -EBADF };
}

/* Reads (write = false) or writes the bitmap words of one run from or to buf. */
static int idle_io(IdleMap *m, const IdleRun *run, uint64_t *buf, bool write) {
        size_t done = 0;

        while (done < run->n_words) {
                size_t k = MIN(run->n_words - done, (size_t) 8192);
                off_t off = (off_t) ((m->first_word + run->word + done) * 8);
                ssize_t n = write ? pwrite(m->fd, buf + run->word + done, k * 8, off)
                                  : pread(m->fd, buf + run->word + done, k * 8, off);
                if (n < 0)
                        return -errno;
                if (n == 0) {
                        if (write)
                                return -EIO;
                        /* past the last frame: nothing there is tracked */
                        memset(buf + run->word + done, 0, (run->n_words - done) * 8);
                        break;
                }
                done += (size_t) n / 8;
        }
        return 0;
}

static int idle_read(IdleMap *m, uint64_t *into) {
        for (size_t i = 0; i < m->n_runs; i++) {
                int r = idle_io(m, &m->runs[i], into, false);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Marks every scanned frame idle. */
static int idle_map_init(IdleMap *m, const char *path, const MigrateScan *scan) {
        uint64_t lo = UINT64_MAX, hi = 0;
        size_t allocated = 0;
        int r;

        *m = (IdleMap) { .fd = -EBADF, .scan = scan };
        if (scan->n_pages == 0)
                return 0;
        for (size_t i = 0; i < scan->n_pages; i++) {
                lo = MIN(lo, scan->pages[i].pfn);
                hi = MAX(hi, scan->pages[i].pfn);
        }
        m->first_word = lo / 64;
        m->n_words = (size_t) (hi / 64 - lo / 64 + 1);
        m->marked = calloc(m->n_words, 8);
        m->now = calloc(m->n_words, 8);
        if (!m->marked || !m->now)
                return -ENOMEM;
        m->fd = open(path, O_RDWR | O_CLOEXEC);
        if (m->fd < 0)
                return -errno;
        for (size_t i = 0; i < scan->n_pages; i++) {
                uint64_t pfn = scan->pages[i].pfn;
                m->marked[pfn / 64 - m->first_word] |= UINT64_C(1) << (pfn % 64);
        }
        for (size_t w = 0; w < m->n_words; w++) {
                if (m->marked[w] == 0)
                        continue;
                if (m->n_runs > 0) {
                        IdleRun *last = &m->runs[m->n_runs - 1];
                        if (w - (last->word + last->n_words) <= IDLE_RUN_GAP_WORDS) {
                                last->n_words = w - last->word + 1;
                                continue;
                        }
                }
                if (m->n_runs == allocated) {
                        size_t k = MAX((size_t) 64, allocated * 2);
                        IdleRun *a = reallocarray(m->runs, k, sizeof(IdleRun));
                        if (!a)
                                return -ENOMEM;
                        m->runs = a;
                        allocated = k;
                }
                m->runs[m->n_runs++] = (IdleRun) { .word = w, .n_words = 1 };
        }
        /* Only set bits mark pages idle. */
        for (size_t i = 0; i < m->n_runs; i++) {
                r = idle_io(m, &m->runs[i], m->marked, true);
                if (r < 0)
                        return r;
        }
        /*
         * Not read back at once to learn which frames the kernel tracks: a page in use is touched
         * again before that read and would look untracked. A frame it ignores (a THP's tail: the
         * head carries the bit) therefore reads as referenced.
         */
        memcpy(m->now, m->marked, m->n_words * 8);
        return 0;
}

static bool idle_referenced(size_t page, void *userdata) {
        IdleMap *m = userdata;
        uint64_t pfn = m->scan->pages[page].pfn;
        size_t w = pfn / 64 - m->first_word;
        uint64_t bit = UINT64_C(1) << (pfn % 64);
        /* Marked idle, not idle now: touched since. */
        return (m->marked[w] & bit) && !(m->now[w] & bit);
}

typedef struct BatchResult {
        uint64_t moved, failed, gone, hot_moved, checks, calls;
        usec_t move_cpu_usec;
} BatchResult;

static void apply_batch(MigrateProgress *p, const void *arg) {
        const BatchResult *b = arg;
        p->pages_moved += b->moved;
        p->pages_failed += b->failed;
        p->pages_gone += b->gone;
        p->hot_pages_moved += b->hot_moved;
        p->checks += b->checks;
        p->move_calls += b->calls;
        p->move_cpu_usec += b->move_cpu_usec;
        p->rounds++;
}

static void set_moving(MigrateProgress *p, const void *arg) {
        (void) arg;
        p->state = MIGRATE_ENGINE_MOVING;
}

static void add_idle_cpu(MigrateProgress *p, const void *arg) {
        p->idle_cpu_usec += *(const usec_t *) arg;
}

static void set_hot_local(MigrateProgress *p, const void *arg) {
        if (p->hot_local_usec == 0)
                p->hot_local_usec = *(const usec_t *) arg;
}

static void remember_failed(MigrateEngine *e, pid_t pid, uint64_t vaddr) {
        if (e->n_failed == e->failed_allocated) {
                size_t k = MAX((size_t) 256, e->failed_allocated * 2);
                struct FailedPage *a = reallocarray(e->failed, k, sizeof(struct FailedPage));
                if (!a)
                        return; /* then it is tried again in the next pass, no harm */
                e->failed = a;
                e->failed_allocated = k;
        }
        e->failed[e->n_failed++] = (struct FailedPage) { .pid = pid, .vaddr = vaddr };
}

static int failed_cmp(const void *a, const void *b) {
        const struct FailedPage *x = a, *y = b;
        if (x->pid != y->pid)
                return x->pid < y->pid ? -1 : 1;
        return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

/*
 * Leaves the pages that failed in an earlier pass out of a new scan: they failed for a reason
 * that stays (shared with other processes, locked, hidden), and each pass would try them again
 * and count them again. Returns how many were left out.
 */
static size_t drop_failed(MigrateEngine *e, MigrateScan *scan) {
        size_t kept = 0, dropped;

        if (e->n_failed == 0)
                return 0;
        qsort(e->failed, e->n_failed, sizeof(struct FailedPage), failed_cmp);
        for (size_t i = 0; i < scan->n_pages; i++) {
                struct FailedPage key = { .pid = scan->pids[scan->pages[i].proc], .vaddr = scan->pages[i].vaddr };
                if (!bsearch(&key, e->failed, e->n_failed, sizeof(struct FailedPage), failed_cmp))
                        scan->pages[kept++] = scan->pages[i];
        }
        dropped = scan->n_pages - kept;
        scan->n_pages = kept;
        return dropped;
}

/* Moves the batch's pages (indexes into scan) process by process. */
static void move_batch(MigrateEngine *e, const MigrateScan *scan, const size_t *batch, size_t n, void **addrs,
                       int *nodes, int *status, const bool *hot, BatchResult *res) {
        usec_t cpu0 = now(CLOCK_THREAD_CPUTIME_ID);
        size_t i = 0;

        while (i < n) {
                uint32_t proc = scan->pages[batch[i]].proc;
                size_t k = 0;

                while (i + k < n && scan->pages[batch[i + k]].proc == proc) {
                        addrs[k] = (void *) (uintptr_t) scan->pages[batch[i + k]].vaddr;
                        nodes[k] = e->target_list[(batch[i + k]) % e->n_target_list];
                        status[k] = -EINPROGRESS;
                        k++;
                }
                res->calls++;
                if (numa_move_pages(scan->pids[proc], k, addrs, nodes, status, MPOL_MF_MOVE) < 0 && errno == ESRCH)
                        for (size_t j = 0; j < k; j++)
                                status[j] = -ESRCH;
                for (size_t j = 0; j < k; j++) {
                        int st = status[j];
                        if (st >= 0 && st == nodes[j]) {
                                res->moved++;
                                if (hot[i + j])
                                        res->hot_moved++;
                        } else if (st == -ESRCH || st == -EFAULT ||
                                   (st == -ENOENT && migrate_page_present(e->proc, scan->pids[proc], (uintptr_t) addrs[j]) <= 0))
                                res->gone++;
                        else {
                                /* -EBUSY, -EACCES (shared), -ENOMEM, a node it could not get, and
                                 * -ENOENT for a page still present: hidden behind a NUMA hinting
                                 * entry; the kernel moves what is left when the job narrows
                                 * cpuset.mems. */
                                res->failed++;
                                remember_failed(e, scan->pids[proc], (uintptr_t) addrs[j]);
                        }
                }
                i += k;
        }
        res->move_cpu_usec = now(CLOCK_THREAD_CPUTIME_ID) - cpu0;
}

static int run_pass(MigrateEngine *e, const MigrateScan *scan, bool first_pass) {
        _cleanup_(migrate_plan_freep) MigratePlan *plan = NULL;
        _cleanup_(idle_map_done) IdleMap idle = { .fd = -EBADF };
        _cleanup_free_ size_t *batch = NULL;
        _cleanup_free_ void **addrs = NULL;
        _cleanup_free_ int *nodes = NULL, *status = NULL;
        _cleanup_free_ bool *hot = NULL;
        MigratePolicy policy = e->config.policy;
        size_t n = (size_t) e->config.batch_pages;
        uint64_t checks_before = 0;
        size_t hot_left = 0;
        bool first_round = true;
        int r;

        /* The referenced pages go first in the first pass; later passes only pick up pages that
         * appeared meanwhile, and marking and watching them again would cost more than it gains. */
        if (migrate_policy_uses_referenced(policy) && (!e->page_idle || !first_pass))
                policy = MIGRATE_PERIODICAL;
        if (policy != MIGRATE_PERIODICAL) {
                usec_t cpu0 = now(CLOCK_THREAD_CPUTIME_ID), d;

                r = idle_map_init(&idle, e->page_idle, scan);
                if (r < 0)
                        return r;
                d = now(CLOCK_THREAD_CPUTIME_ID) - cpu0;
                update(e, add_idle_cpu, &d);
                /* Let the workload show which pages it uses before the first walk: one interval,
                 * at least MIGRATE_OBSERVE_USEC (a pass over a large hot set takes a while). */
                if (pause_or_cancel(e, MAX(e->config.interval_usec, (usec_t) MIGRATE_OBSERVE_USEC)))
                        return 0;
        }
        r = migrate_plan_new(policy, scan->n_pages, n, &plan);
        if (r < 0)
                return r;
        batch = malloc(n * sizeof(size_t));
        addrs = malloc(n * sizeof(void *));
        nodes = malloc(n * sizeof(int));
        status = malloc(n * sizeof(int));
        hot = malloc(n * sizeof(bool));
        if (!batch || !addrs || !nodes || !status || !hot)
                return -ENOMEM;

        if (policy != MIGRATE_PERIODICAL) {
                usec_t cpu0 = now(CLOCK_THREAD_CPUTIME_ID), d;

                r = idle_read(&idle, idle.now);
                if (r < 0)
                        return r;
                d = now(CLOCK_THREAD_CPUTIME_ID) - cpu0;
                update(e, add_idle_cpu, &d);
                if (first_pass)
                        for (size_t i = 0; i < scan->n_pages; i++)
                                hot_left += idle_referenced(i, &idle);
        }

        for (;;) {
                BatchResult res = {};
                size_t k, n_ref = 0;
                usec_t cpu0 = now(CLOCK_THREAD_CPUTIME_ID), cpu1;

                /*
                 * Severe looks at fresh bits every round: reading the bitmap makes the kernel walk
                 * the reverse mappings of every tracked page, O(N) per round, which is the cost
                 * the paper measured for it. Mild reads them once, before its walk: O(N).
                 */
                if (policy == MIGRATE_SEVERE && !first_round) {
                        usec_t d;

                        r = idle_read(&idle, idle.now);
                        if (r < 0)
                                return r;
                        d = now(CLOCK_THREAD_CPUTIME_ID) - cpu0;
                        update(e, add_idle_cpu, &d);
                }
                first_round = false;
                k = migrate_plan_next(plan, policy == MIGRATE_PERIODICAL ? NULL : idle_referenced, &idle, batch, &n_ref);
                if (k == 0)
                        break;
                for (size_t i = 0; i < k; i++)
                        hot[i] = i < n_ref;
                move_batch(e, scan, batch, k, addrs, nodes, status, hot, &res);
                res.checks = migrate_plan_checks(plan) - checks_before;
                checks_before = migrate_plan_checks(plan);
                update(e, apply_batch, &res);
                if (hot_left > 0) {
                        hot_left -= MIN(hot_left, (size_t) n_ref);
                        if (hot_left == 0) {
                                usec_t t = now(CLOCK_MONOTONIC);
                                update(e, set_hot_local, &t);
                        }
                }
                if (migrate_plan_remaining(plan) == 0)
                        break;
                /* Paced over the whole job: the budget is about the job's CPU over its wall time. */
                cpu1 = now(CLOCK_THREAD_CPUTIME_ID);
                if (pause_or_cancel(e, migrate_pace_pause_usec(cpu1, now(CLOCK_MONOTONIC) - e->progress.started_usec,
                                                               e->config.interval_usec,
                                                               e->config.cpu_budget_percent)))
                        return 0;
        }
        return 0;
}

static void add_scan(MigrateProgress *p, const void *arg) {
        const MigrateScan *s = arg;

        p->pages_total += s->n_pages;
        p->pages_scanned += s->n_present;
        p->passes++;
}

static void add_scan_cpu(MigrateProgress *p, const void *arg) {
        p->scan_cpu_usec += *(const usec_t *) arg;
}

static void set_pinned(MigrateProgress *p, const void *arg) {
        p->worker_pinned = *(const bool *) arg;
}

/*
 * Moves the worker to the CPUs the slice's processes may run on (see migrate_worker_cpus()); a
 * process that is gone meanwhile is left out. Failures leave the thread where it was.
 */
static void place_worker(MigrateEngine *e, const pid_t *pids, size_t n_pids) {
        cpu_set_t slice, want;
        bool pinned;

        if (!e->have_worker_allowed)
                return;
        CPU_ZERO(&slice);
        for (size_t i = 0; i < n_pids; i++) {
                cpu_set_t one;
                if (sched_getaffinity(pids[i], sizeof(one), &one) < 0)
                        continue;
                CPU_OR(&slice, &slice, &one);
        }
        pinned = migrate_worker_cpus(&e->worker_allowed, &slice, &want);
        if (pthread_setaffinity_np(pthread_self(), sizeof(want), &want) != 0)
                return;
        update(e, set_pinned, &pinned);
}

static void *engine_thread(void *userdata) {
        MigrateEngine *e = userdata;
        MigrateEngineState final = MIGRATE_ENGINE_DONE;
        int error = 0;
        uint64_t one = 1;

        if (!e->config.worker_any_cpu)
                e->have_worker_allowed =
                        pthread_getaffinity_np(pthread_self(), sizeof(e->worker_allowed), &e->worker_allowed) == 0;

        for (unsigned pass = 0; pass < MIGRATE_PASSES_MAX && !is_cancelled(e); pass++) {
                _cleanup_free_ pid_t *pids = NULL;
                _cleanup_(migrate_scan_done) MigrateScan scan = {};
                size_t n_pids = 0;
                usec_t cpu0 = now(CLOCK_THREAD_CPUTIME_ID), d;
                int r;

                r = e->config.get_pids(e->config.get_pids_userdata, &pids, &n_pids);
                if (r >= 0)
                        place_worker(e, pids, n_pids);
                if (r >= 0)
                        /* Hidden pages are tried in the first pass only: they stay hidden until
                         * the process touches them, and each pass would count them again. */
                        r = migrate_scan(e->proc, pids, n_pids, e->target, e->target_size, pass == 0, &scan);
                d = now(CLOCK_THREAD_CPUTIME_ID) - cpu0;
                update(e, add_scan_cpu, &d);
                if (r < 0) {
                        error = r;
                        final = MIGRATE_ENGINE_FAILED;
                        break;
                }
                (void) drop_failed(e, &scan);
                update(e, add_scan, &scan);
                if (scan.n_pages == 0)
                        break;
                if (pass == 0)
                        update(e, set_moving, NULL);
                r = run_pass(e, &scan, pass == 0);
                if (r < 0) {
                        error = r;
                        final = MIGRATE_ENGINE_FAILED;
                        break;
                }
        }

        pthread_mutex_lock(&e->lock);
        if (final == MIGRATE_ENGINE_DONE && e->cancel)
                final = MIGRATE_ENGINE_CANCELLED;
        e->progress.state = final;
        e->progress.error = error;
        e->progress.cpu_usec = now(CLOCK_THREAD_CPUTIME_ID);
        e->progress.finished_usec = now(CLOCK_MONOTONIC);
        pthread_mutex_unlock(&e->lock);
        (void) write(e->done_fd, &one, sizeof(one));
        return NULL;
}

/* libnuma's defaults print with perror() and may exit: errors come back through errno instead. */
void numa_warn(int number, char *where, ...) {
        (void) number;
        (void) where;
}

void numa_error(char *where) {
        (void) where;
}

int migrate_engine_start(const MigrateConfig *c, MigrateEngine **ret) {
        MigrateEngine *e;
        int r;

        if (!c || !ret || !c->get_pids || !c->proc)
                return -EINVAL;
        if (c->policy != MIGRATE_PERIODICAL && c->policy != MIGRATE_SEVERE && c->policy != MIGRATE_MILD)
                return -EINVAL;
        if (migrate_tunables_validate(c->batch_pages, c->interval_usec, c->cpu_budget_percent, NULL, 0) < 0)
                return -ERANGE;

        e = calloc(1, sizeof(*e));
        if (!e)
                return -ENOMEM;
        e->done_fd = -EBADF;
        pthread_mutex_init(&e->lock, NULL);
        {
                pthread_condattr_t a;
                pthread_condattr_init(&a);
                pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
                pthread_cond_init(&e->wake, &a);
                pthread_condattr_destroy(&a);
        }
        e->config = *c;
        e->target = c->target_nodes_size > 0 ? memdup(c->target_nodes, c->target_nodes_size) : NULL;
        e->target_size = c->target_nodes_size;
        e->proc = strdup(c->proc);
        e->page_idle = c->page_idle ? strdup(c->page_idle) : NULL;
        e->config.target_nodes = NULL;
        e->config.proc = NULL;
        e->config.page_idle = NULL;
        e->target_list = malloc(MAX((size_t) 1, c->target_nodes_size * 8) * sizeof(int));
        if ((c->target_nodes_size > 0 && !e->target) || !e->proc || (c->page_idle && !e->page_idle) || !e->target_list) {
                migrate_engine_free(e);
                return -ENOMEM;
        }
        for (size_t i = 0; i < c->target_nodes_size * 8; i++)
                if (c->target_nodes[i / 8] & (1U << (i % 8)))
                        e->target_list[e->n_target_list++] = (int) i;
        if (e->n_target_list == 0) {
                migrate_engine_free(e);
                return -EINVAL;
        }
        e->done_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        if (e->done_fd < 0) {
                r = -errno;
                migrate_engine_free(e);
                return r;
        }
        e->progress = (MigrateProgress) {
                .state = MIGRATE_ENGINE_SCANNING,
                .started_usec = now(CLOCK_MONOTONIC),
                .referenced = e->page_idle && migrate_policy_uses_referenced(c->policy),
        };
        r = -pthread_create(&e->thread, NULL, engine_thread, e);
        if (r < 0) {
                migrate_engine_free(e);
                return r;
        }
        e->thread_started = true;
        *ret = e;
        return 0;
}

void migrate_engine_cancel(MigrateEngine *e) {
        if (!e)
                return;
        pthread_mutex_lock(&e->lock);
        e->cancel = true;
        pthread_cond_broadcast(&e->wake);
        pthread_mutex_unlock(&e->lock);
}

int migrate_engine_fd(MigrateEngine *e) {
        return e ? e->done_fd : -EBADF;
}

void migrate_engine_progress(MigrateEngine *e, MigrateProgress *ret) {
        pthread_mutex_lock(&e->lock);
        *ret = e->progress;
        pthread_mutex_unlock(&e->lock);
}

MigrateEngine *migrate_engine_free(MigrateEngine *e) {
        if (!e)
                return NULL;
        if (e->thread_started) {
                migrate_engine_cancel(e);
                (void) pthread_join(e->thread, NULL);
        }
        pthread_cond_destroy(&e->wake);
        pthread_mutex_destroy(&e->lock);
        safe_close(e->done_fd);
        free(e->target);
        free(e->target_list);
        free(e->proc);
        free(e->page_idle);
        free(e->failed);
        free(e);
        return NULL;
}
