/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "bus-errors.h"
#include "bus-json.h"
#include "bus-util.h"
#include "format-util.h"
#include "log.h"
#include "path-util.h"
#include "string-util.h"
#include "table.h"
#include "time-util.h"
#include "tonarictl.h"
#include "verb-imagefs.h"

#define IMAGEFS_BUS_NAME "org.tonari.ImageFS1"
#define IMAGEFS_PATH "/org/tonari/ImageFS1"
#define IMAGEFS_INTERFACE "org.tonari.ImageFS1"
/* A mount loads every layer's ToC, each call to the relay waiting up to its ReadTimeoutSec= (30 s by
 * default) when the relay is away: sd-bus's default of 25 s would give up before the daemon says why. */
#define MOUNT_CALL_TIMEOUT_USEC (10 * USEC_PER_MINUTE)

/* Like report_bus_error(), for tonari-imagefs: its own "not running", an unknown image is exit status 5. */
static int report(const char *what, const sd_bus_error *error, int r) {
        if (sd_bus_error_has_names(error, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER)) {
                log_error("tonari-imagefs is not running: %s has no owner on %s.", IMAGEFS_BUS_NAME,
                          arg_bus_address ? arg_bus_address : "the system bus");
                log_error("Start it with 'systemctl start tonari-imagefs', or point --bus-address= at its bus.");
                return -ESRCH;
        }
        if (sd_bus_error_has_name(error, TONARI_ERROR_NO_SUCH_IMAGE)) {
                log_error("Failed to %s: %s", what, bus_error_message(error, r));
                return -ENOENT;
        }
        return report_bus_error(what, error, r);
}

/* Checked here for exit status 2 without a round trip; the daemon checks again. */
static int check_path(const char *what, const char *path) {
        _cleanup_free_ char *e = NULL;

        if (path_is_normalized_absolute(path))
                return 0;
        e = cescape(path);
        if (!e)
                return log_oom();
        return log_error_errno(EINVAL, "Invalid %s '%s': expected an absolute path without '.', '..' or '//' "
                               "components.", what, e);
}

int image_mount(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *what = NULL;
        const char *image = argv[1], *target = argv[2];
        int r;

        if (!!arg_upperdir != !!arg_workdir)
                return log_error_errno(EINVAL, "--upper= and --work= go together.");
        r = check_path("target", target);
        if (r < 0)
                return r;
        if (arg_upperdir) {
                r = check_path("upper directory", arg_upperdir);
                if (r >= 0)
                        r = check_path("work directory", arg_workdir);
                if (r < 0)
                        return r;
        }
        r = connect_bus(&bus);
        if (r < 0)
                return r;
        r = sd_bus_message_new_method_call(bus, &call, IMAGEFS_BUS_NAME, IMAGEFS_PATH, IMAGEFS_INTERFACE,
                                           arg_upperdir ? "MountOverlay" : "MountImage");
        if (r >= 0)
                r = sd_bus_message_append(call, "ss", image, target);
        if (r >= 0 && arg_upperdir)
                r = sd_bus_message_append(call, "ss", arg_upperdir, arg_workdir);
        if (r >= 0)
                r = sd_bus_message_append(call, "a{sv}", 0);
        if (r < 0)
                return log_error_errno(r, "Failed to build the call: %m");
        r = sd_bus_call(bus, call, MOUNT_CALL_TIMEOUT_USEC, &error, NULL);
        if (r < 0) {
                what = strjoin("mount image '", image, "' on '", target, "'");
                return report(what ?: "mount", &error, r);
        }
        return 0;
}

int image_unmount(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        for (int i = 1; i < argc; i++) {
                r = check_path("target", argv[i]);
                if (r < 0)
                        return r;
        }
        r = connect_bus(&bus);
        if (r < 0)
                return r;
        for (int i = 1; i < argc; i++) {
                r = sd_bus_call_method(bus, IMAGEFS_BUS_NAME, IMAGEFS_PATH, IMAGEFS_INTERFACE, "Unmount", &error, NULL,
                                       "s", argv[i]);
                if (r < 0) {
                        _cleanup_free_ char *what = strjoin("unmount '", argv[i], "'");
                        return report(what ?: "unmount", &error, r);
                }
        }
        return 0;
}

int image_mounts(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(table_freep) Table *t = NULL;
        _cleanup_json_ json_object *j = NULL;
        size_t n = 0;
        int r;

        r = connect_bus(&bus);
        if (r < 0)
                return r;
        r = call_read_only_on(bus, IMAGEFS_BUS_NAME, IMAGEFS_PATH, IMAGEFS_INTERFACE, "ListMounts", &error, &reply,
                              NULL);
        if (r < 0)
                return report("list the mounts of tonari-imagefs", &error, r);

        t = table_new(9, "TARGET", "IMAGE", "TYPE", "LAYERS", "FETCHED", "HITS", "MISSES", "TOC-LOAD", "ERRORS");
        j = json_object_new_array();
        if (!t || !j)
                return log_oom();
        r = sd_bus_message_enter_container(reply, 'a', "(sssstttttttt)");
        if (r < 0)
                return log_parse_error("ListMounts", r);
        for (;; n++) {
                const char *target, *image, *type, *upper;
                uint64_t layers, meta, content, fetched, hits, misses, toc_usec, errors;
                char b_layers[21], b_hits[21], b_misses[21], b_errors[21],
                        b_fetched[FORMAT_BYTES_MAX], b_toc[FORMAT_TIMESPAN_MAX];
                json_object *o;

                r = sd_bus_message_read(reply, "(sssstttttttt)", &target, &image, &type, &upper, &layers, &meta,
                                        &content, &fetched, &hits, &misses, &toc_usec, &errors);
                if (r < 0)
                        return log_parse_error("ListMounts", r);
                if (r == 0)
                        break;
                snprintf(b_layers, sizeof(b_layers), "%" PRIu64, layers);
                snprintf(b_hits, sizeof(b_hits), "%" PRIu64, hits);
                snprintf(b_misses, sizeof(b_misses), "%" PRIu64, misses);
                snprintf(b_errors, sizeof(b_errors), "%" PRIu64, errors);
                if (table_add_row(t, target, image, type, b_layers, format_bytes(b_fetched, sizeof(b_fetched), fetched),
                                  b_hits, b_misses,
                                  format_timespan(b_toc, sizeof(b_toc), toc_usec, USEC_PER_MSEC / 10), b_errors) < 0)
                        return log_oom();

                o = json_object_new_object();
                if (!o || json_object_array_add(j, o) < 0) {
                        json_object_put(o);
                        return log_oom();
                }
                json_object_object_add(o, "target", json_object_new_string(target));
                json_object_object_add(o, "image", json_object_new_string(image));
                json_object_object_add(o, "type", json_object_new_string(type));
                if (!isempty(upper))
                        json_object_object_add(o, "upperDir", json_object_new_string(upper));
                json_object_object_add(o, "layers", json_object_new_int64((int64_t) layers));
                json_object_object_add(o, "metadataRoundTrips", json_object_new_int64((int64_t) meta));
                json_object_object_add(o, "contentRoundTrips", json_object_new_int64((int64_t) content));
                json_object_object_add(o, "bytesFetched", json_object_new_int64((int64_t) fetched));
                json_object_object_add(o, "cacheHits", json_object_new_int64((int64_t) hits));
                json_object_object_add(o, "cacheMisses", json_object_new_int64((int64_t) misses));
                json_object_object_add(o, "tocLoadUSec", json_object_new_int64((int64_t) toc_usec));
                json_object_object_add(o, "errors", json_object_new_int64((int64_t) errors));
        }
        if (arg_json != JSON_OFF)
                return print_json(j);
        if (n == 0) {
                if (arg_legend)
                        printf("No images mounted.\n");
                return 0;
        }
        r = table_print(t, stdout, arg_legend);
        return r < 0 ? log_oom() : 0;
}

static const char *get_string(json_object *o, const char *key) {
        json_object *v;

        return json_object_object_get_ex(o, key, &v) ? json_object_get_string(v) : NULL;
}

static uint64_t get_uint64(json_object *o, const char *key) {
        json_object *v;

        return json_object_object_get_ex(o, key, &v) ? json_object_get_uint64(v) : 0;
}

int image_status(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_json_ json_object *status = NULL;
        char used[FORMAT_BYTES_MAX], max[FORMAT_BYTES_MAX], timeout[FORMAT_TIMESPAN_MAX];
        uint64_t max_bytes;
        int r;

        r = connect_bus(&bus);
        if (r < 0)
                return r;
        r = call_read_only_on(bus, IMAGEFS_BUS_NAME, IMAGEFS_PATH, "org.freedesktop.DBus.Properties", "GetAll",
                              &error, &reply, "s", IMAGEFS_INTERFACE);
        if (r < 0)
                return report("get the status of tonari-imagefs", &error, r);
        r = bus_message_read_json(reply, &status);
        if (r < 0)
                return log_parse_error("GetAll", r);
        r = features_to_objects(status);
        if (r < 0)
                return log_oom();
        if (arg_json != JSON_OFF)
                return print_json(status);

        max_bytes = get_uint64(status, "CacheMaxBytes");
        printf("tonari-imagefs %s\n", strna(get_string(status, "Version")));
        printf("       Relay: %s\n", strna(get_string(status, "Relay")));
        printf("       Cache: %s (%s of %s)\n", strna(get_string(status, "CacheDirectory")),
               format_bytes(used, sizeof(used), get_uint64(status, "CacheBytes")),
               max_bytes == 0 ? "no bound" : format_bytes(max, sizeof(max), max_bytes));
        printf("Read timeout: %s\n",
               format_timespan(timeout, sizeof(timeout), get_uint64(status, "ReadTimeoutUSec"), USEC_PER_MSEC));
        r = print_features(status);
        return r < 0 ? log_oom() : 0;
}

static const SubVerb imagefs_verbs[] = {
        { "mount", " IMAGE TARGET", 2, 2, image_mount },
        { "unmount", " TARGET...", 1, ARGS_ANY, image_unmount },
        { "mounts", "", 0, 0, image_mounts },
        { "status", "", 0, 0, image_status },
};

bool verb_imagefs_handles(int argc, char *argv[]) {
        if (argc < 2)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(imagefs_verbs); i++)
                if (streq(argv[1], imagefs_verbs[i].name))
                        return true;
        return false;
}

int verb_imagefs(int argc, char *argv[]) {
        return dispatch_subverb(imagefs_verbs, ELEMENTSOF(imagefs_verbs), "mount, unmount, mounts or status", NULL, argc,
                                argv);
}
