/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * mod_tonari: per-request resource domains for Apache 2.4 (mod_tonari(8), seed 003).
 *
 * Configuration time (the parent, as root): TonariDomain defines domains, TonariDomainMap loads
 * the host → domain map, and post_config prepares the server's delegated cgroup and creates and
 * limits one cgroup per domain with libtonari (tonari/domain.h). Request time (the children, as
 * the server's user): a request whose host is mapped, or whose VirtualHost/Directory/Location/
 * Files/If section says TonariDomainEnter, enters its domain as soon as that is known (one write to
 * a file the parent opened), and leaves it when its response ends (an output filter sees EOS) or,
 * at the latest, when its pool is cleaned up (aborted connections, errors). CGI programs that
 * mod_cgi forks meanwhile start, and stay, in the domain. With TonariDomainStay unlimited (the
 * default), the worker stays in a domain without limits after the request: the next request in
 * the same domain needs no move, one in another domain one move, one in none one move home (at
 * fixups, before its handler). A worker leaves a limited domain at the end of every request.
 *
 * Apache's and libtonari's headers only: src/basic's macros would clash with APR's.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Apache's ap_config_auto.h defines these too; tonari's config.h comes first on the command line. */
#undef PACKAGE_BUGREPORT
#undef PACKAGE_NAME
#undef PACKAGE_STRING
#undef PACKAGE_TARNAME
#undef PACKAGE_URL
#undef PACKAGE_VERSION

#include "ap_mpm.h"
#include "apr_strings.h"
#include "http_config.h"
#include "http_core.h"
#include "http_log.h"
#include "http_protocol.h"
#include "http_request.h"
#include "httpd.h"
#include "util_filter.h"

#include <tonari/domain.h>

#include "mod-tonari-util.h"

/* The one symbol Apache looks up (LoadModule tonari_module ...); tonari builds with hidden
 * visibility. */
extern module AP_MODULE_DECLARE_DATA __attribute__((visibility("default"))) tonari_module;

#define LEAVE_FILTER "TONARI_LEAVE"
/* Process pool userdata: the text of the last map that loaded, kept across configuration reloads
 * (the module itself is unloaded and loaded again on each one). */
#define MAP_KEEP_KEY "mod_tonari-last-good-map"

typedef enum FailMode { FAIL_UNSET = -1, FAIL_OPEN = 0, FAIL_CLOSED = 1 } FailMode;

typedef struct DomainProperty {
        TonariProperty property;
        const char *value;
} DomainProperty;

typedef struct DomainConf {
        const char *name;
        const char *file;
        unsigned line;
        apr_array_header_t *properties; /* DomainProperty */
        uint32_t max_requests;          /* 0: no cap */
        int limited;                    /* has a limit on its cgroup (tonari_property_limits_cgroup()) */
        int stays;                      /* post_config: domain_may_stay() */
        TonariDomain *domain;           /* opened by post_config; NULL if not (fail-open) */
} DomainConf;

/* The main server's configuration; virtual hosts use the main server's domains and map. */
typedef struct ServerConf {
        apr_array_header_t *domains; /* DomainConf */
        apr_hash_t *by_name;         /* name → int index + 1 (so that 0 is "none") */
        const char *map_path;
        DomainMap *map;
        const char *map_warning;     /* a bad map at a reload, the kept one in use: for post_config */
        FailMode fail_mode;
        int stay;                    /* DomainStay, or -1: unset (unlimited) */
        const char *cgroup;          /* TonariCgroup; NULL: the parent's own cgroup */
        /* Set by post_config: */
        int enabled;
        int threaded;
        uint32_t *active;            /* shared (MAP_SHARED) counters of requests per domain */
        size_t active_size;
} ServerConf;

/* Index into the domains, or one of these. */
#define DOMAIN_UNSET (-1)
#define DOMAIN_NONE (-2)

typedef struct DirConf {
        int domain;
} DirConf;

typedef struct RequestState {
        request_rec *r;
        ServerConf *conf;
        int domain;        /* index, or DOMAIN_UNSET when in none */
        pid_t tid;         /* the thread (or process) that entered */
        int counted;       /* holds one of conf->active[domain] */
        uint64_t cpu_start_nsec;
        uint64_t children_start_usec;
        uint64_t io_start_bytes;
} RequestState;

static ServerConf *main_conf = NULL;
/* Logged once per process. */
static int enter_failure_logged = 0;
/* Where this worker (prefork: the process; threaded MPMs: the thread) is: a domain's index, or
 * SEAT_HOME (the server's cgroup, where every worker starts: the parent never enters a domain). */
static __thread int seat = SEAT_HOME;

static void *create_server_config(apr_pool_t *p, server_rec *s) {
        ServerConf *c = apr_pcalloc(p, sizeof(ServerConf));

        c->domains = apr_array_make(p, 16, sizeof(DomainConf));
        c->by_name = apr_hash_make(p);
        c->fail_mode = FAIL_UNSET;
        c->stay = -1;
        if (!s->is_virtual)
                main_conf = c;
        return c;
}

static void *create_dir_config(apr_pool_t *p, char *dir) {
        DirConf *c = apr_pcalloc(p, sizeof(DirConf));

        (void) dir;
        c->domain = DOMAIN_UNSET;
        return c;
}

static void *merge_dir_config(apr_pool_t *p, void *basev, void *addv) {
        DirConf *base = basev, *add = addv, *c = apr_pcalloc(p, sizeof(DirConf));

        c->domain = add->domain != DOMAIN_UNSET ? add->domain : base->domain;
        return c;
}

static int find_domain(const char *name, void *userdata) {
        ServerConf *c = userdata;
        intptr_t v = (intptr_t) apr_hash_get(c->by_name, name, APR_HASH_KEY_STRING);

        return v > 0 ? (int) (v - 1) : -1;
}

/* An error message from a pure parser (malloc'ed) as a configuration error (pool-allocated). */
static const char *conf_error(cmd_parms *cmd, char *msg, const char *fallback) {
        const char *m = apr_pstrdup(cmd->pool, msg ? msg : fallback);

        free(msg);
        return m;
}

/* TonariDomain NAME [PROPERTY=VALUE]... */
static const char *cmd_domain(cmd_parms *cmd, void *dummy, int argc, char *const argv[]) {
        const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
        DomainConf *d;
        char *msg = NULL;
        int existing;

        (void) dummy;
        if (err)
                return err;
        if (argc < 1)
                return "TonariDomain needs a name, then properties such as CPUQuota=50%";
        if (tonari_domain_name_check(argv[0], &msg) < 0)
                return conf_error(cmd, msg, "Invalid domain name");
        existing = find_domain(argv[0], main_conf);
        if (existing >= 0) {
                DomainConf *o = &APR_ARRAY_IDX(main_conf->domains, existing, DomainConf);
                return apr_psprintf(cmd->pool, "Domain '%s' is defined already, on line %u of %s", argv[0],
                                    o->line, o->file);
        }

        d = apr_array_push(main_conf->domains);
        memset(d, 0, sizeof(*d));
        d->name = apr_pstrdup(cmd->pool, argv[0]);
        d->file = cmd->directive->filename;
        d->line = cmd->directive->line_num;
        d->properties = apr_array_make(cmd->pool, argc, sizeof(DomainProperty));
        for (int i = 1; i < argc; i++) {
                DomainProperty *p = apr_array_push(d->properties);
                uint64_t number;

                if (tonari_property_parse(argv[i], &p->property, &p->value, &number, &msg) < 0) {
                        main_conf->domains->nelts--;
                        return conf_error(cmd, msg, "Invalid domain property");
                }
                if (p->property == TONARI_PROP_MAX_REQUESTS) {
                        d->max_requests = (uint32_t) number;
                        d->properties->nelts--;
                } else if (tonari_property_limits_cgroup(p->property))
                        d->limited = 1;
        }
        apr_hash_set(main_conf->by_name, d->name, APR_HASH_KEY_STRING,
                     (void *) (intptr_t) main_conf->domains->nelts);
        return NULL;
}

/* TonariDomainEnter NAME|none */
static const char *cmd_domain_enter(cmd_parms *cmd, void *dirconf, const char *name) {
        DirConf *c = dirconf;
        int i;

        if (strcmp(name, "none") == 0) {
                c->domain = DOMAIN_NONE;
                return NULL;
        }
        i = find_domain(name, main_conf);
        if (i < 0)
                return apr_psprintf(cmd->pool,
                                    "Unknown domain '%s': define it with TonariDomain (before this line)", name);
        c->domain = i;
        return NULL;
}

static int read_text(apr_pool_t *p, const char *path, char **ret, apr_size_t *ret_size) {
        apr_file_t *f;
        apr_finfo_t fi;
        apr_status_t rv;
        apr_size_t n;
        char *buf;

        rv = apr_file_open(&f, path, APR_FOPEN_READ | APR_FOPEN_BINARY, 0, p);
        if (rv != APR_SUCCESS)
                return rv;
        rv = apr_file_info_get(&fi, APR_FINFO_SIZE, f);
        if (rv != APR_SUCCESS)
                return rv;
        n = (apr_size_t) fi.size;
        buf = apr_palloc(p, n + 1);
        if (n > 0) {
                rv = apr_file_read_full(f, buf, n, &n);
                if (rv != APR_SUCCESS && rv != APR_EOF)
                        return rv;
        }
        buf[n] = 0;
        apr_file_close(f);
        *ret = buf;
        *ret_size = n;
        return APR_SUCCESS;
}

static apr_status_t map_cleanup(void *data) {
        domain_map_free(data);
        return APR_SUCCESS;
}

/* Remembers text as the last good map, in a pool of its own below the process pool (it outlives
 * this configuration; no cleanup function of ours may run there: the module is unloaded first). */
static void keep_map_text(process_rec *proc, const char *text, apr_size_t size) {
        apr_pool_t *old = NULL, *keep;

        if (apr_pool_create(&keep, proc->pool) != APR_SUCCESS)
                return;
        /* _set(), not _setn(): the keys must be copies, the literals are in the module's image,
         * which is unmapped at a reload (and may come back at another address). */
        apr_pool_userdata_set(apr_pstrmemdup(keep, text, size), MAP_KEEP_KEY, NULL, keep);
        apr_pool_userdata_get((void **) &old, MAP_KEEP_KEY "-pool", proc->pool);
        if (old)
                apr_pool_destroy(old);
        apr_pool_userdata_set(keep, MAP_KEEP_KEY "-pool", NULL, proc->pool);
}

/* The text keep_map_text() kept, or NULL. */
static const char *kept_map_text(process_rec *proc) {
        apr_pool_t *keep = NULL;
        const char *text = NULL;

        apr_pool_userdata_get((void **) &keep, MAP_KEEP_KEY "-pool", proc->pool);
        if (keep)
                apr_pool_userdata_get((void **) &text, MAP_KEEP_KEY, keep);
        return text;
}

/* TonariDomainMap FILE */
static const char *cmd_domain_map(cmd_parms *cmd, void *dummy, const char *path) {
        const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY), *resolved;
        char *text, *msg = NULL;
        const char *kept;
        apr_size_t size;
        unsigned line = 0;
        DomainMap *m = NULL;
        apr_status_t rv;
        int r;

        (void) dummy;
        if (err)
                return err;
        if (main_conf->map_path)
                return "TonariDomainMap may be given once";
        resolved = ap_server_root_relative(cmd->pool, path);
        if (!resolved)
                return apr_psprintf(cmd->pool, "Invalid map path '%s'", path);
        rv = read_text(cmd->temp_pool, resolved, &text, &size);
        if (rv != APR_SUCCESS) {
                char e[128];
                return apr_psprintf(cmd->pool, "Cannot read map '%s': %s", resolved,
                                    apr_strerror(rv, e, sizeof(e)));
        }
        r = domain_map_parse(text, size, find_domain, main_conf, &m, &line, &msg);
        if (r < 0) {
                const char *why = apr_psprintf(cmd->temp_pool, "%s:%u: %s", resolved, line,
                                               msg ? msg : "out of memory");
                free(msg);
                /* A reload with a broken map keeps the map that loaded last (if its domains still
                 * exist); only a first start, or a configtest, fails. */
                kept = kept_map_text(cmd->server->process);
                if (!kept || domain_map_parse(kept, strlen(kept), find_domain, main_conf, &m, NULL, NULL) < 0)
                        return apr_psprintf(cmd->pool, "Bad map %s", why);
                /* Logged by post_config: the error log is not open while the configuration is read. */
                main_conf->map_warning = apr_psprintf(
                        cmd->pool, "mod_tonari: bad map %s; keeping the map loaded before (%" APR_SIZE_T_FMT " hosts)",
                        why, domain_map_size(m));
        } else
                keep_map_text(cmd->server->process, text, size);

        apr_pool_cleanup_register(cmd->pool, m, map_cleanup, apr_pool_cleanup_null);
        main_conf->map = m;
        main_conf->map_path = resolved;
        return NULL;
}

static const char *cmd_fail_mode(cmd_parms *cmd, void *dummy, const char *mode) {
        const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

        (void) dummy;
        if (err)
                return err;
        if (strcmp(mode, "open") == 0)
                main_conf->fail_mode = FAIL_OPEN;
        else if (strcmp(mode, "closed") == 0)
                main_conf->fail_mode = FAIL_CLOSED;
        else
                return apr_psprintf(cmd->pool, "Invalid TonariFailMode '%s': expected open or closed", mode);
        return NULL;
}

static const char *cmd_stay(cmd_parms *cmd, void *dummy, const char *value) {
        const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);
        int v;

        (void) dummy;
        if (err)
                return err;
        v = domain_stay_from_string(value);
        if (v < 0)
                return apr_psprintf(cmd->pool, "Invalid TonariDomainStay '%s': expected unlimited or never", value);
        main_conf->stay = v;
        return NULL;
}

static const char *cmd_cgroup(cmd_parms *cmd, void *dummy, const char *path) {
        const char *err = ap_check_cmd_context(cmd, GLOBAL_ONLY);

        (void) dummy;
        if (err)
                return err;
        if (path[0] != '/')
                return apr_psprintf(cmd->pool, "Invalid TonariCgroup '%s': expected an absolute path", path);
        main_conf->cgroup = apr_pstrdup(cmd->pool, path);
        return NULL;
}

static const command_rec tonari_cmds[] = {
        AP_INIT_TAKE_ARGV("TonariDomain", cmd_domain, NULL, RSRC_CONF,
                          "a domain name, then its limits: CPUQuota=, CPUWeight=, TasksMax=, "
                          "IOReadBandwidthMax=, IOWriteBandwidthMax=, MaxRequests="),
        AP_INIT_TAKE1("TonariDomainEnter", cmd_domain_enter, NULL, RSRC_CONF | ACCESS_CONF,
                      "the domain requests here run in, or 'none'"),
        AP_INIT_TAKE1("TonariDomainMap", cmd_domain_map, NULL, RSRC_CONF,
                      "a file of 'HOST DOMAIN' lines"),
        AP_INIT_TAKE1("TonariFailMode", cmd_fail_mode, NULL, RSRC_CONF,
                      "open (serve without domains) or closed (refuse) when domains cannot work"),
        AP_INIT_TAKE1("TonariDomainStay", cmd_stay, NULL, RSRC_CONF,
                      "unlimited (a worker stays in a domain without limits after a request) or never"),
        AP_INIT_TAKE1("TonariCgroup", cmd_cgroup, NULL, RSRC_CONF,
                      "the delegated cgroup v2 directory (default: the server's own cgroup)"),
        { NULL },
};

/* The parent's cgroup directory, from /proc/self/cgroup's "0::/PATH", without a trailing _home or
 * _threads/_home (where tonari_domain_prepare() put the parent at an earlier pass or start: the
 * first pass of a start with TonariFailMode closed, or before a reload). */
static const char *own_cgroup(apr_pool_t *p) {
        char line[4096], *path = NULL, *end;
        FILE *f = fopen("/proc/self/cgroup", "re");

        if (!f)
                return NULL;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "0::/", 4) == 0) {
                        line[strcspn(line, "\n")] = 0;
                        path = apr_pstrcat(p, "/sys/fs/cgroup", strcmp(line + 3, "/") == 0 ? "" : line + 3, NULL);
                        break;
                }
        fclose(f);
        if (!path)
                return NULL;
        /* Hybrid hierarchies mount cgroup2 at /sys/fs/cgroup/unified. */
        if (access("/sys/fs/cgroup/cgroup.controllers", F_OK) < 0 &&
            access("/sys/fs/cgroup/unified/cgroup.controllers", F_OK) >= 0)
                path = apr_pstrcat(p, "/sys/fs/cgroup/unified", path + strlen("/sys/fs/cgroup"), NULL);
        if ((end = strrchr(path, '/')) && strcmp(end + 1, TONARI_DOMAIN_HOME) == 0) {
                *end = 0;
                if ((end = strrchr(path, '/')) && strcmp(end + 1, TONARI_DOMAIN_THREADS) == 0)
                        *end = 0;
        }
        return path;
}

static apr_status_t domains_cleanup(void *data) {
        ServerConf *c = data;

        for (int i = 0; i < c->domains->nelts; i++) {
                DomainConf *d = &APR_ARRAY_IDX(c->domains, i, DomainConf);
                d->domain = tonari_domain_close(d->domain);
        }
        if (c->active)
                munmap(c->active, c->active_size);
        c->active = NULL;
        return APR_SUCCESS;
}

/* Fail-open: log, serve without domains. Fail-closed: log, refuse to start. */
static int domains_failed(ServerConf *c, server_rec *s, int r, const char *what) {
        if (c->fail_mode == FAIL_CLOSED) {
                ap_log_error(APLOG_MARK, APLOG_CRIT, 0, s, "mod_tonari: %s: %s; TonariFailMode closed: not starting",
                             what, strerror(-r));
                return HTTP_INTERNAL_SERVER_ERROR;
        }
        ap_log_error(APLOG_MARK, APLOG_ERR, 0, s,
                     "mod_tonari: %s: %s; TonariFailMode open: serving every request without domains", what,
                     strerror(-r));
        c->enabled = 0;
        return OK;
}

/* A threaded MPM's domain with an IO limit: domains_failed(), naming the directive. */
static int io_on_thread_failed(ServerConf *c, server_rec *s, apr_pool_t *ptemp, const DomainConf *d,
                               const char *name) {
        return domains_failed(c, s, -EOPNOTSUPP,
                              apr_psprintf(ptemp,
                                           "%s= of domain '%s' (%s:%u): a threaded MPM moves threads, and IO limits "
                                           "cannot be put on a thread (only on the whole server, its tenant)",
                                           name, d->name, d->file, d->line));
}

/* The first IO limit of a domain (threaded MPMs refuse them), or NULL. */
static const char *domain_io_property(const DomainConf *d) {
        for (int j = 0; j < d->properties->nelts; j++) {
                const DomainProperty *p = &APR_ARRAY_IDX(d->properties, j, DomainProperty);

                if (p->property == TONARI_PROP_IO_READ_BANDWIDTH_MAX ||
                    p->property == TONARI_PROP_IO_WRITE_BANDWIDTH_MAX)
                        return tonari_property_to_string(p->property);
        }
        return NULL;
}

static int tonari_post_config(apr_pool_t *pconf, apr_pool_t *plog, apr_pool_t *ptemp, server_rec *s) {
        ServerConf *c = ap_get_module_config(s->module_config, &tonari_module);
        const char *root;
        unsigned flags;
        int threaded = 0, r;

        (void) plog;
        /* The first of the two configuration passes at start-up runs before Apache detaches: with
         * TonariFailMode closed it checks the cgroup there, so that the start fails visibly (to
         * apachectl and systemd); otherwise it leaves everything to the second pass, which serves
         * and logs once. */
        if (ap_state_query(AP_SQ_MAIN_STATE) == AP_SQ_MS_CREATE_PRE_CONFIG) {
                if (c->fail_mode != FAIL_CLOSED || c->domains->nelts == 0)
                        return OK;
                if (ap_mpm_query(AP_MPMQ_IS_THREADED, &threaded) != APR_SUCCESS)
                        threaded = 0;
                /* Known before any cgroup is touched: refused here, the start fails visibly. */
                for (int i = 0; threaded != AP_MPMQ_NOT_SUPPORTED && i < c->domains->nelts; i++) {
                        const DomainConf *d = &APR_ARRAY_IDX(c->domains, i, DomainConf);
                        const char *io = domain_io_property(d);

                        if (io)
                                return io_on_thread_failed(c, s, ptemp, d, io);
                }
                root = c->cgroup ? c->cgroup : own_cgroup(ptemp);
                r = root ? tonari_domain_prepare(root, threaded != AP_MPMQ_NOT_SUPPORTED ? TONARI_DOMAIN_THREADED : 0)
                         : -ENOENT;
                if (r < 0)
                        return domains_failed(c, s, r,
                                              apr_psprintf(ptemp,
                                                           "cannot prepare cgroup '%s' for domains (needs cgroup "
                                                           "v2, delegated: Delegate=yes in apache2.service)",
                                                           root ? root : "?"));
                return OK;
        }
        if (c->map_warning)
                ap_log_error(APLOG_MARK, APLOG_ERR, 0, s, "%s", c->map_warning);
        if (c->fail_mode == FAIL_UNSET)
                c->fail_mode = FAIL_OPEN;
        if (c->stay < 0)
                c->stay = DOMAIN_STAY_UNLIMITED;
        c->enabled = 0;
        if (c->domains->nelts == 0)
                return OK;
        apr_pool_cleanup_register(pconf, c, domains_cleanup, apr_pool_cleanup_null);

        if (ap_mpm_query(AP_MPMQ_IS_THREADED, &threaded) != APR_SUCCESS)
                threaded = 0;
        c->threaded = threaded != AP_MPMQ_NOT_SUPPORTED;
        flags = c->threaded ? TONARI_DOMAIN_THREADED : 0;

        root = c->cgroup ? c->cgroup : own_cgroup(ptemp);
        if (!root)
                return domains_failed(c, s, -ENOENT, "cannot find the server's cgroup in /proc/self/cgroup");
        r = tonari_domain_prepare(root, flags);
        if (r < 0)
                return domains_failed(c, s, r,
                                      apr_psprintf(ptemp,
                                                   "cannot prepare cgroup '%s' for domains (needs cgroup v2, "
                                                   "delegated: Delegate=yes in apache2.service)",
                                                   root));

        for (int i = 0; i < c->domains->nelts; i++) {
                DomainConf *d = &APR_ARRAY_IDX(c->domains, i, DomainConf);

                d->stays = domain_may_stay(c->stay, d->limited);
                r = tonari_domain_open(root, d->name, flags | TONARI_DOMAIN_CREATE, &d->domain);
                if (r < 0)
                        return domains_failed(c, s, r, apr_psprintf(ptemp, "cannot create domain '%s' in '%s'",
                                                                    d->name, root));
                for (int j = 0; j < d->properties->nelts; j++) {
                        DomainProperty *p = &APR_ARRAY_IDX(d->properties, j, DomainProperty);
                        const char *name = tonari_property_to_string(p->property);

                        r = tonari_domain_set(d->domain, name, p->value);
                        if (r == -EOPNOTSUPP && c->threaded)
                                return io_on_thread_failed(c, s, ptemp, d, name);
                        if (r < 0)
                                return domains_failed(c, s, r,
                                                      apr_psprintf(ptemp, "cannot set %s=%s of domain '%s' (%s:%u)",
                                                                   name, p->value, d->name, d->file, d->line));
                }
        }

        c->active_size = sizeof(uint32_t) * (size_t) c->domains->nelts;
        c->active = mmap(NULL, c->active_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (c->active == MAP_FAILED) {
                c->active = NULL;
                return domains_failed(c, s, -errno, "cannot map the request counters");
        }
        c->enabled = 1;
        ap_log_error(APLOG_MARK, APLOG_NOTICE, 0, s,
                     "mod_tonari: %d domains in '%s' (%s), %" APR_SIZE_T_FMT " hosts mapped%s%s; TonariDomainStay %s",
                     c->domains->nelts, root, c->threaded ? "threads move" : "processes move", domain_map_size(c->map),
                     c->map_path ? " from " : "", c->map_path ? c->map_path : "", domain_stay_to_string(c->stay));
        return OK;
}

static uint64_t thread_cpu_nsec(void) {
        struct timespec ts;

        if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
                return 0;
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static uint64_t timeval_usec(const struct timeval *tv) {
        return (uint64_t) tv->tv_sec * 1000000u + (uint64_t) tv->tv_usec;
}

/* The CPU time (µs) and storage I/O (bytes) of the children reaped so far and of this process
 * (prefork), or of this thread (threaded MPMs). getrusage()'s block counts are the kernel's
 * read_bytes and write_bytes (what io.max limits) in 512-byte units; /proc/self/io cannot be read
 * once Apache dropped its privileges (the process is no longer dumpable, its /proc files root's). */
static void usage_now(int threaded, uint64_t *ret_children_cpu_usec, uint64_t *ret_io_bytes) {
        struct rusage ru;
        uint64_t blocks = 0;

        *ret_children_cpu_usec = 0;
        if (threaded) {
                if (getrusage(RUSAGE_THREAD, &ru) == 0)
                        blocks = (uint64_t) ru.ru_inblock + (uint64_t) ru.ru_oublock;
        } else {
                if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
                        *ret_children_cpu_usec = timeval_usec(&ru.ru_utime) + timeval_usec(&ru.ru_stime);
                        blocks = (uint64_t) ru.ru_inblock + (uint64_t) ru.ru_oublock;
                }
                if (getrusage(RUSAGE_SELF, &ru) == 0)
                        blocks += (uint64_t) ru.ru_inblock + (uint64_t) ru.ru_oublock;
        }
        *ret_io_bytes = blocks * 512;
}

/* Milliseconds. How long the end of a request waits for its CGI program to become a zombie after
 * it closed its output (its exit is under way): long enough for an exit on a loaded machine,
 * short next to a request; a program that goes on running after closing its output costs the
 * request this much once. */
#define CHILD_EXIT_WAIT_MSEC 20

/* Reaps the children (CGI programs) that exited, so that their CPU time and I/O count for this
 * request: the kernel adds them to RUSAGE_CHILDREN and /proc/self/io when a child is reaped, and
 * mod_cgi reaps only after the log line is written (its apr_proc_wait() then sees ECHILD and
 * counts the program as done). A zombie's /proc/PID/io is root's, so it cannot be read instead. */
static void reap_children(void) {
        for (int i = 0;;) {
                siginfo_t si;

                memset(&si, 0, sizeof(si));
                /* ECHILD: no children (left). */
                if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG) < 0)
                        return;
                if (si.si_pid > 0)
                        continue;
                if (i++ >= CHILD_EXIT_WAIT_MSEC)
                        return;
                usleep(1000);
        }
}

static void request_leave(RequestState *st, request_rec *log_r) {
        DomainConf *d;
        uint64_t cpu_usec, io_bytes, children_usec;
        int r;

        if (st->domain < 0)
                return;
        d = &APR_ARRAY_IDX(st->conf->domains, st->domain, DomainConf);

        cpu_usec = (thread_cpu_nsec() - st->cpu_start_nsec) / 1000;
        if (!st->conf->threaded)
                reap_children();
        usage_now(st->conf->threaded, &children_usec, &io_bytes);
        cpu_usec += children_usec - st->children_start_usec;
        io_bytes -= st->io_start_bytes;

        /* A domain to stay in: the worker stays (until a request needs another cgroup); if this
         * runs in another thread, that worker is left alone too. */
        r = 0;
        if (!d->stays) {
                if (gettid() == st->tid) {
                        r = tonari_domain_leave(d->domain);
                        if (r >= 0)
                                seat = SEAT_HOME;
                } else
                        r = tonari_domain_leave_pid(d->domain, st->tid);
        }
        if (r < 0)
                ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, st->r, "mod_tonari: cannot leave domain '%s': %s", d->name,
                              strerror(-r));
        if (st->counted)
                __atomic_sub_fetch(&st->conf->active[st->domain], 1, __ATOMIC_RELAXED);
        st->counted = 0;

        if (log_r) {
                const char *cpu = apr_psprintf(st->r->pool, "%" PRIu64, cpu_usec);
                const char *io = apr_psprintf(st->r->pool, "%" PRIu64, io_bytes);

                for (request_rec *x = log_r; x; x = x == st->r ? NULL : st->r) {
                        apr_table_setn(x->notes, "tonari-cpu-us", cpu);
                        apr_table_setn(x->notes, "tonari-io-bytes", io);
                        apr_table_setn(x->notes, "tonari-domain", d->name);
                }
        }
        st->domain = DOMAIN_UNSET;
}

/* Moves this worker back to the server's cgroup if it stayed in a domain after an earlier request:
 * a request in no domain runs there. */
static void seat_go_home(ServerConf *c, request_rec *r) {
        DomainConf *d;
        int k;

        if (seat == SEAT_HOME || seat >= c->domains->nelts)
                return;
        d = &APR_ARRAY_IDX(c->domains, seat, DomainConf);
        if (!d->domain)
                return;
        k = tonari_domain_leave(d->domain);
        if (k < 0) {
                ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "mod_tonari: cannot leave domain '%s': %s", d->name,
                              strerror(-k));
                return;
        }
        seat = SEAT_HOME;
}

static apr_status_t request_cleanup(void *data) {
        RequestState *st = data;

        /* The response did not end through the filter (aborted, or an error on the way). */
        request_leave(st, NULL);
        return APR_SUCCESS;
}

/* Moves the request into domain i. Returns OK, or an HTTP status to refuse it with. */
static int request_enter(request_rec *r, ServerConf *c, int i) {
        RequestState *st = ap_get_module_config(r->request_config, &tonari_module);
        DomainConf *d = &APR_ARRAY_IDX(c->domains, i, DomainConf);
        int r2;

        if (st && st->domain == i)
                return OK;
        if (st)
                request_leave(st, NULL);
        else {
                st = apr_pcalloc(r->pool, sizeof(RequestState));
                st->r = r;
                st->conf = c;
                st->domain = DOMAIN_UNSET;
                ap_set_module_config(r->request_config, &tonari_module, st);
                apr_pool_cleanup_register(r->pool, st, request_cleanup, apr_pool_cleanup_null);
                ap_add_output_filter(LEAVE_FILTER, st, r, r->connection);
        }
        if (!d->domain)
                return OK;

        if (d->max_requests > 0) {
                if (__atomic_add_fetch(&c->active[i], 1, __ATOMIC_RELAXED) > d->max_requests) {
                        __atomic_sub_fetch(&c->active[i], 1, __ATOMIC_RELAXED);
                        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                                      "mod_tonari: domain '%s' has MaxRequests=%u requests running, refusing",
                                      d->name, d->max_requests);
                        return HTTP_SERVICE_UNAVAILABLE;
                }
                st->counted = 1;
        }

        st->tid = gettid();
        st->cpu_start_nsec = thread_cpu_nsec();
        usage_now(c->threaded, &st->children_start_usec, &st->io_start_bytes);

        r2 = seat_needs_move(seat, i, d->stays) ? tonari_domain_enter(d->domain) : 0;
        if (r2 < 0) {
                /* The request runs in the server's cgroup, not in a domain this worker stayed in. */
                seat_go_home(c, r);
                if (st->counted)
                        __atomic_sub_fetch(&c->active[i], 1, __ATOMIC_RELAXED);
                st->counted = 0;
                if (r2 == -EAGAIN) {
                        ap_log_rerror(APLOG_MARK, APLOG_INFO, 0, r,
                                      "mod_tonari: domain '%s' is at its TasksMax=, refusing", d->name);
                        return HTTP_SERVICE_UNAVAILABLE;
                }
                if (!enter_failure_logged || c->fail_mode == FAIL_CLOSED)
                        ap_log_rerror(APLOG_MARK, APLOG_ERR, 0, r, "mod_tonari: cannot enter domain '%s': %s%s",
                                      d->name, strerror(-r2),
                                      c->fail_mode == FAIL_CLOSED ? ""
                                                                  : "; TonariFailMode open: serving without "
                                                                    "domains (logged once per process)");
                enter_failure_logged = 1;
                return c->fail_mode == FAIL_CLOSED ? HTTP_SERVICE_UNAVAILABLE : OK;
        }
        seat = i;
        st->domain = i;
        return OK;
}

static int tonari_post_read_request(request_rec *r) {
        ServerConf *c = main_conf;
        int i;

        if (!c || !c->enabled || !c->map || r->main)
                return DECLINED;
        i = domain_map_lookup(c->map, r->hostname);
        if (i < 0)
                return DECLINED;
        i = request_enter(r, c, i);
        return i == OK ? DECLINED : i;
}

static int tonari_fixups(request_rec *r) {
        DirConf *dc = ap_get_module_config(r->per_dir_config, &tonari_module);
        ServerConf *c = main_conf;
        RequestState *st;
        int rv;

        if (!c || !c->enabled || r->main)
                return DECLINED;
        /* After an internal redirect, the state lives with the first request. */
        while (r->prev)
                r = r->prev;
        if (dc->domain >= 0) {
                rv = request_enter(r, c, dc->domain);
                return rv == OK ? DECLINED : rv;
        }
        st = ap_get_module_config(r->request_config, &tonari_module);
        if (st && dc->domain == DOMAIN_NONE)
                request_leave(st, NULL);
        /* In no domain: the handler (and a CGI program it starts) runs in the server's cgroup,
         * not in a domain this worker stayed in after an earlier request. */
        if (!st || st->domain < 0)
                seat_go_home(c, r);
        return DECLINED;
}

/* Leaves the domain once the response's end (EOS) has gone down the chain, in the thread that
 * produced it, and leaves the request's CPU and I/O in its notes for mod_log_config. */
static apr_status_t leave_filter(ap_filter_t *f, apr_bucket_brigade *bb) {
        RequestState *st = f->ctx;
        int eos = 0;
        apr_status_t rv;

        for (apr_bucket *b = APR_BRIGADE_FIRST(bb); b != APR_BRIGADE_SENTINEL(bb); b = APR_BUCKET_NEXT(b))
                if (APR_BUCKET_IS_EOS(b))
                        eos = 1;
        rv = ap_pass_brigade(f->next, bb);
        if (eos) {
                request_leave(st, f->r);
                ap_remove_output_filter(f);
        }
        return rv;
}

static void register_hooks(apr_pool_t *p) {
        (void) p;
        ap_hook_post_config(tonari_post_config, NULL, NULL, APR_HOOK_MIDDLE);
        ap_hook_post_read_request(tonari_post_read_request, NULL, NULL, APR_HOOK_FIRST);
        ap_hook_fixups(tonari_fixups, NULL, NULL, APR_HOOK_FIRST);
        ap_register_output_filter(LEAVE_FILTER, leave_filter, NULL, AP_FTYPE_PROTOCOL);
}

/* AP_DECLARE_MODULE() declares the module again (it was declared above, for the hooks). */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wredundant-decls"
AP_DECLARE_MODULE(tonari) = {
        STANDARD20_MODULE_STUFF,
        create_dir_config,
        merge_dir_config,
        create_server_config,
        NULL,
        tonari_cmds,
        register_hooks,
        AP_MODULE_FLAG_NONE,
};
#pragma GCC diagnostic pop
