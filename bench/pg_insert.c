/* pg_insert.c -- the PostgreSQL hot tier's insert rate against a raw binary COPY
 * (bench_pg_insert).
 *
 * N calls (default 200 000) like bench/hot.c's (50 pods, one hour = 12 windows of 5
 * minutes made ahead, log-normal durations, ~130 bytes of params JSON, a 250..350-byte
 * trace), generated before any clock starts, are inserted twice per repetition, each time
 * into a fresh database:
 *   (a) catalog  cp_catalog_call_put + cp_catalog_commit every --commit calls (2000): the
 *                product's path (binary COPY per window, status checks, counters);
 *   (b) raw      the simplest code that loads the same rows: one calls_ table with the
 *                same DDL (the trace blob a column since issue 18), per batch of --commit
 *                rows BEGIN, COPY calls (binary, encoded by hand below), COMMIT.
 * 3 repetitions (--reps), the order alternating; the median of each is reported with
 * the ratio (goal: catalog >= 80 % of raw). Then the dictionary: --words words through
 * cp_catalog_dict_put (COPY into a temporary table, one upsert per commit) against one
 * prepared INSERT ... ON CONFLICT per word.
 *
 * usage: bench_pg_insert [URL] [--rows N] [--commit N] [--reps N] [--words N]
 *   URL  libpq URI of a database on the server (default $CP_TEST_PG_URL); the bench
 *        creates and drops its own databases next to it (CREATE DATABASE rights needed).
 * Exit status 1 on a database failure, 2 on bad usage.
 */
#include "common/cp_common.h"
#include "store/cp_catalog.h"
#include "store/catalog/pg_internal.h"

#include <arpa/inet.h>
#include <libpq-fe.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define T0 1767268800000LL /* 2026-01-01 12:00 UTC */
#define HOUR_MS 3600000LL
#define NPODS 50
#define POOL 4096
#define NMETHODS 300
#define NTHREADS 200

/* ---- data (bench/hot.c's generator) ---------------------------------------------------------- */

typedef struct pools {
    char ns[NPODS][16], svc[NPODS][32], pod[NPODS][48], pod_id[NPODS][64];
    int64_t restart[NPODS];
    char method[NMETHODS][96];
    char thread[NTHREADS][32];
    char params[POOL][192];
    size_t params_len[POOL];
    int error[POOL];
    uint8_t blob[1 << 20];
} pools;

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

/* Log-normal duration: median 5 ms, sigma 2 (e-base), capped at 5 minutes. */
static int32_t duration(uint64_t *s)
{
    double u1 = unit(s), u2 = unit(s);
    if (u1 < 1e-12) u1 = 1e-12;
    double z = sqrt(-2.0 * log(u1)) * cos(2 * M_PI * u2);
    double d = exp(log(5.0) + 2.0 * z);
    return d > 300000 ? 300000 : (int32_t)d;
}

static void pools_init(pools *p, uint64_t *s)
{
    for (int i = 0; i < NPODS; i++) {
        snprintf(p->ns[i], sizeof p->ns[i], "ns-%d", i % 5);
        snprintf(p->svc[i], sizeof p->svc[i], "service-%d", i % 10);
        snprintf(p->pod[i], sizeof p->pod[i], "service-%d-7f9c4b%02d-x%d", i % 10, i, i % 3);
        snprintf(p->pod_id[i], sizeof p->pod_id[i], "%s/%s", p->ns[i], p->pod[i]);
        p->restart[i] = T0 - 86400000LL + i * 1000;
    }
    for (int i = 0; i < NMETHODS; i++)
        snprintf(p->method[i], sizeof p->method[i], "com.acme.svc%d.Handler%d.process%d(Ljava/lang/String;)V", i % 10,
                 i / 10, i % 7);
    for (int i = 0; i < NTHREADS; i++) snprintf(p->thread[i], sizeof p->thread[i], "http-nio-8080-exec-%d", i);
    for (int i = 0; i < POOL; i++) {
        p->error[i] = rnd(s) % 50 == 0;
        int n = snprintf(p->params[i], sizeof p->params[i],
                         "{\"_thread.state\":[\"RUNNABLE\"],%s\"endpoint\":[\"/api/v1/res%u/%u\"],"
                         "\"request.id\":[\"%016llx\"],\"user.id\":[\"user-%u\"]}",
                         p->error[i] ? "\"call.red\":[\"1\"]," : "", (unsigned)(rnd(s) % 100),
                         (unsigned)(rnd(s) % 100000), (unsigned long long)rnd(s), (unsigned)(rnd(s) % 100000));
        p->params_len[i] = (size_t)n;
    }
    for (size_t i = 0; i < sizeof p->blob; i++) p->blob[i] = (uint8_t)(rnd(s) >> 13);
}

/* Call i of n: time rises over the hour, each pod a little off. */
static void make_call(const pools *p, uint64_t i, uint64_t n, uint64_t *s, int32_t *seq, cp_call *c)
{
    int k = (int)(rnd(s) % NPODS);
    int pi = (int)(rnd(s) % POOL);
    memset(c, 0, sizeof *c);
    c->ts_ms = T0 + (int64_t)((double)i / (double)n * (double)(HOUR_MS - 3000)) + (k * 37) % 2000;
    c->duration_ms = duration(s);
    c->cpu_time = c->duration_ms * (int64_t)(rnd(s) % 1000);
    c->wait_time = (int64_t)(rnd(s) % 50);
    c->memory_used = (int64_t)(rnd(s) % (64u << 20));
    c->queue_wait_ms = (int32_t)(rnd(s) % 3);
    c->suspend_ms = (int32_t)(rnd(s) % 100 == 0 ? rnd(s) % 200 : 0);
    c->calls = (int32_t)(rnd(s) % 40);
    c->transactions = (int64_t)(rnd(s) % 5);
    c->logs_generated = (int32_t)(rnd(s) % 10);
    c->logs_written = c->logs_generated / 2;
    c->file_read = (int64_t)(rnd(s) % 100000);
    c->file_written = (int64_t)(rnd(s) % 10000);
    c->net_read = (int64_t)(rnd(s) % 1000000);
    c->net_written = (int64_t)(rnd(s) % 1000000);
    c->ns = p->ns[k], c->ns_len = strlen(p->ns[k]);
    c->service = p->svc[k], c->service_len = strlen(p->svc[k]);
    c->pod = p->pod[k], c->pod_len = strlen(p->pod[k]);
    c->restart_ms = p->restart[k];
    c->method_id = (int32_t)(rnd(s) % NMETHODS);
    c->method = p->method[c->method_id], c->method_len = strlen(c->method);
    const char *th = p->thread[rnd(s) % NTHREADS];
    c->thread = th, c->thread_len = strlen(th);
    c->params_json = p->params[pi], c->params_json_len = p->params_len[pi];
    c->error = p->error[pi];
    c->trace_file_index = 1;
    c->record_index = seq[k]++;
    c->buffer_offset = c->record_index * 40;
    size_t len = 250 + rnd(s) % 100;
    c->trace = p->blob + rnd(s) % (sizeof p->blob - len), c->trace_len = len;
}

/* ---- helpers ---------------------------------------------------------------------------------- */

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static int exec_ok(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;
    if (!ok) fprintf(stderr, "bench_pg_insert: %s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    return ok;
}

/* The server URL with its database replaced by db. */
static void url_with_db(const char *server, const char *db, char *out, size_t cap)
{
    const char *p = strstr(server, "://");
    const char *slash = p ? strchr(p + 3, '/') : NULL;
    const char *q = strchr(server, '?');
    size_t base = slash ? (size_t)(slash - server) : q ? (size_t)(q - server) : strlen(server);
    snprintf(out, cap, "%.*s/%s%s", (int)base, server, db, q ? q : "");
}

static void quiet(void *arg, const char *msg)
{
    (void)arg;
    (void)msg;
}

/* A fresh database (dropped first if a crashed run left it). */
static int fresh_db(const char *server, const char *name, char *url, size_t cap)
{
    PGconn *c = PQconnectdb(server);
    PQsetNoticeProcessor(c, quiet, NULL);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "bench_pg_insert: %s", PQerrorMessage(c));
        PQfinish(c);
        return 0;
    }
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", name);
    int ok = exec_ok(c, sql);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", name);
    ok = ok && exec_ok(c, sql);
    PQfinish(c);
    url_with_db(server, name, url, cap);
    return ok;
}

static void drop_db(const char *server, const char *name)
{
    PGconn *c = PQconnectdb(server);
    PQsetNoticeProcessor(c, quiet, NULL);
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", name);
    if (PQstatus(c) == CONNECTION_OK) exec_ok(c, sql);
    PQfinish(c);
}

/* ---- (a) the catalog --------------------------------------------------------------------------- */

static int run_catalog(const char *url, const pools *p, const cp_call *calls, size_t n, size_t commit, double *secs)
{
    char err[512];
    cp_catalog *cat;
    if (cp_catalog_open(url, &cat, err, sizeof err) != CP_OK) {
        fprintf(stderr, "bench_pg_insert: %s\n", err);
        return 0;
    }
    int st = cp_catalog_set_windows(cat, 5 * 60000, 3 * HOUR_MS);
    for (int k = 0; st == CP_OK && k < NPODS; k++) {
        cp_catalog_pod pod = {p->ns[k], p->svc[k], p->pod[k], p->pod_id[k], p->restart[k]};
        st = cp_catalog_pod_register(cat, &pod, T0);
    }
    if (st == CP_OK) st = cp_catalog_windows_prepare(cat, T0); /* the maintenance task's work, ahead */
    if (st == CP_OK) st = cp_catalog_commit(cat);
    double t0 = now_s();
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        st = cp_catalog_call_put(cat, &calls[i]);
        if (st == CP_OK && (i + 1) % commit == 0) st = cp_catalog_commit(cat);
    }
    if (st == CP_OK) st = cp_catalog_commit(cat);
    *secs = now_s() - t0;
    if (st != CP_OK) fprintf(stderr, "bench_pg_insert: catalog: %s\n", cp_catalog_errmsg(cat));
    cp_catalog_close(cat);
    return st == CP_OK;
}

/* ---- (b) raw binary COPY ------------------------------------------------------------------------ */

static void put16(cp_buf *b, uint16_t v)
{
    v = htons(v);
    cp_buf_append(b, &v, 2);
}
static void put32(cp_buf *b, uint32_t v)
{
    v = htonl(v);
    cp_buf_append(b, &v, 4);
}
static void f64(cp_buf *b, int64_t v)
{
    put32(b, 8);
    put32(b, (uint32_t)((uint64_t)v >> 32));
    put32(b, (uint32_t)v);
}
static void f32(cp_buf *b, int32_t v)
{
    put32(b, 4);
    put32(b, (uint32_t)v);
}
static void fbytes(cp_buf *b, const void *p, size_t n)
{
    put32(b, (uint32_t)n);
    cp_buf_append(b, p, n);
}

static int copy(PGconn *c, const char *sql, const cp_buf *b)
{
    static const char header[19] = "PGCOPY\n\377\r\n\0\0\0\0\0\0\0\0\0";
    static const char trailer[2] = {-1, -1};
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COPY_IN;
    PQclear(r);
    if (!ok) {
        fprintf(stderr, "bench_pg_insert: %s: %s", sql, PQerrorMessage(c));
        return 0;
    }
    ok = PQputCopyData(c, header, 19) == 1 && PQputCopyData(c, (const char *)b->data, (int)b->len) == 1 &&
         PQputCopyData(c, trailer, 2) == 1 && PQputCopyEnd(c, NULL) == 1;
    while ((r = PQgetResult(c)) != NULL) {
        if (PQresultStatus(r) != PGRES_COMMAND_OK) {
            fprintf(stderr, "bench_pg_insert: copy: %s", PQresultErrorMessage(r));
            ok = 0;
        }
        PQclear(r);
    }
    return ok;
}

static int run_raw(const char *url, const cp_call *calls, size_t n, size_t commit, double *secs)
{
    PGconn *c = PQconnectdb(url);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "bench_pg_insert: %s", PQerrorMessage(c));
        PQfinish(c);
        return 0;
    }
    cp_buf ddl, bc;
    cp_buf_init(&ddl), cp_buf_init(&bc);
    int ok = cp_pg_window_ddl(&ddl, "raw") == CP_OK && cp_buf_putc(&ddl, 0) == CP_OK &&
             exec_ok(c, (const char *)ddl.data);
    char copy_calls[1024];
    snprintf(copy_calls, sizeof copy_calls, "COPY calls_raw (%s) FROM STDIN (FORMAT binary)", cp_pg_calls_columns);
    double t0 = now_s();
    for (size_t from = 0; ok && from < n; from += commit) {
        size_t to = from + commit < n ? from + commit : n;
        cp_buf_reset(&bc);
        for (size_t i = from; i < to; i++) {
            const cp_call *x = &calls[i];
            int64_t id = (int64_t)i + 1, ph = (int64_t)cp_pod_hash(x->ns, x->ns_len, x->pod, x->pod_len);
            put16(&bc, CP_PG_CALLS_FIELDS);
            f64(&bc, id), f64(&bc, x->ts_ms), f64(&bc, x->cpu_time), f64(&bc, x->wait_time);
            f64(&bc, x->memory_used), f32(&bc, x->duration_ms), f64(&bc, x->non_blocking);
            f32(&bc, x->queue_wait_ms), f32(&bc, x->suspend_ms), f32(&bc, x->calls), f64(&bc, x->transactions);
            f32(&bc, x->logs_generated), f32(&bc, x->logs_written), f64(&bc, x->file_read);
            f64(&bc, x->file_written), f64(&bc, x->net_read), f64(&bc, x->net_written);
            fbytes(&bc, x->ns, x->ns_len), fbytes(&bc, x->service, x->service_len), fbytes(&bc, x->pod, x->pod_len);
            f64(&bc, x->restart_ms), f32(&bc, x->method_id), fbytes(&bc, x->params_json, x->params_json_len);
            f32(&bc, x->trace_file_index), f32(&bc, x->buffer_offset), f32(&bc, x->record_index);
            fbytes(&bc, x->method, x->method_len), fbytes(&bc, x->thread, x->thread_len), f32(&bc, x->error);
            f64(&bc, ph);
            put32(&bc, 0xFFFFFFFFu); /* trace_reason NULL */
            fbytes(&bc, x->trace, x->trace_len);
        }
        ok = exec_ok(c, "BEGIN") && copy(c, copy_calls, &bc) && exec_ok(c, "COMMIT");
    }
    *secs = now_s() - t0;
    cp_buf_free(&ddl), cp_buf_free(&bc);
    PQfinish(c);
    return ok;
}

/* ---- dictionary ----------------------------------------------------------------------------------- */

static int run_dict(const char *url, size_t words, size_t commit, double *cat_s, double *row_s)
{
    char err[512], w[96];
    cp_catalog *cat;
    if (cp_catalog_open(url, &cat, err, sizeof err) != CP_OK) {
        fprintf(stderr, "bench_pg_insert: %s\n", err);
        return 0;
    }
    cp_catalog_pod pod = {"ns-0", "service-0", "pod-a", "ns-0/pod-a", T0};
    int st = CP_OK;
    double t0 = now_s();
    for (size_t i = 0; st == CP_OK && i < words; i++) {
        int len = snprintf(w, sizeof w, "com.acme.svc%zu.Handler%zu.process(Ljava/lang/String;)V", i % 10, i);
        st = cp_catalog_dict_put(cat, &pod, (int32_t)i, w, (size_t)len);
        if (st == CP_OK && (i + 1) % commit == 0) st = cp_catalog_commit(cat);
    }
    if (st == CP_OK) st = cp_catalog_commit(cat);
    *cat_s = now_s() - t0;
    if (st != CP_OK) fprintf(stderr, "bench_pg_insert: dict: %s\n", cp_catalog_errmsg(cat));
    cp_catalog_close(cat);
    if (st != CP_OK) return 0;
    /* one prepared upsert per word, another pod restart */
    PGconn *c = PQconnectdb(url);
    PGresult *r = PQprepare(c, "d",
                            "INSERT INTO dictionary (pod_name, restart_time, position, pod_id, tag)"
                            " VALUES ($1, $2::bigint, $3::integer, $4, $5) ON CONFLICT (pod_id, restart_time, position)"
                            " DO UPDATE SET tag = excluded.tag",
                            5, NULL);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    t0 = now_s();
    ok = ok && exec_ok(c, "BEGIN");
    for (size_t i = 0; ok && i < words; i++) {
        char pos[24];
        snprintf(w, sizeof w, "com.acme.svc%zu.Handler%zu.process(Ljava/lang/String;)V", i % 10, i);
        snprintf(pos, sizeof pos, "%zu", i);
        const char *v[] = {"pod-b", "1767268800001", pos, "ns-0/pod-b", w};
        r = PQexecPrepared(c, "d", 5, v, NULL, NULL, 0);
        ok = PQresultStatus(r) == PGRES_COMMAND_OK;
        PQclear(r);
        if (ok && (i + 1) % commit == 0) ok = exec_ok(c, "COMMIT") && exec_ok(c, "BEGIN");
    }
    ok = ok && exec_ok(c, "COMMIT");
    *row_s = now_s() - t0;
    PQfinish(c);
    return ok;
}

/* ---- main ----------------------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int usage(void)
{
    fprintf(stderr, "usage: bench_pg_insert [URL] [--rows N] [--commit N] [--reps N] [--words N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    const char *server = getenv("CP_TEST_PG_URL");
    uint64_t rows = 200000, commit = 2000, reps = 3, words = 20000;
    for (int i = 1; i < argc; i++) {
        uint64_t *num = !strcmp(argv[i], "--rows")     ? &rows
                        : !strcmp(argv[i], "--commit") ? &commit
                        : !strcmp(argv[i], "--reps")   ? &reps
                        : !strcmp(argv[i], "--words")  ? &words
                                                       : NULL;
        if (num) {
            if (i + 1 >= argc || cp_parse_u64(argv[++i], 100000000, num) != CP_OK || !*num) return usage();
        } else if (argv[i][0] != '-') {
            server = argv[i];
        } else {
            return usage();
        }
    }
    if (!server || reps > 99) return usage();
    pools *p = malloc(sizeof *p);
    cp_call *calls = malloc(rows * sizeof *calls);
    double *ta = calloc(reps, sizeof *ta), *tb = calloc(reps, sizeof *tb);
    if (!p || !calls || !ta || !tb) return 1;
    uint64_t s = 12345;
    int32_t seq[NPODS] = {0};
    pools_init(p, &s);
    for (uint64_t i = 0; i < rows; i++) make_call(p, i, rows, &s, seq, &calls[i]);
    printf("bench_pg_insert: %llu calls, commit every %llu, %llu repetitions\n", (unsigned long long)rows,
           (unsigned long long)commit, (unsigned long long)reps);
    char name[64], url[1024];
    int ok = 1;
    for (uint64_t r = 0; ok && r < reps; r++) {
        for (int k = 0; ok && k < 2; k++) {
            int raw = (int)((r + (uint64_t)k) % 2); /* alternate which goes first */
            snprintf(name, sizeof name, "cp_bench_%d_%s", (int)getpid(), raw ? "raw" : "cat");
            ok = fresh_db(server, name, url, sizeof url);
            if (ok && raw) ok = run_raw(url, calls, rows, commit, &tb[r]);
            else if (ok) ok = run_catalog(url, p, calls, rows, commit, &ta[r]);
            drop_db(server, name);
            if (ok)
                printf("  rep %llu %-7s %8.0f rows/s\n", (unsigned long long)r + 1, raw ? "raw" : "catalog",
                       (double)rows / (raw ? tb[r] : ta[r]));
        }
    }
    if (ok) {
        qsort(ta, reps, sizeof *ta, cmp_double);
        qsort(tb, reps, sizeof *tb, cmp_double);
        double a = (double)rows / ta[reps / 2], b = (double)rows / tb[reps / 2];
        printf("median: catalog %.0f rows/s, raw COPY %.0f rows/s, ratio %.1f %%\n", a, b, 100.0 * a / b);
        snprintf(name, sizeof name, "cp_bench_%d_dict", (int)getpid());
        double dc = 0, dr = 0;
        ok = fresh_db(server, name, url, sizeof url) && run_dict(url, words, commit, &dc, &dr);
        drop_db(server, name);
        if (ok)
            printf("dictionary: dict_put %.0f words/s, one prepared upsert per word %.0f words/s\n",
                   (double)words / dc, (double)words / dr);
    }
    free(p);
    free(calls);
    free(ta);
    free(tb);
    return ok ? 0 : 1;
}
