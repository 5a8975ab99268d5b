/* dumps_profile_test.c -- sampled stacks as call trees over HTTP (issue 19 items 3, 4;
 * docs/API.md "GET /api/v1/dumps/threads-profile", "GET /api/v1/dumps/{id}/profile/tree"),
 * on both storage pairs (CP_TEST_BOTH_PAIRS: SQLite + directory, PostgreSQL + S3):
 *  - a thread-dump series of the fixture dumps (three dumps of one pod, other pods and
 *    another namespace beside it) equals what the dumps' own /threads views say, thread
 *    by thread: every thread's stack is a path of the tree whose leaf counts it, the
 *    samples per leaf frame match, and the hand-verified numbers of the fixtures hold
 *    (419 threads, 42 without frames, 327 parked; without idle threads 6, all in a
 *    socket read, 413 left out); idle=1 and the default differ by the excluded count;
 *    several pods (`pods`, `pod` + `pods`); an unparsable dump is counted, not fatal;
 *  - every fixture pprof profile, for every sample type: the root's total is the sum of
 *    the sample values, which /profile's flat totals add up to as well; the unit and
 *    type are the profile's; a type by name equals it by index; the CPU profile's one
 *    sample of 10 ms over its 2 s;
 *  - both answers are identical once the dumps are compacted into Parquet (cold reads);
 *  - bad input: a missing pod, bad values, unknown parameters, unknown or wrong dumps,
 *    wrong methods -- each a JSON 4xx; /config announces both features.
 * Namespace scoping is checked in ns_isolation_test.c (a user of one namespace).
 */
#include "http_util.h"
#include "pair_util.h"
#include "server_util.h"

#include "model/cp_stacktree.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS "shop"
#define POD "orders-5cbcd847d-l2t7t_1719318147399"
#define POD2 "b-orders"
#define POD3 "c-broken"
#define T0 "2023/12/19/06/17/34"
#define T0_MS 1702966654000LL
#define T1 "2023/12/19/06/18/34"
#define T2 "2023/12/19/06/19/34"
#define T2_MS 1702966774000LL
#define WIN "from=1702900000000&to=1703000000000"
#define SMALL "20231219T061734UTC.td.txt"
#define BIG "20230804T164402.td.txt"
#define POLL "sun.nio.ch.Net.poll(java.base@17.0.7/Native Method)"
#define PARK "jdk.internal.misc.Unsafe.park(java.base@17.0.7/Native Method)"
#define RUN "java.lang.Thread.run(java.base@17.0.7/Thread.java:833)"

static const char *const pprofs[] = {"go-alloc.pprof", "go-goroutine.pprof", "go-heap.pprof", "go-profile.pprof"};

typedef struct env {
    test_server s;
    char *dir, *catalog, *store;
    const char *args[24];
} env;

static env E;

/* ---- requests ---------------------------------------------------------------------------- */

static void upload(const char *ns, const char *when, const char *pod, const char *name, const void *p, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "/diagnostic/%s/%s/%s/%s", ns, when, pod, name);
    int st = 0;
    cp_buf body;
    cp_buf_init(&body);
    assert_int_equal(http_request(E.s.http_port, "PUT", path, NULL, p, n, &st, &body, NULL), 0);
    if (st != 201) server_fail(&E.s, "PUT %s: %d %.*s", path, st, (int)body.len, (const char *)body.data);
    cp_buf_free(&body);
}

static void upload_fixture(const char *ns, const char *when, const char *pod, const char *name)
{
    cp_buf f;
    cp_buf_init(&f);
    char rel[256];
    snprintf(rel, sizeof rel, "dumps/%s", name);
    load_fixture(rel, &f);
    upload(ns, when, pod, name, f.data, f.len);
    cp_buf_free(&f);
}

static json_t *get(const char *path, int want) { return http_get_json(E.s.http_port, path, want); }

/* The raw body of a 200 GET (to compare answers byte for byte). */
static char *get_text(const char *path)
{
    int st = 0;
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(http_get(E.s.http_port, path, &st, &b, NULL), 0);
    if (st != 200) server_fail(&E.s, "GET %s: %d %.*s", path, st, (int)b.len, (const char *)b.data);
    cp_buf_putc(&b, 0);
    return (char *)b.data;
}

/* A 4xx with a JSON error of that code. */
static void expect_error(const char *method, const char *path, int want, const char *code)
{
    int st = 0;
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(http_request(E.s.http_port, method, path, NULL, NULL, 0, &st, &b, NULL), 0);
    if (st != want) server_fail(&E.s, "%s %s: %d, want %d: %.*s", method, path, st, want, (int)b.len, (const char *)b.data);
    json_t *j = json_loadb((const char *)b.data, b.len, 0, NULL);
    if (!j || !json_is_string(json_object_get(j, "error")))
        fail_msg("%s %s: no JSON error: %.*s", method, path, (int)b.len, (const char *)b.data);
    if (code) assert_string_equal(json_string_value(json_object_get(j, "code")), code);
    json_decref(j);
    cp_buf_free(&b);
}

static const char *jstr(json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }
static json_int_t jint(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

/* Ids of the dumps of a pod (namespace NS) of a type, newest first (JSON array, owned). */
static json_t *dump_ids(const char *pod, const char *type)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/dumps?namespace=" NS "&pod=%s&type=%s&" WIN "&limit=1000", pod, type);
    json_t *l = get(path, 200), *ids = json_array(), *d;
    size_t i;
    json_array_foreach(json_object_get(l, "dumps"), i, d) json_array_append(ids, json_object_get(d, "id"));
    json_decref(l);
    return ids;
}

static const char *dump_id_named(const char *pod, const char *name, char *out, size_t outlen)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/dumps?namespace=" NS "&pod=%s&" WIN "&limit=1000", pod);
    json_t *l = get(path, 200), *d;
    size_t i;
    out[0] = 0;
    json_array_foreach(json_object_get(l, "dumps"), i, d) if (!strcmp(jstr(d, "name"), name)) snprintf(out, outlen, "%s", jstr(d, "id"));
    json_decref(l);
    if (!out[0]) fail_msg("no dump %s of %s", name, pod);
    return out;
}

/* ---- the tree ------------------------------------------------------------------------------- */

static const char *method(json_t *doc, json_t *node)
{
    return json_string_value(json_array_get(json_object_get(doc, "methods"), (size_t)jint(node, "method")));
}

static json_t *child_named(json_t *doc, json_t *node, const char *text)
{
    json_t *c;
    size_t i;
    json_array_foreach(json_object_get(node, "children"), i, c) if (!strcmp(method(doc, c), text)) return c;
    return NULL;
}

/* The node of a thread's stack (frames innermost first, as /threads lists them), or
 * NULL when the tree has no such path. */
static json_t *path_of(json_t *doc, json_t *frames)
{
    json_t *n = json_object_get(doc, "root");
    size_t k = json_array_size(frames);
    if (!k) return child_named(doc, n, CP_STACKTREE_NO_FRAMES);
    while (n && k--) n = child_named(doc, n, json_string_value(json_array_get(frames, k)));
    return n;
}

/* Sums every node's self per frame text into acc {text: count} (explicit stack). */
static void self_by_text(json_t *doc, json_t *acc)
{
    json_t *stack = json_array();
    json_array_append(stack, json_object_get(doc, "root"));
    while (json_array_size(stack)) {
        json_t *n = json_incref(json_array_get(stack, json_array_size(stack) - 1));
        json_array_remove(stack, json_array_size(stack) - 1);
        if (n != json_object_get(doc, "root") && jint(n, "self")) {
            const char *t = method(doc, n);
            json_object_set_new(acc, t, json_integer(jint(acc, t) + jint(n, "self")));
        }
        json_t *c;
        size_t i;
        json_array_foreach(json_object_get(n, "children"), i, c) json_array_append(stack, c);
        json_decref(n);
    }
    json_decref(stack);
}

/* The series' tree against the dumps' /threads views: every thread (idle ones too: the
 * tree asked has them) is a path whose leaf counts exactly the threads with that stack,
 * and the samples per leaf frame are the threads per innermost frame. */
static void check_against_views(json_t *doc, json_t *ids)
{
    json_t *want = json_object(), *views = json_array(), *id;
    size_t i, total = 0;
    json_array_foreach(ids, i, id)
    {
        char path[256];
        snprintf(path, sizeof path, "/api/v1/dumps/%s/threads", json_string_value(id));
        json_array_append_new(views, get(path, 200));
    }
    /* pass 1: every stack exists; count the threads ending at each leaf node */
    for (int pass = 0; pass < 2; pass++) {
        json_t *v;
        size_t k;
        json_array_foreach(views, k, v)
        {
            json_t *t;
            size_t j;
            json_array_foreach(json_object_get(v, "threads"), j, t)
            {
                json_t *frames = json_object_get(t, "frames");
                json_t *leaf = path_of(doc, frames);
                if (!leaf) fail_msg("thread \"%s\": its stack is not in the tree", jstr(t, "name"));
                if (pass == 0) {
                    json_object_set_new(leaf, "seen", json_integer(jint(leaf, "seen") + 1));
                    const char *top = json_array_size(frames) ? json_string_value(json_array_get(frames, 0))
                                                              : CP_STACKTREE_NO_FRAMES;
                    json_object_set_new(want, top, json_integer(jint(want, top) + 1));
                    total++;
                } else if (jint(leaf, "seen") != jint(leaf, "self")) {
                    fail_msg("thread \"%s\": %lld threads have its stack, the tree says %lld", jstr(t, "name"),
                             (long long)jint(leaf, "seen"), (long long)jint(leaf, "self"));
                }
            }
        }
    }
    json_t *root = json_object_get(doc, "root");
    assert_int_equal(jint(root, "total"), total);
    assert_int_equal(jint(root, "invocations"), total);
    json_t *got = json_object();
    self_by_text(doc, got);
    if (!json_equal(got, want)) {
        char *a = json_dumps(got, JSON_SORT_KEYS), *b = json_dumps(want, JSON_SORT_KEYS);
        fail_msg("samples per leaf frame: %s, want %s", a, b);
    }
    json_decref(got);
    json_decref(want);
    json_decref(views);
}

/* ---- setup ------------------------------------------------------------------------------------ */

static int setup(void **state)
{
    (void)state;
    test_pair_require();
    test_pair_env();
    E.dir = make_temp_dir("dumps-profile");
    E.catalog = test_catalog_spec(E.dir);
    E.store = test_store_url(E.dir);
    size_t n = 0;
    for (const char *const *pf = test_pair_flags(E.catalog, E.store); *pf; pf++) E.args[n++] = *pf;
    E.args[n] = NULL;
    server_start(&E.s, "dumps-profile", E.args);
    /* POD: small, big, small a minute apart; a top snapshot and the profiles beside them */
    upload_fixture(NS, T0, POD, SMALL);
    upload_fixture(NS, T1, POD, BIG);
    upload_fixture(NS, T2, POD, SMALL);
    upload_fixture(NS, T0, POD, "20231219T061734UTC.top.txt");
    for (size_t i = 0; i < 4; i++) upload_fixture(NS, T0, POD, pprofs[i]);
    /* another pod; the same pod name in another namespace; a dump that does not parse */
    upload_fixture(NS, T1, POD2, BIG);
    upload_fixture("other", T0, POD, SMALL);
    upload(NS, T0, POD3, "20231219T061734UTC.td.txt", "not a thread dump\n", 18);
    upload_fixture(NS, T1, POD3, SMALL);
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

/* ---- tests ------------------------------------------------------------------------------------- */

static void test_threads_series(void **state)
{
    (void)state;
    json_t *ids = dump_ids(POD, "td");
    assert_int_equal(json_array_size(ids), 3);

    /* every thread */
    json_t *all = get("/api/v1/dumps/threads-profile?namespace=" NS "&pod=" POD "&" WIN "&idle=1", 200);
    check_against_views(all, ids);
    json_t *s = json_object_get(all, "sampled");
    assert_string_equal(jstr(s, "unit"), "samples");
    assert_int_equal(jint(s, "dumps"), 3);
    assert_int_equal(jint(s, "threads"), 75 + 269 + 75);
    assert_int_equal(jint(s, "excluded_idle"), 0);
    assert_int_equal(jint(s, "dumps_unparsable"), 0);
    assert_true(json_is_false(json_object_get(s, "truncated")));
    assert_int_equal(jint(all, "start_ms"), T0_MS);
    assert_int_equal(jint(all, "end_ms"), T2_MS);
    assert_int_equal(json_array_size(json_object_get(all, "calls")), 0);
    assert_int_equal(json_array_size(json_object_get(all, "params")), 0);
    assert_string_equal(method(all, json_object_get(all, "root")), "419 threads in 3 dumps");
    /* hand-verified: 11 + 20 + 11 threads without frames, 50 + 227 + 50 parked */
    json_t *leafs = json_object();
    self_by_text(all, leafs);
    assert_int_equal(jint(leafs, CP_STACKTREE_NO_FRAMES), 42);
    assert_int_equal(jint(leafs, PARK), 327);
    json_decref(leafs);

    /* without idle threads: the small dump's three socket reads, twice */
    json_t *busy = get("/api/v1/dumps/threads-profile?namespace=" NS "&pod=" POD "&" WIN, 200);
    json_t *b = json_object_get(busy, "sampled");
    assert_int_equal(jint(b, "dumps"), 3);
    assert_int_equal(jint(b, "threads"), 6);
    assert_int_equal(jint(b, "excluded_idle"), 413);
    assert_int_equal(jint(b, "threads") + jint(b, "excluded_idle"), jint(s, "threads"));
    assert_int_equal(jint(json_object_get(all, "root"), "total") - jint(json_object_get(busy, "root"), "total"),
                     jint(b, "excluded_idle"));
    json_t *root = json_object_get(busy, "root");
    assert_int_equal(json_array_size(json_object_get(root, "children")), 1);
    json_t *run = child_named(busy, root, RUN);
    assert_non_null(run);
    assert_int_equal(jint(run, "total"), 6);
    leafs = json_object();
    self_by_text(busy, leafs);
    assert_int_equal(json_object_size(leafs), 1);
    assert_int_equal(jint(leafs, POLL), 6);
    json_decref(leafs);
    json_decref(busy);
    json_decref(all);
    json_decref(ids);

    /* several pods: pods=, pod + pods; the other namespace only without a namespace */
    json_t *two = get("/api/v1/dumps/threads-profile?namespace=" NS "&pods=" POD "," POD2 "&" WIN "&idle=true", 200);
    assert_int_equal(jint(json_object_get(two, "sampled"), "dumps"), 4);
    assert_int_equal(jint(json_object_get(two, "sampled"), "threads"), 419 + 269);
    json_decref(two);
    two = get("/api/v1/dumps/threads-profile?namespace=" NS "&pod=" POD "&pods=" POD2 "," POD "&" WIN, 200);
    assert_int_equal(jint(json_object_get(two, "sampled"), "dumps"), 4); /* POD named twice counts once */
    json_decref(two);
    two = get("/api/v1/dumps/threads-profile?pod=" POD "&" WIN, 200);
    assert_int_equal(jint(json_object_get(two, "sampled"), "dumps"), 4); /* + the other namespace's */
    assert_int_equal(jint(json_object_get(two, "sampled"), "threads"), 9);
    json_decref(two);
    /* a window holding only the middle dump */
    two = get("/api/v1/dumps/threads-profile?namespace=" NS "&pod=" POD "&from=1702966700000&to=1702966760000", 200);
    assert_int_equal(jint(json_object_get(two, "sampled"), "dumps"), 1);
    assert_int_equal(jint(json_object_get(two, "sampled"), "threads"), 0);
    assert_int_equal(jint(json_object_get(two, "sampled"), "excluded_idle"), 269);
    json_decref(two);

    /* a dump that does not parse is counted and the others still merge; alone: 422 */
    json_t *bad = get("/api/v1/dumps/threads-profile?namespace=" NS "&pod=" POD3 "&" WIN, 200);
    assert_int_equal(jint(json_object_get(bad, "sampled"), "dumps"), 1);
    assert_int_equal(jint(json_object_get(bad, "sampled"), "dumps_unparsable"), 1);
    json_decref(bad);
    expect_error("GET", "/api/v1/dumps/threads-profile?namespace=" NS "&pod=" POD3 "&from=1702966600000&to=1702966700000",
                 422, "unparsable");
}

/* Every sample type of every fixture profile: the root's total is the sum of the sample
 * values, and so is the sum of /profile's flat totals over all functions. */
static void check_profile(const char *name)
{
    char id[64], path[512];
    dump_id_named(POD, name, id, sizeof id);
    snprintf(path, sizeof path, "/api/v1/dumps/%s/profile?top=10000", id);
    json_t *info = get(path, 200);
    json_t *types = json_object_get(info, "sample_types"), *vt;
    size_t i;
    assert_true(json_array_size(types) > 0);
    json_array_foreach(types, i, vt)
    {
        snprintf(path, sizeof path, "/api/v1/dumps/%s/profile?top=10000&sample_type=%zu", id, i);
        json_t *top = get(path, 200), *row;
        size_t k;
        json_int_t flat = 0;
        json_array_foreach(json_object_get(top, "top"), k, row) flat += jint(row, "flat");
        assert_int_equal(json_array_size(json_object_get(top, "top")), jint(top, "functions"));
        json_decref(top);

        snprintf(path, sizeof path, "/api/v1/dumps/%s/profile/tree?sample_type=%zu", id, i);
        char *by_index = get_text(path);
        snprintf(path, sizeof path, "/api/v1/dumps/%s/profile/tree?sample_type=%s", id, jstr(vt, "type"));
        char *by_name = get_text(path);
        assert_string_equal(by_index, by_name);
        json_t *tree = json_loads(by_index, 0, NULL);
        assert_non_null(tree);
        json_t *root = json_object_get(tree, "root"), *s = json_object_get(tree, "sampled");
        if (jint(root, "total") != flat)
            fail_msg("%s %s: root total %lld, flat sum %lld", name, jstr(vt, "type"), (long long)jint(root, "total"),
                     (long long)flat);
        assert_string_equal(jstr(s, "unit"), jstr(vt, "unit"));
        assert_string_equal(jstr(s, "sample_type"), jstr(vt, "type"));
        assert_int_equal(jint(s, "samples") + jint(s, "skipped"), jint(info, "samples"));
        assert_int_equal(jint(root, "invocations"), jint(s, "samples"));
        assert_int_equal(jint(tree, "nodes") > 0, jint(s, "samples") > 0);
        json_decref(tree);
        free(by_index);
        free(by_name);
    }
    json_decref(info);
}

static void test_pprof_trees(void **state)
{
    (void)state;
    for (size_t i = 0; i < 4; i++) check_profile(pprofs[i]);

    /* hand-verified: the CPU profile holds one sample of 10 ms (its period) over ~2 s;
     * the goroutine profile's default type counts goroutines (its first sample: 16) */
    char id[64], path[256];
    snprintf(path, sizeof path, "/api/v1/dumps/%s/profile/tree", dump_id_named(POD, "go-profile.pprof", id, sizeof id));
    json_t *cpu = get(path, 200);
    assert_string_equal(jstr(json_object_get(cpu, "sampled"), "sample_type"), "cpu");
    assert_string_equal(jstr(json_object_get(cpu, "sampled"), "unit"), "nanoseconds");
    assert_int_equal(jint(json_object_get(cpu, "root"), "total"), 10000000);
    assert_int_equal(jint(json_object_get(cpu, "sampled"), "samples"), 1);
    assert_int_equal(jint(cpu, "end_ms") - jint(cpu, "start_ms"), 2000);
    assert_string_equal(method(cpu, json_object_get(cpu, "root")), "cpu, 1 sample");
    json_decref(cpu);
    snprintf(path, sizeof path, "/api/v1/dumps/%s/profile/tree", dump_id_named(POD, "go-goroutine.pprof", id, sizeof id));
    json_t *g = get(path, 200);
    assert_string_equal(jstr(json_object_get(g, "sampled"), "unit"), "count");
    assert_int_equal(jint(json_object_get(g, "sampled"), "samples"), 28);
    json_t *first = json_array_get(json_object_get(json_object_get(g, "root"), "children"), 0);
    assert_true(jint(first, "total") >= 16); /* children are ordered by total */
    json_decref(g);
}

/* Compacted into Parquet, the dumps give the same answers. */
static void test_cold_same(void **state)
{
    (void)state;
    char id[64], tree_path[256];
    snprintf(tree_path, sizeof tree_path, "/api/v1/dumps/%s/profile/tree?sample_type=1",
             dump_id_named(POD, "go-heap.pprof", id, sizeof id));
    const char *series = "/api/v1/dumps/threads-profile?namespace=" NS "&pods=" POD "," POD2 "&" WIN "&idle=1";
    char *hot_series = get_text(series), *hot_tree = get_text(tree_path);

    test_pair_compact(E.s.data, E.catalog, E.store);
    json_t *l = get("/api/v1/dumps?namespace=" NS "&pod=" POD "&type=td&" WIN, 200);
    assert_string_equal(jstr(json_array_get(json_object_get(l, "dumps"), 0), "location"), "cold");
    json_decref(l);

    char *cold_series = get_text(series), *cold_tree = get_text(tree_path);
    assert_string_equal(cold_series, hot_series);
    assert_string_equal(cold_tree, hot_tree);
    free(hot_series);
    free(hot_tree);
    free(cold_series);
    free(cold_tree);
}

static void test_bad_input(void **state)
{
    (void)state;
    char td[64], pp[64], path[256];
    dump_id_named(POD, SMALL, td, sizeof td);
    dump_id_named(POD, "go-alloc.pprof", pp, sizeof pp);
    const char *tp = "/api/v1/dumps/threads-profile";
    expect_error("GET", "/api/v1/dumps/threads-profile?" WIN, 400, "missing_parameter");
    expect_error("GET", "/api/v1/dumps/threads-profile?pod=&" WIN, 400, "missing_parameter");
    expect_error("GET", "/api/v1/dumps/threads-profile?pod=" POD "&idle=maybe", 400, "bad_parameter");
    expect_error("GET", "/api/v1/dumps/threads-profile?pod=" POD "&type=td", 400, "unknown_parameter");
    expect_error("GET", "/api/v1/dumps/threads-profile?pod=" POD "&pod=" POD, 400, "duplicate_parameter");
    expect_error("GET", "/api/v1/dumps/threads-profile?pods=a,,b", 400, "bad_parameter");
    /* at most 100 names in pods (beside pod) */
    char many[1024];
    size_t len = (size_t)snprintf(many, sizeof many, "/api/v1/dumps/threads-profile?" WIN "&pod=x&pods=p0");
    for (int k = 1; k < 100; k++) len += (size_t)snprintf(many + len, sizeof many - len, ",p%d", k);
    expect_error("GET", many, 404, "no_dumps");
    snprintf(many + len, sizeof many - len, ",p100");
    expect_error("GET", many, 400, "bad_parameter");
    expect_error("GET", "/api/v1/dumps/threads-profile?pod=" POD "&from=5&to=4", 400, "bad_range");
    expect_error("GET", "/api/v1/dumps/threads-profile?pod=nobody&" WIN, 404, "no_dumps");
    expect_error("GET", "/api/v1/dumps/threads-profile?pod=" POD, 404, "no_dumps"); /* the last hour: none */
    expect_error("DELETE", tp, 405, "method_not_allowed");
    expect_error("POST", tp, 405, "method_not_allowed");

    expect_error("GET", "/api/v1/dumps/999/profile/tree", 404, "not_found");
    expect_error("GET", "/api/v1/dumps/abc/profile/tree", 404, "not_found");
    snprintf(path, sizeof path, "/api/v1/dumps/%s/profile/tree", td);
    expect_error("GET", path, 400, "wrong_type");
    snprintf(path, sizeof path, "/api/v1/dumps/%s/profile/tree?sample_type=nope", pp);
    expect_error("GET", path, 400, "bad_parameter");
    snprintf(path, sizeof path, "/api/v1/dumps/%s/profile/tree?top=5", pp);
    expect_error("GET", path, 400, "unknown_parameter");
    snprintf(path, sizeof path, "/api/v1/dumps/%s/profile/flame", pp);
    expect_error("GET", path, 404, "not_found");
    snprintf(path, sizeof path, "/api/v1/dumps/%s/threads/tree", td);
    expect_error("GET", path, 404, "not_found");
    snprintf(path, sizeof path, "/api/v1/dumps/%s/profile/tree", pp);
    expect_error("DELETE", path, 405, "method_not_allowed");

    json_t *cfg = get("/api/v1/config", 200);
    json_t *f = json_object_get(cfg, "features");
    assert_true(json_is_true(json_object_get(f, "threads_profile")));
    assert_true(json_is_true(json_object_get(f, "pprof_tree")));
    json_decref(cfg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_threads_series),
        cmocka_unit_test(test_pprof_trees),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_cold_same),
    };
    /* CP_TEST_BOTH_PAIRS */
    return cmocka_run_group_tests(tests, setup, teardown);
}
