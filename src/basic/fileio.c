/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"

int read_full_file(const char *path, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, cap = 4096;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return negative_errno();

        buf = new(char, cap);
        if (!buf)
                return -ENOMEM;

        /* Files in /proc and /sys report size 0; read until EOF instead of trusting fstat(). */
        for (;;) {
                ssize_t n;

                if (size + 1 >= cap) {
                        char *b;
                        if (cap >= READ_FULL_FILE_MAX)
                                return -E2BIG;
                        b = realloc(buf, cap * 2);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                        cap *= 2;
                }
                n = read(fd, buf + size, cap - size - 1);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return negative_errno();
                }
                if (n == 0)
                        break;
                size += (size_t) n;
        }

        buf[size] = '\0';
        if (ret_size)
                *ret_size = size;
        *ret = TAKE_PTR(buf);
        return 0;
}

int read_one_line_file(const char *path, char **ret) {
        char *buf;
        int r;

        r = read_full_file(path, &buf, NULL);
        if (r < 0)
                return r;
        buf[strcspn(buf, "\n")] = '\0';
        *ret = buf;
        return 0;
}
