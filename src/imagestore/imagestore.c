/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "alloc-util.h"
#include "fd-util.h"
#include "fileio.h"
#include "image-source.h"
#include "imagestore.h"
#include "layer-unpack.h"
#include "rm-rf.h"
#include "store.h"
#include "string-util.h"
#include "time-util.h"
#include "toc.h"

/* Progress of a blob's transfer is reported at most this often, so that a fast local copy does not
 * flood the relay's clients with messages. */
#define PROGRESS_INTERVAL_USEC (100 * USEC_PER_MSEC)

typedef struct InFlight {
        Digest diff_id;
        struct InFlight *next;
} InFlight;

struct ImageStore {
        Store *store;
        ImageDb db;

        /* Pulls shared, GC exclusive. */
        pthread_rwlock_t gc_lock;
        /* Guards db, in_flight, and images.json. */
        pthread_mutex_t lock;
        pthread_cond_t layer_done;
        InFlight *in_flight;
};

/* An image's numbers for a layer are its record's. */
static void layer_record_fill(LayerRecord *rec, const LayerInfo *l) {
        rec->toc_digest = l->toc_digest;
        rec->toc_bytes = l->toc_bytes;
        rec->toc_entries = l->toc_entries;
        rec->unpacked_bytes = l->unpacked_bytes;
}

/*
 * A store written by 0.2.0 has no layer records: each ToC its images name is read once, validated,
 * and recorded with its digest and the numbers it holds (which also corrects what 0.2.0 recorded
 * for a layer pulled while present but unused: "0B unpacked, 0 entries"). A ToC that cannot be
 * read stays unrecorded: a pull unpacks that layer again.
 */
static int upgrade_layer_records(ImageStore *is) {
        bool changed = false;
        int r;

        for (size_t i = 0; i < is->db.n_layers;) {
                LayerInfo *l = &is->db.layers[i];
                _cleanup_close_ int fd = -EBADF;
                _cleanup_toc_ Toc *t = NULL;
                const void *data;
                size_t size;

                if (!l->legacy) {
                        i++;
                        continue;
                }
                changed = true;
                fd = store_open_item(is->store, STORE_LAYER, &l->diff_id);
                r = fd < 0 ? fd : toc_open_fd(fd, &t);
                if (r >= 0) {
                        data = toc_data(t, &size);
                        r = toc_stats(t, &l->toc_entries, &l->unpacked_bytes);
                        if (r >= 0)
                                r = digest_buffer(data, size, &l->toc_digest);
                }
                if (r == -ENOMEM || r == -EIO)
                        return r;
                if (r < 0) {
                        (void) image_db_remove_layer(&is->db, &l->diff_id);
                        continue; /* another record is at i now */
                }
                l->toc_bytes = size;
                l->legacy = false;
                i++;
        }
        if (!changed)
                return 0;
        for (size_t i = 0; i < is->db.n_images; i++)
                for (size_t k = 0; k < is->db.images[i]->n_layers; k++) {
                        LayerRecord *rec = &is->db.images[i]->layers[k];
                        const LayerInfo *l = image_db_find_layer(&is->db, &rec->diff_id);

                        if (l)
                                layer_record_fill(rec, l);
                }
        return image_db_save(&is->db, store_root_fd(is->store));
}

int image_store_open(const char *path, ImageStore **ret, char **ret_error) {
        _cleanup_(image_store_freep) ImageStore *is = NULL;
        int r;

        is = new0(ImageStore, 1);
        if (!is)
                return -ENOMEM;
        pthread_rwlock_init(&is->gc_lock, NULL);
        pthread_mutex_init(&is->lock, NULL);
        pthread_cond_init(&is->layer_done, NULL);

        r = store_open(path, &is->store);
        if (r == -EBUSY)
                return set_error_message(ret_error, r, "%s is in use by another process", path);
        if (r < 0)
                return set_error_message(ret_error, r, "%s: %s", path, strerror(-r));
        r = image_db_load(&is->db, store_root_fd(is->store), ret_error);
        if (r < 0)
                return r;
        r = upgrade_layer_records(is);
        if (r < 0)
                return set_error_message(ret_error, r, "images.json: %s", strerror(-r));

        *ret = TAKE_PTR(is);
        return 0;
}

ImageStore *image_store_free(ImageStore *is) {
        if (!is)
                return NULL;
        image_db_done(&is->db);
        store_free(is->store);
        pthread_cond_destroy(&is->layer_done);
        pthread_mutex_destroy(&is->lock);
        pthread_rwlock_destroy(&is->gc_lock);
        return mfree(is);
}

/* Layers in flight */

/* Waits on layer_done (under is->lock) for a while: long enough not to spin, short enough that a
 * cancel is seen at once. -ECANCELED when cancel says so. */
static int wait_layer_done(ImageStore *is, const Cancel *cancel) {
        struct timespec until;

        if (cancel_requested(cancel))
                return -ECANCELED;
        clock_gettime(CLOCK_REALTIME, &until);
        until.tv_nsec += 200 * 1000 * 1000;
        if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
        }
        (void) pthread_cond_timedwait(&is->layer_done, &is->lock, &until);
        return 0;
}

static bool in_flight(ImageStore *is, const Digest *diff_id) {
        for (InFlight *f = is->in_flight; f; f = f->next)
                if (digest_equal(&f->diff_id, diff_id))
                        return true;
        return false;
}

/*
 * Returns 1 when the layer is present and recorded (now, or after another pull finished it), with
 * a copy of its record (without blobs) in *ret; 0 when the caller now owns it and must unpack it
 * and call layer_release(). A ToC the store has no record of (a crash between publishing it and
 * recording it) is not trusted, nor are numbers taken from anywhere but a record: such a layer is
 * unpacked again and its ToC replaced.
 */
static int layer_claim(ImageStore *is, const Digest *diff_id, const Cancel *cancel, LayerInfo *ret) {
        InFlight *f;
        int r;

        pthread_mutex_lock(&is->lock);
        for (;;) {
                if (!in_flight(is, diff_id)) {
                        const LayerInfo *l = image_db_find_layer(&is->db, diff_id);

                        r = l ? store_has(is->store, STORE_LAYER, diff_id) : 0;
                        if (r > 0) {
                                *ret = *l;
                                ret->blobs = NULL;
                                ret->n_blobs = 0;
                        }
                        if (r != 0)
                                break;
                        f = new0(InFlight, 1);
                        if (!f) {
                                r = -ENOMEM;
                                break;
                        }
                        f->diff_id = *diff_id;
                        f->next = is->in_flight;
                        is->in_flight = f;
                        r = 0;
                        break;
                }
                r = wait_layer_done(is, cancel);
                if (r < 0)
                        break;
        }
        pthread_mutex_unlock(&is->lock);
        return r;
}

/* Waits until no other pull works on key (a layer's diff_id, or a blob's digest), then takes it;
 * layer_release() gives it back. */
static int flight_enter(ImageStore *is, const Digest *key, const Cancel *cancel) {
        InFlight *f = NULL;
        int r = 0;

        pthread_mutex_lock(&is->lock);
        while (r >= 0 && in_flight(is, key))
                r = wait_layer_done(is, cancel);
        if (r >= 0) {
                f = new0(InFlight, 1);
                if (f) {
                        f->diff_id = *key;
                        f->next = is->in_flight;
                        is->in_flight = f;
                } else
                        r = -ENOMEM;
        }
        pthread_mutex_unlock(&is->lock);
        return r;
}

static bool layer_blob_known(ImageStore *is, const Digest *diff_id, const LayerBlob *b) {
        const LayerInfo *l;
        bool known;

        pthread_mutex_lock(&is->lock);
        l = image_db_find_layer(&is->db, diff_id);
        known = l && layer_info_has_blob(l, b);
        pthread_mutex_unlock(&is->lock);
        return known;
}

static void layer_release(ImageStore *is, const Digest *diff_id) {
        pthread_mutex_lock(&is->lock);
        for (InFlight **f = &is->in_flight; *f; f = &(*f)->next)
                if (digest_equal(&(*f)->diff_id, diff_id)) {
                        InFlight *gone = *f;

                        *f = gone->next;
                        free(gone);
                        break;
                }
        pthread_cond_broadcast(&is->layer_done);
        pthread_mutex_unlock(&is->lock);
}

/* Pulls hold the store shared, GC exclusively; either waits for the other, but not past cancel. */
static int store_lock(ImageStore *is, bool exclusive, const Cancel *cancel) {
        for (;;) {
                struct timespec until;
                int r;

                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_nsec += 200 * 1000 * 1000;
                if (until.tv_nsec >= 1000000000L) {
                        until.tv_sec++;
                        until.tv_nsec -= 1000000000L;
                }
                r = exclusive ? pthread_rwlock_timedwrlock(&is->gc_lock, &until)
                              : pthread_rwlock_timedrdlock(&is->gc_lock, &until);
                if (r == 0)
                        return 0;
                if (r != ETIMEDOUT)
                        return -r;
                if (cancel_requested(cancel))
                        return -ECANCELED;
        }
}

/* Pulling */

typedef struct Pull {
        ImageStore *is;
        ImageSource *source;
        const Cancel *cancel;
        pull_progress_t progress;
        void *userdata;
        PullProgress p;
        usec_t last_report;
} Pull;

static int report(Pull *pull) {
        return pull->progress ? pull->progress(&pull->p, pull->userdata) : 0;
}

typedef struct BlobSink {
        Pull *pull;
        StoreWriter *writer;
} BlobSink;

static int blob_sink(const void *data, size_t size, void *userdata) {
        BlobSink *b = userdata;
        Pull *pull = b->pull;
        usec_t t;
        int r;

        r = store_writer_write(b->writer, data, size);
        if (r < 0)
                return r;
        if (cancel_requested(pull->cancel))
                return -ECANCELED;
        if (!pull->p.layer)
                return 0;
        pull->p.layer_done_bytes += size;
        t = now(CLOCK_MONOTONIC);
        if (t - pull->last_report < PROGRESS_INTERVAL_USEC && pull->p.layer_done_bytes < pull->p.layer_total_bytes)
                return 0;
        pull->last_report = t;
        return report(pull);
}

/* Fetches a blob into the store (verified); 0 if it was there already. */
static int fetch_blob(Pull *pull, const OciDescriptor *d, char **ret_error) {
        _cleanup_store_writer_ StoreWriter *w = NULL;
        char buf[DIGEST_STRING_MAX];
        BlobSink sink = { .pull = pull };
        int r;

        r = store_has(pull->is->store, STORE_BLOB, &d->digest);
        if (r != 0)
                return r < 0 ? r : 0;
        r = store_writer_new(pull->is->store, STORE_BLOB, &d->digest, d->size, &w);
        if (r < 0)
                return set_error_message(ret_error, r, "store: %s", strerror(-r));
        sink.writer = w;
        r = image_source_get_blob(pull->source, d, blob_sink, &sink, ret_error);
        if (r < 0)
                return r;
        r = store_writer_commit(w, NULL, NULL);
        if (r == -EBADMSG)
                return set_error_message(ret_error, r, "blob %s: the content received does not match its digest",
                                         digest_to_string(&d->digest, buf));
        if (r < 0)
                return set_error_message(ret_error, r, "store: %s", strerror(-r));
        return 1;
}

/* Stores a document that was read and verified already. */
static int store_document(Pull *pull, const char *data, size_t size, const Digest *d) {
        _cleanup_store_writer_ StoreWriter *w = NULL;
        int r;

        r = store_writer_new(pull->is->store, STORE_BLOB, d, size, &w);
        if (r < 0)
                return r;
        r = store_writer_write(w, data, size);
        if (r < 0)
                return r;
        r = store_writer_commit(w, NULL, NULL);
        return r < 0 ? r : 0;
}

static int read_blob(Store *s, const Digest *d, size_t max, char **ret, size_t *ret_size) {
        _cleanup_close_ int fd = store_open_item(s, STORE_BLOB, d);

        return fd < 0 ? fd : read_full_fd(fd, max, ret, ret_size);
}

/*
 * A manifest may name a layer the store has by another blob than the ones it knows (compressed
 * otherwise, or named wrongly): the image record keeps that descriptor, so it is fetched and
 * checked like a blob that is unpacked (its digest while it arrives, then that it decompresses to
 * the layer's diff_id) and added to the layer's record; a blob that does not exist, or is not
 * that layer, fails the pull. Every descriptor an image record keeps has been verified.
 */
static int verify_blob(Pull *pull, const OciDescriptor *d, const Digest *diff_id, const LayerBlob *blob,
                       char **ret_error) {
        _cleanup_close_ int blob_fd = -EBADF;
        char name[DIGEST_STRING_MAX], want[DIGEST_STRING_MAX], got[DIGEST_STRING_MAX];
        Digest content;
        int r;

        /* One pull per blob: another may be verifying the same one. */
        r = flight_enter(pull->is, &d->digest, pull->cancel);
        if (r < 0)
                return r;
        if (layer_blob_known(pull->is, diff_id, blob)) {
                r = 0;
                goto finish;
        }
        pull->p.phase = PULL_FETCHING;
        r = report(pull);
        if (r >= 0)
                r = fetch_blob(pull, d, ret_error);
        if (r < 0)
                goto finish;
        blob_fd = store_open_item(pull->is->store, STORE_BLOB, &d->digest);
        r = blob_fd < 0 ? blob_fd : layer_diff_id(blob_fd, d->compression, pull->cancel, &content, ret_error);
        if (r >= 0 && !digest_equal(&content, diff_id))
                r = set_error_message(ret_error, -EBADMSG, "layer %s: its content has digest %s, the config says %s",
                                      digest_to_string(&d->digest, name), digest_to_string(&content, got),
                                      digest_to_string(diff_id, want));
        (void) store_remove_item(pull->is->store, STORE_BLOB, &d->digest);
        if (r < 0)
                goto finish;
        pthread_mutex_lock(&pull->is->lock);
        {
                LayerInfo *l = image_db_find_layer(&pull->is->db, diff_id);

                r = l ? layer_info_add_blob(l, blob) : -ENOENT;
                if (r >= 0)
                        r = image_db_save(&pull->is->db, store_root_fd(pull->is->store));
        }
        pthread_mutex_unlock(&pull->is->lock);
        if (r < 0)
                (void) set_error_message(ret_error, r, "images.json: %s", strerror(-r));
finish:
        layer_release(pull->is, &d->digest);
        return r;
}

/* Records a layer the pull unpacked (or found) and verified, before anything refers to it. */
static int record_layer(ImageStore *is, const LayerInfo *l) {
        int r;

        pthread_mutex_lock(&is->lock);
        r = image_db_put_layer(&is->db, l);
        if (r >= 0)
                r = image_db_save(&is->db, store_root_fd(is->store));
        pthread_mutex_unlock(&is->lock);
        return r;
}

/* Fetches, unpacks and publishes one layer, unless it is there or another pull does it. */
static int pull_layer(Pull *pull, const OciDescriptor *d, const Digest *diff_id, LayerRecord *rec,
                      char **ret_error) {
        _cleanup_store_writer_ StoreWriter *toc = NULL;
        _cleanup_close_ int blob_fd = -EBADF;
        _cleanup_free_ void *toc_data = NULL;
        char name[DIGEST_STRING_MAX], want[DIGEST_STRING_MAX], got[DIGEST_STRING_MAX];
        LayerBlob blob = { .digest = d->digest, .size = d->size, .compression = d->compression };
        LayerStats stats = {};
        LayerInfo info;
        size_t toc_size;
        int r;

        rec->digest = d->digest;
        rec->diff_id = *diff_id;
        rec->size_bytes = d->size;
        rec->media_type = strdup(d->media_type);
        if (!rec->media_type)
                return -ENOMEM;

        pull->p.layer = &d->digest;
        pull->p.layer_done_bytes = 0;
        pull->p.layer_total_bytes = d->size;

        r = layer_claim(pull->is, diff_id, pull->cancel, &info);
        if (r < 0)
                return r;
        if (r > 0)
                goto present;

        pull->p.phase = PULL_FETCHING;
        r = report(pull);
        if (r >= 0)
                r = fetch_blob(pull, d, ret_error);
        if (r < 0)
                goto finish;

        pull->p.phase = PULL_UNPACKING;
        r = report(pull);
        if (r < 0)
                goto finish;
        blob_fd = store_open_item(pull->is->store, STORE_BLOB, &d->digest);
        if (blob_fd < 0) {
                r = blob_fd;
                goto finish;
        }
        r = layer_unpack(pull->is->store, blob_fd, d->compression, pull->cancel, &toc_data, &toc_size, &stats,
                         ret_error);
        if (r < 0)
                goto finish;
        if (!digest_equal(&stats.diff_id, diff_id)) {
                r = set_error_message(ret_error, -EBADMSG, "layer %s: its content has digest %s, the config says %s",
                                      digest_to_string(&d->digest, name), digest_to_string(&stats.diff_id, got),
                                      digest_to_string(diff_id, want));
                goto finish;
        }
        r = store_writer_new(pull->is->store, STORE_LAYER, diff_id, UINT64_MAX, &toc);
        if (r >= 0)
                r = store_writer_write(toc, toc_data, toc_size);
        /* The objects the ToC names must be on disk before the ToC is. */
        if (r >= 0)
                r = store_sync(pull->is->store);
        if (r >= 0)
                r = store_writer_commit(toc, NULL, NULL);
        if (r < 0)
                goto finish;
        info = (LayerInfo) {
                .diff_id = *diff_id,
                .toc_digest = stats.toc_digest,
                .toc_bytes = stats.toc_bytes,
                .toc_entries = stats.entries,
                .unpacked_bytes = stats.unpacked_bytes,
                .blobs = &blob,
                .n_blobs = 1,
        };
        r = record_layer(pull->is, &info);
        if (r < 0) {
                (void) set_error_message(ret_error, r, "images.json: %s", strerror(-r));
                goto finish;
        }
        /* The unpacked layer replaces its blob. */
        (void) store_remove_item(pull->is->store, STORE_BLOB, &d->digest);
        r = 0;
finish:
        layer_release(pull->is, diff_id);
        if (r < 0)
                return r;
        layer_record_fill(rec, &info);
        pull->p.layers_done++;
        return 0;

present:
        if (!layer_blob_known(pull->is, diff_id, &blob)) {
                r = verify_blob(pull, d, diff_id, &blob, ret_error);
                if (r < 0)
                        return r;
        }
        /* Its numbers are its record's: read from its ToC when it was unpacked. */
        layer_record_fill(rec, &info);
        pull->p.phase = PULL_LAYER_PRESENT;
        pull->p.layers_done++;
        return report(pull);
}

static int pull_image(Pull *pull, const ImageReference *ref, const PullOptions *o, ImageRecord *rec,
                      char **ret_error) {
        _cleanup_oci_manifest_ OciManifest *top = NULL, *m = NULL;
        _cleanup_oci_image_config_ OciImageConfig *config = NULL;
        _cleanup_free_ char *data = NULL, *ct = NULL, *cdata = NULL;
        _cleanup_(oci_platform_done) OciPlatform host = {};
        const OciPlatform *want = o->platform;
        size_t size;
        Digest d;
        int r;

        pull->p.phase = PULL_RESOLVING;
        r = report(pull);
        if (r < 0)
                return r;

        r = image_source_get_document(pull->source, NULL, &data, &size, &ct, &d, ret_error);
        if (r < 0)
                return r;
        r = oci_manifest_parse(data, size, ct, &top, ret_error);
        if (r < 0)
                return r;
        if (!want) {
                r = oci_platform_host(&host);
                if (r < 0)
                        return r;
                want = &host;
        }

        if (top->kind == OCI_DOCUMENT_INDEX) {
                const OciDescriptor *entry;

                r = store_document(pull, data, size, &d);
                if (r < 0)
                        return r;
                rec->has_index_digest = true;
                rec->index_digest = d;
                r = oci_index_select(top, want, &entry, ret_error);
                if (r < 0)
                        return r;
                data = mfree(data);
                ct = mfree(ct);
                r = image_source_get_document(pull->source, &entry->digest, &data, &size, &ct, &d, ret_error);
                if (r < 0)
                        return r;
                r = oci_manifest_parse(data, size, ct, &m, ret_error);
                if (r < 0)
                        return r;
                if (m->kind != OCI_DOCUMENT_MANIFEST)
                        return set_error_message(ret_error, -EOPNOTSUPP, "nested image indexes are not supported");
        } else
                m = TAKE_PTR(top);

        r = store_document(pull, data, size, &d);
        if (r < 0)
                return r;
        rec->manifest_digest = d;
        rec->config_digest = m->config.digest;

        r = fetch_blob(pull, &m->config, ret_error);
        if (r < 0)
                return r;
        r = read_blob(pull->is->store, &m->config.digest, OCI_CONFIG_MAX_BYTES, &cdata, &size);
        if (r < 0)
                return set_error_message(ret_error, r, "config: %s", strerror(-r));
        r = oci_image_config_parse(cdata, size, &config, ret_error);
        if (r < 0)
                return r;
        if (config->n_diff_ids != m->n_layers)
                return set_error_message(ret_error, -EBADMSG, "the manifest has %zu layers, the config %zu diff_ids",
                                         m->n_layers, config->n_diff_ids);
        if (o->platform && !oci_platform_matches(&config->platform, o->platform))
                return set_error_message(ret_error, -ENOENT, "the image is for %s/%s, not %s/%s",
                                         strna(config->platform.os), strna(config->platform.architecture),
                                         strna(o->platform->os), strna(o->platform->architecture));
        rec->platform = config->platform;
        config->platform = (OciPlatform) {};

        rec->layers = new0(LayerRecord, m->n_layers);
        if (!rec->layers)
                return -ENOMEM;
        pull->p.layers_total = (unsigned) m->n_layers;
        for (size_t i = 0; i < m->n_layers; i++) {
                if (cancel_requested(pull->cancel))
                        return set_error_message(ret_error, -ECANCELED, "cancelled");
                rec->n_layers++;
                r = pull_layer(pull, &m->layers[i], &config->diff_ids[i], &rec->layers[i], ret_error);
                if (r < 0)
                        return r;
        }
        pull->p.layer = NULL;
        return 0;
}

int image_store_pull(ImageStore *is, const PullOptions *o, pull_progress_t progress, void *userdata,
                     ImageRecord **ret, char **ret_error) {
        _cleanup_image_reference_ ImageReference *ref = NULL;
        _cleanup_image_record_ ImageRecord *rec = NULL, *copy = NULL;
        _cleanup_free_ char *work = NULL;
        ImageSourceOptions so = { .plain_http = o->plain_http, .ca_file = o->ca_file, .cancel = o->cancel };
        Pull pull = { .is = is, .cancel = o->cancel, .progress = progress, .userdata = userdata };
        int r;

        r = image_reference_parse(o->source, &ref);
        if (r < 0)
                return set_error_message(ret_error, r, "invalid image source \"%s\"", strna(o->source));
        rec = new0(ImageRecord, 1);
        if (!rec)
                return -ENOMEM;
        if (o->name) {
                if (!image_name_is_valid(o->name))
                        return set_error_message(ret_error, -EINVAL, "invalid image name \"%s\"", o->name);
                rec->name = strdup(o->name);
                if (!rec->name)
                        return -ENOMEM;
        } else {
                r = image_reference_default_name(ref, &rec->name);
                if (r < 0)
                        return r;
        }
        rec->source = strdup(o->source);
        if (!rec->source)
                return -ENOMEM;

        r = store_lock(is, false, o->cancel);
        if (r < 0)
                return set_error_message(ret_error, r, "cancelled while garbage collection ran");
        if (ref->transport == IMAGE_TRANSPORT_OCI_ARCHIVE || ref->transport == IMAGE_TRANSPORT_DOCKER_ARCHIVE) {
                /* Archives are extracted below tmp/, which the next store_open() empties. */
                work = strjoin(store_root(is->store), "/tmp/pull.XXXXXX");
                if (!work) {
                        r = -ENOMEM;
                        goto finish;
                }
                if (!mkdtemp(work)) {
                        r = set_error_message(ret_error, -errno, "%s: %m", work);
                        goto finish;
                }
                so.work_dir = work;
        }
        r = image_source_open(ref, &so, &pull.source, ret_error);
        if (r >= 0)
                r = pull_image(&pull, ref, o, rec, ret_error);
        pull.source = image_source_free(pull.source);
        if (work)
                (void) rmdir(work);
        if (r < 0)
                goto finish;

        rec->pulled_usec = now(CLOCK_REALTIME);
        r = image_record_copy(rec, &copy);
        if (r < 0)
                goto finish;
        pthread_mutex_lock(&is->lock);
        r = image_db_put(&is->db, rec, NULL);
        if (r >= 0) {
                rec = NULL; /* the database's now */
                r = image_db_save(&is->db, store_root_fd(is->store));
                if (r < 0)
                        (void) set_error_message(ret_error, r, "images.json: %s", strerror(-r));
        }
        pthread_mutex_unlock(&is->lock);
        if (r < 0)
                goto finish;

        pull.p = (PullProgress) { .phase = PULL_DONE, .image = copy, .layers_done = (unsigned) copy->n_layers,
                                  .layers_total = (unsigned) copy->n_layers };
        (void) report(&pull);
        *ret = TAKE_PTR(copy);
finish:
        pthread_rwlock_unlock(&is->gc_lock);
        return r;
}

/* Records */

void image_record_list_free(ImageRecord **list, size_t n) {
        for (size_t i = 0; i < n; i++)
                image_record_free(list[i]);
        free(list);
}

int image_store_list(ImageStore *is, ImageRecord ***ret, size_t *ret_n) {
        ImageRecord **list;
        size_t n = 0;
        int r = 0;

        pthread_mutex_lock(&is->lock);
        list = new0(ImageRecord *, is->db.n_images);
        if (!list)
                r = -ENOMEM;
        for (size_t i = 0; r >= 0 && i < is->db.n_images; i++) {
                r = image_record_copy(is->db.images[i], &list[i]);
                if (r >= 0)
                        n++;
        }
        pthread_mutex_unlock(&is->lock);
        if (r < 0) {
                image_record_list_free(list, n);
                return r;
        }
        *ret = list;
        *ret_n = n;
        return 0;
}

int image_store_get(ImageStore *is, const char *name, ImageRecord **ret) {
        const ImageRecord *r;
        int k;

        pthread_mutex_lock(&is->lock);
        r = image_db_find(&is->db, name);
        k = r ? image_record_copy(r, ret) : -ENOENT;
        pthread_mutex_unlock(&is->lock);
        return k;
}

static bool layer_referenced(const ImageDb *db, const Digest *diff_id) {
        for (size_t i = 0; i < db->n_images; i++)
                for (size_t k = 0; k < db->images[i]->n_layers; k++)
                        if (digest_equal(&db->images[i]->layers[k].diff_id, diff_id))
                                return true;
        return false;
}

int image_store_remove(ImageStore *is, const char *name, Digest **ret_unreferenced, size_t *ret_n) {
        _cleanup_image_record_ ImageRecord *gone = NULL;
        _cleanup_free_ Digest *list = NULL;
        size_t n = 0;
        int r;

        pthread_mutex_lock(&is->lock);
        r = image_db_remove(&is->db, name, &gone);
        if (r >= 0) {
                r = image_db_save(&is->db, store_root_fd(is->store));
                if (r < 0) {
                        /* Not saved: keep it known, as it still is on disk. */
                        (void) image_db_put(&is->db, TAKE_PTR(gone), NULL);
                }
        }
        if (r >= 0 && ret_unreferenced) {
                list = new0(Digest, gone->n_layers);
                if (!list)
                        r = -ENOMEM;
                for (size_t i = 0; r >= 0 && i < gone->n_layers; i++) {
                        bool dup = false;

                        for (size_t k = 0; k < n; k++)
                                dup = dup || digest_equal(&list[k], &gone->layers[i].diff_id);
                        if (!dup && !layer_referenced(&is->db, &gone->layers[i].diff_id))
                                list[n++] = gone->layers[i].diff_id;
                }
        }
        pthread_mutex_unlock(&is->lock);
        if (r < 0)
                return r;
        if (ret_unreferenced) {
                *ret_unreferenced = TAKE_PTR(list);
                *ret_n = n;
        }
        return 0;
}

int image_store_layer(ImageStore *is, const Digest *diff_id, LayerInfo *ret) {
        const LayerInfo *l;

        pthread_mutex_lock(&is->lock);
        l = image_db_find_layer(&is->db, diff_id);
        if (l) {
                *ret = *l;
                ret->blobs = NULL;
                ret->n_blobs = 0;
        }
        pthread_mutex_unlock(&is->lock);
        return l ? 0 : -ENOENT;
}

/* The ToC file of a recorded layer: a regular file of the recorded size, or -EUCLEAN. */
static int open_toc_file(ImageStore *is, const LayerInfo *l) {
        _cleanup_close_ int fd = -EBADF;
        struct stat st;

        fd = store_open_item(is->store, STORE_LAYER, &l->diff_id);
        if (fd == -ENOENT)
                return -EUCLEAN; /* recorded, and gone */
        if (fd < 0)
                return fd;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode) || (uint64_t) st.st_size != l->toc_bytes || l->toc_bytes > TOC_SIZE_MAX)
                return -EUCLEAN;
        return TAKE_FD(fd);
}

int image_store_load_toc(ImageStore *is, const LayerInfo *l, Toc **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ uint8_t *buf = NULL;
        size_t done = 0, size = (size_t) l->toc_bytes;
        Digest d;
        int r;

        fd = open_toc_file(is, l);
        if (fd < 0)
                return fd;
        buf = malloc(size ?: 1);
        if (!buf)
                return -ENOMEM;
        while (done < size) {
                ssize_t k = pread(fd, buf + done, size - done, (off_t) done);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return -errno;
                if (k == 0)
                        return -EUCLEAN; /* truncated since the fstat() */
                done += (size_t) k;
        }
        /* Verified before anyone sees a byte of it. */
        r = digest_buffer(buf, size, &d);
        if (r < 0)
                return r;
        if (!digest_equal(&d, &l->toc_digest))
                return -EUCLEAN;
        r = toc_open_owned(buf, size, ret);
        if (r == -EBADMSG)
                return -EUCLEAN; /* the digest matched: a record made over a damaged ToC */
        if (r < 0)
                return r;
        TAKE_PTR(buf);
        return 0;
}

int image_store_open_toc(ImageStore *is, const Digest *diff_id, LayerInfo *ret_info) {
        LayerInfo l;
        int r;

        r = image_store_layer(is, diff_id, &l);
        if (r < 0)
                return r;
        r = open_toc_file(is, &l);
        if (r < 0)
                return r;
        *ret_info = l;
        return r;
}

int image_store_open_object(ImageStore *is, const Digest *d) {
        return store_open_item(is->store, STORE_OBJECT, d);
}

/* Garbage collection */

typedef struct DigestSet {
        Digest *items;
        size_t n, allocated;
} DigestSet;

static void digest_set_done(DigestSet *s) {
        s->items = mfree(s->items);
        s->n = s->allocated = 0;
}

static int digest_set_add(DigestSet *s, const Digest *d) {
        if (s->n == s->allocated) {
                Digest *b = reallocarray(s->items, s->allocated * 2 + 64, sizeof(Digest));

                if (!b)
                        return -ENOMEM;
                s->items = b;
                s->allocated = s->allocated * 2 + 64;
        }
        s->items[s->n++] = *d;
        return 0;
}

static int compare_digests(const void *a, const void *b) {
        return digest_compare(a, b);
}

static void digest_set_seal(DigestSet *s) {
        if (s->n > 0)
                qsort(s->items, s->n, sizeof(Digest), compare_digests);
}

static bool digest_set_contains(const DigestSet *s, const Digest *d) {
        return s->n > 0 && bsearch(d, s->items, s->n, sizeof(Digest), compare_digests);
}

static int add_object(const Digest *d, void *userdata) {
        return digest_set_add(userdata, d);
}

static int sweep(ImageStore *is, StoreKind kind, const DigestSet *live, bool dry_run, uint64_t *removed,
                 uint64_t *freed) {
        _cleanup_free_ Digest *all = NULL;
        size_t n;
        int r;

        r = store_list(is->store, kind, &all, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                _cleanup_free_ char *path = NULL;
                struct stat st;

                if (digest_set_contains(live, &all[i]))
                        continue;
                r = store_item_path(kind, &all[i], &path);
                if (r < 0)
                        return r;
                if (fstatat(store_root_fd(is->store), path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue;
                if (!dry_run) {
                        r = store_remove_item(is->store, kind, &all[i]);
                        if (r < 0)
                                return r;
                }
                (*removed)++;
                /* Blocks, not the apparent size: what the file system gets back. */
                *freed += (uint64_t) st.st_blocks * 512;
        }
        return 0;
}

/* The records of layers GC removed (pulls wait: GC holds the store exclusively). */
static int forget_layers(ImageStore *is, const DigestSet *live) {
        bool changed = false;
        int r = 0;

        pthread_mutex_lock(&is->lock);
        for (size_t i = 0; i < is->db.n_layers;)
                if (!digest_set_contains(live, &is->db.layers[i].diff_id)) {
                        (void) image_db_remove_layer(&is->db, &is->db.layers[i].diff_id);
                        changed = true;
                } else
                        i++;
        if (changed)
                r = image_db_save(&is->db, store_root_fd(is->store));
        pthread_mutex_unlock(&is->lock);
        return r;
}

int image_store_gc(ImageStore *is, bool dry_run, const Cancel *cancel, GcStats *ret, char **ret_error) {
        _cleanup_(digest_set_done) DigestSet blobs = {}, layers = {}, objects = {};
        GcStats stats = {};
        int r = 0;

        r = store_lock(is, true, cancel);
        if (r < 0)
                return set_error_message(ret_error, r, "cancelled while waiting for the pulls in flight");
        pthread_mutex_lock(&is->lock);
        for (size_t i = 0; r >= 0 && i < is->db.n_images; i++) {
                const ImageRecord *img = is->db.images[i];

                r = digest_set_add(&blobs, &img->manifest_digest);
                if (r >= 0)
                        r = digest_set_add(&blobs, &img->config_digest);
                if (r >= 0 && img->has_index_digest)
                        r = digest_set_add(&blobs, &img->index_digest);
                for (size_t k = 0; r >= 0 && k < img->n_layers; k++)
                        r = digest_set_add(&layers, &img->layers[k].diff_id);
        }
        pthread_mutex_unlock(&is->lock);
        if (r < 0)
                goto finish;
        digest_set_seal(&blobs);
        digest_set_seal(&layers);

        /* Content is live when a live layer's ToC names it. A ToC that cannot be read stops the
         * collection: deleting what it names would damage an image. */
        for (size_t i = 0; i < layers.n; i++) {
                _cleanup_toc_ Toc *t = NULL;
                char buf[DIGEST_STRING_MAX];
                LayerInfo l;

                /* A layer without a record has no ToC to trust: the next pull unpacks it again. */
                if (image_store_layer(is, &layers.items[i], &l) < 0)
                        continue;
                r = image_store_load_toc(is, &l, &t);
                if (r >= 0)
                        r = toc_for_each_content(t, add_object, &objects);
                if (r < 0) {
                        r = set_error_message(ret_error, r, "layer %s: cannot read its table of contents: %s",
                                              digest_to_string(&layers.items[i], buf), strerror(-r));
                        goto finish;
                }
        }
        digest_set_seal(&objects);

        r = sweep(is, STORE_BLOB, &blobs, dry_run, &stats.blobs_removed, &stats.freed_bytes);
        if (r >= 0)
                r = sweep(is, STORE_LAYER, &layers, dry_run, &stats.layers_removed, &stats.freed_bytes);
        if (r >= 0 && !dry_run)
                r = forget_layers(is, &layers);
        if (r >= 0)
                r = sweep(is, STORE_OBJECT, &objects, dry_run, &stats.objects_removed, &stats.freed_bytes);
        if (r < 0) {
                (void) set_error_message(ret_error, r, "store: %s", strerror(-r));
                goto finish;
        }
        *ret = stats;
finish:
        pthread_rwlock_unlock(&is->gc_lock);
        return r;
}
