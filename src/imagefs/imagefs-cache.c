/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <search.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "imagefs-cache.h"
#include "mkdir.h"
#include "string-util.h"

/* Bytes hashed per read when cached content is verified again. */
#define VERIFY_BUFFER_BYTES (1U * 1024U * 1024U)

/* Verification records (imagefs-cache.h): the key in the directory's trusted.* extended attribute
 * (neither readable nor writable without CAP_SYS_ADMIN), a record beside each verified content. */
#define KEY_XATTR "trusted.tonari-imagefs.verification-key"
#define KEY_BYTES 32
#define RECORD_SUFFIX ".verified"
#define RECORD_MAGIC "TNIFSVR1"
#define BOOT_ID_BYTES 40 /* 36 characters, zero-padded */

typedef struct VerificationRecord {
        char magic[8];
        uint8_t digest[DIGEST_SIZE];
        char boot_id[BOOT_ID_BYTES];
        uint64_t ino;
        uint64_t size;
        int64_t mtime_sec, mtime_nsec;
        int64_t ctime_sec, ctime_nsec;
        uint8_t mac[DIGEST_SIZE];   /* HMAC-SHA256 of everything before it */
} VerificationRecord;

struct ImagefsCacheEntry {
        Digest digest;
        bool known;            /* content filled in (entries found at start have only the digest) */
        uint64_t size;
        uint64_t unit_bytes;   /* verification unit: a chunk, or the whole content */
        uint32_t n_units;
        Digest *unit_digests;  /* n_units, or NULL: the one unit is checked against digest */
        uint8_t *present;      /* per unit: written to the file */
        uint8_t *verified;     /* per unit: matched its digest since the file last changed */
        int fd;
        bool complete;         /* the file is "<hex>", every unit present */
        bool dropped;          /* no longer in the cache's index (its file removed) */
        struct timespec stamp; /* the file's ctime when the verified bits were last valid */
        bool recorded;         /* a verification record matches the file as stamp says it is */
        uint64_t disk_bytes;   /* counted in the cache's total */
        uint64_t last_used;
        unsigned refs;
        ImagefsCacheEntry *lru_prev, *lru_next;
        pthread_mutex_t lock;
};

struct ImagefsCache {
        int dir_fd;
        int lock_fd;
        uint64_t max_bytes;
        pthread_mutex_t lock;
        void *index;           /* tsearch() tree of entries by digest */
        uint64_t n_entries;
        uint64_t total_bytes;
        uint64_t clock;
        ImagefsCacheEntry *lru_first, *lru_last; /* least recently used first */
        bool records;          /* verification records kept and trusted (a key and a boot ID) */
        uint8_t key[KEY_BYTES];
        char boot_id[BOOT_ID_BYTES];
        uint64_t rehashed_bytes; /* cached bytes read back and hashed (atomic) */
};

static int entry_compare(const void *a, const void *b) {
        return digest_compare(&((const ImagefsCacheEntry *) a)->digest, &((const ImagefsCacheEntry *) b)->digest);
}

static void entry_free(ImagefsCacheEntry *e) {
        if (!e)
                return;
        safe_close(e->fd);
        free(e->unit_digests);
        free(e->present);
        free(e->verified);
        pthread_mutex_destroy(&e->lock);
        free(e);
}

static ImagefsCacheEntry *entry_new(const Digest *d) {
        ImagefsCacheEntry *e = new0(ImagefsCacheEntry, 1);

        if (!e)
                return NULL;
        e->digest = *d;
        e->fd = -EBADF;
        pthread_mutex_init(&e->lock, NULL);
        return e;
}

static void lru_unlink(ImagefsCache *c, ImagefsCacheEntry *e) {
        if (e->lru_prev)
                e->lru_prev->lru_next = e->lru_next;
        else if (c->lru_first == e)
                c->lru_first = e->lru_next;
        if (e->lru_next)
                e->lru_next->lru_prev = e->lru_prev;
        else if (c->lru_last == e)
                c->lru_last = e->lru_prev;
        e->lru_prev = e->lru_next = NULL;
}

static void lru_append(ImagefsCache *c, ImagefsCacheEntry *e) {
        e->lru_prev = c->lru_last;
        e->lru_next = NULL;
        if (c->lru_last)
                c->lru_last->lru_next = e;
        else
                c->lru_first = e;
        c->lru_last = e;
        e->last_used = ++c->clock;
}

static void name_of(const ImagefsCacheEntry *e, bool part, char buf[static DIGEST_HEX_LEN + 6]) {
        digest_to_hex(&e->digest, buf);
        if (part)
                strcat(buf, ".part");
}

static void record_name_of(const Digest *d, char buf[static DIGEST_HEX_LEN + STRLEN(RECORD_SUFFIX) + 1]) {
        digest_to_hex(d, buf);
        strcat(buf, RECORD_SUFFIX);
}

/* The record the entry's file would have as st describes it, its MAC included. */
static int record_make(ImagefsCache *c, const ImagefsCacheEntry *e, const struct stat *st, VerificationRecord *ret) {
        VerificationRecord rec;
        Digest mac;
        int r;

        memset(&rec, 0, sizeof(rec));
        memcpy(rec.magic, RECORD_MAGIC, sizeof(rec.magic));
        memcpy(rec.digest, e->digest.bytes, DIGEST_SIZE);
        memcpy(rec.boot_id, c->boot_id, BOOT_ID_BYTES);
        rec.ino = (uint64_t) st->st_ino;
        rec.size = (uint64_t) st->st_size;
        rec.mtime_sec = (int64_t) st->st_mtim.tv_sec;
        rec.mtime_nsec = (int64_t) st->st_mtim.tv_nsec;
        rec.ctime_sec = (int64_t) st->st_ctim.tv_sec;
        rec.ctime_nsec = (int64_t) st->st_ctim.tv_nsec;
        r = digest_hmac(c->key, KEY_BYTES, &rec, offsetof(VerificationRecord, mac), &mac);
        if (r < 0)
                return r;
        memcpy(rec.mac, mac.bytes, DIGEST_SIZE);
        *ret = rec;
        return 0;
}

/* Whether the entry's record says its file, as st describes it, was verified whole in this boot. */
static bool record_matches(ImagefsCache *c, const ImagefsCacheEntry *e, const struct stat *st) {
        char name[DIGEST_HEX_LEN + STRLEN(RECORD_SUFFIX) + 1];
        _cleanup_close_ int fd = -EBADF;
        VerificationRecord want, have;
        uint8_t diff = 0;
        ssize_t k;

        if (!c->records || record_make(c, e, st, &want) < 0)
                return false;
        record_name_of(&e->digest, name);
        fd = openat(c->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0)
                return false;
        k = pread(fd, &have, sizeof(have), 0);
        if (k != (ssize_t) sizeof(have))
                return false;
        /* All of it compared, in time that does not depend on where it differs. */
        for (size_t i = 0; i < sizeof(have); i++)
                diff |= ((const uint8_t *) &have)[i] ^ ((const uint8_t *) &want)[i];
        return diff == 0;
}

/* Records that the entry's file, as st describes it, matched its digest whole. A record lost or torn
 * (no fsync: records do not outlive the boot) only means verifying again. */
static int record_write(ImagefsCache *c, const ImagefsCacheEntry *e, const struct stat *st) {
        char name[DIGEST_HEX_LEN + STRLEN(RECORD_SUFFIX) + 1];
        _cleanup_close_ int fd = -EBADF;
        VerificationRecord rec;
        int r;

        r = record_make(c, e, st, &rec);
        if (r < 0)
                return r;
        record_name_of(&e->digest, name);
        fd = openat(c->dir_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (write(fd, &rec, sizeof(rec)) != (ssize_t) sizeof(rec)) {
                r = errno > 0 ? -errno : -EIO;
                (void) unlinkat(c->dir_fd, name, 0);
                return r;
        }
        return 0;
}

static void record_remove(ImagefsCache *c, const ImagefsCacheEntry *e) {
        char name[DIGEST_HEX_LEN + STRLEN(RECORD_SUFFIX) + 1];

        record_name_of(&e->digest, name);
        (void) unlinkat(c->dir_fd, name, 0);
}

/* With the cache's lock: out of the index, the LRU list and the total, its file removed. The entry
 * itself lives on while references hold it. */
static void drop_locked(ImagefsCache *c, ImagefsCacheEntry *e) {
        char name[DIGEST_HEX_LEN + 6];

        if (e->dropped)
                return;
        tdelete(e, &c->index, entry_compare);
        lru_unlink(c, e);
        c->n_entries--;
        c->total_bytes -= MIN(c->total_bytes, e->disk_bytes);
        name_of(e, !e->complete, name);
        (void) unlinkat(c->dir_fd, name, 0);
        record_remove(c, e);
        e->dropped = true;
}

/* With the cache's lock: the least recently used entries nobody holds, until the total fits. */
static void evict_locked(ImagefsCache *c) {
        ImagefsCacheEntry *e = c->lru_first;

        while (c->max_bytes > 0 && c->total_bytes > c->max_bytes && e) {
                ImagefsCacheEntry *next = e->lru_next;

                if (e->refs == 0) {
                        drop_locked(c, e);
                        entry_free(e);
                }
                e = next;
        }
}

static int scan(ImagefsCache *c) {
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        struct Found {
                Digest digest;
                uint64_t bytes;
                struct timespec mtime;
        } *found = NULL;
        size_t n_found = 0, allocated = 0;
        int r = 0;

        r = opendir_fd(c->dir_fd, &d);
        if (r < 0)
                return r;
        while ((errno = 0, de = readdir(d))) {
                struct stat st;
                Digest digest;

                char record[DIGEST_HEX_LEN + STRLEN(RECORD_SUFFIX) + 1];
                struct stat rst;

                if (endswith(de->d_name, ".part")) {
                        (void) unlinkat(c->dir_fd, de->d_name, 0);
                        continue;
                }
                if (endswith(de->d_name, RECORD_SUFFIX)) {
                        /* A record without its content is removed; one with it is read at first use. */
                        char content[DIGEST_HEX_LEN + 1];

                        if (strlen(de->d_name) == sizeof(record) - 1) {
                                memcpy(content, de->d_name, DIGEST_HEX_LEN);
                                content[DIGEST_HEX_LEN] = 0;
                                if (faccessat(c->dir_fd, content, F_OK, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
                                        (void) unlinkat(c->dir_fd, de->d_name, 0);
                        }
                        continue;
                }
                if (digest_from_hex(de->d_name, &digest) < 0)
                        continue;
                if (fstatat(c->dir_fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode)) {
                        (void) unlinkat(c->dir_fd, de->d_name, 0);
                        continue;
                }
                /* A content trusted by its record marks its use on the record (its own times are in it). */
                record_name_of(&digest, record);
                if (fstatat(c->dir_fd, record, &rst, AT_SYMLINK_NOFOLLOW) >= 0 &&
                    (rst.st_mtim.tv_sec > st.st_mtim.tv_sec ||
                     (rst.st_mtim.tv_sec == st.st_mtim.tv_sec && rst.st_mtim.tv_nsec > st.st_mtim.tv_nsec)))
                        st.st_mtim = rst.st_mtim;
                if (n_found == allocated) {
                        struct Found *n = reallocarray(found, allocated * 2 + 16, sizeof(*found));

                        if (!n) {
                                r = -ENOMEM;
                                goto finish;
                        }
                        found = n;
                        allocated = allocated * 2 + 16;
                }
                found[n_found++] = (struct Found) { digest, (uint64_t) st.st_size, st.st_mtim };
        }
        if (errno != 0) {
                r = -errno;
                goto finish;
        }
        /* Oldest first: the order of use, as far as the files' times tell it. */
        for (size_t i = 1; i < n_found; i++)
                for (size_t j = i; j > 0 && (found[j].mtime.tv_sec < found[j - 1].mtime.tv_sec ||
                                             (found[j].mtime.tv_sec == found[j - 1].mtime.tv_sec &&
                                              found[j].mtime.tv_nsec < found[j - 1].mtime.tv_nsec));
                     j--) {
                        struct Found t = found[j];

                        found[j] = found[j - 1];
                        found[j - 1] = t;
                }
        for (size_t i = 0; i < n_found; i++) {
                ImagefsCacheEntry *e = entry_new(&found[i].digest);

                if (!e || !tsearch(e, &c->index, entry_compare)) {
                        entry_free(e);
                        r = -ENOMEM;
                        goto finish;
                }
                e->complete = true;
                e->disk_bytes = found[i].bytes;
                c->total_bytes += e->disk_bytes;
                c->n_entries++;
                lru_append(c, e);
        }
        evict_locked(c);
finish:
        free(found);
        return r;
}

/* The directory's verification key (made on first use) and this boot's ID: c->records says whether both
 * are there. Without them (no trusted.* attributes on the file system, no CAP_SYS_ADMIN, no /proc) a
 * content found at start is verified again before its first use, as every one was before records. */
static void load_key(ImagefsCache *c) {
        _cleanup_free_ char *boot_id = NULL;
        ssize_t n;

        if (read_one_line_file("/proc/sys/kernel/random/boot_id", &boot_id) < 0 || strlen(boot_id) != 36)
                return;
        memset(c->boot_id, 0, sizeof(c->boot_id));
        memcpy(c->boot_id, boot_id, strlen(boot_id));

        n = fgetxattr(c->dir_fd, KEY_XATTR, c->key, sizeof(c->key));
        if (n == (ssize_t) sizeof(c->key)) {
                c->records = true;
                return;
        }
        if (n < 0 && errno != ENODATA)
                return; /* EPERM, EOPNOTSUPP, ...: no records */
        /* Missing, or not a key (then every record made with it is void too). */
        if (getrandom(c->key, sizeof(c->key), 0) != (ssize_t) sizeof(c->key))
                return;
        if (fsetxattr(c->dir_fd, KEY_XATTR, c->key, sizeof(c->key), 0) < 0)
                return;
        c->records = true;
}

int imagefs_cache_new(const char *dir, uint64_t max_bytes, ImagefsCache **ret) {
        ImagefsCache *c;
        int r;

        r = mkdirat_p(AT_FDCWD, dir, 0700);
        if (r < 0)
                return r;
        c = new0(ImagefsCache, 1);
        if (!c)
                return -ENOMEM;
        c->lock_fd = -EBADF;
        c->max_bytes = max_bytes;
        pthread_mutex_init(&c->lock, NULL);
        c->dir_fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (c->dir_fd < 0) {
                r = -errno;
                goto fail;
        }
        c->lock_fd = openat(c->dir_fd, ".lock", O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (c->lock_fd < 0) {
                r = -errno;
                goto fail;
        }
        if (flock(c->lock_fd, LOCK_EX | LOCK_NB) < 0) {
                r = errno == EWOULDBLOCK ? -EBUSY : -errno;
                goto fail;
        }
        load_key(c);
        r = scan(c);
        if (r < 0)
                goto fail;
        *ret = c;
        return 0;
fail:
        imagefs_cache_free(c);
        return r;
}

static void free_action(void *p) {
        entry_free(p);
}

ImagefsCache *imagefs_cache_free(ImagefsCache *c) {
        if (!c)
                return NULL;
        tdestroy(c->index, free_action);
        safe_close(c->lock_fd);
        safe_close(c->dir_fd);
        pthread_mutex_destroy(&c->lock);
        return mfree(c);
}

/* With the entry's lock: the content's shape, and the file opened (a complete one checked for size). */
static int entry_setup(ImagefsCache *c, ImagefsCacheEntry *e, const ImagefsContent *content) {
        char name[DIGEST_HEX_LEN + 6];
        struct stat st;
        bool chunked = content->chunks && content->n_chunks > 0;
        uint64_t unit = chunked ? content->chunk_size : MAX(content->size, (uint64_t) 1);
        uint64_t n = content->size == 0 ? 0 : chunked ? content->n_chunks : 1;

        if (chunked && (content->chunk_size == 0 ||
                        DIV_ROUND_UP(content->size, (uint64_t) content->chunk_size) != content->n_chunks))
                return -EINVAL;

        e->size = content->size;
        e->unit_bytes = unit;
        e->n_units = (uint32_t) n;
        e->present = new0(uint8_t, n);
        e->verified = new0(uint8_t, n);
        if (!e->present || !e->verified)
                return -ENOMEM;
        if (chunked) {
                e->unit_digests = memdup(content->chunks, sizeof(Digest) * n);
                if (!e->unit_digests)
                        return -ENOMEM;
        }

        if (e->complete) {
                name_of(e, false, name);
                e->fd = openat(c->dir_fd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
                if (e->fd >= 0 && fstat(e->fd, &st) == 0 && (uint64_t) st.st_size == e->size) {
                        memset(e->present, 1, n);
                        e->stamp = st.st_ctim;
                        e->known = true;
                        if (S_ISREG(st.st_mode) && record_matches(c, e, &st)) {
                                /* Verified whole in this boot, and not changed since (same inode, size,
                                 * mtime, ctime): trusted without reading it. Its use is marked on the
                                 * record, for the order of eviction after a restart. */
                                char record[DIGEST_HEX_LEN + STRLEN(RECORD_SUFFIX) + 1];

                                memset(e->verified, 1, n);
                                e->recorded = true;
                                record_name_of(&e->digest, record);
                                (void) utimensat(c->dir_fd, record, NULL, AT_SYMLINK_NOFOLLOW);
                                return 0;
                        }
                        /* Its time says when it was last used, for the order of eviction after a restart. */
                        (void) futimens(e->fd, NULL);
                        return 0;
                }
                /* Not what the content's size says: start again. */
                e->fd = safe_close(e->fd);
                (void) unlinkat(c->dir_fd, name, 0);
                record_remove(c, e);
                e->complete = false;
        }
        name_of(e, true, name);
        e->fd = openat(c->dir_fd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (e->fd < 0)
                return -errno;
        if (fstat(e->fd, &st) < 0)
                return -errno;
        e->stamp = st.st_ctim;
        e->known = true;
        return 0;
}

int imagefs_cache_get(ImagefsCache *c, const ImagefsContent *content, ImagefsCacheEntry **ret) {
        ImagefsCacheEntry key = { .digest = content->digest }, *e;
        void **found;
        bool made = false;
        uint64_t before;
        int r = 0;

        pthread_mutex_lock(&c->lock);
        found = tfind(&key, &c->index, entry_compare);
        if (found)
                e = *found;
        else {
                e = entry_new(&content->digest);
                if (!e || !tsearch(e, &c->index, entry_compare)) {
                        entry_free(e);
                        pthread_mutex_unlock(&c->lock);
                        return -ENOMEM;
                }
                c->n_entries++;
                made = true;
        }
        if (!made)
                lru_unlink(c, e);
        lru_append(c, e);
        e->refs++;
        pthread_mutex_unlock(&c->lock);

        pthread_mutex_lock(&e->lock);
        before = e->disk_bytes;
        if (!e->known)
                r = entry_setup(c, e, content);
        if (r >= 0 && !e->complete)
                e->disk_bytes = 0; /* a new or restarted ".part" file */
        pthread_mutex_unlock(&e->lock);

        pthread_mutex_lock(&c->lock);
        if (!e->dropped)
                c->total_bytes = c->total_bytes - MIN(c->total_bytes, before) + e->disk_bytes;
        pthread_mutex_unlock(&c->lock);
        if (r < 0) {
                imagefs_cache_unref(c, e);
                return r;
        }
        *ret = e;
        return 0;
}

void imagefs_cache_unref(ImagefsCache *c, ImagefsCacheEntry *e) {
        bool free_it;

        if (!e)
                return;
        pthread_mutex_lock(&c->lock);
        e->refs--;
        /* A dropped entry is nobody's once its last reference goes; an entry that never got its
         * file (a failed setup) is dropped too. */
        if (e->refs == 0 && !e->dropped && !e->known)
                drop_locked(c, e);
        free_it = e->refs == 0 && e->dropped;
        if (!free_it)
                evict_locked(c);
        pthread_mutex_unlock(&c->lock);
        if (free_it)
                entry_free(e);
}

typedef struct FetchState {
        ImagefsCacheEntry *entry;
        Hasher *hasher;
        uint64_t offset; /* where the next byte goes */
        uint64_t end;
} FetchState;

static int fetch_sink(const void *data, size_t size, void *userdata) {
        FetchState *s = userdata;
        const uint8_t *p = data;
        int r;

        if (size > s->end - s->offset)
                return -EBADMSG; /* more than asked for */
        r = hasher_update(s->hasher, data, size);
        if (r < 0)
                return r;
        while (size > 0) {
                ssize_t k = pwrite(s->entry->fd, p, size, (off_t) s->offset);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                p += k;
                size -= (size_t) k;
                s->offset += (uint64_t) k;
        }
        return 0;
}

static const Digest *unit_digest(const ImagefsCacheEntry *e, uint32_t u) {
        return e->unit_digests ? &e->unit_digests[u] : &e->digest;
}

/* With the entry's lock: the unit's bytes in the file against its digest. */
static int verify_unit(ImagefsCacheEntry *e, Hasher *h, uint32_t u, uint64_t start, uint64_t len) {
        _cleanup_free_ uint8_t *buf = malloc(VERIFY_BUFFER_BYTES);
        Digest d;
        int r;

        if (!buf)
                return -ENOMEM;
        for (uint64_t off = start; off < start + len;) {
                ssize_t k = pread(e->fd, buf, (size_t) MIN((uint64_t) VERIFY_BUFFER_BYTES, start + len - off), (off_t) off);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EUCLEAN; /* shorter than it was */
                r = hasher_update(h, buf, (size_t) k);
                if (r < 0)
                        return r;
                off += (uint64_t) k;
        }
        r = hasher_finish(h, &d);
        if (r < 0)
                return r;
        return digest_equal(&d, unit_digest(e, u)) ? 0 : -EUCLEAN;
}

int imagefs_cache_prepare(ImagefsCache *c, ImagefsCacheEntry *e, uint64_t offset, uint64_t size,
                          imagefs_fetch_t fetch, void *userdata, int *ret_fd, uint64_t *ret_fetched, bool *ret_hit) {
        _cleanup_(hasher_freep) Hasher *h = NULL;
        uint64_t fetched = 0, end;
        bool hit = true, wrote = false, corrupt = false;
        struct stat st;
        int r = 0;

        r = hasher_new(&h);
        if (r < 0)
                return r;

        pthread_mutex_lock(&e->lock);
        if (offset >= e->size || size == 0 || e->n_units == 0)
                goto done;
        end = size > e->size - offset ? e->size : offset + size;

        /* Bytes that changed since they were verified are verified again. */
        if (fstat(e->fd, &st) < 0) {
                r = -errno;
                goto done;
        }
        if (st.st_ctim.tv_sec != e->stamp.tv_sec || st.st_ctim.tv_nsec != e->stamp.tv_nsec) {
                memset(e->verified, 0, e->n_units);
                e->stamp = st.st_ctim;
                e->recorded = false;
        }

        for (uint32_t u = (uint32_t) (offset / e->unit_bytes); u <= (end - 1) / e->unit_bytes; u++) {
                uint64_t start = (uint64_t) u * e->unit_bytes, len = MIN(e->unit_bytes, e->size - start);
                FetchState s = { .entry = e, .hasher = h, .offset = start, .end = start + len };
                Digest d;

                if (e->verified[u])
                        continue;
                if (e->present[u]) {
                        __atomic_add_fetch(&c->rehashed_bytes, len, __ATOMIC_RELAXED);
                        r = verify_unit(e, h, u, start, len);
                        if (r == -EUCLEAN)
                                corrupt = true;
                        if (r < 0)
                                goto done;
                        e->verified[u] = 1;
                        continue;
                }
                hit = false;
                r = fetch(start, len, fetch_sink, &s, userdata);
                wrote = true;
                if (r >= 0 && s.offset != s.end)
                        r = -EBADMSG; /* fewer bytes than the size says */
                if (r >= 0)
                        r = hasher_finish(h, &d);
                else
                        (void) hasher_finish(h, &d); /* reset for the next unit */
                if (r >= 0 && !digest_equal(&d, unit_digest(e, u)))
                        r = -EBADMSG;
                if (r < 0) {
                        /* Nothing of a unit that did not match stays. */
                        (void) fallocate(e->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t) start, (off_t) len);
                        goto done;
                }
                e->present[u] = e->verified[u] = 1;
                e->disk_bytes += len;
                fetched += len;
        }

        if (!e->complete && !memchr(e->present, 0, e->n_units)) {
                char from[DIGEST_HEX_LEN + 6], to[DIGEST_HEX_LEN + 6];

                name_of(e, true, from);
                name_of(e, false, to);
                if (!e->dropped && renameat(c->dir_fd, from, c->dir_fd, to) >= 0)
                        e->complete = true;
        }
done:
        /* Our own writes change the file's ctime: they are not a reason to verify again. */
        if (wrote && r >= 0 && fstat(e->fd, &st) >= 0)
                e->stamp = st.st_ctim;
        /* Complete and every unit verified, the file unchanged since (its ctime): recorded, so that the
         * next process trusts it without reading it. */
        if (r >= 0 && c->records && e->complete && !e->recorded && !e->dropped &&
            !memchr(e->verified, 0, e->n_units) && fstat(e->fd, &st) >= 0 &&
            st.st_ctim.tv_sec == e->stamp.tv_sec && st.st_ctim.tv_nsec == e->stamp.tv_nsec &&
            record_write(c, e, &st) >= 0)
                e->recorded = true;
        pthread_mutex_unlock(&e->lock);

        pthread_mutex_lock(&c->lock);
        if (corrupt)
                drop_locked(c, e);
        else if (!e->dropped) {
                /* A read is a use. */
                lru_unlink(c, e);
                lru_append(c, e);
                c->total_bytes += fetched;
                evict_locked(c);
        }
        pthread_mutex_unlock(&c->lock);
        if (r < 0)
                return r;
        *ret_fd = e->fd;
        *ret_fetched = fetched;
        *ret_hit = hit;
        return 0;
}

void imagefs_cache_usage(ImagefsCache *c, uint64_t *ret_bytes, uint64_t *ret_entries) {
        pthread_mutex_lock(&c->lock);
        *ret_bytes = c->total_bytes;
        *ret_entries = c->n_entries;
        pthread_mutex_unlock(&c->lock);
}

bool imagefs_cache_keeps_verification(ImagefsCache *c) {
        return c->records;
}

uint64_t imagefs_cache_rehashed_bytes(ImagefsCache *c) {
        return __atomic_load_n(&c->rehashed_bytes, __ATOMIC_RELAXED);
}
