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
    /* Hot tier (storage.md "Hot tier"): one assembled call into the calls_/traces_ tables
     * of the window holding call->ts_ms, inside the open write transaction (so batched
     * like the rest). A missing window table pair is created on the spot (status
     * creating -> ready in `inventory`). Per-window call counts per pod restart are kept
     * for discovery. */
    int (*call_put)(cp_catalog *c, const cp_call *call);
    /* Window length and how far ahead the maintenance task creates windows
     * (defaults 5 min, 3 h). Call before any call_put. */
    int (*set_windows)(cp_catalog *c, int64_t window_ms, int64_t ahead_ms);
    /* The maintenance task's share of the hot tier: creates every window from the one
     * holding now_ms up to now_ms + ahead (inventory status ready). Cheap when they
     * exist. Runs on the owner's thread. */
    int (*windows_prepare)(cp_catalog *c, int64_t now_ms);
    /* ---- crash recovery: pod restarts whose connection did not end cleanly ---- */
    /* fn(pod) for every pod restart with a stream file still "open" (the server was
     * killed while the agent was connected). */
    int (*unfinished)(cp_catalog *c, int (*fn)(void *ud, const cp_catalog_pod *p), void *ud);
    /* fn(stream, file_index, path) for the restart's stream files, by stream then index. */
    int (*restart_files)(cp_catalog *c, const cp_catalog_pod *p,
                         int (*fn)(void *ud, const char *stream, int64_t file_index, const char *path), void *ud);
    /* 1 if the hot tier already has this call (same ref), 0 if not, or a negative status. */
    int (*call_exists)(cp_catalog *c, const cp_call *call);
    /* Marks the restart's open stream files closed (status "closed", error = note). */
    int (*restart_finish)(cp_catalog *c, const cp_catalog_pod *p, const char *note);
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
static inline int cp_catalog_commit(cp_catalog *c) { return c->ops->commit(c); }
static inline int cp_catalog_maintain(cp_catalog *c) { return c->ops->maintain ? c->ops->maintain(c) : CP_OK; }
static inline const char *cp_catalog_errmsg(const cp_catalog *c) { return c->ops->errmsg(c); }
static inline void cp_catalog_close(cp_catalog *c)
{
    if (c) c->ops->close(c);
}

#endif
