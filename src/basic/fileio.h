/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/* Files larger than this are refused by read_full_file(): kernel interface files are tiny. */
#define READ_FULL_FILE_MAX (4U * 1024U * 1024U)

/* Reads all of fd from offset 0 into a NUL-terminated buffer. -E2BIG above max bytes. */
int read_full_fd(int fd, size_t max, char **ret, size_t *ret_size);
/* Reads a whole file into a NUL-terminated buffer. -E2BIG above READ_FULL_FILE_MAX. */
int read_full_file(const char *path, char **ret, size_t *ret_size);
/* Reads the first line, without its newline. */
int read_one_line_file(const char *path, char **ret);
/*
 * Replaces path with text atomically: written to path.tmp, flushed and renamed over path, so a
 * crash leaves the old file or the new one, never a part. On failure path is untouched and
 * path.tmp removed.
 */
int write_file_atomic(const char *path, const char *text);
