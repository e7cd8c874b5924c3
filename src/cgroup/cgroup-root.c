/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The CGroupRoot and the primitives under it: which hierarchies a root directory holds, cgroup
 * paths, and reading and writing one interface file or listing one cgroup's directory. Every other
 * file of src/cgroup reaches the file system through these.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <unistd.h>

#include "alloc-util.h"
#include "cgroup-internal.h"
#include "fd-util.h"
#include "fileio.h"
#include "parse-util.h"
#include "path-util.h"
#include "string-util.h"
#include "strv.h"

/* The v1 hierarchies tonari uses, in the order they are created, attached and removed. */
static const char *const v1_controllers[] = { "cpu", "cpuacct", "cpuset", "blkio", "memory", "pids" };

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
                return errno == ENOENT || errno == ENOTDIR ? 0 : -errno;
        return 1;
}

/* 1 if the (first) hierarchy is a kernel cgroup or cgroup2 file system. */
static int root_is_kernel_cgroupfs(const CGroupRoot *r) {
        _cleanup_free_ char *h = path_join(r->dir, r->hierarchies[0]);
        struct statfs sfs;

        if (!h)
                return -ENOMEM;
        if (statfs(h, &sfs) < 0)
                return -errno;
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
                return -errno;
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

const char *cgroup_primary_hierarchy(const CGroupRoot *r) {
        if (r->version == 1 && strv_contains(r->hierarchies, "cpu"))
                return "cpu";
        return r->hierarchies[0];
}

int cgroup_path_check(const char *path) {
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

int cgroup_path_check_not_root(const char *path) {
        int k;

        k = cgroup_path_check(path);
        if (k < 0)
                return k;
        return path[0] == '\0' ? -EINVAL : 0;
}

int cgroup_fs_path(const CGroupRoot *r, const char *controller, const char *path, const char *file,
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
                return -errno;

        /* The kernel parses each write() as one value: never split it. Errors (EINVAL: value
         * refused, ESRCH: no such process, EBUSY, ENOSPC, ...) are the kernel's answer. */
        do
                n = write(fd, buf, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if ((size_t) n != len)
                return -EIO;
        return 0;
}

int cgroup_read_value(CGroupRoot *r, const char *controller, const char *path, const char *file, char **ret) {
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

int cgroup_read_u64(CGroupRoot *r, const char *controller, const char *path, const char *file,
                    uint64_t *ret) {
        _cleanup_free_ char *t = NULL;
        int k;

        k = cgroup_read_value(r, controller, path, file, &t);
        if (k < 0)
                return k;
        return safe_atou64(t, ret) < 0 ? -EINVAL : 0;
}

int cgroup_read_i64(CGroupRoot *r, const char *controller, const char *path, const char *file, int64_t *ret) {
        _cleanup_free_ char *t = NULL;
        int k;

        k = cgroup_read_value(r, controller, path, file, &t);
        if (k < 0)
                return k;
        return safe_atoi64(t, ret) < 0 ? -EINVAL : 0;
}

int cgroup_write_u64(CGroupRoot *r, const char *controller, const char *path, const char *file, uint64_t v) {
        char buf[STRLEN("18446744073709551615") + 1];

        (void) snprintf(buf, sizeof(buf), "%" PRIu64, v);
        return cgroup_write_file(r, controller, path, file, buf);
}

int cgroup_write_i64(CGroupRoot *r, const char *controller, const char *path, const char *file, int64_t v) {
        char buf[STRLEN("-9223372036854775808") + 1];

        (void) snprintf(buf, sizeof(buf), "%" PRIi64, v);
        return cgroup_write_file(r, controller, path, file, buf);
}

char *cgroup_path_parent(const char *path) {
        const char *slash = strrchr(path, '/');

        return strndup(path, slash ? (size_t) (slash - path) : 0);
}

int cgroup_dir_exists(CGroupRoot *r, const char *h, const char *path) {
        _cleanup_free_ char *p = NULL;
        struct stat st;
        int k;

        k = cgroup_fs_path(r, h, path, NULL, &p);
        if (k < 0)
                return k;
        if (stat(p, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        return S_ISDIR(st.st_mode) ? 1 : -ENOTDIR;
}

int cgroup_exists(CGroupRoot *r, const char *path) {
        int k;

        assert_return(r, -EINVAL);

        /* On v1 a cgroup exists if it exists in any hierarchy: a half-created one must be found so
         * that cgroup_create() can complete it and cgroup_remove() can remove it. */
        STRV_FOREACH(h, r->hierarchies) {
                k = cgroup_dir_exists(r, *h, path);
                if (k != 0)
                        return k;
        }
        return 0;
}

int cgroup_must_exist(CGroupRoot *r, const char *path) {
        int k;

        k = cgroup_exists(r, path);
        if (k < 0)
                return k;
        return k > 0 ? 0 : -ENOENT;
}

int cgroup_list_subdirs(CGroupRoot *r, const char *h, const char *path, char ***ret) {
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
                return -errno;

        l = new0(char *, 1);
        if (!l)
                return -ENOMEM;
        for (;;) {
                struct stat st;

                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return -errno;
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

        return cgroup_list_subdirs(r, cgroup_primary_hierarchy(r), path, ret);
}

static int pid_compare(const void *a, const void *b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return x < y ? -1 : x > y;
}

int cgroup_read_pids(CGroupRoot *r, const char *h, const char *path, pid_t **ret, size_t *ret_n) {
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

        return cgroup_read_pids(r, cgroup_primary_hierarchy(r), path, ret, ret_n);
}
