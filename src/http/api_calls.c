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
                                           "method", "q", "error", "sort", "limit", "cursor", "stream", NULL};
static const char *const stats_params[] = {"from", "to", "namespace", "service", "pod", "pods", "hide_system", "duration",
                                           "method", "q", "error", "columns", "stream", NULL};

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
                         ",\"net_written\":%lld,\"error\":%s,\"sql\":%s,\"params\":",
                         (long long)c->cpu_time, (long long)c->wait_time, (long long)c->memory_used,
                         (long)c->suspend_ms, (long)c->calls, (long long)c->transactions, (long)c->queue_wait_ms,
                         (long)c->logs_generated, (long)c->logs_written, (long long)c->file_read,
                         (long long)c->file_written, (long long)c->net_read, (long long)c->net_written,
                         c->error ? "true" : "false", c->sql ? "true" : "false") != CP_OK;
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

void http_calls_answer(cp_http *h, const http_query *q, const cp_call_filter *f, http_out *o)
{
    page_ctx p;
    memset(&p, 0, sizeof p);
    p.q = q;
    p.out = &o->body;
    cp_search_stats st;
    memset(&st, 0, sizeof st);
    cp_reader *r;
    if (http_reader_take(h, o, &r)) return;
    int rc = CP_OK;
    if (cp_buf_puts(&o->body, "{\"calls\":[") != CP_OK) p.oom = 1;
    if (!p.oom) rc = cp_reader_search(r, f, page_row, &p, &st);
    int failed = rc < 0 && !p.oom && !p.full;
    if (failed) http_reader_error(o, rc, "search", cp_reader_errmsg(r));
    http_pool_release(h, r, failed && rc != CP_EABORT);
    if (!failed && (p.oom || page_tail(&p, &st, &o->body) != CP_OK)) http_oom(o);
}

void http_api_calls(cp_http *h, struct MHD_Connection *conn, const http_args *a, http_out *o)
{
    http_query q;
    memset(&q, 0, sizeof q);
    if (http_check_args(a, calls_params, o) ||
        http_query_parse(h, a, HTTP_Q_PAGING | HTTP_Q_SORT | HTTP_Q_STREAM, &q, o)) {
        http_query_free(&q);
        return;
    }
    if (q.stream) {
        http_stream_start(h, conn, HTTP_STREAM_CALLS, &q, o);
        return;
    }
    cp_call_filter f;
    http_query_filter(h, &q, &f);
    http_calls_answer(h, &q, &f, o);
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

typedef struct one_ctx {
    cp_buf *out;
    const http_who *who;
} one_ctx;

/* A call of a namespace the asker may not see is left out: the id answers 404 (auth.c). */
static int one_call(void *ud, const cp_call *c)
{
    one_ctx *x = ud;
    if (!http_who_sees(x->who, c->ns ? c->ns : "", c->ns ? c->ns_len : 0)) return 0;
    return http_call_json(x->out, c) != CP_OK;
}

void http_api_call(cp_http *h, const http_args *a, const char *id, http_out *o)
{
    cp_call_ref ref;
    if (http_check_args(a, NULL, o) || parse_id(id, &ref, o)) return;
    cp_reader *r;
    if (http_reader_take(h, o, &r)) return;
    one_ctx x = {&o->body, a->who};
    int rc = cp_reader_get(r, &ref, 0, one_call, &x);
    int failed = rc < 0 && rc != CP_ENOTFOUND;
    if (rc == CP_ENOTFOUND) http_error(o, 404, "call_not_found", "no call with this id");
    else if (rc > 0) http_oom(o);
    else if (failed) http_reader_error(o, rc, "get", cp_reader_errmsg(r));
    else if (o->body.len == 0) http_error(o, 404, "call_not_found", "no call with this id");
    http_pool_release(h, r, failed);
}

/* ---- GET /calls/stats ----------------------------------------------------------------- */

/* The stats answer (docs/API.md): points in time order, totals, how it was computed. */
int http_stats_json(const cp_stats *s, const cp_stats_info *info, cp_buf *out)
{
    size_t cap = s->ncols * s->per_col;
    cp_stats_point *pts = malloc((cap ? cap : 1) * sizeof *pts);
    if (!pts) return CP_ENOMEM;
    size_t n;
    cp_stats_points(s, pts, &n);
    int bad = cp_buf_puts(out, "{\"points\":[") != CP_OK;
    for (size_t i = 0; i < n && !bad; i++) {
        cp_call_ref ref = {pts[i].p.ts_ms, pts[i].p.restart_ms, pts[i].p.trace_file_index, pts[i].p.buffer_offset,
                           pts[i].p.record_index, pts[i].pod_hash};
        char id[CP_CALL_ID_MAX];
        cp_call_id_format(&ref, id);
        bad |= cp_buf_printf(out, "%s{\"ts_ms\":%lld,\"duration_ms\":%ld,\"calls\":%ld,\"id\":\"%s\"}", i ? "," : "",
                             (long long)pts[i].p.ts_ms, (long)pts[i].p.duration_ms, (long)pts[i].p.calls, id) != CP_OK;
    }
    free(pts);
    const char *source = !info->scanned_calls && !info->scanned ? "rollup"
                         : !info->rollup_entries                  ? "scan"
                                                                  : "rollup+scan";
    bad |= cp_buf_printf(out,
                         "],\"total\":%llu,\"sampled\":%s,\"sum_duration_ms\":%lld,\"sum_suspend_ms\":%lld"
                         ",\"sum_queue_wait_ms\":%lld,\"sum_transactions\":%lld,\"column_ms\":%lld,\"source\":\"%s\""
                         ",\"rollup_entries\":%llu,\"scanned\":%llu,\"partial\":%s,\"partial_reasons\":[%s]}",
                         (unsigned long long)s->total, s->total > n ? "true" : "false", (long long)s->sum_duration,
                         (long long)s->sum_suspend, (long long)s->sum_queue, (long long)s->sum_transactions,
                         (long long)s->column_ms, source, (unsigned long long)info->rollup_entries,
                         (unsigned long long)info->scanned, info->partial ? "true" : "false",
                         info->partial ? "\"scan_budget\"" : "") != CP_OK;
    return bad ? CP_ENOMEM : CP_OK;
}

void http_stats_answer(cp_http *h, const http_query *q, const cp_call_filter *f, http_out *o)
{
    cp_reader *r = NULL;
    if (http_reader_take(h, o, &r)) return;
    cp_stats s;
    cp_stats_info info;
    int rc = cp_stats_run(r, f, q->columns, &s, &info);
    if (rc < 0) http_reader_error(o, rc, "stats", cp_reader_errmsg(r));
    http_pool_release(h, r, rc < 0 && rc != CP_EINVAL && rc != CP_EABORT);
    if (rc >= 0 && http_stats_json(&s, &info, &o->body) != CP_OK) http_oom(o);
    cp_stats_free(&s);
}

void http_api_stats(cp_http *h, struct MHD_Connection *conn, const http_args *a, http_out *o)
{
    http_query q;
    memset(&q, 0, sizeof q);
    if (http_check_args(a, stats_params, o) || http_query_parse(h, a, HTTP_Q_COLUMNS | HTTP_Q_STREAM, &q, o)) {
        http_query_free(&q);
        return;
    }
    if (q.stream) {
        http_stream_start(h, conn, HTTP_STREAM_STATS, &q, o);
        return;
    }
    cp_call_filter f;
    http_query_filter(h, &q, &f);
    http_stats_answer(h, &q, &f, o);
    http_query_free(&q);
}
