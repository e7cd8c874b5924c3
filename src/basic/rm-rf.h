/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Removes everything below the directory dir_fd refers to, never following symbolic links and
 * never leaving the file system dir_fd is on (a mount point below is left alone, with -EXDEV).
 * The directory itself stays. Returns 0, or the first error met while removing the rest.
 */
int rm_rf_children(int dir_fd);

/* Removes the entry name below dir_fd and, for a directory, everything in it. 0 if absent. */
int rm_rf_at(int dir_fd, const char *name);
