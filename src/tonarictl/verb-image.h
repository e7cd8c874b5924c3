/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/*
 * 'tonarictl image COMMAND ...': the image relay over gRPC (pull, list, show, remove, gc) and a
 * local ToC file (toc). argv[0] is "image". Returns 0 or a negative errno.
 */
int verb_image(int argc, char *argv[]);
