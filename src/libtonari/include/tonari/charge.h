/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * libtonari: charging CPU time to another slice.
 *
 * A helper process that works on behalf of a tenant (a container's log collector, a proxy, ...)
 * measures the CPU time its thread spends on that work and tells tonarid, which shortens the
 * tenant slice's CPU quota by as much afterwards (org.tonari.Manager1.ChargeCPU). See libtonari(3).
 *
 * All functions return 0 on success and a negative errno-style value on failure; they never print
 * and never abort.
 *
 * Threads: all state is per thread. Each thread measures its own CPU time
 * (CLOCK_THREAD_CPUTIME_ID), keeps its own pending amounts and opens its own bus connection on its
 * first report. Nothing is shared, so no locking is needed, and an amount is never sent by a
 * thread other than the one that measured it. When a thread exits, what it has pending is sent
 * and its connection closed; exit() does the same for the thread that calls it. After fork() the
 * child starts with nothing pending (the parent still owns what it measured).
 *
 * Batching: a thread sends at most one message per target per TONARI_CHARGE_INTERVAL_USEC, apart
 * from tonari_charge_flush() and thread exit; the intervals of a target follow each other on a
 * fixed grid that starts with its first report, so a report made late does not delay the next. Time measured in between stays pending in the thread
 * and goes out with the first tonari_charge_end(), tonari_charge_switch() or tonari_charge_add()
 * that ends time for that target after the interval, with tonari_charge_flush(), or at thread exit.
 *
 * Bus: the system bus, or the D-Bus address in $TONARI_BUS_ADDRESS if set (ignored in setuid and
 * setgid programs). Each report is a synchronous call that waits at most one second for tonarid.
 *
 * Errors of a report:
 *   -ENOENT      tonarid has no slice of that name (org.tonari.Error.NoSuchSlice)
 *   -EACCES      the caller may not charge: only root and the users and groups in tonarid.conf's
 *                [Borrow] AllowUsers= and AllowGroups= may
 *   -EINVAL      tonarid refused the arguments (org.freedesktop.DBus.Error.InvalidArgs)
 *   -EOPNOTSUPP  tonarid cannot charge on this host (org.tonari.Error.NotSupported), or is too
 *                old to know ChargeCPU
 *   -ENOTCONN    no connection to the bus, or tonarid is not running and could not be started
 *   -ETIMEDOUT   tonarid did not answer within one second
 *   -ENOMEM      out of memory
 * Other D-Bus errors are passed on as the errno sd-bus maps them to. After a failed report the
 * amount stays pending and is tried again with the next report for the target, at most once per
 * interval, except after -ETIMEDOUT: the call may still reach tonarid and be applied, so the
 * amount counts as sent rather than risk charging the tenant twice.
 */

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Microseconds. A thread sends at most one ChargeCPU per target in this interval (500 ms). */
#define TONARI_CHARGE_INTERVAL_USEC UINT64_C(500000)

/* Microseconds. The most one report may carry (one hour, tonarid's limit per call); also the most
 * a thread keeps pending per target, so that time measured while tonarid is unreachable cannot
 * pile up without bound. What would go beyond it is dropped. */
#define TONARI_CHARGE_USEC_MAX UINT64_C(3600000000)

/*
 * Starts measuring the calling thread's CPU time for work done on behalf of the slice target.
 * target is a slice name: 1 to 64 characters of A-Z a-z 0-9 _ . : @ -, not starting with '.' or
 * '-'. No bus traffic.
 * Returns 0; -EINVAL for a NULL or invalid name; -EBUSY if this thread has a measurement open
 * already (measurements do not nest); -ENOMEM.
 */
int tonari_charge_begin(const char *target);

/*
 * Stops the measurement opened by tonari_charge_begin() in this thread and adds the CPU time the
 * thread used since then to what is pending for its target. If the interval has passed since
 * this thread last reported that target, sends one ChargeCPU for everything pending for it (whole
 * microseconds; the remainder stays pending).
 * Returns 0; -EALREADY if this thread has no measurement open; -E2BIG if the thread has time
 * pending, or a report within the interval, for 1024 other targets; -ENOMEM; or the error of the
 * report (see above). The measurement is closed in any case; its time is kept (pending) even when
 * the report fails, but lost with -E2BIG and -ENOMEM.
 */
int tonari_charge_end(void);

/*
 * Ends the measurement open in this thread, if any, as tonari_charge_end() does, and opens one for
 * target as tonari_charge_begin() does, with one reading of the thread's CPU clock: no CPU time
 * falls between the two measurements, as it does between tonari_charge_end() and the next
 * tonari_charge_begin() (the library's own work and two clock system calls). Meant for a thread
 * that works for one target after another, or for the same target in a loop (call it at the top
 * of each iteration, and tonari_charge_end() once after the loop); a report made here is charged
 * to the previous target, not measured again for the new one. With no measurement open it is
 * tonari_charge_begin().
 * Returns 0; -EINVAL for an invalid name and -ENOMEM for no memory for the thread's state, with
 * nothing changed; otherwise the new measurement is open, and the errors are those of
 * tonari_charge_end() for the previous one (-E2BIG, -ENOMEM, or the error of the report).
 */
int tonari_charge_switch(const char *target);

/*
 * Adds usec microseconds of CPU time, measured by the caller in some other way, to what this
 * thread has pending for target, and reports it like tonari_charge_end() does. No measurement
 * needs to be open; an open one is not affected.
 * Returns 0; -EINVAL for an invalid name (as for tonari_charge_begin()); -ERANGE if usec is above
 * TONARI_CHARGE_USEC_MAX; -E2BIG and -ENOMEM as for tonari_charge_end(); or the error of the
 * report.
 */
int tonari_charge_add(const char *target, uint64_t usec);

/*
 * Sends now, regardless of the interval, everything this thread has pending: one ChargeCPU per
 * target with at least one whole microsecond pending. An open measurement is not included (end it
 * first). Call it before exiting in ways that skip exit(), e.g. _exit() or exec(), and when done
 * with a target for good, since its pending time is otherwise sent only at the next report for it.
 * Returns 0 if everything was sent (or nothing was pending), else the error of the first report
 * that failed; what failed stays pending. The other targets are still tried, unless the bus or
 * tonarid is unreachable (-ENOTCONN, -ETIMEDOUT).
 */
int tonari_charge_flush(void);

#ifdef __cplusplus
}
#endif
