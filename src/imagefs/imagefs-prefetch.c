/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Prefetch of a list of files in one stream, and the record of the files opened (imagefs-prefetch.h). */

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "imagefs-prefetch.h"
#include "imagefs-toc.h"
#include "log.h"
#include "string-util.h"

/* The stream's deadline: the read timeout plus a microsecond per byte (1 MB/s at least), so that a
 * large list on a slow link is not cut off while the bytes still flow. */
#define STREAM_USEC_PER_BYTE 1

typedef struct Item {
        Digest digest;
        uint64_t entry; /* the regular file that owns the content */
        uint64_t size;
        bool done;      /* in the cache, or given up: readers no longer wait for it */
} Item;

struct ImagefsPrefetch {
        char *layer;
        char *record_path;
        usec_t timeout_usec;
        const Toc *toc;
        ImagefsRelay *relay;
        ImagefsCache *cache;

        Item *items;       /* in the list's order */
        size_t n_items;
        size_t *by_digest; /* indexes into items, sorted by digest */
        uint64_t skipped;
        uint64_t total_bytes;

        pthread_t thread;
        bool started;
        pthread_mutex_t lock; /* everything below */
        pthread_cond_t cond;
        bool finished;
        bool cancelled;
        ImagefsRangeStream *stream;
        uint64_t bytes, calls, waits, usec;

        uint8_t *opened_bits; /* per entry */
        uint64_t *opened;     /* entries in the order of their first open */
        size_t n_opened, allocated;
};

static int compare_by_digest(const void *a, const void *b, void *userdata) {
        const Item *items = userdata;

        return digest_compare(&items[*(const size_t *) a].digest, &items[*(const size_t *) b].digest);
}

/* The list: paths resolved in the ToC, regular files with content only, each content once. */
static int load_list(ImagefsPrefetch *p, const char *path) {
        _cleanup_free_ char *data = NULL;
        size_t size, n = 0, allocated = 0, kept = 0;
        Item *items = NULL;
        char *line, *next;
        int r;

        r = read_full_file(path, &data, &size);
        if (r < 0)
                return r;
        for (line = data; line && *line; line = next) {
                ImagefsNode node;
                uint64_t ino;

                next = strchr(line, '\n');
                if (next)
                        *next++ = 0;
                while (*line == '/')
                        line++;
                if (*line == 0 || *line == '#')
                        continue;
                if (toc_resolve(p->toc, line, &ino) < 0 || imagefs_toc_node(p->toc, ino, &node) < 0 ||
                    node.type != TOC_TYPE_REGULAR || !node.has_digest) {
                        p->skipped++;
                        continue;
                }
                if (node.size == 0)
                        continue;
                if (n == allocated) {
                        Item *m = reallocarray(items, allocated * 2 + 64, sizeof(Item));

                        if (!m) {
                                free(items);
                                return -ENOMEM;
                        }
                        items = m;
                        allocated = allocated * 2 + 64;
                }
                items[n++] = (Item) { .digest = node.digest, .entry = node.entry, .size = node.size };
        }
        p->items = items;
        p->by_digest = new(size_t, n ?: 1);
        if (!p->by_digest)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                p->by_digest[i] = i;
        /* Stable enough for deduplication: of equal digests the first in the list stays. */
        qsort_r(p->by_digest, n, sizeof(size_t), compare_by_digest, items);
        for (size_t i = 0; i < n; i++)
                if (i > 0 && digest_equal(&items[p->by_digest[i]].digest, &items[p->by_digest[kept - 1]].digest)) {
                        if (p->by_digest[i] < p->by_digest[kept - 1])
                                p->by_digest[kept - 1] = p->by_digest[i];
                } else
                        p->by_digest[kept++] = p->by_digest[i];
        /* Keep the survivors in the list's order. */
        {
                _cleanup_free_ uint8_t *keep = new0(uint8_t, n ?: 1);
                size_t j = 0;

                if (!keep)
                        return -ENOMEM;
                for (size_t i = 0; i < kept; i++)
                        keep[p->by_digest[i]] = 1;
                for (size_t i = 0; i < n; i++)
                        if (keep[i])
                                items[j++] = items[i];
                n = j;
                for (size_t i = 0; i < n; i++)
                        p->by_digest[i] = i;
                qsort_r(p->by_digest, n, sizeof(size_t), compare_by_digest, items);
        }
        p->n_items = n;
        for (size_t i = 0; i < n; i++)
                p->total_bytes += items[i].size;
        return 0;
}

int imagefs_prefetch_new(const ImagefsPrefetchConfig *config, const Toc *toc, ImagefsRelay *relay,
                         ImagefsCache *cache, ImagefsPrefetch **ret) {
        ImagefsPrefetch *p;
        pthread_condattr_t attr;
        int r;

        if (!toc)
                return -EINVAL;
        p = new0(ImagefsPrefetch, 1);
        if (!p)
                return -ENOMEM;
        pthread_mutex_init(&p->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&p->cond, &attr);
        pthread_condattr_destroy(&attr);
        p->toc = toc;
        p->relay = relay;
        p->cache = cache;
        p->timeout_usec = config->timeout_usec;
        p->finished = true; /* until a stream starts */
        p->layer = strdup(config->layer);
        if (!p->layer)
                goto oom;
        if (config->record_path) {
                p->record_path = strdup(config->record_path);
                p->opened_bits = new0(uint8_t, toc_n_entries(toc) / 8 + 1);
                if (!p->record_path || !p->opened_bits)
                        goto oom;
        }
        if (config->list_path) {
                r = load_list(p, config->list_path);
                if (r < 0) {
                        imagefs_prefetch_free(p);
                        return r;
                }
        }
        *ret = p;
        return 0;
oom:
        imagefs_prefetch_free(p);
        return -ENOMEM;
}

/* The stream as the cache's fetch function sees it: the bytes of the current item, from the position
 * the cache asks for; pieces of earlier items and bytes before that position are skipped (a reader
 * fetched them meanwhile). */
typedef struct Cursor {
        ImagefsPrefetch *p;
        ImagefsRangeStream *stream;
        uint32_t item;
        bool have;
        uint32_t range;
        uint64_t offset;
        const uint8_t *data;
        size_t size, used;
        uint64_t bytes;
        char *error;
} Cursor;

static int cursor_fetch(uint64_t offset, uint64_t size, imagefs_sink_t sink, void *sink_userdata, void *userdata) {
        Cursor *c = userdata;
        uint64_t pos = offset, end = offset + size;
        int r;

        while (pos < end) {
                uint64_t at, piece_end, n;

                if (!c->have || c->used == c->size) {
                        const void *data;

                        free(c->error);
                        c->error = NULL;
                        r = imagefs_range_stream_next(c->stream, &c->range, &c->offset, &data, &c->size, &c->error);
                        if (r == 0)
                                return -EBADMSG; /* ended before the bytes of this item */
                        if (r < 0)
                                return r;
                        c->data = data;
                        c->used = 0;
                        c->have = true;
                }
                if (c->range < c->item) {
                        c->have = false;
                        continue;
                }
                if (c->range > c->item)
                        return -EBADMSG; /* bytes missing */
                at = c->offset + c->used;
                piece_end = c->offset + c->size;
                if (piece_end <= pos) {
                        c->have = false;
                        continue;
                }
                if (at < pos) {
                        c->used += (size_t) (pos - at);
                        continue;
                }
                if (at > pos)
                        return -EBADMSG;
                n = MIN(piece_end, end) - pos;
                r = sink(c->data + c->used, (size_t) n, sink_userdata);
                if (r < 0)
                        return r;
                c->used += (size_t) n;
                pos += n;
        }
        return 0;
}

static void item_done(ImagefsPrefetch *p, size_t i, uint64_t bytes) {
        pthread_mutex_lock(&p->lock);
        p->items[i].done = true;
        p->bytes = bytes;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);
}

/* One item's content into the cache, chunk by chunk (a reader of another chunk need not wait for the
 * whole file). */
static int prefetch_item(ImagefsPrefetch *p, Cursor *c, size_t i) {
        _cleanup_free_ Digest *chunks = NULL;
        ImagefsContent content = { .digest = p->items[i].digest, .size = p->items[i].size };
        ImagefsCacheEntry *e;
        uint64_t unit;
        TocEntry te;
        int r;

        r = toc_get(p->toc, p->items[i].entry, &te);
        if (r < 0)
                return r;
        if (te.n_chunks > 0) {
                chunks = new(Digest, te.n_chunks);
                if (!chunks)
                        return -ENOMEM;
                for (uint32_t k = 0; k < te.n_chunks; k++) {
                        r = toc_chunk(p->toc, &te, k, &chunks[k]);
                        if (r < 0)
                                return r;
                }
                content.chunks = chunks;
                content.n_chunks = te.n_chunks;
                content.chunk_size = toc_chunk_size(p->toc);
        }
        unit = content.chunks ? content.chunk_size : content.size;
        r = imagefs_cache_get(p->cache, &content, &e);
        if (r < 0)
                return r;
        c->item = (uint32_t) i;
        for (uint64_t off = 0; r >= 0 && off < content.size; off += unit) {
                uint64_t fetched = 0;
                bool hit;
                int fd;

                r = imagefs_cache_prepare(p->cache, e, off, MIN(unit, content.size - off), cursor_fetch, c, &fd,
                                          &fetched, &hit);
                c->bytes += fetched;
        }
        imagefs_cache_unref(p->cache, e);
        return r;
}

static void *prefetch_thread(void *userdata) {
        ImagefsPrefetch *p = userdata;
        _cleanup_free_ ImagefsRange *ranges = NULL;
        Cursor c = { .p = p };
        usec_t start = now(CLOCK_MONOTONIC);
        size_t i = 0;
        int r;

        ranges = new(ImagefsRange, p->n_items);
        r = ranges ? 0 : -ENOMEM;
        for (size_t k = 0; r >= 0 && k < p->n_items; k++)
                ranges[k] = (ImagefsRange) { .inode = p->items[k].entry };
        if (r >= 0)
                r = imagefs_relay_read_ranges(p->relay, p->layer, ranges, p->n_items,
                                              p->timeout_usec + p->total_bytes * STREAM_USEC_PER_BYTE, &c.stream);
        if (r >= 0) {
                pthread_mutex_lock(&p->lock);
                p->stream = c.stream;
                p->calls++;
                if (p->cancelled)
                        imagefs_range_stream_cancel(c.stream);
                pthread_mutex_unlock(&p->lock);
        }
        for (; r >= 0 && i < p->n_items; i++) {
                r = prefetch_item(p, &c, i);
                item_done(p, i, c.bytes);
        }

        pthread_mutex_lock(&p->lock);
        p->stream = NULL;
        p->bytes = c.bytes;
        p->usec = now(CLOCK_MONOTONIC) - start;
        for (size_t k = 0; k < p->n_items; k++)
                p->items[k].done = true;
        p->finished = true;
        pthread_cond_broadcast(&p->cond);
        pthread_mutex_unlock(&p->lock);

        if (r < 0 && r != -ECANCELED)
                log_struct_errno(LOG_WARNING, r,
                                 LOG_MESSAGE("Layer %s: prefetch stopped after %zu of %zu files: %s%s%m; readers fetch "
                                             "the rest themselves.",
                                             p->layer, i, p->n_items, strempty(c.error), c.error ? ": " : ""),
                                 "TONARI_LAYER=%s", p->layer);
        else
                log_struct(LOG_INFO,
                           LOG_MESSAGE("Layer %s: prefetched %zu files, %" PRIu64 " bytes in %" PRIu64 " us (%" PRIu64
                                       " paths skipped).",
                                       p->layer, p->n_items, c.bytes, p->usec, p->skipped),
                           "TONARI_LAYER=%s", p->layer);
        free(c.error);
        imagefs_range_stream_free(c.stream);
        return NULL;
}

int imagefs_prefetch_start(ImagefsPrefetch *p) {
        int r;

        if (p->n_items == 0)
                return 0;
        p->finished = false;
        r = pthread_create(&p->thread, NULL, prefetch_thread, p);
        if (r != 0) {
                p->finished = true;
                return -r;
        }
        p->started = true;
        log_info("Layer %s: prefetching %zu files.", p->layer, p->n_items);
        return 0;
}

static int write_record(ImagefsPrefetch *p) {
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char path[TOC_PATH_MAX + 1];

        if (asprintf(&tmp, "%s.tmp", p->record_path) < 0)
                return -ENOMEM;
        f = fopen(tmp, "we");
        if (!f)
                return -errno;
        for (size_t i = 0; i < p->n_opened; i++) {
                /* A name with a newline cannot be a line of the list: left out. */
                if (toc_path(p->toc, p->opened[i], path, sizeof(path)) < 0 || strchr(path, '\n'))
                        continue;
                fprintf(f, "%s\n", path);
        }
        if (fflush(f) != 0 || ferror(f)) {
                (void) unlink(tmp);
                return negative_errno();
        }
        if (rename(tmp, p->record_path) < 0) {
                int r = -errno;

                (void) unlink(tmp);
                return r;
        }
        return 0;
}

ImagefsPrefetch *imagefs_prefetch_free(ImagefsPrefetch *p) {
        int r;

        if (!p)
                return NULL;
        if (p->started) {
                pthread_mutex_lock(&p->lock);
                p->cancelled = true;
                if (p->stream)
                        imagefs_range_stream_cancel(p->stream);
                pthread_mutex_unlock(&p->lock);
                pthread_join(p->thread, NULL);
        }
        if (p->record_path) {
                r = write_record(p);
                if (r < 0)
                        log_warning_errno(r, "Failed to write the record of opened files '%s', ignoring: %m",
                                          p->record_path);
        }
        pthread_cond_destroy(&p->cond);
        pthread_mutex_destroy(&p->lock);
        free(p->items);
        free(p->by_digest);
        free(p->opened_bits);
        free(p->opened);
        free(p->record_path);
        free(p->layer);
        return mfree(p);
}

void imagefs_prefetch_opened(ImagefsPrefetch *p, uint64_t entry) {
        if (!p || !p->opened_bits || entry >= toc_n_entries(p->toc))
                return;
        pthread_mutex_lock(&p->lock);
        if (!(p->opened_bits[entry / 8] & (1U << (entry % 8)))) {
                if (p->n_opened == p->allocated) {
                        uint64_t *n = reallocarray(p->opened, p->allocated * 2 + 64, sizeof(uint64_t));

                        if (!n)
                                goto unlock; /* the record misses a file: harmless */
                        p->opened = n;
                        p->allocated = p->allocated * 2 + 64;
                }
                p->opened_bits[entry / 8] |= (uint8_t) (1U << (entry % 8));
                p->opened[p->n_opened++] = entry;
        }
unlock:
        pthread_mutex_unlock(&p->lock);
}

void imagefs_prefetch_wait(ImagefsPrefetch *p, const Digest *d) {
        const size_t *found = NULL;
        struct timespec deadline;
        usec_t until;
        bool waited = false;

        if (!p || p->n_items == 0)
                return;
        pthread_mutex_lock(&p->lock);
        if (!p->finished) {
                /* by_digest is fixed once the list is loaded. */
                for (size_t lo = 0, hi = p->n_items; lo < hi;) {
                        size_t mid = lo + (hi - lo) / 2;
                        int c = digest_compare(d, &p->items[p->by_digest[mid]].digest);

                        if (c == 0) {
                                found = &p->by_digest[mid];
                                break;
                        }
                        if (c < 0)
                                hi = mid;
                        else
                                lo = mid + 1;
                }
        }
        if (found) {
                until = now(CLOCK_MONOTONIC) + p->timeout_usec;
                deadline = (struct timespec) { .tv_sec = (time_t) (until / USEC_PER_SEC),
                                               .tv_nsec = (long) (until % USEC_PER_SEC) * 1000 };
                while (!p->items[*found].done && !p->finished) {
                        waited = true;
                        if (pthread_cond_timedwait(&p->cond, &p->lock, &deadline) == ETIMEDOUT)
                                break;
                }
                if (waited)
                        p->waits++;
        }
        pthread_mutex_unlock(&p->lock);
}

void imagefs_prefetch_counters(ImagefsPrefetch *p, ImagefsPrefetchCounters *ret) {
        if (!p) {
                *ret = (ImagefsPrefetchCounters) {};
                return;
        }
        pthread_mutex_lock(&p->lock);
        *ret = (ImagefsPrefetchCounters) {
                .files = p->n_items,
                .skipped = p->skipped,
                .bytes = p->bytes,
                .calls = p->calls,
                .waits = p->waits,
                .usec = p->usec,
        };
        pthread_mutex_unlock(&p->lock);
}
