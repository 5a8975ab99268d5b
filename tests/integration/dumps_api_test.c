/* dumps_api_test.c -- issue 6's acceptance over HTTP, on both storage pairs
 * (CP_TEST_BOTH_PAIRS: SQLite + directory, and PostgreSQL + S3 as dumps_api_test@pg-s3):
 *  - every file of fixtures/dumps uploads by PUT (with a length and chunked) and by POST
 *    multipart, lists under its pod and directory time, downloads byte-identical (whole
 *    and by Range), survives `cloudprof compact` and downloads identical again;
 *  - the thread dumps, the top snapshot and the GC log parse through the API;
 *  - bad input: paths, methods, names, limits, a refused namespace, malformed and cut-off
 *    bodies -- each a 4xx with a JSON error, and nothing left behind;
 *  - replacement, DELETE, the pod join with a TCP pod restart, bulk zip, summary;
 *  - a 1 GB heap dump streamed chunked with the server's RSS growing < 64 MB, and one cut
 *    off halfway leaving nothing.
 */
#include "http_util.h"
#include "pair_util.h"
#include "server_util.h"

#include "model/cp_dumpfmt.h"
#include "store/cp_ostore.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <openssl/evp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define NS "shop"
#define POD "orders-5cbcd847d-l2t7t_1719318147399"
#define DIR_PATH "2023/12/19/06/17/34"
#define DIR_MS 1702966654000LL /* 2023-12-19T06:17:34Z */
#define WIN "from=1702900000000&to=1703000000000"

static const char *const fixtures[] = {
    "20230804T164402.td.txt", "20231219T061734UTC.td.txt", "20231219T061734UTC.top.txt",
    "20231219T062953UTC.gc.log", "go-alloc.pprof", "go-goroutine.pprof", "go-heap.pprof", "go-profile.pprof",
    "test-service.heap.hprof.zip",
};
static const char *const fixture_types[] = {"td", "td", "top", "gc", "alloc", "goroutine", "pprof_heap", "profile", "heap"};
#define NFIX (sizeof fixtures / sizeof fixtures[0])

/* ---- environment --------------------------------------------------------------------------- */

typedef struct env {
    test_server s;
    char *dir, *catalog, *store;
    const char *args[40];
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

static void run_compact(env *e)
{
    const char *argv[24];
    size_t n = 0;
    argv[n++] = "compact";
    argv[n++] = "--data";
    argv[n++] = e->s.data;
    for (const char *const *pf = test_pair_flags(e->catalog, e->store); *pf; pf++) argv[n++] = *pf;
    argv[n] = NULL;
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    int rc = cli_run(&out, &err, argv);
    cp_buf_putc(&out, 0);
    cp_buf_putc(&err, 0);
    printf("compact: %s%s", (const char *)out.data, (const char *)err.data);
    assert_int_equal(rc, 0);
    cp_buf_free(&out);
    cp_buf_free(&err);
}

static cp_ostore *open_store(const env *e)
{
    cp_ostore_config c = {.url = e->store, .endpoint = test_s3_endpoint(), .access_key = test_s3_access_key(),
                          .secret_key = test_s3_secret_key()};
    cp_ostore *s = NULL;
    char err[512];
    if (cp_ostore_open(&c, &s, err, sizeof err) != CP_OK) fail_msg("store %s: %s", e->store, err);
    return s;
}

static int count_item(void *ud, const cp_ostore_item *it)
{
    if (strstr(it->key, ".hprof")) ++*(int *)ud;
    return 0;
}

/* Heap objects in the store. */
static int store_heaps(const env *e)
{
    cp_ostore *s = open_store(e);
    int n = 0;
    char err[512];
    assert_int_equal(s->ops->list(s, "", count_item, &n, err, sizeof err), CP_OK);
    cp_ostore_close(s);
    return n;
}

/* Files left in <data>/dumps-tmp (bodies being received). */
static int tmp_files(const env *e)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/dumps-tmp", e->s.data);
    DIR *d = opendir(path);
    if (!d) return 0;
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        if (de->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

/* ---- requests -------------------------------------------------------------------------------- */

static void upload_path(char *out, size_t cap, const char *ns, const char *pod, const char *file)
{
    snprintf(out, cap, "/diagnostic/%s/" DIR_PATH "/%s/%s", ns, pod, file);
}

static int put_len(int port, const char *path, const void *p, size_t n, cp_buf *body)
{
    int status = 0;
    assert_int_equal(http_request(port, "PUT", path, "Content-Type: application/octet-stream\r\n", p, n, &status, body,
                                  NULL),
                     0);
    return status;
}

/* The status code of a raw response ("HTTP/1.1 201 Created..."). */
static int raw_status(const cp_buf *r)
{
    if (r->len < 12 || memcmp(r->data, "HTTP/1.", 7)) return -1;
    return atoi((const char *)r->data + 9);
}

/* PUT with Transfer-Encoding: chunked and no length, as diagtools streams heap dumps
 * (the connection is not half-closed: Go's client does not do that either). */
static int put_chunked(int port, const char *path, const uint8_t *p, size_t n, size_t chunk)
{
    cp_buf req, resp;
    cp_buf_init(&req);
    cp_buf_init(&resp);
    cp_buf_printf(&req,
                  "PUT %s HTTP/1.1\r\nHost: x\r\nUser-Agent: Go-http-client/1.1\r\n"
                  "Content-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
                  path);
    for (size_t off = 0; off < n; off += chunk) {
        size_t k = n - off < chunk ? n - off : chunk;
        cp_buf_printf(&req, "%zx\r\n", k);
        cp_buf_append(&req, p + off, k);
        cp_buf_puts(&req, "\r\n");
    }
    cp_buf_puts(&req, "0\r\n\r\n");
    int fd = conn_open(port);
    conn_send(fd, req.data, req.len);
    conn_read_to_eof(fd, &resp, 60000);
    conn_close(fd);
    int st = raw_status(&resp);
    cp_buf_free(&req);
    cp_buf_free(&resp);
    return st;
}

#define BOUNDARY "d4f2a0c9e1b37f5a6c8e0b2d4f6a8c0e1b3d5f7a9c1e3b5d7f9a1c3e5b7d9f1a"

static void multipart_body(cp_buf *b, const char *filename, const void *p, size_t n)
{
    cp_buf_puts(b, "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"note\"\r\n\r\nignored\r\n");
    cp_buf_printf(b,
                  "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"%s\"\r\n"
                  "Content-Type: application/octet-stream\r\n\r\n",
                  filename);
    cp_buf_append(b, p, n);
    cp_buf_puts(b, "\r\n--" BOUNDARY "--\r\n");
}

static int post_multipart(int port, const char *path, const char *filename, const void *p, size_t n, cp_buf *resp)
{
    cp_buf b;
    cp_buf_init(&b);
    multipart_body(&b, filename, p, n);
    int status = 0;
    assert_int_equal(http_post(port, path, "multipart/form-data; boundary=" BOUNDARY, b.data, b.len, &status, resp, NULL),
                     0);
    cp_buf_free(&b);
    return status;
}

static json_t *get_json(const env *e, const char *path)
{
    return http_get_json(e->s.http_port, path, 200);
}

/* The dumps of one pod, newest first. */
static json_t *list_pod(const env *e, const char *pod)
{
    char path[512];
    snprintf(path, sizeof path, "/api/v1/dumps?namespace=" NS "&pod=%s&" WIN "&limit=1000", pod);
    return get_json(e, path);
}

static json_t *find_name(json_t *list, const char *name)
{
    json_t *arr = json_object_get(list, "dumps"), *d;
    size_t i;
    json_array_foreach(arr, i, d) if (!strcmp(json_string_value(json_object_get(d, "name")), name)) return d;
    return NULL;
}

/* GET /api/v1/dumps/{id} must give exactly want. */
static void assert_download(const env *e, const char *id, const cp_buf *want, const char *name)
{
    char path[128], v[512];
    snprintf(path, sizeof path, "/api/v1/dumps/%s", id);
    cp_buf body, hdr;
    cp_buf_init(&body);
    cp_buf_init(&hdr);
    int status = 0;
    assert_int_equal(http_get(e->s.http_port, path, &status, &body, &hdr), 0);
    assert_int_equal(status, 200);
    assert_int_equal(body.len, want->len);
    assert_memory_equal(body.data, want->data, want->len);
    assert_true(http_header(&hdr, "Content-Disposition", v, sizeof v));
    assert_non_null(strstr(v, name));
    /* a range: bytes 100-199 (or the whole of a short file) */
    if (want->len > 200) {
        assert_int_equal(http_request(e->s.http_port, "GET", path, "Range: bytes=100-199\r\n", NULL, 0, &status, &body,
                                      &hdr),
                         0);
        assert_int_equal(status, 206);
        assert_int_equal(body.len, 100);
        assert_memory_equal(body.data, want->data + 100, 100);
        assert_true(http_header(&hdr, "Content-Range", v, sizeof v));
        char cr[64];
        snprintf(cr, sizeof cr, "bytes 100-199/%zu", want->len);
        assert_string_equal(v, cr);
    }
    cp_buf_free(&body);
    cp_buf_free(&hdr);
}

/* Uploads every fixture: under POD by PUT (a length for the text, chunked for the rest),
 * under "<POD>-post"... no: under pod "b-<POD>" by POST multipart. */
static void upload_all(const env *e, cp_buf *data)
{
    char path[1024];
    for (size_t i = 0; i < NFIX; i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "dumps/%s", fixtures[i]);
        load_fixture(rel, &data[i]);
        upload_path(path, sizeof path, NS, POD, fixtures[i]);
        int st = i % 2 ? put_chunked(e->s.http_port, path, data[i].data, data[i].len, 4093)
                       : put_len(e->s.http_port, path, data[i].data, data[i].len, NULL);
        if (st != 201) server_fail(&e->s, "PUT %s: %d", fixtures[i], st);
        upload_path(path, sizeof path, NS, "b-" POD, fixtures[i]);
        cp_buf resp;
        cp_buf_init(&resp);
        st = post_multipart(e->s.http_port, path, fixtures[i], data[i].data, data[i].len, &resp);
        if (st != 201) server_fail(&e->s, "POST %s: %d %.*s", fixtures[i], st, (int)resp.len, (const char *)resp.data);
        json_t *j = json_loadb((const char *)resp.data, resp.len, 0, NULL);
        assert_non_null(j);
        assert_int_equal(json_integer_value(json_object_get(j, "bytes")), data[i].len);
        assert_string_equal(json_string_value(json_object_get(j, "type")), fixture_types[i]);
        json_decref(j);
        cp_buf_free(&resp);
    }
}

/* Both pods list every fixture with the right type, time, size; each downloads identical. */
static void check_all(const env *e, const cp_buf *data, const char *want_location_text)
{
    const char *pods[] = {POD, "b-" POD};
    for (size_t p = 0; p < 2; p++) {
        json_t *l = list_pod(e, pods[p]);
        assert_int_equal(json_array_size(json_object_get(l, "dumps")), NFIX);
        for (size_t i = 0; i < NFIX; i++) {
            json_t *d = find_name(l, fixtures[i]);
            if (!d) fail_msg("%s not listed for %s", fixtures[i], pods[p]);
            assert_string_equal(json_string_value(json_object_get(d, "type")), fixture_types[i]);
            assert_string_equal(json_string_value(json_object_get(d, "namespace")), NS);
            assert_string_equal(json_string_value(json_object_get(d, "pod")), pods[p]);
            assert_int_equal(json_integer_value(json_object_get(d, "time_ms")), DIR_MS);
            assert_int_equal(json_integer_value(json_object_get(d, "bytes")), data[i].len);
            const char *loc = json_string_value(json_object_get(d, "location"));
            if (!strcmp(fixture_types[i], "heap")) assert_string_equal(loc, "object");
            else assert_string_equal(loc, want_location_text);
            assert_download(e, json_string_value(json_object_get(d, "id")), &data[i], fixtures[i]);
        }
        json_decref(l);
    }
}

static const char *id_of(json_t *list, const char *name)
{
    json_t *d = find_name(list, name);
    assert_non_null(d);
    return json_string_value(json_object_get(d, "id"));
}

static json_t *state_count(json_t *td, const char *state)
{
    return json_object_get(json_object_get(td, "states"), state);
}

static json_t *thread_named(json_t *td, const char *name)
{
    json_t *t;
    size_t i;
    json_array_foreach(json_object_get(td, "threads"), i, t) if (!strcmp(json_string_value(json_object_get(t, "name")), name)) return t;
    return NULL;
}

/* The parsed views through the API (§10's facts). */
static void check_views(const env *e)
{
    char path[256];
    json_t *l = list_pod(e, POD);
    snprintf(path, sizeof path, "/api/v1/dumps/%s/threads", id_of(l, "20231219T061734UTC.td.txt"));
    json_t *td = get_json(e, path);
    assert_int_equal(json_array_size(json_object_get(td, "threads")), 75);
    assert_int_equal(json_integer_value(json_object_get(td, "java_threads")), 73);
    assert_int_equal(json_integer_value(state_count(td, "RUNNABLE")), 19);
    assert_int_equal(json_integer_value(state_count(td, "WAITING (parking)")), 25);
    assert_int_equal(json_integer_value(state_count(td, "TIMED_WAITING (parking)")), 25);
    assert_int_equal(json_integer_value(state_count(td, "TIMED_WAITING (sleeping)")), 2);
    json_t *t2 = thread_named(td, "Thread-2");
    assert_non_null(t2);
    assert_int_equal(json_integer_value(json_object_get(t2, "nid")), 0xf9);
    assert_true(json_array_size(json_object_get(t2, "frames")) > 0);
    json_decref(td);

    snprintf(path, sizeof path, "/api/v1/dumps/%s/threads", id_of(l, "20230804T164402.td.txt"));
    td = get_json(e, path);
    assert_int_equal(json_array_size(json_object_get(td, "threads")), 269);
    assert_int_equal(json_integer_value(json_object_get(td, "java_threads")), 258);
    assert_int_equal(json_integer_value(state_count(td, "WAITING (parking)")), 220);
    json_decref(td);

    snprintf(path, sizeof path, "/api/v1/dumps/%s/top", id_of(l, "20231219T061734UTC.top.txt"));
    json_t *top = get_json(e, path);
    assert_int_equal(json_array_size(json_object_get(top, "rows")), 76);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(top, "threads"), "total")), 76);
    json_decref(top);

    snprintf(path, sizeof path, "/api/v1/dumps/%s/profile", id_of(l, "go-profile.pprof"));
    json_t *pf = get_json(e, path);
    assert_int_equal(json_integer_value(json_object_get(pf, "samples")), 1);
    assert_int_equal(json_integer_value(json_object_get(pf, "period")), 10000000);
    json_decref(pf);

    /* a view of the wrong type */
    snprintf(path, sizeof path, "/api/v1/dumps/%s/threads", id_of(l, "20231219T061734UTC.top.txt"));
    json_decref(http_get_json(e->s.http_port, path, 400));
    json_decref(l);

    /* GC pauses of the pod: the log's 160 young pauses (the window covers the whole log) */
    json_t *gc = get_json(e, "/api/v1/gc?namespace=" NS "&pod=" POD "&from=1702960000000&to=1702970000000");
    json_t *ps = json_object_get(gc, "pauses");
    assert_int_equal(json_array_size(ps), 160);
    json_t *tot = json_object_get(gc, "totals");
    assert_int_equal(json_integer_value(json_object_get(tot, "count")), 160);
    assert_true(fabs(json_real_value(json_object_get(tot, "total_ms")) - 1017.677) < 0.01);
    assert_true(fabs(json_real_value(json_object_get(tot, "max_ms")) - 63.286) < 0.001);
    json_t *p0 = json_array_get(ps, 0);
    assert_string_equal(json_string_value(json_object_get(p0, "kind")), "Pause Young");
    assert_int_equal(json_integer_value(json_object_get(p0, "gc_id")), 336);
    assert_true(json_integer_value(json_object_get(p0, "heap_before_kib")) > json_integer_value(json_object_get(p0, "heap_after_kib")));
    json_decref(gc);
    json_decref(http_get_json(e->s.http_port, "/api/v1/gc?" WIN, 400)); /* pod is required */
}

static int mem_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    const cp_buf *b = ud;
    if (off > b->len || n > b->len - off) return CP_EIO;
    memcpy(dst, b->data + off, n);
    return CP_OK;
}

/* ---- tests ------------------------------------------------------------------------------------- */

static void test_fixtures_roundtrip(void **state)
{
    (void)state;
    env e = {0};
    env_start(&e, "dumps-rt", NULL);
    cp_buf data[NFIX];
    for (size_t i = 0; i < NFIX; i++) cp_buf_init(&data[i]);
    upload_all(&e, data);
    check_all(&e, data, "hot");
    check_views(&e);

    /* the heap dump's extras: its zip entry */
    json_t *l = list_pod(&e, POD);
    json_t *info = json_object_get(find_name(l, "test-service.heap.hprof.zip"), "info");
    assert_string_equal(json_string_value(json_object_get(info, "entry")), "-");
    assert_int_equal(json_integer_value(json_object_get(info, "entry_bytes")), 9450);
    json_decref(l);

    /* summary: two pods, every type counted */
    json_t *sum = get_json(&e, "/api/v1/dumps/summary?namespace=" NS "&" WIN);
    json_t *pods = json_object_get(sum, "pods");
    assert_int_equal(json_array_size(pods), 2);
    json_t *types = json_object_get(json_array_get(pods, 0), "types");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(types, "td"), "count")), 2);
    assert_int_equal(json_integer_value(json_object_get(json_object_get(types, "heap"), "count")), 1);
    assert_string_equal(json_string_value(json_object_get(json_array_get(pods, 0), "service")), "b-orders");
    assert_string_equal(json_string_value(json_object_get(json_array_get(pods, 1), "service")), "orders");
    json_decref(sum);

    /* bulk zip of the thread dumps of both pods: 4 entries "<pod>/<name>" */
    json_t *est = get_json(&e, "/api/v1/dumps/download?namespace=" NS "&type=td&" WIN "&estimate=1");
    assert_int_equal(json_integer_value(json_object_get(est, "files")), 4);
    assert_int_equal(json_integer_value(json_object_get(est, "bytes")), 2 * (data[0].len + data[1].len));
    json_decref(est);
    cp_buf zip, hdr;
    cp_buf_init(&zip);
    cp_buf_init(&hdr);
    int status = 0;
    assert_int_equal(http_get(e.s.http_port, "/api/v1/dumps/download?namespace=" NS "&type=td&" WIN, &status, &zip, &hdr), 0);
    assert_int_equal(status, 200);
    char v[512];
    assert_true(http_header(&hdr, "Content-Disposition", v, sizeof v));
    assert_non_null(strstr(v, "20231218T114640UTC-20231219T153320UTC.td.zip"));
    cp_zip_info zi;
    char err[256];
    assert_int_equal(cp_zip_probe(mem_pread, &zip, zip.len, &zi, err, sizeof err), CP_OK);
    assert_int_equal(zi.entries, 4);
    assert_non_null(strstr(zi.first_name, POD "/20")); /* "<pod>/<name>" */
    assert_int_equal(zi.total_size, 2 * (data[0].len + data[1].len));
    cp_buf_free(&zip);
    cp_buf_free(&hdr);

    /* compaction: every small file moves into Parquet, the heap dump stays an object */
    run_compact(&e);
    check_all(&e, data, "cold");
    check_views(&e);
    for (size_t i = 0; i < NFIX; i++) cp_buf_free(&data[i]);
    server_stop(&e.s);
    env_free(&e);
}

/* A 4xx answer must be JSON with an "error". */
static void assert_json_error(const cp_buf *body)
{
    json_t *j = json_loadb((const char *)body->data, body->len, 0, NULL);
    if (!j) fail_msg("not JSON: %.*s", (int)body->len, (const char *)body->data);
    assert_non_null(json_string_value(json_object_get(j, "error")));
    json_decref(j);
}

static size_t listed(const env *e, const char *pod)
{
    json_t *l = list_pod(e, pod);
    size_t n = json_array_size(json_object_get(l, "dumps"));
    json_decref(l);
    return n;
}

/* Waits until the server dropped what a cut-off request left (temp files). */
static void wait_tmp_empty(const env *e)
{
    for (int64_t deadline = test_now_ms() + TEST_WAIT_MS; tmp_files(e) > 0 && test_now_ms() < deadline;)
        usleep(50000);
    assert_int_equal(tmp_files(e), 0);
}

static void test_bad_input(void **state)
{
    (void)state;
    static const char *const extra[] = {"--blacklist", "banned", "--dump-max-size", "td=100K", NULL};
    env e = {0};
    env_start(&e, "dumps-bad", extra);
    int port = e.s.http_port;
    cp_buf body, small;
    cp_buf_init(&body);
    cp_buf_init(&small);
    load_fixture("dumps/20231219T061734UTC.td.txt", &small); /* 86 KB: under the 100K limit */

    /* paths (§9 item 5) */
    static const char *const bad_paths[] = {
        "/diagnostic/shop/2023/12/19/06/17/34/a.td.txt",                  /* 8 segments */
        "/diagnostic/shop/2023/12/19/06/17/34/p/x/a.td.txt",              /* 10 */
        "/diagnostic/shop/2023/12/19/06/17/34/../a.td.txt",               /* .. */
        "/diagnostic/shop/2023/13/19/06/17/34/p/a.td.txt",                /* month 13 */
        "/diagnostic/shop/2023/12/19/06/17/34//a.td.txt",                 /* empty pod */
        "/diagnostic/shop/2023/12/19/06/17/34/p%2F..%2Fx/a.td.txt",       /* an escaped slash */
        "/diagnostic/shop/2023/12/19/06/17/34/p/evil.exe",                /* unknown extension */
        "/diagnostic/shop/2023/02/30/06/17/34/p/a.td.txt",                /* no such day */
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(bad_paths); i++) {
        int st = put_len(port, bad_paths[i], small.data, small.len, &body);
        if (st != 400) fail_msg("%s: %d, want 400", bad_paths[i], st);
        assert_json_error(&body);
    }
    /* GET on an upload path: 405 with Allow */
    char path[1024], v[128];
    upload_path(path, sizeof path, NS, "p", "a.td.txt");
    cp_buf hdr;
    cp_buf_init(&hdr);
    int st = 0;
    assert_int_equal(http_get(port, path, &st, &body, &hdr), 0);
    assert_int_equal(st, 405);
    assert_true(http_header(&hdr, "Allow", v, sizeof v));
    assert_string_equal(v, "PUT, POST, DELETE");
    /* a refused namespace */
    upload_path(path, sizeof path, "banned", "p", "a.td.txt");
    assert_int_equal(put_len(port, path, small.data, small.len, &body), 403);
    assert_json_error(&body);
    /* the per-type limit: with a length (answered at once) and chunked (at the end) */
    cp_buf big;
    cp_buf_init(&big);
    load_fixture("dumps/20230804T164402.td.txt", &big); /* 351 KB */
    upload_path(path, sizeof path, NS, "p", "big.td.txt");
    assert_int_equal(put_len(port, path, big.data, big.len, &body), 413);
    assert_json_error(&body);
    assert_int_equal(put_chunked(port, path, big.data, big.len, 8192), 413);
    /* an empty file */
    upload_path(path, sizeof path, NS, "p", "empty.td.txt");
    assert_int_equal(put_len(port, path, "", 0, &body), 400);
    assert_json_error(&body);
    /* multipart: no closing delimiter; no "file" part */
    upload_path(path, sizeof path, NS, "p", "x.hprof.zip");
    cp_buf mp;
    cp_buf_init(&mp);
    multipart_body(&mp, "x.hprof.zip", small.data, small.len);
    int status = 0;
    assert_int_equal(http_post(port, path, "multipart/form-data; boundary=" BOUNDARY, mp.data, mp.len - 8, &status, &body,
                               NULL),
                     0);
    assert_int_equal(status, 400);
    assert_json_error(&body);
    static const char nofile[] = "--" BOUNDARY "\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\nv\r\n--" BOUNDARY "--\r\n";
    assert_int_equal(http_post(port, path, "multipart/form-data; boundary=" BOUNDARY, nofile, sizeof nofile - 1, &status,
                               &body, NULL),
                     0);
    assert_int_equal(status, 400);
    assert_json_error(&body);
    assert_int_equal(listed(&e, "p"), 0);

    /* cut off: a length announced, half sent, the connection closed */
    upload_path(path, sizeof path, NS, "p", "cut.td.txt");
    int fd = conn_open(port);
    char head[1400];
    snprintf(head, sizeof head, "PUT %s HTTP/1.1\r\nHost: x\r\nContent-Length: %zu\r\n\r\n", path, small.len);
    conn_send(fd, head, strlen(head));
    conn_send(fd, small.data, small.len / 2);
    usleep(200000);
    conn_close(fd);
    /* cut off: chunked, 3 MB of a heap dump, no final chunk */
    upload_path(path, sizeof path, NS, "p", "20231219T061734.hprof.zip");
    fd = conn_open(port);
    snprintf(head, sizeof head, "PUT %s HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", path);
    conn_send(fd, head, strlen(head));
    uint8_t *blk = calloc(1, 3 << 20);
    for (int i = 0; i < 3; i++) {
        conn_send(fd, "100000\r\n", 8);
        conn_send(fd, blk, 1 << 20);
        conn_send(fd, "\r\n", 2);
    }
    usleep(200000);
    conn_close(fd);
    wait_tmp_empty(&e);
    assert_int_equal(listed(&e, "p"), 0);
    assert_int_equal(store_heaps(&e), 0);
    /* ... and then the whole upload succeeds */
    assert_int_equal(put_chunked(port, path, blk, 3 << 20, 65536), 201);
    assert_int_equal(listed(&e, "p"), 1);
    assert_int_equal(store_heaps(&e), 1);
    free(blk);

    /* replacement (§4.1): gc.log re-sent to the same URL -> 204, same id, new bytes */
    upload_path(path, sizeof path, NS, "p", "gc.log");
    static const char gc1[] = "[2023-12-19T06:00:00.000+0000][1.0s][info][gc] GC(0) Pause Young (Allocation Failure) 10M->2M(64M) 1.500ms\n";
    static const char gc2[] = "[2023-12-19T06:00:00.000+0000][1.0s][info][gc] GC(0) Pause Young (Allocation Failure) 10M->2M(64M) 1.500ms\n"
                              "[2023-12-19T06:00:05.000+0000][6.0s][info][gc] GC(1) Pause Full (System.gc()) 20M->1M(64M) 9.250ms\n";
    assert_int_equal(put_len(port, path, gc1, sizeof gc1 - 1, &body), 201);
    json_t *j = json_loadb((const char *)body.data, body.len, 0, NULL);
    char id[32];
    snprintf(id, sizeof id, "%s", json_string_value(json_object_get(j, "id")));
    json_decref(j);
    assert_int_equal(put_len(port, path, gc2, sizeof gc2 - 1, &body), 204);
    json_t *l = list_pod(&e, "p");
    assert_int_equal(json_array_size(json_object_get(l, "dumps")), 2);
    json_t *g = find_name(l, "gc.log");
    assert_string_equal(json_string_value(json_object_get(g, "id")), id);
    assert_int_equal(json_integer_value(json_object_get(g, "version")), 2);
    json_decref(l);
    cp_buf want;
    cp_buf_init(&want);
    cp_buf_append(&want, gc2, sizeof gc2 - 1);
    assert_download(&e, id, &want, "gc.log");
    json_t *gc = get_json(&e, "/api/v1/gc?pod=p&from=1702965600000&to=1702965700000");
    assert_int_equal(json_array_size(json_object_get(gc, "pauses")), 2);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(gc, "pauses"), 1), "kind")),
                        "Pause Full");
    json_decref(gc);
    /* DELETE by upload path (§4.3): 204, then 404 */
    assert_int_equal(http_request(port, "DELETE", path, NULL, NULL, 0, &status, &body, NULL), 0);
    assert_int_equal(status, 204);
    assert_int_equal(http_request(port, "DELETE", path, NULL, NULL, 0, &status, &body, NULL), 0);
    assert_int_equal(status, 404);
    assert_int_equal(listed(&e, "p"), 1);
    /* DELETE through the API: the heap dump, and its object goes */
    l = list_pod(&e, "p");
    char api[128];
    snprintf(api, sizeof api, "/api/v1/dumps/%s", json_string_value(json_object_get(json_array_get(json_object_get(l, "dumps"), 0), "id")));
    json_decref(l);
    assert_int_equal(http_request(port, "DELETE", api, NULL, NULL, 0, &status, &body, NULL), 0);
    assert_int_equal(status, 204);
    assert_int_equal(http_request(port, "DELETE", api, NULL, NULL, 0, &status, &body, NULL), 0);
    assert_int_equal(status, 404);
    assert_int_equal(http_get(port, api, &status, &body, NULL), 0);
    assert_int_equal(status, 404);
    assert_int_equal(store_heaps(&e), 0);
    assert_int_equal(listed(&e, "p"), 0);

    /* more GC logs than one /gc request reads (500): the answer says truncated, not an error */
    for (int i = 1; i <= 501; i++) {
        char name[32];
        snprintf(name, sizeof name, "gc.log.%d", i);
        upload_path(path, sizeof path, NS, "many", name);
        assert_int_equal(put_len(port, path, gc1, sizeof gc1 - 1, &body), 201);
    }
    gc = get_json(&e, "/api/v1/gc?pod=many&from=1702965600000&to=1702965700000");
    assert_true(json_is_true(json_object_get(gc, "truncated")));
    assert_int_equal(json_integer_value(json_object_get(gc, "files")), 500);
    assert_int_equal(json_array_size(json_object_get(gc, "pauses")), 1); /* one pause, repeated in every log */
    json_decref(gc);

    /* the agent's self-update probe: 404 at once (§7.4); the legacy download wants its parameters */
    assert_int_equal(http_get(port, "/api/v1/diagnostic/agent/updates?forMD5=", &status, &body, NULL), 0);
    assert_int_equal(status, 404);
    assert_int_equal(http_get(port, "/cdt/v2/download?dateFrom=1&dateTo=2&type=td", &status, &body, NULL), 0);
    assert_int_equal(status, 400);
    assert_json_error(&body);
    /* and nothing was left in the temp directory by any of it */
    wait_tmp_empty(&e);

    cp_buf_free(&want);
    cp_buf_free(&mp);
    cp_buf_free(&big);
    cp_buf_free(&hdr);
    cp_buf_free(&small);
    cp_buf_free(&body);
    server_stop(&e.s);
    env_free(&e);
}

/* §5 / §9 item 7: a td under the TCP pod string and one under the bare host name attach
 * to the same pod restart. */
static void test_pod_join(void **state)
{
    (void)state;
    env e = {0};
    env_start(&e, "dumps-join", NULL);
    int fd = conn_open(e.s.port);
    agent_handshake(fd, 100605, "orders-x_1719318147399", "orders", "shop");
    uint8_t reply[36];
    agent_init(fd, "calls", 0, 1, reply);
    /* the restart is registered at the server's next commit: wait until discovery lists it */
    int seen = 0;
    for (int64_t deadline = test_now_ms() + TEST_WAIT_MS; !seen && test_now_ms() < deadline;) {
        cp_buf sv;
        cp_buf_init(&sv);
        int st = 0;
        if (http_get(e.s.http_port, "/api/v1/services", &st, &sv, NULL) == 0 && st == 200 &&
            memmem(sv.data, sv.len, "orders-x_1719318147399", 22))
            seen = 1;
        cp_buf_free(&sv);
        if (!seen) usleep(50000);
    }
    if (!seen) server_fail(&e.s, "the pod restart never showed up in /api/v1/services");
    cp_buf small, body;
    cp_buf_init(&small);
    cp_buf_init(&body);
    load_fixture("dumps/20231219T061734UTC.td.txt", &small);
    char path[1024];
    snprintf(path, sizeof path, "/diagnostic/shop/2024/06/25/12/30/00/orders-x_1719318147399/20240625T123000.td.txt");
    assert_int_equal(put_len(e.s.http_port, path, small.data, small.len, &body), 201);
    snprintf(path, sizeof path, "/diagnostic/shop/2024/06/25/12/31/00/orders-x/20240625T123100.td.txt");
    assert_int_equal(put_len(e.s.http_port, path, small.data, small.len, &body), 201);
    json_t *l = http_get_json(e.s.http_port,
                              "/api/v1/dumps?namespace=shop&pod=orders-x_1719318147399&from=1719316800000&to=1719320400000",
                              200);
    json_t *arr = json_object_get(l, "dumps"), *d;
    assert_int_equal(json_array_size(arr), 2);
    size_t i;
    json_array_foreach(arr, i, d)
    {
        assert_string_equal(json_string_value(json_object_get(d, "restart_pod")), "orders-x_1719318147399");
        assert_string_equal(json_string_value(json_object_get(d, "service")), "orders");
    }
    json_decref(l);
    conn_close(fd);
    cp_buf_free(&small);
    cp_buf_free(&body);
    server_stop(&e.s);
    env_free(&e);
}

/* ---- the 1 GB heap dump ------------------------------------------------------------------------ */

static long proc_kib(pid_t pid, const char *field)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long v = -1;
    size_t fl = strlen(field);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, field, fl) && line[fl] == ':') v = atol(line + fl + 1);
    fclose(f);
    return v;
}

static void fill(uint8_t *p, size_t n, uint64_t *x)
{
    for (size_t i = 0; i + 8 <= n; i += 8) {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        memcpy(p + i, x, 8);
    }
}

static void hex(const unsigned char *d, unsigned n, char *out)
{
    for (unsigned i = 0; i < n; i++) sprintf(out + 2 * i, "%02x", d[i]);
}

/* Streams the body of GET path and returns its SHA-256 and length. */
static uint64_t download_sha(int port, const char *path, char out[65])
{
    int fd = conn_open(port);
    char req[512];
    snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
    conn_send(fd, req, strlen(req));
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    cp_buf head;
    cp_buf_init(&head);
    uint8_t *buf = malloc(1 << 20);
    uint64_t total = 0;
    int in_body = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, 60000) <= 0) fail_msg("download %s: timeout", path);
        ssize_t n = recv(fd, buf, 1 << 20, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (in_body) {
            EVP_DigestUpdate(md, buf, (size_t)n);
            total += (uint64_t)n;
            continue;
        }
        cp_buf_append(&head, buf, (size_t)n);
        const uint8_t *end = memmem(head.data, head.len, "\r\n\r\n", 4);
        if (end) {
            in_body = 1;
            assert_true(raw_status(&head) == 200);
            size_t off = (size_t)(end + 4 - head.data);
            EVP_DigestUpdate(md, head.data + off, head.len - off);
            total += head.len - off;
        }
    }
    unsigned char d[32];
    unsigned dl = 0;
    EVP_DigestFinal_ex(md, d, &dl);
    hex(d, dl, out);
    EVP_MD_CTX_free(md);
    free(buf);
    cp_buf_free(&head);
    conn_close(fd);
    return total;
}

static void test_heap_1gb(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    const uint64_t mb = 256; /* ASan's allocator and shadow make RSS meaningless: size only */
#else
    const uint64_t mb = 1024;
#endif
    env e = {0};
    env_start(&e, "dumps-1gb", NULL);
    char path[1024];
    upload_path(path, sizeof path, NS, POD, "20231219T061800.hprof.zip");
    long rss0 = proc_kib(e.s.pid, "VmRSS");
    assert_true(rss0 > 0);
    int fd = conn_open(e.s.http_port);
    char head[1400];
    snprintf(head, sizeof head,
             "PUT %s HTTP/1.1\r\nHost: x\r\nUser-Agent: Go-http-client/1.1\r\nContent-Type: application/octet-stream\r\n"
             "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
             path);
    conn_send(fd, head, strlen(head));
    const size_t piece = 1 << 20;
    uint8_t *buf = malloc(piece);
    uint64_t x = 88172645463325252ULL;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (uint64_t i = 0; i < mb; i++) {
        fill(buf, piece, &x);
        EVP_DigestUpdate(md, buf, piece);
        char sz[16];
        snprintf(sz, sizeof sz, "%zx\r\n", piece);
        conn_send(fd, sz, strlen(sz));
        conn_send(fd, buf, piece);
        conn_send(fd, "\r\n", 2);
    }
    conn_send(fd, "0\r\n\r\n", 5);
    cp_buf resp;
    cp_buf_init(&resp);
    conn_read_to_eof(fd, &resp, 300000);
    conn_close(fd);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (raw_status(&resp) != 201) server_fail(&e.s, "1 GB upload: %.*s", (int)resp.len, (const char *)resp.data);
    long hwm = proc_kib(e.s.pid, "VmHWM");
    unsigned char d[32];
    unsigned dl = 0;
    char want[65], got[65];
    EVP_DigestFinal_ex(md, d, &dl);
    hex(d, dl, want);
    EVP_MD_CTX_free(md);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("heap upload: %llu MB in %.1f s (%.0f MB/s), server RSS %ld KiB before, peak %ld KiB (+%ld KiB)\n",
           (unsigned long long)mb, secs, (double)mb / secs, rss0, hwm, hwm - rss0);
#if !defined(__SANITIZE_ADDRESS__)
    assert_true(hwm - rss0 < 64 * 1024);
#endif
    json_t *l = list_pod(&e, POD);
    json_t *dump = find_name(l, "20231219T061800.hprof.zip");
    assert_non_null(dump);
    assert_int_equal(json_integer_value(json_object_get(dump, "bytes")), mb << 20);
    assert_string_equal(json_string_value(json_object_get(dump, "sha256")), want);
    char api[128];
    snprintf(api, sizeof api, "/api/v1/dumps/%s", json_string_value(json_object_get(dump, "id")));
    json_decref(l);
    assert_int_equal(download_sha(e.s.http_port, api, got), mb << 20);
    assert_string_equal(got, want);
    assert_int_equal(store_heaps(&e), 1);
    wait_tmp_empty(&e);
    free(buf);
    cp_buf_free(&resp);
    server_stop(&e.s);
    env_free(&e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_fixtures_roundtrip, servers_teardown),
        cmocka_unit_test_teardown(test_bad_input, servers_teardown),
        cmocka_unit_test_teardown(test_pod_join, servers_teardown),
        cmocka_unit_test_teardown(test_heap_1gb, servers_teardown),
    };
    /* CP_TEST_BOTH_PAIRS */
    return cmocka_run_group_tests(tests, NULL, NULL);
}
