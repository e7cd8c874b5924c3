/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdint.h>

#include "alloc-util.h"
#include "parse-util.h"
#include "tests.h"

START_TEST(test_safe_atou64) {
        uint64_t v = 42;

        ck_assert_int_eq(safe_atou64("0", &v), 0);
        ck_assert_uint_eq(v, 0);
        ck_assert_int_eq(safe_atou64("18446744073709551615", &v), 0);
        ck_assert(v == UINT64_MAX);
        ck_assert_int_eq(safe_atou64("18446744073709551616", &v), -ERANGE);
        ck_assert(v == UINT64_MAX); /* untouched on failure */

        /* Hostile or sloppy input is rejected, never half-parsed. */
        const char *bad[] = { "", " 1", "1 ", "-1", "+1", "0x10", "1e3", "1.0", "12a", "a", "\n1", "1\n" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(safe_atou64(bad[i], &v) == -EINVAL, "'%s' accepted", bad[i]);
        ck_assert_int_eq(safe_atou64(NULL, &v), -EINVAL);
}
END_TEST

START_TEST(test_safe_atou32_atoi) {
        uint32_t u;
        unsigned x;
        int i;
        int64_t l;

        ck_assert_int_eq(safe_atou32("4294967295", &u), 0);
        ck_assert_uint_eq(u, UINT32_MAX);
        ck_assert_int_eq(safe_atou32("4294967296", &u), -ERANGE);
        ck_assert_int_eq(safe_atou("17", &x), 0);
        ck_assert_uint_eq(x, 17);

        ck_assert_int_eq(safe_atoi("-2147483648", &i), 0);
        ck_assert_int_eq(i, INT32_MIN);
        ck_assert_int_eq(safe_atoi("2147483648", &i), -ERANGE);
        ck_assert_int_eq(safe_atoi("-", &i), -EINVAL);
        ck_assert_int_eq(safe_atoi("--1", &i), -EINVAL);
        ck_assert_int_eq(safe_atoi("- 1", &i), -EINVAL);
        ck_assert_int_eq(safe_atoi64("-9223372036854775809", &l), -ERANGE);
        ck_assert_int_eq(safe_atoi64("9223372036854775807", &l), 0);
        ck_assert(l == INT64_MAX);
        ck_assert_int_eq(safe_atoi64("9223372036854775808", &l), -ERANGE);
        ck_assert_int_eq(safe_atoi64("-9223372036854775808", &l), 0);
        ck_assert(l == INT64_MIN);
        ck_assert_int_eq(safe_atoi64("-0", &l), 0);
        ck_assert(l == 0);
        ck_assert_int_eq(safe_atoi64("-18446744073709551616", &l), -ERANGE);
}
END_TEST

START_TEST(test_parse_boolean) {
        ck_assert_int_eq(parse_boolean("yes"), 1);
        ck_assert_int_eq(parse_boolean("TRUE"), 1);
        ck_assert_int_eq(parse_boolean("on"), 1);
        ck_assert_int_eq(parse_boolean("1"), 1);
        ck_assert_int_eq(parse_boolean("No"), 0);
        ck_assert_int_eq(parse_boolean("off"), 0);
        ck_assert_int_eq(parse_boolean("0"), 0);
        ck_assert_int_eq(parse_boolean(""), -EINVAL);
        ck_assert_int_eq(parse_boolean("yes "), -EINVAL);
        ck_assert_int_eq(parse_boolean("2"), -EINVAL);
        ck_assert_int_eq(parse_boolean(NULL), -EINVAL);
}
END_TEST

START_TEST(test_parse_size) {
        uint64_t v;

        ck_assert_int_eq(parse_size("0", 1024, &v), 0);
        ck_assert_uint_eq(v, 0);
        ck_assert_int_eq(parse_size("512", 1024, &v), 0);
        ck_assert_uint_eq(v, 512);
        ck_assert_int_eq(parse_size("512B", 1024, &v), 0);
        ck_assert_uint_eq(v, 512);
        ck_assert_int_eq(parse_size("5M", 1024, &v), 0);
        ck_assert_uint_eq(v, 5 * 1024 * 1024);
        ck_assert_int_eq(parse_size("5 M", 1024, &v), 0);
        ck_assert_uint_eq(v, 5 * 1024 * 1024);
        ck_assert_int_eq(parse_size("5K", 1000, &v), 0);
        ck_assert_uint_eq(v, 5000);
        ck_assert_int_eq(parse_size("1.5G", 1024, &v), 0);
        ck_assert_uint_eq(v, 1536ULL * 1024 * 1024);
        ck_assert_int_eq(parse_size("1G 512M", 1024, &v), 0);
        ck_assert_uint_eq(v, 1536ULL * 1024 * 1024);
        ck_assert_int_eq(parse_size("0.5K", 1024, &v), 0);
        ck_assert_uint_eq(v, 512);
        ck_assert_int_eq(parse_size("15E", 1024, &v), 0);
        ck_assert(v == 15ULL << 60);
        ck_assert_int_eq(parse_size("  7T  ", 1024, &v), 0);
        ck_assert(v == 7ULL << 40);

        v = 99;
        ck_assert_int_eq(parse_size("16E", 1024, &v), -ERANGE);
        ck_assert_int_eq(parse_size("15E 1E", 1024, &v), -ERANGE);
        ck_assert_int_eq(parse_size("99999999999999999999", 1024, &v), -ERANGE);
        ck_assert_uint_eq(v, 99);

        const char *bad[] = { "", " ", "-5M", "+5M", "5MB", "5m", "5Q", "1.5", ".5K", "5.K", "M", "5M x", "0x10", "5,5M",
                              "nan", "inf", "1e6", "5\n" "M\x01" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(parse_size(bad[i], 1024, &v) == -EINVAL, "'%s' accepted", bad[i]);
        ck_assert_int_eq(parse_size("5M", 1023, &v), -EINVAL);
}
END_TEST

START_TEST(test_parse_percent) {
        ck_assert_int_eq(parse_percent("0%"), 0);
        ck_assert_int_eq(parse_percent("20%"), 20);
        ck_assert_int_eq(parse_percent("100%"), 100);
        ck_assert_int_eq(parse_percent("101%"), -ERANGE);
        ck_assert_int_eq(parse_percent_unbounded("250%"), 250);
        ck_assert_int_eq(parse_percent_unbounded("99999999999%"), -ERANGE);

        const char *bad[] = { "20", "%", "-1%", "20.5%", " 20%", "20 %", "20%%", "0x1%", "" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(parse_percent(bad[i]) == -EINVAL, "'%s' accepted", bad[i]);
}
END_TEST

START_TEST(test_parse_permyriad) {
        ck_assert_int_eq(parse_permyriad_unbounded("20%"), 2000);
        ck_assert_int_eq(parse_permyriad_unbounded("12.34%"), 1234);
        ck_assert_int_eq(parse_permyriad_unbounded("0.5%"), 50);
        ck_assert_int_eq(parse_permyriad_unbounded("150%"), 15000);
        ck_assert_int_eq(parse_permyriad_unbounded("12.345%"), -EINVAL);
        ck_assert_int_eq(parse_permyriad_unbounded("12.%"), -EINVAL);
        ck_assert_int_eq(parse_permyriad_unbounded("12"), -EINVAL);
        ck_assert_int_eq(parse_permyriad_unbounded("-1%"), -EINVAL);
        ck_assert_int_eq(parse_permyriad_unbounded("99999999999%"), -ERANGE);
}
END_TEST

START_TEST(test_index_list) {
        _cleanup_free_ uint8_t *mask = NULL;
        _cleanup_free_ char *s = NULL;
        size_t size;

        ck_assert_int_eq(parse_index_list("0-3,5", 63, &mask, &size), 0);
        ck_assert_uint_eq(size, 1);
        ck_assert_uint_eq(mask[0], 0x2f);
        ck_assert_uint_eq(index_list_count(mask, size), 5);
        s = format_index_list(mask, size);
        ck_assert_str_eq(s, "0-3,5");
        mask = mfree(mask);
        s = mfree(s);

        /* Whitespace separates too, overlaps merge, order does not matter. */
        ck_assert_int_eq(parse_index_list(" 9 1,0-2  1\n", 63, &mask, &size), 0);
        ck_assert_uint_eq(size, 2);
        s = format_index_list(mask, size);
        ck_assert_str_eq(s, "0-2,9");
        mask = mfree(mask);
        s = mfree(s);

        ck_assert_int_eq(parse_index_list("", 63, &mask, &size), 0);
        ck_assert_ptr_null(mask);
        ck_assert_uint_eq(size, 0);
        s = format_index_list(NULL, 0);
        ck_assert_str_eq(s, "");
        s = mfree(s);

        ck_assert_int_eq(parse_index_list("64", 63, &mask, &size), -ERANGE);
        ck_assert_int_eq(parse_index_list("0-99999999999999999999", 63, &mask, &size), -ERANGE);
        ck_assert_int_eq(parse_index_list("0-4294967296", 4096, &mask, &size), -ERANGE);
        const char *bad[] = { "3-1", "0-", "-1", "a", "1a", "1-2-3", "1;2", "0x1", "1.5" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(parse_index_list(bad[i], 63, &mask, &size) == -EINVAL, "'%s' accepted", bad[i]);
        ck_assert_ptr_null(mask);
}
END_TEST

START_TEST(test_parse_kernel_release) {
        unsigned major = 99, minor = 99;

        ck_assert_int_eq(parse_kernel_release("6.1.0-27-amd64", &major, &minor), 0);
        ck_assert_uint_eq(major, 6);
        ck_assert_uint_eq(minor, 1);
        ck_assert_int_eq(parse_kernel_release("6.18", &major, &minor), 0);
        ck_assert_uint_eq(minor, 18);
        ck_assert_int_eq(parse_kernel_release("6.9-rc1", &major, &minor), 0);
        ck_assert_uint_eq(minor, 9);
        ck_assert_int_eq(parse_kernel_release("5.10+deb11", &major, &minor), 0);
        ck_assert_uint_eq(major, 5);
        ck_assert_uint_eq(minor, 10);
        ck_assert_int_eq(parse_kernel_release("99999999999.1", &major, &minor), -ERANGE);
        ck_assert_int_eq(parse_kernel_release("4294967296.1", &major, &minor), -ERANGE);
        const char *bad[] = { "", "6", "6.", ".1", "6.x", "6.1x", "v6.1", " 6.1", "6,1" };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(parse_kernel_release(bad[i], &major, &minor) == -EINVAL, "'%s' accepted", bad[i]);
        ck_assert_uint_eq(major, 5); /* untouched on failure */
        ck_assert_int_eq(parse_kernel_release(NULL, &major, &minor), -EINVAL);
}
END_TEST

TEST_SUITE("parse-util", test_parse_kernel_release, test_safe_atou64, test_safe_atou32_atoi, test_parse_boolean, test_parse_size,
           test_parse_percent, test_parse_permyriad, test_index_list)
