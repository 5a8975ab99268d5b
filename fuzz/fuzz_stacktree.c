/* fuzz_stacktree.c -- libFuzzer target: sampled stacks merged into trees (cp_stacktree.h)
 * from hostile thread dumps and pprof profiles, through the parsers the API uses
 * (cp_td_parse, cp_pprof_parse), then the tree's JSON.
 *
 * Input: byte 0 picks the source (even: a thread dump, odd: a pprof profile) and whether
 * idle threads are included (bit 1); byte 1 the node budget (1..256, or the default when
 * 0); byte 2 the depth (1..16, 0: default) and frame-bytes (1..16, 0: default) budgets;
 * the rest is the file. Checked properties:
 *   1. The adapters return CP_OK, or CP_ELIMIT only under a budget; the tree never has
 *      more nodes than its budget.
 *   2. Counts: thread dump -- samples added + idle left out = threads (all added with
 *      idle, unless a budget stopped it), every weight 1 so the root's total = samples;
 *      pprof -- samples + skipped = samples read, the root's total = the sum of the
 *      positive values of the samples added (saturating).
 *   3. The JSON parses (jansson), re-dumps as valid UTF-8, holds the root's label as the
 *      last method, and every node is consistent: method in range, self <= total,
 *      calls = the sum of its children's invocations + calls, and (without saturation)
 *      total = self + the children's totals, children ordered by total descending.
 */
#include "fuzz_common.h"

#include "model/cp_stacktree.h"

#include <jansson.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_MAX_INFLATED (1u << 20)

static int64_t jint(json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

/* Node invariants over the whole tree (explicit stack: trees may be deep). */
static void check_nodes(json_t *doc, int exact)
{
    size_t nmethods = json_array_size(json_object_get(doc, "methods"));
    json_t *stack = json_array();
    json_array_append(stack, json_object_get(doc, "root"));
    size_t seen = 0;
    while (json_array_size(stack)) {
        json_t *n = json_incref(json_array_get(stack, json_array_size(stack) - 1));
        json_array_remove(stack, json_array_size(stack) - 1);
        seen++;
        FZ_CHECK(json_is_integer(json_object_get(n, "method")) && (size_t)jint(n, "method") < nmethods,
                 "method %lld of %zu", (long long)jint(n, "method"), nmethods);
        FZ_CHECK(jint(n, "self") >= 0 && jint(n, "self") <= jint(n, "total"), "self %lld total %lld",
                 (long long)jint(n, "self"), (long long)jint(n, "total"));
        FZ_CHECK(jint(n, "suspension") == 0 && jint(n, "first") == 0 && jint(n, "last") == 0, "times not 0");
        int64_t sum = jint(n, "self"), calls = 0, prev = INT64_MAX;
        json_t *c;
        size_t i;
        json_array_foreach(json_object_get(n, "children"), i, c)
        {
            sum += jint(c, "total");
            calls += jint(c, "invocations") + jint(c, "calls");
            FZ_CHECK(jint(c, "total") <= prev, "children not ordered by total");
            prev = jint(c, "total");
            json_array_append(stack, c);
        }
        FZ_CHECK(calls == jint(n, "calls"), "calls %lld, children say %lld", (long long)jint(n, "calls"),
                 (long long)calls);
        if (exact) FZ_CHECK(sum == jint(n, "total"), "total %lld, self + children %lld", (long long)jint(n, "total"),
                            (long long)sum);
        json_decref(n);
    }
    json_decref(stack);
    FZ_CHECK(seen == (size_t)jint(doc, "nodes") + 1, "%zu nodes walked, \"nodes\" %lld", seen,
             (long long)jint(doc, "nodes"));
}

static void check_json(const cp_stacktree *t, int exact)
{
    cp_buf b;
    cp_buf_init(&b);
    FZ_CHECK(cp_stacktree_json(t, NULL, 1, 2, "{}", 2, &b) == CP_OK, "cp_stacktree_json");
    json_error_t e;
    json_t *doc = json_loadb((const char *)b.data, b.len, JSON_ALLOW_NUL, &e);
    FZ_CHECK(doc != NULL, "JSON does not parse: %s", e.text);
    FZ_CHECK(fz_valid_utf8(b.data, b.len), "JSON text is not UTF-8");
    json_t *m = json_object_get(doc, "methods");
    char label[48];
    snprintf(label, sizeof label, "%zu samples", cp_stacktree_samples(t));
    FZ_CHECK(!strcmp(json_string_value(json_array_get(m, json_array_size(m) - 1)), label), "root label");
    FZ_CHECK(jint(json_object_get(doc, "root"), "total") == cp_stacktree_total(t), "root total");
    FZ_CHECK(jint(json_object_get(doc, "root"), "invocations") == (int64_t)cp_stacktree_samples(t), "root invocations");
    check_nodes(doc, exact);
    json_decref(doc);
    cp_buf_free(&b);
}

static void fuzz_td(const uint8_t *p, size_t n, int idle, const cp_stacktree_limits *lim, int budgeted)
{
    cp_td *td = NULL;
    char err[256];
    if (cp_td_parse((const char *)p, n, &td, err, sizeof err) != CP_OK) return;
    cp_stacktree *t = cp_stacktree_new(lim);
    FZ_CHECK(t != NULL, "cp_stacktree_new");
    cp_td_sample_stats st = {0};
    int rc = cp_stacktree_add_td(t, td, idle, &st, err, sizeof err);
    FZ_CHECK(rc == CP_OK || (rc == CP_ELIMIT && budgeted), "add_td: %d (%s)", rc, err);
    FZ_CHECK(cp_stacktree_nodes(t) <= cp_stacktree_limits_of(t)->max_nodes, "over the node budget");
    FZ_CHECK(st.threads == cp_stacktree_samples(t), "threads %zu, samples %zu", st.threads, cp_stacktree_samples(t));
    if (rc == CP_OK) FZ_CHECK(st.threads + st.excluded_idle == td->nthreads, "threads lost");
    if (idle) FZ_CHECK(st.excluded_idle == 0, "idle threads left out with idle");
    FZ_CHECK(cp_stacktree_total(t) == (int64_t)st.threads, "weights of 1");
    check_json(t, 1);
    cp_stacktree_free(t);
    cp_td_free(td);
}

static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

static void fuzz_pprof(const uint8_t *p, size_t n, const cp_stacktree_limits *lim, int budgeted)
{
    cp_pprof *pf = NULL;
    char err[256];
    if (cp_pprof_parse(p, n, FZ_MAX_INFLATED, &pf, err, sizeof err) != CP_OK) return;
    const cp_pprof_info *in = cp_pprof_get_info(pf);
    for (size_t type = 0; type <= in->nsample_types && type < 3; type++) {
        cp_stacktree *t = cp_stacktree_new(lim);
        FZ_CHECK(t != NULL, "cp_stacktree_new");
        cp_pprof_sample_stats st = {0};
        int rc = cp_stacktree_add_pprof(t, pf, type, &st, err, sizeof err);
        if (type == in->nsample_types) {
            FZ_CHECK(rc == CP_EINVAL, "a sample type out of range: %d", rc);
            cp_stacktree_free(t);
            break;
        }
        FZ_CHECK(rc == CP_OK || (rc == CP_ELIMIT && budgeted), "add_pprof: %d (%s)", rc, err);
        FZ_CHECK(cp_stacktree_nodes(t) <= cp_stacktree_limits_of(t)->max_nodes, "over the node budget");
        FZ_CHECK(st.samples == cp_stacktree_samples(t), "samples");
        /* the sum of the values added: the samples before the one a budget refused */
        int64_t sum = 0;
        size_t added = 0, skipped = 0;
        for (size_t i = 0; i < in->samples && added < st.samples; i++) {
            int64_t v;
            size_t depth;
            cp_pprof_frame f;
            FZ_CHECK(cp_pprof_sample_stack(pf, i, type, &v, &f, 1, &depth) == CP_OK, "sample %zu", i);
            if (v <= 0) {
                skipped++;
                continue;
            }
            sum = sat_add(sum, v);
            added++;
        }
        if (rc == CP_OK) FZ_CHECK(st.samples + st.skipped == in->samples, "samples lost");
        FZ_CHECK(cp_stacktree_total(t) == sum, "root total %lld, values %lld", (long long)cp_stacktree_total(t),
                 (long long)sum);
        check_json(t, sum < INT64_MAX / 2);
        cp_stacktree_free(t);
    }
    cp_pprof_free(pf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 3) return 0;
    cp_stacktree_limits lim = {0}; /* zeros take the defaults */
    if (data[1]) lim.max_nodes = 1 + data[1] % 256;
    if (data[2] & 0x0f) lim.max_depth = data[2] & 0x0f;
    if (data[2] >> 4) lim.max_frame_bytes = data[2] >> 4;
    const uint8_t *p = data + 3;
    size_t n = size - 3;
    /* a copy of the exact size, so a read past the end is caught */
    uint8_t *copy = malloc(n ? n : 1);
    memcpy(copy, p, n);
    if (data[0] & 1) fuzz_pprof(copy, n, &lim, data[1] != 0);
    else fuzz_td(copy, n, (data[0] >> 1) & 1, &lim, data[1] != 0);
    free(copy);
    return 0;
}
