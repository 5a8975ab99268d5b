/* http_internal.h -- what the files of the HTTP layer share: the server object and its
 * reader pool, a request's query-string arguments, the response being built, and the
 * parsed calls query (filters + sort + paging) used by /calls, /calls.csv and
 * /calls/stats. Not part of the layer's public interface (cp_http.h).
 */
#ifndef CP_HTTP_INTERNAL_H
#define CP_HTTP_INTERNAL_H

#include "common/cp_metrics.h"
#include "http/cp_http.h"
#include "query/cp_query.h"
#include "query/cp_rollup.h"
#include "store/cp_stats.h"

#include <jansson.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdarg.h>

/* Log levels of cfg->log (the same numbers as the server's CP_LOG_*). */
enum { HTTP_LOG_ERROR = 0, HTTP_LOG_WARN = 1, HTTP_LOG_INFO = 2, HTTP_LOG_DEBUG = 3 };

/* Bounds on what a client can send. */
#define HTTP_MAX_ARGS 32              /* query-string parameters per request */
#define HTTP_MAX_NAME_BYTES 1024      /* namespace, service, pod, method, sort values */
#define HTTP_MAX_Q_BYTES 4000         /* q: 1000 characters of up to 4 UTF-8 bytes */
#define HTTP_MAX_PODS 1000            /* names in a pods list (each <= HTTP_MAX_NAME_BYTES) */
#define HTTP_MAX_BODY_BYTES (1u << 20) /* POST /tree body (1000 ids need ~100 KB) */
#define HTTP_MAX_RESPONSE_BYTES (64u << 20) /* a /calls page stops growing beyond this */
#define HTTP_STATS_MAX_COLUMNS 5000
#define HTTP_SERVICES_MAX_ROWS 100000 /* pod restarts listed by /services */
#define HTTP_EXPORT_PAGE 1000         /* rows fetched per reader query by the CSV export */
#define HTTP_EXPORT_MAX_MS 25000      /* an export stops (and says so) after 25 s */
#define HTTP_POOL_WAIT_MS 5000        /* waiting for a free reader before a 503 */
/* Connections (guard.c): MHD's limit, of which at most HTTP_MAX_HEADER_WAITERS may be
 * waiting for a request's headers at once (the rest is kept for requests past them). */
#define HTTP_MAX_CONNECTIONS 2048
#define HTTP_MAX_HEADER_WAITERS 1536
#define HTTP_MAX_ORIGINS 32           /* entries of cfg->allowed_origins */
#define HTTP_ORIGIN_MAX 300           /* "scheme://host:port" */

/* ---- reader pool ------------------------------------------------------------------- */

/* Readers are opened on demand (at most max at a time) and kept for reuse; a reader
 * that failed a query is closed instead of being reused. */
typedef struct http_pool {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    cp_reader **idle;
    size_t nidle;
    size_t open;      /* idle + in use */
    size_t max;
} http_pool;

/* ---- the server ---------------------------------------------------------------------- */

/* ---- worker threads (finishing uploads) ---------------------------------------------- */

typedef struct http_job {
    void (*fn)(void *arg);
    void *arg;
    struct http_job *next;
} http_job;

typedef struct http_jobs {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t *threads;
    size_t nthreads;
    http_job *head, *tail;
    int stop;
} http_jobs;

/* ---- the connection guard (guard.c) ---------------------------------------------------- */

typedef struct http_conn http_conn;

typedef struct http_guard {
    pthread_mutex_t mu;
    pthread_cond_t cv;            /* CLOCK_MONOTONIC; wakes the watchdog to stop */
    pthread_t thread;             /* the watchdog (only with a deadline) */
    int thread_started;
    int stop;
    http_conn *head, *tail;       /* connections waiting for a request's headers, oldest first */
    size_t nwaiting;
    size_t max_waiting;           /* HTTP_MAX_HEADER_WAITERS */
    size_t evicted;               /* shut down over the cap since the watchdog last logged */
    uint64_t deadline_ns;         /* cfg->header_timeout_s; 0 = none */
    char origins[HTTP_MAX_ORIGINS][HTTP_ORIGIN_MAX]; /* cfg->allowed_origins, normalised */
    size_t norigins;
} http_guard;

/* ---- the server ---------------------------------------------------------------------- */

struct cp_http {
    const cp_http_config *cfg;
    struct MHD_Daemon *daemon;
    int port;
    http_pool pool;
    http_jobs jobs;               /* upload workers */
    http_jobs queries;            /* streamed queries (stream.c) */
    http_jobs imports;            /* imports (import.c) */
    pthread_mutex_t imports_mu;
    struct http_import *imports_live; /* every import not yet freed (stopping aborts them) */
    int imports_stopping;
    pthread_mutex_t streams_mu;
    size_t streams;               /* streamed queries queued or running */
    volatile int stopping;        /* the server is stopping: streamed queries cancel */
    http_guard guard;             /* slow clients, framing, cross-origin writes (guard.c) */
    struct http_oidc *oidc;       /* --auth oidc: keys, token cache, sessions (auth_oidc.c) */
    struct http_auth *auth;       /* login, roles, upload credentials (auth.c); NULL = --auth none
                                   * and no upload token nor client CA: nothing to check */
    char *tls_pem[3];             /* HTTPS: certificate, key, client CA (PEM text) while MHD runs */
    cp_metrics *metrics;          /* cfg->metrics, or own_metrics (metrics_http.c); NULL if out of memory */
    cp_metrics *own_metrics;
    http_jobs hprofs;             /* heap dump summaries (api_hprof.c): one worker */
    struct http_hprof_cache *hprof_cache; /* their cache and queue count */
};

/* ---- metrics_http.c ------------------------------------------------------------------------ */

struct http_out;
/* At start: the registry /metrics prints (cfg->metrics, or one of its own); free: at stop. */
void http_metrics_init(cp_http *h);
void http_metrics_free(cp_http *h);
/* The fixed route name of a (decoded) request path. */
cp_m_route http_metrics_route(const char *url);
/* An answer was queued (http.c's send_out). */
void http_metrics_request(cp_http *h, const char *url, unsigned status);
/* Body bytes of a /diagnostic upload arrived. */
void http_metrics_upload(cp_http *h, size_t n);
/* GET /metrics (open like /api/v1/health). */
void http_metrics_serve(cp_http *h, const char *method, struct http_out *o);

/* ---- guard.c --------------------------------------------------------------------------- */

struct http_out;

/* Parses cfg->allowed_origins and starts the header-deadline watchdog. CP_OK, or an error
 * with a message in err. */
int http_guard_start(cp_http *h, char *err, size_t errlen);
/* After MHD stopped: joins the watchdog. */
void http_guard_stop(cp_http *h);
/* MHD_OPTION_NOTIFY_CONNECTION (cls = the cp_http). */
void http_guard_notify(void *cls, struct MHD_Connection *conn, void **socket_context,
                       enum MHD_ConnectionNotificationCode toe);
/* The access handler's first call for a request: its headers are complete. */
void http_guard_headers_done(cp_http *h, struct MHD_Connection *conn);
/* A request is over: a connection kept alive waits for the next one's headers. */
void http_guard_request_done(cp_http *h, struct MHD_Connection *conn);
/* The first call's checks (framing, cross-origin writes): 0, or -1 with the 400/403 in o. */
int http_guard_check(cp_http *h, struct MHD_Connection *conn, const char *method, struct http_out *o);
/* The body the headers announce: 0 none (or Content-Length: 0), 1 *len bytes, 2 chunked
 * (length unknown). */
int http_body_declared(struct MHD_Connection *conn, uint64_t *len);

/* Runs fn(arg) on an upload worker thread. CP_OK, or CP_EIO when the workers are stopping. */
int http_jobs_submit(cp_http *h, void (*fn)(void *arg), void *arg);
/* Runs fn(arg) on a query worker thread (stream.c). */
int http_queries_submit(cp_http *h, void (*fn)(void *arg), void *arg);
/* Runs fn(arg) on an import worker thread (import.c). */
int http_imports_submit(cp_http *h, void (*fn)(void *arg), void *arg);
/* Runs fn(arg) on the heap dump summary worker (api_hprof.c). */
int http_hprofs_submit(cp_http *h, void (*fn)(void *arg), void *arg);
/* Runs the queued imports to their end and joins the import workers. */
void http_imports_join(cp_http *h);

/* 1 while the data directory is below its free-space floor (cfg->disk_low). */
int http_disk_low(const cp_http *h);
/* Logs through cfg->log (no-op without one). */
void http_log(const cp_http *h, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* CP_OK, or a status with a reason in err: CP_ELIMIT when no reader freed up in time,
 * another error when opening one failed. */
int http_pool_acquire(cp_http *h, cp_reader **out, char *err, size_t errlen);
/* Gives a reader back; broken = it failed a query (it is closed, not reused). */
void http_pool_release(cp_http *h, cp_reader *r, int broken);

/* ---- a request's state (MHD's con_cls) ---------------------------------------------------- */

typedef struct http_upload http_upload;
typedef struct http_import http_import;

typedef struct http_req {
    char *raw_url;        /* the request target before MHD decodes it (query string included) */
    int seen;             /* the first (headers-only) call happened */
    int checked;          /* the guard's checks ran (the first call of any request) */
    cp_buf body;
    int body_too_large;
    int keep_body;        /* POST: the body is kept (bounded), otherwise discarded */
    int diag;             /* a /diagnostic request */
    http_upload *up;      /* its state (upload.c); NULL before the first call */
    int import;           /* a POST /api/v1/import */
    http_import *imp;     /* its state (import.c); NULL when it answered at once */
    struct http_who *who; /* who asks (auth.c); NULL = anyone (--auth none) */
    struct http_hprof *hprof; /* GET /dumps/{id}/hprof waiting for its summary (api_hprof.c) */
} http_req;

/* ---- request arguments --------------------------------------------------------------- */

typedef struct http_arg {
    const char *key, *val;   /* NUL-terminated, URL-decoded by MHD; val "" when absent */
    size_t klen, vlen;
} http_arg;

typedef struct http_args {
    http_arg a[HTTP_MAX_ARGS];
    size_t n;
    int too_many;            /* more than HTTP_MAX_ARGS were sent */
    const struct http_who *who; /* who asks (auth.c); NULL = anyone (--auth none) */
    struct MHD_Connection *conn; /* the request's connection (the audit log's client address) */
    const char *method;      /* the request's method (audit.c records no HEAD) */
} http_args;

/* The value of key (NULL if absent). */
const http_arg *http_arg_get(const http_args *a, const char *key);

/* ---- who asks (auth.c, cp_auth.h) ------------------------------------------------------- */

/* A request's principal and its namespace set in the forms the readers take. */
typedef struct http_who {
    cp_principal p;
    const char *ns_ptrs[CP_AUTH_MAX_NS]; /* p.ns as C strings (cp_dump_filter.ns_in) */
    cp_name ns_names[CP_AUTH_MAX_NS];    /* p.ns as names, same order (cp_call_filter.ns_in) */
} http_who;

/* At start: reads the user, group, token and TLS files, builds the policy. CP_OK, or an
 * error with a message in err. */
int http_auth_start(cp_http *h, char *err, size_t errlen);
void http_auth_stop(cp_http *h);
struct http_out;
/* The first call of a request (headers in): decides who asks (rq->who) and whether it may
 * (by path and method). 0 to go on, or -1 with the answer (401, 403, 429, an /auth/ route)
 * in o. Only called when h->auth is set. */
int http_auth_check(cp_http *h, struct MHD_Connection *conn, const char *url, const char *method, http_req *rq,
                    struct http_out *o);
/* Frees rq->who. */
void http_auth_done(http_req *rq);
/* 1 if the asker may see namespace ns (len bytes). */
/* The client's address as text into out, `unknown` when there is none (auth.c). */
void http_client_ip(struct MHD_Connection *conn, char *out, size_t outlen, const char *unknown);
int http_who_sees(const http_who *w, const char *ns, size_t len);
/* Limits f to the asker's namespaces (f->ns_in then points into w). */
void http_who_dump_scope(const http_who *w, cp_dump_filter *f);
/* GET /api/v1/me */
void http_api_me(cp_http *h, const http_args *a, struct http_out *o);
/* HTTPS: reads cfg's PEM files into h->tls_pem and fills opts (MHD_OPTION_ARRAY items, END
 * terminated; only END without TLS) and adds MHD_USE_TLS to *flags. CP_OK or an error. */
int http_tls_options(cp_http *h, struct MHD_OptionItem opts[4], unsigned *flags, char *err, size_t errlen);
void http_tls_free(cp_http *h);

/* ---- the response ------------------------------------------------------------------------ */

typedef struct http_out {
    unsigned status;             /* HTTP status, default 200 */
    struct {
        const char *name;        /* static string */
        char value[200];
    } hdr[4];                    /* extra headers (ETag, Content-Range, ...) */
    size_t nhdr;
    cp_buf body;                 /* response bytes (when neither json nor stream is set) */
    json_t *json;                /* a jansson value to send instead of body */
    const char *content_type;    /* NULL = application/json; charset=utf-8 */
    char disposition[1024];      /* Content-Disposition value; "" = none */
    const char *allow;           /* Allow header (405) */
    int retry_after;             /* Retry-After seconds (503); 0 = none */
    struct MHD_Response *stream; /* a ready response (streamed export) */
} http_out;

/* Adds an extra response header (ignored beyond 4). */
void http_out_header(http_out *o, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* http_pool_acquire for a request: 0, or -1 with the answer set (503 with Retry-After
 * when no reader frees up or none opens, 500 when out of memory). */
int http_reader_take(cp_http *h, http_out *o, cp_reader **out);

/* Sets an error response {"error": message, "code": code}. The message is made safe
 * (printable ASCII; other bytes become '?') since it may quote client input. */
void http_error(http_out *o, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A 400 naming a parameter: {"error", "code", "parameter"}. */
void http_bad_param(http_out *o, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Adds a string field to the error set by http_error (e.g. a trace's drop reason). */
void http_error_field(http_out *o, const char *key, const char *value);
/* The error for a failed reader call (500; 503 when out of memory). */
void http_reader_error(http_out *o, int status, const char *what, const char *msg);
/* 500 "out of memory" style failure of the response building itself. */
void http_oom(http_out *o);

/* Rejects any parameter whose name is not in allowed (NULL-terminated), duplicated
 * parameters and too many parameters. 0 if fine, else the 400 is set in o. */
int http_check_args(const http_args *a, const char *const *allowed, http_out *o);

/* ---- imports (import.c) -------------------------------------------------------------- */

/* Headers of POST /api/v1/import: 0 with *out set (the body goes to http_import_data), or
 * -1 with the answer in o. */
int http_import_begin(cp_http *h, struct MHD_Connection *conn, const http_args *a, http_import **out, http_out *o);
/* Body bytes: *n is set to what is left (the connection is suspended until there is room). */
void http_import_data(http_import *x, const char *data, size_t *n);
/* End of the body: 0 when suspended until the answer (call again), -1 with it in o. */
int http_import_finish(http_import *x, http_out *o);
void http_import_free(http_import *x);
/* Server stopping: every running import stops at its next chunk (keeping its complete
 * calls), new ones answer 503; then the workers are joined. */
void http_imports_stop(cp_http *h);

/* ---- the calls query ----------------------------------------------------------------- */

enum {
    HTTP_Q_PAGING = 1,   /* limit and cursor */
    HTTP_Q_SORT = 2,     /* sort */
    HTTP_Q_COLUMNS = 4,  /* columns (stats) */
    HTTP_Q_STREAM = 8,   /* stream (progress as NDJSON) */
};

/* One name of a list parameter (pods), pointing into the query's copy of the value. */
typedef cp_name http_name;

/* What the filter's match predicate checks (http_query_filter): the search and the pods
 * list, each optional; a call must satisfy both. */
typedef struct http_match {
    const cp_search *search;
    const http_name *pods;              /* sorted by bytes, no duplicates */
    size_t npods;
    int hide_system;                    /* drop cp_system_call() calls */
    const char *const *idle;            /* their method list */
    size_t nidle;
} http_match;

typedef struct http_query {
    int64_t from_ms, to_ms;
    char *ns, *service, *pod, *method;  /* owned copies; NULL = any */
    cp_duration_filter dur;
    cp_search *search;                  /* NULL = no q */
    char *pods_text;                    /* pods: the value, split in place; NULL = any pod */
    http_name *pods;
    size_t npods;
    http_match match;                   /* search + pods, for the filter's predicate */
    cp_rollup_sel sel;                  /* the same, spelled out for the stats rollups */
    cp_name needles[CP_SEARCH_MAX_TERMS]; /* the search's prefilter (cp_search_needles) */
    size_t nneedles;
    int errors_only;
    int hide_system;                    /* ui.md §3.6 */
    cp_sort_col sort;
    int desc;
    size_t limit;
    int has_cursor;
    cp_cursor cursor;
    uint64_t hash;                      /* of every filter and the sort */
    unsigned columns;                   /* stats */
    int stream;                         /* stream=1: NDJSON progress, then the answer (stream.c) */
    size_t profile_max;                 /* /profile: calls to merge at most (0 = the default) */
    /* $name=value terms every match satisfies (they point into search): the tiered
     * reader skips cold files by the inverted index with them */
    cp_cold_param params[8];
    size_t nparams;
    /* the asker's namespaces (auth.c), copied: a streamed query outlives its request */
    int ns_limited;
    cp_name *ns_in;                     /* sorted (cp_name_cmp); names point into ns_in_text */
    size_t nns_in;
    char *ns_in_text;
} http_query;

/* Parses from, to, namespace, service, pod, pods, duration, method, q, error and (per flags)
 * sort, limit, cursor, columns. 0 if fine, else the 4xx is set in o. The query owns
 * copies of its strings: it may outlive the request (streamed export). */
int http_query_parse(cp_http *h, const http_args *a, unsigned flags, http_query *q, http_out *o);
void http_query_free(http_query *q);
/* Fills f from q (after = NULL, limit = q->limit, max_scan = cfg->max_scan). */
void http_query_filter(const cp_http *h, const http_query *q, cp_call_filter *f);
/* The keyset cursor "<time_ms>_<id>" of the dumps and audit lists (the last row of the
 * previous page) into *ms and *id when given. 0, or -1 with the 400 set. */
int http_time_id_cursor(const http_args *a, int64_t *ms, int64_t *id, http_out *o);
/* Parses from/to only (with their defaults and bounds), for /services. */
int http_parse_window(cp_http *h, const http_args *a, int64_t *from, int64_t *to, http_out *o);


/* ---- JSON of a call -------------------------------------------------------------------- */

/* The call's human title (ui.md §3.3 rules 1, 2 and 4; title.c) into out (reset first).
 * CP_OK or CP_ENOMEM. */
int http_call_title(const cp_call *c, cp_buf *out);
/* Appends the API's Call object. CP_OK or CP_ENOMEM. */
int http_call_json(cp_buf *out, const cp_call *c);
/* Appends the /calls/stats answer. CP_OK or CP_ENOMEM. */
int http_stats_json(const cp_stats *s, const cp_stats_info *info, cp_buf *out);

/* The answers of /calls and /calls/stats for a parsed query and its filter (which may
 * carry a progress callback): the body, or an error, in o. */
void http_calls_answer(cp_http *h, const http_query *q, const cp_call_filter *f, http_out *o);
void http_stats_answer(cp_http *h, const http_query *q, const cp_call_filter *f, http_out *o);

/* ---- streamed queries (stream.c) ------------------------------------------------------- */

enum { HTTP_STREAM_CALLS = 1, HTTP_STREAM_STATS = 2, HTTP_STREAM_PROFILE = 3 };
/* Answers a query with stream=1: takes q over (freed by the stream), runs it on a query
 * worker and sets o->stream to the NDJSON response (docs/API.md "Streamed answers"). On
 * failure to start, o holds an error and q is freed. */
void http_stream_start(cp_http *h, struct MHD_Connection *conn, int kind, http_query *q, http_out *o);
/* Cancels every streamed query (server stopping) and waits for the workers. */
void http_streams_stop(cp_http *h);

/* ---- endpoints ----------------------------------------------------------------------- */

void http_api_health(cp_http *h, const http_args *a, http_out *o);
void http_api_time(cp_http *h, const http_args *a, http_out *o);
void http_api_config(cp_http *h, const http_args *a, http_out *o);
/* --trace-link's template: CP_OK, or CP_EINVAL with why in err. */
int http_trace_link_check(const char *t, char *err, size_t errlen);
void http_api_services(cp_http *h, const http_args *a, http_out *o);
void http_api_calls(cp_http *h, struct MHD_Connection *conn, const http_args *a, http_out *o);
void http_api_call(cp_http *h, const http_args *a, const char *id, http_out *o);
void http_api_stats(cp_http *h, struct MHD_Connection *conn, const http_args *a, http_out *o);
void http_api_csv(cp_http *h, const http_args *a, http_out *o);
/* xlsx.c: GET /calls.xlsx, the CSV export's rows as a workbook (conn: the Host of its links). */
void http_api_xlsx(cp_http *h, struct MHD_Connection *conn, const http_args *a, http_out *o);
void http_api_call_tree(cp_http *h, const http_args *a, const char *id, http_out *o);
void http_api_call_trace(cp_http *h, const http_args *a, const char *id, http_out *o);
/* api_value.c: GET /calls/{id}/value?param=&key=, the whole text of a value its tree trimmed. */
void http_api_call_value(cp_http *h, const http_args *a, const char *id, http_out *o);
void http_api_tree_get(cp_http *h, const http_args *a, http_out *o);
/* api_profile.c: GET /profile, the aggregate profile of a filter's calls. */
void http_api_profile(cp_http *h, struct MHD_Connection *conn, const http_args *a, http_out *o);
/* The merge's progress (stream.c): merged of to_merge calls done, the tree's nodes so far;
 * nonzero cancels the profile. */
typedef int (*http_profile_progress_fn)(void *ud, size_t merged, size_t to_merge, size_t nodes);
/* The /profile answer for a parsed query and its filter (whose progress callback reports
 * the search): the tree with its "profile" object, or an error, in o. fn may be NULL. */
void http_profile_answer(cp_http *h, const http_query *q, const cp_call_filter *f, http_profile_progress_fn fn,
                         void *ud, http_out *o);
/* GET /tree/export?ids=..&format=.. or POST /tree/export?format=.. with {"ids":[...]} (body
 * non-NULL). */
void http_api_tree_export(cp_http *h, const http_args *a, const cp_buf *body, int body_too_large, http_out *o);
void http_api_call_export(cp_http *h, const http_args *a, const char *id, http_out *o);
void http_api_tree_post(cp_http *h, const http_args *a, const cp_buf *body, int body_too_large, http_out *o);

/* ---- the web UI (ui.c) ---------------------------------------------------------------------- */

/* 1 if url belongs to the web UI: a path not under /api, /diagnostic or /cdt. */
int http_ui_path(const char *url);
/* Answers a UI path: GET/HEAD of a file of the embedded UI or of the page, 404 for an
 * unknown file, 405 for other methods, 503 when the binary has no UI. */
void http_ui_serve(struct MHD_Connection *conn, const char *url, const char *method, http_out *o);

/* ---- diagnostic files (upload.c, api_dumps.c, dumpzip.c) ---------------------------------- */

/* /diagnostic/... requests (dumps-http.md §4). begin: the first call (headers only);
 * returns 1 with the answer in o (a bad path, a refused namespace, a wrong method...), or
 * 0 with *out set to receive the body. data: body bytes. finish: the body ended; returns 1
 * with the answer in o, or 0 when the connection was suspended while a worker finishes
 * the upload (MHD calls the handler again after the worker resumes it; finish is called
 * again then and answers). free: the request is over (an upload not finished is dropped,
 * leaving nothing). */
int http_diag_begin(cp_http *h, struct MHD_Connection *conn, const char *raw_url, const char *method,
                    const http_who *who, http_upload **out, http_out *o);
void http_diag_data(http_upload *u, const char *p, size_t n);
int http_diag_finish(cp_http *h, http_upload *u, http_out *o);
void http_diag_free(http_upload *u);

void http_api_dumps(cp_http *h, const http_args *a, http_out *o);
void http_api_dump(cp_http *h, struct MHD_Connection *conn, const http_args *a, const char *id, http_out *o);
void http_api_dump_delete(cp_http *h, const http_args *a, const char *id, http_out *o);
void http_api_dump_view(cp_http *h, const http_args *a, const char *id, const char *view, http_out *o);
void http_api_dumps_summary(cp_http *h, const http_args *a, http_out *o);
void http_api_gc(cp_http *h, const http_args *a, http_out *o);
/* Bulk download: the zip of every file of the filters (legacy = the /cdt/v2/download form). */
void http_api_dumps_zip(cp_http *h, const http_args *a, int legacy, http_out *o);
/* Parses a dump filter's namespace/service/pod/type/from/to (from/to: epoch ms or ISO;
 * the window bounds of /calls apply). 0, or -1 with the 400 in o. Strings point into a. */
int http_dump_filter(cp_http *h, const http_args *a, cp_dump_filter *f, http_out *o);
/* The record of a {id} path segment, as the asker may see it (another namespace's is a
 * 404). 0, or -1 with the answer in o. */
int http_dump_get(cp_http *h, const http_args *a, const char *id_text, cp_dump_meta *m, http_out *o);
/* A pprof dump loaded and parsed, with the sample type its `sample_type` parameter picks
 * (an index or a name; default the profile's default, else the last): 0 with *pf to free,
 * or -1 with the answer (400 wrong_type / bad_parameter, 413, 422) in o. */
int http_dump_pprof(cp_http *h, const http_args *a, const cp_dump_meta *m, cp_pprof **pf, size_t *sti, http_out *o);
/* api_stacks.c: sampled stacks as trees (ui.md §9.4, §10.7). GET /dumps/threads-profile:
 * a pod's thread dumps merged; GET /dumps/{id}/profile/tree: a pprof profile's samples. */
void http_api_threads_profile(cp_http *h, const http_args *a, http_out *o);
void http_api_profile_tree(cp_http *h, const http_args *a, const char *id, http_out *o);

/* api_hprof.c: GET /dumps/{id}/hprof, a heap dump's summary, made on the summary worker
 * while the connection is suspended (rq->hprof set; answer() then sends nothing: MHD calls
 * again once the worker resumed it) and cached (memory, cfg->hprof_cache_dir). */
typedef struct http_hprof http_hprof;
void http_api_dump_hprof(cp_http *h, struct MHD_Connection *conn, const http_args *a, const char *id, http_req *rq,
                         http_out *o);
int http_hprof_waiting(const http_hprof *x); /* 1 while suspended, the answer not made yet */
void http_hprof_free(http_hprof *x);
int http_hprof_cache_init(cp_http *h);        /* CP_OK or CP_ENOMEM */
void http_hprof_cache_free(cp_http *h);

/* ---- the audit log (audit.c, store/cp_audit.h) --------------------------------------------- */

/* Starts the entry of an audited request: now, who (the user, "anonymous" without a
 * login, and the role; "uploader" for an upload credential), the client's address, the
 * action, outcome "ok", detail {}. 0 when nothing is to be recorded: no audit log is
 * configured, or a HEAD (no data leaves). */
int http_audit_begin(cp_http *h, const http_who *who, struct MHD_Connection *conn, const char *method,
                     const char *action, cp_audit_entry *e);
/* The target: the request's parameters as a query string ("k=v&...", percent-encoded, in
 * the order sent), cut to the field's size. */
void http_audit_target_query(cp_audit_entry *e, const http_args *a);
/* The namespace: the request's `namespace` parameter, else the asker's only namespace,
 * else none (an entry without one is listed to unrestricted admins only). */
void http_audit_ns_of(cp_audit_entry *e, const http_args *a);
/* The outcome of an HTTP status: "ok" below 400, else the status ("404"). */
void http_audit_outcome(cp_audit_entry *e, unsigned status);
/* The detail from a JSON object (consumed; NULL = {}); too long for the field: {"truncated":true}. */
void http_audit_detail(cp_audit_entry *e, json_t *detail);
/* Records e: its id, or 0 when it could not be (a warning is logged; the request is served). */
int64_t http_audit_record(cp_http *h, cp_audit_entry *e);
/* A recorded entry's outcome and detail once a streamed answer ended (best effort, logged). */
void http_audit_finish(cp_http *h, int64_t id, unsigned status, json_t *detail);
/* The endpoints' entries (each a no-op without an audit log or for a HEAD):
 * a calls export (export.c; action "calls.export_<ext>": calls.export_csv, calls.export_xlsx)
 * when its answer starts -- status 200, or the error's -- and, for a started one, its end
 * (rows, bytes, whether the client got all of it, the truncation reason or NULL); */
int64_t http_audit_export_start(cp_http *h, const http_args *a, const char *ext, unsigned status);
void http_audit_export_end(cp_http *h, int64_t id, uint64_t rows, uint64_t bytes, int complete, const char *cut);
/* a diagnostic file's download (GET /dumps/{id}; [start, end] when ranged); */
void http_audit_dump_download(cp_http *h, const http_args *a, const cp_dump_meta *m, uint64_t start, uint64_t end,
                              int ranged);
/* a bulk zip of diagnostic files (files and bytes listed for it); */
void http_audit_dumps_zip(cp_http *h, const http_args *a, size_t files, uint64_t bytes, unsigned status);
/* a TPTP export of refs[0..n) (format "trcbin"/"trcxml"): the namespace of its calls ("" when
 * several), calls exported and the file's bytes. */
void http_audit_tree_export(cp_http *h, const http_args *a, const cp_call_ref *refs, size_t n, const char *format,
                            const char *ns, size_t calls, size_t bytes, unsigned status);
/* GET /api/v1/audit (admins only). */
void http_api_audit(cp_http *h, const http_args *a, http_out *o);

#endif
