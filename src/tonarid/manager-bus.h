/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

typedef struct Manager Manager;

/* Registers /org/tonari/Manager1 and its interfaces. Also used by --bus-introspect. */
int manager_bus_add_objects(sd_bus *bus, Manager *m);
