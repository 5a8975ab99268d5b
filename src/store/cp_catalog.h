/* cp_catalog.h -- the catalog: pods, pod restarts, dictionary, params and stream files
 * (storage.md "Catalog tables", seed 004 "PostgreSQL Schema").
 *
 * The catalog is an interface (a table of function pointers) so SQLite (embedded
 * default, catalog_sqlite.c) and PostgreSQL (scale-out) can sit behind the same calls.
 * Times are epoch milliseconds. pod_id is "<namespace>/<pod_name>".
 *
 * Writes are batched: the first write after a commit opens a transaction, and the
 * owner calls cp_catalog_commit() once per event-loop iteration. A catalog is used
 * from one thread only. Every function returns CP_OK or a negative status;
 * cp_catalog_errmsg() describes the last failure.
 */
#ifndef CP_CATALOG_H
#define CP_CATALOG_H

#include "common/cp_common.h"
#include "model/cp_model.h"
#include "store/cp_hot.h"

#include <stdint.h>

/* One pod restart. Strings are NUL-terminated UTF-8 as the agent sent them. */
typedef struct cp_catalog_pod {
    const char *ns;
    const char *service;
    const char *pod;
    const char *pod_id;
    int64_t restart_ms;
} cp_catalog_pod;

/* One stream file of a pod restart (the `streams` table). */
typedef struct cp_catalog_stream {
    const cp_catalog_pod *pod;
    const char *stream;           /* wire name */
    int64_t file_index;           /* rollingSequenceId + 1 */
    const char *handle;           /* UUID text */
    int64_t rotation_period_ms;
    int64_t rotation_size;
    int64_t opened_ms;
    int64_t closed_ms;            /* stream_close only */
    uint64_t bytes;               /* stream_close only */
    const char *status;           /* "open" | "closed" | "failed" */
    const char *error;            /* NULL unless failed */
    const char *path;             /* raw log file */
} cp_catalog_stream;

typedef struct cp_catalog_param {
    const char *name;
    size_t name_len;
    int index;                    /* 0/1 */
    int list;                     /* 0/1 */
    int32_t order;
    const char *signature;
    size_t signature_len;
} cp_catalog_param;


/* ---- the cold tier (storage.md "Cold tier") ----------------------------------------------
 *
 * Compaction moves closed hot windows into Parquet objects. A *claim* is the set of
 * windows (table pairs) of one hour, ending at or before `until`, that one compactor takes
 * at once: their inventory rows go ready -> persisting with the claim's key, the node and
 * the time, in one transaction, so two nodes never compact the same window. The claim key
 * is deterministic -- the table suffix of its first window ("20260102_1300", or
 * "20260102_1305_1" for a late batch) -- and so are the object keys derived from it, so a
 * claim abandoned by a crash is taken over (after its lease, or at once by `cloudprof
 * compact`) and redone to the same objects and rows.
 *
 * Late calls: a window that is persisting or persisted never gets rows again. The hot
 * writer checks the window's status in each write transaction (SQLite: at its first insert;
 * PostgreSQL: at commit, FOR KEY SHARE on the inventory rows, so a claim's FOR UPDATE waits
 * for writers in flight) and puts late calls in the window's
 * next batch table (calls_<suffix>_<n>, n >= 1), compacted by a later claim. */

typedef struct cp_compact_job {
    char claim[40];              /* claim key (table suffix of the first window) */
    int64_t hour_ms;             /* start of the hour (UTC) */
    int64_t from_ms, to_ms;      /* union of the claimed windows [from, to) */
    int64_t rows;                /* calls in the claimed windows (inventory rows_count) */
    size_t windows;              /* window table pairs claimed */
    int taken_over;              /* 1: this claim was abandoned by an earlier run */
    char node[128];              /* the compactor holding it (claimed_by): finish and release
                                  * act only while the claim is still this node's */
} cp_compact_job;

/* One cold object (an s3_files row). */
typedef struct cp_cold_file {
    const char *uuid;            /* deterministic: the object key */
    const char *key;             /* object key in the store */
    const char *url;             /* remote_storage_path */
    const char *local_path;      /* local_file_path (temporary Parquet file) */
    const char *file_type;       /* "calls" | "dumps" */
    const char *dump_type;       /* NULL for calls */
    const char *ns;
    int32_t duration_range;      /* exclusive upper bound in ms (seed Appendix A: 1, 10, ..., 90000; INT32_MAX for >90s); 0 for dumps */
    int64_t start_ms, end_ms;    /* the hour (or claim) the file covers */
    int64_t min_ts, max_ts;      /* smallest / largest call time in the file */
    int64_t rows, size;
    const char *status;          /* creating | created | transferring | completed | to_delete */
    const char *services;        /* JSON array of service names */
    const char *indexed_params;  /* JSON array of the param names indexed for this file */
    const char *indexed_maxlen;  /* JSON object: indexed param -> longest value in bytes (values
                                  * indexed ASCII-lowercased); NULL = unknown (older files) */
    const char *claim;           /* claim key that wrote it */
} cp_cold_file;

typedef struct cp_compact_opts {
    int64_t until_ms;            /* only windows ending at or before this */
    const char *node;            /* this compactor's name (claimed_by) */
    int64_t lease_ms;            /* a claim older than this is abandoned; 0 = take over any */
    int64_t now_ms;
} cp_compact_opts;

typedef struct cp_catalog cp_catalog;

typedef struct cp_catalog_ops {
    const char *name; /* "sqlite" */
    /* pods upsert (unique namespace+pod_name) and a pod_restarts row. */
    int (*pod_register)(cp_catalog *c, const cp_catalog_pod *p, int64_t now_ms);
    /* last_active of the pod and of its restart. */
    int (*pod_touch)(cp_catalog *c, const cp_catalog_pod *p, int64_t now_ms);
    /* dictionary word at position (replaces a re-sent word). */
    int (*dict_put)(cp_catalog *c, const cp_catalog_pod *p, int32_t position, const char *tag, size_t tag_len);
    /* params row (a re-sent parameter replaces the old one). */
    int (*param_put)(cp_catalog *c, const cp_catalog_pod *p, const cp_catalog_param *prm);
    /* streams row with status "open". */
    int (*stream_open)(cp_catalog *c, const cp_catalog_stream *s);
    /* closed_ms, bytes, status, error of an existing streams row. */
    int (*stream_close)(cp_catalog *c, const cp_catalog_stream *s);
    /* Hot tier (storage.md "Hot tier", one table per window since issue 18): one
     * assembled call, with its trace blob, into the calls_ table of the window holding
     * call->ts_ms, inside the open write transaction (so batched like the rest). A
     * missing window table is created on the spot (status
     * creating -> ready in `inventory`). Per-window call counts per pod restart are kept
     * for discovery. */
    int (*call_put)(cp_catalog *c, const cp_call *call);
    /* Window length and how far ahead the maintenance task creates windows
     * (defaults 5 min, 3 h). Call before any call_put. */
    int (*set_windows)(cp_catalog *c, int64_t window_ms, int64_t ahead_ms);
    /* The idle-method list of the hot rollups' system flag (query/cp_rollup.h; kept by
     * pointer: it must outlive the catalog). Default: the built-in list. Call it before
     * any call_put (entries already held keep the fingerprint they were made with). */
    void (*set_idle)(cp_catalog *c, const char *const *idle, size_t n);
    /* The bound of SQLite's WAL (default 64 MiB); NULL = no WAL (PostgreSQL). */
    int (*set_wal_max)(cp_catalog *c, uint64_t bytes);
    /* A bulk writer (imports): a small page cache (SQLite); NULL = nothing to change. */
    int (*set_bulk)(cp_catalog *c);
    /* The writer's memory for what it has not written yet, at most this many bytes:
     * SQLite's page cache (default 64 MiB; at least 1 MiB); PostgreSQL's COPY tuples
     * buffered before a flush (default 64 MiB; at least 1 MiB). */
    int (*set_cache_max)(cp_catalog *c, uint64_t bytes);
    /* Commits what is open, then every later commit is durable when it returns (on) or
     * not (off, SQLite's default here: the raw log is the durable copy). SQLite: a FULL
     * commit fsyncs the WAL, and with it every commit before; NULL = commits are always
     * durable (PostgreSQL). For writers with no raw log behind them (imports). */
    int (*set_durable)(cp_catalog *c, int on);
    /* The maintenance task's share of the hot tier: creates every window from the one
     * holding now_ms up to now_ms + ahead (inventory status ready). Cheap when they
     * exist. Runs on the owner's thread. */
    int (*windows_prepare)(cp_catalog *c, int64_t now_ms);
    /* ---- recovery: pod restarts whose calls may be missing from the hot tier ---- */
    /* fn(pod) for every pod restart with stream files that may hold calls the hot tier
     * lacks: a stream file still "open" (its connection is live, on this node or another,
     * or the server was killed while it was), or hot_complete = 0 (a hot-tier write of its
     * calls failed, or its last one did not commit). Live ones are the caller's to skip. */
    int (*unfinished)(cp_catalog *c, int (*fn)(void *ud, const cp_catalog_pod *p), void *ud);
    /* fn(stream, file_index, path) for the restart's stream files, by stream then index. */
    int (*restart_files)(cp_catalog *c, const cp_catalog_pod *p,
                         int (*fn)(void *ud, const char *stream, int64_t file_index, const char *path), void *ud);
    /* 1 if the hot tier already has this call (same ref), 0 if not, or a negative status. */
    int (*call_exists)(cp_catalog *c, const cp_call *call);
    /* Marks the restart's open stream files closed (status "closed", error = note) and
     * the restart complete (recovery has stored its calls). */
    int (*restart_finish)(cp_catalog *c, const cp_catalog_pod *p, const char *note);
    /* Every call of the restart's raw log is in the hot tier (its connection ended with
     * no failed hot-tier write): hot_complete = 1, in the open transaction. */
    int (*restart_complete)(cp_catalog *c, const cp_catalog_pod *p);
    /* ---- compaction (one compactor thread/process; its own cp_catalog) ---- */
    /* Claims the oldest hour's eligible windows (see above), committing at once.
     * CP_ENOTFOUND when nothing is eligible. Windows with no rows are part of the claim
     * (they are persisted and dropped with it). */
    int (*compact_claim)(cp_catalog *c, const cp_compact_opts *o, cp_compact_job *job);
    /* fn(call) with its trace for every call of the claim, ordered by namespace, duration
     * range, pod_name, time, restart_time, trace_file_index, buffer_offset, record_index.
     * Reads in one snapshot; fn's pointers are valid during the call only. */
    int (*compact_calls)(cp_catalog *c, const cp_compact_job *job, cp_call_fn fn, void *ud);
    /* Upserts the s3_files row (by uuid) with f's fields and status; refreshes the claim's
     * lease. Commits. */
    int (*cold_file_put)(cp_catalog *c, const cp_compact_job *job, const cp_cold_file *f);
    /* Removes what an earlier run of this claim left: s3_files rows with this claim that
     * are not completed and their inverted-index rows. fn(key) first for each such row's
     * object key (the caller deletes the objects). Commits. */
    int (*compact_reset)(cp_catalog *c, const cp_compact_job *job, int (*fn)(void *ud, const char *key), void *ud);
    /* Inverted index (seed "Inverted Indexes"): the distinct (value) of an indexed param
     * in a file. Batched into the open transaction; call commit() every few thousand. */
    int (*index_put)(cp_catalog *c, const char *param, size_t param_len, const char *value, size_t value_len,
                     const char *file_uuid);
    /* Names of the params to index: every param some pod declared indexed. */
    int (*indexed_params)(cp_catalog *c, int (*fn)(void *ud, const char *name), void *ud);
    /* One transaction: the claim's files (uuids[0..n)) -> completed, its windows ->
     * persisted, their tables dropped. After it, readers see the cold files and not the
     * hot rows; before it, the hot rows and not the files. CP_EABORT (nothing done) when
     * another compactor took the claim over meanwhile (claimed_by is not job->node). */
    int (*compact_finish)(cp_catalog *c, const cp_compact_job *job, const char *const *uuids, size_t n);
    /* Gives a claim up after a failure (windows back to ready). */
    int (*compact_release)(cp_catalog *c, const cp_compact_job *job);
    /* ---- retention ---- */
    /* Completed cold files whose end_ms <= before_ms -> to_delete; their inverted-index
     * rows, call_counts and persisted inventory rows older than before_ms are deleted.
     * *marked = files marked. Commits. */
    int (*retention_mark)(cp_catalog *c, int64_t before_ms, int64_t *marked);
    /* fn(uuid, key) for every to_delete file (at most limit). */
    int (*retention_list)(cp_catalog *c, size_t limit, int (*fn)(void *ud, const char *uuid, const char *key),
                          void *ud);
    /* Deletes the s3_files row of a to_delete file whose object is gone. */
    int (*retention_forget)(cp_catalog *c, const char *uuid);
    /* commits the open write transaction, if any. */
    int (*commit)(cp_catalog *c);
    const char *(*errmsg)(const cp_catalog *c);
    /* Background upkeep that may wait on the disk (SQLite: a WAL checkpoint, which
     * fsyncs). The one operation that may run on another thread, concurrently with the
     * others: it uses its own connection. Never run two at once. CP_AGAIN: it is behind
     * (the WAL is still large): run it again soon. */
    int (*maintain)(cp_catalog *c);
    /* commits, then releases everything. */
    void (*close)(cp_catalog *c);
} cp_catalog_ops;

struct cp_catalog {
    const cp_catalog_ops *ops;
};

/* Opens the catalog `spec` names: "postgres://..." / "postgresql://..." (libpq URI) or
 * a SQLite file path. */
int cp_catalog_open(const char *spec, cp_catalog **out, char *err, size_t errlen);

/* Process-wide setup of the embedded database, once, before any catalog or reader is
 * opened (main() calls it): SQLite's allocation statistics are turned off -- they take a
 * global mutex on every allocation (~1.4 % of ingest CPU) and nothing reads them. */
void cp_catalog_process_init(void);
/* 1 if spec names a PostgreSQL catalog. */
int cp_catalog_is_postgres(const char *spec);
/* Opens a PostgreSQL catalog (libpq URI) and applies pending migrations (under an
 * advisory lock, so several nodes may start at once). */
int cp_catalog_open_pg(const char *conninfo, cp_catalog **out, char *err, size_t errlen);
int cp_catalog_pg_schema_version(void);
const char *cp_catalog_pg_migration(int version);

/* Opens (creating if needed) <path> as a SQLite catalog and applies pending migrations.
 * On failure *out is NULL and err holds the reason. */
int cp_catalog_open_sqlite(const char *path, cp_catalog **out, char *err, size_t errlen);

/* Highest migration the SQLite catalog knows (for tests and `--help`). */
int cp_catalog_sqlite_schema_version(void);
/* The SQL of migration `version` (1-based), NULL outside the range. Migrations are never
 * edited once released, so tests can build a catalog as an older release left it. */
const char *cp_catalog_sqlite_migration(int version);

static inline int cp_catalog_pod_register(cp_catalog *c, const cp_catalog_pod *p, int64_t now_ms)
{
    return c->ops->pod_register(c, p, now_ms);
}
static inline int cp_catalog_pod_touch(cp_catalog *c, const cp_catalog_pod *p, int64_t now_ms)
{
    return c->ops->pod_touch(c, p, now_ms);
}
static inline int cp_catalog_dict_put(cp_catalog *c, const cp_catalog_pod *p, int32_t position, const char *tag,
                                      size_t tag_len)
{
    return c->ops->dict_put(c, p, position, tag, tag_len);
}
static inline int cp_catalog_param_put(cp_catalog *c, const cp_catalog_pod *p, const cp_catalog_param *prm)
{
    return c->ops->param_put(c, p, prm);
}
static inline int cp_catalog_stream_open(cp_catalog *c, const cp_catalog_stream *s)
{
    return c->ops->stream_open(c, s);
}
static inline int cp_catalog_stream_close(cp_catalog *c, const cp_catalog_stream *s)
{
    return c->ops->stream_close(c, s);
}
static inline int cp_catalog_call_put(cp_catalog *c, const cp_call *call) { return c->ops->call_put(c, call); }
static inline int cp_catalog_set_windows(cp_catalog *c, int64_t window_ms, int64_t ahead_ms)
{
    return c->ops->set_windows(c, window_ms, ahead_ms);
}
static inline void cp_catalog_set_idle(cp_catalog *c, const char *const *idle, size_t n)
{
    if (c->ops->set_idle) c->ops->set_idle(c, idle, n);
}
static inline int cp_catalog_set_wal_max(cp_catalog *c, uint64_t bytes)
{
    return c->ops->set_wal_max ? c->ops->set_wal_max(c, bytes) : CP_OK;
}
static inline int cp_catalog_set_bulk(cp_catalog *c) { return c->ops->set_bulk ? c->ops->set_bulk(c) : CP_OK; }
static inline int cp_catalog_set_cache_max(cp_catalog *c, uint64_t bytes)
{
    return c->ops->set_cache_max ? c->ops->set_cache_max(c, bytes) : CP_OK;
}
static inline int cp_catalog_set_durable(cp_catalog *c, int on)
{
    return c->ops->set_durable ? c->ops->set_durable(c, on) : c->ops->commit(c);
}
static inline int cp_catalog_windows_prepare(cp_catalog *c, int64_t now_ms)
{
    return c->ops->windows_prepare(c, now_ms);
}
static inline int cp_catalog_unfinished(cp_catalog *c, int (*fn)(void *ud, const cp_catalog_pod *p), void *ud)
{
    return c->ops->unfinished(c, fn, ud);
}
static inline int cp_catalog_restart_files(cp_catalog *c, const cp_catalog_pod *p,
                                           int (*fn)(void *ud, const char *stream, int64_t file_index,
                                                     const char *path),
                                           void *ud)
{
    return c->ops->restart_files(c, p, fn, ud);
}
static inline int cp_catalog_call_exists(cp_catalog *c, const cp_call *call) { return c->ops->call_exists(c, call); }
static inline int cp_catalog_restart_finish(cp_catalog *c, const cp_catalog_pod *p, const char *note)
{
    return c->ops->restart_finish(c, p, note);
}
static inline int cp_catalog_restart_complete(cp_catalog *c, const cp_catalog_pod *p)
{
    return c->ops->restart_complete(c, p);
}
static inline int cp_catalog_compact_claim(cp_catalog *c, const cp_compact_opts *o, cp_compact_job *job)
{
    return c->ops->compact_claim(c, o, job);
}
static inline int cp_catalog_compact_calls(cp_catalog *c, const cp_compact_job *job, cp_call_fn fn, void *ud)
{
    return c->ops->compact_calls(c, job, fn, ud);
}
static inline int cp_catalog_cold_file_put(cp_catalog *c, const cp_compact_job *job, const cp_cold_file *f)
{
    return c->ops->cold_file_put(c, job, f);
}
static inline int cp_catalog_compact_reset(cp_catalog *c, const cp_compact_job *job,
                                           int (*fn)(void *ud, const char *key), void *ud)
{
    return c->ops->compact_reset(c, job, fn, ud);
}
static inline int cp_catalog_index_put(cp_catalog *c, const char *param, size_t param_len, const char *value,
                                       size_t value_len, const char *file_uuid)
{
    return c->ops->index_put(c, param, param_len, value, value_len, file_uuid);
}
static inline int cp_catalog_indexed_params(cp_catalog *c, int (*fn)(void *ud, const char *name), void *ud)
{
    return c->ops->indexed_params(c, fn, ud);
}
static inline int cp_catalog_compact_finish(cp_catalog *c, const cp_compact_job *job, const char *const *uuids,
                                            size_t n)
{
    return c->ops->compact_finish(c, job, uuids, n);
}
static inline int cp_catalog_compact_release(cp_catalog *c, const cp_compact_job *job)
{
    return c->ops->compact_release(c, job);
}
static inline int cp_catalog_retention_mark(cp_catalog *c, int64_t before_ms, int64_t *marked)
{
    return c->ops->retention_mark(c, before_ms, marked);
}
static inline int cp_catalog_retention_list(cp_catalog *c, size_t limit,
                                            int (*fn)(void *ud, const char *uuid, const char *key), void *ud)
{
    return c->ops->retention_list(c, limit, fn, ud);
}
static inline int cp_catalog_retention_forget(cp_catalog *c, const char *uuid)
{
    return c->ops->retention_forget(c, uuid);
}
static inline int cp_catalog_commit(cp_catalog *c) { return c->ops->commit(c); }
static inline int cp_catalog_maintain(cp_catalog *c) { return c->ops->maintain ? c->ops->maintain(c) : CP_OK; }
static inline const char *cp_catalog_errmsg(const cp_catalog *c) { return c->ops->errmsg(c); }
static inline void cp_catalog_close(cp_catalog *c)
{
    if (c) c->ops->close(c);
}

#endif
