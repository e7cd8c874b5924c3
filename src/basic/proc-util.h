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
