/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Request domains as read-only slices (issue 19): a server that uses libtonari's domains
 * (tonari_domain(3), e.g. Apache with mod_tonari) keeps them in its own delegated cgroup, where
 * tonarid never writes. tonarid finds them by libtonari's layout and shows each as a slice named
 * "<server's cgroup>:<domain>", so that an operator sees every tenant's usage with ListSlices()
 * and `tonarictl slice show`. The cgroups are the state: every listing walks the tree again.
 */
#include <assert.h>
#include <errno.h>
#include <string.h>

#include "alloc-util.h"
#include "log.h"
#include "path-util.h"
#include "slice-util.h"
#include "slice-internal.h"
#include "string-util.h"
#include "strv.h"

/*
 * libtonari's layout (tonari/domain.h: TONARI_DOMAIN_HOME, TONARI_DOMAIN_THREADS): a delegated
 * cgroup ROOT that holds ROOT/_home has its domains beside it (processes move), and one that
 * holds ROOT/_threads/_home has them below _threads (threads move). systemd escapes a unit
 * cgroup named with a leading '_' (it would be "__home"), so only a delegatee makes "_home".
 */
#define DOMAIN_HOME "_home"
#define DOMAIN_THREADS "_threads"

/* Depth of the walk below the cgroup root: user@.service's units sit at 5, with room to spare. */
#define DOMAIN_WALK_DEPTH_MAX 8

static bool domain_dir_name_ok(const char *name) {
        /* Siblings that are no domain: _home, _threads, systemd's .control, anything hidden. */
        return name[0] != '_' && name[0] != '.';
}

static Slice *find_in(Slice *list, const char *name, const char *cgroup) {
        for (Slice *s = list; s; s = s->next)
                if (streq(s->name, name) && (!cgroup || streq(s->cgroup, cgroup)))
                        return s;
        return NULL;
}

static Slice *domain_free(Slice *s) {
        if (!s)
                return NULL;
        s->manager = NULL; /* not in the manager's list of slices: nothing to unlink there */
        return slice_free(s);
}

static void domains_free(Slice **list) {
        while (*list) {
                Slice *next = (*list)->next;
                domain_free(*list);
                *list = next;
        }
}

/* Adds the domain cgroup (below the cgroup root) of server to *list, sorted by name; reuses the
 * object of an earlier walk for the same name and cgroup, so that a pointer the bus layer holds
 * stays valid while the domain exists. */
static int add_domain(SliceManager *m, Slice **old, Slice **list, const char *server, const char *cgroup,
                      const char *domain) {
        _cleanup_free_ char *name = NULL;
        Slice *s;
        int r;

        name = strjoin(server, ":", domain);
        if (!name)
                return -ENOMEM;
        /* A name a slice could not have, or one taken by tonari's own slice: not shown. */
        if (!slice_name_is_valid(name) || slice_manager_find(m, name) || find_in(*list, name, NULL)) {
                log_debug("Request domain '%s' in '%s' not shown: its name is not valid or taken.", name, cgroup);
                return 0;
        }

        s = find_in(*old, name, cgroup);
        if (s) {
                for (Slice **p = old; *p; p = &(*p)->next)
                        if (*p == s) {
                                *p = s->next;
                                break;
                        }
                cgroup_settings_done(&s->settings);
                s->settings = CGROUP_SETTINGS_INIT;
        } else {
                s = new0(Slice, 1);
                if (!s)
                        return -ENOMEM;
                *s = (Slice){ .state = SLICE_ACTIVE, .settings = CGROUP_SETTINGS_INIT, .request_domain = true,
                              .id = ++m->last_id };
                s->name = TAKE_PTR(name);
                s->cgroup = strdup(cgroup);
                /* The server's unit, where its cgroup is one (systemd's naming). */
                if (endswith(server, ".service") || endswith(server, ".scope"))
                        s->unit = strdup(server);
                r = sd_bus_path_encode(SLICE_OBJECT_PREFIX, s->name, &s->object_path);
                if (r < 0 || !s->cgroup || ((endswith(server, ".service") || endswith(server, ".scope")) && !s->unit)) {
                        domain_free(s);
                        return r < 0 ? r : -ENOMEM;
                }
        }
        /* Its limits as the server wrote them; a cgroup that went away meanwhile is left out. */
        s->manager = m;
        r = cgroup_read_settings(m->cgroup_root, s->cgroup, &s->settings);
        if (r >= 0)
                (void) slice_read_cgroup_id(s);
        if (r < 0) {
                log_debug_errno(r, "Request domain '%s' not shown: cannot read its settings: %m", s->name);
                domain_free(s);
                return r == -ENOMEM ? r : 0;
        }

        Slice **p = list;
        while (*p && strcmp((*p)->name, s->name) < 0)
                p = &(*p)->next;
        s->next = *p;
        *p = s;
        return 0;
}

/* The domains of the server in cgroup path (below the root), found below dir (path or path/_threads). */
static int add_domains_of(SliceManager *m, Slice **old, Slice **list, const char *path, const char *dir) {
        _cleanup_strv_free_ char **children = NULL;
        const char *server;
        int r;

        r = cgroup_list_children(m->cgroup_root, dir, &children);
        if (r < 0)
                return r == -ENOENT ? 0 : r;
        server = strrchr(path, '/');
        server = server ? server + 1 : path;
        STRV_FOREACH(c, children) {
                _cleanup_free_ char *cgroup = NULL;

                if (!domain_dir_name_ok(*c))
                        continue;
                cgroup = strjoin(dir, "/", *c);
                if (!cgroup)
                        return -ENOMEM;
                r = add_domain(m, old, list, server, cgroup, *c);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int walk(SliceManager *m, Slice **old, Slice **list, const char *path, unsigned depth) {
        _cleanup_strv_free_ char **children = NULL;
        int r;

        r = cgroup_list_children(m->cgroup_root, path, &children);
        if (r < 0)
                return r == -ENOENT ? 0 : r; /* removed meanwhile */

        if (path[0]) {
                bool home = strv_contains(children, DOMAIN_HOME), threads = false;

                if (strv_contains(children, DOMAIN_THREADS)) {
                        _cleanup_free_ char *t = strjoin(path, "/" DOMAIN_THREADS "/" DOMAIN_HOME);
                        if (!t)
                                return -ENOMEM;
                        threads = cgroup_exists(m->cgroup_root, t) > 0;
                }
                if (home || threads) {
                        _cleanup_free_ char *t = NULL;

                        if (home) {
                                r = add_domains_of(m, old, list, path, path);
                                if (r < 0)
                                        return r;
                        }
                        if (threads) {
                                t = strjoin(path, "/" DOMAIN_THREADS);
                                if (!t)
                                        return -ENOMEM;
                                r = add_domains_of(m, old, list, path, t);
                                if (r < 0)
                                        return r;
                        }
                        return 0; /* a server's subtree: its children are its domains */
                }
        }
        if (depth >= DOMAIN_WALK_DEPTH_MAX)
                return 0;

        STRV_FOREACH(c, children) {
                _cleanup_free_ char *child = NULL;

                /* tonari's own slices (cgroupfs backend) are listed as slices already. */
                if (!path[0] && streq(*c, SLICE_CGROUPFS_PARENT))
                        continue;
                child = path[0] ? strjoin(path, "/", *c) : strdup(*c);
                if (!child)
                        return -ENOMEM;
                r = walk(m, old, list, child, depth + 1);
                if (r < 0)
                        return r;
        }
        return 0;
}

int slice_manager_scan_domains(SliceManager *m) {
        Slice *old, *list = NULL;
        int r;

        assert(m);

        /* Domains are cgroup v2 only (libtonari refuses v1). */
        if (cgroup_root_version(m->cgroup_root) != 2) {
                domains_free(&m->domains);
                return 0;
        }
        old = TAKE_PTR(m->domains);
        r = walk(m, &old, &list, "", 0);
        domains_free(&old);
        if (r < 0) {
                domains_free(&list);
                return log_debug_errno(r, "Cannot look for request domains: %m");
        }
        m->domains = list;
        return 0;
}

Slice *slice_manager_find_domain(SliceManager *m, const char *name) {
        return find_in(m->domains, name, NULL);
}

Slice *slice_manager_find_domain_by_path(SliceManager *m, const char *object_path) {
        for (Slice *s = m->domains; s; s = s->next)
                if (streq(s->object_path, object_path))
                        return s;
        return NULL;
}

void slice_manager_free_domains(SliceManager *m) {
        domains_free(&m->domains);
}
