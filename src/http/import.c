/* import.c -- POST /api/v1/import: a foreign trace (TPTP .trcbin / .trcxml, CBOR raw
 * trace) in the body becomes calls in the hot tier (model/cp_import.h, store/cp_importer.h).
 *
 * The body streams: MHD's handler copies what it is handed into a bounded ring and an
 * import worker drains it (gunzip when Content-Encoding is gzip, decode, assemble, write
 * through its own catalog connection with durable commits). When the ring is full the
 * connection is suspended and the worker resumes it once it has made room, so a slow
 * import slows the client down instead of buffering its file: memory is the ring plus
 * the importer's bounded state whatever the body's size. When the body has ended the
 * connection waits (suspended) for the worker's report, the answer:
 *   200 {"format","calls",...}          every byte imported
 *   400 {"error","code","report"}       the input is malformed at report.stopped_at (the
 *                                       calls completed before it are kept)
 * A client that goes away stops the import at its next chunk; committed calls stay.
 */
#include "http_internal.h"
#include "store/cp_importer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

#define RING_BYTES (1u << 20)
#define CHUNK_BYTES (64u << 10)

struct http_import {
    cp_http *h;
    struct http_import *next, *prev; /* h->imports_live */
    struct MHD_Connection *conn;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;                 /* the request and the worker */
    /* the ring (under mu) */
    uint8_t *ring;
    size_t head, len;
    int eof;                  /* the body has ended */
    int aborted;              /* the client is gone */
    int suspended;            /* the handler suspended the connection; the worker resumes it */
    int done;                 /* the worker has finished; answer below */
    /* set at the start, read by the worker */
    int gzip;
    cp_import_opts opts;
    char ns[HTTP_MAX_NAME_BYTES + 1], service[HTTP_MAX_NAME_BYTES + 1], pod[HTTP_MAX_NAME_BYTES + 1];
    /* the answer (written by the worker before done) */
    unsigned status;
    char code[32];
    char msg[400];
    cp_buf report;            /* the report's JSON */
    /* the audit log's entry, filled before the worker starts, recorded by it */
    int audited;
    cp_audit_entry audit;
};

static void imp_release(http_import *x)
{
    pthread_mutex_lock(&x->mu);
    int last = --x->refs == 0;
    pthread_mutex_unlock(&x->mu);
    if (!last) return;
    cp_http *h = x->h;
    pthread_mutex_lock(&h->imports_mu);
    if (x->prev) x->prev->next = x->next;
    else if (h->imports_live == x) h->imports_live = x->next;
    if (x->next) x->next->prev = x->prev;
    pthread_mutex_unlock(&h->imports_mu);
    pthread_mutex_destroy(&x->mu);
    pthread_cond_destroy(&x->cv);
    free(x->ring);
    cp_buf_free(&x->report);
    free(x);
}

/* ---- the worker ------------------------------------------------------------------------ */

/* Takes up to cap bytes out of the ring, waiting for them; 0 at the end of the body or
 * when the client is gone. Resumes a connection that waits for room. */
static size_t ring_take(http_import *x, uint8_t *dst, size_t cap, int *aborted)
{
    pthread_mutex_lock(&x->mu);
    while (!x->len && !x->eof && !x->aborted) pthread_cond_wait(&x->cv, &x->mu);
    size_t n = 0;
    while (n < cap && x->len) {
        size_t run = RING_BYTES - x->head;
        if (run > x->len) run = x->len;
        if (run > cap - n) run = cap - n;
        memcpy(dst + n, x->ring + x->head, run);
        x->head = (x->head + run) % RING_BYTES;
        x->len -= run;
        n += run;
    }
    if (x->suspended && !x->eof) { /* there is room again */
        x->suspended = 0;
        MHD_resume_connection(x->conn);
    }
    *aborted = x->aborted;
    pthread_mutex_unlock(&x->mu);
    return n;
}

static void set_answer(http_import *x, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void set_answer(http_import *x, unsigned status, const char *code, const char *fmt, ...)
{
    x->status = status;
    snprintf(x->code, sizeof x->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->msg, sizeof x->msg, fmt, ap);
    va_end(ap);
}

typedef struct run_state {
    http_import *x;
    cp_importer *ip;
    cp_catalog *cat;
    z_stream z;
    int zinit;
    uint64_t inflated;
    uint8_t head[16];          /* the first bytes, for detecting the format */
    size_t nhead;
    uint8_t *out;
} run_state;

/* Feeds decoded bytes to the importer, creating it once the format is known (final: the
 * body has ended, detect from what there is). */
static int feed_plain(run_state *s, const uint8_t *p, size_t n, int final)
{
    http_import *x = s->x;
    if (!s->ip) {
        if (x->opts.format == CP_IMPORT_UNKNOWN) { /* detect from the first 16 bytes */
            size_t k = sizeof s->head - s->nhead < n ? sizeof s->head - s->nhead : n;
            if (k) memcpy(s->head + s->nhead, p, k);
            s->nhead += k;
            if (s->nhead < sizeof s->head && n == k && !final) return CP_OK; /* more first */
            x->opts.format = cp_import_detect(s->head, s->nhead);
            if (x->opts.format == CP_IMPORT_UNKNOWN) {
                set_answer(x, 415, "unknown_format",
                           "the body is not a .trcbin, .trcxml or CBOR raw trace (give format= to force one)");
                return CP_EINVAL;
            }
            s->ip = cp_importer_new(s->cat, &x->opts);
            if (!s->ip) return CP_ENOMEM;
            int st = cp_importer_feed(s->ip, s->head, s->nhead);
            return st != CP_OK || n == k ? st : cp_importer_feed(s->ip, p + k, n - k);
        }
        s->ip = cp_importer_new(s->cat, &x->opts);
        if (!s->ip) return CP_ENOMEM;
    }
    return n ? cp_importer_feed(s->ip, p, n) : CP_OK;
}

static int feed(run_state *s, const uint8_t *p, size_t n)
{
    if (!s->x->gzip) return feed_plain(s, p, n, 0);
    s->z.next_in = (Bytef *)p;
    s->z.avail_in = (uInt)n;
    while (s->z.avail_in) {
        s->z.next_out = s->out;
        s->z.avail_out = CHUNK_BYTES;
        int zr = inflate(&s->z, Z_NO_FLUSH);
        if (zr != Z_OK && zr != Z_STREAM_END) {
            set_answer(s->x, 400, "bad_encoding", "the gzip body is corrupt at input byte %lu: %s", s->z.total_in,
                       s->z.msg ? s->z.msg : "inflate failed");
            return CP_EPROTO;
        }
        size_t got = CHUNK_BYTES - s->z.avail_out;
        s->inflated += got;
        if (s->inflated > s->x->h->cfg->import_max_bytes) {
            set_answer(s->x, 413, "body_too_large", "the import is larger than %llu bytes once unzipped",
                       (unsigned long long)s->x->h->cfg->import_max_bytes);
            return CP_ELIMIT;
        }
        int st = got ? feed_plain(s, s->out, got, 0) : CP_OK;
        if (st != CP_OK) return st;
        if (zr == Z_STREAM_END) { /* concatenated members (gzip -c a b) go on */
            if (!s->z.avail_in) break;
            inflateReset(&s->z);
        }
    }
    return CP_OK;
}

/* Records the import's entry once its calls are durable and before the answer: the
 * namespace the calls went to, the report's counts, the answer's status (499 when the
 * client went away first: no answer, the calls committed until then are kept). r NULL:
 * no importer was made (nothing was read). */
static void import_audit(http_import *x, const cp_import_report *r, uint64_t duplicates, int aborted)
{
    if (!x->audited) return;
    cp_audit_entry *e = &x->audit;
    cp_audit_sets(e->ns, sizeof e->ns, r && r->ns ? r->ns : x->ns);
    json_t *d = NULL;
    if (r)
        d = json_pack("{s:s,s:I,s:I,s:I,s:s?,s:s?,s:s?}", "format", cp_import_format_name(r->format), "calls",
                      (json_int_t)r->calls, "duplicates", (json_int_t)duplicates, "bytes", (json_int_t)r->bytes,
                      "service", r->service, "pod", r->pod, "error", r->error);
    http_audit_outcome(e, x->status ? x->status : aborted ? 499 : 200);
    http_audit_detail(e, d);
    http_audit_record(x->h, e);
}

static void run_import(void *arg)
{
    http_import *x = arg;
    cp_http *h = x->h;
    run_state s;
    memset(&s, 0, sizeof s);
    s.x = x;
    uint8_t *buf = malloc(CHUNK_BYTES);
    s.out = malloc(CHUNK_BYTES);
    char err[512] = "";
    int st = buf && s.out ? CP_OK : CP_ENOMEM;
    if (st == CP_OK && h->cfg->open_catalog(h->cfg->open_catalog_ud, &s.cat, err, sizeof err) != CP_OK) {
        set_answer(x, 503, "catalog_unavailable", "cannot open the catalog: %s", err);
        st = CP_EIO;
    }
    if (st == CP_OK && cp_catalog_set_bulk(s.cat) != CP_OK) {
        set_answer(x, 503, "catalog_unavailable", "catalog: %s", cp_catalog_errmsg(s.cat));
        st = CP_EIO;
    }
    if (st == CP_OK && x->gzip) {
        if (inflateInit2(&s.z, 15 + 16) != Z_OK) st = CP_ENOMEM;
        else s.zinit = 1;
    }
    int aborted = 0;
    while (st == CP_OK) {
        size_t n = ring_take(x, buf, CHUNK_BYTES, &aborted);
        if (aborted || !n) break;
        st = feed(&s, buf, n);
    }
    if (st == CP_OK && !aborted && !s.ip && s.nhead) /* a body shorter than 16 bytes */
        st = feed_plain(&s, NULL, 0, 1);
    if (st == CP_OK && !aborted && !s.ip) {
        set_answer(x, 400, "empty_body", "the body is empty: send the trace file");
        st = CP_EINVAL;
    }
    if (s.ip) {
        /* a client gone or a failure keeps the calls completed so far, and only those */
        int fst = aborted || st != CP_OK ? cp_importer_abort(s.ip) : cp_importer_finish(s.ip);
        if (st == CP_OK) st = fst;
        cp_importer_report_json(s.ip, &x->report);
        cp_import_report r;
        uint64_t dups = 0;
        cp_importer_report(s.ip, &r, &dups);
        if (st != CP_OK && !x->status)
            set_answer(x, st == CP_ENOMEM ? 503 : st == CP_EIO ? 500 : 400,
                       st == CP_ENOMEM ? "overloaded" : st == CP_EIO ? "catalog_error" : "bad_input", "%s",
                       r.error ? r.error : cp_strstatus(st));
        import_audit(x, &r, dups, aborted);
        http_log(h, HTTP_LOG_INFO, "http: import (%s): %llu calls, stopped at %llu%s%s", cp_import_format_name(r.format),
                 (unsigned long long)r.calls, (unsigned long long)r.stopped_at, r.error ? ": " : "",
                 r.error ? r.error : "");
    } else {
        if (st != CP_OK && !x->status) set_answer(x, 503, "overloaded", "out of memory");
        import_audit(x, NULL, 0, aborted);
    }
    cp_importer_free(s.ip);
    if (s.cat) cp_catalog_close(s.cat);
    if (s.zinit) inflateEnd(&s.z);
    free(buf);
    free(s.out);
    /* from now on the handler drops what the client still sends, reaches the end and answers */
    pthread_mutex_lock(&x->mu);
    x->done = 1;
    if (x->suspended) {
        x->suspended = 0;
        MHD_resume_connection(x->conn);
    }
    pthread_mutex_unlock(&x->mu);
    imp_release(x);
}

/* ---- the handler's side ------------------------------------------------------------------ */

/* name: the file's name, for the audit log only (the answer and the calls do not use it) */
static const char *const import_params[] = {"format", "namespace", "service", "pod", "name", NULL};

static int copy_name(const http_args *a, const char *key, char *dst, size_t cap, http_out *o)
{
    const http_arg *v = http_arg_get(a, key);
    dst[0] = 0;
    if (!v) return 0;
    if (v->vlen >= cap || v->vlen == 0) {
        http_bad_param(o, key, "bad_parameter", "'%s' must be 1 to %zu bytes", key, cap - 1);
        return -1;
    }
    memcpy(dst, v->val, v->vlen + 1);
    return 0;
}

static int import_begin(cp_http *h, struct MHD_Connection *conn, const http_args *a, http_import **out, http_out *o);

int http_import_begin(cp_http *h, struct MHD_Connection *conn, const http_args *a, http_import **out, http_out *o)
{
    if (import_begin(h, conn, a, out, o) == 0) return 0;
    /* a refused import (a namespace not the asker's, no room, a body too large...) is an
     * attempt worth recording; a malformed request (400) did not get that far */
    cp_audit_entry e;
    if (o->status != 400 && http_audit_begin(h, a->who, conn, a->method, CP_AUDIT_IMPORT, &e)) {
        http_audit_target_query(&e, a);
        http_audit_ns_of(&e, a);
        http_audit_outcome(&e, o->status);
        http_audit_record(h, &e);
    }
    return -1;
}

static int import_begin(cp_http *h, struct MHD_Connection *conn, const http_args *a, http_import **out, http_out *o)
{
    *out = NULL;
    if (http_check_args(a, import_params, o)) return -1;
    const http_arg *name = http_arg_get(a, "name");
    if (name && name->vlen > HTTP_MAX_NAME_BYTES) {
        http_bad_param(o, "name", "parameter_too_long", "'name' is longer than %d bytes", HTTP_MAX_NAME_BYTES);
        return -1;
    }
    /* a user limited to some namespaces imports into one of them, named (auth.c) */
    const http_arg *nsa = http_arg_get(a, "namespace");
    if (a->who && !a->who->p.all_namespaces && (!nsa || !nsa->vlen || !http_who_sees(a->who, nsa->val, nsa->vlen))) {
        http_error(o, 403, "forbidden", "name one of your namespaces in 'namespace'");
        return -1;
    }
    if (!h->cfg->open_catalog) {
        http_error(o, 503, "imports_unavailable", "this server takes no imports (no writable catalog)");
        return -1;
    }
    if (http_disk_low(h)) {
        http_error(o, 507, "storage_full", "the server's data directory is below its free-space floor");
        o->retry_after = 60;
        return -1;
    }
    const char *enc = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_ENCODING);
    int gzip = 0;
    if (enc && (!strcasecmp(enc, "gzip") || !strcasecmp(enc, "x-gzip"))) gzip = 1;
    else if (enc && *enc && strcasecmp(enc, "identity") != 0) {
        http_error(o, 415, "unsupported_encoding", "Content-Encoding must be gzip or identity");
        return -1;
    }
    /* a declared length over the limit is refused before any of it is read; gzip can
     * grow incompressible data by about 0.03 %, so a compressed body gets that margin */
    uint64_t len = 0, max = h->cfg->import_max_bytes;
    if (gzip) max = max > UINT64_MAX / 2 ? UINT64_MAX : max + max / 1000 + 65536;
    if (http_body_declared(conn, &len) == 1 && len > max) {
        http_error(o, 413, "body_too_large", "the import is larger than %llu bytes",
                   (unsigned long long)h->cfg->import_max_bytes);
        return -1;
    }
    http_import *x = calloc(1, sizeof *x);
    if (!x || !(x->ring = malloc(RING_BYTES))) {
        free(x);
        http_oom(o);
        return -1;
    }
    x->h = h;
    x->conn = conn;
    x->gzip = gzip;
    x->refs = 2;
    cp_buf_init(&x->report);
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    cp_import_opts_default(&x->opts);
    x->opts.now_ms = cp_now_ms();
    const http_arg *f = http_arg_get(a, "format");
    if (f && (x->opts.format = cp_import_format_parse(f->val)) == CP_IMPORT_UNKNOWN) {
        http_bad_param(o, "format", "bad_parameter", "'format' must be trcbin, trcxml or cbor");
    } else if (!copy_name(a, "namespace", x->ns, sizeof x->ns, o) && !copy_name(a, "service", x->service, sizeof x->service, o) &&
               !copy_name(a, "pod", x->pod, sizeof x->pod, o)) {
        x->opts.ns = x->ns[0] ? x->ns : NULL;
        x->opts.service = x->service[0] ? x->service : NULL;
        x->opts.pod = x->pod[0] ? x->pod : NULL;
        /* the entry is ready before the worker may finish (and record it) */
        x->audited = http_audit_begin(h, a->who, conn, a->method, CP_AUDIT_IMPORT, &x->audit);
        if (x->audited) http_audit_target_query(&x->audit, a);
        pthread_mutex_lock(&h->imports_mu);
        int ok = !h->imports_stopping && http_imports_submit(h, run_import, x) == CP_OK;
        if (ok) { /* listed while the lock is held: a stop cannot miss it */
            x->next = h->imports_live;
            if (x->next) x->next->prev = x;
            h->imports_live = x;
        }
        pthread_mutex_unlock(&h->imports_mu);
        if (ok) {
            *out = x;
            return 0;
        }
        http_error(o, 503, "overloaded", "the server is stopping");
    }
    x->refs = 1;
    imp_release(x);
    return -1;
}

/* Copies what fits into the ring; suspends the connection when some is left (MHD hands
 * the rest over again once the worker resumes it). */
void http_import_data(http_import *x, const char *data, size_t *n)
{
    pthread_mutex_lock(&x->mu);
    size_t put = 0;
    if (x->done) { /* the worker stopped (an error): what is left is read and dropped */
        put = *n;
    } else {
        while (put < *n && x->len < RING_BYTES) {
            /* free space: [tail, end) then [0, head) when the data does not wrap, else [tail, head) */
            size_t tail = (x->head + x->len) % RING_BYTES;
            size_t run = tail >= x->head ? RING_BYTES - tail : x->head - tail;
            if (run > *n - put) run = *n - put;
            memcpy(x->ring + tail, data + put, run);
            x->len += run;
            put += run;
        }
        pthread_cond_signal(&x->cv);
    }
    *n -= put;
    if (*n && !x->done) {
        x->suspended = 1;
        MHD_suspend_connection(x->conn);
    }
    pthread_mutex_unlock(&x->mu);
}

/* The body has ended: 0 when the connection was suspended until the worker's answer (call
 * again after the resume), else the answer is in o. */
int http_import_finish(http_import *x, http_out *o)
{
    pthread_mutex_lock(&x->mu);
    x->eof = 1;
    pthread_cond_signal(&x->cv);
    if (!x->done) {
        x->suspended = 1;
        MHD_suspend_connection(x->conn);
        pthread_mutex_unlock(&x->mu);
        return 0;
    }
    pthread_mutex_unlock(&x->mu);
    if (!x->status) {
        cp_buf_free(&o->body);
        o->body = x->report;
        cp_buf_init(&x->report);
        return -1;
    }
    http_error(o, x->status, x->code, "%s", x->msg);
    if (x->report.len) {
        json_t *rep = json_loadb((const char *)x->report.data, x->report.len, 0, NULL);
        if (rep && o->json) json_object_set_new(o->json, "report", rep);
        else json_decref(rep);
    }
    return -1;
}

/* The request is over (answered, or the client went away). */
void http_import_free(http_import *x)
{
    if (!x) return;
    pthread_mutex_lock(&x->mu);
    if (!x->done) x->aborted = 1;
    pthread_cond_signal(&x->cv);
    pthread_mutex_unlock(&x->mu);
    imp_release(x);
}

void http_imports_stop(cp_http *h)
{
    pthread_mutex_lock(&h->imports_mu);
    h->imports_stopping = 1;
    for (http_import *x = h->imports_live; x; x = x->next) {
        pthread_mutex_lock(&x->mu);
        x->aborted = 1;
        pthread_cond_signal(&x->cv);
        pthread_mutex_unlock(&x->mu);
    }
    pthread_mutex_unlock(&h->imports_mu);
    http_imports_join(h);
}
