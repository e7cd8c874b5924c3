/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "alloc-util.h"
#include "mkdir.h"

int mkdirat_p(int dir_fd, const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);

        if (!p)
                return -ENOMEM;
        for (char *slash = p;; slash++) {
                slash = strchr(slash, '/');
                if (slash)
                        *slash = 0;
                if (p[0] && mkdirat(dir_fd, p, mode) < 0 && errno != EEXIST)
                        return -errno;
                if (!slash)
                        return 0;
                *slash = '/';
        }
}

int mkdirat_parents(int dir_fd, const char *path, mode_t mode) {
        _cleanup_free_ char *p = strdup(path);
        char *last;

        if (!p)
                return -ENOMEM;
        last = strrchr(p, '/');
        if (!last)
                return 0;
        *last = 0;
        return mkdirat_p(dir_fd, p, mode);
}
