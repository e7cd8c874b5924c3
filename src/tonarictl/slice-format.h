/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

/*
 * How 'tonarictl slice list' and 'slice show' present the daemon's replies. Pure: reads a
 * message, writes to the FILE or builds JSON, never touches the bus or logs, so the unit tests
 * feed it hand-built messages.
 */

/* One row of ListSlices() → a(sosttt). The strings point into the reply message: keep it alive. */
typedef struct SliceListEntry {
        const char *name;
        const char *object;
        const char *control_group;
        uint64_t tasks;        /* UINT64_MAX: unknown */
        uint64_t cpu_usec;     /* UINT64_MAX: unknown */
        uint64_t memory_bytes; /* UINT64_MAX: unknown */
} SliceListEntry;

/* Reads the whole reply of ListSlices(); the entries come back sorted by name. */
int slice_list_read(sd_bus_message *reply, SliceListEntry **ret_entries, size_t *ret_n);

/*
 * The table NAME TASKS CPU MEMORY CGROUP (CPU to the millisecond, memory in binary units, "-"
 * where unknown); with legend a header and a closing "N slices listed." line, or "No slices."
 * when there are none (without legend: nothing).
 */
int slice_list_print(const SliceListEntry *entries, size_t n, FILE *f, bool legend);

/*
 * A JSON array of objects with the keys name, object, control_group, tasks, cpu_usec and
 * memory_bytes; unknown numbers are null.
 */
int slice_list_to_json(const SliceListEntry *entries, size_t n, json_object **ret);

/*
 * Prints the reply of Properties.GetAll() (a{sv}) as "Key=Value" lines in the order received,
 * like 'systemctl show': *USec values as time spans, "ay" masks as index lists ("0-3,5"), each
 * entry of an "a(st)" list on its own line ("IOWriteBandwidthMax=/dev/vda 5000000", the bare key
 * when the list is empty), UINT64_MAX as "infinity" for limits and "[not set]" for everything
 * else. Types it has no rule for are printed as compact JSON.
 */
int slice_properties_print(sd_bus_message *reply, FILE *f);
