/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <archive.h>
#include <archive_entry.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "alloc-util.h"
#include "layer-unpack.h"
#include "path-util.h"
#include "string-util.h"
#include "tar-util.h"
#include "toc.h"

/* Reads from the decompressor and from the tar reader go in pieces of this size. */
#define UNPACK_BUFFER_BYTES (256U * 1024U)
/* Limits on what one tar entry may carry; Linux itself allows 64 KiB of xattr values per inode. */
#define ENTRY_XATTRS_MAX 256U
#define ENTRY_XATTR_BYTES_MAX (64U * 1024U)
/* A layer with more entries than this is not an image layer (Debian's largest have ~100k). */
#define LAYER_ENTRIES_MAX (4U * 1024U * 1024U)

#define WHITEOUT_PREFIX ".wh."
#define OPAQUE_MARKER ".wh..wh..opq"
/* AUFS's own bookkeeping (".wh..wh.plnk", ".wh..wh.aufs"): not content, skipped as containerd does. */
#define AUFS_META_PREFIX ".wh..wh."

/* What the ToC writer refuses is the layer's fault: a malformed layer. */
static int layer_error(int r) {
        return r == -EINVAL || r == -ENOTDIR || r == -ELOOP || r == -E2BIG ? -EBADMSG : r;
}

/* The decompressed stream: hashed as the tar reader consumes it, which gives the diff_id. */
typedef struct Stream {
        struct archive *decompressor;
        Hasher *hasher;
        uint8_t *buffer;
        int error;
} Stream;

static la_ssize_t stream_read(struct archive *a, void *userdata, const void **ret) {
        Stream *st = userdata;
        la_ssize_t n;

        n = archive_read_data(st->decompressor, st->buffer, UNPACK_BUFFER_BYTES);
        if (n < 0) {
                archive_set_error(a, EINVAL, "decompressing: %s", archive_error_string(st->decompressor));
                st->error = -EBADMSG;
                return -1;
        }
        if (n > 0 && hasher_update(st->hasher, st->buffer, (size_t) n) < 0) {
                archive_set_error(a, EIO, "hashing failed");
                st->error = -EIO;
                return -1;
        }
        *ret = st->buffer;
        return n;
}

/* For messages: what the media type says the layer is. */
static const char *compressed_as(OciCompression compression, const char *uncompressed) {
        return compression == OCI_COMPRESSION_GZIP ? "gzip-compressed" :
               compression == OCI_COMPRESSION_ZSTD ? "zstd-compressed" :
                                                     uncompressed;
}

static int open_decompressor(int blob_fd, OciCompression compression, struct archive **ret) {
        _cleanup_archive_ struct archive *a = archive_read_new();
        struct archive_entry *e;
        int k;

        if (!a)
                return -ENOMEM;
        /* Only what the media type says: a "tar+gzip" layer that is really zstd is refused. */
        switch (compression) {
        case OCI_COMPRESSION_GZIP:
                k = archive_read_support_filter_gzip(a);
                break;
        case OCI_COMPRESSION_ZSTD:
                k = archive_read_support_filter_zstd(a);
                break;
        default:
                k = archive_read_support_filter_none(a);
        }
        if (k != ARCHIVE_OK || archive_read_support_format_raw(a) != ARCHIVE_OK ||
            archive_read_open_fd(a, blob_fd, UNPACK_BUFFER_BYTES) != ARCHIVE_OK ||
            archive_read_next_header(a, &e) != ARCHIVE_OK ||
            (compression != OCI_COMPRESSION_NONE && archive_filter_count(a) < 2))
                return -EBADMSG;
        *ret = TAKE_PTR(a);
        return 0;
}

/* Splits "a/b/c" into its parent "a/b" (or "" at the top) and the name "c"; path is modified. */
static const char *split_name(char *path, const char **ret_parent) {
        char *slash = strrchr(path, '/');

        if (!slash) {
                *ret_parent = "";
                return path;
        }
        *slash = 0;
        *ret_parent = path;
        return slash + 1;
}

/* The entry's name as a key in the ToC: without "./" and leading or trailing '/'. */
static int normalize_name(const char *raw, char **ret) {
        _cleanup_free_ char *p = NULL;
        size_t n;
        char *s;

        if (!raw)
                return -EBADMSG;
        while (*raw == '/')
                raw++;
        while (startswith(raw, "./"))
                raw += 2;
        p = strdup(raw);
        if (!p)
                return -ENOMEM;
        n = strlen(p);
        while (n > 0 && p[n - 1] == '/')
                p[--n] = 0;
        if (n == 0 || streq(p, ".")) {
                /* The layer's root directory itself. */
                *ret = TAKE_PTR(p);
                (*ret)[0] = 0;
                return 0;
        }
        /* "a/./b" is accepted as "a/b"; ".." anywhere is not. */
        for (s = strstr(p, "/./"); s; s = strstr(p, "/./"))
                memmove(s, s + 2, strlen(s + 2) + 1);
        if (endswith(p, "/."))
                p[strlen(p) - 2] = 0;
        if (!path_is_normalized_relative(p))
                return -EBADMSG;
        *ret = TAKE_PTR(p);
        return 0;
}

static int copy_content(struct archive *tar, Store *s, uint64_t size, uint32_t chunk_size, const Cancel *cancel,
                        TocContent *ret, uint64_t *new_objects, uint8_t *buffer) {
        _cleanup_store_writer_ StoreWriter *w = NULL;
        _cleanup_hasher_ Hasher *chunk = NULL;
        uint64_t done = 0, in_chunk = 0;
        TocContent c = {};
        size_t allocated = 0;
        int r;

        r = store_writer_new(s, STORE_OBJECT, NULL, size, &w);
        if (r < 0)
                return r;
        /* The chunk digests grow with the content that arrives: the size in the header is what
         * the tar claims (2^50 bytes would be a 32 GiB array), the data is what it has. */
        if (size > chunk_size) {
                r = hasher_new(&chunk);
                if (r < 0)
                        return r;
        }

        while (done < size) {
                la_ssize_t n;
                size_t off = 0;

                if (cancel_requested(cancel)) {
                        r = -ECANCELED;
                        goto fail;
                }
                n = archive_read_data(tar, buffer, UNPACK_BUFFER_BYTES);
                if (n < 0) {
                        r = -EBADMSG;
                        goto fail;
                }
                if (n == 0)
                        break;
                if ((uint64_t) n > size - done) {
                        r = -EBADMSG;
                        goto fail;
                }
                r = store_writer_write(w, buffer, (size_t) n);
                if (r < 0)
                        goto fail;
                /* Chunk digests: a read may span a chunk boundary. */
                while (chunk && off < (size_t) n) {
                        size_t k = (size_t) MIN((uint64_t) n - off, chunk_size - in_chunk);

                        r = hasher_update(chunk, buffer + off, k);
                        if (r < 0)
                                goto fail;
                        off += k;
                        in_chunk += k;
                        if (in_chunk == chunk_size || done + off == size) {
                                if (c.n_chunks == allocated) {
                                        Digest *a = reallocarray(c.chunks, allocated * 2 + 16, sizeof(Digest));

                                        if (!a) {
                                                r = -ENOMEM;
                                                goto fail;
                                        }
                                        c.chunks = a;
                                        allocated = allocated * 2 + 16;
                                }
                                r = hasher_finish(chunk, &c.chunks[c.n_chunks++]);
                                if (r < 0)
                                        goto fail;
                                in_chunk = 0;
                        }
                }
                done += (uint64_t) n;
        }
        if (done != size) {
                r = -EBADMSG;
                goto fail;
        }
        r = store_writer_commit(w, &c.digest, NULL);
        if (r < 0)
                goto fail;
        *new_objects += (uint64_t) r;
        *ret = c;
        return 0;
fail:
        free(c.chunks);
        return r;
}

int layer_unpack(Store *s, int blob_fd, OciCompression compression, const Cancel *cancel, void **ret_toc,
                 size_t *ret_toc_size, LayerStats *ret, char **ret_error) {
        _cleanup_(toc_writer_freep) TocWriter *toc = NULL;
        _cleanup_free_ void *toc_data = NULL;
        _cleanup_toc_ Toc *t = NULL;
        size_t toc_size;
        _cleanup_hasher_ Hasher *hasher = NULL;
        _cleanup_free_ uint8_t *buffer = NULL, *content_buffer = NULL;
        _cleanup_(tar_locale_leave) locale_t old_locale = (locale_t) 0;
        _cleanup_archive_ struct archive *decompressor = NULL;
        _cleanup_archive_ struct archive *tar = NULL; /* freed first: it reads from decompressor */
        struct archive_entry *e;
        Stream st = {};
        LayerStats stats = {};
        uint64_t n_entries = 0;
        int r, k;

        buffer = malloc(UNPACK_BUFFER_BYTES);
        content_buffer = malloc(UNPACK_BUFFER_BYTES);
        if (!buffer || !content_buffer)
                return -ENOMEM;
        r = hasher_new(&hasher);
        if (r < 0)
                return r;
        r = toc_writer_new(TOC_CHUNK_SIZE_DEFAULT, &toc);
        if (r < 0)
                return r;
        /* Names are the tar's bytes, whatever the process's locale (tar-util.h). */
        r = tar_locale_enter(&old_locale);
        if (r < 0)
                return r;

        r = open_decompressor(blob_fd, compression, &decompressor);
        if (r < 0)
                return set_error_message(ret_error, r, "the layer is not a %s tar",
                                         compressed_as(compression, "plain"));
        st.decompressor = decompressor;
        st.hasher = hasher;
        st.buffer = buffer;

        tar = archive_read_new();
        if (!tar)
                return -ENOMEM;
        archive_read_support_format_tar(tar);
        if (archive_read_open(tar, &st, NULL, stream_read, NULL) != ARCHIVE_OK)
                return set_error_message(ret_error, st.error ?: -EBADMSG, "layer: %s",
                                         archive_error_string(tar));

        while ((k = tar_next_header(tar, &e)) == ARCHIVE_OK) {
                _cleanup_free_ char *path = NULL, *target = NULL;
                const char *parent, *name, *xname;
                TocEntrySpec spec = {};
                TocXattr xattrs[ENTRY_XATTRS_MAX];
                size_t n_xattrs = 0, xattr_bytes = 0;
                const void *xvalue;
                size_t xsize;

                if (++n_entries > LAYER_ENTRIES_MAX)
                        return set_error_message(ret_error, -E2BIG, "layer has more than %u entries",
                                                 LAYER_ENTRIES_MAX);
                if (cancel_requested(cancel))
                        return set_error_message(ret_error, -ECANCELED, "cancelled");
                r = normalize_name(archive_entry_pathname(e), &path);
                if (r < 0)
                        return set_error_message(ret_error, r, "layer entry \"%s\": invalid path",
                                                 strna(archive_entry_pathname(e)));

                name = split_name(path, &parent);
                if (startswith(name, AUFS_META_PREFIX) && !streq(name, OPAQUE_MARKER))
                        continue;
                if (streq(name, OPAQUE_MARKER)) {
                        r = toc_writer_set_opaque(toc, parent);
                        if (r < 0)
                                return set_error_message(ret_error, layer_error(r),
                                                         "layer entry \"%s/%s\": %s", parent, name,
                                                         strerror(-r));
                        continue;
                }

                spec.parent = parent;
                spec.name = name;
                spec.mode = archive_entry_mode(e) & 07777;
                spec.uid = (uint32_t) archive_entry_uid(e);
                spec.gid = (uint32_t) archive_entry_gid(e);
                spec.mtime_sec = archive_entry_mtime(e);
                spec.mtime_nsec = (uint32_t) archive_entry_mtime_nsec(e);

                if (startswith(name, WHITEOUT_PREFIX)) {
                        spec.name = name + STRLEN(WHITEOUT_PREFIX);
                        spec.type = TOC_TYPE_WHITEOUT;
                        spec.mode = 0;
                        r = toc_writer_add(toc, &spec);
                        /* A whiteout below a name this layer made a file: nothing below it is
                         * visible anyway (umoci writes these). */
                        if (r == -ENOTDIR)
                                continue;
                        if (r < 0)
                                return set_error_message(ret_error, layer_error(r),
                                                         "layer entry \"%s\": %s",
                                                         archive_entry_pathname(e), strerror(-r));
                        continue;
                }

                archive_entry_xattr_reset(e);
                while (archive_entry_xattr_next(e, &xname, &xvalue, &xsize) == ARCHIVE_OK) {
                        if (n_xattrs == ENTRY_XATTRS_MAX || xsize > ENTRY_XATTR_BYTES_MAX - xattr_bytes)
                                return set_error_message(ret_error, -E2BIG,
                                                         "layer entry \"%s\": too many extended attributes",
                                                         archive_entry_pathname(e));
                        xattr_bytes += xsize;
                        xattrs[n_xattrs++] = (TocXattr) { .name = xname, .value = xvalue, .size = xsize };
                }
                spec.xattrs = xattrs;
                spec.n_xattrs = n_xattrs;

                if (archive_entry_hardlink(e)) {
                        r = normalize_name(archive_entry_hardlink(e), &target);
                        if (r < 0 || isempty(target))
                                return set_error_message(ret_error, -EBADMSG,
                                                         "layer entry \"%s\": invalid link target \"%s\"",
                                                         archive_entry_pathname(e),
                                                         archive_entry_hardlink(e));
                        spec.type = TOC_TYPE_HARDLINK;
                        spec.link_target = target;
                } else
                        switch (archive_entry_filetype(e)) {
                        case AE_IFREG:
                                spec.type = TOC_TYPE_REGULAR;
                                spec.size = (uint64_t) archive_entry_size(e);
                                r = copy_content(tar, s, spec.size, TOC_CHUNK_SIZE_DEFAULT, cancel, &spec.content,
                                                 &stats.new_objects, content_buffer);
                                if (r == -ECANCELED)
                                        return set_error_message(ret_error, r, "cancelled");
                                if (r < 0)
                                        return set_error_message(
                                                        ret_error, st.error ?: r, "layer entry \"%s\": %s",
                                                        archive_entry_pathname(e),
                                                        r == -EBADMSG ? archive_error_string(tar) :
                                                                        strerror(-r));
                                break;
                        case AE_IFDIR:
                                spec.type = TOC_TYPE_DIRECTORY;
                                break;
                        case AE_IFLNK:
                                spec.type = TOC_TYPE_SYMLINK;
                                /* Linux gives every symlink 0777, whatever the tar says. */
                                spec.mode = 0777;
                                spec.link_target = archive_entry_symlink(e);
                                if (isempty(spec.link_target))
                                        return set_error_message(ret_error, -EBADMSG,
                                                                 "layer entry \"%s\": empty symlink",
                                                                 archive_entry_pathname(e));
                                break;
                        case AE_IFCHR:
                        case AE_IFBLK:
                                spec.type = archive_entry_filetype(e) == AE_IFCHR ? TOC_TYPE_CHAR : TOC_TYPE_BLOCK;
                                spec.rdev_major = (uint32_t) archive_entry_rdevmajor(e);
                                spec.rdev_minor = (uint32_t) archive_entry_rdevminor(e);
                                break;
                        case AE_IFIFO:
                                spec.type = TOC_TYPE_FIFO;
                                break;
                        case AE_IFSOCK:
                                spec.type = TOC_TYPE_SOCKET;
                                break;
                        default:
                                return set_error_message(ret_error, -EBADMSG,
                                                         "layer entry \"%s\": unknown file type 0%o",
                                                         archive_entry_pathname(e),
                                                         (unsigned) archive_entry_filetype(e));
                        }

                r = toc_writer_add(toc, &spec);
                free(spec.content.chunks);
                if (r < 0)
                        return set_error_message(ret_error, layer_error(r), "layer entry \"%s\": %s",
                                                 archive_entry_pathname(e), strerror(-r));
        }
        if (k != ARCHIVE_EOF)
                return set_error_message(ret_error, st.error ?: -EBADMSG, "layer: %s",
                                         archive_error_string(tar));

        /* The tar reader stops at the end-of-archive blocks; the diff_id covers the padding after
         * them too. */
        for (;;) {
                la_ssize_t n = archive_read_data(st.decompressor, buffer, UNPACK_BUFFER_BYTES);

                if (n < 0)
                        return set_error_message(ret_error, -EBADMSG, "layer: %s",
                                                 archive_error_string(st.decompressor));
                if (n == 0)
                        break;
                r = hasher_update(hasher, buffer, (size_t) n);
                if (r < 0)
                        return r;
        }
        r = hasher_finish(hasher, &stats.diff_id);
        if (r < 0)
                return r;

        r = toc_writer_finish_buffer(toc, &toc_data, &toc_size);
        if (r < 0)
                return set_error_message(ret_error, layer_error(r),
                                         "layer: a hard link names an entry the layer does not have, or the table of "
                                         "contents would be too large: %s",
                                         strerror(-r));
        /* The numbers recorded for the layer are read back from its ToC, as any later reader sees
         * it (which also checks what the writer made). */
        r = toc_open_buffer(toc_data, toc_size, &t);
        if (r >= 0)
                r = toc_stats(t, &stats.entries, &stats.unpacked_bytes);
        if (r >= 0)
                r = digest_buffer(toc_data, toc_size, &stats.toc_digest);
        if (r < 0)
                return set_error_message(ret_error, r == -EBADMSG ? -EIO : r,
                                         "layer: the table of contents written " "cannot be read back: %s",
                                         strerror(-r));
        stats.toc_bytes = toc_size;
        *ret_toc = TAKE_PTR(toc_data);
        *ret_toc_size = toc_size;
        *ret = stats;
        return 0;
}

int layer_diff_id(int blob_fd, OciCompression compression, const Cancel *cancel, Digest *ret, char **ret_error) {
        _cleanup_hasher_ Hasher *hasher = NULL;
        _cleanup_free_ uint8_t *buffer = NULL;
        _cleanup_archive_ struct archive *a = NULL;
        int r;

        buffer = malloc(UNPACK_BUFFER_BYTES);
        if (!buffer)
                return -ENOMEM;
        r = hasher_new(&hasher);
        if (r < 0)
                return r;
        r = open_decompressor(blob_fd, compression, &a);
        if (r < 0)
                return set_error_message(ret_error, r, "the layer is not %s",
                                         compressed_as(compression, "readable"));
        for (;;) {
                la_ssize_t n;

                if (cancel_requested(cancel)) {
                        r = set_error_message(ret_error, -ECANCELED, "cancelled");
                        break;
                }
                n = archive_read_data(a, buffer, UNPACK_BUFFER_BYTES);
                if (n < 0) {
                        r = set_error_message(ret_error, -EBADMSG, "layer: %s", archive_error_string(a));
                        break;
                }
                if (n == 0) {
                        r = hasher_finish(hasher, ret);
                        break;
                }
                r = hasher_update(hasher, buffer, (size_t) n);
                if (r < 0)
                        break;
        }
        return r;
}
