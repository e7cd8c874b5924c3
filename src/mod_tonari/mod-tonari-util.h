/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

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
