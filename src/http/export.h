/* export.h -- the streamed calls exports (GET /calls.csv, /calls.xlsx; ui.md §3.11): one
 * paging loop (export.c) over the reader for every file format, which only formats rows.
 * Private to the HTTP layer.
 */
#ifndef CP_HTTP_EXPORT_H
#define CP_HTTP_EXPORT_H

#include "http_internal.h"

/* The columns of every export, in order (docs/API.md "GET /api/v1/calls.csv"). */
enum {
    HTTP_XC_START,
    HTTP_XC_DURATION,
    HTTP_XC_CPU,
    HTTP_XC_SUSPENDED,
    HTTP_XC_QUEUE,
    HTTP_XC_CALLS,
    HTTP_XC_TRANSACTIONS,
    HTTP_XC_DISK_READ,
    HTTP_XC_DISK_WRITTEN,
    HTTP_XC_MEMORY,
    HTTP_XC_LOGS_GENERATED,
    HTTP_XC_LOGS_WRITTEN,
    HTTP_XC_NET_READ,
    HTTP_XC_NET_WRITTEN,
    HTTP_XC_NAMESPACE,
    HTTP_XC_SERVICE,
    HTTP_XC_POD,
    HTTP_XC_METHOD,
    HTTP_XC_THREAD,
    HTTP_XC_TITLE,
    HTTP_XC_PARAMS,
    HTTP_XC_ID,
    HTTP_XC_COUNT
};

typedef enum http_xc_kind {
    HTTP_XC_TIME,  /* num: epoch ms, shown as the UTC date and time */
    HTTP_XC_INT,   /* num */
    HTTP_XC_TEXT,  /* text, len (UTF-8) */
} http_xc_kind;

typedef struct http_xc {
    const char *title;           /* the header row's text */
    http_xc_kind kind;
} http_xc;

extern const http_xc http_export_cols[HTTP_XC_COUNT];

/* One call's cells, by column. */
typedef struct http_export_row {
    int64_t num[HTTP_XC_COUNT];
    const char *text[HTTP_XC_COUNT]; /* into the call (valid while its callback runs) or id */
    size_t len[HTTP_XC_COUNT];
    char id[CP_CALL_ID_MAX];
} http_export_row;

/* A file format: callbacks that write into out, the buffer MHD is handed bytes from (the
 * same buffer on every call of one export). Each returns CP_OK or an error; CP_ELIMIT
 * from row means the file is full: that row is not in it and the export ends there, cut
 * short with full_why. */
typedef struct http_export_fmt {
    const char *ext;             /* file name extension: calls_<from>_<to>.<ext> */
    const char *content_type;
    uint64_t max_rows;           /* rows the format can hold (0 = any); the smaller of this
                                  * and max_export_rows applies */
    const char *full_why;        /* the truncation reason for a full file */
    int (*begin)(void *ctx, cp_buf *out);     /* what comes before the first row */
    int (*row)(void *ctx, const http_export_row *r, cp_buf *out);
    /* The last bytes. note: NULL when every row was exported, else the line that says
     * why not ("# truncated: <why> after N rows; ..."), to be shown as the last row. */
    int (*end)(void *ctx, const char *note, cp_buf *out);
    void (*free)(void *ctx);     /* may be NULL */
} http_export_fmt;

/* Answers an export: parses the calls.csv parameters, writes the format's begin and the
 * first page (errors up to there are the usual JSON errors), then sets o->stream to the
 * chunked download. ctx belongs to the export from here on (fmt->free'd in every case). */
void http_export_start(cp_http *h, const http_args *a, const http_export_fmt *fmt, void *ctx, http_out *o);

#endif
