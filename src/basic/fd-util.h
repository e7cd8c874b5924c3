/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <dirent.h>
#include <stdio.h>

#include "macro.h"

/* Closes fd if valid, keeps errno, returns -EBADF so that "fd = safe_close(fd);" resets it. */
int safe_close(int fd);

/*
 * A DIR stream over the directory dir_fd refers to, read from its start, leaving dir_fd itself open
 * (the stream owns a duplicate): for walking a directory the caller keeps a descriptor of.
 */
int opendir_fd(int dir_fd, DIR **ret);
/* A DIR stream over the directory name below dir_fd, not following a symlink there. */
int opendirat(int dir_fd, const char *name, DIR **ret);

static inline void closep(int *fd) {
        (void) safe_close(*fd);
}

static inline FILE *safe_fclose(FILE *f) {
        if (f)
                (void) fclose(f);
        return NULL;
}

static inline void fclosep(FILE **f) {
        (void) safe_fclose(*f);
}

static inline void closedirp(DIR **d) {
        if (*d)
                (void) closedir(*d);
}

#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)
