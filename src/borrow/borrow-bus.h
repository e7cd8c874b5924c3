/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "borrow.h"

/*
 * D-Bus side of CPU borrowing. The methods belong in the org.tonari.Manager1 vtable, registered
 * with SD_BUS_METHOD_WITH_ARGS_OFFSET so that userdata points at the daemon's BorrowManager
 * pointer (NULL while slices are unavailable, or for introspection).
 */
int bus_borrow_method_charge_cpu(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_borrow_method_add_proxy(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_borrow_method_remove_proxy(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_borrow_method_list_proxies(sd_bus_message *m, void *userdata, sd_bus_error *error);
int bus_borrow_method_list_borrowing(sd_bus_message *m, void *userdata, sd_bus_error *error);

/* Registers org.tonari.Borrowing1 on every slice object; manager points at the pointer. */
int bus_borrow_add_objects(sd_bus *bus, BorrowManager **manager);
