/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdio.h>

#include "format-util.h"
#include "macro.h"

char *format_bytes(char *buf, size_t size, uint64_t bytes) {
        static const char suffixes[] = "KMGTPE";

        if (bytes == UINT64_MAX) {
                (void) snprintf(buf, size, "infinity");
                return buf;
        }
        if (bytes < 1024) {
                (void) snprintf(buf, size, "%" PRIu64 "B", bytes);
                return buf;
        }
        for (size_t i = ELEMENTSOF(suffixes) - 1; i-- > 0;) {
                uint64_t factor = UINT64_C(1) << (10 * (i + 1));
                if (bytes >= factor) {
                        /* One decimal, rounded down, computed in integers to stay exact. */
                        uint64_t whole = bytes / factor, tenths = (bytes % factor) * 10 / factor;
                        (void) snprintf(buf, size, "%" PRIu64 ".%" PRIu64 "%c", whole, tenths, suffixes[i]);
                        return buf;
                }
        }
        return buf; /* not reached */
}
