#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-pull.sh IMAGESTORE-TOOL: pulls make-test-image's image (busybox-static and hand-made layers
# with whiteouts, opaque directories, hard links, devices, setuid files, xattrs, names in several
# scripts and names that are not UTF-8; plus a Debian minbase tree with ca-certificates, whose names
# go beyond ASCII, as the bottom layer when make-rootfs-tar can build one) into the image store from
# a real docker-registry, an OCI layout, an oci-archive and a docker-archive, and compares the store's
# view of the layer chain with what "umoci unpack" makes of the same image: every path, type, mode,
# owner, size, content digest, link target, device number, mtime, xattr and hard link group must be
# the same. Then the bad inputs: a corrupted blob, a registry that goes away in the middle of a
# pull, and hostile layer tars.
set -eux
set -o pipefail

TOOL=$(realpath "$1")
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../testlib.sh"

((EUID == 0)) || { echo "needs root (the test image has device nodes and owners)"; exit 77; }
for tool in docker-registry skopeo umoci curl python3; do
        command -v "$tool" >/dev/null || { echo "$tool is missing (./dev deps installs it)"; exit 77; }
done
. "$here/registry-lib.sh"

WORK=$(mktemp -d /tmp/tonari-pull.XXXXXX)
cleanup() {
        registry_stop
        rm -rf "$WORK"
}
trap cleanup EXIT

rootfs_tar=
if [[ ${TONARI_TEST_ROOTFS:-yes} == yes ]]; then
        rootfs_tar=$("$here/make-rootfs-tar" ca-certificates) || { echo "make-rootfs-tar failed ($?)"; exit 1; }
fi
"$here/make-test-image" "$WORK/layout" $rootfs_tar 2> >(grep -v 'ignoring empty-valued xattr' >&2)
umoci unpack --image "$WORK/layout:test" "$WORK/bundle" >/dev/null 2> >(grep -v 'ignoring' >&2)
python3 "$here/tree-listing.py" dir "$WORK/bundle/rootfs" >"$WORK/expected.txt"
# The names the comparison must cover (json.dumps writes them as \u escapes).
grep -q '"path": "opt/names/invalid-\\udcff\\udcfe\\udcc3"' "$WORK/expected.txt"
if [[ -n $rootfs_tar ]]; then
        grep -q '"path": "usr/share/ca-certificates/mozilla/NetLock_Arany_=Class_Gold=_F\\u0151tan\\u00fas\\u00edtv\\u00e1ny.crt"' \
                "$WORK/expected.txt"
fi
expected_layers=$(python3 -c 'import json, sys
index = json.load(open(sys.argv[1] + "/index.json"))
manifest = index["manifests"][0]["digest"].split(":")[1]
print(len(json.load(open(sys.argv[1] + "/blobs/sha256/" + manifest))["layers"]))' "$WORK/layout")

# compare_pull STORE SOURCE [ARGS]: pulls and diffs the merged ToCs with umoci's tree.
compare_pull() {
        local store=$1 source=$2 out tocs=() f n=0
        shift 2
        out=$WORK/pull.$RANDOM
        "$TOOL" pull "$store" "$source" "$@" >"$out.txt"
        assert_eq "$expected_layers" "$(grep -c '^layer ' "$out.txt")" "layers of $source"
        while read -r _ _ f _; do
                n=$((n + 1))
                "$TOOL" toc "$f" >"$out.$n.json"
                tocs+=("$out.$n.json")
        done < <(grep '^layer ' "$out.txt")
        python3 "$here/tree-listing.py" tocs "${tocs[@]}" >"$out.listing"
        diff -u "$WORK/expected.txt" "$out.listing"
        assert_eq "$(wc -l <"$WORK/expected.txt")" "$(wc -l <"$out.listing")" "entries of $source"
}

testcase_registry() {
        registry_start "$WORK/registry"
        trap registry_stop EXIT # the testcase's subshell: stopped even when an assertion fails
        registry_push "$WORK/layout:test" tonari/test:v1
        compare_pull "$WORK/store-registry" "docker://$REGISTRY_HOST/tonari/test:v1" --plain-http
        # Pulled again: every layer is there already.
        "$TOOL" pull "$WORK/store-registry" "docker://$REGISTRY_HOST/tonari/test:v1" --plain-http 2>"$WORK/again.log"
        assert_eq 0 "$(grep -c 'pull: fetching' "$WORK/again.log" || true)" "layers fetched twice"
        assert_eq "$expected_layers" "$(grep -c 'pull: present' "$WORK/again.log")" "layers found present"
        registry_stop
}

testcase_layout_and_archives() {
        compare_pull "$WORK/store-layout" "oci:$WORK/layout:test"
        skopeo copy --quiet "oci:$WORK/layout:test" "oci-archive:$WORK/image.oci.tar:test"
        compare_pull "$WORK/store-oci-archive" "oci-archive:$WORK/image.oci.tar:test"
        skopeo copy --quiet "oci:$WORK/layout:test" "docker-archive:$WORK/image.docker.tar:tonari/test:v1"
        compare_pull "$WORK/store-docker-archive" "docker-archive:$WORK/image.docker.tar:tonari/test:v1"
        compare_pull "$WORK/store-docker-archive" "docker-archive:$WORK/image.docker.tar"
        # The extraction directories are gone.
        assert_eq "" "$(ls -A "$WORK/store-docker-archive/tmp")" "leftovers in tmp/"
}

testcase_zstd_layers() {
        # The same image with zstd-compressed layers: new blobs, the same diff_ids and content.
        skopeo copy --quiet --dest-compress --dest-compress-format=zstd "oci:$WORK/layout:test" "oci:$WORK/zstd:test"
        assert_match "tar\+zstd" "$(cat "$WORK"/zstd/blobs/sha256/* 2>/dev/null | grep -ao 'application/vnd.oci.image.layer.v1.tar+zstd' | head -1)"
        compare_pull "$WORK/store-zstd" "oci:$WORK/zstd:test"
}

# An index with the test image for amd64 and a variant of it declared arm64.
make_index() {
        python3 - "$WORK/layout" <<'EOF2'
import hashlib, json, os, sys
layout = sys.argv[1]
def blob(digest):
        return os.path.join(layout, "blobs", "sha256", digest.split(":")[1])
def put(data, media_type):
        raw = json.dumps(data, separators=(",", ":")).encode()
        digest = "sha256:" + hashlib.sha256(raw).hexdigest()
        open(blob(digest), "wb").write(raw)
        return {"mediaType": media_type, "digest": digest, "size": len(raw)}
index = json.load(open(os.path.join(layout, "index.json")))
test = next(m for m in index["manifests"] if m["annotations"]["org.opencontainers.image.ref.name"] == "test")
manifest = json.load(open(blob(test["digest"])))
config = json.load(open(blob(manifest["config"]["digest"])))
config["architecture"] = "arm64"
config["variant"] = "v8"
manifest["config"] = put(config, "application/vnd.oci.image.config.v1+json")
arm = put(manifest, "application/vnd.oci.image.manifest.v1+json")
arm["platform"] = {"os": "linux", "architecture": "arm64", "variant": "v8"}
amd = {k: test[k] for k in ("mediaType", "digest", "size")}
amd["platform"] = {"os": "linux", "architecture": "amd64"}
multi = put({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json", "manifests": [arm, amd]},
            "application/vnd.oci.image.index.v1+json")
multi["annotations"] = {"org.opencontainers.image.ref.name": "multi"}
index["manifests"].append(multi)
json.dump(index, open(os.path.join(layout, "index.json"), "w"))
EOF2
}

testcase_index_and_platforms() {
        local store=$WORK/store-index
        make_index
        # This host's platform (amd64 here) is taken by default, from a layout and from a registry.
        compare_pull "$store" "oci:$WORK/layout:multi"
        registry_start "$WORK/registry-index"
        trap registry_stop EXIT # the testcase's subshell: stopped even when an assertion fails
        skopeo copy --quiet --all --dest-tls-verify=false "oci:$WORK/layout:multi" "docker://$PUSH_HOST/tonari/multi:v1"
        compare_pull "$store" "docker://$REGISTRY_HOST/tonari/multi:v1" --plain-http
        registry_stop
        # No image for s390x: an error that lists what the index has.
        assert_rc_match 2 "no image for linux/s390x in the index \(it has: linux/arm64/v8, linux/amd64\)" \
                "$TOOL" pull "$store" "oci:$WORK/layout:multi" s390x-name --platform=linux/s390x
        "$TOOL" pull "$store" "oci:$WORK/layout:multi" arm --platform=linux/arm64 >/dev/null
        assert_match "^arm$" "$("$TOOL" list "$store" | grep '^arm$')"
}

testcase_shared_layers_and_gc() {
        local store=$WORK/store-gc objects
        "$TOOL" pull "$store" "oci:$WORK/layout:test" first >/dev/null
        "$TOOL" pull "$store" "oci:$WORK/layout:test" second >/dev/null
        objects=$(find "$store/objects" -type f | wc -l)
        assert_eq "first
second" "$("$TOOL" list "$store")"
        "$TOOL" remove "$store" first
        # Still used by "second": nothing to collect.
        assert_eq "blobs 0 layers 0 objects 0 bytes 0" "$("$TOOL" gc "$store")"
        "$TOOL" remove "$store" second
        assert_match "^blobs 2 layers $expected_layers objects $objects bytes [1-9]" "$("$TOOL" gc "$store" --dry-run)"
        assert_eq "$objects" "$(find "$store/objects" -type f | wc -l)" "objects after a dry run"
        "$TOOL" gc "$store"
        assert_eq 0 "$(find "$store/objects" "$store/layers" "$store/blobs" -type f | wc -l)" "files after gc"
        assert_rc 2 "$TOOL" remove "$store" second
}

testcase_corrupted_blob() {
        local blob
        registry_start "$WORK/registry-bad"
        trap registry_stop EXIT # the testcase's subshell: stopped even when an assertion fails
        registry_push "$WORK/layout:test" tonari/test:v1
        # Flip a byte of the last (smallest) layer in the registry's storage.
        blob=$(find "$REGISTRY_STORAGE/blobs" -name data -size -2k -printf '%s %p\n' | sort -n | tail -1 | cut -d' ' -f2)
        python3 -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 1; open(p, "wb").write(b)' "$blob"
        assert_rc_match 74 'does not match its digest' \
                "$TOOL" pull "$WORK/store-bad" "docker://$REGISTRY_HOST/tonari/test:v1" --plain-http
        # Nothing of the failed image: no name, no blob of that layer, nothing in tmp/.
        assert_eq "" "$("$TOOL" list "$WORK/store-bad")"
        assert_eq "" "$(ls -A "$WORK/store-bad/tmp")"
        registry_stop
}

testcase_registry_gone_mid_pull() {
        registry_start "$WORK/registry-gone"
        trap registry_stop EXIT # the testcase's subshell: stopped even when an assertion fails
        registry_push "$WORK/layout:test" tonari/test:v1
        # Slow the transfer down so that the registry can be stopped in the middle of it.
        python3 - "$REGISTRY_HOST" "$WORK/proxy.port" <<'EOF' &
import socket, sys, threading, time
upstream = sys.argv[1].split(":")
listener = socket.socket()
listener.bind(("127.0.0.1", 0))
listener.listen(8)
open(sys.argv[2], "w").write(str(listener.getsockname()[1]))
def pipe(a, b, slow):
        try:
                while True:
                        data = a.recv(16384)
                        if not data:
                                break
                        b.sendall(data)
                        if slow:
                                time.sleep(0.01)
        except OSError:
                pass
        for s in (a, b):
                try:
                        s.close()
                except OSError:
                        pass
while True:
        client, _ = listener.accept()
        server = socket.create_connection((upstream[0], int(upstream[1])))
        threading.Thread(target=pipe, args=(client, server, False), daemon=True).start()
        threading.Thread(target=pipe, args=(server, client, True), daemon=True).start()
EOF
        PROXY_PID=$!
        trap 'registry_stop; kill "$PROXY_PID" 2>/dev/null || true' EXIT
        local port
        for _ in $(seq 50); do [[ -s $WORK/proxy.port ]] && break; sleep 0.1; done
        port=$(cat "$WORK/proxy.port")
        "$TOOL" pull "$WORK/store-gone" "docker://127.0.0.1:$port/tonari/test:v1" --plain-http 2>"$WORK/gone.log" &
        local pull_pid=$!
        # Wait until the big layer is on its way, then take the registry away.
        for _ in $(seq 100); do grep -q 'pull: fetching' "$WORK/gone.log" && break; sleep 0.1; done
        registry_stop
        kill "$PROXY_PID"
        local rc=0
        wait "$pull_pid" || rc=$?
        ((rc != 0))
        assert_eq "" "$("$TOOL" list "$WORK/store-gone")"
        # Later, with the registry back, the same pull works.
        registry_start "$WORK/registry-gone"
        trap registry_stop EXIT # the testcase's subshell: stopped even when an assertion fails
        compare_pull "$WORK/store-gone" "docker://$REGISTRY_HOST/tonari/test:v1" --plain-http
        registry_stop
}

# A layout whose only layer is the given tar, for hostile content.
layout_with_layer() {
        local dir=$1 tar=$2
        rm -rf "$dir"
        umoci init --layout "$dir"
        umoci new --image "$dir:bad"
        umoci raw add-layer --image "$dir:bad" "$tar"
}

testcase_hostile_layers() {
        local name
        for name in traversal absolute-traversal long-name nul-target link-outside huge-header; do
                python3 - "$WORK/$name.tar" "$name" <<'EOF'
import io, sys, tarfile
path, kind = sys.argv[1], sys.argv[2]
t = tarfile.open(path, "w", format=tarfile.PAX_FORMAT)
def add(name, kind=tarfile.REGTYPE, data=b"x", link=""):
        info = tarfile.TarInfo(name)
        info.type, info.linkname = kind, link
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        t.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
if kind == "traversal":
        add("etc/../../escaped")
elif kind == "absolute-traversal":
        add("/../../../tmp/escaped")
elif kind == "long-name":
        add("a/" + "n" * 300)
elif kind == "nul-target":
        add("ok")
        add("link", tarfile.LNKTYPE, link="missing/file")
elif kind == "link-outside":
        add("ok")
        add("link", tarfile.LNKTYPE, link="../../etc/passwd")
elif kind == "huge-header":
        # A pax header of 16 MiB: a name no file system takes.
        add("a/" + "x" * (16 << 20))
t.close()
EOF
                layout_with_layer "$WORK/bad-$name" "$WORK/$name.tar"
                assert_rc 74 "$TOOL" pull "$WORK/store-hostile" "oci:$WORK/bad-$name:bad"
        done
        # Nothing was written outside the store, nothing stays in it.
        [[ ! -e /tmp/escaped && ! -e $WORK/escaped ]]
        assert_eq "" "$("$TOOL" list "$WORK/store-hostile")"
        assert_eq 0 "$(find "$WORK/store-hostile/layers" -type f | wc -l)" "layers of hostile images"
        # Symlinks pointing anywhere are data, not paths: stored as they are.
        python3 - "$WORK/symlinks.tar" <<'EOF'
import sys, tarfile
t = tarfile.open(sys.argv[1], "w", format=tarfile.PAX_FORMAT)
for name, target in (("up", "../../../../etc/shadow"), ("abs", "/etc/shadow"), ("dir", "/")):
        info = tarfile.TarInfo(name)
        info.type, info.linkname = tarfile.SYMTYPE, target
        t.addfile(info)
info = tarfile.TarInfo("dir/through-the-link")
info.size = 0
t.addfile(info)
t.close()
EOF
        layout_with_layer "$WORK/bad-symlinks" "$WORK/symlinks.tar"
        # dir/through-the-link below a symlink: refused (the ToC's parent is not a directory).
        assert_rc 74 "$TOOL" pull "$WORK/store-hostile" "oci:$WORK/bad-symlinks:bad"
}

run_testcases
