/* catalog_sqlite_cold.c -- the cold tier's share of the SQLite catalog (cp_catalog.h
 * "the cold tier") that is SQLite's own: compaction claims, reading a claim's calls, the
 * inverted index's inserts. The rest of the cold tier (cold files, finishing or
 * releasing a claim, retention) is catalog_shared.c's, the same SQL on both catalogs.
 *
 * Transactions: claims commit what they did before returning (the caller is a compactor
 * with its own connection, not the ingest loop); index_put batches into the open
 * transaction like the ingest writes. compact_calls reads through a second connection
 * (`snap`) so its one long snapshot never holds the write lock. */
#include "store/cp_cold.h"
#include "store/catalog/sqlite_internal.h"

#include <stdio.h>
#include <stdlib.h>

#define INV_CACHE 32           /* inverted-index tables with a prepared INSERT */
#define CLAIM_MAX_WINDOWS 4096 /* window tables in one claim (an hour of 1-minute windows with batches) */

typedef struct sq_inv {
    char param[256];
    size_t param_len;
    char table[CP_COLD_INV_NAME];
    sqlite3_stmt *ins;
    uint64_t used;
} sq_inv;

typedef struct sq_cold {
    sq_inv inv[INV_CACHE];
    size_t ninv;
    uint64_t tick;
} sq_cold;

void cp_sq_cold_free(sqlite_catalog *c)
{
    if (c->cold) {
        for (size_t i = 0; i < c->cold->ninv; i++) sqlite3_finalize(c->cold->inv[i].ins);
        free(c->cold);
        c->cold = NULL;
    }
    sqlite3_close(c->snap);
    c->snap = NULL;
}

/* Commits any batch in progress: the operations below run in their own transactions. */
static int settle(sqlite_catalog *c) { return c->in_txn ? cp_sq_commit(&c->core.base) : CP_OK; }

static int prepare(sqlite_catalog *c, sqlite3 *db, const char *sql, sqlite3_stmt **s)
{
    if (sqlite3_prepare_v2(db, sql, -1, s, NULL) == SQLITE_OK) return CP_OK;
    snprintf(c->err, sizeof c->err, "prepare: %s", sqlite3_errmsg(db));
    sqlite3_finalize(*s);
    *s = NULL;
    return CP_EIO;
}

static int step_done(sqlite_catalog *c, sqlite3_stmt *s, const char *what)
{
    int rc = sqlite3_step(s);
    while (rc == SQLITE_ROW) rc = sqlite3_step(s);
    sqlite3_finalize(s);
    return rc == SQLITE_DONE ? CP_OK : cp_sq_fail(c, what);
}

static int rollback(sqlite_catalog *c, int st)
{
    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    c->in_txn = 0;
    cp_hot_writer_rollback(c->hot);
    return st;
}

static int commit(sqlite_catalog *c)
{
    c->in_txn = 1; /* cp_sq_commit flushes the (empty) hot writer and COMMITs */
    return cp_sq_commit(&c->core.base);
}

/* ---- claims ------------------------------------------------------------------------------ */

#define HOUR_MS ((int64_t)3600000)

/* The eligibility rule, shared by the queries below: ?1 until, ?2 lease (0 = any
 * persisting claim is abandoned), ?3 the time before which a claim is stale. */
#define ELIGIBLE                                                                                                  \
    "end_time <= ?1 AND (status = 'ready' OR (status = 'persisting' AND"                                        \
    " (?2 = 0 OR claimed_at IS NULL OR claimed_at < ?3)))"

static void bind_eligible(sqlite3_stmt *s, const cp_compact_opts *o)
{
    sqlite3_bind_int64(s, 1, o->until_ms);
    sqlite3_bind_int64(s, 2, o->lease_ms);
    sqlite3_bind_int64(s, 3, o->now_ms - o->lease_ms);
}

/* The earliest hour holding an eligible window; CP_ENOTFOUND if none. */
static int claim_hour(sqlite_catalog *c, const cp_compact_opts *o, int64_t *hour)
{
    sqlite3_stmt *s;
    int st = prepare(c, c->db, "SELECT min(start_time) FROM inventory WHERE table_type = 'calls' AND " ELIGIBLE, &s);
    if (st != CP_OK) return st;
    bind_eligible(s, o);
    int rc = sqlite3_step(s);
    int none = rc != SQLITE_ROW || sqlite3_column_type(s, 0) == SQLITE_NULL;
    int64_t start = none ? 0 : sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW) return cp_sq_fail(c, "find a window to compact");
    if (none) return CP_ENOTFOUND;
    *hour = start - ((start % HOUR_MS) + HOUR_MS) % HOUR_MS;
    return CP_OK;
}

/* An abandoned claim in the hour, if any: it is taken over as it was. */
static int claim_abandoned(sqlite_catalog *c, const cp_compact_opts *o, int64_t hour, char *claim, size_t cap)
{
    sqlite3_stmt *s;
    int st = prepare(c, c->db,
                     "SELECT claim FROM inventory WHERE table_type = 'calls' AND status = 'persisting' AND " ELIGIBLE
                     " AND start_time >= ?4 AND start_time < ?5 AND claim IS NOT NULL ORDER BY start_time LIMIT 1",
                     &s);
    if (st != CP_OK) return st;
    bind_eligible(s, o);
    sqlite3_bind_int64(s, 4, hour);
    sqlite3_bind_int64(s, 5, hour + HOUR_MS);
    int rc = sqlite3_step(s);
    claim[0] = 0;
    if (rc == SQLITE_ROW) snprintf(claim, cap, "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return rc == SQLITE_ROW || rc == SQLITE_DONE ? CP_OK : cp_sq_fail(c, "find an abandoned claim");
}

/* The first eligible ready window of the hour names the new claim. */
static int claim_new_key(sqlite_catalog *c, const cp_compact_opts *o, int64_t hour, char *claim, size_t cap)
{
    sqlite3_stmt *s;
    int st = prepare(c, c->db,
                     "SELECT table_name FROM inventory WHERE table_type = 'calls' AND status = 'ready' AND " ELIGIBLE
                     " AND start_time >= ?4 AND start_time < ?5 ORDER BY start_time, batch LIMIT 1",
                     &s);
    if (st != CP_OK) return st;
    bind_eligible(s, o);
    sqlite3_bind_int64(s, 4, hour);
    sqlite3_bind_int64(s, 5, hour + HOUR_MS);
    int rc = sqlite3_step(s);
    claim[0] = 0;
    if (rc == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        if (name && cp_hot_calls_name_ok(name)) snprintf(claim, cap, "%s", name + strlen("calls_"));
    }
    sqlite3_finalize(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return cp_sq_fail(c, "name a claim");
    return claim[0] ? CP_OK : CP_ENOTFOUND;
}

static int claim_mark(sqlite_catalog *c, const cp_compact_opts *o, int64_t hour, const char *claim, int taken_over)
{
    sqlite3_stmt *s;
    int st;
    if (taken_over)
        st = prepare(c, c->db, "UPDATE inventory SET claimed_by = ?6, claimed_at = ?7 WHERE claim = ?4", &s);
    else
        st = prepare(c, c->db,
                     "UPDATE inventory SET status = 'persisting', claim = ?4, claimed_by = ?6, claimed_at = ?7"
                     " WHERE table_type = 'calls' AND status = 'ready' AND end_time <= ?1"
                     " AND start_time >= ?5 AND start_time < ?5 + 3600000",
                     &s);
    if (st != CP_OK) return st;
    if (!taken_over) sqlite3_bind_int64(s, 1, o->until_ms);
    sqlite3_bind_text(s, 4, claim, -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 5, hour);
    sqlite3_bind_text(s, 6, o->node ? o->node : "", -1, SQLITE_STATIC);
    sqlite3_bind_int64(s, 7, o->now_ms);
    return step_done(c, s, "claim windows");
}

static int claim_describe(sqlite_catalog *c, cp_compact_job *job)
{
    sqlite3_stmt *s;
    int st = prepare(c, c->db,
                     "SELECT count(*), min(start_time), max(end_time), coalesce(sum(rows_count), 0) FROM inventory"
                     " WHERE claim = ?1 AND table_type = 'calls'",
                     &s);
    if (st != CP_OK) return st;
    sqlite3_bind_text(s, 1, job->claim, -1, SQLITE_STATIC);
    int rc = sqlite3_step(s);
    if (rc == SQLITE_ROW) {
        job->windows = (size_t)sqlite3_column_int64(s, 0);
        job->from_ms = sqlite3_column_int64(s, 1);
        job->to_ms = sqlite3_column_int64(s, 2);
        job->rows = sqlite3_column_int64(s, 3);
    }
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? CP_OK : cp_sq_fail(c, "describe a claim");
}

int cp_sq_compact_claim(cp_catalog *base, const cp_compact_opts *o, cp_compact_job *job)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    memset(job, 0, sizeof *job);
    int st = settle(c);
    if (st == CP_OK) st = cp_sq_exec(c, "BEGIN IMMEDIATE", "begin a claim");
    if (st != CP_OK) return st;
    int64_t hour = 0;
    st = claim_hour(c, o, &hour);
    if (st == CP_OK) st = claim_abandoned(c, o, hour, job->claim, sizeof job->claim);
    if (st == CP_OK) {
        job->taken_over = job->claim[0] != 0;
        if (!job->taken_over) st = claim_new_key(c, o, hour, job->claim, sizeof job->claim);
    }
    if (st == CP_OK) st = claim_mark(c, o, hour, job->claim, job->taken_over);
    if (st == CP_OK) st = claim_describe(c, job);
    if (st != CP_OK) return rollback(c, st);
    job->hour_ms = hour;
    snprintf(job->node, sizeof job->node, "%s", o->node ? o->node : "");
    return commit(c);
}

/* ---- reading a claim ----------------------------------------------------------------------- */

/* Window table names of a claim (checked: they are spliced into SQL). */
static int claim_tables(sqlite_catalog *c, sqlite3 *db, const char *claim, char (**names)[CP_HOT_NAME_LEN], size_t *n)
{
    *names = NULL;
    *n = 0;
    sqlite3_stmt *s;
    int st = prepare(c, db,
                     "SELECT table_name FROM inventory WHERE claim = ?1 AND table_type = 'calls'"
                     " ORDER BY start_time, batch",
                     &s);
    if (st != CP_OK) return st;
    sqlite3_bind_text(s, 1, claim, -1, SQLITE_STATIC);
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(s, 0);
        if (!name || !cp_hot_calls_name_ok(name) || strlen(name) >= CP_HOT_NAME_LEN) continue;
        if (*n == cap) {
            if (cap == CLAIM_MAX_WINDOWS) {
                st = CP_ELIMIT;
                snprintf(c->err, sizeof c->err, "claim %s has more than %d windows", claim, CLAIM_MAX_WINDOWS);
                break;
            }
            cap = cap ? cap * 2 : 16;
            void *p = realloc(*names, cap * sizeof **names);
            if (!p) {
                st = CP_ENOMEM;
                break;
            }
            *names = p;
        }
        snprintf((*names)[(*n)++], CP_HOT_NAME_LEN, "%s", name);
    }
    sqlite3_finalize(s);
    if (st == CP_OK && rc != SQLITE_DONE) st = cp_sq_fail(c, "list a claim's tables");
    if (st != CP_OK) {
        free(*names);
        *names = NULL;
        *n = 0;
    }
    return st;
}

/* 1 if the table exists in db (a claim may name a window whose tables a finished run
 * already dropped). */
static int table_exists(sqlite3 *db, const char *name)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ?1", -1, &s, NULL) !=
        SQLITE_OK)
        return 0;
    sqlite3_bind_text(s, 1, name, -1, SQLITE_STATIC);
    int yes = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    return yes;
}

#define CALL_COLS                                                                                                 \
    "time, cpu_time, wait_time, memory_used, duration, non_blocking, queue_wait_duration, suspend_duration, calls," \
    " transactions, logs_generated, logs_written, file_read, file_written, net_read, net_written, namespace,"     \
    " service_name, pod_name, restart_time, method, params, trace_file_index, buffer_offset, record_index,"       \
    " method_name, thread, trace_reason, id, pod_hash, has_sql"

/* The claim's calls in compaction order: one UNION ALL over its tables, sorted by
 * SQLite (on disk if large); traces are fetched by row id per call (a second statement
 * on the same table), so blobs never go through the sorter. */
static int claim_query(sqlite_catalog *c, char (*names)[CP_HOT_NAME_LEN], size_t n, cp_buf *sql)
{
    /* a compound SELECT may only be ordered by its result columns: sort the union as a
     * subquery so the ORDER BY can hold the duration-range expression */
    int st = cp_buf_puts(sql, "SELECT * FROM (");
    for (size_t i = 0; st == CP_OK && i < n; i++)
        st = cp_buf_printf(sql, "%sSELECT " CALL_COLS ", %zu AS tbl FROM %s", i ? " UNION ALL " : "", i, names[i]);
    if (st == CP_OK)
        st = cp_buf_puts(sql, ") ORDER BY namespace, CASE WHEN duration < 1 THEN 0 WHEN duration < 10 THEN 1"
                              " WHEN duration < 100 THEN 2 WHEN duration < 1000 THEN 3 WHEN duration < 5000 THEN 4"
                              " WHEN duration < 30000 THEN 5 WHEN duration < 90000 THEN 6 ELSE 7 END,"
                              " time, restart_time, pod_hash, trace_file_index, buffer_offset, record_index");
    if (st == CP_OK) st = cp_buf_putc(sql, 0);
    if (st != CP_OK) snprintf(c->err, sizeof c->err, "out of memory");
    return st;
}

static const char *col_text(sqlite3_stmt *s, int i, size_t *len)
{
    const char *t = (const char *)sqlite3_column_text(s, i);
    *len = (size_t)sqlite3_column_bytes(s, i);
    return t ? t : "";
}

static void row_call(sqlite3_stmt *s, cp_call *k)
{
    memset(k, 0, sizeof *k);
    k->ts_ms = sqlite3_column_int64(s, 0);
    k->cpu_time = sqlite3_column_int64(s, 1);
    k->wait_time = sqlite3_column_int64(s, 2);
    k->memory_used = sqlite3_column_int64(s, 3);
    k->duration_ms = sqlite3_column_int(s, 4);
    k->non_blocking = sqlite3_column_int64(s, 5);
    k->queue_wait_ms = sqlite3_column_int(s, 6);
    k->suspend_ms = sqlite3_column_int(s, 7);
    k->calls = sqlite3_column_int(s, 8);
    k->transactions = sqlite3_column_int64(s, 9);
    k->logs_generated = sqlite3_column_int(s, 10);
    k->logs_written = sqlite3_column_int(s, 11);
    k->file_read = sqlite3_column_int64(s, 12);
    k->file_written = sqlite3_column_int64(s, 13);
    k->net_read = sqlite3_column_int64(s, 14);
    k->net_written = sqlite3_column_int64(s, 15);
    k->ns = col_text(s, 16, &k->ns_len);
    k->service = col_text(s, 17, &k->service_len);
    k->pod = col_text(s, 18, &k->pod_len);
    k->restart_ms = sqlite3_column_int64(s, 19);
    k->method_id = sqlite3_column_int(s, 20);
    k->params_json = col_text(s, 21, &k->params_json_len);
    k->trace_file_index = sqlite3_column_int(s, 22);
    k->buffer_offset = sqlite3_column_int(s, 23);
    k->record_index = sqlite3_column_int(s, 24);
    k->method = col_text(s, 25, &k->method_len);
    k->thread = col_text(s, 26, &k->thread_len);
    k->trace_reason = (const char *)sqlite3_column_text(s, 27);
    k->sql = sqlite3_column_int(s, 30) != 0;
}

static int snap_open(sqlite_catalog *c)
{
    if (c->snap) return CP_OK;
    if (sqlite3_open_v2(c->path, &c->snap, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        snprintf(c->err, sizeof c->err, "open %s for reading: %s", c->path, sqlite3_errmsg(c->snap));
        sqlite3_close(c->snap);
        c->snap = NULL;
        return CP_EIO;
    }
    sqlite3_busy_timeout(c->snap, 5000);
    return CP_OK;
}

/* Runs the claim query and hands each call (with its trace) to fn. */
static int claim_scan(sqlite_catalog *c, char (*names)[CP_HOT_NAME_LEN], size_t n, cp_call_fn fn, void *ud)
{
    cp_buf sql;
    cp_buf_init(&sql);
    sqlite3_stmt *q = NULL;
    sqlite3_stmt **tr = calloc(n ? n : 1, sizeof *tr);
    int st = tr ? claim_query(c, names, n, &sql) : CP_ENOMEM;
    if (st == CP_OK) st = prepare(c, c->snap, (const char *)sql.data, &q);
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        char tsql[96];
        snprintf(tsql, sizeof tsql, "SELECT trace FROM %s WHERE id = ?1", names[i]);
        st = prepare(c, c->snap, tsql, &tr[i]);
    }
    int rc = SQLITE_DONE;
    while (st == CP_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
        cp_call k;
        row_call(q, &k);
        size_t tbl = (size_t)sqlite3_column_int64(q, 31);
        sqlite3_stmt *t = tbl < n ? tr[tbl] : NULL;
        if (t) {
            sqlite3_bind_int64(t, 1, sqlite3_column_int64(q, 28));
            if (sqlite3_step(t) == SQLITE_ROW && sqlite3_column_type(t, 0) == SQLITE_BLOB) {
                k.trace = sqlite3_column_blob(t, 0);
                k.trace_len = (size_t)sqlite3_column_bytes(t, 0);
            }
        }
        int r = fn(ud, &k);
        if (t) sqlite3_reset(t);
        if (r) {
            st = r < 0 ? r : CP_EABORT;
            snprintf(c->err, sizeof c->err, "compaction stopped while reading the claim's calls");
        }
    }
    if (st == CP_OK && rc != SQLITE_DONE) {
        snprintf(c->err, sizeof c->err, "read a claim's calls: %s", sqlite3_errmsg(c->snap));
        st = CP_EIO;
    }
    for (size_t i = 0; tr && i < n; i++) sqlite3_finalize(tr[i]);
    free(tr);
    sqlite3_finalize(q);
    cp_buf_free(&sql);
    return st;
}

int cp_sq_compact_calls(cp_catalog *base, const cp_compact_job *job, cp_call_fn fn, void *ud)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    int st = settle(c);
    if (st == CP_OK) st = snap_open(c);
    if (st != CP_OK) return st;
    if (sqlite3_exec(c->snap, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
        snprintf(c->err, sizeof c->err, "begin a read: %s", sqlite3_errmsg(c->snap));
        return CP_EIO;
    }
    char(*names)[CP_HOT_NAME_LEN] = NULL;
    size_t n = 0;
    st = claim_tables(c, c->snap, job->claim, &names, &n);
    /* tables a previous run already dropped are gone with their windows persisted */
    size_t k = 0;
    for (size_t i = 0; st == CP_OK && i < n; i++)
        if (table_exists(c->snap, names[i])) memmove(names[k++], names[i], CP_HOT_NAME_LEN);
    if (st == CP_OK && k) st = claim_scan(c, names, k, fn, ud);
    free(names);
    sqlite3_exec(c->snap, "COMMIT", NULL, NULL, NULL);
    return st;
}

/* ---- inverted index ---------------------------------------------------------------------------- */

static sq_inv *inv_find(sq_cold *k, const char *param, size_t len)
{
    for (size_t i = 0; i < k->ninv; i++)
        if (k->inv[i].param_len == len && !memcmp(k->inv[i].param, param, len)) return &k->inv[i];
    return NULL;
}

/* Creates (if needed) and registers the param's table, and prepares its INSERT. */
static int inv_open(sqlite_catalog *c, const char *param, size_t len, sq_inv **out)
{
    sq_cold *k = c->cold;
    if (k->ninv == INV_CACHE) { /* evict the least recently used */
        size_t lru = 0;
        for (size_t i = 1; i < k->ninv; i++)
            if (k->inv[i].used < k->inv[lru].used) lru = i;
        sqlite3_finalize(k->inv[lru].ins);
        k->inv[lru] = k->inv[--k->ninv];
    }
    sq_inv *v = &k->inv[k->ninv];
    memset(v, 0, sizeof *v);
    memcpy(v->param, param, len);
    v->param_len = len;
    cp_cold_inv_table(param, len, v->table);
    char sql[512];
    snprintf(sql, sizeof sql,
             "CREATE TABLE IF NOT EXISTS \"%s\" (value TEXT NOT NULL, file_id TEXT NOT NULL,"
             " PRIMARY KEY (value, file_id)) WITHOUT ROWID;"
             "CREATE INDEX IF NOT EXISTS \"%s_file\" ON \"%s\" (file_id);",
             v->table, v->table, v->table);
    int st = cp_sq_exec(c, sql, "create an inverted index");
    sqlite3_stmt *s;
    if (st == CP_OK)
        st = prepare(c, c->db,
                     "INSERT OR IGNORE INTO inverted_indexes (param_name, table_name, created_time)"
                     " VALUES (?1, ?2, ?3)",
                     &s);
    if (st == CP_OK) {
        sqlite3_bind_text(s, 1, param, (int)len, SQLITE_STATIC);
        sqlite3_bind_text(s, 2, v->table, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s, 3, cp_now_ms());
        st = step_done(c, s, "register an inverted index");
    }
    snprintf(sql, sizeof sql, "INSERT OR IGNORE INTO \"%s\" (value, file_id) VALUES (?1, ?2)", v->table);
    if (st == CP_OK) st = prepare(c, c->db, sql, &v->ins);
    if (st != CP_OK) return st;
    k->ninv++;
    *out = v;
    return CP_OK;
}

int cp_sq_index_put(cp_catalog *base, const char *param, size_t param_len, const char *value, size_t value_len,
                    const char *file_uuid)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    if (param_len == 0 || param_len >= sizeof(((sq_inv *)0)->param)) {
        snprintf(c->err, sizeof c->err, "param name of %zu bytes cannot be indexed", param_len);
        return CP_EINVAL;
    }
    if (!c->cold && !(c->cold = calloc(1, sizeof *c->cold))) return CP_ENOMEM;
    int st = cp_sq_begin(c);
    if (st != CP_OK) return st;
    sq_inv *v = inv_find(c->cold, param, param_len);
    if (!v && (st = inv_open(c, param, param_len, &v)) != CP_OK) return st;
    v->used = ++c->cold->tick;
    sqlite3_bind_text64(v->ins, 1, value, (sqlite3_uint64)value_len, SQLITE_STATIC, SQLITE_UTF8);
    sqlite3_bind_text(v->ins, 2, file_uuid, -1, SQLITE_STATIC);
    int rc = sqlite3_step(v->ins);
    sqlite3_reset(v->ins);
    return rc == SQLITE_DONE ? CP_OK : cp_sq_fail(c, "inverted index insert");
}
