/* gen.c -- the generator's stream files: pending buffers, phrase framing (§4.3), file
 * headers at open (§4.1, §5), the dictionary, params, suspend, sql dedup, resets, and the
 * ack accounting of calls records. The calls themselves are built in call.c. */
#include "agent_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* Most record bytes a phrase-stream record can take (a dictionary word with its id). */
#define PHRASE_RECORD_MAX (5 + GEN_MAX_STR)
/* The agent emits a phrase once the buffer passes MAX_PHRASE_SIZE - 200 at a commit. */
#define PHRASE_EMIT_AT (CP_AGENT_PHRASE_MAX - 200)
/* Calls whose records wait for their acks, at most (the driver's window keeps far below). */
#define GEN_MAX_ENDS (1u << 22)

static const struct {
    const char *name;
    cp_stream_kind kind;
} stream_info[CP_AGENT_NSTREAMS] = {
    [CP_AGENT_TRACE] = {"trace", CP_STREAM_TRACE},  [CP_AGENT_CALLS] = {"calls", CP_STREAM_CALLS},
    [CP_AGENT_XML] = {"xml", CP_STREAM_XML},        [CP_AGENT_SQL] = {"sql", CP_STREAM_SQL},
    [CP_AGENT_DICT] = {"dictionary", CP_STREAM_DICTIONARY},
    [CP_AGENT_SUSPEND] = {"suspend", CP_STREAM_SUSPEND}, [CP_AGENT_PARAMS] = {"params", CP_STREAM_PARAMS},
};

const char *cp_agent_stream_name(cp_agent_stream s, int pos)
{
    if (s == CP_AGENT_DICT && pos) return "posDictionary";
    return stream_info[s].name;
}

cp_stream_kind cp_agent_stream_kind(cp_agent_stream s, int pos)
{
    if (s == CP_AGENT_DICT && pos) return CP_STREAM_POSDICTIONARY;
    return stream_info[s].kind;
}

int cp_agent_stream_is_phrased(cp_agent_stream s)
{
    return s == CP_AGENT_DICT || s == CP_AGENT_SUSPEND || s == CP_AGENT_PARAMS;
}

/* ---- random numbers (splitmix64: tiny, good enough, deterministic) ------------------------ */

uint64_t gen_rand(cp_agent_gen *g)
{
    uint64_t z = (g->rng += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* ---- pending bytes ------------------------------------------------------------------------ */

uint8_t *gbuf_room(gbuf *q, size_t n)
{
    if (q->head && q->head >= q->b.len / 2) { /* compact: taken bytes are at least half */
        memmove(q->b.data, q->b.data + q->head, q->b.len - q->head);
        q->b.len -= q->head;
        q->head = 0;
    }
    if (cp_buf_reserve(&q->b, n) != CP_OK) return NULL;
    return q->b.data + q->b.len;
}

/* Room at the end of the stream's pending bytes (non-phrase streams). */
uint8_t *gen_room(cp_agent_gen *g, cp_agent_stream s, size_t n) { return gbuf_room(&g->f[s].pend, n); }

void gen_done(cp_agent_gen *g, cp_agent_stream s, const uint8_t *end)
{
    gen_file *f = &g->f[s];
    size_t n = (size_t)(end - (f->pend.b.data + f->pend.b.len));
    f->pend.b.len += n;
    f->size += n;
    f->produced += n;
    g->st.bytes[s] += n;
}

/* ---- phrases (§4.3): records go to the open phrase body; a phrase is emitted whole ------ */

static int phrase_emit(cp_agent_gen *g, cp_agent_stream s)
{
    gen_file *f = &g->f[s];
    if (!f->phrase.len) return CP_OK;
    uint8_t *p = gbuf_room(&f->pend, 4 + f->phrase.len);
    if (!p) return CP_ENOMEM;
    cp_put_be32(p, (uint32_t)f->phrase.len);
    memcpy(p + 4, f->phrase.data, f->phrase.len);
    f->pend.b.len += 4 + f->phrase.len;
    f->produced += 4 + f->phrase.len;
    g->st.bytes[s] += 4 + f->phrase.len;
    f->phrase.len = 0;
    return CP_OK;
}

/* Room for one record of at most n bytes in the open phrase; a full phrase goes first. */
static uint8_t *phrase_room(cp_agent_gen *g, cp_agent_stream s, size_t n)
{
    gen_file *f = &g->f[s];
    if (f->phrase.len + n > CP_AGENT_PHRASE_MAX - 1 && phrase_emit(g, s) != CP_OK) return NULL;
    if (cp_buf_reserve(&f->phrase, n) != CP_OK) return NULL;
    return f->phrase.data + f->phrase.len;
}

/* A commit point after the record that ends at `end`. */
static int phrase_done(cp_agent_gen *g, cp_agent_stream s, const uint8_t *end)
{
    gen_file *f = &g->f[s];
    size_t n = (size_t)(end - (f->phrase.data + f->phrase.len));
    f->phrase.len += n;
    f->size += n;
    return f->phrase.len >= PHRASE_EMIT_AT ? phrase_emit(g, s) : CP_OK;
}

/* ---- dictionary (§5.1) ---------------------------------------------------------------------- */

/* Appends the record of word `id` to the dictionary stream's open phrase. */
static int dict_write(cp_agent_gen *g, uint32_t id)
{
    char text[GEN_MAX_TEXT];
    const char *w = text;
    size_t n;
    if (id < GEN_WK_COUNT) {
        w = vocab_well_known((int)id);
        n = strlen(w);
    } else {
        n = vocab_method(g->word_method[id - GEN_WK_COUNT], g->pkg, text);
    }
    uint8_t *p = phrase_room(g, CP_AGENT_DICT, PHRASE_RECORD_MAX);
    if (!p) return CP_ENOMEM;
    if (g->pos) p = w_varint(p, id);
    p = w_str(p, w, n);
    return phrase_done(g, CP_AGENT_DICT, p);
}

/* The dictionary id of method m; a method used for the first time gets the next id and
 * its word is written to the dictionary stream (so the stream keeps growing a little). */
int32_t gen_method_id(cp_agent_gen *g, uint32_t m)
{
    if (g->method_id[m] >= 0) return g->method_id[m];
    uint32_t id = g->nwords;
    g->word_method[id - GEN_WK_COUNT] = m;
    g->method_id[m] = (int32_t)id;
    g->nwords++;
    return dict_write(g, id) == CP_OK ? (int32_t)id : -1;
}

/* ---- sql / xml values (§5.6) ---------------------------------------------------------------- */

/* The address of a deduplicated value: written to the sql stream the first time it is used
 * in the current sql file. */
int gen_sql_value(cp_agent_gen *g, gen_ref *ref, const char *text, size_t n)
{
    if (ref->epoch == g->sql_epoch) return CP_OK;
    gen_file *f = &g->f[CP_AGENT_SQL];
    uint8_t *p = gen_room(g, CP_AGENT_SQL, GEN_MAX_STR);
    if (!p) return CP_ENOMEM;
    ref->epoch = g->sql_epoch;
    ref->file = f->index;
    ref->off = (int32_t)f->size;
    gen_done(g, CP_AGENT_SQL, w_str(p, text, n));
    return CP_OK;
}

/* ---- suspend (§5.3) -------------------------------------------------------------------------- */

static int suspend_write(cp_agent_gen *g, int64_t end, int32_t duration)
{
    uint8_t *p = phrase_room(g, CP_AGENT_SUSPEND, 8 + 10);
    if (!p) return CP_ENOMEM;
    if (!g->suspend_header) { /* the base time lives in the first phrase, before record 1 */
        p = w_be64(p, g->pause_end);
        g->suspend_header = 1;
    }
    p = w_varint(p, (uint32_t)(end - g->pause_end));
    p = w_varint(p, (uint32_t)duration);
    g->pause_end = end;
    return phrase_done(g, CP_AGENT_SUSPEND, p);
}

/* JVM pauses every 0.3-3 s: mostly a few ms, sometimes a long GC. */
int gen_pauses(cp_agent_gen *g, int64_t now_ms)
{
    if (!g->next_pause || now_ms - g->next_pause > 10000) g->next_pause = now_ms + gen_below(g, 1000);
    while (g->next_pause <= now_ms) {
        uint32_t r = gen_below(g, 100);
        int32_t dur = r < 70 ? 1 + (int32_t)gen_below(g, 10) : r < 95 ? 10 + (int32_t)gen_below(g, 50)
                                                                      : 60 + (int32_t)gen_below(g, 340);
        int64_t end = g->next_pause;
        if (end <= g->pause_end) end = g->pause_end + 1;
        int st = suspend_write(g, end, dur);
        if (st != CP_OK) return st;
        g->next_pause = end + 300 + gen_below(g, 2700);
    }
    return CP_OK;
}

/* ---- params (§5.2): version byte and every record in one phrase ---------------------------- */

static int params_write(cp_agent_gen *g)
{
    uint8_t *p = phrase_room(g, CP_AGENT_PARAMS, 1);
    if (!p) return CP_ENOMEM;
    *p++ = 1;
    int st = phrase_done(g, CP_AGENT_PARAMS, p);
    for (size_t i = 0; st == CP_OK && i < vocab_nparams; i++) {
        const vocab_param *v = &vocab_params[i];
        const char *name = vocab_well_known(v->wk);
        if (!(p = phrase_room(g, CP_AGENT_PARAMS, 2 * GEN_MAX_STR + 8))) return CP_ENOMEM;
        p = w_str(p, name, strlen(name));
        *p++ = v->index;
        *p++ = v->list;
        p = w_varint(p, (uint32_t)v->order);
        p = w_str(p, v->signature, strlen(v->signature));
        st = phrase_done(g, CP_AGENT_PARAMS, p);
    }
    return st == CP_OK ? phrase_emit(g, CP_AGENT_PARAMS) : st;
}

/* ---- life cycle ------------------------------------------------------------------------------ */

void cp_agent_gen_opts_default(cp_agent_gen_opts *o)
{
    o->service = "demo-service";
    o->node_name = "demo-service-5d8f7c9b4-x2x7k";
    o->timer_start_ms = 1700000000000;
    o->trace_depth = 4;
    o->max_threads = 256;
}

/* The Java package segment of a service name: "orders-service" -> "orders". */
static void make_pkg(const char *service, char *out, size_t cap)
{
    size_t n = strlen(service);
    if (n > 8 && !strcmp(service + n - 8, "-service")) n -= 8;
    size_t j = 0;
    for (size_t i = 0; i < n && j + 1 < cap; i++) {
        char c = service[i];
        if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9' && j > 0)) out[j++] = c;
        else if (c >= 'A' && c <= 'Z') out[j++] = (char)(c | 0x20);
    }
    out[j] = 0;
    if (!j) snprintf(out, cap, "app");
}

cp_agent_gen *cp_agent_gen_new(const cp_agent_gen_opts *o, uint64_t seed)
{
    if (o->trace_depth < 1 || o->trace_depth > CP_AGENT_MAX_DEPTH || o->max_threads < KIND_COUNT ||
        o->max_threads > CP_AGENT_MAX_THREADS || strlen(o->service) >= 96 || strlen(o->node_name) >= 96)
        return NULL;
    cp_agent_gen *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->o = *o;
    strcpy(g->service, o->service);
    strcpy(g->node, o->node_name);
    g->o.service = g->service;
    g->o.node_name = g->node;
    make_pkg(g->service, g->pkg, sizeof g->pkg);
    g->rng = seed;
    g->method_id = malloc(VOCAB_METHODS * sizeof *g->method_id);
    g->word_method = malloc(VOCAB_METHODS * sizeof *g->word_method);
    g->th = calloc(o->max_threads, sizeof *g->th);
    if (!g->method_id || !g->word_method || !g->th) {
        cp_agent_gen_free(g);
        return NULL;
    }
    for (uint32_t i = 0; i < VOCAB_METHODS; i++) g->method_id[i] = -1;
    g->nwords = GEN_WK_COUNT;
    for (int s = 0; s < CP_AGENT_NSTREAMS; s++) {
        cp_buf_init(&g->f[s].pend.b);
        cp_buf_init(&g->f[s].phrase);
    }
    g->sql_epoch = 1;
    g->table_epoch = 1;
    g->pause_end = o->timer_start_ms;
    call_threads_init(g);
    return g;
}

void cp_agent_gen_free(cp_agent_gen *g)
{
    if (!g) return;
    for (int s = 0; s < CP_AGENT_NSTREAMS; s++) {
        cp_buf_free(&g->f[s].pend.b);
        cp_buf_free(&g->f[s].phrase);
    }
    if (g->th) call_threads_free(g);
    free(g->th);
    free(g->method_id);
    free(g->word_method);
    free(g->ends);
    free(g);
}

void cp_agent_gen_reset(cp_agent_gen *g, int pos)
{
    for (int s = 0; s < CP_AGENT_NSTREAMS; s++) {
        gen_file *f = &g->f[s];
        f->open = 0;
        f->pend.b.len = f->pend.head = 0;
        f->phrase.len = 0;
        f->size = f->produced = 0;
    }
    call_threads_reset(g);
    g->pos = pos;
    g->dict_resend = 1;
    g->sql_epoch++;
    g->table_epoch++;
    g->ends_head = g->ends_n = 0;
}

int cp_agent_gen_open(cp_agent_gen *g, cp_agent_stream s, int32_t seq, int64_t now_ms)
{
    gen_file *f = &g->f[s];
    if (seq < 0 || seq == INT32_MAX || f->pend.b.len > f->pend.head || f->phrase.len) return CP_EINVAL;
    f->open = 1;
    f->index = seq + 1;
    f->size = 0;
    f->opened_ms = now_ms;
    uint8_t *p;
    switch (s) {
    case CP_AGENT_TRACE: /* i64 timerStartTime (§5.5) */
        if (!(p = gen_room(g, s, 8))) return CP_ENOMEM;
        gen_done(g, s, w_be64(p, g->o.timer_start_ms));
        return CP_OK;
    case CP_AGENT_CALLS: /* magic + format 4, start time; a new thread table (§5.4) */
        if (!(p = gen_room(g, s, 16))) return CP_ENOMEM;
        p = w_be64(p, (int64_t)(((uint64_t)0xFFFEFDFCu << 32) | 4u));
        gen_done(g, s, w_be64(p, now_ms));
        g->calls_prev = now_ms;
        g->table_epoch++;
        g->table_size = 0;
        return CP_OK;
    case CP_AGENT_SQL: /* the dedup cache is per sql file */
        g->sql_epoch++;
        return CP_OK;
    case CP_AGENT_DICT:
        if (g->dict_resend) { /* after a reset: every word again, from id 0 */
            g->dict_resend = 0;
            for (uint32_t id = 0; id < g->nwords; id++) {
                int st = dict_write(g, id);
                if (st != CP_OK) return st;
            }
            return phrase_emit(g, s);
        }
        return CP_OK;
    case CP_AGENT_SUSPEND: /* the base time goes out with the first record */
        g->suspend_header = 0;
        return CP_OK;
    case CP_AGENT_PARAMS: return params_write(g);
    default: return CP_OK;
    }
}

int cp_agent_gen_calls(cp_agent_gen *g, uint32_t n, int64_t now_ms)
{
    for (int s = 0; s < CP_AGENT_NSTREAMS; s++)
        if (!g->f[s].open) return CP_EINVAL;
    int st = gen_pauses(g, now_ms);
    /* the calls end spread over the time since the previous batch (at most 1 s), as they
     * would in a JVM, so a batch does not need a thread per call */
    int64_t span = g->last_now ? now_ms - g->last_now : 0;
    if (span < 0) span = 0;
    if (span > 1000) span = 1000;
    g->last_now = now_ms;
    for (uint32_t i = 0; st == CP_OK && i < n; i++) st = call_generate(g, now_ms - span + span * (i + 1) / n);
    return st;
}

int cp_agent_gen_flush(cp_agent_gen *g, cp_agent_stream s)
{
    if (!g->f[s].open) return CP_OK;
    if (cp_agent_stream_is_phrased(s)) return phrase_emit(g, s);
    if (s != CP_AGENT_TRACE) return CP_OK;
    if (!g->f[CP_AGENT_CALLS].open) return CP_EINVAL; /* the chunks' calls records go there */
    for (uint32_t i = 0; i < g->o.max_threads; i++) {
        int st = call_dump_thread(g, &g->th[i]);
        if (st != CP_OK) return st;
    }
    return CP_OK;
}

int cp_agent_gen_flush_all(cp_agent_gen *g)
{
    for (int s = 0; s < CP_AGENT_NSTREAMS; s++) {
        int st = cp_agent_gen_flush(g, (cp_agent_stream)s);
        if (st != CP_OK) return st;
    }
    return CP_OK;
}

/* ---- access -------------------------------------------------------------------------------- */

const uint8_t *cp_agent_gen_pending(const cp_agent_gen *g, cp_agent_stream s, size_t *len)
{
    const gbuf *q = &g->f[s].pend;
    *len = q->b.len - q->head;
    return q->b.data + q->head;
}

void cp_agent_gen_consume(cp_agent_gen *g, cp_agent_stream s, size_t n)
{
    gbuf *q = &g->f[s].pend;
    q->head += n;
    if (q->head >= q->b.len) q->head = q->b.len = 0;
}

size_t cp_agent_gen_unsent(const cp_agent_gen *g)
{
    size_t n = 0;
    for (int s = 0; s < CP_AGENT_NSTREAMS; s++) n += g->f[s].pend.b.len - g->f[s].pend.head;
    return n;
}

int cp_agent_gen_is_open(const cp_agent_gen *g, cp_agent_stream s) { return g->f[s].open; }
int32_t cp_agent_gen_file_index(const cp_agent_gen *g, cp_agent_stream s) { return g->f[s].index; }
uint64_t cp_agent_gen_file_size(const cp_agent_gen *g, cp_agent_stream s) { return g->f[s].size; }
int64_t cp_agent_gen_file_opened_ms(const cp_agent_gen *g, cp_agent_stream s) { return g->f[s].opened_ms; }

/* ---- ack accounting -------------------------------------------------------------------------- */

int gen_push_end(cp_agent_gen *g, uint64_t end)
{
    if (g->ends_n == g->ends_cap) {
        if (g->ends_cap >= GEN_MAX_ENDS) return CP_ELIMIT;
        size_t cap = g->ends_cap ? g->ends_cap * 2 : 1024;
        uint64_t *e = malloc(cap * sizeof *e);
        if (!e) return CP_ENOMEM;
        for (size_t i = 0; i < g->ends_n; i++) e[i] = g->ends[(g->ends_head + i) % g->ends_cap];
        free(g->ends);
        g->ends = e;
        g->ends_cap = cap;
        g->ends_head = 0;
    }
    g->ends[(g->ends_head + g->ends_n) % g->ends_cap] = end;
    g->ends_n++;
    return CP_OK;
}

uint64_t cp_agent_gen_calls_acked(cp_agent_gen *g, uint64_t acked)
{
    uint64_t n = 0;
    while (g->ends_n && g->ends[g->ends_head] <= acked) {
        g->ends_head = (g->ends_head + 1) % g->ends_cap;
        g->ends_n--;
        n++;
    }
    return n;
}

void cp_agent_gen_get_stats(const cp_agent_gen *g, cp_agent_gen_stats *st)
{
    *st = g->st;
    st->words = g->nwords;
    st->threads = g->nthreads;
}
