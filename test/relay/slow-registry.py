#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# slow-registry.py LAYOUT PORT-FILE [--stall=DIGEST] [--rate=DIGEST:BYTES-PER-SECOND]
#
# A registry (the distribution API's GET requests, anonymous, plain HTTP on 127.0.0.1) serving an OCI
# layout: manifests by tag or digest, blobs by digest. --stall=DIGEST sends that blob's headers and
# first bytes, then nothing more for as long as the client stays; --rate sends it at the given rate.
# So a test can hold a pull in the middle of a layer, as a slow or stuck registry would. The port
# it listens on is written to PORT-FILE.
import argparse, http.server, json, os, socketserver, sys, time


def main():
        p = argparse.ArgumentParser()
        p.add_argument("layout")
        p.add_argument("port_file")
        p.add_argument("--stall", action="append", default=[])
        p.add_argument("--rate", action="append", default=[])
        a = p.parse_args()
        rates = {r.rsplit(":", 1)[0]: int(r.rsplit(":", 1)[1]) for r in a.rate}

        def blob(digest):
                return os.path.join(a.layout, "blobs", "sha256", digest.split(":", 1)[1])

        class Handler(http.server.BaseHTTPRequestHandler):
                protocol_version = "HTTP/1.1"

                def log_message(self, *args):
                        pass

                def send(self, code, data=b"", headers=()):
                        self.send_response(code)
                        for k, v in headers:
                                self.send_header(k, v)
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)

                def do_GET(self):
                        parts = self.path.split("/")
                        if self.path in ("/v2/", "/v2"):
                                return self.send(200, b"{}", [("Content-Type", "application/json")])
                        if len(parts) < 5 or parts[1] != "v2":
                                return self.send(404)
                        kind, ref = parts[-2], parts[-1]
                        if kind == "manifests":
                                with open(os.path.join(a.layout, "index.json")) as f:
                                        index = json.load(f)
                                for m in index["manifests"]:
                                        if ref in (m["digest"], m.get("annotations", {}).get(
                                                        "org.opencontainers.image.ref.name")):
                                                with open(blob(m["digest"]), "rb") as f:
                                                        data = f.read()
                                                return self.send(200, data, [("Content-Type", m["mediaType"]),
                                                                             ("Docker-Content-Digest", m["digest"])])
                                return self.send(404)
                        if kind != "blobs" or not os.path.exists(blob(ref)):
                                return self.send(404)
                        with open(blob(ref), "rb") as f:
                                data = f.read()
                        if ref not in a.stall and ref not in rates:
                                return self.send(200, data, [("Content-Type", "application/octet-stream")])
                        self.send_response(200)
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        try:
                                if ref in a.stall:
                                        self.wfile.write(data[:16])
                                        self.wfile.flush()
                                        while True:
                                                time.sleep(3600)
                                step = max(1, rates[ref] // 10)
                                for off in range(0, len(data), step):
                                        self.wfile.write(data[off:off + step])
                                        self.wfile.flush()
                                        time.sleep(0.1)
                        except OSError:
                                pass

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
                daemon_threads = True

                def handle_error(self, request, client_address):
                        pass  # clients that go away mid-blob are what this server is for

        server = Server(("127.0.0.1", 0), Handler)
        with open(a.port_file + ".tmp", "w") as f:
                f.write(str(server.server_address[1]))
        os.rename(a.port_file + ".tmp", a.port_file)
        server.serve_forever()


main()
