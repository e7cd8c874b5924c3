#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tonari-imagefs against a real tonari-relay on a unix socket: the test image (make-test-image, plus a
# layer of large, sparse and random files) pulled into the relay, each layer mounted by tonari-imagefs,
# the layers stacked read-only with overlayfs and compared entry by entry with "umoci unpack" of the
# same image (modes, owners, times, xattrs, symlinks, devices, hard links, contents), in ToC and no-ToC
# mode with their round trips counted; damaged cache files and a relay serving wrong bytes (EIO, never
# the bytes); the relay stopped and started again; parallel random reads; a bounded cache.
# Needs root and /dev/fuse; env: IMAGEFS RELAY TONARICTL TONARICTL_RELAY.
set -eux
set -o pipefail

here=$(cd "$(dirname "$0")" && pwd)
. "$here/../testlib.sh"
((EUID == 0)) || { echo "needs root (FUSE mounts for everyone, overlayfs, device nodes in the image)"; exit 77; }
[[ -c /dev/fuse ]] || { echo "no /dev/fuse"; exit 77; }
for tool in umoci python3 fusermount3 findmnt; do
        command -v "$tool" >/dev/null || { echo "$tool is missing (./dev deps installs it)"; exit 77; }
done
grep -qw overlay /proc/filesystems || modprobe overlay 2>/dev/null || { echo "no overlayfs"; exit 77; }

WORK=$(mktemp -d /tmp/tonari-imagefs.XXXXXX)
# Everything mounted is listed here (FUSE mounts and overlays, in order) and every process started has
# a pid file, so that the cleanup finds them whatever testcase failed where.
: >"$WORK/mounts"

unmount_all() {
        local m
        for m in $(tac "$WORK/mounts"); do
                # findmnt, not mountpoint(1): a FUSE mount whose daemon died cannot be stat()ed.
                findmnt "$m" >/dev/null || continue
                umount "$m" 2>/dev/null || fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || true
        done
}
stop_pid_file() {
        local pid
        [[ -s $1 ]] || return 0
        pid=$(cat "$1")
        kill "$pid" 2>/dev/null && timeout 15 tail --pid="$pid" -f /dev/null || true
        kill -9 "$pid" 2>/dev/null || true
        rm -f "$1"
}
cleanup() {
        local f
        unmount_all
        for f in "$WORK"/*/imagefs.pid "$WORK/relay.pid"; do
                stop_pid_file "$f"
        done
        unmount_all
        rm -rf "$WORK"
}
trap cleanup EXIT

# The image: make-test-image's four layers and a fifth with files of several chunks (the ToC verifies
# those by 1 MiB chunk), a sparse one, and random files for the readers.
TONARI_TEST_ROOTFS=no
"$here/../imagestore/make-test-image" "$WORK/layout" 2> >(grep -v 'ignoring empty-valued xattr' >&2)
umoci unpack --image "$WORK/layout:test" "$WORK/bundle" >/dev/null 2>&1
mkdir -p "$WORK/bundle/rootfs/opt/rand"
head -c $((5 * 1024 * 1024 + 12345)) /dev/urandom >"$WORK/bundle/rootfs/opt/big.bin"
head -c $((300 * 1024)) /dev/urandom >"$WORK/bundle/rootfs/opt/medium.bin"
truncate -s 8M "$WORK/bundle/rootfs/opt/sparse.img"
printf 'in the middle' | dd of="$WORK/bundle/rootfs/opt/sparse.img" bs=1 seek=$((3 * 1024 * 1024 + 7)) conv=notrunc status=none
for i in 1 2 3 4 5 6; do
        head -c $((i * 397 * 1024 + i)) /dev/urandom >"$WORK/bundle/rootfs/opt/rand/f$i"
done
umoci repack --image "$WORK/layout:test" "$WORK/bundle" >/dev/null
rm -rf "$WORK/bundle"
umoci unpack --image "$WORK/layout:test" "$WORK/bundle" >/dev/null 2>&1
EXPECTED=$WORK/bundle/rootfs
python3 "$here/../imagestore/tree-listing.py" dir "$EXPECTED" | sed 's/"links": \[[^]]*\], //' >"$WORK/expected.txt"

cat >"$WORK/relay.conf" <<EOT
[Relay]
Store=$WORK/store
Listen=unix:$WORK/relay.sock
LogTarget=console
EOT
RELAY_ADDRESS=unix:$WORK/relay.sock
ctl() {
        TONARICTL_RELAY=$TONARICTL_RELAY "$TONARICTL" --relay="$RELAY_ADDRESS" "$@"
}
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
start_relay
ctl image pull "oci:$WORK/layout:test" test
mapfile -t LAYERS < <(ctl --json=short image show test | python3 -c 'import json, sys; [print(l["diffID"]) for l in json.load(sys.stdin)["layers"]]')
mapfile -t TOC_DIGESTS < <(ctl --json=short image show test | python3 -c 'import json, sys; [print(l["tocDigest"]) for l in json.load(sys.stdin)["layers"]]')
assert_eq 5 "${#LAYERS[@]}" "layers"

# start_imagefs NAME [OPTIONS...]: every layer mounted by one tonari-imagefs at $WORK/NAME/l1 (bottom)
# ... lN, with its cache at $WORK/NAME/cache unless OPTIONS name one; waits until all are mounted.
start_imagefs() {
        local name=$1 i args=() cache=()
        shift
        mkdir -p "$WORK/$name"
        for i in "${!LAYERS[@]}"; do
                mkdir -p "$WORK/$name/l$((i + 1))"
                args+=(--layer="${LAYERS[$i]}" --toc-digest="${TOC_DIGESTS[$i]}" --mountpoint="$WORK/$name/l$((i + 1))")
                echo "$WORK/$name/l$((i + 1))" >>"$WORK/mounts"
        done
        [[ " $* " == *" --cache-dir="* ]] || cache=(--cache-dir="$WORK/$name/cache")
        # The layers are one image's: implied directories take the lower layers' attributes (ToC mode).
        [[ " $* " == *" --no-toc "* ]] || args+=(--stacked)
        "$IMAGEFS" --relay="$RELAY_ADDRESS" "${args[@]}" "${cache[@]}" --stats-file="$WORK/$name/stats" "$@" \
                >>"$WORK/$name/imagefs.log" 2>&1 &
        echo $! >"$WORK/$name/imagefs.pid"
        for _ in $(seq 100); do
                findmnt -t fuse.tonari-imagefs "$WORK/$name/l${#LAYERS[@]}" >/dev/null && return 0
                kill -0 "$(cat "$WORK/$name/imagefs.pid")" 2>/dev/null || break
                sleep 0.1
        done
        cat "$WORK/$name/imagefs.log"
        return 1
}
# stop_imagefs NAME: its overlay unmounted, the daemon stopped (it unmounts its layers), nothing left.
stop_imagefs() {
        local i
        if mountpoint -q "$WORK/$1/merged"; then
                umount "$WORK/$1/merged"
        fi
        stop_pid_file "$WORK/$1/imagefs.pid"
        for i in "${!LAYERS[@]}"; do
                assert_rc 1 findmnt "$WORK/$1/l$((i + 1))"
        done
}
# overlay NAME: the layers stacked read-only at $WORK/NAME/merged.
overlay() {
        local lower="" i
        for ((i = ${#LAYERS[@]}; i >= 1; i--)); do
                lower+=${lower:+:}$WORK/$1/l$i
        done
        mkdir -p "$WORK/$1/merged"
        echo "$WORK/$1/merged" >>"$WORK/mounts"
        mount -t overlay overlay -o "ro,lowerdir=$lower" "$WORK/$1/merged"
}
# stat_sum NAME FIELD: FIELD summed over the mounts of NAME's daemon, as it writes them on SIGUSR1.
stat_sum() {
        rm -f "$WORK/$1/stats"
        kill -USR1 "$(cat "$WORK/$1/imagefs.pid")"
        for _ in $(seq 50); do
                [[ -s $WORK/$1/stats ]] && break
                sleep 0.1
        done
        grep -oE "(^| )$2=[0-9]+" "$WORK/$1/stats" | cut -d= -f2 | awk '{ s += $1 } END { print s + 0 }'
}
# compare NAME: the merged tree against the unpacked one, entry by entry, and its hard links. Lines
# matching $COMPARE_SKIP (a regex) are left out of both.
compare() {
        python3 "$here/../imagestore/tree-listing.py" dir "$WORK/$1/merged" | sed 's/"links": \[[^]]*\], //' |
                grep -vE "${COMPARE_SKIP:-^$}" >"$WORK/$1/got.txt"
        diff -u <(grep -vE "${COMPARE_SKIP:-^$}" "$WORK/expected.txt") "$WORK/$1/got.txt"
        assert_ge "$(wc -l <"$WORK/$1/got.txt")" 70 "entries compared"
        local layers=() i
        for ((i = ${#LAYERS[@]}; i >= 1; i--)); do
                layers+=("$WORK/$1/l$i")
        done
        python3 "$here/check-links.py" "$WORK/$1/merged" "$EXPECTED" "${layers[@]}"
}
# read_fails PATH: reading PATH fails with EIO (not other bytes, not another error).
read_fails() {
        local out rc=0
        out=$(cat "$1" 2>&1 >/dev/null) || rc=$?
        assert_eq 1 "$rc" "cat $1"
        assert_match "Input/output error" "$out"
}
sha() {
        sha256sum "$1" | cut -d' ' -f1
}
# drop_pages PATH: the kernel forgets PATH's cached pages, so that the next read reaches the daemon.
drop_pages() {
        python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$1"
}

testcase_toc_mode() {
        start_imagefs toc
        overlay toc
        # The five ToCs were loaded at once (one round trip for all), not one after the other.
        assert_match "Loaded the ToCs of 5 layers \([0-9]+ bytes\) at once in [0-9]+ us" "$(cat "$WORK/toc/imagefs.log")"
        compare toc
        # Every file's content read once, every name looked up, listed and its xattrs read: nothing of
        # that asked the relay but contents.
        assert_eq 0 "$(stat_sum toc metadata_round_trips)" "metadata round trips in ToC mode"
        assert_eq 0 "$(stat_sum toc errors)" "errors"
        assert_ge "$(stat_sum toc bytes_fetched)" $((20 * 1024 * 1024)) "bytes fetched"
        # A second walk is served by the kernel and the cache.
        local misses
        misses=$(stat_sum toc cache_misses)
        compare toc
        assert_eq "$misses" "$(stat_sum toc cache_misses)" "cache misses of the second walk"
        assert_eq 0 "$(stat_sum toc metadata_round_trips)" "metadata round trips in ToC mode"
        # Read-only, whatever the modes say.
        assert_rc 1 touch "$WORK/toc/l1/etc/passwd"
        assert_rc 1 mkdir "$WORK/toc/l1/new"
        stop_imagefs toc
        assert_match "Unmounted $WORK/toc/l1: .* metadata_round_trips=0 " "$(cat "$WORK/toc/imagefs.log")"
}

testcase_no_toc_mode() {
        start_imagefs notoc --no-toc
        overlay notoc
        # Without a ToC nothing says which directories a layer only implies: those of layer 3 show the
        # relay's made-up attributes (tonari-imagefs(8), --no-toc), all else is the same.
        assert_eq "755 0:0" "$(stat -c '%a %u:%g' "$WORK/notoc/merged/var/lib/日本語")"
        COMPARE_SKIP='"path": "(tmp|var/lib/\\u65e5\\u672c\\u8a9e)",' compare notoc
        assert_ge "$(stat_sum notoc metadata_round_trips)" 200 "metadata round trips without ToC"
        assert_eq 0 "$(stat_sum notoc errors)" "errors"
        stop_imagefs notoc
}

testcase_parallel_random_reads() {
        local files=(opt/big.bin opt/medium.bin opt/sparse.img bin/busybox opt/rand/f1 opt/rand/f2 opt/rand/f3
                opt/rand/f4 opt/rand/f5 opt/rand/f6)
        start_imagefs parallel
        overlay parallel
        python3 "$here/random-reads.py" 8 60 1 "$WORK/parallel/merged" "$EXPECTED" "${files[@]}"
        assert_eq 0 "$(stat_sum parallel errors)" "errors"
        # No-ToC mode verifies whole files: the same readers on its mounts.
        stop_imagefs parallel
        start_imagefs parallel-notoc --no-toc
        overlay parallel-notoc
        python3 "$here/random-reads.py" 8 30 2 "$WORK/parallel-notoc/merged" "$EXPECTED" "${files[@]}"
        stop_imagefs parallel-notoc
}

# The layer mount that holds PATH of the merged image: the top one that has it.
layer_of() {
        local i
        for ((i = ${#LAYERS[@]}; i >= 1; i--)); do
                [[ -e $WORK/$1/l$i/$2 ]] && { echo "$WORK/$1/l$i/$2"; return 0; }
        done
        return 1
}
# The content digest (hex) of PATH in the unpacked image: the name of its cache and store files.
content_hex() {
        sha "$EXPECTED/$1"
}
flip_byte() {
        local b
        b=$(dd if="$1" bs=1 skip="$2" count=1 status=none | od -An -tu1 | tr -d ' ')
        printf "$(printf '\\%03o' $(((b + 1) % 256)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

testcase_damaged_cache() {
        local big medium
        start_imagefs damaged --cache-dir="$WORK/damaged-cache"
        overlay damaged
        assert_eq "$(content_hex opt/big.bin)" "$(sha "$WORK/damaged/merged/opt/big.bin")"
        assert_eq "$(content_hex opt/medium.bin)" "$(sha "$WORK/damaged/merged/opt/medium.bin")"
        stop_imagefs damaged
        big=$WORK/damaged-cache/$(content_hex opt/big.bin)
        medium=$WORK/damaged-cache/$(content_hex opt/medium.bin)
        [[ -f $big && -f $medium ]]
        # Verified whole: recorded (root on a file system with trusted.* attributes), so that the next
        # start trusts them without reading them back, unless their files changed.
        [[ -f $big.verified && -f $medium.verified ]]
        # One byte of the third chunk of a large file, one of a single-chunk file, their mtimes put
        # back (their ctimes cannot be).
        touch -r "$big" "$WORK/big.mtime"
        touch -r "$medium" "$WORK/medium.mtime"
        flip_byte "$big" $((2 * 1024 * 1024 + 5))
        flip_byte "$medium" 1000
        touch -r "$WORK/big.mtime" "$big"
        touch -r "$WORK/medium.mtime" "$medium"

        # A new daemon on the same cache verifies before it serves: EIO, and the log names them.
        start_imagefs damaged --cache-dir="$WORK/damaged-cache"
        overlay damaged
        # Chunks before the damage are good and served.
        assert_eq "$(head -c 1048576 "$EXPECTED/opt/big.bin" | sha256sum)" "$(head -c 1048576 "$WORK/damaged/merged/opt/big.bin" | sha256sum)"
        read_fails "$WORK/damaged/merged/opt/big.bin"
        read_fails "$WORK/damaged/merged/opt/medium.bin"
        assert_match "cached bytes of 'opt/big.bin' do not match its digest sha256:$(content_hex opt/big.bin)" "$(cat "$WORK/damaged/imagefs.log")"
        assert_match "Layer ${LAYERS[4]}: cached bytes of 'opt/medium.bin'" "$(cat "$WORK/damaged/imagefs.log")"
        assert_ge "$(stat_sum damaged errors)" 2 "errors"
        # The damaged contents left the cache: the next read fetches them again.
        [[ ! -e $medium ]]
        drop_pages "$WORK/damaged/merged/opt/big.bin"
        drop_pages "$WORK/damaged/merged/opt/medium.bin"
        assert_eq "$(content_hex opt/big.bin)" "$(sha "$WORK/damaged/merged/opt/big.bin")"
        assert_eq "$(content_hex opt/medium.bin)" "$(sha "$WORK/damaged/merged/opt/medium.bin")"
        # Damage while the daemon runs is found too (the file's ctime changed since it was verified).
        drop_pages "$WORK/damaged/merged/opt/medium.bin"
        flip_byte "$medium" 5
        read_fails "$WORK/damaged/merged/opt/medium.bin"
        stop_imagefs damaged
}

testcase_relay_serves_wrong_bytes() {
        local object saved
        object=$(find "$WORK/store/objects" -name "$(content_hex opt/medium.bin)")
        [[ -f $object ]]
        saved=$WORK/medium.saved
        cp -a "$object" "$saved"
        flip_byte "$object" 7
        start_imagefs wrong
        overlay wrong
        read_fails "$WORK/wrong/merged/opt/medium.bin"
        assert_match "bytes the relay sent of 'opt/medium.bin' do not match its digest sha256:$(content_hex opt/medium.bin)" \
                "$(cat "$WORK/wrong/imagefs.log")"
        # Nothing of what failed was kept: with the relay's store repaired the file reads right.
        cp -a "$saved" "$object"
        assert_eq "$(content_hex opt/medium.bin)" "$(sha "$WORK/wrong/merged/opt/medium.bin")"

        # A large file: the damaged chunk only.
        object=$(find "$WORK/store/objects" -name "$(content_hex opt/big.bin)")
        cp -a "$object" "$saved"
        flip_byte "$object" $((4 * 1024 * 1024 + 3))
        assert_eq "$(head -c 4194304 "$EXPECTED/opt/big.bin" | sha256sum)" "$(head -c 4194304 "$WORK/wrong/merged/opt/big.bin" | sha256sum)"
        read_fails "$WORK/wrong/merged/opt/big.bin"
        cp -a "$saved" "$object"
        rm -f "$saved"
        drop_pages "$WORK/wrong/merged/opt/big.bin"
        assert_eq "$(content_hex opt/big.bin)" "$(sha "$WORK/wrong/merged/opt/big.bin")"
        stop_imagefs wrong
}

testcase_relay_away() {
        local start ms hits
        start_imagefs away --read-timeout=3s
        overlay away
        assert_eq "$(content_hex opt/medium.bin)" "$(sha "$WORK/away/merged/opt/medium.bin")"
        stop_pid_file "$WORK/relay.pid"

        # Metadata needs no relay; cached contents are served from the cache file.
        ls -lR "$WORK/away/merged" >/dev/null
        drop_pages "$WORK/away/merged/opt/medium.bin"
        hits=$(stat_sum away cache_hits)
        assert_eq "$(content_hex opt/medium.bin)" "$(sha "$WORK/away/merged/opt/medium.bin")"
        assert_ge "$(stat_sum away cache_hits)" $((hits + 1)) "cache hits"
        # An uncached read fails after ReadTimeoutSec=, not before and not much later.
        start=${EPOCHREALTIME/./}
        read_fails "$WORK/away/merged/opt/rand/f3"
        ms=$(((${EPOCHREALTIME/./} - start) / 1000))
        assert_ge "$ms" 2800 "ms until EIO"
        # The kernel may ask twice (readahead, then the read itself), each waiting the timeout.
        assert_le "$ms" 10000 "ms until EIO"
        assert_match "reading 'opt/rand/f3' .* failed" "$(cat "$WORK/away/imagefs.log")"

        # With the relay back, the same read works again within seconds (gRPC reconnects with a backoff
        # of at most 0.5 s, but its idle channel may wait a few seconds more).
        start_relay
        start=${EPOCHREALTIME/./}
        for _ in $(seq 15); do
                drop_pages "$WORK/away/merged/opt/rand/f3"
                sha "$WORK/away/merged/opt/rand/f3" >"$WORK/away/f3.sha" 2>/dev/null && break
                # Within a timeout of the last one that waited in vain, a read fails at once.
                sleep 1
        done
        assert_eq "$(content_hex opt/rand/f3)" "$(cat "$WORK/away/f3.sha")"
        ms=$(((${EPOCHREALTIME/./} - start) / 1000))
        echo "relay back: reads work again after $ms ms"
        assert_le "$ms" 15000 "ms until reads work again"
        stop_imagefs away
}

testcase_bounded_cache() {
        local bytes
        start_imagefs bounded --cache-max=1M
        overlay bounded
        compare bounded
        # Contents nobody holds are evicted, least recently used first, down to the bound.
        bytes=$(stat_sum bounded cache_bytes)
        assert_le "$bytes" $((1024 * 1024)) "cache bytes"
        assert_le "$(du -sb --apparent-size "$WORK/bounded/cache" | cut -f1)" $((1024 * 1024 + 65536)) "cache directory"
        # Evicted contents are fetched again.
        drop_pages "$WORK/bounded/merged/opt/big.bin"
        assert_eq "$(content_hex opt/big.bin)" "$(sha "$WORK/bounded/merged/opt/big.bin")"
        stop_imagefs bounded
}

testcase_refusals() {
        mkdir -p "$WORK/refuse/mnt"
        # A ToC digest that is not the layer's: refused before anything is mounted.
        assert_rc 1 "$IMAGEFS" --relay="$RELAY_ADDRESS" --layer="${LAYERS[0]}" --toc-digest="${TOC_DIGESTS[1]}" \
                --mountpoint="$WORK/refuse/mnt" --cache-dir="$WORK/refuse/cache"
        assert_rc 1 "$IMAGEFS" --relay="$RELAY_ADDRESS" --layer="sha256:$(printf '0%.0s' {1..64})" \
                --mountpoint="$WORK/refuse/mnt" --cache-dir="$WORK/refuse/cache"
        assert_rc 1 findmnt "$WORK/refuse/mnt"
        # One process per cache directory.
        start_imagefs refuse1 --cache-dir="$WORK/refuse/shared"
        assert_rc 1 "$IMAGEFS" --relay="$RELAY_ADDRESS" --layer="${LAYERS[0]}" --mountpoint="$WORK/refuse/mnt" \
                --cache-dir="$WORK/refuse/shared"
        # Unmounted from outside: the daemon notices, logs the counters and exits when none is left.
        local i
        for i in "${!LAYERS[@]}"; do
                fusermount3 -u "$WORK/refuse1/l$((i + 1))"
        done
        timeout 10 tail --pid="$(cat "$WORK/refuse1/imagefs.pid")" -f /dev/null
        assert_match "No mounts left" "$(cat "$WORK/refuse1/imagefs.log")"
        rm -f "$WORK/refuse1/imagefs.pid"
}

# prefetch_done NAME BYTES: waits until NAME's prefetch streams brought BYTES bytes in all.
prefetch_done() {
        for _ in $(seq 100); do
                [[ $(stat_sum "$1" prefetch_bytes) -ge $2 ]] && return 0
                sleep 0.1
        done
        cat "$WORK/$1/stats"
        return 1
}

testcase_prefetch() {
        local i rec=() pre=() files=(opt/rand/f3 opt/big.bin opt/medium.bin etc/passwd) f bytes=0
        mkdir -p "$WORK/records"
        for i in "${!LAYERS[@]}"; do
                rec+=(--record-opened="$WORK/records/l$((i + 1))")
                pre+=(--prefetch="$WORK/records/l$((i + 1))")
        done
        # A run records the files it opens, per layer, in the order of their first open.
        start_imagefs record "${rec[@]}"
        overlay record
        for f in "${files[@]}"; do
                cat "$WORK/record/merged/$f" >/dev/null
                bytes=$((bytes + $(stat -c %s "$EXPECTED/$f")))
        done
        stop_imagefs record
        assert_eq "opt/rand/f3 opt/big.bin opt/medium.bin" "$(cat "$WORK"/records/l* | grep '^opt/' | xargs)" "recorded"
        assert_match "etc/passwd" "$(cat "$WORK"/records/l*)"
        # The next run, with an empty cache, streams them in one call per layer right after the mount;
        # reading them afterwards asks the relay nothing.
        echo "not/in/the/layer" >>"$WORK/records/l${#LAYERS[@]}"
        start_imagefs prefetch "${pre[@]}"
        prefetch_done prefetch "$bytes"
        # The streams started only once every layer was mounted (they would compete with the ToCs).
        local first_stream last_mount
        first_stream=$(grep -n "prefetching [0-9]* files" "$WORK/prefetch/imagefs.log" | head -1 | cut -d: -f1)
        last_mount=$(grep -n "Mounted layer" "$WORK/prefetch/imagefs.log" | tail -1 | cut -d: -f1)
        assert_ge "$first_stream" "$((last_mount + 1))" "log line of the first prefetch stream (the last mount's: $last_mount)"
        assert_eq "$bytes" "$(stat_sum prefetch prefetch_bytes)" "bytes prefetched"
        assert_eq 0 "$(stat_sum prefetch content_round_trips)" "Read calls before any read"
        overlay prefetch
        for f in "${files[@]}"; do
                assert_eq "$(sha "$EXPECTED/$f")" "$(sha "$WORK/prefetch/merged/$f")" "$f"
        done
        assert_eq 0 "$(stat_sum prefetch content_round_trips)" "Read calls after reading the prefetched files"
        assert_eq 0 "$(stat_sum prefetch cache_misses)" "cache misses"
        assert_eq 0 "$(stat_sum prefetch errors)" "errors"
        stop_imagefs prefetch
        # A list that cannot be read, or a prefetch without the ToC, is refused.
        mkdir -p "$WORK/refuse-prefetch"
        assert_rc 1 "$IMAGEFS" --relay="$RELAY_ADDRESS" --layer="${LAYERS[0]}" --mountpoint="$WORK/refuse-prefetch" \
                --cache-dir="$WORK/refuse-prefetch.cache" --prefetch="$WORK/records/missing"
        assert_rc 1 "$IMAGEFS" --relay="$RELAY_ADDRESS" --layer="${LAYERS[0]}" --mountpoint="$WORK/refuse-prefetch" \
                --cache-dir="$WORK/refuse-prefetch.cache" --prefetch="$WORK/records/l1" --no-toc
        assert_rc 1 findmnt "$WORK/refuse-prefetch"
}

run_testcases
