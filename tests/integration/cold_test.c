/* cold_test.c -- issue 5's acceptance for the cold tier, on both storage pairs
 * (CP_TEST_BOTH_PAIRS: SQLite + directory, and PostgreSQL + S3 as cold_test@pg-s3):
 *  - the recorded conversation is replayed into `cloudprof serve`, the calls API's
 *    answers (lists in several sorts, filters, $param=value searches, every call, tree
 *    and trace) are recorded, `cloudprof compact` moves everything into Parquet, and the
 *    API gives the same answers; a $param=value search skips files by the inverted index;
 *  - every Parquet file written is read by DuckDB and by hyparquet (tests/tools/pqread.mjs)
 *    with exactly the hot tier's rows: every column, params maps and trace bytes;
 *  - compaction killed at each step and run again leaves the same answers, no duplicate
 *    and no orphan object.
 */
#include "http_util.h"
#include "pair_util.h"
#include "replay_util.h"
#include "server_util.h"

#include "query/cp_query.h"
#include "store/cp_catalog.h"
#include "store/cp_cold.h"
#include "store/cp_hot.h"
#include "store/cp_ostore.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FROM_MS 1690200000000LL
#define TO_MS 1690210000000LL
#define NCALLS 45

/* ---- the environment of one run --------------------------------------------------------- */

typedef struct env {
    test_server s;
    char *dir;
    char *catalog;
    char *store;
    const char *args[32];
} env;

static void env_start(env *e, const char *tag)
{
    test_pair_require();
    test_pair_env();
    e->dir = make_temp_dir(tag);
    e->catalog = test_catalog_spec(e->dir);
    e->store = test_store_url(e->dir);
    const char *const *pf = test_pair_flags(e->catalog, e->store);
    size_t n = 0;
    for (; pf[n]; n++) e->args[n] = pf[n];
    e->args[n++] = "--compact-every";
    e->args[n++] = "0";
    e->args[n] = NULL;
    server_start(&e->s, tag, e->args);
}

static void env_free(env *e)
{
    server_destroy(&e->s);
    remove_tree(e->dir);
    free(e->dir);
    free(e->catalog);
    free(e->store);
}

static json_t *get_json(const env *e, const char *path)
{
    cp_buf body;
    cp_buf_init(&body);
    int status = 0;
    if (http_get(e->s.http_port, path, &status, &body, NULL) != 0) server_fail(&e->s, "GET %s: no answer", path);
    if (status != 200)
        server_fail(&e->s, "GET %s: status %d, body %.*s", path, status, (int)body.len, (char *)body.data);
    json_error_t je;
    json_t *j = json_loadb((const char *)body.data, body.len, 0, &je);
    if (!j) server_fail(&e->s, "GET %s: not JSON (%s)", path, je.text);
    cp_buf_free(&body);
    return j;
}

static void get_bytes(const env *e, const char *path, cp_buf *out)
{
    int status = 0;
    if (http_get(e->s.http_port, path, &status, out, NULL) != 0 || status != 200)
        server_fail(&e->s, "GET %s: status %d", path, status);
}

/* Replays the conversation and waits until all its calls are queryable. */
static void load_conversation(env *e)
{
    replay_capture cap;
    replay_capture_parser_test(&cap);
    replay_opts o = {0};
    replay_result r;
    replay_run(e->s.port, &cap, &o, &r);
    replay_capture_free(&cap);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/calls?from=%lld&to=%lld&limit=1000", FROM_MS, TO_MS);
    for (int64_t deadline = test_now_ms() + TEST_WAIT_MS; test_now_ms() < deadline;) {
        json_t *page = get_json(e, path);
        size_t n = json_array_size(json_object_get(page, "calls"));
        json_decref(page);
        if (n == NCALLS) return;
        sleep_ms(100);
    }
    server_fail(&e->s, "the %d calls of the conversation did not all appear in %d s", NCALLS, TEST_WAIT_MS / 1000);
}

/* ---- what the API answers --------------------------------------------------------------- */

/* The answers compared before and after compaction: the body of each query with the
 * fields that describe the work done (not the data) removed. */
typedef struct answers {
    char *text[64];
    size_t n;
} answers;

static void strip_work(json_t *j)
{
    static const char *const work[] = {"scanned", "partial", "partial_reasons", "cold_files", "cold_files_skipped",
                                       "next_cursor"};
    for (size_t i = 0; i < CP_ARRAY_LEN(work); i++) json_object_del(j, work[i]);
}

/* A $name=value term that matches some calls but not all: among the params the agent
 * marked indexed (the catalog's params.param_index), the value the fewest calls have (so
 * most files lack it). */
typedef struct names {
    char v[128][128];
    size_t n;
} names;

static int on_indexed(void *ud, const char *name)
{
    names *x = ud;
    if (x->n < 128) snprintf(x->v[x->n++], sizeof x->v[0], "%s", name);
    return 0;
}

static void pick_param(const env *e, char *q, size_t qlen)
{
    names idx = {0};
    cp_catalog *cat = NULL;
    char err[512];
    if (cp_catalog_open(e->catalog, &cat, err, sizeof err) != CP_OK) fail_msg("catalog: %s", err);
    assert_int_equal(cp_catalog_indexed_params(cat, on_indexed, &idx), CP_OK);
    cp_catalog_close(cat);
    assert_true(idx.n > 0);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/calls?from=%lld&to=%lld&limit=1000", FROM_MS, TO_MS);
    json_t *page = get_json(e, path);
    json_t *calls = json_object_get(page, "calls");
    size_t i, best = SIZE_MAX;
    json_t *c;
    q[0] = 0;
    json_array_foreach(calls, i, c) {
        for (size_t k = 0; k < idx.n; k++) {
            const char *v = json_string_value(json_array_get(json_object_get(json_object_get(c, "params"), idx.v[k]), 0));
            if (!v || !*v || strlen(v) > 200 || strpbrk(v, " \"'&#%+`$")) continue;
            size_t count = 0, j;
            json_t *d;
            json_array_foreach(calls, j, d) {
                json_t *vals = json_object_get(json_object_get(d, "params"), idx.v[k]);
                size_t m;
                json_t *x;
                json_array_foreach(vals, m, x) if (strstr(json_string_value(x), v)) {
                    count++;
                    break;
                }
            }
            if (count < best) {
                best = count;
                snprintf(q, qlen, "$%s=%s", idx.v[k], v);
            }
        }
    }
    json_decref(page);
    if (!q[0]) server_fail(&e->s, "no call has an indexed param with a plain value");
}

static void url_escape(const char *s, char *out, size_t outlen)
{
    size_t o = 0;
    for (; *s && o + 4 < outlen; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || strchr("-._~/:", ch))
            out[o++] = (char)ch;
        else
            o += (size_t)snprintf(out + o, outlen - o, "%%%02X", ch);
    }
    out[o] = 0;
}

/* A merged tree in a form independent of the order its calls were merged in (the method
 * dictionary is in first-seen order, and cold calls are merged file by file): one line per
 * node, "method texts of its path | its numbers", sorted. */
static int line_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static void canon_node(json_t *methods, json_t *n, cp_buf *path, char ***lines, size_t *nl)
{
    size_t at = path->len;
    const char *m = json_string_value(json_array_get(methods, (size_t)json_integer_value(json_object_get(n, "method"))));
    cp_buf_printf(path, "/%s", at ? (m ? m : "?") : "<root>");
    char *line = NULL;
    if (asprintf(&line, "%.*s|%lld|%lld|%lld|%lld|%lld", (int)path->len, (const char *)path->data,
                 (long long)json_integer_value(json_object_get(n, "total")), (long long)json_integer_value(json_object_get(n, "self")),
                 (long long)json_integer_value(json_object_get(n, "suspension")),
                 (long long)json_integer_value(json_object_get(n, "invocations")),
                 (long long)json_integer_value(json_object_get(n, "calls"))) < 0)
        fail_msg("out of memory");
    *lines = realloc(*lines, (*nl + 1) * sizeof **lines);
    (*lines)[(*nl)++] = line;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(n, "children"), i, c) canon_node(methods, c, path, lines, nl);
    path->len = at;
}

static char *canon_tree(json_t *t)
{
    cp_buf path, out;
    cp_buf_init(&path);
    cp_buf_init(&out);
    char **lines = NULL;
    size_t nl = 0;
    canon_node(json_object_get(t, "methods"), json_object_get(t, "root"), &path, &lines, &nl);
    qsort(lines, nl, sizeof *lines, line_cmp);
    for (size_t i = 0; i < nl; i++) {
        cp_buf_printf(&out, "%s\n", lines[i]);
        free(lines[i]);
    }
    free(lines);
    char *info = json_dumps(json_object_get(t, "profile"), JSON_COMPACT | JSON_SORT_KEYS);
    cp_buf_printf(&out, "%s", info ? info : "?");
    free(info);
    cp_buf_putc(&out, 0);
    cp_buf_free(&path);
    return (char *)out.data;
}

static void record(const env *e, const char *q, answers *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->text[i]);
    a->n = 0;
    char qe[512];
    url_escape(q, qe, sizeof qe);
    static const char *const sorts[] = {"-duration", "ts_ms", "-ts_ms", "method", "-cpu_time", "thread", "calls"};
    char path[1024];
    for (size_t i = 0; i < CP_ARRAY_LEN(sorts); i++) {
        snprintf(path, sizeof path, "/api/v1/calls?from=%lld&to=%lld&limit=1000&sort=%s", FROM_MS, TO_MS, sorts[i]);
        json_t *j = get_json(e, path);
        strip_work(j);
        a->text[a->n++] = json_dumps(j, JSON_COMPACT);
        json_decref(j);
    }
    /* small pages across the whole range, a duration filter, a search and the $param term */
    snprintf(path, sizeof path, "/api/v1/calls?from=%lld&to=%lld&limit=7&sort=-duration&duration=%%3E%%3D10ms", FROM_MS,
             TO_MS);
    json_t *j = get_json(e, path);
    strip_work(j);
    a->text[a->n++] = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    snprintf(path, sizeof path, "/api/v1/calls?from=%lld&to=%lld&limit=1000&q=%s", FROM_MS, TO_MS, qe);
    j = get_json(e, path);
    size_t matched = json_array_size(json_object_get(j, "calls"));
    if (matched == 0 || matched == NCALLS) server_fail(&e->s, "%s matches %zu calls", q, matched);
    strip_work(j);
    a->text[a->n++] = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    snprintf(path, sizeof path, "/api/v1/calls?from=%lld&to=%lld&limit=1000&q=select", FROM_MS, TO_MS);
    j = get_json(e, path);
    strip_work(j);
    a->text[a->n++] = json_dumps(j, JSON_COMPACT);
    /* the aggregate profile of every call (cold calls are read file by file) */
    snprintf(path, sizeof path, "/api/v1/profile?from=%lld&to=%lld", FROM_MS, TO_MS);
    json_decref(j);
    j = get_json(e, path);
    a->text[a->n++] = canon_tree(j);
    /* every call, its tree and its trace bytes */
    snprintf(path, sizeof path, "/api/v1/calls?from=%lld&to=%lld&limit=1000", FROM_MS, TO_MS);
    json_decref(j);
    j = get_json(e, path);
    size_t i;
    json_t *c;
    cp_buf trees, bytes;
    cp_buf_init(&trees);
    cp_buf_init(&bytes);
    json_array_foreach(json_object_get(j, "calls"), i, c) {
        const char *id = json_string_value(json_object_get(c, "id"));
        snprintf(path, sizeof path, "/api/v1/calls/%s", id);
        json_t *one = get_json(e, path);
        char *t = json_dumps(one, JSON_COMPACT);
        cp_buf_puts(&trees, t);
        free(t);
        json_decref(one);
        snprintf(path, sizeof path, "/api/v1/calls/%s/tree", id);
        one = get_json(e, path);
        t = json_dumps(one, JSON_COMPACT);
        cp_buf_puts(&trees, t);
        free(t);
        json_decref(one);
        snprintf(path, sizeof path, "/api/v1/calls/%s/trace", id);
        get_bytes(e, path, &bytes);
        cp_buf_printf(&trees, "trace:%zu:%016llx\n", bytes.len,
                      (unsigned long long)cp_fnv64(CP_FNV_SEED, bytes.data, bytes.len));
    }
    cp_buf_putc(&trees, 0);
    a->text[a->n++] = strdup((const char *)trees.data);
    cp_buf_free(&trees);
    cp_buf_free(&bytes);
    json_decref(j);
}

static void assert_same_answers(const env *e, const answers *before, const answers *after)
{
    assert_int_equal(before->n, after->n);
    for (size_t i = 0; i < before->n; i++)
        if (strcmp(before->text[i], after->text[i]) != 0)
            server_fail(&e->s, "answer %zu changed:\nbefore %.600s\nafter  %.600s", i, before->text[i],
                        after->text[i]);
}

static void answers_free(answers *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->text[i]);
    a->n = 0;
}

/* ---- running the compactor -------------------------------------------------------------- */

/* `cloudprof compact --until until` (0: now). A run that must repeat another's work (or
 * find none left) passes the other's until: windows close as the clock moves on, and a
 * later until can claim one more (empty) window. */
static int run_compact_until(const env *e, const char *crash_at, int take_over, int64_t until_ms, cp_buf *out)
{
    const char *argv[24];
    size_t n = 0;
    argv[n++] = "compact";
    argv[n++] = "--data";
    argv[n++] = e->s.data;
    const char *const *pf = test_pair_flags(e->catalog, e->store);
    for (; *pf; pf++) argv[n++] = *pf;
    argv[n++] = "--until";
    char until[32];
    snprintf(until, sizeof until, "%lld", (long long)(until_ms ? until_ms : cp_now_ms()));
    argv[n++] = until;
    if (take_over) argv[n++] = "--take-over";
    argv[n] = NULL;
    if (crash_at)
        setenv("CLOUDPROF_TEST_CRASH_AT", crash_at, 1);
    else
        unsetenv("CLOUDPROF_TEST_CRASH_AT");
    cp_buf err;
    cp_buf_init(&err);
    int rc = cli_run(out, &err, argv);
    unsetenv("CLOUDPROF_TEST_CRASH_AT");
    if (out) { /* callers strstr() it: a NUL after the text, not counted in len */
        cp_buf_putc(out, 0);
        out->len--;
    }
    if (rc != (crash_at ? 3 : 0))
        fail_msg("compact%s%s exited %d: %.*s", crash_at ? " crashing at " : "", crash_at ? crash_at : "", rc,
                 (int)err.len, (char *)err.data);
    cp_buf_free(&err);
    return rc;
}

static int run_compact(const env *e, const char *crash_at, int take_over, cp_buf *out)
{
    return run_compact_until(e, crash_at, take_over, 0, out);
}

/* ---- the catalog and the store, read directly ------------------------------------------ */

typedef struct cold_list {
    char keys[64][512];
    int64_t rows[64];
    size_t n;
} cold_list;

static int on_cold(void *ud, const struct cp_cold_file *f)
{
    cold_list *l = ud;
    if (l->n < 64) {
        snprintf(l->keys[l->n], sizeof l->keys[0], "%s", f->key);
        l->rows[l->n++] = f->rows;
    }
    return 0;
}

static void list_cold_range(const env *e, int64_t from, int64_t to, cold_list *l, size_t *skipped,
                            const cp_cold_param *p, size_t np);

static void list_cold(const env *e, cold_list *l, size_t *skipped, const cp_cold_param *p, size_t np)
{
    list_cold_range(e, FROM_MS, TO_MS, l, skipped, p, np);
}

static void list_cold_range(const env *e, int64_t from, int64_t to, cold_list *l, size_t *skipped,
                            const cp_cold_param *p, size_t np)
{
    memset(l, 0, sizeof *l);
    cp_reader *r = NULL;
    char err[512];
    if (cp_reader_open(e->catalog, &r, err, sizeof err) != CP_OK) fail_msg("reader: %s", err);
    cp_cold_query q = {from, to, NULL, 0, INT64_MAX, p, np, NULL};
    size_t sk = 0;
    assert_int_equal(cp_reader_cold_files(r, &q, on_cold, l, &sk), CP_OK);
    if (skipped) *skipped = sk;
    cp_reader_close(r);
}

static cp_ostore *open_store(const env *e)
{
    cp_ostore_config c = {0};
    c.url = e->store;
    c.endpoint = test_s3_endpoint();
    c.access_key = test_s3_access_key();
    c.secret_key = test_s3_secret_key();
    cp_ostore *s = NULL;
    char err[512];
    if (cp_ostore_open(&c, &s, err, sizeof err) != CP_OK) fail_msg("store %s: %s", e->store, err);
    return s;
}

typedef struct key_list {
    char keys[256][512];
    size_t n;
} key_list;

static int on_item(void *ud, const cp_ostore_item *it)
{
    key_list *l = ud;
    if (l->n < 256) snprintf(l->keys[l->n++], sizeof l->keys[0], "%s", it->key);
    return 0;
}

/* The rollup files of a range (one per claim and namespace, beside its calls files). */
static void list_rollups_range(const env *e, int64_t from, int64_t to, cold_list *l)
{
    memset(l, 0, sizeof *l);
    cp_reader *r = NULL;
    char err[512];
    if (cp_reader_open(e->catalog, &r, err, sizeof err) != CP_OK) fail_msg("reader: %s", err);
    cp_cold_query q = {from, to, NULL, 0, INT64_MAX, NULL, 0, "rollup"};
    assert_int_equal(cp_reader_cold_files(r, &q, on_cold, l, NULL), CP_OK);
    cp_reader_close(r);
}

/* The store holds exactly the completed files of the catalog (calls and rollups):
 * nothing orphaned, nothing missing; every calls file has its claim's rollup file.
 * Returns the number of rows in the calls files. */
static int64_t check_store_matches_catalog_range(const env *e, int64_t from, int64_t to)
{
    cold_list cl, rl;
    list_cold_range(e, from, to, &cl, NULL, NULL, 0);
    list_rollups_range(e, from, to, &rl);
    cp_ostore *s = open_store(e);
    key_list kl = {0};
    char err[512];
    assert_int_equal(s->ops->list(s, "", on_item, &kl, err, sizeof err), CP_OK);
    cp_ostore_close(s);
    if (kl.n != cl.n + rl.n)
        fail_msg("the store has %zu objects, the catalog %zu completed calls and %zu rollup files", kl.n, cl.n, rl.n);
    if (cl.n && !rl.n) fail_msg("%zu calls files without a rollup file", cl.n);
    int64_t rows = 0;
    for (size_t i = 0; i < cl.n + rl.n; i++) {
        const char *key = i < cl.n ? cl.keys[i] : rl.keys[i - cl.n];
        size_t k = 0;
        while (k < kl.n && strcmp(kl.keys[k], key)) k++;
        if (k == kl.n) fail_msg("catalog file %s is not in the store", key);
        if (i < cl.n) rows += cl.rows[i];
    }
    return rows;
}

static int64_t check_store_matches_catalog(const env *e)
{
    return check_store_matches_catalog_range(e, FROM_MS, TO_MS);
}

/* ---- Parquet files against the hot rows ------------------------------------------------- */

typedef struct hot_rows {
    json_t *rows; /* object: "<pod>|<time>|<trace_index>" -> expected canonical row */
} hot_rows;

static json_t *str_i64(int64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    return json_string(b);
}

static json_t *params_pairs(const char *text, size_t len)
{
    json_error_t je;
    json_t *o = json_loadb(text, len, 0, &je);
    assert_non_null(o);
    json_t *pairs = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) json_array_append_new(pairs, json_pack("[sO]", k, v));
    json_decref(o);
    return pairs;
}

static json_t *hex(const uint8_t *p, size_t n)
{
    char *s = malloc(n * 2 + 1);
    for (size_t i = 0; i < n; i++) sprintf(s + 2 * i, "%02x", p[i]);
    s[n * 2] = 0;
    json_t *j = json_string(s);
    free(s);
    return j;
}

static int on_hot_trace(void *ud, const cp_call *c)
{
    json_object_set_new(ud, "trace", c->trace ? hex(c->trace, c->trace_len) : json_null());
    return 0;
}

static int on_hot(void *ud, const cp_call *c)
{
    void **x = ud;
    hot_rows *h = x[0];
    cp_reader *r = x[1];
    char idx[64], key[1024];
    snprintf(idx, sizeof idx, "%d_%d_%d", (int)c->trace_file_index, (int)c->buffer_offset, (int)c->record_index);
    snprintf(key, sizeof key, "%.*s|%lld|%s", (int)c->pod_len, c->pod, (long long)c->ts_ms, idx);
    json_t *row = json_object();
    json_object_set_new(row, "time", str_i64(c->ts_ms));
    json_object_set_new(row, "cpu_time", str_i64(c->cpu_time));
    json_object_set_new(row, "wait_time", str_i64(c->wait_time));
    json_object_set_new(row, "memory_used", str_i64(c->memory_used));
    json_object_set_new(row, "duration", str_i64(c->duration_ms));
    json_object_set_new(row, "non_blocking", str_i64(c->non_blocking));
    json_object_set_new(row, "queue_wait_duration", str_i64(c->queue_wait_ms));
    json_object_set_new(row, "suspend_duration", str_i64(c->suspend_ms));
    json_object_set_new(row, "calls", str_i64(c->calls));
    json_object_set_new(row, "transactions", str_i64(c->transactions));
    json_object_set_new(row, "logs_generated", str_i64(c->logs_generated));
    json_object_set_new(row, "logs_written", str_i64(c->logs_written));
    json_object_set_new(row, "file_read", str_i64(c->file_read));
    json_object_set_new(row, "file_written", str_i64(c->file_written));
    json_object_set_new(row, "net_read", str_i64(c->net_read));
    json_object_set_new(row, "net_written", str_i64(c->net_written));
    json_object_set_new(row, "namespace", json_stringn(c->ns, c->ns_len));
    json_object_set_new(row, "service_name", json_stringn(c->service, c->service_len));
    json_object_set_new(row, "pod_name", json_stringn(c->pod, c->pod_len));
    json_object_set_new(row, "restart_time", str_i64(c->restart_ms));
    json_object_set_new(row, "method", json_stringn(c->method, c->method_len));
    json_object_set_new(row, "params", params_pairs(c->params_json, c->params_json_len));
    json_object_set_new(row, "trace_index", json_string(idx));
    json_object_set_new(row, "thread", json_stringn(c->thread, c->thread_len));
    json_object_set_new(row, "method_id", str_i64(c->method_id));
    json_object_set_new(row, "trace_reason", c->trace_reason ? json_string(c->trace_reason) : json_null());
    json_object_set_new(row, "has_sql", json_boolean(c->sql));
    (void)r;
    json_object_set_new(h->rows, key, row);
    /* the trace is read after the search (one reader runs one operation at a time) */
    cp_call_ref *refs = x[2];
    size_t *n = x[3];
    if (*n < 64) cp_call_ref_of(c, &refs[(*n)++]);
    json_t *keys = x[4];
    json_array_append_new(keys, json_string(key));
    return 0;
}

/* Every hot call as the canonical row pqread prints. */
static void hot_snapshot(const env *e, hot_rows *h)
{
    h->rows = json_object();
    cp_reader *r = NULL;
    char err[512];
    if (cp_reader_open(e->catalog, &r, err, sizeof err) != CP_OK) fail_msg("reader: %s", err);
    cp_call_filter f = {0};
    f.from_ms = FROM_MS;
    f.to_ms = TO_MS;
    f.max_duration_ms = INT64_MAX;
    f.sort = CP_SORT_TS;
    f.limit = 1000;
    cp_search_stats st;
    cp_call_ref refs[64];
    size_t n = 0;
    json_t *keys = json_array();
    void *x[5] = {h, r, refs, &n, keys};
    int rc = cp_reader_search(r, &f, on_hot, x, &st);
    if (rc != CP_OK) fail_msg("hot search: %s", cp_reader_errmsg(r));
    for (size_t i = 0; i < n; i++) {
        json_t *row = json_object_get(h->rows, json_string_value(json_array_get(keys, i)));
        assert_int_equal(cp_reader_get(r, &refs[i], 1, on_hot_trace, row), CP_OK);
    }
    json_decref(keys);
    cp_reader_close(r);
    assert_int_equal(json_object_size(h->rows), NCALLS);
}

static int have_node_tools(void)
{
    struct stat sb;
    return stat(CP_SOURCE_DIR "/tests/tools/node_modules/@duckdb/node-api", &sb) == 0 &&
           stat(CP_SOURCE_DIR "/tests/tools/node_modules/hyparquet", &sb) == 0;
}

/* Rows of a file as pqread prints them with `reader`, matched to the hot rows. */
static size_t check_file_with(const char *reader, const char *path, hot_rows *h)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "node %s/tests/tools/pqread.mjs %s rows '%s'", CP_SOURCE_DIR, reader, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t n = 0, cap = 1 << 22;
    char *line = malloc(cap);
    while (fgets(line, (int)cap, p)) {
        json_error_t je;
        json_t *row = json_loads(line, 0, &je);
        if (!row) fail_msg("%s %s: not JSON: %.200s", reader, path, line);
        char key[1024];
        snprintf(key, sizeof key, "%s|%s|%s", json_string_value(json_object_get(row, "pod_name")),
                 json_string_value(json_object_get(row, "time")),
                 json_string_value(json_object_get(row, "trace_index")));
        json_t *want = json_object_get(h->rows, key);
        if (!want) fail_msg("%s %s: row %s is not a hot call", reader, path, key);
        if (!json_equal(want, row)) {
            char *a = json_dumps(want, JSON_COMPACT | JSON_SORT_KEYS), *b = json_dumps(row, JSON_COMPACT | JSON_SORT_KEYS);
            fail_msg("%s %s: row %s differs:\nhot  %.1500s\nfile %.1500s", reader, path, key, a, b);
        }
        json_decref(row);
        n++;
    }
    free(line);
    assert_int_equal(pclose(p), 0);
    return n;
}

/* Schema names and types as DuckDB's parquet_schema() shows them. */
static void check_schema(const char *path)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "node %s/tests/tools/pqread.mjs duckdb schema '%s'", CP_SOURCE_DIR, path);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    cp_buf all;
    cp_buf_init(&all);
    char line[4096];
    while (fgets(line, sizeof line, p)) cp_buf_puts(&all, line);
    assert_int_equal(pclose(p), 0);
    cp_buf_putc(&all, 0);
    const char *t = (const char *)all.data;
    for (size_t i = 0; i < CP_COLD_C_COUNT; i++) {
        char want[128];
        snprintf(want, sizeof want, "\"name\":\"%s\"", cp_cold_calls_schema[i].name);
        if (!strstr(t, want)) fail_msg("parquet_schema of %s lacks column %s:\n%s", path, cp_cold_calls_schema[i].name, t);
    }
    assert_non_null(strstr(t, "TIMESTAMP_MILLIS"));
    assert_non_null(strstr(t, "\"key_value\""));
    assert_non_null(strstr(t, "\"MAP\""));
    assert_non_null(strstr(t, "\"LIST\""));
    cp_buf_free(&all);
}

static void check_parquet_files(const env *e, hot_rows *h)
{
    if (!have_node_tools()) {
        printf("note: tests/tools/node_modules missing (scripts/node-tools.sh): DuckDB/hyparquet checks skipped\n");
        return;
    }
    cold_list cl;
    list_cold(e, &cl, NULL, NULL, 0);
    assert_true(cl.n > 0);
    cp_ostore *s = open_store(e);
    size_t total[2] = {0, 0};
    for (size_t i = 0; i < cl.n; i++) {
        char local[1024], err[512];
        snprintf(local, sizeof local, "%s/file-%zu.parquet", e->dir, i);
        if (s->ops->get_file(s, cl.keys[i], local, err, sizeof err) != CP_OK) fail_msg("get %s: %s", cl.keys[i], err);
        if (i == 0) check_schema(local);
        total[0] += check_file_with("duckdb", local, h);
        total[1] += check_file_with("hyparquet", local, h);
    }
    cp_ostore_close(s);
    assert_int_equal(total[0], NCALLS);
    assert_int_equal(total[1], NCALLS);
    printf("%zu Parquet files: DuckDB and hyparquet read the %d hot rows exactly (%s)\n", cl.n, NCALLS,
           test_pair_name());
}

/* ---- the tests -------------------------------------------------------------------------- */

static void test_compaction_keeps_answers(void **state)
{
    (void)state;
    env e = {0};
    env_start(&e, "cold-answers");
    load_conversation(&e);
    char q[512];
    pick_param(&e, q, sizeof q);
    answers before = {0}, after = {0};
    record(&e, q, &before);
    hot_rows h;
    hot_snapshot(&e, &h);

    cp_buf out;
    cp_buf_init(&out);
    int64_t until = cp_now_ms();
    run_compact_until(&e, NULL, 0, until, &out);
    printf("%.*s", (int)out.len, (char *)out.data);
    assert_non_null(strstr((const char *)out.data, "45 calls"));
    assert_int_equal(check_store_matches_catalog(&e), NCALLS);

    record(&e, q, &after);
    assert_same_answers(&e, &before, &after);

    /* the $param term: files without the value are skipped by the inverted index */
    const char *eq = strchr(q, '=');
    cp_cold_param p = {q + 1, eq + 1, (size_t)(eq - q - 1), strlen(eq + 1)};
    cold_list cl;
    size_t skipped = 0;
    list_cold(&e, &cl, &skipped, &p, 1);
    printf("%s: %zu files read, %zu skipped by the inverted index\n", q, cl.n, skipped);
    assert_true(skipped > 0);
    assert_true(cl.n > 0);
    char qe[512], path[1024];
    url_escape(q, qe, sizeof qe);
    snprintf(path, sizeof path, "/api/v1/calls?from=%lld&to=%lld&limit=1000&q=%s", FROM_MS, TO_MS, qe);
    json_t *j = get_json(&e, path);
    assert_int_equal(json_integer_value(json_object_get(j, "cold_files_skipped")), (json_int_t)skipped);
    json_decref(j);

    check_parquet_files(&e, &h);
    /* running it again (up to the same time) finds nothing to do */
    cp_buf_reset(&out);
    run_compact_until(&e, NULL, 0, until, &out);
    if (!strstr((const char *)out.data, "compacted 0 claims")) fail_msg("a second run did work: %s", (char *)out.data);
    assert_int_equal(check_store_matches_catalog(&e), NCALLS);

    /* retention: the files (from 2023) are past any retention: marked, deleted, gone */
    const char *argv[24];
    size_t n = 0;
    argv[n++] = "compact";
    argv[n++] = "--data";
    argv[n++] = e.s.data;
    for (const char *const *pf = test_pair_flags(e.catalog, e.store); *pf; pf++) argv[n++] = *pf;
    argv[n++] = "--retention";
    argv[n++] = "1d";
    argv[n] = NULL;
    cp_buf_reset(&out);
    assert_int_equal(cli_run(&out, NULL, argv), 0);
    cp_buf_putc(&out, 0);
    printf("%s", (const char *)out.data);
    /* six calls files and their claim's rollup file */
    assert_non_null(strstr((const char *)out.data, "retention: 7 files marked, 7 deleted"));
    assert_int_equal(check_store_matches_catalog(&e), 0);
    snprintf(path, sizeof path, "/api/v1/calls?from=%lld&to=%lld&limit=1000", FROM_MS, TO_MS);
    j = get_json(&e, path);
    assert_int_equal(json_array_size(json_object_get(j, "calls")), 0);
    json_decref(j);

    json_decref(h.rows);
    cp_buf_free(&out);
    answers_free(&before);
    answers_free(&after);
    server_stop(&e.s);
    env_free(&e);
}

static void test_crash_at_each_step(void **state)
{
    (void)state;
    static const char *const steps[] = {"claimed", "written", "uploaded", "indexed", "finished"};
    for (size_t i = 0; i < CP_ARRAY_LEN(steps); i++) {
        env e = {0};
        char tag[64];
        snprintf(tag, sizeof tag, "cold-crash-%s", steps[i]);
        env_start(&e, tag);
        load_conversation(&e);
        char q[512];
        pick_param(&e, q, sizeof q);
        answers before = {0}, after = {0};
        record(&e, q, &before);
        cp_buf out;
        cp_buf_init(&out);
        int64_t until = cp_now_ms();
        run_compact_until(&e, steps[i], 0, until, &out); /* exits 3 at the step */
        record(&e, q, &after);                           /* a crashed compaction changes no answer */
        assert_same_answers(&e, &before, &after);
        cp_buf_reset(&out);
        run_compact_until(&e, NULL, 1, until, &out);     /* taken over and redone */
        if (strcmp(steps[i], "finished") != 0) assert_non_null(strstr((const char *)out.data, "1 taken over"));
        assert_int_equal(check_store_matches_catalog(&e), NCALLS);
        record(&e, q, &after);
        assert_same_answers(&e, &before, &after);
        printf("crash at '%s': rerun gives the same %zu answers, %d calls, no orphan object\n", steps[i], after.n,
               NCALLS);
        cp_buf_free(&out);
        answers_free(&before);
        answers_free(&after);
        server_stop(&e.s);
        env_free(&e);
    }
}

/* Live data: emulated agents fill the current windows, `compact --until` an hour ahead
 * closes them together with the empty windows created ahead (a claim of many tables), and
 * the API still counts every call, now cold. */
static long long count_calls(const env *e, long long from, long long to)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/calls/stats?from=%lld&to=%lld", from, to);
    json_t *j = get_json(e, path);
    long long n = json_integer_value(json_object_get(j, "total"));
    json_decref(j);
    return n;
}

static void test_compact_live_windows(void **state)
{
    (void)state;
    env e = {0};
    env_start(&e, "cold-live");
    long long from = (long long)cp_now_ms() - 60000;
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", e.s.port);
    /* a fixed amount of work: 3 agents x 80 calls, 20 after each flush cycle */
    const char *em[] = {"emulate", "--target", target, "--agents", "3", "--duration", "100", "--max-calls", "80",
                        "--calls-per-flush", "20", "--namespaces", "2", "--flush-interval", "250", "--quiet", NULL};
    assert_int_equal(cli_run(NULL, NULL, em), 0);
    long long to = (long long)cp_now_ms() + 60000, before = 0;
    for (int64_t deadline = test_now_ms() + TEST_WAIT_MS; before != 3 * 80 && test_now_ms() < deadline;) {
        sleep_ms(100); /* the connections' ends store their last calls */
        before = count_calls(&e, from, to);
    }
    assert_int_equal(before, 3 * 80);
    const char *argv[24];
    size_t n = 0;
    argv[n++] = "compact";
    argv[n++] = "--data";
    argv[n++] = e.s.data;
    for (const char *const *pf = test_pair_flags(e.catalog, e.store); *pf; pf++) argv[n++] = *pf;
    argv[n++] = "--until";
    char until[32];
    snprintf(until, sizeof until, "%lld", (long long)cp_now_ms() + 3600000);
    argv[n++] = until;
    argv[n] = NULL;
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    int rc = cli_run(&out, &err, argv);
    if (rc != 0) fail_msg("compact exited %d: %.*s", rc, (int)err.len, (char *)err.data);
    cp_buf_putc(&out, 0);
    printf("%s", (const char *)out.data);
    assert_int_equal(check_store_matches_catalog_range(&e, from, to), before);
    assert_int_equal(count_calls(&e, from, to), before);
    cp_buf_free(&out);
    cp_buf_free(&err);
    server_stop(&e.s);
    env_free(&e);
}

/* A compactor whose claim was taken over (its lease ran out while it was still working)
 * cannot finish it: the windows stay hot for the new holder, who completes them. */
static void test_taken_over_claim_cannot_finish(void **state)
{
    (void)state;
    env e = {0};
    env_start(&e, "cold-takeover");
    load_conversation(&e);
    server_stop(&e.s);
    cp_catalog *a = NULL, *b = NULL;
    char err[512];
    if (cp_catalog_open(e.catalog, &a, err, sizeof err) != CP_OK) fail_msg("catalog: %s", err);
    if (cp_catalog_open(e.catalog, &b, err, sizeof err) != CP_OK) fail_msg("catalog: %s", err);
    int64_t now = cp_now_ms();
    cp_compact_opts oa = {now, "slow-a", 60000, now}, ob = {now, "fast-b", 0, now};
    cp_compact_job ja, jb;
    assert_int_equal(cp_catalog_compact_claim(a, &oa, &ja), CP_OK);
    assert_int_equal(cp_catalog_compact_claim(b, &ob, &jb), CP_OK); /* lease 0: takes it over */
    assert_true(jb.taken_over);
    assert_string_equal(ja.claim, jb.claim);
    assert_int_equal(cp_catalog_compact_finish(a, &ja, NULL, 0), CP_EABORT);
    printf("the old holder's finish: %s\n", cp_catalog_errmsg(a));
    assert_int_equal(cp_catalog_compact_release(a, &ja), CP_OK); /* a no-op: not its claim */
    cp_catalog_close(a);
    cp_catalog_close(b);
    /* the new holder's claim is still there to be done: a compactor taking it over ends
     * with every call cold */
    cp_buf out;
    cp_buf_init(&out);
    run_compact(&e, NULL, 1, &out);
    assert_non_null(strstr((const char *)out.data, "45 calls"));
    assert_int_equal(check_store_matches_catalog(&e), NCALLS);
    cp_buf_free(&out);
    env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_compaction_keeps_answers, servers_teardown),
        cmocka_unit_test_teardown(test_crash_at_each_step, servers_teardown),
        cmocka_unit_test_teardown(test_taken_over_claim_cannot_finish, servers_teardown),
        cmocka_unit_test_teardown(test_compact_live_windows, servers_teardown),
    };
    printf("storage pair: %s\n", test_pair_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
