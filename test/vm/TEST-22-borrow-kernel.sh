#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# TEST-22-borrow-kernel: CPU borrowing on tonari's kernel (kernel/patches). A helper process added
# as a proxy is charged by the kernel to its slice as it runs (cpu.cfs_charge_procs): the slice's
# cpu.stat shows the charge and the slice is throttled for it; a charge goes to cpu.cfs_borrowing_us
# and a slice without CPUQuota= gets its capacity as the quota; no period tick runs; a restart and a
# kill -9 of tonarid keep the charge without charging anything twice; Enforcement=userspace still
# takes the stock kernel's path (which TEST-03-borrow covers on the Debian kernel).
# Run: meson test -C build TEST-22-borrow-kernel (test/vm/run-with-packages DEBDIR --kernel=tonari ...)
set -eux
set -o pipefail

# shellcheck source-path=SCRIPTDIR source=../testlib.sh
. "$TONARI_VM_SHARE/testlib.sh"

if [[ " $(</proc/cmdline) " != *" tonari.kernel=custom "* ]]; then
        echo "TEST-22-borrow-kernel: needs the tonari kernel (--kernel=tonari)" >&2
        exit 77
fi
A=$TONARI_VM_SHARE/artifacts
CG=/sys/fs/cgroup/tonari.slice
DROPIN=/etc/tonari/tonarid.conf.d/50-test22.conf

bprop() {
        busctl get-property org.tonari.Manager1 "/org/tonari/slice/$1" org.tonari.Borrowing1 "$2" | cut -d' ' -f2 | tr -d '"'
}

# status KEY: a number from GetStatus().
status() {
        busctl call org.tonari.Manager1 /org/tonari/Manager1 org.tonari.Manager1 GetStatus |
                grep -o "\"$1\" [a-z] [^ ]*" | cut -d' ' -f3 | tr -d '"'
}

charged_usec() {
        awk '$1 == "charged_usec" { print $2 }' "$1/cpu.stat"
}

testcase_install() {
        # shellcheck disable=SC2046
        DEBIAN_FRONTEND=noninteractive apt-get install -y $(find "$A" -name 'tonari_*.deb' -o -name 'libtonari0_*.deb')
        systemctl start tonarid.service
        assert_eq auto "$(status BorrowEnforcement)"
}

# tonarid's CPU time in µs (GetStatus), for the cost of each path.
tonarid_cpu() {
        status CPUUsageUSec
}

testcase_proxy_charged_by_the_kernel() {
        trap 'kill ${loop:-} ${helper:-} 2>/dev/null || true' EXIT
        local slice=$CG/tonari-k1.slice id h0 h1 c0 c1 l0 l1 t0 t1 th0 th1 w0 w1 w
        # 150%: the helper (up to a CPU) fits in it, so the slice's loop keeps running and can be
        # stopped; without the charge the loop would have a CPU of the two to itself.
        tonarictl slice create k1 CPUQuota=150%
        sh -c 'while :; do :; done' &
        loop=$!
        tonarictl slice attach k1 "$loop"
        # The helper works outside the slice (in the test's own cgroup) and spins.
        sh -c 'while :; do :; done' &
        helper=$!
        id=$(tonarictl borrow add-proxy k1 "$helper")
        assert_eq kernel "$(bprop k1 Enforcement)"
        assert_match "kernel" "$(tonarictl --no-legend borrow list | awk '$1 == "k1"')"
        # The slice's own cgroup holds CPUQuota= and the charge; nothing rewrites its quota.
        assert_eq "$helper" "$(cat "$slice/cpu.cfs_charge_procs")"
        assert_eq "150000 100000" "$(cat "$slice/cpu.max")"
        w0=${EPOCHREALTIME/./} h0=$(cpu_usec "$helper") c0=$(charged_usec "$slice") l0=$(cpu_usec "$loop") t0=$(tonarid_cpu)
        th0=$(awk '$1 == "nr_throttled" { print $2 }' "$slice/cpu.stat")
        sleep 2
        h1=$(cpu_usec "$helper") c1=$(charged_usec "$slice") l1=$(cpu_usec "$loop") t1=$(tonarid_cpu) w1=${EPOCHREALTIME/./}
        w=$((w1 - w0))
        th1=$(awk '$1 == "nr_throttled" { print $2 }' "$slice/cpu.stat")
        echo "in $w µs: helper ran $((h1 - h0)) µs, charged $((c1 - c0)) µs; the slice ran $((l1 - l0)) µs; tonarid used $((t1 - t0)) µs" >&2
        # Every microsecond the helper ran is charged (cpu_usec counts in clock ticks: 10 ms margin each).
        assert_ge $((c1 - c0)) $(((h1 - h0) * 95 / 100 - 20000)) "charged for the helper"
        assert_le $((c1 - c0)) $(((h1 - h0) * 105 / 100 + 20000)) "charged no more than the helper ran"
        # The helper spins at up to a CPU and is paid out of the slice's 150%: the slice is
        # throttled, and slice and helper together stay within its quota (plus a period's slack).
        assert_ge "$((th1 - th0))" 3 "periods the slice was throttled"
        assert_le $(((l1 - l0) + (c1 - c0))) $((w * 150 / 100 * 110 / 100 + 150000)) "slice and charge within the quota"
        assert_le $((l1 - l0)) $((w * 150 / 100 - (c1 - c0) * 90 / 100 + 150000)) "what the slice ran while paying for its helper"
        # No tick, no sample: tonarid did nothing per period.
        assert_eq 0 "$(status BorrowTicks)"
        assert_eq 1 "$(status BorrowKernelTargets)"
        # The proxy's account is the helper's CPU time since it was added.
        assert_ge "$(tonarictl --no-legend borrow proxies | awk -v id="$id" '$1 == id { print NF }')" 1

        # A restart keeps the charge: the kernel never stopped it, tonarid adopts it and charges nothing again.
        local borrowed debt
        borrowed=$(bprop k1 BorrowedUSec)
        systemctl restart tonarid.service
        wait_for_tonarid
        assert_match "^$id +k1 " "$(tonarictl --no-legend borrow proxies)"
        assert_eq "$helper" "$(cat "$slice/cpu.cfs_charge_procs")"
        assert_eq kernel "$(bprop k1 Enforcement)"
        assert_eq "$borrowed" "$(bprop k1 BorrowedUSec)" "nothing charged twice after a restart"
        # Likewise after kill -9.
        systemctl kill --signal=KILL tonarid.service
        wait_for_tonarid
        assert_match "^$id +k1 " "$(tonarictl --no-legend borrow proxies)"
        assert_eq "$helper" "$(cat "$slice/cpu.cfs_charge_procs")"
        assert_eq "$borrowed" "$(bprop k1 BorrowedUSec)" "nothing charged twice after kill -9"
        c0=$(charged_usec "$slice")
        sleep 0.5
        assert_ge "$(charged_usec "$slice")" $((c0 + 100000)) "still charged after the restarts"

        # A charge lost while tonarid is down (here: removed by hand) is made again at start,
        # and what the helper ran meanwhile is handed over as debt, once.
        systemctl stop tonarid.service
        python3 -c "
import os
fd = os.pidfd_open($helper)
with open('$slice/cpu.cfs_charge_procs', 'w') as f:
    f.write('-%d' % fd)
"
        assert_eq "" "$(cat "$slice/cpu.cfs_charge_procs")"
        sleep 0.5
        systemctl start tonarid.service
        wait_for_tonarid
        assert_eq "$helper" "$(cat "$slice/cpu.cfs_charge_procs")"
        assert_ge "$(bprop k1 BorrowedUSec)" $((borrowed + 300000)) "the gap while nothing charged it"

        # Removing the proxy stops the charge.
        tonarictl borrow remove-proxy "$id"
        assert_eq "" "$(cat "$slice/cpu.cfs_charge_procs")"
        c0=$(charged_usec "$slice")
        sleep 0.3
        assert_eq "$c0" "$(charged_usec "$slice")"
        # A helper that exits: the kernel and tonarid both let go.
        id=$(tonarictl borrow add-proxy k1 "$helper")
        assert_eq "$helper" "$(cat "$slice/cpu.cfs_charge_procs")"
        kill_and_wait "$helper"
        sleep 0.3
        assert_eq "" "$(tonarictl --no-legend borrow proxies)"
        assert_eq "" "$(cat "$slice/cpu.cfs_charge_procs")"
        journalctl -u tonarid --since=-2min -o cat | grep -q "Removed proxy $id .*: the helper process exited"
        kill_and_wait "$loop"
        tonarictl slice remove k1
        echo "tonarid CPU, kernel path: $((t1 - t0)) µs in $w µs" >&2
        echo "$((t1 - t0)) $w" >/tmp/test22-kernel-cpu
}

testcase_charge_goes_to_the_kernel() {
        trap 'kill ${loop:-} ${sleeper:-} 2>/dev/null || true' EXIT
        local leaf=$CG/tonari-k2.slice/tonari-k2.scope/tenant
        tonarictl slice create k2 AllowedCPUs=0
        sh -c 'while :; do :; done' &
        loop=$!
        # (keeps the scope, and its leaf, after the loop is stopped)
        sleep 600 &
        sleeper=$!
        tonarictl slice attach k2 "$loop" "$sleeper"
        tonarictl borrow charge k2 300ms
        assert_eq kernel "$(bprop k2 Enforcement)"
        # No CPUQuota=: the capacity of one CPU is the quota the debt is repaid from.
        assert_eq "100000 100000" "$(cat "$leaf/cpu.max")"
        assert_le "$(cat "$leaf/cpu.cfs_borrowing_us")" 300000
        assert_eq 300000 "$(bprop k2 BorrowedUSec)"
        # Three periods at one CPU repay it; nothing is written per period.
        sleep 1
        assert_eq 0 "$(cat "$leaf/cpu.cfs_borrowing_us")"
        assert_eq 0 "$(bprop k2 DebtUSec)"
        assert_eq 300000 "$(bprop k2 RepaidUSec)"
        assert_eq "100000 100000" "$(cat "$leaf/cpu.max")"
        # (Stopped first: a slice owing 10 s runs again, and can die, only once that is repaid.)
        kill_and_wait "$loop"
        # The debt cap holds for the kernel's debt too.
        tonarictl borrow charge k2 1h
        assert_eq 10000000 "$(cat "$leaf/cpu.cfs_borrowing_us")"
        assert_eq $((3600000000 - 10000000)) "$(bprop k2 ForgivenCapUSec)"
        assert_eq 0 "$(status BorrowTicks)"
        # The scope ends with its last process, and the leaf charged with it: a charge then
        # finds no cgroup of the kernel's to go to and is kept by the ledger, as on a stock kernel.
        kill_and_wait "$sleeper"
        sleep 0.5
        tonarictl borrow charge k2 100ms
        assert_eq userspace "$(bprop k2 Enforcement)"
        tonarictl slice remove k2
}

testcase_userspace_enforcement_on_request() {
        trap 'kill ${loop:-} ${helper:-} 2>/dev/null || true; rm -f $DROPIN' EXIT
        local t0 t1 k
        mkdir -p "$(dirname "$DROPIN")"
        printf '[Borrow]\nEnforcement=userspace\n' >"$DROPIN"
        systemctl reload tonarid.service
        assert_eq userspace "$(status BorrowEnforcement)"
        tonarictl slice create k3 CPUQuota=50%
        sh -c 'while :; do :; done' &
        loop=$!
        tonarictl slice attach k3 "$loop"
        sh -c 'while :; do :; done' &
        helper=$!
        tonarictl borrow add-proxy k3 "$helper" >/dev/null
        assert_eq userspace "$(bprop k3 Enforcement)"
        assert_eq "" "$(cat $CG/tonari-k3.slice/cpu.cfs_charge_procs)"
        local w0 w1
        w0=${EPOCHREALTIME/./} t0=$(tonarid_cpu)
        sleep 2
        t1=$(tonarid_cpu) w1=${EPOCHREALTIME/./}
        # The shortened quota in the leaf, written by the tick.
        assert_match '^[0-9]+ 100000$' "$(cat $CG/tonari-k3.slice/tonari-k3.scope/tenant/cpu.max)"
        # At the floor a tick holds the limit for up to 3 more periods (target_hold()): one tick
        # per 400 ms at least, after the first ones that find the period boundaries.
        assert_ge "$(status BorrowTicks)" 4
        k=$(cat /tmp/test22-kernel-cpu 2>/dev/null || echo "0 1")
        echo "tonarid CPU, userspace path: $((t1 - t0)) µs in $((w1 - w0)) µs; kernel path: ${k% *} µs in ${k#* } µs" >&2
        # Per second of wall time the kernel path costs tonarid less than a tick per period does.
        assert_le "$(( ${k% *} * 1000000 / ${k#* } ))" "$(( (t1 - t0) * 1000000 / (w1 - w0) ))" "tonarid's CPU per second, kernel vs userspace"
        kill_and_wait "$loop" "$helper"
        tonarictl slice remove k3
        rm -f "$DROPIN"
        systemctl reload tonarid.service
        assert_eq auto "$(status BorrowEnforcement)"
}

testcase_no_journal_errors() {
        assert_eq "" "$(journalctl -u tonarid -p err -o cat)"
}

run_testcases
