/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "fd-util.h"

int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                /* Linux releases the descriptor even when close() reports EINTR: never retry. */
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}

static int opendir_take(int fd, DIR **ret) {
        DIR *d = fdopendir(fd);

        if (!d) {
                int r = -errno;

                safe_close(fd);
                return r;
        }
        *ret = d;
        return 0;
}

int opendir_fd(int dir_fd, DIR **ret) {
        DIR *d = NULL;
        int fd, r;

        fd = fcntl(dir_fd, F_DUPFD_CLOEXEC, 3);
        if (fd < 0)
                return -errno;
        r = opendir_take(fd, &d);
        if (r < 0)
                return r;
        /* The duplicate shares the file offset with dir_fd, which may have been read before. */
        rewinddir(d);
        *ret = d;
        return 0;
}

int opendirat(int dir_fd, const char *name, DIR **ret) {
        int fd;

        fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return opendir_take(fd, ret);
}
