/* cbortrace.c -- the CBOR raw trace decoder (cp_cbortrace.h; spec foreign-formats.md §3).
 *
 * Bytes go through the resumable scanner of cbor.c until one top-level item is complete
 * (held in `pend` only when a feed cuts it). A complete item is then read twice by the
 * same walker: a check pass that resolves every reference, checks every shape and limit
 * and builds every text without delivering anything, then, if the check passed, a
 * delivery pass. Symbols cannot change inside an item, so both passes see the same
 * thing, and a consumer never sees part of a record that turns out to be unusable. The
 * walker keeps record nesting and JSON nesting in explicit stacks: no recursion, so a
 * deep item costs heap bounded by max_depth, never C stack. */
#include "streams/cp_cbortrace.h"

#include "common/cp_map.h"
#include "streams/cbor_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Tags of the Zorka-style tracer (spec §3.1, §3.2). */
enum {
    TAG_STRING_DEF = 1,
    TAG_METHOD_DEF = 2,
    TAG_STRING_REF = 6,
    TAG_TRACE_BE = 10,
    TAG_TRACE_LE = 11,
    TAG_ATTRS = 12,
    TAG_BEGIN = 33,
    TAG_EXCEPTION = 34,
};
#define TAG_SELF_DESCRIBE 55799u    /* RFC 8949 §3.4.6: "this is CBOR", a no-op prefix */
#define MAX_CAUSES 64               /* "Caused by" levels of one exception */
#define TSTAMP_MASK ((UINT64_C(1) << 40) - 1)
#define PEND_KEEP ((size_t)1 << 20) /* a bigger pending buffer is freed once its item is done */

/* Private status of the walker: the item is well-formed CBOR but no usable record. */
#define SKIP 2

typedef struct sym_text {
    size_t len;
    char s[];                       /* valid UTF-8 (repaired when defined) */
} sym_text;

typedef struct method_def {
    uint64_t cls, name, sig;        /* string ids, resolved when a record uses the method */
} method_def;

/* An array being read element by element. */
typedef struct seq {
    uint64_t left;                  /* definite: elements not yet taken */
    size_t at;                      /* offset of its head in the item */
    uint8_t indef;
} seq;

/* An open trace record (depth = its index in the frame stack). */
typedef struct frame {
    seq s;
    size_t off;                     /* offset of its tag in the item */
    uint8_t big, has_exc;
} frame;

/* An open array or map of a value being written as JSON. */
typedef struct jframe {
    uint64_t left, n;               /* items (a map counts keys and values) to come / done */
    size_t key_start;               /* as_key: where its text starts in the output */
    uint8_t indef, is_map, as_key;
} jframe;

struct cp_cbt_dec {
    cp_cbt_limits lim;
    cp_cbt_sink sink;
    int status;
    char err[256];
    uint64_t base;                  /* offset of the current item = end of the last whole one */
    uint64_t items, records, skipped, methods;
    cp_cbt_scan scan;               /* where the pending item ends */
    cp_cbt_scan skipper;            /* passing over items inside a complete one */
    cp_buf pend;                    /* the pending item's bytes, when a feed cut it */
    /* symbols */
    cp_u64map strs;                 /* string id -> sym_text * */
    cp_u64map meth_ix;              /* method id -> index in meths */
    method_def *meths;
    size_t nmeths, cap_meths;
    uint64_t sym_bytes;
    /* walker scratch, kept between items */
    frame *frames;
    size_t nframes, cap_frames;
    jframe *jstk;
    size_t cap_jstk;
    cp_buf raw, key, val, text, method, tid, esc;
    char why[256];                  /* reason of the last SKIP */
};

/* One pass over a complete item. */
typedef struct walk {
    cp_cbt_dec *d;
    cp_rd r;
    int deliver;                    /* 0: check pass, nothing reaches the sink */
    uint64_t budget;                /* text bytes the item may still produce */
} walk;

void cp_cbt_limits_default(cp_cbt_limits *l)
{
    l->max_item = 16u << 20;
    l->max_depth = 512;
    l->max_string = 4u << 20;
    l->max_symbols = 1u << 20;
    l->max_symbol_bytes = (uint64_t)64 << 20;
}

/* ---- errors and skips ---------------------------------------------------------------- */

static int dec_fail(cp_cbt_dec *d, int status, uint64_t at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int dec_fail(cp_cbt_dec *d, int status, uint64_t at, const char *fmt, ...)
{
    if (d->status < 0) return d->status;
    d->status = status;
    va_list ap;
    va_start(ap, fmt);
    cp_vset_err_at(d->err, sizeof d->err, at, fmt, ap);
    va_end(ap);
    return status;
}

/* The item is unusable but well-formed: remember why; it becomes one SKIPPED event. */
static int skipf(walk *w, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int skipf(walk *w, size_t at, const char *fmt, ...)
{
    cp_cbt_dec *d = w->d;
    va_list ap;
    va_start(ap, fmt);
    cp_vset_err_at(d->why, sizeof d->why, d->base + at, fmt, ap);
    va_end(ap);
    return SKIP;
}

/* The scanner accepted the item, so a reader failing on it is a bug of ours: say so
 * loudly instead of guessing. */
static int internal(walk *w, int st)
{
    if (st == CP_ENOMEM) return st;
    return dec_fail(w->d, CP_EPROTO, w->d->base + w->r.pos, "internal error: item inconsistent with its scan");
}

static cp_cbt_text txt(const cp_buf *b)
{
    cp_cbt_text t = {b->len ? (const char *)b->data : "", b->len};
    return t;
}

static int deliver(cp_cbt_dec *d, const cp_cbt_event *e)
{
    if (d->sink.on_event && d->sink.on_event(d->sink.ud, e) != 0) return CP_EABORT;
    if (e->type == CP_CBT_BEGIN) d->records++;
    if (e->type == CP_CBT_SKIPPED) d->skipped++;
    return CP_OK;
}

static int emit(walk *w, const cp_cbt_event *e) { return w->deliver ? deliver(w->d, e) : CP_OK; }

/* Texts are built whole before they are checked, so each check also bounds the work:
 * one text stops near max_string, all the texts of an item near the budget (string
 * references would otherwise let a small item expand without end). */
static int fits(walk *w, const cp_buf *b, size_t at, const char *what)
{
    if (b->len <= w->d->lim.max_string) return CP_OK;
    return skipf(w, at, "%s longer than max_string %" PRIu32 " bytes", what, w->d->lim.max_string);
}

static uint64_t item_budget(const cp_cbt_dec *d) { return 8 * (uint64_t)d->lim.max_item + d->lim.max_string; }

static int spend(walk *w, size_t n, size_t at)
{
    if (n > w->budget) return skipf(w, at, "texts of one item past 8 x max_item + max_string bytes");
    w->budget -= n;
    return CP_OK;
}

/* ---- reading the item ---------------------------------------------------------------- */

static int head(walk *w, cp_cbt_head *h)
{
    int st = cp_cbt_head_read(&w->r, h);
    return st == CP_OK ? CP_OK : internal(w, st);
}

static int is_null(const cp_cbt_head *h) { return h->major == CP_CBOR_SIMPLE && (h->ai == 22 || h->ai == 23); }

static int skip_item(walk *w)
{
    int st = cp_cbt_skip(&w->r, &w->d->skipper);
    return st == CP_OK ? CP_OK : internal(w, st);
}

static int seq_open(walk *w, seq *s, const char *what)
{
    cp_cbt_head h;
    int st = head(w, &h);
    if (st != CP_OK) return st;
    if (h.major != CP_CBOR_ARRAY) return skipf(w, h.off, "%s is not an array", what);
    s->left = h.val;
    s->indef = h.indef;
    s->at = h.off;
    return CP_OK;
}

static int seq_has(const walk *w, const seq *s) { return s->indef ? !cp_cbt_at_break(&w->r) : s->left > 0; }
static void seq_take(seq *s) { s->left -= !s->indef; }

static int seq_need(walk *w, seq *s, const char *what)
{
    if (!seq_has(w, s)) return skipf(w, s->at, "%s has too few elements", what);
    seq_take(s);
    return CP_OK;
}

static int seq_end(walk *w, seq *s, const char *what)
{
    if (seq_has(w, s)) return skipf(w, s->at, "%s has too many elements", what);
    if (s->indef) w->r.pos++;
    return CP_OK;
}

/* Head of the next value, past tags that only annotate it (all but string references). */
static int value_head(walk *w, cp_cbt_head *h)
{
    int st;
    do {
        if ((st = head(w, h)) != CP_OK) return st;
    } while (h->major == CP_CBOR_TAG && h->val != TAG_STRING_REF);
    return CP_OK;
}

/* ---- strings ------------------------------------------------------------------------- */

/* The text a tag 6 head refers to. */
static int string_ref(walk *w, const cp_cbt_head *tag, const sym_text **t)
{
    cp_cbt_head h;
    int st = head(w, &h);
    if (st != CP_OK) return st;
    if (h.major != CP_CBOR_UINT) return skipf(w, tag->off, "string reference (tag 6) is not an unsigned integer");
    uint64_t v;
    if (!cp_u64map_get(&w->d->strs, h.val, &v)) return skipf(w, tag->off, "undefined string id %" PRIu64, h.val);
    *t = (const sym_text *)(uintptr_t)v;
    return CP_OK;
}

/* Appends the text string of head h as valid UTF-8, or as a JSON string. Chunks are
 * joined before the repair: a character split across chunks survives. */
static int text_append(walk *w, const cp_cbt_head *h, cp_buf *out, int json)
{
    const char *s;
    size_t n;
    if (!h->indef) {
        if (h->val > cp_rd_left(&w->r)) return internal(w, CP_EPROTO);
        s = (const char *)w->r.p + w->r.pos;
        n = (size_t)h->val;
        w->r.pos += n;
    } else {
        cp_buf_reset(&w->d->raw);
        int st = cp_cbt_str_append(&w->r, h, &w->d->raw);
        if (st != CP_OK) return internal(w, st);
        s = (const char *)w->d->raw.data;
        n = w->d->raw.len;
    }
    int st = json ? cp_json_str(out, s, n) : cp_utf8_repair(out, s, n);
    return st == CP_OK ? CP_OK : CP_ENOMEM;
}

/* Where the format wants a string: a text string or a string reference. */
static int put_string(walk *w, cp_buf *out, const char *what)
{
    cp_cbt_head h;
    int st = head(w, &h);
    if (st != CP_OK) return st;
    if (h.major == CP_CBOR_TEXT) return text_append(w, &h, out, 0);
    if (h.major != CP_CBOR_TAG || h.val != TAG_STRING_REF) return skipf(w, h.off, "%s is not a string", what);
    const sym_text *t;
    if ((st = string_ref(w, &h, &t)) != CP_OK) return st;
    return cp_buf_append(out, t->s, t->len) == CP_OK ? CP_OK : CP_ENOMEM;
}

/* ---- values as text and as JSON ------------------------------------------------------ */

enum { AS_TEXT, AS_JSON, AS_KEY };

/* A scalar (not a container, not a reference). AS_TEXT: strings as they are, numbers in
 * decimal, byte strings in hex; AS_JSON: a JSON value (non-finite floats and odd simple
 * values have no JSON form: null and a string); AS_KEY: always a JSON string. */
static int scalar(walk *w, const cp_cbt_head *h, cp_buf *out, int as)
{
    char num[48];
    int n = 0, quote = as == AS_KEY;
    switch (h->major) {
    case CP_CBOR_TEXT:
        return text_append(w, h, out, as != AS_TEXT);
    case CP_CBOR_BYTES: {
        static const char hex[] = "0123456789abcdef";
        cp_buf_reset(&w->d->raw);
        int st = cp_cbt_str_append(&w->r, h, &w->d->raw);
        if (st != CP_OK) return internal(w, st);
        if (cp_buf_reserve(out, 2 * w->d->raw.len + 2) != CP_OK) return CP_ENOMEM;
        if (as != AS_TEXT) out->data[out->len++] = '"';
        for (size_t i = 0; i < w->d->raw.len; i++) {
            out->data[out->len++] = (uint8_t)hex[w->d->raw.data[i] >> 4];
            out->data[out->len++] = (uint8_t)hex[w->d->raw.data[i] & 15];
        }
        if (as != AS_TEXT) out->data[out->len++] = '"';
        return CP_OK;
    }
    case CP_CBOR_UINT:
        n = snprintf(num, sizeof num, "%" PRIu64, h->val);
        break;
    case CP_CBOR_NINT: /* -1 - val; -2^64 does not fit any C integer */
        n = h->val == UINT64_MAX ? snprintf(num, sizeof num, "-18446744073709551616")
                                 : snprintf(num, sizeof num, "-%" PRIu64, h->val + 1);
        break;
    default:
        if (h->ai >= 25 && h->ai <= 27) {
            n = (int)cp_cbt_float_text(h, num);
            if (as == AS_JSON && (num[0] == 'N' || num[0] == 'I' || num[1] == 'I')) /* NaN, +-Infinity */
                n = snprintf(num, sizeof num, "null");
        } else if (h->val == 20 || h->val == 21) {
            n = snprintf(num, sizeof num, "%s", h->val == 21 ? "true" : "false");
        } else if (h->val == 22 || h->val == 23) {
            n = snprintf(num, sizeof num, "null"); /* undefined too: JSON has no such thing */
        } else {
            n = snprintf(num, sizeof num, "simple(%" PRIu64 ")", h->val);
            quote = as != AS_TEXT;
        }
        break;
    }
    if (quote && cp_buf_putc(out, '"') != CP_OK) return CP_ENOMEM;
    if (cp_buf_append(out, num, (size_t)n) != CP_OK) return CP_ENOMEM;
    if (quote && cp_buf_putc(out, '"') != CP_OK) return CP_ENOMEM;
    return CP_OK;
}

/* A container written as a map key: JSON keys are strings, so its JSON text (from start
 * to the end of out) becomes a JSON string. */
static int quote_key(cp_cbt_dec *d, cp_buf *out, size_t start)
{
    cp_buf_reset(&d->esc);
    if (cp_json_str(&d->esc, (const char *)out->data + start, out->len - start) != CP_OK) return CP_ENOMEM;
    out->len = start;
    return cp_buf_append(out, d->esc.data, d->esc.len) == CP_OK ? CP_OK : CP_ENOMEM;
}

/* Writes the value at the cursor as compact JSON, string references resolved. One head
 * per turn; open containers are on d->jstk (depth bounded by the scan's max_depth). */
static int json(walk *w, cp_buf *out, const char *what, size_t at)
{
    cp_cbt_dec *d = w->d;
    size_t sp = 0;
    int st;
    for (;;) {
        int as_key = 0, closed = 0;
        if (sp) {
            jframe *f = &d->jstk[sp - 1];
            if (f->indef ? cp_cbt_at_break(&w->r) : f->left == 0) {
                w->r.pos += f->indef;
                if (cp_buf_putc(out, f->is_map ? '}' : ']') != CP_OK) return CP_ENOMEM;
                sp--;
                if (f->as_key && (st = quote_key(d, out, f->key_start)) != CP_OK) return st;
                closed = 1;
            } else {
                if (f->n && !(f->is_map && (f->n & 1)) && cp_buf_putc(out, ',') != CP_OK) return CP_ENOMEM;
                as_key = f->is_map && !(f->n & 1);
                f->left -= !f->indef;
            }
        }
        if (!closed) {
            cp_cbt_head h;
            if ((st = value_head(w, &h)) != CP_OK) return st;
            if (h.major == CP_CBOR_ARRAY || h.major == CP_CBOR_MAP) {
                if (cp_grow((void **)&d->jstk, &d->cap_jstk, sp + 1, sizeof *d->jstk, 16) != CP_OK) return CP_ENOMEM;
                jframe *nf = &d->jstk[sp++];
                nf->is_map = h.major == CP_CBOR_MAP;
                nf->left = nf->is_map ? 2 * h.val : h.val; /* the scan bounded val by max_item / 2 */
                nf->n = 0;
                nf->indef = h.indef;
                nf->as_key = (uint8_t)as_key;
                nf->key_start = out->len;
                if (cp_buf_putc(out, nf->is_map ? '{' : '[') != CP_OK) return CP_ENOMEM;
                continue;
            }
            if (h.major == CP_CBOR_TAG) {
                const sym_text *t;
                if ((st = string_ref(w, &h, &t)) != CP_OK) return st;
                if (cp_json_str(out, t->s, t->len) != CP_OK) return CP_ENOMEM;
            } else if ((st = scalar(w, &h, out, as_key ? AS_KEY : AS_JSON)) != CP_OK) {
                return st;
            }
        }
        if ((st = fits(w, out, at, what)) != CP_OK) return st;
        if (!sp) return CP_OK;
        jframe *p = &d->jstk[sp - 1];
        p->n++;
        if (p->is_map && (p->n & 1) && cp_buf_putc(out, ':') != CP_OK) return CP_ENOMEM;
    }
}

/* An attribute key or value, TraceBegin's traceId: as text (spec §3.2). */
static int value_text(walk *w, cp_buf *out, const char *what)
{
    size_t at = w->r.pos;
    cp_cbt_head h;
    int st = value_head(w, &h);
    if (st != CP_OK) return st;
    if (h.major == CP_CBOR_ARRAY || h.major == CP_CBOR_MAP) {
        w->r.pos = h.off;
        return json(w, out, what, at);
    }
    if (h.major == CP_CBOR_TAG) {
        const sym_text *t;
        if ((st = string_ref(w, &h, &t)) != CP_OK) return st;
        if (cp_buf_append(out, t->s, t->len) != CP_OK) return CP_ENOMEM;
    } else if ((st = scalar(w, &h, out, AS_TEXT)) != CP_OK) {
        return st;
    }
    return fits(w, out, at, what);
}

/* ---- symbols ------------------------------------------------------------------------- */

static int symbol_room(walk *w, const char *what)
{
    const cp_cbt_dec *d = w->d;
    if (cp_u64map_count(&d->strs) + cp_u64map_count(&d->meth_ix) < d->lim.max_symbols) return CP_OK;
    return dec_fail(w->d, CP_ELIMIT, d->base, "%s past max_symbols %" PRIu32, what, d->lim.max_symbols);
}

static int store_string(walk *w, uint64_t id, const cp_buf *text)
{
    cp_cbt_dec *d = w->d;
    uint64_t v;
    sym_text *prev = NULL;
    int st;
    if (cp_u64map_get(&d->strs, id, &v)) prev = (sym_text *)(uintptr_t)v;
    else if ((st = symbol_room(w, "string definition")) != CP_OK) return st;
    uint64_t bytes = d->sym_bytes - (prev ? prev->len : 0) + text->len;
    if (bytes > d->lim.max_symbol_bytes)
        return dec_fail(d, CP_ELIMIT, d->base, "defined strings past max_symbol_bytes %" PRIu64,
                        d->lim.max_symbol_bytes);
    sym_text *t = malloc(sizeof *t + text->len);
    if (!t) return CP_ENOMEM;
    t->len = text->len;
    if (text->len) memcpy(t->s, text->data, text->len);
    if (cp_u64map_put(&d->strs, id, (uint64_t)(uintptr_t)t) != CP_OK) {
        free(t);
        return CP_ENOMEM;
    }
    free(prev); /* a redefinition replaces */
    d->sym_bytes = bytes;
    return CP_OK;
}

static int read_uint(walk *w, uint64_t *v, const char *what)
{
    cp_cbt_head h;
    int st = head(w, &h);
    if (st != CP_OK) return st;
    if (h.major != CP_CBOR_UINT) return skipf(w, h.off, "%s is not an unsigned integer", what);
    *v = h.val;
    return CP_OK;
}

/* tag 1 [id, text, type] */
static int define_string(walk *w)
{
    static const char what[] = "string definition (tag 1)";
    cp_cbt_dec *d = w->d;
    seq s = {0};
    uint64_t id = 0;
    int st;
    cp_buf_reset(&d->text);
    if ((st = seq_open(w, &s, what)) || (st = seq_need(w, &s, what)) || (st = read_uint(w, &id, "string id")) ||
        (st = seq_need(w, &s, what)) || (st = put_string(w, &d->text, "defined string")) ||
        (st = seq_need(w, &s, what)) || (st = skip_item(w)) || (st = seq_end(w, &s, what)))
        return st;
    return store_string(w, id, &d->text);
}

/* tag 2 [id, classId, methodId, signatureId] */
static int define_method(walk *w)
{
    static const char what[] = "method definition (tag 2)";
    cp_cbt_dec *d = w->d;
    seq s = {0};
    uint64_t id = 0;
    method_def m;
    int st;
    if ((st = seq_open(w, &s, what)) || (st = seq_need(w, &s, what)) || (st = read_uint(w, &id, "method id")) ||
        (st = seq_need(w, &s, what)) || (st = read_uint(w, &m.cls, "class string id")) ||
        (st = seq_need(w, &s, what)) || (st = read_uint(w, &m.name, "method name string id")) ||
        (st = seq_need(w, &s, what)) || (st = read_uint(w, &m.sig, "signature string id")) ||
        (st = seq_end(w, &s, what)))
        return st;
    uint64_t ix;
    if (!cp_u64map_get(&d->meth_ix, id, &ix)) {
        if ((st = symbol_room(w, "method definition")) != CP_OK) return st;
        if (cp_grow((void **)&d->meths, &d->cap_meths, d->nmeths + 1, sizeof *d->meths, 64) != CP_OK) return CP_ENOMEM;
        ix = d->nmeths;
        if (cp_u64map_put(&d->meth_ix, id, ix) != CP_OK) return CP_ENOMEM;
        d->nmeths++;
    }
    d->meths[ix] = m;
    d->methods++;
    return CP_OK;
}

/* "<class>.<method><signature>" of method id, from the strings defined now. */
static int method_text(walk *w, uint64_t id, size_t at)
{
    cp_cbt_dec *d = w->d;
    uint64_t ix, v[3];
    if (!cp_u64map_get(&d->meth_ix, id, &ix)) return skipf(w, at, "undefined method id %" PRIu64, id);
    const method_def *m = &d->meths[ix];
    const uint64_t ids[3] = {m->cls, m->name, m->sig};
    for (int i = 0; i < 3; i++)
        if (!cp_u64map_get(&d->strs, ids[i], &v[i]))
            return skipf(w, at, "method %" PRIu64 " uses undefined string id %" PRIu64, id, ids[i]);
    cp_buf_reset(&d->method);
    for (int i = 0; i < 3; i++) {
        const sym_text *t = (const sym_text *)(uintptr_t)v[i];
        if ((i == 1 && cp_buf_putc(&d->method, '.') != CP_OK) || cp_buf_append(&d->method, t->s, t->len) != CP_OK)
            return CP_ENOMEM;
    }
    return fits(w, &d->method, at, "method text");
}

/* ---- trace records ------------------------------------------------------------------- */

static uint64_t word_at(const uint8_t *p, int big)
{
    if (big) return cp_be64(p);
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | p[i];
    return v;
}

/* A prolog or epilog: the byte string at the cursor into d->raw. */
static int word_bytes(walk *w, const char *what, size_t *at)
{
    cp_cbt_head h;
    int st = head(w, &h);
    if (st != CP_OK) return st;
    *at = h.off;
    if (h.major != CP_CBOR_BYTES) return skipf(w, h.off, "%s is not a byte string", what);
    cp_buf_reset(&w->d->raw);
    st = cp_cbt_str_append(&w->r, &h, &w->d->raw);
    return st == CP_OK ? CP_OK : internal(w, st);
}

/* tag 33 [clock, traceId] */
static int trace_begin(walk *w, int64_t *clock)
{
    static const char what[] = "TraceBegin (tag 33)";
    seq s = {0};
    cp_cbt_head h;
    int st;
    if ((st = seq_open(w, &s, what)) || (st = seq_need(w, &s, what)) || (st = head(w, &h))) return st;
    if (h.major == CP_CBOR_UINT && h.val <= INT64_MAX) *clock = (int64_t)h.val;
    else if (h.major == CP_CBOR_NINT && h.val <= INT64_MAX) *clock = -1 - (int64_t)h.val;
    else return skipf(w, h.off, "TraceBegin clock is not a 64-bit integer");
    if ((st = seq_need(w, &s, what)) || (st = value_text(w, &w->d->tid, "TraceBegin traceId"))) return st;
    return seq_end(w, &s, what);
}

/* A record's tag is read (at tag_at): its array head, prolog and TraceBegin, then BEGIN. */
static int open_record(walk *w, size_t tag_at, int big)
{
    cp_cbt_dec *d = w->d;
    frame f = {.off = tag_at, .big = (uint8_t)big};
    size_t at;
    int st;
    if ((st = seq_open(w, &f.s, "trace record")) != CP_OK) return st;
    if (!seq_has(w, &f.s)) return skipf(w, tag_at, "trace record without a prolog");
    seq_take(&f.s);
    if ((st = word_bytes(w, "prolog", &at)) != CP_OK) return st;
    if (d->raw.len != 8) return skipf(w, at, "prolog of %zu bytes (8 expected)", d->raw.len);
    const uint64_t word = word_at(d->raw.data, big);
    int has_begin = 0;
    int64_t clock = 0;
    cp_buf_reset(&d->tid);
    if (seq_has(w, &f.s)) {
        cp_cbt_head h;
        size_t save = w->r.pos;
        if ((st = head(w, &h)) != CP_OK) return st;
        if (h.major == CP_CBOR_TAG && h.val == TAG_BEGIN) {
            seq_take(&f.s);
            if ((st = trace_begin(w, &clock)) != CP_OK) return st;
            has_begin = 1;
        } else {
            w->r.pos = save;
        }
    }
    if (d->nframes == 0 && !has_begin) return skipf(w, tag_at, "trace record without TraceBegin");
    if ((st = method_text(w, word >> 40, tag_at)) != CP_OK || (st = spend(w, d->method.len + d->tid.len, tag_at)))
        return st;
    if (cp_grow((void **)&d->frames, &d->cap_frames, d->nframes + 1, sizeof *d->frames, 16) != CP_OK) return CP_ENOMEM;
    d->frames[d->nframes++] = f;
    cp_cbt_event e = {
        .type = CP_CBT_BEGIN,
        .offset = d->base + tag_at,
        .depth = (uint32_t)(d->nframes - 1),
        .big_endian = big,
        .method_id = word >> 40,
        .method = txt(&d->method),
        .start_tick = word & TSTAMP_MASK,
        .has_begin = has_begin,
        .clock_ms = clock,
        .trace_id = txt(&d->tid),
    };
    return emit(w, &e);
}

/* The byte string of head h ends the innermost record: its epilog, then END. */
static int close_record(walk *w, const cp_cbt_head *h)
{
    cp_cbt_dec *d = w->d;
    frame *f = &d->frames[d->nframes - 1];
    cp_buf_reset(&d->raw);
    int st = cp_cbt_str_append(&w->r, h, &d->raw);
    if (st != CP_OK) return internal(w, st);
    if (d->raw.len != 8 && d->raw.len != 16)
        return skipf(w, h->off, "epilog of %zu bytes (8 or 16 expected)", d->raw.len);
    if (seq_has(w, &f->s))
        return skipf(w, h->off, "byte string inside a trace record (only the prolog and the epilog are)");
    w->r.pos += f->s.indef;
    const uint64_t word = word_at(d->raw.data, f->big);
    cp_cbt_event e = {
        .type = CP_CBT_END,
        .offset = d->base + f->off,
        .depth = (uint32_t)(d->nframes - 1),
        .big_endian = f->big,
        .end_tick = word & TSTAMP_MASK,
        /* a 16-byte epilog: word 1's calls is 0 and word 2 is long_calls */
        .calls = d->raw.len == 16 ? word_at(d->raw.data + 8, f->big) : word >> 40,
    };
    d->nframes--;
    return emit(w, &e);
}

/* tag 12 {k: v, ...}: one ATTR per pair, in order. */
static int attributes(walk *w, size_t at)
{
    cp_cbt_dec *d = w->d;
    cp_cbt_head h;
    int st = head(w, &h);
    if (st != CP_OK) return st;
    if (h.major != CP_CBOR_MAP) return skipf(w, at, "attributes (tag 12) are not a map");
    for (uint64_t left = h.val; h.indef ? !cp_cbt_at_break(&w->r) : left > 0; left -= !h.indef) {
        size_t kat = w->r.pos;
        cp_buf_reset(&d->key);
        cp_buf_reset(&d->val);
        if ((st = value_text(w, &d->key, "attribute key")) || (st = value_text(w, &d->val, "attribute value")) ||
            (st = spend(w, d->key.len + d->val.len, kat)))
            return st;
        const frame *f = &d->frames[d->nframes - 1];
        cp_cbt_event e = {
            .type = CP_CBT_ATTR,
            .offset = d->base + f->off,
            .depth = (uint32_t)(d->nframes - 1),
            .key = txt(&d->key),
            .value = txt(&d->val),
        };
        if ((st = emit(w, &e)) != CP_OK) return st;
    }
    w->r.pos += h.indef;
    return CP_OK;
}

/* [class, method, file, line] -> "\n\tat class.method(file:line)"; a null file is
 * "Unknown Source", as Java prints it. */
static int stack_frame(walk *w, cp_buf *out)
{
    static const char what[] = "stack element";
    seq s = {0};
    cp_cbt_head h;
    int st;
    if ((st = seq_open(w, &s, what)) || (st = seq_need(w, &s, what))) return st;
    if (cp_buf_puts(out, "\n\tat ") != CP_OK) return CP_ENOMEM;
    if ((st = put_string(w, out, "stack element class")) || (st = seq_need(w, &s, what))) return st;
    if (cp_buf_putc(out, '.') != CP_OK) return CP_ENOMEM;
    if ((st = put_string(w, out, "stack element method")) || (st = seq_need(w, &s, what))) return st;
    if (cp_buf_putc(out, '(') != CP_OK) return CP_ENOMEM;
    size_t save = w->r.pos;
    if ((st = head(w, &h)) != CP_OK) return st;
    if (is_null(&h)) {
        if (cp_buf_puts(out, "Unknown Source") != CP_OK) return CP_ENOMEM;
    } else {
        w->r.pos = save;
        if ((st = put_string(w, out, "stack element file")) != CP_OK) return st;
    }
    if (cp_buf_putc(out, ':') != CP_OK) return CP_ENOMEM;
    if ((st = seq_need(w, &s, what)) || (st = head(w, &h))) return st;
    if (h.major != CP_CBOR_UINT && h.major != CP_CBOR_NINT)
        return skipf(w, h.off, "stack element line is not an integer");
    if ((st = scalar(w, &h, out, AS_TEXT)) != CP_OK) return st;
    if (cp_buf_putc(out, ')') != CP_OK) return CP_ENOMEM;
    return seq_end(w, &s, what);
}

/* One exception's "class: message" and frames (a null message prints the class alone,
 * as Java's Throwable.toString does). */
static int exception_body(walk *w, seq *s, cp_buf *out, size_t at)
{
    static const char what[] = "exception (tag 34)";
    cp_cbt_head h;
    seq stack = {0};
    int st;
    if ((st = seq_need(w, s, what)) || (st = skip_item(w)) || /* id: identityHashCode, not kept */
        (st = seq_need(w, s, what)) || (st = put_string(w, out, "exception class")) || (st = seq_need(w, s, what)))
        return st;
    size_t save = w->r.pos;
    if ((st = head(w, &h)) != CP_OK) return st;
    if (!is_null(&h)) {
        w->r.pos = save;
        if (cp_buf_puts(out, ": ") != CP_OK) return CP_ENOMEM;
        if ((st = put_string(w, out, "exception message")) != CP_OK) return st;
    }
    if ((st = seq_need(w, s, what)) || (st = seq_open(w, &stack, "exception stack"))) return st;
    while (seq_has(w, &stack)) {
        seq_take(&stack);
        if ((st = stack_frame(w, out)) || (st = fits(w, out, at, "exception text"))) return st;
    }
    return seq_end(w, &stack, "exception stack");
}

/* tag 34 [id, class, message, stack, cause]: the whole text, causes included. The cause
 * is the last element, so the chain is a loop; the arrays it leaves open are closed
 * innermost first once a null cause ends it. */
static int exception_text(walk *w, cp_buf *out, size_t at)
{
    static const char what[] = "exception (tag 34)";
    seq open[MAX_CAUSES + 1];
    int n = 0, st;
    for (;;) {
        cp_cbt_head h;
        if ((st = seq_open(w, &open[n], what)) || (st = exception_body(w, &open[n], out, at)) ||
            (st = seq_need(w, &open[n], what)) || (st = head(w, &h)))
            return st;
        if (is_null(&h)) break;
        if (h.major != CP_CBOR_TAG || h.val != TAG_EXCEPTION)
            return skipf(w, h.off, "exception cause is neither an exception nor null");
        if (n == MAX_CAUSES) return skipf(w, h.off, "exception cause chain longer than %d", MAX_CAUSES);
        if (cp_buf_puts(out, "\nCaused by: ") != CP_OK) return CP_ENOMEM;
        n++;
    }
    for (; n >= 0; n--)
        if ((st = seq_end(w, &open[n], what)) != CP_OK) return st;
    return fits(w, out, at, "exception text");
}

static int exception(walk *w, frame *f, size_t at)
{
    cp_cbt_dec *d = w->d;
    if (f->has_exc) return skipf(w, at, "second exception (tag 34) in one trace record");
    f->has_exc = 1;
    cp_buf_reset(&d->text);
    int st;
    if ((st = exception_text(w, &d->text, at)) || (st = spend(w, d->text.len, at))) return st;
    cp_cbt_event e = {
        .type = CP_CBT_EXCEPTION,
        .offset = d->base + f->off,
        .depth = (uint32_t)(d->nframes - 1),
        .text = txt(&d->text),
    };
    return emit(w, &e);
}

/* A record and its sub-records, each element in document order; the frame stack holds
 * the open ones. */
static int walk_record(walk *w, size_t tag_at, int big)
{
    cp_cbt_dec *d = w->d;
    d->nframes = 0;
    int st = open_record(w, tag_at, big);
    while (st == CP_OK && d->nframes) {
        frame *f = &d->frames[d->nframes - 1];
        if (!seq_has(w, &f->s)) return skipf(w, f->off, "trace record without an epilog");
        seq_take(&f->s);
        cp_cbt_head h;
        if ((st = head(w, &h)) != CP_OK) return st;
        if (h.major == CP_CBOR_BYTES) st = close_record(w, &h);
        else if (h.major != CP_CBOR_TAG) st = skipf(w, h.off, "%s inside a trace record", cp_cbt_major_name(h.major));
        else if (h.val == TAG_ATTRS) st = attributes(w, h.off);
        else if (h.val == TAG_EXCEPTION) st = exception(w, f, h.off);
        else if (h.val == TAG_TRACE_BE || h.val == TAG_TRACE_LE) st = open_record(w, h.off, h.val == TAG_TRACE_BE);
        else if (h.val == TAG_BEGIN) st = skipf(w, h.off, "TraceBegin (tag 33) not right after the prolog");
        else st = skipf(w, h.off, "tag %" PRIu64 " inside a trace record", h.val);
    }
    return st;
}

/* Check pass, then (only if it passed) delivery pass. */
static int record(walk *w, size_t tag_at, int big)
{
    const size_t start = w->r.pos;
    w->deliver = 0;
    w->budget = item_budget(w->d);
    int st = walk_record(w, tag_at, big);
    if (st != CP_OK) return st;
    w->r.pos = start;
    w->deliver = 1;
    w->budget = item_budget(w->d);
    st = walk_record(w, tag_at, big);
    if (st == SKIP) return internal(w, CP_EPROTO);
    return st;
}

/* ---- items --------------------------------------------------------------------------- */

static int process_item(cp_cbt_dec *d, const uint8_t *p, size_t n)
{
    walk w = {.d = d};
    cp_rd_init(&w.r, p, n);
    cp_cbt_head h;
    int st;
    do {
        if ((st = head(&w, &h)) != CP_OK) return st;
    } while (h.major == CP_CBOR_TAG && h.val == TAG_SELF_DESCRIBE);
    if (h.major != CP_CBOR_TAG)
        st = skipf(&w, h.off, "top-level %s (not a symbol or a trace record)", cp_cbt_major_name(h.major));
    else if (h.val == TAG_STRING_DEF) st = define_string(&w);
    else if (h.val == TAG_METHOD_DEF) st = define_method(&w);
    else if (h.val == TAG_TRACE_BE || h.val == TAG_TRACE_LE) st = record(&w, h.off, h.val == TAG_TRACE_BE);
    else st = skipf(&w, h.off, "unknown top-level tag %" PRIu64, h.val);
    if (st == SKIP) {
        cp_cbt_event e = {.type = CP_CBT_SKIPPED, .offset = d->base};
        e.text.p = d->why;
        e.text.len = strlen(d->why);
        st = deliver(d, &e);
    }
    if (st < 0 && d->status == 0)
        return dec_fail(d, st, d->base, "%s", st == CP_EABORT ? "stopped by the consumer" : cp_strstatus(st));
    if (st < 0) return st;
    d->items++;
    return CP_OK;
}

/* The current item is whole: p[0..n). */
static int item_done(cp_cbt_dec *d, const uint8_t *p, size_t n)
{
    int st = process_item(d, p, n);
    if (st != CP_OK) return st;
    d->base += n;
    cp_cbt_scan_reset(&d->scan);
    return CP_OK;
}

static int scan_failed(cp_cbt_dec *d, int st)
{
    return dec_fail(d, st, d->base + d->scan.err_pos, "%s", d->scan.why);
}

/* ---- public API ---------------------------------------------------------------------- */

cp_cbt_dec *cp_cbt_dec_new(const cp_cbt_limits *limits, const cp_cbt_sink *sink)
{
    cp_cbt_dec *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    if (limits) d->lim = *limits;
    else cp_cbt_limits_default(&d->lim);
    if (sink) d->sink = *sink;
    cp_cbt_scan_init(&d->scan, d->lim.max_item, d->lim.max_string, d->lim.max_depth);
    cp_cbt_scan_init(&d->skipper, d->lim.max_item, d->lim.max_string, d->lim.max_depth);
    cp_u64map_init(&d->strs);
    cp_u64map_init(&d->meth_ix);
    cp_buf *bufs[] = {&d->pend, &d->raw, &d->key, &d->val, &d->text, &d->method, &d->tid, &d->esc};
    for (size_t i = 0; i < CP_ARRAY_LEN(bufs); i++) cp_buf_init(bufs[i]);
    return d;
}

void cp_cbt_dec_free(cp_cbt_dec *d)
{
    if (!d) return;
    uint64_t k, v;
    for (size_t i = 0; cp_u64map_next(&d->strs, &i, &k, &v);) free((void *)(uintptr_t)v);
    cp_u64map_free(&d->strs);
    cp_u64map_free(&d->meth_ix);
    free(d->meths);
    free(d->frames);
    free(d->jstk);
    cp_cbt_scan_free(&d->scan);
    cp_cbt_scan_free(&d->skipper);
    cp_buf *bufs[] = {&d->pend, &d->raw, &d->key, &d->val, &d->text, &d->method, &d->tid, &d->esc};
    for (size_t i = 0; i < CP_ARRAY_LEN(bufs); i++) cp_buf_free(bufs[i]);
    free(d);
}

/* Items wholly inside the feed are decoded in place; only an item the feed cuts is
 * copied to pend, and later feeds add to it in doubling steps until the scanner (which
 * resumes where it stopped) finds its end, so the bytes after it go back to in-place
 * decoding. Either way each byte is scanned once. */
int cp_cbt_dec_feed(cp_cbt_dec *d, const uint8_t *p, size_t n)
{
    if (d->status < 0) return d->status;
    while (n > 0) {
        int st;
        if (d->pend.len == 0) {
            st = cp_cbt_scan_step(&d->scan, p, n);
            if (st == CP_AGAIN) { /* the scan bounds this by max_item + a head */
                if (cp_buf_append(&d->pend, p, n) != CP_OK) return dec_fail(d, CP_ENOMEM, d->base, "out of memory");
                return CP_OK;
            }
            if (st != CP_OK) return scan_failed(d, st);
            size_t len = (size_t)d->scan.pos;
            if ((st = item_done(d, p, len)) != CP_OK) return st;
            p += len;
            n -= len;
            continue;
        }
        const size_t old = d->pend.len;
        size_t take = old < 4096 ? 4096 : old;
        if (take > n) take = n;
        if (cp_buf_append(&d->pend, p, take) != CP_OK) return dec_fail(d, CP_ENOMEM, d->base, "out of memory");
        st = cp_cbt_scan_step(&d->scan, d->pend.data, d->pend.len);
        if (st == CP_AGAIN) {
            p += take;
            n -= take;
            continue;
        }
        if (st != CP_OK) return scan_failed(d, st);
        const size_t len = (size_t)d->scan.pos, used = len - old; /* > old: it was incomplete */
        st = item_done(d, d->pend.data, len);
        d->pend.len = 0;
        if (d->pend.cap > PEND_KEEP) cp_buf_free(&d->pend);
        if (st != CP_OK) return st;
        p += used;
        n -= used;
    }
    return CP_OK;
}

int cp_cbt_dec_finish(cp_cbt_dec *d)
{
    if (d->status < 0) return d->status;
    if (d->pend.len > 0)
        return dec_fail(d, CP_EPROTO, d->base, "truncated item (%zu bytes present)", d->pend.len);
    return CP_OK;
}

const char *cp_cbt_dec_error(const cp_cbt_dec *d) { return d->status < 0 ? d->err : ""; }
uint64_t cp_cbt_dec_offset(const cp_cbt_dec *d) { return d->base; }
uint64_t cp_cbt_dec_items(const cp_cbt_dec *d) { return d->items; }
uint64_t cp_cbt_dec_records(const cp_cbt_dec *d) { return d->records; }
uint64_t cp_cbt_dec_skipped(const cp_cbt_dec *d) { return d->skipped; }
uint64_t cp_cbt_dec_methods(const cp_cbt_dec *d) { return d->methods; }
