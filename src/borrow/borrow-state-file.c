/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state file: targets and proxies written out (borrow-state.c formats the lines) so that a
 * restart of tonarid loses neither debt nor proxies, and read back at start-up.
 */
#include <errno.h>
#include <fcntl.h>
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
#include "parse-util.h"
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

static BorrowStateEntry target_entry(const BorrowTarget *t) {
        return (BorrowStateEntry) { .kind = BORROW_STATE_TARGET,
                                    .cgroup_id = t->cgroup_id,
                                    .account = t->account,
                                    .limit_usec = t->limit_usec,
                                    .period_usec = t->period_usec,
                                    .limit_own = t->limit_own,
                                    .configured_per_sec_usec = t->configured_per_sec_usec,
                                    .configured_period_usec = t->configured_period_usec };
}

/*
 * Starts an empty journal for generation m->generation: written under another name and renamed over
 * the old one, whose lines belong to an older snapshot. Kept open for appending. On failure there is
 * no journal and changes are written as whole files until the next snapshot.
 */
static int journal_reset(BorrowManager *m) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        char header[STRLEN(BORROW_JOURNAL_HEADER) + 24];
        ssize_t n;
        int len;

        m->journal_fd = safe_close(m->journal_fd);
        tmp = strjoin(m->journal_file, ".tmp");
        if (!tmp)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
        if (fd < 0)
                return -errno;
        len = snprintf(header, sizeof(header), BORROW_JOURNAL_HEADER " %" PRIu64 "\n", m->generation);
        n = write(fd, header, len);
        if (n != len || rename(tmp, m->journal_file) < 0) {
                int r = n < 0 || n == len ? -errno : -EIO;

                (void) unlink(tmp);
                return r;
        }
        m->journal_fd = TAKE_FD(fd);
        m->journal_size = len;
        return 0;
}

/*
 * Replaces the state file with what is in memory (without skip, a proxy about to go), atomically:
 * a crash leaves the old file or the new one. Accounts and proxies of slices that no longer exist
 * are never written. It costs tens of µs (docs/BENCHMARKS.md). The snapshot names a new generation,
 * so the journal of the old one no longer applies; a new, empty journal is started.
 */
int borrow_state_file_save(BorrowManager *m, const BorrowProxy *skip) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        usec_t start = now(CLOCK_MONOTONIC);
        uint64_t generation = m->generation + 1;
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
        fprintf(f, BORROW_STATE_GENERATION " %" PRIu64 "\n", generation);
        for (BorrowTarget *t = m->targets; t; t = t->next) {
                BorrowStateEntry e = target_entry(t);

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
        m->generation = generation;
        m->dirty = false;
        r = journal_reset(m);
        if (r < 0)
                log_debug_errno(r, "Failed to start the journal '%s', writing whole files until the next try: %m",
                                m->journal_file);
        m->stats.n_state_writes++;
        m->stats.state_write_usec += now(CLOCK_MONOTONIC) - start;
        return 0;
fail:
        (void) unlink(tmp);
        return r;
}

/*
 * Writes t's account down before a caller is told it changed: one line appended to the journal, which
 * a crash cannot tear (a single write(2) of a few hundred bytes), instead of the whole file. The
 * progress of the other targets is not in it; it is written with the next snapshot, as before. Falls
 * back to a whole snapshot without a journal or when the journal has grown large.
 */
int borrow_state_file_save_target(BorrowManager *m, const BorrowTarget *t) {
        _cleanup_free_ char *line = NULL;
        BorrowStateEntry e = target_entry(t);
        usec_t start;
        ssize_t n;
        size_t len;
        int r;

        if (!m->state_file)
                return 0;
        if (m->journal_fd < 0 || m->journal_size >= BORROW_JOURNAL_MAX_BYTES)
                return borrow_state_file_save(m, NULL);
        start = now(CLOCK_MONOTONIC);
        strncpy(e.name, t->name, NAME_MAX_LEN);
        r = borrow_state_format(&e, &line);
        if (r < 0)
                return r;
        len = strlen(line);
        line[len++] = '\n'; /* over the NUL: the length is known */
        n = write(m->journal_fd, line, len);
        if (n != (ssize_t) len) {
                /* A partial line is never read (the snapshot written now starts a new generation). */
                r = n < 0 ? -errno : -EIO;
                log_debug_errno(r, "Failed to append to the journal '%s', writing the whole state: %m",
                                m->journal_file);
                m->journal_fd = safe_close(m->journal_fd);
                return borrow_state_file_save(m, NULL);
        }
        m->journal_size += len;
        m->stats.n_journal_writes++;
        m->stats.state_write_usec += now(CLOCK_MONOTONIC) - start;
        /* The snapshot catches up within BORROW_SAVE_USEC, which keeps the journal short. */
        borrow_manager_mark_dirty(m);
        return 0;
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
        if (t->account.debt_usec > 0 || t->limit_usec != USEC_INFINITY) {
                /* A debt of the userspace ledger is repaid the way it was begun; the kernel path
                 * (which leaves no debt in the ledger) may be taken after a later restart. */
                t->enforcement = BORROW_ENFORCEMENT_USERSPACE;
                (void) borrow_target_arm(t, slice_cpu_quota_period(s));
        }
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
        /* On the kernel path, its charge is found in place (or made again); otherwise the first
         * sample charges what the helper spent while tonarid was down. */
        r = borrow_proxy_setup_kernel(p, s, true);
        if (r < 0)
                log_warning_errno(r, "Proxy %" PRIu32 ": failed to have the kernel charge process %i to slice '%s', "
                                  "sampling it instead: %m", e->id, (int) e->pid, e->name);
        if (r <= 0)
                (void) borrow_manager_start_sampling(m);
}

typedef struct Entries {
        BorrowStateEntry *e;
        size_t n;
} Entries;

static void entries_done(Entries *x) {
        for (size_t i = 0; i < x->n; i++)
                borrow_state_entry_done(&x->e[i]);
        x->e = mfree(x->e);
        x->n = 0;
}

/* Appends *e to x, which then owns what it points to. */
static int entries_push(Entries *x, BorrowStateEntry *e) {
        BorrowStateEntry *a = reallocarray(x->e, x->n + 1, sizeof(BorrowStateEntry));

        if (!a)
                return -ENOMEM;
        x->e = a;
        x->e[x->n++] = *e;
        return 0;
}

/*
 * Adds the entries of text (a file's lines after its header) to x; with replace (the journal), a
 * target line replaces the one of that slice already there, being newer. *ret_generation: the
 * snapshot's generation line, if there is one.
 */
static int entries_add(Entries *x, const char *path, char **lines, bool replace, uint64_t *ret_generation) {
        unsigned n = 1;

        STRV_FOREACH(l, lines) {
                BorrowStateEntry e = BORROW_STATE_ENTRY_INIT;
                const char *g;
                size_t i;

                n++;
                if (ret_generation && (g = startswith(*l, BORROW_STATE_GENERATION " "))) {
                        if (safe_atou64(g, ret_generation) < 0)
                                log_warning("%s:%u: ignoring malformed generation '%s'.", path, n, g);
                        continue;
                }
                if (isempty(*l) || (*l)[0] == '#')
                        continue;
                if (borrow_state_parse(*l, &e) < 0 || (replace && e.kind != BORROW_STATE_TARGET)) {
                        _cleanup_free_ char *esc = cescape(*l);

                        borrow_state_entry_done(&e);
                        log_warning("%s:%u: ignoring malformed line '%s'.", path, n, strna(esc));
                        continue;
                }
                for (i = 0; replace && i < x->n; i++)
                        if (x->e[i].kind == BORROW_STATE_TARGET && streq(x->e[i].name, e.name))
                                break;
                if (replace && i < x->n) {
                        borrow_state_entry_done(&x->e[i]);
                        x->e[i] = e;
                        continue;
                }
                if (entries_push(x, &e) < 0) {
                        borrow_state_entry_done(&e);
                        return log_oom();
                }
        }
        return 0;
}

/* The journal's lines for generation, if it is that generation's: else none (an older snapshot's). */
static int journal_load(BorrowManager *m, uint64_t generation, Entries *x) {
        _cleanup_free_ char *text = NULL, *header = NULL;
        _cleanup_strv_free_ char **lines = NULL;
        int r;

        r = read_full_file(m->journal_file, &text, NULL);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return log_warning_errno(r, "Failed to read the borrowing journal '%s', starting without it: %m",
                                         m->journal_file);
        r = strv_split(text, "\n", &lines);
        if (r < 0)
                return r;
        if (asprintf(&header, BORROW_JOURNAL_HEADER " %" PRIu64, generation) < 0)
                return -ENOMEM;
        if (!lines[0] || !streq(lines[0], header)) {
                log_debug("Borrowing journal '%s' belongs to another snapshot than generation %" PRIu64 "; not read.",
                          m->journal_file, generation);
                return 0;
        }
        return entries_add(x, m->journal_file, lines + 1, true, NULL);
}

int borrow_state_file_load(BorrowManager *m) {
        _cleanup_free_ char *text = NULL;
        _cleanup_strv_free_ char **lines = NULL;
        _cleanup_(entries_done) Entries x = {};
        uint64_t generation = 0;
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
        r = entries_add(&x, m->state_file, lines + 1, false, &generation);
        if (r < 0)
                return r;
        /* A snapshot without a generation comes from a tonarid that kept no journal. */
        if (generation > 0) {
                r = journal_load(m, generation, &x);
                if (r < 0)
                        return r;
        }
        m->generation = generation;
        for (size_t i = 0; i < x.n; i++) {
                BorrowStateEntry *e = &x.e[i];

                if (e->kind == BORROW_STATE_TARGET)
                        restore_target(m, e);
                else if (!borrow_manager_find_proxy(m, e->id))
                        restore_proxy(m, e);
        }
        return 0;
}
