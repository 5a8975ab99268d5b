/* guard.c -- what the HTTP server checks before it trusts a connection or a request
 * (docs/API.md "Conventions" and "Errors").
 *
 * Slow clients. MHD 0.9.75's connection timeout is an idle timeout that every byte resets,
 * so a client sending one header byte a second keeps its connection for ever, and a
 * thousand of them used to fill MHD's connection limit so that nobody else got an answer.
 * So every connection is tracked here, from MHD's NOTIFY_CONNECTION callback on:
 *  - while it waits for a request's headers (from its start, and again after each request
 *    answered when it is kept alive) it sits in a list, oldest first;
 *  - the access handler's first call for a request takes it out: its headers are complete
 *    (a body may then take as long as it takes; suspended connections are not in the list);
 *  - a watchdog thread shuts down every connection that has waited longer than
 *    cfg->header_timeout_s (a total deadline, not reset by bytes), and the list never
 *    holds more than HTTP_MAX_HEADER_WAITERS: one more closes the oldest at once. MHD's
 *    connection limit (HTTP_MAX_CONNECTIONS) is above that cap, so some connections are
 *    always left for requests past their headers, and a new request always finds a place,
 *    at worst by pushing out the oldest idle or stalled connection.
 * "Shut down" is shutdown(2), never close(2): MHD owns the fd and closes it itself once it
 * sees the end. MHD calls NOTIFY_CONNECTION's CLOSED before it closes the fd (daemon.c
 * MHD_cleanup_connections), and CLOSED takes the connection out of the list under the same
 * mutex the watchdog holds while it calls shutdown, so the fd shut down is always still the
 * connection's own, never a number reused by another file.
 *
 * Requests, on the access handler's first call (before any body is read):
 *  - framing (request smuggling: a proxy in front may frame a body differently than MHD,
 *    which takes the first Content-Length): several Content-Length headers (even equal
 *    ones), Transfer-Encoding with Content-Length, a Transfer-Encoding other than chunked,
 *    several Host headers, whitespace in a header name: 400;
 *  - cross-origin writes (CSRF): a method other than GET/HEAD whose Origin is neither this
 *    server (scheme://host:port of its Host header) nor one of cfg->allowed_origins, or
 *    without an Origin but with a Sec-Fetch-Site other than same-origin/none: 403. Clients
 *    that are not browsers (curl, the agent's diagtools) send no Origin and pass.
 */
#include "http_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

/* One MHD connection (its socket context). */
struct http_conn {
    struct http_conn *prev, *next; /* in the waiting list (waiting = 1) */
    int fd;
    int waiting;                   /* waiting for a request's headers */
    int shut;                      /* shut down by the guard: MHD closes it soon */
    uint64_t since_ns;             /* monotonic: when it started waiting */
};

/* ---- the waiting list (under g->mu) --------------------------------------------------------- */

static void wait_unlink(http_guard *g, http_conn *c)
{
    if (!c->waiting) return;
    if (c->prev) c->prev->next = c->next;
    else g->head = c->next;
    if (c->next) c->next->prev = c->prev;
    else g->tail = c->prev;
    c->prev = c->next = NULL;
    c->waiting = 0;
    g->nwaiting--;
}

static void shut(http_guard *g, http_conn *c)
{
    wait_unlink(g, c);
    c->shut = 1;
    shutdown(c->fd, SHUT_RDWR); /* MHD sees the end and closes the fd itself */
}

/* Appends c (now waiting); past the cap the oldest waiting connection is shut down. The
 * time is read under the lock, so the list stays in order of since_ns. */
static void wait_append(http_guard *g, http_conn *c)
{
    if (c->waiting || c->shut) return;
    c->since_ns = cp_mono_ns();
    c->prev = g->tail;
    c->next = NULL;
    if (g->tail) g->tail->next = c;
    else g->head = c;
    g->tail = c;
    c->waiting = 1;
    g->nwaiting++;
    while (g->nwaiting > g->max_waiting && g->head != c) {
        shut(g, g->head);
        g->evicted++;
    }
}

/* ---- MHD's callbacks ---------------------------------------------------------------------------- */

void http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode toe)
{
    cp_http *h = cls;
    http_guard *g = &h->guard;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        http_conn *c = calloc(1, sizeof *c);
        if (!c) { /* untracked it would have no deadline: refuse it instead */
            if (ci) shutdown(ci->connect_fd, SHUT_RDWR);
            *socket_context = NULL;
            return;
        }
        c->fd = ci ? ci->connect_fd : -1;
        *socket_context = c;
        if (c->fd < 0) return;
        pthread_mutex_lock(&g->mu);
        wait_append(g, c);
        pthread_mutex_unlock(&g->mu);
        return;
    }
    if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
        http_conn *c = *socket_context;
        if (!c) return;
        pthread_mutex_lock(&g->mu);
        wait_unlink(g, c); /* from now on the watchdog cannot reach the fd, which MHD closes next */
        pthread_mutex_unlock(&g->mu);
        free(c);
        *socket_context = NULL;
    }
}

static http_conn *conn_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

void http_guard_headers_done(cp_http *h, struct MHD_Connection *conn)
{
    http_conn *c = conn_of(conn);
    if (!c) return;
    pthread_mutex_lock(&h->guard.mu);
    wait_unlink(&h->guard, c);
    pthread_mutex_unlock(&h->guard.mu);
}

void http_guard_request_done(cp_http *h, struct MHD_Connection *conn)
{
    http_conn *c = conn_of(conn);
    if (!c || c->fd < 0) return;
    pthread_mutex_lock(&h->guard.mu);
    wait_append(&h->guard, c);
    pthread_mutex_unlock(&h->guard.mu);
}

/* ---- the watchdog ------------------------------------------------------------------------------ */

static void *watchdog_main(void *arg)
{
    cp_http *h = arg;
    http_guard *g = &h->guard;
    pthread_mutex_lock(&g->mu);
    while (!g->stop) {
        uint64_t now = cp_mono_ns();
        size_t late = 0;
        while (g->head && now - g->head->since_ns >= g->deadline_ns) {
            shut(g, g->head);
            late++;
        }
        size_t evicted = g->evicted;
        g->evicted = 0;
        /* sleep until the oldest one's deadline, at most a second */
        uint64_t wait_ns = 1000000000u;
        if (g->head) {
            uint64_t left = g->head->since_ns + g->deadline_ns - now;
            if (left < wait_ns) wait_ns = left;
        }
        if (late || evicted) { /* outside the lock: logging may block */
            pthread_mutex_unlock(&g->mu);
            if (late)
                http_log(h, HTTP_LOG_DEBUG, "http: closed %zu connections that sent no complete headers within %u s",
                         late, h->cfg->header_timeout_s);
            if (evicted)
                http_log(h, HTTP_LOG_DEBUG, "http: closed %zu connections waiting for headers (over %zu at once)",
                         evicted, g->max_waiting);
            pthread_mutex_lock(&g->mu);
            continue;
        }
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t until = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + wait_ns + 1000000u;
        ts.tv_sec = (time_t)(until / 1000000000u);
        ts.tv_nsec = (long)(until % 1000000000u);
        pthread_cond_timedwait(&g->cv, &g->mu, &ts);
    }
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

/* ---- origins ------------------------------------------------------------------------------------- */

static int is_host_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == '_' || c == '~' || c == '%';
}

/* "host[:port]" or "[v6]:port" (a Host header, or an origin after its "scheme://"): the
 * host lowercased into host, the port (defport when absent). 0, or -1 if it is not one. */
static int hostport_parse(const char *s, size_t n, char *host, size_t cap, unsigned *port, unsigned defport)
{
    size_t hl = 0;
    if (n && s[0] == '[') { /* an IPv6 literal, brackets kept */
        const char *rb = memchr(s, ']', n);
        if (!rb) return -1;
        hl = (size_t)(rb - s) + 1;
        for (size_t i = 1; i + 1 < hl; i++)
            if (!is_host_char((unsigned char)s[i]) && s[i] != ':') return -1;
    } else {
        while (hl < n && s[hl] != ':') {
            if (!is_host_char((unsigned char)s[hl])) return -1;
            hl++;
        }
    }
    if (hl == 0 || hl >= cap) return -1;
    for (size_t i = 0; i < hl; i++) host[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
    host[hl] = 0;
    *port = defport;
    if (hl == n) return 0;
    if (s[hl] != ':' || hl + 1 == n || n - hl - 1 > 5) return -1;
    unsigned v = 0;
    for (size_t i = hl + 1; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return -1;
        v = v * 10 + (unsigned)(s[i] - '0');
    }
    if (v == 0 || v > 65535) return -1;
    *port = v;
    return 0;
}

/* An origin "scheme://host[:port]" (http or https; a trailing '/' is tolerated) as
 * "scheme://host:port", lowercased, the scheme's default port written out. 0, or -1 (not
 * an origin: "null", a path, another scheme...). */
static int origin_norm(const char *s, size_t n, char *out, size_t cap)
{
    while (n && (*s == ' ' || *s == '\t')) s++, n--;
    while (n && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
    if (n && s[n - 1] == '/') n--;
    const char *scheme;
    unsigned defport;
    if (n > 7 && !strncasecmp(s, "http://", 7)) {
        scheme = "http", defport = 80, s += 7, n -= 7;
    } else if (n > 8 && !strncasecmp(s, "https://", 8)) {
        scheme = "https", defport = 443, s += 8, n -= 8;
    } else {
        return -1;
    }
    char host[256];
    unsigned port;
    if (hostport_parse(s, n, host, sizeof host, &port, defport) != 0) return -1;
    int k = snprintf(out, cap, "%s://%s:%u", scheme, host, port);
    return k > 0 && (size_t)k < cap ? 0 : -1;
}

/* 1 if the normalised origin names the server the request was sent to: the same host and
 * port as the Host header. Either scheme: a TLS proxy in front keeps Host. */
static int origin_is_host(const char *norm, const char *host_hdr)
{
    if (!host_hdr) return 0;
    const char *hp = strstr(norm, "://");
    if (!hp) return 0;
    unsigned defport = !strncmp(norm, "https", 5) ? 443 : 80;
    char host[256], want[300];
    unsigned port;
    if (hostport_parse(host_hdr, strlen(host_hdr), host, sizeof host, &port, defport) != 0) return 0;
    snprintf(want, sizeof want, "%s:%u", host, port);
    return !strcmp(hp + 3, want);
}

static int origin_allowed(const cp_http *h, const char *origin, const char *host_hdr)
{
    char norm[HTTP_ORIGIN_MAX];
    if (origin_norm(origin, strlen(origin), norm, sizeof norm) != 0) return 0;
    if (origin_is_host(norm, host_hdr)) return 1;
    for (size_t i = 0; i < h->guard.norigins; i++)
        if (!strcmp(h->guard.origins[i], norm)) return 1;
    return 0;
}

/* Splits cfg->allowed_origins ("URL[,URL...]") into h->guard.origins. */
static int parse_origins(cp_http *h, char *err, size_t errlen)
{
    const char *s = h->cfg->allowed_origins;
    if (!s) return CP_OK;
    while (*s) {
        size_t n = strcspn(s, ",");
        const char *item = s;
        s += n;
        if (*s == ',') s++;
        size_t k = n;
        while (k && (item[k - 1] == ' ' || item[k - 1] == '\t')) k--;
        while (k && (*item == ' ' || *item == '\t')) item++, k--;
        if (!k) continue;
        if (h->guard.norigins >= HTTP_MAX_ORIGINS) {
            snprintf(err, errlen, "http: more than %d allowed origins", HTTP_MAX_ORIGINS);
            return CP_EINVAL;
        }
        if (origin_norm(item, k, h->guard.origins[h->guard.norigins], HTTP_ORIGIN_MAX) != 0) {
            snprintf(err, errlen, "http: allowed origin '%.*s' is not an origin like https://host[:port]",
                     (int)(k > 200 ? 200 : k), item);
            return CP_EINVAL;
        }
        h->guard.norigins++;
    }
    return CP_OK;
}

/* ---- request checks --------------------------------------------------------------------------- */

typedef struct framing {
    int ncl, nte, nhost, norigin;
    int cl_bad, te_bad, name_bad;
} framing;

static int digits_only(const char *v)
{
    if (!v || !*v) return 0;
    for (; *v; v++)
        if (*v < '0' || *v > '9') return 0;
    return 1;
}

static enum MHD_Result count_header(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
    framing *f = cls;
    (void)kind;
    if (!key) return MHD_YES;
    if (strpbrk(key, " \t")) f->name_bad = 1; /* "Content-Length : 5" is some proxies' Content-Length */
    if (!strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH)) {
        f->ncl++;
        if (!digits_only(value)) f->cl_bad = 1;
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING)) {
        f->nte++;
        if (!value || strcasecmp(value, "chunked") != 0) f->te_bad = 1;
    } else if (!strcasecmp(key, MHD_HTTP_HEADER_HOST)) {
        f->nhost++;
    } else if (!strcasecmp(key, "Origin")) {
        f->norigin++;
    }
    return MHD_YES;
}

int http_guard_check(cp_http *h, struct MHD_Connection *conn, const char *method, http_out *o)
{
    framing f;
    memset(&f, 0, sizeof f);
    MHD_get_connection_values(conn, MHD_HEADER_KIND, count_header, &f);
    if (f.name_bad) {
        http_error(o, 400, "bad_framing", "a header name contains whitespace");
        return -1;
    }
    if (f.ncl > 1) {
        http_error(o, 400, "bad_framing", "more than one Content-Length header");
        return -1;
    }
    if (f.nte && f.ncl) {
        http_error(o, 400, "bad_framing", "both Transfer-Encoding and Content-Length");
        return -1;
    }
    if (f.nte > 1 || f.te_bad) {
        http_error(o, 400, "bad_framing", "the only Transfer-Encoding taken is a single 'chunked'");
        return -1;
    }
    if (f.cl_bad) {
        http_error(o, 400, "bad_framing", "Content-Length is not a decimal number");
        return -1;
    }
    if (f.nhost > 1) {
        http_error(o, 400, "bad_framing", "more than one Host header");
        return -1;
    }
    /* writes: only from this server's own pages, an allowed origin, or a non-browser */
    if (!strcmp(method, MHD_HTTP_METHOD_GET) || !strcmp(method, MHD_HTTP_METHOD_HEAD)) return 0;
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    const char *origin = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Origin");
    if (origin) {
        if (f.norigin == 1 && origin_allowed(h, origin, host)) return 0;
        http_error(o, 403, "cross_origin", "cross-origin %.16s refused: the origin is not this server's nor allowed",
                   method);
        return -1;
    }
    const char *site = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Sec-Fetch-Site");
    if (site && strcasecmp(site, "same-origin") != 0 && strcasecmp(site, "none") != 0) {
        http_error(o, 403, "cross_origin", "cross-site %.16s refused (Sec-Fetch-Site without an allowed Origin)",
                   method);
        return -1;
    }
    return 0;
}

int http_body_declared(struct MHD_Connection *conn, uint64_t *len)
{
    *len = 0;
    if (MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING)) return 2;
    const char *cl = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    if (!cl) return 0;
    uint64_t v = 0;
    if (cp_parse_u64(cl, UINT64_MAX, &v) != CP_OK) v = UINT64_MAX; /* MHD refused it already */
    *len = v;
    return v ? 1 : 0;
}

/* ---- start / stop ------------------------------------------------------------------------------ */

int http_guard_start(cp_http *h, char *err, size_t errlen)
{
    http_guard *g = &h->guard;
    g->max_waiting = HTTP_MAX_HEADER_WAITERS;
    g->deadline_ns = (uint64_t)h->cfg->header_timeout_s * 1000000000u;
    int st = parse_origins(h, err, errlen);
    if (st != CP_OK) return st;
    pthread_condattr_t ca;
    if (pthread_mutex_init(&g->mu, NULL) != 0) goto nomem;
    if (pthread_condattr_init(&ca) != 0) {
        pthread_mutex_destroy(&g->mu);
        goto nomem;
    }
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int cv_ok = pthread_cond_init(&g->cv, &ca) == 0;
    pthread_condattr_destroy(&ca);
    if (!cv_ok) {
        pthread_mutex_destroy(&g->mu);
        goto nomem;
    }
    if (g->deadline_ns) { /* 0 = no deadline: the cap alone needs no thread */
        if (pthread_create(&g->thread, NULL, watchdog_main, h) != 0) {
            pthread_cond_destroy(&g->cv);
            pthread_mutex_destroy(&g->mu);
            goto nomem;
        }
        g->thread_started = 1;
    }
    return CP_OK;
nomem:
    snprintf(err, errlen, "http: cannot start the connection guard");
    return CP_ENOMEM;
}

void http_guard_stop(cp_http *h)
{
    http_guard *g = &h->guard;
    if (g->thread_started) {
        pthread_mutex_lock(&g->mu);
        g->stop = 1;
        pthread_cond_signal(&g->cv);
        pthread_mutex_unlock(&g->mu);
        pthread_join(g->thread, NULL);
        g->thread_started = 0;
    }
    pthread_cond_destroy(&g->cv);
    pthread_mutex_destroy(&g->mu);
}
