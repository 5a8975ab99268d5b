/* value_api_test.c -- "view full value" through the real server (issue 19 item 8, ui.md
 * §4.5, §4.6, §8.5): GET /api/v1/calls/{id}/value?param=&key=.
 *
 * The fixtures' values are all short (the longest SQL has 174 characters), so the test
 * imports a CBOR raw trace (foreign-formats.md §3) whose nested record carries two long
 * attributes: 40 000 and 20 000 characters, with non-ASCII ones. Then:
 *  - the call's tree shows both trimmed to 15 000 characters with "length" and "key";
 *  - /value with that key answers exactly the text that was sent (text/plain with its
 *    Content-Length, and format=json), from the hot tier and again once compacted;
 *  - a wrong key or another param's key: 404 value_not_found; a bad or missing param or
 *    key, an unknown parameter, a bad id: 400; an unknown call: 404;
 *  - namespaces (`--auth basic`, team-a = ns-a, team-b = ns-b): a user of ns-b asking for
 *    the ns-a call gets 404 call_not_found like an unknown id; no login: 401;
 *  - the window's aggregate profile (which lists no calls) names the call in "source";
 *  - /config says full_values.
 *
 * CP_TEST_BOTH_PAIRS: SQLite + directory, and PostgreSQL + S3 (pair_util.h).
 */
#include "auth_util.h"
#include "http_util.h"
#include "pair_util.h"
#include "server_util.h"

#include "store/cp_catalog.h"
#include "store/cp_hot.h"

#include <crypt.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIN "from=1711999000000&to=1712003000000" /* the imported call (2024-04-01) */
#define TOKEN "value-api-upload-token-0123456789"
#define PAYLOAD_CHARS 40000
#define XML_CHARS 20000

typedef struct env {
    test_server s;
    char *dir, *catalog, *store;
    char users[1100], groups[1100], token[1100];
    const char *args[48];
    char *payload, *xml;   /* the long attribute values sent (NUL-terminated UTF-8) */
    char id[128];          /* the imported call */
} env;

static env E;

/* ---- requests -------------------------------------------------------------------------------- */

/* The Authorization header line of user (password user + "-pw"), the token's for
 * "token", nothing for NULL. */
static void auth_line(const char *user, char *out, size_t outlen) { auth_header(user, TOKEN, out, outlen); }

/* A request as user: the status, the body and headers (either may be NULL). */
static int req(const char *user, const char *method, const char *path, const void *p, size_t n, cp_buf *body,
               cp_buf *headers)
{
    char a[512];
    auth_line(user, a, sizeof a);
    int st = 0;
    assert_int_equal(http_request(E.s.http_port, method, path, a[0] ? a : NULL, p, n, &st, body, headers), 0);
    return st;
}

static json_t *get_json(const char *user, const char *path, int want)
{
    cp_buf b;
    cp_buf_init(&b);
    int st = req(user, "GET", path, NULL, 0, &b, NULL);
    if (st != want)
        server_fail(&E.s, "GET %s as %s: %d (want %d): %.*s", path, user, st, want, (int)b.len, (char *)b.data);
    json_t *j = json_loadb((const char *)b.data, b.len, 0, NULL);
    if (!j) server_fail(&E.s, "GET %s: not JSON: %.*s", path, (int)b.len, (char *)b.data);
    cp_buf_free(&b);
    return j;
}

static const char *jstr(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

/* An error answer: its status and code (and the parameter it names, when given). */
static void expect_error(const char *user, const char *path, int want, const char *code, const char *param)
{
    json_t *e = get_json(user, path, want);
    if (strcmp(jstr(e, "code"), code)) server_fail(&E.s, "GET %s: code %s, want %s", path, jstr(e, "code"), code);
    if (param) assert_string_equal(jstr(e, "parameter"), param);
    json_decref(e);
}

/* ---- the trace ------------------------------------------------------------------------------- */

/* CBOR pieces (RFC 8949). */
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
    uint8_t t[8];
    for (int i = 0; i < 8; i++) t[i] = (uint8_t)(w >> (8 * i));
    cb_head(b, 2, 8);
    cp_buf_append(b, t, 8);
}

/* Strings 1..5, methods 1 (Shop.order) and 2 (Shop.render). */
static void cb_symbols(cp_buf *b)
{
    const char *texts[] = {"com.acme.Shop", "order", "()V", "render", "(Ljava/lang/String;)V"};
    for (int i = 0; i < 5; i++) {
        cb_head(b, 6, 1);
        cb_head(b, 4, 3);
        cb_head(b, 0, (uint64_t)i + 1);
        cb_text(b, texts[i]);
        cb_head(b, 0, 0);
    }
    const uint64_t methods[2][4] = {{1, 1, 2, 3}, {2, 1, 4, 5}};
    for (int m = 0; m < 2; m++) {
        cb_head(b, 6, 2);
        cb_head(b, 4, 4);
        for (int i = 0; i < 4; i++) cb_head(b, 0, methods[m][i]);
    }
}

/* n characters cycling through ASCII, Latin-1 and CJK ones, then `tail`. */
static char *long_text(size_t n, const char *tail)
{
    static const char *const chars[] = {"a", "b", "\xc3\xa9", "<", "\xe6\x97\xa5", " ", "\"", "z"};
    cp_buf b;
    cp_buf_init(&b);
    for (size_t i = 0; i < n; i++) cp_buf_puts(&b, chars[i % CP_ARRAY_LEN(chars)]);
    cp_buf_puts(&b, tail);
    cp_buf_putc(&b, 0);
    return (char *)b.data;
}

/* One call: Shop.order with TraceBegin, holding Shop.render whose attributes are the two
 * long values and a short one. */
static void make_trace(cp_buf *b)
{
    cp_buf_reset(b);
    cb_symbols(b);
    cb_head(b, 6, 11);
    cb_head(b, 4, 5);
    cb_word(b, 1ull << 40 | 1000);
    cb_head(b, 6, 33); /* TraceBegin [clock, traceId] */
    cb_head(b, 4, 2);
    cb_head(b, 0, 1712000000000ull);
    cb_head(b, 0, 7);
    cb_head(b, 6, 11); /* the nested record */
    cb_head(b, 4, 3);
    cb_word(b, 2ull << 40 | 1100);
    cb_head(b, 6, 12);
    cb_head(b, 5, 3);
    cb_text(b, "payload");
    cb_text(b, E.payload);
    cb_text(b, "xml");
    cb_text(b, E.xml);
    cb_text(b, "user");
    cb_text(b, "alice");
    cb_word(b, 1ull << 40 | 1900);
    cb_head(b, 6, 12);
    cb_head(b, 5, 1);
    cb_text(b, "thread");
    cb_text(b, "main");
    cb_word(b, 2ull << 40 | 2000);
}

/* ---- setup ------------------------------------------------------------------------------------ */

static void import_call(void)
{
    cp_buf t, body;
    cp_buf_init(&t);
    cp_buf_init(&body);
    make_trace(&t);
    int st = req("token", "POST", "/api/v1/import?namespace=ns-a&pod=pod-a&format=cbor", t.data, t.len, &body, NULL);
    if (st != 200) server_fail(&E.s, "import: %d: %.*s", st, (int)body.len, (char *)body.data);
    json_t *rep = json_loadb((const char *)body.data, body.len, 0, NULL);
    assert_non_null(rep);
    assert_int_equal(json_integer_value(json_object_get(rep, "calls")), 1);
    json_decref(rep);
    cp_buf_free(&t);
    cp_buf_free(&body);
    json_t *doc = get_json("root", "/api/v1/calls?" WIN "&namespace=ns-a", 200);
    json_t *calls = json_object_get(doc, "calls");
    assert_int_equal(json_array_size(calls), 1);
    snprintf(E.id, sizeof E.id, "%s", jstr(json_array_get(calls, 0), "id"));
    json_decref(doc);
}

static int setup(void **state)
{
    (void)state;
    test_pair_require();
    test_pair_env();
    E.dir = make_temp_dir("value-api");
    E.catalog = test_catalog_spec(E.dir);
    E.store = test_store_url(E.dir);
    static const char *const users[] = {"alice", "bob", "root", NULL};
    auth_files(E.dir, users, "viewer: alice bob\nadmin: root\nteam-a: alice\nteam-b: bob\n", TOKEN, E.users, E.groups,
               E.token, sizeof E.users);
    size_t n = 0;
    for (const char *const *pf = test_pair_flags(E.catalog, E.store); *pf; pf++) E.args[n++] = *pf;
    const char *extra[] = {"--auth", "basic", "--auth-users", E.users, "--auth-groups", E.groups,
                           "--auth-namespaces", "team-a=ns-a", "--auth-namespaces", "team-b=ns-b",
                           "--auth-namespaces", "admin=*", "--upload-token", E.token, NULL};
    for (const char *const *x = extra; *x; x++) E.args[n++] = *x;
    E.args[n] = NULL;
    server_start(&E.s, "value-api", E.args);
    E.payload = long_text(PAYLOAD_CHARS - 4, "-end");
    E.xml = long_text(XML_CHARS - 7, "</xml2>");
    import_call();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (E.s.pid) server_stop(&E.s);
    server_destroy(&E.s);
    test_pair_free(E.dir, E.catalog, E.store);
    free(E.payload);
    free(E.xml);
    return 0;
}

/* ---- the tree's groups ------------------------------------------------------------------------ */

/* The first group of param `name` anywhere in the tree (nodes and nested params). */
static json_t *find_group(json_t *doc, json_t *node, const char *name)
{
    json_t *names = json_object_get(doc, "params"), *p, *g, *c;
    size_t i, j;
    json_array_foreach(json_object_get(node, "params"), i, p)
    {
        size_t pi = (size_t)json_integer_value(json_object_get(p, "param"));
        const char *pn = json_string_value(json_array_get(names, pi));
        json_array_foreach(json_object_get(p, "groups"), j, g)
        {
            if (pn && !strcmp(pn, name)) return g;
            json_t *sub = find_group(doc, g, name);
            if (sub) return sub;
        }
    }
    json_array_foreach(json_object_get(node, "children"), i, c)
    {
        json_t *g2 = find_group(doc, c, name);
        if (g2) return g2;
    }
    return NULL;
}

/* Characters of UTF-8 text, as the tree counts "length". */
static size_t chars_of(const char *s)
{
    size_t c = 0;
    for (; *s; s++) c += ((unsigned char)*s & 0xC0) != 0x80;
    return c;
}

/* The key the call's tree gives the trimmed group of param `name` (checked on the way). */
static void trimmed_key(const char *name, const char *full, char key[17])
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/calls/%s/tree", E.id);
    json_t *doc = get_json("alice", path, 200);
    json_t *g = find_group(doc, json_object_get(doc, "root"), name);
    if (!g) server_fail(&E.s, "no group of %s in the tree", name);
    assert_true(json_is_true(json_object_get(g, "trimmed")));
    assert_int_equal(json_integer_value(json_object_get(g, "length")), chars_of(full));
    const char *shown = jstr(g, "value");
    assert_int_equal(chars_of(shown), 15000);
    assert_memory_equal(shown, full, strlen(shown)); /* the start of what was sent */
    const char *k = jstr(g, "key");
    assert_non_null(k);
    assert_int_equal(strlen(k), 16);
    assert_int_equal(strspn(k, "0123456789abcdef"), 16);
    snprintf(key, 17, "%s", k);
    assert_string_equal(jstr(g, "source"), E.id); /* the call it was seen in */
    json_decref(doc);
}

/* The aggregate profile of the window lists no calls: its trimmed group of `name` names
 * the call to fetch the whole value from ("source"), with the tree's key. */
static void profile_source(const char *name, const char *key)
{
    json_t *doc = get_json("alice", "/api/v1/profile?" WIN "&duration=%3E%3D0ms", 200);
    assert_int_equal(json_array_size(json_object_get(doc, "calls")), 0);
    json_t *g = find_group(doc, json_object_get(doc, "root"), name);
    if (!g) server_fail(&E.s, "no group of %s in the profile", name);
    assert_true(json_is_true(json_object_get(g, "trimmed")));
    assert_string_equal(jstr(g, "key"), key);
    assert_string_equal(jstr(g, "source"), E.id);
    json_decref(doc);
}

/* GET /value as user: exactly `full` as text/plain with its Content-Length, and as JSON. */
static void expect_full(const char *user, const char *name, const char *key, const char *full)
{
    char path[512], v[128];
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?param=%s&key=%s", E.id, name, key);
    cp_buf body, hdr;
    cp_buf_init(&body);
    cp_buf_init(&hdr);
    int st = req(user, "GET", path, NULL, 0, &body, &hdr);
    if (st != 200) server_fail(&E.s, "GET %s: %d: %.*s", path, st, (int)body.len, (char *)body.data);
    assert_true(http_header(&hdr, "Content-Type", v, sizeof v));
    assert_string_equal(v, "text/plain; charset=utf-8");
    assert_true(http_header(&hdr, "Content-Length", v, sizeof v));
    assert_int_equal(strtoull(v, NULL, 10), strlen(full));
    assert_int_equal(body.len, strlen(full));
    assert_memory_equal(body.data, full, body.len);
    /* HEAD: the same headers, no body */
    assert_int_equal(req(user, "HEAD", path, NULL, 0, &body, &hdr), 200);
    assert_int_equal(body.len, 0);
    cp_buf_free(&body);
    cp_buf_free(&hdr);
    strcat(path, "&format=json");
    json_t *doc = get_json(user, path, 200);
    assert_string_equal(jstr(doc, "param"), name);
    assert_string_equal(jstr(doc, "value"), full);
    assert_int_equal(json_integer_value(json_object_get(doc, "length")), chars_of(full));
    json_decref(doc);
}

static int on_cold(void *ud, const struct cp_cold_file *f)
{
    if (f->ns && !strcmp(f->ns, "ns-a")) ++*(size_t *)ud;
    return 0;
}

/* `cloudprof compact` now: the 2024 call goes to a cold calls file. */
static void compact_now(void)
{
    test_pair_compact(E.s.data, E.catalog, E.store);
    cp_reader *r = NULL;
    char msg[512];
    if (cp_reader_open(E.catalog, &r, msg, sizeof msg) != CP_OK) fail_msg("reader: %s", msg);
    cp_cold_query q = {1711999000000LL, 1712003000000LL, NULL, 0, INT64_MAX, NULL, 0, NULL};
    size_t files = 0, skipped = 0;
    assert_int_equal(cp_reader_cold_files(r, &q, on_cold, &files, &skipped), CP_OK);
    cp_reader_close(r);
    if (!files) fail_msg("compaction left no cold calls file of ns-a");
}

/* ---- tests ------------------------------------------------------------------------------------ */

static void test_full_values(void **state)
{
    (void)state;
    char kp[17], kx[17];
    trimmed_key("payload", E.payload, kp);
    trimmed_key("xml", E.xml, kx);
    assert_string_not_equal(kp, kx);
    expect_full("alice", "payload", kp, E.payload);
    expect_full("alice", "xml", kx, E.xml);
    expect_full("root", "payload", kp, E.payload);
    profile_source("payload", kp);
    profile_source("xml", kx);
    /* the key in capitals is the same key */
    char upper[17];
    for (int i = 0; i < 17; i++) upper[i] = (char)(kp[i] >= 'a' && kp[i] <= 'f' ? kp[i] - 32 : kp[i]);
    expect_full("alice", "payload", upper, E.payload);
    /* the same from the cold tier once compacted (the trees' keys do not change) */
    compact_now();
    char kp2[17];
    trimmed_key("payload", E.payload, kp2);
    assert_string_equal(kp, kp2);
    profile_source("payload", kp);
    expect_full("alice", "payload", kp, E.payload);
    expect_full("alice", "xml", kx, E.xml);
}

static void test_errors(void **state)
{
    (void)state;
    char kp[17], path[512], wrong[17];
    trimmed_key("payload", E.payload, kp);
    snprintf(wrong, sizeof wrong, "%s", kp);
    wrong[15] = wrong[15] == '0' ? '1' : '0';
    /* no such value: a wrong key, the key under another param, a param the call lacks */
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?param=payload&key=%s", E.id, wrong);
    expect_error("alice", path, 404, "value_not_found", NULL);
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?param=xml&key=%s", E.id, kp);
    expect_error("alice", path, 404, "value_not_found", NULL);
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?param=nope&key=%s", E.id, kp);
    expect_error("alice", path, 404, "value_not_found", NULL);
    /* bad requests */
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?key=%s", E.id, kp);
    expect_error("alice", path, 400, "bad_parameter", "param");
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?param=&key=%s", E.id, kp);
    expect_error("alice", path, 400, "bad_parameter", "param");
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?param=payload", E.id);
    expect_error("alice", path, 400, "bad_parameter", "key");
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?param=payload&key=%.15s", E.id, kp);
    expect_error("alice", path, 400, "bad_parameter", "key");
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?param=payload&key=%.15sg", E.id, kp);
    expect_error("alice", path, 400, "bad_parameter", "key");
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?param=payload&key=%s&format=xml", E.id, kp);
    expect_error("alice", path, 400, "bad_parameter", "format");
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?param=payload&key=%s&x=1", E.id, kp);
    expect_error("alice", path, 400, "unknown_parameter", "x");
    snprintf(path, sizeof path, "/api/v1/calls/not-an-id/value?param=payload&key=%s", kp);
    expect_error("alice", path, 400, "bad_id", NULL);
    /* an unknown call */
    snprintf(path, sizeof path, "/api/v1/calls/1-2-3-4-5-0000000000000000/value?param=payload&key=%s", kp);
    expect_error("root", path, 404, "call_not_found", NULL);
    /* another namespace's call is an unknown one; no login is a 401 */
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?param=payload&key=%s", E.id, kp);
    expect_error("bob", path, 404, "call_not_found", NULL);
    snprintf(path, sizeof path, "/api/v1/calls/%s/tree", E.id);
    expect_error("bob", path, 404, "call_not_found", NULL); /* as its tree */
    snprintf(path, sizeof path, "/api/v1/calls/%s/value?param=payload&key=%s", E.id, kp);
    assert_int_equal(req(NULL, "GET", path, NULL, 0, NULL, NULL), 401);
    /* only GET and HEAD */
    assert_int_equal(req("root", "DELETE", path, NULL, 0, NULL, NULL), 405);
    /* the feature is announced */
    json_t *cfg = get_json("alice", "/api/v1/config", 200);
    assert_true(json_is_true(json_object_get(json_object_get(cfg, "features"), "full_values")));
    json_decref(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_values),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
