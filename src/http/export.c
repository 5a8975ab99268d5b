/* export.c -- the streamed calls exports (ui.md §3.11): GET /calls.csv and /calls.xlsx
 * share this loop and differ only in how a row is written (export.h).
 *
 * The export pages through the reader with the keyset (HTTP_EXPORT_PAGE rows per query,
 * a pooled reader taken per page and given back), formatting one page at a time into a
 * buffer that MHD's content callback drains, so memory never holds more than a page.
 * It stops at cfg->max_export_rows rows (or what the format can hold), HTTP_EXPORT_MAX_MS,
 * the scan budget or a full file, and then says so in a last row starting with
 * "# truncated:". The format's start and the first page are written before the response
 * starts, so a failing catalog still gets a JSON error; a failure later aborts the
 * transfer (the client sees an incomplete chunked body, not a short file).
 */
#include "export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static const char *const export_params[] = {"from", "to", "namespace", "service", "pod", "pods", "hide_system",
                                            "duration", "method", "q", "error", "sort", NULL};

const http_xc http_export_cols[HTTP_XC_COUNT] = {
    [HTTP_XC_START] = {"Start (UTC)", HTTP_XC_TIME},
    [HTTP_XC_DURATION] = {"Duration (ms)", HTTP_XC_INT},
    [HTTP_XC_CPU] = {"CPU (ms)", HTTP_XC_INT},
    [HTTP_XC_SUSPENDED] = {"Suspended (ms)", HTTP_XC_INT},
    [HTTP_XC_QUEUE] = {"Queue (ms)", HTTP_XC_INT},
    [HTTP_XC_CALLS] = {"Calls", HTTP_XC_INT},
    [HTTP_XC_TRANSACTIONS] = {"Transactions", HTTP_XC_INT},
    [HTTP_XC_DISK_READ] = {"Disk read (B)", HTTP_XC_INT},
    [HTTP_XC_DISK_WRITTEN] = {"Disk written (B)", HTTP_XC_INT},
    [HTTP_XC_MEMORY] = {"Memory (B)", HTTP_XC_INT},
    [HTTP_XC_LOGS_GENERATED] = {"Logs generated", HTTP_XC_INT},
    [HTTP_XC_LOGS_WRITTEN] = {"Logs written (B)", HTTP_XC_INT},
    [HTTP_XC_NET_READ] = {"Net read (B)", HTTP_XC_INT},
    [HTTP_XC_NET_WRITTEN] = {"Net written (B)", HTTP_XC_INT},
    [HTTP_XC_NAMESPACE] = {"Namespace", HTTP_XC_TEXT},
    [HTTP_XC_SERVICE] = {"Service", HTTP_XC_TEXT},
    [HTTP_XC_POD] = {"Pod", HTTP_XC_TEXT},
    [HTTP_XC_METHOD] = {"Method", HTTP_XC_TEXT},
    [HTTP_XC_THREAD] = {"Thread", HTTP_XC_TEXT},
    [HTTP_XC_TITLE] = {"Title", HTTP_XC_TEXT},
    [HTTP_XC_PARAMS] = {"Params (JSON)", HTTP_XC_TEXT},
    [HTTP_XC_ID] = {"Id", HTTP_XC_TEXT},
};

typedef struct http_export {
    cp_http *h;
    http_query q;
    const http_export_fmt *fmt;
    void *ctx;                /* the format's */
    cp_sort_key after;        /* key of the last exported row */
    int has_after;
    cp_buf out;               /* formatted bytes not yet handed to MHD */
    cp_buf title;             /* the row's Title, built for each row */
    size_t off;               /* of out, already handed over */
    uint64_t rows, scanned;
    uint64_t max_rows;        /* 0 = no cap */
    uint64_t start_ns;
    int done;                 /* nothing more to fetch (the end is in out) */
    int row_err;              /* the format failed on a row (CP_ELIMIT: the file is full) */
    int unavailable;          /* no reader could be had */
    int64_t audit_id;         /* its audit log entry (audit.c); 0 = none */
    uint64_t sent;            /* bytes handed to MHD */
    const char *cut;          /* why it was cut short; NULL = it was not */
} http_export;

static void set_text(http_export_row *r, int col, const char *s, size_t n)
{
    r->text[col] = s ? s : "";
    r->len[col] = s ? n : 0;
}

/* The cells of a call (title: the buffer its Title is built in). CP_OK or CP_ENOMEM. */
static int row_of(const cp_call *c, http_export_row *r, cp_buf *title)
{
    memset(r->num, 0, sizeof r->num);
    r->num[HTTP_XC_START] = c->ts_ms;
    r->num[HTTP_XC_DURATION] = c->duration_ms;
    r->num[HTTP_XC_CPU] = c->cpu_time;
    r->num[HTTP_XC_SUSPENDED] = c->suspend_ms;
    r->num[HTTP_XC_QUEUE] = c->queue_wait_ms;
    r->num[HTTP_XC_CALLS] = c->calls;
    r->num[HTTP_XC_TRANSACTIONS] = c->transactions;
    r->num[HTTP_XC_DISK_READ] = c->file_read;
    r->num[HTTP_XC_DISK_WRITTEN] = c->file_written;
    r->num[HTTP_XC_MEMORY] = c->memory_used;
    r->num[HTTP_XC_LOGS_GENERATED] = c->logs_generated;
    r->num[HTTP_XC_LOGS_WRITTEN] = c->logs_written;
    r->num[HTTP_XC_NET_READ] = c->net_read;
    r->num[HTTP_XC_NET_WRITTEN] = c->net_written;
    set_text(r, HTTP_XC_NAMESPACE, c->ns, c->ns_len);
    set_text(r, HTTP_XC_SERVICE, c->service, c->service_len);
    set_text(r, HTTP_XC_POD, c->pod, c->pod_len);
    set_text(r, HTTP_XC_METHOD, c->method, c->method_len);
    set_text(r, HTTP_XC_THREAD, c->thread, c->thread_len);
    if (http_call_title(c, title) != CP_OK) return CP_ENOMEM;
    set_text(r, HTTP_XC_TITLE, (const char *)title->data, title->len);
    if (c->params_json && c->params_json_len) set_text(r, HTTP_XC_PARAMS, c->params_json, c->params_json_len);
    else set_text(r, HTTP_XC_PARAMS, "{}", 2);
    cp_call_ref ref;
    cp_call_ref_of(c, &ref);
    cp_call_id_format(&ref, r->id);
    set_text(r, HTTP_XC_ID, r->id, strlen(r->id));
    return CP_OK;
}

static int export_row(void *ud, const cp_call *c)
{
    http_export *x = ud;
    http_export_row r;
    int st = row_of(c, &r, &x->title);
    if (st == CP_OK) st = x->fmt->row(x->ctx, &r, &x->out);
    if (st != CP_OK) {
        x->row_err = st;
        return 1; /* stops the search */
    }
    x->rows++;
    cp_sort_key_of(c, x->q.sort, x->q.desc, &x->after);
    x->has_after = 1;
    return 0;
}

/* Ends the export: the format's end, with the truncation note if it was cut short
 * (why != NULL). */
static int export_finish(http_export *x, const char *why)
{
    x->done = 1;
    x->cut = why;
    char note[256];
    if (why)
        snprintf(note, sizeof note, "# truncated: %s after %llu rows; narrow the filters to export the rest", why,
                 (unsigned long long)x->rows);
    return x->fmt->end(x->ctx, why ? note : NULL, &x->out);
}

/* Reads the next page into x->out. CP_OK, or an error (the reader's with err set). */
static int export_page(http_export *x, char *err, size_t errlen)
{
    const cp_http_config *cfg = x->h->cfg;
    if (x->max_rows && x->rows >= x->max_rows) return export_finish(x, "the row limit was reached");
    if (cp_mono_ns() - x->start_ns > (uint64_t)HTTP_EXPORT_MAX_MS * 1000000u)
        return export_finish(x, "the time limit was reached");
    if (cfg->max_scan && x->scanned >= cfg->max_scan) return export_finish(x, "the scan budget was reached");
    uint64_t left = x->max_rows - x->rows;
    cp_call_filter f;
    http_query_filter(x->h, &x->q, &f);
    f.after = x->has_after ? &x->after : NULL;
    f.limit = !x->max_rows || left > HTTP_EXPORT_PAGE ? HTTP_EXPORT_PAGE : (size_t)left;
    f.max_scan = cfg->max_scan ? cfg->max_scan - x->scanned : 0;
    cp_search_stats st;
    memset(&st, 0, sizeof st);
    cp_reader *r;
    int rc = http_pool_acquire(x->h, &r, err, errlen);
    if (rc != CP_OK) {
        x->unavailable = 1;
        return rc;
    }
    uint64_t before = x->rows;
    rc = cp_reader_search(r, &f, export_row, x, &st);
    int failed = rc < 0 && !x->row_err;
    if (failed) snprintf(err, errlen, "%s", cp_reader_errmsg(r));
    http_pool_release(x->h, r, failed);
    if (x->row_err == CP_ELIMIT) return export_finish(x, x->fmt->full_why);
    if (x->row_err) return x->row_err;
    if (failed) return rc;
    x->scanned += st.scanned;
    if (st.partial) return export_finish(x, "the scan budget was reached");
    if (!st.more || x->rows == before) return export_finish(x, NULL);
    if (x->max_rows && x->rows >= x->max_rows) return export_finish(x, "the row limit was reached");
    return CP_OK;
}

/* MHD's content callback: hands out the buffered bytes, fetching pages as needed. */
static ssize_t export_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    http_export *x = cls;
    (void)pos;
    while (x->off == x->out.len) {
        if (x->done) return MHD_CONTENT_READER_END_OF_STREAM;
        cp_buf_reset(&x->out);
        x->off = 0;
        char err[256] = "";
        int rc = export_page(x, err, sizeof err);
        if (rc != CP_OK) {
            http_log(x->h, HTTP_LOG_WARN, "http: %s export aborted after %llu rows: %s", x->fmt->ext,
                     (unsigned long long)x->rows, err[0] ? err : cp_strstatus(rc));
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
    }
    size_t n = x->out.len - x->off;
    if (n > max) n = max;
    memcpy(buf, x->out.data + x->off, n);
    x->off += n;
    x->sent += n;
    return (ssize_t)n;
}

static void export_free(void *cls)
{
    http_export *x = cls;
    /* the entry learns how it ended: rows, bytes, whether the client took all of it */
    http_audit_export_end(x->h, x->audit_id, x->rows, x->sent, x->done && x->off == x->out.len, x->cut);
    if (x->fmt->free) x->fmt->free(x->ctx);
    http_query_free(&x->q);
    cp_buf_free(&x->out);
    cp_buf_free(&x->title);
    free(x);
}

/* The smaller of two caps where 0 means none. */
static uint64_t cap_min(uint64_t a, uint64_t b) { return !a ? b : !b ? a : a < b ? a : b; }

void http_export_start(cp_http *h, const http_args *a, const http_export_fmt *fmt, void *ctx, http_out *o)
{
    http_export *x = calloc(1, sizeof *x);
    if (!x) {
        if (fmt->free) fmt->free(ctx);
        http_oom(o);
        return;
    }
    x->h = h;
    x->fmt = fmt;
    x->ctx = ctx;
    x->start_ns = cp_mono_ns();
    x->max_rows = cap_min(h->cfg->max_export_rows, fmt->max_rows);
    cp_buf_init(&x->out);
    cp_buf_init(&x->title);
    if (http_check_args(a, export_params, o) || http_query_parse(h, a, HTTP_Q_SORT, &x->q, o)) {
        export_free(x);
        return;
    }
    char err[256] = "";
    int rc = fmt->begin(ctx, &x->out);
    if (rc == CP_OK) rc = export_page(x, err, sizeof err);
    if (rc != CP_OK) {
        if (x->unavailable) {
            http_error(o, 503, "unavailable", "catalog unavailable: %s", err);
            o->retry_after = 1;
        } else if (rc == CP_ENOMEM) {
            http_oom(o);
        } else {
            http_reader_error(o, rc, err[0] ? "search" : "export", err);
        }
        http_audit_export_start(h, a, fmt->ext, o->status);
        export_free(x);
        return;
    }
    x->audit_id = http_audit_export_start(h, a, fmt->ext, 200); /* before any row leaves */
    o->stream = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, export_read, x, export_free);
    if (!o->stream) {
        export_free(x);
        http_oom(o);
        return;
    }
    o->content_type = fmt->content_type;
    snprintf(o->disposition, sizeof o->disposition, "attachment; filename=\"calls_%lld_%lld.%s\"",
             (long long)x->q.from_ms, (long long)x->q.to_ms, fmt->ext);
}
