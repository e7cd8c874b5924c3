/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#define IMAGEFS_BUS_NAME "org.tonari.ImageFS1"
#define IMAGEFS_BUS_PATH "/org/tonari/ImageFS1"
#define IMAGEFS_BUS_INTERFACE "org.tonari.ImageFS1"

typedef struct ImagefsManager ImagefsManager;

/* Registers /org/tonari/ImageFS1 (m may be NULL for --bus-introspect). */
int imagefs_bus_add_objects(sd_bus *bus, ImagefsManager *m);
/* The introspection XML of the object, as protocols/org.tonari.ImageFS1.xml holds it. */
int imagefs_bus_introspect(char **ret_xml);
