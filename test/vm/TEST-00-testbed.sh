#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# TEST-00-testbed: the VM test bed itself provides what tonari's system tests rely on.
# Run: test/vm/run test/vm/TEST-00-testbed.sh            (stock Debian kernel)
#      test/vm/run --kernel="$(kernel/build)" test/vm/TEST-00-testbed.sh   (tonari kernel)
set -eux
set -o pipefail

# shellcheck source-path=SCRIPTDIR source=testlib.sh
. "$TONARI_VM_SHARE/testlib.sh"

custom_kernel() {
        [[ " $(</proc/cmdline) " == *" tonari.kernel=custom "* ]]
}

testcase_pid1_is_systemd() {
        assert_eq systemd "$(</proc/1/comm)" "PID 1 command name"
        assert_match '/systemd$' "$(readlink /proc/1/exe)" "PID 1 executable"
}

testcase_system_running() {
        local state failed
        state=$(timeout 300 systemctl is-system-running --wait) || true
        if [[ "$state" != running ]]; then
                failed=$(systemctl list-units --failed --no-legend --plain | awk '{print $1}' | xargs)
                systemctl --failed --no-pager || true
                assert_eq running "$state" "system state (failed units: ${failed:-none})"
        fi
        assert_eq 0 "$(systemctl list-units --failed --no-legend --plain | wc -l)" "number of failed units"
}

testcase_cgroup2_controllers() {
        local controllers c
        assert_eq cgroup2fs "$(stat -f -c %T /sys/fs/cgroup)" "file system type of /sys/fs/cgroup"
        assert_eq cgroup2 "$(findmnt -n -o FSTYPE /sys/fs/cgroup)" "mount at /sys/fs/cgroup"
        # No v1 hierarchy may be mounted next to it (the unified hierarchy owns every controller).
        assert_eq 0 "$(awk '$3 == "cgroup"' /proc/mounts | wc -l)" "number of cgroup v1 mounts"
        controllers=" $(</sys/fs/cgroup/cgroup.controllers) "
        for c in cpu cpuset io memory pids; do
                assert_match " $c " "$controllers" "controller '$c' in cgroup.controllers"
        done
}

testcase_numa_two_nodes() {
        local hw node size_mb cpus
        hw=$(numactl -H)
        echo "$hw"
        assert_match '^available: 2 nodes \(0-1\)' "$hw" "numactl -H node count"
        for node in 0 1; do
                size_mb=$(awk -v n="$node" '$1 == "node" && $2 == n && $3 == "size:" { print $4 }' <<<"$hw")
                # 1 GiB per node; the kernel keeps some of it (memmap, reserved ranges, low 1 MiB).
                assert_ge "$size_mb" 900 "node $node size in MB"
                assert_le "$size_mb" 1024 "node $node size in MB"
                cpus=$(awk -v n="$node" '$1 == "node" && $2 == n && $3 == "cpus:" { $1 = $2 = $3 = ""; print }' \
                        <<<"$hw" | xargs)
                assert_eq "$node" "$cpus" "CPUs of node $node"
        done
        assert_eq 2 "$(nproc)" "online CPUs"
}

testcase_psi() {
        local f
        for f in cpu memory io; do
                assert_match '^some avg10=[0-9.]+ avg60=[0-9.]+ avg300=[0-9.]+ total=[0-9]+' \
                        "$(head -n1 "/proc/pressure/$f")" "/proc/pressure/$f"
        done
        # Per-cgroup pressure files come with PSI on the unified hierarchy.
        assert_match '^some avg10=' "$(head -n1 /sys/fs/cgroup/system.slice/cpu.pressure)" \
                "system.slice cpu.pressure"
}

testcase_fuse_device() {
        [[ -c /dev/fuse ]] || assert_eq "character device" "$(stat -c %F /dev/fuse 2>&1)" "/dev/fuse"
        # misc device 10:229 is FUSE.
        assert_eq "10:229" "$(printf '%d:%d' "0x$(stat -c %t /dev/fuse)" "0x$(stat -c %T /dev/fuse)")" \
                "/dev/fuse major:minor"
        command -v fusermount3
}

testcase_offline() {
        # The test bed has no network card (QEMU -nic none): tests must not depend on the network.
        # Interfaces backed by a device have a "device" link in sysfs; lo and tunnels do not.
        local nics
        nics=$(find /sys/class/net/ -mindepth 2 -maxdepth 2 -name device -printf '%h\n' |
                xargs -r -n1 basename | xargs)
        assert_eq "" "$nics" "network interfaces backed by a device"
        assert_match '^1: lo: <LOOPBACK,UP' "$(ip -o link show lo)" "loopback interface"
}

testcase_share_and_runtime_libs() {
        assert_eq 9p "$(findmnt -n -o FSTYPE "$TONARI_VM_SHARE")" "file system of \$TONARI_VM_SHARE"
        [[ -d "$TONARI_VM_SHARE/artifacts" ]] || assert_eq directory "missing" "$TONARI_VM_SHARE/artifacts"
        # What tonari's .deb needs at run time must already be installed (the guest is offline).
        local pkg
        for pkg in libsystemd0 libinih1 libjson-c5; do
                assert_eq "install ok installed" "$(dpkg-query -W -f='${Status}' "$pkg")" "package $pkg"
        done
}

# Idle page tracking helpers. They run in subshells ( ... ) with xtrace off: they loop per page.
page_size=$(getconf PAGESIZE)
page_idle_bitmap=/sys/kernel/mm/page_idle/bitmap

# The PFNs of the present page-cache pages that PID maps from FILE. pagemap entries: bit 63
# present, bit 61 file page (copy-on-write copies of the file's data are anonymous: left out),
# bits 0-54 the PFN.
mapped_file_pfns() (
        set +x
        local pid=$1 file=$2 range path start end hex v
        while read -r range _ _ _ _ path; do
                [[ "$path" == "$file" ]] || continue
                start=$((16#${range%-*}))
                end=$((16#${range#*-}))
                while read -r hex; do
                        v=$((16#$hex))
                        if ((v < 0 && (v >> 61 & 1))); then echo $((v & 0x7fffffffffffff)); fi
                done < <(dd if="/proc/$pid/pagemap" bs=8 skip=$((start / page_size)) \
                                count=$(((end - start) / page_size)) status=none | od -An -v -tx8 -w8)
        done <"/proc/$pid/maps"
)

# The bitmap has one bit per PFN and is read and written in 64-bit words (machine byte order).
# _word_runs PFN... prints "FIRST_WORD COUNT" for each run of consecutive words holding the PFNs,
# so that the helpers below need one read or write per run, not per page.
_word_runs() {
        local w first=-1 last=-1
        while read -r w; do
                if ((w == last + 1)); then
                        last=$w
                        continue
                fi
                ((first < 0)) || echo "$first $((last - first + 1))"
                first=$w last=$w
        done < <(printf '%s\n' "$@" | awk '{ print int($1 / 64) }' | sort -nu)
        ((first < 0)) || echo "$first $((last - first + 1))"
}

# Mark the given PFNs idle (zero bits in a written word change nothing).
set_idle() (
        set +x
        local -A mask=()
        local pfn first count w i bytes
        for pfn in "$@"; do
                mask[$((pfn / 64))]=$(( ${mask[$((pfn / 64))]:-0} | (1 << (pfn % 64)) ))
        done
        while read -r first count; do
                bytes=''
                for ((w = first; w < first + count; w++)); do
                        for ((i = 0; i < 8; i++)); do
                                printf -v bytes '%s\\x%02x' "$bytes" $(( (mask[$w] >> (8 * i)) & 0xff ))
                        done
                done
                printf '%b' "$bytes" |
                        dd of="$page_idle_bitmap" bs=8 seek="$first" iflag=fullblock conv=notrunc status=none
        done < <(_word_runs "$@")
)

# How many of the given PFNs are idle now (reading folds in the accessed bits of their PTEs).
count_idle() (
        set +x
        local -A word=()
        local pfn first count w hex n=0
        while read -r first count; do
                w=$first
                while read -r hex; do
                        word[$w]=$hex
                        w=$((w + 1))
                done < <(dd if="$page_idle_bitmap" bs=8 skip="$first" count="$count" status=none |
                                od -An -v -tx8 -w8)
        done < <(_word_runs "$@")
        for pfn in "$@"; do
                if (( (16#${word[$((pfn / 64))]} >> (pfn % 64)) & 1 )); then n=$((n + 1)); fi
        done
        echo "$n"
)

testcase_page_idle() {
        if ! custom_kernel; then
                # Debian's kernels are built without IDLE_PAGE_TRACKING: that is why kernel/ exists.
                # If this starts failing, the stock kernel gained page_idle (or the flag is wrong).
                assert_match '-amd64$' "$(uname -r)" "release of the stock kernel"
                [[ ! -e "$page_idle_bitmap" ]] ||
                        assert_eq absent present "$page_idle_bitmap on the stock kernel"
                return 0
        fi
        assert_match '-tonari$' "$(uname -r)" "release of the custom kernel"
        assert_eq "CONFIG_IDLE_PAGE_TRACKING=y" "$(zgrep -x 'CONFIG_IDLE_PAGE_TRACKING=y' /proc/config.gz)" \
                "/proc/config.gz"
        [[ -e "$page_idle_bitmap" ]] || assert_eq present missing "$page_idle_bitmap"

        # A private copy of bash, so that no other process touches its page-cache pages, blocked
        # in open() of a FIFO nobody writes to: its mapped text pages stay untouched.
        # (dir and pid are not local: the EXIT trap runs after this function has returned.)
        local pfns=()
        pid=''
        dir=$(mktemp -d /var/tmp/page-idle.XXXXXX)
        trap 'if [[ -n "$pid" ]]; then kill "$pid"; wait "$pid" || true; fi; rm -rf "$dir"' EXIT
        cp /usr/bin/bash "$dir/bash"
        mkfifo "$dir/fifo"
        # shellcheck disable=SC2016 # expanded by the inner shell
        "$dir/bash" -c 'read -r _ <"$1"' _ "$dir/fifo" &
        pid=$!
        # Wait until it sleeps in openat(2) (syscall 257 on x86-64), done with its startup.
        # shellcheck disable=SC2016 # expanded by the inner shell
        timeout 30 bash -c 'until [[ "$(cut -d" " -f1 "/proc/$1/syscall")" == 257 ]]; do sleep 0.1; done' \
                _ "$pid"
        mapfile -t pfns < <(mapped_file_pfns "$pid" "$dir/bash")
        assert_ge "${#pfns[@]}" 16 "present page-cache pages mapped from the bash copy"

        set_idle "${pfns[@]}"
        assert_eq "${#pfns[@]}" "$(count_idle "${pfns[@]}")" "idle pages of a blocked process"
        # read(2) through the page cache marks the pages accessed, which clears their idle bit.
        cat "$dir/bash" >/dev/null
        assert_eq 0 "$(count_idle "${pfns[@]}")" "idle pages after reading the file"
}

run_testcases
