/* server_internal.h -- the server's structures and the calls between its files:
 *
 *   server.c     listener, loop phases (check: catalog commit + sync submit), idle
 *                sweep, signals, stop, logging
 *   conn.c       one TCP connection: input buffering, reply flushing, close sequence
 *   proto.c      the commands of protocol.md §3 (handshake, INIT, RCV_DATA, ...)
 *   sfile.c      one stream file: raw log append, decoder, catalog rows
 *   syncbatch.c  group commit: the fsyncs behind REQUEST_ACK_FLUSH acks
 *   assembly.c   call assembly per connection (cp_asm) wired to the stream files and
 *                the hot tier; the assembly timer; hot-window upkeep
 *   recover.c    a worker thread: calls a crash or a failed hot-tier write left out of
 *                the hot tier, from the raw log
 *
 * Everything runs on the loop thread except the sync worker, which only touches the
 * fds and directory paths copied into its batch, and the recovery worker, which has its
 * own catalog connection and reads restarts no connection owns.
 */
#ifndef CP_SERVER_INTERNAL_H
#define CP_SERVER_INTERNAL_H

#include "common/cp_map.h"
#include "cp_server.h"
#include "model/cp_asm.h"
#include "store/cp_catalog.h"
#include "store/cp_rawlog.h"
#include "streams/cp_streams.h"
#include "wire/cp_wire.h"

#include <pthread.h>
#include <uv.h>

#define CP_SRV_READ_BUF (64 * 1024)        /* the one shared read buffer */
#define CP_SRV_WRITE_HIGH (64 * 1024)      /* queued reply bytes that pause reading */
#define CP_SRV_STASH_HIGH (1024 * 1024)    /* input stashed during a sync that pauses reading */
#define CP_SRV_GATE_HOLDERS 64             /* gate.c: ticket holders at most */
#define CP_SRV_GATE_READ (8 * 1024)        /* gate.c: reads of connections it may stop */
/* Bytes one connection may read in one loop iteration; then it waits for the next one
 * (libuv reads a ready socket up to 32 times per iteration: 2 MiB). An iteration then ends
 * (commit, fsync batch, flush acks) after at most this much of each agent's data, every
 * agent gets its turn in each, and what waits stays in the kernel's socket buffers. Large
 * enough that an agent's usual window (the emulator's 128 KiB) goes in one iteration:
 * smaller reads and shares cost more in acks and raw-log writes than they save (measured,
 * docs/BENCHMARKS.md issue 18). */
#define CP_SRV_CONN_ITER_MAX (256 * 1024)
#define CP_SRV_LINGER_MS 5000              /* how long a closing connection may drain */
#define CP_SRV_TOUCH_MS 30000              /* pods.last_active update interval */
#define CP_SRV_FD_RESERVE 64               /* fds kept free for the catalog, dir fsyncs, libuv */
#define CP_SRV_MIN_FILES 16                /* fds a new connection must leave for stream files */
#define CP_SRV_MAX_OPEN_FILES 4096         /* ceiling of the derived open-file cache size */
#define CP_SRV_PRESSURE_FILES 256          /* dirty files a shortage of fds syncs at least */
#define CP_SRV_FD_RETRIES 100              /* syncs a write waits for an fd before failing */
#define CP_SRV_TLS_HANDSHAKE_MAX (256 * 1024) /* ciphertext a TLS handshake may take, at most */

typedef struct cp_server cp_server;
typedef struct cp_conn cp_conn;
typedef struct cp_sfile cp_sfile;

/* One stream file of a connection (one INIT handle). */
struct cp_sfile {
    cp_conn *conn;
    cp_stream_kind kind;
    uint8_t handle[16];
    int32_t seq;              /* file index = seq + 1 */
    int32_t first_word_id;    /* dictionary id of this file's first word */
    uint8_t finalized;
    uint8_t failed;
    int64_t opened_ms;
    cp_rawlog_file raw;       /* raw.dirty: written or cut since its last sync began */
    cp_dec *dec;              /* created on the first payload; NULL for raw-only kinds */
    char *error;              /* why the file failed */
    cp_sfile *next_retired;   /* rotated trace/sql/xml files stay readable (conn->retired) */
    uint64_t last_write_ms;   /* loop time of the last append (quiet files drop raw.tail) */
};

/* Per stream name: the open file and what a later INIT of that name needs. */
typedef struct cp_stream_slot {
    cp_sfile *file;
    int32_t last_seq;         /* -1 until the first INIT */
    int32_t next_word_id;     /* dictionary ids continue across rotated files */
    uint32_t inits;           /* INITs of this name in the minute that began at inits_since */
    uint64_t inits_since;     /* loop time */
} cp_stream_slot;

typedef enum cp_conn_state {
    CONN_ACTIVE,              /* parsing commands */
    CONN_WAIT_SYNC,           /* in a sync batch; input is stashed */
    CONN_CLOSING,             /* finalizing / draining replies / lingering */
} cp_conn_state;

struct cp_conn {
    uv_tcp_t tcp;             /* tcp.data = this */
    cp_server *srv;
    cp_conn *prev, *next;     /* the server's connection list */
    uint8_t state;            /* cp_conn_state */
    uint8_t identified;
    uint8_t eof;              /* the peer closed its side */
    uint8_t reading;          /* uv_read_start is in effect */
    uint8_t held;             /* read its share in this iteration: no more until the next */
    uint32_t iter_read;       /* bytes read in iteration iter_gen (CP_SRV_CONN_ITER_MAX) */
    uint32_t iter_gen;
    uint8_t in_batch;         /* member of the pending or the in-flight sync batch */
    uint8_t sync_ack;         /* the batch answers a REQUEST_ACK_FLUSH with 0x00 */
    uint8_t reply_len;        /* a handshake or INIT reply waits for the batch (cp_sync_join_reply) */
    uint8_t reply_init;       /* ... and it is an INIT's (a failure is a refused INIT, not 0xFF) */
    uint8_t reply[40];
    uint64_t catw_lo;         /* its catalog ops from this one on must be committed first */
    uint8_t closed;           /* uv_close called */
    uint8_t handle_gone;      /* close callback ran */
    uint8_t shut;             /* 1: uv_shutdown issued, 2: done (draining input) */
    uint8_t writing;          /* a uv_write is in flight */
    uint8_t fd_retries;       /* RCV_DATA retried in a row for lack of an fd */
    const char *close_reason; /* deferred close while in a batch */
    size_t write_queued;      /* bytes of the in-flight uv_write */
    uint64_t last_io_ms;      /* loop time of the last read */
    uint64_t flush_since;     /* last_io_ms when its REQUEST_ACK_FLUSH was handled (ack latency) */
    uint64_t closing_since;   /* loop time the close sequence started */
    int64_t accept_ms;        /* wall clock: the pod restart time */
    int64_t touched_ms;
    cp_buf in;                /* partial command, or input stashed during a sync */
    cp_buf out;               /* replies not yet handed to the kernel */
    char peer[56];
    char *ident;              /* one block: ns, service, pod, pod_id (NUL-separated) */
    cp_catalog_pod pod;
    cp_rawlog_restart restart;
    cp_stream_slot slots[CP_STREAM_KIND_COUNT];
    cp_asm *asm_;             /* call assembly; NULL until identified */
    cp_sfile *retired;        /* rotated files calls may still point into */
    uint8_t hot_lost;         /* a hot-tier write of its calls failed, or a torn tail could not be
                                 cut (a full disk): the restart stays incomplete, recovery redoes it */
    uint32_t files_opened;    /* stream files it opened (INITs that made a file) */
    uint64_t buffered;        /* partial-record bytes its decoders hold (in srv->buffered) */
    uint64_t restart_key;     /* cp_srv_restart_key once identified (the live registry) */
    uint64_t id;              /* unique in this process (the catalog writer's reports name it) */
    /* TLS (tls.c): replies in `out` are sealed into tls_out, which is what is written */
    struct cp_tls *tls;       /* NULL on the plain port */
    cp_buf tls_out;
    uint8_t tls_ready;        /* handshake done and its certificate checked */
    uint64_t tls_fed;         /* ciphertext bytes fed before the handshake was done */
    uint64_t tls_deadline;    /* loop time the handshake must be done by */
    char *tls_ns;             /* the namespace its client certificate allows, or NULL */
    /* gate.c: call assembly's share of --ingest-memory */
    uint8_t gated;            /* stopped at a trace payload: in the line, not read */
    uint8_t paused;           /* stopped mid-input while the catalog writer's queue is full:
                               * its stashed commands go on when it drained (cp_srv_reading_resume) */
    uint8_t ticket;           /* holder slot + 1: may send trace while over the share */
    cp_conn *gprev, *gnext;   /* the line */
    uint64_t gated_ms;        /* loop time it joined the line */
    uint64_t ticket_ms;       /* loop time it got its ticket */
    uint64_t asm_waiting;     /* its cp_asm_waiting_bytes at the last count */
};

/* What the recovery worker reports (/api/v1/health). */
typedef struct cp_recovery_status {
    int running;              /* a pass is under way */
    int last_ok;              /* the last pass recovered everything it found */
    uint64_t passes;
    uint64_t restarts_total, restarts_done; /* of the current (or last) pass */
    uint64_t calls_found, calls_added;      /* over all passes */
} cp_recovery_status;

/* The recovery worker (recover.c): its thread, its catalog connection, the registry of
 * live restarts and what it reports. mu guards everything but cat and thread. */
typedef struct cp_recovery {
    pthread_t thread;
    int started;
    cp_catalog *cat;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop, kicked, retry;
    cp_u64map live;           /* cp_srv_restart_key -> live connections (normally 1) */
    cp_recovery_status status;
} cp_recovery;

/* A group of connections whose files are fsynced together (storage.md ingest rule 2). */
typedef struct cp_sync_batch {
    uv_work_t work;
    cp_server *srv;
    cp_conn **members;
    size_t nmembers, cap_members;
    int *fds;                 /* what the worker fdatasyncs (pinned in the fd cache) */
    cp_rawlog_file **files;   /* their files (nfds of them), unpinned on the loop thread after */
    size_t nfds, cap_fds, cap_files;
    cp_buf dirs;              /* NUL-terminated directory paths */
    int err;                  /* errno of the first failure, 0 if none */
    uint64_t catw_gen;        /* the catalog ops up to this are committed before the members
                               * hear back (0: no member waits for the catalog) */
} cp_sync_batch;

/* The catalog's write side of ingest (catwriter.c): a writer thread fed with chunks of
 * ops, or the same ops applied on the loop thread (inline). */
typedef struct cp_catw_chunk cp_catw_chunk;
typedef struct cp_catw_state cp_catw_state;
typedef struct cp_catw {
    int threaded, started, inited;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* the writer waits for chunks (or its commit time) */
    pthread_cond_t done_cv;   /* cp_catw_settle waits for a commit */
    /* the loop's side */
    cp_catw_chunk *cur;       /* the chunk being filled */
    uint64_t gen;             /* ops made */
    uint64_t published;       /* ops handed to the writer */
    cp_buf scratch;           /* inline: the op being applied */
    /* under mu */
    cp_catw_chunk *head, **tail; /* handed over, not yet taken */
    cp_catw_chunk *spare;     /* for reuse */
    size_t nspare;
    uint64_t bytes, limit;    /* chunks in flight; the bound past which agents are not read */
    int full;                 /* bytes > limit (read without the lock by the loop) */
    int idle, stop;
    uint64_t want;            /* someone waits for the ops up to this to be committed */
    uint64_t done;            /* the ops up to this are committed (or their transaction failed) */
    uint64_t fail_hi;         /* the last op of the last failed transaction, or a failed pod or
                               * stream row (cp_catw_failed_since) */
    uint64_t *rep_close, *rep_lost, *rep_keys; /* reports, see catwriter.c */
    size_t nrep_close, caprep_close, nrep_lost, caprep_lost, nrep_keys, caprep_keys;
    int rep_kick, rep_unfull;
    uv_async_t async;
    cp_catw_state *x;         /* the transaction's side */
} cp_catw;

struct cp_server {
    const cp_server_config *cfg;
    uv_loop_t loop;
    uv_tcp_t listener;        /* plain agent port (if has_plain) */
    uv_tcp_t tls_listener;    /* TLS agent port (if has_tls) */
    int has_plain, has_tls;
    int tls_port;
    struct ssl_ctx_st *tls_ctx; /* new connections' context; replaced by a SIGHUP reload */
    uv_signal_t sighup;
    uint8_t *tls_buf;         /* plaintext out of one read's records (shared, like rbuf) */
    uv_check_t check;
    uv_timer_t sweep;
    uv_signal_t sigint, sigterm;
    int port;
    int stopping;
    int finished;             /* loop handles closed */
    cp_catalog *catalog;
    uv_work_t maintain;       /* catalog upkeep (WAL checkpoint) on the threadpool */
    int maintaining;
    int maintain_behind;      /* the last upkeep left work behind (a large WAL): run again */
    uint64_t next_maintain;   /* loop time of the next one */
    cp_rawlog_fdcache files;  /* open stream-file fds, capped (cp_rawlog.h) */
    int fs_fd;                /* the data directory, for syncfs of large batches (-1: none) */
    size_t nofile;            /* RLIMIT_NOFILE soft limit after raising it */
    uint64_t fd_refused;      /* connections refused for lack of fds */
    uint64_t fd_refused_logged_ms; /* last time that was logged (rate limit) */
    cp_conn *conns;           /* list head */
    size_t nconns;
    cp_sync_batch batches[2];
    cp_sync_batch *pending;   /* collecting members */
    cp_sync_batch *inflight;  /* in the threadpool, or NULL */
    uint8_t *rbuf;            /* shared read buffer */
    cp_buf scratch;           /* UTF-8 conversions in decoder sinks */
    uv_timer_t asm_timer;     /* assembly waits and hot-window upkeep */
    uint64_t next_windows;    /* loop time of the next windows_prepare */
    uint64_t asm_mem_high;    /* assembly's memory at its highest since the last malloc_trim */
    uint64_t calls_stored, calls_failed;
    int recovery_due; /* an incomplete restart leaves the registry with the writer's next report: kick then */
    cp_recovery recovery;
    /* the free-space floor (written on the loop thread, read by any: atomics) */
    int disk_low;
    uint64_t disk_free, disk_floor;
    uint64_t disk_refused, disk_refused_logged_ms;
    uint64_t buffered;        /* partial-record bytes held for all connections */
    size_t nbuffering;        /* connections holding some */
    cp_membudget tails;       /* the tail copies of every live file (--ingest-memory / 8) */
    cp_membudget values;      /* the assemblers' resolved-value caches (--ingest-memory / 16) */
    cp_wordpool *words;       /* the connections' dictionary words, each distinct one once */
    cp_conn **held;           /* the connections that read their share in this iteration */
    /* gate.c */
    uint64_t asm_share;       /* assembly's share of --ingest-memory (0: no gate) */
    uint64_t asm_waiting;     /* the connections' asm_waiting, summed */
    uint64_t gate_closings;   /* times the gate closed */
    uint64_t gate_logged_ms;  /* loop time it was last logged */
    int asm_over;             /* over the share (and not yet back under 3/4 of it) */
    cp_conn *gate_head, *gate_tail; /* the line, first come first */
    size_t ngated, ntickets;
    cp_conn *holders[CP_SRV_GATE_HOLDERS]; /* the ticket holders */
    uint32_t iter_gen;        /* loop iterations (wraps) */
    cp_catw catw;
    int writer_held;          /* reading stopped for the catalog writer's queue */
    cp_conn *last_reader;     /* the last to read before it did (where reading resumes) */
    uint64_t next_conn_id;
    size_t nheld, capheld;
};
/* The loop iteration ends: the held connections read again. */
void cp_srv_release_held(cp_server *s);
/* Reading on or off, as the connection's state says (update_reading). */
void cp_conn_update_reading(cp_conn *c);

/* Its stashed input goes on (after the gate let it in). */
void cp_conn_ungate(cp_conn *c);

/* gate.c: after a connection's input was processed (or its assembly pumped): its
 * assembly's waiting bytes counted again. */
void cp_srv_gate_account(cp_conn *c);
/* A run of payloads for a stream of this kind starts: 1 when the connection must stop
 * here (a trace payload while assembly is over its share and it holds no ticket: it is
 * in the line now, not read; the command stays unprocessed). */
int cp_srv_gate_stream(cp_conn *c, cp_stream_kind kind);
/* 1 when the connection's next trace payload would stop at the gate. */
int cp_srv_gate_may_stop(const cp_conn *c);
/* Once per loop iteration: tickets to the line, or the whole line back under the share. */
void cp_srv_gate_iteration(cp_server *s);
/* The connection goes: out of the line and the sums. */
void cp_srv_gate_drop(cp_conn *c);

/* The catalog writer's queue drained below its bound: connections read again. */
void cp_srv_reading_resume(cp_server *s);

/* catwriter.c: the loop's catalog writes, in order (copies are made when threaded). A
 * failure to make one (no memory) marks the connection hot_lost. */
int cp_catw_start(cp_server *s, uint64_t limit, int mode); /* mode: CP_CATW_* */
void cp_catw_stop(cp_server *s);  /* commits what is queued; the writer joined */
void cp_catw_free(cp_server *s);
int cp_catw_pod(cp_conn *c, int register_it, int64_t now_ms);
int cp_catw_stream(cp_conn *c, const cp_catalog_stream *row, int open);
int cp_catw_word(cp_conn *c, int32_t id, const char *text, size_t len);
int cp_catw_param(cp_conn *c, const cp_catalog_param *prm);
int cp_catw_call(cp_conn *c, const cp_call *call);
/* After the connection's last op: its restart becomes complete (unless an op of it
 * failed) and its key leaves the live registry when that transaction ends. */
void cp_catw_restart_done(cp_conn *c);
void cp_catw_windows(cp_server *s, int64_t now_ms);
/* Once per loop iteration: what was made goes to the writer (inline: commit when due). */
void cp_catw_publish(cp_server *s);
/* Ops made so far (the number of the last one). */
uint64_t cp_catw_gen(const cp_server *s);
int cp_catw_threaded(const cp_server *s);
/* Returns once the ops up to gen are committed or their transaction failed: threaded,
 * it waits (never call it on the loop thread then: it must be published first); inline,
 * it commits now (only on the loop thread). */
void cp_catw_settle(cp_server *s, uint64_t gen);
/* 1 if a transaction that failed held an op numbered gen or later. */
int cp_catw_failed_since(cp_server *s, uint64_t gen);
/* 1 while the ops in flight are over their bound. */
int cp_catw_full(const cp_server *s);

/* server.c */
void cp_srv_log(cp_server *s, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
int cp_srv_log_enabled(const cp_server *s, int level);
void cp_srv_maybe_finish(cp_server *s);
/* A connection was refused for lack of fds: count, log (rate-limited), free cached fds. */
void cp_srv_fd_shortage(cp_server *s, const char *why);
/* After the connection count changed: caps the stream files at the fds the sockets and
 * the reserve leave (closing clean ones); 0 if that leaves fewer than CP_SRV_MIN_FILES
 * or the open files still exceed it (then a new connection is refused). */
int cp_srv_fd_budget(cp_server *s);


/* Refuses work while the data directory is below its free-space floor: 1 when the
 * caller must refuse (logged, rate-limited), 0 otherwise. */
int cp_srv_disk_refuse(cp_server *s, const char *what);
/* A connection's decoders now hold `now` bytes of partial records (they held c->buffered):
 * 0, or -1 when it must be refused (the budget is spent and it holds more than its share). */
int cp_srv_buffered(cp_conn *c, uint64_t now);

/* conn.c */
void cp_conn_accept(cp_server *s, uv_stream_t *listener, int tls);
void cp_conn_reply(cp_conn *c, const void *p, size_t n);
void cp_conn_flush(cp_conn *c);
/* Replies 0xFF (after any earlier replies), then closes; logs the reason at warn. */
void cp_conn_fail(cp_conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Graceful close: finalize files, sync them, flush replies, shut down, free. */
void cp_conn_close(cp_conn *c, const char *reason);
/* Called by the sync batch when it is done with the connection. */
void cp_conn_sync_done(cp_conn *c, int err);
void cp_conn_sweep(cp_conn *c, uint64_t now);
int cp_conn_has_unsynced(const cp_conn *c);

/* tls.c */
/* Loads the certificates (cfg->tls_*) into s->tls_ctx and installs the SIGHUP reload. */
int cp_srv_tls_open(cp_server *s, char *err, size_t errlen);
void cp_srv_tls_close(cp_server *s);
/* A session for a connection accepted on the TLS port. */
int cp_srv_tls_start(cp_conn *c);
/* The handshake is done: logs it and takes the namespace from the client certificate
 * when pinning is on. CP_OK, or CP_EPROTO (logged; the caller closes). */
int cp_srv_tls_ready(cp_conn *c);
/* A pinned connection identifies as namespace ns: 1 if its certificate allows it, else
 * 0 (logged; the caller fails the connection). */
int cp_srv_tls_ns_ok(cp_conn *c, cp_field ns);

/* proto.c */
/* Metrics: a REQUEST_ACK_FLUSH's 0x00 was queued (its latency since the read it came in). */
void cp_srv_ack_flushed(cp_conn *c);
enum { CP_PROTO_NEXT, CP_PROTO_STOP, CP_PROTO_RETRY };
/* Handles one command; NEXT = continue parsing, STOP = the connection stopped
 * (sync wait or closing) after consuming it, RETRY = stopped without consuming it. */
int cp_proto_handle(cp_conn *c, const cp_cmd *cmd);
/* RCV_DATA in runs (conn.c): the file a data command writes to, or NULL once the
 * connection was failed (unknown handle, before the handshake, disk below its floor). */
cp_sfile *cp_proto_data_target(cp_conn *c, const cp_cmd *cmd);
/* Consecutive payloads of one file (from cp_proto_data_target) written with one writev,
 * decoded in order and acknowledged (0x00 each, or 0xFF at the first that failed):
 * CP_PROTO_NEXT, _STOP, or _RETRY (no fd: nothing done, the whole run is parsed again
 * after a sync). */
int cp_proto_data_run(cp_conn *c, cp_sfile *f, const struct iovec *v, int n);
void cp_proto_free_ident(cp_conn *c);
/* Refuses an INIT (its reply, logged) and closes the connection; CP_PROTO_STOP. */
int cp_proto_init_fail(cp_conn *c, const char *why);

/* sfile.c */
int cp_sfile_open(cp_conn *c, cp_stream_kind kind, int32_t seq, int32_t first_word_id, cp_sfile **out);
/* Appends one payload, then decodes it. CP_AGAIN: no fd could be opened for the file
 * (all open ones are dirty or pinned); nothing was done and the write can be retried
 * after a sync. On other failures the file is failed, its raw bytes cut to the clean
 * prefix, and the reason is in f->error. */
int cp_sfile_write(cp_sfile *f, const uint8_t *p, size_t n);
/* The same for nv payloads (nv <= CP_IOV_MAX) in one writev; *ok = the payloads decoded
 * whole before a failure (all nv on CP_OK, 0 when the write failed). */
struct iovec;
int cp_sfile_writev(cp_sfile *f, const struct iovec *v, int nv, size_t *ok);
/* Ends the file: finish the decoder, drop a torn tail, mark the catalog row. Idempotent. */
void cp_sfile_finalize(cp_sfile *f);
void cp_sfile_free(cp_sfile *f);
void cp_sfile_handle_str(const cp_sfile *f, char out[37]);

/* recover.c */
uint64_t cp_srv_restart_key(const cp_catalog_pod *pod);
int cp_srv_recovery_init(cp_server *s);
/* Opens the worker's catalog connection and starts its thread (a first pass at once). */
int cp_srv_recovery_start(cp_server *s, char *err, size_t errlen);
void cp_srv_recovery_stop(cp_server *s);
void cp_srv_recovery_free(cp_server *s);
/* A restart's connection is live (1) or gone (0): the worker leaves live ones alone. */
void cp_srv_recovery_live(cp_server *s, uint64_t key, int live);
/* Asks for a pass soon (a hot-tier commit failed). */
void cp_srv_recovery_kick(cp_server *s);
void cp_srv_recovery_status(cp_server *s, cp_recovery_status *out);

/* assembly.c */
int cp_srv_asm_open(cp_conn *c);
/* Final pump (everything waiting is stored, with reasons) and free. Idempotent. */
void cp_srv_asm_finish(cp_conn *c);
/* After new stream bytes were stored: assemble what became ready. */
void cp_srv_asm_pump(cp_conn *c);
void cp_srv_asm_timer_start(cp_server *s);
cp_dec_sink cp_srv_asm_sink(cp_sfile *f);   /* the sink of calls/trace/suspend files */
/* A new trace/sql/xml file keeps its recent bytes in memory for call assembly. */
void cp_srv_asm_file_opened(cp_sfile *f);

/* syncbatch.c */
void cp_sync_init(cp_server *s);
void cp_sync_free(cp_server *s);
/* Adds the connection's unsynced files and directories to the pending batch. */
int cp_sync_join(cp_conn *c, int ack);
/* No fd could be opened for c's write: c and other connections with dirty files join
 * the pending batch (no ack), so that once synced their fds can be closed. */
int cp_sync_pressure(cp_conn *c);
/* The reply (a handshake's or an INIT's, n <= 40 bytes) goes out once the connection's
 * catalog ops from `lo` on are committed and its files and directories are durable: it
 * joins the pending batch and stops reading meanwhile. A commit that failed turns the
 * reply into a refusal (0xFF, or a refused INIT when `init`). */
int cp_sync_join_reply(cp_conn *c, uint64_t lo, const uint8_t *reply, size_t n, int init);
/* Hands the pending batch to the threadpool unless one is in flight. */
void cp_sync_submit(cp_server *s);

#endif
