/* cp_metrics.h -- Prometheus counters, gauges and histograms (issue 17, README "Metrics",
 * docs/API.md "GET /metrics").
 *
 * A registry is a fixed set of metric families, each with at most two labels whose values
 * come from fixed small lists (never from the network: a label value is an index into its
 * list). Every series is a C11 atomic, so the loop thread, the sync worker, the cold task
 * and the HTTP threads update them without a lock; cp_metrics_write reads them (relaxed)
 * into the text exposition format 0.0.4 with # HELP and # TYPE lines.
 *
 * Usage: cp_metrics_new() (the cloudprof families below), cp_metrics_set_build_info(),
 * hand the registry to the servers (cp_server_config.metrics, cp_http_config.metrics),
 * cp_metrics_write() for /metrics, cp_metrics_free() after both servers stopped.
 * Every update function accepts m == NULL and then does nothing, so code paths without a
 * registry (tools, tests) need no checks.
 */
#ifndef CP_METRICS_H
#define CP_METRICS_H

#include "common/cp_common.h"

#include <stddef.h>
#include <stdint.h>

typedef struct cp_metrics cp_metrics;

typedef enum cp_metric_type {
    CP_METRIC_COUNTER,
    CP_METRIC_GAUGE,
    CP_METRIC_HISTOGRAM,
} cp_metric_type;

#define CP_METRIC_MAX_BUCKETS 24

/* One family. Its series are the combinations of its labels' values: index
 * i0 * nvalues1 + i1 (a single series without labels). */
typedef struct cp_metric_def {
    const char *name;             /* [a-zA-Z_:][a-zA-Z0-9_:]*; counters end in _total */
    const char *help;
    cp_metric_type type;
    const char *label[2];         /* label names; NULL = none */
    const char *const *values[2]; /* each label's values */
    size_t nvalues[2];
    const double *buckets;        /* histograms: finite upper bounds, ascending; +Inf is added */
    size_t nbuckets;              /* <= CP_METRIC_MAX_BUCKETS */
    int sparse;                   /* series still at 0 are left out (large label products) */
} cp_metric_def;

/* ---- the cloudprof families (their label values: cp_metrics.c) ---------------------------- */

typedef enum cp_metric_id {
    CP_M_AGENT_CONNECTIONS_OPEN,        /* gauge */
    CP_M_AGENT_CONNECTIONS_ACCEPTED,    /* counter */
    CP_M_AGENT_CONNECTIONS_REFUSED,     /* counter {reason: cp_m_refuse} */
    CP_M_AGENT_CONNECTIONS_BLACKLISTED, /* counter */
    CP_M_AGENT_COMMANDS,                /* counter {command: cp_m_command} */
    CP_M_AGENT_RECEIVED_BYTES,          /* counter {command: cp_m_command}, whole commands */
    CP_M_AGENT_STREAM_BYTES,            /* counter {stream: cp_stream_kind - 1}, RCV_DATA payloads */
    CP_M_AGENT_ACKS,                    /* counter {result: cp_m_ack} */
    CP_M_AGENT_ACK_LATENCY,             /* histogram, seconds: flush acks */
    CP_M_FSYNC_BATCHES,                 /* counter */
    CP_M_FSYNC_FAILURES,                /* counter */
    CP_M_FSYNC_DURATION,                /* histogram, seconds */
    CP_M_CALLS_ASSEMBLED,               /* counter */
    CP_M_CALLS_STORED,                  /* counter: committed to the hot tier */
    CP_M_CALLS_STORE_FAILURES,          /* counter */
    CP_M_HOT_QUEUE,                     /* gauge {stage: cp_m_hot_stage}, calls */
    CP_M_INGEST_MEMORY,                 /* gauge {part: cp_m_mem_part}, bytes */
    CP_M_ASSEMBLY_MEMORY,               /* gauge {part: cp_m_asm_part}, bytes */
    CP_M_INGEST_GATED,                  /* gauge, connections */
    CP_M_INGEST_GATE_CLOSINGS,          /* counter */
    CP_M_COMPACTION_RUNS,               /* counter */
    CP_M_COMPACTION_FAILURES,           /* counter */
    CP_M_COMPACTION_CALLS,              /* counter */
    CP_M_HTTP_REQUESTS,                 /* counter {route: cp_m_route, code}: cp_metrics_http_request */
    CP_M_HTTP_UPLOAD_BYTES,             /* counter */
    CP_M_HTTP_AUTH_FAILURES,            /* counter {reason: cp_m_auth}: cp_metrics_auth_failure */
    CP_M_PROCESS_START,                 /* gauge, set by cp_metrics_new */
    CP_M_COUNT
} cp_metric_id;

typedef enum { CP_M_REFUSE_MAX_CONNECTIONS, CP_M_REFUSE_FDS, CP_M_REFUSE_TLS, CP_M_REFUSE_COUNT } cp_m_refuse;

typedef enum {
    CP_M_CMD_HANDSHAKE,     /* 0x14 */
    CP_M_CMD_VERSION,       /* 0x08 */
    CP_M_CMD_INIT,          /* 0x15 */
    CP_M_CMD_INIT_LEGACY,   /* 0x01 */
    CP_M_CMD_DATA,          /* 0x02 */
    CP_M_CMD_ACK_FLUSH,     /* 0x11 */
    CP_M_CMD_REPORT,        /* 0x13 */
    CP_M_CMD_CLOSE,         /* 0x04 */
    CP_M_CMD_COUNT
} cp_m_command;

/* Series of CP_M_AGENT_STREAM_BYTES: the stream kinds from CP_STREAM_TRACE on, in
 * cp_stream_kind order (the server asserts the count). */
#define CP_M_STREAM_COUNT 12

typedef enum { CP_M_ACK_OK, CP_M_ACK_ERROR, CP_M_ACK_COUNT } cp_m_ack;

typedef enum { CP_M_HOT_ASSEMBLY, CP_M_HOT_TRANSACTION, CP_M_HOT_COUNT } cp_m_hot_stage;
typedef enum { CP_M_MEM_TAILS, CP_M_MEM_PARTIAL, CP_M_MEM_ASSEMBLY, CP_M_MEM_WRITER, CP_M_MEM_COUNT } cp_m_mem_part;
typedef enum {
    CP_M_ASM_EXTENTS,
    CP_M_ASM_WAITING_CALLS,
    CP_M_ASM_VALUES,
    CP_M_ASM_WORDS,
    CP_M_ASM_OTHER,
    CP_M_ASM_COUNT
} cp_m_asm_part;

typedef enum {
    CP_M_AUTH_MISSING,
    CP_M_AUTH_BAD_CREDENTIALS,
    CP_M_AUTH_EXPIRED,
    CP_M_AUTH_FORBIDDEN,
    CP_M_AUTH_BACKOFF,
    CP_M_AUTH_COUNT
} cp_m_auth;

/* Route names of cloudprof_http_requests_total (a fixed set: never the raw URL). */
typedef enum {
    CP_M_ROUTE_OTHER,        /* unknown paths (404s), malformed targets */
    CP_M_ROUTE_UI,           /* the web UI's pages and assets */
    CP_M_ROUTE_METRICS,
    CP_M_ROUTE_HEALTH,
    CP_M_ROUTE_TIME,
    CP_M_ROUTE_CONFIG,
    CP_M_ROUTE_ME,
    CP_M_ROUTE_SERVICES,
    CP_M_ROUTE_CALLS,
    CP_M_ROUTE_CALLS_CSV,
    CP_M_ROUTE_CALLS_STATS,
    CP_M_ROUTE_CALL,
    CP_M_ROUTE_CALL_TREE,
    CP_M_ROUTE_CALL_TRACE,
    CP_M_ROUTE_CALL_EXPORT,
    CP_M_ROUTE_TREE,
    CP_M_ROUTE_TREE_EXPORT,
    CP_M_ROUTE_IMPORT,
    CP_M_ROUTE_DUMPS,
    CP_M_ROUTE_DUMPS_SUMMARY,
    CP_M_ROUTE_DUMPS_DOWNLOAD,
    CP_M_ROUTE_DUMP,
    CP_M_ROUTE_DUMP_VIEW,
    CP_M_ROUTE_GC,
    CP_M_ROUTE_UPLOAD,       /* /diagnostic/... */
    CP_M_ROUTE_CDT_DOWNLOAD, /* /cdt/v2/download */
    CP_M_ROUTE_AUTH,         /* /auth/login, /auth/callback, /auth/logout */
    CP_M_ROUTE_CALLS_XLSX,
    CP_M_ROUTE_COUNT
} cp_m_route;

/* The cloudprof registry: every family above, process_start_time_seconds set to now. */
cp_metrics *cp_metrics_new(void);
/* A registry of other families (tests); defs must outlive it. NULL on a bad definition
 * (more than CP_METRIC_MAX_BUCKETS buckets, unsorted buckets) or out of memory. */
cp_metrics *cp_metrics_new_defs(const cp_metric_def *defs, size_t ndefs);
void cp_metrics_free(cp_metrics *m);
/* cloudprof_build_info{version="..."} 1 (copied; escaped on output). CP_OK or CP_ENOMEM. */
int cp_metrics_set_build_info(cp_metrics *m, const char *version);

/* Hot path, any thread, lock-free. `series` is the label index (0 without labels); an
 * out-of-range id or series is ignored. */
void cp_metrics_add(cp_metrics *m, int id, size_t series, uint64_t n);   /* counters, gauges */
static inline void cp_metrics_inc(cp_metrics *m, int id, size_t series) { cp_metrics_add(m, id, series, 1); }
void cp_metrics_set(cp_metrics *m, int id, size_t series, int64_t v);    /* gauges */
void cp_metrics_gauge_add(cp_metrics *m, int id, size_t series, int64_t d); /* gauges, d may be < 0 */
void cp_metrics_observe(cp_metrics *m, int id, size_t series, double v); /* histograms */
/* What a series holds now (tests): a counter or gauge's value, a histogram's count. */
int64_t cp_metrics_get(const cp_metrics *m, int id, size_t series);

/* cloudprof_http_requests_total{route, code}: a status outside the known codes counts as
 * its class ("4xx"). */
void cp_metrics_http_request(cp_metrics *m, cp_m_route route, unsigned status);
/* cloudprof_http_auth_failures_total{reason}. */
static inline void cp_metrics_auth_failure(cp_metrics *m, cp_m_auth reason)
{
    cp_metrics_inc(m, CP_M_HTTP_AUTH_FAILURES, (size_t)reason);
}

/* Appends the text exposition format (Content-Type: CP_METRICS_CONTENT_TYPE). */
int cp_metrics_write(const cp_metrics *m, cp_buf *out);
#define CP_METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

#endif
