#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tonarid and tonarictl against a private system-like bus with the shipped D-Bus policy: the API,
# the CLI, configuration and reload, sd_notify and the watchdog, shutdown. Runs as any user.
set -eux
set -o pipefail

. "$(dirname "$0")/lib.sh"

testcase_introspection_matches_protocol() {
        start_tonarid api
        # The running daemon answers with exactly the interfaces in protocols/: the manager object
        # with its own, a slice object (if the backend works here) with org.tonari.Slice1.
        busctl --address="$BUS" --xml-interface introspect org.tonari.Manager1 /org/tonari/Manager1 \
                >"$TESTDIR/manager.xml"
        diff -u <("$INTERFACES_OF" "$PROTOCOL_XML" org.freedesktop.DBus.Peer org.freedesktop.DBus.Introspectable \
                        org.freedesktop.DBus.Properties org.tonari.Manager1) \
                <("$INTERFACES_OF" "$TESTDIR/manager.xml")
        # A slice that does not exist is no object at all.
        err=$(busctl --address="$BUS" introspect org.tonari.Manager1 /org/tonari/slice/none 2>&1) && exit 1
        assert_match "Unknown object '/org/tonari/slice/none'" "$err"
        stop_tonarid api
}

testcase_properties() {
        start_tonarid props
        assert_eq "s \"$TONARI_VERSION\"" "$(prop Version)"
        assert_eq 's "running"' "$(prop State)"
        assert_eq 's "info"' "$(prop LogLevel)"
        assert_eq 'as 0' "$(prop ConfigFiles)"
        features=$(prop Features)
        assert_match '^a\(sbs\) 12 "systemd" (true|false) ' "$features"
        for f in systemd cgroup-v2 cgroup-v1 numa page-idle psi slices cpu-borrowing kernel-borrowing memory-migration hog-limiting kernel-lazy-migrate; do
                assert_match "\"$f\" (true|false) \"[^\"]+\"" "$features" "feature $f"
        done
        # StartTimestamp: realtime µs, within the last minute.
        start=$(prop StartTimestamp | cut -d' ' -f2)
        now=$(date +%s%6N)
        assert_le "$start" "$now" "StartTimestamp"
        assert_ge "$start" $((now - 60000000)) "StartTimestamp"
        stop_tonarid props
}

testcase_get_status() {
        start_tonarid status
        out=$(busctl --address="$BUS" --json=short call org.tonari.Manager1 /org/tonari/Manager1 \
                org.tonari.Manager1 GetStatus)
        assert_eq "$TONARID_PID" "$(json 'j["data"][0]["PID"]["data"]' <<<"$out")" "GetStatus PID"
        assert_eq "running" "$(json 'j["data"][0]["State"]["data"]' <<<"$out")"
        assert_eq "$TONARI_VERSION" "$(json 'j["data"][0]["Version"]["data"]' <<<"$out")"
        assert_eq 12 "$(json 'len(j["data"][0]["Features"]["data"])' <<<"$out")"
        assert_ge "$(json 'j["data"][0]["UptimeUSec"]["data"]' <<<"$out")" 1 "UptimeUSec"
        assert_ge "$(json 'j["data"][0]["MemoryPeakBytes"]["data"]' <<<"$out")" 100000 "MemoryPeakBytes"
        stop_tonarid status
}

testcase_tonarictl_status() {
        start_tonarid ctl
        out=$("$TONARICTL" --bus-address="$BUS" status)
        assert_match "^tonarid $TONARI_VERSION" "$out"
        assert_match "State: running" "$out"
        assert_match "PID: $TONARID_PID" "$out"
        assert_match "Config: built-in defaults" "$out"
        assert_match "FEATURE +AVAILABLE +DETAIL" "$out"
        assert_match "numa +(yes|no) +[0-9]+ nodes? online" "$out"
        # The default command is status; options may also follow the command.
        assert_match "State: running" "$("$TONARICTL" --bus-address="$BUS")"
        assert_eq "$TONARID_PID" "$("$TONARICTL" status --json --bus-address="$BUS" | json 'j["PID"]')"
        out=$("$TONARICTL" --bus-address="$BUS" --no-legend status)
        [[ $out != *FEATURE* ]]

        out=$("$TONARICTL" --bus-address="$BUS" --json status)
        assert_eq "$TONARID_PID" "$(json 'j["PID"]' <<<"$out")"
        assert_eq "['systemd', 'cgroup-v2', 'cgroup-v1', 'numa', 'page-idle', 'psi', 'slices', 'cpu-borrowing', 'kernel-borrowing', 'memory-migration', 'hog-limiting', 'kernel-lazy-migrate']" \
                "$(json '[f["name"] for f in j["Features"]]' <<<"$out")"
        assert_eq "True" "$(json 'all(isinstance(f["available"], bool) and f["detail"] for f in j["Features"])' <<<"$out")"
        out=$("$TONARICTL" --bus-address="$BUS" --json=short status)
        assert_eq 1 "$(wc -l <<<"$out")" "--json=short is one line"
        assert_eq "info" "$(json 'j["LogLevel"]' <<<"$out")"
        stop_tonarid ctl
}

testcase_log_level() {
        start_tonarid level
        assert_eq info "$("$TONARICTL" --bus-address="$BUS" log-level)"
        "$TONARICTL" --bus-address="$BUS" log-level debug
        assert_eq 's "debug"' "$(prop LogLevel)"
        assert_eq debug "$("$TONARICTL" --bus-address="$BUS" log-level)"
        "$TONARICTL" --bus-address="$BUS" log-level 5
        assert_eq 's "notice"' "$(prop LogLevel)"
        assert_match "Log level set to 'debug' \(was 'info'\) by UID $(id -u)" "$(cat "$TESTDIR/level.log")"
        # Lowering the level still leaves a record of who did it.
        assert_match "Log level set to 'notice' \(was 'debug'\)" "$(cat "$TESTDIR/level.log")"

        # Bad levels: refused by the CLI (exit 2) and by the daemon (InvalidArgs), level unchanged.
        assert_rc 2 "$TONARICTL" --bus-address="$BUS" log-level loud
        err=$(busctl --address="$BUS" call org.tonari.Manager1 /org/tonari/Manager1 org.tonari.Manager1 \
                SetLogLevel s $'info\n<0>forged' 2>&1) && exit 1
        assert_match "Invalid log level" "$err"
        assert_eq 's "notice"' "$(prop LogLevel)"
        stop_tonarid level
}

testcase_reload() {
        printf '[Manager]\nLogLevel=notice\n' >"$TESTDIR/reload.conf"
        start_tonarid reload
        assert_eq 's "notice"' "$(prop LogLevel)"
        assert_eq "as 1 \"$TESTDIR/reload.conf\"" "$(prop ConfigFiles)"

        mkdir "$TESTDIR/reload.conf.d"
        printf '[Manager]\nLogLevel=warning\n' >"$TESTDIR/reload.conf.d/50-test.conf"
        kill -HUP "$TONARID_PID"
        for _ in $(seq 50); do [[ $(prop LogLevel) == 's "warning"' ]] && break; sleep 0.1; done
        assert_eq 's "warning"' "$(prop LogLevel)"
        assert_eq "as 2 \"$TESTDIR/reload.conf\" \"$TESTDIR/reload.conf.d/50-test.conf\"" "$(prop ConfigFiles)"

        # A broken drop-in: the daemon keeps running with the previous configuration.
        printf '[Manager]\nLogLevel=loud\n' >"$TESTDIR/reload.conf.d/60-broken.conf"
        kill -HUP "$TONARID_PID"
        for _ in $(seq 50); do grep -q "Keeping the previous configuration" "$TESTDIR/reload.log" && break; sleep 0.1; done
        assert_match "60-broken.conf:2: Invalid LogLevel= value 'loud'" "$(cat "$TESTDIR/reload.log")"
        assert_eq 's "warning"' "$(prop LogLevel)"
        assert_eq 's "running"' "$(prop State)"
        stop_tonarid reload
}

testcase_invalid_config_refuses_start() {
        printf '[Manager]\nLogTarget=syslog\n' >"$TESTDIR/bad.conf"
        rc=0
        timeout 10 "$TONARID" --bus-address="$BUS" --config="$TESTDIR/bad.conf" >"$TESTDIR/bad.log" 2>&1 || rc=$?
        assert_eq 1 "$rc"
        assert_match "bad.conf:2: Invalid LogTarget= value 'syslog'" "$(cat "$TESTDIR/bad.log")"
        assert_match "Refusing to start" "$(cat "$TESTDIR/bad.log")"
}

testcase_second_instance_fails() {
        start_tonarid first
        rc=0
        timeout 10 "$TONARID" --bus-address="$BUS" --config=/nonexistent >"$TESTDIR/second.log" 2>&1 || rc=$?
        assert_eq 1 "$rc"
        assert_match "already owned: is another tonarid running" "$(cat "$TESTDIR/second.log")"
        # The first one is unaffected.
        assert_eq 's "running"' "$(prop State)"
        stop_tonarid first
}

testcase_not_running_and_usage() {
        # Bus up, no tonarid: exit 3.
        rc=0
        err=$("$TONARICTL" --bus-address="$BUS" status 2>&1) || rc=$?
        assert_eq 3 "$rc"
        assert_match "tonarid is not running" "$err"
        # No bus at all: exit 3 as well.
        assert_rc 3 "$TONARICTL" --bus-address="unix:path=$TESTDIR/nothing-here" status
        # Usage errors: exit 2.
        assert_rc 2 "$TONARICTL" --bogus-option
        assert_rc 2 "$TONARICTL" frobnicate
        assert_rc 2 "$TONARICTL" status extra-argument
        assert_rc 2 "$TONARICTL" --json=yaml status
        assert_rc 2 "$TONARICTL" --bus-address=garbage status
        assert_rc 1 "$TONARID" --bus-address=garbage
        # Options may follow the command.
        assert_rc 3 "$TONARICTL" status --bus-address="$BUS"
        assert_rc 0 "$TONARICTL" --help
        assert_eq "tonarictl $TONARI_VERSION" "$("$TONARICTL" --version)"
        assert_eq "tonarid $TONARI_VERSION" "$("$TONARID" --version)"
        assert_match "--bus-introspect=PATH" "$("$TONARID" --help)"
        assert_rc 1 "$TONARID" --log-level=loud
        assert_rc 1 "$TONARID" positional
}

testcase_sd_notify_and_watchdog() {
        sock=$TESTDIR/notify.sock
        python3 - "$sock" "$TESTDIR/notify.txt" <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(sys.argv[1])
s.settimeout(20)
with open(sys.argv[2], "a", buffering=1) as out:
    while True:
        try:
            data = s.recv(4096).decode()
        except socket.timeout:
            break
        out.write("%.3f %s\n" % (time.monotonic(), data.replace("\n", " ")))
        if "STOPPING=1" in data:
            break
PY
        listener=$!
        for _ in $(seq 50); do [[ -S $sock ]] && break; sleep 0.1; done

        # WATCHDOG_PID must name tonarid itself: exec keeps the shell's PID.
        NOTIFY_SOCKET=$sock WATCHDOG_USEC=200000 sh -c 'WATCHDOG_PID=$$ exec "$@"' sh \
                "$TONARID" --bus-address="$BUS" --config="$TESTDIR/notify.conf" >"$TESTDIR/notify.log" 2>&1 &
        pid=$!
        echo "$pid" >"$TESTDIR/notify.tonarid.pid"
        trap '_kill_tonarids; kill $listener 2>/dev/null || true' EXIT
        for _ in $(seq 100); do grep -q "READY=1" "$TESTDIR/notify.txt" 2>/dev/null && break; sleep 0.1; done
        # READY=1 is sent only once the bus name is ours.
        busctl --address="$BUS" status org.tonari.Manager1 >/dev/null
        sleep 1
        kill -HUP "$pid"
        sleep 0.5
        kill -TERM "$pid"
        rc=0
        wait "$pid" || rc=$?
        wait "$listener"
        assert_eq 0 "$rc"
        cat "$TESTDIR/notify.txt"

        assert_match "STATUS=Starting" "$(head -n1 "$TESTDIR/notify.txt")"
        assert_match "READY=1" "$(grep -m1 READY "$TESTDIR/notify.txt")"
        # At 200 ms the watchdog is kicked every ~100 ms: well over 5 pings in 1.5 s.
        assert_ge "$(grep -c 'WATCHDOG=1' "$TESTDIR/notify.txt")" 5 "watchdog pings"
        assert_match "RELOADING=1" "$(cat "$TESTDIR/notify.txt")"
        # After the reload, READY=1 again before STOPPING=1.
        assert_match "RELOADING=1.*READY=1.*STOPPING=1" "$(tr '\n' ' ' <"$TESTDIR/notify.txt")"
}

testcase_sigint_clean_exit() {
        start_tonarid int
        stop_tonarid int INT
        assert_match "Received SIGINT, shutting down" "$(cat "$TESTDIR/int.log")"
}

testcase_bus_loss_exits() {
        address=$(new_bus "$TESTDIR/bus2" "$POLICY")
        start_tonarid loss --bus-address="$address"
        "$PRIVATE_BUS" stop "$TESTDIR/bus2"
        rc=0
        wait "$TONARID_PID" || rc=$?
        rm -f "$TESTDIR/loss.tonarid.pid"
        assert_eq 1 "$rc" "tonarid must exit with failure when the bus goes away"
        assert_match "Lost the connection to the bus" "$(cat "$TESTDIR/loss.log")"
}

testcase_dump_config_matches_shipped_defaults() {
        # The shipped tonarid.conf lists every setting commented out with its built-in default.
        shipped=$(sed -n -e 's/^#\([A-Za-z]*=.*\)/\1/p' -e '/^\[/p' "$SHIPPED_CONF")
        assert_eq "$shipped" "$("$TONARID" --config="$TESTDIR/none.conf" --dump-config | grep -v '^$')"
}

run_testcases
