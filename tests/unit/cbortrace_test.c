/* cbortrace_test.c -- the CBOR raw trace decoder (cp_cbortrace.h, spec foreign-formats.md
 * §3, §4): the orders.cbor fixture turned into calls from the events alone and compared
 * field by field with its expected JSON, slicing invariance, hand-built records for every
 * shape the spec allows, and bad input each failing with an error that names an offset. */
#include "testutil.h"

#include "streams/cp_cbortrace.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ORDERS "foreign/orders.cbor"

/* ---- CBOR encoder for hand-built inputs ---------------------------------------------------- */

static void e_head(cp_buf *b, unsigned major, uint64_t v)
{
    uint8_t m = (uint8_t)(major << 5), t[9];
    size_t n;
    if (v < 24) t[0] = m | (uint8_t)v, n = 1;
    else if (v <= 0xff) t[0] = m | 24, t[1] = (uint8_t)v, n = 2;
    else if (v <= 0xffff) t[0] = m | 25, t[1] = (uint8_t)(v >> 8), t[2] = (uint8_t)v, n = 3;
    else if (v <= 0xffffffffu) t[0] = m | 26, cp_put_be32(t + 1, (uint32_t)v), n = 5;
    else t[0] = m | 27, cp_put_be64(t + 1, v), n = 9;
    cp_buf_append(b, t, n);
}
static void e_byte(cp_buf *b, uint8_t c) { cp_buf_putc(b, c); }
static void e_uint(cp_buf *b, uint64_t v) { e_head(b, 0, v); }
static void e_int(cp_buf *b, int64_t v) { v >= 0 ? e_head(b, 0, (uint64_t)v) : e_head(b, 1, (uint64_t)(-1 - v)); }
static void e_text(cp_buf *b, const char *s) { e_head(b, 3, strlen(s)), cp_buf_puts(b, s); }
static void e_bytes(cp_buf *b, const void *p, size_t n) { e_head(b, 2, n), cp_buf_append(b, p, n); }
static void e_tag(cp_buf *b, uint64_t t) { e_head(b, 6, t); }
static void e_arr(cp_buf *b, uint64_t n) { e_head(b, 4, n); }
static void e_map(cp_buf *b, uint64_t n) { e_head(b, 5, n); }
static void e_ref(cp_buf *b, uint64_t id) { e_tag(b, 6), e_uint(b, id); }
static void e_null(cp_buf *b) { e_byte(b, 0xf6); }
/* indefinite starts (0x5f bytes, 0x7f text, 0x9f array, 0xbf map) and the break */
static void e_indef(cp_buf *b, unsigned major) { e_byte(b, (uint8_t)(major << 5 | 31)); }
static void e_break(cp_buf *b) { e_byte(b, 0xff); }

static void e_word(uint8_t *w, int big, uint64_t v)
{
    for (int i = 0; i < 8; i++) w[big ? i : 7 - i] = (uint8_t)(v >> (56 - 8 * i));
}
static void e_prolog(cp_buf *b, int big, uint64_t method, uint64_t tick)
{
    uint8_t w[8];
    e_word(w, big, method << 40 | tick);
    e_bytes(b, w, 8);
}
static void e_epilog(cp_buf *b, int big, uint64_t calls, uint64_t tick)
{
    uint8_t w[8];
    e_word(w, big, calls << 40 | tick);
    e_bytes(b, w, 8);
}
static void e_epilog16(cp_buf *b, int big, uint64_t long_calls, uint64_t tick)
{
    uint8_t w[16];
    e_word(w, big, tick);
    e_word(w + 8, big, long_calls);
    e_bytes(b, w, 16);
}
static void e_strdef(cp_buf *b, uint64_t id, const char *text)
{
    e_tag(b, 1), e_arr(b, 3), e_uint(b, id), e_text(b, text), e_uint(b, 0);
}
static void e_methdef(cp_buf *b, uint64_t id, uint64_t cls, uint64_t name, uint64_t sig)
{
    e_tag(b, 2), e_arr(b, 4), e_uint(b, id), e_uint(b, cls), e_uint(b, name), e_uint(b, sig);
}
static void e_begin(cp_buf *b, int64_t clock, uint64_t id) { e_tag(b, 33), e_arr(b, 2), e_int(b, clock), e_uint(b, id); }

/* The symbols the hand-built records use. */
static void e_symbols(cp_buf *b)
{
    e_strdef(b, 1, "com.acme.A");
    e_strdef(b, 2, "run");
    e_strdef(b, 3, "()V");
    e_strdef(b, 4, "sub");
    e_strdef(b, 5, "thread");
    e_strdef(b, 6, "main");
    e_strdef(b, 7, "java.lang.RuntimeException");
    e_strdef(b, 8, "A.java");
    e_methdef(b, 100, 1, 2, 3); /* com.acme.A.run()V */
    e_methdef(b, 101, 1, 4, 3); /* com.acme.A.sub()V */
}

/* A record using every element kind, tag 10 or 11, definite or indefinite everywhere the
 * format allows (arrays, maps, text and byte strings). The events are the same. */
static void e_sample(cp_buf *b, int big, int indef)
{
    e_tag(b, big ? 10 : 11);
    indef ? e_indef(b, 4) : e_arr(b, 7);
    if (indef) { /* the prolog in two chunks */
        uint8_t w[8];
        e_word(w, big, (uint64_t)100 << 40 | 1000);
        e_indef(b, 2), e_bytes(b, w, 3), e_bytes(b, w + 3, 5), e_break(b);
    } else {
        e_prolog(b, big, 100, 1000);
    }
    e_tag(b, 33);
    indef ? e_indef(b, 4) : e_arr(b, 2);
    e_int(b, 1700000000000), e_uint(b, 42);
    if (indef) e_break(b);
    e_tag(b, 12);
    indef ? e_indef(b, 5) : e_map(b, 3);
    e_ref(b, 5), e_ref(b, 6);
    if (indef) e_indef(b, 3), e_text(b, "k"), e_break(b), e_indef(b, 3), e_text(b, "v"), e_text(b, "a"), e_text(b, "l"), e_break(b);
    else e_text(b, "k"), e_text(b, "val");
    e_text(b, "n"), e_int(b, -5);
    if (indef) e_break(b);
    e_tag(b, big ? 11 : 10); /* the sub-record in the other byte order: each record has its own */
    indef ? e_indef(b, 4) : e_arr(b, 3);
    e_prolog(b, !big, 101, 1010);
    e_tag(b, 12), e_map(b, 1), e_text(b, "x"), e_uint(b, 1);
    e_epilog(b, !big, 1, 1020);
    if (indef) e_break(b);
    e_tag(b, 34);
    indef ? e_indef(b, 4) : e_arr(b, 5);
    e_uint(b, 7), e_ref(b, 7), e_text(b, "boom");
    indef ? e_indef(b, 4) : e_arr(b, 1);
    e_arr(b, 4), e_ref(b, 1), e_ref(b, 2), e_ref(b, 8), e_uint(b, 12);
    if (indef) e_break(b);
    e_null(b);
    if (indef) e_break(b);
    e_tag(b, 12), e_map(b, 1), e_text(b, "late"), e_byte(b, 0xf5);
    e_epilog(b, big, 3, 1100);
    if (indef) e_break(b);
}

/* ---- decoding and the event log ------------------------------------------------------------ */

enum { LOG_OFFSETS = 1, LOG_BIG = 2, LOG_ALL = 3 };

typedef struct result {
    int feed_status, finish_status;
    char err[256];
    uint64_t offset, items, records, skipped, methods, events;
    cp_buf log;                 /* one line per event */
    int flags;
    int stop_at;                /* 1-based event whose callback stops the decoder; 0 never */
} result;

static void log_text(cp_buf *b, const char *name, cp_cbt_text t)
{
    cp_buf_printf(b, " %s=", name);
    cp_json_str(b, t.p, t.len);
}

static int on_event(void *ud, const cp_cbt_event *e)
{
    result *r = ud;
    cp_buf *b = &r->log;
    static const char *const names[] = {"BEGIN", "ATTR", "EXCEPTION", "END", "SKIPPED"};
    r->events++;
    cp_buf_printf(b, "%s d=%" PRIu32, names[e->type], e->depth);
    if (r->flags & LOG_OFFSETS) cp_buf_printf(b, " @%" PRIu64, e->offset);
    if ((r->flags & LOG_BIG) && (e->type == CP_CBT_BEGIN || e->type == CP_CBT_END))
        cp_buf_printf(b, " be=%d", e->big_endian);
    switch (e->type) {
    case CP_CBT_BEGIN:
        cp_buf_printf(b, " mid=%" PRIu64 " start=%" PRIu64, e->method_id, e->start_tick);
        log_text(b, "method", e->method);
        if (e->has_begin) {
            cp_buf_printf(b, " clock=%" PRId64, e->clock_ms);
            log_text(b, "id", e->trace_id);
        }
        break;
    case CP_CBT_ATTR:
        log_text(b, "k", e->key);
        log_text(b, "v", e->value);
        break;
    case CP_CBT_EXCEPTION:
    case CP_CBT_SKIPPED:
        log_text(b, "text", e->text);
        break;
    case CP_CBT_END:
        cp_buf_printf(b, " end=%" PRIu64 " calls=%" PRIu64, e->end_tick, e->calls);
        break;
    }
    cp_buf_putc(b, '\n');
    return r->stop_at && r->events == (uint64_t)r->stop_at;
}

/* Decodes p[0..n) fed in pieces ending at cuts[0..ncuts) (then the rest); the sink stops
 * at event stop_at (0: never). */
static void decode_stop(const uint8_t *p, size_t n, const cp_cbt_limits *lim, const size_t *cuts, size_t ncuts,
                        int flags, int stop_at, result *r)
{
    memset(r, 0, sizeof *r);
    r->flags = flags;
    r->stop_at = stop_at;
    cp_buf_init(&r->log);
    cp_cbt_sink sink = {r, on_event};
    cp_cbt_dec *d = cp_cbt_dec_new(lim, &sink);
    assert_non_null(d);
    size_t pos = 0;
    for (size_t i = 0; i <= ncuts; i++) {
        size_t end = i < ncuts ? cuts[i] : n;
        if (end < pos) end = pos;
        int st = cp_cbt_dec_feed(d, p + pos, end - pos);
        if (st != CP_OK && r->feed_status == CP_OK) r->feed_status = st;
        if (r->feed_status != CP_OK) assert_int_equal(st, r->feed_status); /* sticky */
        pos = end;
    }
    r->finish_status = cp_cbt_dec_finish(d);
    assert_int_equal(cp_cbt_dec_finish(d), r->finish_status);
    snprintf(r->err, sizeof r->err, "%s", cp_cbt_dec_error(d));
    r->offset = cp_cbt_dec_offset(d);
    r->items = cp_cbt_dec_items(d);
    r->records = cp_cbt_dec_records(d);
    r->skipped = cp_cbt_dec_skipped(d);
    r->methods = cp_cbt_dec_methods(d);
    if (r->finish_status < 0) assert_true(strstr(r->err, " at offset ") != NULL);
    else assert_int_equal(r->err[0], 0);
    cp_buf_putc(&r->log, 0);
    cp_cbt_dec_free(d);
}

static void decode_cuts(const uint8_t *p, size_t n, const cp_cbt_limits *lim, const size_t *cuts, size_t ncuts,
                        int flags, result *r)
{
    decode_stop(p, n, lim, cuts, ncuts, flags, 0, r);
}

static void decode(const uint8_t *p, size_t n, const cp_cbt_limits *lim, int flags, result *r)
{
    decode_cuts(p, n, lim, NULL, 0, flags, r);
}

static void assert_same(const result *a, const result *b, const char *how)
{
    if (strcmp((const char *)a->log.data, (const char *)b->log.data) != 0)
        fail_msg("%s: events differ:\n--- whole\n%s--- cut\n%s", how, (const char *)a->log.data,
                 (const char *)b->log.data);
    assert_int_equal(a->feed_status, b->feed_status);
    assert_int_equal(a->finish_status, b->finish_status);
    assert_string_equal(a->err, b->err);
    assert_int_equal(a->offset, b->offset);
    assert_int_equal(a->items, b->items);
    assert_int_equal(a->records, b->records);
    assert_int_equal(a->skipped, b->skipped);
    assert_int_equal(a->methods, b->methods);
}

static void result_free(result *r) { cp_buf_free(&r->log); }

/* Whole vs every 2-way split (short inputs), random small slices, byte by byte. */
static void check_slicings(const uint8_t *p, size_t n, const cp_cbt_limits *lim)
{
    result whole, cut;
    decode(p, n, lim, LOG_ALL, &whole);
    if (n <= 8192) {
        for (size_t i = 0; i <= n; i++) {
            decode_cuts(p, n, lim, &i, 1, LOG_ALL, &cut);
            char how[64];
            snprintf(how, sizeof how, "split at %zu", i);
            assert_same(&whole, &cut, how);
            result_free(&cut);
        }
    }
    size_t *cuts = malloc((n + 1) * sizeof *cuts);
    uint64_t rng = 0x1234567 + n;
    for (int round = 0; round < 20; round++) {
        size_t k = 0, pos = 0;
        while (pos < n) {
            uint64_t x = test_rand(&rng);
            pos += round == 0 ? 1 : (size_t)(x % (round < 10 ? 8 : 300)); /* round 0: byte by byte; 0-byte feeds too */
            if (pos > n) pos = n;
            cuts[k++] = pos;
        }
        decode_cuts(p, n, lim, cuts, k, LOG_ALL, &cut);
        assert_same(&whole, &cut, round == 0 ? "byte by byte" : "random slices");
        result_free(&cut);
    }
    free(cuts);
    result_free(&whole);
}

/* ---- orders.cbor: known answer ------------------------------------------------------------- */

typedef struct node {
    char *method;
    struct node **kids;
    size_t nk;
} node;

typedef struct kv {
    char *k, *v;
} kv;

typedef struct tcall {
    int64_t clock;
    uint64_t start, end, calls;
    char *method;
    kv *params;
    size_t np;
    int error;
    node *tree;
} tcall;

/* What another engineer's assembler would do with the events, the minimum of it. */
typedef struct calls_sink {
    tcall *c;
    size_t nc;
    node *open[64];
    size_t depth;
    uint64_t skipped;
} calls_sink;

static char *dup_text(cp_cbt_text t)
{
    char *s = malloc(t.len + 1);
    memcpy(s, t.p, t.len);
    s[t.len] = 0;
    return s;
}

static int calls_on_event(void *ud, const cp_cbt_event *e)
{
    calls_sink *s = ud;
    tcall *c = s->nc ? &s->c[s->nc - 1] : NULL;
    switch (e->type) {
    case CP_CBT_BEGIN: {
        node *n = calloc(1, sizeof *n);
        n->method = dup_text(e->method);
        if (e->depth == 0) {
            assert_int_equal(s->depth, 0);
            assert_true(e->has_begin);
            s->c = realloc(s->c, (s->nc + 1) * sizeof *s->c);
            c = &s->c[s->nc++];
            memset(c, 0, sizeof *c);
            c->clock = e->clock_ms;
            c->start = e->start_tick;
            c->method = dup_text(e->method);
            c->tree = n;
        } else {
            assert_int_equal(s->depth, e->depth);
            node *p = s->open[s->depth - 1];
            p->kids = realloc(p->kids, (p->nk + 1) * sizeof *p->kids);
            p->kids[p->nk++] = n;
        }
        assert_true(s->depth < 64);
        s->open[s->depth++] = n;
        break;
    }
    case CP_CBT_ATTR:
        assert_int_equal(e->depth + 1, s->depth);
        if (e->depth == 0) {
            c->params = realloc(c->params, (c->np + 1) * sizeof *c->params);
            c->params[c->np].k = dup_text(e->key);
            c->params[c->np++].v = dup_text(e->value);
        }
        break;
    case CP_CBT_EXCEPTION:
        assert_int_equal(e->depth + 1, s->depth);
        if (e->depth == 0) {
            c->params = realloc(c->params, (c->np + 1) * sizeof *c->params);
            c->params[c->np].k = strdup("exception");
            c->params[c->np++].v = dup_text(e->text);
            c->error = 1;
        }
        break;
    case CP_CBT_END:
        assert_int_equal(e->depth + 1, s->depth);
        s->depth--;
        if (e->depth == 0) {
            c->end = e->end_tick;
            c->calls = e->calls;
        }
        break;
    case CP_CBT_SKIPPED:
        assert_int_equal(s->depth, 0);
        s->skipped++;
        break;
    }
    return 0;
}

static void node_free(node *n)
{
    for (size_t i = 0; i < n->nk; i++) node_free(n->kids[i]);
    free(n->kids);
    free(n->method);
    free(n);
}

static void assert_tree(const node *n, json_t *x, const char *where)
{
    assert_string_equal(n->method, json_string_value(json_object_get(x, "method")));
    json_t *kids = json_object_get(x, "children");
    if (json_array_size(kids) != n->nk) fail_msg("%s: %zu children, expected %zu", where, n->nk, json_array_size(kids));
    for (size_t i = 0; i < n->nk; i++) assert_tree(n->kids[i], json_array_get(kids, i), where);
}

/* spec §3.2: every figure in ticks first, then ms rounded down (a tick is 2^16 ns) */
static int64_t ticks_ms(uint64_t ticks) { return (int64_t)(ticks * 65536 / 1000000); }

static void test_orders_fixture(void **state)
{
    (void)state;
    cp_buf data;
    load_fixture(ORDERS, &data);
    calls_sink s;
    memset(&s, 0, sizeof s);
    cp_cbt_sink sink = {&s, calls_on_event};
    cp_cbt_dec *d = cp_cbt_dec_new(NULL, &sink);
    assert_non_null(d);
    if (cp_cbt_dec_feed(d, data.data, data.len) != CP_OK) fail_msg("%s", cp_cbt_dec_error(d));
    assert_int_equal(cp_cbt_dec_finish(d), CP_OK);
    assert_int_equal(cp_cbt_dec_offset(d), data.len);
    assert_int_equal(s.depth, 0);
    assert_int_equal(cp_cbt_dec_methods(d), 12);
    assert_int_equal(cp_cbt_dec_skipped(d), 1);
    assert_int_equal(s.skipped, 1);

    json_error_t je;
    json_t *doc = json_load_file(fixture_path(ORDERS ".expected.json"), 0, &je);
    if (!doc) fail_msg("expected json: %s (line %d)", je.text, je.line);
    assert_int_equal(json_integer_value(json_object_get(doc, "skipped")), 1);
    json_t *calls = json_object_get(doc, "calls");
    assert_int_equal(json_array_size(calls), s.nc);
    assert_int_equal(json_integer_value(json_object_get(doc, "count")), s.nc);
    for (size_t i = 0; i < s.nc; i++) {
        const tcall *c = &s.c[i];
        json_t *x = json_array_get(calls, i);
        char where[32];
        snprintf(where, sizeof where, "call %zu", i);
        /* time_ms(tick) = clock + (tick - prolog.tstamp) * 65536 / 10^6: at the start, clock */
        assert_int_equal(c->clock + ticks_ms(c->start - c->start), json_integer_value(json_object_get(x, "ts_ms")));
        assert_true(c->end >= c->start);
        assert_int_equal(ticks_ms(c->end - c->start), json_integer_value(json_object_get(x, "duration_ms")));
        assert_string_equal(c->method, json_string_value(json_object_get(x, "method")));
        assert_int_equal(c->calls, json_integer_value(json_object_get(x, "calls")));
        assert_int_equal(c->error, json_is_true(json_object_get(x, "error")));
        /* params: same keys, values and order; thread from the "thread" attribute */
        json_t *params = json_object_get(x, "params");
        assert_int_equal(json_object_size(params), c->np);
        const char *thread = "";
        size_t k = 0;
        const char *key;
        json_t *val;
        json_object_foreach(params, key, val) {
            if (strcmp(c->params[k].k, key) != 0) fail_msg("%s: param %zu is %s, expected %s", where, k, c->params[k].k, key);
            assert_string_equal(c->params[k].v, json_string_value(val));
            if (strcmp(key, "thread") == 0) thread = c->params[k].v;
            k++;
        }
        assert_string_equal(thread, json_string_value(json_object_get(x, "thread")));
        assert_tree(c->tree, json_object_get(x, "tree"), where);
    }
    json_decref(doc);

    for (size_t i = 0; i < s.nc; i++) {
        for (size_t k = 0; k < s.c[i].np; k++) free(s.c[i].params[k].k), free(s.c[i].params[k].v);
        free(s.c[i].params);
        free(s.c[i].method);
        node_free(s.c[i].tree);
    }
    free(s.c);
    cp_cbt_dec_free(d);
    cp_buf_free(&data);
}

static void test_orders_slicing(void **state)
{
    (void)state;
    cp_buf data;
    load_fixture(ORDERS, &data);
    check_slicings(data.data, data.len, NULL);
    /* and with a torn tail: the same events, then "truncated" at the same offset */
    check_slicings(data.data, data.len - 5, NULL);
    result r;
    decode(data.data, data.len - 5, NULL, 0, &r);
    assert_int_equal(r.feed_status, CP_OK);
    assert_int_equal(r.finish_status, CP_EPROTO);
    assert_true(strncmp(r.err, "truncated item", 14) == 0);
    char want[64];
    snprintf(want, sizeof want, " at offset %" PRIu64, r.offset);
    assert_non_null(strstr(r.err, want));
    assert_int_equal(r.offset, 3608); /* the last record starts there */
    result_free(&r);
    cp_buf_free(&data);
}

/* A sink that stops at event k: CP_EABORT, k - 1 events counted, and nothing after. */
static void test_sink_stop(void **state)
{
    (void)state;
    cp_buf data;
    load_fixture(ORDERS, &data);
    result whole, r;
    decode(data.data, data.len, NULL, 0, &whole);
    for (int k = 1; k <= (int)whole.events; k += 7) {
        decode_stop(data.data, data.len, NULL, NULL, 0, 0, k, &r);
        assert_int_equal(r.finish_status, CP_EABORT);
        assert_int_equal(r.events, k);
        assert_true(strncmp(r.err, "stopped by the consumer at offset ", 34) == 0);
        result_free(&r);
    }
    result_free(&whole);
    cp_buf_free(&data);
}

/* ---- hand-built records -------------------------------------------------------------------- */

static const char sample_log[] =
    "BEGIN d=0 mid=100 start=1000 method=\"com.acme.A.run()V\" clock=1700000000000 id=\"42\"\n"
    "ATTR d=0 k=\"thread\" v=\"main\"\n"
    "ATTR d=0 k=\"k\" v=\"val\"\n"
    "ATTR d=0 k=\"n\" v=\"-5\"\n"
    "BEGIN d=1 mid=101 start=1010 method=\"com.acme.A.sub()V\"\n"
    "ATTR d=1 k=\"x\" v=\"1\"\n"
    "END d=1 end=1020 calls=1\n"
    "EXCEPTION d=0 text=\"java.lang.RuntimeException: boom\\n\\tat com.acme.A.run(A.java:12)\"\n"
    "ATTR d=0 k=\"late\" v=\"true\"\n"
    "END d=0 end=1100 calls=3\n";

static void decode_sample(int big, int indef, int flags, result *r)
{
    cp_buf b;
    cp_buf_init(&b);
    e_symbols(&b);
    e_sample(&b, big, indef);
    check_slicings(b.data, b.len, NULL);
    decode(b.data, b.len, NULL, flags, r);
    assert_int_equal(r->finish_status, CP_OK);
    assert_int_equal(r->offset, b.len);
    assert_int_equal(r->items, 11);
    assert_int_equal(r->records, 2);
    assert_int_equal(r->skipped, 0);
    assert_int_equal(r->methods, 2);
    cp_buf_free(&b);
}

static void test_tags_10_and_11(void **state)
{
    (void)state;
    result be, le;
    decode_sample(1, 0, 0, &be);
    assert_string_equal((const char *)be.log.data, sample_log);
    decode_sample(0, 0, 0, &le);
    assert_string_equal((const char *)le.log.data, sample_log);
    result_free(&be);
    result_free(&le);
    /* the byte order is reported */
    decode_sample(1, 0, LOG_BIG, &be);
    decode_sample(0, 0, LOG_BIG, &le);
    assert_non_null(strstr((const char *)be.log.data, "BEGIN d=0 be=1"));
    assert_non_null(strstr((const char *)le.log.data, "BEGIN d=0 be=0"));
    assert_non_null(strstr((const char *)le.log.data, "END d=0 be=0"));
    result_free(&be);
    result_free(&le);
}

static void test_indefinite(void **state)
{
    (void)state;
    for (int big = 0; big <= 1; big++) {
        result r;
        decode_sample(big, 1, 0, &r);
        assert_string_equal((const char *)r.log.data, sample_log);
        result_free(&r);
    }
}

/* Events carry the offset of their record's tag. */
static void test_offsets(void **state)
{
    (void)state;
    cp_buf b;
    cp_buf_init(&b);
    e_symbols(&b);
    size_t at = b.len;
    e_sample(&b, 1, 0);
    result r;
    decode(b.data, b.len, NULL, LOG_OFFSETS, &r);
    char want[64];
    snprintf(want, sizeof want, "BEGIN d=0 @%zu ", at);
    assert_non_null(strstr((const char *)r.log.data, want));
    snprintf(want, sizeof want, "END d=0 @%zu ", at);
    assert_non_null(strstr((const char *)r.log.data, want));
    result_free(&r);
    cp_buf_free(&b);
}

/* Decodes symbols + the given tail; returns the log. */
static void decode_with_symbols(const cp_buf *tail, int flags, result *r)
{
    cp_buf b;
    cp_buf_init(&b);
    e_symbols(&b);
    cp_buf_append(&b, tail->data, tail->len);
    check_slicings(b.data, b.len, NULL);
    decode(b.data, b.len, NULL, flags, r);
    cp_buf_free(&b);
}

/* A plain record: prolog(method), TraceBegin, epilog. */
static void e_plain(cp_buf *b, uint64_t method, uint64_t tick)
{
    e_tag(b, 10), e_arr(b, 3), e_prolog(b, 1, method, tick), e_begin(b, 5, 6), e_epilog(b, 1, 1, tick + 1);
}

static void test_long_calls(void **state)
{
    (void)state;
    cp_buf t;
    cp_buf_init(&t);
    for (int big = 0; big <= 1; big++) {
        e_tag(&t, big ? 10 : 11), e_arr(&t, 3), e_prolog(&t, big, 100, 77), e_begin(&t, 1, 2);
        e_epilog16(&t, big, (uint64_t)1 << 33 | 5, 99);
    }
    result r;
    decode_with_symbols(&t, 0, &r);
    assert_int_equal(r.finish_status, CP_OK);
    const char *log = (const char *)r.log.data;
    const char *first = strstr(log, "END d=0 end=99 calls=8589934597\n");
    assert_non_null(first);
    assert_non_null(strstr(first + 1, "END d=0 end=99 calls=8589934597\n"));
    result_free(&r);
    cp_buf_free(&t);
}

static void test_refs(void **state)
{
    (void)state;
    cp_buf t;
    cp_buf_init(&t);
    /* a redefinition replaces: string 4 becomes "helper", method 101 now com.acme.A.helper()V */
    e_strdef(&t, 4, "helper");
    e_strdef(&t, 9, "user");
    e_tag(&t, 10), e_arr(&t, 5), e_prolog(&t, 1, 101, 10);
    e_tag(&t, 33), e_arr(&t, 2), e_uint(&t, 1000), e_ref(&t, 6); /* traceId by reference */
    e_tag(&t, 12), e_map(&t, 2);
    e_ref(&t, 5), e_ref(&t, 6);
    e_ref(&t, 9), e_map(&t, 2), e_text(&t, "name"), e_ref(&t, 6), e_text(&t, "roles"), e_arr(&t, 2), e_ref(&t, 2),
        e_text(&t, "x\"y");
    e_tag(&t, 34), e_arr(&t, 5), e_uint(&t, 1), e_ref(&t, 7), e_null(&t); /* null message: class alone */
    e_arr(&t, 2);
    e_arr(&t, 4), e_ref(&t, 1), e_ref(&t, 2), e_ref(&t, 8), e_uint(&t, 3);
    e_arr(&t, 4), e_text(&t, "B"), e_text(&t, "m"), e_null(&t), e_int(&t, -2);
    e_tag(&t, 34), e_arr(&t, 5), e_uint(&t, 2), e_text(&t, "java.io.IOException"), e_text(&t, "disk"), e_arr(&t, 0);
    e_tag(&t, 34), e_indef(&t, 4), e_uint(&t, 3), e_ref(&t, 7), e_text(&t, "root"), e_indef(&t, 4), e_break(&t),
        e_null(&t), e_break(&t);
    e_epilog(&t, 1, 1, 20);
    result r;
    decode_with_symbols(&t, 0, &r);
    assert_int_equal(r.finish_status, CP_OK);
    assert_string_equal((const char *)r.log.data,
                        "BEGIN d=0 mid=101 start=10 method=\"com.acme.A.helper()V\" clock=1000 id=\"main\"\n"
                        "ATTR d=0 k=\"thread\" v=\"main\"\n"
                        "ATTR d=0 k=\"user\" v=\"{\\\"name\\\":\\\"main\\\",\\\"roles\\\":[\\\"run\\\",\\\"x\\\\\\\"y\\\"]}\"\n"
                        "EXCEPTION d=0 text=\"java.lang.RuntimeException\\n\\tat com.acme.A.run(A.java:3)"
                        "\\n\\tat B.m(Unknown Source:-2)\\nCaused by: java.io.IOException: disk"
                        "\\nCaused by: java.lang.RuntimeException: root\"\n"
                        "END d=0 end=20 calls=1\n");
    result_free(&r);
    cp_buf_free(&t);
}

/* Values of every CBOR kind as attribute text (spec §3.2 and the header's rules). */
static void test_value_texts(void **state)
{
    (void)state;
    static const struct {
        const char *hex, *text;
    } cases[] = {
        {"00", "0"},
        {"1bffffffffffffffff", "18446744073709551615"},
        {"20", "-1"},
        {"3bffffffffffffffff", "-18446744073709551616"},
        {"f93e00", "1.5"},                       /* half */
        {"f92e66", "0.1"},                       /* half nearest to 0.1 */
        {"f97e00", "NaN"},
        {"f9fc00", "-Infinity"},
        {"fa3dcccccd", "0.1"},                   /* single */
        {"fb3fb999999999999a", "0.1"},           /* double */
        {"fb7e37e43c8800759c", "1e+300"},
        {"fb8000000000000000", "-0"},
        {"f4", "false"},
        {"f5", "true"},
        {"f6", "null"},
        {"f7", "null"},
        {"f0", "simple(16)"},
        {"f8ff", "simple(255)"},
        {"4301ff7f", "01ff7f"},                   /* bytes in hex */
        {"6563c3a97465", "c\xc3\xa9te"},
        {"62ff41", "\xef\xbf\xbd" "A"},         /* invalid UTF-8 repaired */
        {"c11a514b67b0", "1363896240"},          /* other tags are transparent */
        {"80", "[]"},
        {"a0", "{}"},
        {"9f01820203ff", "[1,[2,3]]"},
        {"a201f9fc0082010262783a", "{\"1\":null,\"[1,2]\":\"x:\"}"}, /* keys become strings */
        {"a1a1616101f4", "{\"{\\\"a\\\":1}\":false}"},
        {"82c60102", "[\"com.acme.A\",2]"},      /* a reference inside JSON; 02 is a plain 2 */
        {"8241004100", "[\"00\",\"00\"]"},
        {"82f97e00f0", "[null,\"simple(16)\"]"},
        {"7f6161626262ff", "abb"},
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(cases); i++) {
        cp_buf t;
        cp_buf_init(&t);
        e_tag(&t, 10), e_arr(&t, 4), e_prolog(&t, 1, 100, 1), e_begin(&t, 0, 0);
        e_tag(&t, 12), e_map(&t, 1), e_text(&t, "v");
        const char *h = cases[i].hex;
        for (size_t k = 0; h[k]; k += 2) {
            unsigned byte;
            sscanf(h + k, "%2x", &byte);
            e_byte(&t, (uint8_t)byte);
        }
        e_epilog(&t, 1, 1, 2);
        result r;
        decode_with_symbols(&t, 0, &r);
        if (r.finish_status != CP_OK) fail_msg("%s: %s", h, r.err);
        cp_buf want;
        cp_buf_init(&want);
        cp_buf_puts(&want, "ATTR d=0 k=\"v\" v=");
        cp_json_str(&want, cases[i].text, strlen(cases[i].text));
        cp_buf_putc(&want, 0);
        if (!strstr((const char *)r.log.data, (const char *)want.data))
            fail_msg("%s: want %s in\n%s", h, (const char *)want.data, (const char *)r.log.data);
        cp_buf_free(&want);
        result_free(&r);
        cp_buf_free(&t);
    }
}

/* Records the spec says to skip (and shapes we skip): one SKIPPED each, with the reason,
 * and the next record still decoded. */
static void test_skipped(void **state)
{
    (void)state;
    static const struct {
        const char *why;
        int kind;
    } cases[] = {
        {"trace record without TraceBegin at offset ", 0},
        {"undefined string id 99 at offset ", 1},
        {"undefined method id 55 at offset ", 2},
        {"method 102 uses undefined string id 77 at offset ", 3},
        {"prolog of 7 bytes (8 expected) at offset ", 4},
        {"epilog of 9 bytes (8 or 16 expected) at offset ", 5},
        {"trace record without an epilog at offset ", 6},
        {"unknown top-level tag 99 at offset ", 7},
        {"top-level unsigned integer (not a symbol or a trace record) at offset ", 8},
        {"TraceBegin (tag 33) not right after the prolog at offset ", 9},
        {"second exception (tag 34) in one trace record at offset ", 10},
        {"attributes (tag 12) are not a map at offset ", 11},
        {"text string inside a trace record at offset ", 12},
        {"string definition (tag 1) has too few elements at offset ", 13},
        {"byte string inside a trace record (only the prolog and the epilog are) at offset ", 14},
        {"exception cause chain longer than 64 at offset ", 15},
        {"undefined string id 99 at offset ", 16},
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(cases); i++) {
        cp_buf t;
        cp_buf_init(&t);
        switch (cases[i].kind) {
        case 0:
            e_tag(&t, 11), e_arr(&t, 2), e_prolog(&t, 0, 100, 1), e_epilog(&t, 0, 1, 2);
            break;
        case 1: /* in a sub-record's attribute value */
            e_tag(&t, 10), e_arr(&t, 4), e_prolog(&t, 1, 100, 1), e_begin(&t, 0, 0);
            e_tag(&t, 10), e_arr(&t, 3), e_prolog(&t, 1, 101, 1), e_tag(&t, 12), e_map(&t, 1), e_text(&t, "a"),
                e_arr(&t, 1), e_ref(&t, 99), e_epilog(&t, 1, 1, 1);
            e_epilog(&t, 1, 1, 2);
            break;
        case 2:
            e_tag(&t, 10), e_arr(&t, 3), e_prolog(&t, 1, 55, 1), e_begin(&t, 0, 0), e_epilog(&t, 1, 1, 2);
            break;
        case 3:
            e_methdef(&t, 102, 1, 77, 3);
            e_tag(&t, 10), e_arr(&t, 3), e_prolog(&t, 1, 102, 1), e_begin(&t, 0, 0), e_epilog(&t, 1, 1, 2);
            break;
        case 4:
            e_tag(&t, 10), e_arr(&t, 3), e_bytes(&t, "1234567", 7), e_begin(&t, 0, 0), e_epilog(&t, 1, 1, 2);
            break;
        case 5:
            e_tag(&t, 10), e_arr(&t, 3), e_prolog(&t, 1, 100, 1), e_begin(&t, 0, 0), e_bytes(&t, "123456789", 9);
            break;
        case 6: /* a sub-record missing its epilog */
            e_tag(&t, 10), e_arr(&t, 4), e_prolog(&t, 1, 100, 1), e_begin(&t, 0, 0);
            e_tag(&t, 11), e_arr(&t, 1), e_prolog(&t, 0, 101, 1);
            e_epilog(&t, 1, 1, 2);
            break;
        case 7:
            e_tag(&t, 99), e_arr(&t, 0);
            break;
        case 8:
            e_uint(&t, 5);
            break;
        case 9:
            e_tag(&t, 10), e_arr(&t, 4), e_prolog(&t, 1, 100, 1), e_begin(&t, 0, 0), e_begin(&t, 0, 0),
                e_epilog(&t, 1, 1, 2);
            break;
        case 10:
            e_tag(&t, 10), e_arr(&t, 5), e_prolog(&t, 1, 100, 1), e_begin(&t, 0, 0);
            for (int k = 0; k < 2; k++)
                e_tag(&t, 34), e_arr(&t, 5), e_uint(&t, 1), e_text(&t, "E"), e_text(&t, "m"), e_arr(&t, 0), e_null(&t);
            e_epilog(&t, 1, 1, 2);
            break;
        case 11:
            e_tag(&t, 10), e_arr(&t, 4), e_prolog(&t, 1, 100, 1), e_begin(&t, 0, 0), e_tag(&t, 12), e_arr(&t, 0),
                e_epilog(&t, 1, 1, 2);
            break;
        case 12:
            e_tag(&t, 10), e_arr(&t, 4), e_prolog(&t, 1, 100, 1), e_begin(&t, 0, 0), e_text(&t, "?"),
                e_epilog(&t, 1, 1, 2);
            break;
        case 13:
            e_tag(&t, 1), e_arr(&t, 2), e_uint(&t, 50), e_text(&t, "x");
            break;
        case 14:
            e_tag(&t, 10), e_arr(&t, 4), e_prolog(&t, 1, 100, 1), e_begin(&t, 0, 0), e_epilog(&t, 1, 1, 2),
                e_epilog(&t, 1, 1, 2);
            break;
        case 15:
            e_tag(&t, 10), e_arr(&t, 4), e_prolog(&t, 1, 100, 1), e_begin(&t, 0, 0);
            for (int k = 0; k < 66; k++) e_tag(&t, 34), e_arr(&t, 5), e_uint(&t, 1), e_text(&t, "E"), e_null(&t), e_arr(&t, 0);
            e_null(&t);
            e_epilog(&t, 1, 1, 2);
            break;
        case 16: /* a string reference as an exception class */
            e_tag(&t, 10), e_arr(&t, 4), e_prolog(&t, 1, 100, 1), e_begin(&t, 0, 0);
            e_tag(&t, 34), e_arr(&t, 5), e_uint(&t, 1), e_ref(&t, 99), e_null(&t), e_arr(&t, 0), e_null(&t);
            e_epilog(&t, 1, 1, 2);
            break;
        }
        size_t bad_len = t.len;
        e_plain(&t, 100, 500); /* the next record goes on */
        result r;
        decode_with_symbols(&t, LOG_OFFSETS, &r);
        if (r.finish_status != CP_OK) fail_msg("case %d: %s", cases[i].kind, r.err);
        const char *log = (const char *)r.log.data;
        if (!strstr(log, cases[i].why)) fail_msg("case %d: want \"%s\" in\n%s", cases[i].kind, cases[i].why, log);
        assert_int_equal(r.skipped, 1);
        assert_true(strncmp(log, "SKIPPED d=0 @", 13) == 0);
        assert_non_null(strstr(log, "BEGIN d=0"));
        assert_non_null(strstr(log, "start=500"));
        assert_int_equal(r.records, 1);
        /* nothing of the skipped record but the SKIPPED line */
        assert_int_equal(r.events, 3);
        (void)bad_len;
        result_free(&r);
        cp_buf_free(&t);
    }
}

/* ---- bad input: errors naming an offset ---------------------------------------------------- */

/* Decodes prefix + bad bytes; asserts the status and that the error contains `why` and
 * names `at` (offsets counted from the start of the whole input). */
static void expect_error(const cp_buf *in, const cp_cbt_limits *lim, int status, const char *why, uint64_t at,
                         uint64_t item_at)
{
    check_slicings(in->data, in->len, lim);
    result r;
    decode(in->data, in->len, lim, 0, &r);
    assert_int_equal(r.finish_status, status);
    if (!strstr(r.err, why)) fail_msg("want \"%s\" in \"%s\"", why, r.err);
    char want[64];
    snprintf(want, sizeof want, " at offset %" PRIu64, at);
    if (!strstr(r.err, want)) fail_msg("want \"%s\" in \"%s\"", want, r.err);
    assert_int_equal(r.offset, item_at);
    result_free(&r);
}

static void test_huge_length(void **state)
{
    (void)state;
    cp_buf b;
    cp_buf_init(&b);
    e_strdef(&b, 1, "x");
    size_t at = b.len;
    /* a record whose attribute value is a byte string of length 2^63 */
    e_tag(&b, 10), e_arr(&b, 4), e_prolog(&b, 1, 100, 1), e_begin(&b, 0, 0), e_tag(&b, 12), e_map(&b, 1),
        e_text(&b, "k");
    size_t bad = b.len;
    e_head(&b, 2, (uint64_t)1 << 63);
    expect_error(&b, NULL, CP_ELIMIT, "string of 9223372036854775808 bytes past max_string", bad, at);
    /* the same as an array count, a map count and a text length at top level */
    static const uint8_t heads[] = {0x9b, 0xbb, 0x7b, 0x5b};
    static const char *const whys[] = {"array of 9223372036854775808 entries past max_item",
                                       "map of 9223372036854775808 entries past max_item",
                                       "string of 9223372036854775808 bytes past max_string",
                                       "string of 9223372036854775808 bytes past max_string"};
    for (size_t i = 0; i < 4; i++) {
        cp_buf_reset(&b);
        e_strdef(&b, 1, "x");
        at = b.len;
        e_byte(&b, heads[i]);
        uint8_t len[8];
        cp_put_be64(len, (uint64_t)1 << 63);
        cp_buf_append(&b, len, 8);
        expect_error(&b, NULL, CP_ELIMIT, whys[i], at, at);
    }
    cp_buf_free(&b);
}

static void test_deep_nesting(void **state)
{
    (void)state;
    static const uint8_t opens[] = {0x81, 0x9f, 0xc1, 0xa1};
    for (size_t i = 0; i < CP_ARRAY_LEN(opens); i++) {
        cp_buf b;
        cp_buf_init(&b);
        e_strdef(&b, 1, "x");
        size_t at = b.len;
        for (int k = 0; k < 100000; k++) {
            e_byte(&b, opens[i]);
            if (opens[i] == 0xa1) e_byte(&b, 0x00); /* a map key, then the nested value */
        }
        e_byte(&b, 0);
        clock_t t0 = clock();
        size_t step = opens[i] == 0xa1 ? 2 : 1;
        expect_error(&b, NULL, CP_ELIMIT, "nesting deeper than max_depth 512", at + 512 * step, at);
        assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 30.0);
        cp_buf_free(&b);
    }
    /* at the limit it decodes (a value nested max_depth deep in an attribute) */
    cp_buf b;
    cp_buf_init(&b);
    cp_cbt_limits lim;
    cp_cbt_limits_default(&lim);
    lim.max_depth = 40;
    e_strdef(&b, 1, "com.acme.A"), e_strdef(&b, 2, "run"), e_strdef(&b, 3, "()V"), e_methdef(&b, 100, 1, 2, 3);
    e_tag(&b, 10), e_arr(&b, 4), e_prolog(&b, 1, 100, 1), e_begin(&b, 0, 0), e_tag(&b, 12), e_map(&b, 1), e_text(&b, "k");
    for (int k = 0; k < 36; k++) e_arr(&b, 1); /* tag, array, tag, map = 4 levels above */
    e_uint(&b, 7);
    e_epilog(&b, 1, 1, 2);
    result r;
    decode(b.data, b.len, &lim, 0, &r);
    if (r.finish_status != CP_OK) fail_msg("%s", r.err);
    char want[128];
    snprintf(want, sizeof want, "v=\"%.*s7%.*s\"", 36, "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", 36,
             "]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]");
    assert_non_null(strstr((const char *)r.log.data, want));
    result_free(&r);
    cp_buf_reset(&b);
    for (int k = 0; k < 41; k++) e_arr(&b, 1);
    e_uint(&b, 7);
    expect_error(&b, &lim, CP_ELIMIT, "nesting deeper than max_depth 40", 40, 0);
    cp_buf_free(&b);
}

static void test_stray_break(void **state)
{
    (void)state;
    cp_buf b;
    cp_buf_init(&b);
    e_break(&b);
    expect_error(&b, NULL, CP_EPROTO, "break (0xff) outside an indefinite-length item", 0, 0);
    cp_buf_reset(&b);
    e_strdef(&b, 1, "x");
    size_t at = b.len;
    e_break(&b);
    expect_error(&b, NULL, CP_EPROTO, "break (0xff) outside an indefinite-length item", at, at);
    /* inside a definite array, and after a map key */
    cp_buf_reset(&b);
    e_arr(&b, 2), e_uint(&b, 1), e_break(&b);
    expect_error(&b, NULL, CP_EPROTO, "break (0xff) outside an indefinite-length item", 2, 0);
    cp_buf_reset(&b);
    e_indef(&b, 5), e_uint(&b, 1), e_break(&b);
    expect_error(&b, NULL, CP_EPROTO, "break after a map key with no value", 2, 0);
    /* a chunk of the wrong kind inside an indefinite text string */
    cp_buf_reset(&b);
    e_indef(&b, 3), e_bytes(&b, "a", 1), e_break(&b);
    expect_error(&b, NULL, CP_EPROTO, "byte string inside an indefinite-length text string", 1, 0);
    cp_buf_free(&b);
}

static void test_truncated(void **state)
{
    (void)state;
    cp_buf b;
    cp_buf_init(&b);
    e_symbols(&b);
    size_t at = b.len;
    e_sample(&b, 0, 1);
    size_t whole = b.len;
    for (size_t cut = at + 1; cut < whole; cut += 13) {
        cp_buf_reset(&b);
        e_symbols(&b);
        e_sample(&b, 0, 1);
        b.len = cut;
        char why[64];
        snprintf(why, sizeof why, "truncated item (%zu bytes present)", cut - at);
        expect_error(&b, NULL, CP_EPROTO, why, at, at);
    }
    cp_buf_free(&b);
}

static void test_reserved_ai(void **state)
{
    (void)state;
    cp_buf b;
    cp_buf_init(&b);
    for (unsigned major = 0; major < 8; major++) {
        for (unsigned ai = 28; ai <= 30; ai++) {
            cp_buf_reset(&b);
            e_strdef(&b, 1, "x");
            size_t at = b.len;
            e_arr(&b, 2), e_uint(&b, 1), e_byte(&b, (uint8_t)(major << 5 | ai)), e_uint(&b, 0);
            char why[64];
            snprintf(why, sizeof why, "reserved additional information %u", ai);
            expect_error(&b, NULL, CP_EPROTO, why, at + 2, at);
        }
    }
    /* other initial bytes no encoder writes */
    cp_buf_reset(&b);
    e_byte(&b, 0x1f);
    expect_error(&b, NULL, CP_EPROTO, "unsigned integer with an indefinite length", 0, 0);
    cp_buf_reset(&b);
    e_byte(&b, 0xdf);
    expect_error(&b, NULL, CP_EPROTO, "tag with an indefinite length", 0, 0);
    cp_buf_reset(&b);
    e_byte(&b, 0xf8), e_byte(&b, 0x10);
    expect_error(&b, NULL, CP_EPROTO, "simple value 16 in two bytes", 0, 0);
    cp_buf_free(&b);
}

static void test_max_item(void **state)
{
    (void)state;
    cp_cbt_limits lim;
    cp_cbt_limits_default(&lim);
    lim.max_item = 100;
    cp_buf b;
    cp_buf_init(&b);
    e_strdef(&b, 1, "short");
    size_t at = b.len;
    char text[201];
    memset(text, 'a', 200);
    text[200] = 0;
    e_strdef(&b, 2, text);
    expect_error(&b, &lim, CP_ELIMIT, "item longer than max_item 100 bytes", at, at);
    /* many small items: found by their count before they are read */
    cp_buf_reset(&b);
    e_arr(&b, 150);
    for (int i = 0; i < 150; i++) e_uint(&b, 1);
    expect_error(&b, &lim, CP_ELIMIT, "array of 150 entries past max_item 100 bytes", 0, 0);
    /* an indefinite one: found when it reaches the limit */
    cp_buf_reset(&b);
    e_indef(&b, 4);
    for (int i = 0; i < 150; i++) e_uint(&b, 1);
    e_break(&b);
    expect_error(&b, &lim, CP_ELIMIT, "item longer than max_item 100 bytes", 0, 0);
    /* and max_string */
    lim.max_item = 1000;
    lim.max_string = 10;
    cp_buf_reset(&b);
    e_strdef(&b, 1, "0123456789A");
    expect_error(&b, &lim, CP_ELIMIT, "string of 11 bytes past max_string 10", 3, 0);
    cp_buf_reset(&b);
    e_tag(&b, 1), e_arr(&b, 3), e_uint(&b, 1), e_indef(&b, 3), e_text(&b, "012345"), e_text(&b, "6789A"), e_break(&b),
        e_uint(&b, 0);
    expect_error(&b, &lim, CP_ELIMIT, "chunked string of 11 bytes past max_string 10", 11, 0);
    cp_buf_free(&b);
}

static void test_symbol_limits(void **state)
{
    (void)state;
    cp_cbt_limits lim;
    cp_cbt_limits_default(&lim);
    lim.max_symbols = 3;
    cp_buf b;
    cp_buf_init(&b);
    e_strdef(&b, 1, "a"), e_strdef(&b, 2, "b"), e_methdef(&b, 100, 1, 2, 2);
    e_strdef(&b, 1, "c"); /* a redefinition adds nothing */
    e_methdef(&b, 100, 2, 1, 1);
    size_t at = b.len;
    e_strdef(&b, 3, "d");
    expect_error(&b, &lim, CP_ELIMIT, "string definition past max_symbols 3", at, at);
    cp_buf_reset(&b);
    e_strdef(&b, 1, "a"), e_strdef(&b, 2, "b"), e_strdef(&b, 3, "c");
    at = b.len;
    e_methdef(&b, 100, 1, 2, 3);
    expect_error(&b, &lim, CP_ELIMIT, "method definition past max_symbols 3", at, at);
    /* bytes of the strings kept */
    cp_cbt_limits_default(&lim);
    lim.max_symbol_bytes = 10;
    cp_buf_reset(&b);
    e_strdef(&b, 1, "0123456789");
    e_strdef(&b, 1, "abcdefghij"); /* replaces: still 10 bytes */
    at = b.len;
    e_strdef(&b, 2, "x");
    expect_error(&b, &lim, CP_ELIMIT, "defined strings past max_symbol_bytes 10", at, at);
    cp_buf_free(&b);
}

/* Random bytes (and random mutations of the fixture): no crash, same answer in any slicing,
 * and every error names an offset (checked in decode_cuts). */
static void test_random_bytes(void **state)
{
    (void)state;
    cp_buf data;
    load_fixture(ORDERS, &data);
    uint64_t rng = 42;
    cp_cbt_limits tiny;
    cp_cbt_limits_default(&tiny);
    tiny.max_item = 200, tiny.max_depth = 6, tiny.max_string = 16, tiny.max_symbols = 8, tiny.max_symbol_bytes = 64;
    for (int round = 0; round < 300; round++) {
        uint8_t buf[512];
        size_t n = 1 + test_rand(&rng) % sizeof buf;
        for (size_t i = 0; i < n; i++) buf[i] = (uint8_t)test_rand(&rng);
        result whole, cut;
        decode(buf, n, round & 1 ? &tiny : NULL, LOG_ALL, &whole);
        size_t cuts[4];
        for (int k = 0; k < 4; k++) cuts[k] = (size_t)(test_rand(&rng) % (n + 1));
        for (int k = 1; k < 4; k++)
            if (cuts[k] < cuts[k - 1]) cuts[k] = cuts[k - 1];
        decode_cuts(buf, n, round & 1 ? &tiny : NULL, cuts, 4, LOG_ALL, &cut);
        assert_same(&whole, &cut, "random bytes");
        result_free(&whole);
        result_free(&cut);
    }
    uint8_t *m = malloc(data.len);
    for (int round = 0; round < 200; round++) {
        memcpy(m, data.data, data.len);
        for (int k = 0; k < 1 + round % 8; k++) m[test_rand(&rng) % data.len] = (uint8_t)test_rand(&rng);
        result whole, cut;
        decode(m, data.len, round & 1 ? &tiny : NULL, LOG_ALL, &whole);
        size_t c = (size_t)(test_rand(&rng) % (data.len + 1));
        decode_cuts(m, data.len, round & 1 ? &tiny : NULL, &c, 1, LOG_ALL, &cut);
        assert_same(&whole, &cut, "mutated fixture");
        result_free(&whole);
        result_free(&cut);
    }
    free(m);
    cp_buf_free(&data);
}

/* A big item fed in tiny slices is scanned once, not once per slice. */
static void test_big_item_tiny_slices(void **state)
{
    (void)state;
    cp_buf b;
    cp_buf_init(&b);
    e_strdef(&b, 1, "com.acme.A"), e_strdef(&b, 2, "run"), e_strdef(&b, 3, "()V"), e_methdef(&b, 100, 1, 2, 3);
    e_tag(&b, 10), e_arr(&b, 4), e_prolog(&b, 1, 100, 1), e_begin(&b, 0, 0), e_tag(&b, 12), e_indef(&b, 5);
    for (int i = 0; i < 200000; i++) e_uint(&b, (uint64_t)i), e_uint(&b, 1);
    e_break(&b);
    e_epilog(&b, 1, 1, 2);
    cp_cbt_dec *d = cp_cbt_dec_new(NULL, NULL);
    clock_t t0 = clock();
    for (size_t pos = 0; pos < b.len; pos += 3) {
        size_t n = b.len - pos < 3 ? b.len - pos : 3;
        assert_int_equal(cp_cbt_dec_feed(d, b.data + pos, n), CP_OK);
    }
    assert_int_equal(cp_cbt_dec_finish(d), CP_OK);
    assert_int_equal(cp_cbt_dec_records(d), 1);
    assert_true((double)(clock() - t0) / CLOCKS_PER_SEC < 10.0);
    cp_cbt_dec_free(d);
    cp_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_orders_fixture),
        cmocka_unit_test(test_orders_slicing),
        cmocka_unit_test(test_sink_stop),
        cmocka_unit_test(test_tags_10_and_11),
        cmocka_unit_test(test_indefinite),
        cmocka_unit_test(test_offsets),
        cmocka_unit_test(test_long_calls),
        cmocka_unit_test(test_refs),
        cmocka_unit_test(test_value_texts),
        cmocka_unit_test(test_skipped),
        cmocka_unit_test(test_huge_length),
        cmocka_unit_test(test_deep_nesting),
        cmocka_unit_test(test_stray_break),
        cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_reserved_ai),
        cmocka_unit_test(test_max_item),
        cmocka_unit_test(test_symbol_limits),
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_big_item_tiny_slices),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
