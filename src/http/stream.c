/* stream.c -- /calls and /calls/stats with stream=1 (docs/API.md "Streamed answers"): the
 * query runs on a query worker while the client reads NDJSON lines --
 *
 *   {"progress":{"files_done":..,"files_total":..,"windows_done":..,"windows_total":..,
 *                "scanned":..,"elapsed_ms":..}}     at the start, then at most every 250 ms
 *   {"calls":[Call,...]}                            /calls: the best rows so far (a snapshot
 *                                                   replacing the previous one), at most
 *                                                   every 500 ms
 *   {"progress":{"phase":"merge","merged":..,"to_merge":..,"nodes":..,"elapsed_ms":..}}
 *                                                   /profile, once its calls are found: the
 *                                                   merge, at most every 250 ms
 *   {"result":{...}}                                the answer without stream=1, last
 *   {"error":{"status":..,"error":"code","message":".."}}   instead, when it failed
 *
 * so a long cold query shows how far it is and what it found, and the client cancels it
 * by closing the connection.
 *
 * Threads. MHD's content callback hands over what the worker wrote; with nothing to hand
 * over it suspends the connection, and the worker resumes it when it adds a line (or
 * ends). When MHD is done with the response -- sent, or the client gone -- it frees it:
 * the stream is then cancelled, and the worker stops at its next progress report
 * (reports come at least every file, window or 64 k rows). The stream is freed by
 * whichever of the two lets go last. A suspended connection whose client left is only
 * noticed when it is resumed, which the next progress line does.
 *
 * Bounds: HTTP_MAX_STREAMS streamed queries queued or running at once (then 503); a
 * snapshot line holds at most the page's limit of rows; lines wait in memory only until
 * the client reads them, and progress lines are not added while earlier ones wait.
 */
#include "http_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HTTP_MAX_STREAMS 16
#define PROGRESS_EVERY_NS 250000000ULL
#define ROWS_EVERY_NS 500000000ULL

typedef struct http_stream {
    cp_http *h;
    struct MHD_Connection *conn;
    int kind;
    http_query q;
    pthread_mutex_t mu;
    cp_buf out;                 /* NDJSON lines; [off, len) not handed to MHD yet */
    size_t off;
    int done;                   /* the worker added its last line */
    int suspended;              /* the connection waits for a line */
    int gone;                   /* MHD freed the response: the client is gone or served */
    int refs;                   /* the worker and the response */
    uint64_t t0, last_progress, last_rows;
    cp_buf line;                /* the worker's line being built */
} http_stream;

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void stream_unref(http_stream *s)
{
    pthread_mutex_lock(&s->mu);
    int last = --s->refs == 0;
    pthread_mutex_unlock(&s->mu);
    if (!last) return;
    cp_http *h = s->h;
    http_query_free(&s->q);
    cp_buf_free(&s->out);
    cp_buf_free(&s->line);
    pthread_mutex_destroy(&s->mu);
    free(s);
    pthread_mutex_lock(&h->streams_mu);
    h->streams--;
    pthread_mutex_unlock(&h->streams_mu);
}

/* Hands the line being built to the client (a newline is added). end: the last one. */
static void stream_emit(http_stream *s, int end)
{
    pthread_mutex_lock(&s->mu);
    if (!s->gone) {
        if (s->off == s->out.len) { /* all sent: start over */
            cp_buf_reset(&s->out);
            s->off = 0;
        }
        if (cp_buf_append(&s->out, s->line.data, s->line.len) != CP_OK || cp_buf_putc(&s->out, '\n') != CP_OK) {
            /* out of memory: the client gets a cut stream, which it reports */
            s->out.len = s->off;
            end = 1;
        }
        if (end) s->done = 1;
        if (s->suspended) {
            s->suspended = 0;
            MHD_resume_connection(s->conn);
        }
    }
    pthread_mutex_unlock(&s->mu);
    cp_buf_reset(&s->line);
}

/* 1 if lines still wait for the client (a new progress line can wait too). */
static int stream_backlog(http_stream *s)
{
    pthread_mutex_lock(&s->mu);
    int b = s->off < s->out.len;
    pthread_mutex_unlock(&s->mu);
    return b;
}

static int stream_cancelled(http_stream *s)
{
    pthread_mutex_lock(&s->mu);
    int gone = s->gone;
    pthread_mutex_unlock(&s->mu);
    return gone || s->h->stopping;
}

static int progress_line(http_stream *s, const cp_progress *p)
{
    return cp_buf_printf(&s->line,
                         "{\"progress\":{\"files_done\":%zu,\"files_total\":%zu,\"windows_done\":%zu,"
                         "\"windows_total\":%zu,\"scanned\":%llu,\"elapsed_ms\":%llu}}",
                         p->files_done, p->files_total, p->windows_done, p->windows_total,
                         (unsigned long long)p->scanned, (unsigned long long)((now_ns() - s->t0) / 1000000));
}

typedef struct rows_ctx {
    cp_buf *b;
    size_t n;
    int bad;
} rows_ctx;

static int snapshot_row(void *ud, const cp_call *c)
{
    rows_ctx *k = ud;
    if ((k->n++ && cp_buf_putc(k->b, ',') != CP_OK) || http_call_json(k->b, c) != CP_OK) {
        k->bad = 1;
        return 1;
    }
    return 0;
}

/* The filter's progress callback: lines for the client, and cancellation. */
static int on_progress(void *ud, const cp_progress *p)
{
    http_stream *s = ud;
    if (stream_cancelled(s)) return 1;
    uint64_t now = now_ns();
    if (now - s->last_progress >= PROGRESS_EVERY_NS && !stream_backlog(s)) {
        s->last_progress = now;
        if (progress_line(s, p) == CP_OK) stream_emit(s, 0);
        else cp_buf_reset(&s->line);
    }
    if (p->rows && s->kind != HTTP_STREAM_PROFILE && now - s->last_rows >= ROWS_EVERY_NS && !stream_backlog(s)) {
        s->last_rows = now;
        rows_ctx k = {&s->line, 0, 0};
        if (cp_buf_puts(&s->line, "{\"calls\":[") != CP_OK) k.bad = 1;
        if (!k.bad) p->rows(p->rows_ctx, snapshot_row, &k);
        if (!k.bad && k.n && cp_buf_puts(&s->line, "]}") == CP_OK) stream_emit(s, 0);
        else cp_buf_reset(&s->line);
    }
    return 0;
}

/* The profile's merge: a progress line at most every 250 ms, and cancellation. */
static int on_merge(void *ud, size_t merged, size_t to_merge, size_t nodes)
{
    http_stream *s = ud;
    if (stream_cancelled(s)) return 1;
    uint64_t now = now_ns();
    /* the first report always goes out (one line): the client learns how many calls merge */
    if (merged && (now - s->last_progress < PROGRESS_EVERY_NS || stream_backlog(s))) return 0;
    s->last_progress = now;
    if (cp_buf_printf(&s->line,
                      "{\"progress\":{\"phase\":\"merge\",\"merged\":%zu,\"to_merge\":%zu,\"nodes\":%zu,"
                      "\"elapsed_ms\":%llu}}",
                      merged, to_merge, nodes, (unsigned long long)((now - s->t0) / 1000000)) == CP_OK)
        stream_emit(s, 0);
    else
        cp_buf_reset(&s->line);
    return 0;
}

/* The answer's line: {"result":body} or {"error":{...}}. */
static void final_line(http_stream *s, http_out *o)
{
    cp_buf_reset(&s->line);
    int st;
    if (o->status == 200 && !o->json) {
        st = cp_buf_puts(&s->line, "{\"result\":");
        if (st == CP_OK) st = cp_buf_append(&s->line, o->body.data, o->body.len);
        if (st == CP_OK) st = cp_buf_putc(&s->line, '}');
    } else {
        const char *code = o->json ? json_string_value(json_object_get(o->json, "code")) : NULL;
        const char *msg = o->json ? json_string_value(json_object_get(o->json, "error")) : NULL;
        if (!code) code = "internal";
        if (!msg) msg = "the query failed";
        st = cp_buf_printf(&s->line, "{\"error\":{\"status\":%u,\"error\":", o->status);
        if (st == CP_OK) st = cp_json_str(&s->line, code, strlen(code));
        if (st == CP_OK) st = cp_buf_puts(&s->line, ",\"message\":");
        if (st == CP_OK) st = cp_json_str(&s->line, msg, strlen(msg));
        if (st == CP_OK) st = cp_buf_puts(&s->line, "}}");
    }
    if (st != CP_OK) { /* a fixed line needs no memory of ours */
        cp_buf_reset(&s->line);
        static const char oom[] = "{\"error\":{\"status\":503,\"error\":\"overloaded\",\"message\":\"out of memory\"}}";
        if (cp_buf_append(&s->line, oom, sizeof oom - 1) != CP_OK) return;
    }
    stream_emit(s, 1);
}

static void stream_run(void *arg)
{
    http_stream *s = arg;
    http_out o;
    memset(&o, 0, sizeof o);
    o.status = 200;
    cp_buf_init(&o.body);
    if (stream_cancelled(s)) {
        http_error(&o, 503, "cancelled", "the query was cancelled");
    } else {
        cp_progress p0;
        memset(&p0, 0, sizeof p0);
        if (progress_line(s, &p0) == CP_OK) stream_emit(s, 0);
        cp_call_filter f;
        http_query_filter(s->h, &s->q, &f);
        f.progress = on_progress;
        f.progress_ud = s;
        if (s->kind == HTTP_STREAM_CALLS) http_calls_answer(s->h, &s->q, &f, &o);
        else if (s->kind == HTTP_STREAM_PROFILE) http_profile_answer(s->h, &s->q, &f, on_merge, s, &o);
        else http_stats_answer(s->h, &s->q, &f, &o);
    }
    final_line(s, &o);
    cp_buf_free(&o.body);
    if (o.json) json_decref(o.json);
    stream_unref(s);
}

/* MHD's content callback. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    http_stream *s = cls;
    ssize_t n;
    pthread_mutex_lock(&s->mu);
    size_t avail = s->out.len - s->off;
    if (avail) {
        n = (ssize_t)(avail < max ? avail : max);
        memcpy(buf, s->out.data + s->off, (size_t)n);
        s->off += (size_t)n;
    } else if (s->done) {
        n = MHD_CONTENT_READER_END_OF_STREAM;
    } else { /* nothing yet: wait for the worker's next line */
        s->suspended = 1;
        MHD_suspend_connection(s->conn);
        n = 0;
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* MHD is done with the response (sent, or the client went away). */
static void stream_free(void *cls)
{
    http_stream *s = cls;
    pthread_mutex_lock(&s->mu);
    s->gone = 1;
    s->suspended = 0;
    pthread_mutex_unlock(&s->mu);
    stream_unref(s);
}

void http_stream_start(cp_http *h, struct MHD_Connection *conn, int kind, http_query *q, http_out *o)
{
    pthread_mutex_lock(&h->streams_mu);
    int full = h->streams >= HTTP_MAX_STREAMS;
    if (!full) h->streams++;
    pthread_mutex_unlock(&h->streams_mu);
    if (full) {
        http_error(o, 503, "overloaded", "too many streamed queries at once (%d)", HTTP_MAX_STREAMS);
        o->retry_after = 2;
        http_query_free(q);
        return;
    }
    http_stream *s = calloc(1, sizeof *s);
    if (!s) {
        pthread_mutex_lock(&h->streams_mu);
        h->streams--;
        pthread_mutex_unlock(&h->streams_mu);
        http_oom(o);
        http_query_free(q);
        return;
    }
    s->h = h;
    s->conn = conn;
    s->kind = kind;
    s->q = *q; /* taken over: its strings now belong to the stream */
    memset(q, 0, sizeof *q);
    /* the predicate's pointers lead into the query itself: set them up again in place */
    s->q.match.search = s->q.search;
    s->q.match.pods = s->q.pods;
    s->q.sel.pods = s->q.npods ? s->q.pods : NULL;
    pthread_mutex_init(&s->mu, NULL);
    cp_buf_init(&s->out);
    cp_buf_init(&s->line);
    s->refs = 2;
    s->t0 = now_ns();
    o->stream = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, s, stream_free);
    if (!o->stream) {
        s->refs = 1;
        stream_unref(s);
        http_oom(o);
        return;
    }
    o->content_type = "application/x-ndjson; charset=utf-8";
    if (http_queries_submit(h, stream_run, s) != CP_OK) {
        /* the server is stopping: the response says so and ends */
        pthread_mutex_lock(&s->mu);
        s->refs--;
        pthread_mutex_unlock(&s->mu);
        http_out e;
        memset(&e, 0, sizeof e);
        cp_buf_init(&e.body);
        http_error(&e, 503, "unavailable", "the server is stopping");
        final_line(s, &e);
        cp_buf_free(&e.body);
        if (e.json) json_decref(e.json);
    }
}
