/* cp_server.h -- the agent listener: protocol.md §3 over libuv, storing stream bytes in
 * the raw log and decoded metadata in the catalog.
 *
 * Usage: cp_server_config_default(), adjust, cp_server_open() (binds the listener and
 * opens the catalog), cp_server_port(), cp_server_run() (returns after SIGINT/SIGTERM or
 * cp_server_stop(), with every connection finalized and the catalog committed),
 * cp_server_close().
 */
#ifndef CP_SERVER_H
#define CP_SERVER_H

#include "common/cp_common.h"
#include "streams/cp_streams.h"

#include <stdint.h>

enum { CP_LOG_ERROR = 0, CP_LOG_WARN = 1, CP_LOG_INFO = 2, CP_LOG_DEBUG = 3 };
enum { CP_CATW_AUTO = 0, CP_CATW_THREAD = 1, CP_CATW_INLINE = 2 };
/* "auto" | "thread" | "inline" -> CP_CATW_*; CP_OK or CP_EINVAL. */
int cp_catw_mode_parse(const char *v, int *mode);

#define CP_SERVER_PORT_OFF (-1)
/* Where a client certificate names its agent's namespace (--tls-namespace-from-cert):
 * the subject's CN, its first OU, or the /ns/NAME segment of its first URI SAN (the
 * SPIFFE form spiffe://DOMAIN/ns/NAME/sa/ACCOUNT). */
enum { CP_TLS_NS_NONE = 0, CP_TLS_NS_CN, CP_TLS_NS_OU, CP_TLS_NS_SAN_URI };

/* Receives one formatted line (no trailing newline). Called on the loop thread only. */
typedef void (*cp_server_log_fn)(void *ud, int level, const char *msg);

typedef struct cp_server_config {
    const char *host;                 /* bind address, default "0.0.0.0" (IPv6 if it has ':') */
    int port;                         /* default 1715; 0 = ephemeral (see cp_server_port);
                                       * CP_SERVER_PORT_OFF = no plain-text agent port */
    /* Agents over TLS 1.2/1.3 (the same protocol; src/server/tls.c): */
    int tls_port;                     /* CP_SERVER_PORT_OFF (default), 0 = ephemeral, or a port */
    const char *tls_cert, *tls_key;   /* PEM chain (leaf first) and key; reloaded on SIGHUP */
    const char *tls_client_ca;        /* PEM CA(s): agents must present a certificate they
                                       * signed (mutual TLS); NULL = none asked for */
    int tls_ns_from;                  /* CP_TLS_NS_*: the certificate names the only namespace
                                       * its agent may send in its handshake */
    uint32_t tls_handshake_ms;        /* a TLS handshake must be done within this (10000) */
    const char *data_dir;             /* default "./data" */
    const char *catalog;              /* catalog spec (cp_catalog_open); NULL = <data>/catalog.db */
    int64_t protocol_version;         /* handshake reply: 100605 (default) or 100705 */
    const char *const *blacklist;     /* namespaces refused with 88888888 */
    size_t nblacklist;
    int64_t rotation_period_ms[CP_STREAM_KIND_COUNT]; /* INIT reply, per stream kind */
    int64_t rotation_size[CP_STREAM_KIND_COUNT];
    uint32_t max_connections;         /* default 20000 */
    uint32_t max_open_files;          /* stream-file fds kept open at most (soft cap of the
                                       * fd cache); 0 (default) = derived from RLIMIT_NOFILE:
                                       * limit - min(max_connections, limit/2) - 64, within
                                       * [16, 4096] */
    uint32_t idle_timeout_ms;         /* default 120000; 0 = never */
    int64_t trace_wait_ms;            /* how long a call waits for the end of its trace
                                       * before it is stored without one (default 60000) */
    int64_t hot_window_ms;            /* hot-tier window length (default 300000) */
    /* idle-method list of the hot rollups' system flag (NULL = the built-in list); must
     * outlive the server */
    const char *const *idle_methods;
    size_t nidle_methods;
    int64_t hot_ahead_ms;             /* windows created this far ahead (default 3 h) */
    /* The free-space floor of the data directory's file system: the smaller of
     * min_free_bytes and min_free_pct % of its size (0 and 0 = none; default 1 GiB and
     * 5 %). Below it no file is created or appended to: agents get 0xFF (the handshake,
     * RCV_DATA) or a refused INIT, and cp_server_disk_low() says so to the uploads. */
    uint64_t min_free_bytes;
    unsigned min_free_pct;
    /* The memory ingest may hold (issue 18, default 64 MiB, 0 = no bound), in shares: an
     * eighth for the copies of recently appended trace/sql/xml bytes (assembly reads them
     * back; past the share, reads go to the page cache), a sixteenth for assembly's
     * resolved-value caches, a quarter for trace waiting for its calls records (the gate),
     * a quarter for the SQLite catalog's page cache, and max_buffered (by default an
     * eighth) for partial records. Inside the gate's quarter, a thirty-second at most for
     * the ops on their way to the catalog writer thread. */
    uint64_t ingest_memory;
    /* Partial records the decoders may hold for all agents together (default 16 MiB, a
     * quarter of ingest_memory): beyond it, an agent holding more than its fair share
     * gets 0xFF. */
    uint64_t max_buffered;
    uint32_t max_rotations_per_min;   /* INITs of one stream name per minute (default 1200) */
    uint32_t max_files_per_conn;      /* stream files one connection may open (default 20000) */
    uint64_t wal_max;                 /* SQLite catalog: the WAL's bound (0 = 64 MiB) */
    /* Where the catalog writes of ingest run: CP_CATW_AUTO (a writer thread when the
     * process may use two CPUs or more, else the loop thread), CP_CATW_THREAD, CP_CATW_INLINE. */
    int ingest_writer;
    cp_server_log_fn log;             /* NULL = silent */
    void *log_ud;
    int log_level;                    /* CP_LOG_*, default CP_LOG_INFO */
    struct cp_metrics *metrics;       /* counters /metrics prints (common/cp_metrics.h); NULL = none */
} cp_server_config;

/* Fills the defaults above; rotation 3600000 ms / 2097152 bytes for the data streams and
 * 0/0 for dictionary, posDictionary and params (as in the reference capture). */
void cp_server_config_default(cp_server_config *cfg);

typedef struct cp_server cp_server;

/* Raises RLIMIT_NOFILE, creates the data directory, opens <data>/catalog.db, binds and
 * listens (and loads the TLS certificates, reloaded on SIGHUP when a TLS port is set),
 * and installs the SIGINT/SIGTERM handlers (a signal that arrives before
 * cp_server_run stops the run gracefully). The config (and the strings it points to)
 * must outlive the server. On failure returns a negative status and err says why. */
int cp_server_open(const cp_server_config *cfg, cp_server **out, char *err, size_t errlen);
/* The bound TCP port (the real one when cfg->port was 0; 0 when it is off). */
int cp_server_port(const cp_server *s);
/* The bound TLS port (0 when there is none). */
int cp_server_tls_port(const cp_server *s);
/* Runs the event loop until stopped (SIGINT/SIGTERM or cp_server_stop). Returns CP_OK. */
int cp_server_run(cp_server *s);
/* Graceful stop from the loop thread: stop accepting, finalize connections (sync and
 * close files), commit the catalog; cp_server_run then returns. */
void cp_server_stop(cp_server *s);
void cp_server_close(cp_server *s);

/* What /api/v1/health reports of the server; safe to call from any thread. */
typedef struct cp_server_health {
    int recovering;                   /* the recovery worker is in a pass */
    int recovery_ok;                  /* its last pass recovered everything it found */
    uint64_t recovery_passes;         /* 0: the start-up pass has not finished yet */
    uint64_t recovery_restarts_total, recovery_restarts_done, recovery_calls_added;
    int disk_low;                     /* below the free-space floor: nothing is written */
    uint64_t disk_free, disk_floor;   /* bytes (0 and 0 before the first check) */
    uint64_t connections;
    uint64_t buffered;                /* partial-record bytes held for agents */
} cp_server_health;
void cp_server_health_get(cp_server *s, cp_server_health *h);
/* 1 while the data directory is below its free-space floor (any thread). */
int cp_server_disk_low(const cp_server *s);

/* ---- the cold-tier task (coldtask.c) ---------------------------------------------------
 * A thread that compacts closed hot windows into the cold store every `every_ms` and
 * applies the retention, through its own catalog connection. Several collectors sharing
 * one catalog each run one: claims keep them from compacting a window twice. */
struct cp_ostore;
struct cp_dumps;

typedef struct cp_coldtask_config {
    const char *catalog;              /* catalog spec */
    struct cp_ostore *store;          /* shared with the HTTP readers (thread-safe) */
    const char *tmp_dir;              /* local Parquet files before upload */
    const char *node;                 /* claimed_by */
    int64_t every_ms;                 /* default 60 s; 0 = never */
    int64_t delay_ms;                 /* windows are compacted this long after they end
                                       * (late calls and slow traces): default 15 min */
    int64_t retention_ms;             /* cold files older than this are deleted; 0 = keep */
    struct cp_dumps *dumps;           /* diagnostic files compacted and expired with the calls
                                       * (same delay and retention); NULL = none. Shared
                                       * with the HTTP threads (thread-safe), not owned */
    unsigned heap_keep;               /* heap dumps kept per pod (newest first); 0 = all */
    const char *const *idle_methods;  /* the rollups' idle list (NULL = the built-in list) */
    size_t nidle_methods;
    cp_server_log_fn log;             /* called from the task's thread */
    void *log_ud;
    struct cp_metrics *metrics;       /* compaction runs and failures; NULL = none */
} cp_coldtask_config;

typedef struct cp_coldtask cp_coldtask;

int cp_coldtask_start(const cp_coldtask_config *cfg, cp_coldtask **out, char *err, size_t errlen);
/* Stops between two calls of a running compaction (its claim is released) and joins. */
void cp_coldtask_stop(cp_coldtask *t);

#endif
