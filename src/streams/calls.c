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

/* One record. CP_AGAIN: incomplete (caller rewinds). Fills rec; params/values point into
 * the state's scratch arrays and the input. */
static inline __attribute__((always_inline)) int parse_record(cp_dec *d, cp_rd *r, cp_call_rec *rec,
                                                              int *new_thread)
{
    calls_state *c = &d->calls;
    const cp_dec_limits *lim = &d->lim;
    int fmt = c->format;
    int st;
    int32_t v;
    memset(rec, 0, sizeof *rec);
    rec->format = fmt;
    *new_thread = 0;
#define RD(call)                                                                                                       \
    do {                                                                                                               \
        if ((st = (call)) != CP_OK) return st;                                                                         \
    } while (0)
    RD(cp_rd_zigzag(r, &rec->time_delta));
    RD(cp_rd_varint(r, &rec->method));
    RD(cp_rd_varint(r, &rec->duration_ms));
    RD(cp_rd_varint(r, &rec->calls));
    if (fmt >= 1) {
        RD(cp_rd_varint(r, &rec->thread_index));
        if (rec->thread_index < 0 || (uint32_t)rec->thread_index > c->nthreads) return CP_EPROTO;
        if ((uint32_t)rec->thread_index == c->nthreads) {
            if (c->nthreads >= lim->max_threads) return CP_ELIMIT;
            RD(cp_rd_str16(r, lim->max_string_units, &rec->thread_name));
            *new_thread = 1;
        } else {
            rec->thread_name.n = c->name_len[rec->thread_index];
            /* an empty first name leaves names.data NULL: never offset a NULL pointer */
            rec->thread_name.be = rec->thread_name.n ? c->names.data + c->name_off[rec->thread_index] : NULL;
        }
        RD(cp_rd_varint(r, &rec->logs_written));
        RD(cp_rd_varint(r, &v));
        rec->logs_generated = (int32_t)((uint32_t)v + (uint32_t)rec->logs_written);
    }
    RD(cp_rd_varint(r, &rec->trace_file_index));
    RD(cp_rd_varint(r, &rec->buffer_offset));
    RD(cp_rd_varint(r, &rec->record_index));
    if (fmt >= 2) {
        RD(cp_rd_varlong(r, &rec->cpu_time));
        RD(cp_rd_varlong(r, &rec->wait_time));
        RD(cp_rd_varlong(r, &rec->memory_used));
    }
    if (fmt >= 3) {
        RD(cp_rd_varlong(r, &rec->file_read));
        RD(cp_rd_varlong(r, &rec->file_written));
        RD(cp_rd_varlong(r, &rec->net_read));
        RD(cp_rd_varlong(r, &rec->net_written));
    }
    if (fmt >= 4) {
        RD(cp_rd_varint(r, &rec->transactions));
        RD(cp_rd_varint(r, &rec->queue_wait_ms));
    }
    int32_t np;
    RD(cp_rd_varint(r, &np));
    if (np < 0) return CP_EPROTO;
    if ((uint32_t)np > lim->max_params) return CP_ELIMIT;
    if (grow((void **)&c->params, &c->cap_params, (uint32_t)np, sizeof *c->params) != CP_OK) return CP_ENOMEM;
    uint32_t nv_total = 0;
    for (int32_t i = 0; i < np; i++) {
        cp_call_param *p = &c->params[i];
        int32_t nv;
        RD(cp_rd_varint(r, &p->id));
        RD(cp_rd_varint(r, &nv));
        if (p->id < 0 || nv < 0) return CP_EPROTO;
        if ((uint32_t)nv > lim->max_values) return CP_ELIMIT;
        if (grow((void **)&c->values, &c->cap_values, nv_total + (uint32_t)nv, sizeof *c->values) != CP_OK)
            return CP_ENOMEM;
        p->nvalues = (uint32_t)nv;
        p->values = NULL; /* set below: c->values may move while growing */
        for (int32_t k = 0; k < nv; k++) RD(cp_rd_str16(r, lim->max_string_units, &c->values[nv_total + k]));
        nv_total += (uint32_t)nv;
    }
    uint32_t off = 0;
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
#undef RD
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
