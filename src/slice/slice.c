/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fileio.h"
#include "log.h"
#include "parse-util.h"
#include "path-util.h"
#include "slice-util.h"
#include "slice-internal.h"
#include "string-util.h"
#include "strv.h"

/* CPU and node ids above these are refused when reading the online masks. */
#define CPU_INDEX_MAX 8191
#define NODE_INDEX_MAX 1023

static const char *const slice_backend_type_table[_SLICE_BACKEND_MAX] = {
        [SLICE_BACKEND_AUTO] = "auto",
        [SLICE_BACKEND_SYSTEMD] = "systemd",
        [SLICE_BACKEND_CGROUPFS] = "cgroupfs",
};

const char *slice_backend_type_to_string(SliceBackendType t) {
        return t >= 0 && t < _SLICE_BACKEND_MAX ? slice_backend_type_table[t] : NULL;
}

SliceBackendType slice_backend_type_from_string(const char *s) {
        for (SliceBackendType t = 0; t < _SLICE_BACKEND_MAX; t++)
                if (streq(s, slice_backend_type_table[t]))
                        return t;
        return _SLICE_BACKEND_INVALID;
}

static int read_online_mask(const char *path, unsigned max, uint8_t **ret, size_t *ret_size) {
        _cleanup_free_ char *text = NULL;
        int r;

        r = read_one_line_file(path, &text);
        if (r < 0)
                return r;
        return parse_index_list(text, max, ret, ret_size);
}

int slice_manager_new(sd_bus *bus, SliceBackendType type, bool systemd_pid1, bool systemd_usable,
                      const char *cgroup_dir, SliceManager **ret) {
        _cleanup_(slice_manager_freep) SliceManager *m = NULL;
        long page;
        int r;

        m = new0(SliceManager, 1);
        if (!m)
                return log_oom();
        m->bus = sd_bus_ref(bus);

        /* Without these files nothing is validated against them; the kernel still refuses nonsense. */
        r = read_online_mask("/sys/devices/system/cpu/online", CPU_INDEX_MAX, &m->online_cpus, &m->online_cpus_size);
        if (r < 0)
                log_debug_errno(r, "Cannot read the online CPUs, not checking AllowedCPUs= against them: %m");
        r = read_online_mask("/sys/devices/system/node/online", NODE_INDEX_MAX, &m->online_nodes,
                             &m->online_nodes_size);
        if (r < 0)
                log_debug_errno(r, "Cannot read the online NUMA nodes, not checking AllowedMemoryNodes= against them: %m");
        page = sysconf(_SC_PAGESIZE);
        m->page_size = page > 0 ? (uint64_t) page : 4096;

        if (type == SLICE_BACKEND_AUTO)
                type = systemd_usable ? SLICE_BACKEND_SYSTEMD : SLICE_BACKEND_CGROUPFS;

        if (type == SLICE_BACKEND_SYSTEMD) {
                if (!systemd_usable)
                        return log_error_errno(EOPNOTSUPP,
                                               "Slices: Backend=systemd needs systemd as PID 1 with the unified cgroup "
                                               "hierarchy, and tonarid on the system bus.");
                r = cgroup_root_new("/sys/fs/cgroup", &m->cgroup_root);
                if (r < 0)
                        return log_error_errno(r, "Slices: cannot open /sys/fs/cgroup: %m");
                r = systemd_client_new(bus, &m->systemd);
                if (r < 0)
                        return log_error_errno(r, "Slices: cannot talk to systemd: %m");
                m->backend = &slice_backend_systemd;
        } else {
                /* systemd owns the tree it manages: writing there ourselves would fight it. */
                if (systemd_pid1 && path_equal_or_below(cgroup_dir, "/sys/fs/cgroup"))
                        return log_error_errno(EPERM,
                                               "Slices: Backend=cgroupfs with CgroupRoot='%s' would write into cgroups "
                                               "systemd manages; use Backend=systemd (or auto) on this host.",
                                               cgroup_dir);
                r = cgroup_root_new(cgroup_dir, &m->cgroup_root);
                if (r < 0)
                        return log_error_errno(r, "Slices: no cgroup hierarchy at CgroupRoot='%s': %m", cgroup_dir);
                m->backend = cgroup_root_version(m->cgroup_root) == 2 ? &slice_backend_cgroupfs_v2
                                                                      : &slice_backend_cgroupfs_v1;
        }

        r = m->backend->adopt(m);
        if (r < 0)
                return log_error_errno(r, "Slices: failed to adopt existing slices: %m");

        log_info("Slices: %s backend, %zu existing slice(s) adopted.", m->backend->name, slice_manager_count(m));
        *ret = TAKE_PTR(m);
        return 0;
}

SliceManager *slice_manager_free(SliceManager *m) {
        if (!m)
                return NULL;
        while (m->slices)
                slice_free(m->slices);
        slice_manager_free_domains(m);
        systemd_client_free(m->systemd);
        cgroup_root_free(m->cgroup_root);
        sd_bus_unref(m->bus);
        free(m->online_cpus);
        free(m->online_nodes);
        return mfree(m);
}

void slice_manager_set_removed_callback(SliceManager *m, SliceRemovedFunc f, void *userdata) {
        m->on_removed = f;
        m->on_removed_userdata = userdata;
}

Slice *slice_manager_find(SliceManager *m, const char *name) {
        for (Slice *s = m->slices; s; s = s->next)
                if (streq(s->name, name))
                        return s;
        return NULL;
}

Slice *slice_manager_find_by_path(SliceManager *m, const char *object_path) {
        for (Slice *s = m->slices; s; s = s->next)
                if (streq(s->object_path, object_path))
                        return s;
        return NULL;
}

size_t slice_manager_count(SliceManager *m) {
        size_t n = 0;
        for (Slice *s = m->slices; s; s = s->next)
                if (s->state != SLICE_CREATING) /* as ListSlices() shows them */
                        n++;
        return n;
}

Slice *slice_manager_first(SliceManager *m) {
        return m ? m->slices : NULL;
}

SliceBackendType slice_manager_backend_type(SliceManager *m) {
        return m->backend == &slice_backend_systemd ? SLICE_BACKEND_SYSTEMD : SLICE_BACKEND_CGROUPFS;
}

const char *slice_manager_backend_name(SliceManager *m) {
        return m->backend->name;
}

CGroupRoot *slice_manager_cgroup_root(SliceManager *m) {
        return m->cgroup_root;
}

int slice_new(SliceManager *m, const char *name, Slice **ret) {
        Slice *s;
        int r;

        if (!slice_name_is_valid(name))
                return -EINVAL;
        if (slice_manager_find(m, name))
                return -EEXIST;

        s = new0(Slice, 1);
        if (!s)
                return -ENOMEM;
        *s = (Slice){ .manager = m, .state = SLICE_CREATING, .settings = CGROUP_SETTINGS_INIT, .id = ++m->last_id };
        s->name = strdup(name);
        if (!s->name) {
                slice_free(s);
                return -ENOMEM;
        }
        r = sd_bus_path_encode(SLICE_OBJECT_PREFIX, name, &s->object_path);
        if (r < 0) {
                slice_free(s);
                return r;
        }

        /* Keep the list sorted by name: listings come out in a stable order. */
        Slice **p = &m->slices;
        while (*p && strcmp((*p)->name, name) < 0)
                p = &(*p)->next;
        s->next = *p;
        *p = s;
        *ret = s;
        return 0;
}

Slice *slice_free(Slice *s) {
        if (!s)
                return NULL;
        if (s->manager)
                for (Slice **p = &s->manager->slices; *p; p = &(*p)->next)
                        if (*p == s) {
                                *p = s->next;
                                break;
                        }
        cgroup_settings_done(&s->settings);
        free(s->name);
        free(s->object_path);
        free(s->unit);
        free(s->scope);
        free(s->cgroup);
        return mfree(s);
}

int slice_read_cgroup_id(Slice *s) {
        uint64_t id;
        int r;

        if (!s->cgroup)
                return -ENODATA;
        r = cgroup_get_id(s->manager->cgroup_root, s->cgroup, &id);
        if (r < 0)
                return r;
        s->cgroup_id = id;
        return 0;
}

static void adopted_written(Slice *s, int error, const char *message, void *userdata) {
        (void) userdata;
        s->state = SLICE_ACTIVE;
        if (error < 0)
                log_struct_errno(LOG_WARNING, error, "TONARI_SLICE=%s", s->name,
                                 LOG_MESSAGE("Slices: failed to write the corrected settings of '%s' (%s): %s", s->name,
                                             s->manager->backend->name, message ?: strerror(ERRNO_VALUE(error))));
}

int slice_adopted(Slice *s) {
        SliceManager *m = s->manager;
        _cleanup_(cgroup_settings_done) CGroupSettings valid = CGROUP_SETTINGS_INIT;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_free_ char *report = NULL, *list = NULL;
        CGroupSettingMask changed;
        int r;

        r = slice_read_cgroup_id(s);
        if (r < 0)
                log_warning_errno(r, "Slices: cannot read the cgroup id of '%s' (/%s); its borrowing state will not "
                                  "survive a restart: %m",
                                  s->name, strna(s->cgroup));
        s->state = SLICE_ACTIVE;

        r = cgroup_settings_copy(&valid, &s->settings);
        if (r < 0)
                return r;
        r = slice_settings_make_valid(&valid, m->page_size, m->online_cpus, m->online_cpus_size, m->online_nodes,
                                      m->online_nodes_size, &changed, &report);
        if (r < 0)
                return r;
        if (changed == 0)
                return 0;

        if (slice_mask_to_properties(changed, &names) >= 0)
                list = strv_join(names, " ");
        log_struct(LOG_WARNING, "TONARI_SLICE=%s", s->name, "TONARI_REASON=adopted-invalid-settings",
                   LOG_MESSAGE("Slices: '%s' was found with settings tonari's API does not accept (%s); adopting the "
                               "nearest valid values of %s and writing them.",
                               s->name, report, strna(list)));
        /* The slice shows the valid values from now on; the backend writes them (the cgroupfs
         * backend at once, systemd when its job is done). */
        cgroup_settings_done(&s->settings);
        s->settings = valid;
        valid = CGROUP_SETTINGS_INIT;
        s->state = SLICE_BUSY;
        r = m->backend->apply(s, &s->settings, changed, adopted_written, NULL);
        if (r < 0)
                adopted_written(s, r, NULL, NULL);
        return 0;
}

void slice_removed(Slice *s) {
        if (s->manager->on_removed)
                s->manager->on_removed(s, s->manager->on_removed_userdata);
}

int slice_read_usage(Slice *s, CGroupUsage *ret) {
        if (!s->cgroup)
                return -ENODATA;
        return cgroup_read_usage(s->manager->cgroup_root, s->cgroup, ret);
}

static int collect_pids(CGroupRoot *root, const char *path, pid_t **pids, size_t *n, unsigned depth) {
        _cleanup_strv_free_ char **children = NULL;
        _cleanup_free_ pid_t *here = NULL;
        size_t n_here = 0;
        int r;

        /* Slices hold a scope, scopes may hold a delegated subtree: a few levels, not an abyss. */
        if (depth > 16)
                return -ELOOP;
        r = cgroup_get_pids(root, path, &here, &n_here);
        if (r < 0)
                return r;
        if (n_here > 0) {
                pid_t *a = reallocarray(*pids, *n + n_here, sizeof(pid_t));
                if (!a)
                        return -ENOMEM;
                memcpy(a + *n, here, n_here * sizeof(pid_t));
                *pids = a;
                *n += n_here;
        }

        r = cgroup_list_children(root, path, &children);
        if (r < 0)
                return r;
        STRV_FOREACH(c, children) {
                _cleanup_free_ char *sub = strjoin(path, "/", *c);
                if (!sub)
                        return -ENOMEM;
                r = collect_pids(root, sub, pids, n, depth + 1);
                if (r < 0 && r != -ENOENT) /* a scope may vanish while we look */
                        return r;
        }
        return 0;
}

int slice_get_pids(Slice *s, pid_t **ret, size_t *ret_n) {
        if (!s->cgroup)
                return -ENODATA;
        return slice_cgroup_get_pids(s->manager->cgroup_root, s->cgroup, ret, ret_n);
}

int slice_cgroup_get_pids(CGroupRoot *root, const char *cgroup, pid_t **ret, size_t *ret_n) {
        _cleanup_free_ pid_t *pids = NULL;
        size_t n = 0;
        int r;

        r = collect_pids(root, cgroup, &pids, &n, 0);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(pids);
        *ret_n = n;
        return 0;
}

void slice_emit_changed(Slice *s, CGroupSettingMask mask) {
        _cleanup_strv_free_ char **names = NULL;

        if (!s->manager->bus || mask == 0)
                return;
        if (slice_mask_to_properties(mask, &names) < 0)
                return (void) log_oom();
        (void) sd_bus_emit_properties_changed_strv(s->manager->bus, s->object_path, "org.tonari.Slice1", names);
}

static int scope_cgroup(Slice *s, char **ret) {
        char *p;

        if (!s->scope || !s->cgroup)
                return -ENODATA;
        p = strjoin(s->cgroup, "/", s->scope);
        if (!p)
                return -ENOMEM;
        *ret = p;
        return 0;
}

int slice_scope_leaf_exists(Slice *s) {
        _cleanup_free_ char *scope = NULL, *leaf = NULL;
        int r;

        if (!s->scope)
                return 0;
        r = scope_cgroup(s, &scope);
        if (r < 0)
                return r;
        leaf = strjoin(scope, "/" SLICE_SCOPE_LEAF);
        if (!leaf)
                return -ENOMEM;
        return cgroup_exists(s->manager->cgroup_root, leaf);
}

int slice_cpu_limit_cgroup(Slice *s, bool *ret_own, char **ret) {
        static const char *const controllers[] = { "cpu", NULL };
        _cleanup_free_ char *scope = NULL, *leaf = NULL;
        int r;

        if (!s->cgroup)
                return -ENODATA;
        if (!s->scope) {
                char *p = strdup(s->cgroup);
                if (!p)
                        return -ENOMEM;
                *ret_own = true;
                *ret = p;
                return 0;
        }

        r = scope_cgroup(s, &scope);
        if (r < 0)
                return r;
        r = cgroup_exists(s->manager->cgroup_root, scope);
        if (r < 0)
                return r;
        if (r == 0)
                return -ENOENT;
        r = cgroup_make_leaf(s->manager->cgroup_root, scope, SLICE_SCOPE_LEAF, controllers);
        if (r < 0)
                return r;
        leaf = strjoin(scope, "/" SLICE_SCOPE_LEAF);
        if (!leaf)
                return -ENOMEM;
        *ret_own = false;
        *ret = TAKE_PTR(leaf);
        return 0;
}

usec_t slice_cpu_quota_period(const Slice *s) {
        return s->settings.cpu_quota_period_usec == USEC_INFINITY ? CGROUP_CPU_QUOTA_PERIOD_DEFAULT_USEC
                                                                  : s->settings.cpu_quota_period_usec;
}

int slice_set_cpu_quota_override(Slice *s, const char *cgroup, usec_t quota_usec, usec_t period_usec) {
        usec_t value = quota_usec, period = period_usec;

        if (quota_usec == USEC_INFINITY && streq_ptr(cgroup, s->cgroup)) {
                /* The slice's own cgroup: put its configured CPUQuota= back. */
                period = slice_cpu_quota_period(s);
                value = cgroup_cpu_quota_per_period(s->settings.cpu_quota_per_sec_usec, period);
        }
        return cgroup_set_cpu_max(s->manager->cgroup_root, cgroup, value, period);
}

void slice_cpu_quota_override_adopted(Slice *s, usec_t quota_usec, usec_t period_usec,
                                      usec_t configured_per_sec_usec, usec_t configured_period_usec) {
        usec_t period = slice_cpu_quota_period(s);

        if (period == period_usec &&
            cgroup_cpu_quota_per_period(s->settings.cpu_quota_per_sec_usec, period) == quota_usec) {
                s->settings.cpu_quota_per_sec_usec = configured_per_sec_usec;
                s->settings.cpu_quota_period_usec = configured_period_usec;
        }
}

void slice_manager_set_memory_nodes_callback(SliceManager *m, SliceMemoryNodesFunc f, void *userdata) {
        m->on_memory_nodes = f;
        m->on_memory_nodes_userdata = userdata;
}

int slice_check_memory_nodes(SliceManager *m, const uint8_t *mems, size_t mems_size, char **ret_error) {
        CGroupSettings t = { .allowed_mems = (uint8_t *) mems, .allowed_mems_size = mems_size };

        if (index_list_count(mems, mems_size) == 0) {
                char *e = strdup("Invalid memory nodes '': the set is empty.");
                if (!e)
                        return -ENOMEM;
                *ret_error = e;
                return -EINVAL;
        }
        return slice_settings_validate(&t, CGROUP_MASK_ALLOWED_MEMS, m->page_size, NULL, 0, m->online_nodes,
                                       m->online_nodes_size, ret_error);
}

typedef struct MemsContext {
        CGroupSettings settings;
        CGroupSettingMask mask;
        SliceDoneFunc done;
        void *userdata;
} MemsContext;

static void mems_done(Slice *s, int error, const char *message, void *userdata) {
        MemsContext *c = userdata;

        s->state = SLICE_ACTIVE;
        if (error >= 0) {
                cgroup_settings_done(&s->settings);
                s->settings = c->settings;
                c->settings = CGROUP_SETTINGS_INIT;
                slice_emit_changed(s, c->mask);
        }
        c->done(s, error, message, c->userdata);
        cgroup_settings_done(&c->settings);
        free(c);
}

int slice_set_memory_nodes(Slice *s, const uint8_t *mems, size_t mems_size, const uint8_t *cpus, size_t cpus_size,
                           SliceDoneFunc done, void *userdata) {
        MemsContext *c;
        uint8_t *m = NULL, *k = NULL;
        int r;

        if (s->state != SLICE_ACTIVE)
                return -EBUSY;
        c = new0(MemsContext, 1);
        if (!c)
                return -ENOMEM;
        *c = (MemsContext) { .settings = CGROUP_SETTINGS_INIT, .done = done, .userdata = userdata,
                             .mask = CGROUP_MASK_ALLOWED_MEMS | (cpus ? CGROUP_MASK_ALLOWED_CPUS : 0) };
        r = cgroup_settings_copy(&c->settings, &s->settings);
        if (r >= 0) {
                m = memdup(mems, mems_size);
                k = cpus ? memdup(cpus, cpus_size) : NULL;
                if (!m || (cpus && !k))
                        r = -ENOMEM;
        }
        if (r < 0) {
                free(m);
                free(k);
                cgroup_settings_done(&c->settings);
                free(c);
                return r;
        }
        free(c->settings.allowed_mems);
        c->settings.allowed_mems = m;
        c->settings.allowed_mems_size = mems_size;
        if (cpus) {
                free(c->settings.allowed_cpus);
                c->settings.allowed_cpus = k;
                c->settings.allowed_cpus_size = cpus_size;
        }
        s->state = SLICE_BUSY;
        r = s->manager->backend->apply(s, &c->settings, c->mask, mems_done, c);
        if (r < 0) {
                s->state = SLICE_ACTIVE;
                cgroup_settings_done(&c->settings);
                free(c);
        }
        return r;
}
