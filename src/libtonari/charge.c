/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtonari's charging API: the per-thread state, the thread CPU clock and the ChargeCPU calls.
 * What to send and when is decided in charge-batch.c.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <systemd/sd-bus.h>

#include "alloc-util.h"
#include "bus-errors.h"
#include "bus-util.h"
#include "charge-batch.h"
#include "string-util.h"
#include "strv.h"
#include "time-util.h"
#include "tonari/charge.h"

#define _public_ __attribute__((visibility("default")))

/* Microseconds. How long a report waits for tonarid: short, because the caller's own work (a
 * container's log pipe) waits meanwhile, and long enough for a busy daemon on a loaded host. */
#define CHARGE_CALL_TIMEOUT_USEC (1 * USEC_PER_SEC)

/* Environment variable with a D-Bus address to use instead of the system bus. */
#define CHARGE_BUS_ADDRESS_ENV "TONARI_BUS_ADDRESS"

_Static_assert(TONARI_CHARGE_INTERVAL_USEC == CHARGE_INTERVAL_USEC, "interval differs from the header's");
_Static_assert(TONARI_CHARGE_USEC_MAX == CHARGE_USEC_MAX, "maximum differs from the header's");

typedef struct ChargeThread {
        ChargeBatch batch;
        /* Opened on the first report, dropped when it breaks; reopened on the next report. */
        sd_bus *bus;

        /* The open measurement of tonari_charge_begin(), if any. */
        bool measuring;
        char measure_target[NAME_MAX_LEN + 1];
        uint64_t measure_start_nsec;
} ChargeThread;

/* The calling thread's state, created on first use. The key exists for its destructor only: it
 * runs when a thread exits and sends what the thread has pending. */
static _Thread_local ChargeThread *charge_thread = NULL;
static pthread_key_t charge_thread_key;
static pthread_once_t charge_once = PTHREAD_ONCE_INIT;
static int charge_once_error = 0;

static int thread_cpu_nsec(uint64_t *ret) {
        struct timespec ts;

        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
                return negative_errno();
        *ret = (uint64_t) ts.tv_sec * USEC_PER_SEC * NSEC_PER_USEC + (uint64_t) ts.tv_nsec;
        return 0;
}

static int charge_bus(ChargeThread *t, sd_bus **ret) {
        const char *address;
        int r;

        if (!t->bus) {
                address = secure_getenv(CHARGE_BUS_ADDRESS_ENV);
                r = bus_open(isempty(address) ? NULL : address, "libtonari", &t->bus);
                if (r < 0)
                        /* Whatever the socket said (missing, refused, unparsable address): no bus. */
                        return r == -ENOMEM ? r : -ENOTCONN;
        }

        *ret = t->bus;
        return 0;
}

/*
 * The errno for a failed ChargeCPU call on a connection that is still open, as documented in
 * tonari/charge.h. sd_bus_call() names local failures too (a timeout is ...Error.Timeout).
 */
static int charge_error_to_errno(const sd_bus_error *error, int r) {
        const char *name = error->name;

        if (!name)
                return r < 0 ? r : -EIO;
        if (streq(name, TONARI_ERROR_NO_SUCH_SLICE))
                return -ENOENT;
        if (STR_IN_SET(name, SD_BUS_ERROR_ACCESS_DENIED, SD_BUS_ERROR_INTERACTIVE_AUTHORIZATION_REQUIRED))
                return -EACCES;
        if (streq(name, SD_BUS_ERROR_INVALID_ARGS))
                return -EINVAL;
        if (STR_IN_SET(name, TONARI_ERROR_NOT_SUPPORTED, SD_BUS_ERROR_UNKNOWN_METHOD,
                       SD_BUS_ERROR_UNKNOWN_OBJECT, SD_BUS_ERROR_UNKNOWN_INTERFACE))
                return -EOPNOTSUPP;
        /* tonarid is not running and not activatable, or its activation failed. */
        if (STR_IN_SET(name, SD_BUS_ERROR_SERVICE_UNKNOWN, SD_BUS_ERROR_NAME_HAS_NO_OWNER) ||
            startswith(name, "org.freedesktop.DBus.Error.Spawn."))
                return -ENOTCONN;
        /* Our own timeout, or the bus gave up on tonarid's answer. */
        if (STR_IN_SET(name, SD_BUS_ERROR_NO_REPLY, SD_BUS_ERROR_TIMEOUT))
                return -ETIMEDOUT;
        /* Anything else as sd-bus maps it, never 0. */
        return r < 0 ? r : -EIO;
}

/* One ChargeCPU call. */
static int charge_send(ChargeThread *t, const char *target, usec_t usec) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        sd_bus *bus;
        int r;

        r = charge_bus(t, &bus);
        if (r < 0)
                return r;

        r = sd_bus_message_new_method_call(bus, &m, "org.tonari.Manager1", "/org/tonari/Manager1",
                                           "org.tonari.Manager1", "ChargeCPU");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "st", target, (uint64_t) usec);
        if (r < 0)
                return r;

        r = sd_bus_call(bus, m, CHARGE_CALL_TIMEOUT_USEC, &error, &reply);
        if (r >= 0)
                return 0;

        if (sd_bus_is_open(bus) <= 0) {
                /* The connection broke (the bus went away): drop it, the next report connects
                 * afresh. */
                t->bus = sd_bus_flush_close_unref(t->bus);
                return -ENOTCONN;
        }
        return charge_error_to_errno(&error, r);
}

/* Reports everything pending for e now. */
static int charge_report(ChargeThread *t, ChargeEntry *e, usec_t now_usec) {
        usec_t usec = charge_entry_report_usec(e);
        int r;

        r = charge_send(t, e->target, usec);
        /* After a timeout the call may still reach tonarid (e.g. while D-Bus activation starts
         * it) and be applied: sending the amount again could charge the tenant twice, so it
         * counts as sent. Any other failure keeps it pending for the next interval. */
        charge_entry_reported(e, usec, r >= 0 || r == -ETIMEDOUT, now_usec);
        return r;
}

static int charge_thread_flush(ChargeThread *t) {
        usec_t now_usec = now(CLOCK_MONOTONIC);
        int ret = 0;

        for (size_t i = 0; i < t->batch.n_entries; i++) {
                ChargeEntry *e = &t->batch.entries[i];
                int r;

                if (charge_entry_report_usec(e) == 0)
                        continue;
                r = charge_report(t, e, now_usec);
                if (r < 0 && ret == 0)
                        ret = r;
                /* The bus or tonarid is unreachable for every target alike: do not wait again. */
                if (r == -ENOTCONN || r == -ETIMEDOUT)
                        break;
        }

        return ret;
}

static ChargeThread *charge_thread_free(ChargeThread *t, bool send) {
        if (!t)
                return NULL;
        if (send)
                (void) charge_thread_flush(t);
        charge_batch_done(&t->batch);
        /* In a forked child the connection is the parent's: sd_bus_unref() only frees our copy. */
        if (send)
                t->bus = sd_bus_flush_close_unref(t->bus);
        else
                t->bus = sd_bus_unref(t->bus);
        return mfree(t);
}

/* pthread key destructor: the thread exits. */
static void charge_thread_destroy(void *p) {
        charge_thread = NULL;
        (void) charge_thread_free(p, true);
}

/* exit() in any thread: that thread's key destructor does not run, so send its time here. */
static void charge_atexit(void) {
        ChargeThread *t = TAKE_PTR(charge_thread);

        if (!t)
                return;
        (void) pthread_setspecific(charge_thread_key, NULL);
        (void) charge_thread_free(t, true);
}

/* The child of fork() inherits the forking thread's pending time, which the parent will send:
 * forget it, and the parent's connection with it. */
static void charge_atfork_child(void) {
        ChargeThread *t = TAKE_PTR(charge_thread);

        if (!t)
                return;
        (void) pthread_setspecific(charge_thread_key, NULL);
        (void) charge_thread_free(t, false);
}

static void charge_init_once(void) {
        int r;

        r = pthread_key_create(&charge_thread_key, charge_thread_destroy);
        if (r != 0) {
                charge_once_error = -r;
                return;
        }
        r = pthread_atfork(NULL, NULL, charge_atfork_child);
        if (r != 0) {
                charge_once_error = -r;
                return;
        }
        if (atexit(charge_atexit) != 0)
                charge_once_error = -ENOMEM;
}

static int charge_thread_get(ChargeThread **ret) {
        ChargeThread *t;
        int r;

        if (charge_thread) {
                *ret = charge_thread;
                return 0;
        }

        r = pthread_once(&charge_once, charge_init_once);
        if (r != 0)
                return -r;
        if (charge_once_error < 0)
                return charge_once_error;

        t = new0(ChargeThread, 1);
        if (!t)
                return -ENOMEM;
        r = pthread_setspecific(charge_thread_key, t);
        if (r != 0) {
                free(t);
                return -r;
        }

        *ret = charge_thread = t;
        return 0;
}

/* Adds nsec to target's pending time and reports it if its interval has passed. What the report
 * costs this thread is work for the target too: it goes into the next report, and into
 * *ret_report_nsec (if not NULL; 0 without a report) for a caller whose own measurement runs on. */
static int charge_account(ChargeThread *t, const char *target, uint64_t nsec, uint64_t *ret_report_nsec) {
        usec_t now_usec = now(CLOCK_MONOTONIC);
        uint64_t before, after;
        ChargeEntry *e;
        int r;

        if (ret_report_nsec)
                *ret_report_nsec = 0;

        r = charge_batch_add(&t->batch, target, nsec, now_usec, &e);
        if (r < 0)
                return r;
        if (!charge_entry_due(e, now_usec))
                return 0;
        if (thread_cpu_nsec(&before) < 0)
                return charge_report(t, e, now_usec);
        r = charge_report(t, e, now_usec);
        if (thread_cpu_nsec(&after) >= 0 && after > before) {
                (void) charge_batch_add(&t->batch, target, after - before, now(CLOCK_MONOTONIC), NULL);
                if (ret_report_nsec)
                        *ret_report_nsec = after - before;
        }
        return r;
}

/* Opens a measurement for target (valid) from start_nsec on. */
static void charge_measure_open(ChargeThread *t, const char *target, uint64_t start_nsec) {
        /* Valid, so at most NAME_MAX_LEN characters. */
        memcpy(t->measure_target, target, strlen(target) + 1);
        t->measure_start_nsec = start_nsec;
        t->measuring = true;
}

/* CPU time of the open measurement up to now_nsec. */
static uint64_t charge_measure_elapsed(const ChargeThread *t, uint64_t now_nsec) {
        return now_nsec - MIN(t->measure_start_nsec, now_nsec);
}

_public_ int tonari_charge_begin(const char *target) {
        if (!charge_target_is_valid(target))
                return -EINVAL;
        if (charge_thread && charge_thread->measuring)
                return -EBUSY;
        /* With no measurement open, a switch only opens one. */
        return tonari_charge_switch(target);
}

_public_ int tonari_charge_end(void) {
        ChargeThread *t = charge_thread;
        uint64_t stop_nsec;
        int r;

        if (!t || !t->measuring)
                return -EALREADY;

        t->measuring = false;
        r = thread_cpu_nsec(&stop_nsec);
        if (r < 0)
                return r;

        return charge_account(t, t->measure_target, charge_measure_elapsed(t, stop_nsec), NULL);
}

_public_ int tonari_charge_switch(const char *target) {
        char previous[NAME_MAX_LEN + 1];
        uint64_t switch_nsec, previous_nsec, report_nsec;
        ChargeThread *t;
        int r;

        if (!charge_target_is_valid(target))
                return -EINVAL;

        r = charge_thread_get(&t);
        if (r < 0)
                return r;

        /* The one reading that ends the open measurement and starts the next: whatever the thread
         * runs from here on belongs to one of them. */
        r = thread_cpu_nsec(&switch_nsec);
        if (r < 0)
                return r;
        if (!t->measuring) {
                charge_measure_open(t, target, switch_nsec);
                return 0;
        }

        previous_nsec = charge_measure_elapsed(t, switch_nsec);
        memcpy(previous, t->measure_target, sizeof(previous));
        charge_measure_open(t, target, switch_nsec);

        /* A report made now is charged to the previous target (charge_account() adds its cost),
         * so the new measurement starts after it. */
        r = charge_account(t, previous, previous_nsec, &report_nsec);
        t->measure_start_nsec += report_nsec;
        return r;
}

_public_ int tonari_charge_add(const char *target, uint64_t usec) {
        uint64_t report_nsec;
        ChargeThread *t;
        int r;

        if (!charge_target_is_valid(target))
                return -EINVAL;
        if (usec > TONARI_CHARGE_USEC_MAX)
                return -ERANGE;

        r = charge_thread_get(&t);
        if (r < 0)
                return r;

        r = charge_account(t, target, usec * NSEC_PER_USEC, &report_nsec);
        /* The report's cost went to target: not to the open measurement as well. */
        if (t->measuring)
                t->measure_start_nsec += report_nsec;
        return r;
}

_public_ int tonari_charge_flush(void) {
        ChargeThread *t = charge_thread;

        if (!t)
                return 0;
        return charge_thread_flush(t);
}
