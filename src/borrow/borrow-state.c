/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "alloc-util.h"
#include "borrow-state.h"
#include "parse-util.h"
#include "string-util.h"
#include "strv.h"

void borrow_state_entry_done(BorrowStateEntry *e) {
        e->cgroup = mfree(e->cgroup);
}

static const char *fmt_usec(char buf[static 24], usec_t u) {
        if (u == USEC_INFINITY)
                return "inf";
        (void) snprintf(buf, 24, "%" PRIu64, u);
        return buf;
}

static int parse_usec_or_inf(const char *s, usec_t *ret) {
        if (streq(s, "inf")) {
                *ret = USEC_INFINITY;
                return 0;
        }
        return safe_atou64(s, ret);
}

static bool cgroup_path_ok(const char *p) {
        /* Absolute, no whitespace or control characters, no "." or ".." components. */
        if (!p || p[0] != '/' || strlen(p) > 4096)
                return false;
        for (const char *c = p; *c; c++)
                if ((unsigned char) *c <= ' ' || *c == 0x7f)
                        return false;
        return path_is_normalized_absolute(p);
}

int borrow_state_format(const BorrowStateEntry *e, char **ret) {
        char a[24], b[24], c[24], d[24];
        char *s;
        int n;

        if (!name_is_valid(e->name, NAME_MAX_LEN))
                return -EINVAL;

        if (e->kind == BORROW_STATE_TARGET) {
                const BorrowAccount *x = &e->account;

                if (e->limit_usec == USEC_INFINITY)
                        n = asprintf(&s, "target %s cgroupid=%" PRIu64 " debt=%" PRIu64 " borrowed=%" PRIu64
                                         " repaid=%" PRIu64 " forgiven=%" PRIu64 " shortened=%" PRIu64
                                         " overrun=%" PRIu64 " overrundebt=%" PRIu64 " forgivencap=%" PRIu64
                                         " forgivenfloor=%" PRIu64 " forgivenoverrun=%" PRIu64,
                                     e->name, e->cgroup_id, x->debt_usec, x->borrowed_usec, x->repaid_usec,
                                     x->forgiven_usec, x->periods_shortened, x->overrun_usec,
                                     x->overrun_debt_usec, x->forgiven_cap_usec, x->forgiven_floor_usec,
                                     x->forgiven_overrun_usec);
                else
                        n = asprintf(&s, "target %s cgroupid=%" PRIu64 " debt=%" PRIu64 " borrowed=%" PRIu64
                                         " repaid=%" PRIu64 " forgiven=%" PRIu64 " shortened=%" PRIu64
                                         " overrun=%" PRIu64 " overrundebt=%" PRIu64 " forgivencap=%" PRIu64
                                         " forgivenfloor=%" PRIu64 " forgivenoverrun=%" PRIu64
                                         " limit=%s period=%s own=%d conf=%s confperiod=%s",
                                     e->name, e->cgroup_id, x->debt_usec, x->borrowed_usec, x->repaid_usec,
                                     x->forgiven_usec, x->periods_shortened, x->overrun_usec,
                                     x->overrun_debt_usec, x->forgiven_cap_usec, x->forgiven_floor_usec,
                                     x->forgiven_overrun_usec, fmt_usec(a, e->limit_usec), fmt_usec(b, e->period_usec),
                                     e->limit_own, fmt_usec(c, e->configured_per_sec_usec),
                                     fmt_usec(d, e->configured_period_usec));
        } else if (e->pid > 0)
                n = asprintf(&s, "proxy %" PRIu32 " %s cgroupid=%" PRIu64 " pid=%i start=%" PRIu64
                                 " last=%" PRIu64 " charged=%" PRIu64,
                             e->id, e->name, e->cgroup_id, (int) e->pid, e->start_time_ticks, e->last_usec,
                             e->charged_usec);
        else {
                if (!cgroup_path_ok(e->cgroup))
                        return -EINVAL;
                n = asprintf(&s, "proxy %" PRIu32 " %s cgroupid=%" PRIu64 " cgroup=%s last=%" PRIu64
                                 " charged=%" PRIu64,
                             e->id, e->name, e->cgroup_id, e->cgroup, e->last_usec, e->charged_usec);
        }
        if (n < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int borrow_state_parse(const char *line, BorrowStateEntry *ret) {
        _cleanup_(borrow_state_entry_done) BorrowStateEntry e = BORROW_STATE_ENTRY_INIT;
        _cleanup_strv_free_ char **f = NULL;
        bool have_cgroup_id = false;
        size_t first;
        int r;

        r = strv_split(line, " \n", &f);
        if (r < 0)
                return r;
        if (strv_length(f) < 2)
                return -EBADMSG;

        if (streq(f[0], "target")) {
                e.kind = BORROW_STATE_TARGET;
                first = 2;
                if (!name_is_valid(f[1], NAME_MAX_LEN))
                        return -EBADMSG;
                strcpy(e.name, f[1]);
        } else if (streq(f[0], "proxy")) {
                e.kind = BORROW_STATE_PROXY;
                first = 3;
                if (strv_length(f) < 3 || safe_atou32(f[1], &e.id) < 0 || e.id == 0 ||
                    !name_is_valid(f[2], NAME_MAX_LEN))
                        return -EBADMSG;
                strcpy(e.name, f[2]);
        } else
                return -EBADMSG;

        for (size_t i = first; f[i]; i++) {
                char *eq = strchr(f[i], '=');
                const char *k = f[i], *v;
                uint64_t u = 0;
                int pid;

                if (!eq)
                        return -EBADMSG;
                *eq = '\0';
                v = eq + 1;

                if (streq(k, "cgroup")) {
                        if (e.kind != BORROW_STATE_PROXY || !cgroup_path_ok(v) || e.cgroup)
                                return -EBADMSG;
                        e.cgroup = strdup(v);
                        if (!e.cgroup)
                                return -ENOMEM;
                        continue;
                }
                if (streq(k, "pid")) {
                        if (e.kind != BORROW_STATE_PROXY || safe_atoi(v, &pid) < 0 || pid <= 0)
                                return -EBADMSG;
                        e.pid = pid;
                        continue;
                }
                if (streq(k, "own")) {
                        if (!STR_IN_SET(v, "0", "1"))
                                return -EBADMSG;
                        e.limit_own = streq(v, "1");
                        continue;
                }
                if (streq(k, "cgroupid")) {
                        if (have_cgroup_id || safe_atou64(v, &e.cgroup_id) < 0)
                                return -EBADMSG;
                        have_cgroup_id = true;
                        continue;
                }
                if (parse_usec_or_inf(v, &u) < 0)
                        return -EBADMSG;

                if (e.kind == BORROW_STATE_TARGET) {
                        if (streq(k, "debt"))
                                e.account.debt_usec = u;
                        else if (streq(k, "borrowed"))
                                e.account.borrowed_usec = u;
                        else if (streq(k, "repaid"))
                                e.account.repaid_usec = u;
                        else if (streq(k, "forgiven"))
                                e.account.forgiven_usec = u;
                        else if (streq(k, "shortened"))
                                e.account.periods_shortened = u;
                        else if (streq(k, "overrun"))
                                e.account.overrun_usec = u;
                        else if (streq(k, "overrundebt"))
                                e.account.overrun_debt_usec = u;
                        /* Newer keys; files written before have the total only. */
                        else if (streq(k, "forgivencap"))
                                e.account.forgiven_cap_usec = u;
                        else if (streq(k, "forgivenfloor"))
                                e.account.forgiven_floor_usec = u;
                        else if (streq(k, "forgivenoverrun"))
                                e.account.forgiven_overrun_usec = u;
                        else if (streq(k, "limit"))
                                e.limit_usec = u;
                        else if (streq(k, "period"))
                                e.period_usec = u;
                        else if (streq(k, "conf"))
                                e.configured_per_sec_usec = u;
                        else if (streq(k, "confperiod"))
                                e.configured_period_usec = u;
                        else
                                return -EBADMSG;
                } else {
                        if (streq(k, "start"))
                                e.start_time_ticks = u;
                        else if (streq(k, "last"))
                                e.last_usec = u;
                        else if (streq(k, "charged"))
                                e.charged_usec = u;
                        else
                                return -EBADMSG;
                }
        }

        if (!have_cgroup_id)
                return -EBADMSG; /* which slice of that name it belongs to */
        if (e.kind == BORROW_STATE_PROXY && (e.pid > 0) == (e.cgroup != NULL))
                return -EBADMSG; /* exactly one helper */
        if (e.kind == BORROW_STATE_TARGET && e.limit_usec != USEC_INFINITY && e.period_usec == 0)
                return -EBADMSG;

        *ret = e;
        e.cgroup = NULL;
        return 0;
}
