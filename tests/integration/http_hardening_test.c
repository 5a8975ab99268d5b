/* http_hardening_test.c -- issue 16, findings 6 and 7, through the real server:
 *  - framing: two Content-Length headers (different or equal), Transfer-Encoding with a
 *    Content-Length, on an upload, an import, the tree POST, an API GET and a UI path: a
 *    400 JSON error before any body is taken, and nothing stored;
 *  - declared bodies: a 2 GiB Content-Length on POST /api/v1/tree (and /tree/export, an
 *    import, uploads over their type's limit, requests that take no body) is answered 413
 *    without the body being sent;
 *  - slow clients: 1000 connections dribbling header bytes while /health and /services
 *    answer; the header deadline closes them while a slow body upload goes through and an
 *    idle kept-alive connection is closed; past the cap on connections waiting for their
 *    headers the oldest are closed; the per-client cap refuses and then admits;
 *  - cross-origin writes: uploads, imports and deletes from a foreign Origin (or
 *    Sec-Fetch-Site: cross-site) get 403 and change nothing; same-origin, allowed-origin and
 *    no-Origin writes are taken; reads are not affected;
 *  - dump ids: 20 uploads get ids that are not sequential nor close together; a row with an
 *    old small id is still read and deleted.
 *
 * CP_TEST_BOTH_PAIRS: SQLite + directory, and PostgreSQL + S3 (pair_util.h); the slow-client
 * tests touch no storage and run on the first pair only.
 */
#include "http_util.h"
#include "pair_util.h"
#include "server_util.h"

#include "store/sql/sqldb.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#define NS "shop"
#define DIR_PATH "2023/12/19/06/17/34"
#define WIN "from=1702900000000&to=1703000000000"
#define IMPORT_WIN "from=1700000000000&to=1712999999999" /* the foreign fixtures' calls */
#define TD_TEXT "2023-12-19 06:17:34\nFull thread dump OpenJDK 64-Bit Server VM (17.0.2+8 mixed mode):\n\n"
#define EARLY_MS 10000 /* an early answer: generous, it comes at once */
#define NSLOW 1000
#define HEADER_WAITERS 1536 /* HTTP_MAX_HEADER_WAITERS (src/http/http_internal.h) */
#define MAX_SLOW (HEADER_WAITERS + 64)

/* ---- environment --------------------------------------------------------------------------- */

typedef struct env {
    test_server s;
    char *dir, *catalog, *store;
    const char *args[48];
} env;

static void env_start(env *e, const char *tag, const char *const *extra)
{
    test_pair_require();
    test_pair_env();
    e->dir = make_temp_dir(tag);
    e->catalog = test_catalog_spec(e->dir);
    e->store = test_store_url(e->dir);
    size_t n = 0;
    for (const char *const *pf = test_pair_flags(e->catalog, e->store); *pf; pf++) e->args[n++] = *pf;
    e->args[n++] = "--max-query-span";
    e->args[n++] = "400";
    for (; extra && *extra; extra++) e->args[n++] = *extra;
    e->args[n] = NULL;
    server_start(&e->s, tag, e->args);
}

static void env_free(env *e)
{
    server_destroy(&e->s);
    remove_tree(e->dir);
    free(e->dir);
    free(e->catalog);
    free(e->store);
}

/* ---- raw HTTP ------------------------------------------------------------------------------ */

/* Reads one response (headers, then Content-Length bytes of body) within timeout_ms; the
 * test fails on timeout. 0 when complete, -1 when the server closed before (out keeps
 * what came). */
static int read_response(int fd, int timeout_ms, cp_buf *out)
{
    cp_buf_reset(out);
    uint64_t deadline = cp_mono_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        const char *hdr_end = out->len ? memmem(out->data, out->len, "\r\n\r\n", 4) : NULL;
        if (hdr_end) {
            size_t hlen = (size_t)(hdr_end - (const char *)out->data) + 4;
            cp_buf hb = {out->data, hlen, hlen};
            char v[32];
            size_t want = http_header(&hb, "Content-Length", v, sizeof v) ? (size_t)strtoull(v, NULL, 10) : 0;
            if (out->len >= hlen + want) return 0;
        }
        uint64_t now = cp_mono_ns();
        if (now >= deadline) fail_msg("no complete answer within %d ms (got %zu bytes)", timeout_ms, out->len);
        struct pollfd p = {fd, POLLIN, 0};
        int rc = poll(&p, 1, (int)((deadline - now) / 1000000u) + 1);
        if (rc < 0 && errno == EINTR) continue;
        if (rc <= 0) continue;
        assert_int_equal(cp_buf_reserve(out, 65536), CP_OK);
        ssize_t r = recv(fd, out->data + out->len, 65536, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1; /* EOF or reset */
        out->len += (size_t)r;
    }
}

static int resp_status(const cp_buf *r)
{
    if (r->len < 12 || memcmp(r->data, "HTTP/1.", 7)) return -1;
    return atoi((const char *)r->data + 9);
}

/* The "code" of a JSON error response (fails unless the body is one). */
static void assert_error_code(const cp_buf *r, const char *want)
{
    const char *s = (const char *)r->data;
    const char *b = memmem(s, r->len, "\r\n\r\n", 4);
    if (!b) fail_msg("no response headers: %.*s", (int)r->len, s);
    b += 4;
    json_t *j = json_loadb(b, r->len - (size_t)(b - s), 0, NULL);
    if (!j) fail_msg("not a JSON error: %.*s", (int)r->len, s);
    assert_non_null(json_string_value(json_object_get(j, "error")));
    const char *code = json_string_value(json_object_get(j, "code"));
    if (!code || strcmp(code, want) != 0) fail_msg("code %s, want %s: %.*s", code ? code : "(none)", want, (int)r->len, s);
    json_decref(j);
}

/* Sends head (and body, when not NULL) on a new connection and reads the answer, which must
 * come within EARLY_MS; returns its status, the response in resp. */
static int exchange(int port, const char *head, const void *body, size_t n, cp_buf *resp)
{
    cp_buf req; /* one send: an early answer cannot cut a second one off */
    cp_buf_init(&req);
    cp_buf_puts(&req, head);
    if (body && n) cp_buf_append(&req, body, n);
    int fd = conn_open(port);
    conn_send(fd, req.data, req.len);
    cp_buf_free(&req);
    int rc = read_response(fd, EARLY_MS, resp);
    conn_close(fd);
    if (rc != 0) fail_msg("the server closed without a complete answer to: %.200s", head);
    return resp_status(resp);
}

/* An answer that must be the given 4xx with a JSON error code. */
static void expect_error(int port, const char *head, const void *body, size_t n, int status, const char *code)
{
    cp_buf r;
    cp_buf_init(&r);
    int st = exchange(port, head, body, n, &r);
    if (st != status)
        fail_msg("%d, want %d, for: %.200s\nanswer: %.*s", st, status, head, (int)r.len, (const char *)r.data);
    assert_error_code(&r, code);
    cp_buf_free(&r);
}

/* ---- uploads and dumps ------------------------------------------------------------------------ */

static void upload_path(char *out, size_t cap, const char *pod, const char *file)
{
    snprintf(out, cap, "/diagnostic/" NS "/" DIR_PATH "/%s/%s", pod, file);
}

/* PUT of a small file with extra headers; returns the status, the answer in body. */
static int put_file(int port, const char *pod, const char *file, const char *headers, cp_buf *body)
{
    char path[512];
    upload_path(path, sizeof path, pod, file);
    int st = 0;
    assert_int_equal(http_request(port, "PUT", path, headers, TD_TEXT, sizeof TD_TEXT - 1, &st, body, NULL), 0);
    return st;
}

static size_t listed(const env *e, const char *pod)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/dumps?namespace=" NS "&pod=%s&" WIN "&limit=1000", pod);
    json_t *l = http_get_json(e->s.http_port, path, 200);
    size_t n = json_array_size(json_object_get(l, "dumps"));
    json_decref(l);
    return n;
}

/* Files left in <data>/dumps-tmp, waiting (a while) for the server to drop them. */
static void wait_tmp_empty(const env *e)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/dumps-tmp", e->s.data);
    for (int i = 0;; i++) {
        int n = 0;
        DIR *d = opendir(path);
        for (struct dirent *de; d && (de = readdir(d));)
            if (de->d_name[0] != '.') n++;
        if (d) closedir(d);
        if (!n) return;
        if (i == 200) fail_msg("%d temporary upload files left in %s", n, path);
        sleep_ms(50);
    }
}

/* The id of a 201 answer. */
static long long created_id(const cp_buf *body)
{
    json_t *j = json_loadb((const char *)body->data, body->len, 0, NULL);
    assert_non_null(j);
    const char *id = json_string_value(json_object_get(j, "id"));
    assert_non_null(id);
    long long v = strtoll(id, NULL, 10);
    json_decref(j);
    return v;
}

/* Calls stored under namespace ns (the foreign fixtures' window). */
static size_t calls_in(const env *e, const char *ns)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/calls?" IMPORT_WIN "&namespace=%s&limit=1000", ns);
    json_t *l = http_get_json(e->s.http_port, path, 200);
    size_t n = json_array_size(json_object_get(l, "calls"));
    json_decref(l);
    return n;
}

static void chunked(cp_buf *out, const uint8_t *p, size_t n, size_t chunk)
{
    for (size_t off = 0; off < n; off += chunk) {
        size_t k = n - off < chunk ? n - off : chunk;
        cp_buf_printf(out, "%zx\r\n", k);
        cp_buf_append(out, p + off, k);
        cp_buf_puts(out, "\r\n");
    }
    cp_buf_puts(out, "0\r\n\r\n");
}

/* ---- finding 6: framing ------------------------------------------------------------------------- */

static void test_framing(void **state)
{
    (void)state;
    env e = {0};
    env_start(&e, "hh-framing", NULL);
    int port = e.s.http_port;
    char head[2048], path[512];
    cp_buf trc, body, resp;
    cp_buf_init(&body);
    cp_buf_init(&resp);
    load_fixture("foreign/shop.trcbin", &trc);

    /* the probe's case: 5 and 500 on an upload (taken as 5 bytes before) */
    upload_path(path, sizeof path, "smuggle", "a.td.txt");
    snprintf(head, sizeof head, "PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 5\r\nContent-Length: 500\r\n\r\n",
             path, port);
    expect_error(port, head, "hello", 5, 400, "bad_framing");
    /* equal duplicates too */
    snprintf(head, sizeof head, "PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
             path, port);
    expect_error(port, head, "hello", 5, 400, "bad_framing");
    /* chunked + a length, on an upload */
    cp_buf_reset(&body);
    chunked(&body, (const uint8_t *)TD_TEXT, sizeof TD_TEXT - 1, 16);
    snprintf(head, sizeof head,
             "PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n", path,
             port);
    expect_error(port, head, body.data, body.len, 400, "bad_framing");
    /* a multipart POST upload with two lengths */
    snprintf(head, sizeof head,
             "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: multipart/form-data; boundary=b\r\n"
             "Content-Length: 3\r\nContent-Length: 300\r\n\r\n",
             path, port);
    expect_error(port, head, "--b", 3, 400, "bad_framing");
    /* an import: chunked + a length, and two lengths (a whole valid trace in the body) */
    cp_buf_reset(&body);
    chunked(&body, trc.data, trc.len, 4096);
    snprintf(head, sizeof head,
             "POST /api/v1/import?namespace=smuggled HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
             "Transfer-Encoding: chunked\r\nContent-Length: %zu\r\n\r\n",
             port, trc.len);
    expect_error(port, head, body.data, body.len, 400, "bad_framing");
    snprintf(head, sizeof head,
             "POST /api/v1/import?namespace=smuggled HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
             "Content-Length: %zu\r\nContent-Length: %zu\r\n\r\n",
             port, trc.len, trc.len);
    expect_error(port, head, trc.data, trc.len, 400, "bad_framing");
    /* the tree POST, an API GET, the UI */
    static const char ids[] = "{\"ids\":[\"x\"]}";
    snprintf(head, sizeof head,
             "POST /api/v1/tree HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
             "Content-Length: %zu\r\nContent-Length: 500\r\n\r\n",
             port, sizeof ids - 1);
    expect_error(port, head, ids, sizeof ids - 1, 400, "bad_framing");
    snprintf(head, sizeof head,
             "GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nTransfer-Encoding: chunked\r\nContent-Length: 0\r\n\r\n",
             port);
    expect_error(port, head, "0\r\n\r\n", 5, 400, "bad_framing");
    snprintf(head, sizeof head, "GET / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 0\r\nContent-Length: 3\r\n\r\n",
             port);
    expect_error(port, head, "abc", 3, 400, "bad_framing");
    /* a Transfer-Encoding other than chunked, and two Host headers */
    snprintf(head, sizeof head, "PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", path,
             port);
    expect_error(port, head, NULL, 0, 400, "bad_framing");
    snprintf(head, sizeof head, "PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nHost: evil.example\r\nContent-Length: 5\r\n\r\n",
             path, port);
    expect_error(port, head, "hello", 5, 400, "bad_framing");

    /* nothing of it was stored ... */
    wait_tmp_empty(&e);
    assert_int_equal(listed(&e, "smuggle"), 0);
    assert_int_equal(calls_in(&e, "smuggled"), 0);
    /* ... while the same requests framed once are taken */
    snprintf(head, sizeof head, "PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 5\r\n\r\n", path, port);
    assert_int_equal(exchange(port, head, "hello", 5, &resp), 201);
    assert_int_equal(listed(&e, "smuggle"), 1);
    snprintf(head, sizeof head,
             "POST /api/v1/import?namespace=framed HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nTransfer-Encoding: chunked\r\n\r\n",
             port);
    assert_int_equal(exchange(port, head, body.data, body.len, &resp), 200);
    assert_true(calls_in(&e, "framed") > 0);
    json_decref(http_get_json(port, "/api/v1/health", 200));

    cp_buf_free(&trc);
    cp_buf_free(&body);
    cp_buf_free(&resp);
    server_stop(&e.s);
    env_free(&e);
}

/* ---- finding 6: declared bodies over a limit are answered at once -------------------------------- */

static void test_early_413(void **state)
{
    (void)state;
    static const char *const extra[] = {"--dump-max-size", "all=100K", NULL};
    env e = {0};
    env_start(&e, "hh-early", extra);
    int port = e.s.http_port;
    char head[2048], path[512];
    /* only the headers are sent: the answer must not wait for a body that never comes */
    snprintf(head, sizeof head,
             "POST /api/v1/tree HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
             "Content-Length: 2147483648\r\n\r\n",
             port);
    expect_error(port, head, NULL, 0, 413, "body_too_large");
    snprintf(head, sizeof head,
             "POST /api/v1/tree/export?format=trcxml HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 2147483648\r\n\r\n",
             port);
    expect_error(port, head, NULL, 0, 413, "body_too_large");
    /* imports: over import_max_bytes (64 GiB), plain and gzip */
    snprintf(head, sizeof head, "POST /api/v1/import HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 107374182400\r\n\r\n",
             port);
    expect_error(port, head, NULL, 0, 413, "body_too_large");
    snprintf(head, sizeof head,
             "POST /api/v1/import HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Encoding: gzip\r\n"
             "Content-Length: 107374182400\r\n\r\n",
             port);
    expect_error(port, head, NULL, 0, 413, "body_too_large");
    /* uploads: over the type's limit, raw and multipart (16 files of the largest type) */
    upload_path(path, sizeof path, "big", "a.td.txt");
    snprintf(head, sizeof head, "PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 2147483648\r\n\r\n", path, port);
    expect_error(port, head, NULL, 0, 413, "too_large");
    snprintf(head, sizeof head,
             "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: multipart/form-data; boundary=b\r\n"
             "Content-Length: 2147483648\r\n\r\n",
             path, port);
    expect_error(port, head, NULL, 0, 413, "too_large");
    /* requests that take no body: GET, HEAD-less DELETE, the UI, an upload DELETE */
    snprintf(head, sizeof head, "GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 2147483648\r\n\r\n",
             port);
    expect_error(port, head, NULL, 0, 413, "body_not_allowed");
    snprintf(head, sizeof head, "DELETE /api/v1/dumps/12 HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 2147483648\r\n\r\n",
             port);
    expect_error(port, head, NULL, 0, 413, "body_not_allowed");
    snprintf(head, sizeof head, "GET /pods HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nTransfer-Encoding: chunked\r\n\r\n", port);
    expect_error(port, head, NULL, 0, 413, "body_not_allowed");
    snprintf(head, sizeof head, "DELETE %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 2147483648\r\n\r\n", path,
             port);
    expect_error(port, head, NULL, 0, 413, "body_not_allowed");
    /* a method the path does not take: its 405 at once */
    snprintf(head, sizeof head, "POST /api/v1/calls HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 2147483648\r\n\r\n",
             port);
    expect_error(port, head, NULL, 0, 405, "method_not_allowed");
    /* within the limit a tree POST still reads its body */
    snprintf(head, sizeof head,
             "POST /api/v1/tree HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n",
             port);
    expect_error(port, head, "{\"ids\":3}", 9, 400, "bad_body");
    wait_tmp_empty(&e);
    assert_int_equal(listed(&e, "big"), 0);
    server_stop(&e.s);
    env_free(&e);
}

/* ---- finding 6: slow clients ------------------------------------------------------------------- */

/* Connections sending their headers a byte a second, from a thread of their own. */
typedef struct slow_set {
    int fd[MAX_SLOW];
    unsigned char gone[MAX_SLOW]; /* the server closed it (written under mu) */
    size_t n;
    pthread_mutex_t mu;
    size_t ngone;                 /* under mu */
    size_t answered;              /* closed with bytes from the server (an answer): under mu */
    int stop;                     /* under mu */
    pthread_t th;
} slow_set;

static int slow_stopping(slow_set *s)
{
    pthread_mutex_lock(&s->mu);
    int stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return stop;
}

static void *slow_main(void *arg)
{
    slow_set *s = arg;
    while (!slow_stopping(s)) {
        for (size_t i = 0; i < s->n; i++) {
            if (s->gone[i]) continue;
            char b[256];
            ssize_t r = recv(s->fd[i], b, sizeof b, MSG_DONTWAIT);
            int closed = r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
            if (!closed && send(s->fd[i], "a", 1, MSG_DONTWAIT | MSG_NOSIGNAL) < 0 && errno != EAGAIN &&
                errno != EWOULDBLOCK && errno != EINTR)
                closed = 1;
            if (closed) {
                pthread_mutex_lock(&s->mu);
                s->gone[i] = 1;
                s->ngone++;
                if (r > 0) s->answered++;
                pthread_mutex_unlock(&s->mu);
            }
        }
        for (int t = 0; t < 10 && !slow_stopping(s); t++) sleep_ms(100); /* a byte a second */
    }
    return NULL;
}

/* Opens n connections that start a request and never finish its headers. */
static void slow_open(slow_set *s, int port, size_t n)
{
    memset(s, 0, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    char head[256];
    snprintf(head, sizeof head, "GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow: ", port);
    for (size_t i = 0; i < n; i++) {
        s->fd[i] = conn_open(port);
        conn_send(s->fd[i], head, strlen(head));
        s->n++;
    }
    assert_int_equal(pthread_create(&s->th, NULL, slow_main, s), 0);
}

static size_t slow_gone(slow_set *s, size_t *answered)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->ngone;
    if (answered) *answered = s->answered;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void slow_close(slow_set *s)
{
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    for (size_t i = 0; i < s->n; i++) conn_close(s->fd[i]);
    pthread_mutex_destroy(&s->mu);
}

/* Room for the test's and the server's sockets (the server raises its own limit too). */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &rl), 0);
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
        getrlimit(RLIMIT_NOFILE, &rl);
    }
    if (rl.rlim_cur < 2 * MAX_SLOW + 200) skip();
}

/* /health and /services answer while 1000 connections are stuck in their headers, all
 * from the same address as the checks (the per-client cap is off here), and the stuck ones
 * are still open afterwards: the answer did not come from pushing them out. */
static void test_slow_headers_reserve(void **state)
{
    (void)state;
    if (test_pair_pg()) skip(); /* no storage involved: the first pair is enough */
    raise_fd_limit();
    /* a deadline far beyond the test, so nothing is closed by it here */
    static const char *const extra[] = {"--http-header-timeout", "3600", "--http-max-per-client", "0", NULL};
    env e = {0};
    env_start(&e, "hh-slow", extra);
    slow_set *s = calloc(1, sizeof *s);
    slow_open(s, e.s.http_port, NSLOW);
    for (int i = 0; i < 3; i++) {
        json_t *h = http_get_json(e.s.http_port, "/api/v1/health", 200);
        assert_string_equal(json_string_value(json_object_get(h, "status")), "ok");
        json_decref(h);
        json_t *svc = http_get_json(e.s.http_port, "/api/v1/services", 200);
        assert_non_null(json_object_get(svc, "namespaces"));
        json_decref(svc);
        sleep_ms(1000); /* the slow ones go on sending */
    }
    size_t answered = 0;
    size_t gone = slow_gone(s, &answered);
    if (gone) server_fail(&e.s, "%zu of the slow connections were closed (%zu with an answer)", gone, answered);
    for (size_t i = 0; i < s->n; i++) { /* still open: nothing to read, no end */
        char b;
        ssize_t r = recv(s->fd[i], &b, 1, MSG_DONTWAIT | MSG_PEEK);
        if (!(r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) server_fail(&e.s, "slow connection %zu was closed", i);
    }
    slow_close(s);
    free(s);
    server_stop(&e.s);
    env_free(&e);
}

/* With a 2 s header deadline: 1000 connections dribbling header bytes are all closed,
 * while an upload whose body is slower than the deadline goes through, and a kept-alive
 * connection works for two requests and is then closed once idle past the deadline. */
static void test_slow_headers_deadline(void **state)
{
    (void)state;
    if (test_pair_pg()) skip();
    raise_fd_limit();
    static const char *const extra[] = {"--http-header-timeout", "2", "--http-max-per-client", "0", NULL};
    env e = {0};
    env_start(&e, "hh-deadline", extra);
    int port = e.s.http_port;
    slow_set *s = calloc(1, sizeof *s);
    slow_open(s, port, NSLOW);

    /* a slow body: headers at once, then a byte every 100 ms for 3+ s */
    char path[512], head[1024];
    upload_path(path, sizeof path, "slowbody", "slow.td.txt");
    size_t blen = sizeof TD_TEXT - 1;
    snprintf(head, sizeof head, "PUT %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: %zu\r\n\r\n", path, port, blen);
    int fd = conn_open(port);
    conn_send(fd, head, strlen(head));
    for (size_t i = 0; i < blen; i++) {
        conn_send(fd, &TD_TEXT[i], 1);
        if (i < 35) sleep_ms(100);
    }
    cp_buf resp;
    cp_buf_init(&resp);
    if (read_response(fd, 30000, &resp) != 0) server_fail(&e.s, "the slow upload got no answer");
    if (resp_status(&resp) != 201)
        server_fail(&e.s, "slow upload: %.*s", (int)resp.len, (const char *)resp.data);
    conn_close(fd);
    assert_int_equal(listed(&e, "slowbody"), 1);

    /* kept alive: two requests (pipelined, so no pause between them can matter) are both
     * answered, then the connection idles and the server closes it */
    fd = conn_open(port);
    snprintf(head, sizeof head,
             "GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\nGET /api/v1/time HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n",
             port, port);
    conn_send(fd, head, strlen(head));
    cp_buf_reset(&resp);
    conn_read_to_eof(fd, &resp, 60000);
    conn_close(fd);
    size_t answers = 0;
    for (const char *p = (const char *)resp.data, *end = p + resp.len;
         (p = memmem(p, (size_t)(end - p), "HTTP/1.1 200", 12)); p += 12)
        answers++;
    if (answers != 2) server_fail(&e.s, "kept-alive connection: %zu answers: %.*s", answers, (int)resp.len, (const char *)resp.data);

    /* every slow one is closed by the deadline, though it kept sending */
    for (int i = 0; slow_gone(s, NULL) < s->n; i++) {
        if (i == 1200) server_fail(&e.s, "%zu of %zu slow connections still open", s->n - slow_gone(s, NULL), s->n);
        sleep_ms(100);
    }
    size_t answered = 0;
    slow_gone(s, &answered);
    assert_int_equal(answered, 0); /* closed, not answered */
    json_decref(http_get_json(port, "/api/v1/health", 200));
    slow_close(s);
    free(s);
    cp_buf_free(&resp);
    server_stop(&e.s);
    env_free(&e);
}

/* At most HEADER_WAITERS connections wait for their headers: 64 more close the 64 oldest,
 * not the newest, and the API still answers. */
static void test_header_cap(void **state)
{
    (void)state;
    if (test_pair_pg()) skip();
    raise_fd_limit();
    static const char *const extra[] = {"--http-header-timeout", "3600", "--http-max-per-client", "0", NULL};
    env e = {0};
    env_start(&e, "hh-hcap", extra);
    slow_set *s = calloc(1, sizeof *s);
    slow_open(s, e.s.http_port, MAX_SLOW);
    for (int i = 0; slow_gone(s, NULL) < MAX_SLOW - HEADER_WAITERS; i++) {
        if (i == 600) server_fail(&e.s, "%zu connections closed, want %d", slow_gone(s, NULL), MAX_SLOW - HEADER_WAITERS);
        sleep_ms(100);
    }
    sleep_ms(2000); /* two more rounds of the slow sender: nothing else closes */
    size_t answered = 0;
    assert_int_equal(slow_gone(s, &answered), MAX_SLOW - HEADER_WAITERS);
    assert_int_equal(answered, 0);
    pthread_mutex_lock(&s->mu);
    size_t newest_gone = 0;
    for (size_t i = HEADER_WAITERS; i < MAX_SLOW; i++) newest_gone += s->gone[i];
    pthread_mutex_unlock(&s->mu);
    if (newest_gone) server_fail(&e.s, "%zu of the %d newest connections were closed", newest_gone, MAX_SLOW - HEADER_WAITERS);
    json_decref(http_get_json(e.s.http_port, "/api/v1/health", 200));
    json_decref(http_get_json(e.s.http_port, "/api/v1/services", 200));
    slow_close(s);
    free(s);
    server_stop(&e.s);
    env_free(&e);
}

/* --http-max-per-client 4: a fifth connection from the address is refused, and admitted
 * again once one of the four is gone. */
static void test_per_client_cap(void **state)
{
    (void)state;
    if (test_pair_pg()) skip();
    static const char *const extra[] = {"--http-max-per-client", "4", "--http-header-timeout", "3600", NULL};
    env e = {0};
    env_start(&e, "hh-cap", extra);
    int port = e.s.http_port;
    int fd[4];
    char head[256];
    snprintf(head, sizeof head, "GET /api/v1/health HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", port);
    cp_buf resp;
    cp_buf_init(&resp);
    for (int i = 0; i < 4; i++) { /* each answered once: the server has it; then kept alive */
        fd[i] = conn_open(port);
        conn_send(fd[i], head, strlen(head));
        assert_int_equal(read_response(fd[i], 30000, &resp), 0);
        assert_int_equal(resp_status(&resp), 200);
    }
    int st = 0;
    assert_int_equal(http_get(port, "/api/v1/health", &st, &resp, NULL), -1); /* closed unanswered */
    conn_close(fd[0]);
    for (int i = 0;; i++) { /* once the server has seen it go */
        if (http_get(port, "/api/v1/health", &st, &resp, NULL) == 0 && st == 200) break;
        if (i == 200) server_fail(&e.s, "no connection admitted after one of four closed");
        sleep_ms(50);
    }
    for (int i = 1; i < 4; i++) conn_close(fd[i]);
    cp_buf_free(&resp);
    server_stop(&e.s);
    env_free(&e);
}

/* ---- finding 7: cross-origin writes ---------------------------------------------------------- */

/* ---- the ids chip's link template (ui.md §3.3, MAY) ------------------------------------------ */

/* /config hands --trace-link to the UI as given (null without it); a template that is not
 * an http(s) URL with {id} in it, or with bytes a URL cannot hold, stops `serve` at start
 * with a message naming the flag. */
static void test_trace_link(void **state)
{
    (void)state;
    static const char tpl[] = "https://jaeger.example/trace/{id}?param={name}";
    static const char *const extra[] = {"--trace-link", tpl, NULL};
    env e = {0};
    env_start(&e, "hh-tracelink", extra);
    json_t *cfg = http_get_json(e.s.http_port, "/api/v1/config", 200);
    assert_string_equal(json_string_value(json_object_get(cfg, "trace_link")), tpl);
    json_decref(cfg);
    server_stop(&e.s);
    env_free(&e);

    env_start(&e, "hh-notracelink", NULL);
    cfg = http_get_json(e.s.http_port, "/api/v1/config", 200);
    assert_true(json_is_null(json_object_get(cfg, "trace_link")));
    json_decref(cfg);
    server_stop(&e.s);

    static const char *const bad[] = {"javascript:alert(1)//{id}", "https://x.example/trace", "ftp://x.example/{id}",
                                      "https://x.example/{id} x", "https://x.example/\"{id}", "data:text/html,{id}"};
    for (size_t i = 0; i < CP_ARRAY_LEN(bad); i++) {
        const char *argv[] = {"serve", "--data", e.dir, "--agent-port", "auto", "--http-host", "127.0.0.1",
                              "--http-port", "0", "--trace-link", bad[i], NULL};
        cp_buf err;
        cp_buf_init(&err);
        int rc = cli_run(NULL, &err, argv);
        cp_buf_putc(&err, 0);
        if (rc == 0 || !strstr((const char *)err.data, "--trace-link"))
            fail_msg("serve --trace-link '%s': exit %d, stderr %s", bad[i], rc, (const char *)err.data);
        cp_buf_free(&err);
    }
    env_free(&e);
}

static void test_cross_origin(void **state)
{
    (void)state;
    static const char *const extra[] = {"--allowed-origins", "https://ui.example.com, http://ui2.example.org:8080", NULL};
    env e = {0};
    env_start(&e, "hh-origin", extra);
    int port = e.s.http_port;
    cp_buf body, trc;
    cp_buf_init(&body);
    load_fixture("foreign/shop.trcbin", &trc);
    char hdr[256], path[512];
    int st = 0;

    /* refused: a foreign Origin (as the probe sent it, and well-formed), "null", a cross-site fetch */
    static const char *const refused[] = {
        "Origin: evil.example\r\n",
        "Origin: http://evil.example\r\n",
        "Origin: https://ui.example.com.evil.example\r\n",
        "Origin: http://127.0.0.1:1\r\n",
        "Origin: null\r\n",
        "Sec-Fetch-Site: cross-site\r\n",
        "Sec-Fetch-Site: same-site\r\n",
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(refused); i++) {
        st = put_file(port, "x", "a.td.txt", refused[i], &body);
        if (st != 403) fail_msg("PUT with %s: %d, want 403", refused[i], st);
        assert_non_null(memmem(body.data, body.len, "\"cross_origin\"", 14));
    }
    /* a multipart POST as a page elsewhere would send it */
    upload_path(path, sizeof path, "x", "b.td.txt");
    static const char mp[] = "--b\r\nContent-Disposition: form-data; name=\"file\"; filename=\"b.td.txt\"\r\n\r\n" TD_TEXT
                             "\r\n--b--\r\n";
    assert_int_equal(http_request(port, "POST", path,
                                  "Origin: http://evil.example\r\nContent-Type: multipart/form-data; boundary=b\r\n", mp,
                                  sizeof mp - 1, &st, &body, NULL),
                     0);
    assert_int_equal(st, 403);
    /* an import */
    assert_int_equal(http_request(port, "POST", "/api/v1/import?namespace=csrf", "Origin: http://evil.example\r\n",
                                  trc.data, trc.len, &st, &body, NULL),
                     0);
    assert_int_equal(st, 403);
    wait_tmp_empty(&e);
    assert_int_equal(listed(&e, "x"), 0);
    assert_int_equal(calls_in(&e, "csrf"), 0);

    /* taken: no Origin, this server's own origin (as a browser spells it), the allowed ones */
    assert_int_equal(put_file(port, "x", "none.td.txt", NULL, &body), 201);
    snprintf(hdr, sizeof hdr, "Origin: http://127.0.0.1:%d\r\nSec-Fetch-Site: same-origin\r\n", port);
    assert_int_equal(put_file(port, "x", "same.td.txt", hdr, &body), 201);
    long long id = created_id(&body);
    assert_int_equal(put_file(port, "x", "allowed.td.txt", "Origin: https://ui.example.com\r\n", &body), 201);
    assert_int_equal(put_file(port, "x", "allowed2.td.txt", "Origin: HTTPS://UI.Example.com:443\r\n", &body), 201);
    assert_int_equal(put_file(port, "x", "allowed3.td.txt", "Origin: http://ui2.example.org:8080\r\n", &body), 201);
    assert_int_equal(listed(&e, "x"), 5);
    assert_int_equal(http_request(port, "POST", "/api/v1/import?namespace=allowed", "Origin: https://ui.example.com\r\n",
                                  trc.data, trc.len, &st, &body, NULL),
                     0);
    assert_int_equal(st, 200);
    assert_true(calls_in(&e, "allowed") > 0);

    /* deletes: refused cross-origin (by id and by upload path), nothing deleted */
    char api[128];
    snprintf(api, sizeof api, "/api/v1/dumps/%lld", id);
    assert_int_equal(http_request(port, "DELETE", api, "Origin: http://evil.example\r\n", NULL, 0, &st, &body, NULL), 0);
    assert_int_equal(st, 403);
    upload_path(path, sizeof path, "x", "none.td.txt");
    assert_int_equal(http_request(port, "DELETE", path, "Sec-Fetch-Site: cross-site\r\n", NULL, 0, &st, &body, NULL), 0);
    assert_int_equal(st, 403);
    assert_int_equal(listed(&e, "x"), 5);
    /* reads are not affected by an Origin */
    assert_int_equal(http_request(port, "GET", api, "Origin: http://evil.example\r\n", NULL, 0, &st, &body, NULL), 0);
    assert_int_equal(st, 200);
    assert_int_equal(body.len, sizeof TD_TEXT - 1);
    /* the same deletes from this server's page go through */
    snprintf(hdr, sizeof hdr, "Origin: http://127.0.0.1:%d\r\n", port);
    assert_int_equal(http_request(port, "DELETE", api, hdr, NULL, 0, &st, &body, NULL), 0);
    assert_int_equal(st, 204);
    assert_int_equal(http_request(port, "DELETE", path, NULL, NULL, 0, &st, &body, NULL), 0);
    assert_int_equal(st, 204);
    assert_int_equal(listed(&e, "x"), 3);

    cp_buf_free(&trc);
    cp_buf_free(&body);
    server_stop(&e.s);
    env_free(&e);
}

/* ---- finding 7: dump ids ---------------------------------------------------------------------- */

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;
    return x < y ? -1 : x > y;
}

static void sql_exec(const env *e, const char *q, const cp_sql_val *p, size_t np)
{
    cp_sqldb *db = NULL;
    char err[512];
    if (cp_sqldb_open(e->catalog, &db, err, sizeof err) != CP_OK) fail_msg("catalog %s: %s", e->catalog, err);
    int64_t n = 0;
    if (cp_sqldb_exec(db, q, p, np, NULL, NULL, &n) != CP_OK) fail_msg("%s: %s", q, cp_sqldb_errmsg(db));
    assert_int_equal(n, 1);
    cp_sqldb_close(db);
}

static void test_dump_ids(void **state)
{
    (void)state;
    env e = {0};
    env_start(&e, "hh-ids", NULL);
    int port = e.s.http_port;
    cp_buf body;
    cp_buf_init(&body);
    long long ids[20];
    for (int i = 0; i < 20; i++) {
        char name[64];
        snprintf(name, sizeof name, "f%02d.td.txt", i);
        assert_int_equal(put_file(port, "ids", name, NULL, &body), 201);
        ids[i] = created_id(&body);
        assert_true(ids[i] > 0);
    }
    /* the list gives the same ids, as decimal strings */
    char path[512];
    snprintf(path, sizeof path, "/api/v1/dumps?namespace=" NS "&pod=ids&" WIN "&limit=1000");
    json_t *l = http_get_json(port, path, 200);
    assert_int_equal(json_array_size(json_object_get(l, "dumps")), 20);
    json_decref(l);
    long long sorted[20];
    memcpy(sorted, ids, sizeof ids);
    qsort(sorted, 20, sizeof sorted[0], cmp_ll);
    for (int i = 1; i < 20; i++) {
        if (sorted[i] == sorted[i - 1]) fail_msg("id %lld given twice", sorted[i]);
        if (sorted[i] - sorted[i - 1] == 1) fail_msg("consecutive ids %lld and %lld", sorted[i - 1], sorted[i]);
    }
    for (int i = 1; i < 20; i++) /* not in upload order either */
        if (ids[i] == ids[i - 1] + 1) fail_msg("upload %d got the previous id + 1", i);
    /* spread over a large range (63 random bits: below 2^40 for all twenty never happens) */
    if (sorted[19] - sorted[0] < (1LL << 40)) fail_msg("ids %lld..%lld lie close together", sorted[0], sorted[19]);

    /* a row from before (a small sequential id) is still read, listed and deleted */
    cp_sql_val v[] = {cp_sql_i64(7), cp_sql_i64(ids[0])};
    sql_exec(&e, "UPDATE dumps SET uuid = $1 WHERE uuid = $2", v, 2);
    int st = 0;
    assert_int_equal(http_get(port, "/api/v1/dumps/7", &st, &body, NULL), 0);
    assert_int_equal(st, 200);
    assert_int_equal(body.len, sizeof TD_TEXT - 1);
    assert_memory_equal(body.data, TD_TEXT, body.len);
    l = http_get_json(port, path, 200);
    int found = 0;
    json_t *d;
    size_t i;
    json_array_foreach(json_object_get(l, "dumps"), i, d)
        found += !strcmp(json_string_value(json_object_get(d, "id")), "7");
    json_decref(l);
    assert_int_equal(found, 1);
    assert_int_equal(put_file(port, "ids", "after.td.txt", NULL, &body), 201);
    assert_true(created_id(&body) > 7);
    assert_int_equal(http_request(port, "DELETE", "/api/v1/dumps/7", NULL, NULL, 0, &st, &body, NULL), 0);
    assert_int_equal(st, 204);
    assert_int_equal(http_get(port, "/api/v1/dumps/7", &st, &body, NULL), 0);
    assert_int_equal(st, 404);
    assert_int_equal(listed(&e, "ids"), 20);
    cp_buf_free(&body);
    server_stop(&e.s);
    env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_framing, servers_teardown),
        cmocka_unit_test_teardown(test_early_413, servers_teardown),
        cmocka_unit_test_teardown(test_slow_headers_reserve, servers_teardown),
        cmocka_unit_test_teardown(test_slow_headers_deadline, servers_teardown),
        cmocka_unit_test_teardown(test_header_cap, servers_teardown),
        cmocka_unit_test_teardown(test_per_client_cap, servers_teardown),
        cmocka_unit_test_teardown(test_cross_origin, servers_teardown),
        cmocka_unit_test_teardown(test_trace_link, servers_teardown),
        cmocka_unit_test_teardown(test_dump_ids, servers_teardown),
    };
    /* CP_TEST_BOTH_PAIRS */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
