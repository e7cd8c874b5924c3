/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/*
 * "Stop now" for long work (a pull's transfers, unpacking, archive extraction, waiting for another
 * pull): asked between pieces of work, so that work whose client went away, or a relay that shuts
 * down, ends within one piece (a read, a tar entry, a second of a stalled transfer) instead of
 * running on unobserved. The callback must be cheap; the relay's asks the rpc call, at most every
 * few milliseconds.
 */
typedef struct Cancel {
        bool (*cancelled)(void *userdata);
        void *userdata;
} Cancel;

static inline bool cancel_requested(const Cancel *c) {
        return c && c->cancelled && c->cancelled(c->userdata);
}
