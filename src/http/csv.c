/* csv.c -- GET /api/v1/calls.csv: the calls of the filters as a streamed CSV download
 * (ui.md §3.11): UTF-8, ';' separator, a header row, values quoted when they contain
 * ';', '"', CR or LF (quotes doubled), one row per call in the requested sort order.
 *
 * The export pages through the reader with the keyset (HTTP_EXPORT_PAGE rows per query,
 * a pooled reader taken per page and given back), formatting one page at a time into a
 * buffer that MHD's content callback drains, so memory never holds more than a page.
 * It stops at cfg->max_export_rows rows, HTTP_EXPORT_MAX_MS or the scan budget and then
 * says so in a last line starting with "# truncated:". The first page is read before
 * the response starts, so a failing catalog still gets a JSON error; a failure later
 * aborts the transfer (the client sees an incomplete chunked body).
 */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

static const char *const csv_params[] = {"from", "to", "namespace", "service", "pod", "pods", "hide_system", "duration",
                                         "method", "q", "error", "sort", NULL};

static const char csv_header[] =
    "Start (UTC);Duration (ms);CPU (ms);Suspended (ms);Queue (ms);Calls;Transactions;Disk read (B);"
    "Disk written (B);Memory (B);Logs generated;Logs written (B);Net read (B);Net written (B);Namespace;"
    "Service;Pod;Method;Thread;Params (JSON);Id\n";

typedef struct csv_state {
    cp_http *h;
    http_query q;
    cp_sort_key after;        /* key of the last exported row */
    int has_after;
    cp_buf out;               /* formatted bytes not yet handed to MHD */
    size_t off;               /* of out, already handed over */
    uint64_t rows, scanned;
    uint64_t start_ns;
    int done;                 /* nothing more to fetch (the final line is in out) */
    int oom;
    int unavailable;          /* no reader could be had */
} csv_state;

/* Appends one field, quoted if needed, and the separator (or newline if last). */
static int csv_field(cp_buf *b, const char *s, size_t n, int last)
{
    int quote = 0;
    for (size_t i = 0; i < n && !quote; i++) quote = s[i] == ';' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
    int bad = 0;
    if (!quote) {
        bad |= cp_buf_append(b, s, n) != CP_OK;
    } else {
        bad |= cp_buf_putc(b, '"') != CP_OK;
        for (size_t i = 0; i < n; i++) {
            if (s[i] == '"') bad |= cp_buf_putc(b, '"') != CP_OK;
            bad |= cp_buf_putc(b, (uint8_t)s[i]) != CP_OK;
        }
        bad |= cp_buf_putc(b, '"') != CP_OK;
    }
    bad |= cp_buf_putc(b, last ? '\n' : ';') != CP_OK;
    return bad ? CP_ENOMEM : CP_OK;
}

/* "YYYY-MM-DD HH:mm:ss.SSS" in UTC. */
static void csv_time(int64_t ms, char out[40])
{
    int64_t sec = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
    time_t t = (time_t)sec;
    struct tm tm;
    if (!gmtime_r(&t, &tm)) {
        snprintf(out, 40, "%lld", (long long)ms);
        return;
    }
    snprintf(out, 40, "%04d-%02d-%02d %02d:%02d:%02d.%03d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
             tm.tm_min, tm.tm_sec, (int)(ms - sec * 1000));
}

static int csv_row(void *ud, const cp_call *c)
{
    csv_state *s = ud;
    char when[40], id[CP_CALL_ID_MAX];
    cp_call_ref ref;
    cp_call_ref_of(c, &ref);
    cp_call_id_format(&ref, id);
    csv_time(c->ts_ms, when);
    int bad = cp_buf_printf(&s->out, "%s;%ld;%lld;%ld;%ld;%ld;%lld;%lld;%lld;%lld;%ld;%ld;%lld;%lld;", when,
                            (long)c->duration_ms, (long long)c->cpu_time, (long)c->suspend_ms, (long)c->queue_wait_ms,
                            (long)c->calls, (long long)c->transactions, (long long)c->file_read,
                            (long long)c->file_written, (long long)c->memory_used, (long)c->logs_generated,
                            (long)c->logs_written, (long long)c->net_read, (long long)c->net_written) != CP_OK;
    bad |= csv_field(&s->out, c->ns ? c->ns : "", c->ns ? c->ns_len : 0, 0) != CP_OK;
    bad |= csv_field(&s->out, c->service ? c->service : "", c->service ? c->service_len : 0, 0) != CP_OK;
    bad |= csv_field(&s->out, c->pod ? c->pod : "", c->pod ? c->pod_len : 0, 0) != CP_OK;
    bad |= csv_field(&s->out, c->method ? c->method : "", c->method ? c->method_len : 0, 0) != CP_OK;
    bad |= csv_field(&s->out, c->thread ? c->thread : "", c->thread ? c->thread_len : 0, 0) != CP_OK;
    if (c->params_json && c->params_json_len)
        bad |= csv_field(&s->out, c->params_json, c->params_json_len, 0) != CP_OK;
    else
        bad |= csv_field(&s->out, "{}", 2, 0) != CP_OK;
    bad |= csv_field(&s->out, id, strlen(id), 1) != CP_OK;
    if (bad) {
        s->oom = 1;
        return 1;
    }
    s->rows++;
    cp_sort_key_of(c, s->q.sort, s->q.desc, &s->after);
    s->has_after = 1;
    return 0;
}

/* Ends the export, with a last line if it was cut short (why != NULL). */
static int csv_finish(csv_state *s, const char *why)
{
    s->done = 1;
    if (!why) return CP_OK;
    return cp_buf_printf(&s->out, "# truncated: %s after %llu rows; narrow the filters to export the rest\n", why,
                         (unsigned long long)s->rows);
}

/* Reads the next page into s->out. CP_OK, or the reader's error with err set. */
static int csv_page(csv_state *s, char *err, size_t errlen)
{
    const cp_http_config *cfg = s->h->cfg;
    uint64_t left = cfg->max_export_rows - s->rows;
    if (cfg->max_export_rows && s->rows >= cfg->max_export_rows) return csv_finish(s, "the row limit was reached");
    if (cp_mono_ns() - s->start_ns > (uint64_t)HTTP_EXPORT_MAX_MS * 1000000u)
        return csv_finish(s, "the time limit was reached");
    if (cfg->max_scan && s->scanned >= cfg->max_scan) return csv_finish(s, "the scan budget was reached");
    cp_call_filter f;
    http_query_filter(s->h, &s->q, &f);
    f.after = s->has_after ? &s->after : NULL;
    f.limit = !cfg->max_export_rows || left > HTTP_EXPORT_PAGE ? HTTP_EXPORT_PAGE : (size_t)left;
    f.max_scan = cfg->max_scan ? cfg->max_scan - s->scanned : 0;
    cp_search_stats st;
    memset(&st, 0, sizeof st);
    cp_reader *r;
    int rc = http_pool_acquire(s->h, &r, err, errlen);
    if (rc != CP_OK) {
        s->unavailable = 1;
        return rc;
    }
    uint64_t before = s->rows;
    rc = cp_reader_search(r, &f, csv_row, s, &st);
    int failed = rc < 0 && !s->oom;
    if (failed) snprintf(err, errlen, "%s", cp_reader_errmsg(r));
    http_pool_release(s->h, r, failed);
    if (s->oom) return CP_ENOMEM;
    if (failed) return rc;
    s->scanned += st.scanned;
    if (st.partial) return csv_finish(s, "the scan budget was reached");
    if (!st.more || s->rows == before) return csv_finish(s, NULL);
    if (cfg->max_export_rows && s->rows >= cfg->max_export_rows) return csv_finish(s, "the row limit was reached");
    return CP_OK;
}

/* MHD's content callback: hands out the buffered bytes, fetching pages as needed. */
static ssize_t csv_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    csv_state *s = cls;
    (void)pos;
    while (s->off == s->out.len) {
        if (s->done) return MHD_CONTENT_READER_END_OF_STREAM;
        cp_buf_reset(&s->out);
        s->off = 0;
        char err[256] = "";
        int rc = csv_page(s, err, sizeof err);
        if (rc != CP_OK) {
            http_log(s->h, HTTP_LOG_WARN, "http: csv export aborted after %llu rows: %s",
                     (unsigned long long)s->rows, err[0] ? err : cp_strstatus(rc));
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    size_t n = s->out.len - s->off;
    if (n > max) n = max;
    memcpy(buf, s->out.data + s->off, n);
    s->off += n;
    return (ssize_t)n;
}

static void csv_free(void *cls)
{
    csv_state *s = cls;
    http_query_free(&s->q);
    cp_buf_free(&s->out);
    free(s);
}

void http_api_csv(cp_http *h, const http_args *a, http_out *o)
{
    csv_state *s = calloc(1, sizeof *s);
    if (!s) {
        http_oom(o);
        return;
    }
    s->h = h;
    s->start_ns = cp_mono_ns();
    cp_buf_init(&s->out);
    if (http_check_args(a, csv_params, o) || http_query_parse(h, a, HTTP_Q_SORT, &s->q, o)) {
        csv_free(s);
        return;
    }
    char err[256] = "";
    int rc = cp_buf_puts(&s->out, csv_header);
    if (rc == CP_OK) rc = csv_page(s, err, sizeof err);
    if (rc != CP_OK) {
        if (s->unavailable) {
            http_error(o, 503, "unavailable", "catalog unavailable: %s", err);
            o->retry_after = 1;
        } else if (rc == CP_ENOMEM) {
            http_oom(o);
        } else {
            http_reader_error(o, rc, "search", err);
        }
        csv_free(s);
        return;
    }
    o->stream = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, csv_read, s, csv_free);
    if (!o->stream) {
        csv_free(s);
        http_oom(o);
        return;
    }
    o->content_type = "text/csv; charset=utf-8";
    snprintf(o->disposition, sizeof o->disposition, "attachment; filename=\"calls_%lld_%lld.csv\"",
             (long long)s->q.from_ms, (long long)s->q.to_ms);
}
