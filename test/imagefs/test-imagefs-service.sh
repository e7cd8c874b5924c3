#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tonari-imagefs as the service org.tonari.ImageFS1 on a private system-type bus (with the shipped
# policy), against a real tonari-relay on a unix socket: MountImage and MountOverlay of the test image
# (make-test-image) compared entry by entry with "umoci unpack", layers shared between images and
# released with the last one, the counters of ListMounts and 'tonarictl image mounts', every refusal
# as its named error quoting the value, the policy and the in-code check for non-root callers, a relay
# that cannot be reached and a corrupt ToC.
# Needs root, /dev/fuse, overlayfs, dbus-daemon; env: IMAGEFS RELAY TONARICTL TONARICTL_RELAY POLICY
# PRIVATE_BUS IMAGEFS_FD.
set -eux
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../testlib.sh"
((EUID == 0)) || { echo "needs root (FUSE mounts for everyone, overlayfs, device nodes in the image)"; exit 77; }
[[ -c /dev/fuse ]] || { echo "no /dev/fuse"; exit 77; }
for tool in umoci python3 fusermount3 findmnt dbus-daemon busctl setpriv; do
        command -v "$tool" >/dev/null || { echo "$tool is missing (./dev deps installs it)"; exit 77; }
done
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || { echo "no overlayfs"; exit 77; }

WORK=$(mktemp -d /tmp/tonari-imagefs-service.XXXXXX)
# The private bus's socket is in there, and unprivileged callers must reach it.
chmod 755 "$WORK"
# The trace on a descriptor of its own, so that it stays out of the output that assertions capture.
exec {xtrace_fd}>&2
BASH_XTRACEFD=$xtrace_fd
NOBODY="setpriv --reuid=65534 --regid=65534 --clear-groups --"
: >"$WORK/targets"

stop_pid_file() {
        local pid
        [[ -s $1 ]] || return 0
        pid=$(cat "$1")
        kill "$pid" 2>/dev/null && timeout 15 tail --pid="$pid" -f /dev/null || true
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$1"
}
cleanup() {
        local m
        for m in $(tac "$WORK/targets"); do
                findmnt "$m" >/dev/null && umount -l "$m" || true
        done
        stop_pid_file "$WORK/readers.pid"
        stop_pid_file "$WORK/imagefs.pid"
        stop_pid_file "$WORK/fd.pid"
        stop_pid_file "$WORK/relay.pid"
        for m in $(findmnt -rn -o TARGET | grep "^$WORK/" | sort -r); do
                umount -l "$m" || true
        done
        "$PRIVATE_BUS" stop "$WORK/bus" || true
        "$PRIVATE_BUS" stop "$WORK/open-bus" || true
        rm -rf "$WORK"
}
trap cleanup EXIT

TONARI_TEST_ROOTFS=no
"$here/../imagestore/make-test-image" "$WORK/layout" 2> >(grep -v 'ignoring empty-valued xattr' >&2)
umoci unpack --image "$WORK/layout:test" "$WORK/bundle" >/dev/null 2>&1
EXPECTED=$WORK/bundle/rootfs
python3 "$here/../imagestore/tree-listing.py" dir "$EXPECTED" | sed 's/"links": \[[^]]*\], //' >"$WORK/expected.txt"
# A one-layer image: the bottom layer alone.
umoci new --image "$WORK/layout:empty"
mkdir -p "$WORK/one/rootfs/etc"
echo single >"$WORK/one/rootfs/etc/one"

cat >"$WORK/relay.conf" <<EOT
[Relay]
Store=$WORK/store
Listen=unix:$WORK/relay.sock
LogTarget=console
EOT
RELAY_ADDRESS=unix:$WORK/relay.sock
ctl() {
        TONARICTL_RELAY=$TONARICTL_RELAY "$TONARICTL" --relay="$RELAY_ADDRESS" --bus-address="$BUS" "$@"
}
start_relay() {
        "$RELAY" --config="$WORK/relay.conf" >>"$WORK/relay.log" 2>&1 &
        echo $! >"$WORK/relay.pid"
        for _ in $(seq 100); do
                [[ -S $WORK/relay.sock ]] && ctl image list >/dev/null 2>&1 && return 0
                kill -0 "$(cat "$WORK/relay.pid")" 2>/dev/null || break
                sleep 0.1
        done
        cat "$WORK/relay.log"
        return 1
}
mkdir -p "$WORK/bus" "$WORK/open-bus"
BUS=$("$PRIVATE_BUS" start "$WORK/bus" "$POLICY")
start_relay
ctl image pull "oci:$WORK/layout:test" test
mapfile -t LAYERS < <(ctl --json=short image show test | python3 -c 'import json, sys; [print(l["diffID"]) for l in json.load(sys.stdin)["layers"]]')
assert_eq 4 "${#LAYERS[@]}" "layers"

cat >"$WORK/imagefs.conf" <<EOT
[ImageFS]
Relay=$RELAY_ADDRESS
CacheDirectory=$WORK/cache
MountDirectory=$WORK/run
ReadTimeoutSec=2s
LogTarget=console
Forwarder=no
EOT
# start_imagefs [BUS]: the service on $BUS (or BUS), waits until it has its name. IMAGEFS_ARGS: more.
IMAGEFS_ARGS=()
start_imagefs() {
        local bus=${1:-$BUS}
        "$IMAGEFS" --config="$WORK/imagefs.conf" --bus-address="$bus" "${IMAGEFS_ARGS[@]}" >>"$WORK/imagefs.log" 2>&1 &
        echo $! >"$WORK/imagefs.pid"
        for _ in $(seq 100); do
                busctl --address="$bus" get-property org.tonari.ImageFS1 /org/tonari/ImageFS1 org.tonari.ImageFS1 \
                        Version >/dev/null 2>&1 && return 0
                kill -0 "$(cat "$WORK/imagefs.pid")" 2>/dev/null || break
                sleep 0.1
        done
        cat "$WORK/imagefs.log"
        return 1
}
call() {
        busctl --address="$BUS" call org.tonari.ImageFS1 /org/tonari/ImageFS1 org.tonari.ImageFS1 "$@"
}
target() {
        mkdir -p "$WORK/$1"
        echo "$WORK/$1" >>"$WORK/targets"
        echo "$WORK/$1"
}
# compare DIR: DIR against the unpacked image, entry by entry, and its hard links. Lines matching
# $COMPARE_SKIP (a regex) are left out of both.
compare() {
        python3 "$here/../imagestore/tree-listing.py" dir "$1" | sed 's/"links": \[[^]]*\], //' |
                grep -vE "${COMPARE_SKIP:-^$}" >"$WORK/got.txt"
        diff -u <(grep -vE "${COMPARE_SKIP:-^$}" "$WORK/expected.txt") "$WORK/got.txt"
        assert_ge "$(wc -l <"$WORK/got.txt")" 60 "entries compared"
        python3 "$here/check-links.py" "$1" "$EXPECTED" "$WORK"/run/layers/*
}
layer_mounts() {
        findmnt -rn -t fuse.tonari-imagefs -o TARGET | grep -c "^$WORK/run/layers/" || true
}
# mounts_field TARGET FIELD: a field of TARGET's entry of 'tonarictl image mounts --json'.
mounts_field() {
        ctl --json=short image mounts | python3 -c '
import json, sys
for m in json.load(sys.stdin):
    if m["target"] == sys.argv[1]:
        print(m[sys.argv[2]])' "$1" "$2"
}
start_imagefs

testcase_mount_image() {
        local t
        t=$(target image)
        call MountImage ssa{sv} test "$t" 0
        assert_eq overlay "$(findmnt -rn -o FSTYPE "$t")"
        # The image's four ToCs were loaded at once (one round trip for all), not one after the other.
        assert_match "Loaded the ToCs of 4 layers \([0-9]+ bytes\) at once in [0-9]+ us" "$(cat "$WORK/imagefs.log")"
        assert_match "(^|,)ro(,|$)" "$(findmnt -rn -o OPTIONS "$t")"
        assert_eq 4 "$(layer_mounts)" "layer mounts"
        compare "$t"
        # Everything answered from the ToCs: no metadata round trip, no error.
        assert_eq 0 "$(mounts_field "$t" metadataRoundTrips)"
        assert_eq 0 "$(mounts_field "$t" errors)"
        assert_eq 4 "$(mounts_field "$t" layers)"
        assert_ge "$(mounts_field "$t" bytesFetched)" 1000000 "bytes fetched"
        assert_match "^$t +test +image " "$(ctl --no-legend image mounts)"
        assert_rc 1 touch "$t/new"
        ctl image unmount "$t"
        assert_rc 1 findmnt "$t"
        assert_eq 0 "$(layer_mounts)" "layer mounts after unmount"
        assert_eq "" "$(ctl --no-legend image mounts)"
}

testcase_mount_overlay() {
        local t upper work
        t=$(target overlay)
        upper=$WORK/upper
        work=$WORK/work
        mkdir -p "$upper" "$work"
        ctl image mount --upper="$upper" --work="$work" test "$t"
        assert_match "upperdir=$upper" "$(findmnt -rn -o OPTIONS "$t")"
        compare "$t"
        echo hello >"$t/etc/hello"
        rm "$t/etc/passwd"
        # Copy-up of a file from a FUSE layer.
        echo more >>"$t/etc/group"
        assert_eq "$(cat "$EXPECTED/etc/group")"$'\n'more "$(cat "$t/etc/group")"
        # overlayfs's own whiteout in the upper directory.
        [[ -c $upper/etc/passwd ]]
        assert_eq "0:0" "$(stat -c %t:%T "$upper/etc/passwd")"
        ctl image unmount "$t"
        # The same upper directory on a new mount: the changes are there.
        ctl image mount --upper="$upper" --work="$work" test "$t"
        assert_eq hello "$(cat "$t/etc/hello")"
        [[ ! -e $t/etc/passwd ]]
        call Unmount s "$t"
        assert_eq 0 "$(layer_mounts)"
}

testcase_no_toc_mode() {
        local t
        t=$(target notoc)
        assert_eq "s \"$t\"" "$(call MountImage ssa{sv} test "$t" 1 Mode s no-toc)"
        # Without a ToC nothing says which directories a layer only implies: those of layer 3 show the
        # relay's made-up attributes (tonari-imagefs(8), --no-toc), all else is the same.
        assert_eq "755 0:0" "$(stat -c '%a %u:%g' "$t/var/lib/日本語")"
        COMPARE_SKIP='"path": "(tmp|var/lib/\\u65e5\\u672c\\u8a9e)",' compare "$t"
        # The baseline: every metadata request went to the relay.
        assert_ge "$(mounts_field "$t" metadataRoundTrips)" 100 "metadata round trips without ToC"
        assert_eq 0 "$(mounts_field "$t" errors)"
        ls "$WORK"/run/layers/*-notoc >/dev/null
        call Unmount s "$t"
        refused "Invalid Mode 'fast': expected toc or no-toc" MountImage ssa{sv} test "$t" 1 Mode s fast
        refused "Unknown mount option 'Speed'" MountImage ssa{sv} test "$t" 1 Speed s x
        assert_eq 0 "$(layer_mounts)"
}

testcase_shared_layers() {
        local a b
        a=$(target shared-a)
        b=$(target shared-b)
        call MountImage ssa{sv} test "$a" 0
        local loads
        loads=$(grep -c "Mounted layer" "$WORK/imagefs.log" || true)
        call MountImage ssa{sv} test "$b" 0
        # One mount per layer, whatever number of images stacks it; the second image loaded no ToC.
        assert_eq "$loads" "$(grep -c "Mounted layer" "$WORK/imagefs.log")" "layer mounts (ToC loads) after the second image"
        assert_eq 4 "$(layer_mounts)" "layer mounts of two images"
        assert_eq "$(sha256sum <"$a/bin/busybox")" "$(sha256sum <"$b/bin/busybox")"
        call Unmount s "$a"
        assert_eq 4 "$(layer_mounts)" "layer mounts after one unmount"
        sha256sum "$b/bin/busybox" >/dev/null
        call Unmount s "$b"
        assert_eq 0 "$(layer_mounts)" "layer mounts after both"
}

testcase_busy() {
        local t pid
        t=$(target busy)
        call MountImage ssa{sv} test "$t" 0
        (cd "$t/etc" && sleep 60) &
        pid=$!
        sleep 0.5
        assert_rc_match 1 "org.tonari.Error.MountBusy|is in use" call Unmount s "$t"
        kill "$pid"
        wait "$pid" || true
        call Unmount s "$t"
}

# refused EXPECTED-ERROR-AND-VALUE ARGS...: the call fails, and its message matches.
refused() {
        local pattern=$1 out rc=0
        shift
        out=$(call "$@" 2>&1) || rc=$?
        assert_eq 1 "$rc" "busctl call $*"
        assert_match "$pattern" "$out"
}

testcase_refusals() {
        local t file
        t=$(target refuse)
        file=$WORK/a-file
        : >"$file"
        refused "Invalid target 'refuse': expected an absolute path" MountImage ssa{sv} test refuse 0
        refused "Invalid target '$WORK/x/../refuse'" MountImage ssa{sv} test "$WORK/x/../refuse" 0
        refused "target '$WORK/missing' does not exist" MountImage ssa{sv} test "$WORK/missing" 0
        refused "target '$file' is not a directory" MountImage ssa{sv} test "$file" 0
        refused "upper directory '$WORK/u,x'.*','" MountOverlay ssssa{sv} test "$t" "$WORK/u,x" "$WORK/w" 0
        refused "has no image 'nope'" MountImage ssa{sv} nope "$t" 0
        refused "No image is mounted on '$t'" Unmount s "$t"
        call MountImage ssa{sv} test "$t" 0
        refused "An image is mounted on '$t' already" MountImage ssa{sv} test "$t" 0
        call Unmount s "$t"
        mount -t tmpfs tmpfs "$t"
        refused "Something is mounted on '$t' already" MountImage ssa{sv} test "$t" 0
        umount "$t"
        # The error names, through tonarictl's exit codes and messages.
        assert_rc_match 5 "has no image 'nope'" ctl image mount nope "$t"
        assert_rc_match 2 "Invalid target" ctl image mount test relative
        assert_eq 0 "$(layer_mounts)" "layer mounts left by refusals"
}

testcase_access() {
        local t out rc=0
        t=$(target access)
        # Reading is open to everyone.
        $NOBODY busctl --address="$BUS" call org.tonari.ImageFS1 /org/tonari/ImageFS1 org.tonari.ImageFS1 ListMounts
        $NOBODY busctl --address="$BUS" get-property org.tonari.ImageFS1 /org/tonari/ImageFS1 org.tonari.ImageFS1 Features
        # The policy refuses mutating calls...
        out=$($NOBODY busctl --address="$BUS" call org.tonari.ImageFS1 /org/tonari/ImageFS1 org.tonari.ImageFS1 \
                MountImage ssa{sv} test "$t" 0 2>&1) || rc=$?
        assert_eq 1 "$rc"
        assert_match "Access denied|AccessDenied|rejected" "$out"
        # ... and so does the daemon when the policy lets them through.
        stop_pid_file "$WORK/imagefs.pid"
        local open
        cat >"$WORK/permissive.conf" <<EOT
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
        "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><policy context="default"><allow send_destination="org.tonari.ImageFS1"/></policy></busconfig>
EOT
        open=$("$PRIVATE_BUS" start "$WORK/open-bus" "$POLICY" "$WORK/permissive.conf")
        start_imagefs "$open"
        rc=0
        out=$($NOBODY busctl --address="$open" call org.tonari.ImageFS1 /org/tonari/ImageFS1 org.tonari.ImageFS1 \
                MountImage ssa{sv} test "$t" 0 2>&1) || rc=$?
        assert_eq 1 "$rc"
        assert_match "Access denied|AccessDenied|root" "$out"
        assert_rc 1 findmnt "$t"
        stop_pid_file "$WORK/imagefs.pid"
        "$PRIVATE_BUS" stop "$WORK/open-bus"
        start_imagefs
}

testcase_relay_unreachable() {
        local t start ms
        t=$(target unreachable)
        stop_pid_file "$WORK/relay.pid"
        start=${EPOCHREALTIME/./}
        refused "org.tonari.Error.RelayUnreachable|could not be reached within 2000 ms" MountImage ssa{sv} test "$t" 0
        ms=$(((${EPOCHREALTIME/./} - start) / 1000))
        # ReadTimeoutSec=2s: not before, and not much later.
        assert_ge "$ms" 1900 "ms until the error"
        assert_le "$ms" 10000 "ms until the error"
        assert_rc 1 findmnt "$t"
        start_relay
        # The relay is back: mounting works again without a restart of the daemon (gRPC's idle channel
        # may take a few seconds to try again, hence the loop).
        start=${EPOCHREALTIME/./}
        for _ in $(seq 10); do
                call MountImage ssa{sv} test "$t" 0 2>/dev/null && break
                sleep 0.5
        done
        echo "relay back: mounting works again after $(((${EPOCHREALTIME/./} - start) / 1000)) ms"
        findmnt "$t" >/dev/null
        call Unmount s "$t"
}

testcase_corrupt_toc() {
        local t toc saved hex
        t=$(target corrupt)
        hex=${LAYERS[2]#sha256:}
        toc=$(find "$WORK/store/layers" -type f -name "$hex*" | head -n1)
        [[ -f $toc ]]
        saved=$WORK/toc.saved
        cp -a "$toc" "$saved"
        # Truncated: the relay itself refuses to serve a ToC that is not its digest (DATA_LOSS), and
        # the mount is refused naming the layer.
        truncate -s 100 "$toc"
        refused "The ToC of layer ${LAYERS[2]} from $RELAY_ADDRESS is corrupt: .*damaged" MountImage ssa{sv} test "$t" 0
        assert_rc_match 1 "BadToC|corrupt" ctl image mount test "$t"
        cp -a "$saved" "$toc"
        assert_eq 0 "$(layer_mounts)" "layer mounts left by a refused mount"
        call MountImage ssa{sv} test "$t" 0
        call Unmount s "$t"
        rm -f "$saved"
}

# The service through the forwarder (tonari-imagefs-fd, here without systemd: it keeps the mounts while
# it runs): killed with SIGKILL and stopped with SIGTERM under readers, it takes every image over again
# from its state file (the same layer mounts, the overlays as they were, ListMounts as before), and
# the readers see no error.
# feature NAME: "AVAILABLE DETAIL" of a feature, from 'tonarictl image status --json'.
feature() {
        ctl --json=short image status | python3 -c '
import json, sys
for f in json.load(sys.stdin)["Features"]:
    if f["name"] == sys.argv[1]:
        print(f["available"], f["detail"])' "$1"
}
# The kernel resends requests in flight from 6.9 on (FUSE_NOTIFY_RESEND).
kernel_resends() {
        local v
        v=$(uname -r | cut -d- -f1)
        ((${v%%.*} > 6 || (${v%%.*} == 6 && $(echo "$v" | cut -d. -f2) >= 9)))
}

# Features says whether a restart keeps the mounts and the requests in flight: here without a
# forwarder (Forwarder=no), so it does not.
testcase_features() {
        local out
        out=$(ctl image status)
        echo "$out"
        assert_match "Relay: $RELAY_ADDRESS" "$out"
        assert_match "Read timeout: 2s" "$out"
        assert_match "^forwarder +no +(not available|tonari-imagefs-fd runs but is not used).*a restart of tonari-imagefs ends its mounts and fails the requests in flight" \
                "$(grep "^forwarder " <<<"$out")"
        assert_match "^False " "$(feature forwarder)"
        if kernel_resends; then
                assert_match "^True the kernel resends requests in flight, but only a forwarder keeps the mounts" "$(feature resend)"
        else
                assert_match "^False kernel before 6.9, no forwarder" "$(feature resend)"
        fi
        assert_eq "fuse overlayfs fdstore forwarder resend" \
                "$(ctl --json=short image status | python3 -c 'import json, sys; print(" ".join(f["name"] for f in json.load(sys.stdin)["Features"]))')"
}

testcase_restart_takes_mounts_over() {
        local ro t upper work i out
        ro=$(target takeover-ro)
        t=$(target takeover)
        upper=$WORK/takeover-upper
        work=$WORK/takeover-work
        mkdir -p "$upper" "$work" "$WORK/progress"
        stop_pid_file "$WORK/imagefs.pid"
        env -u NOTIFY_SOCKET "$IMAGEFS_FD" --socket="$WORK/fd.sock" --state-directory="$WORK/fd-state" \
                >>"$WORK/fd.log" 2>&1 &
        echo $! >"$WORK/fd.pid"
        for _ in $(seq 100); do
                [[ -S $WORK/fd.sock ]] && break
                sleep 0.1
        done
        IMAGEFS_ARGS=(--forwarder="$WORK/fd.sock")
        start_imagefs
        # Through the forwarder: Features promises that requests in flight survive, and this proves it.
        assert_match "^True in use: mounts and the requests in flight survive a restart or kill of tonari-imagefs" \
                "$(feature forwarder)"
        if kernel_resends; then
                assert_match "^True the kernel resends requests in flight: they survive a restart of tonari-imagefs-fd too" \
                        "$(feature resend)"
        else
                assert_match "^False kernel before 6.9: requests tonari-imagefs-fd holds when it restarts are lost" \
                        "$(feature resend)"
        fi
        call MountImage ssa{sv} test "$ro" 0
        ctl image mount --upper="$upper" --work="$work" test "$t"
        echo written >"$t/etc/written"
        assert_eq 4 "$(layer_mounts)" "layer mounts"
        [[ -s $WORK/run/images.state ]]

        python3 "$here/restart-readers.py" 2 "$ro" "$EXPECTED" "$WORK/stop" "$WORK/progress" >"$WORK/readers.out" 2>&1 &
        echo $! >"$WORK/readers.pid"
        for i in 1 2 3 4; do
                sleep 0.5
                if ((i % 2)); then
                        kill -KILL "$(cat "$WORK/imagefs.pid")"
                else
                        kill -TERM "$(cat "$WORK/imagefs.pid")"
                fi
                timeout 15 tail --pid="$(cat "$WORK/imagefs.pid")" -f /dev/null
                start_imagefs
                assert_match "^$ro +test +image " "$(ctl --no-legend image mounts | grep "^$ro ")"
                assert_match "^$t +test +overlay " "$(ctl --no-legend image mounts | grep "^$t ")"
                assert_eq "$upper" "$(mounts_field "$t" upperDir)"
        done
        sleep 1
        touch "$WORK/stop"
        timeout 120 tail --pid="$(cat "$WORK/readers.pid")" -f /dev/null
        rm -f "$WORK/readers.pid"
        cat "$WORK/readers.out"
        out=$(tail -n 1 "$WORK/readers.out")
        assert_match "errors=0 " "$out"
        echo "RESULT service through the forwarder, 2 kills and 2 stops: requests passed again=$(grep -oE \
                "Worker attached to .* [0-9]+ waiting requests" "$WORK/fd.log" | awk '{ s += $(NF - 2) } END { print s + 0 }') $out"
        # The same mounts all along: each layer mounted once, taken over at each start.
        assert_eq 4 "$(grep -c "(new mount)" "$WORK/fd.log")" "layer mounts made"
        assert_eq 16 "$(grep -c "(taken over)" "$WORK/fd.log")" "layer mounts taken over"
        assert_eq 4 "$(grep -c "Took 2 images over" "$WORK/imagefs.log")" "starts that took the images over"
        assert_eq 4 "$(layer_mounts)" "layer mounts"
        assert_eq written "$(cat "$t/etc/written")"
        compare "$ro"
        # Unmounted while nobody served it: the next process forgets it, and unmounts its layers if no
        # other image has them.
        stop_pid_file "$WORK/imagefs.pid"
        umount "$ro"
        start_imagefs
        assert_eq "" "$(ctl --no-legend image mounts | grep "^$ro " || true)"
        assert_eq 4 "$(layer_mounts)" "layer mounts (the overlay still has them)"
        ctl image unmount "$t"
        assert_eq 0 "$(layer_mounts)" "layer mounts after the last unmount"
        stop_pid_file "$WORK/imagefs.pid"
        start_imagefs
        assert_eq "" "$(ctl --no-legend image mounts)"
        # Back to mounts of its own for the other cases.
        stop_pid_file "$WORK/imagefs.pid"
        stop_pid_file "$WORK/fd.pid"
        # In a sanitizer build: nothing found in the service (at its SIGTERMs) or the forwarder.
        assert_rc 1 grep -E "Sanitizer|runtime error" "$WORK/imagefs.log" "$WORK/fd.log"
        IMAGEFS_ARGS=()
        start_imagefs
}

run_testcases
