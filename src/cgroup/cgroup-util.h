/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"
#include "time-util.h"

/*
 * The pure layer of src/cgroup (and the hierarchy detection at start-up): types and conversions
 * that need no CGroupRoot, unit-tested on their own. Implemented by cgroup-mode.c, cgroup-name.c,
 * cgroup-settings.c, cgroup-util.c and cgroup-stat.c, as the sections below say.
 */

/* cgroup-mode.c: how the cgroup hierarchies are mounted under <root>/sys/fs/cgroup. */
typedef enum CGroupMode {
        CGROUP_MODE_NONE,    /* nothing mounted */
        CGROUP_MODE_LEGACY,  /* v1 controller hierarchies only */
        CGROUP_MODE_HYBRID,  /* v1 controllers, plus cgroup2 at /sys/fs/cgroup/unified */
        CGROUP_MODE_UNIFIED, /* cgroup2 at /sys/fs/cgroup */
        _CGROUP_MODE_MAX,
} CGroupMode;

const char *cgroup_mode_to_string(CGroupMode m) _const_;

/*
 * Parses the text of /proc/cgroups and returns the controllers that are enabled and attached to a
 * v1 hierarchy (hierarchy id != 0), in file order.
 */
int cgroup_parse_proc_cgroups(const char *text, char ***ret_controllers);

/*
 * Detects the cgroup mode of the system whose filesystem starts at root ("/" normally; a fake tree
 * in tests) from the files the kernel exposes: <root>/sys/fs/cgroup{,/unified}/cgroup.controllers
 * and <root>/proc/cgroups. Returns the v2 controllers (of the cgroup2 root; NULL if none is
 * mounted) and the v1 controllers with a hierarchy.
 */
int cgroup_detect(const char *root, CGroupMode *ret_mode, char ***ret_v2_controllers, char ***ret_v1_controllers);

/*
 * cgroup-name.c: a cgroup's directory holds its interface files and its children side by side, so a child named
 * like an interface file ("memory.stat", "cpu.shares", "tasks") cannot be made where the file
 * exists, and where it does not exist yet (a controller not enabled, or one a later kernel adds)
 * the child takes the name from the file. As systemd does for unit cgroups (cg_escape()), such a
 * name gets a leading '_' on disk: "memory.stat" lives in "_memory.stat". A name that starts with
 * '_' followed by such a name is escaped as well ("_memory.stat" in "__memory.stat"), any other
 * name is its own directory ("web", "_web"), so the mapping is one-to-one and the directories of
 * existing cgroups keep their names.
 *
 * Reserved: "tasks", "notify_on_release", "release_agent" (v1's core files), and every name whose
 * part before the first '.' is "cgroup" or a kernel controller ("cpu", "memory", "io", ...; "irq"
 * for v2's irq.pressure).
 */
bool cgroup_name_needs_escape(const char *name) _pure_;
/* The directory name for name (a filename_is_valid() name). */
int cgroup_name_escape(const char *name, char **ret);
/* The name a directory stands for; -EINVAL if dir is no name cgroup_name_escape() gives. */
int cgroup_name_unescape(const char *dir, char **ret);

/* Resource settings in systemd's units and meaning (systemd.resource-control(5)). */
#define CGROUP_WEIGHT_UNSET UINT64_MAX
#define CGROUP_WEIGHT_MIN UINT64_C(1)
#define CGROUP_WEIGHT_MAX UINT64_C(10000)
#define CGROUP_WEIGHT_DEFAULT UINT64_C(100)
/* No limit: memory, bandwidth, IOPS. */
#define CGROUP_LIMIT_MAX UINT64_MAX
/* The kernel's default CFS period, and the bounds it accepts for period and quota. */
#define CGROUP_CPU_QUOTA_PERIOD_DEFAULT_USEC (100 * USEC_PER_MSEC)
#define CGROUP_CPU_QUOTA_PERIOD_MIN_USEC (1 * USEC_PER_MSEC)
#define CGROUP_CPU_QUOTA_PERIOD_MAX_USEC (1 * USEC_PER_SEC)
#define CGROUP_CPU_QUOTA_MIN_USEC (1 * USEC_PER_MSEC)

typedef enum CGroupIOLimitType {
        CGROUP_IO_RBPS,  /* IOReadBandwidthMax=, bytes/s */
        CGROUP_IO_WBPS,  /* IOWriteBandwidthMax=, bytes/s */
        CGROUP_IO_RIOPS, /* IOReadIOPSMax= */
        CGROUP_IO_WIOPS, /* IOWriteIOPSMax= */
        _CGROUP_IO_LIMIT_TYPE_MAX,
} CGroupIOLimitType;

typedef struct CGroupIODeviceLimit {
        char *path;    /* as the user gave it ("/dev/vda"); for adopted cgroupfs limits "/dev/block/M:m" */
        dev_t devnum;  /* the block device it resolved to */
        uint64_t limit[_CGROUP_IO_LIMIT_TYPE_MAX]; /* CGROUP_LIMIT_MAX: no limit of that type */
} CGroupIODeviceLimit;

typedef struct CGroupSettings {
        uint64_t cpu_weight;          /* CPUWeight=, 1..10000 or CGROUP_WEIGHT_UNSET */
        usec_t cpu_quota_per_sec_usec; /* CPUQuota= as CPU time per second; USEC_INFINITY: none */
        usec_t cpu_quota_period_usec; /* CPUQuotaPeriodSec=; USEC_INFINITY: kernel default */
        uint64_t io_weight;           /* IOWeight=, 1..10000 or CGROUP_WEIGHT_UNSET */
        CGroupIODeviceLimit *io_limits;
        size_t n_io_limits;
        uint64_t memory_max;          /* MemoryMax=, bytes or CGROUP_LIMIT_MAX */
        uint64_t memory_high;         /* MemoryHigh=, bytes or CGROUP_LIMIT_MAX */
        uint8_t *allowed_cpus;        /* AllowedCPUs=, bitmask ("ay" layout); NULL: not restricted */
        size_t allowed_cpus_size;
        uint8_t *allowed_mems;        /* AllowedMemoryNodes=, bitmask; NULL: not restricted */
        size_t allowed_mems_size;
} CGroupSettings;

#define CGROUP_SETTINGS_INIT                                                                           \
        ((CGroupSettings){                                                                             \
                .cpu_weight = CGROUP_WEIGHT_UNSET,                                                     \
                .cpu_quota_per_sec_usec = USEC_INFINITY,                                               \
                .cpu_quota_period_usec = USEC_INFINITY,                                                \
                .io_weight = CGROUP_WEIGHT_UNSET,                                                      \
                .memory_max = CGROUP_LIMIT_MAX,                                                        \
                .memory_high = CGROUP_LIMIT_MAX,                                                       \
        })

/* Which settings cgroup_apply() writes. */
typedef enum CGroupSettingMask {
        CGROUP_MASK_CPU_WEIGHT = 1 << 0,
        CGROUP_MASK_CPU_QUOTA = 1 << 1, /* quota and period together */
        CGROUP_MASK_IO_WEIGHT = 1 << 2,
        CGROUP_MASK_IO_LIMITS = 1 << 3,
        CGROUP_MASK_MEMORY_MAX = 1 << 4,
        CGROUP_MASK_MEMORY_HIGH = 1 << 5,
        CGROUP_MASK_ALLOWED_CPUS = 1 << 6,
        CGROUP_MASK_ALLOWED_MEMS = 1 << 7,
        _CGROUP_MASK_ALL = (1 << 8) - 1,
} CGroupSettingMask;

/* Live usage; UINT64_MAX where the kernel does not provide the number. */
typedef struct CGroupUsage {
        usec_t cpu_usage_usec;
        uint64_t io_read_bytes;
        uint64_t io_write_bytes;
        uint64_t memory_current;
        uint64_t n_tasks;
} CGroupUsage;

/* cgroup-settings.c */

/* CPUWeight=, IOWeight=: 1..10000, or CGROUP_WEIGHT_UNSET. */
bool cgroup_weight_is_valid(uint64_t w) _const_;
/* Whether all four limits of the device are CGROUP_LIMIT_MAX. */
bool cgroup_io_limit_is_none(const CGroupIODeviceLimit *l) _pure_;

void cgroup_settings_done(CGroupSettings *s);
/* Deep copy. */
int cgroup_settings_copy(CGroupSettings *dst, const CGroupSettings *src);
/* The entry for devnum, or NULL. */
CGroupIODeviceLimit *cgroup_settings_find_io_limit(const CGroupSettings *s, dev_t devnum) _pure_;
CGroupIODeviceLimit *cgroup_io_limits_find(CGroupIODeviceLimit *l, size_t n, dev_t devnum) _pure_;
/* Frees the n entries (their paths) and the array. */
void cgroup_io_limits_free(CGroupIODeviceLimit *l, size_t n);

/*
 * cgroup-util.c: conversions between systemd's settings and the kernel's interface files; used by
 * cgroup-apply.c and cgroup-read.c. Parsers return -EINVAL for text the kernel would not
 * produce.
 */

/* cpu.max ("max 100000", "20000 100000") ↔ quota per second and period (USEC_INFINITY: none/default). */
int cgroup_cpu_max_format(usec_t quota_per_sec_usec, usec_t period_usec, char **ret);
int cgroup_cpu_max_parse(const char *text, usec_t *ret_quota_per_sec_usec, usec_t *ret_period_usec);
/* Quota per period from quota per second, as the kernel wants it (at least 1 ms). */
usec_t cgroup_cpu_quota_per_period(usec_t quota_per_sec_usec, usec_t period_usec) _const_;

/* Weights: v2 cpu.weight/io.weight use systemd's 1..10000 directly; v1 has cpu.shares and blkio.weight. */
uint64_t cgroup_cpu_weight_to_shares(uint64_t weight) _const_;
uint64_t cgroup_cpu_shares_to_weight(uint64_t shares) _const_;
uint64_t cgroup_io_weight_to_blkio(uint64_t weight) _const_;
uint64_t cgroup_blkio_to_io_weight(uint64_t blkio_weight) _const_;

/* "max" ↔ CGROUP_LIMIT_MAX, else a decimal number. */
int cgroup_limit_parse(const char *text, uint64_t *ret);
char *cgroup_limit_format(uint64_t value, char *buf, size_t size);

/* v2 io.max: one line "MAJ:MIN rbps=N wbps=N riops=N wiops=N" per device. */
int cgroup_io_max_format_line(dev_t devnum, const uint64_t limit[], char **ret);
int cgroup_io_max_parse(const char *text, CGroupIODeviceLimit **ret, size_t *ret_n);
/* v1 blkio.throttle.{read,write}_{bps,iops}_device: the file of one limit type. */
const char *cgroup_blkio_throttle_file(CGroupIOLimitType t) _const_;
/* v1 blkio.throttle.*_device: lines "MAJ:MIN N"; merges type into the list. */
int cgroup_blkio_throttle_parse(const char *text, int type, CGroupIODeviceLimit **list, size_t *n);

/* The tokens of the kernel's keyed files: "MAJ:MIN" within the kernel's dev_t ranges, and a key
 * ("rbps", "cost.vrate": lower-case letters, digits, '_', '.'). */
int cgroup_devnum_parse(const char *s, dev_t *ret);
bool cgroup_key_is_valid(const char *s, size_t n) _pure_;
/* Calls parse_line with the fields (split at field_separators) of each non-empty line of text, until
 * it fails. */
typedef int (*CGroupLineParser)(char **fields, void *userdata);
int cgroup_parse_lines(const char *text, const char *field_separators, CGroupLineParser parse_line,
                       void *userdata);

/* cgroup-stat.c: the usage files. */
/* One key of cpu.stat (v2; v1's cpu controller has the same flat format, e.g. nr_periods). */
int cgroup_cpu_stat_parse(const char *text, const char *key, uint64_t *ret);
int cgroup_io_stat_parse(const char *text, uint64_t *ret_rbytes, uint64_t *ret_wbytes); /* v2 io.stat */
int cgroup_blkio_bytes_parse(const char *text, uint64_t *ret_rbytes, uint64_t *ret_wbytes); /* v1 io_service_bytes */
