/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* json-c helpers for the binaries that link json-c (tonarictl, the image relay). Header only. */

#include <json-c/json.h>

#include "macro.h"

static inline void json_object_putp(json_object **j) {
        if (*j)
                json_object_put(*j);
}
#define _cleanup_json_ _cleanup_(json_object_putp)
