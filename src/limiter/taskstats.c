/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/taskstats.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "proc-util.h"
#include "string-util.h"
#include "taskstats.h"

/* include/uapi/linux/acct.h: the last task of the thread group exited. */
#define TASKSTATS_AGROUP 0x20

/* A query is answered in the kernel before sendto() returns; this only stops a lost reply from
 * hanging the daemon. */
#define QUERY_TIMEOUT_USEC (5 * USEC_PER_SEC)
/* Room for bursts of exits (a make -j finishing) between two wake-ups: each record is < 1 KiB. */
#define EXIT_RCVBUF_BYTES (4U << 20)

struct Taskstats {
        char *proc;
        struct mnl_socket *nl;
        uint32_t portid;
        uint32_t seq;
        uint16_t family;
        bool delay_accounting;

        struct mnl_socket *exit_nl;
        uint64_t exits_lost;
};

typedef struct ParseState {
        bool delay_accounting;
        /* queries: the one sample asked for */
        TaskstatsSample *sample;
        bool found;
        /* exits: every record */
        taskstats_exit_handler_t handler;
        void *userdata;
        unsigned n_records;
        /* family lookup */
        uint16_t family;
} ParseState;

static int socket_open(struct mnl_socket **ret, uint32_t *ret_portid) {
        struct mnl_socket *nl;

        nl = mnl_socket_open2(NETLINK_GENERIC, SOCK_CLOEXEC);
        if (!nl)
                return -errno;
        if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
                int r = -errno;
                mnl_socket_close(nl);
                return r;
        }
        *ret_portid = mnl_socket_get_portid(nl);
        *ret = nl;
        return 0;
}

/* Sends one request and reads until cb has what it wants (ps->found), the kernel acks, or fails. */
static int transact(Taskstats *t, struct mnl_socket *nl, struct nlmsghdr *nlh, mnl_cb_t cb, ParseState *ps) {
        char buf[MNL_SOCKET_BUFFER_SIZE];
        uint32_t seq = nlh->nlmsg_seq, portid = mnl_socket_get_portid(nl);

        if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0)
                return -errno;
        for (;;) {
                ssize_t n = mnl_socket_recvfrom(nl, buf, sizeof(buf));
                int r;

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return errno == EAGAIN ? -ETIMEDOUT : -errno;
                }
                r = mnl_cb_run(buf, n, seq, portid, cb, ps);
                if (r < 0) {
                        /* A reply to an earlier request that was given up on: skip it. */
                        if (errno == EPROTO)
                                continue;
                        return -errno;
                }
                if (r == MNL_CB_STOP || ps->found)
                        return 0;
        }
}

static struct nlmsghdr *put_request(Taskstats *t, char *buf, uint16_t type, uint16_t flags, uint8_t cmd,
                                    uint8_t version) {
        struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
        struct genlmsghdr *genl;

        nlh->nlmsg_type = type;
        nlh->nlmsg_flags = NLM_F_REQUEST | flags;
        nlh->nlmsg_seq = ++t->seq;
        genl = mnl_nlmsg_put_extra_header(nlh, sizeof(*genl));
        genl->cmd = cmd;
        genl->version = version;
        return nlh;
}

static int family_attr_cb(const struct nlattr *a, void *data) {
        ParseState *ps = data;

        if (mnl_attr_get_type(a) == CTRL_ATTR_FAMILY_ID && mnl_attr_validate(a, MNL_TYPE_U16) >= 0) {
                ps->family = mnl_attr_get_u16(a);
                ps->found = true;
        }
        return MNL_CB_OK;
}

static int family_cb(const struct nlmsghdr *nlh, void *data) {
        return mnl_attr_parse(nlh, sizeof(struct genlmsghdr), family_attr_cb, data);
}

static int resolve_family(Taskstats *t) {
        char buf[MNL_SOCKET_BUFFER_SIZE];
        struct nlmsghdr *nlh;
        ParseState ps = {};
        int r;

        nlh = put_request(t, buf, GENL_ID_CTRL, NLM_F_ACK, CTRL_CMD_GETFAMILY, 1);
        mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, TASKSTATS_GENL_NAME);
        r = transact(t, t->nl, nlh, family_cb, &ps);
        if (r < 0)
                return r; /* -ENOENT: no such family, the kernel was built without CONFIG_TASKSTATS */
        if (!ps.found)
                return -EBADMSG;
        t->family = ps.family;
        return 0;
}

#define HAS_FIELD(len, field) ((len) >= offsetof(struct taskstats, field) + sizeof(((struct taskstats *) 0)->field))

static void sample_from_stats(bool delay_accounting, const void *payload, size_t len, TaskstatsSample *s) {
        struct taskstats ts = {};

        memcpy(&ts, payload, MIN(len, sizeof(ts)));

        s->version = ts.version;
        s->elapsed_usec = ts.ac_etime;
        if (ts.version >= 12 && HAS_FIELD(len, ac_tgetime))
                s->group_elapsed_usec = ts.ac_tgetime;
        s->utime_usec = ts.ac_utime;
        s->stime_usec = ts.ac_stime;
        s->ppid = (pid_t) ts.ac_ppid;
        if (ts.version >= 12 && HAS_FIELD(len, ac_tgid))
                s->tgid = (pid_t) ts.ac_tgid;
        s->exit_code = ts.ac_exitcode;
        s->group_dead = ts.ac_flag & TASKSTATS_AGROUP;
        if (s->kind == TASKSTATS_TASK) {
                memcpy(s->comm, ts.ac_comm, MIN(sizeof(ts.ac_comm), (size_t) TASKSTATS_COMM_MAX));
                s->comm[TASKSTATS_COMM_MAX] = 0;
        }

        if (s->kind == TASKSTATS_TASK && HAS_FIELD(len, cancelled_write_bytes)) {
                s->have_io = true;
                s->read_bytes = ts.read_bytes;
                s->write_bytes = ts.write_bytes;
                s->cancelled_write_bytes = ts.cancelled_write_bytes;
                s->read_syscalls = ts.read_syscalls;
                s->write_syscalls = ts.write_syscalls;
                s->read_char = ts.read_char;
                s->write_char = ts.write_char;
        }

        /* The kernel hands out what it has; with accounting off the numbers stand still, which a
         * policy would read as "nobody waits". Say "unknown" instead. */
        if (delay_accounting) {
                s->have_delays = true;
                s->cpu_count = ts.cpu_count;
                s->cpu_delay_usec = ts.cpu_delay_total / NSEC_PER_USEC;
                s->blkio_count = ts.blkio_count;
                s->blkio_delay_usec = ts.blkio_delay_total / NSEC_PER_USEC;
        }
}

typedef struct AggrState {
        bool delay_accounting;
        TaskstatsSample *s;
        bool have_id, have_stats;
} AggrState;

static int aggr_attr_cb(const struct nlattr *a, void *data) {
        AggrState *as = data;

        switch (mnl_attr_get_type(a)) {
        case TASKSTATS_TYPE_PID:
        case TASKSTATS_TYPE_TGID:
                if (mnl_attr_validate(a, MNL_TYPE_U32) < 0)
                        return MNL_CB_ERROR;
                as->s->pid = (pid_t) mnl_attr_get_u32(a);
                as->have_id = true;
                break;
        case TASKSTATS_TYPE_STATS:
                /* struct taskstats grows at its end with each version; version 1 ends before ac_comm. */
                if (mnl_attr_get_payload_len(a) < offsetof(struct taskstats, ac_etime) + sizeof(uint64_t)) {
                        errno = EBADMSG;
                        return MNL_CB_ERROR;
                }
                sample_from_stats(as->delay_accounting, mnl_attr_get_payload(a), mnl_attr_get_payload_len(a), as->s);
                as->have_stats = true;
                break;
        }
        return MNL_CB_OK;
}

static int stats_attr_cb(const struct nlattr *a, void *data) {
        ParseState *ps = data;
        TaskstatsSample s = {}, *target;
        uint16_t type = mnl_attr_get_type(a);

        if (type != TASKSTATS_TYPE_AGGR_PID && type != TASKSTATS_TYPE_AGGR_TGID)
                return MNL_CB_OK; /* TASKSTATS_TYPE_NULL padding and whatever comes later */

        target = ps->sample ?: &s;
        *target = (TaskstatsSample) {
                .kind = type == TASKSTATS_TYPE_AGGR_PID ? TASKSTATS_TASK : TASKSTATS_THREAD_GROUP,
                .timestamp_usec = now(CLOCK_MONOTONIC),
        };
        AggrState as = { .delay_accounting = ps->delay_accounting, .s = target };
        if (mnl_attr_parse_nested(a, aggr_attr_cb, &as) < 0)
                return MNL_CB_ERROR;
        if (!as.have_id || !as.have_stats) {
                errno = EBADMSG;
                return MNL_CB_ERROR;
        }
        if (target->kind == TASKSTATS_THREAD_GROUP)
                target->tgid = target->pid;

        if (ps->handler) {
                target->exited = true;
                /* The process's start: its thread group's wall time (version 12) or, before, the
                 * task's. A thread-group record has neither (the kernel sums only delays into it). */
                if (target->kind == TASKSTATS_TASK) {
                        usec_t boot = now(CLOCK_BOOTTIME),
                               elapsed = target->group_elapsed_usec ?: target->elapsed_usec;

                        target->start_time_ticks = proc_usec_to_ticks(boot > elapsed ? boot - elapsed : 0);
                        target->start_time_estimated = true;
                } else
                        target->group_elapsed_usec = 0;
                ps->handler(target, ps->userdata);
                ps->n_records++;
        } else
                ps->found = true;
        return MNL_CB_OK;
}

static int stats_cb(const struct nlmsghdr *nlh, void *data) {
        const struct genlmsghdr *genl = mnl_nlmsg_get_payload(nlh);

        if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*genl) || genl->cmd != TASKSTATS_CMD_NEW)
                return MNL_CB_OK;
        return mnl_attr_parse(nlh, sizeof(*genl), stats_attr_cb, data);
}

static int read_delay_accounting(const char *proc, bool *ret) {
        _cleanup_free_ char *p = NULL, *line = NULL;
        int r;

        p = strjoin(proc, "/sys/kernel/task_delayacct");
        if (!p)
                return -ENOMEM;
        r = read_one_line_file(p, &line);
        if (r == -ENOENT) {
                *ret = true;
                return 0;
        }
        if (r < 0)
                return r;
        *ret = !streq(line, "0");
        return 0;
}

int taskstats_new(const char *proc, Taskstats **ret) {
        _cleanup_taskstats_free_ Taskstats *t = NULL;
        struct timeval tv = {
                .tv_sec = QUERY_TIMEOUT_USEC / USEC_PER_SEC,
        };
        int r;

        t = new0(Taskstats, 1);
        if (!t)
                return -ENOMEM;
        t->proc = strdup(proc);
        if (!t->proc)
                return -ENOMEM;
        r = socket_open(&t->nl, &t->portid);
        if (r < 0)
                return r;
        if (setsockopt(mnl_socket_get_fd(t->nl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
                return -errno;
        r = resolve_family(t);
        if (r < 0)
                return r;
        r = read_delay_accounting(t->proc, &t->delay_accounting);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(t);
        return 0;
}

static int exit_register(Taskstats *t, struct mnl_socket *nl, int attr, const char *cpumask) {
        char buf[MNL_SOCKET_BUFFER_SIZE];
        struct nlmsghdr *nlh;
        ParseState ps = {};

        nlh = put_request(t, buf, t->family, NLM_F_ACK, TASKSTATS_CMD_GET, TASKSTATS_GENL_VERSION);
        mnl_attr_put_strz(nlh, attr, cpumask);
        /* Until the kernel's ack: an exit record that slips in before it is not the answer (and
         * is of a process nobody can be tracking yet, or no longer). */
        return transact(t, nl, nlh, NULL, &ps);
}

static int possible_cpus(char **ret) {
        _cleanup_free_ char *line = NULL;
        int r;

        r = read_one_line_file("/sys/devices/system/cpu/possible", &line);
        if (r >= 0 && !isempty(line)) {
                *ret = TAKE_PTR(line);
                return 0;
        }
        long n = sysconf(_SC_NPROCESSORS_CONF);
        char *s = NULL;
        if (asprintf(&s, "0-%ld", n > 1 ? n - 1 : 0) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

Taskstats *taskstats_free(Taskstats *t) {
        if (!t)
                return NULL;
        if (t->exit_nl) {
                _cleanup_free_ char *mask = NULL;

                /* The kernel also drops a listener whose socket is gone at the next exit, but only
                 * then; say goodbye so no record is built for nobody. */
                if (possible_cpus(&mask) >= 0) {
                        int fd = mnl_socket_get_fd(t->exit_nl);
                        int flags = fcntl(fd, F_GETFL);
                        if (flags >= 0)
                                (void) fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
                        (void) exit_register(t, t->exit_nl, TASKSTATS_CMD_ATTR_DEREGISTER_CPUMASK, mask);
                }
                mnl_socket_close(t->exit_nl);
        }
        if (t->nl)
                mnl_socket_close(t->nl);
        free(t->proc);
        return mfree(t);
}

/* The whole of an open /proc file, read again from its start: the kernel makes it anew. */
static int pread_all(int fd, char *buf, size_t size) {
        ssize_t n = pread(fd, buf, size - 1, 0);

        if (n < 0)
                return -errno; /* ESRCH once the process is gone, even if its PID is reused */
        if ((size_t) n >= size - 1)
                return -E2BIG;
        buf[n] = '\0';
        return 0;
}

static int read_stat(Taskstats *t, pid_t pid, int fd, ProcStat *ret) {
        char buf[1024];
        int r;

        if (fd < 0)
                return proc_pid_stat(t->proc, pid, ret);
        r = pread_all(fd, buf, sizeof(buf));
        if (r < 0)
                return r;
        return proc_stat_parse(buf, ret);
}

static int read_io(Taskstats *t, pid_t pid, int fd, ProcIO *ret) {
        char buf[512];
        int r;

        if (fd < 0)
                return proc_pid_io(t->proc, pid, ret);
        r = pread_all(fd, buf, sizeof(buf));
        if (r < 0)
                return r;
        return proc_io_parse(buf, ret);
}

static int read_schedstat(Taskstats *t, pid_t pid, int fd, ProcSchedstat *ret) {
        char buf[128];
        int r;

        if (fd < 0)
                return proc_pid_schedstat(t->proc, pid, ret);
        r = pread_all(fd, buf, sizeof(buf));
        if (r < 0)
                return r;
        return proc_schedstat_parse(buf, ret);
}

/* stat_fd, io_fd, sched_fd: the process's /proc files held open (a TaskstatsProcess), or -EBADF. */
static int query_fds(Taskstats *t, int attr, pid_t pid, bool with_proc_io, int stat_fd, int io_fd, int sched_fd,
                     TaskstatsSample *ret) {
        char buf[MNL_SOCKET_BUFFER_SIZE];
        struct nlmsghdr *nlh;
        TaskstatsSample s;
        ParseState ps = { .delay_accounting = t->delay_accounting, .sample = &s };
        ProcStat st;
        uint64_t after;
        int r;

        if (pid <= 0)
                return -EINVAL;

        /* The start time before and after the question: equal means one process had the PID all
         * along, so the answer is about it. */
        r = read_stat(t, pid, stat_fd, &st);
        if (r < 0)
                return r;

        nlh = put_request(t, buf, t->family, 0, TASKSTATS_CMD_GET, TASKSTATS_GENL_VERSION);
        mnl_attr_put_u32(nlh, attr, (uint32_t) pid);
        r = transact(t, t->nl, nlh, stats_cb, &ps);
        if (r < 0)
                return r;
        if (!ps.found || s.pid != pid)
                return -EBADMSG;
        if (with_proc_io) {
                ProcIO io;

                r = read_io(t, pid, io_fd, &io);
                if (r < 0)
                        return r;
                s.have_io = true;
                s.read_bytes = io.read_bytes;
                s.write_bytes = io.write_bytes;
                s.cancelled_write_bytes = io.cancelled_write_bytes;
                s.read_syscalls = io.syscr;
                s.write_syscalls = io.syscw;
                s.read_char = io.rchar;
                s.write_char = io.wchar;
                ProcSchedstat ss;

                r = read_schedstat(t, pid, sched_fd, &ss);
                if (r == -ESRCH)
                        return r;
                s.have_run_delay = r >= 0;
                if (r >= 0)
                        s.run_delay_usec = ss.run_delay_nsec / NSEC_PER_USEC;
        }

        if (stat_fd < 0) {
                r = proc_pid_start_time(t->proc, pid, &after);
                if (r < 0)
                        return r;
        } else {
                ProcStat st2;

                r = read_stat(t, pid, stat_fd, &st2);
                if (r < 0)
                        return r;
                after = st2.start_time_ticks;
        }
        if (after != st.start_time_ticks)
                return -ESRCH;

        s.start_time_ticks = st.start_time_ticks;
        if (s.kind == TASKSTATS_THREAD_GROUP) {
                /* The kernel sums the threads' elapsed times here; the process's own is since its
                 * start. */
                usec_t boot = now(CLOCK_BOOTTIME), start = proc_ticks_to_usec(st.start_time_ticks);

                s.elapsed_usec = s.group_elapsed_usec = boot > start ? boot - start : 0;
                s.ppid = st.ppid;
        }
        *ret = s;
        return 0;
}

static int query(Taskstats *t, int attr, pid_t pid, bool with_proc_io, TaskstatsSample *ret) {
        return query_fds(t, attr, pid, with_proc_io, -EBADF, -EBADF, -EBADF, ret);
}

struct TaskstatsProcess {
        pid_t pid;
        uint64_t start_time_ticks;
        int stat_fd;
        int io_fd;
        int sched_fd; /* -EBADF without CONFIG_SCHED_INFO */
        /* The last full sample, for taskstats_process_sample_changed(). */
        bool have_last;
        uint64_t last_cpu_ticks;
        ProcIO last_io;
        TaskstatsSample last;
        /* One thread, asleep when the last full sample began; its schedstat read just before. */
        bool last_asleep_single;
        ProcSchedstat last_sched;
        unsigned last_num_threads; /* from the last stat read; 0: none yet */
};

int taskstats_process_open(Taskstats *t, pid_t pid, TaskstatsProcess **ret) {
        _cleanup_(taskstats_process_closep) TaskstatsProcess *p = NULL;
        char path[64];
        ProcStat st;
        int r;

        if (pid <= 0)
                return -EINVAL;
        p = new(TaskstatsProcess, 1);
        if (!p)
                return -ENOMEM;
        *p = (TaskstatsProcess) { .pid = pid, .stat_fd = -EBADF, .io_fd = -EBADF, .sched_fd = -EBADF };
        (void) snprintf(path, sizeof(path), "%s/%i/stat", t->proc, (int) pid);
        p->stat_fd = open(path, O_RDONLY | O_CLOEXEC);
        if (p->stat_fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        (void) snprintf(path, sizeof(path), "%s/%i/io", t->proc, (int) pid);
        p->io_fd = open(path, O_RDONLY | O_CLOEXEC);
        if (p->io_fd < 0)
                return errno == ENOENT ? -ESRCH : -errno;
        (void) snprintf(path, sizeof(path), "%s/%i/schedstat", t->proc, (int) pid);
        p->sched_fd = open(path, O_RDONLY | O_CLOEXEC); /* optional */
        /* Both files are of the process that had the PID when the first was opened. */
        r = read_stat(t, pid, p->stat_fd, &st);
        if (r < 0)
                return r;
        p->start_time_ticks = st.start_time_ticks;
        *ret = TAKE_PTR(p);
        return 0;
}

TaskstatsProcess *taskstats_process_close(TaskstatsProcess *p) {
        if (!p)
                return NULL;
        safe_close(p->stat_fd);
        safe_close(p->io_fd);
        safe_close(p->sched_fd);
        return mfree(p);
}

uint64_t taskstats_process_start_time(const TaskstatsProcess *p) {
        return p->start_time_ticks;
}

int taskstats_process_sample(Taskstats *t, TaskstatsProcess *p, TaskstatsSample *ret) {
        TaskstatsSample s;
        int r;

        r = query_fds(t, TASKSTATS_CMD_ATTR_TGID, p->pid, true, p->stat_fd, p->io_fd,
                      p->sched_fd >= 0 ? p->sched_fd : -EBADF, &s);
        if (r < 0)
                return r;
        if (s.start_time_ticks != p->start_time_ticks)
                return -ESRCH;
        *ret = s;
        return 0;
}

/* The last full sample again, its times moved on to now. */
static TaskstatsSample repeat_last(const TaskstatsProcess *p) {
        TaskstatsSample s = p->last;
        usec_t ts = now(CLOCK_MONOTONIC);

        s.elapsed_usec += ts - s.timestamp_usec;
        if (s.group_elapsed_usec > 0)
                s.group_elapsed_usec += ts - s.timestamp_usec;
        s.timestamp_usec = ts;
        return s;
}

int taskstats_process_sample_changed(Taskstats *t, TaskstatsProcess *p, TaskstatsSample *ret) {
        ProcSchedstat ss = {};
        bool have_sched = false;
        ProcStat st;
        ProcIO io;
        int r;

        /* One read for a process of one thread that was asleep at its last full sample: if its
         * thread has not run since (time on CPU and number of runs the same) and has not waited
         * runnable, it is still in that sleep, so nothing taskstats or its /proc files report has
         * moved (I/O needs system calls, a new thread or an exit needs it to run). The file is
         * read before the others on the way to a full sample, so a run in between is seen next
         * time. The fd is of this process: once it is gone the read fails, whoever has the PID.
         * A process last seen with more threads is not read here: its main thread tells nothing
         * of the others. */
        if (p->sched_fd >= 0 && p->last_num_threads <= 1) {
                r = read_schedstat(t, p->pid, p->sched_fd, &ss);
                if (r == -ESRCH)
                        return r;
                have_sched = r >= 0;
        }
        if (have_sched && p->have_last && p->last_asleep_single && ss.on_cpu_nsec == p->last_sched.on_cpu_nsec &&
            ss.run_delay_nsec == p->last_sched.run_delay_nsec && ss.timeslices == p->last_sched.timeslices) {
                *ret = repeat_last(p);
                return 0;
        }

        r = read_stat(t, p->pid, p->stat_fd, &st);
        if (r < 0)
                return r;
        if (st.start_time_ticks != p->start_time_ticks)
                return -ESRCH;
        p->last_num_threads = st.num_threads;
        r = read_io(t, p->pid, p->io_fd, &io);
        if (r < 0)
                return r;
        /* Asleep now, no CPU tick and no I/O since the last full sample: nothing taskstats would
         * report has moved (its delays grow only while it waits runnable or for block I/O, which
         * would show as state R or D, or as CPU time or I/O). */
        if (p->have_last && (st.state == 'S' || st.state == 'I') &&
            st.utime_ticks + st.stime_ticks == p->last_cpu_ticks && memcmp(&io, &p->last_io, sizeof(io)) == 0) {
                /* It ran, but not enough to show: from now on its schedstat is compared with this
                 * reading, taken before the others. */
                p->last_asleep_single = have_sched && st.num_threads == 1;
                p->last_sched = ss;
                *ret = repeat_last(p);
                return 0;
        }

        r = taskstats_process_sample(t, p, ret);
        if (r < 0)
                return r;
        p->have_last = true;
        p->last_asleep_single = have_sched && st.num_threads == 1 && (st.state == 'S' || st.state == 'I');
        p->last_sched = ss;
        p->last_cpu_ticks = st.utime_ticks + st.stime_ticks;
        p->last_io = (ProcIO) { .rchar = ret->read_char, .wchar = ret->write_char, .syscr = ret->read_syscalls,
                                .syscw = ret->write_syscalls, .read_bytes = ret->read_bytes,
                                .write_bytes = ret->write_bytes, .cancelled_write_bytes = ret->cancelled_write_bytes };
        p->last = *ret;
        return 1;
}

int taskstats_query_pid(Taskstats *t, pid_t pid, TaskstatsSample *ret) {
        return query(t, TASKSTATS_CMD_ATTR_PID, pid, false, ret);
}

int taskstats_query_tgid(Taskstats *t, pid_t tgid, TaskstatsSample *ret) {
        return query(t, TASKSTATS_CMD_ATTR_TGID, tgid, false, ret);
}

int taskstats_query_process(Taskstats *t, pid_t pid, TaskstatsSample *ret) {
        return query(t, TASKSTATS_CMD_ATTR_TGID, pid, true, ret);
}

int taskstats_refresh_delay_accounting(Taskstats *t) {
        int r;

        r = read_delay_accounting(t->proc, &t->delay_accounting);
        if (r < 0)
                return r;
        return t->delay_accounting;
}

int taskstats_watch_exits(Taskstats *t) {
        struct mnl_socket *nl = NULL;
        _cleanup_free_ char *mask = NULL;
        uint32_t portid;
        int fd, flags, size = EXIT_RCVBUF_BYTES, r;

        if (t->exit_nl)
                return 0;
        r = socket_open(&nl, &portid);
        if (r < 0)
                return r;
        fd = mnl_socket_get_fd(nl);
        /* FORCE needs CAP_NET_ADMIN, which taskstats needs anyway; else as much as rmem_max allows. */
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
        r = possible_cpus(&mask);
        if (r >= 0)
                r = exit_register(t, nl, TASKSTATS_CMD_ATTR_REGISTER_CPUMASK, mask);
        if (r >= 0) {
                flags = fcntl(fd, F_GETFL);
                if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0)
                        r = -errno;
        }
        if (r < 0) {
                mnl_socket_close(nl);
                return r;
        }
        t->exit_nl = nl;
        return 0;
}

int taskstats_exit_fd(Taskstats *t) {
        return t->exit_nl ? mnl_socket_get_fd(t->exit_nl) : -EBADF;
}

int taskstats_drain_exits(Taskstats *t, taskstats_exit_handler_t handler, void *userdata) {
        char buf[MNL_SOCKET_BUFFER_SIZE];
        unsigned n_records = 0;
        bool lost = false;
        int r;

        if (!t->exit_nl)
                return -EBADF;
        for (;;) {
                ssize_t n = mnl_socket_recvfrom(t->exit_nl, buf, sizeof(buf));

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN)
                                break;
                        if (errno == ENOBUFS) {
                                /* How many is unknown; count the overflows. */
                                t->exits_lost++;
                                lost = true;
                                continue;
                        }
                        return -errno;
                }
                /* Unsolicited: sequence number and port 0 match anything. A broken record is
                 * skipped, not allowed to stop the ones after it. */
                r = taskstats_parse_exits(buf, n, t->delay_accounting, handler, userdata);
                if (r > 0)
                        n_records += r;
        }
        return lost ? -ENOBUFS : (int) n_records;
}

int taskstats_parse_exits(const void *buf, size_t size, bool delay_accounting, taskstats_exit_handler_t handler,
                          void *userdata) {
        ParseState ps = { .delay_accounting = delay_accounting, .handler = handler, .userdata = userdata };

        if (mnl_cb_run(buf, size, 0, 0, stats_cb, &ps) < 0)
                return errno > 0 ? -errno : -EBADMSG;
        return (int) ps.n_records;
}

uint64_t taskstats_exits_lost(const Taskstats *t) {
        return t->exits_lost;
}

bool taskstats_same_start_time(uint64_t estimated_ticks, uint64_t proc_ticks) {
        uint64_t slack = proc_usec_to_ticks(100 * USEC_PER_MSEC) + 1;

        return estimated_ticks <= proc_ticks ? proc_ticks - estimated_ticks <= slack
                                             : estimated_ticks - proc_ticks <= slack;
}

int taskstats_probe(const char *proc, TaskstatsSupport *ret) {
        _cleanup_taskstats_free_ Taskstats *t = NULL;
        TaskstatsSupport s = {};
        TaskstatsSample sample;
        int r;

        r = taskstats_new(proc, &t);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                s.error = r;
                *ret = s;
                return 0;
        }
        s.delay_accounting = t->delay_accounting;

        /* Family resolution works for anyone; the query needs CAP_NET_ADMIN. */
        r = taskstats_query_pid(t, getpid(), &sample);
        if (r == -ENOMEM)
                return r;
        s.error = r < 0 ? r : 0;
        if (r >= 0) {
                _cleanup_free_ char *io = strjoin(proc, "/self/io");

                if (!io)
                        return -ENOMEM;
                /* The fields are in every struct since version 4, zero without
                 * CONFIG_TASK_IO_ACCOUNTING; /proc/<pid>/io exists only with it. */
                s.io_accounting = sample.have_io && access(io, F_OK) >= 0;
                s.version = sample.version;
        }
        *ret = s;
        return 0;
}

const char *taskstats_support_to_string(const TaskstatsSupport *s) {
        switch (s->error) {
        case 0:
                if (!s->io_accounting)
                        return "usable, but the kernel does not account storage I/O per task "
                               "(CONFIG_TASK_IO_ACCOUNTING): I/O hogs cannot be found";
                if (!s->delay_accounting)
                        return "usable; delay accounting is off (kernel.task_delayacct=0): contention is "
                               "inferred from usage only; set the sysctl to 1 or boot with delayacct";
                return "usable, with delay accounting";
        case -ENOENT:
                return "unusable: the kernel has no taskstats generic netlink family (CONFIG_TASKSTATS)";
        case -EPERM:
        case -EACCES:
                return "unusable: taskstats queries need CAP_NET_ADMIN";
        case -EPROTONOSUPPORT:
        case -EAFNOSUPPORT:
                return "unusable: no generic netlink sockets";
        default:
                return "unusable: taskstats query failed";
        }
}
