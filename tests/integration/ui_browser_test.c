/* ui_browser_test.c -- the harness of the web UI's browser acceptance test (issue 7).
 *
 * Starts `cloudprof serve`, replays the parser.test.protocol capture, uploads every file
 * of fixtures/dumps/ under the capture's namespace and pod (directory times a minute
 * apart, inside the capture's window), then runs tests/ui/e2e.mjs with node: it drives
 * Debian's chromium through playwright-core (tests/tools/node_modules) against the
 * server and must print "e2e: ok" and exit 0. Its output goes to this test's stdout;
 * its screenshots to <build>/ui-artifacts/ (kept: CI keeps them).
 *
 * env given to e2e.mjs: CP_UI_BASE (http://127.0.0.1:<port>), CP_UI_FROM, CP_UI_TO (the
 * window), CP_UI_NS, CP_UI_POD, CP_UI_SERVICE (the capture's), CP_UI_ARTIFACTS,
 * CP_FIXTURES_DIR (the foreign trace it imports through the UI) and
 * NODE_PATH=<repo>/tests/tools/node_modules.
 *
 * Without node, playwright-core or /usr/bin/chromium, or with a cloudprof built without
 * the UI (GET / is the 503 page), the test is skipped (exit 77: scripts/node-tools.sh,
 * scripts/setup.sh and scripts/ui-build.sh provide them), except under CI (CI set and
 * not "false"/"0"), where it fails: the UI must be tested there.
 *
 * CP_UI_HOLD=<seconds>: after loading, print the base URL and the env values and keep the
 * server up that long before running node -- a loaded server to try the UI by hand
 * (scripts/ui-dev.sh does this with 3600).
 */
#include "http_util.h"
#include "proc_util.h"
#include "replay_util.h"
#include "server_util.h"

#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define FROM_MS 1690000000000LL
#define TO_MS 1690400000000LL
#define WINDOW "from=1690000000000&to=1690400000000"
#define E2E_TIMEOUT_MS (10 * 60 * 1000) /* the whole browser walk */

static const char *const dump_files[] = {
    "20230804T164402.td.txt", "20231219T061734UTC.td.txt", "20231219T061734UTC.top.txt",
    "20231219T062953UTC.gc.log", "go-alloc.pprof", "go-goroutine.pprof", "go-heap.pprof", "go-profile.pprof",
    "test-service.heap.hprof.zip",
};

/* ---- loading the server ------------------------------------------------------------------- */

static test_server srv;

/* Replays the capture; returns the start of its first call (epoch ms) once every call of
 * the capture is stored. */
static int64_t load_calls(const replay_capture *cap)
{
    replay_result rr;
    replay_opts o;
    memset(&o, 0, sizeof o);
    replay_run(srv.port, cap, &o, &rr);
    size_t n = replay_capture_calls(cap);
    json_t *doc = replay_wait_calls(&srv, "/api/v1/calls?" WINDOW "&limit=1000&sort=ts_ms", n);
    json_t *calls = json_object_get(doc, "calls");
    int64_t first = json_integer_value(json_object_get(json_array_get(calls, 0), "ts_ms"));
    printf("ui_browser_test: %zu calls, the first at %lld\n", n, (long long)first);
    json_decref(doc);
    return first;
}

/* PUTs one diagnostic file of the pod, as uploaded at t (epoch ms). */
static void put_dump(const replay_capture *cap, int64_t t, const char *name, const void *data, size_t len)
{
    assert_true(t >= FROM_MS && t < TO_MS);
    time_t secs = (time_t)(t / 1000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    char path[1024];
    snprintf(path, sizeof path, "/diagnostic/%s/%04d/%02d/%02d/%02d/%02d/%02d/%s/%s", cap->ns, tm.tm_year + 1900,
             tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, cap->pod, name);
    cp_buf body;
    cp_buf_init(&body);
    int st = 0;
    if (http_request(srv.http_port, "PUT", path, "Content-Type: application/octet-stream\r\n", data, len, &st, &body,
                     NULL) != 0)
        server_fail(&srv, "PUT %s: no valid response", path);
    if (st != 201) server_fail(&srv, "PUT %s: %d %.*s", path, st, (int)body.len, (const char *)body.data);
    cp_buf_free(&body);
}

/* The minute of the i-th upload: a minute apart from the minute after the first call. */
static int64_t upload_minute(int64_t first_ms, size_t i)
{
    return (first_ms / 60000 + 1) * 60000 + (int64_t)i * 60000;
}

/* PUTs every dump fixture to /diagnostic/<ns>/<time>/<pod>/<file>, the times a minute
 * apart from the minute after the first call. */
static void upload_dumps(const replay_capture *cap, int64_t first_ms)
{
    for (size_t i = 0; i < CP_ARRAY_LEN(dump_files); i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "dumps/%s", dump_files[i]);
        cp_buf data;
        cp_buf_init(&data);
        load_fixture(rel, &data);
        put_dump(cap, upload_minute(first_ms, i), dump_files[i], data.data, data.len);
        cp_buf_free(&data);
    }
    /* all listed under the pod, joined to its restart */
    char url[1024];
    snprintf(url, sizeof url, "/api/v1/dumps?" WINDOW "&namespace=%s&pod=%s&limit=100", cap->ns, cap->pod);
    json_t *doc = http_get_json(srv.http_port, url, 200);
    json_t *dumps = json_object_get(doc, "dumps"), *d;
    assert_int_equal(json_array_size(dumps), CP_ARRAY_LEN(dump_files));
    size_t i;
    json_array_foreach(dumps, i, d) assert_string_equal(json_string_value(json_object_get(d, "restart_pod")), cap->pod);
    json_decref(doc);
    printf("ui_browser_test: %zu diagnostic files uploaded\n", CP_ARRAY_LEN(dump_files));
}

/* A GC log of the pod whose pauses fall among its calls (the fixture GC log's are months
 * later): GC_PAUSES pauses from a second after the first call, 3 s apart, the last a full
 * collection; uploaded after the dump fixtures (a log holds the events before its upload).
 * The GC overlay on the calls chart and the jump from a pause to its calls use it. */
#define GC_PAUSES 5
static void upload_gc_log(const replay_capture *cap, int64_t first_ms)
{
    cp_buf log;
    cp_buf_init(&log);
    for (int k = 0; k < GC_PAUSES; k++) {
        int64_t t = first_ms + 1000 + k * 3000;
        time_t secs = (time_t)(t / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        int full = k == GC_PAUSES - 1;
        cp_buf_printf(&log,
                      "[%04d-%02d-%02dT%02d:%02d:%02d.%03d+0000][%d.%03ds][info ][gc] GC(%d) %s 195M->62M(494M) %d.%03dms\n",
                      tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(t % 1000),
                      100 + k * 3, (int)(t % 1000), 40 + k, full ? "Pause Full (System.gc())" : "Pause Young (Allocation Failure)",
                      60 + k * 40, 250);
    }
    put_dump(cap, upload_minute(first_ms, CP_ARRAY_LEN(dump_files) + 1), "calls.gc.log", log.data, log.len);
    cp_buf_free(&log);
    /* the pod's GC view of the window has them */
    char url[1024];
    snprintf(url, sizeof url, "/api/v1/gc?" WINDOW "&namespace=%s&pod=%s", cap->ns, cap->pod);
    json_t *doc = http_get_json(srv.http_port, url, 200);
    assert_int_equal(json_array_size(json_object_get(doc, "pauses")), GC_PAUSES);
    json_decref(doc);
}

/* Replaces the first `from` in b by `to` (the same length). */
static void patch_text(cp_buf *b, const char *from, const char *to)
{
    size_t n = strlen(from);
    assert_int_equal(n, strlen(to));
    uint8_t *at = memmem(b->data, b->len, from, n);
    if (!at) fail_msg("'%s' is not in the fixture", from);
    memcpy(at, to, n);
}

/* A second top dump a minute after the fixture's, in which Thread-2 (tid 249) used 30 more
 * CPU seconds and "Timer c+" (tid 236) 2 more, and a copy of the fixture's thread dump in
 * that minute (it names tid 249 Thread-2): the hot-threads view measures 30 and 2 CPU s per
 * minute and links the cells to that thread dump. */
static void upload_top_series(const replay_capture *cap, int64_t first_ms)
{
    int64_t t = upload_minute(first_ms, 3); /* a minute after the fixture (upload 2) */
    cp_buf top, td;
    cp_buf_init(&top);
    cp_buf_init(&td);
    load_fixture("dumps/20231219T061734UTC.top.txt", &top);
    patch_text(&top, " 6:08.58 Thread-2", " 6:38.58 Thread-2");
    patch_text(&top, " 2:47.53 Timer c+", " 2:49.53 Timer c+");
    put_dump(cap, t, "20231219T061834UTC.top.txt", top.data, top.len);
    load_fixture("dumps/20231219T061734UTC.td.txt", &td);
    put_dump(cap, t, "20231219T061834UTC.td.txt", td.data, td.len);
    cp_buf_free(&top);
    cp_buf_free(&td);
}

/* The service of the capture's pod, from /services (malloc'ed). */
static char *capture_service(const replay_capture *cap)
{
    json_t *doc = http_get_json(srv.http_port, "/api/v1/services?" WINDOW, 200);
    json_t *ns = json_array_get(json_object_get(doc, "namespaces"), 0);
    assert_non_null(ns);
    assert_string_equal(json_string_value(json_object_get(ns, "namespace")), cap->ns);
    json_t *svc = json_array_get(json_object_get(ns, "services"), 0);
    const char *name = json_string_value(json_object_get(svc, "service"));
    assert_non_null(name);
    assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(svc, "pods"), 0), "pod")),
                        cap->pod);
    char *out = strdup(name);
    json_decref(doc);
    return out;
}

/* ---- running e2e.mjs ------------------------------------------------------------------------ */

/* The calls of the test-service stream fixtures (the capture's streams): the "call#"
 * lines of their expected decoding, which the list must show. */
static size_t fixture_calls(void)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/streams/test-service.calls.expected.txt", CP_FIXTURES_DIR);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("%s: %s", path, strerror(errno));
    char line[8192];
    size_t n = 0;
    while (fgets(line, sizeof line, f)) n += strncmp(line, "call#", 5) == 0;
    fclose(f);
    return n;
}

static void test_browser(void **state)
{
    server_start(&srv, "ui-browser", NULL);
    replay_capture cap;
    replay_capture_parser_test(&cap);
    int64_t first = load_calls(&cap);
    upload_dumps(&cap, first);
    upload_gc_log(&cap, first);
    upload_top_series(&cap, first);
    char *service = capture_service(&cap);

    /* the page is there (or this binary was built without the UI: e2e would only see the 503) */
    int st = 0;
    cp_buf body;
    cp_buf_init(&body);
    assert_int_equal(http_get(srv.http_port, "/", &st, &body, NULL), 0);
    if (st == 503 && !under_ci()) { /* a build without ui/dist: nothing for a browser to test */
        printf("ui_browser_test: SKIP: cloudprof was built without the web UI (run scripts/ui-build.sh, rebuild)\n");
        server_stop(&srv);
        server_destroy(&srv);
        exit(77);
    }
    if (st != 200) server_fail(&srv, "GET / is %d, want 200 (built without the web UI? run scripts/ui-build.sh)", st);
    cp_buf_free(&body);

    char artifacts[1200];
    snprintf(artifacts, sizeof artifacts, "%s/ui-artifacts", CP_BUILD_DIR);
    if (mkdir(artifacts, 0755) != 0 && errno != EEXIST) fail_msg("mkdir %s: %s", artifacts, strerror(errno));

    char e_base[64], e_from[64], e_to[64], e_ns[600], e_pod[600], e_svc[600], e_art[1300], e_path[1200], e_calls[64],
        e_fix[1200];
    snprintf(e_base, sizeof e_base, "CP_UI_BASE=http://127.0.0.1:%d", srv.http_port);
    snprintf(e_from, sizeof e_from, "CP_UI_FROM=%lld", FROM_MS);
    snprintf(e_to, sizeof e_to, "CP_UI_TO=%lld", TO_MS);
    snprintf(e_ns, sizeof e_ns, "CP_UI_NS=%s", cap.ns);
    snprintf(e_pod, sizeof e_pod, "CP_UI_POD=%s", cap.pod);
    snprintf(e_svc, sizeof e_svc, "CP_UI_SERVICE=%s", service);
    snprintf(e_calls, sizeof e_calls, "CP_UI_FIXTURE_CALLS=%zu", fixture_calls());
    snprintf(e_art, sizeof e_art, "CP_UI_ARTIFACTS=%s", artifacts);
    snprintf(e_path, sizeof e_path, "NODE_PATH=%s/tests/tools/node_modules", CP_SOURCE_DIR);
    snprintf(e_fix, sizeof e_fix, "CP_FIXTURES_DIR=%s", CP_FIXTURES_DIR);
    const char *extra[] = {e_base, e_from, e_to, e_ns, e_pod, e_svc, e_calls, e_art, e_path, e_fix, NULL};

    const char *hold = getenv("CP_UI_HOLD");
    if (hold && atoi(hold) > 0) { /* a developer's loaded server (scripts/ui-dev.sh) */
        printf("\nui_browser_test: CP_UI_HOLD: the server is loaded; open http://127.0.0.1:%d/\n", srv.http_port);
        for (size_t i = 0; extra[i]; i++) printf("  %s\n", extra[i]);
        printf("  (agent port %d, data %s, log %s)\nholding for %d s, then running e2e.mjs...\n", srv.port, srv.data,
               srv.log, atoi(hold));
        fflush(stdout);
        sleep((unsigned)atoi(hold));
    }

    char script[1200];
    snprintf(script, sizeof script, "%s/tests/ui/e2e.mjs", CP_SOURCE_DIR);
    const char *argv[] = {"node", script, NULL};
    cp_buf out;
    cp_buf_init(&out);
    printf("ui_browser_test: node %s (screenshots in %s)\n", script, artifacts);
    int rc = run_with_env(argv, extra, &out, E2E_TIMEOUT_MS);
    printf("ui_browser_test: e2e.mjs exited %d\n", rc);
    if (rc != 0) server_fail(&srv, "e2e.mjs failed (exit %d)", rc);
    if (!memmem(out.data, out.len, "e2e: ok", 7)) server_fail(&srv, "e2e.mjs exited 0 without printing 'e2e: ok'");
    cp_buf_free(&out);
    free(service);
    replay_capture_free(&cap);
    server_stop(&srv);
    server_destroy(&srv);
}

int main(void)
{
    char script[1200];
    snprintf(script, sizeof script, "%s/tests/ui/e2e.mjs", CP_SOURCE_DIR);
    const char *missing = browser_tools_missing();
    if (!missing && access(script, R_OK) != 0) missing = "tests/ui/e2e.mjs is missing";
    require_tools("ui_browser_test", "the browser test", missing);
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_browser, servers_teardown),
    };
    return cmocka_run_group_tests_name("ui_browser", tests, NULL, NULL);
}
