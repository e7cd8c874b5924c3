/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * 'tonarictl hog COMMAND ...': hog limiting through org.tonari.Manager1 (list, watch, set,
 * register, unregister). argv[0] is "hog". Returns 0 or a negative errno.
 */
int verb_hog(int argc, char *argv[]);
