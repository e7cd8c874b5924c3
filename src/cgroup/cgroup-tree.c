/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Changes to the tree of cgroups: creating and removing a cgroup in every hierarchy, moving
 * processes into one, and making a leaf in a delegated v2 subtree. What takes more than one step
 * is all or nothing: on failure the steps already made are undone.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "cgroup-internal.h"
#include "fd-util.h"
#include "path-util.h"
#include "proc-util.h"
#include "string-util.h"
#include "strv.h"

/* The v2 controllers tonari enables for its cgroups. */
static const char *const v2_controllers[] = { "cpu", "io", "memory", "pids", "cpuset" };

static void free_array(char **a, size_t n) {
        for (size_t i = 0; a && i < n; i++)
                free(a[i]);
        free(a);
}

static int write_pid(CGroupRoot *r, const char *h, const char *path, pid_t pid) {
        char buf[STRLEN("-2147483648") + 1];

        (void) snprintf(buf, sizeof(buf), "%i", (int) pid);
        return cgroup_write_file(r, h, path, "cgroup.procs", buf);
}

/* Puts the first n_moved (pid, hierarchy) moves of pids back where from says they were, last first. */
static void attach_undo(CGroupRoot *r, const pid_t *pids, char **from, size_t n_moved) {
        size_t n_h = strv_length(r->hierarchies);

        for (size_t m = n_moved; m > 0; m--) {
                size_t i = (m - 1) / n_h, j = (m - 1) % n_h;

                /* A process that has exited meanwhile is nowhere to put back. */
                (void) write_pid(r, r->hierarchies[j], from[m - 1], pids[i]);
        }
}

int cgroup_attach_many(CGroupRoot *r, const char *path, const pid_t *pids, size_t n_pids, size_t *failed) {
        size_t n_h, n_moved = 0;
        char **from = NULL;
        int k;

        assert_return(r, -EINVAL);
        assert_return(pids || n_pids == 0, -EINVAL);
        k = cgroup_path_check(path);
        if (k < 0)
                return k;
        for (size_t i = 0; i < n_pids; i++)
                assert_return(pids[i] > 0, -EINVAL);
        n_h = strv_length(r->hierarchies);

        /* The cgroup, as a directory, in every hierarchy before anything moves. */
        STRV_FOREACH(h, r->hierarchies) {
                k = cgroup_dir_exists(r, *h, path);
                if (k <= 0)
                        return k ?: -ENOENT;
        }

        /*
         * Each v1 hierarchy is a separate move, and so is each process: where there is more than one
         * move, remember where each process is in each hierarchy, so that a move the kernel refuses
         * (cpuset ENOSPC, cpu EINVAL for realtime tasks, a process gone) can be undone and nobody is
         * left half attached.
         */
        if (n_h * n_pids > 1) {
                from = new0(char *, n_h * n_pids);
                if (!from)
                        return -ENOMEM;
                for (size_t i = 0; i < n_pids; i++)
                        for (size_t j = 0; j < n_h; j++) {
                                _cleanup_free_ char *p = NULL;

                                k = proc_pid_cgroup_controller(r->proc, pids[i],
                                                               r->version == 2 ? NULL : r->hierarchies[j], &p);
                                if (k < 0) {
                                        if (failed)
                                                *failed = i;
                                        goto finish;
                                }
                                from[i * n_h + j] = strdup(p + 1);
                                if (!from[i * n_h + j]) {
                                        k = -ENOMEM;
                                        goto finish;
                                }
                        }
        }

        for (size_t i = 0; i < n_pids; i++)
                for (size_t j = 0; j < n_h; j++) {
                        k = write_pid(r, r->hierarchies[j], path, pids[i]);
                        if (k < 0) {
                                if (from)
                                        attach_undo(r, pids, from, n_moved);
                                if (failed)
                                        *failed = i;
                                goto finish;
                        }
                        n_moved++;
                }
        k = 0;
finish:
        free_array(from, n_h * n_pids);
        return k;
}

int cgroup_attach(CGroupRoot *r, const char *path, pid_t pid) {
        assert_return(pid > 0, -EINVAL);

        return cgroup_attach_many(r, path, &pid, 1, NULL);
}

/*
 * v2: enables tonari's controllers in parent's cgroup.subtree_control. available is what the
 * parent itself got (its cgroup.controllers: for the root, the root's list; below, what the level
 * above enabled); on return it holds what the parent now enables for its children.
 *
 * All missing controllers go in one write first: the kernel takes it whole or not at all. If it
 * refuses, each is tried alone, so that one controller the kernel cannot enable here (e.g. cpu
 * with realtime tasks on old kernels) does not cost the others; cgroup_apply() later reports the
 * settings that needed it with -EOPNOTSUPP naming the controller. Only if not one of them can be
 * enabled is that an error (EBUSY: the parent has processes of its own; EACCES: not ours), since
 * then the new cgroup could be limited in nothing.
 */
static int v2_enable_controllers(CGroupRoot *r, const char *parent, char ***available) {
        _cleanup_strv_free_ char **enabled = NULL, **want = NULL, **now = NULL;
        _cleanup_free_ char *text = NULL, *all = NULL;
        int k, first_error = 0;

        k = cgroup_read_file(r, NULL, parent, "cgroup.subtree_control", &text);
        /* Always there on cgroupfs; absent only in a fake tree's new directory. */
        if (k < 0 && k != -ENOENT)
                return k;
        k = strv_split(strempty(text), " \n", &enabled);
        if (k < 0)
                return k;

        FOREACH_ELEMENT(c, v2_controllers) {
                if (!strv_contains(*available, *c))
                        continue;
                if (strv_contains(enabled, *c))
                        k = strv_extend(&now, *c);
                else {
                        char *w = strjoin("+", *c);

                        if (!w)
                                return -ENOMEM;
                        k = strv_consume(&want, w);
                }
                if (k < 0)
                        return k;
        }

        if (!strv_isempty(want)) {
                all = strv_join(want, " ");
                if (!all)
                        return -ENOMEM;
                k = cgroup_write_file(r, NULL, parent, "cgroup.subtree_control", all);
                if (k >= 0) {
                        STRV_FOREACH(w, want) {
                                k = strv_extend(&now, *w + 1);
                                if (k < 0)
                                        return k;
                        }
                } else {
                        size_t n_ok = 0;

                        STRV_FOREACH(w, want) {
                                k = cgroup_write_file(r, NULL, parent, "cgroup.subtree_control", *w);
                                if (k < 0) {
                                        if (first_error == 0)
                                                first_error = k;
                                        continue;
                                }
                                n_ok++;
                                k = strv_extend(&now, *w + 1);
                                if (k < 0)
                                        return k;
                        }
                        if (n_ok == 0 && strv_isempty(now))
                                return first_error;
                }
        }

        if (!now) {
                now = new0(char *, 1);
                if (!now)
                        return -ENOMEM;
        }
        strv_free(*available);
        *available = TAKE_PTR(now);
        return 0;
}

/* v1 cpuset: a new cpuset has no CPUs and no memory nodes, and the kernel refuses tasks in it
 * (ENOSPC): give it the parent's before anything is attached. */
static int v1_cpuset_inherit(CGroupRoot *r, const char *path, bool is_new) {
        /* The kernel checks cpus and mems separately: either order works. */
        static const char *const files[] = { "cpuset.mems", "cpuset.cpus" };
        _cleanup_free_ char *parent = cgroup_path_parent(path);
        int k;

        if (!parent)
                return -ENOMEM;

        FOREACH_ELEMENT(f, files) {
                _cleanup_free_ char *cur = NULL, *v = NULL;

                if (!is_new) {
                        /* An existing one may be left empty by an interrupted cgroup_create(). */
                        k = cgroup_read_value(r, "cpuset", path, *f, &cur);
                        if (k < 0)
                                return k;
                        if (!isempty(cur))
                                continue;
                }
                k = cgroup_read_value(r, "cpuset", parent, *f, &v);
                if (k < 0)
                        return k;
                k = cgroup_write_file(r, "cpuset", path, *f, v);
                if (k < 0)
                        return k;
        }
        return 0;
}

/* rmdir(2) of path's directory in hierarchy h. */
static int cgroup_rmdir(CGroupRoot *r, const char *h, const char *path) {
        _cleanup_free_ char *p = NULL;
        int k;

        k = cgroup_fs_path(r, h, path, NULL, &p);
        if (k < 0)
                return k;
        if (!r->kernel) {
                _cleanup_closedir_ DIR *d = opendir(p);
                struct dirent *de;

                while (d && (de = readdir(d)))
                        if (de->d_type == DT_REG)
                                (void) unlinkat(dirfd(d), de->d_name, 0);
        }
        return rmdir(p) < 0 ? -errno : 0;
}

/*
 * mkdir(2) of path's directory in hierarchy h (its parent exists): 1 if made, 0 if it was there.
 * In v1's cpuset, a new cpuset (or an empty one) gets its parent's CPUs and memory nodes; if that
 * fails, a directory made here is removed again.
 */
static int cgroup_mkdir(CGroupRoot *r, const char *h, const char *path) {
        _cleanup_free_ char *p = NULL;
        bool is_new;
        int k;

        k = cgroup_fs_path(r, h, path, NULL, &p);
        if (k < 0)
                return k;
        if (mkdir(p, 0755) >= 0)
                is_new = true;
        else if (errno == EEXIST) {
                /* Only a directory is a cgroup: the name may be an interface file of the parent
                 * ("cpu.shares"), which is no cgroup to complete. */
                k = cgroup_dir_exists(r, h, path);
                if (k <= 0)
                        return k ?: -ENOENT;
                is_new = false;
        } else
                return -errno;

        if (streq(h, "cpuset")) {
                k = v1_cpuset_inherit(r, path, is_new);
                if (k < 0) {
                        if (is_new)
                                (void) cgroup_rmdir(r, h, path);
                        return k;
                }
        }
        return is_new;
}

static void rmdir_created(CGroupRoot *r, char **created) {
        /* created holds pairs (hierarchy, path) in the order they were made; undo in reverse, so
         * that children go before their parents. */
        for (size_t n = strv_length(created); n >= 2; n -= 2)
                (void) cgroup_rmdir(r, created[n - 2], created[n - 1]);
}

/*
 * Idempotent: an existing cgroup (or a half-created one from an interrupted call) gets what is
 * missing — controllers in the parents, directories in hierarchies, an empty v1 cpuset filled. On
 * failure the directories this call made are removed again.
 */
int cgroup_create(CGroupRoot *r, const char *path) {
        _cleanup_strv_free_ char **created = NULL;
        bool leaf_created = false;
        int k;

        assert_return(r, -EINVAL);
        k = cgroup_path_check_not_root(path);
        if (k < 0)
                return k;

        STRV_FOREACH(h, r->hierarchies) {
                _cleanup_strv_free_ char **available = NULL;

                if (r->version == 2) {
                        available = strv_copy(r->v2_controllers);
                        if (!available)
                                return -ENOMEM;
                }

                /* mkdir -p, one level at a time. */
                for (const char *e = path;;) {
                        _cleanup_free_ char *prefix = NULL, *parent = NULL;

                        e += strcspn(e, "/");
                        prefix = strndup(path, e - path);
                        if (!prefix)
                                goto nomem;
                        if (r->version == 2) {
                                /* The level above enables the controllers before the child exists,
                                 * so the child is born with them. Never in the leaf itself: a v2
                                 * cgroup that enables controllers for children cannot hold
                                 * processes. */
                                parent = cgroup_path_parent(prefix);
                                if (!parent)
                                        goto nomem;
                                k = v2_enable_controllers(r, parent, &available);
                                if (k < 0)
                                        goto fail;
                        }

                        k = cgroup_mkdir(r, *h, prefix);
                        if (k < 0)
                                goto fail;
                        if (k > 0 && (strv_extend(&created, *h) < 0 || strv_extend(&created, prefix) < 0))
                                goto nomem;

                        if (*e == '\0') {
                                leaf_created = leaf_created || k > 0;
                                break;
                        }
                        e++;
                }
        }
        return leaf_created;

nomem:
        k = -ENOMEM;
fail:
        rmdir_created(r, created);
        return k;
}

int cgroup_make_leaf(CGroupRoot *r, const char *parent, const char *leaf, const char *const *controllers) {
        _cleanup_free_ char *path = NULL, *dir = NULL;
        bool created = false, moved = false;
        int k;

        assert_return(r, -EINVAL);
        assert_return(r->version == 2, -EOPNOTSUPP);
        assert_return(filename_is_valid(leaf), -EINVAL);
        k = cgroup_path_check(parent);
        if (k < 0)
                return k;

        path = strjoin(parent, "/", leaf);
        if (!path)
                return -ENOMEM;
        k = cgroup_fs_path(r, NULL, path, NULL, &dir);
        if (k < 0)
                return k;
        if (mkdir(dir, 0755) >= 0)
                created = true;
        else if (errno != EEXIST)
                return -errno;

        /* Processes may fork while they are moved: a few rounds, until the parent is empty and the
         * kernel accepts the controllers (it refuses with EBUSY while parent has processes). */
        for (unsigned round = 0;; round++) {
                _cleanup_free_ pid_t *pids = NULL;
                size_t n = 0;

                k = cgroup_get_pids(r, parent, &pids, &n);
                if (k < 0)
                        return k;
                for (size_t i = 0; i < n; i++) {
                        k = cgroup_attach(r, path, pids[i]);
                        if (k < 0 && k != -ESRCH)
                                return k;
                        moved = true;
                }

                k = 0;
                STRV_FOREACH(c, (char **) controllers) {
                        _cleanup_free_ char *plus = strjoin("+", *c);

                        if (!plus)
                                return -ENOMEM;
                        k = cgroup_write_file(r, NULL, parent, "cgroup.subtree_control", plus);
                        if (k < 0)
                                break;
                }
                if (k >= 0)
                        break;
                if (k != -EBUSY || round >= 8)
                        return k;
        }
        return created || moved;
}

/* Makes path again in the first n hierarchies, which its removal got through before it failed in
 * the next one. */
static void remove_undo(CGroupRoot *r, const char *path, size_t n, const CGroupSettings *settings) {
        for (size_t i = 0; i < n; i++)
                (void) cgroup_mkdir(r, r->hierarchies[i], path);
        if (settings)
                (void) cgroup_apply(r, path, settings, _CGROUP_MASK_ALL, NULL);
}

/* -EBUSY if path has processes or children in any hierarchy; checked before anything is removed, so
 * that a busy cgroup is left whole everywhere. */
static int check_removable(CGroupRoot *r, const char *path) {
        int k;

        STRV_FOREACH(h, r->hierarchies) {
                _cleanup_strv_free_ char **children = NULL;
                _cleanup_free_ pid_t *pids = NULL;
                size_t n;

                k = cgroup_list_subdirs(r, *h, path, &children);
                if (k == -ENOENT)
                        continue;
                if (k < 0)
                        return k;
                if (!strv_isempty(children))
                        return -EBUSY;
                k = cgroup_read_pids(r, *h, path, &pids, &n);
                if (k < 0 && k != -ENOENT)
                        return k;
                if (k >= 0 && n > 0)
                        return -EBUSY;
        }
        return 0;
}

int cgroup_remove(CGroupRoot *r, const char *path) {
        _cleanup_(cgroup_settings_done) CGroupSettings settings = CGROUP_SETTINGS_INIT;
        bool have_settings = false, removed = false;
        size_t i = 0;
        int k;

        assert_return(r, -EINVAL);
        k = cgroup_path_check_not_root(path);
        if (k < 0)
                return k;
        k = check_removable(r, path);
        if (k < 0)
                return k;

        /* v1 removes one directory per hierarchy; if the kernel refuses one after others are gone
         * (a process moved in meanwhile), the others are made again with the settings they had. */
        if (strv_length(r->hierarchies) > 1)
                have_settings = cgroup_read_settings(r, path, &settings) >= 0;

        STRV_FOREACH(h, r->hierarchies) {
                k = cgroup_rmdir(r, *h, path);
                if (k < 0 && k != -ENOENT) {
                        /* (those that were gone already are made as well: the cgroup is whole) */
                        remove_undo(r, path, i, have_settings ? &settings : NULL);
                        return k;
                }
                removed = removed || k >= 0;
                i++;
        }
        return removed;
}
