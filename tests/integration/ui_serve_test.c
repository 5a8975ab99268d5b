/* ui_serve_test.c -- the web UI served by `cloudprof serve` (src/http/ui.c) and the
 * `pods` filter of the calls API (issue 7).
 *
 * Starts the real server and replays the parser.test.protocol capture, then:
 *  - UI: the page at / and /index.html, the single-page app's routes (/calls,
 *    /tree?call=x, ...) answered with the page, the script and style index.html names
 *    served with their type, a year's immutable caching and an ETag; 304 on
 *    If-None-Match; the gzip variant when asked (inflated with zlib it equals the plain
 *    bytes) and not when refused (q=0); HEAD; 404 JSON for unknown files, 405 for other
 *    methods; the API untouched under /api/v1.
 *    A binary built without the UI (empty asset table: no ui/dist at build time) must
 *    answer / and the app's routes with the 503 "not built" page instead: the test tells
 *    the two apart by GET / and checks whichever it is.
 *  - pods: on /calls, /calls/stats and /calls.csv the capture's pod gives all its calls,
 *    `pods=-` none, with pod/namespace/q all must hold; 1001 names, an empty name or a
 *    name over 1024 bytes are 400; a cursor of a `pods=X` page is refused for `pods=Y`.
 */
#include "http_util.h"
#include "replay_util.h"
#include "server_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <zlib.h>

#define WINDOW "from=1690000000000&to=1690400000000"

static const char csp[] = "default-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; "
                          "script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; "
                          "frame-ancestors 'none'";

typedef struct ui_env {
    test_server s;
    replay_capture cap;
    int port;
    size_t n;          /* calls of the capture in WINDOW */
} ui_env;

static ui_env env;

/* ---- requests ------------------------------------------------------------------------------ */

typedef struct resp {
    int status;
    cp_buf body, hdr;
} resp;

static void resp_free(resp *r)
{
    cp_buf_free(&r->body);
    cp_buf_free(&r->hdr);
}

/* method path with extra header lines (or NULL); fails the test on a transport error. */
static void req(const char *method, const char *path, const char *headers, resp *r)
{
    cp_buf_init(&r->body);
    cp_buf_init(&r->hdr);
    if (http_request(env.port, method, path, headers, NULL, 0, &r->status, &r->body, &r->hdr) != 0)
        fail_msg("%s %.200s: no valid response", method, path);
}

/* The header's value (static buffer), or NULL. */
static const char *hdr(const resp *r, const char *name)
{
    static char v[1024];
    return http_header(&r->hdr, name, v, sizeof v) ? v : NULL;
}

/* Copies a header that must be present. */
static void hdr_copy(const resp *r, const char *name, char *out, size_t outlen)
{
    if (!http_header(&r->hdr, name, out, outlen)) fail_msg("no %s header", name);
}

static void expect_hdr(const resp *r, const char *name, const char *want)
{
    const char *v = hdr(r, name);
    if (!v) fail_msg("no %s header", name);
    if (strcmp(v, want) != 0) fail_msg("%s: '%s', want '%s'", name, v, want);
}

static void expect_status(const resp *r, const char *what, int want)
{
    if (r->status != want)
        fail_msg("%s: status %d, want %d: %.*s", what, r->status, want, (int)(r->body.len > 300 ? 300 : r->body.len),
                 r->body.data ? (const char *)r->body.data : "");
}

/* A JSON error: status, code and (when param) parameter. */
static void expect_error(const char *method, const char *path, int status, const char *code, const char *param)
{
    resp r;
    req(method, path, NULL, &r);
    char what[300];
    snprintf(what, sizeof what, "%s %.200s", method, path);
    expect_status(&r, what, status);
    expect_hdr(&r, "Content-Type", "application/json; charset=utf-8");
    json_t *doc = json_loadb((const char *)r.body.data, r.body.len, 0, NULL);
    if (!doc) fail_msg("%s: the error is not JSON", what);
    const char *c = json_string_value(json_object_get(doc, "code"));
    if (!c || strcmp(c, code) != 0) fail_msg("%s: code '%s', want '%s'", what, c ? c : "(none)", code);
    assert_true(json_string_value(json_object_get(doc, "error")) != NULL);
    if (param) assert_string_equal(json_string_value(json_object_get(doc, "parameter")), param);
    json_decref(doc);
    resp_free(&r);
}

static int body_has(const resp *r, const char *needle)
{
    return r->body.len && memmem(r->body.data, r->body.len, needle, strlen(needle)) != NULL;
}

/* The value of attr="..." in the first tag starting with `tag` that has it (malloc'ed), or NULL. */
static char *tag_attr(const resp *page, const char *tag, const char *attr)
{
    char *html = strndup((const char *)page->body.data, page->body.len);
    char *found = NULL, key[64];
    snprintf(key, sizeof key, " %s=\"", attr);
    for (char *p = html; !found && (p = strstr(p, tag)); p += strlen(tag)) {
        char *end = strchr(p, '>');
        char *a = strstr(p, key);
        if (!end || !a || a > end) continue;
        a += strlen(key);
        char *q = strchr(a, '"');
        if (q) found = strndup(a, (size_t)(q - a));
    }
    free(html);
    return found;
}

/* Inflates a gzip body. */
static void gunzip(const cp_buf *in, cp_buf *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    assert_int_equal(inflateInit2(&z, 15 + 16), Z_OK);
    z.next_in = in->data;
    z.avail_in = (uInt)in->len;
    unsigned char chunk[16384];
    int rc;
    do {
        z.next_out = chunk;
        z.avail_out = sizeof chunk;
        rc = inflate(&z, Z_NO_FLUSH);
        if (rc != Z_OK && rc != Z_STREAM_END) fail_msg("inflate: %d", rc);
        cp_buf_append(out, chunk, sizeof chunk - z.avail_out);
    } while (rc != Z_STREAM_END);
    assert_int_equal(z.avail_in, 0); /* nothing after the gzip member */
    inflateEnd(&z);
}

/* ---- setup ------------------------------------------------------------------------------- */

static int ui_setup(void **state)
{
    server_start(&env.s, "ui", NULL);
    env.port = env.s.http_port;
    replay_capture_parser_test(&env.cap);
    replay_result rr;
    replay_opts o;
    memset(&o, 0, sizeof o);
    replay_run(env.s.port, &env.cap, &o, &rr);
    /* calls are assembled as the streams arrive: wait for every call of the capture */
    env.n = replay_capture_calls(&env.cap);
    json_decref(replay_wait_calls(&env.s, "/api/v1/calls?" WINDOW "&limit=1000", env.n));
    return 0;
}

static int ui_teardown(void **state)
{
    replay_capture_free(&env.cap);
    if (env.s.pid) server_stop(&env.s);
    server_destroy(&env.s);
    return 0;
}

/* ---- the UI -------------------------------------------------------------------------------- */

/* A binary built without ui/dist: the page and the app's routes are the 503 page; files
 * are 404; the API works. */
static void check_not_built(const resp *root)
{
    printf("ui_serve_test: this cloudprof has no embedded UI (GET / is %d): checking the 503 page\n", root->status);
    expect_hdr(root, "Content-Type", "text/html; charset=utf-8");
    assert_true(body_has(root, "scripts/ui-build.sh"));
    assert_true(body_has(root, "not built"));
    const char *routes[] = {"/index.html", "/calls", "/tree?call=x"};
    for (size_t i = 0; i < CP_ARRAY_LEN(routes); i++) {
        resp r;
        req("GET", routes[i], NULL, &r);
        expect_status(&r, routes[i], 503);
        assert_true(body_has(&r, "scripts/ui-build.sh"));
        resp_free(&r);
    }
    expect_error("GET", "/assets/index.js", 404, "not_found", NULL);
    json_decref(http_get_json(env.port, "/api/v1/health", 200));
}

/* The page at /, /index.html and every client route, with its headers. */
static void test_page(void **state)
{
    resp root;
    req("GET", "/", NULL, &root);
    if (root.status == 503) {
        check_not_built(&root);
        resp_free(&root);
        return;
    }
    expect_status(&root, "GET /", 200);
    expect_hdr(&root, "Content-Type", "text/html; charset=utf-8");
    expect_hdr(&root, "Cache-Control", "no-cache");
    expect_hdr(&root, "X-Content-Type-Options", "nosniff");
    expect_hdr(&root, "Referrer-Policy", "no-referrer");
    expect_hdr(&root, "Content-Security-Policy", csp);
    char etag[128];
    hdr_copy(&root, "ETag", etag, sizeof etag);
    assert_true(strlen(etag) > 2 && etag[0] == '"' && etag[strlen(etag) - 1] == '"');
    assert_true(body_has(&root, "<html") && body_has(&root, "cloudprof"));

    /* the app's routes (query strings ignored) all get the same page */
    const char *routes[] = {"/index.html", "/calls", "/tree?call=x", "/pods", "/heaps", "/dump/td/12", "/calls/",
                            "/?from=1&to=2", "/a/b/c/d"};
    for (size_t i = 0; i < CP_ARRAY_LEN(routes); i++) {
        resp r;
        req("GET", routes[i], NULL, &r);
        expect_status(&r, routes[i], 200);
        expect_hdr(&r, "Content-Type", "text/html; charset=utf-8");
        expect_hdr(&r, "ETag", etag);
        expect_hdr(&r, "Content-Security-Policy", csp);
        assert_int_equal(r.body.len, root.body.len);
        assert_memory_equal(r.body.data, root.body.data, root.body.len);
        resp_free(&r);
    }

    /* revalidation: the page's ETag gives a 304 without a body */
    char h[300];
    snprintf(h, sizeof h, "If-None-Match: %s\r\n", etag);
    resp r;
    req("GET", "/calls", h, &r);
    expect_status(&r, "GET /calls If-None-Match", 304);
    assert_int_equal(r.body.len, 0);
    expect_hdr(&r, "ETag", etag);
    resp_free(&r);
    req("GET", "/", "If-None-Match: \"0000\"\r\n", &r);
    expect_status(&r, "GET / with another ETag", 200);
    resp_free(&r);

    /* HEAD: the headers of GET, no body on the wire */
    req("HEAD", "/", NULL, &r);
    expect_status(&r, "HEAD /", 200);
    expect_hdr(&r, "ETag", etag);
    char len[32];
    snprintf(len, sizeof len, "%zu", root.body.len);
    expect_hdr(&r, "Content-Length", len);
    resp_free(&r);
    cp_buf raw;
    cp_buf_init(&raw);
    const char head[] = "HEAD /calls HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    assert_int_equal(http_raw(env.port, head, sizeof head - 1, &raw), 0);
    const char *end = memmem(raw.data, raw.len, "\r\n\r\n", 4);
    assert_non_null(end);
    assert_int_equal((size_t)(end + 4 - (const char *)raw.data), raw.len);
    cp_buf_free(&raw);
    resp_free(&root);
}

/* The script and the style of index.html: type, caching, ETag, 304, gzip. */
static void check_asset(const char *path, const char *type)
{
    resp a;
    req("GET", path, NULL, &a);
    expect_status(&a, path, 200);
    expect_hdr(&a, "Content-Type", type);
    expect_hdr(&a, "Cache-Control", "public, max-age=31536000, immutable");
    expect_hdr(&a, "X-Content-Type-Options", "nosniff");
    expect_hdr(&a, "Referrer-Policy", "no-referrer");
    assert_null(hdr(&a, "Content-Security-Policy")); /* HTML only */
    assert_null(hdr(&a, "Content-Encoding"));
    assert_true(a.body.len > 0);
    char etag[128];
    hdr_copy(&a, "ETag", etag, sizeof etag);
    assert_true(etag[0] == '"');

    char h[400];
    resp r;
    /* 304 for the ETag alone, in a list, and weak */
    const char *forms[] = {"If-None-Match: %s\r\n", "If-None-Match: \"x\", %s\r\n", "If-None-Match: W/%s\r\n"};
    for (size_t i = 0; i < CP_ARRAY_LEN(forms); i++) {
        snprintf(h, sizeof h, forms[i], etag);
        req("GET", path, h, &r);
        expect_status(&r, h, 304);
        assert_int_equal(r.body.len, 0);
        expect_hdr(&r, "ETag", etag);
        expect_hdr(&r, "Cache-Control", "public, max-age=31536000, immutable");
        resp_free(&r);
    }

    /* gzip when accepted: another ETag, Vary, and the same bytes once inflated */
    req("GET", path, "Accept-Encoding: gzip, deflate, br\r\n", &r);
    expect_status(&r, "gzip", 200);
    if (a.body.len > 1000) { /* a real bundle always compresses by more than 10 % */
        expect_hdr(&r, "Content-Encoding", "gzip");
        expect_hdr(&r, "Vary", "Accept-Encoding");
        expect_hdr(&r, "Content-Type", type);
        assert_string_not_equal(hdr(&r, "ETag"), etag);
        assert_true(r.body.len < a.body.len);
        cp_buf plain;
        cp_buf_init(&plain);
        gunzip(&r.body, &plain);
        assert_int_equal(plain.len, a.body.len);
        assert_memory_equal(plain.data, a.body.data, a.body.len);
        cp_buf_free(&plain);
        char gz_etag[128];
        hdr_copy(&r, "ETag", gz_etag, sizeof gz_etag);
        resp_free(&r);
        snprintf(h, sizeof h, "Accept-Encoding: gzip\r\nIf-None-Match: %s\r\n", gz_etag);
        req("GET", path, h, &r);
        expect_status(&r, "gzip If-None-Match", 304);
        resp_free(&r);
        /* "*" accepts gzip too */
        req("GET", path, "Accept-Encoding: *\r\n", &r);
        expect_hdr(&r, "Content-Encoding", "gzip");
        resp_free(&r);
        expect_hdr(&a, "Vary", "Accept-Encoding");
    } else {
        resp_free(&r);
    }
    /* refused: q=0 (also against "*"), identity only, or a malformed q */
    const char *refuse[] = {"Accept-Encoding: gzip;q=0\r\n", "Accept-Encoding: gzip; q=0.000, *\r\n",
                            "Accept-Encoding: identity\r\n", "Accept-Encoding: br, deflate\r\n",
                            "Accept-Encoding: *;q=0\r\n", "Accept-Encoding: gzip;q=x\r\n"};
    for (size_t i = 0; i < CP_ARRAY_LEN(refuse); i++) {
        req("GET", path, refuse[i], &r);
        expect_status(&r, refuse[i], 200);
        const char *ce = hdr(&r, "Content-Encoding");
        if (ce) fail_msg("%s: got Content-Encoding %s", refuse[i], ce);
        assert_int_equal(r.body.len, a.body.len);
        assert_memory_equal(r.body.data, a.body.data, a.body.len);
        resp_free(&r);
    }
    /* q > 0 accepts */
    if (a.body.len > 1000) {
        req("GET", path, "Accept-Encoding: deflate;q=1.0, GZIP;q=0.5\r\n", &r);
        expect_hdr(&r, "Content-Encoding", "gzip");
        resp_free(&r);
    }
    resp_free(&a);
}

static void test_assets(void **state)
{
    resp page;
    req("GET", "/", NULL, &page);
    if (page.status == 503) { /* no UI in this binary: test_page checked the 503 page */
        printf("ui_serve_test: no embedded UI: asset checks skipped\n");
        resp_free(&page);
        return;
    }
    char *script = tag_attr(&page, "<script", "src");
    if (!script) {
        fail_msg("index.html has no <script src=...>: %.*s", (int)page.body.len, (const char *)page.body.data);
        return;
    }
    printf("ui_serve_test: script %s\n", script);
    assert_true(!strncmp(script, "/assets/", 8));
    check_asset(script, "text/javascript; charset=utf-8");
    char *style = tag_attr(&page, "<link rel=\"stylesheet\"", "href");
    if (style) {
        printf("ui_serve_test: style %s\n", style);
        check_asset(style, "text/css; charset=utf-8");
    }
    /* a query string does not matter for files either */
    char path[600];
    snprintf(path, sizeof path, "%s?v=2", script);
    resp r;
    req("GET", path, NULL, &r);
    expect_status(&r, path, 200);
    expect_hdr(&r, "Content-Type", "text/javascript; charset=utf-8");
    resp_free(&r);
    free(script);
    free(style);
    resp_free(&page);
}

/* Unknown files, other methods, and the API beside the UI. */
static void test_errors_and_api(void **state)
{
    expect_error("GET", "/nope.js", 404, "not_found", NULL);
    expect_error("GET", "/assets/nope-123.js", 404, "not_found", NULL);
    expect_error("GET", "/calls/x.png", 404, "not_found", NULL);
    resp r;
    req("HEAD", "/nope.css", NULL, &r); /* HEAD: the 404's headers only */
    expect_status(&r, "HEAD /nope.css", 404);
    expect_hdr(&r, "Content-Type", "application/json; charset=utf-8");
    resp_free(&r);
    const char *methods[] = {"POST", "PUT", "DELETE", "PATCH", "OPTIONS"};
    const char *paths[] = {"/", "/calls", "/index.html", "/nope.js"};
    for (size_t i = 0; i < CP_ARRAY_LEN(methods); i++) {
        for (size_t k = 0; k < CP_ARRAY_LEN(paths); k++) {
            req(methods[i], paths[k], NULL, &r);
            char what[64];
            snprintf(what, sizeof what, "%s %s", methods[i], paths[k]);
            expect_status(&r, what, 405);
            expect_hdr(&r, "Allow", "GET, HEAD");
            expect_hdr(&r, "Content-Type", "application/json; charset=utf-8");
            resp_free(&r);
        }
    }
    expect_error("POST", "/", 405, "method_not_allowed", NULL);

    /* the API answers as before: JSON, not the page */
    json_t *doc = http_get_json(env.port, "/api/v1/health", 200);
    assert_string_equal(json_string_value(json_object_get(doc, "status")), "ok");
    json_decref(doc);
    doc = http_get_json(env.port, "/api/v1/calls?" WINDOW "&limit=1000", 200);
    assert_int_equal(json_array_size(json_object_get(doc, "calls")), env.n);
    json_decref(doc);
    expect_error("GET", "/api/v1/nope", 404, "not_found", NULL);
    expect_error("GET", "/api/v1", 404, "not_found", NULL);
    expect_error("GET", "/api", 404, "not_found", NULL);
    expect_error("GET", "/api/calls", 404, "not_found", NULL);
    expect_error("GET", "/cdt/nope", 404, "not_found", NULL);
    expect_error("POST", "/api/v1/calls", 405, "method_not_allowed", NULL);
    /* the upload paths stay the upload handler's */
    expect_error("GET", "/diagnostic/ns/2023/07/24/12/00/00/pod/x.td.txt", 405, "method_not_allowed", NULL);
}

/* ---- pods ------------------------------------------------------------------------------------- */

static size_t calls_count(const char *query)
{
    char path[16384];
    snprintf(path, sizeof path, "/api/v1/calls?" WINDOW "&limit=1000%s", query);
    json_t *doc = http_get_json(env.port, path, 200);
    json_t *calls = json_object_get(doc, "calls");
    assert_true(json_is_array(calls));
    assert_true(json_is_null(json_object_get(doc, "next_cursor")));
    size_t n = json_array_size(calls);
    json_decref(doc);
    return n;
}

static size_t stats_total(const char *query)
{
    char path[16384];
    snprintf(path, sizeof path, "/api/v1/calls/stats?" WINDOW "%s", query);
    json_t *doc = http_get_json(env.port, path, 200);
    json_t *t = json_object_get(doc, "total");
    assert_true(json_is_integer(t));
    size_t n = (size_t)json_integer_value(t);
    assert_false(json_is_true(json_object_get(doc, "partial")));
    json_decref(doc);
    return n;
}

/* Data rows of the CSV export (lines after the header); each must name pod (if not NULL). */
static size_t csv_rows(const char *query, const char *pod)
{
    char path[16384];
    snprintf(path, sizeof path, "/api/v1/calls.csv?" WINDOW "%s", query);
    resp r;
    req("GET", path, NULL, &r);
    expect_status(&r, path, 200);
    assert_true(!strncmp(hdr(&r, "Content-Type"), "text/csv", 8));
    char *text = strndup((const char *)r.body.data, r.body.len);
    char **lines;
    size_t n = split_lines(text, r.body.len, &lines);
    size_t rows = 0;
    assert_true(n >= 1);
    assert_true(!strncmp(lines[0], "Start (UTC);", 12));
    for (size_t i = 1; i < n; i++) {
        if (!lines[i][0]) continue;
        assert_true(lines[i][0] != '#'); /* not truncated */
        if (pod) assert_non_null(strstr(lines[i], pod));
        rows++;
    }
    free(lines);
    free(text);
    resp_free(&r);
    return rows;
}

static void test_pods_filter(void **state)
{
    const char *pod = env.cap.pod;
    char q[4096];
    /* every call is the capture's pod's */
    snprintf(q, sizeof q, "&pod=%s", pod);
    assert_int_equal(calls_count(q), env.n);

    /* the pod listed: all its calls, on the three endpoints; with other names too */
    const char *lists[] = {"&pods=%s", "&pods=other-pod_1,%s", "&pods=%s,%s", "&pods=-,%s,zz"};
    for (size_t i = 0; i < CP_ARRAY_LEN(lists); i++) {
        snprintf(q, sizeof q, lists[i], pod, pod);
        assert_int_equal(calls_count(q), env.n);
        assert_int_equal(stats_total(q), env.n);
        assert_int_equal(csv_rows(q, pod), env.n);
    }
    /* pods=- (the UI's "no pod"), other names, a prefix of the pod, the pod plus a byte */
    char prefix[300], longer[300];
    snprintf(prefix, sizeof prefix, "&pods=%.*s", (int)strlen(pod) - 1, pod);
    snprintf(longer, sizeof longer, "&pods=%sx", pod);
    const char *none[] = {"&pods=-", "&pods=other-pod_1,other-pod_2", prefix, longer};
    for (size_t i = 0; i < CP_ARRAY_LEN(none); i++) {
        assert_int_equal(calls_count(none[i]), 0);
        assert_int_equal(stats_total(none[i]), 0);
        assert_int_equal(csv_rows(none[i], NULL), 0);
    }
    /* with pod, namespace, service and q: all must hold */
    snprintf(q, sizeof q, "&pods=%s&pod=%s&namespace=%s", pod, pod, env.cap.ns);
    assert_int_equal(calls_count(q), env.n);
    snprintf(q, sizeof q, "&pods=-&pod=%s", pod);
    assert_int_equal(calls_count(q), 0);
    snprintf(q, sizeof q, "&pods=%s&namespace=elsewhere", pod);
    assert_int_equal(calls_count(q), 0);
    snprintf(q, sizeof q, "&pods=%s&q=-esc-ui", pod); /* the pod's name holds "esc-ui": excluded */
    assert_int_equal(calls_count(q), 0);
    assert_int_equal(stats_total(q), 0);
    snprintf(q, sizeof q, "&pods=%s&q=%%2Besc-ui", pod);
    assert_int_equal(calls_count(q), env.n);
    assert_int_equal(stats_total(q), env.n);
    assert_int_equal(calls_count("&pods=-&q=esc-ui"), 0);

    /* paging under pods: every call once */
    snprintf(q, sizeof q, "/api/v1/calls?" WINDOW "&limit=7&pods=%s", pod);
    char url[8192];
    snprintf(url, sizeof url, "%s", q);
    size_t seen = 0;
    for (int pages = 0;; pages++) {
        if (pages > 1000) fail_msg("paging does not end");
        json_t *doc = http_get_json(env.port, url, 200);
        seen += json_array_size(json_object_get(doc, "calls"));
        json_t *next = json_object_get(doc, "next_cursor");
        if (json_is_null(next)) {
            json_decref(doc);
            break;
        }
        snprintf(url, sizeof url, "%s&cursor=%s", q, json_string_value(next));
        json_decref(doc);
    }
    assert_int_equal(seen, env.n);
}

static void test_pods_errors_and_cursor(void **state)
{
    /* 1000 names are fine, 1001 are not */
    size_t cap = 1001 * 8 + 256;
    char *list = malloc(cap), *path = malloc(cap + 256);
    size_t len = 0;
    for (int i = 0; i < 1000; i++) len += (size_t)snprintf(list + len, cap - len, "%sp%04d", i ? "," : "", i);
    snprintf(path, cap + 256, "/api/v1/calls?" WINDOW "&pods=%s", list);
    json_decref(http_get_json(env.port, path, 200));
    snprintf(list + len, cap - len, ",p1000");
    const char *eps[] = {"/api/v1/calls", "/api/v1/calls/stats", "/api/v1/calls.csv"};
    for (size_t i = 0; i < CP_ARRAY_LEN(eps); i++) {
        snprintf(path, cap + 256, "%s?" WINDOW "&pods=%s", eps[i], list);
        expect_error("GET", path, 400, "bad_parameter", "pods");
    }
    /* empty names; a name over 1024 bytes (1024 is fine) */
    const char *empty[] = {"a,,b", ",a", "a,", ","};
    for (size_t i = 0; i < CP_ARRAY_LEN(empty); i++) {
        snprintf(path, cap + 256, "/api/v1/calls?" WINDOW "&pods=%s", empty[i]);
        expect_error("GET", path, 400, "bad_parameter", "pods");
    }
    memset(list, 'a', 1025);
    list[1025] = 0;
    snprintf(path, cap + 256, "/api/v1/calls/stats?" WINDOW "&pods=x,%s", list);
    expect_error("GET", path, 400, "bad_parameter", "pods");
    list[1024] = 0;
    snprintf(path, cap + 256, "/api/v1/calls/stats?" WINDOW "&pods=x,%s", list);
    json_decref(http_get_json(env.port, path, 200));
    free(list);
    free(path);

    /* a cursor is for its pods: the same set in another order is fine, another set not */
    char q[4096];
    snprintf(q, sizeof q, "/api/v1/calls?" WINDOW "&limit=2&pods=%s,zz", env.cap.pod);
    json_t *doc = http_get_json(env.port, q, 200);
    assert_int_equal(json_array_size(json_object_get(doc, "calls")), 2);
    const char *cur = json_string_value(json_object_get(doc, "next_cursor"));
    assert_non_null(cur);
    char url[8192];
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=2&pods=zz,%s,zz&cursor=%s", env.cap.pod, cur);
    json_decref(http_get_json(env.port, url, 200));
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=2&pods=%s&cursor=%s", env.cap.pod, cur);
    expect_error("GET", url, 400, "cursor_mismatch", "cursor");
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=2&pods=-&cursor=%s", cur);
    expect_error("GET", url, 400, "cursor_mismatch", "cursor");
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=2&cursor=%s", cur);
    expect_error("GET", url, 400, "cursor_mismatch", "cursor");
    json_decref(doc);
}

/* hide_system (ui.md §3.6): the capture's actuator probes are hidden, on the three
 * endpoints, and the rest stay; the flag is part of the cursor's filters. */
static int is_probe(json_t *c)
{
    const char *m = json_string_value(json_object_get(c, "method"));
    if (m && strstr(m, "SocketInputStream.read")) return 1;
    json_t *urls = json_object_get(json_object_get(c, "params"), "web.url"), *u;
    size_t i;
    json_array_foreach(urls, i, u) {
        const char *s = json_string_value(u);
        if (strstr(s, "/actuator/health") || strstr(s, "/actuator/prometheus") || strstr(s, "/actuator/ready") ||
            strstr(s, "/actuator/metrics") || strstr(s, "/probes/")) return 1;
    }
    return json_object_get(json_object_get(c, "params"), "call.idle") != NULL;
}

static void test_hide_system(void **state)
{
    json_t *doc = http_get_json(env.port, "/api/v1/calls?" WINDOW "&limit=1000", 200);
    json_t *calls = json_object_get(doc, "calls"), *c;
    size_t i, probes = 0;
    json_array_foreach(calls, i, c) probes += is_probe(c);
    json_decref(doc);
    assert_true(probes >= 5); /* the capture's health checks */
    assert_true(probes < env.n);
    assert_int_equal(calls_count("&hide_system=true"), env.n - probes);
    assert_int_equal(stats_total("&hide_system=1"), env.n - probes);
    assert_int_equal(csv_rows("&hide_system=1", NULL), env.n - probes);
    assert_int_equal(calls_count("&hide_system=false"), env.n);
    /* combined with a search: the health checks are all hidden */
    assert_int_equal(calls_count("&hide_system=1&q=actuator%2Fhealth"), 0);
    assert_true(calls_count("&q=actuator%2Fhealth") > 0);
    expect_error("GET", "/api/v1/calls?" WINDOW "&hide_system=maybe", 400, "bad_parameter", "hide_system");

    doc = http_get_json(env.port, "/api/v1/calls?" WINDOW "&limit=2&hide_system=1", 200);
    const char *cur = json_string_value(json_object_get(doc, "next_cursor"));
    assert_non_null(cur);
    char url[4096];
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=2&hide_system=1&cursor=%s", cur);
    json_decref(http_get_json(env.port, url, 200));
    snprintf(url, sizeof url, "/api/v1/calls?" WINDOW "&limit=2&cursor=%s", cur);
    expect_error("GET", url, 400, "cursor_mismatch", "cursor");
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_page),
        cmocka_unit_test(test_assets),
        cmocka_unit_test(test_errors_and_api),
        cmocka_unit_test(test_pods_filter),
        cmocka_unit_test(test_pods_errors_and_cursor),
        cmocka_unit_test(test_hide_system),
    };
    return cmocka_run_group_tests_name("ui_serve", tests, ui_setup, ui_teardown);
}
