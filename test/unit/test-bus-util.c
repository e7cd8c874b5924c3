/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "bus-util.h"
#include "tests.h"

START_TEST(test_bus_address_is_valid) {
        const char *good[] = {
                "unix:path=/run/dbus/system_bus_socket",
                "unix:path=/tmp/tonari-test.Ab3/bus,guid=2fa34446391ce9f9570c1e7a6b023ee8",
                "unix:abstract=/tmp/dbus-x",
                "tcp:host=localhost,port=1234",
                "unix:path=/a;unix:path=/b",
                "unix:path=/a;",
                "unix:path=/with%20escape",
        };
        const char *bad[] = {
                "", "garbage", "unix", ":path=/x", "unix:path", "unix:=x", "unix:path=/a,,b", "Unix:path=/x",
                "unix:path=/a b", "unix:path=/a\n", "unix:path=/a;garbage", "unix:path=\"/x\"",
        };

        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                ck_assert_msg(bus_address_is_valid(good[i]), "'%s' rejected", good[i]);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(!bus_address_is_valid(bad[i]), "'%s' accepted", bad[i]);
        ck_assert(!bus_address_is_valid(NULL));
}
END_TEST

TEST_SUITE("bus-util", test_bus_address_is_valid)
