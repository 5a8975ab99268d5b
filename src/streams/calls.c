/* calls.c -- the calls stream (protocol.md §5.4): a 16-byte header (or a bare start time
 * for format 0), then one record per finished root call. Each record is parsed whole or
 * not at all, so the thread table only grows once a record is complete. */
#include "dec_internal.h"

#include <stdlib.h>

#define CALLS_MAGIC 0xFFFEFDFCu

void cp_dec_calls_free(calls_state *c)
{
    cp_buf_free(&c->names);
    free(c->name_off);
    free(c->name_len);
    free(c->params);
    free(c->values);
    memset(c, 0, sizeof *c);
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
    if (need <= *cap) return CP_OK;
    uint32_t n = *cap ? *cap : 16;
    while (n < need) n *= 2;
    void *q = realloc(*p, (size_t)n * elem);
    if (!q) return CP_ENOMEM;
    *p = q;
    *cap = n;
    return CP_OK;
}

static int add_thread(calls_state *c, cp_str16 name)
{
    uint32_t cap = c->cap_threads;
    if (grow((void **)&c->name_off, &cap, c->nthreads + 1, sizeof *c->name_off) != CP_OK) return CP_ENOMEM;
    cap = c->cap_threads;
    if (grow((void **)&c->name_len, &cap, c->nthreads + 1, sizeof *c->name_len) != CP_OK) return CP_ENOMEM;
    c->cap_threads = cap;
    if (c->names.len > UINT32_MAX - (size_t)name.n * 2) return CP_ELIMIT;
    c->name_off[c->nthreads] = (uint32_t)c->names.len;
    c->name_len[c->nthreads] = name.n;
    if (cp_buf_append(&c->names, name.be, (size_t)name.n * 2) != CP_OK) return CP_ENOMEM;
    c->nthreads++;
    return CP_OK;
}

static int parse_calls_at(cp_dec *d, cp_rd *r);

static int parse_header(cp_dec *d, cp_rd *r)
{
    calls_state *c = &d->calls;
    if (cp_rd_left(r) < 8) return CP_AGAIN;
    uint64_t first = cp_be64(r->p + r->pos);
    if ((first >> 32) == CALLS_MAGIC) {
        if (cp_rd_left(r) < 16) return CP_AGAIN;
        uint32_t fmt = (uint32_t)first;
        if (fmt > 4) return cp_dec_fail(d, CP_EPROTO, d->base + r->pos, "unknown calls format %u", fmt);
        c->format = (int32_t)fmt;
        c->time_ms = (int64_t)cp_be64(r->p + r->pos + 8);
        r->pos += 16;
    } else {
        c->format = 0;
        c->time_ms = (int64_t)first;
        r->pos += 8;
    }
    c->header_done = 1;
    d->committed = d->base + r->pos;
    return CP_OK;
}

/* Bytes the fixed-width parts of a record can take at most: the fields before the
 * thread name (5 varints), the fields after it (8 varints, 7 varlongs), and one
 * parameter's id and value count. With that much room left, varints are read without
 * per-field bounds checks (`roomy`, a constant at each call site). */
#define HEAD_MAX 25
#define BODY_MAX 110
#define PARAM_HEAD_MAX 10

#define VI(dst)                                                                                                        \
    do {                                                                                                               \
        if (roomy) (dst) = cp_rd_varint_unchecked(r);                                                                  \
        else if ((st = cp_rd_varint(r, &(dst))) != CP_OK) return st;                                                   \
    } while (0)
#define VL(dst)                                                                                                        \
    do {                                                                                                               \
        if ((st = roomy ? cp_rd_varlong_unchecked(r, &(dst)) : cp_rd_varlong(r, &(dst))) != CP_OK) return st;          \
    } while (0)

/* Fields 1-5 (time delta .. thread index). */
static inline __attribute__((always_inline)) int read_head(cp_rd *r, cp_call_rec *rec, int fmt, const int roomy)
{
    int st;
    int32_t u;
    VI(u);
    rec->time_delta = (int32_t)(((uint32_t)u >> 1) ^ (0u - ((uint32_t)u & 1u))); /* zig-zag */
    VI(rec->method);
    VI(rec->duration_ms);
    VI(rec->calls);
    if (fmt >= 1) VI(rec->thread_index);
    return CP_OK;
}

/* Fields 6-20 (logs .. parameter count). */
static inline __attribute__((always_inline)) int read_body(cp_rd *r, cp_call_rec *rec, int fmt, int32_t *np,
                                                           const int roomy)
{
    int st;
    int32_t v;
    if (fmt >= 1) {
        VI(rec->logs_written);
        VI(v);
        rec->logs_generated = (int32_t)((uint32_t)v + (uint32_t)rec->logs_written);
    }
    VI(rec->trace_file_index);
    VI(rec->buffer_offset);
    VI(rec->record_index);
    if (fmt >= 2) {
        VL(rec->cpu_time);
        VL(rec->wait_time);
        VL(rec->memory_used);
    }
    if (fmt >= 3) {
        VL(rec->file_read);
        VL(rec->file_written);
        VL(rec->net_read);
        VL(rec->net_written);
    }
    if (fmt >= 4) {
        VI(rec->transactions);
        VI(rec->queue_wait_ms);
    }
    VI(*np);
    return CP_OK;
}

static inline __attribute__((always_inline)) int read_param_head(cp_rd *r, cp_call_param *p, int32_t *nv,
                                                                 const int roomy)
{
    int st;
    VI(p->id);
    VI(*nv);
    return CP_OK;
}

#undef VI
#undef VL

/* One record. CP_AGAIN: incomplete (caller rewinds). Fills rec; params/values point into
 * the state's scratch arrays and the input. */
static inline __attribute__((always_inline)) int parse_record(cp_dec *d, cp_rd *r, cp_call_rec *rec,
                                                              int *new_thread)
{
    calls_state *c = &d->calls;
    const cp_dec_limits *lim = &d->lim;
    int fmt = c->format;
    int st;
    if (fmt < 4) memset(rec, 0, sizeof *rec); /* format 4 writes every field */
    rec->format = fmt;
    rec->thread_name.n = 0;
    rec->thread_name.be = NULL;
    *new_thread = 0;
    st = cp_rd_left(r) >= HEAD_MAX ? read_head(r, rec, fmt, 1) : read_head(r, rec, fmt, 0);
    if (st != CP_OK) return st;
    if (fmt >= 1) {
        if (rec->thread_index < 0 || (uint32_t)rec->thread_index > c->nthreads) return CP_EPROTO;
        if ((uint32_t)rec->thread_index == c->nthreads) {
            if (c->nthreads >= lim->max_threads) return CP_ELIMIT;
            if ((st = cp_rd_str16(r, lim->max_string_units, &rec->thread_name)) != CP_OK) return st;
            *new_thread = 1;
        } else {
            rec->thread_name.n = c->name_len[rec->thread_index];
            /* an empty first name leaves names.data NULL: never offset a NULL pointer */
            rec->thread_name.be = rec->thread_name.n ? c->names.data + c->name_off[rec->thread_index] : NULL;
        }
    }
    int32_t np;
    st = cp_rd_left(r) >= BODY_MAX ? read_body(r, rec, fmt, &np, 1) : read_body(r, rec, fmt, &np, 0);
    if (st != CP_OK) return st;
    if (np < 0) return CP_EPROTO;
    if ((uint32_t)np > lim->max_params) return CP_ELIMIT;
    if ((uint32_t)np > c->cap_params && grow((void **)&c->params, &c->cap_params, (uint32_t)np, sizeof *c->params) != CP_OK)
        return CP_ENOMEM;
    uint32_t nv_total = 0;
    for (int32_t i = 0; i < np; i++) {
        cp_call_param *p = &c->params[i];
        int32_t nv;
        st = cp_rd_left(r) >= PARAM_HEAD_MAX ? read_param_head(r, p, &nv, 1) : read_param_head(r, p, &nv, 0);
        if (st != CP_OK) return st;
        if (p->id < 0 || nv < 0) return CP_EPROTO;
        if ((uint32_t)nv > lim->max_values) return CP_ELIMIT;
        if (nv_total + (uint32_t)nv > c->cap_values &&
            grow((void **)&c->values, &c->cap_values, nv_total + (uint32_t)nv, sizeof *c->values) != CP_OK)
            return CP_ENOMEM;
        p->nvalues = (uint32_t)nv;
        for (int32_t k = 0; k < nv; k++)
            if ((st = cp_rd_str16(r, lim->max_string_units, &c->values[nv_total + k])) != CP_OK) return st;
        nv_total += (uint32_t)nv;
    }
    uint32_t off = 0; /* c->values may have moved while growing: set the pointers last */
    for (int32_t i = 0; i < np; i++) {
        c->params[i].values = c->params[i].nvalues ? c->values + off : NULL; /* values may be NULL */
        off += c->params[i].nvalues;
    }
    rec->nparams = (uint32_t)np;
    rec->params = c->params;
    if (rec->method < 0 || rec->duration_ms < 0 || rec->calls < 0 || rec->trace_file_index < 0 ||
        rec->buffer_offset < 0 || rec->record_index < 0)
        return CP_EPROTO;
    return CP_OK;
}

int cp_dec_parse_calls(cp_dec *d, cp_rd *rp)
{
    cp_rd local = *rp; /* a local cursor stays in registers across the inlined readers */
    cp_rd *r = &local;
    int st = parse_calls_at(d, r);
    rp->pos = local.pos;
    return st;
}

static int parse_calls_at(cp_dec *d, cp_rd *r)
{
    calls_state *c = &d->calls;
    if (!c->header_done) {
        int st = parse_header(d, r);
        if (st == CP_AGAIN) return CP_OK;
        if (st != CP_OK) return st;
    }
    while (cp_rd_left(r) > 0) {
        size_t s = r->pos;
        uint64_t at = d->base + s;
        cp_call_rec rec;
        int new_thread;
        int st = parse_record(d, r, &rec, &new_thread);
        if (st == CP_AGAIN) {
            r->pos = s;
            break;
        }
        if (st != CP_OK) {
            const char *why = st == CP_ELIMIT ? "a length or count over its limit"
                              : st == CP_ENOMEM ? "out of memory"
                                                : "implausible record (negative or out-of-table value)";
            return cp_dec_fail(d, st, at, "%s", why);
        }
        rec.offset = at;
        rec.start_ms = cp_add_wrap64(c->time_ms, rec.time_delta);
        if (new_thread) {
            /* copy the name before the callback, which may keep the index for later records */
            if (add_thread(c, rec.thread_name) != CP_OK) return cp_dec_fail(d, CP_ENOMEM, at, "out of memory");
        }
        if (d->sink.on_call && d->sink.on_call(d->sink.ud, &rec) != 0)
            return cp_dec_fail(d, CP_EABORT, at, "stopped by the consumer");
        c->time_ms = rec.start_ms;
        d->records++;
        d->committed = d->base + r->pos;
    }
    return CP_OK;
}
