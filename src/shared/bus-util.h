/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdio.h>

#include <systemd/sd-bus.h>

#include "macro.h"

/*
 * Connects to the bus at address, or to the system bus when address is NULL (sd-bus honours
 * $DBUS_SYSTEM_BUS_ADDRESS there). Both behave like the system bus: a message bus with name
 * ownership, and method calls from other users are not trusted.
 */
int bus_open(const char *address, const char *description, sd_bus **ret);

/*
 * Syntax check of a D-Bus address ("unix:path=/run/x", "tcp:host=h,port=1;unix:abstract=y"):
 * sd-bus reports an unparsable address only as a refused connection, which reads like "nobody is
 * listening". Checks form, not reachability.
 */
bool bus_address_is_valid(const char *address) _pure_;

/* Handles a --bus-address= option: on a bad address logs why (value escaped) and returns -EINVAL. */
int bus_address_from_option(const char *value, const char **ret);

/*
 * For handlers of mutating methods: succeeds if the sender is root or runs as the same user as
 * this daemon; otherwise fills error with org.freedesktop.DBus.Error.AccessDenied and returns
 * -EACCES. This is the in-code half of the policy; the D-Bus policy file is the other half.
 */
int bus_verify_privileged(sd_bus_message *m, sd_bus_error *error);

/* The sender's effective UID, for logs; (uid_t) -1 if unknown. */
uid_t bus_sender_uid(sd_bus_message *m);

/* Appends a container (type 'a', 'v', 'r', 'e') of contents to reply, filled by append(). */
int bus_message_append_container(sd_bus_message *reply, char type, const char *contents,
                                 int (*append)(sd_bus_message *reply, void *userdata), void *userdata);

/*
 * Replies to the method call m with an array of contents (its element signature: "(usustt)",
 * "{sv}", ...) whose elements append() adds to the open array; returns what sending returns, or
 * append()'s error (then nothing is sent, and sd-bus replies with that error).
 */
int bus_reply_array(sd_bus_message *m, const char *contents, int (*append)(sd_bus_message *reply, void *userdata),
                    void *userdata);

/*
 * Reads an "ay" bitmask (the AllowedCPUs= layout) into *mask, freeing what it held; an empty
 * array leaves NULL and 0.
 */
int bus_message_read_bitmask(sd_bus_message *m, uint8_t **mask, size_t *size);

/* A human-readable message for a failed call: the D-Bus error's message if any, else strerror. */
const char *bus_error_message(const sd_bus_error *e, int error);

/*
 * Produces the introspection XML that sd-bus generates for object_path after add_objects() has
 * registered the vtables on a bus, without connecting to any message bus: a private peer-to-peer
 * connection over a socketpair asks the in-process server. This makes the C vtable the single
 * source of truth for the XML files in protocols/.
 */
int bus_introspect(int (*add_objects)(sd_bus *bus, void *userdata), void *userdata, const char *object_path,
                   char **ret_xml);

/*
 * Adds the <interface name="interface"> element of other_xml to *xml, before its closing
 * </node>: for one document that lists every interface a service implements, as
 * systemd's --bus-introspect does.
 */
int bus_introspect_add_interface(char **xml, const char *other_xml, const char *interface);

/* --bus-introspect=PATH: writes xml to PATH, or to stdout for "-"; logs a failure. */
int bus_introspect_write(const char *xml, const char *path);
