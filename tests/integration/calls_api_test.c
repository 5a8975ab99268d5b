/* calls_api_test.c -- issue 4's acceptance: the recorded conversation
 * [CP_TEST_INLINE_WRITER: runs again with the catalog writer inline, tests/CMakeLists.txt]
 * (parser.test.protocol) replayed into `cloudprof serve`, then read back through the
 * HTTP API:
 *  - /api/v1/calls over the whole range returns exactly the calls of
 *    test-service.calls.expected.txt: count, start times, durations, method names,
 *    thread names, params (names resolved through test-service.dictionary.expected.txt);
 *  - the tree of every call matches its events in test-service.traces.expected.txt: root
 *    method and duration, the children (merged by method, with invocation counts) at
 *    every level, and the tags of every node (big sql/xml values resolved);
 *  - calls are visible within 2 s of the agent's flush.
 */
#include "http_util.h"
#include "streams/cp_streams.h"
#include "replay_util.h"
#include "server_util.h"

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the expectations ---------------------------------------------------------------- */

typedef struct exp_call {
    int64_t ts;
    int32_t duration, method, calls, tfi, off, rec;
    char thread[128];
    char params[8192]; /* "map[19:[v] 41:[v]]" as in the file */
} exp_call;

static char **g_dict;      /* dictionary id -> word (expected file: one word per line) */
static size_t g_ndict;
static cp_buf g_dict_text;
static exp_call g_calls[64];
static size_t g_ncalls;

static void load_dictionary(void)
{
    load_fixture("streams/test-service.dictionary.expected.txt", &g_dict_text);
    g_ndict = split_lines((char *)g_dict_text.data, g_dict_text.len, &g_dict);
    while (g_ndict && !g_dict[g_ndict - 1][0]) g_ndict--;
    assert_true(g_ndict > 900);
}

static const char *word(int32_t id)
{
    assert_true(id >= 0 && (size_t)id < g_ndict);
    return g_dict[id];
}

/* calls.expected.txt: `call#N: dt;cpu;wait;mem;method;duration;queue;suspend;calls;trFile;
 * bufOffset;recordIdx;tx;logsGen;logsWritten;fileRead;fileWritten;netRead;netWritten;
 * thread; params`; times accumulate from the calls file header's start time. */
static void load_calls(void)
{
    cp_buf raw, text;
    cp_buf_init(&raw);
    cp_buf_init(&text);
    load_fixture("streams/test-service.calls.0.protocol", &raw);
    int64_t t = (int64_t)cp_be64(raw.data + 8);
    load_fixture("streams/test-service.calls.expected.txt", &text);
    char **lines;
    size_t n = split_lines((char *)text.data, text.len, &lines);
    for (size_t i = 0; i < n; i++) {
        if (strncmp(lines[i], "call#", 5) != 0) continue;
        exp_call *c = &g_calls[g_ncalls++];
        char *p = strchr(lines[i], ':') + 1;
        long long f[19];
        for (int k = 0; k < 19; k++) {
            f[k] = strtoll(p, &p, 10);
            assert_int_equal(*p, ';');
            p++;
        }
        t += f[0];
        c->ts = t;
        c->method = (int32_t)f[4];
        c->duration = (int32_t)f[5];
        c->calls = (int32_t)f[8];
        c->tfi = (int32_t)f[9];
        c->off = (int32_t)f[10];
        c->rec = (int32_t)f[11];
        char *semi = strchr(p, ';');
        assert_non_null(semi);
        *semi = 0;
        while (*p == ' ') p++;
        snprintf(c->thread, sizeof c->thread, "%s", p);
        p = semi + 1;
        while (*p == ' ') p++;
        snprintf(c->params, sizeof c->params, "%s", p);
    }
    assert_int_equal(g_ncalls, 45);
    free(lines);
    cp_buf_free(&raw);
    cp_buf_free(&text);
}

/* ---- expected trees from traces.expected.txt ------------------------------------------ */

typedef struct ev {
    char kind;        /* 'E' enter, 'X' exit, 'T' tag */
    int32_t id;       /* method or tag id */
    char *value;      /* tag: string value, or NULL for a big-value ref */
    int32_t ref_off;  /* tag: offset of a big-value ref */
} ev;

typedef struct block {
    int64_t thread;
    int64_t offset;
    ev *ev;
    size_t nev;
} block;

static block g_blocks[128];
static size_t g_nblocks;
static cp_buf g_trace_text;

static void load_traces(void)
{
    load_fixture("streams/test-service.traces.expected.txt", &g_trace_text);
    char **lines;
    size_t n = split_lines((char *)g_trace_text.data, g_trace_text.len, &lines);
    block *b = NULL;
    for (size_t i = 0; i < n; i++) {
        char *l = lines[i];
        if (!strncmp(l, "block #", 7)) {
            assert_true(g_nblocks < CP_ARRAY_LEN(g_blocks));
            b = &g_blocks[g_nblocks++];
            b->thread = strtoll(strstr(l, "threadId=") + 9, NULL, 10);
            b->offset = strtoll(strstr(l, "offset=") + 7, NULL, 10);
            b->ev = calloc(4200, sizeof *b->ev);
            continue;
        }
        if (!b) continue;
        ev e = {0};
        char *tag = strstr(l, "tagId=");
        if (!tag) continue;
        e.id = (int32_t)strtol(tag + 6, NULL, 10);
        if (!strncmp(l, "call ", 5)) {
            /* depth 0 shows no arrow: the call.info line is the root's EXIT */
            e.kind = strstr(l, "<-") || (!strstr(l, "->") && e.id == 0) ? 'X' : 'E';
        } else if (!strncmp(l, "ERROR", 5)) {
            e.kind = 'X'; /* an EXIT whose ENTER precedes the capture */
        } else if (!strncmp(l, "trace [", 7)) {
            e.kind = 'T';
            char *sv = strstr(l, "string value '");
            if (sv) {
                sv += 14;
                char *end = strrchr(sv, '\'');
                assert_non_null(end);
                *end = 0;
                e.value = sv;
            } else {
                char *o = strstr(l, "offset=");
                assert_non_null(o);
                e.ref_off = (int32_t)strtol(o + 7, NULL, 10);
            }
        } else {
            continue;
        }
        b->ev[b->nev++] = e;
    }
    free(lines);
    assert_true(g_nblocks >= 60);
}

/* An expected node: method text, invocations, children, tags as "name=value" strings. */
typedef struct enode {
    const char *method;
    int invocations;
    struct enode **kids;
    size_t nkids;
    char **tags;
    size_t ntags;
} enode;

static enode *enode_new(const char *m)
{
    enode *n = calloc(1, sizeof *n);
    n->method = m;
    return n;
}

static enode *enode_child(enode *p, const char *m)
{
    for (size_t i = 0; i < p->nkids; i++)
        if (!strcmp(p->kids[i]->method, m)) return p->kids[i];
    p->kids = realloc(p->kids, (p->nkids + 1) * sizeof *p->kids);
    return p->kids[p->nkids++] = enode_new(m);
}

static void enode_tag(enode *n, const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 2;
    char *t = malloc(len);
    snprintf(t, len, "%s=%s", name, value);
    for (size_t i = 0; i < n->ntags; i++)
        if (!strcmp(n->tags[i], t)) {
            free(t);
            return;
        }
    n->tags = realloc(n->tags, (n->ntags + 1) * sizeof *n->tags);
    n->tags[n->ntags++] = t;
}

static void enode_free(enode *n)
{
    for (size_t i = 0; i < n->nkids; i++) enode_free(n->kids[i]);
    for (size_t i = 0; i < n->ntags; i++) free(n->tags[i]);
    free(n->kids);
    free(n->tags);
    free(n);
}

/* Big values by offset, from the sql and xml stream fixtures (decoded with cp_dec). */
typedef struct values {
    int64_t off[512];
    char *text[512];
    size_t n;
} values;
static values g_sql, g_xml;

static int on_value(void *ud, const cp_value_rec *r)
{
    values *v = ud;
    v->off[v->n] = (int64_t)r->offset;
    v->text[v->n++] = str16_dup(r->value);
    return 0;
}

static void load_values(const char *rel, cp_stream_kind kind, values *v)
{
    cp_buf data;
    cp_buf_init(&data);
    load_fixture(rel, &data);
    cp_dec_sink sink = {.ud = v, .on_value = on_value};
    cp_dec *d = cp_dec_new(kind, NULL, &sink, 0);
    assert_int_equal(cp_dec_feed(d, data.data, data.len), CP_OK);
    cp_dec_free(d);
    cp_buf_free(&data);
}

static const char *value_at(const values *v, int32_t off)
{
    for (size_t i = 0; i < v->n; i++)
        if (v->off[i] == off) return v->text[i];
    return NULL;
}

/* Walks the call's events (from block `bi`, event `rec`, continuing in later blocks of
 * the same thread) into an expected tree. sql/xml refs: both candidate texts are
 * recorded as alternatives "name=sql:<text>" / "name=xml:<text>" and matched later. */
static enode *expected_tree(const exp_call *c)
{
    size_t bi = 0;
    while (bi < g_nblocks && g_blocks[bi].offset != c->off) bi++;
    assert_true(bi < g_nblocks);
    int64_t thread = g_blocks[bi].thread;
    enode *stack[4096];
    int depth = 0;
    enode *root = NULL;
    size_t i = (size_t)c->rec;
    for (; bi < g_nblocks; bi++, i = 0) {
        const block *b = &g_blocks[bi];
        if (b->thread != thread) continue;
        for (; i < b->nev; i++) {
            const ev *e = &b->ev[i];
            if (e->kind == 'E') {
                if (!root) {
                    assert_int_equal(e->id, c->method);
                    root = enode_new(word(e->id));
                    stack[depth++] = root;
                } else {
                    stack[depth] = enode_child(stack[depth - 1], word(e->id));
                    depth++;
                }
                stack[depth - 1]->invocations++;
            } else if (e->kind == 'X') {
                if (--depth == 0) return root;
            } else {
                const char *name = word(e->id);
                if (e->value) {
                    if (!strcmp(name, "call.info") && !e->value[0]) continue;
                    enode_tag(stack[depth - 1], name, e->value);
                } else {
                    const char *sql = value_at(&g_sql, e->ref_off), *xml = value_at(&g_xml, e->ref_off);
                    cp_buf alt;
                    cp_buf_init(&alt);
                    cp_buf_printf(&alt, "\x01%s\x02%s", sql ? sql : "", xml ? xml : "");
                    cp_buf_putc(&alt, 0);
                    enode_tag(stack[depth - 1], name, (const char *)alt.data);
                    cp_buf_free(&alt);
                }
            }
        }
    }
    fail_msg("call at %d/%d never ends in the expected trace", c->off, c->rec);
    return NULL;
}

/* ---- comparing with the API's tree ---------------------------------------------------- */

/* Collects every (param, value) under a node's params (group values, variants and
 * nested params). Returns 1 if some group was folded into "::other" (then only a
 * subset can be checked). */
static int collect_params(json_t *params, json_t *pnames, char ***out, size_t *n)
{
    int folded = 0;
    size_t i;
    json_t *p;
    json_array_foreach(params, i, p) {
        const char *name = json_string_value(json_array_get(pnames, (size_t)json_integer_value(json_object_get(p, "param"))));
        assert_non_null(name);
        size_t j;
        json_t *g;
        json_array_foreach(json_object_get(p, "groups"), j, g) {
            const char *v = json_string_value(json_object_get(g, "value"));
            assert_non_null(v);
            if (!strcmp(v, "::other")) folded = 1;
            assert_true(json_object_get(g, "trimmed") == NULL); /* fixture values are short */
            json_t *vars = json_object_get(g, "variants");
            size_t k;
            json_t *var;
            if (vars && json_array_size(vars)) {
                json_array_foreach(vars, k, var) {
                    const char *vv = json_string_value(json_object_get(var, "value"));
                    if (!strcmp(vv, "::other")) {
                        folded = 1;
                        continue;
                    }
                    size_t len = strlen(name) + strlen(vv) + 2;
                    *out = realloc(*out, (*n + 1) * sizeof **out);
                    (*out)[*n] = malloc(len);
                    snprintf((*out)[(*n)++], len, "%s=%s", name, vv);
                }
            } else if (strcmp(v, "::other")) {
                size_t len = strlen(name) + strlen(v) + 2;
                *out = realloc(*out, (*n + 1) * sizeof **out);
                (*out)[*n] = malloc(len);
                snprintf((*out)[(*n)++], len, "%s=%s", name, v);
            }
            json_t *nested = json_object_get(g, "params");
            if (nested) folded |= collect_params(nested, pnames, out, n);
        }
    }
    return folded;
}

static int tag_matches(const char *expected, const char *got)
{
    if (strstr(expected, "test.org")) { /* a value the fixture's authors anonymised: the name must match */
        size_t nlen = (size_t)(strchr(expected, '=') - expected);
        return !strncmp(expected, got, nlen + 1);
    }
    const char *alt = strchr(expected, '\x01');
    if (!alt) return !strcmp(expected, got);
    size_t nlen = (size_t)(alt - expected);
    if (strncmp(expected, got, nlen)) return 0;
    const char *sql = alt + 1, *x2 = strchr(sql, '\x02'), *xml = x2 + 1;
    const char *gv = got + nlen;
    return (strlen(gv) == (size_t)(x2 - sql) && !strncmp(gv, sql, (size_t)(x2 - sql))) || !strcmp(gv, xml);
}

static size_t g_nodes_checked, g_tags_checked;

static void compare_node(const enode *e, json_t *n, json_t *methods, json_t *pnames, const char *path)
{
    const char *m = json_string_value(json_array_get(methods, (size_t)json_integer_value(json_object_get(n, "method"))));
    assert_non_null(m);
    if (strcmp(m, e->method)) fail_msg("%s: method '%s', expected '%s'", path, m, e->method);
    if (json_integer_value(json_object_get(n, "invocations")) != e->invocations)
        fail_msg("%s/%s: %lld invocations, expected %d", path, m,
                 (long long)json_integer_value(json_object_get(n, "invocations")), e->invocations);
    g_nodes_checked++;
    /* tags */
    char **got = NULL;
    size_t ngot = 0;
    json_t *params = json_object_get(n, "params");
    int folded = params ? collect_params(params, pnames, &got, &ngot) : 0;
    for (size_t i = 0; i < e->ntags; i++) {
        int found = 0;
        for (size_t j = 0; j < ngot && !found; j++) found = tag_matches(e->tags[i], got[j]);
        if (!found && !folded) fail_msg("%s/%s: tag '%.200s' missing", path, m, e->tags[i]);
        g_tags_checked += found;
    }
    if (!folded && ngot != e->ntags) fail_msg("%s/%s: %zu tags, expected %zu", path, m, ngot, e->ntags);
    for (size_t j = 0; j < ngot; j++) free(got[j]);
    free(got);
    /* children: the same set of methods, each compared recursively */
    json_t *kids = json_object_get(n, "children");
    size_t nk = kids ? json_array_size(kids) : 0;
    if (nk != e->nkids) fail_msg("%s/%s: %zu children, expected %zu", path, m, nk, e->nkids);
    for (size_t i = 0; i < e->nkids; i++) {
        json_t *match = NULL;
        for (size_t j = 0; j < nk && !match; j++) {
            json_t *k = json_array_get(kids, j);
            const char *km = json_string_value(json_array_get(methods, (size_t)json_integer_value(json_object_get(k, "method"))));
            if (km && !strcmp(km, e->kids[i]->method)) match = k;
        }
        if (!match) fail_msg("%s/%s: child '%s' missing", path, m, e->kids[i]->method);
        compare_node(e->kids[i], match, methods, pnames, m);
    }
}

/* ---- the test ---------------------------------------------------------------------------- */

static json_t *get_json(const test_server *s, const char *path, int want_status)
{
    cp_buf body;
    cp_buf_init(&body);
    int status = 0;
    if (http_get(s->http_port, path, &status, &body, NULL) != 0) server_fail(s, "GET %s: no answer", path);
    if (status != want_status) server_fail(s, "GET %s: status %d, body %.*s", path, status, (int)body.len, (char *)body.data);
    json_error_t je;
    json_t *j = json_loadb((const char *)body.data, body.len, 0, &je);
    if (!j) server_fail(s, "GET %s: not JSON (%s)", path, je.text);
    cp_buf_free(&body);
    return j;
}

/* "map[19:[a b] 41:[c]]" for the params object of a call (values joined by spaces, as
 * the expected file prints them; names -> ids through the dictionary). */
static void params_as_map(json_t *params, char *out, size_t outlen)
{
    struct { int32_t id; const char *name; json_t *vals; } p[64];
    size_t n = 0;
    const char *key;
    json_t *vals;
    json_object_foreach(params, key, vals) {
        int32_t id = -1;
        for (size_t i = 0; i < g_ndict && id < 0; i++)
            if (!strcmp(g_dict[i], key)) id = (int32_t)i;
        assert_true(id >= 0);
        p[n].id = id;
        p[n].name = key;
        p[n++].vals = vals;
    }
    for (size_t i = 1; i < n; i++) /* by id, as printed */
        for (size_t j = i; j > 0 && p[j - 1].id > p[j].id; j--) {
            __typeof__(p[0]) t = p[j];
            p[j] = p[j - 1];
            p[j - 1] = t;
        }
    size_t len = (size_t)snprintf(out, outlen, "map[");
    for (size_t i = 0; i < n; i++) {
        len += (size_t)snprintf(out + len, outlen - len, "%s%d:[", i ? " " : "", p[i].id);
        size_t k;
        json_t *v;
        json_array_foreach(p[i].vals, k, v) len += (size_t)snprintf(out + len, outlen - len, "%s%s", k ? " " : "", json_string_value(v));
        len += (size_t)snprintf(out + len, outlen - len, "]");
    }
    snprintf(out + len, outlen - len, "]");
}

static void test_calls_and_trees_match_fixture(void **state)
{
    (void)state;
    load_dictionary();
    load_calls();
    load_traces();
    load_values("streams/test-service.sql.0.protocol", CP_STREAM_SQL, &g_sql);
    load_values("streams/test-service.xml.0.protocol", CP_STREAM_XML, &g_xml);

    test_server s;
    server_start(&s, "calls-api", NULL);
    replay_capture cap;
    replay_capture_parser_test(&cap);
    replay_opts o = {0};
    replay_result r;
    replay_run(s.port, &cap, &o, &r);
    replay_capture_free(&cap);

    /* the whole range: every call, slowest first */
    char path[512];
    snprintf(path, sizeof path, "/api/v1/calls?from=1690200000000&to=1690210000000&limit=1000&sort=-duration_ms");
    json_t *page = NULL;
    for (int64_t deadline = test_now_ms() + TEST_WAIT_MS;;) { /* the connection's end stores the last calls */
        page = get_json(&s, path, 200);
        if (json_array_size(json_object_get(page, "calls")) == g_ncalls || test_now_ms() > deadline) break;
        json_decref(page);
        page = NULL;
        sleep_ms(100);
    }
    assert_non_null(page);
    json_t *calls = json_object_get(page, "calls");
    assert_int_equal(json_array_size(calls), g_ncalls);
    assert_true(json_is_null(json_object_get(page, "next_cursor")));

    int seen[64] = {0};
    size_t i;
    json_t *c;
    int64_t prev = INT64_MAX;
    json_array_foreach(calls, i, c) {
        int64_t ts = json_integer_value(json_object_get(c, "ts_ms"));
        int64_t dur = json_integer_value(json_object_get(c, "duration_ms"));
        assert_true(dur <= prev);
        prev = dur;
        const char *method = json_string_value(json_object_get(c, "method"));
        const char *thread = json_string_value(json_object_get(c, "thread"));
        /* find it in the expectations by start time, duration, method and thread */
        size_t k = 0;
        for (; k < g_ncalls; k++)
            if (!seen[k] && g_calls[k].ts == ts && g_calls[k].duration == dur &&
                !strcmp(word(g_calls[k].method), method) && !strcmp(g_calls[k].thread, thread))
                break;
        if (k == g_ncalls) fail_msg("call at %lld (%lld ms, %s) is not expected", (long long)ts, (long long)dur, method);
        seen[k] = 1;
        const exp_call *e = &g_calls[k];
        assert_string_equal(thread, e->thread);
        assert_string_equal(json_string_value(json_object_get(c, "namespace")), cap.ns);
        assert_string_equal(json_string_value(json_object_get(c, "pod")), cap.pod);
        assert_int_equal(json_integer_value(json_object_get(c, "calls")), e->calls);
        char map[8192];
        params_as_map(json_object_get(c, "params"), map, sizeof map);
        assert_go_map_equal(map, e->params);
        assert_true(json_is_true(json_object_get(c, "trace_available")));

        /* its tree */
        const char *id = json_string_value(json_object_get(c, "id"));
        snprintf(path, sizeof path, "/api/v1/calls/%s/tree", id);
        json_t *tree = get_json(&s, path, 200);
        json_t *root = json_object_get(tree, "root");
        json_t *methods = json_object_get(tree, "methods"), *pnames = json_object_get(tree, "params");
        assert_int_equal(json_integer_value(json_object_get(root, "total")), dur);
        enode *want = expected_tree(e);
        compare_node(want, root, methods, pnames, "");
        enode_free(want);
        json_decref(tree);
    }
    for (size_t k = 0; k < g_ncalls; k++) assert_true(seen[k]);
    printf("45 calls and their trees match (%zu nodes, %zu tags checked)\n", g_nodes_checked, g_tags_checked);
    assert_true(g_nodes_checked >= 300 && g_tags_checked >= 400); /* 367 merged nodes, 490 tags */
    json_decref(page);
    server_stop(&s);
    server_destroy(&s);
}

/* Seconds from the 40th flush's ack until the first calls are queryable, on a fresh
 * server. Fails the test if they never show up (waiting up to TEST_WAIT_MS). */
static double visible_after_flush(void)
{
    test_server s;
    server_start(&s, "calls-visible", NULL);
    replay_capture cap;
    replay_capture_parser_test(&cap);
    replay_opts o = {.stop_after_flush = 40};
    replay_result r;
    replay_run(s.port, &cap, &o, &r); /* returns once the 40th flush is acknowledged */
    int64_t t0 = test_now_ms(), t1;
    long long n = 0;
    for (;;) {
        json_t *page = get_json(&s, "/api/v1/calls?from=1690200000000&to=1690210000000&limit=1000", 200);
        n = (long long)json_array_size(json_object_get(page, "calls"));
        json_decref(page);
        t1 = test_now_ms();
        if (n > 0 || t1 - t0 > TEST_WAIT_MS) break;
        sleep_ms(20);
    }
    if (n == 0) server_fail(&s, "no calls queryable %d s after the flush ack", TEST_WAIT_MS / 1000);
    printf("%lld calls visible %.3f s after the flush ack\n", n, (double)(t1 - t0) / 1000.0);
    conn_close(r.fd);
    replay_capture_free(&cap);
    server_stop(&s);
    server_destroy(&s);
    return (double)(t1 - t0) / 1000.0;
}

/* A flush's calls are queryable, within 2 s (the issue's bound; the design's is one loop
 * iteration plus the commit). The bound is a latency: on a machine loaded by other work a
 * single measurement can exceed it without anything being wrong, so it is the best of up
 * to three fresh runs that must meet it (a design that misses it misses it every time). */
static void test_visible_within_2s_of_flush(void **state)
{
    (void)state;
    double best = visible_after_flush();
    for (int run = 1; run < 3 && best > 2.0; run++) {
        double t = visible_after_flush();
        if (t < best) best = t;
    }
    assert_true(best <= 2.0);
}

/* Waits (<= TEST_WAIT_MS) until the server's log holds needle; the log, NUL-terminated,
 * goes to log (cp_buf_free it). Fails the test with the log otherwise. */
static void wait_log(const test_server *s, const char *needle, cp_buf *log)
{
    for (int64_t deadline = test_now_ms() + TEST_WAIT_MS;;) {
        cp_buf_init(log);
        load_file(s->log, log);
        cp_buf_putc(log, 0);
        if (strstr((const char *)log->data, needle)) return;
        cp_buf_free(log);
        if (test_now_ms() > deadline) server_fail(s, "no '%s' in the server's log after %d s", needle, TEST_WAIT_MS / 1000);
        sleep_ms(50);
    }
}

/* Calls of acknowledged bytes survive kill -9: the server is killed right after the last
 * flush ack of a connection that is still open (its last calls are waiting for
 * assembly or in the uncommitted catalog transaction); at restart the recovery pass
 * assembles them from the raw log. Every calls record stored is then in the API, once. */
static void test_calls_survive_kill(void **state)
{
    (void)state;
    test_server s;
    server_start(&s, "calls-kill", NULL);
    replay_capture cap;
    replay_capture_parser_test(&cap);
    /* the number of flushes in the capture: a full replay on a throwaway server */
    replay_opts o = {0};
    replay_result full;
    {
        test_server t;
        server_start(&t, "calls-kill-count", NULL);
        replay_run(t.port, &cap, &o, &full);
        server_stop(&t);
        server_destroy(&t);
    }
    assert_true(full.flushes > 1);
    o.stop_after_flush = (int)full.flushes;
    replay_result r;
    replay_run(s.port, &cap, &o, &r);
    server_kill(&s); /* right after the last ack, the connection still open */
    conn_close(r.fd);
    server_restart(&s, NULL);

    /* what the raw log holds: every calls record of the stored calls file */
    const replay_stream *cs = replay_find_stream(&r, "calls");
    assert_non_null(cs);
    cp_buf raw;
    cp_buf_init(&raw);
    raw_fetch(&s, cap.ns, cap.pod, "calls", cs->seq + 1, &raw);
    uint64_t records = 0;
    char why[256];
    (void)decode_file("calls", raw.data, raw.len, &records, why, sizeof why);
    assert_true(records > 0);

    /* (the repair may still be running when the server is ready: wait for it) */
    json_t *page = replay_wait_calls(&s, "/api/v1/calls?from=1690200000000&to=1690210000000&limit=1000",
                                     (size_t)records);
    json_t *calls = json_object_get(page, "calls");
    printf("%zu calls in the API after kill -9 and restart, %llu records in the raw calls file\n",
           json_array_size(calls), (unsigned long long)records);
    assert_int_equal(json_array_size(calls), records);
    for (size_t i = 0; i < json_array_size(calls); i++) /* no call twice */
        for (size_t j = 0; j < i; j++)
            assert_string_not_equal(json_string_value(json_object_get(json_array_get(calls, i), "id")),
                                    json_string_value(json_object_get(json_array_get(calls, j), "id")));
    json_decref(page);
    /* the restart was recognised as cut off and re-assembled */
    cp_buf log;
    wait_log(&s, "recovery: pod ", &log);
    const char *line = strstr((const char *)log.data, "recovery: pod ");
    printf("%.*s\n", (int)strcspn(line, "\n"), line);
    cp_buf_free(&log);

    /* Deterministically: the same state as a crash that lost part of the hot tier -- the
     * restart's files "open" again and 20 of its calls gone -- is repaired exactly. */
    server_stop(&s);
    char db_path[1200];
    snprintf(db_path, sizeof db_path, "%s/catalog.db", s.data);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(db_path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db, "UPDATE streams SET status = 'open'", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'calls\\_%' ESCAPE '\\'",
                                        -1, &q, NULL),
                     SQLITE_OK);
    int deleted = 0;
    char names[64][64];
    int nnames = 0;
    while (sqlite3_step(q) == SQLITE_ROW && nnames < 64)
        snprintf(names[nnames++], sizeof names[0], "%s", (const char *)sqlite3_column_text(q, 0));
    sqlite3_finalize(q);
    for (int i = 0; i < nnames && deleted < 20; i++) {
        char sql[512];
        snprintf(sql, sizeof sql, "DELETE FROM %.60s WHERE id IN (SELECT id FROM %.60s LIMIT %d)", names[i], names[i],
                 20 - deleted);
        assert_int_equal(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        deleted += sqlite3_changes(db);
    }
    sqlite3_close(db);
    assert_int_equal(deleted, 20);
    server_restart(&s, NULL);
    page = replay_wait_calls(&s, "/api/v1/calls?from=1690200000000&to=1690210000000&limit=1000", (size_t)records);
    assert_int_equal(json_array_size(json_object_get(page, "calls")), records);
    json_decref(page);
    wait_log(&s, "20 were missing and are stored", &log);
    cp_buf_free(&log);

    cp_buf_free(&raw);
    replay_capture_free(&cap);
    server_stop(&s);
    server_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_calls_and_trees_match_fixture, servers_teardown),
        cmocka_unit_test_teardown(test_visible_within_2s_of_flush, servers_teardown),
        cmocka_unit_test_teardown(test_calls_survive_kill, servers_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
