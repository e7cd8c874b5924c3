#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# TEST-08-imagefs: tonari-imagefs as the system service it ships as. The packages installed, the
# workload images of test/images/ pushed to a loopback docker-registry and pulled through
# tonari-relay, then: the service's hardening and Features on a real systemd host; containers run
# with crun on MountOverlay of a relay image (echo helloworld, python3 print(2**32-1)), with their
# output checked and no metadata round trip; the merged tree equal to the image as umoci unpacked it;
# a relay outage (cached reads keep working, an uncached read is EIO after ReadTimeoutSec=, reads work
# again when the relay is back, without a remount).
# Run: test/vm/run-with-packages build/deb --with=test/vm/containers-lib.sh \
#        --with=test/vm/container-run.py --images=base,python3,nginx,mariadb test/vm/TEST-08-imagefs.sh
set -eux
set -o pipefail

# shellcheck source-path=SCRIPTDIR source=testlib.sh
. "$TONARI_VM_SHARE/testlib.sh"
# shellcheck source-path=SCRIPTDIR source=containers-lib.sh
. "$TONARI_VM_SHARE/artifacts/containers-lib.sh"

A=$TONARI_VM_SHARE/artifacts
work=/var/lib/tonari-test-imagefs
REGISTRY=127.0.0.1:5000
registry_pid=''
mkdir -p "$work"

cleanup() {
        local m
        for m in $(findmnt -rn -o TARGET | grep "^$work/" | sort -r); do
                umount -l "$m" || true
        done
        systemctl stop tonari-imagefs.service tonari-relay.service || true
        [[ -z $registry_pid ]] || kill "$registry_pid" || true
        umount "$CTR_DISK" || true
}
trap cleanup EXIT

ctr_images_mount
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$A"/tonari_*.deb "$A"/tonari-relay_*.deb "$A"/tonari-imagefs_*.deb
dpkg -s tonari-imagefs | grep -q '^Status: install ok installed'

# The registry with a configuration of our own: filesystem storage, loopback only.
mkdir -p "$work/registry"
cat >"$work/registry.yml" <<EOT
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $work/registry
http:
  addr: $REGISTRY
EOT
docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
registry_pid=$!
for _ in $(seq 100); do
        curl -fso /dev/null "http://$REGISTRY/v2/" && break
        sleep 0.1
done
curl -fso /dev/null "http://$REGISTRY/v2/"
for w in base python3; do
        skopeo copy --quiet --dest-tls-verify=false "oci:$CTR_IMAGES:$w" "docker://$REGISTRY/tonari/$w:latest"
done

mkdir -p /etc/tonari/tonari-relay.conf.d /etc/tonari/tonari-imagefs.conf.d
printf '[Pull]\nInsecureRegistries=%s\n' "$REGISTRY" >/etc/tonari/tonari-relay.conf.d/50-test.conf
# Short, so that the outage test sees the timeout soon.
printf '[ImageFS]\nReadTimeoutSec=5s\n' >/etc/tonari/tonari-imagefs.conf.d/50-test.conf
systemctl restart tonari-relay.service
# Restart, not start: installing the package started the service already, with the default
# ReadTimeoutSec= (30 s), and the drop-in above would not take effect.
systemctl restart tonari-imagefs.service
for w in base python3; do
        tonarictl image pull --plain-http "docker://$REGISTRY/tonari/$w:latest" "$w"
done

# mounts_field TARGET FIELD: a field of TARGET's entry of 'tonarictl image mounts --json'.
mounts_field() {
        tonarictl --json=short image mounts | python3 -c '
import json, sys
for m in json.load(sys.stdin):
    if m["target"] == sys.argv[1]:
        print(m[sys.argv[2]])' "$1" "$2"
}

testcase_service() {
        systemctl is-active tonari-imagefs.service
        busctl status org.tonari.ImageFS1 >/dev/null
        # What this host offers: FUSE, overlayfs (Debian's module), systemd's fd store, the forwarder
        # (its unit is pulled in); Debian's 6.1 does not resend requests in flight.
        local features
        features=$(busctl --json=short get-property org.tonari.ImageFS1 /org/tonari/ImageFS1 org.tonari.ImageFS1 Features)
        echo "$features"
        assert_eq "fuse=True overlayfs=True fdstore=True forwarder=True resend=False" "$(python3 -c '
import json, sys
print(" ".join("%s=%s" % (n, a) for n, a, d in json.loads(sys.argv[1])["data"]))' "$features")"
        # The unit as installed, scored online: the exposure its comment argues for.
        local exposure
        exposure=$(systemd-analyze security tonari-imagefs.service | sed -n 's/.*Overall exposure level for tonari-imagefs.service: \([0-9.]*\).*/\1/p')
        echo "systemd-analyze security tonari-imagefs.service: $exposure"
        assert_le "$exposure" 5.0 "exposure of tonari-imagefs.service"
        # A non-root caller is refused by the installed policy.
        assert_rc_match 4 "access denied" setpriv --reuid=65534 --regid=65534 --clear-groups -- \
                tonarictl image mount base "$work"
}

# run_container NAME ID: NAME mounted by MountOverlay at $work/ID/bundle/rootfs and run with crun.
run_container() {
        local name=$1 id=$2 dir=$work/$2 line
        mkdir -p "$dir/upper" "$dir/work" "$dir/bundle/rootfs"
        tonarictl image mount --upper="$dir/upper" --work="$dir/work" "$name" "$dir/bundle/rootfs"
        ctr_bundle_config "$name" "$dir/bundle/config.json"
        line=$(ctr_run "$id" "$dir/bundle" "$name" "$dir/output") || {
                cat "$dir/output" || true
                return 1
        }
        echo "$name on tonari-imagefs: $line"
        ctr_check_output "$name" "$dir/output"
        assert_eq 0 "$(mounts_field "$dir/bundle/rootfs" metadataRoundTrips)" "metadata round trips"
        assert_eq 0 "$(mounts_field "$dir/bundle/rootfs" errors)" "errors"
        tonarictl image mounts
        ctr_delete "$id"
        tonarictl image unmount "$dir/bundle/rootfs"
}

testcase_base_echo() {
        run_container base t8-base
        assert_eq helloworld "$(cat "$work/t8-base/output")"
}

testcase_python3() {
        run_container python3 t8-python3
        assert_eq 4294967295 "$(cat "$work/t8-python3/output")"
}

# The merged tree of MountImage against the image as umoci unpacked it on the host: every entry's
# type, mode, owner, size (but directories', which depend on the file system), link target and mtime.
listing() {
        (cd "$1" && {
                find . ! -type d -printf '%y %m %U:%G %s %T@ %p -> %l\n'
                find . -type d -printf '%y %m %U:%G - %T@ %p\n'
        } | LC_ALL=C sort)
}

testcase_tree_equals_unpack() {
        local t=$work/tree
        mkdir -p "$t"
        tonarictl image mount base "$t"
        listing "$(ctr_rootfs base)" >"$work/expected.txt"
        listing "$t" >"$work/got.txt"
        # Every file, link and device must match exactly, and so must the set of directories. A
        # directory's attributes may differ in one known way (issue 17, not fixed yet): the relay's
        # ToC gives a directory implied by a path in an upper layer (no tar header there) the
        # defaults 755 0:0 mtime 0, and overlayfs shows the topmost layer's, where umoci keeps the
        # lower layer's. Such directories are counted and printed; any other difference fails.
        python3 - "$work/expected.txt" "$work/got.txt" <<'EOT'
import sys

def load(path):
    files, dirs = set(), {}
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("d "):
            kind, mode, owner, _, mtime, name = line.split(" ", 5)
            dirs[name] = (mode, owner, float(mtime))
        else:
            files.add(line)
    return files, dirs

ef, ed = load(sys.argv[1])
gf, gd = load(sys.argv[2])
bad = sorted(ef ^ gf)
for line in bad[:40]:
    print(("missing: " if line in ef else "extra:   ") + line)
if ed.keys() != gd.keys():
    print("directories differ:", sorted(ed.keys() ^ gd.keys())[:40])
    sys.exit(1)
implied = [n for n in ed if ed[n] != gd[n] and gd[n] == ("755", "0:0", 0.0)]
other = [n for n in ed if ed[n] != gd[n] and gd[n] != ("755", "0:0", 0.0)]
for n in other[:40]:
    print("directory attributes differ:", n, ed[n], gd[n])
print(f"{len(ef)} files and {len(ed)} directories compared; {len(implied)} implied directories "
      f"show the ToC's defaults (known defect, issue 17): {sorted(implied)[:10]}")
sys.exit(1 if bad or other else 0)
EOT
        assert_ge "$(wc -l <"$work/got.txt")" 3000 "entries compared"
        cmp "$(ctr_rootfs base)/usr/bin/dpkg" "$t/usr/bin/dpkg"
        tonarictl image unmount "$t"
}

testcase_relay_outage() {
        local t=$work/outage start ms
        mkdir -p "$t"
        tonarictl image mount base "$t"
        sha256sum "$t/usr/bin/dpkg" >"$work/dpkg.sha"
        systemctl stop tonari-relay.service
        # Metadata and cached contents need no relay.
        sync
        echo 3 >/proc/sys/vm/drop_caches
        ls -lR "$t/usr/share/doc" >/dev/null
        assert_eq "$(cat "$work/dpkg.sha")" "$(sha256sum "$t/usr/bin/dpkg")" "cached content"
        # An uncached read fails with EIO after ReadTimeoutSec=5s, not before and not much later.
        start=${EPOCHREALTIME/./}
        assert_rc_match 1 "Input/output error" cat "$t/usr/bin/perl"
        ms=$(((${EPOCHREALTIME/./} - start) / 1000))
        echo "uncached read during the outage: EIO after $ms ms"
        assert_ge "$ms" 4800 "ms until EIO"
        # The kernel may ask twice (readahead, then the read), each waiting the timeout; requests
        # queued behind the first fail at once once it has waited in vain.
        assert_le "$ms" 15000 "ms until EIO"
        # The relay back: the same read works again, same mount.
        systemctl start tonari-relay.service
        start=${EPOCHREALTIME/./}
        for _ in $(seq 20); do
                cmp "$(ctr_rootfs base)/usr/bin/perl" "$t/usr/bin/perl" 2>/dev/null && break
                sleep 0.5
        done
        cmp "$(ctr_rootfs base)/usr/bin/perl" "$t/usr/bin/perl"
        echo "relay back: reads work again after $(((${EPOCHREALTIME/./} - start) / 1000)) ms"
        assert_ge "$(mounts_field "$t" errors)" 1 "errors counted"
        tonarictl image unmount "$t"
}

run_testcases
