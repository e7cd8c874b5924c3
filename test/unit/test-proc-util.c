/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <time.h>
#include <unistd.h>

#include "fake-tree.h"
#include "proc-util.h"

START_TEST(test_stat_parse) {
        ProcStat st;

        ck_assert_int_eq(proc_stat_parse("1234 (bash) S 1 1234 1234 34816 5678 4194304 1 2 3 4 17 23 0 0 20 0 1 0 99 "
                                         "1000 200 18446744073709551615\n",
                                         &st),
                         0);
        ck_assert_int_eq(st.state, 'S');
        ck_assert_int_eq(st.ppid, 1);
        ck_assert_uint_eq(st.flags, 4194304);
        ck_assert_uint_eq(st.utime_ticks, 17);
        ck_assert_uint_eq(st.stime_ticks, 23);
        ck_assert_uint_eq(st.num_threads, 1);
        ck_assert_uint_eq(st.start_time_ticks, 99);

        /* A real-time thread group: negative priority and nice are skipped, not refused. */
        ck_assert_int_eq(proc_stat_parse("42 (rt) D 1 42 42 0 -1 4194560 0 0 0 0 3 4 0 0 -51 -20 12 0 777 0 0\n", &st),
                         0);
        ck_assert_int_eq(st.state, 'D');
        ck_assert_uint_eq(st.utime_ticks, 3);
        ck_assert_uint_eq(st.stime_ticks, 4);
        ck_assert_uint_eq(st.num_threads, 12);
        ck_assert_uint_eq(st.start_time_ticks, 777);

        /* A command name can be anything, including ") S 1" and spaces. */
        ck_assert_int_eq(proc_stat_parse("7 (evil) R 9 (x) S 2 7 7 0 -1 2097216 0 0 0 0 5 6 0 0 20 0 1 0 9 0 0\n", &st), 0);
        ck_assert_int_eq(st.state, 'S');
        ck_assert_int_eq(st.ppid, 2);
        ck_assert_uint_eq(st.flags, 2097216);
        ck_assert_uint_eq(st.start_time_ticks, 9);

        const char *bad[] = { "", "1234", "1234 (bash", "1 (x) S 1 2 3", "1 (x)S 1 1 1 1 1 1 1 1 1 1 5 6",
                              "1 (x) SS 1 1 1 1 1 1 1 1 1 1 5 6", "1 (x) S -1 1 1 1 1 1 1 1 1 1 5 6",
                              "1 (x) S 1 1 1 1 1 flags 1 1 1 1 5 6",
                              "1 (x) S 1 1 1 1 -1 4194304 0 0 0 0 5 6 0 0 20 0 threads 0 9",
                              "1 (x) S 1 1 1 1 -1 4194304 0 0 0 0 5 6 0 0 20 0 1 0",
                              "1 (x) S 1 1 1 1 -1 4194304 0 0 0 0 5 6 0 0 20 0 1 0 99999999999999999999999" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(proc_stat_parse(bad[i], &st) == -EBADMSG, "'%s' accepted", bad[i]);
}
END_TEST

START_TEST(test_kernel_thread) {
        fake_root_new();
        /* kthreadd's flags include PF_KTHREAD (0x00200000). */
        fake_file("proc/2/stat", "2 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n");
        fake_file("proc/100/stat", "100 (sleep) S 1 100 100 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0\n");

        ck_assert_int_eq(proc_pid_is_kernel_thread(fake_root, 2), -ESRCH); /* root is fake_root, not proc */
        _cleanup_free_ char *proc = strjoin(fake_root, "/proc");
        ck_assert_int_eq(proc_pid_is_kernel_thread(proc, 2), 1);
        ck_assert_int_eq(proc_pid_is_kernel_thread(proc, 100), 0);
        ck_assert_int_eq(proc_pid_is_kernel_thread(proc, 101), -ESRCH);
        ck_assert_int_eq(proc_pid_is_kernel_thread(proc, 0), -EINVAL);
        ck_assert_int_eq(proc_pid_is_kernel_thread(proc, -5), -EINVAL);
}
END_TEST

START_TEST(test_real_proc) {
        ProcStat st;

        /* Our own process: a user process whose parent exists. */
        ck_assert_int_eq(proc_pid_stat("/proc", getpid(), &st), 0);
        ck_assert_int_eq(st.ppid, getppid());
        ck_assert_int_eq(proc_pid_is_kernel_thread("/proc", getpid()), 0);
}
END_TEST

START_TEST(test_cgroup_parse) {
        char *p = NULL;

        ck_assert_int_eq(proc_cgroup_parse("0::/tonari.slice/tonari-web.slice/tonari-web.scope\n", &p), 0);
        ck_assert_str_eq(p, "/tonari.slice/tonari-web.slice/tonari-web.scope");
        p = mfree(p);
        ck_assert_int_eq(proc_cgroup_parse("12:pids:/x\n4:cpu,cpuacct:/tonari.slice/web\n1:name=systemd:/\n0::/\n", &p), 0);
        /* Hybrid: the v2 line wins. */
        ck_assert_str_eq(p, "/");
        p = mfree(p);
        ck_assert_int_eq(proc_cgroup_parse("12:pids:/x\n4:cpu,cpuacct:/tonari.slice/web\n", &p), 0);
        ck_assert_str_eq(p, "/tonari.slice/web");
        p = mfree(p);
        ck_assert_int_eq(proc_cgroup_parse("12:pids:/x\n", &p), -ENODATA);
        ck_assert_int_eq(proc_cgroup_parse("garbage\n", &p), -EBADMSG);
        ck_assert_int_eq(proc_cgroup_parse("0::relative\n", &p), -EBADMSG);
        ck_assert_ptr_null(p);

        ck_assert_int_eq(proc_pid_cgroup("/proc", getpid(), &p), 0);
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(p[0], '/');
        free(p);
}
END_TEST

/* One hierarchy's line: where cgroup_attach_many() puts a process back. */
START_TEST(test_cgroup_parse_controller) {
        static const char hybrid[] = "9:name=systemd:/\n8:pids:/x\n4:memory:/m/n\n2:cpu,cpuacct:/tonari.slice/web\n0::/u\n";
        char *p = NULL;

        ck_assert_int_eq(proc_cgroup_parse_controller(hybrid, "pids", &p), 0);
        ck_assert_str_eq(p, "/x");
        p = mfree(p);
        ck_assert_int_eq(proc_cgroup_parse_controller(hybrid, "memory", &p), 0);
        ck_assert_str_eq(p, "/m/n");
        p = mfree(p);
        ck_assert_int_eq(proc_cgroup_parse_controller(hybrid, "cpuacct", &p), 0); /* co-mounted */
        ck_assert_str_eq(p, "/tonari.slice/web");
        p = mfree(p);
        ck_assert_int_eq(proc_cgroup_parse_controller(hybrid, NULL, &p), 0); /* v2 */
        ck_assert_str_eq(p, "/u");
        p = mfree(p);
        ck_assert_int_eq(proc_cgroup_parse_controller(hybrid, "blkio", &p), -ENODATA);
        ck_assert_int_eq(proc_cgroup_parse_controller(hybrid, "cpu,cpuacct", &p), -ENODATA);
        ck_assert_int_eq(proc_cgroup_parse_controller("4:memory:/a\n", NULL, &p), -ENODATA);
        /* every line is checked, also after the one looked for */
        ck_assert_int_eq(proc_cgroup_parse_controller("4:memory:/a\ngarbage\n", "memory", &p), -EBADMSG);
        ck_assert_ptr_null(p);

        ck_assert_int_eq(proc_pid_cgroup_controller("/proc", getpid(), NULL, &p) == 0 ||
                                 proc_pid_cgroup_controller("/proc", getpid(), "cpu", &p) == 0,
                         1);
        ck_assert_int_eq(p[0], '/');
        free(p);
        ck_assert_int_eq(proc_pid_cgroup_controller("/proc", 0, NULL, &p), -EINVAL);
}
END_TEST

START_TEST(test_start_time) {
        uint64_t ticks, hz = (uint64_t) sysconf(_SC_CLK_TCK);

        fake_root_new();
        fake_file("proc/100/stat", "100 (sleep) S 1 100 100 0 -1 4194304 0 0 0 0 0 0 0 0 20 0 1 0 12345 0 0\n");
        fake_file("proc/101/stat", "101 (broken) S 1\n");
        _cleanup_free_ char *proc = strjoin(fake_root, "/proc");
        ck_assert_int_eq(proc_pid_start_time(proc, 100, &ticks), 0);
        ck_assert_uint_eq(ticks, 12345);
        ticks = 7;
        ck_assert_int_eq(proc_pid_start_time(proc, 102, &ticks), -ESRCH);
        ck_assert_int_eq(proc_pid_start_time(proc, 101, &ticks), -EBADMSG);
        ck_assert_int_eq(proc_pid_start_time(proc, 0, &ticks), -EINVAL);
        ck_assert_uint_eq(ticks, 7); /* untouched on failure */

        /* Our own start time is in the past and does not change between two reads. */
        uint64_t a, b;
        ck_assert_int_eq(proc_pid_start_time("/proc", getpid(), &a), 0);
        ck_assert_int_eq(proc_pid_start_time("/proc", getpid(), &b), 0);
        ck_assert_uint_eq(a, b);
        struct timespec ts;
        ck_assert_int_eq(clock_gettime(CLOCK_BOOTTIME, &ts), 0);
        ck_assert_uint_le(proc_ticks_to_usec(a), timespec_load(&ts));

        /* Conversions, at USER_HZ (100 on Linux) and near the top of the range. */
        ck_assert_uint_eq(proc_ticks_to_usec(0), 0);
        ck_assert_uint_eq(proc_ticks_to_usec(hz), USEC_PER_SEC);
        ck_assert_uint_eq(proc_ticks_to_usec(12345), 12345 * USEC_PER_SEC / hz);
        ck_assert_uint_eq(proc_usec_to_ticks(USEC_PER_SEC), hz);
        ck_assert_uint_eq(proc_usec_to_ticks(USEC_PER_SEC - 1), hz - 1);
        ck_assert_uint_eq(proc_usec_to_ticks(proc_ticks_to_usec(987654321)), 987654321);
        uint64_t big = UINT64_MAX / USEC_PER_SEC * 2 + 1; /* ticks * USEC_PER_SEC would overflow */
        ck_assert_uint_eq(proc_ticks_to_usec(big), big / hz * USEC_PER_SEC + big % hz * USEC_PER_SEC / hz);
        ck_assert_uint_eq(proc_ticks_to_usec(UINT64_MAX), USEC_INFINITY);
}
END_TEST

START_TEST(test_schedstat) {
        ProcSchedstat d = { .run_delay_nsec = 4242 };

        ck_assert_int_eq(proc_schedstat_parse("2294076 1500999 3\n", &d), 0);
        ck_assert_uint_eq(d.on_cpu_nsec, 2294076);
        ck_assert_uint_eq(d.run_delay_nsec, 1500999);
        ck_assert_uint_eq(d.timeslices, 3);
        ck_assert_int_eq(proc_schedstat_parse("12\n", &d), -EBADMSG);
        ck_assert_int_eq(proc_schedstat_parse("12 13\n", &d), -EBADMSG);
        ck_assert_int_eq(proc_schedstat_parse("", &d), -EBADMSG);
        ck_assert_uint_eq(d.run_delay_nsec, 1500999); /* untouched */
        /* Ours, if the kernel keeps it (CONFIG_SCHED_INFO). */
        int r = proc_pid_schedstat("/proc", getpid(), &d);
        ck_assert(r == 0 || r == -ENOENT);
}
END_TEST

START_TEST(test_io) {
        ProcIO io = { .rchar = 99 };

        ck_assert_int_eq(proc_io_parse("rchar: 1463274409\nwchar: 492978840\nsyscr: 422597\nsyscw: 6516500\n"
                                       "read_bytes: 42004480\nwrite_bytes: 507437056\n"
                                       "cancelled_write_bytes: 25559040\n",
                                       &io),
                         0);
        ck_assert_uint_eq(io.rchar, 1463274409);
        ck_assert_uint_eq(io.wchar, 492978840);
        ck_assert_uint_eq(io.syscr, 422597);
        ck_assert_uint_eq(io.syscw, 6516500);
        ck_assert_uint_eq(io.read_bytes, 42004480);
        ck_assert_uint_eq(io.write_bytes, 507437056);
        ck_assert_uint_eq(io.cancelled_write_bytes, 25559040);

        /* Any order, and keys a later kernel may add. */
        ck_assert_int_eq(proc_io_parse("future: 5\ncancelled_write_bytes: 0\nwrite_bytes: 2\nread_bytes: 1\n"
                                       "syscw: 4\nsyscr: 3\nwchar: 6\nrchar: 7",
                                       &io),
                         0);
        ck_assert_uint_eq(io.syscr, 3);
        ck_assert_uint_eq(io.rchar, 7);

        const char *bad[] = {
                "",
                "rchar: 1\n",                                                                 /* missing keys */
                "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\n", /* one missing */
                "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\ncancelled_write_bytes: x\n",
                "rchar: 1\nrchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\n"
                "cancelled_write_bytes: 0\n",                                                 /* twice */
                "rchar 1\n",
                "rchar: -1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\ncancelled_write_bytes: 0\n",
        };
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ck_assert_msg(proc_io_parse(bad[i], &io) == -EBADMSG, "'%s' accepted", bad[i]);
        ck_assert_uint_eq(io.syscr, 3); /* untouched on failure */

        fake_root_new();
        fake_file("proc/100/io", "rchar: 1\nwchar: 2\nsyscr: 3\nsyscw: 4\nread_bytes: 5\nwrite_bytes: 6\n"
                                 "cancelled_write_bytes: 7\n");
        _cleanup_free_ char *proc = strjoin(fake_root, "/proc");
        ck_assert_int_eq(proc_pid_io(proc, 100, &io), 0);
        ck_assert_uint_eq(io.cancelled_write_bytes, 7);
        ck_assert_int_eq(proc_pid_io(proc, 101, &io), -ESRCH);
        ck_assert_int_eq(proc_pid_io(proc, 0, &io), -EINVAL);

        /* Our own: readable, and we have read this much at least (the test binary's files). */
        ck_assert_int_eq(proc_pid_io("/proc", getpid(), &io), 0);
        ck_assert_uint_gt(io.syscr, 0);
}
END_TEST

START_TEST(test_maps_line) {
        ProcMapsEntry e = { .start = 42 };

        ck_assert_int_eq(proc_maps_parse_line("7f0c1a000000-7f0c1a021000 rw-p 00000000 00:00 0 \n", &e), 0);
        ck_assert_uint_eq(e.start, 0x7f0c1a000000ULL);
        ck_assert_uint_eq(e.end, 0x7f0c1a021000ULL);
        ck_assert_str_eq(e.perms, "rw-p");
        ck_assert(!e.special);
        ck_assert_int_eq(proc_maps_parse_line("55d0-55e0 r-xp 00001000 fe:01 1234   /usr/bin/with space", &e), 0);
        ck_assert_uint_eq(e.start, 0x55d0);
        ck_assert(!e.special);
        ck_assert_int_eq(proc_maps_parse_line("ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0  [vsyscall]", &e), 0);
        ck_assert(e.special);
        ck_assert_int_eq(proc_maps_parse_line("7ffd-7ffe r--p 00000000 00:00 0 [vvar]", &e), 0);
        ck_assert(e.special);
        ck_assert_int_eq(proc_maps_parse_line("7ffd-7ffe r-xp 00000000 00:00 0 [stack]", &e), 0);
        ck_assert(!e.special);
        e.start = 42;
        ck_assert_int_eq(proc_maps_parse_line("", &e), -EINVAL);
        ck_assert_int_eq(proc_maps_parse_line("2000-1000 rw-p 0 00:00 0", &e), -EINVAL);
        ck_assert_int_eq(proc_maps_parse_line("1000-1000 rw-p 0 00:00 0", &e), -EINVAL);
        ck_assert_int_eq(proc_maps_parse_line("1000-2000 rw-p", &e), -EINVAL);
        ck_assert_int_eq(proc_maps_parse_line("zz-2000 rw-p 0 00:00 0", &e), -EINVAL);
        ck_assert_int_eq(proc_maps_parse_line(NULL, &e), -EINVAL);
        ck_assert_uint_eq(e.start, 42);
}
END_TEST

TEST_SUITE("proc-util", test_schedstat, test_stat_parse, test_kernel_thread, test_real_proc, test_cgroup_parse,
           test_cgroup_parse_controller, test_start_time, test_io, test_maps_line)
