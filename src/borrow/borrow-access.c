/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Caller access: who may call ChargeCPU() (root, and the users and groups of [Borrow] AllowUsers=
 * and AllowGroups=), with the credentials of a connection asked for once (see BorrowCharger).
 */
#include <errno.h>
#include <stdlib.h>

#include "alloc-util.h"
#include "borrow-internal.h"
#include "string-util.h"

static bool id_listed(const uint32_t *ids, size_t n, uint32_t id) {
        for (size_t i = 0; i < n; i++)
                if (ids[i] == id)
                        return true;
        return false;
}

/* Asks the bus who sent m, for the access check of ChargeCPU(). */
static int charger_query(sd_bus_message *m, BorrowManager *bm, BorrowCharger *ret) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        const gid_t *gids = NULL;
        uid_t uid = (uid_t) -1;
        gid_t gid = (gid_t) -1;
        pid_t pid = 0;
        int r, n;

        r = sd_bus_query_sender_creds(m,
                                      SD_BUS_CREDS_EUID | SD_BUS_CREDS_EGID | SD_BUS_CREDS_SUPPLEMENTARY_GIDS |
                                              SD_BUS_CREDS_PID | SD_BUS_CREDS_AUGMENT,
                                      &creds);
        if (r < 0)
                return r;
        (void) sd_bus_creds_get_pid(creds, &pid);
        (void) sd_bus_creds_get_euid(creds, &uid);
        *ret = (BorrowCharger) { .uid = uid, .pid = pid };
        if (bm->n_allow_gids == 0)
                return 0;
        if (sd_bus_creds_get_egid(creds, &gid) >= 0 && id_listed(bm->allow_gids, bm->n_allow_gids, gid)) {
                ret->in_group = true;
                return 0;
        }
        n = sd_bus_creds_get_supplementary_gids(creds, &gids);
        for (int i = 0; i < n; i++)
                if (id_listed(bm->allow_gids, bm->n_allow_gids, gids[i])) {
                        ret->in_group = true;
                        break;
                }
        return 0;
}

/* The remembered caller of m, asked for on its connection's first call (see BorrowCharger). */
static int charger_get(sd_bus_message *m, BorrowManager *bm, BorrowCharger *ret) {
        const char *sender = sd_bus_message_get_sender(m);
        BorrowCharger *slot = NULL;
        usec_t now_usec = now(CLOCK_MONOTONIC);
        int r;

        /* No sender: a direct connection without a bus daemon, nothing to remember it by. */
        if (!sender || sender[0] != ':')
                return charger_query(m, bm, ret);

        for (size_t i = 0; i < BORROW_CHARGERS_MAX; i++) {
                BorrowCharger *c = &bm->chargers[i];

                if (c->sender && streq(c->sender, sender)) {
                        c->used = now_usec;
                        *ret = *c;
                        return 0;
                }
                if (!slot || !c->sender || (slot->sender && c->used < slot->used))
                        slot = c;
        }

        r = charger_query(m, bm, ret);
        if (r < 0)
                return r;
        free(slot->sender);
        *slot = *ret;
        slot->sender = strdup(sender);
        slot->used = now_usec;
        /* Out of memory: it is asked for again next time. */
        if (!slot->sender)
                *slot = (BorrowCharger) {};
        ret->sender = NULL;
        return 0;
}

/* Root, or a user or group tonarid.conf allows to charge. */
int borrow_verify_charger(sd_bus_message *m, BorrowManager *bm, pid_t *ret_pid, sd_bus_error *error) {
        BorrowCharger c;
        int r;

        r = charger_get(m, bm, &c);
        if (r < 0)
                return r;
        *ret_pid = c.pid;
        if (c.uid != (uid_t) -1 && (c.uid == 0 || id_listed(bm->allow_uids, bm->n_allow_uids, c.uid)))
                return 0;
        if (c.in_group)
                return 0;
        return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
                                 "Access denied: ChargeCPU() is for root and for the users and groups that "
                                 "tonarid.conf's [Borrow] AllowUsers= and AllowGroups= list (caller UID %d).",
                                 (int) c.uid);
}

void borrow_manager_forget_chargers(BorrowManager *m) {
        for (size_t i = 0; i < BORROW_CHARGERS_MAX; i++) {
                free(m->chargers[i].sender);
                m->chargers[i] = (BorrowCharger) {};
        }
}
