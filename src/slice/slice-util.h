/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "cgroup-util.h"

/* Pure helpers of the slice capability: names and validation. No I/O. */

#define SLICE_UNIT_PREFIX "tonari-"
#define SLICE_PARENT_UNIT "tonari.slice"
/* cgroupfs backend: the slices live below this directory of the cgroup root. */
#define SLICE_CGROUPFS_PARENT "tonari.slice"
#define SLICE_OBJECT_PREFIX "/org/tonari/slice"

/* A slice name as users give it: name_is_valid(), at most NAME_MAX_LEN. */
bool slice_name_is_valid(const char *name) _pure_;

/*
 * "web" → "tonari-web.slice" (suffix ".slice") or "tonari-web.scope". Characters that have a
 * meaning in unit names ('-' nests slices, '@' marks templates) are escaped as systemd-escape
 * does ("a-b" → "tonari-a\x2db.slice"), so every slice is a direct child of tonari.slice.
 */
int slice_unit_name(const char *name, const char *suffix, char **ret);
/* The inverse; -EINVAL if unit is not a tonari slice unit of a valid name. */
int slice_name_from_unit(const char *unit, const char *suffix, char **ret);

/* The largest IOPS limit the kernel holds (it keeps them in 32 bits, UINT32_MAX meaning none). */
#define SLICE_IOPS_MAX (UINT32_MAX - 1)

/*
 * Checks the settings selected by mask: weights 1..10000 (or unset), CPU quota at least 1 ms per
 * period, period 1 ms..1 s, memory limits at least one page (page_size bytes), IO limits > 0 and
 * IOPS limits ≤ SLICE_IOPS_MAX, IO entries with a path and a device, CPU and node masks within the
 * online ones (online_* NULL: not checked). On failure returns -EINVAL (-ERANGE for out-of-range
 * values) and a message naming the property and the value in *ret_error.
 */
int slice_settings_validate(const CGroupSettings *s, CGroupSettingMask mask, uint64_t page_size,
                            const uint8_t *online_cpus, size_t online_cpus_size, const uint8_t *online_nodes,
                            size_t online_nodes_size, char **ret_error);
/*
 * Rounds memory limits (selected by mask) down to a whole number of pages, as the kernel stores
 * them, so that a slice shows what is in force. Returns the settings it changed.
 */
CGroupSettingMask slice_settings_round(CGroupSettings *s, CGroupSettingMask mask, uint64_t page_size);
/*
 * For adopting a slice found after a restart: settings the API would round are rounded, and those
 * it would refuse (slice_settings_validate() with every setting) are replaced by the nearest value
 * it accepts: a memory limit below one page by one page, a CPU quota below 1 ms per period by
 * 1 ms, a weight by the nearest of 1 and 10000, IOPS beyond SLICE_IOPS_MAX by SLICE_IOPS_MAX,
 * an IO limit of 0 by none, CPUs and nodes that are not online are left out. *ret_changed says which settings changed,
 * *ret_report what was found ("" if nothing).
 */
int slice_settings_make_valid(CGroupSettings *s, uint64_t page_size, const uint8_t *online_cpus,
                              size_t online_cpus_size, const uint8_t *online_nodes, size_t online_nodes_size,
                              CGroupSettingMask *ret_changed, char **ret_report);

/* The D-Bus property names (org.tonari.Slice1) a mask covers, NULL-terminated, for PropertiesChanged. */
int slice_mask_to_properties(CGroupSettingMask mask, char ***ret);
