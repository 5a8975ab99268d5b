/* agent_internal.h -- shared by the generator's files: byte writers for the agent's
 * encodings (protocol.md §1), the generator state, and the vocabulary (names of methods,
 * threads, SQL statements) in vocab.c. */
#ifndef CP_AGENT_INTERNAL_H
#define CP_AGENT_INTERNAL_H

#include "agent/cp_agent.h"

/* ---- byte writers: each writes at p (room checked by the caller) and returns the end ---- */

/* varint (§1.4): unsigned LEB128 of the 32-bit pattern; negatives take 5 bytes. */
static inline uint8_t *w_varint(uint8_t *p, uint32_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* varlong (§1.5): unsigned LEB128 of 64 bits. */
static inline uint8_t *w_varlong(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/* zig-zag varint (§1.6). */
static inline uint8_t *w_zigzag(uint8_t *p, int32_t n)
{
    uint32_t u = ((uint32_t)n << 1) ^ (n < 0 ? 0xFFFFFFFFu : 0u);
    return w_varint(p, u);
}

static inline uint8_t *w_be64(uint8_t *p, int64_t v)
{
    cp_put_be64(p, (uint64_t)v);
    return p + 8;
}

/* varstring (§1.7) of ASCII text: unit count, then each unit big-endian. */
static inline uint8_t *w_str(uint8_t *p, const char *s, size_t n)
{
    p = w_varint(p, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        p[0] = 0;
        p[1] = (uint8_t)s[i];
        p += 2;
    }
    return p;
}

/* ASCII builders for per-call values (cheaper than snprintf in the hot path): each
 * appends at p and returns the end. The caller sizes the buffer. */
static inline char *t_str(char *p, const char *s)
{
    while (*s) *p++ = *s++;
    return p;
}

static inline char *t_dec(char *p, uint64_t v)
{
    char tmp[20];
    int n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n) *p++ = tmp[--n];
    return p;
}

/* varstring of a non-negative number in decimal (the synthetic tags' values). */
static inline uint8_t *w_str_dec(uint8_t *p, uint64_t v)
{
    char tmp[20];
    return w_str(p, tmp, (size_t)(t_dec(tmp, v) - tmp));
}

/* Longest ASCII text the generator writes as one value or word. */
#define GEN_MAX_TEXT 256
/* Bytes one varstring of GEN_MAX_TEXT units can take. */
#define GEN_MAX_STR (5 + 2 * GEN_MAX_TEXT)

/* ---- pending bytes of one stream: appended at the end, taken from the front ----------- */

typedef struct gbuf {
    cp_buf b;
    size_t head; /* bytes before head were taken */
} gbuf;

/* Room for n more bytes; returns the write position or NULL on ENOMEM. */
uint8_t *gbuf_room(gbuf *q, size_t n);

/* ---- the vocabulary (vocab.c): deterministic names from small tables --------------------- */

/* Well-known dictionary words: ids 0 .. GEN_WK_COUNT-1 of every generator, in this order. */
enum {
    WK_CALL_INFO,
    WK_PROFILER_TITLE,
    WK_CALL_RED,
    WK_COMMON_STARTED,
    WK_NODE_NAME,
    WK_JAVA_THREAD,
    WK_TIME_CPU,
    WK_TIME_WAIT,
    WK_MEMORY_ALLOCATED,
    WK_LOG_GENERATED,
    WK_LOG_WRITTEN,
    WK_IO_NET_READ,
    WK_IO_NET_WRITTEN,
    WK_SQL,
    WK_BINDS,
    WK_WEB_URL,
    WK_WEB_METHOD,
    WK_WEB_REMOTE_ADDR,
    WK_REQUEST_ID,
    WK_TIME_QUEUE_WAIT,
    WK_JMS_DESTINATION,
    WK_JOB_NAME,
    WK_EXCEPTION,
    WK_CALL_IDLE,
    GEN_WK_COUNT
};

const char *vocab_well_known(int wk);

/* The params stream records (§5.2): name (a well-known word), flags, order, signature. */
typedef struct vocab_param {
    int wk;
    uint8_t index, list;
    int32_t order;
    const char *signature;
} vocab_param;

extern const vocab_param vocab_params[];
extern const size_t vocab_nparams;

/* Root call kinds: what the entry method does (and which thread pool runs it). */
enum { KIND_HTTP, KIND_JMS, KIND_JOB, KIND_COUNT };

/* Method universe of one agent: indexes [0, VOCAB_INFRA) are library methods (the first
 * VOCAB_SQL_METHODS of them execute SQL), [VOCAB_INFRA, VOCAB_INFRA + VOCAB_ROOTS) entry
 * points, the rest application methods. */
#define VOCAB_SQL_METHODS 3
#define VOCAB_INFRA 12
#define VOCAB_ROOTS 120
#define VOCAB_METHODS 20000

/* Kind of an entry point (a method index >= VOCAB_INFRA and < VOCAB_INFRA + VOCAB_ROOTS). */
int vocab_root_kind(uint32_t m);
/* The method's dictionary word (ASCII) into out[GEN_MAX_TEXT]; returns its length. pkg is
 * the Java package segment of the service ("orders"). */
size_t vocab_method(uint32_t m, const char *pkg, char *out);
/* Thread name of pool kind `kind`, k-th thread (0-based). */
size_t vocab_thread(int kind, uint32_t k, char *out);
#define VOCAB_STATEMENTS 96
/* SQL statement number i (< VOCAB_STATEMENTS). */
size_t vocab_statement(uint32_t i, char *out);
/* A URL path for an HTTP entry point: the method's noun and an id (0 = collection). */
size_t vocab_url(uint32_t m, uint32_t id, char *out);
size_t vocab_noun_lower(uint32_t i, char *out);
const char *vocab_exception(uint32_t i);
const char *vocab_http_method(uint32_t i);

/* ---- generator state (gen.c: files, phrases, dictionary; call.c: calls and threads) ---- */

/* Calls kept per thread chunk before it is dumped; and the chunk size that triggers a
 * dump (each chunk draws its own limit between the two). */
#define GEN_CHUNK_CALLS 32
#define GEN_CHUNK_MIN 1024
#define GEN_CHUNK_MAX 3072

/* Where a big value lives (§5.6); valid while epoch equals the generator's sql epoch. */
typedef struct gen_ref {
    uint32_t epoch;
    int32_t file;
    int32_t off;
} gen_ref;

/* A finished root call whose calls record waits for its chunk to be dumped. */
typedef struct gen_call {
    int64_t start;
    int32_t method, duration, calls;
    uint32_t rec_index;
    int32_t logs_written, logs_generated;
    int32_t cpu, wait, queue_wait;
    int64_t memory, net_read, net_written;
    uint32_t prm_off, prm_len; /* its encoded params (count + entries) in the thread's prm */
} gen_call;

typedef struct gen_thread {
    int kind;                 /* pool: KIND_* */
    uint32_t k;               /* number within the pool */
    int64_t java_id;
    char name[48];
    uint8_t name_len;
    int64_t last_end;         /* end of the thread's last root call */
    cp_buf chunk;             /* open chunk: 16-byte header + events, no FINISH yet */
    int64_t chunk_last;       /* absolute time the next event's delta is taken from */
    uint32_t chunk_events;
    uint32_t chunk_limit;     /* dump once the chunk is this big */
    gen_call *calls;          /* up to GEN_CHUNK_CALLS, grown on demand */
    uint32_t ncalls, ccalls;
    cp_buf prm;
    uint32_t table_epoch;     /* == gen table_epoch: table_index is valid in this calls file */
    int32_t table_index;
    gen_ref sql_name;         /* its name in the sql stream (java.thread) */
} gen_thread;

typedef struct gen_file {
    gbuf pend;
    int open;
    int32_t index;            /* rollingSequenceId + 1 */
    uint64_t size;            /* content bytes of the current file */
    uint64_t produced;        /* bytes appended since the reset (all files) */
    int64_t opened_ms;
    cp_buf phrase;            /* open phrase body (phrase streams) */
} gen_file;

struct cp_agent_gen {
    cp_agent_gen_opts o;
    char service[96], node[96], pkg[48];
    uint64_t rng;
    int pos;
    int64_t last_now;         /* the previous cp_agent_gen_calls time */
    gen_file f[CP_AGENT_NSTREAMS];
    /* dictionary: ids below GEN_WK_COUNT are the well-known words, the rest methods */
    int32_t *method_id;       /* VOCAB_METHODS entries, -1 = not in the dictionary yet */
    uint32_t *word_method;    /* (id - GEN_WK_COUNT) -> method index */
    uint32_t nwords;
    int dict_resend;          /* the next dictionary file starts with every word */
    /* threads: pools laid out back to back in th[] */
    gen_thread *th;
    uint32_t pool_first[KIND_COUNT], pool_n[KIND_COUNT], pool_max[KIND_COUNT];
    uint32_t nthreads;
    /* calls file */
    int64_t calls_prev;       /* start time the next record's delta is taken from */
    uint32_t table_epoch;
    int32_t table_size;
    /* sql dedup (cleared at every sql file and reset) */
    uint32_t sql_epoch;
    gen_ref node_ref;
    gen_ref stmt_ref[VOCAB_STATEMENTS];
    /* suspend */
    int64_t pause_end;        /* end of the last pause written: the next file's base */
    int64_t next_pause;
    int suspend_header;       /* the current suspend file has its base time */
    /* ack accounting: calls-stream end offsets of records not yet acknowledged */
    uint64_t *ends;
    size_t ends_cap, ends_head, ends_n;
    cp_agent_gen_stats st;
};

/* gen.c helpers used by call.c */
uint64_t gen_rand(cp_agent_gen *g);
static inline uint32_t gen_below(cp_agent_gen *g, uint32_t n) { return n ? (uint32_t)((gen_rand(g) >> 32) % n) : 0; }
static inline int gen_chance(cp_agent_gen *g, uint32_t percent) { return gen_below(g, 100) < percent; }
uint8_t *gen_room(cp_agent_gen *g, cp_agent_stream s, size_t n);     /* NULL on ENOMEM */
void gen_done(cp_agent_gen *g, cp_agent_stream s, const uint8_t *end); /* bytes written up to end */
int32_t gen_method_id(cp_agent_gen *g, uint32_t m);                  /* -1 on ENOMEM */
int gen_sql_value(cp_agent_gen *g, gen_ref *ref, const char *text, size_t n);
int gen_push_end(cp_agent_gen *g, uint64_t end);
int gen_pauses(cp_agent_gen *g, int64_t now_ms);

/* call.c */
int call_generate(cp_agent_gen *g, int64_t end_ms);
int call_dump_thread(cp_agent_gen *g, gen_thread *th);
void call_threads_init(cp_agent_gen *g);
void call_threads_reset(cp_agent_gen *g);
void call_threads_free(cp_agent_gen *g);

#endif
