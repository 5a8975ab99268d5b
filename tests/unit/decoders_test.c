/* decoders_test.c -- known answers: every fixture stream decodes with nothing left over
 * and matches its .expected.txt field by field (protocol.md §6.1 says where an expected
 * file is defective or anonymised; there we check the correct decoding instead). */
#include "testutil.h"

#include "streams/cp_streams.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STREAMS "streams/"
#define V2 "conversations/agent-v2/"

/* ---- collecting sink: every record kept as decoded values -------------------------------- */

typedef struct word { int32_t id; char *text; } word;
typedef struct param { char *name; int index, list, order; char *sig; } param;
typedef struct value { uint64_t offset; char *text; } value;
typedef struct ev {
    cp_trace_rec_type type;
    uint64_t chunk_offset;
    int64_t thread_id, chunk_time, time_ms;
    uint32_t index, chunk_no;
    int32_t id, ref_file, ref_offset;
    uint8_t param_type;
    char *text;
} ev;
typedef struct call {
    cp_call_rec r;        /* scalar fields; pointers cleared */
    char *thread;
    char *params_go;      /* params printed like the expected file's Go map */
} call;

typedef struct got {
    word *w; size_t nw;
    param *p; size_t np;
    cp_suspend_rec *s; size_t ns;
    call *c; size_t nc;
    ev *e; size_t ne;
    value *v; size_t nv;
    uint32_t chunks;
} got;

#define PUSH(arr, n) (arr = realloc(arr, (n + 1) * sizeof *arr), &arr[n++])

static int g_word(void *ud, const cp_word_rec *r)
{
    got *g = ud;
    word *w = PUSH(g->w, g->nw);
    w->id = r->id;
    w->text = str16_dup(r->word);
    return 0;
}
static int g_param(void *ud, const cp_param_rec *r)
{
    got *g = ud;
    param *p = PUSH(g->p, g->np);
    p->name = str16_dup(r->name);
    p->index = r->index;
    p->list = r->list;
    p->order = r->order;
    p->sig = str16_dup(r->signature);
    return 0;
}
static int g_suspend(void *ud, const cp_suspend_rec *r)
{
    got *g = ud;
    *PUSH(g->s, g->ns) = *r;
    return 0;
}
static int cmp_param_id(const void *a, const void *b)
{
    const cp_call_param *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}
static int g_call(void *ud, const cp_call_rec *r)
{
    got *g = ud;
    call *c = PUSH(g->c, g->nc);
    c->r = *r;
    c->r.params = NULL;
    c->thread = str16_dup(r->thread_name);
    /* Go's fmt prints map[int][]string with keys sorted and slices space-joined */
    cp_call_param *ps = malloc((r->nparams + 1) * sizeof *ps);
    if (r->nparams) memcpy(ps, r->params, r->nparams * sizeof *ps);
    qsort(ps, r->nparams, sizeof *ps, cmp_param_id);
    cp_buf b;
    cp_buf_init(&b);
    cp_buf_puts(&b, "map[");
    for (uint32_t i = 0; i < r->nparams; i++) {
        cp_buf_printf(&b, "%s%d:[", i ? " " : "", ps[i].id);
        for (uint32_t k = 0; k < ps[i].nvalues; k++) {
            if (k) cp_buf_putc(&b, ' ');
            cp_str16_to_utf8(&b, ps[i].values[k]);
        }
        cp_buf_putc(&b, ']');
    }
    cp_buf_puts(&b, "]");
    cp_buf_putc(&b, 0);
    c->params_go = (char *)b.data;
    free(ps);
    return 0;
}
static int g_trace(void *ud, const cp_trace_rec *r)
{
    got *g = ud;
    if (r->type == CP_TRACE_CHUNK_BEGIN) g->chunks++;
    if (r->type == CP_TRACE_HEADER) return 0;
    ev *e = PUSH(g->e, g->ne);
    e->type = r->type;
    e->chunk_offset = r->chunk_offset;
    e->thread_id = r->thread_id;
    e->chunk_time = r->chunk_time_ms;
    e->time_ms = r->time_ms;
    e->index = r->index;
    e->chunk_no = g->chunks;
    e->id = r->id;
    e->param_type = r->param_type;
    e->ref_file = r->ref_file;
    e->ref_offset = r->ref_offset;
    e->text = r->type == CP_TRACE_TAG && (r->param_type == 0 || r->param_type == 2) ? str16_dup(r->value) : NULL;
    return 0;
}
static int g_value(void *ud, const cp_value_rec *r)
{
    got *g = ud;
    value *v = PUSH(g->v, g->nv);
    v->offset = r->offset;
    v->text = str16_dup(r->value);
    return 0;
}

static void got_free(got *g)
{
    for (size_t i = 0; i < g->nw; i++) free(g->w[i].text);
    for (size_t i = 0; i < g->np; i++) free(g->p[i].name), free(g->p[i].sig);
    for (size_t i = 0; i < g->nc; i++) free(g->c[i].thread), free(g->c[i].params_go);
    for (size_t i = 0; i < g->ne; i++) free(g->e[i].text);
    for (size_t i = 0; i < g->nv; i++) free(g->v[i].text);
    free(g->w), free(g->p), free(g->s), free(g->c), free(g->e), free(g->v);
    memset(g, 0, sizeof *g);
}

/* Decodes a whole fixture in one feed and asserts it ends exactly on a record boundary. */
static void decode_fixture(cp_stream_kind kind, const char *rel, got *g, cp_buf *data)
{
    memset(g, 0, sizeof *g);
    load_fixture(rel, data);
    cp_dec_sink sink = {g, g_word, g_param, g_suspend, g_call, g_trace, g_value};
    cp_dec *d = cp_dec_new(kind, NULL, &sink, 0);
    assert_non_null(d);
    int st = cp_dec_feed(d, data->data, data->len);
    if (st != CP_OK) fail_msg("%s: %s", rel, cp_dec_error(d));
    assert_int_equal(cp_dec_finish(d), CP_OK);
    assert_int_equal(cp_dec_committed(d), data->len); /* nothing left over */
    cp_dec_free(d);
}

static size_t expected_lines(const char *rel, cp_buf *text, char ***lines)
{
    load_fixture(rel, text);
    return split_lines((char *)text->data, text->len, lines);
}

/* ---- dictionary, params, sql, xml: exact ------------------------------------------------- */

static void test_dictionary(void **state)
{
    (void)state;
    got g;
    cp_buf data, text;
    char **lines;
    decode_fixture(CP_STREAM_DICTIONARY, STREAMS "test-service.dictionary.protocol", &g, &data);
    size_t n = expected_lines(STREAMS "test-service.dictionary.expected.txt", &text, &lines);
    assert_int_equal(n, 942);
    assert_int_equal(g.nw, 942);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(g.w[i].id, (int32_t)i);
        assert_string_equal(g.w[i].text, lines[i]);
    }
    assert_string_equal(g.w[0].text, "call.info");
    assert_string_equal(g.w[19].text, "profiler.title");
    free(lines);
    cp_buf_free(&text);
    cp_buf_free(&data);
    got_free(&g);
}

static void test_params(void **state)
{
    (void)state;
    got g;
    cp_buf data, text;
    char **lines;
    decode_fixture(CP_STREAM_PARAMS, STREAMS "test-service.params.protocol", &g, &data);
    size_t n = expected_lines(STREAMS "test-service.params.expected.txt", &text, &lines);
    assert_int_equal(n, 122);
    assert_int_equal(g.np, 122);
    for (size_t i = 0; i < n; i++) {
        char line[4096];
        snprintf(line, sizeof line, "%s [%s,%s,%d,%s]", g.p[i].name, g.p[i].index ? "true" : "false",
                 g.p[i].list ? "true" : "false", g.p[i].order, g.p[i].sig);
        assert_string_equal(line, lines[i]);
    }
    free(lines);
    cp_buf_free(&text);
    cp_buf_free(&data);
    got_free(&g);
}

static void check_values(cp_stream_kind kind, const char *stream, const char *expected, size_t count)
{
    got g;
    cp_buf data, text;
    decode_fixture(kind, stream, &g, &data);
    load_fixture(expected, &text);
    assert_int_equal(g.nv, count);
    cp_buf all;
    cp_buf_init(&all);
    uint64_t off = 0;
    for (size_t i = 0; i < g.nv; i++) {
        assert_int_equal(g.v[i].offset, off); /* offsets are where each varint length starts */
        cp_buf_puts(&all, g.v[i].text);
        cp_buf_putc(&all, '\n');
        cp_rd r;
        cp_rd_init(&r, data.data + off, data.len - off);
        cp_str16 s;
        assert_int_equal(cp_rd_str16(&r, UINT32_MAX, &s), CP_OK);
        off += r.pos;
    }
    assert_int_equal(all.len, text.len);
    assert_memory_equal(all.data, text.data, text.len);
    cp_buf_free(&all);
    cp_buf_free(&text);
    cp_buf_free(&data);
    got_free(&g);
}

static void test_sql(void **state)
{
    (void)state;
    check_values(CP_STREAM_SQL, STREAMS "test-service.sql.0.protocol", STREAMS "test-service.sql.expected.txt", 9);
}

static void test_xml(void **state)
{
    (void)state;
    check_values(CP_STREAM_XML, STREAMS "test-service.xml.0.protocol", STREAMS "test-service.xml.expected.txt", 36);
}

/* ---- suspend: the expected file is exact for its first 94 lines only (§6.1) ------------- */

static void test_suspend(void **state)
{
    (void)state;
    got g;
    cp_buf data, text;
    char **lines;
    decode_fixture(CP_STREAM_SUSPEND, STREAMS "test-service.suspend.protocol", &g, &data);
    size_t n = expected_lines(STREAMS "test-service.suspend.expected.txt", &text, &lines);
    assert_true(n >= 94);
    assert_int_equal(g.ns, 504);
    for (size_t i = 0; i < 94; i++) {
        long long end;
        int delta, dur;
        assert_int_equal(sscanf(lines[i], "%lld: %d, %d", &end, &delta, &dur), 3);
        assert_int_equal(g.s[i].end_ms, end);
        assert_int_equal(g.s[i].delta_ms, delta);
        assert_int_equal(g.s[i].duration_ms, dur);
    }
    /* the correct decode past the defective part */
    assert_int_equal(g.s[503].end_ms, 1690201726143LL);
    int64_t t = 1690201577657LL; /* base time, first 8 bytes of phrase 1 */
    for (size_t i = 0; i < g.ns; i++) {
        t += g.s[i].delta_ms;
        assert_int_equal(g.s[i].end_ms, t);
        assert_true(g.s[i].duration_ms >= 0);
    }
    free(lines);
    cp_buf_free(&text);
    cp_buf_free(&data);
    got_free(&g);
}

/* ---- calls: every column of every row -------------------------------------------------- */

static void test_calls(void **state)
{
    (void)state;
    got g;
    cp_buf data, text;
    char **lines;
    decode_fixture(CP_STREAM_CALLS, STREAMS "test-service.calls.0.protocol", &g, &data);
    size_t n = expected_lines(STREAMS "test-service.calls.expected.txt", &text, &lines);
    assert_int_equal(n, 46); /* header + 45 rows */
    assert_int_equal(g.nc, 45);
    int64_t t = 1690201585956LL; /* header start time */
    for (size_t i = 0; i < g.nc; i++) {
        const cp_call_rec *r = &g.c[i].r;
        char *f[22];
        size_t nf = 0;
        char *line = lines[i + 1], *save = NULL;
        for (char *tok = strtok_r(strchr(line, ':') + 1, ";", &save); tok && nf < 22; tok = strtok_r(NULL, ";", &save))
            f[nf++] = tok;
        assert_int_equal(nf, 21);
        long long v[19];
        for (int k = 0; k < 19; k++) v[k] = atoll(f[k]);
        assert_int_equal(r->time_delta, v[0]);
        assert_int_equal(r->cpu_time, v[1]);
        assert_int_equal(r->wait_time, v[2]);
        assert_int_equal(r->memory_used, v[3]);
        assert_int_equal(r->method, v[4]);
        assert_int_equal(r->duration_ms, v[5]);
        assert_int_equal(r->queue_wait_ms, v[6]);
        assert_int_equal(v[7], 0); /* suspend: not computed by that decoder */
        assert_int_equal(r->calls, v[8]);
        assert_int_equal(r->trace_file_index, v[9]);
        assert_int_equal(r->buffer_offset, v[10]);
        assert_int_equal(r->record_index, v[11]);
        assert_int_equal(r->transactions, v[12]);
        assert_int_equal(r->logs_generated, v[13]);
        assert_int_equal(r->logs_written, v[14]);
        assert_int_equal(r->file_read, v[15]);
        assert_int_equal(r->file_written, v[16]);
        assert_int_equal(r->net_read, v[17]);
        assert_int_equal(r->net_written, v[18]);
        char *name = f[19];
        while (*name == ' ') name++;
        assert_string_equal(g.c[i].thread, name);
        char *map = f[20];
        while (*map == ' ') map++;
        assert_go_map_equal(g.c[i].params_go, map);
        t += r->time_delta; /* absolute start accumulates from the previous record */
        assert_int_equal(r->start_ms, t);
        assert_int_equal(r->format, 4);
    }
    assert_int_equal(g.c[0].r.start_ms, 1690201583767LL);
    assert_int_equal(g.c[1].r.start_ms, 1690201632362LL);
    free(lines);
    cp_buf_free(&text);
    cp_buf_free(&data);
    got_free(&g);
}

/* ---- trace: every chunk header and every event line ------------------------------------- */

static void test_trace(void **state)
{
    (void)state;
    got g;
    cp_buf data, text;
    char **lines;
    decode_fixture(CP_STREAM_TRACE, STREAMS "test-service.traces.0.protocol", &g, &data);
    size_t n = expected_lines(STREAMS "test-service.traces.expected.txt", &text, &lines);
    assert_int_equal(g.chunks, 69);
    size_t e = 0, blocks = 0, events = 0;
    uint32_t chunk_events = 0;
    for (size_t i = 0; i < n; i++) {
        const char *l = lines[i];
        if (!*l) continue;
        if (!strncmp(l, "block #", 7)) {
            unsigned bn;
            long long tid, ctime, off;
            assert_int_equal(sscanf(l, "block #%u. threadId=%lld, real time: %lld", &bn, &tid, &ctime), 3);
            assert_non_null(strstr(l, "offset="));
            off = atoll(strstr(l, "offset=") + 7);
            blocks++;
            assert_int_equal(bn, blocks);
            while (e < g.ne && g.e[e].type != CP_TRACE_CHUNK_BEGIN) e++;
            assert_true(e < g.ne);
            assert_int_equal(g.e[e].chunk_no, bn);
            assert_int_equal(g.e[e].thread_id, tid);
            assert_int_equal(g.e[e].chunk_time, ctime);
            assert_int_equal(g.e[e].chunk_offset, off);
            chunk_events = 0;
            continue;
        }
        unsigned cn, idx;
        if (sscanf(l, "trace %u. %u tag lines", &cn, &idx) == 2) {
            /* the trailer counts the FINISH byte too */
            assert_int_equal(idx, chunk_events + 1);
            assert_true(e < g.ne);
            assert_int_equal(g.e[e].type, CP_TRACE_CHUNK_END);
            assert_int_equal(g.e[e].index, chunk_events);
            e++;
            continue;
        }
        const char *br = strchr(l, '[');
        assert_non_null(br);
        assert_int_equal(sscanf(br, "[%u:%u]", &cn, &idx), 2);
        while (e < g.ne && (g.e[e].type == CP_TRACE_CHUNK_BEGIN || g.e[e].type == CP_TRACE_CHUNK_END)) e++;
        assert_true(e < g.ne);
        const ev *x = &g.e[e++];
        events++;
        chunk_events++;
        assert_int_equal(x->chunk_no, cn);
        assert_int_equal(x->index, idx);
        if (!strncmp(l, "ERROR", 5)) {
            assert_int_equal(x->type, CP_TRACE_EXIT); /* exit of a call opened in an earlier chunk */
        } else if (!strncmp(l, "call", 4)) {
            if (strstr(l, "<-") || strstr(l, "] tagId=0|'call.info'")) {
                assert_int_equal(x->type, CP_TRACE_EXIT);
            } else {
                assert_int_equal(x->type, CP_TRACE_ENTER);
                assert_int_equal(x->id, atoi(strstr(l, "tagId=") + 6));
            }
        } else {
            assert_true(!strncmp(l, "trace [", 7));
            assert_int_equal(x->type, CP_TRACE_TAG);
            assert_int_equal(x->id, atoi(strstr(l, "tagId=") + 6));
            const char *sv = strstr(l, ", string value '");
            if (sv) {
                assert_true(x->param_type == 0 || x->param_type == 2);
                sv += strlen(", string value '");
                size_t len = strlen(sv);
                assert_true(len >= 1 && sv[len - 1] == '\'');
                if (!strstr(sv, "test.org")) {
                    assert_int_equal(strlen(x->text), len - 1);
                    assert_memory_equal(x->text, sv, len - 1);
                }
            } else {
                int f, o;
                const char *cl = strstr(l, "clob: traceIdx=");
                assert_non_null(cl);
                assert_int_equal(sscanf(cl, "clob: traceIdx=%d, offset=%d", &f, &o), 2);
                assert_true(x->param_type == 1 || x->param_type == 3);
                assert_int_equal(x->ref_file, f);
                assert_int_equal(x->ref_offset, o);
            }
        }
    }
    assert_int_equal(blocks, 69);
    assert_int_equal(events, 3521);
    free(lines);
    cp_buf_free(&text);
    cp_buf_free(&data);
    got_free(&g);
}

/* ---- cross-stream facts of §6.3 ----------------------------------------------------------- */

/* For every call: bufferOffset hits a chunk start, the event at recordIndex is the root
 * ENTER of the call's method at the call's start time, and walking the thread's chunks
 * to the depth-0 EXIT gives exactly `duration` and `calls` ENTERs. */
static void check_calls_against_trace(const char *calls_rel, const char *trace_rel, size_t ncalls, size_t multi_min)
{
    got c, t;
    cp_buf cd, td;
    decode_fixture(CP_STREAM_CALLS, calls_rel, &c, &cd);
    decode_fixture(CP_STREAM_TRACE, trace_rel, &t, &td);
    assert_int_equal(c.nc, ncalls);
    size_t multi = 0;
    for (size_t i = 0; i < c.nc; i++) {
        const cp_call_rec *r = &c.c[i].r;
        assert_int_equal(r->trace_file_index, 1);
        size_t k = 0;
        while (k < t.ne && !(t.e[k].chunk_offset == (uint64_t)r->buffer_offset && t.e[k].index == (uint32_t)r->record_index &&
                             t.e[k].type != CP_TRACE_CHUNK_BEGIN))
            k++;
        assert_true(k < t.ne);
        const ev *root = &t.e[k];
        assert_int_equal(root->type, CP_TRACE_ENTER);
        assert_int_equal(root->id, r->method);
        assert_int_equal(root->time_ms, r->start_ms);
        int depth = 0, enters = 0;
        uint64_t first_chunk = root->chunk_offset;
        int crossed = 0;
        for (; k < t.ne; k++) {
            const ev *x = &t.e[k];
            if (x->thread_id != root->thread_id || x->type == CP_TRACE_CHUNK_BEGIN || x->type == CP_TRACE_CHUNK_END)
                continue;
            if (x->chunk_offset != first_chunk) crossed = 1;
            if (x->type == CP_TRACE_ENTER) depth++, enters++;
            else if (x->type == CP_TRACE_EXIT && --depth == 0) break;
        }
        assert_true(k < t.ne);
        assert_int_equal(t.e[k].time_ms - root->time_ms, r->duration_ms);
        assert_int_equal(enters, r->calls);
        multi += crossed;
    }
    assert_true(multi >= multi_min);
    cp_buf_free(&cd);
    cp_buf_free(&td);
    got_free(&c);
    got_free(&t);
}

static void test_calls_point_into_trace(void **state)
{
    (void)state;
    check_calls_against_trace(STREAMS "test-service.calls.0.protocol", STREAMS "test-service.traces.0.protocol", 45, 3);
    check_calls_against_trace(V2 "stream.calls.bin", V2 "stream.trace.bin", 452, 0);
}

/* Every sql/xml reference in the trace lands on a value start of file 1. */
static void check_refs(const char *trace_rel, const char *sql_rel, const char *xml_rel, size_t nsql, size_t nxml)
{
    got t, s, x;
    cp_buf td, sd, xd;
    decode_fixture(CP_STREAM_TRACE, trace_rel, &t, &td);
    decode_fixture(CP_STREAM_SQL, sql_rel, &s, &sd);
    decode_fixture(CP_STREAM_XML, xml_rel, &x, &xd);
    size_t ns = 0, nx = 0;
    for (size_t i = 0; i < t.ne; i++) {
        const ev *e = &t.e[i];
        if (e->type != CP_TRACE_TAG || (e->param_type != 1 && e->param_type != 3)) continue;
        const got *target = e->param_type == 3 ? &s : &x;
        assert_int_equal(e->ref_file, 1);
        int hit = 0;
        for (size_t k = 0; k < target->nv && !hit; k++) hit = target->v[k].offset == (uint64_t)e->ref_offset;
        assert_true(hit);
        if (e->param_type == 3) ns++;
        else nx++;
    }
    assert_int_equal(ns, nsql);
    assert_int_equal(nx, nxml);
    cp_buf_free(&td), cp_buf_free(&sd), cp_buf_free(&xd);
    got_free(&t), got_free(&s), got_free(&x);
}

static void test_big_value_refs(void **state)
{
    (void)state;
    check_refs(STREAMS "test-service.traces.0.protocol", STREAMS "test-service.sql.0.protocol",
               STREAMS "test-service.xml.0.protocol", 45, 36);
    check_refs(V2 "stream.trace.bin", V2 "stream.sql.bin", V2 "stream.xml.bin", 1355, 46);
}

/* agent-v2 facts of §6.1 / §5 */
static void test_agent_v2_streams(void **state)
{
    (void)state;
    got g;
    cp_buf d;
    decode_fixture(CP_STREAM_DICTIONARY, V2 "stream.dictionary.bin", &g, &d);
    assert_int_equal(g.nw, 56);
    assert_string_equal(g.w[0].text, "call.info");
    assert_string_equal(g.w[1].text, "profiler.title");
    assert_string_equal(g.w[2].text, "call.red");
    got_free(&g), cp_buf_free(&d);
    decode_fixture(CP_STREAM_PARAMS, V2 "stream.params.bin", &g, &d);
    assert_int_equal(g.np, 14);
    got_free(&g), cp_buf_free(&d);
    decode_fixture(CP_STREAM_SUSPEND, V2 "stream.suspend.bin", &g, &d);
    assert_int_equal(g.ns, 2);
    assert_int_equal(g.s[0].delta_ms, 13);
    assert_int_equal(g.s[0].duration_ms, 10);
    assert_int_equal(g.s[0].end_ms, 1795327868368LL + 13);
    assert_int_equal(g.s[1].delta_ms, 115);
    assert_int_equal(g.s[1].duration_ms, 7);
    assert_int_equal(g.s[1].end_ms, 1795327868368LL + 13 + 115);
    got_free(&g), cp_buf_free(&d);
    decode_fixture(CP_STREAM_CALLS, V2 "stream.calls.bin", &g, &d);
    assert_int_equal(g.nc, 452);
    size_t with_params = 0;
    for (size_t i = 0; i < g.nc; i++) with_params += g.c[i].r.nparams > 0;
    assert_int_equal(with_params, 451);
    got_free(&g), cp_buf_free(&d);
    decode_fixture(CP_STREAM_TRACE, V2 "stream.trace.bin", &g, &d);
    assert_int_equal(g.chunks, 12);
    size_t events = 0;
    for (size_t i = 0; i < g.ne; i++) events += g.e[i].type >= CP_TRACE_ENTER && g.e[i].type <= CP_TRACE_TAG;
    assert_int_equal(events, 5986);
    got_free(&g), cp_buf_free(&d);
    decode_fixture(CP_STREAM_SQL, V2 "stream.sql.bin", &g, &d);
    assert_int_equal(g.nv, 8);
    got_free(&g), cp_buf_free(&d);
    decode_fixture(CP_STREAM_XML, V2 "stream.xml.bin", &g, &d);
    assert_int_equal(g.nv, 46);
    got_free(&g), cp_buf_free(&d);
}

/* ---- resumable at any byte boundary -------------------------------------------------------- */

/* A digest sink: every record's fields appended to a buffer, so two decodes can be compared. */
static int d_word(void *ud, const cp_word_rec *r)
{
    cp_buf_printf(ud, "w%d:", r->id);
    return cp_str16_to_utf8(ud, r->word);
}
static int d_param(void *ud, const cp_param_rec *r)
{
    cp_buf_printf(ud, "p%d%d%d:", r->index, r->list, r->order);
    cp_str16_to_utf8(ud, r->name);
    return cp_str16_to_utf8(ud, r->signature);
}
static int d_suspend(void *ud, const cp_suspend_rec *r)
{
    return cp_buf_printf(ud, "s%lld,%d,%d;", (long long)r->end_ms, r->delta_ms, r->duration_ms);
}
static int d_call(void *ud, const cp_call_rec *r)
{
    cp_buf_printf(ud, "c%lld,%d,%d,%d,%d,%d,%d,%d,%d,%lld,%lld,%lld:", (long long)r->start_ms, r->method, r->duration_ms,
                  r->calls, r->thread_index, r->trace_file_index, r->buffer_offset, r->record_index, r->transactions,
                  (long long)r->cpu_time, (long long)r->memory_used, (long long)r->net_written);
    cp_str16_to_utf8(ud, r->thread_name);
    for (uint32_t i = 0; i < r->nparams; i++) {
        cp_buf_printf(ud, "|%d=", r->params[i].id);
        for (uint32_t k = 0; k < r->params[i].nvalues; k++) cp_str16_to_utf8(ud, r->params[i].values[k]);
    }
    return 0;
}
static int d_trace(void *ud, const cp_trace_rec *r)
{
    cp_buf_printf(ud, "t%d,%llu,%lld,%u,%lld,%d,%d,%d,%d:", r->type, (unsigned long long)r->offset,
                  (long long)r->thread_id, r->index, (long long)r->time_ms, r->id, r->param_type, r->ref_file,
                  r->ref_offset);
    return cp_str16_to_utf8(ud, r->value);
}
static int d_value(void *ud, const cp_value_rec *r)
{
    cp_buf_printf(ud, "v%llu:", (unsigned long long)r->offset);
    return cp_str16_to_utf8(ud, r->value);
}

/* Decodes data fed in pieces whose sizes come from sizes() and returns the digest. */
static void digest(cp_stream_kind kind, const cp_buf *data, uint64_t seed, size_t max_piece, cp_buf *out)
{
    cp_buf_init(out);
    cp_dec_sink sink = {out, d_word, d_param, d_suspend, d_call, d_trace, d_value};
    cp_dec *d = cp_dec_new(kind, NULL, &sink, 0);
    size_t pos = 0;
    while (pos < data->len) {
        size_t piece = max_piece == 1 ? 1 : 1 + test_rand(&seed) % max_piece;
        if (piece > data->len - pos) piece = data->len - pos;
        assert_int_equal(cp_dec_feed(d, data->data + pos, piece), CP_OK);
        pos += piece;
    }
    assert_int_equal(cp_dec_finish(d), CP_OK);
    assert_int_equal(cp_dec_committed(d), data->len);
    cp_dec_free(d);
}

static void test_any_split(void **state)
{
    (void)state;
    static const struct {
        cp_stream_kind kind;
        const char *rel;
    } files[] = {
        {CP_STREAM_DICTIONARY, STREAMS "test-service.dictionary.protocol"},
        {CP_STREAM_PARAMS, STREAMS "test-service.params.protocol"},
        {CP_STREAM_SUSPEND, STREAMS "test-service.suspend.protocol"},
        {CP_STREAM_CALLS, STREAMS "test-service.calls.0.protocol"},
        {CP_STREAM_TRACE, STREAMS "test-service.traces.0.protocol"},
        {CP_STREAM_SQL, STREAMS "test-service.sql.0.protocol"},
        {CP_STREAM_XML, STREAMS "test-service.xml.0.protocol"},
        {CP_STREAM_CALLS, V2 "stream.calls.bin"},
        {CP_STREAM_TRACE, V2 "stream.trace.bin"},
        {CP_STREAM_DICTIONARY, V2 "stream.dictionary.bin"},
    };
    for (size_t f = 0; f < CP_ARRAY_LEN(files); f++) {
        cp_buf data, whole, part;
        load_fixture(files[f].rel, &data);
        digest(files[f].kind, &data, 0, data.len, &whole); /* max piece = whole file: first piece random */
        cp_buf one;
        cp_buf_init(&one);
        cp_dec_sink sink = {&one, d_word, d_param, d_suspend, d_call, d_trace, d_value};
        cp_dec *d = cp_dec_new(files[f].kind, NULL, &sink, 0);
        assert_int_equal(cp_dec_feed(d, data.data, data.len), CP_OK);
        cp_dec_free(d);
        if (one.len != whole.len) fail_msg("%s: split decode differs", files[f].rel);
        assert_memory_equal(one.data, whole.data, one.len);
        digest(files[f].kind, &data, 0, 1, &part); /* byte by byte */
        if (part.len != one.len) fail_msg("%s: byte-by-byte decode differs", files[f].rel);
        assert_memory_equal(part.data, one.data, one.len);
        cp_buf_free(&part);
        for (uint64_t seed = 1; seed <= 8; seed++) {
            digest(files[f].kind, &data, seed, 1 + seed * 300, &part);
            assert_int_equal(part.len, one.len);
            assert_memory_equal(part.data, one.data, one.len);
            cp_buf_free(&part);
        }
        cp_buf_free(&one);
        cp_buf_free(&whole);
        cp_buf_free(&data);
    }
}

/* Cut every fixture at every position of its first 2 KiB: the prefix decodes to a prefix of
 * the records, committed never passes the cut, and finish says whether the cut was clean. */
static void test_torn_tails(void **state)
{
    (void)state;
    cp_buf data;
    load_fixture(STREAMS "test-service.calls.0.protocol", &data);
    size_t clean = 0;
    for (size_t cut = 0; cut <= 2048; cut++) {
        cp_dec *d = cp_dec_new(CP_STREAM_CALLS, NULL, NULL, 0);
        assert_int_equal(cp_dec_feed(d, data.data, cut), CP_OK);
        uint64_t c = cp_dec_committed(d);
        assert_true(c <= cut);
        int st = cp_dec_finish(d);
        if (c == cut) {
            assert_int_equal(st, CP_OK);
            clean++;
        } else {
            assert_int_equal(st, CP_AGAIN);
        }
        /* the committed prefix alone decodes cleanly to the same number of records */
        cp_dec *d2 = cp_dec_new(CP_STREAM_CALLS, NULL, NULL, 0);
        assert_int_equal(cp_dec_feed(d2, data.data, c), CP_OK);
        assert_int_equal(cp_dec_finish(d2), CP_OK);
        assert_int_equal(cp_dec_records(d2), cp_dec_records(d));
        cp_dec_free(d2);
        cp_dec_free(d);
    }
    assert_true(clean > 5);
    cp_buf_free(&data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dictionary),
        cmocka_unit_test(test_params),
        cmocka_unit_test(test_sql),
        cmocka_unit_test(test_xml),
        cmocka_unit_test(test_suspend),
        cmocka_unit_test(test_calls),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_calls_point_into_trace),
        cmocka_unit_test(test_big_value_refs),
        cmocka_unit_test(test_agent_v2_streams),
        cmocka_unit_test(test_any_split),
        cmocka_unit_test(test_torn_tails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
