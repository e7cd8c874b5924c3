/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The byte layout of a ToC, shared by its writer and reader (tonari-toc(5) documents it). */

#include <endian.h>
#include <stdint.h>
#include <string.h>

/* Header, version 1.0. Offsets in bytes from the start of the file; integers little-endian. */
#define TOC_OFF_MAGIC 0            /* 8 bytes "TONARTOC" */
#define TOC_OFF_CHECKSUM 8         /* 32 bytes: sha256 of bytes [TOC_CHECKSUMMED_FROM, file size) */
#define TOC_CHECKSUMMED_FROM 40
#define TOC_OFF_MAJOR 40           /* u16 */
#define TOC_OFF_MINOR 42           /* u16 */
#define TOC_OFF_FLAGS 44           /* u32, none defined: 0 */
#define TOC_OFF_CHUNK_SIZE 48      /* u32 */
#define TOC_OFF_HEADER_SIZE 52     /* u32: where the header ends (minor versions may grow it) */
#define TOC_OFF_FILE_SIZE 56       /* u64 */
#define TOC_OFF_N_ENTRIES 64       /* u64 */
#define TOC_OFF_ENTRIES 72         /* u64 */
#define TOC_OFF_ENTRY_SIZE 80      /* u32: bytes per entry record (minor versions may grow it) */
#define TOC_OFF_RESERVED 84        /* u32, 0 */
#define TOC_OFF_STRINGS 88         /* u64 */
#define TOC_OFF_STRINGS_SIZE 96    /* u64 */
#define TOC_OFF_EXTRA 104          /* u64 */
#define TOC_OFF_EXTRA_SIZE 112     /* u64 */
#define TOC_HEADER_SIZE_V1 120

/* Entry record, version 1.0. Offsets within the record. */
#define TOC_E_PARENT 0             /* u64: the parent's entry number (the root's is 0) */
#define TOC_E_NAME_OFF 8           /* u32: into strings */
#define TOC_E_NAME_LEN 12          /* u32 */
#define TOC_E_TYPE 16              /* u8: TocType */
#define TOC_E_FLAGS 17             /* u8: TOC_FLAG_* */
#define TOC_E_RESERVED 18          /* u16, 0 */
#define TOC_E_MODE 20              /* u32: permission bits, 07777 */
#define TOC_E_UID 24               /* u32 */
#define TOC_E_GID 28               /* u32 */
#define TOC_E_NLINK 32             /* u32 */
#define TOC_E_MTIME_NSEC 36        /* u32 */
#define TOC_E_SIZE 40              /* u64 */
#define TOC_E_MTIME_SEC 48         /* s64 */
#define TOC_E_RDEV_MAJOR 56        /* u32 */
#define TOC_E_RDEV_MINOR 60        /* u32 */
#define TOC_E_FIRST_CHILD 64       /* u64: directories */
#define TOC_E_N_CHILDREN 72        /* u32: directories */
#define TOC_E_N_CHUNKS 76          /* u32: regular files larger than one chunk */
#define TOC_E_LINK 80              /* u64: the entry whose inode this is (itself unless a hard link) */
#define TOC_E_TARGET_OFF 88        /* u32: symlink target, into strings */
#define TOC_E_TARGET_LEN 92        /* u32 */
#define TOC_E_CONTENT_OFF 96       /* u64: into extra: digest (32) then n_chunks digests (32 each) */
#define TOC_E_XATTRS_OFF 104       /* u64: into extra: n_xattrs records of TOC_XATTR_SIZE */
#define TOC_E_N_XATTRS 112         /* u32 */
#define TOC_E_RESERVED2 116        /* u32, 0 */
#define TOC_ENTRY_SIZE_V1 120

/* Xattr record in extra. */
#define TOC_X_NAME_OFF 0           /* u32: into strings */
#define TOC_X_NAME_LEN 4           /* u32 */
#define TOC_X_VALUE_OFF 8          /* u64: into extra */
#define TOC_X_VALUE_LEN 16         /* u32 */
#define TOC_X_RESERVED 20          /* u32, 0 */
#define TOC_XATTR_SIZE 24

static inline uint16_t toc_get16(const uint8_t *p) {
        uint16_t v;
        memcpy(&v, p, sizeof(v));
        return le16toh(v);
}
static inline uint32_t toc_get32(const uint8_t *p) {
        uint32_t v;
        memcpy(&v, p, sizeof(v));
        return le32toh(v);
}
static inline uint64_t toc_get64(const uint8_t *p) {
        uint64_t v;
        memcpy(&v, p, sizeof(v));
        return le64toh(v);
}
static inline void toc_put16(uint8_t *p, uint16_t v) {
        v = htole16(v);
        memcpy(p, &v, sizeof(v));
}
static inline void toc_put32(uint8_t *p, uint32_t v) {
        v = htole32(v);
        memcpy(p, &v, sizeof(v));
}
static inline void toc_put64(uint8_t *p, uint64_t v) {
        v = htole64(v);
        memcpy(p, &v, sizeof(v));
}
