#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# TEST-02-slices: slices with the systemd backend (systemd as PID 1, cgroup v2). The CPU quota and
# the write bandwidth limit hold, AllowedCPUs= and AllowedMemoryNodes= take effect, a restart of
# tonarid keeps slices, settings and processes, unprivileged callers are refused, hostile names
# create nothing.
# Run: ./dev vm test/vm/TEST-02-slices.sh
set -eux
set -o pipefail

# shellcheck source-path=SCRIPTDIR source=../testlib.sh
. "$TONARI_VM_SHARE/testlib.sh"

CG=/sys/fs/cgroup/tonari.slice

sprop() {
        busctl get-property org.tonari.Manager1 "/org/tonari/slice/$1" org.tonari.Slice1 "$2"
}

units_now() {
        systemctl list-units --all --plain --no-legend 'tonari-*.slice' 'tonari-*.scope' | awk '{ print $1 }' | sort
}

testcase_install() {
        # shellcheck disable=SC2046
        DEBIAN_FRONTEND=noninteractive apt-get install -y $(find "$TONARI_VM_SHARE/artifacts" -name 'tonari_*.deb')
        systemctl start tonarid.service
        assert_eq '{"SliceBackend":"systemd","Slices":0}' \
                "$(tonarictl --json=short status | python3 -c 'import json,sys; j=json.load(sys.stdin); print(json.dumps({k: j[k] for k in ("SliceBackend", "Slices")}, separators=(",", ":")))')"
}

testcase_create_is_a_systemd_unit() {
        tonarictl slice create web CPUQuota=20% MemoryMax=256M CPUWeight=50
        assert_eq active "$(systemctl is-active tonari-web.slice)"
        assert_eq tonari.slice "$(systemctl show -P Slice tonari-web.slice)"
        assert_eq 200ms "$(systemctl show -P CPUQuotaPerSecUSec tonari-web.slice)"
        assert_eq 268435456 "$(systemctl show -P MemoryMax tonari-web.slice)"
        assert_eq "20000 100000" "$(cat $CG/tonari-web.slice/cpu.max)"
        assert_eq 268435456 "$(cat $CG/tonari-web.slice/memory.max)"
        assert_eq 50 "$(cat $CG/tonari-web.slice/cpu.weight)"
        assert_eq 's "systemd"' "$(sprop web Backend)"
        assert_eq 's "tonari-web.slice"' "$(sprop web Unit)"
        assert_eq 's "/tonari.slice/tonari-web.slice"' "$(sprop web ControlGroup)"
        # A name with '-' stays a direct child of tonari.slice.
        tonarictl slice create a-b
        assert_eq active "$(systemctl is-active 'tonari-a\x2db.slice')"
        assert_eq tonari.slice "$(systemctl show -P Slice 'tonari-a\x2db.slice')"
        tonarictl slice remove a-b
        assert_eq inactive "$(systemctl is-active 'tonari-a\x2db.slice')"
}

testcase_cpu_quota_holds() {
        trap 'kill ${loop:-} 2>/dev/null || true' EXIT
        sh -c 'while :; do :; done' &
        loop=$!
        tonarictl slice attach web "$loop"
        assert_match "(^|[[:space:]])$loop([[:space:]]|$)" "$(cat $CG/tonari-web.slice/tonari-web.scope/cgroup.procs)"
        assert_eq 1 "$(systemctl show -P Delegate tonari-web.scope | grep -c yes)"
        sleep 1
        percent=$(cpu_percent "$loop" 5)
        echo "TONARI-RESULT vm-systemd cpu-quota-20% measured ${percent}%"
        assert_ge "$percent" 17 "CPU share of a busy loop under CPUQuota=20%"
        assert_le "$percent" 23 "CPU share of a busy loop under CPUQuota=20%"
        assert_eq "t 1" "$(sprop web NrTasks)"
        kill "$loop"
}

testcase_write_bandwidth_holds() {
        trap 'kill ${writer:-} 2>/dev/null || true; rm -f /var/tmp/fifo /var/tmp/dd.out' EXIT
        tonarictl slice create io "IOWriteBandwidthMax=/dev/vda 5M"
        assert_eq "/dev/vda 5000000" "$(systemctl show -P IOWriteBandwidthMax tonari-io.slice)"
        assert_match "wbps=5000000" "$(cat $CG/tonari-io.slice/io.max)"
        mkfifo /var/tmp/fifo
        sh -c 'read -r _ </var/tmp/fifo; exec dd if=/dev/zero of=/var/tmp/dd.out bs=1M count=30 oflag=direct status=none' &
        writer=$!
        tonarictl slice attach io "$writer"
        start=$(date +%s%6N)
        echo go >/var/tmp/fifo
        wait "$writer"
        elapsed=$(($(date +%s%6N) - start))
        rate=$(awk -v e="$elapsed" 'BEGIN { printf "%d", 30 * 1048576 / (e / 1000000) }')
        echo "TONARI-RESULT vm-systemd write-bandwidth-5M measured ${rate} B/s"
        assert_ge "$rate" 4500000 "O_DIRECT write rate under IOWriteBandwidthMax=/dev/vda 5M"
        assert_le "$rate" 5500000 "O_DIRECT write rate under IOWriteBandwidthMax=/dev/vda 5M"
        tonarictl slice remove io
}

testcase_allowed_cpus_and_nodes() {
        trap 'kill ${sleeper:-} ${hog:-} 2>/dev/null || true' EXIT
        tonarictl slice create node1 AllowedCPUs=1 AllowedMemoryNodes=1
        assert_eq 1 "$(cat $CG/tonari-node1.slice/cpuset.cpus)"
        assert_eq 1 "$(cat $CG/tonari-node1.slice/cpuset.mems)"
        sleep 600 &
        sleeper=$!
        tonarictl slice attach node1 "$sleeper"
        assert_eq 1 "$(awk '/^Cpus_allowed_list:/ { print $2 }' "/proc/$sleeper/status")"
        assert_eq 1 "$(awk '/^Mems_allowed_list:/ { print $2 }' "/proc/$sleeper/status")"

        # Memory allocated after the move comes from node 1: a 64 MiB buffer, touched, then held.
        python3 -c '
import os, sys, time
sys.stdin.read(1)                      # wait until attached
buf = bytearray(64 << 20)
for i in range(0, len(buf), 4096):
    buf[i] = 1
print("ready", flush=True)
time.sleep(600)' < <(sleep 2; echo x) > /var/tmp/hog.out &
        hog=$!
        tonarictl slice attach node1 "$hog"
        for _ in $(seq 100); do grep -q ready /var/tmp/hog.out && break; sleep 0.1; done
        numastat -p "$hog"
        node1=$(numastat -p "$hog" | awk '/^Total/ { print $3 }')
        total=$(numastat -p "$hog" | awk '/^Total/ { print $4 }')
        echo "TONARI-RESULT vm-systemd allowed-memory-nodes-1 node1 ${node1} MB of ${total} MB"
        assert_ge "$node1" 60 "MB of the process's memory on node 1"
        assert_ge "$(awk -v a="$node1" -v t="$total" 'BEGIN { printf "%d", 100 * a / t }')" 90 "% on node 1"
        kill "$sleeper" "$hog"
}

testcase_restart_keeps_everything() {
        trap 'kill ${sleeper:-} 2>/dev/null || true' EXIT
        sleep 600 &
        sleeper=$!
        tonarictl slice attach web "$sleeper"
        before=$(tonarictl slice show web | grep -v -e Usage -e Bytes -e Current)
        list_before=$(tonarictl --no-legend slice list | awk '{ print $1, $2 }')
        oldpid=$(systemctl show -P MainPID tonarid.service)

        systemctl restart tonarid.service
        assert_eq active "$(systemctl is-active tonarid.service)"
        [[ $(systemctl show -P MainPID tonarid.service) != "$oldpid" ]]
        assert_eq "$before" "$(tonarictl slice show web | grep -v -e Usage -e Bytes -e Current)"
        assert_eq "$list_before" "$(tonarictl --no-legend slice list | awk '{ print $1, $2 }')"
        assert_match "(^|[[:space:]])$sleeper([[:space:]]|$)" "$(cat $CG/tonari-web.slice/tonari-web.scope/cgroup.procs)"
        assert_match "existing slice\(s\) adopted" "$(journalctl -u tonarid.service -b -o cat | tail -n 20)"

        # A crash as well.
        kill -KILL "$(systemctl show -P MainPID tonarid.service)"
        for _ in $(seq 100); do
                [[ $(systemctl is-active tonarid.service) == active ]] && busctl status org.tonari.Manager1 >/dev/null 2>&1 && break
                sleep 0.1
        done
        assert_eq "$before" "$(tonarictl slice show web | grep -v -e Usage -e Bytes -e Current)"
        kill "$sleeper"
}

testcase_unprivileged_and_hostile() {
        id tonaritest >/dev/null 2>&1 || useradd --system --no-create-home tonaritest
        user=(setpriv --reuid=tonaritest --regid=tonaritest --init-groups --)
        "${user[@]}" tonarictl slice list >/dev/null
        "${user[@]}" tonarictl slice show web >/dev/null
        assert_rc 4 "${user[@]}" tonarictl slice create evil
        assert_rc 4 "${user[@]}" tonarictl slice set web CPUWeight=1
        assert_rc 4 "${user[@]}" tonarictl slice remove web
        assert_rc 4 "${user[@]}" tonarictl slice attach web $$
        userdel tonaritest

        before=$(units_now)
        for name in ".." "../x" "a/b" "-x" ".h" 'a b' '$(id)' "$(head -c 65 /dev/zero | tr '\0' x)"; do
                rc=0
                busctl call -- org.tonari.Manager1 /org/tonari/Manager1 org.tonari.Manager1 CreateSlice 'sa(sv)' \
                        "$name" 0 2>/dev/null || rc=$?
                assert_eq 1 "$rc" "CreateSlice of a hostile name"
        done
        assert_eq "$before" "$(units_now)" "tonari units after hostile CreateSlice calls"
        assert_rc 5 tonarictl slice show nonexistent
}

# Names that are cgroup interface files are ordinary unit names for systemd, and memory limits
# are whole pages with this backend too: below one page refused, above it rounded down, so
# tonari, systemd and the kernel show the same value.
testcase_reserved_names_and_page_limits() {
        page=$(getconf PAGESIZE)
        for n in memory.stat cpu.max pids.max; do
                tonarictl slice create "$n" MemoryMax=$((page + 1))
                assert_eq active "$(systemctl is-active "tonari-$n.slice")"
                assert_eq "s \"/tonari.slice/tonari-$n.slice\"" \
                        "$(busctl get-property org.tonari.Manager1 /org/tonari/slice/"$(python3 -c 'import sys; print("".join(c if c.isalnum() else "_%02x" % ord(c) for c in sys.argv[1]))' "$n")" org.tonari.Slice1 ControlGroup)"
                assert_eq "$page" "$(systemctl show -P MemoryMax "tonari-$n.slice")"
                assert_eq "$page" "$(cat "$CG/tonari-$n.slice/memory.max")"
                tonarictl slice remove "$n"
        done
        assert_rc 2 tonarictl slice create tiny MemoryMax=1
        assert_rc 2 tonarictl slice create tiny MemoryHigh=$((page - 1))
        assert_rc 5 tonarictl slice show tiny
        [[ $(systemctl is-active tonari-tiny.slice) != active ]]
}

testcase_recreate_at_once() {
        # A removed slice's unit may linger in systemd for a moment; creating it again must work.
        for i in $(seq 10); do
                tonarictl slice create again CPUWeight=$((i * 10))
                assert_eq "t $((i * 10))" "$(sprop again CPUWeight)"
                tonarictl slice remove again
        done
        assert_rc 5 tonarictl slice show again
}

testcase_concurrent_create_and_remove() {
        pids=()
        for i in $(seq 6); do
                tonarictl slice create race >/dev/null 2>&1 &
                pids+=($!)
                tonarictl slice remove race >/dev/null 2>&1 &
                pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p" || true; done
        # tonarid and systemd agree, whatever order the calls ran in.
        if tonarictl slice show race >/dev/null 2>&1; then
                assert_eq active "$(systemctl is-active tonari-race.slice)"
                tonarictl slice remove race
        fi
        assert_rc 5 tonarictl slice show race
        [[ $(systemctl is-active tonari-race.slice) != active ]]
}

testcase_remove_and_journal() {
        tonarictl slice remove web
        tonarictl slice remove node1
        systemctl list-units --all --no-pager 'tonari*'
        active=$(systemctl list-units --state=active --plain --no-legend 'tonari-*.slice' 'tonari-*.scope' | awk '{ print $1 }' | xargs)
        assert_eq "" "$active" "tonari units still active after removing every slice"
        assert_eq 0 "$(tonarictl --json=short slice list | python3 -c 'import json,sys; print(len(json.load(sys.stdin)))')"
        # Every action on a tenant was logged once, with its fields.
        assert_ge "$(journalctl -u tonarid.service -b TONARI_SLICE=web -o cat | grep -c -e Created -e Attached -e Removed)" 4
        assert_eq "" "$(journalctl -u tonarid.service -b -p err -o cat -q || true)" "errors logged by tonarid"
}

run_testcases
