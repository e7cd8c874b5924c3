/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * tonari-imagefs-fd (see imagefs-fd.h). One thread, one sd-event loop, no gRPC, no ToC: the only code
 * between a reader and the worker that must never be restarted with requests in hand.
 *
 * The loop never blocks between reading a request from /dev/fuse and recording it: a request is in the
 * table before anything else happens, and leaves it only when its answer has been written back.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fuse.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "imagefs-fd-protocol.h"
#include "imagefs-fd.h"
#include "log.h"
#include "mkdir.h"
#include "path-util.h"
#include "string-util.h"
#include "strv.h"

/* Linux 6.9's notification that asks the kernel to queue every request a daemon has read but not
 * answered again (not in 6.1's headers): used after the forwarder itself was restarted. */
#ifndef FUSE_NOTIFY_RESEND
#define FUSE_NOTIFY_RESEND 7
#endif
/* Requests read from /dev/fuse in one wakeup at most, so that answers are not starved. */
#define READ_BATCH 64
#define STATE_MAGIC "TNRIFD1"

typedef struct Request Request;
typedef struct FdMount FdMount;
typedef struct Conn Conn;

struct Request {
        Request *prev, *next;
        uint64_t unique;
        uint32_t opcode;
        bool sent;   /* passed to the attached worker */
        bool replay; /* a FUSE_INIT replayed to a new worker: its answer is not the kernel's */
        size_t size;
        uint8_t data[];
};

struct FdMount {
        Forwarder *forwarder;
        unsigned id;
        char *path, *fsname, *state;
        int fuse_fd;
        sd_event_source *fuse_source;
        Conn *conn;
        Request *head, *tail;
        size_t n_pending;
        void *init; /* the kernel's FUSE_INIT, once answered */
        size_t init_size;
        uint64_t n_requests, n_redispatched, n_attaches, n_failed;
        usec_t detached_usec; /* CLOCK_MONOTONIC when the last worker went; 0 while one is attached */
        bool failing;         /* no worker for longer than the timeout: requests are answered EIO */
};

struct Conn {
        Forwarder *forwarder;
        Conn *prev, *next;
        int fd;
        sd_event_source *source;
        FdMount *mount;
        bool busy; /* its handler runs: freed when that returns */
        bool dead;
};

struct Forwarder {
        sd_event *event;
        char *socket_path, *state_directory;
        int listen_fd;
        sd_event_source *listen_source;
        FdMount **mounts;
        size_t n_mounts;
        Conn *conns;
        unsigned next_id;
        bool fdstore; /* under systemd: fds go to its fd store */
        usec_t worker_timeout_usec;
        sd_event_source *timeout_source;
        uint8_t *buf;
};

static bool no_reply(uint32_t opcode) {
        return opcode == FUSE_FORGET || opcode == FUSE_BATCH_FORGET || opcode == FUSE_INTERRUPT ||
               opcode == FUSE_NOTIFY_REPLY;
}

static Request *request_new(const void *data, size_t size) {
        const struct fuse_in_header *in = data;
        Request *q;

        q = malloc(offsetof(Request, data) + size);
        if (!q)
                return NULL;
        *q = (Request) { .unique = in->unique, .opcode = in->opcode, .size = size };
        memcpy(q->data, data, size);
        return q;
}

static void request_unlink(FdMount *m, Request *q) {
        if (q->prev)
                q->prev->next = q->next;
        else
                m->head = q->next;
        if (q->next)
                q->next->prev = q->prev;
        else
                m->tail = q->prev;
        m->n_pending--;
}

static void request_append(FdMount *m, Request *q) {
        q->prev = m->tail;
        q->next = NULL;
        if (m->tail)
                m->tail->next = q;
        else
                m->head = q;
        m->tail = q;
        m->n_pending++;
}

static void request_prepend(FdMount *m, Request *q) {
        q->prev = NULL;
        q->next = m->head;
        if (m->head)
                m->head->prev = q;
        else
                m->tail = q;
        m->head = q;
        m->n_pending++;
}

static void conn_free(Conn *c) {
        Forwarder *f;

        if (!c || c->dead)
                return;
        f = c->forwarder;
        if (c->prev)
                c->prev->next = c->next;
        else
                f->conns = c->next;
        if (c->next)
                c->next->prev = c->prev;
        c->source = sd_event_source_disable_unref(c->source);
        c->fd = safe_close(c->fd);
        c->dead = true;
        if (!c->busy)
                free(c);
}

/* An answer of the forwarder's own: an error. */
static void answer_error(FdMount *m, uint64_t unique, int error) {
        struct fuse_out_header out = { .len = sizeof(out), .error = -ERRNO_VALUE(error), .unique = unique };

        (void) write(m->fuse_fd, &out, sizeof(out));
}

static void forwarder_arm_timeout(Forwarder *f);

/* The worker went away (or another took over): what it had not answered is passed again to the next. */
static void mount_detach(FdMount *m) {
        Conn *c = m->conn;
        Request *q, *next;
        size_t again = 0;

        if (!c)
                return;
        m->conn = NULL;
        c->mount = NULL;
        conn_free(c);
        m->detached_usec = now(CLOCK_MONOTONIC);
        forwarder_arm_timeout(m->forwarder);
        for (q = m->head; q; q = next) {
                next = q->next;
                if (q->replay || (q->sent && no_reply(q->opcode))) {
                        request_unlink(m, q);
                        free(q);
                        continue;
                }
                if (q->sent)
                        again++;
                q->sent = false;
        }
        log_struct(LOG_INFO,
                   LOG_MESSAGE("Worker of %s detached; %zu requests it had not answered, %zu waiting in all.",
                               m->path, again, m->n_pending),
                   "TONARI_MOUNTPOINT=%s", m->path);
}

static void fdstore_remove(FdMount *m) {
        char msg[64];

        if (!m->forwarder->fdstore)
                return;
        snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=imagefs-%u", m->id);
        (void) sd_notify(false, msg);
}

static char *state_path(FdMount *m) {
        char *p;

        if (asprintf(&p, "%s/%u", m->forwarder->state_directory, m->id) < 0)
                return NULL;
        return p;
}

static FdMount *mount_free(FdMount *m) {
        Request *q;

        if (!m)
                return NULL;
        mount_detach(m);
        while ((q = m->head)) {
                request_unlink(m, q);
                free(q);
        }
        sd_event_source_disable_unref(m->fuse_source);
        safe_close(m->fuse_fd);
        free(m->init);
        free(m->path);
        free(m->fsname);
        free(m->state);
        return mfree(m);
}

/* The mount is gone (unmounted, or its connection aborted): it forgets it, and so does the fd store. */
static void mount_ended(FdMount *m) {
        Forwarder *f = m->forwarder;
        _cleanup_free_ char *p = state_path(m);

        log_struct(LOG_INFO,
                   LOG_MESSAGE("%s was unmounted (%" PRIu64 " requests, %" PRIu64 " passed again after %" PRIu64
                               " attaches, %" PRIu64 " failed without a worker).",
                               m->path, m->n_requests, m->n_redispatched, m->n_attaches, m->n_failed),
                   "TONARI_MOUNTPOINT=%s", m->path);
        fdstore_remove(m);
        if (p)
                (void) unlink(p);
        for (size_t i = 0; i < f->n_mounts; i++)
                if (f->mounts[i] == m) {
                        memmove(f->mounts + i, f->mounts + i + 1, (f->n_mounts - i - 1) * sizeof(f->mounts[0]));
                        f->n_mounts--;
                        break;
                }
        mount_free(m);
}

/* Passes what the worker has not got yet, in order, until its socket is full. */
static void mount_flush(FdMount *m) {
        Request *q, *next;
        bool full = false;

        if (!m->conn)
                return;
        for (q = m->head; q; q = next) {
                next = q->next;
                if (q->sent) {
                        /* libfuse answers EIO to whatever it reads before its FUSE_INIT is done, and a
                         * worker's threads read in parallel: nothing follows a replayed FUSE_INIT until
                         * the worker answered it (the kernel itself never sends before its own). */
                        if (q->replay)
                                break;
                        continue;
                }
                if (send(m->conn->fd, q->data, q->size, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
                        if (errno == EAGAIN) {
                                full = true;
                                break;
                        }
                        log_debug_errno(errno, "Worker of %s gone while passing a request: %m", m->path);
                        mount_detach(m);
                        return;
                }
                q->sent = true;
                if (q->replay)
                        break;
                if (no_reply(q->opcode)) {
                        request_unlink(m, q);
                        free(q);
                }
        }
        (void) sd_event_source_set_io_events(m->conn->source, full ? EPOLLIN | EPOLLOUT : EPOLLIN);
}

/* The state a restarted forwarder needs for a mount: where, what, and the kernel's FUSE_INIT. */
static int mount_save(FdMount *m) {
        _cleanup_free_ char *p = state_path(m), *tmp = NULL;
        _cleanup_close_ int fd = -EBADF;
        struct iovec iov[5];
        ssize_t n;
        size_t total = 0;

        if (!m->forwarder->fdstore)
                return 0;
        if (!p || asprintf(&tmp, "%s.tmp", p) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        iov[0] = (struct iovec) { (void *) STATE_MAGIC, sizeof(STATE_MAGIC) };
        iov[1] = (struct iovec) { m->path, strlen(m->path) + 1 };
        iov[2] = (struct iovec) { m->fsname, strlen(m->fsname) + 1 };
        iov[3] = (struct iovec) { m->state, strlen(m->state) + 1 };
        iov[4] = (struct iovec) { m->init, m->init_size };
        for (size_t i = 0; i < 5; i++)
                total += iov[i].iov_len;
        n = writev(fd, iov, 5);
        if (n < 0)
                return -errno;
        if ((size_t) n != total)
                return -EIO;
        if (rename(tmp, p) < 0)
                return -errno;
        return 0;
}

/* An answer (or a notification) from the worker. */
static void mount_answer(FdMount *m, const uint8_t *data, size_t size) {
        const struct fuse_out_header *out = (const struct fuse_out_header *) data;
        Request *q;
        int r;

        if (size < sizeof(*out) || out->len != size) {
                log_warning("Worker of %s sent a malformed message of %zu bytes, dropping it.", m->path, size);
                return;
        }
        for (q = m->head; q; q = q->next)
                if (q->unique == out->unique && q->sent)
                        break;
        if (q && q->replay) {
                request_unlink(m, q);
                free(q);
                /* The worker is ready: what waited behind its FUSE_INIT goes now. */
                mount_flush(m);
                return;
        }
        /* Notifications (unique 0) and answers to requests the table does not hold (an interrupt's)
         * pass as they are: the kernel knows what they concern, and refuses what it does not. */
        if (write(m->fuse_fd, data, size) < 0 && errno != ENOENT)
                log_debug_errno(errno, "Kernel refused an answer on %s: %m", m->path);
        if (!q)
                return;
        request_unlink(m, q);
        if (q->opcode == FUSE_INIT && !m->init) {
                m->init_size = q->size;
                m->init = memdup(q->data, q->size);
                if (!m->init)
                        m->init_size = 0;
                r = mount_save(m);
                if (r < 0)
                        log_warning_errno(r, "Failed to save the state of %s, a restart of the forwarder "
                                             "will lose it: %m", m->path);
        }
        free(q);
}

static int on_fuse(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        FdMount *m = userdata;
        Forwarder *f = m->forwarder;

        for (int i = 0; i < READ_BATCH; i++) {
                ssize_t n = read(m->fuse_fd, f->buf, IMAGEFS_FD_MESSAGE_MAX);
                Request *q;

                if (n < 0) {
                        if (errno == EAGAIN)
                                break;
                        if (errno == EINTR || errno == ENOENT)
                                continue;
                        if (errno == ENODEV) {
                                mount_ended(m);
                                return 0;
                        }
                        log_warning_errno(errno, "Failed to read from the FUSE connection of %s: %m", m->path);
                        break;
                }
                if ((size_t) n < sizeof(struct fuse_in_header))
                        continue;
                if (m->failing) {
                        const struct fuse_in_header *in = (const struct fuse_in_header *) f->buf;

                        /* No worker for too long: an error now rather than a hang (never for FUSE_INIT,
                         * whose failure would end the connection). */
                        if (!no_reply(in->opcode) && in->opcode != FUSE_INIT) {
                                answer_error(m, in->unique, EIO);
                                m->n_failed++;
                        }
                        if (in->opcode != FUSE_INIT)
                                continue;
                }
                q = request_new(f->buf, (size_t) n);
                if (!q) {
                        /* Unanswered and unrecorded: better an error now than a hang. */
                        struct fuse_out_header out = {
                                .len = sizeof(out),
                                .error = -ENOMEM,
                                .unique = ((struct fuse_in_header *) f->buf)->unique,
                        };
                        (void) write(m->fuse_fd, &out, sizeof(out));
                        continue;
                }
                m->n_requests++;
                request_append(m, q);
        }
        mount_flush(m);
        return 0;
}

static int send_fields(int fd, const char *const *fields, size_t n) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 0, off = 0;

        for (size_t i = 0; i < n; i++)
                size += strlen(fields[i]) + 1;
        buf = malloc(size ?: 1);
        if (!buf)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                size_t l = strlen(fields[i]) + 1;

                memcpy(buf + off, fields[i], l);
                off += l;
        }
        if (send(fd, buf, size, MSG_NOSIGNAL) < 0)
                return -errno;
        return 0;
}

static int send_error(int fd, int error) {
        char e[16];

        snprintf(e, sizeof(e), "%d", ERRNO_VALUE(error));
        return send_fields(fd, (const char *[]) { "ERR", e }, 2);
}

static void set_buffers(int fd) {
        int size = IMAGEFS_FD_SOCKET_BUFFER_BYTES;

        /* Root may go past net.core.[rw]mem_max; anyone else gets what the limit allows. */
        if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
        if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0)
                (void) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
}

static int mount_add(Forwarder *f, unsigned id, int fuse_fd, const char *path, const char *fsname, const char *state,
                     FdMount **ret) {
        FdMount *m, **n;
        int r;

        n = reallocarray(f->mounts, f->n_mounts + 1, sizeof(*n));
        if (!n)
                return -ENOMEM;
        f->mounts = n;
        m = new0(FdMount, 1);
        if (!m)
                return -ENOMEM;
        m->forwarder = f;
        m->id = id;
        m->fuse_fd = fuse_fd;
        m->path = strdup(path);
        m->fsname = strdup(fsname);
        m->state = strdup(state);
        if (!m->path || !m->fsname || !m->state) {
                m->fuse_fd = -EBADF;
                mount_free(m);
                return -ENOMEM;
        }
        r = sd_event_add_io(f->event, &m->fuse_source, fuse_fd, EPOLLIN, on_fuse, m);
        if (r < 0) {
                m->fuse_fd = -EBADF;
                mount_free(m);
                return r;
        }
        f->mounts[f->n_mounts++] = m;
        *ret = m;
        return 0;
}

/* A new FUSE mount at path, its connection in the forwarder's hands (and the fd store's). */
static int mount_new(Forwarder *f, const char *path, const char *fsname, const char *state, FdMount **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *options = NULL;
        FdMount *m;
        struct stat st;
        int r;

        if (stat(path, &st) < 0)
                return -errno;
        if (!S_ISDIR(st.st_mode))
                return -ENOTDIR;
        fd = open("/dev/fuse", O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        /* What libfuse would ask for a root daemon: everyone may read (overlayfs and containers read as
         * other users), the kernel checks permissions from the modes, read-only. */
        if (asprintf(&options, "fd=%d,rootmode=%o,user_id=0,group_id=0,allow_other,default_permissions", fd,
                     (unsigned) (st.st_mode & S_IFMT)) < 0)
                return -ENOMEM;
        if (mount(fsname, path, "fuse." IMAGEFS_FD_SUBTYPE, MS_RDONLY | MS_NOSUID | MS_NODEV, options) < 0)
                return -errno;
        r = mount_add(f, f->next_id++, fd, path, fsname, state, &m);
        if (r < 0) {
                (void) umount2(path, MNT_DETACH);
                return r;
        }
        TAKE_FD(fd);
        if (f->fdstore) {
                char msg[64];

                snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=imagefs-%u", m->id);
                r = sd_pid_notify_with_fds(0, false, msg, &m->fuse_fd, 1);
                if (r <= 0)
                        log_warning_errno(r ?: ENOTSUP, "Failed to put the FUSE connection of %s into the fd store, "
                                                        "a restart of the forwarder will lose it: %m", path);
        }
        r = mount_save(m);
        if (r < 0)
                log_warning_errno(r, "Failed to save the state of %s, ignoring: %m", path);
        *ret = m;
        return 0;
}

static FdMount *mount_find(Forwarder *f, const char *path) {
        for (size_t i = 0; i < f->n_mounts; i++)
                if (streq(f->mounts[i]->path, path))
                        return f->mounts[i];
        return NULL;
}

static int handle_attach(Conn *c, const char *path, const char *fsname, const char *state) {
        Forwarder *f = c->forwarder;
        FdMount *m;
        bool new = false;
        size_t again;
        int r;

        if (!path_is_normalized_absolute(path) || isempty(fsname) || strchr(fsname, ','))
                return -EINVAL;
        m = mount_find(f, path);
        if (!m) {
                r = mount_new(f, path, fsname, state, &m);
                if (r < 0)
                        return log_warning_errno(r, "Failed to mount '%s': %m", path);
                new = true;
        } else {
                char *s = strdup(state);

                if (!s)
                        return -ENOMEM;
                free(m->state);
                m->state = s;
                mount_detach(m);
        }
        r = send_fields(c->fd, (const char *[]) { "OK", new ? "NEW" : "ATTACHED" }, 2);
        if (r < 0)
                return r;
        c->mount = m;
        m->conn = c;
        m->n_attaches++;
        m->detached_usec = 0;
        m->failing = false;
        again = m->n_pending;
        if (m->init) {
                /* The worker's libfuse session wants FUSE_INIT first; the kernel sent it only once. */
                Request *q = request_new(m->init, m->init_size);

                if (!q) {
                        mount_detach(m);
                        return -ENOMEM;
                }
                q->replay = true;
                request_prepend(m, q);
        }
        m->n_redispatched += again;
        log_struct(LOG_INFO,
                   LOG_MESSAGE("Worker attached to %s (%s), %zu waiting requests passed to it.", path,
                               new ? "new mount" : "taken over", again),
                   "TONARI_MOUNTPOINT=%s", path);
        mount_flush(m);
        return 0;
}

static int handle_list(Conn *c) {
        Forwarder *f = c->forwarder;
        _cleanup_free_ const char **fields = NULL;
        size_t n = 0;

        fields = new(const char *, 1 + 2 * f->n_mounts);
        if (!fields)
                return -ENOMEM;
        fields[n++] = "OK";
        for (size_t i = 0; i < f->n_mounts; i++) {
                fields[n++] = f->mounts[i]->path;
                fields[n++] = f->mounts[i]->state;
        }
        return send_fields(c->fd, fields, n);
}

/* The command a connection starts with; false when the connection is done. */
static bool handle_command(Conn *c, const uint8_t *data, size_t size) {
        const char *fields[4] = {};
        size_t n = 0, off = 0;
        int r = -EINVAL;

        while (off < size && n < ELEMENTSOF(fields)) {
                const char *e = memchr(data + off, 0, size - off);

                if (!e)
                        break;
                fields[n++] = (const char *) data + off;
                off = (size_t) ((const uint8_t *) e - data) + 1;
        }
        if (n == 4 && off == size && streq(fields[0], "ATTACH"))
                r = handle_attach(c, fields[1], fields[2], fields[3]);
        else if (n == 1 && off == size && streq(fields[0], "LIST")) {
                (void) handle_list(c);
                return false;
        }
        if (r < 0) {
                (void) send_error(c->fd, r);
                return false;
        }
        return true;
}

static int on_conn(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Conn *c = userdata;
        Forwarder *f = c->forwarder;

        /* Anything below may end this connection (a failed send detaches the worker): it is freed at
         * the end, not under our feet. */
        c->busy = true;
        if (c->mount && (revents & EPOLLOUT))
                mount_flush(c->mount);
        while (!c->dead) {
                ssize_t n;
                FdMount *m;

                n = recv(c->fd, f->buf, IMAGEFS_FD_MESSAGE_MAX, MSG_DONTWAIT | MSG_TRUNC);
                if (n < 0 && errno == EAGAIN)
                        break;
                if (n < 0 && errno == EINTR)
                        continue;
                m = c->mount;
                if (n <= 0) {
                        /* Gone; every answer it sent before was read above. */
                        if (m)
                                mount_detach(m);
                        else
                                conn_free(c);
                        break;
                }
                if ((size_t) n > IMAGEFS_FD_MESSAGE_MAX) {
                        log_warning("A message of %zd bytes from a worker is too large, dropping it.", n);
                        continue;
                }
                if (!m) {
                        if (!handle_command(c, f->buf, (size_t) n))
                                conn_free(c);
                        continue;
                }
                mount_answer(m, f->buf, (size_t) n);
        }
        c->busy = false;
        if (c->dead)
                free(c);
        return 0;
}

static int on_listen(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        Forwarder *f = userdata;
        _cleanup_close_ int cfd = -EBADF;
        Conn *c;
        int r;

        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
                if (errno != EAGAIN && errno != EINTR)
                        log_warning_errno(errno, "Failed to accept a worker, ignoring: %m");
                return 0;
        }
        set_buffers(cfd);
        c = new0(Conn, 1);
        if (!c)
                return 0;
        c->forwarder = f;
        c->fd = TAKE_FD(cfd);
        r = sd_event_add_io(f->event, &c->source, c->fd, EPOLLIN, on_conn, c);
        c->next = f->conns;
        if (f->conns)
                f->conns->prev = c;
        f->conns = c;
        if (r < 0)
                conn_free(c);
        return 0;
}

/* After a restart: the FUSE connections the fd store kept, with their saved state. What the previous
 * forwarder had read but not answered is lost on 6.1; from 6.9 on the kernel queues it again. */
static int adopt_mounts(Forwarder *f) {
        _cleanup_strv_free_ char **names = NULL;
        int n;

        n = sd_listen_fds_with_names(true, &names);
        if (n <= 0)
                return n;
        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;
                _cleanup_free_ char *p = NULL, *data = NULL;
                struct fuse_out_header resend = { .len = sizeof(resend), .error = FUSE_NOTIFY_RESEND };
                const char *path, *fsname, *state, *end;
                unsigned id;
                size_t size, off;
                FdMount *m;
                int r, flags;

                if (!names || !names[i] || sscanf(names[i], "imagefs-%u", &id) != 1) {
                        safe_close(fd);
                        continue;
                }
                if (asprintf(&p, "%s/%u", f->state_directory, id) < 0)
                        return -ENOMEM;
                r = read_full_file(p, &data, &size);
                end = data ? data + size : NULL;
                path = data ? data + sizeof(STATE_MAGIC) : NULL;
                if (r < 0 || size < sizeof(STATE_MAGIC) || memcmp(data, STATE_MAGIC, sizeof(STATE_MAGIC)) != 0 ||
                    !(fsname = memchr(path, 0, (size_t) (end - path))) || !(fsname++, state = memchr(fsname, 0, (size_t) (end - fsname))) ||
                    !(state++, memchr(state, 0, (size_t) (end - state)))) {
                        log_warning("No usable state for stored FUSE connection %s, closing it.", names[i]);
                        (void) sd_notifyf(false, "FDSTOREREMOVE=1\nFDNAME=%s", names[i]);
                        safe_close(fd);
                        continue;
                }
                off = (size_t) ((const char *) memchr(state, 0, (size_t) (end - state)) - data) + 1;
                flags = fcntl(fd, F_GETFL);
                if (flags >= 0)
                        (void) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
                r = mount_add(f, id, fd, path, fsname, state, &m);
                if (r < 0) {
                        safe_close(fd);
                        return r;
                }
                if (off < size) {
                        m->init = memdup(data + off, size - off);
                        if (!m->init)
                                return -ENOMEM;
                        m->init_size = size - off;
                }
                f->next_id = MAX(f->next_id, id + 1);
                /* No worker yet: the timeout counts from now. */
                m->detached_usec = now(CLOCK_MONOTONIC);
                /* 6.9+: what the previous forwarder held comes again. 6.1 refuses the notification. */
                r = write(fd, &resend, sizeof(resend)) < 0 ? -errno : 0;
                log_struct(LOG_INFO,
                           LOG_MESSAGE("Took %s back from the fd store; %s.", path,
                                       r >= 0 ? "the kernel resends what was in flight"
                                              : "this kernel cannot resend what was in flight (before 6.9)"),
                           "TONARI_MOUNTPOINT=%s", path);
        }
        return 0;
}

/* No worker came back for a mount within the timeout: its waiting requests fail with EIO, and so do new
 * ones until a worker attaches (a worker that cannot start, e.g. without its relay, must not make
 * readers hang for good). */
static int on_worker_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Forwarder *f = userdata;
        usec_t t = now(CLOCK_MONOTONIC);

        for (size_t i = 0; i < f->n_mounts; i++) {
                FdMount *m = f->mounts[i];
                Request *q, *next;
                size_t failed = 0;

                if (m->conn || m->failing || m->detached_usec == 0 || t < m->detached_usec + f->worker_timeout_usec)
                        continue;
                m->failing = true;
                for (q = m->head; q; q = next) {
                        next = q->next;
                        if (q->replay || q->opcode == FUSE_INIT)
                                continue;
                        if (!no_reply(q->opcode)) {
                                answer_error(m, q->unique, EIO);
                                failed++;
                        }
                        request_unlink(m, q);
                        free(q);
                }
                m->n_failed += failed;
                log_struct(LOG_WARNING,
                           LOG_MESSAGE("No worker for %s since %" PRIu64 " ms, failing its %zu waiting requests and "
                                       "new ones with EIO until one attaches.",
                                       m->path, (t - m->detached_usec) / USEC_PER_MSEC, failed),
                           "TONARI_MOUNTPOINT=%s", m->path);
        }
        forwarder_arm_timeout(f);
        return 0;
}

static void forwarder_arm_timeout(Forwarder *f) {
        usec_t next = USEC_INFINITY;
        int r;

        if (f->worker_timeout_usec == 0 || !f->event)
                return;
        for (size_t i = 0; i < f->n_mounts; i++)
                if (!f->mounts[i]->conn && !f->mounts[i]->failing && f->mounts[i]->detached_usec > 0)
                        next = MIN(next, f->mounts[i]->detached_usec + f->worker_timeout_usec);
        if (next == USEC_INFINITY) {
                if (f->timeout_source)
                        (void) sd_event_source_set_enabled(f->timeout_source, SD_EVENT_OFF);
                return;
        }
        if (!f->timeout_source) {
                r = sd_event_add_time(f->event, &f->timeout_source, CLOCK_MONOTONIC, next, USEC_PER_MSEC * 10,
                                      on_worker_timeout, f);
                if (r < 0)
                        log_warning_errno(r, "Failed to arm the worker timeout, ignoring: %m");
                return;
        }
        (void) sd_event_source_set_time(f->timeout_source, next);
        (void) sd_event_source_set_enabled(f->timeout_source, SD_EVENT_ONESHOT);
}

static int on_terminate(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        return sd_event_exit(sd_event_source_get_event(s), 0);
}

int forwarder_new(const ForwarderConfig *config, Forwarder **ret) {
        _cleanup_(forwarder_freep) Forwarder *f = NULL;
        union {
                struct sockaddr sa;
                struct sockaddr_un un;
        } sa = { .un.sun_family = AF_UNIX };
        _cleanup_free_ char *dir = NULL;
        sigset_t mask;
        int r;

        if (strlen(config->socket_path) >= sizeof(sa.un.sun_path))
                return log_error_errno(EINVAL, "Socket path '%s' is too long.", config->socket_path);
        f = new0(Forwarder, 1);
        if (!f)
                return log_oom();
        f->listen_fd = -EBADF;
        f->fdstore = getenv("NOTIFY_SOCKET");
        f->worker_timeout_usec = config->worker_timeout_usec;
        f->socket_path = strdup(config->socket_path);
        f->state_directory = strdup(config->state_directory);
        f->buf = malloc(IMAGEFS_FD_MESSAGE_MAX);
        if (!f->socket_path || !f->state_directory || !f->buf)
                return log_oom();

        r = sd_event_default(&f->event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate event loop: %m");
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                return log_error_errno(errno, "Failed to block signals: %m");
        r = sd_event_add_signal(f->event, NULL, SIGTERM, on_terminate, f);
        if (r >= 0)
                r = sd_event_add_signal(f->event, NULL, SIGINT, on_terminate, f);
        if (r < 0)
                return log_error_errno(r, "Failed to install signal handlers: %m");

        r = mkdirat_p(AT_FDCWD, f->state_directory, 0700);
        if (r < 0)
                return log_error_errno(r, "Failed to create state directory '%s': %m", f->state_directory);
        r = adopt_mounts(f);
        if (r < 0)
                return log_error_errno(r, "Failed to take the stored FUSE connections back: %m");
        forwarder_arm_timeout(f);

        dir = strdup(config->socket_path);
        if (!dir)
                return log_oom();
        if (strrchr(dir, '/') && strrchr(dir, '/') != dir) {
                *strrchr(dir, '/') = 0;
                (void) mkdirat_p(AT_FDCWD, dir, 0755);
        }
        f->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (f->listen_fd < 0)
                return log_error_errno(errno, "Failed to create socket: %m");
        strcpy(sa.un.sun_path, config->socket_path);
        (void) unlink(config->socket_path);
        /* Only root talks to the forwarder: it mounts what it is told. */
        if (bind(f->listen_fd, &sa.sa, sizeof(sa.un)) < 0 || chmod(config->socket_path, 0600) < 0 ||
            listen(f->listen_fd, 64) < 0)
                return log_error_errno(errno, "Failed to listen on '%s': %m", config->socket_path);
        r = sd_event_add_io(f->event, &f->listen_source, f->listen_fd, EPOLLIN, on_listen, f);
        if (r < 0)
                return log_error_errno(r, "Failed to watch '%s': %m", config->socket_path);
        *ret = TAKE_PTR(f);
        return 0;
}

Forwarder *forwarder_free(Forwarder *f) {
        if (!f)
                return NULL;
        /* Each leaves the table before it is freed: detaching it looks at the others. */
        while (f->n_mounts > 0)
                mount_free(f->mounts[--f->n_mounts]);
        free(f->mounts);
        while (f->conns)
                conn_free(f->conns);
        sd_event_source_disable_unref(f->listen_source);
        sd_event_source_disable_unref(f->timeout_source);
        safe_close(f->listen_fd);
        sd_event_unref(f->event);
        free(f->socket_path);
        free(f->state_directory);
        free(f->buf);
        return mfree(f);
}

int forwarder_run(Forwarder *f) {
        int r;

        (void) sd_notify(false, "READY=1");
        log_info("Forwarding FUSE requests of %zu mounts; workers connect to %s.", f->n_mounts, f->socket_path);
        r = sd_event_loop(f->event);
        (void) sd_notify(false, "STOPPING=1");
        if (!f->fdstore)
                /* Nothing would hold the connections: rather an unmounted directory than a dead mount. */
                for (size_t i = 0; i < f->n_mounts; i++) {
                        _cleanup_free_ char *p = state_path(f->mounts[i]);

                        if (umount2(f->mounts[i]->path, MNT_DETACH) < 0)
                                log_warning_errno(errno, "Failed to unmount '%s', ignoring: %m", f->mounts[i]->path);
                        if (p)
                                (void) unlink(p);
                }
        (void) unlink(f->socket_path);
        return r;
}
