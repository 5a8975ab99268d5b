/* csv.c -- GET /api/v1/calls.csv: the calls of the filters as a streamed CSV download
 * (ui.md §3.11): UTF-8, ';' separator, a header row, values quoted when they contain
 * ';', '"', CR or LF (quotes doubled), one row per call in the requested sort order, and
 * a last line "# truncated: ..." when the export was cut short. The paging, limits and
 * errors are export.c's.
 */
#include "export.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

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

static int csv_begin(void *ctx, cp_buf *out)
{
    (void)ctx;
    int bad = 0;
    for (int i = 0; i < HTTP_XC_COUNT; i++) {
        const char *t = http_export_cols[i].title;
        bad |= csv_field(out, t, strlen(t), i == HTTP_XC_COUNT - 1) != CP_OK;
    }
    return bad ? CP_ENOMEM : CP_OK;
}

static int csv_row(void *ctx, const http_export_row *r, cp_buf *out)
{
    (void)ctx;
    int bad = 0;
    for (int i = 0; i < HTTP_XC_COUNT && !bad; i++) {
        int last = i == HTTP_XC_COUNT - 1;
        char v[40];
        switch (http_export_cols[i].kind) {
        case HTTP_XC_TIME:
            csv_time(r->num[i], v);
            bad = csv_field(out, v, strlen(v), last) != CP_OK;
            break;
        case HTTP_XC_INT:
            snprintf(v, sizeof v, "%lld", (long long)r->num[i]);
            bad = csv_field(out, v, strlen(v), last) != CP_OK;
            break;
        case HTTP_XC_TEXT:
            bad = csv_field(out, r->text[i], r->len[i], last) != CP_OK;
            break;
        }
    }
    return bad ? CP_ENOMEM : CP_OK;
}

static int csv_end(void *ctx, const char *note, cp_buf *out)
{
    (void)ctx;
    return note ? cp_buf_printf(out, "%s\n", note) : CP_OK;
}

static const http_export_fmt csv_fmt = {
    .ext = "csv",
    .content_type = "text/csv; charset=utf-8",
    .begin = csv_begin,
    .row = csv_row,
    .end = csv_end,
};

void http_api_csv(cp_http *h, const http_args *a, http_out *o) { http_export_start(h, a, &csv_fmt, NULL, o); }
