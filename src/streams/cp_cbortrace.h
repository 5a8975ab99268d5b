/* cp_cbortrace.h -- the CBOR raw trace of Zorka-style tracers: a pure, incremental
 * decoder (bytes in, trace events out).
 *
 * The contract is ../shared/spec/foreign-formats.md §3 (it wins over seed 003). The input
 * is a sequence of top-level CBOR data items (RFC 8949, definite or indefinite lengths):
 * symbol records (tag 1 string definition, tag 2 method definition) and trace records
 * (tag 10 big-endian / tag 11 little-endian prolog and epilog words). The decoder keeps
 * the symbol tables, buffers one top-level item until it is complete, checks it whole
 * (structure, limits, every string / method reference resolved, TraceBegin present), and
 * only then delivers its events: a record that fails these checks delivers nothing but one
 * CP_CBT_SKIPPED event, so nothing half-built leaves the decoder. Malformed CBOR (a bad
 * initial byte, a length past the limits, nesting past max_depth, a break outside an
 * indefinite item, ...) stops decoding with an error naming the byte offset.
 *
 * Fed in any slicing, it delivers exactly the events of the whole input up to the cut. No
 * I/O, no clocks, no globals. Pointers in a delivered event are valid only during the
 * callback.
 *
 * Error or SKIPPED: the CBOR decides. Bytes that are not well-formed RFC 8949 (also a
 * reserved additional information 28..30, a chunk of another kind inside an indefinite
 * string, a simple value below 32 in two bytes) or that pass a limit (max_item,
 * max_string, max_depth -- tags count as nesting --, max_symbols, max_symbol_bytes) stop
 * decoding with an error. A well-formed item the trace layer cannot use is SKIPPED with a
 * reason "<what> at offset N" and decoding goes on: an unknown top-level item, a
 * definition of the wrong shape, a record without TraceBegin, an undefined string or
 * method id, and any wrong shape inside a record (content not an array, a prolog not of 8
 * bytes or an epilog not of 8/16, a (sub-)record without its epilog, a byte string
 * between them, TraceBegin anywhere but right after a prolog, a second exception in one
 * record, an element that is none of attributes / sub-record / exception, a cause chain
 * deeper than 64), or a text past max_string (all texts of one item: past 8 x max_item +
 * max_string, so string references cannot blow an item up).
 *
 * Texts (attribute keys and values, traceId): strings as they are, string references
 * resolved, integers in decimal, floats as the shortest decimal that reads back at their
 * own precision ("0.1", "1e+300", "NaN", "-Infinity"), true / false / null (undefined is
 * null), byte strings in lowercase hex, arrays and maps as compact JSON (references
 * resolved, non-string keys as JSON strings, non-finite floats as null). Tags other than
 * 6 are transparent in values; tag 55799 (self-described CBOR) is allowed before a
 * top-level item. Inside a record, attributes, sub-records and the exception come in any
 * order. An exception with a null message prints its class alone (as Java does), a
 * frame with a null file prints "Unknown Source".
 */
#ifndef CP_CBORTRACE_H
#define CP_CBORTRACE_H

#include "common/cp_common.h"

#include <stdint.h>

typedef enum cp_cbt_type {
    /* A trace record (depth 0: a top-level record = one call; deeper: a sub-record = a
     * node of its tree) starts: method, start_tick, and for depth 0 clock_ms/trace_id. */
    CP_CBT_BEGIN,
    /* One attribute of the innermost open record: key and value as text (spec §3.2:
     * integers in decimal, strings as is, anything nested as compact JSON). */
    CP_CBT_ATTR,
    /* The innermost open record's exception: text = "class: message" + one
     * "\n\tat class.method(file:line)" per frame, then "\nCaused by: " + the same for each
     * cause (spec §3.2). */
    CP_CBT_EXCEPTION,
    /* The innermost open record ends: end_tick, calls. */
    CP_CBT_END,
    /* A top-level item that makes no call: a record without TraceBegin, one with an
     * undefined string / method reference, an unknown top-level item. text = why. */
    CP_CBT_SKIPPED,
} cp_cbt_type;

typedef struct cp_cbt_text {
    const char *p;      /* UTF-8 (invalid sequences repaired to U+FFFD), not NUL-terminated */
    size_t len;
} cp_cbt_text;

typedef struct cp_cbt_event {
    cp_cbt_type type;
    uint64_t offset;        /* byte offset of the record's (or skipped item's) first byte */
    uint32_t depth;         /* 0 = top-level record */
    int big_endian;         /* BEGIN / END: tag 10 (1) or tag 11 (0) */
    /* BEGIN */
    uint64_t method_id;     /* prolog bits 40..63 */
    cp_cbt_text method;     /* "<class>.<method><signature>" from the method definition */
    uint64_t start_tick;    /* prolog bits 0..39 */
    int has_begin;          /* depth 0: always 1 (records without are SKIPPED) */
    int64_t clock_ms;       /* TraceBegin clock: epoch ms at start_tick */
    cp_cbt_text trace_id;   /* TraceBegin traceId as text */
    /* ATTR */
    cp_cbt_text key, value;
    /* EXCEPTION and SKIPPED */
    cp_cbt_text text;
    /* END */
    uint64_t end_tick;      /* epilog word 1 bits 0..39 */
    uint64_t calls;         /* epilog calls (bits 40..63), or long_calls for a 16-byte epilog */
} cp_cbt_event;

typedef struct cp_cbt_limits {
    uint32_t max_item;      /* bytes of one top-level item (default 16 MiB) */
    uint32_t max_depth;     /* CBOR nesting (default 512) */
    uint32_t max_string;    /* bytes of one string (default 4 MiB) */
    uint32_t max_symbols;   /* string + method definitions kept (default 1 Mi) */
    uint64_t max_symbol_bytes; /* bytes of defined strings kept (default 64 MiB) */
} cp_cbt_limits;

void cp_cbt_limits_default(cp_cbt_limits *l);

/* on_event may be NULL; a non-zero return stops decoding with CP_EABORT. */
typedef struct cp_cbt_sink {
    void *ud;
    int (*on_event)(void *ud, const cp_cbt_event *e);
} cp_cbt_sink;

typedef struct cp_cbt_dec cp_cbt_dec;

/* limits may be NULL for the defaults. NULL on ENOMEM. */
cp_cbt_dec *cp_cbt_dec_new(const cp_cbt_limits *limits, const cp_cbt_sink *sink);
void cp_cbt_dec_free(cp_cbt_dec *d);
/* CP_OK or a negative status; after an error every later call returns it. */
int cp_cbt_dec_feed(cp_cbt_dec *d, const uint8_t *p, size_t n);
/* End of input: CP_OK after a whole item, CP_EPROTO ("truncated ... at offset N") if an
 * item is cut, or the stored error. */
int cp_cbt_dec_finish(cp_cbt_dec *d);
const char *cp_cbt_dec_error(const cp_cbt_dec *d);     /* "<what> at offset N", or "" */
uint64_t cp_cbt_dec_offset(const cp_cbt_dec *d);       /* after the last whole item, or of the bad one */
uint64_t cp_cbt_dec_items(const cp_cbt_dec *d);        /* top-level items done (symbols included) */
uint64_t cp_cbt_dec_records(const cp_cbt_dec *d);      /* trace records delivered, sub-records included */
uint64_t cp_cbt_dec_skipped(const cp_cbt_dec *d);      /* SKIPPED events */
uint64_t cp_cbt_dec_methods(const cp_cbt_dec *d);      /* method definitions seen */

#endif
