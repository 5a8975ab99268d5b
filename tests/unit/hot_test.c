/* hot_test.c -- the hot tier: the writer (call_put, set_windows, windows_prepare,
 * migrations) and the reader (search, get, pods, words, bounds), on both catalogs
 * (CP_TEST_BOTH_PAIRS: SQLite, and PostgreSQL with CP_TEST_PAIR=pg-s3; the tests that
 * look at SQLite's own files skip on PostgreSQL).
 *
 * A data set of calls spread over windows of 2023 (created on the spot by call_put) and
 * 2026 (prepared ahead) is written once; a third of one 2026 window is then moved into
 * a late batch table (calls_<suffix>_1, as the writer makes for calls that arrive once
 * a compactor claimed the window, which is left persisting). Every search is checked
 * against the same filter and sort done here in plain C over the inserted calls. */
#include "testutil.h"

#include "pair_util.h"
#include "store/cp_catalog.h"
#include "store/cp_hot.h"
#include "store/hot/hot_internal.h"
#include "store/catalog/pg_internal.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MIN_MS 60000LL
#define T2023 1677664800000LL /* 2023-03-01 10:00:00 UTC */
#define T2026 1767268800000LL /* 2026-01-01 12:00:00 UTC */
#define NCALLS 2400
#define NPODS 5

/* ---- the data set ------------------------------------------------------------------------ */

typedef struct tpod {
    cp_catalog_pod p;
} tpod;

static const tpod pods[NPODS] = {
    {{"ns-a", "svc-1", "pod-1", "ns-a/pod-1", T2026 - 7200000}},
    {{"ns-a", "svc-1", "pod-1", "ns-a/pod-1", T2026 - 3600000}}, /* a second restart */
    {{"ns-a", "svc-1", "pod-2", "ns-a/pod-2", T2026 - 3600000}},
    {{"ns-b", "svc-2", "pod-1", "ns-b/pod-1", T2026 - 3600000}}, /* same pod name, other namespace */
    {{"ns-b", "svc-2", "idle", "ns-b/idle", T2026 + 3600000}},   /* no calls */
};

static const char *const methods[] = {
    "com.acme.OrderService.place(Ljava/lang/String;)V", "com.acme.orderservice.Cancel()V",
    "org.Foo.bar()I", "#17", "\xc3\x9cnicode.m\xc3\xa9thod()V", "com.acme.OrderService.placeAll()V",
};
static const char *const threads[] = {"http-nio-8080-exec-1", "http-nio-8080-exec-2", "main", "pool-3-thread-7"};

typedef struct tcall {
    cp_call c;
    char params[128];
    uint8_t trace[400];
} tcall;

typedef struct fixture {
    char *dir;
    char db[512];
    cp_catalog *cat;
    cp_reader *rd;
    tcall *calls;
    size_t n;
} fixture;

/* One deterministic call; record_index is its position in the array (a unique id). */
static void make_call(tcall *t, size_t i, uint64_t *rng)
{
    cp_call *c = &t->c;
    memset(t, 0, sizeof *t);
    const cp_catalog_pod *p = &pods[test_rand(rng) % (NPODS - 1)].p;
    int64_t base = i % 2 ? T2023 : T2026;
    int64_t span = i % 2 ? 20 * MIN_MS : 30 * MIN_MS; /* 4 windows in 2023, 6 in 2026 */
    c->ts_ms = base + (int64_t)(test_rand(rng) % (uint64_t)(span / 500)) * 500; /* many equal times */
    c->duration_ms = test_rand(rng) % 4 == 0 ? (int32_t)(test_rand(rng) % 3) : (int32_t)(test_rand(rng) % 5000);
    c->cpu_time = (int64_t)(test_rand(rng) % 100000) - 50;
    c->wait_time = (int64_t)(test_rand(rng) % 10);
    c->memory_used = (int64_t)(test_rand(rng) % 1000000) << 20;
    c->non_blocking = 0;
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
    int n = snprintf(t->params, sizeof t->params, "{%s\"user\":[\"user-%u\"]}", c->error ? "\"call.red\":[\"1\"]," : "",
                     (unsigned)(test_rand(rng) % 20));
    c->params_json = t->params, c->params_json_len = (size_t)n;
    c->trace_file_index = 1 + (int32_t)(test_rand(rng) % 3);
    c->buffer_offset = (int32_t)(test_rand(rng) % 100000);
    c->record_index = (int32_t)i;
    if (test_rand(rng) % 3 == 0) {
        c->trace_reason = CP_TRACE_NOT_FOUND;
    } else {
        size_t len = 20 + test_rand(rng) % 300;
        for (size_t k = 0; k < len; k++) t->trace[k] = (uint8_t)(test_rand(rng) >> 7);
        c->trace = t->trace, c->trace_len = len;
        c->sql = i % 3 == 1; /* only a call with a trace can have run SQL */
    }
}

static void open_catalog(fixture *fx)
{
    char err[256];
    int st = cp_catalog_open(fx->db, &fx->cat, err, sizeof err);
    if (st != CP_OK) fail_msg("open catalog: %s", err);
}

static void open_reader(fixture *fx)
{
    char err[256];
    int st = cp_reader_open(fx->db, &fx->rd, err, sizeof err);
    if (st != CP_OK) fail_msg("open reader: %s", err);
}

static void fixture_dir(fixture *fx, const char *tag)
{
    fx->dir = make_temp_dir(tag);
    char *spec = test_catalog_spec(fx->dir); /* a SQLite path, or a new PostgreSQL database */
    snprintf(fx->db, sizeof fx->db, "%s", spec);
    free(spec);
}

/* Runs SQL on the fixture's catalog with a connection of its own. */
static void raw_sql(const fixture *fx, const char *sql)
{
    if (!test_pair_pg()) {
        sqlite3 *db;
        assert_int_equal(sqlite3_open_v2(fx->db, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        char *msg = NULL;
        if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s: %s", sql, msg);
        sqlite3_close(db);
        return;
    }
    PGconn *c = PQconnectdb(fx->db);
    if (PQstatus(c) != CONNECTION_OK) fail_msg("connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(c));
    PQclear(r);
    PQfinish(c);
}

/* Moves the calls of window `suffix` with id % 3 = 0 (and their traces) into its late
 * batch 1, made with the writer's DDL; the window becomes persisting, the batch ready. */
static void make_late_batch(const fixture *fx, const char *suffix)
{
    char batch[CP_HOT_SUFFIX_LEN];
    snprintf(batch, sizeof batch, "%s_1", suffix);
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(test_pair_pg() ? cp_pg_window_ddl(&b, batch) : cp_hot_window_ddl(&b, batch), CP_OK);
    assert_int_equal(
        cp_buf_printf(&b,
                      ";INSERT INTO calls_%s SELECT * FROM calls_%s WHERE id %% 3 = 0;"
                      "DELETE FROM calls_%s WHERE id %% 3 = 0;"
                      "INSERT INTO inventory (uuid, start_time, end_time, status, table_type, table_name,"
                      " created_time, rows_count, table_size, total_table_size, batch)"
                      " SELECT 'late-' || table_name, start_time, end_time, 'ready', table_type, table_name || '_1',"
                      " created_time, 0, 0, 0, 1 FROM inventory WHERE table_name = 'calls_%s';"
                      "UPDATE inventory SET rows_count = (SELECT count(*) FROM calls_%s) WHERE table_name = 'calls_%s';"
                      "UPDATE inventory SET rows_count = (SELECT count(*) FROM calls_%s) WHERE table_name = 'calls_%s';"
                      "UPDATE inventory SET status = 'persisting' WHERE table_name = 'calls_%s'",
                      batch, suffix, suffix, suffix, batch, batch, suffix, suffix, suffix),
        CP_OK);
    assert_int_equal(cp_buf_putc(&b, 0), CP_OK);
    raw_sql(fx, (const char *)b.data);
    cp_buf_free(&b);
}

static void put_ok(cp_catalog *cat, const cp_call *c)
{
    int st = cp_catalog_call_put(cat, c);
    if (st != CP_OK) fail_msg("call_put: %s", cp_catalog_errmsg(cat));
}

static int group_setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    fixture_dir(fx, "hot");
    open_catalog(fx);
    assert_int_equal(cp_catalog_set_windows(fx->cat, 5 * MIN_MS, 3 * 3600000LL), CP_OK);
    for (size_t i = 0; i < NPODS; i++) assert_int_equal(cp_catalog_pod_register(fx->cat, &pods[i].p, T2026 + 7200000), CP_OK);
    /* 2026: prepared ahead; 2023: created by call_put */
    assert_int_equal(cp_catalog_windows_prepare(fx->cat, T2026), CP_OK);
    assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    fx->n = NCALLS;
    fx->calls = calloc(fx->n, sizeof *fx->calls);
    uint64_t rng = 42;
    for (size_t i = 0; i < fx->n; i++) {
        make_call(&fx->calls[i], i, &rng);
        put_ok(fx->cat, &fx->calls[i].c);
        if (i % 500 == 499) assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    }
    assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    make_late_batch(fx, "20260101_1210");
    open_reader(fx);
    *state = fx;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *fx = *state;
    cp_reader_close(fx->rd);
    cp_catalog_close(fx->cat);
    remove_tree(fx->dir);
    free(fx->dir);
    free(fx->calls);
    free(fx);
    return 0;
}

/* ---- the reference: filter and order in plain C ------------------------------------------------ */

static int64_t num_of(const cp_call *c, cp_sort_col col)
{
    assert_false(cp_sort_is_text(col));
    return cp_call_sort_num(c, col);
}

static const char *text_of(const cp_call *c, cp_sort_col col, size_t *len)
{
    const char *t = cp_call_sort_text(c, col, len);
    assert_non_null(t);
    return t;
}

static int cmp64(int64_t a, int64_t b) { return (a > b) - (a < b); }

typedef struct order {
    cp_sort_col col;
    int desc;
} order;

/* cp_sort_key's order: column in its direction, then ts desc, then the ref desc (pod_hash
 * as the signed number SQLite stores). */
static int call_cmp(const void *pa, const void *pb, void *ctx)
{
    const cp_call *a = &(*(tcall *const *)pa)->c, *b = &(*(tcall *const *)pb)->c;
    const order *o = ctx;
    int c;
    if (cp_sort_is_text(o->col)) {
        size_t la, lb;
        const char *ta = text_of(a, o->col, &la), *tb = text_of(b, o->col, &lb);
        c = memcmp(ta, tb, la < lb ? la : lb);
        c = c ? (c > 0) - (c < 0) : cmp64((int64_t)la, (int64_t)lb);
    } else {
        c = cmp64(num_of(a, o->col), num_of(b, o->col));
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

/* The match callback used by the tests: params contain the text in ud (and counts). */
typedef struct matcher {
    const char *needle;
    size_t calls;
} matcher;

static int match_params(void *ud, const cp_call_view *v)
{
    matcher *m = ud;
    m->calls++;
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

/* ---- collecting search results ---------------------------------------------------------------- */

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
    assert_int_equal(got->params_json_len, want->params_json_len);
    assert_memory_equal(got->params_json, want->params_json, want->params_json_len);
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

static void key_of(const cp_call *c, cp_sort_col col, int desc, cp_sort_key *k)
{
    memset(k, 0, sizeof *k);
    k->col = col;
    k->desc = desc;
    if (cp_sort_is_text(col)) {
        size_t len;
        const char *t = text_of(c, col, &len);
        k->text_len = len < sizeof k->text ? len : sizeof k->text - 1;
        memcpy(k->text, t, k->text_len);
    } else {
        k->num = num_of(c, col);
    }
    cp_call_ref_of(c, &k->ref);
}

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
    key_of(c, g->col, g->desc, &g->last);
    return 0;
}

static void search_ok(const fixture *fx, const cp_call_filter *f, got *g, cp_search_stats *st)
{
    g->fx = fx;
    g->col = f->sort;
    g->desc = f->desc;
    int rc = cp_reader_search(fx->rd, f, on_row, g, st);
    if (rc != CP_OK) fail_msg("search: %d %s", rc, cp_reader_errmsg(fx->rd));
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

/* The first f->limit rows equal the reference's; more is right. Returns the total the
 * reference selects. */
static size_t check_page(const fixture *fx, const cp_call_filter *f)
{
    tcall **want;
    size_t n = expected(fx, f, &want);
    got g = {0};
    cp_search_stats st;
    search_ok(fx, f, &g, &st);
    size_t page = n < f->limit ? n : f->limit;
    assert_int_equal(g.n, page);
    for (size_t i = 0; i < page; i++) assert_int_equal(g.idx[i], (size_t)want[i]->c.record_index);
    assert_int_equal(st.more, n > f->limit);
    assert_int_equal(st.partial, 0);
    free(g.idx);
    free(want);
    return n;
}

/* Pages through everything f selects with the keyset: every row exactly once, in order. */
static void check_paging(const fixture *fx, cp_call_filter f, size_t page)
{
    tcall **want;
    size_t n = expected(fx, &f, &want);
    got all = {0};
    f.limit = page;
    cp_sort_key key;
    for (size_t pages = 0;; pages++) {
        assert_true(pages <= n / page + 1);
        got g = {0};
        cp_search_stats st;
        search_ok(fx, &f, &g, &st);
        for (size_t i = 0; i < g.n; i++) {
            assert_true(all.n < n);
            assert_int_equal(g.idx[i], (size_t)want[all.n]->c.record_index);
            all.n++;
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
    assert_int_equal(all.n, n);
    free(want);
}

/* ---- tests: search ---------------------------------------------------------------------------- */

static void test_search_filters(void **state)
{
    fixture *fx = *state;
    cp_call_filter f = all_calls(NCALLS + 10);
    assert_int_equal(check_page(fx, &f), NCALLS);

    /* a range cutting windows at both ends (and one empty range) */
    f.from_ms = T2023 + 7 * MIN_MS + 1234;
    f.to_ms = T2023 + 16 * MIN_MS + 500;
    size_t n = check_page(fx, &f);
    assert_true(n > 100 && n < NCALLS / 2);
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
    n = check_page(fx, &f);
    assert_true(n > 0);
    f.method_substr = "\xc3\x9cnicode";
    assert_true(check_page(fx, &f) > 0);
    f.method_substr = "%"; /* not a LIKE pattern */
    assert_int_equal(check_page(fx, &f), 0);
    f.method_substr = "\xc3"; /* not UTF-8 by itself: bytes of "\xc3\x9c" still match */
    assert_true(check_page(fx, &f) > 0);
    f.method_substr = NULL;
    f.ns = "ns-a\xff"; /* a name that is not UTF-8 matches nothing */
    assert_int_equal(check_page(fx, &f), 0);
    f.ns = NULL;

    matcher m = {"user-7\"", 0};
    f.match = match_params;
    f.match_ud = &m;
    n = check_page(fx, &f);
    assert_true(n > 0 && m.calls >= n);
    /* everything at once */
    f.ns = "ns-a";
    f.min_duration_ms = 10;
    f.from_ms = T2026 + 3 * MIN_MS;
    f.to_ms = T2026 + 27 * MIN_MS;
    f.method_substr = "order";
    check_page(fx, &f);
    f.sort = CP_SORT_DURATION;
    check_page(fx, &f);
}

/* Every sort column both ways: the first page, and paging through a filtered set. */
static void test_sort_columns(void **state)
{
    fixture *fx = *state;
    for (int col = 0; col < CP_SORT_COUNT; col++) {
        for (int desc = 0; desc < 2; desc++) {
            cp_call_filter f = all_calls(50);
            f.sort = (cp_sort_col)col;
            f.desc = desc;
            check_page(fx, &f);
            f.from_ms = T2023 + 3 * MIN_MS + 17; /* cuts windows */
            f.to_ms = T2026 + 22 * MIN_MS;
            f.min_duration_ms = 3; /* drops the many 0..2 ms ties */
            check_paging(fx, f, 97);
        }
    }
}

/* Paging through everything with ties everywhere, in the indexed orders and a text one. */
static void test_keyset_all_rows(void **state)
{
    fixture *fx = *state;
    static const cp_sort_col cols[] = {CP_SORT_TS, CP_SORT_DURATION, CP_SORT_METHOD, CP_SORT_ERROR};
    for (size_t i = 0; i < CP_ARRAY_LEN(cols); i++) {
        for (int desc = 0; desc < 2; desc++) {
            cp_call_filter f = all_calls(0);
            f.sort = cols[i];
            f.desc = desc;
            check_paging(fx, f, 113);
            if (cols[i] == CP_SORT_TS || cols[i] == CP_SORT_DURATION) check_paging(fx, f, 1);
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
    f.limit = 0;
    got g = {0};
    cp_search_stats st;
    search_ok(fx, &f, &g, &st);
    assert_int_equal(g.n, 0);
    assert_int_equal(st.more, 1);
    f.limit = 1000000; /* over the reader's bound */
    assert_int_equal(cp_reader_search(fx->rd, &f, on_row, &g, &st), CP_EINVAL);
    /* a keyset of another sort order is refused */
    cp_sort_key k;
    key_of(&fx->calls[0].c, CP_SORT_DURATION, 1, &k);
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
    cp_call_filter f = all_calls(100);
    size_t n = 0;
    assert_int_equal(cp_reader_search(fx->rd, &f, stop_at_3, &n, NULL), 77);
    assert_int_equal(n, 3);
    /* the reader is usable afterwards */
    check_page(fx, &f);
}

static void test_max_scan(void **state)
{
    fixture *fx = *state;
    matcher m = {"user", 0};
    cp_call_filter f = all_calls(NCALLS);
    f.sort = CP_SORT_CPU; /* no index: every row of every window goes through cp_match */
    f.match = match_params;
    f.match_ud = &m;
    f.max_scan = 300;
    got g = {0};
    cp_search_stats st;
    search_ok(fx, &f, &g, &st);
    assert_int_equal(st.partial, 1);
    assert_int_equal(st.more, 1);
    assert_true(st.scanned <= 300);
    assert_true(m.calls <= 300);
    assert_true(g.n < NCALLS);
    /* what came back is in order and matches */
    order o = {f.sort, f.desc};
    for (size_t i = 1; i < g.n; i++) {
        tcall *a = &fx->calls[g.idx[i - 1]], *b = &fx->calls[g.idx[i]];
        assert_true(call_cmp(&a, &b, &o) < 0);
    }
    free(g.idx);
    /* with a budget that is large enough nothing is partial; stats count what went
     * through cp_match */
    f.max_scan = 100000;
    f.sort = CP_SORT_TS;
    f.pod = "pod-2";
    f.limit = 5;
    m.calls = 0;
    g = (got){0};
    search_ok(fx, &f, &g, &st);
    assert_int_equal(st.partial, 0);
    assert_int_equal(g.n, 5);
    assert_int_equal(st.scanned, m.calls);
    assert_true(st.windows >= 1 && st.windows < 10);
    free(g.idx);
}

/* A time-sorted first page opens only the windows it needs. */
static void test_lazy_windows(void **state)
{
    fixture *fx = *state;
    cp_call_filter f = all_calls(10);
    got g = {0};
    cp_search_stats st;
    search_ok(fx, &f, &g, &st);
    assert_int_equal(g.n, 10);
    assert_true(st.windows <= 2);
    free(g.idx);
    f.sort = CP_SORT_DURATION;
    g = (got){0};
    search_ok(fx, &f, &g, &st);
    assert_int_equal(st.windows, 11); /* 4 + 6 windows with rows, and a late batch */
    free(g.idx);
}

/* ---- tests: get, pods, bounds ------------------------------------------------------------------ */

static int on_get(void *ud, const cp_call *c)
{
    got *g = ud;
    return on_row(g, c);
}

static void test_get(void **state)
{
    fixture *fx = *state;
    for (size_t i = 0; i < fx->n; i += 7) {
        const cp_call *c = &fx->calls[i].c;
        cp_call_ref ref;
        cp_call_ref_of(c, &ref);
        for (int wt = 0; wt < 2; wt++) {
            got g = {.fx = fx, .with_trace = wt};
            int rc = cp_reader_get(fx->rd, &ref, wt, on_get, &g);
            if (rc != CP_OK) fail_msg("get: %s", cp_reader_errmsg(fx->rd));
            assert_int_equal(g.n, 1);
            assert_int_equal(g.idx[0], i);
            free(g.idx);
        }
    }
    cp_call_ref ref;
    cp_call_ref_of(&fx->calls[0].c, &ref);
    got g = {.fx = fx};
    ref.pod_hash ^= 1;
    assert_int_equal(cp_reader_get(fx->rd, &ref, 1, on_get, &g), CP_ENOTFOUND);
    ref.pod_hash ^= 1;
    ref.ts_ms += 3600000000LL; /* no window there */
    assert_int_equal(cp_reader_get(fx->rd, &ref, 1, on_get, &g), CP_ENOTFOUND);
    assert_int_equal(g.n, 0);
}

typedef struct podrows {
    char name[16][64];
    int64_t restart[16], calls[16], first[16], last[16];
    size_t n;
} podrows;

static int on_pod(void *ud, const cp_pod_row *p)
{
    podrows *r = ud;
    assert_true(r->n < 16);
    snprintf(r->name[r->n], sizeof r->name[0], "%s/%s/%s", p->ns, p->service, p->pod);
    r->restart[r->n] = p->restart_ms;
    r->calls[r->n] = p->calls;
    r->first[r->n] = p->first_ms;
    r->last[r->n] = p->last_ms;
    r->n++;
    return 0;
}

/* Calls of a pod restart in the windows overlapping [from, to) (window granularity). */
static int64_t pod_calls(const fixture *fx, const cp_catalog_pod *p, int64_t from, int64_t to)
{
    int64_t n = 0;
    for (size_t i = 0; i < fx->n; i++) {
        const cp_call *c = &fx->calls[i].c;
        int64_t ws = c->ts_ms - c->ts_ms % (5 * MIN_MS);
        if (strcmp(c->ns, p->ns) || strcmp(c->pod, p->pod) || c->restart_ms != p->restart_ms) continue;
        if (ws < to && ws + 5 * MIN_MS > from) n++;
    }
    return n;
}

static void test_pods(void **state)
{
    fixture *fx = *state;
    /* 2023: no restart was active then (they registered in 2026), found through their calls;
     * a range inside one window counts the whole window */
    int64_t ranges[][2] = {{T2023, T2023 + 20 * MIN_MS}, {T2023 + 6 * MIN_MS, T2023 + 7 * MIN_MS}};
    for (size_t k = 0; k < CP_ARRAY_LEN(ranges); k++) {
        podrows r = {0};
        assert_int_equal(cp_reader_pods(fx->rd, ranges[k][0], ranges[k][1], on_pod, &r), CP_OK);
        assert_int_equal(r.n, 4);
        /* ordered by namespace, service, pod, restart */
        assert_string_equal(r.name[0], "ns-a/svc-1/pod-1");
        assert_string_equal(r.name[1], "ns-a/svc-1/pod-1");
        assert_true(r.restart[0] < r.restart[1]);
        assert_string_equal(r.name[2], "ns-a/svc-1/pod-2");
        assert_string_equal(r.name[3], "ns-b/svc-2/pod-1");
        const int map[4] = {0, 1, 2, 3};
        for (size_t i = 0; i < 4; i++) {
            assert_int_equal(r.calls[i], pod_calls(fx, &pods[map[i]].p, ranges[k][0], ranges[k][1]));
            assert_true(r.calls[i] > 0);
            assert_int_equal(r.first[i], pods[map[i]].p.restart_ms);
        }
    }
    /* 2026 + 1 h: every restart is active (registered, last active at T2026 + 2 h), the idle
     * pod has no calls, none falls in that range */
    podrows r = {0};
    assert_int_equal(cp_reader_pods(fx->rd, T2026 + 3600000, T2026 + 3700000, on_pod, &r), CP_OK);
    assert_int_equal(r.n, 5);
    assert_string_equal(r.name[3], "ns-b/svc-2/idle");
    for (size_t i = 0; i < r.n; i++) assert_int_equal(r.calls[i], 0);
    assert_int_equal(r.last[0], T2026 + 7200000);
    /* long before anything */
    r = (podrows){0};
    assert_int_equal(cp_reader_pods(fx->rd, 1000, 2000, on_pod, &r), CP_OK);
    assert_int_equal(r.n, 0);
}

static void test_bounds(void **state)
{
    fixture *fx = *state;
    int64_t lo = INT64_MAX, hi = 0, a, b;
    for (size_t i = 0; i < fx->n; i++) {
        if (fx->calls[i].c.ts_ms < lo) lo = fx->calls[i].c.ts_ms;
        if (fx->calls[i].c.ts_ms > hi) hi = fx->calls[i].c.ts_ms;
    }
    assert_int_equal(cp_reader_bounds(fx->rd, &a, &b), CP_OK);
    assert_int_equal(a, lo);
    assert_int_equal(b, hi);
}

typedef struct wordrows {
    int32_t id[8];
    char text[8][32];
    size_t n;
} wordrows;

static int on_word(void *ud, int32_t id, const char *text, size_t len)
{
    wordrows *w = ud;
    assert_true(w->n < 8 && len < 32);
    w->id[w->n] = id;
    memcpy(w->text[w->n], text, len);
    w->text[w->n][len] = 0;
    w->n++;
    return 0;
}

/* The dictionary of one pod restart, by id (what trees attach to blobs). */
static void test_words(void **state)
{
    fixture *fx = *state;
    const cp_catalog_pod *p = &pods[1].p;
    assert_int_equal(cp_catalog_dict_put(fx->cat, p, 3, "com.acme.A.run", 14), CP_OK);
    assert_int_equal(cp_catalog_dict_put(fx->cat, p, 9, "sql", 3), CP_OK);
    assert_int_equal(cp_catalog_dict_put(fx->cat, &pods[0].p, 4, "other restart", 13), CP_OK);
    assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    const int32_t ids[] = {3, 4, 9, 1000};
    wordrows w = {0};
    assert_int_equal(cp_reader_words(fx->rd, p->ns, p->pod, p->restart_ms, ids, 4, on_word, &w), CP_OK);
    assert_int_equal(w.n, 2); /* 4 is another restart's, 1000 is unknown */
    assert_int_equal(w.id[0], 3);
    assert_string_equal(w.text[0], "com.acme.A.run");
    assert_int_equal(w.id[1], 9);
    assert_string_equal(w.text[1], "sql");
}

/* Recovery's question "is this call stored?" finds every call, those moved into the late
 * batch of window 12:10 (make_late_batch) too, and not a call that is not there. */
static void test_call_exists(void **state)
{
    fixture *fx = *state;
    size_t in_batch = 0;
    for (size_t i = 0; i < fx->n; i++) {
        const cp_call *c = &fx->calls[i].c;
        int st = cp_catalog_call_exists(fx->cat, c);
        if (st != 1) fail_msg("call %zu: %d %s", i, st, cp_catalog_errmsg(fx->cat));
        in_batch += c->ts_ms >= T2026 + 10 * MIN_MS && c->ts_ms < T2026 + 15 * MIN_MS;
    }
    assert_true(in_batch > 0);
    cp_call missing = fx->calls[0].c;
    missing.record_index = 999999;
    assert_int_equal(cp_catalog_call_exists(fx->cat, &missing), 0);
    missing.ts_ms = 1000; /* no window at all */
    assert_int_equal(cp_catalog_call_exists(fx->cat, &missing), 0);
    assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
}

typedef struct wordcheck {
    size_t n, stop_at;
    const int32_t *want; /* the ids expected, in order */
} wordcheck;

static int on_word_check(void *ud, int32_t id, const char *text, size_t len)
{
    wordcheck *w = ud;
    char want[32];
    snprintf(want, sizeof want, "w%d", (int)w->want[w->n]);
    assert_int_equal(id, w->want[w->n]);
    assert_int_equal(len, strlen(want));
    assert_memory_equal(text, want, len);
    w->n++;
    return w->stop_at && w->n == w->stop_at;
}

/* Many ids (more than one statement's chunk), out of order, repeated and unknown: every
 * known one answered in the order asked, repeats included; a callback that stops ends the
 * walk without an error. */
static void test_words_many(void **state)
{
    fixture *fx = *state;
    const cp_catalog_pod *p = &pods[2].p;
    enum { KNOWN = 6000, ASKED = 9000 };
    for (int32_t i = 0; i < KNOWN; i++) {
        char t[32];
        int n = snprintf(t, sizeof t, "w%d", (int)(2 * i));
        assert_int_equal(cp_catalog_dict_put(fx->cat, p, 2 * i, t, (size_t)n), CP_OK);
    }
    assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    int32_t *ids = malloc(ASKED * sizeof *ids), *want = malloc(ASKED * sizeof *want);
    assert_non_null(ids);
    assert_non_null(want);
    size_t nwant = 0;
    for (size_t i = 0; i < ASKED; i++) {
        /* descending even and odd ids (odd ones are unknown), every tenth asked twice */
        ids[i] = i % 10 == 9 ? ids[i - 1] : (int32_t)(2 * KNOWN + 100 - (int32_t)i);
        if (ids[i] >= 0 && ids[i] % 2 == 0 && ids[i] < 2 * KNOWN) want[nwant++] = ids[i];
    }
    assert_true(nwant > 4096);
    wordcheck w = {0, 0, want};
    assert_int_equal(cp_reader_words(fx->rd, p->ns, p->pod, p->restart_ms, ids, ASKED, on_word_check, &w), CP_OK);
    assert_int_equal(w.n, nwant);
    w = (wordcheck){0, 5000, want};
    assert_int_equal(cp_reader_words(fx->rd, p->ns, p->pod, p->restart_ms, ids, ASKED, on_word_check, &w), CP_OK);
    assert_int_equal(w.n, 5000);
    /* nothing asked, or a pod that cannot exist */
    w = (wordcheck){0, 0, want};
    assert_int_equal(cp_reader_words(fx->rd, p->ns, p->pod, p->restart_ms, ids, 0, on_word_check, &w), CP_OK);
    assert_int_equal(cp_reader_words(fx->rd, "ns-\xff", p->pod, p->restart_ms, ids, ASKED, on_word_check, &w), CP_OK);
    assert_int_equal(w.n, 0);
    free(ids);
    free(want);
}

/* ---- tests: the writer's tables ----------------------------------------------------------------- */

static sqlite3 *raw_open(const char *path)
{
    sqlite3 *db;
    assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
    sqlite3_busy_timeout(db, 5000);
    return db;
}

static int64_t q_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK) fail_msg("%s: %s", sql, sqlite3_errmsg(db));
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    int64_t v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
}

/* One integer from the fixture's catalog, either kind. */
static int64_t raw_int(const fixture *fx, const char *sql)
{
    if (!test_pair_pg()) {
        sqlite3 *db = raw_open(fx->db);
        int64_t v = q_int(db, sql);
        sqlite3_close(db);
        return v;
    }
    PGconn *c = PQconnectdb(fx->db);
    if (PQstatus(c) != CONNECTION_OK) fail_msg("connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK || PQntuples(r) != 1) fail_msg("%s: %s", sql, PQerrorMessage(c));
    int64_t v = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    PQfinish(c);
    return v;
}

static void test_tables_and_inventory(void **state)
{
    fixture *fx = *state;
    if (test_pair_pg()) skip(); /* SQLite's files */
    sqlite3 *db = raw_open(fx->db);
    /* 2023 windows made on the spot, named by their UTC start */
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE table_name LIKE 'calls_20230301_%'"), 4);
    assert_int_equal(q_int(db, "SELECT start_time FROM inventory WHERE table_name = 'calls_20230301_1005'"),
                     T2023 + 5 * MIN_MS);
    assert_int_equal(q_int(db, "SELECT end_time FROM inventory WHERE table_name = 'calls_20230301_1005'"),
                     T2023 + 10 * MIN_MS);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE table_type <> 'calls'"), 0); /* one table */
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE status <> 'ready'"), 1); /* make_late_batch */
    /* rows_count = rows of each table; the traces are in the rows */
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT table_name, rows_count FROM inventory", -1, &s, NULL), SQLITE_OK);
    int64_t calls = 0, traces = 0, want_traces = 0;
    while (sqlite3_step(s) == SQLITE_ROW) {
        char sql[128];
        const char *name = (const char *)sqlite3_column_text(s, 0);
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s", name);
        int64_t rows = q_int(db, sql);
        assert_int_equal(sqlite3_column_int64(s, 1), rows);
        assert_int_equal(strncmp(name, "calls_", 6), 0);
        calls += rows;
        snprintf(sql, sizeof sql, "SELECT count(*) FROM %s WHERE trace IS NOT NULL", name);
        traces += q_int(db, sql);
    }
    sqlite3_finalize(s);
    for (size_t i = 0; i < fx->n; i++) want_traces += fx->calls[i].c.trace != NULL;
    assert_int_equal(calls, NCALLS);
    assert_int_equal(traces, want_traces);
    /* call_counts add up */
    assert_int_equal(q_int(db, "SELECT sum(calls) FROM call_counts"), NCALLS);
    /* the indexes the reader relies on */
    assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'calls_20230301_1005_duration'"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'calls_20230301_1005_time'"), 1);
    sqlite3_close(db);
}

static void test_windows_prepare(void **state)
{
    (void)state;
    if (test_pair_pg()) skip(); /* SQLite's files */
    fixture fx = {0};
    fixture_dir(&fx, "hotprep");
    open_catalog(&fx);
    assert_int_equal(cp_catalog_set_windows(fx.cat, 7 * MIN_MS, 0), CP_EINVAL); /* does not divide a day */
    assert_int_equal(cp_catalog_set_windows(fx.cat, 0, 0), CP_EINVAL);
    assert_int_equal(cp_catalog_set_windows(fx.cat, 5 * MIN_MS, 3 * 3600000LL), CP_OK);
    int64_t now = T2026 - 12 * 3600000LL; /* 2026-01-01 00:00 */
    for (int round = 0; round < 3; round++) { /* idempotent */
        assert_int_equal(cp_catalog_windows_prepare(fx.cat, now), CP_OK);
        assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
    }
    sqlite3 *db = raw_open(fx.db);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE table_type = 'calls' AND status = 'ready'"), 36);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE table_type = 'traces'"), 0);
    assert_int_equal(q_int(db, "SELECT count(DISTINCT uuid) FROM inventory"), 36);
    assert_int_equal(q_int(db, "SELECT min(start_time) FROM inventory"), now);
    assert_int_equal(q_int(db, "SELECT max(end_time) FROM inventory"), now + 3 * 3600000LL);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE table_name = 'calls_20260101_0255'"), 1);
    assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name LIKE 'calls_2026%'"), 36);
    assert_int_equal(q_int(db, "SELECT sum(rows_count) FROM inventory"), 0);
    sqlite3_close(db);
    /* a new catalog on the same file knows them (from inventory) */
    cp_catalog_close(fx.cat);
    open_catalog(&fx);
    assert_int_equal(cp_catalog_windows_prepare(fx.cat, now + 150000), CP_OK); /* not aligned: one more */
    assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
    db = raw_open(fx.db);
    assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE table_type = 'calls'"), 37);
    sqlite3_close(db);
    /* an empty catalog: no bounds, nothing found */
    open_reader(&fx);
    int64_t a = 1, b = 1;
    assert_int_equal(cp_reader_bounds(fx.rd, &a, &b), CP_OK);
    assert_int_equal(a, 0);
    assert_int_equal(b, 0);
    cp_call_filter f = all_calls(10);
    got g = {0};
    cp_search_stats st;
    search_ok(&fx, &f, &g, &st);
    assert_int_equal(g.n, 0);
    assert_int_equal(st.windows, 0); /* empty windows are skipped */
    cp_reader_close(fx.rd);
    cp_catalog_close(fx.cat);
    remove_tree(fx.dir);
    free(fx.dir);
}

/* Window length change: a longer window starting where a shorter one did is extended,
 * and overlaps the next short one; rows of equal time in both are merged by the ref. */
static void test_window_length_change(void **state)
{
    (void)state;
    fixture fx = {0};
    fixture_dir(&fx, "hotlen");
    open_catalog(&fx);
    uint64_t rng = 7;
    fx.n = 40;
    fx.calls = calloc(fx.n, sizeof *fx.calls);
    for (size_t i = 0; i < fx.n; i++) {
        make_call(&fx.calls[i], i, &rng);
        /* the first at 12:00:01; the others at 12:06 or 12:08 sharp */
        fx.calls[i].c.ts_ms = i == 0 ? T2026 + 1000 : T2026 + (i % 2 ? 6 : 8) * MIN_MS;
        fx.calls[i].c.duration_ms = (int32_t)(i % 3);
        fx.calls[i].c.trace_file_index = 1; /* ties down to record_index */
        fx.calls[i].c.buffer_offset = (int32_t)(i % 4 / 2);
    }
    for (size_t i = 0; i < 20; i++) put_ok(fx.cat, &fx.calls[i].c); /* 5-minute windows 12:00, 12:05 */
    assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
    cp_catalog_close(fx.cat);
    open_catalog(&fx);
    assert_int_equal(cp_catalog_set_windows(fx.cat, 10 * MIN_MS, 0), CP_OK);
    for (size_t i = 20; i < 40; i++) put_ok(fx.cat, &fx.calls[i].c); /* into 12:00, now 10 minutes */
    assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
    open_reader(&fx);
    assert_int_equal(raw_int(&fx, "SELECT end_time FROM inventory WHERE table_name = 'calls_20260101_1200'"),
                     T2026 + 10 * MIN_MS);
    assert_int_equal(raw_int(&fx, "SELECT count(*) FROM calls_20260101_1200"), 21);
    assert_int_equal(raw_int(&fx, "SELECT count(*) FROM calls_20260101_1205"), 19);
    static const cp_sort_col cols[] = {CP_SORT_TS, CP_SORT_DURATION, CP_SORT_POD};
    for (size_t i = 0; i < CP_ARRAY_LEN(cols); i++) {
        for (int desc = 0; desc < 2; desc++) {
            cp_call_filter f = all_calls(0);
            f.sort = cols[i];
            f.desc = desc;
            check_paging(&fx, f, 1);
            check_paging(&fx, f, 7);
            f.from_ms = T2026 + 6 * MIN_MS;
            check_paging(&fx, f, 3);
        }
    }
    int64_t a, b;
    assert_int_equal(cp_reader_bounds(fx.rd, &a, &b), CP_OK);
    assert_int_equal(a, T2026 + 1000);
    assert_int_equal(b, T2026 + 8 * MIN_MS);
    cp_reader_close(fx.rd);
    cp_catalog_close(fx.cat);
    remove_tree(fx.dir);
    free(fx.dir);
    free(fx.calls);
}

/* A catalog as the previous release left it (migration 1 only) upgrades in place. */
static void test_migration_from_v1(void **state)
{
    (void)state;
    if (test_pair_pg()) skip(); /* SQLite's migrations */
    fixture fx = {0};
    fixture_dir(&fx, "hotmig");
    sqlite3 *db;
    assert_int_equal(sqlite3_open(fx.db, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "PRAGMA journal_mode = WAL;"
                                  "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_ms INTEGER NOT NULL);"
                                  "INSERT INTO schema_migrations VALUES (1, 1);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, cp_catalog_sqlite_migration(1), NULL, NULL, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "INSERT INTO pods VALUES ('ns-a','svc-1','pod-1',1,1,1,'{}','ns-a/pod-1');"
                                  "INSERT INTO pod_restarts VALUES ('pod-1',5,'ns-a','svc-1','ns-a/pod-1',5,6);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    sqlite3_close(db);
    /* a reader refuses a catalog without the hot tier */
    char err[256];
    cp_reader *rd = NULL;
    assert_int_equal(cp_reader_open_sqlite(fx.db, &rd, err, sizeof err), CP_EINVAL);
    assert_null(rd);
    assert_non_null(strstr(err, "version 1"));

    open_catalog(&fx);
    assert_true(cp_catalog_sqlite_schema_version() >= 2);
    db = raw_open(fx.db);
    assert_int_equal(q_int(db, "SELECT max(version) FROM schema_migrations"), cp_catalog_sqlite_schema_version());
    assert_int_equal(q_int(db, "SELECT count(*) FROM pods"), 1);
    sqlite3_close(db);
    uint64_t rng = 9;
    tcall t;
    make_call(&t, 0, &rng);
    put_ok(fx.cat, &t.c);
    assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
    fx.calls = &t;
    fx.n = 1;
    open_reader(&fx);
    cp_call_filter f = all_calls(10);
    assert_int_equal(check_page(&fx, &f), 1);
    cp_reader_close(fx.rd);
    cp_catalog_close(fx.cat);
    /* opening again applies nothing */
    open_catalog(&fx);
    cp_catalog_close(fx.cat);
    remove_tree(fx.dir);
    free(fx.dir);
}

/* Migration 7 (issue 18): a window of the old layout (calls_ + traces_, an inventory
 * row for each) becomes one table with the blobs in its rows, on both databases; and
 * migration 10 (issue 19) adds the has_sql column a window of before lacks. */
static void test_migration_traces_folded(void **state)
{
    (void)state;
    enum { N = 60 };
    fixture fx = {0};
    fixture_dir(&fx, "hotfold");
    open_catalog(&fx);
    tcall *t = calloc(N, sizeof *t);
    uint64_t rng = 21;
    int with_trace = 0;
    for (size_t i = 0; i < N; i++) {
        make_call(&t[i], i, &rng);
        t[i].c.ts_ms = T2026 + (int64_t)i * 1000; /* all in window 20260101_1200 */
        with_trace += t[i].c.trace != NULL;
        put_ok(fx.cat, &t[i].c);
    }
    assert_true(with_trace > 0 && with_trace < N);
    assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
    cp_catalog_close(fx.cat);
    /* back to schema 6: the blobs in a traces_ table of the seed's columns */
    const int pg = test_pair_pg();
    char sql[2048];
    snprintf(sql, sizeof sql,
             "CREATE TABLE traces_20260101_1200 (id %s PRIMARY KEY, pod_name TEXT NOT NULL,"
             " restart_time %s NOT NULL, trace_file_index INTEGER NOT NULL, buffer_offset INTEGER NOT NULL,"
             " record_index INTEGER NOT NULL, pod_hash %s NOT NULL, trace %s NOT NULL);"
             "INSERT INTO traces_20260101_1200 SELECT id, pod_name, restart_time, trace_file_index, buffer_offset,"
             " record_index, pod_hash, trace FROM calls_20260101_1200 WHERE trace IS NOT NULL;"
             "ALTER TABLE calls_20260101_1200 DROP COLUMN trace;"
             "INSERT INTO inventory (uuid, start_time, end_time, status, table_type, table_name, created_time,"
             " rows_count, table_size, total_table_size, batch, rollup) SELECT 't-' || uuid, start_time, end_time,"
             " status, 'traces', 'traces_20260101_1200', created_time, %d, 0, 0, batch, rollup FROM inventory"
             " WHERE table_name = 'calls_20260101_1200';"
             "DROP INDEX calls_20260101_1200_pod;"
             "ALTER TABLE calls_20260101_1200 DROP COLUMN has_sql;"
             "DELETE FROM schema_migrations WHERE version >= 7",
             pg ? "bigint" : "INTEGER", pg ? "bigint" : "INTEGER", pg ? "bigint" : "INTEGER", pg ? "bytea" : "BLOB",
             with_trace);
    raw_sql(&fx, sql);
    /* migration 10 gives the window its has_sql column back: 0 for the calls stored before */
    int had_sql = 0;
    for (size_t i = 0; i < N; i++) had_sql += t[i].c.sql, t[i].c.sql = 0;
    assert_true(had_sql > 0);
    /* the next start migrates */
    open_catalog(&fx);
    cp_catalog_close(fx.cat);
    fx.calls = t;
    fx.n = N;
    open_reader(&fx);
    for (size_t i = 0; i < N; i++) {
        cp_call_ref ref;
        cp_call_ref_of(&t[i].c, &ref);
        got g = {.fx = &fx, .with_trace = 1};
        if (cp_reader_get(fx.rd, &ref, 1, on_get, &g) != CP_OK) fail_msg("get: %s", cp_reader_errmsg(fx.rd));
        assert_int_equal(g.n, 1);
        assert_int_equal(g.idx[0], i);
        free(g.idx);
    }
    cp_reader_close(fx.rd);
    /* no traces_ table or inventory row is left (a table that is not there fails the query) */
    raw_sql(&fx, "SELECT count(*) FROM calls_20260101_1200 WHERE trace IS NOT NULL");
    if (!pg) {
        sqlite3 *db = raw_open(fx.db);
        assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name LIKE 'traces%'"), 0);
        assert_int_equal(q_int(db, "SELECT count(*) FROM inventory WHERE table_type = 'traces'"), 0);
        assert_int_equal(q_int(db, "SELECT count(*) FROM calls_20260101_1200 WHERE trace IS NOT NULL"), with_trace);
        assert_int_equal(q_int(db, "SELECT max(version) FROM schema_migrations"), cp_catalog_sqlite_schema_version());
        assert_int_equal(q_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'calls_20260101_1200_pod'"), 1);
        assert_int_equal(q_int(db, "SELECT count(*) FROM calls_20260101_1200 WHERE has_sql = 0"), N);
        sqlite3_close(db);
    } else {
        assert_int_equal(raw_int(&fx, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'traces%'"), 0);
        assert_int_equal(raw_int(&fx, "SELECT count(*) FROM inventory WHERE table_type = 'traces'"), 0);
        assert_int_equal(raw_int(&fx, "SELECT count(*) FROM calls_20260101_1200 WHERE trace IS NOT NULL"), with_trace);
        assert_int_equal(raw_int(&fx, "SELECT count(*) FROM pg_indexes WHERE indexname = 'calls_20260101_1200_pod'"), 1);
        assert_int_equal(raw_int(&fx, "SELECT count(*) FROM calls_20260101_1200 WHERE has_sql = 0"), N);
        /* a window an older build made after the migration (rolling upgrade): the next
         * windows_prepare of this build gives it the column */
        raw_sql(&fx, "ALTER TABLE calls_20260101_1200 DROP COLUMN has_sql");
        open_catalog(&fx);
        assert_int_equal(cp_catalog_windows_prepare(fx.cat, T2026), CP_OK);
        assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
        cp_catalog_close(fx.cat);
        assert_int_equal(raw_int(&fx, "SELECT count(*) FROM calls_20260101_1200 WHERE has_sql = 0"), N);
    }
    free(t);
    remove_tree(fx.dir);
    free(fx.dir);
}

/* Pages filtered by namespace or pod walk each matching pod's range of the pod index
 * (call_counts lists a window's pods): a rare pod among many, a namespace of more pods
 * than the walk takes (the time index then), pods absent from a window, keyset pages in
 * both directions, and windows whose counts are gone (the time index again). */
static void test_search_by_pod(void **state)
{
    (void)state;
    enum { MANY = 80, PER = 3, N = MANY * PER + 2 + 5 };
    static char names[MANY][16];
    fixture fx = {0};
    fixture_dir(&fx, "hotbypod");
    open_catalog(&fx);
    tcall *t = calloc(N, sizeof *t);
    uint64_t rng = 33;
    for (size_t i = 0; i < N; i++) {
        make_call(&t[i], i, &rng);
        cp_call *c = &t[i].c;
        const char *ns = "many", *pod;
        if (i < MANY * PER) {
            snprintf(names[i / PER], sizeof names[0], "m-%zu", i / PER);
            pod = names[i / PER];
        } else {
            ns = "few";
            pod = i < MANY * PER + 2 ? "rare" : "other";
        }
        c->ns = ns, c->ns_len = strlen(ns);
        c->pod = pod, c->pod_len = strlen(pod);
        /* two windows; "rare" only in the second, many equal times */
        c->ts_ms = T2026 + (int64_t)(i % 2 || !strcmp(pod, "rare") ? 5 * MIN_MS : 0) + (int64_t)(i % 7) * 1000;
        put_ok(fx.cat, c);
    }
    assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
    fx.calls = t;
    fx.n = N;
    open_reader(&fx);
    for (int pass = 0; pass < 2; pass++) {
        for (int desc = 0; desc < 2; desc++) {
            cp_call_filter f = all_calls(N + 10);
            f.desc = desc;
            f.ns = "few";
            assert_int_equal(check_page(&fx, &f), 7);
            check_paging(&fx, f, 2);
            f.ns = NULL;
            f.pod = "rare";
            assert_int_equal(check_page(&fx, &f), 2);
            f.ns = "few";
            assert_int_equal(check_page(&fx, &f), 2);
            f.ns = "many"; /* no such pod in it */
            assert_int_equal(check_page(&fx, &f), 0);
            f.pod = NULL; /* 80 pods: more than one walk takes */
            assert_int_equal(check_page(&fx, &f), MANY * PER);
            check_paging(&fx, f, 37);
            f.ns = NULL;
            f.pod = "m-7";
            assert_int_equal(check_page(&fx, &f), PER);
            f.from_ms = T2026 + 5 * MIN_MS + 2000; /* a range cutting the second window */
            f.pod = "rare";
            check_paging(&fx, f, 1);
            /* with a scan budget (the API always sets one): rows counted as they are read */
            cp_call_filter g = all_calls(N + 10);
            g.desc = desc;
            g.max_scan = 100000;
            g.ns = "few";
            assert_int_equal(check_page(&fx, &g), 7);
            check_paging(&fx, g, 3);
            g.ns = "many";
            check_paging(&fx, g, 50);
        }
        /* the counts gone (as before migration 2): the same pages through the time index */
        cp_reader_close(fx.rd);
        raw_sql(&fx, "DELETE FROM call_counts");
        open_reader(&fx);
    }
    cp_reader_close(fx.rd);
    cp_catalog_close(fx.cat);
    free(t);
    remove_tree(fx.dir);
    free(fx.dir);
}

/* A reader sees what the writer committed, never its open transaction. */
static void test_reader_isolation(void **state)
{
    (void)state;
    fixture fx = {0};
    fixture_dir(&fx, "hotiso");
    open_catalog(&fx);
    fx.n = 200;
    fx.calls = calloc(fx.n, sizeof *fx.calls);
    uint64_t rng = 5;
    for (size_t i = 0; i < fx.n; i++) make_call(&fx.calls[i], i, &rng);
    for (size_t i = 0; i < 100; i++) put_ok(fx.cat, &fx.calls[i].c);
    assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
    open_reader(&fx);
    for (size_t i = 100; i < 200; i++) put_ok(fx.cat, &fx.calls[i].c); /* uncommitted */
    cp_call_filter f = all_calls(1000);
    fx.n = 100; /* the reference: the committed half only */
    assert_int_equal(check_page(&fx, &f), 100);
    podrows r = {0};
    assert_int_equal(cp_reader_pods(fx.rd, 0, INT64_MAX, on_pod, &r), CP_OK);
    int64_t total = 0;
    for (size_t i = 0; i < r.n; i++) total += r.calls[i];
    assert_int_equal(total, 100);
    cp_call_ref ref;
    cp_call_ref_of(&fx.calls[150].c, &ref);
    got g = {.fx = &fx};
    assert_int_equal(cp_reader_get(fx.rd, &ref, 0, on_get, &g), CP_ENOTFOUND);
    assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
    fx.n = 200;
    assert_int_equal(check_page(&fx, &f), 200);
    cp_reader_close(fx.rd);
    cp_catalog_close(fx.cat);
    remove_tree(fx.dir);
    free(fx.dir);
    free(fx.calls);
}

/* Calls outside the nameable range or without names are refused, and do not break the
 * batch. */
static void test_bad_times(void **state)
{
    (void)state;
    fixture fx = {0};
    fixture_dir(&fx, "hotbad");
    open_catalog(&fx);
    uint64_t rng = 3;
    tcall t;
    make_call(&t, 0, &rng);
    int64_t good = t.c.ts_ms;
    t.c.ts_ms = -1;
    assert_int_equal(cp_catalog_call_put(fx.cat, &t.c), CP_EINVAL);
    t.c.ts_ms = 253402300800000LL; /* year 10000 */
    assert_int_equal(cp_catalog_call_put(fx.cat, &t.c), CP_EINVAL);
    t.c.ts_ms = good;
    t.c.pod = NULL;
    assert_int_equal(cp_catalog_call_put(fx.cat, &t.c), CP_EINVAL);
    t.c.pod = "pod-1";
    t.c.pod_len = 5;
    put_ok(fx.cat, &t.c);
    assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
    fx.calls = &t;
    fx.n = 1;
    open_reader(&fx);
    cp_call_filter f = all_calls(10);
    assert_int_equal(check_page(&fx, &f), 1);
    cp_reader_close(fx.rd);
    cp_catalog_close(fx.cat);
    remove_tree(fx.dir);
    free(fx.dir);
}

static int64_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}

/* maintain() copies the WAL into the database file (its first call on a fresh connection
 * used to do nothing), and the WAL starts over once the writer has been idle. */
static void test_maintain_checkpoints(void **state)
{
    (void)state;
    if (test_pair_pg()) skip(); /* SQLite's WAL */
    fixture fx = {0};
    fixture_dir(&fx, "hotckpt");
    open_catalog(&fx);
    fx.n = 3000;
    fx.calls = calloc(fx.n, sizeof *fx.calls);
    uint64_t rng = 11;
    for (size_t i = 0; i < fx.n; i++) {
        make_call(&fx.calls[i], i, &rng);
        put_ok(fx.cat, &fx.calls[i].c);
    }
    assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
    char wal[600];
    snprintf(wal, sizeof wal, "%s-wal", fx.db);
    int64_t db0 = size_of(fx.db), wal0 = size_of(wal);
    assert_true(wal0 > 1000000); /* everything is still in the WAL */
    assert_int_equal(cp_catalog_maintain(fx.cat), CP_OK);
    int64_t db1 = size_of(fx.db);
    assert_true(db1 > db0 + 1000000);
    /* the next transaction restarts the WAL: it does not grow by the new rows */
    for (size_t i = 0; i < 100; i++) put_ok(fx.cat, &fx.calls[i].c);
    assert_int_equal(cp_catalog_commit(fx.cat), CP_OK);
    assert_int_equal(size_of(wal), wal0);
    open_reader(&fx);
    fx.n = 3000;
    cp_call_filter f = all_calls(10);
    got g = {0};
    cp_search_stats st;
    search_ok(&fx, &f, &g, &st);
    assert_int_equal(g.n, 10);
    free(g.idx);
    cp_reader_close(fx.rd);
    cp_catalog_close(fx.cat);
    remove_tree(fx.dir);
    free(fx.dir);
    free(fx.calls);
}

int main(void)
{
    test_pair_require();
    const struct CMUnitTest shared[] = {
        cmocka_unit_test(test_search_filters),  cmocka_unit_test(test_sort_columns),
        cmocka_unit_test(test_keyset_all_rows), cmocka_unit_test(test_limit_more),
        cmocka_unit_test(test_callback_stop),   cmocka_unit_test(test_max_scan),
        cmocka_unit_test(test_lazy_windows),    cmocka_unit_test(test_get),
        cmocka_unit_test(test_pods),            cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_tables_and_inventory), cmocka_unit_test(test_words),
        cmocka_unit_test(test_words_many),
        cmocka_unit_test(test_call_exists),
    };
    const struct CMUnitTest alone[] = {
        cmocka_unit_test(test_windows_prepare),   cmocka_unit_test(test_window_length_change),
        cmocka_unit_test(test_migration_from_v1), cmocka_unit_test(test_migration_traces_folded),
        cmocka_unit_test(test_search_by_pod),
        cmocka_unit_test(test_reader_isolation),
        cmocka_unit_test(test_bad_times),         cmocka_unit_test(test_maintain_checkpoints),
    };
    int failed = cmocka_run_group_tests_name("hot (shared data set)", shared, group_setup, group_teardown);
    return failed + cmocka_run_group_tests_name("hot", alone, NULL, NULL);
}
