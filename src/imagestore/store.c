/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <dirent.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "mkdir.h"
#include "rm-rf.h"
#include "store.h"

struct Store {
        char *root;
        int root_fd;
        int lock_fd;
        int tmp_fd;
        int kind_fd[_STORE_KIND_MAX];
};

struct StoreWriter {
        Store *store;
        StoreKind kind;
        bool has_expected;
        Digest expected;
        uint64_t max_bytes;
        uint64_t size;
        Hasher *hasher;
        int fd;
        char tmp_name[32];
        bool broken;
};

static const char *const kind_dir[_STORE_KIND_MAX] = {
        [STORE_BLOB] = "blobs/sha256",
        [STORE_OBJECT] = "objects/sha256",
        [STORE_LAYER] = "layers/sha256",
};

static int open_dir_at(int dir_fd, const char *path) {
        int fd = openat(dir_fd, path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

        return fd < 0 ? -errno : fd;
}

int store_open(const char *path, Store **ret) {
        _cleanup_(store_freep) Store *s = NULL;
        int r;

        if (!path || path[0] != '/')
                return -EINVAL;

        s = new0(Store, 1);
        if (!s)
                return -ENOMEM;
        s->root_fd = s->lock_fd = s->tmp_fd = -EBADF;
        for (StoreKind k = 0; k < _STORE_KIND_MAX; k++)
                s->kind_fd[k] = -EBADF;
        s->root = strdup(path);
        if (!s->root)
                return -ENOMEM;

        /* The store holds image contents that may not be public: only its owner reads it. */
        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return -errno;
        s->root_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->root_fd < 0)
                return -errno;

        s->lock_fd = openat(s->root_fd, "lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (s->lock_fd < 0)
                return -errno;
        if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0)
                return errno == EWOULDBLOCK ? -EBUSY : -errno;

        r = mkdirat_p(s->root_fd, "tmp", 0700);
        if (r < 0)
                return r;
        s->tmp_fd = open_dir_at(s->root_fd, "tmp");
        if (s->tmp_fd < 0)
                return s->tmp_fd;
        /* Whatever is in tmp/ was being written when its writer died: never published, never
         * referenced. */
        r = rm_rf_children(s->tmp_fd);
        if (r < 0)
                return r;

        for (StoreKind k = 0; k < _STORE_KIND_MAX; k++) {
                r = mkdirat_p(s->root_fd, kind_dir[k], 0700);
                if (r < 0)
                        return r;
                s->kind_fd[k] = open_dir_at(s->root_fd, kind_dir[k]);
                if (s->kind_fd[k] < 0)
                        return s->kind_fd[k];
        }

        *ret = TAKE_PTR(s);
        return 0;
}

Store *store_free(Store *s) {
        if (!s)
                return NULL;
        for (StoreKind k = 0; k < _STORE_KIND_MAX; k++)
                safe_close(s->kind_fd[k]);
        safe_close(s->tmp_fd);
        safe_close(s->lock_fd); /* releases the flock */
        safe_close(s->root_fd);
        free(s->root);
        return mfree(s);
}

const char *store_root(const Store *s) {
        return s->root;
}

int store_root_fd(const Store *s) {
        return s->root_fd;
}

/* "ab/abcd..." below the kind's directory. */
static void item_name(const Digest *d, char buf[static 3 + DIGEST_HEX_LEN + 1]) {
        digest_to_hex(d, buf + 3);
        buf[0] = buf[3];
        buf[1] = buf[4];
        buf[2] = '/';
}

int store_item_path(StoreKind kind, const Digest *d, char **ret) {
        char name[3 + DIGEST_HEX_LEN + 1];
        char *p;

        if (kind < 0 || kind >= _STORE_KIND_MAX)
                return -EINVAL;
        item_name(d, name);
        if (asprintf(&p, "%s/%s", kind_dir[kind], name) < 0)
                return -ENOMEM;
        *ret = p;
        return 0;
}

int store_has(Store *s, StoreKind kind, const Digest *d) {
        char name[3 + DIGEST_HEX_LEN + 1];

        item_name(d, name);
        if (faccessat(s->kind_fd[kind], name, F_OK, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        return 1;
}

int store_open_item(Store *s, StoreKind kind, const Digest *d) {
        char name[3 + DIGEST_HEX_LEN + 1];
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        item_name(d, name);
        /* O_NONBLOCK: anything but a regular file there is damage, refused rather than waited on
         * (a FIFO would block the open until someone writes to it). */
        fd = openat(s->kind_fd[kind], name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EUCLEAN;
        return TAKE_FD(fd);
}

int store_remove_item(Store *s, StoreKind kind, const Digest *d) {
        char name[3 + DIGEST_HEX_LEN + 1];

        item_name(d, name);
        if (unlinkat(s->kind_fd[kind], name, 0) < 0)
                return errno == ENOENT ? 0 : -errno;
        return 1;
}

int store_list(Store *s, StoreKind kind, Digest **ret, size_t *ret_n) {
        _cleanup_closedir_ DIR *top = NULL;
        _cleanup_free_ Digest *list = NULL;
        size_t n = 0, allocated = 0;
        struct dirent *de;
        int r;

        if (kind < 0 || kind >= _STORE_KIND_MAX)
                return -EINVAL;
        r = opendir_fd(s->kind_fd[kind], &top);
        if (r < 0)
                return r;

        while ((errno = 0, de = readdir(top))) {
                _cleanup_closedir_ DIR *sub = NULL;
                struct dirent *e;

                if (strlen(de->d_name) != 2 || de->d_name[0] == '.')
                        continue;
                r = opendirat(dirfd(top), de->d_name, &sub);
                if (r < 0)
                        return r;
                while ((errno = 0, e = readdir(sub))) {
                        Digest d;

                        /* Anything else in there is not the store's: left alone. */
                        if (digest_from_hex(e->d_name, &d) < 0 || strncmp(e->d_name, de->d_name, 2) != 0)
                                continue;
                        if (n == allocated) {
                                Digest *b = reallocarray(list, allocated * 2 + 64, sizeof(Digest));

                                if (!b)
                                        return -ENOMEM;
                                list = b;
                                allocated = allocated * 2 + 64;
                        }
                        list[n++] = d;
                }
                if (errno != 0)
                        return -errno;
        }
        if (errno != 0)
                return -errno;

        *ret = TAKE_PTR(list);
        *ret_n = n;
        return 0;
}

int store_sync(Store *s) {
        return syncfs(s->root_fd) < 0 ? -errno : 0;
}

int store_writer_new(Store *s, StoreKind kind, const Digest *expected, uint64_t max_bytes,
                     StoreWriter **ret) {
        static atomic_uint_fast64_t counter;
        _cleanup_(store_writer_freep) StoreWriter *w = NULL;
        uint64_t salt;
        int r;

        if (kind < 0 || kind >= _STORE_KIND_MAX || (kind == STORE_LAYER && !expected))
                return -EINVAL;

        w = new0(StoreWriter, 1);
        if (!w)
                return -ENOMEM;
        w->store = s;
        w->kind = kind;
        w->fd = -EBADF;
        w->max_bytes = max_bytes;
        if (expected) {
                w->has_expected = true;
                w->expected = *expected;
        }
        r = hasher_new(&w->hasher);
        if (r < 0)
                return r;

        /* Unique among this process's writers by the counter and among processes that shared the
         * store before (a crashed owner's leftovers are gone, but be safe) by the salt. */
        if (getrandom(&salt, sizeof(salt), GRND_NONBLOCK) != sizeof(salt))
                salt = (uint64_t) getpid();
        snprintf(w->tmp_name, sizeof(w->tmp_name), "w.%08x.%06x", (unsigned) salt,
                 (unsigned) (atomic_fetch_add(&counter, 1) & 0xffffff));
        w->fd = openat(s->tmp_fd, w->tmp_name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0400);
        if (w->fd < 0) {
                w->tmp_name[0] = 0;
                return -errno;
        }

        *ret = TAKE_PTR(w);
        return 0;
}

int store_writer_write(StoreWriter *w, const void *data, size_t size) {
        const uint8_t *p = data;
        int r;

        if (w->broken || w->fd < 0)
                return -EBADF;
        if (size > w->max_bytes - MIN(w->size, w->max_bytes)) {
                w->broken = true;
                return -EFBIG;
        }

        r = hasher_update(w->hasher, data, size);
        if (r < 0) {
                w->broken = true;
                return r;
        }
        while (size > 0) {
                ssize_t n = write(w->fd, p, size);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        w->broken = true;
                        return -errno;
                }
                p += n;
                size -= (size_t) n;
                w->size += (uint64_t) n;
        }
        return 0;
}

int store_writer_fd(StoreWriter *w) {
        return w->kind == STORE_LAYER && !w->broken ? w->fd : -EBADF;
}

uint64_t store_writer_size(const StoreWriter *w) {
        return w->size;
}

static void writer_discard(StoreWriter *w) {
        w->fd = safe_close(w->fd);
        if (w->tmp_name[0]) {
                (void) unlinkat(w->store->tmp_fd, w->tmp_name, 0);
                w->tmp_name[0] = 0;
        }
}

int store_writer_commit(StoreWriter *w, Digest *ret_digest, uint64_t *ret_size) {
        char name[3 + DIGEST_HEX_LEN + 1];
        int kind_fd = w->store->kind_fd[w->kind], r;
        Digest d;

        if (w->broken || w->fd < 0)
                return -EBADF;

        if (w->kind == STORE_LAYER) {
                struct stat st;

                /* Its writer may have written through store_writer_fd(). */
                if (fstat(w->fd, &st) < 0) {
                        r = -errno;
                        goto fail;
                }
                w->size = (uint64_t) st.st_size;
                d = w->expected;
        } else {
                r = hasher_finish(w->hasher, &d);
                if (r < 0)
                        goto fail;
                if (w->has_expected && !digest_equal(&d, &w->expected)) {
                        r = -EBADMSG;
                        goto fail;
                }
        }

        /* Blobs and ToCs are few and are what makes the rest reachable: durable now. Objects are
         * made durable in bulk by store_sync() before anything refers to them. */
        if (w->kind != STORE_OBJECT && fsync(w->fd) < 0) {
                r = -errno;
                goto fail;
        }
        w->fd = safe_close(w->fd);

        item_name(&d, name);
        name[2] = 0;
        if (mkdirat(kind_fd, name, 0700) < 0 && errno != EEXIST) {
                r = -errno;
                goto fail;
        }
        name[2] = '/';

        /* No replace: the item that is already there has the same content by its name, and
         * replacing it would change the inode under readers that have it open. A ToC is named by
         * something else than its bytes: a new one replaces one the store has no record of (the
         * image store decides; readers hold copies, never the file). */
        if (renameat2(w->store->tmp_fd, w->tmp_name, kind_fd, name,
                      w->kind == STORE_LAYER ? 0 : RENAME_NOREPLACE) < 0) {
                if (errno != EEXIST) {
                        r = -errno;
                        goto fail;
                }
                writer_discard(w);
                r = 0;
        } else {
                w->tmp_name[0] = 0;
                r = 1;
        }

        if (ret_digest)
                *ret_digest = d;
        if (ret_size)
                *ret_size = w->size;
        return r;

fail:
        w->broken = true;
        writer_discard(w);
        return r;
}

StoreWriter *store_writer_free(StoreWriter *w) {
        if (!w)
                return NULL;
        if (w->store)
                writer_discard(w);
        hasher_free(w->hasher);
        return mfree(w);
}
