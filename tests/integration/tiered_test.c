/* tiered_test.c -- the tiered reader (cp_cold.h): search and get answer the same whether
 * the calls are in the hot tier or in Parquet files of the cold tier.
 *
 * CP_TEST_BOTH_PAIRS: CTest runs this suite on SQLite + a directory store, and again as
 * tiered_test@pg-s3 on PostgreSQL + S3 (pair_util.h).
 *
 * The data set is hot_test.c's (deterministic calls over windows of 2023 and 2026, five
 * pod restarts, params, traces, many equal times), written through cp_catalog_call_put.
 * Then some windows are made cold by hand, without the compactor: their calls go into
 * Parquet files (cp_pq_writer + cp_cold_call_row), one per hour x namespace x duration
 * range, sorted by pod then time, small row groups; the files go into the store, into
 * s3_files (status completed) with an inverted index of two params, and the windows'
 * tables are dropped (inventory: persisted). One window stays in both tiers, as during a
 * compaction that finishes between the hot and the cold half of a search: its calls
 * must come back once.
 *
 *   hot only   2026-01-01 12:20 .. 12:30
 *   both       2026-01-01 12:15 .. 12:20
 *   cold only  2023-03-01 10:00 .. 10:20, 2026-01-01 12:00 .. 12:15
 *
 * Every search is checked against the same filter and order done here in plain C over
 * all the calls (each once). */
#include "testutil.h"

#include "pair_util.h"
#include "store/cp_catalog.h"
#include "store/cp_cold.h"
#include "store/cp_hot.h"
#include "store/cp_ostore.h"

#include <dirent.h>
#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define MIN_MS 60000LL
#define HOUR_MS 3600000LL
#define T2023 1677664800000LL /* 2023-03-01 10:00:00 UTC */
#define T2026 1767268800000LL /* 2026-01-01 12:00:00 UTC */
#define NCALLS 3000
#define NPODS 5
#define MAX_FILES 64

/* ---- the data set ------------------------------------------------------------------------ */

static const cp_catalog_pod pods[NPODS] = {
    {"ns-a", "svc-1", "pod-1", "ns-a/pod-1", T2026 - 7200000},
    {"ns-a", "svc-1", "pod-1", "ns-a/pod-1", T2026 - 3600000}, /* a second restart */
    {"ns-a", "svc-1", "pod-2", "ns-a/pod-2", T2026 - 3600000},
    {"ns-b", "svc-2", "pod-1", "ns-b/pod-1", T2026 - 3600000}, /* same pod name, other namespace */
    {"ns-b", "svc-2", "idle", "ns-b/idle", T2026 + 3600000},   /* no calls */
};

static const char *const methods[] = {
    "com.acme.OrderService.place(Ljava/lang/String;)V", "com.acme.orderservice.Cancel()V",
    "org.Foo.bar()I", "#17", "\xc3\x9cnicode.m\xc3\xa9thod()V", "com.acme.OrderService.placeAll()V",
};
static const char *const threads[] = {"http-nio-8080-exec-1", "http-nio-8080-exec-2", "main", "pool-3-thread-7"};

typedef struct tcall {
    cp_call c;
    char params[256];
    uint8_t trace[400];
} tcall;

/* One deterministic call; record_index is its position in the array (a unique id). The
 * params are what the hot tier stores: names sorted, values escaped by cp_json_str (a
 * quote, a backslash, control characters, UTF-8), a param with no value. "tenant" is
 * "t-r<duration range>": files of other ranges have none of its values (index pruning). */
static void make_call(tcall *t, size_t i, uint64_t *rng)
{
    cp_call *c = &t->c;
    memset(t, 0, sizeof *t);
    const cp_catalog_pod *p = &pods[test_rand(rng) % (NPODS - 1)];
    int64_t base = i % 2 ? T2023 : T2026;
    int64_t span = i % 2 ? 20 * MIN_MS : 30 * MIN_MS;
    c->ts_ms = base + (int64_t)(test_rand(rng) % (uint64_t)(span / 500)) * 500; /* many equal times */
    c->duration_ms = test_rand(rng) % 4 == 0 ? (int32_t)(test_rand(rng) % 3) : (int32_t)(test_rand(rng) % 5000);
    c->cpu_time = (int64_t)(test_rand(rng) % 100000) - 50;
    c->wait_time = (int64_t)(test_rand(rng) % 10);
    c->memory_used = (int64_t)(test_rand(rng) % 1000000) << 20;
    c->non_blocking = (int64_t)(test_rand(rng) % 3);
    c->queue_wait_ms = (int32_t)(test_rand(rng) % 7);
    c->suspend_ms = (int32_t)(test_rand(rng) % 5);
    c->calls = (int32_t)(test_rand(rng) % 50);
    c->transactions = (int64_t)(test_rand(rng) % 4);
    c->logs_generated = (int32_t)(test_rand(rng) % 9);
    c->logs_written = (int32_t)(test_rand(rng) % 9);
    c->file_read = (int64_t)(test_rand(rng) % 3) * 5000000000LL;
    c->file_written = (int64_t)(test_rand(rng) % 1000);
    c->net_read = (int64_t)(test_rand(rng) % 1000);
    c->net_written = (int64_t)(test_rand(rng) % 2);
    c->ns = p->ns, c->ns_len = strlen(p->ns);
    c->service = p->service, c->service_len = strlen(p->service);
    c->pod = p->pod, c->pod_len = strlen(p->pod);
    c->restart_ms = p->restart_ms;
    c->method_id = (int32_t)(test_rand(rng) % CP_ARRAY_LEN(methods));
    c->method = methods[c->method_id], c->method_len = strlen(c->method);
    c->thread = threads[test_rand(rng) % CP_ARRAY_LEN(threads)], c->thread_len = strlen(c->thread);
    c->error = test_rand(rng) % 7 == 0;
    int empty = test_rand(rng) % 5 == 0, odd = test_rand(rng) % 6 == 0;
    int n = snprintf(t->params, sizeof t->params, "{%s%s\"tenant\":[\"t-r%d\"],\"user\":[\"user-%u\"%s]%s}",
                     c->error ? "\"call.red\":[\"1\"]," : "", empty ? "\"empty\":[]," : "",
                     cp_cold_range_of(c->duration_ms), (unsigned)(test_rand(rng) % 20), odd ? ",\"x\"" : "",
                     odd ? ",\"zq\":[\"a\\\"b\\\\c\\u0001\\t\",\"\xc3\xa9\xe2\x82\xac\"]" : "");
    c->params_json = t->params, c->params_json_len = (size_t)n;
    c->trace_file_index = 1 + (int32_t)(test_rand(rng) % 3);
    c->buffer_offset = (int32_t)(test_rand(rng) % 100000) - (i % 50 == 0 ? 200000 : 0); /* a few negative */
    c->record_index = (int32_t)i;
    if (test_rand(rng) % 3 == 0) {
        c->trace_reason = test_rand(rng) % 2 ? CP_TRACE_NOT_FOUND : CP_TRACE_TOO_LARGE;
    } else {
        size_t len = 20 + test_rand(rng) % 300;
        for (size_t k = 0; k < len; k++) t->trace[k] = (uint8_t)(test_rand(rng) >> 7);
        c->trace = t->trace, c->trace_len = len;
        c->sql = i % 3 == 1; /* only a call with a trace can have run SQL */
    }
}

/* The tier of a time. */
static int is_cold(int64_t ts) { return ts < T2026 + 20 * MIN_MS; }
static int stays_hot(int64_t ts) { return ts >= T2026 + 15 * MIN_MS; }

typedef struct fixture {
    char *dir, *spec, *url, *cache;
    cp_catalog *cat;
    cp_ostore *store;
    cp_reader *rd;        /* the tiered reader (a cache for S3, reading in place otherwise) */
    tcall *calls;
    size_t n;
    char *keys[MAX_FILES];
    int64_t file_hour[MAX_FILES];
    int file_range[MAX_FILES];
    size_t nfiles, files2023;
    uint64_t max_file_size, total_file_size;
} fixture;

/* ---- the store and the catalog ---------------------------------------------------------- */

static void open_store(fixture *fx)
{
    cp_ostore_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.url = fx->url;
    if (test_pair_pg()) {
        cfg.endpoint = test_s3_endpoint();
        cfg.access_key = test_s3_access_key();
        cfg.secret_key = test_s3_secret_key();
        cfg.retries = 2;
        cfg.backoff_ms = 100;
        cfg.timeout_s = 60;
    }
    char err[512];
    if (cp_ostore_open(&cfg, &fx->store, err, sizeof err) != CP_OK) fail_msg("open store %s: %s", fx->url, err);
}

/* A tiered reader on a new hot reader; cache: NULL = read in place. */
static cp_reader *open_tiered(const fixture *fx, const char *cache, uint64_t cache_bytes)
{
    char err[512];
    cp_reader *hot, *rd;
    if (cp_reader_open(fx->spec, &hot, err, sizeof err) != CP_OK) fail_msg("open reader: %s", err);
    cp_tiered_config cfg = {fx->store, cache, cache_bytes};
    if (cp_reader_open_tiered(hot, &cfg, &rd, err, sizeof err) != CP_OK) fail_msg("open tiered: %s", err);
    return rd;
}

/* Runs an SQL script (several statements) on the catalog's database. */
static void db_exec(const fixture *fx, const char *sql)
{
    if (!test_pair_pg()) {
        sqlite3 *db;
        assert_int_equal(sqlite3_open_v2(fx->spec, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        char *e = NULL;
        if (sqlite3_exec(db, sql, NULL, NULL, &e) != SQLITE_OK) fail_msg("sql: %s\n%.300s", e, sql);
        sqlite3_close(db);
        return;
    }
    PGconn *c = PQconnectdb(fx->spec);
    if (PQstatus(c) != CONNECTION_OK) fail_msg("connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("sql: %s\n%.300s", PQerrorMessage(c), sql);
    PQclear(r);
    PQfinish(c);
}

static void window_suffix(int64_t start_ms, char out[16])
{
    time_t t = (time_t)(start_ms / 1000);
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 16, "%Y%m%d_%H%M", &tm);
}

/* ---- making windows cold ------------------------------------------------------------------- */

static int sink_buf(void *ud, const void *p, size_t n) { return cp_buf_append(ud, p, n); }

/* Parquet order: pod, then time, then the rest of the ref (deterministic). */
static int cmp_pod_time(const void *pa, const void *pb)
{
    const cp_call *a = &(*(tcall *const *)pa)->c, *b = &(*(tcall *const *)pb)->c;
    int c = strcmp(a->pod, b->pod);
    if (c) return c;
    if (a->ts_ms != b->ts_ms) return a->ts_ms < b->ts_ms ? -1 : 1;
    if (a->restart_ms != b->restart_ms) return a->restart_ms < b->restart_ms ? -1 : 1;
    return a->record_index - b->record_index;
}

/* One calls file: written, stored, registered (s3_files + inverted index). */
static void write_file(fixture *fx, tcall **v, size_t n, int64_t hour, int64_t from, int64_t to, const char *claim,
                       int range, cp_buf *sql)
{
    qsort(v, n, sizeof *v, cmp_pod_time);
    const cp_call *first = &v[0]->c;
    cp_buf key;
    cp_buf_init(&key);
    assert_int_equal(cp_cold_calls_key(hour, first->ns, first->ns_len, range, claim, &key), CP_OK);
    assert_int_equal(cp_buf_putc(&key, 0), CP_OK);
    const char *k = (const char *)key.data;

    /* small row groups and pages: statistics matter, and several groups per file */
    cp_pq_writer_opts o;
    memset(&o, 0, sizeof o);
    o.row_group_rows = 16;
    o.page_rows = 8;
    o.zstd_level = 1;
    cp_buf file;
    cp_buf_init(&file);
    cp_pq_writer *w;
    char err[256];
    if (cp_pq_writer_new(cp_cold_calls_schema, CP_COLD_C_COUNT, &o, sink_buf, &file, &w, err, sizeof err) != CP_OK)
        fail_msg("writer: %s", err);
    cp_cold_rowbuf *rb;
    assert_int_equal(cp_cold_rowbuf_new(&rb), CP_OK);
    int64_t min_ts = INT64_MAX, max_ts = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        cp_pq_value row[CP_COLD_C_COUNT];
        assert_int_equal(cp_cold_call_row(rb, &v[i]->c, row), CP_OK);
        if (cp_pq_writer_add(w, row) != CP_OK) fail_msg("add: %s", cp_pq_writer_errmsg(w));
        if (v[i]->c.ts_ms < min_ts) min_ts = v[i]->c.ts_ms;
        if (v[i]->c.ts_ms > max_ts) max_ts = v[i]->c.ts_ms;
    }
    if (cp_pq_writer_finish(w) != CP_OK) fail_msg("finish: %s", cp_pq_writer_errmsg(w));
    cp_pq_writer_free(w);
    cp_cold_rowbuf_free(rb);
    if (fx->store->ops->put(fx->store, k, file.data, file.len, err, sizeof err) != CP_OK) fail_msg("put %s: %s", k, err);
    cp_buf url;
    cp_buf_init(&url);
    assert_int_equal(fx->store->ops->url(fx->store, k, &url), CP_OK);
    assert_int_equal(cp_buf_putc(&url, 0), CP_OK);

    /* the inverted index: distinct tenant and user values of the file */
    static const char *const params[] = {"tenant", "user"};
    char values[64][32];
    size_t nvalues[2] = {0, 0};
    char (*seen[2])[32] = {values, values + 32};
    for (size_t i = 0; i < n; i++) {
        char tv[32], uv[32];
        const char *p = v[i]->c.params_json;
        const char *t = strstr(p, "\"tenant\":[\"") + 11, *u = strstr(p, "\"user\":[\"") + 9;
        snprintf(tv, sizeof tv, "%.*s", (int)(strchr(t, '"') - t), t);
        snprintf(uv, sizeof uv, "%.*s", (int)(strchr(u, '"') - u), u);
        const char *vals[2] = {tv, uv};
        for (int k2 = 0; k2 < 2; k2++) {
            size_t j = 0;
            while (j < nvalues[k2] && strcmp(seen[k2][j], vals[k2])) j++;
            if (j == nvalues[k2]) snprintf(seen[k2][nvalues[k2]++], 32, "%s", vals[k2]);
        }
    }
    if (!test_pair_pg()) {
        assert_int_equal(cp_buf_printf(sql,
                                       "INSERT INTO s3_files (uuid, start_time, end_time, file_type, namespace,"
                                       " duration_range, file_name, status, services, created_time, api_version,"
                                       " rows_count, file_size, remote_storage_path, object_key, min_time, max_time,"
                                       " indexed_params, claim) VALUES ('%s', %lld, %lld, 'calls', '%s', %d, '%s',"
                                       " 'completed', '[\"%s\"]', 0, '1', %zu, %zu, '%s', '%s', %lld, %lld,"
                                       " '[\"tenant\",\"user\"]', '%s');\n",
                                       k, (long long)from, (long long)to, first->ns, (int)cp_cold_range_upper(range),
                                       strrchr(k, '/') + 1, first->service, n, file.len, (const char *)url.data, k,
                                       (long long)min_ts, (long long)max_ts, claim),
                         CP_OK);
        for (int k2 = 0; k2 < 2; k2++) {
            char table[CP_COLD_INV_NAME];
            cp_cold_inv_table(params[k2], strlen(params[k2]), table);
            assert_int_equal(cp_buf_printf(sql,
                                           "CREATE TABLE IF NOT EXISTS \"%s\" (value TEXT NOT NULL, file_id TEXT NOT"
                                           " NULL, PRIMARY KEY (value, file_id)) WITHOUT ROWID;\n"
                                           "INSERT OR IGNORE INTO inverted_indexes (param_name, table_name,"
                                           " created_time) VALUES ('%s', '%s', 0);\n",
                                           table, params[k2], table),
                             CP_OK);
            for (size_t j = 0; j < nvalues[k2]; j++)
                assert_int_equal(cp_buf_printf(sql, "INSERT INTO \"%s\" (value, file_id) VALUES ('%s', '%s');\n",
                                               table, seen[k2][j], k),
                                 CP_OK);
        }
    } else {
        /* PostgreSQL: the catalog's own calls (its column types are its business) */
        cp_compact_job job;
        memset(&job, 0, sizeof job);
        snprintf(job.claim, sizeof job.claim, "%s", claim);
        job.hour_ms = hour;
        job.from_ms = from;
        job.to_ms = to;
        char services[64];
        snprintf(services, sizeof services, "[\"%s\"]", first->service);
        cp_cold_file f = {.uuid = k, .key = k, .url = (const char *)url.data, .file_type = "calls", .ns = first->ns,
                          .duration_range = cp_cold_range_upper(range), .start_ms = from, .end_ms = to,
                          .min_ts = min_ts, .max_ts = max_ts, .rows = (int64_t)n, .size = (int64_t)file.len,
                          .status = "completed", .services = services, .indexed_params = "[\"tenant\",\"user\"]",
                          .claim = claim};
        if (cp_catalog_cold_file_put(fx->cat, &job, &f) != CP_OK) fail_msg("file put: %s", cp_catalog_errmsg(fx->cat));
        for (int k2 = 0; k2 < 2; k2++)
            for (size_t j = 0; j < nvalues[k2]; j++)
                if (cp_catalog_index_put(fx->cat, params[k2], strlen(params[k2]), seen[k2][j], strlen(seen[k2][j]),
                                         k) != CP_OK)
                    fail_msg("index put: %s", cp_catalog_errmsg(fx->cat));
        assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    }
    assert_true(fx->nfiles < MAX_FILES);
    fx->keys[fx->nfiles] = strdup(k);
    fx->file_hour[fx->nfiles] = hour;
    fx->file_range[fx->nfiles] = range;
    fx->nfiles++;
    if (file.len > fx->max_file_size) fx->max_file_size = file.len;
    fx->total_file_size += file.len;
    cp_buf_free(&file);
    cp_buf_free(&url);
    cp_buf_free(&key);
}

/* The calls of one claim ([from, to) of one hour) into files by namespace and range. */
static void write_claim(fixture *fx, int64_t from, int64_t to, const char *claim, cp_buf *sql)
{
    static const char *const nss[] = {"ns-a", "ns-b"};
    tcall **v = calloc(fx->n, sizeof *v);
    for (size_t a = 0; a < CP_ARRAY_LEN(nss); a++) {
        for (int r = 0; r < CP_COLD_RANGES; r++) {
            size_t n = 0;
            for (size_t i = 0; i < fx->n; i++) {
                const cp_call *c = &fx->calls[i].c;
                if (c->ts_ms >= from && c->ts_ms < to && !strcmp(c->ns, nss[a]) &&
                    cp_cold_range_of(c->duration_ms) == r)
                    v[n++] = &fx->calls[i];
            }
            if (n) write_file(fx, v, n, from - from % HOUR_MS, from, to, claim, r, sql);
        }
    }
    free(v);
}

/* Drops the hot tables of the windows in [from, to) (inventory: persisted). */
static void drop_windows(cp_buf *sql, int64_t from, int64_t to)
{
    for (int64_t w = from; w < to; w += 5 * MIN_MS) {
        char s[16];
        window_suffix(w, s);
        assert_int_equal(cp_buf_printf(sql,
                                       "UPDATE inventory SET status = 'persisted' WHERE table_name ="
                                       " 'calls_%s';\nDROP TABLE calls_%s;\n",
                                       s, s),
                         CP_OK);
    }
}

static void make_cold(fixture *fx)
{
    cp_buf sql;
    cp_buf_init(&sql);
    write_claim(fx, T2023, T2023 + 20 * MIN_MS, "20230301_1000", &sql);
    fx->files2023 = fx->nfiles;
    write_claim(fx, T2026, T2026 + 20 * MIN_MS, "20260101_1200", &sql);
    drop_windows(&sql, T2023, T2023 + 20 * MIN_MS);
    drop_windows(&sql, T2026, T2026 + 15 * MIN_MS); /* 12:15 stays hot as well */
    assert_int_equal(cp_buf_putc(&sql, 0), CP_OK);
    db_exec(fx, (const char *)sql.data);
    cp_buf_free(&sql);
}

static int group_setup(void **state)
{
    test_pair_require();
    fixture *fx = calloc(1, sizeof *fx);
    fx->dir = make_temp_dir("tiered");
    fx->spec = test_catalog_spec(fx->dir);
    fx->url = test_store_url(fx->dir);
    size_t cl = strlen(fx->dir) + 16;
    fx->cache = malloc(cl);
    snprintf(fx->cache, cl, "%s/cache", fx->dir);
    char err[512];
    if (cp_catalog_open(fx->spec, &fx->cat, err, sizeof err) != CP_OK) fail_msg("open catalog: %s", err);
    assert_int_equal(cp_catalog_set_windows(fx->cat, 5 * MIN_MS, 3 * 3600000LL), CP_OK);
    for (size_t i = 0; i < NPODS; i++) assert_int_equal(cp_catalog_pod_register(fx->cat, &pods[i], T2026 + 7200000), CP_OK);
    assert_int_equal(cp_catalog_windows_prepare(fx->cat, T2026), CP_OK);
    assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    fx->n = NCALLS;
    fx->calls = calloc(fx->n, sizeof *fx->calls);
    uint64_t rng = 42;
    for (size_t i = 0; i < fx->n; i++) {
        make_call(&fx->calls[i], i, &rng);
        if (cp_catalog_call_put(fx->cat, &fx->calls[i].c) != CP_OK) fail_msg("call_put: %s", cp_catalog_errmsg(fx->cat));
        if (i % 500 == 499) assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    }
    assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    open_store(fx);
    make_cold(fx);
    fx->rd = open_tiered(fx, test_pair_pg() ? fx->cache : NULL, 0);
    *state = fx;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *fx = *state;
    cp_reader_close(fx->rd);
    cp_catalog_close(fx->cat);
    char err[256];
    for (size_t i = 0; i < fx->nfiles; i++) {
        fx->store->ops->del(fx->store, fx->keys[i], err, sizeof err);
        free(fx->keys[i]);
    }
    cp_ostore_close(fx->store);
    remove_tree(fx->dir);
    free(fx->dir);
    free(fx->spec);
    free(fx->url);
    free(fx->cache);
    free(fx->calls);
    free(fx);
    return 0;
}

/* ---- the reference: filter and order in plain C (hot_test.c's) --------------------------------- */

static int cmp64(int64_t a, int64_t b) { return (a > b) - (a < b); }

typedef struct order {
    cp_sort_col col;
    int desc;
} order;

static int call_cmp_c(const cp_call *a, const cp_call *b, const order *o)
{
    int c;
    if (cp_sort_is_text(o->col)) {
        size_t la, lb;
        const char *ta = cp_call_sort_text(a, o->col, &la), *tb = cp_call_sort_text(b, o->col, &lb);
        c = memcmp(ta, tb, la < lb ? la : lb);
        c = c ? (c > 0) - (c < 0) : cmp64((int64_t)la, (int64_t)lb);
    } else {
        c = cmp64(cp_call_sort_num(a, o->col), cp_call_sort_num(b, o->col));
    }
    if (o->desc) c = -c;
    if (c) return c;
    cp_call_ref ra, rb;
    cp_call_ref_of(a, &ra);
    cp_call_ref_of(b, &rb);
    if ((c = cmp64(rb.ts_ms, ra.ts_ms))) return c;
    if ((c = cmp64(rb.restart_ms, ra.restart_ms))) return c;
    if ((c = cmp64((int64_t)rb.pod_hash, (int64_t)ra.pod_hash))) return c;
    if ((c = cmp64(rb.trace_file_index, ra.trace_file_index))) return c;
    if ((c = cmp64(rb.buffer_offset, ra.buffer_offset))) return c;
    return cmp64(rb.record_index, ra.record_index);
}

static int call_cmp(const void *pa, const void *pb, void *ctx)
{
    return call_cmp_c(&(*(tcall *const *)pa)->c, &(*(tcall *const *)pb)->c, ctx);
}

static int ci_has(const char *h, size_t hn, const char *n)
{
    size_t nn = strlen(n);
    for (size_t i = 0; i + nn <= hn; i++) {
        size_t k = 0;
        while (k < nn) {
            char x = h[i + k], y = n[k];
            if (x >= 'A' && x <= 'Z') x = (char)(x + 32);
            if (y >= 'A' && y <= 'Z') y = (char)(y + 32);
            if (x != y) break;
            k++;
        }
        if (k == nn) return 1;
    }
    return 0;
}

/* The match callback: params contain the text in ud (and counts its calls). */
typedef struct matcher {
    const char *needle;
    size_t calls;
} matcher;

static int match_params(void *ud, const cp_call_view *v)
{
    matcher *m = ud;
    __atomic_add_fetch(&m->calls, 1, __ATOMIC_RELAXED);
    return ci_has(v->params_json, v->params_json_len, m->needle);
}

static int filter_ok(const cp_call_filter *f, const cp_call *c)
{
    if (c->ts_ms < f->from_ms || c->ts_ms >= f->to_ms) return 0;
    if (f->ns && strcmp(f->ns, c->ns)) return 0;
    if (f->service && strcmp(f->service, c->service)) return 0;
    if (f->pod && strcmp(f->pod, c->pod)) return 0;
    if (c->duration_ms < f->min_duration_ms || c->duration_ms > f->max_duration_ms) return 0;
    if (f->errors_only && !c->error) return 0;
    if (f->method_substr && !ci_has(c->method, c->method_len, f->method_substr)) return 0;
    if (f->match) {
        matcher *m = f->match_ud;
        if (!ci_has(c->params_json, c->params_json_len, m->needle)) return 0;
    }
    return 1;
}

/* The calls f selects, in f's order; returns how many (*out malloc'ed). */
static size_t expected(const fixture *fx, const cp_call_filter *f, tcall ***out)
{
    tcall **v = calloc(fx->n, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < fx->n; i++)
        if (filter_ok(f, &fx->calls[i].c)) v[n++] = &fx->calls[i];
    order o = {f->sort, f->desc};
    qsort_r(v, n, sizeof *v, call_cmp, &o);
    *out = v;
    return n;
}

/* ---- collecting results ---------------------------------------------------------------------- */

static void assert_call_equal(const cp_call *want, const cp_call *got, int with_trace)
{
    assert_int_equal(got->ts_ms, want->ts_ms);
    assert_int_equal(got->duration_ms, want->duration_ms);
    assert_int_equal(got->cpu_time, want->cpu_time);
    assert_int_equal(got->wait_time, want->wait_time);
    assert_int_equal(got->memory_used, want->memory_used);
    assert_int_equal(got->non_blocking, want->non_blocking);
    assert_int_equal(got->queue_wait_ms, want->queue_wait_ms);
    assert_int_equal(got->suspend_ms, want->suspend_ms);
    assert_int_equal(got->calls, want->calls);
    assert_int_equal(got->transactions, want->transactions);
    assert_int_equal(got->logs_generated, want->logs_generated);
    assert_int_equal(got->logs_written, want->logs_written);
    assert_int_equal(got->file_read, want->file_read);
    assert_int_equal(got->file_written, want->file_written);
    assert_int_equal(got->net_read, want->net_read);
    assert_int_equal(got->net_written, want->net_written);
    assert_int_equal(got->ns_len, want->ns_len);
    assert_memory_equal(got->ns, want->ns, want->ns_len);
    assert_int_equal(got->service_len, want->service_len);
    assert_memory_equal(got->service, want->service, want->service_len);
    assert_int_equal(got->pod_len, want->pod_len);
    assert_memory_equal(got->pod, want->pod, want->pod_len);
    assert_int_equal(got->restart_ms, want->restart_ms);
    assert_int_equal(got->method_id, want->method_id);
    assert_int_equal(got->method_len, want->method_len);
    assert_memory_equal(got->method, want->method, want->method_len);
    assert_int_equal(got->thread_len, want->thread_len);
    assert_memory_equal(got->thread, want->thread, want->thread_len);
    if (got->params_json_len != want->params_json_len || memcmp(got->params_json, want->params_json, want->params_json_len))
        fail_msg("params_json\n got  %.*s\n want %.*s", (int)got->params_json_len, got->params_json,
                 (int)want->params_json_len, want->params_json);
    assert_int_equal(got->error, want->error);
    assert_int_equal(got->sql, want->sql);
    assert_int_equal(got->trace_file_index, want->trace_file_index);
    assert_int_equal(got->buffer_offset, want->buffer_offset);
    assert_int_equal(got->record_index, want->record_index);
    if (want->trace_reason) assert_string_equal(got->trace_reason, want->trace_reason);
    else assert_null(got->trace_reason);
    if (with_trace && want->trace) {
        assert_int_equal(got->trace_len, want->trace_len);
        assert_memory_equal(got->trace, want->trace, want->trace_len);
    } else {
        assert_null(got->trace);
    }
}

typedef struct got {
    const fixture *fx;
    size_t *idx; /* record_index of each row, in order */
    size_t n, cap;
    int with_trace;
    cp_sort_key last; /* key of the last row (for paging) */
    cp_sort_col col;
    int desc;
} got;

static int on_row(void *ud, const cp_call *c)
{
    got *g = ud;
    assert_true(c->record_index >= 0 && (size_t)c->record_index < g->fx->n);
    assert_call_equal(&g->fx->calls[c->record_index].c, c, g->with_trace);
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 64;
        g->idx = realloc(g->idx, g->cap * sizeof *g->idx);
    }
    g->idx[g->n++] = (size_t)c->record_index;
    cp_sort_key_of(c, g->col, g->desc, &g->last);
    return 0;
}

static void search_ok(const fixture *fx, cp_reader *rd, const cp_call_filter *f, got *g, cp_search_stats *st)
{
    g->fx = fx;
    g->col = f->sort;
    g->desc = f->desc;
    int rc = cp_reader_search(rd, f, on_row, g, st);
    if (rc != CP_OK) fail_msg("search: %d %s", rc, cp_reader_errmsg(rd));
}

static cp_call_filter all_calls(size_t limit)
{
    cp_call_filter f;
    memset(&f, 0, sizeof f);
    f.from_ms = 0;
    f.to_ms = INT64_MAX;
    f.max_duration_ms = INT64_MAX;
    f.sort = CP_SORT_TS;
    f.desc = 1;
    f.limit = limit;
    return f;
}

/* The first f->limit rows equal the reference's, more is right; returns the total the
 * reference selects. */
static size_t check_page_on(const fixture *fx, cp_reader *rd, const cp_call_filter *f)
{
    tcall **want;
    size_t n = expected(fx, f, &want);
    got g = {0};
    cp_search_stats st;
    search_ok(fx, rd, f, &g, &st);
    size_t page = n < f->limit ? n : f->limit;
    if (g.n != page) fail_msg("%zu rows, want %zu (sort %d desc %d)", g.n, page, (int)f->sort, f->desc);
    for (size_t i = 0; i < page; i++) {
        if (g.idx[i] != (size_t)want[i]->c.record_index)
            fail_msg("row %zu: call %zu, want %d (sort %d desc %d)", i, g.idx[i], want[i]->c.record_index,
                     (int)f->sort, f->desc);
    }
    assert_int_equal(st.more, n > f->limit);
    assert_int_equal(st.partial, 0);
    free(g.idx);
    free(want);
    return n;
}

static size_t check_page(const fixture *fx, const cp_call_filter *f) { return check_page_on(fx, fx->rd, f); }

/* Pages through everything f selects with the keyset: every row exactly once, in order. */
static void check_paging(const fixture *fx, cp_call_filter f, size_t page)
{
    tcall **want;
    size_t n = expected(fx, &f, &want);
    size_t seen = 0;
    f.limit = page;
    cp_sort_key key;
    for (size_t pages = 0;; pages++) {
        assert_true(pages <= n / page + 1);
        got g = {0};
        cp_search_stats st;
        search_ok(fx, fx->rd, &f, &g, &st);
        for (size_t i = 0; i < g.n; i++) {
            assert_true(seen < n);
            if (g.idx[i] != (size_t)want[seen]->c.record_index)
                fail_msg("page %zu row %zu: call %zu, want %d (sort %d desc %d)", pages, i, g.idx[i],
                         want[seen]->c.record_index, (int)f.sort, f.desc);
            seen++;
        }
        if (!st.more) {
            free(g.idx);
            break;
        }
        assert_int_equal(g.n, page);
        key = g.last;
        f.after = &key;
        free(g.idx);
    }
    assert_int_equal(seen, n);
    free(want);
}

/* ---- tests: the row mapping --------------------------------------------------------------------- */

/* cp_call -> row -> cp_call is the identity (params_json byte for byte, the error flag
 * from "call.red", the trace index, the trace). */
static void test_row_round_trip(void **state)
{
    fixture *fx = *state;
    cp_cold_rowbuf *rb;
    assert_int_equal(cp_cold_rowbuf_new(&rb), CP_OK);
    cp_buf json;
    cp_buf_init(&json);
    for (size_t i = 0; i < fx->n; i++) {
        cp_pq_value row[CP_COLD_C_COUNT];
        assert_int_equal(cp_cold_call_row(rb, &fx->calls[i].c, row), CP_OK);
        cp_call c;
        assert_int_equal(cp_cold_call_from_row(row, &json, &c), CP_OK);
        assert_call_equal(&fx->calls[i].c, &c, 1);
    }
    /* no params at all, and a bad trace index */
    tcall t = fx->calls[0];
    t.c.params_json = "{}";
    t.c.params_json_len = 2;
    t.c.error = 0;
    cp_pq_value row[CP_COLD_C_COUNT];
    assert_int_equal(cp_cold_call_row(rb, &t.c, row), CP_OK);
    cp_call c;
    assert_int_equal(cp_cold_call_from_row(row, &json, &c), CP_OK);
    assert_call_equal(&t.c, &c, 1);
    row[CP_COLD_C_PARAMS].null = 1;
    assert_int_equal(cp_cold_call_from_row(row, &json, &c), CP_OK);
    assert_int_equal(c.params_json_len, 2);
    static const char *const bad[] = {"1_2", "1_2_3_4", "a_1_2", "1__2", "1_2_99999999999", ""};
    for (size_t k = 0; k < CP_ARRAY_LEN(bad); k++) {
        row[CP_COLD_C_TRACE_INDEX].b = (cp_pq_bytes){(const uint8_t *)bad[k], strlen(bad[k])};
        assert_int_equal(cp_cold_call_from_row(row, &json, &c), CP_ECORRUPT);
    }
    static const char extreme[] = "-2147483648_0_2147483647";
    row[CP_COLD_C_TRACE_INDEX].b = (cp_pq_bytes){(const uint8_t *)extreme, strlen(extreme)};
    assert_int_equal(cp_cold_call_from_row(row, &json, &c), CP_OK);
    assert_int_equal(c.trace_file_index, INT32_MIN);
    assert_int_equal(c.record_index, INT32_MAX);
    cp_buf_free(&json);
    cp_cold_rowbuf_free(rb);
}

typedef struct mem_file {
    cp_buf b;
} mem_file;

static int mem_sink(void *ud, const void *p, size_t n) { return cp_buf_append(&((mem_file *)ud)->b, p, n); }

static int mem_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    const mem_file *m = ud;
    if (off > m->b.len || n > m->b.len - off) return CP_EIO;
    memcpy(dst, m->b.data + off, n);
    return CP_OK;
}

/* A calls file of a build before has_sql (the schema without its last column) reads as
 * before, every call with sql 0; a file with it gives the flags back. */
static void test_file_without_has_sql(void **state)
{
    fixture *fx = *state;
    assert_int_equal(CP_COLD_C_HAS_SQL, CP_COLD_C_COUNT - 1);
    for (int with = 0; with < 2; with++) {
        mem_file m;
        cp_buf_init(&m.b);
        cp_pq_writer *w;
        char err[256];
        size_t ncols = with ? CP_COLD_C_COUNT : CP_COLD_C_COUNT - 1;
        assert_int_equal(cp_pq_writer_new(cp_cold_calls_schema, ncols, NULL, mem_sink, &m, &w, err, sizeof err), CP_OK);
        cp_cold_rowbuf *rb;
        assert_int_equal(cp_cold_rowbuf_new(&rb), CP_OK);
        size_t n = fx->n < 50 ? fx->n : 50, nsql = 0;
        for (size_t i = 0; i < n; i++) {
            cp_pq_value row[CP_COLD_C_COUNT];
            assert_int_equal(cp_cold_call_row(rb, &fx->calls[i].c, row), CP_OK);
            assert_int_equal(cp_pq_writer_add(w, row), CP_OK);
            nsql += fx->calls[i].c.sql;
        }
        assert_true(nsql > 0);
        assert_int_equal(cp_pq_writer_finish(w), CP_OK);
        cp_pq_writer_free(w);
        cp_cold_rowbuf_free(rb);
        cp_pq_reader *r;
        assert_int_equal(cp_pq_reader_open(mem_pread, &m, m.b.len, &r, err, sizeof err), CP_OK);
        assert_int_equal(cp_pq_reader_find(r, "has_sql") >= 0, with);
        cp_cold_rows *d;
        if (cp_cold_rows_open(r, &d, err, sizeof err) != CP_OK) fail_msg("open: %s", err);
        assert_int_equal(cp_cold_rows_read(d, 0, CP_COLD_COLS_ALL, err, sizeof err), CP_OK);
        assert_int_equal(cp_cold_rows_count(d), n);
        for (size_t i = 0; i < n; i++) {
            cp_call c;
            assert_int_equal(cp_cold_rows_call(d, i, 1, &c), CP_OK);
            cp_call want = fx->calls[i].c;
            if (!with) want.sql = 0;
            assert_call_equal(&want, &c, 1);
        }
        cp_cold_rows_free(d);
        cp_pq_reader_free(r);
        cp_buf_free(&m.b);
    }
}

/* The data set is laid out as the top says. */
static void test_layout(void **state)
{
    fixture *fx = *state;
    size_t cold = 0, hot = 0, both = 0;
    for (size_t i = 0; i < fx->n; i++) {
        int64_t t = fx->calls[i].c.ts_ms;
        cold += is_cold(t) && !stays_hot(t);
        hot += !is_cold(t);
        both += is_cold(t) && stays_hot(t);
    }
    assert_true(cold > 1000 && hot > 100 && both > 100);
    assert_true(fx->files2023 >= 8 && fx->nfiles - fx->files2023 >= 8);
    /* the hot tier alone no longer has the cold calls */
    char err[512];
    cp_reader *hot_rd;
    assert_int_equal(cp_reader_open(fx->spec, &hot_rd, err, sizeof err), CP_OK);
    cp_call_filter f = all_calls(NCALLS);
    cp_search_stats st;
    size_t count = 0;
    got g = {0};
    g.fx = fx;
    g.col = f.sort;
    g.desc = f.desc;
    assert_int_equal(cp_reader_search(hot_rd, &f, on_row, &g, &st), CP_OK);
    count = g.n;
    free(g.idx);
    assert_int_equal(count, hot + both);
    cp_reader_close(hot_rd);
}

/* ---- tests: search ------------------------------------------------------------------------------ */

static void test_search_filters(void **state)
{
    fixture *fx = *state;
    cp_call_filter f = all_calls(NCALLS + 10);
    assert_int_equal(check_page(fx, &f), NCALLS);

    /* ranges cutting windows and files at both ends, one in each tier, one across */
    f.from_ms = T2023 + 7 * MIN_MS + 1234;
    f.to_ms = T2023 + 16 * MIN_MS + 500;
    size_t n = check_page(fx, &f);
    assert_true(n > 100 && n < NCALLS / 2);
    f.from_ms = T2026 + 13 * MIN_MS + 17;
    f.to_ms = T2026 + 22 * MIN_MS;
    assert_true(check_page(fx, &f) > 100);
    f.from_ms = T2023 + 40 * MIN_MS;
    f.to_ms = T2023 + 50 * MIN_MS;
    assert_int_equal(check_page(fx, &f), 0);
    f.from_ms = 0;
    f.to_ms = INT64_MAX;

    f.ns = "ns-b";
    n = check_page(fx, &f);
    assert_true(n > 0 && n < NCALLS);
    f.ns = NULL;
    f.service = "svc-1";
    assert_true(check_page(fx, &f) > 0);
    f.service = NULL;
    f.pod = "pod-1"; /* in two namespaces */
    assert_true(check_page(fx, &f) > 0);
    f.ns = "ns-a";
    assert_true(check_page(fx, &f) > 0);
    f.ns = NULL;
    f.pod = "nope";
    assert_int_equal(check_page(fx, &f), 0);
    f.pod = NULL;

    f.min_duration_ms = 1000;
    assert_true(check_page(fx, &f) > 0);
    f.max_duration_ms = 1500;
    assert_true(check_page(fx, &f) > 0);
    f.min_duration_ms = 0;
    f.max_duration_ms = 1;
    assert_true(check_page(fx, &f) > 0);
    f.max_duration_ms = INT64_MAX;

    f.errors_only = 1;
    assert_true(check_page(fx, &f) > 0);
    f.errors_only = 0;

    f.method_substr = "ORDERservice"; /* case-insensitive, both spellings */
    assert_true(check_page(fx, &f) > 0);
    f.method_substr = "\xc3\x9cnicode";
    assert_true(check_page(fx, &f) > 0);
    f.method_substr = "%";
    assert_int_equal(check_page(fx, &f), 0);
    f.method_substr = NULL;

    matcher m = {"user-7\"", 0};
    f.match = match_params;
    f.match_ud = &m;
    n = check_page(fx, &f);
    assert_true(n > 0 && m.calls >= n);
    m.needle = "\\u0001\\t"; /* the escaped text is what the predicate sees, as in the hot tier */
    assert_true(check_page(fx, &f) > 0);
    m.needle = "\"empty\":[]";
    assert_true(check_page(fx, &f) > 0);
    /* everything at once */
    m.needle = "user-1";
    f.ns = "ns-a";
    f.min_duration_ms = 10;
    f.from_ms = T2026 + 3 * MIN_MS;
    f.to_ms = T2026 + 27 * MIN_MS;
    f.method_substr = "order";
    assert_true(check_page(fx, &f) > 0);
    f.sort = CP_SORT_DURATION;
    check_page(fx, &f);
}

/* Every sort column both ways: the first page, and paging through a filtered set that
 * spans both tiers. (Each page is a search of its own: a quick run, testutil.h
 * test_quick(), pages four times as much at once -- every row still checked once, in
 * order, across a few page boundaries per walk.) */
static void test_sort_columns(void **state)
{
    fixture *fx = *state;
    for (int col = 0; col < CP_SORT_COUNT; col++) {
        for (int desc = 0; desc < 2; desc++) {
            cp_call_filter f = all_calls(50);
            f.sort = (cp_sort_col)col;
            f.desc = desc;
            check_page(fx, &f);
            f.from_ms = T2023 + 3 * MIN_MS + 17;
            f.to_ms = T2026 + 22 * MIN_MS;
            f.min_duration_ms = 3; /* drops the many 0..2 ms ties */
            check_paging(fx, f, test_scaled(97, 4 * 97));
        }
    }
}

/* Paging through everything, across the hot/cold boundary, ties everywhere. (A quick run
 * pages four times as much at once, and one row at a time over 4 minutes around the
 * boundary instead of 11.) */
static void test_keyset_all_rows(void **state)
{
    fixture *fx = *state;
    static const cp_sort_col cols[] = {CP_SORT_TS, CP_SORT_DURATION, CP_SORT_METHOD, CP_SORT_ERROR, CP_SORT_POD};
    for (size_t i = 0; i < CP_ARRAY_LEN(cols); i++) {
        for (int desc = 0; desc < 2; desc++) {
            cp_call_filter f = all_calls(0);
            f.sort = cols[i];
            f.desc = desc;
            check_paging(fx, f, test_scaled(113, 4 * 113));
            if (cols[i] == CP_SORT_TS || cols[i] == CP_SORT_DURATION) {
                /* one row at a time over the boundary (12:15, where calls are in both tiers) */
                f.from_ms = T2026 + (int64_t)test_scaled(12, 13) * MIN_MS;
                f.to_ms = T2026 + (int64_t)test_scaled(23, 17) * MIN_MS;
                f.ns = "ns-b";
                check_paging(fx, f, 1);
                f.ns = NULL;
                f.from_ms = 0;
                f.to_ms = INT64_MAX;
                check_paging(fx, f, test_scaled(29, 4 * 29));
            }
        }
    }
}

static void test_limit_more(void **state)
{
    fixture *fx = *state;
    cp_call_filter f = all_calls(NCALLS);
    check_page(fx, &f); /* exactly all: more = 0 */
    f.limit = NCALLS - 1;
    check_page(fx, &f); /* one short: more = 1 */
    for (size_t limit = 1; limit < 40; limit += 7) {
        f.limit = limit;
        check_page(fx, &f);
        f.sort = CP_SORT_CPU;
        check_page(fx, &f);
        f.sort = CP_SORT_TS;
    }
    f.limit = 0;
    got g = {0};
    cp_search_stats st;
    search_ok(fx, fx->rd, &f, &g, &st);
    assert_int_equal(g.n, 0);
    assert_int_equal(st.more, 1);
    f.limit = 1000000; /* over the reader's bound */
    assert_int_equal(cp_reader_search(fx->rd, &f, on_row, &g, &st), CP_EINVAL);
    /* a keyset of another sort order is refused */
    cp_sort_key k;
    cp_sort_key_of(&fx->calls[0].c, CP_SORT_DURATION, 1, &k);
    f.limit = 10;
    f.after = &k;
    assert_int_equal(cp_reader_search(fx->rd, &f, on_row, &g, &st), CP_EINVAL);
    free(g.idx);
}

static int stop_at_3(void *ud, const cp_call *c)
{
    (void)c;
    size_t *n = ud;
    return ++*n == 3 ? 77 : 0;
}

static void test_callback_stop(void **state)
{
    fixture *fx = *state;
    /* ascending time: the first rows are cold ones */
    cp_call_filter f = all_calls(100);
    f.desc = 0;
    size_t n = 0;
    assert_int_equal(cp_reader_search(fx->rd, &f, stop_at_3, &n, NULL), 77);
    assert_int_equal(n, 3);
    f.desc = 1;
    n = 0;
    assert_int_equal(cp_reader_search(fx->rd, &f, stop_at_3, &n, NULL), 77);
    assert_int_equal(n, 3);
    check_page(fx, &f); /* usable afterwards */
}

static void test_max_scan(void **state)
{
    fixture *fx = *state;
    matcher m = {"user", 0};
    cp_call_filter f = all_calls(NCALLS);
    f.sort = CP_SORT_CPU;
    f.match = match_params;
    f.match_ud = &m;
    size_t hot_rows = 0;
    for (size_t i = 0; i < fx->n; i++) hot_rows += stays_hot(fx->calls[i].c.ts_ms);
    /* a budget the hot tier spends, then one that runs out in the cold tier */
    uint64_t budgets[] = {300, hot_rows + 200};
    for (size_t b = 0; b < CP_ARRAY_LEN(budgets); b++) {
        f.max_scan = budgets[b];
        m.calls = 0;
        got g = {0};
        cp_search_stats st;
        search_ok(fx, fx->rd, &f, &g, &st);
        assert_int_equal(st.partial, 1);
        assert_int_equal(st.more, 1);
        assert_true(st.scanned <= budgets[b]);
        assert_true(m.calls <= budgets[b]);
        assert_true(g.n > 0 && g.n < NCALLS);
        order o = {f.sort, f.desc};
        for (size_t i = 1; i < g.n; i++) {
            tcall *x = &fx->calls[g.idx[i - 1]], *y = &fx->calls[g.idx[i]];
            assert_true(call_cmp(&x, &y, &o) < 0);
        }
        free(g.idx);
    }
    /* large enough: nothing is partial; scanned counts what reached the predicate */
    f.max_scan = 100000;
    f.sort = CP_SORT_TS;
    f.pod = "pod-2";
    f.limit = 5;
    m.calls = 0;
    got g = {0};
    cp_search_stats st;
    search_ok(fx, fx->rd, &f, &g, &st);
    assert_int_equal(st.partial, 0);
    assert_int_equal(g.n, 5);
    assert_int_equal(st.scanned, m.calls);
    free(g.idx);
    f.limit = NCALLS;
    check_page(fx, &f);
}

/* Time-sorted first pages open only the files they need. */
static void test_few_files(void **state)
{
    fixture *fx = *state;
    /* oldest first: the 2023 files, not the 2026 ones (their times come later) */
    cp_call_filter f = all_calls(10);
    f.desc = 0;
    got g = {0};
    cp_search_stats st;
    search_ok(fx, fx->rd, &f, &g, &st);
    assert_int_equal(g.n, 10);
    assert_true(st.windows <= fx->files2023 + 2);
    free(g.idx);
    /* newest first: the hot windows and no 2023 file */
    f.desc = 1;
    g = (got){0};
    search_ok(fx, fx->rd, &f, &g, &st);
    assert_int_equal(g.n, 10);
    assert_true(st.windows <= (fx->nfiles - fx->files2023) + 3);
    free(g.idx);
    /* longest first: the files of the longest range, not the short ones */
    f.sort = CP_SORT_DURATION;
    g = (got){0};
    search_ok(fx, fx->rd, &f, &g, &st);
    size_t top = 0;
    for (size_t i = 0; i < fx->nfiles; i++) top += fx->file_range[i] == 4;
    assert_true(st.windows <= top + 6);
    free(g.idx);
    /* other columns read every file of the range */
    f.sort = CP_SORT_THREAD;
    g = (got){0};
    search_ok(fx, fx->rd, &f, &g, &st);
    assert_true(st.windows >= fx->nfiles);
    free(g.idx);
}

typedef struct filelist {
    size_t n;
    int32_t ranges[MAX_FILES];
} filelist;

static int on_file(void *ud, const cp_cold_file *cf)
{
    filelist *l = ud;
    assert_true(l->n < MAX_FILES);
    l->ranges[l->n++] = cf->duration_range;
    return 0;
}

/* The catalog lists every file (through the tiered reader). */
static void test_listing(void **state)
{
    fixture *fx = *state;
    cp_cold_query q = {0, INT64_MAX, NULL, 0, INT64_MAX, NULL, 0, NULL};
    filelist l = {0};
    size_t skipped = 99;
    assert_int_equal(cp_reader_cold_files(fx->rd, &q, on_file, &l, &skipped), CP_OK);
    assert_int_equal(l.n, fx->nfiles);
    assert_int_equal(skipped, 0);
}

/* $param=value terms skip files by the inverted index; the rows stay right. */
static void test_params_pruning(void **state)
{
    fixture *fx = *state;
    cp_cold_param terms[] = {{"tenant", "T-R3", 6, 4}};
    /* the listing itself (passed through): only files of range 3 are left */
    cp_cold_query q = {0, INT64_MAX, NULL, 0, INT64_MAX, terms, 1, NULL};
    filelist l = {0};
    size_t skipped = 0;
    assert_int_equal(cp_reader_cold_files(fx->rd, &q, on_file, &l, &skipped), CP_OK);
    size_t r3 = 0;
    for (size_t i = 0; i < fx->nfiles; i++) r3 += fx->file_range[i] == 3;
    assert_int_equal(l.n, r3);
    assert_int_equal(skipped, fx->nfiles - r3);
    for (size_t i = 0; i < l.n; i++) assert_int_equal(l.ranges[i], cp_cold_range_upper(3));

    /* a search with the term: same rows, fewer files */
    matcher m = {"\"t-r3\"", 0};
    cp_call_filter f = all_calls(NCALLS);
    f.sort = CP_SORT_MEMORY;
    f.match = match_params;
    f.match_ud = &m;
    got g = {0};
    cp_search_stats without, with;
    search_ok(fx, fx->rd, &f, &g, &without);
    free(g.idx);
    f.params = terms;
    f.nparams = 1;
    size_t n = check_page(fx, &f);
    assert_true(n > 50);
    g = (got){0};
    search_ok(fx, fx->rd, &f, &g, &with);
    free(g.idx);
    assert_true(with.windows + (fx->nfiles - r3) <= without.windows);
    /* paging with the term */
    check_paging(fx, f, 31);
    /* a term no file has: only the hot rows are left to look at */
    cp_cold_param none[] = {{"user", "nobody", 4, 6}};
    f.params = none;
    m.needle = "nobody";
    assert_int_equal(check_page(fx, &f), 0);
    g = (got){0};
    search_ok(fx, fx->rd, &f, &g, &with);
    free(g.idx);
    assert_true(with.windows <= 3);
    /* a term on a param that is not indexed prunes nothing */
    cp_cold_param other[] = {{"zq", "zzz", 2, 3}};
    l = (filelist){0};
    q.params = other;
    assert_int_equal(cp_reader_cold_files(fx->rd, &q, on_file, &l, &skipped), CP_OK);
    assert_int_equal(l.n, fx->nfiles);
    assert_int_equal(skipped, 0);
}

/* ---- tests: get, bounds, pass-through ------------------------------------------------------------ */

static void test_get(void **state)
{
    fixture *fx = *state;
    for (size_t i = 0; i < fx->n; i += 5) {
        const cp_call *c = &fx->calls[i].c;
        cp_call_ref ref;
        cp_call_ref_of(c, &ref);
        for (int wt = 0; wt < 2; wt++) {
            got g = {.fx = fx, .with_trace = wt};
            int rc = cp_reader_get(fx->rd, &ref, wt, on_row, &g);
            if (rc != CP_OK) fail_msg("get %zu: %d %s", i, rc, cp_reader_errmsg(fx->rd));
            assert_int_equal(g.n, 1);
            assert_int_equal(g.idx[0], i);
            free(g.idx);
        }
    }
    /* not there: another pod, another trace position, a time with no file */
    cp_call_ref ref;
    size_t cold_i = 1; /* 2023: cold */
    cp_call_ref_of(&fx->calls[cold_i].c, &ref);
    got g = {.fx = fx};
    ref.pod_hash ^= 1;
    assert_int_equal(cp_reader_get(fx->rd, &ref, 1, on_row, &g), CP_ENOTFOUND);
    ref.pod_hash ^= 1;
    ref.record_index += 100000;
    assert_int_equal(cp_reader_get(fx->rd, &ref, 1, on_row, &g), CP_ENOTFOUND);
    ref.record_index -= 100000;
    ref.ts_ms += 1;
    int found = 0;
    for (size_t i = 0; i < fx->n; i++) found |= fx->calls[i].c.ts_ms == ref.ts_ms;
    assert_false(found);
    assert_int_equal(cp_reader_get(fx->rd, &ref, 1, on_row, &g), CP_ENOTFOUND);
    ref.ts_ms += 3600000000LL;
    assert_int_equal(cp_reader_get(fx->rd, &ref, 1, on_row, &g), CP_ENOTFOUND);
    assert_int_equal(g.n, 0);
    assert_non_null(strstr(cp_reader_errmsg(fx->rd), "no such call"));
    /* the callback's answer comes back */
    cp_call_ref_of(&fx->calls[cold_i].c, &ref);
    size_t n = 2;
    assert_int_equal(cp_reader_get(fx->rd, &ref, 0, stop_at_3, &n), 77);
}

static void test_bounds(void **state)
{
    fixture *fx = *state;
    int64_t lo = INT64_MAX, hi = 0, a, b;
    for (size_t i = 0; i < fx->n; i++) {
        if (fx->calls[i].c.ts_ms < lo) lo = fx->calls[i].c.ts_ms;
        if (fx->calls[i].c.ts_ms > hi) hi = fx->calls[i].c.ts_ms;
    }
    assert_true(is_cold(lo));
    assert_int_equal(cp_reader_bounds(fx->rd, &a, &b), CP_OK);
    assert_int_equal(a, lo);
    assert_int_equal(b, hi);
}

static int count_pod(void *ud, const cp_pod_row *p)
{
    (void)p;
    ++*(size_t *)ud;
    return 0;
}

static int count_word(void *ud, int32_t id, const char *text, size_t len)
{
    (void)id;
    (void)text;
    (void)len;
    ++*(size_t *)ud;
    return 0;
}

static void test_pass_through(void **state)
{
    fixture *fx = *state;
    size_t n = 0;
    assert_int_equal(cp_reader_pods(fx->rd, T2026 + 3600000, T2026 + 3700000, count_pod, &n), CP_OK);
    assert_int_equal(n, NPODS);
    assert_int_equal(cp_catalog_dict_put(fx->cat, &pods[1], 3, "com.acme.A.run", 14), CP_OK);
    assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    const int32_t ids[] = {3, 1000};
    n = 0;
    assert_int_equal(cp_reader_words(fx->rd, pods[1].ns, pods[1].pod, pods[1].restart_ms, ids, 2, count_word, &n),
                     CP_OK);
    assert_int_equal(n, 1);
}

/* ---- tests: the cache, several readers at once ----------------------------------------------------- */

#define NTHREADS 4
#define NQUERIES 12

typedef struct query {
    cp_call_filter f;
    matcher m;
    size_t *want; /* record indexes of the page */
    size_t nwant;
    int more;
} query;

typedef struct worker {
    const fixture *fx;
    query *q;
    size_t nq;
    const char *cache;
    uint64_t cap;
    int index;
    int failures;
    char why[256];
} worker;

typedef struct wgot {
    const fixture *fx;
    size_t idx[64];
    size_t n;
    int bad;
} wgot;

/* A cmocka-free comparison (worker threads must not longjmp). */
static int same_call(const cp_call *w, const cp_call *c)
{
    return c->ts_ms == w->ts_ms && c->duration_ms == w->duration_ms && c->cpu_time == w->cpu_time &&
           c->memory_used == w->memory_used && c->ns_len == w->ns_len && !memcmp(c->ns, w->ns, w->ns_len) &&
           c->pod_len == w->pod_len && !memcmp(c->pod, w->pod, w->pod_len) && c->method_len == w->method_len &&
           !memcmp(c->method, w->method, w->method_len) && c->params_json_len == w->params_json_len &&
           !memcmp(c->params_json, w->params_json, w->params_json_len) && c->error == w->error &&
           c->buffer_offset == w->buffer_offset && !c->trace;
}

static int on_wrow(void *ud, const cp_call *c)
{
    wgot *g = ud;
    if (c->record_index < 0 || (size_t)c->record_index >= g->fx->n || g->n == 64 ||
        !same_call(&g->fx->calls[c->record_index].c, c)) {
        g->bad = 1;
        return 0;
    }
    g->idx[g->n++] = (size_t)c->record_index;
    return 0;
}

static void *worker_main(void *ud)
{
    worker *w = ud;
    char err[512];
    cp_reader *hot, *rd;
    if (cp_reader_open(w->fx->spec, &hot, err, sizeof err) != CP_OK) {
        snprintf(w->why, sizeof w->why, "open: %.200s", err);
        w->failures++;
        return NULL;
    }
    cp_tiered_config cfg = {w->fx->store, w->cache, w->cap};
    if (cp_reader_open_tiered(hot, &cfg, &rd, err, sizeof err) != CP_OK) {
        snprintf(w->why, sizeof w->why, "open tiered: %.200s", err);
        w->failures++;
        return NULL;
    }
    for (size_t round = 0; round < 3; round++) {
        for (size_t k = 0; k < w->nq; k++) {
            query *q = &w->q[(k + (size_t)w->index * 5) % w->nq];
            wgot g = {.fx = w->fx};
            cp_search_stats st;
            int rc = cp_reader_search(rd, &q->f, on_wrow, &g, &st);
            int ok = rc == CP_OK && !g.bad && g.n == q->nwant && st.more == q->more && !st.partial;
            for (size_t i = 0; ok && i < g.n; i++) ok = g.idx[i] == q->want[i];
            if (!ok) {
                if (!w->failures)
                    snprintf(w->why, sizeof w->why, "query %zu: rc %d (%s) bad %d rows %zu/%zu more %d", k, rc,
                             cp_reader_errmsg(rd), g.bad, g.n, q->nwant, st.more);
                w->failures++;
            }
        }
    }
    cp_reader_close(rd);
    return NULL;
}

/* Bytes and entries of the cache directory (temporary downloads left out). */
static uint64_t dir_bytes(const char *path, size_t *files)
{
    DIR *d = opendir(path);
    uint64_t total = 0;
    *files = 0;
    if (!d) return 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%.3800s/%.255s", path, e->d_name);
        struct stat sb;
        if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) total += (uint64_t)sb.st_size, (*files)++;
    }
    closedir(d);
    return total;
}

static void test_cache_threads(void **state)
{
    fixture *fx = *state;
    char cache[4096];
    snprintf(cache, sizeof cache, "%s/cache-threads", fx->dir);
    uint64_t cap = fx->max_file_size * 3; /* a few files: eviction all the time */
    query q[NQUERIES];
    static const cp_sort_col cols[] = {CP_SORT_TS, CP_SORT_DURATION, CP_SORT_CPU, CP_SORT_METHOD, CP_SORT_POD,
                                       CP_SORT_ERROR};
    for (size_t k = 0; k < NQUERIES; k++) {
        memset(&q[k], 0, sizeof q[k]);
        q[k].f = all_calls(20 + k);
        q[k].f.sort = cols[k % CP_ARRAY_LEN(cols)];
        q[k].f.desc = (int)(k / CP_ARRAY_LEN(cols)) % 2;
        if (k % 3 == 1) q[k].f.ns = "ns-b";
        if (k % 4 == 2) {
            q[k].m.needle = "user-1";
            q[k].f.match = match_params;
            q[k].f.match_ud = &q[k].m;
        }
        tcall **want;
        size_t n = expected(fx, &q[k].f, &want);
        q[k].nwant = n < q[k].f.limit ? n : q[k].f.limit;
        q[k].more = n > q[k].f.limit;
        q[k].want = calloc(q[k].nwant + 1, sizeof *q[k].want);
        for (size_t i = 0; i < q[k].nwant; i++) q[k].want[i] = (size_t)want[i]->c.record_index;
        free(want);
    }
    worker w[NTHREADS];
    pthread_t th[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        w[i] = (worker){fx, q, NQUERIES, cache, cap, i, 0, ""};
        assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
    }
    for (int i = 0; i < NTHREADS; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NTHREADS; i++)
        if (w[i].failures) fail_msg("worker %d: %d failures, first: %s", i, w[i].failures, w[i].why);
    /* eviction kept the directory near its cap: each reader may have just added a file */
    size_t files;
    uint64_t bytes = dir_bytes(cache, &files);
    assert_true(files > 0);
    assert_true(bytes <= cap + NTHREADS * fx->max_file_size);
    assert_true(files < fx->nfiles);
    /* copies deleted behind the readers' backs are fetched again; a reader of its own */
    cp_reader *rd = open_tiered(fx, cache, cap);
    cp_call_filter f = all_calls(40);
    f.sort = CP_SORT_WAIT;
    check_page_on(fx, rd, &f);
    /* the directory removed: a reader with files open still reads them (unlinked, not
     * gone), a new one downloads them again into a new directory */
    remove_tree(cache);
    f.desc = 0;
    check_page_on(fx, rd, &f);
    cp_reader_close(rd);
    rd = open_tiered(fx, cache, cap);
    check_page_on(fx, rd, &f);
    /* get reads the trace out of a cached copy */
    for (size_t i = 1; i < 200; i += 37) {
        cp_call_ref ref;
        cp_call_ref_of(&fx->calls[i].c, &ref);
        got g = {.fx = fx, .with_trace = 1};
        assert_int_equal(cp_reader_get(rd, &ref, 1, on_row, &g), CP_OK);
        assert_int_equal(g.n, 1);
        free(g.idx);
    }
    /* a damaged copy is fetched again */
    bytes = dir_bytes(cache, &files);
    assert_true(files > 0);
    DIR *d = opendir(cache);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%.3800s/%.255s", cache, e->d_name);
        FILE *fp = fopen(p, "r+");
        assert_non_null(fp);
        fputs("garbage garbage garbage", fp);
        fseek(fp, -8, SEEK_END);
        fputs("broken!!", fp);
        fclose(fp);
    }
    closedir(d);
    cp_reader_close(rd);
    rd = open_tiered(fx, cache, cap);
    f.sort = CP_SORT_NET_READ;
    check_page_on(fx, rd, &f);
    /* damage inside the first column chunk, the footer intact: the file opens (the
     * reader even has it open already), its data does not decode; the copy is fetched
     * again and the search is right */
    d = opendir(cache);
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%.3800s/%.255s", cache, e->d_name);
        FILE *fp = fopen(p, "r+");
        assert_non_null(fp);
        fseek(fp, 4, SEEK_SET);
        for (int i = 0; i < 64; i++) fputc(0xff, fp);
        fclose(fp);
    }
    closedir(d);
    f.sort = CP_SORT_LOGS_WRITTEN;
    check_page_on(fx, rd, &f);
    cp_call_ref ref;
    cp_call_ref_of(&fx->calls[3].c, &ref);
    got g = {.fx = fx, .with_trace = 1};
    assert_int_equal(cp_reader_get(rd, &ref, 1, on_row, &g), CP_OK);
    assert_int_equal(g.n, 1);
    free(g.idx);
    /* a text order decodes every row group of every file (no statistics to skip by):
     * then no damaged copy is left (each was fetched again, or evicted) */
    f.sort = CP_SORT_THREAD;
    check_page_on(fx, rd, &f);
    d = opendir(cache);
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        char p[4096];
        snprintf(p, sizeof p, "%.3800s/%.255s", cache, e->d_name);
        FILE *fp = fopen(p, "r");
        assert_non_null(fp);
        uint8_t head[68];
        assert_int_equal(fread(head, 1, sizeof head, fp), sizeof head);
        fclose(fp);
        int all = 1;
        for (int i = 4; i < 68; i++) all &= head[i] == 0xff;
        assert_false(all);
    }
    closedir(d);
    cp_reader_close(rd);
    for (size_t k = 0; k < NQUERIES; k++) free(q[k].want);
}

/* Last (it changes the store): a file deleted after it was listed is skipped; a damaged
 * one fails the search with its key in the message. */
static void test_missing_and_damaged(void **state)
{
    fixture *fx = *state;
    char err[256];
    /* the first 2023 file of ns-a: its calls disappear from the answers */
    size_t victim = 0;
    const char *key = fx->keys[victim];
    assert_int_equal(fx->store->ops->del(fx->store, key, err, sizeof err), CP_OK);
    int range = fx->file_range[victim];
    size_t gone = 0;
    for (size_t i = 0; i < fx->n; i++) {
        const cp_call *c = &fx->calls[i].c;
        if (c->ts_ms >= T2023 && c->ts_ms < T2023 + 20 * MIN_MS && !strcmp(c->ns, "ns-a") &&
            cp_cold_range_of(c->duration_ms) == range) {
            fx->calls[i].c.ts_ms = -1; /* out of every range of the reference */
            gone++;
        }
    }
    assert_true(gone > 0);
    cp_reader *rd = open_tiered(fx, NULL, 0);
    cp_call_filter f = all_calls(NCALLS);
    f.from_ms = 0;
    assert_int_equal(check_page_on(fx, rd, &f), NCALLS - gone);
    cp_reader_close(rd);
    /* a damaged object */
    const char *key2 = fx->keys[1];
    assert_int_equal(fx->store->ops->put(fx->store, key2, "PAR1 not really PAR1", 20, err, sizeof err), CP_OK);
    rd = open_tiered(fx, NULL, 0);
    got g = {.fx = fx};
    cp_search_stats st;
    int rc = cp_reader_search(rd, &f, on_row, &g, &st);
    assert_true(rc < 0 && rc != CP_ENOTFOUND);
    assert_non_null(strstr(cp_reader_errmsg(rd), key2));
    free(g.idx);
    cp_reader_close(rd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_row_round_trip),  cmocka_unit_test(test_file_without_has_sql),  cmocka_unit_test(test_layout),
        cmocka_unit_test(test_search_filters),  cmocka_unit_test(test_sort_columns),
        cmocka_unit_test(test_keyset_all_rows), cmocka_unit_test(test_limit_more),
        cmocka_unit_test(test_callback_stop),   cmocka_unit_test(test_max_scan),
        cmocka_unit_test(test_few_files),       cmocka_unit_test(test_listing),
        cmocka_unit_test(test_params_pruning),
        cmocka_unit_test(test_get),             cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_pass_through),    cmocka_unit_test(test_cache_threads),
        cmocka_unit_test(test_missing_and_damaged),
    };
    test_pair_require();
    return cmocka_run_group_tests_name(test_pair_name(), tests, group_setup, group_teardown);
}
