/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * libtonari: per-request resource domains (tonari_domain(3)).
 *
 * A server that runs requests of many tenants in the same processes (a web server, seed 003) moves
 * the process or thread that serves a request into the tenant's domain, a child cgroup of the
 * server's own delegated cgroup v2 subtree, for as long as the request runs, and back afterwards.
 *
 * Everything costly happens at configuration time, in tonari_domain_prepare(), tonari_domain_open()
 * and tonari_domain_set(): directories are made, controllers enabled, limits written and the
 * cgroup.procs (or cgroup.threads) files of the domain and of the home cgroup opened. The request
 * path, tonari_domain_enter() and tonari_domain_leave(), is one write(2) of "0" to a file that is
 * already open: no D-Bus call, no fork, no allocation, no formatting.
 *
 * The subtree under root:
 *     root/                  the delegated cgroup (systemd: the unit's cgroup with Delegate=yes; on
 *                            a host without systemd, any cgroup2 directory the caller may write)
 *     root/_home/            where the server's processes live outside requests (cgroup v2 forbids
 *                            processes in a cgroup that has controllers enabled for its children)
 *     root/<name>/           one per domain, with its limits
 * Threaded (TONARI_DOMAIN_THREADED): root/_threads/_home and root/_threads/<name> instead, made
 * "threaded" cgroups below the domain cgroup root/_threads, so that
 * single threads of one process can sit in different domains (Apache's event and worker MPMs).
 * Only the threaded controllers (cpu, cpuset, pids) work per thread: IO limits cannot be put on a
 * threaded domain and then apply to the server (the threaded domain root) as a whole, i.e. to
 * the tenant that runs it, not to the thread. tonari_domain_set() refuses them with -EOPNOTSUPP.
 *
 * All functions return 0 (or a count where said) on success and a negative errno-style value on
 * failure; they never print and never abort. A TonariDomain may be entered and left from any
 * thread at the same time (enter and leave only write to file descriptors the object holds).
 */

#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The name of the home cgroup below root. Domain names may not start with '_'. */
#define TONARI_DOMAIN_HOME "_home"
/* Threaded: the domain cgroup below root that is the threaded subtree's root (holds _home and the
 * domains), because systemd puts a delegated unit's control processes into root/.control, a domain
 * cgroup that a threaded root would refuse. */
#define TONARI_DOMAIN_THREADS "_threads"

/* Flags of tonari_domain_prepare() and tonari_domain_open(). */
enum {
        /* Threads move, not processes: cgroup.threads, threaded cgroups (see above). */
        TONARI_DOMAIN_THREADED = 1 << 0,
        /* tonari_domain_open(): make the domain's cgroup if it does not exist. */
        TONARI_DOMAIN_CREATE = 1 << 1,
};

typedef struct TonariDomain TonariDomain;

/* What the kernel counted for a domain since it was made (cumulative, all its processes). */
typedef struct TonariDomainCounters {
        uint64_t cpu_usec;          /* cpu.stat usage_usec */
        uint64_t io_read_bytes;     /* io.stat rbytes, summed over devices (0 when threaded) */
        uint64_t io_write_bytes;    /* io.stat wbytes, summed over devices (0 when threaded) */
        uint64_t tasks;             /* pids.current (processes or threads in it now) */
} TonariDomainCounters;

/*
 * Makes root ready to hold domains: creates root/_home (threaded if flags has
 * TONARI_DOMAIN_THREADED), moves every process of root into it, and enables the controllers
 * domains need in root/cgroup.subtree_control (cpu, io, pids; cpu and pids when threaded). root is
 * an absolute path to a cgroup2 directory. Idempotent: call it at every configuration load.
 * Returns 0; -EINVAL for a relative or empty root; -EMEDIUMTYPE if root is not on cgroup2 (a v1
 * hierarchy or no cgroup at all); -EACCES/-EPERM if root is not writable (not delegated);
 * -EOPNOTSUPP if a needed controller is not available in root (not enabled by its parent);
 * -EBUSY if root is the root of the cgroup hierarchy (it holds every process of the system);
 * other errors of mkdir(2)/write(2) on cgroupfs.
 */
int tonari_domain_prepare(const char *root, unsigned flags);

/*
 * Opens the domain name below root (prepared by tonari_domain_prepare() with the same flags),
 * creating its cgroup with TONARI_DOMAIN_CREATE. name: 1 to 64 characters of A-Z a-z 0-9 _ . - @,
 * not starting with '_', '.' or '-', and no cgroup interface name ("cpu.max" and the like).
 * Returns 0 and the object in *ret; -EINVAL for a bad name or root; -ENOENT if the domain does not
 * exist and TONARI_DOMAIN_CREATE was not given; -ENOMEM; errors as for tonari_domain_prepare().
 */
int tonari_domain_open(const char *root, const char *name, unsigned flags, TonariDomain **ret);

/* Closes the object's files and frees it; the cgroup stays. Accepts NULL; returns NULL. */
TonariDomain *tonari_domain_close(TonariDomain *d);

/*
 * Removes the domain's cgroup (it must be empty) and closes the object. Returns 0; -EBUSY if
 * processes are still in it; the object is closed in every case.
 */
int tonari_domain_remove(TonariDomain *d);

/*
 * Sets a limit of the domain, at configuration time, with systemd's property names and syntax
 * (systemd.resource-control(5)); "" or "infinity" removes the limit:
 *   CPUQuota=N%                 cpu.max, N% of one CPU (N may exceed 100), period 100 ms
 *   CPUWeight=1..10000          cpu.weight
 *   TasksMax=N                  pids.max
 *   IOReadBandwidthMax=DEV BYTES, IOWriteBandwidthMax=DEV BYTES
 *                               io.max for the block device DEV (a /dev path), BYTES per second,
 *                               with K, M, G, T suffixes (base 1000); not when threaded
 * Returns 0; -ENOENT for an unknown property; -EINVAL for a malformed value; -EOPNOTSUPP for an
 * IO property of a threaded domain; -ENODEV if DEV is no block device; errors of write(2).
 */
int tonari_domain_set(TonariDomain *d, const char *property, const char *value);

/*
 * Moves the caller into the domain: the calling process (all its threads), or with
 * TONARI_DOMAIN_THREADED only the calling thread. One write(2). Processes the caller forks
 * afterwards start in the domain too (a CGI program), and stay there when the caller leaves.
 * Returns 0; -EAGAIN when a pids limit (TasksMax=) would be exceeded; other errors of write(2)
 * (-EBUSY/-EOPNOTSUPP: the cgroup tree does not allow it, e.g. not prepared).
 */
int tonari_domain_enter(TonariDomain *d);

/* Moves the caller (process or thread, as for enter) back to root/_home. One write(2). */
int tonari_domain_leave(TonariDomain *d);

/*
 * Moves process pid (with TONARI_DOMAIN_THREADED: thread pid, a thread id of this process) back
 * to root/_home, for a caller that entered in one thread and cleans up in another (an event loop
 * that finishes a request elsewhere). One write(2) of the formatted number, no allocation.
 * Returns 0; -EINVAL for pid <= 0; -ESRCH if there is no such process; errors of write(2).
 */
int tonari_domain_leave_pid(TonariDomain *d, pid_t pid);

/*
 * Reads the domain's counters (above) with pread(2) on files opened by tonari_domain_open(): no
 * allocation. Counters of controllers that are not enabled read as 0. Returns 0 or an error of
 * pread(2), -EBADMSG if the kernel's text cannot be parsed.
 */
int tonari_domain_counters(TonariDomain *d, TonariDomainCounters *ret);

/* The domain's name, as given to tonari_domain_open(); valid until the object is closed. */
const char *tonari_domain_name(TonariDomain *d);

#ifdef __cplusplus
}
#endif
