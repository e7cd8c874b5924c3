#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Hog limiting with the cgroupfs backend on this host's real cgroups, through tonarid on a private
# bus: a CPU hog and an I/O hog are limited, the limit confirmed or taken off, and lifted when the
# hog stops; a process found in a limited group that the policy did not put there (a reused PID,
# a child) is released; a restart keeps every limit; 1000 processes registered at once neither stall
# the event loop nor cost much; bad input is refused with named errors. Needs root; creates only
# tonari.slice/<test slices> and removes them.
set -eux
set -o pipefail

if (($(id -u) != 0)); then
        echo "SKIP: needs root to create cgroups and to query taskstats"
        exit 77
fi
if [[ -e /run/systemd/system ]]; then
        echo "SKIP: systemd manages this host's cgroups; hog limiting with systemd is tested in the VM (TEST-08)"
        exit 77
fi
if [[ -f /sys/fs/cgroup/cgroup.controllers ]]; then
        CG=/sys/fs/cgroup
        CPU_DIR=/sys/fs/cgroup
elif [[ -d /sys/fs/cgroup/cpu && -d /sys/fs/cgroup/blkio ]]; then
        CG=v1
        CPU_DIR=/sys/fs/cgroup/cpu
else
        echo "SKIP: no cgroup v2 root and no v1 cpu and blkio hierarchies under /sys/fs/cgroup"
        exit 77
fi

. "$(dirname "$0")/lib.sh"

LOAD=$(dirname "$0")/hog-load.py
P=h$$
CTL=("$TONARICTL" --bus-address="$BUS")
PIDS=()

# Every process a testcase started, and the test's cgroups (children first).
cleanup_hog() {
        local pid d
        for pid in "${PIDS[@]}"; do
                kill -KILL "$pid" 2>/dev/null || true
        done
        for d in /sys/fs/cgroup/*/tonari.slice/"$P"* /sys/fs/cgroup/tonari.slice/"$P"*; do
                [[ -d $d ]] || continue
                for pid in $(cat "$d"/*/cgroup.procs "$d/cgroup.procs" 2>/dev/null); do
                        kill -CONT "$pid" 2>/dev/null || true
                        kill -KILL "$pid" 2>/dev/null || true
                done
        done
        sleep 0.3
        for d in /sys/fs/cgroup/*/tonari.slice/"$P"* /sys/fs/cgroup/tonari.slice/"$P"*; do
                [[ -d $d ]] || continue
                rmdir "$d"/*/ 2>/dev/null || true
                rmdir "$d" 2>/dev/null || true
        done
        return 0
}

conf() {
        printf '[Manager]\nRuntimeDirectory=%s/run-%s\n' "$TESTDIR" "$1" >"$TESTDIR/$1.conf"
}

# class_of PID: the class ListManagedProcesses shows for PID, or "none".
class_of() {
        "${CTL[@]}" --json=short hog list |
                python3 -c 'import json, sys
for p in json.load(sys.stdin):
    if p["pid"] == int(sys.argv[1]):
        print(p["class"]); break
else:
    print("none")' "$1"
}

# wait_class PID CLASS SECONDS: until PID is in CLASS; prints how long it took in ms.
wait_class() {
        local start=$EPOCHREALTIME now
        while :; do
                [[ $(class_of "$1") == "$2" ]] && break
                now=$EPOCHREALTIME
                if (($(python3 -c "print(int($now - $start > $3))"))); then
                        echo "PID $1 not in $2 after $3 s (is $(class_of "$1"))" >&2
                        return 1
                fi
                sleep 0.2
        done
        python3 -c "print(int(($EPOCHREALTIME - $start) * 1000))" >&2
}

# cgroup_of PID: its cgroup in the cpu hierarchy (v1) or v2, without the slice's prefix.
cgroup_of() {
        if [[ $CG == v1 ]]; then
                sed -n 's/^[0-9]*:[^:]*\<cpu\>[^:]*:\/tonari.slice\///p' "/proc/$1/cgroup"
        else
                sed -n 's/^0::\/tonari.slice\///p' "/proc/$1/cgroup"
        fi
}

status_value() {
        busctl --address="$BUS" --json=short call org.tonari.Manager1 /org/tonari/Manager1 org.tonari.Manager1 \
                GetStatus | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0][sys.argv[1]]["data"])' "$1"
}

# A CPU hog and a victim that computes 100 ms of every 150 ms, both on CPU 0: the hog takes more
# than its share, is limited (cpu.weight 1 / cpu.shares 10), the victim's CPU use grows, the limit
# is confirmed; the hog stops (SIGSTOP) and is released; a restart in between keeps the limit.
testcase_cpu_hog_limit_confirm_restart_lift() {
        trap '_kill_tonarids; cleanup_hog' EXIT
        local hog victim
        conf cpu
        start_tonarid cpu
        "${CTL[@]}" slice create "${P}c"
        # The host is shared: the hog gets less than the default 50 % of a CPU when others load it.
        "${CTL[@]}" hog set "${P}c" yes MonitorIntervalSec=1s WindowSec=3s CPUHogPercent=10%
        # Started together and registered at once: their start-up, when they share the CPU by
        # chance, is not judged (tonarid judges a process only over an interval it observed).
        nice -n -10 taskset -c 0 python3 "$LOAD" cpu &
        hog=$!
        PIDS+=("$hog")
        nice -n -10 taskset -c 0 python3 "$LOAD" cpu 100 50 &
        victim=$!
        PIDS+=("$victim")
        "${CTL[@]}" hog register "${P}c" "$hog" "$victim"
        assert_eq "${P}c/unlimited" "$(cgroup_of "$hog")"

        # Limited once the usage window (3 s) filled; the time it took is printed (docs/BENCHMARKS.md),
        # the bound only catches a limit that never comes on a loaded host or under ASan.
        wait_class "$hog" cpu-limited 15
        assert_eq "${P}c/cpu-limited" "$(cgroup_of "$hog")"
        assert_eq unlimited "$(class_of "$victim")"
        if [[ $CG == v1 ]]; then
                assert_eq 10 "$(cat "$CPU_DIR/tonari.slice/${P}c/cpu-limited/cpu.shares")"
        else
                assert_eq 1 "$(cat "$CPU_DIR/tonari.slice/${P}c/cpu-limited/cpu.weight")"
        fi
        # Confirmed: the victim's CPU use grew once the hog was limited.
        for _ in $(seq 40); do
                grep -q "Kept ${P}c process $hog" "$TESTDIR/cpu.log" && break
                sleep 0.25
        done
        grep "Limited ${P}c process $hog .*cpu-hog" "$TESTDIR/cpu.log"
        grep "Kept ${P}c process $hog .*the others improved" "$TESTDIR/cpu.log"

        # A restart releases nothing: the limit is read back from the cgroup.
        stop_tonarid cpu
        assert_eq "${P}c/cpu-limited" "$(cgroup_of "$hog")"
        start_tonarid cpu
        grep "Adopted ${P}c process $hog, found in cpu-limited" "$TESTDIR/cpu.log"
        sleep 3.5
        assert_eq cpu-limited "$(class_of "$hog")"
        (($(grep -c "Released ${P}c process $hog" "$TESTDIR/cpu.log") == 0))

        # The hog stops computing: released within 5 s.
        kill -STOP "$hog"
        wait_class "$hog" unlimited 5
        grep "Released ${P}c process $hog .*class-changed" "$TESTDIR/cpu.log"
        kill -CONT "$hog"

        # Switched off: every limit lifted, the groups of an empty slice go away with it (v1).
        "${CTL[@]}" hog set "${P}c" no
        kill -KILL "$hog" "$victim"
        stop_tonarid cpu
}

# An I/O hog (O_DIRECT, which blkio throttles on v1 and io.max on v2) next to a process writing
# a little: the hog is limited to IOLimit and the limit is lifted when its I/O count drops to 0.
testcase_io_hog_limit_lift() {
        trap '_kill_tonarids; cleanup_hog' EXIT
        local hog victim before after
        conf io
        start_tonarid io
        "${CTL[@]}" slice create "${P}i"
        "${CTL[@]}" hog set "${P}i" yes MonitorIntervalSec=1s WindowSec=3s IOLimit=5M
        python3 "$LOAD" io "$TESTDIR/hog.data" 1048576 &
        hog=$!
        PIDS+=("$hog")
        python3 "$LOAD" io "$TESTDIR/victim.data" 65536 5 &
        victim=$!
        PIDS+=("$victim")
        "${CTL[@]}" hog register "${P}i" "$hog" "$victim"

        wait_class "$hog" io-limited 8
        grep "Limited ${P}i process $hog .*io-hog" "$TESTDIR/io.log"
        # The limit holds: about 5 MB/s over two seconds (the kernel's slack allows a first burst).
        before=$(sed -n 's/^write_bytes: //p' "/proc/$hog/io")
        sleep 2
        after=$(sed -n 's/^write_bytes: //p' "/proc/$hog/io")
        if [[ $(class_of "$hog") == io-limited ]]; then
                assert_le $(((after - before) / 2)) 7000000 "the I/O hog's write rate under a 5 MB/s limit"
        fi

        # Either confirmed (the victim's writes grew) or taken off as not helping (or as idling the
        # disk: the victim did not take up what the hog gave up), both within the window.
        for _ in $(seq 40); do
                grep -Eq "(Kept ${P}i process $hog|Released ${P}i process $hog)" "$TESTDIR/io.log" && break
                sleep 0.25
        done
        grep -E "(Kept ${P}i process $hog .*the others improved|Released ${P}i process $hog .*(confirmed-no-improvement|limit-idled-resource))" \
                "$TESTDIR/io.log"
        if grep -q "Kept ${P}i process $hog" "$TESTDIR/io.log"; then
                # The hog stops writing: released within 5 s, its I/O count dropped to 0.
                kill -STOP "$hog"
                wait_class "$hog" unlimited 5
                grep "Released ${P}i process $hog .*io-count-dropped-to-0" "$TESTDIR/io.log"
                kill -CONT "$hog"
        fi
        kill -KILL "$hog" "$victim"
        "${CTL[@]}" hog set "${P}i" no
        stop_tonarid io
}

# A process in a limited group that the policy did not put there (what a reused PID or a forked
# child of a limited process looks like) is released at once, never kept limited by mistake.
testcase_not_limited_by_policy_released() {
        trap '_kill_tonarids; cleanup_hog' EXIT
        local stray d
        conf stray
        start_tonarid stray
        "${CTL[@]}" slice create "${P}s"
        "${CTL[@]}" hog set "${P}s" yes MonitorIntervalSec=1s WindowSec=3s
        sleep 1000 &
        stray=$!
        PIDS+=("$stray")
        "${CTL[@]}" hog register "${P}s" "$stray"
        for d in /sys/fs/cgroup/*/tonari.slice/"${P}s/io-limited" /sys/fs/cgroup/tonari.slice/"${P}s/io-limited"; do
                [[ -d $d ]] && echo "$stray" >"$d/cgroup.procs"
        done
        wait_class "$stray" unlimited 4
        grep "Released ${P}s process $stray .*not-limited-by-policy" "$TESTDIR/stray.log"
        kill "$stray"
        "${CTL[@]}" hog set "${P}s" no
        stop_tonarid stray
}

# 1000 processes registered in one call: the call returns, every one is listed, a round costs
# little and the bus stays responsive while they are sampled every second.
testcase_burst_of_1000() {
        trap '_kill_tonarids; cleanup_hog' EXIT
        local pids=() i start ms cpu0 cpu1 rounds0 rounds1 up0 up1 work
        conf burst
        start_tonarid burst
        "${CTL[@]}" slice create "${P}b"
        "${CTL[@]}" hog set "${P}b" yes MonitorIntervalSec=1s WindowSec=3s
        for i in $(seq 1000); do
                sleep 1000 &
                pids+=($!)
        done
        PIDS+=("${pids[@]}")
        start=$EPOCHREALTIME
        "${CTL[@]}" hog register "${P}b" "${pids[@]}"
        ms=$(python3 -c "print(int(($EPOCHREALTIME - $start) * 1000))")
        assert_le "$ms" 20000 "ms to register 1000 processes"
        sleep 2.5
        assert_eq 1000 "$("${CTL[@]}" --json=short hog list | python3 -c 'import json, sys; print(len(json.load(sys.stdin)))')"

        # While rounds run: 20 status calls, none slow.
        cpu0=$(status_value CPUUsageUSec)
        rounds0=$(status_value HogRounds)
        work=$(status_value HogWorkUSec)
        up0=$(status_value UptimeUSec)
        for i in $(seq 20); do
                start=$EPOCHREALTIME
                "${CTL[@]}" status >/dev/null
                ms=$(python3 -c "print(int(($EPOCHREALTIME - $start) * 1000))")
                assert_le "$ms" 2000 "ms for a status call while 1000 processes are sampled"
                sleep 0.25
        done
        cpu1=$(status_value CPUUsageUSec)
        rounds1=$(status_value HogRounds)
        up1=$(status_value UptimeUSec)
        work=$((($(status_value HogWorkUSec) - work) / (rounds1 - rounds0)))
        echo "1000 processes at 1 s: tonarid CPU $(((cpu1 - cpu0) * 1000 / (up1 - up0)))‰ of a core, a round ${work} µs"
        assert_ge "$((rounds1 - rounds0))" 3 "rounds in 5 s"
        # The bench measures the cost in the test bed; here only that a round fits in its interval.
        assert_le "$work" 1000000 "µs per round of 1000 processes"
        kill "${pids[@]}"
        sleep 0.5
        "${CTL[@]}" hog set "${P}b" no
        stop_tonarid burst
}

# call_pids MEMBER SLICE PID: RegisterProcesses or UnregisterProcesses through dbus-send, which
# prints the error's name with its message.
call_pids() {
        dbus-send --bus="$BUS" --print-reply --dest=org.tonari.Manager1 /org/tonari/Manager1 \
                "org.tonari.Manager1.$1" "string:$2" "array:uint32:$3"
}

# Bad input: named errors quoting the value.
testcase_bad_input() {
        trap '_kill_tonarids; cleanup_hog' EXIT
        local p
        conf bad
        start_tonarid bad
        "${CTL[@]}" slice create "${P}x"
        sleep 1000 &
        p=$!
        PIDS+=("$p")
        assert_rc_match 1 "not hog-limited" "${CTL[@]}" hog register "${P}x" "$p"
        assert_rc_match 2 "Invalid mode 'maybe'" "${CTL[@]}" hog set "${P}x" maybe
        assert_rc_match 2 "Invalid PID 'x1'" "${CTL[@]}" hog register "${P}x" x1
        assert_rc_match 1 "CPUWeight=0" busctl --address="$BUS" call org.tonari.Manager1 /org/tonari/Manager1 \
                org.tonari.Manager1 SetHogLimiting 'ssa(sv)' "${P}x" yes 1 CPUWeight t 0
        "${CTL[@]}" hog set "${P}x" yes
        assert_rc_match 1 "ProtectedProcess.*Process 1 " call_pids RegisterProcesses "${P}x" 1
        assert_rc_match 1 "KernelThread.*Process 2 " call_pids RegisterProcesses "${P}x" 2
        assert_rc_match 1 "NoSuchProcess.*No process 4194304" call_pids RegisterProcesses "${P}x" 4194304
        "${CTL[@]}" hog register "${P}x" "$p"
        assert_rc_match 1 "AlreadyRegistered.*Process $p " call_pids RegisterProcesses "${P}x" "$p"
        "${CTL[@]}" hog unregister "${P}x" "$p"
        assert_rc_match 1 "NotRegistered.*Process $p " call_pids UnregisterProcesses "${P}x" "$p"
        # Another user's process, registered by an unprivileged caller.
        if id nobody >/dev/null 2>&1; then
                assert_rc_match 1 "NotYourProcess.*Process $p " setpriv --reuid=nobody --regid=nogroup --clear-groups \
                        dbus-send --bus="$BUS" --print-reply --dest=org.tonari.Manager1 /org/tonari/Manager1 \
                        org.tonari.Manager1.RegisterProcesses "string:${P}x" "array:uint32:$p"
        fi
        kill "$p"
        "${CTL[@]}" hog set "${P}x" no
        stop_tonarid bad
}

run_testcases
