/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state file: targets and proxies written out (borrow-state.c formats the lines) so that a
 * restart of tonarid loses neither debt nor proxies, and read back at start-up.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc-util.h"
#include "borrow-internal.h"
#include "borrow-state.h"
#include "fd-util.h"
#include "fileio.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

/* Progress: written within BORROW_SAVE_USEC. */
void borrow_manager_mark_dirty(BorrowManager *m) {
        m->dirty = true;
        if (m->save_timer)
                (void) sd_event_source_set_enabled(m->save_timer, SD_EVENT_ONESHOT);
}

/* A change nobody waits for but that must not come back after a crash (a drop): written now, and
 * if that fails, retried with the progress. */
void borrow_manager_save_now(BorrowManager *m) {
        int r;

        borrow_manager_mark_dirty(m);
        r = borrow_state_file_save(m, NULL);
        if (r < 0)
                log_warning_errno(r, "Failed to save the borrowing state to '%s', will retry: %m", m->state_file);
}

/* One line of the state file: e, which belongs to the slice name. */
static int write_entry(FILE *f, BorrowStateEntry *e, const char *name) {
        _cleanup_free_ char *line = NULL;
        int r;

        strncpy(e->name, name, NAME_MAX_LEN);
        r = borrow_state_format(e, &line);
        if (r < 0)
                return r;
        fprintf(f, "%s\n", line);
        return 0;
}

/*
 * Replaces the state file with what is in memory (without skip, a proxy about to go), atomically:
 * a crash leaves the old file or the new one. Accounts and proxies of slices that no longer exist
 * are never written. It costs tens of µs (docs/BENCHMARKS.md).
 */
int borrow_state_file_save(BorrowManager *m, const BorrowProxy *skip) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        usec_t start = now(CLOCK_MONOTONIC);
        int r = 0;

        if (!m->state_file)
                return 0;
        tmp = strjoin(m->state_file, ".tmp");
        if (!tmp)
                return -ENOMEM;
        f = fopen(tmp, "we");
        if (!f)
                return -errno;
        fputs(BORROW_STATE_HEADER "\n", f);
        for (BorrowTarget *t = m->targets; t; t = t->next) {
                BorrowStateEntry e = { .kind = BORROW_STATE_TARGET,
                                       .cgroup_id = t->cgroup_id,
                                       .account = t->account,
                                       .limit_usec = t->limit_usec,
                                       .period_usec = t->period_usec,
                                       .limit_own = t->limit_own,
                                       .configured_per_sec_usec = t->configured_per_sec_usec,
                                       .configured_period_usec = t->configured_period_usec };

                if (!borrow_target_slice(t))
                        continue;
                r = write_entry(f, &e, t->name);
                if (r < 0)
                        goto fail;
        }
        for (BorrowProxy *p = m->proxies; p; p = p->next) {
                BorrowStateEntry e = { .kind = BORROW_STATE_PROXY,
                                       .cgroup_id = p->cgroup_id,
                                       .id = p->id,
                                       .pid = p->pid,
                                       .start_time_ticks = p->start_time_ticks,
                                       .cgroup = p->cgroup,
                                       .last_usec = p->last_usec,
                                       .charged_usec = p->charged_usec };

                if (p == skip || !borrow_proxy_slice(p))
                        continue;
                r = write_entry(f, &e, p->target);
                if (r < 0)
                        goto fail;
        }
        /*
         * No fsync(): what the file must survive is a crash of tonarid, and for that a complete file
         * renamed over the old one is enough. It lives in /run, which a reboot empties together with
         * the cgroups and units it describes; an fsync() there is free on tmpfs but cost 3-5 ms on
         * the development host's ext4 /run, each charge waiting for it (docs/BENCHMARKS.md).
         */
        if (fflush(f) != 0 || ferror(f)) {
                r = negative_errno();
                goto fail;
        }
        if (rename(tmp, m->state_file) < 0) {
                r = -errno;
                goto fail;
        }
        m->dirty = false;
        m->stats.n_state_writes++;
        m->stats.state_write_usec += now(CLOCK_MONOTONIC) - start;
        return 0;
fail:
        (void) unlink(tmp);
        return r;
}

int borrow_state_file_on_save(sd_event_source *es, uint64_t usec, void *userdata) {
        BorrowManager *m = userdata;
        int r;

        (void) usec;
        if (m->dirty) {
                r = borrow_state_file_save(m, NULL);
                if (r < 0)
                        log_warning_errno(r, "Failed to save the borrowing state to '%s', will retry: %m", m->state_file);
        }
        (void) sd_event_source_set_time_relative(es, BORROW_SAVE_USEC);
        return sd_event_source_set_enabled(es, m->dirty ? SD_EVENT_ONESHOT : SD_EVENT_OFF);
}

/*
 * The slice an entry of the state file belongs to: the one of that name whose cgroup has the id the
 * entry names. Else NULL, and why: a slice of that name made after the one the entry was written for
 * (while tonarid was not running, or before a crash lost the entry's removal) is another tenant.
 */
static Slice *entry_slice(BorrowManager *m, const BorrowStateEntry *e, const char **ret_why) {
        Slice *s = m->slices ? slice_manager_find(m->slices, e->name) : NULL;

        if (!s) {
                *ret_why = "no longer exists";
                return NULL;
        }
        if (s->cgroup_id == 0 || s->cgroup_id != e->cgroup_id) {
                *ret_why = "was removed and made again";
                return NULL;
        }
        return s;
}

static void restore_target(BorrowManager *m, BorrowStateEntry *e) {
        const char *why = NULL;
        Slice *s = entry_slice(m, e, &why);
        BorrowTarget *t;
        char a[FORMAT_TIMESPAN_MAX];

        if (!s) {
                if (e->account.debt_usec > 0)
                        log_info("Slice '%s' %s; dropping its recorded debt of %s.", e->name, why,
                                 fmt_ms(a, e->account.debt_usec));
                return;
        }
        if (borrow_target_new(m, s, &t) < 0)
                return (void) log_oom();
        t->account = e->account;
        /* A state file cannot make the overrun part larger than the debt it is part of. */
        t->account.overrun_debt_usec = MIN(t->account.overrun_debt_usec, t->account.debt_usec);
        t->limit_usec = e->limit_usec;
        t->period_usec = e->period_usec;
        t->limit_own = e->limit_own;
        t->configured_per_sec_usec = e->configured_per_sec_usec;
        t->configured_period_usec = e->configured_period_usec;

        if (t->limit_usec != USEC_INFINITY && t->limit_own) {
                /* tonarid stopped while the slice's own cpu.max held the shortened quota, so
                 * adoption may have read that back as the slice's setting. */
                slice_cpu_quota_override_adopted(s, t->limit_usec, t->period_usec, t->configured_per_sec_usec,
                                                 t->configured_period_usec);
                t->limit_cgroup = strdup(s->cgroup);
                if (!t->limit_cgroup)
                        return (void) log_oom();
        }
        if (t->account.debt_usec > 0 || t->limit_usec != USEC_INFINITY)
                (void) borrow_target_arm(t, slice_cpu_quota_period(s));
}

static void restore_proxy(BorrowManager *m, BorrowStateEntry *e) {
        const char *why = NULL;
        Slice *s = entry_slice(m, e, &why);
        BorrowProxy *p;
        int r;

        if (!s) {
                log_info("Dropping proxy %" PRIu32 ": slice '%s' %s.", e->id, e->name, why);
                return;
        }
        r = borrow_proxy_new(m, e->id, e->name, e->pid, e->cgroup, &p);
        if (r < 0)
                return (void) log_oom();
        p->slice_id = s->id;
        p->cgroup_id = s->cgroup_id;
        p->start_time_ticks = e->start_time_ticks;
        p->last_usec = e->last_usec;
        p->charged_usec = e->charged_usec;
        r = borrow_proxy_attach_helper(p, true);
        if (r < 0) {
                log_info("Dropping proxy %" PRIu32 " for slice '%s': its helper %s is gone.", e->id, e->name,
                         e->pid > 0 ? "process" : "cgroup");
                borrow_proxy_free(p);
                return;
        }
        /* The first sample charges what the helper spent while tonarid was down. */
        (void) borrow_manager_start_sampling(m);
}

int borrow_state_file_load(BorrowManager *m) {
        _cleanup_free_ char *text = NULL;
        _cleanup_strv_free_ char **lines = NULL;
        unsigned n = 0;
        int r;

        r = read_full_file(m->state_file, &text, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return log_warning_errno(r, "Failed to read the borrowing state '%s', starting without: %m",
                                         m->state_file);
        r = strv_split(text, "\n", &lines);
        if (r < 0)
                return r;
        if (!lines[0] || !streq(lines[0], BORROW_STATE_HEADER)) {
                log_warning("Borrowing state '%s' is not in a format this tonarid knows; starting without it.",
                            m->state_file);
                return 0;
        }
        STRV_FOREACH(l, lines + 1) {
                _cleanup_(borrow_state_entry_done) BorrowStateEntry e = BORROW_STATE_ENTRY_INIT;

                n++;
                if (isempty(*l) || (*l)[0] == '#')
                        continue;
                r = borrow_state_parse(*l, &e);
                if (r < 0) {
                        _cleanup_free_ char *esc = cescape(*l);
                        log_warning("%s:%u: ignoring malformed line '%s'.", m->state_file, n + 1, strna(esc));
                        continue;
                }
                if (e.kind == BORROW_STATE_TARGET)
                        restore_target(m, &e);
                else if (!borrow_manager_find_proxy(m, e.id))
                        restore_proxy(m, &e);
        }
        return 0;
}
