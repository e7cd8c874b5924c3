/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "alloc-util.h"
#include "log.h"
#include "slice-util.h"
#include "slice-internal.h"
#include "string-util.h"
#include "strv.h"

/*
 * The systemd backend: a slice is the transient unit tonari-<name>.slice below tonari.slice, and
 * systemd writes its cgroup. Processes go to the transient scope tonari-<name>.scope in it, with
 * Delegate=yes: the one place below a slice where tonari may write cgroupfs itself.
 */

typedef struct Op {
        Slice *slice;
        SliceDoneFunc done;
        void *userdata;
        const CGroupSettings *settings;
        CGroupSettingMask mask;
        uint32_t *pids;
        size_t n_pids;
} Op;

static Op *op_new(Slice *s, SliceDoneFunc done, void *userdata) {
        Op *op = new0(Op, 1);
        if (op)
                *op = (Op){ .slice = s, .done = done, .userdata = userdata };
        return op;
}

static void op_free(Op *op) {
        if (!op)
                return;
        free(op->pids);
        free(op);
}

static void op_done(int error, const sd_bus_error *e, const char *message, void *userdata) {
        Op *op = userdata;
        _cleanup_free_ char *msg = NULL;

        /* A job that ended badly: systemd's result word is all we have. asprintf() leaves msg
         * undefined when it fails; then the result word goes out alone. */
        if (error < 0 && !e && message &&
            asprintf(&msg, "systemd's job for %s ended with result '%s'", op->slice->unit, message) < 0)
                msg = NULL;
        op->done(op->slice, error, msg ?: message, op->userdata);
        op_free(op);
}

static int slice_unit_names(Slice *s) {
        int r;

        r = slice_unit_name(s->name, ".slice", &s->unit);
        if (r < 0)
                return r;
        r = slice_unit_name(s->name, ".scope", &s->scope);
        if (r < 0)
                return r;
        s->cgroup = strjoin(SLICE_PARENT_UNIT "/", s->unit);
        return s->cgroup ? 0 : -ENOMEM;
}

static int systemd_adopt(SliceManager *m) {
        _cleanup_strv_free_ char **units = NULL;
        int r;

        r = systemd_list_units(m->systemd, SLICE_UNIT_PREFIX "*.slice", &units);
        if (r < 0)
                return r;

        STRV_FOREACH(u, units) {
                _cleanup_free_ char *name = NULL, *state = NULL, *cgroup = NULL;
                Slice *s;

                if (slice_name_from_unit(*u, ".slice", &name) < 0) {
                        log_debug("Slices: ignoring unit '%s': not a name tonari gives its slices.", *u);
                        continue;
                }
                r = systemd_unit_active_state(m->systemd, *u, &state);
                if (r < 0 || !STR_IN_SET(state, "active", "activating", "reloading")) {
                        log_debug("Slices: ignoring unit '%s' in state '%s'.", *u, strna(state));
                        continue;
                }

                r = slice_new(m, name, &s);
                if (r < 0)
                        return r;
                r = slice_unit_names(s);
                if (r < 0)
                        return r;
                r = systemd_read_unit_settings(m->systemd, *u, &s->settings, &cgroup);
                if (r < 0)
                        log_warning_errno(r, "Slices: cannot read the settings of '%s', showing defaults: %m", *u);
                if (cgroup && cgroup[0] == '/' && cgroup[1])
                        (void) free_and_strdup(&s->cgroup, cgroup + 1);
                r = slice_adopted(s);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int append_slice_properties(sd_bus_message *m, void *userdata) {
        Op *op = userdata;
        _cleanup_free_ char *description = strjoin("tonari slice '", op->slice->name, "'");
        int r;

        if (!description)
                return -ENOMEM;
        /* Accounting on, so usage can be read and shown; the rest is what the caller asked for. */
        r = sd_bus_message_append(m, "(sv)(sv)(sv)(sv)(sv)", "Description", "s", description, "CPUAccounting", "b",
                                  1, "IOAccounting", "b", 1, "MemoryAccounting", "b", 1, "TasksAccounting", "b", 1);
        if (r < 0)
                return r;
        return systemd_append_settings(m, op->settings, op->mask);
}

static int systemd_create(Slice *s, CGroupSettingMask mask, SliceDoneFunc done, void *userdata) {
        Op *op;
        int r;

        r = slice_unit_names(s);
        if (r < 0)
                return r;
        op = op_new(s, done, userdata);
        if (!op)
                return -ENOMEM;
        op->settings = &s->settings;
        op->mask = mask;
        r = systemd_start_transient_unit(s->manager->systemd, s->unit, append_slice_properties, op, op_done, op);
        if (r < 0)
                op_free(op);
        return r;
}

static int append_settings(sd_bus_message *m, void *userdata) {
        Op *op = userdata;
        return systemd_append_settings(m, op->settings, op->mask);
}

static int systemd_apply(Slice *s, const CGroupSettings *settings, CGroupSettingMask mask, SliceDoneFunc done,
                         void *userdata) {
        Op *op;
        int r;

        op = op_new(s, done, userdata);
        if (!op)
                return -ENOMEM;
        op->settings = settings;
        op->mask = mask;
        /* The message is built here, synchronously: settings need not outlive this call. */
        r = systemd_set_unit_properties(s->manager->systemd, s->unit, append_settings, op, op_done, op);
        op->settings = NULL;
        if (r < 0)
                op_free(op);
        return r;
}

static int append_scope_properties(sd_bus_message *m, void *userdata) {
        Op *op = userdata;
        _cleanup_free_ char *description = strjoin("tonari processes of slice '", op->slice->name, "'");
        int r;

        if (!description)
                return -ENOMEM;
        r = sd_bus_message_append(m, "(sv)(sv)(sv)", "Description", "s", description, "Slice", "s", op->slice->unit,
                                  "Delegate", "b", 1);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", "PIDs");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', "au");
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'u', op->pids, op->n_pids * sizeof(uint32_t));
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

static void attach_done(int error, const sd_bus_error *e, const char *message, void *userdata) {
        Op *op = userdata;
        int r;

        /* No scope yet, or it ended with its last process: make a new one with these processes. */
        if (error < 0 && e &&
            sd_bus_error_has_names(e, "org.freedesktop.systemd1.NoSuchUnit", "org.freedesktop.systemd1.UnitInactive")) {
                r = systemd_start_transient_unit(op->slice->manager->systemd, op->slice->scope, append_scope_properties,
                                                 op, op_done, op);
                if (r >= 0)
                        return;
                error = r;
                e = NULL;
                message = "cannot create the slice's scope";
        }
        op_done(error, e, message, op);
}

static int systemd_attach(Slice *s, const uint32_t *pids, size_t n_pids, SliceDoneFunc done, void *userdata) {
        Op *op;
        int r;

        op = op_new(s, done, userdata);
        if (!op)
                return -ENOMEM;
        op->pids = memdup(pids, n_pids * sizeof(uint32_t));
        if (!op->pids) {
                op_free(op);
                return -ENOMEM;
        }
        op->n_pids = n_pids;
        /* Once borrowing has split the scope (slice_cpu_limit_cgroup()), its processes live in the
         * leaf, and the scope itself can take none. */
        r = slice_scope_leaf_exists(s);
        if (r < 0)
                r = 0;
        if (s->attach_leaf) {
                char sub[64];

                (void) snprintf(sub, sizeof(sub), "/%s", s->attach_leaf);
                r = systemd_attach_processes(s->manager->systemd, s->scope, sub, pids, n_pids, attach_done, op);
        } else
                r = systemd_attach_processes(s->manager->systemd, s->scope, r > 0 ? "/" SLICE_SCOPE_LEAF : "", pids,
                                             n_pids, attach_done, op);
        if (r < 0)
                op_free(op);
        return r;
}

static int systemd_remove(Slice *s, SliceDoneFunc done, void *userdata) {
        Op *op;
        int r;

        op = op_new(s, done, userdata);
        if (!op)
                return -ENOMEM;
        /* Stops the (empty) scope with the slice. */
        r = systemd_stop_unit(s->manager->systemd, s->unit, op_done, op);
        if (r < 0)
                op_free(op);
        return r;
}

SLICE_BACKEND_DEFINE(slice_backend_systemd, "systemd", systemd);
