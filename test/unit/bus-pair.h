/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/socket.h>

#include <systemd/sd-bus.h>

#include "tests.h"

/*
 * An open sd_bus for building messages in unit tests, without a bus daemon: one end of a
 * socketpair whose peer never answers the handshake. Close it with sd_bus_close_unref(), never
 * with a flush (that would wait for the handshake forever).
 */
static inline sd_bus *pair_bus(void) {
        sd_bus *bus = NULL;
        int fds[2];

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
        ck_assert_int_ge(sd_bus_new(&bus), 0);
        ck_assert_int_ge(sd_bus_set_fd(bus, fds[0], fds[0]), 0);
        ck_assert_int_ge(sd_bus_start(bus), 0);
        return bus;
}
