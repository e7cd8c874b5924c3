/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtonari's domains on a fake cgroup2 tree: what tonari_domain_prepare(), _open(), _set(),
 * _enter(), _leave() and _counters() write and read, and every refusal. Plain files stand in for
 * the kernel's (a write of "0" lands in the file instead of moving the caller); the real moves are
 * tested in the VM (TEST-08-apache).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <tonari/domain.h>

#include "fake-tree.h"
#include "fileio.h"
#include "tests.h"

static char *root_path(const char *rel) {
        return strjoin(fake_root, rel[0] ? "/" : "", rel);
}

static void assert_file(const char *rel, const char *expected) {
        _cleanup_free_ char *p = root_path(rel), *text = NULL;

        ck_assert_int_eq(read_full_file(p, &text, NULL), 0);
        ck_assert_str_eq(text, expected);
}

/* A delegated cgroup as the kernel shows it: the files of root, of _home and of one domain. */
static void fake_delegated(const char *controllers) {
        fake_root_new();
        fake_file("cgroup.controllers", controllers);
        fake_file("cgroup.type", "domain\n");
        fake_file("cgroup.procs", "1234\n5678\n");
        fake_file("cgroup.subtree_control", "");
        fake_file("_home/cgroup.procs", "");
        fake_file("_home/cgroup.threads", "");
        fake_file("_home/cgroup.type", "domain\n");
        fake_file("web/cgroup.procs", "");
        fake_file("web/cgroup.threads", "");
        fake_file("web/cgroup.type", "domain\n");
        /* Threaded: the same below the domain cgroup _threads. */
        fake_file("_threads/cgroup.controllers", controllers);
        fake_file("_threads/cgroup.type", "domain threaded\n");
        fake_file("_threads/cgroup.subtree_control", "");
        fake_file("_threads/_home/cgroup.procs", "");
        fake_file("_threads/_home/cgroup.threads", "");
        fake_file("_threads/_home/cgroup.type", "domain\n");
        fake_file("_threads/web/cgroup.procs", "");
        fake_file("_threads/web/cgroup.threads", "");
        fake_file("_threads/web/cgroup.type", "domain\n");
}

START_TEST(test_prepare) {
        _cleanup_free_ char *root = NULL;

        fake_delegated("cpuset cpu io memory pids\n");
        root = root_path("");
        ck_assert_int_eq(tonari_domain_prepare("relative/path", 0), -EINVAL);
        ck_assert_int_eq(tonari_domain_prepare("", 0), -EINVAL);
        ck_assert_int_eq(tonari_domain_prepare(root, 0x100), -EINVAL);
        ck_assert_int_eq(tonari_domain_prepare(root, 0), 0);
        /* Both processes moved to _home, one write each; the controllers in one write. */
        assert_file("_home/cgroup.procs", "12345678");
        assert_file("cgroup.subtree_control", "+cpu +io +pids");
}
END_TEST

START_TEST(test_prepare_refusals) {
        _cleanup_free_ char *root = NULL, *sub = NULL;

        /* No io controller offered by the parent: a plain domain cannot be limited. */
        fake_delegated("cpu pids\n");
        root = root_path("");
        ck_assert_int_eq(tonari_domain_prepare(root, 0), -EOPNOTSUPP);
        /* Threaded needs cpu and pids only, and makes _home threaded. */
        ck_assert_int_eq(tonari_domain_prepare(root, TONARI_DOMAIN_THREADED), 0);
        assert_file("cgroup.subtree_control", "+cpu +pids");
        assert_file("_threads/cgroup.subtree_control", "+cpu +pids");
        assert_file("_threads/_home/cgroup.type", "threaded");
        assert_file("_threads/_home/cgroup.procs", "12345678");
        /* Not a cgroup2 directory (v1 has no cgroup.controllers). */
        fake_file("v1/tasks", "");
        sub = root_path("v1");
        ck_assert_int_eq(tonari_domain_prepare(sub, 0), -EMEDIUMTYPE);
        ck_assert_int_eq(tonari_domain_prepare("/nonexistent/tonari", 0), -ENOENT);
        /* The hierarchy's root (no cgroup.type) holds every process: refused, nothing moved. */
        fake_file("top/cgroup.controllers", "cpu io pids\n");
        fake_file("top/cgroup.procs", "1\n2\n");
        free(sub);
        sub = root_path("top");
        ck_assert_int_eq(tonari_domain_prepare(sub, 0), -EBUSY);
        free(sub);
        sub = root_path("top/_home");
        ck_assert_int_eq(access(sub, F_OK), -1);
}
END_TEST

START_TEST(test_open_names) {
        _cleanup_free_ char *root = NULL;
        TonariDomain *d = NULL;

        fake_delegated("cpu io pids\n");
        root = root_path("");
        ck_assert_int_eq(tonari_domain_open(root, NULL, 0, &d), -EINVAL);
        ck_assert_int_eq(tonari_domain_open(root, "", 0, &d), -EINVAL);
        ck_assert_int_eq(tonari_domain_open(root, "_home", 0, &d), -EINVAL);
        ck_assert_int_eq(tonari_domain_open(root, "cpu.max", 0, &d), -EINVAL);
        ck_assert_int_eq(tonari_domain_open(root, "../web", 0, &d), -EINVAL);
        ck_assert_int_eq(tonari_domain_open(root, "-web", 0, &d), -EINVAL);
        ck_assert_int_eq(tonari_domain_open(root, "a:b", 0, &d), -EINVAL);
        ck_assert_int_eq(tonari_domain_open(root, "nope", 0, &d), -ENOENT);
        ck_assert_ptr_null(d);
        ck_assert_int_eq(tonari_domain_open(root, "web", 0, &d), 0);
        ck_assert_str_eq(tonari_domain_name(d), "web");
        d = tonari_domain_close(d);
        ck_assert_ptr_null(tonari_domain_close(NULL));
        ck_assert_ptr_null(tonari_domain_name(NULL));
}
END_TEST

START_TEST(test_set) {
        _cleanup_free_ char *root = NULL;
        TonariDomain *d = NULL;

        fake_delegated("cpu io pids\n");
        root = root_path("");
        ck_assert_int_eq(tonari_domain_open(root, "web", 0, &d), 0);

        fake_file("web/cpu.max", "");
        ck_assert_int_eq(tonari_domain_set(d, "CPUQuota", "50%"), 0);
        assert_file("web/cpu.max", "50000 100000");
        fake_file("web/cpu.max", "");
        ck_assert_int_eq(tonari_domain_set(d, "CPUQuota", "250%"), 0);
        assert_file("web/cpu.max", "250000 100000");
        fake_file("web/cpu.max", "");
        ck_assert_int_eq(tonari_domain_set(d, "CPUQuota", ""), 0);
        assert_file("web/cpu.max", "max 100000");
        ck_assert_int_eq(tonari_domain_set(d, "CPUQuota", "50"), -EINVAL);
        ck_assert_int_eq(tonari_domain_set(d, "CPUQuota", "0%"), -EINVAL);
        ck_assert_int_eq(tonari_domain_set(d, "CPUQuota", "x%"), -EINVAL);

        fake_file("web/pids.max", "");
        ck_assert_int_eq(tonari_domain_set(d, "TasksMax", "5"), 0);
        assert_file("web/pids.max", "5");
        fake_file("web/pids.max", "");
        ck_assert_int_eq(tonari_domain_set(d, "TasksMax", "infinity"), 0);
        assert_file("web/pids.max", "max");
        ck_assert_int_eq(tonari_domain_set(d, "TasksMax", "0"), -EINVAL);
        ck_assert_int_eq(tonari_domain_set(d, "TasksMax", "-1"), -EINVAL);

        fake_file("web/cpu.weight", "");
        ck_assert_int_eq(tonari_domain_set(d, "CPUWeight", "200"), 0);
        assert_file("web/cpu.weight", "200");
        ck_assert_int_eq(tonari_domain_set(d, "CPUWeight", "10001"), -EINVAL);

        /* A character device, a missing path, no value, a bad size. */
        ck_assert_int_eq(tonari_domain_set(d, "IOWriteBandwidthMax", "/dev/null 30M"), -ENODEV);
        ck_assert_int_eq(tonari_domain_set(d, "IOWriteBandwidthMax", "/nonexistent 30M"), -ENODEV);
        ck_assert_int_eq(tonari_domain_set(d, "IOWriteBandwidthMax", "/dev/null"), -EINVAL);
        ck_assert_int_eq(tonari_domain_set(d, "IOReadBandwidthMax", "/dev/null 30Q"), -EINVAL);
        ck_assert_int_eq(tonari_domain_set(d, "MemoryMax", "1G"), -ENOENT);
        d = tonari_domain_close(d);

        /* Threaded domains take no IO limits. */
        ck_assert_int_eq(tonari_domain_open(root, "web", TONARI_DOMAIN_THREADED, &d), 0);
        assert_file("_threads/web/cgroup.type", "threaded");
        assert_file("web/cgroup.type", "domain\n");
        ck_assert_int_eq(tonari_domain_set(d, "IOWriteBandwidthMax", "/dev/null 30M"), -EOPNOTSUPP);
        d = tonari_domain_close(d);
}
END_TEST

START_TEST(test_enter_leave) {
        _cleanup_free_ char *root = NULL;
        TonariDomain *d = NULL, *t = NULL;

        fake_delegated("cpu io pids\n");
        root = root_path("");
        ck_assert_int_eq(tonari_domain_open(root, "web", 0, &d), 0);
        ck_assert_int_eq(tonari_domain_enter(d), 0);
        ck_assert_int_eq(tonari_domain_enter(d), 0);
        ck_assert_int_eq(tonari_domain_leave(d), 0);
        /* "0" per move, to the process files. */
        assert_file("web/cgroup.procs", "00");
        assert_file("_home/cgroup.procs", "0");
        ck_assert_int_eq(tonari_domain_open(root, "web", TONARI_DOMAIN_THREADED, &t), 0);
        ck_assert_int_eq(tonari_domain_enter(t), 0);
        ck_assert_int_eq(tonari_domain_leave(t), 0);
        assert_file("_threads/web/cgroup.threads", "0");
        assert_file("_threads/_home/cgroup.threads", "0");
        ck_assert_int_eq(tonari_domain_leave_pid(t, 4321), 0);
        assert_file("_threads/_home/cgroup.threads", "04321");
        ck_assert_int_eq(tonari_domain_leave_pid(t, 0), -EINVAL);
        ck_assert_int_eq(tonari_domain_leave_pid(t, -1), -EINVAL);
        ck_assert_int_eq(tonari_domain_enter(NULL), -EINVAL);
        ck_assert_int_eq(tonari_domain_leave(NULL), -EINVAL);
        tonari_domain_close(d);
        tonari_domain_close(t);
}
END_TEST

START_TEST(test_create_remove) {
        _cleanup_free_ char *root = NULL;
        TonariDomain *d = NULL;

        fake_delegated("cpu io pids\n");
        root = root_path("");
        /* A plain directory gets no kernel files: the open of cgroup.procs fails after mkdir. */
        ck_assert_int_eq(tonari_domain_open(root, "fresh", TONARI_DOMAIN_CREATE, &d), -ENOENT);
        fake_file("fresh/cgroup.procs", "");
        ck_assert_int_eq(tonari_domain_open(root, "fresh", TONARI_DOMAIN_CREATE, &d), 0);
        /* Not empty: rmdir fails, the object is closed all the same. */
        ck_assert_int_eq(tonari_domain_remove(d), -ENOTEMPTY);
}
END_TEST

START_TEST(test_counters) {
        _cleanup_free_ char *root = NULL;
        TonariDomain *d = NULL;
        TonariDomainCounters c;

        fake_delegated("cpu io pids\n");
        root = root_path("");
        ck_assert_int_eq(tonari_domain_open(root, "web", 0, &d), 0);
        /* No controller files at all: zeros. */
        ck_assert_int_eq(tonari_domain_counters(d, &c), 0);
        ck_assert_uint_eq(c.cpu_usec + c.io_read_bytes + c.io_write_bytes + c.tasks, 0);

        fake_file("web/cpu.stat", "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n");
        fake_file("web/io.stat", "254:0 rbytes=4096 wbytes=30000000 rios=1 wios=30 dbytes=0 dios=0\n"
                                 "8:0 rbytes=1 wbytes=2 rios=1 wios=1 dbytes=0 dios=0\n");
        fake_file("web/pids.current", "3\n");
        ck_assert_int_eq(tonari_domain_counters(d, &c), 0);
        ck_assert_uint_eq(c.cpu_usec, 123456);
        ck_assert_uint_eq(c.io_read_bytes, 4097);
        ck_assert_uint_eq(c.io_write_bytes, 30000002);
        ck_assert_uint_eq(c.tasks, 3);

        fake_file("web/pids.current", "many\n");
        ck_assert_int_eq(tonari_domain_counters(d, &c), -EBADMSG);
        fake_file("web/pids.current", "3\n");
        fake_file("web/cpu.stat", "user_usec 1\n");
        ck_assert_int_eq(tonari_domain_counters(d, &c), -EBADMSG);
        ck_assert_int_eq(tonari_domain_counters(NULL, &c), -EINVAL);
        tonari_domain_close(d);
}
END_TEST

TEST_SUITE("libtonari-domain", test_prepare, test_prepare_refusals, test_open_names, test_set, test_enter_leave,
           test_create_remove, test_counters)
