/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The parser of taskstats exit records on messages built here, as the kernel lays them out:
 * TASKSTATS_CMD_NEW with TASKSTATS_TYPE_AGGR_PID (PID + STATS), and AGGR_TGID after it when the
 * last thread of a multi-threaded process exits; structs of older and newer kernels; broken ones.
 */
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <linux/taskstats.h>
#include <stddef.h>

#include "proc-util.h"
#include "taskstats.h"
#include "tests.h"

#define MAX_RECORDS 4

typedef struct Records {
        TaskstatsSample s[MAX_RECORDS];
        unsigned n;
} Records;

static void collect(const TaskstatsSample *s, void *userdata) {
        Records *r = userdata;

        ck_assert_uint_lt(r->n, MAX_RECORDS);
        r->s[r->n++] = *s;
}

static struct nlmsghdr *message(char *buf, uint8_t cmd) {
        struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
        struct genlmsghdr *genl;

        nlh->nlmsg_type = 0x17; /* whatever id the family got */
        genl = mnl_nlmsg_put_extra_header(nlh, sizeof(*genl));
        genl->cmd = cmd;
        genl->version = TASKSTATS_GENL_VERSION;
        return nlh;
}

/* One AGGR_* attribute: the id and the first stats_len bytes of *ts. */
static void put_aggr(struct nlmsghdr *nlh, uint16_t aggr, uint16_t id_type, uint32_t id, const struct taskstats *ts,
                     size_t stats_len) {
        struct nlattr *nest = mnl_attr_nest_start(nlh, aggr);

        mnl_attr_put_u32(nlh, id_type, id);
        mnl_attr_put(nlh, TASKSTATS_TYPE_STATS, stats_len, ts);
        mnl_attr_nest_end(nlh, nest);
}

static struct taskstats stats(uint32_t pid, uint64_t etime_usec) {
        struct taskstats ts = {
                .version = TASKSTATS_VERSION,
                .ac_exitcode = 3 << 8,
                .ac_flag = 0x20, /* AGROUP */
                .cpu_count = 11,
                .cpu_delay_total = 2500000, /* ns */
                .blkio_count = 3,
                .blkio_delay_total = 7999,
                .ac_pid = pid,
                .ac_ppid = 1,
                .ac_etime = etime_usec,
                .ac_utime = 1500000,
                .ac_stime = 250000,
                .read_bytes = 4096,
                .write_bytes = 1 << 20,
                .read_syscalls = 2048,
                .write_syscalls = 1024,
                .ac_tgid = pid,
                .ac_tgetime = etime_usec,
        };
        memcpy(ts.ac_comm, "dd", 3);
        return ts;
}

START_TEST(test_single_threaded_exit) {
        char buf[MNL_SOCKET_BUFFER_SIZE];
        struct nlmsghdr *nlh = message(buf, TASKSTATS_CMD_NEW);
        struct taskstats ts = stats(4242, 5 * USEC_PER_SEC);
        Records r = {};
        struct timespec boot;

        put_aggr(nlh, TASKSTATS_TYPE_AGGR_PID, TASKSTATS_TYPE_PID, 4242, &ts, sizeof(ts));
        ck_assert_int_eq(clock_gettime(CLOCK_BOOTTIME, &boot), 0);
        ck_assert_int_eq(taskstats_parse_exits(buf, nlh->nlmsg_len, true, collect, &r), 1);

        const TaskstatsSample *s = &r.s[0];
        ck_assert_int_eq(s->kind, TASKSTATS_TASK);
        ck_assert_int_eq(s->pid, 4242);
        ck_assert_int_eq(s->tgid, 4242);
        ck_assert_int_eq(s->ppid, 1);
        ck_assert_str_eq(s->comm, "dd");
        ck_assert(s->exited && s->group_dead);
        ck_assert_uint_eq(s->exit_code, 3 << 8);
        ck_assert_uint_eq(s->utime_usec, 1500000);
        ck_assert_uint_eq(s->stime_usec, 250000);
        ck_assert(s->have_io);
        ck_assert_uint_eq(s->write_bytes, 1 << 20);
        ck_assert_uint_eq(s->read_syscalls, 2048);
        ck_assert(s->have_delays);
        ck_assert_uint_eq(s->cpu_delay_usec, 2500); /* ns -> us */
        ck_assert_uint_eq(s->blkio_delay_usec, 7);
        ck_assert_uint_eq(s->cpu_count, 11);
        /* Started 5 s before it was read. */
        ck_assert(s->start_time_estimated);
        uint64_t expected = proc_usec_to_ticks(timespec_load(&boot) - 5 * USEC_PER_SEC);
        ck_assert(taskstats_same_start_time(s->start_time_ticks, expected));

        /* Delay accounting off: the delays are unknown, not 0. */
        r = (Records) {};
        ck_assert_int_eq(taskstats_parse_exits(buf, nlh->nlmsg_len, false, collect, &r), 1);
        ck_assert(!r.s[0].have_delays);
        ck_assert_uint_eq(r.s[0].cpu_delay_usec, 0);
}
END_TEST

START_TEST(test_thread_group_exit) {
        char buf[MNL_SOCKET_BUFFER_SIZE];
        struct nlmsghdr *nlh = message(buf, TASKSTATS_CMD_NEW);
        /* The last thread (4243) of process 4242, which ran 9 s; the thread itself 2 s. */
        struct taskstats task = stats(4243, 2 * USEC_PER_SEC), group = stats(4242, 0);
        Records r = {};
        struct timespec boot;

        task.ac_tgid = 4242;
        task.ac_tgetime = 9 * USEC_PER_SEC;
        put_aggr(nlh, TASKSTATS_TYPE_AGGR_PID, TASKSTATS_TYPE_PID, 4243, &task, sizeof(task));
        put_aggr(nlh, TASKSTATS_TYPE_AGGR_TGID, TASKSTATS_TYPE_TGID, 4242, &group, sizeof(group));
        mnl_attr_put(nlh, TASKSTATS_TYPE_NULL, 0, NULL);
        ck_assert_int_eq(clock_gettime(CLOCK_BOOTTIME, &boot), 0);
        ck_assert_int_eq(taskstats_parse_exits(buf, nlh->nlmsg_len, true, collect, &r), 2);

        ck_assert_int_eq(r.s[0].kind, TASKSTATS_TASK);
        ck_assert_int_eq(r.s[0].pid, 4243);
        ck_assert_int_eq(r.s[0].tgid, 4242);
        /* The process's start, from the thread group's wall time, not the thread's. */
        ck_assert_uint_eq(r.s[0].group_elapsed_usec, 9 * USEC_PER_SEC);
        ck_assert_int_eq(r.s[1].kind, TASKSTATS_THREAD_GROUP);
        ck_assert_int_eq(r.s[1].pid, 4242);
        ck_assert_int_eq(r.s[1].tgid, 4242);
        ck_assert(!r.s[1].have_io);
        ck_assert(!r.s[1].start_time_estimated);
        ck_assert_uint_eq(r.s[1].start_time_ticks, 0);
        ck_assert_str_eq(r.s[1].comm, "");
        ck_assert(taskstats_same_start_time(r.s[0].start_time_ticks,
                                            proc_usec_to_ticks(timespec_load(&boot) - 9 * USEC_PER_SEC)));
}
END_TEST

START_TEST(test_struct_versions) {
        char buf[MNL_SOCKET_BUFFER_SIZE];
        struct taskstats ts = stats(7, USEC_PER_SEC);
        char bigger[sizeof(ts) + 64] = {};
        Records r = {};
        struct nlmsghdr *nlh;

        /* A newer kernel's longer struct: the fields known here are read, the rest ignored. */
        memcpy(bigger, &ts, sizeof(ts));
        memset(bigger + sizeof(ts), 0xff, sizeof(bigger) - sizeof(ts));
        nlh = message(buf, TASKSTATS_CMD_NEW);
        put_aggr(nlh, TASKSTATS_TYPE_AGGR_PID, TASKSTATS_TYPE_PID, 7, (const struct taskstats *) bigger, sizeof(bigger));
        ck_assert_int_eq(taskstats_parse_exits(buf, nlh->nlmsg_len, true, collect, &r), 1);
        ck_assert_uint_eq(r.s[0].utime_usec, 1500000);
        ck_assert_uint_eq(r.s[0].write_bytes, 1 << 20);

        /* An old kernel's (version 3: up to ac_majflt, before the I/O fields): no I/O, no tgid. */
        ts.version = 3;
        r = (Records) {};
        nlh = message(buf, TASKSTATS_CMD_NEW);
        put_aggr(nlh, TASKSTATS_TYPE_AGGR_PID, TASKSTATS_TYPE_PID, 7, &ts,
                 offsetof(struct taskstats, coremem));
        ck_assert_int_eq(taskstats_parse_exits(buf, nlh->nlmsg_len, true, collect, &r), 1);
        ck_assert(!r.s[0].have_io);
        ck_assert_uint_eq(r.s[0].write_bytes, 0);
        ck_assert_int_eq(r.s[0].tgid, 0);
        ck_assert_uint_eq(r.s[0].group_elapsed_usec, 0);
        ck_assert_uint_eq(r.s[0].utime_usec, 1500000);
}
END_TEST

START_TEST(test_hostile) {
        char buf[MNL_SOCKET_BUFFER_SIZE];
        struct taskstats ts = stats(7, USEC_PER_SEC);
        Records r = {};
        struct nlmsghdr *nlh;
        struct nlattr *nest;

        /* Too short to hold even the times. */
        nlh = message(buf, TASKSTATS_CMD_NEW);
        put_aggr(nlh, TASKSTATS_TYPE_AGGR_PID, TASKSTATS_TYPE_PID, 7, &ts, offsetof(struct taskstats, ac_etime));
        ck_assert_int_lt(taskstats_parse_exits(buf, nlh->nlmsg_len, true, collect, &r), 0);

        /* No PID. */
        nlh = message(buf, TASKSTATS_CMD_NEW);
        nest = mnl_attr_nest_start(nlh, TASKSTATS_TYPE_AGGR_PID);
        mnl_attr_put(nlh, TASKSTATS_TYPE_STATS, sizeof(ts), &ts);
        mnl_attr_nest_end(nlh, nest);
        ck_assert_int_lt(taskstats_parse_exits(buf, nlh->nlmsg_len, true, collect, &r), 0);

        /* No stats. */
        nlh = message(buf, TASKSTATS_CMD_NEW);
        nest = mnl_attr_nest_start(nlh, TASKSTATS_TYPE_AGGR_PID);
        mnl_attr_put_u32(nlh, TASKSTATS_TYPE_PID, 7);
        mnl_attr_nest_end(nlh, nest);
        ck_assert_int_lt(taskstats_parse_exits(buf, nlh->nlmsg_len, true, collect, &r), 0);

        /* A PID of the wrong size. */
        nlh = message(buf, TASKSTATS_CMD_NEW);
        nest = mnl_attr_nest_start(nlh, TASKSTATS_TYPE_AGGR_PID);
        mnl_attr_put_u16(nlh, TASKSTATS_TYPE_PID, 7);
        mnl_attr_put(nlh, TASKSTATS_TYPE_STATS, sizeof(ts), &ts);
        mnl_attr_nest_end(nlh, nest);
        ck_assert_int_lt(taskstats_parse_exits(buf, nlh->nlmsg_len, true, collect, &r), 0);

        /* A command name without its terminator is cut, not read past. */
        memset(ts.ac_comm, 'A', sizeof(ts.ac_comm));
        nlh = message(buf, TASKSTATS_CMD_NEW);
        put_aggr(nlh, TASKSTATS_TYPE_AGGR_PID, TASKSTATS_TYPE_PID, 7, &ts, sizeof(ts));
        ck_assert_int_eq(taskstats_parse_exits(buf, nlh->nlmsg_len, true, collect, &r), 1);
        ck_assert_uint_eq(strlen(r.s[0].comm), TASKSTATS_COMM_MAX);

        /* Another command, a header longer than the datagram, nothing at all: no records. */
        nlh = message(buf, TASKSTATS_CMD_GET);
        put_aggr(nlh, TASKSTATS_TYPE_AGGR_PID, TASKSTATS_TYPE_PID, 7, &ts, sizeof(ts));
        ck_assert_int_eq(taskstats_parse_exits(buf, nlh->nlmsg_len, true, collect, &r), 0);
        nlh = message(buf, TASKSTATS_CMD_NEW);
        put_aggr(nlh, TASKSTATS_TYPE_AGGR_PID, TASKSTATS_TYPE_PID, 7, &ts, sizeof(ts));
        ck_assert_int_eq(taskstats_parse_exits(buf, nlh->nlmsg_len - 8, true, collect, &r), 0);
        ck_assert_int_eq(taskstats_parse_exits(buf, 0, true, collect, &r), 0);
        ck_assert_uint_eq(r.n, 1);
}
END_TEST

START_TEST(test_same_start_time) {
        uint64_t slack = proc_usec_to_ticks(100 * USEC_PER_MSEC);

        ck_assert(taskstats_same_start_time(1000, 1000));
        ck_assert(taskstats_same_start_time(1000 + slack, 1000));
        ck_assert(taskstats_same_start_time(1000, 1000 + slack));
        ck_assert(!taskstats_same_start_time(1000 + slack + 2, 1000));
        ck_assert(!taskstats_same_start_time(1000, 1000 + slack + 2));
        ck_assert(taskstats_same_start_time(0, 1));
        ck_assert(!taskstats_same_start_time(UINT64_MAX, 0));
}
END_TEST

TEST_SUITE("taskstats-parse", test_single_threaded_exit, test_thread_group_exit, test_struct_versions, test_hostile,
           test_same_start_time)
