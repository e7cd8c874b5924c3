/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "borrow.h"
#include "host-features.h"
#include "migrate-job.h"
#include "limiter.h"
#include "slice.h"
#include "time-util.h"
#include "tonarid-conf.h"

#define TONARI_BUS_NAME "org.tonari.Manager1"
#define TONARI_MANAGER_PATH "/org/tonari/Manager1"
#define TONARI_MANAGER_INTERFACE "org.tonari.Manager1"

typedef enum ManagerState {
        MANAGER_STARTING,  /* connecting, waiting for the bus name */
        MANAGER_RUNNING,
        MANAGER_RELOADING, /* re-reading tonarid.conf after SIGHUP */
        MANAGER_STOPPING,
        _MANAGER_STATE_MAX,
} ManagerState;

typedef struct Manager {
        sd_event *event;
        sd_bus *bus;
        char *bus_address; /* NULL: the system bus */

        char *config_path;
        ManagerConfig config;
        char **config_files; /* the files the current configuration was read from */
        int log_level_override; /* --log-level=, or -1: wins over LogLevel= */

        Features features;
        SliceManager *slices;
        BorrowManager *borrow; /* with slices only */
        MigrateManager *migrate; /* with slices on cgroup v2 and more than one NUMA node */
        LimiterManager *limiter; /* with slices only */
        ManagerState state;
        usec_t start_realtime_usec;
        usec_t start_monotonic_usec;
} Manager;

const char *manager_state_to_string(ManagerState s) _const_;

int manager_new(const char *config_path, const char *bus_address, int log_level_override, Manager **ret);
Manager *manager_free(Manager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Manager *, manager_free);

/* Reads tonarid.conf and applies it; on failure the previous configuration stays in effect. */
int manager_load_config(Manager *m);
/* Sets the log level in effect until the next reload or restart. */
void manager_set_log_level(Manager *m, int level);

/* Probes the host, connects to the bus, registers objects, asks for the bus name. */
int manager_start(Manager *m);
/* Runs until SIGTERM/SIGINT or loss of the bus; returns 0 on a clean stop, negative errno otherwise. */
int manager_run(Manager *m);
