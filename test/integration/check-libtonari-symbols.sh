#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# What libtonari exports, with the version node of each symbol, must be what
# debian/libtonari0.symbols records: a symbol added without a new node, or a node renamed after a
# release, shows here before a package is built.
# Usage: check-libtonari-symbols.sh LIBRARY SYMBOLS-FILE
set -euo pipefail

library=$1
symbols=$2
command -v objdump >/dev/null || { echo "objdump is missing (binutils)"; exit 77; }

# "name@NODE" for every dynamic symbol defined in a version node of the library.
exported() {
        objdump -T "$library" | awk 'NF >= 2 && $(NF-1) ~ /^LIBTONARI_/ && $0 !~ /\*UND\*/ { print $NF "@" $(NF-1) }' | sort
}
recorded() {
        awk '/^ [^ ]+@[^ ]+ / { print $1 }' "$symbols" | sort
}

# A symbol's version in the symbols file is the release its node is named after.
if awk '/^ [^ ]+@LIBTONARI_[^ ]+ / { split($1, a, "@LIBTONARI_"); if ($2 != a[2] ".0") { print; bad = 1 } }
        END { exit bad }' "$symbols"; then :; else
        echo "FAIL: these symbols of $symbols do not have the version their node is named after." >&2
        exit 1
fi
if ! diff -u <(recorded) <(exported); then
        echo "FAIL: $library exports other symbols or versions than $symbols records." >&2
        echo "New API goes into a new node of src/libtonari/libtonari.sym and into $symbols." >&2
        exit 1
fi
echo "OK: $library exports what $symbols records ($(exported | wc -l) symbols)"
