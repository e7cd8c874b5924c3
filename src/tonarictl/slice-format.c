/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "bus-json.h"
#include "format-util.h"
#include "parse-util.h"
#include "slice-format.h"
#include "string-util.h"
#include "table.h"
#include "time-util.h"

static int entry_compare(const void *a, const void *b) {
        return strcmp(((const SliceListEntry *) a)->name, ((const SliceListEntry *) b)->name);
}

int slice_list_read(sd_bus_message *reply, SliceListEntry **ret_entries, size_t *ret_n) {
        _cleanup_free_ SliceListEntry *entries = NULL;
        size_t n = 0, allocated = 0;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(sosttt)");
        if (r < 0)
                return r;
        for (;;) {
                SliceListEntry e;

                r = sd_bus_message_read(reply, "(sosttt)", &e.name, &e.object, &e.control_group, &e.tasks,
                                        &e.cpu_usec, &e.memory_bytes);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                if (n == allocated) {
                        size_t k = allocated ? allocated * 2 : 8;
                        SliceListEntry *p = reallocarray(entries, k, sizeof(SliceListEntry));
                        if (!p)
                                return -ENOMEM;
                        entries = p;
                        allocated = k;
                }
                entries[n++] = e;
        }
        r = sd_bus_message_exit_container(reply);
        if (r < 0)
                return r;

        /* The daemon lists in its own order; people and diffs want a stable one. */
        if (n > 1)
                qsort(entries, n, sizeof(SliceListEntry), entry_compare);
        *ret_entries = TAKE_PTR(entries);
        *ret_n = n;
        return 0;
}

int slice_list_print(const SliceListEntry *entries, size_t n, FILE *f, bool legend) {
        _cleanup_(table_freep) Table *t = NULL;
        int r;

        if (n == 0) {
                if (legend)
                        fputs("No slices.\n", f);
                return 0;
        }

        t = table_new(5, "NAME", "TASKS", "CPU", "MEMORY", "CGROUP");
        if (!t)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const SliceListEntry *e = entries + i;
                char tasks[21], cpu[FORMAT_TIMESPAN_MAX], memory[FORMAT_BYTES_MAX];

                /* NULL cells print as "-": unknown. */
                (void) snprintf(tasks, sizeof(tasks), "%" PRIu64, e->tasks);
                (void) format_timespan(cpu, sizeof(cpu), e->cpu_usec, USEC_PER_MSEC);
                (void) format_bytes(memory, sizeof(memory), e->memory_bytes);
                r = table_add_row(t, e->name, e->tasks == UINT64_MAX ? NULL : tasks,
                                  e->cpu_usec == UINT64_MAX ? NULL : cpu,
                                  e->memory_bytes == UINT64_MAX ? NULL : memory,
                                  isempty(e->control_group) ? NULL : e->control_group);
                if (r < 0)
                        return r;
        }
        r = table_print(t, f, legend);
        if (r < 0)
                return r;
        if (legend)
                fprintf(f, "\n%zu %s listed.\n", n, n == 1 ? "slice" : "slices");
        return 0;
}

static int json_add_string(json_object *o, const char *key, const char *value) {
        json_object *v = json_object_new_string(value);

        if (!v || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* Unknown (UINT64_MAX) becomes null rather than a number no script should compute with. */
static int json_add_number(json_object *o, const char *key, uint64_t value) {
        json_object *v = NULL;

        if (value != UINT64_MAX) {
                v = json_object_new_uint64(value);
                if (!v)
                        return -ENOMEM;
        }
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int slice_list_to_json(const SliceListEntry *entries, size_t n, json_object **ret) {
        json_object *array = json_object_new_array();

        if (!array)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                const SliceListEntry *e = entries + i;
                json_object *o = json_object_new_object();

                if (!o || json_object_array_add(array, o) < 0) {
                        json_object_put(o);
                        json_object_put(array);
                        return -ENOMEM;
                }
                /* o belongs to array now. */
                if (json_add_string(o, "name", e->name) < 0 || json_add_string(o, "object", e->object) < 0 ||
                    json_add_string(o, "control_group", e->control_group) < 0 ||
                    json_add_number(o, "tasks", e->tasks) < 0 ||
                    json_add_number(o, "cpu_usec", e->cpu_usec) < 0 ||
                    json_add_number(o, "memory_bytes", e->memory_bytes) < 0) {
                        json_object_put(array);
                        return -ENOMEM;
                }
        }
        *ret = array;
        return 0;
}

/* UINT64_MAX in a limit means no limit; in a weight or a usage counter, not set or unknown. */
static bool property_is_limit(const char *name) {
        return endswith(name, "Max") || endswith(name, "High") || startswith(name, "CPUQuota");
}

static int print_uint64(const char *name, uint64_t v, FILE *f) {
        char buf[FORMAT_TIMESPAN_MAX];

        if (v == UINT64_MAX)
                fprintf(f, "%s=%s\n", name, property_is_limit(name) ? "infinity" : "[not set]");
        else if (endswith(name, "USec"))
                fprintf(f, "%s=%s\n", name, format_timespan(buf, sizeof(buf), v, 1));
        else
                fprintf(f, "%s=%" PRIu64 "\n", name, v);
        return 0;
}

/* "IOWriteBandwidthMax=/dev/vda 5000000", one line per device; the bare key for an empty list. */
static int print_device_limits(sd_bus_message *m, const char *name, FILE *f) {
        const char *path;
        uint64_t v;
        bool any = false;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(st)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(st)", &path, &v)) > 0) {
                if (v == UINT64_MAX)
                        fprintf(f, "%s=%s infinity\n", name, path);
                else
                        fprintf(f, "%s=%s %" PRIu64 "\n", name, path, v);
                any = true;
        }
        if (r < 0)
                return r;
        if (!any)
                fprintf(f, "%s=\n", name);
        return sd_bus_message_exit_container(m);
}

static int print_index_list(sd_bus_message *m, const char *name, FILE *f) {
        _cleanup_free_ char *list = NULL;
        const void *mask;
        size_t size;
        int r;

        r = sd_bus_message_read_array(m, 'y', &mask, &size);
        if (r < 0)
                return r;
        list = format_index_list(mask, size);
        if (!list)
                return -ENOMEM;
        fprintf(f, "%s=%s\n", name, list);
        return 0;
}

static int print_json_value(sd_bus_message *m, const char *name, FILE *f) {
        json_object *j = NULL;
        int r;

        r = bus_message_read_json(m, &j);
        if (r < 0)
                return r;
        fprintf(f, "%s=%s\n", name,
                json_object_to_json_string_ext(j, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(j);
        return 0;
}

static int print_property(sd_bus_message *m, const char *name, FILE *f) {
        const char *contents, *s;
        uint64_t t;
        int b, r;

        r = sd_bus_message_peek_type(m, NULL, &contents);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'v', contents);
        if (r < 0)
                return r;

        if (streq(contents, "t")) {
                r = sd_bus_message_read_basic(m, 't', &t);
                if (r >= 0)
                        r = print_uint64(name, t, f);
        } else if (streq(contents, "s") || streq(contents, "o")) {
                r = sd_bus_message_read_basic(m, contents[0], &s);
                if (r >= 0)
                        fprintf(f, "%s=%s\n", name, s);
        } else if (streq(contents, "b")) {
                r = sd_bus_message_read_basic(m, 'b', &b);
                if (r >= 0)
                        fprintf(f, "%s=%s\n", name, yes_no(b));
        } else if (streq(contents, "a(st)"))
                r = print_device_limits(m, name, f);
        else if (streq(contents, "ay"))
                r = print_index_list(m, name, f);
        else
                r = print_json_value(m, name, f);
        if (r < 0)
                return r;

        return sd_bus_message_exit_container(m);
}

int slice_properties_print(sd_bus_message *reply, FILE *f) {
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        for (;;) {
                const char *name;

                r = sd_bus_message_enter_container(reply, 'e', "sv");
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
                r = sd_bus_message_read_basic(reply, 's', &name);
                if (r < 0)
                        return r;
                r = print_property(reply, name, f);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_exit_container(reply);
}
