/* trace.c -- the trace stream (protocol.md §5.5): an 8-byte timer start, then chunks of
 * one thread's events ended by 0x03. Chunks have no length, so the decoder keeps the
 * chunk's running state (elapsed time, event index) and parses event by event; a partial
 * event waits for more bytes. committed advances at chunk ends only: a torn chunk is of
 * no use to anyone. */
#include "dec_internal.h"

static int emit(cp_dec *d, cp_trace_rec *t, uint64_t at)
{
    if (d->sink.on_trace && d->sink.on_trace(d->sink.ud, t) != 0)
        return cp_dec_fail(d, CP_EABORT, at, "stopped by the consumer");
    d->records++;
    return CP_OK;
}

static int bad(cp_dec *d, int st, uint64_t at, const char *what)
{
    return cp_dec_fail(d, st, at, "%s", st == CP_ELIMIT ? "string longer than the limit" : what);
}

int cp_dec_parse_trace(cp_dec *d, cp_rd *r)
{
    trace_state *ts = &d->trace;
    cp_trace_rec t;
    int st;
    memset(&t, 0, sizeof t);
    if (!ts->header_done) {
        if (cp_rd_i64(r, &ts->timer_start) != CP_OK) return CP_OK;
        ts->header_done = 1;
        d->committed = d->base + r->pos;
        t.type = CP_TRACE_HEADER;
        t.timer_start_ms = ts->timer_start;
        if ((st = emit(d, &t, 0)) != CP_OK) return st;
    }
    t.timer_start_ms = ts->timer_start;
    for (;;) {
        size_t s = r->pos;
        uint64_t at = d->base + s;
        /* every record starts clean: no field of a previous event leaks into this one */
        t.id = 0;
        t.param_type = 0;
        t.value.n = 0;
        t.value.be = NULL;
        t.ref_file = t.ref_offset = 0;
        t.time_ms = 0;
        if (!ts->in_chunk) {
            if (cp_rd_left(r) < 16) return CP_OK;
            ts->chunk_offset = at;
            ts->thread_id = (int64_t)cp_be64(r->p + s);
            ts->chunk_time = (int64_t)cp_be64(r->p + s + 8);
            r->pos += 16;
            ts->in_chunk = 1;
            ts->elapsed = 0;
            ts->index = 0;
            t.type = CP_TRACE_CHUNK_BEGIN;
            t.chunk_offset = at;
            t.offset = at;
            t.thread_id = ts->thread_id;
            t.chunk_time_ms = ts->chunk_time;
            t.index = 0;
            if ((st = emit(d, &t, at)) != CP_OK) return st;
            continue;
        }
        if (s >= r->len) return CP_OK;
        uint8_t h = r->p[s];
        unsigned type = h & 3u;
        t.chunk_offset = ts->chunk_offset;
        t.thread_id = ts->thread_id;
        t.chunk_time_ms = ts->chunk_time;
        t.offset = at;
        t.index = ts->index;
        if (type == 3) {
            if (h != 0x03) return cp_dec_fail(d, CP_EPROTO, at, "bad event header byte 0x%02x", h);
            r->pos = s + 1;
            ts->in_chunk = 0;
            d->committed = d->base + r->pos;
            t.type = CP_TRACE_CHUNK_END;
            t.time_ms = ts->timer_start + ts->elapsed;
            if ((st = emit(d, &t, at)) != CP_OK) return st;
            continue;
        }
        r->pos = s + 1;
        uint32_t delta = (h & 0x7Fu) >> 2;
        if (h & 0x80u) {
            int32_t hi;
            st = cp_rd_varint(r, &hi);
            if (st == CP_AGAIN) goto again;
            delta |= (uint32_t)hi << 5; /* int32 wrap-around, as the writer's arithmetic */
        }
        if (type == 0) {
            t.type = CP_TRACE_ENTER;
            st = cp_rd_varint(r, &t.id);
            if (st == CP_AGAIN) goto again;
            if (t.id < 0) return cp_dec_fail(d, CP_EPROTO, at, "negative method id %d", t.id);
        } else if (type == 1) {
            t.type = CP_TRACE_EXIT;
        } else {
            t.type = CP_TRACE_TAG;
            st = cp_rd_varint(r, &t.id);
            if (st == CP_OK) st = cp_rd_u8(r, &t.param_type);
            if (st == CP_AGAIN) goto again;
            if (t.id < 0) return cp_dec_fail(d, CP_EPROTO, at, "negative tag id %d", t.id);
            switch (t.param_type) {
            case 0:
            case 2:
                st = cp_rd_str16(r, d->lim.max_string_units, &t.value);
                break;
            case 1:
            case 3:
                st = cp_rd_varint(r, &t.ref_file);
                if (st == CP_OK) st = cp_rd_varint(r, &t.ref_offset);
                if (st == CP_OK && (t.ref_file < 0 || t.ref_offset < 0))
                    return cp_dec_fail(d, CP_EPROTO, at, "negative big-value reference");
                break;
            default:
                return cp_dec_fail(d, CP_EPROTO, at, "unknown tag param type %u", t.param_type);
            }
            if (st == CP_AGAIN) goto again;
            if (st != CP_OK) return bad(d, st, at, "malformed tag");
        }
        if (ts->index >= d->lim.max_chunk_events)
            return cp_dec_fail(d, CP_ELIMIT, at, "more than %u events in one chunk", d->lim.max_chunk_events);
        ts->elapsed += (int32_t)delta;
        t.time_ms = ts->timer_start + ts->elapsed;
        ts->index++;
        if ((st = emit(d, &t, at)) != CP_OK) return st;
        continue;
    again:
        r->pos = s;
        return CP_OK;
    }
}
