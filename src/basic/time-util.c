/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "string-util.h"
#include "time-util.h"

usec_t now(clockid_t clock) {
        struct timespec ts;

        if (clock_gettime(clock, &ts) < 0)
                return 0;
        return timespec_load(&ts);
}

usec_t timespec_load(const struct timespec *ts) {
        if (ts->tv_sec < 0 || ts->tv_nsec < 0)
                return 0;
        if ((uint64_t) ts->tv_sec > (UINT64_MAX - (uint64_t) ts->tv_nsec / NSEC_PER_USEC) / USEC_PER_SEC)
                return USEC_INFINITY;
        return (usec_t) ts->tv_sec * USEC_PER_SEC + (usec_t) ts->tv_nsec / NSEC_PER_USEC;
}

static const struct {
        const char *suffix;
        usec_t usec;
} time_units[] = {
        /* Longer spellings first so that "ms" is not read as "m" + garbage. */
        { "seconds", USEC_PER_SEC },   { "second", USEC_PER_SEC },    { "sec", USEC_PER_SEC },
        { "s", USEC_PER_SEC },         { "minutes", USEC_PER_MINUTE }, { "minute", USEC_PER_MINUTE },
        { "min", USEC_PER_MINUTE },    { "months", USEC_PER_MONTH },  { "month", USEC_PER_MONTH },
        { "M", USEC_PER_MONTH },       { "msec", USEC_PER_MSEC },     { "ms", USEC_PER_MSEC },
        { "m", USEC_PER_MINUTE },      { "hours", USEC_PER_HOUR },    { "hour", USEC_PER_HOUR },
        { "hr", USEC_PER_HOUR },       { "h", USEC_PER_HOUR },        { "days", USEC_PER_DAY },
        { "day", USEC_PER_DAY },       { "d", USEC_PER_DAY },         { "weeks", USEC_PER_WEEK },
        { "week", USEC_PER_WEEK },     { "w", USEC_PER_WEEK },        { "years", USEC_PER_YEAR },
        { "year", USEC_PER_YEAR },     { "y", USEC_PER_YEAR },        { "usec", 1 },
        { "us", 1 },                   { "\xc2\xb5s", 1 },            { "\xce\xbcs", 1 },
};

int parse_time(const char *s, usec_t default_unit, usec_t *ret) {
        const char *p = s;
        usec_t sum = 0;
        bool any = false;

        if (!s || default_unit == 0)
                return -EINVAL;

        while (isspace((unsigned char) *p))
                p++;
        if (streq(p, "infinity")) {
                if (ret)
                        *ret = USEC_INFINITY;
                return 0;
        }

        for (;;) {
                uint64_t v = 0, frac = 0, div = 1, unit = default_unit, whole, part;
                const char *e;

                while (isspace((unsigned char) *p))
                        p++;
                if (*p == '\0')
                        break;
                if (!isdigit((unsigned char) *p))
                        return -EINVAL;

                for (; isdigit((unsigned char) *p); p++) {
                        if (v > (UINT64_MAX - (uint64_t) (*p - '0')) / 10)
                                return -ERANGE;
                        v = v * 10 + (uint64_t) (*p - '0');
                }
                if (*p == '.') {
                        p++;
                        if (!isdigit((unsigned char) *p))
                                return -EINVAL;
                        for (; isdigit((unsigned char) *p); p++)
                                if (div < UINT64_C(1000000000000000000)) {
                                        frac = frac * 10 + (uint64_t) (*p - '0');
                                        div *= 10;
                                }
                }

                e = p;
                while (isspace((unsigned char) *e))
                        e++;
                if (*e != '\0' && !isdigit((unsigned char) *e)) {
                        bool found = false;
                        FOREACH_ELEMENT(u, time_units) {
                                const char *rest = startswith(e, u->suffix);
                                /* A unit must end the token: "5mx" is not "5m" + "x". */
                                if (rest && (*rest == '\0' || isspace((unsigned char) *rest) ||
                                             isdigit((unsigned char) *rest))) {
                                        unit = u->usec;
                                        p = rest;
                                        found = true;
                                        break;
                                }
                        }
                        if (!found)
                                return -EINVAL;
                } else
                        p = e;

                if (v > UINT64_MAX / unit)
                        return -ERANGE;
                whole = v * unit;
                part = (uint64_t) (((unsigned __int128) frac * unit) / div);
                if (whole > UINT64_MAX - part || sum > UINT64_MAX - (whole + part))
                        return -ERANGE;
                sum += whole + part;
                if (sum == USEC_INFINITY)
                        return -ERANGE; /* reserved for "infinity" */
                any = true;
        }

        if (!any)
                return -EINVAL;
        if (ret)
                *ret = sum;
        return 0;
}

char *format_timespan(char *buf, size_t size, usec_t t, usec_t accuracy) {
        static const struct {
                const char *suffix;
                usec_t usec;
        } table[] = {
                { "y", USEC_PER_YEAR },   { "month", USEC_PER_MONTH }, { "w", USEC_PER_WEEK },
                { "d", USEC_PER_DAY },    { "h", USEC_PER_HOUR },      { "min", USEC_PER_MINUTE },
                { "s", USEC_PER_SEC },    { "ms", USEC_PER_MSEC },     { "us", 1 },
        };
        size_t len = 0;

        if (size == 0)
                return buf;
        buf[0] = '\0';
        if (t == USEC_INFINITY) {
                (void) snprintf(buf, size, "infinity");
                return buf;
        }
        if (accuracy == 0)
                accuracy = 1;
        if (t < accuracy || t == 0) {
                (void) snprintf(buf, size, "0");
                return buf;
        }

        FOREACH_ELEMENT(u, table) {
                usec_t n;
                int k;

                if (t < accuracy)
                        break;
                if (t < u->usec)
                        continue;
                if (u->usec < accuracy)
                        break;
                n = t / u->usec;
                t -= n * u->usec;
                k = snprintf(buf + len, size - len, "%s%" PRIu64 "%s", len > 0 ? " " : "", n, u->suffix);
                if (k < 0 || (size_t) k >= size - len)
                        break;
                len += (size_t) k;
        }
        if (len == 0)
                (void) snprintf(buf, size, "0");
        return buf;
}

char *format_timestamp(char *buf, size_t size, usec_t realtime_usec) {
        time_t sec = (time_t) (realtime_usec / USEC_PER_SEC);
        struct tm tm;

        if (realtime_usec == 0 || realtime_usec == USEC_INFINITY || !localtime_r(&sec, &tm) ||
            strftime(buf, size, "%a %Y-%m-%d %H:%M:%S %Z", &tm) == 0)
                (void) snprintf(buf, size, "n/a");
        return buf;
}
