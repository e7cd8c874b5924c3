/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <getopt.h>

/*
 * The command-line options every tonari binary takes. A binary's getopt_long() table starts with
 * COMMON_OPTIONS, its own ARG_* values start at ARG_COMMON_MAX, and its switch ends with
 * "default: return parse_common_option(c, ...);".
 */
enum {
        ARG_VERSION = 0x100,
        ARG_COMMON_MAX,
};

#define COMMON_OPTIONS                                                                                 \
        { "help", no_argument, NULL, 'h' }, { "version", no_argument, NULL, ARG_VERSION }

/*
 * -h/--help calls help(), --version prints "<name> <version>": both return 0, and the binary exits
 * successfully. getopt_long()'s '?' (it has told the user already) and anything else are -EINVAL.
 */
int parse_common_option(int c, const char *name, void (*help)(void));

/* For a binary that takes options only: -EINVAL, said, when argv has more after them. */
int refuse_positional_args(int argc, char *argv[]);

/* Logs that value (escaped, in quotes) is not valid for option ("--rate="), saying what was
 * expected; returns -EINVAL. */
int log_invalid_option_value(const char *option, const char *value, const char *expected);
