/* api_calls.c -- GET /api/v1/calls (a keyset page of calls), /calls/{id} (one call) and
 * /calls/stats (chart points and totals over every matching call), and the Call JSON
 * object they share with the tree endpoints.
 */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parameters of the filtered endpoints. */
static const char *const calls_params[] = {"from", "to", "namespace", "service", "pod", "pods", "hide_system", "duration",
                                           "method", "q", "error", "sort", "limit", "cursor", NULL};
static const char *const stats_params[] = {"from", "to", "namespace", "service", "pod", "pods", "hide_system", "duration",
                                           "method", "q", "error", "columns", NULL};

/* ---- the Call object ------------------------------------------------------------------ */

int http_call_json(cp_buf *out, const cp_call *c)
{
    cp_call_ref ref;
    char id[CP_CALL_ID_MAX];
    cp_call_ref_of(c, &ref);
    cp_call_id_format(&ref, id);
    int bad = 0;
    bad |= cp_buf_puts(out, "{\"id\":") != CP_OK;
    bad |= cp_json_str(out, id, strlen(id)) != CP_OK;
    bad |= cp_buf_printf(out, ",\"ts_ms\":%lld,\"duration_ms\":%ld,\"method\":", (long long)c->ts_ms,
                         (long)c->duration_ms) != CP_OK;
    bad |= cp_json_str(out, c->method ? c->method : "", c->method ? c->method_len : 0) != CP_OK;
    bad |= cp_buf_puts(out, ",\"namespace\":") != CP_OK;
    bad |= cp_json_str(out, c->ns ? c->ns : "", c->ns ? c->ns_len : 0) != CP_OK;
    bad |= cp_buf_puts(out, ",\"service\":") != CP_OK;
    bad |= cp_json_str(out, c->service ? c->service : "", c->service ? c->service_len : 0) != CP_OK;
    bad |= cp_buf_puts(out, ",\"pod\":") != CP_OK;
    bad |= cp_json_str(out, c->pod ? c->pod : "", c->pod ? c->pod_len : 0) != CP_OK;
    bad |= cp_buf_printf(out, ",\"restart_ms\":%lld,\"thread\":", (long long)c->restart_ms) != CP_OK;
    bad |= cp_json_str(out, c->thread ? c->thread : "", c->thread ? c->thread_len : 0) != CP_OK;
    bad |= cp_buf_printf(out,
                         ",\"cpu_time\":%lld,\"wait_time\":%lld,\"memory_used\":%lld,\"suspend_ms\":%ld"
                         ",\"calls\":%ld,\"transactions\":%lld,\"queue_wait_ms\":%ld,\"logs_generated\":%ld"
                         ",\"logs_written\":%ld,\"file_read\":%lld,\"file_written\":%lld,\"net_read\":%lld"
                         ",\"net_written\":%lld,\"error\":%s,\"params\":",
                         (long long)c->cpu_time, (long long)c->wait_time, (long long)c->memory_used,
                         (long)c->suspend_ms, (long)c->calls, (long long)c->transactions, (long)c->queue_wait_ms,
                         (long)c->logs_generated, (long)c->logs_written, (long long)c->file_read,
                         (long long)c->file_written, (long long)c->net_read, (long long)c->net_written,
                         c->error ? "true" : "false") != CP_OK;
    /* The model's params JSON, embedded verbatim. */
    if (c->params_json && c->params_json_len)
        bad |= cp_buf_append(out, c->params_json, c->params_json_len) != CP_OK;
    else
        bad |= cp_buf_puts(out, "{}") != CP_OK;
    bad |= cp_buf_printf(out, ",\"trace_available\":%s,\"trace_dropped_reason\":",
                         c->trace_reason ? "false" : "true") != CP_OK;
    if (c->trace_reason)
        bad |= cp_json_str(out, c->trace_reason, strlen(c->trace_reason)) != CP_OK;
    else
        bad |= cp_buf_puts(out, "null") != CP_OK;
    bad |= cp_buf_putc(out, '}') != CP_OK;
    return bad ? CP_ENOMEM : CP_OK;
}

/* ---- GET /calls ---------------------------------------------------------------------- */

typedef struct page_ctx {
    const http_query *q;
    cp_buf *out;
    size_t rows;
    cp_sort_key last;     /* key of the last row written */
    int full;             /* stopped: the response reached HTTP_MAX_RESPONSE_BYTES */
    int oom;
} page_ctx;

static int page_row(void *ud, const cp_call *c)
{
    page_ctx *p = ud;
    if ((p->rows && cp_buf_putc(p->out, ',') != CP_OK) || http_call_json(p->out, c) != CP_OK) {
        p->oom = 1;
        return 1;
    }
    p->rows++;
    cp_sort_key_of(c, p->q->sort, p->q->desc, &p->last);
    if (p->out->len > HTTP_MAX_RESPONSE_BYTES) {
        p->full = 1;
        return 1;
    }
    return 0;
}

/* Appends the page's tail: next_cursor, scanned, partial, partial_reasons. */
static int page_tail(const page_ctx *p, const cp_search_stats *st, cp_buf *out)
{
    int bad = cp_buf_puts(out, "],\"next_cursor\":") != CP_OK;
    if (p->rows && (st->more || st->partial || p->full)) {
        cp_cursor cur;
        char text[CP_CURSOR_MAX];
        memset(&cur, 0, sizeof cur);
        cur.filter_hash = p->q->hash;
        cur.issued_ms = cp_now_ms();
        cur.key = p->last;
        cp_cursor_format(&cur, text);
        bad |= cp_json_str(out, text, strlen(text)) != CP_OK;
    } else {
        bad |= cp_buf_puts(out, "null") != CP_OK;
    }
    int partial = st->partial || p->full;
    bad |= cp_buf_printf(out, ",\"scanned\":%llu,\"cold_files\":%zu,\"cold_files_skipped\":%zu,\"partial\":%s,"
                         "\"partial_reasons\":[",
                         (unsigned long long)st->scanned, st->cold_files, st->cold_skipped,
                         partial ? "true" : "false") != CP_OK;
    if (st->partial) bad |= cp_buf_puts(out, "\"scan_budget\"") != CP_OK;
    if (p->full) bad |= cp_buf_puts(out, st->partial ? ",\"response_size\"" : "\"response_size\"") != CP_OK;
    bad |= cp_buf_puts(out, "]}") != CP_OK;
    return bad ? CP_ENOMEM : CP_OK;
}

void http_api_calls(cp_http *h, const http_args *a, http_out *o)
{
    http_query q;
    memset(&q, 0, sizeof q);
    if (http_check_args(a, calls_params, o) || http_query_parse(h, a, HTTP_Q_PAGING | HTTP_Q_SORT, &q, o)) {
        http_query_free(&q);
        return;
    }
    cp_call_filter f;
    http_query_filter(h, &q, &f);
    page_ctx p;
    memset(&p, 0, sizeof p);
    p.q = &q;
    p.out = &o->body;
    cp_search_stats st;
    memset(&st, 0, sizeof st);
    cp_reader *r;
    if (http_reader_take(h, o, &r)) {
        http_query_free(&q);
        return;
    }
    int rc = CP_OK;
    if (cp_buf_puts(&o->body, "{\"calls\":[") != CP_OK) p.oom = 1;
    if (!p.oom) rc = cp_reader_search(r, &f, page_row, &p, &st);
    int failed = rc < 0 && !p.oom && !p.full;
    if (failed) http_reader_error(o, rc, "search", cp_reader_errmsg(r));
    http_pool_release(h, r, failed);
    if (!failed && (p.oom || page_tail(&p, &st, &o->body) != CP_OK)) http_oom(o);
    http_query_free(&q);
}

/* ---- GET /calls/{id} --------------------------------------------------------------------- */

/* Parses a call id from the path; 0 or -1 with a 400 set. */
static int parse_id(const char *id, cp_call_ref *ref, http_out *o)
{
    size_t n = strlen(id);
    if (n == 0 || n >= CP_CALL_ID_MAX || cp_call_id_parse(id, n, ref) != CP_OK) {
        http_error(o, 400, "bad_id", "malformed call id");
        return -1;
    }
    return 0;
}

static int one_call(void *ud, const cp_call *c)
{
    return http_call_json(ud, c) != CP_OK;
}

void http_api_call(cp_http *h, const http_args *a, const char *id, http_out *o)
{
    cp_call_ref ref;
    if (http_check_args(a, NULL, o) || parse_id(id, &ref, o)) return;
    cp_reader *r;
    if (http_reader_take(h, o, &r)) return;
    int rc = cp_reader_get(r, &ref, 0, one_call, &o->body);
    int failed = rc < 0 && rc != CP_ENOTFOUND;
    if (rc == CP_ENOTFOUND) http_error(o, 404, "call_not_found", "no call with this id");
    else if (rc > 0) http_oom(o);
    else if (failed) http_reader_error(o, rc, "get", cp_reader_errmsg(r));
    else if (o->body.len == 0) http_error(o, 404, "call_not_found", "no call with this id");
    http_pool_release(h, r, failed);
}

/* ---- GET /calls/stats ----------------------------------------------------------------- */

typedef struct stat_point {
    int64_t ts_ms;
    int32_t duration_ms;
    int32_t calls;
    cp_call_ref ref;
} stat_point;

typedef struct stats_ctx {
    int64_t from_ms, span_ms;
    unsigned columns, per_col;
    stat_point *pts;              /* columns x per_col slots, each column by duration desc */
    unsigned *used;               /* slots used per column */
    uint64_t total;
    int64_t sum_duration, sum_suspend, sum_queue, sum_transactions;
    int64_t last_ts;              /* the last row seen (keyset of the next page) */
    cp_call_ref last_ref;
} stats_ctx;

/* Keeps the call if it is among the per_col slowest of its time column. */
static int stats_row(void *ud, const cp_call *c)
{
    stats_ctx *s = ud;
    s->total++;
    s->sum_duration += c->duration_ms;
    s->sum_suspend += c->suspend_ms;
    s->sum_queue += c->queue_wait_ms;
    s->sum_transactions = cp_add_wrap64(s->sum_transactions, c->transactions);
    s->last_ts = c->ts_ms;
    cp_call_ref_of(c, &s->last_ref);
    double rel = (double)(c->ts_ms - s->from_ms) / (double)s->span_ms;
    long col = (long)(rel * s->columns);
    if (col < 0) col = 0;
    if (col >= (long)s->columns) col = (long)s->columns - 1;
    stat_point *slots = s->pts + (size_t)col * s->per_col;
    unsigned n = s->used[col];
    if (n == s->per_col && slots[n - 1].duration_ms >= c->duration_ms) return 0;
    unsigned i = n < s->per_col ? n : n - 1; /* the new point's slot, then sift up */
    while (i > 0 && slots[i - 1].duration_ms < c->duration_ms) {
        slots[i] = slots[i - 1];
        i--;
    }
    slots[i].ts_ms = c->ts_ms;
    slots[i].duration_ms = c->duration_ms;
    slots[i].calls = c->calls;
    slots[i].ref = s->last_ref;
    if (n < s->per_col) s->used[col] = n + 1;
    return 0;
}

static int by_ts(const void *x, const void *y)
{
    const stat_point *a = x, *b = y;
    if (a->ts_ms != b->ts_ms) return a->ts_ms < b->ts_ms ? -1 : 1;
    return a->duration_ms > b->duration_ms ? -1 : a->duration_ms < b->duration_ms;
}

/* Gathers the kept points in time order and writes the response. */
static int stats_json(stats_ctx *s, const cp_search_stats *st, cp_buf *out)
{
    size_t n = 0;
    for (unsigned c = 0; c < s->columns; c++)
        for (unsigned i = 0; i < s->used[c]; i++) s->pts[n++] = s->pts[(size_t)c * s->per_col + i];
    qsort(s->pts, n, sizeof *s->pts, by_ts);
    int bad = cp_buf_puts(out, "{\"points\":[") != CP_OK;
    for (size_t i = 0; i < n && !bad; i++) {
        char id[CP_CALL_ID_MAX];
        cp_call_id_format(&s->pts[i].ref, id);
        bad |= cp_buf_printf(out, "%s{\"ts_ms\":%lld,\"duration_ms\":%ld,\"calls\":%ld,\"id\":\"%s\"}", i ? "," : "",
                             (long long)s->pts[i].ts_ms, (long)s->pts[i].duration_ms, (long)s->pts[i].calls,
                             id) != CP_OK;
    }
    bad |= cp_buf_printf(out,
                         "],\"total\":%llu,\"sampled\":%s,\"sum_duration_ms\":%lld,\"sum_suspend_ms\":%lld"
                         ",\"sum_queue_wait_ms\":%lld,\"sum_transactions\":%lld,\"scanned\":%llu"
                         ",\"partial\":%s,\"partial_reasons\":[%s]}",
                         (unsigned long long)s->total, s->total > n ? "true" : "false", (long long)s->sum_duration,
                         (long long)s->sum_suspend, (long long)s->sum_queue, (long long)s->sum_transactions,
                         (unsigned long long)st->scanned, st->partial ? "true" : "false",
                         st->partial ? "\"scan_budget\"" : "") != CP_OK;
    return bad ? CP_ENOMEM : CP_OK;
}

/* Scans every matching call in time order, HTTP_STATS_PAGE rows per reader query
 * (keyset), within the scan budget. Returns the reader's status; st sums the pages. */
static int stats_scan(cp_http *h, cp_reader *r, cp_call_filter *f, stats_ctx *s, cp_search_stats *st)
{
    uint64_t budget = h->cfg->max_scan;
    cp_sort_key after;
    f->sort = CP_SORT_TS;
    f->desc = 0;
    f->limit = HTTP_STATS_PAGE;
    f->after = NULL;
    for (;;) {
        cp_search_stats one;
        memset(&one, 0, sizeof one);
        f->max_scan = budget ? budget - st->scanned : 0;
        uint64_t before = s->total;
        int rc = cp_reader_search(r, f, stats_row, s, &one);
        st->scanned += one.scanned;
        if (rc != CP_OK) return rc;
        if (one.partial || (budget && st->scanned >= budget && one.more)) {
            st->partial = 1;
            return CP_OK;
        }
        if (!one.more || s->total == before) return CP_OK;
        memset(&after, 0, sizeof after);
        after.col = CP_SORT_TS;
        after.desc = 0;
        after.num = s->last_ts;
        after.ref = s->last_ref;
        f->after = &after;
    }
}

void http_api_stats(cp_http *h, const http_args *a, http_out *o)
{
    http_query q;
    memset(&q, 0, sizeof q);
    if (http_check_args(a, stats_params, o) || http_query_parse(h, a, HTTP_Q_COLUMNS, &q, o)) {
        http_query_free(&q);
        return;
    }
    stats_ctx s;
    memset(&s, 0, sizeof s);
    s.from_ms = q.from_ms;
    s.span_ms = q.to_ms - q.from_ms;
    s.columns = q.columns;
    s.per_col = HTTP_STATS_MAX_POINTS / q.columns;
    if (s.per_col > HTTP_STATS_PER_COLUMN) s.per_col = HTTP_STATS_PER_COLUMN;
    if (s.per_col < 1) s.per_col = 1;
    s.pts = calloc((size_t)s.columns * s.per_col, sizeof *s.pts);
    s.used = calloc(s.columns, sizeof *s.used);
    cp_call_filter f;
    http_query_filter(h, &q, &f);
    cp_search_stats st;
    memset(&st, 0, sizeof st);
    cp_reader *r = NULL;
    int rc;
    if (!s.pts || !s.used) {
        http_oom(o);
    } else if (http_reader_take(h, o, &r) == 0) {
        rc = stats_scan(h, r, &f, &s, &st);
        if (rc < 0) http_reader_error(o, rc, "search", cp_reader_errmsg(r));
        http_pool_release(h, r, rc < 0);
        if (rc >= 0 && stats_json(&s, &st, &o->body) != CP_OK) http_oom(o);
    }
    free(s.pts);
    free(s.used);
    http_query_free(&q);
}
