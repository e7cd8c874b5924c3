/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "macro.h"

/* A plain text table as systemctl prints them: an upper-case header line, left-aligned columns. */
typedef struct Table Table;

Table *table_new(size_t n_columns, ...);
Table *table_free(Table *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Table *, table_free);

/* Adds one row; takes exactly n_columns strings (copied; NULL prints as "-"). */
int table_add_row(Table *t, ...);
size_t table_rows(const Table *t) _pure_;
/* The last column is not padded, so long details do not drag trailing blanks. */
int table_print(const Table *t, FILE *f, bool legend);
