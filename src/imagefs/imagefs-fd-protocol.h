/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Between tonari-imagefs-fd (the forwarder that owns /dev/fuse) and tonari-imagefs (the worker): one
 * SOCK_SEQPACKET connection per mount to the forwarder's socket. The first message on a connection is
 * a command, fields separated by NUL bytes:
 *
 *   "ATTACH" MOUNTPOINT FSNAME STATE   mount a new FUSE file system at MOUNTPOINT (absolute), or take
 *                                      over the one the forwarder already has there; STATE is the
 *                                      worker's own description of the mount, kept and listed
 *   "LIST"                             the forwarder's mounts
 *
 * and the answer is "OK" "NEW" | "OK" "ATTACHED" | "OK" (MOUNTPOINT STATE)... | "ERR" ERRNO.
 * After "ATTACH" the connection carries the FUSE protocol itself, one message per request (as read
 * from /dev/fuse) and one per reply or notification (as written to it): the worker runs libfuse's
 * low-level session on it through fuse_session_custom_io().
 *
 * A package upgrade restarts the worker but leaves the forwarder running (debian/rules): a new worker
 * must keep talking to the forwarder of an older version, so this protocol may only grow compatibly
 * (a new command is refused with "ERR" EINVAL by an older forwarder, and the worker must cope).
 */

/* In the forwarder unit's own RuntimeDirectory= (tonari-imagefs-fd.service). */
#define IMAGEFS_FD_SOCKET_DEFAULT "/run/tonari-imagefs-fd/fd.sock"

/* The largest FUSE message either way: libfuse 3.14 asks for 256 pages per request (1 MiB of data)
 * plus a page for the headers; a little more so that a larger request is reported, not cut. */
#define IMAGEFS_FD_MESSAGE_MAX (1024U * 1024U + 64U * 1024U)
/* Socket buffers of both ends: several largest messages in flight (root may force it). */
#define IMAGEFS_FD_SOCKET_BUFFER_BYTES (8 * 1024 * 1024)
/* The file system type is "fuse." this. */
#define IMAGEFS_FD_SUBTYPE "tonari-imagefs"
