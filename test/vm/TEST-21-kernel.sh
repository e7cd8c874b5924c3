#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# TEST-21-kernel: the kernel/patches series on the tonari kernel. Runs the kernel selftests that
# kernel/build builds with it (tools/testing/selftests/cgroup/test_cpu_borrow: cpu.cfs_borrowing_us
# and cpu.cfs_charge_procs; test_cpuset_lazy: cpuset.lazy_migrate between the VM's two NUMA nodes;
# bad input included), checks what only a VM test can (a container's read-only cgroupfs), and
# fails on any WARN/BUG/KASAN/lockdep report in the kernel log.
# Run: test/vm/run-kselftests test/vm/TEST-21-kernel.sh
set -eux
set -o pipefail

# shellcheck source-path=SCRIPTDIR source=testlib.sh
. "$TONARI_VM_SHARE/testlib.sh"

if [[ " $(</proc/cmdline) " != *" tonari.kernel=custom "* ]]; then
        echo "TEST-21-kernel: needs the tonari kernel (test/vm/run-kselftests)" >&2
        exit 77
fi
KST=$TONARI_VM_SHARE/artifacts
# Kernel log lines from boot are not the series' (the test bed's NUMA layout makes the kernel warn
# about its CPU topology at boot): only what appears from here on counts.
DMESG_START=$(dmesg | wc -l)
CG=/sys/fs/cgroup/tonari-test21

cleanup() {
        rmdir "$CG" 2>/dev/null || true
}
trap cleanup EXIT

testcase_interface_files() {
        grep -qw cpu /sys/fs/cgroup/cgroup.subtree_control || echo +cpu >/sys/fs/cgroup/cgroup.subtree_control
        mkdir "$CG"
        assert_eq 0 "$(<"$CG/cpu.cfs_borrowing_us")" "cpu.cfs_borrowing_us of a new cgroup"
        assert_eq "" "$(<"$CG/cpu.cfs_charge_procs")" "cpu.cfs_charge_procs of a new cgroup"
        assert_eq 0 "$(awk '$1 == "charged_usec" { print $2 }' "$CG/cpu.stat")" "charged_usec in cpu.stat"
        assert_eq "-rw-r--r-- root" "$(stat -c '%A %U' "$CG/cpu.cfs_borrowing_us")" "mode and owner"
        assert_eq "-rw-r--r-- root" "$(stat -c '%A %U' "$CG/cpu.cfs_charge_procs")" "mode and owner"
        # Not on the root cgroup.
        assert_rc 1 test -e /sys/fs/cgroup/cpu.cfs_borrowing_us
        assert_rc 1 test -e /sys/fs/cgroup/cpu.cfs_charge_procs
        rmdir "$CG"
        grep -qw cpuset /sys/fs/cgroup/cgroup.subtree_control || echo +cpuset >/sys/fs/cgroup/cgroup.subtree_control
        mkdir "$CG"
        assert_eq "0 256 10 mild" "$(cat "$CG"/cpuset.lazy_migrate{,_pages,_interval_ms,_policy} | xargs)" \
                "cpuset.lazy_migrate, _pages, _interval_ms, _policy of a new cgroup"
        assert_eq "active 0 mms 0 moved 0 failed 0" "$(xargs <"$CG/cpuset.lazy_migrate_status")" "cpuset.lazy_migrate_status"
        assert_eq "-rw-r--r-- root" "$(stat -c '%A %U' "$CG/cpuset.lazy_migrate")" "mode and owner"
        assert_eq "-r--r--r-- root" "$(stat -c '%A %U' "$CG/cpuset.lazy_migrate_status")" "mode and owner"
        assert_rc 1 test -e /sys/fs/cgroup/cpuset.lazy_migrate
        rmdir "$CG"
}

testcase_kselftest_cpu_borrow() {
        local out rc=0 plan
        out=$("$KST/test_cpu_borrow" 2>&1) || rc=$?
        echo "$out"
        assert_eq 0 "$rc" "test_cpu_borrow exit code"
        plan=$(sed -n 's/^1\.\.\([0-9]\+\)$/\1/p' <<<"$out")
        assert_match '^[0-9]+$' "$plan" "test plan line"
        assert_eq "$plan" "$(grep -c '^ok ' <<<"$out")" "tests passed"
        assert_eq 0 "$(grep -c '^not ok ' <<<"$out" || true)" "tests failed"
}

testcase_kselftest_cpuset_lazy() {
        local out rc=0 plan
        out=$("$KST/test_cpuset_lazy" 2>&1) || rc=$?
        echo "$out"
        assert_eq 0 "$rc" "test_cpuset_lazy exit code"
        plan=$(sed -n 's/^1\.\.\([0-9]\+\)$/\1/p' <<<"$out")
        assert_match '^[0-9]+$' "$plan" "test plan line"
        assert_eq "$plan" "$(grep -c '^ok ' <<<"$out")" "tests passed"
        assert_eq 0 "$(grep -c '^not ok ' <<<"$out" || true)" "tests failed"
}

# A container sees its cgroup through a read-only cgroupfs: it cannot write its own debt away or
# make anything charge another group, even as root.
testcase_readonly_cgroupfs() {
        mkdir "$CG"
        echo 1000 >"$CG/cpu.cfs_borrowing_us"
        assert_rc_match 2 'Read-only file system' unshare -m --propagation private sh -c "
                mount --bind -o ro $CG $CG && echo 5 >$CG/cpu.cfs_borrowing_us"
        assert_eq 1000 "$(<"$CG/cpu.cfs_borrowing_us")" "debt after the refused write"
        grep -qw cpuset /sys/fs/cgroup/cgroup.subtree_control || echo +cpuset >/sys/fs/cgroup/cgroup.subtree_control
        assert_rc_match 2 'Read-only file system' unshare -m --propagation private sh -c "
                mount --bind -o ro $CG $CG && echo 1 >$CG/cpuset.lazy_migrate"
        assert_eq 0 "$(<"$CG/cpuset.lazy_migrate")" "cpuset.lazy_migrate after the refused write"
        rmdir "$CG"
}

# Last: nothing above may have left a splat in the kernel log. (RCU stall reports are not
# counted: QEMU's TCG on a loaded host can starve a vCPU long enough for one.)
testcase_no_kernel_splat() {
        local splats
        splats=$(dmesg | tail -n +"$((DMESG_START + 1))" | grep -E 'WARNING:|BUG:|KASAN:|UBSAN:|Oops|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|INFO: task .* blocked' || true)
        assert_eq "" "$splats" "WARN/BUG/KASAN/lockdep lines in dmesg"
}

run_testcases
