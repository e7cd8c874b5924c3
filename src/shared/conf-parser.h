/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>

/*
 * Table-driven parser for tonari's INI-style configuration files (libinih underneath).
 *
 * A configuration is one main file plus drop-ins: "<main>.d/" + "*.conf" files, applied in lexical order of
 * their file names after the main file, so later assignments win. A missing main file or drop-in
 * directory is not an error: the built-in defaults stay. Unknown sections and keys are reported as
 * warnings and ignored (a newer config keeps working with an older daemon); a value that does not
 * parse is an error naming the file, the line and the value, and the whole load fails.
 */

typedef int (*ConfigParseFunc)(const char *file, unsigned line, const char *section, const char *key,
                               const char *value, void *data);

typedef struct ConfigItem {
        const char *section;
        const char *key;
        ConfigParseFunc parse;
        size_t offset; /* where the value lives, relative to the base pointer given to config_parse() */
} ConfigItem;

/*
 * Parses main_file and its drop-ins into base according to table (terminated by an item with
 * section NULL). On success *ret_files (if non-NULL) lists the files that were read, in order.
 */
int config_parse(const char *main_file, const ConfigItem *table, void *base, char ***ret_files);

/* Parses a single file; used by config_parse() and by tests. */
int config_parse_file(const char *path, const ConfigItem *table, void *base);

/* Value parsers for ConfigItem.parse. */
int config_parse_log_level(const char *file, unsigned line, const char *section, const char *key,
                           const char *value, void *data); /* int, syslog level */
int config_parse_log_target(const char *file, unsigned line, const char *section, const char *key,
                            const char *value, void *data); /* LogTarget */
