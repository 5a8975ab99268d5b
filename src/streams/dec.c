/* dec.c -- the incremental decoder framework: buffering across feeds, phrase framing
 * (protocol.md §4.3), and the small record kinds (dictionary, posDictionary, params,
 * suspend, sql/xml values). Calls and trace live in calls.c and trace.c. */
#include "dec_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <strings.h>

static const struct {
    const char *name;
    cp_stream_kind kind;
} kind_names[] = {
    {"trace", CP_STREAM_TRACE},       {"calls", CP_STREAM_CALLS},   {"xml", CP_STREAM_XML},
    {"sql", CP_STREAM_SQL},           {"dictionary", CP_STREAM_DICTIONARY},
    {"posDictionary", CP_STREAM_POSDICTIONARY},                     {"suspend", CP_STREAM_SUSPEND},
    {"params", CP_STREAM_PARAMS},     {"gc", CP_STREAM_GC},         {"td", CP_STREAM_TD},
    {"top", CP_STREAM_TOP},           {"heap", CP_STREAM_HEAP},
};

cp_stream_kind cp_stream_kind_from_name(const char *name, size_t n)
{
    for (size_t i = 0; i < CP_ARRAY_LEN(kind_names); i++)
        if (strlen(kind_names[i].name) == n && memcmp(kind_names[i].name, name, n) == 0) return kind_names[i].kind;
    return CP_STREAM_UNKNOWN;
}

cp_stream_kind cp_stream_kind_parse(const char *name)
{
    for (size_t i = 0; i < CP_ARRAY_LEN(kind_names); i++)
        if (strcasecmp(kind_names[i].name, name) == 0) return kind_names[i].kind;
    if (strcasecmp(name, "traces") == 0) return CP_STREAM_TRACE;
    return CP_STREAM_UNKNOWN;
}

const char *cp_stream_kind_name(cp_stream_kind k)
{
    for (size_t i = 0; i < CP_ARRAY_LEN(kind_names); i++)
        if (kind_names[i].kind == k) return kind_names[i].name;
    return "unknown";
}

int cp_stream_kind_is_phrased(cp_stream_kind k)
{
    return k == CP_STREAM_DICTIONARY || k == CP_STREAM_POSDICTIONARY || k == CP_STREAM_SUSPEND ||
           k == CP_STREAM_PARAMS;
}

int cp_stream_kind_is_decoded(cp_stream_kind k) { return k >= CP_STREAM_TRACE && k <= CP_STREAM_PARAMS; }

void cp_dec_limits_default(cp_dec_limits *l)
{
    l->max_string_units = 4u << 20;  /* 8 MiB of UTF-16 */
    l->max_phrase = 10240;           /* the agent's MAX_PHRASE_SIZE */
    l->max_params = 4096;
    l->max_values = 10000;           /* the agent keeps at most 100 */
    l->max_threads = 1u << 20;
    l->max_chunk_events = 1u << 24;
}

cp_dec *cp_dec_new(cp_stream_kind kind, const cp_dec_limits *limits, const cp_dec_sink *sink, int32_t first_id)
{
    if (!cp_stream_kind_is_decoded(kind)) return NULL;
    cp_dec *d = calloc(1, sizeof *d);
    if (!d) return NULL;
    d->kind = kind;
    if (limits) d->lim = *limits;
    else cp_dec_limits_default(&d->lim);
    if (sink) d->sink = *sink;
    d->next_id = first_id;
    cp_buf_init(&d->pend);
    cp_buf_init(&d->calls.names);
    return d;
}

void cp_dec_free(cp_dec *d)
{
    if (!d) return;
    cp_buf_free(&d->pend);
    cp_dec_calls_free(&d->calls);
    free(d->err);
    free(d);
}

int cp_dec_fail(cp_dec *d, int status, uint64_t offset, const char *fmt, ...)
{
    if (d->status < 0) return d->status;
    d->status = status;
    d->err = malloc(CP_DEC_ERR_LEN);
    if (!d->err) return status; /* cp_dec_error() then says "out of memory" */
    int n = snprintf(d->err, CP_DEC_ERR_LEN, "%s at offset %llu: ", cp_stream_kind_name(d->kind),
                     (unsigned long long)offset);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && n < CP_DEC_ERR_LEN) vsnprintf(d->err + n, CP_DEC_ERR_LEN - (size_t)n, fmt, ap);
    va_end(ap);
    return status;
}

/* ---- phrase-framed kinds ------------------------------------------------------------- */

/* The state a phrase advances. A phrase is parsed twice: once on a copy to check every
 * record, then again to deliver them, so a consumer never sees a record of a phrase that
 * turns out to be corrupt (records never cross phrases, §4.3: the phrase is the unit). */
typedef struct phrase_state {
    int header_done;        /* suspend/params header (inside phrase 1) read */
    int64_t suspend_time;
    int32_t next_id;        /* dictionary: id of the next word */
} phrase_state;

#define EMIT(cb, rec)                                                                                                  \
    do {                                                                                                               \
        if (emit) {                                                                                                    \
            if (d->sink.cb && d->sink.cb(d->sink.ud, rec) != 0)                                                        \
                return cp_dec_fail(d, CP_EABORT, at, "stopped by the consumer");                                       \
            d->records++;                                                                                              \
        }                                                                                                              \
    } while (0)

/* Parses one whole phrase body from ps; records must end exactly at its end. Delivers
 * records only when emit is set. */
static int parse_phrase_body(cp_dec *d, phrase_state *ps, cp_rd *r, uint64_t body_off, int emit)
{
    int st;
    if (!ps->header_done) {
        if (d->kind == CP_STREAM_SUSPEND) {
            st = cp_rd_i64(r, &ps->suspend_time);
            if (st != CP_OK) return cp_dec_fail(d, CP_EPROTO, body_off, "first phrase shorter than the 8-byte base time");
        } else if (d->kind == CP_STREAM_PARAMS) {
            uint8_t v;
            if (cp_rd_u8(r, &v) != CP_OK) return cp_dec_fail(d, CP_EPROTO, body_off, "empty first phrase");
            if (v != 1) return cp_dec_fail(d, CP_EPROTO, body_off, "unknown params format version %u", v);
        }
        ps->header_done = 1;
    }
    while (cp_rd_left(r) > 0) {
        size_t s = r->pos;
        uint64_t at = body_off + s;
        switch (d->kind) {
        case CP_STREAM_DICTIONARY:
        case CP_STREAM_POSDICTIONARY: {
            cp_word_rec w;
            if (d->kind == CP_STREAM_POSDICTIONARY) {
                st = cp_rd_varint(r, &w.id);
                if (st == CP_OK && (w.id < 0 || w.id == INT32_MAX))
                    return cp_dec_fail(d, CP_EPROTO, at, "dictionary id %d out of range", w.id);
            } else {
                if (ps->next_id == INT32_MAX) return cp_dec_fail(d, CP_ELIMIT, at, "more than 2^31-1 dictionary words");
                w.id = ps->next_id;
                st = CP_OK;
            }
            if (st == CP_OK) st = cp_rd_str16(r, d->lim.max_string_units, &w.word);
            if (st != CP_OK) break;
            EMIT(on_word, &w);
            if (d->kind == CP_STREAM_DICTIONARY) ps->next_id++;
            else if (w.id >= ps->next_id) ps->next_id = w.id + 1;
            continue;
        }
        case CP_STREAM_PARAMS: {
            cp_param_rec p;
            st = cp_rd_str16(r, d->lim.max_string_units, &p.name);
            if (st == CP_OK) st = cp_rd_u8(r, &p.index);
            if (st == CP_OK) st = cp_rd_u8(r, &p.list);
            if (st == CP_OK) st = cp_rd_varint(r, &p.order);
            if (st == CP_OK) st = cp_rd_str16(r, d->lim.max_string_units, &p.signature);
            if (st != CP_OK) break;
            if (p.index > 1 || p.list > 1) return cp_dec_fail(d, CP_EPROTO, at, "params flag byte is not 0 or 1");
            EMIT(on_param, &p);
            continue;
        }
        case CP_STREAM_SUSPEND: {
            cp_suspend_rec sr;
            st = cp_rd_varint(r, &sr.delta_ms);
            if (st == CP_OK) st = cp_rd_varint(r, &sr.duration_ms);
            if (st != CP_OK) break;
            ps->suspend_time = cp_add_wrap64(ps->suspend_time, sr.delta_ms);
            sr.end_ms = ps->suspend_time;
            EMIT(on_suspend, &sr);
            continue;
        }
        default:
            return cp_dec_fail(d, CP_EINVAL, at, "not a phrase-framed stream");
        }
        /* a record did not fit: records never cross phrases, so this is corruption */
        if (st == CP_AGAIN) return cp_dec_fail(d, CP_EPROTO, at, "record runs past the end of its phrase");
        return cp_dec_fail(d, st, at, "%s", st == CP_ELIMIT ? "string longer than the limit" : "malformed record");
    }
    return CP_OK;
}

static int parse_phrases(cp_dec *d, cp_rd *r)
{
    while (cp_rd_left(r) >= 4) {
        size_t s = r->pos;
        uint64_t at = d->base + s;
        int32_t len = (int32_t)cp_be32(r->p + s);
        if (len < 0 || (uint32_t)len > d->lim.max_phrase)
            return cp_dec_fail(d, CP_EPROTO, at, "phrase length %d out of range (0..%u)", len, d->lim.max_phrase);
        if (cp_rd_left(r) - 4 < (size_t)len) break;
        phrase_state ps = {d->header_done, d->suspend_time, d->next_id};
        cp_rd body;
        cp_rd_init(&body, r->p + s + 4, (size_t)len);
        int st = parse_phrase_body(d, &ps, &body, at + 4, 0); /* check the whole phrase */
        if (st != CP_OK) return st;
        ps = (phrase_state){d->header_done, d->suspend_time, d->next_id};
        cp_rd_init(&body, r->p + s + 4, (size_t)len);
        st = parse_phrase_body(d, &ps, &body, at + 4, 1); /* then deliver it */
        if (st != CP_OK) return st;
        d->header_done = ps.header_done;
        d->suspend_time = ps.suspend_time;
        d->next_id = ps.next_id;
        r->pos = s + 4 + (size_t)len;
        d->committed = d->base + r->pos;
    }
    return CP_OK;
}

/* ---- sql / xml ------------------------------------------------------------------------ */

static int parse_values(cp_dec *d, cp_rd *r)
{
    while (cp_rd_left(r) > 0) {
        size_t s = r->pos;
        uint64_t at = d->base + s;
        cp_value_rec v;
        int st = cp_rd_str16(r, d->lim.max_string_units, &v.value);
        if (st == CP_AGAIN) {
            r->pos = s;
            break;
        }
        if (st != CP_OK) return cp_dec_fail(d, st, at, "value longer than the limit");
        v.offset = at;
        const int emit = 1;
        EMIT(on_value, &v);
        d->committed = d->base + r->pos;
    }
    return CP_OK;
}

/* ---- framework ------------------------------------------------------------------------ */

static int parse(cp_dec *d, cp_rd *r)
{
    switch (d->kind) {
    case CP_STREAM_CALLS: return cp_dec_parse_calls(d, r);
    case CP_STREAM_TRACE: return cp_dec_parse_trace(d, r);
    case CP_STREAM_SQL:
    case CP_STREAM_XML: return parse_values(d, r);
    default: return parse_phrases(d, r);
    }
}

int cp_dec_feed(cp_dec *d, const uint8_t *p, size_t n)
{
    if (d->status < 0) return d->status;
    d->fed += n;
    cp_rd r;
    int st;
    if (d->pend.len == 0) { /* common case: parse straight from the caller's bytes */
        cp_rd_init(&r, p, n);
        st = parse(d, &r);
        if (st < 0) return st;
        d->base += r.pos;
        if (r.pos < n) {
            if (n - r.pos > CP_DEC_MAX_PENDING)
                return cp_dec_fail(d, CP_ELIMIT, d->base, "record larger than %u bytes", CP_DEC_MAX_PENDING);
            if (cp_buf_append(&d->pend, p + r.pos, n - r.pos) != CP_OK)
                return cp_dec_fail(d, CP_ENOMEM, d->base, "out of memory");
        }
        return CP_OK;
    }
    if (d->pend.len + n > CP_DEC_MAX_PENDING)
        return cp_dec_fail(d, CP_ELIMIT, d->base, "record larger than %u bytes", CP_DEC_MAX_PENDING);
    if (cp_buf_append(&d->pend, p, n) != CP_OK) return cp_dec_fail(d, CP_ENOMEM, d->base, "out of memory");
    cp_rd_init(&r, d->pend.data, d->pend.len);
    st = parse(d, &r);
    if (st < 0) return st;
    d->base += r.pos;
    cp_buf_consume(&d->pend, r.pos);
    if (d->pend.len == 0) cp_buf_free(&d->pend); /* an idle stream holds no buffer */
    return CP_OK;
}

int cp_dec_finish(cp_dec *d)
{
    if (d->status < 0) return d->status;
    if (d->pend.len) return CP_AGAIN;
    if (d->kind == CP_STREAM_TRACE && d->trace.in_chunk) return CP_AGAIN;
    return CP_OK;
}

size_t cp_dec_buffered(const cp_dec *d) { return d->pend.cap; }

uint64_t cp_dec_committed(const cp_dec *d) { return d->committed; }
uint64_t cp_dec_fed(const cp_dec *d) { return d->fed; }
uint64_t cp_dec_records(const cp_dec *d) { return d->records; }
cp_stream_kind cp_dec_kind(const cp_dec *d) { return d->kind; }
int32_t cp_dec_next_word_id(const cp_dec *d) { return d->next_id; }
const char *cp_dec_error(const cp_dec *d)
{
    if (d->status >= 0) return "";
    return d->err ? d->err : "out of memory while reporting a decoder error";
}
