/* ns_isolation_test.c -- issue 17, namespaces per principal through the real server
 * (`--auth basic --auth-namespaces team-a=ns-a --auth-namespaces team-b=ns-b`):
 *  - data in two namespaces: calls imported and then compacted into cold files, calls
 *    imported afterwards (hot), thread dumps and GC logs uploaded (compacted too) -- all
 *    through the upload token;
 *  - a user of namespace A gets nothing of B from any endpoint: /services, /calls (pages
 *    full, paging exact), /calls/stats (totals exact), /calls.csv, /calls/{id} and its tree,
 *    trace and export, /tree (GET and POST, a mix of ids counts only A's), /tree/export,
 *    /dumps (list, file, views, summary, gc, bulk zip, the legacy download, the thread-dump
 *    series and a profile's tree), imports and uploads into B;
 *  - viewer DELETE -> 403; operator DELETE of its own namespace's dump works, of the
 *    other's -> 404 and the file stays.
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

#define WIN "from=1700000000000&to=1712999999999" /* every fixture's calls */
#define DWIN "from=1702900000000&to=1703000000000" /* the uploaded dumps */
#define DIR_PATH "2023/12/19/06/17/34"
#define TOKEN "ns-isolation-upload-token-0123456789"

typedef struct env {
    test_server s;
    char *dir, *catalog, *store;
    char users[1100], groups[1100], token[1100];
    const char *args[48];
} env;

static env E;

/* ---- setup ------------------------------------------------------------------------------------ */

/* "Authorization: Basic ..." for user (password = user + "-pw"); "" for none; the token
 * for "token". */
static void auth_line(const char *user, char *out, size_t outlen) { auth_header(user, TOKEN, out, outlen); }

static int req(const char *user, const char *method, const char *path, const char *ctype, const void *p, size_t n,
               cp_buf *body)
{
    char hdr[1024], a[512];
    auth_line(user, a, sizeof a);
    snprintf(hdr, sizeof hdr, "%s%s%s%s", a, ctype ? "Content-Type: " : "", ctype ? ctype : "", ctype ? "\r\n" : "");
    int st = 0;
    assert_int_equal(http_request(E.s.http_port, method, path, hdr[0] ? hdr : NULL, p, n, &st, body, NULL), 0);
    return st;
}

static json_t *get_json(const char *user, const char *path, int want)
{
    cp_buf b;
    cp_buf_init(&b);
    int st = req(user, "GET", path, NULL, NULL, 0, &b);
    if (st != want) server_fail(&E.s, "GET %s as %s: %d (want %d): %.*s", path, user, st, want, (int)b.len, (char *)b.data);
    json_t *j = json_loadb((const char *)b.data, b.len, 0, NULL);
    if (!j) server_fail(&E.s, "GET %s: not JSON", path);
    cp_buf_free(&b);
    return j;
}

static int get_status(const char *user, const char *path)
{
    return req(user, "GET", path, NULL, NULL, 0, NULL);
}

static void import_as(const char *user, const char *fixture, const char *ns, const char *pod, int want)
{
    cp_buf f, body;
    cp_buf_init(&f);
    cp_buf_init(&body);
    load_fixture(fixture, &f);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/import?namespace=%s&pod=%s", ns, pod);
    int st = req(user, "POST", path, "application/octet-stream", f.data, f.len, &body);
    if (st != want) server_fail(&E.s, "import %s into %s as %s: %d (want %d): %.*s", fixture, ns, user, st, want,
                                (int)body.len, (char *)body.data);
    cp_buf_free(&f);
    cp_buf_free(&body);
}

static void upload_as(const char *user, const char *fixture, const char *ns, const char *pod, int want)
{
    cp_buf f, body;
    cp_buf_init(&f);
    cp_buf_init(&body);
    char rel[256], path[512];
    snprintf(rel, sizeof rel, "dumps/%s", fixture);
    load_fixture(rel, &f);
    snprintf(path, sizeof path, "/diagnostic/%s/" DIR_PATH "/%s/%s", ns, pod, fixture);
    int st = req(user, "PUT", path, "application/octet-stream", f.data, f.len, &body);
    if (st != want) server_fail(&E.s, "upload %s into %s as %s: %d (want %d): %.*s", fixture, ns, user, st, want,
                                (int)body.len, (char *)body.data);
    cp_buf_free(&f);
    cp_buf_free(&body);
}

typedef struct cold_count {
    size_t a, b;
} cold_count;

static int on_cold(void *ud, const struct cp_cold_file *f)
{
    cold_count *c = ud;
    if (f->ns && !strcmp(f->ns, "ns-a")) c->a++;
    if (f->ns && !strcmp(f->ns, "ns-b")) c->b++;
    return 0;
}

/* `cloudprof compact` now: every imported call (and uploaded dump) becomes cold. */
static void compact_now(void)
{
    test_pair_compact(E.s.data, E.catalog, E.store);
    cp_reader *r = NULL;
    char msg[512];
    if (cp_reader_open(E.catalog, &r, msg, sizeof msg) != CP_OK) fail_msg("reader: %s", msg);
    cp_cold_query q = {1700000000000LL, 1712999999999LL, NULL, 0, INT64_MAX, NULL, 0, NULL};
    cold_count c = {0, 0};
    size_t skipped = 0;
    assert_int_equal(cp_reader_cold_files(r, &q, on_cold, &c, &skipped), CP_OK);
    cp_reader_close(r);
    if (!c.a || !c.b) fail_msg("compaction left no cold calls file (ns-a %zu, ns-b %zu)", c.a, c.b);
}

static int setup(void **state)
{
    (void)state;
    test_pair_require();
    test_pair_env();
    E.dir = make_temp_dir("ns-isolation");
    E.catalog = test_catalog_spec(E.dir);
    E.store = test_store_url(E.dir);
    static const char *const users[] = {"alice", "oscar", "bob", "root", NULL};
    auth_files(E.dir, users, "viewer: alice bob\noperator: oscar\nadmin: root\nteam-a: alice oscar\nteam-b: bob\n", TOKEN, E.users, E.groups,
               E.token, sizeof E.users);
    size_t n = 0;
    for (const char *const *pf = test_pair_flags(E.catalog, E.store); *pf; pf++) E.args[n++] = *pf;
    const char *extra[] = {"--max-query-span", "400", "--auth", "basic", "--auth-users", E.users, "--auth-groups",
                           E.groups, "--auth-namespaces", "team-a=ns-a", "--auth-namespaces", "team-b=ns-b",
                           "--auth-namespaces", "admin=*", "--upload-token", E.token, NULL};
    for (const char *const *x = extra; *x; x++) E.args[n++] = *x;
    E.args[n] = NULL;
    server_start(&E.s, "ns-isolation", E.args);

    /* cold: imported, uploaded, then compacted */
    import_as("token", "foreign/shop.trcbin", "ns-a", "pod-a1", 200);
    import_as("token", "foreign/shop.trcbin", "ns-b", "pod-b1", 200);
    upload_as("token", "20231219T061734UTC.td.txt", "ns-a", "pod-a1", 201);
    upload_as("token", "20231219T061734UTC.td.txt", "ns-b", "pod-b1", 201);
    compact_now();
    /* hot: imported after the compaction */
    import_as("token", "foreign/shop-be.trcbin", "ns-a", "pod-a2", 200);
    import_as("token", "foreign/shop-be.trcbin", "ns-b", "pod-b2", 200);
    upload_as("token", "20231219T062953UTC.gc.log", "ns-a", "pod-a2", 201);
    upload_as("token", "20231219T062953UTC.gc.log", "ns-b", "pod-b2", 201);
    upload_as("token", "20231219T061734UTC.top.txt", "ns-a", "pod-a2", 201);
    upload_as("token", "20231219T061734UTC.top.txt", "ns-b", "pod-b2", 201);
    upload_as("token", "go-goroutine.pprof", "ns-b", "pod-b2", 201);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (E.s.pid) server_stop(&E.s);
    server_destroy(&E.s);
    test_pair_free(E.dir, E.catalog, E.store);
    return 0;
}

/* ---- helpers ------------------------------------------------------------------------------------ */

static const char *jstr(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

/* Every call of the query (paged with limit per page) as user: their ids in *ids
 * (json array, incref'd); fails when a call of another namespace than ns shows. */
static json_t *all_calls(const char *user, const char *query, size_t limit, const char *ns)
{
    json_t *ids = json_array();
    char cursor[512] = "";
    for (int pages = 0; pages < 1000; pages++) {
        char path[1024];
        snprintf(path, sizeof path, "/api/v1/calls?" WIN "%s%s&limit=%zu%s%s", query[0] ? "&" : "", query, limit,
                 cursor[0] ? "&cursor=" : "", cursor);
        json_t *doc = get_json(user, path, 200);
        json_t *calls = json_object_get(doc, "calls"), *c;
        size_t i;
        json_array_foreach(calls, i, c)
        {
            if (ns && strcmp(jstr(c, "namespace"), ns)) fail_msg("%s sees a call of %s", user, jstr(c, "namespace"));
            json_array_append(ids, json_object_get(c, "id"));
        }
        const char *next = jstr(doc, "next_cursor");
        if (!next) next = jstr(doc, "cursor");
        if (next && json_array_size(calls) != limit) fail_msg("a page of %zu calls (limit %zu) before the end", json_array_size(calls), limit);
        if (!next) {
            json_decref(doc);
            return ids;
        }
        snprintf(cursor, sizeof cursor, "%s", next);
        json_decref(doc);
    }
    fail_msg("too many pages");
    return NULL;
}

/* The id of a dump of ns of a type (as root). */
static void dump_id(const char *ns, const char *type, char *out, size_t outlen)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/dumps?" DWIN "&namespace=%s&type=%s", ns, type);
    json_t *doc = get_json("root", path, 200);
    json_t *d = json_array_get(json_object_get(doc, "dumps"), 0);
    if (!d) d = json_array_get(json_object_get(doc, "items"), 0);
    if (!d) server_fail(&E.s, "no %s dump of %s", type, ns);
    snprintf(out, outlen, "%s", jstr(d, "id"));
    json_decref(doc);
}

/* The dumps listed for user (the array of whatever key the answer uses). */
static json_t *dumps_list(const json_t *doc)
{
    json_t *d = json_object_get(doc, "dumps");
    return d ? d : json_object_get(doc, "items");
}

/* ---- the tests ---------------------------------------------------------------------------------- */

static void test_services_and_me(void **state)
{
    (void)state;
    json_t *doc = get_json("alice", "/api/v1/services?" WIN, 200);
    json_t *nss = json_object_get(doc, "namespaces");
    assert_int_equal(json_array_size(nss), 1);
    assert_string_equal(jstr(json_array_get(nss, 0), "namespace"), "ns-a");
    json_decref(doc);
    doc = get_json("root", "/api/v1/services?" WIN, 200);
    assert_int_equal(json_array_size(json_object_get(doc, "namespaces")), 2);
    json_decref(doc);
    doc = get_json("bob", "/api/v1/me", 200);
    assert_string_equal(jstr(doc, "user"), "bob");
    assert_string_equal(jstr(doc, "role"), "viewer");
    json_t *ns = json_object_get(doc, "namespaces");
    assert_int_equal(json_array_size(ns), 1);
    assert_string_equal(json_string_value(json_array_get(ns, 0)), "ns-b");
    json_decref(doc);
    doc = get_json("root", "/api/v1/me", 200);
    assert_string_equal(json_string_value(json_object_get(doc, "namespaces")), "*");
    json_decref(doc);
}

static void test_calls(void **state)
{
    (void)state;
    /* root's view, per namespace: what each user must get exactly */
    json_t *ra = all_calls("root", "namespace=ns-a", 1000, "ns-a");
    json_t *rb = all_calls("root", "namespace=ns-b", 1000, "ns-b");
    assert_true(json_array_size(ra) > 5);
    assert_true(json_array_size(rb) > 5);
    /* pages stay full and paging is exact: small pages, every call of A once */
    json_t *a = all_calls("alice", "", 3, "ns-a");
    assert_int_equal(json_array_size(a), json_array_size(ra));
    json_t *a2 = all_calls("alice", "sort=duration_ms", 4, "ns-a");
    assert_int_equal(json_array_size(a2), json_array_size(ra));
    json_t *b = all_calls("bob", "", 5, "ns-b");
    assert_int_equal(json_array_size(b), json_array_size(rb));
    /* asking for B by name gives A's user nothing */
    json_t *none = all_calls("alice", "namespace=ns-b", 10, NULL);
    assert_int_equal(json_array_size(none), 0);
    json_decref(none);
    json_t *qa = all_calls("alice", "q=GET", 10, "ns-a"); /* a search too */
    json_decref(qa);

    /* stats: totals exact */
    json_t *sr = get_json("root", "/api/v1/calls/stats?" WIN "&namespace=ns-a", 200);
    json_t *sa = get_json("alice", "/api/v1/calls/stats?" WIN, 200);
    assert_int_equal(json_integer_value(json_object_get(sa, "total")), json_array_size(ra));
    assert_int_equal(json_integer_value(json_object_get(sa, "total")), json_integer_value(json_object_get(sr, "total")));
    json_decref(sr);
    json_decref(sa);
    sa = get_json("alice", "/api/v1/calls/stats?" WIN "&namespace=ns-b", 200);
    assert_int_equal(json_integer_value(json_object_get(sa, "total")), 0);
    json_decref(sa);
    /* streamed answers use the same filter */
    cp_buf body;
    cp_buf_init(&body);
    assert_int_equal(req("alice", "GET", "/api/v1/calls?" WIN "&stream=1&limit=1000", NULL, NULL, 0, &body), 200);
    cp_buf_putc(&body, 0);
    assert_null(strstr((const char *)body.data, "\"ns-b\""));
    assert_non_null(strstr((const char *)body.data, "\"ns-a\""));

    /* CSV: A's rows only */
    assert_int_equal(req("alice", "GET", "/api/v1/calls.csv?" WIN, NULL, NULL, 0, &body), 200);
    cp_buf_putc(&body, 0);
    assert_null(strstr((const char *)body.data, "ns-b"));
    size_t lines = 0;
    for (size_t i = 0; i < body.len; i++) lines += body.data[i] == '\n';
    assert_true(lines >= json_array_size(ra)); /* a header, then a line per call */
    assert_true(lines <= json_array_size(ra) + 2);

    /* one call: B's ids are unknown to alice, A's are hers */
    const char *ida = json_string_value(json_array_get(ra, 0));
    const char *idb = json_string_value(json_array_get(rb, 0));
    const char *idb_last = json_string_value(json_array_get(rb, json_array_size(rb) - 1)); /* the other tier */
    const char *ida_last = json_string_value(json_array_get(ra, json_array_size(ra) - 1));
    const char *views[] = {"", "/tree", "/trace", "/export?format=trcbin"};
    for (size_t v = 0; v < 4; v++) {
        char path[512];
        snprintf(path, sizeof path, "/api/v1/calls/%s%s", idb, views[v]);
        assert_int_equal(get_status("alice", path), 404);
        int sb = get_status("bob", path); /* bob's own: 200 (410 for a call without a trace) */
        assert_true(sb == 200 || (v == 2 && sb == 410));
        snprintf(path, sizeof path, "/api/v1/calls/%s%s", idb_last, views[v]);
        assert_int_equal(get_status("alice", path), 404);
        snprintf(path, sizeof path, "/api/v1/calls/%s%s", ida, views[v]);
        int st = get_status("alice", path);
        assert_true(st == 200 || (v == 2 && st == 410));
    }
    /* trees of several ids: only A's count; none of A's: 404 */
    char path[1024];
    snprintf(path, sizeof path, "/api/v1/tree?ids=%s,%s", ida, idb);
    json_t *t = get_json("alice", path, 200);
    assert_int_equal(json_array_size(json_object_get(t, "calls")), 1);
    json_decref(t);
    snprintf(path, sizeof path, "/api/v1/tree?ids=%s,%s", idb, idb_last);
    assert_int_equal(get_status("alice", path), 404);
    /* an unknown id is skipped the same way: it does not tell B's ids apart */
    snprintf(path, sizeof path, "/api/v1/tree?ids=%s,1700000000000-1-0-0-0-00000000000000ff", ida);
    int unknown_st = get_status("alice", path);
    snprintf(path, sizeof path, "/api/v1/tree?ids=%s,%s", ida, idb);
    assert_int_equal(get_status("alice", path), unknown_st);
    snprintf(path, sizeof path, "/api/v1/tree?ids=%s,%s,%s", ida, ida_last, idb);
    t = get_json("alice", path, 200);
    assert_int_equal(json_array_size(json_object_get(t, "calls")), 2);
    json_decref(t);
    char post[1024];
    int n = snprintf(post, sizeof post, "{\"ids\":[\"%s\",\"%s\"]}", idb, idb_last);
    assert_int_equal(req("alice", "POST", "/api/v1/tree", "application/json", post, (size_t)n, &body), 404);
    assert_int_equal(req("bob", "POST", "/api/v1/tree", "application/json", post, (size_t)n, &body), 200);
    snprintf(path, sizeof path, "/api/v1/tree/export?format=trcbin&ids=%s", idb);
    assert_int_equal(get_status("alice", path), 404);
    snprintf(path, sizeof path, "/api/v1/tree/export?format=trcbin&ids=%s", ida);
    assert_int_equal(get_status("alice", path), 200);
    assert_int_equal(req("alice", "POST", "/api/v1/tree/export?format=trcxml", "application/json", post, (size_t)n, &body),
                     404);
    /* the aggregate profile: A's calls only, whatever the filter asks */
    t = get_json("alice", "/api/v1/profile?" WIN, 200);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "profile"), "matched")),
                     json_array_size(ra));
    json_decref(t);
    t = get_json("root", "/api/v1/profile?" WIN "&namespace=ns-a", 200);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "profile"), "matched")),
                     json_array_size(ra));
    json_decref(t);
    assert_int_equal(get_status("alice", "/api/v1/profile?" WIN "&namespace=ns-b"), 404);

    cp_buf_free(&body);
    json_decref(a);
    json_decref(a2);
    json_decref(b);
    json_decref(ra);
    json_decref(rb);
}

static void test_dumps(void **state)
{
    (void)state;
    char tda[64], tdb[64], gca[64], gcb[64], topb[64];
    dump_id("ns-a", "td", tda, sizeof tda);
    dump_id("ns-b", "td", tdb, sizeof tdb);
    dump_id("ns-a", "gc", gca, sizeof gca);
    dump_id("ns-b", "gc", gcb, sizeof gcb);
    dump_id("ns-b", "top", topb, sizeof topb);

    /* the list: A's only, also when B is asked for */
    json_t *doc = get_json("alice", "/api/v1/dumps?" DWIN, 200);
    json_t *l = dumps_list(doc), *d;
    size_t i;
    assert_int_equal(json_array_size(l), 3);
    json_array_foreach(l, i, d) assert_string_equal(jstr(d, "namespace"), "ns-a");
    json_decref(doc);
    doc = get_json("alice", "/api/v1/dumps?" DWIN "&namespace=ns-b", 200);
    assert_int_equal(json_array_size(dumps_list(doc)), 0);
    json_decref(doc);
    /* a file and its views: B's are unknown to alice */
    char path[512];
    const char *b_paths[][2] = {{tdb, ""}, {tdb, "/threads"}, {topb, "/top"}};
    for (size_t k = 0; k < 3; k++) {
        snprintf(path, sizeof path, "/api/v1/dumps/%s%s", b_paths[k][0], b_paths[k][1]);
        assert_int_equal(get_status("alice", path), 404);
        assert_int_equal(get_status("bob", path), 200);
    }
    snprintf(path, sizeof path, "/api/v1/dumps/%s/threads", tda);
    assert_int_equal(get_status("alice", path), 200);
    /* sampled stacks as trees: B's thread dumps and profiles are unknown to alice */
    assert_int_equal(get_status("alice", "/api/v1/dumps/threads-profile?" DWIN "&pod=pod-b1"), 404);
    assert_int_equal(get_status("alice", "/api/v1/dumps/threads-profile?" DWIN "&pod=pod-b1&namespace=ns-b"), 404);
    const char *mixed = "/api/v1/dumps/threads-profile?" DWIN "&pods=pod-a1,pod-b1&idle=1";
    const char *who[] = {"alice", "bob", "root"};
    const json_int_t want_dumps[] = {1, 1, 2};
    for (size_t k = 0; k < 3; k++) {
        doc = get_json(who[k], mixed, 200);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "sampled"), "dumps")), want_dumps[k]);
        assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "sampled"), "threads")),
                         75 * want_dumps[k]);
        json_decref(doc);
    }
    char ppb[64];
    dump_id("ns-b", "goroutine", ppb, sizeof ppb);
    snprintf(path, sizeof path, "/api/v1/dumps/%s/profile/tree", ppb);
    assert_int_equal(get_status("alice", path), 404);
    assert_int_equal(get_status("bob", path), 200);
    /* summary and gc: A's only */
    cp_buf body;
    cp_buf_init(&body);
    assert_int_equal(req("alice", "GET", "/api/v1/dumps/summary?" DWIN, NULL, NULL, 0, &body), 200);
    cp_buf_putc(&body, 0);
    assert_null(strstr((const char *)body.data, "ns-b"));
    assert_non_null(strstr((const char *)body.data, "ns-a"));
    /* GC: B's pod has no events for alice; bob gets them, alice gets her pod's */
    doc = get_json("alice", "/api/v1/gc?" DWIN "&pod=pod-b2", 200);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(doc, "totals"), "count")), 0);
    json_decref(doc);
    doc = get_json("bob", "/api/v1/gc?" DWIN "&pod=pod-b2", 200);
    assert_true(json_integer_value(json_object_get(json_object_get(doc, "totals"), "count")) > 0);
    json_decref(doc);
    doc = get_json("alice", "/api/v1/gc?" DWIN "&pod=pod-a2", 200);
    assert_true(json_integer_value(json_object_get(json_object_get(doc, "totals"), "count")) > 0);
    json_decref(doc);
    /* bulk zip: A's files only (estimate), none of B's when asked; the legacy form too */
    doc = get_json("alice", "/api/v1/dumps/download?" DWIN "&estimate=1", 200);
    assert_int_equal(json_integer_value(json_object_get(doc, "files")), 3);
    json_decref(doc);
    doc = get_json("alice", "/api/v1/dumps/download?" DWIN "&estimate=1&namespace=ns-b", 200);
    assert_int_equal(json_integer_value(json_object_get(doc, "files")), 0);
    json_decref(doc);
    assert_int_equal(req("alice", "GET", "/api/v1/dumps/download?" DWIN, NULL, NULL, 0, &body), 200);
    cp_buf_putc(&body, 0);
    assert_null(memmem(body.data, body.len, "ns-b", 4));
    assert_null(memmem(body.data, body.len, "pod-b", 5));
    assert_int_equal(req("alice", "GET", "/cdt/v2/download?dateFrom=1702900000000&dateTo=1703000000000&type=td&namespace=ns-b",
                         NULL, NULL, 0, &body),
                     200);
    assert_null(memmem(body.data, body.len, "pod-b", 5));
    assert_int_equal(req("bob", "GET", "/cdt/v2/download?dateFrom=1702900000000&dateTo=1703000000000&type=td&namespace=ns-b",
                         NULL, NULL, 0, &body),
                     200);
    assert_non_null(memmem(body.data, body.len, "pod-b", 5));

    /* deleting: a viewer may not; an operator deletes A's, B's is unknown to it */
    snprintf(path, sizeof path, "/api/v1/dumps/%s", gca);
    assert_int_equal(req("alice", "DELETE", path, NULL, NULL, 0, &body), 403);
    snprintf(path, sizeof path, "/api/v1/dumps/%s", gcb);
    assert_int_equal(req("oscar", "DELETE", path, NULL, NULL, 0, &body), 404);
    assert_int_equal(get_status("bob", path), 200); /* still there */
    snprintf(path, sizeof path, "/api/v1/dumps/%s", gca);
    assert_int_equal(req("oscar", "DELETE", path, NULL, NULL, 0, &body), 204);
    assert_int_equal(get_status("root", path), 404);
    cp_buf_free(&body);
}

static void test_writes(void **state)
{
    (void)state;
    /* imports: a viewer may not, an operator only into its namespace (named) */
    import_as("alice", "foreign/shop-extras.trcbin", "ns-a", "pod-x", 403);
    import_as("oscar", "foreign/shop-extras.trcbin", "ns-b", "pod-x", 403);
    import_as("oscar", "foreign/shop-extras.trcbin", "ns-a", "pod-x", 200);
    /* uploads likewise; without a credential: 401 */
    upload_as(NULL, "20230804T164402.td.txt", "ns-a", "pod-x", 401);
    upload_as("alice", "20230804T164402.td.txt", "ns-a", "pod-x", 403);
    upload_as("oscar", "20230804T164402.td.txt", "ns-b", "pod-x", 403);
    upload_as("oscar", "20230804T164402.td.txt", "ns-a", "pod-x", 201);
    /* the upload token reads nothing */
    assert_int_equal(get_status("token", "/api/v1/calls?" WIN), 403);
    /* nothing of it reached B */
    json_t *doc = get_json("bob", "/api/v1/services?" WIN, 200);
    char *s = json_dumps(doc, 0);
    assert_null(strstr(s, "pod-x"));
    free(s);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_services_and_me),
        cmocka_unit_test(test_calls),
        cmocka_unit_test(test_dumps),
        cmocka_unit_test(test_writes),
    };
    /* CP_TEST_BOTH_PAIRS */
    return cmocka_run_group_tests(tests, setup, teardown);
}
