/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"

int read_full_fd(int fd, size_t max, char **ret, size_t *ret_size) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, cap = 4096;
        struct stat st;

        /* Files in /proc and /sys report size 0: the size is only a hint, EOF ends the read. */
        if (fstat(fd, &st) >= 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
                if ((uint64_t) st.st_size > max)
                        return -E2BIG;
                cap = (size_t) st.st_size + 1;
        }
        buf = new(char, cap);
        if (!buf)
                return -ENOMEM;

        for (;;) {
                ssize_t n;

                if (size + 1 >= cap) {
                        char *b;

                        if (cap > max)
                                return -E2BIG;
                        b = realloc(buf, cap * 2);
                        if (!b)
                                return -ENOMEM;
                        buf = b;
                        cap *= 2;
                }
                n = pread(fd, buf + size, cap - size - 1, (off_t) size);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (n == 0)
                        break;
                size += (size_t) n;
                if (size > max)
                        return -E2BIG;
        }

        buf[size] = '\0';
        if (ret_size)
                *ret_size = size;
        *ret = TAKE_PTR(buf);
        return 0;
}

int read_full_file(const char *path, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = -EBADF;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;
        return read_full_fd(fd, READ_FULL_FILE_MAX, ret, ret_size);
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

int write_file_atomic(const char *path, const char *text) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t left = strlen(text);
        int r = 0;

        tmp = malloc(strlen(path) + 5);
        if (!tmp)
                return -ENOMEM;
        strcpy(stpcpy(tmp, path), ".tmp");
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        for (const char *p = text; left > 0;) {
                ssize_t n = write(fd, p, left);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                p += n;
                left -= (size_t) n;
        }
        if (r >= 0 && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}
