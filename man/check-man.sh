#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Renders each built man page the way a reader gets it, with man(1) and groff at 80 columns, and
# fails when any page makes them print a warning or renders to nothing (no NAME section).
#
# Usage: check-man.sh PAGE...      (the roff files, e.g. build/man/tonarid.8)
# Exit status: 0 all pages clean, 1 at least one page failed, 2 usage, 77 man(1) missing (skip).
set -eu

if [ "$#" -eq 0 ]; then
        echo "Usage: $0 PAGE..." >&2
        exit 2
fi
if ! command -v man >/dev/null 2>&1; then
        echo "man not found (Debian: man-db), cannot render the pages"
        exit 77
fi

# Same output wherever the test runs: fixed width and locale, no pager, no user configuration.
export MANWIDTH=80 LC_ALL=C.UTF-8 MANPAGER=cat PAGER=cat
unset MANOPT MANPATH GROFF_TMAC_PATH 2>/dev/null || :

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

failed=0
for page in "$@"; do
        if [ ! -s "$page" ]; then
                echo "FAIL: $page: missing or empty"
                failed=1
                continue
        fi

        rc=0
        man --warnings -E UTF-8 -l "$page" >"$tmp/out" 2>"$tmp/err" || rc=$?

        if [ "$rc" -ne 0 ] || [ -s "$tmp/err" ]; then
                echo "FAIL: $page: man exited with $rc and said:"
                sed 's/^/    /' "$tmp/err"
                failed=1
        elif ! grep -q '^NAME$' "$tmp/out"; then
                # Nothing, or only the header and footer lines: the body went missing.
                echo "FAIL: $page: rendered to an empty page (no NAME section)"
                failed=1
        else
                echo "OK: $page ($(wc -l <"$tmp/out") lines)"
        fi
done

exit "$failed"
