/* agent_gen_test.c -- the emulated agent's generator (src/agent) produces valid streams.
 *
 * A small simulated sender takes the generator's pending bytes into stream files the way
 * the driver does (open at INIT, rotation to a server-given seq, a reset for a new
 * connection), then every file is decoded with cp_dec and cross-checked as protocol.md
 * §6.3 checks the fixtures: each calls record points at an ENTER of its method at its
 * start time, the root's depth-0 EXIT is `duration` later, the ENTERs walked equal
 * `calls`; every sql/xml reference lands on a value start; every id used is in the
 * dictionary. Also: posDictionary, determinism per seed, and the ack accounting. */
#include "testutil.h"

#include "agent/cp_agent.h"
#include "streams/cp_streams.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS CP_AGENT_NSTREAMS
#define T0 1700000100000LL

/* ---- simulated sender: stream files per connection ------------------------------------- */

typedef struct sfile {
    int32_t index;
    cp_buf b;
} sfile;

typedef struct conn {
    int pos;
    sfile files[NS][64];
    size_t nfiles[NS];
} conn;

static void take(cp_agent_gen *g, conn *c, int s, size_t max)
{
    size_t len;
    const uint8_t *p = cp_agent_gen_pending(g, (cp_agent_stream)s, &len);
    if (len > max) len = max;
    if (!len) return;
    assert_true(c->nfiles[s] > 0);
    cp_buf_append(&c->files[s][c->nfiles[s] - 1].b, p, len);
    cp_agent_gen_consume(g, (cp_agent_stream)s, len);
}

static void take_all(cp_agent_gen *g, conn *c)
{
    for (int s = 0; s < NS; s++) take(g, c, s, SIZE_MAX);
}

static void open_stream(cp_agent_gen *g, conn *c, int s, int32_t seq, int64_t now)
{
    assert_true(c->nfiles[s] < 64);
    sfile *f = &c->files[s][c->nfiles[s]++];
    f->index = seq + 1;
    cp_buf_init(&f->b);
    assert_int_equal(cp_agent_gen_open(g, (cp_agent_stream)s, seq, now), CP_OK);
    assert_int_equal(cp_agent_gen_file_index(g, (cp_agent_stream)s), seq + 1);
}

/* A rotation as the driver does it: commit the stream, take its bytes, open seq. */
static void rotate(cp_agent_gen *g, conn *c, int s, int32_t seq, int64_t now)
{
    assert_int_equal(cp_agent_gen_flush(g, (cp_agent_stream)s), CP_OK);
    take(g, c, s, SIZE_MAX);
    /* opening with bytes of the old file still pending is refused */
    open_stream(g, c, s, seq, now);
}

static void sim_connect(cp_agent_gen *g, conn *c, int pos, int64_t now)
{
    memset(c, 0, sizeof *c);
    c->pos = pos;
    cp_agent_gen_reset(g, pos);
    for (int s = 0; s < NS; s++) open_stream(g, c, s, 0, now);
}

static void conn_free(conn *c)
{
    for (int s = 0; s < NS; s++)
        for (size_t i = 0; i < c->nfiles[s]; i++) cp_buf_free(&c->files[s][i].b);
}

/* ---- decoded facts ---------------------------------------------------------------------- */

typedef struct ev {
    int32_t file;
    uint64_t chunk_offset;
    uint32_t index;
    cp_trace_rec_type type;
    int64_t time;
    int32_t id;
    uint8_t ptype;
    int32_t ref_file, ref_offset;
} ev;

typedef struct rec {
    cp_call_rec r;
    int32_t params[16];
    uint32_t nparams;
} rec;

typedef struct loc {
    int32_t file;
    uint64_t offset;
} loc;

typedef struct facts {
    ev *ev; size_t nev, cev;
    rec *rec; size_t nrec, crec;
    loc *sql; size_t nsql, csql;
    loc *xml; size_t nxml, cxml;
    int32_t *words; size_t nwords, cwords;  /* ids seen (dictionary: positions) */
    char call_red_seen, call_info_seen;
    int32_t call_info_id;
    size_t nparams, nsuspend;
    int32_t cur_file;
} facts;

#define PUSH(arr, n, cap)                                                                      \
    do {                                                                                       \
        if ((n) == (cap)) {                                                                    \
            (cap) = (cap) ? (cap) * 2 : 256;                                                   \
            (arr) = realloc((arr), (cap) * sizeof *(arr));                                     \
            assert_non_null(arr);                                                              \
        }                                                                                      \
    } while (0)

static int on_trace(void *ud, const cp_trace_rec *t)
{
    facts *f = ud;
    if (t->type != CP_TRACE_ENTER && t->type != CP_TRACE_EXIT && t->type != CP_TRACE_TAG &&
        t->type != CP_TRACE_CHUNK_BEGIN)
        return 0;
    PUSH(f->ev, f->nev, f->cev);
    ev *e = &f->ev[f->nev++];
    e->file = f->cur_file;
    e->chunk_offset = t->chunk_offset;
    e->index = t->index;
    e->type = t->type;
    e->time = t->time_ms;
    e->id = t->id;
    e->ptype = t->param_type;
    e->ref_file = t->ref_file;
    e->ref_offset = t->ref_offset;
    return 0;
}

static int on_call(void *ud, const cp_call_rec *r)
{
    facts *f = ud;
    PUSH(f->rec, f->nrec, f->crec);
    rec *c = &f->rec[f->nrec++];
    c->r = *r;
    c->r.trace_file_index = r->trace_file_index;
    c->nparams = r->nparams < 16 ? r->nparams : 16;
    for (uint32_t i = 0; i < c->nparams; i++) {
        c->params[i] = r->params[i].id;
        assert_int_equal(r->params[i].nvalues, 1);
    }
    c->r.params = NULL;
    c->r.thread_name.be = NULL;
    return 0;
}

static int on_value(void *ud, const cp_value_rec *v)
{
    facts *f = ud;
    loc **arr = f->cur_file < 0 ? &f->xml : &f->sql;
    size_t *n = f->cur_file < 0 ? &f->nxml : &f->nsql, *cap = f->cur_file < 0 ? &f->cxml : &f->csql;
    PUSH(*arr, *n, *cap);
    (*arr)[(*n)++] = (loc){f->cur_file < 0 ? -f->cur_file : f->cur_file, v->offset};
    return 0;
}

static int on_word(void *ud, const cp_word_rec *w)
{
    facts *f = ud;
    PUSH(f->words, f->nwords, f->cwords);
    f->words[f->nwords++] = w->id;
    if (cp_str16_eq_ascii(w->word, "call.red")) f->call_red_seen = 1;
    if (cp_str16_eq_ascii(w->word, "call.info")) {
        f->call_info_seen = 1;
        f->call_info_id = w->id;
    }
    return 0;
}

static int on_param(void *ud, const cp_param_rec *p)
{
    (void)p;
    ((facts *)ud)->nparams++;
    return 0;
}

static int on_suspend(void *ud, const cp_suspend_rec *s)
{
    (void)s;
    ((facts *)ud)->nsuspend++;
    return 0;
}

/* Decodes one file whole; it must end on a record boundary with no error. */
static void decode(cp_stream_kind kind, const cp_buf *b, facts *f, int32_t first_id)
{
    cp_dec_sink sink = {.ud = f,
                        .on_trace = on_trace,
                        .on_call = on_call,
                        .on_value = on_value,
                        .on_word = on_word,
                        .on_param = on_param,
                        .on_suspend = on_suspend};
    cp_dec *d = cp_dec_new(kind, NULL, &sink, first_id);
    assert_non_null(d);
    int st = cp_dec_feed(d, b->data, b->len);
    if (st == CP_OK) st = cp_dec_finish(d);
    if (st != CP_OK) fail_msg("%s: %s (%s)", cp_stream_kind_name(kind), cp_strstatus(st), cp_dec_error(d));
    assert_int_equal(cp_dec_committed(d), b->len);
    cp_dec_free(d);
}

static int cmp_loc(const loc *a, int32_t file, uint64_t off)
{
    if (a->file != file) return a->file < file ? -1 : 1;
    return a->offset < off ? -1 : a->offset > off ? 1 : 0;
}

static int has_loc(const loc *v, size_t n, int32_t file, uint64_t off)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = cmp_loc(&v[mid], file, off);
        if (!c) return 1;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

/* The event at (file, chunk offset, index) in the collected trace, or -1. Events are
 * stored in file-index then offset order, so a binary search finds the chunk start. */
static long find_event(const facts *f, int32_t file, uint64_t chunk, uint32_t index)
{
    size_t lo = 0, hi = f->nev;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const ev *e = &f->ev[mid];
        int c = e->file != file ? (e->file < file ? -1 : 1)
                : e->chunk_offset != chunk ? (e->chunk_offset < chunk ? -1 : 1)
                : e->type == CP_TRACE_CHUNK_BEGIN ? 0 : 1;
        if (!c) {
            size_t at = mid + 1 + index; /* after the CHUNK_BEGIN record */
            if (at >= f->nev || f->ev[at].chunk_offset != chunk || f->ev[at].file != file ||
                f->ev[at].index != index)
                return -1;
            return (long)at;
        }
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

static int cmp_files(const void *a, const void *b)
{
    const sfile *x = a, *y = b;
    return (x->index > y->index) - (x->index < y->index);
}

typedef struct summary {
    size_t records, calls_bytes, trace_bytes, words, sql_refs, xml_refs, enters, params;
} summary;

/* Decodes and cross-checks every file of one connection. */
static void verify(conn *c, summary *sum)
{
    facts f;
    memset(&f, 0, sizeof f);
    for (int s = 0; s < NS; s++) qsort(c->files[s], c->nfiles[s], sizeof(sfile), cmp_files);

    int32_t first_id = 0;
    for (size_t i = 0; i < c->nfiles[CP_AGENT_DICT]; i++) {
        size_t before = f.nwords;
        decode(cp_agent_stream_kind(CP_AGENT_DICT, c->pos), &c->files[CP_AGENT_DICT][i].b, &f, first_id);
        first_id += (int32_t)(f.nwords - before);
    }
    assert_true(f.call_red_seen && f.call_info_seen);
    int32_t nids = 0;
    for (size_t i = 0; i < f.nwords; i++) { /* ids 0..n-1, each once, in order */
        assert_int_equal(f.words[i], (int32_t)i);
        nids = (int32_t)i + 1;
    }
    for (int s = 0; s < NS; s++) {
        if (s == CP_AGENT_DICT) continue;
        for (size_t i = 0; i < c->nfiles[s]; i++) {
            sfile *file = &c->files[s][i];
            f.cur_file = s == CP_AGENT_XML ? -file->index : file->index;
            decode(cp_agent_stream_kind((cp_agent_stream)s, c->pos), &file->b, &f, 0);
            if (s == CP_AGENT_TRACE) sum->trace_bytes += file->b.len;
            if (s == CP_AGENT_CALLS) sum->calls_bytes += file->b.len;
        }
    }
    assert_true(f.nparams > 0);
    assert_true(f.nsuspend > 0);

    /* every trace reference and id */
    for (size_t i = 0; i < f.nev; i++) {
        const ev *e = &f.ev[i];
        if (e->type == CP_TRACE_ENTER || e->type == CP_TRACE_TAG) assert_in_range(e->id, 0, nids - 1);
        if (e->type != CP_TRACE_TAG) continue;
        if (e->ptype == 3) {
            if (!has_loc(f.sql, f.nsql, e->ref_file, (uint64_t)e->ref_offset))
                fail_msg("sql reference %d:%d is not a value start", e->ref_file, e->ref_offset);
            sum->sql_refs++;
        } else if (e->ptype == 1) {
            if (!has_loc(f.xml, f.nxml, e->ref_file, (uint64_t)e->ref_offset))
                fail_msg("xml reference %d:%d is not a value start", e->ref_file, e->ref_offset);
            sum->xml_refs++;
        }
    }

    /* every calls record against the trace */
    for (size_t k = 0; k < f.nrec; k++) {
        const cp_call_rec *r = &f.rec[k].r;
        assert_in_range(r->method, 0, nids - 1);
        for (uint32_t i = 0; i < f.rec[k].nparams; i++) assert_in_range(f.rec[k].params[i], 0, nids - 1);
        sum->params += f.rec[k].nparams;
        long at = find_event(&f, r->trace_file_index, (uint64_t)r->buffer_offset, (uint32_t)r->record_index);
        if (at < 0)
            fail_msg("call %zu: no event %d in chunk %d of trace file %d", k, r->record_index, r->buffer_offset,
                     r->trace_file_index);
        const ev *e = &f.ev[at];
        assert_int_equal(e->type, CP_TRACE_ENTER);
        assert_int_equal(e->id, r->method);
        assert_int_equal(e->time, r->start_ms);
        int depth = 0, enters = 0, closed = 0;
        for (size_t j = (size_t)at; j < f.nev && f.ev[j].chunk_offset == e->chunk_offset && f.ev[j].file == e->file;
             j++) {
            if (f.ev[j].type == CP_TRACE_CHUNK_BEGIN) break;
            if (f.ev[j].type == CP_TRACE_ENTER) {
                depth++;
                enters++;
            } else if (f.ev[j].type == CP_TRACE_EXIT && --depth == 0) {
                assert_int_equal(f.ev[j].time, r->start_ms + r->duration_ms);
                closed = 1;
                break;
            }
        }
        if (!closed) fail_msg("call %zu: no depth-0 EXIT in its chunk", k);
        assert_int_equal(enters, r->calls);
        assert_true(r->calls > 1 || r->duration_ms > 20); /* the persistence gate */
        sum->enters += (size_t)enters;
    }
    sum->records += f.nrec;
    sum->words = f.nwords;
    free(f.ev);
    free(f.rec);
    free(f.sql);
    free(f.xml);
    free(f.words);
}

/* ---- the scenario -------------------------------------------------------------------------- */

typedef struct run {
    conn c[2];
    cp_agent_gen_stats st;
    cp_buf all;            /* every byte of every file, for determinism */
    uint64_t ends_checked;
} run;

static uint64_t calls_total(const conn *c)
{
    uint64_t n = 0;
    for (size_t i = 0; i < c->nfiles[CP_AGENT_CALLS]; i++) n += c->files[CP_AGENT_CALLS][i].b.len;
    return n;
}

/* Thousands of calls over two connections, with rotations of every stream (some to a
 * seq the "server" chose higher than asked) and random partial takes. */
static void scenario(run *rn, uint64_t seed, int pos, int depth)
{
    cp_agent_gen_opts o;
    cp_agent_gen_opts_default(&o);
    o.service = "orders-service";
    o.node_name = "orders-service-7c9d8f6b5-k2x9p";
    o.timer_start_ms = T0 - 120000;
    o.trace_depth = depth;
    o.max_threads = 32;
    cp_agent_gen *g = cp_agent_gen_new(&o, seed);
    assert_non_null(g);
    uint64_t rs = seed ^ 0xABCDEF;
    int64_t now = T0;
    memset(rn, 0, sizeof *rn);
    cp_buf_init(&rn->all);
    sim_connect(g, &rn->c[0], pos, now);
    int cur = 0;
    int32_t seq[NS] = {0};
    for (int round = 0; round < 400; round++) {
        conn *c = &rn->c[cur];
        assert_int_equal(cp_agent_gen_calls(g, 1 + (uint32_t)(test_rand(&rs) % 40), now), CP_OK);
        now += (int64_t)(test_rand(&rs) % 60);
        for (int s = 0; s < NS; s++) take(g, c, s, test_rand(&rs) % 3000);
        if (round % 25 == 24) assert_int_equal(cp_agent_gen_flush_all(g), CP_OK);
        if (round % 37 == 36) { /* rotate one stream; the server may skip seqs */
            int s = (int)(test_rand(&rs) % NS);
            seq[s] += 1 + (int32_t)(test_rand(&rs) % 2);
            rotate(g, c, s, seq[s], now);
        }
        if (round == 200) { /* a new connection: whole records out, the rest is dropped */
            take_all(g, c);
            cur = 1;
            memset(seq, 0, sizeof seq);
            sim_connect(g, &rn->c[1], pos, now);
        }
    }
    /* the ack accounting: each record end of this connection's calls files */
    assert_int_equal(cp_agent_gen_flush_all(g), CP_OK);
    take_all(g, &rn->c[1]);
    uint64_t total = calls_total(&rn->c[1]);
    uint64_t first = cp_agent_gen_calls_acked(g, 15); /* nothing ends inside the 16-byte header */
    assert_int_equal(first, 0);
    uint64_t part = cp_agent_gen_calls_acked(g, total / 2);
    uint64_t rest = cp_agent_gen_calls_acked(g, total);
    rn->ends_checked = part + rest;
    assert_true(part > 0 && rest > 0);
    cp_agent_gen_get_stats(g, &rn->st);
    for (int k = 0; k < 2; k++)
        for (int s = 0; s < NS; s++)
            for (size_t i = 0; i < rn->c[k].nfiles[s]; i++)
                cp_buf_append(&rn->all, rn->c[k].files[s][i].b.data, rn->c[k].files[s][i].b.len);
    cp_agent_gen_free(g);
}

static void run_free(run *rn)
{
    conn_free(&rn->c[0]);
    conn_free(&rn->c[1]);
    cp_buf_free(&rn->all);
}

static void check_run(uint64_t seed, int pos, int depth)
{
    run rn;
    scenario(&rn, seed, pos, depth);
    summary s0 = {0}, s1 = {0};
    verify(&rn.c[0], &s0);
    verify(&rn.c[1], &s1);
    for (int s = 0; s < NS; s++) /* rotations happened */
        assert_true(rn.c[0].nfiles[s] + rn.c[1].nfiles[s] >= 2);
    assert_int_equal(s0.records + s1.records, rn.st.records);
    assert_int_equal(rn.st.records + rn.st.discarded, rn.st.calls);
    assert_true(rn.st.discarded > 0);
    assert_int_equal(rn.ends_checked, s1.records);
    assert_true(s0.sql_refs > 0 && s1.sql_refs > 0);
    if (depth > 1) assert_true(s0.xml_refs + s1.xml_refs > 0);
    size_t recs = s0.records + s1.records;
    print_message("seed %llu pos %d depth %d: %llu calls, %zu records, %u words, %.1f trace B/call, "
                  "%.1f calls B/call, %.2f ENTERs/call, %.2f params/call, %zu sql + %zu xml refs\n",
                  (unsigned long long)seed, pos, depth, (unsigned long long)rn.st.calls, recs, rn.st.words,
                  (double)(s0.trace_bytes + s1.trace_bytes) / (double)recs,
                  (double)(s0.calls_bytes + s1.calls_bytes) / (double)recs,
                  (double)(s0.enters + s1.enters) / (double)recs, (double)(s0.params + s1.params) / (double)recs,
                  s0.sql_refs + s1.sql_refs, s0.xml_refs + s1.xml_refs);
    /* modest volume per call (the benchmark's calibration) */
    assert_in_range((s0.trace_bytes + s1.trace_bytes) / recs, 40, 250);
    assert_in_range((s0.calls_bytes + s1.calls_bytes) / recs, 20, 80);
    run_free(&rn);
}

static void test_streams_decode_and_cross_check(void **state)
{
    (void)state;
    check_run(1, 0, 4);
    check_run(7, 0, 6);
}

static void test_pos_dictionary(void **state)
{
    (void)state;
    check_run(2, 1, 4);
}

static void test_root_only(void **state)
{
    (void)state;
    check_run(3, 0, 1);
}

static void test_deterministic(void **state)
{
    (void)state;
    run a, b, c;
    scenario(&a, 42, 0, 4);
    scenario(&b, 42, 0, 4);
    scenario(&c, 43, 0, 4);
    assert_int_equal(a.all.len, b.all.len);
    assert_memory_equal(a.all.data, b.all.data, a.all.len);
    assert_true(a.all.len != c.all.len || memcmp(a.all.data, c.all.data, a.all.len) != 0);
    run_free(&a);
    run_free(&b);
    run_free(&c);
}

/* Opening a file while the old one still has bytes pending is refused; generating before
 * every stream is open is refused. */
static void test_misuse(void **state)
{
    (void)state;
    cp_agent_gen_opts o;
    cp_agent_gen_opts_default(&o);
    cp_agent_gen *g = cp_agent_gen_new(&o, 9);
    assert_non_null(g);
    cp_agent_gen_reset(g, 0);
    assert_int_equal(cp_agent_gen_calls(g, 1, T0), CP_EINVAL);
    for (int s = 0; s < NS; s++) assert_int_equal(cp_agent_gen_open(g, (cp_agent_stream)s, 0, T0), CP_OK);
    assert_int_equal(cp_agent_gen_open(g, CP_AGENT_TRACE, 1, T0), CP_EINVAL); /* header pending */
    assert_int_equal(cp_agent_gen_calls(g, 10, T0), CP_OK);
    o.trace_depth = 0;
    assert_null(cp_agent_gen_new(&o, 9));
    cp_agent_gen_free(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_streams_decode_and_cross_check),
        cmocka_unit_test(test_pos_dictionary),
        cmocka_unit_test(test_root_only),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
