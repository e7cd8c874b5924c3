/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/*
 * systemctl-style assignments for slice properties, as tonarictl takes them on the command line
 * ("CPUQuota=20%", "IOWriteBandwidthMax=/dev/vda 5M", "AllowedMemoryNodes=1"), turned into the
 * (sv) entries of the a(sv) that CreateSlice() and SetSliceProperties() expect, with systemd's
 * D-Bus property names and types. Syntax and units follow systemd.resource-control(5):
 *
 *   CPUWeight=1..10000            → CPUWeight t               ("" → UINT64_MAX: reset)
 *   CPUQuota=N%  (N may be >100)   → CPUQuotaPerSecUSec t      (N% = N*10000 µs per second; "" → UINT64_MAX)
 *   CPUQuotaPeriodSec=TIME         → CPUQuotaPeriodUSec t      (TIME as in systemd: 100ms, 1s; "" → UINT64_MAX)
 *   IOWeight=1..10000              → IOWeight t                ("" → UINT64_MAX)
 *   IOReadBandwidthMax=PATH BYTES  → IOReadBandwidthMax a(st)  (BYTES: size, base 1000, K M G T; "infinity"
 *   IOWriteBandwidthMax=PATH BYTES → IOWriteBandwidthMax a(st)  → UINT64_MAX; a bare "" → empty array:
 *   IOReadIOPSMax=PATH N           → IOReadIOPSMax a(st)        remove every limit of that kind)
 *   IOWriteIOPSMax=PATH N          → IOWriteIOPSMax a(st)
 *   MemoryMax=BYTES|N%|infinity    → MemoryMax t               (base 1024; N% of physical memory; "" → UINT64_MAX)
 *   MemoryHigh=BYTES|N%|infinity   → MemoryHigh t
 *   AllowedCPUs=LIST               → AllowedCPUs ay            (0-3,5 as a bitmask; "" → empty: no restriction)
 *   AllowedMemoryNodes=LIST        → AllowedMemoryNodes ay
 *
 * The daemon validates everything again (device paths, ranges, online CPUs and nodes); this is
 * the client's first line, with messages that name the setting and quote the value.
 */

/*
 * Appends one "(sv)" entry for assignment to m, which must be inside an open "a(sv)" container.
 * On a bad assignment returns -EINVAL and *ret_error (if non-NULL) holds a message like
 * "Invalid CPUQuota= value '20': expected a percentage such as 20%." (value escaped); unknown
 * names return -ENOENT with "Unknown slice property 'Foo'. ..." listing the known ones.
 */
int slice_assignment_append(sd_bus_message *m, const char *assignment, char **ret_error);
