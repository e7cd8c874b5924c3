#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Where tonarid's own CPU goes during the log flood (issue 16): runs bench/borrow-logflood's guest
# half RUNS times in one boot of the VM test bed and samples tonarid with perf(1) during the
# first run. The baseline (dd only) runs in the first run only. Run from the build tree:
#
#   test/vm/run-with-packages build/deb --with=build/bench/tonari-logcopy \
#           --with=build/bench/tonari-logflood --with=bench/borrow-logflood-guest.sh \
#           --timeout=3600 bench/borrow-tonarid-profile-guest.sh
#
# Environment: RUNS (3), N (5), FLOODS (yes), MODES (proxy,lib), TIME (4 s per case). Prints the
# guest half's lines per run after a "RUN k" line, then perf's report as "PERF " lines.
set -eu

A=${TONARI_VM_SHARE:?this runs inside the VM test bed (test/vm/run-with-packages)}/artifacts
RUNS=${RUNS:-3} N=${N:-5} FLOODS=${FLOODS:-yes} MODES=${MODES:-proxy,lib} TIME=${TIME:-4}

command -v perf >/dev/null || { echo "borrow-tonarid-profile-guest: no perf in the guest (linux-perf)" >&2; exit 1; }
mapfile -t debs < <(find "$A" -name 'tonari_*.deb' -o -name 'libtonari0_*.deb' -o -name 'tonari-dbgsym_*.deb')
((${#debs[@]})) || { echo "borrow-tonarid-profile-guest: no tonari packages in $A" >&2; exit 1; }
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${debs[@]}" >/dev/null
systemctl start tonarid.service
pid=$(systemctl show -P MainPID tonarid.service)
echo "guest: $(nproc) CPUs, kernel $(uname -r), $(date -u +%Y-%m-%d)"

for ((run = 1; run <= RUNS; run++)); do
        echo "RUN $run"
        opts=(--floods="$FLOODS")
        ((run == 1)) || opts+=(--baseline=no)
        if ((run == 1)); then
                perf record -F 499 -g -o /tmp/tonarid.perf -p "$pid" 2>/tmp/tonarid.perf.err &
                perf_pid=$!
        fi
        bash "$A/borrow-logflood-guest.sh" --logcopy="$A/tonari-logcopy" --logflood="$A/tonari-logflood" \
                --n="$N" --modes="$MODES" --time="$TIME" "${opts[@]}"
        if ((run == 1)); then
                kill -INT "$perf_pid"
                wait "$perf_pid" || true
                {
                        echo "=== self, by symbol"
                        perf report -i /tmp/tonarid.perf --stdio --no-children --sort=dso,sym -g none 2>/dev/null |
                                grep -E '^ +[0-9]' | head -45
                        echo "=== children, by symbol"
                        perf report -i /tmp/tonarid.perf --stdio --children --sort=sym -g none 2>/dev/null |
                                grep -E '^ +[0-9]' | head -70
                } | sed 's/^/PERF /'
        fi
done
