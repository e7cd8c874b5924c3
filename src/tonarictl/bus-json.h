/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <json-c/json.h>
#include <systemd/sd-bus.h>

/*
 * Converts the next complete value in m to JSON: integers and booleans natively, strings and
 * object paths as strings, arrays as arrays, dictionaries with string keys (a{s...}) as objects,
 * structs as arrays, variants as their contents. 64-bit unsigned values above INT64_MAX (e.g.
 * "infinity" as UINT64_MAX) are kept exact via json-c's uint64 support.
 */
int bus_message_read_json(sd_bus_message *m, json_object **ret);
