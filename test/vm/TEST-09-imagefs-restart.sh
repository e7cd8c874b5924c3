#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# TEST-09-imagefs-restart: tonari-imagefs survives `systemctl restart` and kill -9 under systemd, on
# Debian's 6.1 kernel (no FUSE_NOTIFY_RESEND): the forwarder tonari-imagefs-fd (Type=notify,
# FileDescriptorStoreMax=, Restart=always) owns /dev/fuse, the worker tonari-imagefs (Restart=always)
# is restarted 10 times and killed with SIGKILL 10 times while readers loop over every file of an
# overlay of the mounted layers (checksums compared, pages dropped before each read). Zero errors,
# zero hangs, the longest stall printed. Then the forwarder itself is restarted while nobody reads
# (the documented caveat: on 6.1 what it had in hand would be lost): its mounts come back from the fd
# store, the worker attaches again, and the readers find everything.
# The units are the test's own (the packaged service is tonari-imagefs.service), the binaries come
# as artifacts (--with=).
# Run: test/vm/run-with-packages build/deb --with=build/src/imagefs/tonari-imagefs \
#        --with=build/src/imagefs/tonari-imagefs-fd --with=test/imagefs/restart-readers.py \
#        test/vm/TEST-09-imagefs-restart.sh   (as meson's vm suite does)
set -eux
set -o pipefail

# shellcheck source-path=SCRIPTDIR source=testlib.sh
. "$TONARI_VM_SHARE/testlib.sh"

A=$TONARI_VM_SHARE/artifacts
W=/var/lib/tonari-test-restart
SOCK=/run/tonari-test-imagefs/fd.sock
RESTARTS=10
KILLS=10
READERS=3
PROGRESS_TIMEOUT_SEC=60

setup() {
        local debs i
        debs=$(find "$A" -name 'tonari_*.deb' -o -name 'tonari-relay_*.deb')
        # shellcheck disable=SC2086
        DEBIAN_FRONTEND=noninteractive apt-get install -y $debs >/dev/null
        install -m 0755 "$A/tonari-imagefs" "$A/tonari-imagefs-fd" /usr/local/sbin/
        mkdir -p "$W"

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

        cat >"$W/relay.conf" <<EOF
[Relay]
Store=$W/store
Listen=unix:$W/relay.sock
EOF
        systemd-run --unit=test-relay -p Type=exec /usr/sbin/tonari-relay --config="$W/relay.conf"
        for _ in $(seq 100); do
                tonarictl --relay="unix:$W/relay.sock" image list >/dev/null 2>&1 && break
                sleep 0.2
        done
        tonarictl --relay="unix:$W/relay.sock" image pull "oci:$W/layout:test" test
        mapfile -t LAYERS < <(tonarictl --relay="unix:$W/relay.sock" --json=short image show test |
                python3 -c 'import json, sys; [print(l["diffID"]) for l in json.load(sys.stdin)["layers"]]')
        assert_eq 2 "${#LAYERS[@]}" "layers"

        local args=""
        for i in "${!LAYERS[@]}"; do
                mkdir -p "$W/l$((i + 1))"
                args+=" --layer=${LAYERS[$i]} --mountpoint=$W/l$((i + 1))"
        done
        cat >/run/systemd/system/test-imagefs-fd.service <<EOF
[Unit]
Description=tonari-imagefs forwarder (test)
StartLimitIntervalSec=0

[Service]
Type=notify
ExecStart=/usr/local/sbin/tonari-imagefs-fd --socket=$SOCK --state-directory=/run/tonari-test-imagefs/fd
FileDescriptorStoreMax=64
Restart=always
RestartSec=100ms
EOF
        cat >/run/systemd/system/test-imagefs.service <<EOF
[Unit]
Description=tonari-imagefs worker (test)
Wants=test-imagefs-fd.service
After=test-imagefs-fd.service
StartLimitIntervalSec=0

[Service]
Type=notify
ExecStart=/usr/local/sbin/tonari-imagefs --relay=unix:$W/relay.sock --cache-dir=/var/cache/tonari-test-imagefs --cache-max=256K --forwarder=$SOCK$args
Restart=always
RestartSec=100ms
EOF
        systemctl daemon-reload
        systemctl start test-imagefs.service
        findmnt -t fuse.tonari-imagefs "$W/l2"
        mkdir -p "$W/merged" "$W/progress"
        mount -t overlay overlay -o "ro,lowerdir=$W/l2:$W/l1" "$W/merged"
}

teardown() {
        touch "$W/stop"
        [[ ! -s $W/readers.pid ]] || timeout 60 tail --pid="$(cat "$W/readers.pid")" -f /dev/null || true
        umount "$W/merged" || true
        systemctl stop test-imagefs.service test-imagefs-fd.service test-relay.service || true
        umount -l "$W/l1" "$W/l2" 2>/dev/null || true
}

# The forwarder's journal lines since it started (the forwarder logs each attach).
attaches() {
        journalctl -b -q -o cat -u test-imagefs-fd.service | grep -c "Worker attached" || true
}
wait_attached() {
        local want=$1
        for _ in $(seq 600); do
                (($(attaches) >= want)) && return 0
                sleep 0.1
        done
        journalctl -b -q -u test-imagefs-fd.service -u test-imagefs.service | tail -n 40
        return 1
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

testcase_worker_restart_and_kill() {
        local i n attached pid out redispatched
        trap teardown EXIT
        setup
        n=${#LAYERS[@]}
        attached=$n
        wait_attached "$attached"
        start_readers
        wait_progress
        for i in $(seq "$RESTARTS"); do
                sleep 0.$((RANDOM % 5 + 2))
                systemctl restart test-imagefs.service
                attached=$((attached + n))
                wait_attached "$attached"
                wait_progress
        done
        for i in $(seq "$KILLS"); do
                sleep 0.$((RANDOM % 5 + 2))
                pid=$(systemctl show -P MainPID test-imagefs.service)
                systemctl kill -s KILL test-imagefs.service
                timeout 10 tail --pid="$pid" -f /dev/null
                attached=$((attached + n))
                wait_attached "$attached"
                wait_progress
        done
        wait_pass
        stop_readers
        out=$(tail -n 1 "$W/readers.out")
        redispatched=$(journalctl -b -q -o cat -u test-imagefs-fd.service |
                grep -oE "Worker attached to .* [0-9]+ waiting requests" | awk '{ s += $(NF - 2) } END { print s + 0 }')
        echo "restarts=$RESTARTS kills=$KILLS requests passed again to a new worker=$redispatched $out"
        assert_ge "$redispatched" 1 "requests passed again"
        # The same mounts all along: the forwarder mounted once per layer, and systemd restarted the
        # worker 10 times after SIGKILL.
        assert_eq "$n" "$(journalctl -b -q -o cat -u test-imagefs-fd.service | grep -c "(new mount)")" "mounts made"
        assert_ge "$(systemctl show -P NRestarts test-imagefs.service)" "$KILLS" "automatic restarts"

        # The forwarder's own restart, while nobody reads (on 6.1 requests it holds would be lost): the
        # fd store keeps the connections, the new forwarder takes them back, the worker (whose
        # connections ended) is restarted by systemd and attaches again.
        assert_eq "$n" "$(systemctl show -P NFileDescriptorStore test-imagefs-fd.service)" "fds in the store"
        systemctl restart test-imagefs-fd.service
        assert_eq "$n" "$(journalctl -b -q -o cat -u test-imagefs-fd.service | grep -c "Took .* back from the fd store")" \
                "mounts taken back"
        attached=$((attached + n))
        wait_attached "$attached"
        assert_eq "$n" "$(journalctl -b -q -o cat -u test-imagefs-fd.service | grep -c "(new mount)")" "mounts made"
        start_readers
        wait_progress
        wait_pass
        stop_readers
}

run_testcases
