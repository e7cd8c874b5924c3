/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * mod_tonari's pure parts, unit-tested without Apache (test-mod-tonari-util): the properties of
 * a TonariDomain directive and the host → domain map file. No I/O, no globals, no logging.
 */

/* Properties of "TonariDomain NAME PROP=VALUE...": systemd's names, plus MaxRequests=. */
typedef enum TonariProperty {
        TONARI_PROP_CPU_QUOTA,              /* CPUQuota=N%           → tonari_domain_set() */
        TONARI_PROP_CPU_WEIGHT,             /* CPUWeight=1..10000    → tonari_domain_set() */
        TONARI_PROP_TASKS_MAX,              /* TasksMax=N|infinity   → tonari_domain_set() */
        TONARI_PROP_IO_READ_BANDWIDTH_MAX,  /* IOReadBandwidthMax=DEV BYTES  → tonari_domain_set() */
        TONARI_PROP_IO_WRITE_BANDWIDTH_MAX, /* IOWriteBandwidthMax=DEV BYTES → tonari_domain_set() */
        TONARI_PROP_MAX_REQUESTS,           /* MaxRequests=N: requests in the domain at once */
        _TONARI_PROP_MAX,
} TonariProperty;

const char *tonari_property_to_string(TonariProperty p);
/* Whether the property is a limit of the domain's cgroup: every one but MaxRequests=, which the
 * module counts itself. */
bool tonari_property_limits_cgroup(TonariProperty p);

/*
 * Parses one "NAME=VALUE" of a TonariDomain directive. On success *ret_property is the property,
 * *ret_value points into assignment at the value (not copied), and for MaxRequests= *ret_number
 * holds N (else UINT64_MAX). Values are checked for syntax only (a device path must be absolute;
 * whether it is a block device is checked when the limit is written). On failure returns -ENOENT
 * (unknown property) or -EINVAL, with *ret_error (if not NULL) quoting the assignment.
 */
int tonari_property_parse(const char *assignment, TonariProperty *ret_property, const char **ret_value,
                          uint64_t *ret_number, char **ret_error);

/* A domain name as libtonari takes it (tonari_domain_open()). */
int tonari_domain_name_check(const char *name, char **ret_error);

/*
 * The host → domain map. The file: one "HOST DOMAIN" per line, separated by spaces or tabs; '#'
 * starts a comment line; empty lines are skipped. HOST: 1..253 characters of a-z 0-9 . - _ (and
 * A-Z, folded to lower case), optionally ":PORT"-free; DOMAIN: a domain name known to resolve().
 * Lookups are O(1): an open-addressing hash table built once.
 */
typedef struct DomainMap DomainMap;

/* Returns the index of a domain name (≥ 0), or a negative value if there is no such domain. */
typedef int (*DomainResolve)(const char *name, void *userdata);

/*
 * Parses text (size bytes, NUL not needed) into a map. On failure returns -EINVAL (a bad line,
 * an unknown domain, a host listed twice) or -ENOMEM, *ret_line (if not NULL) is the 1-based line
 * number at fault (0 for -ENOMEM), and *ret_error (if not NULL) says what is wrong with it.
 */
int domain_map_parse(const char *text, size_t size, DomainResolve resolve, void *userdata, DomainMap **ret,
                     unsigned *ret_line, char **ret_error);
DomainMap *domain_map_free(DomainMap *m);
/* The domain index for host (case-insensitive), or -1. host may be NULL. */
int domain_map_lookup(const DomainMap *m, const char *host);
size_t domain_map_size(const DomainMap *m);

/*
 * Where a worker (a prefork child process, or a threaded MPM's worker thread) sits between
 * requests: TonariDomainStay (mod_tonari(8)).
 */
typedef enum DomainStay {
        DOMAIN_STAY_NEVER,     /* leave every domain at the end of every request: two moves a request */
        DOMAIN_STAY_UNLIMITED, /* stay in a domain without limits after the request (the default) */
        _DOMAIN_STAY_MAX,
} DomainStay;

const char *domain_stay_to_string(DomainStay s);
/* "never" or "unlimited"; -EINVAL for anything else. */
int domain_stay_from_string(const char *s);

/* Whether a worker may stay in a domain after a request in it: only with DOMAIN_STAY_UNLIMITED,
 * and only if the domain has no limit on its cgroup (limited: tonari_property_limits_cgroup() of
 * one of its properties). A worker never carries a limit into the next request, whoever's. The
 * end of a request in a domain that may not be stayed in moves its worker home (from another
 * thread too, when a threaded MPM ends it there); the end of one that may leaves the worker
 * where it is (if it ends in another thread, the worker may be serving its next request). */
bool domain_may_stay(DomainStay policy, bool limited);

/* A worker's seat: the index of the domain it is in, or this: the server's own cgroup (_home). */
#define SEAT_HOME (-1)

/*
 * Whether a worker in seat must move (one write) to run a request in want (a domain index, or
 * SEAT_HOME for none). want_stays: domain_may_stay() of want. No move only when the worker is in
 * want already and want is a domain to stay in (or want and seat are home): a seat that says a
 * limited domain is always written again, so a seat that went stale (a leave from another thread
 * moved the worker home) can never let a request escape its limit.
 */
bool seat_needs_move(int seat, int want, bool want_stays);
