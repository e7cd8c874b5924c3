/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <curl/curl.h>
#include <inttypes.h>
#include <stdio.h>
#include <strings.h>

#include "alloc-util.h"
#include "oci-util.h"
#include "registry-util.h"
#include "registry.h"
#include "string-util.h"

/* A registry that sends less than 1 KiB/s for a minute is gone; a pull must fail and be retried
 * rather than hang its callers. */
#define LOW_SPEED_BYTES 1024L
#define LOW_SPEED_SEC 60L
#define CONNECT_TIMEOUT_SEC 30L
/* The distribution spec redirects blobs to storage once; a few more allow for CDNs. */
#define MAX_REDIRECTS 5L
/* Error bodies are kept for the message only. */
#define ERROR_BODY_MAX 512
#define TOKEN_RESPONSE_MAX (128U * 1024U)

#define MANIFEST_ACCEPT                                                                                 \
        "Accept: application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, " \
        "application/vnd.docker.distribution.manifest.list.v2+json, "                                   \
        "application/vnd.docker.distribution.manifest.v2+json"

struct RegistryClient {
        CURL *curl;
        char *base; /* "https://host:port" */
        char *ca_file;
        const Cancel *cancel;
        char *token;
        char *token_repository;
};

typedef struct Request {
        long status;
        char *content_type;
        char *www_authenticate;

        /* Where a 2xx body goes: into buf (up to max), or to sink. */
        char *buf;
        size_t size, max;
        registry_sink_t sink;
        void *userdata;
        uint64_t expected, received;
        int error;

        char error_body[ERROR_BODY_MAX + 1];
        size_t error_body_size;
} Request;

static void request_done(Request *q) {
        free(q->content_type);
        free(q->www_authenticate);
        free(q->buf);
}

static bool status_ok(long status) {
        return status >= 200 && status < 300;
}

static size_t on_header(char *data, size_t size, size_t n, void *userdata) {
        Request *q = userdata;
        size_t len = size * n;
        _cleanup_free_ char *line = memdup_suffix0(data, len);
        char *value;

        if (!line)
                return 0;
        line[strcspn(line, "\r\n")] = 0;

        /* Each response of a redirect or auth chain starts with its status line. */
        if (startswith(line, "HTTP/")) {
                const char *sp = strchr(line, ' ');

                q->status = sp ? strtol(sp + 1, NULL, 10) : 0;
                q->content_type = mfree(q->content_type);
                q->www_authenticate = mfree(q->www_authenticate);
                q->error_body_size = 0;
                return len;
        }

        value = strchr(line, ':');
        if (!value)
                return len;
        *value++ = 0;
        while (*value == ' ' || *value == '\t')
                value++;
        if (strcasecmp(line, "Content-Type") == 0) {
                if (free_and_strdup(&q->content_type, value) < 0)
                        return 0;
        } else if (strcasecmp(line, "WWW-Authenticate") == 0 && !q->www_authenticate) {
                if (free_and_strdup(&q->www_authenticate, value) < 0)
                        return 0;
        }
        return len;
}

static size_t on_body(char *data, size_t size, size_t n, void *userdata) {
        Request *q = userdata;
        size_t len = size * n;

        if (!status_ok(q->status)) {
                size_t k = MIN(len, ERROR_BODY_MAX - q->error_body_size);

                memcpy(q->error_body + q->error_body_size, data, k);
                q->error_body_size += k;
                return len;
        }

        if (q->sink) {
                int r;

                if (len > q->expected - q->received) {
                        q->error = -E2BIG;
                        return 0; /* CURLE_WRITE_ERROR */
                }
                r = q->sink(data, len, q->userdata);
                if (r < 0) {
                        q->error = r;
                        return 0;
                }
                q->received += len;
                return len;
        }

        if (len > q->max - q->size) {
                q->error = -E2BIG;
                return 0;
        }
        if (!q->buf) {
                q->buf = malloc(q->max + 1);
                if (!q->buf) {
                        q->error = -ENOMEM;
                        return 0;
                }
        }
        memcpy(q->buf + q->size, data, len);
        q->size += len;
        q->buf[q->size] = 0;
        return len;
}

static int curl_errno(CURLcode code) {
        switch (code) {
        case CURLE_COULDNT_CONNECT:
                return -ECONNREFUSED;
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_RESOLVE_PROXY:
                return -EHOSTUNREACH;
        case CURLE_OPERATION_TIMEDOUT:
                return -ETIMEDOUT;
        case CURLE_OUT_OF_MEMORY:
                return -ENOMEM;
        case CURLE_RECV_ERROR:
        case CURLE_SEND_ERROR:
        case CURLE_PARTIAL_FILE:
        case CURLE_GOT_NOTHING:
        case CURLE_HTTP2_STREAM:
                return -ECONNRESET;
        default:
                return -EPROTO;
        }
}

/* The registry's own words from an error body, printable and on one line. */
static const char *error_excerpt(Request *q) {
        size_t n = q->error_body_size;

        for (size_t i = 0; i < n; i++)
                if ((unsigned char) q->error_body[i] < ' ' || q->error_body[i] == 0x7f)
                        q->error_body[i] = ' ';
        while (n > 0 && q->error_body[n - 1] == ' ')
                n--;
        q->error_body[n] = 0;
        return q->error_body;
}

/* curl calls this about once a second while a transfer stalls, more often while data flows. */
static int on_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
        RegistryClient *c = userdata;

        return cancel_requested(c->cancel) ? 1 : 0;
}

static int perform(RegistryClient *c, Request *q, const char *url, const char *accept, bool with_token,
                   char **ret_error) {
        struct curl_slist *headers = NULL;
        _cleanup_free_ char *auth = NULL;
        char curl_message[CURL_ERROR_SIZE] = "";
        CURLcode code;

        curl_easy_reset(c->curl);
        if (accept)
                headers = curl_slist_append(headers, accept);
        if (with_token && c->token) {
                /* curl does not forward this header to another host on a redirect, so blob
                 * storage never sees the registry's token. */
                auth = strjoin("Authorization: Bearer ", c->token);
                if (!auth)
                        return -ENOMEM;
                headers = curl_slist_append(headers, auth);
        }

        (void) curl_easy_setopt(c->curl, CURLOPT_URL, url);
        (void) curl_easy_setopt(c->curl, CURLOPT_HTTPGET, 1L);
        (void) curl_easy_setopt(c->curl, CURLOPT_PROTOCOLS_STR, "http,https");
        (void) curl_easy_setopt(c->curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
        (void) curl_easy_setopt(c->curl, CURLOPT_FOLLOWLOCATION, 1L);
        (void) curl_easy_setopt(c->curl, CURLOPT_MAXREDIRS, MAX_REDIRECTS);
        (void) curl_easy_setopt(c->curl, CURLOPT_CONNECTTIMEOUT, CONNECT_TIMEOUT_SEC);
        (void) curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, LOW_SPEED_BYTES);
        (void) curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, LOW_SPEED_SEC);
        /* The relay's threads must not get curl's SIGALRM for DNS timeouts. */
        (void) curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
        (void) curl_easy_setopt(c->curl, CURLOPT_USERAGENT, "tonari-relay/" PACKAGE_VERSION);
        (void) curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, headers);
        (void) curl_easy_setopt(c->curl, CURLOPT_HEADERFUNCTION, on_header);
        (void) curl_easy_setopt(c->curl, CURLOPT_HEADERDATA, q);
        (void) curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, on_body);
        (void) curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, q);
        (void) curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, curl_message);
        if (c->ca_file)
                (void) curl_easy_setopt(c->curl, CURLOPT_CAINFO, c->ca_file);
        if (c->cancel) {
                (void) curl_easy_setopt(c->curl, CURLOPT_XFERINFOFUNCTION, on_progress);
                (void) curl_easy_setopt(c->curl, CURLOPT_XFERINFODATA, c);
                (void) curl_easy_setopt(c->curl, CURLOPT_NOPROGRESS, 0L);
        }

        code = curl_easy_perform(c->curl);
        curl_slist_free_all(headers);
        if (code == CURLE_ABORTED_BY_CALLBACK)
                return set_error_message(ret_error, -ECANCELED, "cancelled");

        if (code == CURLE_WRITE_ERROR && q->error < 0)
                return set_error_message(ret_error, q->error, "%s: %s", url,
                                         q->error == -E2BIG ? "more data than expected"
                                                            : strerror(-q->error));
        if (code != CURLE_OK)
                return set_error_message(ret_error, curl_errno(code), "%s: %s", url,
                                         curl_message[0] ? curl_message : curl_easy_strerror(code));
        return 0;
}

static int status_error(Request *q, const char *url, char **ret_error) {
        int r;

        switch (q->status) {
        case 401:
        case 403:
                r = -EACCES;
                break;
        case 404:
                r = -ENOENT;
                break;
        case 429:
                r = -EAGAIN;
                break;
        default:
                r = q->status >= 500 && q->status < 600 ? -EAGAIN : -EPROTO;
        }
        return set_error_message(ret_error, r, "%s: HTTP %ld%s%s", url, q->status,
                                 q->error_body_size ? ": " : "", error_excerpt(q));
}

static int fetch_token(RegistryClient *c, const char *repository, const char *challenge, char **ret_error) {
        _cleanup_(bearer_challenge_done) BearerChallenge ch = {};
        _cleanup_(request_done) Request q = {.max = TOKEN_RESPONSE_MAX};
        _cleanup_free_ char *url = NULL, *scope = NULL, *token = NULL;
        char *service_e = NULL, *scope_e = NULL;
        int r;

        r = bearer_challenge_parse(challenge, &ch);
        if (r == -EOPNOTSUPP)
                return set_error_message(ret_error, -EACCES,
                                         "%s asks for credentials (\"%s\"); tonari pulls anonymously",
                                         c->base, challenge);
        if (r < 0)
                return set_error_message(ret_error, -EBADMSG, "%s: malformed WWW-Authenticate \"%s\"",
                                         c->base, challenge);

        scope = ch.scope ? strdup(ch.scope) : strjoin("repository:", repository, ":pull");
        if (!scope)
                return -ENOMEM;
        scope_e = curl_easy_escape(c->curl, scope, 0);
        service_e = ch.service ? curl_easy_escape(c->curl, ch.service, 0) : NULL;
        if (!scope_e || (ch.service && !service_e)) {
                curl_free(scope_e);
                curl_free(service_e);
                return -ENOMEM;
        }
        url = strjoin(ch.realm, strchr(ch.realm, '?') ? "&" : "?", "scope=", scope_e,
                      service_e ? "&service=" : "", strempty(service_e));
        curl_free(scope_e);
        curl_free(service_e);
        if (!url)
                return -ENOMEM;

        r = perform(c, &q, url, "Accept: application/json", false, ret_error);
        if (r < 0)
                return r;
        if (!status_ok(q.status))
                return status_error(&q, url, ret_error);
        r = bearer_token_parse(q.buf ?: "", q.size, &token);
        if (r < 0)
                return set_error_message(ret_error, -EBADMSG, "%s: the token server's answer holds no token",
                                         url);

        free_and_replace(c->token, token);
        return free_and_strdup(&c->token_repository, repository);
}

/* One GET with the token flow: a 401 with a bearer challenge fetches a token and tries once more. */
static int get(RegistryClient *c, Request *q, const char *repository, const char *url, const char *accept,
               char **ret_error) {
        bool with_token = c->token && streq_ptr(c->token_repository, repository);
        int r;

        r = perform(c, q, url, accept, with_token, ret_error);
        if (r < 0)
                return r;
        if (q->status == 401 && q->www_authenticate) {
                _cleanup_free_ char *challenge = TAKE_PTR(q->www_authenticate);

                r = fetch_token(c, repository, challenge, ret_error);
                if (r < 0)
                        return r;
                q->status = 0;
                r = perform(c, q, url, accept, true, ret_error);
                if (r < 0)
                        return r;
        }
        if (!status_ok(q->status))
                return status_error(q, url, ret_error);
        return 0;
}

void registry_client_set_cancel(RegistryClient *c, const Cancel *cancel) {
        c->cancel = cancel;
}

int registry_client_new(const char *host, bool plain_http, RegistryClient **ret) {
        _cleanup_(registry_client_freep) RegistryClient *c = NULL;

        if (isempty(host) || strpbrk(host, "/?#@ \t\r\n"))
                return -EINVAL;
        c = new0(RegistryClient, 1);
        if (!c)
                return -ENOMEM;
        c->base = strjoin(plain_http ? "http://" : "https://", host);
        if (!c->base)
                return -ENOMEM;
        c->curl = curl_easy_init();
        if (!c->curl)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

RegistryClient *registry_client_free(RegistryClient *c) {
        if (!c)
                return NULL;
        if (c->curl)
                curl_easy_cleanup(c->curl);
        free(c->base);
        free(c->ca_file);
        free(c->token);
        free(c->token_repository);
        return mfree(c);
}

int registry_client_set_ca_file(RegistryClient *c, const char *path) {
        return free_and_strdup(&c->ca_file, path);
}

int registry_get_manifest(RegistryClient *c, const char *repository, const char *reference, char **ret_data,
                          size_t *ret_size, char **ret_content_type, Digest *ret_digest, char **ret_error) {
        _cleanup_(request_done) Request q = {.max = OCI_MANIFEST_MAX_BYTES};
        _cleanup_free_ char *url = NULL;
        Digest want, got;
        bool by_digest;
        int r;

        if (!oci_repository_is_valid(repository))
                return set_error_message(ret_error, -EINVAL, "invalid repository \"%s\"", strna(repository));
        by_digest = digest_from_string(reference, &want) >= 0;
        if (!by_digest && !oci_tag_is_valid(reference))
                return set_error_message(ret_error, -EINVAL, "invalid tag or digest \"%s\"",
                                         strna(reference));

        url = strjoin(c->base, "/v2/", repository, "/manifests/", reference);
        if (!url)
                return -ENOMEM;
        r = get(c, &q, repository, url, MANIFEST_ACCEPT, ret_error);
        if (r < 0)
                return r;

        r = digest_buffer(q.buf ?: "", q.size, &got);
        if (r < 0)
                return r;
        if (by_digest && !digest_equal(&want, &got))
                return set_error_message(ret_error, -EBADMSG,
                                         "%s: the manifest received does not match its digest", url);

        if (ret_data)
                *ret_data = q.buf ? TAKE_PTR(q.buf) : strdup("");
        if (ret_data && !*ret_data)
                return -ENOMEM;
        if (ret_size)
                *ret_size = q.size;
        if (ret_content_type)
                *ret_content_type = TAKE_PTR(q.content_type);
        if (ret_digest)
                *ret_digest = got;
        return 0;
}

int registry_get_blob(RegistryClient *c, const char *repository, const Digest *digest, uint64_t size,
                      registry_sink_t sink, void *userdata, char **ret_error) {
        _cleanup_(request_done) Request q = {.sink = sink, .userdata = userdata, .expected = size};
        _cleanup_free_ char *url = NULL;
        char d[DIGEST_STRING_MAX];
        int r;

        if (!oci_repository_is_valid(repository))
                return set_error_message(ret_error, -EINVAL, "invalid repository \"%s\"", strna(repository));
        url = strjoin(c->base, "/v2/", repository, "/blobs/", digest_to_string(digest, d));
        if (!url)
                return -ENOMEM;
        r = get(c, &q, repository, url, NULL, ret_error);
        if (r < 0)
                return r;
        if (q.received != size)
                return set_error_message(ret_error, -EBADMSG,
                                         "%s: blob ended after %" PRIu64 " of %" PRIu64 " bytes", url,
                                         q.received, size);
        return 0;
}
