/* call.c -- root calls: the worker threads that run them, their trace events (§5.5) in
 * each thread's open chunk, and the calls records (§5.4) written when a chunk is dumped.
 *
 * A call is built straight into its thread's chunk buffer (each event checks its room;
 * the buffer only grows until it fits the biggest chunk), so in the steady state
 * generating a call allocates nothing. The calls record's fields that
 * depend on where the chunk lands (bufferOffset, traceFileIndex) and on the calls file
 * (time delta, thread table) are only known at the dump, so the call waits as a gen_call
 * with its params already encoded. */
#include "agent_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* ENTER events of one root call, at most (root included). */
#define CALL_MAX_ENTERS 40
/* Indexed parameter values of one call, at most. */
#define CALL_MAX_PARAMS 8

typedef struct call_ctx {
    cp_agent_gen *g;
    gen_thread *th;
    uint8_t *p;             /* write position in th->chunk, past its committed length */
    uint8_t *end;           /* end of th->chunk's capacity */
    uint32_t events, enters;
    int want_sql;           /* the first leaf below the root runs SQL */
    int status;             /* first error (CP_ENOMEM) */
    uint32_t nprm;          /* indexed values for the calls record */
    struct {
        int32_t id;
        uint16_t off, n;
    } prm[CALL_MAX_PARAMS];
    char text[CALL_MAX_PARAMS * GEN_MAX_TEXT];
    size_t text_len;
} call_ctx;

/* Index in [0, n) with a Zipf-like (Pareto, alpha 1) preference for small ones: a few
 * methods are hot, and the long tail keeps bringing in a method never used before now and
 * then, so the dictionary grows quickly at start and then slowly for ever (with scale 3:
 * about 300 words after 10^4 picks, 1 000 after 10^5, 3 000 after 10^6). */
static uint32_t skew(cp_agent_gen *g, uint32_t n, double scale)
{
    double u = (double)((gen_rand(g) >> 11) + 1) * (1.0 / 9007199254740992.0); /* (0, 1] */
    double x = scale / u - scale;
    return x < (double)n ? (uint32_t)x : gen_below(g, n);
}

/* ---- threads ------------------------------------------------------------------------------ */

void call_threads_init(cp_agent_gen *g)
{
    uint32_t max = g->o.max_threads;
    g->pool_max[KIND_JMS] = max / 8 ? max / 8 : 1;
    g->pool_max[KIND_JOB] = max / 8 ? max / 8 : 1;
    g->pool_max[KIND_HTTP] = max - g->pool_max[KIND_JMS] - g->pool_max[KIND_JOB];
    g->pool_first[KIND_HTTP] = 0;
    g->pool_first[KIND_JMS] = g->pool_max[KIND_HTTP];
    g->pool_first[KIND_JOB] = g->pool_first[KIND_JMS] + g->pool_max[KIND_JMS];
}

static uint32_t chunk_limit(cp_agent_gen *g) { return GEN_CHUNK_MIN + gen_below(g, GEN_CHUNK_MAX - GEN_CHUNK_MIN); }

static gen_thread *thread_start(cp_agent_gen *g, int kind)
{
    gen_thread *t = &g->th[g->pool_first[kind] + g->pool_n[kind]];
    t->ccalls = 8;
    t->calls = malloc(t->ccalls * sizeof *t->calls);
    if (!t->calls) return NULL;
    t->kind = kind;
    t->k = g->pool_n[kind]++;
    t->java_id = 24 + g->nthreads++;
    char name[GEN_MAX_TEXT];
    size_t n = vocab_thread(kind, t->k, name);
    if (n >= sizeof t->name) n = sizeof t->name - 1;
    memcpy(t->name, name, n);
    t->name_len = (uint8_t)n;
    cp_buf_init(&t->chunk);
    cp_buf_init(&t->prm);
    t->chunk_limit = chunk_limit(g);
    return t;
}

/* A thread of the kind's pool that was idle since `want` (when the call started). The
 * lowest-numbered free thread is taken, so the pool's tail stays idle and can hold the
 * long calls (placed in the past, ending now); the pool grows only when no thread is
 * free, up to its maximum, and then the least busy thread takes the call late. */
static gen_thread *thread_pick(cp_agent_gen *g, int kind, int64_t want)
{
    gen_thread *t = &g->th[g->pool_first[kind]], *best = NULL;
    for (uint32_t i = 0; i < g->pool_n[kind]; i++, t++) {
        if (t->last_end <= want) return t;
        if (!best || t->last_end < best->last_end) best = t;
    }
    if (g->pool_n[kind] < g->pool_max[kind]) return thread_start(g, kind);
    return best;
}

void call_threads_reset(cp_agent_gen *g)
{
    for (int k = 0; k < KIND_COUNT; k++)
        for (uint32_t i = 0; i < g->pool_n[k]; i++) {
            gen_thread *t = &g->th[g->pool_first[k] + i];
            g->st.discarded += t->ncalls;
            t->ncalls = 0;
            t->chunk.len = t->prm.len = 0;
            t->chunk_events = 0;
        }
}

void call_threads_free(cp_agent_gen *g)
{
    for (int k = 0; k < KIND_COUNT; k++)
        for (uint32_t i = 0; i < g->pool_n[k]; i++) {
            gen_thread *t = &g->th[g->pool_first[k] + i];
            cp_buf_free(&t->chunk);
            cp_buf_free(&t->prm);
            free(t->calls);
        }
}

/* ---- trace events (§5.5) -------------------------------------------------------------------- */

/* Makes room for n more bytes at c->p (the chunk buffer may move). Returns 0 on ENOMEM
 * (remembered in c->status; the event is then not written). */
static int room(call_ctx *c, size_t n)
{
    if ((size_t)(c->end - c->p) >= n) return 1;
    cp_buf *b = &c->th->chunk;
    size_t off = (size_t)(c->p - b->data);
    if (c->status != CP_OK || cp_buf_reserve(b, off + n - b->len) != CP_OK) {
        c->status = CP_ENOMEM;
        return 0;
    }
    c->p = b->data + off;
    c->end = b->data + b->cap;
    return 1;
}

/* Most bytes of an event header with its delta, an id and a type byte. */
#define EV_FIXED (1 + 5 + 5 + 1)

/* Header byte (+ delta varint) of an event at absolute time t. */
static void ev_head(call_ctx *c, int64_t t, int type)
{
    int32_t d = (int32_t)(t - c->th->chunk_last);
    c->th->chunk_last = t;
    if (d >= 0 && d <= 31) {
        *c->p++ = (uint8_t)((d << 2) | type);
    } else { /* low 5 bits in the header, the rest (arithmetic >> 5) as a varint */
        *c->p++ = (uint8_t)(0x80 | ((d & 31) << 2) | type);
        int32_t hi = d < 0 ? ~(~d >> 5) : d >> 5;
        c->p = w_varint(c->p, (uint32_t)hi);
    }
    c->events++;
}

static void ev_enter(call_ctx *c, int64_t t, int32_t method)
{
    if (!room(c, EV_FIXED)) return;
    ev_head(c, t, 0);
    c->p = w_varint(c->p, (uint32_t)method);
    c->enters++;
}

static void ev_exit(call_ctx *c, int64_t t)
{
    if (room(c, EV_FIXED)) ev_head(c, t, 1);
}

/* TAG with a string value: type 0 (inline) or 2 (indexed: also a calls-record param). */
static void ev_tag_str(call_ctx *c, int64_t t, int wk, int type, const char *s, size_t n)
{
    if (n >= GEN_MAX_TEXT) n = GEN_MAX_TEXT - 1;
    if (!room(c, EV_FIXED + 5 + 2 * n)) return;
    ev_head(c, t, 2);
    c->p = w_varint(c->p, (uint32_t)wk);
    *c->p++ = (uint8_t)type;
    c->p = w_str(c->p, s, n);
    if (type == 2 && wk != WK_JAVA_THREAD && c->nprm < CALL_MAX_PARAMS) {
        c->prm[c->nprm].id = wk;
        c->prm[c->nprm].off = (uint16_t)c->text_len;
        c->prm[c->nprm].n = (uint16_t)n;
        memcpy(c->text + c->text_len, s, n);
        c->text_len += n;
        c->nprm++;
    }
}

static void ev_tag_dec(call_ctx *c, int64_t t, int wk, uint64_t v)
{
    if (!room(c, EV_FIXED + 5 + 40)) return;
    ev_head(c, t, 2);
    c->p = w_varint(c->p, (uint32_t)wk);
    *c->p++ = 0;
    c->p = w_str_dec(c->p, v);
}

/* TAG referencing a big value: type 1 (xml) or 3 (sql). */
static void ev_tag_ref(call_ctx *c, int64_t t, int wk, int type, int32_t file, int32_t off)
{
    if (!room(c, EV_FIXED + 10)) return;
    ev_head(c, t, 2);
    c->p = w_varint(c->p, (uint32_t)wk);
    *c->p++ = (uint8_t)type;
    c->p = w_varint(c->p, (uint32_t)file);
    c->p = w_varint(c->p, (uint32_t)off);
}

static void ev_tag_sql(call_ctx *c, int64_t t, int wk, gen_ref *ref, const char *s, size_t n)
{
    int st = gen_sql_value(c->g, ref, s, n);
    if (st != CP_OK) c->status = st;
    else ev_tag_ref(c, t, wk, 3, ref->file, ref->off);
}

/* A big value that is not deduplicated: written to the xml stream at every use. */
static void ev_tag_xml(call_ctx *c, int64_t t, int wk, const char *s, size_t n)
{
    cp_agent_gen *g = c->g;
    uint8_t *p = gen_room(g, CP_AGENT_XML, GEN_MAX_STR);
    if (!p) {
        c->status = CP_ENOMEM;
        return;
    }
    int32_t off = (int32_t)g->f[CP_AGENT_XML].size;
    gen_done(g, CP_AGENT_XML, w_str(p, s, n));
    ev_tag_ref(c, t, wk, 1, g->f[CP_AGENT_XML].index, off);
}

static int32_t method(call_ctx *c, uint32_t m)
{
    int32_t id = gen_method_id(c->g, m);
    if (id < 0) {
        c->status = CP_ENOMEM;
        return 0;
    }
    return id;
}

/* ---- the call tree ---------------------------------------------------------------------------- */

/* Children of a node at `depth` (root = 1): mostly one to three under the root, fewer
 * deeper, and now and then a fat call. */
static int children(call_ctx *c, int depth)
{
    cp_agent_gen *g = c->g;
    if (depth >= g->o.trace_depth || c->enters >= CALL_MAX_ENTERS - 1) return 0;
    uint32_t r = gen_below(g, 100);
    int k;
    if (depth == 1) k = gen_chance(g, 1) ? 8 + (int)gen_below(g, 13) : r < 60 ? 1 : r < 88 ? 2 : 3;
    else if (depth == 2) k = r < 78 ? 0 : r < 94 ? 1 : 2;
    else k = r < 80 ? 0 : 1;
    int room = CALL_MAX_ENTERS - (int)c->enters;
    return k < room ? k : room;
}

/* A SQL statement (deduplicated in the sql stream) and sometimes its binds (xml). */
static void sql_leaf(call_ctx *c, int64_t t)
{
    cp_agent_gen *g = c->g;
    char text[GEN_MAX_TEXT];
    uint32_t i = gen_below(g, VOCAB_STATEMENTS);
    gen_ref *ref = &g->stmt_ref[i];
    if (ref->epoch == g->sql_epoch) ev_tag_ref(c, t, WK_SQL, 3, ref->file, ref->off);
    else ev_tag_sql(c, t, WK_SQL, ref, text, vocab_statement(i, text));
    if (gen_chance(g, 30)) {
        char *p = t_str(text, "<binds><b i=\"1\">");
        p = t_dec(p, gen_below(g, 1000000));
        p = t_str(p, "</b><b i=\"2\">ACTIVE</b></binds>");
        ev_tag_xml(c, t, WK_BINDS, text, (size_t)(p - text));
    }
}

/* k children of a node at `depth` spanning [t0, t1], each in its own slice of the span.
 * A child that gets no children of its own is a leaf; the first leaf of a call that
 * wants SQL executes a statement. */
static void emit_children(call_ctx *c, int depth, int k, int64_t t0, int64_t t1)
{
    cp_agent_gen *g = c->g;
    if (!k) return;
    int64_t slot = (t1 - t0) / k;
    for (int i = 0; i < k; i++) {
        int64_t a = t0 + i * slot, b = i == k - 1 ? t1 : a + slot;
        int64_t s = a + gen_below(g, (uint32_t)(slot / 4 + 1));
        if (s > b) s = b;
        int64_t e = b - gen_below(g, (uint32_t)((b - s) / 2 + 1));
        int kids = children(c, depth + 1);
        int leaf_sql = c->want_sql && !kids;
        uint32_t m = leaf_sql ? gen_below(g, VOCAB_SQL_METHODS)
                     : gen_chance(g, 10) ? VOCAB_SQL_METHODS + gen_below(g, VOCAB_INFRA - VOCAB_SQL_METHODS)
                                         : VOCAB_INFRA + VOCAB_ROOTS + skew(g, VOCAB_METHODS - VOCAB_INFRA - VOCAB_ROOTS, 3);
        ev_enter(c, s, method(c, m));
        if (leaf_sql) {
            c->want_sql = 0;
            sql_leaf(c, s);
        }
        emit_children(c, depth + 1, kids, s, e);
        ev_exit(c, e);
    }
}

/* ---- parameters logged by the entry point ------------------------------------------------------ */

static void hex_id(cp_agent_gen *g, char *out, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    uint64_t r = gen_rand(g);
    for (size_t i = 0; i < n; i++, r >>= 4) out[i] = hex[r & 15];
}

/* A client address like 10.3.141.7. */
static size_t remote_addr(cp_agent_gen *g, char *out)
{
    char *p = t_str(out, "10.");
    p = t_dec(p, gen_below(g, 8));
    *p++ = '.';
    p = t_dec(p, gen_below(g, 256));
    *p++ = '.';
    p = t_dec(p, 1 + gen_below(g, 254));
    return (size_t)(p - out);
}

static void content_tags(call_ctx *c, int kind, uint32_t root, int64_t t)
{
    cp_agent_gen *g = c->g;
    char v[GEN_MAX_TEXT], addr[24];
    size_t n;
    switch (kind) {
    case KIND_HTTP: {
        const char *verb = vocab_http_method(gen_below(g, 6));
        n = vocab_url(root, gen_chance(g, 50) ? 1 + gen_below(g, 9999) : 0, v);
        ev_tag_str(c, t, WK_WEB_URL, 2, v, n);
        if (gen_chance(g, 20)) ev_tag_str(c, t, WK_WEB_METHOD, 2, verb, strlen(verb));
        if (gen_chance(g, 5)) ev_tag_str(c, t, WK_WEB_REMOTE_ADDR, 2, addr, remote_addr(g, addr));
        if (gen_chance(g, 2)) { /* "GET /orders/12, client: 10.1.2.3" */
            char title[GEN_MAX_TEXT], *p = t_str(title, verb);
            *p++ = ' ';
            memcpy(p, v, n);
            p = t_str(p + n, ", client: ");
            p += remote_addr(g, p);
            ev_tag_str(c, t, WK_PROFILER_TITLE, 2, title, (size_t)(p - title));
        }
        if (gen_chance(g, 10)) {
            hex_id(g, v, 8);
            ev_tag_str(c, t, WK_REQUEST_ID, 2, v, 8);
        }
        break;
    }
    case KIND_JMS:
        if (gen_chance(g, 20)) { /* "queue.orders.events" */
            char *p = t_str(v, "queue.");
            p += vocab_noun_lower(root, p);
            p = t_str(p, ".events");
            ev_tag_str(c, t, WK_JMS_DESTINATION, 2, v, (size_t)(p - v));
        }
        hex_id(g, v, 8);
        ev_tag_str(c, t, WK_REQUEST_ID, 2, v, 8);
        break;
    default:
        if (gen_chance(g, 50)) {
            n = vocab_noun_lower(root, v);
            memcpy(v + n, "-sync", 5);
            ev_tag_str(c, t, WK_JOB_NAME, 2, v, n + 5);
        }
        break;
    }
}

/* ---- one root call ------------------------------------------------------------------------------ */

/* Mostly short, a long tail: 75% < 10 ms, 21% < 100 ms, 3.7% < 1 s, 0.3% up to 3 s. */
static int32_t duration(cp_agent_gen *g)
{
    uint32_t r = gen_below(g, 1000);
    if (r < 750) return (int32_t)gen_below(g, 10);
    if (r < 960) return 10 + (int32_t)gen_below(g, 90);
    if (r < 997) return 100 + (int32_t)gen_below(g, 900);
    return 1000 + (int32_t)gen_below(g, 2000);
}

/* The per-call counters (§5.4: deltas of the thread's counters over the call). */
static void metrics(cp_agent_gen *g, int kind, gen_call *r)
{
    r->cpu = (int32_t)((int64_t)r->duration * gen_below(g, 101) / 100);
    r->wait = gen_chance(g, 10) ? (int32_t)gen_below(g, (uint32_t)(r->duration - r->cpu + 1)) : 0;
    r->memory = gen_chance(g, 30) ? 512 + gen_below(g, 1u << (10 + gen_below(g, 11))) : 0;
    r->logs_written = r->logs_generated = 0;
    if (gen_chance(g, 5)) {
        r->logs_written = 80 + (int32_t)gen_below(g, 400);
        r->logs_generated = r->logs_written + (int32_t)gen_below(g, 200);
    }
    r->net_read = r->net_written = 0;
    if (kind == KIND_HTTP && gen_chance(g, 25)) {
        r->net_read = 200 + gen_below(g, 1800);
        r->net_written = 300 + gen_below(g, 20000);
    }
    r->queue_wait = kind == KIND_JMS && gen_chance(g, 30) ? (int32_t)gen_below(g, 50) : 0;
}

/* What the agent writes at a persisted root's end (§5.5): the call.info TAG carrying the
 * exit time, synthetic tags with delta 0, then the synthetic EXIT. */
static void root_end(call_ctx *c, int64_t start, int64_t end, const gen_call *r)
{
    cp_agent_gen *g = c->g;
    gen_thread *th = c->th;
    ev_tag_str(c, end, WK_CALL_INFO, 0, "", 0);
    ev_tag_dec(c, end, WK_COMMON_STARTED, (uint64_t)start);
    ev_tag_sql(c, end, WK_NODE_NAME, &g->node_ref, g->node, strlen(g->node));
    ev_tag_sql(c, end, WK_JAVA_THREAD, &th->sql_name, th->name, th->name_len);
    if (r->logs_generated) ev_tag_dec(c, end, WK_LOG_GENERATED, (uint64_t)r->logs_generated);
    if (r->logs_written) ev_tag_dec(c, end, WK_LOG_WRITTEN, (uint64_t)r->logs_written);
    if (r->cpu) ev_tag_dec(c, end, WK_TIME_CPU, (uint64_t)r->cpu);
    if (r->wait) ev_tag_dec(c, end, WK_TIME_WAIT, (uint64_t)r->wait);
    if (r->memory) ev_tag_dec(c, end, WK_MEMORY_ALLOCATED, (uint64_t)r->memory);
    if (r->net_read) ev_tag_dec(c, end, WK_IO_NET_READ, (uint64_t)r->net_read);
    if (r->net_written) ev_tag_dec(c, end, WK_IO_NET_WRITTEN, (uint64_t)r->net_written);
    if (r->queue_wait) ev_tag_dec(c, end, WK_TIME_QUEUE_WAIT, (uint64_t)r->queue_wait);
    ev_exit(c, end);
}

/* The call's indexed values as the calls record carries them: count, then per param
 * id, 1 value, varstring. */
static int encode_params(call_ctx *c, gen_call *r)
{
    gen_thread *th = c->th;
    size_t need = 5;
    for (uint32_t i = 0; i < c->nprm; i++) need += 15 + 2 * (size_t)c->prm[i].n;
    if (cp_buf_reserve(&th->prm, need) != CP_OK) return CP_ENOMEM;
    uint8_t *p0 = th->prm.data + th->prm.len, *p = w_varint(p0, c->nprm);
    for (uint32_t i = 0; i < c->nprm; i++) {
        p = w_varint(p, (uint32_t)c->prm[i].id);
        p = w_varint(p, 1);
        p = w_str(p, c->text + c->prm[i].off, c->prm[i].n);
    }
    r->prm_off = (uint32_t)th->prm.len;
    r->prm_len = (uint32_t)(p - p0);
    th->prm.len += r->prm_len;
    return CP_OK;
}

/* The entry point: 60% HTTP, 25% JMS, 15% jobs (vocab_root_kind's layout: blocks of 20
 * roots, 12 HTTP then 5 JMS then 3 jobs), hot ones first. */
static uint32_t pick_root(cp_agent_gen *g, int *kind)
{
    static const uint32_t first[KIND_COUNT] = {0, 12, 17}, width[KIND_COUNT] = {12, 5, 3};
    uint32_t r = gen_below(g, 100);
    int k = r < 60 ? KIND_HTTP : r < 85 ? KIND_JMS : KIND_JOB;
    uint32_t block = skew(g, VOCAB_ROOTS / 20, 1);
    *kind = k;
    return VOCAB_INFRA + 20 * block + first[k] + skew(g, width[k], 2);
}

/* One root call ending at `now` (later if every thread of its pool is still busy). */
int call_generate(cp_agent_gen *g, int64_t now)
{
    int kind;
    uint32_t root = pick_root(g, &kind);
    int32_t dur = duration(g);
    if (g->o.trace_depth == 1 && dur <= 20) dur = 21 + (int32_t)gen_below(g, 180); /* persisted (§5.4) */
    gen_thread *th = thread_pick(g, kind, now - dur);
    if (!th || cp_buf_reserve(&th->chunk, 512) != CP_OK) return CP_ENOMEM;
    if (th->ncalls == th->ccalls) {
        gen_call *v = realloc(th->calls, 2 * th->ccalls * sizeof *v);
        if (!v) return CP_ENOMEM;
        th->calls = v;
        th->ccalls *= 2;
    }
    int64_t start = now - dur < th->last_end ? th->last_end : now - dur, end = start + dur;

    call_ctx c; /* not zero-initialised as a whole: its text buffer is large */
    c.g = g;
    c.th = th;
    c.p = th->chunk.data + th->chunk.len;
    c.end = th->chunk.data + th->chunk.cap;
    c.events = c.enters = c.nprm = 0;
    c.want_sql = 0;
    c.status = CP_OK;
    c.text_len = 0;
    if (!th->chunk.len) { /* a new chunk: threadId, chunkStartTime; elapsed starts at 0 */
        c.p = w_be64(c.p, th->java_id);
        c.p = w_be64(c.p, start);
        th->chunk_last = g->o.timer_start_ms;
    }
    gen_call *r = &th->calls[th->ncalls];
    r->start = start;
    r->duration = dur;
    r->rec_index = th->chunk_events;
    r->method = method(&c, root);
    ev_enter(&c, start, r->method);
    content_tags(&c, kind, root, start);
    c.want_sql = g->o.trace_depth >= 2 && gen_chance(g, 35);
    emit_children(&c, 1, children(&c, 1), start, end);
    if (gen_chance(g, 2)) {
        const char *ex = vocab_exception(gen_below(g, 4));
        ev_tag_str(&c, end, WK_CALL_RED, 2, ex, strlen(ex));
    }
    metrics(g, kind, r);
    root_end(&c, start, end, r);
    if (c.status != CP_OK) return c.status;

    r->calls = (int32_t)c.enters;
    int st = encode_params(&c, r);
    if (st != CP_OK) return st;
    th->chunk.len = (size_t)(c.p - th->chunk.data);
    th->chunk_events += c.events;
    th->last_end = end;
    th->ncalls++;
    g->st.calls++;
    if (th->chunk.len >= th->chunk_limit || th->ncalls == GEN_CHUNK_CALLS) return call_dump_thread(g, th);
    return CP_OK;
}

/* ---- dump: the chunk goes to the trace stream, its calls' records to the calls stream ---- */

static int write_record(cp_agent_gen *g, gen_thread *th, const gen_call *r, int32_t trace_file, uint64_t offset)
{
    uint8_t *p = gen_room(g, CP_AGENT_CALLS, 20 * 10 + 5 + 2 * sizeof th->name + r->prm_len);
    if (!p) return CP_ENOMEM;
    p = w_zigzag(p, (int32_t)(r->start - g->calls_prev));
    g->calls_prev = r->start;
    p = w_varint(p, (uint32_t)r->method);
    p = w_varint(p, (uint32_t)r->duration);
    p = w_varint(p, (uint32_t)r->calls);
    if (th->table_epoch != g->table_epoch) { /* announce the thread in this file's table */
        th->table_epoch = g->table_epoch;
        th->table_index = g->table_size++;
        p = w_varint(p, (uint32_t)th->table_index);
        p = w_str(p, th->name, th->name_len);
    } else {
        p = w_varint(p, (uint32_t)th->table_index);
    }
    p = w_varint(p, (uint32_t)r->logs_written);
    p = w_varint(p, (uint32_t)(r->logs_generated - r->logs_written));
    p = w_varint(p, (uint32_t)trace_file);
    p = w_varint(p, (uint32_t)offset);
    p = w_varint(p, r->rec_index);
    p = w_varint(p, (uint32_t)r->cpu); /* cpu and wait: int varints read as varlong */
    p = w_varint(p, (uint32_t)r->wait);
    p = w_varlong(p, (uint64_t)r->memory);
    p = w_varlong(p, 0); /* fileRead */
    p = w_varlong(p, 0); /* fileWritten */
    p = w_varlong(p, (uint64_t)r->net_read);
    p = w_varlong(p, (uint64_t)r->net_written);
    p = w_varint(p, 0); /* transactions */
    p = w_varint(p, (uint32_t)r->queue_wait);
    memcpy(p, th->prm.data + r->prm_off, r->prm_len);
    gen_done(g, CP_AGENT_CALLS, p + r->prm_len);
    g->st.records++;
    return gen_push_end(g, g->f[CP_AGENT_CALLS].produced);
}

int call_dump_thread(cp_agent_gen *g, gen_thread *th)
{
    if (!th->chunk.len) return CP_OK;
    gen_file *tf = &g->f[CP_AGENT_TRACE];
    uint64_t offset = tf->size; /* of the chunk's threadId field, file header included */
    uint8_t *p = gen_room(g, CP_AGENT_TRACE, th->chunk.len + 1);
    if (!p) return CP_ENOMEM;
    memcpy(p, th->chunk.data, th->chunk.len);
    p[th->chunk.len] = 0x03; /* EVENT_FINISH_RECORD */
    gen_done(g, CP_AGENT_TRACE, p + th->chunk.len + 1);
    for (uint32_t i = 0; i < th->ncalls; i++) {
        int st = write_record(g, th, &th->calls[i], tf->index, offset);
        if (st != CP_OK) return st;
    }
    th->chunk.len = th->prm.len = 0;
    th->chunk_events = th->ncalls = 0;
    th->chunk_limit = chunk_limit(g);
    return CP_OK;
}
