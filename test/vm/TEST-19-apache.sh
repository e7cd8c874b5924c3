#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# TEST-19-apache: mod_tonari in Debian's Apache (seed 003). The package delegates apache2.service's
# cgroup; with the prefork MPM a CGI busy loop in a CPUQuota=50% domain takes about twice as long
# as in an unlimited one, its CPU time is logged, the 100 001-line map picks domains by host,
# MaxRequests= refuses the second concurrent request, a crashing CGI leaves nothing behind, a bad
# map at a reload keeps the old one; configtest names file and line of bad directives; with the
# event MPM threads move into threaded domains, a stop leaves no process and no cgroup behind and
# the next start works, IO limits are refused, mod_cgid's CGI programs run outside the domain
# (documented) and mod_cgi's inside; fail-open serves without domains; tonarid shows the domains as
# read-only slices with their limits and usage. Also measures one domain move (µs) with and without favordynmods.
# Run: meson test -C build TEST-19-apache (needs the packages, bench/tonari-spin and
# bench/tonari-domain-movecost)
set -eux
set -o pipefail

# shellcheck source-path=SCRIPTDIR source=../testlib.sh
. "$TONARI_VM_SHARE/testlib.sh"

A=$TONARI_VM_SHARE/artifacts
CG=/sys/fs/cgroup/system.slice/apache2.service
CONF=/etc/apache2/conf-enabled/tonari-test.conf
LOG=/var/log/apache2/tonari-test.log

write_conf() {
        cat >"$CONF" <<EOF
TonariDomain limited CPUQuota=50%
TonariDomain capped MaxRequests=1
TonariDomain free
TonariDomainMap /etc/apache2/tonari-test.map
TonariFailMode closed
LogLevel warn tonari:info
LogFormat "%v %>s %D %{tonari-domain}n %{tonari-cpu-us}n %{tonari-io-bytes}n %U" tonaritest
GlobalLog $LOG tonaritest
<Location /cgi-bin/spin-limited>
        TonariDomainEnter limited
</Location>
$*
EOF
}

use_mpm() {
        a2dismod -q mpm_event mpm_worker mpm_prefork cgi cgid >/dev/null 2>&1 || true
        if [[ $1 == prefork ]]; then
                a2enmod -q mpm_prefork cgi
        else
                a2enmod -q "mpm_$1" cgid
        fi
        systemctl restart apache2
}

# get HOST PATH: the body of one request, its status in $TMPDIR/status.
get() {
        curl -s -o /dev/stdout -w '%{stderr}%{http_code}' -H "Host: $1" "http://127.0.0.1$2" 2>/tmp/status
}

# The last log line's field N (1: vhost 2: status 3: µs 4: domain 5: cpu-us 6: io-bytes 7: path).
last_log() {
        sleep 0.2
        tail -n1 "$LOG" | awk -v n="$1" '{ print $n }'
}

# wall_us HOST MS: the CGI's own measure of its wall time for MS ms of CPU.
wall_us() {
        get "$1" "/cgi-bin/spin?ms=$2" | sed -n 's/.*wall_us=\([0-9]*\).*/\1/p'
}

testcase_install() {
        # shellcheck disable=SC2046
        DEBIAN_FRONTEND=noninteractive apt-get install -y $(find "$A" -name 'libtonari0_*.deb' -o -name 'libapache2-mod-tonari_*.deb' -o -name 'tonari_*.deb')
        install -D -m 0755 "$A/tonari-spin" /usr/lib/cgi-bin/spin
        install -m 0755 "$A/tonari-spin" /usr/lib/cgi-bin/spin-limited
        assert_eq yes "$(systemctl show -P Delegate apache2.service)"
        a2enmod -q tonari
        man -w mod_tonari >/dev/null
        { echo "limited.example limited"; echo "capped.example capped";
          seq 1 100000 | awk '{ print "site" $1 ".example free" }'; } >/etc/apache2/tonari-test.map
        write_conf
        use_mpm prefork
        assert_eq active "$(systemctl is-active apache2)"
}

testcase_layout() {
        # The parent and its children live in _home; each domain has its limits.
        assert_match "^[0-9]" "$(cat $CG/_home/cgroup.procs)"
        assert_eq "" "$(cat $CG/cgroup.procs)"
        assert_eq "50000 100000" "$(cat $CG/limited/cpu.max)"
        assert_eq "max 100000" "$(cat $CG/free/cpu.max)"
        assert_match "cpu" "$(cat $CG/cgroup.subtree_control)"
        grep -q "mod_tonari: 3 domains in '$CG' (processes move), 100002 hosts mapped" /var/log/apache2/error.log
}

testcase_map_selects_domains() {
        assert_match "cpu_us=" "$(get site99999.example /cgi-bin/spin?ms=5)"
        assert_eq free "$(last_log 4)"
        get unmapped.example /cgi-bin/spin?ms=5 >/dev/null
        assert_eq - "$(last_log 4)"
        # A section beats the map.
        get site5.example /cgi-bin/spin-limited?ms=5 >/dev/null
        assert_eq limited "$(last_log 4)"
        # Static files too.
        get limited.example / >/dev/null
        assert_eq limited "$(last_log 4)"
        assert_eq 200 "$(cat /tmp/status)"
}

testcase_cpu_quota_slows_the_cgi() {
        local free_wall limited_wall ratio cpu out cgi_cpu
        # Warm both paths, then 300 ms of CPU each, unlimited then at 50 %.
        wall_us site1.example 20 >/dev/null
        # The shortest of three runs each: the loaded host stalls the guest's vCPU now and then.
        free_wall=$( (for _ in 1 2 3; do wall_us site1.example 300; done) | sort -n | head -n1)
        limited_wall=$( (for _ in 1 2 3; do wall_us limited.example 300; done) | sort -n | head -n1)
        out=$(get limited.example /cgi-bin/spin?ms=300)
        cgi_cpu=$(sed -n 's/.*cpu_us=\([0-9]*\).*/\1/p' <<<"$out")
        # mod_cgi forks the CGI from the worker, which is in the domain.
        assert_match "cgroup=/system.slice/apache2.service/limited$" "$out" "the CGI's cgroup (mod_cgi)"
        ratio=$(awk -v l="$limited_wall" -v f="$free_wall" 'BEGIN { printf "%.2f", l / f }')
        echo "300 ms of CPU: unlimited ${free_wall} us, CPUQuota=50% ${limited_wall} us, ratio $ratio"
        assert_ge "$ratio" 1.6 "limited / unlimited wall time"
        assert_le "$ratio" 2.6 "limited / unlimited wall time"
        assert_match "^[1-9][0-9]*$" "$(awk '/nr_throttled/ { print $2 }' $CG/limited/cpu.stat)"
        # The request's CPU time: its CGI's whole life (more than the CGI measured of itself, from
        # main() on) plus the worker's own work for it. That work (forking a parent that holds the
        # 100 002-host map, exec) cost 60-200 ms in the TCG guest; the upper bound is what
        # counting the CGI twice would reach.
        cpu=$(last_log 5)
        echo "tonari-cpu-us $cpu, the CGI's own measure $cgi_cpu"
        assert_ge "$cpu" "$cgi_cpu" "tonari-cpu-us (the CGI's own CPU time counted)"
        assert_le "$cpu" "$((2 * cgi_cpu - 1))" "tonari-cpu-us (the CGI's CPU time counted once)"
        # The worker is back home, nothing stays in the domain.
        assert_eq "" "$(cat $CG/limited/cgroup.procs)"
}

testcase_io_bytes_logged() {
        get site2.example '/cgi-bin/spin?ms=1&io=4000000' >/dev/null
        assert_ge "$(last_log 6)" 4000000 "tonari-io-bytes"
}

testcase_max_requests() {
        local p1
        get capped.example /cgi-bin/spin?ms=1500 >/dev/null &
        p1=$!
        sleep 0.7
        get capped.example /cgi-bin/spin?ms=1 >/dev/null
        assert_eq 503 "$(cat /tmp/status)"
        wait "$p1"
        get capped.example /cgi-bin/spin?ms=1 >/dev/null
        assert_eq 200 "$(cat /tmp/status)"
}

# tonarid finds the domains in apache2.service's delegated cgroup and shows each as a read-only slice
# "apache2.service:NAME" (ListSlices, tonarictl slice list/show), with its limit and the usage the
# kernel counted: an operator sees each tenant's share.
testcase_tonarid_shows_domains() {
        local path=/org/tonari/slice/apache2_2eservice_3alimited before after cpu line
        wait_for_tonarid
        before=$(awk '/^usage_usec/ { print $2 }' $CG/limited/cpu.stat)
        get limited.example /cgi-bin/spin?ms=100 >/dev/null
        assert_eq 200 "$(cat /tmp/status)"
        cpu=$(busctl get-property org.tonari.Manager1 $path org.tonari.Slice1 CPUUsageUSec | awk '{ print $2 }')
        after=$(awk '/^usage_usec/ { print $2 }' $CG/limited/cpu.stat)
        echo "domain limited: cpu.stat ${before} -> ${after} us, tonarid says ${cpu} us"
        assert_ge "$cpu" "$((before + 100000))" "CPUUsageUSec of the domain after a 100 ms CGI"
        assert_le "$cpu" "$after" "CPUUsageUSec of the domain"
        line=$(tonarictl --no-legend slice list | awk '$1 == "apache2.service:limited"')
        assert_match "/system.slice/apache2.service/limited$" "$line"
        tonarictl --no-legend slice list | awk '{ print $1 }' | grep -qx apache2.service:free
        tonarictl --no-legend slice list | awk '{ print $1 }' | grep -qx apache2.service:capped
        assert_rc 1 grep -q "apache2.service:_home" <<<"$(tonarictl slice list)"
        assert_match "Backend=domain" "$(tonarictl slice show apache2.service:limited)"
        assert_match "Unit=apache2.service" "$(tonarictl slice show apache2.service:limited)"
        assert_match "CPUQuotaPerSecUSec=500ms" "$(tonarictl slice show apache2.service:limited)"
        assert_eq "t 18446744073709551615" \
                "$(busctl get-property org.tonari.Manager1 /org/tonari/slice/apache2_2eservice_3afree org.tonari.Slice1 CPUQuotaPerSecUSec)"
        # Read-only: the server's configuration sets the limits.
        assert_rc_match 1 "Slice 'apache2.service:limited' is a request domain .* read-only" \
                tonarictl slice set apache2.service:limited CPUQuota=10%
        assert_eq "50000 100000" "$(cat $CG/limited/cpu.max)"
        assert_rc 5 tonarictl slice show apache2.service:nosuch
}

testcase_crashing_cgi_leaves_nothing() {
        get limited.example '/cgi-bin/spin?crash=1' >/dev/null
        assert_eq 500 "$(cat /tmp/status)"
        sleep 0.5
        assert_eq "" "$(cat $CG/limited/cgroup.procs)"
        assert_eq 0 "$(cat $CG/limited/pids.current)"
}

# TonariDomainStay unlimited (the default): a worker stays in a domain without limits ('free')
# after a request; a request in no domain still runs, its CGI too, in the server's cgroup (one
# keep-alive connection: one prefork worker serves both). "never": the worker leaves. (A limited
# domain is left at every request's end either way: testcase_cpu_quota_slows_the_cgi.)
testcase_worker_stays_in_unlimited_domain() {
        local out
        trap 'write_conf; systemctl restart apache2' EXIT
        out=$(curl -s -o /dev/null -w '%{num_connects} ' -H "Host: site99999.example" http://127.0.0.1/ \
                --next -s -o /tmp/stay.out -w '%{num_connects}' -H "Host: unmapped.example" "http://127.0.0.1/cgi-bin/spin?ms=1")
        assert_eq "1 0" "$out" "connections made (the second request on the first's)"
        assert_match "cgroup=/system.slice/apache2.service/_home$" "$(cat /tmp/stay.out)" "the CGI's cgroup"
        get site99998.example / >/dev/null
        assert_eq free "$(last_log 4)"
        assert_match "^[0-9]" "$(cat $CG/free/cgroup.procs)" "workers that stayed in 'free'"
        write_conf "TonariDomainStay never"
        systemctl restart apache2
        timeout 30 sh -c 'until grep -q "hosts mapped from .*; TonariDomainStay never" /var/log/apache2/error.log; do sleep 0.2; done'
        get site99998.example / >/dev/null
        assert_eq free "$(last_log 4)"
        assert_eq "" "$(cat $CG/free/cgroup.procs)"
}

testcase_bad_map_at_reload_keeps_the_old() {
        trap 'cp /tmp/good.map /etc/apache2/tonari-test.map; systemctl restart apache2' EXIT
        cp /etc/apache2/tonari-test.map /tmp/good.map
        printf 'new.example free\nbroken line with words\n' >>/etc/apache2/tonari-test.map
        assert_rc_match 1 "tonari-test.map:100004: Invalid map line 'broken line with words'" apache2ctl configtest
        # A reload without apachectl's check (SIGUSR1): the parent logs and keeps the map.
        kill -USR1 "$(cat /run/apache2/apache2.pid)"
        # Reading the 100 004-line map again takes seconds in the TCG guest.
        timeout 60 sh -c 'until grep -q "mod_tonari: bad map /etc/apache2/tonari-test.map:100004: .*keeping the map loaded before (100002 hosts)" /var/log/apache2/error.log; do sleep 0.5; done'
        assert_eq active "$(systemctl is-active apache2)"
        get site777.example / >/dev/null
        assert_eq 200 "$(cat /tmp/status)"
        assert_eq free "$(last_log 4)"
        get new.example / >/dev/null
        assert_eq - "$(last_log 4)"
}

testcase_configtest_errors() {
        trap 'write_conf; rm -f /tmp/bad.map; systemctl restart apache2' EXIT
        write_conf "TonariDomainEnter nosuch"
        assert_rc_match 1 "line 12 of $CONF:[[:space:]]+Unknown domain 'nosuch'" apache2ctl configtest
        write_conf "TonariDomain limited CPUQuota=20%"
        assert_rc_match 1 "line 12 of $CONF:[[:space:]]+Domain 'limited' is defined already, on line 1 of $CONF" apache2ctl configtest
        write_conf "TonariDomain x CPUQuota=50"
        assert_rc_match 1 "line 12 of $CONF:[[:space:]]+Invalid CPUQuota= value '50'" apache2ctl configtest
        write_conf "TonariDomain x MemoryMax=1G"
        assert_rc_match 1 "line 12 of $CONF:[[:space:]]+Unknown domain property in 'MemoryMax=1G'" apache2ctl configtest
        write_conf "TonariDomain a.b"
        assert_rc_match 1 "line 12 of $CONF:[[:space:]]+Invalid domain name 'a.b'" apache2ctl configtest
        sed -i 's|^TonariDomainMap .*|TonariDomainMap /tmp/bad.map|' "$CONF"
        printf 'a.example free\n# c\nb.example nosuch\n' >/tmp/bad.map
        assert_rc_match 1 "line 4 of $CONF:[[:space:]]+Bad map /tmp/bad.map:3: Unknown domain 'nosuch'" apache2ctl configtest
}

testcase_fail_open_and_closed() {
        trap 'write_conf; systemctl restart apache2' EXIT
        mkdir -p /tmp/not-a-cgroup
        # closed: Apache does not start.
        write_conf "TonariCgroup /tmp/not-a-cgroup"
        assert_rc 1 systemctl restart apache2
        grep -q "cannot prepare cgroup '/tmp/not-a-cgroup' for domains .*TonariFailMode closed: not starting" \
                /var/log/apache2/error.log
        # open: it serves, without domains, and says so.
        sed -i 's/^TonariFailMode closed/TonariFailMode open/' "$CONF"
        systemctl restart apache2
        # The daemonized parent's second configuration pass logs it, after systemctl returns.
        timeout 30 sh -c 'until grep -q "TonariFailMode open: serving every request without domains" /var/log/apache2/error.log; do sleep 0.2; done'
        get limited.example / >/dev/null
        assert_eq 200 "$(cat /tmp/status)"
        assert_eq - "$(last_log 4)"
}

# systemd 252 cannot kill or remove threaded cgroups (reading their cgroup.procs fails with
# EOPNOTSUPP): without the drop-in's ExecStopPost= (mod-tonari-cleanup), a stop declares the unit
# dead with processes still exiting ("remains running after unit stopped"), leaves the domains and
# the unit's cgroup behind ("Failed to destroy cgroup ... Device or resource busy") and the next
# start fails.
testcase_event_mpm_stop_and_start() {
        local cursor p1 j
        trap 'write_conf; use_mpm prefork' EXIT
        use_mpm event
        timeout 20 sh -c "until [ -e $CG/_threads/limited/cgroup.type ]; do sleep 0.2; done"
        for _ in 1 2 3; do
                get limited.example / >/dev/null
                assert_eq 200 "$(cat /tmp/status)"
        done
        assert_eq limited "$(last_log 4)"
        # One request is still in its domain when the stop comes (its thread is in the threaded
        # cgroup limited, the CGI in mod_cgid's daemon's cgroup).
        get limited.example /cgi-bin/spin-limited?ms=4000 >/dev/null &
        p1=$!
        timeout 20 sh -c "until grep -q . $CG/_threads/limited/cgroup.threads; do sleep 0.1; done"
        cursor=$(journalctl -n0 --show-cursor | sed -n 's/^-- cursor: //p')
        systemctl stop apache2
        wait "$p1" || true
        assert_eq inactive "$(systemctl is-active apache2)"
        # Nothing left: no process, no cgroup.
        assert_eq "" "$(pgrep -x apache2 || true)" "apache2 processes after the stop"
        assert_rc 1 test -e "$CG"
        journalctl --sync
        j=$(journalctl -q --after-cursor="$cursor" -u apache2 -o cat)
        echo "$j"
        # systemd's first kill still fails on the threaded cgroups (a warning it ignores), before
        # ExecStopPost= runs; nothing is left running or undeleted after it.
        assert_rc 1 grep -q "Failed to destroy cgroup" <<<"$j"
        assert_rc 1 grep -q "remains running after unit stopped" <<<"$j"
        assert_match "Removed mod_tonari's cgroups below '$CG'" "$j"
        # And it starts again, with its domains.
        systemctl start apache2
        timeout 20 sh -c "until [ -e $CG/_threads/limited/cgroup.type ]; do sleep 0.2; done"
        get limited.example / >/dev/null
        assert_eq 200 "$(cat /tmp/status)"
        assert_eq limited "$(last_log 4)"
}

testcase_event_mpm_moves_threads() {
        local out cgi_cg
        trap 'write_conf; use_mpm prefork' EXIT
        use_mpm event
        # The daemonized parent makes the domains after systemctl returns.
        timeout 20 sh -c "until [ -e $CG/_threads/limited/cgroup.type ]; do sleep 0.2; done"
        assert_eq threaded "$(cat $CG/_threads/limited/cgroup.type)"
        # systemd runs ExecReload= in the domain cgroup .control beside _threads.
        systemctl reload apache2
        grep -q "mod_tonari: 3 domains in '$CG' (threads move)" /var/log/apache2/error.log
        get limited.example / >/dev/null
        assert_eq 200 "$(cat /tmp/status)"
        assert_eq limited "$(last_log 4)"
        assert_match "^[0-9]+$" "$(last_log 5)"
        # mod_cgid's daemon starts the CGI programs: the request is in its domain, the CGI is not
        # (the limitation mod_tonari(8) documents).
        out=$(get limited.example /cgi-bin/spin?ms=5)
        assert_eq 200 "$(cat /tmp/status)"
        assert_eq limited "$(last_log 4)"
        cgi_cg=$(sed -n 's/.*cgroup=\([^ ]*\).*/\1/p' <<<"$out")
        echo "event MPM, mod_cgid: the CGI ran in $cgi_cg"
        assert_match "^/system.slice/apache2.service/" "$cgi_cg" "the CGI's cgroup (mod_cgid)"
        assert_rc 1 grep -qx "/system.slice/apache2.service/_threads/limited" <<<"$cgi_cg"
        # mod_cgi instead (by hand: a2enmod picks mod_cgid under a threaded MPM): the worker
        # thread forks the CGI, which starts and runs in the request's domain.
        a2dismod -q cgid
        ln -s ../mods-available/cgi.load /etc/apache2/mods-enabled/cgi.load
        systemctl restart apache2
        timeout 20 sh -c "until [ -e $CG/_threads/limited/cgroup.type ]; do sleep 0.2; done"
        out=$(get limited.example /cgi-bin/spin?ms=5)
        assert_eq 200 "$(cat /tmp/status)"
        cgi_cg=$(sed -n 's/.*cgroup=\([^ ]*\).*/\1/p' <<<"$out")
        echo "event MPM, mod_cgi: the CGI ran in $cgi_cg"
        assert_eq "/system.slice/apache2.service/_threads/limited" "$cgi_cg" "the CGI's cgroup (mod_cgi, event MPM)"
        # IO limits cannot be put on a thread.
        write_conf "TonariDomain io \"IOWriteBandwidthMax=/dev/vda 30M\""
        assert_rc 1 systemctl restart apache2
        grep -q "IOWriteBandwidthMax= of domain 'io' .*a threaded MPM moves threads" /var/log/apache2/error.log
}

# remount_cgroup2 favordynmods|plain: the cgroup2 mount with the options systemd gave it, with or
# without favordynmods (a remount sets exactly the options it is given).
remount_cgroup2() {
        local opts
        opts=$(findmnt -no OPTIONS /sys/fs/cgroup | tr ',' '\n' | grep -xE 'nsdelegate|memory_recursiveprot' | paste -sd, -)
        [[ $1 == favordynmods ]] && opts=${opts:+$opts,}favordynmods
        mount -o "remount${opts:+,$opts}" /sys/fs/cgroup
}

testcase_move_cost() {
        local out
        root=/sys/fs/cgroup/tonari-movecost
        trap 'for d in movecost _home _threads/movecost _threads/_home _threads ""; do rmdir "$root/$d" 2>/dev/null || true; done; remount_cgroup2 plain' EXIT
        echo "+cpu +io +pids" >/sys/fs/cgroup/cgroup.subtree_control
        for mode in plain favordynmods; do
                remount_cgroup2 "$mode"
                assert_eq "$([[ $mode == favordynmods ]] && echo 1 || echo 0)" \
                        "$(findmnt -no OPTIONS /sys/fs/cgroup | grep -c favordynmods || true)" "favordynmods in the mount options"
                for t in "" --threads; do
                        mkdir "$root"
                        out=$("$A/tonari-domain-movecost" $t "$root" 5000)
                        echo "move cost ($mode ${t:-processes}): $out"
                        assert_match "^moves=5000 enter_p50_us=" "$out"
                        echo "$mode ${t:---processes} $out" >>"$TONARI_VM_SHARE/movecost.txt"
                        # The program has exited: its cgroups are empty.
                        for d in movecost _home _threads/movecost _threads/_home _threads ""; do
                                [[ ! -d $root/$d ]] || rmdir "$root/$d"
                        done
                done
        done
}

run_testcases
