# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Guest-side helpers to run the workload images of test/images/make-workload-image with crun, in
# the VM test bed: sourced by test/vm/TEST-05-containers.sh and bench/imagefs-rtt-guest.sh.
#
# The images come on the test bed's data disk (test/vm/run-with-packages --images=NAME,...,
# made by test/images/make-workload-disk; ext4, label tonari-images), which ctr_images_mount
# mounts read-only at $CTR_DISK (default /mnt/tonari-images):
#   $CTR_DISK/oci                  OCI layout, one tag per workload ($CTR_IMAGES)
#   $CTR_DISK/bundles/NAME/rootfs  the image unpacked by umoci on the host (ctr_rootfs NAME): what
#                                  a node that pulled it has on disk (unpacking in the TCG guest
#                                  would take minutes)
# CTR_RUN_PY   container-run.py (default: next to this file)
# CTR_CGROUP_MANAGER  crun's --cgroup-manager (default systemd: a scope per container; see
#              container-run.py)
#
# A container's bundle is BUNDLE/config.json (from `crun spec`, adapted to the image: see
# ctr_bundle_config) and BUNDLE/rootfs, the mount point of whatever the caller mounts there:
# an overlay over a locally unpacked tree (ctr_overlay_mount), over NFS, or tonari-imagefs's
# MountOverlay. Containers share the guest's network namespace, so that nginx and mariadb are
# reachable on 127.0.0.1.

CTR_DISK=${CTR_DISK:-/mnt/tonari-images}
CTR_IMAGES=$CTR_DISK/oci
CTR_RUN_PY=${CTR_RUN_PY:-$(dirname "${BASH_SOURCE[0]}")/container-run.py}
CTR_CGROUP_MANAGER=${CTR_CGROUP_MANAGER:-systemd}

# ctr_images_mount: the data disk at $CTR_DISK (read-only; nothing to do if it is mounted). Fails
# with a message when the VM has no such disk.
ctr_images_mount() {
        local dev=/dev/disk/by-label/tonari-images
        mountpoint -q "$CTR_DISK" && return 0
        udevadm settle
        [[ -b $dev ]] || { echo "no data disk labelled tonari-images (run-with-packages --images=...)" >&2; return 1; }
        mkdir -p "$CTR_DISK"
        mount -o ro,noload "$dev" "$CTR_DISK"
}

# ctr_rootfs NAME: the image's tree, unpacked.
ctr_rootfs() {
        echo "$CTR_DISK/bundles/$1/rootfs"
}

# workload_ready NAME: when a workload's run ends (container-run.py --ready).
workload_ready() {
        case $1 in
        base | python3) echo exit ;;
        nginx) echo http:80 ;;
        mariadb) echo mysql:/run/mysqld/mysqld.sock ;;
        *) echo "unknown workload '$1'" >&2; return 2 ;;
        esac
}

# workload_expect NAME: the output a task that exits must print (the paper's tasks).
workload_expect() {
        case $1 in
        base) echo helloworld ;;
        python3) echo 4294967295 ;;
        *) echo "" ;;
        esac
}

# ctr_bundle_config NAME FILE: the runtime configuration for the image NAME: `crun spec` with the
# image's command, environment and working directory (from its OCI config, as a container engine
# takes them), root "rootfs" writable, no terminal, the guest's network namespace, and Docker's
# default capabilities (nginx and mariadbd switch to their own users).
ctr_bundle_config() {
        local name=$1 file=$2 tmp
        tmp=$(mktemp -d)
        (cd "$tmp" && crun spec)
        python3 - "$CTR_IMAGES" "$name" "$tmp/config.json" >"$file" <<'EOF'
import json, sys
layout, tag, spec_file = sys.argv[1:]
def blob(digest):
        return json.load(open(layout + "/blobs/" + digest.replace(":", "/")))
index = json.load(open(layout + "/index.json"))
desc = next(m for m in index["manifests"]
            if m.get("annotations", {}).get("org.opencontainers.image.ref.name") == tag)
image = blob(blob(desc["digest"])["config"]["digest"]).get("config", {})
spec = json.load(open(spec_file))
proc = spec["process"]
proc["terminal"] = False
proc["args"] = (image.get("Entrypoint") or []) + (image.get("Cmd") or [])
proc["env"] = image.get("Env") or ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
proc["cwd"] = image.get("WorkingDir") or "/"
if image.get("User") not in (None, "", "0", "root", "0:0"):
        sys.exit("image user %r is not supported here" % image["User"])
caps = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
        "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
        "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]
proc["capabilities"] = {k: caps for k in ("bounding", "effective", "permitted")}
spec["root"] = {"path": "rootfs", "readonly": False}
spec["hostname"] = "workload-" + tag
spec["linux"]["namespaces"] = [n for n in spec["linux"]["namespaces"] if n["type"] != "network"]
json.dump(spec, sys.stdout, indent=1)
EOF
        rm -rf "$tmp"
}

# ctr_overlay_mount LOWER DIR: DIR/bundle/rootfs becomes an overlay of LOWER with a fresh upper
# layer and work directory in DIR (what containerd's overlay snapshotter does for a container).
ctr_overlay_mount() {
        local lower=$1 dir=$2
        mkdir -p "$dir/upper" "$dir/work" "$dir/bundle/rootfs"
        mount -t overlay overlay -o "lowerdir=$lower,upperdir=$dir/upper,workdir=$dir/work" \
                "$dir/bundle/rootfs"
}

# ctr_run ID BUNDLE NAME OUTPUT: crun create + crun start of the workload NAME, timed by
# container-run.py; prints its "create=S run=S" line. A service (nginx, mariadb) is left running.
ctr_run() {
        local id=$1 bundle=$2 name=$3 output=$4
        python3 "$CTR_RUN_PY" --id "$id" --bundle "$bundle" --ready "$(workload_ready "$name")" \
                --output "$output" --cgroup-manager="$CTR_CGROUP_MANAGER"
}

# ctr_check_output NAME OUTPUT: the task printed what the paper's task prints.
ctr_check_output() {
        local want
        want=$(workload_expect "$1")
        [[ -z $want ]] && return 0
        [[ $(cat "$2") == "$want" ]] || {
                echo "workload $1 printed '$(head -c 200 "$2")', expected '$want'" >&2
                return 1
        }
}

# ctr_delete ID: stop (SIGKILL) and delete the container if it exists.
ctr_delete() {
        crun --cgroup-manager="$CTR_CGROUP_MANAGER" delete --force "$1" >/dev/null 2>&1 || true
}

# ctr_umount DIR: undo ctr_overlay_mount (or any mount at DIR/bundle/rootfs) and remove DIR.
ctr_umount() {
        local dir=$1
        if mountpoint -q "$dir/bundle/rootfs"; then
                umount "$dir/bundle/rootfs"
        fi
        rm -rf --one-file-system "$dir"
}
