/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

#define UID_INVALID ((uid_t) -1)
#define GID_INVALID ((gid_t) -1)
