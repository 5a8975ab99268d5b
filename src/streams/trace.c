/* trace.c -- the trace stream (protocol.md §5.5): an 8-byte timer start, then chunks of
 * one thread's events ended by 0x03. Chunks have no length, so the decoder keeps the
 * chunk's running state (elapsed time, event index) and parses event by event; a partial
 * event waits for more bytes. committed advances at chunk ends only: a torn chunk is of
 * no use to anyone.
 *
 * This is the hottest loop of ingest (most bytes are trace), so the chunk state lives in
 * locals for the whole call and the record's chunk fields are stored once per chunk. */
#include "dec_internal.h"

typedef struct trace_loop {
    cp_dec *d;
    trace_state *ts;
    cp_rd r;           /* local cursor: kept in registers */
    int64_t elapsed;
    uint32_t index;
    uint64_t records;
} trace_loop;

static void save(trace_loop *l)
{
    l->ts->elapsed = l->elapsed;
    l->ts->index = l->index;
    l->d->records += l->records;
    l->records = 0;
}

static int fail(trace_loop *l, int st, uint64_t at, const char *what)
{
    save(l);
    return cp_dec_fail(l->d, st, at, "%s", st == CP_ELIMIT ? "string longer than the limit" : what);
}

static inline int emit(trace_loop *l, const cp_trace_rec *t, uint64_t at)
{
    cp_dec *d = l->d;
    if (d->sink.on_trace && d->sink.on_trace(d->sink.ud, t) != 0) {
        save(l);
        return cp_dec_fail(d, CP_EABORT, at, "stopped by the consumer");
    }
    l->records++;
    return CP_OK;
}

/* Reads one event's body after its header byte h. CP_AGAIN if incomplete. */
static inline __attribute__((always_inline)) int read_event(trace_loop *l, uint8_t h, cp_trace_rec *t,
                                                            int32_t *delta, uint64_t at)
{
    cp_rd *r = &l->r;
    int st;
    uint32_t dt = (h & 0x7Fu) >> 2;
    if (h & 0x80u) {
        int32_t hi;
        if ((st = cp_rd_varint(r, &hi)) != CP_OK) return st;
        dt |= (uint32_t)hi << 5; /* int32 wrap-around, as the writer's arithmetic */
    }
    *delta = (int32_t)dt;
    switch (h & 3u) {
    case 0:
        t->type = CP_TRACE_ENTER;
        if ((st = cp_rd_varint(r, &t->id)) != CP_OK) return st;
        if (t->id < 0) return fail(l, CP_EPROTO, at, "negative method id");
        return CP_OK;
    case 1:
        t->type = CP_TRACE_EXIT;
        return CP_OK;
    default:
        t->type = CP_TRACE_TAG;
        if ((st = cp_rd_varint(r, &t->id)) != CP_OK) return st;
        if ((st = cp_rd_u8(r, &t->param_type)) != CP_OK) return st;
        if (t->id < 0) return fail(l, CP_EPROTO, at, "negative tag id");
        switch (t->param_type) {
        case 0:
        case 2:
            st = cp_rd_str16(r, l->d->lim.max_string_units, &t->value);
            if (st < 0) return fail(l, st, at, "malformed tag value");
            return st;
        case 1:
        case 3:
            if ((st = cp_rd_varint(r, &t->ref_file)) != CP_OK) return st;
            if ((st = cp_rd_varint(r, &t->ref_offset)) != CP_OK) return st;
            if (t->ref_file < 0 || t->ref_offset < 0) return fail(l, CP_EPROTO, at, "negative big-value reference");
            return CP_OK;
        default:
            return fail(l, CP_EPROTO, at, "unknown tag param type");
        }
    }
}

/* Every record starts clean: no field of a previous event leaks into the next one. */
static inline void clear_event(cp_trace_rec *t)
{
    t->id = 0;
    t->param_type = 0;
    t->value.n = 0;
    t->value.be = NULL;
    t->ref_file = t->ref_offset = 0;
}

static void chunk_fields(cp_trace_rec *t, const trace_state *ts)
{
    t->chunk_offset = ts->chunk_offset;
    t->thread_id = ts->thread_id;
    t->chunk_time_ms = ts->chunk_time;
    t->timer_start_ms = ts->timer_start;
}

int cp_dec_parse_trace(cp_dec *d, cp_rd *rp)
{
    trace_state *ts = &d->trace;
    trace_loop l = {.d = d, .ts = ts, .r = *rp, .elapsed = ts->elapsed, .index = ts->index};
    cp_rd *r = &l.r;
    cp_trace_rec t;
    int st;
    memset(&t, 0, sizeof t);
    if (!ts->header_done) {
        if (cp_rd_i64(r, &ts->timer_start) != CP_OK) return CP_OK;
        ts->header_done = 1;
        d->committed = d->base + r->pos;
        t.type = CP_TRACE_HEADER;
        t.timer_start_ms = ts->timer_start;
        if ((st = emit(&l, &t, 0)) != CP_OK) return st;
        rp->pos = r->pos;
    }
    chunk_fields(&t, ts);
    for (;;) {
        size_t s = r->pos;
        uint64_t at = d->base + s;
        if (!ts->in_chunk) {
            if (cp_rd_left(r) < 16) break;
            ts->chunk_offset = at;
            ts->thread_id = (int64_t)cp_be64(r->p + s);
            ts->chunk_time = (int64_t)cp_be64(r->p + s + 8);
            r->pos += 16;
            ts->in_chunk = 1;
            l.elapsed = 0;
            l.index = 0;
            chunk_fields(&t, ts);
            t.type = CP_TRACE_CHUNK_BEGIN;
            t.offset = at;
            t.index = 0;
            t.time_ms = 0;
            clear_event(&t);
            if ((st = emit(&l, &t, at)) != CP_OK) return st;
            continue;
        }
        if (s >= r->len) break;
        uint8_t h = r->p[s];
        t.offset = at;
        t.index = l.index;
        if ((h & 3u) == 3) {
            if (h != 0x03) return fail(&l, CP_EPROTO, at, "bad event header byte");
            r->pos = s + 1;
            ts->in_chunk = 0;
            d->committed = d->base + r->pos;
            t.type = CP_TRACE_CHUNK_END;
            t.time_ms = cp_add_wrap64(ts->timer_start, l.elapsed);
            clear_event(&t);
            if ((st = emit(&l, &t, at)) != CP_OK) return st;
            continue;
        }
        clear_event(&t);
        r->pos = s + 1;
        int32_t delta;
        st = read_event(&l, h, &t, &delta, at);
        if (st == CP_AGAIN) {
            r->pos = s; /* partial event: wait for more bytes */
            break;
        }
        if (st != CP_OK) return st;
        if (l.index >= d->lim.max_chunk_events) {
            save(&l);
            return cp_dec_fail(d, CP_ELIMIT, at, "more than %u events in one chunk", d->lim.max_chunk_events);
        }
        l.elapsed += delta;
        t.time_ms = cp_add_wrap64(ts->timer_start, l.elapsed);
        l.index++;
        if ((st = emit(&l, &t, at)) != CP_OK) return st;
    }
    save(&l);
    rp->pos = r->pos;
    return CP_OK;
}
