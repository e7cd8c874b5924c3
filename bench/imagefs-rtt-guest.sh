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
# qdisc at all. No bandwidth limit (the link's bandwidth is measured: BANDWIDTH). The storage
# node runs
#   - kernel nfsd, NFSv4.2 only, exporting the unpacked images (the paper's baseline), mounted by
#     the worker once per run of this script (like a node's permanent mount);
#   - tonari-relay, which pulls the images from the OCI layout on the data disk, for
#     tonari-imagefs on the worker: the packaged D-Bus service (service_* modes, as a user runs
#     it) or the build tree's binary in its command-line mode (imagefs_* modes).
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
#   imagefs_toc_cold  tonari-imagefs (ToC), the layers stacked by overlayfs; content cache and page
#                     cache dropped; it records the files the workload opened (per image and layer)
#   imagefs_toc_warm  the same with the content cache holding the workload's files (from the last
#                     imagefs run of the workload, or an unmeasured cold one); page cache dropped
#   imagefs_notoc     tonari-imagefs in no-ToC mode, caches dropped
#   imagefs_toc_prefetch  cold as imagefs_toc_cold, with the files an earlier cold run recorded
#                     streamed into the cache in the background after the mount (--prefetch=)
#   service_toc_cold, service_toc_warm, service_notoc: the same through tonari-imagefs.service
#                     (see "tonari-imagefs as a user runs it" below); the default modes are local,
#                     nfs, the three service modes and imagefs_toc_prefetch (the service has no
#                     prefetch list yet)
# Every mode drops the page, dentry and inode caches before each run (sync; echo 3 >
# /proc/sys/vm/drop_caches): the worker's and the storage node's, which share this kernel.
# At RTT 0 it also measures sequential reads of the largest files of --seqread's workload (default:
# the last of --workloads) from local disk and through tonari-imagefs with a warm content cache
# (SEQREAD lines), and once the link's bandwidth (BANDWIDTH).
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
#   RESULT rtt=MS workload=W mode=M rep=N mount=S create=S run=S total=S [imagefs counters:
#          MetadataRoundTrips ContentRoundTrips BytesFetched CacheHits CacheMisses ToCBytes
#          ToCLoadUSec (the slowest layer's; they load in parallel) ToCLoadSumUSec PrefetchBytes
#          Errors, summed over the image's layers]
# bench/imagefs-rtt-report.py turns them into the table of medians, spreads and ratios to nfs.
#
# usage: imagefs-rtt-guest.sh [--rtts=0,10,50] [--workloads=base,python3,nginx,mariadb]
#                             [--modes=local,nfs,service_toc_cold,service_toc_warm,service_notoc,
#                                      imagefs_toc_cold,imagefs_toc_warm,imagefs_notoc,
#                                      imagefs_toc_prefetch] [--seqread=WORKLOAD|none]
#                             [--imagefs-processes=image|layer] [--notoc-workloads=base]
#                             [--skip=MODE:WORKLOAD,...] [--reps=3]
# Needs what test/vm/run-with-packages --images=... --with=... gives: the images' data disk,
# containers-lib.sh and container-run.py in the artifacts, and for the imagefs modes tonari's
# packages (tonari, tonari-relay) and the tonari-imagefs binary.
set -eu
set -o pipefail
# The test bed's image has Debian's Apache (for TEST-19), started at boot on port 80, which the
# nginx workload needs.
systemctl stop apache2.service 2>/dev/null || true

rtts=0,10,50 workloads=base,python3,nginx,mariadb reps=3 seqread_workload='' imagefs_processes=image
# No ToC costs a round trip per name: at 50 ms a python3 run took 148 s (1702 metadata round trips),
# one run of mariadb several minutes. Only these workloads run it, so that a full bench stays
# within about 25 minutes in the TCG test bed.
notoc_workloads=base
# --skip=MODE:WORKLOAD,...: pairs not run (to size the run: mariadb's runs are the longest).
skip=''
modes=local,nfs,service_toc_cold,service_toc_warm,service_notoc,imagefs_toc_prefetch
for a in "$@"; do
        case "$a" in
        --rtts=*) rtts=${a#*=} ;;
        --workloads=*) workloads=${a#*=} ;;
        --modes=*) modes=${a#*=} ;;
        --reps=*) reps=${a#*=} ;;
        --seqread=*) seqread_workload=${a#*=} ;;
        --imagefs-processes=layer | --imagefs-processes=image) imagefs_processes=${a#*=} ;;
        --notoc-workloads=*) notoc_workloads=${a#*=} ;;
        --skip=*) skip=${a#*=} ;;
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
RELAY_PORT=7890
WORK=/var/lib/tonari-bench
STORAGE=/var/lib/tonari-bench-storage
NFS_MNT=/mnt/tonari-bench-nfs

die() { echo "imagefs-rtt-guest: $*" >&2; exit 1; }
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }

cleanup() {
        local d
        for d in "$WORK"/run/*; do
                [[ -d $d ]] || continue
                ctr_delete "$(basename "$d")"
                [[ -z $svc_ready ]] || tonarictl image unmount "$d/bundle/rootfs" 2>/dev/null || true
                umount "$d/bundle/rootfs" 2>/dev/null || true
                [[ ! -f $d/imagefs.pids ]] || xargs -r kill <"$d/imagefs.pids" 2>/dev/null || true
        done
        sleep 1
        for d in "$WORK"/run/*/l*; do
                umount "$d" 2>/dev/null || umount -l "$d" 2>/dev/null || true
        done
        [[ -z $svc_ready ]] || systemctl stop tonari-imagefs.service tonari-imagefs-fd.service 2>/dev/null || true
        imagefs_teardown || true
        umount "$NFS_MNT" 2>/dev/null || true
        if [[ -e /run/netns/$NS ]]; then
                ip netns exec "$NS" bash -c 'mount -t nfsd nfsd /proc/fs/nfsd && rpc.nfsd 0 && exportfs -au' \
                        >/dev/null 2>&1 || true
                [[ -z ${mountd_pid:-} ]] || kill "$mountd_pid" 2>/dev/null || true
        fi
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

# measure_rtt: the median of 20 TCP connects to nfsd, in ms (a connect is one round trip).
measure_rtt() {
        python3 - "$S_ADDR" 2049 <<'EOF'
import socket, statistics, sys, time
t = []
for _ in range(20):
        t0 = time.monotonic()
        socket.create_connection((sys.argv[1], int(sys.argv[2]))).close()
        t.append((time.monotonic() - t0) * 1000)
print("%.2f" % statistics.median(t))
EOF
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

# prepare_images: every workload image's bundle configuration.
prepare_images() {
        local w
        mkdir -p "$WORK/config" "$WORK/run"
        for w in "${workloads[@]}"; do
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

# ---- tonari-imagefs (issue 17): the imagefs modes ----
# tonari-imagefs's command-line mode (the daemon's D-Bus MountOverlay is not there yet): one
# tonari-imagefs process per image mounting each layer at DIR/lN, its ToCs loaded one after the
# other (--imagefs-processes=image, the default: what the daemon will do), or one process per
# layer, started at once so that the ToCs load in parallel, each with a content cache of its own
# (--imagefs-processes=layer: a cache directory belongs to one process); the bench stacks the
# layers with overlayfs (lowerdir = top ... bottom, a fresh local upper layer), as MountOverlay
# will. The time of the "mount" verb runs from starting the processes to the mounted overlay: the
# processes' start, the ToC loads over the shaped link (ToC modes) and the mounts. The relay runs in
# the storage node's namespace and pulls each image from the OCI layout on the data disk.
# The binary is the build tree's (bench/imagefs-rtt passes it with --with=): tonari-imagefs has no
# package yet.
IMAGEFS=$A/tonari-imagefs
RELAY_ADDRESS=$S_ADDR:$RELAY_PORT
IMAGEFS_CACHE=$WORK/imagefs-cache
# Per image and layer, the files the last cold ToC run opened (tonari-imagefs --record-opened=),
# the prefetch lists of imagefs_toc_prefetch.
IMAGEFS_RECORDS=$WORK/imagefs-records
imagefs_ready='' relay_pid='' imagefs_records=''
# Which workload's contents the content caches hold (imagefs_toc_warm needs its own).
imagefs_cache_holds=''

relay_ctl() {
        tonarictl --relay="$RELAY_ADDRESS" "$@"
}

# imagefs_setup: tonari-relay on the storage node, every workload image pulled into it, and each
# image's layers (bottom first: diff_id and ToC digest) in $WORK/imagefs/NAME.layers.
imagefs_setup() {
        [[ -z $imagefs_ready ]] || { [[ $imagefs_ready == yes ]]; return; }
        imagefs_ready=no
        local deb w t0
        [[ -x $IMAGEFS ]] || { echo "tonari-imagefs not in the artifacts (bench/imagefs-rtt passes the build tree's)"; return 1; }
        for deb in tonari tonari-relay; do
                compgen -G "$A/${deb}_*.deb" >/dev/null || { echo "no $deb package in the artifacts"; return 1; }
        done
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$A"/tonari_*.deb "$A"/tonari-relay_*.deb \
                >/dev/null || { echo "the packages do not install"; return 1; }
        "$IMAGEFS" --version >/dev/null || { echo "tonari-imagefs does not run here"; return 1; }
        ! "$IMAGEFS" --help | grep -q -- --record-opened= || imagefs_records=yes
        t0=$(now)
        for _ in 1 2 3 4 5; do "$IMAGEFS" --version >/dev/null; done
        echo "STARTUP tonari-imagefs --version: $(elapsed "$t0" "$(now)") s for 5" >&2
        mkdir -p "$STORAGE/relay" "$WORK/imagefs" "$IMAGEFS_CACHE" "$IMAGEFS_RECORDS"
        cat >"$STORAGE/relay.conf" <<EOT
[Relay]
Store=$STORAGE/relay
Listen=$RELAY_ADDRESS
LogTarget=console
LogLevel=warning
EOT
        ip netns exec "$NS" tonari-relay --config="$STORAGE/relay.conf" >"$STORAGE/relay.log" 2>&1 &
        relay_pid=$!
        for _ in $(seq 300); do
                relay_ctl image list >/dev/null 2>&1 && break
                kill -0 "$relay_pid" 2>/dev/null || { cat "$STORAGE/relay.log"; echo "tonari-relay died"; return 1; }
                sleep 0.1
        done
        relay_ctl image list >/dev/null || { echo "tonari-relay does not answer"; return 1; }
        for w in "${workloads[@]}"; do
                t0=$(now)
                relay_ctl image pull "oci:$CTR_IMAGES:$w" "$w" >/dev/null || { echo "tonari-relay could not pull $w"; return 1; }
                relay_ctl --json=short image show "$w" | python3 -c '
import json, sys
for l in json.load(sys.stdin)["layers"]:
        print(l["diffID"], l["tocDigest"])' >"$WORK/imagefs/$w.layers"
                echo "image $w: pulled by tonari-relay in $(elapsed "$t0" "$(now)") s," \
                        "$(wc -l <"$WORK/imagefs/$w.layers") layers" >&2
        done
        imagefs_ready=yes
}

imagefs_teardown() {
        [[ -n $relay_pid ]] || return 0
        kill "$relay_pid" 2>/dev/null || true
        wait "$relay_pid" 2>/dev/null || true
        relay_pid=''
}

# imagefs_check: 0 when the imagefs modes can run (set up on first use); else prints why.
imagefs_check() {
        imagefs_setup
}

imagefs_drop_content_cache() {
        rm -rf --one-file-system "${IMAGEFS_CACHE:?}"/*
        imagefs_cache_holds=''
}

# A timer without a fork (a FIFO this shell holds open both ways never has data): polling the
# mount table must not cost more than what it measures.
rm -f "$WORK.sleep"
mkfifo "$WORK.sleep"
exec {SLEEP_FD}<>"$WORK.sleep"
rm -f "$WORK.sleep"
nap() { read -r -t "$1" -u "$SLEEP_FD" _ || true; }

# imagefs_mount_overlay toc|no-toc|prefetch|record WORKLOAD DIR: the image's layers mounted by
# tonari-imagefs at DIR/l1 (bottom) ... DIR/lN and stacked at DIR/bundle/rootfs over a fresh
# local upper layer. toc: with the ToC; record: the same, and the files opened are recorded for
# later prefetching; prefetch: with the ToC, and the recorded files of the image's layers fetched
# in the background right after the mount (one stream per layer); no-toc: without the ToC.
imagefs_mount_overlay() {
        local mode=$1 w=$2 dir=$3 i=0 n diff toc hex lower='' args=() common mp
        mkdir -p "$dir/upper" "$dir/work" "$dir/bundle/rootfs" "$IMAGEFS_RECORDS/$w"
        : >"$dir/imagefs.pids"
        common=(--relay="$RELAY_ADDRESS" --log-level=info)
        [[ $mode != no-toc ]] || common+=(--no-toc)
        while read -r diff toc; do
                i=$((i + 1))
                hex=${diff#sha256:}
                mkdir -p "$dir/l$i"
                [[ $imagefs_processes == image ]] || args=()
                args+=(--layer="$diff" --mountpoint="$dir/l$i")
                case $mode in
                toc) args+=(--toc-digest="$toc") ;;
                record)
                        args+=(--toc-digest="$toc")
                        [[ -z $imagefs_records ]] || args+=(--record-opened="$IMAGEFS_RECORDS/$w/$hex")
                        ;;
                prefetch)
                        args+=(--toc-digest="$toc")
                        if [[ -s $IMAGEFS_RECORDS/$w/$hex ]]; then
                                args+=(--prefetch="$IMAGEFS_RECORDS/$w/$hex")
                        else
                                args+=(--prefetch=/dev/null)
                        fi
                        ;;
                esac
                if [[ $imagefs_processes == layer ]]; then
                        "$IMAGEFS" "${common[@]}" "${args[@]}" --cache-dir="$IMAGEFS_CACHE/$hex" \
                                --stats-file="$dir/stats.$i" >>"$dir/imagefs.log" 2>&1 &
                        echo $! >>"$dir/imagefs.pids"
                fi
                lower=$dir/l$i${lower:+:$lower}
        done <"$WORK/imagefs/$w.layers"
        if [[ $imagefs_processes == image ]]; then
                "$IMAGEFS" "${common[@]}" "${args[@]}" --cache-dir="$IMAGEFS_CACHE/image" \
                        --stats-file="$dir/stats.1" >>"$dir/imagefs.log" 2>&1 &
                echo $! >>"$dir/imagefs.pids"
        fi
        # Until every layer is mounted (or a process gave up).
        for ((;;)); do
                n=0
                while read -r _ _ _ _ mp _; do
                        [[ $mp != "$dir"/l* ]] || n=$((n + 1))
                done </proc/self/mountinfo
                ((n < i)) || break
                while read -r pid; do
                        kill -0 "$pid" 2>/dev/null || { cat "$dir/imagefs.log" >&2; die "tonari-imagefs $pid ended before mounting"; }
                done <"$dir/imagefs.pids"
                nap 0.002
        done
        mount -t overlay overlay -o "lowerdir=$lower,upperdir=$dir/upper,workdir=$dir/work" "$dir/bundle/rootfs"
}

# imagefs_umount WORKLOAD DIR: the overlay unmounted, the processes stopped (each unmounts its layer
# and writes its counters to DIR/stats.N, and its record of opened files), their counters summed
# into DIR/counters (" Key=value..." for the RESULT line).
imagefs_umount() {
        local dir=$2 pid
        umount "$dir/bundle/rootfs"
        while read -r pid; do
                kill "$pid" 2>/dev/null || true
        done <"$dir/imagefs.pids"
        while read -r pid; do
                wait "$pid" || true
        done <"$dir/imagefs.pids"
        cat "$dir"/stats.* 2>/dev/null | awk '
                { for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] } }
                /^layer=/ {
                        mrt += v["metadata_round_trips"]; crt += v["content_round_trips"]; bf += v["bytes_fetched"]
                        hits += v["cache_hits"]; miss += v["cache_misses"]; tb += v["toc_bytes"]
                        if (v["toc_load_usec"] > tmax) tmax = v["toc_load_usec"]
                        tsum += v["toc_load_usec"]; pb += v["prefetch_bytes"]; err += v["errors"]
                }
                END { printf " MetadataRoundTrips=%d ContentRoundTrips=%d BytesFetched=%d CacheHits=%d CacheMisses=%d" \
                        " ToCBytes=%d ToCLoadUSec=%d ToCLoadSumUSec=%d PrefetchBytes=%d Errors=%d\n",
                        mrt, crt, bf, hits, miss, tb, tmax, tsum, pb, err }' >"$dir/counters"
        rm -rf --one-file-system "$dir/upper" "$dir/work"
        # What the daemons said (ToC load times, the prefetch), for the record: the report skips "#".
        grep -E 'Mounted|prefetch' "$dir/imagefs.log" | sed 's/^/#   /' || true
}

mode_imagefs_toc_cold() {
        case $1 in
        check) imagefs_check ;;
        before) imagefs_drop_content_cache; drop_caches ;;
        # Each cold ToC run records the files the workload opened: the next prefetch run's list.
        mount) imagefs_mount_overlay record "$2" "$3" ;;
        umount) imagefs_umount "$2" "$3"; imagefs_cache_holds=$2 ;;
        esac
}

# Warm: the content cache holds what the workload reads (from the last imagefs run of the same
# workload, or an unmeasured cold run first); the page cache is dropped, as for local, so that warm
# compares with local disk: the files come from the cache directory on the same disk.
mode_imagefs_toc_warm() {
        case $1 in
        check) imagefs_check ;;
        before)
                [[ $imagefs_cache_holds == "$2" ]] || one_run "$2" imagefs_toc_cold 0 >/dev/null
                drop_caches
                ;;
        mount) imagefs_mount_overlay toc "$2" "$3" ;;
        umount) imagefs_umount "$2" "$3" ;;
        esac
}

mode_imagefs_notoc() {
        case $1 in
        check) imagefs_check ;;
        before) imagefs_drop_content_cache; drop_caches ;;
        mount) imagefs_mount_overlay no-toc "$2" "$3" ;;
        umount) imagefs_umount "$2" "$3"; imagefs_cache_holds=$2 ;;
        esac
}

# Cold, with the prefetch list an earlier cold ToC run of the same workload recorded (an unmeasured
# one first if there is none yet).
mode_imagefs_toc_prefetch() {
        case $1 in
        check)
                imagefs_check || return 1
                "$IMAGEFS" --help | grep -q -- --prefetch= || { echo "this tonari-imagefs has no --prefetch="; return 1; }
                ;;
        before)
                compgen -G "$IMAGEFS_RECORDS/$2/*" >/dev/null || one_run "$2" imagefs_toc_cold 0 >/dev/null
                imagefs_drop_content_cache
                drop_caches
                ;;
        mount) imagefs_mount_overlay prefetch "$2" "$3" ;;
        umount) imagefs_umount "$2" "$3"; imagefs_cache_holds=$2 ;;
        esac
}

# ---- tonari-imagefs as a user runs it: the packaged D-Bus service ----
# The service modes mount through the running tonari-imagefs.service (the tonari-imagefs package,
# Forwarder=auto: its layers' FUSE connections held by tonari-imagefs-fd.service), configured with a
# drop-in naming the relay on the storage node, and driven as a user would: `tonarictl image mount
# --upper= --work=` (MountOverlay; no ToC: busctl with the Mode option, which tonarictl does not
# offer) and `tonarictl image unmount`. The counters come from `tonarictl --json=short image mounts`
# before the unmount; the ToC load of the image (its layers' ToCs at once) from the service's log.
# No process starts per run, and the relay connection is the service's (kept across mounts).
#   service_toc_cold  the service restarted with an empty content cache before the run (untimed),
#                     its relay connection opened by an untimed call (a mount of an image the relay
#                     does not have): a running daemon that has not seen this image's contents
#   service_toc_warm  the same service with the contents of the last run of this workload cached
#                     and verified (page cache dropped, as for local)
#   service_notoc     as cold, mounted with Mode=no-toc (every metadata request a round trip)
SVC_CACHE=/var/cache/tonari-imagefs
svc_ready='' svc_cache_holds=''

service_setup() {
        [[ -z $svc_ready ]] || { [[ $svc_ready == yes ]]; return; }
        svc_ready=no
        imagefs_setup || return 1
        compgen -G "$A/tonari-imagefs_*.deb" >/dev/null || { echo "no tonari-imagefs package in the artifacts"; return 1; }
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$A"/tonari-imagefs_*.deb >/dev/null ||
                { echo "the tonari-imagefs package does not install"; return 1; }
        mkdir -p /etc/tonari/tonari-imagefs.conf.d
        printf '[ImageFS]\nRelay=%s\n' "$RELAY_ADDRESS" >/etc/tonari/tonari-imagefs.conf.d/50-bench.conf
        systemctl restart tonari-imagefs.service || { echo "tonari-imagefs.service does not start"; return 1; }
        tonarictl image status >/dev/null || { echo "tonari-imagefs.service does not answer"; return 1; }
        svc_ready=yes
}

# service_restart_empty: the service stopped, its content cache emptied, started again, and its
# relay connection opened (untimed).
service_restart_empty() {
        systemctl stop tonari-imagefs.service
        rm -rf --one-file-system "${SVC_CACHE:?}"/*
        systemctl start tonari-imagefs.service
        mkdir -p "$WORK/none"
        tonarictl image mount bench-no-such-image "$WORK/none" >/dev/null 2>&1 || true
        svc_cache_holds=''
}

# service_mount toc|no-toc WORKLOAD DIR
service_mount() {
        local mode=$1 dir=$3
        mkdir -p "$dir/upper" "$dir/work" "$dir/bundle/rootfs"
        # (journalctl takes whole seconds: the last such line since then is this mount's.)
        date +%s >"$dir/since"
        echo "$mode" >"$dir/svc-mode"
        if [[ $mode == toc ]]; then
                tonarictl image mount --upper="$dir/upper" --work="$dir/work" "$2" "$dir/bundle/rootfs" >/dev/null
        else
                busctl call org.tonari.ImageFS1 /org/tonari/ImageFS1 org.tonari.ImageFS1 MountOverlay \
                        'ssssa{sv}' "$2" "$dir/bundle/rootfs" "$dir/upper" "$dir/work" 1 Mode s no-toc >/dev/null
        fi
}

# service_umount WORKLOAD DIR: the counters read, the image unmounted.
service_umount() {
        local dir=$2 toc_usec=''
        # The wall time of the image's ToC load (all layers at once), from the service's log.
        [[ $(cat "$dir/svc-mode") == no-toc ]] || toc_usec=$(journalctl -q -o cat -u tonari-imagefs.service --since="@$(cat "$dir/since")" |
                sed -n 's/.*Loaded the ToCs of .* at once in \([0-9]*\) us.*/\1/p' | tail -n 1)
        tonarictl --json=short image mounts | python3 -c '
import json, sys
m = [m for m in json.load(sys.stdin) if m["target"] == sys.argv[1]][0]
print(" MetadataRoundTrips=%d ContentRoundTrips=%d BytesFetched=%d CacheHits=%d CacheMisses=%d"
      " ToCLoadUSec=%s ToCLoadSumUSec=%d Errors=%d" % (m["metadataRoundTrips"], m["contentRoundTrips"],
      m["bytesFetched"], m["cacheHits"], m["cacheMisses"], sys.argv[2] or m["tocLoadUSec"], m["tocLoadUSec"],
      m["errors"]))' "$dir/bundle/rootfs" "${toc_usec:-}" >"$dir/counters"
        tonarictl image unmount "$dir/bundle/rootfs"
        rm -rf --one-file-system "$dir/upper" "$dir/work"
}

mode_service_toc_cold() {
        case $1 in
        check) service_setup ;;
        before) service_restart_empty; drop_caches ;;
        mount) service_mount toc "$2" "$3" ;;
        umount) service_umount "$2" "$3"; svc_cache_holds=$2 ;;
        esac
}

mode_service_toc_warm() {
        case $1 in
        check) service_setup ;;
        before)
                [[ $svc_cache_holds == "$2" ]] || one_run "$2" service_toc_cold 0 >/dev/null
                drop_caches
                ;;
        mount) service_mount toc "$2" "$3" ;;
        umount) service_umount "$2" "$3" ;;
        esac
}

mode_service_notoc() {
        case $1 in
        check) service_setup ;;
        before) service_restart_empty; drop_caches ;;
        mount) service_mount no-toc "$2" "$3" ;;
        umount) service_umount "$2" "$3"; svc_cache_holds=$2 ;;
        esac
}

# ---- the link's bandwidth and sequential reads ----

# measure_bandwidth: MB/s of one TCP stream of 256 MiB from the storage node to the worker (no
# netem), the "link bandwidth" of the prefetch goal (local + 3 RTT + bytes / bandwidth).
measure_bandwidth() {
        ip netns exec "$NS" python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("'"$S_ADDR"'", 5001)); s.listen(1)
c, _ = s.accept(); buf = bytes(1 << 20)
for _ in range(256): c.sendall(buf)
c.close()' &
        local pid=$!
        python3 - "$S_ADDR" <<'PY'
import socket, sys, time
for _ in range(100):
        try:
                c = socket.create_connection((sys.argv[1], 5001)); break
        except OSError:
                time.sleep(0.05)
t0 = time.monotonic(); n = 0
while True:
        b = c.recv(1 << 20)
        if not b: break
        n += len(b)
print("BANDWIDTH bytes=%d seconds=%.6f mbps=%.1f" % (n, time.monotonic() - t0, n / (time.monotonic() - t0) / 1e6))
PY
        wait "$pid"
}

# seqread WORKLOAD: sequential reads of the image's largest files (up to 64 MiB), page cache
# dropped, from local disk (an overlay over the unpacked tree) and through tonari-imagefs with a
# warm content cache (the files read once through it first, unmeasured):
#   SEQREAD workload=W mode=local|imagefs_toc_warm rep=N bytes=B seconds=S
seqread() {
        local w=$1 rep mode dir t0 t1 bytes files=()
        mapfile -t files < <(cd "$(ctr_rootfs "$w")" && find . -xdev -type f -printf '%s %P\n' | sort -rn |
                awk '{ s += $1; print substr($0, index($0, " ") + 1) } s > 64 * 1048576 { exit }')
        bytes=$(cd "$(ctr_rootfs "$w")" && cat "${files[@]}" | wc -c)
        dir=$WORK/run/seqread
        for ((rep = 1; rep <= reps; rep++)); do
                for mode in local imagefs_toc_warm; do
                        rm -rf "$dir"; mkdir -p "$dir"
                        if [[ $mode == imagefs_toc_warm ]]; then
                                imagefs_drop_content_cache
                                imagefs_mount_overlay toc "$w" "$dir"
                                (cd "$dir/bundle/rootfs" && cat "${files[@]}" >/dev/null)
                                imagefs_umount "$w" "$dir"
                                rm -rf "$dir"; mkdir -p "$dir"
                                drop_caches
                                imagefs_mount_overlay toc "$w" "$dir"
                        else
                                drop_caches
                                ctr_overlay_mount "$(ctr_rootfs "$w")" "$dir"
                        fi
                        t0=$(now)
                        (cd "$dir/bundle/rootfs" && cat "${files[@]}" >/dev/null)
                        t1=$(now)
                        if [[ $mode == imagefs_toc_warm ]]; then
                                imagefs_umount "$w" "$dir"
                        else
                                ctr_umount "$dir"
                        fi
                        echo "SEQREAD workload=$w mode=$mode rep=$rep bytes=$bytes seconds=$(elapsed "$t0" "$t1")"
                done
        done
        rm -rf "$dir"
        imagefs_cache_holds=''
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
        if ! "mode_$mode" mount "$w" "$dir" 2>"$dir/error"; then
                echo "FAILED rtt=$rtt workload=$w mode=$mode rep=$rep: the mount failed:" \
                        "$(tr '\n' ' ' <"$dir/error" | head -c 300)"
                "mode_$mode" umount "$w" "$dir" 2>/dev/null || true
                umount "$dir/bundle/rootfs" 2>/dev/null || true
                rm -rf --one-file-system "$dir"
                return 0
        fi
        t1=$(now)
        # A failed run is reported (FAILED, and bench/imagefs-rtt fails at the end) and the series goes on.
        if ! line=$(ctr_run "$id" "$dir/bundle" "$w" "$dir/output" 2>"$dir/error") ||
                ! ctr_check_output "$w" "$dir/output" 2>>"$dir/error"; then
                echo "FAILED rtt=$rtt workload=$w mode=$mode rep=$rep: $(tr '\n' ' ' <"$dir/error" | head -c 300)" \
                        "output: $(tr '\n' ' ' <"$dir/output" | head -c 200)"
                ctr_delete "$id"
                "mode_$mode" umount "$w" "$dir"
                rm -rf --one-file-system "$dir"
                return 0
        fi
        ctr_delete "$id"
        "mode_$mode" umount "$w" "$dir"
        [[ $mode != imagefs_* && $mode != service_* ]] || counters=$(cat "$dir/counters")
        rm -rf --one-file-system "$dir"
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
prepare_images
nfs_start
measure_bandwidth

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

# Repetitions outermost: a run stopped early still has every RTT, with fewer repetitions.
for ((rep = 1; rep <= reps; rep++)); do
        for rtt in "${rtts[@]}"; do
                set_rtt "$rtt"
                echo "RTT rtt=$rtt measured=$(measure_rtt)"
                for w in "${workloads[@]}"; do
                        # The order of the modes rotates with the repetition, so that none always
                        # comes first (or after the same other) in a workload's series.
                        n=${#active[@]}
                        for ((i = 0; i < n; i++)); do
                                m=${active[(i + rep - 1) % n]}
                                [[ $m != *_notoc || ,$notoc_workloads, == *,$w,* ]] || continue
                                [[ ,$skip, != *,$m:$w,* ]] || continue
                                one_run "$w" "$m" "$rep"
                        done
                done
        done
done
set_rtt 0
# Sequential reads, local against tonari-imagefs with a warm content cache (at RTT 0: the cache
# is local, the link plays no part once it is warm).
seqread_workload=${seqread_workload:-${workloads[-1]}}
if [[ $seqread_workload != none && " ${active[*]} " == *" imagefs_toc_warm "* ]]; then
        seqread "$seqread_workload"
fi
