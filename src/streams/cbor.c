/* cbor.c -- the generic CBOR layer (cbor_internal.h): a resumable well-formedness scanner
 * that finds where one data item ends, readers over accepted items, and float text. */
#include "streams/cbor_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

/* Kinds of open levels. Definite ones count down the items still to come; a tag is a
 * container of one item, so tag chains are bounded by max_depth like any nesting. */
enum { LV_ARRAY, LV_MAP, LV_TAG, LV_IARRAY, LV_IMAP, LV_IBYTES, LV_ITEXT };

void cp_cbt_scan_init(cp_cbt_scan *s, uint64_t max_item, uint64_t max_string, uint32_t max_depth)
{
    memset(s, 0, sizeof *s);
    s->max_item = max_item;
    s->max_string = max_string;
    s->max_depth = max_depth;
}

void cp_cbt_scan_free(cp_cbt_scan *s)
{
    free(s->stk);
    s->stk = NULL;
    s->cap = s->depth = 0;
}

void cp_cbt_scan_reset(cp_cbt_scan *s)
{
    s->depth = 0;
    s->pos = 0;
    s->done = 0;
    s->err_pos = 0;
    s->why[0] = '\0';
}

static int fail(cp_cbt_scan *s, int status, uint64_t at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(cp_cbt_scan *s, int status, uint64_t at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->why, sizeof s->why, fmt, ap);
    va_end(ap);
    s->err_pos = at;
    return status;
}

static int push(cp_cbt_scan *s, uint8_t kind, uint64_t left, uint64_t at)
{
    if (s->depth >= s->max_depth)
        return fail(s, CP_ELIMIT, at, "nesting deeper than max_depth %" PRIu32, s->max_depth);
    if (cp_grow((void **)&s->stk, &s->cap, s->depth + 1, sizeof *s->stk, 16) != CP_OK)
        return fail(s, CP_ENOMEM, at, "out of memory");
    s->stk[s->depth].kind = kind;
    s->stk[s->depth].left = left;
    s->depth++;
    return CP_OK;
}

/* One item (scalar, whole string or closed container) is done: count it in its parent,
 * closing every definite level it completes. */
static void item_done(cp_cbt_scan *s)
{
    while (s->depth) {
        cp_cbt_level *t = &s->stk[s->depth - 1];
        switch (t->kind) {
        case LV_ARRAY:
        case LV_MAP:
        case LV_TAG:
            if (--t->left) return;
            s->depth--;
            break;
        case LV_IMAP:
            t->left++; /* parity: a break must not follow a key */
            return;
        default:
            return;
        }
    }
    s->done = 1;
}

const char *cp_cbt_major_name(uint8_t major)
{
    static const char *const names[] = {"unsigned integer", "negative integer", "byte string", "text string",
                                        "array", "map", "tag", "simple value"};
    return names[major & 7];
}

/* The break byte: ends the innermost indefinite-length item. */
static int scan_break(cp_cbt_scan *s, uint64_t at)
{
    cp_cbt_level *t = s->depth ? &s->stk[s->depth - 1] : NULL;
    if (!t || t->kind < LV_IARRAY) return fail(s, CP_EPROTO, at, "break (0xff) outside an indefinite-length item");
    if (t->kind == LV_IMAP && (t->left & 1)) return fail(s, CP_EPROTO, at, "break after a map key with no value");
    s->pos = at + 1;
    s->depth--;
    item_done(s);
    return CP_OK;
}

/* A definite string of n bytes whose head ends at s->pos: checked against the limits
 * before anything is skipped (a length of 2^63 is refused here, nothing allocated). */
static int scan_string(cp_cbt_scan *s, uint64_t n, uint64_t at)
{
    if (n > s->max_string)
        return fail(s, CP_ELIMIT, at, "string of %" PRIu64 " bytes past max_string %" PRIu64, n, s->max_string);
    cp_cbt_level *t = s->depth ? &s->stk[s->depth - 1] : NULL;
    if (t && (t->kind == LV_IBYTES || t->kind == LV_ITEXT)) {
        t->left += n; /* both <= max_string: no overflow */
        if (t->left > s->max_string)
            return fail(s, CP_ELIMIT, at, "chunked string of %" PRIu64 " bytes past max_string %" PRIu64, t->left,
                        s->max_string);
    }
    if (n > s->max_item - s->pos)
        return fail(s, CP_ELIMIT, 0, "item longer than max_item %" PRIu64 " bytes", s->max_item);
    s->pos += n;
    item_done(s);
    return CP_OK;
}

/* A definite array or map of n entries (2n items for a map). Every item takes at least a
 * byte, so a count the rest of max_item cannot hold is refused before it is believed. */
static int scan_container(cp_cbt_scan *s, uint8_t major, uint64_t n, uint64_t at)
{
    uint64_t room = s->max_item - s->pos;
    if (major == CP_CBOR_MAP ? n > room / 2 : n > room)
        return fail(s, CP_ELIMIT, at, "%s of %" PRIu64 " entries past max_item %" PRIu64 " bytes",
                    cp_cbt_major_name(major), n, s->max_item);
    if (n == 0) {
        item_done(s);
        return CP_OK;
    }
    return push(s, major == CP_CBOR_MAP ? LV_MAP : LV_ARRAY, major == CP_CBOR_MAP ? 2 * n : n, at);
}

int cp_cbt_scan_step(cp_cbt_scan *s, const uint8_t *p, size_t len)
{
    for (;;) {
        if (s->done) return s->pos <= len ? CP_OK : CP_AGAIN;
        if (s->pos >= len) return CP_AGAIN;
        const uint64_t at = s->pos;
        const uint8_t ib = p[at], major = ib >> 5, ai = ib & 31;
        int st;
        if (ib == CP_CBOR_BREAK) {
            if ((st = scan_break(s, at)) != CP_OK) return st;
            continue;
        }
        if (ai >= 28 && ai <= 30) return fail(s, CP_EPROTO, at, "reserved additional information %u", ai);
        if (ai == 31 && (major <= CP_CBOR_NINT || major == CP_CBOR_TAG || major == CP_CBOR_SIMPLE))
            return fail(s, CP_EPROTO, at, "%s with an indefinite length", cp_cbt_major_name(major));
        const cp_cbt_level *t = s->depth ? &s->stk[s->depth - 1] : NULL;
        if (t && (t->kind == LV_IBYTES || t->kind == LV_ITEXT)) {
            const uint8_t want = t->kind == LV_IBYTES ? CP_CBOR_BYTES : CP_CBOR_TEXT;
            if (ai == 31 || major != want)
                return fail(s, CP_EPROTO, at, "%s inside an indefinite-length %s",
                            ai == 31 ? "indefinite string" : cp_cbt_major_name(major), cp_cbt_major_name(want));
        }
        const size_t extra = ai < 24 || ai == 31 ? 0 : (size_t)1 << (ai - 24);
        if (len - at < 1 + extra) return CP_AGAIN; /* the head is cut: wait, and read it whole */
        if (at + 1 + extra > s->max_item)
            return fail(s, CP_ELIMIT, 0, "item longer than max_item %" PRIu64 " bytes", s->max_item);
        uint64_t v = ai < 24 ? ai : 0;
        for (size_t i = 0; i < extra; i++) v = v << 8 | p[at + 1 + i];
        s->pos = at + 1 + extra;
        switch (major) {
        case CP_CBOR_UINT:
        case CP_CBOR_NINT:
            item_done(s);
            break;
        case CP_CBOR_BYTES:
        case CP_CBOR_TEXT:
            if (ai == 31) st = push(s, major == CP_CBOR_BYTES ? LV_IBYTES : LV_ITEXT, 0, at);
            else st = scan_string(s, v, at);
            if (st != CP_OK) return st;
            break;
        case CP_CBOR_ARRAY:
        case CP_CBOR_MAP:
            if (ai == 31) st = push(s, major == CP_CBOR_MAP ? LV_IMAP : LV_IARRAY, 0, at);
            else st = scan_container(s, major, v, at);
            if (st != CP_OK) return st;
            break;
        case CP_CBOR_TAG:
            if ((st = push(s, LV_TAG, 1, at)) != CP_OK) return st;
            break;
        default:
            /* RFC 8949 §3.3: simple values below 32 only ever take the one-byte form */
            if (ai == 24 && v < 32) return fail(s, CP_EPROTO, at, "simple value %" PRIu64 " in two bytes", v);
            item_done(s);
            break;
        }
    }
}

/* ---- readers ----------------------------------------------------------------------------- */

int cp_cbt_head_read(cp_rd *r, cp_cbt_head *h)
{
    if (r->pos >= r->len) return CP_EPROTO;
    const uint8_t ib = r->p[r->pos];
    h->off = r->pos;
    h->major = ib >> 5;
    h->ai = ib & 31;
    h->indef = h->ai == 31;
    h->val = h->ai < 24 ? h->ai : 0;
    if (h->ai >= 28 && h->ai <= 30) return CP_EPROTO;
    const size_t extra = h->ai < 24 || h->indef ? 0 : (size_t)1 << (h->ai - 24);
    if (r->len - r->pos < 1 + extra) return CP_EPROTO;
    for (size_t i = 0; i < extra; i++) h->val = h->val << 8 | r->p[r->pos + 1 + i];
    r->pos += 1 + extra;
    return CP_OK;
}

static int append_definite(cp_rd *r, uint64_t n, cp_buf *out)
{
    if (n > cp_rd_left(r)) return CP_EPROTO;
    if (cp_buf_append(out, r->p + r->pos, (size_t)n) != CP_OK) return CP_ENOMEM;
    r->pos += (size_t)n;
    return CP_OK;
}

int cp_cbt_str_append(cp_rd *r, const cp_cbt_head *h, cp_buf *out)
{
    if (h->major != CP_CBOR_BYTES && h->major != CP_CBOR_TEXT) return CP_EPROTO;
    if (!h->indef) return append_definite(r, h->val, out);
    for (;;) {
        if (cp_cbt_at_break(r)) {
            r->pos++;
            return CP_OK;
        }
        cp_cbt_head c;
        if (cp_cbt_head_read(r, &c) != CP_OK || c.major != h->major || c.indef) return CP_EPROTO;
        int st = append_definite(r, c.val, out);
        if (st != CP_OK) return st;
    }
}

int cp_cbt_skip(cp_rd *r, cp_cbt_scan *s)
{
    cp_cbt_scan_reset(s);
    int st = cp_cbt_scan_step(s, r->p + r->pos, cp_rd_left(r));
    const uint64_t n = s->pos;
    cp_cbt_scan_reset(s);
    if (st == CP_ENOMEM) return st;
    if (st != CP_OK) return CP_EPROTO;
    r->pos += (size_t)n;
    return CP_OK;
}

/* ---- floats ------------------------------------------------------------------------------ */

double cp_cbt_half(uint16_t bits)
{
    int exp = (bits >> 10) & 0x1f;
    double mant = bits & 0x3ff, v;
    if (exp == 0) v = ldexp(mant, -24);
    else if (exp == 31) v = mant == 0 ? INFINITY : NAN;
    else v = ldexp(mant + 1024, exp - 25);
    return bits & 0x8000 ? -v : v;
}

/* Does the decimal text s read back as the half-precision value with these bits? The
 * text's value must lie strictly closer to it than half-way to either neighbour (so a
 * tie never counts: a longer text is chosen then, never a wrong one). */
static int half_roundtrips(const char *s, uint16_t bits)
{
    double v = cp_cbt_half(bits), d = strtod(s, NULL);
    if (d == v) return 1;
    if (signbit(d) != signbit(v)) return 0;
    uint16_t m = bits & 0x7fff;
    double a = fabs(v), lo = m ? a - cp_cbt_half((uint16_t)(m - 1)) : cp_cbt_half(1);
    double hi = m < 0x7bff ? cp_cbt_half((uint16_t)(m + 1)) - a : lo;
    double diff = fabs(d) - a;
    return diff >= 0 ? diff < hi / 2 : -diff < lo / 2;
}

size_t cp_cbt_float_text(const cp_cbt_head *h, char out[32])
{
    double v;
    float f = 0;
    int max_prec;
    if (h->ai == 25) {
        v = cp_cbt_half((uint16_t)h->val);
        max_prec = 5;
    } else if (h->ai == 26) {
        uint32_t b = (uint32_t)h->val;
        memcpy(&f, &b, 4);
        v = f;
        max_prec = 9;
    } else {
        uint64_t b = h->val;
        memcpy(&v, &b, 8);
        max_prec = 17;
    }
    if (isnan(v)) return (size_t)snprintf(out, 32, "NaN");
    if (isinf(v)) return (size_t)snprintf(out, 32, "%s", v < 0 ? "-Infinity" : "Infinity");
    /* the shortest precision that reads back as the same value; the longest always does */
    int n = 0;
    for (int prec = 1; prec <= max_prec; prec++) {
        n = snprintf(out, 32, "%.*g", prec, v);
        int ok = h->ai == 25 ? half_roundtrips(out, (uint16_t)h->val)
                 : h->ai == 26 ? strtof(out, NULL) == f
                               : strtod(out, NULL) == v;
        if (ok) break;
    }
    return (size_t)n;
}
