/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

#include <systemd/sd-bus.h>

#include "cgroup.h"
#include "macro.h"
#include "systemd-client.h"

/*
 * Slices: tonari's resource domains for tenants (docs/ARCHITECTURE.md, "Slices"). A SliceManager
 * owns them and the backend that realizes them; the state lives in systemd units or cgroup
 * directories, never only here, so a restart adopts everything that exists.
 */

typedef enum SliceBackendType {
        SLICE_BACKEND_AUTO,
        SLICE_BACKEND_SYSTEMD,
        SLICE_BACKEND_CGROUPFS,
        _SLICE_BACKEND_MAX,
        _SLICE_BACKEND_INVALID = -EINVAL,
} SliceBackendType;

const char *slice_backend_type_to_string(SliceBackendType t) _const_;
SliceBackendType slice_backend_type_from_string(const char *s) _pure_;

typedef enum SliceState {
        SLICE_CREATING, /* the backend is creating it; not usable yet */
        SLICE_ACTIVE,
        SLICE_BUSY,     /* a change, attach or removal is under way */
} SliceState;

typedef struct Slice Slice;
typedef struct SliceManager SliceManager;

struct Slice {
        SliceManager *manager;
        Slice *next;
        char *name;
        char *object_path;
        char *unit;   /* systemd: "tonari-web.slice"; NULL for cgroupfs */
        char *scope;  /* systemd: "tonari-web.scope", the delegated scope processes go to */
        char *cgroup; /* below the cgroup root, without leading '/': "tonari.slice/tonari-web.slice" */
        SliceState state;
        CGroupSettings settings;
        uint64_t id; /* unique in this daemon's lifetime: a re-created name is a different slice */
        /*
         * The kernel's id of the slice's cgroup (cgroup_get_id()); 0 if it could not be read. A slice
         * made again under the same name gets another one, and it is the same after a restart of
         * tonarid: what outlives tonarid (the borrowing state) tells slices apart by it.
         */
        uint64_t cgroup_id;
        /*
         * Set by hog limiting (src/limiter/): the child of the cgroup holding the slice's processes
         * (cgroupfs: the slice's own; systemd: its scope) that attached processes go to, because
         * that cgroup has children with controllers and can hold no process itself. NULL: itself.
         */
        const char *attach_leaf;
        /*
         * A server's request domain (libtonari's tonari_domain(3), e.g. mod_tonari's), found in the
         * server's delegated cgroup and shown as a slice: read-only, never in SLICE_MANAGER_FOREACH.
         */
        bool request_domain;
};

/* error: 0, or negative errno with message (may be NULL) explaining it. */
typedef void (*SliceDoneFunc)(Slice *s, int error, const char *message, void *userdata);

/* Told that s has been removed, before the caller of the removal is. */
typedef void (*SliceRemovedFunc)(Slice *s, void *userdata);

/*
 * Picks and prepares the backend: type AUTO means systemd when systemd_usable (systemd is PID 1,
 * on cgroup v2, and we are on the system bus), else cgroupfs under cgroup_dir, which is refused
 * inside /sys/fs/cgroup when systemd_pid1 (that tree is systemd's). Adopts existing slices.
 * Errors are logged with the reason.
 */
int slice_manager_new(sd_bus *bus, SliceBackendType type, bool systemd_pid1, bool systemd_usable,
                      const char *cgroup_dir, SliceManager **ret);
SliceManager *slice_manager_free(SliceManager *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(SliceManager *, slice_manager_free);

Slice *slice_manager_find(SliceManager *m, const char *name) _pure_;
Slice *slice_manager_find_by_path(SliceManager *m, const char *object_path) _pure_;
/* Slices that exist (not those still being created). */
size_t slice_manager_count(SliceManager *m) _pure_;

/*
 * The slices, for those outside src/slice/ that walk them (SliceManager is opaque to them):
 * SLICE_MANAGER_FOREACH(s, m) visits every slice, those still being created included.
 */
Slice *slice_manager_first(SliceManager *m) _pure_;
#define SLICE_MANAGER_FOREACH(s, m) for (Slice *s = slice_manager_first(m); s; s = s->next)

/* The backend in use: SLICE_BACKEND_SYSTEMD or SLICE_BACKEND_CGROUPFS, and its name as the
 * Backend property shows it ("systemd", "cgroupfs-v2", "cgroupfs-v1"). */
SliceBackendType slice_manager_backend_type(SliceManager *m) _pure_;
const char *slice_manager_backend_name(SliceManager *m) _pure_;
/* The cgroup tree the slices live in (both backends read usage from it). */
CGroupRoot *slice_manager_cgroup_root(SliceManager *m) _pure_;

/*
 * Who is told of removed slices (one listener: CPU borrowing, which must forget a slice's account
 * durably before its removal is confirmed). NULL to stop.
 */
void slice_manager_set_removed_callback(SliceManager *m, SliceRemovedFunc f, void *userdata);

/* The processes' usage, read from the kernel now. */
int slice_read_usage(Slice *s, CGroupUsage *ret);
/* All processes in the slice and below (e.g. its scope). */
int slice_get_pids(Slice *s, pid_t **ret, size_t *ret_n);

/*
 * The leaf inside a systemd slice's delegated scope that holds its processes once tonari limits
 * them itself (CPU borrowing): tonari-web.scope/tenant. systemd owns the scope's own attributes,
 * the delegatee owns everything below it.
 */
#define SLICE_SCOPE_LEAF "tenant"

/*
 * The cgroup where tonari may write a CPU limit that applies to all of the slice's processes and
 * to nothing else, without touching the slice's configured settings. cgroupfs: the slice's own
 * cgroup (tonari owns the tree; *ret_own = true: the configured CPUQuota= lives in the same file
 * and must be written back when the limit ends). systemd: the scope's leaf, created on first use
 * with the scope's processes moved into it (*ret_own = false). -ENOENT: the slice has no scope,
 * i.e. no processes, at the moment.
 */
int slice_cpu_limit_cgroup(Slice *s, bool *ret_own, char **ret);

/* The slice's CFS period: CPUQuotaPeriodSec=, or the kernel's default. */
usec_t slice_cpu_quota_period(const Slice *s) _pure_;

/*
 * Sets a temporary CPU quota override (CPU borrowing): quota_usec per period_usec for all of the
 * slice's processes, written to cgroup, which slice_cpu_limit_cgroup() gave. The slice's configured
 * settings stay as they are. quota_usec USEC_INFINITY clears the override: on the slice's own
 * cgroup (cgroupfs) its configured CPUQuota= is written back, on the scope's leaf the limit is
 * lifted. -ENOENT: cgroup is gone (the scope ended).
 */
int slice_set_cpu_quota_override(Slice *s, const char *cgroup, usec_t quota_usec, usec_t period_usec);

/*
 * tonarid stopped while an override of quota_usec per period_usec was in force on the slice's own
 * cgroup, so adoption read it back as the slice's setting: if it did, the configured values
 * (configured_per_sec_usec, configured_period_usec, as the override's setter saw them) are put back
 * as the slice's settings.
 */
void slice_cpu_quota_override_adopted(Slice *s, usec_t quota_usec, usec_t period_usec,
                                      usec_t configured_per_sec_usec, usec_t configured_period_usec);

/*
 * Lazy NUMA migration (src/migrate/): who is asked first about a change of AllowedMemoryNodes= that
 * SetSliceProperties() is given (alone: no other property with it), instead of writing it (which
 * makes the kernel move every page at once). Returns 1 if it took the change (a job started; the
 * call is answered at once; only when alone), 0 to let the change be written as usual, or a
 * negative errno with error set (e.g. the slice is being migrated). NULL to stop.
 */
typedef int (*SliceMemoryNodesFunc)(Slice *s, const uint8_t *mems, size_t mems_size, bool alone, sd_bus_message *m,
                                    sd_bus_error *error, void *userdata);
void slice_manager_set_memory_nodes_callback(SliceManager *m, SliceMemoryNodesFunc f, void *userdata);

/*
 * Checks a node set as AllowedMemoryNodes= is checked (not empty, every node online); -EINVAL with
 * a message quoting the set in *ret_error.
 */
int slice_check_memory_nodes(SliceManager *m, const uint8_t *mems, size_t mems_size, char **ret_error);

/*
 * Writes AllowedMemoryNodes= (mems) and, if cpus is not NULL, AllowedCPUs= through the backend; the
 * slice's settings follow once done() is told of success. The slice is BUSY meanwhile.
 */
int slice_set_memory_nodes(Slice *s, const uint8_t *mems, size_t mems_size, const uint8_t *cpus, size_t cpus_size,
                           SliceDoneFunc done, void *userdata);

/* The processes in a slice's cgroup tree (cgroup below root); only reads: safe on another thread. */
int slice_cgroup_get_pids(CGroupRoot *root, const char *cgroup, pid_t **ret, size_t *ret_n);
