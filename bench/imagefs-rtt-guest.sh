#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The guest half of bench/imagefs-rtt (seed 004, §6.3 and Figs 5-8), run inside the VM test bed:
# container create time and run time against the round-trip time to the storage node, per
# workload image and per way of getting the image's files.
#
# The storage node is a network namespace (tonari-storage, 10.231.0.2) behind a veth pair; the
# worker is the guest itself (10.231.0.1). The RTT is made with netem: half of it as delay on each
# side's egress (so each direction of the link carries half, as on a real path); RTT 0 means no
# qdisc at all. No bandwidth limit. The storage node runs
#   - docker-registry (our own configuration: filesystem storage, its namespace's address only),
#     which the workload images are pushed to with skopeo;
#   - kernel nfsd, NFSv4.2 only, exporting the unpacked images (the paper's baseline), mounted by
#     the worker once per run of this script (like a node's permanent mount);
#   - tonari-relay, pulling the images from the registry, for tonari-imagefs (when installed).
# The unpacked images are the test bed's data disk (test/images/make-workload-disk, unpacked by
# umoci on the host: in the TCG guest that takes minutes). The same trees are the worker's local
# copy and what nfsd exports: local and NFS runs read the same blocks from the same disk, NFS
# through the shaped link.
#
# Modes (--modes, in this order of rotation): each is a function mode_NAME VERB WORKLOAD DIR with
# the verbs "before" (untimed: make the run cold or warm), "mount" (timed: give DIR/bundle/rootfs
# the image's files) and "umount" (untimed), plus "check" (can the mode run here? prints why not).
#   local             overlay: lower = the worker's unpacked copy, upper = fresh local directory
#   nfs               overlay: lower = the image's tree on the NFS mount, upper = local
#   imagefs_toc_cold  tonari-imagefs MountOverlay; its content cache and the page cache dropped
#   imagefs_toc_warm  tonari-imagefs MountOverlay after an unmeasured run of the same workload
#   imagefs_notoc     tonari-imagefs MountOverlay in no-ToC mode, caches dropped
# Every cold mode (all but imagefs_toc_warm) drops the page, dentry and inode caches before each
# run (sync; echo 3 > /proc/sys/vm/drop_caches): the worker's and the storage node's, which share
# this kernel.
#
# Times (seconds; the mount from bash's $EPOCHREALTIME, the rest from CLOCK_MONOTONIC in
# container-run.py; the guest has no time synchronisation that could step the clock):
#   mount   the mode's "mount" verb: from "start preparing the rootfs" to a mounted rootfs
#   create  mount + `crun create` (the container's init is in its namespaces on that rootfs,
#           waiting to exec the task): the paper's "from the snapshot's stat to /tasks/start"
#   run     `crun start` until the task exited (base: echo helloworld; python3: print(2**32-1);
#           output checked) or was ready (nginx: answered GET / with 200; mariadb: sent its
#           handshake on its socket): the paper's "/tasks/start to /tasks/exit"
#   total   create + run
# Each run prints one line:
#   RESULT rtt=MS workload=W mode=M rep=N mount=S create=S run=S total=S [imagefs counters]
# bench/imagefs-rtt-report.py turns them into the table of medians, spreads and ratios to nfs.
#
# usage: imagefs-rtt-guest.sh [--rtts=0,10,50] [--workloads=base,python3,nginx,mariadb]
#                             [--modes=local,nfs,imagefs_toc_cold,imagefs_toc_warm,imagefs_notoc]
#                             [--reps=3]
# Needs what test/vm/run-with-packages --images=... --with=... gives: the images' data disk,
# containers-lib.sh and container-run.py in the artifacts, and for the imagefs modes tonari's
# packages.
set -eu
set -o pipefail

rtts=0,10,50 workloads=base,python3,nginx,mariadb reps=3
modes=local,nfs,imagefs_toc_cold,imagefs_toc_warm,imagefs_notoc
for a in "$@"; do
        case "$a" in
        --rtts=*) rtts=${a#*=} ;;
        --workloads=*) workloads=${a#*=} ;;
        --modes=*) modes=${a#*=} ;;
        --reps=*) reps=${a#*=} ;;
        *) echo "unknown argument: $a" >&2; exit 2 ;;
        esac
done
IFS=, read -ra rtts <<<"$rtts"
IFS=, read -ra workloads <<<"$workloads"
IFS=, read -ra modes <<<"$modes"
[[ $reps =~ ^[1-9][0-9]*$ ]] || { echo "--reps wants a positive number, got '$reps'" >&2; exit 2; }

A=${TONARI_VM_SHARE:?}/artifacts
# shellcheck source-path=SCRIPTDIR source=../test/vm/containers-lib.sh
. "$A/containers-lib.sh"

NS=tonari-storage
W_IF=bench-w S_IF=bench-s
W_ADDR=10.231.0.1 S_ADDR=10.231.0.2
REGISTRY=$S_ADDR:5000
RELAY_PORT=7890
WORK=/var/lib/tonari-bench
STORAGE=/var/lib/tonari-bench-storage
NFS_MNT=/mnt/tonari-bench-nfs

die() { echo "imagefs-rtt-guest: $*" >&2; exit 1; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }

registry_pid=''
cleanup() {
        local d
        for d in "$WORK"/run/*; do
                [[ -d $d ]] || continue
                ctr_delete "$(basename "$d")"
                umount "$d/bundle/rootfs" 2>/dev/null || true
        done
        imagefs_teardown || true
        umount "$NFS_MNT" 2>/dev/null || true
        if [[ -e /run/netns/$NS ]]; then
                ip netns exec "$NS" bash -c 'mount -t nfsd nfsd /proc/fs/nfsd && rpc.nfsd 0 && exportfs -au' \
                        >/dev/null 2>&1 || true
                [[ -z ${mountd_pid:-} ]] || kill "$mountd_pid" 2>/dev/null || true
        fi
        [[ -z $registry_pid ]] || kill "$registry_pid" 2>/dev/null || true
        ip link del "$W_IF" 2>/dev/null || true
        ip netns del "$NS" 2>/dev/null || true
        umount "$CTR_DISK" 2>/dev/null || true
}
trap cleanup EXIT

drop_caches() {
        sync
        echo 3 >/proc/sys/vm/drop_caches
}

# ---- the storage node and the link ----

storage_up() {
        ip netns add "$NS"
        ip link add "$W_IF" type veth peer name "$S_IF"
        ip link set "$S_IF" netns "$NS"
        ip addr add "$W_ADDR/24" dev "$W_IF"
        ip link set "$W_IF" up
        ip -n "$NS" addr add "$S_ADDR/24" dev "$S_IF"
        ip -n "$NS" link set "$S_IF" up
        ip -n "$NS" link set lo up
}

# set_rtt MS: half the delay on each side's egress. netem's queue limit is raised from 1000
# packets so that a full window at 50 ms is delayed, never dropped.
set_rtt() {
        local ms=$1 half
        half=$(awk -v ms="$ms" 'BEGIN { printf "%g", ms / 2 }')
        if [[ $ms == 0 ]]; then
                tc qdisc del dev "$W_IF" root 2>/dev/null || true
                tc -n "$NS" qdisc del dev "$S_IF" root 2>/dev/null || true
        else
                tc qdisc replace dev "$W_IF" root netem delay "${half}ms" limit 100000
                tc -n "$NS" qdisc replace dev "$S_IF" root netem delay "${half}ms" limit 100000
        fi
}

# measure_rtt: the median of 20 TCP connects to the registry, in ms (a connect is one round trip).
measure_rtt() {
        python3 - "$S_ADDR" 5000 <<'EOF'
import socket, statistics, sys, time
t = []
for _ in range(20):
        t0 = time.monotonic()
        socket.create_connection((sys.argv[1], int(sys.argv[2]))).close()
        t.append((time.monotonic() - t0) * 1000)
print("%.2f" % statistics.median(t))
EOF
}

registry_start() {
        mkdir -p "$STORAGE/registry"
        cat >"$STORAGE/registry.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $STORAGE/registry
http:
  addr: $REGISTRY
EOF
        ip netns exec "$NS" docker-registry serve "$STORAGE/registry.yml" >"$STORAGE/registry.log" 2>&1 &
        registry_pid=$!
        for _ in $(seq 200); do
                curl -fso /dev/null "http://$REGISTRY/v2/" && return 0
                kill -0 "$registry_pid" 2>/dev/null || break
                sleep 0.1
        done
        cat "$STORAGE/registry.log" >&2
        die "docker-registry did not start"
}

# nfs_start: kernel nfsd in the storage node's namespace (nfsd, its export table and mountd's
# caches are per network namespace), NFSv4.2 only, exporting the unpacked images
# ($CTR_DISK/bundles) as the NFSv4 root.
# The grace period is cut to its minimum (10 s) and waited out, so that no run meets it. Without
# rpcbind (masked in the test bed) mountd only serves the kernel's export caches, all NFSv4 needs.
nfs_start() {
        # shellcheck disable=SC2016 # expanded by the inner shell
        ip netns exec "$NS" bash -euc '
                mount -t nfsd nfsd /proc/fs/nfsd
                echo 10 >/proc/fs/nfsd/nfsv4gracetime
                echo 10 >/proc/fs/nfsd/nfsv4leasetime
                exportfs -o ro,no_subtree_check,no_root_squash,fsid=0 "$1/24:$2"
                rpc.mountd --no-nfs-version 3 --no-udp
                rpc.nfsd --no-nfs-version 3 --no-udp 8
        ' _ "$W_ADDR" "$CTR_DISK/bundles"
        mountd_pid=$(pgrep -n -x rpc.mountd) || die "rpc.mountd did not start"
        mkdir -p "$NFS_MNT"
        mount -t nfs4 -o ro,vers=4.2 "$S_ADDR:/" "$NFS_MNT"
        local start=$SECONDS
        # Reading a file needs an OPEN, which waits for the end of the grace period.
        cat "$NFS_MNT/base/rootfs/etc/os-release" >/dev/null
        echo "nfs: grace period over after $((SECONDS - start)) s"
}

# ---- images ----

# prepare_images: every workload image pushed to the registry; its bundle configuration.
prepare_images() {
        local w t0
        mkdir -p "$WORK/config" "$WORK/run"
        for w in "${workloads[@]}"; do
                t0=$(now)
                skopeo copy --quiet --dest-tls-verify=false "oci:$CTR_IMAGES:$w" "docker://$REGISTRY/tonari/$w:latest"
                echo "image $w: pushed to the registry in $(elapsed "$t0" "$(now)") s"
                ctr_bundle_config "$w" "$WORK/config/$w.json"
        done
}

# ---- modes: mode_NAME check|before|mount|umount WORKLOAD DIR ----

mode_local() {
        case $1 in
        check) ;;
        before) drop_caches ;;
        mount) ctr_overlay_mount "$(ctr_rootfs "$2")" "$3" ;;
        umount) ctr_umount "$3" ;;
        esac
}

mode_nfs() {
        case $1 in
        check) mountpoint -q "$NFS_MNT" || { echo "the NFS export is not mounted"; return 1; } ;;
        before) drop_caches ;;
        mount) ctr_overlay_mount "$NFS_MNT/$2/rootfs" "$3" ;;
        umount) ctr_umount "$3" ;;
        esac
}

# ---- tonari-imagefs (issue 17): the three imagefs modes. ----
# Written against org.tonari.ImageFS1 as the imagefs branch has it (MountOverlay(s image, s target,
# s upperdir, s workdir, a{sv} options) -> s id with options Mode "toc"/"no-toc"; Unmount(s id);
# ListMounts with per-mount counters; tonari-imagefs.conf's [ImageFS] Relay=, CacheDirectory=)
# before it was merged; what that branch did not settle yet is marked ASSUMED. Until a
# tonari-imagefs package exists every imagefs mode is skipped loudly: "tonari-imagefs not
# installed".
IMAGEFS_BUS=(busctl --quiet)
IMAGEFS_DEST=(org.tonari.ImageFS1 /org/tonari/ImageFS1 org.tonari.ImageFS1)
imagefs_ready=''

# imagefs_setup: tonari-relay on the storage node (its unit, joined to the namespace), listening
# on $S_ADDR:$RELAY_PORT, pulls every workload image from the registry; tonari-imagefs on the
# worker talks to it across the shaped link.
imagefs_setup() {
        [[ -z $imagefs_ready ]] || return 0
        imagefs_ready=no
        local deb
        for deb in tonari tonari-relay tonari-imagefs; do
                compgen -G "$A/${deb}_*.deb" >/dev/null || { echo "no $deb package in the artifacts"; return 1; }
        done
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$A"/tonari_*.deb "$A"/tonari-relay_*.deb \
                "$A"/tonari-imagefs_*.deb >/dev/null || { echo "the packages do not install"; return 1; }
        mkdir -p /etc/systemd/system/tonari-relay.service.d /etc/tonari/tonari-relay.conf.d
        printf '[Service]\nNetworkNamespacePath=/run/netns/%s\n' "$NS" \
                >/etc/systemd/system/tonari-relay.service.d/90-bench.conf
        printf '[Relay]\nListen=%s:%s\n[Pull]\nInsecureRegistries=%s\n' "$S_ADDR" "$RELAY_PORT" "$REGISTRY" \
                >/etc/tonari/tonari-relay.conf.d/90-bench.conf
        systemctl daemon-reload
        systemctl restart tonari-relay.service
        local w t0
        for w in "${workloads[@]}"; do
                t0=$(now)
                tonarictl --relay="$S_ADDR:$RELAY_PORT" image pull --plain-http \
                        "docker://$REGISTRY/tonari/$w:latest" "$w" >/dev/null
                echo "image $w: pulled by tonari-relay in $(elapsed "$t0" "$(now)") s"
        done
        # ASSUMED: Relay= takes HOST:PORT for TCP, as tonarictl's --relay= does.
        mkdir -p /etc/tonari/tonari-imagefs.conf.d
        printf '[ImageFS]\nRelay=%s:%s\n' "$S_ADDR" "$RELAY_PORT" >/etc/tonari/tonari-imagefs.conf.d/90-bench.conf
        systemctl restart tonari-imagefs.service
        imagefs_ready=yes
}

imagefs_teardown() {
        [[ $imagefs_ready == yes ]] || return 0
        systemctl stop tonari-imagefs.service tonari-relay.service
}

# imagefs_check: 0 when the imagefs modes can run (set up on first use); else prints why.
imagefs_check() {
        compgen -G "$A/tonari-imagefs_*.deb" >/dev/null || {
                echo "tonari-imagefs not installed (no tonari-imagefs package in the artifacts)"
                return 1
        }
        imagefs_setup
}

# imagefs_drop_content_cache: an empty content cache. ASSUMED: there is no method for it, and the
# cache (CacheDirectory=, default /var/cache/tonari-imagefs) may be emptied while the daemon is
# stopped and nothing is mounted.
imagefs_drop_content_cache() {
        systemctl stop tonari-imagefs.service
        rm -rf --one-file-system /var/cache/tonari-imagefs/*
        systemctl start tonari-imagefs.service
}

# imagefs_mount_overlay toc|no-toc WORKLOAD DIR: the image (the relay's name for it: the workload's)
# mounted by tonari-imagefs, its layers stacked by overlayfs at DIR/bundle/rootfs over a fresh local
# upper layer. The mount's id goes to DIR/imagefs-id. The time of the call (busctl included, as the
# NFS and local modes include mount(8)) is the mount time.
imagefs_mount_overlay() {
        local mode=$1 w=$2 dir=$3 reply
        mkdir -p "$dir/upper" "$dir/work" "$dir/bundle/rootfs"
        reply=$("${IMAGEFS_BUS[@]}" call "${IMAGEFS_DEST[@]}" MountOverlay 'ssssa{sv}' \
                "$w" "$dir/bundle/rootfs" "$dir/upper" "$dir/work" 1 Mode s "$mode")
        reply=${reply#s \"}
        echo "${reply%\"}" >"$dir/imagefs-id"
}

imagefs_umount() {
        "${IMAGEFS_BUS[@]}" call "${IMAGEFS_DEST[@]}" Unmount s "$(cat "$2/imagefs-id")"
        rm -rf --one-file-system "$2"
}

mode_imagefs_toc_cold() {
        case $1 in
        check) imagefs_check ;;
        before) imagefs_drop_content_cache; drop_caches ;;
        mount) imagefs_mount_overlay toc "$2" "$3" ;;
        umount) imagefs_umount "$2" "$3" ;;
        esac
}

mode_imagefs_toc_warm() {
        case $1 in
        check) imagefs_check ;;
        # An unmeasured run of the same workload fills the content cache (and the page cache).
        before) one_run "$2" imagefs_toc_warm_priming 0 >/dev/null ;;
        mount) imagefs_mount_overlay toc "$2" "$3" ;;
        umount) imagefs_umount "$2" "$3" ;;
        esac
}
mode_imagefs_toc_warm_priming() {
        case $1 in
        before) ;;
        *) mode_imagefs_toc_warm "$@" ;;
        esac
}

mode_imagefs_notoc() {
        case $1 in
        check) imagefs_check ;;
        before) imagefs_drop_content_cache; drop_caches ;;
        mount) imagefs_mount_overlay no-toc "$2" "$3" ;;
        umount) imagefs_umount "$2" "$3" ;;
        esac
}

# imagefs_counters DIR: " key=value..." of the mount's counters from ListMounts (metadata round
# trips, bytes fetched, cache hits and misses, ToC load time), appended to the RESULT line.
imagefs_counters() {
        busctl --json=short call "${IMAGEFS_DEST[@]}" ListMounts | python3 -c '
import json, sys
want = sys.argv[1]
for mount_id, kind, image, target, props in json.load(sys.stdin)["data"][0]:
        if mount_id == want:
                keys = ["MetadataRoundTrips", "BytesFetched", "CacheHits", "CacheMisses", "ToCLoadUSec"]
                print("".join(" %s=%s" % (k, props[k]["data"]) for k in keys if k in props))
' "$(cat "$1/imagefs-id")"
}

# ---- one measured run ----

# one_run WORKLOAD MODE REP: prints the RESULT line.
one_run() {
        local w=$1 mode=$2 rep=$3 id dir t0 t1 line out counters=''
        id=bench-$w-${mode//_/-}-$rep
        dir=$WORK/run/$id
        rm -rf "$dir"
        mkdir -p "$dir/bundle"
        cp "$WORK/config/$w.json" "$dir/bundle/config.json"
        "mode_$mode" before "$w" "$dir"
        t0=$(now)
        "mode_$mode" mount "$w" "$dir"
        t1=$(now)
        line=$(ctr_run "$id" "$dir/bundle" "$w" "$dir/output") || {
                cat "$dir/output" >&2 || true
                die "run $id failed"
        }
        ctr_check_output "$w" "$dir/output" || die "run $id printed the wrong output"
        [[ $mode != imagefs_* ]] || counters=$(imagefs_counters "$dir")
        ctr_delete "$id"
        "mode_$mode" umount "$w" "$dir"
        # $line is "create=S run=S" (crun create; crun start until exit or ready).
        out=$(awk -v t0="$t0" -v t1="$t1" -v line="$line" 'BEGIN {
                split(line, f, /[ =]/)
                mount = t1 - t0
                printf "mount=%.6f create=%.6f run=%.6f total=%.6f", mount, mount + f[2], f[4], mount + f[2] + f[4]
        }')
        echo "RESULT rtt=$rtt workload=$w mode=$mode rep=$rep $out$counters"
}

# ---- main ----

echo "guest: $(nproc) CPUs, $(free -m | awk '/^Mem:/ { print $2 }') MiB, kernel $(uname -r)," \
        "crun $(crun --version | awk 'NR == 1 { print $3 }'), $(date -u +%Y-%m-%dT%H:%M:%SZ)"
for m in "${modes[@]}"; do
        declare -F "mode_$m" >/dev/null || die "unknown mode '$m'"
done
# Debian's kernel has these as modules; the tonari kernel (no modules) lacks netem, veth and nfsd.
for mod in veth sch_netem nfsd nfsv4 overlay; do
        modprobe -q "$mod" 2>/dev/null || true
        [[ -d /sys/module/$mod ]] ||
                die "kernel $(uname -r) lacks $mod: run bench/imagefs-rtt on the test bed's stock Debian kernel"
done
ctr_images_mount
storage_up
registry_start
prepare_images
nfs_start

active=()
for m in "${modes[@]}"; do
        # Not in a subshell: a check may set things up (tonari-relay, tonari-imagefs).
        if "mode_$m" check >"$WORK/why"; then
                active+=("$m")
        else
                why=$(tail -n1 "$WORK/why")
                echo "SKIP mode=$m reason=${why:-not available}"
        fi
done
((${#active[@]} > 0)) || die "no mode can run"

for rtt in "${rtts[@]}"; do
        set_rtt "$rtt"
        echo "RTT rtt=$rtt measured=$(measure_rtt)"
        for ((rep = 1; rep <= reps; rep++)); do
                for w in "${workloads[@]}"; do
                        # The order of the modes rotates with the repetition, so that none always
                        # comes first (or after the same other) in a workload's series.
                        n=${#active[@]}
                        for ((i = 0; i < n; i++)); do
                                one_run "$w" "${active[(i + rep - 1) % n]}" "$rep"
                        done
                done
        done
done
set_rtt 0
