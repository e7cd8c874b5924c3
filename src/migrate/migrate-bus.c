/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-util.h"
#include "bus-errors.h"
#include "bus-util.h"
#include "migrate-internal.h"
#include "parse-util.h"
#include "slice-bus.h"
#include "string-util.h"
#include "strv.h"

static MigrateManager *manager_of(void *userdata) {
        return userdata ? *(MigrateManager **) userdata : NULL;
}

static int read_options(sd_bus_message *m, MigrateDefaults *t, sd_bus_error *error) {
        char msg[256];
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *name;

                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        return r;
                if (streq(name, "MemoryMigration")) {
                        const char *v;
                        r = sd_bus_message_read(m, "v", "s", &v);
                        if (r < 0)
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Option 'MemoryMigration' takes a string (s).");
                        t->policy = migrate_policy_from_string(v);
                        if (t->policy < 0) {
                                _cleanup_free_ char *e = cescape(v);
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Invalid MemoryMigration '%s': eager, periodical, severe or mild.",
                                                         strna(e));
                        }
                } else if (STR_IN_SET(name, "MigrationBatchPages", "MigrationIntervalUSec")) {
                        uint64_t v;
                        r = sd_bus_message_read(m, "v", "t", &v);
                        if (r < 0)
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Option '%s' takes an unsigned 64-bit integer (t).", name);
                        if (streq(name, "MigrationBatchPages"))
                                t->batch_pages = v;
                        else
                                t->interval_usec = v;
                } else if (streq(name, "MigrationCPUBudget")) {
                        uint32_t v;
                        r = sd_bus_message_read(m, "v", "u", &v);
                        if (r < 0)
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Option 'MigrationCPUBudget' takes a percentage (u).");
                        if (v > 100)
                                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                         "Invalid MigrationCPUBudget '%" PRIu32
                                                         "': must be 1..100 percent, or 0 for none.", v);
                        t->cpu_budget_percent = v;
                } else {
                        _cleanup_free_ char *e = cescape(name);
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Unknown option '%s': MemoryMigration, MigrationBatchPages, "
                                                 "MigrationIntervalUSec or MigrationCPUBudget.", strna(e));
                }
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;
        if (migrate_tunables_validate(t->batch_pages, t->interval_usec, t->cpu_budget_percent, msg, sizeof(msg)) < 0)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, msg);
        return 0;
}

int bus_migrate_method_migrate_memory(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        MigrateManager *mm = manager_of(userdata);
        _cleanup_free_ uint8_t *nodes = NULL;
        _cleanup_free_ char *why = NULL, *list = NULL, *path = NULL;
        MigrateDefaults t;
        size_t n_nodes = 0;
        const char *name;
        MigrateJob *j;
        Slice *s;
        int r;

        r = bus_verify_privileged(m, error);
        if (r < 0)
                return r;
        if (!mm)
                return sd_bus_error_set(error, TONARI_ERROR_NOT_SUPPORTED,
                                        "Memory migration is not available on this host; the \"slices\" and \"numa\" "
                                        "entries of the Features property say why.");
        r = bus_slice_read_name(m, &name, error);
        if (r < 0)
                return r;
        r = bus_message_read_bitmask(m, &nodes, &n_nodes);
        if (r < 0)
                return r;
        t = mm->defaults;
        r = read_options(m, &t, error);
        if (r < 0)
                return r;

        s = slice_manager_find(mm->slices, name);
        if (!s)
                return bus_slice_error_no_such(error, name);
        list = format_index_list(nodes, n_nodes);
        if (!list)
                return -ENOMEM;
        if (slice_check_memory_nodes(mm->slices, nodes, n_nodes, &why) < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Cannot migrate slice '%s' to nodes '%s': %s",
                                         name, list, why ?: "invalid node set");
        j = migrate_manager_find_job_by_slice(mm, name);
        if (j)
                return sd_bus_error_setf(error, TONARI_ERROR_SLICE_BUSY,
                                         "Slice '%s' is being migrated already (job %" PRIu32 "); cancel it or wait.", name,
                                         j->id);
        if (s->state != SLICE_ACTIVE)
                return sd_bus_error_setf(error, TONARI_ERROR_SLICE_BUSY, "Slice '%s' is being changed; try again.", name);

        r = migrate_job_start(mm, s, nodes, n_nodes, &t, &path, &why);
        if (r < 0)
                return sd_bus_error_setf(error, TONARI_ERROR_JOB_FAILED, "Cannot migrate slice '%s' to nodes '%s': %s",
                                         name, list, why ?: strerror(-r));
        return sd_bus_reply_method_return(m, "o", path);
}

static int append_jobs(sd_bus_message *reply, void *userdata) {
        MigrateManager *mm = userdata;
        for (MigrateJob *j = mm ? mm->jobs : NULL; j; j = j->next) {
                int r = sd_bus_message_append(reply, "(ussso)", j->id, j->slice, migrate_policy_to_string(j->tunables.policy),
                                              job_state_to_string(j->state), j->object_path);
                if (r < 0)
                        return r;
        }
        return 0;
}

int bus_migrate_method_list_jobs(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        (void) error;
        return bus_reply_array(m, "(ussso)", append_jobs, manager_of(userdata));
}

/* ---- org.tonari.Job1 */

static int method_cancel(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        MigrateJob *j = userdata;
        int r;

        r = bus_verify_privileged(m, error);
        if (r < 0)
                return r;
        if (!j)
                return sd_bus_error_set(error, SD_BUS_ERROR_UNKNOWN_OBJECT, "No such job.");
        migrate_job_cancel(j);
        return sd_bus_reply_method_return(m, NULL);
}

static int property_get(sd_bus *bus, const char *path, const char *interface, const char *property,
                        sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        MigrateJob *j = userdata;
        MigrateProgress p = {};
        usec_t elapsed;

        (void) bus;
        (void) path;
        (void) interface;
        (void) error;
        if (j)
                migrate_job_progress(j, &p);
        elapsed = p.started_usec == 0 ? 0 : (p.finished_usec ?: now(CLOCK_MONOTONIC)) - p.started_usec;

        if (streq(property, "Id"))
                return sd_bus_message_append(reply, "u", j ? j->id : 0);
        if (streq(property, "Slice"))
                return sd_bus_message_append(reply, "s", j ? j->slice : "");
        if (streq(property, "Nodes"))
                return sd_bus_message_append_array(reply, 'y', j ? j->target : NULL, j ? j->target_size : 0);
        if (streq(property, "MemoryMigration"))
                return sd_bus_message_append(reply, "s", j ? migrate_policy_to_string(j->tunables.policy) : "");
        if (streq(property, "MigrationBatchPages"))
                return sd_bus_message_append(reply, "t", j ? j->tunables.batch_pages : 0);
        if (streq(property, "MigrationIntervalUSec"))
                return sd_bus_message_append(reply, "t", j ? j->tunables.interval_usec : 0);
        if (streq(property, "MigrationCPUBudget"))
                return sd_bus_message_append(reply, "u", j ? j->tunables.cpu_budget_percent : 0);
        if (streq(property, "State"))
                return sd_bus_message_append(reply, "s", j ? job_state_to_string(j->state) : "");
        if (streq(property, "Referenced"))
                return sd_bus_message_append(reply, "b", p.referenced);
        if (streq(property, "Resumed"))
                return sd_bus_message_append(reply, "b", j && j->resumed);
        if (streq(property, "PagesTotal"))
                return sd_bus_message_append(reply, "t", p.pages_total);
        if (streq(property, "PagesMoved"))
                return sd_bus_message_append(reply, "t", p.pages_moved);
        if (streq(property, "PagesFailed"))
                return sd_bus_message_append(reply, "t", p.pages_failed);
        if (streq(property, "PagesGone"))
                return sd_bus_message_append(reply, "t", p.pages_gone);
        if (streq(property, "HotPagesMoved"))
                return sd_bus_message_append(reply, "t", p.hot_pages_moved);
        if (streq(property, "Rounds"))
                return sd_bus_message_append(reply, "t", p.rounds);
        if (streq(property, "ReferencedChecks"))
                return sd_bus_message_append(reply, "t", p.checks);
        if (streq(property, "PagesPerSecond"))
                return sd_bus_message_append(reply, "t", elapsed > 0 ? p.pages_moved * USEC_PER_SEC / elapsed : 0);
        if (streq(property, "CPUUsageNSec"))
                return sd_bus_message_append(reply, "t", p.cpu_usec * 1000);
        if (streq(property, "ElapsedUSec"))
                return sd_bus_message_append(reply, "t", elapsed);
        if (streq(property, "HotSetLocalUSec"))
                return sd_bus_message_append(reply, "t", p.hot_local_usec > p.started_usec ? p.hot_local_usec - p.started_usec : 0);
        return -ENOENT;
}

static const sd_bus_vtable job_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Id", "u", property_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Slice", "s", property_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Nodes", "ay", property_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("MemoryMigration", "s", property_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("MigrationBatchPages", "t", property_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("MigrationIntervalUSec", "t", property_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("MigrationCPUBudget", "u", property_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Resumed", "b", property_get, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        /* Progress changes all the time: read it, no signals. */
        SD_BUS_PROPERTY("State", "s", property_get, 0, 0),
        SD_BUS_PROPERTY("Referenced", "b", property_get, 0, 0),
        SD_BUS_PROPERTY("PagesTotal", "t", property_get, 0, 0),
        SD_BUS_PROPERTY("PagesMoved", "t", property_get, 0, 0),
        SD_BUS_PROPERTY("PagesFailed", "t", property_get, 0, 0),
        SD_BUS_PROPERTY("PagesGone", "t", property_get, 0, 0),
        SD_BUS_PROPERTY("HotPagesMoved", "t", property_get, 0, 0),
        SD_BUS_PROPERTY("Rounds", "t", property_get, 0, 0),
        SD_BUS_PROPERTY("ReferencedChecks", "t", property_get, 0, 0),
        SD_BUS_PROPERTY("PagesPerSecond", "t", property_get, 0, 0),
        SD_BUS_PROPERTY("CPUUsageNSec", "t", property_get, 0, 0),
        SD_BUS_PROPERTY("ElapsedUSec", "t", property_get, 0, 0),
        SD_BUS_PROPERTY("HotSetLocalUSec", "t", property_get, 0, 0),
        SD_BUS_METHOD("Cancel", SD_BUS_NO_ARGS, SD_BUS_NO_RESULT, method_cancel, SD_BUS_VTABLE_UNPRIVILEGED),
        SD_BUS_VTABLE_END,
};

static int job_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                    sd_bus_error *error) {
        MigrateManager *mm = manager_of(userdata);
        const char *e;
        uint32_t id;

        (void) bus;
        (void) interface;
        (void) error;
        if (!mm) { /* introspection: every path below the prefix stands for a job */
                *found = NULL;
                return 1;
        }
        e = startswith(path, MIGRATE_JOB_OBJECT_PREFIX "/");
        if (!e || safe_atou32(e, &id) < 0)
                return 0;
        *found = migrate_manager_find_job(mm, id);
        return *found ? 1 : 0;
}

static int job_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        MigrateManager *mm = manager_of(userdata);
        _cleanup_strv_free_ char **l = NULL;

        (void) bus;
        (void) path;
        (void) error;
        for (MigrateJob *j = mm ? mm->jobs : NULL; j; j = j->next)
                if (strv_extend(&l, j->object_path) < 0)
                        return -ENOMEM;
        *nodes = TAKE_PTR(l);
        return 1;
}

int bus_migrate_add_objects(sd_bus *bus, MigrateManager **manager) {
        int r;

        r = sd_bus_add_fallback_vtable(bus, NULL, MIGRATE_JOB_OBJECT_PREFIX, MIGRATE_JOB_INTERFACE, job_vtable, job_find,
                                       manager);
        if (r < 0)
                return r;
        return sd_bus_add_node_enumerator(bus, NULL, MIGRATE_JOB_OBJECT_PREFIX, job_enumerate, manager);
}
