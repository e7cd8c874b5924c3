#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tonari-imagefs survives its own restart and kill -9 (docs/ARCHITECTURE.md, "Restart survival"): the
# layers of the test image are mounted through tonari-imagefs-fd (the forwarder that owns /dev/fuse)
# and stacked with overlayfs; readers loop over every file of the merged tree (listing compared,
# checksums compared, pages dropped before each read so that reads reach the worker, a file held open
# all along) while the worker is stopped and started 10 times and killed with SIGKILL 10 times. Zero
# errors, zero hangs (each restart is followed by progress of every reader within a bound), and the
# forwarder must have passed requests again that a dead worker had in hand (else the test proved
# nothing). The longest stall a reader saw is printed. Then the forwarder itself: without systemd it
# unmounts on exit, with nothing left behind.
# Needs root and /dev/fuse; env: IMAGEFS IMAGEFS_FD RELAY TONARICTL TONARICTL_RELAY.
set -eux
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../testlib.sh"
((EUID == 0)) || { echo "needs root (FUSE mounts for everyone, overlayfs)"; exit 77; }
[[ -c /dev/fuse ]] || { echo "no /dev/fuse"; exit 77; }
for tool in umoci python3 findmnt; do
        command -v "$tool" >/dev/null || { echo "$tool is missing (./dev deps installs it)"; exit 77; }
done
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || { echo "no overlayfs"; exit 77; }

RESTARTS=${RESTARTS:-10}
KILLS=${KILLS:-10}
READERS=${READERS:-4}
# A reader that made no progress this long after a restart is hung (the restart itself takes well
# under a second; the bound is for a loaded machine).
PROGRESS_TIMEOUT_SEC=${PROGRESS_TIMEOUT_SEC:-60}

WORK=$(mktemp -d /tmp/tonari-imagefs-restart.XXXXXX)
: >"$WORK/mounts"
unmount_all() {
        local m
        for m in $(tac "$WORK/mounts"); do
                findmnt "$m" >/dev/null || continue
                umount "$m" 2>/dev/null || umount -l "$m" || true
        done
}
stop_pid_file() {
        local pid
        [[ -s $1 ]] || return 0
        pid=$(cat "$1")
        kill "$pid" 2>/dev/null && timeout 15 tail --pid="$pid" -f /dev/null || true
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$1"
}
cleanup() {
        touch "$WORK/stop"
        [[ ! -s $WORK/readers.pid ]] || timeout 30 tail --pid="$(cat "$WORK/readers.pid")" -f /dev/null || true
        stop_pid_file "$WORK/readers.pid"
        unmount_all
        stop_pid_file "$WORK/imagefs.pid"
        stop_pid_file "$WORK/fd.pid"
        touch "$WORK/stop-workers"
        stop_pid_file "$WORK/workers.pid"
        stop_pid_file "$WORK/imagefs.pid"
        stop_pid_file "$WORK/sup.pid"
        stop_pid_file "$WORK/relay.pid"
        unmount_all
        rm -rf "$WORK"
}
trap cleanup EXIT

# The image: make-test-image's layers and one more with files of several chunks, random contents.
"$here/../imagestore/make-test-image" "$WORK/layout" 2> >(grep -v 'ignoring empty-valued xattr' >&2)
umoci unpack --image "$WORK/layout:test" "$WORK/bundle" >/dev/null 2>&1
mkdir -p "$WORK/bundle/rootfs/opt/rand"
head -c $((3 * 1024 * 1024 + 12345)) /dev/urandom >"$WORK/bundle/rootfs/opt/big.bin"
for i in 1 2 3 4; do
        head -c $((i * 211 * 1024 + i)) /dev/urandom >"$WORK/bundle/rootfs/opt/rand/f$i"
done
umoci repack --image "$WORK/layout:test" "$WORK/bundle" >/dev/null
rm -rf "$WORK/bundle"
umoci unpack --image "$WORK/layout:test" "$WORK/bundle" >/dev/null 2>&1
EXPECTED=$WORK/bundle/rootfs

cat >"$WORK/relay.conf" <<EOT
[Relay]
Store=$WORK/store
Listen=unix:$WORK/relay.sock
LogTarget=console
EOT
RELAY_ADDRESS=unix:$WORK/relay.sock
ctl() {
        TONARICTL_RELAY=$TONARICTL_RELAY "$TONARICTL" --relay="$RELAY_ADDRESS" "$@"
}
"$RELAY" --config="$WORK/relay.conf" >>"$WORK/relay.log" 2>&1 &
echo $! >"$WORK/relay.pid"
for _ in $(seq 100); do
        [[ -S $WORK/relay.sock ]] && ctl image list >/dev/null 2>&1 && break
        sleep 0.1
done
ctl image pull "oci:$WORK/layout:test" test
mapfile -t LAYERS < <(ctl --json=short image show test | python3 -c 'import json, sys; [print(l["diffID"]) for l in json.load(sys.stdin)["layers"]]')

FD_SOCKET=$WORK/fd.sock
start_forwarder() {
        start_forwarder_with
}
start_forwarder_with() {
        # Not under systemd (no NOTIFY_SOCKET): no fd store; the forwarder unmounts when it exits.
        : >"$WORK/fd.log"
        env -u NOTIFY_SOCKET "$IMAGEFS_FD" --socket="$FD_SOCKET" --state-directory="$WORK/fd-state" "$@" \
                >>"$WORK/fd.log" 2>&1 &
        echo $! >"$WORK/fd.pid"
        for _ in $(seq 100); do
                [[ -S $FD_SOCKET ]] && return 0
                sleep 0.1
        done
        cat "$WORK/fd.log"
        return 1
}
IMAGEFS_ARGS=()
for i in "${!LAYERS[@]}"; do
        mkdir -p "$WORK/l$((i + 1))"
        IMAGEFS_ARGS+=(--layer="${LAYERS[$i]}" --mountpoint="$WORK/l$((i + 1))")
        echo "$WORK/l$((i + 1))" >>"$WORK/mounts"
done
# A small cache, so that contents keep coming from the relay and requests are in the worker's hands
# longer: more of them are in flight when it dies.
IMAGEFS_ARGS+=(--relay="$RELAY_ADDRESS" --cache-dir="$WORK/cache" --cache-max=256K --forwarder="$FD_SOCKET")
start_worker() {
        env -u NOTIFY_SOCKET "$IMAGEFS" "${IMAGEFS_ARGS[@]}" >>"$WORK/imagefs.log" 2>&1 &
        echo $! >"$WORK/imagefs.pid"
}
# wait_attached N [restarting]: the forwarder logged N attaches in all. Without "restarting" a worker
# that exited is a failure at once; with it (a loop starts workers again), only the time bound is.
wait_attached() {
        local want=$1
        for _ in $(seq 300); do
                (($(grep -c "Worker attached" "$WORK/fd.log") >= want)) && return 0
                [[ -n ${2:-} ]] || kill -0 "$(cat "$WORK/imagefs.pid")" 2>/dev/null || break
                sleep 0.1
        done
        cat "$WORK/imagefs.log" "$WORK/fd.log"
        return 1
}
# progress: the sum of files read by all readers.
progress() {
        awk 'FILENAME !~ /[.]tmp$/ { s += $2 } END { print s + 0 }' "$WORK/progress/"* 2>/dev/null
}
# files_read R: the files reader R read so far (0 before its first).
files_read() {
        awk '{ n = $2 } END { print n + 0 }' "$WORK/progress/$1" 2>/dev/null || echo 0
}
# wait_progress: every reader read at least two more files (none is hung), within the bound.
wait_progress() {
        local r before=() start
        for r in $(seq 0 $((READERS - 1))); do
                before[r]=$(files_read "$r")
        done
        start=$SECONDS
        for r in $(seq 0 $((READERS - 1))); do
                while (($(files_read "$r") < before[r] + 2)); do
                        if ((SECONDS - start > PROGRESS_TIMEOUT_SEC)); then
                                echo "reader $r made no progress for ${PROGRESS_TIMEOUT_SEC}s: hung" >&2
                                cat "$WORK/fd.log" >&2
                                return 1
                        fi
                        sleep 0.05
                done
        done
}

testcase_restart_and_kill() {
        local i n=${#LAYERS[@]} attaches lower="" out redispatched
        start_forwarder
        start_worker
        attaches=$n
        wait_attached "$attaches"
        for ((i = n; i >= 1; i--)); do
                lower+=${lower:+:}$WORK/l$i
        done
        mkdir -p "$WORK/merged" "$WORK/progress"
        echo "$WORK/merged" >>"$WORK/mounts"
        mount -t overlay overlay -o "ro,lowerdir=$lower" "$WORK/merged"

        python3 "$here/restart-readers.py" "$READERS" "$WORK/merged" "$EXPECTED" "$WORK/stop" "$WORK/progress" \
                >"$WORK/readers.out" 2>&1 &
        echo $! >"$WORK/readers.pid"
        wait_progress

        # systemctl restart's way: SIGTERM, wait for the exit, start again.
        for i in $(seq "$RESTARTS"); do
                sleep 0.$((RANDOM % 5 + 2))
                stop_pid_file "$WORK/imagefs.pid"
                start_worker
                attaches=$((attaches + n))
                wait_attached "$attaches"
                wait_progress
        done
        # A crash's way: SIGKILL in the middle of whatever it does, then a new worker.
        for i in $(seq "$KILLS"); do
                sleep 0.$((RANDOM % 5 + 2))
                kill -9 "$(cat "$WORK/imagefs.pid")"
                timeout 10 tail --pid="$(cat "$WORK/imagefs.pid")" -f /dev/null
                start_worker
                attaches=$((attaches + n))
                wait_attached "$attaches"
                wait_progress
        done

        touch "$WORK/stop"
        timeout 120 tail --pid="$(cat "$WORK/readers.pid")" -f /dev/null
        rc=0
        wait "$(cat "$WORK/readers.pid")" || rc=$?
        rm -f "$WORK/readers.pid"
        cat "$WORK/readers.out"
        out=$(tail -n 1 "$WORK/readers.out")
        assert_eq 0 "$rc" "readers' exit status"
        assert_match "errors=0 " "$out"
        assert_ge "$(echo "$out" | sed -E 's/.* passes=([0-9]+) .*/\1/')" "$READERS" "passes over the tree"
        # Requests a dead worker had in hand (or that came while none was there) were passed again.
        redispatched=$(grep -oE "Worker attached to .* [0-9]+ waiting requests" "$WORK/fd.log" |
                awk '{ s += $(NF - 2) } END { print s + 0 }')
        echo "restarts=$RESTARTS kills=$KILLS requests passed again to a new worker=$redispatched $out"
        assert_ge "$redispatched" 1 "requests passed again"
        # The mounts are the same all along (one per layer, never remounted).
        assert_eq "$n" "$(grep -c "(new mount)" "$WORK/fd.log")" "mounts made"
        # In a sanitizer build: nothing found in any worker or the forwarder.
        assert_rc 1 grep -E "Sanitizer|runtime error" "$WORK/imagefs.log" "$WORK/fd.log"

        # The worker stops: the mounts stay. The forwarder stops (no systemd): it unmounts them.
        umount "$WORK/merged"
        stop_pid_file "$WORK/imagefs.pid"
        findmnt "$WORK/l1" >/dev/null
        stop_pid_file "$WORK/fd.pid"
        for i in $(seq "$n"); do
                assert_rc 1 findmnt "$WORK/l$i"
        done
        [[ ! -e $FD_SOCKET ]]
}

# The forwarder's own restart, under a stand-in for systemd's fd store and Restart=always
# (fdstore-supervisor.py): on 6.9+ the new forwarder asks the kernel to send again what the old one
# held, so readers see no error and no hang through its SIGTERMs and SIGKILLs either. On older
# kernels those requests are lost (the documented caveat): nothing to test there but a hang.
testcase_forwarder_restart() {
        local v i n=${#LAYERS[@]} lower="" ready
        v=$(uname -r | cut -d- -f1)
        if ((${v%%.*} < 6 || (${v%%.*} == 6 && $(echo "$v" | cut -d. -f2) < 9))); then
                echo "kernel $v: no FUSE_NOTIFY_RESEND, a forwarder restart loses requests in flight (documented)"
                return 0
        fi
        : >"$WORK/fd.log"
        mkdir -p "$WORK/sup"
        python3 "$here/fdstore-supervisor.py" "$WORK/sup" "$IMAGEFS_FD" --socket="$FD_SOCKET" \
                --state-directory="$WORK/fd-state" >>"$WORK/fd.log" 2>&1 &
        echo $! >"$WORK/sup.pid"
        # Restart=always for the worker: its sessions end with the forwarder, it starts again.
        (
                while [[ ! -e $WORK/stop-workers ]]; do
                        start_worker
                        wait "$(cat "$WORK/imagefs.pid")" || true
                        sleep 0.1
                done
        ) &
        echo $! >"$WORK/workers.pid"
        wait_attached "$n" restarting
        for ((i = n; i >= 1; i--)); do
                lower+=${lower:+:}$WORK/l$i
        done
        mkdir -p "$WORK/merged" "$WORK/progress"
        echo "$WORK/merged" >>"$WORK/mounts"
        rm -f "$WORK/stop" "$WORK/progress/"*
        mount -t overlay overlay -o "ro,lowerdir=$lower" "$WORK/merged"
        python3 "$here/restart-readers.py" "$READERS" "$WORK/merged" "$EXPECTED" "$WORK/stop" "$WORK/progress" \
                >"$WORK/readers.out" 2>&1 &
        echo $! >"$WORK/readers.pid"
        wait_progress
        for i in 1 2 3 4 5 6; do
                sleep 0.$((RANDOM % 5 + 2))
                ready=$(wc -l <"$WORK/sup/ready")
                ((i <= 3)) && kill -TERM "$(cat "$WORK/sup/main.pid")" || kill -KILL "$(cat "$WORK/sup/main.pid")"
                for _ in $(seq 100); do
                        (($(wc -l <"$WORK/sup/ready") > ready)) && break
                        sleep 0.1
                done
                wait_attached $((n * (i + 1))) restarting
                wait_progress
        done
        touch "$WORK/stop"
        timeout 120 tail --pid="$(cat "$WORK/readers.pid")" -f /dev/null
        rc=0
        wait "$(cat "$WORK/readers.pid")" || rc=$?
        rm -f "$WORK/readers.pid"
        cat "$WORK/readers.out"
        assert_eq 0 "$rc" "readers' exit status"
        assert_match "errors=0 " "$(tail -n 1 "$WORK/readers.out")"
        echo "forwarder restarts=3 kills=3 $(tail -n 1 "$WORK/readers.out")"
        assert_eq $((n * 6)) "$(grep -c "back from the fd store; the kernel resends" "$WORK/fd.log")" "mounts taken back"
        assert_rc 1 grep -E "Sanitizer|runtime error" "$WORK/imagefs.log" "$WORK/fd.log"
        assert_eq "$n" "$(grep -c "(new mount)" "$WORK/fd.log")" "mounts made"

        touch "$WORK/stop-workers"
        umount "$WORK/merged"
        stop_pid_file "$WORK/workers.pid"
        stop_pid_file "$WORK/imagefs.pid"
        # Stopping for good (as systemctl stop): the store is closed, the connections end.
        stop_pid_file "$WORK/sup.pid"
        unmount_all
}

# A worker's stop is bounded even while a request waits for the relay (systemctl restart's SIGTERM must
# not wait ReadTimeoutSec= for it): the relay is stopped (SIGSTOP) while readers hammer the overlay, so
# reads of uncached contents hang in the worker's hands; SIGTERM must end the worker within a quarter
# of its --read-timeout= (before the fix it waited for the relay's answer, the whole timeout). The
# forwarder keeps what the worker had not answered and passes it to the next worker: the readers see
# no error.
testcase_stop_bounded() {
        local i n=${#LAYERS[@]} lower="" start ms rc out timeout_sec=20 before
        trap 'kill -CONT "$(cat "$WORK/relay.pid")" 2>/dev/null || true' EXIT
        start_forwarder
        IMAGEFS_ARGS+=(--read-timeout=${timeout_sec}s)
        : >"$WORK/imagefs.log"
        start_worker
        wait_attached "$n"
        for ((i = n; i >= 1; i--)); do
                lower+=${lower:+:}$WORK/l$i
        done
        mkdir -p "$WORK/merged" "$WORK/progress"
        echo "$WORK/merged" >>"$WORK/mounts"
        rm -f "$WORK/stop" "$WORK/progress/"*
        mount -t overlay overlay -o "ro,lowerdir=$lower" "$WORK/merged"
        python3 "$here/restart-readers.py" "$READERS" "$WORK/merged" "$EXPECTED" "$WORK/stop" "$WORK/progress" \
                >"$WORK/readers.out" 2>&1 &
        echo $! >"$WORK/readers.pid"
        wait_progress

        kill -STOP "$(cat "$WORK/relay.pid")"
        # The readers stall: their reads wait in the worker for the relay (the cache holds 256K).
        before=-1
        for _ in $(seq 100); do
                sleep 0.5
                (($(progress) == before)) && break
                before=$(progress)
        done
        assert_eq "$before" "$(progress)" "files read while the relay is stopped"
        start=${EPOCHREALTIME/./}
        kill -TERM "$(cat "$WORK/imagefs.pid")"
        rc=0
        timeout $((timeout_sec * 3)) tail --pid="$(cat "$WORK/imagefs.pid")" -f /dev/null || rc=$?
        ms=$(((${EPOCHREALTIME/./} - start) / 1000))
        assert_eq 0 "$rc" "the worker exited"
        rc=0
        wait "$(cat "$WORK/imagefs.pid")" || rc=$?
        echo "worker stopped in ${ms} ms with a request waiting for the relay (read timeout ${timeout_sec}s)"
        assert_eq 0 "$rc" "the worker's exit status"
        assert_le "$ms" $((timeout_sec * 1000 / 4)) "ms from SIGTERM to the worker's exit"
        # It did leave a request unanswered (else this proved nothing), and said so.
        assert_match "is still being answered, not waiting for it: the forwarder passes it to the next worker" \
                "$(cat "$WORK/imagefs.log")"

        kill -CONT "$(cat "$WORK/relay.pid")"
        start_worker
        wait_attached $((2 * n))
        wait_progress
        touch "$WORK/stop"
        timeout 120 tail --pid="$(cat "$WORK/readers.pid")" -f /dev/null
        rc=0
        wait "$(cat "$WORK/readers.pid")" || rc=$?
        rm -f "$WORK/readers.pid"
        cat "$WORK/readers.out"
        out=$(tail -n 1 "$WORK/readers.out")
        assert_eq 0 "$rc" "readers' exit status"
        assert_match "errors=0 " "$out"
        # The requests the stopped worker had in hand went to the next one.
        assert_ge "$(grep -oE "Worker attached to .* [0-9]+ waiting requests" "$WORK/fd.log" |
                awk '{ s += $(NF - 2) } END { print s + 0 }')" 1 "requests passed again"
        assert_rc 1 grep -E "Sanitizer|runtime error" "$WORK/imagefs.log" "$WORK/fd.log"

        umount "$WORK/merged"
        stop_pid_file "$WORK/imagefs.pid"
        stop_pid_file "$WORK/fd.pid"
}

# A worker that does not come back (here: none started again) must not make readers hang for good:
# after --worker-timeout= the waiting request and new ones fail with EIO; a worker that attaches later
# serves again. The mounts can be unmounted meanwhile.
testcase_no_worker() {
        local start ms out rc
        trap 'stop_pid_file "$WORK/imagefs.pid"; stop_pid_file "$WORK/fd.pid"' EXIT
        start_forwarder_with --worker-timeout=2s
        start_worker
        wait_attached "${#LAYERS[@]}"
        stat "$WORK/l1/etc" >/dev/null
        # The timeout counts from the moment the worker went.
        start=${EPOCHREALTIME/./}
        stop_pid_file "$WORK/imagefs.pid"
        rc=0
        out=$(stat "$WORK/l1/never-looked-up-$RANDOM" 2>&1) || rc=$?
        ms=$(((${EPOCHREALTIME/./} - start) / 1000))
        assert_eq 1 "$rc" "stat without a worker"
        assert_match "Input/output error" "$out"
        assert_ge "$ms" 1900 "ms until EIO"
        assert_le "$ms" 10000 "ms until EIO"
        assert_match "No worker for $WORK/l1 since [0-9]+ ms, failing its 1 waiting requests" "$(cat "$WORK/fd.log")"
        # Now at once.
        start=${EPOCHREALTIME/./}
        assert_rc 1 stat "$WORK/l1/never-looked-up-either"
        assert_le $(((${EPOCHREALTIME/./} - start) / 1000)) 1000 "ms until EIO while failing"
        # A worker again: answers again.
        start_worker
        wait_attached $((2 * ${#LAYERS[@]}))
        assert_rc_match 1 "No such file or directory" stat "$WORK/l1/still-not-there"
        stat "$WORK/l1/etc" >/dev/null
        stop_pid_file "$WORK/imagefs.pid"
        stop_pid_file "$WORK/fd.pid"
}

testcase_refusals() {
        local common=(--relay="$RELAY_ADDRESS" --layer="${LAYERS[0]}" --cache-dir="$WORK/cache-r")
        start_forwarder
        # A file, a missing directory: the forwarder refuses to mount, the worker says why.
        : >"$WORK/file"
        assert_rc_match 1 "Failed to mount layer .* on '$WORK/file' through the forwarder '$FD_SOCKET': Not a directory" \
                env -u NOTIFY_SOCKET "$IMAGEFS" "${common[@]}" --mountpoint="$WORK/file" --forwarder="$FD_SOCKET"
        assert_rc_match 1 "on '$WORK/missing' through the forwarder '$FD_SOCKET': No such file or directory" \
                env -u NOTIFY_SOCKET "$IMAGEFS" "${common[@]}" --mountpoint="$WORK/missing" --forwarder="$FD_SOCKET"
        assert_rc_match 1 "--forwarder= must be an absolute path, got 'relative.sock'" \
                "$IMAGEFS" "${common[@]}" --mountpoint="$WORK/l1" --forwarder=relative.sock
        assert_rc_match 1 "--socket= must be an absolute path, got 'relative.sock'" "$IMAGEFS_FD" --socket=relative.sock
        # No forwarder listening: the error says so, nothing is mounted.
        assert_rc_match 1 "on '$WORK/l1' through the forwarder '$WORK/nothing.sock': Transport endpoint is not connected" \
                env -u NOTIFY_SOCKET "$IMAGEFS" "${common[@]}" --mountpoint="$WORK/l1" --forwarder="$WORK/nothing.sock"
        assert_rc 1 findmnt "$WORK/l1"
        stop_pid_file "$WORK/fd.pid"
}

run_testcases
