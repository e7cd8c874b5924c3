/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * tonari-imagefs's edge to the relay: tonari.layers.v1 calls (protocols/tonari/layers/v1/layers.proto)
 * through src/rpc, answers turned into ImagefsNode. One ImagefsRelay per relay address, shared by the
 * mounts of its layers; thread-safe.
 *
 * Every call has a deadline (relative timeout): while the relay cannot be reached the call is tried
 * again every RELAY_RETRY_USEC until then, and then fails with -ETIMEDOUT, so that a FUSE request
 * never waits longer than the mount's ReadTimeoutSec=. A stream that broke after it delivered bytes is
 * not tried again (its consumer has them): it fails with its error.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "imagefs-cache.h"
#include "imagefs-toc.h"
#include "time-util.h"

typedef struct ImagefsRelay ImagefsRelay;

int imagefs_relay_new(const char *address, ImagefsRelay **ret);
ImagefsRelay *imagefs_relay_free(ImagefsRelay *r);
static inline void imagefs_relay_freep(ImagefsRelay **r) {
        imagefs_relay_free(*r);
}
const char *imagefs_relay_address(const ImagefsRelay *r) _pure_;

/* The errors below come with the relay's message in *ret_error (optional, malloc'ed or NULL). */

/* The ToC's bytes as the relay assembled them, with the digest and size it announced (checked here:
 * -EBADMSG when the pieces are not contiguous or do not add up to the size; *ret_error then says at
 * which offset). */
int imagefs_relay_get_toc(ImagefsRelay *r, const char *layer, usec_t timeout, void **ret_data, size_t *ret_size,
                          Digest *ret_digest, char **ret_error);

/* [offset, offset + length) of regular file inode into sink, in order; -EBADMSG for pieces out of
 * order or beyond the range. */
int imagefs_relay_read(ImagefsRelay *r, const char *layer, uint64_t inode, uint64_t offset, uint64_t length,
                       usec_t timeout, imagefs_sink_t sink, void *userdata, char **ret_error);

/* ReadRanges: many files' bytes in one stream (the prefetch). The stream is read piece by piece. */
typedef struct ImagefsRange {
        uint64_t inode, offset, length; /* length 0: to the end of the file */
} ImagefsRange;
typedef struct ImagefsRangeStream ImagefsRangeStream;

/* ranges are copied. Nothing is sent before the first imagefs_range_stream_next(). timeout bounds the
 * whole stream. */
int imagefs_relay_read_ranges(ImagefsRelay *r, const char *layer, const ImagefsRange *ranges, size_t n,
                              usec_t timeout, ImagefsRangeStream **ret);
/* The next piece: 1 with the range's index, the offset in its file and the bytes (valid until the next
 * call), 0 at the end, or a negative errno (its message in *ret_error). -EBADMSG for pieces out of order
 * or outside their range. A relay that cannot be reached before the first piece is tried again until the
 * deadline. */
int imagefs_range_stream_next(ImagefsRangeStream *s, uint32_t *ret_range, uint64_t *ret_offset, const void **ret_data,
                              size_t *ret_size, char **ret_error);
/* From another thread: the stream ends (next returns -ECANCELED). */
void imagefs_range_stream_cancel(ImagefsRangeStream *s);
ImagefsRangeStream *imagefs_range_stream_free(ImagefsRangeStream *s);
static inline void imagefs_range_stream_freep(ImagefsRangeStream **s) {
        imagefs_range_stream_free(*s);
}

int imagefs_relay_lookup(ImagefsRelay *r, const char *layer, uint64_t parent, const char *name, usec_t timeout,
                         ImagefsNode *ret, char **ret_error);
int imagefs_relay_getattr(ImagefsRelay *r, const char *layer, uint64_t inode, usec_t timeout, ImagefsNode *ret,
                          char **ret_error);

/* Called for each entry of a ReadDir batch; a positive return stops the listing (0 is returned). */
typedef int (*imagefs_dirent_t)(const char *name, const ImagefsNode *node, uint64_t next_offset, void *userdata);
int imagefs_relay_readdir(ImagefsRelay *r, const char *layer, uint64_t inode, uint64_t offset, uint32_t max_entries,
                          usec_t timeout, imagefs_dirent_t f, void *userdata, char **ret_error);

int imagefs_relay_readlink(ImagefsRelay *r, const char *layer, uint64_t inode, usec_t timeout, char **ret_target,
                           char **ret_error);
/* The names (strv) */
int imagefs_relay_listxattr(ImagefsRelay *r, const char *layer, uint64_t inode, usec_t timeout, char ***ret_names,
                            char **ret_error);
int imagefs_relay_getxattr(ImagefsRelay *r, const char *layer, uint64_t inode, const char *name, usec_t timeout,
                           void **ret_value, size_t *ret_size, char **ret_error);

/* A layer of an image, bottom first, as Relay.GetImage (protocols/tonari/relay/v1) lists it. */
typedef struct ImagefsImageLayer {
        Digest diff_id;
        Digest toc_digest;
        bool has_toc_digest;
} ImagefsImageLayer;

/* The layers of the image called name in the relay's store: -ENOENT for an unknown image (the relay's
 * message in *ret_error), -ETIMEDOUT when the relay could not be reached within timeout, -EBADMSG for a
 * description that does not parse. */
int imagefs_relay_get_image(ImagefsRelay *r, const char *name, usec_t timeout, ImagefsImageLayer **ret_layers,
                            size_t *ret_n_layers, char **ret_error);
