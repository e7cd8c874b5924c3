/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "slice.h"

/*
 * D-Bus side of slices. The method handlers below belong in the org.tonari.Manager1 vtable,
 * registered with SD_BUS_METHOD_WITH_ARGS_OFFSET so that their userdata points at the
 * daemon's SliceManager pointer (which may be NULL while there is none, e.g. for introspection).
 */
int bus_slice_method_create(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_slice_method_set_properties(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_slice_method_remove(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_slice_method_get(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_slice_method_list(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_slice_method_attach(sd_bus_message *m, void *userdata, sd_bus_error *error);

/* Helpers for other capabilities' methods that name a slice (each sets error and returns < 0). */
int bus_slice_check_manager(SliceManager *sm, sd_bus_error *error); /* NotSupported without slices */
int bus_slice_read_name(sd_bus_message *m, const char **ret, sd_bus_error *error); /* InvalidArgs */
/* A slice name, and the slice of that name that exists (not one still being created; none when sm is
 * NULL): InvalidArgs, NoSuchSlice */
int bus_slice_read_existing(sd_bus_message *m, SliceManager *sm, Slice **ret, sd_bus_error *error);
int bus_slice_error_no_such(sd_bus_error *error, const char *name);                 /* NoSuchSlice */

/* Registers the org.tonari.Slice1 objects below /org/tonari/slice; manager points at the pointer. */
int bus_slice_add_objects(sd_bus *bus, SliceManager **manager);
