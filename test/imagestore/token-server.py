#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# token-server.py DIR PORT: the token issuer of the distribution spec's token flow, for a real
# docker-registry configured with "auth: token" (registry-lib.sh registry_start --token). It grants
# anonymous pull of every repository except those starting with "private/", signs RS256 JWTs with
# DIR/key.pem (signing by the openssl command) and names the key the way the registry looks it
# up in its rootcertbundle (libtrust key ID). Every request is appended to DIR/token-requests.
import base64, hashlib, json, os, subprocess, sys, time
from http.server import BaseHTTPRequestHandler, HTTPServer
from urllib.parse import parse_qs, urlparse

directory, port = sys.argv[1], int(sys.argv[2])
key = os.path.join(directory, "key.pem")
issuer, service = "tonari-test-issuer", "tonari-test"

spki = subprocess.run(["openssl", "pkey", "-in", key, "-pubout", "-outform", "DER"], check=True,
                      capture_output=True).stdout
kid_b32 = base64.b32encode(hashlib.sha256(spki).digest()[:30]).decode().rstrip("=")
kid = ":".join(kid_b32[i:i + 4] for i in range(0, len(kid_b32), 4))

def b64(data):
        return base64.urlsafe_b64encode(data).decode().rstrip("=")

def token(scope):
        access = []
        for s in scope:
                kind, _, rest = s.partition(":")
                name, _, actions = rest.rpartition(":")
                if kind == "repository" and not name.startswith("private/") and "pull" in actions.split(","):
                        access.append({"type": "repository", "name": name, "actions": ["pull"]})
        now = int(time.time())
        header = {"typ": "JWT", "alg": "RS256", "kid": kid}
        claims = {"iss": issuer, "sub": "", "aud": service, "exp": now + 300, "nbf": now - 10, "iat": now,
                  "jti": b64(os.urandom(12)), "access": access}
        signing_input = (b64(json.dumps(header).encode()) + "." + b64(json.dumps(claims).encode())).encode()
        signature = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key], input=signing_input, check=True,
                                   capture_output=True).stdout
        return signing_input.decode() + "." + b64(signature)

class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
                url = urlparse(self.path)
                query = parse_qs(url.query)
                with open(os.path.join(directory, "token-requests"), "a") as log:
                        log.write(self.path + "\n")
                if url.path != "/token" or query.get("service") != [service]:
                        self.send_response(400)
                        self.end_headers()
                        return
                body = json.dumps({"token": token(query.get("scope", [])), "expires_in": 300}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        def log_message(self, *args):
                pass

HTTPServer(("127.0.0.1", port), Handler).serve_forever()
