#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Who may do what: unprivileged callers read, only root changes anything, and tonarid checks that
# itself even when the bus policy is too permissive. Needs root to switch to an unprivileged user.
set -eux
set -o pipefail

if (($(id -u) != 0)); then
        echo "SKIP: needs root to run callers as an unprivileged user"
        exit 77
fi
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) not found"; exit 77; }

. "$(dirname "$0")/lib.sh"

NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups --"

testcase_unprivileged_reads() {
        start_tonarid reads
        $NOBODY "$TONARICTL" --bus-address="$BUS" status
        assert_eq "s \"$TONARI_VERSION\"" "$($NOBODY busctl --address="$BUS" get-property org.tonari.Manager1 \
                /org/tonari/Manager1 org.tonari.Manager1 Version)"
        $NOBODY busctl --address="$BUS" introspect org.tonari.Manager1 /org/tonari/Manager1 >/dev/null
        $NOBODY busctl --address="$BUS" call org.tonari.Manager1 /org/tonari/Manager1 org.tonari.Manager1 GetStatus \
                >/dev/null
        assert_eq info "$($NOBODY "$TONARICTL" --bus-address="$BUS" log-level)"
        stop_tonarid reads
}

testcase_unprivileged_write_denied_by_policy() {
        start_tonarid policy
        rc=0
        err=$($NOBODY "$TONARICTL" --bus-address="$BUS" log-level debug 2>&1) || rc=$?
        assert_eq 4 "$rc" "tonarictl exit status"
        # Refused by dbus-daemon, before tonarid sees the call.
        assert_match "Rejected send message" "$err"
        assert_eq 's "info"' "$(prop LogLevel)"
        # Properties.Set is not open either (there are no writable properties, but the rule holds).
        rc=0
        $NOBODY busctl --address="$BUS" set-property org.tonari.Manager1 /org/tonari/Manager1 \
                org.tonari.Manager1 LogLevel s debug 2>"$TESTDIR/set.err" || rc=$?
        assert_eq 1 "$rc"
        assert_match "Access denied|Rejected" "$(cat "$TESTDIR/set.err")"
        # Root may.
        "$TONARICTL" --bus-address="$BUS" log-level debug
        assert_eq 's "debug"' "$(prop LogLevel)"
        stop_tonarid policy
}

testcase_unprivileged_write_denied_in_code() {
        # A bus whose policy lets everyone through: tonarid's own check must still refuse.
        ADDRESS=$(new_bus "$TESTDIR/open-bus" "$POLICY" "$PERMISSIVE_POLICY")
        start_tonarid code --bus-address="$ADDRESS"
        rc=0
        err=$($NOBODY "$TONARICTL" --bus-address="$ADDRESS" log-level debug 2>&1) || rc=$?
        assert_eq 4 "$rc" "tonarictl exit status"
        assert_match "SetLogLevel\(\) changes system state and requires root privileges" "$err"
        [[ $err != *"Rejected send message"* ]]
        assert_eq 's "info"' "$(ADDRESS=$ADDRESS prop LogLevel)"
        "$TONARICTL" --bus-address="$ADDRESS" log-level debug
        assert_eq 's "debug"' "$(ADDRESS=$ADDRESS prop LogLevel)"
        stop_tonarid code
}

testcase_only_root_may_own_the_name() {
        rc=0
        timeout 10 $NOBODY "$TONARID" --bus-address="$BUS" --config=/nonexistent >"$TESTDIR/owner.log" 2>&1 || rc=$?
        assert_eq 1 "$rc"
        assert_match "Failed to acquire bus name 'org.tonari.Manager1'" "$(cat "$TESTDIR/owner.log")"
        assert_match "D-Bus policy" "$(cat "$TESTDIR/owner.log")"
}

run_testcases
