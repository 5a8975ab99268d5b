/* blob.c -- the trace blob (cp_model.h "the trace blob"): a builder that collects a call's
 * trace bytes, words, big values and pauses and writes them in canonical form, and a
 * reader that validates a blob from disk or a database (untrusted) before indexing it.
 * Also cp_pause_overlap, the suspend arithmetic shared by the call list and the trees.
 *
 * Canonical form: every varint is minimal, entries are strictly sorted and unique, flags
 * are 0/1 and nothing follows the pauses. The reader accepts exactly that, so a blob that
 * opens is one the builder could have written (the fuzzer checks this by rebuilding). */
#include "cp_model.h"
#include "streams/cp_streams.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- builder ----------------------------------------------------------------------- */

void cp_blob_builder_init(cp_blob_builder *b)
{
    memset(b, 0, sizeof *b);
    cp_buf_init(&b->trace);
    cp_buf_init(&b->strings);
}

void cp_blob_builder_reset(cp_blob_builder *b)
{
    cp_buf_reset(&b->trace);
    cp_buf_reset(&b->strings);
    b->nwords = b->nvalues = b->npauses = 0;
}

void cp_blob_builder_free(cp_blob_builder *b)
{
    cp_buf_free(&b->trace);
    cp_buf_free(&b->strings);
    free(b->words);
    free(b->values);
    free(b->pauses);
    cp_blob_builder_init(b);
}

/* Strings are kept in one buffer; entries hold offsets because the buffer moves. */
static int keep_string(cp_blob_builder *b, const char *text, size_t len, size_t *off)
{
    if (len > CP_BLOB_MAX) return CP_ELIMIT; /* could never be written anyway */
    *off = b->strings.len;
    return cp_buf_append(&b->strings, text, len);
}

/* Entries are kept sorted as they arrive, so a duplicate costs one binary search. Ids and
 * offsets mostly grow in stream order, so the common insert is an append; an insert in
 * the middle moves the tail (fine for the few thousand words or values of one call). */
static size_t word_pos(const cp_blob_builder *b, int32_t id)
{
    size_t lo = 0, hi = b->nwords;
    if (hi && b->words[hi - 1].id < id) return hi; /* the append fast path */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->words[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int cp_blob_add_word(cp_blob_builder *b, int32_t id, const char *text, size_t len)
{
    if (id < 0 || (len && !text)) return CP_EINVAL;
    size_t at = word_pos(b, id);
    if (at < b->nwords && b->words[at].id == id) return CP_OK;
    int st = cp_grow((void **)&b->words, &b->capwords, b->nwords + 1, sizeof *b->words, 16);
    size_t off = 0;
    if (st == CP_OK) st = keep_string(b, text, len, &off);
    if (st != CP_OK) return st;
    memmove(&b->words[at + 1], &b->words[at], (b->nwords - at) * sizeof *b->words);
    b->words[at].id = id;
    b->words[at].off = off;
    b->words[at].len = len;
    b->nwords++;
    return CP_OK;
}

/* (kind, file, offset) order: <0, 0, >0. */
static int value_cmp(uint8_t ka, int32_t fa, int32_t oa, uint8_t kb, int32_t fb, int32_t ob)
{
    if (ka != kb) return ka < kb ? -1 : 1;
    if (fa != fb) return fa < fb ? -1 : 1;
    if (oa != ob) return oa < ob ? -1 : 1;
    return 0;
}

static size_t value_pos(const cp_blob_builder *b, uint8_t kind, int32_t file, int32_t offset)
{
    size_t lo = 0, hi = b->nvalues;
    if (hi) {
        const struct cp_blob_bvalue *l = &b->values[hi - 1];
        if (value_cmp(l->kind, l->file, l->offset, kind, file, offset) < 0) return hi;
    }
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const struct cp_blob_bvalue *m = &b->values[mid];
        if (value_cmp(m->kind, m->file, m->offset, kind, file, offset) < 0) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

int cp_blob_add_value(cp_blob_builder *b, uint8_t kind, int32_t file, int32_t offset, int resolved,
                      const char *text, size_t len)
{
    if ((kind != 1 && kind != 3) || file < 0 || offset < 0 || (len && !text)) return CP_EINVAL;
    size_t at = value_pos(b, kind, file, offset);
    if (at < b->nvalues) {
        const struct cp_blob_bvalue *v = &b->values[at];
        if (value_cmp(v->kind, v->file, v->offset, kind, file, offset) == 0) return CP_OK;
    }
    int st = cp_grow((void **)&b->values, &b->capvalues, b->nvalues + 1, sizeof *b->values, 16);
    size_t off = 0;
    if (st == CP_OK) st = keep_string(b, text, len, &off);
    if (st != CP_OK) return st;
    memmove(&b->values[at + 1], &b->values[at], (b->nvalues - at) * sizeof *b->values);
    struct cp_blob_bvalue *v = &b->values[at];
    v->kind = kind;
    v->resolved = resolved ? 1 : 0;
    v->file = file;
    v->offset = offset;
    v->off = off;
    v->len = len;
    b->nvalues++;
    return CP_OK;
}

int cp_blob_add_pause(cp_blob_builder *b, int64_t end_ms, int32_t duration_ms)
{
    if (duration_ms < 0) return CP_EINVAL;
    int st = cp_grow((void **)&b->pauses, &b->cappauses, b->npauses + 1, sizeof *b->pauses, 16);
    if (st != CP_OK) return st;
    b->pauses[b->npauses].end_ms = end_ms;
    b->pauses[b->npauses].duration_ms = duration_ms;
    b->npauses++;
    return CP_OK;
}

/* Pauses arrive in suspend-stream order (already sorted, as a rule), so they are sorted
 * only at build time; (end, duration) makes the order total and duplicates adjacent. */
static int pause_cmp(const void *a, const void *b)
{
    const cp_blob_pause *x = a, *y = b;
    if (x->end_ms != y->end_ms) return x->end_ms < y->end_ms ? -1 : 1;
    if (x->duration_ms != y->duration_ms) return x->duration_ms < y->duration_ms ? -1 : 1;
    return 0;
}

static void sort_pauses(cp_blob_builder *b)
{
    int sorted = 1;
    for (size_t i = 1; i < b->npauses && sorted; i++)
        if (pause_cmp(&b->pauses[i - 1], &b->pauses[i]) >= 0) sorted = 0;
    if (sorted) return;
    qsort(b->pauses, b->npauses, sizeof *b->pauses, pause_cmp);
    size_t n = 0;
    for (size_t i = 0; i < b->npauses; i++)
        if (n == 0 || pause_cmp(&b->pauses[n - 1], &b->pauses[i]) != 0) b->pauses[n++] = b->pauses[i];
    b->npauses = n;
}

static int put_vu64(cp_buf *out, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    while (v >= 0x80) {
        tmp[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    tmp[n++] = (uint8_t)v;
    return cp_buf_append(out, tmp, n);
}

/* Lengths and counts are written as 32-bit varints: refuse what does not fit. */
static int put_vu(cp_buf *out, size_t v)
{
    if (v > UINT32_MAX) return CP_ELIMIT;
    return put_vu64(out, v);
}

static int put_sized(cp_buf *out, const uint8_t *p, size_t n)
{
    int st = put_vu(out, n);
    return st != CP_OK ? st : cp_buf_append(out, p, n);
}

/* The strings buffer is NULL while every string so far is empty; NULL + 0 is still UB. */
static const uint8_t *string_at(const cp_blob_builder *b, size_t off)
{
    return b->strings.data ? b->strings.data + off : (const uint8_t *)"";
}

static int write_blob(const cp_blob_builder *b, cp_buf *out)
{
    int st = cp_buf_append(out, CP_BLOB_MAGIC, 4);
    if (st == CP_OK) st = put_sized(out, b->trace.data ? b->trace.data : (const uint8_t *)"", b->trace.len);
    if (st == CP_OK) st = put_vu(out, b->nwords);
    for (size_t i = 0; i < b->nwords && st == CP_OK; i++) {
        const struct cp_blob_bword *w = &b->words[i];
        st = put_vu(out, (size_t)w->id);
        if (st == CP_OK) st = put_sized(out, string_at(b, w->off), w->len);
    }
    if (st == CP_OK) st = put_vu(out, b->nvalues);
    for (size_t i = 0; i < b->nvalues && st == CP_OK; i++) {
        const struct cp_blob_bvalue *v = &b->values[i];
        st = cp_buf_putc(out, v->kind);
        if (st == CP_OK) st = put_vu(out, (size_t)v->file);
        if (st == CP_OK) st = put_vu(out, (size_t)v->offset);
        if (st == CP_OK) st = cp_buf_putc(out, v->resolved);
        if (st == CP_OK) st = put_sized(out, string_at(b, v->off), v->len);
    }
    if (st == CP_OK) st = put_vu(out, b->npauses);
    for (size_t i = 0; i < b->npauses && st == CP_OK; i++) {
        st = put_vu64(out, (uint64_t)b->pauses[i].end_ms);
        if (st == CP_OK) st = put_vu(out, (size_t)b->pauses[i].duration_ms);
    }
    return st;
}

int cp_blob_build(cp_blob_builder *b, cp_buf *out)
{
    sort_pauses(b);
    size_t start = out->len;
    int st = write_blob(b, out);
    /* a blob the reader would refuse must not be written in the first place */
    if (st == CP_OK && out->len - start > CP_BLOB_MAX) st = CP_ELIMIT;
    if (st != CP_OK) out->len = start;
    return st;
}

/* ---- reader ------------------------------------------------------------------------ */

/* The reader's cursor and the first error, so each field read is one line. */
typedef struct blob_rd {
    const uint8_t *p;
    size_t n, pos;
    char *err;
    size_t errlen;
} blob_rd;

static int rd_fail(blob_rd *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int rd_fail(blob_rd *r, const char *fmt, ...)
{
    if (r->err && r->errlen) {
        char why[160];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, sizeof why, fmt, ap);
        va_end(ap);
        snprintf(r->err, r->errlen, "trace blob: %s at offset %zu", why, r->pos);
    }
    return CP_ECORRUPT;
}

/* Minimal unsigned LEB128 of at most max_bits bits: a longer, overlong or over-wide
 * encoding is corruption, which also keeps every loop here bounded by 10 bytes. */
static int rd_leb(blob_rd *r, unsigned max_bits, uint64_t *v, const char *what)
{
    uint64_t acc = 0;
    for (unsigned shift = 0;; shift += 7) {
        if (r->pos >= r->n) return rd_fail(r, "%s cut short", what);
        uint8_t byte = r->p[r->pos];
        uint64_t bits = byte & 0x7Fu;
        if (shift >= max_bits || (shift > 0 && max_bits - shift < 7 && (bits >> (max_bits - shift)) != 0))
            return rd_fail(r, "%s does not fit in %u bits", what, max_bits);
        if (shift > 0 && byte == 0) return rd_fail(r, "%s is not minimally encoded", what);
        acc |= bits << shift;
        r->pos++;
        if (!(byte & 0x80)) break;
    }
    *v = acc;
    return CP_OK;
}

/* A 32-bit field that the model keeps as a non-negative int32. */
static int rd_i31(blob_rd *r, int32_t *v, const char *what)
{
    uint64_t x;
    int st = rd_leb(r, 32, &x, what);
    if (st != CP_OK) return st;
    if (x > INT32_MAX) return rd_fail(r, "%s %llu out of range", what, (unsigned long long)x);
    *v = (int32_t)x;
    return CP_OK;
}

/* A length: the bytes must be there. Returns the start of the bytes through *at. */
static int rd_bytes(blob_rd *r, size_t *at, size_t *len, const char *what)
{
    uint64_t x;
    int st = rd_leb(r, 32, &x, what);
    if (st != CP_OK) return st;
    if (x > r->n - r->pos) return rd_fail(r, "%s of %llu bytes runs past the end", what, (unsigned long long)x);
    *at = r->pos;
    *len = (size_t)x;
    r->pos += (size_t)x;
    return CP_OK;
}

/* A count is bounded by what the remaining bytes could hold (each entry needs at least
 * min_entry bytes), so a forged count cannot make us allocate more than the blob's size. */
static int rd_count(blob_rd *r, size_t min_entry, size_t *count, const char *what)
{
    uint64_t x;
    int st = rd_leb(r, 32, &x, what);
    if (st != CP_OK) return st;
    if (x > (r->n - r->pos) / min_entry)
        return rd_fail(r, "%s %llu larger than the bytes left", what, (unsigned long long)x);
    *count = (size_t)x;
    return CP_OK;
}

static int rd_u8(blob_rd *r, uint8_t *v, const char *what)
{
    if (r->pos >= r->n) return rd_fail(r, "%s cut short", what);
    *v = r->p[r->pos++];
    return CP_OK;
}

static int read_words(blob_rd *r, cp_blob *b)
{
    int st = rd_count(r, 2, &b->nwords, "word count");
    if (st != CP_OK) return st;
    if (b->nwords && !(b->words = malloc(b->nwords * sizeof *b->words))) return CP_ENOMEM;
    for (size_t i = 0; i < b->nwords; i++) {
        cp_blob_word *w = &b->words[i];
        size_t at = 0;
        if ((st = rd_i31(r, &w->id, "word id")) != CP_OK) return st;
        if (i && w->id <= b->words[i - 1].id) return rd_fail(r, "word id %d not above %d", w->id, b->words[i - 1].id);
        if ((st = rd_bytes(r, &at, &w->len, "word")) != CP_OK) return st;
        w->text = (const char *)r->p + at;
    }
    return CP_OK;
}

static int read_values(blob_rd *r, cp_blob *b)
{
    int st = rd_count(r, 5, &b->nvalues, "value count");
    if (st != CP_OK) return st;
    if (b->nvalues && !(b->values = malloc(b->nvalues * sizeof *b->values))) return CP_ENOMEM;
    for (size_t i = 0; i < b->nvalues; i++) {
        cp_blob_value *v = &b->values[i];
        size_t at = 0;
        if ((st = rd_u8(r, &v->kind, "value kind")) != CP_OK) return st;
        if (v->kind != 1 && v->kind != 3) return rd_fail(r, "value kind %u is neither 1 (xml) nor 3 (sql)", v->kind);
        if ((st = rd_i31(r, &v->file, "value file")) != CP_OK) return st;
        if ((st = rd_i31(r, &v->offset, "value offset")) != CP_OK) return st;
        if ((st = rd_u8(r, &v->resolved, "resolved flag")) != CP_OK) return st;
        if (v->resolved > 1) return rd_fail(r, "resolved flag %u", v->resolved);
        if ((st = rd_bytes(r, &at, &v->len, "value")) != CP_OK) return st;
        v->text = (const char *)r->p + at;
        const cp_blob_value *p = i ? &b->values[i - 1] : NULL;
        if (p && value_cmp(p->kind, p->file, p->offset, v->kind, v->file, v->offset) >= 0)
            return rd_fail(r, "value %u:%d:%d out of order", v->kind, v->file, v->offset);
    }
    return CP_OK;
}

static int read_pauses(blob_rd *r, cp_blob *b)
{
    int st = rd_count(r, 2, &b->npauses, "pause count");
    if (st != CP_OK) return st;
    if (b->npauses && !(b->pauses = malloc(b->npauses * sizeof *b->pauses))) return CP_ENOMEM;
    for (size_t i = 0; i < b->npauses; i++) {
        cp_blob_pause *p = &b->pauses[i];
        uint64_t end;
        if ((st = rd_leb(r, 64, &end, "pause end")) != CP_OK) return st;
        p->end_ms = (int64_t)end;
        if ((st = rd_i31(r, &p->duration_ms, "pause duration")) != CP_OK) return st;
        if (i && pause_cmp(&b->pauses[i - 1], p) >= 0) return rd_fail(r, "pause ending %lld out of order", (long long)p->end_ms);
    }
    return CP_OK;
}

static int read_blob(blob_rd *r, cp_blob *b)
{
    if (r->n < 4 || memcmp(r->p, CP_BLOB_MAGIC, 4) != 0) return rd_fail(r, "bad magic");
    r->pos = 4;
    size_t at = 0;
    int st = rd_bytes(r, &at, &b->trace_len, "trace");
    if (st != CP_OK) return st;
    b->trace = r->p + at;
    if ((st = read_words(r, b)) != CP_OK) return st;
    if ((st = read_values(r, b)) != CP_OK) return st;
    if ((st = read_pauses(r, b)) != CP_OK) return st;
    if (r->pos != r->n) return rd_fail(r, "%zu bytes after the pauses", r->n - r->pos);
    return CP_OK;
}

int cp_blob_open(const uint8_t *p, size_t n, cp_blob **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen) err[0] = '\0';
    if (n > CP_BLOB_MAX) {
        if (err && errlen) snprintf(err, errlen, "trace blob: %zu bytes, above the %u-byte limit", n, CP_BLOB_MAX);
        return CP_ELIMIT;
    }
    if (!p && n) return CP_EINVAL;
    cp_blob *b = calloc(1, sizeof *b);
    if (!b) return CP_ENOMEM;
    blob_rd r = {p, n, 0, err, errlen};
    int st = read_blob(&r, b);
    if (st != CP_OK) {
        if (st == CP_ENOMEM && err && errlen) snprintf(err, errlen, "trace blob: out of memory");
        cp_blob_free(b);
        return st;
    }
    *out = b;
    return CP_OK;
}

void cp_blob_free(cp_blob *b)
{
    if (!b) return;
    free(b->words);
    free(b->values);
    free(b->pauses);
    free(b);
}

const cp_blob_word *cp_blob_find_word(const cp_blob *b, int32_t id)
{
    size_t lo = 0, hi = b->nwords;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (b->words[mid].id == id) return &b->words[mid];
        if (b->words[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

const cp_blob_value *cp_blob_find_value(const cp_blob *b, uint8_t kind, int32_t file, int32_t offset)
{
    size_t lo = 0, hi = b->nvalues;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const cp_blob_value *v = &b->values[mid];
        int c = value_cmp(v->kind, v->file, v->offset, kind, file, offset);
        if (c == 0) return v;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* ---- suspend timeline -------------------------------------------------------------- */

/* Times come from untrusted streams: every difference and sum saturates instead of
 * overflowing, so garbage stays garbage without undefined behaviour. */
static int64_t sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r)) return b > 0 ? INT64_MIN : INT64_MAX;
    return r;
}
static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static int64_t span_overlap(int64_t s, int64_t e, int64_t from, int64_t to)
{
    int64_t lo = s > from ? s : from, hi = e < to ? e : to;
    return hi > lo ? sat_sub(hi, lo) : 0;
}

/* Pauses are sorted by end, but their starts are not (a long pause can swallow shorter
 * ones that ended before it). Walking from the latest end backwards fixes that: every
 * pause still to come ends no later than the current one, so it either reaches into the
 * merged run (end >= run start) or lies wholly before it -- and then so does everything
 * after it, which closes the run for good. One pass, no sorting by start. */
int64_t cp_pause_overlap(const cp_blob_pause *pauses, size_t n, int64_t from, int64_t to)
{
    int64_t total = 0, rs = 0, re = 0;
    int open = 0;
    if (to <= from) return 0;
    for (size_t i = n; i-- > 0;) {
        int64_t e = pauses[i].end_ms;
        int64_t s = sat_sub(e, pauses[i].duration_ms > 0 ? pauses[i].duration_ms : 0);
        if (open && e >= rs) { /* reaches into the run: extend it */
            if (s < rs) rs = s;
            if (e > re) re = e; /* only for unsorted input; keeps it harmless */
            continue;
        }
        if (open) total = sat_add(total, span_overlap(rs, re, from, to));
        open = 0;
        if (e <= from) break; /* this pause and all earlier ones end before the window */
        rs = s;
        re = e;
        open = 1;
    }
    if (open) total = sat_add(total, span_overlap(rs, re, from, to));
    return total;
}

/* ---- words from the catalog ----------------------------------------------------------- */

typedef struct id_set {
    int32_t *ids;
    size_t n, cap;
    int oom;
} id_set;

static int collect_id(void *ud, const cp_trace_rec *r)
{
    id_set *s = ud;
    if (r->type != CP_TRACE_ENTER && r->type != CP_TRACE_TAG) return 0;
    if (s->n == s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 64;
        int32_t *p = realloc(s->ids, cap * sizeof *p);
        if (!p) {
            s->oom = 1;
            return 1;
        }
        s->ids = p;
        s->cap = cap;
    }
    s->ids[s->n++] = r->id;
    return 0;
}

static int cmp_id(const void *x, const void *y)
{
    int32_t a = *(const int32_t *)x, b = *(const int32_t *)y;
    return (a > b) - (a < b);
}

int cp_blob_word_ids(const cp_blob *b, int32_t **ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    id_set s = {0};
    cp_dec_sink sink = {.ud = &s, .on_trace = collect_id};
    cp_dec *d = cp_dec_new(CP_STREAM_TRACE, NULL, &sink, 0);
    if (!d) return CP_ENOMEM;
    int st = cp_dec_feed(d, b->trace, b->trace_len);
    cp_dec_free(d);
    if (s.oom) st = CP_ENOMEM;
    else if (st != CP_OK) st = CP_ECORRUPT; /* a cut tail is fine: the tree handles it */
    if (st != CP_OK) {
        free(s.ids);
        return st;
    }
    if (s.n > 1) qsort(s.ids, s.n, sizeof *s.ids, cmp_id);
    size_t k = 0;
    for (size_t i = 0; i < s.n; i++)
        if (!k || s.ids[k - 1] != s.ids[i]) s.ids[k++] = s.ids[i];
    *ids = s.ids;
    *n = k;
    return CP_OK;
}

static int cmp_word(const void *x, const void *y)
{
    const cp_blob_word *a = x, *b = y;
    return (a->id > b->id) - (a->id < b->id);
}

int cp_blob_attach_words(cp_blob *b, const cp_blob_word *w, size_t n)
{
    if (!n) return CP_OK;
    if (n > (SIZE_MAX / sizeof *w) / 2 - b->nwords) return CP_ENOMEM;
    cp_blob_word *add = malloc(n * sizeof *add), *all = malloc((b->nwords + n) * sizeof *all);
    if (!add || !all) {
        free(add);
        free(all);
        return CP_ENOMEM;
    }
    memcpy(add, w, n * sizeof *add);
    if (n > 1) qsort(add, n, sizeof *add, cmp_word);
    /* merge two sorted lists; for an id in both, the blob's own text wins */
    size_t i = 0, j = 0, k = 0;
    while (i < b->nwords || j < n) {
        if (j == n || (i < b->nwords && b->words[i].id <= add[j].id)) {
            if (j < n && add[j].id == b->words[i].id) j++;
            all[k++] = b->words[i++];
        } else if (!k || all[k - 1].id != add[j].id) {
            all[k++] = add[j++];
        } else {
            j++; /* a duplicate in the catalog's list */
        }
    }
    free(add);
    free(b->words);
    b->words = all;
    b->nwords = k;
    return CP_OK;
}
