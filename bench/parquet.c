/* parquet.c -- the cold tier's Parquet writer against DuckDB (bench_parquet).
 *
 * Issue: "Parquet write (rows/s, bytes/row) against DuckDB writing the same rows with ZSTD
 * in the same run (ratios of time and size). Goal: our writer at least as fast as DuckDB
 * with files no more than 10% larger."
 *
 * Data (not timed): emulated agents (src/agent's generator, the bytes `cloudprof emulate`
 * sends) for --pods pods (5 namespaces, 2 services each, pods spread over them) run through
 * the stream decoders and call assembly (cp_asm), as `serve` does, so every call is what the
 * hot tier stores: Java-like method names from the agent's vocabulary, thread names, params,
 * and its trace blob as assembled (trace bytes + resolved sql/xml values + pauses). One hour
 * of timestamps; pod depths 3..--depth. Two additions make the rows look like production
 * rather than like the emulator (--agent-only turns both off):
 *   params   the generator logs ~1.2 params per call (34 bytes of JSON); each row gets what a
 *            real service of its kind logs besides (HTTP: web.method, web.remote.addr,
 *            user.id; JMS: jms.destination; jobs: job.name; 70%: a 32-hex trace.id):
 *            ~3.3 entries, ~110 bytes of JSON
 *   blobs    one call's blob is 100..500 bytes (mean ~240); real agents' are a few hundred
 *            bytes to a few KB (test-service's fixture: ~1 KB of trace per call), so a row's
 *            blob merges the real traces of k consecutive calls of its pod (k log-normal,
 *            median 2, p99 ~16, cp_blob_builder: a valid blob): mean ~560 B, p50 ~400 B,
 *            p99 ~2.7 KB; zstd-1 compresses them ~4.4x as pages
 * The rows are kept in memory and sorted as compaction sorts them (namespace, duration
 * range, pod, time, restart, trace pointer: catalog_sqlite_cold.c), and their params parsed
 * into map entries once (cp_cold_call_row's work, checked value by value against it).
 *
 * Timed (CLOCK_MONOTONIC, --runs times, best and median), into a file in --dir (no fsync,
 * like DuckDB's COPY):
 *   ours          cp_pq_writer_new(cp_cold_calls_schema, default options = what compaction
 *                 uses) + cp_pq_writer_add per row + finish + fclose (rows pre-parsed: the
 *                 same starting point as DuckDB's in-memory table)
 *   compaction    the same plus cp_cold_call_row per call (params JSON parsed, trace index
 *                 formatted): what the compactor pays per file
 * DuckDB (bench/parquet_duckdb.mjs, @duckdb/node-api from tests/tools/node_modules; never
 * linked into C): loads our file into an in-memory table (not timed), then times
 * COPY t TO '...' (FORMAT parquet, COMPRESSION zstd) --runs times with SET threads=1 and
 * with its default threads, counts the rows of both files and reads both footers
 * (parquet_metadata) for the per-column sizes.
 *
 * Reported: rows/s, bytes, bytes/row of each; time ratio = DuckDB time / our time (>= 1: we
 * are at least as fast), size ratio = our bytes / DuckDB bytes (goal <= 1.10), per column
 * compressed bytes and encodings side by side, and one JSON line (--json: only that).
 * Runs unpinned (scripts/bench.sh): our writer is single-threaded, DuckDB's default uses
 * both cores.
 *
 * usage: bench_parquet [--rows N] [--pods N] [--depth D] [--runs N] [--dir DIR] [--keep]
 *                      [--json] [--agent-only] [--no-duckdb] [--node PATH] [--script PATH]
 *                      [--tools DIR] [--zstd-level L] [--row-group-rows N] [--page-rows N]
 *                      [--order time|pod]
 *   --order pod: rows sorted as compaction did before issue 14 (pod, then time inside a
 *   namespace x range), to compare the sizes of the two layouts
 *   defaults: 1 000 000 rows, 40 pods, depth 8, 3 runs, $TMPDIR or /tmp, node from PATH,
 *   the script and tests/tools of the source tree this was built from
 *   --zstd-level, --row-group-rows, --page-rows change our writer's options (experiments;
 *   the default is compaction's: all zero = the writer's defaults)
 * Exit status 1 on an error or when the row counts differ, 2 on bad usage.
 */
#include "agent/cp_agent.h"
#include "common/cp_common.h"
#include "model/cp_asm.h"
#include "parquet/cp_parquet.h"
#include "query/cp_query.h"
#include "store/cp_cold.h"
#include "streams/cp_streams.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#ifndef CP_SOURCE_DIR
#define CP_SOURCE_DIR "."
#endif

#define T0 1767268800000LL /* 2026-01-01 12:00 UTC */
#define SPAN_MS 3600000LL
#define MAX_RUNS 20
#define MAX_COLS 64

typedef struct opts {
    uint64_t rows, pods, depth, runs;
    const char *dir, *node, *script, *tools;
    int keep, json, no_duckdb, agent_only;
    cp_pq_writer_opts pq;
} opts;

/* ---- an arena for the calls' bytes --------------------------------------------------------- */

typedef struct ablock {
    struct ablock *next;
    size_t used, cap;
    uint8_t data[];
} ablock;

typedef struct arena {
    ablock *head;
    uint64_t bytes;
} arena;

static void *arena_alloc(arena *a, size_t n)
{
    n = (n + 7) & ~(size_t)7;
    if (!a->head || a->head->cap - a->head->used < n) {
        size_t cap = n > (64u << 20) ? n : (64u << 20);
        ablock *b = malloc(sizeof *b + cap);
        if (!b) {
            fprintf(stderr, "bench_parquet: out of memory\n");
            exit(1);
        }
        b->next = a->head;
        b->used = 0;
        b->cap = cap;
        a->head = b;
    }
    void *p = a->head->data + a->head->used;
    a->head->used += n;
    a->bytes += n;
    return p;
}

static const void *arena_copy(arena *a, const void *p, size_t n)
{
    if (!n) return "";
    void *d = arena_alloc(a, n);
    memcpy(d, p, n);
    return d;
}

static void arena_free(arena *a)
{
    while (a->head) {
        ablock *b = a->head;
        a->head = b->next;
        free(b);
    }
}

/* ---- generating the calls ------------------------------------------------------------------- */

typedef struct gen gen;

typedef struct pod {
    char ns[32], svc[48], name[80];
    const char *ns_keep, *svc_keep, *name_keep; /* the same in the arena: they outlive the pod */
    int depth;
    cp_agent_gen *g;
    cp_buf file[CP_AGENT_NSTREAMS];    /* stream files as stored, from base[s] on */
    size_t base[CP_AGENT_NSTREAMS];
    size_t fed[CP_AGENT_NSTREAMS];
    cp_dec *dec[CP_AGENT_NSTREAMS];
    cp_asm *as;
    cp_buf utf8;
    gen *owner;
    /* the row being built: calls[row] took the first call's fields; its blob merges the
     * traces of k consecutive calls of the pod */
    int open;
    size_t row;
    uint32_t n, k;
    cp_buf first;                       /* the first call's blob as it was */
    cp_blob_builder bb;
} pod;

struct gen {
    pod *pods;
    size_t npods;
    cp_call *calls;
    size_t ncalls, cap, limit;
    arena mem;
    uint64_t without_trace, agent_calls, merged_rows;
    int enrich;                         /* params and blob enrichment (not --agent-only) */
    uint64_t rnd;
    cp_buf json, scratch;
};

static const char *const namespaces[] = {"checkout-prod", "payments-prod", "catalog-prod", "identity-prod",
                                         "logistics-prod"};
static const char *const services[][2] = {
    {"checkout-api", "cart-service"},     {"payment-gateway", "billing-service"},
    {"catalog-service", "search-indexer"}, {"auth-service", "user-profile"},
    {"shipping-service", "warehouse-sync"},
};

static cp_buf *file_of(pod *p, cp_stream_kind kind, int32_t idx, size_t *avail)
{
    cp_agent_stream s;
    switch (kind) {
    case CP_STREAM_TRACE: s = CP_AGENT_TRACE; break;
    case CP_STREAM_SQL: s = CP_AGENT_SQL; break;
    case CP_STREAM_XML: s = CP_AGENT_XML; break;
    default: return NULL;
    }
    if (idx != 1) return NULL;
    *avail = p->fed[s];
    return &p->file[s];
}

static int64_t io_size(void *ud, cp_stream_kind kind, int32_t idx)
{
    size_t avail;
    return file_of(ud, kind, idx, &avail) ? (int64_t)avail : -1;
}

static long io_read(void *ud, cp_stream_kind kind, int32_t idx, uint64_t off, void *buf, size_t n)
{
    pod *p = ud;
    size_t avail;
    cp_buf *f = file_of(p, kind, idx, &avail);
    cp_agent_stream s = kind == CP_STREAM_TRACE ? CP_AGENT_TRACE : kind == CP_STREAM_SQL ? CP_AGENT_SQL : CP_AGENT_XML;
    if (!f || off + n > avail || off < p->base[s]) return CP_EIO;
    memcpy(buf, f->data + (off - p->base[s]), n);
    return (long)n;
}

static int cmp_str_prm(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

static uint64_t rnd(gen *g)
{
    uint64_t x = g->rnd;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    g->rnd = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static uint32_t below(gen *g, uint32_t n) { return (uint32_t)(rnd(g) % n); }

/* Blobs of k consecutive calls merged into one row: k log-normal (median 2, mean ~3.1,
 * p99 ~16, at most 24), so rows' blobs run from ~150 bytes to a few KB like real traces (the agent
 * generator's single calls are 100..500 bytes; test-service's real agent ~1 KB a call). */
static uint32_t draw_k(gen *g)
{
    double u1 = ((double)(rnd(g) >> 11) + 1) / 9007199254740993.0, u2 = (double)(rnd(g) >> 11) / 9007199254740992.0;
    double z = sqrt(-2.0 * log(u1)) * cos(2 * M_PI * u2);
    double k = exp(0.7 + 0.9 * z);
    return k < 1.5 ? 1 : k > 24 ? 24 : (uint32_t)(k + 0.5);
}

/* ---- params: the agent's own, plus what a real service logs (not --agent-only) ---- */

#define MAX_PRM 16
typedef struct prm {
    char name[32];
    size_t nlen;
    size_t voff[4], vlen[4];            /* into gen.scratch */
    size_t nv;
} prm;

typedef struct prmset {
    prm p[MAX_PRM];
    size_t n;
    gen *g;
} prmset;

static prm *prm_find(prmset *ps, const char *name)
{
    for (size_t i = 0; i < ps->n; i++)
        if (ps->p[i].nlen == strlen(name) && !memcmp(ps->p[i].name, name, ps->p[i].nlen)) return &ps->p[i];
    return NULL;
}

static int prm_on_name(void *ud, const char *name, size_t nlen)
{
    prmset *ps = ud;
    if (ps->n == MAX_PRM || nlen >= sizeof ps->p[0].name) return CP_ELIMIT;
    prm *p = &ps->p[ps->n++];
    memcpy(p->name, name, nlen);
    p->name[nlen] = 0;
    p->nlen = nlen;
    p->nv = 0;
    return 0;
}

static int prm_add_value(prmset *ps, prm *p, const char *v, size_t n)
{
    if (p->nv == 4) return 0;
    p->voff[p->nv] = ps->g->scratch.len;
    p->vlen[p->nv++] = n;
    return cp_buf_append(&ps->g->scratch, v, n);
}

static int prm_on_value(void *ud, const char *name, size_t nlen, const char *val, size_t vlen)
{
    (void)name, (void)nlen;
    prmset *ps = ud;
    return prm_add_value(ps, &ps->p[ps->n - 1], val, vlen);
}

static void prm_put(prmset *ps, const char *name, const char *v)
{
    if (prm_find(ps, name) || ps->n == MAX_PRM) return;
    prm_on_name(ps, name, strlen(name));
    prm_add_value(ps, &ps->p[ps->n - 1], v, strlen(v));
}

static int cmp_prm(const void *a, const void *b)
{
    const prm *x = a, *y = b;
    return cmp_str_prm(x->name, x->nlen, y->name, y->nlen);
}

static void hex(gen *g, char *out, size_t n)
{
    static const char h[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) out[i] = h[rnd(g) & 15];
    out[n] = 0;
}

/* params_json with the params a real service of that kind logs added (names sorted, as
 * the hot tier stores them): HTTP: web.method, web.remote.addr, user.id, a W3C trace id;
 * JMS: jms.destination, trace id; jobs: job.name. About 3.3 entries and ~150 bytes. */
static int enrich_params(gen *g, const cp_call *c, const char **out, size_t *out_len)
{
    prmset ps = {.g = g};
    cp_buf_reset(&g->scratch);
    if (cp_params_walk(c->params_json, c->params_json_len, prm_on_name, prm_on_value, &ps) != CP_OK) return CP_EPROTO;
    char v[128];
    static const char *const verbs[] = {"GET", "GET", "GET", "POST", "PUT", "DELETE"};
    static const char *const queues[] = {"queue.orders.events", "queue.payments.commands", "topic.stock.changed",
                                         "queue.notifications", "queue.customer.events"};
    static const char *const jobs[] = {"invoice-export", "payment-sync", "stock-reconcile", "report-daily",
                                       "cache-warmup"};
    int http = prm_find(&ps, "web.url") != NULL;
    int jms = !http && memmem(c->method, c->method_len, "Listener", 8) != NULL;
    if (http) {
        prm_put(&ps, "web.method", verbs[below(g, 6)]);
        if (below(g, 100) < 60) {
            snprintf(v, sizeof v, "10.%u.%u.%u", below(g, 8), below(g, 256), 1 + below(g, 254));
            prm_put(&ps, "web.remote.addr", v);
        }
        if (below(g, 100) < 50) {
            snprintf(v, sizeof v, "user-%u", below(g, 100000));
            prm_put(&ps, "user.id", v);
        }
    } else if (jms) {
        prm_put(&ps, "jms.destination", queues[below(g, 5)]);
    } else {
        prm_put(&ps, "job.name", jobs[below(g, 5)]);
    }
    if (below(g, 100) < 70) {
        hex(g, v, 32);
        prm_put(&ps, "trace.id", v);
    }
    qsort(ps.p, ps.n, sizeof ps.p[0], cmp_prm);
    cp_buf *j = &g->json;
    cp_buf_reset(j);
    int st = cp_buf_putc(j, '{');
    for (size_t i = 0; st == CP_OK && i < ps.n; i++) {
        if (i) st = cp_buf_putc(j, ',');
        if (st == CP_OK) st = cp_json_str(j, ps.p[i].name, ps.p[i].nlen);
        if (st == CP_OK) st = cp_buf_puts(j, ":[");
        for (size_t k = 0; st == CP_OK && k < ps.p[i].nv; k++) {
            if (k) st = cp_buf_putc(j, ',');
            if (st == CP_OK)
                st = cp_json_str(j, (const char *)g->scratch.data + ps.p[i].voff[k], ps.p[i].vlen[k]);
        }
        if (st == CP_OK) st = cp_buf_putc(j, ']');
    }
    if (st == CP_OK) st = cp_buf_putc(j, '}');
    *out = (const char *)j->data;
    *out_len = j->len;
    return st;
}

/* ---- rows out of the assembler's calls ------------------------------------------------ */

/* Adds one call's blob to the pod's builder (its trace without the timer header after the
 * first; values and pauses deduplicated by the builder). */
static int blob_absorb(pod *p, const uint8_t *b, size_t n, int first)
{
    cp_blob *bl;
    char err[128];
    int st = cp_blob_open(b, n, &bl, err, sizeof err);
    if (st != CP_OK) {
        fprintf(stderr, "bench_parquet: an assembled blob does not open: %s\n", err);
        return st;
    }
    size_t skip = first ? 0 : 8;
    if (bl->trace_len > skip) st = cp_buf_append(&p->bb.trace, bl->trace + skip, bl->trace_len - skip);
    for (size_t i = 0; st == CP_OK && i < bl->nwords; i++)
        st = cp_blob_add_word(&p->bb, bl->words[i].id, bl->words[i].text, bl->words[i].len);
    for (size_t i = 0; st == CP_OK && i < bl->nvalues; i++) {
        const cp_blob_value *v = &bl->values[i];
        st = cp_blob_add_value(&p->bb, v->kind, v->file, v->offset, v->resolved, v->text, v->len);
    }
    for (size_t i = 0; st == CP_OK && i < bl->npauses; i++)
        st = cp_blob_add_pause(&p->bb, bl->pauses[i].end_ms, bl->pauses[i].duration_ms);
    cp_blob_free(bl);
    return st;
}

static int row_close(pod *p)
{
    gen *g = p->owner;
    cp_call *d = &g->calls[p->row];
    p->open = 0;
    if (p->n <= 1) {
        if (p->first.len) {
            d->trace = arena_copy(&g->mem, p->first.data, p->first.len);
            d->trace_len = p->first.len;
        }
        return CP_OK;
    }
    cp_buf out;
    cp_buf_init(&out);
    int st = cp_blob_build(&p->bb, &out);
    if (st == CP_OK) {
        d->trace = arena_copy(&g->mem, out.data, out.len);
        d->trace_len = out.len;
        g->merged_rows++;
    }
    cp_buf_free(&out);
    return st;
}

/* A finished call: the first of a row is copied into the arena (ns/service/pod point at
 * the pod's names), the next ones only add their traces to its blob. */
static int io_emit(void *ud, const cp_call *c)
{
    pod *p = ud;
    gen *g = p->owner;
    g->agent_calls++;
    if (!p->open) {
        if (g->ncalls == g->limit) return 0; /* the last round overshoots a little */
        if (g->ncalls == g->cap) {
            size_t cap = g->cap ? g->cap * 2 : 1 << 16;
            cp_call *nc = realloc(g->calls, cap * sizeof *nc);
            if (!nc) return CP_ENOMEM;
            g->calls = nc;
            g->cap = cap;
        }
        p->row = g->ncalls++;
        cp_call *d = &g->calls[p->row];
        *d = *c;
        d->ns = p->ns_keep, d->ns_len = strlen(p->ns);
        d->service = p->svc_keep, d->service_len = strlen(p->svc);
        d->pod = p->name_keep, d->pod_len = strlen(p->name);
        d->method = arena_copy(&g->mem, c->method, c->method_len);
        d->thread = arena_copy(&g->mem, c->thread, c->thread_len);
        const char *pj = c->params_json;
        size_t pjl = c->params_json_len;
        if (g->enrich) {
            int st = enrich_params(g, c, &pj, &pjl);
            if (st != CP_OK) return st;
        }
        d->params_json = arena_copy(&g->mem, pj, pjl);
        d->params_json_len = pjl;
        d->trace = NULL;
        d->trace_len = 0;
        /* trace_reason: one of the stable CP_TRACE_* strings */
        if (!c->trace) {
            g->without_trace++;
            return 0; /* a row without a trace merges nothing */
        }
        p->open = 1;
        p->n = 0;
        p->k = g->enrich ? draw_k(g) : 1;
        cp_buf_reset(&p->first);
        cp_blob_builder_reset(&p->bb);
    }
    if (c->trace) {
        int st = CP_OK;
        if (p->n == 0) st = cp_buf_append(&p->first, c->trace, c->trace_len);
        else {
            if (p->n == 1) st = blob_absorb(p, p->first.data, p->first.len, 1);
            if (st == CP_OK) st = blob_absorb(p, c->trace, c->trace_len, 0);
        }
        if (st != CP_OK) return st;
        p->n++;
    }
    return p->n >= p->k ? row_close(p) : 0;
}

static int s_word(void *ud, const cp_word_rec *r)
{
    pod *p = ud;
    cp_buf_reset(&p->utf8);
    cp_str16_to_utf8(&p->utf8, r->word);
    return cp_asm_word(p->as, r->id, (const char *)p->utf8.data, p->utf8.len) == CP_ENOMEM;
}
static int s_pause(void *ud, const cp_suspend_rec *r) { return cp_asm_pause(((pod *)ud)->as, r) != CP_OK; }
static int s_trace(void *ud, const cp_trace_rec *r) { return cp_asm_trace(((pod *)ud)->as, 1, r, 0) != CP_OK; }
static int s_call(void *ud, const cp_call_rec *r) { return cp_asm_call(((pod *)ud)->as, r, 0) != CP_OK; }

static int pod_init(gen *g, pod *p, size_t i, int max_depth)
{
    memset(p, 0, sizeof *p);
    p->owner = g;
    size_t nns = CP_ARRAY_LEN(namespaces);
    size_t k = i % (nns * 2); /* pod i: namespace k / 2, service k % 2 */
    snprintf(p->ns, sizeof p->ns, "%s", namespaces[k / 2]);
    snprintf(p->svc, sizeof p->svc, "%s", services[k / 2][k % 2]);
    uint64_t h = cp_mix64(i * 7919 + 17);
    static const char alnum[] = "bcdfghjklmnpqrstvwxz2456789";
    char sfx[6];
    for (int j = 0; j < 5; j++) sfx[j] = alnum[(h >> (8 * j)) % (sizeof alnum - 1)];
    sfx[5] = 0;
    snprintf(p->name, sizeof p->name, "%s-%08llx%02x-%s", p->svc, (unsigned long long)(h >> 40), (unsigned)(k & 0xff),
             sfx);
    p->ns_keep = arena_copy(&g->mem, p->ns, strlen(p->ns) + 1);
    p->svc_keep = arena_copy(&g->mem, p->svc, strlen(p->svc) + 1);
    p->name_keep = arena_copy(&g->mem, p->name, strlen(p->name) + 1);
    /* depth 3..max: most pods shallow, a few deep (bigger blobs) */
    p->depth = max_depth <= 3 ? max_depth : 3 + (int)(i % (size_t)(max_depth - 2));
    cp_buf_init(&p->utf8);
    cp_buf_init(&p->first);
    cp_blob_builder_init(&p->bb);
    cp_agent_gen_opts o;
    cp_agent_gen_opts_default(&o);
    o.service = p->svc;
    o.node_name = p->name;
    o.trace_depth = p->depth;
    o.timer_start_ms = T0 - 3600000;
    p->g = cp_agent_gen_new(&o, 4242 + i);
    if (!p->g) return CP_ENOMEM;
    cp_agent_gen_reset(p->g, 0);
    for (int s = 0; s < CP_AGENT_NSTREAMS; s++) {
        cp_buf_init(&p->file[s]);
        if (cp_agent_gen_open(p->g, (cp_agent_stream)s, 0, T0) != CP_OK) return CP_ENOMEM;
    }
    cp_asm_pod ap = {p->ns, p->svc, p->name, T0 - 3600000 - (int64_t)i * 60000};
    cp_asm_io io = {.ud = p, .read = io_read, .size = io_size, .emit = io_emit};
    if (!(p->as = cp_asm_new(&ap, NULL, &io))) return CP_ENOMEM;
    for (int s = 0; s < CP_AGENT_NSTREAMS; s++) {
        cp_dec_sink sink = {.ud = p, .on_word = s_word, .on_suspend = s_pause, .on_trace = s_trace, .on_call = s_call};
        if (!(p->dec[s] = cp_dec_new(cp_agent_stream_kind((cp_agent_stream)s, 0), NULL, &sink, 0))) return CP_ENOMEM;
    }
    return CP_OK;
}

static void pod_free(pod *p)
{
    for (int s = 0; s < CP_AGENT_NSTREAMS; s++) {
        cp_dec_free(p->dec[s]);
        cp_buf_free(&p->file[s]);
    }
    cp_asm_free(p->as);
    cp_agent_gen_free(p->g);
    cp_buf_free(&p->utf8);
    cp_buf_free(&p->first);
    cp_blob_builder_free(&p->bb);
}

/* What the batch added to every stream file, through the decoders and the assembler. */
static int pod_feed(pod *p)
{
    static const cp_agent_stream order[] = {CP_AGENT_DICT, CP_AGENT_SUSPEND, CP_AGENT_PARAMS, CP_AGENT_SQL,
                                            CP_AGENT_XML,  CP_AGENT_TRACE,   CP_AGENT_CALLS};
    for (size_t i = 0; i < CP_ARRAY_LEN(order); i++) {
        cp_agent_stream s = order[i];
        size_t from = p->fed[s], to = p->base[s] + p->file[s].len;
        if (to > from && cp_dec_feed(p->dec[s], p->file[s].data + (from - p->base[s]), to - from) != CP_OK) {
            fprintf(stderr, "bench_parquet: decode %s: %s\n", cp_agent_stream_name(s, 0), cp_dec_error(p->dec[s]));
            return CP_EPROTO;
        }
        p->fed[s] = to;
        int st = cp_asm_pump(p->as, 0, 0);
        if (st != CP_OK) return st;
    }
    return CP_OK;
}

static int generate(gen *g, const opts *o)
{
    g->npods = (size_t)o->pods;
    g->limit = (size_t)o->rows;
    g->enrich = !o->agent_only;
    g->rnd = 0x9E3779B97F4A7C15ull;
    cp_buf_init(&g->json);
    cp_buf_init(&g->scratch);
    g->pods = calloc(g->npods, sizeof *g->pods);
    if (!g->pods) return CP_ENOMEM;
    for (size_t i = 0; i < g->npods; i++)
        if (pod_init(g, &g->pods[i], i, (int)o->depth) != CP_OK) return CP_ENOMEM;
    /* One batch per pod per second of the hour (the generator spreads a batch's calls over
     * the second before it), sized so that the rows run out at the end of the hour: a row
     * takes ~3.1 calls with merged blobs, 1 without. */
    double calls_per_row = g->enrich ? 3.1 : 1.0;
    for (int64_t sec = 1; g->ncalls < g->limit; sec++) {
        int64_t left_s = SPAN_MS / 1000 - sec + 1;
        double want = (double)(g->limit - g->ncalls) * calls_per_row / (double)g->npods /
                      (double)(left_s > 1 ? left_s : 1);
        uint32_t batch = want < 1 ? 1 : (uint32_t)ceil(want);
        for (size_t i = 0; i < g->npods && g->ncalls < g->limit; i++) {
            pod *p = &g->pods[i];
            int64_t now = T0 + sec * 1000 + (int64_t)(i * 997 % 1000); /* pods a little apart */
            if (cp_agent_gen_calls(p->g, batch, now) != CP_OK || cp_agent_gen_flush_all(p->g) != CP_OK)
                return CP_ENOMEM;
            for (int s = 0; s < CP_AGENT_NSTREAMS; s++) {
                size_t len;
                const uint8_t *b = cp_agent_gen_pending(p->g, (cp_agent_stream)s, &len);
                if (cp_buf_append(&p->file[s], b, len) != CP_OK) return CP_ENOMEM;
                cp_agent_gen_consume(p->g, (cp_agent_stream)s, len);
            }
            int st = pod_feed(p);
            if (st != CP_OK) return st;
            /* every call of the batch is assembled: its trace bytes are not needed again */
            p->base[CP_AGENT_TRACE] += p->file[CP_AGENT_TRACE].len;
            cp_buf_reset(&p->file[CP_AGENT_TRACE]);
        }
    }
    for (size_t i = 0; i < g->npods; i++) {
        if (g->pods[i].open && row_close(&g->pods[i]) != CP_OK) return CP_ENOMEM;
        pod_free(&g->pods[i]);
    }
    free(g->pods);
    g->pods = NULL;
    cp_buf_free(&g->json);
    cp_buf_free(&g->scratch);
    return CP_OK;
}

/* ---- compaction order ----------------------------------------------------------------------- */

static int cmp_str(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

#define CMP(x, y) \
    do { \
        if ((x) != (y)) return (x) < (y) ? -1 : 1; \
    } while (0)

/* --order pod: the layout before issue 14 (namespace, duration range, pod, time, ...) */
static int g_order_pod;

/* compaction's order (catalog_sqlite_cold.c, cp_cold.h "the cold writer"): namespace,
 * duration range, time, restart, pod_hash (signed), trace pointer; or, with --order pod,
 * the earlier namespace, duration range, pod, time, restart, trace pointer */
static int cmp_call(const void *pa, const void *pb)
{
    const cp_call *a = *(const cp_call *const *)pa, *b = *(const cp_call *const *)pb;
    int c = cmp_str(a->ns, a->ns_len, b->ns, b->ns_len);
    if (c) return c;
    CMP(cp_cold_range_of(a->duration_ms), cp_cold_range_of(b->duration_ms));
    if (g_order_pod && (c = cmp_str(a->pod, a->pod_len, b->pod, b->pod_len))) return c;
    CMP(a->ts_ms, b->ts_ms);
    CMP(a->restart_ms, b->restart_ms);
    if (!g_order_pod) {
        CMP((int64_t)cp_pod_hash(a->ns, a->ns_len, a->pod, a->pod_len),
            (int64_t)cp_pod_hash(b->ns, b->ns_len, b->pod, b->pod_len));
    }
    CMP(a->trace_file_index, b->trace_file_index);
    CMP(a->buffer_offset, b->buffer_offset);
    CMP(a->record_index, b->record_index);
    return 0;
}

/* ---- rows ----------------------------------------------------------------------------------- */

/* A call with its params parsed into map entries and its trace index formatted. */
typedef struct prow {
    const cp_call *c;
    const cp_pq_map_entry *map;
    size_t nmap;
    const char *idx;
    size_t idx_len;
} prow;

static cp_pq_bytes bytes_of(const void *p, size_t n) { return (cp_pq_bytes){(const uint8_t *)p, n}; }

/* cp_cold_call_row without the parsing: the same values (checked in prepare_rows). */
static void fill_row(const prow *r, cp_pq_value row[CP_COLD_C_COUNT])
{
    const cp_call *c = r->c;
    memset(row, 0, sizeof(cp_pq_value) * CP_COLD_C_COUNT);
    row[CP_COLD_C_TIME].i = c->ts_ms;
    row[CP_COLD_C_CPU].i = c->cpu_time;
    row[CP_COLD_C_WAIT].i = c->wait_time;
    row[CP_COLD_C_MEMORY].i = c->memory_used;
    row[CP_COLD_C_DURATION].i = c->duration_ms;
    row[CP_COLD_C_NONBLOCKING].i = c->non_blocking;
    row[CP_COLD_C_QUEUE].i = c->queue_wait_ms;
    row[CP_COLD_C_SUSPEND].i = c->suspend_ms;
    row[CP_COLD_C_CALLS].i = c->calls;
    row[CP_COLD_C_TRANSACTIONS].i = c->transactions;
    row[CP_COLD_C_LOGS_GENERATED].i = c->logs_generated;
    row[CP_COLD_C_LOGS_WRITTEN].i = c->logs_written;
    row[CP_COLD_C_FILE_READ].i = c->file_read;
    row[CP_COLD_C_FILE_WRITTEN].i = c->file_written;
    row[CP_COLD_C_NET_READ].i = c->net_read;
    row[CP_COLD_C_NET_WRITTEN].i = c->net_written;
    row[CP_COLD_C_NAMESPACE].b = bytes_of(c->ns, c->ns_len);
    row[CP_COLD_C_SERVICE].b = bytes_of(c->service, c->service_len);
    row[CP_COLD_C_POD].b = bytes_of(c->pod, c->pod_len);
    row[CP_COLD_C_RESTART].i = c->restart_ms;
    row[CP_COLD_C_METHOD].b = bytes_of(c->method, c->method_len);
    row[CP_COLD_C_PARAMS].map = r->map;
    row[CP_COLD_C_PARAMS].nmap = r->nmap;
    row[CP_COLD_C_TRACE_INDEX].b = bytes_of(r->idx, r->idx_len);
    if (c->trace) row[CP_COLD_C_TRACE].b = bytes_of(c->trace, c->trace_len);
    else row[CP_COLD_C_TRACE].null = 1;
    row[CP_COLD_C_THREAD].b = bytes_of(c->thread, c->thread_len);
    row[CP_COLD_C_METHOD_ID].i = c->method_id;
    if (c->trace_reason) row[CP_COLD_C_TRACE_REASON].b = bytes_of(c->trace_reason, strlen(c->trace_reason));
    else row[CP_COLD_C_TRACE_REASON].null = 1;
}

static int same_bytes(cp_pq_bytes a, cp_pq_bytes b) { return a.len == b.len && (!a.len || !memcmp(a.p, b.p, a.len)); }

static int same_value(const cp_pq_value *a, const cp_pq_value *b)
{
    if (a->null != b->null || a->i != b->i || !same_bytes(a->b, b->b) || a->nmap != b->nmap) return 0;
    for (size_t e = 0; e < a->nmap; e++) {
        const cp_pq_map_entry *x = &a->map[e], *y = &b->map[e];
        if (!same_bytes(x->key, y->key) || x->nvalues != y->nvalues || (!x->values) != (!y->values)) return 0;
        for (size_t k = 0; k < x->nvalues; k++)
            if (!same_bytes(x->values[k], y->values[k]) || (!x->values[k].p) != (!y->values[k].p)) return 0;
    }
    return 1;
}

/* Rows in compaction order, params parsed once (into the arena); every row is checked
 * against cp_cold_call_row. Also counts what the data looks like. */
typedef struct datastats {
    uint64_t params_entries, params_values, params_json_bytes, method_bytes, trace_rows, trace_bytes;
    uint32_t *blob_len;   /* sorted, for percentiles */
    size_t nblob;
    double blob_ratio_page, blob_ratio_each;
} datastats;

static int prepare_rows(gen *g, prow **out, datastats *ds)
{
    cp_call **ord = malloc(g->ncalls * sizeof *ord);
    prow *rows = calloc(g->ncalls, sizeof *rows);
    cp_cold_rowbuf *rb;
    if (!ord || !rows || cp_cold_rowbuf_new(&rb) != CP_OK) return CP_ENOMEM;
    for (size_t i = 0; i < g->ncalls; i++) ord[i] = &g->calls[i];
    qsort(ord, g->ncalls, sizeof *ord, cmp_call);
    memset(ds, 0, sizeof *ds);
    ds->blob_len = malloc(g->ncalls * sizeof *ds->blob_len);
    if (!ds->blob_len) return CP_ENOMEM;
    for (size_t i = 0; i < g->ncalls; i++) {
        const cp_call *c = ord[i];
        cp_pq_value ref[CP_COLD_C_COUNT], mine[CP_COLD_C_COUNT];
        int st = cp_cold_call_row(rb, c, ref);
        if (st != CP_OK) {
            fprintf(stderr, "bench_parquet: call %zu: cp_cold_call_row failed (%d): %.*s\n", i, st,
                    (int)c->params_json_len, c->params_json);
            return st;
        }
        prow *r = &rows[i];
        r->c = c;
        const cp_pq_value *pv = &ref[CP_COLD_C_PARAMS];
        r->nmap = pv->nmap;
        cp_pq_map_entry *m = pv->nmap ? arena_alloc(&g->mem, pv->nmap * sizeof *m) : NULL;
        for (size_t e = 0; e < pv->nmap; e++) {
            const cp_pq_map_entry *src = &pv->map[e];
            m[e].key = bytes_of(arena_copy(&g->mem, src->key.p, src->key.len), src->key.len);
            m[e].nvalues = src->nvalues;
            m[e].values = NULL;
            if (src->values) {
                cp_pq_bytes *v = arena_alloc(&g->mem, (src->nvalues ? src->nvalues : 1) * sizeof *v);
                for (size_t k = 0; k < src->nvalues; k++)
                    v[k] = src->values[k].p ? bytes_of(arena_copy(&g->mem, src->values[k].p, src->values[k].len),
                                                       src->values[k].len)
                                            : (cp_pq_bytes){NULL, 0};
                m[e].values = v;
            }
            ds->params_values += src->nvalues;
        }
        r->map = m;
        const cp_pq_bytes *ix = &ref[CP_COLD_C_TRACE_INDEX].b;
        r->idx = arena_copy(&g->mem, ix->p, ix->len);
        r->idx_len = ix->len;
        fill_row(r, mine);
        for (int col = 0; col < CP_COLD_C_COUNT; col++)
            if (!same_value(&mine[col], &ref[col])) {
                fprintf(stderr, "bench_parquet: row %zu column %s: pre-parsed row differs from cp_cold_call_row\n", i,
                        cp_cold_calls_schema[col].name);
                return CP_EINVAL;
            }
        ds->params_entries += pv->nmap;
        ds->params_json_bytes += c->params_json_len;
        ds->method_bytes += c->method_len;
        if (c->trace) {
            ds->blob_len[ds->nblob++] = (uint32_t)c->trace_len;
            ds->trace_rows++;
            ds->trace_bytes += c->trace_len;
        }
    }
    cp_cold_rowbuf_free(rb);
    free(ord);
    *out = rows;
    return CP_OK;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* How the blobs compress with ZSTD level 1: as the trace column's pages (16 384 blobs
 * back to back, what the writer compresses) and one by one (the first 20 000). */
static void blob_ratios(const prow *rows, size_t n, datastats *ds)
{
    ZSTD_CCtx *z = ZSTD_createCCtx();
    cp_buf page, comp;
    cp_buf_init(&page);
    cp_buf_init(&comp);
    uint64_t in = 0, outb = 0, in1 = 0, out1 = 0;
    size_t each = 0;
    for (size_t i = 0; i < n; i++) {
        const cp_call *c = rows[i].c;
        if (c->trace) {
            cp_buf_append(&page, c->trace, c->trace_len);
            if (each < 20000) {
                size_t bound = ZSTD_compressBound(c->trace_len);
                cp_buf_reset(&comp);
                if (cp_buf_reserve(&comp, bound) == CP_OK) {
                    size_t k = ZSTD_compressCCtx(z, comp.data, bound, c->trace, c->trace_len, 1);
                    if (!ZSTD_isError(k)) in1 += c->trace_len, out1 += k, each++;
                }
            }
        }
        if ((i + 1) % 16384 == 0 || i + 1 == n) {
            size_t bound = ZSTD_compressBound(page.len);
            cp_buf_reset(&comp);
            if (page.len && cp_buf_reserve(&comp, bound) == CP_OK) {
                size_t k = ZSTD_compressCCtx(z, comp.data, bound, page.data, page.len, 1);
                if (!ZSTD_isError(k)) in += page.len, outb += k;
            }
            cp_buf_reset(&page);
        }
    }
    ds->blob_ratio_page = outb ? (double)in / (double)outb : 0;
    ds->blob_ratio_each = out1 ? (double)in1 / (double)out1 : 0;
    cp_buf_free(&page);
    cp_buf_free(&comp);
    ZSTD_freeCCtx(z);
}

/* ---- our writer, timed ---------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int sink_file(void *ud, const void *p, size_t n) { return fwrite(p, 1, n, ud) == n ? 0 : CP_EIO; }

/* One file: rows pre-parsed (compaction_path 0) or through cp_cold_call_row (1). */
static int write_ours(const opts *o, const char *path, const prow *rows, size_t n, int compaction_path, double *secs,
                      uint64_t *bytes)
{
    char err[256];
    cp_cold_rowbuf *rb = NULL;
    if (compaction_path && cp_cold_rowbuf_new(&rb) != CP_OK) return CP_ENOMEM;
    double t0 = now_s();
    FILE *f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "bench_parquet: create %s: %s\n", path, strerror(errno));
        cp_cold_rowbuf_free(rb);
        return CP_EIO;
    }
    cp_pq_writer *w;
    int st = cp_pq_writer_new(cp_cold_calls_schema, CP_COLD_C_COUNT, &o->pq, sink_file, f, &w, err, sizeof err);
    if (st != CP_OK) {
        fprintf(stderr, "bench_parquet: %s\n", err);
        fclose(f);
        cp_cold_rowbuf_free(rb);
        return st;
    }
    cp_pq_value row[CP_COLD_C_COUNT];
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        if (compaction_path) st = cp_cold_call_row(rb, rows[i].c, row);
        else fill_row(&rows[i], row);
        if (st == CP_OK) st = cp_pq_writer_add(w, row);
    }
    if (st == CP_OK) st = cp_pq_writer_finish(w);
    if (st != CP_OK) fprintf(stderr, "bench_parquet: write %s: %s\n", path, cp_pq_writer_errmsg(w));
    *bytes = cp_pq_writer_bytes(w);
    cp_pq_writer_free(w);
    if (fclose(f) != 0 && st == CP_OK) {
        fprintf(stderr, "bench_parquet: close %s: %s\n", path, strerror(errno));
        st = CP_EIO;
    }
    *secs = now_s() - t0;
    cp_cold_rowbuf_free(rb);
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct timing {
    double best, median, t[MAX_RUNS];
    uint64_t bytes;
    int ok;
} timing;

static void summarize(timing *t, size_t runs)
{
    double s[MAX_RUNS];
    memcpy(s, t->t, runs * sizeof *s);
    qsort(s, runs, sizeof *s, cmp_double);
    t->best = s[0];
    t->median = runs % 2 ? s[runs / 2] : (s[runs / 2 - 1] + s[runs / 2]) / 2;
}

static int time_ours(const opts *o, const char *path, const prow *rows, size_t n, int compaction_path, timing *t)
{
    memset(t, 0, sizeof *t);
    for (size_t r = 0; r < o->runs; r++) {
        uint64_t bytes;
        int st = write_ours(o, path, rows, n, compaction_path, &t->t[r], &bytes);
        if (st != CP_OK) return st;
        if (r && bytes != t->bytes) {
            fprintf(stderr, "bench_parquet: run %zu wrote %llu bytes, run 0 %llu (output must be deterministic)\n", r,
                    (unsigned long long)bytes, (unsigned long long)t->bytes);
            return CP_EINVAL;
        }
        t->bytes = bytes;
        if (!o->json)
            fprintf(stderr, "  %s run %zu: %.3f s, %llu bytes\n", compaction_path ? "compaction path" : "cp_pq_writer",
                    r + 1, t->t[r], (unsigned long long)bytes);
    }
    summarize(t, o->runs);
    t->ok = 1;
    return CP_OK;
}

/* ---- DuckDB through node -------------------------------------------------------------------- */

typedef struct colsize {
    char path[256];
    uint64_t comp[2], unc[2];      /* [0] ours, [1] DuckDB */
    char enc[2][256];
    int have[2];
} colsize;

typedef struct duck {
    int ok;
    char version[64], why[256];
    timing t1, tdef;
    int def_threads;
    double load_s;
    uint64_t count_ours, count_duck1, count_duckd;
    uint64_t rg[2];                 /* row groups: ours, DuckDB (threads=1 file) */
    colsize cols[MAX_COLS];
    size_t ncols;
} duck;

static colsize *col_get(duck *d, const char *path)
{
    for (size_t i = 0; i < d->ncols; i++)
        if (!strcmp(d->cols[i].path, path)) return &d->cols[i];
    if (d->ncols == MAX_COLS) return NULL;
    colsize *c = &d->cols[d->ncols++];
    memset(c, 0, sizeof *c);
    snprintf(c->path, sizeof c->path, "%s", path);
    return c;
}

static void parse_times(timing *t, const char *list, size_t runs)
{
    size_t n = 0;
    const char *p = list;
    while (*p && n < runs && n < MAX_RUNS) {
        char *end;
        t->t[n++] = strtod(p, &end);
        if (end == p) break;
        p = *end == ',' ? end + 1 : end;
    }
    if (n == runs) {
        summarize(t, runs);
        t->ok = 1;
    }
}

/* Runs bench/parquet_duckdb.mjs on our file and reads its "DUCK ..." lines. */
static void run_duckdb(const opts *o, const char *ours, const char *dir, duck *d)
{
    memset(d, 0, sizeof *d);
    char cmd[20000];
    snprintf(cmd, sizeof cmd, "'%s' '%s' --in '%s' --out-dir '%s' --runs %llu --threads 1,0 --tools '%s' 2>&1", o->node,
             o->script, ours, dir, (unsigned long long)o->runs, o->tools);
    FILE *p = popen(cmd, "r");
    if (!p) {
        snprintf(d->why, sizeof d->why, "cannot run node: %s", strerror(errno));
        return;
    }
    char line[4096];
    int got_runs = 0;
    while (fgets(line, sizeof line, p)) {
        line[strcspn(line, "\n")] = 0;
        char a[256], b[256], e[256];
        unsigned long long x, y;
        double f;
        if (strncmp(line, "DUCK ", 5) != 0) {
            if (!o->json || line[0]) fprintf(stderr, "  duckdb: %s\n", line);
            if (!d->why[0] && strstr(line, "rror")) snprintf(d->why, sizeof d->why, "%.200s", line);
            continue;
        }
        const char *l = line + 5;
        if (sscanf(l, "version %63s", d->version) == 1) continue;
        if (sscanf(l, "load rows=%llu s=%lf", &x, &f) == 2) {
            d->load_s = f;
            continue;
        }
        if (sscanf(l, "run threads=%255s setting=%llu bytes=%llu times=%255s", a, &x, &y, b) == 4) {
            timing *t = !strcmp(a, "1") ? &d->t1 : &d->tdef;
            if (t == &d->tdef) d->def_threads = (int)x;
            t->bytes = y;
            parse_times(t, b, o->runs);
            got_runs += t->ok;
            continue;
        }
        if (sscanf(l, "count which=%255s rows=%llu", a, &x) == 2) {
            if (!strcmp(a, "ours")) d->count_ours = x;
            else if (!strcmp(a, "duck1")) d->count_duck1 = x;
            else d->count_duckd = x;
            continue;
        }
        if (sscanf(l, "rowgroups which=%255s n=%llu", a, &x) == 2) {
            d->rg[!strcmp(a, "ours") ? 0 : 1] = x;
            continue;
        }
        if (sscanf(l, "col which=%255s path=%255s comp=%llu unc=%llu enc=%255s", a, b, &x, &y, e) == 5) {
            colsize *cs = col_get(d, b);
            int k = !strcmp(a, "ours") ? 0 : 1;
            if (cs) {
                cs->comp[k] = x, cs->unc[k] = y, cs->have[k] = 1;
                snprintf(cs->enc[k], sizeof cs->enc[k], "%s", e);
            }
            continue;
        }
    }
    int rc = pclose(p);
    if (rc != 0 && !d->why[0]) snprintf(d->why, sizeof d->why, "%s exited with status %d", o->script, rc);
    d->ok = rc == 0 && got_runs == 2;
    if (!d->ok && !d->why[0]) snprintf(d->why, sizeof d->why, "no timings from %s", o->script);
}

/* ---- output --------------------------------------------------------------------------------- */

static const char *human(double v, char *buf, size_t n)
{
    /* thousands separated by spaces, as docs/BENCHMARKS.md writes them */
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.0f", v);
    size_t len = strlen(tmp), j = 0;
    for (size_t i = 0; i < len && j + 2 < n; i++) {
        if (i && (len - i) % 3 == 0 && tmp[i - 1] != '-') buf[j++] = ' ';
        buf[j++] = tmp[i];
    }
    buf[j] = 0;
    return buf;
}

static uint32_t pct(const datastats *ds, double q)
{
    if (!ds->nblob) return 0;
    size_t i = (size_t)(q * (double)(ds->nblob - 1) + 0.5);
    return ds->blob_len[i];
}

static void print_text(const opts *o, size_t n, const datastats *ds, const timing *ours, const timing *comp,
                       const duck *d, double gen_s, uint64_t mem_bytes)
{
    char h1[32], h2[32], h3[32];
    printf("\nParquet write: %s calls rows (%llu pods in 5 namespaces, 10 services; agent generator depth 3..%llu;\n"
           "one hour), sorted as compaction sorts them; generated and assembled in %.1f s (not timed), %.0f MB held\n",
           human((double)n, h1, sizeof h1), (unsigned long long)o->pods, (unsigned long long)o->depth, gen_s,
           (double)mem_bytes / 1e6);
    printf("data: %.1f params entries/row (%.1f values, %.0f bytes of params JSON), method %.0f bytes; %.1f%% of rows\n"
           "with a trace blob: mean %.0f B, p50 %u B, p90 %u B, p99 %u B, max %u B; blobs compress %.1fx with zstd-1\n"
           "one by one, %.1fx as 16 384-blob pages\n",
           (double)ds->params_entries / (double)n, (double)ds->params_values / (double)n,
           (double)ds->params_json_bytes / (double)n, (double)ds->method_bytes / (double)n,
           100.0 * (double)ds->trace_rows / (double)n,
           ds->trace_rows ? (double)ds->trace_bytes / (double)ds->trace_rows : 0,
           pct(ds, 0.5), pct(ds, 0.9), pct(ds, 0.99), pct(ds, 1.0), ds->blob_ratio_each, ds->blob_ratio_page);
    printf("\n| writer | best s | median s | rows/s (best) | file bytes | bytes/row |\n"
           "|---|---:|---:|---:|---:|---:|\n");
    char label[128] = "compaction's options";
    if (o->pq.zstd_level || o->pq.row_group_rows || o->pq.page_rows)
        snprintf(label, sizeof label, "zstd %d, %zu-row groups, %zu-row pages", o->pq.zstd_level ? o->pq.zstd_level : 1,
                 o->pq.row_group_rows ? o->pq.row_group_rows : 65536, o->pq.page_rows ? o->pq.page_rows : 16384);
    printf("| cloudprof cp_pq_writer (%s) | %.3f | %.3f | **%s** | %s | %.1f |\n", label, ours->best, ours->median,
           human((double)n / ours->best, h1, sizeof h1), human((double)ours->bytes, h2, sizeof h2),
           (double)ours->bytes / (double)n);
    if (comp->ok)
        printf("| cloudprof, compaction path (+ cp_cold_call_row) | %.3f | %.3f | %s | %s | %.1f |\n", comp->best,
               comp->median, human((double)n / comp->best, h1, sizeof h1), human((double)comp->bytes, h2, sizeof h2),
               (double)comp->bytes / (double)n);
    if (d->ok) {
        printf("| DuckDB %s COPY (zstd), threads=1 | %.3f | %.3f | **%s** | %s | %.1f |\n", d->version, d->t1.best,
               d->t1.median, human((double)n / d->t1.best, h1, sizeof h1), human((double)d->t1.bytes, h2, sizeof h2),
               (double)d->t1.bytes / (double)n);
        printf("| DuckDB %s COPY (zstd), threads=%d (default) | %.3f | %.3f | %s | %s | %.1f |\n", d->version,
               d->def_threads, d->tdef.best, d->tdef.median, human((double)n / d->tdef.best, h1, sizeof h1),
               human((double)d->tdef.bytes, h2, sizeof h2), (double)d->tdef.bytes / (double)n);
        double tr1 = d->t1.best / ours->best, trd = d->tdef.best / ours->best;
        double sr = (double)ours->bytes / (double)d->t1.bytes;
        printf("\ntime ratio DuckDB / ours (best of %llu; >= 1: ours at least as fast): threads=1 **%.2f**"
               " (median %.2f), threads=%d %.2f (median %.2f)\n",
               (unsigned long long)o->runs, tr1, d->t1.median / ours->median, d->def_threads, trd,
               d->tdef.median / ours->median);
        printf("size ratio ours / DuckDB (goal <= 1.10): **%.3f** (threads=1 file; %.3f against the threads=%d file)\n",
               sr, (double)ours->bytes / (double)d->tdef.bytes, d->def_threads);
        printf("goal: speed %s, size %s\n", tr1 >= 1.0 ? "met" : "NOT met", sr <= 1.10 ? "met" : "NOT met");
        printf("rows (DuckDB count(*)): ours %s, DuckDB threads=1 %s, threads=%d %s: %s\n",
               human((double)d->count_ours, h1, sizeof h1), human((double)d->count_duck1, h2, sizeof h2),
               d->def_threads, human((double)d->count_duckd, h3, sizeof h3),
               d->count_ours == n && d->count_duck1 == n && d->count_duckd == n ? "match" : "MISMATCH");
        printf("row groups: ours %llu, DuckDB %llu; DuckDB load of our file into a table %.2f s (not timed)\n",
               (unsigned long long)d->rg[0], (unsigned long long)d->rg[1], d->load_s);
        printf("\nper column (compressed bytes of all chunks, from each footer; DuckDB: the threads=1 file)\n\n");
        printf("| column | ours bytes | ours B/row | ours encodings | DuckDB bytes | DuckDB B/row | DuckDB encodings | "
               "ours / DuckDB |\n|---|---:|---:|---|---:|---:|---|---:|\n");
        uint64_t tot[2] = {0, 0};
        for (size_t i = 0; i < d->ncols; i++) {
            const colsize *c = &d->cols[i];
            tot[0] += c->comp[0], tot[1] += c->comp[1];
            char r[32];
            if (c->have[0] && c->have[1] && c->comp[1])
                snprintf(r, sizeof r, "%.2f", (double)c->comp[0] / (double)c->comp[1]);
            else snprintf(r, sizeof r, "-");
            printf("| %s | %s | %.2f | %s | %s | %.2f | %s | %s |\n", c->path, human((double)c->comp[0], h1, sizeof h1),
                   (double)c->comp[0] / (double)n, c->have[0] ? c->enc[0] : "-",
                   human((double)c->comp[1], h2, sizeof h2), (double)c->comp[1] / (double)n,
                   c->have[1] ? c->enc[1] : "-", r);
        }
        printf("| all columns | %s | %.1f | | %s | %.1f | | %.3f |\n", human((double)tot[0], h1, sizeof h1),
               (double)tot[0] / (double)n, human((double)tot[1], h2, sizeof h2), (double)tot[1] / (double)n,
               tot[1] ? (double)tot[0] / (double)tot[1] : 0);
    } else {
        printf("\nDuckDB: not run (%s)\n", o->no_duckdb ? "--no-duckdb" : d->why);
    }
}

static void json_timing(const char *name, const timing *t, size_t n, int comma)
{
    printf("%s\"%s\":{\"best_s\":%.4f,\"median_s\":%.4f,\"rows_per_s\":%.0f,\"bytes\":%llu,\"bytes_per_row\":%.2f}",
           comma ? "," : "", name, t->best, t->median, (double)n / t->best, (unsigned long long)t->bytes,
           (double)t->bytes / (double)n);
}

static void print_json(const opts *o, size_t n, const datastats *ds, const timing *ours, const timing *comp,
                       const duck *d)
{
    printf("{\"bench\":\"parquet\",\"rows\":%zu,\"pods\":%llu,\"depth\":%llu,\"runs\":%llu,\"agent_only\":%s,"
           "\"zstd_level\":%d,\"row_group_rows\":%zu,\"page_rows\":%zu,"
           "\"blob_mean\":%.0f,\"blob_p50\":%u,\"blob_p99\":%u,\"blob_zstd1_ratio\":%.2f,",
           n, (unsigned long long)o->pods, (unsigned long long)o->depth, (unsigned long long)o->runs,
           o->agent_only ? "true" : "false", o->pq.zstd_level ? o->pq.zstd_level : 1,
           o->pq.row_group_rows ? o->pq.row_group_rows : 65536, o->pq.page_rows ? o->pq.page_rows : 16384,
           ds->trace_rows ? (double)ds->trace_bytes / (double)ds->trace_rows : 0, pct(ds, 0.5), pct(ds, 0.99),
           ds->blob_ratio_each);
    json_timing("ours", ours, n, 0);
    if (comp->ok) json_timing("compaction_path", comp, n, 1);
    if (d->ok) {
        printf(",\"duckdb\":{\"version\":\"%s\",\"default_threads\":%d,", d->version, d->def_threads);
        json_timing("threads1", &d->t1, n, 0);
        json_timing("default", &d->tdef, n, 1);
        printf("},\"time_ratio_threads1\":%.3f,\"time_ratio_default\":%.3f,\"size_ratio\":%.4f,"
               "\"rows_ours\":%llu,\"rows_duckdb\":%llu,\"rows_match\":%s,\"columns\":[",
               d->t1.best / ours->best, d->tdef.best / ours->best, (double)ours->bytes / (double)d->t1.bytes,
               (unsigned long long)d->count_ours, (unsigned long long)d->count_duck1,
               d->count_ours == n && d->count_duck1 == n && d->count_duckd == n ? "true" : "false");
        for (size_t i = 0; i < d->ncols; i++)
            printf("%s{\"path\":\"%s\",\"ours\":%llu,\"duckdb\":%llu}", i ? "," : "", d->cols[i].path,
                   (unsigned long long)d->cols[i].comp[0], (unsigned long long)d->cols[i].comp[1]);
        printf("]");
    } else {
        printf(",\"duckdb\":null");
    }
    printf("}\n");
}

/* ---- main ----------------------------------------------------------------------------------- */

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_parquet [--rows N] [--pods N] [--depth D] [--runs N] [--dir DIR] [--keep] [--json]\n"
               "                     [--agent-only] [--no-duckdb] [--node PATH] [--script PATH] [--tools DIR]\n"
               "                     [--zstd-level L] [--row-group-rows N] [--page-rows N] [--order time|pod]\n");
}

static int parse_opts(int argc, char **argv, opts *o)
{
    const char *tmp = getenv("TMPDIR");
    *o = (opts){.rows = 1000000,
                .pods = 40,
                .depth = 8,
                .runs = 3,
                .dir = tmp && *tmp ? tmp : "/tmp",
                .node = "node",
                .script = CP_SOURCE_DIR "/bench/parquet_duckdb.mjs",
                .tools = CP_SOURCE_DIR "/tests/tools"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int st = CP_OK;
        uint64_t x = 0;
        if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--keep")) o->keep = 1;
        else if (!strcmp(a, "--no-duckdb")) o->no_duckdb = 1;
        else if (!strcmp(a, "--agent-only")) o->agent_only = 1;
        else if (v && !strcmp(a, "--rows")) st = cp_parse_u64(argv[++i], 100000000, &o->rows);
        else if (v && !strcmp(a, "--pods")) st = cp_parse_u64(argv[++i], 10000, &o->pods);
        else if (v && !strcmp(a, "--depth")) st = cp_parse_u64(argv[++i], CP_AGENT_MAX_DEPTH, &o->depth);
        else if (v && !strcmp(a, "--runs")) st = cp_parse_u64(argv[++i], MAX_RUNS, &o->runs);
        else if (v && !strcmp(a, "--dir")) o->dir = argv[++i];
        else if (v && !strcmp(a, "--order") && (!strcmp(v, "time") || !strcmp(v, "pod"))) g_order_pod = !strcmp(argv[++i], "pod");
        else if (v && !strcmp(a, "--node")) o->node = argv[++i];
        else if (v && !strcmp(a, "--script")) o->script = argv[++i];
        else if (v && !strcmp(a, "--tools")) o->tools = argv[++i];
        else if (v && !strcmp(a, "--zstd-level")) {
            if (!strcmp(v, "-1")) o->pq.zstd_level = -1, i++;
            else if ((st = cp_parse_u64(argv[++i], 22, &x)) == CP_OK) o->pq.zstd_level = (int)x;
        } else if (v && !strcmp(a, "--row-group-rows")) {
            if ((st = cp_parse_u64(argv[++i], 100000000, &x)) == CP_OK) o->pq.row_group_rows = (size_t)x;
        } else if (v && !strcmp(a, "--page-rows")) {
            if ((st = cp_parse_u64(argv[++i], 100000000, &x)) == CP_OK) o->pq.page_rows = (size_t)x;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else st = CP_EINVAL;
        if (st != CP_OK) {
            fprintf(stderr, "bench_parquet: bad argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (o->rows < 1000 || o->pods == 0 || o->depth == 0 || o->runs == 0) {
        fprintf(stderr, "bench_parquet: --rows >= 1000; --pods, --depth, --runs > 0\n");
        return 2;
    }
    return 0;
}

/* Removes what the run wrote into dir, and dir. */
static void remove_dir(const char *dir)
{
    static const char *const names[] = {"ours.parquet", "ours_compaction.parquet", "duck_t1.parquet",
                                        "duck_tdefault.parquet"};
    char p[4300];
    for (size_t i = 0; i < CP_ARRAY_LEN(names); i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
    rmdir(dir);
}

int main(int argc, char **argv)
{
    opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc) return rc;

    if (!o.json)
        fprintf(stderr, "bench_parquet: generating %llu calls from %llu emulated agents (not timed)\n",
                (unsigned long long)o.rows, (unsigned long long)o.pods);
    double g0 = now_s();
    gen g = {0};
    int st = generate(&g, &o);
    prow *rows = NULL;
    datastats ds;
    if (st == CP_OK) st = prepare_rows(&g, &rows, &ds);
    if (st != CP_OK) {
        fprintf(stderr, "bench_parquet: generating the calls failed (%d)\n", st);
        return 1;
    }
    size_t n = g.ncalls;
    qsort(ds.blob_len, ds.nblob, sizeof *ds.blob_len, cmp_u32);
    blob_ratios(rows, n, &ds);
    double gen_s = now_s() - g0;
    uint64_t mem_bytes = g.mem.bytes + n * (sizeof(cp_call) + sizeof(prow));

    char dir[4096], ours_path[4200], comp_path[4200];
    snprintf(dir, sizeof dir, "%s/bench-parquet-XXXXXX", o.dir);
    if (!mkdtemp(dir)) {
        perror("bench_parquet: mkdtemp");
        return 1;
    }
    snprintf(ours_path, sizeof ours_path, "%s/ours.parquet", dir);
    snprintf(comp_path, sizeof comp_path, "%s/ours_compaction.parquet", dir);
    if (!o.json)
        fprintf(stderr,
                "bench_parquet: %zu rows ready in %.1f s (%.0f MB); writing %llu times with cp_pq_writer into %s\n", n,
                gen_s, (double)mem_bytes / 1e6, (unsigned long long)o.runs, dir);

    timing ours, comp = {0};
    st = time_ours(&o, ours_path, rows, n, 0, &ours);
    if (st == CP_OK) st = time_ours(&o, comp_path, rows, n, 1, &comp);
    if (st != CP_OK) {
        remove_dir(dir);
        return 1;
    }
    unlink(comp_path);

    duck d = {0};
    if (!o.no_duckdb) {
        if (!o.json) fprintf(stderr, "bench_parquet: DuckDB (%s)\n", o.script);
        run_duckdb(&o, ours_path, dir, &d);
    }
    if (o.json) print_json(&o, n, &ds, &ours, &comp, &d);
    else {
        print_text(&o, n, &ds, &ours, &comp, &d, gen_s, mem_bytes);
        printf("\n");
        print_json(&o, n, &ds, &ours, &comp, &d);
    }
    rc = 0;
    if (d.ok && (d.count_ours != n || d.count_duck1 != n || d.count_duckd != n)) {
        fprintf(stderr, "bench_parquet: row counts differ\n");
        rc = 1;
    }
    if (!o.no_duckdb && !d.ok) {
        fprintf(stderr, "bench_parquet: the DuckDB side failed (%s); scripts/node-tools.sh installs it\n", d.why);
        rc = 1;
    }
    if (!o.keep) remove_dir(dir);
    else if (!o.json) printf("kept %s\n", dir);
    arena_free(&g.mem);
    free(g.calls);
    free(rows);
    free(ds.blob_len);
    return rc;
}
