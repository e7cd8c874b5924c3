/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>

#include "alloc-util.h"
#include "charge-batch.h"

void charge_batch_done(ChargeBatch *b) {
        if (!b)
                return;
        b->entries = mfree(b->entries);
        b->n_entries = 0;
}

bool charge_target_is_valid(const char *target) {
        return name_is_valid(target, NAME_MAX_LEN);
}

ChargeEntry *charge_batch_find(ChargeBatch *b, const char *target) {
        for (size_t i = 0; i < b->n_entries; i++)
                if (streq(b->entries[i].target, target))
                        return &b->entries[i];
        return NULL;
}

static bool charge_entry_interval_passed(const ChargeEntry *e, usec_t now_usec) {
        if (!e->reported)
                return true;
        /* CLOCK_MONOTONIC does not go back; a reading before the last report is not "later". */
        return now_usec >= e->slot_usec && now_usec - e->slot_usec >= CHARGE_INTERVAL_USEC;
}

static bool charge_entry_reusable(const ChargeEntry *e, usec_t now_usec) {
        /* Nothing left to send, no interval to honour any more, and idle for an interval: forgetting
         * the entry gives up less than a microsecond of a target that is not being worked for. */
        return charge_entry_report_usec(e) == 0 && charge_entry_interval_passed(e, now_usec) &&
               now_usec >= e->last_add_usec && now_usec - e->last_add_usec >= CHARGE_INTERVAL_USEC;
}

static int charge_batch_new_entry(ChargeBatch *b, const char *target, usec_t now_usec, ChargeEntry **ret) {
        ChargeEntry *e = NULL;

        for (size_t i = 0; i < b->n_entries; i++)
                if (charge_entry_reusable(&b->entries[i], now_usec)) {
                        e = &b->entries[i];
                        break;
                }

        if (!e) {
                ChargeEntry *n;

                if (b->n_entries >= CHARGE_TARGETS_MAX)
                        return -E2BIG;
                /* One at a time: the array stays as small as the number of targets in use. */
                n = reallocarray(b->entries, b->n_entries + 1, sizeof(ChargeEntry));
                if (!n)
                        return -ENOMEM;
                b->entries = n;
                e = &b->entries[b->n_entries++];
        }

        *e = (ChargeEntry) {};
        /* Validated by the caller: at most NAME_MAX_LEN characters, so it fits. */
        memcpy(e->target, target, strlen(target) + 1);
        *ret = e;
        return 0;
}

int charge_batch_add(ChargeBatch *b, const char *target, uint64_t nsec, usec_t now_usec,
                     ChargeEntry **ret_entry) {
        ChargeEntry *e;
        int r;

        if (!charge_target_is_valid(target))
                return -EINVAL;

        e = charge_batch_find(b, target);
        if (!e) {
                r = charge_batch_new_entry(b, target, now_usec, &e);
                if (r < 0)
                        return r;
        }

        /* Neither term exceeds the cap, so the sum cannot overflow once nsec is clamped. */
        e->pending_nsec = MIN(e->pending_nsec + MIN(nsec, CHARGE_PENDING_MAX_NSEC), CHARGE_PENDING_MAX_NSEC);
        e->last_add_usec = now_usec;

        if (ret_entry)
                *ret_entry = e;
        return 0;
}

usec_t charge_entry_report_usec(const ChargeEntry *e) {
        return e->pending_nsec / NSEC_PER_USEC;
}

bool charge_entry_due(const ChargeEntry *e, usec_t now_usec) {
        return charge_entry_report_usec(e) > 0 && charge_entry_interval_passed(e, now_usec);
}

void charge_entry_reported(ChargeEntry *e, usec_t usec, bool success, usec_t now_usec) {
        /* More than was pending cannot have been sent; the remainder stays either way. */
        if (success && usec >= charge_entry_report_usec(e))
                e->pending_nsec %= NSEC_PER_USEC;
        else if (success)
                e->pending_nsec -= usec * NSEC_PER_USEC;
        if (!e->reported || now_usec < e->slot_usec)
                e->slot_usec = now_usec;
        else
                /* The start of the grid interval now_usec is in. */
                e->slot_usec = now_usec - (now_usec - e->slot_usec) % CHARGE_INTERVAL_USEC;
        e->reported = true;
}
