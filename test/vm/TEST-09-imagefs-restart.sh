#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# TEST-09-imagefs-restart: the packaged tonari-imagefs survives `systemctl restart` and kill -9 under
# systemd, on Debian's 6.1 kernel (no FUSE_NOTIFY_RESEND): tonari-imagefs.service mounts its layers
# through tonari-imagefs-fd.service (Forwarder=auto), which owns /dev/fuse and keeps the connections in
# its fd store. An overlay (tonarictl image mount --upper= --work=) and a read-only image (busctl
# MountImage) are mounted through D-Bus; readers loop over every file of the overlay while the service
# is restarted 10 times (the last one by a package upgrade, `dpkg -i` of the same package, which must
# leave the forwarder running) and killed with SIGKILL 10 times: zero errors, zero hangs; the longest stall,
# the longest time without a worker and the requests passed again to a new worker are printed. After
# each start ListMounts shows both images again (taken over from the service's state file). Then the
# forwarder itself is restarted while nobody reads (the documented caveat: on 6.1 what it had in hand
# would be lost): its mounts come back from the fd store, the service exits to be restarted, takes them
# over again, and the readers find everything.
# Run: test/vm/run-with-packages build/deb --with=test/imagefs/restart-readers.py \
#        test/vm/TEST-09-imagefs-restart.sh   (as meson's vm suite does)
set -eux
set -o pipefail

# shellcheck source-path=SCRIPTDIR source=testlib.sh
. "$TONARI_VM_SHARE/testlib.sh"

A=$TONARI_VM_SHARE/artifacts
W=/var/lib/tonari-test-restart
RESTARTS=10
KILLS=10
READERS=3
N_LAYERS=2
PROGRESS_TIMEOUT_SEC=60

# phase NAME: the seconds since the last phase, on one line (where the test's wall time goes).
PHASE_START=$SECONDS
phase() {
        echo "PHASE $1 $((SECONDS - PHASE_START)) s"
        PHASE_START=$SECONDS
}

setup() {
        local i layers
        phase boot-to-test
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$A"/tonari_*.deb "$A"/tonari-relay_*.deb \
                "$A"/tonari-imagefs_*.deb >/dev/null
        mkdir -p "$W"
        phase install

        # A two-layer image from the guest's own files: /etc and python's standard library, then a
        # few random files of several chunks.
        umoci init --layout "$W/layout"
        umoci new --image "$W/layout:test"
        umoci unpack --image "$W/layout:test" "$W/bundle" >/dev/null
        cp -a /etc /usr/lib/python3.11/email /usr/lib/python3.11/json "$W/bundle/rootfs/"
        umoci repack --image "$W/layout:test" "$W/bundle" >/dev/null
        # Unpacked again, so that the next repack adds a layer on top of this one.
        rm -rf "$W/bundle"
        umoci unpack --image "$W/layout:test" "$W/bundle" >/dev/null
        mkdir -p "$W/bundle/rootfs/opt"
        head -c $((2 * 1024 * 1024 + 4321)) /dev/urandom >"$W/bundle/rootfs/opt/big.bin"
        for i in 1 2 3; do
                head -c $((i * 300 * 1024 + i)) /dev/urandom >"$W/bundle/rootfs/opt/f$i"
        done
        umoci repack --image "$W/layout:test" "$W/bundle" >/dev/null
        rm -rf "$W/bundle"
        umoci unpack --image "$W/layout:test" "$W/bundle" >/dev/null
        phase image-build

        printf '[Relay]\nStore=%s/store\nListen=unix:%s/relay.sock\n' "$W" "$W" >"$W/relay.conf"
        systemd-run --unit=test-relay -p Type=exec /usr/sbin/tonari-relay --config="$W/relay.conf"
        for _ in $(seq 100); do
                tonarictl --relay="unix:$W/relay.sock" image list >/dev/null 2>&1 && break
                sleep 0.2
        done
        tonarictl --relay="unix:$W/relay.sock" image pull "oci:$W/layout:test" test
        layers=$(tonarictl --relay="unix:$W/relay.sock" --json=short image show test |
                python3 -c 'import json, sys; print(len(json.load(sys.stdin)["layers"]))')
        assert_eq "$N_LAYERS" "$layers" "layers"
        phase relay-pull

        # The packaged units, with the test's relay and a small cache (reads keep reaching the relay).
        mkdir -p /etc/tonari/tonari-imagefs.conf.d
        printf '[ImageFS]\nRelay=unix:%s/relay.sock\nCacheMaxBytes=256K\n' "$W" \
                >/etc/tonari/tonari-imagefs.conf.d/50-test.conf
        systemctl restart tonari-imagefs.service
        systemctl is-active tonari-imagefs-fd.service
        assert_match "Forwarder=auto" "$(tonari-imagefs --dump-config)"
        wait_logged tonari-imagefs.service 1 "through the forwarder at /run/tonari-imagefs-fd/fd.sock"
        mkdir -p "$W/merged" "$W/upper" "$W/work" "$W/ro" "$W/progress"
        tonarictl image mount --upper="$W/upper" --work="$W/work" test "$W/merged"
        busctl call org.tonari.ImageFS1 /org/tonari/ImageFS1 org.tonari.ImageFS1 MountImage 'ssa{sv}' test "$W/ro" 0
        assert_eq "$N_LAYERS" "$(layer_mounts)" "layer mounts"
        # Both systemd units as installed, scored online: what their comments argue for.
        systemd-analyze security tonari-imagefs-fd.service | tail -n 1
        phase service-and-mounts
}

teardown() {
        touch "$W/stop"
        [[ ! -s $W/readers.pid ]] || timeout 60 tail --pid="$(cat "$W/readers.pid")" -f /dev/null || true
        journalctl -b -q -u tonari-imagefs-fd.service -u tonari-imagefs.service | tail -n 60 || true
        umount "$W/merged" "$W/ro" || true
        systemctl stop tonari-imagefs.service tonari-imagefs-fd.service test-relay.service || true
}

# wait_logged UNIT N PATTERN: UNIT's journal has N lines matching PATTERN (journald may lag a little).
wait_logged() {
        for _ in $(seq 100); do
                (($(journalctl -b -q -o cat -u "$1" | grep -c "$3" || true) >= $2)) && return 0
                sleep 0.1
        done
        echo "$1 did not log '$3' $2 times" >&2
        return 1
}
layer_mounts() {
        findmnt -rn -t fuse.tonari-imagefs -o TARGET | grep -c "^/run/tonari-imagefs/layers/" || true
}
fd_journal() {
        journalctl -b -q -o cat -u tonari-imagefs-fd.service
}
# The forwarder logs each attach of a worker to a mount.
attaches() {
        fd_journal | grep -c "Worker attached" || true
}
wait_attached() {
        local want=$1
        for _ in $(seq 600); do
                (($(attaches) >= want)) && return 0
                sleep 0.1
        done
        journalctl -b -q -u tonari-imagefs-fd.service -u tonari-imagefs.service | tail -n 40
        return 1
}
# Both images are listed again by the service (taken over from its state file).
assert_listed() {
        local out
        out=$(tonarictl --no-legend image mounts)
        assert_match "$W/merged +test +overlay " "$(grep "^$W/merged " <<<"$out")"
        assert_match "$W/ro +test +image " "$(grep "^$W/ro " <<<"$out")"
}
wait_progress() {
        local r before=() start=$SECONDS
        for r in $(seq 0 $((READERS - 1))); do
                before[r]=$(awk '{ print $2 }' "$W/progress/$r" 2>/dev/null || echo 0)
        done
        for r in $(seq 0 $((READERS - 1))); do
                while (($(awk '{ print $2 }' "$W/progress/$r" 2>/dev/null || echo 0) < before[r] + 2)); do
                        if ((SECONDS - start > PROGRESS_TIMEOUT_SEC)); then
                                echo "reader $r made no progress for ${PROGRESS_TIMEOUT_SEC}s: hung" >&2
                                return 1
                        fi
                        sleep 0.1
                done
        done
}
# wait_pass: every reader went over the whole tree at least once since it started.
wait_pass() {
        local r start=$SECONDS
        for r in $(seq 0 $((READERS - 1))); do
                while (($(awk '{ print $1 }' "$W/progress/$r" 2>/dev/null || echo 0) < 1)); do
                        ((SECONDS - start <= 180)) || { echo "reader $r did not finish a pass in 180s" >&2; return 1; }
                        sleep 0.2
                done
        done
}
start_readers() {
        rm -f "$W/stop" "$W/progress/"*
        python3 "$A/restart-readers.py" "$READERS" "$W/merged" "$W/bundle/rootfs" "$W/stop" "$W/progress" \
                >"$W/readers.out" 2>&1 &
        echo $! >"$W/readers.pid"
}
# stop_readers: their summary, checked: no error, every reader went over the whole tree.
stop_readers() {
        local rc=0 out
        touch "$W/stop"
        timeout 120 tail --pid="$(cat "$W/readers.pid")" -f /dev/null
        wait "$(cat "$W/readers.pid")" || rc=$?
        rm -f "$W/readers.pid"
        cat "$W/readers.out"
        out=$(tail -n 1 "$W/readers.out")
        assert_eq 0 "$rc" "readers' exit status"
        assert_match "errors=0 " "$out"
        assert_ge "$(echo "$out" | sed -E 's/.* passes=([0-9]+) .*/\1/')" "$READERS" "passes over the tree"
}
# The longest time a mount had no worker: from the forwarder's "detached" to the next "attached" of
# the same mount point, in ms (journal timestamps).
longest_gap_ms() {
        journalctl -b -q -o json -u tonari-imagefs-fd.service | python3 -c '
import json, sys
last, gap = {}, 0
for line in sys.stdin:
    e = json.loads(line)
    m, t, msg = e.get("TONARI_MOUNTPOINT"), int(e["__MONOTONIC_TIMESTAMP"]), e.get("MESSAGE", "")
    if not m:
        continue
    if msg.startswith("Worker of ") and " detached" in msg:
        last[m] = t
    elif msg.startswith("Worker attached") and m in last:
        gap = max(gap, t - last.pop(m))
print(gap // 1000)'
}

testcase_service_restart_and_kill() {
        local i attached pid out redispatched start fd_pid
        trap teardown EXIT
        setup
        attached=$(attaches)
        start_readers
        wait_progress
        phase readers-started
        start=$SECONDS
        fd_pid=$(systemctl show -P MainPID tonari-imagefs-fd.service)
        for i in $(seq "$RESTARTS"); do
                sleep 0.$((RANDOM % 5 + 2))
                if ((i < RESTARTS)); then
                        systemctl restart tonari-imagefs.service
                else
                        # The last restart is a package upgrade as dpkg runs it (prerm upgrade, postinst
                        # configure OLD-VERSION): the service restarts, the forwarder must not (on 6.1
                        # the requests it holds would be lost; debian/rules).
                        DEBIAN_FRONTEND=noninteractive dpkg -i "$A"/tonari-imagefs_*.deb >/dev/null
                        assert_eq "$fd_pid" "$(systemctl show -P MainPID tonari-imagefs-fd.service)" \
                                "the forwarder's PID across the upgrade"
                fi
                attached=$((attached + N_LAYERS))
                wait_attached "$attached"
                assert_listed
                wait_progress
        done
        for i in $(seq "$KILLS"); do
                sleep 0.$((RANDOM % 5 + 2))
                pid=$(systemctl show -P MainPID tonari-imagefs.service)
                systemctl kill -s KILL tonari-imagefs.service
                timeout 10 tail --pid="$pid" -f /dev/null
                attached=$((attached + N_LAYERS))
                wait_attached "$attached"
                assert_listed
                wait_progress
        done
        echo "$RESTARTS restarts and $KILLS kills in $((SECONDS - start)) s"
        phase restarts-and-kills
        wait_pass
        phase first-full-pass
        stop_readers
        phase readers-stopped
        out=$(tail -n 1 "$W/readers.out")
        redispatched=$(fd_journal | grep -oE "Worker attached to .* [0-9]+ waiting requests" |
                awk '{ s += $(NF - 2) } END { print s + 0 }')
        echo "RESULT restarts=$RESTARTS kills=$KILLS redispatched=$redispatched longest_without_worker_ms=$(longest_gap_ms) $out"
        assert_ge "$redispatched" 1 "requests passed again"
        # The same mounts all along: the forwarder mounted once per layer, systemd restarted the
        # service after each SIGKILL, no request failed for want of a worker.
        assert_eq "$N_LAYERS" "$(fd_journal | grep -c "(new mount)")" "mounts made"
        assert_eq "$N_LAYERS" "$(layer_mounts)" "layer mounts"
        assert_ge "$(systemctl show -P NRestarts tonari-imagefs.service)" "$KILLS" "automatic restarts"
        assert_eq 0 "$(fd_journal | grep -c "failing its" || true)" "worker timeouts"
        assert_eq 0 "$(journalctl -b -q -o cat -u tonari-imagefs.service | grep -c "Layer .* failed" || true)" \
                "read errors logged by the service"

        # The forwarder's own restart, while nobody reads (on 6.1 requests it holds would be lost): the
        # fd store keeps the connections, the new forwarder takes them back, the service (whose
        # sessions ended) exits, is restarted by systemd and takes the images over again.
        assert_eq "$N_LAYERS" "$(systemctl show -P NFileDescriptorStore tonari-imagefs-fd.service)" "fds in the store"
        systemctl restart tonari-imagefs-fd.service
        wait_logged tonari-imagefs-fd.service "$N_LAYERS" "Took .* back from the fd store"
        assert_eq "$N_LAYERS" "$(fd_journal | grep -c "Took .* back from the fd store")" "mounts taken back"
        attached=$((attached + N_LAYERS))
        wait_attached "$attached"
        assert_eq "$N_LAYERS" "$(fd_journal | grep -c "(new mount)")" "mounts made"
        assert_listed
        phase forwarder-restart
        start_readers
        wait_progress
        wait_pass
        phase second-full-pass
        stop_readers
        phase readers-stopped-again
        echo written >"$W/merged/etc/written"
        tonarictl image unmount "$W/merged"
        busctl call org.tonari.ImageFS1 /org/tonari/ImageFS1 org.tonari.ImageFS1 Unmount s "$W/ro"
        assert_eq 0 "$(layer_mounts)" "layer mounts after the last unmount"
        assert_eq written "$(cat "$W/upper/etc/written")"
}

run_testcases
