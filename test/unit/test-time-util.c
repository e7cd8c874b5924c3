/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "tests.h"
#include "time-util.h"

static usec_t t(const char *s, usec_t default_unit) {
        usec_t v = 12345;
        int r = parse_time(s, default_unit, &v);
        ck_assert_msg(r == 0, "parse_time('%s') failed: %s", s, strerror(-r));
        return v;
}

START_TEST(test_parse_time) {
        ck_assert_uint_eq(t("100ms", USEC_PER_SEC), 100 * USEC_PER_MSEC);
        ck_assert_uint_eq(t("5s", USEC_PER_SEC), 5 * USEC_PER_SEC);
        ck_assert_uint_eq(t("5", USEC_PER_SEC), 5 * USEC_PER_SEC);
        ck_assert_uint_eq(t("5", 1), 5);
        ck_assert_uint_eq(t("1min 30s", USEC_PER_SEC), 90 * USEC_PER_SEC);
        ck_assert_uint_eq(t("1min30s", USEC_PER_SEC), 90 * USEC_PER_SEC);
        ck_assert_uint_eq(t("5 min", USEC_PER_SEC), 5 * USEC_PER_MINUTE);
        ck_assert_uint_eq(t("1.5s", USEC_PER_SEC), 1500 * USEC_PER_MSEC);
        ck_assert_uint_eq(t("0.5ms", USEC_PER_SEC), 500);
        ck_assert_uint_eq(t("2h", USEC_PER_SEC), 2 * USEC_PER_HOUR);
        ck_assert_uint_eq(t("1d", USEC_PER_SEC), USEC_PER_DAY);
        ck_assert_uint_eq(t("1w", USEC_PER_SEC), USEC_PER_WEEK);
        ck_assert_uint_eq(t("1M", USEC_PER_SEC), USEC_PER_MONTH);
        ck_assert_uint_eq(t("1m", USEC_PER_SEC), USEC_PER_MINUTE);
        ck_assert_uint_eq(t("1y", USEC_PER_SEC), USEC_PER_YEAR);
        ck_assert_uint_eq(t("20us", USEC_PER_SEC), 20);
        ck_assert_uint_eq(t("20\xc2\xb5s", USEC_PER_SEC), 20);
        ck_assert_uint_eq(t("20usec", USEC_PER_SEC), 20);
        ck_assert_uint_eq(t("3 msec", USEC_PER_SEC), 3000);
        ck_assert_uint_eq(t("1hr 1minute 1sec", USEC_PER_SEC), USEC_PER_HOUR + USEC_PER_MINUTE + USEC_PER_SEC);
        ck_assert_uint_eq(t("0", USEC_PER_SEC), 0);
        ck_assert(t("infinity", USEC_PER_SEC) == USEC_INFINITY);
        ck_assert(t(" infinity", USEC_PER_SEC) == USEC_INFINITY);
}
END_TEST

START_TEST(test_parse_time_invalid) {
        usec_t v = 7;
        const char *bad[] = { "", " ", "-1s", "+1s", "5x", "5mx", "5 sx", "s", "1.s", ".5s", "5s s", "infinity s",
                              "0x10", "1e3", "5secs", "1,5s", "5\x01s", "nan" };

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(parse_time(bad[i], USEC_PER_SEC, &v) == -EINVAL, "'%s' accepted", bad[i]);
        ck_assert_int_eq(parse_time("18446744073709551616us", USEC_PER_SEC, &v), -ERANGE);
        ck_assert_int_eq(parse_time("999999999999y", USEC_PER_SEC, &v), -ERANGE);
        ck_assert_int_eq(parse_time("18446744073709551615us", USEC_PER_SEC, &v), -ERANGE); /* = infinity */
        ck_assert_int_eq(parse_time("5s", 0, &v), -EINVAL);
        ck_assert_uint_eq(v, 7);
}
END_TEST

START_TEST(test_format_timespan) {
        char buf[FORMAT_TIMESPAN_MAX];

        ck_assert_str_eq(format_timespan(buf, sizeof(buf), 0, 1), "0");
        ck_assert_str_eq(format_timespan(buf, sizeof(buf), 100 * USEC_PER_MSEC, 1), "100ms");
        ck_assert_str_eq(format_timespan(buf, sizeof(buf), 90 * USEC_PER_SEC, 1), "1min 30s");
        ck_assert_str_eq(format_timespan(buf, sizeof(buf), 90 * USEC_PER_SEC + 5, USEC_PER_SEC), "1min 30s");
        ck_assert_str_eq(format_timespan(buf, sizeof(buf), 1500, 1), "1ms 500us");
        ck_assert_str_eq(format_timespan(buf, sizeof(buf), 999, USEC_PER_MSEC), "0");
        ck_assert_str_eq(format_timespan(buf, sizeof(buf), USEC_INFINITY, 1), "infinity");
        ck_assert_str_eq(format_timespan(buf, sizeof(buf), USEC_PER_DAY + USEC_PER_HOUR, USEC_PER_SEC), "1d 1h");

        /* Round trip: what we print, we parse back. */
        usec_t samples[] = { 1, 999, 1000, 1234567, 90 * USEC_PER_SEC, 3 * USEC_PER_WEEK + 17, 5 * USEC_PER_YEAR };
        for (size_t i = 0; i < sizeof(samples) / sizeof(samples[0]); i++) {
                usec_t back;
                format_timespan(buf, sizeof(buf), samples[i], 1);
                ck_assert_int_eq(parse_time(buf, USEC_PER_SEC, &back), 0);
                ck_assert_msg(back == samples[i], "'%s' parsed back as %lu", buf, (unsigned long) back);
        }

        /* A buffer too small truncates instead of overflowing. */
        char tiny[4];
        format_timespan(tiny, sizeof(tiny), 90 * USEC_PER_SEC, 1);
        ck_assert_uint_lt(strlen(tiny), sizeof(tiny));
}
END_TEST

START_TEST(test_timestamp) {
        char buf[FORMAT_TIMESTAMP_MAX];
        struct timespec ts = { .tv_sec = 3, .tv_nsec = 999 };

        ck_assert_uint_eq(timespec_load(&ts), 3 * USEC_PER_SEC);
        ck_assert_uint_gt(now(CLOCK_MONOTONIC), 0);
        ck_assert_str_eq(format_timestamp(buf, sizeof(buf), 0), "n/a");
        ck_assert_str_eq(format_timestamp(buf, sizeof(buf), USEC_INFINITY), "n/a");
        setenv("TZ", "UTC", 1);
        tzset();
        ck_assert_str_eq(format_timestamp(buf, sizeof(buf), 1795308754190359ULL), "Sun 2026-11-22 00:52:34 UTC");
}
END_TEST

TEST_SUITE("time-util", test_parse_time, test_parse_time_invalid, test_format_timespan, test_timestamp)
