#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The guest half of bench/borrow-logflood (seed 000, §3.3 and §7.3), run inside the VM test bed
# with tonari installed and tonarid running on the systemd backend. Everything runs on CPU 0.
#
# For each N: N slices with CPUQuota=(100/N)% and equal weights. Slice c0 runs sysbench (1 thread,
# --cpu-max-prime=10000); c1..c(N-1) run dd if=/dev/zero of=/dev/null, and in the flood cases also
# a flood on stdout whose pipe a log copier (tonari-logcopy, the container runtime's role) drains
# from another slice, bench-runtime.slice, appending what it reads to a log file in /run that it
# empties at 16 MiB, as a size-capped log driver does (uncapped, `yes` fills the guest within
# seconds). Modes:
#   baseline  dd only (the paper's command 1)
#   none      flood, nothing charged
#   proxy     flood, each copier registered with AddProxy() for its container's slice
#   lib       flood, each copier charging its container through libtonari (--charge=)
#   inside    flood, each copier in its container's own slice: the kernel itself charges the
#             copying to the container, which is what borrowing emulates (a reference, not a
#             deployment: a runtime cannot put its log copier in the tenant's cgroup)
#   kernel-on-behalf  (tonari's kernel) proxies, the kernel charging each copier to its
#             container as it runs (cpu.cfs_charge_procs; [Borrow] Enforcement=auto)
#   kernel-paper      (tonari's kernel) proxies sampled, debts repaid by the kernel
#             (cpu.cfs_borrowing_us alone, the paper's interface; Enforcement=kernel-paper)
# On tonari's kernel the other modes run with Enforcement=userspace, the stock kernel's path.
# A borrowing mode may name the repayment to use, e.g. proxy@100 (RepayPerPeriod=100%, the paper's
# rule) next to proxy@50; without it tonarid's configured value applies. The setting goes into a
# drop-in, /etc/tonari/tonarid.conf.d/90-bench.conf, removed at the end.
# Prints sysbench events/s per case, the ratios to the baseline, tonarid's CPU time, and per case
# the CPU time sysbench got and its events per CPU second (to tell lost CPU time from interference).
#
# Floods: yes, lsmod and echo (the paper's), and floods that log as services do, written by
# tonari-logflood: burst<MS>x<HZ> writes 80-byte lines for MS ms HZ times a second (tens of
# wake-ups a second, a few ms each), slow<HZ> one line HZ times a second (a steady, slow flood).
# Per case, the charge fidelity: what was charged ÷ what the copiers spent, over sysbench's run
# (FIDELITY window=, both read at its start and end) and over each copier's life (life=: from its
# registration, or for libtonari from its start, until it exited at the end of its input, with
# the CPU time it reports itself at exit); the summary puts it beside the victim's ratio.
#
# usage: borrow-logflood-guest.sh [--n=2,3,4,5] [--floods=yes,lsmod,echo,burst3x20,slow1000]
#                                 [--modes=none,proxy,lib[,kernel-paper,kernel-on-behalf]] [--time=10] [--logcopy=PATH]
#                                 [--logflood=PATH] [--baseline=no]
# --baseline=no leaves out the dd-only baseline case (no ratios then; for tests that assert only
# what each case measures against itself).
set -eu
set -o pipefail

ns=2,3,4,5 floods=yes,lsmod,echo,burst3x20,slow1000 modes=none,proxy,lib time=10 baseline=yes
logcopy=${TONARI_VM_SHARE:-/nonexistent}/artifacts/tonari-logcopy
logflood=
for a in "$@"; do
        case "$a" in
        --n=*) ns=${a#*=} ;;
        --floods=*) floods=${a#*=} ;;
        --modes=*) modes=${a#*=} ;;
        --time=*) time=${a#*=} ;;
        --logcopy=*) logcopy=${a#*=} ;;
        --logflood=*) logflood=${a#*=} ;;
        --baseline=yes | --baseline=no) baseline=${a#*=} ;;
        *) echo "unknown argument: $a" >&2; exit 2 ;;
        esac
done
[[ -x $logcopy ]] || { echo "no log copier at $logcopy" >&2; exit 2; }
[[ -n $logflood ]] || logflood=${logcopy%/*}/tonari-logflood

work=$(mktemp -d /run/bench-borrow.XXXXXX)
declare -a pids=()

flood_command() {
        case "$1" in
        yes) echo 'yes' ;;
        lsmod) echo 'while true; do lsmod; done' ;;
        echo) echo 'while true; do echo 1; done' ;;
        burst[0-9]*x[0-9]*)
                local ms=${1#burst} && ms=${ms%x*}
                need_logflood && echo "exec $(printf '%q' "$logflood") --burst=${ms}ms --rate=${1#*x}" ;;
        slow[0-9]*) need_logflood && echo "exec $(printf '%q' "$logflood") --lines=1 --rate=${1#slow}" ;;
        *) echo "unknown flood '$1'" >&2; return 2 ;;
        esac
}

need_logflood() {
        [[ -x $logflood ]] || { echo "no log flood generator at $logflood (bench/tonari-logflood)" >&2; return 2; }
}

# Starts "sh -c CMD" stopped, moves it into slice $1, then lets it run: nothing it forks escapes.
start_in_slice() {
        local slice=$1 cmd=$2 out=${3:-/dev/null} pid
        taskset -c 0 sh -c 'kill -STOP $$; exec sh -c "$0"' "$cmd" >"$out" 2>&1 &
        pid=$!
        while [[ $(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) != T ]]; do sleep 0.01; done
        tonarictl slice attach "$slice" "$pid"
        kill -CONT "$pid"
        pids+=("$pid")
        echo "$pid"
}

cleanup_case() {
        local p
        for p in "${pids[@]}"; do
                pkill -KILL -P "$p" 2>/dev/null || true
                kill -KILL "$p" 2>/dev/null || true
        done
        pids=()
        systemctl stop 'bench-log-*.scope' 2>/dev/null || true
        for p in $(tonarictl --json=short borrow proxies | python3 -c 'import json,sys; print(" ".join(str(p["id"]) for p in json.load(sys.stdin)))'); do
                tonarictl borrow remove-proxy "$p" || true
        done
        local s
        for s in $(tonarictl --json=short slice list | python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(sys.stdin)))'); do
                [[ $s == c[0-9]* ]] || continue
                # Everything in the slice's scope, including what a flood loop forked meanwhile.
                systemctl kill --signal=KILL "tonari-$s.scope" 2>/dev/null || true
        done
        sleep 0.5
        for s in $(tonarictl --json=short slice list | python3 -c 'import json,sys; print(" ".join(s["name"] for s in json.load(sys.stdin)))'); do
                [[ $s == c[0-9]* ]] || continue
                tonarictl slice remove "$s" 2>/dev/null || { sleep 1; tonarictl slice remove "$s"; }
        done
        rm -f "$work"/*.fifo "$work"/*.log
}
dropin=/etc/tonari/tonarid.conf.d/90-bench.conf
# Whether the kernel has tonari's borrowing files. They show only in cgroups with the cpu
# controller, which before the first slice may be none: the test bed's kernel command line tells too.
kernel_borrowing() {
        compgen -G '/sys/fs/cgroup/*/cpu.cfs_charge_procs' >/dev/null ||
                compgen -G '/sys/fs/cgroup/*/*/cpu.cfs_charge_procs' >/dev/null ||
                [[ " $(</proc/cmdline) " == *" tonari.kernel=custom "* ]]
}

# set_repay MODE: RepayPerPeriod= from MODE's @PERCENT suffix, else tonarid's own setting, and
# Enforcement= for MODE on tonari's kernel. (Cases run in subshells: what is applied is remembered
# in a file.)
set_repay() {
        local want= enforcement= conf=
        [[ $1 == *@* ]] && want=${1#*@}
        case "${1%@*}" in
        kernel-on-behalf) enforcement=auto ;;
        kernel-paper) enforcement=kernel-paper ;;
        *) ! kernel_borrowing || enforcement=userspace ;;
        esac
        [[ "$want/$enforcement" == "$(cat "$work/repay" 2>/dev/null)" ]] && return 0
        if [[ -n $want ]]; then
                [[ $want =~ ^[0-9]+$ ]] || { echo "bad repayment in mode '$1': expected MODE@PERCENT" >&2; return 2; }
                conf+="RepayPerPeriod=$want%"$'\n'
        fi
        [[ -z $enforcement ]] || conf+="Enforcement=$enforcement"$'\n'
        if [[ -n $conf ]]; then
                mkdir -p "${dropin%/*}"
                printf '[Borrow]\n%s' "$conf" >"$dropin"
        else
                rm -f "$dropin"
        fi
        systemctl reload tonarid.service
        sleep 1
        echo "$want/$enforcement" >"$work/repay"
}

# charged_of SLICE: µs charged to a slice: what tonarid was told or sampled (BorrowedUSec) plus what
# the kernel charged from helpers as they ran (charged_usec in the cpu.stat of tonari's kernel; the
# bench's slices have CPUQuota=, so that is the slice's own cgroup).
charged_of() {
        local b k
        b=$(busctl get-property org.tonari.Manager1 "/org/tonari/slice/$1" org.tonari.Borrowing1 BorrowedUSec | cut -d' ' -f2)
        k=$(awk '$1 == "charged_usec" { print $2 }' "/sys/fs/cgroup/tonari.slice/tonari-$1.slice/cpu.stat" 2>/dev/null || true)
        echo $((b + ${k:-0}))
}
trap 'cleanup_case; rm -rf "$work"; [[ ! -e $dropin ]] || { rm -f "$dropin"; systemctl reload tonarid.service; }' EXIT

# unit_cpu_usec UNIT: the CPU time of a service's main process so far, µs.
unit_cpu_usec() {
        local pid
        pid=$(systemctl show -P MainPID "$1")
        awk -v hz="$(getconf CLK_TCK)" '{ printf "%d\n", ($14 + $15) * 1000000 / hz }' "/proc/$pid/stat"
}

tonarid_cpu_usec() {
        unit_cpu_usec tonarid.service
}

# record_charges N FLOOD MODE: what each copier spent (its scope's cpu.stat) next to what its
# container's slice was charged, for the summary at the end.
record_charges() {
        local n=$1 flood=$2 mode=$3 i spent charged
        for ((i = 1; i < n; i++)); do
                spent=$(awk '$1 == "usage_usec" { print $2 }' \
                        "/sys/fs/cgroup$(systemctl show -P ControlGroup "bench-log-c$i.scope")/cpu.stat")
                charged=$(charged_of "c$i")
                echo "CHARGE n=$n flood=$flood mode=$mode slice=c$i copier_usec=$spent charged_usec=$charged" \
                        "charged/copier=$(awk -v c="$charged" -v s="$spent" 'BEGIN { printf "%.2f", s ? c / s : 0 }')" \
                        >>"$work/charges"
        done
}

# bprop SLICE PROPERTY: a property of the slice's org.tonari.Borrowing1 interface.
bprop() {
        busctl get-property org.tonari.Manager1 "/org/tonari/slice/$1" org.tonari.Borrowing1 "$2" | cut -d' ' -f2
}

# wait_exec PID COMM: until the process PID runs the program COMM (systemd-run execs it in place).
wait_exec() {
        local t
        for ((t = 0; t < 200; t++)); do
                [[ $(cat "/proc/$1/comm" 2>/dev/null) == "$2" ]] && return 0
                sleep 0.05
        done
        echo "process $1 did not become $2 within 10 s" >&2
        return 1
}

# usage_of UNIT: the CPU time of a unit's cgroup so far, µs (0 for a unit that is not there).
usage_of() {
        local cg
        cg=$(systemctl show -P ControlGroup "$1" 2>/dev/null) || true
        [[ -n $cg ]] || { echo 0; return 0; }
        awk '$1 == "usage_usec" { print $2 }' "/sys/fs/cgroup$cg/cpu.stat"
}

# cpu_snapshot N: wall clock (µs); the CPU time (µs) of sysbench's slice, of the flood slices
# together and of the copiers together; what the flood slices were charged, repaid, overran, were
# forgiven and owe (see org.tonari.Manager1(5)); CPU 0's idle time.
cpu_snapshot() {
        local n=$1 i floods=0 copiers=0 charged=0 repaid=0 overrun=0 forgiven=0 debt=0 c r o f d tonarid
        for ((i = 1; i < n; i++)); do
                floods=$((floods + $(usage_of "tonari-c$i.slice")))
                copiers=$((copiers + $(usage_of "bench-log-c$i.scope")))
                read -r c r o f d < <(busctl get-property org.tonari.Manager1 "/org/tonari/slice/c$i" org.tonari.Borrowing1 \
                        BorrowedUSec RepaidUSec OverrunUSec ForgivenUSec DebtUSec | awk '{ printf "%s ", $2 } END { print "" }')
                charged=$((charged + $(charged_of "c$i")))
                repaid=$((repaid + r))
                overrun=$((overrun + o))
                forgiven=$((forgiven + f))
                debt=$((debt + d))
        done
        tonarid=$(tonarid_cpu_usec)
        echo "$(($(date +%s%N) / 1000)) $(usage_of tonari-c0.slice) $floods $copiers $charged $repaid $overrun" \
                "$(awk -v hz="$(getconf CLK_TCK)" '$1 == "cpu0" { printf "%d", ($5 + $6) * 1000000 / hz }' /proc/stat)" \
                "$forgiven $debt $((tonarid + $(unit_cpu_usec dbus.service))) $tonarid"
}

# run_case N FLOOD MODE → prints events/s of sysbench in c0.
run_case() {
        local n=$1 flood=$2 mode=${3%@*} quota i cmd pid copier eps hold
        local -a copiers=() life0=()
        set_repay "$3"
        quota=$((100 / n))
        for ((i = 0; i < n; i++)); do
                tonarictl slice create "c$i" "CPUQuota=${quota}%" AllowedCPUs=0
        done
        for ((i = 1; i < n; i++)); do
                if [[ $mode == baseline ]]; then
                        start_in_slice "c$i" 'dd if=/dev/zero of=/dev/null' >/dev/null
                        continue
                fi
                mkfifo "$work/c$i.fifo"
                if [[ $mode == inside ]]; then
                        start_in_slice "c$i" "exec $(printf '%q' "$logcopy") --max-size=16M $(printf '%q' "$work/c$i.log") <$(printf '%q' "$work/c$i.fifo")" >/dev/null
                        start_in_slice "c$i" "dd if=/dev/zero of=/dev/null & $(flood_command "$flood")" "$work/c$i.fifo" >/dev/null
                        continue
                fi
                cmd=(taskset -c 0 "$logcopy")
                [[ $mode == lib ]] && cmd+=(--charge="c$i")
                # The copier, like nerdctl's logger in containerd.service: another slice. A
                # writer held open on the FIFO lets it start (and be registered) before the
                # flood; a sleep next to it keeps its scope, and the scope's CPU time, after it
                # exited, for the life-long fidelity at the end.
                exec {hold}<>"$work/c$i.fifo"
                systemd-run --quiet --scope --unit="bench-log-c$i" --slice=bench-runtime.slice \
                        sh -c 'sleep infinity & exec "$@"' sh "${cmd[@]}" --max-size=16M "$work/c$i.log" \
                        <"$work/c$i.fifo" {hold}<&- &
                copier=$!
                pids+=("$copier")
                copiers+=("$copier")
                # systemd-run --scope and sh exec the copier in place: the PID is the copier's.
                wait_exec "$copier" tonari-logcopy
                if [[ $mode == proxy || $mode == kernel-on-behalf || $mode == kernel-paper ]]; then
                        tonarictl borrow add-proxy "c$i" "$copier" >/dev/null
                elif [[ $mode == proxycg ]]; then
                        tonarictl borrow add-proxy "c$i" "$(systemctl show -P ControlGroup "bench-log-c$i.scope")" >/dev/null
                fi
                life0+=("$(usage_of "bench-log-c$i.scope") $(charged_of "c$i")")
                start_in_slice "c$i" "dd if=/dev/zero of=/dev/null & $(flood_command "$flood")" "$work/c$i.fifo" >/dev/null
                exec {hold}<&-
        done
        sleep 1
        local before after
        before=$(cpu_snapshot "$n")
        pid=$(start_in_slice c0 "sysbench cpu --threads=1 --time=$time --cpu-max-prime=10000 run" "$work/sysbench.out")
        while kill -0 "$pid" 2>/dev/null; do sleep 0.5; done
        after=$(cpu_snapshot "$n")
        # Where CPU 0's time went while sysbench ran. With borrowing, the flood slices get their
        # quotas, (N-1)/N, minus what was charged; what the copiers spent beyond that
        # ("uncharged") is taken from the neighbours.
        awk -v n="$n" -v f="$flood" -v m="$3" -v b="$before" -v a="$after" 'BEGIN {
                split(b, x); split(a, y); w = y[1] - x[1]
                printf "CPU0 n=%s flood=%s mode=%s sysbench=%.3f floods=%.3f copiers=%.3f charged=%.3f repaid=%.3f overrun=%.3f forgiven=%.3f debt%+.3f floods+copiers=%.3f quota=%.3f idle=%.3f other=%.3f daemons=%.3f tonarid=%.3f\n",
                        n, f, m, (y[2] - x[2]) / w, (y[3] - x[3]) / w, (y[4] - x[4]) / w,
                        (y[5] - x[5]) / w, (y[6] - x[6]) / w, (y[7] - x[7]) / w, (y[9] - x[9]) / w,
                        (y[10] - x[10]) / w, (y[3] - x[3] + y[4] - x[4]) / w, (n - 1) / n, (y[8] - x[8]) / w,
                        1 - (y[2] - x[2] + y[3] - x[3] + y[4] - x[4] + y[8] - x[8]) / w, (y[11] - x[11]) / w,
                        (y[12] - x[12]) / w }' >>"$work/cpu0"
        eps=$(awk '/events per second:/ { print $4 }' "$work/sysbench.out")
        [[ -n $eps ]] || { cat "$work/sysbench.out" >&2; return 1; }
        # The CPU time sysbench got (its slice holds nothing else) and what it did with each
        # second of it: a loss of events with the CPU time intact is interference (caches, TLB,
        # switches), which no accounting of CPU time can give back.
        local cpu events
        cpu=$(awk '$1 == "usage_usec" { print $2 }' "/sys/fs/cgroup$(systemctl show -P ControlGroup tonari-c0.slice)/cpu.stat")
        events=$(awk '/total number of events:/ { print $5 }' "$work/sysbench.out")
        echo "SYSBENCH n=$n flood=$flood mode=$3 cpu_share=$(awk -v c="$cpu" -v t="$time" 'BEGIN { printf "%.3f", c / (t * 1e6) }')" \
                "events_per_cpu_s=$(awk -v e="$events" -v c="$cpu" 'BEGIN { printf "%.1f", e / (c / 1e6) }')" >>"$work/sysbench"
        if [[ $mode != baseline && $mode != inside ]]; then
                # Over sysbench's run: charged ÷ the copiers' CPU, both read at its start and end.
                awk -v n="$n" -v f="$flood" -v m="$3" -v b="$before" -v a="$after" 'BEGIN {
                        split(b, x); split(a, y)
                        printf "FIDELITY n=%s flood=%s mode=%s window=%.3f copiers_usec=%d charged_usec=%d\n",
                                n, f, m, (y[4] > x[4] ? (y[5] - x[5]) / (y[4] - x[4]) : 0), y[4] - x[4], y[5] - x[5] }' >>"$work/fidelity"
                record_charges "$n" "$flood" "$3"
                # Over the copiers' lives: the floods end, each copier copies what is left, sends
                # what it has pending (libtonari) or is sampled a last time (proxies) and exits.
                for ((i = 1; i < n; i++)); do
                        systemctl kill --signal=KILL "tonari-c$i.scope" 2>/dev/null || true
                done
                for copier in "${copiers[@]}"; do
                        wait "$copier" || true
                done
                sleep 0.5
                local spent=0 charged=0 before_reg=0 all=0 s0 c0 u b
                for ((i = 1; i < n; i++)); do
                        read -r s0 c0 <<<"${life0[i - 1]}"
                        u=$(usage_of "bench-log-c$i.scope")
                        b=$(charged_of "c$i")
                        spent=$((spent + u - s0))
                        charged=$((charged + b - c0))
                        before_reg=$((before_reg + s0))
                        all=$((all + b))
                done
                # scope=: charged ÷ everything the copiers' scopes ran, their start-up before
                # registration included (systemd-run, the shell, the loader), which no proxy sees.
                echo "LIFE n=$n flood=$flood mode=$3 life=$(awk -v c="$charged" -v s="$spent" 'BEGIN { printf "%.3f", s ? c / s : 0 }')" \
                        "scope=$(awk -v c="$all" -v s="$((spent + before_reg))" 'BEGIN { printf "%.3f", s ? c / s : 0 }')" \
                        "copiers_usec=$spent charged_usec=$charged before_registration_usec=$before_reg" >>"$work/life"
        fi
        cleanup_case
        echo "$eps"
}

IFS=, read -ra n_list <<<"$ns"
IFS=, read -ra flood_list <<<"$floods"
IFS=, read -ra mode_list <<<"$modes"
for f in "${flood_list[@]}"; do
        flood_command "$f" >/dev/null || exit 2
done

echo "sysbench $(sysbench --version | awk '{ print $2 }'), $time s per run, all on CPU 0; events per second:"
cpu_start=$(tonarid_cpu_usec)
wall_start=$(date +%s%N)
declare -A eps
for n in "${n_list[@]}"; do
        eps[$n,baseline]=-
        [[ $baseline == no ]] || eps[$n,baseline]=$(run_case "$n" - baseline)
        for f in "${flood_list[@]}"; do
                for m in "${mode_list[@]}"; do
                        eps[$n,$f,$m]=$(run_case "$n" "$f" "$m")
                done
        done
done
cpu_end=$(tonarid_cpu_usec)
wall_end=$(date +%s%N)

header="N  baseline"
for f in "${flood_list[@]}"; do for m in "${mode_list[@]}"; do header+=$(printf ' %12s' "$f/$m"); done; done
echo "$header"
for n in "${n_list[@]}"; do
        line=$(printf '%-2s %8s' "$n" "${eps[$n,baseline]}")
        for f in "${flood_list[@]}"; do for m in "${mode_list[@]}"; do line+=$(printf ' %12s' "${eps[$n,$f,$m]}"); done; done
        echo "$line"
done
echo
echo "Ratio to the baseline (paper Table 4: 0.50-0.78 without borrowing; Table 9: 0.70-0.95 with):"
echo "$header" | sed 's/baseline/        /'
for n in "${n_list[@]}"; do
        line=$(printf '%-2s %8s' "$n" "")
        for f in "${flood_list[@]}"; do
                for m in "${mode_list[@]}"; do
                        r=-
                        [[ ${eps[$n,baseline]} == - ]] ||
                                r=$(awk -v a="${eps[$n,$f,$m]}" -v b="${eps[$n,baseline]}" 'BEGIN { printf "%.2f", a / b }')
                        line+=$(printf ' %12s' "$r")
                        echo "RATIO n=$n flood=$f mode=$m ratio=$r" >>"$work/ratios"
                done
        done
        echo "$line"
done
echo
awk -v c=$((cpu_end - cpu_start)) -v w=$(((wall_end - wall_start) / 1000)) \
        'BEGIN { printf "tonarid CPU time during the runs: %.2f s of %.0f s wall (%.2f%% of one CPU)\n", c / 1e6, w / 1e6, 100 * c / w }'
echo "GetStatus: $(busctl call org.tonari.Manager1 /org/tonari/Manager1 org.tonari.Manager1 GetStatus --json=short |
        python3 -c 'import json,sys; d=json.load(sys.stdin)["data"][0]; print({k: d[k]["data"] for k in ("BorrowWorkUSec", "BorrowTicks", "BorrowCgroupWrites", "BorrowProbeReads", "BorrowStateWrites", "BorrowStateWriteUSec", "BorrowJournalWrites", "CPUUsageUSec") if k in d})')"
echo "sysbench's share of CPU 0 and events per CPU second (quota share = 1/N):"
cat "$work/sysbench"
echo "Where CPU 0's time went while sysbench ran (shares of the wall time):"
cat "$work/cpu0"
cat "$work/ratios"
cat "$work/charges"
cat "$work/fidelity" "$work/life" 2>/dev/null || true
echo "Per case: the victim's ratio to the baseline and its CPU share, beside the charge fidelity"
echo "(charged ÷ copiers' CPU) over sysbench's run (window), over the copiers' lives from their"
echo "registration (life), and over everything their scopes ran, start-up included (scope):"
for n in "${n_list[@]}"; do
        for f in "${flood_list[@]}"; do
                for m in "${mode_list[@]}"; do
                        [[ ${m%@*} == none || ${m%@*} == inside ]] && w=- l=- sc=- || {
                                w=$(sed -n "s/^FIDELITY n=$n flood=$f mode=$m window=\([^ ]*\).*/\1/p" "$work/fidelity")
                                l=$(sed -n "s/^LIFE n=$n flood=$f mode=$m life=\([^ ]*\).*/\1/p" "$work/life")
                                sc=$(sed -n "s/^LIFE n=$n flood=$f mode=$m .* scope=\([^ ]*\).*/\1/p" "$work/life")
                        }
                        echo "CASE n=$n flood=$f mode=$m ratio=$(sed -n "s/^RATIO n=$n flood=$f mode=$m ratio=//p" "$work/ratios")" \
                                "share=$(sed -n "s/^SYSBENCH n=$n flood=$f mode=$m cpu_share=\([^ ]*\).*/\1/p" "$work/sysbench")" \
                                "window=$w life=$l scope=$sc" \
                                "tonarid=$(sed -n "s/^CPU0 n=$n flood=$f mode=$m .* tonarid=\([^ ]*\).*/\1/p" "$work/cpu0")"
                done
        done
done
