#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tonari-relay against what breaks it: a store changed under a running relay, hostile or broken
# images, files that are not files, clients that go away, shutdown in the middle of work. Images
# are OCI layouts written by make-layout.py from tars written here, so the test needs neither root
# nor umoci. Env: RELAY TONARICTL TONARICTL_RELAY LAYERS_CLIENT.
set -eux
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../testlib.sh"
command -v python3 >/dev/null || { echo "python3 is missing"; exit 77; }

WORK=$(mktemp -d /tmp/tonari-hardening.XXXXXX)
stop_relay() {
        local pid
        [[ -s $WORK/relay.pid ]] || return 0
        pid=$(cat "$WORK/relay.pid")
        kill "$pid" 2>/dev/null && timeout 30 tail --pid="$pid" -f /dev/null || true
        rm -f "$WORK/relay.pid"
}
cleanup() {
        stop_relay
        [[ -s $WORK/registry.pid ]] && kill "$(cat "$WORK/registry.pid")" 2>/dev/null
        rm -rf "$WORK"
}
trap cleanup EXIT

# write_tar FILE KIND: the layer tars the testcases use.
write_tar() {
        python3 - "$1" "$2" <<'EOF'
import io, sys, tarfile
path, kind = sys.argv[1], sys.argv[2]
t = tarfile.open(path, "w", format=tarfile.PAX_FORMAT)
def add(name, data=None, kind=tarfile.REGTYPE, size=None):
        info = tarfile.TarInfo(name)
        info.type, info.mtime = kind, 1700000000
        if kind == tarfile.DIRTYPE:
                info.mode = 0o755
                t.addfile(info)
                return
        info.size = len(data) if size is None else size
        t.addfile(info, io.BytesIO(data))
if kind == "wide":
        # A root with 100 files: a ToC of some 15 KiB, so that reading the root's children crosses
        # pages (a truncation to 4096 bytes took a mapping's pages away).
        add("dir", kind=tarfile.DIRTYPE)
        for i in range(100):
                add("f%03d" % i, b"content %d\n" % i)
elif kind == "sized":
        # 1000 + 2000 + 3000 bytes in three files and a hard link: 6000 bytes unpacked, 6 entries.
        add("etc", kind=tarfile.DIRTYPE)
        for i, n in enumerate((1000, 2000, 3000)):
                add("etc/f%d" % i, bytes([65 + i]) * n)
        info = tarfile.TarInfo("etc/link")
        info.type, info.linkname = tarfile.LNKTYPE, "etc/f2"
        t.addfile(info)
elif kind == "slow":
        # 300 kB that the registry sends at 30 kB/s: a pull holds in this layer for ten seconds.
        add("slow", bytes((i * 7919) & 0xff for i in range(300000)))
elif kind == "stall":
        # The registry sends this blob's first bytes and then nothing: a pull holds in it.
        add("stall", b"x" * 100000)
elif kind == "deep":
        # An entry 5000 directories deep: a name no file system takes, and a 10 kB error message.
        add("a/" * 5000 + "x", b"deep\n")
elif kind == "big":
        # 10000 files: a ToC of about 1.5 MB, beyond the ToCMemoryMax=1M this test runs with.
        for d in range(100):
                add("d%02d" % d, kind=tarfile.DIRTYPE)
                for f in range(100):
                        add("d%02d/file-with-a-longer-name-%03d" % (d, f), b"")
elif kind == "other":
        add("other", b"another layer\n")
t.close()
EOF
}

# diff_id FILE: the digest a tar's layer is named by.
diff_id() {
        echo "sha256:$(sha256sum "$1" | cut -d' ' -f1)"
}
toc_path() {
        local hex=${1#sha256:}
        echo "$WORK/store/layers/sha256/${hex:0:2}/$hex"
}

write_tar "$WORK/wide.tar" wide
write_tar "$WORK/sized.tar" sized
write_tar "$WORK/slow.tar" slow
write_tar "$WORK/big.tar" big
write_tar "$WORK/stall.tar" stall
write_tar "$WORK/other.tar" other
write_tar "$WORK/deep.tar" deep
STALL=$(diff_id "$WORK/stall.tar")
python3 "$here/make-layout.py" "$WORK/layout" wide "$WORK/wide.tar"
WIDE=$(diff_id "$WORK/wide.tar")
SLOW=$(diff_id "$WORK/slow.tar")

# A registry serving the same layout, slow for the slow layer (uncompressed: its blob digest is
# its diff_id).
python3 "$here/slow-registry.py" "$WORK/layout" "$WORK/registry.port" --rate="$SLOW:30000" --stall="$STALL" &
echo $! >"$WORK/registry.pid"
for _ in $(seq 50); do [[ -s $WORK/registry.port ]] && break; sleep 0.1; done
REGISTRY=127.0.0.1:$(cat "$WORK/registry.port")

cat >"$WORK/relay.conf" <<EOT
[Relay]
Store=$WORK/store
Listen=unix:$WORK/relay.sock
LogTarget=console
ToCMemoryMax=1M
[Pull]
InsecureRegistries=$REGISTRY
EOT

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
relay_alive() {
        kill -0 "$(cat "$WORK/relay.pid")"
}
ctl() {
        "$TONARICTL" --relay="unix:$WORK/relay.sock" "$@"
}
client() {
        local rc=0
        "$LAYERS_CLIENT" "$1" "unix:$WORK/relay.sock" "${@:2}" || rc=$?
        ((rc == 0 || rc == 3))
}

start_relay
ctl image pull "oci:$WORK/layout:wide" wide
cp "$(toc_path "$WIDE")" "$WORK/wide.toc"

# damage TOC KIND: the changes that crashed or wedged the relay once it had the ToC cached.
damage() {
        python3 - "$1" "$2" <<'EOF'
import os, struct, sys
path, kind = sys.argv[1], sys.argv[2]
os.chmod(path, 0o600)
with open(path, "r+b") as f:
        head = f.read(120)
        entries, = struct.unpack_from("<Q", head, 72)
        entry_size, = struct.unpack_from("<I", head, 80)
        if kind == "name-len":
                f.seek(entries + entry_size + 12)
                f.write(struct.pack("<I", 100000))
        elif kind == "truncate":
                f.truncate(4096)
        elif kind == "n-children":
                f.seek(entries + 72)
                f.write(struct.pack("<I", 0xffffffff))
        elif kind in ("flip", "flip-valid"):
                # A file's size, in the fifth entry.
                f.seek(entries + 4 * entry_size + 40)
                b = f.read(1)
                f.seek(-1, 1)
                f.write(bytes([b[0] ^ 1]))
        if kind == "flip-valid":
                # With the ToC's own checksum made right: only the store's record tells.
                import hashlib
                f.seek(40)
                rest = f.read()
                f.seek(8)
                f.write(hashlib.sha256(rest).digest())
EOF
}
restore_toc() {
        local toc
        toc=$(toc_path "$WIDE")
        chmod 0600 "$toc"
        cp "$WORK/wide.toc" "$toc"
        chmod 0400 "$toc"
}

testcase_toc_changed_after_warming() {
        local kind
        for kind in name-len truncate n-children; do
                restore_toc
                stop_relay
                start_relay
                # Warm: the relay has the layer's ToC from now on.
                assert_match "^OK 101 entries dir f000 f001" "$(client readdir "$WIDE" 0)"
                damage "$(toc_path "$WIDE")" "$kind"
                # What it has was verified when read, and is its own: the answer does not change,
                # and nothing crashes (once: a segfault, SIGBUS, and 23 M bogus entries).
                assert_match "^OK 101 entries dir f000 f001" "$(client readdir "$WIDE" 0)"
                relay_alive
                # Read again (a restart), the damage is found and named.
                stop_relay
                start_relay
                assert_match "^ERROR EUCLEAN the table of contents of layer $WIDE is damaged" \
                        "$(client readdir "$WIDE" 0)"
                relay_alive
        done
        restore_toc
}

testcase_the_image_names_its_tocs() {
        # GetImage gives each layer's ToC digest, as GetToC announces it: what a client checks the
        # ToC it assembled against.
        assert_eq "sha256:$(sha256sum "$WORK/wide.toc" | cut -d' ' -f1)" \
                "$(ctl --json=short image show wide | python3 -c 'import json, sys; print(json.load(sys.stdin)["layers"][0]["tocDigest"])')"
        assert_match "^OK [0-9]+ sha256:$(sha256sum "$WORK/wide.toc" | cut -d' ' -f1)\$" "$(client gettoc "$WIDE" "$WORK/got.toc")"
}

testcase_gettoc_of_a_damaged_toc() {
        local kind
        for kind in flip flip-valid truncate; do
                restore_toc
                stop_relay
                start_relay
                damage "$(toc_path "$WIDE")" "$kind"
                # Streamed from the file: the call ends with DATA_LOSS, never OK (once: OK, and a
                # digest computed over the damaged bytes).
                assert_match "^ERROR EUCLEAN the table of contents of layer $WIDE is damaged" \
                        "$(client gettoc "$WIDE" "$WORK/got.toc")"
                # The calls without ToC check it against the store's record too (flip-valid is a
                # valid ToC, only not the one the store recorded).
                assert_match "^ERROR EUCLEAN the table of contents of layer $WIDE is damaged" \
                        "$(client readdir "$WIDE" 0)"
        done

        # Damaged after the relay read and verified it: what it sends is what it verified.
        restore_toc
        stop_relay
        start_relay
        assert_match "^OK 101 entries" "$(client readdir "$WIDE" 0)"
        damage "$(toc_path "$WIDE")" flip-valid
        assert_eq "OK $(stat -c %s "$WORK/wide.toc") sha256:$(sha256sum "$WORK/wide.toc" | cut -d' ' -f1)" \
                "$(client gettoc "$WIDE" "$WORK/got.toc")"
        cmp "$WORK/wide.toc" "$WORK/got.toc"
        restore_toc
        stop_relay
        start_relay
}

testcase_toc_memory_is_bounded() {
        local big
        big=$(diff_id "$WORK/big.tar")
        python3 "$here/make-layout.py" "$WORK/layout" big "$WORK/big.tar"
        ctl image pull "oci:$WORK/layout:big" big
        (($(stat -c %s "$(toc_path "$big")") > 1024 * 1024))
        # Larger than ToCMemoryMax=1M: not held in memory for the calls without ToC...
        assert_match "^ERROR EMSGSIZE the table of contents of layer $big is larger than ToCMemoryMax=" \
                "$(client readdir "$big" 0)"
        # ...and still sent whole, in pieces, by GetToC.
        assert_eq "OK $(stat -c %s "$(toc_path "$big")") sha256:$(sha256sum "$(toc_path "$big")" | cut -d' ' -f1)" \
                "$(client gettoc "$big" "$WORK/got.toc")"
        assert_match "^OK 101 entries" "$(client readdir "$WIDE" 0)"
        # Transfers take their pieces' memory from ToCMemoryMax= too: here one or two at a time,
        # the others wait for them, and all end.
        assert_eq "OK 8 calls of $(stat -c %s "$(toc_path "$big")") bytes" "$(client gettoc-many "$big" 8)"
        ctl image remove big
}

testcase_gc_forgets_tocs_in_memory() {
        local other
        other=$(diff_id "$WORK/other.tar")
        python3 "$here/make-layout.py" "$WORK/layout" gcme "$WORK/other.tar"
        ctl image pull "oci:$WORK/layout:gcme" gcme
        assert_match "^OK 1 entries other" "$(client readdir "$other" 0)"
        ctl image remove gcme
        # Until GC the layer is there; after it, not even from the relay's memory.
        assert_match "^OK 1 entries other" "$(client readdir "$other" 0)"
        ctl image gc
        assert_match "^ERROR ENOENT no layer $other" "$(client readdir "$other" 0)"
        assert_match "^ERROR ENOENT no layer $other" "$(client gettoc "$other" "$WORK/got.toc")"
}

testcase_blobs_of_a_present_layer_are_verified() {
        local out
        python3 "$here/make-layout.py" "$WORK/layout" present "$WORK/sized.tar"
        ctl image pull "oci:$WORK/layout:present" present
        # The same layer named by a blob the layout does not have: refused, although the layer is
        # in the store (once: accepted, and the record kept that digest).
        python3 "$here/make-layout.py" --missing-blob=0 "$WORK/layout" missing "$WORK/sized.tar"
        assert_rc_match 5 "blobs/sha256/[0-9a-f]{64}: No such file or directory" \
                ctl image pull "oci:$WORK/layout:missing" missing
        # Named by a blob that exists but is another layer: refused too.
        python3 - "$WORK/layout" "$(diff_id "$WORK/sized.tar")" <<'EOF'
import hashlib, json, os, sys
layout, diff_id = sys.argv[1], sys.argv[2]
def blob(d):
        return os.path.join(layout, "blobs", "sha256", d.split(":")[1])
def put(data):
        d = "sha256:" + hashlib.sha256(data).hexdigest()
        open(blob(d), "wb").write(data)
        return d
index = json.load(open(os.path.join(layout, "index.json")))
wide = next(m for m in index["manifests"] if m["annotations"]["org.opencontainers.image.ref.name"] == "wide")
manifest = json.load(open(blob(wide["digest"])))
config = json.dumps({"architecture": "amd64", "os": "linux", "rootfs": {"type": "layers", "diff_ids": [diff_id]}}).encode()
manifest["config"] = {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": put(config), "size": len(config)}
raw = json.dumps(manifest).encode()
index["manifests"].append({"mediaType": manifest["mediaType"], "digest": put(raw), "size": len(raw),
                           "annotations": {"org.opencontainers.image.ref.name": "other-blob"}})
json.dump(index, open(os.path.join(layout, "index.json"), "w"))
EOF
        assert_rc_match 2 "its content has digest $WIDE, the config says $(diff_id "$WORK/sized.tar")" \
                ctl image pull "oci:$WORK/layout:other-blob" other-blob
        assert_eq "present" "$(ctl --no-legend image list | awk '{print $1}' | grep -E '^(present|missing|other-blob)$')"
        # The same layer compressed: a blob of its own, verified once and recorded.
        python3 "$here/make-layout.py" --gzip "$WORK/layout" gzipped "$WORK/sized.tar"
        ctl image pull "oci:$WORK/layout:gzipped" gzipped
        assert_eq "6000 6" "$(layer_numbers gzipped)"
        assert_eq 2 "$(python3 -c 'import json, sys; print([len(l["blobs"]) for l in json.load(open(sys.argv[1]))["layers"] if l["diffID"] == sys.argv[2]][0])' \
                "$WORK/store/images.json" "$(diff_id "$WORK/sized.tar")")"
        out=$(ctl image pull "oci:$WORK/layout:gzipped" gzipped 2>&1)
        assert_match "present" "$out"
        ctl image remove present gzipped
}

testcase_files_that_are_not_files() {
        local dir=$WORK/fifo-layout
        # index.json a FIFO: refused at once (once: the pull, and then GC, hung until someone
        # opened the FIFO).
        mkdir -p "$dir/blobs/sha256"
        echo '{"imageLayoutVersion": "1.0.0"}' >"$dir/oci-layout"
        mkfifo "$dir/index.json"
        assert_rc_match 2 "index.json: not a regular file" \
                timeout 20 "$TONARICTL" --relay="unix:$WORK/relay.sock" image pull "oci:$dir:x"
        # A blob of a layout a FIFO.
        rm -rf "$dir"
        python3 "$here/make-layout.py" "$dir" fifo "$WORK/other.tar"
        rm "$dir/blobs/sha256/$(diff_id "$WORK/other.tar" | cut -d: -f2)"
        mkfifo "$dir/blobs/sha256/$(diff_id "$WORK/other.tar" | cut -d: -f2)"
        assert_rc 2 timeout 20 "$TONARICTL" --relay="unix:$WORK/relay.sock" image pull "oci:$dir:fifo"
        # The archive itself a FIFO, for both kinds.
        mkfifo "$WORK/fifo.tar"
        assert_rc_match 2 "fifo.tar is not a regular file" \
                timeout 20 "$TONARICTL" --relay="unix:$WORK/relay.sock" image pull "oci-archive:$WORK/fifo.tar:x"
        assert_rc 2 timeout 20 "$TONARICTL" --relay="unix:$WORK/relay.sock" image pull "docker-archive:$WORK/fifo.tar"
        # A device is not an archive either.
        assert_rc 2 timeout 20 "$TONARICTL" --relay="unix:$WORK/relay.sock" image pull "oci-archive:/dev/zero:x"
        # Nothing waits: GC runs.
        assert_match "Would remove" "$(timeout 20 "$TONARICTL" --relay="unix:$WORK/relay.sock" image gc --dry-run)"
        relay_alive
        rm -rf "$dir" "$WORK/fifo.tar"
}

# pull_until_fetching IMAGE OUT: starts a pull of IMAGE from the registry (its stalled layer), prints
# the client's PID once the relay fetches that layer.
pull_until_fetching() {
        local pid
        "$TONARICTL" --relay="unix:$WORK/relay.sock" image pull --plain-http "docker://$REGISTRY/tonari/$1:$1" "$1" \
                >"$2" 2>&1 &
        pid=$!
        for _ in $(seq 100); do
                grep -q "fetching" "$2" && break
                sleep 0.1
        done
        grep -q "fetching" "$2"
        echo "$pid"
}

testcase_a_client_that_leaves_cancels_its_pull() {
        local pid
        python3 "$here/make-layout.py" "$WORK/layout" stall "$WORK/stall.tar"
        pid=$(pull_until_fetching stall "$WORK/stall.out")
        kill -9 "$pid"
        # The pull ends (and GC, which waits for pulls in flight, gets its turn) at once, not when
        # the registry's connection times out a minute later.
        assert_match "Would remove" "$(timeout 10 "$TONARICTL" --relay="unix:$WORK/relay.sock" image gc --dry-run)"
        for _ in $(seq 50); do
                grep -q "Pull of 'docker://$REGISTRY/tonari/stall:stall' cancelled by the client" "$WORK/relay.log" && break
                sleep 0.1
        done
        grep -q "Pull of 'docker://$REGISTRY/tonari/stall:stall' cancelled by the client" "$WORK/relay.log"
        assert_eq "" "$(ctl --no-legend image list | grep '^stall ' || true)"
        relay_alive
}

testcase_sigterm_during_a_stalled_pull() {
        local pid relay start
        python3 "$here/make-layout.py" "$WORK/layout" stall "$WORK/stall.tar"
        pid=$(pull_until_fetching stall "$WORK/stall2.out")
        relay=$(cat "$WORK/relay.pid")
        start=$SECONDS
        kill -TERM "$relay"
        # 5 s of grace for calls in flight, then they are cancelled and the pull stops within a
        # second (once: it waited for the registry, and on a FIFO forever).
        timeout 15 tail --pid="$relay" -f /dev/null
        assert_le $((SECONDS - start)) 12
        rm -f "$WORK/relay.pid"
        start_relay
        assert_eq "" "$(ctl --no-legend image list | grep '^stall ' || true)"
}

testcase_long_error_messages() {
        local out rc=0
        python3 "$here/make-layout.py" "$WORK/layout" deep "$WORK/deep.tar"
        # The relay's message arrives, shortened in the middle, and tonarictl exits as for any
        # invalid input (once: "received initial metadata size exceeds limit", exit 1).
        out=$(ctl image pull "oci:$WORK/layout:deep" 2>&1) || rc=$?
        assert_eq 2 "$rc" "exit code of the pull"
        assert_match 'layer entry "a/a/a/.*\.\.\..*/a/a/x": invalid path' "$out"
        assert_le "${#out}" 2600 # the message, bounded at 2048 bytes, and the progress lines
        relay_alive
}

# layer_numbers IMAGE: "unpacked entries" of each layer, one line each.
layer_numbers() {
        ctl --json=short image show "$1" |
                python3 -c 'import json, sys; [print(l["unpackedBytes"], l["tocEntries"]) for l in json.load(sys.stdin)["layers"]]'
}

testcase_sizes_of_a_layer_no_image_uses() {
        python3 "$here/make-layout.py" "$WORK/layout" u1 "$WORK/sized.tar"
        python3 "$here/make-layout.py" "$WORK/layout" u2 "$WORK/sized.tar"
        ctl image pull "oci:$WORK/layout:u1" u1
        assert_eq "6000 6" "$(layer_numbers u1)"
        ctl image remove u1
        # The layer is still in the store, and no image names it: its numbers are still its own.
        ctl image pull "oci:$WORK/layout:u2" u2
        assert_eq "6000 6" "$(layer_numbers u2)"
        assert_match "\(5\.8K unpacked\)" "$(ctl image pull "oci:$WORK/layout:u2" u2)"
        ctl image remove u2
}

testcase_sizes_after_kill_mid_pull() {
        local pid
        python3 "$here/make-layout.py" "$WORK/layout" two "$WORK/sized.tar" "$WORK/slow.tar"
        ctl image pull --plain-http "docker://$REGISTRY/tonari/two:two" two >"$WORK/two.out" 2>&1 &
        pid=$!
        # The first layer is published while the second still arrives: then the relay dies.
        for _ in $(seq 100); do
                [[ -e $(toc_path "$(diff_id "$WORK/sized.tar")") ]] && break
                sleep 0.1
        done
        [[ -e $(toc_path "$(diff_id "$WORK/sized.tar")") ]]
        kill -9 "$(cat "$WORK/relay.pid")"
        wait "$pid" || true
        rm -f "$WORK/relay.pid"
        start_relay
        assert_eq "" "$(ctl --no-legend image list | grep '^two ' || true)"
        ctl image pull "oci:$WORK/layout:two" two
        assert_eq "6000 6
300000 2" "$(layer_numbers two)"
        ctl image remove two
}

testcase_the_build_tree_runs_its_own_helper() {
        local fake=$WORK/fake-build out rc=0

        # tonarictl of the build tree, without $TONARICTL_RELAY: the build's tonarictl-relay, not an
        # installed one (there is none on a developer's machine).
        [[ -d $(dirname "$TONARICTL")/meson-private ]]
        [[ -x $(dirname "$TONARICTL")/tonarictl-relay ]]
        env -u TONARICTL_RELAY "$TONARICTL" --relay="unix:$WORK/relay.sock" image list >/dev/null
        # A build without tonarictl-relay says so, with the path it tried, and fails.
        mkdir -p "$fake/meson-private"
        cp "$TONARICTL" "$fake/tonarictl"
        out=$(env -u TONARICTL_RELAY "$fake/tonarictl" --relay="unix:$WORK/relay.sock" image list 2>&1) || rc=$?
        assert_eq 1 "$rc"
        assert_match "$fake/tonarictl-relay is missing" "$out"
        assert_match "tonari-relay package" "$out"
        rm -rf "$fake"
}

run_testcases
