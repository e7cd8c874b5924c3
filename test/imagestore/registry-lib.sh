# shellcheck shell=bash
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# A real docker-registry (Debian's distribution 2.8) for the image tests: its own configuration,
# filesystem storage below DIR, listening on 127.0.0.1 at a free port. Sets REGISTRY_HOST
# ("127.0.0.1:PORT"), REGISTRY_PID and REGISTRY_STORAGE; registry_stop stops it by its PID.
# With --token, the registry demands bearer tokens from token-server.py (TOKEN_PID), which
# grants anonymous pulls except of "private/..." repositories; pushes then go to a second,
# open registry on the same storage (PUSH_HOST), as an operator's CI would.

free_port() {
        python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

_registry_config() {
        local dir=$1 port=$2 auth=${3:-} tls=${4:-}

        cat <<EOT
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
$tls
$auth
EOT
}

_wait_http() {
        local url=$1 pid=$2 log=$3
        for _ in $(seq 100); do
                # Any HTTP answer will do: an auth-protected /v2/ says 401.
                [[ $(curl -s -k -o /dev/null -w '%{http_code}' "$url") != 000 ]] && return 0
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
        done
        cat "$log" >&2
        return 1
}

# registry_start [--token|--tls] DIR
# --tls: HTTPS with a certificate for 127.0.0.1 made here, its CA (itself) in REGISTRY_CA.
registry_start() {
        local token=0 dir port auth="" tls=""
        if [[ $1 == --tls ]]; then
                shift
                mkdir -p "$1"
                openssl req -x509 -newkey rsa:2048 -nodes -keyout "$1/tls.key" -out "$1/tls.crt" -days 1 \
                        -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 2>/dev/null
                REGISTRY_CA=$1/tls.crt
                tls="  tls:
    certificate: $1/tls.crt
    key: $1/tls.key"
        fi
        [[ $1 == --token ]] && { token=1; shift; }
        dir=$1
        port=$(free_port)
        mkdir -p "$dir/storage"

        if ((token)); then
                local tport
                tport=$(free_port)
                openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/key.pem" -out "$dir/cert.pem" -days 1 \
                        -subj /CN=tonari-test-issuer 2>/dev/null
                python3 "$(dirname "${BASH_SOURCE[0]}")/token-server.py" "$dir" "$tport" >>"$dir/token.log" 2>&1 &
                TOKEN_PID=$!
                _wait_http "http://127.0.0.1:$tport/" "$TOKEN_PID" "$dir/token.log"
                auth="auth:
  token:
    realm: http://127.0.0.1:$tport/token
    service: tonari-test
    issuer: tonari-test-issuer
    rootcertbundle: $dir/cert.pem"
                PUSH_PORT=$(free_port)
                _registry_config "$dir" "$PUSH_PORT" >"$dir/push.yml"
                docker-registry serve "$dir/push.yml" >>"$dir/push.log" 2>&1 &
                PUSH_PID=$!
                PUSH_HOST=127.0.0.1:$PUSH_PORT
                _wait_http "http://$PUSH_HOST/v2/" "$PUSH_PID" "$dir/push.log"
        fi

        _registry_config "$dir" "$port" "$auth" "$tls" >"$dir/config.yml"
        docker-registry serve "$dir/config.yml" >>"$dir/registry.log" 2>&1 &
        REGISTRY_PID=$!
        REGISTRY_HOST=127.0.0.1:$port
        REGISTRY_STORAGE=$dir/storage/docker/registry/v2
        PUSH_HOST=${PUSH_HOST:-$REGISTRY_HOST}
        _wait_http "http${tls:+s}://$REGISTRY_HOST/v2/" "$REGISTRY_PID" "$dir/registry.log"
}

registry_stop() {
        local pid
        for pid in ${REGISTRY_PID:-} ${PUSH_PID:-} ${TOKEN_PID:-}; do
                kill "$pid" 2>/dev/null && timeout 10 tail --pid="$pid" -f /dev/null || true
        done
        REGISTRY_PID= PUSH_PID= TOKEN_PID= PUSH_HOST=
}

# registry_push LAYOUT:TAG REPOSITORY:TAG
registry_push() {
        skopeo copy --quiet --dest-tls-verify=false "oci:$1" "docker://${PUSH_HOST:-$REGISTRY_HOST}/$2"
}
