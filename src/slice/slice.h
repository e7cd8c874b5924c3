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
};

/* error: 0, or negative errno with message (may be NULL) explaining it. */
typedef void (*SliceDoneFunc)(Slice *s, int error, const char *message, void *userdata);
/* Told that s has been removed, before the caller of the removal is. */
typedef void (*SliceRemovedFunc)(Slice *s, void *userdata);

typedef struct SliceBackend {
        const char *name; /* "systemd", "cgroupfs-v2", "cgroupfs-v1" as the Backend property shows */
        /* Registers every slice that exists already. */
        int (*adopt)(SliceManager *m);
        /* Creates s with s->settings (mask: what the user set). On failure nothing is left. */
        int (*create)(Slice *s, CGroupSettingMask mask, SliceDoneFunc done, void *userdata);
        /* Applies settings (mask: what changed). s->settings still holds the old values. */
        int (*apply)(Slice *s, const CGroupSettings *settings, CGroupSettingMask mask, SliceDoneFunc done,
                     void *userdata);
        int (*attach)(Slice *s, const uint32_t *pids, size_t n_pids, SliceDoneFunc done, void *userdata);
        /* Removes s, which has no processes left. */
        int (*remove)(Slice *s, SliceDoneFunc done, void *userdata);
} SliceBackend;

struct SliceManager {
        sd_bus *bus;              /* for PropertiesChanged */
        const SliceBackend *backend;
        CGroupRoot *cgroup_root;  /* usage (both backends), and everything for cgroupfs */
        SystemdClient *systemd;   /* systemd backend only */
        Slice *slices;
        uint64_t last_id;
        uint8_t *online_cpus;     /* for validating AllowedCPUs= */
        size_t online_cpus_size;
        uint8_t *online_nodes;    /* for validating AllowedMemoryNodes= */
        size_t online_nodes_size;
        uint64_t page_size;       /* memory limits are whole pages */
        SliceRemovedFunc on_removed;
        void *on_removed_userdata;
};

extern const SliceBackend slice_backend_systemd;
extern const SliceBackend slice_backend_cgroupfs_v1;
extern const SliceBackend slice_backend_cgroupfs_v2;

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
 * Who is told of removed slices (one listener: CPU borrowing, which must forget a slice's account
 * durably before its removal is confirmed). NULL to stop.
 */
void slice_manager_set_removed_callback(SliceManager *m, SliceRemovedFunc f, void *userdata);

/* A new slice in state CREATING, added to the manager; used by the bus layer and by adoption. */
int slice_new(SliceManager *m, const char *name, Slice **ret);
Slice *slice_free(Slice *s); /* unlinks it from its manager */
/* Reads s->cgroup_id for the slice's cgroup, once it exists. */
int slice_read_cgroup_id(Slice *s);
/*
 * The last step of adopting a slice found at start-up (the backends' adopt()): its cgroup's id is
 * read, and its settings are checked as the API checks what callers give. A value the API would
 * round or refuse (e.g. MemoryMax=0, which a kernel stores for 1..4095 bytes) is logged with what
 * was found, replaced by the nearest value the API accepts (slice_settings_make_valid()) and
 * written through the backend, so that the slice never shows a value its own API refuses. The
 * slice is ACTIVE when that is done (at once, unless systemd has to write it).
 */
int slice_adopted(Slice *s);
/* Tells the listener that s was removed; the caller frees s afterwards. */
void slice_removed(Slice *s);

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

/* 1 if the slice's scope has been split into SLICE_SCOPE_LEAF, 0 if not (or no scope). */
int slice_scope_leaf_exists(Slice *s);

/*
 * The cgroup where tonari may write a CPU limit that applies to all of the slice's processes and
 * to nothing else, without touching the slice's configured settings. cgroupfs: the slice's own
 * cgroup (tonari owns the tree; *ret_own = true: the configured CPUQuota= lives in the same file
 * and must be written back when the limit ends). systemd: the scope's leaf, created on first use
 * with the scope's processes moved into it (*ret_own = false). -ENOENT: the slice has no scope,
 * i.e. no processes, at the moment.
 */
int slice_cpu_limit_cgroup(Slice *s, bool *ret_own, char **ret);

/* Announces changed settings on the bus. */
void slice_emit_changed(Slice *s, CGroupSettingMask mask);
