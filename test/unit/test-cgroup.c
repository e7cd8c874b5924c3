/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cgroup.h on fake cgroup trees. A fake tree is a plain directory: mkdir gives an empty directory
 * and nothing answers a write, so the test plays the kernel — it creates the interface files a
 * new cgroup would have, turns what was written into what the kernel would show, and removes the
 * files before rmdir (cgroupfs directories "contain" them, tmpfs ones do not go away with them).
 */
#include <errno.h>
#include <ftw.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "cgroup.h"
#include "fake-tree.h"
#include "fd-util.h"
#include "fileio.h"
#include "parse-util.h"
#include "strv.h"

static const char *const v1_hierarchies[] = { "cpu", "cpuacct", "cpuset", "blkio", "memory", "pids" };

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        (void) remove(p);
        return 0;
}

static void fake_cleanup(void) {
        (void) nftw(fake_root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static char *fake_path(const char *relpath) {
        char *p = strjoin(fake_root, "/", relpath);

        ck_assert_ptr_nonnull(p);
        return p;
}

static bool fake_exists(const char *relpath) {
        _cleanup_free_ char *p = fake_path(relpath);

        return access(p, F_OK) >= 0;
}

/* The file's content; "(missing)" if there is none. */
static char *fake_read(const char *relpath) {
        _cleanup_free_ char *p = fake_path(relpath);
        char *t = NULL;

        if (read_full_file(p, &t, NULL) < 0)
                return strdup("(missing)");
        return t;
}

#define assert_fake_file(relpath, expected)                                                            \
        do {                                                                                           \
                _cleanup_free_ char *_t = fake_read(relpath);                                          \
                ck_assert_msg(streq(_t, expected), "%s: '%s', expected '%s'", relpath, _t, expected);  \
        } while (false)

/* Creates relpath with content unless it exists (the kernel's files of a new cgroup). */
static void fake_default(const char *relpath, const char *content) {
        if (!fake_exists(relpath))
                fake_file(relpath, content);
}

static void fake_unlink(const char *relpath) {
        _cleanup_free_ char *p = fake_path(relpath);

        ck_assert_int_eq(unlink(p), 0);
}

static void fake_rmdir(const char *relpath) {
        _cleanup_free_ char *p = fake_path(relpath);

        ck_assert_int_eq(rmdir(p), 0);
}

/* What rmdir on cgroupfs does not need: the interface files out of the way. */
static void fake_strip(const char *reldir) {
        _cleanup_free_ char *p = fake_path(reldir);
        _cleanup_closedir_ DIR *d = opendir(p);
        struct dirent *de;

        ck_assert_ptr_nonnull(d);
        while ((de = readdir(d)))
                if (de->d_type == DT_REG)
                        ck_assert_int_eq(unlinkat(dirfd(d), de->d_name, 0), 0);
}

static CGroupRoot *open_root(int version) {
        _cleanup_free_ char *proc = NULL;
        CGroupRoot *r = NULL;

        ck_assert_int_eq(cgroup_root_new(fake_root, &r), 0);
        /* where cgroup_attach_many() finds a process's cgroups (fake_proc_cgroup()) */
        proc = fake_path("proc");
        ck_assert_int_eq(cgroup_root_set_proc(r, proc), 0);
        ck_assert_int_eq(cgroup_root_version(r), version);
        ck_assert_str_eq(cgroup_root_dir(r), fake_root);
        return r;
}

/* /proc/PID/cgroup of a process in path: v2 (one line), or v1 (one line per hierarchy). */
static void fake_proc_cgroup(pid_t pid, int version, const char *path) {
        _cleanup_free_ char *f = NULL, *text = NULL;

        ck_assert_int_gt(asprintf(&f, "proc/%i/cgroup", (int) pid), 0);
        if (version == 2)
                ck_assert_int_gt(asprintf(&text, "0::%s\n", path), 0);
        else
                ck_assert_int_gt(asprintf(&text,
                                          "9:name=systemd:/\n8:pids:%s\n7:blkio:%s\n5:devices:/\n4:memory:%s\n"
                                          "3:cpuset:%s\n2:cpuacct:%s\n1:cpu:%s\n0::/\n",
                                          path, path, path, path, path, path),
                                 0);
        fake_file(f, text);
}

/* v2 */

static void fake_v2_root(const char *controllers) {
        fake_root_new();
        fake_file("cgroup.controllers", controllers);
        fake_file("cgroup.subtree_control", "");
        fake_file("cgroup.procs", "1\n");
        fake_file("cgroup.threads", "1\n");
}

/* The files the kernel gives a new v2 cgroup with these controllers enabled by its parent. */
static void fake_v2_cgroup(const char *path, const char *controllers) {
        _cleanup_strv_free_ char **c = NULL;

        ck_assert_int_eq(strv_split(controllers, " ", &c), 0);
#define F(name, content)                                                                               \
        do {                                                                                           \
                _cleanup_free_ char *_p = strjoin(path, "/", name);                                    \
                fake_default(_p, content);                                                             \
        } while (false)
        F("cgroup.controllers", controllers);
        F("cgroup.procs", "");
        F("cgroup.subtree_control", "");
        F("cpu.stat", "usage_usec 0\nuser_usec 0\nsystem_usec 0\n");
        if (strv_contains(c, "cpu")) {
                F("cpu.weight", "100\n");
                F("cpu.max", "max 100000\n");
        }
        if (strv_contains(c, "io")) {
                F("io.max", "");
                F("io.stat", "");
        }
        if (strv_contains(c, "memory")) {
                F("memory.max", "max\n");
                F("memory.high", "max\n");
                F("memory.current", "0\n");
        }
        if (strv_contains(c, "pids"))
                F("pids.current", "0\n");
        if (strv_contains(c, "cpuset")) {
                F("cpuset.cpus", "\n");
                F("cpuset.mems", "\n");
        }
#undef F
}

#define V2_ALL "cpuset cpu io memory pids"

START_TEST(test_root_new) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_free_ char *file = NULL, *missing = NULL;

        ck_assert_ptr_null(cgroup_root_free(NULL));

        fake_root_new();
        ck_assert_int_eq(cgroup_root_new(fake_root, &r), -ENOMEDIUM); /* an empty directory */
        missing = fake_path("nope");
        ck_assert_int_eq(cgroup_root_new(missing, &r), -ENOENT);
        fake_file("file", "");
        file = fake_path("file");
        ck_assert_int_eq(cgroup_root_new(file, &r), -ENOTDIR);
        ck_assert_int_eq(cgroup_root_new("relative/dir", &r), -EINVAL);
        ck_assert_int_eq(cgroup_root_new("/tmp/../tmp", &r), -EINVAL);
        ck_assert_int_eq(cgroup_root_new(NULL, &r), -EINVAL);
        /* a directory named like a controller is not a hierarchy without cgroup.procs */
        fake_dir("cpu");
        ck_assert_int_eq(cgroup_root_new(fake_root, &r), -ENOMEDIUM);
        ck_assert_ptr_null(r);

        fake_file("memory/cgroup.procs", "");
        r = open_root(1);
        ck_assert(cgroup_root_has_controller(r, "memory"));
        ck_assert(!cgroup_root_has_controller(r, "cpu"));
        ck_assert(!cgroup_root_has_controller(r, NULL));
        r = cgroup_root_free(r);

        fake_file("cgroup.controllers", "cpu memory\n");
        r = open_root(2);
        ck_assert(cgroup_root_has_controller(r, "cpu"));
        ck_assert(cgroup_root_has_controller(r, "memory"));
        ck_assert(!cgroup_root_has_controller(r, "io"));
        ck_assert(!cgroup_root_has_controller(r, "blkio"));
        fake_cleanup();
}
END_TEST

START_TEST(test_path_validation) {
        static const char *const bad_paths[] = {
                "..",   "../x",    "a/../b", "a/..",  "/a",  "/",    "a//b", "a/",
                ".",    "./a",     "a/./b",  "a\nb",  "a\tb", "\x7f", "//",
        };
        static const char *const bad_files[] = {
                "", ".", "..", "../cgroup.procs", "a/b", "/cpu.max", "x\n",
        };
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        char *t = (char *) "untouched";

        fake_v2_root(V2_ALL);
        fake_file("outside", "secret\n");
        fake_dir("sub");
        r = open_root(2);

        FOREACH_ELEMENT(p, bad_paths) {
                ck_assert_msg(cgroup_read_file(r, NULL, *p, "cgroup.procs", &t) == -EINVAL, "read '%s'", *p);
                ck_assert_msg(cgroup_write_file(r, NULL, *p, "evil", "1") == -EINVAL, "write '%s'", *p);
                ck_assert_msg(cgroup_create(r, *p) == -EINVAL, "create '%s'", *p);
                ck_assert_msg(cgroup_remove(r, *p) == -EINVAL, "remove '%s'", *p);
                ck_assert_msg(cgroup_attach(r, *p, 1) == -EINVAL, "attach '%s'", *p);
                ck_assert_msg(cgroup_exists(r, *p) == -EINVAL, "exists '%s'", *p);
        }
        FOREACH_ELEMENT(f, bad_files) {
                ck_assert_msg(cgroup_read_file(r, NULL, "sub", *f, &t) == -EINVAL, "read '%s'", *f);
                ck_assert_msg(cgroup_write_file(r, NULL, "sub", *f, "1") == -EINVAL, "write '%s'", *f);
        }
        ck_assert_str_eq(t, "untouched");
        ck_assert(!fake_exists("../evil"));
        ck_assert(!fake_exists("evil"));
        assert_fake_file("outside", "secret\n");

        /* the root cgroup itself is "" — but it cannot be created or removed */
        ck_assert_int_eq(cgroup_read_file(r, NULL, "", "cgroup.procs", &t), 0);
        ck_assert_str_eq(t, "1\n");
        free(t);
        ck_assert_int_eq(cgroup_exists(r, ""), 1);
        ck_assert_int_eq(cgroup_create(r, ""), -EINVAL);
        ck_assert_int_eq(cgroup_remove(r, ""), -EINVAL);

        /* one value per write */
        ck_assert_int_eq(cgroup_write_file(r, NULL, "sub", "cpu.weight", "1\n2"), -EINVAL);
        ck_assert_int_eq(cgroup_write_file(r, NULL, "sub", "cpu.weight", "100\n"), -EINVAL);
        ck_assert(!fake_exists("sub/cpu.weight"));
        fake_cleanup();
}
END_TEST

START_TEST(test_v1_controller_validation) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        char *t = NULL;

        fake_root_new();
        fake_file("cpu/cgroup.procs", "");
        fake_file("cpu/cpu.shares", "1024\n");
        r = open_root(1);

        ck_assert_int_eq(cgroup_read_file(r, "cpu", "", "cpu.shares", &t), 0);
        ck_assert_str_eq(t, "1024\n");
        free(t);
        ck_assert_int_eq(cgroup_read_file(r, NULL, "", "cpu.shares", &t), -EINVAL);
        ck_assert_int_eq(cgroup_read_file(r, "", "", "cpu.shares", &t), -EINVAL);
        ck_assert_int_eq(cgroup_read_file(r, "..", "", "cpu.shares", &t), -EINVAL);
        ck_assert_int_eq(cgroup_read_file(r, "cpu/..", "", "cpu.shares", &t), -EINVAL);
        ck_assert_int_eq(cgroup_write_file(r, "../cpu", "", "cpu.shares", "2"), -EINVAL);
        /* a hierarchy that is not there */
        ck_assert_int_eq(cgroup_read_file(r, "memory", "", "memory.limit_in_bytes", &t), -ENOENT);
        ck_assert_int_eq(cgroup_write_file(r, "memory", "", "memory.limit_in_bytes", "1"), -ENOENT);
        ck_assert(!fake_exists("memory"));
        fake_cleanup();
}
END_TEST

START_TEST(test_write_file) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_free_ char *target = NULL, *link = NULL;

        fake_v2_root(V2_ALL);
        fake_v2_cgroup("a", V2_ALL);
        r = open_root(2);

        /* the whole value with a newline, replacing what was there */
        ck_assert_int_eq(cgroup_write_file(r, NULL, "a", "cpu.weight", "5"), 0);
        assert_fake_file("a/cpu.weight", "5\n");
        ck_assert_int_eq(cgroup_write_file(r, NULL, "a", "cpu.max", "20000 100000"), 0);
        assert_fake_file("a/cpu.max", "20000 100000\n");
        ck_assert_int_eq(cgroup_write_file(r, NULL, "a", "cpuset.cpus", ""), 0);
        assert_fake_file("a/cpuset.cpus", "\n");
        /* the controller argument means nothing on v2 */
        ck_assert_int_eq(cgroup_write_file(r, "memory", "a", "memory.max", "4096"), 0);
        assert_fake_file("a/memory.max", "4096\n");
        /* no cgroup, no file */
        ck_assert_int_eq(cgroup_write_file(r, NULL, "b", "cpu.weight", "5"), -ENOENT);
        ck_assert(!fake_exists("b"));

        /* never through a symlink */
        fake_file("target", "keep\n");
        target = fake_path("target");
        link = fake_path("a/memory.high");
        fake_unlink("a/memory.high");
        ck_assert_int_eq(symlink(target, link), 0);
        ck_assert_int_eq(cgroup_write_file(r, NULL, "a", "memory.high", "1"), -ELOOP);
        assert_fake_file("target", "keep\n");
        fake_cleanup();
}
END_TEST

START_TEST(test_v2_create) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;

        fake_v2_root(V2_ALL);
        r = open_root(2);

        ck_assert_int_eq(cgroup_exists(r, "tonari.slice/web"), 0);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 1);
        ck_assert_int_eq(cgroup_exists(r, "tonari.slice/web"), 1);
        ck_assert_int_eq(cgroup_exists(r, "tonari.slice"), 1);
        /* enabled in every parent, all in one write, in this order */
        assert_fake_file("cgroup.subtree_control", "+cpu +io +memory +pids +cpuset\n");
        assert_fake_file("tonari.slice/cgroup.subtree_control", "+cpu +io +memory +pids +cpuset\n");
        /* never in the leaf: it is to hold processes */
        ck_assert(!fake_exists("tonari.slice/web/cgroup.subtree_control"));

        /* the kernel shows them enabled: nothing to write the second time */
        fake_file("cgroup.subtree_control", "cpuset cpu io memory pids\n");
        fake_file("tonari.slice/cgroup.subtree_control", "cpuset cpu io memory pids\n");
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 0);
        assert_fake_file("cgroup.subtree_control", "cpuset cpu io memory pids\n");
        assert_fake_file("tonari.slice/cgroup.subtree_control", "cpuset cpu io memory pids\n");

        /* a sibling under an existing parent; only what is missing is enabled */
        fake_file("tonari.slice/cgroup.subtree_control", "cpu memory\n");
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/db"), 1);
        assert_fake_file("tonari.slice/cgroup.subtree_control", "+io +pids +cpuset\n");
        assert_fake_file("cgroup.subtree_control", "cpuset cpu io memory pids\n");
        fake_cleanup();
}
END_TEST

START_TEST(test_v2_create_partial_controllers) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_free_ char *sc = NULL;

        /* the root offers only some (and one tonari does not use) */
        fake_v2_root("memory hugetlb cpu\n");
        r = open_root(2);

        ck_assert_int_eq(cgroup_create(r, "a/b/c"), 1);
        assert_fake_file("cgroup.subtree_control", "+cpu +memory\n");
        /* below the root, what the level above enabled is all there is */
        assert_fake_file("a/cgroup.subtree_control", "+cpu +memory\n");
        assert_fake_file("a/b/cgroup.subtree_control", "+cpu +memory\n");
        ck_assert(!fake_exists("a/b/c/cgroup.subtree_control"));

        /* a parent whose subtree_control cannot be read: the error, and nothing created */
        fake_dir("x/cgroup.subtree_control");
        sc = fake_path("x/cgroup.subtree_control/.keep");
        ck_assert_int_eq(unlink(sc), 0);
        ck_assert_int_eq(cgroup_create(r, "x/y/z"), -EISDIR);
        ck_assert(!fake_exists("x/y"));
        ck_assert(fake_exists("x")); /* not ours */
        fake_cleanup();
}
END_TEST

START_TEST(test_v2_apply) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_(cgroup_settings_done) CGroupSettings s = CGROUP_SETTINGS_INIT, back = CGROUP_SETTINGS_INIT;
        _cleanup_free_ char *msg = NULL;
        const char *web = "tonari.slice/web";

        fake_v2_root(V2_ALL);
        r = open_root(2);
        ck_assert_int_eq(cgroup_create(r, web), 1);
        fake_v2_cgroup(web, V2_ALL);

        s.cpu_weight = 200;
        s.cpu_quota_per_sec_usec = 200000; /* CPUQuota=20% */
        s.io_weight = 300;
        s.io_limits = new0(CGroupIODeviceLimit, 1);
        s.io_limits[0] = (CGroupIODeviceLimit) {
                .path = strdup("/dev/vda"),
                .devnum = makedev(254, 0),
                .limit = { CGROUP_LIMIT_MAX, 5000000, CGROUP_LIMIT_MAX, 1000 },
        };
        s.n_io_limits = 1;
        s.memory_max = 256 << 20;
        s.memory_high = 192 << 20;
        ck_assert_int_eq(parse_index_list("0,2-3", 8191, &s.allowed_cpus, &s.allowed_cpus_size), 0);
        ck_assert_int_eq(parse_index_list("1", 1023, &s.allowed_mems, &s.allowed_mems_size), 0);

        /* no io.weight (no BFQ, no iocost): refused before anything is written */
        ck_assert_int_eq(cgroup_apply(r, web, &s, _CGROUP_MASK_ALL, &msg), -EOPNOTSUPP);
        ck_assert_str_eq(msg, "IOWeight= (no io.weight: the device's scheduler has no weights)");
        msg = mfree(msg);
        assert_fake_file("tonari.slice/web/cpu.weight", "100\n");
        assert_fake_file("tonari.slice/web/cpu.max", "max 100000\n");
        assert_fake_file("tonari.slice/web/memory.max", "max\n");
        ck_assert_int_eq(cgroup_apply(r, web, &s, _CGROUP_MASK_ALL, NULL), -EOPNOTSUPP);

        /* everything but IOWeight= is fine */
        ck_assert_int_eq(cgroup_apply(r, web, &s, _CGROUP_MASK_ALL & ~CGROUP_MASK_IO_WEIGHT, &msg), 0);
        ck_assert_ptr_null(msg);

        fake_file("tonari.slice/web/io.weight", "default 100\n");
        ck_assert_int_eq(cgroup_apply(r, web, &s, _CGROUP_MASK_ALL, &msg), 0);
        ck_assert_ptr_null(msg);
        assert_fake_file("tonari.slice/web/cpu.weight", "200\n");
        assert_fake_file("tonari.slice/web/cpu.max", "20000 100000\n");
        assert_fake_file("tonari.slice/web/io.weight", "default 300\n");
        assert_fake_file("tonari.slice/web/io.max", "254:0 rbps=max wbps=5000000 riops=max wiops=1000\n");
        assert_fake_file("tonari.slice/web/memory.max", "268435456\n");
        assert_fake_file("tonari.slice/web/memory.high", "201326592\n");
        assert_fake_file("tonari.slice/web/cpuset.cpus", "0,2-3\n");
        assert_fake_file("tonari.slice/web/cpuset.mems", "1\n");

        /* read back what was written */
        ck_assert_int_eq(cgroup_read_settings(r, web, &back), 0);
        ck_assert_uint_eq(back.cpu_weight, 200);
        ck_assert_uint_eq(back.cpu_quota_per_sec_usec, 200000);
        ck_assert_uint_eq(back.cpu_quota_period_usec, USEC_INFINITY);
        ck_assert_uint_eq(back.io_weight, 300);
        ck_assert_uint_eq(back.n_io_limits, 1);
        ck_assert_uint_eq(back.io_limits[0].devnum, makedev(254, 0));
        ck_assert_str_eq(back.io_limits[0].path, "/dev/block/254:0");
        ck_assert_mem_eq(back.io_limits[0].limit, s.io_limits[0].limit, sizeof(s.io_limits[0].limit));
        ck_assert_uint_eq(back.memory_max, 256 << 20);
        ck_assert_uint_eq(back.memory_high, 192 << 20);
        ck_assert_uint_eq(back.allowed_cpus_size, s.allowed_cpus_size);
        ck_assert_mem_eq(back.allowed_cpus, s.allowed_cpus, s.allowed_cpus_size);
        ck_assert_uint_eq(back.allowed_mems_size, s.allowed_mems_size);
        ck_assert_mem_eq(back.allowed_mems, s.allowed_mems, s.allowed_mems_size);
        cgroup_settings_done(&back);

        /* only what the mask selects */
        s.cpu_weight = 50;
        s.memory_max = 1 << 20;
        ck_assert_int_eq(cgroup_apply(r, web, &s, CGROUP_MASK_CPU_WEIGHT, NULL), 0);
        assert_fake_file("tonari.slice/web/cpu.weight", "50\n");
        assert_fake_file("tonari.slice/web/memory.max", "268435456\n");
        ck_assert_int_eq(cgroup_apply(r, web, &s, 0, NULL), 0);

        /* a period of its own */
        s.cpu_quota_per_sec_usec = 1500000;
        s.cpu_quota_period_usec = 10000;
        ck_assert_int_eq(cgroup_apply(r, web, &s, CGROUP_MASK_CPU_QUOTA, NULL), 0);
        assert_fake_file("tonari.slice/web/cpu.max", "15000 10000\n");
        ck_assert_int_eq(cgroup_read_settings(r, web, &back), 0);
        ck_assert_uint_eq(back.cpu_quota_per_sec_usec, 1500000);
        ck_assert_uint_eq(back.cpu_quota_period_usec, 10000);
        cgroup_settings_done(&back);
        s.cpu_quota_per_sec_usec = USEC_INFINITY;
        ck_assert_int_eq(cgroup_apply(r, web, &s, CGROUP_MASK_CPU_QUOTA, NULL), 0);
        assert_fake_file("tonari.slice/web/cpu.max", "max 10000\n");

        /* back to the defaults: every file says so */
        cgroup_settings_done(&s);
        fake_file("tonari.slice/web/io.max", "254:0 rbps=max wbps=5000000 riops=max wiops=1000\n");
        ck_assert_int_eq(cgroup_apply(r, web, &s, _CGROUP_MASK_ALL, NULL), 0);
        assert_fake_file("tonari.slice/web/cpu.weight", "100\n");
        assert_fake_file("tonari.slice/web/cpu.max", "max 100000\n");
        assert_fake_file("tonari.slice/web/io.weight", "default 100\n");
        /* a device no longer listed: all four back to max */
        assert_fake_file("tonari.slice/web/io.max", "254:0 rbps=max wbps=max riops=max wiops=max\n");
        assert_fake_file("tonari.slice/web/memory.max", "max\n");
        assert_fake_file("tonari.slice/web/memory.high", "max\n");
        assert_fake_file("tonari.slice/web/cpuset.cpus", "\n"); /* "": the parent's */
        assert_fake_file("tonari.slice/web/cpuset.mems", "\n");

        /* the kernel drops such a line; and the defaults read back as unset */
        fake_file("tonari.slice/web/io.max", "");
        ck_assert_int_eq(cgroup_read_settings(r, web, &back), 0);
        ck_assert_uint_eq(back.cpu_weight, CGROUP_WEIGHT_UNSET);
        ck_assert_uint_eq(back.cpu_quota_per_sec_usec, USEC_INFINITY);
        ck_assert_uint_eq(back.cpu_quota_period_usec, USEC_INFINITY);
        ck_assert_uint_eq(back.io_weight, CGROUP_WEIGHT_UNSET);
        ck_assert_uint_eq(back.n_io_limits, 0);
        ck_assert_ptr_null(back.io_limits);
        ck_assert_uint_eq(back.memory_max, CGROUP_LIMIT_MAX);
        ck_assert_uint_eq(back.memory_high, CGROUP_LIMIT_MAX);
        ck_assert_ptr_null(back.allowed_cpus);
        ck_assert_ptr_null(back.allowed_mems);
        cgroup_settings_done(&back);
        fake_cleanup();
}
END_TEST

START_TEST(test_v2_apply_io_limits) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_(cgroup_settings_done) CGroupSettings s = CGROUP_SETTINGS_INIT, back = CGROUP_SETTINGS_INIT;
        _cleanup_free_ char *msg = NULL;

        fake_v2_root(V2_ALL);
        r = open_root(2);
        ck_assert_int_eq(cgroup_create(r, "a"), 1);
        fake_v2_cgroup("a", V2_ALL);

        s.io_limits = new0(CGroupIODeviceLimit, 2);
        s.io_limits[0] = (CGroupIODeviceLimit) {
                .devnum = makedev(8, 0),
                .limit = { CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX },
        };
        s.io_limits[1] = (CGroupIODeviceLimit) { .devnum = makedev(8, 16), .limit = { 1, 2, 3, 4 } };
        s.n_io_limits = 2;

        /* The kernel has a limit on 8:32 and 8:0; the settings keep none there. Each write is one
         * device (the fake file keeps only the last): 8:32 goes, 8:0 goes, 8:16 comes. */
        fake_file("a/io.max", "8:32 rbps=max wbps=7 riops=max wiops=max\n"
                              "8:0 rbps=9 wbps=max riops=max wiops=max\n");
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, NULL), 0);
        assert_fake_file("a/io.max", "8:16 rbps=1 wbps=2 riops=3 wiops=4\n");

        /* the last one written is the removal when no device is listed */
        s.n_io_limits = 1;
        fake_file("a/io.max", "8:16 rbps=1 wbps=2 riops=3 wiops=4\n");
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, NULL), 0);
        assert_fake_file("a/io.max", "8:16 rbps=max wbps=max riops=max wiops=max\n");

        /* a device with no limit that the kernel does not list: nothing to write */
        fake_file("a/io.max", "");
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, NULL), 0);
        assert_fake_file("a/io.max", "");

        /* the kernel's text is read back, whoever wrote it */
        fake_file("a/io.max", "8:32 rbps=max wbps=7 riops=max wiops=max\n"
                              "8:0 rbps=9 wbps=max riops=max wiops=11\n");
        ck_assert_int_eq(cgroup_read_settings(r, "a", &back), 0);
        ck_assert_uint_eq(back.n_io_limits, 2);
        ck_assert_str_eq(back.io_limits[0].path, "/dev/block/8:32");
        ck_assert_uint_eq(back.io_limits[0].limit[CGROUP_IO_WBPS], 7);
        ck_assert_uint_eq(back.io_limits[1].limit[CGROUP_IO_RBPS], 9);
        ck_assert_uint_eq(back.io_limits[1].limit[CGROUP_IO_WIOPS], 11);
        cgroup_settings_done(&back);
        fake_file("a/io.max", "8:32 garbage\n");
        ck_assert_int_eq(cgroup_read_settings(r, "a", &back), -EINVAL);
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, NULL), -EINVAL);

        /* no io.max: this kernel does not throttle */
        fake_unlink("a/io.max");
        s.n_io_limits = 2;
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, &msg), -EOPNOTSUPP);
        ck_assert_str_eq(msg, "IOReadBandwidthMax= (no io.max: the kernel has no block I/O throttling)");
        msg = mfree(msg);
        s.io_limits[1].limit[CGROUP_IO_RBPS] = CGROUP_LIMIT_MAX;
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, &msg), -EOPNOTSUPP);
        ck_assert_str_eq(msg, "IOWriteBandwidthMax= (no io.max: the kernel has no block I/O throttling)");
        msg = mfree(msg);
        /* nothing to limit, nothing to complain about */
        s.n_io_limits = 1;
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, &msg), 0);
        ck_assert(!fake_exists("a/io.max"));
        fake_cleanup();
}
END_TEST

START_TEST(test_v2_apply_missing_controllers) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_(cgroup_settings_done) CGroupSettings s = CGROUP_SETTINGS_INIT, back = CGROUP_SETTINGS_INIT;
        _cleanup_free_ char *msg = NULL;
        static const struct {
                CGroupSettingMask mask;
                const char *message;
        } cases[] = {
                { CGROUP_MASK_CPU_WEIGHT, "CPUWeight= (no cpu controller)" },
                { CGROUP_MASK_CPU_QUOTA, "CPUQuota= (no cpu controller)" },
                { CGROUP_MASK_IO_WEIGHT, "IOWeight= (no io controller)" },
                { CGROUP_MASK_IO_LIMITS, "IOWriteIOPSMax= (no io controller)" },
                { CGROUP_MASK_ALLOWED_CPUS, "AllowedCPUs= (no cpuset controller)" },
                { CGROUP_MASK_ALLOWED_MEMS, "AllowedMemoryNodes= (no cpuset controller)" },
        };

        /* The kernel enabled only memory and pids for this cgroup (e.g. cpu was refused). */
        fake_v2_root(V2_ALL);
        r = open_root(2);
        ck_assert_int_eq(cgroup_create(r, "a"), 1);
        fake_v2_cgroup("a", "memory pids");

        s.cpu_weight = 200;
        s.cpu_quota_per_sec_usec = 100000;
        s.io_weight = 200;
        s.io_limits = new0(CGroupIODeviceLimit, 1);
        s.io_limits[0] = (CGroupIODeviceLimit) {
                .devnum = makedev(8, 0),
                .limit = { CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX, 100 },
        };
        s.n_io_limits = 1;
        s.memory_max = 1 << 30;
        ck_assert_int_eq(parse_index_list("0", 8191, &s.allowed_cpus, &s.allowed_cpus_size), 0);
        ck_assert_int_eq(parse_index_list("0", 1023, &s.allowed_mems, &s.allowed_mems_size), 0);

        FOREACH_ELEMENT(c, cases) {
                int k = cgroup_apply(r, "a", &s, c->mask | CGROUP_MASK_MEMORY_MAX, &msg);

                ck_assert_int_eq(k, -EOPNOTSUPP);
                ck_assert_str_eq(msg, c->message);
                msg = mfree(msg);
        }
        /* the period alone needs the cpu controller as well */
        s.cpu_quota_per_sec_usec = USEC_INFINITY;
        s.cpu_quota_period_usec = 50000;
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_CPU_QUOTA, &msg), -EOPNOTSUPP);
        ck_assert_str_eq(msg, "CPUQuota= (no cpu controller)");
        msg = mfree(msg);
        assert_fake_file("a/memory.max", "max\n"); /* nothing was written */

        /* Defaults need no controller: this is what a new slice applies. */
        cgroup_settings_done(&s);
        s.memory_max = 1 << 30;
        ck_assert_int_eq(cgroup_apply(r, "a", &s, _CGROUP_MASK_ALL, &msg), 0);
        ck_assert_ptr_null(msg);
        assert_fake_file("a/memory.max", "1073741824\n");
        ck_assert(!fake_exists("a/cpu.weight"));
        ck_assert(!fake_exists("a/cpuset.cpus"));

        ck_assert_int_eq(cgroup_read_settings(r, "a", &back), 0);
        ck_assert_uint_eq(back.cpu_weight, CGROUP_WEIGHT_UNSET);
        ck_assert_uint_eq(back.memory_max, 1 << 30);
        ck_assert_ptr_null(back.allowed_cpus);
        fake_cleanup();
}
END_TEST

START_TEST(test_apply_invalid) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_(cgroup_settings_done) CGroupSettings s = CGROUP_SETTINGS_INIT;
        CGroupSettings bad;

        fake_v2_root(V2_ALL);
        r = open_root(2);
        ck_assert_int_eq(cgroup_create(r, "a"), 1);
        fake_v2_cgroup("a", V2_ALL);
        fake_file("a/io.weight", "default 100\n");

        s.io_limits = new0(CGroupIODeviceLimit, 2);
        s.io_limits[0] = (CGroupIODeviceLimit) { .devnum = makedev(8, 0), .limit = { 1, 1, 1, 1 } };
        s.io_limits[1] = (CGroupIODeviceLimit) { .devnum = makedev(8, 16), .limit = { 1, 1, 1, 1 } };
        s.n_io_limits = 2;
        s.memory_max = 4096;

#define EXPECT_EINVAL(field, value)                                                                    \
        do {                                                                                           \
                bad = s;                                                                               \
                bad.field = value;                                                                     \
                ck_assert_int_eq(cgroup_apply(r, "a", &bad, _CGROUP_MASK_ALL, NULL), -EINVAL);         \
        } while (false)
        EXPECT_EINVAL(cpu_weight, 0);
        EXPECT_EINVAL(cpu_weight, 10001);
        EXPECT_EINVAL(io_weight, 0);
        EXPECT_EINVAL(io_weight, UINT64_MAX - 1);
        EXPECT_EINVAL(cpu_quota_period_usec, 999);
        EXPECT_EINVAL(cpu_quota_period_usec, USEC_PER_SEC + 1);
        EXPECT_EINVAL(cpu_quota_period_usec, 0);
#undef EXPECT_EINVAL

        s.io_limits[1].devnum = makedev(8, 0); /* twice */
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, NULL), -EINVAL);
        s.io_limits[1].devnum = makedev(0, 16); /* not a block device */
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, NULL), -EINVAL);
        s.io_limits[1].devnum = makedev(8, 16);
        s.io_limits[1].limit[CGROUP_IO_RIOPS] = 0; /* v1 would read 0 as "none" */
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, NULL), -EINVAL);
        s.io_limits[1].limit[CGROUP_IO_RIOPS] = 1;

        ck_assert_int_eq(cgroup_apply(r, "a", &s, 1 << 8, NULL), -EINVAL);
        ck_assert_int_eq(cgroup_apply(r, "a", NULL, _CGROUP_MASK_ALL, NULL), -EINVAL);
        ck_assert_int_eq(cgroup_apply(NULL, "a", &s, _CGROUP_MASK_ALL, NULL), -EINVAL);
        ck_assert_int_eq(cgroup_apply(r, "nope", &s, _CGROUP_MASK_ALL, NULL), -ENOENT);
        ck_assert_int_eq(cgroup_apply(r, "../a", &s, _CGROUP_MASK_ALL, NULL), -EINVAL);
        /* nothing got through */
        assert_fake_file("a/memory.max", "max\n");
        assert_fake_file("a/io.max", "");
        assert_fake_file("a/cpu.weight", "100\n");

        /* with valid values it goes in */
        ck_assert_int_eq(cgroup_apply(r, "a", &s, _CGROUP_MASK_ALL, NULL), 0);
        assert_fake_file("a/memory.max", "4096\n");
        fake_cleanup();
}
END_TEST

START_TEST(test_v2_read_settings_garbage) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        CGroupSettings back = CGROUP_SETTINGS_INIT;
        static const struct {
                const char *file, *content;
        } cases[] = {
                { "cpu.weight", "0\n" },          { "cpu.weight", "10001\n" },
                { "cpu.weight", "x\n" },          { "cpu.max", "max\n" },
                { "io.weight", "100\n" },         { "io.weight", "default 0\n" },
                { "memory.max", "-1\n" },         { "memory.high", "1 2\n" },
                { "cpuset.cpus", "0-\n" },        { "cpuset.mems", "99999\n" },
        };

        fake_v2_root(V2_ALL);
        r = open_root(2);
        ck_assert_int_eq(cgroup_create(r, "a"), 1);
        fake_v2_cgroup("a", V2_ALL);
        fake_file("a/io.weight", "default 100\n8:0 50\n"); /* a device's own weight is not ours */
        ck_assert_int_eq(cgroup_read_settings(r, "a", &back), 0);
        ck_assert_uint_eq(back.io_weight, CGROUP_WEIGHT_UNSET);
        cgroup_settings_done(&back);

        FOREACH_ELEMENT(c, cases) {
                _cleanup_free_ char *p = strjoin("a/", c->file), *old = fake_read(p);

                fake_file(p, c->content);
                back.cpu_weight = 42;
                ck_assert_msg(cgroup_read_settings(r, "a", &back) == -EINVAL, "%s: '%s'", c->file,
                              c->content);
                ck_assert_uint_eq(back.cpu_weight, 42); /* untouched */
                fake_file(p, old);
        }
        ck_assert_int_eq(cgroup_read_settings(r, "nope", &back), -ENOENT);
        fake_cleanup();
}
END_TEST

START_TEST(test_v2_usage) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        CGroupUsage u;

        fake_v2_root(V2_ALL);
        r = open_root(2);
        ck_assert_int_eq(cgroup_create(r, "a"), 1);
        fake_v2_cgroup("a", V2_ALL);

        fake_file("a/cpu.stat", "usage_usec 5000\nuser_usec 4000\nsystem_usec 1000\n");
        fake_file("a/io.stat", "8:16 rbytes=100 wbytes=200 rios=1 wios=2 dbytes=0 dios=0\n"
                               "8:0 rbytes=1 wbytes=2 rios=1 wios=2 dbytes=0 dios=0\n");
        fake_file("a/memory.current", "1048576\n");
        fake_file("a/pids.current", "3\n");
        fake_file("a/cgroup.procs", "12\n34\n");
        ck_assert_int_eq(cgroup_read_usage(r, "a", &u), 0);
        ck_assert_uint_eq(u.cpu_usage_usec, 5000);
        ck_assert_uint_eq(u.io_read_bytes, 101);
        ck_assert_uint_eq(u.io_write_bytes, 202);
        ck_assert_uint_eq(u.memory_current, 1048576);
        ck_assert_uint_eq(u.n_tasks, 3); /* threads of the subtree, from pids.current */

        /* without io, memory and pids: unknown, and the processes are counted instead */
        fake_unlink("a/io.stat");
        fake_unlink("a/memory.current");
        fake_unlink("a/pids.current");
        ck_assert_int_eq(cgroup_read_usage(r, "a", &u), 0);
        ck_assert_uint_eq(u.cpu_usage_usec, 5000);
        ck_assert_uint_eq(u.io_read_bytes, UINT64_MAX);
        ck_assert_uint_eq(u.io_write_bytes, UINT64_MAX);
        ck_assert_uint_eq(u.memory_current, UINT64_MAX);
        ck_assert_uint_eq(u.n_tasks, 2);

        fake_file("a/memory.current", "lots\n");
        u.n_tasks = 42;
        ck_assert_int_eq(cgroup_read_usage(r, "a", &u), -EINVAL);
        ck_assert_uint_eq(u.n_tasks, 42);
        fake_file("a/memory.current", "1\n");
        fake_file("a/cpu.stat", "user_usec 4000\n");
        ck_assert_int_eq(cgroup_read_usage(r, "a", &u), -EINVAL);
        ck_assert_int_eq(cgroup_read_usage(r, "nope", &u), -ENOENT);
        fake_cleanup();
}
END_TEST

START_TEST(test_v2_pids_attach_children_remove) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_strv_free_ char **children = NULL;
        _cleanup_free_ char *s = NULL;
        pid_t *pids = NULL;
        size_t n = 42;

        fake_v2_root(V2_ALL);
        r = open_root(2);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 1);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/db"), 1);
        fake_v2_cgroup("tonari.slice/web", V2_ALL);
        fake_v2_cgroup("tonari.slice/db", V2_ALL);
        fake_file("tonari.slice/not-a-cgroup", "");

        ck_assert_int_eq(cgroup_list_children(r, "tonari.slice", &children), 0);
        s = strv_join(children, " ");
        ck_assert_str_eq(s, "db web"); /* sorted, directories only */
        children = strv_free(children);
        ck_assert_int_eq(cgroup_list_children(r, "tonari.slice/web", &children), 0);
        ck_assert_uint_eq(strv_length(children), 0);
        children = strv_free(children);
        ck_assert_int_eq(cgroup_list_children(r, "nope", &children), -ENOENT);

        ck_assert_int_eq(cgroup_get_pids(r, "tonari.slice/web", &pids, &n), 0);
        ck_assert_uint_eq(n, 0);
        free(pids);

        ck_assert_int_eq(cgroup_attach(r, "tonari.slice/web", 1234), 0);
        assert_fake_file("tonari.slice/web/cgroup.procs", "1234\n");
        ck_assert_int_eq(cgroup_attach(r, "tonari.slice/web", 0), -EINVAL);
        ck_assert_int_eq(cgroup_attach(r, "tonari.slice/web", -1), -EINVAL);
        ck_assert_int_eq(cgroup_attach(r, "tonari.slice/nope", 1234), -ENOENT);

        /* what the kernel lists: v1 may repeat a process */
        fake_file("tonari.slice/web/cgroup.procs", "34\n12\n34\n");
        ck_assert_int_eq(cgroup_get_pids(r, "tonari.slice/web", &pids, &n), 0);
        ck_assert_uint_eq(n, 2);
        ck_assert_int_eq(pids[0], 12);
        ck_assert_int_eq(pids[1], 34);
        free(pids);
        pids = NULL;
        n = 42;
        fake_file("tonari.slice/db/cgroup.procs", "12\nabc\n");
        ck_assert_int_eq(cgroup_get_pids(r, "tonari.slice/db", &pids, &n), -EINVAL);
        fake_file("tonari.slice/db/cgroup.procs", "0\n");
        ck_assert_int_eq(cgroup_get_pids(r, "tonari.slice/db", &pids, &n), -EINVAL);
        ck_assert_ptr_null(pids);
        ck_assert_uint_eq(n, 42);
        fake_file("tonari.slice/db/cgroup.procs", "");

        /* busy: processes, or children */
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice/web"), -EBUSY);
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice"), -EBUSY);
        ck_assert_int_eq(cgroup_exists(r, "tonari.slice/web"), 1);

        fake_file("tonari.slice/web/cgroup.procs", "");
        fake_strip("tonari.slice/web");
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice/web"), 1);
        ck_assert_int_eq(cgroup_exists(r, "tonari.slice/web"), 0);
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice/web"), 0); /* already gone */
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice"), -EBUSY); /* db */
        fake_strip("tonari.slice/db");
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice/db"), 1);
        fake_strip("tonari.slice");
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice"), 1);
        ck_assert(!fake_exists("tonari.slice"));
        fake_cleanup();
}
END_TEST

/* A name that is an interface file of the parent is no cgroup: refused, nothing made or kept. */
START_TEST(test_v2_create_not_a_directory) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        uint64_t id = 42;

        fake_v2_root(V2_ALL);
        r = open_root(2);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 1);
        fake_v2_cgroup("tonari.slice", V2_ALL);
        fake_file("tonari.slice/memory.stat", "anon 0\n");

        ck_assert_int_eq(cgroup_exists(r, "tonari.slice/memory.stat"), -ENOTDIR);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/memory.stat"), -ENOTDIR);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/memory.stat/x"), -ENOTDIR);
        assert_fake_file("tonari.slice/memory.stat", "anon 0\n");
        ck_assert_int_eq(cgroup_attach(r, "tonari.slice/memory.stat", 1234), -ENOTDIR);
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice/memory.stat"), -ENOTDIR);
        assert_fake_file("tonari.slice/memory.stat", "anon 0\n");
        ck_assert_int_eq(cgroup_get_id(r, "tonari.slice/memory.stat", &id), -ENOTDIR);
        ck_assert_uint_eq(id, 42);
        fake_cleanup();
}
END_TEST

/* Several processes: all of them move or none (v2 moves each process in one write). */
START_TEST(test_v2_attach_all_or_nothing) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_free_ char *procs = NULL;
        size_t failed = 42;
        uint64_t id1, id2;

        fake_v2_root(V2_ALL);
        r = open_root(2);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 1);
        ck_assert_int_eq(cgroup_create(r, "src"), 1);
        fake_v2_cgroup("tonari.slice/web", V2_ALL);
        fake_v2_cgroup("src", V2_ALL);
        fake_proc_cgroup(11, 2, "/src");
        fake_proc_cgroup(12, 2, "/src");

        /* the third process is gone before anything moved: nothing moves */
        ck_assert_int_eq(cgroup_attach_many(r, "tonari.slice/web", (const pid_t[]) { 11, 12, 13 }, 3, &failed),
                         -ESRCH);
        ck_assert_uint_eq(failed, 2);
        assert_fake_file("tonari.slice/web/cgroup.procs", "");

        /* the kernel refuses the second one: the first goes back where it was */
        procs = fake_path("tonari.slice/web/cgroup.procs");
        ck_assert_int_eq(chmod(procs, 0444), 0);
        if (access(procs, W_OK) < 0) { /* (root may write anyway) */
                ck_assert_int_eq(cgroup_attach_many(r, "tonari.slice/web", (const pid_t[]) { 11, 12 }, 2, &failed),
                                 -EACCES);
                ck_assert_uint_eq(failed, 0);
        }
        ck_assert_int_eq(chmod(procs, 0644), 0);

        ck_assert_int_eq(cgroup_attach_many(r, "tonari.slice/web", (const pid_t[]) { 11, 12 }, 2, &failed), 0);
        assert_fake_file("tonari.slice/web/cgroup.procs", "12\n");
        ck_assert_int_eq(cgroup_attach_many(r, "tonari.slice/nope", (const pid_t[]) { 11 }, 1, NULL), -ENOENT);

        /* a new directory, a new id */
        ck_assert_int_eq(cgroup_get_id(r, "tonari.slice/web", &id1), 0);
        ck_assert_int_eq(cgroup_get_id(r, "src", &id2), 0);
        ck_assert_uint_ne(id1, id2);
        ck_assert_int_eq(cgroup_get_id(r, "tonari.slice/nope", &id1), -ENOENT);
        fake_cleanup();
}
END_TEST

/* v1 */

/* Six hierarchies as on the test machine; blkio without blkio.weight (no CFQ/BFQ weights). */
static void fake_v1_root(const char *skip) {
        fake_root_new();
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = NULL;

                if (skip && streq(*h, skip))
                        continue;
                p = strjoin(*h, "/cgroup.procs");
                fake_file(p, "1\n");
        }
        if (!(skip && streq(skip, "cpuset"))) {
                fake_file("cpuset/cpuset.cpus", "0-3\n");
                fake_file("cpuset/cpuset.mems", "0\n");
        }
}

/* The files the kernel gives a new v1 cgroup (a new cpuset is empty). */
static void fake_v1_cgroup(const char *path) {
#define F(h, name, content)                                                                            \
        do {                                                                                           \
                _cleanup_free_ char *_d = strjoin(h, "/", path), *_p = strjoin(_d, "/", name);         \
                if (fake_exists(_d))                                                                   \
                        fake_default(_p, content);                                                     \
        } while (false)
        FOREACH_ELEMENT(h, v1_hierarchies)
                F(*h, "cgroup.procs", "");
        F("cpu", "cpu.shares", "1024\n");
        F("cpu", "cpu.cfs_period_us", "100000\n");
        F("cpu", "cpu.cfs_quota_us", "-1\n");
        F("cpuacct", "cpuacct.usage", "0\n");
        F("cpuset", "cpuset.cpus", "\n");
        F("cpuset", "cpuset.mems", "\n");
        F("blkio", "blkio.throttle.read_bps_device", "");
        F("blkio", "blkio.throttle.write_bps_device", "");
        F("blkio", "blkio.throttle.read_iops_device", "");
        F("blkio", "blkio.throttle.write_iops_device", "");
        F("blkio", "blkio.throttle.io_service_bytes_recursive", "Total 0\n");
        F("memory", "memory.limit_in_bytes", "9223372036854771712\n");
        F("memory", "memory.usage_in_bytes", "0\n");
        F("pids", "pids.current", "0\n");
#undef F
}

START_TEST(test_v1_create) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;

        fake_v1_root(NULL);
        r = open_root(1);
        FOREACH_ELEMENT(h, v1_hierarchies)
                ck_assert(cgroup_root_has_controller(r, *h));
        ck_assert(!cgroup_root_has_controller(r, "io"));

        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 1);
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/tonari.slice/web");

                ck_assert_msg(fake_exists(p), "%s missing", p);
        }
        /* a new cpuset gets its parent's CPUs and nodes before anything can be attached */
        assert_fake_file("cpuset/tonari.slice/cpuset.cpus", "0-3\n");
        assert_fake_file("cpuset/tonari.slice/cpuset.mems", "0\n");
        assert_fake_file("cpuset/tonari.slice/web/cpuset.cpus", "0-3\n");
        assert_fake_file("cpuset/tonari.slice/web/cpuset.mems", "0\n");
        /* no cpuset files elsewhere, no subtree_control on v1 */
        ck_assert(!fake_exists("cpu/tonari.slice/web/cpuset.cpus"));
        ck_assert(!fake_exists("cgroup.subtree_control"));

        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 0);
        /* an existing cpuset left empty (an interrupted create) is completed, a set one is kept */
        fake_file("cpuset/tonari.slice/web/cpuset.cpus", "\n");
        fake_file("cpuset/tonari.slice/web/cpuset.mems", "0\n");
        fake_file("cpuset/tonari.slice/cpuset.cpus", "1\n");
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 0);
        assert_fake_file("cpuset/tonari.slice/cpuset.cpus", "1\n");
        assert_fake_file("cpuset/tonari.slice/web/cpuset.cpus", "1\n");

        /* a half-created one (missing in some hierarchies) is found and completed */
        fake_rmdir("memory/tonari.slice/web");
        ck_assert_int_eq(cgroup_exists(r, "tonari.slice/web"), 1);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 1);
        ck_assert(fake_exists("memory/tonari.slice/web"));
        fake_cleanup();
}
END_TEST

START_TEST(test_v1_create_rollback) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;

        /* the cpuset root has no memory nodes to give: the new directories are removed again */
        fake_v1_root(NULL);
        fake_unlink("cpuset/cpuset.mems");
        r = open_root(1);
        ck_assert_int_eq(cgroup_create(r, "a/b"), -ENOENT);
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/a");

                ck_assert_msg(!fake_exists(p), "%s left behind", p);
        }
        fake_cleanup();
}
END_TEST

/* cgroup.procs in h/path made a directory: a write there fails as a refused move would. */
static void fake_refuse_procs(const char *h, const char *path) {
        _cleanup_free_ char *f = strjoin(h, "/", path, "/cgroup.procs"), *p = fake_path(f);

        (void) unlink(p);
        ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void fake_accept_procs(const char *h, const char *path) {
        _cleanup_free_ char *f = strjoin(h, "/", path, "/cgroup.procs"), *p = fake_path(f);

        ck_assert_int_eq(rmdir(p), 0);
        fake_file(f, "");
}

/* A name that is an interface file in one hierarchy: refused, and nothing is left in the others. */
START_TEST(test_v1_create_not_a_directory) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;

        fake_v1_root(NULL);
        r = open_root(1);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 1);
        fake_v1_cgroup("tonari.slice");
        fake_file("cpu/tonari.slice/cpu.shares", "1024\n");
        fake_file("memory/tonari.slice/memory.stat", "cache 0\n");

        /* the first hierarchy has the file */
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/cpu.shares"), -ENOTDIR);
        /* a later one has it: the four directories made before are removed again */
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/memory.stat"), -ENOTDIR);
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *a = strjoin(*h, "/tonari.slice/cpu.shares"),
                                    *b = strjoin(*h, "/tonari.slice/memory.stat");
                struct stat st;
                _cleanup_free_ char *pa = fake_path(a), *pb = fake_path(b);

                ck_assert_msg(stat(pa, &st) < 0 || S_ISREG(st.st_mode), "%s left behind", a);
                ck_assert_msg(stat(pb, &st) < 0 || S_ISREG(st.st_mode), "%s left behind", b);
        }
        assert_fake_file("cpu/tonari.slice/cpu.shares", "1024\n");
        assert_fake_file("memory/tonari.slice/memory.stat", "cache 0\n");
        ck_assert_int_eq(cgroup_exists(r, "tonari.slice/memory.stat"), -ENOTDIR);
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice/memory.stat"), -ENOTDIR);
        ck_assert_int_eq(cgroup_attach(r, "tonari.slice/memory.stat", 4321), -ENOENT); /* none in cpu */
        assert_fake_file("memory/tonari.slice/memory.stat", "cache 0\n");
        fake_cleanup();
}
END_TEST

/* Each v1 hierarchy is a move of its own: one the kernel refuses puts back the ones before. */
START_TEST(test_v1_attach_all_or_nothing) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        size_t failed = 42;

        fake_v1_root(NULL);
        r = open_root(1);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 1);
        ck_assert_int_eq(cgroup_create(r, "src"), 1);
        fake_v1_cgroup("tonari.slice/web");
        fake_v1_cgroup("src");
        fake_proc_cgroup(4321, 1, "/src");
        fake_proc_cgroup(4322, 1, "/src");

        /* refused in memory, the fifth hierarchy: back to src in the four before, untouched after */
        fake_refuse_procs("memory", "tonari.slice/web");
        ck_assert_int_eq(cgroup_attach_many(r, "tonari.slice/web", (const pid_t[]) { 4321 }, 1, &failed), -EISDIR);
        ck_assert_uint_eq(failed, 0);
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/src/cgroup.procs"),
                                    *w = strjoin(*h, "/tonari.slice/web/cgroup.procs");
                bool moved = !STR_IN_SET(*h, "memory", "pids");

                assert_fake_file(p, moved ? "4321\n" : "");
                fake_file(p, "");
                if (!streq(*h, "memory"))
                        fake_file(w, "");
        }

        /* two processes, the second refused: both back */
        failed = 42;
        ck_assert_int_eq(cgroup_attach_many(r, "tonari.slice/web", (const pid_t[]) { 4321, 4322 }, 2, &failed),
                         -EISDIR);
        ck_assert_uint_eq(failed, 0); /* the first one already fails in memory */
        fake_accept_procs("memory", "tonari.slice/web");
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/src/cgroup.procs"),
                                    *w = strjoin(*h, "/tonari.slice/web/cgroup.procs");

                fake_file(p, "");
                fake_file(w, "");
        }

        /* the second process is gone before anything moved: nothing moves */
        ck_assert_int_eq(cgroup_attach_many(r, "tonari.slice/web", (const pid_t[]) { 4321, 999 }, 2, &failed),
                         -ESRCH);
        ck_assert_uint_eq(failed, 1);
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/tonari.slice/web/cgroup.procs");

                assert_fake_file(p, "");
        }

        /* missing in one hierarchy: refused before anything moves */
        fake_strip("pids/tonari.slice/web");
        fake_rmdir("pids/tonari.slice/web");
        ck_assert_int_eq(cgroup_attach(r, "tonari.slice/web", 4321), -ENOENT);
        assert_fake_file("cpu/tonari.slice/web/cgroup.procs", "");
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 1);
        fake_v1_cgroup("tonari.slice/web");

        ck_assert_int_eq(cgroup_attach_many(r, "tonari.slice/web", (const pid_t[]) { 4321, 4322 }, 2, NULL), 0);
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/tonari.slice/web/cgroup.procs"),
                                    *q = strjoin(*h, "/src/cgroup.procs");

                assert_fake_file(p, "4322\n"); /* the last write: the fake tree keeps one */
                assert_fake_file(q, "");
        }
        fake_cleanup();
}
END_TEST

/* A removal the kernel refuses in one hierarchy makes the others again, with their settings. */
START_TEST(test_v1_remove_rollback) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_free_ char *fifo = NULL;
        _cleanup_(cgroup_settings_done) CGroupSettings s = CGROUP_SETTINGS_INIT;

        fake_v1_root(NULL);
        r = open_root(1);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 1);
        fake_v1_cgroup("tonari.slice/web");
        s.cpu_weight = 200;
        s.cpu_quota_per_sec_usec = 300000;
        s.memory_max = 64 << 20;
        ck_assert_int_eq(cgroup_apply(r, "tonari.slice/web", &s, _CGROUP_MASK_ALL, NULL), 0);

        /* rmdir works in cpu, cpuacct and cpuset, not in blkio (something that is neither an
         * interface file nor a child cgroup keeps the fake directory, as a process that came
         * after the check would keep the kernel's) */
        fifo = fake_path("blkio/tonari.slice/web/busy");
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice/web"), -ENOTEMPTY);
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/tonari.slice/web");

                ck_assert_msg(fake_exists(p), "%s not made again", p);
        }
        /* (the quota needs the files the kernel gives a new cgroup: test-cgroup-live) */
        assert_fake_file("cpu/tonari.slice/web/cpu.shares", "2048\n");
        assert_fake_file("cpuset/tonari.slice/web/cpuset.cpus", "0-3\n");
        assert_fake_file("cpuset/tonari.slice/web/cpuset.mems", "0\n");
        assert_fake_file("memory/tonari.slice/web/memory.limit_in_bytes", "67108864\n");
        fake_cleanup();
}
END_TEST

static CGroupSettings v1_settings(void) {
        CGroupSettings s = CGROUP_SETTINGS_INIT;

        s.cpu_weight = 200;
        s.cpu_quota_per_sec_usec = 200000;
        s.io_limits = new0(CGroupIODeviceLimit, 1);
        s.io_limits[0] = (CGroupIODeviceLimit) {
                .path = strdup("/dev/vda"),
                .devnum = makedev(254, 0),
                .limit = { CGROUP_LIMIT_MAX, 5000000, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX },
        };
        s.n_io_limits = 1;
        s.memory_max = 256 << 20;
        ck_assert_int_eq(parse_index_list("0", 8191, &s.allowed_cpus, &s.allowed_cpus_size), 0);
        ck_assert_int_eq(parse_index_list("0", 1023, &s.allowed_mems, &s.allowed_mems_size), 0);
        return s;
}

START_TEST(test_v1_apply) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_(cgroup_settings_done) CGroupSettings s = v1_settings(), back = CGROUP_SETTINGS_INIT;
        _cleanup_free_ char *msg = NULL;
        const uint8_t cpu0 = 0x01;

        fake_v1_root(NULL);
        r = open_root(1);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 1);
        fake_v1_cgroup("tonari.slice/web");

        /* What v1 cannot do, refused before anything is written. */
        s.io_weight = 300;
        ck_assert_int_eq(cgroup_apply(r, "tonari.slice/web", &s, _CGROUP_MASK_ALL, &msg), -EOPNOTSUPP);
        ck_assert_str_eq(msg, "IOWeight= (no blkio.weight: the device's scheduler has no weights)");
        msg = mfree(msg);
        s.io_weight = CGROUP_WEIGHT_UNSET;
        s.memory_high = 128 << 20;
        ck_assert_int_eq(cgroup_apply(r, "tonari.slice/web", &s, _CGROUP_MASK_ALL, &msg), -EOPNOTSUPP);
        ck_assert_str_eq(msg, "MemoryHigh= (cgroup v1 has no memory.high)");
        msg = mfree(msg);
        assert_fake_file("cpu/tonari.slice/web/cpu.shares", "1024\n");
        assert_fake_file("memory/tonari.slice/web/memory.limit_in_bytes", "9223372036854771712\n");
        s.memory_high = CGROUP_LIMIT_MAX; /* "no limit" is what v1 has anyway */

        ck_assert_int_eq(cgroup_apply(r, "tonari.slice/web", &s, _CGROUP_MASK_ALL, &msg), 0);
        ck_assert_ptr_null(msg);
        assert_fake_file("cpu/tonari.slice/web/cpu.shares", "2048\n");
        assert_fake_file("cpu/tonari.slice/web/cpu.cfs_period_us", "100000\n");
        assert_fake_file("cpu/tonari.slice/web/cpu.cfs_quota_us", "20000\n");
        assert_fake_file("blkio/tonari.slice/web/blkio.throttle.write_bps_device", "254:0 5000000\n");
        assert_fake_file("blkio/tonari.slice/web/blkio.throttle.read_bps_device", "");
        assert_fake_file("memory/tonari.slice/web/memory.limit_in_bytes", "268435456\n");
        assert_fake_file("cpuset/tonari.slice/web/cpuset.cpus", "0\n");
        assert_fake_file("cpuset/tonari.slice/web/cpuset.mems", "0\n");
        ck_assert(!fake_exists("memory/tonari.slice/web/memory.high"));
        ck_assert(!fake_exists("blkio/tonari.slice/web/blkio.weight"));

        ck_assert_int_eq(cgroup_read_settings(r, "tonari.slice/web", &back), 0);
        ck_assert_uint_eq(back.cpu_weight, 200);
        ck_assert_uint_eq(back.cpu_quota_per_sec_usec, 200000);
        ck_assert_uint_eq(back.cpu_quota_period_usec, USEC_INFINITY);
        ck_assert_uint_eq(back.io_weight, CGROUP_WEIGHT_UNSET);
        ck_assert_uint_eq(back.n_io_limits, 1);
        ck_assert_str_eq(back.io_limits[0].path, "/dev/block/254:0");
        ck_assert_mem_eq(back.io_limits[0].limit, s.io_limits[0].limit, sizeof(s.io_limits[0].limit));
        ck_assert_uint_eq(back.memory_max, 256 << 20);
        ck_assert_uint_eq(back.memory_high, CGROUP_LIMIT_MAX);
        ck_assert_uint_eq(back.allowed_cpus_size, 1);
        ck_assert_mem_eq(back.allowed_cpus, &cpu0, 1);
        /* v1 cannot tell node 0 from "the parent's" (also 0): read as not restricted */
        ck_assert_ptr_null(back.allowed_mems);
        cgroup_settings_done(&back);

        /* with weights (CFQ/BFQ): blkio.weight */
        fake_file("blkio/tonari.slice/web/blkio.weight", "500\n");
        s.io_weight = 150;
        ck_assert_int_eq(cgroup_apply(r, "tonari.slice/web", &s, CGROUP_MASK_IO_WEIGHT, NULL), 0);
        assert_fake_file("blkio/tonari.slice/web/blkio.weight", "750\n");
        ck_assert_int_eq(cgroup_read_settings(r, "tonari.slice/web", &back), 0);
        ck_assert_uint_eq(back.io_weight, 150);
        cgroup_settings_done(&back);

        /* Back to the defaults; the kernel's own texts for them read back as unset. */
        cgroup_settings_done(&s);
        ck_assert_int_eq(cgroup_apply(r, "tonari.slice/web", &s, _CGROUP_MASK_ALL, NULL), 0);
        assert_fake_file("cpu/tonari.slice/web/cpu.shares", "1024\n");
        assert_fake_file("cpu/tonari.slice/web/cpu.cfs_quota_us", "-1\n");
        assert_fake_file("cpu/tonari.slice/web/cpu.cfs_period_us", "100000\n");
        assert_fake_file("blkio/tonari.slice/web/blkio.weight", "500\n");
        /* 0 removes a limit */
        assert_fake_file("blkio/tonari.slice/web/blkio.throttle.write_bps_device", "254:0 0\n");
        assert_fake_file("memory/tonari.slice/web/memory.limit_in_bytes", "-1\n");
        /* v1 has no "inherit": the parent's */
        assert_fake_file("cpuset/tonari.slice/web/cpuset.cpus", "0-3\n");
        assert_fake_file("cpuset/tonari.slice/web/cpuset.mems", "0\n");

        fake_file("blkio/tonari.slice/web/blkio.throttle.write_bps_device", "");
        fake_file("memory/tonari.slice/web/memory.limit_in_bytes", "9223372036854771712\n");
        ck_assert_int_eq(cgroup_read_settings(r, "tonari.slice/web", &back), 0);
        ck_assert_uint_eq(back.cpu_weight, CGROUP_WEIGHT_UNSET);
        ck_assert_uint_eq(back.cpu_quota_per_sec_usec, USEC_INFINITY);
        ck_assert_uint_eq(back.cpu_quota_period_usec, USEC_INFINITY);
        ck_assert_uint_eq(back.io_weight, CGROUP_WEIGHT_UNSET);
        ck_assert_uint_eq(back.n_io_limits, 0);
        ck_assert_uint_eq(back.memory_max, CGROUP_LIMIT_MAX);
        ck_assert_ptr_null(back.allowed_cpus);
        ck_assert_ptr_null(back.allowed_mems);
        cgroup_settings_done(&back);
        fake_cleanup();
}
END_TEST

START_TEST(test_v1_apply_cpu_quota) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_(cgroup_settings_done) CGroupSettings back = CGROUP_SETTINGS_INIT;
        CGroupSettings s = CGROUP_SETTINGS_INIT;
        static const struct {
                usec_t quota_per_sec, period;
                const char *cfs_quota, *cfs_period;
        } steps[] = {
                { 200000, USEC_INFINITY, "20000\n", "100000\n" },
                { 200000, 50000, "10000\n", "50000\n" },       /* same ratio, other period */
                { 600000, 200000, "120000\n", "200000\n" },    /* both change */
                { 2 * USEC_PER_SEC, 200000, "400000\n", "200000\n" }, /* two CPUs: quota > period */
                { USEC_INFINITY, 1000000, "-1\n", "1000000\n" },
                { 50000, 1000, "1000\n", "1000\n" },           /* below the kernel's 1 ms: 1 ms */
                { USEC_INFINITY, USEC_INFINITY, "-1\n", "100000\n" },
        };

        fake_v1_root(NULL);
        r = open_root(1);
        ck_assert_int_eq(cgroup_create(r, "a"), 1);
        fake_v1_cgroup("a");

        FOREACH_ELEMENT(st, steps) {
                s.cpu_quota_per_sec_usec = st->quota_per_sec;
                s.cpu_quota_period_usec = st->period;
                ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_CPU_QUOTA, NULL), 0);
                assert_fake_file("cpu/a/cpu.cfs_quota_us", st->cfs_quota);
                assert_fake_file("cpu/a/cpu.cfs_period_us", st->cfs_period);
        }

        /* read back: the v1 pair through the same conversion as cpu.max */
        fake_file("cpu/a/cpu.cfs_quota_us", "150000\n");
        fake_file("cpu/a/cpu.cfs_period_us", "50000\n");
        ck_assert_int_eq(cgroup_read_settings(r, "a", &back), 0);
        ck_assert_uint_eq(back.cpu_quota_per_sec_usec, 3 * USEC_PER_SEC);
        ck_assert_uint_eq(back.cpu_quota_period_usec, 50000);
        cgroup_settings_done(&back);
        fake_file("cpu/a/cpu.cfs_quota_us", "-2\n");
        ck_assert_int_eq(cgroup_read_settings(r, "a", &back), -EINVAL);
        fake_file("cpu/a/cpu.cfs_quota_us", "500\n"); /* below 1 ms: not the kernel's */
        ck_assert_int_eq(cgroup_read_settings(r, "a", &back), -EINVAL);
        fake_file("cpu/a/cpu.cfs_quota_us", "-1\n");
        fake_file("cpu/a/cpu.cfs_period_us", "abc\n");
        ck_assert_int_eq(cgroup_read_settings(r, "a", &back), -EINVAL);
        /* and apply needs the current values to choose the order */
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_CPU_QUOTA, NULL), -EINVAL);
        fake_cleanup();
}
END_TEST

START_TEST(test_v1_apply_io_limits) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_(cgroup_settings_done) CGroupSettings back = CGROUP_SETTINGS_INIT;
        CGroupIODeviceLimit l[2] = {
                { .devnum = makedev(8, 0), .limit = { 100, CGROUP_LIMIT_MAX, 5, CGROUP_LIMIT_MAX } },
                { .devnum = makedev(8, 16), .limit = { CGROUP_LIMIT_MAX, 200, CGROUP_LIMIT_MAX, 7 } },
        };
        CGroupSettings s = { .io_limits = l, .n_io_limits = 2 };
        _cleanup_free_ char *msg = NULL;

        fake_v1_root(NULL);
        r = open_root(1);
        ck_assert_int_eq(cgroup_create(r, "a"), 1);
        fake_v1_cgroup("a");

        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, NULL), 0);
        assert_fake_file("blkio/a/blkio.throttle.read_bps_device", "8:0 100\n");
        assert_fake_file("blkio/a/blkio.throttle.write_bps_device", "8:16 200\n");
        assert_fake_file("blkio/a/blkio.throttle.read_iops_device", "8:0 5\n");
        assert_fake_file("blkio/a/blkio.throttle.write_iops_device", "8:16 7\n");

        /* what the kernel then lists, read back as one entry per device */
        fake_file("blkio/a/blkio.throttle.read_bps_device", "8:0 100\n");
        fake_file("blkio/a/blkio.throttle.write_bps_device", "8:16 200\n");
        fake_file("blkio/a/blkio.throttle.read_iops_device", "8:0 5\n");
        fake_file("blkio/a/blkio.throttle.write_iops_device", "8:16 7\n");
        ck_assert_int_eq(cgroup_read_settings(r, "a", &back), 0);
        ck_assert_uint_eq(back.n_io_limits, 2);
        for (size_t i = 0; i < 2; i++) {
                CGroupIODeviceLimit *e = cgroup_settings_find_io_limit(&back, l[i].devnum);

                ck_assert_ptr_nonnull(e);
                ck_assert_mem_eq(e->limit, l[i].limit, sizeof(l[i].limit));
        }
        cgroup_settings_done(&back);

        /* 8:0 loses its read limits: "0" for each type it had */
        s.io_limits = l + 1;
        s.n_io_limits = 1;
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, NULL), 0);
        assert_fake_file("blkio/a/blkio.throttle.read_bps_device", "8:0 0\n");
        assert_fake_file("blkio/a/blkio.throttle.read_iops_device", "8:0 0\n");
        assert_fake_file("blkio/a/blkio.throttle.write_bps_device", "8:16 200\n");
        assert_fake_file("blkio/a/blkio.throttle.write_iops_device", "8:16 7\n");
        /* which the kernel shows as no entry */
        fake_file("blkio/a/blkio.throttle.read_bps_device", "");
        fake_file("blkio/a/blkio.throttle.read_iops_device", "");

        /* a kernel without throttling */
        fake_unlink("blkio/a/blkio.throttle.write_iops_device");
        ck_assert_int_eq(cgroup_apply(r, "a", &s, CGROUP_MASK_IO_LIMITS, &msg), -EOPNOTSUPP);
        ck_assert_str_eq(msg, "IOWriteBandwidthMax= (no blkio.throttle.write_iops_device: the kernel has no "
                              "block I/O throttling)");
        fake_cleanup();
}
END_TEST

START_TEST(test_v1_missing_hierarchy) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_(cgroup_settings_done) CGroupSettings back = CGROUP_SETTINGS_INIT;
        CGroupSettings s = CGROUP_SETTINGS_INIT;
        _cleanup_free_ char *msg = NULL;
        CGroupUsage u;

        fake_v1_root("memory");
        r = open_root(1);
        ck_assert(!cgroup_root_has_controller(r, "memory"));
        ck_assert_int_eq(cgroup_create(r, "a"), 1);
        ck_assert(!fake_exists("memory"));
        fake_v1_cgroup("a");

        s.memory_max = 1 << 30;
        ck_assert_int_eq(cgroup_apply(r, "a", &s, _CGROUP_MASK_ALL, &msg), -EOPNOTSUPP);
        ck_assert_str_eq(msg, "MemoryMax= (no memory controller)");
        s.memory_max = CGROUP_LIMIT_MAX;
        ck_assert_int_eq(cgroup_apply(r, "a", &s, _CGROUP_MASK_ALL, NULL), 0);
        ck_assert_int_eq(cgroup_read_settings(r, "a", &back), 0);
        ck_assert_uint_eq(back.memory_max, CGROUP_LIMIT_MAX);
        ck_assert_int_eq(cgroup_read_usage(r, "a", &u), 0);
        ck_assert_uint_eq(u.memory_current, UINT64_MAX);
        ck_assert_uint_eq(u.cpu_usage_usec, 0);
        fake_cleanup();
}
END_TEST

START_TEST(test_v1_memory_unlimited) {
        static const struct {
                const char *text;
                uint64_t expected;
        } cases[] = {
                { "9223372036854771712\n", CGROUP_LIMIT_MAX }, /* PAGE_COUNTER_MAX pages, 4 KiB pages */
                { "9223372036854775807\n", CGROUP_LIMIT_MAX },
                { "4611686018427387904\n", CGROUP_LIMIT_MAX }, /* 2^62 */
                { "4611686018427387903\n", UINT64_C(4611686018427387903) },
                { "268435456\n", 268435456 },
                { "0\n", 0 },
        };
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        CGroupSettings back;

        fake_v1_root(NULL);
        r = open_root(1);
        ck_assert_int_eq(cgroup_create(r, "a"), 1);
        fake_v1_cgroup("a");
        FOREACH_ELEMENT(c, cases) {
                fake_file("memory/a/memory.limit_in_bytes", c->text);
                ck_assert_int_eq(cgroup_read_settings(r, "a", &back), 0);
                ck_assert_uint_eq(back.memory_max, c->expected);
                cgroup_settings_done(&back);
        }
        fake_file("memory/a/memory.limit_in_bytes", "-1\n");
        ck_assert_int_eq(cgroup_read_settings(r, "a", &back), -EINVAL);
        fake_cleanup();
}
END_TEST

START_TEST(test_v1_usage_pids_attach_remove) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_strv_free_ char **children = NULL;
        pid_t *pids = NULL;
        size_t n;
        CGroupUsage u;

        fake_v1_root(NULL);
        r = open_root(1);
        ck_assert_int_eq(cgroup_create(r, "tonari.slice/web"), 1);
        fake_v1_cgroup("tonari.slice/web");

        fake_proc_cgroup(4321, 1, "/");
        ck_assert_int_eq(cgroup_attach(r, "tonari.slice/web", 4321), 0);
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/tonari.slice/web/cgroup.procs");

                assert_fake_file(p, "4321\n");
        }

        fake_file("cpuacct/tonari.slice/web/cpuacct.usage", "5000999\n"); /* ns */
        fake_file("blkio/tonari.slice/web/blkio.throttle.io_service_bytes_recursive",
                  "254:0 Read 4096\n254:0 Write 8192\n254:0 Sync 0\n254:0 Async 12288\n254:0 Discard 0\n"
                  "254:0 Total 12288\nTotal 12288\n");
        fake_file("memory/tonari.slice/web/memory.usage_in_bytes", "1056768\n");
        fake_file("pids/tonari.slice/web/pids.current", "2\n");
        ck_assert_int_eq(cgroup_read_usage(r, "tonari.slice/web", &u), 0);
        ck_assert_uint_eq(u.cpu_usage_usec, 5000);
        ck_assert_uint_eq(u.io_read_bytes, 4096);
        ck_assert_uint_eq(u.io_write_bytes, 8192);
        ck_assert_uint_eq(u.memory_current, 1056768);
        ck_assert_uint_eq(u.n_tasks, 2);

        /* the processes are the cpu hierarchy's */
        fake_file("cpu/tonari.slice/web/cgroup.procs", "7\n8\n");
        fake_file("memory/tonari.slice/web/cgroup.procs", "9\n");
        ck_assert_int_eq(cgroup_get_pids(r, "tonari.slice/web", &pids, &n), 0);
        ck_assert_uint_eq(n, 2);
        ck_assert_int_eq(pids[0], 7);
        ck_assert_int_eq(pids[1], 8);
        free(pids);

        ck_assert_int_eq(cgroup_list_children(r, "tonari.slice", &children), 0);
        ck_assert_uint_eq(strv_length(children), 1);
        ck_assert_str_eq(children[0], "web");

        /* a process in any hierarchy keeps it: nothing is removed anywhere */
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/tonari.slice/web/cgroup.procs");

                fake_file(p, "");
        }
        fake_file("pids/tonari.slice/web/cgroup.procs", "9\n");
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice/web"), -EBUSY);
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/tonari.slice/web");

                ck_assert(fake_exists(p));
        }
        fake_file("pids/tonari.slice/web/cgroup.procs", "");

        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/tonari.slice/web");

                fake_strip(p);
        }
        /* gone already in one hierarchy: fine */
        fake_rmdir("pids/tonari.slice/web");
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice/web"), 1);
        ck_assert_int_eq(cgroup_exists(r, "tonari.slice/web"), 0);
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/tonari.slice/web");

                ck_assert(!fake_exists(p));
        }
        ck_assert_int_eq(cgroup_remove(r, "tonari.slice/web"), 0);
        fake_cleanup();
}
END_TEST

START_TEST(test_v1_pids_without_cpu) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        pid_t *pids = NULL;
        size_t n;
        CGroupUsage u;

        /* no cpu hierarchy: the first one there is (cpuacct); no pids hierarchy: count them */
        fake_v1_root("cpu");
        fake_unlink("pids/cgroup.procs");
        r = open_root(1);
        ck_assert(!cgroup_root_has_controller(r, "pids"));
        ck_assert_int_eq(cgroup_create(r, "a"), 1);
        fake_v1_cgroup("a");
        fake_file("cpuacct/a/cgroup.procs", "5\n6\n");
        fake_file("cpuset/a/cgroup.procs", "5\n");
        ck_assert_int_eq(cgroup_get_pids(r, "a", &pids, &n), 0);
        ck_assert_uint_eq(n, 2);
        free(pids);
        ck_assert_int_eq(cgroup_read_usage(r, "a", &u), 0);
        ck_assert_uint_eq(u.n_tasks, 2);
        fake_cleanup();
}
END_TEST

START_TEST(test_v1_comounted) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_free_ char *cpu = NULL, *cpuacct = NULL;
        CGroupUsage u;

        /* Debian's "cpu,cpuacct": one hierarchy behind two symlinks */
        fake_root_new();
        fake_file("cpu,cpuacct/cgroup.procs", "1\n");
        fake_file("memory/cgroup.procs", "1\n");
        cpu = fake_path("cpu");
        cpuacct = fake_path("cpuacct");
        ck_assert_int_eq(symlink("cpu,cpuacct", cpu), 0);
        ck_assert_int_eq(symlink("cpu,cpuacct", cpuacct), 0);
        r = open_root(1);
        ck_assert(cgroup_root_has_controller(r, "cpu"));
        ck_assert(cgroup_root_has_controller(r, "cpuacct"));
        ck_assert(!cgroup_root_has_controller(r, "cpuset"));

        ck_assert_int_eq(cgroup_create(r, "a"), 1);
        ck_assert(fake_exists("cpu,cpuacct/a"));
        fake_v1_cgroup("a");
        fake_file("cpuacct/a/cpuacct.usage", "2000\n");
        fake_file("proc/77/cgroup", "3:memory:/\n2:cpu,cpuacct:/\n");
        ck_assert_int_eq(cgroup_attach(r, "a", 77), 0);
        assert_fake_file("cpu,cpuacct/a/cgroup.procs", "77\n");
        assert_fake_file("memory/a/cgroup.procs", "77\n");
        ck_assert_int_eq(cgroup_read_usage(r, "a", &u), 0);
        ck_assert_uint_eq(u.cpu_usage_usec, 2);
        ck_assert_uint_eq(u.n_tasks, 1); /* no pids hierarchy: counted */

        fake_file("cpu,cpuacct/a/cgroup.procs", "");
        fake_file("memory/a/cgroup.procs", "");
        fake_strip("cpu,cpuacct/a");
        fake_strip("memory/a");
        ck_assert_int_eq(cgroup_remove(r, "a"), 1);
        ck_assert(!fake_exists("cpu,cpuacct/a"));
        ck_assert(!fake_exists("memory/a"));
        fake_cleanup();
}
END_TEST

TEST_SUITE("cgroup", test_root_new, test_path_validation, test_v1_controller_validation, test_write_file,
           test_v2_create, test_v2_create_partial_controllers, test_v2_apply, test_v2_apply_io_limits,
           test_v2_apply_missing_controllers, test_apply_invalid, test_v2_read_settings_garbage,
           test_v2_usage, test_v2_pids_attach_children_remove, test_v1_create, test_v1_create_rollback,
           test_v1_apply, test_v1_apply_cpu_quota, test_v1_apply_io_limits, test_v1_missing_hierarchy,
           test_v1_memory_unlimited, test_v1_usage_pids_attach_remove, test_v1_pids_without_cpu,
           test_v1_comounted, test_v2_create_not_a_directory, test_v2_attach_all_or_nothing,
           test_v1_create_not_a_directory, test_v1_attach_all_or_nothing, test_v1_remove_rollback)
