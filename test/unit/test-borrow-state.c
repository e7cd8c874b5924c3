/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The borrowing state file's lines: every entry names the cgroup id of its slice. */
#include <errno.h>
#include <string.h>

#include "alloc-util.h"
#include "borrow-state.h"
#include "tests.h"

START_TEST(test_round_trip) {
        BorrowStateEntry t = BORROW_STATE_ENTRY_INIT, p = BORROW_STATE_ENTRY_INIT, c = BORROW_STATE_ENTRY_INIT;
        _cleanup_(borrow_state_entry_done) BorrowStateEntry back = BORROW_STATE_ENTRY_INIT;
        _cleanup_free_ char *line = NULL;

        t.kind = BORROW_STATE_TARGET;
        strcpy(t.name, "web");
        t.cgroup_id = 4711;
        t.account = (BorrowAccount) { .debt_usec = 1400000, .borrowed_usec = 2100000, .repaid_usec = 600000,
                                      .forgiven_usec = 100000, .forgiven_cap_usec = 70000, .forgiven_floor_usec = 20000,
                                      .forgiven_overrun_usec = 10000 };
        ck_assert_int_eq(borrow_state_format(&t, &line), 0);
        ck_assert_str_eq(line, "target web cgroupid=4711 debt=1400000 borrowed=2100000 repaid=600000 forgiven=100000 "
                               "shortened=0 overrun=0 overrundebt=0 forgivencap=70000 forgivenfloor=20000 "
                               "forgivenoverrun=10000");
        ck_assert_int_eq(borrow_state_parse(line, &back), 0);
        ck_assert_int_eq(back.kind, BORROW_STATE_TARGET);
        ck_assert_str_eq(back.name, "web");
        ck_assert_uint_eq(back.cgroup_id, 4711);
        ck_assert_uint_eq(back.account.debt_usec, 1400000);
        /* Why what was forgiven was forgiven survives a restart. */
        ck_assert_uint_eq(back.account.forgiven_cap_usec, 70000);
        ck_assert_uint_eq(back.account.forgiven_floor_usec, 20000);
        ck_assert_uint_eq(back.account.forgiven_overrun_usec, 10000);
        line = mfree(line);
        borrow_state_entry_done(&back);
        /* A line of an older tonarid, without the reasons, is still read. */
        ck_assert_int_eq(borrow_state_parse("target web cgroupid=4711 debt=1 borrowed=2 repaid=1 forgiven=0 "
                                            "shortened=0 overrun=0 overrundebt=0", &back), 0);
        ck_assert_uint_eq(back.account.forgiven_cap_usec, 0);

        t.limit_usec = 1000;
        t.period_usec = 100000;
        t.limit_own = true;
        ck_assert_int_eq(borrow_state_format(&t, &line), 0);
        ck_assert_msg(strstr(line, " cgroupid=4711 ") && strstr(line, " limit=1000 period=100000 own=1"), "%s", line);
        line = mfree(line);

        p.kind = BORROW_STATE_PROXY;
        strcpy(p.name, "web");
        p.cgroup_id = 4711;
        p.id = 3;
        p.pid = 1234;
        p.start_time_ticks = 99;
        ck_assert_int_eq(borrow_state_format(&p, &line), 0);
        ck_assert_str_eq(line, "proxy 3 web cgroupid=4711 pid=1234 start=99 last=0 charged=0");
        borrow_state_entry_done(&back);
        ck_assert_int_eq(borrow_state_parse(line, &back), 0);
        ck_assert_uint_eq(back.cgroup_id, 4711);
        ck_assert_int_eq(back.pid, 1234);
        line = mfree(line);

        c = p;
        c.pid = 0;
        c.cgroup = (char *) "/system.slice/logger.service";
        ck_assert_int_eq(borrow_state_format(&c, &line), 0);
        ck_assert_str_eq(line, "proxy 3 web cgroupid=4711 cgroup=/system.slice/logger.service last=0 charged=0");
}
END_TEST

/* Without cgroupid= an entry cannot be told from a namesake's: malformed. */
START_TEST(test_cgroup_id_required) {
        static const char *const bad[] = {
                "target web debt=1",
                "proxy 3 web pid=1234 start=1 last=0 charged=0",
                "target web cgroupid= debt=1",
                "target web cgroupid=-1 debt=1",
                "target web cgroupid=x debt=1",
                "target web cgroupid=1 cgroupid=2 debt=1",
                "target web cgroupid=inf debt=1",
        };
        FOREACH_ELEMENT(b, bad) {
                BorrowStateEntry e = BORROW_STATE_ENTRY_INIT;

                ck_assert_msg(borrow_state_parse(*b, &e) == -EBADMSG, "accepted '%s'", *b);
        }
        ck_assert_str_eq(BORROW_STATE_HEADER, "# tonari borrow state 2");
}
END_TEST

TEST_SUITE("borrow-state", test_round_trip, test_cgroup_id_required)
