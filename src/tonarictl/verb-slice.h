/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * 'tonarictl slice COMMAND ...': create, set, show, list, attach and remove slices through
 * org.tonari.Manager1. argv[0] is "slice". Returns 0 or a negative errno (see tonarictl.h).
 */
int verb_slice(int argc, char *argv[]);
