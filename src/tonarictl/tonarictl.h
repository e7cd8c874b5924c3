/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What tonarictl.c shares with the files holding further verbs (verb-slice.c): the options from
 * the command line and the helpers every verb uses to reach tonarid.
 *
 * Verbs return 0 or a negative errno; main() turns that into the exit status. Only these errnos
 * have their own code (tonarictl(1), "Exit status"): -EINVAL 2 (usage, arguments refused),
 * -ESRCH 3 (not running), -EACCES/-EPERM 4 (access denied), -ENOENT 5 (no such slice: returned
 * for org.tonari.Error.NoSuchSlice or a slice object that vanished, never for local errors, so
 * verbs must not pass another -ENOENT through). Anything else is 1.
 */

#include <limits.h>
#include <stdbool.h>

#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "json-util.h"
#include "macro.h"

#define BUS_NAME "org.tonari.Manager1"
#define MANAGER_PATH "/org/tonari/Manager1"
#define MANAGER_INTERFACE "org.tonari.Manager1"
#define SLICE_INTERFACE "org.tonari.Slice1"

typedef enum JsonMode {
        JSON_OFF,
        JSON_SHORT,
        JSON_PRETTY,
} JsonMode;

extern const char *arg_bus_address;
extern JsonMode arg_json;
extern bool arg_legend;
extern const char *arg_move_to; /* 'slice remove' only; main() refuses it elsewhere */
extern bool arg_wait;           /* 'slice migrate' only */
/* The image commands' options (parsed by every tonarictl, used by tonarictl-relay). */
extern const char *arg_relay;
extern bool arg_plain_http;
extern bool arg_dry_run;
extern const char *arg_platform;
/* 'image mount': MountOverlay with these, MountImage without. */
extern const char *arg_upperdir;
extern const char *arg_workdir;

/* A command of a verb group ("slice create", "borrow list"). */
typedef struct SubVerb {
        const char *name;
        const char *arguments;  /* for the message about a wrong number of them */
        int min_args, max_args; /* not counting the command itself */
        int (*run)(int argc, char *argv[]);
} SubVerb;
#define ARGS_ANY INT_MAX

/*
 * Runs the command argv[1] of verb group argv[0] from verbs; a missing or unknown command, or a
 * wrong number of arguments, is a usage error naming the choices (expected: "create, set or ...").
 * Without a command, runs default_verb if given.
 */
int dispatch_subverb(const SubVerb *verbs, size_t n_verbs, const char *expected, int (*default_verb)(int, char **),
                     int argc, char *argv[]);

/* A reply that is not what the API promises is a failure (exit status 1), never a usage error. */
int log_parse_error(const char *member, int r);

/* Checks a slice name locally (exit status 2 without a round trip); the daemon checks again. */
int check_slice_name(const char *name);
/* Logs why a connection or call failed, naming the action ("create slice 'web'"); returns the errno
 * to exit with. */
int report_bus_error(const char *what, const sd_bus_error *error, int r);
/* Connects to --bus-address= or the system bus; failures are reported already. */
int connect_bus(sd_bus **ret);
/* Prints j to stdout as --json= asks. */
int print_json(json_object *j);
/* A status's "Features" a(sbs), as a daemon's Features property has it, into objects (name,
 * available, detail): JSON reads better so. */
int features_to_objects(json_object *status);
/* Its "Features" (after features_to_objects()) as a table, after an empty line. */
int print_features(json_object *status);
/* A method call that must not start tonarid through D-Bus activation (auto-start off). */
int call_read_only(sd_bus *bus, const char *path, const char *interface, const char *member,
                   sd_bus_error *error, sd_bus_message **ret_reply, const char *types, ...);
int call_read_only_on(sd_bus *bus, const char *destination, const char *path, const char *interface,
                      const char *member, sd_bus_error *error, sd_bus_message **ret_reply, const char *types, ...);
/* Connects, and calls tonarid's method member without arguments, read-only; a failure is reported as
 * "Failed to <what>". *ret_bus is the connection the reply came on. */
int call_manager_read_only(const char *member, const char *what, sd_bus **ret_bus, sd_bus_message **ret_reply);

/*
 * The list verbs: member's reply is an array of element; row() reads one element (0 after the last)
 * into a row of table (taken over) and into the JSON object o. Printed as --json= says, else as
 * the table, or as "No <none>." when empty; footer (optional) follows the table.
 */
typedef struct Table Table;
int print_manager_list(const char *member, const char *what, const char *element, Table *table,
                       int (*row)(sd_bus_message *reply, Table *t, json_object *o), const char *none,
                       const char *footer);
