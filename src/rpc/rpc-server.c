/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "path-util.h"
#include "rpc-internal.h"
#include "string-util.h"

/* Requests kept outstanding per method: a call that arrives while the acceptor re-arms waits in
 * gRPC's queue, so two are plenty. */
#define REQUESTS_PER_METHOD 2
#define LISTENERS_MAX 16

typedef struct Method {
        char *path;
        RpcMethodKind kind;
        unsigned flags;
        rpc_handler_t handler;
        void *userdata;
        void *tag;
} Method;

/* One outstanding request for a call; when the call arrives it becomes the call's state. */
typedef struct Request {
        RpcServer *server;
        Method *method; /* NULL: any method not registered, answered UNIMPLEMENTED */
        grpc_completion_queue *cq;
        grpc_call *call;
        gpr_timespec deadline;
        grpc_metadata_array metadata;
        grpc_call_details details;
        grpc_byte_buffer *payload;
        struct Request *next; /* in the work queue */
} Request;

struct RpcCall {
        Request *request;
        bool replied;
        grpc_byte_buffer *reply;
        char *error;
        bool metadata_sent;
        bool close_started, close_received;
        int cancelled; /* set by RECV_CLOSE_ON_SERVER */
};

struct RpcServer {
        grpc_server *server;
        grpc_completion_queue *cq;
        Method **methods;
        size_t n_methods;
        char *unix_paths[LISTENERS_MAX];
        size_t n_unix_paths;
        unsigned threads;
        pthread_t acceptor;
        pthread_t *workers;
        unsigned n_workers;  /* running; fewer than threads if rpc_server_start() failed */
        bool acceptor_running;
        bool started, shutdown_started, shutdown_requested, stopped, cq_shut;

        pthread_mutex_t lock;
        pthread_cond_t changed;
        Request *queue_head, *queue_tail;       /* for the pool */
        Request *blocking_head, *blocking_tail; /* for a blocking thread, once one is free */
        unsigned blocking_threads, max_blocking_threads;
        unsigned active; /* calls dispatched and not yet finished */
        bool shutdown_notified;
        bool workers_stop;
};

/* Distinct addresses as tags on the notification queue. */
static char shutdown_tag;

/* Tags on a call's own queue. */
enum {
        TAG_BATCH = 1,
        TAG_CLOSE,
};
#define TAG(t) ((void *) (uintptr_t) (t))

int rpc_server_new(const RpcOptions *o, RpcServer **ret) {
        RpcServer *s;
        RpcArgs args;

        s = new0(RpcServer, 1);
        if (!s)
                return -ENOMEM;
        rpc_grpc_ref();
        rpc_args_init(&args, o);
        s->server = grpc_server_create(&args.channel_args, NULL);
        s->cq = grpc_completion_queue_create_for_next(NULL);
        if (!s->server || !s->cq) {
                if (s->server)
                        grpc_server_destroy(s->server);
                if (s->cq)
                        grpc_completion_queue_destroy(s->cq);
                free(s);
                rpc_grpc_unref();
                return -ENOMEM;
        }
        grpc_server_register_completion_queue(s->server, s->cq, NULL);
        s->threads = o && o->threads > 0 ? o->threads : RPC_THREADS_DEFAULT;
        s->max_blocking_threads = o && o->max_blocking_threads > 0 ? o->max_blocking_threads
                                                                   : RPC_BLOCKING_THREADS_DEFAULT;
        pthread_mutex_init(&s->lock, NULL);
        pthread_cond_init(&s->changed, NULL);
        *ret = s;
        return 0;
}

int rpc_server_add_method(RpcServer *s, const char *path, RpcMethodKind kind, unsigned flags,
                          rpc_handler_t handler, void *userdata) {
        _cleanup_free_ Method *m = NULL;
        Method **a;

        if (s->started || !path || path[0] != '/' || !strchr(path + 1, '/') || !handler ||
            (kind != RPC_UNARY && kind != RPC_SERVER_STREAM))
                return -EINVAL;
        for (size_t i = 0; i < s->n_methods; i++)
                if (streq(s->methods[i]->path, path))
                        return -EEXIST;
        m = new0(Method, 1);
        if (!m)
                return -ENOMEM;
        *m = (Method) { .kind = kind, .flags = flags, .handler = handler, .userdata = userdata };
        m->path = strdup(path);
        if (!m->path)
                return -ENOMEM;
        /* The request is in the notification: a handler always has it in hand. */
        m->tag = grpc_server_register_method(s->server, m->path, NULL,
                                             GRPC_SRM_PAYLOAD_READ_INITIAL_BYTE_BUFFER, 0);
        if (!m->tag) {
                free(m->path);
                return -EINVAL;
        }
        a = reallocarray(s->methods, s->n_methods + 1, sizeof(Method *));
        if (!a) {
                free(m->path);
                return -ENOMEM;
        }
        s->methods = a;
        s->methods[s->n_methods++] = TAKE_PTR(m);
        return 0;
}

int rpc_server_add_service(RpcServer *s, const char *service, const RpcMethod *methods, size_t n_methods,
                           void *userdata) {
        for (size_t i = 0; i < n_methods; i++) {
                _cleanup_free_ char *path = NULL;
                int r;

                if (asprintf(&path, "/%s/%s", service, methods[i].name) < 0)
                        return -ENOMEM;
                r = rpc_server_add_method(s, path, methods[i].kind, methods[i].flags, methods[i].handler,
                                          userdata);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* 1 if a process accepts connections on the unix socket at path. */
static int unix_socket_alive(const char *path) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) >= 0)
                return 1;
        return errno == ECONNREFUSED || errno == ENOENT ? 0 : -errno;
}

int rpc_server_listen(RpcServer *s, const char *address, unsigned unix_mode, int *ret_port) {
        grpc_server_credentials *creds;
        _cleanup_free_ char *copy = NULL;
        mode_t mask = 0;
        const char *path;
        struct stat st;
        int port, r;

        if (s->started || !address)
                return -EINVAL;
        path = startswith(address, "unix:");
        if (path) {
                if (!path_is_normalized_absolute(path) || s->n_unix_paths >= LISTENERS_MAX)
                        return -EINVAL;
                if (lstat(path, &st) >= 0) {
                        /* Replace a socket a dead server left, never anything else. */
                        if (!S_ISSOCK(st.st_mode))
                                return -EADDRINUSE;
                        r = unix_socket_alive(path);
                        if (r < 0)
                                return r;
                        if (r > 0)
                                return -EADDRINUSE;
                        if (unlink(path) < 0)
                                return -errno;
                } else if (errno != ENOENT)
                        return -errno;
        }

        if (path) {
                _cleanup_free_ char *dir = strdup(path);

                if (!dir)
                        return -ENOMEM;
                /* gRPC would only say that it failed; a missing directory is worth its own errno. */
                *(strrchr(dir, '/') + 1) = 0;
                if (stat(dir, &st) < 0)
                        return -errno;
                if (!S_ISDIR(st.st_mode))
                        return -ENOTDIR;
                copy = strdup(path);
                if (!copy)
                        return -ENOMEM;
                /* Born with its mode, so that nobody connects in the moment before chmod(). The
                 * umask is the process's: listening happens while a daemon sets up, before the
                 * threads that create files start. */
                mask = umask(~unix_mode & 0777);
        }
        creds = grpc_insecure_server_credentials_create();
        port = grpc_server_add_http2_port(s->server, address, creds);
        grpc_server_credentials_release(creds);
        if (path)
                (void) umask(mask);
        /* gRPC does not say why; with SO_REUSEPORT off, a port in use is the usual reason. */
        if (port <= 0)
                return path ? -EADDRNOTAVAIL : -EADDRINUSE;

        if (path) {
                /* Removed by rpc_server_free() from now on, whatever happens next. */
                s->unix_paths[s->n_unix_paths++] = TAKE_PTR(copy);
                /* The umask cannot add bits; chmod() makes the mode exact. */
                if (chmod(path, unix_mode & 0777) < 0)
                        return -errno;
        }
        if (ret_port)
                *ret_port = path ? 0 : port;
        return 0;
}

/* Requests */

static void request_free(Request *r) {
        if (!r)
                return;
        if (r->call)
                grpc_call_unref(r->call);
        if (r->payload)
                grpc_byte_buffer_destroy(r->payload);
        grpc_metadata_array_destroy(&r->metadata);
        grpc_call_details_destroy(&r->details);
        rpc_cq_destroy(r->cq);
        free(r);
}

static int request_arm(RpcServer *s, Method *m) {
        grpc_call_error e;
        Request *r;

        r = new0(Request, 1);
        if (!r)
                return -ENOMEM;
        r->server = s;
        r->method = m;
        grpc_metadata_array_init(&r->metadata);
        grpc_call_details_init(&r->details);
        r->cq = grpc_completion_queue_create_for_pluck(NULL);
        if (!r->cq) {
                request_free(r);
                return -ENOMEM;
        }
        if (m)
                e = grpc_server_request_registered_call(s->server, m->tag, &r->call, &r->deadline,
                                                        &r->metadata, &r->payload, r->cq, s->cq, r);
        else
                e = grpc_server_request_call(s->server, &r->call, &r->details, &r->metadata, r->cq, s->cq,
                                             r);
        if (e != GRPC_CALL_OK) {
                request_free(r);
                return -EIO;
        }
        return 0;
}

/* Calls */

static bool call_batch(RpcCall *c, const grpc_op *ops, size_t n) {
        if (grpc_call_start_batch(c->request->call, ops, n, TAG(TAG_BATCH), NULL) != GRPC_CALL_OK)
                return false;
        return rpc_pluck(c->request->cq, TAG(TAG_BATCH));
}

int rpc_call_reply_take(RpcCall *c, void *data, size_t size) {
        if (!c->request->method || c->request->method->kind != RPC_UNARY) {
                free(data);
                return -EINVAL;
        }
        if (c->replied) {
                free(data);
                return -EBUSY;
        }
        c->reply = rpc_buffer_take(data, size);
        if (!c->reply)
                return -ENOMEM;
        c->replied = true;
        return 0;
}

int rpc_call_reply(RpcCall *c, const void *data, size_t size) {
        void *copy = NULL;

        if (size > 0) {
                copy = memdup(data, size);
                if (!copy)
                        return -ENOMEM;
        }
        return rpc_call_reply_take(c, copy, size);
}

void rpc_call_set_error(RpcCall *c, const char *format, ...) {
        va_list ap;
        char *m;

        va_start(ap, format);
        if (vasprintf(&m, format, ap) < 0)
                m = NULL;
        va_end(ap);
        free(c->error);
        c->error = m;
}

static void start_close(RpcCall *c) {
        grpc_op op = { .op = GRPC_OP_RECV_CLOSE_ON_SERVER };

        if (c->close_started)
                return;
        c->close_started = true;
        /* Completes when the client is gone: cancelled, deadline passed, or status sent. */
        op.data.recv_close_on_server.cancelled = &c->cancelled;
        if (grpc_call_start_batch(c->request->call, &op, 1, TAG(TAG_CLOSE), NULL) != GRPC_CALL_OK)
                c->close_received = true; /* nothing to wait for */
}

int rpc_call_send_take(RpcCall *c, void *data, size_t size) {
        grpc_op ops[2] = {};
        grpc_byte_buffer *bb;
        size_t n = 0;
        bool ok;

        if (!c->request->method || c->request->method->kind != RPC_SERVER_STREAM) {
                free(data);
                return -EINVAL;
        }
        bb = rpc_buffer_take(data, size);
        if (!bb)
                return -ENOMEM;
        start_close(c);
        if (!c->metadata_sent) {
                ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
                c->metadata_sent = true;
        }
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n++].data.send_message.send_message = bb;
        /* Completes when the transport took the message, within the peer's flow-control window;
         * fails when the call is over: cancelled by the client, past its deadline, or cancelled
         * by rpc_server_shutdown(). */
        ok = call_batch(c, ops, n);
        grpc_byte_buffer_destroy(bb);
        return ok ? 0 : -ECANCELED;
}

int rpc_call_send(RpcCall *c, const void *data, size_t size) {
        void *copy = NULL;

        if (size > 0) {
                copy = memdup(data, size);
                if (!copy)
                        return -ENOMEM;
        }
        return rpc_call_send_take(c, copy, size);
}

bool rpc_call_cancelled(RpcCall *c) {
        grpc_event ev;

        if (c->close_received)
                return c->cancelled;
        start_close(c);
        ev = grpc_completion_queue_pluck(c->request->cq, TAG(TAG_CLOSE), gpr_time_0(GPR_CLOCK_REALTIME),
                                         NULL);
        if (ev.type == GRPC_OP_COMPLETE) {
                c->close_received = true;
                if (!ev.success)
                        c->cancelled = 1;
        }
        return c->close_received && c->cancelled;
}

static void finish_call(RpcCall *c, int r) {
        _cleanup_free_ char *bounded = NULL;
        grpc_op ops[4] = {};
        grpc_slice details;
        size_t n = 0;
        const char *msg;
        int status = rpc_status_from_errno(r);

        msg = status == RPC_STATUS_OK ? NULL : c->error ?: strerror(r < 0 ? -r : EIO);
        /* The one place status messages leave: bounded here, whatever a handler put in them (a
         * path 5000 directories deep, say). */
        if (msg) {
                bounded = rpc_status_message_bound(msg, RPC_STATUS_MESSAGE_MAX);
                msg = bounded ?: "(no memory for the message)";
        }
        details = msg ? grpc_slice_from_copied_string(msg) : grpc_empty_slice();

        if (!c->metadata_sent)
                ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
        if (!c->close_started) {
                ops[n].op = GRPC_OP_RECV_CLOSE_ON_SERVER;
                ops[n++].data.recv_close_on_server.cancelled = &c->cancelled;
                c->close_started = c->close_received = true;
        }
        if (status == RPC_STATUS_OK && c->request->method && c->request->method->kind == RPC_UNARY) {
                if (!c->reply)
                        c->reply = rpc_buffer_new(NULL, 0);
                ops[n].op = GRPC_OP_SEND_MESSAGE;
                ops[n++].data.send_message.send_message = c->reply;
        }
        ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
        ops[n].data.send_status_from_server.status = (grpc_status_code) status;
        ops[n++].data.send_status_from_server.status_details = &details;
        /* A failed batch means the client is gone: nothing more to tell it. */
        (void) call_batch(c, ops, n);
        grpc_slice_unref(details);

        if (!c->close_received)
                (void) rpc_pluck(c->request->cq, TAG(TAG_CLOSE));
        if (c->reply)
                grpc_byte_buffer_destroy(c->reply);
        free(c->error);
}

static void run_call(Request *req) {
        RpcCall c = { .request = req };
        _cleanup_free_ void *data = NULL;
        size_t size = 0;
        int r;

        if (!req->method) {
                _cleanup_free_ char *method = rpc_slice_to_string(req->details.method);

                rpc_call_set_error(&c, "unknown method \"%s\"", strna(method));
                finish_call(&c, -EOPNOTSUPP);
                return;
        }
        if (!req->payload) {
                rpc_call_set_error(&c, "%s: the call carries no request message", req->method->path);
                finish_call(&c, -EINVAL);
                return;
        }
        r = rpc_buffer_read(req->payload, &data, &size);
        if (r >= 0)
                r = req->method->handler(&c, data, size, req->method->userdata);
        if (r > 0)
                r = 0;
        if (r >= 0 && req->method->kind == RPC_UNARY && !c.replied) {
                /* A handler bug, not the client's: say so rather than send an empty reply. */
                rpc_call_set_error(&c, "%s: the handler sent no reply", req->method->path);
                r = -EPROTO;
        }
        finish_call(&c, r);
}

static void call_done(RpcServer *s, Request *req) {
        request_free(req);
        pthread_mutex_lock(&s->lock);
        s->active--;
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
}

static void enqueue(Request **head, Request **tail, Request *req) {
        req->next = NULL;
        if (*tail)
                (*tail)->next = req;
        else
                *head = req;
        *tail = req;
}

static Request *dequeue(Request **head, Request **tail) {
        Request *req = *head;

        if (req) {
                *head = req->next;
                if (!*head)
                        *tail = NULL;
        }
        return req;
}

/* Runs blocking calls while there are any waiting, then ends: threads exist while there is work,
 * and a busy server does not pay for a thread per call. */
static void *blocking_thread(void *userdata) {
        Request *req = userdata;
        RpcServer *s = req->server;

        for (;;) {
                run_call(req);
                request_free(req);

                pthread_mutex_lock(&s->lock);
                s->active--;
                req = dequeue(&s->blocking_head, &s->blocking_tail);
                if (!req)
                        s->blocking_threads--;
                pthread_cond_broadcast(&s->changed);
                pthread_mutex_unlock(&s->lock);
                /* Not a word about s after this: rpc_server_shutdown() may be freeing it. */
                if (!req)
                        return NULL;
        }
}

static void *worker(void *userdata) {
        RpcServer *s = userdata;

        for (;;) {
                Request *req;

                pthread_mutex_lock(&s->lock);
                while (!s->queue_head && !s->workers_stop)
                        pthread_cond_wait(&s->changed, &s->lock);
                req = dequeue(&s->queue_head, &s->queue_tail);
                pthread_mutex_unlock(&s->lock);
                if (!req)
                        return NULL;
                run_call(req);
                call_done(s, req);
        }
}

static void dispatch(RpcServer *s, Request *req) {
        pthread_attr_t attr;
        pthread_t t;
        int r;

        pthread_mutex_lock(&s->lock);
        s->active++;
        if (req->method && (req->method->flags & RPC_METHOD_BLOCKING)) {
                if (s->blocking_threads >= s->max_blocking_threads) {
                        /* Waits for a blocking thread, never for the pool. */
                        enqueue(&s->blocking_head, &s->blocking_tail, req);
                        pthread_mutex_unlock(&s->lock);
                        return;
                }
                s->blocking_threads++;
                pthread_mutex_unlock(&s->lock);

                pthread_attr_init(&attr);
                pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
                r = pthread_create(&t, &attr, blocking_thread, req);
                pthread_attr_destroy(&attr);
                if (r == 0)
                        return;

                pthread_mutex_lock(&s->lock);
                s->blocking_threads--;
                if (s->blocking_threads > 0) {
                        /* One of those takes it when its call is done. */
                        enqueue(&s->blocking_head, &s->blocking_tail, req);
                        pthread_mutex_unlock(&s->lock);
                        return;
                }
                /* No thread to be had at all: the pool takes it, later rather than never. */
        }
        enqueue(&s->queue_head, &s->queue_tail, req);
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
}

static void *acceptor(void *userdata) {
        RpcServer *s = userdata;

        for (;;) {
                grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
                Request *req;
                bool stopping;

                if (ev.type == GRPC_QUEUE_SHUTDOWN)
                        return NULL;
                if (ev.type != GRPC_OP_COMPLETE)
                        continue;
                if (ev.tag == &shutdown_tag) {
                        pthread_mutex_lock(&s->lock);
                        s->shutdown_notified = true;
                        pthread_cond_broadcast(&s->changed);
                        pthread_mutex_unlock(&s->lock);
                        continue;
                }

                req = ev.tag;
                if (!ev.success) {
                        /* The server is shutting down: the request is withdrawn. */
                        request_free(req);
                        continue;
                }
                pthread_mutex_lock(&s->lock);
                stopping = s->shutdown_started;
                pthread_mutex_unlock(&s->lock);
                if (!stopping)
                        (void) request_arm(s, req->method);
                dispatch(s, req);
        }
}

int rpc_server_start(RpcServer *s) {
        int r;

        if (s->started)
                return -EBUSY;
        grpc_server_start(s->server);
        s->started = true;

        /* On failure, whatever was set up is taken down by rpc_server_free(). */
        for (size_t i = 0; i < s->n_methods; i++)
                for (unsigned k = 0; k < REQUESTS_PER_METHOD; k++) {
                        r = request_arm(s, s->methods[i]);
                        if (r < 0)
                                return r;
                }
        r = request_arm(s, NULL);
        if (r < 0)
                return r;

        s->workers = new0(pthread_t, s->threads);
        if (!s->workers)
                return -ENOMEM;
        for (; s->n_workers < s->threads; s->n_workers++) {
                r = -pthread_create(&s->workers[s->n_workers], NULL, worker, s);
                if (r < 0)
                        return r;
        }
        r = -pthread_create(&s->acceptor, NULL, acceptor, s);
        if (r < 0)
                return r;
        s->acceptor_running = true;
        return 0;
}

/* Without the acceptor: takes the events off the notification queue, up to the shutdown
 * notification or (queue_end) up to the queue's end. No call was dispatched, so every request here
 * is either withdrawn or a call nobody serves; freeing it cancels the call. */
static void drain(RpcServer *s, bool queue_end) {
        for (;;) {
                grpc_event ev = grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);

                if (ev.type == GRPC_QUEUE_SHUTDOWN)
                        return;
                if (ev.type != GRPC_OP_COMPLETE)
                        continue;
                if (ev.tag == &shutdown_tag) {
                        s->shutdown_notified = true;
                        if (!queue_end)
                                return;
                        continue;
                }
                request_free(ev.tag);
        }
}

static struct timespec deadline_after(usec_t t) {
        struct timespec until;

        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_sec += (time_t) (t / USEC_PER_SEC);
        until.tv_nsec += (long) (t % USEC_PER_SEC) * 1000L;
        if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
        }
        return until;
}

/* Until all dispatched calls are finished; after grace, cancels them, and after cancel_wait more
 * gives up (-ETIMEDOUT). */
static int wait_for_calls(RpcServer *s, usec_t grace, usec_t cancel_wait) {
        struct timespec until = deadline_after(grace == USEC_INFINITY ? 0 : grace);
        bool cancelled = false;
        int r = 0;

        pthread_mutex_lock(&s->lock);
        while (!s->shutdown_notified || s->active > 0) {
                usec_t limit = cancelled ? cancel_wait : grace;

                if (limit == USEC_INFINITY) {
                        pthread_cond_wait(&s->changed, &s->lock);
                        continue;
                }
                if (pthread_cond_timedwait(&s->changed, &s->lock, &until) != ETIMEDOUT)
                        continue;
                if (cancelled) {
                        r = -ETIMEDOUT;
                        break;
                }
                cancelled = true;
                pthread_mutex_unlock(&s->lock);
                /* Their sends fail now; handlers that send, or look at rpc_call_cancelled(),
                 * return. */
                grpc_server_cancel_all_calls(s->server);
                pthread_mutex_lock(&s->lock);
                until = deadline_after(cancel_wait == USEC_INFINITY ? 0 : cancel_wait);
        }
        pthread_mutex_unlock(&s->lock);
        return r;
}

int rpc_server_shutdown(RpcServer *s, usec_t grace, usec_t cancel_wait) {
        int r;

        if (s->stopped)
                return 0;

        pthread_mutex_lock(&s->lock);
        s->shutdown_started = true;
        pthread_mutex_unlock(&s->lock);
        if (!s->shutdown_requested) {
                grpc_server_shutdown_and_notify(s->server, s->cq, &shutdown_tag);
                s->shutdown_requested = true;
        }

        if (s->acceptor_running) {
                r = wait_for_calls(s, grace, cancel_wait);
                if (r < 0)
                        return r; /* handlers still run on the workers: nothing below may go */
        } else {
                /* Never started, or rpc_server_start() failed half way: nothing was dispatched. */
                grpc_server_cancel_all_calls(s->server);
                drain(s, false);
        }

        pthread_mutex_lock(&s->lock);
        s->workers_stop = true;
        pthread_cond_broadcast(&s->changed);
        pthread_mutex_unlock(&s->lock);
        for (unsigned i = 0; i < s->n_workers; i++)
                pthread_join(s->workers[i], NULL);

        if (s->acceptor_running) {
                /* The acceptor frees what is left on the queue and returns at its end. */
                grpc_completion_queue_shutdown(s->cq);
                s->cq_shut = true;
                pthread_join(s->acceptor, NULL);
        }
        s->stopped = true;
        return 0;
}

RpcServer *rpc_server_free(RpcServer *s) {
        if (!s)
                return NULL;
        (void) rpc_server_shutdown(s, 0, USEC_INFINITY);
        grpc_server_destroy(s->server);
        if (!s->cq_shut) {
                grpc_completion_queue_shutdown(s->cq);
                drain(s, true);
        }
        grpc_completion_queue_destroy(s->cq);
        for (size_t i = 0; i < s->n_methods; i++) {
                free(s->methods[i]->path);
                free(s->methods[i]);
        }
        free(s->methods);
        for (size_t i = 0; i < s->n_unix_paths; i++) {
                (void) unlink(s->unix_paths[i]);
                free(s->unix_paths[i]);
        }
        free(s->workers);
        pthread_cond_destroy(&s->changed);
        pthread_mutex_destroy(&s->lock);
        free(s);
        rpc_grpc_unref();
        return NULL;
}
