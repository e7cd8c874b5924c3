/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "table.h"
#include "tests.h"

static char *render(const Table *t, bool legend) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(table_print(t, f, legend), 0);
        fclose(f);
        return buf;
}

START_TEST(test_table) {
        _cleanup_(table_freep) Table *t = table_new(3, "FEATURE", "AVAILABLE", "DETAIL");
        _cleanup_free_ char *with = NULL, *without = NULL;

        ck_assert_ptr_nonnull(t);
        ck_assert_int_eq(table_add_row(t, "numa", "yes", "2 nodes online (0-1)"), 0);
        ck_assert_int_eq(table_add_row(t, "page-idle", "no", NULL), 0);
        ck_assert_uint_eq(table_rows(t), 2);

        with = render(t, true);
        ck_assert_str_eq(with, "FEATURE   AVAILABLE DETAIL\n"
                               "numa      yes       2 nodes online (0-1)\n"
                               "page-idle no        -\n");
        without = render(t, false);
        ck_assert_str_eq(without, "numa      yes 2 nodes online (0-1)\n"
                                  "page-idle no  -\n");
        ck_assert_ptr_null(table_new(0));
}
END_TEST

TEST_SUITE("table", test_table)
