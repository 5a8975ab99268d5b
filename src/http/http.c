/* http.c -- the HTTP server: libmicrohttpd setup, the reader pool, request bodies,
 * routing of /api/v1 (and of the web UI's paths to ui.c) and sending the responses the
 * endpoint files build.
 *
 * MHD runs an internal polling thread per pool thread (cfg->threads); a handler runs on
 * one of them and may block on the catalog (it takes a reader from the pool for the
 * duration of the query). A request is handled in two calls of the access handler: the
 * first (headers only) allocates the request state, later ones deliver the body (kept
 * up to HTTP_MAX_BODY_BYTES for the POSTs that take one), the last one answers. The first
 * call also runs guard.c's checks (framing, cross-origin writes) and answers at once when
 * the headers already decide: a body where none is taken, a Content-Length over the limit.
 * guard.c also bounds the time a connection may take to send a request's headers.
 */
#include "http_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

/* ---- configuration ------------------------------------------------------------------ */

void cp_http_config_default(cp_http_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->host = "0.0.0.0";
    cfg->port = 8080;
    cfg->threads = 4;
    cfg->max_span_ms = 31LL * 24 * 3600 * 1000;
    cfg->max_limit = 1000;
    cfg->max_scan = 20000000;
    cfg->max_tree_calls = 1000;
    cfg->max_tree_nodes = 1000000;
    cfg->max_profile_calls = 10000;
    cfg->max_export_rows = 1000000;
    cfg->cursor_ttl_ms = 15 * 60 * 1000;
    cfg->version = "0.0.0";
    cfg->dump_workers = 2;
    cfg->import_workers = 2;
    cfg->import_max_bytes = (uint64_t)64 << 30;
    cfg->dump_parse_max = (size_t)256 << 20;
    cfg->dump_zip_max_files = 100000;
    cfg->header_timeout_s = 10;
    cfg->max_per_client = 256;
}

void http_log(const cp_http *h, int level, const char *fmt, ...)
{
    if (!h->cfg->log) return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    h->cfg->log(h->cfg->log_ud, level, msg);
}

/* ---- reader pool ------------------------------------------------------------------- */

static int pool_init(http_pool *p, size_t max)
{
    memset(p, 0, sizeof *p);
    p->idle = calloc(max, sizeof *p->idle);
    if (!p->idle) return CP_ENOMEM;
    p->max = max;
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->idle);
        return CP_ENOMEM;
    }
    if (pthread_cond_init(&p->cv, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        free(p->idle);
        return CP_ENOMEM;
    }
    return CP_OK;
}

static void pool_free(http_pool *p)
{
    for (size_t i = 0; i < p->nidle; i++) cp_reader_close(p->idle[i]);
    free(p->idle);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
}

/* Absolute CLOCK_REALTIME deadline ms from now (pthread_cond_timedwait's clock). */
static struct timespec deadline_in(long ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += ms / 1000;
    ts.tv_nsec += (ms % 1000) * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

int http_pool_acquire(cp_http *h, cp_reader **out, char *err, size_t errlen)
{
    http_pool *p = &h->pool;
    struct timespec until = deadline_in(HTTP_POOL_WAIT_MS);
    int st = CP_OK;
    *out = NULL;
    pthread_mutex_lock(&p->mu);
    while (p->nidle == 0 && p->open >= p->max) {
        if (pthread_cond_timedwait(&p->cv, &p->mu, &until) == ETIMEDOUT) {
            snprintf(err, errlen, "all %zu catalog readers are busy", p->max);
            pthread_mutex_unlock(&p->mu);
            return CP_ELIMIT;
        }
    }
    if (p->nidle > 0) {
        *out = p->idle[--p->nidle];
    } else {
        /* Opened under the lock (cp_http.h): reader implementations need not be
         * reentrant while opening. */
        st = h->cfg->open_reader(h->cfg->open_reader_ud, out, err, errlen);
        if (st == CP_OK && !*out) st = CP_EIO;
        if (st == CP_OK) p->open++;
    }
    pthread_mutex_unlock(&p->mu);
    return st;
}

int http_reader_take(cp_http *h, http_out *o, cp_reader **out)
{
    char err[256] = "";
    int rc = http_pool_acquire(h, out, err, sizeof err);
    if (rc == CP_OK) return 0;
    if (rc == CP_ENOMEM) {
        http_oom(o);
    } else {
        http_error(o, 503, "unavailable", "catalog unavailable: %s", err);
        o->retry_after = 1;
    }
    return -1;
}

void http_pool_release(cp_http *h, cp_reader *r, int broken)
{
    http_pool *p = &h->pool;
    if (!r) return;
    pthread_mutex_lock(&p->mu);
    if (broken || p->nidle >= p->max) {
        p->open--;
        pthread_mutex_unlock(&p->mu);
        cp_reader_close(r); /* outside the lock: closing may take a while */
        pthread_mutex_lock(&p->mu);
    } else {
        p->idle[p->nidle++] = r;
    }
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* ---- upload workers ------------------------------------------------------------------ */

static void *jobs_main(void *arg)
{
    http_jobs *j = arg;
    pthread_mutex_lock(&j->mu);
    for (;;) {
        while (!j->head && !j->stop) pthread_cond_wait(&j->cv, &j->mu);
        http_job *job = j->head;
        if (!job) break; /* stopping, and nothing left to do */
        j->head = job->next;
        if (!j->head) j->tail = NULL;
        pthread_mutex_unlock(&j->mu);
        job->fn(job->arg);
        free(job);
        pthread_mutex_lock(&j->mu);
    }
    pthread_mutex_unlock(&j->mu);
    return NULL;
}

static int jobs_start(http_jobs *j, unsigned n)
{
    memset(j, 0, sizeof *j);
    j->threads = calloc(n, sizeof *j->threads);
    if (!j->threads) return CP_ENOMEM;
    if (pthread_mutex_init(&j->mu, NULL) != 0 || pthread_cond_init(&j->cv, NULL) != 0) {
        free(j->threads);
        return CP_ENOMEM;
    }
    for (unsigned i = 0; i < n; i++) {
        if (pthread_create(&j->threads[i], NULL, jobs_main, j) != 0) break;
        j->nthreads++;
    }
    if (j->nthreads == 0) {
        pthread_cond_destroy(&j->cv);
        pthread_mutex_destroy(&j->mu);
        free(j->threads);
        return CP_ENOMEM;
    }
    return CP_OK;
}

/* Runs the queued jobs to the end and joins the threads; submitting fails from now on. */
static void jobs_stop(http_jobs *j)
{
    pthread_mutex_lock(&j->mu);
    j->stop = 1;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    for (size_t i = 0; i < j->nthreads; i++) pthread_join(j->threads[i], NULL);
}

/* After MHD stopped: nobody can submit any more. */
static void jobs_free(http_jobs *j)
{
    free(j->threads);
    j->threads = NULL;
    pthread_cond_destroy(&j->cv);
    pthread_mutex_destroy(&j->mu);
}

static int jobs_submit(http_jobs *j, void (*fn)(void *arg), void *arg)
{
    http_job *job = calloc(1, sizeof *job);
    if (!job) return CP_ENOMEM;
    job->fn = fn;
    job->arg = arg;
    pthread_mutex_lock(&j->mu);
    if (j->stop) {
        pthread_mutex_unlock(&j->mu);
        free(job);
        return CP_EIO;
    }
    if (j->tail) j->tail->next = job;
    else j->head = job;
    j->tail = job;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return CP_OK;
}

int http_jobs_submit(cp_http *h, void (*fn)(void *arg), void *arg) { return jobs_submit(&h->jobs, fn, arg); }

int http_queries_submit(cp_http *h, void (*fn)(void *arg), void *arg) { return jobs_submit(&h->queries, fn, arg); }

int http_imports_submit(cp_http *h, void (*fn)(void *arg), void *arg) { return jobs_submit(&h->imports, fn, arg); }

int http_hprofs_submit(cp_http *h, void (*fn)(void *arg), void *arg) { return jobs_submit(&h->hprofs, fn, arg); }

void http_imports_join(cp_http *h) { jobs_stop(&h->imports); }

void http_streams_stop(cp_http *h)
{
    h->stopping = 1; /* each running query sees it at its next progress report */
    jobs_stop(&h->queries);
}

/* ---- errors ------------------------------------------------------------------------- */

/* Copies printable ASCII, '?' for anything else, so the text is valid UTF-8 JSON and
 * cannot carry control characters into logs. */
static void safe_text(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e) *s = '?';
}

static void set_error(http_out *o, unsigned status, const char *code, const char *fmt, va_list ap)
{
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    safe_text(msg);
    cp_buf_reset(&o->body);
    if (o->json) json_decref(o->json);
    o->status = status;
    o->content_type = NULL;
    o->disposition[0] = 0;
    o->nhdr = 0;
    o->json = json_pack("{s:s,s:s}", "error", msg, "code", code);
}

void http_error(http_out *o, unsigned status, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error(o, status, code, fmt, ap);
    va_end(ap);
}

void http_bad_param(http_out *o, const char *param, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_error(o, 400, code, fmt, ap);
    va_end(ap);
    http_error_field(o, "parameter", param);
}

void http_error_field(http_out *o, const char *key, const char *value)
{
    if (!o->json || !value) return;
    char v[256];
    snprintf(v, sizeof v, "%s", value);
    safe_text(v);
    json_object_set_new(o->json, key, json_string(v));
}

void http_reader_error(http_out *o, int status, const char *what, const char *msg)
{
    if (status == CP_ENOMEM)
        http_error(o, 503, "overloaded", "%s: out of memory", what);
    else
        http_error(o, 500, "reader_error", "%s failed: %s", what, msg && *msg ? msg : cp_strstatus(status));
    if (o->status == 503) o->retry_after = 5;
}

void http_oom(http_out *o)
{
    http_error(o, 503, "overloaded", "out of memory while building the response");
    o->retry_after = 5;
}

void http_out_header(http_out *o, const char *name, const char *fmt, ...)
{
    if (o->nhdr >= CP_ARRAY_LEN(o->hdr)) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(o->hdr[o->nhdr].value, sizeof o->hdr[o->nhdr].value, fmt, ap);
    va_end(ap);
    o->hdr[o->nhdr++].name = name;
}

/* ---- arguments ------------------------------------------------------------------------- */

const http_arg *http_arg_get(const http_args *a, const char *key)
{
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->a[i].key, key)) return &a->a[i];
    return NULL;
}

int http_check_args(const http_args *a, const char *const *allowed, http_out *o)
{
    if (a->too_many) {
        http_error(o, 400, "too_many_parameters", "more than %d query parameters", HTTP_MAX_ARGS);
        return -1;
    }
    for (size_t i = 0; i < a->n; i++) {
        const http_arg *x = &a->a[i];
        char name[65];
        snprintf(name, sizeof name, "%s", x->key);
        if (strlen(x->key) != x->klen) { /* a %00 in the name */
            http_bad_param(o, name, "bad_parameter", "parameter name contains a NUL byte");
            return -1;
        }
        int known = 0;
        for (size_t k = 0; allowed && allowed[k]; k++)
            if (!strcmp(allowed[k], x->key)) known = 1;
        if (!known) {
            http_bad_param(o, name, "unknown_parameter", "unknown parameter '%s'", name);
            return -1;
        }
        for (size_t j = 0; j < i; j++)
            if (!strcmp(a->a[j].key, x->key)) {
                http_bad_param(o, name, "duplicate_parameter", "parameter '%s' given more than once", name);
                return -1;
            }
        if (strlen(x->val) != x->vlen) {
            http_bad_param(o, name, "bad_parameter", "parameter '%s' contains a NUL byte", name);
            return -1;
        }
    }
    return 0;
}

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key, size_t klen,
                                   const char *val, size_t vlen)
{
    http_args *a = cls;
    (void)kind;
    if (a->n >= HTTP_MAX_ARGS) {
        a->too_many = 1;
        return MHD_NO;
    }
    http_arg *x = &a->a[a->n++];
    x->key = key;
    x->klen = klen;
    x->val = val ? val : "";
    x->vlen = val ? vlen : 0;
    return MHD_YES;
}

/* ---- per-request state --------------------------------------------------------------- */

/* MHD's URI log callback: the first thing MHD tells about a request, with the target as
 * sent. Upload paths are percent-decoded per segment by us (dumps-http.md §3), so the raw
 * form is kept; what it returns becomes the request's con_cls. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c)
{
    (void)cls;
    (void)c;
    http_req *rq = calloc(1, sizeof *rq);
    if (!rq) return NULL;
    rq->raw_url = strdup(uri ? uri : "");
    if (!rq->raw_url) {
        free(rq);
        return NULL;
    }
    return rq;
}

/* Takes the body bytes MHD hands over, keeping at most HTTP_MAX_BODY_BYTES. */
static void req_take_body(http_req *rq, const char *data, size_t n)
{
    if (!rq->keep_body || rq->body_too_large) return;
    if (n > HTTP_MAX_BODY_BYTES - rq->body.len || cp_buf_append(&rq->body, data, n) != CP_OK) {
        rq->body_too_large = 1;
        cp_buf_free(&rq->body);
    }
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode why)
{
    (void)why;
    /* kept alive, the connection now waits for the next request's headers: the header
     * deadline starts again (guard.c); one that is closing leaves the guard right after */
    http_guard_request_done(cls, c);
    http_req *rq = *con_cls;
    if (!rq) return;
    if (rq->up) http_diag_free(rq->up); /* an upload cut off is dropped here */
    if (rq->imp) http_import_free(rq->imp); /* an import cut off stops at its next chunk */
    http_hprof_free(rq->hprof);
    http_auth_done(rq);
    cp_buf_free(&rq->body);
    free(rq->raw_url);
    free(rq);
    *con_cls = NULL;
}

/* ---- routing ------------------------------------------------------------------------- */

enum { M_GET = 1, M_POST = 2, M_DELETE = 4 };

static int method_bit(const char *m)
{
    if (!strcmp(m, MHD_HTTP_METHOD_GET) || !strcmp(m, MHD_HTTP_METHOD_HEAD)) return M_GET;
    if (!strcmp(m, MHD_HTTP_METHOD_POST)) return M_POST;
    if (!strcmp(m, MHD_HTTP_METHOD_DELETE)) return M_DELETE;
    return 0;
}

static const char *allow_text(int allowed)
{
    switch (allowed) {
    case M_GET: return "GET, HEAD";
    case M_GET | M_POST: return "GET, HEAD, POST";
    case M_GET | M_DELETE: return "GET, HEAD, DELETE";
    default: return "GET, HEAD, POST, DELETE";
    }
}

static int is_dump_view(const char *v)
{
    return !strcmp(v, "threads") || !strcmp(v, "top") || !strcmp(v, "profile") || !strcmp(v, "hprof");
}

/* Splits "/api/v1/<a>[/<b>[/<c>[/<d>]]]" into its parts (pointers into buf). Returns the
 * number of parts after /api/v1, or -1 if the path is not under it or has empty parts. */
static int split_path(const char *url, char *buf, size_t buflen, char *parts[4])
{
    static const char prefix[] = "/api/v1/";
    if (strncmp(url, prefix, sizeof prefix - 1) != 0) return -1;
    if (strlen(url) >= buflen) return -1;
    strcpy(buf, url + sizeof prefix - 1);
    int n = 0;
    char *s = buf;
    for (;;) {
        char *slash = strchr(s, '/');
        if (n == 4 || !*s) return -1;
        parts[n++] = s;
        if (!slash) break;
        *slash = 0;
        s = slash + 1;
    }
    return n;
}

/* Runs the endpoint for (method, path) or sets a 404/405. */
static void route(cp_http *h, struct MHD_Connection *conn, const char *url, int m, const http_args *a,
                  http_req *rq, http_out *o)
{
    char buf[1024];
    char *p[4];
    if (!strcmp(url, "/cdt/v2/download")) { /* the older collector's bulk download (§6.5) */
        if (m != M_GET) {
            http_error(o, 405, "method_not_allowed", "method not allowed here");
            o->allow = allow_text(M_GET);
        } else {
            http_api_dumps_zip(h, a, 1, o);
        }
        return;
    }
    int n = split_path(url, buf, sizeof buf, p);
    int allowed = 0; /* methods the path accepts */
    int dumps = 0;   /* a dumps path: routed below */
    if (n >= 1 && (!strcmp(p[0], "dumps") || !strcmp(p[0], "gc") || !strcmp(p[0], "diagnostic"))) {
        dumps = 1;
        if (n == 1 && strcmp(p[0], "diagnostic")) allowed = M_GET;
        else if (n == 2 && !strcmp(p[0], "dumps") &&
                 (!strcmp(p[1], "summary") || !strcmp(p[1], "download") || !strcmp(p[1], "threads-profile")))
            allowed = M_GET;
        else if (n == 2 && !strcmp(p[0], "dumps")) allowed = M_GET | M_DELETE;
        else if (n == 3 && !strcmp(p[0], "dumps") && is_dump_view(p[2])) allowed = M_GET;
        else if (n == 4 && !strcmp(p[0], "dumps") && !strcmp(p[2], "profile") && !strcmp(p[3], "tree"))
            allowed = M_GET; /* a pprof profile's samples as a tree (api_stacks.c) */
        else if (n == 3 && !strcmp(p[0], "diagnostic") && !strcmp(p[1], "agent") && !strcmp(p[2], "updates"))
            allowed = M_GET;
    } else if (n == 1) {
        if (!strcmp(p[0], "health")) allowed = M_GET;
        else if (!strcmp(p[0], "me")) allowed = M_GET;
        else if (!strcmp(p[0], "time")) allowed = M_GET;
        else if (!strcmp(p[0], "config")) allowed = M_GET;
        else if (!strcmp(p[0], "services")) allowed = M_GET;
        else if (!strcmp(p[0], "calls")) allowed = M_GET;
        else if (!strcmp(p[0], "calls.csv")) allowed = M_GET;
        else if (!strcmp(p[0], "calls.xlsx")) allowed = M_GET;
        else if (!strcmp(p[0], "tree")) allowed = M_GET | M_POST;
        else if (!strcmp(p[0], "profile")) allowed = M_GET;
        else if (!strcmp(p[0], "audit")) allowed = M_GET;
    } else if (n == 2 && !strcmp(p[0], "calls")) {
        allowed = M_GET; /* calls/stats and calls/{id} */
    } else if (n == 2 && !strcmp(p[0], "tree") && !strcmp(p[1], "export")) {
        allowed = M_GET | M_POST;
    } else if (n == 3 && !strcmp(p[0], "calls") &&
               (!strcmp(p[2], "tree") || !strcmp(p[2], "trace") || !strcmp(p[2], "export") ||
                !strcmp(p[2], "value"))) {
        allowed = M_GET;
    }
    if (!allowed) {
        http_error(o, 404, "not_found", "no such resource");
        return;
    }
    if (!(allowed & m)) {
        http_error(o, 405, "method_not_allowed", "method not allowed here");
        o->allow = allow_text(allowed);
        return;
    }
    if (dumps) {
        if (!strcmp(p[0], "diagnostic")) /* the agent's self-update probe (§7.4): no installer here */
            http_error(o, 404, "not_found", "no agent update package is configured");
        else if (!strcmp(p[0], "gc")) http_api_gc(h, a, o);
        else if (n == 1) http_api_dumps(h, a, o);
        else if (n == 2 && !strcmp(p[1], "summary")) http_api_dumps_summary(h, a, o);
        else if (n == 2 && !strcmp(p[1], "download")) http_api_dumps_zip(h, a, 0, o);
        else if (n == 2 && !strcmp(p[1], "threads-profile")) http_api_threads_profile(h, a, o);
        else if (n == 2 && m == M_DELETE) http_api_dump_delete(h, a, p[1], o);
        else if (n == 2) http_api_dump(h, conn, a, p[1], o);
        else if (n == 4) http_api_profile_tree(h, a, p[1], o);
        else if (!strcmp(p[2], "hprof")) http_api_dump_hprof(h, conn, a, p[1], rq, o);
        else http_api_dump_view(h, a, p[1], p[2], o);
        return;
    }
    if (n == 1) {
        if (!strcmp(p[0], "health")) http_api_health(h, a, o);
        else if (!strcmp(p[0], "me")) http_api_me(h, a, o);
        else if (!strcmp(p[0], "time")) http_api_time(h, a, o);
        else if (!strcmp(p[0], "config")) http_api_config(h, a, o);
        else if (!strcmp(p[0], "services")) http_api_services(h, a, o);
        else if (!strcmp(p[0], "calls")) http_api_calls(h, conn, a, o);
        else if (!strcmp(p[0], "calls.csv")) http_api_csv(h, a, o);
        else if (!strcmp(p[0], "calls.xlsx")) http_api_xlsx(h, conn, a, o);
        else if (!strcmp(p[0], "profile")) http_api_profile(h, conn, a, o);
        else if (!strcmp(p[0], "audit")) http_api_audit(h, a, o);
        else if (m == M_POST) http_api_tree_post(h, a, &rq->body, rq->body_too_large, o);
        else http_api_tree_get(h, a, o);
    } else if (n == 2) {
        if (!strcmp(p[0], "tree")) http_api_tree_export(h, a, m == M_POST ? &rq->body : NULL, rq->body_too_large, o);
        else if (!strcmp(p[1], "stats")) http_api_stats(h, conn, a, o);
        else http_api_call(h, a, p[1], o);
    } else if (!strcmp(p[2], "tree")) {
        http_api_call_tree(h, a, p[1], o);
    } else if (!strcmp(p[2], "export")) {
        http_api_call_export(h, a, p[1], o);
    } else if (!strcmp(p[2], "value")) {
        http_api_call_value(h, a, p[1], o);
    } else {
        http_api_call_trace(h, a, p[1], o);
    }
}

/* ---- sending ------------------------------------------------------------------------- */

/* Builds the MHD response from o (taking its body) and adds the common headers. */
static struct MHD_Response *make_response(http_out *o)
{
    struct MHD_Response *r = o->stream;
    o->stream = NULL;
    if (!r && o->json) {
        char *text = json_dumps(o->json, JSON_COMPACT | JSON_REAL_PRECISION(15));
        if (!text) return NULL;
        cp_buf_reset(&o->body);
        int st = cp_buf_append(&o->body, text, strlen(text));
        free(text);
        if (st != CP_OK) return NULL;
    }
    if (!r) {
        r = MHD_create_response_from_buffer(o->body.len, o->body.data, MHD_RESPMEM_MUST_FREE);
        if (!r) return NULL;
        cp_buf_init(&o->body); /* MHD owns (and frees) the bytes now */
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            o->content_type ? o->content_type : "application/json; charset=utf-8");
    if (!MHD_get_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL)) /* the UI's files set their own */
        MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    if (o->disposition[0]) MHD_add_response_header(r, "Content-Disposition", o->disposition);
    for (size_t i = 0; i < o->nhdr && i < CP_ARRAY_LEN(o->hdr); i++) MHD_add_response_header(r, o->hdr[i].name, o->hdr[i].value);
    if (o->allow) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, o->allow);
    if (o->retry_after > 0) {
        char v[16];
        snprintf(v, sizeof v, "%d", o->retry_after);
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, v);
    }
    return r;
}

static void out_free(http_out *o)
{
    cp_buf_free(&o->body);
    if (o->json) json_decref(o->json);
    if (o->stream) MHD_destroy_response(o->stream);
}

static enum MHD_Result send_out(cp_http *h, struct MHD_Connection *conn, const char *method, const char *url,
                                http_out *o)
{
    struct MHD_Response *r = make_response(o);
    if (!r) { /* out of memory: a fixed text needs no allocation of ours */
        static const char oom[] = "{\"error\":\"out of memory\",\"code\":\"overloaded\"}";
        r = MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
        if (!r) {
            out_free(o);
            return MHD_NO;
        }
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json; charset=utf-8");
        o->status = 503;
    }
    if (o->status >= 500) {
        char what[256]; /* the decoded URL may hold anything: made printable for the log */
        snprintf(what, sizeof what, "%.15s %.200s", method, url);
        safe_text(what);
        http_log(h, HTTP_LOG_WARN, "http: %s -> %u", what, o->status);
    }
    http_metrics_request(h, url, o->status); /* every answer passes here */
    enum MHD_Result ret = MHD_queue_response(conn, o->status, r);
    MHD_destroy_response(r);
    out_free(o);
    return ret;
}

static void out_init(http_out *o)
{
    memset(o, 0, sizeof *o);
    o->status = 200;
    cp_buf_init(&o->body);
}

static int is_diag_path(const char *url)
{
    return !strncmp(url, "/diagnostic/", 12) || !strcmp(url, "/diagnostic");
}

/* /diagnostic requests: the upload state machine of upload.c. */
static enum MHD_Result on_diag(cp_http *h, struct MHD_Connection *conn, const char *method, const char *url,
                               const char *upload_data, size_t *upload_data_size, http_req *rq)
{
    http_out o;
    if (!rq->diag) { /* headers only */
        rq->diag = 1;
        out_init(&o);
        if (http_diag_begin(h, conn, rq->raw_url, method, rq->who, &rq->up, &o) == 0) return MHD_YES;
        return send_out(h, conn, method, url, &o);
    }
    if (*upload_data_size) {
        http_diag_data(rq->up, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    out_init(&o);
    if (http_diag_finish(h, rq->up, &o) == 0) return MHD_YES; /* suspended until a worker finishes */
    return send_out(h, conn, method, url, &o);
}

/* POST /api/v1/import: the body streams to an import worker (import.c). */
static enum MHD_Result on_import(cp_http *h, struct MHD_Connection *conn, const char *method, const char *url,
                                 const char *upload_data, size_t *upload_data_size, http_req *rq)
{
    http_out o;
    if (!rq->import) { /* headers only */
        rq->import = 1;
        rq->seen = 1;
        out_init(&o);
        http_args args;
        memset(&args, 0, sizeof args);
        MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, collect_arg, &args);
        args.who = rq->who;
        args.conn = conn;
        args.method = method;
        if (http_import_begin(h, conn, &args, &rq->imp, &o) == 0) return MHD_YES;
        return send_out(h, conn, method, url, &o);
    }
    if (*upload_data_size) {
        if (rq->imp) http_import_data(rq->imp, upload_data, upload_data_size);
        else *upload_data_size = 0; /* answered at once: the body is dropped */
        return MHD_YES;
    }
    if (!rq->imp) return MHD_YES; /* the answer is queued */
    out_init(&o);
    if (http_import_finish(rq->imp, &o) == 0) return MHD_YES; /* suspended until the worker answers */
    return send_out(h, conn, method, url, &o);
}

/* The endpoints that take a body (POST, kept up to HTTP_MAX_BODY_BYTES); uploads and
 * imports have their own handlers. */
static int takes_body(const char *url)
{
    return !strcmp(url, "/api/v1/tree") || !strcmp(url, "/api/v1/tree/export");
}

/* Answers a request (not an upload nor an import) once its body, if any, is in. */
static enum MHD_Result answer(cp_http *h, struct MHD_Connection *conn, const char *url, const char *method, http_req *rq)
{
    http_out o;
    out_init(&o);
    int m = method_bit(method);
    if (!strcmp(url, "/metrics")) { /* Prometheus, open like /api/v1/health (metrics_http.c) */
        http_metrics_serve(h, method, &o);
    } else if (http_ui_path(url)) {
        http_ui_serve(conn, url, method, &o);
    } else if (!m) {
        http_error(&o, 405, "method_not_allowed", "method not allowed");
        o.allow = "GET, HEAD, POST, DELETE";
    } else {
        http_args args;
        memset(&args, 0, sizeof args);
        MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, collect_arg, &args);
        args.who = rq->who;
        args.conn = conn;
        args.method = method;
        route(h, conn, url, m, &args, rq, &o);
        /* suspended while the summary worker runs (api_hprof.c): MHD calls again after */
        if (http_hprof_waiting(rq->hprof)) return MHD_YES;
    }
    return send_out(h, conn, method, url, &o);
}

/* MHD's access handler (see the file comment for the call sequence). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    cp_http *h = cls;
    (void)version;
    http_req *rq = *con_cls;
    if (!rq) return MHD_NO; /* on_uri could not allocate */
    if (!rq->checked) { /* the first call of any request: headers complete, no body read yet */
        rq->checked = 1;
        http_guard_headers_done(h, conn); /* the header deadline no longer applies */
        http_out o;
        out_init(&o);
        /* answered now, MHD reads no body and closes the connection after the answer */
        if (http_guard_check(h, conn, method, &o) != 0) return send_out(h, conn, method, url, &o);
        /* who asks, and may they (auth.c); nothing to do with --auth none */
        if (h->auth && http_auth_check(h, conn, url, method, rq, &o) != 0) return send_out(h, conn, method, url, &o);
    }
    if (rq->diag || (!rq->seen && is_diag_path(url)))
        return on_diag(h, conn, method, url, upload_data, upload_data_size, rq);
    if (rq->import || (!rq->seen && method_bit(method) == M_POST && !strcmp(url, "/api/v1/import")))
        return on_import(h, conn, method, url, upload_data, upload_data_size, rq);
    if (!rq->seen) { /* headers only */
        rq->seen = 1;
        int m = method_bit(method);
        rq->keep_body = m == M_POST && takes_body(url);
        uint64_t len = 0;
        int body = http_body_declared(conn, &len);
        if (body && !rq->keep_body) {
            /* Nothing here takes a body: answer at once instead of reading (and dropping)
             * what may be gigabytes or never come. GET, HEAD, DELETE: 413; another method
             * gets its 404 or 405 as it would without a body. */
            if (m != M_GET && m != M_DELETE) return answer(h, conn, url, method, rq);
            http_out o;
            out_init(&o);
            http_error(&o, 413, "body_not_allowed", "this request takes no body");
            return send_out(h, conn, method, url, &o);
        }
        if (body == 1 && len > HTTP_MAX_BODY_BYTES) { /* over the limit as declared: at once */
            http_out o;
            out_init(&o);
            http_error(&o, 413, "body_too_large", "the body is larger than %u bytes", HTTP_MAX_BODY_BYTES);
            return send_out(h, conn, method, url, &o);
        }
        return MHD_YES;
    }
    if (*upload_data_size) {
        req_take_body(rq, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    return answer(h, conn, url, method, rq);
}

/* MHD's own messages go to cfg->log at debug level: they are mostly about clients
 * (closed with an incomplete request, bad syntax) and must not flood the log. */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    cp_http *h = cls;
    if (!h->cfg->log) return;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r')) msg[--n] = 0;
    h->cfg->log(h->cfg->log_ud, HTTP_LOG_DEBUG, msg);
}

/* ---- start / stop ------------------------------------------------------------------------ */

/* Resolves cfg->host (numeric or a name) to the first address of the port. */
static int resolve_bind(const cp_http_config *cfg, struct sockaddr_storage *ss, int *ipv6, char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char port[16];
    snprintf(port, sizeof port, "%d", cfg->port);
    const char *host = cfg->host && *cfg->host ? cfg->host : "0.0.0.0";
    int rc = getaddrinfo(host, port, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(err, errlen, "http: cannot resolve '%s': %s", host, gai_strerror(rc));
        return CP_EINVAL;
    }
    memset(ss, 0, sizeof *ss);
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *ipv6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    return CP_OK;
}

static int check_config(const cp_http_config *cfg, char *err, size_t errlen)
{
    if (!cfg->open_reader) {
        snprintf(err, errlen, "http: no reader");
        return CP_EINVAL;
    }
    if (cfg->port < 0 || cfg->port > 65535 || cfg->threads == 0 || cfg->threads > 1024 || cfg->max_limit == 0 ||
        cfg->max_span_ms <= 0 || cfg->max_tree_calls == 0 || cfg->max_tree_nodes == 0 || cfg->max_profile_calls == 0 ||
        cfg->cursor_ttl_ms <= 0 ||
        cfg->header_timeout_s > 86400) {
        snprintf(err, errlen, "http: invalid configuration (port, threads or limits)");
        return CP_EINVAL;
    }
    return CP_OK;
}

int cp_http_start(const cp_http_config *cfg, cp_http **out, char *err, size_t errlen)
{
    *out = NULL;
    int st = check_config(cfg, err, errlen);
    if (st != CP_OK) return st;
    struct sockaddr_storage ss;
    int ipv6 = 0;
    if ((st = resolve_bind(cfg, &ss, &ipv6, err, errlen)) != CP_OK) return st;
    cp_http *h = calloc(1, sizeof *h);
    if (!h || pool_init(&h->pool, cfg->threads + 1) != CP_OK) {
        free(h);
        snprintf(err, errlen, "http: out of memory");
        return CP_ENOMEM;
    }
    h->cfg = cfg;
    /* poll(), not epoll: with 0.9.75's edge-triggered epoll a request whose last bytes
     * arrive together with the client's FIN is sometimes never noticed as ended, and the
     * connection sits until its timeout. poll is level-triggered; a thread serves at most
     * a few hundred connections, where poll costs nothing. */
    if (jobs_start(&h->jobs, cfg->dump_workers ? cfg->dump_workers : 2) != CP_OK) {
        snprintf(err, errlen, "http: cannot start the upload workers");
        st = CP_ENOMEM;
        goto fail_pool;
    }
    /* streamed queries: fewer workers than readers, so plain requests always find one */
    if (jobs_start(&h->queries, cfg->threads > 2 ? cfg->threads / 2 : 1) != CP_OK) {
        snprintf(err, errlen, "http: cannot start the query workers");
        st = CP_ENOMEM;
        goto fail_jobs;
    }
    if (jobs_start(&h->imports, cfg->import_workers ? cfg->import_workers : 2) != CP_OK) {
        snprintf(err, errlen, "http: cannot start the import workers");
        st = CP_ENOMEM;
        goto fail_queries;
    }
    /* heap dump summaries: one at a time (api_hprof.c) */
    if (jobs_start(&h->hprofs, 1) != CP_OK) {
        snprintf(err, errlen, "http: cannot start the heap dump summary worker");
        st = CP_ENOMEM;
        goto fail_imports;
    }
    if (http_hprof_cache_init(h) != CP_OK) {
        snprintf(err, errlen, "http: out of memory");
        st = CP_ENOMEM;
        goto fail_hprofs;
    }
    if (h->cfg->trace_link && (st = http_trace_link_check(h->cfg->trace_link, err, errlen)) != CP_OK) goto fail_hprofs;
    if ((st = http_guard_start(h, err, errlen)) != CP_OK) goto fail_hprofs;
    pthread_mutex_init(&h->imports_mu, NULL);
    pthread_mutex_init(&h->streams_mu, NULL);
    http_metrics_init(h); /* the first answers count */
    unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME |
                     (ipv6 ? MHD_USE_IPv6 : 0);
    /* login and upload credentials (auth.c), then HTTPS (MHD's GnuTLS, PEM text in memory) */
    struct MHD_OptionItem tls[4] = {{MHD_OPTION_END, 0, NULL}};
    st = http_auth_start(h, err, errlen);
    if (st == CP_OK) st = http_tls_options(h, tls, &flags, err, errlen);
    h->daemon = st != CP_OK ? NULL : MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, on_request, h,
                                 MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, h, /* first: MHD wants it so */
                                 MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
                                 MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)cfg->threads,
                                 /* above the guard's cap on connections waiting for their
                                  * headers, so requests past them always find a place */
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned int)HTTP_MAX_CONNECTIONS,
                                 MHD_OPTION_PER_IP_CONNECTION_LIMIT, cfg->max_per_client, /* 0 = none */
                                 /* idle (every byte resets it); the guard bounds the headers */
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)120,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(256 * 1024),
                                 MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned int)1,
                                 MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                                 MHD_OPTION_URI_LOG_CALLBACK, on_uri, h,
                                 MHD_OPTION_NOTIFY_CONNECTION, http_guard_notify, h,
                                 MHD_OPTION_ARRAY, tls,
                                 MHD_OPTION_END);
    if (!h->daemon) {
        if (st == CP_OK)
            snprintf(err, errlen, "http: cannot listen on %s:%d: %s%s", cfg->host ? cfg->host : "0.0.0.0", cfg->port,
                     strerror(errno), cfg->tls_cert_file ? " (or the HTTPS certificate and key are not usable)" : "");
        st = st != CP_OK ? st : CP_EIO;
        http_auth_stop(h);
        http_tls_free(h);
        http_metrics_free(h);
        pthread_mutex_destroy(&h->imports_mu);
        pthread_mutex_destroy(&h->streams_mu);
        http_guard_stop(h);
        goto fail_hprofs;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info ? info->port : cfg->port;
    http_log(h, HTTP_LOG_INFO, "http: listening on %s:%d (%u threads, headers within %u s, %u connections per client)",
             cfg->host ? cfg->host : "0.0.0.0", h->port, cfg->threads, cfg->header_timeout_s, cfg->max_per_client);
    *out = h;
    return CP_OK;

fail_hprofs:
    http_hprof_cache_free(h);
    jobs_stop(&h->hprofs);
    jobs_free(&h->hprofs);
fail_imports:
    jobs_stop(&h->imports);
    jobs_free(&h->imports);
fail_queries:
    jobs_stop(&h->queries);
    jobs_free(&h->queries);
fail_jobs:
    jobs_stop(&h->jobs);
    jobs_free(&h->jobs);
fail_pool:
    pool_free(&h->pool);
    free(h);
    return st;
}

int cp_http_port(const cp_http *h) { return h->port; }

void cp_http_stop(cp_http *h)
{
    if (!h) return;
    /* Workers first: each finishes its upload and resumes its connection, so MHD has no
     * suspended connection left when it stops. A request arriving meanwhile cannot submit
     * and answers 503. */
    jobs_stop(&h->jobs);
    /* streamed queries: cancelled, their connections resumed, before MHD stops */
    http_streams_stop(h);
    http_imports_stop(h); /* imports likewise */
    jobs_stop(&h->hprofs); /* summaries: the running one cancels (stopping), queued ones answer 503 */
    MHD_stop_daemon(h->daemon); /* joins the threads; pending responses are freed */
    http_guard_stop(h);         /* every connection has left it */
    http_auth_stop(h);
    http_tls_free(h);
    http_metrics_free(h);
    jobs_free(&h->jobs);
    jobs_free(&h->queries);
    jobs_free(&h->imports);
    jobs_free(&h->hprofs);
    http_hprof_cache_free(h);
    pthread_mutex_destroy(&h->imports_mu);
    pthread_mutex_destroy(&h->streams_mu);
    pool_free(&h->pool);
    free(h);
}
