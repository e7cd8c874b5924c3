/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

/* mkdir -p relative to dir_fd: every component of path, existing ones accepted (even if they are
 * symlinks to directories: callers pass paths they have validated below a directory they own). */
int mkdirat_p(int dir_fd, const char *path, mode_t mode);

/* The same for every component but the last: the parents of a file about to be created. */
int mkdirat_parents(int dir_fd, const char *path, mode_t mode);
