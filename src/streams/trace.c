/* trace.c -- the trace stream (protocol.md §5.5): an 8-byte timer start, then chunks of
 * one thread's events ended by 0x03. Chunks have no length, so the decoder keeps the
 * chunk's running state (elapsed time, event index) and parses event by event; a partial
 * event waits for more bytes. committed advances at chunk ends only: a torn chunk is of
 * no use to anyone.
 *
 * This is the hottest loop of ingest (most bytes are trace), so the chunk state lives in
 * locals for the whole call and the record's chunk fields are stored once per chunk. */
#include "dec_internal.h"

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

/* Longest event without its string: header + delta varint + id varint + type + two
 * reference varints. With this many bytes left no varint can run out. */
#define EVENT_MAX_FIXED 21

/* Reads one event's body after its header byte h into t. `roomy` (a constant at each
 * call site) means at least EVENT_MAX_FIXED bytes remain, so varints are read without
 * bounds checks. CP_AGAIN if incomplete; on an error returns it with *why set. */
static inline __attribute__((always_inline)) int read_event(cp_rd *r, uint8_t h, uint32_t max_str, cp_trace_rec *t,
                                                            int32_t *delta, const char **why, const int roomy)
{
    int st;
#define VARINT(dst)                                                                                                    \
    do {                                                                                                               \
        if (roomy) (dst) = cp_rd_varint_unchecked(r);                                                                  \
        else if ((st = cp_rd_varint(r, &(dst))) != CP_OK) return st;                                                   \
    } while (0)
    uint32_t dt = (h & 0x7Fu) >> 2;
    if (h & 0x80u) {
        int32_t hi;
        VARINT(hi);
        dt |= (uint32_t)hi << 5; /* int32 wrap-around, as the writer's arithmetic */
    }
    *delta = (int32_t)dt;
    switch (h & 3u) {
    case 0:
        t->type = CP_TRACE_ENTER;
        VARINT(t->id);
        if (t->id < 0) return *why = "negative method id", CP_EPROTO;
        return CP_OK;
    case 1:
        t->type = CP_TRACE_EXIT;
        return CP_OK;
    default:
        t->type = CP_TRACE_TAG;
        VARINT(t->id);
        if ((st = cp_rd_u8(r, &t->param_type)) != CP_OK) return st;
        if (t->id < 0) return *why = "negative tag id", CP_EPROTO;
        switch (t->param_type) {
        case 0:
        case 2:
            st = cp_rd_str16(r, max_str, &t->value);
            if (st == CP_ELIMIT) *why = "string longer than the limit";
            return st;
        case 1:
        case 3:
            VARINT(t->ref_file);
            VARINT(t->ref_offset);
            if (t->ref_file < 0 || t->ref_offset < 0) return *why = "negative big-value reference", CP_EPROTO;
            return CP_OK;
        default:
            return *why = "unknown tag param type", CP_EPROTO;
        }
    }
#undef VARINT
}

/* The loop keeps all its state in plain locals (nothing address-taken survives the sink
 * call), so the compiler holds it in registers instead of reloading it after every
 * callback. The state goes back to the decoder once, at the end. */
static inline __attribute__((always_inline)) int parse_trace(cp_dec *d, cp_rd *rp, const int deliver)
{
    trace_state *ts = &d->trace;
    int (*const on_trace)(void *, const cp_trace_rec *) = deliver ? d->sink.on_trace : NULL;
    void *const ud = d->sink.ud;
    cp_trace_rec t;
    memset(&t, 0, sizeof t);
    if (!ts->header_done) {
        if (cp_rd_i64(rp, &ts->timer_start) != CP_OK) return CP_OK;
        ts->header_done = 1;
        d->committed = d->base + rp->pos;
        t.type = CP_TRACE_HEADER;
        t.timer_start_ms = ts->timer_start;
        if (deliver && on_trace(ud, &t) != 0) return cp_dec_fail(d, CP_EABORT, 0, "stopped by the consumer");
        d->records++;
    }
    const uint8_t *const p = rp->p;
    const size_t len = rp->len;
    const uint64_t base = d->base;
    const uint32_t max_str = d->lim.max_string_units, max_events = d->lim.max_chunk_events;
    const int64_t timer = ts->timer_start;
    size_t pos = rp->pos, committed = SIZE_MAX;
    int64_t elapsed = ts->elapsed;
    uint32_t index = ts->index;
    int in_chunk = ts->in_chunk;
    uint64_t nrec = 0;
    int st = CP_OK;
    const char *why = NULL;
    uint64_t err_at = 0;
    chunk_fields(&t, ts);
    for (;;) {
        const uint64_t at = base + pos;
        if (!in_chunk) {
            if (len - pos < 16) break;
            ts->chunk_offset = at;
            ts->thread_id = (int64_t)cp_be64(p + pos);
            ts->chunk_time = (int64_t)cp_be64(p + pos + 8);
            pos += 16;
            in_chunk = 1;
            elapsed = 0;
            index = 0;
            chunk_fields(&t, ts);
            t.type = CP_TRACE_CHUNK_BEGIN;
            t.offset = at;
            t.index = 0;
            t.time_ms = 0;
            clear_event(&t);
        } else {
            if (pos >= len) break;
            const uint8_t h = p[pos];
            t.offset = at;
            t.index = index;
            clear_event(&t);
            if ((h & 3u) == 3) {
                if (h != 0x03) {
                    st = CP_EPROTO, why = "bad event header byte", err_at = at;
                    break;
                }
                pos++;
                committed = pos;
                in_chunk = 0;
                t.type = CP_TRACE_CHUNK_END;
                t.time_ms = cp_add_wrap64(timer, elapsed);
            } else {
                cp_rd r = {p, len, pos + 1};
                int32_t delta;
                st = len - pos > EVENT_MAX_FIXED ? read_event(&r, h, max_str, &t, &delta, &why, 1)
                                                 : read_event(&r, h, max_str, &t, &delta, &why, 0);
                if (st == CP_AGAIN) { /* partial event: wait for more bytes */
                    st = CP_OK;
                    break;
                }
                if (st != CP_OK) {
                    err_at = at;
                    if (!why) why = "malformed event";
                    break;
                }
                if (index >= max_events) {
                    st = CP_ELIMIT, why = "too many events in one chunk", err_at = at;
                    break;
                }
                pos = r.pos;
                elapsed += delta;
                t.time_ms = cp_add_wrap64(timer, elapsed);
                index++;
            }
        }
        if (deliver && on_trace(ud, &t) != 0) {
            st = CP_EABORT, why = "stopped by the consumer", err_at = at;
            break;
        }
        nrec++;
    }
    ts->elapsed = elapsed;
    ts->index = index;
    ts->in_chunk = in_chunk;
    d->records += nrec;
    if (committed != SIZE_MAX) d->committed = base + committed;
    rp->pos = pos;
    if (st != CP_OK) return cp_dec_fail(d, st, err_at, "%s", why);
    return CP_OK;
}

/* Two instances of the loop: with a sink every record is built and delivered; without
 * one (validation only, as at ingest) the compiler drops all the record work. */
int cp_dec_parse_trace(cp_dec *d, cp_rd *rp)
{
    return d->sink.on_trace ? parse_trace(d, rp, 1) : parse_trace(d, rp, 0);
}
