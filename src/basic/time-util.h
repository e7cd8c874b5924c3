/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>
#include <time.h>

#include "macro.h"

/* The one time unit in tonari: microseconds. Convert once where data enters. */
typedef uint64_t usec_t;

#define USEC_INFINITY ((usec_t) UINT64_MAX)
#define NSEC_PER_USEC ((uint64_t) 1000ULL)
#define USEC_PER_MSEC ((usec_t) 1000ULL)
#define USEC_PER_SEC ((usec_t) 1000000ULL)
#define USEC_PER_MINUTE ((usec_t) (60ULL * USEC_PER_SEC))
#define USEC_PER_HOUR ((usec_t) (60ULL * USEC_PER_MINUTE))
#define USEC_PER_DAY ((usec_t) (24ULL * USEC_PER_HOUR))
#define USEC_PER_WEEK ((usec_t) (7ULL * USEC_PER_DAY))
#define USEC_PER_MONTH ((usec_t) (2629800ULL * USEC_PER_SEC))
#define USEC_PER_YEAR ((usec_t) (31557600ULL * USEC_PER_SEC))

/* Enough for any output of format_timespan() and format_timestamp(). */
#define FORMAT_TIMESPAN_MAX 64
#define FORMAT_TIMESTAMP_MAX 64

usec_t now(clockid_t clock);
usec_t timespec_load(const struct timespec *ts) _pure_;

/*
 * "100ms", "5s", "1min 30s", "1.5h", "infinity". A bare number is in default_unit (USEC_PER_SEC for
 * systemd's *Sec= settings, 1 for *USec= settings). Units: us usec µs, ms msec, s sec second(s),
 * m min minute(s), h hr hour(s), d day(s), w week(s), M month(s), y year(s).
 */
int parse_time(const char *s, usec_t default_unit, usec_t *ret);
static inline int parse_sec(const char *s, usec_t *ret) {
        return parse_time(s, USEC_PER_SEC, ret);
}

/* "1min 30s", "100ms", "infinity"; components below accuracy are dropped (rounded down). */
char *format_timespan(char *buf, size_t size, usec_t t, usec_t accuracy);
/* Local time as "Sun 2026-11-22 10:00:00 UTC"; "n/a" for 0 or USEC_INFINITY. */
char *format_timestamp(char *buf, size_t size, usec_t realtime_usec);
