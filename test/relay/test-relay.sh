#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tonari-relay with tonarictl's image commands and the layer service, on this host: a relay on a
# unix socket and on TCP, images pulled from a real docker-registry and from an OCI layout,
# listed, shown, removed, collected; the layer service checked entry by entry against the ToC;
# restart, a second relay on the same store, concurrent pulls, and the errors users meet.
# Needs root (make-test-image makes device nodes); env: RELAY TONARICTL TONARICTL_RELAY LAYERS_CLIENT.
set -eux
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../testlib.sh"
((EUID == 0)) || { echo "needs root (the test image has device nodes and owners)"; exit 77; }
for tool in docker-registry skopeo umoci curl python3; do
        command -v "$tool" >/dev/null || { echo "$tool is missing (./dev deps installs it)"; exit 77; }
done
. "$here/../imagestore/registry-lib.sh"

WORK=$(mktemp -d /tmp/tonari-relay.XXXXXX)
# The relay's PID is kept in a file: testcases run in subshells, and one of them restarts it.
stop_relay() {
        local pid
        [[ -s $WORK/relay.pid ]] || return 0
        pid=$(cat "$WORK/relay.pid")
        kill "$pid" 2>/dev/null && timeout 15 tail --pid="$pid" -f /dev/null || true
        rm -f "$WORK/relay.pid"
}
cleanup() {
        stop_relay
        registry_stop
        rm -rf "$WORK"
}
trap cleanup EXIT

TONARI_TEST_ROOTFS=no
"$here/../imagestore/make-test-image" "$WORK/layout" 2> >(grep -v 'ignoring empty-valued xattr' >&2)
registry_start "$WORK/registry"
registry_push "$WORK/layout:test" tonari/test:v1
TCP_PORT=$(free_port)

cat >"$WORK/relay.conf" <<EOT
[Relay]
Store=$WORK/store
Listen=unix:$WORK/relay.sock 127.0.0.1:$TCP_PORT
LogTarget=console
[Pull]
InsecureRegistries=$REGISTRY_HOST
EOT

start_relay() {
        "$RELAY" --config="$WORK/relay.conf" >>"$WORK/relay.log" 2>&1 &
        echo $! >"$WORK/relay.pid"
        for _ in $(seq 100); do
                [[ -S $WORK/relay.sock ]] && "$TONARICTL" --relay="unix:$WORK/relay.sock" image list >/dev/null 2>&1 && return 0
                kill -0 "$(cat "$WORK/relay.pid")" 2>/dev/null || break
                sleep 0.1
        done
        cat "$WORK/relay.log"
        return 1
}
ctl() {
        "$TONARICTL" --relay="unix:$WORK/relay.sock" "$@"
}

start_relay

testcase_pull_list_show() {
        ctl image pull --plain-http "docker://$REGISTRY_HOST/tonari/test:v1" test
        ctl image pull "oci:$WORK/layout:test"
        assert_eq "layout:test
test" "$(ctl --no-legend image list | awk '{print $1}')"
        assert_eq 4 "$(ctl --json=short image show test | python3 -c 'import json, sys; print(len(json.load(sys.stdin)["layers"]))')"
        # Same content from two sources: the same layers, stored once.
        assert_eq "$(ctl --json=short image show test | python3 -c 'import json, sys; print([l["diffID"] for l in json.load(sys.stdin)["layers"]])')" \
                "$(ctl --json=short image show layout:test | python3 -c 'import json, sys; print([l["diffID"] for l in json.load(sys.stdin)["layers"]])')"
        assert_eq 4 "$(find "$WORK/store/layers" -type f | wc -l)" "layers in the store"
        # Over TCP too.
        assert_match "^test +4 " "$("$TONARICTL" --relay="127.0.0.1:$TCP_PORT" --no-legend image list | grep '^test ')"
        assert_eq 0 "$(ls -A "$WORK/store/tmp" | wc -l)" "files left in tmp/"
}

testcase_layer_service() {
        local diff_id hex toc
        for diff_id in $(ctl --json=short image show test | python3 -c 'import json, sys; [print(l["diffID"]) for l in json.load(sys.stdin)["layers"]]'); do
                hex=${diff_id#sha256:}
                toc=$WORK/store/layers/sha256/${hex:0:2}/$hex
                "$LAYERS_CLIENT" "unix:$WORK/relay.sock" "$diff_id" "$toc"
        done
        # tonarictl reads the same files; merged as overlayfs merges them, the layers pulled through
        # the relay are what umoci unpack makes of the image.
        assert_match "/usr/share/doc \(opaque\)" "$(for f in "$WORK"/store/layers/sha256/*/*; do ctl image toc "$f"; done)"
        local n=0 tocs=()
        for diff_id in $(ctl --json=short image show test | python3 -c 'import json, sys; [print(l["diffID"]) for l in json.load(sys.stdin)["layers"]]'); do
                hex=${diff_id#sha256:}
                n=$((n + 1))
                ctl --json=short image toc "$WORK/store/layers/sha256/${hex:0:2}/$hex" >"$WORK/toc.$n.json"
                tocs+=("$WORK/toc.$n.json")
        done
        umoci unpack --image "$WORK/layout:test" "$WORK/bundle" >/dev/null 2>&1
        python3 "$here/../imagestore/tree-listing.py" dir "$WORK/bundle/rootfs" >"$WORK/expected.txt"
        python3 "$here/../imagestore/tree-listing.py" tocs "${tocs[@]}" >"$WORK/relay.txt"
        diff -u "$WORK/expected.txt" "$WORK/relay.txt"
        assert_eq "$(wc -l <"$WORK/expected.txt")" "$(wc -l <"$WORK/relay.txt")"
}

testcase_errors() {
        # Without tonarictl-relay (the tonari-relay package), the image commands say what is missing.
        assert_rc_match 1 "need the tonari-relay package" env TONARICTL_RELAY=/nonexistent "$TONARICTL" image list
        # The relay explains; the messages name the value.
        assert_rc_match 5 'no image "nope"' ctl image show nope
        assert_rc 5 ctl image remove nope
        assert_rc 2 ctl image pull "not-a-source"
        assert_rc 2 ctl image pull "docker://$REGISTRY_HOST/UPPER/case:v1"
        # Plain HTTP only to registries the relay allows.
        assert_rc_match 4 'InsecureRegistries' ctl image pull --plain-http "docker://127.0.0.2:5000/tonari/test:v1"
        assert_rc 5 ctl image pull --plain-http "docker://$REGISTRY_HOST/tonari/none:v1"
        assert_rc 5 ctl image pull "oci:$WORK/layout:nope"
        assert_rc 2 ctl image pull --platform=linux "oci:$WORK/layout:test"
        assert_rc 1 "$TONARICTL" --relay="unix:$WORK/nothing.sock" image list
        assert_rc 1 ctl image toc "$WORK/relay.conf"
}

testcase_concurrent_pulls() {
        local a b
        ctl image pull "oci:$WORK/layout:test" one >"$WORK/one.out" 2>&1 &
        a=$!
        ctl image pull "oci:$WORK/layout:test" two >"$WORK/two.out" 2>&1 &
        b=$!
        wait "$a"
        wait "$b"
        assert_match "^one +4 " "$(ctl --no-legend image list | grep '^one ')"
        assert_match "^two +4 " "$(ctl --no-legend image list | grep '^two ')"
        assert_eq 4 "$(find "$WORK/store/layers" -type f | wc -l)" "layers in the store"
}

testcase_restart_and_second_relay() {
        local before
        before=$(ctl --no-legend image list)
        stop_relay
        start_relay
        assert_eq "$before" "$(ctl --no-legend image list)"
        # A second relay on the same store refuses to start.
        sed "s|relay.sock|relay2.sock|; s|127.0.0.1:$TCP_PORT|127.0.0.1:$(free_port)|" "$WORK/relay.conf" >"$WORK/relay2.conf"
        assert_rc_match 1 "in use by another process" "$RELAY" --config="$WORK/relay2.conf"
        # A port in use is refused, not shared.
        sed "s|$WORK/store|$WORK/store2|; s|relay.sock|relay3.sock|" "$WORK/relay.conf" >"$WORK/relay3.conf"
        assert_rc 1 "$RELAY" --config="$WORK/relay3.conf"
}

testcase_remove_and_gc() {
        local objects
        objects=$(find "$WORK/store/objects" -type f | wc -l)
        ((objects > 0))
        ctl image remove test layout:test one
        assert_match "Would remove 0 blobs, 0 layers" "$(ctl image gc --dry-run)"
        ctl image remove two
        assert_match "Would remove [0-9]+ blobs, 4 layers and $objects content objects" "$(ctl image gc --dry-run)"
        ctl --json=short image gc | python3 -c 'import json, sys; d = json.load(sys.stdin); assert d["layersRemoved"] == 4 and d["freedBytes"] > 0, d'
        assert_eq 0 "$(find "$WORK/store/objects" "$WORK/store/layers" "$WORK/store/blobs" -type f | wc -l)"
        assert_eq "" "$(ctl --no-legend image list)"
}

run_testcases
