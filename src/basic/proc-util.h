/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "time-util.h"

/*
 * The one reader of /proc/<pid> files. proc is the procfs mount ("/proc"; a fake tree in tests).
 */

/* Fields of /proc/<pid>/stat that tonari uses. */
typedef struct ProcStat {
        char state;        /* R, S, D, Z, ... */
        pid_t ppid;
        unsigned flags;    /* PF_* */
        uint64_t utime_ticks;
        uint64_t stime_ticks;
        unsigned num_threads;
        uint64_t start_time_ticks; /* since boot: with the PID, identifies one process */
} ProcStat;

/* Parses the text of /proc/<pid>/stat; the command name may contain spaces and parentheses. */
int proc_stat_parse(const char *text, ProcStat *ret);
/* -ESRCH if the process does not exist. */
int proc_pid_stat(const char *proc, pid_t pid, ProcStat *ret);
/*
 * The start time of a process, in clock ticks since boot (CLOCK_BOOTTIME), -ESRCH if there is none.
 * A PID is reused once its process is gone: (pid, start time) identifies one process, so whoever
 * keeps state about a process by PID keeps the start time with it and compares both.
 */
int proc_pid_start_time(const char *proc, pid_t pid, uint64_t *ret_ticks);
/* Clock ticks (USER_HZ, the unit of /proc/<pid>/stat's times) to microseconds. */
usec_t proc_ticks_to_usec(uint64_t ticks);
/* The other way, rounded down; for comparing a start time derived from another clock. */
uint64_t proc_usec_to_ticks(usec_t usec);
/*
 * /proc/<pid>/io: the I/O counters of the whole process (all its threads, live and exited). Exact,
 * unlike taskstats, which rounds the call and character counts down to multiples of 1024.
 */
typedef struct ProcIO {
        uint64_t rchar;       /* bytes through read(2) and friends, whatever the file */
        uint64_t wchar;
        uint64_t syscr;       /* read calls */
        uint64_t syscw;       /* write calls */
        uint64_t read_bytes;  /* storage I/O */
        uint64_t write_bytes;
        uint64_t cancelled_write_bytes;
} ProcIO;

int proc_io_parse(const char *text, ProcIO *ret);
/* -ESRCH if the process does not exist; -EACCES without the right to ptrace it. */
int proc_pid_io(const char *proc, pid_t pid, ProcIO *ret);

/*
 * /proc/<pid>/schedstat (the process's main thread): its time on a CPU, the time it spent runnable
 * waiting for one (counted whether or not delay accounting is on) and how often it ran. -ENOENT
 * without CONFIG_SCHED_INFO.
 */
typedef struct ProcSchedstat {
        uint64_t on_cpu_nsec;
        uint64_t run_delay_nsec;
        uint64_t timeslices;
} ProcSchedstat;

int proc_schedstat_parse(const char *text, ProcSchedstat *ret);
int proc_pid_schedstat(const char *proc, pid_t pid, ProcSchedstat *ret);

/* 1 for a kernel thread (PF_KTHREAD), 0 for a user process, -ESRCH if there is none. */
int proc_pid_is_kernel_thread(const char *proc, pid_t pid);

/*
 * The cgroup of a process from the text of /proc/<pid>/cgroup: the v2 path, or on v1 the path in
 * the hierarchy with the cpu controller. Absolute ("/tonari.slice/web"). -ENODATA if neither.
 */
int proc_cgroup_parse(const char *text, char **ret);
int proc_pid_cgroup(const char *proc, pid_t pid, char **ret);
/*
 * The cgroup of a process in one hierarchy: the v1 hierarchy that has controller, or the v2 one for
 * controller NULL. Absolute; -ENODATA if the process is in no such hierarchy.
 */
int proc_cgroup_parse_controller(const char *text, const char *controller, char **ret);
int proc_pid_cgroup_controller(const char *proc, pid_t pid, const char *controller, char **ret);

/* One line of /proc/<pid>/maps: "start-end perms offset dev inode [path]". */
typedef struct ProcMapsEntry {
        uint64_t start;
        uint64_t end;       /* exclusive */
        char perms[5];      /* "rw-p" */
        bool special;       /* a kernel-provided area ([vsyscall], [vvar], [vdso]): no movable pages */
} ProcMapsEntry;

/* Parses one line (without or with its newline); -EINVAL if it is not a maps line. */
int proc_maps_parse_line(const char *line, ProcMapsEntry *ret);
