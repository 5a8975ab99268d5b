/* xlsx.c -- GET /api/v1/calls.xlsx: the calls of the filters as a streamed Excel workbook
 * (ui.md §3.11): one sheet, a bold header row kept in view, then one row per call in the
 * requested order. The columns are the CSV's (export.h) behind a first "Link" column: a
 * hyperlink labelled "details" to the call's tree page. Start is a date cell (UTC),
 * numbers are numbers, text is text (cp_xlsxw.h). A cut-short export ends with a row
 * holding the "# truncated: ..." text. Paging, limits and errors are export.c's.
 */
#include "export.h"
#include "http/cp_xlsxw.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XLSX_LINK_LABEL "details"
#define XLSX_BASE_MAX 200           /* the links' base URL: the rest of the link fits a formula */
/* The sheet's XML stops below what a classic zip entry holds (4 GiB), with room for the
 * largest row (a few text cells of 32 767 characters, each up to 6 bytes escaped). */
#define XLSX_MAX_SHEET_BYTES ((4ull << 30) - (64ull << 20))

typedef struct xlsx_ctx {
    cp_xlsxw *w;
    cp_buf *out;                    /* the export's buffer, which the zip's bytes go to */
    char base[XLSX_BASE_MAX + 1];   /* "http://host:port" of the tree links; "" = labels only */
} xlsx_ctx;

/* Column widths in characters: Link, then the export's columns. */
static const double xlsx_widths[1 + HTTP_XC_COUNT] = {
    8,                                     /* Link */
    23,                                    /* Start: yyyy-mm-dd hh:mm:ss.000 */
    13, 10, 14, 10, 8, 12, 13, 16, 13,     /* Duration .. Memory */
    14, 15, 13, 14,                        /* Logs generated .. Net written */
    16, 20, 32, 60, 24, 40, 40,            /* Namespace .. Id */
};

static int xlsx_sink(void *ud, const void *p, size_t n)
{
    xlsx_ctx *x = ud;
    return cp_buf_append(x->out, p, n);
}

static int xlsx_begin(void *ctx, cp_buf *out)
{
    xlsx_ctx *x = ctx;
    x->out = out;
    cp_xlsx_sheet sh = {.name = "Calls",
                        .widths = xlsx_widths,
                        .ncols = 1 + HTTP_XC_COUNT,
                        .frozen_rows = 1,
                        .mtime_ms = cp_now_ms()};
    int st = cp_xlsxw_new(xlsx_sink, x, &sh, &x->w);
    if (st == CP_OK) st = cp_xlsxw_row(x->w);
    if (st == CP_OK) st = cp_xlsxw_text(x->w, "Link", 4, CP_XLSX_BOLD);
    for (int i = 0; i < HTTP_XC_COUNT && st == CP_OK; i++)
        st = cp_xlsxw_text(x->w, http_export_cols[i].title, strlen(http_export_cols[i].title), CP_XLSX_BOLD);
    return st;
}

/* The Link cell: the tree page of the call (the UI's /tree?call=ID&ts=MS, as its list
 * links), absolute since a spreadsheet has no page to be relative to. */
static int xlsx_link(xlsx_ctx *x, const http_export_row *r)
{
    if (!x->base[0]) return cp_xlsxw_text(x->w, XLSX_LINK_LABEL, strlen(XLSX_LINK_LABEL), CP_XLSX_PLAIN);
    char url[XLSX_BASE_MAX + CP_CALL_ID_MAX + 48];
    snprintf(url, sizeof url, "%s/tree?call=%s&ts=%lld", x->base, r->id, (long long)r->num[HTTP_XC_START]);
    return cp_xlsxw_link(x->w, url, XLSX_LINK_LABEL);
}

static int xlsx_row(void *ctx, const http_export_row *r, cp_buf *out)
{
    xlsx_ctx *x = ctx;
    (void)out;
    if (cp_xlsxw_sheet_bytes(x->w) >= XLSX_MAX_SHEET_BYTES) return CP_ELIMIT;
    int st = cp_xlsxw_row(x->w);
    if (st == CP_OK) st = xlsx_link(x, r);
    for (int i = 0; i < HTTP_XC_COUNT && st == CP_OK; i++) {
        switch (http_export_cols[i].kind) {
        case HTTP_XC_TIME: st = cp_xlsxw_date(x->w, r->num[i]); break;
        case HTTP_XC_INT: st = cp_xlsxw_number(x->w, r->num[i]); break;
        case HTTP_XC_TEXT: st = cp_xlsxw_text(x->w, r->text[i], r->len[i], CP_XLSX_PLAIN); break;
        }
    }
    /* CP_ELIMIT from the writer would be a broken workbook, not a full one */
    return st == CP_ELIMIT ? CP_EIO : st;
}

static int xlsx_end(void *ctx, const char *note, cp_buf *out)
{
    xlsx_ctx *x = ctx;
    (void)out;
    int st = CP_OK;
    if (note) {
        st = cp_xlsxw_row(x->w);
        if (st == CP_OK) st = cp_xlsxw_text(x->w, note, strlen(note), CP_XLSX_PLAIN);
    }
    return st == CP_OK ? cp_xlsxw_finish(x->w) : st;
}

static void xlsx_free(void *ctx)
{
    xlsx_ctx *x = ctx;
    cp_xlsxw_free(x->w);
    free(x);
}

static const http_export_fmt xlsx_fmt = {
    .ext = "xlsx",
    .content_type = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    .max_rows = CP_XLSX_MAX_ROWS - 2, /* the header and a truncation note */
    .full_why = "the XLSX size limit (4 GiB) was reached",
    .begin = xlsx_begin,
    .row = xlsx_row,
    .end = xlsx_end,
    .free = xlsx_free,
};

/* A Host header that can go into a URL as it is: host[:port], an IPv6 literal in brackets. */
static int host_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 1 || n > XLSX_BASE_MAX - 8) return 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || strchr(".-_~:[]", c)))
            return 0;
    }
    return 1;
}

/* The server's URL as its users reach it, for the tree links: --public-url, else the
 * scheme and the Host header the client addressed. "" when neither is usable (the Link
 * cells are then plain labels). */
static void link_base(const cp_http *h, struct MHD_Connection *conn, char out[XLSX_BASE_MAX + 1])
{
    out[0] = 0;
    const char *pub = h->cfg->public_url;
    if (pub && *pub) {
        size_t n = strlen(pub);
        while (n && pub[n - 1] == '/') n--;
        int ok = n <= XLSX_BASE_MAX && (!strncmp(pub, "http://", 7) || !strncmp(pub, "https://", 8));
        for (size_t i = 0; ok && i < n; i++) ok = pub[i] > 0x20 && pub[i] < 0x7f && pub[i] != '"';
        if (ok) {
            memcpy(out, pub, n);
            out[n] = 0;
        }
        return;
    }
    const char *host = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_HOST);
    if (host && host_ok(host))
        snprintf(out, XLSX_BASE_MAX + 1, "%s://%s", h->cfg->tls_cert_file ? "https" : "http", host);
}

void http_api_xlsx(cp_http *h, struct MHD_Connection *conn, const http_args *a, http_out *o)
{
    xlsx_ctx *x = calloc(1, sizeof *x);
    if (!x) {
        http_oom(o);
        return;
    }
    link_base(h, conn, x->base);
    http_export_start(h, a, &xlsx_fmt, x, o);
}
