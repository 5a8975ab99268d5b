/* reader_sqlite.c -- cp_reader on the SQLite catalog (cp_hot.h).
 *
 * A search lists the window tables overlapping the range (from `inventory`, status ready
 * or persisting, with rows), runs one ordered query per window -- filters in SQL, the
 * extra predicate as the application function cp_match() -- each with LIMIT limit+1, and
 * merges the per-window cursors with a heap in C into the global first `limit` rows.
 * Time-sorted searches open windows lazily, newest (or oldest) first, so a page usually
 * touches one or two windows. Every operation runs in one read transaction: all windows
 * are seen at the same snapshot. A window's late batches (calls_<suffix>_<n>, made for
 * calls that arrived after a compactor claimed it) are window tables like any other.
 *
 * Written once for both readers, over sqldb.h on this reader's connection
 * (cp_sqldb_wrap_sqlite): cold files (cold_list.c), get, pods, words, bounds (lookups.c;
 * bounds covers both tiers), and the stats' windows and rollup entries (hot_stats.c; the stats
 * scan is st_scan here).
 *
 * Order (cp_sort_key): the sort column in its direction, then time DESC, restart_time
 * DESC, pod_hash DESC, trace_file_index DESC, buffer_offset DESC, record_index DESC.
 * pod_hash is compared as the signed 64-bit integer SQLite stores. Text compares by
 * bytes (BINARY), shorter first on a common prefix.
 *
 * Bounds: at most RD_MAX_WINDOWS windows per search, limit at most RD_MAX_LIMIT; prepared
 * statements are kept in the connection's sqldb cache (64).
 */
#include "query/cp_query.h"
#include "store/cp_hot.h"
#include "store/hot/hot_internal.h"
#include "store/read/reader_internal.h"
#include "store/cp_stats.h"
#include "store/sql/sqldb.h"

#include <stdio.h>
#include <stdlib.h>

#define RD_MAX_WINDOWS CP_RD_MAX_WINDOWS
#define RD_MAX_LIMIT 100000
#define RD_MATCH_PTR "cp_hot_match"
#define RD_NS_PTR "cp_hot_ns_set" /* a cp_call_filter whose ns_in cp_ns_ok() checks */

/* A prepared statement from the connection's cache (sqldb.h cp_sqldb_stmt_take). */
typedef cp_sqldb_stmt rd_stmt;

typedef struct sqlite_reader {
    cp_reader base; /* first: the interface pointer is the object pointer */
    sqlite3 *db;
    cp_buf sql;              /* scratch for SQL text */
    cp_buf needle;           /* lower-cased method substring */
    int cold;                /* the catalog has the cold tier's tables (migration 3) */
    int depth;               /* nested read transactions (one BEGIN for all) */
    int rollups;             /* the catalog has hot_rollups (migration 5) */
    cp_sqldb *sqldb;         /* db for the code both catalogs share (cold_list.c) */
    char err[256];
} sqlite_reader;

static int rd_fail(sqlite_reader *r, const char *what)
{
    snprintf(r->err, sizeof r->err, "%s: %s", what, sqlite3_errmsg(r->db));
    return CP_EIO;
}

static int rd_oom(sqlite_reader *r)
{
    snprintf(r->err, sizeof r->err, "out of memory");
    return CP_ENOMEM;
}

/* ---- statements: the connection's sqldb cache ------------------------------------------------ */

/* Takes the statement for sql out of the cache, or prepares it. */
static int stmt_get(sqlite_reader *r, const char *sql, rd_stmt *out)
{
    int st = cp_sqldb_stmt_take(r->sqldb, sql, out);
    if (st != CP_OK) snprintf(r->err, sizeof r->err, "%s", cp_sqldb_errmsg(r->sqldb));
    return st;
}

/* Gives a statement back: reset and cached, or finalized if it failed (its table may be
 * gone). */
static void stmt_put(sqlite_reader *r, rd_stmt *q, int ok) { cp_sqldb_stmt_give(r->sqldb, q, ok); }

static int txn_begin(sqlite_reader *r)
{
    if (r->depth++ > 0) return CP_OK; /* inside a snapshot (rd_snapshot) */
    if (sqlite3_exec(r->db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK) return CP_OK;
    r->depth--;
    return rd_fail(r, "begin");
}

static void txn_end(sqlite_reader *r)
{
    if (r->depth > 0 && --r->depth == 0) sqlite3_exec(r->db, "COMMIT", NULL, NULL, NULL);
}

static int rd_snapshot(cp_reader *base, int begin)
{
    sqlite_reader *r = (sqlite_reader *)base;
    if (begin) return txn_begin(r);
    txn_end(r);
    return CP_OK;
}

/* ---- rows -> cp_call -------------------------------------------------------------------------- */


static const char *col_text(sqlite3_stmt *s, int i, size_t *len)
{
    const char *p = (const char *)sqlite3_column_text(s, i);
    *len = (size_t)sqlite3_column_bytes(s, i);
    return p ? p : "";
}

/* Fills c from the current row of a CP_RD_COLUMNS query; pointers are valid until the
 * statement moves. */
static void row_to_call(sqlite3_stmt *s, cp_call *c)
{
    memset(c, 0, sizeof *c);
    c->ts_ms = sqlite3_column_int64(s, CP_RDC_TIME);
    c->duration_ms = sqlite3_column_int(s, CP_RDC_DURATION);
    c->cpu_time = sqlite3_column_int64(s, CP_RDC_CPU);
    c->wait_time = sqlite3_column_int64(s, CP_RDC_WAIT);
    c->memory_used = sqlite3_column_int64(s, CP_RDC_MEMORY);
    c->non_blocking = sqlite3_column_int64(s, CP_RDC_NONBLOCKING);
    c->queue_wait_ms = sqlite3_column_int(s, CP_RDC_QUEUE);
    c->suspend_ms = sqlite3_column_int(s, CP_RDC_SUSPEND);
    c->calls = sqlite3_column_int(s, CP_RDC_CALLS);
    c->transactions = sqlite3_column_int64(s, CP_RDC_TRANSACTIONS);
    c->logs_generated = sqlite3_column_int(s, CP_RDC_LOGS_GENERATED);
    c->logs_written = sqlite3_column_int(s, CP_RDC_LOGS_WRITTEN);
    c->file_read = sqlite3_column_int64(s, CP_RDC_FILE_READ);
    c->file_written = sqlite3_column_int64(s, CP_RDC_FILE_WRITTEN);
    c->net_read = sqlite3_column_int64(s, CP_RDC_NET_READ);
    c->net_written = sqlite3_column_int64(s, CP_RDC_NET_WRITTEN);
    c->ns = col_text(s, CP_RDC_NS, &c->ns_len);
    c->service = col_text(s, CP_RDC_SERVICE, &c->service_len);
    c->pod = col_text(s, CP_RDC_POD, &c->pod_len);
    c->restart_ms = sqlite3_column_int64(s, CP_RDC_RESTART);
    c->method_id = sqlite3_column_int(s, CP_RDC_METHOD_ID);
    c->method = col_text(s, CP_RDC_METHOD, &c->method_len);
    c->thread = col_text(s, CP_RDC_THREAD, &c->thread_len);
    c->params_json = col_text(s, CP_RDC_PARAMS, &c->params_json_len);
    c->error = sqlite3_column_int(s, CP_RDC_ERROR) != 0;
    c->sql = sqlite3_column_int(s, CP_RDC_HAS_SQL) != 0;
    c->trace_file_index = sqlite3_column_int(s, CP_RDC_TFI);
    c->buffer_offset = sqlite3_column_int(s, CP_RDC_BO);
    c->record_index = sqlite3_column_int(s, CP_RDC_RI);
    c->trace_reason = (const char *)sqlite3_column_text(s, CP_RDC_TRACE_REASON); /* NULL when it has a trace */
}

/* ---- cp_match(): the search's extra predicate, inside the query ------------------------------- */

typedef struct rd_match {
    int (*match)(void *ud, const cp_call_view *v);
    void *ud;
    const char *needle; /* lower-case ASCII folded method substring, or NULL */
    size_t needle_len;
    uint64_t scanned, max_scan;
    int over;           /* max_scan reached: the query was stopped */
} rd_match;


/* cp_match(ctx, method_name, pod_name, params): counts the row against max_scan (an error
 * stops the query when over), then the method substring, then the caller's predicate. */
static void fn_match(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    rd_match *m = sqlite3_value_pointer(argv[0], RD_MATCH_PTR);
    if (!m) {
        sqlite3_result_error(cx, "cp_match: no search context", -1);
        return;
    }
    if (m->max_scan && m->scanned >= m->max_scan) {
        m->over = 1;
        sqlite3_result_error(cx, "cp_match: scan budget reached", -1);
        return;
    }
    m->scanned++;
    cp_call_view v;
    v.method = (const char *)sqlite3_value_text(argv[1]);
    v.method_len = (size_t)sqlite3_value_bytes(argv[1]);
    if (!v.method) v.method = "";
    if (m->needle && !cp_ci_contains(v.method, v.method_len, m->needle, m->needle_len)) {
        sqlite3_result_int(cx, 0);
        return;
    }
    if (m->match) {
        v.pod = (const char *)sqlite3_value_text(argv[2]);
        v.pod_len = (size_t)sqlite3_value_bytes(argv[2]);
        v.params_json = (const char *)sqlite3_value_text(argv[3]);
        v.params_json_len = (size_t)sqlite3_value_bytes(argv[3]);
        if (!v.pod) v.pod = "";
        if (!v.params_json) v.params_json = "";
        sqlite3_result_int(cx, m->match(m->ud, &v) ? 1 : 0);
        return;
    }
    sqlite3_result_int(cx, 1);
}

/* cp_ns_ok(filter, namespace): 1 if the row's namespace is in the filter's ns_limited set
 * (issue 17: the namespaces the asker may see). */
static void fn_ns_ok(sqlite3_context *cx, int argc, sqlite3_value **argv)
{
    (void)argc;
    const cp_call_filter *f = sqlite3_value_pointer(argv[0], RD_NS_PTR);
    if (!f) {
        sqlite3_result_error(cx, "cp_ns_ok: no filter", -1);
        return;
    }
    const char *ns = (const char *)sqlite3_value_text(argv[1]);
    size_t len = (size_t)sqlite3_value_bytes(argv[1]);
    sqlite3_result_int(cx, cp_call_filter_ns_ok(f, ns ? ns : "", ns ? len : 0));
}

/* ---- search: one cursor per window ------------------------------------------------------------ */

typedef struct rd_cursor {
    char name[CP_HOT_NAME_LEN]; /* calls_YYYYMMDD_HHMM */
    int64_t start, end, rows;   /* from inventory */
    rd_stmt q;                  /* the window's query once opened */
    int has_row;
    cp_rowkey key;              /* the current row's position in the order */
} rd_cursor;

typedef struct rd_search {
    sqlite_reader *r;
    const cp_call_filter *f;
    int64_t from, to;           /* the range, narrowed by a time keyset */
    int text;                   /* the sort column is text */
    int use_fn;                 /* the queries call cp_match() */
    rd_match m;
    rd_cursor *cur;
    size_t ncur, opened;        /* windows listed; windows opened (in list order) */
    cp_idxheap heap;            /* cursor indexes, best row first */
    uint64_t fetched;           /* rows read from the cursors */
    /* the window being opened, walked per pod (see window_pods) */
    int by_pod;
    size_t npods;
    int64_t pods[CP_RD_MAX_POD_ARMS];
} rd_search;

/* The heap's order: 1 if cursor a's row comes before cursor b's. */
static int cur_less(void *ud, size_t a, size_t b)
{
    const rd_search *s = ud;
    return cp_rowkey_cmp(&s->cur[a].key, &s->cur[b].key, s->text, s->f->desc) < 0;
}

/* Moves a cursor to its next row and reads the row's key. A query stopped by the scan
 * budget ends the cursor (the search becomes partial); other errors are errors. */
static int cur_step(rd_search *s, rd_cursor *c)
{
    sqlite3_stmt *q = c->q.st;
    int rc = sqlite3_step(q);
    c->has_row = rc == SQLITE_ROW;
    if (rc == SQLITE_ROW) {
        s->fetched++;
        int col = cp_rd_sort_cols[s->f->sort].col;
        if (s->text) c->key.text = col_text(q, col, &c->key.text_len);
        else c->key.num = sqlite3_column_int64(q, col);
        c->key.time = sqlite3_column_int64(q, CP_RDC_TIME);
        c->key.restart = sqlite3_column_int64(q, CP_RDC_RESTART);
        c->key.pod_hash = sqlite3_column_int64(q, CP_RDC_POD_HASH);
        c->key.tfi = sqlite3_column_int64(q, CP_RDC_TFI);
        c->key.bo = sqlite3_column_int64(q, CP_RDC_BO);
        c->key.ri = sqlite3_column_int64(q, CP_RDC_RI);
        return CP_OK;
    }
    if (rc == SQLITE_DONE || s->m.over) return CP_OK;
    return rd_fail(s->r, "search");
}

/* Which index a window's query should walk (INDEXED BY), or NULL for the planner's
 * choice. The sort column's index returns rows in order, so it reads about limit / f
 * rows when a fraction f of the window is in range; the time index reads the f * rows
 * in range and sorts them. */
static const char *pick_index(const rd_search *s, const rd_cursor *c, int partial)
{
    if (s->f->sort == CP_SORT_TS) return "time";
    if (s->f->sort == CP_SORT_DURATION) {
        if (!partial) return "duration";
        if (c->end <= c->start) return "time"; /* not a window the writer made */
        double lo = (double)(s->from > c->start ? s->from : c->start);
        double hi = (double)(s->to < c->end ? s->to : c->end);
        double frac = (hi - lo) / (double)(c->end - c->start);
        if (frac <= 0) return "time";
        return ((double)s->f->limit + 1) / frac < (double)c->rows * frac ? "duration" : "time";
    }
    return partial ? "time" : NULL; /* a whole window: a plain scan beats any index */
}

/* The keyset predicate: rows strictly after f->after. ?8 = sort value, ?9 time, ?10
 * restart, ?11 pod_hash, ?12..?14 the trace position. The bare bound on the sort column
 * is redundant but lets SQLite start the index walk at the key. */
static int sql_keyset(cp_buf *b, const cp_call_filter *f)
{
    static const char ref[] = "(restart_time, pod_hash, trace_file_index, buffer_offset, record_index)"
                              " < (?10, ?11, ?12, ?13, ?14)";
    static const char tref[] = "(time, restart_time, pod_hash, trace_file_index, buffer_offset, record_index)"
                               " < (?9, ?10, ?11, ?12, ?13, ?14)";
    const char *col = cp_rd_sort_cols[f->sort].expr;
    if (f->sort == CP_SORT_TS && f->desc) return cp_buf_printf(b, " AND time <= ?9 AND %s", tref);
    if (f->sort == CP_SORT_TS) return cp_buf_printf(b, " AND time >= ?9 AND (time > ?9 OR (time = ?9 AND %s))", ref);
    if (f->desc)
        return cp_buf_printf(b,
                             " AND %s <= ?8 AND (%s, time, restart_time, pod_hash, trace_file_index, buffer_offset,"
                             " record_index) < (?8, ?9, ?10, ?11, ?12, ?13, ?14)",
                             col, col);
    return cp_buf_printf(b, " AND %s >= ?8 AND (%s > ?8 OR (%s = ?8 AND %s))", col, col, col, tref);
}

/* The ORDER BY of a window query (cp_sort_key's order). */
static int sql_order(cp_buf *b, const cp_call_filter *f)
{
    const char *dir = f->desc ? "DESC" : "ASC";
    int st = f->sort == CP_SORT_TS ? cp_buf_printf(b, " ORDER BY time %s", dir)
                                   : cp_buf_printf(b, " ORDER BY %s %s, time DESC", cp_rd_sort_cols[f->sort].expr, dir);
    if (st == CP_OK)
        st = cp_buf_puts(b, ", restart_time DESC, pod_hash DESC, trace_file_index DESC, buffer_offset DESC,"
                            " record_index DESC LIMIT ?16");
    return st;
}

/* The conditions every row of a window query must meet (after the WHERE). */
static int sql_conds(const rd_search *s, int partial, cp_buf *b)
{
    const cp_call_filter *f = s->f;
    int st = CP_OK;
    if (st == CP_OK && partial) st = cp_buf_puts(b, " AND time >= ?1 AND time < ?2");
    if (st == CP_OK && f->ns) st = cp_buf_puts(b, " AND namespace = ?3");
    if (st == CP_OK && f->ns_limited) st = cp_buf_puts(b, " AND cp_ns_ok(?17, namespace)");
    if (st == CP_OK && f->service) st = cp_buf_puts(b, " AND service_name = ?4");
    if (st == CP_OK && f->pod) st = cp_buf_puts(b, " AND pod_name = ?5");
    if (st == CP_OK && f->min_duration_ms > 0) st = cp_buf_puts(b, " AND duration >= ?6");
    if (st == CP_OK && f->max_duration_ms < INT64_MAX) st = cp_buf_puts(b, " AND duration <= ?7");
    if (st == CP_OK && f->errors_only) st = cp_buf_puts(b, " AND error <> 0");
    if (st == CP_OK && f->after) st = sql_keyset(b, f);
    /* last, so the cheap SQL filters run first */
    if (st == CP_OK && s->use_fn) st = cp_buf_puts(b, " AND cp_match(?15, method_name, pod_name, params)");
    return st;
}

/* The pod-walk query of one window: per pod of s->pods, its rows newest (or oldest)
 * first through the pod index, merged by the compound's ORDER BY. Each arm reads at most
 * limit + 1 rows, however rare or frequent its pod. ?18.. are the pod hashes. */
static int sql_window_pods(const rd_search *s, const rd_cursor *c, int partial, cp_buf *b)
{
    int st = CP_OK;
    for (size_t i = 0; st == CP_OK && i < s->npods; i++) {
        if (i) st = cp_buf_puts(b, " UNION ALL ");
        if (st == CP_OK && s->npods > 1) st = cp_buf_puts(b, "SELECT * FROM (");
        if (st == CP_OK)
            st = cp_buf_printf(b, "SELECT " CP_RD_COLUMNS " FROM %s INDEXED BY %s_pod WHERE pod_hash = ?%zu", c->name,
                               c->name, 18 + i);
        if (st == CP_OK) st = sql_conds(s, partial, b);
        if (st == CP_OK) st = sql_order(b, s->f);
        if (st == CP_OK && s->npods > 1) st = cp_buf_putc(b, ')');
    }
    if (st == CP_OK && s->npods > 1) st = sql_order(b, s->f);
    return st;
}

/* The query of one window. Parameters: ?1/?2 range, ?3..?5 names, ?6/?7 duration
 * bounds, ?8..?14 keyset, ?15 the cp_match context, ?16 the row limit, ?17 the
 * namespace set (cp_ns_ok). */
static int sql_window(const rd_search *s, const rd_cursor *c, cp_buf *b)
{
    const cp_call_filter *f = s->f;
    int partial = s->from > c->start || s->to < c->end;
    cp_buf_reset(b);
    int st;
    if (s->by_pod) {
        st = sql_window_pods(s, c, partial, b);
    } else {
        const char *ix = pick_index(s, c, partial);
        st = cp_buf_printf(b, "SELECT " CP_RD_COLUMNS " FROM %s", c->name);
        if (st == CP_OK && ix) st = cp_buf_printf(b, " INDEXED BY %s_%s", c->name, ix);
        if (st == CP_OK) st = cp_buf_puts(b, " WHERE 1");
        if (st == CP_OK) st = sql_conds(s, partial, b);
        if (st == CP_OK) st = sql_order(b, f);
    }
    if (st == CP_OK) st = cp_buf_putc(b, 0);
    return st;
}

static void bind_str(sqlite3_stmt *q, int i, const char *p)
{
    if (p) sqlite3_bind_text(q, i, p, -1, SQLITE_STATIC);
}

/* Binds every parameter a window query may use (unused ones are harmless). */
static void bind_window(rd_search *s, sqlite3_stmt *q)
{
    const cp_call_filter *f = s->f;
    sqlite3_bind_int64(q, 1, s->from);
    sqlite3_bind_int64(q, 2, s->to);
    bind_str(q, 3, f->ns);
    bind_str(q, 4, f->service);
    bind_str(q, 5, f->pod);
    sqlite3_bind_int64(q, 6, f->min_duration_ms);
    sqlite3_bind_int64(q, 7, f->max_duration_ms);
    if (f->after) {
        const cp_sort_key *k = f->after;
        size_t tl = k->text_len < sizeof k->text ? k->text_len : sizeof k->text - 1;
        if (s->text) sqlite3_bind_text(q, 8, k->text, (int)tl, SQLITE_STATIC);
        else sqlite3_bind_int64(q, 8, k->num);
        sqlite3_bind_int64(q, 9, k->ref.ts_ms);
        sqlite3_bind_int64(q, 10, k->ref.restart_ms);
        sqlite3_bind_int64(q, 11, (int64_t)k->ref.pod_hash);
        sqlite3_bind_int(q, 12, k->ref.trace_file_index);
        sqlite3_bind_int(q, 13, k->ref.buffer_offset);
        sqlite3_bind_int(q, 14, k->ref.record_index);
    }
    if (s->use_fn) sqlite3_bind_pointer(q, 15, &s->m, RD_MATCH_PTR, NULL);
    if (f->ns_limited) sqlite3_bind_pointer(q, 17, (void *)f, RD_NS_PTR, NULL);
    sqlite3_bind_int64(q, 16, (int64_t)f->limit + 1);
    for (size_t i = 0; s->by_pod && i < s->npods; i++) sqlite3_bind_int64(q, 18 + (int)i, s->pods[i]);
}

/* Decides whether the window about to be opened is walked per pod: a time-sorted page
 * filtered by namespace or pod, and call_counts (written in the same transactions as the
 * rows) lists the window's pods. Sets s->by_pod, s->pods/npods (the matching pods'
 * hashes, as stored: signed). *none = 1 when the list says no pod of the window matches.
 * A window without counts (from before they existed) or with too many matching pods
 * keeps the time index. */
static int window_pods(rd_search *s, const rd_cursor *c, int *none)
{
    const cp_call_filter *f = s->f;
    s->by_pod = 0;
    s->npods = 0;
    *none = 0;
    if (!cp_rd_walks_pods(f)) return CP_OK;
    rd_stmt q;
    int st = stmt_get(s->r, "SELECT namespace, pod_name FROM call_counts WHERE window_start = ?1", &q);
    if (st != CP_OK) return st;
    sqlite3_bind_int64(q.st, 1, c->start);
    size_t listed = 0, n = 0;
    int rc, many = 0;
    while ((rc = sqlite3_step(q.st)) == SQLITE_ROW) {
        listed++;
        size_t nl, pl;
        const char *ns = col_text(q.st, 0, &nl), *pod = col_text(q.st, 1, &pl);
        int64_t h;
        if (!cp_rd_pod_taken(f, ns, nl, pod, pl, &h)) continue;
        size_t i = 0;
        while (i < n && s->pods[i] != h) i++; /* one row per restart: the same pod again */
        if (i < n) continue;
        if (n == CP_RD_MAX_POD_ARMS) {
            many = 1;
            break;
        }
        s->pods[n++] = h;
    }
    if (!many && rc != SQLITE_DONE) st = rd_fail(s->r, "window pods");
    stmt_put(s->r, &q, st == CP_OK);
    if (st != CP_OK || many || !listed) return st;
    s->npods = n;
    s->by_pod = n > 0;
    *none = n == 0;
    return CP_OK;
}

/* Runs the window query of the next listed cursor and puts its first row in the heap. */
static int cur_open(rd_search *s)
{
    rd_cursor *c = &s->cur[s->opened++];
    if (s->m.over) return CP_OK; /* the budget is spent: nothing more is read */
    int none, st = window_pods(s, c, &none);
    if (st != CP_OK || none) return st;
    if (sql_window(s, c, &s->r->sql) != CP_OK) return rd_oom(s->r);
    st = stmt_get(s->r, (const char *)s->r->sql.data, &c->q);
    if (st != CP_OK) return st;
    bind_window(s, c->q.st);
    st = cur_step(s, c);
    if (st == CP_OK && c->has_row) cp_idxheap_push(&s->heap, (size_t)(c - s->cur));
    return st;
}

/* Time order: the next window (listed in time order) can only hold rows that come before
 * the best row so far when its time span reaches that row's time. */
static int cur_open_due(rd_search *s)
{
    while (s->opened < s->ncur) {
        const rd_cursor *next = &s->cur[s->opened];
        if (s->heap.n) {
            int64_t t = s->cur[cp_idxheap_top(&s->heap)].key.time;
            if (s->f->desc ? t >= next->end : t < next->start) return CP_OK;
        }
        int st = cur_open(s);
        if (st != CP_OK) return st;
    }
    return CP_OK;
}

/* Lists the windows overlapping [from, to) that have rows, in the order a time-sorted
 * search needs them. */
static int list_windows(rd_search *s)
{
    sqlite_reader *r = s->r;
    const char *order = s->f->sort == CP_SORT_TS && !s->f->desc ? "start_time ASC" : "end_time DESC";
    cp_buf_reset(&r->sql);
    if (cp_buf_printf(&r->sql,
                      "SELECT table_name, start_time, end_time, rows_count FROM inventory"
                      " WHERE table_type = 'calls' AND status IN ('ready', 'persisting') AND rows_count > 0"
                      " AND start_time < ?2 AND end_time > ?1 ORDER BY %s",
                      order) != CP_OK ||
        cp_buf_putc(&r->sql, 0) != CP_OK)
        return rd_oom(r);
    rd_stmt q;
    int st = stmt_get(r, (const char *)r->sql.data, &q);
    if (st != CP_OK) return st;
    sqlite3_bind_int64(q.st, 1, s->from);
    sqlite3_bind_int64(q.st, 2, s->to);
    size_t cap = 0;
    int rc;
    while (st == CP_OK && (rc = sqlite3_step(q.st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(q.st, 0);
        if (!name || !cp_hot_calls_name_ok(name)) continue; /* not ours: never spliced into SQL */
        if (s->ncur == RD_MAX_WINDOWS) {
            snprintf(r->err, sizeof r->err, "the time range spans more than %d windows", RD_MAX_WINDOWS);
            st = CP_ELIMIT;
            break;
        }
        if (s->ncur == cap) {
            cap = cap ? cap * 2 : 16;
            rd_cursor *nc = realloc(s->cur, cap * sizeof *nc);
            size_t *nh = realloc(s->heap.v, cap * sizeof *nh);
            if (nc) s->cur = nc;
            if (nh) s->heap.v = nh;
            if (!nc || !nh) {
                st = rd_oom(r);
                break;
            }
        }
        rd_cursor *c = &s->cur[s->ncur++];
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "%s", name);
        c->start = sqlite3_column_int64(q.st, 1);
        c->end = sqlite3_column_int64(q.st, 2);
        c->rows = sqlite3_column_int64(q.st, 3);
    }
    if (st == CP_OK && rc != SQLITE_DONE) st = rd_fail(r, "list windows");
    stmt_put(r, &q, st == CP_OK);
    return st;
}

/* Checks the filter and derives the search's range (a time keyset narrows it). 1 when
 * nothing can match. */
static int search_setup(rd_search *s, const cp_call_filter *f, int *empty)
{
    sqlite_reader *r = s->r;
    if ((unsigned)f->sort >= CP_SORT_COUNT || f->limit > RD_MAX_LIMIT) {
        snprintf(r->err, sizeof r->err, "bad search: sort column %d, limit %zu (at most %d)", (int)f->sort,
                 f->limit, RD_MAX_LIMIT);
        return CP_EINVAL;
    }
    if (f->after && (f->after->col != f->sort || !f->after->desc != !f->desc)) {
        snprintf(r->err, sizeof r->err, "bad search: the keyset is for another sort order");
        return CP_EINVAL;
    }
    s->f = f;
    s->from = f->from_ms;
    s->to = f->to_ms;
    s->text = cp_sort_is_text(f->sort);
    if (f->after && f->sort == CP_SORT_TS) {
        int64_t t = f->after->ref.ts_ms;
        if (f->desc && t < INT64_MAX && t + 1 < s->to) s->to = t + 1;
        if (!f->desc && t > s->from) s->from = t;
    }
    *empty = s->from >= s->to || (f->ns_limited && f->nns_in == 0);
    s->m.match = f->match;
    s->m.ud = f->match_ud;
    s->m.max_scan = f->max_scan;
    if (f->method_substr) {
        size_t n = strlen(f->method_substr);
        if (cp_rd_fold_into(&r->needle, f->method_substr, n) != CP_OK) return rd_oom(r);
        s->m.needle = (const char *)r->needle.data;
        s->m.needle_len = n;
    }
    s->use_fn = f->match || f->method_substr || f->max_scan;
    return CP_OK;
}

/* The k-way merge: hands over rows best first until limit, then looks for one more. */
static int search_merge(rd_search *s, cp_call_fn fn, void *ud, cp_search_stats *stats)
{
    int lazy = s->f->sort == CP_SORT_TS;
    int st = CP_OK;
    while (!lazy && st == CP_OK && s->opened < s->ncur) st = cur_open(s);
    size_t emitted = 0;
    while (st == CP_OK) {
        if (lazy && (st = cur_open_due(s)) != CP_OK) break;
        if (!s->heap.n) break;
        if (emitted == s->f->limit) {
            stats->more = 1;
            break;
        }
        rd_cursor *c = &s->cur[cp_idxheap_top(&s->heap)];
        cp_call call;
        row_to_call(c->q.st, &call);
        int u = fn(ud, &call);
        if (u) return u;
        emitted++;
        st = cur_step(s, c);
        if (st != CP_OK) break;
        if (c->has_row) cp_idxheap_down(&s->heap, 0);
        else cp_idxheap_pop(&s->heap);
    }
    return st;
}

static int rd_search_calls(cp_reader *base, const cp_call_filter *f, cp_call_fn fn, void *ud,
                           cp_search_stats *stats)
{
    sqlite_reader *r = (sqlite_reader *)base;
    cp_search_stats dummy;
    if (!stats) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    rd_search s;
    memset(&s, 0, sizeof s);
    s.r = r;
    s.heap.less = cur_less;
    s.heap.ud = &s;
    int empty = 0;
    int st = search_setup(&s, f, &empty);
    if (st != CP_OK || empty) return st;
    st = txn_begin(r);
    if (st != CP_OK) return st;
    st = list_windows(&s);
    if (st == CP_OK) st = search_merge(&s, fn, ud, stats);
    for (size_t i = 0; i < s.opened; i++) stmt_put(r, &s.cur[i].q, st != CP_EIO);
    txn_end(r);
    stats->windows = s.opened;
    stats->scanned = s.use_fn ? s.m.scanned : s.fetched;
    if (s.m.over) stats->partial = stats->more = 1;
    free(s.cur);
    free(s.heap.v);
    return st;
}

/* ---- get, pods, words, bounds (lookups.c), cold files (cold_list.c) ------------------------------ */

static cp_rd_ctx ctx_of(sqlite_reader *r) { return (cp_rd_ctx){r->sqldb, NULL, NULL, r->err, sizeof r->err}; }

static int rd_get(cp_reader *base, const cp_call_ref *ref, int with_trace, cp_call_fn fn, void *ud)
{
    sqlite_reader *r = (sqlite_reader *)base;
    int st = txn_begin(r);
    if (st != CP_OK) return st;
    cp_rd_ctx x = ctx_of(r);
    st = cp_rd_get(&x, ref, with_trace, fn, ud);
    txn_end(r);
    return st;
}

static int rd_pods(cp_reader *base, int64_t from_ms, int64_t to_ms, cp_pod_fn fn, void *ud)
{
    sqlite_reader *r = (sqlite_reader *)base;
    int st = txn_begin(r);
    if (st != CP_OK) return st;
    cp_rd_ctx x = ctx_of(r);
    st = cp_rd_pods(&x, from_ms, to_ms, fn, ud);
    txn_end(r);
    return st;
}

static int rd_words(cp_reader *base, const char *ns, const char *pod, int64_t restart_ms, const int32_t *ids, size_t n,
                    int (*fn)(void *ud, int32_t id, const char *text, size_t len), void *ud)
{
    sqlite_reader *r = (sqlite_reader *)base;
    cp_rd_ctx x = ctx_of(r);
    return cp_rd_words(&x, ns, pod, restart_ms, ids, n, fn, ud);
}

static int rd_bounds(cp_reader *base, int64_t *min_ts, int64_t *max_ts)
{
    sqlite_reader *r = (sqlite_reader *)base;
    *min_ts = *max_ts = 0;
    int st = txn_begin(r);
    if (st != CP_OK) return st;
    cp_rd_ctx x = ctx_of(r);
    st = cp_rd_bounds(&x, r->cold, min_ts, max_ts);
    txn_end(r);
    return st;
}

static int rd_cold_files(cp_reader *base, const cp_cold_query *q, cp_cold_file_fn fn, void *ud, size_t *skipped)
{
    sqlite_reader *r = (sqlite_reader *)base;
    size_t n = 0;
    if (skipped) *skipped = 0;
    if (!r->cold) return CP_OK;
    int st = txn_begin(r);
    if (st != CP_OK) return st;
    cp_rd_ctx x = ctx_of(r);
    st = cp_rd_cold_list(&x, q, r->rollups, fn, ud, &n);
    txn_end(r);
    if (skipped) *skipped = n;
    return st;
}

/* ---- stats (cp_stats.h): hot_stats.c, with this scan ----------------------------------------- */

/* The scan's state: the cp_match() context. */
typedef struct st_scan_state {
    sqlite_reader *r;
    rd_match m;
} st_scan_state;

static const char *st_text(sqlite3_stmt *s, int i, size_t *len)
{
    const char *p = (const char *)sqlite3_column_text(s, i);
    *len = (size_t)sqlite3_column_bytes(s, i);
    return p ? p : "";
}

/* One scan of the current window: the calls of sub, counted into acc. */
static int st_scan(cp_rd_stats *k, const cp_call_filter *sub)
{
    st_scan_state *ss = k->ud;
    sqlite_reader *r = ss->r;
    rd_match *m = &ss->m;
    const cp_rd_window *w = k->cur;
    int64_t from = sub->from_ms > w->start ? sub->from_ms : w->start;
    int64_t to = sub->to_ms < w->end ? sub->to_ms : w->end;
    if (from >= to || sub->min_duration_ms > sub->max_duration_ms) return 0;
    int partial = from > w->start || to < w->end;
    int narrow_dur = sub->min_duration_ms > 0 || sub->max_duration_ms < INT64_MAX;
    /* the time index for a slice of the window, the duration index for a class */
    const char *ix = partial && (double)(to - from) < 0.25 * (double)(w->end - w->start) ? "time"
                     : narrow_dur                                                          ? "duration"
                     : partial                                                             ? "time"
                                                                                           : NULL;
    int use_fn = sub->match || sub->method_substr || sub->max_scan;
    cp_buf_reset(&r->sql);
    int st = cp_buf_printf(&r->sql,
                           "SELECT time, duration, calls, suspend_duration, queue_wait_duration, transactions,"
                           " restart_time, trace_file_index, buffer_offset, record_index, namespace, pod_name"
                           " FROM %s",
                           w->name);
    if (st == CP_OK && ix) st = cp_buf_printf(&r->sql, " INDEXED BY %s_%s", w->name, ix);
    if (st == CP_OK) st = cp_buf_puts(&r->sql, " WHERE time >= ?1 AND time < ?2");
    if (st == CP_OK && sub->ns) st = cp_buf_puts(&r->sql, " AND namespace = ?3");
    if (st == CP_OK && sub->ns_limited) st = cp_buf_puts(&r->sql, " AND cp_ns_ok(?9, namespace)");
    if (st == CP_OK && sub->service) st = cp_buf_puts(&r->sql, " AND service_name = ?4");
    if (st == CP_OK && sub->pod) st = cp_buf_puts(&r->sql, " AND pod_name = ?5");
    if (st == CP_OK && sub->min_duration_ms > 0) st = cp_buf_puts(&r->sql, " AND duration >= ?6");
    if (st == CP_OK && sub->max_duration_ms < INT64_MAX) st = cp_buf_puts(&r->sql, " AND duration <= ?7");
    if (st == CP_OK && sub->errors_only) st = cp_buf_puts(&r->sql, " AND error <> 0");
    if (st == CP_OK && use_fn) st = cp_buf_puts(&r->sql, " AND cp_match(?8, method_name, pod_name, params)");
    if (st == CP_OK) st = cp_buf_putc(&r->sql, 0);
    if (st != CP_OK) return rd_oom(r);
    rd_stmt q;
    if ((st = stmt_get(r, (const char *)r->sql.data, &q)) != CP_OK) return st;
    sqlite3_bind_int64(q.st, 1, from);
    sqlite3_bind_int64(q.st, 2, to);
    if (sub->ns) sqlite3_bind_text(q.st, 3, sub->ns, -1, SQLITE_STATIC);
    if (sub->service) sqlite3_bind_text(q.st, 4, sub->service, -1, SQLITE_STATIC);
    if (sub->pod) sqlite3_bind_text(q.st, 5, sub->pod, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q.st, 6, sub->min_duration_ms);
    sqlite3_bind_int64(q.st, 7, sub->max_duration_ms);
    /* the budget is the filter's, over every scan of the stats */
    m->max_scan = sub->max_scan ? (sub->max_scan > k->info->scanned ? sub->max_scan - k->info->scanned : 1) : 0;
    m->scanned = 0;
    m->over = 0;
    if (use_fn) sqlite3_bind_pointer(q.st, 8, m, RD_MATCH_PTR, NULL);
    if (sub->ns_limited) sqlite3_bind_pointer(q.st, 9, (void *)sub, RD_NS_PTR, NULL);
    int rc;
    uint64_t rows = 0;
    while ((rc = sqlite3_step(q.st)) == SQLITE_ROW) {
        sqlite3_stmt *s = q.st;
        rows++;
        if (!use_fn && sub->max_scan && k->info->scanned + rows > sub->max_scan) {
            m->over = 1;
            break;
        }
        cp_call c;
        memset(&c, 0, sizeof c);
        c.ts_ms = sqlite3_column_int64(s, 0);
        c.duration_ms = sqlite3_column_int(s, 1);
        c.calls = sqlite3_column_int(s, 2);
        c.suspend_ms = sqlite3_column_int(s, 3);
        c.queue_wait_ms = sqlite3_column_int(s, 4);
        c.transactions = sqlite3_column_int64(s, 5);
        c.restart_ms = sqlite3_column_int64(s, 6);
        c.trace_file_index = sqlite3_column_int(s, 7);
        c.buffer_offset = sqlite3_column_int(s, 8);
        c.record_index = sqlite3_column_int(s, 9);
        c.ns = st_text(s, 10, &c.ns_len);
        c.pod = st_text(s, 11, &c.pod_len);
        cp_stats_add_call(k->acc, &c);
        k->info->scanned_calls++;
        if ((rows & 0xffff) == 0 && (st = cp_rd_stats_progress(k, use_fn ? m->scanned : rows)) != CP_OK) break;
    }
    k->info->scanned += use_fn ? m->scanned : rows;
    if (st == CP_OK && rc != SQLITE_DONE && rc != SQLITE_ROW && !m->over) st = rd_fail(r, "stats scan");
    if (m->over) k->info->partial = 1;
    stmt_put(r, &q, st == CP_OK);
    return st != CP_OK ? st : m->over ? 1 : 0;
}

static int rd_stats(cp_reader *base, const cp_call_filter *f, const cp_stats_plan *p, cp_stats *acc,
                    cp_stats_info *info)
{
    sqlite_reader *r = (sqlite_reader *)base;
    st_scan_state ss;
    memset(&ss, 0, sizeof ss);
    ss.r = r;
    ss.m.match = f->match;
    ss.m.ud = f->match_ud;
    if (f->method_substr) {
        size_t n = strlen(f->method_substr);
        if (cp_rd_fold_into(&r->needle, f->method_substr, n) != CP_OK) return rd_oom(r);
        ss.m.needle = (const char *)r->needle.data;
        ss.m.needle_len = n;
    }
    int st = txn_begin(r);
    if (st != CP_OK) return st;
    cp_rd_ctx x = ctx_of(r);
    cp_rd_stats k = {.x = &x, .f = f, .p = p, .acc = acc, .info = info, .scan = st_scan, .ud = &ss};
    st = cp_rd_stats_run(&k, r->rollups);
    txn_end(r);
    free(k.w);
    return st;
}

/* ---- open / close ----------------------------------------------------------------------------- */

static const char *rd_errmsg(const cp_reader *base) { return ((const sqlite_reader *)base)->err; }

static void rd_close(cp_reader *base)
{
    sqlite_reader *r = (sqlite_reader *)base;
    cp_sqldb_close(r->sqldb); /* its statements before the connection */
    sqlite3_close(r->db);
    cp_buf_free(&r->sql);
    cp_buf_free(&r->needle);
    free(r);
}

static const cp_reader_ops sqlite_reader_ops = {
    .search = rd_search_calls,
    .get = rd_get,
    .pods = rd_pods,
    .words = rd_words,
    .cold_files = rd_cold_files,
    .bounds = rd_bounds,
    .stats = rd_stats,
    .snapshot = rd_snapshot,
    .errmsg = rd_errmsg,
    .close = rd_close,
};

/* The catalog must have the hot tier's tables (migration 2, written by the writer). */
static int check_schema(sqlite_reader *r)
{
    sqlite3_stmt *q;
    if (sqlite3_prepare_v2(r->db, "SELECT coalesce(max(version), 0) FROM schema_migrations", -1, &q, NULL) !=
        SQLITE_OK)
        return rd_fail(r, "read schema version");
    int rc = sqlite3_step(q);
    int v = rc == SQLITE_ROW ? sqlite3_column_int(q, 0) : 0;
    sqlite3_finalize(q);
    if (rc != SQLITE_ROW) return rd_fail(r, "read schema version");
    if (v < 2) {
        snprintf(r->err, sizeof r->err, "catalog schema version %d has no hot tier (needs 2)", v);
        return CP_EINVAL;
    }
    r->cold = v >= 3;
    r->rollups = v >= 5;
    return CP_OK;
}

/* Read-only, WAL (the writer set it; readers never block it), a busy timeout for the
 * moments the WAL index is being rebuilt, 16 MiB of page cache, and cp_match(). */
static int configure(sqlite_reader *r)
{
    if (sqlite3_busy_timeout(r->db, 5000) != SQLITE_OK) return rd_fail(r, "busy timeout");
    if (sqlite3_exec(r->db, "PRAGMA cache_size = -16384", NULL, NULL, NULL) != SQLITE_OK)
        return rd_fail(r, "cache size");
    if (sqlite3_create_function_v2(r->db, "cp_match", 4, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL, fn_match, NULL,
                                   NULL, NULL) != SQLITE_OK)
        return rd_fail(r, "register cp_match");
    if (sqlite3_create_function_v2(r->db, "cp_ns_ok", 2, SQLITE_UTF8 | SQLITE_DIRECTONLY | SQLITE_DETERMINISTIC, NULL,
                                   fn_ns_ok, NULL, NULL, NULL) != SQLITE_OK)
        return rd_fail(r, "register cp_ns_ok");
    return check_schema(r);
}

int cp_reader_open_sqlite(const char *path, cp_reader **out, char *err, size_t errlen)
{
    *out = NULL;
    sqlite_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    r->base.ops = &sqlite_reader_ops;
    cp_buf_init(&r->sql);
    cp_buf_init(&r->needle);
    int st;
    if (sqlite3_open_v2(path, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        st = rd_fail(r, "open");
    else if (cp_sqldb_wrap_sqlite(r->db, &r->sqldb) != CP_OK)
        st = rd_oom(r);
    else
        st = configure(r);
    if (st != CP_OK) {
        snprintf(err, errlen, "catalog reader %s: %s", path, r->err);
        rd_close(&r->base);
        return st;
    }
    *out = &r->base;
    return CP_OK;
}
