/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "bus-errors.h"
#include "bus-util.h"
#include "log.h"
#include "path-util.h"
#include "proc-util.h"
#include "slice-bus.h"
#include "slice-internal.h"
#include "slice-util.h"
#include "string-util.h"
#include "strv.h"

#define SLICE_INTERFACE "org.tonari.Slice1"

static SliceManager *manager_of(void *userdata) {
        return userdata ? *(SliceManager **) userdata : NULL;
}

int bus_slice_check_manager(SliceManager *sm, sd_bus_error *error) {
        if (!sm)
                return sd_bus_error_set(error, TONARI_ERROR_NOT_SUPPORTED,
                                        "Slices are not available on this host; the \"slices\" entry of the Features "
                                        "property says why.");
        return 0;
}

/* The error for a failed operation on slice name, from errno and the backend's explanation. */
static int reply_failure(sd_bus_message *m, const char *what, const char *name, int error, const char *why) {
        _cleanup_(sd_bus_error_free) sd_bus_error e = SD_BUS_ERROR_NULL;
        const char *error_name;

        switch (-error) {
        case EOPNOTSUPP:
                error_name = TONARI_ERROR_NOT_SUPPORTED;
                break;
        case ESRCH:
                error_name = TONARI_ERROR_NO_SUCH_PROCESS;
                break;
        case EBUSY:
                error_name = TONARI_ERROR_SLICE_BUSY;
                break;
        case EEXIST:
                error_name = TONARI_ERROR_SLICE_EXISTS;
                break;
        case EINVAL:
        case ERANGE:
                error_name = SD_BUS_ERROR_INVALID_ARGS;
                break;
        case EIO:
                error_name = TONARI_ERROR_JOB_FAILED;
                break;
        default:
                /* Not the caller's fault and no named case: a plain failure. Mapping errno here
                 * would turn e.g. a kernel EACCES into AccessDenied, which means "you may not". */
                error_name = SD_BUS_ERROR_FAILED;
        }
        (void) sd_bus_error_setf(&e, error_name, "Failed to %s slice '%s': %s", what, name,
                                 why ?: strerror(ERRNO_VALUE(error)));
        return sd_bus_reply_method_error(m, &e);
}

/* The error for an operation the backend could not even begin. */
static int error_not_begun(sd_bus_error *error, const char *what, const char *name, int r) {
        return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Failed to %s slice '%s': %s", what, name,
                                 strerror(ERRNO_VALUE(r)));
}

int bus_slice_error_no_such(sd_bus_error *error, const char *name) {
        _cleanup_free_ char *e = cescape(name);
        return sd_bus_error_setf(error, TONARI_ERROR_NO_SUCH_SLICE, "No slice named '%s'.", strna(e));
}

int bus_slice_read_name(sd_bus_message *m, const char **ret, sd_bus_error *error) {
        const char *name;
        int r;

        r = sd_bus_message_read(m, "s", &name);
        if (r < 0)
                return r;
        if (!slice_name_is_valid(name)) {
                _cleanup_free_ char *e = cescape(name);
                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "Invalid slice name '%s': expected 1-%u characters of A-Z a-z 0-9 _ . : @ -, "
                                         "not starting with '.' or '-'.",
                                         strna(e), NAME_MAX_LEN);
        }
        *ret = name;
        return 0;
}

int bus_slice_read_existing(sd_bus_message *m, SliceManager *sm, Slice **ret, sd_bus_error *error) {
        const char *name;
        Slice *s;
        int r;

        r = bus_slice_read_name(m, &name, error);
        if (r < 0)
                return r;
        /* Without slices (no backend), no name is a slice. */
        s = sm ? slice_manager_find(sm, name) : NULL;
        if (!s || s->state == SLICE_CREATING)
                return bus_slice_error_no_such(error, name);
        *ret = s;
        return 0;
}

/* What every method that changes something checks first: the caller, the daemon, the name. */
static int begin_change(sd_bus_message *m, SliceManager *sm, const char **ret_name, sd_bus_error *error) {
        int r;

        r = bus_verify_privileged(m, error);
        if (r < 0)
                return r;
        r = bus_slice_check_manager(sm, error);
        if (r < 0)
                return r;
        return bus_slice_read_name(m, ret_name, error);
}

/* The slice, if it exists and nothing else is being done to it. */
static int find_usable(SliceManager *sm, const char *name, Slice **ret, sd_bus_error *error) {
        Slice *s = sm ? slice_manager_find(sm, name) : NULL;

        if (!s && sm && slice_manager_scan_domains(sm) >= 0 && (s = slice_manager_find_domain(sm, name))) {
                _cleanup_free_ char *e = cescape(name);
                return sd_bus_error_setf(error, TONARI_ERROR_NOT_SUPPORTED,
                                         "Slice '%s' is a request domain of the server in '/%s': it is read-only, "
                                         "its limits are set in the server's configuration.",
                                         strna(e), s->cgroup);
        }
        if (!s)
                return bus_slice_error_no_such(error, name);
        if (s->state != SLICE_ACTIVE)
                return sd_bus_error_setf(error, TONARI_ERROR_SLICE_BUSY,
                                         "Slice '%s' is %s; try again when that is done.", name,
                                         s->state == SLICE_CREATING ? "still being created" : "being changed");
        *ret = s;
        return 0;
}

static const struct {
        const char *name;
        const char *signature;
        CGroupSettingMask mask;
} slice_properties[] = {
        { "CPUWeight", "t", CGROUP_MASK_CPU_WEIGHT },
        { "CPUQuotaPerSecUSec", "t", CGROUP_MASK_CPU_QUOTA },
        { "CPUQuotaPeriodUSec", "t", CGROUP_MASK_CPU_QUOTA },
        { "IOWeight", "t", CGROUP_MASK_IO_WEIGHT },
        { "IOReadBandwidthMax", "a(st)", CGROUP_MASK_IO_LIMITS },
        { "IOWriteBandwidthMax", "a(st)", CGROUP_MASK_IO_LIMITS },
        { "IOReadIOPSMax", "a(st)", CGROUP_MASK_IO_LIMITS },
        { "IOWriteIOPSMax", "a(st)", CGROUP_MASK_IO_LIMITS },
        { "MemoryMax", "t", CGROUP_MASK_MEMORY_MAX },
        { "MemoryHigh", "t", CGROUP_MASK_MEMORY_HIGH },
        { "AllowedCPUs", "ay", CGROUP_MASK_ALLOWED_CPUS },
        { "AllowedMemoryNodes", "ay", CGROUP_MASK_ALLOWED_MEMS },
};

static CGroupIOLimitType io_type_of(const char *name) {
        return streq(name, "IOReadBandwidthMax")    ? CGROUP_IO_RBPS
               : streq(name, "IOWriteBandwidthMax") ? CGROUP_IO_WBPS
               : streq(name, "IOReadIOPSMax")       ? CGROUP_IO_RIOPS
                                                    : CGROUP_IO_WIOPS;
}

static int read_io_list(sd_bus_message *m, const char *property, CGroupSettings *s, sd_bus_error *error) {
        CGroupIOLimitType type = io_type_of(property);
        const char *path;
        uint64_t value;
        unsigned n = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(st)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(st)", &path, &value)) > 0) {
                CGroupIODeviceLimit *l;
                struct stat st;

                n++;
                if (!path_is_normalized_absolute(path)) {
                        _cleanup_free_ char *e = cescape(path);
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Invalid %s path '%s': expected an absolute, normalized path of a "
                                                 "block device.",
                                                 property, strna(e));
                }
                /* Resolve now: a path that is no block device must not reach systemd or the kernel. */
                if (stat(path, &st) < 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid %s path '%s': %s.", property,
                                                 path, strerror(errno));
                if (!S_ISBLK(st.st_mode))
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Invalid %s path '%s': not a block device.", property, path);
                if (value == 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Invalid %s value 0 for '%s': use a positive limit, or UINT64_MAX to "
                                                 "remove it.",
                                                 property, path);

                l = cgroup_settings_find_io_limit(s, st.st_rdev);
                if (!l) {
                        CGroupIODeviceLimit *a = reallocarray(s->io_limits, s->n_io_limits + 1, sizeof(*a));
                        if (!a)
                                return -ENOMEM;
                        s->io_limits = a;
                        l = &a[s->n_io_limits++];
                        *l = (CGroupIODeviceLimit){ .devnum = st.st_rdev };
                        for (int t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++)
                                l->limit[t] = CGROUP_LIMIT_MAX;
                }
                r = free_and_strdup(&l->path, path);
                if (r < 0)
                        return r;
                l->limit[type] = value;
        }
        if (r < 0)
                return r;

        /* An empty list removes every limit of this kind. */
        if (n == 0)
                for (size_t i = 0; i < s->n_io_limits; i++)
                        s->io_limits[i].limit[type] = CGROUP_LIMIT_MAX;
        return sd_bus_message_exit_container(m);
}

/*
 * Reads an a(sv) of slice properties on top of s (the current settings, or the defaults for a new
 * slice), and validates the result. *ret_mask says what was given.
 */
static int read_settings(sd_bus_message *m, SliceManager *sm, CGroupSettings *s, CGroupSettingMask *ret_mask,
                         sd_bus_error *error) {
        CGroupSettingMask mask = 0;
        _cleanup_free_ char *why = NULL;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'r', "sv")) > 0) {
                const char *name, *contents;
                char type;
                ssize_t k = -1;

                r = sd_bus_message_read(m, "s", &name);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < ELEMENTSOF(slice_properties); i++)
                        if (streq(name, slice_properties[i].name))
                                k = (ssize_t) i;
                if (k < 0) {
                        _cleanup_free_ char *e = cescape(name);
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Unknown slice property '%s'; see org.tonari.Slice1 for the settable "
                                                 "ones.",
                                                 strna(e));
                }
                r = sd_bus_message_peek_type(m, &type, &contents);
                if (r < 0)
                        return r;
                if (!streq(contents, slice_properties[k].signature))
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Slice property %s has type '%s', got '%s'.", name,
                                                 slice_properties[k].signature, contents);
                r = sd_bus_message_enter_container(m, 'v', contents);
                if (r < 0)
                        return r;

                if (streq(name, "CPUWeight"))
                        r = sd_bus_message_read(m, "t", &s->cpu_weight);
                else if (streq(name, "CPUQuotaPerSecUSec"))
                        r = sd_bus_message_read(m, "t", &s->cpu_quota_per_sec_usec);
                else if (streq(name, "CPUQuotaPeriodUSec"))
                        r = sd_bus_message_read(m, "t", &s->cpu_quota_period_usec);
                else if (streq(name, "IOWeight"))
                        r = sd_bus_message_read(m, "t", &s->io_weight);
                else if (streq(name, "MemoryMax"))
                        r = sd_bus_message_read(m, "t", &s->memory_max);
                else if (streq(name, "MemoryHigh"))
                        r = sd_bus_message_read(m, "t", &s->memory_high);
                else if (streq(name, "AllowedCPUs"))
                        r = bus_message_read_bitmask(m, &s->allowed_cpus, &s->allowed_cpus_size);
                else if (streq(name, "AllowedMemoryNodes"))
                        r = bus_message_read_bitmask(m, &s->allowed_mems, &s->allowed_mems_size);
                else
                        r = read_io_list(m, name, s, error);
                if (r < 0)
                        return r;
                if (sd_bus_error_is_set(error))
                        return -EINVAL;
                mask |= slice_properties[k].mask;

                r = sd_bus_message_exit_container(m);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        r = sd_bus_message_exit_container(m);
        if (r < 0)
                return r;

        r = slice_settings_validate(s, mask, sm->page_size, sm->online_cpus, sm->online_cpus_size,
                                    sm->online_nodes, sm->online_nodes_size, &why);
        if (r < 0)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, why ?: "Invalid slice settings.");
        /* What the kernel will hold, so that the property says what is in force, now and after a
         * restart (systemd would pass a value on as given, and the kernel round it down). */
        (void) slice_settings_round(s, mask, sm->page_size);

        *ret_mask = mask;
        return 0;
}

/* ---- CreateSlice */

static void create_done(Slice *s, int error, const char *message, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = userdata;
        int r;

        if (error < 0) {
                log_struct_errno(LOG_WARNING, error, "TONARI_SLICE=%s", s->name,
                                 LOG_MESSAGE("Failed to create slice '%s': %s", s->name,
                                             message ?: strerror(ERRNO_VALUE(error))));
                (void) reply_failure(m, "create", s->name, error, message);
                slice_free(s);
                return;
        }
        s->state = SLICE_ACTIVE;
        r = slice_read_cgroup_id(s);
        if (r < 0)
                log_warning_errno(r, "Cannot read the cgroup id of slice '%s' (/%s); its borrowing state will not "
                                  "survive a restart: %m",
                                  s->name, strna(s->cgroup));
        log_struct(LOG_INFO, "TONARI_SLICE=%s", s->name, "TONARI_CALLER_UID=%d", (int) bus_sender_uid(m),
                   LOG_MESSAGE("Created slice '%s' (%s, cgroup /%s).", s->name, s->manager->backend->name, s->cgroup));
        (void) sd_bus_reply_method_return(m, "o", s->object_path);
}

int bus_slice_method_create(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        SliceManager *sm = manager_of(userdata);
        _cleanup_(cgroup_settings_done) CGroupSettings settings = CGROUP_SETTINGS_INIT;
        CGroupSettingMask mask;
        const char *name;
        Slice *s;
        int r;

        r = begin_change(m, sm, &name, error);
        if (r < 0)
                return r;
        if (slice_manager_find(sm, name))
                return sd_bus_error_setf(error, TONARI_ERROR_SLICE_EXISTS, "Slice '%s' exists already.", name);
        r = read_settings(m, sm, &settings, &mask, error);
        if (r < 0)
                return r;

        r = slice_new(sm, name, &s);
        if (r < 0)
                return r;
        s->settings = settings;
        settings = CGROUP_SETTINGS_INIT;

        r = sm->backend->create(s, mask, create_done, sd_bus_message_ref(m));
        if (r < 0) {
                sd_bus_message_unref(m);
                slice_free(s);
                return error_not_begun(error, "create", name, r);
        }
        return 1;
}

/* ---- SetSliceProperties */

typedef struct SetContext {
        sd_bus_message *message;
        CGroupSettings settings;
        CGroupSettingMask mask;
} SetContext;

static void set_done(Slice *s, int error, const char *message, void *userdata) {
        SetContext *c = userdata;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *list = NULL;

        s->state = SLICE_ACTIVE;
        if (error < 0)
                (void) reply_failure(c->message, "change", s->name, error, message);
        else {
                cgroup_settings_done(&s->settings);
                s->settings = c->settings;
                c->settings = CGROUP_SETTINGS_INIT;
                slice_emit_changed(s, c->mask);
                if (slice_mask_to_properties(c->mask, &names) >= 0)
                        list = strv_join(names, " ");
                log_struct(LOG_INFO, "TONARI_SLICE=%s", s->name, "TONARI_CALLER_UID=%d", (int) bus_sender_uid(c->message),
                           LOG_MESSAGE("Changed slice '%s': %s.", s->name, strna(list)));
                (void) sd_bus_reply_method_return(c->message, NULL);
        }
        cgroup_settings_done(&c->settings);
        sd_bus_message_unref(c->message);
        free(c);
}

int bus_slice_method_set_properties(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        SliceManager *sm = manager_of(userdata);
        SetContext *c;
        const char *name;
        Slice *s;
        int r;

        r = begin_change(m, sm, &name, error);
        if (r < 0)
                return r;
        r = find_usable(sm, name, &s, error);
        if (r < 0)
                return r;

        c = new0(SetContext, 1);
        if (!c)
                return -ENOMEM;
        r = cgroup_settings_copy(&c->settings, &s->settings);
        if (r >= 0)
                r = read_settings(m, sm, &c->settings, &c->mask, error);
        if (r >= 0 && c->mask == 0)
                r = sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "No slice properties given.");
        if (r >= 0 && (c->mask & CGROUP_MASK_ALLOWED_MEMS) && sm->on_memory_nodes) {
                r = sm->on_memory_nodes(s, c->settings.allowed_mems, c->settings.allowed_mems_size,
                                        c->mask == CGROUP_MASK_ALLOWED_MEMS, m, error, sm->on_memory_nodes_userdata);
                if (r > 0) { /* a migration job took the change */
                        cgroup_settings_done(&c->settings);
                        free(c);
                        return sd_bus_reply_method_return(m, NULL);
                }
        }
        if (r < 0) {
                cgroup_settings_done(&c->settings);
                free(c);
                return r;
        }

        c->message = sd_bus_message_ref(m);
        s->state = SLICE_BUSY;
        r = sm->backend->apply(s, &c->settings, c->mask, set_done, c);
        if (r < 0) {
                s->state = SLICE_ACTIVE;
                sd_bus_message_unref(c->message);
                cgroup_settings_done(&c->settings);
                free(c);
                return error_not_begun(error, "change", name, r);
        }
        return 1;
}

/* ---- RemoveSlice */

typedef struct RemoveContext {
        sd_bus_message *message;
        Slice *slice;  /* the one being removed */
        Slice *target; /* where its processes go, if anywhere */
        size_t n_moved;
} RemoveContext;

static void remove_context_free(RemoveContext *c) {
        if (c->target)
                c->target->state = SLICE_ACTIVE;
        sd_bus_message_unref(c->message);
        free(c);
}

static void remove_done(Slice *s, int error, const char *message, void *userdata) {
        RemoveContext *c = userdata;

        if (error < 0) {
                s->state = SLICE_ACTIVE;
                (void) reply_failure(c->message, "remove", s->name, error, message);
        } else {
                if (c->target)
                        log_struct(LOG_INFO, "TONARI_SLICE=%s", s->name, "TONARI_TARGET_SLICE=%s", c->target->name,
                                   "TONARI_CALLER_UID=%d", (int) bus_sender_uid(c->message),
                                   LOG_MESSAGE("Removed slice '%s'; its %zu process(es) moved to slice '%s'.", s->name,
                                               c->n_moved, c->target->name));
                else
                        log_struct(LOG_INFO, "TONARI_SLICE=%s", s->name, "TONARI_CALLER_UID=%d",
                                   (int) bus_sender_uid(c->message), LOG_MESSAGE("Removed slice '%s'.", s->name));
                /* What depends on the slice forgets it (durably) before the caller hears it is gone. */
                slice_removed(s);
                (void) sd_bus_reply_method_return(c->message, NULL);
                slice_free(s);
        }
        remove_context_free(c);
}

static void moved_done(Slice *target, int error, const char *message, void *userdata) {
        RemoveContext *c = userdata;
        Slice *s = c->slice;
        int r;

        if (error < 0) {
                s->state = SLICE_ACTIVE;
                (void) reply_failure(c->message, "move the processes out of", s->name, error, message);
                remove_context_free(c);
                return;
        }
        r = s->manager->backend->remove(s, remove_done, c);
        if (r < 0) {
                s->state = SLICE_ACTIVE;
                (void) reply_failure(c->message, "remove", s->name, r, NULL);
                remove_context_free(c);
        }
}

int bus_slice_method_remove(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        SliceManager *sm = manager_of(userdata);
        _cleanup_free_ pid_t *pids = NULL;
        const char *name, *move_to;
        Slice *s, *target = NULL;
        RemoveContext *c;
        size_t n = 0;
        int r;

        r = begin_change(m, sm, &name, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read(m, "s", &move_to);
        if (r < 0)
                return r;
        r = find_usable(sm, name, &s, error);
        if (r < 0)
                return r;
        if (!isempty(move_to)) {
                if (streq(move_to, name))
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Cannot move the processes of slice '%s' into itself.", name);
                r = find_usable(sm, move_to, &target, error);
                if (r < 0)
                        return r;
        }

        r = slice_get_pids(s, &pids, &n);
        if (r < 0)
                return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot list the processes of slice '%s': %s", name,
                                         strerror(ERRNO_VALUE(r)));
        if (n > 0 && !target)
                return sd_bus_error_setf(error, TONARI_ERROR_SLICE_BUSY,
                                         "Slice '%s' has %zu process(es): name a slice to move them to, or move them "
                                         "out first.",
                                         name, n);

        c = new0(RemoveContext, 1);
        if (!c)
                return -ENOMEM;
        c->message = sd_bus_message_ref(m);
        c->slice = s;
        s->state = SLICE_BUSY;

        if (n > 0) {
                _cleanup_free_ uint32_t *u = new(uint32_t, n);
                if (!u) {
                        s->state = SLICE_ACTIVE;
                        remove_context_free(c);
                        return -ENOMEM;
                }
                for (size_t i = 0; i < n; i++)
                        u[i] = (uint32_t) pids[i];
                c->target = target;
                c->n_moved = n;
                target->state = SLICE_BUSY;
                r = sm->backend->attach(target, u, n, moved_done, c);
        } else
                r = sm->backend->remove(s, remove_done, c);
        if (r < 0) {
                s->state = SLICE_ACTIVE;
                remove_context_free(c);
                return error_not_begun(error, "remove", name, r);
        }
        return 1;
}

/* ---- AttachProcesses */

typedef struct AttachContext {
        sd_bus_message *message;
        size_t n_pids;
} AttachContext;

static void attach_done(Slice *s, int error, const char *message, void *userdata) {
        AttachContext *c = userdata;

        s->state = SLICE_ACTIVE;
        if (error < 0)
                (void) reply_failure(c->message, "attach processes to", s->name, error, message);
        else {
                log_struct(LOG_INFO, "TONARI_SLICE=%s", s->name, "TONARI_CALLER_UID=%d", (int) bus_sender_uid(c->message),
                           LOG_MESSAGE("Attached %zu process(es) to slice '%s'.", c->n_pids, s->name));
                (void) sd_bus_reply_method_return(c->message, NULL);
        }
        sd_bus_message_unref(c->message);
        free(c);
}

int bus_slice_method_attach(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        SliceManager *sm = manager_of(userdata);
        const uint32_t *pids;
        const char *name;
        AttachContext *c;
        size_t size, n;
        Slice *s;
        int r;

        r = begin_change(m, sm, &name, error);
        if (r < 0)
                return r;
        r = sd_bus_message_read_array(m, 'u', (const void **) &pids, &size);
        if (r < 0)
                return r;
        n = size / sizeof(uint32_t);
        if (n == 0)
                return sd_bus_error_set(error, SD_BUS_ERROR_INVALID_ARGS, "No processes given.");
        r = find_usable(sm, name, &s, error);
        if (r < 0)
                return r;

        for (size_t i = 0; i < n; i++) {
                if (pids[i] == 0 || pids[i] > INT32_MAX)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid PID %" PRIu32 ".", pids[i]);
                if (pids[i] == 1 || (pid_t) pids[i] == getpid())
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Process %" PRIu32 " is %s and cannot be moved into a slice.", pids[i],
                                                 pids[i] == 1 ? "the init process" : "tonarid itself");
                r = proc_pid_is_kernel_thread("/proc", (pid_t) pids[i]);
                if (r == -ESRCH)
                        return sd_bus_error_setf(error, TONARI_ERROR_NO_SUCH_PROCESS, "Process %" PRIu32 " does not exist.",
                                                 pids[i]);
                if (r < 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_FAILED, "Cannot inspect process %" PRIu32 ": %s",
                                                 pids[i], strerror(ERRNO_VALUE(r)));
                if (r > 0)
                        return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                                 "Process %" PRIu32 " is a kernel thread; kernel threads cannot be moved.",
                                                 pids[i]);
        }

        c = new0(AttachContext, 1);
        if (!c)
                return -ENOMEM;
        c->message = sd_bus_message_ref(m);
        c->n_pids = n;
        s->state = SLICE_BUSY;
        r = sm->backend->attach(s, pids, n, attach_done, c);
        if (r < 0) {
                s->state = SLICE_ACTIVE;
                sd_bus_message_unref(c->message);
                free(c);
                return error_not_begun(error, "attach processes to", name, r);
        }
        return 1;
}

/* ---- read-only methods */

int bus_slice_method_get(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        SliceManager *sm = manager_of(userdata);
        const char *name;
        Slice *s;
        int r;

        /* Not bus_slice_read_existing(): its other callers act on the slice, GetSlice() also finds the
         * servers' request domains, which are read-only. */
        r = bus_slice_read_name(m, &name, error);
        if (r < 0)
                return r;
        s = sm ? slice_manager_find(sm, name) : NULL;
        if (!s && sm && slice_manager_scan_domains(sm) >= 0)
                s = slice_manager_find_domain(sm, name);
        if (!s || s->state == SLICE_CREATING)
                return bus_slice_error_no_such(error, name);
        return sd_bus_reply_method_return(m, "o", s->object_path);
}

static int append_slice(sd_bus_message *reply, Slice *s) {
        CGroupUsage u;
        _cleanup_free_ char *cgroup = NULL;

        if (slice_read_usage(s, &u) < 0)
                u = (CGroupUsage){ UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX };
        cgroup = strjoin("/", strempty(s->cgroup));
        if (!cgroup)
                return -ENOMEM;
        return sd_bus_message_append(reply, "(sosttt)", s->name, s->object_path, cgroup, u.n_tasks, u.cpu_usage_usec,
                                     u.memory_current);
}

static int append_slices(sd_bus_message *reply, void *userdata) {
        SliceManager *sm = userdata;
        Slice *s, *d;
        int r;

        if (!sm)
                return 0;
        /* The servers' request domains (read-only), found anew, merged in by name: both lists are sorted. */
        d = slice_manager_scan_domains(sm) >= 0 ? sm->domains : NULL;
        for (s = sm->slices; s || d;) {
                Slice *next;

                if (s && (!d || strcmp(s->name, d->name) < 0)) {
                        next = s;
                        s = s->next;
                        if (next->state == SLICE_CREATING)
                                continue;
                } else {
                        next = d;
                        d = d->next;
                }
                r = append_slice(reply, next);
                if (r < 0)
                        return r;
        }
        return 0;
}

int bus_slice_method_list(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        return bus_reply_array(m, "(sosttt)", append_slices, manager_of(userdata));
}

/* ---- org.tonari.Slice1 objects */

static int slice_find(sd_bus *bus, const char *path, const char *interface, void *userdata, void **found,
                      sd_bus_error *error) {
        SliceManager *sm = manager_of(userdata);
        Slice *s;

        /* Without a manager (introspection) every path below the prefix stands for a slice. */
        if (!sm) {
                *found = NULL;
                return 1;
        }
        s = slice_manager_find_by_path(sm, path);
        if (!s && slice_manager_scan_domains(sm) >= 0)
                s = slice_manager_find_domain_by_path(sm, path);
        if (!s || s->state == SLICE_CREATING)
                return 0;
        *found = s;
        return 1;
}

static int slice_enumerate(sd_bus *bus, const char *path, void *userdata, char ***nodes, sd_bus_error *error) {
        SliceManager *sm = manager_of(userdata);
        _cleanup_strv_free_ char **l = NULL;

        for (Slice *s = sm ? sm->slices : NULL; s; s = s->next)
                if (s->state != SLICE_CREATING && strv_extend(&l, s->object_path) < 0)
                        return -ENOMEM;
        if (sm && slice_manager_scan_domains(sm) >= 0)
                for (Slice *s = sm->domains; s; s = s->next)
                        if (strv_extend(&l, s->object_path) < 0)
                                return -ENOMEM;
        *nodes = TAKE_PTR(l);
        return 1;
}

static int property_get_string(sd_bus *bus, const char *path, const char *interface, const char *property,
                               sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Slice *s = userdata;

        if (streq(property, "Name"))
                return sd_bus_message_append(reply, "s", s->name);
        if (streq(property, "Backend"))
                /* A request domain is kept by the server that made it, not by a backend of ours. */
                return sd_bus_message_append(reply, "s", s->request_domain ? "domain" : s->manager->backend->name);
        if (streq(property, "Unit"))
                return sd_bus_message_append(reply, "s", strempty(s->unit));
        _cleanup_free_ char *cgroup = strjoin("/", strempty(s->cgroup));
        if (!cgroup)
                return -ENOMEM;
        return sd_bus_message_append(reply, "s", cgroup);
}

static int property_get_io_limits(sd_bus *bus, const char *path, const char *interface, const char *property,
                                  sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Slice *s = userdata;
        CGroupIOLimitType type = io_type_of(property);
        int r;

        r = sd_bus_message_open_container(reply, 'a', "(st)");
        if (r < 0)
                return r;
        for (size_t i = 0; i < s->settings.n_io_limits; i++) {
                const CGroupIODeviceLimit *l = &s->settings.io_limits[i];
                if (l->limit[type] == CGROUP_LIMIT_MAX)
                        continue;
                r = sd_bus_message_append(reply, "(st)", strempty(l->path), l->limit[type]);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

static int property_get_mask(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Slice *s = userdata;

        if (streq(property, "AllowedCPUs"))
                return sd_bus_message_append_array(reply, 'y', s->settings.allowed_cpus, s->settings.allowed_cpus_size);
        return sd_bus_message_append_array(reply, 'y', s->settings.allowed_mems, s->settings.allowed_mems_size);
}

static int property_get_usage(sd_bus *bus, const char *path, const char *interface, const char *property,
                              sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        Slice *s = userdata;
        CGroupUsage u;
        uint64_t v;

        /* Read on every Get: live numbers, UINT64_MAX where the kernel has none. */
        if (slice_read_usage(s, &u) < 0)
                return sd_bus_message_append(reply, "t", UINT64_MAX);
        v = streq(property, "CPUUsageUSec")    ? u.cpu_usage_usec
            : streq(property, "IOReadBytes")   ? u.io_read_bytes
            : streq(property, "IOWriteBytes")  ? u.io_write_bytes
            : streq(property, "MemoryCurrent") ? u.memory_current
                                               : u.n_tasks;
        return sd_bus_message_append(reply, "t", v);
}

#define SETTING(name, field)                                                                           \
        SD_BUS_PROPERTY(name, "t", NULL, offsetof(Slice, settings) + offsetof(CGroupSettings, field),  \
                        SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE)

static const sd_bus_vtable slice_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Name", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Backend", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("Unit", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_PROPERTY("ControlGroup", "s", property_get_string, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SETTING("CPUWeight", cpu_weight),
        SETTING("CPUQuotaPerSecUSec", cpu_quota_per_sec_usec),
        SETTING("CPUQuotaPeriodUSec", cpu_quota_period_usec),
        SETTING("IOWeight", io_weight),
        SD_BUS_PROPERTY("IOReadBandwidthMax", "a(st)", property_get_io_limits, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("IOWriteBandwidthMax", "a(st)", property_get_io_limits, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("IOReadIOPSMax", "a(st)", property_get_io_limits, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("IOWriteIOPSMax", "a(st)", property_get_io_limits, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SETTING("MemoryMax", memory_max),
        SETTING("MemoryHigh", memory_high),
        SD_BUS_PROPERTY("AllowedCPUs", "ay", property_get_mask, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        SD_BUS_PROPERTY("AllowedMemoryNodes", "ay", property_get_mask, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
        /* Live usage: read from the kernel on every Get, so not announced (like systemd's CPUUsageNSec). */
        SD_BUS_PROPERTY("CPUUsageUSec", "t", property_get_usage, 0, 0),
        SD_BUS_PROPERTY("IOReadBytes", "t", property_get_usage, 0, 0),
        SD_BUS_PROPERTY("IOWriteBytes", "t", property_get_usage, 0, 0),
        SD_BUS_PROPERTY("MemoryCurrent", "t", property_get_usage, 0, 0),
        SD_BUS_PROPERTY("NrTasks", "t", property_get_usage, 0, 0),
        SD_BUS_VTABLE_END,
};

int bus_slice_add_objects(sd_bus *bus, SliceManager **manager) {
        int r;

        r = sd_bus_add_fallback_vtable(bus, NULL, SLICE_OBJECT_PREFIX, SLICE_INTERFACE, slice_vtable, slice_find,
                                       manager);
        if (r < 0)
                return r;
        return sd_bus_add_node_enumerator(bus, NULL, SLICE_OBJECT_PREFIX, slice_enumerate, manager);
}
