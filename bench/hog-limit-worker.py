#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# The processes of bench/hog-limit (seed 001, §5): each runs its task over and over for SECONDS
# and writes how many times it completed it to OUT. Writes are O_DIRECT (what io.max throttles
# without depending on writeback), CPU work a counted loop; both sized by calibrate.
#
#   hog-limit-worker.py calibrate DIR              prints "loops_per_sec bytes_per_sec" measured alone
#   hog-limit-worker.py run KIND SECONDS OUT DIR LOOPS_PER_SEC BYTES_PER_SEC
# KIND: w2 (write ~2 s), w1c2 (write ~1 s, compute ~2 s), c5 (compute ~5 s),
#       a (compute ~1 s), b (compute ~0.5 s, write ~3 s); "~" as measured alone;
#       lat (a 2 ms task every 10 ms; OUT gets its 99th percentile latency in ms, not a count).
import mmap
import os
import sys
import time

BLOCK = 1 << 20
FILE_SIZE = 256 << 20


class Writer:
    def __init__(self, path):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
        self.buf = mmap.mmap(-1, BLOCK)
        self.off = 0

    def write(self, nbytes):
        for _ in range(max(1, nbytes // BLOCK)):
            os.pwrite(self.fd, self.buf, self.off)
            self.off = (self.off + BLOCK) % FILE_SIZE


def compute(loops):
    x = 0
    for _ in range(int(loops)):
        x += 1
    return x


def calibrate(d):
    t = time.monotonic()
    compute(2_000_000)
    lps = 2_000_000 / (time.monotonic() - t)
    w = Writer(os.path.join(d, "calibrate.data"))
    w.write(16 * BLOCK)  # allocate first: later rewrites do not
    t = time.monotonic()
    w.write(64 * BLOCK)
    bps = 64 * BLOCK / (time.monotonic() - t)
    os.unlink(os.path.join(d, "calibrate.data"))
    print(int(lps), int(bps))


def latency(seconds, out, lps):
    """A latency-sensitive victim: every 10 ms a 2 ms task (alone); OUT gets its p99 in ms."""
    end = time.monotonic() + seconds
    lat = []
    while time.monotonic() < end:
        time.sleep(0.01)
        t = time.monotonic()
        compute(lps * 0.002)
        lat.append((time.monotonic() - t) * 1000)
    lat.sort()
    with open(out, "w") as f:
        f.write(f"{lat[int(len(lat) * 0.99)]:.3f}\n")


def run(kind, seconds, out, d, lps, bps):
    if kind == "lat":
        return latency(seconds, out, lps)
    w = Writer(os.path.join(d, f"{kind}.{os.getpid()}.data"))
    steps = {
        "w2": [("w", 2)],
        "w1c2": [("w", 1), ("c", 2)],
        "c5": [("c", 5)],
        "a": [("c", 1)],
        "b": [("c", 0.5), ("w", 3)],
    }[kind]
    end = time.monotonic() + seconds
    n = 0
    # Completed tasks plus the fraction of the one under way at the end, as the paper's counts
    # of short runs would otherwise be all-or-nothing.
    while True:
        start_all = time.monotonic()
        done = True
        for what, sec in steps:
            # In slices of 0.1 s of the task, so the end is noticed in time.
            parts = max(1, int(sec * 10))
            for _ in range(parts):
                if time.monotonic() >= end:
                    done = False
                    break
                if what == "c":
                    compute(lps * sec / parts)
                else:
                    w.write(int(bps * sec / parts))
                n += 1 / (parts * len(steps))
            if not done:
                break
        if not done:
            break
    os.unlink(os.path.join(d, f"{kind}.{os.getpid()}.data"))
    with open(out, "w") as f:
        f.write(f"{n:.3f}\n")


if sys.argv[1] == "calibrate":
    calibrate(sys.argv[2])
else:
    run(sys.argv[2], float(sys.argv[3]), sys.argv[4], sys.argv[5], float(sys.argv[6]), float(sys.argv[7]))
