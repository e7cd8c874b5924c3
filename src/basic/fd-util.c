/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
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
