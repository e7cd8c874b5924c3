#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The guest half of bench/request-domains (seed 003), run in the VM test bed with tonari's packages
# in $A. Prints one line per measurement, "KIND key=value ...", which the host half turns into
# ratios and figures. Scaled to the TCG guest (2 emulated CPUs): ab runs for a fixed time (-t)
# instead of the paper's -n100000, with -c as given.
#
# §4 overhead: two Apaches run side by side in this one boot, with the same MPM, modules and logs:
# apache2.service on port 80 with mod_tonari (100 000 hosts mapped, domains without limits) and the
# peer, apache2@base.service (/etc/apache2-base, port 8080) without it. Short ab runs alternate
# between them (base/tonari, then tonari/base, ...), so that a pair's ratio sees the same load of
# the host; the host half reports the median and spread of those per-pair ratios.
#   --reps=N        repetitions of the Fig 5, Fig 4 and move measurements (3)
#   --pairs=N       base/tonari pairs of the overhead runs per MPM (12)
#   --seconds=S     length of one ab run (2)
#   --concurrency=C ab -c of the overhead runs (10; the paper: 100)
#   --requests=N    ab -n N per overhead run instead of -t S (the paper: -n 100000)
#   --ms=LIST       CGI CPU times for Fig 5 (1,2,4,6,10,20)
#   --mpms=LIST     the MPMs of the overhead part (prefork,event)
#   --parts=LIST    which parts run (overhead,fig5,fig4,move; also mixed: overhead runs of four
#                   hosts in four domains at once; itk: mpm-itk as a third Apache
#                   beside the other two, needs libapache2-mpm-itk's .deb in $A; profile: perf
#                   record of the whole guest while ab runs against each Apache, needs perf)
#   --cgroup-mount=favordynmods  remount cgroup2 with favordynmods first (moves then need no RCU
#                   grace period; forks and exits pay for it), for the overhead and Fig 5/Fig 4 parts
set -euo pipefail

A=$TONARI_VM_SHARE/artifacts
reps=3 pairs=12 seconds=2 conc=10 requests=0 mpms=prefork,event ms_list=1,2,4,6,10,20 parts=overhead,fig5,fig4,move cgmount=systemd
for arg; do
        case $arg in
        --reps=*) reps=${arg#*=} ;;
        --pairs=*) pairs=${arg#*=} ;;
        --seconds=*) seconds=${arg#*=} ;;
        --concurrency=*) conc=${arg#*=} ;;
        --requests=*) requests=${arg#*=} ;;
        --mpms=*) mpms=${arg#*=} ;;
        --ms=*) ms_list=${arg#*=} ;;
        --parts=*) parts=${arg#*=} ;;
        --cgroup-mount=favordynmods) cgmount=favordynmods ;;
        *) echo "request-domains-guest: unknown option '$arg'" >&2; exit 2 ;;
        esac
done
part() { [[ ,$parts, == *,$1,* ]]; }
fail() { echo "request-domains-guest: $*" >&2; exit 1; }

CG=/sys/fs/cgroup/system.slice/apache2.service
CONF=/etc/apache2/conf-enabled/zz-request-domains.conf
BASE=/etc/apache2-base
DEV=/dev/$(lsblk -no PKNAME "$(findmnt -no SOURCE /)" 2>/dev/null || true)
[[ $DEV != /dev/ ]] || DEV=/dev/vda

debs=$(find "$A" -name 'libtonari0_*.deb' -o -name 'libapache2-mod-tonari_*.deb')
[[ -n $debs ]] || fail "no libtonari0/libapache2-mod-tonari .deb in $A"
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive apt-get install -y -q $debs >/dev/null
[[ -e /lib/systemd/system/apache2@.service ]] || fail "apache2@.service is missing: no second Apache for the peer"
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
} >/etc/apache2/request-domains.conf
# Both Apaches: the same log lines (the peer logs "-" for the notes it does not set) and MPM sizes.
{
        echo 'LogFormat "%v %>s %D %{tonari-domain}n %{tonari-cpu-us}n %{tonari-io-bytes}n" rd'
        echo 'GlobalLog ${APACHE_LOG_DIR}/rd.log rd'
        # The MPMs' defaults are sized for a real machine; these fit 100 concurrent clients.
        echo "<IfModule mpm_prefork_module>"
        echo "        StartServers 20"
        echo "        MinSpareServers 20"
        echo "        MaxSpareServers 120"
        echo "        MaxRequestWorkers 150"
        echo "</IfModule>"
} >/etc/apache2/conf-available/zz-request-domains-common.conf
systemctl disable -q --now apache2 >/dev/null 2>&1 || true

# answers PORT: wait until an Apache answers on PORT.
answers() {
        local i
        for i in $(seq 1 100); do
                ab -q -n 1 "http://127.0.0.1:$1/hello.html" >/dev/null 2>&1 && return 0
                sleep 0.2
        done
        fail "no Apache answers on port $1"
}

# mpm NAME: apache2.service with that MPM and mod_tonari, apache2@base.service with the same MPM
# and modules but without mod_tonari.
mpm() {
        systemctl stop apache2 apache2@base 2>/dev/null || true
        a2dismod -q -f mpm_event mpm_worker mpm_prefork cgi cgid tonari >/dev/null 2>&1 || true
        rm -f "$CONF"
        if [[ $1 == prefork ]]; then a2enmod -q mpm_prefork cgi >/dev/null; else a2enmod -q "mpm_$1" cgid >/dev/null; fi
        a2enconf -q zz-request-domains-common >/dev/null
        rm -rf "$BASE"
        cp -a /etc/apache2 "$BASE"
        sed -i 's/^Listen 80$/Listen 8080/; s/^\(\s*\)Listen 443$/\1Listen 8443/' "$BASE/ports.conf"
        sed -i 's/<VirtualHost \*:80>/<VirtualHost *:8080>/' "$BASE/sites-available/000-default.conf"
        mkdir -p /var/log/apache2-base
        a2enmod -q tonari >/dev/null
        if [[ $1 == prefork ]]; then
                cp /etc/apache2/request-domains.conf "$CONF"
        else
                # No IO limits per thread (mod_tonari(8)).
                sed 's/ "IOWriteBandwidthMax=[^"]*"//' /etc/apache2/request-domains.conf >"$CONF"
        fi
        systemctl start apache2 apache2@base || {
                journalctl -q -n 30 -u apache2 -u apache2@base >&2
                fail "Apache ($1) did not start"
        }
        answers 80
        answers 8080
        ! grep -q tonari_module < <(APACHE_CONFDIR=$BASE apache2ctl -M 2>/dev/null) ||
                fail "the peer Apache loads mod_tonari"
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
# ab_cpu CGROUP ARGS...: one ab run against the Apache in CGROUP (a directory under /sys/fs/cgroup);
# prints "RPS CPU" with the server's CPU time per complete request in µs (its cgroup's usage_usec,
# children included), which a stall of the host charges to no server in particular.
ab_cpu() {
        local cg=$1 out c0 c1
        shift
        c0=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
        out=$(ab -q -r "$@" 2>&1)
        c1=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
        if ! grep -q '^Failed requests: *0$' <<<"$out"; then
                echo "ab $* failed:" >&2; echo "$out" >&2; return 1
        fi
        awk -v c=$((c1 - c0)) '/^Complete requests:/ { n = $3 } /^Requests per second:/ { r = $4 }
                END { printf "%s %.1f\n", r, n ? c / n : -1 }' <<<"$out"
}
# The length of one overhead run: -n N (--requests=) or -t S.
run_len() {
        if ((requests > 0)); then echo "-n $requests"; else echo "-t $seconds -n 1000000"; fi
}
# ab_mixed CGROUP PORT: like ab_cpu, but four ab runs at once, each for its own host
# (site1-4.example, domains d1-d4) with a quarter of the clients and requests: a worker then often
# serves a request of another domain than its last one. RPS: all complete requests over the wall
# time of the four runs.
ab_mixed() {
        local cg=$1 port=$2 c0 c1 t0 t1 i n=0 k len pids=()
        len="-t $seconds -n 1000000"
        ((requests == 0)) || len="-n $((requests / 4))"
        c0=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
        t0=$(date +%s.%N)
        for i in 1 2 3 4; do
                # shellcheck disable=SC2086
                ab -q -r $len -c $((conc / 4)) -H "Host: site$i.example" "http://127.0.0.1:$port/hello.html" \
                        >"/tmp/mixed.$i" 2>&1 &
                pids+=($!)
        done
        for i in "${pids[@]}"; do wait "$i" || { cat /tmp/mixed.* >&2; return 1; }; done
        t1=$(date +%s.%N)
        c1=$(awk '/^usage_usec/ { print $2 }' "$cg/cpu.stat")
        for i in 1 2 3 4; do
                grep -q '^Failed requests: *0$' "/tmp/mixed.$i" || { cat "/tmp/mixed.$i" >&2; return 1; }
                k=$(awk '/^Complete requests:/ { print $3 }' "/tmp/mixed.$i")
                n=$((n + k))
        done
        awk -v n="$n" -v t0="$t0" -v t1="$t1" -v c=$((c1 - c0)) 'BEGIN { printf "%.1f %.1f\n", n / (t1 - t0), n ? c / n : -1 }'
}
# moves_of CMD...: "MOVES REQUESTS" of one run of CMD (ab, or a shell running several): the
# cgroup moves of the whole guest (the kernel's cgroup:cgroup_attach_task tracepoint fires once per
# process or thread moved) and the complete requests of the ab outputs it wrote to /tmp/moves.ab*.
moves_of() {
        rm -f /tmp/moves.ab*
        perf stat -a -x, -e cgroup:cgroup_attach_task -o /tmp/moves.csv -- "$@" >/dev/null 2>&1 || return 1
        ! grep -L '^Failed requests: *0$' /tmp/moves.ab* | grep -q . || return 1
        echo "$(awk -F, '/cgroup_attach_task/ { print $1 }' /tmp/moves.csv)" \
             "$(cat /tmp/moves.ab* | awk '/^Complete requests:/ { n += $3 } END { print n + 0 }')"
}
unit_cg() { echo "/sys/fs/cgroup$(systemctl show -P ControlGroup "$1")"; }

ab_ms() {
        ab -q "$@" 2>&1 | awk '/^Time per request:.*\(mean\)$/ { print $4 }'
}

if [[ $cgmount == favordynmods ]]; then
        opts=$(findmnt -no OPTIONS /sys/fs/cgroup | tr ',' '\n' | grep -xE 'nsdelegate|memory_recursiveprot' | paste -sd, -)
        mount -o "remount${opts:+,$opts},favordynmods" /sys/fs/cgroup
        findmnt -no OPTIONS /sys/fs/cgroup | grep -q favordynmods || fail "cgroup2 did not take favordynmods"
fi
echo "guest: $(nproc) CPUs, kernel $(uname -r), $(apache2 -v | head -1), $(date -u +%Y-%m-%dT%H:%MZ)," \
     "cgroup2 mount: $(findmnt -no OPTIONS /sys/fs/cgroup)"

# §4 overhead: a static page of a mapped host; the two Apaches alternate, the order flipping with
# every pair. Then both at once (OVERLAP): the two services share the guest's CPUs at equal
# weight, so their req/s ratio is the inverse ratio of their CPU cost per request, with any load
# of the host hitting both alike. A third run per pair asks mod_tonari's Apache for a host outside
# the map: the module's cost without the two moves.
overhead() {
        local m=$1 pair order first port r on off pids cg_on cg_off on_cpu off_cpu unmapped_cpu mixed
        mpm "$m"
        cg_on=$(unit_cg apache2.service) cg_off=$(unit_cg apache2@base.service)
        for port in 80 8080; do
                ab_rps -c 4 -n 200 -H "Host: site1234.example" "http://127.0.0.1:$port/hello.html" >/dev/null
        done
        for pair in $(seq 1 "$pairs"); do
                order="8080 80" first=base
                ((pair % 2)) || order="80 8080" first=tonari
                for port in $order; do
                        # shellcheck disable=SC2046
                        r=$(ab_cpu "$( ((port == 80)) && echo "$cg_on" || echo "$cg_off")" $(run_len) -c "$conc" \
                                -H "Host: site1234.example" "http://127.0.0.1:$port/hello.html")
                        if ((port == 80)); then on=${r% *} on_cpu=${r#* }; else off=${r% *} off_cpu=${r#* }; fi
                done
                # The module's cost without moves: a host the map does not hold, same Apache.
                # shellcheck disable=SC2046
                r=$(ab_cpu "$cg_on" $(run_len) -c "$conc" -H "Host: unmapped.example" "http://127.0.0.1:80/hello.html")
                unmapped=${r% *} unmapped_cpu=${r#* }
                mixed=""
                if part mixed; then
                        # Four hosts in four domains at once, same order as above.
                        for port in $order; do
                                r=$(ab_mixed "$( ((port == 80)) && echo "$cg_on" || echo "$cg_off")" "$port") ||
                                        fail "a mixed ab run ($m, port $port) failed"
                                if ((port == 80)); then
                                        mixed+=" tonari_mixed_rps=${r% *} tonari_mixed_cpu_us=${r#* }"
                                else
                                        mixed+=" base_mixed_rps=${r% *} base_mixed_cpu_us=${r#* }"
                                fi
                        done
                fi
                echo "OVERHEAD mpm=$m pair=$pair first=$first base_rps=$off tonari_rps=$on tonari_unmapped_rps=$unmapped" \
                     "base_cpu_us=$off_cpu tonari_cpu_us=$on_cpu tonari_unmapped_cpu_us=$unmapped_cpu$mixed"
                pids=()
                for port in 80 8080; do
                        # shellcheck disable=SC2046
                        ab_rps $(run_len) -c "$conc" -H "Host: site1234.example" \
                                "http://127.0.0.1:$port/hello.html" >"/tmp/overlap.$port" &
                        pids+=($!)
                done
                for r in "${pids[@]}"; do wait "$r" || fail "an overlapping ab run failed"; done
                echo "OVERLAP mpm=$m pair=$pair base_rps=$(cat /tmp/overlap.8080) tonari_rps=$(cat /tmp/overlap.80)"
        done
        # How many moves the requests made: one more run of each shape (one host, a host outside
        # the map, four hosts at once), counted by the kernel.
        if part mixed; then
                command -v perf >/dev/null || fail "perf is missing in the guest (test/vm/packages: linux-perf)"
                for shape in one unmapped four; do
                        case $shape in
                        one) r=$(moves_of sh -c "ab -q -r -n 1000 -c $conc -H 'Host: site1234.example' \
                                        http://127.0.0.1:80/hello.html >/tmp/moves.ab 2>&1") ;;
                        unmapped) r=$(moves_of sh -c "ab -q -r -n 1000 -c $conc -H 'Host: unmapped.example' \
                                        http://127.0.0.1:80/hello.html >/tmp/moves.ab 2>&1") ;;
                        four) r=$(moves_of sh -c "for i in 1 2 3 4; do ab -q -r -n 250 -c $((conc / 4)) \
                                        -H \"Host: site\$i.example\" http://127.0.0.1:80/hello.html >/tmp/moves.ab\$i 2>&1 & done; wait") ;;
                        esac || { echo "counting the moves ($m, $shape) failed: $(cat /tmp/moves.csv 2>/dev/null)" >&2; r="-1 0"; }
                        echo "MOVES mpm=$m shape=$shape moves=${r% *} requests=${r#* }"
                done
        fi
        # (Not the last line: with many children the parent's dummy connections, which wake an
        # idle child to stop it, are logged too, without a host of the map.)
        tail -n 200 /var/log/apache2/rd.log | grep -q ' 200 [0-9]* d34 ' ||
                fail "the overhead runs ($m) were not in domain d34: $(tail -n 3 /var/log/apache2/rd.log)"
        tail -n1 /var/log/apache2-base/rd.log | grep -q ' - - - *$' ||
                fail "the peer ($m) logged tonari notes: $(tail -n1 /var/log/apache2-base/rd.log)"
}
if part overhead; then
        for m in ${mpms//,/ }; do
                [[ $m == prefork || $m == event || $m == worker ]] || fail "unknown MPM '$m' in --mpms="
                overhead "$m"
        done
fi

# mpm-itk for context (a peer that gives each virtual host its own user, no resource limits): a
# third Apache, apache2@itk on port 8081, the peer's configuration plus mpm_itk (a module on top of
# mpm_prefork since Apache 2.4) and one virtual host (AssignUserID www-data), next to the prefork pair above; the
# three take turns (order rotating), same page, same ab.
if part itk; then
        itk_deb=$(find "$A" -name 'libapache2-mpm-itk_*.deb' | head -n1)
        [[ -n $itk_deb ]] || fail "no libapache2-mpm-itk .deb in $A (bench/request-domains fetches it)"
        # Unpacked, not configured: its configuration step would switch /etc/apache2 (mod_tonari's
        # Apache) to mpm_itk and restart it; only apache2@itk loads it.
        # (Its mpm_itk.load, a configuration file, stays mpm_itk.load.dpkg-new until then.)
        dpkg --unpack "$itk_deb" >/dev/null
        [[ -e /usr/lib/apache2/modules/mpm_itk.so ]] || fail "unpacking $itk_deb gave no mpm_itk.so"
        mpm prefork
        rm -rf /etc/apache2-itk
        cp -a "$BASE" /etc/apache2-itk
        sed -i 's/^Listen 8080$/Listen 8081/; s/^\(\s*\)Listen 8443$/\1Listen 8444/' /etc/apache2-itk/ports.conf
        sed -i 's/<VirtualHost \*:8080>/<VirtualHost *:8081>/; s|</VirtualHost>|\tAssignUserID www-data www-data\n</VirtualHost>|' \
                /etc/apache2-itk/sites-available/000-default.conf
        echo "LoadModule mpm_itk_module /usr/lib/apache2/modules/mpm_itk.so" >/etc/apache2-itk/mods-enabled/mpm_itk.load
        mkdir -p /var/log/apache2-itk
        systemctl start apache2@itk || { journalctl -q -n 30 -u apache2@itk >&2; fail "Apache with mpm_itk did not start"; }
        answers 8081
        grep -q mpm_itk_module < <(APACHE_CONFDIR=/etc/apache2-itk apache2ctl -M 2>/dev/null) || fail "apache2@itk does not load mpm_itk"
        cg_itk=$(unit_cg apache2@itk.service) cg_on=$(unit_cg apache2.service) cg_off=$(unit_cg apache2@base.service)
        ab_rps -c 4 -n 200 -H "Host: site1234.example" "http://127.0.0.1:8081/hello.html" >/dev/null
        for rep in $(seq 1 "$reps"); do
                case $((rep % 3)) in
                1) order="8080 80 8081" ;;
                2) order="80 8081 8080" ;;
                0) order="8081 8080 80" ;;
                esac
                for port in $order; do
                        case $port in 80) cg=$cg_on ;; 8080) cg=$cg_off ;; 8081) cg=$cg_itk ;; esac
                        # shellcheck disable=SC2046
                        r=$(ab_cpu "$cg" $(run_len) -c "$conc" -H "Host: site1234.example" "http://127.0.0.1:$port/hello.html")
                        case $port in 80) on=$r ;; 8080) off=$r ;; 8081) itk=$r ;; esac
                done
                echo "ITK rep=$rep base_rps=${off% *} tonari_rps=${on% *} itk_rps=${itk% *}" \
                     "base_cpu_us=${off#* } tonari_cpu_us=${on#* } itk_cpu_us=${itk#* }"
        done
        systemctl stop apache2@itk
fi

# Where the time goes: perf samples the whole guest (cpu-clock, call graphs) while ab runs against
# one Apache, for each Apache and MPM; the report sums what the samples spent in the kernel's
# cgroup migration (a move) and lists the top symbols.
if part profile; then
        command -v perf >/dev/null || fail "perf is missing in the guest (test/vm/packages: linux-perf)"
        for m in prefork event; do
                mpm "$m"
                for port in 80 8080; do
                        side=$( ((port == 80)) && echo tonari || echo base)
                        ab -q -r -t $((seconds * 4 + 4)) -n 1000000 -c "$conc" -H "Host: site1234.example" \
                                "http://127.0.0.1:$port/hello.html" >/tmp/profile.ab 2>&1 &
                        abpid=$!
                        sleep 2
                        perf record -q -a -g -e cpu-clock -F 499 -o /tmp/perf.data -- sleep $((seconds * 4)) >/dev/null 2>&1 ||
                                fail "perf record failed"
                        wait "$abpid" || true
                        rps=$(awk '/^Requests per second:/ { print $4 }' /tmp/profile.ab)
                        # Inclusive share of the writes that move a process or thread (children),
                        # and of everything in the cgroup core.
                        perf report -q -i /tmp/perf.data --children --sort sym --stdio -g none 2>/dev/null |
                                awk -v m="$m" -v side="$side" -v rps="$rps" '
                                        { sym = $NF; sub("%", "", $1) }
                                        sym ~ /^(cgroup_procs_write|cgroup_threads_write|__cgroup_procs_write|cgroup_attach_task|cgroup_migrate|percpu_down_write|rcu_sync_enter|synchronize_rcu|sched_move_task|cgroup_file_write|kernfs_fop_write_iter)$/ {
                                                printf "PROFILE_INCL mpm=%s side=%s rps=%s sym=%s pct=%s\n", m, side, rps, sym, $1 }'
                        perf report -q -i /tmp/perf.data --no-children --sort dso,sym --stdio -g none 2>/dev/null |
                                head -n 25 | awk -v m="$m" -v side="$side" '
                                        { pct = $1; sub("%", "", pct); $1 = ""; sub(/^ +/, ""); gsub(/ +/, "_")
                                          printf "PROFILE_TOP mpm=%s side=%s pct=%s sym=%s\n", m, side, pct, $0 }'
                        rm -f /tmp/perf.data
                done
        done
        systemctl stop apache2 apache2@base 2>/dev/null || true
fi

# Fig 5 accuracy: a CGI spinning MS ms of CPU, one request at a time, at CPUQuota=50% vs unlimited
# (the order flipping with every repetition). Also the CPU time mod_tonari logged per request.
if part fig5 || part fig4; then
        mpm prefork
        systemctl stop apache2@base
fi
if part fig5; then
        for ms in ${ms_list//,/ }; do
                ab -q -n 3 -H "Host: unl.example" "http://127.0.0.1/cgi-bin/spin?ms=$ms" >/dev/null 2>&1
                for rep in $(seq 1 "$reps"); do
                        order="unl lim"
                        ((rep % 2)) || order="lim unl"
                        for d in $order; do
                                n0=$(wc -l </var/log/apache2/rd.log)
                                t=$(ab_ms -t "$seconds" -n 1000000 -c 1 -H "Host: $d.example" \
                                        "http://127.0.0.1/cgi-bin/spin?ms=$ms")
                                [[ -n $t ]] || fail "ab got no answer from the CGI ($d, $ms ms)"
                                sleep 0.3
                                logged=$(tail -n +"$((n0 + 1))" /var/log/apache2/rd.log |
                                        awk -v d="$d" '$4 == d && $2 == 200 { s += $5; n++ } END { printf "%d %d", n ? s / n : 0, n }')
                                if [[ $d == lim ]]; then lim=$t lim_logged=$logged; else unl=$t unl_logged=$logged; fi
                        done
                        echo "FIG5 ms=$ms rep=$rep unlimited_ms=$unl limited_ms=$lim" \
                             "logged_cpu_us=${lim_logged% *} logged_n=${lim_logged#* } unl_logged_cpu_us=${unl_logged% *}"
                done
        done
fi

# Fig 4 isolation: a normal host's static throughput alone, then next to a heavy host running CGI
# loops that also write (4 at once), with the heavy host in its domain (CPUQuota=25%, 30 MB/s) and,
# for contrast, in an unlimited one.
cpu_usage() { awk '/^usage_usec/ { print $2 }' "$CG/$1/cpu.stat"; }
wbytes() { awk '{ for (i = 2; i <= NF; i++) if ($i ~ /^wbytes=/) { sub("wbytes=", "", $i); s += $i } } END { print s + 0 }' "$CG/$1/io.stat"; }
if part fig4; then
        [[ -e $CG/heavy/cpu.stat ]] || fail "no domain cgroup $CG/heavy"
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
fi
systemctl stop apache2 apache2@base 2>/dev/null || true

# The cost of one move, per process (prefork) and per thread (event), without and with favordynmods.
if part move; then
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
fi
echo "DONE"
