/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc-util.h"
#include "bus-util.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"
#include "systemd-client.h"

#define SYSTEMD_SERVICE "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"

/* JobRemoved signals whose job we have not seen a reply for yet (a reply and its job's end can
 * reach us in either order when several calls are in flight). Small: only in-flight jobs matter. */
#define RECENT_JOBS_MAX 64

typedef struct Call Call;
struct Call {
        SystemdClient *client;
        Call *next;
        sd_bus_slot *slot;  /* the method call, until its reply */
        char *job;          /* the job it started, until JobRemoved */
        char *unit;
        SystemdDoneFunc done;
        void *userdata;
};

struct SystemdClient {
        sd_bus *bus;
        sd_bus_slot *job_removed_slot;
        Call *calls;
        struct {
                char *job;
                char *result;
        } recent[RECENT_JOBS_MAX];
        unsigned recent_next;
};

static Call *call_free(Call *call) {
        if (!call)
                return NULL;
        sd_bus_slot_unref(call->slot);
        free(call->job);
        free(call->unit);
        return mfree(call);
}

static void call_unlink(SystemdClient *c, Call *call) {
        for (Call **p = &c->calls; *p; p = &(*p)->next)
                if (*p == call) {
                        *p = call->next;
                        return;
                }
}

/* Calls done() once and forgets the call. */
static void call_finish(Call *call, int error, const sd_bus_error *e, const char *message) {
        SystemdClient *c = call->client;
        SystemdDoneFunc done = call->done;
        void *userdata = call->userdata;

        call_unlink(c, call);
        call_free(call);
        done(error, e, message, userdata);
}

static void job_finished(Call *call, const char *result) {
        if (streq(result, "done"))
                call_finish(call, 0, NULL, NULL);
        else
                call_finish(call, -EIO, NULL, result);
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        SystemdClient *c = userdata;
        _cleanup_free_ char *job_copy = NULL, *result_copy = NULL;
        const char *job, *unit, *result;
        uint32_t id;
        unsigned i;

        if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) < 0)
                return 0;

        for (Call *call = c->calls; call; call = call->next)
                if (call->job && streq(call->job, job)) {
                        job_finished(call, result);
                        return 0;
                }

        /* Maybe ours, with the reply still in the queue: remember it for a while. Both copies or
         * neither: a job without its result would later read as failed with an empty result. */
        job_copy = strdup(job);
        result_copy = strdup(result);
        if (!job_copy || !result_copy)
                return -ENOMEM;
        i = c->recent_next++ % RECENT_JOBS_MAX;
        free_and_replace(c->recent[i].job, job_copy);
        free_and_replace(c->recent[i].result, result_copy);
        return 0;
}

int systemd_client_new(sd_bus *bus, SystemdClient **ret) {
        _cleanup_(systemd_client_freep) SystemdClient *c = NULL;
        int r;

        c = new0(SystemdClient, 1);
        if (!c)
                return -ENOMEM;
        c->bus = sd_bus_ref(bus);

        r = sd_bus_match_signal_async(bus, &c->job_removed_slot, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                      "JobRemoved", on_job_removed, NULL, c);
        if (r < 0)
                return r;
        /* systemd sends JobRemoved only while some client has subscribed. */
        r = sd_bus_call_method_async(bus, NULL, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER, "Subscribe", NULL,
                                     NULL, NULL);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(c);
        return 0;
}

SystemdClient *systemd_client_free(SystemdClient *c) {
        if (!c)
                return NULL;
        while (c->calls) {
                Call *call = c->calls;
                c->calls = call->next;
                call_free(call);
        }
        for (unsigned i = 0; i < RECENT_JOBS_MAX; i++) {
                free(c->recent[i].job);
                free(c->recent[i].result);
        }
        sd_bus_slot_unref(c->job_removed_slot);
        sd_bus_unref(c->bus);
        return mfree(c);
}

static int on_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Call *call = userdata;
        SystemdClient *c = call->client;
        const sd_bus_error *e;
        const char *job;
        int r;

        call->slot = sd_bus_slot_unref(call->slot);

        e = sd_bus_message_get_error(reply);
        if (e) {
                call_finish(call, -ERRNO_VALUE(sd_bus_error_get_errno(e) ?: EIO), e, e->message);
                return 0;
        }

        /* Methods that queue a job return its path; the others are done now. */
        if (!streq(sd_bus_message_get_signature(reply, true), "o")) {
                call_finish(call, 0, NULL, NULL);
                return 0;
        }
        r = sd_bus_message_read(reply, "o", &job);
        if (r < 0) {
                call_finish(call, r, NULL, "unparsable reply");
                return 0;
        }
        for (unsigned i = 0; i < RECENT_JOBS_MAX; i++)
                if (c->recent[i].job && streq(c->recent[i].job, job)) {
                        _cleanup_free_ char *result = TAKE_PTR(c->recent[i].result);
                        c->recent[i].job = mfree(c->recent[i].job);
                        job_finished(call, strempty(result));
                        return 0;
                }
        call->job = strdup(job);
        if (!call->job)
                call_finish(call, -ENOMEM, NULL, "out of memory");
        return 0;
}

static int call_new(SystemdClient *c, const char *unit, SystemdDoneFunc done, void *userdata, Call **ret) {
        Call *call = new0(Call, 1);

        if (!call)
                return -ENOMEM;
        *call = (Call){ .client = c, .done = done, .userdata = userdata, .unit = strdup(unit) };
        if (!call->unit) {
                free(call);
                return -ENOMEM;
        }
        *ret = call;
        return 0;
}

/* Sends m and tracks it; takes care of m's and the call's lifetime on every path. */
static int call_send(SystemdClient *c, sd_bus_message *m, const char *unit, SystemdDoneFunc done, void *userdata) {
        Call *call;
        int r;

        r = call_new(c, unit, done, userdata, &call);
        if (r < 0)
                return r;
        r = sd_bus_call_async(c->bus, &call->slot, m, on_reply, call, 0);
        if (r < 0) {
                call_free(call);
                return r;
        }
        call->next = c->calls;
        c->calls = call;
        return 0;
}

/* A call of the manager's member with its first arguments (types as sd_bus_message_append()). */
static int new_manager_call(SystemdClient *c, const char *member, sd_bus_message **ret, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(c->bus, &m, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER, member);
        if (r < 0)
                return r;
        va_start(ap, types);
        r = sd_bus_message_appendv(m, types, ap);
        va_end(ap);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(m);
        return 0;
}

static int append_properties(sd_bus_message *m, SystemdAppendFunc append, void *append_data) {
        int r;

        r = sd_bus_message_open_container(m, 'a', "(sv)");
        if (r < 0)
                return r;
        if (append) {
                r = append(m, append_data);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(m);
}

int systemd_start_transient_unit(SystemdClient *c, const char *unit, SystemdAppendFunc append, void *append_data,
                                 SystemdDoneFunc done, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = new_manager_call(c, "StartTransientUnit", &m, "ss", unit, "fail");
        if (r < 0)
                return r;
        r = append_properties(m, append, append_data);
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r < 0)
                return r;
        return call_send(c, m, unit, done, userdata);
}

int systemd_stop_unit(SystemdClient *c, const char *unit, SystemdDoneFunc done, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = new_manager_call(c, "StopUnit", &m, "ss", unit, "replace");
        if (r < 0)
                return r;
        return call_send(c, m, unit, done, userdata);
}

int systemd_set_unit_properties(SystemdClient *c, const char *unit, SystemdAppendFunc append, void *append_data,
                                SystemdDoneFunc done, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = new_manager_call(c, "SetUnitProperties", &m, "sb", unit, true);
        if (r < 0)
                return r;
        r = append_properties(m, append, append_data);
        if (r < 0)
                return r;
        return call_send(c, m, unit, done, userdata);
}

int systemd_attach_processes(SystemdClient *c, const char *unit, const char *subcgroup, const uint32_t *pids,
                             size_t n_pids, SystemdDoneFunc done, void *userdata) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        int r;

        r = new_manager_call(c, "AttachProcessesToUnit", &m, "ss", unit, strempty(subcgroup));
        if (r < 0)
                return r;
        r = sd_bus_message_append_array(m, 'u', pids, n_pids * sizeof(uint32_t));
        if (r < 0)
                return r;
        return call_send(c, m, unit, done, userdata);
}

int systemd_list_units(SystemdClient *c, const char *pattern, char ***ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_strv_free_ char **units = NULL;
        const char *name;
        int r;

        r = new_manager_call(c, "ListUnitsByPatterns", &m, "asas", 0, 1, pattern);
        if (r < 0)
                return r;
        r = sd_bus_call(c->bus, m, 0, &error, &reply);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(reply, "(ssssssouso)", &name, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
                                        NULL)) > 0)
                if (strv_extend(&units, name) < 0)
                        return -ENOMEM;
        if (r < 0)
                return r;
        strv_sort(units);
        *ret = TAKE_PTR(units);
        return 0;
}

static int get_unit_path(SystemdClient *c, const char *unit, char **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        const char *path;
        int r;

        r = sd_bus_call_method(c->bus, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER, "GetUnit", &error, &reply,
                               "s", unit);
        if (r < 0)
                return sd_bus_error_has_name(&error, "org.freedesktop.systemd1.NoSuchUnit") ? -ENOENT : r;
        r = sd_bus_message_read(reply, "o", &path);
        if (r < 0)
                return r;
        return free_and_strdup(ret, path);
}

int systemd_unit_active_state(SystemdClient *c, const char *unit, char **ret) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        r = get_unit_path(c, unit, &path);
        if (r < 0)
                return r;
        return sd_bus_get_property_string(c->bus, SYSTEMD_SERVICE, path, "org.freedesktop.systemd1.Unit",
                                          "ActiveState", &error, ret);
}

static int read_io_limits(sd_bus_message *m, CGroupIOLimitType type, CGroupSettings *s) {
        const char *path;
        uint64_t value;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "(st)");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_read(m, "(st)", &path, &value)) > 0) {
                struct stat st = {};
                CGroupIODeviceLimit *l;

                /* systemd keeps the path as given; the device number is for our own comparisons. */
                if (stat(path, &st) < 0 || !S_ISBLK(st.st_mode))
                        st.st_rdev = 0;
                l = st.st_rdev != 0 ? cgroup_settings_find_io_limit(s, st.st_rdev) : NULL;
                if (!l) {
                        CGroupIODeviceLimit *n = reallocarray(s->io_limits, s->n_io_limits + 1, sizeof(*n));
                        if (!n)
                                return -ENOMEM;
                        s->io_limits = n;
                        l = &n[s->n_io_limits++];
                        *l = (CGroupIODeviceLimit){ .devnum = st.st_rdev, .path = strdup(path) };
                        for (int t = 0; t < _CGROUP_IO_LIMIT_TYPE_MAX; t++)
                                l->limit[t] = CGROUP_LIMIT_MAX;
                        if (!l->path)
                                return -ENOMEM;
                }
                l->limit[type] = value;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* The uint64 ("t") properties, read straight into their fields. */
static const struct {
        const char *name;
        size_t offset;
} uint64_properties[] = {
        { "CPUWeight", offsetof(CGroupSettings, cpu_weight) },
        { "CPUQuotaPerSecUSec", offsetof(CGroupSettings, cpu_quota_per_sec_usec) },
        { "CPUQuotaPeriodUSec", offsetof(CGroupSettings, cpu_quota_period_usec) },
        { "IOWeight", offsetof(CGroupSettings, io_weight) },
        { "MemoryMax", offsetof(CGroupSettings, memory_max) },
        { "MemoryHigh", offsetof(CGroupSettings, memory_high) },
};

int systemd_read_unit_settings(SystemdClient *c, const char *unit, CGroupSettings *ret, char **ret_cgroup) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(cgroup_settings_done) CGroupSettings s = CGROUP_SETTINGS_INIT;
        _cleanup_free_ char *path = NULL, *cgroup = NULL;
        const char *interface;
        int r;

        interface = endswith(unit, ".slice")   ? "org.freedesktop.systemd1.Slice"
                    : endswith(unit, ".scope") ? "org.freedesktop.systemd1.Scope"
                                               : NULL;
        if (!interface)
                return -EINVAL;
        r = get_unit_path(c, unit, &path);
        if (r < 0)
                return r;
        r = sd_bus_call_method(c->bus, SYSTEMD_SERVICE, path, "org.freedesktop.DBus.Properties", "GetAll", &error,
                               &reply, "s", interface);
        if (r < 0)
                return r;

        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                const char *name, *str;

                r = sd_bus_message_read(reply, "s", &name);
                if (r < 0)
                        return r;

                const size_t *offset = NULL;
                FOREACH_ELEMENT(p, uint64_properties)
                        if (streq(name, p->name))
                                offset = &p->offset;
                if (offset)
                        r = sd_bus_message_read(reply, "v", "t", (uint8_t *) &s + *offset);
                else if (streq(name, "ControlGroup")) {
                        r = sd_bus_message_read(reply, "v", "s", &str);
                        if (r >= 0)
                                r = free_and_strdup(&cgroup, str);
                } else if (STR_IN_SET(name, "IOReadBandwidthMax", "IOWriteBandwidthMax", "IOReadIOPSMax",
                                      "IOWriteIOPSMax")) {
                        CGroupIOLimitType type = streq(name, "IOReadBandwidthMax")    ? CGROUP_IO_RBPS
                                                 : streq(name, "IOWriteBandwidthMax") ? CGROUP_IO_WBPS
                                                 : streq(name, "IOReadIOPSMax")       ? CGROUP_IO_RIOPS
                                                                                      : CGROUP_IO_WIOPS;
                        r = sd_bus_message_enter_container(reply, 'v', "a(st)");
                        if (r >= 0)
                                r = read_io_limits(reply, type, &s);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(reply);
                } else if (STR_IN_SET(name, "AllowedCPUs", "AllowedMemoryNodes")) {
                        bool cpus = streq(name, "AllowedCPUs");
                        r = sd_bus_message_enter_container(reply, 'v', "ay");
                        if (r >= 0)
                                r = cpus ? bus_message_read_bitmask(reply, &s.allowed_cpus, &s.allowed_cpus_size)
                                         : bus_message_read_bitmask(reply, &s.allowed_mems, &s.allowed_mems_size);
                        if (r >= 0)
                                r = sd_bus_message_exit_container(reply);
                } else
                        r = sd_bus_message_skip(reply, "v");
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(reply);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;

        *ret = s;
        s = CGROUP_SETTINGS_INIT;
        if (ret_cgroup)
                *ret_cgroup = TAKE_PTR(cgroup);
        return 0;
}

/* Opens one property of an "a(sv)": the struct, its name and the variant holding contents. */
static int open_property(sd_bus_message *m, const char *name, const char *contents) {
        int r;

        r = sd_bus_message_open_container(m, 'r', "sv");
        if (r >= 0)
                r = sd_bus_message_append(m, "s", name);
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'v', contents);
        return r;
}

static int close_property(sd_bus_message *m) {
        int r;

        r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = sd_bus_message_close_container(m);
        return r;
}

static int append_io_limits(sd_bus_message *m, const CGroupSettings *s, CGroupIOLimitType type, const char *name) {
        int r;

        /* An empty list first clears every limit of this kind; then the ones we want. */
        r = sd_bus_message_append(m, "(sv)", name, "a(st)", 0);
        if (r < 0)
                return r;
        r = open_property(m, name, "a(st)");
        if (r >= 0)
                r = sd_bus_message_open_container(m, 'a', "(st)");
        if (r < 0)
                return r;
        for (size_t i = 0; i < s->n_io_limits; i++)
                if (s->io_limits[i].limit[type] != CGROUP_LIMIT_MAX) {
                        r = sd_bus_message_append(m, "(st)", s->io_limits[i].path, s->io_limits[i].limit[type]);
                        if (r < 0)
                                return r;
                }
        r = sd_bus_message_close_container(m);
        if (r >= 0)
                r = close_property(m);
        return r;
}

/* (name, "ay" mask): AllowedCPUs=, AllowedMemoryNodes=. */
static int append_bitmask(sd_bus_message *m, const char *name, const uint8_t *mask, size_t size) {
        int r;

        r = open_property(m, name, "ay");
        if (r >= 0)
                r = sd_bus_message_append_array(m, 'y', mask, size);
        if (r >= 0)
                r = close_property(m);
        return r;
}

int systemd_append_settings(sd_bus_message *m, const CGroupSettings *s, CGroupSettingMask mask) {
        static const char *const io_names[_CGROUP_IO_LIMIT_TYPE_MAX] = {
                [CGROUP_IO_RBPS] = "IOReadBandwidthMax",
                [CGROUP_IO_WBPS] = "IOWriteBandwidthMax",
                [CGROUP_IO_RIOPS] = "IOReadIOPSMax",
                [CGROUP_IO_WIOPS] = "IOWriteIOPSMax",
        };
        int r = 0;

        if (mask & CGROUP_MASK_CPU_WEIGHT)
                r = sd_bus_message_append(m, "(sv)", "CPUWeight", "t", s->cpu_weight);
        if (r >= 0 && (mask & CGROUP_MASK_CPU_QUOTA))
                r = sd_bus_message_append(m, "(sv)(sv)", "CPUQuotaPerSecUSec", "t", s->cpu_quota_per_sec_usec,
                                          "CPUQuotaPeriodUSec", "t", s->cpu_quota_period_usec);
        if (r >= 0 && (mask & CGROUP_MASK_IO_WEIGHT))
                r = sd_bus_message_append(m, "(sv)", "IOWeight", "t", s->io_weight);
        if (mask & CGROUP_MASK_IO_LIMITS)
                for (CGroupIOLimitType t = 0; r >= 0 && t < _CGROUP_IO_LIMIT_TYPE_MAX; t++)
                        r = append_io_limits(m, s, t, io_names[t]);
        if (r >= 0 && (mask & CGROUP_MASK_MEMORY_MAX))
                r = sd_bus_message_append(m, "(sv)", "MemoryMax", "t", s->memory_max);
        if (r >= 0 && (mask & CGROUP_MASK_MEMORY_HIGH))
                r = sd_bus_message_append(m, "(sv)", "MemoryHigh", "t", s->memory_high);
        if (r >= 0 && (mask & CGROUP_MASK_ALLOWED_CPUS))
                r = append_bitmask(m, "AllowedCPUs", s->allowed_cpus, s->allowed_cpus_size);
        if (r >= 0 && (mask & CGROUP_MASK_ALLOWED_MEMS))
                r = append_bitmask(m, "AllowedMemoryNodes", s->allowed_mems, s->allowed_mems_size);
        return r;
}
