#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
#
# fdstore-supervisor.py DIR COMMAND...
#
# What systemd does for a Type=notify service with FileDescriptorStoreMax= and Restart=always, for
# hosts without systemd (the development machine): runs COMMAND with $NOTIFY_SOCKET pointing at
# DIR/notify, keeps the file descriptors it sends with FDSTORE=1 (by FDNAME=, dropped on
# FDSTOREREMOVE=1), and whenever COMMAND exits starts it again with those descriptors passed the
# sd_listen_fds() way ($LISTEN_FDS, $LISTEN_PID, $LISTEN_FDNAMES). Writes DIR/main.pid (the current
# process) and appends a line to DIR/ready at every READY=1. SIGTERM: stops COMMAND, closes the
# store (as `systemctl stop` does) and exits.
import os, signal, socket, sys, time

top = sys.argv[1]
command = sys.argv[2:]
store = {}
stopping = False
notify_path = os.path.join(top, "notify")
if os.path.exists(notify_path):
        os.unlink(notify_path)
sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
sock.bind(notify_path)
sock.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)


def spawn():
        names = list(store)
        fds = [store[n] for n in names]
        pid = os.fork()
        if pid == 0:
                # The stored descriptors at 3, 4, ... (through copies high above, so none is overwritten).
                high = [os.dup2(fd, 1000 + i) for i, fd in enumerate(fds)]
                for i, fd in enumerate(high):
                        os.dup2(fd, 3 + i)
                        os.close(fd)
                os.closerange(3 + len(fds), 1000 + len(fds) + 1)
                env = dict(os.environ, NOTIFY_SOCKET=notify_path)
                for k in ("LISTEN_FDS", "LISTEN_PID", "LISTEN_FDNAMES"):
                        env.pop(k, None)
                if fds:
                        env.update(LISTEN_FDS=str(len(fds)), LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES=":".join(names))
                os.execve(command[0], command, env)
        with open(os.path.join(top, "main.pid.tmp"), "w") as f:
                f.write("%d\n" % pid)
        os.rename(os.path.join(top, "main.pid.tmp"), os.path.join(top, "main.pid"))
        return pid


def on_term(signum, frame):
        global stopping
        stopping = True
        try:
                os.kill(child, signal.SIGTERM)
        except ProcessLookupError:
                pass


signal.signal(signal.SIGTERM, on_term)
child = spawn()
sock.settimeout(0.1)
while True:
        try:
                msg, fds, _, _ = socket.recv_fds(sock, 4096, 64)
        except (socket.timeout, InterruptedError):
                msg, fds = None, []
        if msg:
                fields = dict(l.split("=", 1) for l in msg.decode().split("\n") if "=" in l)
                name = fields.get("FDNAME", "stored")
                if fields.get("FDSTORE") == "1":
                        for fd in fds:
                                if name in store:
                                        os.close(store[name])
                                store[name] = fd
                        fds = []
                if fields.get("FDSTOREREMOVE") == "1" and name in store:
                        os.close(store.pop(name))
                if fields.get("READY") == "1":
                        with open(os.path.join(top, "ready"), "a") as f:
                                f.write("%d\n" % child)
        for fd in fds:
                os.close(fd)
        pid, _ = os.waitpid(child, os.WNOHANG)
        if pid == child:
                if stopping:
                        break
                time.sleep(0.1)  # RestartSec=100ms
                child = spawn()
for fd in store.values():
        os.close(fd)
os.unlink(notify_path)
