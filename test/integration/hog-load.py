#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# Workloads for the hog limiting tests and bench/hog-limit:
#   hog-load.py cpu [BUSY_MS SLEEP_MS]        computes (busy loop), or BUSY_MS on / SLEEP_MS off
#   hog-load.py io FILE BLOCK [SLEEP_MS]      O_DIRECT writes of BLOCK bytes over a 64 MiB file
# Prints nothing; runs until killed.
import mmap
import os
import sys
import time


def cpu(busy_ms=None, sleep_ms=None):
    if busy_ms is None:
        while True:
            pass
    while True:
        end = time.monotonic() + busy_ms / 1000
        while time.monotonic() < end:
            pass
        time.sleep(sleep_ms / 1000)


def io(path, block, sleep_ms=0.0):
    size = 64 * 1024 * 1024
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_DIRECT, 0o600)
    buf = mmap.mmap(-1, block)  # page-aligned, as O_DIRECT wants
    off = 0
    while True:
        os.pwrite(fd, buf, off)
        off = (off + block) % size
        if sleep_ms:
            time.sleep(sleep_ms / 1000)


if sys.argv[1] == "cpu":
    cpu(*(float(a) for a in sys.argv[2:4])) if len(sys.argv) > 2 else cpu()
elif sys.argv[1] == "io":
    io(sys.argv[2], int(sys.argv[3]), float(sys.argv[4]) if len(sys.argv) > 4 else 0.0)
else:
    sys.exit(f"unknown workload {sys.argv[1]!r}")
