/* api_tree.c -- call trees: GET /calls/{id}/tree (one call), GET /tree?ids=a,b and
 * POST /tree {"ids":[...]} (several calls merged), and GET /calls/{id}/trace (the
 * trace part of the call's blob, a valid agent trace file).
 *
 * Calls are fetched one at a time with their blobs; each blob is opened, added to the
 * tree and dropped inside the reader's callback, so memory holds one blob plus the tree
 * (bounded by cfg->max_tree_nodes). The response is cp_tree_json's text with CALLS =
 * the Call objects, embedded verbatim.
 */
#include "http_internal.h"
#include "model/cp_tree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tree_params[] = {"ids", NULL};

typedef struct tree_ctx {
    cp_tree *tree;
    cp_buf calls;          /* "Call,Call,..." */
    size_t ncalls;
    size_t added;          /* calls whose trace went into the tree */
    int status;            /* CP_OK, or the first failure (CP_ELIMIT, CP_ECORRUPT, CP_ENOMEM) */
    char err[256];
    char reason[64];       /* trace_dropped_reason of the last call without a trace */
    int found;
    /* the fetched call's blob and pod restart, added to the tree once the reader's get
     * has returned (the dictionary lookup needs the reader) */
    cp_buf blob;
    int have_blob;
    char ns[HTTP_MAX_NAME_BYTES + 1], pod[HTTP_MAX_NAME_BYTES + 1];
    int64_t restart_ms;
} tree_ctx;

/* The words the catalog returns for one blob: their bytes in text, (id, offset, length)
 * in at (offsets, because text moves while it grows). */
typedef struct word_list {
    struct word_at { int32_t id; size_t off, len; } *at;
    size_t n, cap;
    cp_buf text;
    int oom;
} word_list;

static int got_word(void *ud, int32_t id, const char *text, size_t len)
{
    word_list *l = ud;
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        struct word_at *at = realloc(l->at, cap * sizeof *at);
        if (!at) {
            l->oom = 1;
            return 1;
        }
        l->at = at;
        l->cap = cap;
    }
    l->at[l->n++] = (struct word_at){id, l->text.len, len};
    if (cp_buf_append(&l->text, text, len) != CP_OK) {
        l->oom = 1;
        return 1;
    }
    return 0;
}

static int attach_words(cp_blob *b, const word_list *wl)
{
    if (!wl->n) return CP_OK;
    cp_blob_word *w = malloc(wl->n * sizeof *w);
    if (!w) return CP_ENOMEM;
    for (size_t i = 0; i < wl->n; i++)
        w[i] = (cp_blob_word){wl->at[i].id, (const char *)wl->text.data + wl->at[i].off, wl->at[i].len};
    int st = cp_blob_attach_words(b, w, wl->n);
    free(w);
    return st;
}

/* Opens the fetched blob, gives it its pod restart's dictionary words and adds it. */
static int tree_add_fetched(tree_ctx *t, cp_reader *r)
{
    t->have_blob = 0;
    cp_blob *b = NULL;
    int32_t *ids = NULL;
    size_t nids = 0;
    word_list wl = {0};
    cp_buf_init(&wl.text);
    int st = cp_blob_open(t->blob.data, t->blob.len, &b, t->err, sizeof t->err);
    if (st == CP_OK && b->nwords == 0) {
        st = cp_blob_word_ids(b, &ids, &nids);
        if (st == CP_ECORRUPT) snprintf(t->err, sizeof t->err, "the trace does not decode");
        if (st == CP_OK && nids) st = cp_reader_words(r, t->ns, t->pod, t->restart_ms, ids, nids, got_word, &wl);
        if (st == CP_OK && wl.oom) st = CP_ENOMEM;
        if (st == CP_OK) st = attach_words(b, &wl);
        else if (st != CP_ENOMEM && st != CP_ECORRUPT) {
            snprintf(t->err, sizeof t->err, "dictionary: %s", cp_reader_errmsg(r));
            st = CP_EIO;
        }
    }
    if (st == CP_OK) st = cp_tree_add(t->tree, b, t->err, sizeof t->err);
    cp_blob_free(b);
    free(ids);
    free(wl.at);
    cp_buf_free(&wl.text);
    if (st == CP_OK) t->added++;
    return st;
}

/* The reader's callback: the call's JSON, and its trace into the tree. */
static int tree_call(void *ud, const cp_call *c)
{
    tree_ctx *t = ud;
    t->found = 1;
    if ((t->ncalls && cp_buf_putc(&t->calls, ',') != CP_OK) || http_call_json(&t->calls, c) != CP_OK) {
        t->status = CP_ENOMEM;
        return 1;
    }
    t->ncalls++;
    if (!c->trace) {
        snprintf(t->reason, sizeof t->reason, "%s", c->trace_reason ? c->trace_reason : "trace_not_found");
        return 0;
    }
    cp_buf_reset(&t->blob);
    if (cp_buf_append(&t->blob, c->trace, c->trace_len) != CP_OK) {
        t->status = CP_ENOMEM;
        return 1;
    }
    snprintf(t->ns, sizeof t->ns, "%.*s", (int)c->ns_len, c->ns);
    snprintf(t->pod, sizeof t->pod, "%.*s", (int)c->pod_len, c->pod);
    t->restart_ms = c->restart_ms;
    t->have_blob = 1;
    return 0;
}

/* Sets the error for a failed tree build. */
static void tree_fail(const tree_ctx *t, http_out *o)
{
    if (t->status == CP_ELIMIT)
        http_error(o, 413, "tree_too_large", "the tree is over its budget: %s", t->err);
    else if (t->status == CP_ENOMEM)
        http_oom(o);
    else if (t->status == CP_EIO)
        http_error(o, 500, "catalog_error", "%s", t->err);
    else
        http_error(o, 500, "corrupt_trace", "a stored trace cannot be read: %s", t->err);
}

/* Builds the tree of refs[0..n) and sets the response (or the error). */
static void build_tree(cp_http *h, const cp_call_ref *refs, size_t n, http_out *o)
{
    cp_tree_limits lim;
    cp_tree_limits_default(&lim);
    lim.max_nodes = h->cfg->max_tree_nodes;
    tree_ctx t;
    memset(&t, 0, sizeof t);
    cp_buf_init(&t.calls);
    cp_buf_init(&t.blob);
    t.tree = cp_tree_new(&lim);
    cp_reader *r = NULL;
    if (!t.tree || http_reader_take(h, o, &r)) {
        if (!t.tree) http_oom(o);
        cp_tree_free(t.tree);
        cp_buf_free(&t.calls);
        cp_buf_free(&t.blob);
        return;
    }
    int rc;
    int failed = 0;
    for (size_t i = 0; i < n && t.status == CP_OK && o->status == 200; i++) {
        t.found = 0;
        rc = cp_reader_get(r, &refs[i], 1, tree_call, &t);
        if (rc == CP_ENOTFOUND || (rc == CP_OK && !t.found)) {
            char id[CP_CALL_ID_MAX];
            cp_call_id_format(&refs[i], id);
            http_error(o, 404, "call_not_found", "no call with id %s", id);
            http_error_field(o, "id", id);
        } else if (rc < 0) {
            failed = 1;
            http_reader_error(o, rc, "get", cp_reader_errmsg(r));
        } else if (t.have_blob && t.status == CP_OK) {
            t.status = tree_add_fetched(&t, r);
            failed = t.status == CP_EIO;
        }
    }
    http_pool_release(h, r, failed);
    if (o->status != 200) {
        /* the error is set */
    } else if (t.status != CP_OK) {
        tree_fail(&t, o);
    } else if (t.added == 0) {
        http_error(o, 410, "trace_unavailable", "no trace available (%s)", t.reason);
        http_error_field(o, "reason", t.reason);
    } else {
        cp_buf arr;
        cp_buf_init(&arr);
        int bad = cp_buf_putc(&arr, '[') != CP_OK || cp_buf_append(&arr, t.calls.data, t.calls.len) != CP_OK ||
                  cp_buf_putc(&arr, ']') != CP_OK;
        if (bad || cp_tree_json(t.tree, (const char *)arr.data, arr.len, &o->body) != CP_OK) http_oom(o);
        cp_buf_free(&arr);
    }
    cp_buf_free(&t.calls);
    cp_buf_free(&t.blob);
    cp_tree_free(t.tree);
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
    build_tree(h, &ref, 1, o);
}

void http_api_tree_get(cp_http *h, const http_args *a, http_out *o)
{
    if (http_check_args(a, tree_params, o)) return;
    const http_arg *x = http_arg_get(a, "ids");
    if (!x || x->vlen == 0) {
        http_bad_param(o, "ids", "bad_parameter", "'ids' is required (comma-separated call ids)");
        return;
    }
    size_t max = h->cfg->max_tree_calls, n = 0, count = 1;
    for (size_t i = 0; i < x->vlen; i++) count += x->val[i] == ',';
    if (count > max) {
        http_bad_param(o, "ids", "too_many_ids", "at most %zu ids", max);
        return;
    }
    cp_call_ref *refs = calloc(count, sizeof *refs);
    if (!refs) {
        http_oom(o);
        return;
    }
    const char *s = x->val, *end = x->val + x->vlen;
    while (s <= end) {
        const char *comma = memchr(s, ',', (size_t)(end - s));
        const char *e = comma ? comma : end;
        cp_call_ref ref;
        memset(&ref, 0, sizeof ref);
        if (parse_one(s, (size_t)(e - s), "ids", &ref, o)) break;
        add_ref(refs, &n, &ref);
        s = e + 1;
    }
    if (o->status == 200) build_tree(h, refs, n, o);
    free(refs);
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
    if (parse_body(h, body, &refs, &n, o) == 0) build_tree(h, refs, n, o);
    free(refs);
}

/* ---- GET /calls/{id}/trace ---------------------------------------------------------------- */

typedef struct trace_ctx {
    cp_buf *out;
    int status;
    char err[256];
    char reason[64];
} trace_ctx;

static int trace_call(void *ud, const cp_call *c)
{
    trace_ctx *t = ud;
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
