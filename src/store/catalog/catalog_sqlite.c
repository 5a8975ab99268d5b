/* catalog_sqlite.c -- the catalog on SQLite (<data>/catalog.db): schema migrations, the
 * WAL and its checkpoints, dictionary words, and one lazily opened write transaction per
 * commit cycle. The hot tier's window tables are written by hot_writer.c, inside the same
 * transaction; what is the same SQL as PostgreSQL's (pods, restarts, params, stream
 * files, recovery, cold files, finishing claims, retention) is catalog_shared.c's, on
 * this connection (catalog_core.h hooks below). */
#include "store/cp_catalog.h"
#include "store/hot/hot_internal.h"
#include "store/catalog/sqlite_internal.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

/* ---- migrations ---------------------------------------------------------------------
 * Append only: a released migration is never edited. Tables and columns follow seed 004
 * ("PostgreSQL Schema") with SQLite types: timestamptz -> INTEGER epoch ms, jsonb -> TEXT,
 * bytea -> BLOB, boolean -> INTEGER 0/1, enums -> TEXT with a CHECK. */

static const char *const migrations[] = {
    /* 1: the seed-004 metadata tables, and our raw-log stream file index */
    "CREATE TABLE pods ("
    "  namespace TEXT NOT NULL, service_name TEXT NOT NULL, pod_name TEXT NOT NULL,"
    "  active_since INTEGER, last_restart INTEGER, last_active INTEGER,"
    "  tags TEXT NOT NULL DEFAULT '{}', pod_id TEXT NOT NULL,"
    "  UNIQUE (namespace, pod_name));"
    "CREATE INDEX pods_pod_id ON pods (pod_id);"
    "CREATE TABLE pod_restarts ("
    "  pod_name TEXT NOT NULL, restart_time INTEGER NOT NULL, namespace TEXT NOT NULL,"
    "  service_name TEXT NOT NULL, pod_id TEXT NOT NULL, active_since INTEGER, last_active INTEGER,"
    "  UNIQUE (pod_id, restart_time));"
    "CREATE TABLE dictionary ("
    "  pod_name TEXT NOT NULL, restart_time INTEGER NOT NULL, position INTEGER NOT NULL,"
    "  pod_id TEXT NOT NULL, tag TEXT NOT NULL,"
    "  UNIQUE (pod_id, restart_time, position));"
    "CREATE TABLE params ("
    "  pod_name TEXT NOT NULL, restart_time INTEGER NOT NULL, param_name TEXT NOT NULL,"
    "  param_index INTEGER NOT NULL, param_list INTEGER NOT NULL, param_order INTEGER NOT NULL,"
    "  signature TEXT NOT NULL, pod_id TEXT NOT NULL,"
    "  UNIQUE (pod_id, restart_time, param_name));"
    "CREATE TABLE dumps ("
    "  uuid INTEGER PRIMARY KEY AUTOINCREMENT, created_time INTEGER, namespace TEXT,"
    "  service_name TEXT, pod_name TEXT, pod_type TEXT, restart_time INTEGER, dump_type TEXT,"
    "  bytes_size INTEGER, info TEXT, binary_data BLOB);"
    "CREATE TABLE s3_files ("
    "  uuid TEXT PRIMARY KEY, start_time INTEGER, end_time INTEGER, file_type TEXT, dump_type TEXT,"
    "  namespace TEXT, duration_range INTEGER, file_name TEXT,"
    "  status TEXT CHECK (status IN ('creating','created','transferring','completed','to_delete')),"
    "  services TEXT, created_time INTEGER, api_version TEXT, rows_count INTEGER, file_size INTEGER,"
    "  remote_storage_path TEXT, local_file_path TEXT);"
    "CREATE TABLE inventory ("
    "  uuid TEXT PRIMARY KEY, start_time INTEGER, end_time INTEGER,"
    "  status TEXT CHECK (status IN ('creating','ready','persisting','persisted','to_delete')),"
    "  table_type TEXT, table_name TEXT, created_time INTEGER, rows_count INTEGER,"
    "  table_size INTEGER, total_table_size INTEGER);"
    "CREATE TABLE streams ("
    "  pod_id TEXT NOT NULL, restart_time INTEGER NOT NULL, stream TEXT NOT NULL,"
    "  file_index INTEGER NOT NULL, handle TEXT NOT NULL, rotation_period INTEGER NOT NULL,"
    "  rotation_size INTEGER NOT NULL, opened_ms INTEGER NOT NULL, closed_ms INTEGER,"
    "  bytes INTEGER NOT NULL DEFAULT 0,"
    "  status TEXT NOT NULL CHECK (status IN ('open','closed','failed')),"
    "  error TEXT, path TEXT NOT NULL,"
    "  UNIQUE (pod_id, restart_time, stream, file_index));",

    /* 2: the hot tier (storage.md "Hot tier"). The window tables themselves are created at
     * run time (hot_schema.c); migration 1's inventory already has the seed's columns and
     * only gains indexes: one window per table_name (windows are found by name), and
     * (table_type, start_time) for readers listing the windows of a time range. Rows from
     * before the unique index (none were written by version 1) are deduplicated first.
     * call_counts: calls per window per pod restart, for pod discovery without scanning
     * the windows; one row per (window, pod restart), added to once per commit. Keyed by
     * window first: discovery reads the windows of a time range. */
    "DELETE FROM inventory WHERE table_name IS NOT NULL AND rowid NOT IN"
    "  (SELECT min(rowid) FROM inventory WHERE table_name IS NOT NULL GROUP BY table_name);"
    "CREATE UNIQUE INDEX inventory_table_name ON inventory (table_name);"
    "CREATE INDEX inventory_type_start ON inventory (table_type, start_time);"
    "CREATE TABLE call_counts ("
    "  namespace TEXT NOT NULL, pod_name TEXT NOT NULL, restart_time INTEGER NOT NULL,"
    "  window_start INTEGER NOT NULL, window_end INTEGER NOT NULL, service_name TEXT NOT NULL,"
    "  calls INTEGER NOT NULL,"
    "  PRIMARY KEY (window_start, namespace, pod_name, restart_time)) WITHOUT ROWID;",

    /* 3: the cold tier (storage.md "Cold tier", cp_cold.h). inventory: a window's batch
     * (late calls for a persisting/persisted window go to calls_<suffix>_<batch>) and the
     * compaction claim holding it. s3_files: the object key, the time span of its calls,
     * the params indexed for it (JSON array) and the claim that wrote it.
     * inverted_indexes: one inv_* table per indexed param name (cp_cold_inv_table), each
     * (value, file_id) with file_id = s3_files.uuid. */
    "ALTER TABLE inventory ADD COLUMN batch INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE inventory ADD COLUMN claim TEXT;"
    "ALTER TABLE inventory ADD COLUMN claimed_by TEXT;"
    "ALTER TABLE inventory ADD COLUMN claimed_at INTEGER;"
    "CREATE INDEX inventory_status_start ON inventory (status, start_time);"
    "CREATE INDEX inventory_claim ON inventory (claim);"
    "ALTER TABLE s3_files ADD COLUMN object_key TEXT;"
    "ALTER TABLE s3_files ADD COLUMN min_time INTEGER;"
    "ALTER TABLE s3_files ADD COLUMN max_time INTEGER;"
    "ALTER TABLE s3_files ADD COLUMN indexed_params TEXT NOT NULL DEFAULT '[]';"
    "ALTER TABLE s3_files ADD COLUMN claim TEXT;"
    "CREATE INDEX s3_files_type_status_start ON s3_files (file_type, status, start_time);"
    "CREATE INDEX s3_files_claim ON s3_files (claim);"
    "CREATE TABLE inverted_indexes ("
    "  param_name TEXT PRIMARY KEY, table_name TEXT NOT NULL UNIQUE, created_time INTEGER NOT NULL);",

    /* 4: diagnostic files (cp_dumps.h, dumps-http.md §7.1). Migration 1's dumps row (uuid
     * = the file's id) gains: the upload path (one row per path: a re-upload replaces it
     * in place, version + 1), the original name, the joined pod restart, the directory
     * time (= created_time), capture / received / deleted times, state, SHA-256, where
     * the bytes are (hot: binary_data; object: object_key; cold: row cold_row of the
     * Parquet file object_key) and the compaction claim. dump_pending: objects being put
     * (or left to delete) that no row may point at yet, for the orphan sweep. pod_restarts
     * gains an index for the files' pod join (namespace, pod_name). */
    "ALTER TABLE dumps ADD COLUMN path TEXT;"
    "ALTER TABLE dumps ADD COLUMN file_name TEXT;"
    "ALTER TABLE dumps ADD COLUMN restart_pod TEXT;"
    "ALTER TABLE dumps ADD COLUMN dir_time INTEGER;"
    "ALTER TABLE dumps ADD COLUMN capture_time INTEGER;"
    "ALTER TABLE dumps ADD COLUMN received_time INTEGER;"
    "ALTER TABLE dumps ADD COLUMN deleted_time INTEGER;"
    "ALTER TABLE dumps ADD COLUMN state TEXT NOT NULL DEFAULT 'complete' CHECK (state IN ('complete','deleted'));"
    "ALTER TABLE dumps ADD COLUMN sha256 TEXT;"
    "ALTER TABLE dumps ADD COLUMN version INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE dumps ADD COLUMN location TEXT NOT NULL DEFAULT 'hot' CHECK (location IN ('hot','object','cold'));"
    "ALTER TABLE dumps ADD COLUMN object_key TEXT;"
    "ALTER TABLE dumps ADD COLUMN cold_row INTEGER;"
    "ALTER TABLE dumps ADD COLUMN gc_rotation INTEGER NOT NULL DEFAULT -1;"
    "ALTER TABLE dumps ADD COLUMN claim TEXT;"
    "ALTER TABLE dumps ADD COLUMN claimed_by TEXT;"
    "ALTER TABLE dumps ADD COLUMN claimed_at INTEGER;"
    "CREATE UNIQUE INDEX dumps_path ON dumps (path);"
    "CREATE INDEX dumps_list ON dumps (dir_time, namespace, pod_name);"
    "CREATE INDEX dumps_compact ON dumps (location, state, dir_time);"
    "CREATE INDEX dumps_claim ON dumps (claim);"
    "CREATE INDEX dumps_object_key ON dumps (object_key);"
    "CREATE INDEX pod_restarts_ns_pod ON pod_restarts (namespace, pod_name);"
    "CREATE TABLE dump_pending ("
    "  object_key TEXT PRIMARY KEY, node TEXT NOT NULL, created_time INTEGER NOT NULL);",

    /* 5: rollups (issue 14, query/cp_rollup.h). hot_rollups: the additive rollup entries
     * of the hot windows, written by the hot writer in the transactions that insert the
     * calls, one key per (cell, pod, class, flags, idle list, window table); a window's
     * rows go with its tables at compaction, which writes a rollup file instead.
     * inventory.rollup: 1 for windows whose calls all have entries (windows created from
     * now on); older windows are scanned. s3_files.indexed_maxlen: the longest value of
     * each indexed param in a calls file (JSON object), so a $name=value search with a
     * value at least that long looks its value up exactly in the inverted index, whose
     * values are stored ASCII-lowercased from now on. */
    "ALTER TABLE inventory ADD COLUMN rollup INTEGER NOT NULL DEFAULT 0;"
    "CREATE TABLE hot_rollups ("
    "  cell INTEGER NOT NULL, namespace TEXT NOT NULL, service_name TEXT NOT NULL, pod_name TEXT NOT NULL,"
    "  duration_class INTEGER NOT NULL, flags INTEGER NOT NULL, idle_fp INTEGER NOT NULL, tbl TEXT NOT NULL,"
    "  calls_count INTEGER NOT NULL, sum_duration INTEGER NOT NULL, sum_suspend_duration INTEGER NOT NULL,"
    "  sum_queue_wait_duration INTEGER NOT NULL, sum_transactions INTEGER NOT NULL,"
    "  max_time INTEGER NOT NULL, max_duration INTEGER NOT NULL, max_calls INTEGER NOT NULL,"
    "  max_restart_time INTEGER NOT NULL, max_trace_file_index INTEGER NOT NULL,"
    "  max_buffer_offset INTEGER NOT NULL, max_record_index INTEGER NOT NULL,"
    "  PRIMARY KEY (cell, namespace, service_name, pod_name, duration_class, flags, idle_fp, tbl)) WITHOUT ROWID;"
    "CREATE INDEX hot_rollups_tbl ON hot_rollups (tbl);"
    "ALTER TABLE s3_files ADD COLUMN indexed_maxlen TEXT;",

    /* 6: pod_restarts.hot_complete (issue 16): 1 once every call of the restart's raw log
     * is in the hot tier -- set in the transaction that stores its last calls when its
     * connection ends with no failed hot-tier write, or by recovery. A restart left at 0
     * (a crash, a commit the disk refused) is assembled again from its raw files. Rows
     * from before are taken as complete; new restarts start at 0. */
    "ALTER TABLE pod_restarts ADD COLUMN hot_complete INTEGER NOT NULL DEFAULT 1;",

    /* 7: one table per hot window (issue 18): the trace blob becomes the calls_ row's
     * `trace` column. fold_traces() moves every traces_ table's blobs into its calls_
     * table and drops it (before this text runs); the windows' inventory rows of type
     * traces go with them. */
    "DELETE FROM inventory WHERE table_type = 'traces';",

    /* 8: the pod index of hot windows (issue 18; hot_schema.c says why): index_pods()
     * adds it to every existing calls_ table; new windows are created with it. */
    "SELECT 1;",

    /* 9: the audit log (issue 19, store/cp_audit.h): one row per deletion, export,
     * download or import -- who (user_name, role, remote), what (action, target, the
     * target's namespace or NULL, detail as JSON text), when (time_ms) and how it ended
     * (outcome). Listed newest first by (time_ms, id), which also bounds the retention
     * pass's delete. IF NOT EXISTS: a catalog whose schema_migrations was wound back by
     * hand (as tests emulate older versions) applies it again without failing. */
    "CREATE TABLE IF NOT EXISTS audit_log ("
    "  id INTEGER PRIMARY KEY AUTOINCREMENT, time_ms INTEGER NOT NULL, user_name TEXT NOT NULL,"
    "  role TEXT NOT NULL, action TEXT NOT NULL, target TEXT NOT NULL, namespace TEXT,"
    "  outcome TEXT NOT NULL, remote TEXT NOT NULL, detail TEXT NOT NULL DEFAULT '{}');"
    "CREATE INDEX IF NOT EXISTS audit_log_time ON audit_log (time_ms, id);",

    /* 10: the `sql` tag of the calls list (issue 19, ui.md §3.3): add_has_sql() gives every
     * existing calls_ table the has_sql column (1: the call's trace references a value of
     * the sql stream), 0 for the calls stored before; new windows are created with it. */
    "SELECT 1;",
};

int cp_catalog_sqlite_schema_version(void) { return (int)CP_ARRAY_LEN(migrations); }

const char *cp_catalog_sqlite_migration(int version)
{
    return version >= 1 && version <= cp_catalog_sqlite_schema_version() ? migrations[version - 1] : NULL;
}

/* ---- state ------------------------------------------------------------------------------ */


static const char *const stmt_sql[ST_COUNT] = {
    [ST_DICT_PUT] = "INSERT OR REPLACE INTO dictionary (pod_name, restart_time, position, pod_id, tag)"
                    " VALUES (?1, ?2, ?3, ?4, ?5)",
};


#define WAL_MAX_DEFAULT (64u << 20) /* WAL size at which maintain() makes it start over */
#define WAL_TAIL_FRAMES 256              /* ... once at most this many frames are left to copy */

int cp_sq_fail(sqlite_catalog *c, const char *what)
{
    snprintf(c->err, sizeof c->err, "%s: %s", what, sqlite3_errmsg(c->db));
    return CP_EIO;
}

int cp_sq_exec(sqlite_catalog *c, const char *sql, const char *what)
{
    if (sqlite3_exec(c->db, sql, NULL, NULL, NULL) != SQLITE_OK) return cp_sq_fail(c, what);
    return CP_OK;
}

/* ---- migrations ------------------------------------------------------------------------- */

static int schema_version(sqlite_catalog *c, int *version)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(c->db, "SELECT coalesce(max(version), 0) FROM schema_migrations", -1, &s, NULL) !=
        SQLITE_OK)
        return cp_sq_fail(c, "read schema version");
    int rc = sqlite3_step(s);
    *version = rc == SQLITE_ROW ? sqlite3_column_int(s, 0) : 0;
    sqlite3_finalize(s);
    return rc == SQLITE_ROW ? CP_OK : cp_sq_fail(c, "read schema version");
}

/* 1 if the table has a column of that name. */
static int has_column(sqlite3 *db, const char *table, const char *column)
{
    sqlite3_stmt *s;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2", -1, &s, NULL) != SQLITE_OK)
        return 0;
    sqlite3_bind_text(s, 1, table, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 2, column, -1, SQLITE_STATIC);
    int yes = sqlite3_step(s) == SQLITE_ROW;
    sqlite3_finalize(s);
    return yes;
}

/* The names of the hot window tables (calls_*), NUL-separated, into names. */
static int list_windows(sqlite_catalog *c, cp_buf *names)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(c->db, "SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE 'calls%'", -1,
                           &q, NULL) != SQLITE_OK)
        return cp_sq_fail(c, "list hot windows");
    int st = CP_OK;
    while (st == CP_OK && sqlite3_step(q) == SQLITE_ROW) {
        const char *n = (const char *)sqlite3_column_text(q, 0);
        if (n && cp_hot_calls_name_ok(n)) st = cp_buf_append(names, n, strlen(n) + 1);
    }
    sqlite3_finalize(q);
    return st;
}

/* Runs the statement `fmt` (its %s, at most two, is the table name) on every calls_
 * table, except those that already have `unless_column` (NULL: none). The per-window part
 * of a migration, inside its transaction. */
static int alter_windows(sqlite_catalog *c, const char *fmt, const char *unless_column, const char *what)
{
    cp_buf names;
    cp_buf_init(&names);
    int st = list_windows(c, &names);
    char sql[256];
    for (size_t off = 0; st == CP_OK && off < names.len;) {
        const char *calls = (const char *)names.data + off;
        off += strlen(calls) + 1;
        if (unless_column && has_column(c->db, calls, unless_column)) continue;
        snprintf(sql, sizeof sql, fmt, calls, calls);
        st = cp_sq_exec(c, sql, what);
    }
    cp_buf_free(&names);
    return st;
}

/* Migration 8's per-window part: the pod index on every calls_ table. */
static int index_pods(sqlite_catalog *c)
{
    return alter_windows(c, "CREATE INDEX IF NOT EXISTS %s_pod ON %s (pod_hash, time)", NULL,
                         "index a window's pods");
}

/* Migration 10's per-window part: the has_sql column on every calls_ table (ADD COLUMN
 * with a constant default rewrites nothing). */
static int add_has_sql(sqlite_catalog *c)
{
    return alter_windows(c, "ALTER TABLE %s ADD COLUMN has_sql INTEGER NOT NULL DEFAULT 0", "has_sql",
                         "add a window's has_sql column");
}

/* Migration 7's per-window part: every calls_ table gets the trace column, filled from
 * its traces_ table (same row ids), which is then dropped. Runs in the migration's
 * transaction, so a crash leaves the old layout whole. */
static int fold_traces(sqlite_catalog *c)
{
    cp_buf names;
    cp_buf_init(&names);
    int st = list_windows(c, &names);
    if (st != CP_OK) {
        cp_buf_free(&names);
        return st;
    }
    char sql[512];
    for (size_t off = 0; st == CP_OK && off < names.len;) {
        const char *calls = (const char *)names.data + off;
        off += strlen(calls) + 1;
        const char *suffix = calls + strlen("calls_");
        if (!has_column(c->db, calls, "trace")) {
            snprintf(sql, sizeof sql, "ALTER TABLE %s ADD COLUMN trace BLOB", calls);
            st = cp_sq_exec(c, sql, "add a window's trace column");
        }
        char traces[CP_HOT_NAME_LEN + 8];
        snprintf(traces, sizeof traces, "traces_%s", suffix);
        if (st != CP_OK || !has_column(c->db, traces, "trace")) continue;
        snprintf(sql, sizeof sql,
                 "UPDATE %s SET trace = (SELECT t.trace FROM %s t WHERE t.id = %s.id)"
                 " WHERE id IN (SELECT id FROM %s); DROP TABLE %s;",
                 calls, traces, calls, traces, traces);
        st = cp_sq_exec(c, sql, "move a window's traces into its calls table");
    }
    cp_buf_free(&names);
    return st;
}

static int apply_migration(sqlite_catalog *c, int version, const char *sql)
{
    char rec[128];
    snprintf(rec, sizeof rec, "INSERT INTO schema_migrations (version, applied_ms) VALUES (%d, %lld)", version,
             (long long)cp_now_ms());
    /* IMMEDIATE: a second process migrating at the same time waits instead of racing */
    int st = cp_sq_exec(c, "BEGIN IMMEDIATE", "begin migration");
    if (st != CP_OK) return st;
    int cur;
    st = schema_version(c, &cur);
    if (st == CP_OK && cur < version) {
        if (version == 7) st = fold_traces(c);
        if (version == 8) st = index_pods(c);
        if (version == 10) st = add_has_sql(c);
        if (st == CP_OK) st = cp_sq_exec(c, sql, "apply migration");
        if (st == CP_OK) st = cp_sq_exec(c, rec, "record migration");
    }
    if (st == CP_OK) return cp_sq_exec(c, "COMMIT", "commit migration");
    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    return st;
}

static int migrate(sqlite_catalog *c)
{
    int st = cp_sq_exec(c,
                  "CREATE TABLE IF NOT EXISTS schema_migrations ("
                  " version INTEGER PRIMARY KEY, applied_ms INTEGER NOT NULL)",
                  "create schema_migrations");
    int cur = 0;
    if (st == CP_OK) st = schema_version(c, &cur);
    if (st == CP_OK && cur > cp_catalog_sqlite_schema_version()) {
        snprintf(c->err, sizeof c->err, "catalog schema version %d is newer than this build (%d)", cur,
                 cp_catalog_sqlite_schema_version());
        return CP_EINVAL;
    }
    for (int v = cur + 1; st == CP_OK && v <= cp_catalog_sqlite_schema_version(); v++)
        st = apply_migration(c, v, migrations[v - 1]);
    return st;
}

/* ---- statements ------------------------------------------------------------------------ */

/* Starts the batch transaction on the first write after a commit. */
int cp_sq_begin(sqlite_catalog *c)
{
    if (c->in_txn) return CP_OK;
    int st = cp_sq_exec(c, "BEGIN IMMEDIATE", "begin");
    if (st == CP_OK) c->in_txn = 1;
    return st;
}

/* Runs a bound write statement to completion and resets it. */
static int run(sqlite_catalog *c, int which, const char *what)
{
    sqlite3_stmt *s = c->st[which];
    int rc = sqlite3_step(s);
    int st = rc == SQLITE_DONE ? CP_OK : cp_sq_fail(c, what);
    sqlite3_reset(s);
    sqlite3_clear_bindings(s);
    return st;
}

static void bind_text(sqlite3_stmt *s, int i, const char *p) { sqlite3_bind_text(s, i, p, -1, SQLITE_STATIC); }

static void bind_textn(sqlite3_stmt *s, int i, const char *p, size_t n)
{
    sqlite3_bind_text64(s, i, p, (sqlite3_uint64)n, SQLITE_STATIC, SQLITE_UTF8);
}

static int sq_dict_put(cp_catalog *base, const cp_catalog_pod *p, int32_t position, const char *tag, size_t tag_len)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    int st = cp_sq_begin(c);
    if (st != CP_OK) return st;
    sqlite3_stmt *s = c->st[ST_DICT_PUT];
    bind_text(s, 1, p->pod);
    sqlite3_bind_int64(s, 2, p->restart_ms);
    sqlite3_bind_int(s, 3, position);
    bind_text(s, 4, p->pod_id);
    bind_textn(s, 5, tag, tag_len);
    return run(c, ST_DICT_PUT, "dictionary insert");
}

/* ---- hot tier (hot_writer.c does the work) -------------------------------------------- */

static int sq_call_put(cp_catalog *base, const cp_call *call)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    int st = cp_sq_begin(c);
    return st == CP_OK ? cp_hot_writer_put(c->hot, call, c->err, sizeof c->err) : st;
}

static int sq_set_windows(cp_catalog *base, int64_t window_ms, int64_t ahead_ms)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    c->window_ms = window_ms;
    return cp_hot_writer_set_windows(c->hot, window_ms, ahead_ms, c->err, sizeof c->err);
}

static void sq_set_idle(cp_catalog *base, const char *const *idle, size_t n)
{
    cp_hot_writer_set_idle(((sqlite_catalog *)base)->hot, idle, n);
}

static int sq_windows_prepare(cp_catalog *base, int64_t now_ms)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    int st = cp_sq_begin(c);
    return st == CP_OK ? cp_hot_writer_prepare(c->hot, now_ms, c->err, sizeof c->err) : st;
}

/* The hot tier's counters go in last, then COMMIT; on failure everything of this cycle
 * is rolled back, the hot writer's memory included. */
int cp_sq_commit(cp_catalog *base)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    if (!c->in_txn) return CP_OK;
    c->in_txn = 0;
    int st = cp_hot_writer_flush(c->hot, c->err, sizeof c->err);
    if (st == CP_OK) {
        if (sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK) {
            cp_hot_writer_end_txn(c->hot);
            return CP_OK;
        }
        st = cp_sq_fail(c, "commit");
    }
    sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
    cp_hot_writer_rollback(c->hot);
    return st;
}

/* ---- what catalog_shared.c needs (catalog_core.h) --------------------------------------- */

static int sq_settle(cp_catalog *base)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    return c->in_txn ? cp_sq_commit(base) : CP_OK;
}

static int sq_batch(cp_catalog *base) { return cp_sq_begin((sqlite_catalog *)base); }

/* A failed statement leaves SQLite's transaction good: the batch goes on. */
static void sq_batch_failed(cp_catalog *base) { (void)base; }

/* SQLite's writer sends every row at once: nothing is held back. */
static const cp_catalog_hooks sq_hooks = {sq_settle, sq_batch, sq_batch_failed, NULL};

static const char *sq_errmsg(const cp_catalog *base) { return ((const sqlite_catalog *)base)->err; }

#define CKPT_MAX_PASSES 16

/* A passive checkpoint copies committed WAL pages into the database and fsyncs; with
 * auto-checkpoints off (configure()) this is the only place that happens while serving,
 * so the writer's thread never waits on the disk for the catalog. */
static int sq_maintain(cp_catalog *base)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    if (!c->ckpt) {
        if (sqlite3_open_v2(c->path, &c->ckpt, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
            sqlite3_close(c->ckpt);
            c->ckpt = NULL;
            return CP_EIO;
        }
        sqlite3_busy_timeout(c->ckpt, 1000);
        /* A connection that has not read the database yet does not know it is in WAL
         * mode, and its checkpoints do nothing: read the schema once. */
        if (sqlite3_exec(c->ckpt, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL) != SQLITE_OK) {
            sqlite3_close(c->ckpt);
            c->ckpt = NULL;
            return CP_EIO;
        }
    }
    /* The WAL only starts over (instead of growing by everything the hot tier writes)
     * when a write transaction begins while it is fully copied, and under a steady stream
     * of commits one pass never catches up with its end. So go again while the previous
     * pass found new frames -- each copies what was committed during the one before --
     * until one finds nothing new (bounded): the writer's next transaction after a pause
     * then restarts the WAL. A writer that never pauses between COMMIT and its next
     * BEGIN (saturated ingest) still keeps the WAL growing; see bench/hot.c. */
    int rc = SQLITE_OK, prev = -1, log = 0, done = 0;
    for (int pass = 0; pass < CKPT_MAX_PASSES; pass++) {
        rc = sqlite3_wal_checkpoint_v2(c->ckpt, NULL, SQLITE_CHECKPOINT_PASSIVE, &log, &done);
        if (rc != SQLITE_OK || done < log || log == prev) break;
        prev = log;
    }
    /* Under saturated ingest that is never enough: the writer commits every 100 ms and
     * begins again at once, so the WAL never starts over and grows without bound (10 GB
     * in bench/hot.c, 1.18 GB in a fault probe). Once it is large and the passes above
     * have copied all but a small tail, a TRUNCATE checkpoint copies the tail, makes the
     * next writer start the WAL over and cuts the file to nothing (an idle server keeps no
     * large WAL either): it waits for the writer's open transaction to end (busy timeout)
     * and holds the next one back only for the tail's copy and fsync -- milliseconds,
     * because the passes already synced the rest. Past twice the bound it does not wait
     * for the tail to be small: the writer then waits for the whole copy (backpressure on
     * the ingest loop) rather than the WAL growing on. */
    struct stat sb;
    uint64_t wal = c->wal_path && stat(c->wal_path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    uint64_t bound = c->wal_max ? c->wal_max : WAL_MAX_DEFAULT;
    if (rc == SQLITE_OK && wal >= bound && (log - done <= WAL_TAIL_FRAMES || wal >= 2 * bound))
        rc = sqlite3_wal_checkpoint_v2(c->ckpt, NULL, SQLITE_CHECKPOINT_TRUNCATE, &log, &done);
    wal = c->wal_path && stat(c->wal_path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    if (rc == SQLITE_OK && wal >= bound) return CP_AGAIN; /* behind: again at once */
    return rc == SQLITE_OK || rc == SQLITE_BUSY ? CP_OK : CP_EIO;
}

static void sq_close(cp_catalog *base)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    cp_sq_commit(base);
    cp_hot_writer_free(c->hot);
    cp_sq_cold_free(c);
    cp_sqldb_close(c->core.db); /* its statements before the connection */
    for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(c->st[i]);
    sqlite3_close(c->ckpt);
    sqlite3_close(c->db); /* the last connection checkpoints the WAL */
    free(c->path);
    free(c->wal_path);
    free(c);
}

/* A bulk writer (an import) writes a batch and moves on: an 8 MiB page cache instead of
 * the ingest writer's 64 MiB, so an import grows the process by little whatever the
 * file's size. */
static int sq_set_bulk(cp_catalog *base)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    int st = cp_sq_commit(base);
    return st == CP_OK ? cp_sq_exec(c, "PRAGMA cache_size = -8192", "set cache size") : st;
}

/* synchronous=FULL (on) or NORMAL: in WAL mode a FULL commit fsyncs the WAL, which holds
 * every earlier commit too. Changed outside a transaction only (SQLite's rule). */
static int sq_set_durable(cp_catalog *base, int on)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    int st = cp_sq_commit(base);
    if (st != CP_OK) return st;
    return cp_sq_exec(c, on ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL", "set synchronous");
}

/* The WAL's bound: maintain() cuts it back past it; journal_size_limit trims it to that
 * size when a write restarts it. */
static int sq_set_cache_max(cp_catalog *base, uint64_t bytes)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    uint64_t kib = bytes / 1024;
    if (kib < 1024) kib = 1024;
    if (kib > (uint64_t)1 << 30) kib = (uint64_t)1 << 30;
    char sql[64];
    snprintf(sql, sizeof sql, "PRAGMA cache_size = -%llu", (unsigned long long)kib);
    return cp_sq_exec(c, sql, "set cache size");
}

static int sq_set_wal_max(cp_catalog *base, uint64_t bytes)
{
    sqlite_catalog *c = (sqlite_catalog *)base;
    c->wal_max = bytes ? bytes : WAL_MAX_DEFAULT;
    char sql[80];
    snprintf(sql, sizeof sql, "PRAGMA journal_size_limit = %llu", (unsigned long long)c->wal_max);
    return cp_sq_exec(c, sql, "set WAL size limit");
}

static const cp_catalog_ops sqlite_ops = {
    .name = "sqlite",
    CP_CATALOG_SHARED_OPS,
    .dict_put = sq_dict_put,
    .call_put = sq_call_put,
    .set_windows = sq_set_windows,
    .set_idle = sq_set_idle,
    .set_bulk = sq_set_bulk,
    .set_wal_max = sq_set_wal_max,
    .set_cache_max = sq_set_cache_max,
    .set_durable = sq_set_durable,
    .windows_prepare = sq_windows_prepare,
    .commit = cp_sq_commit,
    .errmsg = sq_errmsg,
    .close = sq_close,
    .maintain = sq_maintain,
    .compact_claim = cp_sq_compact_claim,
    .compact_calls = cp_sq_compact_calls,
    .index_put = cp_sq_index_put,
};

/* ---- open ------------------------------------------------------------------------------- */

static int configure(sqlite_catalog *c)
{
    /* WAL: readers (the CLI) never block the collector; NORMAL: commits skip fsync, the
     * raw log is the durable source of truth and the catalog can be rebuilt from it */
    /* 16 KiB pages for a new catalog (a no-op on an existing one): a quarter of the WAL
     * frames, write calls and b-tree levels of 4 KiB pages for the hot tier's inserts,
     * measured about 15 % less CPU per call (bench/hot.c) */
    int st = cp_sq_exec(c, "PRAGMA page_size = 16384", "set page size");
    if (st == CP_OK) st = cp_sq_exec(c, "PRAGMA journal_mode = WAL", "set WAL");
    if (st == CP_OK) st = cp_sq_exec(c, "PRAGMA synchronous = NORMAL", "set synchronous");
    /* checkpoints fsync: they run in sq_maintain() on a worker thread instead */
    if (st == CP_OK) st = cp_sq_exec(c, "PRAGMA wal_autocheckpoint = 0", "disable auto-checkpoints");
    if (st == CP_OK && sqlite3_busy_timeout(c->db, 5000) != SQLITE_OK) st = cp_sq_fail(c, "set busy timeout");
    /* 64 MiB of page cache: the hot windows' index pages (random inserts into the
     * duration index) stay in memory between commits */
    if (st == CP_OK) st = cp_sq_exec(c, "PRAGMA cache_size = -65536", "set cache size");
    /* a WAL that grew during a burst is cut back to 64 MiB when it starts over */
    if (st == CP_OK) st = cp_sq_exec(c, "PRAGMA journal_size_limit = 67108864", "set WAL size limit");
    return st;
}

static int prepare_all(sqlite_catalog *c)
{
    for (int i = 0; i < ST_COUNT; i++)
        if (sqlite3_prepare_v3(c->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &c->st[i], NULL) != SQLITE_OK)
            return cp_sq_fail(c, "prepare");
    return CP_OK;
}

int cp_catalog_open_sqlite(const char *path, cp_catalog **out, char *err, size_t errlen)
{
    *out = NULL;
    sqlite_catalog *c = calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    c->core = (cp_catalog_core){{&sqlite_ops}, NULL, &sq_hooks, &c->window_ms, c->err, sizeof c->err};
    c->path = strdup(path);
    c->window_ms = CP_HOT_DEFAULT_WINDOW_MS;
    size_t plen = strlen(path);
    c->wal_path = malloc(plen + 5);
    if (c->wal_path) memcpy(c->wal_path, path, plen), memcpy(c->wal_path + plen, "-wal", 5);
    int st = c->path ? CP_OK : CP_ENOMEM;
    int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX;
    if (st != CP_OK) snprintf(c->err, sizeof c->err, "out of memory");
    else if (sqlite3_open_v2(path, &c->db, flags, NULL) != SQLITE_OK) st = cp_sq_fail(c, path);
    else st = configure(c);
    if (st == CP_OK) st = migrate(c);
    if (st == CP_OK) st = prepare_all(c);
    if (st == CP_OK) st = cp_hot_writer_new(c->db, &c->hot, c->err, sizeof c->err);
    if (st == CP_OK && cp_sqldb_wrap_sqlite(c->db, &c->core.db) != CP_OK) {
        snprintf(c->err, sizeof c->err, "out of memory");
        st = CP_ENOMEM;
    }
    if (st != CP_OK) {
        snprintf(err, errlen, "catalog %s: %s", path, c->err);
        cp_hot_writer_free(c->hot);
        for (int i = 0; i < ST_COUNT; i++) sqlite3_finalize(c->st[i]);
        sqlite3_close(c->db);
        free(c->path);
        free(c);
        return st;
    }
    *out = &c->core.base;
    return CP_OK;
}
