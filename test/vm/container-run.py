#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Create and start one crun container and time both, as seed 004's section 6.3 does.

usage: container-run.py --id ID --bundle DIR --ready exit|http:PORT|mysql:SOCKET
                        [--output FILE] [--timeout SECONDS] [--cgroup-manager=systemd]

crun create: the container's init process exists in its namespaces, its root file system is
mounted and pivoted to, and it waits to exec the task. This program's "create" is the time
`crun create` takes; the caller adds the time it spent mounting the root file system, which
happens before (see test/vm/containers-lib.sh). crun start: the task is exec'd. "run" is the time
from just before `crun start` until
  exit        the task exited (its exit status must be 0),
  http:PORT   a complete "HTTP/1.x 200" response came from 127.0.0.1:PORT,
  mysql:SOCKET  the server listening on the unix socket SOCKET (a path in the container, reached
              through /proc/PID/root) sent its handshake packet: it accepts connections. (Over TCP a
              server without an account for 127.0.0.1 answers with an error packet instead.)
The container's stdout and stderr go to --output (default /dev/null). Prints one line,
"create=SECONDS run=SECONDS", and exits 0; exits 1 with a message when the container could not
be created or started, died before it was ready, exited non-zero, or was not ready within
--timeout (default 300) seconds. A service is left running (the caller may check more); stopping
and deleting the container (`crun delete --force`) and its rootfs are the caller's.

--cgroup-manager goes to crun: "systemd" (the default) makes each container a transient scope,
system.slice/crun-ID.scope, as container engines do on systemd hosts (crun's own default,
"cgroupfs", would put it at the root of the hierarchy, beside systemd's slices); it costs a
D-Bus call to systemd per container (0.1-0.2 s more create time in the TCG test bed, the same
for every root file system).

This process makes itself a child subreaper, so that the container's init, whose parent
(crun create) exits, becomes its child and its exit can be waited for exactly.
"""

import argparse
import ctypes
import math
import os
import signal
import socket
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36
# Poll interval while a service is not listening yet: short against the run times measured
# (hundreds of milliseconds in the TCG test bed), long enough not to steal the CPU it starts on.
POLL_SECONDS = 0.002


def fail(msg):
    print("container-run: " + msg, file=sys.stderr)
    sys.exit(1)


def http_ready(port, timeout):
    """True once 127.0.0.1:PORT answers GET / with a complete 200 response; False while nothing
    listens there."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
            s.sendall(b"GET / HTTP/1.0\r\nHost: localhost\r\n\r\n")
            data = b""
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                data += chunk
    except (ConnectionRefusedError, ConnectionResetError):
        return False
    if not data.startswith(b"HTTP/1.") or data.split(b" ", 2)[1] != b"200":
        fail("unexpected HTTP answer: %r" % data[:200])
    return True


def mysql_ready(path, timeout):
    """True once the unix socket PATH sends a MySQL protocol 10 handshake (header: 3-byte length,
    sequence 0; payload: protocol version 10); False while nothing listens there. The server
    creates its socket before it is done starting, and a connection made then waits in the
    backlog: the handshake, not the connect, says it accepts connections."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(timeout)
            s.connect(path)
            data = b""
            while len(data) < 5:
                chunk = s.recv(4096)
                if not chunk:
                    return False
                data += chunk
    except (FileNotFoundError, ConnectionRefusedError, ConnectionResetError):
        return False
    if data[3] != 0 or data[4] != 10:
        fail("unexpected MySQL greeting: %r" % data[:64])
    return True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--id", required=True)
    p.add_argument("--bundle", required=True)
    p.add_argument("--ready", required=True)
    p.add_argument("--output", default="/dev/null")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--cgroup-manager", default="systemd")
    a = p.parse_args()

    kind, _, arg = a.ready.partition(":")
    if kind == "exit":
        check = None
    elif kind == "http" and arg.isdigit():
        check = lambda timeout: http_ready(int(arg), timeout)
    elif kind == "mysql" and arg.startswith("/"):
        check = lambda timeout: mysql_ready("/proc/%d/root%s" % (pid, arg), timeout)
    else:
        fail("--ready wants exit, http:PORT or mysql:SOCKET, got '%s'" % a.ready)

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        fail("prctl(PR_SET_CHILD_SUBREAPER): " + os.strerror(ctypes.get_errno()))

    pid_file = os.path.join(a.bundle, "container.pid")
    with open(a.output, "ab") as out:
        t0 = time.monotonic()
        r = subprocess.run(["crun", "--cgroup-manager=" + a.cgroup_manager, "create", "--bundle", a.bundle,
                            "--pid-file", pid_file, a.id],
                           stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        t1 = time.monotonic()
    if r.returncode != 0:
        fail("crun create %s failed (%d), see %s" % (a.id, r.returncode, a.output))
    with open(pid_file) as f:
        pid = int(f.read())

    deadline = time.monotonic() + a.timeout
    # A task that never exits must not hang the caller.
    signal.signal(signal.SIGALRM, lambda *_: fail("%s still running after %g s, see %s" % (a.id, a.timeout, a.output)))
    signal.alarm(math.ceil(a.timeout) + 1)
    t2 = time.monotonic()
    r = subprocess.run(["crun", "--cgroup-manager=" + a.cgroup_manager, "start", a.id],
                       stdin=subprocess.DEVNULL)
    if r.returncode != 0:
        fail("crun start %s failed (%d)" % (a.id, r.returncode))
    if check is None:
        # crun create has exited, so the init is ours (subreaper): wait for exactly it.
        _, status = os.waitpid(pid, 0)
        t3 = time.monotonic()
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            fail("task of %s ended with wait status %#x, see %s" % (a.id, status, a.output))
    else:
        while True:
            left = deadline - time.monotonic()
            try:
                if left > 0 and check(left):
                    break
            except socket.timeout:
                pass
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                fail("%s exited (wait status %#x) before it was ready, see %s" % (a.id, status, a.output))
            if time.monotonic() > deadline:
                fail("%s not ready after %g s, see %s" % (a.id, a.timeout, a.output))
            time.sleep(POLL_SECONDS)
        t3 = time.monotonic()
    signal.alarm(0)
    print("create=%.6f run=%.6f" % (t1 - t0, t3 - t2))


if __name__ == "__main__":
    main()
