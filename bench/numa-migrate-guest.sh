#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The guest side of bench/numa-migrate (seed 002, Fig 9 and the CPU and neighbour figures): runs
# in the VM test bed as root with tonarid started. Per repetition and policy, a slice "bench" on
# CPU 1 with its memory on node 0 runs numa-workload (MIB MiB, every second page hot, its own
# move_pages query of where the pages are every 100 ms) while numa-neighbour spins on CPU 0; the
# slice's memory then moves to node 1:
#   eager       tonarictl slice migrate bench 1 MemoryMigration=eager: tonarid sets the slice
#               unit's AllowedMemoryNodes=1 through systemd, and the kernel moves every page while
#               systemd writes cpuset.mems (what `systemctl set-property X.slice AllowedMemoryNodes=1`
#               does)
#   periodical, severe, mild
#               tonari's lazy job, N pages every INTERVAL ms; its worker thread runs on the slice's
#               CPU (tonarid.conf [Migration] WorkerCPUs=slice, the default)
#   periodical-anycpu, severe-anycpu, mild-anycpu
#               the same with WorkerCPUs=any (a drop-in, tonarid reloaded): the worker may run on
#               either CPU, as before tonari pinned it
# Prints raw lines the host script turns into tables and the plot:
#
#   LOC POLICY REP T_MS HOT_PCT ALL_PCT MAX_PASS_US N       locality every 100 ms from the start
#   SUM POLICY REP ELAPSED_MS HOT95_MS ALL95_MS OTHER_CPU_MS WORKER_CPU_MS NB_SHARE_BEFORE NB_SHARE_DURING NB_RATE_BEFORE NB_RATE_DURING STALL_MS BASE_STALL_MS N BG_PER_S SCAN_MS IDLE_MS MOVE_MS MOVE_CALLS PASSES SCANNED PAGES_MOVED PINNED
#
# ELAPSED_MS the wall time of the migrate command (--wait), HOT95/ALL95 when 95 % of the hot half /
# of all pages were on node 1 (-1: never while watched), OTHER_CPU_MS the CPU time every task of
# the guest but the workload and the neighbour ran over the migration (the scheduler's own
# accounting, /proc/PID/task/TID/schedstat: what the migration took, the kernel's workers and
# systemd for eager, tonarid for the others, plus the guest's background), WORKER_CPU_MS tonari's
# worker thread from the job's journal entry (0 for eager), NB_SHARE_* the neighbour's share of
# its CPU (per mille, schedstat) in the 2 s before and over the migration, NB_RATE_* its chunks
# per second then (this one also drops when the host deschedules the VM's CPU), STALL/BASE_STALL
# the longest pass over the hot set during the migration and in the 2 s before, N the pages per
# round (0 for eager), BG_PER_S the CPU time per second every other task ran in the 2 s before (the
# guest's background, to subtract from OTHER_CPU_MS over the migration's wall time), and, from the
# job's journal entry, where the worker's CPU time went (scans, idle page tracking, move_pages(2)),
# its move_pages calls, scan passes, pages scanned and pages moved, and whether the worker ran on
# the slice's CPUs (1) or anywhere (0) (0 for eager).
#
# With --ns=N1,N2,... every policy but eager runs once per N and repetition (Fig 8: CPU vs n);
# eager runs once per repetition.
#
# usage: numa-migrate-guest.sh --workload=PATH --neighbour=PATH [--mib=M] [--reps=R] [--n=N]
#        [--interval-ms=T] [--policies=eager,periodical,severe,mild[,mild-anycpu...]] [--ns=N1,N2,...] [--budget=PERCENT]
set -eu

WL='' NB='' MIB=64 REPS=3 N=1024 NS='' TMS=100 POLICIES=eager,periodical,severe,mild BUDGET=0
for a in "$@"; do
        case $a in
        --workload=*) WL=${a#*=} ;;
        --neighbour=*) NB=${a#*=} ;;
        --mib=*) MIB=${a#*=} ;;
        --reps=*) REPS=${a#*=} ;;
        --n=*) N=${a#*=} ;;
        --interval-ms=*) TMS=${a#*=} ;;
        --ns=*) NS=${a#*=} ;;
        --budget=*) BUDGET=${a#*=} ;;
        --policies=*) POLICIES=${a#*=} ;;
        *) echo "numa-migrate-guest: unknown option '$a'" >&2; exit 2 ;;
        esac
done
[[ -x $WL ]] || { echo "numa-migrate-guest: no workload at '$WL'" >&2; exit 1; }
[[ -x $NB ]] || { echo "numa-migrate-guest: no neighbour at '$NB'" >&2; exit 1; }
[[ $(numactl -H | awk '/^available:/ { print $2 }') == 2 ]] || { echo "numa-migrate-guest: the guest needs two NUMA nodes" >&2; exit 1; }
[[ -e /sys/kernel/mm/page_idle/bitmap ]] || echo "numa-migrate-guest: WARNING: no idle page tracking, severe and mild act as periodical" >&2
# The settings, for the host's analysis (MigrationCPUBudget= is reported against its budget).
echo "CONF mib=$MIB interval_ms=$TMS budget=$BUDGET"

# The job's journal entry, NAME=VALUE lines (one journalctl: each costs seconds in the TCG guest).
job_fields() { # job id
        journalctl -o export "TONARI_JOB=$1" TONARI_REASON=memory-migration -q | grep -a '^TONARI_' | tail -n 40
}
field() { # fields, name
        sed -n "s/^$2=//p" <<<"$1" | tail -n1
}
# CPU time in ms from the scheduler (sum_exec_runtime; /proc/stat's ticks miss time when the host
# deschedules the TCG CPUs): of every task, and of one process's threads.
all_cpu_ms() {
        cat /proc/[0-9]*/task/[0-9]*/schedstat 2>/dev/null | awk '{ s += $1 } END { printf "%d", s / 1000000 }'
}
proc_cpu_ms() {
        cat /proc/"$1"/task/[0-9]*/schedstat | awk '{ s += $1 } END { printf "%d", s / 1000000 }'
}
# First time (ms from t0) at which column col of file f reached 95.
at95() {
        awk -v col="$2" -v t0="$3" '$1 ~ /^[0-9]+$/ && $1 >= t0 && $col >= 95 { print $1 - t0; exit }' "$1"
}

# Reloads tonarid with its [Migration] WorkerCPUs= set to $1 (slice: the drop-in removed).
worker_cpus() {
        local cursor
        cursor=$(journalctl -n1 --show-cursor -u tonarid.service | sed -n 's/^-- cursor: //p')
        if [[ $1 == slice ]]; then
                rm -f /etc/tonari/tonarid.conf.d/50-bench.conf
        else
                mkdir -p /etc/tonari/tonarid.conf.d
                printf '[Migration]\nWorkerCPUs=%s\n' "$1" >/etc/tonari/tonarid.conf.d/50-bench.conf
        fi
        systemctl reload tonarid.service
        for _ in $(seq 100); do
                journalctl -q -o cat -u tonarid.service --after-cursor="$cursor" | grep -q 'Reloaded configuration from' && return 0
                sleep 0.2
        done
        echo "numa-migrate-guest: tonarid did not reload with WorkerCPUs=$1" >&2
        return 1
}

run() { # policy rep [n]
        local policy=$1 rep=$2 N=${3:-$N} out=/var/tmp/bench-wl.out nbout=/var/tmp/bench-nb.out fifo=/var/tmp/bench-wl.fifo
        local wl nb ta t0 t1 a0 a1 w0 w1 na n0 n1 ab wb f job id worker_ms=0 elapsed hot95 all95 other nbs
        local detail='0 0 0 0 0 0 0 0' base_policy=${1%-anycpu}
        tonarictl slice create bench AllowedMemoryNodes=0 AllowedCPUs=1
        rm -f "$fifo" "$out" "$nbout"
        mkfifo "$fifo"
        "$WL" "$MIB" 2 1 600 <"$fifo" >"$out" &
        wl=$!
        tonarictl slice attach bench "$wl"
        echo go >"$fifo"
        until grep -q '^ready' "$out"; do sleep 0.1; done
        taskset -c 0 "$NB" 600 >"$nbout" &
        nb=$!
        sleep 0.5
        ta=$("$NB" now)
        na=$(proc_cpu_ms "$nb")
        ab=$(all_cpu_ms)
        wb=$(proc_cpu_ms "$wl")
        sleep 2
        a0=$(all_cpu_ms)
        w0=$(proc_cpu_ms "$wl")
        n0=$(proc_cpu_ms "$nb")
        t0=$("$NB" now)
        if [[ $policy == eager ]]; then
                tonarictl slice migrate bench 1 MemoryMigration=eager --wait >/var/tmp/bench-job.out
        else
                tonarictl slice migrate bench 1 "MemoryMigration=$base_policy" "MigrationBatchPages=$N" \
                        "MigrationIntervalSec=${TMS}ms" "MigrationCPUBudget=$BUDGET%" --wait >/var/tmp/bench-job.out
        fi
        t1=$("$NB" now)
        n1=$(proc_cpu_ms "$nb")
        w1=$(proc_cpu_ms "$wl")
        a1=$(all_cpu_ms)
        job=$(awk '{ print $1; exit }' /var/tmp/bench-job.out)
        [[ $(awk '{ print $2; exit }' /var/tmp/bench-job.out) == done ]] ||
                { echo "numa-migrate-guest: $policy: the job did not finish: $(cat /var/tmp/bench-job.out)" >&2; return 1; }
        if [[ $policy != eager ]]; then
                id=${job##*/}
                f=$(job_fields "$id")
                worker_ms=$(($(field "$f" TONARI_CPU_USEC) / 1000))
                detail="$(($(field "$f" TONARI_SCAN_CPU_USEC) / 1000)) $(($(field "$f" TONARI_IDLE_CPU_USEC) / 1000))"
                detail+=" $(($(field "$f" TONARI_MOVE_CPU_USEC) / 1000)) $(field "$f" TONARI_MOVE_CALLS)"
                detail+=" $(field "$f" TONARI_PASSES) $(field "$f" TONARI_PAGES_SCANNED) $(field "$f" TONARI_PAGES_MOVED)"
                detail+=" $(field "$f" TONARI_WORKER_PINNED)"
        fi
        sleep 1.5
        kill "$wl" "$nb"
        wait "$wl" "$nb" 2>/dev/null || true
        elapsed=$((t1 - t0))
        other=$(((a1 - a0) - (w1 - w0) - (n1 - n0)))
        awk -v p="$policy" -v r="$rep" -v t0="$t0" \
                -v n="$([[ $policy == eager ]] && echo 0 || echo "$N")" \
                '$1 ~ /^[0-9]+$/ && $1 >= t0 - 1000 { print "LOC", p, r, $1 - t0, $2, $3, $4, n }' "$out"
        hot95=$(at95 "$out" 2 "$t0")
        all95=$(at95 "$out" 3 "$t0")
        # The neighbour's rate (chunks/s) in the 2 s before and over the migration.
        nbs=$(awk -v t0="$t0" -v t1="$t1" '
                { if (NR > 1) { dt = $1 - prev; if ($1 > t0 - 2000 && $1 <= t0) { bc += $2; bt += dt }
                                if ($1 > t0 && $1 <= t1 + 100) { dc += $2; dtt += dt } }
                  prev = $1 }
                END { printf "%.0f %.0f", bt ? bc * 1000 / bt : 0, dtt ? dc * 1000 / dtt : 0 }' "$nbout")
        stall=$(awk -v t0="$t0" -v t1="$t1" '$1 ~ /^[0-9]+$/ && $1 > t0 && $1 <= t1 + 200 && $4 > m { m = $4 } END { printf "%.1f", m / 1000 }' "$out")
        base=$(awk -v t0="$t0" '$1 ~ /^[0-9]+$/ && $1 > t0 - 2000 && $1 <= t0 && $4 > m { m = $4 } END { printf "%.1f", m / 1000 }' "$out")
        # The background: every task but the workload and the neighbour, per second of the 2 s before.
        bg=$((((a0 - ab) - (w0 - wb) - (n0 - na)) * 1000 / (t0 - ta)))
        [[ $policy == eager ]] && N=0
        echo "SUM $policy $rep $elapsed ${hot95:--1} ${all95:--1} $other $worker_ms $(((n0 - na) * 1000 / (t0 - ta))) $(((n1 - n0) * 1000 / (elapsed > 0 ? elapsed : 1))) $nbs $stall $base $N $bg $detail"
        tonarictl slice remove bench
}

IFS=, read -ra policies <<<"$POLICIES"
# Each repetition starts with the next policy, so that a drift of the host's load spreads over all.
IFS=, read -ra ns <<<"${NS:-$N}"
for rep in $(seq "$REPS"); do
        for ((k = 0; k < ${#policies[@]}; k++)); do
                p=${policies[$(((k + rep - 1) % ${#policies[@]}))]}
                if [[ $p == eager ]]; then
                        run eager "$rep"
                        continue
                fi
                [[ $p != *-anycpu ]] || worker_cpus any
                for n in "${ns[@]}"; do
                        run "$p" "$rep" "$n"
                done
                [[ $p != *-anycpu ]] || worker_cpus slice
        done
done
