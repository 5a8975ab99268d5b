/* catalog_shared.c -- the catalog operations that are the same SQL on SQLite and
 * PostgreSQL, written once over sqldb.h on the catalog's own connection (catalog_core.h):
 * the metadata writes (pods, restarts, params, stream files), crash recovery's questions
 * and completions, and the cold tier's files, claims finished or released, the indexed
 * params and retention.
 *
 * Dialect: PostgreSQL is shared by several nodes, so rows another node may change at the
 * same time are locked where the operation decides on them (FOR UPDATE / FOR KEY SHARE);
 * SQLite's write transaction already excludes every other writer. */
#include "store/catalog/catalog_core.h"
#include "store/cp_cold.h"
#include "store/hot/hot_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CLAIM_MAX_WINDOWS 4096 /* window tables in one claim (an hour of 1-minute windows with batches) */

static cp_catalog_core *core_of(cp_catalog *c) { return (cp_catalog_core *)c; }

/* SQL text only PostgreSQL needs (a row lock for other nodes), "" on SQLite. */
static const char *pg_only(const cp_catalog_core *k, const char *text)
{
    return cp_sqldb_is_pg(k->db) ? text : "";
}

static int fail(cp_catalog_core *k, int st, const char *what)
{
    if (cp_sqldb_errmsg(k->db)[0]) snprintf(k->err, k->errlen, "%s: %s", what, cp_sqldb_errmsg(k->db));
    return st;
}

static int oom(cp_catalog_core *k)
{
    snprintf(k->err, k->errlen, "out of memory");
    return CP_ENOMEM;
}

/* One statement; a failure of the database is described as "what: ...". */
static int exec(cp_catalog_core *k, const char *sql, const cp_sql_val *p, size_t np, cp_sqldb_row_fn fn, void *ud,
                int64_t *changes, const char *what)
{
    int st = cp_sqldb_exec(k->db, sql, p, np, fn, ud, changes);
    return st == CP_OK ? CP_OK : fail(k, st, what);
}

/* ---- transactions of their own ------------------------------------------------------------------ */

static int own_begin(cp_catalog_core *k)
{
    int st = k->hooks->settle(&k->base);
    if (st != CP_OK) return st;
    st = cp_sqldb_begin(k->db);
    return st == CP_OK ? CP_OK : fail(k, st, "begin");
}

/* Commits on CP_OK, else rolls back; returns st (or the commit's failure). */
static int own_end(cp_catalog_core *k, int st)
{
    if (st != CP_OK) {
        cp_sqldb_rollback(k->db);
        return st;
    }
    st = cp_sqldb_commit(k->db);
    return st == CP_OK ? CP_OK : fail(k, st, "commit");
}

/* ---- row helpers ---------------------------------------------------------------------------------- */

/* Names from column 0 that pass ok(), copied (they are spliced into SQL). */
typedef struct names {
    cp_catalog_core *k;
    int (*ok)(const char *name);
    size_t max;
    char (*v)[CP_COLD_INV_NAME];
    size_t n, cap;
} names;

static int row_name(void *ud, const cp_sql_val *c, size_t n)
{
    names *a = ud;
    const char *name = n ? cp_sql_opt(&c[0]) : NULL;
    if (!name || !a->ok(name) || strlen(name) >= CP_COLD_INV_NAME) return CP_OK;
    if (a->n == a->max) {
        snprintf(a->k->err, a->k->errlen, "more than %zu tables", a->max);
        return CP_ELIMIT;
    }
    if (cp_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v, 16) != CP_OK) return oom(a->k);
    snprintf(a->v[a->n++], CP_COLD_INV_NAME, "%s", name);
    return CP_OK;
}

static int list_names(cp_catalog_core *k, const char *sql, const cp_sql_val *p, size_t np, int (*ok)(const char *),
                      size_t max, names *out, const char *what)
{
    *out = (names){k, ok, max, NULL, 0, 0};
    int st = exec(k, sql, p, np, row_name, out, NULL, what);
    if (st != CP_OK) {
        free(out->v);
        out->v = NULL;
        out->n = 0;
    }
    return st;
}

/* ---- metadata writes (batched) ------------------------------------------------------------------- */

/* A batched write: joins the catalog's open transaction. */
static int batched(cp_catalog_core *k, const char *sql, const cp_sql_val *p, size_t np, const char *what)
{
    int st = k->hooks->batch(&k->base);
    if (st != CP_OK) return st;
    st = exec(k, sql, p, np, NULL, NULL, NULL, what);
    if (st != CP_OK) k->hooks->batch_failed(&k->base);
    return st;
}

int cp_cat_pod_register(cp_catalog *c, const cp_catalog_pod *p, int64_t now_ms)
{
    cp_catalog_core *k = core_of(c);
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO pods (namespace, service_name, pod_name, active_since, last_restart, last_active, tags,"
             " pod_id) VALUES ($1, $2, $3, $4, $4, $5, '{}', $6)"
             " ON CONFLICT (namespace, pod_name) DO UPDATE SET service_name = excluded.service_name,"
             " last_restart = %s(coalesce(pods.last_restart, 0), excluded.last_restart),"
             " last_active = excluded.last_active",
             cp_sqldb_is_pg(k->db) ? "greatest" : "max");
    cp_sql_val v[6] = {cp_sql_text(p->ns),         cp_sql_text(p->service), cp_sql_text(p->pod),
                       cp_sql_i64(p->restart_ms), cp_sql_i64(now_ms),      cp_sql_text(p->pod_id)};
    int st = batched(k, sql, v, 6, "pods upsert");
    if (st != CP_OK) return st;
    /* a restart registered again (a reconnect) starts over: its calls are not known complete */
    cp_sql_val r[6] = {cp_sql_text(p->pod),     cp_sql_i64(p->restart_ms), cp_sql_text(p->ns),
                       cp_sql_text(p->service), cp_sql_text(p->pod_id),    cp_sql_i64(now_ms)};
    return batched(k,
                   "INSERT INTO pod_restarts (pod_name, restart_time, namespace, service_name, pod_id, active_since,"
                   " last_active, hot_complete) VALUES ($1, $2, $3, $4, $5, $2, $6, 0)"
                   " ON CONFLICT (pod_id, restart_time) DO UPDATE SET pod_name = excluded.pod_name,"
                   " namespace = excluded.namespace, service_name = excluded.service_name,"
                   " active_since = excluded.active_since, last_active = excluded.last_active, hot_complete = 0",
                   r, 6, "pod_restarts upsert");
}

int cp_cat_pod_touch(cp_catalog *c, const cp_catalog_pod *p, int64_t now_ms)
{
    cp_catalog_core *k = core_of(c);
    cp_sql_val v[3] = {cp_sql_i64(now_ms), cp_sql_text(p->ns), cp_sql_text(p->pod)};
    int st = batched(k, "UPDATE pods SET last_active = $1 WHERE namespace = $2 AND pod_name = $3", v, 3, "pods touch");
    if (st != CP_OK) return st;
    cp_sql_val r[3] = {cp_sql_i64(now_ms), cp_sql_text(p->pod_id), cp_sql_i64(p->restart_ms)};
    return batched(k, "UPDATE pod_restarts SET last_active = $1 WHERE pod_id = $2 AND restart_time = $3", r, 3,
                   "pod_restarts touch");
}

int cp_cat_param_put(cp_catalog *c, const cp_catalog_pod *p, const cp_catalog_param *prm)
{
    cp_sql_val v[8] = {cp_sql_text(p->pod),
                       cp_sql_i64(p->restart_ms),
                       cp_sql_textn(prm->name, prm->name_len),
                       cp_sql_i64(prm->index ? 1 : 0),
                       cp_sql_i64(prm->list ? 1 : 0),
                       cp_sql_i64(prm->order),
                       cp_sql_textn(prm->signature ? prm->signature : "", prm->signature ? prm->signature_len : 0),
                       cp_sql_text(p->pod_id)};
    return batched(core_of(c),
                   "INSERT INTO params (pod_name, restart_time, param_name, param_index, param_list, param_order,"
                   " signature, pod_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)"
                   " ON CONFLICT (pod_id, restart_time, param_name) DO UPDATE SET pod_name = excluded.pod_name,"
                   " param_index = excluded.param_index, param_list = excluded.param_list,"
                   " param_order = excluded.param_order, signature = excluded.signature",
                   v, 8, "params upsert");
}

int cp_cat_stream_open(cp_catalog *c, const cp_catalog_stream *x)
{
    cp_sql_val v[9] = {cp_sql_text(x->pod->pod_id),        cp_sql_i64(x->pod->restart_ms), cp_sql_text(x->stream),
                       cp_sql_i64(x->file_index),          cp_sql_text(x->handle),         cp_sql_i64(x->rotation_period_ms),
                       cp_sql_i64(x->rotation_size),       cp_sql_i64(x->opened_ms),       cp_sql_text(x->path)};
    return batched(core_of(c),
                   "INSERT INTO streams (pod_id, restart_time, stream, file_index, handle, rotation_period,"
                   " rotation_size, opened_ms, closed_ms, bytes, status, error, path)"
                   " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, NULL, 0, 'open', NULL, $9)"
                   " ON CONFLICT (pod_id, restart_time, stream, file_index) DO UPDATE SET"
                   " handle = excluded.handle, rotation_period = excluded.rotation_period,"
                   " rotation_size = excluded.rotation_size, opened_ms = excluded.opened_ms, closed_ms = NULL,"
                   " bytes = 0, status = 'open', error = NULL, path = excluded.path",
                   v, 9, "streams insert");
}

int cp_cat_stream_close(cp_catalog *c, const cp_catalog_stream *x)
{
    cp_sql_val v[8] = {cp_sql_i64(x->closed_ms),   cp_sql_i64((int64_t)x->bytes),   cp_sql_text(x->status),
                       cp_sql_text(x->error),      cp_sql_text(x->pod->pod_id),     cp_sql_i64(x->pod->restart_ms),
                       cp_sql_text(x->stream),     cp_sql_i64(x->file_index)};
    return batched(core_of(c),
                   "UPDATE streams SET closed_ms = $1, bytes = $2, status = $3, error = $4"
                   " WHERE pod_id = $5 AND restart_time = $6 AND stream = $7 AND file_index = $8",
                   v, 8, "streams update");
}

/* ---- crash recovery ------------------------------------------------------------------------------- */

typedef struct pod_walk {
    int (*fn)(void *ud, const cp_catalog_pod *p);
    void *ud;
} pod_walk;

static int row_pod(void *ud, const cp_sql_val *c, size_t n)
{
    pod_walk *w = ud;
    if (n < 5) return CP_OK;
    cp_catalog_pod p = {cp_sql_opt(&c[0]), cp_sql_opt(&c[1]), cp_sql_opt(&c[2]), cp_sql_opt(&c[3]), cp_sql_int(&c[4], 0)};
    if (!p.ns || !p.service || !p.pod || !p.pod_id) return CP_OK;
    return w->fn(w->ud, &p);
}

int cp_cat_unfinished(cp_catalog *c, int (*fn)(void *ud, const cp_catalog_pod *p), void *ud)
{
    pod_walk w = {fn, ud};
    return exec(core_of(c),
                "SELECT r.namespace, r.service_name, r.pod_name, r.pod_id, r.restart_time FROM pod_restarts r"
                " WHERE EXISTS (SELECT 1 FROM streams s WHERE s.pod_id = r.pod_id AND s.restart_time = r.restart_time"
                " AND (s.status = 'open' OR r.hot_complete = 0)) ORDER BY r.restart_time",
                NULL, 0, row_pod, &w, NULL, "list unfinished restarts");
}

typedef struct file_walk {
    int (*fn)(void *ud, const char *stream, int64_t file_index, const char *path);
    void *ud;
} file_walk;

static int row_file(void *ud, const cp_sql_val *c, size_t n)
{
    file_walk *w = ud;
    const char *stream = n >= 3 ? cp_sql_opt(&c[0]) : NULL, *path = n >= 3 ? cp_sql_opt(&c[2]) : NULL;
    if (!stream || !path) return CP_OK;
    return w->fn(w->ud, stream, cp_sql_int(&c[1], 0), path);
}

int cp_cat_restart_files(cp_catalog *c, const cp_catalog_pod *p,
                         int (*fn)(void *ud, const char *stream, int64_t file_index, const char *path), void *ud)
{
    cp_catalog_core *k = core_of(c);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT stream, file_index, path FROM streams WHERE pod_id = $1 AND restart_time = $2"
             " ORDER BY stream%s, file_index",
             cp_sqldb_bytewise(k->db));
    cp_sql_val v[2] = {cp_sql_text(p->pod_id), cp_sql_i64(p->restart_ms)};
    file_walk w = {fn, ud};
    return exec(k, sql, v, 2, row_file, &w, NULL, "list stream files");
}

static int row_found(void *ud, const cp_sql_val *c, size_t n)
{
    (void)c;
    (void)n;
    *(int *)ud = 1;
    return CP_OK;
}

/* Looks the call up in every live table of its window (its late batches included), in the
 * open transaction: a call put in this cycle is found (rows held back are sent first). On
 * PostgreSQL the window rows are locked (KEY SHARE) so a compactor cannot drop a table
 * between the two queries. */
int cp_cat_call_exists(cp_catalog *c, const cp_call *call)
{
    cp_catalog_core *k = core_of(c);
    int64_t start;
    if (cp_hot_window_start(call->ts_ms, *k->window_ms, &start) != CP_OK) return 0;
    int st = k->hooks->flush ? k->hooks->flush(c) : CP_OK;
    if (st != CP_OK) return st;
    char sql[320];
    snprintf(sql, sizeof sql,
             "SELECT table_name FROM inventory WHERE table_type = 'calls' AND start_time = $1"
             " AND status IN ('creating', 'ready', 'persisting') ORDER BY table_name%s",
             pg_only(k, " FOR KEY SHARE"));
    cp_sql_val w[1] = {cp_sql_i64(start)};
    names t;
    st = list_names(k, sql, w, 1, cp_hot_calls_name_ok, CLAIM_MAX_WINDOWS, &t, "look up a call's windows");
    int64_t hash = (int64_t)cp_pod_hash(call->ns, call->ns_len, call->pod, call->pod_len);
    cp_sql_val v[6] = {cp_sql_i64(call->ts_ms),          cp_sql_i64(call->restart_ms),
                       cp_sql_i64(hash),                 cp_sql_i64(call->trace_file_index),
                       cp_sql_i64(call->buffer_offset), cp_sql_i64(call->record_index)};
    int found = 0;
    for (size_t i = 0; st == CP_OK && !found && i < t.n; i++) {
        snprintf(sql, sizeof sql,
                 "SELECT 1 FROM %s WHERE time = $1 AND restart_time = $2 AND pod_hash = $3"
                 " AND trace_file_index = $4 AND buffer_offset = $5 AND record_index = $6 LIMIT 1",
                 t.v[i]);
        st = exec(k, sql, v, 6, row_found, &found, NULL, "look up a call");
    }
    free(t.v);
    if (st != CP_OK) {
        k->hooks->batch_failed(c);
        return st;
    }
    return found;
}

int cp_cat_restart_complete(cp_catalog *c, const cp_catalog_pod *p)
{
    cp_sql_val v[2] = {cp_sql_text(p->pod_id), cp_sql_i64(p->restart_ms)};
    return batched(core_of(c), "UPDATE pod_restarts SET hot_complete = 1 WHERE pod_id = $1 AND restart_time = $2", v, 2,
                   "complete a restart");
}

int cp_cat_restart_finish(cp_catalog *c, const cp_catalog_pod *p, const char *note)
{
    cp_sql_val v[3] = {cp_sql_text(p->pod_id), cp_sql_i64(p->restart_ms), cp_sql_text(note)};
    int st = batched(core_of(c),
                     "UPDATE streams SET status = 'closed', error = $3 WHERE pod_id = $1 AND restart_time = $2"
                     " AND status = 'open'",
                     v, 3, "finish a restart");
    return st == CP_OK ? cp_cat_restart_complete(c, p) : st;
}

/* ---- cold files ---------------------------------------------------------------------------------- */

int cp_cat_cold_file_put(cp_catalog *c, const cp_compact_job *job, const cp_cold_file *f)
{
    cp_catalog_core *k = core_of(c);
    const char *key = f->key ? f->key : f->uuid;
    const char *slash = key ? strrchr(key, '/') : NULL;
    int64_t now = cp_now_ms();
    cp_sql_val v[21] = {
        cp_sql_text(f->uuid),
        cp_sql_i64(f->start_ms),
        cp_sql_i64(f->end_ms),
        cp_sql_text(f->file_type),
        cp_sql_text(f->dump_type),
        cp_sql_text(f->ns),
        cp_sql_i64(f->duration_range),
        cp_sql_text(slash ? slash + 1 : key),
        cp_sql_text(f->status),
        cp_sql_text(f->services ? f->services : "[]"),
        cp_sql_i64(now),
        cp_sql_i64(f->rows),
        cp_sql_i64(f->size),
        cp_sql_text(f->url),
        cp_sql_text(f->local_path),
        cp_sql_text(key),
        cp_sql_i64(f->min_ts),
        cp_sql_i64(f->max_ts),
        cp_sql_text(f->indexed_params ? f->indexed_params : "[]"),
        cp_sql_text(f->claim ? f->claim : job ? job->claim : NULL),
        cp_sql_text(f->indexed_maxlen),
    };
    int st = own_begin(k);
    if (st != CP_OK) return st;
    st = exec(k,
              "INSERT INTO s3_files (uuid, start_time, end_time, file_type, dump_type, namespace, duration_range,"
              " file_name, status, services, created_time, api_version, rows_count, file_size,"
              " remote_storage_path, local_file_path, object_key, min_time, max_time, indexed_params, claim,"
              " indexed_maxlen) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, '1', $12, $13, $14, $15,"
              " $16, $17, $18, $19, $20, $21)"
              " ON CONFLICT (uuid) DO UPDATE SET start_time = excluded.start_time, end_time = excluded.end_time,"
              " file_type = excluded.file_type, dump_type = excluded.dump_type, namespace = excluded.namespace,"
              " duration_range = excluded.duration_range, file_name = excluded.file_name,"
              " status = excluded.status, services = excluded.services, api_version = excluded.api_version,"
              " rows_count = excluded.rows_count, file_size = excluded.file_size,"
              " remote_storage_path = excluded.remote_storage_path, local_file_path = excluded.local_file_path,"
              " object_key = excluded.object_key, min_time = excluded.min_time, max_time = excluded.max_time,"
              " indexed_params = excluded.indexed_params, claim = excluded.claim,"
              " indexed_maxlen = excluded.indexed_maxlen",
              v, 21, NULL, NULL, NULL, "s3_files upsert");
    if (st == CP_OK && job) {
        /* the lease: a compactor that is still writing files is alive */
        cp_sql_val l[2] = {cp_sql_i64(now), cp_sql_text(job->claim)};
        st = exec(k, "UPDATE inventory SET claimed_at = $1 WHERE claim = $2 AND status = 'persisting'", l, 2, NULL,
                  NULL, NULL, "refresh a claim");
    }
    return own_end(k, st);
}

/* Deletes every inverted-index table's rows of the files `where` (over s3_files, with
 * p[0..np)) picks. */
static int inv_delete(cp_catalog_core *k, const char *where, const cp_sql_val *p, size_t np)
{
    names t;
    int st = list_names(k, "SELECT table_name FROM inverted_indexes ORDER BY table_name", NULL, 0,
                        cp_cold_inv_name_ok, SIZE_MAX, &t, "list inverted indexes");
    for (size_t i = 0; st == CP_OK && i < t.n; i++) {
        char sql[512];
        snprintf(sql, sizeof sql, "DELETE FROM \"%s\" WHERE file_id IN (SELECT uuid FROM s3_files WHERE %s)", t.v[i],
                 where);
        st = exec(k, sql, p, np, NULL, NULL, NULL, "delete inverted index rows");
    }
    free(t.v);
    return st;
}

typedef struct key_walk {
    int (*fn)(void *ud, const char *key);
    void *ud;
} key_walk;

static int row_key(void *ud, const cp_sql_val *c, size_t n)
{
    key_walk *w = ud;
    const char *key = n ? cp_sql_opt(&c[0]) : NULL;
    return key && w->fn ? w->fn(w->ud, key) : CP_OK;
}

#define NOT_COMPLETED "claim = $1 AND (status IS NULL OR status <> 'completed')"

/* fn(key) for the claim's unfinished files, then they and their index rows go. On SQLite
 * the files are listed before the write transaction, so the callers' object deletes
 * never hold the database's one write lock; PostgreSQL locks the rows instead, for other
 * nodes. */
int cp_cat_compact_reset(cp_catalog *c, const cp_compact_job *job, int (*fn)(void *ud, const char *key), void *ud)
{
    cp_catalog_core *k = core_of(c);
    int pg = cp_sqldb_is_pg(k->db);
    cp_sql_val v[1] = {cp_sql_text(job->claim)};
    key_walk w = {fn, ud};
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT coalesce(object_key, uuid) FROM s3_files WHERE " NOT_COMPLETED " ORDER BY uuid%s",
             pg_only(k, " FOR UPDATE"));
    int st;
    if (pg) {
        st = own_begin(k);
        if (st != CP_OK) return st;
        st = exec(k, sql, v, 1, row_key, &w, NULL, "list a claim's files");
    } else {
        st = k->hooks->settle(c);
        if (st == CP_OK) st = exec(k, sql, v, 1, row_key, &w, NULL, "list a claim's files");
        if (st != CP_OK) return st;
        st = own_begin(k);
        if (st != CP_OK) return st;
    }
    if (st == CP_OK) st = inv_delete(k, NOT_COMPLETED, v, 1);
    if (st == CP_OK)
        st = exec(k, "DELETE FROM s3_files WHERE " NOT_COMPLETED, v, 1, NULL, NULL, NULL, "delete a claim's files");
    return own_end(k, st);
}

typedef struct param_walk {
    int (*fn)(void *ud, const char *name);
    void *ud;
} param_walk;

static int row_param(void *ud, const cp_sql_val *c, size_t n)
{
    param_walk *w = ud;
    const char *name = n ? cp_sql_opt(&c[0]) : NULL;
    return name ? w->fn(w->ud, name) : CP_OK;
}

int cp_cat_indexed_params(cp_catalog *c, int (*fn)(void *ud, const char *name), void *ud)
{
    param_walk w = {fn, ud};
    return exec(core_of(c), "SELECT DISTINCT param_name FROM params WHERE param_index = 1 ORDER BY 1", NULL, 0,
                row_param, &w, NULL, "list indexed params");
}

/* ---- finishing a claim ---------------------------------------------------------------------------- */

static int row_other(void *ud, const cp_sql_val *c, size_t n)
{
    if (n && cp_sql_int(&c[0], 0)) *(int *)ud = 1;
    return CP_OK;
}

/* CP_OK if every persisting window of the claim is still held by job->node: a compactor
 * whose claim was taken over (its lease ran out) must not persist and drop the windows
 * while the new holder is redoing them. */
static int claim_still_ours(cp_catalog_core *k, const cp_compact_job *job)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT CASE WHEN coalesce(claimed_by, '') <> $2 THEN 1 ELSE 0 END FROM inventory"
             " WHERE claim = $1 AND status = 'persisting'%s",
             pg_only(k, " FOR UPDATE"));
    cp_sql_val v[2] = {cp_sql_text(job->claim), cp_sql_text(job->node)};
    int others = 0;
    int st = exec(k, sql, v, 2, row_other, &others, NULL, "check a claim");
    if (st == CP_OK && others) {
        snprintf(k->err, k->errlen, "claim %s was taken over by another compactor", job->claim);
        return CP_EABORT;
    }
    return st;
}

/* One transaction: the files completed, the windows persisted, their tables and rollups
 * dropped. */
int cp_cat_compact_finish(cp_catalog *c, const cp_compact_job *job, const char *const *uuids, size_t n)
{
    cp_catalog_core *k = core_of(c);
    int st = own_begin(k);
    if (st != CP_OK) return st;
    st = claim_still_ours(k, job);
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        cp_sql_val u[1] = {cp_sql_text(uuids[i])};
        st = exec(k, "UPDATE s3_files SET status = 'completed', local_file_path = NULL WHERE uuid = $1", u, 1, NULL,
                  NULL, NULL, "complete a cold file");
    }
    cp_sql_val v[1] = {cp_sql_text(job->claim)};
    names t = {0};
    if (st == CP_OK)
        st = list_names(k, "SELECT table_name FROM inventory WHERE claim = $1 AND table_type = 'calls' ORDER BY 1", v,
                        1, cp_hot_calls_name_ok, CLAIM_MAX_WINDOWS, &t, "list a claim's windows");
    for (size_t i = 0; st == CP_OK && i < t.n; i++) {
        char sql[96];
        snprintf(sql, sizeof sql, "DROP TABLE IF EXISTS %s", t.v[i]);
        st = exec(k, sql, NULL, 0, NULL, NULL, NULL, "drop a compacted window");
    }
    free(t.v);
    /* the windows' rollups: the claim's rollup files hold them now */
    if (st == CP_OK)
        st = exec(k,
                  "DELETE FROM hot_rollups WHERE tbl IN (SELECT table_name FROM inventory WHERE claim = $1"
                  " AND table_type = 'calls')",
                  v, 1, NULL, NULL, NULL, "drop a claim's rollups");
    if (st == CP_OK)
        st = exec(k, "UPDATE inventory SET status = 'persisted' WHERE claim = $1 AND status = 'persisting'", v, 1, NULL,
                  NULL, NULL, "persist a claim's windows");
    return own_end(k, st);
}

int cp_cat_compact_release(cp_catalog *c, const cp_compact_job *job)
{
    cp_catalog_core *k = core_of(c);
    int st = own_begin(k);
    if (st != CP_OK) return st;
    cp_sql_val v[2] = {cp_sql_text(job->claim), cp_sql_text(job->node)};
    st = exec(k,
              "UPDATE inventory SET status = 'ready', claim = NULL, claimed_by = NULL, claimed_at = NULL"
              " WHERE claim = $1 AND status = 'persisting' AND coalesce(claimed_by, '') = $2",
              v, 2, NULL, NULL, NULL, "release a claim");
    return own_end(k, st);
}

/* ---- retention ------------------------------------------------------------------------------------ */

int cp_cat_retention_mark(cp_catalog *c, int64_t before_ms, int64_t *marked)
{
    cp_catalog_core *k = core_of(c);
    *marked = 0;
    int64_t n = 0;
    int st = own_begin(k);
    if (st != CP_OK) return st;
    cp_sql_val v[1] = {cp_sql_i64(before_ms)};
    st = exec(k, "UPDATE s3_files SET status = 'to_delete' WHERE status = 'completed' AND end_time <= $1", v, 1, NULL,
              NULL, &n, "mark old files");
    if (st == CP_OK) st = inv_delete(k, "status = 'to_delete'", NULL, 0);
    if (st == CP_OK)
        st = exec(k, "DELETE FROM call_counts WHERE window_end <= $1", v, 1, NULL, NULL, NULL, "delete old call counts");
    if (st == CP_OK)
        st = exec(k, "DELETE FROM inventory WHERE status IN ('persisted', 'to_delete') AND end_time <= $1", v, 1, NULL,
                  NULL, NULL, "delete old windows");
    st = own_end(k, st);
    if (st == CP_OK) *marked = n;
    return st;
}

typedef struct gone_walk {
    int (*fn)(void *ud, const char *uuid, const char *key);
    void *ud;
} gone_walk;

static int row_gone(void *ud, const cp_sql_val *c, size_t n)
{
    gone_walk *w = ud;
    const char *uuid = n >= 2 ? cp_sql_opt(&c[0]) : NULL, *key = n >= 2 ? cp_sql_opt(&c[1]) : NULL;
    return uuid && key ? w->fn(w->ud, uuid, key) : CP_OK;
}

int cp_cat_retention_list(cp_catalog *c, size_t limit, int (*fn)(void *ud, const char *uuid, const char *key),
                          void *ud)
{
    cp_catalog_core *k = core_of(c);
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT uuid, coalesce(object_key, uuid) FROM s3_files WHERE status = 'to_delete'"
             " ORDER BY end_time, uuid%s LIMIT $1",
             cp_sqldb_bytewise(k->db));
    cp_sql_val v[1] = {cp_sql_i64(limit > (size_t)INT64_MAX ? INT64_MAX : (int64_t)limit)};
    gone_walk w = {fn, ud};
    return exec(k, sql, v, 1, row_gone, &w, NULL, "list files to delete");
}

int cp_cat_retention_forget(cp_catalog *c, const char *uuid)
{
    cp_catalog_core *k = core_of(c);
    int st = own_begin(k);
    if (st != CP_OK) return st;
    cp_sql_val v[1] = {cp_sql_text(uuid)};
    st = exec(k, "DELETE FROM s3_files WHERE uuid = $1 AND status = 'to_delete'", v, 1, NULL, NULL, NULL,
              "forget a deleted file");
    return own_end(k, st);
}
