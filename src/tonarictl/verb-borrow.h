/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * 'tonarictl borrow COMMAND ...': CPU borrowing through org.tonari.Manager1 (list, charge,
 * add-proxy, remove-proxy, proxies). argv[0] is "borrow". Returns 0 or a negative errno.
 */
int verb_borrow(int argc, char *argv[]);
