/* pg_catalog_test.c -- the PostgreSQL catalog (catalog_pg.c, pg_hot.c) against a real
 * server: CP_TEST_PG_URL (scripts/pg-test.sh start DIR PORT prints it). Without it the
 * suite is skipped (exit 77). Every test works in a database of its own, created here.
 *
 * Covered: migrations (empty database, re-open, several nodes opening at once), the
 * metadata rows, the hot tier (every column of thousands of calls read back with plain
 * libpq, inventory counters, call_counts, windows made ahead, text PostgreSQL would
 * refuse), the late-call rule, compaction (claim, order and completeness of
 * compact_calls, cold files, inverted indexes, finish, reset, release, lease takeover,
 * concurrent claimers with a writer in flight), retention and error reporting. */
#include "testutil.h"

#include "store/cp_catalog.h"
#include "store/cp_cold.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MIN_MS 60000LL
#define HOUR 3600000LL
#define T2023 1677664800000LL /* 2023-03-01 10:00:00 UTC */
#define T2026 1767268800000LL /* 2026-01-01 12:00:00 UTC */

/* ---- databases ------------------------------------------------------------------------------ */

static const char *server_url(void) { return getenv("CP_TEST_PG_URL"); }

static PGconn *raw_connect(const char *url)
{
    PGconn *c = PQconnectdb(url);
    if (PQstatus(c) != CONNECTION_OK) fail_msg("connect %s: %s", url, PQerrorMessage(c));
    return c;
}

/* A fresh database on the test server; its URL (malloc'ed). */
static char *new_db(void)
{
    static unsigned n;
    char db[64], sql[128];
    snprintf(db, sizeof db, "cpg_%d_%u_%lld", (int)getpid(), ++n, (long long)(cp_now_ms() % 100000000));
    PGconn *c = raw_connect(server_url());
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) fail_msg("%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    const char *s = server_url();
    const char *p = strstr(s, "://");
    const char *slash = p ? strchr(p + 3, '/') : NULL;
    const char *q = strchr(s, '?');
    size_t base = slash ? (size_t)(slash - s) : q ? (size_t)(q - s) : strlen(s);
    size_t len = base + strlen(db) + (q ? strlen(q) : 0) + 2;
    char *url = malloc(len);
    snprintf(url, len, "%.*s/%s%s", (int)base, s, db, q ? q : "");
    return url;
}

/* Drops a database new_db() made (the test's connections are closed) and frees url. */
static void drop_db(char *url)
{
    const char *name = strrchr(url, '/') + 1;
    size_t n = strcspn(name, "?");
    char sql[160];
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %.*s WITH (FORCE)", (int)n, name);
    PGconn *c = raw_connect(server_url());
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) fail_msg("%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
    free(url);
}

static cp_catalog *open_cat(const char *url)
{
    cp_catalog *cat;
    char err[512];
    int st = cp_catalog_open(url, &cat, err, sizeof err);
    if (st != CP_OK) fail_msg("open catalog: %s", err);
    return cat;
}

static void ok(cp_catalog *cat, int st, const char *what)
{
    if (st != CP_OK) fail_msg("%s: %s (%s)", what, cp_catalog_errmsg(cat), cp_strstatus(st));
}

static PGresult *q(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK && PQresultStatus(r) != PGRES_COMMAND_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(c));
    return r;
}

static int64_t q_int(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int64_t q_int(PGconn *c, const char *fmt, ...)
{
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = q(c, sql);
    int64_t v = PQntuples(r) && !PQgetisnull(r, 0, 0) ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    PQclear(r);
    return v;
}

static void q_str(PGconn *c, char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void q_str(PGconn *c, char *out, size_t cap, const char *fmt, ...)
{
    char sql[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    PGresult *r = q(c, sql);
    snprintf(out, cap, "%s", PQntuples(r) && !PQgetisnull(r, 0, 0) ? PQgetvalue(r, 0, 0) : "<null>");
    PQclear(r);
}

/* ---- calls ---------------------------------------------------------------------------------- */

static const cp_catalog_pod pods[] = {
    {"ns-a", "svc-1", "pod-1", "ns-a/pod-1", T2023 - 7200000},
    {"ns-a", "svc-1", "pod-2", "ns-a/pod-2", T2023 - 3600000},
    {"ns-b", "svc-2", "pod-1", "ns-b/pod-1", T2023 - 3600000},
    {"ns-b", "svc-2", "pod-9", "ns-b/pod-9", T2023 - 60000},
};
#define NPODS ((int)CP_ARRAY_LEN(pods))

static const char *const methods[] = {"com.acme.OrderService.place(Ljava/lang/String;)V", "org.Foo.bar()I", "#17",
                                      "\xc3\x9cnicode.m\xc3\xa9thod()V"};
static const char *const threads[] = {"http-nio-8080-exec-1", "main", "pool-3-thread-7"};

typedef struct tcall {
    cp_call c;
    char params[96];
    uint8_t trace[300];
} tcall;

/* Call i: time in [base, base + span), record_index = i (unique). */
static void make_call(tcall *t, size_t i, int64_t base, int64_t span, uint64_t *rng)
{
    cp_call *c = &t->c;
    memset(t, 0, sizeof *t);
    const cp_catalog_pod *p = &pods[test_rand(rng) % NPODS];
    c->ts_ms = base + (int64_t)(test_rand(rng) % (uint64_t)span);
    static const int32_t durs[] = {0, 1, 9, 10, 99, 100, 999, 1000, 4999, 5000, 29999, 30000, 89999, 90000, 500000};
    c->duration_ms = test_rand(rng) % 3 ? durs[test_rand(rng) % CP_ARRAY_LEN(durs)] : (int32_t)(test_rand(rng) % 7000);
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
    c->net_written = -(int64_t)(test_rand(rng) % 2);
    c->ns = p->ns, c->ns_len = strlen(p->ns);
    c->service = p->service, c->service_len = strlen(p->service);
    c->pod = p->pod, c->pod_len = strlen(p->pod);
    c->restart_ms = p->restart_ms;
    c->method_id = (int32_t)(test_rand(rng) % CP_ARRAY_LEN(methods));
    c->method = methods[c->method_id], c->method_len = strlen(c->method);
    c->thread = threads[test_rand(rng) % CP_ARRAY_LEN(threads)], c->thread_len = strlen(c->thread);
    c->error = test_rand(rng) % 7 == 0;
    int n = snprintf(t->params, sizeof t->params, "{%s\"user\":[\"user-%u\"]}", c->error ? "\"call.red\":[\"1\"]," : "",
                     (unsigned)(test_rand(rng) % 20));
    c->params_json = t->params, c->params_json_len = (size_t)n;
    c->trace_file_index = 1 + (int32_t)(test_rand(rng) % 3);
    c->buffer_offset = (int32_t)(test_rand(rng) % 100000);
    c->record_index = (int32_t)i;
    if (test_rand(rng) % 3 == 0) {
        c->trace_reason = CP_TRACE_NOT_FOUND;
    } else {
        size_t len = 1 + test_rand(rng) % sizeof t->trace;
        for (size_t k = 0; k < len; k++) t->trace[k] = (uint8_t)(test_rand(rng) >> 7);
        c->trace = t->trace, c->trace_len = len;
        c->sql = i % 3 == 1; /* only a call with a trace can have run SQL */
    }
}

static void put_calls(cp_catalog *cat, tcall *t, size_t n, size_t commit_every)
{
    for (size_t i = 0; i < n; i++) {
        ok(cat, cp_catalog_call_put(cat, &t[i].c), "call_put");
        if (commit_every && (i + 1) % commit_every == 0) ok(cat, cp_catalog_commit(cat), "commit");
    }
    ok(cat, cp_catalog_commit(cat), "commit");
}

static int str_eq(const char *a, size_t an, const char *b, size_t bn) { return an == bn && (!an || !memcmp(a, b, an)); }

static void assert_call_equal(const cp_call *w, const cp_call *g, int with_trace)
{
    assert_int_equal(g->ts_ms, w->ts_ms);
    assert_int_equal(g->duration_ms, w->duration_ms);
    assert_int_equal(g->cpu_time, w->cpu_time);
    assert_int_equal(g->wait_time, w->wait_time);
    assert_int_equal(g->memory_used, w->memory_used);
    assert_int_equal(g->non_blocking, w->non_blocking);
    assert_int_equal(g->queue_wait_ms, w->queue_wait_ms);
    assert_int_equal(g->suspend_ms, w->suspend_ms);
    assert_int_equal(g->calls, w->calls);
    assert_int_equal(g->transactions, w->transactions);
    assert_int_equal(g->logs_generated, w->logs_generated);
    assert_int_equal(g->logs_written, w->logs_written);
    assert_int_equal(g->file_read, w->file_read);
    assert_int_equal(g->file_written, w->file_written);
    assert_int_equal(g->net_read, w->net_read);
    assert_int_equal(g->net_written, w->net_written);
    assert_true(str_eq(g->ns, g->ns_len, w->ns, w->ns_len));
    assert_true(str_eq(g->service, g->service_len, w->service, w->service_len));
    assert_true(str_eq(g->pod, g->pod_len, w->pod, w->pod_len));
    assert_int_equal(g->restart_ms, w->restart_ms);
    assert_int_equal(g->method_id, w->method_id);
    assert_true(str_eq(g->method, g->method_len, w->method, w->method_len));
    assert_true(str_eq(g->thread, g->thread_len, w->thread, w->thread_len));
    assert_true(str_eq(g->params_json, g->params_json_len, w->params_json, w->params_json_len));
    assert_int_equal(g->error, w->error);
    assert_int_equal(g->sql, w->sql);
    assert_int_equal(g->trace_file_index, w->trace_file_index);
    assert_int_equal(g->buffer_offset, w->buffer_offset);
    assert_int_equal(g->record_index, w->record_index);
    if (w->trace_reason) {
        assert_non_null(g->trace_reason);
        assert_string_equal(g->trace_reason, w->trace_reason);
    } else {
        assert_null(g->trace_reason);
    }
    if (!with_trace) return;
    if (w->trace) {
        assert_non_null(g->trace);
        assert_int_equal(g->trace_len, w->trace_len);
        assert_memory_equal(g->trace, w->trace, w->trace_len);
    } else {
        assert_null(g->trace);
    }
}

static int64_t b64(PGresult *r, int i, int k) { return (int64_t)cp_be64((const uint8_t *)PQgetvalue(r, i, k)); }
static int32_t b32(PGresult *r, int i, int k) { return (int32_t)cp_be32((const uint8_t *)PQgetvalue(r, i, k)); }

/* Reads every call of every live calls table with plain libpq (binary results) and checks
 * it against t[record_index]; returns the rows seen. seen[i] counts call i. */
static size_t check_tables(PGconn *db, const tcall *t, size_t n, int *seen)
{
    PGresult *tabs = q(db, "SELECT table_name FROM inventory WHERE table_type = 'calls' AND status IN ('ready',"
                           " 'persisting') ORDER BY 1");
    size_t rows = 0;
    for (int k = 0; k < PQntuples(tabs); k++) {
        const char *name = PQgetvalue(tabs, k, 0);
        char sql[1024];
        snprintf(sql, sizeof sql,
                 "SELECT c.time, c.cpu_time, c.wait_time, c.memory_used, c.duration, c.non_blocking,"
                 " c.queue_wait_duration, c.suspend_duration, c.calls, c.transactions, c.logs_generated,"
                 " c.logs_written, c.file_read, c.file_written, c.net_read, c.net_written, c.namespace,"
                 " c.service_name, c.pod_name, c.restart_time, c.method, c.params, c.trace_file_index,"
                 " c.buffer_offset, c.record_index, c.method_name, c.thread, c.error, c.pod_hash, c.trace_reason,"
                 " c.trace, c.has_sql FROM %s c",
                 name);
        PGresult *r = PQexecParams(db, sql, 0, NULL, NULL, NULL, NULL, 1);
        if (PQresultStatus(r) != PGRES_TUPLES_OK) fail_msg("%s: %s", sql, PQerrorMessage(db));
        for (int i = 0; i < PQntuples(r); i++) {
            cp_call g;
            memset(&g, 0, sizeof g);
            g.ts_ms = b64(r, i, 0), g.cpu_time = b64(r, i, 1), g.wait_time = b64(r, i, 2);
            g.memory_used = b64(r, i, 3), g.duration_ms = b32(r, i, 4), g.non_blocking = b64(r, i, 5);
            g.queue_wait_ms = b32(r, i, 6), g.suspend_ms = b32(r, i, 7), g.calls = b32(r, i, 8);
            g.transactions = b64(r, i, 9), g.logs_generated = b32(r, i, 10), g.logs_written = b32(r, i, 11);
            g.file_read = b64(r, i, 12), g.file_written = b64(r, i, 13), g.net_read = b64(r, i, 14);
            g.net_written = b64(r, i, 15);
            g.ns = PQgetvalue(r, i, 16), g.ns_len = (size_t)PQgetlength(r, i, 16);
            g.service = PQgetvalue(r, i, 17), g.service_len = (size_t)PQgetlength(r, i, 17);
            g.pod = PQgetvalue(r, i, 18), g.pod_len = (size_t)PQgetlength(r, i, 18);
            g.restart_ms = b64(r, i, 19), g.method_id = b32(r, i, 20);
            g.params_json = PQgetvalue(r, i, 21), g.params_json_len = (size_t)PQgetlength(r, i, 21);
            g.trace_file_index = b32(r, i, 22), g.buffer_offset = b32(r, i, 23), g.record_index = b32(r, i, 24);
            g.method = PQgetvalue(r, i, 25), g.method_len = (size_t)PQgetlength(r, i, 25);
            g.thread = PQgetvalue(r, i, 26), g.thread_len = (size_t)PQgetlength(r, i, 26);
            g.error = b32(r, i, 27);
            g.trace_reason = PQgetisnull(r, i, 29) ? NULL : PQgetvalue(r, i, 29);
            if (!PQgetisnull(r, i, 30))
                g.trace = (const uint8_t *)PQgetvalue(r, i, 30), g.trace_len = (size_t)PQgetlength(r, i, 30);
            g.sql = b32(r, i, 31);
            assert_true(g.record_index >= 0 && (size_t)g.record_index < n);
            const cp_call *w = &t[g.record_index].c;
            assert_call_equal(w, &g, 1);
            assert_int_equal((uint64_t)b64(r, i, 28), cp_pod_hash(w->ns, w->ns_len, w->pod, w->pod_len));
            seen[g.record_index]++;
            rows++;
        }
        PQclear(r);
    }
    PQclear(tabs);
    return rows;
}

/* ---- migrations ----------------------------------------------------------------------------- */

static void test_migrations(void **state)
{
    (void)state;
    assert_int_equal(cp_catalog_pg_schema_version(), 10);
    assert_int_equal(cp_catalog_pg_schema_version(), cp_catalog_sqlite_schema_version());
    assert_non_null(cp_catalog_pg_migration(1));
    assert_non_null(cp_catalog_pg_migration(10));
    assert_null(cp_catalog_pg_migration(0));
    assert_null(cp_catalog_pg_migration(11));
    assert_true(cp_catalog_is_postgres("postgres://x/y"));
    assert_true(cp_catalog_is_postgres("postgresql://x/y"));
    assert_false(cp_catalog_is_postgres("/tmp/catalog.db"));
    char *url = new_db();
    cp_catalog *cat = open_cat(url);
    assert_string_equal(cat->ops->name, "postgres");
    cp_catalog_close(cat);
    cat = open_cat(url); /* again: nothing to apply */
    cp_catalog_close(cat);
    PGconn *db = raw_connect(url);
    assert_int_equal(q_int(db, "SELECT count(*) FROM schema_migrations"), 10);
    assert_int_equal(q_int(db, "SELECT max(version) FROM schema_migrations"), 10);
    assert_true(q_int(db, "SELECT min(applied_ms) FROM schema_migrations") > T2023);
    static const char *const tables[] = {"pods", "pod_restarts", "dictionary", "params", "dumps", "s3_files",
                                         "inventory", "streams", "call_counts", "inverted_indexes",
                                         "dump_pending", "hot_rollups", "audit_log"};
    for (size_t i = 0; i < CP_ARRAY_LEN(tables); i++)
        assert_int_equal(q_int(db, "SELECT count(*) FROM pg_tables WHERE tablename = '%s'", tables[i]), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'inventory'"
                               " AND column_name IN ('batch', 'claim', 'claimed_by', 'claimed_at')"),
                     4);
    assert_int_equal(q_int(db, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'dumps'"
                               " AND column_name IN ('path', 'dir_time', 'state', 'version', 'location', 'claim')"),
                     6);
    /* a database from a newer build is refused */
    PQclear(q(db, "INSERT INTO schema_migrations VALUES (99, 0)"));
    cp_catalog *bad;
    char err[512];
    assert_int_equal(cp_catalog_open_pg(url, &bad, err, sizeof err), CP_EINVAL);
    assert_null(bad);
    assert_non_null(strstr(err, "newer"));
    /* a server that is not there: an error, nothing printed */
    assert_int_not_equal(cp_catalog_open("postgresql://postgres@127.0.0.1:1/none?connect_timeout=2", &bad, err,
                                         sizeof err),
                         CP_OK);
    assert_non_null(strstr(err, "connect"));
    PQfinish(db);
    drop_db(url);
}

typedef struct opener {
    const char *url;
    pthread_barrier_t *bar;
    int st;
    char err[512];
} opener;

static void *open_main(void *arg)
{
    opener *o = arg;
    cp_catalog *cat;
    pthread_barrier_wait(o->bar);
    o->st = cp_catalog_open_pg(o->url, &cat, o->err, sizeof o->err);
    if (o->st == CP_OK) cp_catalog_close(cat);
    return NULL;
}

static void test_concurrent_open(void **state)
{
    (void)state;
    char *url = new_db();
    enum { N = 4 };
    pthread_t th[N];
    opener o[N];
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, NULL, N);
    for (int i = 0; i < N; i++) {
        o[i] = (opener){.url = url, .bar = &bar};
        pthread_create(&th[i], NULL, open_main, &o[i]);
    }
    for (int i = 0; i < N; i++) {
        pthread_join(th[i], NULL);
        if (o[i].st != CP_OK) fail_msg("opener %d: %s", i, o[i].err);
    }
    pthread_barrier_destroy(&bar);
    PGconn *db = raw_connect(url);
    assert_int_equal(q_int(db, "SELECT count(*) FROM schema_migrations"), cp_catalog_pg_schema_version());
    PQfinish(db);
    drop_db(url);
}

/* ---- metadata --------------------------------------------------------------------------------- */

typedef struct listed {
    char items[16][128];
    int n;
} listed;

static int on_pod(void *ud, const cp_catalog_pod *p)
{
    listed *l = ud;
    snprintf(l->items[l->n++ % 16], 128, "%s|%s|%s|%s|%lld", p->ns, p->service, p->pod, p->pod_id,
             (long long)p->restart_ms);
    return 0;
}

static int on_file(void *ud, const char *stream, int64_t idx, const char *path)
{
    listed *l = ud;
    snprintf(l->items[l->n++ % 16], 128, "%s|%lld|%s", stream, (long long)idx, path);
    return 0;
}

static int on_name(void *ud, const char *name)
{
    listed *l = ud;
    snprintf(l->items[l->n++ % 16], 128, "%s", name);
    return 0;
}

static void test_metadata(void **state)
{
    (void)state;
    char *url = new_db();
    cp_catalog *cat = open_cat(url);
    PGconn *db = raw_connect(url);
    const cp_catalog_pod *p = &pods[0];
    ok(cat, cp_catalog_pod_register(cat, p, T2023 + 1), "register");
    ok(cat, cp_catalog_pod_register(cat, &pods[1], T2023 + 2), "register");
    ok(cat, cp_catalog_commit(cat), "commit");
    cp_catalog_pod later = *p;
    later.restart_ms = T2023 + 5000;
    later.service = "svc-1b";
    ok(cat, cp_catalog_pod_register(cat, &later, T2023 + 6000), "register again");
    ok(cat, cp_catalog_pod_touch(cat, &later, T2023 + 9000), "touch");
    ok(cat, cp_catalog_commit(cat), "commit");
    char s[256];
    q_str(db, s, sizeof s,
          "SELECT concat_ws('|', service_name, active_since, last_restart, last_active, tags, pod_id) FROM pods"
          " WHERE namespace = 'ns-a' AND pod_name = 'pod-1'");
    char want[256];
    snprintf(want, sizeof want, "svc-1b|%lld|%lld|%lld|{}|ns-a/pod-1", (long long)p->restart_ms,
             (long long)later.restart_ms, (long long)(T2023 + 9000));
    assert_string_equal(s, want);
    assert_int_equal(q_int(db, "SELECT count(*) FROM pod_restarts"), 3);
    assert_int_equal(q_int(db, "SELECT last_active FROM pod_restarts WHERE pod_id = 'ns-a/pod-1'"
                               " AND restart_time = %lld",
                           (long long)later.restart_ms),
                     T2023 + 9000);

    /* dictionary: thousands of words, re-sent positions (in one batch and across batches) */
    char word[64];
    for (int i = 0; i < 5000; i++) {
        int n = snprintf(word, sizeof word, "com.acme.Class%d.method%d", i, i % 7);
        ok(cat, cp_catalog_dict_put(cat, p, i, word, (size_t)n), "dict_put");
    }
    ok(cat, cp_catalog_dict_put(cat, p, 7, "first", 5), "dict_put");
    ok(cat, cp_catalog_dict_put(cat, p, 7, "second", 6), "dict_put"); /* the last one wins */
    ok(cat, cp_catalog_dict_put(cat, &pods[1], 7, "other\0pod\xff", 10), "dict_put");
    ok(cat, cp_catalog_commit(cat), "commit");
    ok(cat, cp_catalog_dict_put(cat, p, 8, "replaced", 8), "dict_put");
    ok(cat, cp_catalog_commit(cat), "commit");
    assert_int_equal(q_int(db, "SELECT count(*) FROM dictionary WHERE pod_id = 'ns-a/pod-1'"), 5000);
    q_str(db, s, sizeof s, "SELECT tag FROM dictionary WHERE pod_id = 'ns-a/pod-1' AND position = 7");
    assert_string_equal(s, "second");
    q_str(db, s, sizeof s, "SELECT tag FROM dictionary WHERE pod_id = 'ns-a/pod-1' AND position = 8");
    assert_string_equal(s, "replaced");
    q_str(db, s, sizeof s, "SELECT tag FROM dictionary WHERE pod_id = 'ns-a/pod-1' AND position = 4999");
    assert_string_equal(s, "com.acme.Class4999.method1");
    q_str(db, s, sizeof s, "SELECT tag FROM dictionary WHERE pod_id = 'ns-a/pod-2' AND position = 7");
    assert_string_equal(s, "other\xef\xbf\xbdpod\xef\xbf\xbd"); /* NUL and a bad byte cleaned */

    /* params */
    cp_catalog_param prm = {"user.id", 7, 1, 0, 3, "String", 6};
    ok(cat, cp_catalog_param_put(cat, p, &prm), "param_put");
    cp_catalog_param prm2 = {"endpoint", 8, 0, 1, 4, "String[]", 8};
    ok(cat, cp_catalog_param_put(cat, p, &prm2), "param_put");
    prm2.index = 1;
    prm2.order = 5;
    ok(cat, cp_catalog_param_put(cat, &pods[1], &prm2), "param_put");
    prm.order = 9;
    ok(cat, cp_catalog_param_put(cat, p, &prm), "param_put again");
    ok(cat, cp_catalog_commit(cat), "commit");
    q_str(db, s, sizeof s,
          "SELECT concat_ws('|', pod_name, restart_time, param_index, param_list, param_order, signature) FROM params"
          " WHERE pod_id = 'ns-a/pod-1' AND param_name = 'user.id'");
    snprintf(want, sizeof want, "pod-1|%lld|1|0|9|String", (long long)p->restart_ms);
    assert_string_equal(s, want);
    assert_int_equal(q_int(db, "SELECT count(*) FROM params"), 3);
    listed l = {0};
    ok(cat, cp_catalog_indexed_params(cat, on_name, &l), "indexed_params");
    assert_int_equal(l.n, 2);
    assert_string_equal(l.items[0], "endpoint");
    assert_string_equal(l.items[1], "user.id");

    /* streams, crash recovery */
    cp_catalog_stream st = {p, "calls", 1, "6b1f0c1e-0000-4000-8000-000000000001", 3600000, 1 << 20, T2023, 0, 0,
                            "open", NULL, "/raw/ns-a/pod-1/1/calls/1"};
    ok(cat, cp_catalog_stream_open(cat, &st), "stream_open");
    cp_catalog_stream st2 = st;
    st2.stream = "trace", st2.file_index = 2, st2.path = "/raw/ns-a/pod-1/1/trace/2";
    ok(cat, cp_catalog_stream_open(cat, &st2), "stream_open");
    st2.file_index = 1, st2.path = "/raw/ns-a/pod-1/1/trace/1";
    ok(cat, cp_catalog_stream_open(cat, &st2), "stream_open");
    cp_catalog_stream other = st;
    other.pod = &pods[1];
    ok(cat, cp_catalog_stream_open(cat, &other), "stream_open");
    ok(cat, cp_catalog_commit(cat), "commit");
    other.closed_ms = T2023 + 100, other.bytes = 5000000000ULL, other.status = "failed", other.error = "boom";
    ok(cat, cp_catalog_stream_close(cat, &other), "stream_close");
    ok(cat, cp_catalog_commit(cat), "commit");
    q_str(db, s, sizeof s,
          "SELECT concat_ws('|', closed_ms, bytes, status, error, handle, rotation_period, rotation_size, opened_ms)"
          " FROM streams WHERE pod_id = 'ns-a/pod-2'");
    snprintf(want, sizeof want, "%lld|5000000000|failed|boom|%s|3600000|1048576|%lld", (long long)(T2023 + 100),
             st.handle, (long long)T2023);
    assert_string_equal(s, want);
    /* a restart is unfinished while a stream file is open, or until its calls are all in
     * the hot tier (hot_complete): pod-2's files are closed but it is not complete yet */
    memset(&l, 0, sizeof l);
    ok(cat, cp_catalog_unfinished(cat, on_pod, &l), "unfinished");
    assert_int_equal(l.n, 2);
    /* (the third new restart has no stream file: nothing of it to recover, never listed) */
    assert_int_equal(q_int(db, "SELECT count(*) FROM pod_restarts WHERE hot_complete = 0"), 3);
    ok(cat, cp_catalog_restart_complete(cat, &pods[1]), "restart_complete");
    ok(cat, cp_catalog_commit(cat), "commit");
    memset(&l, 0, sizeof l);
    ok(cat, cp_catalog_unfinished(cat, on_pod, &l), "unfinished");
    assert_int_equal(l.n, 1);
    snprintf(want, sizeof want, "ns-a|svc-1|pod-1|ns-a/pod-1|%lld", (long long)p->restart_ms);
    assert_string_equal(l.items[0], want);
    memset(&l, 0, sizeof l);
    ok(cat, cp_catalog_restart_files(cat, p, on_file, &l), "restart_files");
    assert_int_equal(l.n, 3);
    assert_string_equal(l.items[0], "calls|1|/raw/ns-a/pod-1/1/calls/1");
    assert_string_equal(l.items[1], "trace|1|/raw/ns-a/pod-1/1/trace/1");
    assert_string_equal(l.items[2], "trace|2|/raw/ns-a/pod-1/1/trace/2");
    ok(cat, cp_catalog_restart_finish(cat, p, "recovered"), "restart_finish");
    ok(cat, cp_catalog_commit(cat), "commit");
    assert_int_equal(q_int(db, "SELECT count(*) FROM streams WHERE status = 'closed' AND error = 'recovered'"), 3);
    memset(&l, 0, sizeof l);
    ok(cat, cp_catalog_unfinished(cat, on_pod, &l), "unfinished");
    assert_int_equal(l.n, 0);
    assert_int_equal(cp_catalog_maintain(cat), CP_OK);
    cp_catalog_close(cat);
    PQfinish(db);
    drop_db(url);
}

/* ---- the hot tier -------------------------------------------------------------------------------- */

#define NCALLS 3000

static void test_calls(void **state)
{
    (void)state;
    char *url = new_db();
    cp_catalog *cat = open_cat(url);
    PGconn *db = raw_connect(url);
    ok(cat, cp_catalog_set_windows(cat, 5 * MIN_MS, 3 * HOUR), "set_windows");
    assert_int_equal(cp_catalog_set_windows(cat, 7 * MIN_MS, HOUR), CP_EINVAL);
    tcall *t = calloc(NCALLS, sizeof *t);
    uint64_t rng = 42;
    /* half in 2023 (4 windows created on the spot), half in 2026 (6 windows made ahead) */
    ok(cat, cp_catalog_windows_prepare(cat, T2026), "prepare");
    for (size_t i = 0; i < NCALLS; i++)
        make_call(&t[i], i, i % 2 ? T2023 : T2026, i % 2 ? 20 * MIN_MS : 30 * MIN_MS, &rng);
    /* text PostgreSQL refuses as is: stored with U+FFFD */
    static const char bad_thread[] = "thr\xc3(ead\x00x";
    t[5].c.thread = bad_thread, t[5].c.thread_len = sizeof bad_thread - 1;
    put_calls(cat, t, NCALLS, 400);
    t[5].c.thread = "thr\xef\xbf\xbd(ead\xef\xbf\xbdx", t[5].c.thread_len = strlen(t[5].c.thread);

    int *seen = calloc(NCALLS, sizeof *seen);
    assert_int_equal(check_tables(db, t, NCALLS, seen), NCALLS);
    for (size_t i = 0; i < NCALLS; i++) assert_int_equal(seen[i], 1);
    /* windows: 2026 made ahead (3 h = 36), 2023 created on the spot (4) */
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE table_type = 'calls' AND status = 'ready'"), 40);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE table_type <> 'calls'"), 0); /* one table */
    assert_int_equal(q_int(db, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'calls\\_%%'"), 40);
    /* rows_count of every table is its row count */
    PGresult *r = q(db, "SELECT table_name, rows_count, start_time, end_time FROM inventory ORDER BY 1");
    int64_t total_calls = 0, total_traces = 0; /* traces: rows with a trace */
    for (int i = 0; i < PQntuples(r); i++) {
        const char *name = PQgetvalue(r, i, 0);
        int64_t rc = strtoll(PQgetvalue(r, i, 1), NULL, 10);
        assert_int_equal(q_int(db, "SELECT count(*) FROM %s", name), rc);
        assert_int_equal(strtoll(PQgetvalue(r, i, 3), NULL, 10) - strtoll(PQgetvalue(r, i, 2), NULL, 10), 5 * MIN_MS);
        assert_int_equal(strncmp(name, "calls_", 6), 0);
        total_calls += rc;
        total_traces += q_int(db, "SELECT count(*) FROM %s WHERE trace IS NOT NULL", name);
    }
    PQclear(r);
    int64_t with_trace = 0;
    for (size_t i = 0; i < NCALLS; i++) with_trace += t[i].c.trace != NULL;
    assert_int_equal(total_calls, NCALLS);
    assert_int_equal(total_traces, with_trace);
    /* a window's name is its start */
    assert_int_equal(q_int(db, "SELECT start_time FROM inventory WHERE table_name = 'calls_20230301_1005'"),
                     T2023 + 5 * MIN_MS);
    /* call_counts: per window and pod restart */
    r = q(db, "SELECT namespace, pod_name, restart_time, window_start, window_end, service_name, calls"
              " FROM call_counts");
    int64_t counted = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t ws = strtoll(PQgetvalue(r, i, 3), NULL, 10), rs = strtoll(PQgetvalue(r, i, 2), NULL, 10);
        int64_t want = 0;
        for (size_t k = 0; k < NCALLS; k++) {
            const cp_call *c = &t[k].c;
            want += c->ts_ms - c->ts_ms % (5 * MIN_MS) == ws && c->restart_ms == rs &&
                    !strcmp(c->ns, PQgetvalue(r, i, 0)) && !strcmp(c->pod, PQgetvalue(r, i, 1));
            if (c->restart_ms == rs && !strcmp(c->pod, PQgetvalue(r, i, 1)) && !strcmp(c->ns, PQgetvalue(r, i, 0)))
                assert_string_equal(PQgetvalue(r, i, 5), c->service);
        }
        assert_int_equal(strtoll(PQgetvalue(r, i, 6), NULL, 10), want);
        assert_int_equal(strtoll(PQgetvalue(r, i, 4), NULL, 10), ws + 5 * MIN_MS);
        counted += want;
    }
    PQclear(r);
    assert_int_equal(counted, NCALLS);
    /* call_exists: every call, and a call that is not there */
    for (size_t i = 0; i < NCALLS; i += 97) assert_int_equal(cp_catalog_call_exists(cat, &t[i].c), 1);
    cp_call missing = t[0].c;
    missing.record_index = 999999;
    assert_int_equal(cp_catalog_call_exists(cat, &missing), 0);
    missing.ts_ms = T2023 - 10 * HOUR; /* no window at all */
    assert_int_equal(cp_catalog_call_exists(cat, &missing), 0);
    /* one put in this cycle is found before the commit */
    tcall extra;
    make_call(&extra, 0, T2023, MIN_MS, &rng);
    extra.c.record_index = 123456;
    ok(cat, cp_catalog_call_put(cat, &extra.c), "call_put");
    assert_int_equal(cp_catalog_call_exists(cat, &extra.c), 1);
    ok(cat, cp_catalog_commit(cat), "commit");
    assert_int_equal(q_int(db, "SELECT sum(calls) FROM call_counts"), NCALLS + 1);
    /* ids: unique over all windows, a call's trace has its id */
    assert_int_equal(q_int(db, "SELECT count(*) - count(DISTINCT id) FROM (SELECT id FROM calls_20230301_1000 UNION ALL"
                               " SELECT id FROM calls_20230301_1005 UNION ALL SELECT id FROM calls_20260101_1200) x"),
                     0);
    /* a bad time is refused and leaves the cycle alone */
    cp_call bad = t[1].c;
    bad.ts_ms = -5;
    assert_int_equal(cp_catalog_call_put(cat, &bad), CP_EINVAL);
    bad.ts_ms = T2023, bad.ns = NULL;
    assert_int_equal(cp_catalog_call_put(cat, &bad), CP_EINVAL);
    ok(cat, cp_catalog_commit(cat), "commit");
    free(seen);
    free(t);
    cp_catalog_close(cat);
    PQfinish(db);
    drop_db(url);
}

/* The COPY buffers stay within the writer's memory bound (cp_catalog_set_cache_max, the
 * server's share of --ingest-memory): past half of it they are flushed into the open
 * transaction. The rows reach the server before the commit (the window tables grow while
 * nothing is visible yet) and the commit makes all of them visible at once, each once. */
static void test_copy_buffer_bound(void **state)
{
    (void)state;
    char *url = new_db();
    cp_catalog *cat = open_cat(url);
    PGconn *db = raw_connect(url);
    ok(cat, cp_catalog_set_windows(cat, 5 * MIN_MS, 3 * HOUR), "set_windows");
    ok(cat, cp_catalog_set_cache_max(cat, 1u << 20), "set_cache_max"); /* flushes past 512 KiB */
    ok(cat, cp_catalog_windows_prepare(cat, T2026), "prepare");
    ok(cat, cp_catalog_commit(cat), "commit");
    enum { N = 4000 };
    tcall *t = calloc(N, sizeof *t);
    uint64_t rng = 7;
    for (size_t i = 0; i < N; i++) {
        make_call(&t[i], i, T2026, 30 * MIN_MS, &rng);
        t[i].c.trace_reason = NULL; /* ~2 MB of tuples: several flushes */
        t[i].c.trace = t[i].trace, t[i].c.trace_len = sizeof t[i].trace;
    }
    for (size_t i = 0; i < N; i++) ok(cat, cp_catalog_call_put(cat, &t[i].c), "call_put");
    const char *sizes = "SELECT coalesce(sum(pg_relation_size(table_name::regclass)), 0) FROM inventory"
                        " WHERE table_type = 'calls'";
    assert_true(q_int(db, "%s", sizes) > 0); /* sent already, inside the open transaction */
    PGresult *r = q(db, "SELECT table_name FROM inventory WHERE table_type = 'calls'");
    for (int i = 0; i < PQntuples(r); i++)
        assert_int_equal(q_int(db, "SELECT count(*) FROM %s", PQgetvalue(r, i, 0)), 0); /* none visible */
    PQclear(r);
    ok(cat, cp_catalog_commit(cat), "commit");
    int *seen = calloc(N, sizeof *seen);
    assert_int_equal(check_tables(db, t, N, seen), N);
    for (size_t i = 0; i < N; i++) assert_int_equal(seen[i], 1);
    assert_int_equal(q_int(db, "SELECT sum(calls) FROM call_counts"), N);
    free(seen);
    free(t);
    cp_catalog_close(cat);
    PQfinish(db);
    drop_db(url);
}

static void test_windows_prepare(void **state)
{
    (void)state;
    char *url = new_db();
    cp_catalog *cat = open_cat(url);
    PGconn *db = raw_connect(url);
    int64_t now = T2026 + 2 * MIN_MS; /* inside the 12:00 window */
    ok(cat, cp_catalog_windows_prepare(cat, now), "prepare");
    ok(cat, cp_catalog_commit(cat), "commit");
    /* from 12:00 up to now + 3 h: 37 windows (12:00 .. 15:00) */
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE table_type = 'calls' AND status = 'ready'"), 37);
    assert_int_equal(q_int(db, "SELECT min(start_time) FROM inventory"), T2026);
    assert_int_equal(q_int(db, "SELECT max(start_time) FROM inventory"), T2026 + 3 * HOUR);
    assert_int_equal(q_int(db, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'traces\\_%%'"), 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'calls\\_%%'"), 37);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE rows_count <> 0 OR batch <> 0"), 0);
    /* again, and from a second node: nothing new */
    ok(cat, cp_catalog_windows_prepare(cat, now), "prepare");
    ok(cat, cp_catalog_commit(cat), "commit");
    cp_catalog *other = open_cat(url);
    ok(other, cp_catalog_windows_prepare(other, now + 5 * MIN_MS), "prepare");
    ok(other, cp_catalog_commit(other), "commit");
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE table_type = 'calls'"), 38);
    /* 10-minute windows, 1 h ahead */
    ok(cat, cp_catalog_set_windows(cat, 10 * MIN_MS, HOUR), "set_windows");
    ok(cat, cp_catalog_windows_prepare(cat, T2026 + 24 * HOUR), "prepare");
    ok(cat, cp_catalog_commit(cat), "commit");
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE table_type = 'calls' AND start_time >= %lld",
                           (long long)(T2026 + 24 * HOUR)),
                     6);
    assert_int_equal(q_int(db, "SELECT max(end_time - start_time) FROM inventory"), 10 * MIN_MS);
    cp_catalog_close(other);
    cp_catalog_close(cat);
    PQfinish(db);
    drop_db(url);
}

/* ---- compaction -------------------------------------------------------------------------------- */

typedef struct got {
    cp_call *calls;
    uint8_t **traces;
    char **texts;
    size_t n, cap;
} got;

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

/* Keeps a deep copy of every call compact_calls hands over. */
static int on_compact(void *ud, const cp_call *c)
{
    got *g = ud;
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 256;
        g->calls = realloc(g->calls, g->cap * sizeof *g->calls);
    }
    cp_call *d = &g->calls[g->n++];
    *d = *c;
    d->ns = dup_n(c->ns, c->ns_len), d->service = dup_n(c->service, c->service_len), d->pod = dup_n(c->pod, c->pod_len);
    d->method = dup_n(c->method, c->method_len), d->thread = dup_n(c->thread, c->thread_len);
    d->params_json = dup_n(c->params_json, c->params_json_len);
    d->trace_reason = c->trace_reason ? dup_n(c->trace_reason, strlen(c->trace_reason)) : NULL;
    d->trace = c->trace ? (const uint8_t *)dup_n((const char *)c->trace, c->trace_len) : NULL;
    return 0;
}

static void got_free(got *g)
{
    for (size_t i = 0; i < g->n; i++) {
        cp_call *c = &g->calls[i];
        free((void *)c->ns), free((void *)c->service), free((void *)c->pod), free((void *)c->method);
        free((void *)c->thread), free((void *)c->params_json), free((void *)c->trace_reason), free((void *)c->trace);
    }
    free(g->calls);
    memset(g, 0, sizeof *g);
}

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

/* compact_calls's order: namespace, duration range, time, restart, pod hash, trace index. */
static int compact_cmp(const cp_call *a, const cp_call *b)
{
    int c = cmp_bytes(a->ns, a->ns_len, b->ns, b->ns_len);
    if (c) return c;
    c = cp_cold_range_of(a->duration_ms) - cp_cold_range_of(b->duration_ms);
    if (c) return c;
#define CMP(f)                                                                                                         \
    if (a->f != b->f) return a->f < b->f ? -1 : 1
    CMP(ts_ms);
    CMP(restart_ms);
    int64_t ha = (int64_t)cp_pod_hash(a->ns, a->ns_len, a->pod, a->pod_len);
    int64_t hb = (int64_t)cp_pod_hash(b->ns, b->ns_len, b->pod, b->pod_len);
    if (ha != hb) return ha < hb ? -1 : 1;
    CMP(trace_file_index);
    CMP(buffer_offset);
    CMP(record_index);
#undef CMP
    return 0;
}

static cp_compact_opts opts_at(int64_t until, const char *node, int64_t lease, int64_t now)
{
    cp_compact_opts o = {until, node, lease, now};
    return o;
}

static int on_key(void *ud, const char *key)
{
    listed *l = ud;
    snprintf(l->items[l->n++ % 16], 128, "%s", key);
    return 0;
}

static void file_of(cp_cold_file *f, const cp_compact_job *job, const char *key, const char *status, int range)
{
    memset(f, 0, sizeof *f);
    f->uuid = key, f->key = key, f->url = "s3://bucket/prefix/x";
    f->local_path = "/tmp/x.parquet", f->file_type = "calls", f->ns = "ns-a";
    f->duration_range = cp_cold_range_upper(range);
    f->start_ms = job->hour_ms, f->end_ms = job->hour_ms + HOUR;
    f->min_ts = job->from_ms + 1, f->max_ts = job->to_ms - 1;
    f->rows = 10, f->size = 12345, f->status = status;
    f->services = "[\"svc-1\"]", f->indexed_params = "[\"user.id\"]", f->claim = job->claim;
}

static void test_compaction(void **state)
{
    (void)state;
    char *url = new_db();
    cp_catalog *cat = open_cat(url), *comp = open_cat(url);
    PGconn *db = raw_connect(url);
    enum { N = 2500 };
    tcall *t = calloc(N, sizeof *t);
    uint64_t rng = 7;
    for (size_t i = 0; i < N; i++) make_call(&t[i], i, T2023, 2 * HOUR, &rng); /* 10:00 .. 12:00 */
    put_calls(cat, t, N, 500);
    cp_compact_job job;
    /* nothing ends before 10:05 */
    cp_compact_opts o = opts_at(T2023 + 4 * MIN_MS, "node-a", MIN_MS, T2026);
    assert_int_equal(cp_catalog_compact_claim(comp, &o, &job), CP_ENOTFOUND);
    /* until 11:30: the 10:xx hour, all 12 windows */
    o = opts_at(T2023 + 90 * MIN_MS, "node-a", MIN_MS, T2026);
    ok(comp, cp_catalog_compact_claim(comp, &o, &job), "claim");
    assert_string_equal(job.claim, "20230301_1000");
    assert_int_equal(job.hour_ms, T2023);
    assert_int_equal(job.from_ms, T2023);
    assert_int_equal(job.to_ms, T2023 + HOUR);
    assert_int_equal(job.windows, 12);
    assert_int_equal(job.taken_over, 0);
    size_t in_hour = 0;
    for (size_t i = 0; i < N; i++) in_hour += t[i].c.ts_ms < T2023 + HOUR;
    assert_int_equal(job.rows, in_hour);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE status = 'persisting' AND claim = '20230301_1000'"
                               " AND claimed_by = 'node-a' AND claimed_at = %lld",
                           (long long)T2026),
                     12);
    /* the next claim takes 11:00 .. 11:30 (windows ending by 11:30) */
    cp_compact_job job2;
    ok(comp, cp_catalog_compact_claim(comp, &o, &job2), "claim 2");
    assert_string_equal(job2.claim, "20230301_1100");
    assert_int_equal(job2.windows, 6);
    cp_compact_job none;
    assert_int_equal(cp_catalog_compact_claim(comp, &o, &none), CP_ENOTFOUND);
    ok(comp, cp_catalog_compact_release(comp, &job2), "release");
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE status = 'ready' AND claim IS NULL"
                               " AND claimed_by IS NULL AND start_time >= %lld",
                           (long long)(T2023 + HOUR)),
                     12);

    /* compact_calls: every call of the hour, in order, with its trace */
    got g = {0};
    ok(comp, cp_catalog_compact_calls(comp, &job, on_compact, &g), "compact_calls");
    assert_int_equal(g.n, in_hour);
    for (size_t i = 1; i < g.n; i++) assert_true(compact_cmp(&g.calls[i - 1], &g.calls[i]) <= 0);
    int *seen = calloc(N, sizeof *seen);
    for (size_t i = 0; i < g.n; i++) {
        const cp_call *c = &g.calls[i];
        assert_true(c->record_index >= 0 && c->record_index < N);
        assert_call_equal(&t[c->record_index].c, c, 1);
        assert_true(c->ts_ms < T2023 + HOUR);
        seen[c->record_index]++;
    }
    for (size_t i = 0; i < N; i++) assert_int_equal(seen[i], t[i].c.ts_ms < T2023 + HOUR);
    got_free(&g);

    /* cold files and the inverted index */
    cp_cold_file f;
    int64_t t0 = cp_now_ms();
    file_of(&f, &job, "2023/03/01/10/ns-a/cloud_profiler_1ms.parquet", "created", 1);
    ok(comp, cp_catalog_cold_file_put(comp, &job, &f), "cold_file_put");
    char s[512], want[512];
    q_str(db, s, sizeof s,
          "SELECT concat_ws('|', start_time, end_time, file_type, coalesce(dump_type, '-'), namespace, duration_range,"
          " file_name, status, services, api_version, rows_count, file_size, remote_storage_path, local_file_path,"
          " object_key, min_time, max_time, indexed_params, claim) FROM s3_files");
    snprintf(want, sizeof want,
             "%lld|%lld|calls|-|ns-a|10|cloud_profiler_1ms.parquet|created|[\"svc-1\"]|1|10|12345|s3://bucket/prefix/x|"
             "/tmp/x.parquet|%s|%lld|%lld|[\"user.id\"]|20230301_1000",
             (long long)T2023, (long long)(T2023 + HOUR), f.key, (long long)(T2023 + 1),
             (long long)(T2023 + HOUR - 1));
    assert_string_equal(s, want);
    /* the lease is refreshed with the wall clock */
    assert_true(q_int(db, "SELECT min(claimed_at) FROM inventory WHERE claim = '20230301_1000'") >= t0);
    f.status = "transferring";
    f.rows = 11;
    ok(comp, cp_catalog_cold_file_put(comp, &job, &f), "cold_file_put again");
    assert_int_equal(q_int(db, "SELECT rows_count FROM s3_files WHERE status = 'transferring'"), 11);
    char uid[16];
    for (int i = 0; i < 3000; i++) {
        int n = snprintf(uid, sizeof uid, "user-%d", i % 2000);
        ok(comp, cp_catalog_index_put(comp, "user.id", 7, uid, (size_t)n, f.uuid), "index_put");
    }
    ok(comp, cp_catalog_index_put(comp, "endpoint", 8, "/api/v1", 7, f.uuid), "index_put");
    char big[3000];
    memset(big, 'x', sizeof big);
    ok(comp, cp_catalog_index_put(comp, "endpoint", 8, big, sizeof big, f.uuid), "index_put long");
    ok(comp, cp_catalog_commit(comp), "commit");
    char inv_user[CP_COLD_INV_NAME], inv_ep[CP_COLD_INV_NAME];
    cp_cold_inv_table("user.id", 7, inv_user);
    cp_cold_inv_table("endpoint", 8, inv_ep);
    assert_int_equal(q_int(db, "SELECT count(*) FROM %s", inv_user), 2000);
    assert_int_equal(q_int(db, "SELECT count(*) FROM %s WHERE file_id = '%s'", inv_ep, f.uuid), 2);
    q_str(db, s, sizeof s, "SELECT table_name FROM inverted_indexes WHERE param_name = 'user.id'");
    assert_string_equal(s, inv_user);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inverted_indexes"), 2);

    /* reset: the unfinished file and its index rows go, its key is handed over */
    listed l = {0};
    ok(comp, cp_catalog_compact_reset(comp, &job, on_key, &l), "reset");
    assert_int_equal(l.n, 1);
    assert_string_equal(l.items[0], f.key);
    assert_int_equal(q_int(db, "SELECT count(*) FROM s3_files"), 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM %s", inv_user), 0);
    /* redo: file, index, finish */
    f.status = "transferring";
    ok(comp, cp_catalog_cold_file_put(comp, &job, &f), "cold_file_put");
    cp_cold_file f2;
    file_of(&f2, &job, "2023/03/01/10/ns-b/cloud_profiler_0ms.parquet", "transferring", 0);
    f2.ns = "ns-b";
    ok(comp, cp_catalog_cold_file_put(comp, &job, &f2), "cold_file_put");
    ok(comp, cp_catalog_index_put(comp, "user.id", 7, "user-1", 6, f.uuid), "index_put");
    ok(comp, cp_catalog_commit(comp), "commit");
    /* a completed file survives a reset */
    const char *uuids[] = {f.uuid, f2.uuid};
    int64_t counts_before = q_int(db, "SELECT sum(calls) FROM call_counts");
    ok(comp, cp_catalog_compact_finish(comp, &job, uuids, 2), "finish");
    assert_int_equal(q_int(db, "SELECT count(*) FROM s3_files WHERE status = 'completed'"), 2);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE claim = '20230301_1000' AND status = 'persisted'"),
                     12);
    assert_int_equal(q_int(db, "SELECT count(*) FROM pg_tables WHERE tablename LIKE '%%20230301\\_10%%'"), 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM pg_tables WHERE tablename LIKE '%%20230301\\_11%%'"), 12);
    assert_int_equal(q_int(db, "SELECT sum(calls) FROM call_counts"), counts_before); /* discovery still counts them */
    memset(&l, 0, sizeof l);
    ok(comp, cp_catalog_compact_reset(comp, &job, on_key, &l), "reset after finish");
    assert_int_equal(l.n, 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM %s", inv_user), 1);

    /* a late call into the persisted hour lands in a batch table, compacted by a claim of its own */
    tcall late;
    make_call(&late, 0, T2023 + 7 * MIN_MS, MIN_MS, &rng); /* the 10:05 window */
    late.c.record_index = 777777;
    ok(cat, cp_catalog_call_put(cat, &late.c), "late call_put");
    ok(cat, cp_catalog_commit(cat), "commit");
    assert_int_equal(q_int(db, "SELECT count(*) FROM calls_20230301_1005_1 WHERE record_index = 777777"), 1);
    assert_int_equal(q_int(db, "SELECT rows_count FROM inventory WHERE table_name = 'calls_20230301_1005_1'"
                               " AND batch = 1 AND status = 'ready' AND start_time = %lld AND end_time = %lld",
                           (long long)(T2023 + 5 * MIN_MS), (long long)(T2023 + 10 * MIN_MS)),
                     1);
    assert_int_equal(cp_catalog_call_exists(cat, &late.c), 1);
    ok(cat, cp_catalog_commit(cat), "commit");
    ok(comp, cp_catalog_compact_claim(comp, &o, &job2), "claim the late batch");
    assert_string_equal(job2.claim, "20230301_1005_1");
    assert_int_equal(job2.windows, 1);
    assert_int_equal(job2.rows, 1);
    assert_int_equal(job2.hour_ms, T2023);
    memset(&g, 0, sizeof g);
    ok(comp, cp_catalog_compact_calls(comp, &job2, on_compact, &g), "compact_calls");
    assert_int_equal(g.n, 1);
    assert_call_equal(&late.c, &g.calls[0], 1);
    got_free(&g);
    ok(comp, cp_catalog_compact_finish(comp, &job2, NULL, 0), "finish");
    /* and the next late call of that window goes to batch 2 */
    late.c.record_index = 777778;
    ok(cat, cp_catalog_call_put(cat, &late.c), "late call_put");
    ok(cat, cp_catalog_commit(cat), "commit");
    assert_int_equal(q_int(db, "SELECT count(*) FROM calls_20230301_1005_2"), 1);
    free(seen);
    free(t);
    cp_catalog_close(comp);
    cp_catalog_close(cat);
    PQfinish(db);
    drop_db(url);
}

/* A claim between a writer's puts and its commit: the rows go to the next batch. */
static void test_late_calls(void **state)
{
    (void)state;
    char *url = new_db();
    cp_catalog *cat = open_cat(url), *comp = open_cat(url);
    PGconn *db = raw_connect(url);
    tcall a, b;
    uint64_t rng = 3;
    make_call(&a, 1, T2026, MIN_MS, &rng);
    make_call(&b, 2, T2026, MIN_MS, &rng);
    ok(cat, cp_catalog_call_put(cat, &a.c), "call_put");
    ok(cat, cp_catalog_commit(cat), "commit");
    cp_compact_opts o = opts_at(T2026 + HOUR, "n", 0, T2026);
    cp_compact_job job;
    ok(cat, cp_catalog_call_put(cat, &b.c), "call_put before the claim");
    ok(comp, cp_catalog_compact_claim(comp, &o, &job), "claim");
    assert_string_equal(job.claim, "20260101_1200");
    ok(cat, cp_catalog_commit(cat), "commit after the claim");
    assert_int_equal(q_int(db, "SELECT count(*) FROM calls_20260101_1200"), 1);
    assert_int_equal(q_int(db, "SELECT record_index FROM calls_20260101_1200_1"), 2);
    assert_int_equal(q_int(db, "SELECT count(*) FROM calls_20260101_1200_1 WHERE trace IS NOT NULL"), b.c.trace ? 1 : 0);
    got g = {0};
    ok(comp, cp_catalog_compact_calls(comp, &job, on_compact, &g), "compact_calls");
    assert_int_equal(g.n, 1);
    assert_int_equal(g.calls[0].record_index, 1);
    got_free(&g);
    /* released: the window is written again (the writer keeps its batch: both are ready) */
    ok(comp, cp_catalog_compact_release(comp, &job), "release");
    b.c.record_index = 3;
    ok(cat, cp_catalog_call_put(cat, &b.c), "call_put");
    ok(cat, cp_catalog_commit(cat), "commit");
    assert_int_equal(q_int(db, "SELECT count(*) FROM calls_20260101_1200_1"), 2);
    /* a new writer (no memory of the window) writes the latest batch */
    cp_catalog *fresh = open_cat(url);
    b.c.record_index = 4;
    ok(fresh, cp_catalog_call_put(fresh, &b.c), "call_put");
    ok(fresh, cp_catalog_commit(fresh), "commit");
    assert_int_equal(q_int(db, "SELECT count(*) FROM calls_20260101_1200_1"), 3);
    cp_catalog_close(fresh);
    /* the claim takes both batches at once; its key is the first */
    ok(comp, cp_catalog_compact_claim(comp, &o, &job), "claim");
    assert_string_equal(job.claim, "20260101_1200");
    assert_int_equal(job.windows, 2);
    assert_int_equal(job.rows, 4);
    memset(&g, 0, sizeof g);
    ok(comp, cp_catalog_compact_calls(comp, &job, on_compact, &g), "compact_calls");
    assert_int_equal(g.n, 4);
    got_free(&g);
    cp_catalog_close(comp);
    cp_catalog_close(cat);
    PQfinish(db);
    drop_db(url);
}

static void test_takeover(void **state)
{
    (void)state;
    char *url = new_db();
    cp_catalog *cat = open_cat(url), *a = open_cat(url), *b = open_cat(url);
    PGconn *db = raw_connect(url);
    enum { N = 300 };
    tcall *t = calloc(N, sizeof *t);
    uint64_t rng = 11;
    for (size_t i = 0; i < N; i++) make_call(&t[i], i, T2023 + (int64_t)(i % 2) * HOUR, 20 * MIN_MS, &rng);
    put_calls(cat, t, N, 0);
    cp_compact_job ja, jb;
    cp_compact_opts o = opts_at(T2023 + 3 * HOUR, "a", 10 * MIN_MS, T2026);
    ok(a, cp_catalog_compact_claim(a, &o, &ja), "claim");
    assert_string_equal(ja.claim, "20230301_1000");
    /* b within the lease: the next hour */
    o = opts_at(T2023 + 3 * HOUR, "b", 10 * MIN_MS, T2026 + 5 * MIN_MS);
    ok(b, cp_catalog_compact_claim(b, &o, &jb), "claim");
    assert_string_equal(jb.claim, "20230301_1100");
    assert_int_equal(jb.taken_over, 0);
    ok(b, cp_catalog_compact_release(b, &jb), "release");
    /* b after a's lease: a's claim, same key and windows */
    o = opts_at(T2023 + 3 * HOUR, "b", 10 * MIN_MS, T2026 + 11 * MIN_MS);
    ok(b, cp_catalog_compact_claim(b, &o, &jb), "take over");
    assert_string_equal(jb.claim, ja.claim);
    assert_int_equal(jb.taken_over, 1);
    assert_int_equal(jb.windows, ja.windows);
    assert_int_equal(jb.rows, ja.rows);
    assert_int_equal(jb.from_ms, ja.from_ms);
    assert_int_equal(jb.to_ms, ja.to_ms);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE claim = '20230301_1000' AND claimed_by = 'b'"
                               " AND claimed_at = %lld",
                           (long long)(T2026 + 11 * MIN_MS)),
                     4);
    /* lease 0 takes over any claim at once (`cloudprof compact`) */
    o = opts_at(T2023 + 3 * HOUR, "c", 0, T2026 + 11 * MIN_MS);
    ok(a, cp_catalog_compact_claim(a, &o, &ja), "take over at once");
    assert_string_equal(ja.claim, "20230301_1000");
    assert_int_equal(ja.taken_over, 1);
    ok(a, cp_catalog_compact_finish(a, &ja, NULL, 0), "finish");
    ok(a, cp_catalog_compact_claim(a, &o, &ja), "claim");
    assert_string_equal(ja.claim, "20230301_1100");
    assert_int_equal(ja.taken_over, 0);
    ok(a, cp_catalog_compact_finish(a, &ja, NULL, 0), "finish");
    assert_int_equal(cp_catalog_compact_claim(a, &o, &ja), CP_ENOTFOUND);
    free(t);
    cp_catalog_close(a);
    cp_catalog_close(b);
    cp_catalog_close(cat);
    PQfinish(db);
    drop_db(url);
}

/* ---- concurrency: claimers and a writer ---------------------------------------------------------- */

#define HOURS 4
#define MAX_CLAIMS 400

static int g_claims; /* claims made by the claimers so far (atomic) */

typedef struct claimer {
    const char *url;
    volatile int *writer_done;
    const char *node;
    int st;
    char err[512];
    char claims[MAX_CLAIMS][40];
    int64_t rows_read[MAX_CLAIMS];
    int n;
} claimer;

static int count_call(void *ud, const cp_call *c)
{
    (void)c;
    (*(int64_t *)ud)++;
    return 0;
}

static void *claimer_main(void *arg)
{
    claimer *k = arg;
    cp_catalog *cat;
    k->st = cp_catalog_open_pg(k->url, &cat, k->err, sizeof k->err);
    if (k->st != CP_OK) return NULL;
    cp_compact_opts o = opts_at(T2023 + HOURS * HOUR, k->node, HOUR, T2026);
    for (;;) {
        cp_compact_job job;
        int st = cp_catalog_compact_claim(cat, &o, &job);
        if (st == CP_ENOTFOUND && *k->writer_done) break;
        if (st == CP_ENOTFOUND) {
            usleep(5000);
            continue;
        }
        if (st == CP_AGAIN) continue;
        if (st != CP_OK || k->n == MAX_CLAIMS) {
            k->st = st ? st : CP_ELIMIT;
            snprintf(k->err, sizeof k->err, "claim: %s", cp_catalog_errmsg(cat));
            break;
        }
        int64_t rows = 0;
        st = cp_catalog_compact_calls(cat, &job, count_call, &rows);
        if (st != CP_OK) {
            k->st = st;
            snprintf(k->err, sizeof k->err, "compact_calls: %s", cp_catalog_errmsg(cat));
            break;
        }
        snprintf(k->claims[k->n], sizeof k->claims[k->n], "%s", job.claim);
        k->rows_read[k->n++] = rows;
        __atomic_add_fetch(&g_claims, 1, __ATOMIC_SEQ_CST);
        usleep(2000);
    }
    cp_catalog_close(cat);
    return NULL;
}

typedef struct writer {
    const char *url;
    volatile int done;
    int st;
    char err[512];
    int64_t written;
} writer;

/* Puts 1000 calls all over the hours, committing every 50. The second half waits for the
 * claimers' first claim: calls then land in windows claimed before them (batches) however
 * the threads are scheduled. */
static void *writer_main(void *arg)
{
    writer *w = arg;
    cp_catalog *cat;
    w->st = cp_catalog_open_pg(w->url, &cat, w->err, sizeof w->err);
    if (w->st != CP_OK) return NULL;
    uint64_t rng = 99;
    tcall t;
    for (int64_t i = 0; i < 1000; i++) {
        if (i == 500) {
            int64_t deadline = test_now_ms() + TEST_WAIT_MS;
            while (!__atomic_load_n(&g_claims, __ATOMIC_SEQ_CST) && test_now_ms() < deadline) usleep(2000);
            if (!__atomic_load_n(&g_claims, __ATOMIC_SEQ_CST)) {
                w->st = CP_EIO;
                snprintf(w->err, sizeof w->err, "no claim within %d s", TEST_WAIT_MS / 1000);
                break;
            }
        }
        make_call(&t, (size_t)(100000 + i), T2023, HOURS * HOUR, &rng);
        int st = cp_catalog_call_put(cat, &t.c);
        if (st == CP_OK && i % 50 == 49) st = cp_catalog_commit(cat);
        if (st != CP_OK) {
            w->st = st;
            snprintf(w->err, sizeof w->err, "%s", cp_catalog_errmsg(cat));
            break;
        }
        w->written++;
    }
    if (w->st == CP_OK && cp_catalog_commit(cat) != CP_OK) {
        w->st = CP_EIO;
        snprintf(w->err, sizeof w->err, "%s", cp_catalog_errmsg(cat));
    }
    cp_catalog_close(cat);
    w->done = 1;
    return NULL;
}

static void test_concurrent_claims(void **state)
{
    (void)state;
    char *url = new_db();
    cp_catalog *cat = open_cat(url);
    PGconn *db = raw_connect(url);
    enum { N = 3000 };
    tcall *t = calloc(N, sizeof *t);
    uint64_t rng = 5;
    for (size_t i = 0; i < N; i++) make_call(&t[i], i, T2023, HOURS * HOUR, &rng);
    put_calls(cat, t, N, 300);
    writer w = {.url = url};
    static claimer k[3];
    memset(k, 0, sizeof k);
    g_claims = 0;
    for (int i = 0; i < 3; i++) k[i].url = url, k[i].writer_done = &w.done;
    k[0].node = "a", k[1].node = "b", k[2].node = "c";
    pthread_t wt, kt[3];
    pthread_create(&wt, NULL, writer_main, &w);
    for (int i = 0; i < 3; i++) pthread_create(&kt[i], NULL, claimer_main, &k[i]);
    pthread_join(wt, NULL);
    for (int i = 0; i < 3; i++) pthread_join(kt[i], NULL);
    if (w.st != CP_OK) fail_msg("writer: %s", w.err);
    for (int i = 0; i < 3; i++)
        if (k[i].st != CP_OK) fail_msg("claimer %s: %s", k[i].node, k[i].err);
    /* no claim twice; every claimed window's table holds exactly what was read at the claim
     * (nothing landed after it); every row is in a claimed window or a later batch */
    int nclaims = 0;
    for (int i = 0; i < 3; i++) {
        for (int c = 0; c < k[i].n; c++) {
            for (int j = 0; j < 3; j++)
                for (int d = 0; d < k[j].n; d++)
                    if ((i != j || c != d) && !strcmp(k[i].claims[c], k[j].claims[d]))
                        fail_msg("claim %s taken twice", k[i].claims[c]);
            assert_int_equal(q_int(db, "SELECT sum(rows_count) FROM inventory WHERE claim = '%s'"
                                       " AND table_type = 'calls'",
                                   k[i].claims[c]),
                             k[i].rows_read[c]);
            nclaims++;
        }
    }
    assert_true(nclaims >= HOURS);
    /* every table's rows_count is right, and nothing is lost */
    PGresult *r = q(db, "SELECT table_name, rows_count FROM inventory ORDER BY 1");
    int64_t total = 0;
    for (int i = 0; i < PQntuples(r); i++) {
        int64_t rc = strtoll(PQgetvalue(r, i, 1), NULL, 10);
        assert_int_equal(q_int(db, "SELECT count(*) FROM %s", PQgetvalue(r, i, 0)), rc);
        if (!strncmp(PQgetvalue(r, i, 0), "calls_", 6)) total += rc;
    }
    PQclear(r);
    assert_int_equal(total, N + w.written);
    assert_int_equal(q_int(db, "SELECT sum(calls) FROM call_counts"), N + w.written);
    /* the windows written after their claim have batches; in the end every one is claimed */
    assert_true(q_int(db, "SELECT count(*) FROM inventory WHERE batch > 0") > 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE status <> 'persisting'"), 0);
    free(t);
    cp_catalog_close(cat);
    PQfinish(db);
    drop_db(url);
}

/* ---- retention ----------------------------------------------------------------------------------- */

typedef struct pairs {
    char uuid[8][128], key[8][128];
    int n;
} pairs;

static int on_pair(void *ud, const char *uuid, const char *key)
{
    pairs *p = ud;
    snprintf(p->uuid[p->n], 128, "%s", uuid);
    snprintf(p->key[p->n++], 128, "%s", key);
    return 0;
}

static void test_retention(void **state)
{
    (void)state;
    char *url = new_db();
    cp_catalog *cat = open_cat(url);
    PGconn *db = raw_connect(url);
    enum { N = 200 };
    tcall *t = calloc(N, sizeof *t);
    uint64_t rng = 13;
    for (size_t i = 0; i < N; i++) make_call(&t[i], i, T2023 + (int64_t)(i % 3) * HOUR, HOUR, &rng);
    put_calls(cat, t, N, 0);
    cp_compact_opts o = opts_at(T2023 + 3 * HOUR, "n", HOUR, T2026);
    const char *keys[3] = {"2023/03/01/10/ns-a/cloud_profiler_0ms.parquet",
                           "2023/03/01/11/ns-a/cloud_profiler_0ms.parquet",
                           "2023/03/01/12/ns-a/cloud_profiler_0ms.parquet"};
    for (int h = 0; h < 3; h++) {
        cp_compact_job job;
        ok(cat, cp_catalog_compact_claim(cat, &o, &job), "claim");
        cp_cold_file f;
        file_of(&f, &job, keys[h], "transferring", 0);
        ok(cat, cp_catalog_cold_file_put(cat, &job, &f), "cold_file_put");
        ok(cat, cp_catalog_index_put(cat, "user.id", 7, "u", 1, f.uuid), "index_put");
        ok(cat, cp_catalog_commit(cat), "commit");
        ok(cat, cp_catalog_compact_finish(cat, &job, &f.uuid, 1), "finish");
    }
    char inv[CP_COLD_INV_NAME];
    cp_cold_inv_table("user.id", 7, inv);
    assert_int_equal(q_int(db, "SELECT count(*) FROM %s", inv), 3);
    int64_t marked = -1;
    int64_t before = T2023 + 2 * HOUR; /* the files of 10:00 and 11:00 */
    ok(cat, cp_catalog_retention_mark(cat, before, &marked), "mark");
    assert_int_equal(marked, 2);
    assert_int_equal(q_int(db, "SELECT count(*) FROM s3_files WHERE status = 'to_delete'"), 2);
    assert_int_equal(q_int(db, "SELECT count(*) FROM %s", inv), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM call_counts WHERE window_end <= %lld", (long long)before), 0);
    assert_true(q_int(db, "SELECT count(*) FROM call_counts") > 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE end_time <= %lld", (long long)before), 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE status = 'persisted'"), 12);
    ok(cat, cp_catalog_retention_mark(cat, before, &marked), "mark again");
    assert_int_equal(marked, 0);
    pairs p = {0};
    ok(cat, cp_catalog_retention_list(cat, 1, on_pair, &p), "list");
    assert_int_equal(p.n, 1);
    assert_string_equal(p.key[0], keys[0]);
    memset(&p, 0, sizeof p);
    ok(cat, cp_catalog_retention_list(cat, 10, on_pair, &p), "list");
    assert_int_equal(p.n, 2);
    assert_string_equal(p.uuid[1], keys[1]);
    for (int i = 0; i < p.n; i++) ok(cat, cp_catalog_retention_forget(cat, p.uuid[i]), "forget");
    ok(cat, cp_catalog_retention_forget(cat, keys[2]), "forget a completed file: no-op");
    assert_int_equal(q_int(db, "SELECT count(*) FROM s3_files"), 1);
    memset(&p, 0, sizeof p);
    ok(cat, cp_catalog_retention_list(cat, 10, on_pair, &p), "list");
    assert_int_equal(p.n, 0);
    free(t);
    cp_catalog_close(cat);
    PQfinish(db);
    drop_db(url);
}

/* ---- errors ------------------------------------------------------------------------------------ */

static void test_errors(void **state)
{
    (void)state;
    char *url = new_db();
    cp_catalog *cat = open_cat(url);
    PGconn *db = raw_connect(url);
    const cp_catalog_pod *p = &pods[0];
    ok(cat, cp_catalog_pod_register(cat, p, T2023), "register");
    ok(cat, cp_catalog_dict_put(cat, p, 1, "word", 4), "dict_put");
    /* the server refuses a write: the cycle is rolled back, the commit says so */
    PQclear(q(db, "ALTER TABLE streams RENAME TO streams_away"));
    cp_catalog_stream st = {p, "calls", 1, "h", 1, 1, T2023, 0, 0, "open", NULL, "/x"};
    assert_int_equal(cp_catalog_stream_open(cat, &st), CP_EIO);
    assert_non_null(strstr(cp_catalog_errmsg(cat), "streams"));
    assert_int_equal(cp_catalog_commit(cat), CP_EIO);
    assert_non_null(strstr(cp_catalog_errmsg(cat), "rolled back"));
    assert_int_equal(q_int(db, "SELECT count(*) FROM pods"), 0);
    assert_int_equal(q_int(db, "SELECT count(*) FROM dictionary"), 0);
    /* and the next cycle works */
    PQclear(q(db, "ALTER TABLE streams_away RENAME TO streams"));
    ok(cat, cp_catalog_pod_register(cat, p, T2023), "register");
    ok(cat, cp_catalog_stream_open(cat, &st), "stream_open");
    ok(cat, cp_catalog_commit(cat), "commit");
    assert_int_equal(q_int(db, "SELECT count(*) FROM streams"), 1);
    /* a failure at commit (a window table gone): error, nothing half written */
    tcall a;
    uint64_t rng = 1;
    make_call(&a, 1, T2026, MIN_MS, &rng);
    ok(cat, cp_catalog_call_put(cat, &a.c), "call_put");
    ok(cat, cp_catalog_commit(cat), "commit");
    /* the second row's COPY fails (a constraint the writer does not know) */
    PQclear(q(db, "ALTER TABLE calls_20260101_1200 ADD CONSTRAINT test_no_ri2 CHECK (record_index <> 2)"));
    a.c.record_index = 2;
    ok(cat, cp_catalog_pod_touch(cat, p, T2023 + 5), "touch");
    ok(cat, cp_catalog_call_put(cat, &a.c), "call_put");
    a.c.trace = (const uint8_t *)"x", a.c.trace_len = 1, a.c.trace_reason = NULL;
    ok(cat, cp_catalog_call_put(cat, &a.c), "call_put");
    assert_int_equal(cp_catalog_commit(cat), CP_EIO);
    assert_non_null(strstr(cp_catalog_errmsg(cat), "calls_20260101_1200"));
    assert_int_equal(q_int(db, "SELECT count(*) FROM calls_20260101_1200"), 1);
    assert_int_equal(q_int(db, "SELECT rows_count FROM inventory WHERE table_name = 'calls_20260101_1200'"), 1);
    assert_int_equal(q_int(db, "SELECT last_active FROM pods"), T2023);
    ok(cat, cp_catalog_commit(cat), "commit: nothing left");
    cp_catalog_close(cat);
    PQfinish(db);
    drop_db(url);
}

int main(void)
{
    if (!server_url() || !*server_url()) {
        printf("skipped: CP_TEST_PG_URL not set (scripts/pg-test.sh start DIR PORT prints it)\n");
        return 77;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_migrations),   cmocka_unit_test(test_concurrent_open),
        cmocka_unit_test(test_metadata),     cmocka_unit_test(test_calls),
        cmocka_unit_test(test_copy_buffer_bound),
        cmocka_unit_test(test_windows_prepare), cmocka_unit_test(test_compaction),
        cmocka_unit_test(test_late_calls),   cmocka_unit_test(test_takeover),
        cmocka_unit_test(test_concurrent_claims), cmocka_unit_test(test_retention),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
