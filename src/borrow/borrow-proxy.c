/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Proxies: a helper process or cgroup that works for a slice; its CPU time is sampled every
 * BORROW_SAMPLE_USEC and charged to the slice.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "alloc-util.h"
#include "borrow-internal.h"
#include "fd-util.h"
#include "log.h"
#include "path-util.h"
#include "proc-util.h"
#include "string-util.h"

static void borrow_proxy_log_removed(BorrowProxy *p, const char *reason);
static void proxy_kernel_count(BorrowProxy *p);

/* Forgets the proxies of the slice name/slice_id (removed); not written yet. */
void borrow_proxies_drop(BorrowManager *m, const char *name, uint64_t slice_id, const char *why) {
        /* Proxies for a removed slice have nobody to charge; those added for a new slice of the
         * same name are that slice's. */
        for (BorrowProxy *p = m->proxies, *next; p; p = next) {
                next = p->next;
                if (streq(p->target, name) && (p->slice_id == 0 || p->slice_id == slice_id)) {
                        /* The kernel stops charging a removed cgroup by itself; a cgroup still
                         * there (a slice of the same name made again) must not be charged on. */
                        proxy_kernel_count(p);
                        (void) borrow_proxy_kernel_detach(p);
                        borrow_proxy_log_removed(p, why);
                        borrow_proxy_free(p);
                }
        }
        if (!m->proxies)
                (void) sd_event_source_set_enabled(m->sample_timer, SD_EVENT_OFF);
}

BorrowProxy *borrow_manager_find_proxy(BorrowManager *m, uint32_t id) {
        for (BorrowProxy *p = m->proxies; p; p = p->next)
                if (p->id == id)
                        return p;
        return NULL;
}

void borrow_proxy_free(BorrowProxy *p) {
        if (!p)
                return;
        for (BorrowProxy **q = &p->manager->proxies; *q; q = &(*q)->next)
                if (*q == p) {
                        *q = p->next;
                        break;
                }
        sd_event_source_disable_unref(p->exit_source);
        safe_close(p->pidfd);
        free(p->target);
        free(p->cgroup);
        free(p);
}

/*
 * The helper's CPU time now. -ESRCH once the process has exited (its PID may be someone else's),
 * except with exited: the process has ended (its pidfd is readable) and the last reading of its
 * clock is wanted. An exited process keeps its PID, and its CPU clock (all its threads, those that
 * ended included) stays readable, until its parent reaps it; the pidfd tells whether that
 * happened after the read, in which case the PID may have been someone else's by then.
 */
static int proxy_read(BorrowProxy *p, bool exited, usec_t *ret) {
        if (p->pid > 0) {
                struct pollfd pfd = { .fd = p->pidfd, .events = POLLIN };
                struct timespec ts;
                clockid_t clock;

                if (clock_getcpuclockid(p->pid, &clock) != 0 || clock_gettime(clock, &ts) < 0)
                        return -ESRCH;
                /* Read first, then make sure the process behind the PID was ours all along. */
                if (exited ? syscall(SYS_pidfd_send_signal, p->pidfd, 0, NULL, 0) < 0 : poll(&pfd, 1, 0) != 0)
                        return -ESRCH;
                *ret = timespec_load(&ts);
                return 0;
        }

        return cgroup_read_cpu_usage(slice_manager_cgroup_root(p->manager->slices), p->cgroup + 1, ret);
}

static void borrow_proxy_log_removed(BorrowProxy *p, const char *reason) {
        char a[FORMAT_TIMESPAN_MAX];

        if (p->pid > 0)
                log_struct(LOG_INFO, "TONARI_SLICE=%s", p->target, "TONARI_PROXY_ID=%" PRIu32, p->id,
                           "TONARI_HELPER_PID=%i", (int) p->pid, "TONARI_CHARGED_USEC=%" PRIu64, p->charged_usec,
                           LOG_MESSAGE("Removed proxy %" PRIu32 " (process %i working for slice '%s', %s charged): %s.",
                                       p->id, (int) p->pid, p->target, fmt_ms(a, p->charged_usec), reason));
        else
                log_struct(LOG_INFO, "TONARI_SLICE=%s", p->target, "TONARI_PROXY_ID=%" PRIu32, p->id,
                           "TONARI_HELPER_CGROUP=%s", p->cgroup, "TONARI_CHARGED_USEC=%" PRIu64, p->charged_usec,
                           LOG_MESSAGE("Removed proxy %" PRIu32 " (cgroup %s working for slice '%s', %s charged): %s.",
                                       p->id, p->cgroup, p->target, fmt_ms(a, p->charged_usec), reason));
}

/* Whether some proxy is sampled by the sample timer: not charged by the kernel, and its slice's
 * period tick (which samples it itself) not running. */
static bool proxies_untick_sampled(BorrowManager *m) {
        for (BorrowProxy *p = m->proxies; p; p = p->next)
                if (!p->kernel && !borrow_target_ticking(borrow_manager_find_target(m, p->target)))
                        return true;
        return false;
}

/* Whether some proxy is sampled (the others are charged by the kernel). */
static bool proxies_sampled(BorrowManager *m) {
        for (BorrowProxy *p = m->proxies; p; p = p->next)
                if (!p->kernel)
                        return true;
        return false;
}

static void proxy_forget(BorrowProxy *p, const char *reason) {
        BorrowManager *m = p->manager;
        int r;

        r = borrow_proxy_kernel_detach(p);
        if (r < 0)
                log_warning_errno(r, "Failed to stop the kernel charging process %i to slice '%s', ignoring: %m",
                                  (int) p->pid, p->target);
        borrow_proxy_log_removed(p, reason);
        borrow_proxy_free(p);
        if (!proxies_sampled(m))
                (void) sd_event_source_set_enabled(m->sample_timer, SD_EVENT_OFF);
}

void borrow_proxy_remove(BorrowProxy *p, const char *reason) {
        BorrowManager *m = p->manager;

        proxy_forget(p, reason);
        borrow_manager_save_now(m);
}

int borrow_manager_remove_proxy(BorrowManager *m, BorrowProxy *p, const char *reason) {
        int r;

        /* The kernel's charge first: if it cannot be stopped, the proxy stays and the caller is told. */
        proxy_kernel_count(p);
        r = borrow_proxy_kernel_detach(p);
        if (r < 0)
                return r;
        /* Written without it first: if that fails, the proxy stays, and the caller is told. */
        r = borrow_state_file_save(m, p);
        if (r < 0) {
                BorrowTarget *t = borrow_manager_find_target(m, p->target);
                if (p->kernel && t && t->kernel_cgroup)
                        (void) borrow_proxy_kernel_attach(p, t);
                return r;
        }
        p->kernel = false; /* stopped above */
        proxy_forget(p, reason);
        return 0;
}

/* Counts CPU time a helper spent that could not be charged, on the slice's account if it has one. */
static void proxy_dropped(BorrowManager *m, Slice *s, usec_t usec) {
        BorrowTarget *t;

        if (usec == 0)
                return;
        t = borrow_manager_find_target(m, s->name);
        if (t && (t->slice_id == 0 || t->slice_id == s->id))
                t->dropped_usec += usec;
}

/* Charges what the helper spent since the last sample; with exited, its last sample (see
 * proxy_read()), after which the proxy is removed. */
static void proxy_sample(BorrowProxy *p, bool exited) {
        BorrowManager *m = p->manager;
        Slice *s = m->slices ? slice_manager_find(m->slices, p->target) : NULL;
        usec_t cur, delta;
        int r;

        r = proxy_read(p, exited, &cur);
        if (r == -ESRCH)
                return borrow_proxy_remove(p, exited ? "the helper process exited and was reaped before its last sample "
                                                       "(what it ran since the one before is not charged)"
                                                     : "the helper process exited");
        if (r == -ENOENT)
                return borrow_proxy_remove(p, "the helper cgroup was removed");
        if (!s || (p->slice_id != 0 && s->id != p->slice_id))
                return borrow_proxy_remove(p, "its slice was removed");
        if (r < 0)
                log_warning_errno(r, "Failed to read the CPU time of proxy %" PRIu32 "'s helper, ignoring: %m", p->id);
        else if (p->kernel) {
                /* The kernel charged it as it ran: only the count of what that was. */
                p->charged_usec += cur > p->last_usec ? cur - p->last_usec : 0;
                p->last_usec = cur;
        } else {
                p->slice_id = s->id;
                /* A cgroup's counter can only go down if it was removed and made again. */
                delta = cur > p->last_usec ? cur - p->last_usec : 0;
                p->last_usec = cur;
                usec_t over = delta > BORROW_CHARGE_MAX_USEC ? delta - BORROW_CHARGE_MAX_USEC : 0;
                delta -= over;
                r = delta == 0 ? 0 : borrow_target_charge(m, s, delta, false);
                if (r < 0)
                        log_warning_errno(r, "Failed to charge %" PRIu64 " µs to slice '%s' for proxy %" PRIu32 ", ignoring: %m",
                                          delta, s->name, p->id);
                else
                        p->charged_usec += delta;
                proxy_dropped(m, s, (r < 0 ? delta : 0) + over);
        }
        if (exited)
                borrow_proxy_remove(p, "the helper process exited");
}

void borrow_proxy_sample(BorrowProxy *p) {
        proxy_sample(p, false);
}

static int on_sample(sd_event_source *es, uint64_t usec, void *userdata) {
        BorrowManager *m = userdata;
        usec_t start = now(CLOCK_MONOTONIC);

        (void) usec;
        for (BorrowProxy *p = m->proxies, *next; p; p = next) {
                next = p->next;
                /* A slice whose tick runs has its proxies sampled by the tick itself; the
                 * kernel charges its own. */
                if (!p->kernel && !borrow_target_ticking(borrow_manager_find_target(m, p->target)))
                        borrow_proxy_sample(p);
        }
        m->stats.work_usec += now(CLOCK_MONOTONIC) - start;
        /* Nothing left for this timer (every sampled proxy's slice ticks): it sleeps until a
         * tick stops (borrow_proxies_untick()) or a proxy is added. */
        if (!proxies_untick_sampled(m))
                return sd_event_source_set_enabled(es, SD_EVENT_OFF);
        return sd_event_source_set_time_relative(es, BORROW_SAMPLE_USEC);
}

/* Called when the tick of target t stopped: its sampled proxies are this timer's again. */
void borrow_proxies_untick(BorrowManager *m, const BorrowTarget *t) {
        for (BorrowProxy *p = m->proxies; p; p = p->next)
                if (!p->kernel && streq(p->target, t->name)) {
                        (void) borrow_manager_start_sampling(m);
                        return;
                }
}

static int on_helper_exit(sd_event_source *es, int fd, uint32_t revents, void *userdata) {
        BorrowProxy *p = userdata;

        (void) es;
        (void) fd;
        (void) revents;
        /* What it spent since the last sample is charged if its clock can still be read (it has
         * not been reaped yet); otherwise it is lost with it, at most one sample interval. */
        proxy_sample(p, true);
        return 0;
}

int borrow_manager_start_sampling(BorrowManager *m) {
        int r;

        if (!m->sample_timer) {
                r = sd_event_add_time_relative(m->event, &m->sample_timer, CLOCK_MONOTONIC, BORROW_SAMPLE_USEC, 1,
                                               on_sample, m);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(m->sample_timer, "borrow-proxies");
        }
        return sd_event_source_set_enabled(m->sample_timer, SD_EVENT_ON);
}

static int pidfd_open_helper(pid_t pid) {
        int fd = (int) syscall(SYS_pidfd_open, pid, 0);
        return fd < 0 ? -errno : fd;
}

/* Sets up p's helper; with expect_start, a PID whose start time differs is somebody else. */
int borrow_proxy_attach_helper(BorrowProxy *p, bool expect_start) {
        BorrowManager *m = p->manager;
        int r;

        if (p->pid > 0) {
                ProcStat st;

                p->pidfd = pidfd_open_helper(p->pid);
                if (p->pidfd < 0)
                        return p->pidfd == -EINVAL ? -ESRCH : p->pidfd;
                /* Between pidfd_open() and this read the PID cannot be reused: the pidfd pins it. */
                r = proc_pid_stat("/proc", p->pid, &st);
                if (r < 0)
                        return r;
                if (expect_start && st.start_time_ticks != p->start_time_ticks)
                        return -ESRCH;
                p->start_time_ticks = st.start_time_ticks;
                r = sd_event_add_io(m->event, &p->exit_source, p->pidfd, EPOLLIN, on_helper_exit, p);
                if (r < 0)
                        return r;
                (void) sd_event_source_set_description(p->exit_source, "borrow-helper-exit");
        }
        return 0;
}

/*
 * On the kernel path with on-behalf charging, makes the kernel charge p's helper process to its
 * slice s as it runs: returns 1 (p->kernel set), or 0 if p is to be sampled. With restoring (tonarid
 * started again), a charge still in place is adopted as it is; a helper the kernel did not charge
 * while tonarid was down has what it ran since its last sample handed over as a debt, as the first
 * sample would have charged it. Either way nothing is charged twice.
 */
int borrow_proxy_setup_kernel(BorrowProxy *p, Slice *s, bool restoring) {
        BorrowManager *m = p->manager;
        BorrowTarget *t;
        bool created = false;
        usec_t cur;
        int r;

        if (p->pid <= 0 || m->enforcement_mode == BORROW_ENFORCEMENT_MODE_USERSPACE)
                return 0;
        t = borrow_manager_find_target(m, s->name);
        if (t && t->slice_id != 0 && t->slice_id != s->id)
                return 0; /* a previous slice's, dropped by the next charge or tick */
        if (!t) {
                r = borrow_target_new(m, s, &t);
                if (r < 0)
                        return r;
                created = true;
        }
        r = borrow_target_prepare(t, s);
        if (r < 0)
                log_debug_errno(r, "Slice '%s': cannot tell whether the kernel enforces borrowing, sampling proxy "
                                "%" PRIu32 ": %m", s->name, p->id);
        if (r < 0 || t->enforcement != BORROW_ENFORCEMENT_KERNEL || !t->on_behalf) {
                if (created)
                        borrow_target_free(t);
                return 0;
        }
        r = proxy_read(p, false, &cur);
        if (r < 0)
                return r;
        r = borrow_proxy_kernel_attach(p, t);
        if (r < 0)
                return r;
        if (restoring && r == 0 && cur > p->last_usec) {
                usec_t gap = MIN(cur - p->last_usec, BORROW_CHARGE_MAX_USEC);

                if (borrow_target_kernel_charge(t, gap) >= 0)
                        p->charged_usec += gap;
        }
        if (!restoring || r == 0)
                p->last_usec = cur;
        p->kernel = true;
        log_debug("Proxy %" PRIu32 ": process %i %s charged by the kernel to cgroup /%s.", p->id, (int) p->pid,
                  r > 0 ? "was still" : "is now", t->kernel_cgroup);
        return 1;
}

void borrow_proxies_kernel_moved(BorrowManager *m, BorrowTarget *t) {
        for (BorrowProxy *p = m->proxies, *next; p; p = next) {
                next = p->next; /* a last sample may find the helper gone and remove p */
                if (!p->kernel || !streq(p->target, t->name))
                        continue;
                if (t->enforcement == BORROW_ENFORCEMENT_KERNEL && t->on_behalf &&
                    borrow_proxy_kernel_attach(p, t) >= 0)
                        continue;
                /* Sampled from here on; what the kernel charged so far is counted. */
                proxy_sample(p, false);
                p->kernel = false;
                (void) borrow_manager_start_sampling(m);
        }
}

int borrow_proxy_new(BorrowManager *m, uint32_t id, const char *target, pid_t pid, const char *cgroup,
                     BorrowProxy **ret) {
        BorrowProxy *p;

        p = new0(BorrowProxy, 1);
        if (!p)
                return -ENOMEM;
        *p = (BorrowProxy){ .manager = m, .id = id, .pid = pid, .pidfd = -EBADF };
        p->target = strdup(target);
        if (!p->target || (cgroup && !(p->cgroup = strdup(cgroup)))) {
                free(p->target);
                free(p);
                return -ENOMEM;
        }
        /* Appended: listings come out in the order the proxies were added. */
        BorrowProxy **q = &m->proxies;
        while (*q)
                q = &(*q)->next;
        *q = p;
        m->last_proxy_id = MAX(m->last_proxy_id, id);
        *ret = p;
        return 0;
}

int borrow_process_in_slice(BorrowManager *m, Slice *s, pid_t pid) {
        _cleanup_free_ char *cg = NULL;
        int r;

        (void) m;
        if (!s->cgroup)
                return 0;
        r = proc_pid_cgroup("/proc", pid, &cg);
        if (r < 0)
                return r;
        return path_equal_or_below(cg + 1, s->cgroup);
}

int borrow_manager_add_proxy(BorrowManager *m, Slice *s, pid_t pid, const char *cgroup, BorrowProxy **ret) {
        BorrowProxy *p;
        int r;

        if ((pid > 0) == !isempty(cgroup))
                return -EINVAL;

        if (pid > 0) {
                r = proc_pid_is_kernel_thread("/proc", pid);
                if (r < 0)
                        return r;
                if (r > 0 || pid == 1 || pid == getpid())
                        return -EINVAL;
                r = borrow_process_in_slice(m, s, pid);
                if (r < 0)
                        return r;
                if (r > 0)
                        return -ELOOP;
                for (p = m->proxies; p; p = p->next)
                        if (p->pid == pid)
                                return -EEXIST;
        } else {
                const char *rel;

                if (!path_is_normalized_absolute(cgroup) || strpbrk(cgroup, " \t\n"))
                        return -EINVAL;
                rel = cgroup + 1;
                /* Inside the slice its CPU is the slice's already; above it, it contains the
                 * slice's own CPU time, which would be charged to it a second time. */
                if (path_equal_or_below(rel, s->cgroup) || path_equal_or_below(s->cgroup, rel) || isempty(rel))
                        return -ELOOP;
                r = cgroup_exists(slice_manager_cgroup_root(m->slices), rel);
                if (r < 0)
                        return r;
                if (r == 0)
                        return -ENOENT;
                for (p = m->proxies; p; p = p->next)
                        if (p->cgroup && streq(p->cgroup, cgroup))
                                return -EEXIST;
        }
        if (m->last_proxy_id == UINT32_MAX)
                return -E2BIG;

        r = borrow_proxy_new(m, m->last_proxy_id + 1, s->name, pid, pid > 0 ? NULL : cgroup, &p);
        if (r < 0)
                return r;
        p->slice_id = s->id;
        p->cgroup_id = s->cgroup_id;
        r = borrow_proxy_attach_helper(p, false);
        if (r >= 0)
                r = proxy_read(p, false, &p->last_usec);
        if (r >= 0)
                r = borrow_proxy_setup_kernel(p, s, false);
        if (r == 0)
                r = borrow_manager_start_sampling(m);
        /* On disk before the caller gets its id. */
        if (r >= 0)
                r = borrow_state_file_save(m, NULL);
        if (r < 0) {
                (void) borrow_proxy_kernel_detach(p);
                borrow_proxy_free(p);
                return r;
        }
        *ret = p;
        return 0;
}

/* A kernel-charged helper: what it ran since the last count is in charged_usec now. */
static void proxy_kernel_count(BorrowProxy *p) {
        usec_t cur;

        if (!p->kernel || proxy_read(p, false, &cur) < 0 || cur < p->last_usec)
                return;
        p->charged_usec += cur - p->last_usec;
        p->last_usec = cur;
}

/* What the proxy's helper has had charged: for a kernel-charged helper, its CPU time since the kernel began. */
uint64_t borrow_proxy_charged(BorrowProxy *p) {
        usec_t cur;

        if (!p->kernel || proxy_read(p, false, &cur) < 0 || cur < p->last_usec)
                return p->charged_usec;
        return p->charged_usec + (cur - p->last_usec);
}

size_t borrow_manager_count_proxies(BorrowManager *m) {
        size_t n = 0;
        for (BorrowProxy *p = m ? m->proxies : NULL; p; p = p->next)
                n++;
        return n;
}

/* The slice a proxy works for, or NULL if it was removed (see borrow_target_slice()). */
Slice *borrow_proxy_slice(BorrowProxy *p) {
        Slice *s = p->manager->slices ? slice_manager_find(p->manager->slices, p->target) : NULL;

        if (!s || (p->slice_id != 0 && s->id != p->slice_id))
                return NULL;
        return s;
}
