#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# bench/hog-limit's driver inside the VM test bed (tonarid installed and running): the paper's
# experiments (seed 001, §5) with tonari (HogLimiting=yes), no manager, and a static limit set by
# hand on process 1 (CPUWeight= / IOWriteBandwidthMax=, what ananicy-style tools do). Every
# process is pinned to CPU 0. Prints one line per run:
#   RUN exp=E mode=M param=P rep=R p1=N p2=N sum=N
#   PIN exp=E mode=M pid=N cpus_after_move=LIST  (a process the move into its slice had taken off
#                                                CPU 0, put back before the run counts)
#   LAT mode=alone|none|tonari rep=R p99_ms=N      (a latency-sensitive victim next to a CPU hog
#                                                  and an I/O hog, or alone)
# and at the end the cost of sampling 1000 processes every second:
#   COST processes=1000 interval=1s cpu_permille=N round_usec=N
#
# usage: hog-limit-guest.sh --worker=PATH [--time=12] [--reps=3] [--io-limits=1,5,20,150]
#        [--weights=1,10,50] [--intervals=1,3,10] [--nprocs=2,4,7] [--exps=io,cpu,interval,nprocs,victim,cost]
#        [--disk-mbps=50]
set -eu

worker=
time_s=12
reps=3
io_limits=1,5,20,150
weights=1,10,50
intervals=1,3,10
nprocs=2,4,7
exps=io,cpu,interval,nprocs,victim,cost
disk_mbps=50
for a in "$@"; do
        case $a in
        --worker=*) worker=${a#*=} ;;
        --time=*) time_s=${a#*=} ;;
        --reps=*) reps=${a#*=} ;;
        --io-limits=*) io_limits=${a#*=} ;;
        --weights=*) weights=${a#*=} ;;
        --intervals=*) intervals=${a#*=} ;;
        --nprocs=*) nprocs=${a#*=} ;;
        --exps=*) exps=${a#*=} ;;
        --disk-mbps=*) disk_mbps=${a#*=} ;;
        *) echo "hog-limit-guest: unknown option $a" >&2; exit 2 ;;
        esac
done
[[ -f $worker ]] || { echo "hog-limit-guest: --worker= missing" >&2; exit 2; }

D=/var/tmp/hog-limit
mkdir -p "$D"
DEV=/dev/$(lsblk -no PKNAME "$(findmnt -no SOURCE --target "$D")" 2>/dev/null || echo vda)
[[ -b $DEV ]] || DEV=/dev/vda
# The test bed's disk is the host's page cache (GB/s); the paper's was a hard disk that two writers
# saturate. All of tonari.slice shares DISK_MBPS (a limit on the parent of every slice), so the
# processes of each run contend for it in every mode, as they would for a slow disk.
if systemctl is-active -q tonari.slice 2>/dev/null || systemctl start tonari.slice; then
        systemctl set-property --runtime tonari.slice "IOWriteBandwidthMax=$DEV ${disk_mbps}M" \
                "IOReadBandwidthMax=$DEV ${disk_mbps}M"
fi
read -r LPS BPS < <(systemd-run --quiet --wait --pipe --slice=tonari.slice -p CPUAffinity=0 \
        python3 "$worker" calibrate "$D")
echo "CALIBRATE loops_per_sec=$LPS bytes_per_sec=$BPS disk_limit_mbps=$disk_mbps"
echo "SIGNALS task_delayacct=$(cat /proc/sys/kernel/task_delayacct 2>/dev/null || echo n/a)" \
        "psi=$(cat /sys/fs/cgroup/tonari.slice/io.pressure >/dev/null 2>&1 && echo yes || echo no)"

# decisions EXP MODE PARAM REP SINCE PID...: tonarid's decisions on these processes since SINCE (µs
# of the realtime clock), one DECISION line each: seconds after SINCE, which process (p1 or p2..),
# action, reason, how long it had been limited, the resource's total use before and after.
decisions() {
        local exp=$1 mode=$2 param=$3 rep=$4 since=$5
        shift 5
        journalctl -u tonarid.service --no-pager -o json --since="@$((since / 1000000))" |
                python3 -c '
import json, sys
since, exp, param, rep = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
pids = sys.argv[5:]
for line in sys.stdin:
    e = json.loads(line)
    if e.get("TONARI_PID") not in pids or "TONARI_ACTION" not in e:
        continue
    t = (int(e["__REALTIME_TIMESTAMP"]) - since) / 1e6
    print("DECISION exp=%s param=%s rep=%s t=%.1f proc=p%d action=%s reason=%s limited_s=%.1f total_before=%s total_after=%s"
          % (exp, param, rep, t, pids.index(e["TONARI_PID"]) + 1, e["TONARI_ACTION"], e.get("TONARI_REASON"),
             int(e.get("TONARI_LIMITED_USEC", "0")) / 1e6, e.get("TONARI_TOTAL_BEFORE"), e.get("TONARI_TOTAL_AFTER")))
' "$since" "$exp" "$param" "$rep" "$@" || true
}

# pin EXP MODE PID...: puts the processes of a run back on CPU 0 after they were moved into their
# slice or registered, and prints one PIN line for each the move had taken off it. On kernels
# before 6.2 (the test bed's 6.1) moving a task into a cgroup of another cpuset (here from the
# guest's service into tonari.slice, both below a root with the cpuset controller) sets its CPU
# affinity to that cpuset's CPUs: the processes of §5.1.2 then ran on both CPUs, did not contend,
# and tonari rightly limited none. Fails loudly if a process cannot be put back.
pin() {
        local exp=$1 mode=$2 p a
        shift 2
        for p in "$@"; do
                a=$(sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' "/proc/$p/status" 2>/dev/null) || continue
                [[ -z $a || $a == 0 ]] && continue
                echo "PIN exp=$exp mode=$mode pid=$p cpus_after_move=$a"
                taskset -a -pc 0 "$p" >/dev/null || { echo "hog-limit-guest: cannot pin PID $p to CPU 0" >&2; exit 1; }
        done
}

# start SLICE KIND OUTFILE: a worker attached to SLICE (none: left for RegisterProcesses); its PID
# in STARTED (a child of this shell, so that wait works: no command substitution). It starts after
# a short pause, so that it runs its whole time where it is put.
start() {
        local slice=$1 kind=$2 out=$3 pid
        taskset -c 0 bash -c "sleep 0.5; exec python3 '$worker' run $kind $time_s '$out' '$D' $LPS $BPS" &
        pid=$!
        [[ $slice == none ]] || tonarictl slice attach "$slice" "$pid" >/dev/null
        STARTED=$pid
}

# one EXP MODE PARAM REP KIND1 KIND2 [KIND2...]: one run; process 1 is KIND1, the rest the others.
one() {
        local exp=$1 mode=$2 param=$3 rep=$4 k1=$5
        shift 5
        local pids=() i=0 p1 rest=0 sum seed
        tonarictl slice create hb
        if [[ $mode == static ]]; then
                if [[ $exp == io ]]; then
                        tonarictl slice create hs IOWriteBandwidthMax="$DEV ${param}M" IOReadBandwidthMax="$DEV ${param}M"
                else
                        tonarictl slice create hs CPUWeight="$param"
                fi
        fi
        if [[ $mode == tonari ]]; then
                # The scope exists once the slice has a process.
                sleep 1000 &
                seed=$!
                tonarictl slice attach hb "$seed"
                case $exp in
                io) tonarictl hog set hb yes IOLimit="${param}M" ;;
                cpu) tonarictl hog set hb yes CPUWeight="$param" ;;
                interval) tonarictl hog set hb yes MonitorIntervalSec="${param}s" WindowSec="$((param * 3 > 10 ? param * 3 : 10))s" ;;
                *) tonarictl hog set hb yes ;;
                esac
        fi
        # A hog-limited slice takes processes through RegisterProcesses (its scope holds none itself).
        local target=hb
        [[ $mode == tonari ]] && target=none
        if [[ $mode == static ]]; then
                start hs "$k1" "$D/out.0"; pids+=("$STARTED")
        else
                start $target "$k1" "$D/out.0"; pids+=("$STARTED")
        fi
        for k in "$@"; do
                i=$((i + 1))
                start $target "$k" "$D/out.$i"; pids+=("$STARTED")
        done
        local since
        since=$(date +%s%6N)
        [[ $mode == tonari ]] && tonarictl hog register hb "${pids[@]}"
        pin "$exp" "$mode" "${pids[@]}"
        wait "${pids[@]}"
        [[ $mode == tonari ]] && decisions "$exp" "$mode" "$param" "$rep" "$since" "${pids[@]}"
        p1=$(cat "$D/out.0")
        for ((j = 1; j <= i; j++)); do
                rest=$(python3 -c "print(round($rest + $(cat "$D/out.$j"), 3))")
        done
        sum=$(python3 -c "print(round($p1 + $rest, 3))")
        echo "RUN exp=$exp mode=$mode param=$param rep=$rep p1=$p1 p2=$rest sum=$sum"
        rm -f "$D"/out.*
        [[ $mode == tonari ]] && { kill "$seed"; tonarictl hog set hb no; }
        sleep 0.3
        tonarictl slice remove hb
        [[ $mode == static ]] && tonarictl slice remove hs
        return 0
}

has() { [[ ,$exps, == *,$1,* ]]; }

# victim MODE REP: the latency victim alone, or next to a CPU hog and an I/O hog without a manager
# or in a hog-limited slice.
victim() {
        local mode=$1 rep=$2 pids=() seed target=hb
        tonarictl slice create hb
        if [[ $mode == tonari ]]; then
                sleep 1000 &
                seed=$!
                tonarictl slice attach hb "$seed"
                tonarictl hog set hb yes
                target=none
        fi
        start $target lat "$D/out.0"; pids+=("$STARTED")
        if [[ $mode != alone ]]; then
                start $target c5 "$D/out.1"; pids+=("$STARTED")
                start $target w2 "$D/out.2"; pids+=("$STARTED")
        fi
        [[ $mode == tonari ]] && tonarictl hog register hb "${pids[@]}"
        pin victim "$mode" "${pids[@]}"
        wait "${pids[@]}"
        echo "LAT mode=$mode rep=$rep p99_ms=$(cat "$D/out.0")"
        rm -f "$D"/out.*
        [[ $mode == tonari ]] && { kill "$seed"; tonarictl hog set hb no; }
        sleep 0.3
        tonarictl slice remove hb
        return 0
}

for rep in $(seq "$reps"); do
        if has io; then
                one io none - "$rep" w2 w1c2
                for l in ${io_limits//,/ }; do
                        one io tonari "$l" "$rep" w2 w1c2
                done
                one io static 5 "$rep" w2 w1c2
        fi
        if has cpu; then
                one cpu none - "$rep" c5 w1c2
                for w in ${weights//,/ }; do
                        one cpu tonari "$w" "$rep" c5 w1c2
                done
                one cpu static 1 "$rep" c5 w1c2
        fi
        if has interval; then
                for s in ${intervals//,/ }; do
                        one interval tonari "$s" "$rep" c5 w1c2
                done
        fi
        if has victim; then
                victim alone "$rep"
                victim none "$rep"
                victim tonari "$rep"
        fi
        if has nprocs; then
                for n in ${nprocs//,/ }; do
                        # Half kind A (1 s CPU), half kind B (0.5 s CPU then 3 s writes); A first.
                        kinds=()
                        for ((k = 0; k < n; k++)); do
                                ((k % 2 == 0)) && kinds+=(a) || kinds+=(b)
                        done
                        one nprocs none "$n" "$rep" "${kinds[@]}"
                        one nprocs tonari "$n" "$rep" "${kinds[@]}"
                done
        fi
done

if has cost; then
        # tonarid's CPU time while it samples 1000 processes every second, over 30 s.
        tonarictl slice create hk
        sleep 1000 &
        seed=$!
        tonarictl slice attach hk "$seed"
        tonarictl hog set hk yes MonitorIntervalSec=1s WindowSec=3s
        pids=()
        for i in $(seq 1000); do
                sleep 1000 &
                pids+=($!)
        done
        tonarictl hog register hk "${pids[@]}"
        sleep 3
        tpid=$(systemctl show -P MainPID tonarid.service)
        ticks() { awk '{ print $14 + $15 }' "/proc/$tpid/stat"; }
        status() { busctl --json=short call org.tonari.Manager1 /org/tonari/Manager1 org.tonari.Manager1 GetStatus |
                python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0][sys.argv[1]]["data"])' "$1"; }
        t0=$(ticks) w0=$(status HogWorkUSec) r0=$(status HogRounds) s0=$(date +%s%N)
        sleep 30
        t1=$(ticks) w1=$(status HogWorkUSec) r1=$(status HogRounds) s1=$(date +%s%N)
        hz=$(getconf CLK_TCK)
        echo "COST processes=1000 interval=1s cpu_permille=$(python3 -c "print(round(($t1 - $t0) / $hz / (($s1 - $s0) / 1e9) * 1000, 2))") round_usec=$(((w1 - w0) / (r1 - r0))) rounds=$((r1 - r0))"
        kill "${pids[@]}" "$seed"
        sleep 1
        tonarictl hog set hk no
        sleep 0.5
        tonarictl slice remove hk
fi
