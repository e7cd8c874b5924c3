/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "alloc-util.h"
#include "mod-tonari-util.h"
#include "parse-util.h"
#include "path-util.h"
#include "string-util.h"

/* Hosts are DNS names: at most 253 characters. */
#define HOST_MAX_LEN 253

static const char *const property_names[_TONARI_PROP_MAX] = {
        [TONARI_PROP_CPU_QUOTA] = "CPUQuota",
        [TONARI_PROP_CPU_WEIGHT] = "CPUWeight",
        [TONARI_PROP_TASKS_MAX] = "TasksMax",
        [TONARI_PROP_IO_READ_BANDWIDTH_MAX] = "IOReadBandwidthMax",
        [TONARI_PROP_IO_WRITE_BANDWIDTH_MAX] = "IOWriteBandwidthMax",
        [TONARI_PROP_MAX_REQUESTS] = "MaxRequests",
};

const char *tonari_property_to_string(TonariProperty p) {
        return p >= 0 && p < _TONARI_PROP_MAX ? property_names[p] : NULL;
}

bool tonari_property_limits_cgroup(TonariProperty p) {
        return p != TONARI_PROP_MAX_REQUESTS;
}

static const char *const domain_stay_names[_DOMAIN_STAY_MAX] = {
        [DOMAIN_STAY_NEVER] = "never",
        [DOMAIN_STAY_UNLIMITED] = "unlimited",
};

const char *domain_stay_to_string(DomainStay s) {
        return s >= 0 && s < _DOMAIN_STAY_MAX ? domain_stay_names[s] : NULL;
}

int domain_stay_from_string(const char *s) {
        for (DomainStay i = 0; s && i < _DOMAIN_STAY_MAX; i++)
                if (streq(s, domain_stay_names[i]))
                        return i;
        return -EINVAL;
}

bool domain_may_stay(DomainStay policy, bool limited) {
        return policy == DOMAIN_STAY_UNLIMITED && !limited;
}

bool seat_needs_move(int seat, int want, bool want_stays) {
        if (seat != want)
                return true;
        return want != SEAT_HOME && !want_stays;
}

static int check_value(TonariProperty p, const char *value, uint64_t *ret_number) {
        uint64_t n;
        const char *space;
        int r;

        *ret_number = UINT64_MAX;
        switch (p) {
        case TONARI_PROP_CPU_QUOTA:
                r = parse_permyriad_unbounded(value);
                return r < 0 ? r : r == 0 ? -EINVAL : 0;
        case TONARI_PROP_CPU_WEIGHT:
                r = safe_atou64(value, &n);
                return r < 0 ? r : n < 1 || n > 10000 ? -ERANGE : 0;
        case TONARI_PROP_TASKS_MAX:
                if (streq(value, "infinity"))
                        return 0;
                r = safe_atou64(value, &n);
                return r < 0 ? r : n == 0 ? -EINVAL : 0;
        case TONARI_PROP_IO_READ_BANDWIDTH_MAX:
        case TONARI_PROP_IO_WRITE_BANDWIDTH_MAX: {
                char path[256];

                space = strchr(value, ' ');
                if (!space || (size_t) (space - value) >= sizeof(path))
                        return -EINVAL;
                memcpy(path, value, space - value);
                path[space - value] = 0;
                if (!path_is_normalized_absolute(path))
                        return -EINVAL;
                space += strspn(space, " ");
                if (streq(space, "infinity"))
                        return 0;
                r = parse_size(space, 1000, &n);
                return r < 0 ? r : n == 0 ? -EINVAL : 0;
        }
        case TONARI_PROP_MAX_REQUESTS:
                r = safe_atou64(value, &n);
                if (r < 0)
                        return r;
                if (n == 0 || n > INT32_MAX)
                        return -ERANGE;
                *ret_number = n;
                return 0;
        default:
                return -EINVAL;
        }
}

static const char *property_syntax(TonariProperty p) {
        switch (p) {
        case TONARI_PROP_CPU_QUOTA:
                return "a percentage above 0 such as 50% (of one CPU; above 100% for several)";
        case TONARI_PROP_CPU_WEIGHT:
                return "a weight from 1 to 10000";
        case TONARI_PROP_TASKS_MAX:
                return "a number above 0 or 'infinity'";
        case TONARI_PROP_IO_READ_BANDWIDTH_MAX:
        case TONARI_PROP_IO_WRITE_BANDWIDTH_MAX:
                return "an absolute device path and bytes per second, such as '/dev/vda 30M'";
        case TONARI_PROP_MAX_REQUESTS:
                return "a number of requests from 1 to 2147483647";
        default:
                return "?";
        }
}

int tonari_property_parse(const char *assignment, TonariProperty *ret_property, const char **ret_value,
                          uint64_t *ret_number, char **ret_error) {
        _cleanup_free_ char *e = NULL;
        const char *eq;
        uint64_t number;
        int r;

        if (!assignment || !ret_property || !ret_value || !ret_number)
                return -EINVAL;
        eq = strchr(assignment, '=');
        if (!eq || eq == assignment) {
                e = cescape(assignment);
                return set_error_message(ret_error, -EINVAL,
                                         "Invalid domain property '%s': expected NAME=VALUE, such as CPUQuota=50%%.",
                                         strna(e));
        }
        for (TonariProperty p = 0; p < _TONARI_PROP_MAX; p++) {
                if (strlen(property_names[p]) != (size_t) (eq - assignment) ||
                    strncmp(property_names[p], assignment, eq - assignment) != 0)
                        continue;
                r = check_value(p, eq + 1, &number);
                if (r < 0) {
                        e = cescape(eq + 1);
                        return set_error_message(ret_error, -EINVAL, "Invalid %s= value '%s': expected %s.",
                                                 property_names[p], strna(e), property_syntax(p));
                }
                *ret_property = p;
                *ret_value = eq + 1;
                *ret_number = number;
                return 0;
        }
        e = cescape(assignment);
        return set_error_message(ret_error, -ENOENT,
                                 "Unknown domain property in '%s'. Known: CPUQuota=, CPUWeight=, TasksMax=, "
                                 "IOReadBandwidthMax=, IOWriteBandwidthMax=, MaxRequests=.",
                                 strna(e));
}

int tonari_domain_name_check(const char *name, char **ret_error) {
        _cleanup_free_ char *e = NULL;

        /* The rule of tonari_domain_open(): no '.' or ':' (cgroup interface files have a '.'), no
         * leading '_' (libtonari's _home). */
        if (name && name_is_valid(name, NAME_MAX_LEN) && name[0] != '_' && !strchr(name, '.') &&
            !strchr(name, ':'))
                return 0;
        e = cescape(strempty(name));
        return set_error_message(ret_error, -EINVAL,
                                 "Invalid domain name '%s': expected 1 to %d characters of A-Z a-z 0-9 _ - @, "
                                 "not starting with '_' or '-'.",
                                 strna(e), NAME_MAX_LEN);
}

/* The map: keys in one arena, an open-addressing table of indexes into it. */
typedef struct MapEntry {
        uint32_t hash;
        uint32_t key_offset; /* into keys; UINT32_MAX: empty slot */
        int32_t domain;
        uint32_t line;
} MapEntry;

struct DomainMap {
        char *keys;
        size_t keys_size;
        MapEntry *table;
        size_t mask; /* table size - 1, a power of two minus one */
        size_t n;
};

static char lower(char c) {
        return c >= 'A' && c <= 'Z' ? (char) (c - 'A' + 'a') : c;
}

/* FNV-1a over the lower-cased bytes. */
static uint32_t host_hash(const char *s, size_t n) {
        uint32_t h = 2166136261u;

        for (size_t i = 0; i < n; i++) {
                h ^= (uint8_t) lower(s[i]);
                h *= 16777619u;
        }
        return h;
}

static bool host_char_ok(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                c == '-' || c == '_';
}

DomainMap *domain_map_free(DomainMap *m) {
        if (!m)
                return NULL;
        free(m->keys);
        free(m->table);
        free(m);
        return NULL;
}

DEFINE_TRIVIAL_CLEANUP_FUNC(DomainMap *, domain_map_free);

/* The slot of host (n bytes, any case), or of the empty slot where it would go. */
static MapEntry *map_slot(const DomainMap *m, const char *host, size_t n, uint32_t h) {
        for (size_t i = h & m->mask;; i = (i + 1) & m->mask) {
                MapEntry *e = &m->table[i];
                const char *k;

                if (e->key_offset == UINT32_MAX)
                        return e;
                if (e->hash != h)
                        continue;
                k = m->keys + e->key_offset;
                if (strlen(k) != n)
                        continue;
                bool same = true;
                for (size_t j = 0; j < n && same; j++)
                        same = lower(host[j]) == k[j];
                if (same)
                        return e;
        }
}

/* The first n bytes at p, escaped for a message; NULL on allocation failure. */
static char *escape_n(const char *p, size_t n) {
        _cleanup_free_ char *copy = memdup_suffix0(p, n);

        return copy ? cescape(copy) : NULL;
}

static size_t count_lines(const char *text, size_t size) {
        size_t n = 1;

        for (size_t i = 0; i < size; i++)
                if (text[i] == '\n')
                        n++;
        return n;
}

int domain_map_parse(const char *text, size_t size, DomainResolve resolve, void *userdata, DomainMap **ret,
                     unsigned *ret_line, char **ret_error) {
        _cleanup_(domain_map_freep) DomainMap *m = NULL;
        size_t cap = 16, lines, pos = 0;
        unsigned line = 0;

        if (!text || !resolve || !ret || size >= UINT32_MAX)
                return -EINVAL;
        if (ret_line)
                *ret_line = 0;

        /* At most one entry per line: size the table for a load factor of at most 1/2. */
        lines = count_lines(text, size);
        while (cap < 2 * lines)
                cap *= 2;
        m = new0(DomainMap, 1);
        if (!m)
                return -ENOMEM;
        m->keys = malloc(size + 1);
        m->table = new(MapEntry, cap);
        if (!m->keys || !m->table)
                return -ENOMEM;
        for (size_t i = 0; i < cap; i++)
                m->table[i].key_offset = UINT32_MAX;
        m->mask = cap - 1;

        while (pos < size) {
                const char *l = text + pos, *nl = memchr(l, '\n', size - pos);
                size_t len = nl ? (size_t) (nl - l) : size - pos, i = 0, host_start, host_len, dom_start,
                       dom_len;
                char dom[NAME_MAX_LEN + 1];
                _cleanup_free_ char *e = NULL;
                MapEntry *slot;
                uint32_t h;
                int idx;

                pos += len + (nl ? 1 : 0);
                line++;
                if (len > 0 && l[len - 1] == '\r')
                        len--;
                while (i < len && (l[i] == ' ' || l[i] == '\t'))
                        i++;
                if (i == len || l[i] == '#')
                        continue;

                if (ret_line)
                        *ret_line = line;
                host_start = i;
                while (i < len && l[i] != ' ' && l[i] != '\t')
                        i++;
                host_len = i - host_start;
                while (i < len && (l[i] == ' ' || l[i] == '\t'))
                        i++;
                dom_start = i;
                while (i < len && l[i] != ' ' && l[i] != '\t')
                        i++;
                dom_len = i - dom_start;
                while (i < len && (l[i] == ' ' || l[i] == '\t'))
                        i++;

                if (dom_len == 0 || i != len) {
                        e = escape_n(l, MIN(len, (size_t) 200));
                        return set_error_message(ret_error, -EINVAL,
                                                 "Invalid map line '%s': expected HOST DOMAIN.", strna(e));
                }
                bool host_ok = host_len <= HOST_MAX_LEN;
                for (size_t j = 0; j < host_len && host_ok; j++)
                        host_ok = host_char_ok(l[host_start + j]);
                if (!host_ok) {
                        e = escape_n(l + host_start, MIN(host_len, (size_t) 260));
                        return set_error_message(ret_error, -EINVAL,
                                                 "Invalid host '%s': expected up to 253 characters of "
                                                 "A-Z a-z 0-9 . - _.",
                                                 strna(e));
                }
                if (dom_len > NAME_MAX_LEN) {
                        e = escape_n(l + dom_start, MIN(dom_len, (size_t) 200));
                        return set_error_message(ret_error, -EINVAL, "Unknown domain '%s'.", strna(e));
                }
                memcpy(dom, l + dom_start, dom_len);
                dom[dom_len] = 0;
                idx = resolve(dom, userdata);
                if (idx < 0) {
                        e = cescape(dom);
                        return set_error_message(ret_error, -EINVAL,
                                                 "Unknown domain '%s': define it with TonariDomain first.",
                                                 strna(e));
                }

                h = host_hash(l + host_start, host_len);
                slot = map_slot(m, l + host_start, host_len, h);
                if (slot->key_offset != UINT32_MAX) {
                        e = memdup_suffix0(l + host_start, host_len);
                        return set_error_message(ret_error, -EINVAL, "Host '%s' is mapped already, on line %u.",
                                                 strna(e), slot->line);
                }
                slot->hash = h;
                slot->key_offset = (uint32_t) m->keys_size;
                slot->domain = idx;
                slot->line = line;
                for (size_t j = 0; j < host_len; j++)
                        m->keys[m->keys_size++] = lower(l[host_start + j]);
                m->keys[m->keys_size++] = 0;
                m->n++;
        }

        if (ret_line)
                *ret_line = 0;
        *ret = TAKE_PTR(m);
        return 0;
}

int domain_map_lookup(const DomainMap *m, const char *host) {
        const MapEntry *e;
        size_t n;

        if (!m || !host || m->n == 0)
                return -1;
        n = strlen(host);
        if (n > HOST_MAX_LEN)
                return -1;
        e = map_slot(m, host, n, host_hash(host, n));
        return e->key_offset == UINT32_MAX ? -1 : e->domain;
}

size_t domain_map_size(const DomainMap *m) {
        return m ? m->n : 0;
}
