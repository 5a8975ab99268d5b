/* asm_test.c -- call assembly (src/model/asm.c) on the test-service fixture streams:
 * every calls record comes out once, with a trace blob whose events are exactly the
 * call's (root method, ENTER count == the record's `calls`, root EXIT - ENTER ==
 * duration), whatever order the streams arrive in; calls whose trace is cut are kept
 * with a reason. */
#include "testutil.h"

#include "model/cp_asm.h"
#include "model/cp_model.h"
#include "streams/cp_streams.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NCALLS 45

/* ---- the stream files, revealed to the assembler as they "arrive" ---------------------- */

typedef struct fixture {
    cp_buf dict, trace, calls, sql, xml, suspend;
    size_t trace_avail, sql_avail, xml_avail;
} fixture;

static fixture fx;

static int setup(void **state)
{
    (void)state;
    load_fixture("streams/test-service.dictionary.protocol", &fx.dict);
    load_fixture("streams/test-service.traces.0.protocol", &fx.trace);
    load_fixture("streams/test-service.calls.0.protocol", &fx.calls);
    load_fixture("streams/test-service.sql.0.protocol", &fx.sql);
    load_fixture("streams/test-service.xml.0.protocol", &fx.xml);
    load_fixture("streams/test-service.suspend.protocol", &fx.suspend);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    cp_buf_free(&fx.dict);
    cp_buf_free(&fx.trace);
    cp_buf_free(&fx.calls);
    cp_buf_free(&fx.sql);
    cp_buf_free(&fx.xml);
    cp_buf_free(&fx.suspend);
    return 0;
}

static const cp_buf *file_of(cp_stream_kind kind, int32_t idx, size_t **avail)
{
    if (idx != 1) return NULL;
    switch (kind) {
    case CP_STREAM_TRACE: *avail = &fx.trace_avail; return &fx.trace;
    case CP_STREAM_SQL: *avail = &fx.sql_avail; return &fx.sql;
    case CP_STREAM_XML: *avail = &fx.xml_avail; return &fx.xml;
    default: return NULL;
    }
}

static int64_t io_size(void *ud, cp_stream_kind kind, int32_t idx)
{
    (void)ud;
    size_t *avail = NULL;
    const cp_buf *b = file_of(kind, idx, &avail);
    return b ? (int64_t)*avail : -1;
}

static long io_read(void *ud, cp_stream_kind kind, int32_t idx, uint64_t off, void *buf, size_t n)
{
    (void)ud;
    size_t *avail = NULL;
    const cp_buf *b = file_of(kind, idx, &avail);
    assert_non_null(b);
    assert_true(off + n <= *avail); /* never asks for bytes not stored yet */
    memcpy(buf, b->data + off, n);
    return (long)n;
}

/* ---- what comes out ---------------------------------------------------------------------- */

typedef struct got_call {
    int64_t ts;
    int32_t duration, calls, method_id;
    int32_t tfi, off, rec;
    char *method, *thread, *params;
    uint8_t *blob;
    size_t blob_len;
    const char *reason;
    int error, sql;
    int32_t suspend;
} got_call;

typedef struct got {
    got_call c[2 * NCALLS];
    size_t n;
} got;

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static int io_emit(void *ud, const cp_call *c)
{
    got *g = ud;
    assert_true(g->n < CP_ARRAY_LEN(g->c));
    got_call *o = &g->c[g->n++];
    o->ts = c->ts_ms;
    o->duration = c->duration_ms;
    o->calls = c->calls;
    o->method_id = c->method_id;
    o->tfi = c->trace_file_index;
    o->off = c->buffer_offset;
    o->rec = c->record_index;
    o->method = dup_n(c->method, c->method_len);
    o->thread = dup_n(c->thread, c->thread_len);
    o->params = dup_n(c->params_json, c->params_json_len);
    o->reason = c->trace_reason;
    o->error = c->error;
    o->sql = c->sql;
    o->suspend = c->suspend_ms;
    assert_string_equal(c->ns, "test-ns");
    assert_int_equal(c->restart_ms, 1690201577000);
    if (c->trace) {
        assert_null(c->trace_reason);
        o->blob = malloc(c->trace_len);
        memcpy(o->blob, c->trace, c->trace_len);
        o->blob_len = c->trace_len;
    } else {
        assert_non_null(c->trace_reason);
    }
    return 0;
}

static void got_free(got *g)
{
    for (size_t i = 0; i < g->n; i++) {
        free(g->c[i].method);
        free(g->c[i].thread);
        free(g->c[i].params);
        free(g->c[i].blob);
    }
    g->n = 0;
}

/* ---- feeding ------------------------------------------------------------------------------ */

typedef struct feeder {
    cp_asm *a;
    cp_buf utf8;
    int64_t now;
} feeder;

static int f_word(void *ud, const cp_word_rec *r)
{
    feeder *f = ud;
    cp_buf_reset(&f->utf8);
    assert_int_equal(cp_str16_to_utf8(&f->utf8, r->word), CP_OK);
    return cp_asm_word(f->a, r->id, (const char *)f->utf8.data, f->utf8.len) != CP_OK;
}
static int f_suspend(void *ud, const cp_suspend_rec *r) { return cp_asm_pause(((feeder *)ud)->a, r) != CP_OK; }
static int f_trace(void *ud, const cp_trace_rec *r)
{
    feeder *f = ud;
    return cp_asm_trace(f->a, 1, r, f->now) != CP_OK;
}
static int f_call(void *ud, const cp_call_rec *r)
{
    feeder *f = ud;
    return cp_asm_call(f->a, r, f->now) != CP_OK;
}

typedef struct stream_feed {
    cp_dec *dec;
    const cp_buf *data;
    size_t pos;
    size_t *avail;       /* NULL for streams not read back */
} stream_feed;

static void sf_init(stream_feed *s, cp_stream_kind kind, const cp_buf *data, size_t *avail, feeder *f)
{
    cp_dec_sink sink = {.ud = f, .on_word = f_word, .on_suspend = f_suspend, .on_trace = f_trace, .on_call = f_call};
    s->dec = cp_dec_new(kind, NULL, &sink, 0);
    s->data = data;
    s->pos = 0;
    s->avail = avail;
    if (avail) *avail = 0;
}

/* Feeds up to n more bytes: decoded first, then "stored" (as the server does). */
static int sf_step(stream_feed *s, size_t n)
{
    if (!s->dec) return 0;
    if (s->pos + n > s->data->len) n = s->data->len - s->pos;
    if (n) assert_int_equal(cp_dec_feed(s->dec, s->data->data + s->pos, n), CP_OK);
    s->pos += n;
    if (s->avail) *s->avail = s->pos;
    if (s->pos == s->data->len) {
        cp_dec_free(s->dec);
        s->dec = NULL;
    }
    return 1;
}

/* The resolved-value pool the next assemblers get (NULL: none). */
static cp_membudget *values_pool;
/* The stats of run()'s assembler before it was freed. */
static cp_asm_stats run_stats;

static cp_asm *new_asm(got *g, const cp_asm_limits *lim)
{
    cp_asm_pod pod = {"test-ns", "esc-ui-service", "esc-ui-service-84967fdd77-pwhw4", 1690201577000};
    cp_asm_io io = {.ud = g, .read = io_read, .size = io_size, .emit = io_emit, .values = values_pool};
    cp_asm *a = cp_asm_new(&pod, lim, &io);
    assert_non_null(a);
    return a;
}

/* The six streams of the fixture, in s[0..5]: dictionary, suspend, sql, xml, trace (the
 * given bytes: all of it or a cut), calls. */
static void feeds_init(stream_feed s[6], const cp_buf *trace, feeder *f)
{
    sf_init(&s[0], CP_STREAM_DICTIONARY, &fx.dict, NULL, f);
    sf_init(&s[1], CP_STREAM_SUSPEND, &fx.suspend, NULL, f);
    sf_init(&s[2], CP_STREAM_SQL, &fx.sql, &fx.sql_avail, f);
    sf_init(&s[3], CP_STREAM_XML, &fx.xml, &fx.xml_avail, f);
    sf_init(&s[4], CP_STREAM_TRACE, trace, &fx.trace_avail, f);
    sf_init(&s[5], CP_STREAM_CALLS, &fx.calls, NULL, f);
}

/* Feeds all six streams interleaved in slices of random sizes; `calls_first` delivers
 * every calls record before any trace byte; otherwise the dictionary comes first, as
 * the agent sends it. Pumps after every slice. */
static void run(got *g, uint64_t seed, int calls_first, size_t trace_limit, const cp_asm_limits *lim)
{
    feeder f = {.a = new_asm(g, lim), .now = 1000};
    cp_buf_init(&f.utf8);
    stream_feed s[6];
    cp_buf trace_cut = {0};
    cp_buf_append(&trace_cut, fx.trace.data, trace_limit < fx.trace.len ? trace_limit : fx.trace.len);
    feeds_init(s, &trace_cut, &f);
    if (!calls_first) while (sf_step(&s[0], 4096)) {}
    if (calls_first) {
        while (sf_step(&s[5], 4096)) {}
        assert_int_equal(cp_asm_pending(f.a), NCALLS);
        assert_int_equal(g->n, 0);
    }
    uint64_t rs = seed;
    for (int live = 1; live;) {
        live = 0;
        for (int i = 0; i < 6; i++) {
            size_t n = 1 + (size_t)(test_rand(&rs) % 3000);
            if (sf_step(&s[i], n)) live = 1;
            f.now += 1;
            assert_int_equal(cp_asm_pump(f.a, f.now, 0), CP_OK);
        }
    }
    cp_buf_free(&trace_cut);
    /* what could be assembled was; the rest goes out with reasons */
    assert_int_equal(cp_asm_pump(f.a, f.now, 1), CP_OK);
    assert_int_equal(cp_asm_pending(f.a), 0);
    cp_asm_stats st;
    cp_asm_get_stats(f.a, &st);
    assert_int_equal(st.calls_in, NCALLS);
    assert_int_equal(st.calls_out, NCALLS);
    if (values_pool) assert_int_equal(values_pool->used, st.mem_values); /* the only assembler */
    run_stats = st;
    cp_asm_free(f.a);
    cp_buf_free(&f.utf8);
}

/* ---- checking a blob against its calls record ----------------------------------------- */

typedef struct walk {
    int depth, ended;
    int32_t enters;
    int32_t first_method;
    int64_t t0, t_end;
    size_t events;
    size_t sql_refs, sql_resolved;
    const cp_blob *blob;
} walk;

static int w_trace(void *ud, const cp_trace_rec *r)
{
    walk *w = ud;
    if (w->ended) return 0;
    if (r->type == CP_TRACE_ENTER) {
        if (w->events == 0) {
            w->first_method = r->id;
            w->t0 = r->time_ms;
        }
        w->enters++;
        w->depth++;
    } else if (r->type == CP_TRACE_EXIT) {
        if (--w->depth == 0) {
            w->ended = 1;
            w->t_end = r->time_ms;
        }
    } else if (r->type == CP_TRACE_TAG) {
        if (r->param_type == 1 || r->param_type == 3) {
            const cp_blob_value *v = cp_blob_find_value(w->blob, r->param_type, r->ref_file, r->ref_offset);
            assert_non_null(v);
            w->sql_refs++;
            w->sql_resolved += v->resolved;
        }
    } else {
        return 0;
    }
    w->events++;
    return 0;
}

static void check_blob(const got_call *c, walk *out)
{
    cp_blob *b = NULL;
    char err[128];
    assert_int_equal(cp_blob_open(c->blob, c->blob_len, &b, err, sizeof err), CP_OK);
    walk w = {.blob = b};
    cp_dec_sink sink = {.ud = &w, .on_trace = w_trace};
    cp_dec *d = cp_dec_new(CP_STREAM_TRACE, NULL, &sink, 0);
    assert_int_equal(cp_dec_feed(d, b->trace, b->trace_len), CP_OK);
    assert_int_equal(cp_dec_finish(d), CP_OK); /* a clean trace file */
    cp_dec_free(d);
    assert_true(w.ended);
    assert_int_equal(w.first_method, c->method_id);
    assert_int_equal(w.enters, c->calls);
    assert_int_equal(w.t0, c->ts);
    assert_int_equal(w.t_end - w.t0, c->duration);
    assert_int_equal(b->nwords, 0); /* words stay in the catalog's dictionary */
    *out = w;
    cp_blob_free(b);
}

static int cmp_call(const void *x, const void *y)
{
    const got_call *a = x, *b = y;
    if (a->tfi != b->tfi) return a->tfi < b->tfi ? -1 : 1;
    if (a->off != b->off) return a->off < b->off ? -1 : 1;
    return (a->rec > b->rec) - (a->rec < b->rec);
}

/* Every sql/xml reference of the fixture's calls, and how many were resolved. */
static void count_refs(got *g, size_t *refs, size_t *resolved)
{
    *refs = *resolved = 0;
    for (size_t i = 0; i < g->n; i++) {
        walk w;
        check_blob(&g->c[i], &w);
        *refs += w.sql_refs;
        *resolved += w.sql_resolved;
    }
}

/* ---- tests -------------------------------------------------------------------------------- */

static void test_every_call_assembled(void **state)
{
    (void)state;
    static got g;
    run(&g, 1, 0, SIZE_MAX, NULL);
    assert_int_equal(g.n, NCALLS);
    for (size_t i = 0; i < g.n; i++) assert_null(g.c[i].reason);
    size_t refs, resolved;
    count_refs(&g, &refs, &resolved); /* every blob checked against its calls record */
    /* protocol.md §6.3: 36 xml + 45 sql references in this trace, all landing on values;
     * the calls' events include them all except those of root calls without a record */
    assert_true(refs > 0);
    assert_int_equal(resolved, refs);
    /* call#1 of test-service.calls.expected.txt */
    qsort(g.c, g.n, sizeof g.c[0], cmp_call);
    const got_call *c1 = &g.c[0];
    assert_int_equal(c1->off, 8);
    assert_int_equal(c1->rec, 0);
    assert_int_equal(c1->ts, 1690201583767);
    assert_int_equal(c1->duration, 1387);
    assert_string_equal(c1->thread, "main");
    assert_string_equal(c1->method,
                        "void com.netcracker.profiler.agent.Profiler.startDumper() (Profiler.java:20) [profiler-runtime.jar]");
    assert_string_equal(c1->params, "{}");
    got_free(&g);
}

static void test_params_resolved(void **state)
{
    (void)state;
    static got g;
    run(&g, 2, 0, SIZE_MAX, NULL);
    int seen = 0;
    for (size_t i = 0; i < g.n; i++) {
        if (g.c[i].off != 4472) continue; /* call#7 */
        seen = 1;
        assert_string_equal(g.c[i].params,
                            "{\"profiler.title\":[\"GET /actuator/health, client: 192.168.206.37\"],"
                            "\"web.method\":[\"GET\"],"
                            "\"web.remote.addr\":[\"192.168.206.37\"],"
                            "\"web.url\":[\"http://10.131.130.171:8180/actuator/health\"]}");
        assert_string_equal(g.c[i].thread, "http-nio-8180-exec-1");
        assert_int_equal(g.c[i].error, 0);
    }
    assert_true(seen);
    got_free(&g);
}

/* The `sql` tag (ui.md §3.3): set exactly on the calls whose blob holds a value of the
 * sql stream (kind 3); xml values alone do not set it. The fixture has both kinds. */
static void test_sql_flag(void **state)
{
    (void)state;
    static got g;
    run(&g, 1, 0, SIZE_MAX, NULL);
    size_t with_sql = 0, xml_only = 0, without = 0;
    for (size_t i = 0; i < g.n; i++) {
        int has_sql = 0, has_xml = 0;
        if (g.c[i].blob) {
            cp_blob *b = NULL;
            char err[128];
            assert_int_equal(cp_blob_open(g.c[i].blob, g.c[i].blob_len, &b, err, sizeof err), CP_OK);
            for (size_t k = 0; k < b->nvalues; k++) {
                has_sql |= b->values[k].kind == 3;
                has_xml |= b->values[k].kind == 1;
            }
            cp_blob_free(b);
        }
        assert_int_equal(g.c[i].sql, has_sql);
        with_sql += has_sql;
        xml_only += has_xml && !has_sql;
        without += !has_sql;
    }
    assert_true(with_sql > 0);
    assert_true(without > 0);
    (void)xml_only;
    got_free(&g);
}

/* Calls before their traces, and sql/xml values arriving late, give the same blobs. */
static void test_order_independent(void **state)
{
    (void)state;
    static got a, b;
    run(&a, 3, 0, SIZE_MAX, NULL);
    cp_asm_limits lim;
    cp_asm_limits_default(&lim);
    lim.ref_wait_ms = 1000000; /* words and values arriving late are waited for */
    run(&b, 4, 1, SIZE_MAX, &lim);
    assert_int_equal(a.n, NCALLS);
    assert_int_equal(b.n, NCALLS);
    qsort(a.c, a.n, sizeof a.c[0], cmp_call);
    qsort(b.c, b.n, sizeof b.c[0], cmp_call);
    for (size_t i = 0; i < a.n; i++) {
        assert_int_equal(cmp_call(&a.c[i], &b.c[i]), 0);
        assert_null(b.c[i].reason);
        assert_int_equal(a.c[i].blob_len, b.c[i].blob_len);
        assert_memory_equal(a.c[i].blob, b.c[i].blob, a.c[i].blob_len);
        assert_string_equal(a.c[i].params, b.c[i].params);
        assert_int_equal(a.c[i].suspend, b.c[i].suspend);
        assert_int_equal(a.c[i].sql, b.c[i].sql);
    }
    got_free(&a);
    got_free(&b);
}

/* A trace cut halfway: every call is still stored; those after the cut say why. */
static void test_cut_trace_keeps_calls(void **state)
{
    (void)state;
    static got g;
    run(&g, 5, 0, fx.trace.len / 2, NULL);
    assert_int_equal(g.n, NCALLS);
    size_t with = 0, incomplete = 0, not_found = 0;
    for (size_t i = 0; i < g.n; i++) {
        if (!g.c[i].reason) {
            walk w;
            check_blob(&g.c[i], &w);
            with++;
        } else if (!strcmp(g.c[i].reason, CP_TRACE_INCOMPLETE)) {
            incomplete++;
        } else {
            assert_string_equal(g.c[i].reason, CP_TRACE_NOT_FOUND);
            not_found++;
        }
    }
    assert_true(with > 0);
    assert_true(incomplete + not_found > 0);
    assert_int_equal(with + incomplete + not_found, NCALLS);
    got_free(&g);
}

/* Waiting is bounded: with a zero trace wait, calls whose trace never came go out at the
 * next pump instead of at the end. */
static void test_trace_wait_bound(void **state)
{
    (void)state;
    static got g;
    cp_asm_limits lim;
    cp_asm_limits_default(&lim);
    lim.trace_wait_ms = 10;
    feeder f = {.a = new_asm(&g, &lim), .now = 1000};
    cp_buf_init(&f.utf8);
    stream_feed s;
    sf_init(&s, CP_STREAM_CALLS, &fx.calls, NULL, &f);
    while (sf_step(&s, 100000)) {}
    assert_int_equal(cp_asm_pending(f.a), NCALLS);
    assert_int_equal(cp_asm_next_deadline(f.a), 1010);
    assert_int_equal(cp_asm_pump(f.a, 1005, 0), CP_OK);
    assert_int_equal(g.n, 0);
    assert_int_equal(cp_asm_pump(f.a, 1010, 0), CP_OK);
    assert_int_equal(g.n, NCALLS);
    for (size_t i = 0; i < g.n; i++) assert_string_equal(g.c[i].reason, CP_TRACE_NOT_FOUND);
    cp_asm_free(f.a);
    cp_buf_free(&f.utf8);
    got_free(&g);
}

/* The whole trace before any calls record, as an agent's flush cycle sends them: root
 * calls the agent did not persist (call.info with no tags after it) are not kept; the
 * 45 persisted ones are, and once their calls records came nothing waits any more --
 * so exactly the unpersisted ones were dropped, and none of them had a record. */
static void test_unpersisted_roots_not_kept(void **state)
{
    (void)state;
    static got g;
    feeder f = {.a = new_asm(&g, NULL), .now = 1000};
    cp_buf_init(&f.utf8);
    stream_feed s[6];
    feeds_init(s, &fx.trace, &f);
    for (int i = 0; i < 5; i++) while (sf_step(&s[i], 4096)) {}
    cp_asm_stats st;
    cp_asm_get_stats(f.a, &st);
    /* this trace has 85 root calls, 45 of them persisted (their calls records) */
    assert_int_equal(st.extents, 85);
    assert_int_equal(st.extents_unpersisted, 40);
    assert_int_equal(st.extents_live, NCALLS);
    assert_int_equal(st.extents_dropped, 0);
    assert_false(cp_asm_idle(f.a));            /* complete extents wait for their records */
    assert_true(cp_asm_waiting_bytes(f.a) >= NCALLS * 64);
    while (sf_step(&s[5], 4096)) assert_int_equal(cp_asm_pump(f.a, ++f.now, 0), CP_OK);
    assert_int_equal(g.n, NCALLS);
    for (size_t i = 0; i < g.n; i++) {
        assert_null(g.c[i].reason); /* every persisted call found its extent */
        walk w;
        check_blob(&g.c[i], &w);
    }
    assert_true(cp_asm_idle(f.a)); /* no complete extent left unclaimed, no call waiting */
    assert_true(cp_asm_waiting_bytes(f.a) < 1024); /* the rings are let go (a scratch array stays) */
    cp_asm_free(f.a);
    cp_buf_free(&f.utf8);
    got_free(&g);
}

/* The resolved-value cache: a value is kept on its second read, within the thread's pool;
 * without room values are read again, with the same calls coming out. */
static void test_value_cache(void **state)
{
    (void)state;
    static got g;
    size_t refs, resolved;
    cp_membudget roomy = {0};   /* no budget */
    values_pool = &roomy;
    run(&g, 1, 0, SIZE_MAX, NULL);
    count_refs(&g, &refs, &resolved);
    assert_int_equal(resolved, refs);
    cp_asm_stats kept = run_stats;
    assert_true(kept.values_cached > 0);        /* the fixture's sql statements repeat */
    assert_true(kept.mem_values > 0);
    assert_int_equal(roomy.used, 0);            /* the assembler's cache went with it */
    assert_int_equal(roomy.refused, 0);
    got_free(&g);

    cp_membudget tight = {.budget = 1};         /* room for nothing */
    values_pool = &tight;
    run(&g, 1, 0, SIZE_MAX, NULL);
    size_t refs2, resolved2;
    count_refs(&g, &refs2, &resolved2);
    assert_int_equal(refs2, refs);
    assert_int_equal(resolved2, resolved);      /* the same values, read again */
    assert_int_equal(run_stats.values_cached, 0);
    assert_int_equal(run_stats.mem_values, 0);
    assert_int_equal(run_stats.values_read, kept.values_read + kept.values_cached);
    assert_true(tight.refused > 0);
    assert_int_equal(tight.used, 0);
    values_pool = NULL;
    got_free(&g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_call_assembled), cmocka_unit_test(test_params_resolved),
        cmocka_unit_test(test_order_independent),    cmocka_unit_test(test_cut_trace_keeps_calls),
        cmocka_unit_test(test_trace_wait_bound),     cmocka_unit_test(test_unpersisted_roots_not_kept),
        cmocka_unit_test(test_value_cache),          cmocka_unit_test(test_sql_flag),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
