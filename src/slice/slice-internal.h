/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Private to src/slice/: its library is built with -DTONARI_FOLDER_SLICE (meson.build), nothing else is. */
#ifndef TONARI_FOLDER_SLICE
#error "slice-internal.h is private to src/slice/; use slice.h"
#endif

/*
 * The inside of slices, for src/slice/ only (and its own unit test): the SliceManager, the
 * backends that realize slices, and the steps the bus layer and adoption take. Everybody else
 * goes through slice.h.
 */

#include "slice.h"


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

/* Defines a backend's table from its operations, named <prefix>_adopt, <prefix>_create, ... */
#define SLICE_BACKEND_DEFINE(variable, backend_name, prefix)                                           \
        const SliceBackend variable = {                                                                \
                .name = backend_name,                                                                  \
                .adopt = prefix##_adopt,                                                               \
                .create = prefix##_create,                                                             \
                .apply = prefix##_apply,                                                               \
                .attach = prefix##_attach,                                                             \
                .remove = prefix##_remove,                                                             \
        }

struct SliceManager {
        sd_bus *bus;              /* for PropertiesChanged */
        const SliceBackend *backend;
        CGroupRoot *cgroup_root;  /* usage (both backends), and everything for cgroupfs */
        SystemdClient *systemd;   /* systemd backend only */
        Slice *slices;
        Slice *domains;           /* request domains, read-only (slice-domains.c), sorted by name */
        uint64_t last_id;
        uint8_t *online_cpus;     /* for validating AllowedCPUs= */
        size_t online_cpus_size;
        uint8_t *online_nodes;    /* for validating AllowedMemoryNodes= */
        size_t online_nodes_size;
        uint64_t page_size;       /* memory limits are whole pages */
        SliceRemovedFunc on_removed;
        void *on_removed_userdata;
        SliceMemoryNodesFunc on_memory_nodes; /* lazy NUMA migration takes AllowedMemoryNodes= changes */
        void *on_memory_nodes_userdata;
};

extern const SliceBackend slice_backend_systemd;
extern const SliceBackend slice_backend_cgroupfs_v1;
extern const SliceBackend slice_backend_cgroupfs_v2;

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

/* 1 if the slice's scope has been split into SLICE_SCOPE_LEAF, 0 if not (or no scope). */
int slice_scope_leaf_exists(Slice *s);

/*
 * slice-domains.c: the request domains of servers that use libtonari's domains, found by walking
 * the cgroup v2 tree for its layout, as read-only slices named "<server's cgroup>:<domain>" (a name
 * taken by tonari's own slice is not shown). Walks the tree again on every call; an object of a
 * domain that still exists is kept, so pointers to it stay valid. Nothing on cgroup v1.
 */
int slice_manager_scan_domains(SliceManager *m);
Slice *slice_manager_find_domain(SliceManager *m, const char *name) _pure_;
Slice *slice_manager_find_domain_by_path(SliceManager *m, const char *object_path) _pure_;
void slice_manager_free_domains(SliceManager *m);

/* Announces changed settings on the bus. */
void slice_emit_changed(Slice *s, CGroupSettingMask mask);
