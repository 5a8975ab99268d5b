/* reader_pg.c -- cp_reader on the PostgreSQL catalog (cp_hot.h), answering as
 * reader_sqlite.c does: same rows, same order, same paging and `more`. (Only the scan
 * statistics can differ: here `scanned` counts the rows the C filter looked at, after
 * the method substring was filtered by SQL, and which rows a spent max_scan budget
 * leaves out depends on the plan, in both readers.)
 *
 * Tables, names and columns are those of the SQLite catalog (catalog_sqlite.c) with
 * PostgreSQL types: bigint epoch-ms times and ids, text, bytea.
 *
 * Operations. Each runs in one REPEATABLE READ READ ONLY transaction, so every window
 * table is seen at one snapshot. A window table dropped by a concurrent compaction after
 * the snapshot was taken shows up as undefined_table (42P01) when it is first touched;
 * the operation then runs once more with a new snapshot (in which the window is
 * persisted and no longer listed). To make that possible before any row reached the
 * caller, a search (and get) first takes ACCESS SHARE locks on every window table it
 * listed: from then on no compaction can drop them until the transaction ends. A
 * deadlock with a compactor (40P01), a serialization failure (40001) or a lost
 * connection (reconnected first) is retried the same way.
 *
 * Search. One ordered query per window overlapping the range, merged with a heap in C,
 * as in reader_sqlite.c (time-sorted searches open windows lazily). What SQL can filter
 * is pushed down (range, names, duration bounds, errors, the method substring with ASCII
 * folding via translate()); the search's extra predicate (f->match, C code) cannot run
 * in PostgreSQL, so when there is one -- or a scan budget -- the window's rows come
 * through a server-side cursor in batches and are filtered here, each row counted
 * against max_scan. Without one, a window that needs at most PG_DIRECT_ROWS rows is one
 * prepared statement with LIMIT limit + 1; more rows go through a cursor too, so memory
 * stays bounded whatever the limit.
 *
 * Order (cp_sort_key): the sort column in its direction (text with COLLATE "C": bytes),
 * then time DESC, restart_time DESC, pod_hash DESC (signed bigint), trace_file_index
 * DESC, buffer_offset DESC, record_index DESC.
 *
 * Statements: prepared once per connection and cached (PG_CACHE, least recently used
 * dropped). Values are always bound parameters; table names come from `inventory` /
 * `inverted_indexes` and are checked (cp_hot_calls_name_ok, cp_cold_inv_name_ok) before
 * they are spliced into SQL text. Cursor declarations carry a per-search name and go
 * through PQexecParams (their query is planned at DECLARE time anyway).
 *
 * Written once for both readers, over sqldb.h on this connection (cp_sqldb_wrap_pg) and
 * run through run_op like the rest: cold files (cold_list.c), get, pods, words, bounds
 * and the table locks (lookups.c), and the stats' windows and rollup entries (hot_stats.c; the stats scan
 * is pgs_scan here).
 */
#include "query/cp_query.h"
#include "store/cp_hot.h"
#include "store/hot/hot_internal.h"
#include "store/read/reader_internal.h"
#include "store/cp_stats.h"
#include "store/sql/sqldb.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PG_CACHE 64
#define PG_MAX_WINDOWS CP_RD_MAX_WINDOWS
#define PG_MAX_LIMIT 100000
#define PG_DIRECT_ROWS 1000    /* a window needing at most this many rows is one statement */
#define PG_FETCH_MIN 64        /* rows per FETCH ... */
#define PG_FETCH_MAX 1000
#define PG_FETCH_BUDGET 50000  /* ... so that all open cursors hold about this many rows */
#define PG_MAX_PARAMS 24
#define PG_STMT_NAME 24

/* ASCII folding in SQL, as the search folds (lower() would fold non-ASCII letters too,
 * by the database's locale) */
#define PG_FOLD(x) "translate(" x ", 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')"

/* A prepared statement: its SQL text (the cache key) and server-side name. */
typedef struct pg_stmt {
    uint64_t hash;
    char *sql;
    char name[PG_STMT_NAME];
    uint64_t used;
} pg_stmt;

typedef struct pg_reader {
    cp_reader base; /* first: the interface pointer is the object pointer */
    PGconn *db;
    pg_stmt cache[PG_CACHE]; /* statements not in use */
    size_t ncache;
    uint64_t tick, serial;
    char (*dead)[PG_STMT_NAME]; /* statements to DEALLOCATE once the transaction is over */
    size_t ndead, dead_cap;
    int retry;                  /* the operation failed in a way a new snapshot may fix */
    int emitted;                /* the operation has handed something to the caller */
    int snap;                   /* inside pg_snapshot: operations join its transaction */
    cp_buf sql;                 /* scratch for SQL text */
    cp_buf tmp;                 /* scratch for a folded needle, a key, an id array */
    cp_buf nsarr;               /* the filter's namespace set as a text[] literal (ns_array) */
    cp_buf podarr;              /* the window's matching pods as a bigint[] literal (window_pods) */
    cp_buf conds;               /* a per-pod window query's conditions (sql_window) */
    cp_sqldb *sqldb;            /* db for the code both catalogs share (cold_list.c) */
    char err[256];
} pg_reader;

/* ---- errors --------------------------------------------------------------------------------- */

static int pg_oom(pg_reader *r)
{
    snprintf(r->err, sizeof r->err, "out of memory");
    return CP_ENOMEM;
}

/* Records a failed statement; flags the errors a retry with a new snapshot may cure. */
static int pg_fail(pg_reader *r, const char *what, const PGresult *res)
{
    const char *msg = res ? PQresultErrorMessage(res) : NULL;
    if (!msg || !*msg) msg = PQerrorMessage(r->db);
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (state && (!strcmp(state, "42P01") || !strcmp(state, "40P01") || !strcmp(state, "40001"))) r->retry = 1;
    snprintf(r->err, sizeof r->err, "%s: %s", what, msg);
    size_t n = strlen(r->err);
    while (n > 0 && (r->err[n - 1] == '\n' || r->err[n - 1] == ' ')) r->err[--n] = 0;
    return CP_EIO;
}

/* Runs a statement that returns no rows (BEGIN, LOCK, DECLARE, ...). */
static int pg_command(pg_reader *r, const char *sql, const char *what)
{
    PGresult *res = PQexec(r->db, sql);
    int st = PQresultStatus(res) == PGRES_COMMAND_OK ? CP_OK : pg_fail(r, what, res);
    PQclear(res);
    return st;
}

/* ---- bound parameters -------------------------------------------------------------------------- */

/* Numbers go as text, strings as binary text (explicit length, no NUL needed); the SQL
 * casts every parameter ($n::bigint, $n::text) so its type never depends on a column's. */
typedef struct pg_params {
    int n, over;
    const char *v[PG_MAX_PARAMS];
    int len[PG_MAX_PARAMS];
    int fmt[PG_MAX_PARAMS];
    char num[PG_MAX_PARAMS][24];
} pg_params;

static int par_i64(pg_params *p, int64_t v)
{
    if (p->n == PG_MAX_PARAMS) return p->over = 1;
    int i = p->n++;
    snprintf(p->num[i], sizeof p->num[i], "%lld", (long long)v);
    p->v[i] = p->num[i];
    p->len[i] = 0;
    p->fmt[i] = 0;
    return i + 1;
}

/* A NUL-terminated value sent in text format (for casts to types whose binary form is
 * not text's, like text[]). */
static int par_cstr(pg_params *p, const char *s)
{
    if (p->n == PG_MAX_PARAMS) return p->over = 1;
    int i = p->n++;
    p->v[i] = s;
    p->len[i] = 0;
    p->fmt[i] = 0;
    return i + 1;
}

static int par_text(pg_params *p, const char *s, size_t n)
{
    if (p->n == PG_MAX_PARAMS) return p->over = 1;
    int i = p->n++;
    p->v[i] = s;
    p->len[i] = (int)n;
    p->fmt[i] = 1;
    return i + 1;
}

/* Length of the longest prefix of s that PostgreSQL accepts as UTF-8 text (no NUL, no
 * overlong form, no surrogate, nothing above U+10FFFF). */
static size_t utf8_valid_len(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;
    while (i < n) {
        unsigned char c = p[i];
        size_t k;
        uint32_t cp;
        if (c == 0) break;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) k = 1, cp = c & 0x1f;
        else if (c >= 0xe0 && c <= 0xef) k = 2, cp = c & 0x0f;
        else if (c >= 0xf0 && c <= 0xf4) k = 3, cp = c & 0x07;
        else break;
        if (i + k >= n) break; /* truncated */
        size_t j;
        for (j = 1; j <= k; j++) {
            if ((p[i + j] & 0xc0) != 0x80) break;
            cp = (cp << 6) | (p[i + j] & 0x3f);
        }
        if (j <= k) break;
        if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp < 0xe000))
            break;
        i += k + 1;
    }
    return i;
}

static int utf8_ok(const char *s, size_t n) { return utf8_valid_len(s, n) == n; }
static int utf8_ok0(const char *s) { return !s || utf8_ok(s, strlen(s)); }

/* The filter's ns_limited set (issue 17) as a NUL-terminated text[] literal in r->nsarr:
 * {"a","b\"c"}. Names that are not UTF-8 are left out: no stored row has them. */
static int ns_array(pg_reader *r, const cp_call_filter *f)
{
    cp_buf *b = &r->nsarr;
    cp_buf_reset(b);
    int st = cp_buf_putc(b, '{');
    int first = 1;
    for (size_t i = 0; st == CP_OK && i < f->nns_in; i++) {
        const cp_name *n = &f->ns_in[i];
        if (!utf8_ok(n->p, n->len)) continue;
        if (!first) st = cp_buf_putc(b, ',');
        first = 0;
        if (st == CP_OK) st = cp_buf_putc(b, '"');
        for (size_t j = 0; st == CP_OK && j < n->len; j++) {
            char ch = n->p[j];
            if (ch == '"' || ch == '\\') st = cp_buf_putc(b, '\\');
            if (st == CP_OK) st = cp_buf_putc(b, (uint8_t)ch);
        }
        if (st == CP_OK) st = cp_buf_putc(b, '"');
    }
    if (st == CP_OK) st = cp_buf_putc(b, '}');
    if (st == CP_OK) st = cp_buf_putc(b, 0);
    return st;
}

/* ---- statement cache ------------------------------------------------------------------------ */

static uint64_t fnv64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return h;
}

static int dead_add(pg_reader *r, const char *name)
{
    if (r->ndead == r->dead_cap) {
        size_t cap = r->dead_cap ? r->dead_cap * 2 : 16;
        char(*v)[PG_STMT_NAME] = realloc(r->dead, cap * sizeof *v);
        if (!v) return CP_ENOMEM; /* the statement stays prepared: harmless */
        r->dead = v;
        r->dead_cap = cap;
    }
    snprintf(r->dead[r->ndead++], PG_STMT_NAME, "%s", name);
    return CP_OK;
}

/* DEALLOCATEs what was dropped from the cache, all in one round trip (outside any
 * transaction: a failed one accepts nothing but ROLLBACK). */
static void dead_flush(pg_reader *r)
{
    if (r->ndead && PQstatus(r->db) == CONNECTION_OK) {
        cp_buf_reset(&r->tmp);
        int st = CP_OK;
        for (size_t i = 0; st == CP_OK && i < r->ndead; i++) st = cp_buf_printf(&r->tmp, "DEALLOCATE %s;", r->dead[i]);
        if (st == CP_OK) st = cp_buf_putc(&r->tmp, 0);
        /* a statement that stays prepared is only a little server memory */
        if (st == CP_OK) PQclear(PQexec(r->db, (const char *)r->tmp.data));
    }
    r->ndead = 0;
}

/* Forgets every statement without telling the server (its session is gone). */
static void cache_forget(pg_reader *r)
{
    for (size_t i = 0; i < r->ncache; i++) free(r->cache[i].sql);
    r->ncache = 0;
    r->ndead = 0;
}

/* Takes the statement for sql out of the cache, or prepares it. */
static int stmt_get(pg_reader *r, const char *sql, pg_stmt *out)
{
    uint64_t h = fnv64(sql);
    for (size_t i = 0; i < r->ncache; i++) {
        if (r->cache[i].hash == h && !strcmp(r->cache[i].sql, sql)) {
            *out = r->cache[i];
            r->cache[i] = r->cache[--r->ncache];
            return CP_OK;
        }
    }
    memset(out, 0, sizeof *out);
    out->hash = h;
    out->sql = strdup(sql);
    if (!out->sql) return pg_oom(r);
    snprintf(out->name, sizeof out->name, "cp_rd_%llu", (unsigned long long)++r->serial);
    PGresult *res = PQprepare(r->db, out->name, sql, 0, NULL);
    int st = PQresultStatus(res) == PGRES_COMMAND_OK ? CP_OK : pg_fail(r, "prepare", res);
    PQclear(res);
    if (st != CP_OK) {
        free(out->sql);
        memset(out, 0, sizeof *out);
    }
    return st;
}

/* Gives a statement back: cached (the least recently used one is dropped when the cache
 * is full), or dropped if it failed (its table may be gone). */
static void stmt_put(pg_reader *r, pg_stmt *q, int ok)
{
    if (!q->sql) return;
    if (!ok) {
        dead_add(r, q->name);
        free(q->sql);
    } else {
        if (r->ncache == PG_CACHE) {
            size_t lru = 0;
            for (size_t i = 1; i < r->ncache; i++)
                if (r->cache[i].used < r->cache[lru].used) lru = i;
            dead_add(r, r->cache[lru].name);
            free(r->cache[lru].sql);
            r->cache[lru] = r->cache[--r->ncache];
        }
        q->used = ++r->tick;
        r->cache[r->ncache++] = *q;
    }
    memset(q, 0, sizeof *q);
}

/* Runs a prepared statement that returns rows; NULL on failure (r->err says why). */
static PGresult *stmt_run(pg_reader *r, const pg_stmt *q, const pg_params *p, int binary, const char *what)
{
    if (p->over) {
        snprintf(r->err, sizeof r->err, "%s: too many parameters", what);
        return NULL;
    }
    PGresult *res = PQexecPrepared(r->db, q->name, p->n, p->v, p->len, p->fmt, binary);
    if (PQresultStatus(res) == PGRES_TUPLES_OK) return res;
    pg_fail(r, what, res);
    PQclear(res);
    return NULL;
}

/* ---- transactions ------------------------------------------------------------------------------ */

/* A lost connection is re-established here (its prepared statements are gone with it). */
static int txn_begin(pg_reader *r)
{
    if (PQstatus(r->db) != CONNECTION_OK) {
        cache_forget(r);
        PQreset(r->db);
        if (PQstatus(r->db) != CONNECTION_OK) return pg_fail(r, "reconnect", NULL);
    }
    if (PQtransactionStatus(r->db) != PQTRANS_IDLE) pg_command(r, "ROLLBACK", "rollback");
    return pg_command(r, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", "begin");
}

static void txn_end(pg_reader *r)
{
    PGTransactionStatusType ts = PQtransactionStatus(r->db);
    if (ts == PQTRANS_INTRANS) pg_command(r, "COMMIT", "commit");
    else if (ts == PQTRANS_INERROR || ts == PQTRANS_ACTIVE) PQclear(PQexec(r->db, "ROLLBACK"));
    dead_flush(r);
}

/* Runs op in its own transaction; once more (with a new snapshot) when it failed on a
 * table dropped under it, a deadlock, or a lost connection (reconnecting), before
 * anything reached the caller. */
static int run_op(pg_reader *r, int (*op)(pg_reader *r, void *arg), void *arg)
{
    if (r->snap) { /* the snapshot's transaction: no retry here (it would be another snapshot) */
        r->retry = 0;
        r->emitted = 0;
        int st = op(r, arg);
        if (st < 0 && r->retry && !r->emitted) { /* the caller may begin a new snapshot and go again */
            snprintf(r->err, sizeof r->err, "a hot window was compacted under the query's snapshot");
            return CP_AGAIN;
        }
        return st;
    }
    int st;
    for (int attempt = 0;; attempt++) {
        r->retry = 0;
        r->emitted = 0;
        st = txn_begin(r);
        if (st == CP_OK) {
            st = op(r, arg);
            txn_end(r);
        }
        if (st >= CP_OK || r->emitted || attempt > 0) break;
        if (!r->retry && PQstatus(r->db) == CONNECTION_OK) break;
    }
    return st;
}

static int pg_snapshot(cp_reader *base, int begin)
{
    pg_reader *r = (pg_reader *)base;
    if (begin) {
        if (r->snap++ > 0) return CP_OK;
        int st = txn_begin(r);
        if (st != CP_OK) r->snap = 0;
        return st;
    }
    if (r->snap > 0 && --r->snap == 0) txn_end(r);
    return CP_OK;
}

/* The reader's context for the code both readers share (reader_internal.h). */
static cp_rd_ctx ctx_of(pg_reader *r) { return (cp_rd_ctx){r->sqldb, &r->emitted, &r->retry, r->err, sizeof r->err}; }

/* ---- rows -> cp_call -------------------------------------------------------------------------- */


/* An integer column in text form (a boolean as 0/1); 0 for NULL. */
static int64_t val_i64(const PGresult *res, int row, int col)
{
    if (PQgetisnull(res, row, col)) return 0;
    const char *s = PQgetvalue(res, row, col);
    if (s[0] == 't' && !s[1]) return 1;
    if (s[0] == 'f' && !s[1]) return 0;
    return strtoll(s, NULL, 10);
}

static const char *val_text(const PGresult *res, int row, int col, size_t *len)
{
    *len = (size_t)PQgetlength(res, row, col);
    return PQgetvalue(res, row, col); /* "" for NULL */
}

/* A text column, NULL for NULL. */
static const char *val_opt(const PGresult *res, int row, int col)
{
    return PQgetisnull(res, row, col) ? NULL : PQgetvalue(res, row, col);
}

/* Fills c from one row of a CP_RD_COLUMNS query; pointers are valid until the result is
 * cleared. */
static void row_to_call(const PGresult *res, int row, cp_call *c)
{
    memset(c, 0, sizeof *c);
    c->ts_ms = val_i64(res, row, CP_RDC_TIME);
    c->duration_ms = (int32_t)val_i64(res, row, CP_RDC_DURATION);
    c->cpu_time = val_i64(res, row, CP_RDC_CPU);
    c->wait_time = val_i64(res, row, CP_RDC_WAIT);
    c->memory_used = val_i64(res, row, CP_RDC_MEMORY);
    c->non_blocking = val_i64(res, row, CP_RDC_NONBLOCKING);
    c->queue_wait_ms = (int32_t)val_i64(res, row, CP_RDC_QUEUE);
    c->suspend_ms = (int32_t)val_i64(res, row, CP_RDC_SUSPEND);
    c->calls = (int32_t)val_i64(res, row, CP_RDC_CALLS);
    c->transactions = val_i64(res, row, CP_RDC_TRANSACTIONS);
    c->logs_generated = (int32_t)val_i64(res, row, CP_RDC_LOGS_GENERATED);
    c->logs_written = (int32_t)val_i64(res, row, CP_RDC_LOGS_WRITTEN);
    c->file_read = val_i64(res, row, CP_RDC_FILE_READ);
    c->file_written = val_i64(res, row, CP_RDC_FILE_WRITTEN);
    c->net_read = val_i64(res, row, CP_RDC_NET_READ);
    c->net_written = val_i64(res, row, CP_RDC_NET_WRITTEN);
    c->ns = val_text(res, row, CP_RDC_NS, &c->ns_len);
    c->service = val_text(res, row, CP_RDC_SERVICE, &c->service_len);
    c->pod = val_text(res, row, CP_RDC_POD, &c->pod_len);
    c->restart_ms = val_i64(res, row, CP_RDC_RESTART);
    c->method_id = (int32_t)val_i64(res, row, CP_RDC_METHOD_ID);
    c->method = val_text(res, row, CP_RDC_METHOD, &c->method_len);
    c->thread = val_text(res, row, CP_RDC_THREAD, &c->thread_len);
    c->params_json = val_text(res, row, CP_RDC_PARAMS, &c->params_json_len);
    c->error = val_i64(res, row, CP_RDC_ERROR) != 0;
    c->sql = val_i64(res, row, CP_RDC_HAS_SQL) != 0;
    c->trace_file_index = (int32_t)val_i64(res, row, CP_RDC_TFI);
    c->buffer_offset = (int32_t)val_i64(res, row, CP_RDC_BO);
    c->record_index = (int32_t)val_i64(res, row, CP_RDC_RI);
    c->trace_reason = val_opt(res, row, CP_RDC_TRACE_REASON); /* NULL when it has a trace */
}

/* ---- search: one cursor per window ------------------------------------------------------------ */

typedef struct pg_cursor {
    char name[CP_HOT_NAME_LEN]; /* calls_YYYYMMDD_HHMM[_n] */
    int64_t start, end, rows;   /* from inventory */
    int done;                   /* no more rows to fetch (one result, or the cursor cp_c<index> ran out) */
    PGresult *res;              /* the current batch */
    int nrows, row;
    int fetch;                  /* rows of the next FETCH */
    int has_row;
    cp_rowkey key;              /* the current row's position in the order */
} pg_cursor;

typedef struct pg_search {
    pg_reader *r;
    const cp_call_filter *f;
    int64_t from, to;           /* the range, narrowed by a time keyset */
    int text;                   /* the sort column is text */
    int use_c;                  /* rows are filtered here (match, a needle SQL cannot take, max_scan) */
    const char *needle;         /* folded method substring ... */
    size_t needle_len;
    int needle_in_sql;          /* ... filtered by the query (valid UTF-8) or here */
    const char *key_text;       /* the keyset's text, cut to valid UTF-8 */
    size_t key_text_len;
    uint64_t scanned, max_scan;
    int over;                   /* max_scan reached: nothing more is read */
    pg_cursor *cur;
    size_t ncur, opened;        /* windows listed; windows opened (in list order) */
    cp_idxheap heap;            /* cursor indexes, best row first */
    uint64_t fetched;           /* rows taken from the cursors (after filtering) */
    int fetch_max;
    cp_search_stats *stats;
    cp_call_fn fn;
    void *ud;
} pg_search;

/* The heap's order: 1 if cursor a's row comes before cursor b's. */
static int cur_less(void *ud, size_t a, size_t b)
{
    const pg_search *s = ud;
    return cp_rowkey_cmp(&s->cur[a].key, &s->cur[b].key, s->text, s->f->desc) < 0;
}


/* The C side of the filter for the cursor's current row (counted against max_scan). 1
 * keep, 0 drop, -1 the budget is spent. */
static int row_filter(pg_search *s, const pg_cursor *c)
{
    if (s->max_scan && s->scanned >= s->max_scan) return -1;
    s->scanned++;
    cp_call_view v;
    v.method = val_text(c->res, c->row, CP_RDC_METHOD, &v.method_len);
    if (s->needle && !s->needle_in_sql && !cp_ci_contains(v.method, v.method_len, s->needle, s->needle_len)) return 0;
    if (!s->f->match) return 1;
    v.pod = val_text(c->res, c->row, CP_RDC_POD, &v.pod_len);
    v.params_json = val_text(c->res, c->row, CP_RDC_PARAMS, &v.params_json_len);
    return s->f->match(s->f->match_ud, &v) ? 1 : 0;
}

/* The next batch of a server-side cursor. */
static int cur_fetch(pg_search *s, pg_cursor *c)
{
    char sql[64];
    snprintf(sql, sizeof sql, "FETCH %d FROM cp_c%zu", c->fetch, (size_t)(c - s->cur));
    PGresult *res = PQexec(s->r->db, sql);
    if (PQresultStatus(res) != PGRES_TUPLES_OK) {
        int st = pg_fail(s->r, "fetch", res);
        PQclear(res);
        return st;
    }
    c->res = res;
    c->nrows = PQntuples(res);
    c->row = 0;
    if (c->nrows < c->fetch) c->done = 1;
    if (c->fetch < s->fetch_max) c->fetch = c->fetch * 2 < s->fetch_max ? c->fetch * 2 : s->fetch_max;
    return CP_OK;
}

/* Moves a cursor to its next row that passes the C filter and reads the row's key. A
 * spent scan budget ends the cursor (the search becomes partial). */
static int cur_step(pg_search *s, pg_cursor *c)
{
    c->has_row = 0;
    for (;;) {
        if (c->res && c->row + 1 < c->nrows) {
            c->row++;
        } else {
            PQclear(c->res);
            c->res = NULL;
            c->nrows = c->row = 0;
            if (c->done || s->over) return CP_OK;
            int st = cur_fetch(s, c);
            if (st != CP_OK) return st;
            if (c->nrows == 0) continue;
        }
        if (s->use_c) {
            int keep = row_filter(s, c);
            if (keep < 0) {
                s->over = 1;
                PQclear(c->res);
                c->res = NULL;
                c->nrows = c->row = 0;
                return CP_OK;
            }
            if (!keep) continue;
        }
        break;
    }
    s->fetched++;
    const PGresult *res = c->res;
    int row = c->row, col = cp_rd_sort_cols[s->f->sort].col;
    if (s->text) c->key.text = val_text(res, row, col, &c->key.text_len);
    else c->key.num = val_i64(res, row, col);
    c->key.time = val_i64(res, row, CP_RDC_TIME);
    c->key.restart = val_i64(res, row, CP_RDC_RESTART);
    c->key.pod_hash = val_i64(res, row, CP_RDC_POD_HASH);
    c->key.tfi = val_i64(res, row, CP_RDC_TFI);
    c->key.bo = val_i64(res, row, CP_RDC_BO);
    c->key.ri = val_i64(res, row, CP_RDC_RI);
    c->has_row = 1;
    return CP_OK;
}

/* The sort column's SQL expression; text compares bytewise (COLLATE "C"). */
static const char *sort_expr(const cp_call_filter *f, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s%s", cp_rd_sort_cols[f->sort].expr, cp_sort_is_text(f->sort) ? " COLLATE \"C\"" : "");
    return buf;
}

/* The keyset predicate: rows strictly after f->after (see reader_sqlite.c). */
static int sql_keyset(const pg_search *s, cp_buf *b, pg_params *p)
{
    const cp_call_filter *f = s->f;
    const cp_sort_key *k = f->after;
    char colbuf[64];
    const char *col = sort_expr(f, colbuf, sizeof colbuf);
    int kv = 0;
    if (f->sort != CP_SORT_TS)
        kv = s->text ? par_text(p, s->key_text, s->key_text_len) : par_i64(p, k->num);
    int t = par_i64(p, k->ref.ts_ms), rs = par_i64(p, k->ref.restart_ms), h = par_i64(p, (int64_t)k->ref.pod_hash);
    int fi = par_i64(p, k->ref.trace_file_index), bo = par_i64(p, k->ref.buffer_offset);
    int ri = par_i64(p, k->ref.record_index);
    const char *ty = s->text ? "text" : "bigint";
    char ref[256], tref[320];
    snprintf(ref, sizeof ref,
             "(restart_time, pod_hash, trace_file_index, buffer_offset, record_index)"
             " < ($%d::bigint, $%d::bigint, $%d::bigint, $%d::bigint, $%d::bigint)",
             rs, h, fi, bo, ri);
    snprintf(tref, sizeof tref,
             "(time, restart_time, pod_hash, trace_file_index, buffer_offset, record_index)"
             " < ($%d::bigint, $%d::bigint, $%d::bigint, $%d::bigint, $%d::bigint, $%d::bigint)",
             t, rs, h, fi, bo, ri);
    if (f->sort == CP_SORT_TS && f->desc) return cp_buf_printf(b, " AND time <= $%d::bigint AND %s", t, tref);
    if (f->sort == CP_SORT_TS)
        return cp_buf_printf(b, " AND time >= $%d::bigint AND (time > $%d::bigint OR (time = $%d::bigint AND %s))", t,
                             t, t, ref);
    if (f->desc)
        return cp_buf_printf(b,
                             " AND %s <= $%d::%s AND (%s, time, restart_time, pod_hash, trace_file_index,"
                             " buffer_offset, record_index) < ($%d::%s, $%d::bigint, $%d::bigint, $%d::bigint,"
                             " $%d::bigint, $%d::bigint, $%d::bigint)",
                             col, kv, ty, col, kv, ty, t, rs, h, fi, bo, ri);
    return cp_buf_printf(b, " AND %s >= $%d::%s AND (%s > $%d::%s OR (%s = $%d::%s AND %s))", col, kv, ty, col, kv,
                         ty, col, kv, ty, tref);
}

/* The ORDER BY of a window query (cp_sort_key's order). */
static int sql_order(cp_buf *b, const cp_call_filter *f)
{
    const char *dir = f->desc ? "DESC" : "ASC";
    char col[64];
    int st = f->sort == CP_SORT_TS ? cp_buf_printf(b, " ORDER BY time %s", dir)
                                   : cp_buf_printf(b, " ORDER BY %s %s, time DESC", sort_expr(f, col, sizeof col), dir);
    if (st == CP_OK)
        st = cp_buf_puts(b, ", restart_time DESC, pod_hash DESC, trace_file_index DESC, buffer_offset DESC,"
                            " record_index DESC");
    return st;
}

/* The conditions after a window query's first one (the filter's, the keyset's). */
static int sql_conds(const pg_search *s, const pg_cursor *c, cp_buf *b, pg_params *p)
{
    const cp_call_filter *f = s->f;
    int partial = s->from > c->start || s->to < c->end;
    int st = CP_OK;
    if (st == CP_OK && partial)
        st = cp_buf_printf(b, " AND time >= $%d::bigint AND time < $%d::bigint", par_i64(p, s->from),
                           par_i64(p, s->to));
    if (st == CP_OK && f->ns) st = cp_buf_printf(b, " AND namespace = $%d::text", par_text(p, f->ns, strlen(f->ns)));
    if (st == CP_OK && f->ns_limited && (st = ns_array(s->r, f)) == CP_OK)
        st = cp_buf_printf(b, " AND namespace = ANY($%d::text[])", par_cstr(p, (const char *)s->r->nsarr.data));
    if (st == CP_OK && f->service)
        st = cp_buf_printf(b, " AND service_name = $%d::text", par_text(p, f->service, strlen(f->service)));
    if (st == CP_OK && f->pod) st = cp_buf_printf(b, " AND pod_name = $%d::text", par_text(p, f->pod, strlen(f->pod)));
    if (st == CP_OK && f->min_duration_ms > 0)
        st = cp_buf_printf(b, " AND duration >= $%d::bigint", par_i64(p, f->min_duration_ms));
    if (st == CP_OK && f->max_duration_ms < INT64_MAX)
        st = cp_buf_printf(b, " AND duration <= $%d::bigint", par_i64(p, f->max_duration_ms));
    if (st == CP_OK && f->errors_only) st = cp_buf_puts(b, " AND error::int <> 0");
    if (st == CP_OK && s->needle && s->needle_in_sql)
        st = cp_buf_printf(b, " AND strpos(" PG_FOLD("method_name") ", $%d::text) > 0",
                           par_text(p, s->needle, s->needle_len));
    if (st == CP_OK && f->after) st = sql_keyset(s, b, p);
    return st;
}

/* The query of one window; need = the LIMIT (0 = none). npods > 0: walked per pod of
 * r->podarr (window_pods), one ordered walk of the pod index per pod (the same
 * parameters in every arm, the pod's hash an element of one array parameter), merged by
 * the outer ORDER BY (PostgreSQL's Merge Append: nothing is sorted whole). */
static int sql_window(const pg_search *s, const pg_cursor *c, uint64_t need, size_t npods, cp_buf *b, pg_params *p)
{
    cp_buf_reset(b);
    memset(p, 0, sizeof *p);
    if (!npods) {
        int st = cp_buf_printf(b, "SELECT " CP_RD_COLUMNS " FROM %s WHERE TRUE", c->name);
        if (st == CP_OK) st = sql_conds(s, c, b, p);
        if (st == CP_OK) st = sql_order(b, s->f);
        if (st == CP_OK && need) st = cp_buf_printf(b, " LIMIT $%d::bigint", par_i64(p, (int64_t)need));
        if (st == CP_OK) st = cp_buf_putc(b, 0);
        return st;
    }
    int arr = par_cstr(p, (const char *)s->r->podarr.data);
    cp_buf *conds = &s->r->conds;
    cp_buf_reset(conds);
    int st = sql_conds(s, c, conds, p);
    if (st == CP_OK) st = sql_order(conds, s->f);
    int lim = need ? par_i64(p, (int64_t)need) : 0;
    if (st == CP_OK && need) st = cp_buf_printf(conds, " LIMIT $%d::bigint", lim);
    for (size_t i = 0; st == CP_OK && i < npods; i++) {
        if (npods > 1) st = cp_buf_puts(b, i ? " UNION ALL (" : "(");
        if (st == CP_OK)
            st = cp_buf_printf(b, "SELECT " CP_RD_COLUMNS " FROM %s WHERE pod_hash = ($%d::bigint[])[%zu]", c->name,
                               arr, i + 1);
        if (st == CP_OK) st = cp_buf_append(b, conds->data, conds->len);
        if (st == CP_OK && npods > 1) st = cp_buf_putc(b, ')');
    }
    if (st == CP_OK && npods > 1) st = sql_order(b, s->f);
    if (st == CP_OK && npods > 1 && need) st = cp_buf_printf(b, " LIMIT $%d::bigint", lim);
    if (st == CP_OK) st = cp_buf_putc(b, 0);
    return st;
}

/* A time-sorted page filtered by namespace or pod reads a window per pod (see
 * reader_sqlite.c's window_pods): *by_pod = 1 and r->podarr = the matching pods'
 * hashes when the query has a LIMIT (need), call_counts lists the window's pods and at
 * most CP_RD_MAX_POD_ARMS match; *none = 1 when it lists pods and none matches. Rows the C
 * side filters (use_c) come from the pods' walks as well: they are the rows the SQL
 * filter on namespace / pod would have let through. */
static int window_pods(pg_search *s, const pg_cursor *c, uint64_t need, size_t *npods, int *none)
{
    pg_reader *r = s->r;
    const cp_call_filter *f = s->f;
    *npods = 0;
    *none = 0;
    /* need = 0 (no LIMIT): each pod's rows would be sorted whole before the first comes */
    if (!cp_rd_walks_pods(f) || !need) return CP_OK;
    pg_params p;
    memset(&p, 0, sizeof p);
    int w = par_i64(&p, c->start);
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT DISTINCT namespace, pod_name FROM call_counts WHERE window_start = $%d::bigint",
             w);
    pg_stmt q;
    int st = stmt_get(r, sql, &q);
    if (st != CP_OK) return st;
    PGresult *res = stmt_run(r, &q, &p, 0, "window pods");
    stmt_put(r, &q, res != NULL);
    if (!res) return CP_EIO;
    int rows = PQntuples(res);
    size_t n = 0;
    cp_buf *b = &r->podarr;
    cp_buf_reset(b);
    st = cp_buf_putc(b, '{');
    for (int i = 0; st == CP_OK && i < rows && n <= CP_RD_MAX_POD_ARMS; i++) {
        int64_t h;
        if (!cp_rd_pod_taken(f, PQgetvalue(res, i, 0), (size_t)PQgetlength(res, i, 0), PQgetvalue(res, i, 1),
                             (size_t)PQgetlength(res, i, 1), &h))
            continue;
        st = cp_buf_printf(b, "%s%lld", n++ ? "," : "", (long long)h); /* DISTINCT: each pod once */
    }
    PQclear(res);
    if (st == CP_OK) st = cp_buf_putc(b, '}');
    if (st == CP_OK) st = cp_buf_putc(b, 0);
    if (st != CP_OK) return pg_oom(r);
    if (!rows || n > CP_RD_MAX_POD_ARMS) return CP_OK;
    *npods = n;
    *none = n == 0;
    return CP_OK;
}

/* Starts the query of the next listed window and puts its first row in the heap. */
static int cur_open(pg_search *s)
{
    pg_reader *r = s->r;
    size_t idx = s->opened++;
    pg_cursor *c = &s->cur[idx];
    if (s->over) return CP_OK; /* the budget is spent: nothing more is read */
    /* rows this window may have to give: limit + 1 matches, or (filtering here) one more
     * than the whole budget, which tells a spent budget from an exhausted window */
    uint64_t need = s->use_c ? (s->max_scan && s->max_scan < INT64_MAX ? s->max_scan + 1 : 0)
                             : (uint64_t)s->f->limit + 1;
    size_t npods;
    int none, st0 = window_pods(s, c, need, &npods, &none);
    if (st0 != CP_OK || none) return st0;
    pg_params p;
    if (sql_window(s, c, need, npods, &r->sql, &p) != CP_OK) return pg_oom(r);
    if (!s->use_c && need <= PG_DIRECT_ROWS) {
        pg_stmt q;
        int st = stmt_get(r, (const char *)r->sql.data, &q);
        if (st != CP_OK) return st;
        c->res = stmt_run(r, &q, &p, 0, "window query");
        stmt_put(r, &q, c->res != NULL);
        if (!c->res) return CP_EIO;
        c->nrows = PQntuples(c->res);
        c->row = -1;
        c->done = 1;
    } else {
        cp_buf_reset(&r->tmp);
        if (cp_buf_printf(&r->tmp, "DECLARE cp_c%zu NO SCROLL CURSOR FOR %s", idx, (const char *)r->sql.data) !=
            CP_OK ||
            cp_buf_putc(&r->tmp, 0) != CP_OK)
            return pg_oom(r);
        if (p.over) {
            snprintf(r->err, sizeof r->err, "window query: too many parameters");
            return CP_EINVAL;
        }
        PGresult *res = PQexecParams(r->db, (const char *)r->tmp.data, p.n, NULL, p.v, p.len, p.fmt, 0);
        int st = PQresultStatus(res) == PGRES_COMMAND_OK ? CP_OK : pg_fail(r, "declare", res);
        PQclear(res);
        if (st != CP_OK) return st;
        uint64_t first = s->use_c ? (uint64_t)s->f->limit + 1 : need;
        if (first < PG_FETCH_MIN) first = PG_FETCH_MIN;
        if (first > (uint64_t)s->fetch_max) first = (uint64_t)s->fetch_max;
        c->fetch = (int)first;
    }
    int st = cur_step(s, c);
    if (st == CP_OK && c->has_row) cp_idxheap_push(&s->heap, idx);
    return st;
}

/* Time order: the next window (listed in time order) can only hold rows that come before
 * the best row so far when its time span reaches that row's time. */
static int cur_open_due(pg_search *s)
{
    while (s->opened < s->ncur) {
        const pg_cursor *next = &s->cur[s->opened];
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
 * search needs them, and locks their tables. */
static int list_windows(pg_search *s)
{
    pg_reader *r = s->r;
    int asc = s->f->sort == CP_SORT_TS && !s->f->desc;
    pg_stmt q;
    int st = stmt_get(r,
                      asc ? "SELECT table_name, start_time, end_time, rows_count FROM inventory"
                            " WHERE table_type = 'calls' AND status IN ('ready', 'persisting') AND rows_count > 0"
                            " AND start_time < $2::bigint AND end_time > $1::bigint"
                            " ORDER BY start_time ASC, table_name COLLATE \"C\""
                          : "SELECT table_name, start_time, end_time, rows_count FROM inventory"
                            " WHERE table_type = 'calls' AND status IN ('ready', 'persisting') AND rows_count > 0"
                            " AND start_time < $2::bigint AND end_time > $1::bigint"
                            " ORDER BY end_time DESC, table_name COLLATE \"C\"",
                      &q);
    if (st != CP_OK) return st;
    pg_params p = {0};
    par_i64(&p, s->from);
    par_i64(&p, s->to);
    PGresult *res = stmt_run(r, &q, &p, 0, "list windows");
    stmt_put(r, &q, res != NULL);
    if (!res) return CP_EIO;
    int n = PQntuples(res);
    s->cur = calloc((size_t)n + 1, sizeof *s->cur);
    s->heap.v = calloc((size_t)n + 1, sizeof *s->heap.v);
    if (!s->cur || !s->heap.v) st = pg_oom(r);
    for (int i = 0; st == CP_OK && i < n; i++) {
        const char *name = PQgetvalue(res, i, 0);
        if (!cp_hot_calls_name_ok(name)) continue; /* not ours: never spliced into SQL */
        if (s->ncur == PG_MAX_WINDOWS) {
            snprintf(r->err, sizeof r->err, "the time range spans more than %d windows", PG_MAX_WINDOWS);
            st = CP_ELIMIT;
            break;
        }
        pg_cursor *c = &s->cur[s->ncur++];
        snprintf(c->name, sizeof c->name, "%s", name);
        c->start = val_i64(res, i, 1);
        c->end = val_i64(res, i, 2);
        c->rows = val_i64(res, i, 3);
    }
    PQclear(res);
    if (st != CP_OK || s->ncur == 0) return st;
    cp_rd_ctx x = ctx_of(r);
    st = cp_rd_lock_tables(&x, s->cur, s->ncur, sizeof *s->cur); /* a cursor starts with its name */
    size_t per = PG_FETCH_BUDGET / s->ncur;
    s->fetch_max = per < PG_FETCH_MIN ? PG_FETCH_MIN : per > PG_FETCH_MAX ? PG_FETCH_MAX : (int)per;
    return st;
}

/* The k-way merge: hands over rows best first until limit, then looks for one more. */
static int search_merge(pg_search *s)
{
    int lazy = s->f->sort == CP_SORT_TS;
    int st = CP_OK;
    while (!lazy && st == CP_OK && s->opened < s->ncur) st = cur_open(s);
    size_t emitted = 0;
    while (st == CP_OK) {
        if (lazy && (st = cur_open_due(s)) != CP_OK) break;
        if (!s->heap.n) break;
        if (emitted == s->f->limit) {
            s->stats->more = 1;
            break;
        }
        pg_cursor *c = &s->cur[cp_idxheap_top(&s->heap)];
        cp_call call;
        row_to_call(c->res, c->row, &call);
        s->r->emitted = 1;
        int u = s->fn(s->ud, &call);
        if (u) return u;
        emitted++;
        st = cur_step(s, c);
        if (st != CP_OK) break;
        if (c->has_row) cp_idxheap_down(&s->heap, 0);
        else cp_idxheap_pop(&s->heap);
    }
    return st;
}

static void search_free(pg_search *s)
{
    for (size_t i = 0; i < s->ncur; i++) PQclear(s->cur[i].res);
    free(s->cur);
    free(s->heap.v);
    s->cur = NULL;
    s->heap.v = NULL;
    s->ncur = s->opened = s->heap.n = 0;
}

/* One attempt: list and lock the windows, merge. */
static int search_op(pg_reader *r, void *arg)
{
    pg_search *s = arg;
    search_free(s);
    s->scanned = s->fetched = 0;
    s->over = 0;
    memset(s->stats, 0, sizeof *s->stats);
    int st = list_windows(s);
    if (st == CP_OK) st = search_merge(s);
    s->stats->windows = s->opened;
    s->stats->scanned = s->use_c ? s->scanned : s->fetched;
    if (s->over) s->stats->partial = s->stats->more = 1;
    search_free(s);
    (void)r;
    return st;
}

/* Checks the filter and derives the search's range (a time keyset narrows it). *empty
 * when nothing can match. */
static int search_setup(pg_search *s, const cp_call_filter *f, int *empty)
{
    pg_reader *r = s->r;
    if ((unsigned)f->sort >= CP_SORT_COUNT || f->limit > PG_MAX_LIMIT) {
        snprintf(r->err, sizeof r->err, "bad search: sort column %d, limit %zu (at most %d)", (int)f->sort,
                 f->limit, PG_MAX_LIMIT);
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
    /* names that are not UTF-8 match no stored row (and PostgreSQL would refuse them) */
    *empty = s->from >= s->to || !utf8_ok0(f->ns) || !utf8_ok0(f->service) || !utf8_ok0(f->pod) ||
             (f->ns_limited && f->nns_in == 0);
    s->max_scan = f->max_scan;
    if (f->method_substr) {
        if (cp_rd_fold_into(&r->tmp, f->method_substr, strlen(f->method_substr)) != CP_OK) return pg_oom(r);
        s->needle_len = r->tmp.len;
        char *nd = malloc(s->needle_len + 1);
        if (!nd) return pg_oom(r);
        memcpy(nd, r->tmp.data, s->needle_len + 1);
        s->needle = nd;
        s->needle_in_sql = utf8_ok(nd, s->needle_len);
    }
    if (f->after && s->text) {
        const cp_sort_key *k = f->after;
        size_t tl = k->text_len < sizeof k->text ? k->text_len : sizeof k->text - 1;
        s->key_text = k->text;
        s->key_text_len = utf8_valid_len(k->text, tl); /* a cut key may end inside a character */
    }
    s->use_c = f->match || f->max_scan || (s->needle && !s->needle_in_sql);
    return CP_OK;
}

static int pg_search_calls(cp_reader *base, const cp_call_filter *f, cp_call_fn fn, void *ud,
                           cp_search_stats *stats)
{
    pg_reader *r = (pg_reader *)base;
    cp_search_stats dummy;
    if (!stats) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    pg_search s;
    memset(&s, 0, sizeof s);
    s.r = r;
    s.stats = stats;
    s.fn = fn;
    s.ud = ud;
    s.heap.less = cur_less;
    s.heap.ud = &s;
    int empty = 0;
    int st = search_setup(&s, f, &empty);
    if (st == CP_OK && !empty) st = run_op(r, search_op, &s);
    free((char *)s.needle);
    return st;
}

/* ---- get, pods, words, bounds (lookups.c), cold files (cold_list.c) ---------------------------- *
 *
 * Each runs through run_op: its own snapshot (or the caller's), once more with a new one
 * when a window was dropped under it before anything reached the caller. */

typedef struct pg_shared {
    int (*op)(const cp_rd_ctx *x, void *arg);
    void *arg;
} pg_shared;

static int shared_op(pg_reader *r, void *arg)
{
    pg_shared *a = arg;
    cp_rd_ctx x = ctx_of(r);
    return a->op(&x, a->arg);
}

static int run_shared(pg_reader *r, int (*op)(const cp_rd_ctx *x, void *arg), void *arg)
{
    pg_shared a = {op, arg};
    return run_op(r, shared_op, &a);
}

typedef struct pg_get {
    const cp_call_ref *ref;
    int with_trace;
    cp_call_fn fn;
    void *ud;
} pg_get;

static int get_op(const cp_rd_ctx *x, void *arg)
{
    pg_get *g = arg;
    return cp_rd_get(x, g->ref, g->with_trace, g->fn, g->ud);
}

static int pg_get_call(cp_reader *base, const cp_call_ref *ref, int with_trace, cp_call_fn fn, void *ud)
{
    pg_get g = {ref, with_trace, fn, ud};
    return run_shared((pg_reader *)base, get_op, &g);
}

typedef struct pg_pods {
    int64_t from, to;
    cp_pod_fn fn;
    void *ud;
} pg_pods;

static int pods_op(const cp_rd_ctx *x, void *arg)
{
    pg_pods *a = arg;
    return cp_rd_pods(x, a->from, a->to, a->fn, a->ud);
}

static int pg_pods_list(cp_reader *base, int64_t from_ms, int64_t to_ms, cp_pod_fn fn, void *ud)
{
    pg_pods a = {from_ms, to_ms, fn, ud};
    return run_shared((pg_reader *)base, pods_op, &a);
}

typedef struct pg_words {
    const char *ns, *pod;
    int64_t restart_ms;
    const int32_t *ids;
    size_t n;
    int (*fn)(void *ud, int32_t id, const char *text, size_t len);
    void *ud;
} pg_words;

static int words_op(const cp_rd_ctx *x, void *arg)
{
    pg_words *a = arg;
    return cp_rd_words(x, a->ns, a->pod, a->restart_ms, a->ids, a->n, a->fn, a->ud);
}

static int pg_words_get(cp_reader *base, const char *ns, const char *pod, int64_t restart_ms, const int32_t *ids,
                        size_t n, int (*fn)(void *ud, int32_t id, const char *text, size_t len), void *ud)
{
    if (n == 0) return CP_OK;
    pg_words a = {ns, pod, restart_ms, ids, n, fn, ud};
    return run_shared((pg_reader *)base, words_op, &a);
}

typedef struct pg_bounds {
    int64_t lo, hi;
} pg_bounds;

static int bounds_op(const cp_rd_ctx *x, void *arg)
{
    pg_bounds *b = arg;
    return cp_rd_bounds(x, 1, &b->lo, &b->hi);
}

static int pg_bounds_get(cp_reader *base, int64_t *min_ts, int64_t *max_ts)
{
    pg_bounds b = {0, 0};
    int st = run_shared((pg_reader *)base, bounds_op, &b);
    *min_ts = st == CP_OK ? b.lo : 0;
    *max_ts = st == CP_OK ? b.hi : 0;
    return st;
}

typedef struct pg_cold {
    const cp_cold_query *q;
    cp_cold_file_fn fn;
    void *ud;
    size_t skipped;
} pg_cold;

static int cold_op(const cp_rd_ctx *x, void *arg)
{
    pg_cold *a = arg;
    return cp_rd_cold_list(x, a->q, 1, a->fn, a->ud, &a->skipped);
}

static int pg_cold_files(cp_reader *base, const cp_cold_query *q, cp_cold_file_fn fn, void *ud, size_t *skipped)
{
    pg_cold a = {q, fn, ud, 0};
    int st = run_shared((pg_reader *)base, cold_op, &a);
    if (skipped) *skipped = a.skipped;
    return st;
}

/* ---- stats (cp_stats.h) ------------------------------------------------------------------------
 *
 * As reader_sqlite.c: the windows of the range (their tables locked, as a search locks
 * them), the entries of hot_rollups in [a, b) of the windows that keep rollups, and
 * per window the scans cp_stats_scans asks for, through a cursor in batches, the
 * filters SQL can apply pushed down and the others applied here. */

#define PG_STATS_FETCH 10000

/* The scan's state. */
typedef struct pgs_state {
    pg_reader *r;
    cp_buf needle; /* the folded method substring */
} pgs_state;

/* One scan of the current window through a cursor. 1 when the budget ran out. */
static int pgs_scan(cp_rd_stats *k, const cp_call_filter *sub)
{
    pgs_state *ps = k->ud;
    pg_reader *r = ps->r;
    const cp_rd_window *w = k->cur;
    int64_t from = sub->from_ms > w->start ? sub->from_ms : w->start;
    int64_t to = sub->to_ms < w->end ? sub->to_ms : w->end;
    if (from >= to || sub->min_duration_ms > sub->max_duration_ms) return 0;
    int in_c = sub->match || sub->method_substr;
    pg_params p = {0};
    cp_buf_reset(&r->sql);
    int st = cp_buf_printf(&r->sql,
                           "SELECT time, duration, calls, suspend_duration, queue_wait_duration, transactions,"
                           " restart_time, trace_file_index, buffer_offset, record_index, namespace, pod_name%s"
                           " FROM %s WHERE time >= $%d::bigint AND time < $%d::bigint",
                           in_c ? ", method_name, params" : "", w->name, par_i64(&p, from), par_i64(&p, to));
    if (st == CP_OK && sub->ns) st = cp_buf_printf(&r->sql, " AND namespace = $%d::text", par_text(&p, sub->ns, strlen(sub->ns)));
    if (st == CP_OK && sub->ns_limited && (st = ns_array(r, sub)) == CP_OK)
        st = cp_buf_printf(&r->sql, " AND namespace = ANY($%d::text[])", par_cstr(&p, (const char *)r->nsarr.data));
    if (st == CP_OK && sub->service)
        st = cp_buf_printf(&r->sql, " AND service_name = $%d::text", par_text(&p, sub->service, strlen(sub->service)));
    if (st == CP_OK && sub->pod) st = cp_buf_printf(&r->sql, " AND pod_name = $%d::text", par_text(&p, sub->pod, strlen(sub->pod)));
    if (st == CP_OK && sub->min_duration_ms > 0)
        st = cp_buf_printf(&r->sql, " AND duration >= $%d::bigint", par_i64(&p, sub->min_duration_ms));
    if (st == CP_OK && sub->max_duration_ms < INT64_MAX)
        st = cp_buf_printf(&r->sql, " AND duration <= $%d::bigint", par_i64(&p, sub->max_duration_ms));
    if (st == CP_OK && sub->errors_only) st = cp_buf_puts(&r->sql, " AND error <> 0");
    if (st == CP_OK) st = cp_buf_putc(&r->sql, 0);
    cp_buf_reset(&r->tmp);
    if (st == CP_OK) st = cp_buf_printf(&r->tmp, "DECLARE cp_stats NO SCROLL CURSOR FOR %s", (const char *)r->sql.data);
    if (st == CP_OK) st = cp_buf_putc(&r->tmp, 0);
    if (st != CP_OK) return pg_oom(r);
    if (p.over) {
        snprintf(r->err, sizeof r->err, "stats scan: too many parameters");
        return CP_EINVAL;
    }
    PGresult *res = PQexecParams(r->db, (const char *)r->tmp.data, p.n, NULL, p.v, p.len, p.fmt, 0);
    st = PQresultStatus(res) == PGRES_COMMAND_OK ? CP_OK : pg_fail(r, "declare", res);
    PQclear(res);
    if (st != CP_OK) return st;
    int over = 0;
    char fetch[64];
    snprintf(fetch, sizeof fetch, "FETCH %d FROM cp_stats", PG_STATS_FETCH);
    for (;;) {
        res = PQexec(r->db, fetch);
        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
            st = pg_fail(r, "stats scan", res);
            PQclear(res);
            break;
        }
        int n = PQntuples(res);
        for (int i = 0; i < n && !over; i++) {
            if (sub->max_scan && k->info->scanned >= sub->max_scan) {
                over = 1;
                break;
            }
            k->info->scanned++;
            cp_call c;
            memset(&c, 0, sizeof c);
            c.ts_ms = val_i64(res, i, 0);
            c.duration_ms = (int32_t)val_i64(res, i, 1);
            c.calls = (int32_t)val_i64(res, i, 2);
            c.suspend_ms = (int32_t)val_i64(res, i, 3);
            c.queue_wait_ms = (int32_t)val_i64(res, i, 4);
            c.transactions = val_i64(res, i, 5);
            c.restart_ms = val_i64(res, i, 6);
            c.trace_file_index = (int32_t)val_i64(res, i, 7);
            c.buffer_offset = (int32_t)val_i64(res, i, 8);
            c.record_index = (int32_t)val_i64(res, i, 9);
            c.ns = val_text(res, i, 10, &c.ns_len);
            c.pod = val_text(res, i, 11, &c.pod_len);
            if (in_c) {
                c.method = val_text(res, i, 12, &c.method_len);
                c.params_json = val_text(res, i, 13, &c.params_json_len);
                if (sub->method_substr &&
                    !cp_ci_contains(c.method, c.method_len, (const char *)ps->needle.data, ps->needle.len))
                    continue;
                if (sub->match) {
                    cp_call_view v = {c.method, c.method_len, c.pod, c.pod_len, c.params_json, c.params_json_len};
                    if (!sub->match(sub->match_ud, &v)) continue;
                }
            }
            cp_stats_add_call(k->acc, &c);
            k->info->scanned_calls++;
            r->emitted = 1;
        }
        PQclear(res);
        if (over || n < PG_STATS_FETCH) break;
        if ((st = cp_rd_stats_progress(k, 0)) != CP_OK) break;
    }
    int cst = pg_command(r, "CLOSE cp_stats", "close");
    if (st == CP_OK) st = cst;
    if (st != CP_OK) return st;
    if (over) {
        k->info->partial = 1;
        return 1;
    }
    return 0;
}

typedef struct pg_stats_arg {
    pgs_state ps;
    const cp_call_filter *f;
    const cp_stats_plan *p;
    cp_stats *acc;
    cp_stats_info *info;
} pg_stats_arg;

static int stats_op(pg_reader *r, void *arg)
{
    pg_stats_arg *a = arg;
    cp_rd_ctx x = ctx_of(r);
    cp_rd_stats k = {.x = &x, .f = a->f, .p = a->p, .acc = a->acc, .info = a->info, .scan = pgs_scan, .ud = &a->ps};
    int st = cp_rd_stats_run(&k, 1);
    free(k.w);
    return st;
}

static int pg_stats(cp_reader *base, const cp_call_filter *f, const cp_stats_plan *p, cp_stats *acc,
                    cp_stats_info *info)
{
    pg_reader *r = (pg_reader *)base;
    if (!utf8_ok0(f->ns) || !utf8_ok0(f->service) || !utf8_ok0(f->pod) || (f->ns_limited && f->nns_in == 0))
        return CP_OK; /* nothing can match */
    pg_stats_arg a = {{r, {0}}, f, p, acc, info};
    cp_buf_init(&a.ps.needle);
    if (f->method_substr && cp_rd_fold_into(&a.ps.needle, f->method_substr, strlen(f->method_substr)) != CP_OK)
        return pg_oom(r);
    int st = run_op(r, stats_op, &a);
    cp_buf_free(&a.ps.needle);
    return st;
}

/* ---- open / close ----------------------------------------------------------------------------- */

static const char *pg_errmsg(const cp_reader *base) { return ((const pg_reader *)base)->err; }

static void pg_close(cp_reader *base)
{
    pg_reader *r = (pg_reader *)base;
    if (!r) return;
    cache_forget(r); /* the session's statements go with it */
    cp_sqldb_close(r->sqldb);
    PQfinish(r->db);
    free(r->dead);
    cp_buf_free(&r->sql);
    cp_buf_free(&r->tmp);
    cp_buf_free(&r->nsarr);
    cp_buf_free(&r->podarr);
    cp_buf_free(&r->conds);
    free(r);
}

static const cp_reader_ops pg_reader_ops = {
    .search = pg_search_calls,
    .get = pg_get_call,
    .pods = pg_pods_list,
    .words = pg_words_get,
    .cold_files = pg_cold_files,
    .bounds = pg_bounds_get,
    .stats = pg_stats,
    .snapshot = pg_snapshot,
    .errmsg = pg_errmsg,
    .close = pg_close,
};

/* The catalog must have the tables the reader reads (the writer's migrations made them). */
static int check_schema(pg_reader *r)
{
    static const char sql[] =
        "SELECT to_regclass('inventory') IS NOT NULL AND to_regclass('call_counts') IS NOT NULL"
        " AND to_regclass('pod_restarts') IS NOT NULL AND to_regclass('dictionary') IS NOT NULL"
        " AND to_regclass('s3_files') IS NOT NULL AND to_regclass('inverted_indexes') IS NOT NULL";
    PGresult *res = PQexec(r->db, sql);
    int st = CP_OK;
    if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        st = pg_fail(r, "read the schema", res);
    } else if (strcmp(PQgetvalue(res, 0, 0), "t") != 0) {
        snprintf(r->err, sizeof r->err, "the catalog has no hot tier tables (not migrated)");
        st = CP_EINVAL;
    }
    PQclear(res);
    return st;
}

int cp_reader_open_pg(const char *conninfo, cp_reader **out, char *err, size_t errlen)
{
    *out = NULL;
    pg_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    r->base.ops = &pg_reader_ops;
    cp_buf_init(&r->sql);
    cp_buf_init(&r->tmp);
    cp_buf_init(&r->nsarr);
    cp_buf_init(&r->podarr);
    cp_buf_init(&r->conds);
    /* Generic plans: the statements are per window and of few shapes, run again and
     * again with other values; planning each execution (what the default does for
     * them, LIMIT being a parameter) costs more than the queries, and the plan does not
     * depend on the values (an index walk in the sort order, or a scan and a sort).
     * Cursors are planned with their values anyway. The URI's own application_name or
     * options, if any, win (it is expanded after these). */
    const char *const keys[] = {"application_name", "options", "dbname", NULL};
    const char *const vals[] = {"cloudprof-reader", "-c plan_cache_mode=force_generic_plan", conninfo, NULL};
    r->db = PQconnectdbParams(keys, vals, 1);
    int st;
    if (!r->db) {
        snprintf(r->err, sizeof r->err, "out of memory");
        st = CP_ENOMEM;
    } else if (PQstatus(r->db) != CONNECTION_OK) {
        st = pg_fail(r, "connect", NULL);
    } else if (PQsetClientEncoding(r->db, "UTF8") != 0) {
        st = pg_fail(r, "client encoding", NULL);
    } else if (cp_sqldb_wrap_pg(r->db, &r->sqldb) != CP_OK) {
        st = pg_oom(r);
    } else {
        st = check_schema(r);
    }
    if (st != CP_OK) {
        snprintf(err, errlen, "catalog reader: %s", r->err);
        pg_close(&r->base);
        return st;
    }
    *out = &r->base;
    return CP_OK;
}
