/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include <systemd/sd-bus.h>

#include "cgroup-util.h"
#include "macro.h"

/*
 * A client for org.freedesktop.systemd1: transient units, their properties, and waiting for the
 * jobs systemd runs for them. Asynchronous calls report through a SystemdDoneFunc once systemd
 * has finished: for StartTransientUnit() and StopUnit() that is when the job is gone (JobRemoved),
 * for the others when the method returns. The synchronous readers are for start-up (adoption),
 * before the daemon serves requests.
 */

typedef struct SystemdClient SystemdClient;

/*
 * error: 0 on success; else negative errno, and e names systemd's error (for failed calls), or is
 * NULL with the job result in message (for failed jobs: "failed", "dependency", ...).
 */
typedef void (*SystemdDoneFunc)(int error, const sd_bus_error *e, const char *message, void *userdata);
/* Appends the properties of a call to m, which is inside an open "a(sv)". */
typedef int (*SystemdAppendFunc)(sd_bus_message *m, void *userdata);

/* Subscribes to systemd's signals and watches JobRemoved on bus. */
int systemd_client_new(sd_bus *bus, SystemdClient **ret);
/* Cancels outstanding calls: their callbacks are not called. */
SystemdClient *systemd_client_free(SystemdClient *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(SystemdClient *, systemd_client_free);

/* StartTransientUnit(unit, "fail", properties, []). */
int systemd_start_transient_unit(SystemdClient *c, const char *unit, SystemdAppendFunc append, void *append_data,
                                 SystemdDoneFunc done, void *userdata);
/* StopUnit(unit, "replace"). */
int systemd_stop_unit(SystemdClient *c, const char *unit, SystemdDoneFunc done, void *userdata);
/* SetUnitProperties(unit, runtime=true, properties). */
int systemd_set_unit_properties(SystemdClient *c, const char *unit, SystemdAppendFunc append, void *append_data,
                                SystemdDoneFunc done, void *userdata);
/* AttachProcessesToUnit(unit, subcgroup, pids); subcgroup "" or "/leaf" below a delegated unit. */
int systemd_attach_processes(SystemdClient *c, const char *unit, const char *subcgroup, const uint32_t *pids,
                             size_t n_pids, SystemdDoneFunc done, void *userdata);

/* Loaded units whose names match pattern (fnmatch), sorted. Synchronous. */
int systemd_list_units(SystemdClient *c, const char *pattern, char ***ret);
/* "active", "inactive", ...; -ENOENT if systemd does not know the unit. Synchronous. */
int systemd_unit_active_state(SystemdClient *c, const char *unit, char **ret);
/*
 * The resource settings of a slice or scope unit, in the form tonari keeps them, and its control
 * group ("/tonari.slice/tonari-web.slice"). Synchronous.
 */
int systemd_read_unit_settings(SystemdClient *c, const char *unit, CGroupSettings *ret, char **ret_cgroup);

/* Appends the settings selected by mask as systemd's properties (inside an open "a(sv)"). */
int systemd_append_settings(sd_bus_message *m, const CGroupSettings *s, CGroupSettingMask mask);
