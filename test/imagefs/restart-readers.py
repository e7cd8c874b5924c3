#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# restart-readers.py READERS MOUNTED EXPECTED STOPFILE PROGRESSDIR
#
# READERS processes, each looping until STOPFILE exists: walk MOUNTED (readdir, lookup, stat), check
# that it lists the regular files EXPECTED has, read every one of them after dropping its cached pages
# (so that the read reaches the file system) and compare its SHA-256 with EXPECTED's; and, every 8th
# file, pread a random range of a file held open all along (its handle outlives daemon restarts).
# Each reader writes its passes and files read to PROGRESSDIR/N after every file, so that a watcher can
# tell a hang from progress. At the end: one line per reader and a summary
#   readers=N passes=P files=F errors=E max_stall_ms=S
# with every error (errno name, path) printed before it. Exit status 1 if any error.
import errno, hashlib, os, random, sys, time
from multiprocessing import Process, Queue

readers = int(sys.argv[1])
mounted, expected, stopfile, progress = (os.fsencode(a) for a in sys.argv[2:6])


def regular_files(top):
        out = {}

        # os.walk() skips a directory it cannot list unless told: a listing error is an error here.
        def failed(e):
                raise e

        for d, dirs, files in os.walk(top, onerror=failed):
                for f in files:
                        p = os.path.join(d, f)
                        st = os.lstat(p)
                        if (st.st_mode & 0o170000) == 0o100000:
                                out[os.path.relpath(p, top)] = st.st_size
        return out


def sha(fd):
        h = hashlib.sha256()
        while True:
                b = os.read(fd, 1 << 20)
                if not b:
                        return h.hexdigest()
                h.update(b)


def reader(n, want, held_path, q):
        rng = random.Random(n)
        errors, passes, files, max_stall = [], 0, 0, 0.0
        held = os.open(os.path.join(mounted, held_path), os.O_RDONLY)
        with open(os.path.join(expected, held_path), "rb") as f:
                held_bytes = f.read()

        def timed(what, path, fn):
                nonlocal max_stall
                t = time.monotonic()
                try:
                        return fn()
                except OSError as e:
                        errors.append("%s %s: %s" % (what, e.filename or path, errno.errorcode.get(e.errno, e.errno)))
                        return None
                finally:
                        max_stall = max(max_stall, time.monotonic() - t)

        def read_file(p):
                fd = os.open(os.path.join(mounted, p), os.O_RDONLY)
                try:
                        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                        return sha(fd)
                finally:
                        os.close(fd)

        def read_held():
                off = rng.randrange(0, len(held_bytes))
                length = rng.choice([4096, 65536, 256 << 10])
                os.posix_fadvise(held, 0, 0, os.POSIX_FADV_DONTNEED)
                return os.pread(held, length, off) == held_bytes[off:off + length]

        while not os.path.exists(stopfile):
                listed = timed("walk", mounted, lambda: regular_files(mounted))
                if listed is not None and set(listed) != set(want):
                        errors.append("walk: %d files listed, %d expected" % (len(listed), len(want)))
                for p in sorted(want):
                        got = timed("read", p, lambda: read_file(p))
                        if got is not None and got != want[p]:
                                errors.append("read %s: checksum differs" % p)
                        if files % 8 == 0:
                                same = timed("pread", held_path, read_held)
                                if same is False:
                                        errors.append("pread %s: bytes differ" % held_path)
                        files += 1
                        # Replaced, never rewritten in place: a watcher must not read it empty.
                        with open(os.path.join(progress, b"%d.tmp" % n), "w") as f:
                                f.write("%d %d\n" % (passes, files))
                        os.rename(os.path.join(progress, b"%d.tmp" % n), os.path.join(progress, b"%d" % n))
                        if os.path.exists(stopfile):
                                break
                passes += 1
        os.close(held)
        q.put((n, passes, files, errors, max_stall))


def main():
        sizes = regular_files(expected)
        want = {}
        for p in sizes:
                with open(os.path.join(expected, p), "rb") as f:
                        want[p] = hashlib.sha256(f.read()).hexdigest()
        held_path = max(sizes, key=lambda p: sizes[p])
        q = Queue()
        procs = [Process(target=reader, args=(i, want, held_path, q)) for i in range(readers)]
        for p in procs:
                p.start()
        results = [q.get() for _ in procs]
        for p in procs:
                p.join()
        n_errors = 0
        for n, passes, files, errors, stall in sorted(results):
                for e in errors:
                        print("reader %d: %s" % (n, e))
                n_errors += len(errors)
                print("reader %d: passes=%d files=%d errors=%d max_stall_ms=%d" % (n, passes, files, len(errors), stall * 1000))
        print("readers=%d passes=%d files=%d errors=%d max_stall_ms=%d" % (
                readers, sum(r[1] for r in results), sum(r[2] for r in results), n_errors,
                max(r[4] for r in results) * 1000))
        return 1 if n_errors else 0


sys.exit(main())
