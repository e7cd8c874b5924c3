/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/* Handlers of org.tonari.Manager1's hog limiting methods; userdata is a LimiterManager **. */
int bus_limiter_method_set_hog_limiting(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_limiter_method_register(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_limiter_method_unregister(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_limiter_method_list_processes(sd_bus_message *m, void *userdata, sd_bus_error *error);
