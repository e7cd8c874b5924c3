/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "time-util.h"

/*
 * The hog limiter's edge to the kernel: per-task statistics (struct taskstats) over generic netlink
 * (libmnl), the source the paper's Resource Manager samples (seed 001, §3.1).
 *
 * Two sockets: one for queries (TASKSTATS_CMD_GET, answered synchronously) and, once
 * taskstats_watch_exits() was called, one the kernel sends a record to whenever a task exits, so
 * the last interval of a process that exits between two sampling rounds is not lost. Its fd is for
 * an sd-event io source; taskstats_drain_exits() reads what is queued without blocking.
 *
 * Every query needs CAP_NET_ADMIN (the kernel's GENL_ADMIN_PERM on TASKSTATS_CMD_GET).
 */

#define TASKSTATS_COMM_MAX 32

typedef enum TaskstatsKind {
        TASKSTATS_TASK,         /* one task (thread); for a single-threaded process, the process */
        TASKSTATS_THREAD_GROUP, /* the sum over a thread group: CPU times and delays (exit records:
                                 * delays only; the kernel sums nothing else into them) */
} TaskstatsKind;

typedef struct TaskstatsSample {
        TaskstatsKind kind;
        uint16_t version; /* of the kernel's struct taskstats */
        pid_t pid;  /* the task's PID (for TASKSTATS_THREAD_GROUP: the TGID) */
        pid_t tgid; /* 0 if the kernel does not say (struct taskstats before version 12) */
        pid_t ppid;
        /*
         * With pid, the identity of the process: clock ticks since boot as in /proc/<pid>/stat.
         * Queries read it before and after asking the kernel and fail with -ESRCH if it changed, so
         * the numbers belong to that process. Exit records of TASKSTATS_TASK derive the start of
         * the task's process (its thread group leader) from the elapsed time at the moment the
         * record is read (start_time_estimated): compare those with taskstats_same_start_time().
         * Exit records of TASKSTATS_THREAD_GROUP have 0 here: match them by tgid with the
         * group_dead task record of the same exit, which comes first.
         */
        uint64_t start_time_ticks;
        bool start_time_estimated;
        usec_t timestamp_usec; /* CLOCK_MONOTONIC when the sample was taken or the exit record read */
        usec_t elapsed_usec;   /* since the task (for TASKSTATS_THREAD_GROUP: the process) started */
        usec_t group_elapsed_usec; /* since the process started (ac_tgetime, version 12); 0 unknown */
        usec_t utime_usec;
        usec_t stime_usec;

        /* Storage I/O accounting (bytes that went to or came from a block device, or would have):
         * the I/O the paper limits. Not in TASKSTATS_THREAD_GROUP samples (have_io false). */
        bool have_io;
        uint64_t read_bytes;
        uint64_t write_bytes;
        uint64_t cancelled_write_bytes;
        /* read(2)/write(2)-family calls and bytes through them, whatever the file. taskstats rounds
         * these four down to multiples of 1024 (the kernel's KB_MASK), useless for counting a few
         * calls a second; taskstats_query_process() has them exact from /proc/<pid>/io. */
        uint64_t read_syscalls;
        uint64_t write_syscalls;
        uint64_t read_char;
        uint64_t write_char;

        /*
         * Delay accounting: time spent runnable but waiting for a CPU, and waiting for synchronous
         * block I/O. The kernel counts them only while kernel.task_delayacct=1 (delayacct on the
         * command line, or the sysctl); have_delays is false when it is off, and the fields are 0.
         */
        bool have_delays;
        uint64_t cpu_count;
        usec_t cpu_delay_usec;
        uint64_t blkio_count;
        usec_t blkio_delay_usec;

        /*
         * Whole-process queries: the main thread's time runnable waiting for a CPU from
         * /proc/<pid>/schedstat, counted with or without delay accounting (false without
         * CONFIG_SCHED_INFO).
         */
        bool have_run_delay;
        usec_t run_delay_usec;

        /* Exit records only. */
        bool exited;
        bool group_dead; /* the last task of its thread group: the process is gone */
        uint32_t exit_code;

        char comm[TASKSTATS_COMM_MAX + 1];
} TaskstatsSample;

typedef struct Taskstats Taskstats;

/* proc is the procfs mount ("/proc"): /proc/<pid>/stat and /proc/sys/kernel/task_delayacct. */
int taskstats_new(const char *proc, Taskstats **ret);
Taskstats *taskstats_free(Taskstats *t);
static inline void taskstats_freep(Taskstats **t) {
        taskstats_free(*t);
}
#define _cleanup_taskstats_free_ _cleanup_(taskstats_freep)

/*
 * One task's statistics (TASKSTATS_CMD_ATTR_PID). -ESRCH if there is no such task or it was
 * replaced by another with the same PID during the query; -EPERM without CAP_NET_ADMIN.
 */
int taskstats_query_pid(Taskstats *t, pid_t pid, TaskstatsSample *ret);
/*
 * A whole thread group (TASKSTATS_CMD_ATTR_TGID): CPU times, delays and elapsed time summed over
 * its live and exited threads. The kernel leaves out I/O and the name here, so have_io is false.
 */
int taskstats_query_tgid(Taskstats *t, pid_t tgid, TaskstatsSample *ret);

/*
 * A whole process, as the limiter needs it (cgroups move processes, not threads): the thread
 * group's CPU times and delays from taskstats, and its I/O counters, exact and summed over its
 * threads, from /proc/<pid>/io, both within the start-time check. kind is TASKSTATS_THREAD_GROUP,
 * have_io true, comm empty (the kernel leaves it out).
 */
int taskstats_query_process(Taskstats *t, pid_t pid, TaskstatsSample *ret);

/*
 * A process sampled round after round: its /proc/<pid>/stat and /proc/<pid>/io are held open, so
 * a sample costs three reads of open files and one netlink round trip instead of three opens as
 * well, and the files keep naming that process: once it is gone they fail with -ESRCH, whoever
 * has its PID now. The samples are taskstats_query_process()'s. Two file descriptors each.
 */
typedef struct TaskstatsProcess TaskstatsProcess;
/* -ESRCH: no such process; -EMFILE and the like: use taskstats_query_process() instead. */
int taskstats_process_open(Taskstats *t, pid_t pid, TaskstatsProcess **ret);
TaskstatsProcess *taskstats_process_close(TaskstatsProcess *p);
static inline void taskstats_process_closep(TaskstatsProcess **p) {
        taskstats_process_close(*p);
}
uint64_t taskstats_process_start_time(const TaskstatsProcess *p);
/* -ESRCH once the process is gone. */
int taskstats_process_sample(Taskstats *t, TaskstatsProcess *p, TaskstatsSample *ret);
/*
 * The same, but for a process that is asleep and has used no CPU tick and done no I/O since the
 * previous call, the previous sample with the time moved on, without a netlink query (a round over
 * many idle processes costs that much less): one read of its open schedstat for a process of one
 * thread whose thread has not run since, else two reads (stat and io). 1 for a fresh sample, 0 for
 * a repeated one.
 */
int taskstats_process_sample_changed(Taskstats *t, TaskstatsProcess *p, TaskstatsSample *ret);

/*
 * Whether the kernel counts delays (kernel.task_delayacct), read when t was made and again by this
 * call: the daemon calls it once per sampling round. 1 on, 0 off; kernels before 5.14 have no
 * sysctl and count delays unless booted with nodelayacct, so a missing file counts as on.
 */
int taskstats_refresh_delay_accounting(Taskstats *t);

/*
 * Registers for exit records of tasks on every possible CPU (TASKSTATS_CMD_ATTR_REGISTER_CPUMASK)
 * on a second, non-blocking socket. Idempotent.
 */
int taskstats_watch_exits(Taskstats *t);
/* The socket to watch for EPOLLIN; -EBADF before taskstats_watch_exits(). */
int taskstats_exit_fd(Taskstats *t);

typedef void (*taskstats_exit_handler_t)(const TaskstatsSample *sample, void *userdata);
/*
 * Reads every queued exit record without blocking and calls handler for each: one per exited
 * task, plus a TASKSTATS_THREAD_GROUP one when the last task of a multi-threaded process exits.
 * Returns the number of records. If the socket's queue overflowed in between, records were lost:
 * the ones still queued are delivered and -ENOBUFS is returned, and the lost count kept in
 * taskstats_exits_lost().
 */
int taskstats_drain_exits(Taskstats *t, taskstats_exit_handler_t handler, void *userdata);
uint64_t taskstats_exits_lost(const Taskstats *t);
/*
 * The parser under taskstats_drain_exits(), for one datagram of the exit socket (exposed for the
 * unit tests): calls handler per record; the number of records, or -EBADMSG (or what the netlink
 * layer says) for a malformed one, after the records before it were delivered.
 */
int taskstats_parse_exits(const void *buf, size_t size, bool delay_accounting, taskstats_exit_handler_t handler,
                          void *userdata);

/*
 * Whether an exit record's estimated start time fits a start time read from /proc/<pid>/stat
 * while the process lived: within the delay between the exit and the read of the record (~ms) plus
 * rounding to ticks; 100 ms of slack. A PID is not reused that fast unless pid_max is tiny.
 */
bool taskstats_same_start_time(uint64_t estimated_ticks, uint64_t proc_ticks);

/* What a Features probe says about taskstats on this host. */
typedef struct TaskstatsSupport {
        int error;               /* 0 usable; -ENOENT no TASKSTATS family; -EPERM no CAP_NET_ADMIN */
        bool delay_accounting;   /* kernel.task_delayacct */
        bool io_accounting;      /* the kernel's struct has the storage I/O fields */
        unsigned version;        /* the kernel's struct taskstats version, 0 if unknown */
} TaskstatsSupport;

/*
 * Probes by resolving the family and asking for our own statistics. Returns 0 and fills ret
 * whether taskstats is usable or not (ret->error says); < 0 only on a failure of the probe itself.
 */
int taskstats_probe(const char *proc, TaskstatsSupport *ret);
/* One line for logs and Features: "usable", or what is missing and how to get it. */
const char *taskstats_support_to_string(const TaskstatsSupport *s);
