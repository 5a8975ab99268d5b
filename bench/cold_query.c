/* cold_query.c -- queries over cold data against DuckDB on the same files (bench_cold_query).
 *
 * Issue 14: "generate N hours (default 6) of 2 M calls/hour into cold files with the code
 * compaction uses, then run the questions through the reader and through DuckDB over the
 * same files in the same run, first query after start and warm, and report each ratio."
 *
 * Data (not timed; kept with --keep and reused with --reuse): --hours hours of --rows calls
 * each, written straight to Parquet by the compactor's writer (cp_cold_writer: one calls
 * file per hour x namespace x duration range in time order, one rollup file per hour x
 * namespace) into a directory store, and listed in a SQLite catalog as compaction lists
 * them (s3_files rows, inverted index of the indexed param request.id). Going through the
 * hot tier first would need ~70 GB of disk for a day. The calls are bench_hot's: 50 pods
 * (5 namespaces, 10 services), time rising over each hour with up to 2 s of per-pod skew,
 * durations log-normal (median 5 ms, 0.4 % above 1 s), 2 % errors, params _thread.state,
 * endpoint "/api/v1/res<r>/<n>", request.id (a unique 16-hex id per call, indexed) and
 * user.id, and a 250..350-byte trace blob cut from a pool (compressible ~2x).
 *
 * Questions (the table), over the whole span unless said:
 *   slowest          sort=-duration_ms, 100 rows
 *   latest_500ms     latest 100 with duration >= 500 ms
 *   latest_all       latest 100, all durations
 *   latest_10m       latest 100, all durations, a 10-minute window (the last hour's :30..:40)
 *   latest_10m_500   the same with duration >= 500 ms
 *   stats_all        /calls/stats (1000 columns): totals and chart, all durations
 *   stats_500ms      the same, duration >= 500 ms
 *   stats_range      the same, duration 100ms..2s (a bound inside a rollup class)
 *   stats_errors     the same, errors only
 *   param_indexed    q=$request.id=<an id of the middle hour> (the inverted index)
 *   param_scan       q=$user.id=user-4242 (not indexed: a scan)
 *   word             q=res37/32721 (a word: method, pod, param names and values)
 * Ours: through a tiered reader over the catalog (what the HTTP API runs; stats through
 * cp_stats_run). "first" = a run on a fresh reader (no open files, no cached footers; the
 * OS page cache is warm for both sides), the median of --firsts such runs (default 3),
 * "warm" = the median of --runs more on the last reader.
 * DuckDB (bench/cold_query_duckdb.mjs, @duckdb/node-api, 1 thread): the same question
 * over the same calls files (read_parquet of the list), first on a fresh instance, then
 * warm; rows with every column the API shows (as ours), or with --duck-narrow only the key
 * columns (DuckDB's best case). The answers are compared (the last row's time, the totals): a mismatch is
 * reported and makes the exit status 1.
 *
 * usage: bench_cold_query [--hours N] [--rows N] [--dir DIR] [--keep] [--reuse DIR]
 *                         [--runs N] [--firsts N] [--json] [--no-duckdb] [--duck-narrow] [--only Q1,Q2]
 *                         [--node PATH]
 *                         [--script PATH] [--tools DIR]
 *   defaults: 6 hours x 2 000 000 rows (12 M calls, ~4 GB), 5 runs, $TMPDIR or /tmp
 *   --reuse DIR  a directory a --keep run left: no generation
 * Exit status 1 on an error or a mismatch, 2 on bad usage.
 */
#include "common/cp_common.h"
#include "query/cp_query.h"
#include "query/cp_rollup.h"
#include "store/cp_catalog.h"
#include "store/cp_cold.h"
#include "store/cp_hot.h"
#include "store/cp_ostore.h"
#include "store/cp_stats.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define T0 1767225600000LL /* 2026-01-01 00:00 UTC */
#define HOUR_MS 3600000LL
#define NPODS 50
#define NMETHODS 300
#define NTHREADS 200
#define NUSERS 100000
#define NRESOURCES 100
#define BLOB_POOL (1 << 20)
#define MAX_RUNS 50
#define MAX_Q 16

typedef struct opts {
    uint64_t hours, rows, runs, firsts;
    const char *dir, *reuse, *only, *node, *script, *tools;
    int keep, json, no_duckdb, narrow;
} opts;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- data ------------------------------------------------------------------------------------ */

typedef struct pools {
    char ns[NPODS][16], svc[NPODS][32], pod[NPODS][48];
    int64_t restart[NPODS];
    int64_t pod_hash[NPODS];
    char method[NMETHODS][96];
    char thread[NTHREADS][32];
    uint8_t *blob;
} pools;

/* One generated call, compact: strings are pool indexes, params are made when written. */
typedef struct gcall {
    int64_t ts;
    int32_t duration, queue, suspend, calls, record;
    int64_t cpu, memory;
    uint64_t rid;                /* request.id */
    uint32_t res, res_n, user;
    uint32_t blob_off;
    uint16_t blob_len, method, thread;
    uint8_t pod, error, logs, tx;
} gcall;

static uint64_t rnd(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static double unit(uint64_t *s) { return (double)(rnd(s) >> 11) / 9007199254740992.0; }

static int32_t duration(uint64_t *s)
{
    double u1 = unit(s), u2 = unit(s);
    if (u1 < 1e-12) u1 = 1e-12;
    double z = sqrt(-2.0 * log(u1)) * cos(2 * M_PI * u2);
    double d = exp(log(5.0) + 2.0 * z);
    return d > 300000 ? 300000 : (int32_t)d;
}

static int pools_init(pools *p, uint64_t *s)
{
    for (int i = 0; i < NPODS; i++) {
        snprintf(p->ns[i], sizeof p->ns[i], "ns-%d", i % 5);
        snprintf(p->svc[i], sizeof p->svc[i], "service-%d", i % 10);
        snprintf(p->pod[i], sizeof p->pod[i], "service-%d-7f9c4b%02d-x%d", i % 10, i, i % 3);
        p->restart[i] = T0 - 86400000LL + i * 1000;
        p->pod_hash[i] = (int64_t)cp_pod_hash(p->ns[i], strlen(p->ns[i]), p->pod[i], strlen(p->pod[i]));
    }
    for (int i = 0; i < NMETHODS; i++)
        snprintf(p->method[i], sizeof p->method[i], "com.acme.svc%d.Handler%d.process%d(Ljava/lang/String;)V", i % 10,
                 i / 10, i % 7);
    for (int i = 0; i < NTHREADS; i++) snprintf(p->thread[i], sizeof p->thread[i], "http-nio-8080-exec-%d", i);
    p->blob = malloc(BLOB_POOL);
    if (!p->blob) return CP_ENOMEM;
    /* half random, half repeated words: compresses about 2x, like small traces */
    for (size_t i = 0; i < BLOB_POOL; i++) p->blob[i] = (i / 16) % 2 ? (uint8_t)(rnd(s) >> 13) : (uint8_t)("abcdefgh"[i % 8]);
    return CP_OK;
}

static void gen_call(const pools *p, uint64_t i, uint64_t n, int64_t hour, uint64_t *s, int32_t *seq, gcall *c)
{
    (void)p;
    int k = (int)(rnd(s) % NPODS);
    memset(c, 0, sizeof *c);
    c->pod = (uint8_t)k;
    c->ts = hour + (int64_t)((double)i / (double)n * (double)(HOUR_MS - 3000)) + (k * 37) % 2000;
    c->duration = duration(s);
    c->cpu = c->duration * (int64_t)(rnd(s) % 1000);
    c->memory = (int64_t)(rnd(s) % (64u << 20));
    c->queue = (int32_t)(rnd(s) % 3);
    c->suspend = (int32_t)(rnd(s) % 100 == 0 ? rnd(s) % 200 : 0);
    c->calls = (int32_t)(rnd(s) % 40);
    c->tx = (uint8_t)(rnd(s) % 5);
    c->logs = (uint8_t)(rnd(s) % 10);
    c->method = (uint16_t)(rnd(s) % NMETHODS);
    c->thread = (uint16_t)(rnd(s) % NTHREADS);
    c->error = rnd(s) % 50 == 0;
    c->rid = rnd(s);
    c->res = (uint32_t)(rnd(s) % NRESOURCES);
    c->res_n = (uint32_t)(rnd(s) % 100000);
    c->user = (uint32_t)(rnd(s) % NUSERS);
    c->record = seq[k]++;
    c->blob_len = (uint16_t)(250 + rnd(s) % 100);
    c->blob_off = (uint32_t)(rnd(s) % (BLOB_POOL - c->blob_len));
}

static const pools *g_pools;

/* compaction's order: namespace, duration range, time, restart, pod_hash, trace position */
static int cmp_gcall(const void *pa, const void *pb)
{
    const gcall *a = pa, *b = pb;
    const pools *p = g_pools;
    int c = strcmp(p->ns[a->pod], p->ns[b->pod]);
    if (c) return c;
#define CMP(x, y) if ((x) != (y)) return (x) < (y) ? -1 : 1
    CMP(cp_cold_range_of(a->duration), cp_cold_range_of(b->duration));
    CMP(a->ts, b->ts);
    CMP(p->restart[a->pod], p->restart[b->pod]);
    CMP(p->pod_hash[a->pod], p->pod_hash[b->pod]);
    CMP(a->record, b->record); /* tfi 1, buffer_offset = record * 40 */
#undef CMP
    return 0;
}

static void to_call(const pools *p, const gcall *g, char *params, size_t cap, cp_call *c)
{
    memset(c, 0, sizeof *c);
    c->ts_ms = g->ts;
    c->duration_ms = g->duration;
    c->cpu_time = g->cpu;
    c->wait_time = g->record % 50;
    c->memory_used = g->memory;
    c->queue_wait_ms = g->queue;
    c->suspend_ms = g->suspend;
    c->calls = g->calls;
    c->transactions = g->tx;
    c->logs_generated = g->logs;
    c->logs_written = g->logs / 2;
    c->file_read = g->rid % 100000;
    c->file_written = g->rid % 10000;
    c->net_read = (g->rid >> 20) % 1000000;
    c->net_written = (g->rid >> 40) % 1000000;
    c->ns = p->ns[g->pod], c->ns_len = strlen(c->ns);
    c->service = p->svc[g->pod], c->service_len = strlen(c->service);
    c->pod = p->pod[g->pod], c->pod_len = strlen(c->pod);
    c->restart_ms = p->restart[g->pod];
    c->method_id = g->method;
    c->method = p->method[g->method], c->method_len = strlen(c->method);
    c->thread = p->thread[g->thread], c->thread_len = strlen(c->thread);
    int n = snprintf(params, cap,
                     "{\"_thread.state\":[\"RUNNABLE\"],%s\"endpoint\":[\"/api/v1/res%u/%u\"],"
                     "\"request.id\":[\"%016llx\"],\"user.id\":[\"user-%u\"]}",
                     g->error ? "\"call.red\":[\"1\"]," : "", g->res, g->res_n, (unsigned long long)g->rid, g->user);
    c->params_json = params, c->params_json_len = (size_t)n;
    c->error = g->error;
    c->trace_file_index = 1;
    c->record_index = g->record;
    c->buffer_offset = g->record * 40;
    c->trace = p->blob + g->blob_off, c->trace_len = g->blob_len;
}

/* Commits and checkpoints the WAL: nothing else does here (serve runs cp_catalog_maintain
 * on a thread), and without it every commit's pages pile up in the WAL. */
static int checkpoint(cp_catalog *cat)
{
    int st = cp_catalog_commit(cat);
    for (int i = 0; st == CP_OK && i < 8 && cp_catalog_maintain(cat) == CP_AGAIN; i++) {
    }
    return st;
}

typedef struct gen_ctx {
    cp_catalog *cat;
    const char *uuid;
    uint64_t pending;
} gen_ctx;

static int put_index(void *ud, const char *param, const char *v, size_t vlen)
{
    gen_ctx *g = ud;
    int st = cp_catalog_index_put(g->cat, param, strlen(param), v, vlen, g->uuid);
    if (st == CP_OK && ++g->pending % 20000 == 0) st = checkpoint(g->cat);
    return st;
}

/* One hour: generate, sort, write, store, list in the catalog. */
static int gen_hour(const opts *o, const pools *p, cp_catalog *cat, cp_ostore *store, const char *tmp, uint64_t h,
                    uint64_t *total_bytes)
{
    int64_t hour = T0 + (int64_t)h * HOUR_MS;
    gcall *v = malloc(o->rows * sizeof *v);
    if (!v) return CP_ENOMEM;
    uint64_t s = 12345 + h * 7919;
    int32_t seq[NPODS] = {0};
    for (uint64_t i = 0; i < o->rows; i++) gen_call(p, i, o->rows, hour, &s, seq, &v[i]);
    g_pools = p;
    qsort(v, o->rows, sizeof *v, cmp_gcall);
    char claim[32];
    time_t t = (time_t)(hour / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    snprintf(claim, sizeof claim, "%04d%02d%02d_%02d00", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour);
    static const char *const index_params[] = {"request.id"};
    cp_cold_writer_config wc = {.dir = tmp,
                                .hour_ms = hour,
                                .claim = claim,
                                .index_params = index_params,
                                .nindex = 1,
                                .idle = (const char *const *)cp_system_idle_default,
                                .nidle = cp_system_idle_default_count,
                                .idle_fp = cp_rollup_idle_fp(cp_system_idle_default, cp_system_idle_default_count)};
    cp_cold_writer *w;
    char err[512];
    int st = cp_cold_writer_new(&wc, &w, err, sizeof err);
    if (st != CP_OK) {
        fprintf(stderr, "bench_cold_query: %s\n", err);
        free(v);
        return st;
    }
    char params[512];
    for (uint64_t i = 0; st == CP_OK && i < o->rows; i++) {
        cp_call c;
        to_call(p, &v[i], params, sizeof params, &c);
        st = cp_cold_writer_add(w, &c);
    }
    if (st == CP_OK) st = cp_cold_writer_finish(w);
    if (st != CP_OK) fprintf(stderr, "bench_cold_query: write: %s\n", cp_cold_writer_errmsg(w));
    free(v);
    for (size_t i = 0; st == CP_OK && i < cp_cold_writer_count(w); i++) {
        cp_cold_output f;
        cp_cold_writer_output(w, i, &f);
        st = store->ops->put_file(store, f.key, f.path, err, sizeof err);
        if (st != CP_OK) {
            fprintf(stderr, "bench_cold_query: store %s: %s\n", f.key, err);
            break;
        }
        unlink(f.path);
        *total_bytes += (uint64_t)f.size;
        cp_buf url;
        cp_buf_init(&url);
        store->ops->url(store, f.key, &url);
        cp_buf_putc(&url, 0);
        cp_cold_file d = {.uuid = f.key,
                          .key = f.key,
                          .url = (const char *)url.data,
                          .local_path = f.path,
                          .file_type = f.type == CP_COLD_FILE_ROLLUP ? "rollup" : "calls",
                          .ns = f.ns,
                          .duration_range = f.type == CP_COLD_FILE_CALLS ? cp_cold_range_upper(f.range) : 0,
                          .start_ms = hour,
                          .end_ms = hour + HOUR_MS,
                          .min_ts = f.min_ts,
                          .max_ts = f.max_ts,
                          .rows = f.rows,
                          .size = f.size,
                          .status = "completed",
                          .services = f.services,
                          .indexed_params = f.indexed,
                          .indexed_maxlen = f.type == CP_COLD_FILE_CALLS ? f.indexed_maxlen : NULL,
                          .claim = claim};
        st = cp_catalog_cold_file_put(cat, NULL, &d);
        cp_buf_free(&url);
        if (st == CP_OK && f.type == CP_COLD_FILE_CALLS) {
            gen_ctx g = {cat, f.key, 0};
            st = cp_cold_writer_index_each(w, i, put_index, &g);
            if (st == CP_OK) st = checkpoint(cat);
        }
        if (st != CP_OK) fprintf(stderr, "bench_cold_query: catalog: %s\n", cp_catalog_errmsg(cat));
    }
    cp_cold_writer_free(w);
    return st;
}

static int generate(const opts *o, const char dir[4000])
{
    char path[4200];
    snprintf(path, sizeof path, "%s/catalog.db", dir);
    char err[512];
    cp_catalog *cat;
    if (cp_catalog_open_sqlite(path, &cat, err, sizeof err) != CP_OK) {
        fprintf(stderr, "bench_cold_query: %s\n", err);
        return 1;
    }
    snprintf(path, sizeof path, "%s/store", dir);
    cp_ostore_config sc = {.url = path};
    cp_ostore *store;
    if (cp_ostore_open(&sc, &store, err, sizeof err) != CP_OK) {
        fprintf(stderr, "bench_cold_query: %s\n", err);
        cp_catalog_close(cat);
        return 1;
    }
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s/tmp", dir);
    cp_mkdirs(tmp, 0755);
    pools *p = calloc(1, sizeof *p);
    uint64_t s = 99;
    int st = p ? pools_init(p, &s) : CP_ENOMEM;
    uint64_t bytes = 0;
    double t0 = now_s();
    for (uint64_t h = 0; st == CP_OK && h < o->hours; h++) {
        st = gen_hour(o, p, cat, store, tmp, h, &bytes);
        fprintf(stderr, "  hour %llu of %llu written (%.0f s, %.2f GB so far)\n", (unsigned long long)h + 1,
                (unsigned long long)o->hours, now_s() - t0, (double)bytes / 1e9);
    }
    rmdir(tmp);
    if (p) free(p->blob);
    free(p);
    cp_ostore_close(store);
    cp_catalog_close(cat);
    return st == CP_OK ? 0 : 1;
}

/* ---- questions ------------------------------------------------------------------------------- */

typedef enum { Q_LATEST, Q_SLOWEST, Q_STATS, Q_PARAM, Q_WORD } qkind;

typedef struct question {
    const char *name;
    qkind kind;
    int64_t from, to, min_d, max_d;   /* max_d INT64_MAX = none */
    int errors;
    char term[128];                   /* q text */
    char param[64], value[64];        /* Q_PARAM, for DuckDB */
    /* results */
    double first_ms, warm_ms, duck_first, duck_warm;
    char ours_check[128], duck_check[128];
    size_t rows;
    uint64_t scanned;
    size_t files, skipped;
    int partial, has_duck, mismatch;
    const char *source;
} question;

typedef struct sink {
    size_t rows;
    int64_t last_ts;
    int32_t last_d;
} sink;

static int on_row(void *ud, const cp_call *c)
{
    sink *k = ud;
    k->rows++;
    k->last_ts = c->ts_ms;
    k->last_d = c->duration_ms;
    return 0;
}

static int match_q(void *ud, const cp_call_view *v) { return cp_search_match(ud, v); }

static void q_add_param(void *ud, const char *name, size_t nlen, const char *val, size_t vlen)
{
    cp_call_filter *f = ud;
    cp_cold_param *p = (cp_cold_param *)f->params + f->nparams;
    if (f->nparams < 8) {
        *p = (cp_cold_param){name, val, nlen, vlen};
        f->nparams++;
    }
}

/* Runs one question once on reader r. */
static int run_once(question *q, cp_reader *r, char *check, size_t cap)
{
    cp_call_filter f;
    memset(&f, 0, sizeof f);
    f.from_ms = q->from;
    f.to_ms = q->to;
    f.min_duration_ms = q->min_d;
    f.max_duration_ms = q->max_d;
    f.errors_only = q->errors;
    f.limit = 100;
    f.max_scan = 20000000;
    cp_search *srch = NULL;
    cp_cold_param params[8];
    cp_name needles[CP_SEARCH_MAX_TERMS];
    f.params = params;
    if (q->term[0]) {
        char err[256];
        if (cp_search_parse(q->term, strlen(q->term), &srch, err, sizeof err) != CP_OK) {
            fprintf(stderr, "bench_cold_query: %s: %s\n", q->name, err);
            return 1;
        }
        f.match = match_q;
        f.match_ud = srch;
        cp_search_required_params(srch, q_add_param, &f);
        const char *nd[CP_SEARCH_MAX_TERMS];
        size_t nl[CP_SEARCH_MAX_TERMS];
        f.nneedles = cp_search_needles(srch, nd, nl, CP_SEARCH_MAX_TERMS);
        for (size_t k = 0; k < f.nneedles; k++) needles[k] = (cp_name){nd[k], nl[k]};
        f.needles = needles;
    }
    int st;
    if (q->kind == Q_STATS) {
        cp_stats res;
        cp_stats_info info;
        st = cp_stats_run(r, &f, 1000, &res, &info);
        if (st == CP_OK) {
            snprintf(check, cap, "%llu:%lld:%lld:%lld:%lld", (unsigned long long)res.total, (long long)res.sum_duration,
                     (long long)res.sum_suspend, (long long)res.sum_queue, (long long)res.sum_transactions);
            q->rows = 1;
            q->scanned = info.scanned;
            q->files = info.cold_files;
            q->partial = info.partial;
            q->source = info.scanned_calls ? (info.rollup_entries ? "mixed" : "scan") : "rollup";
            cp_stats_free(&res);
        }
    } else {
        f.sort = q->kind == Q_SLOWEST ? CP_SORT_DURATION : CP_SORT_TS;
        f.desc = 1;
        sink k = {0, 0, 0};
        cp_search_stats ss;
        st = cp_reader_search(r, &f, on_row, &k, &ss);
        if (st == CP_OK) {
            if (q->kind == Q_SLOWEST) snprintf(check, cap, "%d:%lld", (int)k.last_d, (long long)k.last_ts);
            else if (q->kind == Q_LATEST) snprintf(check, cap, "%lld", (long long)k.last_ts);
            else snprintf(check, cap, "%zu:%lld", k.rows, (long long)(k.rows ? k.last_ts : 0));
            q->rows = k.rows;
            q->scanned = ss.scanned;
            q->files = ss.cold_files;
            q->skipped = ss.cold_skipped;
            q->partial = ss.partial;
        }
    }
    if (st != CP_OK) fprintf(stderr, "bench_cold_query: %s: %s\n", q->name, cp_reader_errmsg(r));
    cp_search_free(srch);
    return st == CP_OK ? 0 : 1;
}

typedef struct readers {
    const char *catalog;
    cp_ostore *store;
} readers;

static int open_reader(const readers *rs, cp_reader **out)
{
    char err[512];
    cp_reader *hot;
    if (cp_reader_open(rs->catalog, &hot, err, sizeof err) != CP_OK) {
        fprintf(stderr, "bench_cold_query: %s\n", err);
        return 1;
    }
    cp_tiered_config tc = {.store = rs->store};
    if (cp_reader_open_tiered(hot, &tc, out, err, sizeof err) != CP_OK) {
        fprintf(stderr, "bench_cold_query: %s\n", err);
        return 1;
    }
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int time_ours(const opts *o, const readers *rs, question *q)
{
    cp_reader *r = NULL;
    char check[128];
    double firsts[MAX_RUNS];
    for (uint64_t k = 0; k < o->firsts; k++) { /* each on a new reader: no file open yet */
        if (r) cp_reader_close(r);
        if (open_reader(rs, &r)) return 1;
        double t0 = now_s();
        if (run_once(q, r, k ? check : q->ours_check, sizeof check)) return 1;
        firsts[k] = (now_s() - t0) * 1000;
    }
    qsort(firsts, o->firsts, sizeof *firsts, cmp_double);
    q->first_ms = firsts[o->firsts / 2];
    double lat[MAX_RUNS];
    for (uint64_t i = 0; i < o->runs; i++) {
        double t0 = now_s();
        if (run_once(q, r, check, sizeof check)) return 1;
        lat[i] = (now_s() - t0) * 1000;
        if (strcmp(check, q->ours_check) != 0) {
            fprintf(stderr, "bench_cold_query: %s: run %llu answered %s, the first %s\n", q->name,
                    (unsigned long long)i + 2, check, q->ours_check);
            return 1;
        }
    }
    qsort(lat, o->runs, sizeof *lat, cmp_double);
    q->warm_ms = lat[o->runs / 2];
    cp_reader_close(r);
    return 0;
}

/* ---- DuckDB --------------------------------------------------------------------------------- */

typedef struct list_ctx {
    FILE *f;
    const char *root;
} list_ctx;

static int list_one(void *ud, const cp_ostore_item *it)
{
    list_ctx *l = ud;
    const char *base = strrchr(it->key, '/');
    base = base ? base + 1 : it->key;
    if (!strncmp(base, "cloud_profiler_", 15) && strncmp(base, "cloud_profiler_rollup", 21) != 0)
        fprintf(l->f, "%s/%s\n", l->root, it->key);
    return 0;
}

static void json_q(FILE *f, const question *q, int first)
{
    static const char *const kinds[] = {"latest", "slowest", "stats", "param", "word"};
    fprintf(f, "%s{\"name\":\"%s\",\"kind\":\"%s\",\"from\":%lld,\"to\":%lld,\"limit\":100", first ? "" : ",", q->name,
            kinds[q->kind], (long long)q->from, (long long)q->to);
    if (q->min_d > 0) fprintf(f, ",\"min_duration\":%lld", (long long)q->min_d);
    if (q->max_d < INT64_MAX) fprintf(f, ",\"max_duration\":%lld", (long long)q->max_d);
    if (q->kind == Q_PARAM) fprintf(f, ",\"param\":\"%s\",\"value\":\"%s\"", q->param, q->value);
    if (q->kind == Q_WORD) fprintf(f, ",\"word\":\"%s\"", q->term);
    fprintf(f, "}");
}

static int run_duckdb(const opts *o, const char dir[4000], const readers *rs, question *qs, size_t nq)
{
    char list[4200], spec[4200], root[4200];
    snprintf(list, sizeof list, "%s/duck_files.txt", dir);
    snprintf(spec, sizeof spec, "%s/duck_spec.json", dir);
    snprintf(root, sizeof root, "%s/store", dir);
    FILE *f = fopen(list, "w");
    if (!f) return 1;
    list_ctx l = {f, root};
    char err[256];
    rs->store->ops->list(rs->store, "", list_one, &l, err, sizeof err);
    fclose(f);
    f = fopen(spec, "w");
    if (!f) return 1;
    fprintf(f, "{\"questions\":[");
    int first = 1;
    for (size_t i = 0; i < nq; i++) {
        if (qs[i].errors) continue; /* DuckDB's side has no errors-only question */
        json_q(f, &qs[i], first);
        first = 0;
    }
    fprintf(f, "]}\n");
    fclose(f);
    char cmd[16384];
    snprintf(cmd, sizeof cmd, "'%s' '%s' --files '%s' --spec '%s' --runs %llu --tools '%s' --threads 1 --columns %s",
             o->node, o->script, list, spec, (unsigned long long)o->runs, o->tools, o->narrow ? "narrow" : "all");
    FILE *p = popen(cmd, "r");
    if (!p) return 1;
    char line[4096];
    while (fgets(line, sizeof line, p)) {
        if (strncmp(line, "DUCK ", 5) != 0) continue;
        char name[64] = "", check[128] = "";
        double fm = 0, wm = 0;
        const char *n = strstr(line, "name="), *c = strstr(line, "check="), *a = strstr(line, "first_ms="),
                   *b = strstr(line, "warm_ms=");
        if (!n || !c || !a || !b) continue;
        sscanf(n + 5, "%63s", name);
        sscanf(c + 6, "%127s", check);
        fm = atof(a + 9);
        wm = atof(b + 8);
        for (size_t i = 0; i < nq; i++) {
            if (strcmp(qs[i].name, name) != 0) continue;
            qs[i].duck_first = fm;
            qs[i].duck_warm = wm;
            snprintf(qs[i].duck_check, sizeof qs[i].duck_check, "%s", check);
            qs[i].has_duck = 1;
        }
    }
    int rc = pclose(p);
    if (rc != 0) {
        fprintf(stderr, "bench_cold_query: %s failed (status %d)\n", o->script, rc);
        return 1;
    }
    return 0;
}

/* ---- main ------------------------------------------------------------------------------------ */

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_cold_query [--hours N] [--rows N] [--dir DIR] [--keep] [--reuse DIR] [--runs N] [--firsts N]\n"
               "                        [--json] [--no-duckdb] [--duck-narrow] [--only Q1,Q2] [--node PATH] [--script PATH]\n"
               "                        [--tools DIR]\n");
}

static int parse(int argc, char **argv, opts *o)
{
    const char *tmp = getenv("TMPDIR");
    *o = (opts){.hours = 6,
                .rows = 2000000,
                .runs = 5,
                .firsts = 3,
                .dir = tmp && *tmp ? tmp : "/tmp",
                .node = "node",
                .script = CP_SOURCE_DIR "/bench/cold_query_duckdb.mjs",
                .tools = CP_SOURCE_DIR "/tests/tools"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int st = CP_OK;
        if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--keep")) o->keep = 1;
        else if (!strcmp(a, "--no-duckdb")) o->no_duckdb = 1;
        else if (!strcmp(a, "--duck-narrow")) o->narrow = 1;
        else if (v && !strcmp(a, "--hours")) st = cp_parse_u64(argv[++i], 24 * 31, &o->hours);
        else if (v && !strcmp(a, "--rows")) st = cp_parse_u64(argv[++i], 100000000, &o->rows);
        else if (v && !strcmp(a, "--runs")) st = cp_parse_u64(argv[++i], MAX_RUNS, &o->runs);
        else if (v && !strcmp(a, "--firsts")) st = cp_parse_u64(argv[++i], MAX_RUNS, &o->firsts);
        else if (v && !strcmp(a, "--dir")) o->dir = argv[++i];
        else if (v && !strcmp(a, "--reuse")) o->reuse = argv[++i];
        else if (v && !strcmp(a, "--only")) o->only = argv[++i];
        else if (v && !strcmp(a, "--node")) o->node = argv[++i];
        else if (v && !strcmp(a, "--script")) o->script = argv[++i];
        else if (v && !strcmp(a, "--tools")) o->tools = argv[++i];
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else st = CP_EINVAL;
        if (st != CP_OK) {
            fprintf(stderr, "bench_cold_query: bad argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (o->hours == 0 || o->rows < 1000 || o->runs == 0 || o->firsts == 0) {
        fprintf(stderr, "bench_cold_query: --hours > 0, --rows >= 1000, --runs > 0, --firsts > 0\n");
        return 2;
    }
    return 0;
}

static int wanted(const opts *o, const char *name)
{
    if (!o->only) return 1;
    size_t n = strlen(name);
    for (const char *p = o->only; *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && !strncmp(p, name, n)) return 1;
        p += l + (e ? 1 : 0);
    }
    return 0;
}

/* An id the middle hour has: the request.id of its generator's 1000th call. */
static void middle_id(const opts *o, char *out, size_t cap)
{
    uint64_t h = o->hours / 2, s = 12345 + h * 7919;
    int32_t seq[NPODS] = {0};
    gcall g;
    for (uint64_t i = 0; i <= 1000; i++) gen_call(NULL, i, o->rows, T0 + (int64_t)h * HOUR_MS, &s, seq, &g);
    snprintf(out, cap, "%016llx", (unsigned long long)g.rid);
}

static int rm_rf(const char *path)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", path);
    return system(cmd);
}

int main(int argc, char **argv)
{
    opts o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc;
    char dir[4000];
    if (o.reuse) {
        snprintf(dir, sizeof dir, "%s", o.reuse);
    } else {
        snprintf(dir, sizeof dir, "%s/cp-cold-query-XXXXXX", o.dir);
        if (!mkdtemp(dir)) {
            fprintf(stderr, "bench_cold_query: mkdtemp %s: %s\n", dir, strerror(errno));
            return 1;
        }
        fprintf(stderr, "bench_cold_query: writing %llu hours x %llu calls into %s\n", (unsigned long long)o.hours,
                (unsigned long long)o.rows, dir);
        if (generate(&o, dir)) return 1;
    }
    char catalog[4200], storep[4200], err[512];
    snprintf(catalog, sizeof catalog, "%s/catalog.db", dir);
    snprintf(storep, sizeof storep, "%s/store", dir);
    cp_ostore_config sc = {.url = storep};
    cp_ostore *store;
    if (cp_ostore_open(&sc, &store, err, sizeof err) != CP_OK) {
        fprintf(stderr, "bench_cold_query: %s\n", err);
        return 1;
    }
    readers rs = {catalog, store};
    int64_t end = T0 + (int64_t)o.hours * HOUR_MS, last = end - HOUR_MS;
    question all[MAX_Q] = {
        {.name = "slowest", .kind = Q_SLOWEST, .from = T0, .to = end, .max_d = INT64_MAX},
        {.name = "latest_500ms", .kind = Q_LATEST, .from = T0, .to = end, .min_d = 500, .max_d = INT64_MAX},
        {.name = "latest_all", .kind = Q_LATEST, .from = T0, .to = end, .max_d = INT64_MAX},
        {.name = "latest_10m", .kind = Q_LATEST, .from = last + 1800000, .to = last + 2400000, .max_d = INT64_MAX},
        {.name = "latest_10m_500", .kind = Q_LATEST, .from = last + 1800000, .to = last + 2400000, .min_d = 500,
         .max_d = INT64_MAX},
        {.name = "stats_all", .kind = Q_STATS, .from = T0, .to = end, .max_d = INT64_MAX},
        {.name = "stats_500ms", .kind = Q_STATS, .from = T0, .to = end, .min_d = 500, .max_d = INT64_MAX},
        {.name = "stats_range", .kind = Q_STATS, .from = T0, .to = end, .min_d = 100, .max_d = 2000},
        {.name = "stats_errors", .kind = Q_STATS, .from = T0, .to = end, .max_d = INT64_MAX, .errors = 1},
        {.name = "param_indexed", .kind = Q_PARAM, .from = T0, .to = end, .max_d = INT64_MAX},
        {.name = "param_scan", .kind = Q_PARAM, .from = T0, .to = end, .max_d = INT64_MAX},
        {.name = "word", .kind = Q_WORD, .from = T0, .to = end, .max_d = INT64_MAX},
    };
    size_t nall = 12;
    middle_id(&o, all[9].value, sizeof all[9].value);
    snprintf(all[9].param, sizeof all[9].param, "request.id");
    snprintf(all[9].term, sizeof all[9].term, "$request.id=%s", all[9].value);
    snprintf(all[10].param, sizeof all[10].param, "user.id");
    snprintf(all[10].value, sizeof all[10].value, "user-4242");
    snprintf(all[10].term, sizeof all[10].term, "$user.id=user-4242");
    snprintf(all[11].term, sizeof all[11].term, "res37/32721");
    question qs[MAX_Q];
    size_t nq = 0;
    for (size_t i = 0; i < nall; i++)
        if (wanted(&o, all[i].name)) qs[nq++] = all[i];
    rc = 0;
    for (size_t i = 0; i < nq && !rc; i++) {
        fprintf(stderr, "  ours: %s\n", qs[i].name);
        rc = time_ours(&o, &rs, &qs[i]);
    }
    if (!rc && !o.no_duckdb) rc = run_duckdb(&o, dir, &rs, qs, nq);
    if (!rc) {
        printf("machine: %ld cores; data: %llu hours x %llu calls (%s)\n", sysconf(_SC_NPROCESSORS_ONLN),
               (unsigned long long)o.hours, (unsigned long long)o.rows, dir);
        printf("| question | ours first ms | ours warm ms | DuckDB first ms | DuckDB warm ms | first ratio | warm "
               "ratio | rows | scanned | cold files | skipped | source | answer |\n");
        printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n");
        for (size_t i = 0; i < nq; i++) {
            question *q = &qs[i];
            if (q->has_duck && strcmp(q->ours_check, q->duck_check) != 0) q->mismatch = 1;
            char df[32] = "-", dw[32] = "-", rf[32] = "-", rw[32] = "-";
            if (q->has_duck) {
                snprintf(df, sizeof df, "%.1f", q->duck_first);
                snprintf(dw, sizeof dw, "%.1f", q->duck_warm);
                snprintf(rf, sizeof rf, "%.2f", q->first_ms / q->duck_first);
                snprintf(rw, sizeof rw, "%.2f", q->warm_ms / q->duck_warm);
            }
            printf("| %s | %.1f | %.1f | %s | %s | %s | %s | %zu | %llu | %zu | %zu | %s | %s%s%s |\n", q->name,
                   q->first_ms, q->warm_ms, df, dw, rf, rw, q->rows, (unsigned long long)q->scanned, q->files,
                   q->skipped, q->source ? q->source : "-", q->ours_check, q->mismatch ? " MISMATCH duck=" : "",
                   q->mismatch ? q->duck_check : "");
            if (q->mismatch) rc = 1;
        }
        if (o.json) {
            printf("{\"bench\":\"cold_query\",\"hours\":%llu,\"rows\":%llu,\"questions\":[", (unsigned long long)o.hours,
                   (unsigned long long)o.rows);
            for (size_t i = 0; i < nq; i++)
                printf("%s{\"name\":\"%s\",\"first_ms\":%.2f,\"warm_ms\":%.2f,\"duck_first_ms\":%.2f,"
                       "\"duck_warm_ms\":%.2f,\"rows\":%zu,\"scanned\":%llu,\"mismatch\":%s}",
                       i ? "," : "", qs[i].name, qs[i].first_ms, qs[i].warm_ms, qs[i].duck_first, qs[i].duck_warm,
                       qs[i].rows, (unsigned long long)qs[i].scanned, qs[i].mismatch ? "true" : "false");
            printf("]}\n");
        }
    }
    cp_ostore_close(store);
    if (!o.reuse && !o.keep) rm_rf(dir);
    else fprintf(stderr, "bench_cold_query: data kept in %s (--reuse it)\n", dir);
    return rc;
}
