/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "bus-json.h"
#include "json-util.h"
#include "macro.h"

static int read_basic(sd_bus_message *m, char type, json_object **ret) {
        union {
                uint8_t u8;
                int b;
                int16_t s16;
                uint16_t u16;
                int32_t s32;
                uint32_t u32;
                int64_t s64;
                uint64_t u64;
                double d;
                const char *str;
        } v;
        json_object *j;
        int r;

        r = sd_bus_message_read_basic(m, type, &v);
        if (r < 0)
                return r;

        switch (type) {
        case 'y': j = json_object_new_int(v.u8); break;
        case 'b': j = json_object_new_boolean(v.b); break;
        case 'n': j = json_object_new_int(v.s16); break;
        case 'q': j = json_object_new_int(v.u16); break;
        case 'i': j = json_object_new_int(v.s32); break;
        case 'u': j = json_object_new_int64(v.u32); break;
        case 'x': j = json_object_new_int64(v.s64); break;
        case 't': j = json_object_new_uint64(v.u64); break;
        case 'd': j = json_object_new_double(v.d); break;
        case 's':
        case 'o':
        case 'g': j = json_object_new_string(v.str); break;
        case 'h': j = json_object_new_int(-1); break; /* file descriptors mean nothing in JSON */
        default: return -EBADMSG;
        }
        if (!j)
                return -ENOMEM;
        *ret = j;
        return 0;
}

static int read_container(sd_bus_message *m, char type, const char *contents, json_object **ret) {
        _cleanup_json_ json_object *j = NULL;
        bool dict = type == 'a' && contents[0] == '{' && contents[1] == 's';
        int r;

        r = sd_bus_message_enter_container(m, type, contents);
        if (r < 0)
                return r;

        if (type == 'v') {
                r = bus_message_read_json(m, &j);
                if (r < 0)
                        return r;
        } else {
                j = dict ? json_object_new_object() : json_object_new_array();
                if (!j)
                        return -ENOMEM;

                for (;;) {
                        _cleanup_json_ json_object *item = NULL;
                        const char *key;

                        r = sd_bus_message_at_end(m, false);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                break;

                        if (dict) {
                                /* "{sv}" → the entry's own signature "sv" */
                                r = sd_bus_message_enter_container(m, 'e', strndupa(contents + 1, strlen(contents) - 2));
                                if (r < 0)
                                        return r;
                                r = sd_bus_message_read_basic(m, 's', &key);
                                if (r < 0)
                                        return r;
                                r = bus_message_read_json(m, &item);
                                if (r < 0)
                                        return r;
                                r = sd_bus_message_exit_container(m);
                                if (r < 0)
                                        return r;
                                if (json_object_object_add(j, key, item) < 0)
                                        return -ENOMEM;
                        } else {
                                r = bus_message_read_json(m, &item);
                                if (r < 0)
                                        return r;
                                if (json_object_array_add(j, item) < 0)
                                        return -ENOMEM;
                        }
                        item = NULL; /* owned by j now */
                }
        }

        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(j);
        return 0;
}

int bus_message_read_json(sd_bus_message *m, json_object **ret) {
        const char *contents;
        char type;
        int r;

        r = sd_bus_message_peek_type(m, &type, &contents);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENXIO; /* nothing left to read */

        if (type == 'a' || type == 'r' || type == 'v' || type == 'e')
                return read_container(m, type, contents, ret);
        return read_basic(m, type, ret);
}
