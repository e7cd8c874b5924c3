/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Slices with the cgroupfs backend on fake cgroup trees (v1 and v2): names that are cgroup
 * interface files, and what adoption after a restart makes of what it finds. The fake tree plays
 * the kernel as in test-cgroup.c: it has the interface files a cgroup would have.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "cgroup.h"
#include "fd-util.h"
#include "fake-tree.h"
#include "fileio.h"
#include "slice-util.h"
#include "slice-internal.h"
#include "strv.h"

static const char *const v1_hierarchies[] = { "cpu", "cpuacct", "cpuset", "blkio", "memory", "pids" };

static char *fake_path(const char *relpath) {
        char *p = strjoin(fake_root, "/", relpath);

        ck_assert_ptr_nonnull(p);
        return p;
}

static bool fake_is_dir(const char *relpath) {
        _cleanup_free_ char *p = fake_path(relpath);
        struct stat st;

        return stat(p, &st) >= 0 && S_ISDIR(st.st_mode);
}

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

/* Files of a v1 cgroup (or of tonari.slice, whose files are the names the tests collide with). */
static void fake_v1_cgroup(const char *path) {
        FOREACH_ELEMENT(h, v1_hierarchies) {
                _cleanup_free_ char *p = strjoin(*h, "/", path, "/cgroup.procs");

                fake_file(p, "");
        }
#define F(h, name, content)                                                                            \
        do {                                                                                           \
                _cleanup_free_ char *_p = strjoin(h, "/", path, "/", name);                            \
                fake_file(_p, content);                                                                \
        } while (false)
        F("cpu", "cpu.shares", "1024\n");
        F("cpu", "cpu.cfs_period_us", "100000\n");
        F("cpu", "cpu.cfs_quota_us", "-1\n");
        F("cpuacct", "cpuacct.usage", "0\n");
        F("cpuset", "cpuset.cpus", "0-1\n");
        F("cpuset", "cpuset.mems", "0\n");
        F("memory", "memory.limit_in_bytes", "9223372036854771712\n");
        F("memory", "memory.stat", "cache 0\n");
        F("pids", "pids.max", "max\n");
#undef F
}

static void fake_v1_tree(void) {
        fake_root_new();
        fake_v1_cgroup("");
        fake_v1_cgroup(SLICE_CGROUPFS_PARENT);
}

static void fake_v2_tree(void) {
        fake_root_new();
        fake_file("cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_file("cgroup.subtree_control", "cpuset cpu io memory pids\n");
        fake_file("cgroup.procs", "");
        fake_file(SLICE_CGROUPFS_PARENT "/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_file(SLICE_CGROUPFS_PARENT "/cgroup.subtree_control", "cpuset cpu io memory pids\n");
        fake_file(SLICE_CGROUPFS_PARENT "/cgroup.procs", "");
        fake_file(SLICE_CGROUPFS_PARENT "/memory.stat", "anon 0\n");
        fake_file(SLICE_CGROUPFS_PARENT "/cpu.max", "max 100000\n");
        fake_file(SLICE_CGROUPFS_PARENT "/pids.max", "max\n");
}

static SliceManager *start(void) {
        SliceManager *m = NULL;

        ck_assert_int_eq(slice_manager_new(NULL, SLICE_BACKEND_CGROUPFS, false, false, fake_root, &m), 0);
        return m;
}

static void done_ok(Slice *s, int error, const char *message, void *userdata) {
        int *result = userdata;

        *result = error;
        if (error >= 0)
                s->state = SLICE_ACTIVE;
}

/* CreateSlice as the bus layer does it, with the cgroupfs backend (synchronous). */
static int create(SliceManager *m, const char *name, Slice **ret) {
        int result = 1;
        Slice *s;

        ck_assert_int_eq(slice_new(m, name, &s), 0);
        ck_assert_int_eq(m->backend->create(s, 0, done_ok, &result), 0);
        ck_assert_int_ne(result, 1);
        if (result < 0) {
                slice_free(s);
                return result;
        }
        ck_assert_int_eq(slice_read_cgroup_id(s), 0);
        *ret = s;
        return 0;
}

static int remove_slice(Slice *s) {
        int result = 1;

        ck_assert_int_eq(s->manager->backend->remove(s, done_ok, &result), 0);
        if (result < 0)
                return result;
        slice_free(s);
        return 0;
}

static const char *const reserved_names[] = { "cpu.shares", "memory.stat", "pids.max", "cpuacct.usage",
                                              "memory.limit_in_bytes" };

static void check_reserved_names(int version) {
        _cleanup_(slice_manager_freep) SliceManager *m = start();

        FOREACH_ELEMENT(n, reserved_names) {
                _cleanup_free_ char *dir = strjoin(SLICE_CGROUPFS_PARENT "/_", *n);
                Slice *s, *again;
                uint64_t id;

                ck_assert_int_eq(create(m, *n, &s), 0);
                ck_assert_str_eq(s->name, *n);
                ck_assert_str_eq(s->cgroup, dir);
                ck_assert_uint_ne(s->cgroup_id, 0);
                id = s->cgroup_id;
                if (version == 1)
                        FOREACH_ELEMENT(h, v1_hierarchies) {
                                _cleanup_free_ char *p = strjoin(*h, "/", dir);

                                ck_assert_msg(fake_is_dir(p), "%s missing", p);
                        }
                else
                        ck_assert(fake_is_dir(dir));

                /* after a restart: the same slice, under the name it was given */
                m = slice_manager_free(m);
                m = start();
                again = slice_manager_find(m, *n);
                ck_assert_ptr_nonnull(again);
                ck_assert_int_eq(again->state, SLICE_ACTIVE);
                ck_assert_str_eq(again->cgroup, dir);
                ck_assert_uint_eq(again->cgroup_id, id);

                ck_assert_int_eq(remove_slice(again), 0);
                ck_assert_ptr_null(slice_manager_find(m, *n));
                if (version == 1)
                        FOREACH_ELEMENT(h, v1_hierarchies) {
                                _cleanup_free_ char *p = strjoin(*h, "/", dir);

                                ck_assert_msg(!fake_is_dir(p), "%s left behind", p);
                        }
                else
                        ck_assert(!fake_is_dir(dir));
        }
        /* the interface files of the parent are untouched */
        if (version == 1) {
                assert_fake_file("cpu/" SLICE_CGROUPFS_PARENT "/cpu.shares", "1024\n");
                assert_fake_file("memory/" SLICE_CGROUPFS_PARENT "/memory.stat", "cache 0\n");
        } else
                assert_fake_file(SLICE_CGROUPFS_PARENT "/memory.stat", "anon 0\n");
}

START_TEST(test_v1_reserved_names) {
        fake_v1_tree();
        check_reserved_names(1);
}
END_TEST

START_TEST(test_v2_reserved_names) {
        fake_v2_tree();
        check_reserved_names(2);
}
END_TEST

/* "_memory.stat" and "memory.stat" are two slices; a directory of a reserved name is none of ours. */
START_TEST(test_v1_escape_is_one_to_one) {
        _cleanup_(slice_manager_freep) SliceManager *m = NULL;
        Slice *a, *b;

        fake_v1_tree();
        m = start();
        ck_assert_int_eq(create(m, "memory.stat", &a), 0);
        ck_assert_int_eq(create(m, "_memory.stat", &b), 0);
        ck_assert_str_eq(a->cgroup, SLICE_CGROUPFS_PARENT "/_memory.stat");
        ck_assert_str_eq(b->cgroup, SLICE_CGROUPFS_PARENT "/__memory.stat");
        ck_assert_int_eq(create(m, "_web", &a), 0);
        ck_assert_str_eq(a->cgroup, SLICE_CGROUPFS_PARENT "/_web");
        /* left by an older tonarid in a hierarchy where the name was free */
        fake_file("cpu/" SLICE_CGROUPFS_PARENT "/hugetlb.1GB.max/cgroup.procs", "");

        m = slice_manager_free(m);
        m = start();
        ck_assert_uint_eq(slice_manager_count(m), 3);
        ck_assert_str_eq(slice_manager_find(m, "memory.stat")->cgroup, SLICE_CGROUPFS_PARENT "/_memory.stat");
        ck_assert_str_eq(slice_manager_find(m, "_memory.stat")->cgroup, SLICE_CGROUPFS_PARENT "/__memory.stat");
        ck_assert_str_eq(slice_manager_find(m, "_web")->cgroup, SLICE_CGROUPFS_PARENT "/_web");
        ck_assert_ptr_null(slice_manager_find(m, "hugetlb.1GB.max"));
}
END_TEST

/* A slice made again under its name has another cgroup id. */
START_TEST(test_cgroup_id_new_each_time) {
        _cleanup_(slice_manager_freep) SliceManager *m = NULL;
        _cleanup_free_ char *dir = NULL;
        _cleanup_close_ int held = -EBADF;
        Slice *s;
        uint64_t id;

        fake_v2_tree();
        m = start();
        ck_assert_int_eq(create(m, "web", &s), 0);
        id = s->cgroup_id;
        /* A file system may give a freed inode to the next directory at once, which the kernel never
         * does with a cgroup's id while it exists: keep the removed directory's inode allocated by
         * holding it open, so the fake tree cannot hand the same number out again. */
        dir = strjoin(fake_root, "/" SLICE_CGROUPFS_PARENT "/web");
        ck_assert_ptr_nonnull(dir);
        held = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        ck_assert_int_ge(held, 0);
        ck_assert_int_eq(remove_slice(s), 0);
        ck_assert_int_eq(create(m, "web", &s), 0);
        ck_assert_uint_ne(s->cgroup_id, id);
}
END_TEST

/* Adoption never shows a value the API refuses: MemoryMax 0 (what v1 keeps of 1..4095 bytes). */
START_TEST(test_v1_adopt_invalid_memory) {
        _cleanup_(slice_manager_freep) SliceManager *m = NULL;
        Slice *s;

        fake_v1_tree();
        fake_v1_cgroup(SLICE_CGROUPFS_PARENT "/tiny");
        fake_file("memory/" SLICE_CGROUPFS_PARENT "/tiny/memory.limit_in_bytes", "0\n");
        fake_v1_cgroup(SLICE_CGROUPFS_PARENT "/fine");
        fake_file("memory/" SLICE_CGROUPFS_PARENT "/fine/memory.limit_in_bytes", "1048576\n");

        m = start();
        s = slice_manager_find(m, "tiny");
        ck_assert_ptr_nonnull(s);
        ck_assert_int_eq(s->state, SLICE_ACTIVE);
        ck_assert_uint_eq(s->settings.memory_max, m->page_size);
        {
                _cleanup_free_ char *want = NULL;

                ck_assert_int_gt(asprintf(&want, "%" PRIu64 "\n", m->page_size), 0);
                assert_fake_file("memory/" SLICE_CGROUPFS_PARENT "/tiny/memory.limit_in_bytes", want);
        }
        s = slice_manager_find(m, "fine");
        ck_assert_uint_eq(s->settings.memory_max, 1048576);
        assert_fake_file("memory/" SLICE_CGROUPFS_PARENT "/fine/memory.limit_in_bytes", "1048576\n");
}
END_TEST

START_TEST(test_v2_adopt_invalid_memory) {
        _cleanup_(slice_manager_freep) SliceManager *m = NULL;
        Slice *s;

        fake_v2_tree();
        fake_file(SLICE_CGROUPFS_PARENT "/tiny/cgroup.controllers", "cpuset cpu io memory pids\n");
        fake_file(SLICE_CGROUPFS_PARENT "/tiny/cgroup.procs", "");
        fake_file(SLICE_CGROUPFS_PARENT "/tiny/memory.max", "0\n");
        fake_file(SLICE_CGROUPFS_PARENT "/tiny/memory.high", "0\n");

        m = start();
        s = slice_manager_find(m, "tiny");
        ck_assert_ptr_nonnull(s);
        ck_assert_int_eq(s->state, SLICE_ACTIVE);
        ck_assert_uint_eq(s->settings.memory_max, m->page_size);
        ck_assert_uint_eq(s->settings.memory_high, m->page_size);
        ck_assert_int_eq(slice_settings_validate(&s->settings, _CGROUP_MASK_ALL, m->page_size, NULL, 0, NULL, 0, NULL),
                         0);
}
END_TEST

/* A cgroup of the fake v2 tree with its interface files; cpu_max NULL: no cpu.max (threaded root). */
static void fake_v2_cgroup(const char *path, const char *cpu_max) {
#define F(name, content)                                                                               \
        do {                                                                                           \
                _cleanup_free_ char *_p = strjoin(path, "/", name);                                    \
                fake_file(_p, content);                                                                \
        } while (false)
        F("cgroup.procs", "");
        F("cgroup.controllers", "cpu io pids\n");
        if (cpu_max)
                F("cpu.max", cpu_max);
        F("cpu.stat", "usage_usec 1234\n");
        F("pids.current", "2\n");
#undef F
}

/* Servers' request domains in libtonari's layout are read-only slices "<server>:<domain>". */
START_TEST(test_v2_request_domains) {
        _cleanup_(slice_manager_freep) SliceManager *m = NULL;
        Slice *s, *kept;
        CGroupUsage u;

        fake_v2_tree();
        /* Processes move: the domains beside _home; .control and _home are none. */
        fake_v2_cgroup("system.slice/apache2.service/_home", "max 100000\n");
        fake_v2_cgroup("system.slice/apache2.service/.control", "max 100000\n");
        fake_v2_cgroup("system.slice/apache2.service/limited", "50000 100000\n");
        fake_v2_cgroup("system.slice/apache2.service/free", "max 100000\n");
        /* Threads move: below _threads. */
        fake_v2_cgroup("system.slice/web@1.service/_threads/_home", "max 100000\n");
        fake_v2_cgroup("system.slice/web@1.service/_threads/t", "20000 100000\n");
        /* No _home: no server of domains. */
        fake_v2_cgroup("system.slice/other.service/child", "max 100000\n");
        /* tonari's own slices are not walked; a taken name is not shown. */
        fake_v2_cgroup(SLICE_CGROUPFS_PARENT "/s/_home", "max 100000\n");
        fake_v2_cgroup(SLICE_CGROUPFS_PARENT "/s/d", "max 100000\n");
        fake_v2_cgroup("x/_home", "max 100000\n");
        fake_v2_cgroup("x/y", "max 100000\n");
        fake_v2_cgroup(SLICE_CGROUPFS_PARENT "/x:y", "max 100000\n");

        m = start();
        ck_assert_ptr_nonnull(slice_manager_find(m, "x:y"));
        ck_assert_int_eq(slice_manager_scan_domains(m), 0);
        size_t n = 0;
        for (Slice *d = m->domains; d; d = d->next)
                n++;
        ck_assert_uint_eq(n, 3);
        ck_assert_ptr_null(slice_manager_find_domain(m, "apache2.service:_home"));
        ck_assert_ptr_null(slice_manager_find_domain(m, "apache2.service:.control"));
        ck_assert_ptr_null(slice_manager_find_domain(m, "other.service:child"));
        ck_assert_ptr_null(slice_manager_find_domain(m, "s:d"));
        ck_assert_ptr_null(slice_manager_find_domain(m, "x:y"));
        /* Not one of the slices tonari manages. */
        ck_assert_ptr_null(slice_manager_find(m, "apache2.service:limited"));

        s = slice_manager_find_domain(m, "apache2.service:limited");
        ck_assert_ptr_nonnull(s);
        ck_assert(s->request_domain);
        ck_assert_str_eq(s->cgroup, "system.slice/apache2.service/limited");
        ck_assert_str_eq(s->unit, "apache2.service");
        ck_assert_str_eq(s->object_path, "/org/tonari/slice/apache2_2eservice_3alimited");
        ck_assert_uint_eq(s->settings.cpu_quota_per_sec_usec, 500000);
        ck_assert_ptr_eq(slice_manager_find_domain_by_path(m, s->object_path), s);
        ck_assert_int_eq(slice_read_usage(s, &u), 0);
        ck_assert_uint_eq(u.cpu_usage_usec, 1234);
        ck_assert_uint_eq(u.n_tasks, 2);

        s = slice_manager_find_domain(m, "web@1.service:t");
        ck_assert_ptr_nonnull(s);
        ck_assert_str_eq(s->cgroup, "system.slice/web@1.service/_threads/t");
        ck_assert_uint_eq(s->settings.cpu_quota_per_sec_usec, 200000);
        ck_assert_uint_eq(slice_manager_find_domain(m, "apache2.service:free")->settings.cpu_quota_per_sec_usec,
                          USEC_INFINITY);

        /* A second walk keeps the objects of domains that still exist, drops those gone. */
        kept = slice_manager_find_domain(m, "apache2.service:limited");
        fake_file("system.slice/apache2.service/limited/cpu.max", "30000 100000\n");
        _cleanup_free_ char *gone = fake_path("system.slice/web@1.service/_threads/t");
        _cleanup_free_ char *cmd = strjoin("rm -r '", gone, "'");
        ck_assert_int_eq(system(cmd), 0);
        ck_assert_int_eq(slice_manager_scan_domains(m), 0);
        ck_assert_ptr_eq(slice_manager_find_domain(m, "apache2.service:limited"), kept);
        ck_assert_uint_eq(kept->settings.cpu_quota_per_sec_usec, 300000);
        ck_assert_ptr_null(slice_manager_find_domain(m, "web@1.service:t"));
}
END_TEST

TEST_SUITE("slice", test_v1_reserved_names, test_v2_reserved_names, test_v1_escape_is_one_to_one,
           test_cgroup_id_new_each_time, test_v1_adopt_invalid_memory, test_v2_adopt_invalid_memory,
           test_v2_request_domains)
