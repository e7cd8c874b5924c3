/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <math.h>

#include "alloc-util.h"
#include "bus-errors.h"
#include "bus-util.h"
#include "limiter-bus.h"
#include "limiter.h"
#include "slice-bus.h"
#include "string-util.h"

static LimiterManager *manager_of(void *userdata) {
        return userdata ? *(LimiterManager **) userdata : NULL;
}

static int check_manager(LimiterManager *lm, sd_bus_error *error) {
        if (!lm)
                return sd_bus_error_set(error, TONARI_ERROR_NOT_SUPPORTED,
                                        "Hog limiting is not available here: it needs slices (see Features).");
        return 0;
}

/* The slice manager is reached through the limiter: slice names resolve against it. */
/* ---- SetHogLimiting(s slice, s mode, a(sv) properties) */

static int read_overrides(sd_bus_message *m, LimiterSliceOverrides *o, sd_bus_error *error) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'r', "sv")) > 0) {
                const char *name;
                uint64_t v;

                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        return r;
                r = sd_bus_message_read(m, "v", "t", &v);
                if (r < 0) {
                        _cleanup_free_ char *e = cescape(name);
                        sd_bus_error_free(error);
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Hog limiting property '%s' takes a 't' (uint64).", strna(e));
                }
                if (streq(name, "MonitorIntervalUSec")) {
                        if (v < 100 * USEC_PER_MSEC || v > 10 * USEC_PER_MINUTE)
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Invalid MonitorIntervalUSec=%" PRIu64
                                                         ": expected 100ms to 10min.",
                                                         v);
                        o->interval_usec = v;
                } else if (streq(name, "WindowUSec")) {
                        if (v == 0)
                                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS,
                                                        "Invalid WindowUSec=0: expected at least one interval.");
                        o->window_usec = v;
                } else if (streq(name, "IOLimitBytesPerSec")) {
                        if (v < 1000)
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Invalid IOLimitBytesPerSec=%" PRIu64
                                                         ": expected at least 1000 B/s.",
                                                         v);
                        o->io_limit_bytes_per_sec = v;
                } else if (streq(name, "CPUWeight")) {
                        if (v < 1 || v > 10000)
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Invalid CPUWeight=%" PRIu64 ": expected 1 to 10000.", v);
                        o->cpu_limit_weight = v;
                } else if (streq(name, "CPUHogPercent")) {
                        if (v < 1 || v > 100)
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Invalid CPUHogPercent=%" PRIu64 ": expected 1 to 100.", v);
                        o->cpu_hog_percent = v;
                } else {
                        _cleanup_free_ char *e = cescape(name);
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Unknown hog limiting property '%s': expected MonitorIntervalUSec, "
                                                 "WindowUSec, IOLimitBytesPerSec, CPUWeight or CPUHogPercent.",
                                                 strna(e));
                }
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

int bus_limiter_method_set_hog_limiting(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        LimiterManager *lm = manager_of(userdata);
        LimiterSliceOverrides o = {};
        _cleanup_free_ char *why = NULL;
        HogLimitingMode mode;
        const char *mode_s;
        Slice *s;
        int r;

        r = bus_verify_privileged(m, error);
        if (r < 0)
                return r;
        r = check_manager(lm, error);
        if (r < 0)
                return r;
        r = bus_slice_read_existing(m, limiter_manager_slices(lm), &s, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "s", &mode_s);
        if (r < 0)
                return r;
        mode = hog_limiting_mode_from_string(mode_s);
        if (mode < 0) {
                _cleanup_free_ char *e = cescape(mode_s);
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Invalid HogLimiting='%s': expected no, yes or observe.", strna(e));
        }
        r = read_overrides(m, &o, error);
        if (r < 0)
                return r;

        r = limiter_manager_set_mode(lm, s, mode, &o, &why);
        if (r == -EOPNOTSUPP)
                return sd_bus_error_setf(error, TONARI_ERROR_NO_TASKSTATS,
                                         "HogLimiting=%s refused for slice '%s': taskstats is not usable here: %s.",
                                         mode_s, s->name, taskstats_support_to_string(limiter_manager_support(lm)));
        if (r == -ENOENT)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Slice '%s' has no processes yet, so no scope to make its hog limiting "
                                         "groups in: attach a process first.",
                                         s->name);
        if (r == -EINVAL && why)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Slice '%s': %s.", s->name, why);
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to set HogLimiting=%s on slice '%s': %m", mode_s,
                                               s->name);
        return sd_bus_reply_method_return(m, NULL);
}

/* ---- RegisterProcesses / UnregisterProcesses (s slice, au pids) */

static int refusal_error(sd_bus_error *error, LimiterRefusal why, pid_t pid, const char *slice) {
        switch (why) {
        case LIMITER_REFUSED_NO_PROCESS:
                return sd_bus_error_setf(error, TONARI_ERROR_NO_SUCH_PROCESS, "No process %i.", (int) pid);
        case LIMITER_REFUSED_KERNEL_THREAD:
                return sd_bus_error_setf(error, TONARI_ERROR_KERNEL_THREAD,
                                         "Process %i is a kernel thread: it cannot be moved between cgroups.", (int) pid);
        case LIMITER_REFUSED_PROTECTED:
                return sd_bus_error_setf(error, TONARI_ERROR_PROTECTED_PROCESS,
                                         "Process %i is PID 1 or tonarid itself: it is never hog-limited.", (int) pid);
        case LIMITER_REFUSED_NOT_OWNED:
                return sd_bus_error_setf(error, TONARI_ERROR_NOT_YOUR_PROCESS,
                                         "Process %i belongs to another user: only root may register it.", (int) pid);
        case LIMITER_REFUSED_REGISTERED:
                return sd_bus_error_setf(error, TONARI_ERROR_ALREADY_REGISTERED,
                                         "Process %i is registered for hog limiting already (or given twice).",
                                         (int) pid);
        case LIMITER_REFUSED_NOT_REGISTERED:
                return sd_bus_error_setf(error, TONARI_ERROR_NOT_REGISTERED,
                                         "Process %i is not registered for hog limiting in slice '%s'.", (int) pid,
                                         slice);
        default:
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Process %i refused.", (int) pid);
        }
}

static int method_register_common(sd_bus_message *m, void *userdata, sd_bus_error *error, bool reg) {
        LimiterManager *lm = manager_of(userdata);
        _cleanup_free_ pid_t *pids = NULL;
        const uint32_t *array;
        size_t size, n;
        LimiterRefusal why = LIMITER_REFUSED_NONE;
        pid_t bad = 0;
        uid_t uid;
        Slice *s;
        int r;

        r = check_manager(lm, error);
        if (r < 0)
                return r;
        /* Root may register anything; another user only processes of its own (checked per PID). */
        uid = bus_sender_uid(m);
        if (uid == (uid_t) -1)
                return sd_bus_error_set(error, SD_BUS_ERROR_ACCESS_DENIED, "Cannot tell who the caller is.");
        r = bus_slice_read_existing(m, limiter_manager_slices(lm), &s, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read_array(m, 'u', (const void **) &array, &size);
        if (r < 0)
                return r;
        n = size / sizeof(uint32_t);
        if (n == 0)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "No PIDs given.");
        pids = new(pid_t, n);
        if (!pids)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                if (array[i] == 0 || array[i] > INT32_MAX)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid PID %" PRIu32 ".",
                                                 array[i]);
                pids[i] = (pid_t) array[i];
        }

        if (limiter_manager_get_mode(lm, s) == HOG_LIMITING_NO)
                return sd_bus_error_setf(error, TONARI_ERROR_HOG_LIMITING_OFF,
                                         "Slice '%s' is not hog-limited: set HogLimiting=yes or observe first.",
                                         s->name);
        r = reg ? limiter_manager_check_register(lm, s, pids, n, uid, &bad, &why)
                : limiter_manager_unregister(lm, s, pids, n, uid, &bad, &why);
        if (why != LIMITER_REFUSED_NONE)
                return refusal_error(error, why, bad, s->name);
        if (reg && r >= 0) {
                /* The move is AttachProcesses(): the same arguments, into the slice's "unlimited". */
                SliceManager *sm = limiter_manager_slices(lm);

                r = sd_bus_message_rewind(m, true);
                if (r < 0)
                        return r;
                return bus_slice_method_attach(m, &sm, error);
        }
        if (r < 0)
                return sd_bus_error_set_errnof(error, r, "Failed to %s processes of slice '%s': %m",
                                               reg ? "register" : "unregister", s->name);
        return sd_bus_reply_method_return(m, NULL);
}

int bus_limiter_method_register(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return method_register_common(m, userdata, error, true);
}

int bus_limiter_method_unregister(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return method_register_common(m, userdata, error, false);
}

/* ---- ListManagedProcesses() → a(susssdddt) */

static int append_one(const LimiterProcessInfo *i, void *userdata) {
        sd_bus_message *reply = userdata;
        return sd_bus_message_append(reply, "(susssdddt)", i->slice, (uint32_t) i->pid, i->comm,
                                     limiter_class_to_string(i->class), i->limit, i->cpu_percent, i->io_bytes_per_sec,
                                     isnan(i->delay_percent) ? -1.0 : i->delay_percent, i->since_realtime_usec);
}

static int append_processes(sd_bus_message *reply, void *userdata) {
        return limiter_manager_foreach_process(userdata, append_one, reply);
}

int bus_limiter_method_list_processes(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        LimiterManager *lm = manager_of(userdata);
        int r;

        r = check_manager(lm, error);
        if (r < 0)
                return r;
        return bus_reply_array(m, "(susssdddt)", append_processes, lm);
}
