/* hot_stats.c -- the hot tier's share of cp_reader_ops.stats, written once for both
 * catalogs over sqldb.h (reader_internal.h cp_rd_stats): the windows of the range (their
 * tables locked on PostgreSQL, as a search locks them, so no compaction drops one before
 * the transaction ends), the windows whose rollup entries were made with another idle
 * list, the hot_rollups entries in [a, b) of the windows that keep them, and per window
 * the scans cp_stats_scans asks for -- those through the reader's own scan (SQLite
 * evaluates the search syntax inside the SQL; PostgreSQL filters cursor batches). */
#include "store/hot/hot_internal.h"
#include "store/read/reader_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cp_rd_stats_progress(cp_rd_stats *k, uint64_t extra)
{
    const cp_call_filter *f = k->f;
    k->prog.scanned = k->info->scanned + extra;
    if (f->progress && f->progress(f->progress_ud, &k->prog)) {
        snprintf(k->x->err, k->x->errlen, "cancelled");
        return CP_EABORT;
    }
    return CP_OK;
}

static cp_rd_window *window_find(cp_rd_stats *k, const char *name)
{
    for (size_t i = 0; i < k->nw; i++)
        if (!strcmp(k->w[i].name, name)) return &k->w[i];
    return NULL;
}

/* ---- the windows ------------------------------------------------------------------------------ */

typedef struct window_rows {
    cp_rd_stats *k;
    size_t cap;
} window_rows;

static int row_window(void *ud, const cp_sql_val *c, size_t n)
{
    window_rows *a = ud;
    cp_rd_stats *k = a->k;
    const char *name = n >= 5 ? cp_sql_opt(&c[0]) : NULL;
    if (!name || !cp_hot_calls_name_ok(name)) return CP_OK;
    if (k->nw == CP_RD_MAX_WINDOWS) {
        snprintf(k->x->err, k->x->errlen, "the time range spans more than %d windows", CP_RD_MAX_WINDOWS);
        return CP_ELIMIT;
    }
    if (cp_grow((void **)&k->w, &a->cap, k->nw + 1, sizeof *k->w, 16) != CP_OK) return cp_rd_oom(k->x);
    cp_rd_window *w = &k->w[k->nw++];
    memset(w, 0, sizeof *w);
    snprintf(w->name, sizeof w->name, "%s", name);
    w->start = cp_sql_int(&c[1], 0);
    w->end = cp_sql_int(&c[2], 0);
    w->rows = cp_sql_int(&c[3], 0);
    w->covered = k->p->rollups && cp_sql_int(&c[4], 0) != 0;
    return CP_OK;
}

/* The windows overlapping the range that have rows. */
static int list_windows(cp_rd_stats *k, int has_rollups)
{
    char sql[320];
    snprintf(sql, sizeof sql,
             "SELECT table_name, start_time, end_time, rows_count, %s FROM inventory WHERE table_type = 'calls'"
             " AND status IN ('ready', 'persisting') AND rows_count > 0 AND start_time < $2 AND end_time > $1"
             " ORDER BY start_time",
             has_rollups ? "rollup" : "0");
    cp_sql_val p[2] = {cp_sql_i64(k->f->from_ms), cp_sql_i64(k->f->to_ms)};
    window_rows a = {k, 0};
    int st = cp_rd_exec(k->x, sql, p, 2, row_window, &a, "list windows");
    k->prog.windows_total = k->nw;
    return st == CP_OK ? cp_rd_lock_tables(k->x, k->w, k->nw, sizeof *k->w) : st; /* name first */
}

/* ---- rollup entries --------------------------------------------------------------------------- */

static int row_foreign(void *ud, const cp_sql_val *c, size_t n)
{
    const char *name = n ? cp_sql_opt(&c[0]) : NULL;
    cp_rd_window *w = name ? window_find(ud, name) : NULL;
    if (w) w->covered = 0;
    return CP_OK;
}

/* Windows whose entries were made with another idle list cannot answer hide_system. */
static int foreign_fp(cp_rd_stats *k)
{
    const cp_rollup_sel *sel = k->f->sel;
    if (!k->p->rollups || !sel || !sel->hide_system) return CP_OK;
    cp_sql_val p[3] = {cp_sql_i64(k->p->a), cp_sql_i64(k->p->b), cp_sql_i64(sel->idle_fp)};
    return cp_rd_exec(k->x, "SELECT DISTINCT tbl FROM hot_rollups WHERE cell >= $1 AND cell < $2 AND idle_fp <> $3",
                      p, 3, row_foreign, k, "rollup lists");
}

typedef struct entry_rows {
    cp_rd_stats *k;
    const cp_rd_window *last; /* the previous row's window (rows of a window come together) */
} entry_rows;

static int row_entry(void *ud, const cp_sql_val *c, size_t n)
{
    entry_rows *a = ud;
    cp_rd_stats *k = a->k;
    if (n < 20 || c[7].type != CP_SQL_TEXT) return CP_OK;
    const char *tbl = (const char *)c[7].p;
    if (!a->last || strcmp(a->last->name, tbl) != 0) a->last = window_find(k, tbl);
    if (!a->last || !a->last->covered) return CP_OK;
    cp_rollup_entry e;
    e.cell_ms = cp_sql_int(&c[0], 0);
    e.ns = cp_sql_strn(&c[1], &e.ns_len);
    e.service = cp_sql_strn(&c[2], &e.service_len);
    e.pod = cp_sql_strn(&c[3], &e.pod_len);
    e.cls = (int32_t)cp_sql_int(&c[4], 0);
    e.flags = (int32_t)cp_sql_int(&c[5], 0);
    e.idle_fp = cp_sql_int(&c[6], 0);
    e.n = cp_sql_int(&c[8], 0);
    e.sum_duration = cp_sql_int(&c[9], 0);
    e.sum_suspend = cp_sql_int(&c[10], 0);
    e.sum_queue = cp_sql_int(&c[11], 0);
    e.sum_transactions = cp_sql_int(&c[12], 0);
    e.max.ts_ms = cp_sql_int(&c[13], 0);
    e.max.duration_ms = (int32_t)cp_sql_int(&c[14], 0);
    e.max.calls = (int32_t)cp_sql_int(&c[15], 0);
    e.max.restart_ms = cp_sql_int(&c[16], 0);
    e.max.trace_file_index = (int32_t)cp_sql_int(&c[17], 0);
    e.max.buffer_offset = (int32_t)cp_sql_int(&c[18], 0);
    e.max.record_index = (int32_t)cp_sql_int(&c[19], 0);
    if (cp_stats_entry_matches(k->f, k->p, &e) != 1) return CP_OK;
    cp_rd_emit(k->x);
    cp_stats_add_entry(k->acc, &e, cp_pod_hash(e.ns, e.ns_len, e.pod, e.pod_len));
    k->info->rollup_entries++;
    return CP_OK;
}

/* The entries of the covered windows' cells [a, b). */
static int entries(cp_rd_stats *k)
{
    const cp_call_filter *f = k->f;
    int ns = f->ns != NULL;
    if (ns && !cp_sqldb_text_ok(k->x->db, f->ns, strlen(f->ns))) return CP_OK; /* no entry has it */
    char sql[640];
    snprintf(sql, sizeof sql,
             "SELECT cell, namespace, service_name, pod_name, duration_class, flags, idle_fp, tbl, calls_count,"
             " sum_duration, sum_suspend_duration, sum_queue_wait_duration, sum_transactions, max_time,"
             " max_duration, max_calls, max_restart_time, max_trace_file_index, max_buffer_offset,"
             " max_record_index FROM hot_rollups WHERE cell >= $1 AND cell < $2%s",
             ns ? " AND namespace = $3" : "");
    cp_sql_val p[3] = {cp_sql_i64(k->p->a), cp_sql_i64(k->p->b), cp_sql_text(f->ns)};
    entry_rows a = {k, NULL};
    return cp_rd_exec(k->x, sql, p, ns ? 3 : 2, row_entry, &a, "rollups");
}

/* ---- the run ------------------------------------------------------------------------------------ */

static int scan_one(void *ud, const cp_call_filter *sub)
{
    cp_rd_stats *k = ud;
    return k->scan(k, sub);
}

int cp_rd_stats_run(cp_rd_stats *k, int has_rollups)
{
    free(k->w);
    k->w = NULL;
    k->nw = 0;
    int st = list_windows(k, has_rollups);
    if (st == CP_OK && has_rollups) st = foreign_fp(k);
    int any = 0;
    for (size_t i = 0; i < k->nw; i++) any |= k->w[i].covered;
    if (st == CP_OK && any) st = entries(k);
    for (size_t i = 0; st == CP_OK && i < k->nw && !k->info->partial; i++) {
        k->cur = &k->w[i];
        int r = cp_stats_scans(k->f, k->p, k->w[i].covered, scan_one, k);
        if (r < 0) st = r;
        k->prog.windows_done = i + 1;
        if (st == CP_OK) st = cp_rd_stats_progress(k, 0);
    }
    k->info->windows += k->nw;
    return st;
}
