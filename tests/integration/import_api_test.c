/* import_api_test.c -- foreign traces through the real server and CLI (issue 15):
 * POST /api/v1/import of every fixture (plain and gzip), the imported calls in
 * /services, /calls and /calls/{id}/tree like an agent's, exports (/calls/{id}/export,
 * /tree/export, `cloudprof export`) that import back to the same calls, `cloudprof
 * import` into a running server and into its catalog, a file imported twice, and bad
 * input: each a clear 4xx with where it stopped, the server up, agents and other imports
 * unaffected, nothing half-built stored.
 *
 * CP_TEST_BOTH_PAIRS: SQLite + directory, and again on PostgreSQL + S3 (pair_util.h).
 */
#include "testutil.h"

#include "http_util.h"
#include "pair_util.h"
#include "replay_util.h"
#include "server_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define WINDOW "from=1700000000000&to=1712999999999" /* 2023-11 .. 2024-04: every fixture */

typedef struct env {
    test_server s;
    char *dir, *catalog, *store;
    const char *args[40];
} env;

static env E;

static int setup(void **state)
{
    test_pair_require();
    test_pair_env();
    E.dir = make_temp_dir("import");
    E.catalog = test_catalog_spec(E.dir);
    E.store = test_store_url(E.dir);
    size_t n = 0;
    for (const char *const *pf = test_pair_flags(E.catalog, E.store); *pf; pf++) E.args[n++] = *pf;
    E.args[n++] = "--max-query-span";
    E.args[n++] = "400";
    E.args[n] = NULL;
    server_start(&E.s, "import", E.args);
    return 0;
}

static int teardown(void **state)
{
    if (E.s.pid) server_stop(&E.s);
    server_destroy(&E.s);
    test_pair_free(E.dir, E.catalog, E.store);
    return 0;
}

/* ---- helpers --------------------------------------------------------------------------------- */

/* POSTs a body to /api/v1/import?query; returns the status, the parsed answer in *doc. */
static int post_import(const char *query, const void *p, size_t n, const char *headers, json_t **doc)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/import%s%s", query && *query ? "?" : "", query ? query : "");
    int st;
    cp_buf body;
    cp_buf_init(&body);
    assert_int_equal(http_request(E.s.http_port, "POST", path, headers, p, n, &st, &body, NULL), 0);
    json_error_t e;
    *doc = json_loadb((const char *)body.data, body.len, 0, &e);
    if (!*doc) server_fail(&E.s, "import answer is not JSON (%d): %.*s", st, (int)body.len, (const char *)body.data);
    cp_buf_free(&body);
    return st;
}

static json_int_t jint(const json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }
static const char *jstr(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

/* Every call of a namespace in the fixtures' span, oldest first. */
static json_t *calls_of(const char *ns)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/calls?" WINDOW "&namespace=%s&limit=1000&sort=ts_ms", ns);
    json_t *doc = http_get_json(E.s.http_port, path, 200);
    json_t *c = json_incref(json_object_get(doc, "calls"));
    json_decref(doc);
    return c;
}

static const json_t *find_call(const json_t *calls, json_int_t ts, const char *method, const char *thread)
{
    size_t i;
    json_t *c;
    json_array_foreach(calls, i, c) if (jint(c, "ts_ms") == ts && !strcmp(jstr(c, "method"), method) &&
                                       !strcmp(jstr(c, "thread"), thread)) return c;
    return NULL;
}

/* A param's first value in an API Call object ("params": {"name": ["v"]}). */
static const char *param1(const json_t *call, const char *name)
{
    return json_string_value(json_array_get(json_object_get(json_object_get(call, "params"), name), 0));
}

/* ---- every fixture through the API ------------------------------------------------------------ */

static void import_and_check(const char *file, const char *ns, const char *fmt, int gzip)
{
    char rel[256], q[256];
    snprintf(rel, sizeof rel, "foreign/%s", file);
    snprintf(q, sizeof q, "namespace=%s", ns);
    cp_buf b;
    cp_buf_init(&b);
    load_fixture(rel, &b);
    if (gzip) { /* the same bytes, gzip-compressed */
        cp_buf z;
        cp_buf_init(&z);
        cp_buf_reserve(&z, b.len + 1024);
        z_stream zs;
        memset(&zs, 0, sizeof zs);
        assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
        zs.next_in = b.data;
        zs.avail_in = (uInt)b.len;
        zs.next_out = z.data;
        zs.avail_out = (uInt)(b.len + 1024);
        assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
        z.len = zs.total_out;
        deflateEnd(&zs);
        cp_buf_free(&b);
        b = z;
    }
    json_t *rep;
    int st = post_import(q, b.data, b.len, gzip ? "Content-Encoding: gzip\r\n" : NULL, &rep);
    if (st != 200) server_fail(&E.s, "%s: HTTP %d %s", file, st, json_dumps(rep, 0));
    snprintf(rel, sizeof rel, "foreign/%s.expected.json", file);
    json_error_t e;
    json_t *want = json_load_file(fixture_path(rel), 0, &e);
    assert_non_null(want);
    json_t *wcalls = json_object_get(want, "calls");
    assert_string_equal(jstr(rep, "format"), fmt);
    assert_int_equal(jint(rep, "calls"), json_array_size(wcalls));
    assert_int_equal(jint(rep, "skipped"), jint(want, "skipped"));
    assert_true(json_is_null(json_object_get(rep, "error")));
    assert_string_equal(jstr(rep, "namespace"), ns);
    /* the calls as the list shows them */
    json_t *have = calls_of(ns);
    assert_int_equal(json_array_size(have), json_array_size(wcalls));
    size_t i;
    json_t *w;
    json_array_foreach(wcalls, i, w) {
        const json_t *c = find_call(have, jint(w, "ts_ms"), jstr(w, "method"), jstr(w, "thread"));
        if (!c) fail_msg("%s: call %zu (%lld %s) not listed", file, i, (long long)jint(w, "ts_ms"), jstr(w, "method"));
        assert_int_equal(jint(c, "duration_ms"), jint(w, "duration_ms"));
        assert_int_equal(jint(c, "calls"), jint(w, "calls"));
        assert_int_equal(jint(c, "cpu_time"), jint(w, "cpu_time"));
        assert_int_equal(jint(c, "memory_used"), jint(w, "memory_used"));
        assert_int_equal(jint(c, "wait_time"), jint(w, "wait_time"));
        assert_int_equal(jint(c, "suspend_ms"), jint(w, "suspend_ms"));
        assert_int_equal(json_is_true(json_object_get(c, "error")), json_is_true(json_object_get(w, "error")));
        assert_string_equal(param1(c, "import.format"), fmt);
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(w, "params"), k, v) assert_string_equal(param1(c, k), json_string_value(v));
        /* its tree opens, rooted at the call's method */
        char path[512];
        snprintf(path, sizeof path, "/api/v1/calls/%s/tree", jstr(c, "id"));
        json_t *tree = http_get_json(E.s.http_port, path, 200);
        json_t *methods = json_object_get(tree, "methods");
        json_int_t root = jint(json_object_get(tree, "root"), "method");
        assert_string_equal(json_string_value(json_array_get(methods, (size_t)root)), jstr(w, "method"));
        json_decref(tree);
    }
    /* discovery lists the pod */
    json_t *svc = http_get_json(E.s.http_port, "/api/v1/services?" WINDOW, 200);
    char *text = json_dumps(svc, JSON_COMPACT);
    char needle[600];
    snprintf(needle, sizeof needle, "\"namespace\":\"%s\"", ns);
    assert_non_null(strstr(text, needle));
    json_t *id = json_object_get(want, "identity");
    if (json_is_string(json_object_get(id, "pod"))) assert_non_null(strstr(text, jstr(id, "pod")));
    free(text);
    json_decref(svc);
    json_decref(have);
    json_decref(want);
    json_decref(rep);
    cp_buf_free(&b);
}

static void test_fixtures(void **state)
{
    import_and_check("shop.trcbin", "f-bin", "trcbin", 0);
    import_and_check("shop.trcxml", "f-xml", "trcxml", 0);
    import_and_check("shop-be.trcbin", "f-be", "trcbin", 0);
    import_and_check("shop-extras.trcbin", "f-extras", "trcbin", 0);
    import_and_check("orders.cbor", "f-cbor", "cbor", 0);
    import_and_check("shop.trcbin", "f-gzip", "trcbin", 1);
}

/* The same file again: nothing new, every call a duplicate. */
static void test_duplicates(void **state)
{
    cp_buf b;
    cp_buf_init(&b);
    load_fixture("foreign/shop.trcbin", &b);
    json_t *rep;
    assert_int_equal(post_import("namespace=f-bin", b.data, b.len, NULL, &rep), 200);
    assert_int_equal(jint(rep, "calls"), 0);
    assert_int_equal(jint(rep, "duplicates"), 12);
    assert_int_equal(jint(rep, "first_ms"), 1711546931024LL); /* the span still says where they are */
    json_t *c = calls_of("f-bin");
    assert_int_equal(json_array_size(c), 12);
    json_decref(c);
    json_decref(rep);
    cp_buf_free(&b);
}

/* ---- exports ---------------------------------------------------------------------------------- */

/* The tree answer without its calls (they differ by id and import.format). */
static char *tree_text(const char *id)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/calls/%s/tree", id);
    json_t *t = http_get_json(E.s.http_port, path, 200);
    json_object_del(t, "calls");
    char *s = json_dumps(t, JSON_SORT_KEYS | JSON_COMPACT);
    json_decref(t);
    return s;
}

static void export_and_back(const char *src_ns, const char *dst_ns, const char *form)
{
    json_t *src = calls_of(src_ns);
    assert_true(json_array_size(src) > 0);
    /* one call by /calls/{id}/export, then all of them by /tree/export */
    const json_t *first = json_array_get(src, 0);
    char path[4096];
    snprintf(path, sizeof path, "/api/v1/calls/%s/export?format=%s", jstr(first, "id"), form);
    int st;
    cp_buf body, hdr;
    cp_buf_init(&body);
    cp_buf_init(&hdr);
    assert_int_equal(http_get(E.s.http_port, path, &st, &body, &hdr), 0);
    assert_int_equal(st, 200);
    char v[512];
    assert_true(http_header(&hdr, "Content-Disposition", v, sizeof v));
    assert_non_null(strstr(v, form));
    if (!strcmp(form, "trcbin")) assert_memory_equal(body.data, "0TBF", 4);
    else assert_memory_equal(body.data, "<?xml", 5);
    size_t n = 0;
    n += (size_t)snprintf(path, sizeof path, "/api/v1/tree/export?format=%s&ids=", form);
    size_t i;
    json_t *c;
    json_array_foreach(src, i, c) n += (size_t)snprintf(path + n, sizeof path - n, "%s%s", i ? "," : "", jstr(c, "id"));
    assert_int_equal(http_get(E.s.http_port, path, &st, &body, NULL), 0);
    assert_int_equal(st, 200);
    char q[128];
    snprintf(q, sizeof q, "namespace=%s", dst_ns);
    json_t *rep;
    assert_int_equal(post_import(q, body.data, body.len, NULL, &rep), 200);
    assert_int_equal(jint(rep, "calls"), json_array_size(src));
    json_t *dst = calls_of(dst_ns);
    assert_int_equal(json_array_size(dst), json_array_size(src));
    json_array_foreach(src, i, c) {
        const json_t *d = find_call(dst, jint(c, "ts_ms"), jstr(c, "method"), jstr(c, "thread"));
        if (!d) fail_msg("%s -> %s: call %s missing after the round trip", src_ns, dst_ns, jstr(c, "id"));
        assert_int_equal(jint(d, "duration_ms"), jint(c, "duration_ms"));
        assert_int_equal(jint(d, "cpu_time"), jint(c, "cpu_time"));
        assert_int_equal(jint(d, "memory_used"), jint(c, "memory_used"));
        assert_int_equal(json_is_true(json_object_get(d, "error")), json_is_true(json_object_get(c, "error")));
        /* the params, but the import's own */
        json_t *pc = json_deep_copy(json_object_get(c, "params")), *pd = json_deep_copy(json_object_get(d, "params"));
        json_object_del(pc, "import.format");
        json_object_del(pd, "import.format");
        json_object_del(pc, "import.incomplete");
        assert_true(json_equal(pc, pd));
        json_decref(pc);
        json_decref(pd);
        /* the same tree: shape, methods, times, params */
        char *a = tree_text(jstr(c, "id")), *b = tree_text(jstr(d, "id"));
        if (strcmp(a, b)) fail_msg("tree of %s differs after the round trip:\n%s\n%s", jstr(c, "id"), a, b);
        free(a);
        free(b);
    }
    json_decref(dst);
    json_decref(rep);
    json_decref(src);
    cp_buf_free(&body);
    cp_buf_free(&hdr);
}

static void test_exports(void **state)
{
    export_and_back("f-bin", "rt-bin", "trcbin");
    export_and_back("f-cbor", "rt-cbor", "trcxml");
    /* the POST form of /tree/export: the same file as the GET form */
    json_t *c0 = calls_of("f-bin");
    char get[2048], post[2048];
    size_t gn = (size_t)snprintf(get, sizeof get, "/api/v1/tree/export?format=trcbin&ids=%s,%s",
                                 jstr(json_array_get(c0, 0), "id"), jstr(json_array_get(c0, 1), "id"));
    (void)gn;
    snprintf(post, sizeof post, "{\"ids\":[\"%s\",\"%s\"]}", jstr(json_array_get(c0, 0), "id"),
             jstr(json_array_get(c0, 1), "id"));
    int st1, st2;
    cp_buf b1, b2;
    cp_buf_init(&b1);
    cp_buf_init(&b2);
    assert_int_equal(http_get(E.s.http_port, get, &st1, &b1, NULL), 0);
    assert_int_equal(http_post(E.s.http_port, "/api/v1/tree/export?format=trcbin", "application/json", post,
                               strlen(post), &st2, &b2, NULL), 0);
    assert_int_equal(st1, 200);
    assert_int_equal(st2, 200);
    assert_int_equal(b1.len, b2.len);
    assert_memory_equal(b1.data, b2.data, b1.len);
    cp_buf_free(&b1);
    cp_buf_free(&b2);
    json_decref(c0);
    /* errors: a bad format, an unknown call */
    json_t *c = calls_of("f-bin");
    char path[512];
    snprintf(path, sizeof path, "/api/v1/calls/%s/export?format=pdf", jstr(json_array_get(c, 0), "id"));
    json_decref(http_get_json(E.s.http_port, path, 400));
    json_decref(http_get_json(E.s.http_port, "/api/v1/calls/1_2_3_4_5_abc/export?format=trcbin", 400));
    json_decref(http_get_json(E.s.http_port, "/api/v1/tree/export?format=trcbin", 400));
    json_decref(c);
}

/* ---- the CLI ------------------------------------------------------------------------------------ */

static void test_cli(void **state)
{
    char target[64];
    snprintf(target, sizeof target, "http://127.0.0.1:%d", E.s.http_port);
    const char *file = fixture_path("foreign/orders.cbor");
    char filecopy[1024];
    snprintf(filecopy, sizeof filecopy, "%s", file);
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    const char *a1[] = {"import", "--target", target, "--namespace", "cli-remote", "--json", filecopy, NULL};
    assert_int_equal(cli_run(&out, &err, a1), 0);
    cp_buf_putc(&out, 0);
    json_t *rep = json_loads((const char *)out.data, 0, NULL);
    assert_non_null(rep);
    assert_int_equal(jint(rep, "calls"), 8);
    json_decref(rep);
    json_t *c = calls_of("cli-remote");
    assert_int_equal(json_array_size(c), 8);
    /* into the catalog, beside the running server */
    const char *a2[24];
    size_t n = 0;
    a2[n++] = "import";
    a2[n++] = "--data";
    a2[n++] = E.s.data;
    a2[n++] = "--catalog"; /* the server's: the pair's catalog is not <data>/catalog.db */
    a2[n++] = E.catalog;
    a2[n++] = "--namespace";
    a2[n++] = "cli-local";
    a2[n++] = filecopy;
    a2[n] = NULL;
    assert_int_equal(cli_run(&out, &err, a2), 0);
    json_t *c2 = calls_of("cli-local");
    assert_int_equal(json_array_size(c2), 8);
    /* cloudprof export of two calls, then back through the server */
    char exported[1200];
    snprintf(exported, sizeof exported, "%s/two.trcxml", E.dir);
    const char *a3[32];
    n = 0;
    a3[n++] = "export";
    a3[n++] = "--data";
    a3[n++] = E.s.data;
    for (const char *const *pf = test_pair_flags(E.catalog, E.store); *pf; pf++) a3[n++] = *pf;
    a3[n++] = "--call";
    a3[n++] = jstr(json_array_get(c2, 0), "id");
    a3[n++] = "--call";
    a3[n++] = jstr(json_array_get(c2, 1), "id");
    a3[n++] = "--format";
    a3[n++] = "trcxml";
    a3[n++] = "--out";
    a3[n++] = exported;
    a3[n] = NULL;
    int rc = cli_run(&out, &err, a3);
    cp_buf_putc(&err, 0);
    if (rc != 0) fail_msg("export: %s", (const char *)err.data);
    const char *a4[] = {"import", "--target", target, "--namespace", "cli-back", "--quiet", exported, NULL};
    assert_int_equal(cli_run(&out, &err, a4), 0);
    json_t *c3 = calls_of("cli-back");
    assert_int_equal(json_array_size(c3), 2);
    /* bad usage and a missing file */
    const char *a5[] = {"import", "--format", "zip", filecopy, NULL};
    assert_int_equal(cli_run(&out, &err, a5), 2);
    const char *a6[] = {"import", "--target", target, "/nonexistent/file.trcbin", NULL};
    assert_int_equal(cli_run(&out, &err, a6), 1);
    const char *a7[] = {"export", "--call", "nope", "--format", "trcbin", NULL};
    assert_int_equal(cli_run(&out, &err, a7), 2);
    json_decref(c);
    json_decref(c2);
    json_decref(c3);
    cp_buf_free(&out);
    cp_buf_free(&err);
}

/* ---- bad input ------------------------------------------------------------------------------------ */

static void put_le16(cp_buf *b, uint16_t v)
{
    uint8_t t[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    cp_buf_append(b, t, 2);
}

static void put_le32(cp_buf *b, uint32_t v)
{
    uint8_t t[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    cp_buf_append(b, t, 4);
}

static void put_le64(cp_buf *b, uint64_t v)
{
    put_le32(b, (uint32_t)v);
    put_le32(b, (uint32_t)(v >> 32));
}

static void trc_header(cp_buf *b)
{
    cp_buf_reset(b);
    cp_buf_append(b, "0TBF\x01\x00\x01\x01\x0c\x00\x00\x00", 12);
}

/* A bad body: the status with an error; a 400 for the input itself (not for the request)
 * also has the report, which says where the import stopped. */
static void expect_bad(const char *what, const char *query, const cp_buf *b, int want_status)
{
    int request_error = strstr(what, "unknown ") == what || strstr(what, "empty") == what;
    json_t *doc;
    int st = post_import(query, b->data, b->len, NULL, &doc);
    if (st != want_status) server_fail(&E.s, "%s: HTTP %d, expected %d: %s", what, st, want_status, json_dumps(doc, 0));
    assert_non_null(jstr(doc, "error"));
    printf("  %-40s %d %s\n", what, st, jstr(doc, "error"));
    if (want_status == 400 && !request_error) {
        json_t *rep = json_object_get(doc, "report");
        assert_non_null(rep);
        assert_true(jint(rep, "stopped_at") <= (json_int_t)b->len);
        assert_non_null(strstr(jstr(doc, "error"), "offset"));
    }
    json_decref(doc);
}

/* CBOR pieces (RFC 8949) for hand-built raw traces. */
static void cb_head(cp_buf *b, unsigned major, uint64_t v)
{
    uint8_t t[9];
    if (v < 24) {
        t[0] = (uint8_t)(major << 5 | v);
        cp_buf_append(b, t, 1);
    } else if (v < 256) {
        t[0] = (uint8_t)(major << 5 | 24), t[1] = (uint8_t)v;
        cp_buf_append(b, t, 2);
    } else {
        t[0] = (uint8_t)(major << 5 | 27);
        for (int i = 0; i < 8; i++) t[1 + i] = (uint8_t)(v >> (56 - 8 * i));
        cp_buf_append(b, t, 9);
    }
}

static void cb_text(cp_buf *b, const char *s)
{
    cb_head(b, 3, strlen(s));
    cp_buf_puts(b, s);
}

static void cb_word(cp_buf *b, uint64_t w) /* an 8-byte little-endian word (tag 11) */
{
    cb_head(b, 2, 8);
    put_le64(b, w);
}

/* strings 1..3 and method 1 defined; a record (tag 11) of method_id with or without begin */
static void cb_record(cp_buf *b, uint64_t method_id, int begin)
{
    cb_head(b, 6, 11);
    cb_head(b, 4, begin ? 3 : 2);
    cb_word(b, method_id << 40 | 1000);
    if (begin) {
        cb_head(b, 6, 33);
        cb_head(b, 4, 2);
        cb_head(b, 0, 1712000000000ull);
        cb_head(b, 0, 7);
    }
    cb_word(b, 1ull << 40 | 2000);
}

static void cb_symbols(cp_buf *b)
{
    const char *texts[] = {"com.acme.Bad", "run", "()V"};
    for (int i = 0; i < 3; i++) {
        cb_head(b, 6, 1);
        cb_head(b, 4, 3);
        cb_head(b, 0, (uint64_t)i + 1);
        cb_text(b, texts[i]);
        cb_head(b, 0, 0);
    }
    cb_head(b, 6, 2);
    cb_head(b, 4, 4);
    cb_head(b, 0, 1);
    cb_head(b, 0, 1);
    cb_head(b, 0, 2);
    cb_head(b, 0, 3);
}

static void test_bad_input(void **state)
{
    cp_buf shop, b;
    cp_buf_init(&shop);
    cp_buf_init(&b);
    load_fixture("foreign/shop.trcbin", &shop);
    /* truncated header, wrong magic, major version 2 */
    cp_buf_append(&b, shop.data, 7);
    expect_bad("truncated header", "namespace=bad&format=trcbin", &b, 400);
    cp_buf_reset(&b);
    cp_buf_append(&b, shop.data, shop.len);
    b.data[1] = 'X';
    expect_bad("wrong magic", "namespace=bad&format=trcbin", &b, 400);
    b.data[1] = 'T';
    b.data[4] = 2;
    expect_bad("major version 2", "namespace=bad", &b, 400);
    /* a message whose size is shorter than its attributes: frequency (a long) in 4 bytes */
    trc_header(&b);
    put_le16(&b, 2);
    put_le32(&b, 4);
    put_le32(&b, 1000);
    expect_bad("size shorter than the attributes", "namespace=bad", &b, 400);
    /* a size of 2^32 - 1 */
    trc_header(&b);
    put_le16(&b, 1001);
    put_le32(&b, 0xFFFFFFFFu);
    cp_buf_append(&b, "abc", 3);
    expect_bad("size 2^32-1", "namespace=bad", &b, 400);
    /* a string without NUL at the end of the file */
    trc_header(&b);
    put_le16(&b, 1001);
    put_le32(&b, 64);
    cp_buf_append(&b, "node-without-nul", 16);
    expect_bad("string without NUL at the end", "namespace=bad", &b, 400);
    /* a stack depth of 10^9 (monWait: long, long, long, long, int stackDepth, ...) */
    trc_header(&b);
    put_le16(&b, 1032);
    put_le32(&b, 36);
    for (int i = 0; i < 4; i++) put_le64(&b, 1);
    put_le32(&b, 1000000000u);
    expect_bad("stack depth 10^9", "namespace=bad", &b, 400);
    /* CBOR: a length of 2^63, nesting 100 000 deep */
    cp_buf_reset(&b);
    cb_head(&b, 6, 11);
    cb_head(&b, 2, 1ull << 63);
    expect_bad("CBOR length 2^63", "namespace=bad", &b, 400);
    cp_buf_reset(&b);
    cb_head(&b, 6, 11);
    for (int i = 0; i < 100000; i++) cp_buf_putc(&b, 0x81);
    cp_buf_putc(&b, 0);
    expect_bad("CBOR nesting 100 000 deep", "namespace=bad", &b, 400);
    /* random bytes: not a trace at all (415), or forced to be one (400) */
    cp_buf_reset(&b);
    uint64_t seed = 99;
    for (int i = 0; i < 5000; i++) cp_buf_putc(&b, (uint8_t)(0x20 + test_rand(&seed) % 90));
    b.data[0] = 'z';
    expect_bad("random bytes", "namespace=bad", &b, 415);
    expect_bad("random bytes as .trcbin", "namespace=bad&format=trcbin", &b, 400);
    expect_bad("random bytes as CBOR", "namespace=bad&format=cbor", &b, 400);
    /* bad requests */
    expect_bad("unknown parameter", "namespace=bad&x=1", &b, 400);
    expect_bad("unknown format", "format=zip", &b, 400);
    cp_buf_reset(&b);
    expect_bad("empty body", "namespace=bad", &b, 400);
    /* skipped, not fatal: an undefined string reference and a record without TraceBegin;
     * the good record between them is imported */
    cp_buf_reset(&b);
    cb_symbols(&b);
    cb_record(&b, 1, 0);         /* no TraceBegin */
    cb_record(&b, 1, 1);         /* fine */
    cb_record(&b, 99, 1);        /* method 99 undefined */
    json_t *rep;
    assert_int_equal(post_import("namespace=bad-skips", b.data, b.len, NULL, &rep), 200);
    assert_int_equal(jint(rep, "calls"), 1);
    assert_int_equal(jint(rep, "skipped"), 2);
    json_decref(rep);
    /* nothing of the bad ones was stored; a cut file keeps exactly its complete calls */
    json_t *c = calls_of("bad");
    assert_int_equal(json_array_size(c), 0);
    json_decref(c);
    cp_buf_reset(&b);
    cp_buf_append(&b, shop.data, shop.len * 2 / 3);
    json_t *doc;
    assert_int_equal(post_import("namespace=bad-cut", b.data, b.len, NULL, &doc), 400);
    json_int_t kept = jint(json_object_get(doc, "report"), "calls");
    assert_true(kept > 0 && kept < 12);
    json_decref(doc);
    c = calls_of("bad-cut");
    assert_int_equal(json_array_size(c), kept);
    size_t i;
    json_t *x;
    json_array_foreach(c, i, x) { /* each one whole: its tree opens */
        char path[512];
        snprintf(path, sizeof path, "/api/v1/calls/%s/tree", jstr(x, "id"));
        json_decref(http_get_json(E.s.http_port, path, 200));
    }
    json_decref(c);
    /* the server is up, an agent still streams, another import still works */
    json_decref(http_get_json(E.s.http_port, "/api/v1/health", 200));
    replay_capture cap;
    replay_capture_parser_test(&cap);
    replay_result rr;
    replay_opts ro;
    memset(&ro, 0, sizeof ro);
    replay_run(E.s.port, &cap, &ro, &rr);
    assert_int_equal(rr.acks, rr.capture_acks);
    replay_capture_free(&cap);
    assert_int_equal(post_import("namespace=after-bad", shop.data, shop.len, NULL, &rep), 200);
    assert_int_equal(jint(rep, "calls"), 12);
    json_decref(rep);
    cp_buf_free(&shop);
    cp_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures), cmocka_unit_test(test_duplicates), cmocka_unit_test(test_exports),
        cmocka_unit_test(test_cli),      cmocka_unit_test(test_bad_input),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
