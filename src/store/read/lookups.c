/* lookups.c -- the readers' small operations, written once for both catalogs over sqldb.h
 * (reader_internal.h cp_rd_ctx): the pods of a range, dictionary words by position, the
 * time bounds of both tiers, a call by its reference (with its trace), and PostgreSQL's
 * table locks. Names are ordered bytewise on both databases. */
#include "store/hot/hot_internal.h"
#include "store/read/reader_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- pods --------------------------------------------------------------------------------------- */

/* Pod restarts active in [from, to) (active_since before to, last seen at or after from)
 * or with calls in a window overlapping it; calls are summed over whole windows, so edge
 * windows count entirely (window granularity). Restarts known only from call_counts (no
 * pod_restarts row) are listed with first = last = restart time. A window is at most a
 * day long, which bounds the window_start range scanned ($3 = $1 - one day). */
static const char pods_sql[] =
    "WITH k AS (SELECT namespace, pod_name, restart_time, max(service_name%s) AS service_name,"
    "  CAST(sum(calls) AS bigint) AS calls"
    "  FROM call_counts WHERE window_start > $3 AND window_start < $2 AND window_end > $1"
    "  GROUP BY namespace, pod_name, restart_time)"
    " SELECT * FROM ("
    " SELECT r.namespace AS ns, r.service_name AS svc, r.pod_name AS pod, r.restart_time AS restart,"
    "  coalesce(r.active_since, r.restart_time) AS first_ms,"
    "  coalesce(r.last_active, r.active_since, r.restart_time) AS last_ms, coalesce(k.calls, 0) AS calls"
    " FROM pod_restarts r LEFT JOIN k ON k.namespace = r.namespace AND k.pod_name = r.pod_name"
    "  AND k.restart_time = r.restart_time"
    " WHERE (r.active_since < $2 AND coalesce(r.last_active, r.active_since) >= $1) OR k.calls IS NOT NULL"
    " UNION ALL"
    " SELECT k.namespace, k.service_name, k.pod_name, k.restart_time, k.restart_time, k.restart_time, k.calls"
    " FROM k WHERE NOT EXISTS (SELECT 1 FROM pod_restarts r WHERE r.pod_id = k.namespace || '/' || k.pod_name"
    "  AND r.restart_time = k.restart_time)"
    " ) u ORDER BY ns%s, svc%s, pod%s, restart";

typedef struct pods_walk {
    const cp_rd_ctx *x;
    cp_pod_fn fn;
    void *ud;
} pods_walk;

static int row_pod(void *ud, const cp_sql_val *c, size_t n)
{
    pods_walk *w = ud;
    if (n < 7) return CP_OK;
    size_t len;
    cp_pod_row p = {
        .ns = cp_sql_strn(&c[0], &len),
        .service = cp_sql_strn(&c[1], &len),
        .pod = cp_sql_strn(&c[2], &len),
        .restart_ms = cp_sql_int(&c[3], 0),
        .first_ms = cp_sql_int(&c[4], 0),
        .last_ms = cp_sql_int(&c[5], 0),
        .calls = cp_sql_int(&c[6], 0),
    };
    cp_rd_emit(w->x);
    return w->fn(w->ud, &p);
}

int cp_rd_pods(const cp_rd_ctx *x, int64_t from_ms, int64_t to_ms, cp_pod_fn fn, void *ud)
{
    char sql[sizeof pods_sql + 64];
    const char *c = cp_sqldb_bytewise(x->db);
    snprintf(sql, sizeof sql, pods_sql, c, c, c, c);
    cp_sql_val p[3] = {cp_sql_i64(from_ms), cp_sql_i64(to_ms),
                       cp_sql_i64(from_ms > INT64_MIN + 86400000 ? from_ms - 86400000 : INT64_MIN)};
    pods_walk w = {x, fn, ud};
    return cp_rd_exec(x, sql, p, 3, row_pod, &w, "pods");
}

/* ---- dictionary words --------------------------------------------------------------------------- */

/* Positions looked up per statement, passed as one parameter: a JSON array on SQLite
 * ("position" IN json_each), an array literal on PostgreSQL (= ANY). */
#define WORDS_CHUNK 4096

typedef struct word {
    int32_t position;
    size_t off, len; /* in words_got.text */
} word;

typedef struct words_got {
    const cp_rd_ctx *x;
    word *v; /* by position (the statement orders them) */
    size_t n, cap;
    cp_buf text;
} words_got;

static int row_word(void *ud, const cp_sql_val *c, size_t n)
{
    words_got *g = ud;
    if (n < 2 || g->n == WORDS_CHUNK) return CP_OK;
    if (cp_grow((void **)&g->v, &g->cap, g->n + 1, sizeof *g->v, 64) != CP_OK) return cp_rd_oom(g->x);
    size_t len;
    const char *t = cp_sql_strn(&c[1], &len);
    word *w = &g->v[g->n];
    w->position = (int32_t)cp_sql_int(&c[0], -1);
    w->off = g->text.len;
    w->len = len;
    if (cp_buf_append(&g->text, t, len) != CP_OK) return cp_rd_oom(g->x);
    g->n++;
    return CP_OK;
}

static const word *word_find(const words_got *g, int32_t id)
{
    size_t lo = 0, hi = g->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->v[mid].position == id) return &g->v[mid];
        if (g->v[mid].position < id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* One statement per chunk of ids, then fn in the order of ids (repeats included); ids
 * the dictionary does not have are left out. */
int cp_rd_words(const cp_rd_ctx *x, const char *ns, const char *pod, int64_t restart_ms, const int32_t *ids, size_t n,
                int (*fn)(void *ud, int32_t id, const char *text, size_t len), void *ud)
{
    size_t nl = strlen(ns), pl = strlen(pod);
    if (n == 0 || !cp_sqldb_text_ok(x->db, ns, nl) || !cp_sqldb_text_ok(x->db, pod, pl))
        return CP_OK; /* no such pod can be stored */
    int pg = cp_sqldb_is_pg(x->db);
    const char *sql = pg ? "SELECT \"position\", tag FROM dictionary WHERE pod_id = $1 AND restart_time = $2"
                           " AND \"position\" = ANY(CAST($3 AS int[])) ORDER BY 1"
                         : "SELECT \"position\", tag FROM dictionary WHERE pod_id = $1 AND restart_time = $2"
                           " AND \"position\" IN (SELECT value FROM json_each($3)) ORDER BY 1";
    char *pod_id = malloc(nl + pl + 2);
    if (!pod_id) return cp_rd_oom(x);
    memcpy(pod_id, ns, nl);
    pod_id[nl] = '/';
    memcpy(pod_id + nl + 1, pod, pl + 1);
    words_got g = {.x = x};
    cp_buf_init(&g.text);
    cp_buf list;
    cp_buf_init(&list);
    int st = CP_OK;
    for (size_t i = 0; st == CP_OK && i < n; i += WORDS_CHUNK) {
        size_t end = i + WORDS_CHUNK < n ? i + WORDS_CHUNK : n;
        cp_buf_reset(&list);
        st = cp_buf_putc(&list, pg ? '{' : '[');
        for (size_t k = i; st == CP_OK && k < end; k++) st = cp_buf_printf(&list, "%s%d", k > i ? "," : "", ids[k]);
        if (st == CP_OK) st = cp_buf_putc(&list, pg ? '}' : ']');
        if (st != CP_OK) {
            st = cp_rd_oom(x);
            break;
        }
        cp_sql_val p[3] = {cp_sql_text(pod_id), cp_sql_i64(restart_ms),
                           cp_sql_textn((const char *)list.data, list.len)};
        g.n = 0;
        cp_buf_reset(&g.text);
        st = cp_rd_exec(x, sql, p, 3, row_word, &g, "dictionary");
        for (size_t k = i; st == CP_OK && k < end; k++) {
            const word *w = word_find(&g, ids[k]);
            if (!w) continue;
            cp_rd_emit(x);
            if (fn(ud, ids[k], (const char *)g.text.data + w->off, w->len) != 0) st = CP_EABORT;
        }
    }
    cp_buf_free(&list);
    cp_buf_free(&g.text);
    free(g.v);
    free(pod_id);
    return st == CP_EABORT ? CP_OK : st;
}

/* ---- bounds ------------------------------------------------------------------------------------- */

/* The first two columns of a one-row answer; has[i] = 0 for NULL. */
typedef struct two_i64 {
    int has[2];
    int64_t v[2];
} two_i64;

static int row_i64(void *ud, const cp_sql_val *c, size_t n)
{
    two_i64 *r = ud;
    for (size_t i = 0; i < n && i < 2; i++) r->has[i] = c[i].type == CP_SQL_I64, r->v[i] = c[i].i;
    return CP_OK;
}

typedef struct edge_walk {
    const cp_rd_ctx *x;
    int max;
    int64_t out;
    int found;
} edge_walk;

#define EDGE_DONE 1 /* row_window: no later window can beat the value found */

/* One window of the walk: min(time) or max(time) of its table (an index edge). */
static int row_window(void *ud, const cp_sql_val *c, size_t n)
{
    edge_walk *e = ud;
    if (n < 3) return CP_OK;
    const char *name = cp_sql_opt(&c[0]);
    int64_t start = cp_sql_int(&c[1], 0), end = cp_sql_int(&c[2], 0);
    if (e->found && (e->max ? end <= e->out + 1 : start >= e->out)) return EDGE_DONE;
    if (!name || !cp_hot_calls_name_ok(name)) return CP_OK;
    char sql[64 + CP_HOT_NAME_LEN];
    snprintf(sql, sizeof sql, "SELECT %s(time) FROM %s", e->max ? "max" : "min", name);
    two_i64 r = {{0, 0}, {0, 0}};
    int st = cp_rd_exec(e->x, sql, NULL, 0, row_i64, &r, "window bounds");
    if (st != CP_OK) return st;
    if (r.has[0] && (!e->found || (e->max ? r.v[0] > e->out : r.v[0] < e->out))) e->out = r.v[0], e->found = 1;
    return CP_OK;
}

/* Walks the windows from one end of time; stops when the next window cannot beat the
 * value found (windows can overlap only after a window length change). */
static int edge(const cp_rd_ctx *x, int max, int64_t *out, int *found)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT table_name, start_time, end_time FROM inventory WHERE table_type = 'calls'"
             " AND status IN ('ready', 'persisting') AND rows_count > 0 ORDER BY %s, table_name%s",
             max ? "end_time DESC" : "start_time ASC", cp_sqldb_bytewise(x->db));
    edge_walk e = {x, max, 0, 0};
    int st = cp_rd_exec(x, sql, NULL, 0, row_window, &e, "bounds");
    if (st == EDGE_DONE) st = CP_OK;
    *out = e.out;
    *found = e.found;
    return st;
}

int cp_rd_bounds(const cp_rd_ctx *x, int has_cold, int64_t *min_ts, int64_t *max_ts)
{
    *min_ts = *max_ts = 0;
    int has_min = 0, has_max = 0;
    int64_t lo = 0, hi = 0;
    int st = edge(x, 0, &lo, &has_min);
    if (st == CP_OK) st = edge(x, 1, &hi, &has_max);
    if (st != CP_OK) return st;
    if (!has_min || !has_max) has_min = has_max = 0;
    if (has_cold) { /* completed cold calls files */
        two_i64 r = {{0, 0}, {0, 0}};
        st = cp_rd_exec(x,
                        "SELECT min(min_time), max(max_time) FROM s3_files"
                        " WHERE file_type = 'calls' AND status = 'completed'",
                        NULL, 0, row_i64, &r, "cold bounds");
        if (st != CP_OK) return st;
        if (r.has[0] && r.has[1]) {
            if (!has_min || r.v[0] < lo) lo = r.v[0];
            if (!has_max || r.v[1] > hi) hi = r.v[1];
            has_min = 1;
        }
    }
    if (has_min) *min_ts = lo, *max_ts = hi;
    return CP_OK;
}

/* ---- table locks (PostgreSQL) ----------------------------------------------------------------- */

#define LOCK_CHUNK 256 /* tables per LOCK statement */

static int name_cmp(const void *a, const void *b) { return strcmp((const char *)a, (const char *)b); }

int cp_rd_lock_tables(const cp_rd_ctx *x, const void *list, size_t n, size_t stride)
{
    if (!cp_sqldb_is_pg(x->db) || !n) return CP_OK;
    char(*names)[CP_HOT_NAME_LEN] = malloc(n * sizeof *names);
    if (!names) return cp_rd_oom(x);
    for (size_t i = 0; i < n; i++) snprintf(names[i], CP_HOT_NAME_LEN, "%s", (const char *)list + i * stride);
    qsort(names, n, CP_HOT_NAME_LEN, name_cmp);
    cp_buf sql;
    cp_buf_init(&sql);
    int st = CP_OK;
    for (size_t i = 0; st == CP_OK && i < n; i += LOCK_CHUNK) {
        cp_buf_reset(&sql);
        st = cp_buf_puts(&sql, "LOCK TABLE ");
        for (size_t j = i; st == CP_OK && j < n && j < i + LOCK_CHUNK; j++)
            st = cp_buf_printf(&sql, "%s%s", j > i ? ", " : "", names[j]);
        if (st == CP_OK) st = cp_buf_puts(&sql, " IN ACCESS SHARE MODE");
        if (st == CP_OK) st = cp_buf_putc(&sql, 0);
        st = st == CP_OK ? cp_rd_exec(x, (const char *)sql.data, NULL, 0, NULL, NULL, "lock windows") : cp_rd_oom(x);
    }
    cp_buf_free(&sql);
    free(names);
    return st;
}

/* ---- one call by its reference ------------------------------------------------------------------ */

static int64_t i64_of(const cp_sql_val *c, int i) { return cp_sql_int(&c[i], 0); }

void cp_rd_call_of(const cp_sql_val *c, cp_call *k)
{
    memset(k, 0, sizeof *k);
    k->ts_ms = i64_of(c, CP_RDC_TIME);
    k->duration_ms = (int32_t)i64_of(c, CP_RDC_DURATION);
    k->cpu_time = i64_of(c, CP_RDC_CPU);
    k->wait_time = i64_of(c, CP_RDC_WAIT);
    k->memory_used = i64_of(c, CP_RDC_MEMORY);
    k->non_blocking = i64_of(c, CP_RDC_NONBLOCKING);
    k->queue_wait_ms = (int32_t)i64_of(c, CP_RDC_QUEUE);
    k->suspend_ms = (int32_t)i64_of(c, CP_RDC_SUSPEND);
    k->calls = (int32_t)i64_of(c, CP_RDC_CALLS);
    k->transactions = i64_of(c, CP_RDC_TRANSACTIONS);
    k->logs_generated = (int32_t)i64_of(c, CP_RDC_LOGS_GENERATED);
    k->logs_written = (int32_t)i64_of(c, CP_RDC_LOGS_WRITTEN);
    k->file_read = i64_of(c, CP_RDC_FILE_READ);
    k->file_written = i64_of(c, CP_RDC_FILE_WRITTEN);
    k->net_read = i64_of(c, CP_RDC_NET_READ);
    k->net_written = i64_of(c, CP_RDC_NET_WRITTEN);
    k->ns = cp_sql_strn(&c[CP_RDC_NS], &k->ns_len);
    k->service = cp_sql_strn(&c[CP_RDC_SERVICE], &k->service_len);
    k->pod = cp_sql_strn(&c[CP_RDC_POD], &k->pod_len);
    k->restart_ms = i64_of(c, CP_RDC_RESTART);
    k->method_id = (int32_t)i64_of(c, CP_RDC_METHOD_ID);
    k->method = cp_sql_strn(&c[CP_RDC_METHOD], &k->method_len);
    k->thread = cp_sql_strn(&c[CP_RDC_THREAD], &k->thread_len);
    k->params_json = cp_sql_strn(&c[CP_RDC_PARAMS], &k->params_json_len);
    k->error = i64_of(c, CP_RDC_ERROR) != 0;
    k->sql = i64_of(c, CP_RDC_HAS_SQL) != 0;
    k->trace_file_index = (int32_t)i64_of(c, CP_RDC_TFI);
    k->buffer_offset = (int32_t)i64_of(c, CP_RDC_BO);
    k->record_index = (int32_t)i64_of(c, CP_RDC_RI);
    /* NULL when the call has a trace */
    k->trace_reason = cp_sql_opt(&c[CP_RDC_TRACE_REASON]);
}

typedef struct get_walk {
    const cp_rd_ctx *x;
    const char *table;
    int with_trace;
    cp_call_fn fn;
    void *ud;
    cp_call call;
    int found, handed; /* the row was there; fn has had it */
} get_walk;

static int row_trace(void *ud, const cp_sql_val *c, size_t n)
{
    get_walk *g = ud;
    if (n && c[0].type == CP_SQL_BLOB) {
        g->call.trace = c[0].p;
        g->call.trace_len = c[0].n;
    }
    g->handed = 1;
    cp_rd_emit(g->x);
    return g->fn(g->ud, &g->call); /* the blob lives as long as this row */
}

static int row_get(void *ud, const cp_sql_val *c, size_t n)
{
    get_walk *g = ud;
    if (n < CP_RDC_COUNT) return CP_OK;
    cp_rd_call_of(c, &g->call);
    g->found = 1;
    int st = CP_OK;
    if (g->with_trace) {
        char sql[64 + CP_HOT_NAME_LEN];
        snprintf(sql, sizeof sql, "SELECT trace FROM %s WHERE id = $1", g->table);
        cp_sql_val p[1] = {cp_sql_i64(i64_of(c, CP_RDC_ID))};
        st = cp_rd_exec(g->x, sql, p, 1, row_trace, g, "trace lookup");
    }
    if (st == CP_OK && !g->handed) {
        g->handed = 1;
        cp_rd_emit(g->x);
        st = g->fn(g->ud, &g->call);
    }
    return st;
}

typedef struct window_names {
    const cp_rd_ctx *x;
    char (*v)[CP_HOT_NAME_LEN];
    size_t n, cap;
} window_names;

static int row_window_name(void *ud, const cp_sql_val *c, size_t n)
{
    window_names *w = ud;
    const char *name = n ? cp_sql_opt(&c[0]) : NULL;
    if (!name || !cp_hot_calls_name_ok(name) || w->n == CP_RD_MAX_WINDOWS) return CP_OK;
    if (cp_grow((void **)&w->v, &w->cap, w->n + 1, sizeof *w->v, 4) != CP_OK) return cp_rd_oom(w->x);
    snprintf(w->v[w->n++], CP_HOT_NAME_LEN, "%s", name);
    return CP_OK;
}

int cp_rd_get(const cp_rd_ctx *x, const cp_call_ref *ref, int with_trace, cp_call_fn fn, void *ud)
{
    int pg = cp_sqldb_is_pg(x->db);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT table_name FROM inventory WHERE table_type = 'calls' AND status IN ('ready', 'persisting')"
             " AND start_time <= $1 AND end_time > $1 ORDER BY start_time DESC, table_name%s",
             cp_sqldb_bytewise(x->db));
    cp_sql_val w[1] = {cp_sql_i64(ref->ts_ms)};
    window_names names = {x, NULL, 0, 0};
    int st = cp_rd_exec(x, sql, w, 1, row_window_name, &names, "windows of a call");
    if (st == CP_OK) st = cp_rd_lock_tables(x, names.v, names.n, sizeof *names.v);
    cp_sql_val p[6] = {cp_sql_i64(ref->ts_ms),          cp_sql_i64(ref->restart_ms),
                       cp_sql_i64((int64_t)ref->pod_hash), cp_sql_i64(ref->trace_file_index),
                       cp_sql_i64(ref->buffer_offset),    cp_sql_i64(ref->record_index)};
    get_walk g = {.x = x, .with_trace = with_trace, .fn = fn, .ud = ud};
    for (size_t i = 0; st == CP_OK && !g.found && i < names.n; i++) {
        char q[1024];
        char hint[16 + CP_HOT_NAME_LEN];
        snprintf(hint, sizeof hint, " INDEXED BY %s_time", names.v[i]);
        snprintf(q, sizeof q,
                 "SELECT " CP_RD_COLUMNS " FROM %s%s WHERE time = $1 AND restart_time = $2 AND pod_hash = $3"
                 " AND trace_file_index = $4 AND buffer_offset = $5 AND record_index = $6 LIMIT 1",
                 names.v[i], pg ? "" : hint);
        g.table = names.v[i];
        st = cp_rd_exec(x, q, p, 6, row_get, &g, "call lookup");
    }
    free(names.v);
    if (st == CP_OK && !g.found) {
        snprintf(x->err, x->errlen, "no such call");
        return CP_ENOTFOUND;
    }
    return st;
}
