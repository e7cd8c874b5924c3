#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The guest half of bench/request-domains (seed 003), run in the VM test bed with tonari's packages
# in $A. Prints one line per measurement, "KIND key=value ...", which the host half turns into
# ratios and Fig 5. Scaled to the TCG guest (2 emulated CPUs): ab runs for a fixed time (-t)
# instead of the paper's -n100000, with -c as given.
#   --reps=N        repetitions of every measurement (3)
#   --seconds=S     length of one ab run (4)
#   --concurrency=C ab -c of the overhead runs (10; the paper: 100)
#   --ms=LIST       CGI CPU times for Fig 5 (1,2,4,6,10,20)
set -euo pipefail

A=$TONARI_VM_SHARE/artifacts
reps=3 seconds=4 conc=10 ms_list=1,2,4,6,10,20
for arg; do
        case $arg in
        --reps=*) reps=${arg#*=} ;;
        --seconds=*) seconds=${arg#*=} ;;
        --concurrency=*) conc=${arg#*=} ;;
        --ms=*) ms_list=${arg#*=} ;;
        *) echo "request-domains-guest: unknown option '$arg'" >&2; exit 2 ;;
        esac
done

CG=/sys/fs/cgroup/system.slice/apache2.service
CONF=/etc/apache2/conf-enabled/zz-request-domains.conf
DEV=/dev/$(lsblk -no PKNAME "$(findmnt -no SOURCE /)" 2>/dev/null || true)
[[ $DEV != /dev/ ]] || DEV=/dev/vda

DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        $(find "$A" -name 'libtonari0_*.deb' -o -name 'libapache2-mod-tonari_*.deb') >/dev/null
install -D -m 0755 "$A/tonari-spin" /usr/lib/cgi-bin/spin
echo hello >/var/www/html/hello.html
# 100 000 hosts on 100 unlimited domains, plus the limited ones of Fig 5 and Fig 4.
{
        echo "lim.example lim"; echo "unl.example unl"; echo "heavy.example heavy"
        seq 0 99999 | awk '{ print "site" $1 ".example d" ($1 % 100) }'
} >/etc/apache2/request-domains.map
{
        echo "TonariDomain lim CPUQuota=50%"
        echo "TonariDomain unl"
        echo "TonariDomain heavy CPUQuota=25% \"IOWriteBandwidthMax=$DEV 30M\""
        for i in $(seq 0 99); do echo "TonariDomain d$i"; done
        echo "TonariDomainMap /etc/apache2/request-domains.map"
        echo "TonariFailMode closed"
        echo 'LogFormat "%v %>s %D %{tonari-domain}n %{tonari-cpu-us}n %{tonari-io-bytes}n" rd'
        echo "GlobalLog /var/log/apache2/rd.log rd"
        # The MPMs' defaults are sized for a real machine; these fit 100 concurrent clients.
        echo "<IfModule mpm_prefork_module>"
        echo "        StartServers 20"
        echo "        MinSpareServers 20"
        echo "        MaxSpareServers 120"
        echo "        MaxRequestWorkers 150"
        echo "</IfModule>"
} >/etc/apache2/request-domains.conf

# mpm NAME [tonari|off]: Apache with that MPM, the module loaded with the domains or not at all.
mpm() {
        a2dismod -q -f mpm_event mpm_worker mpm_prefork cgi cgid tonari >/dev/null 2>&1 || true
        rm -f "$CONF"
        if [[ $1 == prefork ]]; then a2enmod -q mpm_prefork cgi >/dev/null; else a2enmod -q "mpm_$1" cgid >/dev/null; fi
        if [[ $2 == tonari ]]; then
                a2enmod -q tonari >/dev/null
                if [[ $1 == prefork ]]; then
                        cp /etc/apache2/request-domains.conf "$CONF"
                else
                        # No IO limits per thread (mod_tonari(8)).
                        sed 's/ "IOWriteBandwidthMax=[^"]*"//' /etc/apache2/request-domains.conf >"$CONF"
                fi
        fi
        systemctl restart apache2
        sleep 2
}

# ab_rps ARGS...: requests per second of one ab run (failed requests make it fail).
ab_rps() {
        local out
        out=$(ab -q -r "$@" 2>&1)
        if ! grep -q '^Failed requests: *0$' <<<"$out"; then
                echo "ab $* failed:" >&2; echo "$out" >&2; return 1
        fi
        awk '/^Requests per second:/ { print $4 }' <<<"$out"
}
ab_ms() {
        ab -q "$@" 2>&1 | awk '/^Time per request:.*\(mean\)$/ { print $4 }'
}

echo "guest: $(nproc) CPUs, kernel $(uname -r), $(apache2 -v | head -1), $(date -u +%Y-%m-%d)"

# §4 overhead: a static page of a mapped host, module off vs on (domains without limits).
for m in prefork event; do
        for rep in $(seq 1 "$reps"); do
                for mode in off tonari; do
                        mpm "$m" "$mode"
                        ab_rps -c 4 -n 200 -H "Host: site1234.example" http://127.0.0.1/hello.html >/dev/null
                        rps=$(ab_rps -t "$seconds" -n 1000000 -c "$conc" -H "Host: site1234.example" \
                                http://127.0.0.1/hello.html)
                        echo "OVERHEAD mpm=$m mode=$mode rep=$rep rps=$rps"
                done
        done
done
tail -n1 /var/log/apache2/rd.log | grep -q ' d34 ' || { echo "overhead runs were not in domain d34" >&2; exit 1; }

# Fig 5 accuracy: a CGI spinning MS ms of CPU, one request at a time, at CPUQuota=50% vs unlimited.
mpm prefork tonari
for ms in ${ms_list//,/ }; do
        for rep in $(seq 1 "$reps"); do
                unl=$(ab_ms -t "$seconds" -n 1000000 -c 1 -H "Host: unl.example" "http://127.0.0.1/cgi-bin/spin?ms=$ms")
                n0=$(wc -l </var/log/apache2/rd.log)
                lim=$(ab_ms -t "$seconds" -n 1000000 -c 1 -H "Host: lim.example" "http://127.0.0.1/cgi-bin/spin?ms=$ms")
                sleep 0.5
                logged=$(tail -n +"$((n0 + 1))" /var/log/apache2/rd.log | awk '$4 == "lim" { s += $5; n++ } END { printf "%d", n ? s / n : 0 }')
                echo "FIG5 ms=$ms rep=$rep unlimited_ms=$unl limited_ms=$lim logged_cpu_us=$logged"
        done
done

# Fig 4 isolation: a normal host's static throughput alone, then next to a heavy host running CGI
# loops that also write (4 at once), with the heavy host in its domain (CPUQuota=25%, 30 MB/s) and,
# for contrast, in an unlimited one.
cpu_usage() { awk '/^usage_usec/ { print $2 }' "$CG/$1/cpu.stat"; }
wbytes() { awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) { sub("wbytes=", "", $i); s += $i } } END { print s + 0 }' "$CG/$1/io.stat"; }
for rep in $(seq 1 "$reps"); do
        alone=$(ab_rps -t "$seconds" -n 1000000 -c 4 -H "Host: site1.example" http://127.0.0.1/hello.html)
        for heavy in heavy unl; do
                c0=$(cpu_usage "$heavy") w0=$(wbytes "$heavy") t0=$(date +%s%N)
                ab -q -t $((seconds + 4)) -n 1000000 -c 4 -H "Host: $heavy.example" \
                        "http://127.0.0.1/cgi-bin/spin?ms=50&io=2000000" >/dev/null 2>&1 &
                abpid=$!
                sleep 1
                loaded=$(ab_rps -t "$seconds" -n 1000000 -c 4 -H "Host: site1.example" http://127.0.0.1/hello.html)
                wait "$abpid" || true
                c1=$(cpu_usage "$heavy") w1=$(wbytes "$heavy") t1=$(date +%s%N)
                echo "FIG4 rep=$rep heavy=$heavy normal_alone_rps=$alone normal_loaded_rps=$loaded" \
                     "heavy_cpu_pct=$(awk -v c=$((c1 - c0)) -v t=$(((t1 - t0) / 1000)) 'BEGIN { printf "%.1f", 100 * c / t }')" \
                     "heavy_write_mbps=$(awk -v w=$((w1 - w0)) -v t=$(((t1 - t0) / 1000)) 'BEGIN { printf "%.1f", w / t }')"
        done
done

# The cost of one move, per process (prefork) and per thread (event), without and with favordynmods.
root=/sys/fs/cgroup/tonari-movecost
echo "+cpu +io +pids" >/sys/fs/cgroup/cgroup.subtree_control
base_opts=$(findmnt -no OPTIONS /sys/fs/cgroup | tr ',' '\n' | grep -xE 'nsdelegate|memory_recursiveprot' | paste -sd, -)
for mode in plain favordynmods; do
        opts=$base_opts
        [[ $mode == favordynmods ]] && opts=${opts:+$opts,}favordynmods
        mount -o "remount${opts:+,$opts}" /sys/fs/cgroup
        for rep in $(seq 1 "$reps"); do
                for t in --processes --threads; do
                        mkdir "$root"
                        out=$("$A/tonari-domain-movecost" $([[ $t == --threads ]] && echo --threads) "$root" 5000)
                        echo "MOVE mount=$mode kind=${t#--} rep=$rep $out"
                        for d in movecost _home _threads/movecost _threads/_home _threads ""; do
                                [[ ! -d $root/$d ]] || rmdir "$root/$d"
                        done
                done
        done
done
mount -o "remount${base_opts:+,$base_opts}" /sys/fs/cgroup
