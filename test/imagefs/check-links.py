#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# check-links.py MERGED UNPACKED LAYER-TOP ... LAYER-BOTTOM
#
# Hard links of an image stacked with overlayfs (MERGED, over the layers' mounts) against the same
# image unpacked (UNPACKED), name by name for every non-directory:
#   - names that are one inode in MERGED are one inode in UNPACKED, and the other way round;
#   - MERGED's link count is that of the file in the layer it comes from (overlayfs shows the
#     lower file's count), and UNPACKED's is the number of that file's names in its layer that
#     are still visible in MERGED as the same file. The two differ exactly when an upper layer
#     deleted one of the names (a whiteout): overlayfs cannot know, "umoci unpack" unlinks.
# Prints the number of names and of hard link groups checked; exits 1 with the differences.
import os, stat, sys

merged, unpacked, layers = sys.argv[1], sys.argv[2], sys.argv[3:]


def walk(root):
        out = {}
        for top, dirs, files in os.walk(root):
                for name in dirs + files:
                        full = os.path.join(top, name)
                        st = os.lstat(full)
                        if not stat.S_ISDIR(st.st_mode):
                                out[os.path.relpath(full, root)] = st
        return out


def groups(entries):
        g = {}
        for path, st in entries.items():
                g.setdefault((st.st_dev, st.st_ino), set()).add(path)
        return {path: frozenset(g[(st.st_dev, st.st_ino)]) for path, st in entries.items()}


m, u = walk(os.fsencode(merged)), walk(os.fsencode(unpacked))
gm, gu = groups(m), groups(u)
errors = []
if set(m) != set(u):
        errors.append("names differ: %r" % sorted(set(m) ^ set(u)))
layer_entries = [walk(os.fsencode(l)) for l in layers]
layer_groups = [groups(e) for e in layer_entries]
checked = 0
for path in sorted(set(m) & set(u)):
        if gm[path] != gu[path]:
                errors.append("%r: one inode with %r merged, with %r unpacked" % (path, sorted(gm[path]), sorted(gu[path])))
        # The layer the name comes from: the topmost that has it (overlayfs shows nothing else).
        for entries, lg in zip(layer_entries, layer_groups):
                if path in entries:
                        break
        else:
                errors.append("%r: in no layer" % path)
                continue
        if m[path].st_nlink != entries[path].st_nlink:
                errors.append("%r: %d links merged, %d in its layer" % (path, m[path].st_nlink, entries[path].st_nlink))
        visible = [n for n in lg[path] if n in gm and gm[n] == gm[path]]
        if u[path].st_nlink != len(visible):
                errors.append("%r: %d links unpacked, %d names of its layer's inode visible" %
                              (path, u[path].st_nlink, len(visible)))
        checked += 1
for e in errors:
        print(e)
print("checked %d names, %d hard link groups" % (checked, len({g for g in gu.values() if len(g) > 1})))
sys.exit(1 if errors else 0)
