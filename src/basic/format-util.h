/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define FORMAT_BYTES_MAX 16

/* Binary multiples as systemctl prints them: "512B", "5.1K", "3.0G"; "infinity" for UINT64_MAX. */
char *format_bytes(char *buf, size_t size, uint64_t bytes);
