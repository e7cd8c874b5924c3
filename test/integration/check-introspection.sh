#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The introspection XML generated from the C vtable must equal the file in protocols/.
# Usage: check-introspection.sh BINARY XML-FILE
set -euo pipefail

binary=$1
expected=$2

if ! diff -u "$expected" <("$binary" --bus-introspect=-); then
        echo "FAIL: $binary's D-Bus API differs from $expected." >&2
        echo "If the change is intended: ninja -C <builddir> update-protocols, and review the diff." >&2
        exit 1
fi
echo "OK: $binary matches $expected"
