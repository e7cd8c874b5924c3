/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc-util.h"
#include "log.h"
#include "string-util.h"

/*
 * Table-driven parser for tonari's INI-style configuration files (libinih underneath).
 *
 * A configuration is one main file plus drop-ins: "<main>.d/" + "*.conf" files, applied in lexical order of
 * their file names after the main file, so later assignments win. A missing main file or drop-in
 * directory is not an error: the built-in defaults stay; a file that is a symlink to /dev/null is
 * masked (skipped). An empty assignment ("Key=") resets the setting to its built-in default.
 * Unknown sections and keys are reported as warnings and ignored (a newer config keeps working
 * with an older daemon); a value that does not parse is an error naming the file, the line and the
 * value, and the whole load fails.
 *
 * Syntax is libinih's with two differences that make it behave like systemd's files: leading
 * whitespace is insignificant (libinih would treat an indented line as the continuation of the
 * previous value), and only '=' separates a key from its value (libinih also takes ':').
 */

typedef int (*ConfigParseFunc)(const char *file, unsigned line, const char *section, const char *key,
                               const char *value, void *data);

typedef struct ConfigItem {
        const char *section;
        const char *key;
        ConfigParseFunc parse;
        size_t offset; /* where the value lives, relative to the base pointer given to config_parse() */
        size_t size;   /* its size, for resetting it from the defaults on "Key=" */
} ConfigItem;

#define CONFIG_ITEM(section, key, parse, type, field)                                                  \
        { section, key, parse, offsetof(type, field), sizeof(((type *) NULL)->field) }

/*
 * Parses main_file and its drop-ins into base according to table (terminated by an item with
 * section NULL); defaults has the same type as base and supplies the values for empty
 * assignments. Value fields must not own memory (they are reset by copying). On success
 * *ret_files (if non-NULL) lists the files that were read, in order.
 */
int config_parse(const char *main_file, const ConfigItem *table, void *base, const void *defaults,
                 char ***ret_files);

/* Parses a single file: 1 if it was read, 0 if masked (/dev/null), -ENOENT if missing. */
int config_parse_file(const char *path, const ConfigItem *table, void *base, const void *defaults);

/*
 * Defines a ConfigParseFunc for an enumeration: from_string returns the value, or < 0 for an
 * unknown word; expected lists the valid words for the error message. Prefix with "static" for a
 * parser local to one file.
 */
#define DEFINE_CONFIG_PARSE_ENUM(function, type, from_string, expected)                                \
        int function(const char *file, unsigned line, const char *section, const char *key,            \
                     const char *value, void *data) {                                                  \
                type *t = data, v = from_string(value);                                                \
                if ((int) v < 0) {                                                                     \
                        _cleanup_free_ char *e = cescape(value);                                       \
                        return log_error_errno(EINVAL, "%s:%u: Invalid %s= value '%s': expected %s.", file, \
                                               line, key, strna(e), expected);                         \
                }                                                                                      \
                *t = v;                                                                                \
                return 0;                                                                              \
        }

/* A list of user or group IDs in a configuration value field (no owned memory, see above). */
#define CONFIG_ID_LIST_MAX 64
typedef struct ConfigIdList {
        size_t n;
        uint32_t ids[CONFIG_ID_LIST_MAX];
} ConfigIdList;

/*
 * For list settings in a fixed array: each space-separated word of value is parsed by parse_word()
 * into an item of item_size bytes and appended to items, where *n are already; a word it refuses
 * (< 0) is an error "Invalid KEY= entry 'WORD': <why>.", and so is an item beyond max.
 */
int config_parse_word_list(const char *file, unsigned line, const char *key, const char *value, void *items,
                           size_t *n, size_t max, size_t item_size, int (*parse_word)(const char *word, void *ret),
                           const char *why);

/* Value parsers for ConfigItem.parse. */
int config_parse_log_level(const char *file, unsigned line, const char *section, const char *key,
                           const char *value, void *data); /* int, syslog level */
int config_parse_log_target(const char *file, unsigned line, const char *section, const char *key,
                            const char *value, void *data); /* LogTarget */
int config_parse_path(const char *file, unsigned line, const char *section, const char *key, const char *value,
                      void *data); /* char[PATH_MAX], absolute and normalized */
int config_parse_sec(const char *file, unsigned line, const char *section, const char *key, const char *value,
                     void *data); /* usec_t, a time span ("100ms", "2s"); "infinity" is refused */
int config_parse_percent(const char *file, unsigned line, const char *section, const char *key,
                         const char *value, void *data); /* unsigned, "0%".."100%" */
int config_parse_unsigned(const char *file, unsigned line, const char *section, const char *key,
                          const char *value, void *data); /* unsigned, > 0 */
int config_parse_size(const char *file, unsigned line, const char *section, const char *key, const char *value,
                      void *data); /* uint64_t bytes, "16M", > 0; K/M/G are 1024-based */
int config_parse_mode(const char *file, unsigned line, const char *section, const char *key, const char *value,
                      void *data); /* unsigned, an octal file mode up to 07777 */
/* Space-separated user (group) names or numeric IDs, resolved when read; each assignment adds to
 * the list, an empty one clears it. An unknown name is an error. */
int config_parse_user_list(const char *file, unsigned line, const char *section, const char *key,
                           const char *value, void *data); /* ConfigIdList */
int config_parse_group_list(const char *file, unsigned line, const char *section, const char *key,
                            const char *value, void *data); /* ConfigIdList */
