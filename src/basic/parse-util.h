/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

/*
 * Parsers for user-supplied values. All are strict: no leading or trailing garbage, no silent
 * truncation. They return 0 on success and -EINVAL (syntax) or -ERANGE (out of range) otherwise,
 * and write *ret only on success. Syntax follows systemd's unit-file conventions so operators can
 * reuse what they know from systemd.resource-control(5).
 */

/* Decimal digits only: no sign, no whitespace, no base prefix. */
int safe_atou64(const char *s, uint64_t *ret);
int safe_atou32(const char *s, uint32_t *ret);
int safe_atou(const char *s, unsigned *ret);
/* Optional leading '-', then decimal digits. */
int safe_atoi64(const char *s, int64_t *ret);
int safe_atoi(const char *s, int *ret);

/* yes/no, true/false, on/off, y/n, t/f, 1/0 (case-insensitive); returns 1, 0 or -EINVAL. */
int parse_boolean(const char *s);

/*
 * Sizes: "512", "5M", "1.5G", "1G 512M" (components are summed). base is 1024 (K, M, G, T, P, E
 * are binary multiples, "B" means bytes) or 1000 (same letters, decimal multiples).
 */
int parse_size(const char *s, uint64_t base, uint64_t *ret);

/* "20%" → 20. parse_percent() rejects values above 100, the _unbounded form does not. */
int parse_percent(const char *s);
int parse_percent_unbounded(const char *s);
/* "20%" → 2000, "12.34%" → 1234, "150%" → 15000 (at most two decimals). Returns ≥ 0 or -errno. */
int parse_permyriad_unbounded(const char *s);

/*
 * Index lists as in AllowedCPUs=/AllowedMemoryNodes= and /sys/.../online: "0-3,5 7". Separators
 * are ',' and whitespace; ranges are inclusive. Indexes above max_index are -ERANGE. The result is
 * a bitmask in systemd's "ay" layout: bit (i % 8) of byte (i / 8) is index i. An empty string gives
 * an empty mask (ret_mask NULL, ret_size 0).
 */
int parse_index_list(const char *s, unsigned max_index, uint8_t **ret_mask, size_t *ret_size);
/* The inverse of parse_index_list(): "0-3,5"; "" for an empty mask. NULL on allocation failure. */
char *format_index_list(const uint8_t *mask, size_t size);
/* Number of indexes set in a mask. */
unsigned index_list_count(const uint8_t *mask, size_t size) _pure_;

/* The major and minor number of a kernel release as uname(2) gives it ("6.1.0-27-amd64", "6.18.0"):
 * the rest after the second number is the distribution's, and ignored. */
int parse_kernel_release(const char *s, unsigned *ret_major, unsigned *ret_minor);
