/* import_test.c -- foreign traces to calls (model/cp_import.h), issue 15's acceptance at the
 * model level:
 *   - every file of ../shared/fixtures/foreign imports to exactly its .expected.json: the
 *     identity, `skipped`, and per call (in order) ts_ms, duration_ms, method, thread,
 *     calls, cpu_time, memory_used, wait_time, suspend_ms, error, params and the tree
 *     (methods and ordered children, from the call's blob), field by field;
 *   - fed in any slicing (every 2-way split, random small slices) the calls are the same;
 *   - the big- and little-endian shop traces give calls of the same shape;
 *   - export -> import gives the same calls (methods, times, threads, trees, params), for
 *     TPTP and CBOR imports and for agent-style method texts, in both forms; the export of
 *     an imported .trcbin converted to XML and back is byte-identical;
 *   - bad input stops with an error naming an offset, and only complete calls came out;
 *   - budgets: a call over max_call_bytes is kept without its tree.
 */
#include "testutil.h"

#include "model/cp_import.h"
#include "streams/cp_streams.h"
#include "streams/cp_tptp.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- collected calls ---------------------------------------------------------------------- */

typedef struct got_call {
    cp_call c;
    cp_buf mem;
    json_t *tree;      /* {"method", "children"} from the blob */
    json_t *params;    /* {"name": "value" or [values]} */
} got_call;

typedef struct got {
    got_call *v;
    size_t n, cap;
} got;

static json_t *node_new(const char *m, size_t n)
{
    return json_pack("{s:s%,s:[]}", "method", m, n, "children");
}

typedef struct tree_walk {
    const cp_blob *b;
    json_t *stack[4096];
    size_t depth;
    json_t *root;
    int done;
} tree_walk;

static int tree_rec(void *ud, const cp_trace_rec *r)
{
    tree_walk *w = ud;
    if (w->done) return 1;
    if (r->type == CP_TRACE_ENTER) {
        const cp_blob_word *word = cp_blob_find_word(w->b, r->id);
        assert_non_null(word);
        json_t *n = node_new(word->text, word->len);
        if (w->depth) json_array_append_new(json_object_get(w->stack[w->depth - 1], "children"), n);
        else w->root = n;
        assert_true(w->depth < 4096);
        w->stack[w->depth++] = n;
    } else if (r->type == CP_TRACE_EXIT) {
        assert_true(w->depth > 0);
        if (--w->depth == 0) w->done = 1;
    }
    return 0;
}

/* The blob's tree as {"method","children":[...]}, unmerged. */
static json_t *blob_tree(const uint8_t *p, size_t n)
{
    cp_blob *b = NULL;
    char err[256];
    assert_int_equal(cp_blob_open(p, n, &b, err, sizeof err), CP_OK);
    tree_walk *w = calloc(1, sizeof *w);
    w->b = b;
    cp_dec_sink s = {.ud = w, .on_trace = tree_rec};
    cp_dec *d = cp_dec_new(CP_STREAM_TRACE, NULL, &s, 0);
    int st = cp_dec_feed(d, b->trace, b->trace_len);
    assert_true(st == CP_OK || st == CP_EABORT);
    assert_true(w->done);
    json_t *root = w->root;
    cp_dec_free(d);
    free(w);
    cp_blob_free(b);
    return root;
}

static json_t *params_of(const cp_call *c)
{
    json_error_t e;
    json_t *p = json_loadb(c->params_json, c->params_json_len, 0, &e);
    if (!p) fail_msg("params_json does not parse: %s: %.*s", e.text, (int)c->params_json_len, c->params_json);
    return p;
}

static int on_call(void *ud, const cp_call *c)
{
    got *g = ud;
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 16;
        g->v = realloc(g->v, g->cap * sizeof *g->v);
    }
    got_call *x = &g->v[g->n++];
    memset(x, 0, sizeof *x);
    cp_buf_init(&x->mem);
    assert_int_equal(cp_call_copy(c, &x->c, &x->mem), CP_OK);
    x->tree = c->trace ? blob_tree(c->trace, c->trace_len) : NULL;
    x->params = params_of(c);
    return 0;
}

static void got_free(got *g)
{
    for (size_t i = 0; i < g->n; i++) {
        cp_buf_free(&g->v[i].mem);
        json_decref(g->v[i].tree);
        json_decref(g->v[i].params);
    }
    free(g->v);
    memset(g, 0, sizeof *g);
}

/* Imports bytes fed in slices of the given sizes (0 = whole); returns the final status. */
static int run_import(const uint8_t *p, size_t n, cp_import_format fmt, const size_t *cuts, size_t ncuts, got *g,
                      cp_import_report *rep, const cp_import_opts *base)
{
    cp_import_opts o;
    if (base) o = *base;
    else cp_import_opts_default(&o);
    o.format = fmt;
    o.now_ms = 1700000000000LL;
    cp_import_sink sink = {.ud = g, .on_call = on_call};
    cp_import *im = cp_import_new(&o, &sink);
    assert_non_null(im);
    int st = CP_OK;
    size_t at = 0;
    for (size_t i = 0; i < ncuts && st == CP_OK; i++) {
        size_t k = cuts[i] < n - at ? cuts[i] : n - at;
        st = cp_import_feed(im, p + at, k);
        at += k;
    }
    if (st == CP_OK && at < n) st = cp_import_feed(im, p + at, n - at);
    if (st == CP_OK) st = cp_import_finish(im);
    static char err[512];
    cp_import_get_report(im, rep);
    snprintf(err, sizeof err, "%s", rep->error ? rep->error : "");
    if (rep->error) rep->error = err;
    rep->ns = rep->service = rep->pod = NULL; /* they die with im */
    cp_import_free(im);
    return st;
}

/* ---- comparing with .expected.json --------------------------------------------------------- */

static void check_tree(const json_t *want, const json_t *have, const char *where)
{
    const char *wm = json_string_value(json_object_get(want, "method"));
    const char *hm = json_string_value(json_object_get(have, "method"));
    if (!wm || !hm || strcmp(wm, hm)) fail_msg("%s: tree node method '%s' != expected '%s'", where, hm, wm);
    json_t *wc = json_object_get(want, "children"), *hc = json_object_get(have, "children");
    if (json_array_size(wc) != json_array_size(hc))
        fail_msg("%s: node %s has %zu children, expected %zu", where, wm, json_array_size(hc), json_array_size(wc));
    for (size_t i = 0; i < json_array_size(wc); i++) check_tree(json_array_get(wc, i), json_array_get(hc, i), where);
}

static void check_params(const json_t *want, const got_call *x, const char *fmt, const char *where)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)want, k, v) {
        json_t *h = json_object_get(x->params, k);
        if (!h || json_array_size(h) != 1) fail_msg("%s: param %s missing or not one value", where, k);
        const char *hv = json_string_value(json_array_get(h, 0));
        if (strcmp(hv, json_string_value(v))) fail_msg("%s: param %s = '%s', expected '%s'", where, k, hv, json_string_value(v));
    }
    /* besides the expected ones: only import.format, and call.red on an error call */
    json_object_foreach(x->params, k, v) {
        if (json_object_get(want, k)) continue;
        if (!strcmp(k, "import.format")) {
            assert_string_equal(json_string_value(json_array_get(v, 0)), fmt);
        } else if (!strcmp(k, "call.red")) {
            assert_true(x->c.error);
        } else {
            fail_msg("%s: unexpected param %s", where, k);
        }
    }
    assert_non_null(json_object_get(x->params, "import.format"));
}

/* Calls come out in the order they end; the expected files list them in another order:
 * both sides are compared sorted by start, thread and method. */
static int cmp_got(const void *a, const void *b)
{
    const got_call *x = a, *y = b;
    if (x->c.ts_ms != y->c.ts_ms) return x->c.ts_ms < y->c.ts_ms ? -1 : 1;
    int c = strcmp(x->c.thread, y->c.thread);
    return c ? c : strcmp(x->c.method, y->c.method);
}

static int cmp_want(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    json_int_t tx = json_integer_value(json_object_get(x, "ts_ms")), ty = json_integer_value(json_object_get(y, "ts_ms"));
    if (tx != ty) return tx < ty ? -1 : 1;
    int c = strcmp(json_string_value(json_object_get(x, "thread")), json_string_value(json_object_get(y, "thread")));
    return c ? c
             : strcmp(json_string_value(json_object_get(x, "method")), json_string_value(json_object_get(y, "method")));
}

static void check_expected_calls(const char *file, cp_import_format fmt, const got *g, const cp_import_report *rep)
{
    qsort(g->v, g->n, sizeof *g->v, cmp_got);
    char rel[256];
    snprintf(rel, sizeof rel, "foreign/%s.expected.json", file);
    json_error_t e;
    json_t *doc = json_load_file(fixture_path(rel), 0, &e);
    if (!doc) fail_msg("%s: %s", rel, e.text);
    json_t *all = json_object_get(doc, "calls");
    json_t **want = calloc(json_array_size(all) + 1, sizeof *want);
    for (size_t i = 0; i < json_array_size(all); i++) want[i] = json_array_get(all, i);
    qsort(want, json_array_size(all), sizeof *want, cmp_want);
    json_t *calls = json_array();
    for (size_t i = 0; i < json_array_size(all); i++) json_array_append(calls, want[i]);
    free(want);
    assert_int_equal(json_integer_value(json_object_get(doc, "skipped")), rep->skipped);
    if (json_array_size(calls) != g->n) fail_msg("%s: %zu calls, expected %zu", file, g->n, json_array_size(calls));
    assert_int_equal(rep->calls, g->n);
    json_t *id = json_object_get(doc, "identity");
    const char *fname = cp_import_format_name(fmt);
    for (size_t i = 0; i < g->n; i++) {
        const got_call *x = &g->v[i];
        json_t *w = json_array_get(calls, i);
        char where[128];
        snprintf(where, sizeof where, "%s call %zu", file, i);
#define EQI(field, val)                                                                                          \
    if ((int64_t)json_integer_value(json_object_get(w, field)) != (int64_t)(val))                                \
    fail_msg("%s: %s = %lld, expected %lld", where, field, (long long)(val),                                     \
             (long long)json_integer_value(json_object_get(w, field)))
        EQI("ts_ms", x->c.ts_ms);
        EQI("duration_ms", x->c.duration_ms);
        EQI("calls", x->c.calls);
        EQI("cpu_time", x->c.cpu_time);
        EQI("memory_used", x->c.memory_used);
        EQI("wait_time", x->c.wait_time);
        EQI("suspend_ms", x->c.suspend_ms);
#undef EQI
        if (json_is_true(json_object_get(w, "error")) != !!x->c.error) fail_msg("%s: error flag", where);
        assert_string_equal(x->c.method, json_string_value(json_object_get(w, "method")));
        assert_string_equal(x->c.thread, json_string_value(json_object_get(w, "thread")));
        assert_string_equal(x->c.ns, json_string_value(json_object_get(id, "namespace")));
        assert_string_equal(x->c.service, json_string_value(json_object_get(id, "service")));
        json_t *pod = json_object_get(id, "pod");
        if (json_is_string(pod)) assert_string_equal(x->c.pod, json_string_value(pod));
        else assert_string_equal(x->c.pod, "cbor_1700000000000"); /* the import time */
        check_params(json_object_get(w, "params"), x, fname, where);
        assert_non_null(x->tree);
        check_tree(json_object_get(w, "tree"), x->tree, where);
    }
    json_decref(calls);
    json_decref(doc);
}

static void import_fixture(const char *file, cp_import_format fmt)
{
    char rel[256];
    snprintf(rel, sizeof rel, "foreign/%s", file);
    cp_buf b;
    cp_buf_init(&b);
    load_fixture(rel, &b);
    assert_int_equal(cp_import_detect(b.data, b.len), fmt);
    got g = {0};
    cp_import_report rep;
    int st = run_import(b.data, b.len, fmt, NULL, 0, &g, &rep, NULL);
    if (st != CP_OK) fail_msg("%s: %s", file, rep.error);
    check_expected_calls(file, fmt, &g, &rep);
    assert_int_equal(rep.stopped_at, b.len);
    got_free(&g);
    cp_buf_free(&b);
}

static void test_shop_trcbin(void **state) { import_fixture("shop.trcbin", CP_IMPORT_TRCBIN); }
static void test_shop_trcxml(void **state) { import_fixture("shop.trcxml", CP_IMPORT_TRCXML); }
static void test_shop_be(void **state) { import_fixture("shop-be.trcbin", CP_IMPORT_TRCBIN); }
static void test_shop_extras(void **state) { import_fixture("shop-extras.trcbin", CP_IMPORT_TRCBIN); }
static void test_orders_cbor(void **state) { import_fixture("orders.cbor", CP_IMPORT_CBOR); }

/* ---- the same calls, however the bytes arrive ---------------------------------------------- */

/* Two runs gave the same calls: every field, the params JSON and the tree. */
static void assert_same_calls(const got *a, const got *b, const char *what)
{
    if (a->n != b->n) fail_msg("%s: %zu calls vs %zu", what, a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const cp_call *x = &a->v[i].c, *y = &b->v[i].c;
        if (x->ts_ms != y->ts_ms || x->duration_ms != y->duration_ms || x->calls != y->calls ||
            x->cpu_time != y->cpu_time || x->memory_used != y->memory_used || x->wait_time != y->wait_time ||
            x->suspend_ms != y->suspend_ms || x->error != y->error || x->buffer_offset != y->buffer_offset ||
            x->record_index != y->record_index || strcmp(x->method, y->method) || strcmp(x->thread, y->thread) ||
            strcmp(x->params_json, y->params_json) || x->trace_len != y->trace_len ||
            (x->trace && memcmp(x->trace, y->trace, x->trace_len)))
            fail_msg("%s: call %zu differs", what, i);
    }
}

static void slices(const char *file, cp_import_format fmt)
{
    char rel[256];
    snprintf(rel, sizeof rel, "foreign/%s", file);
    cp_buf b;
    cp_buf_init(&b);
    load_fixture(rel, &b);
    got whole = {0};
    cp_import_report rep;
    assert_int_equal(run_import(b.data, b.len, fmt, NULL, 0, &whole, &rep, NULL), CP_OK);
    for (size_t cut = 1; cut < b.len; cut += 1 + cut / 64) { /* 2-way splits (every byte near the start) */
        got g = {0};
        size_t cuts[1] = {cut};
        assert_int_equal(run_import(b.data, b.len, fmt, cuts, 1, &g, &rep, NULL), CP_OK);
        char what[64];
        snprintf(what, sizeof what, "%s split at %zu", file, cut);
        assert_same_calls(&whole, &g, what);
        got_free(&g);
    }
    uint64_t seed = 42;
    for (int round = 0; round < 20; round++) { /* random small slices */
        size_t cuts[4096], n = 0, sum = 0;
        while (sum < b.len && n < 4096) {
            cuts[n] = 1 + test_rand(&seed) % 97;
            sum += cuts[n++];
        }
        got g = {0};
        assert_int_equal(run_import(b.data, b.len, fmt, cuts, n, &g, &rep, NULL), CP_OK);
        assert_same_calls(&whole, &g, file);
        got_free(&g);
    }
    got_free(&whole);
    cp_buf_free(&b);
}

static void test_slicing(void **state)
{
    slices("shop.trcbin", CP_IMPORT_TRCBIN);
    slices("shop.trcxml", CP_IMPORT_TRCXML);
    slices("shop-extras.trcbin", CP_IMPORT_TRCBIN);
    slices("orders.cbor", CP_IMPORT_CBOR);
}

/* The same messages with every number in the other byte order (a .trcbin walked by the
 * schema: strings stay, numbers are swapped, the header's flag flips). */
static void swap_bytes(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n / 2; i++) {
        uint8_t t = p[i];
        p[i] = p[n - 1 - i];
        p[n - 1 - i] = t;
    }
}

static void to_other_order(const cp_buf *in, cp_buf *out)
{
    cp_buf_reset(out);
    cp_buf_append(out, in->data, in->len);
    uint8_t *p = out->data;
    int le = p[7] == 1;
    p[7] = (uint8_t)!le;
    swap_bytes(p + 8, 4);
    size_t at = 12;
    while (at + 6 <= out->len) {
        uint16_t id = le ? (uint16_t)(p[at] | p[at + 1] << 8) : (uint16_t)(p[at] << 8 | p[at + 1]);
        uint32_t size = le ? (uint32_t)p[at + 2] | (uint32_t)p[at + 3] << 8 | (uint32_t)p[at + 4] << 16 | (uint32_t)p[at + 5] << 24
                           : (uint32_t)p[at + 2] << 24 | (uint32_t)p[at + 3] << 16 | (uint32_t)p[at + 4] << 8 | p[at + 5];
        swap_bytes(p + at, 2);
        swap_bytes(p + at + 2, 4);
        const cp_tptp_def *d = cp_tptp_def_of(id);
        size_t a = at + 6, end = a + size;
        int64_t count = 0;
        for (size_t k = 0; d && k < d->nattrs; k++) {
            cp_tptp_type t = d->attrs[k].type;
            size_t w = t == CP_TPTP_BYTE ? 1 : t == CP_TPTP_SHORT ? 2 : t == CP_TPTP_INT ? 4 : 8;
            if (t == CP_TPTP_STRING) {
                while (p[a]) a++;
                a++;
            } else if (t == CP_TPTP_STRINGS) {
                for (int64_t i = 0; i < count; i++) {
                    while (p[a]) a++;
                    a++;
                }
            } else if (t == CP_TPTP_LONGS) {
                for (int64_t i = 0; i < count; i++, a += 8) swap_bytes(p + a, 8);
            } else {
                if (t == CP_TPTP_INT) count = le ? (int32_t)(p[a] | p[a + 1] << 8 | p[a + 2] << 16 | (uint32_t)p[a + 3] << 24)
                                                 : (int32_t)((uint32_t)p[a] << 24 | p[a + 1] << 16 | p[a + 2] << 8 | p[a + 3]);
                swap_bytes(p + a, w);
                a += w;
            }
        }
        at = end;
    }
    assert_int_equal(at, out->len);
}

/* shop.trcbin (little-endian), the same file in big-endian order, and shop.trcxml are the
 * same messages: the same calls. */
static void test_byte_orders(void **state)
{
    cp_buf le, xml, be;
    cp_buf_init(&le);
    cp_buf_init(&xml);
    cp_buf_init(&be);
    load_fixture("foreign/shop.trcbin", &le);
    load_fixture("foreign/shop.trcxml", &xml);
    to_other_order(&le, &be);
    assert_int_equal(be.data[7], 0);
    got a = {0}, b = {0}, c = {0};
    cp_import_report rep;
    assert_int_equal(run_import(le.data, le.len, CP_IMPORT_TRCBIN, NULL, 0, &a, &rep, NULL), CP_OK);
    assert_int_equal(run_import(xml.data, xml.len, CP_IMPORT_TRCXML, NULL, 0, &b, &rep, NULL), CP_OK);
    assert_int_equal(run_import(be.data, be.len, CP_IMPORT_TRCBIN, NULL, 0, &c, &rep, NULL), CP_OK);
    assert_int_equal(a.n, b.n);
    for (size_t i = 0; i < a.n; i++) {
        assert_int_equal(a.v[i].c.ts_ms, b.v[i].c.ts_ms);
        assert_int_equal(a.v[i].c.duration_ms, b.v[i].c.duration_ms);
        assert_string_equal(a.v[i].c.method, b.v[i].c.method);
        check_tree(a.v[i].tree, b.v[i].tree, "bin vs xml");
    }
    assert_same_calls(&a, &c, "little- vs big-endian");
    got_free(&a);
    got_free(&b);
    got_free(&c);
    cp_buf_free(&le);
    cp_buf_free(&xml);
    cp_buf_free(&be);
}

/* ---- export -> import ----------------------------------------------------------------------- */

/* Exports every call of g (blob opened as stored) into one file of the form. */
static void export_all(const got *g, int xml, cp_buf *out)
{
    cp_export *e = cp_export_new(xml);
    assert_non_null(e);
    char err[256];
    for (size_t i = 0; i < g->n; i++) {
        cp_blob *b = NULL;
        if (g->v[i].c.trace) assert_int_equal(cp_blob_open(g->v[i].c.trace, g->v[i].c.trace_len, &b, err, sizeof err), CP_OK);
        int st = cp_export_add(e, &g->v[i].c, b, out, err, sizeof err);
        if (st != CP_OK) fail_msg("export of call %zu: %s", i, err);
        cp_blob_free(b);
    }
    assert_int_equal(cp_export_end(e, out, err, sizeof err), CP_OK);
    cp_export_free(e);
}

static size_t tree_nodes(const json_t *n)
{
    size_t k = 1;
    json_t *c = json_object_get(n, "children");
    for (size_t i = 0; i < json_array_size(c); i++) k += tree_nodes(json_array_get(c, i));
    return k;
}

/* The re-import has what the original had: method, time, duration, thread, tree, params
 * (import.format aside: it names the last import's form), the list's numbers. */
static void assert_round_trip(const got *a, const got *b, const char *what)
{
    if (a->n != b->n) fail_msg("%s: %zu calls, re-imported %zu", what, a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        const got_call *x = &a->v[i], *y = &b->v[i];
        char where[96];
        snprintf(where, sizeof where, "%s call %zu", what, i);
        if (x->c.ts_ms != y->c.ts_ms || x->c.duration_ms != y->c.duration_ms)
            fail_msg("%s: time %lld+%d vs %lld+%d", where, (long long)x->c.ts_ms, x->c.duration_ms,
                     (long long)y->c.ts_ms, y->c.duration_ms);
        assert_string_equal(x->c.method, y->c.method);
        assert_string_equal(x->c.thread, y->c.thread);
        /* a CBOR epilog counts calls the tree may not hold; a TPTP file has only its entries */
        if (x->c.calls == (int32_t)tree_nodes(x->tree)) assert_int_equal(x->c.calls, y->c.calls);
        assert_int_equal(y->c.calls, tree_nodes(y->tree));
        assert_int_equal(x->c.cpu_time, y->c.cpu_time);
        assert_int_equal(x->c.memory_used, y->c.memory_used);
        assert_int_equal(x->c.wait_time, y->c.wait_time);
        assert_int_equal(x->c.error, y->c.error);
        check_tree(x->tree, y->tree, where);
        json_t *px = json_deep_copy(x->params), *py = json_deep_copy(y->params);
        json_object_del(px, "import.format");
        json_object_del(py, "import.format");
        json_object_del(px, "import.incomplete");
        json_object_del(py, "import.incomplete");
        if (!json_equal(px, py)) {
            char *s1 = json_dumps(px, JSON_SORT_KEYS), *s2 = json_dumps(py, JSON_SORT_KEYS);
            fail_msg("%s: params %s vs %s", where, s1, s2);
        }
        json_decref(px);
        json_decref(py);
    }
}

static void round_trip(const char *file, cp_import_format fmt)
{
    char rel[256];
    snprintf(rel, sizeof rel, "foreign/%s", file);
    cp_buf b;
    cp_buf_init(&b);
    load_fixture(rel, &b);
    got a = {0};
    cp_import_report rep;
    assert_int_equal(run_import(b.data, b.len, fmt, NULL, 0, &a, &rep, NULL), CP_OK);
    for (int xml = 0; xml < 2; xml++) {
        cp_buf out;
        cp_buf_init(&out);
        export_all(&a, xml, &out);
        got g = {0};
        cp_import_opts o;
        cp_import_opts_default(&o);
        o.ns = a.v[0].c.ns; /* the namespace is the import request's, not the file's */
        int st = run_import(out.data, out.len, xml ? CP_IMPORT_TRCXML : CP_IMPORT_TRCBIN, NULL, 0, &g, &rep, &o);
        if (st != CP_OK) fail_msg("%s re-import: %s", file, rep.error);
        char what[96];
        snprintf(what, sizeof what, "%s -> %s -> import", file, xml ? "trcxml" : "trcbin");
        assert_round_trip(&a, &g, what);
        /* the identity: a pod named host_ms comes back as the same pod */
        if (fmt != CP_IMPORT_CBOR) {
            assert_string_equal(a.v[0].c.pod, g.v[0].c.pod);
            assert_string_equal(a.v[0].c.service, g.v[0].c.service);
        }
        got_free(&g);
        cp_buf_free(&out);
    }
    got_free(&a);
    cp_buf_free(&b);
}

static void test_export_round_trip(void **state)
{
    round_trip("shop.trcbin", CP_IMPORT_TRCBIN);
    round_trip("shop-extras.trcbin", CP_IMPORT_TRCBIN);
    round_trip("shop-be.trcbin", CP_IMPORT_TRCBIN);
    round_trip("orders.cbor", CP_IMPORT_CBOR);
}

/* An export written as .trcbin, converted to .trcxml and back, is the same bytes. */
typedef struct enc_ctx {
    cp_tptp_enc enc;
    cp_buf *out;
} enc_ctx;

static int re_encode(void *ud, const cp_tptp_msg *m)
{
    enc_ctx *x = ud;
    assert_int_equal(cp_tptp_enc_msg(&x->enc, m, x->out), CP_OK);
    return 0;
}

static void convert(const cp_buf *in, cp_tptp_form from, cp_buf *out)
{
    enc_ctx x;
    cp_tptp_enc_init(&x.enc, from == CP_TPTP_BIN ? CP_TPTP_XML : CP_TPTP_BIN);
    x.out = out;
    assert_int_equal(cp_tptp_enc_begin(&x.enc, out), CP_OK);
    cp_tptp_sink s = {.ud = &x, .on_msg = re_encode};
    cp_tptp_dec *d = cp_tptp_dec_new(from, NULL, &s);
    assert_int_equal(cp_tptp_dec_feed(d, in->data, in->len), CP_OK);
    assert_int_equal(cp_tptp_dec_finish(d), CP_OK);
    cp_tptp_dec_free(d);
    assert_int_equal(cp_tptp_enc_end(&x.enc, out), CP_OK);
}

static void test_export_convert_identity(void **state)
{
    cp_buf b;
    cp_buf_init(&b);
    load_fixture("foreign/orders.cbor", &b);
    got a = {0};
    cp_import_report rep;
    assert_int_equal(run_import(b.data, b.len, CP_IMPORT_CBOR, NULL, 0, &a, &rep, NULL), CP_OK);
    cp_buf bin, xml, back;
    cp_buf_init(&bin);
    cp_buf_init(&xml);
    cp_buf_init(&back);
    export_all(&a, 0, &bin);
    convert(&bin, CP_TPTP_BIN, &xml);
    convert(&xml, CP_TPTP_XML, &back);
    assert_int_equal(bin.len, back.len);
    assert_memory_equal(bin.data, back.data, bin.len);
    /* and the XML export is what the converter makes of the binary one */
    cp_buf xml2;
    cp_buf_init(&xml2);
    export_all(&a, 1, &xml2);
    assert_int_equal(xml.len, xml2.len);
    assert_memory_equal(xml.data, xml2.data, xml.len);
    got_free(&a);
    cp_buf_free(&b);
    cp_buf_free(&bin);
    cp_buf_free(&xml);
    cp_buf_free(&xml2);
    cp_buf_free(&back);
}

/* Calls as the agent path stores them: method texts with return types and jars, params
 * with several values, control characters and XML specials, an error. */
static void test_export_agent_texts(void **state)
{
    static const char *methods[] = {
        "void com.netcracker.cdt.uiservice.UiServiceApplication.main(java.lang.String[]) (UiServiceApplication.java:58) "
        "[escui.jar!/BOOT-INF/classes]",
        "#17",
        "java.lang.Thread.run()",
        "weird (source)",
        "a.B.c(I)V (B.java:0)",
        ".x()",
    };
    got a = {0};
    cp_import_opts o;
    cp_import_opts_default(&o);
    o.ns = "ns";
    for (size_t i = 0; i < CP_ARRAY_LEN(methods); i++) {
        /* build a blob: root with one child and a TAG */
        cp_blob_builder bb;
        cp_blob_builder_init(&bb);
        uint8_t t[8];
        cp_put_be64(t, 1700000000000LL + (int64_t)i * 1000);
        cp_buf_append(&bb.trace, t, 8);
        cp_put_be64(t, 7);
        cp_buf_append(&bb.trace, t, 8);
        cp_put_be64(t, 1700000000000LL);
        cp_buf_append(&bb.trace, t, 8);
        cp_buf_putc(&bb.trace, 0x00); /* ENTER delta 0 */
        cp_buf_put_varint(&bb.trace, 1);
        cp_buf_putc(&bb.trace, 0x0C); /* ENTER delta 3 */
        cp_buf_put_varint(&bb.trace, 2);
        cp_buf_putc(&bb.trace, 0x02); /* TAG */
        cp_buf_put_varint(&bb.trace, 3);
        cp_buf_putc(&bb.trace, 0);
        cp_buf_put_varstring(&bb.trace, "a<b>&\"c\"\n\t|x", 13);
        cp_buf_putc(&bb.trace, 0x09); /* EXIT delta 2 */
        cp_buf_putc(&bb.trace, 0x15); /* EXIT delta 5 */
        cp_buf_putc(&bb.trace, 0x03);
        cp_blob_add_word(&bb, 1, methods[i], strlen(methods[i]));
        cp_blob_add_word(&bb, 2, "java.lang.Object.wait() (Object.java:1)", 39);
        cp_blob_add_word(&bb, 3, "sql", 3);
        cp_buf blob;
        cp_buf_init(&blob);
        assert_int_equal(cp_blob_build(&bb, &blob), CP_OK);
        static const char params[] = "{\"call.red\":[\"1\"],\"web.url\":[\"/a?x=1&y=<2>\",\"two\"]}";
        cp_call c = {.ts_ms = 1700000000000LL + (int64_t)i * 1000, .duration_ms = 10, .calls = 2, .cpu_time = 4,
                     .memory_used = 4096, .wait_time = 3, .ns = "ns", .ns_len = 2, .service = "svc",
                     .service_len = 3, .pod = "pod-a_1699999999000", .pod_len = 19, .restart_ms = 1699999999000LL,
                     .method = methods[i], .method_len = strlen(methods[i]), .thread = "main", .thread_len = 4,
                     .params_json = params, .params_json_len = strlen(params), .error = 1,
                     .trace = blob.data, .trace_len = blob.len};
        on_call(&a, &c);
        cp_buf_free(&blob);
        cp_blob_builder_free(&bb);
    }
    for (int xml = 0; xml < 2; xml++) {
        cp_buf out;
        cp_buf_init(&out);
        export_all(&a, xml, &out);
        got g = {0};
        cp_import_report rep;
        int st = run_import(out.data, out.len, xml ? CP_IMPORT_TRCXML : CP_IMPORT_TRCBIN, NULL, 0, &g, &rep, &o);
        if (st != CP_OK) fail_msg("re-import: %s", rep.error);
        assert_round_trip(&a, &g, xml ? "agent texts (xml)" : "agent texts (bin)");
        assert_string_equal(g.v[0].c.pod, "pod-a_1699999999000");
        /* the node's TAG came back on the child */
        json_t *child = json_array_get(json_object_get(g.v[0].tree, "children"), 0);
        assert_non_null(child);
        got_free(&g);
        cp_buf_free(&out);
    }
    got_free(&a);
}

/* ---- bad input --------------------------------------------------------------------------- */

/* The input fails with an error mentioning an offset; the calls handed over are exactly
 * the ones complete before the bad byte. */
static void expect_failure(const uint8_t *p, size_t n, cp_import_format fmt, const char *want, size_t max_calls)
{
    got g = {0};
    cp_import_report rep;
    int st = run_import(p, n, fmt, NULL, 0, &g, &rep, NULL);
    if (st == CP_OK) fail_msg("expected a failure (%s)", want);
    assert_non_null(rep.error);
    if (!strstr(rep.error, "offset")) fail_msg("error without an offset: %s", rep.error);
    if (want && !strstr(rep.error, want)) fail_msg("error '%s' does not say '%s'", rep.error, want);
    assert_true(g.n <= max_calls);
    assert_true(rep.stopped_at <= n);
    got_free(&g);
}

static void test_bad_input(void **state)
{
    cp_buf b;
    cp_buf_init(&b);
    load_fixture("foreign/shop.trcbin", &b);
    /* truncated header, wrong magic, major version 2 */
    expect_failure(b.data, 7, CP_IMPORT_TRCBIN, NULL, 0);
    uint8_t *c = malloc(b.len);
    memcpy(c, b.data, b.len);
    c[0] = 'X';
    expect_failure(c, b.len, CP_IMPORT_TRCBIN, NULL, 0);
    memcpy(c, b.data, b.len);
    c[4] = 2;
    expect_failure(c, b.len, CP_IMPORT_TRCBIN, "version", 0);
    /* cut in the middle: the calls complete before the cut came out, nothing else */
    got whole = {0};
    cp_import_report rep;
    assert_int_equal(run_import(b.data, b.len, CP_IMPORT_TRCBIN, NULL, 0, &whole, &rep, NULL), CP_OK);
    got half = {0};
    assert_true(run_import(b.data, b.len * 2 / 3, CP_IMPORT_TRCBIN, NULL, 0, &half, &rep, NULL) != CP_OK);
    assert_true(half.n > 0 && half.n < whole.n);
    for (size_t i = 0; i < half.n; i++) { /* a prefix of the same calls */
        assert_int_equal(half.v[i].c.ts_ms, whole.v[i].c.ts_ms);
        assert_int_equal(half.v[i].c.duration_ms, whole.v[i].c.duration_ms);
    }
    got_free(&half);
    got_free(&whole);
    free(c);
    cp_buf_free(&b);
    /* CBOR: a length of 2^63 and deep nesting */
    uint8_t huge[] = {0xd9, 0x00, 0x0b, 0x5b, 0x80, 0, 0, 0, 0, 0, 0, 0};
    expect_failure(huge, sizeof huge, CP_IMPORT_CBOR, NULL, 0);
    size_t depth = 100000;
    uint8_t *deep = malloc(depth + 3);
    deep[0] = 0xcb;
    memset(deep + 1, 0x81, depth);
    deep[depth + 1] = 0x00;
    expect_failure(deep, depth + 2, CP_IMPORT_CBOR, NULL, 0);
    free(deep);
    /* random bytes in every format: an error, no crash, no call */
    uint64_t seed = 7;
    uint8_t rnd[4096];
    for (size_t i = 0; i < sizeof rnd; i++) rnd[i] = (uint8_t)test_rand(&seed);
    memcpy(rnd, "0TBF\x01\x00\x01\x01\x0c\x00\x00\x00", 12);
    expect_failure(rnd, sizeof rnd, CP_IMPORT_TRCBIN, NULL, 0);
    rnd[0] = '<';
    expect_failure(rnd, sizeof rnd, CP_IMPORT_TRCXML, NULL, 0);
    rnd[0] = 0xcb;
    expect_failure(rnd, sizeof rnd, CP_IMPORT_CBOR, NULL, 0);
}

/* A call over the per-call budget is kept, without its tree; the others keep theirs. */
static void test_budget(void **state)
{
    cp_buf b;
    cp_buf_init(&b);
    load_fixture("foreign/shop.trcbin", &b);
    cp_import_opts o;
    cp_import_opts_default(&o);
    o.max_call_bytes = 40; /* the 24-byte header and a few events */
    got g = {0};
    cp_import_report rep;
    assert_int_equal(run_import(b.data, b.len, CP_IMPORT_TRCBIN, NULL, 0, &g, &rep, &o), CP_OK);
    assert_int_equal(g.n, 12);
    size_t without = 0;
    for (size_t i = 0; i < g.n; i++)
        if (!g.v[i].c.trace) {
            without++;
            assert_string_equal(g.v[i].c.trace_reason, CP_TRACE_TOO_LARGE);
            assert_true(g.v[i].c.calls > 1);
        }
    assert_true(without > 0 && without < g.n);
    assert_int_equal(rep.too_large, without);
    got_free(&g);
    cp_buf_free(&b);
}

static void test_detect(void **state)
{
    assert_int_equal(cp_import_detect((const uint8_t *)"0TBF", 4), CP_IMPORT_TRCBIN);
    assert_int_equal(cp_import_detect((const uint8_t *)"\xef\xbb\xbf  <?xml", 10), CP_IMPORT_TRCXML);
    assert_int_equal(cp_import_detect((const uint8_t *)"\xcb\x85", 2), CP_IMPORT_CBOR);
    assert_int_equal(cp_import_detect((const uint8_t *)"hello", 5), CP_IMPORT_UNKNOWN);
    assert_int_equal(cp_import_format_parse("cbor"), CP_IMPORT_CBOR);
    assert_int_equal(cp_import_format_parse("zip"), CP_IMPORT_UNKNOWN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shop_trcbin),        cmocka_unit_test(test_shop_trcxml),
        cmocka_unit_test(test_shop_be),            cmocka_unit_test(test_shop_extras),
        cmocka_unit_test(test_orders_cbor),        cmocka_unit_test(test_slicing),
        cmocka_unit_test(test_byte_orders),        cmocka_unit_test(test_export_round_trip),
        cmocka_unit_test(test_export_convert_identity), cmocka_unit_test(test_export_agent_texts),
        cmocka_unit_test(test_bad_input),          cmocka_unit_test(test_budget),
        cmocka_unit_test(test_detect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
