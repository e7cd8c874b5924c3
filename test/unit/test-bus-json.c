/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdint.h>
#include <sys/socket.h>

#include "bus-json.h"
#include "bus-pair.h"
#include "macro.h"
#include "tests.h"

static char *convert(sd_bus_message *m) {
        json_object *j = NULL;
        char *s;

        ck_assert_int_ge(sd_bus_message_seal(m, 1, 0), 0);
        ck_assert_int_ge(sd_bus_message_rewind(m, true), 0);
        ck_assert_int_ge(bus_message_read_json(m, &j), 0);
        s = strdup(json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN));
        json_object_put(j);
        return s;
}

START_TEST(test_status_like_dict) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = pair_bus();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        char *s;

        ck_assert_int_ge(sd_bus_message_new_method_call(bus, &m, "org.tonari.Manager1", "/org/tonari/Manager1",
                                                        "org.tonari.Manager1", "X"),
                         0);
        ck_assert_int_ge(sd_bus_message_append(m, "a{sv}", 5, "Version", "s", "0.1.0", "PID", "u", 42, "Big", "t",
                                               UINT64_MAX, "Neg", "x", INT64_MIN, "Files", "as", 2, "a", "b\"c"),
                         0);
        s = convert(m);
        ck_assert_str_eq(s, "{\"Version\":\"0.1.0\",\"PID\":42,\"Big\":18446744073709551615,"
                            "\"Neg\":-9223372036854775808,\"Files\":[\"a\",\"b\\\"c\"]}");
        free(s);
}
END_TEST

START_TEST(test_structs_and_basics) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = pair_bus();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        char *s;

        ck_assert_int_ge(sd_bus_message_new_method_call(bus, &m, "a.b", "/a", "a.b", "X"), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "a(sbs)", 2, "numa", 1, "2 nodes", "psi", 0, "none"), 0);
        s = convert(m);
        ck_assert_str_eq(s, "[[\"numa\",true,\"2 nodes\"],[\"psi\",false,\"none\"]]");
        free(s);
}
END_TEST

START_TEST(test_nested_variant_and_empty) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = pair_bus();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        char *s;

        ck_assert_int_ge(sd_bus_message_new_method_call(bus, &m, "a.b", "/a", "a.b", "X"), 0);
        ck_assert_int_ge(sd_bus_message_append(m, "a{sv}", 3, "E", "as", 0, "Y", "y", 255, "D", "d", 0.5), 0);
        s = convert(m);
        ck_assert_str_eq(s, "{\"E\":[],\"Y\":255,\"D\":0.5}");
        free(s);
}
END_TEST

START_TEST(test_end_of_message) {
        _cleanup_(sd_bus_close_unrefp) sd_bus *bus = pair_bus();
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        json_object *j = NULL;

        ck_assert_int_ge(sd_bus_message_new_method_call(bus, &m, "a.b", "/a", "a.b", "X"), 0);
        ck_assert_int_ge(sd_bus_message_seal(m, 1, 0), 0);
        ck_assert_int_eq(bus_message_read_json(m, &j), -ENXIO);
        ck_assert_ptr_null(j);
}
END_TEST

TEST_SUITE("bus-json", test_status_like_dict, test_structs_and_basics, test_nested_variant_and_empty,
           test_end_of_message)
