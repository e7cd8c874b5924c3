/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The table of contents (ToC) of one layer: every entry's metadata in one compact, versioned,
 * checksummed file that tonari-imagefs maps and answers lookups, getattr and readdir from without
 * asking the relay. The format, byte by byte, is in tonari-toc(5); in short:
 *
 *   header   magic "TONARTOC", sha256 of everything after it, version, sizes, section offsets
 *   entries  fixed-size records, one per path, numbered from 0 (the layer's root directory);
 *            each directory's children are consecutive entries sorted by name (byte order), so
 *            lookup is a binary search and readdir an index; the numbers are stable and serve as
 *            inode numbers
 *   strings  names, symlink targets, xattr names
 *   extra    content digests with their chunk digests, xattr records and values
 *
 * Whiteouts are entries of type TOC_TYPE_WHITEOUT; an OCI opaque marker is the flag
 * TOC_FLAG_OPAQUE on its directory; a directory present only through deeper names has
 * TOC_FLAG_IMPLIED. A ToC never contains ".wh." names.
 */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "digest.h"

#define TOC_MAGIC "TONARTOC"
#define TOC_VERSION_MAJOR 1
/* 1.1 added TOC_FLAG_IMPLIED. Readers load every 1.x they know the flags of; a 1.0 reader refuses a
 * ToC that sets the new flag (it checks flags), and reads one that does not as before. */
#define TOC_VERSION_MINOR 1
/* A FUSE read of a large file fetches and verifies pieces of this size. */
#define TOC_CHUNK_SIZE_DEFAULT (1U * 1024U * 1024U)
#define TOC_CHUNK_SIZE_MIN 4096U
#define TOC_NAME_MAX 255U
#define TOC_PATH_MAX 4096U
#define TOC_TARGET_MAX 4096U
/* A ToC is read into memory whole: the writer refuses to make a larger one, readers to read one.
 * Debian's largest layers (~100k entries) make ToCs of about 15 MB. */
#define TOC_SIZE_MAX (512U * 1024U * 1024U)

typedef enum TocType {
        TOC_TYPE_REGULAR = 1,
        TOC_TYPE_DIRECTORY = 2,
        TOC_TYPE_SYMLINK = 3,
        TOC_TYPE_CHAR = 4,
        TOC_TYPE_BLOCK = 5,
        TOC_TYPE_FIFO = 6,
        TOC_TYPE_SOCKET = 7,
        TOC_TYPE_WHITEOUT = 8,
        _TOC_TYPE_MAX,
        /* Writer input only: another name of an entry given by path (a tar hard link). */
        TOC_TYPE_HARDLINK = 100,
} TocType;

#define TOC_FLAG_OPAQUE (1U << 0)
/* A directory the layer has no entry of, only names below it (a tar with "a/b/c" and no "a/"): its
 * attributes are the writer's (0755, root, time 0), not the layer's. Whoever stacks layers takes the
 * lower layer's directory instead, as unpacking the layer over it would keep that one. Since 1.1. */
#define TOC_FLAG_IMPLIED (1U << 1)

const char *toc_type_to_string(TocType t) _const_;

/* Writer */

typedef struct TocWriter TocWriter;

typedef struct TocXattr {
        const char *name;
        const void *value;
        size_t size;
} TocXattr;

typedef struct TocContent {
        Digest digest;  /* of the whole content: the content object's name */
        Digest *chunks; /* one per chunk when the file is larger than one chunk, else none */
        size_t n_chunks;
} TocContent;

typedef struct TocEntrySpec {
        const char *parent;      /* "" for the top, else "a/b" */
        const char *name;        /* "" with parent "": the root directory itself */
        TocType type;
        uint32_t mode;           /* permission bits, 07777 */
        uint32_t uid, gid;
        uint64_t size;           /* regular files */
        int64_t mtime_sec;
        uint32_t mtime_nsec;
        uint32_t rdev_major, rdev_minor;
        const char *link_target; /* symlinks: the target; hard links: the other name's path */
        const TocXattr *xattrs;
        size_t n_xattrs;
        TocContent content;      /* regular files; copied */
} TocEntrySpec;

int toc_writer_new(uint32_t chunk_size, TocWriter **ret);
TocWriter *toc_writer_free(TocWriter *w);
DEFINE_TRIVIAL_CLEANUP_FUNC(TocWriter *, toc_writer_free);

/*
 * Adds an entry; a later entry for the same path replaces the earlier one (a directory replaced
 * by a directory keeps its children). Missing parent directories are made (0755, root, mtime 0).
 * -EINVAL for invalid names ("", ".", "..", '/', NUL, ".wh." prefixes, longer than
 * TOC_NAME_MAX, paths beyond TOC_PATH_MAX) and bad specs, -ENOTDIR when a parent is not a
 * directory.
 */
int toc_writer_add(TocWriter *w, const TocEntrySpec *spec);
/* Marks the directory at path opaque (making it if missing). -ENOTDIR if it is not one. */
int toc_writer_set_opaque(TocWriter *w, const char *path);
/*
 * Resolves hard links (-EINVAL if a target is missing or is a directory or whiteout), orders the
 * entries and writes the ToC to fd (at its current position).
 */
int toc_writer_finish_fd(TocWriter *w, int fd, uint64_t *ret_entries, uint64_t *ret_bytes);
/* The same into memory (malloc'ed). */
int toc_writer_finish_buffer(TocWriter *w, void **ret, size_t *ret_size);

/* Reader */

typedef struct Toc Toc;

typedef struct TocEntry {
        uint64_t ino;
        uint64_t parent;
        const char *name; /* not NUL-terminated */
        size_t name_len;
        TocType type;
        uint32_t flags;
        uint32_t mode, uid, gid, nlink;
        uint64_t size;
        int64_t mtime_sec;
        uint32_t mtime_nsec;
        uint32_t rdev_major, rdev_minor;
        uint64_t first_child;
        uint32_t n_children;
        uint64_t link; /* the entry whose inode this is: itself, or the first name of a hard link */
        const char *target; /* symlinks; not NUL-terminated */
        size_t target_len;
        const uint8_t *digest; /* regular files: 32 bytes */
        uint32_t n_chunks;
        uint32_t n_xattrs;
        uint64_t xattrs_off;
        uint64_t content_off;
} TocEntry;

typedef struct TocXattrView {
        const char *name; /* not NUL-terminated */
        size_t name_len;
        const uint8_t *value;
        size_t size;
} TocXattrView;

/*
 * Opens a ToC. The whole file is validated here (-EBADMSG for anything malformed or a wrong
 * checksum, -EPROTONOSUPPORT for another major version), and every accessor below checks again
 * each offset and length it follows (-EBADMSG), so that no call can read out of bounds or loop,
 * whatever the bytes are. Nothing is mapped: the bytes are the reader's own or the caller's.
 *
 * toc_open_owned() is for bytes that arrived whole and were verified against a digest the caller
 * trusts (the relay's record, GetToC's digest): the Toc takes them (on success) and frees them.
 */
int toc_open_owned(void *data, size_t size, Toc **ret);
/* Over memory the caller keeps alive and unchanged while the Toc is used. */
int toc_open_buffer(const void *data, size_t size, Toc **ret);
/* Reads the file whole (a regular file of at most TOC_SIZE_MAX bytes) into memory of its own. */
int toc_open_fd(int fd, Toc **ret);
Toc *toc_free(Toc *t);
DEFINE_TRIVIAL_CLEANUP_FUNC(Toc *, toc_free);
#define _cleanup_toc_ _cleanup_(toc_freep)

uint64_t toc_n_entries(const Toc *t) _pure_;
uint32_t toc_chunk_size(const Toc *t) _pure_;
/* The ToC's bytes, as opened. */
const void *toc_data(const Toc *t, size_t *ret_size);
/* -ENOENT beyond the last entry. */
int toc_get(const Toc *t, uint64_t ino, TocEntry *ret);
/* The i-th child of directory dir (in name order): -ENOTDIR, -ENOENT past the last one. */
int toc_child(const Toc *t, const TocEntry *dir, uint32_t i, TocEntry *ret);
/* -ENOTDIR if dir is not a directory, -ENOENT if it has no such child. */
int toc_lookup(const Toc *t, uint64_t dir, const char *name, size_t name_len, uint64_t *ret);
/* "a/b/c" (no leading '/', "" is the root). */
int toc_resolve(const Toc *t, const char *path, uint64_t *ret);
/* The i-th extended attribute of e. */
int toc_xattr(const Toc *t, const TocEntry *e, uint32_t i, TocXattrView *ret);
/* The digest of the i-th chunk of e (bytes [i * chunk size, ...)). */
int toc_chunk(const Toc *t, const TocEntry *e, uint32_t i, Digest *ret);
/* The entry's path ("a/b/c") into buf; -ENAMETOOLONG if it does not fit. */
int toc_path(const Toc *t, uint64_t ino, char *buf, size_t size);

/* Calls f for the content digest of every regular file that owns its content. */
int toc_for_each_content(const Toc *t, int (*f)(const Digest *d, void *userdata), void *userdata);
/* The number of entries, and the sum of the regular files' sizes (hard links counted once). */
int toc_stats(const Toc *t, uint64_t *ret_entries, uint64_t *ret_unpacked_bytes);

/* tonarictl image toc: one line per entry, or one JSON document. */
int toc_dump(const Toc *t, FILE *f, bool json);
