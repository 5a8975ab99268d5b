/* dec_internal.h -- state shared by the decoder framework (dec.c) and the per-kind
 * parsers. Not part of the public API. */
#ifndef CP_DEC_INTERNAL_H
#define CP_DEC_INTERNAL_H

#include "cp_streams.h"

#include <stdio.h>

/* Largest partial record a decoder buffers while waiting for the rest. */
#define CP_DEC_MAX_PENDING (16u << 20)
#define CP_DEC_ERR_LEN 200

typedef struct calls_state {
    int header_done;
    int32_t format;
    int64_t time_ms;        /* accumulated start time of the previous record */
    cp_buf names;           /* thread names, UTF-16BE bytes back to back */
    uint32_t *name_off;     /* per thread: byte offset in names, and unit count */
    uint32_t *name_len;
    uint32_t nthreads, cap_threads;
    cp_call_param *params;
    uint32_t cap_params;
    cp_str16 *values;
    uint32_t cap_values;
} calls_state;

typedef struct trace_state {
    int header_done;
    int in_chunk;
    int64_t timer_start;
    uint64_t chunk_offset;
    int64_t thread_id;
    int64_t chunk_time;
    int64_t elapsed;
    uint32_t index;
} trace_state;

struct cp_dec {
    cp_stream_kind kind;
    cp_dec_limits lim;
    cp_dec_sink sink;
    int status;             /* CP_OK, or the error that stopped the decoder */
    char *err;              /* allocated on failure only: idle decoders stay small */
    uint64_t fed;           /* bytes fed so far */
    uint64_t base;          /* file offset of the first byte not yet consumed */
    uint64_t committed;     /* file offset past the last complete record / phrase / chunk */
    uint64_t records;
    cp_buf pend;            /* unconsumed bytes: a partial record or phrase */
    /* phrase-framed kinds */
    int header_done;        /* suspend/params header (inside phrase 1) read */
    int64_t suspend_time;
    int32_t next_id;        /* dictionary: id of the next word */
    calls_state calls;
    trace_state trace;
};

/* Per-kind parsers. They parse as many whole units as possible from r, whose byte 0 is
 * at file offset d->base, leave r->pos after the last whole unit, advance
 * d->committed, and return CP_OK (stopped because bytes ran out) or an error (after
 * setting d->err through cp_dec_fail). */
int cp_dec_parse_calls(cp_dec *d, cp_rd *r);
int cp_dec_parse_trace(cp_dec *d, cp_rd *r);
void cp_dec_calls_free(calls_state *c);

/* Records the first error (with the file offset) and returns status. */
int cp_dec_fail(cp_dec *d, int status, uint64_t offset, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
