/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <sys/resource.h>
#include <unistd.h>

#include "alloc-util.h"
#include "borrow-bus.h"
#include "limiter-bus.h"
#include "bus-util.h"
#include "log.h"
#include "manager-bus.h"
#include "manager.h"
#include "slice-bus.h"
#include "string-util.h"
#include "user-util.h"

static int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                                sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", PACKAGE_VERSION);
}

static int append_features(sd_bus_message *reply, void *userdata) {
        Manager *m = userdata;
        int r;

        r = features_refresh("/", &m->features);
        if (r < 0)
                log_debug_errno(r, "Failed to probe the host's features again, keeping what was found: %m");
        r = sd_bus_message_open_container(reply, 'a', "(sbs)");
        if (r < 0)
                return r;
        for (FeatureId i = 0; i < _FEATURE_MAX; i++) {
                r = sd_bus_message_append(reply, "(sbs)", feature_to_string(i), m->features.feature[i].available,
                                          strempty(m->features.feature[i].detail));
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

static int append_config_files(sd_bus_message *reply, void *userdata) {
        const Manager *m = userdata;
        return sd_bus_message_append_strv(reply, m->config_files);
}

static int property_get_features(sd_bus *bus, const char *path, const char *interface, const char *property,
                                 sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return append_features(reply, userdata);
}

static int property_get_log_level(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        return sd_bus_message_append(reply, "s", log_level_to_string(log_get_max_level()));
}

static int property_get_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const Manager *m = userdata;
        return sd_bus_message_append(reply, "s", manager_state_to_string(m->state));
}

static int property_get_config_files(sd_bus *bus, const char *path, const char *interface,
                                     const char *property, sd_bus_message *reply, void *userdata,
                                     sd_bus_error *error) {
        return append_config_files(reply, userdata);
}

/* One {sv} entry of GetStatus() whose value is written by append(). */
static int append_status_entry(sd_bus_message *reply, const char *key, const char *signature,
                               int (*append)(sd_bus_message *reply, void *userdata), Manager *m) {
        int r;

        r = sd_bus_message_open_container(reply, 'e', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "s", key);
        if (r < 0)
                return r;
        r = bus_message_append_container(reply, 'v', signature, append, m);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(reply);
}

static usec_t rusage_cpu_usec(const struct rusage *ru) {
        return (usec_t) ru->ru_utime.tv_sec * USEC_PER_SEC + (usec_t) ru->ru_utime.tv_usec +
               (usec_t) ru->ru_stime.tv_sec * USEC_PER_SEC + (usec_t) ru->ru_stime.tv_usec;
}

static int append_status(sd_bus_message *reply, void *userdata) {
        Manager *m = userdata;
        struct rusage ru = {};
        BorrowStats stats;
        LimiterStats hog;
        int r;

        /* The daemon's own cost, so operators (and benchmarks) can see what tonari itself uses. */
        if (getrusage(RUSAGE_SELF, &ru) < 0)
                return -errno;

        r = sd_bus_message_append(reply, "{sv}{sv}{sv}{sv}{sv}{sv}{sv}{sv}", "Version", "s", PACKAGE_VERSION,
                                  "State", "s", manager_state_to_string(m->state), "PID", "u", (uint32_t) getpid(),
                                  "StartTimestamp", "t", m->start_realtime_usec, "UptimeUSec", "t",
                                  now(CLOCK_MONOTONIC) - m->start_monotonic_usec, "CPUUsageUSec", "t",
                                  rusage_cpu_usec(&ru), "MemoryPeakBytes", "t", (uint64_t) ru.ru_maxrss * 1024,
                                  "LogLevel", "s", log_level_to_string(log_get_max_level()));
        if (r < 0)
                return r;

        r = sd_bus_message_append(reply, "{sv}{sv}", "SliceBackend", "s",
                                  m->slices ? slice_manager_backend_name(m->slices) : "", "Slices", "u",
                                  (uint32_t) (m->slices ? slice_manager_count(m->slices) : 0));
        if (r < 0)
                return r;
        /* What enforcing borrowing costs: time in period ticks, boundary probes and proxy samples,
         * cgroup writes and reads. */
        borrow_manager_get_stats(m->borrow, &stats);
        r = sd_bus_message_append(reply, "{sv}{sv}{sv}{sv}{sv}", "BorrowProxies", "u", (uint32_t) stats.n_proxies,
                                  "BorrowWorkUSec", "t", stats.work_usec, "BorrowTicks", "t", stats.n_ticks,
                                  "BorrowCgroupWrites", "t", stats.n_writes, "BorrowProbeReads", "t",
                                  stats.n_probe_reads);
        if (r < 0)
                return r;
        /* What keeping the ledger durable costs: state file writes and the time spent on them. */
        /* Which path borrowing may take ([Borrow] Enforcement=), how many slices the kernel enforces
         * and the writes to its files. */
        r = sd_bus_message_append(reply, "{sv}{sv}{sv}", "BorrowEnforcement", "s",
                                  borrow_enforcement_mode_to_string(m->config.borrow_enforcement), "BorrowKernelTargets",
                                  "u", (uint32_t) stats.n_kernel_targets, "BorrowKernelWrites", "t",
                                  stats.n_kernel_writes);
        if (r < 0)
                return r;
        r = sd_bus_message_append(reply, "{sv}{sv}{sv}", "BorrowStateWrites", "t", stats.n_state_writes,
                                  "BorrowJournalWrites", "t", stats.n_journal_writes,
                                  "BorrowStateWriteUSec", "t", stats.state_write_usec);
        if (r < 0)
                return r;
        /* What hog limiting costs: rounds, the time spent in them, its decisions. */
        limiter_manager_get_stats(m->limiter, &hog);
        r = sd_bus_message_append(reply, "{sv}{sv}{sv}{sv}{sv}{sv}", "HogSlices", "u", (uint32_t) hog.n_slices,
                                  "HogProcesses", "u", (uint32_t) hog.n_processes, "HogRounds", "t", hog.n_rounds,
                                  "HogWorkUSec", "t", hog.work_usec, "HogLimited", "t", hog.n_limited, "HogReleased",
                                  "t", hog.n_released);
        if (r < 0)
                return r;
        r = append_status_entry(reply, "ConfigFiles", "as", append_config_files, m);
        if (r < 0)
                return r;
        return append_status_entry(reply, "Features", "a(sbs)", append_features, m);
}

static int method_get_status(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        return bus_reply_array(message, "{sv}", append_status, userdata);
}

static void log_level_change(int level, int old, uid_t uid) {
        log_struct(LOG_NOTICE, "TONARI_LOG_LEVEL=%s", log_level_to_string(level), "TONARI_CALLER_UID=%d", (int) uid,
                   LOG_MESSAGE("Log level set to '%s' (was '%s') by UID %d.", log_level_to_string(level),
                               log_level_to_string(old), (int) uid));
}

static int method_set_log_level(sd_bus_message *message, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        Manager *m = userdata;
        const char *value;
        uid_t uid = UID_INVALID;
        int level, old, r;

        r = sd_bus_message_read(message, "s", &value);
        if (r < 0)
                return r;

        r = bus_verify_privileged(message, error);
        if (r < 0)
                return r;

        level = log_level_from_string(value);
        if (level < 0) {
                _cleanup_free_ char *e = cescape(value);
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Invalid log level '%s': expected emerg, alert, crit, err, warning, "
                                         "notice, info, debug or 0-7.",
                                         strna(e));
        }

        if (sd_bus_query_sender_creds(message, SD_BUS_CREDS_EUID | SD_BUS_CREDS_AUGMENT, &creds) >= 0)
                (void) sd_bus_creds_get_euid(creds, &uid);

        /* The change is logged at notice while the more verbose of the two levels is in effect, so
         * lowering the level does not swallow the record of who lowered it. */
        old = log_get_max_level();
        if (level < old)
                log_level_change(level, old, uid);
        manager_set_log_level(m, level);
        if (level >= old)
                log_level_change(level, old, uid);

        return sd_bus_reply_method_return(message, NULL);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),

        SD_BUS_PROPERTY("Version", "s", property_get_version, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        /* No signal: an entry can turn true after a read (see features_refresh()). */
        SD_BUS_PROPERTY("Features", "a(sbs)", property_get_features, 0, 0),
        SD_BUS_PROPERTY("State", "s", property_get_state, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("LogLevel", "s", property_get_log_level, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("StartTimestamp", "t", NULL, offsetof(Manager, start_realtime_usec),
                        SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("ConfigFiles", "as", property_get_config_files, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),

        /* Read-only methods are open to every user (and allowed by the D-Bus policy): GetStatus,
         * GetSlice, ListSlices. */
        SD_BUS_METHOD_WITH_ARGS("GetStatus", SD_BUS_NO_ARGS, SD_BUS_RESULT("a{sv}", status), method_get_status,
                                SD_BUS_VTABLE_UNPRIVILEGED),

        /* Slices (slice-bus.c), their handlers get &Manager.slices as userdata. CreateSlice,
         * SetSliceProperties, RemoveSlice and AttachProcesses are root-only like SetLogLevel below. */
        SD_BUS_METHOD_WITH_ARGS_OFFSET("CreateSlice", SD_BUS_ARGS("s", name, "a(sv)", properties),
                                       SD_BUS_RESULT("o", slice), bus_slice_method_create, offsetof(Manager, slices),
                                       SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("SetSliceProperties", SD_BUS_ARGS("s", name, "a(sv)", properties),
                                       SD_BUS_NO_RESULT, bus_slice_method_set_properties, offsetof(Manager, slices),
                                       SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("RemoveSlice", SD_BUS_ARGS("s", name, "s", move_processes_to), SD_BUS_NO_RESULT,
                                       bus_slice_method_remove, offsetof(Manager, slices), SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("GetSlice", SD_BUS_ARGS("s", name), SD_BUS_RESULT("o", slice),
                                       bus_slice_method_get, offsetof(Manager, slices), SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("ListSlices", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(sosttt)", slices),
                                       bus_slice_method_list, offsetof(Manager, slices), SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("AttachProcesses", SD_BUS_ARGS("s", name, "au", pids), SD_BUS_NO_RESULT,
                                       bus_slice_method_attach, offsetof(Manager, slices), SD_BUS_VTABLE_UNPRIVILEGED),

        /* CPU borrowing (borrow-bus.c), handlers get &Manager.borrow. ChargeCPU is open in the
         * D-Bus policy and decided in code (root, or [Borrow] AllowUsers=/AllowGroups=); AddProxy
         * and RemoveProxy are root-only; the lists are read-only. */
        SD_BUS_METHOD_WITH_ARGS_OFFSET("ChargeCPU", SD_BUS_ARGS("s", slice, "t", usec), SD_BUS_NO_RESULT,
                                       bus_borrow_method_charge_cpu, offsetof(Manager, borrow),
                                       SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("AddProxy", SD_BUS_ARGS("s", slice, "u", pid, "s", cgroup),
                                       SD_BUS_RESULT("u", id), bus_borrow_method_add_proxy, offsetof(Manager, borrow),
                                       SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("RemoveProxy", SD_BUS_ARGS("u", id), SD_BUS_NO_RESULT,
                                       bus_borrow_method_remove_proxy, offsetof(Manager, borrow),
                                       SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("ListProxies", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(usustt)", proxies),
                                       bus_borrow_method_list_proxies, offsetof(Manager, borrow),
                                       SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("ListBorrowing", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(sttttttttttt)", slices),
                                       bus_borrow_method_list_borrowing, offsetof(Manager, borrow),
                                       SD_BUS_VTABLE_UNPRIVILEGED),

        /* Lazy NUMA migration (src/migrate/migrate-bus.c), handlers get &Manager.migrate.
         * MigrateMemory is root-only; ListJobs is read-only. Jobs are org.tonari.Job1 objects. */
        SD_BUS_METHOD_WITH_ARGS_OFFSET("MigrateMemory", SD_BUS_ARGS("s", slice, "ay", nodes, "a{sv}", options),
                                       SD_BUS_RESULT("o", job), bus_migrate_method_migrate_memory,
                                       offsetof(Manager, migrate), SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("ListJobs", SD_BUS_NO_ARGS, SD_BUS_RESULT("a(ussso)", jobs),
                                       bus_migrate_method_list_jobs, offsetof(Manager, migrate),
                                       SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("JobRemoved", SD_BUS_ARGS("u", id, "o", job, "s", slice, "s", result), 0),
        /* Hog limiting (limiter-bus.c), handlers get &Manager.limiter. SetHogLimiting is root-only;
         * RegisterProcesses and UnregisterProcesses are open in the D-Bus policy and decided per
         * PID in code (root: any process; others: their own); ListManagedProcesses is read-only. */
        SD_BUS_METHOD_WITH_ARGS_OFFSET("SetHogLimiting", SD_BUS_ARGS("s", slice, "s", mode, "a(sv)", properties),
                                       SD_BUS_NO_RESULT, bus_limiter_method_set_hog_limiting,
                                       offsetof(Manager, limiter), SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("RegisterProcesses", SD_BUS_ARGS("s", slice, "au", pids), SD_BUS_NO_RESULT,
                                       bus_limiter_method_register, offsetof(Manager, limiter),
                                       SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("UnregisterProcesses", SD_BUS_ARGS("s", slice, "au", pids), SD_BUS_NO_RESULT,
                                       bus_limiter_method_unregister, offsetof(Manager, limiter),
                                       SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_METHOD_WITH_ARGS_OFFSET("ListManagedProcesses", SD_BUS_NO_ARGS,
                                       SD_BUS_RESULT("a(susssdddt)", processes), bus_limiter_method_list_processes,
                                       offsetof(Manager, limiter), SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_SIGNAL_WITH_ARGS("ProcessLimited",
                                SD_BUS_ARGS("s", slice, "u", pid, "s", class, "s", reason, "d", cpu_percent, "d",
                                            io_bytes_per_sec),
                                0),
        SD_BUS_SIGNAL_WITH_ARGS("ProcessReleased", SD_BUS_ARGS("s", slice, "u", pid, "s", reason), 0),

        /* Mutating methods: root only, enforced by the D-Bus policy and again in the handler by
         * bus_verify_privileged(). The UNPRIVILEGED flag only switches off sd-bus's own implicit
         * CAP_SYS_ADMIN test, so that exactly one check in code decides, and says why. */
        SD_BUS_METHOD_WITH_ARGS("SetLogLevel", SD_BUS_ARGS("s", level), SD_BUS_NO_RESULT, method_set_log_level,
                                SD_BUS_VTABLE_UNPRIVILEGED),

        SD_BUS_VTABLE_END,
};

int manager_bus_add_objects(sd_bus *bus, Manager *m) {
        int r;

        r = sd_bus_add_object_vtable(bus, NULL, TONARI_MANAGER_PATH, TONARI_MANAGER_INTERFACE, manager_vtable, m);
        if (r < 0)
                return r;
        r = bus_slice_add_objects(bus, m ? &m->slices : NULL);
        if (r < 0)
                return r;
        r = bus_borrow_add_objects(bus, m ? &m->borrow : NULL);
        if (r < 0)
                return r;
        return bus_migrate_add_objects(bus, m ? &m->migrate : NULL);
}
