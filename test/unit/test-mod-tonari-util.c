/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mod_tonari's pure parts without Apache: TonariDomain's properties and names, and the host →
 * domain map (syntax, errors with their line, case folding, size, lookups of 100 000 hosts).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "mod-tonari-util.h"
#include "tests.h"

static void check_property(const char *a, TonariProperty p, const char *value) {
        TonariProperty got;
        const char *v;
        uint64_t n;
        char *e = NULL;

        ck_assert_msg(tonari_property_parse(a, &got, &v, &n, &e) == 0, "%s: %s", a, e ? e : "");
        ck_assert_int_eq(got, p);
        ck_assert_str_eq(v, value);
        ck_assert_ptr_null(e);
}

static void check_property_fails(const char *a, int err, const char *message) {
        TonariProperty got;
        const char *v;
        uint64_t n;
        char *e = NULL;

        ck_assert_int_eq(tonari_property_parse(a, &got, &v, &n, &e), err);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(strstr(e, message), "'%s' not in '%s'", message, e);
        free(e);
}

START_TEST(test_properties) {
        TonariProperty p;
        const char *v;
        uint64_t n;

        check_property("CPUQuota=50%", TONARI_PROP_CPU_QUOTA, "50%");
        check_property("CPUQuota=150%", TONARI_PROP_CPU_QUOTA, "150%");
        check_property("CPUQuota=12.5%", TONARI_PROP_CPU_QUOTA, "12.5%");
        check_property("CPUWeight=10000", TONARI_PROP_CPU_WEIGHT, "10000");
        check_property("TasksMax=20", TONARI_PROP_TASKS_MAX, "20");
        check_property("TasksMax=infinity", TONARI_PROP_TASKS_MAX, "infinity");
        check_property("IOWriteBandwidthMax=/dev/vda 30M", TONARI_PROP_IO_WRITE_BANDWIDTH_MAX, "/dev/vda 30M");
        check_property("IOReadBandwidthMax=/dev/sda infinity", TONARI_PROP_IO_READ_BANDWIDTH_MAX,
                       "/dev/sda infinity");
        ck_assert_int_eq(tonari_property_parse("MaxRequests=5", &p, &v, &n, NULL), 0);
        ck_assert_int_eq(p, TONARI_PROP_MAX_REQUESTS);
        ck_assert_uint_eq(n, 5);
        ck_assert_int_eq(tonari_property_parse("CPUQuota=5%", &p, &v, &n, NULL), 0);
        ck_assert_uint_eq(n, UINT64_MAX);

        check_property_fails("CPUQuota=50", -EINVAL, "Invalid CPUQuota= value '50': expected a percentage");
        check_property_fails("CPUQuota=0%", -EINVAL, "Invalid CPUQuota= value '0%'");
        check_property_fails("CPUQuota=", -EINVAL, "Invalid CPUQuota= value ''");
        check_property_fails("CPUWeight=0", -EINVAL, "from 1 to 10000");
        check_property_fails("CPUWeight=10001", -EINVAL, "from 1 to 10000");
        check_property_fails("TasksMax=0", -EINVAL, "Invalid TasksMax= value '0'");
        check_property_fails("TasksMax=-3", -EINVAL, "Invalid TasksMax=");
        check_property_fails("MaxRequests=0", -EINVAL, "Invalid MaxRequests= value '0'");
        check_property_fails("MaxRequests=99999999999", -EINVAL, "Invalid MaxRequests=");
        check_property_fails("IOWriteBandwidthMax=30M", -EINVAL, "Invalid IOWriteBandwidthMax= value '30M'");
        check_property_fails("IOWriteBandwidthMax=dev/vda 30M", -EINVAL, "an absolute device path");
        check_property_fails("IOWriteBandwidthMax=/dev/vda 30Q", -EINVAL, "'/dev/vda 30Q'");
        check_property_fails("IOWriteBandwidthMax=/dev/vda 0", -EINVAL, "'/dev/vda 0'");
        check_property_fails("MemoryMax=1G", -ENOENT, "Unknown domain property in 'MemoryMax=1G'");
        check_property_fails("cpuquota=50%", -ENOENT, "Unknown domain property");
        check_property_fails("CPUQuota", -EINVAL, "expected NAME=VALUE");
        check_property_fails("=5", -EINVAL, "expected NAME=VALUE");
        check_property_fails("CPUQuota=\x01%", -EINVAL, "'\\x01%'");
        ck_assert_int_eq(tonari_property_parse(NULL, &p, &v, &n, NULL), -EINVAL);

        ck_assert_str_eq(tonari_property_to_string(TONARI_PROP_IO_WRITE_BANDWIDTH_MAX), "IOWriteBandwidthMax");
        ck_assert_ptr_null(tonari_property_to_string(_TONARI_PROP_MAX));
}
END_TEST

START_TEST(test_names) {
        char *e = NULL;

        ck_assert_int_eq(tonari_domain_name_check("tenant-1", NULL), 0);
        ck_assert_int_eq(tonari_domain_name_check("web@a_b", NULL), 0);
        ck_assert_int_eq(tonari_domain_name_check("a.b", &e), -EINVAL);
        ck_assert_ptr_nonnull(strstr(e, "Invalid domain name 'a.b'"));
        ck_assert_int_eq(tonari_domain_name_check("_home", NULL), -EINVAL);
        ck_assert_int_eq(tonari_domain_name_check("-x", NULL), -EINVAL);
        ck_assert_int_eq(tonari_domain_name_check("a:b", NULL), -EINVAL);
        ck_assert_int_eq(tonari_domain_name_check("", NULL), -EINVAL);
        ck_assert_int_eq(tonari_domain_name_check(NULL, NULL), -EINVAL);
        ck_assert_int_eq(tonari_domain_name_check("a/b", NULL), -EINVAL);
        free(e);
}
END_TEST

/* Domains "heavy" = 0, "light" = 1, "t<N>" = N + 2. */
static int resolve(const char *name, void *userdata) {
        (void) userdata;
        if (strcmp(name, "heavy") == 0)
                return 0;
        if (strcmp(name, "light") == 0)
                return 1;
        if (name[0] == 't' && name[1] >= '0' && name[1] <= '9')
                return atoi(name + 1) + 2;
        return -1;
}

static DomainMap *parse_ok(const char *text) {
        DomainMap *m = NULL;
        unsigned line = 99;
        char *e = NULL;

        ck_assert_msg(domain_map_parse(text, strlen(text), resolve, NULL, &m, &line, &e) == 0, "%s", e ? e : "");
        ck_assert_uint_eq(line, 0);
        return m;
}

static void parse_fails(const char *text, unsigned expected_line, const char *message) {
        DomainMap *m = NULL;
        unsigned line = 0;
        char *e = NULL;

        ck_assert_int_eq(domain_map_parse(text, strlen(text), resolve, NULL, &m, &line, &e), -EINVAL);
        ck_assert_ptr_null(m);
        ck_assert_uint_eq(line, expected_line);
        ck_assert_ptr_nonnull(e);
        ck_assert_msg(strstr(e, message), "'%s' not in '%s'", message, e);
        free(e);
}

START_TEST(test_map) {
        DomainMap *m;

        m = parse_ok("# hosts\n"
                     "\n"
                     "heavy.example heavy\n"
                     "  Light.Example\tlight  \r\n"
                     "www.light.example light");
        ck_assert_uint_eq(domain_map_size(m), 3);
        ck_assert_int_eq(domain_map_lookup(m, "heavy.example"), 0);
        ck_assert_int_eq(domain_map_lookup(m, "HEAVY.example"), 0);
        ck_assert_int_eq(domain_map_lookup(m, "light.example"), 1);
        ck_assert_int_eq(domain_map_lookup(m, "www.light.example"), 1);
        ck_assert_int_eq(domain_map_lookup(m, "other.example"), -1);
        ck_assert_int_eq(domain_map_lookup(m, "heavy.exampl"), -1);
        ck_assert_int_eq(domain_map_lookup(m, ""), -1);
        ck_assert_int_eq(domain_map_lookup(m, NULL), -1);
        domain_map_free(m);

        m = parse_ok("");
        ck_assert_uint_eq(domain_map_size(m), 0);
        ck_assert_int_eq(domain_map_lookup(m, "x"), -1);
        domain_map_free(m);
        ck_assert_int_eq(domain_map_lookup(NULL, "x"), -1);
        ck_assert_ptr_null(domain_map_free(NULL));
}
END_TEST

START_TEST(test_map_errors) {
        parse_fails("a.example heavy\nb.example\n", 2, "Invalid map line 'b.example': expected HOST DOMAIN");
        parse_fails("a.example heavy extra\n", 1, "Invalid map line");
        parse_fails("# c\n\na.example nosuch\n", 3, "Unknown domain 'nosuch'");
        parse_fails("a/b.example heavy\n", 1, "Invalid host 'a/b.example'");
        parse_fails("a\x01.example heavy\n", 1, "Invalid host 'a\\x01.example'");
        parse_fails("a.example heavy\nb.example light\nA.EXAMPLE light\n", 3,
                    "Host 'A.EXAMPLE' is mapped already, on line 1");
        {
                char long_host[300];
                memset(long_host, 'a', 254);
                strcpy(long_host + 254, " heavy\n");
                parse_fails(long_host, 1, "Invalid host");
        }
}
END_TEST

/* 100 000 hosts, as in the paper: every one found, none confused with another. */
START_TEST(test_map_large) {
        const unsigned n = 100000;
        size_t size = 0, cap = (size_t) n * 40;
        char *text = malloc(cap);
        DomainMap *m;

        ck_assert_ptr_nonnull(text);
        for (unsigned i = 0; i < n; i++)
                size += (size_t) snprintf(text + size, cap - size, "site%u.example t%u\n", i, i % 1000);
        text[size] = 0;
        m = parse_ok(text);
        ck_assert_uint_eq(domain_map_size(m), n);
        for (unsigned i = 0; i < n; i++) {
                char host[32];
                snprintf(host, sizeof(host), "site%u.example", i);
                ck_assert_int_eq(domain_map_lookup(m, host), (int) (i % 1000) + 2);
        }
        ck_assert_int_eq(domain_map_lookup(m, "site100000.example"), -1);
        domain_map_free(m);
        free(text);
}
END_TEST

/* TonariDomainStay: which domains a worker stays in, and when a request needs a move. */
START_TEST(test_stay) {
        ck_assert_int_eq(domain_stay_from_string("unlimited"), DOMAIN_STAY_UNLIMITED);
        ck_assert_int_eq(domain_stay_from_string("never"), DOMAIN_STAY_NEVER);
        ck_assert_int_eq(domain_stay_from_string("Never"), -EINVAL);
        ck_assert_int_eq(domain_stay_from_string(""), -EINVAL);
        ck_assert_int_eq(domain_stay_from_string(NULL), -EINVAL);
        ck_assert_str_eq(domain_stay_to_string(DOMAIN_STAY_UNLIMITED), "unlimited");
        ck_assert_ptr_null(domain_stay_to_string(_DOMAIN_STAY_MAX));

        /* Every property but MaxRequests= limits the cgroup. */
        for (TonariProperty p = 0; p < _TONARI_PROP_MAX; p++)
                ck_assert_int_eq(tonari_property_limits_cgroup(p), p != TONARI_PROP_MAX_REQUESTS);

        /* Only an unlimited domain, only with "unlimited". */
        ck_assert(domain_may_stay(DOMAIN_STAY_UNLIMITED, false));
        ck_assert(!domain_may_stay(DOMAIN_STAY_UNLIMITED, true));
        ck_assert(!domain_may_stay(DOMAIN_STAY_NEVER, false));
        ck_assert(!domain_may_stay(DOMAIN_STAY_NEVER, true));

        /* Same unlimited domain again: no move. Another domain, or none: one move. */
        ck_assert(!seat_needs_move(3, 3, true));
        ck_assert(seat_needs_move(3, 4, true));
        ck_assert(seat_needs_move(3, 4, false));
        ck_assert(seat_needs_move(3, SEAT_HOME, false));
        ck_assert(seat_needs_move(SEAT_HOME, 3, true));
        ck_assert(!seat_needs_move(SEAT_HOME, SEAT_HOME, false));
        /* A seat that says a limited domain (stale: moved home from another thread) is written
         * again: a request never runs outside its limit. */
        ck_assert(seat_needs_move(3, 3, false));
}
END_TEST

/* A worker's moves over a run of requests, as mod_tonari makes them: seat_needs_move() at the
 * start, domain_may_stay() at the end. */
static unsigned count_moves(DomainStay policy, const int *wants, size_t n, const bool *limited, int *ret_seat) {
        unsigned moves = 0;
        int seat = SEAT_HOME;

        for (size_t i = 0; i < n; i++) {
                int w = wants[i];
                bool stays = w >= 0 && domain_may_stay(policy, limited[w]);

                if (seat_needs_move(seat, w, stays)) {
                        moves++;
                        seat = w;
                }
                /* The end of the request. */
                if (w >= 0 && !stays) {
                        moves++;
                        seat = SEAT_HOME;
                }
                /* Never in a limited domain between requests. */
                ck_assert(seat == SEAT_HOME || !limited[seat]);
        }
        *ret_seat = seat;
        return moves;
}

START_TEST(test_stay_moves) {
        /* Domains 0 and 1 unlimited, 2 limited; SEAT_HOME: a host outside the map. */
        const bool limited[] = { false, false, true };
        const int same[] = { 0, 0, 0, 0, 0 };
        const int mixed[] = { 0, 1, 1, 2, 0, SEAT_HOME, SEAT_HOME, 2, 2 };
        int seat;

        /* The bench's shape: one host, one domain. */
        ck_assert_uint_eq(count_moves(DOMAIN_STAY_NEVER, same, ELEMENTSOF(same), limited, &seat), 10);
        ck_assert_int_eq(seat, SEAT_HOME);
        ck_assert_uint_eq(count_moves(DOMAIN_STAY_UNLIMITED, same, ELEMENTSOF(same), limited, &seat), 1);
        ck_assert_int_eq(seat, 0);
        /* 0: in; 1: 0→1; 1: none; 2: 1→2, out; 0: in; none: out; none: none; 2: in, out; 2: in, out. */
        ck_assert_uint_eq(count_moves(DOMAIN_STAY_UNLIMITED, mixed, ELEMENTSOF(mixed), limited, &seat), 10);
        ck_assert_int_eq(seat, SEAT_HOME);
        ck_assert_uint_eq(count_moves(DOMAIN_STAY_NEVER, mixed, ELEMENTSOF(mixed), limited, &seat), 14);
}
END_TEST

TEST_SUITE("mod-tonari-util", test_properties, test_names, test_map, test_map_errors, test_map_large, test_stay,
           test_stay_moves)
