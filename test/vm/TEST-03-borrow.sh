#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# TEST-03-borrow: CPU borrowing with the systemd backend. A charge shortens the slice's quota in
# the leaf of its delegated scope and the configured CPUQuota= stays as it was; debt and proxies
# survive a restart of tonarid; proxies charge a helper's CPU time and go away with it; bad input
# and unprivileged callers are refused; and in the paper's log flood (seed 000, N=2, `yes` and a
# bursty flood) a proxy and libtonari charge >= 0.95 of what the log copier runs, repay it, and keep the
# flood slice and its copier together within the slice's quota (the full matrix is
# bench/borrow-logflood).
# Run: meson test -C build TEST-03-borrow (needs the packages, bench/tonari-logcopy and tonari-logflood)
set -eux
set -o pipefail

# shellcheck source-path=SCRIPTDIR source=../testlib.sh
. "$TONARI_VM_SHARE/testlib.sh"

A=$TONARI_VM_SHARE/artifacts
CG=/sys/fs/cgroup/tonari.slice

bprop() {
        busctl get-property org.tonari.Manager1 "/org/tonari/slice/$1" org.tonari.Borrowing1 "$2" | cut -d' ' -f2
}

testcase_install() {
        # shellcheck disable=SC2046
        DEBIAN_FRONTEND=noninteractive apt-get install -y $(find "$A" -name 'tonari_*.deb' -o -name 'libtonari0_*.deb')
        systemctl start tonarid.service
        assert_match '"cpu-borrowing" true' "$(busctl get-property org.tonari.Manager1 /org/tonari/Manager1 org.tonari.Manager1 Features)"
        # The sandbox: tonari.slice is writable, the rest of cgroupfs is not.
        assert_match "/sys/fs/cgroup/tonari.slice" "$(systemctl show -P ReadWritePaths tonarid.service)"
}

testcase_charge_shortens_the_delegated_leaf() {
        trap 'kill ${loop:-} ${loop2:-} 2>/dev/null || true' EXIT
        tonarictl slice create b1 CPUQuota=50%
        sh -c 'while :; do :; done' &
        loop=$!
        tonarictl slice attach b1 "$loop"
        # 6 s of debt keeps the leaf shortened for about 12 s, so that a slow guest still checks it
        # while it is.
        tonarictl borrow charge b1 6s
        sleep 0.5
        # The processes moved into the leaf, which carries the shortened quota; the slice unit and
        # its cgroup keep the configured one.
        assert_match "(^|[[:space:]])$loop([[:space:]]|$)" "$(cat $CG/tonari-b1.slice/tonari-b1.scope/tenant/cgroup.procs)"
        assert_eq "" "$(cat $CG/tonari-b1.slice/tonari-b1.scope/cgroup.procs)"
        assert_eq "1000 100000" "$(cat $CG/tonari-b1.slice/tonari-b1.scope/tenant/cpu.max)"
        assert_eq "50000 100000" "$(cat $CG/tonari-b1.slice/cpu.max)"
        assert_eq 500ms "$(systemctl show -P CPUQuotaPerSecUSec tonari-b1.slice)"
        assert_eq 6000000 "$(bprop b1 BorrowedUSec)"
        assert_eq 1000 "$(bprop b1 CPUQuotaLimitUSec)"
        assert_match '^b1 +6s ' "$(tonarictl --no-legend borrow list)"
        # A process attached now goes to the leaf (the scope itself can hold none any more).
        sh -c 'while :; do :; done' &
        loop2=$!
        tonarictl slice attach b1 "$loop2"
        assert_match "(^|[[:space:]])$loop2([[:space:]]|$)" "$(cat $CG/tonari-b1.slice/tonari-b1.scope/tenant/cgroup.procs)"
        # While shortened, the loops together get about 1 ms per 100 ms.
        u0=$(cpu_usec "$loop") v0=$(cpu_usec "$loop2")
        sleep 1
        u1=$(cpu_usec "$loop") v1=$(cpu_usec "$loop2")
        assert_le $(((u1 - u0) + (v1 - v0))) 100000 "CPU of the shortened slice in 1 s"
        # 6 s at 50 ms per period, at most 49 ms repaid each: about 125 periods at the floor, then a
        # shrinking tail, then the limit is lifted. The wait is bounded, not timed: a loaded host
        # slows the guest's commands, not the kernel's periods.
        for _ in $(seq 120); do
                [ "$(bprop b1 DebtUSec)" = 0 ] && [ "$(bprop b1 CPUQuotaLimitUSec)" = 18446744073709551615 ] && break
                sleep 0.5
        done
        assert_eq 0 "$(bprop b1 DebtUSec)"
        assert_eq "max 100000" "$(cat $CG/tonari-b1.slice/tonari-b1.scope/tenant/cpu.max)"
        assert_eq 18446744073709551615 "$(bprop b1 CPUQuotaLimitUSec)"
        assert_eq $((6000000 + $(bprop b1 OverrunUSec))) "$(( $(bprop b1 RepaidUSec) + $(bprop b1 ForgivenUSec) ))"
        journalctl -u tonarid --since=-1min -o cat | grep -q "Slice 'b1' owes 6s of CPU time"
        journalctl -u tonarid --since=-1min -o cat | grep -q "Slice 'b1' has repaid"
        kill_and_wait "$loop" "$loop2"
        tonarictl slice remove b1
}

testcase_slice_without_quota_is_measured_against_its_cpus() {
        trap 'kill ${loop:-} 2>/dev/null || true' EXIT
        tonarictl slice create b2 AllowedCPUs=0
        sh -c 'while :; do :; done' &
        loop=$!
        tonarictl slice attach b2 "$loop"
        tonarictl borrow charge b2 250ms
        sleep 0.15
        # One CPU: 100 ms per period of capacity. Half the debt due in the first period, 125 ms:
        # the floor. Against two CPUs' 200 ms the first period would have been 75 ms. (Which
        # limit is in force a moment later depends on how fast the guest runs, and a limit close
        # to the next one is kept or held for a few periods: the first one, from the journal.)
        assert_match '^[0-9]+ 100000$' "$(cat $CG/tonari-b2.slice/tonari-b2.scope/tenant/cpu.max)"
        journalctl -u tonarid --since=-1min -o cat |
                grep -q "Slice 'b2' owes 250ms of CPU time that helpers spent for it: shortening its quota from 100ms to 1ms per 100ms period"
        sleep 1
        assert_eq "max 100000" "$(cat $CG/tonari-b2.slice/tonari-b2.scope/tenant/cpu.max)"
        kill_and_wait "$loop"
        tonarictl slice remove b2
}

testcase_debt_survives_restart() {
        trap 'kill ${loop:-} 2>/dev/null || true' EXIT
        tonarictl slice create b3 CPUQuota=10%
        sh -c 'while :; do :; done' &
        loop=$!
        tonarictl slice attach b3 "$loop"
        tonarictl borrow charge b3 5s
        sleep 0.3
        systemctl restart tonarid.service
        assert_eq 5000000 "$(bprop b3 BorrowedUSec)"
        debt=$(bprop b3 DebtUSec)
        assert_ge "$debt" 4000000 "debt after the restart"
        sleep 0.3
        assert_eq "1000 100000" "$(cat $CG/tonari-b3.slice/tonari-b3.scope/tenant/cpu.max)"
        # A clean stop lifts the limit (nobody repays while tonarid is down) and keeps the debt.
        systemctl stop tonarid.service
        assert_eq "max 100000" "$(cat $CG/tonari-b3.slice/tonari-b3.scope/tenant/cpu.max)"
        grep -Eq '^target b3 cgroupid=[1-9][0-9]* debt=[1-9]' /run/tonari/borrow.state
        systemctl start tonarid.service
        assert_ge "$(bprop b3 DebtUSec)" 3000000 "debt after stop and start"
        kill_and_wait "$loop"
        # Removing the slice drops its debt, and a new slice of that name owes nothing.
        tonarictl slice remove b3
        tonarictl slice create b3
        assert_eq 0 "$(bprop b3 DebtUSec)"
        assert_eq 0 "$(bprop b3 BorrowedUSec)"
        tonarictl slice remove b3
}

# A crash right after the answer loses no acknowledged charge or proxy, and a slice made again
# after a removal owes nothing, also across the crash (the state is written before the answer and
# names the slice's cgroup id).
testcase_acknowledged_survives_crash() {
        trap 'kill ${helper:-} 2>/dev/null || true' EXIT
        tonarictl slice create b5
        sleep 600 &
        helper=$!
        id=$(tonarictl borrow add-proxy b5 "$helper")
        tonarictl borrow charge b5 2s
        systemctl kill --signal=KILL tonarid.service
        wait_for_tonarid
        # (plus what the sleeping helper ran since it was added: its last steps of starting up)
        assert_ge "$(bprop b5 BorrowedUSec)" 2000000
        assert_le "$(bprop b5 BorrowedUSec)" 2050000
        assert_match "^$id +b5 " "$(tonarictl --no-legend borrow proxies)"
        tonarictl slice remove b5
        tonarictl slice create b5
        systemctl kill --signal=KILL tonarid.service
        wait_for_tonarid
        assert_eq 0 "$(bprop b5 BorrowedUSec)"
        assert_eq "" "$(tonarictl --no-legend borrow proxies | awk '$2 == "b5"')"
        kill "$helper"
        tonarictl slice remove b5
}

testcase_proxy_charges_a_helper() {
        trap 'kill ${loop:-} ${helper:-} 2>/dev/null || true' EXIT
        tonarictl slice create b4 CPUQuota=50%
        sh -c 'while :; do :; done' &
        loop=$!
        tonarictl slice attach b4 "$loop"
        # The helper works outside the slice (here in the test's own cgroup).
        sh -c 'while :; do :; done' &
        helper=$!
        id=$(tonarictl borrow add-proxy b4 "$helper")
        assert_match "^$id +b4 " "$(tonarictl --no-legend borrow proxies)"
        sleep 2
        borrowed=$(bprop b4 BorrowedUSec)
        helper_usec=$(cpu_usec "$helper")
        # About the helper's CPU time since it was added (it ran ~2 s at up to one CPU).
        assert_ge "$borrowed" 500000 "charged for the helper"
        assert_le "$borrowed" "$((helper_usec + 200000))" "charged no more than the helper used"
        # A second proxy for the same helper, and helpers inside the slice or kernel threads: refused.
        assert_rc 1 tonarictl borrow add-proxy b4 "$helper"
        assert_rc 2 tonarictl borrow add-proxy b4 "$loop"
        assert_rc 2 tonarictl borrow add-proxy b4 2
        assert_rc 2 tonarictl borrow add-proxy b4 1
        assert_rc 2 tonarictl borrow add-proxy b4 /tonari.slice
        assert_rc 2 tonarictl borrow add-proxy b4 /tonari.slice/tonari-b4.slice
        # The helper exits: its proxy goes.
        kill "$helper"
        sleep 0.5
        assert_eq "" "$(tonarictl --no-legend borrow proxies)"
        journalctl -u tonarid --since=-1min -o cat | grep -q "Removed proxy $id .*: the helper process exited"
        kill_and_wait "$loop"
        tonarictl slice remove b4
}

testcase_bad_input_and_access() {
        tonarictl slice create b5
        assert_rc 5 tonarictl borrow charge nosuch 1ms
        assert_rc 2 tonarictl borrow charge '../x' 1ms
        assert_rc 2 tonarictl borrow charge b5 0
        err=$(busctl call org.tonari.Manager1 /org/tonari/Manager1 org.tonari.Manager1 ChargeCPU st b5 0 2>&1) && exit 1
        assert_match "Invalid CPU time 0" "$err"
        err=$(busctl call org.tonari.Manager1 /org/tonari/Manager1 org.tonari.Manager1 ChargeCPU st b5 18446744073709551615 2>&1) && exit 1
        assert_match "expected 1 to 3600000000" "$err"
        err=$(busctl call org.tonari.Manager1 /org/tonari/Manager1 org.tonari.Manager1 RemoveProxy u 999 2>&1) && exit 1
        assert_match "No proxy 999" "$err"
        # Unprivileged callers: no charging, no proxies; reading is fine.
        nobody=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
        assert_rc 4 "${nobody[@]}" tonarictl borrow charge b5 1ms
        assert_rc 4 "${nobody[@]}" tonarictl borrow add-proxy b5 1
        "${nobody[@]}" tonarictl borrow list >/dev/null
        "${nobody[@]}" tonarictl borrow proxies >/dev/null
        # tonarid.conf can allow a user to charge.
        mkdir -p /etc/tonari/tonarid.conf.d
        printf '[Borrow]\nAllowUsers=nobody\n' >/etc/tonari/tonarid.conf.d/50-test.conf
        systemctl reload tonarid.service
        "${nobody[@]}" tonarictl borrow charge b5 1ms
        rm /etc/tonari/tonarid.conf.d/50-test.conf
        systemctl reload tonarid.service
        assert_rc 4 "${nobody[@]}" tonarictl borrow charge b5 1ms
        # A caller inside the slice would make it pay twice.
        err=$(systemd-run --quiet --wait --pipe --slice=tonari-b5.slice \
                busctl call org.tonari.Manager1 /org/tonari/Manager1 org.tonari.Manager1 ChargeCPU st b5 1000 2>&1) && exit 1
        assert_match "runs in slice 'b5' itself" "$err"
        tonarictl slice remove b5
}

# share CPU0-LINES MODE FIELD: FIELD (a share of CPU 0's wall time while sysbench ran) in the
# CPU0 line of MODE with the yes flood, x1000.
share() {
        sed -n "s/^CPU0 n=2 flood=yes mode=$2 \(.* \)\?$3=\([0-9.]*\).*/\2/p" <<<"$1" |
                awk '{ s += $1; n++ } END { if (n > 0) printf "%d", 1000 * s / n + 0.5 }'
}

testcase_log_flood() {
        # The paper's experiment at N=2 with its heaviest flood (yes), with and without
        # borrowing, and with a service's logging (3 ms of log lines 20 times a second), once
        # each and without the dd-only baseline: everything asserted compares CPU times measured
        # in the same case inside the guest (events/s of two runs minutes apart moved by more
        # than the effect under a loaded host: 0.64 to 3.03 for one case on 2026-11-27).
        local out mode line v
        out=$(bash "$A/borrow-logflood-guest.sh" --n=2 --floods=yes --modes=none,proxy,lib --time=10 --baseline=no \
                --logcopy="$A/tonari-logcopy")$'\n'
        out+=$(bash "$A/borrow-logflood-guest.sh" --n=2 --floods=burst3x20 --modes=proxy,lib --time=10 --baseline=no \
                --logcopy="$A/tonari-logcopy")$'\n'
        echo "$out"
        # Charge fidelity: what the flood slice was charged against what its copier ran, from
        # registration until it exited at the end of its input, in every case (0.94-1.00 with the
        # last sample of an exiting helper and the copier's start-up charged; the scope's whole
        # CPU time, systemd-run's start-up included, gave 0.41-0.63 for bursty floods).
        while read -r line; do
                v=$(sed 's/.* life=\([0-9.]*\) .*/\1/' <<<"$line")
                assert_ge "$(awk -v v="$v" 'BEGIN { printf "%d", v * 1000 + 0.5 }')" 950 "life-long charged/copier x1000 in: $line"
        done < <(grep -E '^LIFE n=2 flood=(yes|burst3x20) mode=(proxy|lib) ' <<<"$out")
        assert_eq 4 "$(grep -cE '^LIFE n=2 flood=(yes|burst3x20) mode=(proxy|lib) ' <<<"$out")" "LIFE lines"
        # What borrowing is for: what was charged is taken from the flood slice's quota (repaid,
        # which also carries the overrun owed again: 1.1-1.5 times the charge measured), the flood
        # slice and its copier together stay within the slice's quota (0.5 of CPU 0; a shortened
        # quota is overrun a little, 0.04-0.09 measured, which is owed again: 0.45-0.53 in single
        # runs on a loaded host), and the victim does not lose by it. Shares of CPU 0 x1000.
        # (How the copier's time splits between the victim and the flood without borrowing
        # depends on the slices' weights, so it is not asserted.)
        for mode in proxy lib; do
                assert_ge "$(share "$out" "$mode" repaid)" "$(($(share "$out" "$mode" charged) * 8 / 10))" \
                        "repaid against charged x0.8 with $mode borrowing (x1000)"
                assert_le "$(share "$out" "$mode" floods+copiers)" 570 "flood slice + copier with $mode borrowing (x1000)"
                assert_ge "$(($(share "$out" "$mode" sysbench) + 30))" "$(share "$out" none sysbench)" \
                        "sysbench's share with $mode borrowing, +0.03, against without (x1000)"
        done
}

testcase_no_journal_errors() {
        assert_eq "" "$(journalctl -u tonarid -p err -o cat)"
}

run_testcases
