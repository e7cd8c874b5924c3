#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# random-reads.py READERS READS SEED MOUNTED EXPECTED PATH...
#
# READERS processes at once, each READS reads of a random range of a random PATH below MOUNTED,
# each compared byte for byte with the same range below EXPECTED. Prints the bytes compared.
import os, random, sys

readers, reads, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
mounted, expected, paths = os.fsencode(sys.argv[4]), os.fsencode(sys.argv[5]), [os.fsencode(p) for p in sys.argv[6:]]


def reader(n):
        rng = random.Random(seed * 1000 + n)
        total = 0
        fds = {}
        for _ in range(reads):
                p = rng.choice(paths)
                size = os.path.getsize(os.path.join(expected, p))
                off = rng.randrange(0, max(size, 1))
                length = rng.choice([1, 4096, 65536, 131072, 1 << 20, 3 << 20])
                if p not in fds:
                        fds[p] = os.open(os.path.join(mounted, p), os.O_RDONLY)
                got = os.pread(fds[p], length, off)
                with open(os.path.join(expected, p), "rb") as f:
                        f.seek(off)
                        want = f.read(length)
                if got != want:
                        print("reader %d: %r [%d, +%d) differs (%d bytes, want %d)" % (n, p, off, length, len(got), len(want)))
                        os._exit(1)
                total += len(got)
        print(total)
        os._exit(0)


pids = []
for n in range(readers):
        pid = os.fork()
        if pid == 0:
                reader(n)
        pids.append(pid)
failed = 0
for pid in pids:
        _, status = os.waitpid(pid, 0)
        failed += os.waitstatus_to_exitcode(status) != 0
sys.exit(1 if failed else 0)
