/* thrift.c -- the Thrift compact protocol (parquet.md §2): just what Parquet metadata
 * uses. The writer appends to a cp_buf; the reader is a bounded cursor over untrusted
 * bytes that can skip any value, so fields added by newer writers are ignored. */
#include "pq_internal.h"

/* ---- writer ----------------------------------------------------------------------------- */

size_t pq_put_uvarint(uint8_t *dst, uint64_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        dst[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    dst[n++] = (uint8_t)v;
    return n;
}

void pq_tw_init(pq_tw *w, cp_buf *out)
{
    w->out = out;
    w->err = CP_OK;
    w->depth = 0;
    w->last[0] = 0;
}

static void put(pq_tw *w, const void *p, size_t n)
{
    if (w->err == CP_OK) w->err = cp_buf_append(w->out, p, n);
}

static void put_uvarint(pq_tw *w, uint64_t v)
{
    uint8_t tmp[10];
    put(w, tmp, pq_put_uvarint(tmp, v));
}

/* Short form when the id grows by 1..15, else the long form (type byte, zigzag i16). */
static void field(pq_tw *w, int id, int type)
{
    int delta = id - w->last[w->depth];
    if (delta > 0 && delta <= 15) {
        uint8_t b = (uint8_t)(delta << 4 | type);
        put(w, &b, 1);
    } else {
        uint8_t b = (uint8_t)type;
        put(w, &b, 1);
        put_uvarint(w, pq_zigzag(id));
    }
    w->last[w->depth] = (int16_t)id;
}

static void push(pq_tw *w)
{
    if (w->depth + 1 >= PQ_TW_DEPTH) { /* our own messages are never this deep */
        w->err = CP_EINVAL;
        return;
    }
    w->last[++w->depth] = 0;
}

void pq_tw_i8(pq_tw *w, int id, int8_t v)
{
    field(w, id, PQ_T_I8);
    uint8_t b = (uint8_t)v;
    put(w, &b, 1);
}

void pq_tw_i32(pq_tw *w, int id, int32_t v)
{
    field(w, id, PQ_T_I32);
    put_uvarint(w, pq_zigzag(v));
}

void pq_tw_i64(pq_tw *w, int id, int64_t v)
{
    field(w, id, PQ_T_I64);
    put_uvarint(w, pq_zigzag(v));
}

void pq_tw_bool(pq_tw *w, int id, int v) { field(w, id, v ? PQ_T_TRUE : PQ_T_FALSE); }

void pq_tw_binary(pq_tw *w, int id, const void *p, size_t n)
{
    field(w, id, PQ_T_BINARY);
    pq_tw_elem_binary(w, p, n);
}

void pq_tw_string(pq_tw *w, int id, const char *s) { pq_tw_binary(w, id, s, strlen(s)); }

void pq_tw_struct_begin(pq_tw *w, int id)
{
    field(w, id, PQ_T_STRUCT);
    push(w);
}

void pq_tw_struct_end(pq_tw *w)
{
    uint8_t stop = 0;
    put(w, &stop, 1);
    if (w->depth > 0) w->depth--;
}

void pq_tw_empty_struct(pq_tw *w, int id)
{
    pq_tw_struct_begin(w, id);
    pq_tw_struct_end(w);
}

void pq_tw_list_begin(pq_tw *w, int id, int elem_type, size_t n)
{
    field(w, id, PQ_T_LIST);
    if (n < 15) {
        uint8_t b = (uint8_t)(n << 4 | (size_t)elem_type);
        put(w, &b, 1);
    } else {
        uint8_t b = (uint8_t)(0xF0 | elem_type);
        put(w, &b, 1);
        put_uvarint(w, n);
    }
}

void pq_tw_elem_i32(pq_tw *w, int32_t v) { put_uvarint(w, pq_zigzag(v)); }

void pq_tw_elem_binary(pq_tw *w, const void *p, size_t n)
{
    put_uvarint(w, n);
    put(w, p, n);
}

void pq_tw_elem_struct_begin(pq_tw *w) { push(w); }

/* ---- reader ----------------------------------------------------------------------------- */

static int fail(pq_tr *r, const char *why)
{
    if (!r->why) r->why = why;
    return CP_ECORRUPT;
}

int pq_tr_uvarint(pq_tr *r, uint64_t *v)
{
    uint64_t acc = 0;
    for (int i = 0; i < 10; i++) {
        if (r->pos >= r->len) return fail(r, "truncated varint");
        uint8_t b = r->p[r->pos++];
        if (i == 9 && b > 1) return fail(r, "varint over 64 bits");
        acc |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            *v = acc;
            return CP_OK;
        }
    }
    return fail(r, "varint over 10 bytes");
}

int pq_tr_field(pq_tr *r, int16_t *last, int16_t *id, int *type)
{
    if (r->pos >= r->len) return fail(r, "truncated struct");
    uint8_t b = r->p[r->pos++];
    *type = b & 0x0F;
    if (*type == PQ_T_STOP) {
        if (b != 0) return fail(r, "bad field header");
        *id = 0;
        return CP_OK;
    }
    if (*type > PQ_T_UUID) return fail(r, "unknown type code");
    int delta = b >> 4;
    if (delta) {
        int v = *last + delta;
        if (v > INT16_MAX) return fail(r, "field id over 32767");
        *id = (int16_t)v;
    } else {
        uint64_t z;
        if (pq_tr_uvarint(r, &z) != CP_OK) return CP_ECORRUPT;
        int64_t v = pq_unzigzag(z);
        if (v < INT16_MIN || v > INT16_MAX) return fail(r, "field id over 16 bits");
        *id = (int16_t)v;
    }
    *last = *id;
    return CP_OK;
}

int pq_tr_i64(pq_tr *r, int type, int64_t *v)
{
    if (type == PQ_T_I8) {
        if (r->pos >= r->len) return fail(r, "truncated i8");
        *v = (int8_t)r->p[r->pos++];
        return CP_OK;
    }
    if (type != PQ_T_I16 && type != PQ_T_I32 && type != PQ_T_I64) return fail(r, "integer field of another type");
    uint64_t z;
    if (pq_tr_uvarint(r, &z) != CP_OK) return CP_ECORRUPT;
    *v = pq_unzigzag(z);
    if (type == PQ_T_I16 && (*v < INT16_MIN || *v > INT16_MAX)) return fail(r, "i16 out of range");
    if (type == PQ_T_I32 && (*v < INT32_MIN || *v > INT32_MAX)) return fail(r, "i32 out of range");
    return CP_OK;
}

int pq_tr_i32(pq_tr *r, int type, int32_t *v)
{
    int64_t x;
    if (pq_tr_i64(r, type, &x) != CP_OK) return CP_ECORRUPT;
    if (x < INT32_MIN || x > INT32_MAX) return fail(r, "i32 out of range");
    *v = (int32_t)x;
    return CP_OK;
}

int pq_tr_bool(pq_tr *r, int type, int elem, int *v)
{
    if (type != PQ_T_TRUE && type != PQ_T_FALSE) return fail(r, "bool field of another type");
    if (!elem) {
        *v = type == PQ_T_TRUE;
        return CP_OK;
    }
    if (r->pos >= r->len) return fail(r, "truncated bool");
    *v = r->p[r->pos++] == 1;
    return CP_OK;
}

int pq_tr_binary(pq_tr *r, int type, const uint8_t **p, size_t *n)
{
    if (type != PQ_T_BINARY) return fail(r, "binary field of another type");
    uint64_t len;
    if (pq_tr_uvarint(r, &len) != CP_OK) return CP_ECORRUPT;
    if (len > pq_tr_left(r)) return fail(r, "binary longer than the message");
    *p = r->p + r->pos;
    *n = (size_t)len;
    r->pos += (size_t)len;
    return CP_OK;
}

int pq_tr_list(pq_tr *r, int type, int *elem_type, uint32_t *n)
{
    if (type != PQ_T_LIST && type != PQ_T_SET) return fail(r, "list field of another type");
    if (r->pos >= r->len) return fail(r, "truncated list");
    uint8_t b = r->p[r->pos++];
    uint64_t size = b >> 4;
    *elem_type = b & 0x0F;
    if (*elem_type == PQ_T_STOP || *elem_type > PQ_T_UUID) return fail(r, "bad list element type");
    if (size == 15 && pq_tr_uvarint(r, &size) != CP_OK) return CP_ECORRUPT;
    /* every element takes at least one byte, so a larger count is a lie */
    if (size > pq_tr_left(r)) return fail(r, "list longer than the message");
    *n = (uint32_t)size;
    return CP_OK;
}

int pq_tr_expect(pq_tr *r, int type, int want)
{
    return type == want ? CP_OK : fail(r, "field of an unexpected type");
}

static int skip(pq_tr *r, int type, int elem, int depth)
{
    if (depth > PQ_TR_DEPTH) return fail(r, "nesting too deep");
    uint64_t u;
    switch (type) {
    case PQ_T_TRUE:
    case PQ_T_FALSE:
    case PQ_T_I8:
        if (!elem && type != PQ_T_I8) return CP_OK; /* a bool field lives in its header */
        if (r->pos >= r->len) return fail(r, "truncated value");
        r->pos++;
        return CP_OK;
    case PQ_T_I16:
    case PQ_T_I32:
    case PQ_T_I64:
        return pq_tr_uvarint(r, &u);
    case PQ_T_DOUBLE:
    case PQ_T_UUID: {
        size_t n = type == PQ_T_DOUBLE ? 8 : 16;
        if (pq_tr_left(r) < n) return fail(r, "truncated value");
        r->pos += n;
        return CP_OK;
    }
    case PQ_T_BINARY: {
        const uint8_t *p;
        size_t n;
        return pq_tr_binary(r, type, &p, &n);
    }
    case PQ_T_LIST:
    case PQ_T_SET: {
        int et;
        uint32_t n;
        if (pq_tr_list(r, type, &et, &n) != CP_OK) return CP_ECORRUPT;
        for (uint32_t i = 0; i < n; i++)
            if (skip(r, et, 1, depth + 1) != CP_OK) return CP_ECORRUPT;
        return CP_OK;
    }
    case PQ_T_MAP: {
        if (pq_tr_uvarint(r, &u) != CP_OK) return CP_ECORRUPT;
        if (u == 0) return CP_OK;
        if (u > pq_tr_left(r)) return fail(r, "map longer than the message");
        if (r->pos >= r->len) return fail(r, "truncated map");
        uint8_t kv = r->p[r->pos++];
        int kt = kv >> 4, vt = kv & 0x0F;
        if (kt == PQ_T_STOP || kt > PQ_T_UUID || vt == PQ_T_STOP || vt > PQ_T_UUID) return fail(r, "bad map types");
        for (uint64_t i = 0; i < u; i++)
            if (skip(r, kt, 1, depth + 1) != CP_OK || skip(r, vt, 1, depth + 1) != CP_OK) return CP_ECORRUPT;
        return CP_OK;
    }
    case PQ_T_STRUCT: {
        int16_t last = 0, id;
        int ft;
        for (;;) {
            if (pq_tr_field(r, &last, &id, &ft) != CP_OK) return CP_ECORRUPT;
            if (ft == PQ_T_STOP) return CP_OK;
            if (skip(r, ft, 0, depth + 1) != CP_OK) return CP_ECORRUPT;
        }
    }
    default:
        return fail(r, "unknown type code");
    }
}

int pq_tr_skip(pq_tr *r, int type, int elem) { return skip(r, type, elem, 0); }
