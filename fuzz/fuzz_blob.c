/* fuzz_blob.c -- libFuzzer target: the trace blob reader and the merged call tree.
 *
 * Byte 0 picks what the rest is:
 *   even: a whole blob (stored data read back from disk or a database). If it opens, it
 *         must be canonical: rebuilding it from what was read gives the same bytes.
 *   odd:  the trace of a blob whose words, big values and pauses are fixed below, so
 *         the fuzzer spends its time on trace shapes instead of rediscovering the blob
 *         framing.
 * Every blob that opens is added to a tree twice (the second add exercises merging and
 * the synthetic root) under small limits picked from byte 0, and the tree's JSON must be
 * valid UTF-8 with balanced brackets. Crashes, leaks and UB are what the sanitizers catch;
 * wrong answers are what the FZ_CHECKs catch. */
#include "fuzz_common.h"

#include "model/cp_model.h"
#include "model/cp_tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Rebuilds a blob from its parsed form: must reproduce the input byte for byte. */
static void check_canonical(const cp_blob *b, const uint8_t *data, size_t size)
{
    cp_blob_builder bb;
    cp_blob_builder_init(&bb);
    FZ_CHECK(cp_buf_append(&bb.trace, b->trace, b->trace_len) == CP_OK, "append");
    for (size_t i = 0; i < b->nwords; i++) {
        FZ_CHECK(cp_blob_find_word(b, b->words[i].id) == &b->words[i], "find_word(%d) misses", b->words[i].id);
        FZ_CHECK(cp_blob_add_word(&bb, b->words[i].id, b->words[i].text, b->words[i].len) == CP_OK, "add_word");
    }
    for (size_t i = 0; i < b->nvalues; i++) {
        const cp_blob_value *v = &b->values[i];
        FZ_CHECK(cp_blob_find_value(b, v->kind, v->file, v->offset) == v, "find_value misses");
        FZ_CHECK(cp_blob_add_value(&bb, v->kind, v->file, v->offset, v->resolved, v->text, v->len) == CP_OK,
                 "add_value");
    }
    for (size_t i = 0; i < b->npauses; i++)
        FZ_CHECK(cp_blob_add_pause(&bb, b->pauses[i].end_ms, b->pauses[i].duration_ms) == CP_OK, "add_pause");
    cp_buf out;
    cp_buf_init(&out);
    FZ_CHECK(cp_blob_build(&bb, &out) == CP_OK, "build");
    FZ_CHECK(out.len == size && memcmp(out.data, data, size) == 0, "rebuilt blob differs (%zu vs %zu bytes)", out.len,
             size);
    cp_buf_free(&out);
    cp_blob_builder_free(&bb);
}

/* JSON sanity without a parser: valid UTF-8, brackets balanced outside strings. */
static void check_json(const cp_buf *j)
{
    FZ_CHECK(fz_valid_utf8(j->data, j->len), "tree JSON is not valid UTF-8");
    long depth = 0;
    int in_str = 0;
    for (size_t i = 0; i < j->len; i++) {
        uint8_t c = j->data[i];
        if (in_str) {
            FZ_CHECK(c >= 0x20, "raw control byte in a JSON string");
            if (c == '\\') i++;
            else if (c == '"') in_str = 0;
            continue;
        }
        if (c == '"') in_str = 1;
        else if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') depth--;
        FZ_CHECK(depth >= 0, "JSON closes more than it opens at %zu", i);
    }
    FZ_CHECK(depth == 0 && !in_str && j->len && j->data[0] == '{', "JSON not balanced");
}

/* Pause arithmetic: an overlap is never negative nor longer than the window. */
static void check_pauses(const cp_blob *b)
{
    if (!b->npauses) return;
    int64_t from, to = b->pauses[b->npauses - 1].end_ms, span;
    if (__builtin_sub_overflow(b->pauses[0].end_ms, 50, &from) || __builtin_sub_overflow(to, from, &span) || span <= 0)
        return; /* garbage times at the ends of the range */
    int64_t o = cp_pause_overlap(b->pauses, b->npauses, from, to);
    FZ_CHECK(o >= 0 && o <= span, "overlap %lld outside [0, %lld]", (long long)o, (long long)span);
}

static void run_tree(const cp_blob *b, uint8_t knobs)
{
    cp_tree_limits lim;
    cp_tree_limits_default(&lim);
    lim.max_nodes = 1 + (knobs & 7) * 8;
    lim.max_events = 20000;
    lim.max_groups = (knobs >> 3) & 3;
    lim.max_variants = (knobs >> 5) & 1;
    lim.trim_chars = (knobs >> 6) * 3;
    cp_tree *t = cp_tree_new(&lim);
    FZ_CHECK(t != NULL, "cp_tree_new");
    char err[256];
    for (int i = 0; i < 2; i++) {
        size_t calls = cp_tree_calls(t), nodes = cp_tree_nodes(t);
        err[0] = 0;
        int st = cp_tree_add(t, b, err, sizeof err);
        FZ_CHECK(st == CP_OK || st == CP_ECORRUPT || st == CP_ELIMIT, "cp_tree_add returned %d", st);
        if (st != CP_OK) FZ_CHECK(err[0] != 0, "error %d without a reason", st);
        if (st == CP_ECORRUPT) /* validated before the tree is touched */
            FZ_CHECK(cp_tree_calls(t) == calls && cp_tree_nodes(t) == nodes, "corrupt trace changed the tree");
        if (st != CP_OK) break;
        FZ_CHECK(cp_tree_calls(t) == calls + 1, "call not counted");
        FZ_CHECK(cp_tree_nodes(t) <= lim.max_nodes, "%zu nodes over the budget", cp_tree_nodes(t));
    }
    cp_buf j;
    cp_buf_init(&j);
    FZ_CHECK(cp_tree_json(t, "[]", 2, &j) == CP_OK, "cp_tree_json failed");
    check_json(&j);
    cp_buf_free(&j);
    cp_tree_free(t);
}

/* Fixed context for trace-only inputs: small ids are words (two of them the special
 * param names), a few references resolve, one is known but unresolved. */
static void wrap_trace(const uint8_t *trace, size_t n, cp_buf *out)
{
    static const char *const words[] = {"void a.A.a()", "binds", "call.info", "sql", "x", "void b.B.b()", "", "é"};
    cp_blob_builder bb;
    cp_blob_builder_init(&bb);
    cp_buf_append(&bb.trace, trace, n);
    for (int32_t i = 0; i < (int32_t)CP_ARRAY_LEN(words); i++) cp_blob_add_word(&bb, i, words[i], strlen(words[i]));
    cp_blob_add_value(&bb, 3, 1, 0, 1, "SELECT a, 'b''c' FROM t WHERE x = 1", 35);
    cp_blob_add_value(&bb, 3, 1, 1, 1, "SELECT a FROM t WHERE x = 22", 28);
    cp_blob_add_value(&bb, 1, 1, 0, 1, "<x/>", 4);
    cp_blob_add_value(&bb, 1, 1, 1, 0, "1:1:1", 5);
    cp_blob_add_pause(&bb, 50, 20);
    cp_blob_add_pause(&bb, 60, 40);
    cp_blob_add_pause(&bb, 1000, 5);
    FZ_CHECK(cp_blob_build(&bb, out) == CP_OK, "wrap_trace build");
    cp_blob_builder_free(&bb);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    uint8_t mode = data[0];
    cp_buf wrapped;
    cp_buf_init(&wrapped);
    const uint8_t *p = data + 1;
    size_t n = size - 1;
    if (mode & 1) {
        wrap_trace(p, n, &wrapped);
        p = wrapped.data;
        n = wrapped.len;
    }
    /* an exact-size copy, so ASan sees any read past the end */
    uint8_t *copy = malloc(n ? n : 1);
    FZ_CHECK(copy != NULL, "malloc");
    memcpy(copy, p, n);
    cp_blob *b = NULL;
    char err[256];
    int st = cp_blob_open(copy, n, &b, err, sizeof err);
    FZ_CHECK(st == CP_OK || st == CP_ECORRUPT, "cp_blob_open returned %d", st);
    if (st == CP_OK) {
        FZ_CHECK(b != NULL, "opened without a blob");
        check_canonical(b, copy, n);
        check_pauses(b);
        run_tree(b, (uint8_t)((mode >> 1) | (data[size - 1] & 0x80)));
        cp_blob_free(b);
    } else {
        FZ_CHECK(b == NULL && err[0], "failed open: blob %p, reason '%s'", (void *)b, err);
    }
    free(copy);
    cp_buf_free(&wrapped);
    return 0;
}
