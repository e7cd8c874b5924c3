# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# find_apt_sources SUITE: sets the array "sources" to the host's apt sources files for SUITE (or
# to the colon-separated files in $TONARI_APT_SOURCES), so that mmdebstrap uses the host's own
# mirror and no mirror host name is ever written into the repository. Returns 1 with a message
# when the host has none, 2 when $TONARI_APT_SOURCES names a file that does not exist. Used by test/vm/mkimage and test/imagestore/make-rootfs-tar.
find_apt_sources() {
        local suite=$1 f
        sources=()
        if [[ -n "${TONARI_APT_SOURCES:-}" ]]; then
                IFS=: read -ra sources <<<"$TONARI_APT_SOURCES"
                for f in "${sources[@]}"; do
                        [[ -f "$f" ]] || { echo "TONARI_APT_SOURCES: no such file: $f" >&2; return 2; }
                done
                return 0
        fi
        for f in /etc/apt/sources.list.d/*.sources; do
                [[ -f "$f" ]] && grep -qE "^Suites:.*\<$suite\>" "$f" && sources+=("$f")
        done
        f=/etc/apt/sources.list
        [[ -f "$f" ]] && grep -qE "^deb[[:space:]].*[[:space:]]${suite}[[:space:]]" "$f" && sources+=("$f")
        ((${#sources[@]} > 0)) || { echo "no apt sources for '$suite' on this host (set TONARI_APT_SOURCES)" >&2; return 1; }
}
