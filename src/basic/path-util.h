/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "macro.h"

/*
 * Validation of names and paths that come from users (D-Bus callers, config files, the command
 * line). Everything that reaches a filesystem path or a unit name goes through one of these.
 */

/* Longest tenant-visible name (slice, image, ...); short enough to embed in unit and cgroup names. */
#define NAME_MAX_LEN 64

/*
 * A name users give to a tonari object: 1..max_len bytes of [A-Za-z0-9_.:@-], not starting with
 * '.' or '-' (so never ".", "..", a hidden file or an option), no '/', no control characters, no
 * whitespace, ASCII only.
 */
bool name_is_valid(const char *s, size_t max_len) _pure_;

/* One path component: non-empty, not "." or "..", no '/', no control characters, ≤ NAME_MAX. */
bool filename_is_valid(const char *s) _pure_;

/*
 * An absolute path without ".", ".." or empty components (no "//"), no trailing '/' unless it is
 * "/", no control characters, shorter than PATH_MAX. Symlinks are the caller's business.
 */
bool path_is_normalized_absolute(const char *s) _pure_;

/*
 * A relative path as found in archives, after the caller stripped any leading "./": non-empty, no
 * leading or trailing '/', no ".", ".." or empty components, no control characters, shorter than
 * PATH_MAX. Joined to a directory it names something below that directory (symlinks aside).
 */
bool path_is_normalized_relative(const char *s) _pure_;

/* True if path is prefix or lies below it, comparing whole components ("/a/bc" is not below "/a/b"). */
bool path_equal_or_below(const char *path, const char *prefix) _pure_;

/* Joins with exactly one '/' between the parts; NULL on allocation failure. */
char *path_join(const char *a, const char *b);
