/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtonari's per-request domains (tonari/domain.h): a delegated cgroup v2 subtree prepared and
 * limited at configuration time, and one write(2) to an open file to move in or out.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "alloc-util.h"
#include "cgroup-util.h"
#include "fd-util.h"
#include "parse-util.h"
#include "path-util.h"
#include "string-util.h"
#include "tonari/domain.h"

#define _public_ __attribute__((visibility("default")))

/* Bytes. Big enough for cpu.stat and io.stat of a few dozen devices; longer text is -EBADMSG. */
#define COUNTER_BUF_SIZE 4096

struct TonariDomain {
        char *name;
        unsigned flags;
        int dir_fd;        /* root/<name> */
        int enter_fd;      /* root/<name>/cgroup.procs or cgroup.threads, O_WRONLY */
        int leave_fd;      /* root/_home/cgroup.procs or cgroup.threads, O_WRONLY */
        int root_fd;       /* root (root/_threads when threaded), for tonari_domain_remove() */
};

static const char *move_file(unsigned flags) {
        return flags & TONARI_DOMAIN_THREADED ? "cgroup.threads" : "cgroup.procs";
}

/* A write of a whole string to a cgroup file at fd; the kernel takes it in one go or refuses it. */
static int write_all_fd(int fd, const char *s) {
        size_t n = strlen(s);
        ssize_t k = write(fd, s, n);

        if (k < 0)
                return -errno;
        return (size_t) k == n ? 0 : -EIO;
}

static int write_at(int dir_fd, const char *file, const char *s) {
        _cleanup_close_ int fd = -EBADF;

        fd = openat(dir_fd, file, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return write_all_fd(fd, s);
}

static int read_at(int dir_fd, const char *file, char *buf, size_t size) {
        _cleanup_close_ int fd = -EBADF;
        ssize_t k;

        fd = openat(dir_fd, file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        k = pread(fd, buf, size - 1, 0);
        if (k < 0)
                return -errno;
        if ((size_t) k == size - 1)
                return -EBADMSG;
        buf[k] = 0;
        return 0;
}

static bool domain_name_is_valid(const char *name) {
        /* No '.': every cgroup v2 interface file has one, so a domain can never shadow one. */
        return name_is_valid(name, NAME_MAX_LEN) && name[0] != '_' && !strchr(name, '.') &&
                !strchr(name, ':');
}

/* Opens root, a cgroup2 directory: only v2 has cgroup.controllers (the unit tests' fake trees
 * make one). */
static int open_root(const char *root) {
        _cleanup_close_ int fd = -EBADF;

        if (isempty(root) || !path_is_normalized_absolute(root))
                return -EINVAL;
        fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (faccessat(fd, "cgroup.controllers", F_OK, 0) < 0)
                return errno == ENOENT ? -EMEDIUMTYPE : -errno;
        return TAKE_FD(fd);
}

static int make_child(int root_fd, const char *name, unsigned flags, bool create) {
        _cleanup_close_ int fd = -EBADF;
        char type[32];
        int r;

        if (create && mkdirat(root_fd, name, 0755) < 0 && errno != EEXIST)
                return -errno;
        fd = openat(root_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (flags & TONARI_DOMAIN_THREADED) {
                r = read_at(fd, "cgroup.type", type, sizeof(type));
                if (r < 0)
                        return r;
                if (!startswith(type, "threaded")) {
                        r = write_at(fd, "cgroup.type", "threaded");
                        if (r < 0)
                                return r;
                }
        }
        return TAKE_FD(fd);
}

/* Moves every process listed in root/cgroup.procs to home. */
static int move_processes(int root_fd, int home_fd) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_close_ int fd = -EBADF, to = -EBADF;
        char line[32];
        int r;

        fd = openat(root_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        f = fdopen(fd, "re");
        if (!f)
                return -errno;
        TAKE_FD(fd);
        to = openat(home_fd, "cgroup.procs", O_WRONLY | O_CLOEXEC);
        if (to < 0)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                strstrip(line);
                if (isempty(line))
                        continue;
                r = write_all_fd(to, line);
                /* A process that exited since the read: nothing to move. */
                if (r < 0 && r != -ESRCH)
                        return r;
        }
        return 0;
}

static int enable_controllers(int root_fd, unsigned flags) {
        static const char *const domain_controllers[] = { "cpu", "io", "pids" };
        static const char *const threaded_controllers[] = { "cpu", "pids" };
        const char *const *list = flags & TONARI_DOMAIN_THREADED ? threaded_controllers : domain_controllers;
        size_t n = flags & TONARI_DOMAIN_THREADED ? ELEMENTSOF(threaded_controllers) : ELEMENTSOF(domain_controllers);
        char available[512], enable[64] = "";
        int r;

        r = read_at(root_fd, "cgroup.controllers", available, sizeof(available));
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                bool found = false;
                char *save = NULL, copy[sizeof(available)];

                memcpy(copy, available, sizeof(copy));
                for (char *w = strtok_r(copy, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
                        if (streq(w, list[i]))
                                found = true;
                if (!found)
                        return -EOPNOTSUPP;
                strcat(enable, i > 0 ? " +" : "+");
                strcat(enable, list[i]);
        }
        /* One write: the kernel enables all or none. */
        return write_at(root_fd, "cgroup.subtree_control", enable);
}

/* The cgroup below root that holds _home and the domains: root itself, or root/_threads when
 * threaded. A threaded subtree needs a domain cgroup as its root, and root cannot be that one:
 * systemd starts a delegated unit's control processes (ExecReload=, ExecStop=) in a "domain"
 * child root/.control, which a threaded root refuses. */
static int open_base(int root_fd, unsigned flags, bool create) {
        int fd;

        if (!(flags & TONARI_DOMAIN_THREADED)) {
                fd = fcntl(root_fd, F_DUPFD_CLOEXEC, 3);
                return fd < 0 ? -errno : fd;
        }
        return make_child(root_fd, TONARI_DOMAIN_THREADS, 0, create);
}

_public_ int tonari_domain_prepare(const char *root, unsigned flags) {
        _cleanup_close_ int root_fd = -EBADF, base_fd = -EBADF, home_fd = -EBADF;
        int r;

        assert_return(!(flags & ~(unsigned) (TONARI_DOMAIN_THREADED | TONARI_DOMAIN_CREATE)), -EINVAL);

        root_fd = open_root(root);
        if (root_fd < 0)
                return root_fd;
        /* The root of the hierarchy (it alone has no cgroup.type) holds every process of the
         * system, kernel threads included: never move them. */
        if (faccessat(root_fd, "cgroup.type", F_OK, 0) < 0)
                return errno == ENOENT ? -EBUSY : -errno;
        base_fd = open_base(root_fd, flags, true);
        if (base_fd < 0)
                return base_fd;
        home_fd = make_child(base_fd, TONARI_DOMAIN_HOME, flags, true);
        if (home_fd < 0)
                return home_fd;
        r = move_processes(root_fd, home_fd);
        if (r < 0)
                return r;
        r = enable_controllers(root_fd, flags);
        if (r < 0 || !(flags & TONARI_DOMAIN_THREADED))
                return r;
        return enable_controllers(base_fd, flags);
}

_public_ int tonari_domain_open(const char *root, const char *name, unsigned flags, TonariDomain **ret) {
        _cleanup_close_ int root_fd = -EBADF, dir_fd = -EBADF, enter_fd = -EBADF, leave_fd = -EBADF;
        _cleanup_close_ int home_fd = -EBADF, base_fd = -EBADF;
        TonariDomain *d;

        assert_return(name && ret, -EINVAL);
        assert_return(!(flags & ~(unsigned) (TONARI_DOMAIN_THREADED | TONARI_DOMAIN_CREATE)), -EINVAL);
        if (!domain_name_is_valid(name))
                return -EINVAL;

        root_fd = open_root(root);
        if (root_fd < 0)
                return root_fd;
        base_fd = open_base(root_fd, flags, false);
        if (base_fd < 0)
                return base_fd;
        dir_fd = make_child(base_fd, name, flags, flags & TONARI_DOMAIN_CREATE);
        if (dir_fd < 0)
                return dir_fd;
        home_fd = openat(base_fd, TONARI_DOMAIN_HOME, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (home_fd < 0)
                return -errno;
        enter_fd = openat(dir_fd, move_file(flags), O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (enter_fd < 0)
                return -errno;
        leave_fd = openat(home_fd, move_file(flags), O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (leave_fd < 0)
                return -errno;

        d = new0(TonariDomain, 1);
        if (!d)
                return -ENOMEM;
        d->name = strdup(name);
        if (!d->name) {
                free(d);
                return -ENOMEM;
        }
        d->flags = flags;
        d->root_fd = TAKE_FD(base_fd);
        d->dir_fd = TAKE_FD(dir_fd);
        d->enter_fd = TAKE_FD(enter_fd);
        d->leave_fd = TAKE_FD(leave_fd);
        *ret = d;
        return 0;
}

_public_ TonariDomain *tonari_domain_close(TonariDomain *d) {
        if (!d)
                return NULL;
        safe_close(d->enter_fd);
        safe_close(d->leave_fd);
        safe_close(d->dir_fd);
        safe_close(d->root_fd);
        free(d->name);
        free(d);
        return NULL;
}

_public_ int tonari_domain_remove(TonariDomain *d) {
        int r = 0;

        assert_return(d, -EINVAL);
        if (unlinkat(d->root_fd, d->name, AT_REMOVEDIR) < 0)
                r = -errno;
        tonari_domain_close(d);
        return r;
}

/* "/dev/vda 30M" → the device number and bytes per second (UINT64_MAX for infinity). */
static int parse_device_bandwidth(const char *value, dev_t *ret_devnum, uint64_t *ret_bytes) {
        char path[256];
        const char *space;
        struct stat st;
        uint64_t bytes;
        int r;

        space = strchr(value, ' ');
        if (!space || space == value || (size_t) (space - value) >= sizeof(path))
                return -EINVAL;
        memcpy(path, value, space - value);
        path[space - value] = 0;
        space += strspn(space, " ");
        if (streq(space, "infinity"))
                bytes = UINT64_MAX;
        else {
                r = parse_size(space, 1000, &bytes);
                if (r < 0)
                        return r;
                if (bytes == 0)
                        return -EINVAL;
        }
        if (stat(path, &st) < 0)
                return errno == ENOENT ? -ENODEV : -errno;
        if (!S_ISBLK(st.st_mode))
                return -ENODEV;
        *ret_devnum = st.st_rdev;
        *ret_bytes = bytes;
        return 0;
}

_public_ int tonari_domain_set(TonariDomain *d, const char *property, const char *value) {
        _cleanup_free_ char *text = NULL;
        char buf[32];
        int r;

        assert_return(d && property && value, -EINVAL);

        if (streq(property, "CPUQuota")) {
                usec_t per_sec = USEC_INFINITY;

                if (!isempty(value) && !streq(value, "infinity")) {
                        int pm = parse_permyriad_unbounded(value);
                        if (pm < 0)
                                return pm;
                        if (pm == 0)
                                return -EINVAL;
                        per_sec = (usec_t) pm * 100; /* 1% = 10 ms of CPU per second */
                }
                r = cgroup_cpu_max_format(per_sec, USEC_INFINITY, &text);
                if (r < 0)
                        return r;
                return write_at(d->dir_fd, "cpu.max", text);
        }
        if (streq(property, "CPUWeight")) {
                uint64_t w = CGROUP_WEIGHT_DEFAULT;

                if (!isempty(value) && !streq(value, "infinity")) {
                        r = safe_atou64(value, &w);
                        if (r < 0)
                                return r;
                        if (w < CGROUP_WEIGHT_MIN || w > CGROUP_WEIGHT_MAX)
                                return -EINVAL;
                }
                snprintf(buf, sizeof(buf), "%" PRIu64, w);
                return write_at(d->dir_fd, "cpu.weight", buf);
        }
        if (streq(property, "TasksMax")) {
                uint64_t n = CGROUP_LIMIT_MAX;

                if (!isempty(value) && !streq(value, "infinity")) {
                        r = safe_atou64(value, &n);
                        if (r < 0)
                                return r;
                        if (n == 0)
                                return -EINVAL;
                }
                return write_at(d->dir_fd, "pids.max", cgroup_limit_format(n, buf, sizeof(buf)));
        }
        if (streq(property, "IOReadBandwidthMax") || streq(property, "IOWriteBandwidthMax")) {
                uint64_t limit[_CGROUP_IO_LIMIT_TYPE_MAX] = { CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX,
                                                              CGROUP_LIMIT_MAX, CGROUP_LIMIT_MAX };
                dev_t devnum = 0;
                uint64_t bytes = 0;

                if (d->flags & TONARI_DOMAIN_THREADED)
                        return -EOPNOTSUPP;
                r = parse_device_bandwidth(value, &devnum, &bytes);
                if (r < 0)
                        return r;
                limit[streq(property, "IOReadBandwidthMax") ? CGROUP_IO_RBPS : CGROUP_IO_WBPS] = bytes;
                r = cgroup_io_max_format_line(devnum, limit, &text);
                if (r < 0)
                        return r;
                return write_at(d->dir_fd, "io.max", text);
        }
        return -ENOENT;
}

_public_ int tonari_domain_enter(TonariDomain *d) {
        assert_return(d, -EINVAL);
        /* "0": the writer itself (its thread group for cgroup.procs, its thread for cgroup.threads);
         * no pid to format. */
        if (write(d->enter_fd, "0", 1) < 0)
                return -errno;
        return 0;
}

_public_ int tonari_domain_leave(TonariDomain *d) {
        assert_return(d, -EINVAL);
        if (write(d->leave_fd, "0", 1) < 0)
                return -errno;
        return 0;
}

_public_ int tonari_domain_leave_pid(TonariDomain *d, pid_t pid) {
        char buf[24];
        int n;

        assert_return(d, -EINVAL);
        assert_return(pid > 0, -EINVAL);
        n = snprintf(buf, sizeof(buf), "%d", (int) pid);
        if (write(d->leave_fd, buf, n) < 0)
                return -errno;
        return 0;
}

_public_ int tonari_domain_counters(TonariDomain *d, TonariDomainCounters *ret) {
        TonariDomainCounters c = {};
        char buf[COUNTER_BUF_SIZE];
        int r;

        assert_return(d && ret, -EINVAL);

        r = read_at(d->dir_fd, "cpu.stat", buf, sizeof(buf));
        if (r < 0 && r != -ENOENT)
                return r;
        if (r >= 0 && cgroup_cpu_stat_parse(buf, "usage_usec", &c.cpu_usec) < 0)
                return -EBADMSG;
        r = read_at(d->dir_fd, "io.stat", buf, sizeof(buf));
        if (r < 0 && r != -ENOENT)
                return r;
        if (r >= 0 && cgroup_io_stat_parse(buf, &c.io_read_bytes, &c.io_write_bytes) < 0)
                return -EBADMSG;
        r = read_at(d->dir_fd, "pids.current", buf, sizeof(buf));
        if (r < 0 && r != -ENOENT)
                return r;
        if (r >= 0 && safe_atou64(strstrip(buf), &c.tasks) < 0)
                return -EBADMSG;
        *ret = c;
        return 0;
}

_public_ const char *tonari_domain_name(TonariDomain *d) {
        return d ? d->name : NULL;
}
