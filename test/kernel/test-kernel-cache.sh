#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# kernel/build's cache pruning on a fake cache: no kernel is built (--prune only prunes).
# Usage: test-kernel-cache.sh SOURCE-ROOT
set -eux
set -o pipefail
src=$1
# shellcheck source=test/testlib.sh
. "$src/test/testlib.sh"

WORK=$(mktemp -d /tmp/tonari-kernel-cache.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export TONARI_CACHE_DIR=$WORK

# fake_kernel DAYS-AGO: a cache entry last used DAYS-AGO days ago; prints its key.
fake_kernel() {
        local key dir
        key=$(printf '%s' "$1-$RANDOM" | sha256sum | cut -d' ' -f1)
        dir=$WORK/kernel/$key
        mkdir -p "$dir"
        echo fake >"$dir/bzImage"
        touch -d "$1 days ago" "$dir"
        echo "$key"
}

left() {
        find "$WORK/kernel" -mindepth 1 -maxdepth 1 -printf '%f\n' | sort | tr '\n' ' '
}

testcase_keeps_the_most_recently_used() {
        local k
        rm -rf "$WORK/kernel"
        for d in 40 1 20 3 9; do
                k[d]=$(fake_kernel "$d")
        done
        # Not kernels: a publish in progress, the lock, the log of a failed build.
        mkdir "$WORK/kernel/.tmp.abcdef"
        touch -d '50 days ago' "$WORK/kernel/.tmp.abcdef" "$WORK/kernel/last-failed-build.log"
        assert_eq "" "$("$src/kernel/build" --prune)" "stdout of --prune"
        assert_eq "$(printf '%s\n' .lock .tmp.abcdef last-failed-build.log "${k[1]}" "${k[3]}" "${k[9]}" | sort | tr '\n' ' ')" \
                "$(left)"
        TONARI_KERNEL_KEEP=1 "$src/kernel/build" --prune
        assert_eq "$(printf '%s\n' .lock .tmp.abcdef last-failed-build.log "${k[1]}" | sort | tr '\n' ' ')" "$(left)"
}

testcase_waits_for_nobody() {
        local k
        rm -rf "$WORK/kernel"
        for d in 1 2 3 4; do
                k[d]=$(fake_kernel "$d")
        done
        # Another checkout holds the lock (building): nothing is pruned, and --prune returns at once.
        exec 7>"$WORK/kernel/.lock"
        flock 7
        assert_rc 0 timeout 10 "$src/kernel/build" --prune
        assert_eq 4 "$(find "$WORK/kernel" -mindepth 1 -maxdepth 1 -name '????????????????*' | wc -l)"
        exec 7>&-
        "$src/kernel/build" --prune
        assert_eq 3 "$(find "$WORK/kernel" -mindepth 1 -maxdepth 1 -name '????????????????*' | wc -l)"
        [[ ! -e "$WORK/kernel/${k[4]}" ]]
}

testcase_bad_keep() {
        assert_rc_match 1 "TONARI_KERNEL_KEEP=0" env TONARI_KERNEL_KEEP=0 "$src/kernel/build" --prune
        assert_rc_match 1 "usage" "$src/kernel/build" --prune extra
}

run_testcases
