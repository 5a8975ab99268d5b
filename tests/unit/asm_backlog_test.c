/* asm_backlog_test.c -- call assembly (src/model/asm.c) when the trace runs far ahead of
 * the calls records that claim it, as it does under load: the agent flushes its streams
 * one after the other and waits for each stream's acks (protocol.md §3.10), so a whole
 * flush cycle of trace is stored before its calls records arrive.
 *
 * The streams come from the emulator's generator (src/agent, the bytes `cloudprof
 * emulate` sends). Every call must come out with the same blob whether its calls record
 * came right after its chunk (the reference) or after the whole trace; the complete
 * extents waiting in between must cost well under 150 bytes each (the slim form); the
 * memory must go back once they are claimed, also when one extent is never claimed and
 * stays at the head of the slim ring; and the max_extents bound drops the oldest. The
 * far-ahead run keeps its words in a shared pool (cp_wordpool), the reference its own. */
#include "testutil.h"

#include "agent/cp_agent.h"
#include "model/cp_asm.h"
#include "model/cp_model.h"
#include "streams/cp_streams.h"

#include <stdlib.h>
#include <string.h>

#define T0 1700000000000LL

typedef struct streams {
    cp_buf file[CP_AGENT_NSTREAMS];
    uint64_t calls;             /* calls records in file[CP_AGENT_CALLS] */
} streams;

/* N calls of one emulated agent (depth 3: sql and xml references in some of them). */
static void generate(streams *s, uint32_t n, uint64_t seed)
{
    memset(s, 0, sizeof *s);
    cp_agent_gen_opts o;
    cp_agent_gen_opts_default(&o);
    o.trace_depth = 3;
    cp_agent_gen *g = cp_agent_gen_new(&o, seed);
    assert_non_null(g);
    cp_agent_gen_reset(g, 0);
    for (int k = 0; k < CP_AGENT_NSTREAMS; k++)
        assert_int_equal(cp_agent_gen_open(g, (cp_agent_stream)k, 0, T0), CP_OK);
    for (uint32_t done = 0; done < n; done += 500) {
        assert_int_equal(cp_agent_gen_calls(g, 500, T0 + done), CP_OK);
        assert_int_equal(cp_agent_gen_flush_all(g), CP_OK);
    }
    for (int k = 0; k < CP_AGENT_NSTREAMS; k++) {
        size_t len;
        const uint8_t *p = cp_agent_gen_pending(g, (cp_agent_stream)k, &len);
        cp_buf_append(&s->file[k], p, len);
        cp_agent_gen_consume(g, (cp_agent_stream)k, len);
    }
    cp_agent_gen_stats st;
    cp_agent_gen_get_stats(g, &st);
    s->calls = st.records;
    assert_true(s->calls >= n);
    cp_agent_gen_free(g);
}

static void streams_free(streams *s)
{
    for (int k = 0; k < CP_AGENT_NSTREAMS; k++) cp_buf_free(&s->file[k]);
}

/* ---- the assembler's side: files fully stored, calls collected by their key ------------- */

typedef struct out_call {
    int32_t tfi, off, rec;
    uint8_t *blob;
    size_t blob_len;
    const char *reason;
} out_call;

typedef struct run {
    const streams *s;
    cp_asm *a;
    cp_buf utf8;
    out_call *c;
    size_t n, cap;
    uint64_t skip_calls;        /* calls records not given to the assembler (the first ones) */
    uint64_t seen_calls;
} run;

static const cp_buf *file_of(run *r, cp_stream_kind kind, int32_t idx)
{
    if (idx != 1) return NULL;
    for (int k = 0; k < CP_AGENT_NSTREAMS; k++)
        if (cp_agent_stream_kind((cp_agent_stream)k, 0) == kind) return &r->s->file[k];
    return NULL;
}

static int64_t io_size(void *ud, cp_stream_kind kind, int32_t idx)
{
    const cp_buf *b = file_of(ud, kind, idx);
    return b ? (int64_t)b->len : -1;
}

static long io_read(void *ud, cp_stream_kind kind, int32_t idx, uint64_t off, void *buf, size_t n)
{
    const cp_buf *b = file_of(ud, kind, idx);
    assert_non_null(b);
    assert_true(off + n <= b->len);
    memcpy(buf, b->data + off, n);
    return (long)n;
}

static int io_emit(void *ud, const cp_call *c)
{
    run *r = ud;
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 1024;
        r->c = realloc(r->c, r->cap * sizeof *r->c);
        assert_non_null(r->c);
    }
    out_call *o = &r->c[r->n++];
    memset(o, 0, sizeof *o);
    o->tfi = c->trace_file_index, o->off = c->buffer_offset, o->rec = c->record_index;
    o->reason = c->trace_reason;
    if (c->trace) {
        o->blob = malloc(c->trace_len);
        memcpy(o->blob, c->trace, c->trace_len);
        o->blob_len = c->trace_len;
    }
    return 0;
}

static int s_word(void *ud, const cp_word_rec *w)
{
    run *r = ud;
    cp_buf_reset(&r->utf8);
    assert_int_equal(cp_str16_to_utf8(&r->utf8, w->word), CP_OK);
    return cp_asm_word(r->a, w->id, (const char *)r->utf8.data, r->utf8.len) != CP_OK;
}
static int s_pause(void *ud, const cp_suspend_rec *p) { return cp_asm_pause(((run *)ud)->a, p) != CP_OK; }
static int s_trace(void *ud, const cp_trace_rec *t) { return cp_asm_trace(((run *)ud)->a, 1, t, 1000) != CP_OK; }
static int s_call(void *ud, const cp_call_rec *c)
{
    run *r = ud;
    if (r->seen_calls++ < r->skip_calls) return 0;
    return cp_asm_call(r->a, c, 1000) != CP_OK;
}

static void run_init(run *r, const streams *s, const cp_asm_limits *lim, cp_wordpool *words)
{
    memset(r, 0, sizeof *r);
    r->s = s;
    cp_buf_init(&r->utf8);
    cp_asm_pod pod = {"ns", "svc", "pod-1", T0};
    cp_asm_io io = {.ud = r, .read = io_read, .size = io_size, .emit = io_emit, .words = words};
    r->a = cp_asm_new(&pod, lim, &io);
    assert_non_null(r->a);
}

/* Decodes stream k from byte `from` to `to` into the assembler. */
typedef struct feed {
    cp_dec *dec[CP_AGENT_NSTREAMS];
    size_t pos[CP_AGENT_NSTREAMS];
} feed;

static void feed_init(feed *f, run *r)
{
    memset(f, 0, sizeof *f);
    cp_dec_sink sink = {.ud = r, .on_word = s_word, .on_suspend = s_pause, .on_trace = s_trace, .on_call = s_call};
    for (int k = 0; k < CP_AGENT_NSTREAMS; k++)
        f->dec[k] = cp_dec_new(cp_agent_stream_kind((cp_agent_stream)k, 0), NULL, &sink, 0);
}

static void feed_to(feed *f, run *r, int k, size_t to)
{
    const cp_buf *b = &r->s->file[k];
    if (to > b->len) to = b->len;
    if (to > f->pos[k]) assert_int_equal(cp_dec_feed(f->dec[k], b->data + f->pos[k], to - f->pos[k]), CP_OK);
    f->pos[k] = to;
}

static void feed_free(feed *f)
{
    for (int k = 0; k < CP_AGENT_NSTREAMS; k++) cp_dec_free(f->dec[k]);
}

/* The words, values and pauses first (the agent flushes them before they are needed). */
static void feed_side_streams(feed *f, run *r)
{
    static const cp_agent_stream side[] = {CP_AGENT_DICT, CP_AGENT_SUSPEND, CP_AGENT_PARAMS, CP_AGENT_SQL,
                                           CP_AGENT_XML};
    for (size_t i = 0; i < CP_ARRAY_LEN(side); i++) feed_to(f, r, side[i], SIZE_MAX);
}

static void run_finish(run *r)
{
    assert_int_equal(cp_asm_pump(r->a, 2000, 1), CP_OK);
    assert_int_equal(cp_asm_pending(r->a), 0);
}

static void run_free(run *r)
{
    for (size_t i = 0; i < r->n; i++) free(r->c[i].blob);
    free(r->c);
    cp_asm_free(r->a);
    cp_buf_free(&r->utf8);
}

static int cmp_out(const void *x, const void *y)
{
    const out_call *a = x, *b = y;
    if (a->tfi != b->tfi) return a->tfi < b->tfi ? -1 : 1;
    if (a->off != b->off) return a->off < b->off ? -1 : 1;
    return (a->rec > b->rec) - (a->rec < b->rec);
}

/* The reference: trace and calls in small interleaved slices (calls close behind). */
static void reference(const streams *s, run *r)
{
    run_init(r, s, NULL, NULL);
    feed f;
    feed_init(&f, r);
    feed_side_streams(&f, r);
    size_t tl = s->file[CP_AGENT_TRACE].len, cl = s->file[CP_AGENT_CALLS].len;
    for (size_t step = 1; step <= 400; step++) {
        feed_to(&f, r, CP_AGENT_TRACE, tl * step / 400);
        feed_to(&f, r, CP_AGENT_CALLS, cl * step / 400);
        assert_int_equal(cp_asm_pump(r->a, 1000, 0), CP_OK);
    }
    run_finish(r);
    feed_free(&f);
    qsort(r->c, r->n, sizeof *r->c, cmp_out);
}

/* ---- tests ------------------------------------------------------------------------------- */

/* The whole trace first, then the calls: same blobs as the reference; the waiting
 * extents are slim; their memory goes back once claimed. */
static void test_trace_far_ahead(void **state)
{
    (void)state;
    const uint32_t n = test_quick() ? 6000 : 30000;
    streams s;
    generate(&s, n, 7);
    run ref;
    reference(&s, &ref);
    assert_int_equal(ref.n, s.calls);

    run r; /* its words in a pool, the reference's its own */
    cp_wordpool *pool = cp_wordpool_new();
    run_init(&r, &s, NULL, pool);
    feed f;
    feed_init(&f, &r);
    feed_side_streams(&f, &r);
    assert_true(cp_wordpool_words(pool) > 100);
    cp_asm_stats before, ahead, after;
    cp_asm_get_stats(r.a, &before);
    feed_to(&f, &r, CP_AGENT_TRACE, SIZE_MAX);
    cp_asm_get_stats(r.a, &ahead);
    assert_true(ahead.extents_live >= s.calls); /* every root call waits for its record */
    double per = (double)(ahead.mem_extents - before.mem_extents) / (double)ahead.extents_live;
    print_message("%zu extents waiting: %.1f bytes each\n", ahead.extents_live, per);
    /* 64 bytes an entry, 8 a reference (~2.5 a call here), 4-byte slots at most 2/3 full,
     * rings grown by half: 92 bytes at full rings, ~140 right after a growth; it was ~370
     * (an extent, its segment array and its map entry) */
    assert_true(per < 150.0);
    feed_to(&f, &r, CP_AGENT_CALLS, SIZE_MAX);
    run_finish(&r);
    cp_asm_get_stats(r.a, &after);
    assert_int_equal(after.extents_live, 0);
    print_message("extents' memory: %zu bytes before, %zu ahead, %zu after\n", before.mem_extents, ahead.mem_extents,
                  after.mem_extents);
    assert_true(after.mem_extents < 16 * 1024); /* the rings gave their memory back */
    assert_true(ahead.memory - ahead.mem_extents < 4 * (ahead.mem_extents / 10)); /* extents were the bulk */
    feed_free(&f);

    assert_int_equal(r.n, ref.n);
    qsort(r.c, r.n, sizeof *r.c, cmp_out);
    size_t with_trace = 0;
    for (size_t i = 0; i < r.n; i++) {
        assert_int_equal(cmp_out(&r.c[i], &ref.c[i]), 0);
        assert_null(r.c[i].reason);
        assert_null(ref.c[i].reason);
        assert_int_equal(r.c[i].blob_len, ref.c[i].blob_len);
        assert_memory_equal(r.c[i].blob, ref.c[i].blob, r.c[i].blob_len);
        with_trace++;
    }
    assert_int_equal(with_trace, s.calls);
    run_free(&r);
    assert_int_equal(cp_wordpool_words(pool), 0); /* the assembler's words went with it */
    cp_wordpool_free(pool);
    run_free(&ref);
    streams_free(&s);
}

/* The oldest extent is never claimed (its calls record is lost): it stays at the head of
 * the ring while the others are claimed behind it; the ring squeezes the dead out instead
 * of growing, and gives its memory back. */
static void test_unclaimed_head(void **state)
{
    (void)state;
    const uint32_t n = test_quick() ? 4000 : 20000;
    streams s;
    generate(&s, n, 11);
    run r;
    run_init(&r, &s, NULL, NULL);
    r.skip_calls = 1;
    feed f;
    feed_init(&f, &r);
    feed_side_streams(&f, &r);
    cp_asm_stats st;
    /* in slices, calls close behind: the ring turns over many times behind its head */
    size_t tl = s.file[CP_AGENT_TRACE].len, cl = s.file[CP_AGENT_CALLS].len;
    size_t peak = 0;
    for (size_t step = 1; step <= 200; step++) {
        feed_to(&f, &r, CP_AGENT_TRACE, tl * step / 200);
        feed_to(&f, &r, CP_AGENT_CALLS, cl * step / 200);
        assert_int_equal(cp_asm_pump(r.a, 1000, 0), CP_OK);
        cp_asm_get_stats(r.a, &st);
        if (st.mem_extents > peak) peak = st.mem_extents;
    }
    cp_asm_get_stats(r.a, &st);
    assert_true(st.extents_live >= 1);
    assert_true(st.extents_live < 200); /* only the unclaimed one and a few not yet claimed */
    print_message("extents' memory: peak %zu bytes, %zu at the end\n", peak, st.mem_extents);
    assert_true(peak < 256 * 1024); /* the ring squeezed the claimed ones out behind its head */
    assert_true(st.mem_extents < 16 * 1024);
    run_finish(&r);
    feed_free(&f);
    assert_int_equal(r.n, s.calls - 1);
    for (size_t i = 0; i < r.n; i++) assert_null(r.c[i].reason);
    run_free(&r);
    streams_free(&s);
}

/* max_extents: the oldest unclaimed extents go first; their calls come out without a
 * trace (CP_TRACE_NOT_FOUND), the newest ones with it. */
static void test_max_extents(void **state)
{
    (void)state;
    streams s;
    generate(&s, 3000, 13);
    run ref;
    reference(&s, &ref);
    cp_asm_limits lim;
    cp_asm_limits_default(&lim);
    lim.max_extents = 1000;
    run r;
    run_init(&r, &s, &lim, NULL);
    feed f;
    feed_init(&f, &r);
    feed_side_streams(&f, &r);
    feed_to(&f, &r, CP_AGENT_TRACE, SIZE_MAX);
    cp_asm_stats st;
    cp_asm_get_stats(r.a, &st);
    assert_true(st.extents_live <= 1000);
    assert_true(st.extents_dropped >= s.calls - 1000);
    feed_to(&f, &r, CP_AGENT_CALLS, SIZE_MAX);
    run_finish(&r);
    feed_free(&f);
    assert_int_equal(r.n, s.calls);
    qsort(r.c, r.n, sizeof *r.c, cmp_out);
    size_t with = 0, without = 0;
    for (size_t i = 0; i < r.n; i++) {
        if (r.c[i].reason) {
            assert_string_equal(r.c[i].reason, CP_TRACE_NOT_FOUND);
            without++;
        } else {
            assert_int_equal(r.c[i].blob_len, ref.c[i].blob_len);
            assert_memory_equal(r.c[i].blob, ref.c[i].blob, r.c[i].blob_len);
            with++;
        }
    }
    print_message("%zu with a trace, %zu without\n", with, without);
    assert_true(with > 0 && with <= 1000);
    assert_int_equal(with + without, s.calls);
    run_free(&r);
    run_free(&ref);
    streams_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_trace_far_ahead),
        cmocka_unit_test(test_unclaimed_head),
        cmocka_unit_test(test_max_extents),
    };
    return cmocka_run_group_tests_name("asm backlog", tests, NULL, NULL);
}
