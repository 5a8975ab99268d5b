/* lookups.c -- the readers' small operations, written once for both catalogs over sqldb.h
 * (reader_internal.h cp_rd_ctx): the pods of a range, dictionary words by position, and
 * the time bounds of both tiers. Names are ordered bytewise on both databases. */
#include "store/hot/hot_internal.h"
#include "store/read/reader_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* " COLLATE \"C\"" on PostgreSQL (bytewise, whatever the database's locale); SQLite
 * compares text bytewise already. */
static const char *bytewise(const cp_rd_ctx *x) { return cp_sqldb_is_pg(x->db) ? " COLLATE \"C\"" : ""; }

static const char *text_of(const cp_sql_val *v, size_t *len)
{
    *len = v->type == CP_SQL_TEXT ? v->n : 0;
    return cp_sql_str(v);
}

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
        .ns = text_of(&c[0], &len),
        .service = text_of(&c[1], &len),
        .pod = text_of(&c[2], &len),
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
    const char *c = bytewise(x);
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
    const char *t = text_of(&c[1], &len);
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
    const char *name = c[0].type == CP_SQL_TEXT ? (const char *)c[0].p : NULL;
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
             max ? "end_time DESC" : "start_time ASC", bytewise(x));
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
