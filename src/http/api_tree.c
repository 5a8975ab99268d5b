/* api_tree.c -- call trees: GET /calls/{id}/tree (one call), GET /tree?ids=a,b and
 * POST /tree {"ids":[...]} (several calls merged), GET /calls/{id}/trace (the trace part
 * of the call's blob, a valid agent trace file), and the TPTP exports GET
 * /calls/{id}/export and GET /tree/export?ids=.. (model/cp_import.h).
 *
 * Calls are fetched one at a time with their blobs (cp_reader_fetch: the blob opened with
 * its words); each is added to the tree or the export and dropped, so memory holds one
 * blob plus the tree (bounded by cfg->max_tree_nodes) or the export file. The tree's
 * response is cp_tree_json's text with CALLS = the Call objects, embedded verbatim.
 */
#include "http_internal.h"
#include "model/cp_import.h"
#include "model/cp_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tree_params[] = {"ids", NULL};

/* Sets the error for a failed tree build or export. */
static void tree_fail(int status, const char *err, http_out *o)
{
    if (status == CP_ELIMIT)
        http_error(o, 413, "tree_too_large", "the tree is over its budget: %s", err);
    else if (status == CP_ENOMEM)
        http_oom(o);
    else if (status == CP_EINVAL)
        http_error(o, 422, "not_exportable", "%s", err);
    else
        http_error(o, 500, "corrupt_trace", "a stored trace cannot be read: %s", err);
}

/* Sets the export's answer: the file as an attachment. */
static void export_answer(const cp_call_ref *refs, size_t n, int xml, cp_buf *file, http_out *o)
{
    char id[CP_CALL_ID_MAX];
    cp_call_id_format(&refs[0], id);
    const char *ext = xml ? "trcxml" : "trcbin";
    if (n == 1) snprintf(o->disposition, sizeof o->disposition, "attachment; filename=\"call-%s.%s\"", id, ext);
    else snprintf(o->disposition, sizeof o->disposition, "attachment; filename=\"calls-%zu.%s\"", n, ext);
    o->content_type = xml ? "application/xml; charset=utf-8" : "application/octet-stream";
    cp_buf_free(&o->body);
    o->body = *file;
    cp_buf_init(file);
}

/* What an export held, for its audit entry: the calls in it and their namespace. */
typedef struct export_seen {
    size_t calls;
    char ns[CP_AUDIT_MAX_NS];   /* the calls' namespace; "" before the first or when several */
    int several;
} export_seen;

static void seen_call(export_seen *s, const cp_call *c)
{
    size_t n = c->ns ? c->ns_len : 0;
    if (s->calls++ == 0) cp_audit_set(s->ns, sizeof s->ns, c->ns ? c->ns : "", n);
    else if (!s->several && (strlen(s->ns) != n || memcmp(s->ns, c->ns, n))) s->several = 1;
    if (s->several) s->ns[0] = 0;
}

/* Builds the tree of refs[0..n) -- or, with exp, the export file -- from the calls fetched
 * one at a time, and sets the response (or the error). Calls of namespaces who may not
 * see are left out (auth.c), and so are unknown ids for such a user: 404 when none is
 * left. seen (exports only, may be NULL) gets what the file held. */
static void build_tree_or_export(cp_http *h, const http_who *who, const cp_call_ref *refs, size_t n, cp_export *exp,
                                 int xml, export_seen *seen, http_out *o)
{
    cp_tree_limits lim;
    cp_tree_limits_default(&lim);
    lim.max_nodes = h->cfg->max_tree_nodes;
    cp_tree *tree = exp ? NULL : cp_tree_new(&lim);
    cp_buf calls, file;       /* "Call,Call,..." for the tree; the export's bytes */
    cp_buf_init(&calls);
    cp_buf_init(&file);
    cp_fetched f;
    cp_fetched_init(&f);
    char err[256] = "", reason[64] = "trace_not_found";
    size_t added = 0, ncalls = 0, visible = 0;
    int status = CP_OK, failed = 0;
    cp_reader *r = NULL;
    if ((!exp && !tree) || http_reader_take(h, o, &r)) {
        if (!exp && !tree) http_oom(o);
        cp_tree_free(tree);
        return;
    }
    for (size_t i = 0; i < n && status == CP_OK && o->status == 200; i++) {
        int rc = cp_reader_fetch(r, &refs[i], &f, err, sizeof err);
        if (rc == CP_OK && !f.found && who && !who->p.all_namespaces) {
            continue; /* for a user limited to some namespaces, unknown ids are skipped like
                       * those of other namespaces: neither tells the other apart */
        } else if (rc == CP_OK && !f.found) {
            char id[CP_CALL_ID_MAX];
            cp_call_id_format(&refs[i], id);
            http_error(o, 404, "call_not_found", "no call with id %s", id);
            http_error_field(o, "id", id);
        } else if (rc == CP_ECORRUPT || rc == CP_ENOMEM) {
            status = rc;
        } else if (rc < 0) {
            failed = 1;
            http_reader_error(o, rc, "get", cp_reader_errmsg(r));
        } else if (!http_who_sees(who, f.call.ns ? f.call.ns : "", f.call.ns ? f.call.ns_len : 0)) {
            continue; /* as if unknown */
        } else if (exp) {
            visible++;
            status = cp_export_add(exp, &f.call, f.blob, &file, err, sizeof err);
            added++;
            if (seen) seen_call(seen, &f.call);
        } else {
            visible++;
            if ((ncalls++ && cp_buf_putc(&calls, ',') != CP_OK) || http_call_json(&calls, &f.call) != CP_OK) {
                status = CP_ENOMEM;
            } else if (f.blob) {
                char id[CP_CALL_ID_MAX];
                cp_call_id_format(&refs[i], id);
                status = cp_tree_set_source(tree, id, strlen(id));
                if (status == CP_OK) status = cp_tree_add(tree, f.blob, err, sizeof err);
                added++;
            } else {
                snprintf(reason, sizeof reason, "%s", f.call.trace_reason ? f.call.trace_reason : "trace_not_found");
            }
        }
    }
    http_pool_release(h, r, failed);
    if (o->status == 200 && status == CP_OK && visible == 0) {
        char id[CP_CALL_ID_MAX];
        cp_call_id_format(&refs[0], id);
        http_error(o, 404, "call_not_found", "no call with id %s", n == 1 ? id : "among the ids");
        if (n == 1) http_error_field(o, "id", id);
    }
    if (o->status == 200 && status == CP_OK && exp) status = cp_export_end(exp, &file, err, sizeof err);
    if (o->status != 200) {
        /* the error is set */
    } else if (status != CP_OK) {
        tree_fail(status, err, o);
    } else if (exp) {
        export_answer(refs, n, xml, &file, o);
    } else if (added == 0) {
        http_error(o, 410, "trace_unavailable", "no trace available (%s)", reason);
        http_error_field(o, "reason", reason);
    } else {
        cp_buf arr;
        cp_buf_init(&arr);
        int bad = cp_buf_putc(&arr, '[') != CP_OK || cp_buf_append(&arr, calls.data, calls.len) != CP_OK ||
                  cp_buf_putc(&arr, ']') != CP_OK;
        if (bad || cp_tree_json(tree, (const char *)arr.data, arr.len, &o->body) != CP_OK) http_oom(o);
        cp_buf_free(&arr);
    }
    cp_fetched_free(&f);
    cp_buf_free(&calls);
    cp_buf_free(&file);
    cp_tree_free(tree);
}

static void build_tree(cp_http *h, const http_who *who, const cp_call_ref *refs, size_t n, http_out *o)
{
    build_tree_or_export(h, who, refs, n, NULL, 0, NULL, o);
}

/* format=trcbin|trcxml (required): 0 or 1, or -1 with the 400 set. */
static int export_format(const http_args *a, http_out *o)
{
    const http_arg *f = http_arg_get(a, "format");
    if (f && !strcmp(f->val, "trcbin")) return 0;
    if (f && !strcmp(f->val, "trcxml")) return 1;
    http_bad_param(o, "format", "bad_parameter", "'format' must be trcbin or trcxml");
    return -1;
}

static void export_refs(cp_http *h, const http_args *a, const cp_call_ref *refs, size_t n, int xml, http_out *o)
{
    cp_export *exp = cp_export_new(xml);
    if (!exp) {
        http_oom(o);
        return;
    }
    export_seen seen;
    memset(&seen, 0, sizeof seen);
    build_tree_or_export(h, a->who, refs, n, exp, xml, &seen, o);
    cp_export_free(exp);
    http_audit_tree_export(h, a, refs, n, xml ? "trcxml" : "trcbin", seen.ns, seen.calls,
                           o->status == 200 ? o->body.len : 0, o->status);
}

/* Parses one id; 0, or -1 with the 400 set (naming param). */
static int parse_one(const char *s, size_t n, const char *param, cp_call_ref *ref, http_out *o)
{
    if (n == 0 || n >= CP_CALL_ID_MAX || cp_call_id_parse(s, n, ref) != CP_OK) {
        if (param) http_bad_param(o, param, "bad_id", "malformed call id in '%s'", param);
        else http_error(o, 400, "bad_id", "malformed call id");
        return -1;
    }
    return 0;
}

/* Field by field: the struct has padding. */
static int ref_equal(const cp_call_ref *a, const cp_call_ref *b)
{
    return a->ts_ms == b->ts_ms && a->restart_ms == b->restart_ms && a->trace_file_index == b->trace_file_index &&
           a->buffer_offset == b->buffer_offset && a->record_index == b->record_index && a->pod_hash == b->pod_hash;
}

/* Appends ref to refs unless it is already there (a call counts once in a tree).
 * Quadratic, but n <= cfg->max_tree_calls. */
static void add_ref(cp_call_ref *refs, size_t *n, const cp_call_ref *ref)
{
    for (size_t i = 0; i < *n; i++)
        if (ref_equal(&refs[i], ref)) return;
    refs[(*n)++] = *ref;
}

void http_api_call_tree(cp_http *h, const http_args *a, const char *id, http_out *o)
{
    cp_call_ref ref;
    memset(&ref, 0, sizeof ref);
    if (http_check_args(a, NULL, o) || parse_one(id, strlen(id), NULL, &ref, o)) return;
    build_tree(h, a->who, &ref, 1, o);
}

/* The ids parameter: the refs (deduplicated, malloc'ed), or -1 with the 400 set. */
static int parse_ids(cp_http *h, const http_args *a, cp_call_ref **out, size_t *nout, http_out *o)
{
    *out = NULL;
    *nout = 0;
    const http_arg *x = http_arg_get(a, "ids");
    if (!x || x->vlen == 0) {
        http_bad_param(o, "ids", "bad_parameter", "'ids' is required (comma-separated call ids)");
        return -1;
    }
    size_t max = h->cfg->max_tree_calls, n = 0, count = 1;
    for (size_t i = 0; i < x->vlen; i++) count += x->val[i] == ',';
    if (count > max) {
        http_bad_param(o, "ids", "too_many_ids", "at most %zu ids", max);
        return -1;
    }
    cp_call_ref *refs = calloc(count, sizeof *refs);
    if (!refs) {
        http_oom(o);
        return -1;
    }
    const char *s = x->val, *end = x->val + x->vlen;
    while (s <= end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *e = comma ? comma : end;
        cp_call_ref ref;
        memset(&ref, 0, sizeof ref);
        if (parse_one(s, (size_t)(e - s), "ids", &ref, o)) {
            free(refs);
            return -1;
        }
        add_ref(refs, &n, &ref);
        s = e + 1;
    }
    *out = refs;
    *nout = n;
    return 0;
}

void http_api_tree_get(cp_http *h, const http_args *a, http_out *o)
{
    cp_call_ref *refs;
    size_t n;
    if (http_check_args(a, tree_params, o) || parse_ids(h, a, &refs, &n, o)) return;
    build_tree(h, a->who, refs, n, o);
    free(refs);
}

/* GET /tree/export?ids=..&format=.. (or POST with {"ids":[...]} for long lists): several
 * calls in one TPTP file. */
static int parse_body(cp_http *h, const cp_buf *body, cp_call_ref **refs, size_t *n, http_out *o);

void http_api_tree_export(cp_http *h, const http_args *a, const cp_buf *body, int body_too_large, http_out *o)
{
    static const char *const get_params[] = {"ids", "format", NULL}, *const post_params[] = {"format", NULL};
    cp_call_ref *refs = NULL;
    size_t n;
    int xml;
    if (http_check_args(a, body ? post_params : get_params, o) || (xml = export_format(a, o)) < 0) return;
    if (body && body_too_large) {
        http_error(o, 413, "body_too_large", "the body is larger than %u bytes", HTTP_MAX_BODY_BYTES);
        return;
    }
    if (body ? parse_body(h, body, &refs, &n, o) : parse_ids(h, a, &refs, &n, o)) {
        free(refs);
        return;
    }
    export_refs(h, a, refs, n, xml, o);
    free(refs);
}

/* GET /calls/{id}/export?format=..: one call as a TPTP file. */
void http_api_call_export(cp_http *h, const http_args *a, const char *id, http_out *o)
{
    static const char *const params[] = {"format", NULL};
    cp_call_ref ref;
    memset(&ref, 0, sizeof ref);
    int xml;
    if (http_check_args(a, params, o) || (xml = export_format(a, o)) < 0 || parse_one(id, strlen(id), NULL, &ref, o))
        return;
    export_refs(h, a, &ref, 1, xml, o);
}

/* {"ids":[string,...]}: the refs (deduplicated), or -1 with the error set. */
static int parse_body(cp_http *h, const cp_buf *body, cp_call_ref **refs, size_t *n, http_out *o)
{
    json_error_t jerr;
    json_t *doc = json_loadb((const char *)body->data, body->len, JSON_REJECT_DUPLICATES, &jerr);
    json_t *ids = json_is_object(doc) ? json_object_get(doc, "ids") : NULL;
    int rc = -1;
    *refs = NULL;
    *n = 0;
    if (!doc) {
        http_error(o, 400, "bad_body", "the body is not JSON: %s (line %d)", jerr.text, jerr.line);
    } else if (!json_is_array(ids) || json_object_size(doc) != 1 || json_array_size(ids) == 0) {
        http_error(o, 400, "bad_body", "the body must be {\"ids\":[call id, ...]} with at least one id");
    } else if (json_array_size(ids) > h->cfg->max_tree_calls) {
        http_error(o, 400, "too_many_ids", "at most %zu ids", h->cfg->max_tree_calls);
    } else if (!(*refs = calloc(json_array_size(ids), sizeof **refs))) {
        http_oom(o);
    } else {
        rc = 0;
        for (size_t i = 0; i < json_array_size(ids) && rc == 0; i++) {
            json_t *v = json_array_get(ids, i);
            cp_call_ref ref;
            memset(&ref, 0, sizeof ref);
            if (!json_is_string(v) || parse_one(json_string_value(v), json_string_length(v), NULL, &ref, o)) {
                http_error(o, 400, "bad_id", "ids[%zu] is not a call id", i);
                rc = -1;
            } else {
                add_ref(*refs, n, &ref);
            }
        }
    }
    json_decref(doc);
    return rc;
}

void http_api_tree_post(cp_http *h, const http_args *a, const cp_buf *body, int body_too_large, http_out *o)
{
    if (http_check_args(a, NULL, o)) return;
    if (body_too_large) {
        http_error(o, 413, "body_too_large", "the body is larger than %u bytes", HTTP_MAX_BODY_BYTES);
        return;
    }
    cp_call_ref *refs;
    size_t n;
    if (parse_body(h, body, &refs, &n, o) == 0) build_tree(h, a->who, refs, n, o);
    free(refs);
}

/* ---- GET /calls/{id}/trace ---------------------------------------------------------------- */

typedef struct trace_ctx {
    const http_who *who;
    cp_buf *out;
    int status;
    char err[256];
    char reason[64];
} trace_ctx;

static int trace_call(void *ud, const cp_call *c)
{
    trace_ctx *t = ud;
    if (!http_who_sees(t->who, c->ns ? c->ns : "", c->ns ? c->ns_len : 0)) return 0; /* stays "not called": 404 */
    if (!c->trace) {
        snprintf(t->reason, sizeof t->reason, "%s", c->trace_reason ? c->trace_reason : "trace_not_found");
        t->status = CP_ENOTFOUND;
        return 0;
    }
    cp_blob *b = NULL;
    t->status = cp_blob_open(c->trace, c->trace_len, &b, t->err, sizeof t->err);
    if (t->status == CP_OK) t->status = cp_buf_append(t->out, b->trace, b->trace_len);
    cp_blob_free(b);
    return 0;
}

void http_api_call_trace(cp_http *h, const http_args *a, const char *id, http_out *o)
{
    cp_call_ref ref;
    if (http_check_args(a, NULL, o) || parse_one(id, strlen(id), NULL, &ref, o)) return;
    trace_ctx t;
    memset(&t, 0, sizeof t);
    t.out = &o->body;
    t.who = a->who;
    t.status = -100; /* "not called" */
    cp_reader *r;
    if (http_reader_take(h, o, &r)) return;
    int rc = cp_reader_get(r, &ref, 1, trace_call, &t);
    int failed = rc < 0 && rc != CP_ENOTFOUND;
    if (failed) http_reader_error(o, rc, "get", cp_reader_errmsg(r));
    http_pool_release(h, r, failed);
    if (failed) return;
    if (rc == CP_ENOTFOUND || t.status == -100) {
        http_error(o, 404, "call_not_found", "no call with this id");
    } else if (t.status == CP_ENOTFOUND) {
        http_error(o, 410, "trace_unavailable", "the call has no trace (%s)", t.reason);
        http_error_field(o, "reason", t.reason);
    } else if (t.status == CP_ENOMEM) {
        http_oom(o);
    } else if (t.status != CP_OK) {
        http_error(o, 500, "corrupt_trace", "the stored trace cannot be read: %s", t.err);
    } else {
        char canon[CP_CALL_ID_MAX]; /* the id as we write it: only URL-safe characters */
        cp_call_id_format(&ref, canon);
        o->content_type = "application/octet-stream";
        snprintf(o->disposition, sizeof o->disposition, "attachment; filename=\"%s.trace\"", canon);
    }
}
