/* hprof_api_test.c -- GET /api/v1/dumps/{id}/hprof through the real server (issue 19 item
 * 9), with `--auth basic` (a viewer of ns-a, an admin) and uploads by token, as diagtools
 * sends heap dumps (a .hprof.zip PUT to /diagnostic/...), dumps written by
 * tests/util/hprof_gen.c and zipped with a streaming writer (data descriptors, ZIP64):
 *  - the summary lists the generated classes with their exact counts and shallow bytes,
 *    header fields and totals; `top` cuts the list; a second request is served from the
 *    cache ("cached": true), and after a restart from the cache file;
 *  - a bare .hprof (type other, 4-byte ids) is read too;
 *  - errors: another type 400 wrong_type, the fixture heap zip (text inside) 422
 *    unparsable (cached too), a bad `top`, an unknown parameter, an unknown id, a method
 *    the path does not take; no login 401; a viewer gets 404 for another namespace's dump;
 *  - three requests at once for a dump not yet summarized compute it once (one answer
 *    "cached": false), and the server (one HTTP thread) answers other requests meanwhile.
 *
 * CP_TEST_BOTH_PAIRS: SQLite + directory, and PostgreSQL + S3 (pair_util.h).
 */
#include "auth_util.h"
#include "hprof_gen.h"
#include "http_util.h"
#include "pair_util.h"
#include "server_util.h"

#include "http/cp_zipout.h"

#include <crypt.h>
#include <dirent.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TOKEN "hprof-api-upload-token-0123456789"
#define DIR_PATH "2023/12/19/06/18/00"

typedef struct env {
    test_server s;
    char *dir, *catalog, *store;
    char users[1100], groups[1100], token[1100];
    const char *args[48];
} env;

static env E;

/* ---- setup ------------------------------------------------------------------------------------ */

/* "Authorization: ..." for user (password user + "-pw"), the token for "token", none for NULL */
static void auth_line(const char *user, char *out, size_t outlen) { auth_header(user, TOKEN, out, outlen); }

static int setup(void **state)
{
    (void)state;
    test_pair_require();
    test_pair_env();
    E.dir = make_temp_dir("hprof-api");
    E.catalog = test_catalog_spec(E.dir);
    E.store = test_store_url(E.dir);
    static const char *const users[] = {"alice", "root", NULL};
    auth_files(E.dir, users, "viewer: alice\nadmin: root\nteam-a: alice\n", TOKEN, E.users, E.groups,
               E.token, sizeof E.users);
    size_t n = 0;
    for (const char *const *pf = test_pair_flags(E.catalog, E.store); *pf; pf++) E.args[n++] = *pf;
    /* one HTTP thread: a summary computed on it would hold every other request */
    const char *extra[] = {"--http-threads", "1", "--auth", "basic", "--auth-users", E.users, "--auth-groups",
                           E.groups, "--auth-namespaces", "team-a=ns-a", "--auth-namespaces", "admin=*",
                           "--upload-token", E.token, NULL};
    for (const char *const *x = extra; *x; x++) E.args[n++] = *x;
    E.args[n] = NULL;
    server_start(&E.s, "hprof-api", E.args);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    if (E.s.pid) server_stop(&E.s);
    server_destroy(&E.s);
    test_pair_free(E.dir, E.catalog, E.store);
    return 0;
}

/* ---- requests --------------------------------------------------------------------------------- */

static int req(const char *user, const char *method, const char *path, const void *p, size_t n, cp_buf *body)
{
    char hdr[600];
    auth_line(user, hdr, sizeof hdr);
    if (p) strcat(hdr, "Content-Type: application/octet-stream\r\n");
    int st = 0;
    assert_int_equal(http_request(E.s.http_port, method, path, hdr[0] ? hdr : NULL, p, n, &st, body, NULL), 0);
    return st;
}

static json_t *get_json(const char *user, const char *path, int want)
{
    cp_buf b;
    cp_buf_init(&b);
    int st = req(user, "GET", path, NULL, 0, &b);
    if (st != want) server_fail(&E.s, "GET %s as %s: %d (want %d): %.*s", path, user, st, want, (int)b.len, (char *)b.data);
    json_t *j = json_loadb((const char *)b.data, b.len, 0, NULL);
    if (!j) server_fail(&E.s, "GET %s: not JSON: %.*s", path, (int)(b.len < 300 ? b.len : 300), (char *)b.data);
    cp_buf_free(&b);
    return j;
}

static const char *jstr(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }
static long long jint(const json_t *o, const char *k) { return json_integer_value(json_object_get(o, k)); }

/* PUT through the upload token; the new dump's id into id. */
static void upload(const char *ns, const char *name, const void *p, size_t n, char *id, size_t idlen)
{
    char path[512];
    snprintf(path, sizeof path, "/diagnostic/%s/" DIR_PATH "/app-5cbcd847d-l2t7t_1702966000000/%s", ns, name);
    cp_buf body;
    cp_buf_init(&body);
    int st = req("token", "PUT", path, p, n, &body);
    if (st != 201) server_fail(&E.s, "upload %s: %d %.*s", path, st, (int)body.len, (char *)body.data);
    json_t *j = json_loadb((const char *)body.data, body.len, 0, NULL);
    assert_non_null(j);
    snprintf(id, idlen, "%s", jstr(j, "id"));
    json_decref(j);
    cp_buf_free(&body);
}

static int zip_sink(void *ud, const void *p, size_t n) { return cp_buf_append(ud, p, n); }

/* The generated dump zipped as diagtools' zip writer does (one deflated entry). */
static void make_zip(const hg_spec *s, cp_buf *zip, size_t *hprof_len)
{
    cp_buf dump;
    cp_buf_init(&dump);
    assert_int_equal(hg_write_buf(s, &dump, NULL), 0);
    *hprof_len = dump.len;
    cp_zipw *z = NULL;
    assert_int_equal(cp_zipw_new(zip_sink, zip, &z), CP_OK);
    assert_int_equal(cp_zipw_begin(z, "java_pid4242.hprof", 1702966680000LL, 1), CP_OK);
    assert_int_equal(cp_zipw_data(z, dump.data, dump.len), CP_OK);
    assert_int_equal(cp_zipw_end(z), CP_OK);
    assert_int_equal(cp_zipw_finish(z), CP_OK);
    cp_zipw_free(z);
    cp_buf_free(&dump);
}

static int expect_cmp(const void *a, const void *b)
{
    const hg_expect *x = a, *y = b;
    if (x->shallow_bytes != y->shallow_bytes) return x->shallow_bytes > y->shallow_bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The summary's classes are the generated ones, largest first (sizes differ: no ties). */
static void assert_classes(const json_t *doc, const hg_spec *s, size_t top)
{
    hg_expect want[16];
    size_t n = hg_expected(s, want, 16);
    qsort(want, n, sizeof *want, expect_cmp);
    json_t *classes = json_object_get(doc, "classes");
    size_t listed = n < top ? n : top;
    assert_int_equal(json_array_size(classes), listed);
    assert_int_equal(jint(doc, "class_count"), n);
    long long objects = 0, bytes = 0;
    for (size_t i = 0; i < n; i++) {
        objects += (long long)want[i].objects;
        bytes += (long long)want[i].shallow_bytes;
        if (i >= listed) continue;
        json_t *c = json_array_get(classes, i);
        assert_string_equal(jstr(c, "name"), want[i].name);
        assert_int_equal(jint(c, "instances"), want[i].objects);
        assert_int_equal(jint(c, "shallow_bytes"), want[i].shallow_bytes);
    }
    assert_int_equal(jint(doc, "instances"), objects);
    assert_int_equal(jint(doc, "shallow_bytes"), bytes);
    assert_false(json_is_true(json_object_get(doc, "names_incomplete")));
}

static char small_id[32];

/* ---- tests ------------------------------------------------------------------------------------- */

static void test_summary(void **state)
{
    (void)state;
    json_t *cfg = get_json("alice", "/api/v1/config", 200);
    assert_true(json_is_true(json_object_get(json_object_get(cfg, "features"), "hprof_summary")));
    json_decref(cfg);

    hg_spec s;
    hg_spec_small(&s, 8);
    cp_buf zip;
    cp_buf_init(&zip);
    size_t hprof_len;
    make_zip(&s, &zip, &hprof_len);
    upload("ns-a", "20231219T061800.hprof.zip", zip.data, zip.len, small_id, sizeof small_id);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/dumps/%s/hprof", small_id);
    json_t *doc = get_json("alice", path, 200);
    assert_string_equal(jstr(doc, "id"), small_id);
    assert_string_equal(jstr(doc, "type"), "heap");
    assert_string_equal(jstr(doc, "format"), "JAVA PROFILE 1.0.2");
    assert_int_equal(jint(doc, "id_size"), 8);
    assert_int_equal(jint(doc, "time_ms"), s.time_ms);
    assert_string_equal(jstr(doc, "entry"), "java_pid4242.hprof");
    assert_int_equal(jint(doc, "bytes"), hprof_len);
    assert_int_equal(jint(doc, "file_bytes"), zip.len);
    assert_true(jint(doc, "records") > 60);
    assert_int_equal(jint(doc, "gc_roots"), 9);
    assert_int_equal(jint(doc, "top"), 50);
    assert_true(json_is_integer(json_object_get(doc, "elapsed_ms")));
    assert_false(json_is_true(json_object_get(doc, "cached")));
    assert_classes(doc, &s, 50);
    json_decref(doc);

    /* again: from the cache; top cuts the list */
    doc = get_json("alice", path, 200);
    assert_true(json_is_true(json_object_get(doc, "cached")));
    assert_classes(doc, &s, 50);
    json_decref(doc);
    snprintf(path, sizeof path, "/api/v1/dumps/%s/hprof?top=2", small_id);
    doc = get_json("root", path, 200);
    assert_true(json_is_true(json_object_get(doc, "cached")));
    assert_int_equal(jint(doc, "top"), 2);
    assert_classes(doc, &s, 2);
    json_decref(doc);
    snprintf(path, sizeof path, "/api/v1/dumps/%s/hprof?top=0", small_id);
    doc = get_json("root", path, 200);
    assert_classes(doc, &s, 0);
    json_decref(doc);

    /* the cache file */
    char dir[1200];
    snprintf(dir, sizeof dir, "%s/hprof-cache", E.s.data);
    DIR *d = opendir(dir);
    assert_non_null(d);
    int files = 0;
    for (struct dirent *de; (de = readdir(d));)
        if (strstr(de->d_name, ".json") && !strncmp(de->d_name, small_id, strlen(small_id))) files++;
    closedir(d);
    assert_int_equal(files, 1);
    cp_buf_free(&zip);
}

/* A bare HPROF uploaded as `other`, with 4-byte identifiers and one segment. */
static void test_bare_hprof(void **state)
{
    (void)state;
    hg_spec s;
    hg_spec_small(&s, 4);
    s.segment_bytes = 0;
    cp_buf dump;
    cp_buf_init(&dump);
    assert_int_equal(hg_write_buf(&s, &dump, NULL), 0);
    char id[32], path[256];
    upload("ns-a", "java_pid77.hprof", dump.data, dump.len, id, sizeof id);
    snprintf(path, sizeof path, "/api/v1/dumps/%s/hprof?top=1000", id);
    json_t *doc = get_json("root", path, 200);
    assert_string_equal(jstr(doc, "type"), "other");
    assert_string_equal(jstr(doc, "entry"), "");
    assert_int_equal(jint(doc, "id_size"), 4);
    assert_int_equal(jint(doc, "bytes"), dump.len);
    assert_int_equal(jint(doc, "heap_records"), 1);
    assert_classes(doc, &s, 1000);
    json_decref(doc);
    cp_buf_free(&dump);
}

static void expect_error(const char *user, const char *method, const char *path, int status, const char *code)
{
    cp_buf b;
    cp_buf_init(&b);
    int st = req(user, method, path, NULL, 0, &b);
    json_t *j = json_loadb((const char *)b.data, b.len, 0, NULL);
    if (st != status || !j || (code && strcmp(jstr(j, "code") ? jstr(j, "code") : "", code)))
        server_fail(&E.s, "%s %s as %s: %d %.*s (want %d %s)", method, path, user ? user : "nobody", st, (int)b.len,
                    (char *)b.data, status, code ? code : "");
    json_decref(j);
    cp_buf_free(&b);
}

static void test_errors(void **state)
{
    (void)state;
    char td[32], bad[32], other_ns[32], path[256];
    cp_buf f;
    cp_buf_init(&f);
    load_fixture("dumps/20231219T061734UTC.td.txt", &f);
    upload("ns-a", "20231219T061734UTC.td.txt", f.data, f.len, td, sizeof td);
    cp_buf_free(&f); /* load_fixture starts a new buffer */
    load_fixture("dumps/test-service.heap.hprof.zip", &f); /* a zip of top text, not HPROF */
    upload("ns-a", "20231219T061900.hprof.zip", f.data, f.len, bad, sizeof bad);
    cp_buf_reset(&f);
    hg_spec s;
    hg_spec_small(&s, 8);
    size_t len;
    make_zip(&s, &f, &len);
    upload("ns-b", "20231219T061800.hprof.zip", f.data, f.len, other_ns, sizeof other_ns);
    cp_buf_free(&f);

    snprintf(path, sizeof path, "/api/v1/dumps/%s/hprof", td);
    expect_error("alice", "GET", path, 400, "wrong_type");
    snprintf(path, sizeof path, "/api/v1/dumps/%s/hprof", bad);
    for (int i = 0; i < 2; i++) { /* the second from the cache */
        cp_buf b;
        cp_buf_init(&b);
        assert_int_equal(req("alice", "GET", path, NULL, 0, &b), 422);
        cp_buf_putc(&b, 0);
        assert_non_null(strstr((const char *)b.data, "\"unparsable\""));
        assert_non_null(strstr((const char *)b.data, "not an HPROF heap dump"));
        cp_buf_free(&b);
    }
    snprintf(path, sizeof path, "/api/v1/dumps/%s/hprof?top=1001", small_id);
    expect_error("alice", "GET", path, 400, "bad_parameter");
    snprintf(path, sizeof path, "/api/v1/dumps/%s/hprof?limit=3", small_id);
    expect_error("alice", "GET", path, 400, "unknown_parameter");
    expect_error("alice", "GET", "/api/v1/dumps/12345/hprof", 404, "not_found");
    snprintf(path, sizeof path, "/api/v1/dumps/%s/hprof", small_id);
    expect_error("root", "DELETE", path, 405, "method_not_allowed");
    expect_error(NULL, "GET", path, 401, "unauthenticated");
    /* another namespace's dump does not exist for alice; the admin sees it */
    snprintf(path, sizeof path, "/api/v1/dumps/%s/hprof", other_ns);
    expect_error("alice", "GET", path, 404, "not_found");
    json_t *doc = get_json("root", path, 200);
    assert_classes(doc, &s, 50);
    json_decref(doc);
}

typedef struct getter {
    char path[256];
    int status;
    cp_buf body;
    uint64_t done_ns;
} getter;

static void *get_thread(void *arg)
{
    getter *g = arg;
    char hdr[600];
    auth_line("root", hdr, sizeof hdr);
    cp_buf_init(&g->body);
    if (http_request(E.s.http_port, "GET", g->path, hdr, NULL, 0, &g->status, &g->body, NULL) != 0) g->status = -1;
    g->done_ns = cp_mono_ns();
    return NULL;
}

/* Three requests at once for a dump not summarized yet: computed once, the same answer
 * for all three; the one HTTP thread stays free for other requests meanwhile (printed). */
static void test_concurrent(void **state)
{
    (void)state;
    static const uint8_t fields[] = {2, 2, 10, 11, 8};
    hg_class cls[] = {{"com/shop/Line", test_scaled(400000, 100000), fields, sizeof fields},
                      {"com/shop/Cart", 1000, fields, 2}};
    hg_spec s;
    memset(&s, 0, sizeof s);
    s.id_size = 8;
    s.time_ms = 1702966680000LL;
    s.classes = cls;
    s.nclasses = 2;
    s.byte_arrays = test_scaled(2000, 500), s.byte_len = 4000;
    s.obj_arrays = 100, s.obj_len = 50;
    s.segment_bytes = 1u << 20;
    cp_buf zip;
    cp_buf_init(&zip);
    size_t len;
    make_zip(&s, &zip, &len);
    char id[32];
    upload("ns-a", "20231219T062000.hprof.zip", zip.data, zip.len, id, sizeof id);
    cp_buf_free(&zip);
    getter g[3];
    pthread_t t[3];
    for (int i = 0; i < 3; i++) {
        memset(&g[i], 0, sizeof g[i]);
        snprintf(g[i].path, sizeof g[i].path, "/api/v1/dumps/%s/hprof", id);
        assert_int_equal(pthread_create(&t[i], NULL, get_thread, &g[i]), 0);
    }
    sleep_ms(30);
    json_t *now = get_json("alice", "/api/v1/time", 200);
    uint64_t time_done = cp_mono_ns();
    json_decref(now);
    int fresh = 0;
    json_t *first = NULL;
    for (int i = 0; i < 3; i++) {
        pthread_join(t[i], NULL);
        if (g[i].status != 200) server_fail(&E.s, "concurrent GET %d: %d", i, g[i].status);
        json_t *doc = json_loadb((const char *)g[i].body.data, g[i].body.len, 0, NULL);
        assert_non_null(doc);
        assert_classes(doc, &s, 50);
        if (!json_is_true(json_object_get(doc, "cached"))) fresh++;
        if (!first) first = json_incref(json_object_get(doc, "classes"));
        else assert_true(json_equal(first, json_object_get(doc, "classes")));
        printf("summary %d: %lld ms to compute, answered %.1f ms after /time\n", i, jint(doc, "elapsed_ms"),
               ((double)g[i].done_ns - (double)time_done) / 1e6);
        /* (when /time was answered against when the summaries were is printed, not asserted:
         * a loaded machine may finish a summary before /time is even asked) */
        json_decref(doc);
        cp_buf_free(&g[i].body);
    }
    json_decref(first);
    assert_int_equal(fresh, 1);
}

/* After a restart the summary comes from the cache file. */
static void test_restart(void **state)
{
    (void)state;
    assert_int_equal(server_stop(&E.s), 0);
    server_restart(&E.s, E.args);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/dumps/%s/hprof", small_id);
    json_t *doc = get_json("alice", path, 200);
    assert_true(json_is_true(json_object_get(doc, "cached")));
    hg_spec s;
    hg_spec_small(&s, 8);
    assert_classes(doc, &s, 50);
    json_decref(doc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_summary),
        cmocka_unit_test(test_bare_hprof),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_concurrent),
        cmocka_unit_test(test_restart),
    };
    /* CP_TEST_BOTH_PAIRS */
    return cmocka_run_group_tests(tests, setup, teardown);
}
