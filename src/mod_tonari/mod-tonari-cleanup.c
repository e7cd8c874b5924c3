/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mod-tonari-cleanup [CGROUP-DIR]: apache2.service's ExecStopPost= (units/apache2.service.d/
 * mod-tonari.conf). Kills what is left of the server in the cgroups mod_tonari made below the
 * unit's delegated cgroup, waits until they are empty, removes them and turns the controllers
 * mod_tonari enabled off again, so that systemd can remove the unit's cgroup and start it again.
 *
 * Why systemd cannot do it alone (systemd 252, Debian 12): it kills a unit by reading cgroup.procs
 * of every cgroup below the unit's and signalling what it lists. The kernel refuses that read in a
 * threaded cgroup (EOPNOTSUPP), and the event and worker MPMs' domains are threaded
 * (root/_threads/_home, root/_threads/<name>). systemd has signalled the processes already (the
 * threaded subtree's root, root/_threads, lists them all), but takes the error as a failed kill:
 * it logs "Failed to kill control group ... Operation not supported", does not wait for the
 * processes to die, declares the unit dead at once, and its rmdir of the unit's cgroup fails
 * (EBUSY: the processes are still exiting). The tree stays, with cpu and pids enabled in the unit
 * cgroup's cgroup.subtree_control, and the next start cannot put apachectl into that cgroup.
 * ExecStopPost= runs after systemd's first kill and before its last one and its rmdir, in the
 * unit's .control cgroup (Delegate=yes), which this leaves alone.
 *
 * CGROUP-DIR: the unit's cgroup directory; default: this process's own cgroup, without a last
 * "/.control". Exit status 0 when nothing mod_tonari made is left (also when there was nothing).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "log.h"
#include "parse-util.h"
#include "path-util.h"
#include "proc-util.h"
#include "string-util.h"
#include "strv.h"
#include "time-util.h"

/* How long the processes may take to die after SIGKILL (exiting threads, a TCG guest). */
#define DIE_TIMEOUT_USEC (20 * USEC_PER_SEC)
#define POLL_USEC (10 * USEC_PER_MSEC)

/* Whether the name below the unit's cgroup is one mod_tonari made (_home, _threads, a domain):
 * systemd's own (.control) start with a dot, and cgroup interface files are no directories. */
static bool is_ours(const struct dirent *de) {
        return de->d_type == DT_DIR && de->d_name[0] != '.';
}

/* Sends SIGKILL to every process of the cgroup dir_fd/name and of the cgroups below it. A domain
 * cgroup's cgroup.procs lists the processes of its threaded subtree too; a threaded cgroup's
 * cannot be read (EOPNOTSUPP) and its processes are listed by its threaded root. Returns the
 * number of processes signalled. */
static int kill_below(int dir_fd, const char *name) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_free_ char *text = NULL;
        int n = 0, procs_fd;

        fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        procs_fd = openat(fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
        if (procs_fd >= 0) {
                if (read_full_fd(procs_fd, 1 << 20, &text, NULL) >= 0)
                        for (char *save = NULL, *w = strtok_r(text, "\n", &save); w; w = strtok_r(NULL, "\n", &save)) {
                                int pid;

                                if (safe_atoi(w, &pid) >= 0 && pid > 0 && kill(pid, SIGKILL) >= 0)
                                        n++;
                        }
                safe_close(procs_fd);
        }
        if (opendirat(fd, ".", &d) < 0)
                return n;
        for (struct dirent *de; (de = readdir(d));)
                if (is_ours(de))
                        n += kill_below(fd, de->d_name);
        return n;
}

/* Whether the cgroup dir_fd/name still holds a process (its cgroup.events: "populated 1"). */
static bool populated(int dir_fd, const char *name) {
        _cleanup_close_ int fd = -EBADF, events_fd = -EBADF;
        _cleanup_free_ char *text = NULL;

        fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return false;
        events_fd = openat(fd, "cgroup.events", O_RDONLY | O_CLOEXEC);
        if (events_fd < 0 || read_full_fd(events_fd, 4096, &text, NULL) < 0)
                return false;
        return strstr(text, "populated 1") != NULL;
}

/* Removes the cgroup dir_fd/name and the cgroups below it, deepest first. */
static int remove_below(int dir_fd, const char *name) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_closedir_ DIR *d = NULL;
        int r = 0;

        fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        if (opendirat(fd, ".", &d) >= 0)
                for (struct dirent *de; (de = readdir(d));)
                        if (de->d_type == DT_DIR && !streq(de->d_name, ".") && !streq(de->d_name, "..")) {
                                int k = remove_below(fd, de->d_name);
                                if (k < 0 && r >= 0)
                                        r = k;
                        }
        if (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && r >= 0)
                r = -errno;
        return r;
}

/* The names of the cgroups mod_tonari made below root_fd (an empty list for none). */
static int list_ours(int root_fd, char ***ret) {
        _cleanup_closedir_ DIR *d = NULL;
        _cleanup_strv_free_ char **names = NULL;
        int r;

        r = opendirat(root_fd, ".", &d);
        if (r < 0)
                return r;
        for (struct dirent *de; (de = readdir(d));)
                if (is_ours(de) && strv_extend(&names, de->d_name) < 0)
                        return -ENOMEM;
        if (!names) {
                names = new0(char *, 1);
                if (!names)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(names);
        return 0;
}

/* Turns off in root's cgroup.subtree_control the controllers tonari_domain_prepare() turned on. */
static int disable_controllers(int root_fd) {
        static const char *const controllers[] = { "cpu", "io", "pids" };
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *text = NULL;
        char off[64] = "";

        fd = openat(root_fd, "cgroup.subtree_control", O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (read_full_fd(fd, 4096, &text, NULL) < 0)
                return -EIO;
        for (char *save = NULL, *w = strtok_r(text, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
                for (size_t i = 0; i < ELEMENTSOF(controllers); i++)
                        if (streq(w, controllers[i])) {
                                strcat(off, isempty(off) ? "-" : " -");
                                strcat(off, w);
                        }
        if (isempty(off))
                return 0;
        if (pwrite(fd, off, strlen(off), 0) < 0)
                return -errno;
        return 0;
}

static int help(void) {
        printf("mod-tonari-cleanup [CGROUP-DIR]\n\n"
               "Kills what is left of Apache in the cgroups mod_tonari made below CGROUP-DIR (default:\n"
               "the caller's cgroup, without a last /.control), removes them once empty and turns off\n"
               "the controllers mod_tonari turned on. apache2.service's ExecStopPost=, see mod_tonari(8).\n");
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_free_ char *own = NULL, *root = NULL;
        _cleanup_close_ int root_fd = -EBADF;
        _cleanup_strv_free_ char **names = NULL;
        usec_t deadline;
        int r, killed = 0;
        char *e;

        log_open();
        if (argc == 2 && (streq(argv[1], "--help") || streq(argv[1], "-h")))
                return help();
        if (argc > 2)
                return log_error_errno(EINVAL, "Too many arguments: expected at most a cgroup directory"), 2;
        if (argc == 2) {
                if (!path_is_normalized_absolute(argv[1]))
                        return log_error_errno(EINVAL, "Invalid cgroup directory '%s': expected a normalized absolute path", argv[1]), 2;
                root = strdup(argv[1]);
        } else {
                r = proc_pid_cgroup("/proc", getpid(), &own);
                if (r < 0)
                        return log_error_errno(r, "Cannot read this process's cgroup: %m"), 1;
                e = endswith(own, "/.control");
                if (e)
                        *e = 0;
                root = strjoin("/sys/fs/cgroup", streq(own, "/") || isempty(own) ? "" : own);
        }
        if (!root)
                return log_oom(), 1;

        root_fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (root_fd < 0) {
                if (errno == ENOENT)
                        return 0;
                return log_error_errno(errno, "Cannot open cgroup '%s': %m", root), 1;
        }
        if (faccessat(root_fd, "cgroup.type", F_OK, 0) < 0)
                return log_error_errno(EBUSY, "'%s' is no cgroup v2 directory below the root: refusing", root), 1;

        r = list_ours(root_fd, &names);
        if (r < 0)
                return log_error_errno(r, "Cannot list '%s': %m", root), 1;

        /* systemd has sent SIGKILL already; a process it missed gets it here. */
        deadline = now(CLOCK_MONOTONIC) + DIE_TIMEOUT_USEC;
        for (;;) {
                bool busy = false;

                STRV_FOREACH(p, names) {
                        killed += kill_below(root_fd, *p);
                        busy = busy || populated(root_fd, *p);
                }
                if (!busy)
                        break;
                if (now(CLOCK_MONOTONIC) > deadline)
                        return log_error_errno(EBUSY, "Processes are still in '%s' after SIGKILL, leaving its cgroups", root), 1;
                usleep(POLL_USEC);
        }
        STRV_FOREACH(p, names) {
                r = remove_below(root_fd, *p);
                if (r < 0)
                        return log_error_errno(r, "Cannot remove cgroup '%s/%s': %m", root, *p), 1;
        }
        if (names[0])
                log_info("Removed mod_tonari's cgroups below '%s'%s", root,
                         killed > 0 ? " (after SIGKILL to processes still in them)" : "");
        r = disable_controllers(root_fd);
        if (r < 0)
                return log_error_errno(r, "Cannot turn off the controllers of '%s': %m", root), 1;
        return 0;
}
