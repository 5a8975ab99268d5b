/* cp_streams.h -- pure, incremental decoders for the agent's stream files.
 *
 * One cp_dec decodes one stream *file* (the concatenated RCV_DATA payloads of one
 * handle, protocol.md §4.2). Feed it bytes in any slicing; it calls the sink once per
 * complete record, in order. No I/O, no clocks, no globals: bytes in, records out.
 *
 * Records are delivered only when complete, so a decoder fed a file cut at any byte
 * boundary produces exactly the records of the whole file. For phrase-framed streams the
 * phrase is the unit: its records are delivered only once the whole phrase has been
 * checked, so a corrupt phrase delivers nothing. Strings in records
 * (cp_str16) alias the decoder's input or its internal buffer and are valid only during
 * the callback.
 *
 * cp_dec_committed() is the file offset just past the last complete record (for
 * phrase-framed streams: the last complete phrase). Everything before it decoded
 * cleanly; bytes after it are a torn tail, or corruption if an error was reported.
 */
#ifndef CP_STREAMS_H
#define CP_STREAMS_H

#include "common/cp_common.h"

typedef enum cp_stream_kind {
    CP_STREAM_UNKNOWN = 0,
    CP_STREAM_TRACE,
    CP_STREAM_CALLS,
    CP_STREAM_XML,
    CP_STREAM_SQL,
    CP_STREAM_DICTIONARY,
    CP_STREAM_POSDICTIONARY,
    CP_STREAM_SUSPEND,
    CP_STREAM_PARAMS,
    CP_STREAM_GC,    /* legacy raw GC log text: kept raw, not decoded */
    CP_STREAM_TD,    /* known to the reference collector, never sent: kept raw */
    CP_STREAM_TOP,
    CP_STREAM_HEAP,
    CP_STREAM_KIND_COUNT
} cp_stream_kind;

/* Wire name ("trace", "posDictionary", ...) <-> kind. Lookup is case-sensitive, as the
 * agent sends it; cp_stream_kind_parse also accepts the CLI's lowercase names. */
cp_stream_kind cp_stream_kind_from_name(const char *name, size_t n);
cp_stream_kind cp_stream_kind_parse(const char *name); /* case-insensitive, for the CLI */
const char *cp_stream_kind_name(cp_stream_kind k);
int cp_stream_kind_is_phrased(cp_stream_kind k);
int cp_stream_kind_is_decoded(cp_stream_kind k); /* false for gc/td/top/heap (raw only) */

/* ---- limits (bounds on untrusted input) ---------------------------------------------- */

typedef struct cp_dec_limits {
    uint32_t max_string_units;   /* varstring length cap (UTF-16 units) */
    uint32_t max_phrase;         /* phrase length cap (agent: < 10240) */
    uint32_t max_params;         /* params per call record */
    uint32_t max_values;         /* values per call parameter */
    uint32_t max_threads;        /* thread-name table entries per calls file */
    uint32_t max_chunk_events;   /* events per trace chunk */
} cp_dec_limits;

void cp_dec_limits_default(cp_dec_limits *l);

/* ---- records ------------------------------------------------------------------------- */

typedef struct cp_word_rec { /* dictionary / posDictionary */
    int32_t id;
    cp_str16 word;
} cp_word_rec;

typedef struct cp_param_rec { /* params */
    cp_str16 name;
    uint8_t index;
    uint8_t list;
    int32_t order;
    cp_str16 signature;
} cp_param_rec;

typedef struct cp_suspend_rec {
    int64_t end_ms;       /* absolute end of the pause */
    int32_t delta_ms;
    int32_t duration_ms;
} cp_suspend_rec;

typedef struct cp_call_param {
    int32_t id;           /* dictionary id of the parameter name */
    uint32_t nvalues;
    const cp_str16 *values;
} cp_call_param;

typedef struct cp_call_rec {
    uint64_t offset;      /* file offset of the record */
    int32_t format;       /* calls file format (0..4) */
    int64_t start_ms;     /* absolute, accumulated from the header time */
    int32_t time_delta;
    int32_t method;
    int32_t duration_ms;
    int32_t calls;
    int32_t thread_index;
    cp_str16 thread_name;
    int32_t logs_written;
    int32_t logs_generated; /* wire value + logs_written */
    int32_t trace_file_index;
    int32_t buffer_offset;
    int32_t record_index;
    int64_t cpu_time, wait_time, memory_used;
    int64_t file_read, file_written, net_read, net_written;
    int32_t transactions;
    int32_t queue_wait_ms;
    uint32_t nparams;
    const cp_call_param *params;
} cp_call_rec;

typedef enum cp_trace_rec_type {
    CP_TRACE_HEADER,       /* file header: timer_start_ms set */
    CP_TRACE_CHUNK_BEGIN,  /* chunk header read: chunk_offset, thread_id, chunk_time_ms */
    CP_TRACE_ENTER,
    CP_TRACE_EXIT,
    CP_TRACE_TAG,
    CP_TRACE_CHUNK_END,    /* FINISH byte read: offset = offset of the 0x03, index = event count */
} cp_trace_rec_type;

typedef struct cp_trace_rec {
    cp_trace_rec_type type;
    int64_t timer_start_ms;
    uint64_t chunk_offset;  /* file offset of the chunk's threadId field */
    uint64_t offset;        /* file offset of this event's header byte */
    int64_t thread_id;
    int64_t chunk_time_ms;
    uint32_t index;         /* 0-based event index in the chunk */
    int64_t time_ms;        /* absolute event time */
    int32_t id;             /* method (ENTER) or tag id (TAG) */
    uint8_t param_type;     /* TAG: 0 inline, 1 xml ref, 2 indexed, 3 sql ref */
    cp_str16 value;         /* TAG types 0 and 2 */
    int32_t ref_file;       /* TAG types 1 and 3 */
    int32_t ref_offset;
} cp_trace_rec;

typedef struct cp_value_rec { /* sql / xml */
    uint64_t offset;        /* file offset of the value's varint length */
    cp_str16 value;
} cp_value_rec;

/* Sink: any callback may be NULL. A non-zero return stops decoding with CP_EABORT. */
typedef struct cp_dec_sink {
    void *ud;
    int (*on_word)(void *ud, const cp_word_rec *r);
    int (*on_param)(void *ud, const cp_param_rec *r);
    int (*on_suspend)(void *ud, const cp_suspend_rec *r);
    int (*on_call)(void *ud, const cp_call_rec *r);
    int (*on_trace)(void *ud, const cp_trace_rec *r);
    int (*on_value)(void *ud, const cp_value_rec *r);
} cp_dec_sink;

/* ---- decoder ------------------------------------------------------------------------- */

typedef struct cp_dec cp_dec;

/* first_id: the id of the first dictionary word of this file (dictionary ids continue
 * across rotated files of a connection; 0 after resetRequired=1). Ignored by other kinds.
 * limits may be NULL for defaults. Returns NULL for raw-only kinds or on ENOMEM. */
cp_dec *cp_dec_new(cp_stream_kind kind, const cp_dec_limits *limits, const cp_dec_sink *sink, int32_t first_id);
void cp_dec_free(cp_dec *d);

/* Decodes as much as possible. CP_OK (all bytes consumed or buffered for later), or a
 * negative status; after an error the decoder stays failed (every later call returns it). */
int cp_dec_feed(cp_dec *d, const uint8_t *p, size_t n);
/* End of file: CP_OK if the file ended on a record boundary, CP_AGAIN if a torn tail
 * is left (cp_dec_committed() tells where the clean part ends), or the stored error. */
int cp_dec_finish(cp_dec *d);

uint64_t cp_dec_committed(const cp_dec *d);
/* Bytes the decoder holds for a record not yet complete (its buffer's size): what an
 * agent can make the server keep by sending the start of a huge record. */
size_t cp_dec_buffered(const cp_dec *d);
uint64_t cp_dec_fed(const cp_dec *d);        /* total bytes fed */
uint64_t cp_dec_records(const cp_dec *d);    /* records delivered */
cp_stream_kind cp_dec_kind(const cp_dec *d);
int32_t cp_dec_next_word_id(const cp_dec *d); /* dictionary: id the next word will get */
/* Human-readable reason for the last error, with the file offset. */
const char *cp_dec_error(const cp_dec *d);

#endif
