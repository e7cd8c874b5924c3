#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# make-layout.py LAYOUT TAG [--gzip] [--missing-blob=N] LAYER.tar...
#
# Writes an OCI image layout (or adds a tag to one) whose image has the given tars as layers, bottom
# first: blobs, config with their diff_ids, manifest, index.json. For tests that need exact control
# over an image without root or umoci. --missing-blob=N: the manifest names layer N (from 0) by the
# digest of bytes the layout does not have, with the config's diff_id still that of the tar, as a
# hostile or broken image would.
import argparse, gzip, hashlib, json, os


def put(layout, data):
        digest = hashlib.sha256(data).hexdigest()
        path = os.path.join(layout, "blobs", "sha256", digest)
        if not os.path.exists(path):
                with open(path, "wb") as f:
                        f.write(data)
        return "sha256:" + digest


def main():
        p = argparse.ArgumentParser()
        p.add_argument("layout")
        p.add_argument("tag")
        p.add_argument("--gzip", action="store_true")
        p.add_argument("--missing-blob", type=int, default=-1)
        p.add_argument("layers", nargs="+")
        a = p.parse_args()

        os.makedirs(os.path.join(a.layout, "blobs", "sha256"), exist_ok=True)
        with open(os.path.join(a.layout, "oci-layout"), "w") as f:
                json.dump({"imageLayoutVersion": "1.0.0"}, f)
        index_path = os.path.join(a.layout, "index.json")
        index = {"schemaVersion": 2, "manifests": []}
        if os.path.exists(index_path):
                with open(index_path) as f:
                        index = json.load(f)

        diff_ids, layers = [], []
        for i, path in enumerate(a.layers):
                with open(path, "rb") as f:
                        tar = f.read()
                diff_ids.append("sha256:" + hashlib.sha256(tar).hexdigest())
                blob = gzip.compress(tar, mtime=0) if a.gzip else tar
                media_type = "application/vnd.oci.image.layer.v1.tar" + ("+gzip" if a.gzip else "")
                if i == a.missing_blob:
                        digest = "sha256:" + hashlib.sha256(b"not in the layout " + tar).hexdigest()
                else:
                        digest = put(a.layout, blob)
                layers.append({"mediaType": media_type, "digest": digest, "size": len(blob)})

        config = json.dumps({"architecture": "amd64", "os": "linux",
                             "rootfs": {"type": "layers", "diff_ids": diff_ids}}).encode()
        manifest = json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                               "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                                          "digest": put(a.layout, config), "size": len(config)},
                               "layers": layers}).encode()
        index["manifests"] = [m for m in index["manifests"]
                              if m.get("annotations", {}).get("org.opencontainers.image.ref.name") != a.tag]
        index["manifests"].append({"mediaType": "application/vnd.oci.image.manifest.v1+json",
                                   "digest": put(a.layout, manifest), "size": len(manifest),
                                   "annotations": {"org.opencontainers.image.ref.name": a.tag}})
        with open(index_path, "w") as f:
                json.dump(index, f)


main()
