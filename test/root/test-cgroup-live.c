/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cgroup.h on this machine's real cgroupfs (/sys/fs/cgroup): v1 with the cpu, cpuacct, cpuset,
 * blkio, memory and pids hierarchies, or a v2 root. Root only; exits 77 otherwise.
 *
 * It creates nothing but "tonari-test-<pid>" and cgroups below it, puts nothing there but the
 * processes it forks, and removes all of it at the end — also when an assertion failed (check runs
 * each test in a child process; main() cleans up after them and then checks that no
 * tonari-test-* cgroup of this or an earlier, dead run is left).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "alloc-util.h"
#include "cgroup.h"
#include "fd-util.h"
#include "fileio.h"
#include "parse-util.h"
#include "proc-util.h"
#include "string-util.h"
#include "strv.h"
#include "tests.h"

#define CGROUP_FS "/sys/fs/cgroup"
#define QUOTA_PER_SEC_USEC (200 * USEC_PER_MSEC) /* CPUQuota=20% */
#define WRITE_BPS UINT64_C(5000000)               /* IOWriteBandwidthMax=5M (base 1000, as systemd) */
#define MEMORY_MAX (UINT64_C(256) << 20)
#define CHILD_TOUCH_BYTES (UINT64_C(8) << 20)
#define CHILD_WRITE_BYTES (UINT64_C(8) << 20)

static const char *const v1_hierarchies[] = { "cpu", "cpuacct", "cpuset", "blkio", "memory", "pids" };
static char cg[64]; /* tonari-test-<pid of main()> */

static CGroupRoot *open_root(void) {
        CGroupRoot *r = NULL;

        ck_assert_int_eq(cgroup_root_new(CGROUP_FS, &r), 0);
        return r;
}

static char *cg_path(const char *sub) {
        char *p = sub ? strjoin(cg, "/", sub) : strdup(cg);

        ck_assert_ptr_nonnull(p);
        return p;
}

static char *read_file(CGroupRoot *r, const char *controller, const char *path, const char *file) {
        char *t = NULL;
        int k = cgroup_read_file(r, controller, path, file, &t);

        ck_assert_msg(k >= 0, "reading %s/%s: %s", path, file, strerror(-k));
        return t;
}

#define assert_cg_file(r, controller, path, file, expected)                                             \
        do {                                                                                           \
                _cleanup_free_ char *_t = read_file(r, controller, path, file);                        \
                ck_assert_msg(streq(_t, expected), "%s/%s: '%s', expected '%s'", path, file, _t, expected); \
        } while (false)

/* The whole disk under the root file system: throttling is per disk, not per partition. */
static int root_disk(dev_t *ret) {
        char p[64];
        _cleanup_free_ char *t = NULL;
        unsigned maj, min;
        struct stat st;

        if (stat("/", &st) < 0)
                return -errno;
        (void) snprintf(p, sizeof(p), "/sys/dev/block/%u:%u", major(st.st_dev), minor(st.st_dev));
        if (access(p, F_OK) < 0)
                return -ENODEV; /* not on a block device (overlay, tmpfs, 9p, ...) */
        (void) snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/partition", major(st.st_dev), minor(st.st_dev));
        if (access(p, F_OK) < 0) {
                *ret = st.st_dev;
                return 0;
        }
        (void) snprintf(p, sizeof(p), "/sys/dev/block/%u:%u/../dev", major(st.st_dev), minor(st.st_dev));
        if (read_one_line_file(p, &t) < 0 || sscanf(t, "%u:%u", &maj, &min) != 2)
                return -ENODEV;
        *ret = makedev(maj, min);
        return 0;
}

static double now_sec(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

typedef struct ChildReport {
        double cpu_share;   /* CPU time / wall time of a 1 s busy loop */
        double write_mbps;  /* O_DIRECT writes to the root disk, MB/s */
        int write_error;    /* errno of the write test, 0 if it ran */
} ChildReport;

/*
 * The process under test: waits until it is attached, then touches memory (charged to the new
 * cgroup, which v1 does not do for pages from before the move), burns CPU for a second and
 * writes to the root disk, reports, and sleeps until killed. It dies with its parent and after
 * two minutes at the latest.
 */
static _noreturn_ void child_main(int go_fd, int report_fd, pid_t parent, bool write_test) {
        ChildReport rep = {};
        char go;
        uint8_t *mem;
        double t0, c0;

        (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
                _exit(EXIT_FAILURE);
        (void) alarm(120);
        if (read(go_fd, &go, 1) != 1)
                _exit(EXIT_FAILURE);

        mem = malloc(CHILD_TOUCH_BYTES);
        if (!mem)
                _exit(EXIT_FAILURE);
        for (size_t i = 0; i < CHILD_TOUCH_BYTES; i += 4096)
                ((volatile uint8_t *) mem)[i] = 1;

        t0 = now_sec(CLOCK_MONOTONIC);
        c0 = now_sec(CLOCK_THREAD_CPUTIME_ID);
        while (now_sec(CLOCK_MONOTONIC) - t0 < 1.0)
                ;
        rep.cpu_share = (now_sec(CLOCK_THREAD_CPUTIME_ID) - c0) / (now_sec(CLOCK_MONOTONIC) - t0);

        if (write_test) {
                /* An unnamed file on the root file system: nothing to clean up, whatever happens. */
                _cleanup_close_ int fd = open("/", O_TMPFILE | O_WRONLY | O_DIRECT | O_CLOEXEC, 0600);
                void *buf = NULL;

                if (fd < 0 || posix_memalign(&buf, 4096, 1 << 20) != 0)
                        rep.write_error = fd < 0 ? errno : ENOMEM;
                else {
                        memset(buf, 0x5a, 1 << 20);
                        t0 = now_sec(CLOCK_MONOTONIC);
                        for (uint64_t done = 0; done < CHILD_WRITE_BYTES; done += 1 << 20)
                                if (write(fd, buf, 1 << 20) != 1 << 20) {
                                        rep.write_error = errno ?: EIO;
                                        break;
                                }
                        rep.write_mbps = (double) CHILD_WRITE_BYTES / 1e6 / (now_sec(CLOCK_MONOTONIC) - t0);
                }
                free(buf);
        }

        if (write(report_fd, &rep, sizeof(rep)) != sizeof(rep))
                _exit(EXIT_FAILURE);
        for (;;)
                pause();
}

static void kill_and_reap(pid_t pid) {
        (void) kill(pid, SIGKILL);
        (void) waitpid(pid, NULL, 0);
}

START_TEST(test_live) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = open_root();
        _cleanup_(cgroup_settings_done) CGroupSettings s = CGROUP_SETTINGS_INIT, back = CGROUP_SETTINGS_INIT;
        _cleanup_free_ char *msg = NULL, *line = NULL, *q = cg_path("q"), *leaf = cg_path("q/leaf");
        _cleanup_free_ pid_t *pids = NULL;
        int go[2], report[2];
        pid_t parent = getpid();
        bool v2 = cgroup_root_version(r) == 2, has_disk;
        ChildReport rep;
        CGroupUsage u;
        dev_t disk = 0;
        size_t n;
        pid_t pid;
        int k;

        has_disk = root_disk(&disk) >= 0;
        if (!has_disk)
                printf("note: / is not on a block device: no IO limit, no write test\n");

        ck_assert_int_eq(cgroup_exists(r, cg), 0);
        ck_assert_int_eq(cgroup_create(r, cg), 1);
        ck_assert_int_eq(cgroup_exists(r, cg), 1);
        if (!v2)
                FOREACH_ELEMENT(h, v1_hierarchies) {
                        _cleanup_free_ char *p = strjoin(CGROUP_FS "/", *h, "/", cg);
                        struct stat st;

                        ck_assert_msg(stat(p, &st) == 0 && S_ISDIR(st.st_mode), "%s missing", p);
                }

        s.cpu_quota_per_sec_usec = QUOTA_PER_SEC_USEC;
        s.memory_max = MEMORY_MAX;
        ck_assert_int_eq(parse_index_list("0", 8191, &s.allowed_cpus, &s.allowed_cpus_size), 0);
        if (has_disk) {
                s.io_limits = new0(CGroupIODeviceLimit, 1);
                ck_assert_ptr_nonnull(s.io_limits);
                s.io_limits[0] = (CGroupIODeviceLimit) {
                        .path = strdup("/"),
                        .devnum = disk,
                        .limit = { CGROUP_LIMIT_MAX, WRITE_BPS, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX },
                };
                s.n_io_limits = 1;
        }
        k = cgroup_apply(r, cg, &s, _CGROUP_MASK_ALL, &msg);
        ck_assert_msg(k == 0, "apply: %s (%s)", strerror(-k), strna(msg));

        /* the kernel's own view of what was written */
        if (v2) {
                assert_cg_file(r, NULL, cg, "cpu.max", "20000 100000\n");
                assert_cg_file(r, NULL, cg, "memory.max", "268435456\n");
                assert_cg_file(r, NULL, cg, "cpuset.cpus", "0\n");
        } else {
                assert_cg_file(r, "cpu", cg, "cpu.cfs_quota_us", "20000\n");
                assert_cg_file(r, "cpu", cg, "cpu.cfs_period_us", "100000\n");
                assert_cg_file(r, "memory", cg, "memory.limit_in_bytes", "268435456\n");
                assert_cg_file(r, "cpuset", cg, "cpuset.cpus", "0\n");
        }
        if (has_disk) {
                const char *file = v2 ? "io.max" : "blkio.throttle.write_bps_device";
                _cleanup_free_ char *t = read_file(r, "blkio", cg, file);
                int n_line;

                if (v2)
                        n_line = asprintf(&line, "%u:%u rbps=max wbps=%" PRIu64 " riops=max wiops=max\n",
                                          major(disk), minor(disk), WRITE_BPS);
                else
                        n_line = asprintf(&line, "%u:%u %" PRIu64 "\n", major(disk), minor(disk), WRITE_BPS);
                ck_assert_int_ge(n_line, 0);
                ck_assert_msg(strstr(t, line), "'%s' lacks '%s'", t, line);
        }

        ck_assert_int_eq(cgroup_read_settings(r, cg, &back), 0);
        ck_assert_uint_eq(back.cpu_quota_per_sec_usec, QUOTA_PER_SEC_USEC);
        ck_assert_uint_eq(back.cpu_quota_period_usec, USEC_INFINITY);
        ck_assert_uint_eq(back.memory_max, MEMORY_MAX);
        ck_assert_uint_eq(back.allowed_cpus_size, 1);
        ck_assert_uint_eq(back.allowed_cpus[0], 0x01);
        ck_assert_uint_eq(back.n_io_limits, s.n_io_limits);
        if (has_disk) {
                ck_assert_uint_eq(back.io_limits[0].devnum, disk);
                ck_assert_uint_eq(back.io_limits[0].limit[CGROUP_IO_WBPS], WRITE_BPS);
        }
        if (!v2) {
                /* what v1 cannot express is refused and named */
                CGroupSettings high = CGROUP_SETTINGS_INIT;

                high.memory_high = MEMORY_MAX / 2;
                ck_assert_int_eq(cgroup_apply(r, cg, &high, CGROUP_MASK_MEMORY_HIGH, &msg), -EOPNOTSUPP);
                ck_assert_str_eq(msg, "MemoryHigh= (cgroup v1 has no memory.high)");
                msg = mfree(msg);
        }

        /* a process in it */
        ck_assert_int_eq(pipe2(go, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(report, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                child_main(go[0], report[1], parent, has_disk);
        (void) close(go[0]);
        (void) close(report[1]);

        k = cgroup_attach(r, cg, pid);
        if (k < 0)
                kill_and_reap(pid);
        ck_assert_msg(k == 0, "attach: %s", strerror(-k));
        ck_assert_int_eq(write(go[1], "g", 1), 1);
        ck_assert_int_eq(read(report[0], &rep, sizeof(rep)), sizeof(rep));

        ck_assert_int_eq(cgroup_get_pids(r, cg, &pids, &n), 0);
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(pids[0], pid);
        ck_assert_int_eq(cgroup_read_usage(r, cg, &u), 0);
        printf("live: cgroup v%d, %s: CPU %.1f%% of one CPU under CPUQuota=20%%; ", cgroup_root_version(r),
               cg, rep.cpu_share * 100);
        if (has_disk)
                printf("O_DIRECT writes %.2f MB/s under %u:%u %" PRIu64 " B/s; ", rep.write_mbps,
                       major(disk), minor(disk), WRITE_BPS);
        printf("usage: cpu %" PRIu64 " µs, read %" PRIu64 " B, written %" PRIu64 " B, memory %" PRIu64
               " B, tasks %" PRIu64 "\n",
               u.cpu_usage_usec, u.io_read_bytes, u.io_write_bytes, u.memory_current, u.n_tasks);
        (void) fflush(stdout);

        /* the limits hold, and the numbers are the child's */
        ck_assert_msg(rep.cpu_share > 0.05 && rep.cpu_share < 0.30, "CPU share %.3f", rep.cpu_share);
        ck_assert_uint_ge(u.n_tasks, 1);
        ck_assert_uint_ge(u.memory_current, CHILD_TOUCH_BYTES / 2);
        ck_assert_uint_lt(u.memory_current, MEMORY_MAX);
        ck_assert_uint_ge(u.cpu_usage_usec, 100 * USEC_PER_MSEC);
        ck_assert_uint_lt(u.cpu_usage_usec, 2 * USEC_PER_SEC);
        if (has_disk) {
                ck_assert_msg(rep.write_error == 0, "write test: %s", strerror(rep.write_error));
                ck_assert_msg(rep.write_mbps < 1.5 * WRITE_BPS / 1e6, "%.2f MB/s", rep.write_mbps);
                ck_assert_uint_ge(u.io_write_bytes, CHILD_WRITE_BYTES);
        }

        /* not while the process is in it */
        ck_assert_int_eq(cgroup_remove(r, cg), -EBUSY);
        ck_assert_int_eq(cgroup_exists(r, cg), 1);
        kill_and_reap(pid);
        free(pids);
        pids = NULL;
        ck_assert_int_eq(cgroup_get_pids(r, cg, &pids, &n), 0);
        ck_assert_uint_eq(n, 0);
        ck_assert_int_eq(cgroup_attach(r, cg, pid), -ESRCH);

        /* children: cpuset inherited, and the kernel's quota checks between the levels */
        ck_assert_int_eq(cgroup_create(r, leaf), 1);
        if (!v2) {
                assert_cg_file(r, "cpuset", q, "cpuset.cpus", "0\n");
                assert_cg_file(r, "cpuset", leaf, "cpuset.cpus", "0\n");
        }
        cgroup_settings_done(&s);
        s.cpu_quota_per_sec_usec = 100 * USEC_PER_MSEC; /* 10000/100000 */
        ck_assert_int_eq(cgroup_apply(r, q, &s, CGROUP_MASK_CPU_QUOTA, NULL), 0);
        s.cpu_quota_per_sec_usec = 80 * USEC_PER_MSEC; /* 8000/100000 */
        ck_assert_int_eq(cgroup_apply(r, leaf, &s, CGROUP_MASK_CPU_QUOTA, NULL), 0);
        if (!v2) {
                /*
                 * q goes to 15% with a 200 ms period (30000/200000) between the 20% above it and
                 * the 8% below it. v1 checks each file on its own: quota first would make 30% for
                 * a moment (more than the parent's 20%), period first 5% (less than the child's
                 * 8%). The kernel refuses both; cgroup_apply() must find a way.
                 */
                ck_assert_int_eq(cgroup_write_file(r, "cpu", q, "cpu.cfs_quota_us", "30000"), -EINVAL);
                ck_assert_int_eq(cgroup_write_file(r, "cpu", q, "cpu.cfs_period_us", "200000"), -EINVAL);
                assert_cg_file(r, "cpu", q, "cpu.cfs_quota_us", "10000\n");
        }
        s.cpu_quota_per_sec_usec = 150 * USEC_PER_MSEC;
        s.cpu_quota_period_usec = 200 * USEC_PER_MSEC;
        k = cgroup_apply(r, q, &s, CGROUP_MASK_CPU_QUOTA, NULL);
        ck_assert_msg(k == 0, "quota 15%% at 200 ms: %s", strerror(-k));
        if (v2)
                assert_cg_file(r, NULL, q, "cpu.max", "30000 200000\n");
        else {
                assert_cg_file(r, "cpu", q, "cpu.cfs_quota_us", "30000\n");
                assert_cg_file(r, "cpu", q, "cpu.cfs_period_us", "200000\n");
        }
        /* and the kernel's refusal comes through: the parent's 20% is the most */
        s.cpu_quota_per_sec_usec = 500 * USEC_PER_MSEC;
        if (!v2)
                ck_assert_int_eq(cgroup_apply(r, q, &s, CGROUP_MASK_CPU_QUOTA, NULL), -EINVAL);

        ck_assert_int_eq(cgroup_remove(r, cg), -EBUSY); /* children */
        ck_assert_int_eq(cgroup_remove(r, leaf), 1);
        ck_assert_int_eq(cgroup_remove(r, q), 1);
        ck_assert_int_eq(cgroup_remove(r, cg), 1);
        ck_assert_int_eq(cgroup_exists(r, cg), 0);
        ck_assert_int_eq(cgroup_remove(r, cg), 0);
}
END_TEST

/* A child that only waits to be killed (and dies with us); realtime: SCHED_FIFO. */
static pid_t fork_sleeper(bool realtime) {
        pid_t parent = getpid(), pid;

        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                if (getppid() != parent)
                        _exit(EXIT_FAILURE);
                (void) alarm(120);
                for (;;)
                        pause();
        }
        if (realtime)
                ck_assert_int_eq(sched_setscheduler(pid, SCHED_FIFO, &(struct sched_param) { .sched_priority = 1 }), 0);
        return pid;
}

/* Whether pid is in path in every hierarchy (/proc/PID/cgroup, as the kernel sees it). */
static bool in_cgroup_everywhere(const CGroupRoot *r, pid_t pid, const char *path) {
        bool v2 = cgroup_root_version(r) == 2;

        for (size_t i = 0; i < (v2 ? 1 : ELEMENTSOF(v1_hierarchies)); i++) {
                _cleanup_free_ char *p = NULL;

                ck_assert_int_eq(proc_pid_cgroup_controller("/proc", pid, v2 ? NULL : v1_hierarchies[i], &p), 0);
                if (!streq(p + 1, path)) {
                        printf("process %i is in %s in %s, not in %s\n", (int) pid, p, v2 ? "v2" : v1_hierarchies[i],
                               path);
                        return false;
                }
        }
        return true;
}

/*
 * Every multi-step operation is all or nothing on the kernel: a cgroup name that is an interface
 * file leaves nothing behind, and a move the kernel refuses half-way puts everything back.
 */
START_TEST(test_live_all_or_nothing) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = open_root();
        _cleanup_free_ char *src = cg_path("src"), *dst = cg_path("dst"), *rt = cg_path("rt"),
                            *shares = cg_path("cpu.shares"), *stat_ = cg_path("memory.stat");
        bool v2 = cgroup_root_version(r) == 2;
        size_t failed = 42;
        pid_t a, b;

        ck_assert_int_eq(cgroup_create(r, src), 1);
        ck_assert_int_eq(cgroup_create(r, dst), 1);

        /* names of interface files: refused, nothing left in any hierarchy */
        ck_assert_int_eq(cgroup_create(r, stat_), -ENOTDIR);
        if (!v2)
                ck_assert_int_eq(cgroup_create(r, shares), -ENOTDIR);
        for (size_t i = 0; i < (v2 ? 1 : ELEMENTSOF(v1_hierarchies)); i++)
                FOREACH_ELEMENT(name, ((const char *const[]) { shares, stat_ })) {
                        _cleanup_free_ char *p = v2 ? strjoin(CGROUP_FS "/", *name)
                                                    : strjoin(CGROUP_FS "/", v1_hierarchies[i], "/", *name);
                        struct stat st;

                        ck_assert_msg(stat(p, &st) < 0 || !S_ISDIR(st.st_mode), "%s left behind", p);
                }

        a = fork_sleeper(false);
        ck_assert_int_eq(cgroup_attach(r, src, a), 0);
        ck_assert(in_cgroup_everywhere(r, a, src));

        if (!v2) {
                /* a cpuset without CPUs takes no process (ENOSPC), the third move of six */
                ck_assert_int_eq(cgroup_write_file(r, "cpuset", dst, "cpuset.cpus", ""), 0);
                ck_assert_int_eq(cgroup_attach_many(r, dst, &a, 1, &failed), -ENOSPC);
                ck_assert_uint_eq(failed, 0);
                ck_assert(in_cgroup_everywhere(r, a, src));

                /* a realtime process cannot go where cpu.rt_runtime_us is 0: the other goes back */
                if (access(CGROUP_FS "/cpu/cpu.rt_runtime_us", F_OK) >= 0) {
                        ck_assert_int_eq(cgroup_create(r, rt), 1);
                        b = fork_sleeper(true);
                        ck_assert_int_eq(cgroup_attach_many(r, rt, (const pid_t[]) { a, b }, 2, &failed), -EINVAL);
                        ck_assert_uint_eq(failed, 1);
                        ck_assert(in_cgroup_everywhere(r, a, src));
                        kill_and_reap(b);
                } else
                        printf("note: no cpu.rt_runtime_us (no RT group scheduling): no realtime case\n");
        }
        kill_and_reap(a);
}
END_TEST

/* Whatever a failed test left: its processes (ours, by PID) and its cgroups, deepest first. */
static void cleanup_tree(CGroupRoot *r, const char *path) {
        _cleanup_strv_free_ char **children = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;

        if (cgroup_list_children(r, path, &children) >= 0)
                STRV_FOREACH(c, children) {
                        _cleanup_free_ char *p = strjoin(path, "/", *c);

                        if (p)
                                cleanup_tree(r, p);
                }

        for (int attempt = 0; attempt < 50; attempt++) {
                if (cgroup_get_pids(r, path, &pids, &n) >= 0)
                        for (size_t i = 0; i < n; i++)
                                (void) kill(pids[i], SIGKILL);
                pids = mfree(pids);
                if (cgroup_remove(r, path) != -EBUSY)
                        return;
                (void) usleep(100 * 1000);
        }
        fprintf(stderr, "could not remove %s\n", path);
}

/* tonari-test-<pid> of this run, or of a run whose process is gone: left behind. */
static unsigned count_leftovers(const CGroupRoot *r) {
        unsigned n = 0;

        bool v2 = cgroup_root_version(r) == 2;

        for (size_t i = 0; i < (v2 ? 1 : ELEMENTSOF(v1_hierarchies)); i++) {
                _cleanup_free_ char *dir = v2 ? strdup(CGROUP_FS)
                                              : strjoin(CGROUP_FS "/", v1_hierarchies[i]);
                _cleanup_closedir_ DIR *d = dir ? opendir(dir) : NULL;
                struct dirent *de;

                if (!d)
                        continue;
                while ((de = readdir(d))) {
                        const char *num = startswith(de->d_name, "tonari-test-");
                        int pid;

                        if (!num || safe_atoi(num, &pid) < 0)
                                continue;
                        if (pid == getpid() || (kill(pid, 0) < 0 && errno == ESRCH)) {
                                fprintf(stderr, "left behind: %s/%s\n", dir, de->d_name);
                                n++;
                        }
                }
        }
        return n;
}

int main(void) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        SRunner *sr;
        Suite *s;
        TCase *tc;
        int failed, k;

        if (geteuid() != 0) {
                printf("SKIP: needs root to create cgroups\n");
                return 77;
        }
        k = cgroup_root_new(CGROUP_FS, &r);
        if (k < 0) {
                printf("SKIP: no cgroup file system at " CGROUP_FS ": %s\n", strerror(-k));
                return 77;
        }
        if (cgroup_root_version(r) == 1)
                FOREACH_ELEMENT(h, v1_hierarchies)
                        if (!cgroup_root_has_controller(r, *h)) {
                                printf("SKIP: no v1 %s hierarchy at " CGROUP_FS "\n", *h);
                                return 77;
                        }
        (void) snprintf(cg, sizeof(cg), "tonari-test-%i", (int) getpid());

        s = suite_create("cgroup-live");
        tc = tcase_create("live");
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_live);
        tcase_add_test(tc, test_live_all_or_nothing);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_ENV);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);

        cleanup_tree(r, cg);
        if (count_leftovers(r) > 0)
                failed++;
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
