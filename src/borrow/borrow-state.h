/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "borrow-ledger.h"
#include "path-util.h"

/*
 * The borrowing state file, pure: one line per target or proxy,
 *
 *   target NAME cgroupid=ID debt=U borrowed=U repaid=U forgiven=U shortened=N overrun=U overrundebt=U
 *          [limit=U period=U own=0|1 conf=U confperiod=U]
 *   proxy ID TARGET cgroupid=ID pid=PID start=TICKS last=U charged=U
 *   proxy ID TARGET cgroupid=ID cgroup=PATH last=U charged=U
 *
 * (U: microseconds; "inf" for USEC_INFINITY). Names are slice names, cgroupid= the slice's cgroup id
 * (Slice.cgroup_id: a slice made again under the same name has another one), cgroup paths have no
 * whitespace (AddProxy() refuses such paths), so fields split on spaces. Lines starting with '#' are
 * comments; the first line names the format version (1 had no cgroupid=: its entries cannot be told
 * from a namesake's, and such a file is not read).
 */

#define BORROW_STATE_HEADER "# tonari borrow state 2"
/* The second line of a state file from a tonarid that keeps a journal: "# generation N" (a comment
 * to older versions). The journal's first line is BORROW_JOURNAL_HEADER N, then target lines of the
 * same format, each replacing that slice's line of the snapshot. */
#define BORROW_STATE_GENERATION "# generation"
#define BORROW_JOURNAL_HEADER "# tonari borrow journal"

typedef enum BorrowStateKind {
        BORROW_STATE_TARGET,
        BORROW_STATE_PROXY,
} BorrowStateKind;

typedef struct BorrowStateEntry {
        BorrowStateKind kind;
        char name[NAME_MAX_LEN + 1]; /* target: the slice; proxy: the slice it works for */
        uint64_t cgroup_id;          /* of that slice */
        /* target */
        BorrowAccount account;
        usec_t limit_usec; /* USEC_INFINITY: no limit in force */
        usec_t period_usec;
        bool limit_own;
        usec_t configured_per_sec_usec;
        usec_t configured_period_usec;
        /* proxy */
        uint32_t id;
        pid_t pid;
        uint64_t start_time_ticks;
        char *cgroup; /* owned */
        usec_t last_usec;
        uint64_t charged_usec;
} BorrowStateEntry;

#define BORROW_STATE_ENTRY_INIT                                                                        \
        ((BorrowStateEntry){ .limit_usec = USEC_INFINITY,                                              \
                             .configured_per_sec_usec = USEC_INFINITY,                                 \
                             .configured_period_usec = USEC_INFINITY })

void borrow_state_entry_done(BorrowStateEntry *e);

/* One line, without the newline. */
int borrow_state_format(const BorrowStateEntry *e, char **ret);
/* -EBADMSG for anything malformed (unknown kind or key, bad number, invalid name or path, no cgroupid=). */
int borrow_state_parse(const char *line, BorrowStateEntry *ret);
