/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fd-util.h"
#include "rm-rf.h"

static int rm_rf_children_dev(int dir_fd, dev_t dev);

static int rm_rf_entry(int dir_fd, const char *name, dev_t dev) {
        struct stat st;

        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;

        if (S_ISDIR(st.st_mode)) {
                _cleanup_close_ int fd = -EBADF;
                int r;

                if (st.st_dev != dev)
                        return -EXDEV;
                fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                r = rm_rf_children_dev(fd, dev);
                if (r < 0)
                        return r;
                if (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                        return -errno;
                return 0;
        }

        if (unlinkat(dir_fd, name, 0) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

static int rm_rf_children_dev(int dir_fd, dev_t dev) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        int ret;

        ret = opendir_fd(dir_fd, &d);
        if (ret < 0)
                return ret;

        while ((errno = 0, de = readdir(d))) {
                int r;

                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                        continue;
                r = rm_rf_entry(dirfd(d), de->d_name, dev);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        if (errno != 0 && ret == 0)
                ret = -errno;
        return ret;
}

int rm_rf_children(int dir_fd) {
        struct stat st;

        if (fstat(dir_fd, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        return rm_rf_children_dev(dir_fd, st.st_dev);
}

int rm_rf_at(int dir_fd, const char *name) {
        struct stat st;

        if (fstat(dir_fd, &st) < 0)
                return -errno;
        return rm_rf_entry(dir_fd, name, st.st_dev);
}
