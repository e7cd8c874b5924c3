/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-util.h"
#include "strv.h"
#include "table.h"

struct Table {
        size_t n_columns;
        char **cells; /* header row first, row-major, n_columns per row */
};

static Table *table_add_strings(Table *t, va_list ap) {
        for (size_t i = 0; i < t->n_columns; i++) {
                const char *s = va_arg(ap, const char *);
                if (strv_extend(&t->cells, s ?: "-") < 0)
                        return NULL;
        }
        return t;
}

Table *table_new(size_t n_columns, ...) {
        _cleanup_(table_freep) Table *t = NULL;
        va_list ap;

        if (n_columns == 0)
                return NULL;
        t = new0(Table, 1);
        if (!t)
                return NULL;
        t->n_columns = n_columns;

        va_start(ap, n_columns);
        Table *ok = table_add_strings(t, ap);
        va_end(ap);
        return ok ? TAKE_PTR(t) : NULL;
}

Table *table_free(Table *t) {
        if (!t)
                return NULL;
        strv_free(t->cells);
        return mfree(t);
}

int table_add_row(Table *t, ...) {
        va_list ap;
        Table *ok;

        va_start(ap, t);
        ok = table_add_strings(t, ap);
        va_end(ap);
        return ok ? 0 : -ENOMEM;
}

size_t table_rows(const Table *t) {
        return strv_length(t->cells) / t->n_columns - 1;
}

int table_print(const Table *t, FILE *f, bool legend) {
        size_t n = strv_length(t->cells) / t->n_columns;
        _cleanup_free_ size_t *width = new0(size_t, t->n_columns);

        if (!width)
                return -ENOMEM;
        for (size_t row = legend ? 0 : 1; row < n; row++)
                for (size_t c = 0; c < t->n_columns; c++)
                        width[c] = MAX(width[c], strlen(t->cells[row * t->n_columns + c]));

        for (size_t row = legend ? 0 : 1; row < n; row++)
                for (size_t c = 0; c < t->n_columns; c++) {
                        const char *cell = t->cells[row * t->n_columns + c];
                        if (c + 1 < t->n_columns)
                                fprintf(f, "%-*s ", (int) width[c], cell);
                        else
                                fprintf(f, "%s\n", cell);
                }
        return 0;
}
