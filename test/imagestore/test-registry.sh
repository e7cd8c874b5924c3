#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# test-registry.sh TEST-BINARY: runs TEST-BINARY (test-registry) against real docker-registries
# holding make-test-image's image, pushed with skopeo: one open, one that demands bearer tokens
# from token-server.py. Root (make-test-image makes devices).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
((EUID == 0)) || { echo "needs root (the test image has device nodes and owners)"; exit 77; }
for tool in docker-registry skopeo umoci curl openssl; do
        command -v "$tool" >/dev/null || { echo "$tool is missing (./dev deps installs it)"; exit 77; }
done
. "$here/registry-lib.sh"

dir=$(mktemp -d /tmp/tonari-registry.XXXXXX)
trap 'registry_stop; rm -rf "$dir"' EXIT

"$here/make-test-image" "$dir/layout" 2> >(grep -v 'ignoring empty-valued xattr' >&2)

registry_start "$dir/open"
registry_push "$dir/layout:test" tonari/test:v1
# Not REGISTRY_*: docker-registry takes those from its environment as configuration.
export TEST_REGISTRY_HOST=$REGISTRY_HOST TEST_REGISTRY_DATA=$REGISTRY_STORAGE TEST_REPOSITORY=tonari/test TEST_TAG=v1
"$1"
registry_stop

registry_start --token "$dir/token"
registry_push "$dir/layout:test" tonari/test:v1
registry_push "$dir/layout:test" private/test:v1
# The registry really demands a token.
[[ $(curl -s -o /dev/null -w '%{http_code}' "http://$REGISTRY_HOST/v2/tonari/test/manifests/v1") == 401 ]]
export TEST_REGISTRY_HOST=$REGISTRY_HOST TEST_REGISTRY_DATA=$REGISTRY_STORAGE TOKEN_REQUESTS=$dir/token/token-requests
"$1"
registry_stop
unset TOKEN_REQUESTS

registry_start --tls "$dir/tls"
registry_push "$dir/layout:test" tonari/test:v1
export TEST_REGISTRY_HOST=$REGISTRY_HOST TEST_REGISTRY_DATA=$REGISTRY_STORAGE TEST_REGISTRY_CA=$REGISTRY_CA
"$1"
