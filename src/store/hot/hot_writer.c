/* hot_writer.c -- the hot tier's write side on SQLite (hot_internal.h).
 *
 * The hot path of cp_hot_writer_put() is: a window lookup in memory (the last window, or
 * a small hash map), two cached prepared INSERTs (call row, trace row), and in-memory
 * counters. Nothing is queried per call. The counters -- rows per window table (inventory
 * rows_count) and calls per window per pod restart (call_counts, for discovery) -- are
 * written once per commit by cp_hot_writer_flush().
 *
 * Bounds: at most HOT_MAX_WINDOWS windows are remembered (the map is a cache of
 * `inventory`: when full it is flushed and emptied), prepared INSERTs are kept for at most
 * HOT_STMT_WINDOWS windows (least recently used are finalized), and at most
 * HOT_MAX_COUNTS counters / HOT_MAX_COUNT_TEXT bytes of names wait for a flush (an early
 * flush into the same transaction when over).
 */
#include "store/hot/hot_internal.h"
#include "query/cp_query.h"
#include "query/cp_rollup.h"

#include <stdio.h>
#include <stdlib.h>

#define HOT_MAX_WINDOWS 4096
#define HOT_WINDOW_SLOTS 8192 /* hash slots: power of two, twice the entries */
#define HOT_STMT_WINDOWS 8
#define HOT_MAX_COUNTS 16384
#define HOT_COUNT_SLOTS 32768
#define HOT_MAX_COUNT_TEXT (8u << 20)
#define HOT_ROLLUP_ENTRIES 65536 /* per window between flushes (an early flush when over) */

/* One known window (its inventory rows exist in the database or the open transaction). */
typedef struct hot_window {
    int64_t start, end;
    char suffix[CP_HOT_SUFFIX_LEN];     /* "YYYYMMDD_HHMM" or, for a late batch, "..._<batch>" */
    int batch;
    uint64_t txn;                       /* the writer transaction that last checked its status */
    sqlite3_stmt *ins_call;             /* NULL unless in the statement cache */
    uint64_t used;                      /* statement-cache LRU tick */
    int64_t new_calls;                  /* rows since the last flush */
    int rollup;                         /* the window keeps rollups (inventory.rollup) */
    cp_rollup_acc *acc;                 /* its entries since the last flush */
} hot_window;

/* Calls of one pod restart in one window since the last flush. Names live in text. */
typedef struct hot_count {
    int64_t window_start, window_end, restart_ms;
    uint64_t pod_hash;
    size_t ns_off, svc_off, pod_off;
    uint32_t ns_len, svc_len, pod_len;
    int64_t calls;
} hot_count;

enum {
    WS_FIND,       /* inventory row of a window */
    WS_INV_INSERT, /* inventory row, status creating */
    WS_INV_READY,  /* creating -> ready */
    WS_INV_EXTEND, /* end_time of a window that got longer (window length changed) */
    WS_INV_ROWS,   /* rows_count += n */
    WS_COUNT_ADD,  /* call_counts upsert */
    WS_ROLLUP_ADD, /* hot_rollups upsert */
    WS_COUNT
};

static const char *const ws_sql[WS_COUNT] = {
    /* the window's newest batch: a persisting/persisted one takes no more rows */
    [WS_FIND] = "SELECT start_time, end_time, status, batch, rollup FROM inventory"
                " WHERE table_type = 'calls' AND start_time = ?1 ORDER BY batch DESC LIMIT 1",
    [WS_INV_INSERT] = "INSERT INTO inventory (uuid, start_time, end_time, status, table_type, table_name,"
                      " created_time, rows_count, table_size, total_table_size, batch, rollup)"
                      " VALUES (?1, ?2, ?3, 'creating', ?4, ?5, ?6, 0, 0, 0, ?7, 1)",
    [WS_INV_READY] = "UPDATE inventory SET status = 'ready' WHERE table_name = ?1 AND status = 'creating'",
    [WS_INV_EXTEND] = "UPDATE inventory SET end_time = ?1 WHERE table_name = ?2 AND end_time < ?1",
    [WS_INV_ROWS] = "UPDATE inventory SET rows_count = coalesce(rows_count, 0) + ?1 WHERE table_name = ?2",
    [WS_COUNT_ADD] = "INSERT INTO call_counts (namespace, pod_name, restart_time, window_start, window_end,"
                     " service_name, calls) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                     " ON CONFLICT (window_start, namespace, pod_name, restart_time)"
                     " DO UPDATE SET calls = calls + excluded.calls, window_end = max(window_end, excluded.window_end)",
    /* entries are additive; the slowest call is the better of the two (cp_rollup_point_cmp) */
    [WS_ROLLUP_ADD] = CP_HOT_ROLLUP_INSERT "(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15,"
                                           " ?16, ?17, ?18, ?19, ?20)" CP_HOT_ROLLUP_CONFLICT,
};

struct cp_hot_writer {
    sqlite3 *db;
    sqlite3_stmt *st[WS_COUNT];
    int64_t window_ms, ahead_ms;
    hot_window *win;            /* HOT_MAX_WINDOWS, dense */
    size_t nwin;
    int32_t *win_slot;          /* HOT_WINDOW_SLOTS: index into win, -1 = empty */
    hot_window *last;           /* the window of the previous call */
    uint64_t txn;               /* counts write transactions (cp_hot_writer_end_txn) */
    hot_window *stmt_win[HOT_STMT_WINDOWS]; /* windows holding prepared INSERTs */
    size_t nstmt;
    uint64_t tick;
    hot_count *cnt;             /* HOT_MAX_COUNTS, dense */
    size_t ncnt;
    int32_t *cnt_slot;          /* HOT_COUNT_SLOTS */
    hot_count *last_cnt;
    cp_buf text;                /* names of the counters */
    cp_buf sql;                 /* scratch for SQL text */
    const char *const *idle;    /* the rollups' idle list (cp_system_call) */
    cp_system_memo *memo;       /* method verdicts under that list */
    size_t nidle;
    int64_t idle_fp;
};

static int fail(cp_hot_writer *w, char *err, size_t errlen, const char *what)
{
    snprintf(err, errlen, "%s: %s", what, sqlite3_errmsg(w->db));
    return CP_EIO;
}

/* Runs a bound statement of the ws_sql set to completion, then resets it. */
static int ws_run(cp_hot_writer *w, int which, char *err, size_t errlen, const char *what)
{
    int rc = sqlite3_step(w->st[which]);
    int st = rc == SQLITE_DONE || rc == SQLITE_ROW ? CP_OK : fail(w, err, errlen, what);
    sqlite3_reset(w->st[which]);
    return st;
}

static void bind_textn(sqlite3_stmt *s, int i, const char *p, size_t n)
{
    sqlite3_bind_text64(s, i, p ? p : "", p ? (sqlite3_uint64)n : 0, SQLITE_STATIC, SQLITE_UTF8);
}

/* ---- life cycle ---------------------------------------------------------------------------- */

int cp_hot_writer_new(sqlite3 *db, cp_hot_writer **out, char *err, size_t errlen)
{
    *out = NULL;
    cp_hot_writer *w = calloc(1, sizeof *w);
    if (w) {
        w->win = calloc(HOT_MAX_WINDOWS, sizeof *w->win);
        w->win_slot = malloc(HOT_WINDOW_SLOTS * sizeof *w->win_slot);
        w->cnt = calloc(HOT_MAX_COUNTS, sizeof *w->cnt);
        w->cnt_slot = malloc(HOT_COUNT_SLOTS * sizeof *w->cnt_slot);
        w->memo = calloc(1, sizeof *w->memo);
    }
    if (!w || !w->win || !w->win_slot || !w->cnt || !w->cnt_slot || !w->memo) {
        snprintf(err, errlen, "out of memory");
        cp_hot_writer_free(w);
        return CP_ENOMEM;
    }
    w->db = db;
    w->txn = 1;
    w->window_ms = CP_HOT_DEFAULT_WINDOW_MS;
    w->ahead_ms = CP_HOT_DEFAULT_AHEAD_MS;
    cp_hot_writer_set_idle(w, cp_system_idle_default, cp_system_idle_default_count);
    memset(w->win_slot, 0xff, HOT_WINDOW_SLOTS * sizeof *w->win_slot);
    memset(w->cnt_slot, 0xff, HOT_COUNT_SLOTS * sizeof *w->cnt_slot);
    cp_buf_init(&w->text);
    cp_buf_init(&w->sql);
    for (int i = 0; i < WS_COUNT; i++) {
        if (sqlite3_prepare_v3(db, ws_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &w->st[i], NULL) != SQLITE_OK) {
            int st = fail(w, err, errlen, "prepare hot tier statement");
            cp_hot_writer_free(w);
            return st;
        }
    }
    *out = w;
    return CP_OK;
}

static void window_drop_stmts(hot_window *x)
{
    sqlite3_finalize(x->ins_call);
    x->ins_call = NULL;
}

void cp_hot_writer_set_idle(cp_hot_writer *w, const char *const *idle, size_t n)
{
    w->idle = idle;
    w->nidle = n;
    w->idle_fp = cp_rollup_idle_fp(idle, n);
    if (w->memo) cp_system_memo_clear(w->memo);
}

/* Forgets every window (their statements are finalized). Pending row counts are lost:
 * callers flush first, or are rolling back. */
static void windows_clear(cp_hot_writer *w)
{
    for (size_t i = 0; i < w->nwin; i++) {
        window_drop_stmts(&w->win[i]);
        cp_rollup_acc_free(w->win[i].acc);
        w->win[i].acc = NULL;
    }
    w->nwin = 0;
    w->nstmt = 0;
    w->last = NULL;
    memset(w->win_slot, 0xff, HOT_WINDOW_SLOTS * sizeof *w->win_slot);
}

static void counts_clear(cp_hot_writer *w)
{
    w->ncnt = 0;
    w->last_cnt = NULL;
    cp_buf_reset(&w->text);
    memset(w->cnt_slot, 0xff, HOT_COUNT_SLOTS * sizeof *w->cnt_slot);
}

void cp_hot_writer_free(cp_hot_writer *w)
{
    if (!w) return;
    if (w->win && w->win_slot) windows_clear(w);
    for (int i = 0; i < WS_COUNT; i++) sqlite3_finalize(w->st[i]);
    free(w->win);
    free(w->memo);
    free(w->win_slot);
    free(w->cnt);
    free(w->cnt_slot);
    cp_buf_free(&w->text);
    cp_buf_free(&w->sql);
    free(w);
}

int cp_hot_writer_set_windows(cp_hot_writer *w, int64_t window_ms, int64_t ahead_ms, char *err, size_t errlen)
{
    if (cp_hot_window_check(window_ms, ahead_ms) != CP_OK) {
        snprintf(err, errlen,
                 "hot windows: length %lld ms must be whole minutes dividing a day, and ahead %lld ms"
                 " at most %d windows",
                 (long long)window_ms, (long long)ahead_ms, CP_HOT_MAX_AHEAD_WINDOWS);
        return CP_EINVAL;
    }
    /* Known windows stay valid: a lookup checks the call's time against each one's end. */
    w->window_ms = window_ms;
    w->ahead_ms = ahead_ms;
    w->last = NULL;
    return CP_OK;
}

/* ---- window map ---------------------------------------------------------------------------- */


/* Slot of start in win_slot: the one holding it, or the empty one where it would go. */
static size_t window_slot(const cp_hot_writer *w, int64_t start)
{
    size_t i = cp_mix64((uint64_t)start) & (HOT_WINDOW_SLOTS - 1);
    while (w->win_slot[i] >= 0 && w->win[w->win_slot[i]].start != start) i = (i + 1) & (HOT_WINDOW_SLOTS - 1);
    return i;
}

static hot_window *window_lookup(cp_hot_writer *w, int64_t start)
{
    int32_t k = w->win_slot[window_slot(w, start)];
    return k >= 0 ? &w->win[k] : NULL;
}

static int flush_rows(cp_hot_writer *w, char *err, size_t errlen);

/* Remembers a window; when the map is full, pending row counts are flushed and the map
 * emptied first. */
static int window_remember(cp_hot_writer *w, int64_t start, int64_t end, hot_window **out, char *err,
                           size_t errlen)
{
    if (w->nwin == HOT_MAX_WINDOWS) {
        int st = flush_rows(w, err, errlen);
        if (st != CP_OK) return st;
        windows_clear(w);
    }
    hot_window *x = &w->win[w->nwin];
    memset(x, 0, sizeof *x);
    x->start = start;
    x->end = end;
    x->txn = w->txn;
    cp_hot_window_suffix(start, x->suffix);
    w->win_slot[window_slot(w, start)] = (int32_t)w->nwin++;
    *out = x;
    return CP_OK;
}

static void window_name(const hot_window *x, char calls[CP_HOT_NAME_LEN])
{
    snprintf(calls, CP_HOT_NAME_LEN, "calls_%s", x->suffix);
}

/* One inventory row, status creating. */
static int inventory_insert(cp_hot_writer *w, const hot_window *x, const char *type, const char *name,
                            char *err, size_t errlen)
{
    uint8_t u[16];
    char uuid[37];
    if (cp_random_bytes(u, sizeof u) != CP_OK) {
        snprintf(err, errlen, "no random bytes for an inventory uuid");
        return CP_EIO;
    }
    u[6] = (uint8_t)((u[6] & 0x0f) | 0x40); /* version 4 */
    u[8] = (uint8_t)((u[8] & 0x3f) | 0x80);
    cp_uuid_str(u, uuid);
    sqlite3_stmt *s = w->st[WS_INV_INSERT];
    sqlite3_bind_text(s, 1, uuid, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, x->start);
    sqlite3_bind_int64(s, 3, x->end);
    sqlite3_bind_text(s, 4, type, -1, SQLITE_STATIC);
    sqlite3_bind_text(s, 5, name, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 6, cp_now_ms());
    sqlite3_bind_int(s, 7, x->batch);
    return ws_run(w, WS_INV_INSERT, err, errlen, "inventory insert");
}

/* A new window: inventory rows (creating), the tables, then status ready -- all in the
 * open transaction, so other connections see the window complete or not at all. */
static int window_create(cp_hot_writer *w, const hot_window *x, char *err, size_t errlen)
{
    char calls[CP_HOT_NAME_LEN];
    window_name(x, calls);
    int st = inventory_insert(w, x, "calls", calls, err, errlen);
    if (st != CP_OK) return st;
    cp_buf_reset(&w->sql);
    if (cp_hot_window_ddl(&w->sql, x->suffix) != CP_OK || cp_buf_putc(&w->sql, 0) != CP_OK) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    if (sqlite3_exec(w->db, (const char *)w->sql.data, NULL, NULL, NULL) != SQLITE_OK)
        return fail(w, err, errlen, "create window tables");
    sqlite3_stmt *s = w->st[WS_INV_READY];
    sqlite3_bind_text(s, 1, calls, -1, SQLITE_TRANSIENT);
    return ws_run(w, WS_INV_READY, err, errlen, "inventory ready");
}

/* Makes the window's recorded end at least end (window length was raised). */
static int window_extend(cp_hot_writer *w, hot_window *x, int64_t end, char *err, size_t errlen)
{
    char calls[CP_HOT_NAME_LEN];
    window_name(x, calls);
    sqlite3_stmt *s = w->st[WS_INV_EXTEND];
    sqlite3_bind_int64(s, 1, end);
    sqlite3_bind_text(s, 2, calls, -1, SQLITE_TRANSIENT);
    int st = ws_run(w, WS_INV_EXTEND, err, errlen, "inventory extend");
    if (st == CP_OK && end > x->end) x->end = end;
    return st;
}

/* Points x at batch `batch` of its window (names, statements). Row counts pending under
 * the old names are written first. */
static int window_set_batch(cp_hot_writer *w, hot_window *x, int batch, char *err, size_t errlen)
{
    if (x->batch == batch) return CP_OK;
    int st = flush_rows(w, err, errlen);
    if (st != CP_OK) return st;
    window_drop_stmts(x);
    for (size_t i = 0; i < w->nstmt; i++)
        if (w->stmt_win[i] == x) w->stmt_win[i] = w->stmt_win[--w->nstmt];
    x->batch = batch;
    cp_hot_window_suffix(x->start, x->suffix);
    if (batch > 0) {
        size_t n = strlen(x->suffix);
        snprintf(x->suffix + n, sizeof x->suffix - n, "_%d", batch);
    }
    return CP_OK;
}

/* Reads the window's newest batch from `inventory` and settles where its rows go: that
 * batch while it is ready, a new batch (tables created now) once a compactor has claimed
 * it -- late calls never land in a table being compacted. Runs at the first insert into
 * the window in each write transaction, inside it: a claim either committed before
 * (seen here) or waits for this transaction. *found = 0 if the window has no row. */
static int window_check(cp_hot_writer *w, hot_window *x, int create, int *found, char *err, size_t errlen)
{
    sqlite3_stmt *s = w->st[WS_FIND];
    sqlite3_bind_int64(s, 1, x->start);
    int rc = sqlite3_step(s);
    *found = rc == SQLITE_ROW;
    int64_t end = *found ? sqlite3_column_int64(s, 1) : x->end;
    const unsigned char *status = *found ? sqlite3_column_text(s, 2) : NULL;
    int open = !*found || (status && (!strcmp((const char *)status, "ready") ||
                                      !strcmp((const char *)status, "creating")));
    int batch = *found ? sqlite3_column_int(s, 3) : 0;
    int rollup = *found ? sqlite3_column_int(s, 4) != 0 : 1;
    sqlite3_reset(s);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return fail(w, err, errlen, "inventory lookup");
    if (*found) x->end = end;
    x->txn = w->txn;
    if (open) {
        int st = window_set_batch(w, x, batch, err, errlen);
        if (st == CP_OK) x->rollup = rollup; /* a new one is created with rollups */
        if (st == CP_OK && !*found && create) st = window_create(w, x, err, errlen);
        return st;
    }
    int st = window_set_batch(w, x, batch + 1, err, errlen);
    if (st == CP_OK) x->rollup = 1;
    return st == CP_OK ? window_create(w, x, err, errlen) : st;
}

/* Looks a window up in `inventory` (a map miss: after a restart, or a window created by
 * another writer); creates it when absent. */
static int window_load(cp_hot_writer *w, int64_t start, hot_window **out, char *err, size_t errlen)
{
    int st = window_remember(w, start, start + w->window_ms, out, err, errlen);
    int found;
    return st == CP_OK ? window_check(w, *out, 1, &found, err, errlen) : st;
}

/* The window holding ts: the previous call's, a map hit, or loaded / created. */
static int window_for(cp_hot_writer *w, int64_t ts, hot_window **out, char *err, size_t errlen)
{
    hot_window *x = w->last;
    if (x && ts >= x->start && ts < x->end && x->txn == w->txn) {
        *out = x;
        return CP_OK;
    }
    int64_t start;
    if (cp_hot_window_start(ts, w->window_ms, &start) != CP_OK) {
        snprintf(err, errlen, "call time %lld ms is outside the storable range", (long long)ts);
        return CP_EINVAL;
    }
    x = window_lookup(w, start);
    int st = CP_OK, found;
    if (!x)
        st = window_load(w, start, &x, err, errlen);
    else if (x->txn != w->txn)
        st = window_check(w, x, 1, &found, err, errlen);
    if (st == CP_OK && ts >= x->end) st = window_extend(w, x, start + w->window_ms, err, errlen);
    if (st != CP_OK) return st;
    w->last = x;
    *out = x;
    return CP_OK;
}

/* ---- insert statements ----------------------------------------------------------------- */

static int window_prepare_stmts(cp_hot_writer *w, hot_window *x, char *err, size_t errlen)
{
    if (w->nstmt == HOT_STMT_WINDOWS) { /* evict the least recently used window's pair */
        size_t lru = 0;
        for (size_t i = 1; i < w->nstmt; i++)
            if (w->stmt_win[i]->used < w->stmt_win[lru]->used) lru = i;
        window_drop_stmts(w->stmt_win[lru]);
        w->stmt_win[lru] = w->stmt_win[--w->nstmt];
    }
    cp_buf_reset(&w->sql);
    int st = cp_buf_printf(&w->sql,
                           "INSERT INTO calls_%s (time, cpu_time, wait_time, memory_used, duration, non_blocking,"
                           " queue_wait_duration, suspend_duration, calls, transactions, logs_generated,"
                           " logs_written, file_read, file_written, net_read, net_written, namespace,"
                           " service_name, pod_name, restart_time, method, params, trace_file_index,"
                           " buffer_offset, record_index, method_name, thread, error, pod_hash, trace_reason,"
                           " trace, has_sql)"
                           " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"
                           " ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32)",
                           x->suffix);
    if (st != CP_OK || cp_buf_putc(&w->sql, 0) != CP_OK) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    const char *sql = (const char *)w->sql.data;
    if (sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &x->ins_call, NULL) != SQLITE_OK) {
        st = fail(w, err, errlen, "prepare window insert");
        window_drop_stmts(x);
        return st;
    }
    w->stmt_win[w->nstmt++] = x;
    return CP_OK;
}

/* Binds the call row; every parameter is bound each time, so no clear_bindings. */
static void bind_call(sqlite3_stmt *s, const cp_call *c, int64_t pod_hash)
{
    sqlite3_bind_int64(s, 1, c->ts_ms);
    sqlite3_bind_int64(s, 2, c->cpu_time);
    sqlite3_bind_int64(s, 3, c->wait_time);
    sqlite3_bind_int64(s, 4, c->memory_used);
    sqlite3_bind_int(s, 5, c->duration_ms);
    sqlite3_bind_int64(s, 6, c->non_blocking);
    sqlite3_bind_int(s, 7, c->queue_wait_ms);
    sqlite3_bind_int(s, 8, c->suspend_ms);
    sqlite3_bind_int(s, 9, c->calls);
    sqlite3_bind_int64(s, 10, c->transactions);
    sqlite3_bind_int(s, 11, c->logs_generated);
    sqlite3_bind_int(s, 12, c->logs_written);
    sqlite3_bind_int64(s, 13, c->file_read);
    sqlite3_bind_int64(s, 14, c->file_written);
    sqlite3_bind_int64(s, 15, c->net_read);
    sqlite3_bind_int64(s, 16, c->net_written);
    bind_textn(s, 17, c->ns, c->ns_len);
    bind_textn(s, 18, c->service, c->service_len);
    bind_textn(s, 19, c->pod, c->pod_len);
    sqlite3_bind_int64(s, 20, c->restart_ms);
    sqlite3_bind_int(s, 21, c->method_id);
    if (c->params_json) bind_textn(s, 22, c->params_json, c->params_json_len);
    else sqlite3_bind_text(s, 22, "{}", 2, SQLITE_STATIC);
    sqlite3_bind_int(s, 23, c->trace_file_index);
    sqlite3_bind_int(s, 24, c->buffer_offset);
    sqlite3_bind_int(s, 25, c->record_index);
    bind_textn(s, 26, c->method, c->method_len);
    bind_textn(s, 27, c->thread, c->thread_len);
    sqlite3_bind_int(s, 28, c->error ? 1 : 0);
    sqlite3_bind_int64(s, 29, pod_hash);
    if (c->trace_reason) sqlite3_bind_text(s, 30, c->trace_reason, -1, SQLITE_STATIC);
    else sqlite3_bind_null(s, 30);
    if (c->trace) sqlite3_bind_blob64(s, 31, c->trace, (sqlite3_uint64)c->trace_len, SQLITE_STATIC);
    else sqlite3_bind_null(s, 31);
    sqlite3_bind_int(s, 32, c->sql ? 1 : 0);
}

/* Steps an INSERT once and resets it. */
static int insert_step(cp_hot_writer *w, sqlite3_stmt *s, char *err, size_t errlen, const char *what)
{
    int rc = sqlite3_step(s);
    int st = rc == SQLITE_DONE ? CP_OK : fail(w, err, errlen, what);
    sqlite3_reset(s);
    return st;
}

/* ---- per-pod counters ---------------------------------------------------------------------- */

static int count_is(const cp_hot_writer *w, const hot_count *k, int64_t wstart, uint64_t ph, const cp_call *c)
{
    return k->window_start == wstart && k->pod_hash == ph && k->restart_ms == c->restart_ms &&
           k->ns_len == c->ns_len && k->pod_len == c->pod_len &&
           (c->ns_len == 0 || !memcmp(w->text.data + k->ns_off, c->ns, c->ns_len)) &&
           (c->pod_len == 0 || !memcmp(w->text.data + k->pod_off, c->pod, c->pod_len));
}

static int flush_counts(cp_hot_writer *w, char *err, size_t errlen);

/* Appends a name to the counters' text; *off receives its offset. */
static int text_add(cp_hot_writer *w, const char *p, size_t n, size_t *off)
{
    *off = w->text.len;
    return n ? cp_buf_append(&w->text, p, n) : CP_OK;
}

/* A new counter for (window, pod restart); flushes early when the counters are full. */
static int count_new(cp_hot_writer *w, const hot_window *x, uint64_t ph, const cp_call *c, size_t slot,
                     hot_count **out, char *err, size_t errlen)
{
    size_t need = c->ns_len + c->service_len + c->pod_len;
    if (w->ncnt == HOT_MAX_COUNTS || w->text.len + need > HOT_MAX_COUNT_TEXT) {
        int st = flush_counts(w, err, errlen);
        if (st != CP_OK) return st;
        slot = cp_mix64(ph ^ (uint64_t)x->start * 31 ^ (uint64_t)c->restart_ms) & (HOT_COUNT_SLOTS - 1);
    }
    if (need > HOT_MAX_COUNT_TEXT || c->ns_len > UINT32_MAX || c->service_len > UINT32_MAX ||
        c->pod_len > UINT32_MAX) {
        snprintf(err, errlen, "pod names too long");
        return CP_ELIMIT;
    }
    hot_count *k = &w->cnt[w->ncnt];
    memset(k, 0, sizeof *k);
    k->window_start = x->start;
    k->window_end = x->end;
    k->restart_ms = c->restart_ms;
    k->pod_hash = ph;
    k->ns_len = (uint32_t)c->ns_len;
    k->svc_len = (uint32_t)c->service_len;
    k->pod_len = (uint32_t)c->pod_len;
    if (text_add(w, c->ns, c->ns_len, &k->ns_off) != CP_OK || text_add(w, c->service, c->service_len, &k->svc_off) != CP_OK ||
        text_add(w, c->pod, c->pod_len, &k->pod_off) != CP_OK) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    w->cnt_slot[slot] = (int32_t)w->ncnt++;
    *out = k;
    return CP_OK;
}

/* One more call of c's pod restart in window x. */
static int count_add(cp_hot_writer *w, const hot_window *x, uint64_t ph, const cp_call *c, char *err, size_t errlen)
{
    hot_count *k = w->last_cnt;
    if (!k || !count_is(w, k, x->start, ph, c)) {
        size_t i = cp_mix64(ph ^ (uint64_t)x->start * 31 ^ (uint64_t)c->restart_ms) & (HOT_COUNT_SLOTS - 1);
        k = NULL;
        while (w->cnt_slot[i] >= 0) {
            hot_count *e = &w->cnt[w->cnt_slot[i]];
            if (count_is(w, e, x->start, ph, c)) {
                k = e;
                break;
            }
            i = (i + 1) & (HOT_COUNT_SLOTS - 1);
        }
        if (!k) {
            int st = count_new(w, x, ph, c, i, &k, err, errlen);
            if (st != CP_OK) return st;
        }
        w->last_cnt = k;
    }
    k->calls++;
    return CP_OK;
}

/* ---- rollups (query/cp_rollup.h): entries per window, upserted at each flush ---------------- */

typedef struct rollup_put {
    cp_hot_writer *w;
    const char *tbl;
    char *err;
    size_t errlen;
} rollup_put;

static int rollup_row(void *ud, const cp_rollup_entry *e)
{
    rollup_put *p = ud;
    sqlite3_stmt *s = p->w->st[WS_ROLLUP_ADD];
    sqlite3_bind_int64(s, 1, e->cell_ms);
    bind_textn(s, 2, e->ns, e->ns_len);
    bind_textn(s, 3, e->service, e->service_len);
    bind_textn(s, 4, e->pod, e->pod_len);
    sqlite3_bind_int(s, 5, e->cls);
    sqlite3_bind_int(s, 6, e->flags);
    sqlite3_bind_int64(s, 7, e->idle_fp);
    sqlite3_bind_text(s, 8, p->tbl, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 9, e->n);
    sqlite3_bind_int64(s, 10, e->sum_duration);
    sqlite3_bind_int64(s, 11, e->sum_suspend);
    sqlite3_bind_int64(s, 12, e->sum_queue);
    sqlite3_bind_int64(s, 13, e->sum_transactions);
    sqlite3_bind_int64(s, 14, e->max.ts_ms);
    sqlite3_bind_int(s, 15, e->max.duration_ms);
    sqlite3_bind_int(s, 16, e->max.calls);
    sqlite3_bind_int64(s, 17, e->max.restart_ms);
    sqlite3_bind_int(s, 18, e->max.trace_file_index);
    sqlite3_bind_int(s, 19, e->max.buffer_offset);
    sqlite3_bind_int(s, 20, e->max.record_index);
    return ws_run(p->w, WS_ROLLUP_ADD, p->err, p->errlen, "hot_rollups upsert");
}

/* Writes the window's entries under its current table name (flush_rows runs before a
 * window moves to another batch, so they are that table's). */
static int rollup_flush(cp_hot_writer *w, hot_window *x, char *err, size_t errlen)
{
    if (!x->acc || !cp_rollup_acc_count(x->acc)) return CP_OK;
    char calls[CP_HOT_NAME_LEN];
    window_name(x, calls);
    rollup_put p = {w, calls, err, errlen};
    int st = cp_rollup_acc_each(x->acc, rollup_row, &p);
    cp_rollup_acc_free(x->acc); /* what a busy window needs is made again next time */
    x->acc = NULL;
    return st;
}

static int rollup_add(cp_hot_writer *w, hot_window *x, const cp_call *c, char *err, size_t errlen)
{
    if (!x->acc && cp_rollup_acc_new(HOT_ROLLUP_ENTRIES, w->idle_fp, &x->acc) != CP_OK) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    int flags = cp_rollup_flags_memo(w->memo, c, c->error, w->idle, w->nidle);
    int st = cp_rollup_acc_add(x->acc, c, flags);
    if (st == CP_ELIMIT) { /* full: into the open transaction now, then on */
        st = rollup_flush(w, x, err, errlen);
        if (st == CP_OK) return rollup_add(w, x, c, err, errlen);
    }
    if (st == CP_ENOMEM) snprintf(err, errlen, "out of memory");
    return st;
}

/* ---- the operations -------------------------------------------------------------------------- */

int cp_hot_writer_put(cp_hot_writer *w, const cp_call *c, char *err, size_t errlen)
{
    if (!c->ns || !c->service || !c->pod) {
        snprintf(err, errlen, "call without namespace, service or pod name");
        return CP_EINVAL;
    }
    hot_window *x;
    int st = window_for(w, c->ts_ms, &x, err, errlen);
    if (st != CP_OK) return st;
    if (!x->ins_call && (st = window_prepare_stmts(w, x, err, errlen)) != CP_OK) return st;
    x->used = ++w->tick;
    uint64_t ph = cp_pod_hash(c->ns, c->ns_len, c->pod, c->pod_len);
    bind_call(x->ins_call, c, (int64_t)ph);
    st = insert_step(w, x->ins_call, err, errlen, "calls insert");
    if (st != CP_OK) return st;
    x->new_calls++;
    st = count_add(w, x, ph, c, err, errlen);
    if (st == CP_OK && x->rollup) st = rollup_add(w, x, c, err, errlen);
    return st;
}

int cp_hot_writer_prepare(cp_hot_writer *w, int64_t now_ms, char *err, size_t errlen)
{
    int64_t start;
    if (cp_hot_window_start(now_ms, w->window_ms, &start) != CP_OK) {
        snprintf(err, errlen, "time %lld ms is outside the storable range", (long long)now_ms);
        return CP_EINVAL;
    }
    int64_t until = now_ms + w->ahead_ms;
    if (until > CP_HOT_MAX_TS) until = CP_HOT_MAX_TS;
    for (; start < until; start += w->window_ms) {
        hot_window *x;
        int st = window_for(w, start, &x, err, errlen);
        if (st != CP_OK) return st;
    }
    return CP_OK;
}

int cp_hot_writer_dirty(const cp_hot_writer *w)
{
    if (w->ncnt) return 1;
    for (size_t i = 0; i < w->nwin; i++)
        if (w->win[i].new_calls || (w->win[i].acc && cp_rollup_acc_count(w->win[i].acc)))
            return 1;
    return 0;
}

/* rows_count of one inventory row += n. */
static int rows_add(cp_hot_writer *w, const char *name, int64_t n, char *err, size_t errlen)
{
    sqlite3_stmt *s = w->st[WS_INV_ROWS];
    sqlite3_bind_int64(s, 1, n);
    sqlite3_bind_text(s, 2, name, -1, SQLITE_TRANSIENT);
    return ws_run(w, WS_INV_ROWS, err, errlen, "inventory rows_count");
}

static int flush_rows(cp_hot_writer *w, char *err, size_t errlen)
{
    for (size_t i = 0; i < w->nwin; i++) {
        hot_window *x = &w->win[i];
        int st = rollup_flush(w, x, err, errlen);
        if (st != CP_OK) return st;
        if (!x->new_calls) continue;
        char calls[CP_HOT_NAME_LEN];
        window_name(x, calls);
        st = rows_add(w, calls, x->new_calls, err, errlen);
        if (st != CP_OK) return st;
        x->new_calls = 0;
    }
    return CP_OK;
}

static int flush_counts(cp_hot_writer *w, char *err, size_t errlen)
{
    sqlite3_stmt *s = w->st[WS_COUNT_ADD];
    for (size_t i = 0; i < w->ncnt; i++) {
        const hot_count *k = &w->cnt[i];
        const char *t = (const char *)w->text.data;
        bind_textn(s, 1, t ? t + k->ns_off : "", k->ns_len);
        bind_textn(s, 2, t ? t + k->pod_off : "", k->pod_len);
        sqlite3_bind_int64(s, 3, k->restart_ms);
        sqlite3_bind_int64(s, 4, k->window_start);
        sqlite3_bind_int64(s, 5, k->window_end);
        bind_textn(s, 6, t ? t + k->svc_off : "", k->svc_len);
        sqlite3_bind_int64(s, 7, k->calls);
        int st = ws_run(w, WS_COUNT_ADD, err, errlen, "call_counts upsert");
        if (st != CP_OK) return st;
    }
    counts_clear(w);
    return CP_OK;
}

int cp_hot_writer_flush(cp_hot_writer *w, char *err, size_t errlen)
{
    int st = flush_rows(w, err, errlen);
    return st == CP_OK ? flush_counts(w, err, errlen) : st;
}

void cp_hot_writer_end_txn(cp_hot_writer *w) { w->txn++; }

void cp_hot_writer_rollback(cp_hot_writer *w)
{
    w->txn++;
    windows_clear(w);
    counts_clear(w);
}
