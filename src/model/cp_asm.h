/* cp_asm.h -- call assembly for one connection (one pod restart): decoded stream records
 * in, finished calls (cp_call with its trace blob) out. protocol.md §5.4-§5.6, §7.
 *
 * Trace: while the trace stream is decoded, every root call (a depth-0 ENTER of a
 * thread) is tracked as an *extent*: where its events lie (the byte ranges of its
 * thread's chunks, across trace files) until the depth-0 EXIT. Only positions are
 * kept, not bytes. Its key is the calls record's pointer (traceFileIndex, bufferOffset =
 * the chunk's offset, recordIndex = the ENTER's index in the chunk).
 *
 * Calls: a calls record waits until its extent is complete, the sql/xml values its
 * events reference can be read, and the dictionary knows its words; then the blob is
 * built from the stream files (read through io->read) and the call is emitted. Limits:
 * a call whose trace does not complete within trace_wait_ms (or by the end of the
 * connection) is emitted without a trace and with a reason (CP_TRACE_*); a value or
 * word still missing after ref_wait_ms is emitted unresolved ("#<id>" for a word).
 *
 * Suspend: pauses are kept (the most recent max_pauses) and a call's suspend_ms is its
 * overlap with them at assembly time; the blob carries the pauses overlapping the call.
 *
 * Pure: the only I/O goes through io. Not thread-safe (one connection, one thread).
 */
#ifndef CP_ASM_H
#define CP_ASM_H

#include "model/cp_model.h"
#include "streams/cp_streams.h"

typedef struct cp_asm_io {
    void *ud;
    /* Reads up to n bytes at off of stream file (kind, file_index) into buf: bytes read
     * (short only at the end of the file), or a negative status. Only bytes already
     * stored are asked for (see size). */
    long (*read)(void *ud, cp_stream_kind kind, int32_t file_index, uint64_t off, void *buf, size_t n);
    /* Bytes of that file stored so far, or -1 if the connection has no such file. */
    int64_t (*size)(void *ud, cp_stream_kind kind, int32_t file_index);
    /* One finished call; pointers valid during the call only. Non-zero = error. */
    int (*emit)(void *ud, const cp_call *c);
    /* Where the dictionary's words are kept: a pool shared with the other assemblers of
     * the thread (it must outlive this one), or NULL for the assembler's own. */
    cp_wordpool *words;
    /* The memory the resolved-value caches of the thread's assemblers may hold together
     * (their tables and texts; it must outlive this assembler), or NULL: this cache is
     * bounded by itself only (1 MiB). */
    cp_membudget *values;
} cp_asm_io;

typedef struct cp_asm_limits {
    size_t max_pending;          /* calls waiting (default 200 000): beyond, emitted now (CP_TRACE_BACKLOG) */
    size_t max_extents;          /* extents kept (default 100 000): the oldest complete ones go first */
    size_t max_trace_bytes;      /* trace bytes per call (default 64 MiB): beyond -> CP_TRACE_TOO_LARGE */
    size_t max_values_bytes;     /* resolved sql/xml text per call (default 64 MiB): beyond -> unresolved */
    size_t max_pauses;           /* pauses kept (default 65 536) */
    int64_t trace_wait_ms;       /* default 60 000 */
    int64_t ref_wait_ms;         /* default 1 000 */
    int64_t extent_ttl_ms;       /* a complete extent no call claimed is dropped after (default 600 000) */
} cp_asm_limits;

void cp_asm_limits_default(cp_asm_limits *l);

typedef struct cp_asm_pod {
    const char *ns, *service, *pod;   /* copied */
    int64_t restart_ms;
} cp_asm_pod;

typedef struct cp_asm cp_asm;

/* NULL on ENOMEM. limits may be NULL. */
cp_asm *cp_asm_new(const cp_asm_pod *pod, const cp_asm_limits *limits, const cp_asm_io *io);
void cp_asm_free(cp_asm *a);

/* Inputs, in stream order per stream. now_ms: a clock for the waits (any monotonic ms). */
int cp_asm_word(cp_asm *a, int32_t id, const char *word, size_t len);
/* The dictionary was reset (dictionary INIT with resetRequired = 1). */
void cp_asm_dict_reset(cp_asm *a);
int cp_asm_pause(cp_asm *a, const cp_suspend_rec *r);
int cp_asm_trace(cp_asm *a, int32_t file_index, const cp_trace_rec *r, int64_t now_ms);
int cp_asm_call(cp_asm *a, const cp_call_rec *r, int64_t now_ms);

/* Emits every waiting call that is ready (or whose wait is over). final: the connection
 * ended: emit everything still waiting, with reasons. Returns CP_OK or the first
 * emit/read error. */
int cp_asm_pump(cp_asm *a, int64_t now_ms, int final);

/* Calls waiting; 0 means a pump has nothing to do. */
size_t cp_asm_pending(const cp_asm *a);
/* Earliest now_ms at which a pump may make progress without new input (INT64_MAX: none). */
int64_t cp_asm_next_deadline(const cp_asm *a);

/* Bytes that wait on the agent's next input: extents kept (for calls records not yet
 * come, or root calls still running) and calls waiting for their trace, live entries
 * only. They are what grows when flush cycles are slowed down (an agent sends a cycle's
 * trace before its calls). O(1). */
size_t cp_asm_waiting_bytes(const cp_asm *a);
/* 1 when no complete extent waits for its calls record and no call waits for anything:
 * not reading the connection for a while then holds up only the connection itself. */
int cp_asm_idle(const cp_asm *a);

typedef struct cp_asm_stats {
    uint64_t calls_in, calls_out, without_trace, extents, extents_dropped;
    uint64_t extents_unpersisted;  /* root calls the agent did not persist: not kept */
    uint64_t trace_bytes_read, values_read;
    uint64_t values_cached;        /* sql/xml values taken from the resolved-value cache */
    size_t pending, memory;
    size_t extents_live;         /* extents kept now (complete or open) */
    /* parts of memory: extents, waiting calls, the resolved-value cache, the dictionary */
    size_t mem_extents, mem_calls, mem_values, mem_dict;
} cp_asm_stats;
void cp_asm_get_stats(const cp_asm *a, cp_asm_stats *st);

#endif
