#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# tree-listing.py dir ROOT
# tree-listing.py tocs TOC.json...
#
# Prints one canonical JSON line per file of an image's root file system, sorted by path, so that
# two views of the same image can be compared with diff(1):
#   dir:  a real directory tree, e.g. what "umoci unpack" made (read with lstat and listxattr);
#   tocs: the layer chain as tonari stores it: the JSON dumps of the layers' ToCs
#         ("tonarictl image toc --json"), bottom layer first, merged the way overlayfs merges
#         lower directories (whiteouts hide names below, an opaque directory hides everything
#         below it, an upper name replaces a lower one, but for a directory the upper layer only
#         implies: the lower one stays, as unpacking keeps it).
# Each line has path, type, mode (octal, with setuid/setgid/sticky), uid, gid; regular files their
# size and sha256, symlinks their target, devices their major/minor; non-directories their mtime;
# every entry its xattrs (hex values); names of one inode carry the sorted list of all its names.
# Names are bytes: both views decode them the same way (UTF-8 with surrogate escapes, as os.fsdecode
# does), so a name that is not UTF-8 compares byte for byte too.
import hashlib, json, os, stat, sys

TYPES = {stat.S_IFREG: "regular", stat.S_IFDIR: "directory", stat.S_IFLNK: "symlink", stat.S_IFCHR: "char",
         stat.S_IFBLK: "block", stat.S_IFIFO: "fifo", stat.S_IFSOCK: "socket"}


def from_dir(root):
        entries, inodes = {}, {}
        for top, dirs, files in os.walk(root):
                for name in dirs + files:
                        full = os.path.join(top, name)
                        rel = os.path.relpath(full, root)
                        st = os.lstat(full)
                        kind = TYPES[stat.S_IFMT(st.st_mode)]
                        e = {"path": rel, "type": kind, "mode": "%04o" % stat.S_IMODE(st.st_mode), "uid": st.st_uid,
                             "gid": st.st_gid}
                        if kind == "regular":
                                e["size"] = st.st_size
                                with open(full, "rb") as f:
                                        e["sha256"] = hashlib.sha256(f.read()).hexdigest()
                        elif kind == "symlink":
                                e["target"] = os.readlink(full)
                        elif kind in ("char", "block"):
                                e["rdev"] = [os.major(st.st_rdev), os.minor(st.st_rdev)]
                        if kind != "directory":
                                e["mtime"] = [st.st_mtime_ns // 10**9, st.st_mtime_ns % 10**9]
                        xattrs = {}
                        for x in os.listxattr(full, follow_symlinks=False):
                                xattrs[x] = os.getxattr(full, x, follow_symlinks=False).hex()
                        e["xattrs"] = xattrs
                        entries[rel] = e
                        if kind != "directory" and st.st_nlink > 1:
                                inodes.setdefault((st.st_dev, st.st_ino), []).append(rel)
        for names in inodes.values():
                for n in names:
                        entries[n]["links"] = sorted(names)
        return entries


def from_tocs(paths):
        # view: path -> (layer index, entry dict); opaque and whiteouts applied layer by layer.
        view = {}
        for index, p in enumerate(paths):
                with open(p, encoding="utf-8", errors="surrogateescape") as f:
                        toc = json.load(f)
                layer = {e["path"]: e for e in toc["entries"] if e["path"] != ""}
                # Opaque directories first: they hide every lower name below them.
                for path, e in layer.items():
                        if e.get("opaque"):
                                for lower in [q for q in view if q.startswith(path + "/")]:
                                        del view[lower]
                for path, e in sorted(layer.items()):
                        if e["type"] == "whiteout":
                                for lower in [q for q in view if q == path or q.startswith(path + "/")]:
                                        del view[lower]
                                continue
                        replaced = view.get(path)
                        # A directory the layer only implies (tonari-toc(5)): unpacking the layer keeps
                        # the lower one and its attributes.
                        if replaced and e.get("implied") and e["type"] == "directory" and \
                                        replaced[1]["type"] == "directory":
                                continue
                        # A non-directory replaces a lower directory with all below it.
                        if replaced and (e["type"] != "directory" or replaced[1]["type"] != "directory"):
                                for lower in [q for q in view if q.startswith(path + "/")]:
                                        del view[lower]
                        view[path] = (index, e)

        entries, groups = {}, {}
        for path, (index, e) in view.items():
                x = {"path": path, "type": e["type"], "mode": "%04o" % e["mode"], "uid": e["uid"], "gid": e["gid"]}
                if e["type"] == "regular":
                        x["size"] = e["size"]
                        x["sha256"] = e["digest"].split(":", 1)[1]
                elif e["type"] == "symlink":
                        x["target"] = e["target"]
                elif e["type"] in ("char", "block"):
                        x["rdev"] = [e["rdev_major"], e["rdev_minor"]]
                if e["type"] != "directory":
                        x["mtime"] = [e["mtime_sec"], e["mtime_nsec"]]
                x["xattrs"] = {k: v for k, v in e.get("xattrs", {}).items()}
                entries[path] = x
                if e["type"] != "directory":
                        groups.setdefault((index, e.get("link_inode", e["inode"])), []).append(path)
        for names in groups.values():
                if len(names) > 1:
                        for n in names:
                                entries[n]["links"] = sorted(names)
        return entries


def main():
        mode, args = sys.argv[1], sys.argv[2:]
        entries = from_dir(args[0]) if mode == "dir" else from_tocs(args)
        for path in sorted(entries):
                print(json.dumps(entries[path], sort_keys=True))


main()
