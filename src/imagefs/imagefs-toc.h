/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * What tonari-imagefs shows of a layer, independent of where the metadata came from: the layer's ToC
 * held in memory (ToC mode) or one answer of the relay at a time (no-ToC mode). Pure: no I/O, no
 * logging, no FUSE.
 *
 * Numbers: a layer's entry n is FUSE node n + 1 (FUSE's root node is 1, the ToC's root entry 0), and
 * every name of a hard link group is the node of the group's first name, so the kernel sees one inode.
 *
 * Presentation to overlayfs as a lower layer: a whiteout is a character device 0/0, an opaque
 * directory carries the xattr "trusted.overlay.opaque" = "y". Overlayfs reads every other
 * "trusted.overlay.*" attribute of a lower layer too (redirects, metacopy, origin): a layer's own
 * attributes of that namespace are hidden, so that an image cannot steer the overlay that stacks it.
 */

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "digest.h"
#include "toc.h"

#define IMAGEFS_OPAQUE_XATTR "trusted.overlay.opaque"
#define IMAGEFS_HIDDEN_XATTR_PREFIX "trusted.overlay."

typedef struct ImagefsNode {
        uint64_t entry;         /* the entry owning the inode: hard links name the group's first */
        TocType type;
        uint32_t mode, uid, gid, nlink;
        uint64_t size;
        int64_t mtime_sec;
        uint32_t mtime_nsec;
        uint32_t rdev_major, rdev_minor;
        bool opaque;
        bool implied; /* a directory of made-up attributes (TOC_FLAG_IMPLIED): a stack takes the lower one's */
        bool has_digest;
        Digest digest;          /* regular files */
} ImagefsNode;

static inline uint64_t imagefs_nodeid(uint64_t entry) {
        return entry + 1;
}

/* -ENOENT for node 0 (FUSE never sends it) and beyond the numbers a layer can have. */
int imagefs_entry_of(uint64_t nodeid, uint64_t *ret);

/* The node of entry e of t: hard links resolved to the group's first name. */
int imagefs_toc_node(const Toc *t, uint64_t entry, ImagefsNode *ret);

/* stat(2) as overlayfs and users see it: whiteouts as 0/0 character devices. */
void imagefs_node_stat(const ImagefsNode *n, struct stat *ret);

/* Whether a layer's own attribute is hidden (see the head of this file). */
bool imagefs_xattr_hidden(const char *name, size_t len) _pure_;

/*
 * The "\0"-separated list listxattr(2) returns: the node's visible attributes, then the opaque
 * marker if it is one. names/lens: the layer's own attribute names (not NUL-terminated). With size 0
 * only the length is computed; -ERANGE when buf is too small.
 */
int imagefs_xattr_list(const char *const *names, const size_t *lens, size_t n, bool opaque, char *buf, size_t size,
                       size_t *ret_len);

/* listxattr from the ToC: as imagefs_xattr_list(). */
int imagefs_toc_listxattr(const Toc *t, uint64_t entry, char *buf, size_t size, size_t *ret_len);

/* getxattr from the ToC: a pointer to the value (into the ToC, or the marker's "y"); -ENODATA. */
int imagefs_toc_getxattr(const Toc *t, uint64_t entry, const char *name, const void **ret_value, size_t *ret_size);

/*
 * Implied directories (tonari-toc(5)) of a layer stacked on lowers (the nearest first): the attributes
 * and xattrs each takes from the nearest lower layer that has the directory for real, as unpacking
 * the layer over them keeps it -- unless something above hides it (a whiteout, a file, an opaque
 * directory on the way). In a ToC of their own, which the caller owns: one directory per implied
 * entry that has a lower one, named by imagefs_lower_dir_of(); the upper one's opaque mark is kept.
 * *ret is NULL when no implied directory has one. The lowers are only read during the call.
 */
int imagefs_lower_dirs_new(const Toc *upper, const Toc *const *lowers, size_t n_lowers, Toc **ret);
/* The entry in lower_dirs (may be NULL) standing for the upper ToC's entry; -ENOENT if none. */
int imagefs_lower_dir_of(const Toc *lower_dirs, uint64_t entry, uint64_t *ret);

/* The ToC as it arrived from the relay: accepted only when its sha256 is expected and it opens; the Toc
 * takes data on success. -EBADMSG for a digest mismatch or malformed bytes. */
int imagefs_toc_load(void *data, size_t size, const Digest *expected, Toc **ret);
