/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <systemd/sd-daemon.h>

#include "alloc-util.h"
#include "bus-util.h"
#include "fileio.h"
#include "log.h"
#include "manager-bus.h"
#include "manager.h"
#include "slice-util.h"
#include "string-util.h"
#include "strv.h"

static const char *const manager_state_table[_MANAGER_STATE_MAX] = {
        [MANAGER_STARTING] = "starting",
        [MANAGER_RUNNING] = "running",
        [MANAGER_RELOADING] = "reloading",
        [MANAGER_STOPPING] = "stopping",
};

const char *manager_state_to_string(ManagerState s) {
        return s >= 0 && s < _MANAGER_STATE_MAX ? manager_state_table[s] : NULL;
}

int manager_new(const char *config_path, const char *bus_address, int log_level_override, Manager **ret) {
        _cleanup_(manager_freep) Manager *m = NULL;

        m = new0(Manager, 1);
        if (!m)
                return -ENOMEM;

        m->config = MANAGER_CONFIG_DEFAULTS;
        m->log_level_override = log_level_override;
        m->config_path = strdup(config_path);
        if (!m->config_path)
                return -ENOMEM;
        if (bus_address) {
                m->bus_address = strdup(bus_address);
                if (!m->bus_address)
                        return -ENOMEM;
        }
        m->start_realtime_usec = now(CLOCK_REALTIME);
        m->start_monotonic_usec = now(CLOCK_MONOTONIC);

        *ret = TAKE_PTR(m);
        return 0;
}

Manager *manager_free(Manager *m) {
        if (!m)
                return NULL;

        migrate_manager_free(m->migrate); /* stops the engines; their state files stay for the next start */
        limiter_manager_free(m->limiter); /* leaves processes where they are: a restart adopts them */
        borrow_manager_free(m->borrow); /* first: it lifts its limits through the slices */
        slice_manager_free(m->slices);
        sd_bus_flush_close_unref(m->bus);
        sd_event_unref(m->event);
        features_done(&m->features);
        strv_free(m->config_files);
        free(m->config_path);
        free(m->bus_address);
        return mfree(m);
}

static void manager_apply_log_settings(Manager *m) {
        log_set_target(m->config.log_target);
        log_open();
        log_set_max_level(m->log_level_override >= 0 ? m->log_level_override : m->config.log_level);
}

int manager_load_config(Manager *m) {
        _cleanup_strv_free_ char **files = NULL;
        ManagerConfig c;
        int r;

        r = manager_config_load(m->config_path, &c, &files);
        if (r < 0)
                return r;

        m->config = c;
        strv_free(m->config_files);
        m->config_files = TAKE_PTR(files);
        manager_apply_log_settings(m);
        return 0;
}

void manager_set_log_level(Manager *m, int level) {
        log_set_max_level(level);
        if (m->bus)
                (void) sd_bus_emit_properties_changed(m->bus, TONARI_MANAGER_PATH, TONARI_MANAGER_INTERFACE,
                                                      "LogLevel", NULL);
}

static void manager_set_state(Manager *m, ManagerState state) {
        if (m->state == state)
                return;
        m->state = state;
        if (m->bus)
                (void) sd_bus_emit_properties_changed(m->bus, TONARI_MANAGER_PATH, TONARI_MANAGER_INTERFACE,
                                                      "State", NULL);
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;

        log_info("Received SIG%s, shutting down.", sigabbrev_np((int) si->ssi_signo));
        (void) sd_notify(false, "STOPPING=1\nSTATUS=Shutting down...");
        manager_set_state(m, MANAGER_STOPPING);
        return sd_event_exit(m->event, 0);
}

static void borrow_settings(const Manager *m, char *state_file, size_t size, BorrowSettings *ret) {
        (void) snprintf(state_file, size, "%s/borrow.state", m->config.runtime_directory);
        *ret = (BorrowSettings){
                .policy = { .floor_usec = m->config.borrow_min_quota_usec,
                            .max_debt_usec = m->config.borrow_max_debt_usec,
                            .repay_percent = m->config.borrow_repay_percent },
                .enforcement = m->config.borrow_enforcement,
                .state_file = state_file,
                .allow_uids = m->config.borrow_allow_users.ids,
                .n_allow_uids = m->config.borrow_allow_users.n,
                .allow_gids = m->config.borrow_allow_groups.ids,
                .n_allow_gids = m->config.borrow_allow_groups.n,
        };
}

static void limiter_settings(const Manager *m, char *state_file, size_t size, LimiterSettings *ret) {
        LimiterParams p = LIMITER_PARAMS_DEFAULT;

        (void) snprintf(state_file, size, "%s/limiter.state", m->config.runtime_directory);
        p.interval_usec = m->config.hog_interval_usec;
        p.window_usec = m->config.hog_window_usec;
        p.io_limit_bytes_per_sec = m->config.hog_io_limit_bytes_per_sec;
        p.io_hog_bytes_per_sec = MAX(p.io_hog_bytes_per_sec, 2 * p.io_limit_bytes_per_sec);
        p.cpu_limit_weight = m->config.hog_cpu_weight;
        p.waste_percent = m->config.hog_waste_percent;
        p.holdoff_usec = m->config.hog_holdoff_usec;
        *ret = (LimiterSettings) { .defaults = p, .state_file = state_file };
}

static int on_reload(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        Manager *m = userdata;
        SliceBackendType old_backend = m->config.slice_backend;
        char old_root[sizeof(m->config.slice_cgroup_root)], old_runtime[sizeof(m->config.runtime_directory)];
        int r;

        (void) sd_notify(false, "RELOADING=1\nSTATUS=Reloading configuration...");
        manager_set_state(m, MANAGER_RELOADING);
        strcpy(old_root, m->config.slice_cgroup_root);
        strcpy(old_runtime, m->config.runtime_directory);

        r = manager_load_config(m);
        if (r < 0)
                log_warning("Keeping the previous configuration: '%s' could not be loaded.", m->config_path);
        else {
                if (m->config.slice_backend != old_backend || !streq(m->config.slice_cgroup_root, old_root)) {
                        /* The configuration shows what is in effect: the backend runs until a restart. */
                        log_warning("[Slices] Backend= and CgroupRoot= take effect at the next start of tonarid.");
                        m->config.slice_backend = old_backend;
                        strcpy(m->config.slice_cgroup_root, old_root);
                }
                if (!streq(m->config.runtime_directory, old_runtime)) {
                        log_warning("[Manager] RuntimeDirectory= takes effect at the next start of tonarid.");
                        strcpy(m->config.runtime_directory, old_runtime);
                }
                if (m->borrow) {
                        char state_file[PATH_MAX + 32];
                        BorrowSettings settings;

                        borrow_settings(m, state_file, sizeof(state_file), &settings);
                        (void) borrow_manager_configure(m->borrow, &settings);
                }
                if (m->limiter) {
                        char state_file[PATH_MAX + 32];
                        LimiterSettings settings;

                        limiter_settings(m, state_file, sizeof(state_file), &settings);
                        (void) limiter_manager_configure(m->limiter, &settings);
                }
                if (m->migrate) /* for the jobs started from now on */
                        migrate_manager_set_defaults(m->migrate, &m->config.migrate);
                log_info("Reloaded configuration from '%s'.", m->config_path);
                if (m->bus)
                        (void) sd_bus_emit_properties_changed(m->bus, TONARI_MANAGER_PATH,
                                                              TONARI_MANAGER_INTERFACE, "LogLevel", "ConfigFiles",
                                                              NULL);
        }

        manager_set_state(m, MANAGER_RUNNING);
        (void) sd_notify(false, "READY=1\nSTATUS=Ready.");
        return 0;
}

/* Replies of org.freedesktop.DBus.RequestName(), which sd-bus hands to our callback unparsed. */
enum {
        REQUEST_NAME_REPLY_PRIMARY_OWNER = 1,
        REQUEST_NAME_REPLY_IN_QUEUE = 2,
        REQUEST_NAME_REPLY_EXISTS = 3,
        REQUEST_NAME_REPLY_ALREADY_OWNER = 4,
};

static int on_name_acquired(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        const sd_bus_error *e;
        uint32_t ret;
        int r;

        e = sd_bus_message_get_error(reply);
        if (e) {
                r = sd_bus_error_get_errno(e);
                log_error_errno(r, "Failed to acquire bus name '%s': %s", TONARI_BUS_NAME, bus_error_message(e, r));
                if (sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED))
                        log_error("Is the D-Bus policy for %s installed, and is tonarid running as root?",
                                  TONARI_BUS_NAME);
                return sd_event_exit(m->event, -ERRNO_VALUE(r ?: EIO));
        }

        r = sd_bus_message_read(reply, "u", &ret);
        if (r < 0) {
                log_error_errno(r, "Failed to parse the reply to RequestName(): %m");
                return sd_event_exit(m->event, r);
        }
        if (ret == REQUEST_NAME_REPLY_EXISTS || ret == REQUEST_NAME_REPLY_IN_QUEUE) {
                log_error("Bus name '%s' is already owned: is another tonarid running?", TONARI_BUS_NAME);
                return sd_event_exit(m->event, -EEXIST);
        }
        if (ret != REQUEST_NAME_REPLY_PRIMARY_OWNER && ret != REQUEST_NAME_REPLY_ALREADY_OWNER) {
                log_error("Unexpected reply %" PRIu32 " to RequestName('%s').", ret, TONARI_BUS_NAME);
                return sd_event_exit(m->event, -EPROTO);
        }

        manager_set_state(m, MANAGER_RUNNING);
        log_info("tonarid " PACKAGE_VERSION " running as %s.", TONARI_BUS_NAME);
        (void) sd_notify(false, "READY=1\nSTATUS=Ready.");
        return 0;
}

/*
 * Slices come first: once the name is ours (and READY=1 sent), every existing slice must be there.
 * With Backend=auto on a host where systemd manages cgroups in a way slices cannot use (hybrid or
 * legacy hierarchy, or tonarid on a private bus), slices are unavailable and the Features entry
 * says why; an explicit Backend= that cannot be honoured stops the daemon.
 */
static int manager_start_slices(Manager *m) {
        bool systemd_pid1 = m->features.feature[FEATURE_SYSTEMD].available;
        bool unified = m->features.cgroup_mode == CGROUP_MODE_UNIFIED;
        bool usable = systemd_pid1 && unified && !m->bus_address;
        int r;

        if (m->config.slice_backend == SLICE_BACKEND_AUTO && systemd_pid1 && !usable) {
                const char *why = !unified ? "systemd manages this host's cgroups on a hybrid or legacy hierarchy, "
                                             "and tonari's slices need the unified one"
                                           : "tonarid is on a private bus (--bus-address=), not on systemd's";
                log_warning("Slices are not available: %s.", why);
                return features_set(&m->features, FEATURE_SLICES, false, "%s", why);
        }
        if (m->config.slice_backend == SLICE_BACKEND_AUTO && !systemd_pid1) {
                _cleanup_(cgroup_root_freep) CGroupRoot *probe = NULL;

                /* No cgroups here at all (a build chroot, say): nothing to manage, nothing broken. */
                r = cgroup_root_new(m->config.slice_cgroup_root, &probe);
                if (r == -ENOMEDIUM || r == -ENOENT) {
                        log_warning("Slices are not available: no cgroup hierarchy at '%s'.",
                                    m->config.slice_cgroup_root);
                        return features_set(&m->features, FEATURE_SLICES, false, "no cgroup hierarchy at %s",
                                            m->config.slice_cgroup_root);
                }
        }

        r = slice_manager_new(m->bus, m->config.slice_backend, systemd_pid1, usable, m->config.slice_cgroup_root,
                              &m->slices);
        if (r < 0)
                return r;
        if (slice_manager_backend_type(m->slices) == SLICE_BACKEND_SYSTEMD)
                return features_set(&m->features, FEATURE_SLICES, true, "systemd backend: transient units below %s",
                                    SLICE_PARENT_UNIT);
        return features_set(&m->features, FEATURE_SLICES, true, "%s backend below %s/%s",
                            slice_manager_backend_name(m->slices), cgroup_root_dir(slice_manager_cgroup_root(m->slices)), SLICE_CGROUPFS_PARENT);
}

/* Borrowing needs slices; its debt and proxies come back from the state file. */
static int manager_start_borrowing(Manager *m) {
        char state_file[PATH_MAX + 32];
        BorrowSettings settings;
        int r;

        if (!m->slices)
                return features_set(&m->features, FEATURE_CPU_BORROWING, false, "needs slices");

        r = mkdir(m->config.runtime_directory, 0755);
        if (r < 0 && errno != EEXIST)
                log_warning_errno(errno, "Failed to create '%s', borrowing state will not survive a restart: %m",
                                  m->config.runtime_directory);
        borrow_settings(m, state_file, sizeof(state_file), &settings);
        r = borrow_manager_new(m->event, m->slices, &settings, &m->borrow);
        if (r < 0)
                return log_error_errno(r, "Failed to set up CPU borrowing: %m");
        return features_set(&m->features, FEATURE_CPU_BORROWING, true,
                            "enforced by tonarid in userspace on %s (no cpu.cfs_borrowing_us in this kernel)",
                            slice_manager_backend_type(m->slices) == SLICE_BACKEND_SYSTEMD ? "the delegated scopes of the slices"
                                                                         : "the slice cgroups");
}

static int manager_start_migration(Manager *m) {
        char state_dir[PATH_MAX + 16];
        _cleanup_free_ char *balancing = NULL;
        bool page_idle = m->features.feature[FEATURE_PAGE_IDLE].available;
        const char *hinting = "";
        int r;

        if (!m->slices)
                return features_set(&m->features, FEATURE_MEMORY_MIGRATION, false, "needs slices");
        if (m->features.cgroup_mode != CGROUP_MODE_UNIFIED)
                return features_set(&m->features, FEATURE_MEMORY_MIGRATION, false,
                                    "needs cgroup v2 slices (cpuset.memory_migrate=0 on v1 is not done yet)");
        (void) snprintf(state_dir, sizeof(state_dir), "%s/migrate", m->config.runtime_directory);
        r = migrate_manager_new(m->event, m->bus, m->slices, state_dir, page_idle ? MIGRATE_PAGE_IDLE_PATH : NULL,
                                &m->migrate);
        if (r < 0)
                return log_error_errno(r, "Failed to set up memory migration: %m");
        migrate_manager_set_defaults(m->migrate, &m->config.migrate);
        /* Before Linux 6.5 move_pages(2) cannot see a page waiting for a NUMA hinting fault: the
         * jobs count such pages as failed and the kernel moves them when cpuset.mems narrows. */
        if (read_one_line_file("/proc/sys/kernel/numa_balancing", &balancing) >= 0 && !streq(balancing, "0"))
                hinting = "; kernel.numa_balancing is on: pages waiting for a NUMA hinting fault cannot be moved "
                          "lazily before Linux 6.5, they count as failed and move when the job narrows the nodes";
        return features_set(&m->features, FEATURE_MEMORY_MIGRATION, true, "%s%s",
                            page_idle ? "lazy, in userspace; referenced pages first from idle page tracking"
                                      : "lazy, in userspace; no idle page tracking: severe and mild act as periodical",
                            hinting);
}

/* Hog limiting needs slices and taskstats; without taskstats HogLimiting= is refused and Features
 * says why. Hog-limited slices come back from the state file and their cgroups. */
static int manager_start_limiter(Manager *m) {
        char state_file[PATH_MAX + 32];
        LimiterSettings settings;
        const TaskstatsSupport *ts;
        int r;

        if (!m->slices)
                return features_set(&m->features, FEATURE_HOG_LIMITING, false, "needs slices");
        limiter_settings(m, state_file, sizeof(state_file), &settings);
        r = limiter_manager_new(m->event, m->bus, m->slices, &settings, &m->limiter);
        if (r < 0)
                return log_error_errno(r, "Failed to set up hog limiting: %m");
        ts = limiter_manager_support(m->limiter);
        if (ts->error < 0) {
                log_warning("Hog limiting is not available: %s.", taskstats_support_to_string(ts));
                return features_set(&m->features, FEATURE_HOG_LIMITING, false, "%s", taskstats_support_to_string(ts));
        }
        return features_set(&m->features, FEATURE_HOG_LIMITING, true, "taskstats version %u, delay accounting %s",
                            ts->version, ts->delay_accounting ? "on" : "off (kernel.task_delayacct=0)");
}

static int manager_connect_bus(Manager *m) {
        int r;

        r = bus_open(m->bus_address, "tonarid", &m->bus);
        if (r < 0)
                return log_error_errno(r, "Failed to connect to %s: %m",
                                       m->bus_address ? m->bus_address : "the system bus");

        r = manager_bus_add_objects(m->bus, m);
        if (r < 0)
                return log_error_errno(r, "Failed to register D-Bus objects: %m");

        r = sd_bus_attach_event(m->bus, m->event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return log_error_errno(r, "Failed to attach the bus to the event loop: %m");

        r = manager_start_slices(m);
        if (r < 0)
                return r;
        r = manager_start_borrowing(m);
        if (r < 0)
                return r;
        r = manager_start_migration(m);
        if (r < 0)
                return r;
        r = manager_start_limiter(m);
        if (r < 0)
                return r;

        /* Losing the bus means nobody can reach us any more: exit, let systemd restart us. */
        r = sd_bus_set_exit_on_disconnect(m->bus, true);
        if (r < 0)
                return log_error_errno(r, "Failed to set exit-on-disconnect: %m");

        /* No queueing: a second instance must fail loudly, not wait silently. */
        r = sd_bus_request_name_async(m->bus, NULL, TONARI_BUS_NAME, 0, on_name_acquired, m);
        if (r < 0)
                return log_error_errno(r, "Failed to request bus name '%s': %m", TONARI_BUS_NAME);
        return 0;
}

int manager_start(Manager *m) {
        sigset_t mask;
        int r;

        r = features_detect("/", &m->features);
        if (r < 0)
                return log_error_errno(r, "Failed to probe host features: %m");
        for (FeatureId i = 0; i < _FEATURE_MAX; i++)
                log_debug("Feature %s: %s (%s)", feature_to_string(i), yes_no(m->features.feature[i].available),
                          m->features.feature[i].detail);

        r = sd_event_default(&m->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m");

        /* sd-event (252) wants the signals blocked before it takes them over. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Failed to block signals: %m");

        r = sd_event_add_signal(m->event, NULL, SIGTERM, on_terminate, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGINT, on_terminate, m);
        if (r >= 0)
                r = sd_event_add_signal(m->event, NULL, SIGHUP, on_reload, m);
        if (r < 0)
                return log_error_errno(r, "Failed to install signal handlers: %m");

        /* Pings systemd at half of WatchdogSec= when the unit sets it; a no-op otherwise. */
        r = sd_event_set_watchdog(m->event, true);
        if (r < 0)
                return log_error_errno(r, "Failed to enable the watchdog: %m");

        return manager_connect_bus(m);
}

int manager_run(Manager *m) {
        int r;

        r = sd_event_loop(m->event);
        if (r < 0)
                return r;
        if (r > 0 || (m->state != MANAGER_STOPPING && !sd_bus_is_open(m->bus)))
                return log_error_errno(ECONNRESET, "Lost the connection to the bus, exiting.");
        return 0;
}
