/* tree_test.c -- the trace blob (builder, reader, every rejection), the pause arithmetic,
 * SQL signatures and merged call trees (cp_model.h, cp_tree.h; ui.md §4.1, §4.10, §8.5).
 *
 * Traces are written by a tiny event encoder below (protocol.md §5.5) with absolute
 * times, so every expected number can be worked out by hand from the test itself. Trees
 * are checked through their JSON (parsed with jansson), i.e. through the API shape. */
#include "testutil.h"

#include "model/cp_model.h"
#include "model/cp_tree.h"
#include "streams/cp_streams.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BASE INT64_C(1700000000000) /* "t = 0" of the hand-written traces */
#define TIMER (BASE - 5000)         /* their trace file's timer start */

/* ---- trace encoder ------------------------------------------------------------------- */

static void put_vi(cp_buf *b, uint32_t v)
{
    while (v >= 0x80) {
        cp_buf_putc(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    cp_buf_putc(b, (uint8_t)v);
}

static void put_be64(cp_buf *b, int64_t v)
{
    uint8_t x[8];
    cp_put_be64(x, (uint64_t)v);
    cp_buf_append(b, x, 8);
}

/* Event header: type in bits 0-1, low 5 delta bits in 2-6, bit 7 = high bits follow. */
static void put_hdr(cp_buf *b, int type, int32_t delta)
{
    uint8_t h = (uint8_t)((((uint32_t)delta & 31u) << 2) | (uint32_t)type);
    if (delta < 0 || delta > 31) {
        cp_buf_putc(b, h | 0x80);
        put_vi(b, (uint32_t)(delta >> 5));
    } else {
        cp_buf_putc(b, h);
    }
}

/* varstring: UTF-8 test text -> UTF-16BE units (one unit per byte at most: enough). */
static void put_str(cp_buf *b, const char *s)
{
    size_t cap = strlen(s) + 2;
    uint16_t *units = malloc(cap * sizeof *units);
    assert_non_null(units);
    size_t n = 0;
    const uint8_t *p = (const uint8_t *)s;
    while (*p) {
        uint32_t cp;
        if (*p < 0x80) cp = *p++;
        else if (*p < 0xE0) cp = (uint32_t)(*p++ & 0x1F) << 6, cp |= *p++ & 0x3F;
        else if (*p < 0xF0) cp = (uint32_t)(*p++ & 0x0F) << 12, cp |= (uint32_t)(*p++ & 0x3F) << 6, cp |= *p++ & 0x3F;
        else {
            cp = (uint32_t)(*p++ & 0x07) << 18;
            cp |= (uint32_t)(*p++ & 0x3F) << 12;
            cp |= (uint32_t)(*p++ & 0x3F) << 6;
            cp |= *p++ & 0x3F;
        }
        assert_true(n + 2 <= cap);
        if (cp >= 0x10000) {
            cp -= 0x10000;
            units[n++] = (uint16_t)(0xD800 + (cp >> 10));
            units[n++] = (uint16_t)(0xDC00 + (cp & 0x3FF));
        } else {
            units[n++] = (uint16_t)cp;
        }
    }
    put_vi(b, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        cp_buf_putc(b, (uint8_t)(units[i] >> 8));
        cp_buf_putc(b, (uint8_t)units[i]);
    }
    free(units);
}

/* A trace file written with absolute event times. */
typedef struct tw {
    cp_buf b;
    int64_t timer, last;
} tw;

static void tw_begin(tw *w, int64_t timer)
{
    cp_buf_init(&w->b);
    w->timer = timer;
    put_be64(&w->b, timer);
}

/* A chunk's first event carries its time as the offset from the timer start. */
static void tw_chunk(tw *w, int64_t thread, int64_t chunk_time)
{
    put_be64(&w->b, thread);
    put_be64(&w->b, chunk_time);
    w->last = w->timer;
}

static int32_t tw_delta(tw *w, int64_t t)
{
    int32_t d = (int32_t)(t - w->last);
    w->last = t;
    return d;
}

static void tw_enter(tw *w, int64_t t, int32_t id)
{
    put_hdr(&w->b, 0, tw_delta(w, t));
    put_vi(&w->b, (uint32_t)id);
}
static void tw_exit(tw *w, int64_t t) { put_hdr(&w->b, 1, tw_delta(w, t)); }
static void tw_tag(tw *w, int64_t t, int32_t id, int type, const char *s)
{
    put_hdr(&w->b, 2, tw_delta(w, t));
    put_vi(&w->b, (uint32_t)id);
    cp_buf_putc(&w->b, (uint8_t)type);
    put_str(&w->b, s);
}
static void tw_ref(tw *w, int64_t t, int32_t id, int type, int32_t file, int32_t off)
{
    put_hdr(&w->b, 2, tw_delta(w, t));
    put_vi(&w->b, (uint32_t)id);
    cp_buf_putc(&w->b, (uint8_t)type);
    put_vi(&w->b, (uint32_t)file);
    put_vi(&w->b, (uint32_t)off);
}
static void tw_finish(tw *w) { cp_buf_putc(&w->b, 0x03); }

/* ---- blobs ----------------------------------------------------------------------------- */

typedef struct wdef { int32_t id; const char *text; } wdef;
typedef struct vdef { uint8_t kind; int32_t file, offset; int resolved; const char *text; } vdef;

typedef struct bspec {
    const wdef *words;
    size_t nwords;
    const vdef *values;
    size_t nvalues;
    const cp_blob_pause *pauses;
    size_t npauses;
} bspec;

/* An opened blob and the bytes it aliases. */
typedef struct tblob {
    cp_buf bytes;
    cp_blob *b;
} tblob;

static void tb_make(tblob *tb, const cp_buf *trace, const bspec *s)
{
    cp_blob_builder bb;
    cp_blob_builder_init(&bb);
    assert_int_equal(cp_buf_append(&bb.trace, trace->data, trace->len), CP_OK);
    for (size_t i = 0; s && i < s->nwords; i++)
        assert_int_equal(cp_blob_add_word(&bb, s->words[i].id, s->words[i].text, strlen(s->words[i].text)), CP_OK);
    for (size_t i = 0; s && i < s->nvalues; i++) {
        const vdef *v = &s->values[i];
        assert_int_equal(cp_blob_add_value(&bb, v->kind, v->file, v->offset, v->resolved, v->text, strlen(v->text)),
                         CP_OK);
    }
    for (size_t i = 0; s && i < s->npauses; i++)
        assert_int_equal(cp_blob_add_pause(&bb, s->pauses[i].end_ms, s->pauses[i].duration_ms), CP_OK);
    cp_buf_init(&tb->bytes);
    assert_int_equal(cp_blob_build(&bb, &tb->bytes), CP_OK);
    cp_blob_builder_free(&bb);
    char err[256];
    assert_int_equal(cp_blob_open(tb->bytes.data, tb->bytes.len, &tb->b, err, sizeof err), CP_OK);
}

static void tb_free(tblob *tb)
{
    cp_blob_free(tb->b);
    cp_buf_free(&tb->bytes);
}

/* Adds a trace to a tree through a blob; returns the status, err filled. */
static int add_trace(cp_tree *t, const cp_buf *trace, const bspec *s, char *err, size_t errlen)
{
    tblob tb;
    tb_make(&tb, trace, s);
    int st = cp_tree_add(t, tb.b, err, errlen);
    tb_free(&tb);
    return st;
}

/* ---- JSON helpers ---------------------------------------------------------------------- */

static json_t *tree_doc(const cp_tree *t, const char *calls)
{
    cp_buf out;
    cp_buf_init(&out);
    assert_int_equal(cp_tree_json(t, calls, calls ? strlen(calls) : 0, &out), CP_OK);
    json_error_t je;
    json_t *doc = json_loadb((const char *)out.data, out.len, 0, &je);
    if (!doc) fail_msg("tree JSON does not parse: %s at %d: %.*s", je.text, je.position, (int)out.len, out.data);
    cp_buf_free(&out);
    return doc;
}

static json_int_t num(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) fail_msg("field %s missing or not an integer", key);
    return json_integer_value(v);
}

static const char *method_of(json_t *doc, json_t *node)
{
    json_t *m = json_array_get(json_object_get(doc, "methods"), (size_t)num(node, "method"));
    assert_non_null(m);
    return json_string_value(m);
}

static const char *param_name(json_t *doc, json_t *param)
{
    json_t *m = json_array_get(json_object_get(doc, "params"), (size_t)num(param, "param"));
    assert_non_null(m);
    return json_string_value(m);
}

/* The child of node whose method text is `method`; fails if absent. */
static json_t *kid(json_t *doc, json_t *node, const char *method)
{
    json_t *kids = json_object_get(node, "children"), *c;
    size_t i;
    json_array_foreach(kids, i, c) if (strcmp(method_of(doc, c), method) == 0) return c;
    fail_msg("no child %s", method);
    return NULL;
}

static size_t nkids(json_t *node) { return json_array_size(json_object_get(node, "children")); }

/* The groups of param `name` in the params of obj (a node or a group); NULL if absent. */
static json_t *groups_of(json_t *doc, json_t *obj, const char *name)
{
    json_t *params = json_object_get(obj, "params"), *p;
    size_t i;
    json_array_foreach(params, i, p) if (strcmp(param_name(doc, p), name) == 0) return json_object_get(p, "groups");
    return NULL;
}

static json_t *group(json_t *groups, const char *value)
{
    json_t *g;
    size_t i;
    json_array_foreach(groups, i, g) if (strcmp(json_string_value(json_object_get(g, "value")), value) == 0) return g;
    fail_msg("no group with value %s", value);
    return NULL;
}

static const char *gval(json_t *groups, size_t i)
{
    return json_string_value(json_object_get(json_array_get(groups, i), "value"));
}

static void check_node(json_t *n, json_int_t total, json_int_t self, json_int_t susp, json_int_t ssusp,
                       json_int_t inv, json_int_t calls)
{
    assert_int_equal(num(n, "total"), total);
    assert_int_equal(num(n, "self"), self);
    assert_int_equal(num(n, "suspension"), susp);
    assert_int_equal(num(n, "self_suspension"), ssusp);
    assert_int_equal(num(n, "invocations"), inv);
    assert_int_equal(num(n, "calls"), calls);
}

static void check_group(json_t *g, json_int_t dur, json_int_t count)
{
    assert_non_null(g);
    assert_int_equal(num(g, "duration"), dur);
    assert_int_equal(num(g, "count"), count);
}

/* ---- blob: builder and reader ----------------------------------------------------------- */

static void test_blob_roundtrip(void **state)
{
    (void)state;
    cp_blob_builder bb;
    cp_blob_builder_init(&bb);
    cp_buf_append(&bb.trace, "\0\0\0\0\0\0\0\1tracebytes", 18);
    /* out of order, with duplicates: the first text of an id / reference wins */
    assert_int_equal(cp_blob_add_word(&bb, 40, "forty", 5), CP_OK);
    assert_int_equal(cp_blob_add_word(&bb, 3, "three", 5), CP_OK);
    assert_int_equal(cp_blob_add_word(&bb, 40, "FORTY", 5), CP_OK);
    assert_int_equal(cp_blob_add_word(&bb, 0, "", 0), CP_OK);
    assert_int_equal(cp_blob_add_word(&bb, 17, "seventeen", 9), CP_OK);
    assert_int_equal(cp_blob_add_value(&bb, 3, 1, 274, 1, "SELECT 2", 8), CP_OK);
    assert_int_equal(cp_blob_add_value(&bb, 1, 2, 0, 1, "<x/>", 4), CP_OK);
    assert_int_equal(cp_blob_add_value(&bb, 3, 1, 0, 1, "SELECT 1", 8), CP_OK);
    assert_int_equal(cp_blob_add_value(&bb, 3, 1, 274, 1, "other", 5), CP_OK);
    assert_int_equal(cp_blob_add_value(&bb, 3, 0, 9, 0, "3:0:9", 5), CP_OK);
    assert_int_equal(cp_blob_add_pause(&bb, 5000, 30), CP_OK);
    assert_int_equal(cp_blob_add_pause(&bb, 1000, 10), CP_OK);
    assert_int_equal(cp_blob_add_pause(&bb, 5000, 30), CP_OK); /* exact duplicate: dropped */
    assert_int_equal(cp_blob_add_pause(&bb, INT64_C(1690201583767), 2), CP_OK);
    /* bad arguments */
    assert_int_equal(cp_blob_add_word(&bb, -1, "x", 1), CP_EINVAL);
    assert_int_equal(cp_blob_add_value(&bb, 2, 1, 1, 1, "x", 1), CP_EINVAL);
    assert_int_equal(cp_blob_add_value(&bb, 1, -1, 1, 1, "x", 1), CP_EINVAL);
    assert_int_equal(cp_blob_add_pause(&bb, 1, -1), CP_EINVAL);

    cp_buf out;
    cp_buf_init(&out);
    cp_buf_append(&out, "prefix", 6); /* build appends */
    assert_int_equal(cp_blob_build(&bb, &out), CP_OK);
    assert_memory_equal(out.data, "prefixCPT1", 10);

    cp_blob *b;
    char err[200];
    assert_int_equal(cp_blob_open(out.data + 6, out.len - 6, &b, err, sizeof err), CP_OK);
    assert_int_equal(b->trace_len, 18);
    assert_memory_equal(b->trace, "\0\0\0\0\0\0\0\1tracebytes", 18);
    assert_int_equal(b->nwords, 4);
    int32_t ids[] = {0, 3, 17, 40};
    for (size_t i = 0; i < 4; i++) assert_int_equal(b->words[i].id, ids[i]);
    const cp_blob_word *w = cp_blob_find_word(b, 40);
    assert_non_null(w);
    assert_int_equal(w->len, 5);
    assert_memory_equal(w->text, "forty", 5);
    assert_int_equal(cp_blob_find_word(b, 0)->len, 0);
    assert_null(cp_blob_find_word(b, 4));
    assert_null(cp_blob_find_word(b, 41));
    assert_null(cp_blob_find_word(b, -1));

    assert_int_equal(b->nvalues, 4);
    assert_int_equal(b->values[0].kind, 1);
    assert_int_equal(b->values[1].kind, 3);
    assert_int_equal(b->values[1].file, 0);
    const cp_blob_value *v = cp_blob_find_value(b, 3, 1, 274);
    assert_non_null(v);
    assert_int_equal(v->resolved, 1);
    assert_int_equal(v->len, 8);
    assert_memory_equal(v->text, "SELECT 2", 8);
    v = cp_blob_find_value(b, 3, 0, 9);
    assert_non_null(v);
    assert_int_equal(v->resolved, 0);
    assert_null(cp_blob_find_value(b, 1, 1, 274));
    assert_null(cp_blob_find_value(b, 3, 1, 1));

    assert_int_equal(b->npauses, 3);
    assert_int_equal(b->pauses[0].end_ms, 1000);
    assert_int_equal(b->pauses[1].end_ms, 5000);
    assert_int_equal(b->pauses[1].duration_ms, 30);
    assert_int_equal(b->pauses[2].end_ms, INT64_C(1690201583767));

    /* rebuilding from what was read gives the same bytes (canonical form) */
    cp_blob_builder rb;
    cp_blob_builder_init(&rb);
    cp_buf_append(&rb.trace, b->trace, b->trace_len);
    for (size_t i = b->nwords; i-- > 0;) cp_blob_add_word(&rb, b->words[i].id, b->words[i].text, b->words[i].len);
    for (size_t i = 0; i < b->nvalues; i++)
        cp_blob_add_value(&rb, b->values[i].kind, b->values[i].file, b->values[i].offset, b->values[i].resolved,
                          b->values[i].text, b->values[i].len);
    for (size_t i = b->npauses; i-- > 0;) cp_blob_add_pause(&rb, b->pauses[i].end_ms, b->pauses[i].duration_ms);
    cp_buf again;
    cp_buf_init(&again);
    assert_int_equal(cp_blob_build(&rb, &again), CP_OK);
    assert_int_equal(again.len, out.len - 6);
    assert_memory_equal(again.data, out.data + 6, again.len);

    /* reset: an empty blob is four bytes of magic and four zero counts */
    cp_blob_builder_reset(&rb);
    cp_buf_reset(&again);
    assert_int_equal(cp_blob_build(&rb, &again), CP_OK);
    assert_int_equal(again.len, 8);
    assert_memory_equal(again.data, "CPT1\0\0\0\0", 8);

    cp_blob_free(b);
    cp_buf_free(&again);
    cp_blob_builder_free(&rb);
    cp_buf_free(&out);
    cp_blob_builder_free(&bb);
}

/* Every proper prefix, and the blob with a byte appended, is refused. */
static void test_blob_truncations(void **state)
{
    (void)state;
    cp_blob_builder bb;
    cp_blob_builder_init(&bb);
    cp_buf_append(&bb.trace, "12345678abc", 11);
    cp_blob_add_word(&bb, 300, "a word", 6);
    cp_blob_add_word(&bb, 1, "w", 1);
    cp_blob_add_value(&bb, 3, 1, 70000, 1, "SELECT x FROM y", 15);
    cp_blob_add_value(&bb, 1, 1, 5, 0, "1:1:5", 5);
    cp_blob_add_pause(&bb, INT64_C(1690201583767), 200);
    cp_blob_add_pause(&bb, INT64_C(1690201583999), 0);
    cp_buf out;
    cp_buf_init(&out);
    assert_int_equal(cp_blob_build(&bb, &out), CP_OK);
    cp_blob *b = NULL;
    char err[200];
    for (size_t n = 0; n < out.len; n++) {
        uint8_t *copy = malloc(n ? n : 1); /* exact size: ASan catches any read past it */
        memcpy(copy, out.data, n);
        int st = cp_blob_open(copy, n, &b, err, sizeof err);
        if (st != CP_ECORRUPT) fail_msg("prefix of %zu/%zu bytes: status %d", n, out.len, st);
        assert_null(b);
        assert_true(strlen(err) > 0);
        free(copy);
    }
    cp_buf_putc(&out, 0);
    assert_int_equal(cp_blob_open(out.data, out.len, &b, err, sizeof err), CP_ECORRUPT);
    assert_non_null(strstr(err, "after the pauses"));
    assert_int_equal(cp_blob_open(out.data, out.len - 1, &b, NULL, 0), CP_OK); /* err may be NULL */
    cp_blob_free(b);
    cp_buf_free(&out);
    cp_blob_builder_free(&bb);
}

/* Hand-made blobs, each wrong in one way. */
static void test_blob_rejections(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        const char *bytes;
        size_t n;
        const char *why; /* part of the error text */
    } bad[] = {
        {"bad magic", "CPT2\0\0\0\0", 8, "magic"},
        {"short magic", "CPT", 3, "magic"},
        {"trace past the end", "CPT1\x05\0\0\0\0", 9, "past the end"},
        {"huge trace length", "CPT1\xff\xff\xff\xff\x0f\0\0\0", 12, "past the end"},
        {"varint over 5 bytes", "CPT1\x80\x80\x80\x80\x80\x01\0\0\0", 13, "bits"},
        {"varint over 32 bits", "CPT1\x80\x80\x80\x80\x10\0\0\0", 12, "bits"},
        {"overlong varint", "CPT1\x80\x00\0\0\0", 9, "minimal"},
        {"huge word count", "CPT1\0\xff\xff\xff\xff\x0f", 10, "larger than the bytes left"},
        {"word count too big for the bytes", "CPT1\0\x03\x01\x01" "a\0\0", 11, "larger than the bytes left"},
        {"words out of order", "CPT1\0\x02\x05\x01" "a\x03\x01" "b\0\0", 14, "not above"},
        {"duplicate word id", "CPT1\0\x02\x05\x01" "a\x05\x01" "b\0\0", 14, "not above"},
        {"word id above int32", "CPT1\0\x01\x80\x80\x80\x80\x08\x01" "a\0\0", 15, "out of range"},
        {"word past the end", "CPT1\0\x01\x01\x09" "abc\0\0", 11, "past the end"},
        {"huge value count", "CPT1\0\0\xff\xff\xff\xff\x0f", 11, "larger than the bytes left"},
        {"value kind 2", "CPT1\0\0\x01\x02\x01\x00\x01\x00\0", 13, "kind"},
        {"resolved flag 2", "CPT1\0\0\x01\x03\x01\x00\x02\x00\0", 13, "resolved"},
        {"values out of order", "CPT1\0\0\x02\x03\x01\x05\x01\x00\x03\x01\x04\x01\x00\0", 18, "out of order"},
        {"duplicate value", "CPT1\0\0\x02\x01\x01\x05\x01\x00\x01\x01\x05\x01\x00\0", 18, "out of order"},
        {"huge pause count", "CPT1\0\0\0\xff\xff\xff\xff\x0f", 12, "larger than the bytes left"},
        {"pauses out of order", "CPT1\0\0\0\x02\x64\x05\x32\x05", 12, "out of order"},
        {"duplicate pause", "CPT1\0\0\0\x02\x64\x05\x64\x05", 12, "out of order"},
        {"pause duration above int32", "CPT1\0\0\0\x01\x64\xff\xff\xff\xff\x0f", 14, "out of range"},
        {"pause end over 64 bits", "CPT1\0\0\0\x01\x80\x80\x80\x80\x80\x80\x80\x80\x80\x02\x01", 19, "bits"},
        {"trailing byte", "CPT1\0\0\0\0\0", 9, "after the pauses"},
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(bad); i++) {
        cp_blob *b = (cp_blob *)1;
        char err[200] = "";
        uint8_t *copy = malloc(bad[i].n);
        memcpy(copy, bad[i].bytes, bad[i].n);
        int st = cp_blob_open(copy, bad[i].n, &b, err, sizeof err);
        free(copy);
        if (st != CP_ECORRUPT || b != NULL || !strstr(err, bad[i].why))
            fail_msg("%s: status %d, error '%s' (wanted '%s')", bad[i].name, st, err, bad[i].why);
    }
    /* the smallest valid blob, and legal extremes */
    static const struct { const char *bytes; size_t n; } good[] = {
        {"CPT1\0\0\0\0", 8},
        {"CPT1\0\x01\xff\xff\xff\xff\x07\0\0\0", 14},                       /* word id INT32_MAX */
        {"CPT1\0\0\0\x01\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00", 19}, /* end_ms -1 as 64-bit pattern */
        {"CPT1\0\0\0\x02\x64\x05\x64\x06", 12},                               /* same end, longer pause after */
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(good); i++) {
        cp_blob *b;
        char err[200];
        if (cp_blob_open((const uint8_t *)good[i].bytes, good[i].n, &b, err, sizeof err) != CP_OK)
            fail_msg("good blob %zu refused: %s", i, err);
        cp_blob_free(b);
    }
    /* over the size limit: refused before a byte is read */
    cp_blob *b;
    char err[200];
    static const uint8_t one[1];
    assert_int_equal(cp_blob_open(one, (size_t)CP_BLOB_MAX + 1, &b, err, sizeof err), CP_ELIMIT);
    assert_null(b);
}

/* ---- suspension ----------------------------------------------------------------------------- */

/* Brute force on a 1-ms grid: which milliseconds of [from, to) some pause covers. */
static int64_t overlap_slow(const cp_blob_pause *p, size_t n, int64_t from, int64_t to)
{
    int64_t total = 0;
    for (int64_t ms = from; ms < to; ms++) {
        for (size_t i = 0; i < n; i++)
            if (ms >= p[i].end_ms - p[i].duration_ms && ms < p[i].end_ms) {
                total++;
                break;
            }
    }
    return total;
}

static void test_pause_overlap(void **state)
{
    (void)state;
    /* nested: [10,50] swallows [20,30] and [35,40] (sorted by end: 30, 40, 50) */
    cp_blob_pause nested[] = {{30, 10}, {40, 5}, {50, 40}};
    assert_int_equal(cp_pause_overlap(nested, 3, 0, 100), 40);
    assert_int_equal(cp_pause_overlap(nested, 3, 25, 45), 20);
    assert_int_equal(cp_pause_overlap(nested, 3, 50, 60), 0);
    /* overlapping chain [0,10] [5,15] [12,20] -> [0,20] */
    cp_blob_pause chain[] = {{10, 10}, {15, 10}, {20, 8}};
    assert_int_equal(cp_pause_overlap(chain, 3, -100, 100), 20);
    assert_int_equal(cp_pause_overlap(chain, 3, 3, 13), 10);
    /* disjoint */
    cp_blob_pause disj[] = {{10, 5}, {30, 5}, {50, 5}};
    assert_int_equal(cp_pause_overlap(disj, 3, 0, 100), 15);
    assert_int_equal(cp_pause_overlap(disj, 3, 8, 27), 4); /* [8,10] + [25,27] */
    assert_int_equal(cp_pause_overlap(disj, 3, 10, 25), 0);
    /* touching [0,10] [10,20]: 20, not 21 or 19 */
    cp_blob_pause touch[] = {{10, 10}, {20, 10}};
    assert_int_equal(cp_pause_overlap(touch, 2, 0, 20), 20);
    assert_int_equal(cp_pause_overlap(touch, 2, 5, 15), 10);
    /* a long pause ending after the window still counts */
    cp_blob_pause late[] = {{5, 1}, {1000, 990}};
    assert_int_equal(cp_pause_overlap(late, 2, 0, 20), 11);
    /* empty inputs and windows */
    assert_int_equal(cp_pause_overlap(NULL, 0, 0, 100), 0);
    assert_int_equal(cp_pause_overlap(disj, 3, 50, 50), 0);
    assert_int_equal(cp_pause_overlap(disj, 3, 60, 0), 0);
    /* zero-length pauses change nothing */
    cp_blob_pause zero[] = {{10, 0}, {20, 0}};
    assert_int_equal(cp_pause_overlap(zero, 2, 0, 100), 0);
    /* garbage times do not overflow */
    cp_blob_pause wild[] = {{INT64_MIN, INT32_MAX}, {INT64_MAX, INT32_MAX}};
    assert_true(cp_pause_overlap(wild, 2, INT64_MIN, INT64_MAX) >= 0);

    /* random sets against the brute force */
    uint64_t rng = 42;
    for (int round = 0; round < 2000; round++) {
        cp_blob_pause p[12];
        size_t n = test_rand(&rng) % 12;
        int64_t end = 0;
        for (size_t i = 0; i < n; i++) {
            end += (int64_t)(test_rand(&rng) % 15);
            p[i].end_ms = end;
            p[i].duration_ms = (int32_t)(test_rand(&rng) % 40);
        }
        int64_t from = (int64_t)(test_rand(&rng) % 120) - 40, to = from + (int64_t)(test_rand(&rng) % 120);
        if (cp_pause_overlap(p, n, from, to) != overlap_slow(p, n, from, to))
            fail_msg("round %d: %" PRId64 " vs %" PRId64, round, cp_pause_overlap(p, n, from, to),
                     overlap_slow(p, n, from, to));
    }
}

/* ---- SQL signature ------------------------------------------------------------------------- */

static void check_sig(const char *in, const char *want)
{
    cp_buf out;
    cp_buf_init(&out);
    assert_int_equal(cp_sql_signature(in, strlen(in), &out), CP_OK);
    cp_buf_putc(&out, 0);
    if (strcmp((const char *)out.data, want) != 0) fail_msg("signature of '%s': '%s', wanted '%s'", in, out.data, want);
    cp_buf_free(&out);
}

static void test_sql_signature(void **state)
{
    (void)state;
    /* ui.md §4.1 test vectors */
    check_sig("SELECT * FROM orders WHERE id = 123", "S*FoWi=");
    check_sig("WHERE name = 'John''s', age = 7", "Wn=a=");
    check_sig("UPDATE t1 SET x2 = ?", "UtSx=?");
    check_sig("SELECT ab1cd FROM t", "SaFt");
    /* the rules at their edges */
    check_sig("", "");
    check_sig("   \t\n", "");
    check_sig("a,b", "a");            /* a removed comma joins the words */
    check_sig("x'lit'y = 1", "x=");    /* so does a removed literal */
    check_sig("f(1, 2)", "f()");       /* numbers vanish */
    check_sig("'unterminated", "");
    check_sig("''''", "");             /* one literal holding a quote */
    check_sig("a '' b", "ab");         /* empty literal between words */
    check_sig("select 42abc", "sa");   /* digits go first, then the word */
    check_sig("über_tab = 1", "\xc3\xbc="); /* a non-ASCII first character is kept whole */
    check_sig("[1, 'abc', 2023-01-01]", "[--]");
}

/* ---- trees ----------------------------------------------------------------------------------- */

enum { M_ROOT = 1, M_A, M_B, M_C, M_D, M_E };
enum { P_USER = 10, P_SQL, P_BINDS, P_CALLINFO, P_XML, P_PAYLOAD, P_OTHER };

static const wdef WORDS[] = {
    {M_ROOT, "void t.Root.run()"}, {M_A, "void t.A.a()"},   {M_B, "void t.B.b()"},     {M_C, "void t.C.c()"},
    {M_D, "void t.D.d()"},         {M_E, "void t.E.e()"},   {P_USER, "user"},          {P_SQL, "sql"},
    {P_BINDS, "binds"},            {P_CALLINFO, "call.info"}, {P_XML, "xml"},          {P_PAYLOAD, "payload"},
    {P_OTHER, "other"},
};

#define T(ms) (BASE + (ms))

/* ui.md §4.1 per-node numbers on a trace worked out by hand:
 *
 *   0 Root ─┬ 10 A ── 20 B ─ 30 ─ 40      A twice under Root: [10,40] and [50,60]
 *           ├ 50 A ─ 60                   B under A [20,30]
 *           └ 70 C ── 75 B ─ 80 ─ 90      C [70,90], B under C [75,80]
 *   100 Root exits
 *
 * Pauses [25,35] and [32,45] (merged [25,45]), [86,90] inside [85,95]. */
static void write_numbers_trace(tw *w)
{
    tw_begin(w, TIMER);
    tw_chunk(w, 7, T(0));
    tw_enter(w, T(0), M_ROOT);
    tw_enter(w, T(10), M_A);
    tw_enter(w, T(20), M_B);
    tw_exit(w, T(30));
    tw_exit(w, T(40));
    tw_finish(w); /* the call goes on in a second chunk of the thread */
    tw_chunk(w, 7, T(50));
    tw_enter(w, T(50), M_A);
    tw_exit(w, T(60));
    tw_enter(w, T(70), M_C);
    tw_enter(w, T(75), M_B);
    tw_exit(w, T(80));
    tw_exit(w, T(90));
    tw_tag(w, T(100), P_CALLINFO, 0, ""); /* the agent's CallInfo: skipped */
    tw_exit(w, T(100));
    tw_enter(w, T(120), M_E); /* the next root call of the thread: ignored */
    tw_exit(w, T(130));
    tw_finish(w);
}

static const cp_blob_pause NUMBERS_PAUSES[] = {{T(35), 10}, {T(45), 13}, {T(90), 4}, {T(95), 10}};

static void test_tree_numbers(void **state)
{
    (void)state;
    tw w;
    write_numbers_trace(&w);
    bspec s = {WORDS, CP_ARRAY_LEN(WORDS), NULL, 0, NUMBERS_PAUSES, CP_ARRAY_LEN(NUMBERS_PAUSES)};
    cp_tree *t = cp_tree_new(NULL);
    char err[200];
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
    assert_int_equal(cp_tree_calls(t), 1);
    assert_int_equal(cp_tree_nodes(t), 5); /* Root, A, B under A, C, B under C */

    json_t *doc = tree_doc(t, "[{\"id\":\"x\"}]");
    assert_int_equal(num(doc, "version"), 1);
    assert_int_equal(num(doc, "nodes"), 5);
    assert_int_equal(num(doc, "start_ms"), T(0));
    assert_int_equal(num(doc, "end_ms"), T(100));
    assert_true(json_is_false(json_object_get(doc, "truncated")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(doc, "calls"), 0), "id")),
                        "x");
    json_t *root = json_object_get(doc, "root");
    assert_string_equal(method_of(doc, root), "void t.Root.run()");
    /* suspension: [0,100] meets [25,45] and [85,95] = 30 */
    assert_int_equal(cp_pause_overlap(NUMBERS_PAUSES, 4, T(0), T(100)), 30);
    check_node(root, 100, 40, 30, 10, 1, 5);
    assert_int_equal(num(root, "first"), 0);
    assert_int_equal(num(root, "last"), 100);
    assert_null(json_object_get(root, "params")); /* call.info "" is not a parameter */

    assert_int_equal(nkids(root), 2);
    json_t *a = json_array_get(json_object_get(root, "children"), 0); /* A (40) before C (20) */
    assert_string_equal(method_of(doc, a), "void t.A.a()");
    check_node(a, 40, 30, 15, 10, 2, 1); /* [10,40] meets [25,40]; [50,60] nothing */
    assert_int_equal(num(a, "first"), 10);
    assert_int_equal(num(a, "last"), 60);
    json_t *ab = kid(doc, a, "void t.B.b()");
    check_node(ab, 10, 10, 5, 5, 1, 0);
    assert_null(json_object_get(ab, "children"));
    assert_int_equal(num(ab, "first"), 20);
    assert_int_equal(num(ab, "last"), 30);
    json_t *c = json_array_get(json_object_get(root, "children"), 1);
    assert_string_equal(method_of(doc, c), "void t.C.c()");
    check_node(c, 20, 15, 5, 5, 1, 1);
    check_node(kid(doc, c, "void t.B.b()"), 5, 5, 0, 0, 1, 0);
    json_decref(doc);
    cp_tree_free(t);
    cp_buf_free(&w.b);
}

/* Every invocation's suspension equals cp_pause_overlap over the blob's pauses (the tree
 * uses a merged timeline with prefix sums; this checks the two agree). */
static void test_tree_suspension_random(void **state)
{
    (void)state;
    uint64_t rng = 7;
    for (int round = 0; round < 200; round++) {
        cp_blob_pause p[16];
        size_t np = test_rand(&rng) % 16;
        int64_t end = 0;
        for (size_t i = 0; i < np; i++) {
            end += (int64_t)(test_rand(&rng) % 30);
            p[i].end_ms = T(end - 20);
            p[i].duration_ms = (int32_t)(test_rand(&rng) % 50);
        }
        /* leaves with their own method ids ("#<id>"), back to back with gaps */
        int64_t enter[40], exit[40], now = 0;
        tw w;
        tw_begin(&w, TIMER);
        tw_chunk(&w, 1, T(0));
        tw_enter(&w, T(0), M_ROOT);
        for (int i = 0; i < 40; i++) {
            now += (int64_t)(test_rand(&rng) % 5);
            enter[i] = now;
            now += (int64_t)(test_rand(&rng) % 25);
            exit[i] = now;
            tw_enter(&w, T(enter[i]), 1000 + i);
            tw_exit(&w, T(exit[i]));
        }
        tw_exit(&w, T(now));
        tw_finish(&w);
        bspec s = {WORDS, CP_ARRAY_LEN(WORDS), NULL, 0, p, np};
        cp_tree *t = cp_tree_new(NULL);
        char err[200];
        assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
        json_t *doc = tree_doc(t, NULL);
        json_t *root = json_object_get(doc, "root");
        assert_int_equal(num(root, "suspension"), cp_pause_overlap(p, np, T(0), T(now)));
        for (int i = 0; i < 40; i++) {
            char name[16];
            snprintf(name, sizeof name, "#%d", 1000 + i);
            json_int_t got = num(kid(doc, root, name), "suspension");
            int64_t want = cp_pause_overlap(p, np, T(enter[i]), T(exit[i]));
            if (got != want) fail_msg("round %d leaf %d: %lld vs %lld", round, i, (long long)got, (long long)want);
        }
        json_decref(doc);
        cp_tree_free(t);
        cp_buf_free(&w.b);
    }
}

/* Params: exact groups, once per invocation, SQL signatures with variants, binds under
 * SQL, big values resolved / unresolved, trimming. */
static void test_tree_params(void **state)
{
    (void)state;
    static const vdef values[] = {
        {3, 1, 0, 1, "SELECT * FROM t WHERE id = 1"},
        {3, 1, 100, 1, "SELECT * FROM t WHERE id = 2"},
        {3, 1, 200, 1, "UPDATE t SET x = 5"},
        {1, 1, 0, 1, "<order id=\"1\"/>"},
        {1, 1, 50, 0, "1:1:50"}, /* known but unresolved */
    };
    tw w;
    tw_begin(&w, TIMER);
    tw_chunk(&w, 1, T(0));
    tw_enter(&w, T(0), M_ROOT);
    /* D #1, 10 ms: alice twice (one count), bob, SELECT id=1 + binds, XML resolved */
    tw_enter(&w, T(0), M_D);
    tw_tag(&w, T(1), P_USER, 2, "alice");
    tw_tag(&w, T(2), P_USER, 2, "alice");
    tw_tag(&w, T(3), P_USER, 2, "bob");
    tw_ref(&w, T(4), P_SQL, 3, 1, 0);
    tw_tag(&w, T(5), P_BINDS, 0, "[1]");
    tw_ref(&w, T(6), P_XML, 1, 1, 0);
    tw_exit(&w, T(10));
    /* D #2, 20 ms: alice, SELECT id=2 + binds, UPDATE + binds, unresolved refs */
    tw_enter(&w, T(10), M_D);
    tw_tag(&w, T(11), P_USER, 0, "alice");
    tw_ref(&w, T(12), P_SQL, 3, 1, 100);
    tw_tag(&w, T(13), P_BINDS, 0, "[2]");
    tw_ref(&w, T(14), P_SQL, 3, 1, 200);
    tw_tag(&w, T(15), P_BINDS, 0, "[5]");
    tw_ref(&w, T(16), P_XML, 1, 1, 50);  /* in the blob, unresolved */
    tw_ref(&w, T(17), P_XML, 1, 9, 999); /* not in the blob at all */
    tw_exit(&w, T(30));
    /* D #3, 5 ms: carol, binds with no SQL before it, a long value */
    tw_enter(&w, T(30), M_D);
    tw_tag(&w, T(31), P_USER, 0, "carol");
    tw_tag(&w, T(32), P_BINDS, 0, "[3]");
    tw_tag(&w, T(33), P_PAYLOAD, 0, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"); /* 7 x é */
    tw_tag(&w, T(34), 77, 0, "unknown name"); /* a param id the blob does not know */
    tw_exit(&w, T(35));
    tw_exit(&w, T(40));
    tw_finish(&w);

    cp_tree *t = cp_tree_new(NULL);
    bspec s = {WORDS, CP_ARRAY_LEN(WORDS), values, CP_ARRAY_LEN(values), NULL, 0};
    char err[200];
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
    json_t *doc = tree_doc(t, NULL);
    assert_int_equal(json_array_size(json_object_get(doc, "calls")), 0);
    json_t *root = json_object_get(doc, "root");
    json_t *d = kid(doc, root, "void t.D.d()");
    check_node(d, 35, 35, 0, 0, 3, 0);

    /* params are ordered by name */
    json_t *params = json_object_get(d, "params");
    const char *order[] = {"#77", "binds", "payload", "sql", "user", "xml"};
    assert_int_equal(json_array_size(params), CP_ARRAY_LEN(order));
    for (size_t i = 0; i < CP_ARRAY_LEN(order); i++)
        assert_string_equal(param_name(doc, json_array_get(params, i)), order[i]);

    /* exact groups, duration desc; an invocation counts once per group */
    json_t *user = groups_of(doc, d, "user");
    assert_int_equal(json_array_size(user), 3);
    assert_string_equal(gval(user, 0), "alice");
    check_group(json_array_get(user, 0), 30, 2);
    assert_string_equal(gval(user, 1), "bob");
    check_group(json_array_get(user, 1), 10, 1);
    assert_string_equal(gval(user, 2), "carol");
    check_group(json_array_get(user, 2), 5, 1);
    assert_null(json_object_get(json_array_get(user, 0), "variants"));

    /* SQL by signature: the first text represents the group; the texts are variants */
    json_t *sql = groups_of(doc, d, "sql");
    assert_int_equal(json_array_size(sql), 2);
    json_t *sel = json_array_get(sql, 0);
    assert_string_equal(gval(sql, 0), "SELECT * FROM t WHERE id = 1");
    check_group(sel, 30, 2);
    assert_string_equal(json_string_value(json_object_get(sel, "ref")), "3:1:0");
    json_t *var = json_object_get(sel, "variants");
    assert_int_equal(json_array_size(var), 2);
    assert_string_equal(gval(var, 0), "SELECT * FROM t WHERE id = 2");
    check_group(json_array_get(var, 0), 20, 1);
    assert_string_equal(gval(var, 1), "SELECT * FROM t WHERE id = 1");
    check_group(json_array_get(var, 1), 10, 1);
    /* binds under their SQL, grouped by signature too ("[1]" and "[2]" are both "[]") */
    json_t *sb = groups_of(doc, sel, "binds");
    assert_int_equal(json_array_size(sb), 1);
    assert_string_equal(gval(sb, 0), "[1]");
    check_group(json_array_get(sb, 0), 30, 2);
    assert_int_equal(json_array_size(json_object_get(json_array_get(sb, 0), "variants")), 2);
    json_t *upd = json_array_get(sql, 1);
    assert_string_equal(gval(sql, 1), "UPDATE t SET x = 5");
    check_group(upd, 20, 1);
    assert_null(json_object_get(upd, "variants")); /* one text: nothing to choose from */
    json_t *ub = groups_of(doc, upd, "binds");
    assert_int_equal(json_array_size(ub), 1);
    assert_string_equal(gval(ub, 0), "[5]");
    /* binds without an SQL before them stay at the node */
    json_t *nb = groups_of(doc, d, "binds");
    assert_int_equal(json_array_size(nb), 1);
    assert_string_equal(gval(nb, 0), "[3]");
    check_group(json_array_get(nb, 0), 5, 1);

    /* big values: resolved inline with their reference, unresolved as the reference */
    json_t *xml = groups_of(doc, d, "xml");
    assert_int_equal(json_array_size(xml), 3);
    json_t *x0 = group(xml, "<order id=\"1\"/>");
    check_group(x0, 10, 1);
    assert_string_equal(json_string_value(json_object_get(x0, "ref")), "1:1:0");
    assert_null(json_object_get(x0, "unresolved"));
    assert_null(json_object_get(x0, "trimmed"));
    json_t *x1 = group(xml, "1:1:50");
    check_group(x1, 20, 1);
    assert_true(json_is_true(json_object_get(x1, "unresolved")));
    json_t *x2 = group(xml, "1:9:999");
    assert_true(json_is_true(json_object_get(x2, "unresolved")));
    assert_string_equal(json_string_value(json_object_get(x2, "ref")), "1:9:999");
    assert_string_equal(gval(groups_of(doc, d, "payload"), 0), "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9");
    /* an unknown param id is named "#<id>" */
    assert_string_equal(gval(groups_of(doc, d, "#77"), 0), "unknown name");
    json_decref(doc);
    cp_tree_free(t);
    cp_buf_free(&w.b);
}

/* One invocation of D per (value, duration) pair of param `pid`. */
static void write_valued_calls(tw *w, int32_t pid, int type, const char *const *vals, const int *durs, size_t n)
{
    tw_begin(w, TIMER);
    tw_chunk(w, 1, T(0));
    tw_enter(w, T(0), M_ROOT);
    int64_t now = 0;
    for (size_t i = 0; i < n; i++) {
        tw_enter(w, T(now), M_D);
        tw_tag(w, T(now), pid, type, vals[i]);
        now += durs[i];
        tw_exit(w, T(now));
    }
    tw_exit(w, T(now));
    tw_finish(w);
}

static void test_tree_group_caps(void **state)
{
    (void)state;
    char err[200];
    /* cap 4: of six values the two smallest fold into "::other", which comes last */
    {
        const char *vals[] = {"v1", "v6", "v2", "v5", "v3", "v4", "v6"};
        const int durs[] = {1, 6, 2, 5, 3, 4, 6};
        tw w;
        write_valued_calls(&w, P_USER, 0, vals, durs, 7);
        cp_tree_limits lim;
        cp_tree_limits_default(&lim);
        lim.max_groups = 4;
        cp_tree *t = cp_tree_new(&lim);
        bspec s = {WORDS, CP_ARRAY_LEN(WORDS), NULL, 0, NULL, 0};
        assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
        json_t *doc = tree_doc(t, NULL);
        json_t *g = groups_of(doc, kid(doc, json_object_get(doc, "root"), "void t.D.d()"), "user");
        assert_int_equal(json_array_size(g), 5);
        const char *want[] = {"v6", "v5", "v4", "v3", "::other"};
        const int wdur[] = {12, 5, 4, 3, 3}, wcount[] = {2, 1, 1, 1, 2};
        for (size_t i = 0; i < 5; i++) {
            assert_string_equal(gval(g, i), want[i]);
            check_group(json_array_get(g, i), wdur[i], wcount[i]);
        }
        json_decref(doc);
        cp_tree_free(t);
        cp_buf_free(&w.b);
    }
    /* the default cap: 300 values -> 256 groups and "::other" */
    {
        static char bufs[300][8];
        const char *vals[300];
        int durs[300];
        for (int i = 0; i < 300; i++) {
            snprintf(bufs[i], sizeof bufs[i], "u%d", i);
            vals[i] = bufs[i];
            durs[i] = 1 + i; /* u0..u43 are the 44 smallest */
        }
        tw w;
        write_valued_calls(&w, P_USER, 0, vals, durs, 300);
        cp_tree *t = cp_tree_new(NULL);
        bspec s = {WORDS, CP_ARRAY_LEN(WORDS), NULL, 0, NULL, 0};
        assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
        json_t *doc = tree_doc(t, NULL);
        json_t *g = groups_of(doc, kid(doc, json_object_get(doc, "root"), "void t.D.d()"), "user");
        assert_int_equal(json_array_size(g), 257);
        assert_string_equal(gval(g, 0), "u299");
        assert_string_equal(gval(g, 255), "u44");
        assert_string_equal(gval(g, 256), "::other");
        check_group(json_array_get(g, 256), 44 * 45 / 2, 44);
        json_decref(doc);
        cp_tree_free(t);
        cp_buf_free(&w.b);
    }
    /* the cap is per container: two params share it; eviction goes to the evicted
     * group's own param */
    {
        tw w;
        tw_begin(&w, TIMER);
        tw_chunk(&w, 1, T(0));
        tw_enter(&w, T(0), M_ROOT);
        static const struct { int32_t p; const char *v; int dur; } seq[] = {
            {P_USER, "a1", 10}, {P_OTHER, "b1", 5}, {P_OTHER, "b2", 2}, {P_USER, "a2", 1}};
        int64_t now = 0;
        for (size_t i = 0; i < CP_ARRAY_LEN(seq); i++) {
            tw_enter(&w, T(now), M_D);
            tw_tag(&w, T(now), seq[i].p, 0, seq[i].v);
            now += seq[i].dur;
            tw_exit(&w, T(now));
        }
        tw_exit(&w, T(now));
        tw_finish(&w);
        cp_tree_limits lim;
        cp_tree_limits_default(&lim);
        lim.max_groups = 3;
        cp_tree *t = cp_tree_new(&lim);
        bspec s = {WORDS, CP_ARRAY_LEN(WORDS), NULL, 0, NULL, 0};
        assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
        json_t *doc = tree_doc(t, NULL);
        json_t *d = kid(doc, json_object_get(doc, "root"), "void t.D.d()");
        json_t *u = groups_of(doc, d, "user"), *o = groups_of(doc, d, "other");
        assert_int_equal(json_array_size(u), 2);
        assert_string_equal(gval(u, 0), "a1");
        assert_string_equal(gval(u, 1), "::other");
        check_group(json_array_get(u, 1), 1, 1);
        assert_int_equal(json_array_size(o), 2);
        assert_string_equal(gval(o, 0), "b1");
        assert_string_equal(gval(o, 1), "b2");
        json_decref(doc);
        cp_tree_free(t);
        cp_buf_free(&w.b);
    }
    /* variants: top max_variants by duration, the rest in the group's "::other" */
    {
        const char *vals[] = {"SELECT 1", "SELECT 22", "SELECT 333", "SELECT 4444"};
        const int durs[] = {4, 1, 3, 2};
        tw w;
        write_valued_calls(&w, P_BINDS, 0, vals, durs, 4); /* binds: SQL-like even inline */
        cp_tree_limits lim;
        cp_tree_limits_default(&lim);
        lim.max_variants = 2;
        cp_tree *t = cp_tree_new(&lim);
        bspec s = {WORDS, CP_ARRAY_LEN(WORDS), NULL, 0, NULL, 0};
        assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
        json_t *doc = tree_doc(t, NULL);
        json_t *g = groups_of(doc, kid(doc, json_object_get(doc, "root"), "void t.D.d()"), "binds");
        assert_int_equal(json_array_size(g), 1);
        assert_string_equal(gval(g, 0), "SELECT 1");
        check_group(json_array_get(g, 0), 10, 4);
        json_t *v = json_object_get(json_array_get(g, 0), "variants");
        assert_int_equal(json_array_size(v), 3);
        assert_string_equal(gval(v, 0), "SELECT 1");
        assert_string_equal(gval(v, 1), "SELECT 333");
        assert_string_equal(gval(v, 2), "::other");
        check_group(json_array_get(v, 2), 3, 2);
        json_decref(doc);
        cp_tree_free(t);
        cp_buf_free(&w.b);
    }
}

/* Values over trim_chars characters are cut in the JSON, with their full length and the
 * call they were first seen in (cp_tree_set_source). */
static void test_tree_trim(void **state)
{
    (void)state;
    static const vdef values[] = {{3, 1, 0, 1, "SELECT abcdefgh FROM t"}, {3, 1, 1, 1, "SELECT a FROM t"}};
    const char *vals[] = {"abcdefgh", "abcde", "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"};
    const int durs[] = {3, 2, 1};
    tw w;
    write_valued_calls(&w, P_USER, 0, vals, durs, 3);
    w.b.len -= 2; /* drop the root's EXIT (delta 0: one byte) and the FINISH: the root goes on */
    tw_ref(&w, w.last + 1, P_SQL, 3, 1, 0);
    tw_ref(&w, w.last + 1, P_SQL, 3, 1, 1);
    tw_exit(&w, w.last + 1);
    tw_finish(&w);
    cp_tree_limits lim;
    cp_tree_limits_default(&lim);
    lim.trim_chars = 5;
    cp_tree *t = cp_tree_new(&lim);
    bspec s = {WORDS, CP_ARRAY_LEN(WORDS), values, CP_ARRAY_LEN(values), NULL, 0};
    char err[200];
    /* the same call twice, under two source ids: a trimmed group names the first */
    assert_int_equal(cp_tree_set_source(t, "call-1", 6), CP_OK);
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
    assert_int_equal(cp_tree_set_source(t, "call-two", 8), CP_OK);
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
    json_t *doc = tree_doc(t, NULL);
    /* two calls: the root is the synthetic one above them; the call's root is its child */
    json_t *root = json_array_get(json_object_get(json_object_get(doc, "root"), "children"), 0);
    json_t *u = groups_of(doc, kid(doc, root, "void t.D.d()"), "user");
    assert_int_equal(json_array_size(u), 3);
    assert_string_equal(json_string_value(json_object_get(json_array_get(u, 0), "source")), "call-1");
    assert_null(json_object_get(json_array_get(u, 1), "source")); /* not trimmed: nothing to fetch */
    assert_string_equal(json_string_value(json_object_get(json_array_get(u, 2), "source")), "call-1");
    json_t *g0 = json_array_get(u, 0), *g1 = json_array_get(u, 1), *g2 = json_array_get(u, 2);
    assert_string_equal(gval(u, 0), "abcde");
    assert_true(json_is_true(json_object_get(g0, "trimmed")));
    assert_int_equal(num(g0, "length"), 8);
    assert_string_equal(gval(u, 1), "abcde"); /* exactly 5: not trimmed, and a group of its own */
    assert_null(json_object_get(g1, "trimmed"));
    assert_null(json_object_get(g1, "length"));
    assert_string_equal(gval(u, 2), "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"); /* characters, not bytes */
    assert_int_equal(num(g2, "length"), 7);
    /* SQL: same signature, both texts trimmed in the group and its variants */
    json_t *sq = groups_of(doc, root, "sql");
    assert_int_equal(json_array_size(sq), 1);
    assert_string_equal(gval(sq, 0), "SELEC");
    assert_int_equal(num(json_array_get(sq, 0), "length"), 22);
    json_t *var = json_object_get(json_array_get(sq, 0), "variants");
    assert_int_equal(json_array_size(var), 2);
    assert_true(json_is_true(json_object_get(json_array_get(var, 0), "trimmed")));
    assert_string_equal(json_string_value(json_object_get(json_array_get(sq, 0), "source")), "call-1");
    assert_string_equal(json_string_value(json_object_get(json_array_get(var, 1), "source")), "call-1");
    json_decref(doc);
    cp_tree_free(t);
    cp_buf_free(&w.b);
}

/* ---- whole values behind trimmed groups (GET /calls/{id}/value) -------------------------- */

/* n characters of a pattern mixing 1- and 2-byte UTF-8 ("aé" repeated), then `tail`. */
static char *long_text(const char *head, size_t n, const char *tail)
{
    cp_buf b;
    cp_buf_init(&b);
    cp_buf_puts(&b, head);
    for (size_t i = 0; i < n; i++) cp_buf_puts(&b, i % 2 ? "\xc3\xa9" : "a");
    cp_buf_puts(&b, tail);
    cp_buf_putc(&b, 0);
    return (char *)b.data; /* the buffer's bytes, NUL-terminated: free() them */
}

static void key_hex(const char *text, char out[17])
{
    snprintf(out, 17, "%016" PRIx64, cp_tree_value_key(text, strlen(text)));
}

/* Characters (code points) of UTF-8 text, as the tree counts "length". */
static json_int_t chars_of(const char *s)
{
    json_int_t c = 0;
    for (; *s; s++) c += ((uint8_t)*s & 0xC0) != 0x80;
    return c;
}

/* A trimmed group: "trimmed", "length" and "key" = the key of its whole text. */
static void check_trimmed(json_t *g, const char *full)
{
    char want[17];
    key_hex(full, want);
    assert_non_null(g);
    assert_true(json_is_true(json_object_get(g, "trimmed")));
    assert_null(json_object_get(g, "source")); /* no cp_tree_set_source: none */
    assert_int_equal(num(g, "length"), chars_of(full));
    const char *key = json_string_value(json_object_get(g, "key"));
    assert_non_null(key);
    assert_string_equal(key, want);
    /* the value shown is a proper prefix of the whole text */
    size_t shown = json_string_length(json_object_get(g, "value"));
    assert_true(shown < strlen(full));
    assert_memory_equal(json_string_value(json_object_get(g, "value")), full, shown);
}

/* The trace of test_tree_full_value: D with a long inline payload (two of them that
 * differ only at the end), a long SQL (a big value) with long binds, a second SQL of the
 * same signature, and a short user. */
static void write_full_value_trace(tw *w, const char *p1, const char *p2, const char *binds)
{
    tw_begin(w, TIMER);
    tw_chunk(w, 1, T(0));
    tw_enter(w, T(0), M_ROOT);
    tw_enter(w, T(0), M_D);
    tw_tag(w, T(1), P_PAYLOAD, 0, p1);
    tw_tag(w, T(1), P_USER, 0, "alice");
    tw_ref(w, T(2), P_SQL, 3, 1, 0);
    tw_tag(w, T(3), P_BINDS, 0, binds);
    tw_exit(w, T(10));
    tw_enter(w, T(10), M_D);
    tw_tag(w, T(11), P_PAYLOAD, 0, p2);
    tw_ref(w, T(12), P_SQL, 3, 1, 100);
    tw_exit(w, T(15));
    tw_exit(w, T(20));
    tw_finish(w);
}

/* The value kept for (param, key) by a tree built with cp_tree_want_value. */
static int want_value(const cp_buf *trace, const bspec *s, const char *param, const char *text_for_key,
                      uint64_t key, size_t max_bytes, const char **text, size_t *len, cp_tree **out)
{
    cp_tree *t = cp_tree_new(NULL);
    assert_non_null(t);
    if (text_for_key) key = cp_tree_value_key(text_for_key, strlen(text_for_key));
    assert_int_equal(cp_tree_want_value(t, param, strlen(param), key, max_bytes), CP_OK);
    char err[200];
    assert_int_equal(add_trace(t, trace, s, err, sizeof err), CP_OK);
    *out = t;
    return cp_tree_find_value(t, text, len);
}

static void expect_full_value(const cp_buf *trace, const bspec *s, const char *param, const char *full)
{
    const char *text;
    size_t len;
    cp_tree *t;
    assert_int_equal(want_value(trace, s, param, full, 0, 16u << 20, &text, &len, &t), CP_OK);
    assert_int_equal(len, strlen(full));
    assert_memory_equal(text, full, len);
    cp_tree_free(t);
}

static void expect_no_full_value(const cp_buf *trace, const bspec *s, const char *param, const char *full, uint64_t key,
                            int want_status)
{
    const char *text;
    size_t len;
    cp_tree *t;
    assert_int_equal(want_value(trace, s, param, full, key, 16u << 20, &text, &len, &t), want_status);
    assert_null(text);
    cp_tree_free(t);
}

/* Trimmed groups carry the key of their whole text, wherever they sit (a node's params,
 * binds under SQL, variants), and cp_tree_want_value gives that exact text back. */
static void test_tree_full_value(void **state)
{
    (void)state;
    /* 40 000 characters each (60 000 bytes), the same first 15 000: two groups */
    char *p1 = long_text("", 39999, "X"), *p2 = long_text("", 39999, "Y");
    char *sql1 = long_text("SELECT ", 20000, " FROM t WHERE id = 1");
    char *sql2 = long_text("SELECT ", 20000, " FROM t WHERE id = 2");
    char *binds = long_text("['", 16000, "']");
    const vdef values[] = {{3, 1, 0, 1, sql1}, {3, 1, 100, 1, sql2}};
    tw w;
    write_full_value_trace(&w, p1, p2, binds);
    bspec s = {WORDS, CP_ARRAY_LEN(WORDS), values, CP_ARRAY_LEN(values), NULL, 0};

    /* the JSON: default limits, so 15 000 characters are kept */
    cp_tree *t = cp_tree_new(NULL);
    char err[200];
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
    json_t *doc = tree_doc(t, NULL);
    json_t *d = kid(doc, json_object_get(doc, "root"), "void t.D.d()");
    json_t *pay = groups_of(doc, d, "payload");
    assert_int_equal(json_array_size(pay), 2);
    json_t *g1 = json_array_get(pay, 0), *g2 = json_array_get(pay, 1); /* 10 ms before 5 ms */
    check_trimmed(g1, p1);
    check_trimmed(g2, p2);
    assert_int_equal(json_string_length(json_object_get(g1, "value")), 7500 + 7500 * 2); /* 15 000 chars */
    /* the same text shown, told apart by the key of the whole text */
    assert_string_equal(json_string_value(json_object_get(g1, "value")),
                        json_string_value(json_object_get(g2, "value")));
    assert_string_not_equal(json_string_value(json_object_get(g1, "key")),
                            json_string_value(json_object_get(g2, "key")));
    /* SQL: the group's key is its representative's (the first text), each variant its own */
    json_t *sq = groups_of(doc, d, "sql");
    assert_int_equal(json_array_size(sq), 1);
    json_t *sg = json_array_get(sq, 0);
    check_trimmed(sg, sql1);
    assert_string_equal(json_string_value(json_object_get(sg, "ref")), "3:1:0");
    json_t *var = json_object_get(sg, "variants");
    assert_int_equal(json_array_size(var), 2);
    check_trimmed(json_array_get(var, 0), sql1); /* 10 ms */
    check_trimmed(json_array_get(var, 1), sql2); /* 5 ms */
    /* binds nested under the SQL */
    json_t *bg = groups_of(doc, sg, "binds");
    assert_int_equal(json_array_size(bg), 1);
    check_trimmed(json_array_get(bg, 0), binds);
    /* a short value: no trimming, no key */
    json_t *u = json_array_get(groups_of(doc, d, "user"), 0);
    assert_null(json_object_get(u, "trimmed"));
    assert_null(json_object_get(u, "key"));
    json_decref(doc);
    cp_tree_free(t);

    /* the whole texts back, wherever the value sat */
    expect_full_value(&w.b, &s, "payload", p1);
    expect_full_value(&w.b, &s, "payload", p2);
    expect_full_value(&w.b, &s, "sql", sql1);
    expect_full_value(&w.b, &s, "sql", sql2);
    expect_full_value(&w.b, &s, "binds", binds);
    expect_full_value(&w.b, &s, "user", "alice"); /* any value has a key; only long ones show it */
    /* a wrong key, a key of another param, a param that does not exist: nothing */
    expect_no_full_value(&w.b, &s, "payload", NULL, cp_tree_value_key(p1, strlen(p1)) ^ 1, CP_ENOTFOUND);
    expect_no_full_value(&w.b, &s, "sql", p1, 0, CP_ENOTFOUND);
    expect_no_full_value(&w.b, &s, "nope", p1, 0, CP_ENOTFOUND);
    /* over the caller's bound: CP_ELIMIT with the length in bytes, nothing copied */
    {
        const char *text;
        size_t len;
        cp_tree *x;
        assert_int_equal(want_value(&w.b, &s, "payload", p1, 0, 1000, &text, &len, &x), CP_ELIMIT);
        assert_null(text);
        assert_int_equal(len, strlen(p1));
        cp_tree_free(x);
    }
    /* not asked for */
    {
        cp_tree *x = cp_tree_new(NULL);
        const char *text;
        size_t len;
        assert_int_equal(cp_tree_find_value(x, &text, &len), CP_EINVAL);
        cp_tree_free(x);
    }
    cp_buf_free(&w.b);
    free(p1);
    free(p2);
    free(sql1);
    free(sql2);
    free(binds);
}

/* Child order: total, self, suspension, self suspension, invocations + calls,
 * invocations (desc), then method text. */
static void test_tree_ordering(void **state)
{
    (void)state;
    static const wdef words[] = {
        {1, "root"}, {2, "m.Big"}, {3, "m.Y"}, {4, "m.X"}, {5, "m.Z"}, {6, "m.B"}, {7, "m.A"}, {8, "m.leaf"},
        {9, "m.S"},  {10, "m.SS"},
    };
    tw w;
    tw_begin(&w, TIMER);
    tw_chunk(&w, 1, T(0));
    tw_enter(&w, T(0), 1);
    int64_t now = 0;
#define LEAF(id, d) (tw_enter(&w, T(now), (id)), now += (d), tw_exit(&w, T(now)))
    LEAF(4, 10);                                           /* X: 10 self 10 inv 1 */
    tw_enter(&w, T(now), 3), LEAF(8, 5), now += 5, tw_exit(&w, T(now)); /* Y: 10, self 5 */
    LEAF(5, 5), LEAF(5, 5);                                /* Z: 10, self 10, inv 2 */
    LEAF(6, 10);                                           /* B */
    LEAF(2, 20);                                           /* Big */
    LEAF(7, 10);                                           /* A */
    /* S and SS: total 10, self 10, with suspension 4 (S) and 0 (SS) -- S first */
    int64_t s_from = now;
    LEAF(9, 10);
    LEAF(10, 10);
#undef LEAF
    tw_exit(&w, T(now));
    tw_finish(&w);
    cp_blob_pause pause[] = {{T(s_from + 4), 4}};
    bspec s = {words, CP_ARRAY_LEN(words), NULL, 0, pause, 1};
    cp_tree *t = cp_tree_new(NULL);
    char err[200];
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
    json_t *doc = tree_doc(t, NULL);
    json_t *root = json_object_get(doc, "root");
    const char *want[] = {"m.Big", "m.S", "m.Z", "m.A", "m.B", "m.SS", "m.X", "m.Y"};
    assert_int_equal(nkids(root), CP_ARRAY_LEN(want));
    for (size_t i = 0; i < CP_ARRAY_LEN(want); i++)
        assert_string_equal(method_of(doc, json_array_get(json_object_get(root, "children"), i)), want[i]);
    json_decref(doc);
    cp_tree_free(t);
    cp_buf_free(&w.b);
}

/* ui.md §4.10: several calls under "<N> calls", merged by method text across
 * dictionaries, each with its own pauses. */
static void test_tree_multi(void **state)
{
    (void)state;
    char err[200];
    /* call 1 (pod 1 ids): Root [0,100] > Child [10,30]; a pause [20,40] */
    static const wdef w1[] = {{5, "void a.Root.run()"}, {6, "void a.Child.go()"}, {7, "tag"}};
    tw a;
    tw_begin(&a, TIMER);
    tw_chunk(&a, 1, T(0));
    tw_enter(&a, T(0), 5);
    tw_enter(&a, T(10), 6);
    tw_tag(&a, T(11), 7, 0, "x");
    tw_exit(&a, T(30));
    tw_exit(&a, T(100));
    tw_finish(&a);
    cp_blob_pause p1[] = {{T(40), 20}};
    /* call 2 (pod 2: other ids, other timer): Root [-50,150] > Child [0,40], Other [50,60] */
    static const wdef w2[] = {{1, "void a.Root.run()"}, {2, "void a.Child.go()"}, {3, "void a.Other.x()"}, {0, "tag"}};
    tw b;
    tw_begin(&b, BASE - 999999);
    tw_chunk(&b, 44, T(-50));
    tw_enter(&b, T(-50), 1);
    tw_enter(&b, T(0), 2);
    tw_tag(&b, T(1), 0, 0, "x");
    tw_exit(&b, T(40));
    tw_enter(&b, T(50), 3);
    tw_exit(&b, T(60));
    tw_exit(&b, T(150));
    tw_finish(&b);
    /* call 3: a different root method */
    static const wdef w3[] = {{9, "void a.Main.main()"}};
    tw c;
    tw_begin(&c, TIMER);
    tw_chunk(&c, 1, T(500));
    tw_enter(&c, T(500), 9);
    tw_exit(&c, T(507));
    tw_finish(&c);

    cp_tree *t = cp_tree_new(NULL);
    bspec s1 = {w1, CP_ARRAY_LEN(w1), NULL, 0, p1, 1}, s2 = {w2, CP_ARRAY_LEN(w2), NULL, 0, NULL, 0},
          s3 = {w3, 1, NULL, 0, NULL, 0};
    assert_int_equal(add_trace(t, &a.b, &s1, err, sizeof err), CP_OK);
    assert_int_equal(add_trace(t, &b.b, &s2, err, sizeof err), CP_OK);
    assert_int_equal(add_trace(t, &c.b, &s3, err, sizeof err), CP_OK);
    assert_int_equal(cp_tree_calls(t), 3);
    assert_int_equal(cp_tree_nodes(t), 4); /* Root, Child, Other, Main */
    json_t *doc = tree_doc(t, NULL);
    assert_int_equal(num(doc, "start_ms"), T(-50));
    assert_int_equal(num(doc, "end_ms"), T(507));
    assert_int_equal(num(doc, "nodes"), 4);
    json_t *root = json_object_get(doc, "root");
    assert_string_equal(method_of(doc, root), "3 calls");
    check_node(root, 307, 0, 20, 0, 3, 6); /* Root 2 + Child 2 + Other 1 + Main 1 */
    assert_int_equal(num(root, "first"), 0);
    assert_int_equal(num(root, "last"), 557);
    assert_int_equal(nkids(root), 2);
    json_t *r = json_array_get(json_object_get(root, "children"), 0);
    assert_string_equal(method_of(doc, r), "void a.Root.run()");
    check_node(r, 300, 230, 20, 10, 2, 3); /* [0,100] meets [20,40]: 20 */
    assert_int_equal(num(r, "first"), 0); /* relative to the tree's start (T(-50)) */
    assert_int_equal(num(r, "last"), 200);
    json_t *ch = kid(doc, r, "void a.Child.go()");
    check_node(ch, 60, 60, 10, 10, 2, 0);
    json_t *tg = groups_of(doc, ch, "tag"); /* param names merge by text too */
    assert_int_equal(json_array_size(tg), 1);
    check_group(json_array_get(tg, 0), 60, 2);
    check_node(kid(doc, r, "void a.Other.x()"), 10, 10, 0, 0, 1, 0);
    check_node(kid(doc, root, "void a.Main.main()"), 7, 7, 0, 0, 1, 0);
    /* the dictionaries are the tree's own: every method text once, plus the synthetic one */
    assert_int_equal(json_array_size(json_object_get(doc, "methods")), 5);
    assert_int_equal(json_array_size(json_object_get(doc, "params")), 1);
    json_decref(doc);
    cp_tree_free(t);
    cp_buf_free(&a.b);
    cp_buf_free(&b.b);
    cp_buf_free(&c.b);
}

/* A trace without its depth-0 EXIT: open invocations end at the last event. */
static void test_tree_truncated(void **state)
{
    (void)state;
    char err[200];
    tw w;
    tw_begin(&w, TIMER);
    tw_chunk(&w, 1, T(0));
    tw_enter(&w, T(0), M_ROOT);
    tw_enter(&w, T(10), M_A);
    tw_exit(&w, T(12));
    tw_enter(&w, T(15), M_B);
    tw_tag(&w, T(25), P_USER, 0, "u");
    tw_finish(&w);
    bspec s = {WORDS, CP_ARRAY_LEN(WORDS), NULL, 0, NULL, 0};
    for (int cut = 0; cut < 2; cut++) {
        /* cut = 1: also without the FINISH byte and the last event's final byte */
        cp_buf tr;
        cp_buf_init(&tr);
        cp_buf_append(&tr, w.b.data, w.b.len - (cut ? 2 : 0));
        cp_tree *t = cp_tree_new(NULL);
        assert_int_equal(add_trace(t, &tr, &s, err, sizeof err), CP_OK);
        json_t *doc = tree_doc(t, NULL);
        assert_true(json_is_true(json_object_get(doc, "truncated")));
        json_t *root = json_object_get(doc, "root");
        json_int_t end = cut ? 15 : 25; /* the cut TAG is gone: B ends at its own ENTER */
        assert_int_equal(num(doc, "end_ms"), T(end));
        check_node(root, end, end - 2 - (end - 15), 0, 0, 1, 2);
        check_node(kid(doc, root, "void t.B.b()"), end - 15, end - 15, 0, 0, 1, 0);
        if (!cut) check_group(json_array_get(groups_of(doc, kid(doc, root, "void t.B.b()"), "user"), 0), 10, 1);
        json_decref(doc);
        cp_tree_free(t);
        cp_buf_free(&tr);
    }
    cp_buf_free(&w.b);
}

/* Budgets: nodes and events. */
static void test_tree_limits(void **state)
{
    (void)state;
    char err[200];
    tw w;
    write_numbers_trace(&w); /* 5 nodes, 13 events up to the depth-0 EXIT */
    bspec s = {WORDS, CP_ARRAY_LEN(WORDS), NULL, 0, NULL, 0};
    cp_tree_limits lim;
    cp_tree_limits_default(&lim);
    lim.max_nodes = 4;
    cp_tree *t = cp_tree_new(&lim);
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_ELIMIT);
    assert_non_null(strstr(err, "nodes"));
    /* B under C (at 75) did not fit: what was merged is closed there, as a cut trace */
    assert_int_equal(cp_tree_nodes(t), 4);
    json_t *part = tree_doc(t, NULL);
    assert_true(json_is_true(json_object_get(part, "truncated")));
    json_t *proot = json_object_get(part, "root");
    check_node(proot, 75, 30, 0, 0, 1, 4);
    check_node(kid(part, proot, "void t.C.c()"), 5, 5, 0, 0, 1, 0);
    json_decref(part);
    cp_tree_free(t);
    lim.max_nodes = 5;
    t = cp_tree_new(&lim);
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK); /* merges: no new node */
    assert_int_equal(cp_tree_nodes(t), 5);
    cp_tree_free(t);

    cp_tree_limits_default(&lim);
    lim.max_events = 25; /* the first call's 13 fit, a second call's do not */
    t = cp_tree_new(&lim);
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_ELIMIT);
    assert_non_null(strstr(err, "events"));
    assert_int_equal(cp_tree_calls(t), 1); /* checked before the tree is touched */
    json_t *doc = tree_doc(t, NULL);
    assert_int_equal(num(json_object_get(doc, "root"), "total"), 100);
    json_decref(doc);
    cp_tree_free(t);
    cp_buf_free(&w.b);
}

/* Traces that are not trace files, or do not start with an ENTER. */
static void test_tree_corrupt(void **state)
{
    (void)state;
    char err[200];
    bspec s = {WORDS, CP_ARRAY_LEN(WORDS), NULL, 0, NULL, 0};
    for (int i = 0; i < 7; i++) {
        tw w;
        tw_begin(&w, TIMER);
        const char *name = "";
        switch (i) {
        case 0: /* first event is an EXIT */
            name = "exit first";
            tw_chunk(&w, 1, T(0));
            tw_exit(&w, T(0));
            tw_finish(&w);
            break;
        case 1: /* first event is a TAG */
            name = "tag first";
            tw_chunk(&w, 1, T(0));
            tw_tag(&w, T(0), P_USER, 0, "x");
            tw_enter(&w, T(0), M_ROOT);
            tw_exit(&w, T(1));
            tw_finish(&w);
            break;
        case 2: /* a bad event header byte in the middle */
            name = "bad header";
            tw_chunk(&w, 1, T(0));
            tw_enter(&w, T(0), M_ROOT);
            tw_enter(&w, T(1), M_A);
            cp_buf_putc(&w.b, 0x07);
            tw_exit(&w, T(2));
            tw_exit(&w, T(3));
            tw_finish(&w);
            break;
        case 3: /* an unknown tag param type */
            name = "param type 5";
            tw_chunk(&w, 1, T(0));
            tw_enter(&w, T(0), M_ROOT);
            put_hdr(&w.b, 2, 0);
            put_vi(&w.b, P_USER);
            cp_buf_putc(&w.b, 5);
            tw_exit(&w, T(1));
            tw_finish(&w);
            break;
        case 4: /* no chunk at all */
            name = "header only";
            break;
        case 5: /* shorter than the 8-byte header */
            name = "short header";
            w.b.len = 5;
            break;
        case 6: /* an empty chunk */
            name = "empty chunk";
            tw_chunk(&w, 1, T(0));
            tw_finish(&w);
            break;
        }
        cp_tree *t = cp_tree_new(NULL);
        err[0] = 0;
        int st = add_trace(t, &w.b, &s, err, sizeof err);
        if (st != CP_ECORRUPT || !err[0]) fail_msg("%s: status %d, err '%s'", name, st, err);
        /* nothing of the call is in the tree */
        assert_int_equal(cp_tree_calls(t), 0);
        assert_int_equal(cp_tree_nodes(t), 0);
        json_t *doc = tree_doc(t, NULL);
        assert_true(json_is_null(json_object_get(doc, "root")));
        json_decref(doc);
        cp_tree_free(t);
        cp_buf_free(&w.b);
    }
}

/* A method id the blob does not know becomes "#<id>". */
static void test_tree_unknown_method(void **state)
{
    (void)state;
    char err[200];
    tw w;
    tw_begin(&w, TIMER);
    tw_chunk(&w, 1, T(0));
    tw_enter(&w, T(0), 4242);
    tw_enter(&w, T(1), M_A);
    tw_exit(&w, T(3));
    tw_exit(&w, T(4));
    tw_finish(&w);
    cp_tree *t = cp_tree_new(NULL);
    bspec s = {WORDS, CP_ARRAY_LEN(WORDS), NULL, 0, NULL, 0};
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
    json_t *doc = tree_doc(t, NULL);
    json_t *root = json_object_get(doc, "root");
    assert_string_equal(method_of(doc, root), "#4242");
    check_node(kid(doc, root, "void t.A.a()"), 2, 2, 0, 0, 1, 0);
    json_decref(doc);
    cp_tree_free(t);
    cp_buf_free(&w.b);
}

/* ---- real data ------------------------------------------------------------------------ */

typedef struct fev {
    cp_trace_rec r;
    char *text;
} fev;

typedef struct fixture {
    fev *ev;
    size_t nev;
    char **words;
    size_t nwords;
    cp_blob_pause *pauses;
    size_t npauses;
    int64_t timer;
} fixture;

static int fx_trace(void *ud, const cp_trace_rec *r)
{
    fixture *f = ud;
    if (r->type == CP_TRACE_HEADER) f->timer = r->timer_start_ms;
    f->ev = realloc(f->ev, (f->nev + 1) * sizeof *f->ev);
    f->ev[f->nev].r = *r;
    f->ev[f->nev].text = r->type == CP_TRACE_TAG && (r->param_type == 0 || r->param_type == 2) ? str16_dup(r->value) : NULL;
    f->nev++;
    return 0;
}

static int fx_word(void *ud, const cp_word_rec *r)
{
    fixture *f = ud;
    if ((size_t)r->id >= f->nwords) {
        f->words = realloc(f->words, ((size_t)r->id + 1) * sizeof *f->words);
        for (size_t i = f->nwords; i <= (size_t)r->id; i++) f->words[i] = NULL;
        f->nwords = (size_t)r->id + 1;
    }
    free(f->words[r->id]);
    f->words[r->id] = str16_dup(r->word);
    return 0;
}

static int fx_pause(void *ud, const cp_suspend_rec *r)
{
    fixture *f = ud;
    f->pauses = realloc(f->pauses, (f->npauses + 1) * sizeof *f->pauses);
    f->pauses[f->npauses].end_ms = r->end_ms;
    f->pauses[f->npauses].duration_ms = r->duration_ms;
    f->npauses++;
    return 0;
}

static void fx_decode(fixture *f, cp_stream_kind kind, const char *rel)
{
    cp_buf in;
    cp_buf_init(&in);
    load_fixture(rel, &in);
    cp_dec_sink sink = {.ud = f, .on_trace = fx_trace, .on_word = fx_word, .on_suspend = fx_pause};
    cp_dec *d = cp_dec_new(kind, NULL, &sink, 0);
    assert_int_equal(cp_dec_feed(d, in.data, in.len), CP_OK);
    assert_int_equal(cp_dec_finish(d), CP_OK);
    cp_dec_free(d);
    cp_buf_free(&in);
}

/* The blob of the call whose root ENTER is event `index` of the chunk at `chunk`: the
 * thread's events from there to the depth-0 EXIT, re-framed into chunks (a chunk's first
 * delta is the absolute timer offset), with the words they use and the pauses
 * overlapping them -- what call assembly produces. */
static void fx_call_blob(const fixture *f, uint64_t chunk, uint32_t index, tblob *tb, int64_t *start, int64_t *end)
{
    size_t i = 0;
    while (i < f->nev && !(f->ev[i].r.type == CP_TRACE_ENTER && f->ev[i].r.chunk_offset == chunk &&
                           f->ev[i].r.index == index))
        i++;
    assert_true(i < f->nev);
    int64_t thread = f->ev[i].r.thread_id;
    *start = f->ev[i].r.time_ms;
    tw w;
    tw_begin(&w, f->timer);
    tw_chunk(&w, thread, *start);
    cp_blob_builder bb;
    cp_blob_builder_init(&bb);
    int depth = 0;
    for (; i < f->nev; i++) {
        const cp_trace_rec *r = &f->ev[i].r;
        if (r->thread_id != thread) continue;
        if (r->type == CP_TRACE_CHUNK_BEGIN) tw_chunk(&w, thread, r->chunk_time_ms);
        else if (r->type == CP_TRACE_CHUNK_END) tw_finish(&w);
        else if (r->type == CP_TRACE_ENTER) depth++, tw_enter(&w, r->time_ms, r->id);
        else if (r->type == CP_TRACE_TAG && f->ev[i].text) tw_tag(&w, r->time_ms, r->id, r->param_type, f->ev[i].text);
        else if (r->type == CP_TRACE_TAG) tw_ref(&w, r->time_ms, r->id, r->param_type, r->ref_file, r->ref_offset);
        if (r->type == CP_TRACE_ENTER || r->type == CP_TRACE_TAG) {
            assert_true((size_t)r->id < f->nwords && f->words[r->id]);
            cp_blob_add_word(&bb, r->id, f->words[r->id], strlen(f->words[r->id]));
        }
        if (r->type == CP_TRACE_EXIT) {
            tw_exit(&w, r->time_ms);
            if (--depth == 0) {
                *end = r->time_ms;
                tw_finish(&w);
                break;
            }
        }
    }
    assert_int_equal(depth, 0);
    for (size_t k = 0; k < f->npauses; k++)
        if (f->pauses[k].end_ms >= *start && f->pauses[k].end_ms - f->pauses[k].duration_ms <= *end)
            cp_blob_add_pause(&bb, f->pauses[k].end_ms, f->pauses[k].duration_ms);
    cp_buf_append(&bb.trace, w.b.data, w.b.len);
    cp_buf_init(&tb->bytes);
    assert_int_equal(cp_blob_build(&bb, &tb->bytes), CP_OK);
    char err[200];
    assert_int_equal(cp_blob_open(tb->bytes.data, tb->bytes.len, &tb->b, err, sizeof err), CP_OK);
    cp_blob_builder_free(&bb);
    cp_buf_free(&w.b);
}

static void fx_free(fixture *f)
{
    for (size_t i = 0; i < f->nev; i++) free(f->ev[i].text);
    for (size_t i = 0; i < f->nwords; i++) free(f->words[i]);
    free(f->ev);
    free(f->words);
    free(f->pauses);
}

static json_t *param_group0(json_t *doc, json_t *node, const char *name)
{
    json_t *g = groups_of(doc, node, name);
    if (!g) fail_msg("no param %s", name);
    return json_array_get(g, 0);
}

/* calls record #1 of test-service: bufferOffset 8, recordIndex 0, method 9, 1387 ms. */
static void test_tree_fixture_call(void **state)
{
    (void)state;
    fixture f;
    memset(&f, 0, sizeof f);
    fx_decode(&f, CP_STREAM_TRACE, "streams/test-service.traces.0.protocol");
    fx_decode(&f, CP_STREAM_DICTIONARY, "streams/test-service.dictionary.protocol");
    fx_decode(&f, CP_STREAM_SUSPEND, "streams/test-service.suspend.protocol");
    assert_int_equal(f.nwords, 942);
    tblob tb;
    int64_t start = 0, end = 0;
    fx_call_blob(&f, 8, 0, &tb, &start, &end);
    assert_int_equal(start, INT64_C(1690201583767));
    assert_int_equal(end - start, 1387);

    cp_tree *t = cp_tree_new(NULL);
    char err[200];
    assert_int_equal(cp_tree_add(t, tb.b, err, sizeof err), CP_OK);
    json_t *doc = tree_doc(t, NULL);
    json_t *root = json_object_get(doc, "root");
    assert_string_equal(method_of(doc, root),
                        "void com.netcracker.profiler.agent.Profiler.startDumper() (Profiler.java:20) [profiler-runtime.jar]");
    assert_int_equal(num(root, "total"), 1387);
    assert_int_equal(num(root, "invocations"), 1);
    assert_int_equal(num(root, "calls"), 3); /* the calls record says 4 ENTERs, root included */
    assert_int_equal(num(root, "suspension"), cp_pause_overlap(f.pauses, f.npauses, start, end));
    assert_true(num(root, "suspension") > 0);
    assert_false(json_is_true(json_object_get(doc, "truncated")));

    /* block #1 of test-service.traces.expected.txt */
    assert_int_equal(nkids(root), 2);
    json_t *k0 = json_array_get(json_object_get(root, "children"), 0);
    json_t *k1 = json_array_get(json_object_get(root, "children"), 1);
    assert_string_equal(method_of(doc, k0), "void com.netcracker.profiler.formatters.title.TitleFormatterFacade."
                                            "initFormatters() (TitleFormatterFacade.java:22) [ncdiag/lib/runtime.jar]");
    assert_int_equal(num(k0, "total"), 93);
    assert_string_equal(method_of(doc, k1), "void com.netcracker.profiler.ServerNameResolver.<clinit>() "
                                            "(ServerNameResolver.java:14) [ncdiag/lib/runtime.jar]");
    assert_int_equal(num(k1, "total"), 3);
    assert_int_equal(num(k1, "self"), 0);
    json_t *pp = kid(doc, k1, "java.lang.String com.netcracker.profiler.ServerNameResolver.parsePODName() "
                              "(ServerNameResolver.java:23) [ncdiag/lib/runtime.jar]");
    assert_int_equal(num(pp, "total"), 3);
    assert_int_equal(num(root, "self"), 1387 - 93 - 3);

    /* the synthetic tags of the root (protocol.md §5.5), each once for the whole call */
    assert_string_equal(json_string_value(json_object_get(param_group0(doc, root, "common.started"), "value")),
                        "1690201583767");
    check_group(param_group0(doc, root, "common.started"), 1387, 1);
    assert_string_equal(json_string_value(json_object_get(param_group0(doc, root, "node.name"), "value")),
                        "esc-ui-service-84967fdd77-pwhw4");
    assert_string_equal(json_string_value(json_object_get(param_group0(doc, root, "java.thread"), "value")), "main");
    assert_string_equal(json_string_value(json_object_get(param_group0(doc, root, "time.cpu"), "value")), "1459");
    assert_null(groups_of(doc, root, "call.info"));
    assert_int_equal(json_array_size(json_object_get(root, "params")), 4);
    json_decref(doc);
    cp_tree_free(t);
    tb_free(&tb);
    fx_free(&f);
}

/* ---- size ------------------------------------------------------------------------------- */

/* 1 000 methods under the root with 100 children each: 101 001 nodes, ~202 000 events.
 * Prints the time taken (not asserted: machines differ). */
static void test_tree_large(void **state)
{
    (void)state;
    static wdef words[1101];
    static char names[1101][48];
    for (int i = 0; i < 1101; i++) {
        snprintf(names[i], sizeof names[i], "void p.C%d.m%d()", i, i);
        words[i].id = i;
        words[i].text = names[i];
    }
    tw w;
    tw_begin(&w, TIMER);
    tw_chunk(&w, 1, T(0));
    int64_t now = 0;
    tw_enter(&w, T(now), 0);
    for (int i = 1; i <= 1000; i++) {
        tw_enter(&w, T(now), i);
        for (int j = 0; j < 100; j++) {
            tw_enter(&w, T(now), 1001 + j);
            tw_tag(&w, T(now), 1001 + (j % 3), 0, j % 2 ? "a" : "b");
            now += 1;
            tw_exit(&w, T(now));
        }
        tw_exit(&w, T(now));
    }
    tw_exit(&w, T(now));
    tw_finish(&w);
    bspec s = {words, CP_ARRAY_LEN(words), NULL, 0, NULL, 0};
    tblob tb;
    tb_make(&tb, &w.b, &s);
    cp_tree *t = cp_tree_new(NULL);
    char err[200];
    uint64_t t0 = cp_mono_ns();
    assert_int_equal(cp_tree_add(t, tb.b, err, sizeof err), CP_OK);
    uint64_t t1 = cp_mono_ns();
    cp_buf out;
    cp_buf_init(&out);
    assert_int_equal(cp_tree_json(t, NULL, 0, &out), CP_OK);
    uint64_t t2 = cp_mono_ns();
    printf("[ timing   ] %zu nodes: cp_tree_add %.1f ms, cp_tree_json %.1f ms (%zu bytes)\n", cp_tree_nodes(t),
           (double)(t1 - t0) / 1e6, (double)(t2 - t1) / 1e6, out.len);
    assert_int_equal(cp_tree_nodes(t), 101001);
    json_error_t je;
    json_t *doc = json_loadb((const char *)out.data, out.len, 0, &je);
    assert_non_null(doc);
    json_t *root = json_object_get(doc, "root");
    assert_int_equal(num(root, "total"), 100000);
    assert_int_equal(num(root, "calls"), 101000);
    assert_int_equal(nkids(root), 1000);
    json_decref(doc);
    cp_buf_free(&out);
    cp_tree_free(t);
    tb_free(&tb);
    cp_buf_free(&w.b);
}

/* 200 000 levels deep: building and writing must not recurse. */
static void test_tree_deep(void **state)
{
    (void)state;
    enum { DEPTH = 200000 };
    tw w;
    tw_begin(&w, TIMER);
    tw_chunk(&w, 1, T(0));
    for (int i = 0; i < DEPTH; i++) tw_enter(&w, T(i), M_A);
    for (int i = DEPTH; i-- > 0;) tw_exit(&w, T(DEPTH + (DEPTH - 1 - i)));
    tw_finish(&w);
    bspec s = {WORDS, CP_ARRAY_LEN(WORDS), NULL, 0, NULL, 0};
    cp_tree *t = cp_tree_new(NULL);
    char err[200];
    assert_int_equal(add_trace(t, &w.b, &s, err, sizeof err), CP_OK);
    assert_int_equal(cp_tree_nodes(t), DEPTH);
    cp_buf out;
    cp_buf_init(&out);
    assert_int_equal(cp_tree_json(t, NULL, 0, &out), CP_OK);
    /* too deep for jansson: check the nesting by counting */
    long depth = 0, maxd = 0;
    for (size_t i = 0; i < out.len; i++) {
        if (out.data[i] == '{' || out.data[i] == '[') depth++;
        if (out.data[i] == '}' || out.data[i] == ']') depth--;
        if (depth > maxd) maxd = depth;
        assert_true(depth >= 0);
    }
    assert_int_equal(depth, 0);
    assert_true(maxd >= 2 * DEPTH);
    assert_non_null(strstr((const char *)out.data, "\"root\":{\"method\":0,\"total\":399999,\"self\":2,"));
    cp_buf_free(&out);
    cp_tree_free(t);
    cp_buf_free(&w.b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blob_roundtrip),
        cmocka_unit_test(test_blob_truncations),
        cmocka_unit_test(test_blob_rejections),
        cmocka_unit_test(test_pause_overlap),
        cmocka_unit_test(test_sql_signature),
        cmocka_unit_test(test_tree_numbers),
        cmocka_unit_test(test_tree_suspension_random),
        cmocka_unit_test(test_tree_params),
        cmocka_unit_test(test_tree_group_caps),
        cmocka_unit_test(test_tree_trim),
        cmocka_unit_test(test_tree_full_value),
        cmocka_unit_test(test_tree_ordering),
        cmocka_unit_test(test_tree_multi),
        cmocka_unit_test(test_tree_truncated),
        cmocka_unit_test(test_tree_limits),
        cmocka_unit_test(test_tree_corrupt),
        cmocka_unit_test(test_tree_unknown_method),
        cmocka_unit_test(test_tree_fixture_call),
        cmocka_unit_test(test_tree_large),
        cmocka_unit_test(test_tree_deep),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
