/* api_dumps.c -- the diagnostic files' read API (docs/API.md "Dumps"; dumps-http.md §7.2):
 *
 *   GET    /api/v1/dumps                 list, newest first, paged
 *   GET    /api/v1/dumps/summary         per pod: counts, first/last time, bytes per type
 *   GET    /api/v1/dumps/{id}            the file as stored (Range, Content-Disposition)
 *   DELETE /api/v1/dumps/{id}
 *   GET    /api/v1/dumps/{id}/threads    a thread dump parsed
 *   GET    /api/v1/dumps/{id}/top        a top snapshot parsed
 *   GET    /api/v1/dumps/{id}/profile    a Go pprof profile's totals
 *   (the sampled stacks as trees, /dumps/threads-profile and /dumps/{id}/profile/tree,
 *   are in api_stacks.c)
 *   GET    /api/v1/gc                    GC pauses of a pod, from its GC logs
 *
 * Bytes come through cp_dumps wherever they live (hot, object, cold); a download streams
 * through a reader, so a heap dump of several GB never sits in memory.
 */
#include "dumpjson.h"
#include "http_internal.h"
#include "model/cp_dumptext.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DUMPS_PAGE_DEFAULT 100
#define GC_MAX_FILES 500              /* GC logs read by one /gc request */
#define GC_LOOKAHEAD_MS (86400000LL)  /* logs uploaded up to a day after the window hold its events */
#define ONLINE_MS (5 * 60 * 1000)     /* "online": a file received within 5 minutes (§6.5) */
#define SUMMARY_MAX_PODS 100000

static const char *const filter_params[] = {"namespace", "service", "pod", "type", "from", "to", NULL};

static int has_dumps(cp_http *h, http_out *o)
{
    if (h->cfg->dumps) return 1;
    http_error(o, 503, "unavailable", "diagnostic file storage is not configured");
    return 0;
}

static int name_param(const http_args *a, const char *key, const char **out, http_out *o)
{
    const http_arg *x = http_arg_get(a, key);
    *out = NULL;
    if (!x || !x->vlen) return 0;
    if (x->vlen > CP_DUMP_MAX_NAME) {
        http_bad_param(o, key, "parameter_too_long", "'%s' is longer than %d bytes", key, CP_DUMP_MAX_NAME);
        return -1;
    }
    *out = x->val;
    return 0;
}

int http_dump_filter(cp_http *h, const http_args *a, cp_dump_filter *f, http_out *o)
{
    memset(f, 0, sizeof *f);
    http_who_dump_scope(a->who, f); /* only the asker's namespaces (auth.c) */
    if (http_parse_window(h, a, &f->from_ms, &f->to_ms, o) != 0) return -1;
    if (name_param(a, "namespace", &f->ns, o) || name_param(a, "service", &f->service, o) ||
        name_param(a, "pod", &f->pod, o))
        return -1;
    const http_arg *t = http_arg_get(a, "type");
    if (t && t->vlen) {
        cp_dump_kind k;
        if (cp_dump_kind_parse(t->val, t->vlen, &k) != CP_OK) {
            http_bad_param(o, "type", "bad_parameter",
                           "unknown type (td, top, gc, heap, alloc, pprof_heap, goroutine, profile, other)");
            return -1;
        }
        f->kind = k;
    }
    return 0;
}

/* An id path segment: a positive decimal. 0, or -1 with a 404 (no such resource). */
static int parse_id(const char *s, int64_t *id, http_out *o)
{
    uint64_t v;
    if (cp_parse_u64(s, INT64_MAX, &v) != CP_OK || v == 0) {
        http_error(o, 404, "not_found", "no such dump");
        return -1;
    }
    *id = (int64_t)v;
    return 0;
}

/* Gets the record of the id segment; one of a namespace the asker may not see is as if it
 * did not exist. 0, or -1 with the answer set. */
static int get_meta(cp_http *h, const http_args *a, const char *id_text, cp_dump_meta *m, http_out *o)
{
    int64_t id;
    if (!has_dumps(h, o) || parse_id(id_text, &id, o)) return -1;
    char err[512] = "";
    int st = cp_dumps_get(h->cfg->dumps, id, m, err, sizeof err);
    if (st == CP_ENOTFOUND || (st == CP_OK && !http_who_sees(a->who, m->ns, strlen(m->ns)))) {
        http_error(o, 404, "not_found", "no such dump");
        return -1;
    }
    if (st != CP_OK) {
        http_reader_error(o, st, "dump lookup", err);
        return -1;
    }
    return 0;
}

int http_dump_get(cp_http *h, const http_args *a, const char *id_text, cp_dump_meta *m, http_out *o)
{
    return get_meta(h, a, id_text, m, o);
}

/* ---- JSON of a record ------------------------------------------------------------------ */

static const char *location_name(cp_dump_location l)
{
    return l == CP_DUMP_HOT ? "hot" : l == CP_DUMP_OBJECT ? "object" : l == CP_DUMP_COLD ? "cold" : "unknown";
}

static json_t *nullable_ms(int64_t v)
{
    return v >= 0 ? json_integer(v) : json_null();
}

static json_t *meta_json(const cp_dump_meta *m)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)m->id);
    json_t *info = json_loads(m->info[0] ? m->info : "{}", 0, NULL);
    json_t *j = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:s,s:o,s:I,s:I,s:s,s:I,s:s,s:o}", "id", id, "namespace", m->ns,
                          "service", m->service, "pod", m->pod, "type", cp_dump_kind_name(m->kind), "time_ms",
                          (json_int_t)m->dir_ms, "bytes", (json_int_t)m->bytes, "name", m->name, "capture_ms",
                          nullable_ms(m->capture_ms), "received_ms", (json_int_t)m->received_ms, "restart_ms",
                          (json_int_t)m->restart_ms, "sha256", m->sha256, "version", (json_int_t)m->version, "location",
                          location_name(m->location), "info", info ? info : json_object());
    if (!j) return NULL;
    json_object_set_new(j, "restart_pod", m->restart_pod[0] ? json_string(m->restart_pod) : json_null());
    json_object_set_new(j, "state", json_string("complete"));
    if (m->kind == CP_DUMP_GC) json_object_set_new(j, "gc_rotation", m->gc_rotation >= 0 ? json_integer(m->gc_rotation) : json_null());
    return j;
}

/* ---- GET /dumps ------------------------------------------------------------------------ */

typedef struct list_ctx {
    json_t *arr;
    size_t n, limit;
    int64_t last_ms, last_id;
    int oom;
} list_ctx;

static int list_row(void *ud, const cp_dump_meta *m)
{
    list_ctx *c = ud;
    json_t *j = meta_json(m);
    if (!j || json_array_append_new(c->arr, j) != 0) {
        c->oom = 1;
        return 1;
    }
    c->n++;
    c->last_ms = m->dir_ms;
    c->last_id = m->id;
    return 0;
}

void http_api_dumps(cp_http *h, const http_args *a, http_out *o)
{
    static const char *const allowed[] = {"namespace", "service", "pod", "type", "from", "to", "limit", "cursor", NULL};
    cp_dump_filter f;
    if (http_check_args(a, allowed, o) || !has_dumps(h, o) || http_dump_filter(h, a, &f, o) ||
        http_time_id_cursor(a, &f.before_ms, &f.before_id, o))
        return;
    uint64_t limit = DUMPS_PAGE_DEFAULT;
    const http_arg *l = http_arg_get(a, "limit");
    if (l && l->vlen && (cp_parse_u64(l->val, h->cfg->max_limit, &limit) != CP_OK || limit == 0)) {
        http_bad_param(o, "limit", "limit_too_large", "'limit' must be 1..%u", h->cfg->max_limit);
        return;
    }
    f.limit = (size_t)limit + 1; /* one more tells whether a next page exists */
    list_ctx c = {json_array(), 0, (size_t)limit, 0, 0, 0};
    if (!c.arr) {
        http_oom(o);
        return;
    }
    char err[512] = "";
    int st = cp_dumps_list(h->cfg->dumps, &f, list_row, &c, err, sizeof err);
    if (c.oom) {
        json_decref(c.arr);
        http_oom(o);
        return;
    }
    if (st != CP_OK) {
        json_decref(c.arr);
        http_reader_error(o, st, "dump listing", err);
        return;
    }
    json_t *next = json_null();
    if (c.n > limit) { /* drop the probe row; the cursor is the last row kept */
        json_array_remove(c.arr, limit);
        json_t *last = json_array_get(c.arr, limit - 1);
        char cur[64];
        snprintf(cur, sizeof cur, "%lld_%s", (long long)json_integer_value(json_object_get(last, "time_ms")),
                 json_string_value(json_object_get(last, "id")));
        json_decref(next);
        next = json_string(cur);
    }
    o->json = json_pack("{s:o,s:o}", "dumps", c.arr, "next_cursor", next);
    if (!o->json) http_oom(o);
}

/* ---- GET /dumps/{id}: the bytes --------------------------------------------------------- */

typedef struct dl_state {
    cp_dump_reader *r;
    uint64_t start;
} dl_state;

static ssize_t dl_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    dl_state *s = cls;
    long n = cp_dump_reader_pread(s->r, buf, max, s->start + pos);
    if (n < 0) return MHD_CONTENT_READER_END_WITH_ERROR;
    if (n == 0) return MHD_CONTENT_READER_END_OF_STREAM;
    return n;
}

static void dl_free(void *cls)
{
    dl_state *s = cls;
    cp_dump_reader_close(s->r);
    free(s);
}

static const char *content_type_of(const cp_dump_meta *m)
{
    switch (m->kind) {
    case CP_DUMP_TD:
    case CP_DUMP_TOP:
    case CP_DUMP_GC: return "text/plain; charset=utf-8";
    case CP_DUMP_HEAP: return "application/zip";
    case CP_DUMP_ALLOC:
    case CP_DUMP_PPROF_HEAP:
    case CP_DUMP_GOROUTINE:
    case CP_DUMP_PROFILE: return "application/octet-stream";
    default: break;
    }
    size_t n = strlen(m->name);
    if (n > 4 && (!strcmp(m->name + n - 4, ".log") || !strcmp(m->name + n - 4, ".txt")))
        return "text/plain; charset=utf-8";
    if (n > 4 && !strcmp(m->name + n - 4, ".zip")) return "application/zip";
    return "application/octet-stream";
}

/* attachment; filename="<ASCII, quotes and backslashes replaced>"; filename*=UTF-8''<pct> */
static void set_disposition(http_out *o, const char *name)
{
    char ascii[CP_DUMP_MAX_NAME + 1], pct[3 * CP_DUMP_MAX_NAME + 1];
    size_t a = 0, p = 0;
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *s = (const unsigned char *)name; *s && a < sizeof ascii - 1; s++) {
        ascii[a++] = (*s < 0x20 || *s > 0x7e || *s == '"' || *s == '\\') ? '_' : (char)*s;
        int plain = (*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') ||
                    strchr("!#$&+-.^_`|~", *s);
        if (plain) pct[p++] = (char)*s;
        else if (p + 3 < sizeof pct) {
            pct[p++] = '%';
            pct[p++] = hex[*s >> 4];
            pct[p++] = hex[*s & 15];
        }
    }
    ascii[a] = 0;
    pct[p] = 0;
    int n = snprintf(o->disposition, sizeof o->disposition, "attachment; filename=\"%s\"; filename*=UTF-8''%s",
                     ascii, pct);
    if (n < 0 || (size_t)n >= sizeof o->disposition)
        snprintf(o->disposition, sizeof o->disposition, "attachment; filename=\"%s\"", ascii);
}

/* A single "bytes=a-b" / "a-" / "-n" range: 1 with [*start, *end] set, 0 to send the
 * whole file (no Range, several ranges or a syntax we ignore, RFC 9110 §14.2), -1 when
 * unsatisfiable. */
static int parse_range(const char *v, uint64_t size, uint64_t *start, uint64_t *end)
{
    if (!v || strncmp(v, "bytes=", 6) != 0 || strchr(v, ',')) return 0;
    v += 6;
    unsigned long long a = 0, b = 0;
    int na = 0, nb = 0;
    while (*v >= '0' && *v <= '9' && na < 19) a = a * 10 + (unsigned long long)(*v++ - '0'), na++;
    if (*v++ != '-') return 0;
    while (*v >= '0' && *v <= '9' && nb < 19) b = b * 10 + (unsigned long long)(*v++ - '0'), nb++;
    if (*v) return 0;
    if (!na && !nb) return 0;
    if (!na) { /* suffix: the last b bytes */
        if (b == 0 || size == 0) return -1;
        *start = b >= size ? 0 : size - b;
        *end = size - 1;
        return 1;
    }
    if (a >= size) return -1;
    if (nb && b < a) return 0;
    *start = a;
    *end = nb && b < size - 1 ? b : size - 1;
    return 1;
}

void http_api_dump(cp_http *h, struct MHD_Connection *conn, const http_args *a, const char *id, http_out *o)
{
    cp_dump_meta m;
    if (http_check_args(a, NULL, o) || get_meta(h, a, id, &m, o)) return;
    uint64_t start = 0, end = m.bytes ? m.bytes - 1 : 0;
    int ranged = parse_range(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_RANGE), m.bytes,
                             &start, &end);
    if (ranged < 0) {
        http_error(o, 416, "range_not_satisfiable", "the range is outside the file's %llu bytes",
                   (unsigned long long)m.bytes);
        http_out_header(o, MHD_HTTP_HEADER_CONTENT_RANGE, "bytes */%llu", (unsigned long long)m.bytes);
        return;
    }
    dl_state *s = calloc(1, sizeof *s);
    if (!s) {
        http_oom(o);
        return;
    }
    char err[512] = "";
    int st = cp_dumps_reader_open(h->cfg->dumps, &m, &s->r, err, sizeof err);
    if (st != CP_OK) {
        free(s);
        http_reader_error(o, st, "dump read", err);
        return;
    }
    s->start = start;
    uint64_t len = m.bytes ? end - start + 1 : 0;
    o->stream = MHD_create_response_from_callback(len, 64 * 1024, dl_read, s, dl_free);
    if (!o->stream) {
        dl_free(s);
        http_oom(o);
        return;
    }
    o->status = ranged ? 206 : 200;
    http_audit_dump_download(h, a, &m, start, end, ranged);
    o->content_type = content_type_of(&m);
    set_disposition(o, m.name);
    http_out_header(o, MHD_HTTP_HEADER_ACCEPT_RANGES, "bytes");
    http_out_header(o, MHD_HTTP_HEADER_ETAG, "\"%s\"", m.sha256);
    if (ranged)
        http_out_header(o, MHD_HTTP_HEADER_CONTENT_RANGE, "bytes %llu-%llu/%llu", (unsigned long long)start,
                    (unsigned long long)end, (unsigned long long)m.bytes);
}

/* ---- DELETE /dumps/{id} ------------------------------------------------------------------ */

void http_api_dump_delete(cp_http *h, const http_args *a, const char *id_text, http_out *o)
{
    int64_t id;
    cp_dump_meta m;
    int have_meta = 0;
    if (http_check_args(a, NULL, o) || !has_dumps(h, o) || parse_id(id_text, &id, o)) return;
    /* another namespace's file: 404, as if it did not exist (auth.c) */
    if (a->who && !a->who->p.all_namespaces) {
        if (get_meta(h, a, id_text, &m, o)) return;
        have_meta = 1;
    }
    char err[512] = "";
    /* the audit entry is written in the deletion's transaction (cp_dumps.h) */
    cp_audit_entry au;
    int audited = http_audit_begin(h, a->who, a->conn, a->method, CP_AUDIT_DUMP_DELETE, &au);
    if (audited) cp_audit_sets(au.target, sizeof au.target, id_text);
    int st = audited ? cp_dumps_delete_audited(h->cfg->dumps, id, cp_now_ms(), &au, err, sizeof err)
                     : cp_dumps_delete(h->cfg->dumps, id, cp_now_ms(), err, sizeof err);
    if (st == CP_ENOTFOUND) http_error(o, 404, "not_found", "no such dump");
    else if (st != CP_OK) http_reader_error(o, st, "dump delete", err);
    else o->status = 204;
    if (audited && st != CP_OK) { /* the attempt that deleted nothing, best effort */
        /* with its namespace when known: a namespace-limited admin sees the attempt */
        if (have_meta) cp_audit_sets(au.ns, sizeof au.ns, m.ns);
        http_audit_outcome(&au, o->status);
        http_audit_record(h, &au);
    }
}

/* ---- parsed views ---------------------------------------------------------------------------- */

/* Loads a file for a parser. 0, or -1 with the answer set. */
static int load(cp_http *h, const cp_dump_meta *m, uint8_t **p, size_t *n, http_out *o)
{
    char err[512] = "";
    if (m->bytes > h->cfg->dump_parse_max) {
        http_error(o, 413, "too_large", "the file has %llu bytes; views parse at most %zu",
                   (unsigned long long)m->bytes, h->cfg->dump_parse_max);
        return -1;
    }
    int st = cp_dumps_load(h->cfg->dumps, m, h->cfg->dump_parse_max, p, n, err, sizeof err);
    if (st != CP_OK) {
        http_reader_error(o, st, "dump read", err);
        return -1;
    }
    return 0;
}

static void unparsable(http_out *o, const char *what, const char *err)
{
    http_error(o, 422, "unparsable", "the file does not parse as %s: %s", what, err);
}

static void wrong_type(http_out *o, const cp_dump_meta *m, const char *want)
{
    http_error(o, 400, "wrong_type", "dump %lld is of type %s, not %s", (long long)m->id, cp_dump_kind_name(m->kind),
               want);
}

/* Adds "id" and "type" to a view and answers it. */
static void view_answer(http_out *o, const cp_dump_meta *m, json_t *j)
{
    if (!j) {
        http_oom(o);
        return;
    }
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)m->id);
    json_object_set_new(j, "id", json_string(id));
    json_object_set_new(j, "type", json_string(cp_dump_kind_name(m->kind)));
    o->json = j;
}

static void view_threads(cp_http *h, const cp_dump_meta *m, http_out *o)
{
    if (m->kind != CP_DUMP_TD) {
        wrong_type(o, m, "td");
        return;
    }
    uint8_t *p;
    size_t n;
    if (load(h, m, &p, &n, o)) return;
    cp_td *td = NULL;
    char err[256] = "";
    int st = cp_td_parse((const char *)p, n, &td, err, sizeof err);
    free(p);
    if (st != CP_OK) {
        unparsable(o, "a thread dump", err);
        return;
    }
    view_answer(o, m, http_td_json(td));
    cp_td_free(td);
}

static void view_top(cp_http *h, const cp_dump_meta *m, http_out *o)
{
    if (m->kind != CP_DUMP_TOP) {
        wrong_type(o, m, "top");
        return;
    }
    uint8_t *p;
    size_t n;
    if (load(h, m, &p, &n, o)) return;
    cp_top *top = NULL;
    char err[256] = "";
    int st = cp_top_parse((const char *)p, n, &top, err, sizeof err);
    free(p);
    if (st != CP_OK) {
        unparsable(o, "a top snapshot", err);
        return;
    }
    view_answer(o, m, http_top_json(top));
    cp_top_free(top);
}

/* sample_type: an index or a type name; default: the profile's default, else the last.
 * 0, or -1 with the 400 set. */
static int pick_sample_type(const cp_pprof_info *in, const http_args *a, size_t *sti, http_out *o)
{
    *sti = in->default_sample_type >= 0 ? (size_t)in->default_sample_type
                                        : (in->nsample_types ? in->nsample_types - 1 : 0);
    const http_arg *s = http_arg_get(a, "sample_type");
    if (!s || !s->vlen) return 0;
    uint64_t v;
    if (cp_parse_u64(s->val, 64, &v) == CP_OK && v < in->nsample_types) {
        *sti = (size_t)v;
        return 0;
    }
    for (size_t i = 0; i < in->nsample_types; i++)
        if (in->sample_types[i].type && !strcmp(in->sample_types[i].type, s->val)) {
            *sti = i;
            return 0;
        }
    http_bad_param(o, "sample_type", "bad_parameter", "the profile has no such sample type");
    return -1;
}

int http_dump_pprof(cp_http *h, const http_args *a, const cp_dump_meta *m, cp_pprof **out, size_t *sti, http_out *o)
{
    *out = NULL;
    if (!cp_dump_kind_is_pprof(m->kind)) {
        wrong_type(o, m, "a pprof profile (alloc, pprof_heap, goroutine, profile)");
        return -1;
    }
    uint8_t *p;
    size_t n;
    if (load(h, m, &p, &n, o)) return -1;
    cp_pprof *pf = NULL;
    char err[256] = "";
    int st = cp_pprof_parse(p, n, h->cfg->dump_parse_max, &pf, err, sizeof err);
    free(p);
    if (st != CP_OK) {
        unparsable(o, "a pprof profile", err);
        return -1;
    }
    if (pick_sample_type(cp_pprof_get_info(pf), a, sti, o)) {
        cp_pprof_free(pf);
        return -1;
    }
    *out = pf;
    return 0;
}

static void view_profile(cp_http *h, const http_args *a, const cp_dump_meta *m, http_out *o)
{
    cp_pprof *pf;
    size_t sti;
    if (http_dump_pprof(h, a, m, &pf, &sti, o)) return;
    uint64_t top = 50;
    const http_arg *t = http_arg_get(a, "top");
    if (t && t->vlen && cp_parse_u64(t->val, 10000, &top) != CP_OK) {
        http_bad_param(o, "top", "bad_parameter", "'top' must be 0..10000");
        cp_pprof_free(pf);
        return;
    }
    view_answer(o, m, http_pprof_json(pf, sti, (size_t)top));
    cp_pprof_free(pf);
}

void http_api_dump_view(cp_http *h, const http_args *a, const char *id, const char *view, http_out *o)
{
    static const char *const profile_args[] = {"sample_type", "top", NULL};
    int profile = !strcmp(view, "profile");
    cp_dump_meta m;
    if (http_check_args(a, profile ? profile_args : NULL, o) || get_meta(h, a, id, &m, o)) return;
    if (!strcmp(view, "threads")) view_threads(h, &m, o);
    else if (!strcmp(view, "top")) view_top(h, &m, o);
    else view_profile(h, a, &m, o);
}

/* ---- GET /gc --------------------------------------------------------------------------------- */

typedef struct gc_ctx {
    cp_dump_meta *files;
    size_t n, cap;
    int oom;
} gc_ctx;

static int gc_file(void *ud, const cp_dump_meta *m)
{
    gc_ctx *c = ud;
    if (c->n >= GC_MAX_FILES) return 1;
    if (cp_grow((void **)&c->files, &c->cap, c->n + 1, sizeof *c->files, 16) != CP_OK) {
        c->oom = 1;
        return 1;
    }
    c->files[c->n++] = *m;
    return 0;
}

typedef struct gc_pause {
    int64_t time_ms, gc_id;
    json_t *j;
    double pause_ms;
} gc_pause;

static int pause_cmp(const void *a, const void *b)
{
    const gc_pause *x = a, *y = b;
    if (x->time_ms != y->time_ms) return x->time_ms < y->time_ms ? -1 : 1;
    return x->gc_id < y->gc_id ? -1 : x->gc_id > y->gc_id;
}

static int dbl_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Collects the window's pauses of one parsed log. */
static int gc_collect(const cp_gc_log *g, int64_t from, int64_t to, gc_pause **ps, size_t *n, size_t *cap)
{
    for (size_t i = 0; i < g->nevents; i++) {
        const cp_gc_event *e = &g->events[i];
        if (e->time_ms < from || e->time_ms >= to || e->pause_ms < 0) continue;
        if (cp_grow((void **)ps, cap, *n + 1, sizeof **ps, 256) != CP_OK) return CP_ENOMEM;
        json_t *j = http_gc_event_json(e);
        if (!j) return CP_ENOMEM;
        (*ps)[(*n)++] = (gc_pause){e->time_ms, e->gc_id, j, e->pause_ms};
    }
    return CP_OK;
}

void http_api_gc(cp_http *h, const http_args *a, http_out *o)
{
    static const char *const allowed[] = {"namespace", "service", "pod", "from", "to", NULL};
    cp_dump_filter f;
    if (http_check_args(a, allowed, o) || !has_dumps(h, o) || http_dump_filter(h, a, &f, o)) return;
    if (!f.pod) {
        http_bad_param(o, "pod", "missing_parameter", "'pod' is required");
        return;
    }
    int64_t from = f.from_ms, to = f.to_ms;
    /* A log holds the events before its upload: look at logs uploaded from the window's
     * start until a day after it. */
    f.kind = CP_DUMP_GC;
    f.to_ms = to > INT64_MAX - GC_LOOKAHEAD_MS ? INT64_MAX : to + GC_LOOKAHEAD_MS;
    gc_ctx c = {0};
    char err[512] = "";
    int st = cp_dumps_list(h->cfg->dumps, &f, gc_file, &c, err, sizeof err);
    if (st > 0) st = CP_OK; /* gc_file stopped the listing at GC_MAX_FILES: "truncated" */
    if (c.oom || st != CP_OK) {
        free(c.files);
        if (c.oom) http_oom(o);
        else http_reader_error(o, st, "dump listing", err);
        return;
    }
    gc_pause *ps = NULL;
    size_t np = 0, cap = 0, parsed = 0, failed = 0;
    int bad = 0;
    for (size_t i = 0; i < c.n && !bad; i++) {
        uint8_t *p;
        size_t n;
        if (c.files[i].bytes > h->cfg->dump_parse_max ||
            cp_dumps_load(h->cfg->dumps, &c.files[i], h->cfg->dump_parse_max, &p, &n, err, sizeof err) != CP_OK) {
            failed++;
            continue;
        }
        cp_gc_log *g = NULL;
        if (cp_gc_parse((const char *)p, n, &g, err, sizeof err) == CP_OK) {
            parsed++;
            bad = gc_collect(g, from, to, &ps, &np, &cap) != CP_OK;
            cp_gc_free(g);
        } else {
            failed++;
        }
        free(p);
    }
    free(c.files);
    json_t *arr = json_array();
    double *durs = np ? malloc(np * sizeof *durs) : NULL;
    if (bad || !arr || (np && !durs)) {
        for (size_t i = 0; i < np; i++) json_decref(ps[i].j);
        free(ps);
        free(durs);
        json_decref(arr);
        http_oom(o);
        return;
    }
    /* The active gc.log is re-sent as it grows and rotated logs repeat it: one pause per
     * (time, GC id). */
    if (np) qsort(ps, np, sizeof *ps, pause_cmp); /* ps is NULL without pauses */
    size_t kept = 0;
    double total = 0, max = 0;
    for (size_t i = 0; i < np; i++) {
        if (i > 0 && ps[i].time_ms == ps[i - 1].time_ms && ps[i].gc_id == ps[i - 1].gc_id) {
            json_decref(ps[i].j);
            continue;
        }
        json_array_append_new(arr, ps[i].j);
        durs[kept++] = ps[i].pause_ms;
        total += ps[i].pause_ms;
        if (ps[i].pause_ms > max) max = ps[i].pause_ms;
    }
    free(ps);
    if (kept) qsort(durs, kept, sizeof *durs, dbl_cmp); /* durs is NULL without pauses */
    double p95 = kept ? durs[(size_t)((double)(kept - 1) * 0.95 + 0.5)] : 0;
    double p99 = kept ? durs[(size_t)((double)(kept - 1) * 0.99 + 0.5)] : 0;
    free(durs);
    json_t *totals = json_pack("{s:I,s:f,s:f,s:f,s:f,s:f}", "count", (json_int_t)kept, "total_ms", total, "max_ms", max,
                               "p95_ms", p95, "p99_ms", p99, "paused_share", total / (double)(to - from));
    o->json = json_pack("{s:s,s:I,s:I,s:I,s:I,s:b,s:o,s:o}", "pod", f.pod, "from", (json_int_t)from, "to", (json_int_t)to,
                        "files", (json_int_t)parsed, "files_unreadable", (json_int_t)failed, "truncated",
                        c.n >= GC_MAX_FILES, "totals", totals ? totals : json_null(), "pauses", arr);
    if (!o->json) http_oom(o);
}

/* ---- GET /dumps/summary ------------------------------------------------------------------------ */

typedef struct sum_ctx {
    json_t *pods;       /* array */
    json_t *cur;        /* the pod being filled */
    json_t *types;
    char ns[CP_DUMP_MAX_NAME + 1], pod[CP_DUMP_MAX_NAME + 1];
    uint64_t bytes;
    int64_t first, last, last_recv, now;
    size_t npods;
    int oom;
} sum_ctx;

static void sum_close(sum_ctx *c)
{
    if (!c->cur) return;
    json_object_set_new(c->cur, "first_ms", json_integer(c->first));
    json_object_set_new(c->cur, "last_ms", json_integer(c->last));
    json_object_set_new(c->cur, "bytes", json_integer((json_int_t)c->bytes));
    json_object_set_new(c->cur, "online", json_boolean(c->now - c->last_recv <= ONLINE_MS));
    json_object_set_new(c->cur, "last_received_ms", json_integer(c->last_recv));
    json_object_set_new(c->cur, "bitrate_bps", c->last > c->first
                                                   ? json_real((double)c->bytes * 8000.0 / (double)(c->last - c->first))
                                                   : json_null());
    c->cur = NULL;
}

static int sum_row(void *ud, const cp_dump_sum *s)
{
    sum_ctx *c = ud;
    if (!c->cur || strcmp(c->ns, s->ns) || strcmp(c->pod, s->pod)) {
        sum_close(c);
        if (c->npods >= SUMMARY_MAX_PODS) return 1;
        c->types = json_object();
        c->cur = json_pack("{s:s,s:s,s:s,s:o,s:I,s:o}", "namespace", s->ns, "pod", s->pod, "service", s->service,
                           "restart_pod", s->restart_pod[0] ? json_string(s->restart_pod) : json_null(), "restart_ms",
                           (json_int_t)s->restart_ms, "types", c->types ? c->types : json_object());
        if (!c->cur || !c->types || json_array_append_new(c->pods, c->cur) != 0) {
            c->oom = 1;
            return 1;
        }
        c->npods++;
        snprintf(c->ns, sizeof c->ns, "%s", s->ns);
        snprintf(c->pod, sizeof c->pod, "%s", s->pod);
        c->bytes = 0;
        c->first = s->first_ms;
        c->last = s->last_ms;
        c->last_recv = s->last_received_ms;
    }
    json_t *t = json_pack("{s:I,s:I,s:I,s:I}", "count", (json_int_t)s->count, "bytes", (json_int_t)s->bytes, "first_ms",
                          (json_int_t)s->first_ms, "last_ms", (json_int_t)s->last_ms);
    if (!t || json_object_set_new(c->types, cp_dump_kind_name(s->kind), t) != 0) {
        c->oom = 1;
        return 1;
    }
    c->bytes += s->bytes;
    if (s->first_ms < c->first) c->first = s->first_ms;
    if (s->last_ms > c->last) c->last = s->last_ms;
    if (s->last_received_ms > c->last_recv) c->last_recv = s->last_received_ms;
    return 0;
}

void http_api_dumps_summary(cp_http *h, const http_args *a, http_out *o)
{
    cp_dump_filter f;
    if (http_check_args(a, filter_params, o) || !has_dumps(h, o) || http_dump_filter(h, a, &f, o)) return;
    sum_ctx c;
    memset(&c, 0, sizeof c);
    c.pods = json_array();
    c.now = cp_now_ms();
    if (!c.pods) {
        http_oom(o);
        return;
    }
    char err[512] = "";
    int st = cp_dumps_summary(h->cfg->dumps, &f, sum_row, &c, err, sizeof err);
    if (st > 0 && !c.oom) st = CP_OK; /* sum_row stopped at SUMMARY_MAX_PODS: "truncated" */
    sum_close(&c);
    if (c.oom || st != CP_OK) {
        json_decref(c.pods);
        if (c.oom) http_oom(o);
        else http_reader_error(o, st, "dump summary", err);
        return;
    }
    o->json = json_pack("{s:I,s:I,s:b,s:o}", "from", (json_int_t)f.from_ms, "to", (json_int_t)f.to_ms, "truncated",
                        c.npods >= SUMMARY_MAX_PODS, "pods", c.pods);
    if (!o->json) http_oom(o);
}
