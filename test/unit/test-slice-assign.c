/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "alloc-util.h"
#include "bus-pair.h"
#include "macro.h"
#include "slice-assign.h"
#include "slice-format.h"
#include "tests.h"

/*
 * slice_assignment_append(): every assignment form of slice-assign.h, its boundaries and hostile
 * input, checked on the exact (sv) entries read back from the message; and slice-format.c, what
 * 'tonarictl slice list' and 'slice show' print for given replies.
 */

static sd_bus_message *new_message(sd_bus *bus) {
        sd_bus_message *m = NULL;

        ck_assert_int_ge(sd_bus_message_new_method_call(bus, &m, "org.tonari.Manager1",
                                                        "/org/tonari/Manager1", "org.tonari.Manager1",
                                                        "CreateSlice"),
                         0);
        return m;
}

/* Seals m and positions it at the start of its first argument, for reading. */
static void seal(sd_bus_message *m) {
        ck_assert_int_ge(sd_bus_message_seal(m, 1, 0), 0);
        ck_assert_int_ge(sd_bus_message_rewind(m, true), 0);
}

/*
 * Appends the assignments to a fresh a(sv) as tonarictl does, and returns the sealed message at
 * the start of the array's first entry. *ret_r and *ret_error are those of the last append.
 */
static sd_bus_message *build(sd_bus *bus, const char *const *assignments, int *ret_r, char **ret_error) {
        sd_bus_message *m = new_message(bus);
        int r = 0;

        *ret_error = NULL;
        ck_assert_int_ge(sd_bus_message_open_container(m, 'a', "(sv)"), 0);
        for (const char *const *a = assignments; *a; a++) {
                free(*ret_error);
                *ret_error = NULL;
                r = slice_assignment_append(m, *a, ret_error);
        }
        ck_assert_int_ge(sd_bus_message_close_container(m), 0);
        seal(m);
        ck_assert_int_ge(sd_bus_message_enter_container(m, 'a', "(sv)"), 0);
        *ret_r = r;
        return m;
}

/* Reads one (sv) entry's name and enters its variant, which must have the given contents. */
static void enter_entry(sd_bus_message *m, const char *property, const char *contents) {
        const char *name, *c;

        ck_assert_int_gt(sd_bus_message_enter_container(m, 'r', "sv"), 0);
        ck_assert_int_ge(sd_bus_message_read_basic(m, 's', &name), 0);
        ck_assert_str_eq(name, property);
        ck_assert_int_ge(sd_bus_message_peek_type(m, NULL, &c), 0);
        ck_assert_str_eq(c, contents);
        ck_assert_int_gt(sd_bus_message_enter_container(m, 'v', contents), 0);
}

static void leave_entry(sd_bus_message *m) {
        ck_assert_int_ge(sd_bus_message_exit_container(m), 0); /* v */
        ck_assert_int_ge(sd_bus_message_exit_container(m), 0); /* r */
}

/* Nothing after the entries read so far: an assignment adds exactly one entry. */
static void expect_end(sd_bus_message *m) {
        ck_assert_int_gt(sd_bus_message_at_end(m, false), 0);
}

static void expect_t(const char *assignment, const char *property, uint64_t value) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = pair_bus();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_free_ char *error = NULL;
        uint64_t t;
        int r;

        m = build(bus, (const char *const[]){ assignment, NULL }, &r, &error);
        ck_assert_msg(r >= 0, "'%s' refused (%d): %s", assignment, r, error);
        ck_assert_ptr_null(error);
        enter_entry(m, property, "t");
        ck_assert_int_ge(sd_bus_message_read_basic(m, 't', &t), 0);
        ck_assert_msg(t == value, "'%s' gave %llu, expected %llu", assignment, (unsigned long long) t,
                      (unsigned long long) value);
        leave_entry(m);
        expect_end(m);
}

/* One (path, value) entry, or with path NULL an empty a(st). */
static void expect_st(const char *assignment, const char *property, const char *path, uint64_t value) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = pair_bus();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_free_ char *error = NULL;
        const char *p;
        uint64_t t;
        int r;

        m = build(bus, (const char *const[]){ assignment, NULL }, &r, &error);
        ck_assert_msg(r >= 0, "'%s' refused (%d): %s", assignment, r, error);
        enter_entry(m, property, "a(st)");
        ck_assert_int_ge(sd_bus_message_enter_container(m, 'a', "(st)"), 0);
        if (path) {
                ck_assert_int_gt(sd_bus_message_read(m, "(st)", &p, &t), 0);
                ck_assert_str_eq(p, path);
                ck_assert_msg(t == value, "'%s' gave %llu, expected %llu", assignment, (unsigned long long) t,
                              (unsigned long long) value);
        }
        ck_assert_int_eq(sd_bus_message_read(m, "(st)", &p, &t), 0); /* no (further) entry */
        ck_assert_int_ge(sd_bus_message_exit_container(m), 0);
        leave_entry(m);
        expect_end(m);
}

static void expect_ay(const char *assignment, const char *property, const uint8_t *bytes, size_t size) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = pair_bus();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_free_ char *error = NULL;
        const void *p;
        size_t n;
        int r;

        m = build(bus, (const char *const[]){ assignment, NULL }, &r, &error);
        ck_assert_msg(r >= 0, "'%s' refused (%d): %s", assignment, r, error);
        enter_entry(m, property, "ay");
        ck_assert_int_ge(sd_bus_message_read_array(m, 'y', &p, &n), 0);
        ck_assert_uint_eq(n, size);
        if (size > 0)
                ck_assert_mem_eq(p, bytes, size);
        leave_entry(m);
        expect_end(m);
}

/* Refused with error and, if message is not NULL, exactly that message; nothing is appended. */
static void expect_error(const char *assignment, int error, const char *message) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = pair_bus();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_free_ char *text = NULL;
        int r;

        m = build(bus, (const char *const[]){ assignment, NULL }, &r, &text);
        ck_assert_msg(r == error, "'%s' gave %d, expected %d", assignment, r, error);
        ck_assert_ptr_nonnull(text);
        if (message)
                ck_assert_str_eq(text, message);
        /* The array is still well-formed and empty: no half-written entry. */
        expect_end(m);
}

START_TEST(test_weights) {
        expect_t("CPUWeight=1", "CPUWeight", 1);
        expect_t("CPUWeight=100", "CPUWeight", 100);
        expect_t("CPUWeight=10000", "CPUWeight", 10000);
        expect_t("CPUWeight=", "CPUWeight", UINT64_MAX);
        expect_t("IOWeight=1", "IOWeight", 1);
        expect_t("IOWeight=10000", "IOWeight", 10000);
        expect_t("IOWeight=", "IOWeight", UINT64_MAX);

        expect_error("CPUWeight=0", -EINVAL,
                     "Invalid CPUWeight= value '0': expected an integer from 1 to 10000, or an empty "
                     "value to reset it.");
        expect_error("CPUWeight=10001", -EINVAL,
                     "Invalid CPUWeight= value '10001': expected an integer from 1 to 10000, or an empty "
                     "value to reset it.");
        expect_error("IOWeight=0", -EINVAL,
                     "Invalid IOWeight= value '0': expected an integer from 1 to 10000, or an empty value "
                     "to reset it.");
        expect_error("IOWeight=10001", -EINVAL, NULL);
        const char *bad[] = { "CPUWeight=-1",   "CPUWeight=+5",    "CPUWeight= 5",
                              "CPUWeight=5 ",   "CPUWeight=0x10",  "CPUWeight=1e3",
                              "CPUWeight=5.0",  "CPUWeight=idle",  "CPUWeight=18446744073709551616",
                              "IOWeight=-100",  "CPUWeight=99999999999999999999999" };
        FOREACH_ELEMENT(b, bad)
                expect_error(*b, -EINVAL, NULL);
}
END_TEST

START_TEST(test_cpu_quota) {
        /* N% of one CPU is N * 10 ms per second. */
        expect_t("CPUQuota=20%", "CPUQuotaPerSecUSec", 200000);
        expect_t("CPUQuota=100%", "CPUQuotaPerSecUSec", 1000000);
        expect_t("CPUQuota=1000%", "CPUQuotaPerSecUSec", 10000000);
        expect_t("CPUQuota=12.5%", "CPUQuotaPerSecUSec", 125000);
        expect_t("CPUQuota=12.34%", "CPUQuotaPerSecUSec", 123400);
        expect_t("CPUQuota=0.01%", "CPUQuotaPerSecUSec", 100);
        expect_t("CPUQuota=", "CPUQuotaPerSecUSec", UINT64_MAX);

        expect_error("CPUQuota=20", -EINVAL,
                     "Invalid CPUQuota= value '20': expected a percentage such as 20%.");
        expect_error("CPUQuota=0%", -EINVAL,
                     "Invalid CPUQuota= value '0%': the quota must be greater than 0%.");
        expect_error("CPUQuota=0.00%", -EINVAL,
                     "Invalid CPUQuota= value '0.00%': the quota must be greater than 0%.");
        expect_error("CPUQuota=12.345%", -EINVAL,
                     "Invalid CPUQuota= value '12.345%': expected a percentage such as 20% or 12.5%, with "
                     "at most two decimals.");
        expect_error("CPUQuota=99999999999%", -EINVAL,
                     "Invalid CPUQuota= value '99999999999%': the percentage is too large.");
        const char *bad[] = { "CPUQuota=-20%",     "CPUQuota=%",    "CPUQuota=20 %",
                              "CPUQuota= 20%",     "CPUQuota=20%%", "CPUQuota=infinity",
                              "CPUQuota=1.%",      "CPUQuota=.5%",  "CPUQuota=20ms" };
        FOREACH_ELEMENT(b, bad)
                expect_error(*b, -EINVAL, NULL);
}
END_TEST

START_TEST(test_cpu_quota_period) {
        expect_t("CPUQuotaPeriodSec=100ms", "CPUQuotaPeriodUSec", 100000);
        expect_t("CPUQuotaPeriodSec=1s", "CPUQuotaPeriodUSec", 1000000);
        expect_t("CPUQuotaPeriodSec=5", "CPUQuotaPeriodUSec", 5000000); /* bare numbers are seconds */
        expect_t("CPUQuotaPeriodSec=1ms 500us", "CPUQuotaPeriodUSec", 1500);
        expect_t("CPUQuotaPeriodSec=", "CPUQuotaPeriodUSec", UINT64_MAX);
        expect_t("CPUQuotaPeriodSec=infinity", "CPUQuotaPeriodUSec", UINT64_MAX);

        expect_error("CPUQuotaPeriodSec=0", -EINVAL,
                     "Invalid CPUQuotaPeriodSec= value '0': the period must be greater than 0.");
        expect_error("CPUQuotaPeriodSec=fast", -EINVAL,
                     "Invalid CPUQuotaPeriodSec= value 'fast': expected a time span such as 100ms or 1s.");
        expect_error("CPUQuotaPeriodSec=-1s", -EINVAL, NULL);
        expect_error("CPUQuotaPeriodSec=5mx", -EINVAL, NULL);
        expect_error("CPUQuotaPeriodSec=99999999999999999999y", -EINVAL,
                     "Invalid CPUQuotaPeriodSec= value '99999999999999999999y': the time span is too long.");
}
END_TEST

START_TEST(test_io_limits) {
        /* Bandwidths in decimal multiples, as systemd: 5M is 5000000 bytes per second. */
        expect_st("IOWriteBandwidthMax=/dev/vda 5M", "IOWriteBandwidthMax", "/dev/vda", 5000000);
        expect_st("IOReadBandwidthMax=/dev/vda 5K", "IOReadBandwidthMax", "/dev/vda", 5000);
        expect_st("IOReadBandwidthMax=/dev/disk/by-id/x 1.5G", "IOReadBandwidthMax", "/dev/disk/by-id/x",
                  1500000000);
        expect_st("IOWriteBandwidthMax=/var/lib 1000", "IOWriteBandwidthMax", "/var/lib", 1000);
        expect_st("IOWriteBandwidthMax=/dev/vda  5M", "IOWriteBandwidthMax", "/dev/vda", 5000000);
        expect_st("IOWriteBandwidthMax=/dev/vda infinity", "IOWriteBandwidthMax", "/dev/vda", UINT64_MAX);
        expect_st("IOWriteBandwidthMax=", "IOWriteBandwidthMax", NULL, 0);
        expect_st("IOReadIOPSMax=/dev/vda 1000", "IOReadIOPSMax", "/dev/vda", 1000);
        expect_st("IOWriteIOPSMax=/dev/vda 2K", "IOWriteIOPSMax", "/dev/vda", 2000);
        expect_st("IOWriteIOPSMax=/dev/vda infinity", "IOWriteIOPSMax", "/dev/vda", UINT64_MAX);
        expect_st("IOReadIOPSMax=", "IOReadIOPSMax", NULL, 0);

        expect_error("IOWriteBandwidthMax=vda 5M", -EINVAL,
                     "Invalid IOWriteBandwidthMax= value 'vda 5M': the device path must be absolute and "
                     "normalized, such as /dev/vda.");
        expect_error("IOWriteBandwidthMax=/dev/vda", -EINVAL,
                     "Invalid IOWriteBandwidthMax= value '/dev/vda': expected a device path and bytes per "
                     "second, such as '/dev/vda 5M'.");
        expect_error("IOWriteIOPSMax=/dev/vda", -EINVAL,
                     "Invalid IOWriteIOPSMax= value '/dev/vda': expected a device path and operations per "
                     "second, such as '/dev/vda 1000'.");
        expect_error("IOWriteBandwidthMax=/dev/vda ", -EINVAL, NULL);
        expect_error("IOWriteBandwidthMax= /dev/vda 5M", -EINVAL,
                     "Invalid IOWriteBandwidthMax= value ' /dev/vda 5M': the device path must be "
                     "absolute, such as /dev/vda.");
        expect_error("IOWriteBandwidthMax=/dev/vda 5MB", -EINVAL,
                     "Invalid IOWriteBandwidthMax= value '/dev/vda 5MB': expected bytes per second after "
                     "the path, such as 5M (base 1000), or infinity.");
        expect_error("IOWriteBandwidthMax=/dev/vda 0", -EINVAL,
                     "Invalid IOWriteBandwidthMax= value '/dev/vda 0': the limit must be greater than 0 "
                     "(infinity removes it).");
        expect_error("IOReadBandwidthMax=/dev/vda 99999999999999999999", -EINVAL,
                     "Invalid IOReadBandwidthMax= value '/dev/vda 99999999999999999999': the limit is too "
                     "large.");
        expect_error("IOReadBandwidthMax=/dev/vda 20E", -EINVAL, NULL); /* 2 * 10^19 > UINT64_MAX */
        const char *bad[] = { "IOWriteBandwidthMax=/dev/vda -5M", "IOWriteBandwidthMax=/dev/../dev/vda 5M",
                              "IOWriteBandwidthMax=/dev//vda 5M", "IOWriteBandwidthMax=/dev/vda/ 5M",
                              "IOWriteBandwidthMax=/dev/vda 5X", "IOWriteBandwidthMax=/dev/vda five",
                              "IOReadIOPSMax=/dev/vda -1",       "IOReadIOPSMax=dev/vda 10",
                              "IOReadIOPSMax=/dev/vda 0",        "IOWriteBandwidthMax=5M /dev/vda" };
        FOREACH_ELEMENT(b, bad)
                expect_error(*b, -EINVAL, NULL);
}
END_TEST

START_TEST(test_memory) {
        uint64_t physical = (uint64_t) sysconf(_SC_PHYS_PAGES) * (uint64_t) sysconf(_SC_PAGESIZE);

        expect_t("MemoryMax=1G", "MemoryMax", UINT64_C(1) << 30);
        expect_t("MemoryMax=512M", "MemoryMax", UINT64_C(512) << 20);
        expect_t("MemoryMax=1.5K", "MemoryMax", 1536);
        expect_t("MemoryMax=4096", "MemoryMax", 4096);
        expect_t("MemoryMax=0", "MemoryMax", 0);
        expect_t("MemoryMax=infinity", "MemoryMax", UINT64_MAX);
        expect_t("MemoryMax=", "MemoryMax", UINT64_MAX);
        expect_t("MemoryMax=100%", "MemoryMax", physical);
        expect_t("MemoryMax=50%", "MemoryMax", physical / 2);
        expect_t("MemoryHigh=12.5%", "MemoryHigh", (uint64_t) ((unsigned __int128) physical * 1250 / 10000));
        expect_t("MemoryHigh=2G", "MemoryHigh", UINT64_C(2) << 30);
        expect_t("MemoryHigh=", "MemoryHigh", UINT64_MAX);

        expect_error("MemoryMax=0%", -EINVAL,
                     "Invalid MemoryMax= value '0%': a percentage of physical memory must be greater than "
                     "0% and at most 100%.");
        expect_error("MemoryMax=101%", -EINVAL, NULL);
        expect_error("MemoryMax=99999999999%", -EINVAL, NULL);
        expect_error("MemoryMax=5MB", -EINVAL,
                     "Invalid MemoryMax= value '5MB': expected bytes such as 512M or 2G (base 1024), a "
                     "percentage of physical memory such as 50%, or infinity.");
        expect_error("MemoryMax=20E", -EINVAL, "Invalid MemoryMax= value '20E': the size is too large.");
        const char *bad[] = { "MemoryMax=-1",   "MemoryMax=-1G",      "MemoryMax=1.5",
                              "MemoryMax=lots", "MemoryMax=50 %",     "MemoryMax=Infinity",
                              "MemoryHigh=1Q",  "MemoryHigh=%" };
        FOREACH_ELEMENT(b, bad)
                expect_error(*b, -EINVAL, NULL);
}
END_TEST

START_TEST(test_index_lists) {
        expect_ay("AllowedCPUs=0-3,5", "AllowedCPUs", (const uint8_t[]){ 0x2f }, 1);
        expect_ay("AllowedCPUs=8", "AllowedCPUs", (const uint8_t[]){ 0x00, 0x01 }, 2);
        expect_ay("AllowedCPUs=1 3", "AllowedCPUs", (const uint8_t[]){ 0x0a }, 1);
        expect_ay("AllowedCPUs=", "AllowedCPUs", NULL, 0);
        expect_ay("AllowedMemoryNodes=1", "AllowedMemoryNodes", (const uint8_t[]){ 0x02 }, 1);
        expect_ay("AllowedMemoryNodes=0-1", "AllowedMemoryNodes", (const uint8_t[]){ 0x03 }, 1);
        expect_ay("AllowedMemoryNodes=", "AllowedMemoryNodes", NULL, 0);

        expect_error("AllowedCPUs=3-1", -EINVAL,
                     "Invalid AllowedCPUs= value '3-1': expected a list of CPU indexes such as 0-3,5, or "
                     "nothing for no restriction.");
        expect_error("AllowedCPUs=8192", -EINVAL,
                     "Invalid AllowedCPUs= value '8192': a CPU index is out of range (at most 8191).");
        expect_error("AllowedMemoryNodes=1024", -EINVAL,
                     "Invalid AllowedMemoryNodes= value '1024': a memory node index is out of range (at "
                     "most 1023).");
        expect_error("AllowedMemoryNodes=all", -EINVAL,
                     "Invalid AllowedMemoryNodes= value 'all': expected a list of memory node indexes "
                     "such as 0-1, or nothing for no restriction.");
        const char *bad[] = { "AllowedCPUs=-1",  "AllowedCPUs=0-",  "AllowedCPUs=0-4000000000",
                              "AllowedCPUs=1;2", "AllowedCPUs=0x1", "AllowedMemoryNodes=-0" };
        FOREACH_ELEMENT(b, bad)
                expect_error(*b, -EINVAL, NULL);
}
END_TEST

START_TEST(test_hostile_and_malformed) {
        static const char known[] =
                "Known properties: CPUWeight, CPUQuota, CPUQuotaPeriodSec, IOWeight, IOReadBandwidthMax, "
                "IOWriteBandwidthMax, IOReadIOPSMax, IOWriteIOPSMax, MemoryMax, MemoryHigh, AllowedCPUs, "
                "AllowedMemoryNodes.";
        _cleanup_free_ char *unknown = NULL, *unknown_cc = NULL;

        expect_error("CPUQuota", -EINVAL,
                     "Invalid assignment 'CPUQuota': expected PROPERTY=VALUE, such as CPUQuota=20%.");
        expect_error("", -EINVAL, "Invalid assignment '': expected PROPERTY=VALUE, such as CPUQuota=20%.");
        expect_error("=20%", -EINVAL, "Invalid assignment '=20%': the property name before '=' is missing.");
        expect_error("=", -EINVAL, "Invalid assignment '=': the property name before '=' is missing.");

        /* Control characters never pass, and every message shows them escaped. */
        expect_error("CPUQuota=20%\n", -EINVAL,
                     "Invalid CPUQuota= value '20%\\n': control characters are not allowed.");
        expect_error("IOWriteBandwidthMax=/dev/vda\t5M", -EINVAL,
                     "Invalid IOWriteBandwidthMax= value '/dev/vda\\t5M': control characters are not "
                     "allowed.");
        expect_error("CPUWeight=\x1b[2J", -EINVAL,
                     "Invalid CPUWeight= value '\\x1b[2J': control characters are not allowed.");
        expect_error("MemoryMax=1G\x7f", -EINVAL, NULL);
        expect_error("AllowedCPUs=0\r", -EINVAL, NULL);
        expect_error("CPUQuota\n", -EINVAL,
                     "Invalid assignment 'CPUQuota\\n': expected PROPERTY=VALUE, such as CPUQuota=20%.");
        expect_error("CPUQuota='20%'", -EINVAL,
                     "Invalid CPUQuota= value '\\'20%\\'': expected a percentage such as 20%.");

        /* Unknown names: -ENOENT and the list of known ones; names are case-sensitive, like systemd's. */
        ck_assert_int_gt(asprintf(&unknown, "Unknown slice property 'Foo'. %s", known), 0);
        expect_error("Foo=1", -ENOENT, unknown);
        expect_error("cpuquota=20%", -ENOENT, NULL);
        expect_error("CPUQuotaPerSecUSec=200000", -ENOENT, NULL); /* the bus name is not an assignment */
        expect_error("CPUQuota =20%", -ENOENT, NULL);
        ck_assert_int_gt(asprintf(&unknown_cc, "Unknown slice property 'CPU\\x1bQuota\\n'. %s", known), 0);
        expect_error("CPU\x1bQuota\n=20%", -ENOENT, unknown_cc);
}
END_TEST

START_TEST(test_several_and_no_message) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = pair_bus();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = new_message(bus);
        const char *path;
        uint64_t t;

        /* Several assignments, the same property twice (two devices), and a failure in between
         * that leaves the entries before and after intact. No message wanted: NULL is fine. */
        ck_assert_int_ge(sd_bus_message_open_container(m, 'a', "(sv)"), 0);
        ck_assert_int_eq(slice_assignment_append(m, "CPUQuota=20%", NULL), 0);
        ck_assert_int_eq(slice_assignment_append(m, "IOWriteBandwidthMax=/dev/vda 5M", NULL), 0);
        ck_assert_int_eq(slice_assignment_append(m, "CPUWeight=0", NULL), -EINVAL);
        ck_assert_int_eq(slice_assignment_append(m, "Nope=1", NULL), -ENOENT);
        ck_assert_int_eq(slice_assignment_append(m, "IOWriteBandwidthMax=/dev/vdb 1K", NULL), 0);
        ck_assert_int_ge(sd_bus_message_close_container(m), 0);
        seal(m);

        ck_assert_int_ge(sd_bus_message_enter_container(m, 'a', "(sv)"), 0);
        enter_entry(m, "CPUQuotaPerSecUSec", "t");
        ck_assert_int_ge(sd_bus_message_read_basic(m, 't', &t), 0);
        ck_assert_uint_eq(t, 200000);
        leave_entry(m);
        enter_entry(m, "IOWriteBandwidthMax", "a(st)");
        ck_assert_int_gt(sd_bus_message_read(m, "a(st)", 1, &path, &t), 0);
        ck_assert_str_eq(path, "/dev/vda");
        ck_assert_uint_eq(t, 5000000);
        leave_entry(m);
        enter_entry(m, "IOWriteBandwidthMax", "a(st)");
        ck_assert_int_gt(sd_bus_message_read(m, "a(st)", 1, &path, &t), 0);
        ck_assert_str_eq(path, "/dev/vdb");
        ck_assert_uint_eq(t, 1000);
        leave_entry(m);
        expect_end(m);

        ck_assert_int_eq(slice_assignment_append(m, NULL, NULL), -EINVAL);
        ck_assert_int_eq(slice_assignment_append(NULL, "CPUQuota=20%", NULL), -EINVAL);
}
END_TEST

/* slice-format.c */

static char *render_properties(sd_bus_message *m) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        ck_assert_ptr_nonnull(f);
        ck_assert_int_ge(slice_properties_print(m, f), 0);
        ck_assert_int_eq(fclose(f), 0);
        return buf;
}

START_TEST(test_show_format) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = pair_bus();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = new_message(bus);
        _cleanup_free_ char *text = NULL;

        /* A GetAll() reply as the daemon's org.tonari.Slice1 would give it. */
        ck_assert_int_ge(sd_bus_message_open_container(m, 'a', "{sv}"), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "Name", "s", "web"), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "Backend", "s", "cgroupfs-v2"), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "Unit", "s", ""), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "ControlGroup", "s", "/tonari.slice/web"), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "CPUWeight", "t", UINT64_MAX), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "CPUQuotaPerSecUSec", "t", UINT64_C(200000)), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "CPUQuotaPeriodUSec", "t", UINT64_MAX), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "IOWeight", "t", UINT64_C(500)), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "IOReadBandwidthMax", "a(st)", 0), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "IOWriteBandwidthMax", "a(st)", 2, "/dev/vda",
                                               UINT64_C(5000000), "/dev/vdb", UINT64_MAX),
                         0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "MemoryMax", "t", UINT64_C(1073741824)), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "MemoryHigh", "t", UINT64_MAX), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "AllowedCPUs", "ay", 1, 0x2f), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "AllowedMemoryNodes", "ay", 0), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "CPUUsageUSec", "t", UINT64_C(63200005)), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "MemoryCurrent", "t", UINT64_MAX), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "NrTasks", "t", UINT64_C(3)), 0);
        /* Types without a rule of their own, as a future version might add. */
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "Delegate", "b", 1), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "{sv}", "Tags", "as", 2, "a", "b"), 0);
        ck_assert_int_ge(sd_bus_message_close_container(m), 0);
        seal(m);

        text = render_properties(m);
        ck_assert_str_eq(text, "Name=web\n"
                               "Backend=cgroupfs-v2\n"
                               "Unit=\n"
                               "ControlGroup=/tonari.slice/web\n"
                               "CPUWeight=[not set]\n"
                               "CPUQuotaPerSecUSec=200ms\n"
                               "CPUQuotaPeriodUSec=infinity\n"
                               "IOWeight=500\n"
                               "IOReadBandwidthMax=\n"
                               "IOWriteBandwidthMax=/dev/vda 5000000\n"
                               "IOWriteBandwidthMax=/dev/vdb infinity\n"
                               "MemoryMax=1073741824\n"
                               "MemoryHigh=infinity\n"
                               "AllowedCPUs=0-3,5\n"
                               "AllowedMemoryNodes=\n"
                               "CPUUsageUSec=1min 3s 200ms 5us\n"
                               "MemoryCurrent=[not set]\n"
                               "NrTasks=3\n"
                               "Delegate=yes\n"
                               "Tags=[\"a\",\"b\"]\n");
}
END_TEST

START_TEST(test_show_format_wrong_reply) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = pair_bus();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = new_message(bus);
        FILE *f = fopen("/dev/null", "we");

        /* Not an a{sv}: an error, not a crash or a guess. */
        ck_assert_ptr_nonnull(f);
        ck_assert_int_ge(sd_bus_message_append(m, "as", 1, "x"), 0);
        seal(m);
        ck_assert_int_lt(slice_properties_print(m, f), 0);
        fclose(f);
}
END_TEST

static sd_bus_message *list_reply(sd_bus *bus, bool empty) {
        sd_bus_message *m = new_message(bus);

        if (empty)
                ck_assert_int_ge(sd_bus_message_append(m, "a(sosttt)", 0), 0);
        else
                /* Out of order on purpose, and with unknown numbers (UINT64_MAX). */
                ck_assert_int_ge(sd_bus_message_append(m, "a(sosttt)", 3,
                                                       "web", "/org/tonari/slice/web",
                                                       "/tonari.slice/tonari-web.slice",
                                                       UINT64_C(12), UINT64_C(83456789), UINT64_C(335544320),
                                                       "batch", "/org/tonari/slice/batch", "",
                                                       UINT64_MAX, UINT64_MAX, UINT64_MAX,
                                                       "db", "/org/tonari/slice/db", "/tonari.slice/db",
                                                       UINT64_C(0), UINT64_C(0), UINT64_C(512)),
                                 0);
        seal(m);
        return m;
}

static char *render_list(sd_bus_message *m, bool legend, bool json) {
        _cleanup_free_ SliceListEntry *entries = NULL;
        char *buf = NULL;
        size_t n, size = 0;

        ck_assert_int_ge(sd_bus_message_rewind(m, true), 0);
        ck_assert_int_ge(slice_list_read(m, &entries, &n), 0);
        if (json) {
                json_object *j = NULL;

                ck_assert_int_ge(slice_list_to_json(entries, n, &j), 0);
                buf = strdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN |
                                                                       JSON_C_TO_STRING_NOSLASHESCAPE));
                json_object_put(j);
                return buf;
        }

        FILE *f = open_memstream(&buf, &size);
        ck_assert_ptr_nonnull(f);
        ck_assert_int_ge(slice_list_print(entries, n, f, legend), 0);
        ck_assert_int_eq(fclose(f), 0);
        return buf;
}

START_TEST(test_list_format) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = pair_bus();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = list_reply(bus, false),
                                                        *empty = list_reply(bus, true);
        _cleanup_free_ char *with = NULL, *without = NULL, *json = NULL, *none = NULL, *none_quiet = NULL,
                            *none_json = NULL;

        with = render_list(m, true, false);
        ck_assert_str_eq(with, "NAME  TASKS CPU            MEMORY CGROUP\n"
                               "batch -     -              -      -\n"
                               "db    0     0              512B   /tonari.slice/db\n"
                               "web   12    1min 23s 456ms 320.0M /tonari.slice/tonari-web.slice\n"
                               "\n"
                               "3 slices listed.\n");
        without = render_list(m, false, false);
        ck_assert_str_eq(without, "batch -  -              -      -\n"
                                  "db    0  0              512B   /tonari.slice/db\n"
                                  "web   12 1min 23s 456ms 320.0M /tonari.slice/tonari-web.slice\n");
        json = render_list(m, true, true);
        ck_assert_str_eq(json, "[{\"name\":\"batch\",\"object\":\"/org/tonari/slice/batch\","
                               "\"control_group\":\"\","
                               "\"tasks\":null,\"cpu_usec\":null,\"memory_bytes\":null},"
                               "{\"name\":\"db\",\"object\":\"/org/tonari/slice/db\","
                               "\"control_group\":\"/tonari.slice/db\","
                               "\"tasks\":0,\"cpu_usec\":0,\"memory_bytes\":512},"
                               "{\"name\":\"web\",\"object\":\"/org/tonari/slice/web\","
                               "\"control_group\":\"/tonari.slice/tonari-web.slice\","
                               "\"tasks\":12,\"cpu_usec\":83456789,\"memory_bytes\":335544320}]");

        none = render_list(empty, true, false);
        ck_assert_str_eq(none, "No slices.\n");
        none_quiet = render_list(empty, false, false);
        ck_assert_str_eq(none_quiet, "");
        none_json = render_list(empty, true, true);
        ck_assert_str_eq(none_json, "[]");
}
END_TEST

TEST_SUITE("slice-assign", test_weights, test_cpu_quota, test_cpu_quota_period, test_io_limits, test_memory,
           test_index_lists, test_hostile_and_malformed, test_several_and_no_message, test_show_format,
           test_show_format_wrong_reply, test_list_format)
