/* tptp_bin.c -- the incremental .trcbin decoder (foreign-formats.md §2.1, §2.2).
 *
 * The input is a 12-byte header, padding up to the header's data offset, then messages:
 * uint16 id, uint32 size, `size` bytes of attributes, all in the header's byte order. A
 * unit (the header, a message header, a known message's body) that lies whole in a feed
 * is parsed in place; one split across feeds is gathered in bin.pend first (bounded by
 * max_message, checked before anything is gathered). Unknown messages are skipped by
 * their size without being buffered. */
#include "tptp_internal.h"

#include <string.h>

/* ---- byte order ------------------------------------------------------------------------ */

static uint64_t rd_uint(const uint8_t *p, size_t n, int big)
{
    /* the hot path of every message: whole loads, swapped when the orders differ */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    int swap = big;
#else
    int swap = !big;
#endif
    switch (n) {
    case 1: return p[0];
    case 2: {
        uint16_t v;
        memcpy(&v, p, 2);
        return swap ? __builtin_bswap16(v) : v;
    }
    case 4: {
        uint32_t v;
        memcpy(&v, p, 4);
        return swap ? __builtin_bswap32(v) : v;
    }
    case 8: {
        uint64_t v;
        memcpy(&v, p, 8);
        return swap ? __builtin_bswap64(v) : v;
    }
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v |= (uint64_t)p[big ? i : n - 1 - i] << (8 * (n - 1 - i));
    return v;
}

/* A signed n-byte two's-complement number (n = 1, 2, 4, 8), sign-extended. */
static int64_t rd_int(const uint8_t *p, size_t n, int big)
{
    uint64_t v = rd_uint(p, n, big);
    if (n < 8 && (v >> (8 * n - 1))) v |= ~(uint64_t)0 << (8 * n);
    return (int64_t)v;
}

/* ---- gathering a unit across feeds ---------------------------------------------------- */

/* Makes `need` contiguous bytes of the input available at *unit: in place when the
 * current feed holds them all (and nothing is pending), else from bin.pend. Returns 1,
 * 0 (everything left went to pend: wait for the next feed) or an error. The caller
 * empties pend once it has used the unit. */
static int take(cp_tptp_dec *d, const uint8_t **p, size_t *n, size_t need, const uint8_t **unit)
{
    cp_buf *pend = &d->bin.pend;
    if (pend->len == 0 && *n >= need) {
        *unit = *p;
    } else {
        size_t k = need - pend->len;
        if (k > *n) k = *n;
        if (cp_buf_append(pend, *p, k) != CP_OK) return cp_tptp_fail(d, CP_ENOMEM, d->fed, "out of memory");
        *p += k;
        *n -= k;
        d->fed += k;
        if (pend->len < need) return 0;
        *unit = pend->data;
        return 1;
    }
    *p += need;
    *n -= need;
    d->fed += need;
    return 1;
}

/* ---- strings ---------------------------------------------------------------------------- */

static int valid_utf8(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (s[i] < 0x80) {
            i++;
            continue;
        }
        size_t k = cp_utf8_seq(s + i, n - i);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

static int all_ascii(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 0x80) return 0;
    return 1;
}

/* One string of the message whose body is `size` bytes, as UTF-8: in place when it
 * already is, else converted into scratch. Scratch is reserved once per message for the
 * worst case (3 output bytes per input byte: an invalid byte becomes U+FFFD), so it
 * never moves while the message's earlier strings point into it. */
static int to_text(cp_tptp_dec *d, const uint8_t *s, size_t n, uint32_t size, int *reserved, cp_tptp_text *t)
{
    if (d->bin.latin1 ? all_ascii(s, n) : valid_utf8(s, n)) {
        t->p = (const char *)s;
        t->len = n;
        return CP_OK;
    }
    if (!*reserved) {
        if (cp_buf_reserve(&d->scratch, (size_t)size * 3) != CP_OK) return CP_ENOMEM;
        *reserved = 1;
    }
    size_t at = d->scratch.len;
    if (d->bin.latin1) {
        for (size_t i = 0; i < n; i++) {
            uint8_t c = s[i];
            if (c < 0x80) {
                d->scratch.data[d->scratch.len++] = c;
            } else {
                d->scratch.data[d->scratch.len++] = (uint8_t)(0xC0 | (c >> 6));
                d->scratch.data[d->scratch.len++] = (uint8_t)(0x80 | (c & 0x3F));
            }
        }
    } else if (cp_utf8_repair(&d->scratch, (const char *)s, n) != CP_OK) {
        return CP_ENOMEM;
    }
    t->p = (const char *)d->scratch.data + at;
    t->len = d->scratch.len - at;
    return CP_OK;
}

/* ---- one message ----------------------------------------------------------------------- */

/* A body cursor: the message's attribute bytes and how far they are read. */
typedef struct body {
    const uint8_t *p;
    uint32_t size, pos;
    int reserved;        /* scratch reserved for this message (to_text) */
} body;

static int short_body(cp_tptp_dec *d, const char *attr)
{
    return cp_tptp_fail(d, CP_EPROTO, d->bin.msg_off, "message %u: size %u ends inside attribute %s", d->bin.id,
                        d->bin.size, attr);
}

/* Reads one NUL-terminated string at the cursor. */
static int rd_string(cp_tptp_dec *d, body *b, const char *attr, cp_tptp_text *t)
{
    const uint8_t *s = b->p + b->pos;
    const uint8_t *nul = memchr(s, 0, b->size - b->pos);
    if (!nul) return short_body(d, attr);
    size_t n = (size_t)(nul - s);
    if (n > d->lim.max_string)
        return cp_tptp_fail(d, CP_ELIMIT, d->bin.msg_off, "message %u: attribute %s is %zu bytes (limit %u)",
                            d->bin.id, attr, n, d->lim.max_string);
    if (to_text(d, s, n, b->size, &b->reserved, t) != CP_OK)
        return cp_tptp_fail(d, CP_ENOMEM, d->bin.msg_off, "out of memory");
    b->pos += (uint32_t)n + 1;
    return CP_OK;
}

/* The element count of a String[] / Long[]: the last INT attribute before it, checked
 * against the limit and against the bytes left (each element takes at least min bytes),
 * so nothing is allocated by an unchecked count. */
static int array_count(cp_tptp_dec *d, const body *b, int64_t last_int, const char *attr, size_t min, uint32_t *count)
{
    if (last_int < 0)
        return cp_tptp_fail(d, CP_EPROTO, d->bin.msg_off, "message %u: negative stackDepth %lld for %s", d->bin.id,
                            (long long)last_int, attr);
    if (last_int > d->lim.max_stack_depth)
        return cp_tptp_fail(d, CP_ELIMIT, d->bin.msg_off, "message %u: stackDepth %lld over the limit %u", d->bin.id,
                            (long long)last_int, d->lim.max_stack_depth);
    if ((uint64_t)last_int * min > b->size - b->pos) return short_body(d, attr);
    *count = (uint32_t)last_int;
    return CP_OK;
}

static const size_t type_size[] = {
    [CP_TPTP_BYTE] = 1, [CP_TPTP_SHORT] = 2, [CP_TPTP_INT] = 4, [CP_TPTP_LONG] = 8, [CP_TPTP_DOUBLE] = 8,
};

/* Reads every attribute of the known message d->msg.def from its body into d->msg. */
static int parse_attrs(cp_tptp_dec *d, body *b)
{
    const cp_tptp_def *def = d->msg.def;
    int big = d->bin.hdr.big_endian;
    int64_t last_int = 0;
    size_t texts = 0, longs = 0;
    size_t first[CP_TPTP_MAX_ATTRS]; /* String[] / Long[]: index of the first element */
    int st;
    for (size_t i = 0; i < def->nattrs; i++) {
        const cp_tptp_attr_def *a = &def->attrs[i];
        cp_tptp_value *v = &d->msg.v[i];
        uint32_t count;
        switch (a->type) {
        case CP_TPTP_BYTE:
        case CP_TPTP_SHORT:
        case CP_TPTP_INT:
        case CP_TPTP_LONG:
        case CP_TPTP_DOUBLE: {
            size_t n = type_size[a->type];
            if (b->size - b->pos < n) return short_body(d, a->name);
            if (a->type == CP_TPTP_DOUBLE) {
                uint64_t u = rd_uint(b->p + b->pos, 8, big);
                memcpy(&v->d, &u, sizeof v->d);
            } else {
                v->i = rd_int(b->p + b->pos, n, big);
            }
            if (a->type == CP_TPTP_INT) last_int = v->i;
            b->pos += (uint32_t)n;
            break;
        }
        case CP_TPTP_STRING:
            if ((st = rd_string(d, b, a->name, &v->s)) != CP_OK) return st;
            break;
        case CP_TPTP_STRINGS:
            if ((st = array_count(d, b, last_int, a->name, 1, &count)) != CP_OK) return st;
            if (cp_tptp_reserve_texts(d, texts + count) != CP_OK)
                return cp_tptp_fail(d, CP_ENOMEM, d->bin.msg_off, "out of memory");
            first[i] = texts;
            for (uint32_t k = 0; k < count; k++)
                if ((st = rd_string(d, b, a->name, &d->texts[texts + k])) != CP_OK) return st;
            texts += count;
            v->n = count;
            break;
        case CP_TPTP_LONGS:
            if ((st = array_count(d, b, last_int, a->name, 8, &count)) != CP_OK) return st;
            if (cp_tptp_reserve_longs(d, longs + count) != CP_OK)
                return cp_tptp_fail(d, CP_ENOMEM, d->bin.msg_off, "out of memory");
            first[i] = longs;
            for (uint32_t k = 0; k < count; k++, b->pos += 8) d->longs[longs + k] = rd_int(b->p + b->pos, 8, big);
            longs += count;
            v->n = count;
            break;
        }
    }
    /* the element arrays are final only now (they may have grown) */
    for (size_t i = 0; i < def->nattrs; i++) {
        cp_tptp_value *v = &d->msg.v[i];
        if (def->attrs[i].type == CP_TPTP_STRINGS && v->n) v->strs = d->texts + first[i];
        if (def->attrs[i].type == CP_TPTP_LONGS && v->n) v->longs = d->longs + first[i];
    }
    return CP_OK;
}

/* Starts d->msg as the current message (all values zero). */
static void msg_begin(cp_tptp_dec *d, const cp_tptp_def *def)
{
    size_t n = def ? def->nattrs : 0;
    d->msg.id = d->bin.id;
    d->msg.def = def;
    d->msg.offset = d->bin.msg_off;
    d->msg.size = d->bin.size;
    d->msg.extra = 0;
    memset(d->msg.v, 0, n * sizeof d->msg.v[0]);
}

/* The system messages' effects: checked before delivery, applied to what follows. */
static int system_checks(cp_tptp_dec *d)
{
    if (d->msg.id == CP_TPTP_ENCODING) {
        cp_tptp_text name = d->msg.v[0].s;
        if (cp_tptp_encoding_kind(name.p, name.len) < 0)
            return cp_tptp_fail(d, CP_EPROTO, d->bin.msg_off, "unsupported encoding \"%.*s\" (UTF-8 or ISO-8859-1)",
                                (int)(name.len > 40 ? 40 : name.len), name.p);
    } else if (d->msg.id == CP_TPTP_FREQUENCY) {
        if (d->msg.v[0].i <= 0)
            return cp_tptp_fail(d, CP_EPROTO, d->bin.msg_off, "frequency %lld is not positive",
                                (long long)d->msg.v[0].i);
        d->frequency = d->msg.v[0].i;
    }
    return CP_OK;
}

static int known_message(cp_tptp_dec *d, const uint8_t *p)
{
    body b = {p, d->bin.size, 0, 0};
    cp_buf_reset(&d->scratch);
    msg_begin(d, cp_tptp_def_of(d->bin.id));
    int st = parse_attrs(d, &b);
    if (st == CP_OK) st = system_checks(d);
    if (st != CP_OK) return st;
    d->msg.extra = b.size - b.pos;
    d->msg.frequency = d->frequency;
    if ((st = cp_tptp_deliver(d, d->bin.msg_off + 6 + d->bin.size)) != CP_OK) return st;
    if (d->msg.id == CP_TPTP_ENCODING) d->bin.latin1 = cp_tptp_encoding_kind(d->msg.v[0].s.p, d->msg.v[0].s.len);
    return CP_OK;
}

/* ---- the header ------------------------------------------------------------------------ */

static int header(cp_tptp_dec *d, const uint8_t *h)
{
    tptp_bin_state *b = &d->bin;
    if (memcmp(h, "0TBF", 4) != 0) return cp_tptp_fail(d, CP_EPROTO, 0, "not a .trcbin file (magic is not 0TBF)");
    if (h[4] != 1) return cp_tptp_fail(d, CP_EPROTO, 4, "unsupported major version %u", h[4]);
    if (h[7] > 1) return cp_tptp_fail(d, CP_EPROTO, 7, "byte order %u is neither 0 (big) nor 1 (little)", h[7]);
    b->hdr.major = h[4];
    b->hdr.minor = h[5];
    b->hdr.platform = h[6];
    b->hdr.big_endian = h[7] == 0;
    b->hdr.data_offset = (uint32_t)rd_uint(h + 8, 4, b->hdr.big_endian);
    if (b->hdr.data_offset < 12)
        return cp_tptp_fail(d, CP_EPROTO, 8, "data offset %u is inside the 12-byte header", b->hdr.data_offset);
    if (d->sink.on_header && d->sink.on_header(d->sink.ud, &b->hdr) != 0)
        return cp_tptp_fail(d, CP_EABORT, 0, "stopped by the consumer");
    b->skip_left = b->hdr.data_offset - 12;
    b->phase = TPTP_BIN_PAD;
    return CP_OK;
}

/* ---- the feed loop --------------------------------------------------------------------- */

/* Reads a message's id and size; decides how its body is handled. */
static int message_header(cp_tptp_dec *d, const uint8_t *h)
{
    tptp_bin_state *b = &d->bin;
    b->id = (uint16_t)rd_uint(h, 2, b->hdr.big_endian);
    b->size = (uint32_t)rd_uint(h + 2, 4, b->hdr.big_endian);
    if (b->size > d->lim.max_message)
        return cp_tptp_fail(d, CP_ELIMIT, b->msg_off, "message %u: size %u over the limit %u", b->id, b->size,
                            d->lim.max_message);
    if (cp_tptp_def_of(b->id)) {
        b->phase = TPTP_BIN_BODY;
    } else {
        b->phase = TPTP_BIN_SKIP;
        b->skip_left = b->size;
    }
    return CP_OK;
}

int cp_tptp_bin_feed(cp_tptp_dec *d, const uint8_t *p, size_t n)
{
    tptp_bin_state *b = &d->bin;
    const uint8_t *unit;
    for (;;) {
        int st = CP_OK;
        switch (b->phase) {
        case TPTP_BIN_HEADER:
            if ((st = take(d, &p, &n, 12, &unit)) <= 0) return st;
            st = header(d, unit);
            break;
        case TPTP_BIN_PAD:
        case TPTP_BIN_SKIP: {
            size_t k = b->skip_left < n ? (size_t)b->skip_left : n;
            p += k;
            n -= k;
            d->fed += k;
            b->skip_left -= k;
            if (b->skip_left) return CP_OK;
            if (b->phase == TPTP_BIN_PAD) {
                d->done = d->fed;
            } else {
                msg_begin(d, NULL);
                d->msg.frequency = d->frequency;
                st = cp_tptp_deliver(d, d->fed);
            }
            b->phase = TPTP_BIN_MSGHDR;
            break;
        }
        case TPTP_BIN_MSGHDR:
            if (n == 0 && b->pend.len == 0) return CP_OK;
            if (b->pend.len == 0) b->msg_off = d->fed;
            if ((st = take(d, &p, &n, 6, &unit)) <= 0) return st;
            st = message_header(d, unit);
            break;
        case TPTP_BIN_BODY:
            if ((st = take(d, &p, &n, b->size, &unit)) <= 0) return st;
            st = known_message(d, unit);
            b->phase = TPTP_BIN_MSGHDR;
            break;
        }
        cp_buf_reset(&b->pend);
        if (st != CP_OK) return st;
    }
}

int cp_tptp_bin_finish(cp_tptp_dec *d)
{
    tptp_bin_state *b = &d->bin;
    switch (b->phase) {
    case TPTP_BIN_HEADER:
        return cp_tptp_fail(d, CP_EPROTO, 0, "truncated file header (%zu of 12 bytes)", b->pend.len);
    case TPTP_BIN_PAD:
        return cp_tptp_fail(d, CP_EPROTO, d->fed, "truncated before the data offset %u", b->hdr.data_offset);
    case TPTP_BIN_MSGHDR:
        if (b->pend.len == 0) return CP_OK;
        return cp_tptp_fail(d, CP_EPROTO, b->msg_off, "truncated message header (%zu of 6 bytes)", b->pend.len);
    case TPTP_BIN_BODY:
    case TPTP_BIN_SKIP:
        break;
    }
    uint64_t have = d->fed - b->msg_off - 6;
    return cp_tptp_fail(d, CP_EPROTO, b->msg_off, "truncated message %u (%llu of %u bytes)", b->id,
                        (unsigned long long)have, b->size);
}
