/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "alloc-util.h"
#include "cgroup.h"
#include "fd-util.h"
#include "fileio.h"
#include "parse-util.h"
#include "path-util.h"
#include "proc-util.h"
#include "string-util.h"
#include "strv.h"

/* The v1 hierarchies tonari uses, in the order they are created, attached and removed. */
static const char *const v1_controllers[] = { "cpu", "cpuacct", "cpuset", "blkio", "memory", "pids" };
/* The v2 controllers tonari enables for its cgroups. */
static const char *const v2_controllers[] = { "cpu", "io", "memory", "pids", "cpuset" };

/* Largest CPU and memory node indexes any kernel accepts (NR_CPUS ≤ 8192, NODES_SHIFT ≤ 10). */
#define CPU_INDEX_MAX 8191U
#define NODE_INDEX_MAX 1023U

/* The v1 memory controller shows "no limit" as PAGE_COUNTER_MAX pages in bytes; every value from
 * 2^62 on is far beyond any real memory and is read as "no limit" as well. */
#define V1_MEMORY_UNLIMITED_MIN (UINT64_C(1) << 62)

struct CGroupRoot {
        char *dir;
        int version;
        /*
         * What the loops over hierarchies walk: v1, the controller directories that exist; v2, one
         * entry "" (the controller argument of a path is ignored there).
         */
        char **hierarchies;
        char **v2_controllers; /* v2: the root's cgroup.controllers */
        char *proc;            /* procfs, for where a process was before a move ("/proc") */
        /*
         * Whether the hierarchies are the kernel's cgroup file systems. Anything else is a fake tree
         * (tests), where interface files are plain files: a write creates a missing one, as the
         * kernel would have created it with the cgroup, and removing a cgroup removes them first,
         * as they go with the cgroup on the kernel's. There, a missing file stays an error.
         */
        bool kernel;
};

CGroupRoot *cgroup_root_free(CGroupRoot *r) {
        if (!r)
                return NULL;
        free(r->dir);
        free(r->proc);
        strv_free(r->hierarchies);
        strv_free(r->v2_controllers);
        free(r);
        return NULL;
}

static int file_exists(const char *dir, const char *name) {
        _cleanup_free_ char *p = path_join(dir, name);

        if (!p)
                return -ENOMEM;
        if (access(p, F_OK) < 0)
                return errno == ENOENT || errno == ENOTDIR ? 0 : negative_errno();
        return 1;
}

/* 1 if the (first) hierarchy is a kernel cgroup or cgroup2 file system. */
static int root_is_kernel_cgroupfs(const CGroupRoot *r) {
        _cleanup_free_ char *h = path_join(r->dir, r->hierarchies[0]);
        struct statfs sfs;

        if (!h)
                return -ENOMEM;
        if (statfs(h, &sfs) < 0)
                return negative_errno();
        return sfs.f_type == (typeof(sfs.f_type)) CGROUP2_SUPER_MAGIC || sfs.f_type == (typeof(sfs.f_type)) CGROUP_SUPER_MAGIC;
}

int cgroup_root_new(const char *dir, CGroupRoot **ret) {
        _cleanup_(cgroup_root_freep) CGroupRoot *r = NULL;
        _cleanup_free_ char *controllers = NULL, *p = NULL;
        struct stat st;
        int k;

        assert_return(dir && path_is_normalized_absolute(dir), -EINVAL);
        assert_return(ret, -EINVAL);

        if (stat(dir, &st) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;

        r = new0(CGroupRoot, 1);
        if (!r)
                return -ENOMEM;
        r->dir = strdup(dir);
        r->proc = strdup("/proc");
        if (!r->dir || !r->proc)
                return -ENOMEM;

        p = path_join(dir, "cgroup.controllers");
        if (!p)
                return -ENOMEM;
        k = read_full_file(p, &controllers, NULL);
        if (k >= 0) {
                r->version = 2;
                k = strv_split(controllers, " \n", &r->v2_controllers);
                if (k < 0)
                        return k;
                k = strv_extend(&r->hierarchies, "");
                if (k < 0)
                        return k;
        } else if (k != -ENOENT)
                return k;
        else {
                r->version = 1;
                FOREACH_ELEMENT(c, v1_controllers) {
                        _cleanup_free_ char *h = path_join(dir, *c);

                        if (!h)
                                return -ENOMEM;
                        /* A hierarchy is a directory with cgroup.procs (the co-mounted
                         * "cpu,cpuacct" of some distributions is reached through its symlinks). */
                        k = file_exists(h, "cgroup.procs");
                        if (k < 0)
                                return k;
                        if (k == 0)
                                continue;
                        k = strv_extend(&r->hierarchies, *c);
                        if (k < 0)
                                return k;
                }
                if (strv_isempty(r->hierarchies))
                        return -ENOMEDIUM;
        }

        k = root_is_kernel_cgroupfs(r);
        if (k < 0)
                return k;
        r->kernel = k;

        *ret = TAKE_PTR(r);
        return 0;
}

int cgroup_root_set_proc(CGroupRoot *r, const char *proc) {
        assert_return(r, -EINVAL);
        assert_return(proc && path_is_normalized_absolute(proc), -EINVAL);

        return free_and_strdup(&r->proc, proc);
}

int cgroup_root_version(const CGroupRoot *r) {
        return r ? r->version : -EINVAL;
}

const char *cgroup_root_dir(const CGroupRoot *r) {
        return r ? r->dir : NULL;
}

bool cgroup_root_has_controller(const CGroupRoot *r, const char *controller) {
        if (!r || !controller)
                return false;
        if (r->version == 2)
                return strv_contains(r->v2_controllers, controller);
        return strv_contains(r->hierarchies, controller);
}

/* The hierarchy whose cgroup.procs and children stand for the cgroup on v1. */
static const char *primary_hierarchy(const CGroupRoot *r) {
        if (r->version == 1 && strv_contains(r->hierarchies, "cpu"))
                return "cpu";
        return r->hierarchies[0];
}

/* "" is the root cgroup; anything else is relative and normalized: "a/b", never "/a", "a/../b",
 * "a//b", "a/", "." or control characters. */
static int cgroup_path_check(const char *path) {
        _cleanup_free_ char *abs = NULL;

        if (!path)
                return -EINVAL;
        if (path[0] == '\0')
                return 0;
        if (path[0] == '/')
                return -EINVAL;
        abs = strjoin("/", path);
        if (!abs)
                return -ENOMEM;
        return path_is_normalized_absolute(abs) ? 0 : -EINVAL;
}

/* <dir>[/<controller>][/<path>][/<file>]; file may be NULL for the cgroup's directory. */
static int cgroup_fs_path(const CGroupRoot *r, const char *controller, const char *path, const char *file,
                          char **ret) {
        bool v1 = r->version == 1;
        char *p;
        int k;

        k = cgroup_path_check(path);
        if (k < 0)
                return k;
        if (file && !filename_is_valid(file))
                return -EINVAL;
        if (v1 && !filename_is_valid(controller))
                return -EINVAL;

        p = strjoin(r->dir, v1 ? "/" : "", v1 ? controller : "", path[0] ? "/" : "", path, file ? "/" : "",
                    strempty(file));
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

int cgroup_read_file(CGroupRoot *r, const char *controller, const char *path, const char *file, char **ret) {
        _cleanup_free_ char *p = NULL;
        int k;

        assert_return(r, -EINVAL);
        assert_return(file, -EINVAL);
        assert_return(ret, -EINVAL);

        k = cgroup_fs_path(r, controller, path, file, &p);
        if (k < 0)
                return k;
        return read_full_file(p, ret, NULL);
}

int cgroup_write_file(CGroupRoot *r, const char *controller, const char *path, const char *file,
                      const char *value) {
        _cleanup_free_ char *p = NULL, *buf = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t len;
        ssize_t n;
        int k;

        assert_return(r, -EINVAL);
        assert_return(file, -EINVAL);
        assert_return(value, -EINVAL);
        /* One value per write: a newline would smuggle a second line into a line-based file. */
        assert_return(!strchr(value, '\n'), -EINVAL);

        k = cgroup_fs_path(r, controller, path, file, &p);
        if (k < 0)
                return k;

        /* With a newline, as echo(1) writes it: every cgroup parser accepts it, and it makes "" a
         * one-byte write: the kernel never sees a write of zero bytes (measured: an empty write
         * returns 0 and leaves cpuset.cpus as it was). */
        buf = strjoin(value, "\n");
        if (!buf)
                return -ENOMEM;
        len = strlen(buf);

        fd = open(p, O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
        if (fd < 0 && errno == ENOENT && !r->kernel) {
                fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
                if (fd < 0)
                        return -ENOENT;
        }
        if (fd < 0)
                return negative_errno();

        /* The kernel parses each write() as one value: never split it. Errors (EINVAL: value
         * refused, ESRCH: no such process, EBUSY, ENOSPC, ...) are the kernel's answer. */
        do
                n = write(fd, buf, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return negative_errno();
        if ((size_t) n != len)
                return -EIO;
        return 0;
}

/* The file's text without surrounding whitespace (the kernel ends every value with a newline). */
static int read_value(CGroupRoot *r, const char *controller, const char *path, const char *file,
                      char **ret) {
        _cleanup_free_ char *t = NULL;
        char *s;
        int k;

        k = cgroup_read_file(r, controller, path, file, &t);
        if (k < 0)
                return k;
        s = strstrip(t);
        memmove(t, s, strlen(s) + 1);
        *ret = TAKE_PTR(t);
        return 0;
}

static int read_u64(CGroupRoot *r, const char *controller, const char *path, const char *file,
                    uint64_t *ret) {
        _cleanup_free_ char *t = NULL;
        int k;

        k = read_value(r, controller, path, file, &t);
        if (k < 0)
                return k;
        return safe_atou64(t, ret) < 0 ? -EINVAL : 0;
}

static int read_i64(CGroupRoot *r, const char *controller, const char *path, const char *file,
                    int64_t *ret) {
        _cleanup_free_ char *t = NULL;
        int k;

        k = read_value(r, controller, path, file, &t);
        if (k < 0)
                return k;
        return safe_atoi64(t, ret) < 0 ? -EINVAL : 0;
}

static int write_u64(CGroupRoot *r, const char *controller, const char *path, const char *file, uint64_t v) {
        char buf[STRLEN("18446744073709551615") + 1];

        (void) snprintf(buf, sizeof(buf), "%" PRIu64, v);
        return cgroup_write_file(r, controller, path, file, buf);
}

static int write_i64(CGroupRoot *r, const char *controller, const char *path, const char *file, int64_t v) {
        char buf[STRLEN("-9223372036854775808") + 1];

        (void) snprintf(buf, sizeof(buf), "%" PRIi64, v);
        return cgroup_write_file(r, controller, path, file, buf);
}

/* The parent of a cgroup path: "a/b" → "a", "a" → "" (the root). */
static char *path_parent(const char *path) {
        const char *slash = strrchr(path, '/');

        return strndup(path, slash ? (size_t) (slash - path) : 0);
}

/* 1 if the cgroup's directory exists in hierarchy h, 0 if not. */
static int dir_exists(CGroupRoot *r, const char *h, const char *path) {
        _cleanup_free_ char *p = NULL;
        struct stat st;
        int k;

        k = cgroup_fs_path(r, h, path, NULL, &p);
        if (k < 0)
                return k;
        if (stat(p, &st) < 0)
                return errno == ENOENT ? 0 : negative_errno();
        return S_ISDIR(st.st_mode) ? 1 : -ENOTDIR;
}

int cgroup_exists(CGroupRoot *r, const char *path) {
        int k;

        assert_return(r, -EINVAL);

        /* On v1 a cgroup exists if it exists in any hierarchy: a half-created one must be found so
         * that cgroup_create() can complete it and cgroup_remove() can remove it. */
        STRV_FOREACH(h, r->hierarchies) {
                k = dir_exists(r, *h, path);
                if (k != 0)
                        return k;
        }
        return 0;
}

static int list_subdirs(CGroupRoot *r, const char *h, const char *path, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ char *p = NULL;
        struct dirent *de;
        int k;

        k = cgroup_fs_path(r, h, path, NULL, &p);
        if (k < 0)
                return k;
        d = opendir(p);
        if (!d)
                return negative_errno();

        l = new0(char *, 1);
        if (!l)
                return -ENOMEM;
        for (;;) {
                struct stat st;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return negative_errno();
                        break;
                }
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (de->d_type == DT_UNKNOWN) {
                        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                                continue; /* gone meanwhile */
                        if (!S_ISDIR(st.st_mode))
                                continue;
                } else if (de->d_type != DT_DIR)
                        continue;
                k = strv_extend(&l, de->d_name);
                if (k < 0)
                        return k;
        }

        strv_sort(l);
        *ret = TAKE_PTR(l);
        return 0;
}

int cgroup_list_children(CGroupRoot *r, const char *path, char ***ret) {
        assert_return(r, -EINVAL);
        assert_return(ret, -EINVAL);

        return list_subdirs(r, primary_hierarchy(r), path, ret);
}

static int pid_compare(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return x < y ? -1 : x > y;
}

static int read_pids(CGroupRoot *r, const char *h, const char *path, pid_t **ret, size_t *ret_n) {
        _cleanup_strv_free_ char **lines = NULL;
        _cleanup_free_ char *text = NULL;
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;
        int k;

        k = cgroup_read_file(r, h, path, "cgroup.procs", &text);
        if (k < 0)
                return k;
        k = strv_split(text, "\n", &lines);
        if (k < 0)
                return k;

        if (!strv_isempty(lines)) {
                pids = new(pid_t, strv_length(lines));
                if (!pids)
                        return -ENOMEM;
        }
        STRV_FOREACH(l, lines) {
                int pid;

                if (safe_atoi(*l, &pid) < 0 || pid <= 0)
                        return -EINVAL;
                pids[n++] = pid;
        }

        /* v1 may list a process more than once: sorted, each once. */
        if (n > 1) {
                size_t m = 1;

                qsort(pids, n, sizeof(pid_t), pid_compare);
                for (size_t i = 1; i < n; i++)
                        if (pids[i] != pids[m - 1])
                                pids[m++] = pids[i];
                n = m;
        }

        *ret = TAKE_PTR(pids);
        *ret_n = n;
        return 0;
}

int cgroup_get_pids(CGroupRoot *r, const char *path, pid_t **ret, size_t *ret_n) {
        assert_return(r, -EINVAL);
        assert_return(ret, -EINVAL);
        assert_return(ret_n, -EINVAL);

        return read_pids(r, primary_hierarchy(r), path, ret, ret_n);
}

static void free_array(char **a, size_t n) {
        for (size_t i = 0; a && i < n; i++)
                free(a[i]);
        free(a);
}

static int write_pid(CGroupRoot *r, const char *h, const char *path, pid_t pid) {
        char buf[STRLEN("-2147483648") + 1];

        (void) snprintf(buf, sizeof(buf), "%i", (int) pid);
        return cgroup_write_file(r, h, path, "cgroup.procs", buf);
}

/* Puts the first n_moved (pid, hierarchy) moves of pids back where from says they were, last first. */
static void attach_undo(CGroupRoot *r, const pid_t *pids, char **from, size_t n_moved) {
        size_t n_h = strv_length(r->hierarchies);

        for (size_t m = n_moved; m > 0; m--) {
                size_t i = (m - 1) / n_h, j = (m - 1) % n_h;

                /* A process that has exited meanwhile is nowhere to put back. */
                (void) write_pid(r, r->hierarchies[j], from[m - 1], pids[i]);
        }
}

int cgroup_attach_many(CGroupRoot *r, const char *path, const pid_t *pids, size_t n_pids, size_t *failed) {
        size_t n_h, n_moved = 0;
        char **from = NULL;
        int k;

        assert_return(r, -EINVAL);
        assert_return(pids || n_pids == 0, -EINVAL);
        k = cgroup_path_check(path);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n_pids; i++)
                assert_return(pids[i] > 0, -EINVAL);
        n_h = strv_length(r->hierarchies);

        /* The cgroup, as a directory, in every hierarchy before anything moves. */
        STRV_FOREACH(h, r->hierarchies) {
                k = dir_exists(r, *h, path);
                if (k <= 0)
                        return k ?: -ENOENT;
        }

        /*
         * Each v1 hierarchy is a separate move, and so is each process: where there is more than one
         * move, remember where each process is in each hierarchy, so that a move the kernel refuses
         * (cpuset ENOSPC, cpu EINVAL for realtime tasks, a process gone) can be undone and nobody is
         * left half attached.
         */
        if (n_h * n_pids > 1) {
                from = new0(char *, n_h * n_pids);
                if (!from)
                        return -ENOMEM;
                for (size_t i = 0; i < n_pids; i++)
                        for (size_t j = 0; j < n_h; j++) {
                                _cleanup_free_ char *p = NULL;

                                k = proc_pid_cgroup_controller(r->proc, pids[i],
                                                               r->version == 2 ? NULL : r->hierarchies[j], &p);
                                if (k < 0) {
                                        if (failed)
                                                *failed = i;
                                        goto finish;
                                }
                                from[i * n_h + j] = strdup(p + 1);
                                if (!from[i * n_h + j]) {
                                        k = -ENOMEM;
                                        goto finish;
                                }
                        }
        }

        for (size_t i = 0; i < n_pids; i++)
                for (size_t j = 0; j < n_h; j++) {
                        k = write_pid(r, r->hierarchies[j], path, pids[i]);
                        if (k < 0) {
                                if (from)
                                        attach_undo(r, pids, from, n_moved);
                                if (failed)
                                        *failed = i;
                                goto finish;
                        }
                        n_moved++;
                }
        k = 0;
finish:
        free_array(from, n_h * n_pids);
        return k;
}

int cgroup_attach(CGroupRoot *r, const char *path, pid_t pid) {
        assert_return(pid > 0, -EINVAL);

        return cgroup_attach_many(r, path, &pid, 1, NULL);
}

/*
 * v2: enables tonari's controllers in parent's cgroup.subtree_control. available is what the
 * parent itself got (its cgroup.controllers: for the root, the root's list; below, what the level
 * above enabled); on return it holds what the parent now enables for its children.
 *
 * All missing controllers go in one write first: the kernel takes it whole or not at all. If it
 * refuses, each is tried alone, so that one controller the kernel cannot enable here (e.g. cpu
 * with realtime tasks on old kernels) does not cost the others; cgroup_apply() later reports the
 * settings that needed it with -EOPNOTSUPP naming the controller. Only if not one of them can be
 * enabled is that an error (EBUSY: the parent has processes of its own; EACCES: not ours), since
 * then the new cgroup could be limited in nothing.
 */
static int v2_enable_controllers(CGroupRoot *r, const char *parent, char ***available) {
        _cleanup_strv_free_ char **enabled = NULL, **want = NULL, **now = NULL;
        _cleanup_free_ char *text = NULL, *all = NULL;
        int k, first_error = 0;

        k = cgroup_read_file(r, NULL, parent, "cgroup.subtree_control", &text);
        /* Always there on cgroupfs; absent only in a fake tree's new directory. */
        if (k < 0 && k != -ENOENT)
                return k;
        k = strv_split(strempty(text), " \n", &enabled);
        if (k < 0)
                return k;

        FOREACH_ELEMENT(c, v2_controllers) {
                if (!strv_contains(*available, *c))
                        continue;
                if (strv_contains(enabled, *c))
                        k = strv_extend(&now, *c);
                else {
                        char *w = strjoin("+", *c);

                        if (!w)
                                return -ENOMEM;
                        k = strv_consume(&want, w);
                }
                if (k < 0)
                        return k;
        }

        if (!strv_isempty(want)) {
                all = strv_join(want, " ");
                if (!all)
                        return -ENOMEM;
                k = cgroup_write_file(r, NULL, parent, "cgroup.subtree_control", all);
                if (k >= 0) {
                        STRV_FOREACH(w, want) {
                                k = strv_extend(&now, *w + 1);
                                if (k < 0)
                                        return k;
                        }
                } else {
                        size_t n_ok = 0;

                        STRV_FOREACH(w, want) {
                                k = cgroup_write_file(r, NULL, parent, "cgroup.subtree_control", *w);
                                if (k < 0) {
                                        if (first_error == 0)
                                                first_error = k;
                                        continue;
                                }
                                n_ok++;
                                k = strv_extend(&now, *w + 1);
                                if (k < 0)
                                        return k;
                        }
                        if (n_ok == 0 && strv_isempty(now))
                                return first_error;
                }
        }

        if (!now) {
                now = new0(char *, 1);
                if (!now)
                        return -ENOMEM;
        }
        strv_free(*available);
        *available = TAKE_PTR(now);
        return 0;
}

/* v1 cpuset: a new cpuset has no CPUs and no memory nodes, and the kernel refuses tasks in it
 * (ENOSPC): give it the parent's before anything is attached. */
static int v1_cpuset_inherit(CGroupRoot *r, const char *path, bool is_new) {
        /* The kernel checks cpus and mems separately: either order works. */
        static const char *const files[] = { "cpuset.mems", "cpuset.cpus" };
        _cleanup_free_ char *parent = path_parent(path);
        int k;

        if (!parent)
                return -ENOMEM;

        FOREACH_ELEMENT(f, files) {
                _cleanup_free_ char *cur = NULL, *v = NULL;

                if (!is_new) {
                        /* An existing one may be left empty by an interrupted cgroup_create(). */
                        k = read_value(r, "cpuset", path, *f, &cur);
                        if (k < 0)
                                return k;
                        if (!isempty(cur))
                                continue;
                }
                k = read_value(r, "cpuset", parent, *f, &v);
                if (k < 0)
                        return k;
                k = cgroup_write_file(r, "cpuset", path, *f, v);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* rmdir(2) of a cgroup's directory p. */
static int cgroup_rmdir(CGroupRoot *r, const char *p) {
        if (!r->kernel) {
                _cleanup_closedir_ DIR *d = opendir(p);
                struct dirent *de;

                while (d && (de = readdir(d)))
                        if (de->d_type == DT_REG)
                                (void) unlinkat(dirfd(d), de->d_name, 0);
        }
        return rmdir(p) < 0 ? negative_errno() : 0;
}

static void rmdir_created(CGroupRoot *r, char **created) {
        /* created holds pairs (hierarchy, path) in the order they were made; undo in reverse, so
         * that children go before their parents. */
        for (size_t n = strv_length(created); n >= 2; n -= 2) {
                _cleanup_free_ char *p = NULL;

                if (cgroup_fs_path(r, created[n - 2], created[n - 1], NULL, &p) >= 0)
                        (void) cgroup_rmdir(r, p);
        }
}

/*
 * Idempotent: an existing cgroup (or a half-created one from an interrupted call) gets what is
 * missing — controllers in the parents, directories in hierarchies, an empty v1 cpuset filled. On
 * failure the directories this call made are removed again.
 */
int cgroup_create(CGroupRoot *r, const char *path) {
        _cleanup_strv_free_ char **created = NULL;
        bool leaf_created = false;
        int k;

        assert_return(r, -EINVAL);
        k = cgroup_path_check(path);
        if (k < 0)
                return k;
        assert_return(path[0] != '\0', -EINVAL);

        STRV_FOREACH(h, r->hierarchies) {
                _cleanup_strv_free_ char **available = NULL;

                if (r->version == 2) {
                        available = strv_copy(r->v2_controllers);
                        if (!available)
                                return -ENOMEM;
                }

                /* mkdir -p, one level at a time. */
                for (const char *e = path;;) {
                        _cleanup_free_ char *prefix = NULL, *parent = NULL, *p = NULL;
                        bool is_new;

                        e += strcspn(e, "/");
                        prefix = strndup(path, e - path);
                        if (!prefix)
                                goto nomem;
                        if (r->version == 2) {
                                /* The level above enables the controllers before the child exists,
                                 * so the child is born with them. Never in the leaf itself: a v2
                                 * cgroup that enables controllers for children cannot hold
                                 * processes. */
                                parent = path_parent(prefix);
                                if (!parent)
                                        goto nomem;
                                k = v2_enable_controllers(r, parent, &available);
                                if (k < 0)
                                        goto fail;
                        }

                        k = cgroup_fs_path(r, *h, prefix, NULL, &p);
                        if (k < 0)
                                goto fail;
                        if (mkdir(p, 0755) >= 0) {
                                is_new = true;
                                if (strv_extend(&created, *h) < 0 || strv_extend(&created, prefix) < 0)
                                        goto nomem;
                        } else if (errno == EEXIST) {
                                /* Only a directory is a cgroup: the name may be an interface file of
                                 * the parent ("cpu.shares"), which is no cgroup to complete. */
                                k = dir_exists(r, *h, prefix);
                                if (k <= 0) {
                                        k = k ?: -ENOENT;
                                        goto fail;
                                }
                                is_new = false;
                        } else {
                                k = negative_errno();
                                goto fail;
                        }
                        if (*e == '\0')
                                leaf_created = leaf_created || is_new;

                        if (streq(*h, "cpuset")) {
                                k = v1_cpuset_inherit(r, prefix, is_new);
                                if (k < 0)
                                        goto fail;
                        }

                        if (*e == '\0')
                                break;
                        e++;
                }
        }
        return leaf_created;

nomem:
        k = -ENOMEM;
fail:
        rmdir_created(r, created);
        return k;
}

static int v1_write_cpu_quota(CGroupRoot *root, const char *path, int64_t quota, uint64_t period);

int cgroup_make_leaf(CGroupRoot *r, const char *parent, const char *leaf, const char *const *controllers) {
        _cleanup_free_ char *path = NULL, *dir = NULL;
        bool created = false, moved = false;
        int k;

        assert_return(r, -EINVAL);
        assert_return(r->version == 2, -EOPNOTSUPP);
        assert_return(filename_is_valid(leaf), -EINVAL);
        k = cgroup_path_check(parent);
        if (k < 0)
                return k;

        path = strjoin(parent, "/", leaf);
        if (!path)
                return -ENOMEM;
        k = cgroup_fs_path(r, NULL, path, NULL, &dir);
        if (k < 0)
                return k;
        if (mkdir(dir, 0755) >= 0)
                created = true;
        else if (errno != EEXIST)
                return -errno;

        /* Processes may fork while they are moved: a few rounds, until the parent is empty and the
         * kernel accepts the controllers (it refuses with EBUSY while parent has processes). */
        for (unsigned round = 0;; round++) {
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;

                k = cgroup_get_pids(r, parent, &pids, &n);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < n; i++) {
                        k = cgroup_attach(r, path, pids[i]);
                        if (k < 0 && k != -ESRCH)
                                return k;
                        moved = true;
                }

                k = 0;
                STRV_FOREACH(c, (char **) controllers) {
                        _cleanup_free_ char *plus = strjoin("+", *c);

                        if (!plus)
                                return -ENOMEM;
                        k = cgroup_write_file(r, NULL, parent, "cgroup.subtree_control", plus);
                        if (k < 0)
                                break;
                }
                if (k >= 0)
                        break;
                if (k != -EBUSY || round >= 8)
                        return k;
        }
        return created || moved;
}

int cgroup_set_cpu_max(CGroupRoot *r, const char *path, usec_t quota_usec, usec_t period_usec) {
        char buf[64];

        assert_return(r, -EINVAL);
        if (period_usec < CGROUP_CPU_QUOTA_PERIOD_MIN_USEC || period_usec > CGROUP_CPU_QUOTA_PERIOD_MAX_USEC)
                return -ERANGE;
        if (quota_usec != USEC_INFINITY && (quota_usec < CGROUP_CPU_QUOTA_MIN_USEC || quota_usec > (usec_t) INT64_MAX))
                return -ERANGE;

        if (r->version == 1)
                return v1_write_cpu_quota(r, path, quota_usec == USEC_INFINITY ? -1 : (int64_t) quota_usec,
                                          period_usec);
        if (quota_usec == USEC_INFINITY)
                (void) snprintf(buf, sizeof(buf), "max %" PRIu64, period_usec);
        else
                (void) snprintf(buf, sizeof(buf), "%" PRIu64 " %" PRIu64, quota_usec, period_usec);
        return cgroup_write_file(r, NULL, path, "cpu.max", buf);
}

int cgroup_read_cpu_periods(CGroupRoot *r, const char *path, uint64_t *ret) {
        _cleanup_free_ char *text = NULL;
        int k;

        assert_return(r, -EINVAL);
        assert_return(ret, -EINVAL);

        k = cgroup_read_file(r, "cpu", path, "cpu.stat", &text);
        if (k < 0)
                return k;
        return cgroup_cpu_stat_parse(text, "nr_periods", ret);
}

int cgroup_read_cpu_usage(CGroupRoot *r, const char *path, usec_t *ret) {
        _cleanup_free_ char *text = NULL;
        uint64_t v;
        int k;

        assert_return(r, -EINVAL);
        assert_return(ret, -EINVAL);

        if (r->version == 2) {
                k = cgroup_read_file(r, NULL, path, "cpu.stat", &text);
                if (k < 0)
                        return k;
                return cgroup_cpu_stat_parse(text, "usage_usec", ret);
        }
        k = read_u64(r, "cpuacct", path, "cpuacct.usage", &v);
        if (k < 0)
                return k;
        *ret = v / NSEC_PER_USEC; /* v1 counts nanoseconds */
        return 0;
}

/* Makes path again in the first n hierarchies, which its removal got through before it failed in
 * the next one. */
static void remove_undo(CGroupRoot *r, const char *path, size_t n, const CGroupSettings *settings) {
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *p = NULL;

                if (cgroup_fs_path(r, r->hierarchies[i], path, NULL, &p) < 0 || mkdir(p, 0755) < 0)
                        continue;
                if (streq(r->hierarchies[i], "cpuset"))
                        (void) v1_cpuset_inherit(r, path, true);
        }
        if (settings)
                (void) cgroup_apply(r, path, settings, _CGROUP_MASK_ALL, NULL);
}

int cgroup_remove(CGroupRoot *r, const char *path) {
        _cleanup_(cgroup_settings_done) CGroupSettings settings = CGROUP_SETTINGS_INIT;
        bool have_settings = false, removed = false;
        size_t i = 0;
        int k;

        assert_return(r, -EINVAL);
        k = cgroup_path_check(path);
        if (k < 0)
                return k;
        assert_return(path[0] != '\0', -EINVAL);

        /* Check everything first, so that a busy cgroup is left whole in every hierarchy. */
        STRV_FOREACH(h, r->hierarchies) {
                _cleanup_strv_free_ char **children = NULL;
                _cleanup_free_ pid_t *pids = NULL;
                size_t n;

                k = list_subdirs(r, *h, path, &children);
                if (k == -ENOENT)
                        continue;
                if (k < 0)
                        return k;
                if (!strv_isempty(children))
                        return -EBUSY;
                k = read_pids(r, *h, path, &pids, &n);
                if (k < 0 && k != -ENOENT)
                        return k;
                if (k >= 0 && n > 0)
                        return -EBUSY;
        }

        /* v1 removes one directory per hierarchy; if the kernel refuses one after others are gone
         * (a process moved in meanwhile), the others are made again with the settings they had. */
        if (strv_length(r->hierarchies) > 1)
                have_settings = cgroup_read_settings(r, path, &settings) >= 0;

        STRV_FOREACH(h, r->hierarchies) {
                _cleanup_free_ char *p = NULL;

                k = cgroup_fs_path(r, *h, path, NULL, &p);
                if (k >= 0)
                        k = cgroup_rmdir(r, p);
                if (k < 0 && k != -ENOENT) {
                        /* (those that were gone already are made as well: the cgroup is whole) */
                        remove_undo(r, path, i, have_settings ? &settings : NULL);
                        return k;
                }
                removed = removed || k >= 0;
                i++;
        }
        return removed;
}

int cgroup_get_id(CGroupRoot *r, const char *path, uint64_t *ret) {
        _cleanup_free_ char *p = NULL;
        struct stat st;
        int k;

        assert_return(r, -EINVAL);
        assert_return(ret, -EINVAL);

        k = cgroup_fs_path(r, primary_hierarchy(r), path, NULL, &p);
        if (k < 0)
                return k;
        if (stat(p, &st) < 0)
                return negative_errno();
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        *ret = (uint64_t) st.st_ino;
        return 0;
}

/* cgroup_apply() */

typedef struct Apply {
        CGroupRoot *root;
        const char *path;
        const CGroupSettings *s;
        char **enabled; /* v2: the cgroup's cgroup.controllers */
        bool write;     /* false: only find out whether the hierarchy can express the setting */
} Apply;

static int unsupported(char **ret_unsupported, const char *setting, const char *reason_fmt, ...)
        _printf_(3, 4);

static int unsupported(char **ret_unsupported, const char *setting, const char *reason_fmt, ...) {
        _cleanup_free_ char *reason = NULL;
        va_list ap;
        int n;

        if (!ret_unsupported)
                return -EOPNOTSUPP;

        va_start(ap, reason_fmt);
        n = vasprintf(&reason, reason_fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        *ret_unsupported = strjoin(setting, " (", reason, ")");
        if (!*ret_unsupported)
                return -ENOMEM;
        return -EOPNOTSUPP;
}

/*
 * 1: the controller for setting is there, go on. A setting left at its default needs no file:
 * without the controller that is 0 (nothing to do), anything else -EOPNOTSUPP.
 */
static int need_controller(Apply *a, const char *setting, bool is_default, const char *v2, const char *v1,
                           char **ret_unsupported) {
        const char *c = a->root->version == 2 ? v2 : v1;
        bool have = a->root->version == 2 ? strv_contains(a->enabled, c)
                                          : cgroup_root_has_controller(a->root, c);

        if (have)
                return 1;
        if (is_default)
                return 0;
        return unsupported(ret_unsupported, setting, "no %s controller", c);
}

static int apply_cpu_weight(Apply *a, char **ret_unsupported) {
        uint64_t w = a->s->cpu_weight;
        int k;

        k = need_controller(a, "CPUWeight=", w == CGROUP_WEIGHT_UNSET, "cpu", "cpu", ret_unsupported);
        if (k <= 0 || !a->write)
                return MIN(k, 0);

        if (a->root->version == 2)
                return write_u64(a->root, NULL, a->path, "cpu.weight",
                                 w == CGROUP_WEIGHT_UNSET ? CGROUP_WEIGHT_DEFAULT : w);
        return write_u64(a->root, "cpu", a->path, "cpu.shares", cgroup_cpu_weight_to_shares(w));
}

/* Whether q/p lies between q1/p1 and q2/p2 (inclusive); all positive. */
static bool ratio_between(uint64_t q, uint64_t p, uint64_t q1, uint64_t p1, uint64_t q2, uint64_t p2) {
        unsigned __int128 x1 = (unsigned __int128) q * p1, y1 = (unsigned __int128) q1 * p;
        unsigned __int128 x2 = (unsigned __int128) q * p2, y2 = (unsigned __int128) q2 * p;

        /* q/p ≥ q1/p1 ⇔ q·p1 ≥ q1·p */
        return (x1 >= y1 && x2 <= y2) || (x1 <= y1 && x2 >= y2);
}

/*
 * v1 keeps quota and period in two files, and the kernel checks every single write against the
 * hierarchy: a cgroup's quota/period ratio may not exceed its parent's, nor fall below any of its
 * children's (EINVAL). The kernel does not require quota ≤ period (that is how more than one CPU
 * is granted). So the state between the two writes must be valid too:
 *   - period unchanged: one write;
 *   - to "no quota" (-1): quota first, then the period — a cgroup without quota passes any check;
 *   - from "no quota": period first, then quota;
 *   - otherwise whichever order's intermediate ratio lies between the old and the new ratio (then
 *     it is as valid as they are); if neither does (e.g. 10000/100000 → 30000/200000 makes 30% or
 *     5% in between), through "no quota" for a moment: quota -1, period, quota.
 */
static int v1_write_cpu_quota(CGroupRoot *root, const char *path, int64_t quota, uint64_t period) {
        uint64_t cur_period;
        int64_t cur_quota;
        int k;

        k = read_u64(root, "cpu", path, "cpu.cfs_period_us", &cur_period);
        if (k < 0)
                return k;
        k = read_i64(root, "cpu", path, "cpu.cfs_quota_us", &cur_quota);
        if (k < 0)
                return k;

        if (cur_period != period) {
                bool period_first;

                if (quota < 0 || cur_quota <= 0 || cur_period == 0)
                        period_first = cur_quota <= 0;
                else if (ratio_between((uint64_t) quota, cur_period, (uint64_t) cur_quota, cur_period,
                                       (uint64_t) quota, period))
                        period_first = false;
                else if (ratio_between((uint64_t) cur_quota, period, (uint64_t) cur_quota, cur_period,
                                       (uint64_t) quota, period))
                        period_first = true;
                else {
                        k = write_i64(root, "cpu", path, "cpu.cfs_quota_us", -1);
                        if (k < 0)
                                return k;
                        period_first = true;
                }

                if (!period_first) {
                        k = write_i64(root, "cpu", path, "cpu.cfs_quota_us", quota);
                        if (k < 0)
                                return k;
                }
                k = write_u64(root, "cpu", path, "cpu.cfs_period_us", period);
                if (k < 0 || !period_first)
                        return k;
        }
        return write_i64(root, "cpu", path, "cpu.cfs_quota_us", quota);
}

static int apply_cpu_quota(Apply *a, char **ret_unsupported) {
        const CGroupSettings *s = a->s;
        _cleanup_free_ char *v = NULL;
        usec_t period, quota;
        bool is_default;
        int k;

        is_default = s->cpu_quota_per_sec_usec == USEC_INFINITY && s->cpu_quota_period_usec == USEC_INFINITY;
        k = need_controller(a, "CPUQuota=", is_default, "cpu", "cpu", ret_unsupported);
        if (k <= 0 || !a->write)
                return MIN(k, 0);

        if (a->root->version == 2) {
                k = cgroup_cpu_max_format(s->cpu_quota_per_sec_usec, s->cpu_quota_period_usec, &v);
                if (k < 0)
                        return k;
                return cgroup_write_file(a->root, NULL, a->path, "cpu.max", v);
        }

        period = s->cpu_quota_period_usec == USEC_INFINITY ? CGROUP_CPU_QUOTA_PERIOD_DEFAULT_USEC
                                                           : s->cpu_quota_period_usec;
        quota = cgroup_cpu_quota_per_period(s->cpu_quota_per_sec_usec, period);
        /* Beyond INT64_MAX the kernel's s64 file cannot hold it: let the kernel refuse the value. */
        return v1_write_cpu_quota(a->root, a->path, quota == USEC_INFINITY ? -1 : (int64_t) MIN(quota, (usec_t) INT64_MAX),
                                  period);
}

static int apply_io_weight(Apply *a, char **ret_unsupported) {
        uint64_t w = a->s->io_weight;
        const char *file = a->root->version == 2 ? "io.weight" : "blkio.weight";
        _cleanup_free_ char *cur = NULL, *v = NULL;
        int k;

        k = need_controller(a, "IOWeight=", w == CGROUP_WEIGHT_UNSET, "io", "blkio", ret_unsupported);
        if (k <= 0)
                return k;

        /* Weights exist only with a scheduler that has them (BFQ, v2's iocost; v1's CFQ). */
        k = cgroup_read_file(a->root, "blkio", a->path, file, &cur);
        if (k == -ENOENT)
                return w == CGROUP_WEIGHT_UNSET
                               ? 0
                               : unsupported(ret_unsupported, "IOWeight=",
                                             "no %s: the device's scheduler has no weights", file);
        if (k < 0 || !a->write)
                return MIN(k, 0);

        if (a->root->version == 1)
                return write_u64(a->root, "blkio", a->path, file, cgroup_io_weight_to_blkio(w));
        if (asprintf(&v, "default %" PRIu64, w == CGROUP_WEIGHT_UNSET ? CGROUP_WEIGHT_DEFAULT : w) < 0)
                return -ENOMEM;
        return cgroup_write_file(a->root, NULL, a->path, file, v);
}

static const char *const io_limit_settings[_CGROUP_IO_LIMIT_TYPE_MAX] = {
        [CGROUP_IO_RBPS] = "IOReadBandwidthMax=",
        [CGROUP_IO_WBPS] = "IOWriteBandwidthMax=",
        [CGROUP_IO_RIOPS] = "IOReadIOPSMax=",
        [CGROUP_IO_WIOPS] = "IOWriteIOPSMax=",
};

static const char *const blkio_throttle_files[_CGROUP_IO_LIMIT_TYPE_MAX] = {
        [CGROUP_IO_RBPS] = "blkio.throttle.read_bps_device",
        [CGROUP_IO_WBPS] = "blkio.throttle.write_bps_device",
        [CGROUP_IO_RIOPS] = "blkio.throttle.read_iops_device",
        [CGROUP_IO_WIOPS] = "blkio.throttle.write_iops_device",
};

static bool io_limit_is_none(const CGroupIODeviceLimit *l) {
        for (size_t t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++)
                if (l->limit[t] != CGROUP_LIMIT_MAX)
                        return false;
        return true;
}

/* The name of the first IO limit setting with a value; NULL if no device has any limit. */
static const char *io_limits_first_setting(const CGroupSettings *s) {
        for (size_t t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++)
                for (size_t i = 0; i < s->n_io_limits; i++)
                        if (s->io_limits[i].limit[t] != CGROUP_LIMIT_MAX)
                                return io_limit_settings[t];
        return NULL;
}

/* The limits in the cgroup now: v2 io.max, v1 the four throttle files. */
static int io_limits_read(Apply *a, const char *setting, char **ret_unsupported, CGroupIODeviceLimit **ret,
                          size_t *ret_n) {
        CGroupIODeviceLimit *l = NULL;
        size_t n = 0;
        int k;

        for (size_t t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++) {
                _cleanup_free_ char *text = NULL;
                const char *file = a->root->version == 2 ? "io.max" : blkio_throttle_files[t];

                k = cgroup_read_file(a->root, "blkio", a->path, file, &text);
                if (k == -ENOENT)
                        k = setting ? unsupported(ret_unsupported, setting,
                                                  "no %s: the kernel has no block I/O throttling", file)
                                    : 1;
                if (k == 1)
                        break; /* nothing to read, nothing to remove */
                if (k < 0)
                        goto fail;
                if (a->root->version == 2) {
                        k = cgroup_io_max_parse(text, &l, &n);
                        if (k < 0)
                                goto fail;
                        break;
                }
                k = cgroup_blkio_throttle_parse(text, (int) t, &l, &n);
                if (k < 0)
                        goto fail;
        }

        *ret = l;
        *ret_n = n;
        return 0;

fail:
        cgroup_settings_done(&(CGroupSettings) { .io_limits = l, .n_io_limits = n });
        return k;
}

static int apply_io_limits(Apply *a, char **ret_unsupported) {
        _cleanup_(cgroup_settings_done) CGroupSettings cur = CGROUP_SETTINGS_INIT;
        const CGroupSettings *s = a->s;
        const char *setting = io_limits_first_setting(s);
        int k;

        k = need_controller(a, setting ?: io_limit_settings[0], !setting, "io", "blkio", ret_unsupported);
        if (k <= 0)
                return k;
        k = io_limits_read(a, setting, ret_unsupported, &cur.io_limits, &cur.n_io_limits);
        if (k < 0 || !a->write)
                return k;

        if (a->root->version == 2) {
                /* Devices no longer listed lose all four limits. */
                for (size_t i = 0; i < cur.n_io_limits; i++) {
                        const uint64_t none[_CGROUP_IO_LIMIT_TYPE_MAX] = {
                                CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX
                        };
                        _cleanup_free_ char *line = NULL;

                        if (cgroup_settings_find_io_limit(s, cur.io_limits[i].devnum))
                                continue;
                        k = cgroup_io_max_format_line(cur.io_limits[i].devnum, none, &line);
                        if (k < 0)
                                return k;
                        k = cgroup_write_file(a->root, NULL, a->path, "io.max", line);
                        if (k < 0)
                                return k;
                }
                for (size_t i = 0; i < s->n_io_limits; i++) {
                        const CGroupIODeviceLimit *l = s->io_limits + i;
                        _cleanup_free_ char *line = NULL;

                        if (io_limit_is_none(l) && !cgroup_settings_find_io_limit(&cur, l->devnum))
                                continue;
                        k = cgroup_io_max_format_line(l->devnum, l->limit, &line);
                        if (k < 0)
                                return k;
                        k = cgroup_write_file(a->root, NULL, a->path, "io.max", line);
                        if (k < 0)
                                return k;
                }
                return 0;
        }

        /* v1: "MAJ:MIN VALUE" per device and file; 0 removes a limit. */
        for (size_t t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++) {
                for (size_t i = 0; i < cur.n_io_limits; i++) {
                        dev_t devnum = cur.io_limits[i].devnum;
                        const CGroupIODeviceLimit *want = cgroup_settings_find_io_limit(s, devnum);
                        char line[64];

                        if (cur.io_limits[i].limit[t] == CGROUP_LIMIT_MAX ||
                            (want && want->limit[t] != CGROUP_LIMIT_MAX))
                                continue;
                        (void) snprintf(line, sizeof(line), "%u:%u 0", major(devnum), minor(devnum));
                        k = cgroup_write_file(a->root, "blkio", a->path, blkio_throttle_files[t], line);
                        if (k < 0)
                                return k;
                }
                for (size_t i = 0; i < s->n_io_limits; i++) {
                        const CGroupIODeviceLimit *l = s->io_limits + i;
                        char line[64];

                        if (l->limit[t] == CGROUP_LIMIT_MAX)
                                continue;
                        (void) snprintf(line, sizeof(line), "%u:%u %" PRIu64, major(l->devnum),
                                        minor(l->devnum), l->limit[t]);
                        k = cgroup_write_file(a->root, "blkio", a->path, blkio_throttle_files[t], line);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

static int apply_memory_max(Apply *a, char **ret_unsupported) {
        uint64_t v = a->s->memory_max;
        char buf[STRLEN("18446744073709551615") + 1];
        int k;

        k = need_controller(a, "MemoryMax=", v == CGROUP_LIMIT_MAX, "memory", "memory", ret_unsupported);
        if (k <= 0 || !a->write)
                return MIN(k, 0);

        if (a->root->version == 2)
                return cgroup_write_file(a->root, NULL, a->path, "memory.max",
                                         cgroup_limit_format(v, buf, sizeof(buf)));
        if (v == CGROUP_LIMIT_MAX)
                return cgroup_write_file(a->root, "memory", a->path, "memory.limit_in_bytes", "-1");
        return write_u64(a->root, "memory", a->path, "memory.limit_in_bytes", v);
}

static int apply_memory_high(Apply *a, char **ret_unsupported) {
        uint64_t v = a->s->memory_high;
        char buf[STRLEN("18446744073709551615") + 1];
        int k;

        if (a->root->version == 1)
                /* No limit is what v1 always has. */
                return v == CGROUP_LIMIT_MAX
                               ? 0
                               : unsupported(ret_unsupported, "MemoryHigh=", "cgroup v1 has no memory.high");

        k = need_controller(a, "MemoryHigh=", v == CGROUP_LIMIT_MAX, "memory", "memory", ret_unsupported);
        if (k <= 0 || !a->write)
                return MIN(k, 0);
        return cgroup_write_file(a->root, NULL, a->path, "memory.high",
                                 cgroup_limit_format(v, buf, sizeof(buf)));
}

static int apply_cpuset(Apply *a, const char *setting, const uint8_t *mask, size_t size, const char *file,
                        char **ret_unsupported) {
        _cleanup_free_ char *v = NULL;
        bool empty = !mask || index_list_count(mask, size) == 0;
        int k;

        k = need_controller(a, setting, empty, "cpuset", "cpuset", ret_unsupported);
        if (k <= 0 || !a->write)
                return MIN(k, 0);

        if (empty && a->root->version == 1) {
                /* v1 has no "inherit": an empty cpuset holds no tasks. Unrestricted is the parent's. */
                _cleanup_free_ char *parent = path_parent(a->path);

                if (!parent)
                        return -ENOMEM;
                k = read_value(a->root, "cpuset", parent, file, &v);
                if (k < 0)
                        return k;
        } else {
                /* v2: "" inherits the parent's. */
                v = format_index_list(mask, mask ? size : 0);
                if (!v)
                        return -ENOMEM;
        }
        return cgroup_write_file(a->root, "cpuset", a->path, file, v);
}

static int apply_allowed_cpus(Apply *a, char **ret_unsupported) {
        return apply_cpuset(a, "AllowedCPUs=", a->s->allowed_cpus, a->s->allowed_cpus_size, "cpuset.cpus",
                            ret_unsupported);
}

static int apply_allowed_mems(Apply *a, char **ret_unsupported) {
        return apply_cpuset(a, "AllowedMemoryNodes=", a->s->allowed_mems, a->s->allowed_mems_size,
                            "cpuset.mems", ret_unsupported);
}

static const struct {
        CGroupSettingMask mask;
        int (*apply)(Apply *a, char **ret_unsupported);
} apply_steps[] = {
        { CGROUP_MASK_CPU_WEIGHT, apply_cpu_weight },
        { CGROUP_MASK_CPU_QUOTA, apply_cpu_quota },
        { CGROUP_MASK_IO_WEIGHT, apply_io_weight },
        { CGROUP_MASK_IO_LIMITS, apply_io_limits },
        { CGROUP_MASK_MEMORY_MAX, apply_memory_max },
        { CGROUP_MASK_MEMORY_HIGH, apply_memory_high },
        { CGROUP_MASK_ALLOWED_CPUS, apply_allowed_cpus },
        { CGROUP_MASK_ALLOWED_MEMS, apply_allowed_mems },
};

static bool weight_is_valid(uint64_t w) {
        return w == CGROUP_WEIGHT_UNSET || (w >= CGROUP_WEIGHT_MIN && w <= CGROUP_WEIGHT_MAX);
}

/* Values no kernel accepts, refused before anything is written. */
static int settings_check(const CGroupSettings *s, CGroupSettingMask mask) {
        if ((mask & CGROUP_MASK_CPU_WEIGHT) && !weight_is_valid(s->cpu_weight))
                return -EINVAL;
        if ((mask & CGROUP_MASK_IO_WEIGHT) && !weight_is_valid(s->io_weight))
                return -EINVAL;
        if ((mask & CGROUP_MASK_CPU_QUOTA) && s->cpu_quota_period_usec != USEC_INFINITY &&
            (s->cpu_quota_period_usec < CGROUP_CPU_QUOTA_PERIOD_MIN_USEC ||
             s->cpu_quota_period_usec > CGROUP_CPU_QUOTA_PERIOD_MAX_USEC))
                return -EINVAL;
        if (mask & CGROUP_MASK_IO_LIMITS) {
                if (s->n_io_limits > 0 && !s->io_limits)
                        return -EINVAL;
                for (size_t i = 0; i < s->n_io_limits; i++) {
                        const CGroupIODeviceLimit *l = s->io_limits + i;

                        /* A block device; each once. */
                        if (major(l->devnum) == 0)
                                return -EINVAL;
                        for (size_t j = 0; j < i; j++)
                                if (s->io_limits[j].devnum == l->devnum)
                                        return -EINVAL;
                        /* 0 would mean "no limit" to v1: not a limit anyone means. */
                        for (size_t t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++)
                                if (l->limit[t] == 0)
                                        return -EINVAL;
                }
        }
        return 0;
}

int cgroup_apply(CGroupRoot *r, const char *path, const CGroupSettings *s, CGroupSettingMask mask,
                 char **ret_unsupported) {
        _cleanup_strv_free_ char **enabled = NULL;
        Apply a;
        int k;

        assert_return(r, -EINVAL);
        assert_return(s, -EINVAL);
        assert_return((mask & ~_CGROUP_MASK_ALL) == 0, -EINVAL);
        k = cgroup_path_check(path);
        if (k < 0)
                return k;
        k = settings_check(s, mask);
        if (k < 0)
                return k;

        k = cgroup_exists(r, path);
        if (k < 0)
                return k;
        if (k == 0)
                return -ENOENT;
        if (mask == 0)
                return 0;

        if (r->version == 2) {
                /* What this cgroup got from its parent: the controllers whose files it has. */
                _cleanup_free_ char *text = NULL;

                k = cgroup_read_file(r, NULL, path, "cgroup.controllers", &text);
                if (k < 0)
                        return k;
                k = strv_split(text, " \n", &enabled);
                if (k < 0)
                        return k;
        }

        a = (Apply) { .root = r, .path = path, .s = s, .enabled = enabled };

        /* First find out whether everything can be expressed, so that an unsupported setting
         * leaves the cgroup untouched; then write. */
        for (int pass = 0; pass < 2; pass++) {
                a.write = pass == 1;
                FOREACH_ELEMENT(step, apply_steps) {
                        if (!(mask & step->mask))
                                continue;
                        k = step->apply(&a, ret_unsupported);
                        if (k < 0)
                                return k;
                }
        }
        return 0;
}

/* cgroup_read_settings() */

/* ENOENT: the controller is not enabled for the cgroup, its setting is the default. */
#define OPTIONAL(k) ((k) == -ENOENT ? 0 : (k))

/* 1 with the file's text, 0 if there is no such file (its controller is not enabled there). */
static int read_optional(CGroupRoot *r, const char *controller, const char *path, const char *file, char **ret) {
        int k = cgroup_read_file(r, controller, path, file, ret);

        if (k == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        return k < 0 ? k : 1;
}

static int read_cpuset_mask(CGroupRoot *r, const char *path, const char *file, unsigned max_index,
                            uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ uint8_t *mask = NULL, *parent_mask = NULL;
        _cleanup_free_ char *v = NULL, *parent = NULL, *pv = NULL;
        size_t size, parent_size;
        int k;

        k = read_value(r, "cpuset", path, file, &v);
        if (k < 0)
                return k;
        if (parse_index_list(v, max_index, &mask, &size) < 0)
                return -EINVAL;

        if (r->version == 1 && path[0] != '\0') {
                /* v1 cannot say "unrestricted"; cgroup_apply() writes the parent's value for it. */
                parent = path_parent(path);
                if (!parent)
                        return -ENOMEM;
                k = read_value(r, "cpuset", parent, file, &pv);
                if (k < 0)
                        return k;
                if (parse_index_list(pv, max_index, &parent_mask, &parent_size) < 0)
                        return -EINVAL;
                if (size == parent_size && (size == 0 || memcmp(mask, parent_mask, size) == 0))
                        mask = mfree(mask);
        }

        if (!mask)
                size = 0;
        *ret = TAKE_PTR(mask);
        *ret_size = size;
        return 0;
}

/* v2 io.weight: "default N", then "MAJ:MIN N" for devices with their own (tonari sets none). */
static int io_weight_parse(const char *text, uint64_t *ret) {
        _cleanup_free_ char *line = strndup(text, strcspn(text, "\n"));
        const char *v;

        if (!line)
                return -ENOMEM;
        v = startswith(line, "default ");
        if (!v || safe_atou64(v, ret) < 0)
                return -EINVAL;
        return 0;
}

static uint64_t v1_memory_limit(uint64_t v) {
        long page = sysconf(_SC_PAGESIZE);

        if (v >= V1_MEMORY_UNLIMITED_MIN)
                return CGROUP_LIMIT_MAX;
        if (page > 0 && v == (uint64_t) (LONG_MAX / page) * (uint64_t) page)
                return CGROUP_LIMIT_MAX; /* 32-bit: PAGE_COUNTER_MAX is LONG_MAX pages */
        return v;
}

static int read_settings_v2(CGroupRoot *r, const char *path, CGroupSettings *t) {
        _cleanup_free_ char *text = NULL;
        uint64_t v;
        int k;

        k = read_u64(r, NULL, path, "cpu.weight", &v);
        if (k >= 0) {
                if (!weight_is_valid(v) || v == CGROUP_WEIGHT_UNSET)
                        return -EINVAL;
                t->cpu_weight = v == CGROUP_WEIGHT_DEFAULT ? CGROUP_WEIGHT_UNSET : v;
        } else if (OPTIONAL(k) < 0)
                return k;

        k = read_optional(r, NULL, path, "cpu.max", &text);
        if (k > 0)
                k = cgroup_cpu_max_parse(text, &t->cpu_quota_per_sec_usec, &t->cpu_quota_period_usec);
        if (k < 0)
                return k;
        text = mfree(text);

        k = cgroup_read_file(r, NULL, path, "io.weight", &text);
        if (k >= 0) {
                k = io_weight_parse(text, &v);
                if (k < 0)
                        return k;
                if (!weight_is_valid(v) || v == CGROUP_WEIGHT_UNSET)
                        return -EINVAL;
                t->io_weight = v == CGROUP_WEIGHT_DEFAULT ? CGROUP_WEIGHT_UNSET : v;
        } else if (OPTIONAL(k) < 0)
                return k;
        text = mfree(text);

        k = read_optional(r, NULL, path, "io.max", &text);
        if (k > 0)
                k = cgroup_io_max_parse(text, &t->io_limits, &t->n_io_limits);
        if (k < 0)
                return k;
        text = mfree(text);

        k = read_optional(r, NULL, path, "memory.max", &text);
        if (k > 0)
                k = cgroup_limit_parse(text, &t->memory_max);
        if (k < 0)
                return k;
        text = mfree(text);

        k = read_optional(r, NULL, path, "memory.high", &text);
        if (k > 0)
                k = cgroup_limit_parse(text, &t->memory_high);
        if (k < 0)
                return k;
        return 0;
}

static int read_settings_v1(CGroupRoot *r, const char *path, CGroupSettings *t) {
        uint64_t v, period;
        int64_t quota;
        int k;

        k = read_u64(r, "cpu", path, "cpu.shares", &v);
        if (k >= 0) {
                v = cgroup_cpu_shares_to_weight(v);
                t->cpu_weight = v == CGROUP_WEIGHT_DEFAULT ? CGROUP_WEIGHT_UNSET : v;
        } else if (OPTIONAL(k) < 0)
                return k;

        k = read_u64(r, "cpu", path, "cpu.cfs_period_us", &period);
        if (k >= 0) {
                _cleanup_free_ char *cpu_max = NULL;

                k = read_i64(r, "cpu", path, "cpu.cfs_quota_us", &quota);
                if (k < 0)
                        return k;
                if (quota < -1)
                        return -EINVAL;
                /* The same numbers as v2's cpu.max, and one conversion for both. */
                if (quota < 0)
                        k = asprintf(&cpu_max, "max %" PRIu64, period);
                else
                        k = asprintf(&cpu_max, "%" PRIi64 " %" PRIu64, quota, period);
                if (k < 0)
                        return -ENOMEM;
                k = cgroup_cpu_max_parse(cpu_max, &t->cpu_quota_per_sec_usec, &t->cpu_quota_period_usec);
                if (k < 0)
                        return k;
        } else if (OPTIONAL(k) < 0)
                return k;

        k = read_u64(r, "blkio", path, "blkio.weight", &v);
        if (k >= 0) {
                v = cgroup_blkio_to_io_weight(v);
                t->io_weight = v == CGROUP_WEIGHT_DEFAULT ? CGROUP_WEIGHT_UNSET : v;
        } else if (OPTIONAL(k) < 0)
                return k;

        for (size_t type = 0; type < _CGROUP_IO_LIMIT_TYPE_MAX; type++) {
                _cleanup_free_ char *text = NULL;

                k = read_optional(r, "blkio", path, blkio_throttle_files[type], &text);
                if (k > 0)
                        k = cgroup_blkio_throttle_parse(text, (int) type, &t->io_limits, &t->n_io_limits);
                if (k < 0)
                        return k;
        }

        k = read_u64(r, "memory", path, "memory.limit_in_bytes", &v);
        if (k >= 0)
                t->memory_max = v1_memory_limit(v);
        else if (OPTIONAL(k) < 0)
                return k;
        return 0;
}

/* A device whose four limits are all "max" has no limit: the kernel would not list it. */
static void io_limits_drop_none(CGroupSettings *t) {
        size_t n = 0;

        for (size_t i = 0; i < t->n_io_limits; i++) {
                if (io_limit_is_none(t->io_limits + i)) {
                        free(t->io_limits[i].path);
                        continue;
                }
                t->io_limits[n++] = t->io_limits[i];
        }
        t->n_io_limits = n;
        if (n == 0)
                t->io_limits = mfree(t->io_limits);
}

int cgroup_read_settings(CGroupRoot *r, const char *path, CGroupSettings *ret) {
        _cleanup_(cgroup_settings_done) CGroupSettings t = CGROUP_SETTINGS_INIT;
        int k;

        assert_return(r, -EINVAL);
        assert_return(ret, -EINVAL);

        k = cgroup_exists(r, path);
        if (k < 0)
                return k;
        if (k == 0)
                return -ENOENT;

        k = r->version == 2 ? read_settings_v2(r, path, &t) : read_settings_v1(r, path, &t);
        if (k < 0)
                return k;
        io_limits_drop_none(&t);

        k = read_cpuset_mask(r, path, "cpuset.cpus", CPU_INDEX_MAX, &t.allowed_cpus, &t.allowed_cpus_size);
        if (OPTIONAL(k) < 0)
                return k;
        k = read_cpuset_mask(r, path, "cpuset.mems", NODE_INDEX_MAX, &t.allowed_mems, &t.allowed_mems_size);
        if (OPTIONAL(k) < 0)
                return k;

        *ret = t;
        t = CGROUP_SETTINGS_INIT;
        return 0;
}

/* cgroup_read_usage() */

int cgroup_read_usage(CGroupRoot *r, const char *path, CGroupUsage *ret) {
        CGroupUsage u = {
                .cpu_usage_usec = UINT64_MAX,
                .io_read_bytes = UINT64_MAX,
                .io_write_bytes = UINT64_MAX,
                .memory_current = UINT64_MAX,
                .n_tasks = UINT64_MAX,
        };
        bool v2;
        _cleanup_free_ char *text = NULL;
        int k;

        assert_return(r, -EINVAL);
        assert_return(ret, -EINVAL);

        k = cgroup_exists(r, path);
        if (k < 0)
                return k;
        if (k == 0)
                return -ENOENT;
        v2 = r->version == 2;

        /* A file that is missing means the kernel does not count it here: UINT64_MAX. */
        k = cgroup_read_cpu_usage(r, path, &u.cpu_usage_usec);
        if (OPTIONAL(k) < 0)
                return k;

        k = cgroup_read_file(r, "blkio", path, v2 ? "io.stat" : "blkio.throttle.io_service_bytes_recursive",
                             &text);
        if (k >= 0)
                k = v2 ? cgroup_io_stat_parse(text, &u.io_read_bytes, &u.io_write_bytes)
                       : cgroup_blkio_bytes_parse(text, &u.io_read_bytes, &u.io_write_bytes);
        if (OPTIONAL(k) < 0)
                return k;

        k = read_u64(r, "memory", path, v2 ? "memory.current" : "memory.usage_in_bytes", &u.memory_current);
        if (OPTIONAL(k) < 0)
                return k;

        /* pids.current counts tasks (threads) of the whole subtree; without the pids controller
         * the processes in the cgroup itself are the best count there is. */
        k = read_u64(r, "pids", path, "pids.current", &u.n_tasks);
        if (k == -ENOENT) {
                _cleanup_free_ pid_t *pids = NULL;
                size_t n;

                k = cgroup_get_pids(r, path, &pids, &n);
                if (k >= 0)
                        u.n_tasks = n;
        }
        if (k < 0)
                return k;

        *ret = u;
        return 0;
}
