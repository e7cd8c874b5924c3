/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The BorrowManager: its life cycle, its configuration, and what it does when a slice goes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc-util.h"
#include "borrow-internal.h"
#include "fd-util.h"
#include "log.h"
#include "string-util.h"

/* A slice was removed: its account and proxies go, on disk before the caller hears of it. */
static void on_slice_removed(Slice *s, void *userdata) {
        BorrowManager *m = userdata;
        BorrowTarget *t = borrow_manager_find_target(m, s->name);

        if (t && (t->slice_id == 0 || t->slice_id == s->id))
                borrow_target_drop(t, "was removed"); /* with its proxies, and written */
        else {
                borrow_proxies_drop(m, s->name, s->id, "its slice was removed");
                borrow_manager_save_now(m);
        }
}

int borrow_manager_new(sd_event *event, SliceManager *slices, const BorrowSettings *settings, BorrowManager **ret) {
        _cleanup_(borrow_manager_freep) BorrowManager *m = NULL;
        long n;
        int r;

        m = new0(BorrowManager, 1);
        if (!m)
                return -ENOMEM;
        m->event = sd_event_ref(event);
        m->journal_fd = -EBADF;
        m->slices = slices;
        r = borrow_manager_configure(m, settings);
        if (r < 0)
                return r;
        n = sysconf(_SC_NPROCESSORS_ONLN);
        m->n_cpus = n > 0 ? (unsigned) n : 1;
        if (settings->state_file) {
                m->state_file = strdup(settings->state_file);
                m->journal_file = strjoin(settings->state_file, ".journal");
                if (!m->state_file || !m->journal_file)
                        return -ENOMEM;
        }

        r = sd_event_add_time_relative(event, &m->save_timer, CLOCK_MONOTONIC, BORROW_SAVE_USEC, 0, borrow_state_file_on_save, m);
        if (r < 0)
                return r;
        (void) sd_event_source_set_enabled(m->save_timer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(m->save_timer, "borrow-save");

        if (slices)
                slice_manager_set_removed_callback(slices, on_slice_removed, m);
        if (m->state_file && slices) {
                (void) borrow_state_file_load(m);
                /* What start-up dropped or corrected is written now: a crash must not bring back
                 * what was dropped. */
                borrow_manager_save_now(m);
        }
        *ret = TAKE_PTR(m);
        return 0;
}

int borrow_manager_configure(BorrowManager *m, const BorrowSettings *settings) {
        if (borrow_policy_validate(&settings->policy) < 0 || !borrow_enforcement_mode_to_string(settings->enforcement) ||
            settings->n_allow_uids > BORROW_ALLOW_MAX ||
            settings->n_allow_gids > BORROW_ALLOW_MAX)
                return -EINVAL;
        /* A remembered group check may no longer hold. */
        borrow_manager_forget_chargers(m);
        m->policy = settings->policy;
        /* Targets keep the path they took; a new Enforcement= applies to targets decided from now on. */
        m->enforcement_mode = settings->enforcement;
        m->n_allow_uids = settings->n_allow_uids;
        if (m->n_allow_uids > 0)
                memcpy(m->allow_uids, settings->allow_uids, m->n_allow_uids * sizeof(uint32_t));
        m->n_allow_gids = settings->n_allow_gids;
        if (m->n_allow_gids > 0)
                memcpy(m->allow_gids, settings->allow_gids, m->n_allow_gids * sizeof(uint32_t));
        return 0;
}

BorrowManager *borrow_manager_free(BorrowManager *m) {
        int r;

        if (!m)
                return NULL;

        /* Nothing stays shortened while nobody repays: lift every limit in force. The debt is
         * kept in the state file and repaid after the next start. (The kernel path has no such
         * limit: the kernel keeps repaying its debts and charging its helpers while tonarid is
         * down, and tonarid finds the charges in place when it starts again.) */
        for (BorrowTarget *t = m->targets; t; t = t->next) {
                Slice *s;

                if (t->limit_usec == USEC_INFINITY)
                        continue;
                s = borrow_target_slice(t);
                if (s && borrow_target_write(t, s, USEC_INFINITY, t->period_usec) >= 0) {
                        t->limit_usec = USEC_INFINITY;
                        m->dirty = true;
                }
        }
        if (m->dirty) {
                r = borrow_state_file_save(m, NULL);
                if (r < 0)
                        log_warning_errno(r, "Failed to save the borrowing state to '%s': %m", m->state_file);
        }
        if (m->slices)
                slice_manager_set_removed_callback(m->slices, NULL, NULL);

        while (m->proxies)
                borrow_proxy_free(m->proxies);
        while (m->targets)
                borrow_target_free(m->targets);
        sd_event_source_disable_unref(m->sample_timer);
        sd_event_source_disable_unref(m->save_timer);
        sd_event_unref(m->event);
        free(m->state_file);
        free(m->journal_file);
        safe_close(m->journal_fd);
        borrow_manager_forget_chargers(m);
        return mfree(m);
}

void borrow_manager_get_stats(BorrowManager *m, BorrowStats *ret) {
        if (!m) {
                *ret = (BorrowStats) {};
                return;
        }
        *ret = m->stats;
        ret->n_proxies = borrow_manager_count_proxies(m);
        for (BorrowTarget *t = m->targets; t; t = t->next)
                if (t->enforcement == BORROW_ENFORCEMENT_KERNEL)
                        ret->n_kernel_targets++;
}

int borrow_timer_arm(BorrowManager *m, sd_event_source **source, usec_t when, sd_event_time_handler_t handler,
                     void *userdata, const char *description) {
        int r;

        if (!*source) {
                r = sd_event_add_time(m->event, source, CLOCK_MONOTONIC, when, 1, handler, userdata);
                if (r >= 0)
                        (void) sd_event_source_set_description(*source, description);
                return r;
        }
        r = sd_event_source_set_time(*source, when);
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(*source, SD_EVENT_ONESHOT);
}
