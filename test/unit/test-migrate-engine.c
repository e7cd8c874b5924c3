/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The migration engine's worker placement on a real process, without root: a child of the test
 * pinned to one CPU is the "slice"; its pages are all on node 0 already (the target), so the
 * engine scans, finds nothing to move and is done, having placed its worker first. The child
 * runs sleep(1), not a copy of the test: under AddressSanitizer the test maps terabytes of
 * shadow memory, which the scan would read page by page through pagemap.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/wait.h>
#include <poll.h>
#include <unistd.h>

#include "migrate.h"
#include "tests.h"

static pid_t child = -1;

static int get_child(void *userdata, pid_t **ret, size_t *ret_n) {
        (void) userdata;
        *ret = malloc(sizeof(pid_t));
        if (!*ret)
                return -ENOMEM;
        (*ret)[0] = child;
        *ret_n = 1;
        return 0;
}

/* Runs an engine over the child to its end; returns its progress. */
static MigrateProgress run_engine(bool any_cpu) {
        const uint8_t node0 = 1;
        MigrateConfig c = {
                .policy = MIGRATE_PERIODICAL,
                .batch_pages = 64,
                .interval_usec = 1000,
                .target_nodes = &node0,
                .target_nodes_size = 1,
                .proc = "/proc",
                .get_pids = get_child,
                .worker_any_cpu = any_cpu,
        };
        MigrateEngine *e = NULL;
        MigrateProgress p;
        struct pollfd pfd;

        ck_assert_int_eq(migrate_engine_start(&c, &e), 0);
        pfd = (struct pollfd) { .fd = migrate_engine_fd(e), .events = POLLIN };
        ck_assert_int_eq(poll(&pfd, 1, 20000), 1);
        migrate_engine_progress(e, &p);
        migrate_engine_free(e);
        return p;
}

START_TEST(test_worker_on_slice_cpu) {
        cpu_set_t mine, one;
        int cpu = -1;
        MigrateProgress p;

        ck_assert_int_eq(sched_getaffinity(0, sizeof(mine), &mine), 0);
        for (int i = 0; i < CPU_SETSIZE && cpu < 0; i++)
                if (CPU_ISSET(i, &mine))
                        cpu = i;
        ck_assert_int_ge(cpu, 0);
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        child = fork();
        ck_assert_int_ge(child, 0);
        if (child == 0) {
                (void) sched_setaffinity(0, sizeof(one), &one);
                execl("/bin/sleep", "sleep", "600", (char *) NULL);
                _exit(127);
        }
        /* The child pins itself and runs sleep; wait until it does. */
        for (int i = 0; i < 2000; i++) {
                char path[64], comm[32] = "";
                FILE *f;
                cpu_set_t s;

                ck_assert_int_eq(sched_getaffinity(child, sizeof(s), &s), 0);
                (void) snprintf(path, sizeof(path), "/proc/%d/comm", (int) child);
                f = fopen(path, "re");
                ck_assert_ptr_nonnull(f);
                (void) !fgets(comm, sizeof(comm), f);
                fclose(f);
                if (CPU_EQUAL(&s, &one) && strncmp(comm, "sleep", 5) == 0)
                        break;
                usleep(1000);
        }

        p = run_engine(false);
        ck_assert_int_eq(p.state, MIGRATE_ENGINE_DONE);
        /* Narrower than the test's own CPUs only when it has more than one. */
        ck_assert_int_eq(p.worker_pinned, CPU_COUNT(&mine) > 1);
        ck_assert_uint_eq(p.pages_moved, 0);

        p = run_engine(true);
        ck_assert_int_eq(p.state, MIGRATE_ENGINE_DONE);
        ck_assert(!p.worker_pinned);

        kill(child, SIGKILL);
        (void) waitpid(child, NULL, 0);
}
END_TEST

TEST_SUITE("migrate-engine", test_worker_on_slice_cpu)
