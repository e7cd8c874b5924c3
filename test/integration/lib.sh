# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Host integration tests: a private system-like dbus-daemon with tonari's shipped policy, and
# tonarid started against it. Meson passes TONARID, TONARICTL, PRIVATE_BUS, POLICY, TESTLIB and
# TONARI_VERSION in the environment. Every process is recorded and stopped by its PID on exit.

. "$TESTLIB"

TESTDIR=$(mktemp -d /tmp/tonari-test.XXXXXX)

# A tonarid with the cgroupfs backend creates tonari.slice in each hierarchy; _cleanup removes
# the ones that did not exist before this script (these tests never run in parallel).
_NEW_PARENTS=()
for _d in /sys/fs/cgroup /sys/fs/cgroup/*; do
        [[ -d $_d && ! -L $_d && ! -e $_d/tonari.slice ]] && _NEW_PARENTS+=("$_d/tonari.slice")
done
# The unprivileged callers of test-bus-privileges.sh must reach the bus sockets below.
chmod 755 "$TESTDIR"

# Stops every tonarid a testcase started; installed as the testcase subshell's EXIT trap so a
# failed assertion cannot leave a daemon behind for the next testcase.
_kill_tonarids() {
        local pidfile pid
        for pidfile in "$TESTDIR"/*.tonarid.pid; do
                [[ -f $pidfile ]] || continue
                pid=$(cat "$pidfile")
                kill "$pid" 2>/dev/null && timeout 5 tail --pid="$pid" -f /dev/null
                rm -f "$pidfile"
        done
        return 0
}

_cleanup() {
        local rc=$? dir
        set +e
        _kill_tonarids
        # Every bus lives in a directory below $TESTDIR (new_bus runs in command substitutions,
        # so there is no list in this shell to go by).
        for dir in "$TESTDIR"/*/; do
                [[ -f $dir/dbus.pid ]] && "$PRIVATE_BUS" stop "$dir"
        done
        if ((rc != 0)); then
                for f in "$TESTDIR"/*.log; do
                        [[ -f $f ]] && { echo "----- $f"; cat "$f"; }
                done >&2
        fi
        rm -rf "$TESTDIR"
        for dir in "${_NEW_PARENTS[@]}"; do
                [[ -d $dir ]] || continue
                rmdir "$dir" || { echo "cgroup left behind: $dir" >&2; ((rc != 0)) || rc=1; }
        done
        return "$rc"
}
trap _cleanup EXIT

# cleanup_slices: removes what a testcase of a root test left behind: the processes and cgroups of
# the slices whose names start with $P (the script's own prefix).
cleanup_slices() {
        local d pid
        for d in /sys/fs/cgroup/*/tonari.slice/"$P"* /sys/fs/cgroup/tonari.slice/"$P"*; do
                [[ -d $d ]] || continue
                for pid in $(cat "$d/cgroup.procs" 2>/dev/null); do
                        kill -KILL "$pid" 2>/dev/null || true
                done
                sleep 0.2
                rmdir "$d" 2>/dev/null || true
        done
        return 0
}

# new_bus DIR POLICY...: starts a private bus in DIR and prints its address.
new_bus() {
        local dir=$1
        shift
        mkdir -p "$dir"
        "$PRIVATE_BUS" start "$dir" "$@"
}

BUS=$(new_bus "$TESTDIR/bus" "$POLICY")

# wait_for_name ADDRESS PID: until tonarid owns its name; fails if tonarid exits first.
wait_for_name() {
        local address=$1 pid=$2
        for _ in $(seq 200); do
                busctl --address="$address" status org.tonari.Manager1 >/dev/null 2>&1 && return 0
                kill -0 "$pid" 2>/dev/null || { echo "tonarid (PID $pid) exited before owning its name" >&2; return 1; }
                sleep 0.05
        done
        echo "tonarid (PID $pid) did not acquire org.tonari.Manager1 within 10 s" >&2
        return 1
}

# start_tonarid NAME [ARGS...]: starts tonarid on $BUS (unless ARGS has --bus-address=) as a child
# of the calling shell, logging to $TESTDIR/NAME.log; sets TONARID_PID and waits for its name.
start_tonarid() {
        local name=$1 address=$BUS a
        shift
        for a in "$@"; do
                [[ $a == --bus-address=* ]] && address=${a#--bus-address=}
        done
        # A testcase's own EXIT trap stops the daemons too and undoes the rest of what it did:
        # keep it rather than replace it.
        [[ $(trap -p EXIT) == *_kill_tonarids* ]] || trap _kill_tonarids EXIT
        "$TONARID" --bus-address="$address" --config="$TESTDIR/$name.conf" "$@" >>"$TESTDIR/$name.log" 2>&1 &
        TONARID_PID=$!
        echo "$TONARID_PID" >"$TESTDIR/$name.tonarid.pid"
        wait_for_name "$address" "$TONARID_PID"
}

# stop_tonarid NAME [SIGNAL]: stops it and checks that it exited cleanly (status 0).
stop_tonarid() {
        local name=$1 sig=${2:-TERM} pid rc=0
        pid=$(cat "$TESTDIR/$name.tonarid.pid")
        kill -"$sig" "$pid"
        wait "$pid" || rc=$?
        rm -f "$TESTDIR/$name.tonarid.pid"
        assert_eq 0 "$rc" "exit status of tonarid after SIG$sig"
}

# prop NAME: one property of org.tonari.Manager1 as busctl prints it (type and value).
prop() {
        busctl --address="${ADDRESS:-$BUS}" get-property org.tonari.Manager1 /org/tonari/Manager1 \
                org.tonari.Manager1 "$1"
}

# json EXPRESSION: evaluates a Python expression over the JSON document on stdin (as 'j').
json() {
        python3 -c 'import json, sys; j = json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"
}
