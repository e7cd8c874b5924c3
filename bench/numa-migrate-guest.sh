#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The guest side of bench/numa-migrate (seed 002, Fig 8 and Fig 9): runs in the VM test bed as
# root with tonarid started. Prints raw lines the host script turns into tables and plots:
#
#   LOC POLICY N REP T_MS HOT_PCT ALL_PCT MAX_ITER_US   locality every 100 ms (Fig 9)
#   SUM POLICY N REP CPU_MS ELAPSED_MS HOT95_MS ALL95_MS STALL_MS BASE_STALL_MS
#   CPU POLICY N REP CPU_MS                              CPU time of one migration (Fig 8)
#   BUD POLICY N REP BUDGET_PCT CPU_MS ELAPSED_MS        MigrationCPUBudget= held?
#
# eager is migratepages(8) (the kernel's move of every page at once; its user+system time),
# the others tonari's jobs (the worker thread's CPU time, from the journal).
# usage: numa-migrate-guest.sh --workload=PATH [--mib=M] [--reps=R] [--n-loc=N] [--ns=N,N,...] [--interval-ms=T]
set -eu

WL= MIB=32 REPS=3 NLOC=1024 NS=256,1024,4096 TMS=100
for a in "$@"; do
        case $a in
        --workload=*) WL=${a#*=} ;;
        --mib=*) MIB=${a#*=} ;;
        --reps=*) REPS=${a#*=} ;;
        --n-loc=*) NLOC=${a#*=} ;;
        --ns=*) NS=${a#*=} ;;
        --interval-ms=*) TMS=${a#*=} ;;
        *) echo "numa-migrate-guest: unknown option '$a'" >&2; exit 2 ;;
        esac
done
[[ -x $WL ]] || { echo "numa-migrate-guest: no workload at '$WL'" >&2; exit 1; }
[[ -e /sys/kernel/mm/page_idle/bitmap ]] || echo "numa-migrate-guest: WARNING: no idle page tracking, severe and mild act as periodical" >&2

field() { # job id, field
        journalctl -o verbose --output-fields="$2" "TONARI_JOB=$1" TONARI_REASON=memory-migration -q |
                sed -n "s/^ *$2=//p" | tail -n1
}

# First time (ms after t0) at which column col reached 95 in file f after line from.
at95() {
        awk -v col="$2" -v from="$3" -v t0="$4" 'NR > from && $1 ~ /^[0-9]+$/ && $col >= 95 { print $1 - t0; exit }' "$1"
}

run() { # policy n interval_ms rep kind(loc|cpu|budget) [cpu budget percent]
        local policy=$1 n=$2 tms=$3 rep=$4 kind=$5 budget=${6:-0} out=/var/tmp/bench-wl.out fifo=/var/tmp/bench-wl.fifo
        local wl from t0 cpu_ms=0 elapsed_ms=0 job id hot95 all95 stall base
        tonarictl slice create bench AllowedMemoryNodes=$([[ $policy == eager ]] && echo 0-1 || echo 0) AllowedCPUs=0
        rm -f "$fifo" "$out"
        mkfifo "$fifo"
        "$WL" "$MIB" 2 1 600 <"$fifo" >"$out" &
        wl=$!
        tonarictl slice attach bench "$wl"
        echo go >"$fifo"
        until grep -q '^ready' "$out"; do sleep 0.1; done
        sleep 1
        from=$(wc -l <"$out")
        t0=$(tail -n1 "$out" | awk '{ print $1 }')
        if [[ $policy == eager ]]; then
                local t1 t2
                t1=$(date +%s%3N)
                TIMEFORMAT='%U %S'
                { time migratepages "$wl" 0 1 ; } 2>/var/tmp/eager.time
                t2=$(date +%s%3N)
                cpu_ms=$(awk '{ printf "%d", ($1 + $2) * 1000 }' /var/tmp/eager.time)
                elapsed_ms=$((t2 - t1))
                tonarictl slice set bench AllowedCPUs=1
        else
                job=$(tonarictl slice migrate bench 1 "MemoryMigration=$policy" "MigrationBatchPages=$n" \
                        "MigrationIntervalSec=${tms}ms" "MigrationCPUBudget=$budget" --wait 2>/dev/null | awk '{ print $1 }')
                id=${job##*/}
                cpu_ms=$(( $(field "$id" TONARI_CPU_USEC) / 1000 ))
                elapsed_ms=$(( $(field "$id" TONARI_ELAPSED_USEC) / 1000 ))
        fi
        sleep 1.5
        kill "$wl"
        wait "$wl" 2>/dev/null || true
        if [[ $kind == loc ]]; then
                awk -v p="$policy" -v n="$n" -v r="$rep" -v from="$from" -v t0="$t0" \
                        'NR > from && $1 ~ /^[0-9]+$/ { print "LOC", p, n, r, $1 - t0, $2, $3, $4 }' "$out"
                hot95=$(at95 "$out" 2 "$from" "$t0")
                all95=$(at95 "$out" 3 "$from" "$t0")
                # The longest pass over the hot set during the move, and before it (the baseline).
                stall=$(awk -v from="$from" -v t0="$t0" -v end="$((elapsed_ms + 2000))" \
                        'NR > from && $1 - t0 <= end && $4 > m { m = $4 } END { printf "%.1f", m / 1000 }' "$out")
                base=$(awk -v from="$from" 'NR > 2 && NR <= from && $4 > m { m = $4 } END { printf "%.1f", m / 1000 }' "$out")
                echo "SUM $policy $n $rep $cpu_ms $elapsed_ms ${hot95:--1} ${all95:--1} $stall $base"
        elif [[ $kind == budget ]]; then
                echo "BUD $policy $n $rep $budget $cpu_ms $elapsed_ms"
        else
                echo "CPU $policy $n $rep $cpu_ms"
        fi
        tonarictl slice remove bench
}

IFS=, read -ra ns <<<"$NS"
for rep in $(seq "$REPS"); do
        for policy in eager periodical severe mild; do
                run "$policy" "$NLOC" "$TMS" "$rep" loc
        done
        for n in "${ns[@]}"; do
                for policy in periodical severe mild; do
                        run "$policy" "$n" 20 "$rep" cpu
                done
        done
        run mild "$NLOC" 20 "$rep" budget 10
done
