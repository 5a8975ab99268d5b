/* api_test.c -- the HTTP query API (docs/API.md).
 *
 * Part 1 runs cp_http in-process on a fake reader (an in-memory cp_reader) to reach what
 * a live catalog cannot easily produce: reader failures (500/503), an expired cursor, a
 * scan budget that runs out, calls without a trace, the export row cap, stats
 * down-sampling.
 *
 * Part 2 starts the real `cloudprof serve`, replays the parser.test.protocol capture and
 * exercises the whole HTTP surface over what it stored: every endpoint's happy path and
 * errors, every filter, sorting by several columns both ways, paging through all calls
 * with the cursor, CSV, stats, trees (one call, merged, GET and POST), the raw trace, and
 * several clients at once.
 */
#include "server_util.h"
#include "replay_util.h"
#include "http_util.h"

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "http/cp_http.h"
#include "query/cp_query.h"
#include "store/cp_hot.h"
#include "streams/cp_streams.h"

/* ---- small JSON helpers ------------------------------------------------------------------ */

static json_int_t jint(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v)) fail_msg("field '%s' is not an integer", k);
    return json_integer_value(v);
}

static const char *jstr(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_string(v)) fail_msg("field '%s' is not a string", k);
    return json_string_value(v);
}

static int jbool(const json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_boolean(v)) fail_msg("field '%s' is not a boolean", k);
    return json_is_true(v);
}

/* Expects an error response: status, JSON {"error", "code"} and (if param) "parameter". */
static void expect_error_req(int port, const char *method, const char *path, const void *body, size_t n, int status,
                             const char *code, const char *param)
{
    int st;
    cp_buf b, h;
    cp_buf_init(&b);
    cp_buf_init(&h);
    int rc = body ? http_request(port, method, path, "Content-Type: application/json\r\n", body, n, &st, &b, &h)
                  : http_request(port, method, path, NULL, NULL, 0, &st, &b, &h);
    if (rc != 0) fail_msg("%s %s: no valid response", method, path);
    if (st != status)
        fail_msg("%s %.200s: status %d, want %d: %.*s", method, path, st, status, (int)(b.len > 300 ? 300 : b.len),
                 b.data ? (char *)b.data : "");
    char ct[128];
    assert_true(http_header(&h, "Content-Type", ct, sizeof ct));
    assert_string_equal(ct, "application/json; charset=utf-8");
    json_t *doc = json_loadb((const char *)b.data, b.len, 0, NULL);
    if (!doc) fail_msg("%s %s: error body is not JSON", method, path);
    assert_true(strlen(jstr(doc, "error")) > 0);
    if (strcmp(jstr(doc, "code"), code) != 0)
        fail_msg("%s %.200s: code '%s', want '%s'", method, path, jstr(doc, "code"), code);
    if (param) assert_string_equal(jstr(doc, "parameter"), param);
    json_decref(doc);
    cp_buf_free(&b);
    cp_buf_free(&h);
}

static void expect_error(int port, const char *path, int status, const char *code, const char *param)
{
    expect_error_req(port, "GET", path, NULL, 0, status, code, param);
}

/* Follows next_cursor from path (which must not end with a cursor) and returns every
 * call in order (a JSON array); pages counts the requests. */
static json_t *fetch_all_pages(int port, const char *path, size_t *pages)
{
    json_t *all = json_array();
    char url[4096];
    snprintf(url, sizeof url, "%s", path);
    *pages = 0;
    for (;;) {
        json_t *page = http_get_json(port, url, 200);
        (*pages)++;
        json_t *calls = json_object_get(page, "calls");
        assert_true(json_is_array(calls));
        json_array_extend(all, calls);
        json_t *next = json_object_get(page, "next_cursor");
        if (json_is_null(next)) {
            json_decref(page);
            break;
        }
        assert_true(json_is_string(next));
        assert_true(json_array_size(calls) > 0);
        snprintf(url, sizeof url, "%s&cursor=%s", path, json_string_value(next));
        json_decref(page);
        if (*pages > 10000) fail_msg("paging does not end");
    }
    return all;
}

/* ======================================================================================
 * Part 1: in-process server on a fake reader
 * ====================================================================================== */

#define FAKE_N 30
#define FAKE_BASE_MS 1700000000000LL

typedef struct fake_db {
    cp_call calls[FAKE_N];
    char method[FAKE_N][64];
    char params[FAKE_N][64];
    int fail_open;         /* open_reader fails */
    int fail_search;       /* search returns CP_EIO */
    int opened;            /* readers opened so far */
    pthread_mutex_t mu;
} fake_db;

typedef struct fake_reader {
    cp_reader base;
    fake_db *db;
} fake_reader;

static void fake_fill(fake_db *db)
{
    memset(db, 0, sizeof *db);
    pthread_mutex_init(&db->mu, NULL);
    for (int i = 0; i < FAKE_N; i++) {
        cp_call *c = &db->calls[i];
        snprintf(db->method[i], sizeof db->method[i], "void com.acme.Svc.op%d()", i);
        snprintf(db->params[i], sizeof db->params[i], "{\"k\":[\"v;%d\"]}", i);
        c->ts_ms = FAKE_BASE_MS + i * 1000;
        c->duration_ms = (i * 37) % 500;
        c->calls = i;
        c->ns = "ns1", c->ns_len = 3;
        c->service = "svc", c->service_len = 3;
        c->pod = i % 2 ? "pod-b" : "pod-a", c->pod_len = 5;
        c->restart_ms = FAKE_BASE_MS - 5000;
        c->method = db->method[i], c->method_len = strlen(db->method[i]);
        c->thread = "main", c->thread_len = 4;
        c->params_json = db->params[i], c->params_json_len = strlen(db->params[i]);
        c->error = i % 7 == 0;
        c->trace_file_index = 1;
        c->buffer_offset = i;
        c->trace_reason = CP_TRACE_TOO_LARGE; /* the fake has no blobs */
    }
}

/* Sort value of a call for the columns the fake supports (ts, duration). */
static int64_t fake_val(const cp_call *c, cp_sort_col col)
{
    return col == CP_SORT_DURATION ? c->duration_ms : c->ts_ms;
}

/* Order of the API: the column in its direction, then ts desc (ts are unique here). */
static int fake_cmp(const cp_call *a, int64_t bval, int64_t bts, const cp_call_filter *f)
{
    int64_t av = fake_val(a, f->sort);
    if (av != bval) return (av < bval) == !f->desc ? -1 : 1;
    if (a->ts_ms != bts) return a->ts_ms > bts ? -1 : 1;
    return 0;
}

static int fake_qcmp(const void *x, const void *y, void *filter)
{
    const cp_call *a = *(const cp_call *const *)x, *b = *(const cp_call *const *)y;
    const cp_call_filter *f = filter;
    return fake_cmp(a, fake_val(b, f->sort), b->ts_ms, f);
}

static int fake_matches(const cp_call *c, const cp_call_filter *f)
{
    if (c->ts_ms < f->from_ms || c->ts_ms >= f->to_ms) return 0;
    if (f->ns && strcmp(f->ns, c->ns)) return 0;
    if (f->service && strcmp(f->service, c->service)) return 0;
    if (f->pod && strcmp(f->pod, c->pod)) return 0;
    if (c->duration_ms < f->min_duration_ms || c->duration_ms > f->max_duration_ms) return 0;
    if (f->errors_only && !c->error) return 0;
    if (f->method_substr && !strcasestr(c->method, f->method_substr)) return 0;
    cp_call_view v = {c->method, c->method_len, c->pod, c->pod_len, c->params_json, c->params_json_len};
    return !f->match || f->match(f->match_ud, &v);
}

static int fake_search(cp_reader *r, const cp_call_filter *f, cp_call_fn fn, void *ud, cp_search_stats *st)
{
    fake_db *db = ((fake_reader *)r)->db;
    memset(st, 0, sizeof *st);
    if (db->fail_search) return CP_EIO;
    const cp_call *rows[FAKE_N];
    size_t n = 0;
    for (size_t i = 0; i < FAKE_N; i++) {
        if (f->max_scan && st->scanned >= f->max_scan) {
            st->partial = 1;
            break;
        }
        st->scanned++;
        if (!fake_matches(&db->calls[i], f)) continue;
        if (f->after && fake_cmp(&db->calls[i], f->after->num, f->after->ref.ts_ms, f) <= 0) continue;
        rows[n++] = &db->calls[i];
    }
    qsort_r(rows, n, sizeof *rows, fake_qcmp, (void *)f);
    for (size_t i = 0; i < n; i++) {
        if (i == f->limit) {
            st->more = 1;
            break;
        }
        int rc = fn(ud, rows[i]);
        if (rc) return rc;
    }
    return CP_OK;
}

static int fake_get(cp_reader *r, const cp_call_ref *ref, int with_trace, cp_call_fn fn, void *ud)
{
    fake_db *db = ((fake_reader *)r)->db;
    for (size_t i = 0; i < FAKE_N; i++) {
        cp_call_ref x;
        cp_call_ref_of(&db->calls[i], &x);
        if (x.ts_ms == ref->ts_ms && x.restart_ms == ref->restart_ms && x.pod_hash == ref->pod_hash &&
            x.trace_file_index == ref->trace_file_index && x.buffer_offset == ref->buffer_offset &&
            x.record_index == ref->record_index)
            return fn(ud, &db->calls[i]);
    }
    return CP_ENOTFOUND;
}

static int fake_pods(cp_reader *r, int64_t from, int64_t to, cp_pod_fn fn, void *ud)
{
    cp_pod_row p = {"ns1", "svc", "pod-a", FAKE_BASE_MS - 5000, FAKE_BASE_MS, FAKE_BASE_MS + 30000, 15};
    int rc = fn(ud, &p);
    p.pod = "pod-b";
    return rc ? rc : fn(ud, &p);
}

static int fake_bounds(cp_reader *r, int64_t *min_ts, int64_t *max_ts)
{
    *min_ts = FAKE_BASE_MS;
    *max_ts = FAKE_BASE_MS + (FAKE_N - 1) * 1000;
    return CP_OK;
}

static const char *fake_errmsg(const cp_reader *r) { return "fake failure"; }
static void fake_close(cp_reader *r) { free(r); }

static int fake_words(cp_reader *r, const char *ns, const char *pod, int64_t restart_ms, const int32_t *ids, size_t n,
                      int (*fn)(void *ud, int32_t id, const char *text, size_t len), void *ud)
{
    (void)r, (void)ns, (void)pod, (void)restart_ms, (void)ids, (void)n, (void)fn, (void)ud;
    return CP_OK; /* no dictionary: trees name methods "#<id>" */
}

static const cp_reader_ops fake_ops = {.search = fake_search,
                                       .get = fake_get,
                                       .pods = fake_pods,
                                       .words = fake_words,
                                       .bounds = fake_bounds,
                                       .errmsg = fake_errmsg,
                                       .close = fake_close};

static int fake_open(void *ud, cp_reader **out, char *err, size_t errlen)
{
    fake_db *db = ud;
    if (db->fail_open) {
        snprintf(err, errlen, "fake: cannot open");
        return CP_EIO;
    }
    fake_reader *r = calloc(1, sizeof *r);
    if (!r) return CP_ENOMEM;
    r->base.ops = &fake_ops;
    r->db = db;
    pthread_mutex_lock(&db->mu);
    db->opened++;
    pthread_mutex_unlock(&db->mu);
    *out = &r->base;
    return CP_OK;
}

typedef struct fake_env {
    fake_db db;
    cp_http_config cfg;
    cp_http *http;
    int port;
} fake_env;

static void fake_start(fake_env *e, void (*tune)(cp_http_config *))
{
    fake_fill(&e->db);
    cp_http_config_default(&e->cfg);
    e->cfg.host = "127.0.0.1";
    e->cfg.port = 0;
    e->cfg.threads = 2;
    e->cfg.open_reader = fake_open;
    e->cfg.open_reader_ud = &e->db;
    e->cfg.version = "test";
    if (tune) tune(&e->cfg);
    char err[256];
    int st = cp_http_start(&e->cfg, &e->http, err, sizeof err);
    if (st != CP_OK) fail_msg("cp_http_start: %s", err);
    e->port = cp_http_port(e->http);
    assert_true(e->port > 0);
}

static void fake_stop(fake_env *e)
{
    cp_http_stop(e->http);
    pthread_mutex_destroy(&e->db.mu);
}

#define FAKE_WINDOW "from=1700000000000&to=1700000100000"

/* Shapes and values of /calls on the fake: every field, filters, both sorts. */
static void test_fake_calls(void **state)
{
    fake_env e;
    fake_start(&e, NULL);
    json_t *doc = http_get_json(e.port, "/api/v1/calls?" FAKE_WINDOW "&limit=1000", 200);
    json_t *calls = json_object_get(doc, "calls");
    assert_int_equal(json_array_size(calls), FAKE_N);
    assert_true(json_is_null(json_object_get(doc, "next_cursor")));
    assert_false(jbool(doc, "partial"));
    assert_int_equal(json_array_size(json_object_get(doc, "partial_reasons")), 0);
    assert_int_equal(jint(doc, "scanned"), FAKE_N);
    /* newest first; every field of the last call (i = 29) */
    json_t *c = json_array_get(calls, 0);
    assert_int_equal(jint(c, "ts_ms"), FAKE_BASE_MS + 29000);
    assert_int_equal(jint(c, "duration_ms"), (29 * 37) % 500);
    assert_string_equal(jstr(c, "method"), "void com.acme.Svc.op29()");
    assert_string_equal(jstr(c, "namespace"), "ns1");
    assert_string_equal(jstr(c, "service"), "svc");
    assert_string_equal(jstr(c, "pod"), "pod-b");
    assert_int_equal(jint(c, "restart_ms"), FAKE_BASE_MS - 5000);
    assert_string_equal(jstr(c, "thread"), "main");
    assert_int_equal(jint(c, "calls"), 29);
    const char *ints[] = {"cpu_time", "wait_time", "memory_used", "suspend_ms", "transactions", "queue_wait_ms",
                          "logs_generated", "logs_written", "file_read", "file_written", "net_read", "net_written"};
    for (size_t i = 0; i < CP_ARRAY_LEN(ints); i++) assert_int_equal(jint(c, ints[i]), 0);
    assert_false(jbool(c, "error"));
    assert_string_equal(json_string_value(json_array_get(json_object_get(json_object_get(c, "params"), "k"), 0)),
                        "v;29");
    assert_false(jbool(c, "trace_available"));
    assert_string_equal(jstr(c, "trace_dropped_reason"), CP_TRACE_TOO_LARGE);
    cp_call_ref ref;
    assert_int_equal(cp_call_id_parse(jstr(c, "id"), strlen(jstr(c, "id")), &ref), CP_OK);
    assert_int_equal(ref.ts_ms, FAKE_BASE_MS + 29000);
    json_decref(doc);

    /* filters reach the reader */
    doc = http_get_json(e.port, "/api/v1/calls?" FAKE_WINDOW "&pod=pod-a&error=true", 200);
    assert_int_equal(json_array_size(json_object_get(doc, "calls")), 3); /* i = 0, 14, 28 */
    json_decref(doc);
    doc = http_get_json(e.port, "/api/v1/calls?" FAKE_WINDOW "&method=SVC.OP1&duration=100ms..400ms", 200);
    json_t *x;
    size_t i;
    json_array_foreach(json_object_get(doc, "calls"), i, x) {
        assert_non_null(strcasestr(jstr(x, "method"), "svc.op1"));
        assert_in_range(jint(x, "duration_ms"), 100, 400);
    }
    json_decref(doc);
    doc = http_get_json(e.port, "/api/v1/calls?" FAKE_WINDOW "&q=%24k%3Dv%3B17", 200); /* q=$k=v;17 */
    assert_int_equal(json_array_size(json_object_get(doc, "calls")), 1);
    json_decref(doc);

    /* sort by duration ascending, paged 4 at a time */
    size_t pages;
    json_t *all = fetch_all_pages(e.port, "/api/v1/calls?" FAKE_WINDOW "&sort=duration&limit=4", &pages);
    assert_int_equal(json_array_size(all), FAKE_N);
    assert_int_equal(pages, (FAKE_N + 3) / 4);
    for (i = 1; i < FAKE_N; i++)
        assert_true(jint(json_array_get(all, i - 1), "duration_ms") <= jint(json_array_get(all, i), "duration_ms"));
    json_decref(all);
    fake_stop(&e);
}

#define CURSOR_TTL_MS 1000
static void tune_ttl(cp_http_config *c) { c->cursor_ttl_ms = CURSOR_TTL_MS; }

/* A cursor older than cursor_ttl_ms is a 410 with code cursor_expired. The cursor is
 * issued between t0 (request sent) and t1 (answer read): an answer read before t0 + TTL
 * comes from a fresh cursor and must be a page (on a machine too slow for that, the check
 * is made again with a new cursor); once t1 + TTL has passed the cursor must have expired. */
static void test_fake_cursor_expired(void **state)
{
    fake_env e;
    fake_start(&e, tune_ttl);
    char url[2048];
    int64_t t1 = 0;
    int fresh_checked = 0;
    for (int attempt = 0; attempt < 10 && !fresh_checked; attempt++) {
        int64_t t0 = test_now_ms();
        json_t *doc = http_get_json(e.port, "/api/v1/calls?" FAKE_WINDOW "&limit=5", 200);
        t1 = test_now_ms();
        snprintf(url, sizeof url, "/api/v1/calls?" FAKE_WINDOW "&limit=5&cursor=%s", jstr(doc, "next_cursor"));
        json_decref(doc);
        int st = 0;
        cp_buf body;
        cp_buf_init(&body);
        assert_int_equal(http_get(e.port, url, &st, &body, NULL), 0);
        if (test_now_ms() - t0 < CURSOR_TTL_MS) { /* fresh: fine */
            if (st != 200) fail_msg("a fresh cursor: status %d: %.*s", st, (int)body.len, (char *)body.data);
            fresh_checked = 1;
        }
        cp_buf_free(&body);
    }
    assert_true(fresh_checked);
    while (test_now_ms() - t1 <= CURSOR_TTL_MS + 50) sleep_ms(50);
    expect_error(e.port, url, 410, "cursor_expired", "cursor");
    fake_stop(&e);
}

static void tune_scan(cp_http_config *c) { c->max_scan = 10; }

/* The scan budget: rows stay right, partial says so. */
static void test_fake_scan_budget(void **state)
{
    fake_env e;
    fake_start(&e, tune_scan);
    json_t *doc = http_get_json(e.port, "/api/v1/calls?" FAKE_WINDOW, 200);
    assert_true(jbool(doc, "partial"));
    assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "partial_reasons"), 0)),
                        "scan_budget");
    assert_int_equal(json_array_size(json_object_get(doc, "calls")), 10);
    assert_true(json_is_string(json_object_get(doc, "next_cursor")));
    json_decref(doc);
    doc = http_get_json(e.port, "/api/v1/calls/stats?" FAKE_WINDOW, 200);
    assert_true(jbool(doc, "partial"));
    assert_int_equal(jint(doc, "total"), 10);
    json_decref(doc);
    fake_stop(&e);
}

/* Reader failures: 503 (with Retry-After) when none can be opened, 500 when a query
 * fails; the failed reader is not reused; the server keeps serving. */
static void test_fake_reader_failures(void **state)
{
    fake_env e;
    fake_start(&e, NULL);
    e.db.fail_open = 1;
    int st;
    cp_buf b, h;
    cp_buf_init(&b);
    cp_buf_init(&h);
    assert_int_equal(http_get(e.port, "/api/v1/calls?" FAKE_WINDOW, &st, &b, &h), 0);
    assert_int_equal(st, 503);
    char v[32];
    assert_true(http_header(&h, "Retry-After", v, sizeof v));
    expect_error(e.port, "/api/v1/services?" FAKE_WINDOW, 503, "unavailable", NULL);
    expect_error(e.port, "/api/v1/calls.csv?" FAKE_WINDOW, 503, "unavailable", NULL);
    json_decref(http_get_json(e.port, "/api/v1/health", 200)); /* needs no reader */
    e.db.fail_open = 0;
    json_decref(http_get_json(e.port, "/api/v1/calls?" FAKE_WINDOW, 200));
    int opened = e.db.opened;
    e.db.fail_search = 1;
    expect_error(e.port, "/api/v1/calls?" FAKE_WINDOW, 500, "reader_error", NULL);
    expect_error(e.port, "/api/v1/calls/stats?" FAKE_WINDOW, 500, "reader_error", NULL);
    expect_error(e.port, "/api/v1/calls.csv?" FAKE_WINDOW, 500, "reader_error", NULL);
    e.db.fail_search = 0;
    json_decref(http_get_json(e.port, "/api/v1/calls?" FAKE_WINDOW, 200));
    assert_true(e.db.opened > opened); /* the failed readers were closed, new ones opened */
    cp_buf_free(&b);
    cp_buf_free(&h);
    fake_stop(&e);
}

/* Calls without a trace: the call is listed with its reason; tree and trace are 410. */
static void test_fake_no_trace(void **state)
{
    fake_env e;
    fake_start(&e, NULL);
    cp_call_ref ref;
    char id[CP_CALL_ID_MAX], url[512];
    cp_call_ref_of(&e.db.calls[3], &ref);
    cp_call_id_format(&ref, id);
    snprintf(url, sizeof url, "/api/v1/calls/%s", id);
    json_t *c = http_get_json(e.port, url, 200);
    assert_string_equal(jstr(c, "id"), id);
    assert_int_equal(jint(c, "ts_ms"), FAKE_BASE_MS + 3000);
    json_decref(c);
    snprintf(url, sizeof url, "/api/v1/calls/%s/tree", id);
    expect_error(e.port, url, 410, "trace_unavailable", NULL);
    json_t *err = http_get_json(e.port, url, 410);
    assert_string_equal(jstr(err, "reason"), CP_TRACE_TOO_LARGE);
    json_decref(err);
    snprintf(url, sizeof url, "/api/v1/calls/%s/trace", id);
    expect_error(e.port, url, 410, "trace_unavailable", NULL);
    /* merged: none of the calls has a trace */
    char id2[CP_CALL_ID_MAX];
    cp_call_ref_of(&e.db.calls[4], &ref);
    cp_call_id_format(&ref, id2);
    snprintf(url, sizeof url, "/api/v1/tree?ids=%s,%s", id, id2);
    expect_error(e.port, url, 410, "trace_unavailable", NULL);
    fake_stop(&e);
}

static void tune_export(cp_http_config *c) { c->max_export_rows = 7; }

/* The export stops at max_export_rows and says so in its last line. */
static void test_fake_csv_cap(void **state)
{
    fake_env e;
    fake_start(&e, tune_export);
    int st;
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(http_get(e.port, "/api/v1/calls.csv?" FAKE_WINDOW, &st, &b, NULL), 0);
    assert_int_equal(st, 200);
    char **lines;
    cp_buf_putc(&b, 0);
    size_t n = split_lines((char *)b.data, b.len - 1, &lines);
    assert_int_equal(n, 1 + 7 + 1);
    assert_non_null(strstr(lines[8], "# truncated:"));
    assert_non_null(strstr(lines[8], "7 rows"));
    /* quoting: the params JSON holds ';' and '"' */
    assert_non_null(strstr(lines[1], ";\"{\"\"k\"\":[\"\"v;29\"\"]}\";"));
    free(lines);
    cp_buf_free(&b);
    fake_stop(&e);
}

/* Down-sampling: at most 5 points per column, the slowest ones; totals over all. */
static void test_fake_stats(void **state)
{
    fake_env e;
    fake_start(&e, NULL);
    json_t *doc = http_get_json(e.port, "/api/v1/calls/stats?" FAKE_WINDOW "&columns=1", 200);
    json_t *pts = json_object_get(doc, "points");
    assert_int_equal(json_array_size(pts), 5);
    assert_true(jbool(doc, "sampled"));
    assert_int_equal(jint(doc, "total"), FAKE_N);
    long long sum = 0;
    int64_t durs[FAKE_N];
    for (int i = 0; i < FAKE_N; i++) sum += durs[i] = (i * 37) % 500;
    assert_int_equal(jint(doc, "sum_duration_ms"), sum);
    /* the five slowest */
    for (int i = 0; i < FAKE_N; i++)
        for (int j = i + 1; j < FAKE_N; j++)
            if (durs[j] > durs[i]) {
                int64_t t = durs[i];
                durs[i] = durs[j];
                durs[j] = t;
            }
    json_t *p;
    size_t i;
    json_int_t prev_ts = 0;
    json_array_foreach(pts, i, p) {
        assert_true(jint(p, "duration_ms") >= durs[4]);
        assert_true(jint(p, "ts_ms") >= prev_ts); /* time order */
        prev_ts = jint(p, "ts_ms");
        assert_true(strlen(jstr(p, "id")) > 0);
    }
    json_decref(doc);
    /* columns are whole 10-second rollup cells: one call a second gives 3 columns of 10,
     * each showing its 5 slowest */
    doc = http_get_json(e.port, "/api/v1/calls/stats?" FAKE_WINDOW, 200);
    assert_int_equal(jint(doc, "column_ms"), 10000);
    pts = json_object_get(doc, "points");
    assert_int_equal(json_array_size(pts), 15);
    assert_true(jbool(doc, "sampled"));
    for (int col = 0; col < 3; col++) {
        int64_t d[10];
        for (int k = 0; k < 10; k++) d[k] = ((col * 10 + k) * 37) % 500;
        for (int a = 0; a < 10; a++) /* the column's durations, slowest first */
            for (int b = a + 1; b < 10; b++)
                if (d[b] > d[a]) {
                    int64_t t = d[a];
                    d[a] = d[b];
                    d[b] = t;
                }
        size_t in_col = 0;
        json_array_foreach(pts, i, p) {
            if ((jint(p, "ts_ms") - FAKE_BASE_MS) / 10000 != col) continue;
            assert_true(jint(p, "duration_ms") >= d[4]);
            in_col++;
        }
        assert_int_equal(in_col, 5);
    }
    json_decref(doc);
    fake_stop(&e);
}

/* /services groups the pod rows; /config reports the limits. */
static void test_fake_services_config(void **state)
{
    fake_env e;
    fake_start(&e, NULL);
    json_t *doc = http_get_json(e.port, "/api/v1/services?" FAKE_WINDOW, 200);
    json_t *ns = json_array_get(json_object_get(doc, "namespaces"), 0);
    assert_string_equal(jstr(ns, "namespace"), "ns1");
    assert_int_equal(jint(ns, "calls"), 30);
    json_t *svc = json_array_get(json_object_get(ns, "services"), 0);
    assert_string_equal(jstr(svc, "service"), "svc");
    assert_int_equal(jint(svc, "calls"), 30);
    json_t *pods = json_object_get(svc, "pods");
    assert_int_equal(json_array_size(pods), 2);
    assert_string_equal(jstr(json_array_get(pods, 1), "pod"), "pod-b");
    json_t *r = json_array_get(json_object_get(json_array_get(pods, 1), "restarts"), 0);
    assert_int_equal(jint(r, "restart_ms"), FAKE_BASE_MS - 5000);
    assert_int_equal(jint(r, "first_ms"), FAKE_BASE_MS);
    assert_int_equal(jint(r, "last_ms"), FAKE_BASE_MS + 30000);
    assert_int_equal(jint(r, "calls"), 15);
    json_decref(doc);
    doc = http_get_json(e.port, "/api/v1/config", 200);
    assert_string_equal(jstr(doc, "version"), "test");
    json_t *lim = json_object_get(doc, "limits");
    assert_int_equal(jint(lim, "max_limit"), 1000);
    assert_int_equal(jint(lim, "default_limit"), 100);
    assert_int_equal(jint(lim, "max_span_ms"), 31LL * 24 * 3600 * 1000);
    assert_int_equal(jint(lim, "max_tree_calls"), 1000);
    assert_string_equal(jstr(doc, "default_duration"), ">=500ms");
    json_decref(doc);
    fake_stop(&e);
}

/* ======================================================================================
 * Part 2: the real server with the replayed capture
 * ====================================================================================== */

/* The capture's calls are from 2023-07-24 (~1690201583767); a window of a few days. */
#define FROM_MS 1690000000000LL
#define TO_MS 1690400000000LL
#define WINDOW "from=1690000000000&to=1690400000000"

typedef struct api_env {
    test_server s;
    replay_capture cap;
    int port;
    json_t *all;          /* every call, newest first (the default order) */
    size_t n;
} api_env;

static api_env env;

static int real_setup(void **state)
{
    server_start(&env.s, "api", NULL);
    env.port = env.s.http_port;
    replay_capture_parser_test(&env.cap);
    replay_result rr;
    replay_opts o;
    memset(&o, 0, sizeof o);
    replay_run(env.s.port, &env.cap, &o, &rr);
    /* calls are assembled as the streams arrive: wait for every call of the capture */
    json_t *doc = replay_wait_calls(&env.s, "/api/v1/calls?" WINDOW "&limit=1000", replay_capture_calls(&env.cap));
    env.all = json_incref(json_object_get(doc, "calls"));
    env.n = json_array_size(env.all);
    json_decref(doc);
    return 0;
}

static int real_teardown(void **state)
{
    json_decref(env.all);
    env.all = NULL;
    replay_capture_free(&env.cap);
    if (env.s.pid) server_stop(&env.s);
    server_destroy(&env.s);
    return 0;
}

/* The call of env.all with the largest value of an integer field. */
static json_t *call_with_max(const char *field, int need_trace)
{
    json_t *best = NULL, *c;
    size_t i;
    json_array_foreach(env.all, i, c) {
        if (need_trace && !jbool(c, "trace_available")) continue;
        if (!best || jint(c, field) > jint(best, field)) best = c;
    }
    if (!best) fail_msg("no call with a trace");
    return best;
}

/* The calls of env.all a predicate keeps (count). */
static size_t count_where(int (*keep)(const json_t *c, const void *arg), const void *arg)
{
    json_t *c;
    size_t i, n = 0;
    json_array_foreach(env.all, i, c) n += keep(c, arg) != 0;
    return n;
}

static size_t page_count(const char *path)
{
    json_t *doc = http_get_json(env.port, path, 200);
    size_t n = json_array_size(json_object_get(doc, "calls"));
    assert_true(json_is_null(json_object_get(doc, "next_cursor")));
    json_decref(doc);
    return n;
}

/* health, time, config; common headers; HEAD. */
static void test_meta(void **state)
{
    json_t *doc = http_get_json(env.port, "/api/v1/health", 200);
    assert_string_equal(jstr(doc, "status"), "ok");
    json_decref(doc);
    doc = http_get_json(env.port, "/api/v1/time", 200);
    int64_t now = cp_now_ms();
    assert_true(jint(doc, "now_ms") > now - 60000 && jint(doc, "now_ms") < now + 60000);
    json_decref(doc);
    doc = http_get_json(env.port, "/api/v1/config", 200);
    assert_true(strlen(jstr(doc, "version")) > 0);
    json_t *lim = json_object_get(doc, "limits");
    const char *keys[] = {"max_span_ms", "default_limit", "max_limit", "max_scan", "max_tree_calls", "max_tree_nodes",
                          "max_export_rows", "max_profile_calls"};
    for (size_t i = 0; i < CP_ARRAY_LEN(keys); i++) assert_true(jint(lim, keys[i]) > 0);
    assert_true(json_is_object(json_object_get(doc, "features")));
    assert_true(jbool(json_object_get(doc, "features"), "profile"));
    assert_string_equal(jstr(doc, "default_duration"), ">=500ms");
    json_decref(doc);

    int st;
    cp_buf b, h;
    cp_buf_init(&b);
    cp_buf_init(&h);
    char v[128];
    assert_int_equal(http_get(env.port, "/api/v1/calls?" WINDOW "&limit=1", &st, &b, &h), 0);
    assert_int_equal(st, 200);
    assert_true(http_header(&h, "Content-Type", v, sizeof v));
    assert_string_equal(v, "application/json; charset=utf-8");
    assert_true(http_header(&h, "Cache-Control", v, sizeof v));
    assert_string_equal(v, "no-cache");
    assert_int_equal(http_request(env.port, "HEAD", "/api/v1/health", NULL, NULL, 0, &st, &b, &h), 0);
    assert_int_equal(st, 200);
    assert_int_equal(b.len, 0);
    cp_buf_free(&b);
    cp_buf_free(&h);
}

/* /services: the capture's pod with one restart holding every call. */
static void test_services(void **state)
{
    json_t *doc = http_get_json(env.port, "/api/v1/services?" WINDOW, 200);
    json_t *nss = json_object_get(doc, "namespaces");
    assert_int_equal(json_array_size(nss), 1);
    json_t *ns = json_array_get(nss, 0);
    assert_string_equal(jstr(ns, "namespace"), env.cap.ns);
    assert_int_equal(jint(ns, "calls"), (json_int_t)env.n);
    json_t *svc = json_array_get(json_object_get(ns, "services"), 0);
    assert_string_equal(jstr(svc, "service"), jstr(json_array_get(env.all, 0), "service"));
    json_t *pod = json_array_get(json_object_get(svc, "pods"), 0);
    assert_string_equal(jstr(pod, "pod"), env.cap.pod);
    json_t *restarts = json_object_get(pod, "restarts");
    assert_int_equal(json_array_size(restarts), 1);
    json_t *r = json_array_get(restarts, 0);
    assert_int_equal(jint(r, "calls"), (json_int_t)env.n);
    assert_int_equal(jint(r, "restart_ms"), jint(json_array_get(env.all, 0), "restart_ms"));
    assert_true(jint(r, "first_ms") <= jint(r, "last_ms"));
    json_decref(doc);
    /* a window before any data: nothing */
    doc = http_get_json(env.port, "/api/v1/services?from=1000&to=2000", 200);
    assert_int_equal(json_array_size(json_object_get(doc, "namespaces")), 0);
    json_decref(doc);
}

/* Every call is complete, unique, newest first, and /calls/{id} returns the same object. */
static void test_calls_list_and_get(void **state)
{
    assert_true(env.n >= 10);
    const char *ints[] = {"ts_ms", "duration_ms", "restart_ms", "cpu_time", "wait_time", "memory_used", "suspend_ms",
                          "calls", "transactions", "queue_wait_ms", "logs_generated", "logs_written", "file_read",
                          "file_written", "net_read", "net_written"};
    const char *strs[] = {"id", "method", "namespace", "service", "pod", "thread"};
    json_t *c;
    size_t i;
    json_array_foreach(env.all, i, c) {
        for (size_t k = 0; k < CP_ARRAY_LEN(ints); k++) (void)jint(c, ints[k]);
        for (size_t k = 0; k < CP_ARRAY_LEN(strs); k++) (void)jstr(c, strs[k]);
        (void)jbool(c, "error");
        (void)jbool(c, "sql");
        assert_true(json_is_object(json_object_get(c, "params")));
        int has = jbool(c, "trace_available");
        json_t *why = json_object_get(c, "trace_dropped_reason");
        assert_true(has ? json_is_null(why) : json_is_string(why));
        assert_true(jint(c, "ts_ms") >= FROM_MS && jint(c, "ts_ms") < TO_MS);
        if (i) {
            json_t *prev = json_array_get(env.all, i - 1);
            assert_true(jint(prev, "ts_ms") >= jint(c, "ts_ms"));
            for (size_t j = 0; j < i; j++) assert_string_not_equal(jstr(json_array_get(env.all, j), "id"), jstr(c, "id"));
        }
        char url[256];
        snprintf(url, sizeof url, "/api/v1/calls/%s", jstr(c, "id"));
        json_t *one = http_get_json(env.port, url, 200);
        assert_true(json_equal(one, c));
        json_decref(one);
    }
    /* default limit is 100 (the capture has fewer calls); limit=3 gives 3 and a cursor */
    json_t *doc = http_get_json(env.port, "/api/v1/calls?" WINDOW "&limit=3", 200);
    assert_int_equal(json_array_size(json_object_get(doc, "calls")), 3);
    assert_true(json_is_string(json_object_get(doc, "next_cursor")));
    assert_true(jint(doc, "scanned") >= 3);
    json_decref(doc);
}

static int keep_error(const json_t *c, const void *arg) { return jbool(c, "error"); }
static int keep_min_duration(const json_t *c, const void *arg) { return jint(c, "duration_ms") >= *(const int *)arg; }
static int keep_range(const json_t *c, const void *arg)
{
    const int *r = arg;
    return jint(c, "duration_ms") >= r[0] && jint(c, "duration_ms") <= r[1];
}
static int keep_method(const json_t *c, const void *arg) { return strcasestr(jstr(c, "method"), arg) != NULL; }

/* Every filter, checked against the full list. */
static void test_filters(void **state)
{
    json_t *first = json_array_get(env.all, 0);
    char url[2048];
    /* exact names */
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=1000&namespace=%s&service=%s&pod=%s", env.cap.ns,
             jstr(first, "service"), env.cap.pod);
    assert_int_equal(page_count(url), env.n);
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=1000&namespace=%s-x", env.cap.ns);
    assert_int_equal(page_count(url), 0);
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=1000&pod=%.3s", env.cap.pod); /* exact, not prefix */
    assert_int_equal(page_count(url), 0);
    /* duration: no unit = seconds; ms; ranges */
    int min = 500;
    assert_int_equal(page_count("/api/v1/calls?" WINDOW "&limit=1000&duration=%3E%3D500ms"),
                     count_where(keep_min_duration, &min));
    assert_int_equal(page_count("/api/v1/calls?" WINDOW "&limit=1000&duration=0.5"), count_where(keep_min_duration, &min));
    min = 1000;
    assert_int_equal(page_count("/api/v1/calls?" WINDOW "&limit=1000&duration=%3E1"), count_where(keep_min_duration, &min));
    int range[2] = {20, 200};
    assert_int_equal(page_count("/api/v1/calls?" WINDOW "&limit=1000&duration=200ms..20ms"), count_where(keep_range, range));
    range[0] = 0;
    range[1] = 100;
    assert_int_equal(page_count("/api/v1/calls?" WINDOW "&limit=1000&duration=%3C%3D100ms"), count_where(keep_range, range));
    /* error only */
    assert_int_equal(page_count("/api/v1/calls?" WINDOW "&limit=1000&error=true"), count_where(keep_error, NULL));
    assert_int_equal(page_count("/api/v1/calls?" WINDOW "&limit=1000&error=false"), env.n);
    /* method: case-insensitive substring of the slowest call's method */
    json_t *slow = call_with_max("duration_ms", 0);
    const char *m = jstr(slow, "method");
    const char *dot = strrchr(m, '.');
    char part[64];
    snprintf(part, sizeof part, "%.8s", dot ? dot + 1 : m);
    for (char *p = part; *p; p++) *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
    size_t want = count_where(keep_method, part);
    assert_true(want >= 1);
    cp_buf enc;
    cp_buf_init(&enc);
    for (const char *p = part; *p; p++) /* percent-encode everything but alphanumerics */
        if ((*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')) cp_buf_putc(&enc, (uint8_t)*p);
        else cp_buf_printf(&enc, "%%%02X", (unsigned char)*p);
    cp_buf_putc(&enc, 0);
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=1000&method=%s", (char *)enc.data);
    assert_int_equal(page_count(url), want);
    /* q: the same word as a search term matches at least those calls; required + excluded */
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=1000&q=%%2B%s", (char *)enc.data);
    assert_true(page_count(url) >= want);
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=1000&q=-%s", (char *)enc.data);
    assert_true(page_count(url) <= env.n - want);
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=1000&q=%%24method%%3D%s", (char *)enc.data);
    assert_int_equal(page_count(url), want);
    /* q on the thread name is not a field of the search syntax; the pod name is */
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=1000&q=%%24node.name%%3D%s", env.cap.pod);
    assert_int_equal(page_count(url), env.n);
    assert_int_equal(page_count("/api/v1/calls?" WINDOW "&limit=1000&q=%20%20"), env.n); /* blank: everything */
    cp_buf_free(&enc);
    /* the window: [from, to) around the newest call */
    json_int_t ts = jint(first, "ts_ms");
    snprintf(url, sizeof url, "/api/v1/calls?from=%lld&to=%lld&limit=1000", (long long)ts, (long long)ts + 1);
    json_t *doc = http_get_json(env.port, url, 200);
    json_t *c;
    size_t i;
    json_array_foreach(json_object_get(doc, "calls"), i, c) assert_int_equal(jint(c, "ts_ms"), ts);
    assert_true(json_array_size(json_object_get(doc, "calls")) >= 1);
    json_decref(doc);
    snprintf(url, sizeof url, "/api/v1/calls?from=%lld&to=%lld&limit=1000", (long long)ts + 1, (long long)TO_MS);
    assert_int_equal(page_count(url), 0);
    /* a combination: the pod and the slowest call's duration as the floor */
    min = (int)jint(slow, "duration_ms");
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=1000&duration=%dms&pod=%s", min, env.cap.pod);
    assert_int_equal(page_count(url), count_where(keep_min_duration, &min));
}

/* Ordering of the API: column in its direction, then ts desc, then the ref desc. */
typedef struct sort_spec {
    const char *field;
    int text;
    int desc;
} sort_spec;

static int ref_cmp_desc(const json_t *a, const json_t *b)
{
    cp_call_ref ra, rb;
    assert_int_equal(cp_call_id_parse(jstr(a, "id"), strlen(jstr(a, "id")), &ra), CP_OK);
    assert_int_equal(cp_call_id_parse(jstr(b, "id"), strlen(jstr(b, "id")), &rb), CP_OK);
    if (ra.ts_ms != rb.ts_ms) return ra.ts_ms > rb.ts_ms ? -1 : 1;
    if (ra.restart_ms != rb.restart_ms) return ra.restart_ms > rb.restart_ms ? -1 : 1;
    if (ra.pod_hash != rb.pod_hash) return ra.pod_hash > rb.pod_hash ? -1 : 1;
    if (ra.trace_file_index != rb.trace_file_index) return ra.trace_file_index > rb.trace_file_index ? -1 : 1;
    if (ra.buffer_offset != rb.buffer_offset) return ra.buffer_offset > rb.buffer_offset ? -1 : 1;
    if (ra.record_index != rb.record_index) return ra.record_index > rb.record_index ? -1 : 1;
    return 0;
}

/* <0 if a comes first. */
static int sort_cmp(const json_t *a, const json_t *b, const sort_spec *s)
{
    int c;
    if (s->text) {
        c = strcmp(jstr(a, s->field), jstr(b, s->field));
    } else {
        json_t *va = json_object_get(a, s->field), *vb = json_object_get(b, s->field);
        long long x = json_is_boolean(va) ? json_is_true(va) : json_integer_value(va);
        long long y = json_is_boolean(vb) ? json_is_true(vb) : json_integer_value(vb);
        c = x < y ? -1 : x > y;
    }
    if (c) return s->desc ? -c : c;
    return ref_cmp_desc(a, b);
}

static void check_sorted(const json_t *calls, const sort_spec *s, const char *what)
{
    for (size_t i = 1; i < json_array_size(calls); i++)
        if (sort_cmp(json_array_get(calls, i - 1), json_array_get(calls, i), s) > 0)
            fail_msg("%s: rows %zu and %zu are out of order", what, i - 1, i);
}

static void test_sorting(void **state)
{
    const struct {
        const char *param;
        sort_spec spec;
    } cases[] = {
        {"-duration_ms", {"duration_ms", 0, 1}}, {"duration_ms", {"duration_ms", 0, 0}},
        {"-duration", {"duration_ms", 0, 1}},    {"%2Bduration", {"duration_ms", 0, 0}},
        {"+duration", {"duration_ms", 0, 0}}, /* an unencoded '+' arrives as a space */
        {"ts", {"ts_ms", 0, 0}},                 {"-ts_ms", {"ts_ms", 0, 1}},
        {"-cpu_time", {"cpu_time", 0, 1}},       {"calls", {"calls", 0, 0}},
        {"-calls", {"calls", 0, 1}},             {"method", {"method", 1, 0}},
        {"-method", {"method", 1, 1}},           {"thread", {"thread", 1, 0}},
        {"-memory_used", {"memory_used", 0, 1}}, {"-file_read", {"file_read", 0, 1}},
    };
    for (size_t k = 0; k < CP_ARRAY_LEN(cases); k++) {
        char url[512];
        snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=1000&sort=%s", cases[k].param);
        json_t *doc = http_get_json(env.port, url, 200);
        json_t *calls = json_object_get(doc, "calls");
        assert_int_equal(json_array_size(calls), env.n);
        check_sorted(calls, &cases[k].spec, cases[k].param);
        json_decref(doc);
    }
}

/* Paging with the cursor visits every call exactly once, in the order of one big page. */
static void check_paging(const char *sort, size_t limit)
{
    char path[512], full[512];
    snprintf(path, sizeof path, "/api/v1/calls?" WINDOW "&sort=%s&limit=%zu", sort, limit);
    snprintf(full, sizeof full, "/api/v1/calls?" WINDOW "&sort=%s&limit=1000", sort);
    size_t pages;
    json_t *paged = fetch_all_pages(env.port, path, &pages);
    json_t *one = http_get_json(env.port, full, 200);
    json_t *want = json_object_get(one, "calls");
    assert_int_equal(json_array_size(paged), env.n);
    assert_int_equal(pages, (env.n + limit - 1) / limit); /* the last page has no cursor */
    for (size_t i = 0; i < env.n; i++)
        if (strcmp(jstr(json_array_get(paged, i), "id"), jstr(json_array_get(want, i), "id")))
            fail_msg("sort %s limit %zu: row %zu differs from the single page", sort, limit, i);
    json_decref(paged);
    json_decref(one);
}

static void test_paging(void **state)
{
    check_paging("-ts_ms", 7);
    check_paging("-duration_ms", 4);
    check_paging("method", 5);
    check_paging("-calls", 1);
    check_paging("cpu_time", env.n); /* exactly one full page */
}

/* Every bad request gets its status and code; nothing else is affected. */
static void test_errors(void **state)
{
    int p = env.port;
    char q1001[1100], url[2200], big_name[1200];
    memset(q1001, 'a', 1001);
    q1001[1001] = 0;
    memset(big_name, 'n', 1100);
    big_name[1100] = 0;
    const char *id0 = jstr(json_array_get(env.all, 0), "id");

    expect_error(p, "/api/v1/nope", 404, "not_found", NULL);
    expect_error(p, "/api", 404, "not_found", NULL); /* "/" is the web UI (ui_serve_test) */
    expect_error(p, "/api/v1/calls/x/y/z", 404, "not_found", NULL);
    expect_error(p, "/api/v1/calls/" "1-2-3-4-5-0000000000000000" "/nope", 404, "not_found", NULL);
    expect_error_req(p, "DELETE", "/api/v1/calls", NULL, 0, 405, "method_not_allowed", NULL);
    expect_error_req(p, "POST", "/api/v1/calls", "{}", 2, 405, "method_not_allowed", NULL);
    expect_error_req(p, "PUT", "/api/v1/tree", "{}", 2, 405, "method_not_allowed", NULL);

    expect_error(p, "/api/v1/calls?from=abc&to=5", 400, "bad_parameter", "from");
    expect_error(p, "/api/v1/calls?from=1&to=-5", 400, "bad_parameter", "to");
    expect_error(p, "/api/v1/calls?from=10&to=5", 400, "bad_range", "from");
    expect_error(p, "/api/v1/calls?from=10&to=10", 400, "bad_range", "from");
    expect_error(p, "/api/v1/calls?from=0&to=1690400000000", 400, "span_too_large", "to");
    expect_error(p, "/api/v1/calls?" WINDOW "&limit=0", 400, "bad_parameter", "limit");
    expect_error(p, "/api/v1/calls?" WINDOW "&limit=ten", 400, "bad_parameter", "limit");
    expect_error(p, "/api/v1/calls?" WINDOW "&limit=1001", 400, "limit_too_large", "limit");
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&q=%s", q1001);
    expect_error(p, url, 400, "query_too_long", "q");
    expect_error(p, "/api/v1/calls?" WINDOW "&q=%22unterminated", 400, "bad_parameter", "q");
    expect_error(p, "/api/v1/calls?" WINDOW "&duration=abc", 400, "bad_parameter", "duration");
    expect_error(p, "/api/v1/calls?" WINDOW "&duration=5m", 400, "bad_parameter", "duration");
    expect_error(p, "/api/v1/calls?" WINDOW "&duration=1..", 400, "bad_parameter", "duration");
    expect_error(p, "/api/v1/calls?" WINDOW "&sort=nope", 400, "bad_parameter", "sort");
    expect_error(p, "/api/v1/calls?" WINDOW "&sort=--ts", 400, "bad_parameter", "sort");
    expect_error(p, "/api/v1/calls?" WINDOW "&error=maybe", 400, "bad_parameter", "error");
    expect_error(p, "/api/v1/calls?" WINDOW "&foo=1", 400, "unknown_parameter", "foo");
    expect_error(p, "/api/v1/calls?" WINDOW "&limit=5&limit=6", 400, "duplicate_parameter", "limit");
    expect_error(p, "/api/v1/calls?" WINDOW "&pod=a%00b", 400, "bad_parameter", "pod");
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&namespace=%s", big_name);
    expect_error(p, url, 400, "parameter_too_long", "namespace");
    expect_error(p, "/api/v1/calls?" WINDOW "&cursor=%21%21notacursor", 400, "bad_cursor", "cursor");
    expect_error(p, "/api/v1/calls?" WINDOW "&columns=5", 400, "unknown_parameter", "columns");
    expect_error(p, "/api/v1/calls.csv?" WINDOW "&limit=5", 400, "unknown_parameter", "limit");
    expect_error(p, "/api/v1/calls.csv?from=5&to=1", 400, "bad_range", "from");
    expect_error(p, "/api/v1/calls/stats?" WINDOW "&columns=0", 400, "bad_parameter", "columns");
    expect_error(p, "/api/v1/calls/stats?" WINDOW "&columns=5001", 400, "bad_parameter", "columns");
    expect_error(p, "/api/v1/calls/stats?" WINDOW "&sort=ts", 400, "unknown_parameter", "sort");
    expect_error(p, "/api/v1/services?" WINDOW "&pod=x", 400, "unknown_parameter", "pod");
    expect_error(p, "/api/v1/services?from=0&to=1690400000000", 400, "span_too_large", "to");
    expect_error(p, "/api/v1/health?x=1", 400, "unknown_parameter", "x");

    /* ids */
    expect_error(p, "/api/v1/calls/garbage", 400, "bad_id", NULL);
    expect_error(p, "/api/v1/calls/1-2-3-4-5-0000000000000000", 404, "call_not_found", NULL);
    expect_error(p, "/api/v1/calls/1-2-3-4-5-0000000000000000/tree", 404, "call_not_found", NULL);
    expect_error(p, "/api/v1/calls/1-2-3-4-5-0000000000000000/trace", 404, "call_not_found", NULL);
    expect_error(p, "/api/v1/calls/garbage/tree", 400, "bad_id", NULL);
    expect_error(p, "/api/v1/calls/garbage/trace", 400, "bad_id", NULL);
    expect_error(p, "/api/v1/tree", 400, "bad_parameter", "ids");
    expect_error(p, "/api/v1/tree?ids=garbage", 400, "bad_id", "ids");
    snprintf(url, sizeof url, "/api/v1/tree?ids=%s,", id0);
    expect_error(p, url, 400, "bad_id", "ids");
    snprintf(url, sizeof url, "/api/v1/tree?ids=%s,1-2-3-4-5-0000000000000000", id0);
    expect_error(p, url, 404, "call_not_found", NULL);
    expect_error(p, "/api/v1/tree?idz=1", 400, "unknown_parameter", "idz");

    /* POST /tree bodies */
    const char *bodies[] = {"not json", "[]", "{\"ids\":[]}", "{\"ids\":\"x\"}", "{\"ids\":[1]}",
                            "{\"ids\":[\"garbage\"]}", "{\"ids\":[\"a\"],\"more\":1}", "{\"ids\":[\"a\"],\"ids\":[\"b\"]}"};
    for (size_t i = 0; i < CP_ARRAY_LEN(bodies); i++) {
        int st;
        cp_buf b;
        cp_buf_init(&b);
        assert_int_equal(http_post(p, "/api/v1/tree", NULL, bodies[i], strlen(bodies[i]), &st, &b, NULL), 0);
        if (st != 400) fail_msg("POST /tree %s: status %d", bodies[i], st);
        cp_buf_free(&b);
    }
    size_t big = 2u << 20;
    char *huge = malloc(big);
    memset(huge, ' ', big);
    expect_error_req(p, "POST", "/api/v1/tree", huge, big, 413, "body_too_large", NULL);
    free(huge);
    /* too many ids (max_tree_calls = 1000 by default) */
    cp_buf ids;
    cp_buf_init(&ids);
    cp_buf_puts(&ids, "/api/v1/tree?ids=");
    for (int i = 0; i < 1001; i++) cp_buf_printf(&ids, "%s%d-2-3-4-5-0000000000000000", i ? "," : "", i);
    cp_buf_putc(&ids, 0);
    expect_error(p, (const char *)ids.data, 400, "too_many_ids", "ids");
    cp_buf_free(&ids);

    /* malformed HTTP does not disturb the server */
    cp_buf raw;
    cp_buf_init(&raw);
    const char *garbage = "GARBAGE\r\n\r\n";
    assert_int_equal(http_raw(p, garbage, strlen(garbage), &raw), 0);
    /* a request cut by the client's FIN (arriving with the last bytes): the server must
     * notice the end and close at once, not at its idle timeout (epoll regression) */
    const char *half = "GET /api/v1/calls?from=1 HTTP/1.1\r\nHost: x\r\n";
    for (int i = 0; i < 20; i++) {
        uint64_t t0 = cp_mono_ns();
        assert_int_equal(http_raw(p, half, strlen(half), &raw), 0);
        assert_true(cp_mono_ns() - t0 < 5000000000ull);
    }
    cp_buf_free(&raw);
    json_decref(http_get_json(p, "/api/v1/health", 200));
}

/* Cursors: issued for one set of filters and sort only. */
static void test_cursor_rules(void **state)
{
    json_t *doc = http_get_json(env.port, "/api/v1/calls?" WINDOW "&limit=2&sort=-duration_ms", 200);
    const char *cur = jstr(doc, "next_cursor");
    char url[2048];
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=2&sort=-duration_ms&cursor=%s", cur);
    json_decref(http_get_json(env.port, url, 200));
    /* the limit may change between pages */
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=3&sort=-duration_ms&cursor=%s", cur);
    json_decref(http_get_json(env.port, url, 200));
    const char *others[] = {"from=1690000000001&to=1690400000000&sort=-duration_ms", WINDOW "&sort=duration_ms",
                            WINDOW "&sort=-duration_ms&error=true", WINDOW "&sort=-duration_ms&duration=1ms",
                            WINDOW "&sort=-duration_ms&q=x", WINDOW "&sort=-duration_ms&method=x",
                            WINDOW "&sort=-duration_ms&pod=x"};
    for (size_t i = 0; i < CP_ARRAY_LEN(others); i++) {
        snprintf(url, sizeof url, "/api/v1/calls?%s&cursor=%s", others[i], cur);
        expect_error(env.port, url, 400, "cursor_mismatch", "cursor");
    }
    /* a cut or altered cursor */
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&sort=-duration_ms&cursor=%.10s", cur);
    int st;
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(http_get(env.port, url, &st, &b, NULL), 0);
    assert_int_equal(st, 400);
    cp_buf_free(&b);
    json_decref(doc);
}

/* Splits one CSV record (';', '"' quoting) into fields; returns the count. */
static size_t csv_split(const char *line, char fields[][4096], size_t max)
{
    size_t n = 0, k = 0;
    int quoted = 0;
    const char *p = line;
    fields[0][0] = 0;
    for (; *p; p++) {
        if (quoted) {
            if (*p == '"' && p[1] == '"') fields[n][k++] = '"', p++;
            else if (*p == '"') quoted = 0;
            else fields[n][k++] = *p;
        } else if (*p == '"') {
            quoted = 1;
        } else if (*p == ';') {
            fields[n][k] = 0;
            if (++n >= max) return n;
            k = 0;
        } else {
            fields[n][k++] = *p;
        }
        if (k >= 4095) k = 4094;
    }
    fields[n][k] = 0;
    return n + 1;
}

/* Splits a CSV text (NUL-terminated, modified) into records: newlines inside quotes
 * belong to the field. Returns the count. */
static size_t csv_records(char *text, char **recs, size_t max)
{
    size_t nrec = 0;
    int quoted = 0;
    if (*text) recs[nrec++] = text;
    for (char *p = text; *p; p++) {
        if (*p == '"') quoted = !quoted;
        if (*p == '\n' && !quoted) {
            *p = 0;
            if (p[1] && nrec < max) recs[nrec++] = p + 1;
        }
    }
    return nrec;
}

static void test_csv(void **state)
{
    int st;
    cp_buf b, h;
    cp_buf_init(&b);
    cp_buf_init(&h);
    assert_int_equal(http_get(env.port, "/api/v1/calls.csv?" WINDOW "&sort=-duration_ms", &st, &b, &h), 0);
    assert_int_equal(st, 200);
    char v[256];
    assert_true(http_header(&h, "Content-Type", v, sizeof v));
    assert_string_equal(v, "text/csv; charset=utf-8");
    assert_true(http_header(&h, "Content-Disposition", v, sizeof v));
    assert_string_equal(v, "attachment; filename=\"calls_1690000000000_1690400000000.csv\"");
    /* records (a quoted field may hold a newline: split on unquoted ones) */
    cp_buf_putc(&b, 0);
    static char *recs[4096];
    size_t nrec = csv_records((char *)b.data, recs, 4096);
    assert_string_equal(recs[0], "Start (UTC);Duration (ms);CPU (ms);Suspended (ms);Queue (ms);Calls;Transactions;"
                                 "Disk read (B);Disk written (B);Memory (B);Logs generated;Logs written (B);"
                                 "Net read (B);Net written (B);Namespace;Service;Pod;Method;Thread;Title;Params (JSON);Id");
    assert_int_equal(nrec - 1, env.n);
    json_t *one = http_get_json(env.port, "/api/v1/calls?" WINDOW "&sort=-duration_ms&limit=1000", 200);
    json_t *calls = json_object_get(one, "calls");
    static char f[24][4096];
    for (size_t i = 1; i < nrec; i++) {
        json_t *c = json_array_get(calls, i - 1);
        assert_int_equal(csv_split(recs[i], f, 24), 22);
        assert_string_equal(f[21], jstr(c, "id"));
        assert_int_equal(atoll(f[1]), jint(c, "duration_ms"));
        assert_int_equal(atoll(f[2]), jint(c, "cpu_time"));
        assert_int_equal(atoll(f[5]), jint(c, "calls"));
        assert_int_equal(atoll(f[9]), jint(c, "memory_used"));
        assert_string_equal(f[14], jstr(c, "namespace"));
        assert_string_equal(f[16], jstr(c, "pod"));
        assert_string_equal(f[17], jstr(c, "method"));
        assert_string_equal(f[18], jstr(c, "thread"));
        json_t *params = json_loads(f[20], 0, NULL);
        assert_non_null(params);
        assert_true(json_equal(params, json_object_get(c, "params")));
        json_decref(params);
        /* Title (ui.md §3.3): profiler.title, else the web request, else Class.method */
        const char *given = json_string_value(json_array_get(json_object_get(json_object_get(c, "params"), "profiler.title"), 0));
        const char *url = json_string_value(json_array_get(json_object_get(json_object_get(c, "params"), "web.url"), 0));
        if (given && *given) assert_string_equal(f[19], given);
        else if (url && *url) assert_non_null(strstr(f[19], strstr(url, "://") ? strchr(strstr(url, "://") + 3, '/') : url));
        else {
            const char *m = jstr(c, "method"), *paren = strchr(m, '(');
            const char *dot = paren;
            while (dot > m && dot[-1] != '.') dot--; /* the method name */
            assert_true(strlen(f[19]) > 0 && strstr(f[19], "."));
            assert_int_equal(strncmp(strchr(f[19], '.') + 1, dot, (size_t)(paren - dot)), 0);
        }
        /* Start (UTC) */
        time_t t = (time_t)(jint(c, "ts_ms") / 1000);
        struct tm tm;
        gmtime_r(&t, &tm);
        char when[96];
        snprintf(when, sizeof when, "%04d-%02d-%02d %02d:%02d:%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1,
                 tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(jint(c, "ts_ms") % 1000));
        assert_string_equal(f[0], when);
        /* quoting: a field with ';' or '"' is quoted in the raw record */
        if (strchr(f[20], '"')) assert_non_null(strstr(recs[i], ";\"{"));
    }
    json_decref(one);
    /* a filter applies to the export too */
    assert_int_equal(http_get(env.port, "/api/v1/calls.csv?" WINDOW "&error=true", &st, &b, NULL), 0);
    cp_buf_putc(&b, 0);
    assert_int_equal(csv_records((char *)b.data, recs, 4096) - 1, count_where(keep_error, NULL));
    cp_buf_free(&b);
    cp_buf_free(&h);
}

static void test_stats(void **state)
{
    json_t *doc = http_get_json(env.port, "/api/v1/calls/stats?" WINDOW, 200);
    assert_int_equal(jint(doc, "total"), (json_int_t)env.n);
    long long sd = 0, ss = 0, sq = 0, st = 0;
    json_t *c;
    size_t i;
    json_array_foreach(env.all, i, c) {
        sd += jint(c, "duration_ms");
        ss += jint(c, "suspend_ms");
        sq += jint(c, "queue_wait_ms");
        st += jint(c, "transactions");
    }
    assert_int_equal(jint(doc, "sum_duration_ms"), sd);
    assert_int_equal(jint(doc, "sum_suspend_ms"), ss);
    assert_int_equal(jint(doc, "sum_queue_wait_ms"), sq);
    assert_int_equal(jint(doc, "sum_transactions"), st);
    json_t *pts = json_object_get(doc, "points");
    assert_true(json_array_size(pts) <= 5000);
    assert_true(json_array_size(pts) >= 1);
    json_t *p;
    json_array_foreach(pts, i, p) {
        char url[256];
        snprintf(url, sizeof url, "/api/v1/calls/%s", jstr(p, "id"));
        json_t *one = http_get_json(env.port, url, 200);
        assert_int_equal(jint(one, "ts_ms"), jint(p, "ts_ms"));
        assert_int_equal(jint(one, "duration_ms"), jint(p, "duration_ms"));
        assert_int_equal(jint(one, "calls"), jint(p, "calls"));
        json_decref(one);
    }
    json_decref(doc);
    /* one column: the 5 slowest calls */
    doc = http_get_json(env.port, "/api/v1/calls/stats?" WINDOW "&columns=1&error=false", 200);
    pts = json_object_get(doc, "points");
    assert_int_equal(json_array_size(pts), env.n < 5 ? env.n : 5);
    assert_int_equal(jbool(doc, "sampled"), env.n > 5);
    json_int_t slowest = jint(call_with_max("duration_ms", 0), "duration_ms");
    json_int_t best = 0;
    json_array_foreach(pts, i, p) if (jint(p, "duration_ms") > best) best = jint(p, "duration_ms");
    assert_int_equal(best, slowest);
    json_decref(doc);
}

/* Tree of one call: the root is the call's method and its total is the call's duration. */
static void test_tree_one(void **state)
{
    json_t *c = call_with_max("calls", 1);
    char url[256];
    snprintf(url, sizeof url, "/api/v1/calls/%s/tree", jstr(c, "id"));
    json_t *t = http_get_json(env.port, url, 200);
    assert_int_equal(jint(t, "version"), 1);
    json_t *methods = json_object_get(t, "methods");
    json_t *root = json_object_get(t, "root");
    assert_string_equal(json_string_value(json_array_get(methods, (size_t)jint(root, "method"))), jstr(c, "method"));
    assert_int_equal(jint(root, "total"), jint(c, "duration_ms"));
    assert_int_equal(jint(root, "invocations"), 1);
    assert_true(json_array_size(json_object_get(root, "children")) > 0 || jint(c, "calls") <= 1);
    json_t *calls = json_object_get(t, "calls");
    assert_int_equal(json_array_size(calls), 1);
    assert_true(json_equal(json_array_get(calls, 0), c));
    assert_false(jbool(t, "truncated"));
    json_decref(t);
}

/* Two calls merged: GET and POST give the same tree, rooted at "2 calls". */
static void test_tree_merged(void **state)
{
    json_t *a = NULL, *b = NULL, *c;
    size_t i;
    json_array_foreach(env.all, i, c) {
        if (!jbool(c, "trace_available")) continue;
        if (!a) a = c;
        else if (!b) b = c;
    }
    if (!b) fail_msg("the capture needs two calls with traces");
    char url[512];
    snprintf(url, sizeof url, "/api/v1/tree?ids=%s,%s", jstr(a, "id"), jstr(b, "id"));
    json_t *t = http_get_json(env.port, url, 200);
    json_t *root = json_object_get(t, "root");
    json_t *methods = json_object_get(t, "methods");
    assert_string_equal(json_string_value(json_array_get(methods, (size_t)jint(root, "method"))), "2 calls");
    assert_int_equal(jint(root, "total"), jint(a, "duration_ms") + jint(b, "duration_ms"));
    assert_int_equal(json_array_size(json_object_get(t, "calls")), 2);
    /* POST, and a duplicate id counts once */
    char body[512];
    int n = snprintf(body, sizeof body, "{\"ids\":[\"%s\",\"%s\",\"%s\"]}", jstr(a, "id"), jstr(b, "id"), jstr(a, "id"));
    int st;
    cp_buf out;
    cp_buf_init(&out);
    assert_int_equal(http_post(env.port, "/api/v1/tree", "application/json", body, (size_t)n, &st, &out, NULL), 0);
    assert_int_equal(st, 200);
    json_t *t2 = json_loadb((const char *)out.data, out.len, 0, NULL);
    assert_non_null(t2);
    assert_true(json_equal(t, t2));
    json_decref(t2);
    json_decref(t);
    cp_buf_free(&out);
    /* one id through /tree equals /calls/{id}/tree */
    snprintf(url, sizeof url, "/api/v1/tree?ids=%s", jstr(a, "id"));
    t = http_get_json(env.port, url, 200);
    snprintf(url, sizeof url, "/api/v1/calls/%s/tree", jstr(a, "id"));
    t2 = http_get_json(env.port, url, 200);
    assert_true(json_equal(t, t2));
    json_decref(t);
    json_decref(t2);
}

/* The aggregate profile of the capture's calls equals the merged tree of the same ids
 * (in the same order, newest first); max_calls cuts it; bad parameters are 400s. */
static void test_profile(void **state)
{
    json_t *p = http_get_json(env.port, "/api/v1/profile?" WINDOW, 200);
    json_t *info = json_object_get(p, "profile");
    size_t traced = 0, i;
    json_t *c;
    cp_buf body;
    cp_buf_init(&body);
    cp_buf_puts(&body, "{\"ids\":[");
    json_array_foreach(env.all, i, c) {
        traced += jbool(c, "trace_available") != 0;
        cp_buf_printf(&body, "%s\"%s\"", i ? "," : "", jstr(c, "id"));
    }
    cp_buf_puts(&body, "]}");
    assert_int_equal(jint(info, "matched"), env.n);
    assert_int_equal(jint(info, "merged"), traced);
    assert_int_equal(jint(info, "without_trace"), env.n - traced);
    assert_true(json_is_null(json_object_get(info, "stopped")));
    assert_int_equal(json_array_size(json_object_get(p, "calls")), 0);
    int st;
    cp_buf out;
    cp_buf_init(&out);
    assert_int_equal(http_post(env.port, "/api/v1/tree", "application/json", body.data, body.len, &st, &out, NULL), 0);
    assert_int_equal(st, 200);
    json_t *t = json_loadb((const char *)out.data, out.len, 0, NULL);
    assert_non_null(t);
    const char *same[] = {"root", "methods", "params", "nodes", "truncated", "start_ms", "end_ms"};
    for (size_t k = 0; k < CP_ARRAY_LEN(same); k++)
        if (!json_equal(json_object_get(p, same[k]), json_object_get(t, same[k])))
            fail_msg("the profile's %s differs from the merged tree's", same[k]);
    json_decref(t);
    json_decref(p);
    cp_buf_free(&out);
    cp_buf_free(&body);
    cp_buf_init(&out);

    /* max_calls: the newest calls only, and the reason */
    p = http_get_json(env.port, "/api/v1/profile?" WINDOW "&max_calls=3", 200);
    info = json_object_get(p, "profile");
    assert_int_equal(jint(info, "matched"), 3);
    assert_int_equal(jint(info, "merged") + jint(info, "without_trace"), 3);
    assert_string_equal(jstr(info, "stopped"), "max_calls");
    json_decref(p);
    /* a filter: the slow calls only */
    p = http_get_json(env.port, "/api/v1/profile?" WINDOW "&duration=100ms", 200);
    int slow = 100;
    assert_int_equal(jint(json_object_get(p, "profile"), "matched"), count_where(keep_min_duration, &slow));
    json_decref(p);
    /* stream=1: progress lines (the search's, then the merge's with how many calls it
     * merges), and last the same answer as without it */
    p = http_get_json(env.port, "/api/v1/profile?" WINDOW, 200);
    assert_int_equal(http_get(env.port, "/api/v1/profile?" WINDOW "&stream=1", &st, &out, NULL), 0);
    assert_int_equal(st, 200);
    size_t merge_lines = 0, lines = 0;
    json_t *result = NULL;
    for (size_t off = 0; off < out.len;) {
        const uint8_t *nl = memchr(out.data + off, '\n', out.len - off);
        assert_non_null(nl);
        size_t len = (size_t)(nl - (out.data + off));
        json_t *line = json_loadb((const char *)out.data + off, len, 0, NULL);
        assert_non_null(line);
        lines++;
        json_t *pr = json_object_get(line, "progress");
        if (pr && json_object_get(pr, "phase")) {
            assert_string_equal(jstr(pr, "phase"), "merge");
            assert_int_equal(jint(pr, "to_merge"), env.n);
            assert_true(jint(pr, "merged") <= (json_int_t)env.n);
            merge_lines++;
        } else if (!pr) {
            assert_null(result); /* one result, last */
            assert_true(nl + 1 == out.data + out.len);
            result = json_incref(json_object_get(line, "result"));
            assert_non_null(result);
        }
        json_decref(line);
        off = len + 1 + off;
    }
    assert_true(lines >= 3);
    assert_true(merge_lines >= 1);
    assert_non_null(result);
    if (!json_equal(result, p)) fail_msg("the streamed profile differs from the plain answer");
    json_decref(result);
    json_decref(p);
    cp_buf_reset(&out);
    /* errors before the stream: JSON as usual; after: the error line */
    expect_error(env.port, "/api/v1/profile?" WINDOW "&stream=1&max_calls=0", 400, "bad_parameter", "max_calls");
    assert_int_equal(http_get(env.port, "/api/v1/profile?" WINDOW "&stream=1&namespace=nobody-here", &st, &out, NULL),
                     0);
    assert_int_equal(st, 200);
    assert_non_null(strstr((const char *)out.data, "{\"error\":{\"status\":404,\"error\":\"no_calls\""));
    cp_buf_free(&out);

    expect_error(env.port, "/api/v1/profile?" WINDOW "&namespace=nobody-here", 404, "no_calls", NULL);
    expect_error(env.port, "/api/v1/profile?" WINDOW "&max_calls=0", 400, "bad_parameter", "max_calls");
    expect_error(env.port, "/api/v1/profile?" WINDOW "&max_calls=x", 400, "bad_parameter", "max_calls");
    expect_error(env.port, "/api/v1/profile?" WINDOW "&sort=-ts", 400, "unknown_parameter", "sort");
}

/* The raw trace: an attachment that decodes as a trace file. */
/* Counts the TAG events that reference a value of the sql stream (paramType 3). */
static int count_sql_tag(void *ud, const cp_trace_rec *r)
{
    if (r->type == CP_TRACE_TAG && r->param_type == 3) ++*(size_t *)ud;
    return 0;
}

static size_t sql_tags(const uint8_t *p, size_t n)
{
    size_t tags = 0;
    cp_dec_sink sink = {.ud = &tags, .on_trace = count_sql_tag};
    cp_dec *d = cp_dec_new(CP_STREAM_TRACE, NULL, &sink, 0);
    assert_non_null(d);
    int st = cp_dec_feed(d, p, n);
    if (st == CP_OK) st = cp_dec_finish(d);
    assert_true(st >= 0);
    cp_dec_free(d);
    return tags;
}

/* /trace is the call's own events; its `sql` tag (ui.md §3.3) says whether one of them
 * references the sql stream, as the trace decoder sees it. */
static void test_trace(void **state)
{
    size_t checked = 0, with_sql = 0;
    json_t *c;
    size_t i;
    json_array_foreach(env.all, i, c) {
        if (!jbool(c, "trace_available")) continue;
        char url[256];
        snprintf(url, sizeof url, "/api/v1/calls/%s/trace", jstr(c, "id"));
        int st;
        cp_buf b, h;
        cp_buf_init(&b);
        cp_buf_init(&h);
        assert_int_equal(http_get(env.port, url, &st, &b, &h), 0);
        assert_int_equal(st, 200);
        char v[256];
        assert_true(http_header(&h, "Content-Type", v, sizeof v));
        assert_string_equal(v, "application/octet-stream");
        assert_true(http_header(&h, "Content-Disposition", v, sizeof v));
        assert_non_null(strstr(v, "attachment"));
        assert_non_null(strstr(v, jstr(c, "id")));
        uint64_t events = 0;
        char why[256];
        int rc = decode_file("trace", b.data, b.len, &events, why, sizeof why);
        if (rc != CP_OK) fail_msg("trace of %s does not decode: %s", jstr(c, "id"), why);
        assert_true(events >= 2); /* at least the root ENTER and EXIT */
        int ran_sql = sql_tags(b.data, b.len) > 0;
        if (jbool(c, "sql") != ran_sql) fail_msg("call %s: sql %d, its trace has sql tags: %d", jstr(c, "id"), jbool(c, "sql"), ran_sql);
        with_sql += ran_sql;
        cp_buf_free(&b);
        cp_buf_free(&h);
        checked++;
    }
    assert_true(checked > 0);
    assert_true(with_sql > 0 && with_sql < checked);
}

/* Several clients at once get the same answers as one client alone. */
typedef struct client_job {
    int port;
    const char *const *paths;
    size_t npaths;
    const cp_buf *want;
    int rounds;
    int failures;
    char what[256];
} client_job;

/* /services without its restarts' last_ms: the server sets it when a connection closes, in
 * a catalog transaction that may commit after the replay's last calls did (so after the
 * setup saw them), which is a change of the data, not of how it is answered. Compact,
 * sorted keys; "" if the body is not JSON. */
static void services_normal(const cp_buf *b, cp_buf *out)
{
    out->len = 0;
    json_t *doc = json_loadb((const char *)b->data, b->len, 0, NULL);
    size_t i, j, k, l;
    json_t *ns, *svc, *pod, *rs;
    json_array_foreach(json_object_get(doc, "namespaces"), i, ns)
        json_array_foreach(json_object_get(ns, "services"), j, svc)
            json_array_foreach(json_object_get(svc, "pods"), k, pod)
                json_array_foreach(json_object_get(pod, "restarts"), l, rs) json_object_del(rs, "last_ms");
    char *text = doc ? json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    if (text && cp_buf_append(out, text, strlen(text)) != CP_OK) out->len = 0; /* (no cmocka assert off the main thread) */
    free(text);
    json_decref(doc);
}

static int same_answer(const char *path, const cp_buf *got, const cp_buf *want)
{
    if (!strstr(path, "/services?")) return got->len == want->len && !memcmp(got->data, want->data, got->len);
    cp_buf a, b;
    cp_buf_init(&a);
    cp_buf_init(&b);
    services_normal(got, &a);
    services_normal(want, &b);
    int same = a.len > 0 && a.len == b.len && !memcmp(a.data, b.data, a.len);
    cp_buf_free(&a);
    cp_buf_free(&b);
    return same;
}

static void *client_run(void *arg)
{
    client_job *j = arg;
    cp_buf b;
    cp_buf_init(&b);
    for (int r = 0; r < j->rounds; r++)
        for (size_t i = 0; i < j->npaths; i++) {
            size_t k = (i + (size_t)r) % j->npaths;
            int st;
            if (http_get(j->port, j->paths[k], &st, &b, NULL) != 0 || st != 200 ||
                (k != 1 && k != j->npaths - 1 && !same_answer(j->paths[k], &b, &j->want[k]))) {
                if (!j->failures++) snprintf(j->what, sizeof j->what, "%s: status %d", j->paths[k], st);
            }
        }
    cp_buf_free(&b);
    return NULL;
}

static void test_concurrency(void **state)
{
    char tree[256];
    snprintf(tree, sizeof tree, "/api/v1/calls/%s/tree", jstr(call_with_max("calls", 1), "id"));
    /* every answer is deterministic except [1]'s cursor (it holds its issue time) and the
     * health, which reports the disk's free bytes (other processes write) */
    const char *paths[] = {"/api/v1/calls?" WINDOW "&limit=1000",
                           "/api/v1/calls?" WINDOW "&sort=-duration_ms&limit=5",
                           "/api/v1/calls/stats?" WINDOW,
                           "/api/v1/calls.csv?" WINDOW,
                           "/api/v1/services?" WINDOW,
                           tree,
                           "/api/v1/health"};
    size_t np = CP_ARRAY_LEN(paths);
    cp_buf want[CP_ARRAY_LEN(paths)];
    for (size_t i = 0; i < np; i++) {
        int st;
        cp_buf_init(&want[i]);
        assert_int_equal(http_get(env.port, paths[i], &st, &want[i], NULL), 0);
        assert_int_equal(st, 200);
    }
    enum { NT = 8 };
    pthread_t th[NT];
    client_job jobs[NT];
    for (int i = 0; i < NT; i++) {
        jobs[i] = (client_job){env.port, paths, np, want, 5, 0, ""};
        assert_int_equal(pthread_create(&th[i], NULL, client_run, &jobs[i]), 0);
    }
    /* every thread is joined before a failure ends the test: they use jobs[] on this stack */
    for (int i = 0; i < NT; i++) pthread_join(th[i], NULL);
    for (int i = 0; i < NT; i++)
        if (jobs[i].failures) fail_msg("client %d: %d failures, first: %s", i, jobs[i].failures, jobs[i].what);
    for (size_t i = 0; i < np; i++) cp_buf_free(&want[i]);
}

/* A second, in-process server on the live catalog with tight limits: each bound gives
 * its error (or its partial / truncated result). */
static int open_live_reader(void *ud, cp_reader **out, char *err, size_t errlen)
{
    return cp_reader_open_sqlite(ud, out, err, errlen);
}

static void test_tight_limits(void **state)
{
    char db[1200];
    snprintf(db, sizeof db, "%s/catalog.db", env.s.data);
    cp_http_config cfg;
    cp_http_config_default(&cfg);
    cfg.host = "127.0.0.1";
    cfg.port = 0;
    cfg.threads = 1;
    cfg.open_reader = open_live_reader;
    cfg.open_reader_ud = db;
    cfg.max_span_ms = 1000LL * 3600 * 24 * 5;
    cfg.max_limit = 5;
    cfg.max_scan = 3;
    cfg.max_tree_calls = 1;
    cfg.max_tree_nodes = 2;
    cfg.max_export_rows = 4;
    cp_http *h;
    char err[256];
    if (cp_http_start(&cfg, &h, err, sizeof err) != CP_OK) fail_msg("cp_http_start: %s", err);
    int p = cp_http_port(h);
    expect_error(p, "/api/v1/calls?from=1690000000000&to=1690432000001", 400, "span_too_large", "to");
    expect_error(p, "/api/v1/calls?" WINDOW "&limit=6", 400, "limit_too_large", "limit");
    json_t *doc = http_get_json(p, "/api/v1/config", 200);
    assert_int_equal(jint(json_object_get(doc, "limits"), "max_limit"), 5);
    assert_int_equal(jint(json_object_get(doc, "limits"), "default_limit"), 5);
    json_decref(doc);
    /* the scan budget: a filter that keeps few rows still examines them all */
    doc = http_get_json(p, "/api/v1/calls?" WINDOW "&limit=5&q=zzzzzz-nothing", 200);
    assert_true(jbool(doc, "partial"));
    assert_true(jint(doc, "scanned") <= 5);
    json_decref(doc);
    /* stats: a search text needs the calls, so the budget cuts it short... */
    doc = http_get_json(p, "/api/v1/calls/stats?" WINDOW "&q=zzzzzz-nothing", 200);
    assert_true(jbool(doc, "partial"));
    assert_string_equal(json_string_value(json_array_get(json_object_get(doc, "partial_reasons"), 0)), "scan_budget");
    assert_true(jint(doc, "scanned") <= 3);
    json_decref(doc);
    /* ...while the rollups answer the window (aligned to their cells) without reading a call */
    doc = http_get_json(p, "/api/v1/calls/stats?" WINDOW, 200);
    assert_false(jbool(doc, "partial"));
    assert_string_equal(jstr(doc, "source"), "rollup");
    assert_int_equal(jint(doc, "scanned"), 0);
    assert_int_equal(jint(doc, "total"), json_array_size(env.all));
    json_decref(doc);
    /* trees: two ids over max_tree_calls = 1; a real tree over 2 nodes */
    json_t *big = call_with_max("calls", 1);
    char url[512];
    snprintf(url, sizeof url, "/api/v1/tree?ids=%s,%s", jstr(big, "id"), jstr(json_array_get(env.all, 0), "id"));
    expect_error(p, url, 400, "too_many_ids", "ids");
    snprintf(url, sizeof url, "/api/v1/calls/%s/tree", jstr(big, "id"));
    if (jint(big, "calls") > 2) expect_error(p, url, 413, "tree_too_large", NULL);
    cp_http_stop(h);

    /* the export row cap, with the scan budget out of the way */
    cfg.max_scan = 0;
    if (cp_http_start(&cfg, &h, err, sizeof err) != CP_OK) fail_msg("cp_http_start: %s", err);
    p = cp_http_port(h);
    int st;
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(http_get(p, "/api/v1/calls.csv?" WINDOW, &st, &b, NULL), 0);
    assert_int_equal(st, 200);
    cp_buf_putc(&b, 0);
    static char *recs[64];
    size_t n = csv_records((char *)b.data, recs, 64);
    assert_int_equal(n, 1 + 4 + 1);
    assert_non_null(strstr(recs[5], "# truncated: the row limit was reached after 4 rows"));
    cp_buf_free(&b);
    cp_http_stop(h);
}

int main(void)
{
    const struct CMUnitTest fake[] = {
        cmocka_unit_test(test_fake_calls),
        cmocka_unit_test(test_fake_cursor_expired),
        cmocka_unit_test(test_fake_scan_budget),
        cmocka_unit_test(test_fake_reader_failures),
        cmocka_unit_test(test_fake_no_trace),
        cmocka_unit_test(test_fake_csv_cap),
        cmocka_unit_test(test_fake_stats),
        cmocka_unit_test(test_fake_services_config),
    };
    const struct CMUnitTest real[] = {
        cmocka_unit_test(test_meta),
        cmocka_unit_test(test_services),
        cmocka_unit_test(test_calls_list_and_get),
        cmocka_unit_test(test_filters),
        cmocka_unit_test(test_sorting),
        cmocka_unit_test(test_paging),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_cursor_rules),
        cmocka_unit_test(test_csv),
        cmocka_unit_test(test_stats),
        cmocka_unit_test(test_tree_one),
        cmocka_unit_test(test_tree_merged),
        cmocka_unit_test(test_profile),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_concurrency),
        cmocka_unit_test(test_tight_limits),
    };
    int failed = cmocka_run_group_tests_name("api_fake_reader", fake, NULL, NULL);
    failed += cmocka_run_group_tests_name("api_live_server", real, real_setup, real_teardown);
    return failed;
}
