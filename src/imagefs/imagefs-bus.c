/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * org.tonari.ImageFS1 (org.tonari.ImageFS1(5)): the vtable and its handlers; they unpack, check the
 * caller, call the manager and reply.
 */
#include <errno.h>

#include "alloc-util.h"
#include "bus-errors.h"
#include "bus-util.h"
#include "imagefs-bus.h"
#include "imagefs-manager.h"
#include "string-util.h"

static const char *const failure_error[] = {
        [IMAGEFS_FAILURE_INVALID_PATH] = SD_BUS_ERROR_INVALID_ARGS,
        [IMAGEFS_FAILURE_NO_SUCH_DIRECTORY] = TONARI_ERROR_NO_SUCH_DIRECTORY,
        [IMAGEFS_FAILURE_NOT_A_DIRECTORY] = TONARI_ERROR_NOT_A_DIRECTORY,
        [IMAGEFS_FAILURE_ALREADY_MOUNTED] = TONARI_ERROR_ALREADY_MOUNTED,
        [IMAGEFS_FAILURE_NOT_MOUNTED] = TONARI_ERROR_NOT_MOUNTED,
        [IMAGEFS_FAILURE_BUSY] = TONARI_ERROR_MOUNT_BUSY,
        [IMAGEFS_FAILURE_NO_SUCH_IMAGE] = TONARI_ERROR_NO_SUCH_IMAGE,
        [IMAGEFS_FAILURE_RELAY_UNREACHABLE] = TONARI_ERROR_RELAY_UNREACHABLE,
        [IMAGEFS_FAILURE_BAD_TOC] = TONARI_ERROR_BAD_TOC,
        [IMAGEFS_FAILURE_FAILED] = TONARI_ERROR_MOUNT_FAILED,
};

/* The manager's refusal as the named error; out of memory as sd-bus's own. */
static int reply_failure(int r, ImagefsError *e, sd_bus_error *error) {
        if (r == -ENOMEM || !e->message)
                return r == -ENOMEM ? r : sd_bus_error_set_errno(error, r);
        return sd_bus_error_set(error, failure_error[e->failure], e->message);
}

/* The options of MountImage and MountOverlay: Mode s "toc" (the default) or "no-toc". */
static int read_mount_options(sd_bus_message *message, bool *ret_use_toc, sd_bus_error *error) {
        bool use_toc = true;
        int r;

        r = sd_bus_message_enter_container(message, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(message, 'e', "sv")) > 0) {
                const char *key, *mode;

                r = sd_bus_message_read(message, "s", &key);
                if (r < 0)
                        return r;
                if (!streq(key, "Mode")) {
                        _cleanup_free_ char *e = cescape(key);
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Unknown mount option '%s': expected Mode.", strna(e));
                }
                r = sd_bus_message_read(message, "v", "s", &mode);
                if (r < 0)
                        return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "Mode takes a string.");
                if (!streq(mode, "toc") && !streq(mode, "no-toc")) {
                        _cleanup_free_ char *e = cescape(mode);
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Invalid Mode '%s': expected toc or no-toc.", strna(e));
                }
                use_toc = streq(mode, "toc");
                r = sd_bus_message_exit_container(message);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(message);
        if (r < 0)
                return r;
        *ret_use_toc = use_toc;
        return 0;
}

static int method_mount(sd_bus_message *message, void *userdata, sd_bus_error *error, bool overlay) {
        ImagefsManager *m = userdata;
        _cleanup_(imagefs_error_done) ImagefsError e = {};
        const char *image, *target, *upperdir = NULL, *workdir = NULL;
        bool use_toc = true;
        int r;

        if (overlay)
                r = sd_bus_message_read(message, "ssss", &image, &target, &upperdir, &workdir);
        else
                r = sd_bus_message_read(message, "ss", &image, &target);
        if (r < 0)
                return r;
        r = read_mount_options(message, &use_toc, error);
        if (r < 0)
                return r;
        r = bus_verify_privileged(message, error);
        if (r < 0)
                return r;
        r = imagefs_manager_mount_image(m, image, target, upperdir, workdir, use_toc, &e);
        if (r < 0)
                return reply_failure(r, &e, error);
        /* The target is the mount's name: Unmount() takes it. */
        return sd_bus_reply_method_return(message, "s", target);
}

static int method_mount_image(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return method_mount(message, userdata, error, false);
}

static int method_mount_overlay(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return method_mount(message, userdata, error, true);
}

static int method_unmount(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        ImagefsManager *m = userdata;
        _cleanup_(imagefs_error_done) ImagefsError e = {};
        const char *target;
        int r;

        r = sd_bus_message_read(message, "s", &target);
        if (r < 0)
                return r;
        r = bus_verify_privileged(message, error);
        if (r < 0)
                return r;
        r = imagefs_manager_unmount_image(m, target, &e);
        if (r < 0)
                return reply_failure(r, &e, error);
        return sd_bus_reply_method_return(message, NULL);
}

static int append_mounts(sd_bus_message *reply, void *userdata) {
        ImagefsManager *m = userdata;
        int r;

        for (size_t i = 0; i < imagefs_manager_n_images(m); i++) {
                ImagefsImageInfo info;

                imagefs_manager_image_info(m, i, &info);
                r = sd_bus_message_append(reply, "(sssstttttttt)", info.target, info.image,
                                          info.upperdir ? "overlay" : "image", strempty(info.upperdir),
                                          (uint64_t) info.n_layers, info.counters.metadata_round_trips,
                                          info.counters.content_round_trips, info.counters.bytes_fetched,
                                          info.counters.cache_hits, info.counters.cache_misses,
                                          info.counters.toc_load_usec, info.counters.errors);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int method_list_mounts(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_reply_array(message, "(sssstttttttt)", append_mounts, userdata);
}

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", PACKAGE_VERSION);
}

static int property_get_relay(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", imagefs_manager_relay(userdata));
}

static int property_get_cache_directory(sd_bus *bus, const char *path, const char *interface,
                                        const char *property, sd_bus_message *reply, void *userdata,
                                        sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", imagefs_manager_cache_directory(userdata));
}

static int property_get_cache_max_bytes(sd_bus *bus, const char *path, const char *interface,
                                        const char *property, sd_bus_message *reply, void *userdata,
                                        sd_bus_error *error) {
        return sd_bus_message_append(reply, "t", imagefs_manager_cache_max_bytes(userdata));
}

static int property_get_cache_bytes(sd_bus *bus, const char *path, const char *interface, const char *property,
                                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "t", imagefs_manager_cache_bytes(userdata));
}

static int property_get_read_timeout(sd_bus *bus, const char *path, const char *interface, const char *property,
                                     sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "t", (uint64_t) imagefs_manager_read_timeout_usec(userdata));
}

static int property_get_features(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(sbs)");
        if (r < 0)
                return r;
        for (ImagefsFeature f = 0; f < _IMAGEFS_FEATURE_MAX; f++) {
                const char *detail;
                bool available;

                imagefs_feature_detect(userdata, f, &available, &detail);
                r = sd_bus_message_append(reply, "(sbs)", imagefs_feature_to_string(f), available, strempty(detail));
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

static const sd_bus_vtable imagefs_vtable[] = {
        SD_BUS_VTABLE_START(0),

        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Relay", "s", property_get_relay, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CacheDirectory", "s", property_get_cache_directory, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CacheMaxBytes", "t", property_get_cache_max_bytes, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("CacheBytes", "t", property_get_cache_bytes, 0, 0),
        SD_BUS_PROPERTY("ReadTimeoutUSec", "t", property_get_read_timeout, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Features", "a(sbs)", property_get_features, 0, SD_BUS_VTABLE_PROPERTY_CONST),

        /* Read-only, open to everyone (and allowed by the D-Bus policy). */
        SD_BUS_METHOD_WITH_ARGS("ListMounts", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(sssstttttttt)", mounts),
                                method_list_mounts, SD_BUS_VTABLE_UNPRIVILEGED),

        /* Mutating methods: root only, by the D-Bus policy and again in the handler by
         * bus_verify_privileged() (UNPRIVILEGED only switches off sd-bus's implicit CAP_SYS_ADMIN test,
         * so that one check in code decides, and says why). They answer when the mount is there or
         * refused: loading the layers' ToCs may take up to ReadTimeoutSec= per call to the relay. */
        SD_BUS_METHOD_WITH_ARGS("MountImage", SD_BUS_ARGS("s", image, "s", target, "a{sv}", options),
                                SD_BUS_RESULT("s", mount), method_mount_image, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("MountOverlay",
                                SD_BUS_ARGS("s", image, "s", target, "s", upperdir, "s", workdir, "a{sv}", options),
                                SD_BUS_RESULT("s", mount), method_mount_overlay, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS("Unmount", SD_BUS_ARGS("s", target), SD_BUS_NO_RESULT, method_unmount,
                                SD_BUS_VTABLE_UNPRIVILEGED),

        SD_BUS_VTABLE_END,
};

int imagefs_bus_add_objects(sd_bus *bus, ImagefsManager *m) {
        return sd_bus_add_object_vtable(bus, NULL, IMAGEFS_BUS_PATH, IMAGEFS_BUS_INTERFACE, imagefs_vtable, m);
}

static int add_objects(sd_bus *bus, void *userdata) {
        return imagefs_bus_add_objects(bus, userdata);
}

int imagefs_bus_introspect(char **ret_xml) {
        return bus_introspect(add_objects, NULL, IMAGEFS_BUS_PATH, ret_xml);
}
