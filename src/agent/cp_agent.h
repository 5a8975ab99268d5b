/* cp_agent.h -- an emulated profiler agent: the load generator behind `cloudprof emulate`.
 *
 * Two parts:
 *
 * The generator (cp_agent_gen) models one agent JVM and produces the exact bytes of every
 * stream file it would send (protocol.md §4, §5): trace chunks, calls records, sql/xml
 * values, the dictionary (or posDictionary), suspend and params phrases. It is pure: no
 * I/O, no clock reads (every function that needs the time takes it), no globals, and
 * deterministic for a seed. Its bytes wait in one pending buffer per stream until the
 * caller takes them (cp_agent_gen_pending / cp_agent_gen_consume). It also keeps the
 * ack-accounting facts a sender needs: where in the calls stream each call's record ends.
 *
 * The driver (cp_agent_run) runs many generators against a collector over TCP (or TLS)
 * on one libuv loop, speaking the agent side of protocol.md §3 (handshake, INIT, RCV_DATA,
 * flush cycles, rotation, reconnects, CLOSE) and checking every ack byte.
 */
#ifndef CP_AGENT_H
#define CP_AGENT_H

#include "common/cp_common.h"
#include "streams/cp_streams.h"

/* The streams in the order the real agent opens them (§4.1). CP_AGENT_DICT is
 * `dictionary` or `posDictionary` depending on the handshake reply. */
typedef enum cp_agent_stream {
    CP_AGENT_TRACE,
    CP_AGENT_CALLS,
    CP_AGENT_XML,
    CP_AGENT_SQL,
    CP_AGENT_DICT,
    CP_AGENT_SUSPEND,
    CP_AGENT_PARAMS,
    CP_AGENT_NSTREAMS
} cp_agent_stream;

/* Wire name and decoder kind of a stream; pos selects posDictionary for CP_AGENT_DICT. */
const char *cp_agent_stream_name(cp_agent_stream s, int pos);
cp_stream_kind cp_agent_stream_kind(cp_agent_stream s, int pos);
int cp_agent_stream_is_phrased(cp_agent_stream s);

/* ---- generator ------------------------------------------------------------------------- */

#define CP_AGENT_MAX_DEPTH 64
#define CP_AGENT_MAX_THREADS 1024
#define CP_AGENT_PHRASE_MAX 10240 /* the agent's MAX_PHRASE_SIZE (§4.3) */

typedef struct cp_agent_gen_opts {
    const char *service;     /* microservice name ("orders-service"): packages, SQL tables */
    const char *node_name;   /* pod host name: the node.name value */
    int64_t timer_start_ms;  /* JVM profiler timer origin: trace header, first suspend base */
    int trace_depth;         /* deepest call level, 1 (root only) .. CP_AGENT_MAX_DEPTH */
    uint32_t max_threads;    /* worker threads at most, 3 .. CP_AGENT_MAX_THREADS */
} cp_agent_gen_opts;

typedef struct cp_agent_gen cp_agent_gen;

/* Counters since cp_agent_gen_new (they survive resets). */
typedef struct cp_agent_gen_stats {
    uint64_t calls;          /* root calls generated */
    uint64_t records;        /* calls records written (a call's chunk was dumped) */
    uint64_t discarded;      /* calls still in thread buffers at a reset (§3.9) */
    uint64_t bytes[CP_AGENT_NSTREAMS]; /* stream bytes produced, phrase framing included */
    uint32_t words;          /* dictionary size */
    uint32_t threads;        /* worker threads started */
} cp_agent_gen_stats;

void cp_agent_gen_opts_default(cp_agent_gen_opts *o);
/* NULL on ENOMEM or bad options. The generator produces nothing until a reset. */
cp_agent_gen *cp_agent_gen_new(const cp_agent_gen_opts *o, uint64_t seed);
void cp_agent_gen_free(cp_agent_gen *g);

/* A new connection (§3.9 "When the agent re-initialises"): every stream is closed and its
 * unsent bytes dropped, per-thread call state and the sql dedup cache are cleared, the
 * next dictionary file re-sends every word from id 0. pos: the server answered V3, so the
 * dictionary stream is posDictionary. */
void cp_agent_gen_reset(cp_agent_gen *g, int pos);
/* The server opened the stream's next file with rollingSequenceId seq (file index
 * seq + 1): writes its header and initial content (calls header, trace header, params,
 * the whole dictionary after a reset). Used for the first INIT after a reset and for a
 * rotation; the caller must have taken every pending byte of the old file first. */
int cp_agent_gen_open(cp_agent_gen *g, cp_agent_stream s, int32_t seq, int64_t now_ms);
/* Generates n finished root calls ending around now_ms (all streams must be open).
 * Returns CP_OK, CP_EINVAL if a stream is not open, CP_ENOMEM. */
int cp_agent_gen_calls(cp_agent_gen *g, uint32_t n, int64_t now_ms);
/* A commit point for one stream: trace dumps every thread's open chunk (and writes the
 * calls records of its calls), phrase streams close their open phrase. */
int cp_agent_gen_flush(cp_agent_gen *g, cp_agent_stream s);
int cp_agent_gen_flush_all(cp_agent_gen *g);

/* The stream's bytes not yet taken, and taking them (n <= pending length). */
const uint8_t *cp_agent_gen_pending(const cp_agent_gen *g, cp_agent_stream s, size_t *len);
void cp_agent_gen_consume(cp_agent_gen *g, cp_agent_stream s, size_t n);
size_t cp_agent_gen_unsent(const cp_agent_gen *g); /* pending bytes of all streams */

int cp_agent_gen_is_open(const cp_agent_gen *g, cp_agent_stream s);
int32_t cp_agent_gen_file_index(const cp_agent_gen *g, cp_agent_stream s);
/* Bytes written to the current file (header included, phrase lengths excluded): what the
 * agent compares with the rotation size (§3.9). */
uint64_t cp_agent_gen_file_size(const cp_agent_gen *g, cp_agent_stream s);
int64_t cp_agent_gen_file_opened_ms(const cp_agent_gen *g, cp_agent_stream s);

/* Ack accounting: acked = calls-stream bytes acknowledged since the reset (all calls files
 * of the connection, headers included). Returns how many more calls have their whole
 * record acknowledged. */
uint64_t cp_agent_gen_calls_acked(cp_agent_gen *g, uint64_t acked);
void cp_agent_gen_get_stats(const cp_agent_gen *g, cp_agent_gen_stats *st);

/* ---- driver ------------------------------------------------------------------------------ */

typedef struct cp_agent_hist {  /* ack latency, log-linear buckets of microseconds */
    uint64_t n;
    uint64_t bucket[64 * 8];
} cp_agent_hist;

void cp_agent_hist_add(cp_agent_hist *h, uint64_t us);
double cp_agent_hist_quantile_ms(const cp_agent_hist *h, double q);

typedef struct cp_agent_stats {
    double elapsed_s;
    uint32_t agents, connected, blacklisted;
    uint64_t calls_generated;
    uint64_t calls_sent;          /* calls whose record bytes were acknowledged */
    uint64_t bytes_sent;          /* RCV_DATA payload bytes acknowledged */
    uint64_t wire_bytes;          /* every byte written to the sockets */
    uint64_t acks;                /* 0x00 acks received */
    uint64_t flushes;             /* 0x11 sent */
    uint64_t errors;              /* wrong/unexpected acks, failed connections, timeouts */
    uint64_t missing_acks;        /* acks still owed when the run ended */
    uint64_t connects, reconnects, rotations;
    uint64_t threads, words;      /* worker threads and dictionary words, summed over agents */
    uint64_t stream_bytes[CP_STREAM_KIND_COUNT]; /* acknowledged payload bytes per stream */
    cp_agent_hist latency;        /* every ack */
    cp_agent_hist latency_data;   /* RCV_DATA acks: send to ack */
    cp_agent_hist latency_flush;  /* 0x11 acks (they include the server's fsync) */
    char last_error[512];
} cp_agent_stats;

typedef struct cp_agent_opts {
    const char *host;             /* numeric address or name */
    int port;
    uint32_t agents;
    uint32_t duration_ms;
    uint32_t calls_per_sec;       /* per agent; 0 = as fast as the server acks */
    uint32_t calls_per_flush;     /* > 0: this many root calls after each flush cycle instead of
                                     a rate (file contents independent of timing) */
    uint64_t max_calls;           /* per agent: after this many root calls its final flush cycle
                                     and CLOSE; the run ends when every agent is done (or at
                                     duration_ms); 0 = no limit */
    int trace_depth;
    uint32_t namespaces, services;
    uint64_t seed;
    uint32_t reconnect_every_ms;  /* 0 = never drop deliberately */
    uint32_t reconnect_delay_ms;
    uint32_t flush_interval_ms;
    int64_t protocol_version;     /* sent in the handshake: 100705 or 100605 */
    int tls;                      /* connect with TLS 1.2/1.3 (the collector's --agent-tls-port) */
    const char *tls_ca;           /* PEM CA(s) the server's chain must verify against (NULL =
                                     the system's); the host name is not checked, as by the agent */
    const char *tls_cert, *tls_key; /* PEM client certificate and key for mutual TLS, or NULL */
    uint32_t progress_ms;         /* 0 = no progress callbacks */
    void (*progress)(void *ud, const cp_agent_stats *st);
    void *progress_ud;
} cp_agent_opts;

void cp_agent_opts_default(cp_agent_opts *o);
/* Runs the emulation to the end. Returns CP_OK with *st filled (errors are counted in it),
 * or a negative status if it could not run at all (why says so). */
int cp_agent_run(const cp_agent_opts *o, cp_agent_stats *st, char *why, size_t whylen);

#endif
