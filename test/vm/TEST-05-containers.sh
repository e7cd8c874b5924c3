#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# TEST-05-containers: the workload images of test/images/make-workload-image run with crun from a
# locally unpacked root file system (the data disk of test/images/make-workload-disk) under an
# overlay with a fresh upper layer, as bench/imagefs-rtt runs them, and do the
# paper's tasks (seed 004, §6.3): echo helloworld, python3 print(2**32-1), nginx answering HTTP,
# mariadb accepting a connection. This proves the images and the crun scaffolding
# (containers-lib.sh, container-run.py) that the tonari-imagefs variant will reuse.
# Run: test/vm/run-with-packages build/deb --with=test/vm/containers-lib.sh \
#        --with=test/vm/container-run.py --images=base,python3,nginx,mariadb test/vm/TEST-05-containers.sh
# (as meson's vm suite does).
set -eux
set -o pipefail

# shellcheck source-path=SCRIPTDIR source=testlib.sh
. "$TONARI_VM_SHARE/testlib.sh"
# shellcheck source-path=SCRIPTDIR source=containers-lib.sh
. "$TONARI_VM_SHARE/artifacts/containers-lib.sh"

work=/var/lib/tonari-test-containers
ctr_images_mount
trap 'umount "$CTR_DISK"' EXIT

# run_workload NAME ID: runs the image on an overlay of its unpacked tree (ctr_overlay_mount) and
# leaves the container (a service keeps running) for the caller's checks. Sets $dir; the caller's
# EXIT trap calls cleanup_workload.
run_workload() {
        local name=$1 id=$2 line
        dir=$work/$id
        mkdir -p "$dir/bundle"
        ctr_bundle_config "$name" "$dir/bundle/config.json"
        ctr_overlay_mount "$(ctr_rootfs "$name")" "$dir"
        line=$(ctr_run "$id" "$dir/bundle" "$name" "$dir/output") || {
                cat "$dir/output" || true
                return 1
        }
        echo "$name: $line"
        assert_match '^create=[0-9.]+ run=[0-9.]+$' "$line" "container-run.py's times"
}

cleanup_workload() {
        ctr_delete "$1"
        ctr_umount "$work/$1"
}

testcase_layers() {
        # The images are layered like real ones: a shared base (minbase, ca-certificates), then
        # the workload's packages, then its own files.
        local layers
        layers=$(python3 - "$CTR_IMAGES" <<'EOF'
import json, sys
layout = sys.argv[1]
blob = lambda d: json.load(open(layout + "/blobs/" + d.replace(":", "/")))
index = json.load(open(layout + "/index.json"))
tags = {m["annotations"]["org.opencontainers.image.ref.name"]: blob(m["digest"]) for m in index["manifests"]}
print(" ".join("%s:%d" % (t, len(tags[t]["layers"])) for t in ("base", "python3", "nginx", "mariadb")))
# The bottom layers are the same blobs in every image.
print(len({tuple(l["digest"] for l in m["layers"][:2]) for m in tags.values()}))
EOF
)
        assert_eq "base:2 python3:3 nginx:4 mariadb:4" "$(head -n1 <<<"$layers")" "layers per image"
        assert_eq 1 "$(tail -n1 <<<"$layers")" "different pairs of base layers"
}

testcase_base_echo() {
        trap 'cleanup_workload t5-base' EXIT
        run_workload base t5-base
        assert_eq helloworld "$(cat "$dir/output")" "output of echo helloworld"
        # The base layer's non-ASCII file name arrives intact through umoci and the overlay.
        local f="$dir/bundle/rootfs/usr/share/ca-certificates/mozilla/NetLock_Arany_=Class_Gold=_Főtanúsítvány.crt"
        assert_match 'BEGIN CERTIFICATE' "$(head -n1 "$f")" "certificate with a UTF-8 name"
}

testcase_python3() {
        trap 'cleanup_workload t5-python3' EXIT
        run_workload python3 t5-python3
        assert_eq 4294967295 "$(cat "$dir/output")" "output of python3 -c 'print(2**32-1)'"
}

testcase_nginx() {
        trap 'cleanup_workload t5-nginx' EXIT
        # The test bed's image has Debian's Apache for TEST-19, started at boot on port 80: the
        # container's nginx shares the host's network and needs the port.
        systemctl stop apache2.service 2>/dev/null || true
        run_workload nginx t5-nginx
        # container-run.py saw a 200; the page is the image's own (its last layer).
        assert_eq "tonari workload nginx" "$(curl -fsS http://127.0.0.1/)" "page served by nginx"
        assert_eq 404 "$(curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1/missing)" "status of a missing page"
        # The access log goes to the container's stdout (symbolic link in the image).
        timeout 10 bash -c "until grep -q 'GET /missing' '$dir/output'; do sleep 0.2; done"
        # The container is a scope of its own (crun's systemd cgroup manager).
        assert_match '^0::/system.slice/crun-t5-nginx.scope/' "$(cat "/proc/$(cat "$dir/bundle/container.pid")/cgroup")" \
                "cgroup of the container"
        # The worker processes run as www-data, as the image's nginx.conf says.
        assert_match www-data "$(ps -o user= --ppid "$(cat "$dir/bundle/container.pid")" | sort -u | xargs)" \
                "user of nginx's workers"
}

testcase_mariadb() {
        trap 'cleanup_workload t5-mariadb' EXIT
        run_workload mariadb t5-mariadb
        # A real client session over the server's socket, from inside the container (the image's
        # own client, root authenticated by unix_socket).
        assert_eq 2 "$(crun exec t5-mariadb mariadb -N -B -e 'SELECT 1+1')" "SELECT 1+1 through mariadb"
        assert_eq 8388608 "$(crun exec t5-mariadb mariadb -N -B -e 'SELECT @@innodb_log_file_size')" \
                "redo log size of the image's configuration"
        # The data files it wrote were copied up to the container's upper layer.
        [[ -e $dir/upper/var/lib/mysql/ibdata1 ]]
        local root
        root=$(ctr_rootfs mariadb)
        assert_eq "$(awk -F: '$1 == "mysql" { print $3 }' "$root/etc/passwd")" \
                "$(stat -c %u "$root/var/lib/mysql/mysql")" "owner of the data directory (the image's mysql)"
}

run_testcases
