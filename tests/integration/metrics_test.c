/* metrics_test.c -- GET /metrics of a live `cloudprof serve` (issue 17 item 4), read with a
 * real Prometheus text-format parser: Debian's python3-prometheus-client
 * (prometheus_client.parser.text_string_to_metric_families; scripts/setup.sh installs it,
 * the test skips without it).
 *
 * The server starts with compaction every second; a first scrape shows every counter at
 * zero. Then the test causes a fixed amount of work: AGENTS emulated agents making exactly
 * MAX_CALLS calls each (`cloudprof emulate --max-calls`), two /api/v1/health requests, one
 * 404 and one heap of thread-dump upload. It scrapes until every call is stored and every
 * connection gone, and asserts that the counters moved by exactly what it caused: calls
 * assembled and stored = calls sent, stream bytes per stream = the emulator's acknowledged
 * payload bytes, ok acks = the acks the emulator counted, one flush-ack latency observation
 * per REQUEST_ACK_FLUSH, one fsync observation per batch, the HTTP requests per route and
 * code it made (its earlier scrapes included), the upload's bytes. The parser's view is
 * also checked for what the format promises: every histogram's buckets ascending and
 * cumulative, ending in +Inf equal to _count, with a _sum; no duplicate series.
 *
 * A second test refuses agents: a blacklisted namespace, data before the handshake (an
 * 0xFF ack), a connection over --max-connections and plain text on the TLS port (its
 * certificate made with `openssl` in a temporary directory) each move their counter by one.
 * A third, with --auth basic, checks that /metrics stays open and that refused logins are
 * counted by reason: missing, bad_credentials, backoff (429) and forbidden (403).
 */
#include "http_util.h"
#include "server_util.h"

#include "wire/cp_wire.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AGENTS 3
#define MAX_CALLS 120 /* root calls per agent */
#define STR_(x) #x
#define STR(x) STR_(x)

static const char *const stream_names[] = {"trace",         "calls",   "xml",    "sql", "dictionary",
                                           "posDictionary", "suspend", "params"};

/* Parses argv[1] (the exposition text) and prints JSON: the families' types, every sample
 * as "name{label=value,...}" (labels sorted) -> value, and what is wrong with it. */
static const char parse_py[] =
    "import json, math, sys\n"
    "from prometheus_client.parser import text_string_to_metric_families\n"
    "out = {'types': {}, 'samples': {}, 'problems': []}\n"
    "bad = out['problems']\n"
    "for f in text_string_to_metric_families(open(sys.argv[1]).read()):\n"
    "    out['types'][f.name] = f.type\n"
    "    hist = {}\n"
    "    for s in f.samples:\n"
    "        key = s.name + '{' + ','.join('%s=%s' % (k, s.labels[k]) for k in sorted(s.labels)) + '}'\n"
    "        if key in out['samples']: bad.append('duplicate ' + key)\n"
    "        out['samples'][key] = s.value\n"
    "        if f.type != 'histogram': continue\n"
    "        base = tuple(sorted((k, v) for k, v in s.labels.items() if k != 'le'))\n"
    "        h = hist.setdefault(base, {'b': [], 'count': None, 'sum': None})\n"
    "        if s.name.endswith('_bucket'): h['b'].append((float(s.labels['le']), s.value))\n"
    "        elif s.name.endswith('_count'): h['count'] = s.value\n"
    "        elif s.name.endswith('_sum'): h['sum'] = s.value\n"
    "    for base, h in hist.items():\n"
    "        b, what = h['b'], f.name + str(base)\n"
    "        if not b or not math.isinf(b[-1][0]): bad.append(what + ': no +Inf bucket')\n"
    "        if any(b[i][0] >= b[i + 1][0] for i in range(len(b) - 1)): bad.append(what + ': le not ascending')\n"
    "        if any(b[i][1] > b[i + 1][1] for i in range(len(b) - 1)): bad.append(what + ': not cumulative')\n"
    "        if b and h['count'] != b[-1][1]: bad.append(what + ': _count is not the +Inf bucket')\n"
    "        if h['sum'] is None or h['sum'] < 0: bad.append(what + ': no _sum')\n"
    "print(json.dumps(out))\n";

/* Debian's interpreter first: a python3 earlier on $PATH (pyenv) may lack the package. */
static const char *find_python(void)
{
    static const char *const candidates[] = {"/usr/bin/python3", "python3"};
    for (size_t i = 0; i < CP_ARRAY_LEN(candidates); i++) {
        char cmd[256];
        snprintf(cmd, sizeof cmd, "%s -c 'import prometheus_client.parser' >/dev/null 2>&1", candidates[i]);
        if (system(cmd) == 0) return candidates[i];
    }
    return NULL;
}

typedef struct scraper {
    const char *python;
    char dir[1024];
    int scrapes; /* GET /metrics made so far (each is counted by the next one) */
} scraper;

static void write_file(const char *path, const void *p, size_t n)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

/* GET /metrics, checked (200, the text format's content type) and parsed by the Python
 * parser; returns its JSON (json_decref it). */
static json_t *scrape(const test_server *s, scraper *sc)
{
    int status = 0;
    cp_buf body, headers;
    cp_buf_init(&body);
    cp_buf_init(&headers);
    if (http_get(s->http_port, "/metrics", &status, &body, &headers) != 0) server_fail(s, "GET /metrics failed");
    sc->scrapes++;
    if (status != 200) server_fail(s, "GET /metrics: %d", status);
    char ct[128] = "";
    http_header(&headers, "Content-Type", ct, sizeof ct);
    if (strncmp(ct, "text/plain; version=0.0.4", 25) != 0) fail_msg("Content-Type: %s", ct);
    char text_path[1100], py_path[1100], out_path[1100], cmd[4000];
    snprintf(text_path, sizeof text_path, "%s/metrics.txt", sc->dir);
    snprintf(py_path, sizeof py_path, "%s/parse.py", sc->dir);
    snprintf(out_path, sizeof out_path, "%s/parsed.json", sc->dir);
    write_file(text_path, body.data, body.len);
    write_file(py_path, parse_py, sizeof parse_py - 1);
    snprintf(cmd, sizeof cmd, "%s %s %s > %s", sc->python, py_path, text_path, out_path);
    if (system(cmd) != 0) {
        cp_buf_putc(&body, 0);
        fail_msg("the Prometheus parser refused the text:\n%s", (char *)body.data);
    }
    cp_buf parsed;
    load_file(out_path, &parsed);
    json_error_t jerr;
    json_t *root = json_loadb((const char *)parsed.data, parsed.len, 0, &jerr);
    if (!root) fail_msg("parser output is not JSON: %s", jerr.text);
    json_t *problems = json_object_get(root, "problems");
    if (json_array_size(problems)) {
        char *p = json_dumps(problems, 0);
        fail_msg("exposition problems: %s", p);
    }
    cp_buf_free(&parsed);
    cp_buf_free(&body);
    cp_buf_free(&headers);
    return root;
}

/* A sample's value ("name{label=value}" as the script writes keys); fails if absent. */
static long long val(json_t *m, const char *key)
{
    json_t *v = json_object_get(json_object_get(m, "samples"), key);
    if (!json_is_number(v)) fail_msg("no sample %s", key);
    return (long long)json_number_value(v);
}

/* The same, 0 when the series is absent (sparse families leave untouched series out). */
static long long val0(json_t *m, const char *key)
{
    json_t *v = json_object_get(json_object_get(m, "samples"), key);
    return json_is_number(v) ? (long long)json_number_value(v) : 0;
}

static void assert_type(json_t *m, const char *family, const char *type)
{
    const char *t = json_string_value(json_object_get(json_object_get(m, "types"), family));
    if (!t || strcmp(t, type)) fail_msg("family %s: type %s, not %s", family, t ? t : "(none)", type);
}

/* `cloudprof emulate --json` against s; returns its summary (json_decref it). */
static json_t *run_emulator(const test_server *s)
{
    /* --duration only bounds a run that hangs: every agent ends after its MAX_CALLS */
    const char *extra[] = {"--agents", STR(AGENTS), "--duration", "100", "--max-calls", STR(MAX_CALLS),
                           "--calls-per-flush", "30", "--flush-interval", "100", NULL};
    return cli_emulate(s, extra);
}

static long long sum_int(json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    if (!json_is_integer(v)) fail_msg("summary: no integer '%s'", key);
    return (long long)json_integer_value(v);
}

static void expect_status(const test_server *s, const char *method, const char *path, const cp_buf *data, int want)
{
    int status = 0;
    cp_buf body;
    cp_buf_init(&body);
    int rc = http_request(s->http_port, method, path, data ? "Content-Type: application/octet-stream\r\n" : NULL,
                          data ? data->data : NULL, data ? data->len : 0, &status, &body, NULL);
    if (rc != 0 || status != want) {
        cp_buf_putc(&body, 0);
        server_fail(s, "%s %s: %d (want %d): %s", method, path, status, want, (char *)body.data);
    }
    cp_buf_free(&body);
}

/* Starts s with extra; its temporary root keeps the scraper's files. */
static void server_start_scraped(test_server *s, scraper *sc, const char *tag, const char *const *extra)
{
    server_start(s, tag, extra);
    snprintf(sc->dir, sizeof sc->dir, "%s", s->root);
}

/* Stops and removes s, and the test's own temporary directory dir (NULL: none). */
static void server_end(test_server *s, char *dir)
{
    server_stop(s);
    server_destroy(s);
    if (!dir) return;
    remove_tree(dir);
    free(dir);
}

static void test_counters_move(void **state)
{
    (void)state;
    scraper sc = {.python = find_python()};
    if (!sc.python) {
        print_message("skipped: no python3 with prometheus_client (scripts/setup.sh installs "
                      "python3-prometheus-client)\n");
        skip();
    }
    const char *const extra[] = {"--compact-every", "1", NULL};
    test_server s;
    server_start_scraped(&s, &sc, "metrics", extra);

    /* before any agent: the families are there, at zero */
    json_t *m = scrape(&s, &sc);
    assert_int_equal(val(m, "cloudprof_agent_connections_accepted_total{}"), 0);
    assert_int_equal(val(m, "cloudprof_calls_stored_total{}"), 0);
    assert_int_equal(val(m, "cloudprof_agent_ack_latency_seconds_count{}"), 0);
    assert_int_equal(val(m, "cloudprof_http_auth_failures_total{reason=bad_credentials}"), 0);
    assert_true(val(m, "process_start_time_seconds{}") > 1600000000);
    assert_int_equal(val(m, "cloudprof_build_info{version=0.1.0}"), 1);
    json_decref(m);

    /* the work */
    json_t *sum = run_emulator(&s);
    long long calls_sent = sum_int(sum, "calls_sent");
    assert_int_equal(calls_sent, AGENTS * MAX_CALLS);
    assert_int_equal(sum_int(sum, "errors"), 0);
    expect_status(&s, "GET", "/api/v1/health", NULL, 200);
    expect_status(&s, "GET", "/api/v1/health", NULL, 200);
    expect_status(&s, "GET", "/api/v1/no-such-thing", NULL, 404);
    cp_buf td;
    load_fixture("dumps/20231219T061734UTC.td.txt", &td);
    expect_status(&s, "PUT", "/diagnostic/metrics-ns/2023/12/19/06/17/34/pod-1/20231219T061734UTC.td.txt", &td, 201);

    /* the calls reach the hot tier once the agents' connections end and the transaction
     * commits; the compaction task runs every second */
    int64_t deadline = test_now_ms() + TEST_WAIT_MS;
    for (;;) {
        m = scrape(&s, &sc);
        if (val(m, "cloudprof_calls_stored_total{}") == calls_sent && val(m, "cloudprof_agent_connections_open{}") == 0 &&
            val(m, "cloudprof_hot_queue_calls{stage=transaction}") == 0 &&
            val(m, "cloudprof_hot_queue_calls{stage=assembly}") == 0 && /* refreshed every 250 ms */
            /* the assembly parts, set in this order after the ingest parts, once no connection is left */
            val(m, "cloudprof_assembly_memory_bytes{part=extents}") == 0 &&
            val(m, "cloudprof_assembly_memory_bytes{part=other}") == 0 &&
            val(m, "cloudprof_compaction_runs_total{}") >= 1)
            break;
        if (test_now_ms() > deadline)
            server_fail(&s, "calls stored %lld of %lld, %lld connections open, %lld compaction runs",
                        val(m, "cloudprof_calls_stored_total{}"), calls_sent,
                        val(m, "cloudprof_agent_connections_open{}"), val(m, "cloudprof_compaction_runs_total{}"));
        json_decref(m);
        sleep_ms(200);
    }

    /* types as the names promise */
    assert_type(m, "cloudprof_agent_connections_open", "gauge");
    assert_type(m, "cloudprof_agent_connections_accepted", "counter");
    assert_type(m, "cloudprof_agent_ack_latency_seconds", "histogram");
    assert_type(m, "cloudprof_fsync_duration_seconds", "histogram");
    assert_type(m, "cloudprof_http_requests", "counter");
    assert_type(m, "cloudprof_hot_queue_calls", "gauge");
    assert_type(m, "cloudprof_assembly_memory_bytes", "gauge");

    /* agents */
    assert_true(val(m, "cloudprof_agent_connections_accepted_total{}") >= AGENTS);
    assert_int_equal(val(m, "cloudprof_agent_connections_refused_total{reason=max_connections}"), 0);
    assert_int_equal(val(m, "cloudprof_agent_connections_blacklisted_total{}"), 0);
    assert_int_equal(val(m, "cloudprof_agent_commands_total{command=handshake}"),
                     val(m, "cloudprof_agent_connections_accepted_total{}"));
    assert_true(val(m, "cloudprof_agent_received_bytes_total{command=data}") > 0);
    json_t *sb = json_object_get(sum, "stream_bytes");
    long long payload = 0;
    for (size_t i = 0; i < CP_ARRAY_LEN(stream_names); i++) {
        char key[128];
        snprintf(key, sizeof key, "cloudprof_agent_stream_bytes_total{stream=%s}", stream_names[i]);
        assert_int_equal(val(m, key), sum_int(sb, stream_names[i]));
        payload += sum_int(sb, stream_names[i]);
    }
    assert_true(payload > 0);
    /* RCV_DATA commands carry their payloads and a header each */
    assert_true(val(m, "cloudprof_agent_received_bytes_total{command=data}") > payload);
    assert_int_equal(val(m, "cloudprof_agent_acks_total{result=ok}"), sum_int(sum, "acks"));
    assert_int_equal(val(m, "cloudprof_agent_acks_total{result=error}"), 0);
    assert_int_equal(val(m, "cloudprof_agent_acks_total{result=ok}"),
                     val(m, "cloudprof_agent_commands_total{command=data}") +
                         val(m, "cloudprof_agent_commands_total{command=ack_flush}"));
    long long flushes = val(m, "cloudprof_agent_commands_total{command=ack_flush}");
    assert_true(flushes >= AGENTS * (MAX_CALLS / 30));
    assert_int_equal(val(m, "cloudprof_agent_ack_latency_seconds_count{}"), flushes);
    assert_int_equal(val(m, "cloudprof_agent_ack_latency_seconds_bucket{le=+Inf}"), flushes);

    /* durability and the hot tier */
    long long batches = val(m, "cloudprof_fsync_batches_total{}");
    assert_true(batches >= 1);
    assert_int_equal(val(m, "cloudprof_fsync_duration_seconds_count{}"), batches);
    assert_int_equal(val(m, "cloudprof_fsync_failures_total{}"), 0);
    assert_int_equal(val(m, "cloudprof_calls_assembled_total{}"), calls_sent);
    assert_int_equal(val(m, "cloudprof_calls_stored_total{}"), calls_sent);
    assert_int_equal(val(m, "cloudprof_calls_store_failures_total{}"), 0);
    assert_int_equal(val(m, "cloudprof_hot_queue_calls{stage=assembly}"), 0);
    /* every connection ended: no extent waits, no call; the word pool keeps only its table */
    assert_int_equal(val(m, "cloudprof_assembly_memory_bytes{part=extents}"), 0);
    assert_int_equal(val(m, "cloudprof_assembly_memory_bytes{part=waiting_calls}"), 0);
    assert_int_equal(val(m, "cloudprof_assembly_memory_bytes{part=values}"), 0);
    assert_true(val(m, "cloudprof_assembly_memory_bytes{part=words}") >= 0);
    assert_int_equal(val(m, "cloudprof_assembly_memory_bytes{part=other}"), 0);
    assert_int_equal(val(m, "cloudprof_ingest_memory_bytes{part=assembly}"),
                     val(m, "cloudprof_assembly_memory_bytes{part=words}"));
    assert_int_equal(val(m, "cloudprof_compaction_failures_total{}"), 0);

    /* HTTP: what this test asked, by route name and code (never the raw URL) */
    assert_int_equal(val0(m, "cloudprof_http_requests_total{code=200,route=health}"), 2);
    assert_int_equal(val0(m, "cloudprof_http_requests_total{code=404,route=other}"), 1);
    assert_int_equal(val0(m, "cloudprof_http_requests_total{code=201,route=upload}"), 1);
    assert_int_equal(val0(m, "cloudprof_http_requests_total{code=200,route=metrics}"), sc.scrapes - 1);
    assert_int_equal(val(m, "cloudprof_http_upload_bytes_total{}"), (long long)td.len);
    json_t *samples = json_object_get(m, "samples");
    const char *key;
    json_t *v;
    json_object_foreach (samples, key, v)
        if (strstr(key, "no-such-thing")) fail_msg("a raw URL became a label: %s", key);

    json_decref(m);
    json_decref(sum);
    cp_buf_free(&td);
    server_end(&s, NULL);
}

/* Scrapes until the open-connections gauge is `want` (closed sockets leave after the
 * server saw their EOF); returns that scrape. */
static json_t *scrape_open(const test_server *s, scraper *sc, long long want)
{
    int64_t deadline = test_now_ms() + TEST_WAIT_MS;
    for (;;) {
        json_t *m = scrape(s, sc);
        long long open = val(m, "cloudprof_agent_connections_open{}");
        if (open == want) return m;
        json_decref(m);
        if (test_now_ms() > deadline) server_fail(s, "%lld agent connections open, not %lld", open, want);
        sleep_ms(100);
    }
}

static void test_refusals(void **state)
{
    (void)state;
    scraper sc = {.python = find_python()};
    if (!sc.python || !in_path("openssl")) skip();
    char *certs = make_temp_dir("metrics-tls");
    char cert[1100], key[1100], cmd[3000];
    snprintf(cert, sizeof cert, "%s/cert.pem", certs);
    snprintf(key, sizeof key, "%s/key.pem", certs);
    snprintf(cmd, sizeof cmd,
             "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=localhost -days 1 "
             "-keyout %s -out %s >/dev/null 2>&1",
             key, cert);
    assert_int_equal(system(cmd), 0);
    const char *const extra[] = {"--blacklist", "banned", "--max-connections", "2", "--agent-tls-port", "auto",
                                 "--tls-cert", cert, "--tls-key", key, NULL};
    test_server s;
    server_start_scraped(&s, &sc, "metrics-refusals", extra);
    assert_true(s.tls_port > 0);

    /* plain text on the TLS port: the handshake fails and the connection is closed */
    int fd = conn_open(s.tls_port);
    static const char junk[] = "GET / HTTP/1.0\r\n\r\n";
    conn_send(fd, junk, sizeof junk - 1);
    cp_buf alert;
    cp_buf_init(&alert);
    conn_read_to_eof(fd, &alert, SRV_TIMEOUT_MS); /* a TLS alert, then the close */
    cp_buf_free(&alert);
    conn_close(fd);

    /* a blacklisted namespace: 88888888 and a close */
    fd = conn_open(s.port);
    assert_int_equal(agent_handshake(fd, CP_PROTOCOL_V2, "pod-b", "svc", "banned"), CP_PROTOCOL_BLACKLISTED);
    conn_expect_eof(fd, SRV_TIMEOUT_MS);
    conn_close(fd);
    /* data before the handshake: 0xFF and a close */
    fd = conn_open(s.port);
    static const uint8_t handle[16] = {1};
    cp_buf cmds;
    cp_buf_init(&cmds);
    agent_put_data(&cmds, handle, (const uint8_t *)"x", 1, 1);
    conn_send_buf(fd, &cmds);
    uint8_t ack = 0;
    conn_read_exact(fd, &ack, 1, SRV_TIMEOUT_MS);
    assert_int_equal(ack, CP_ACK_ERROR);
    conn_expect_eof(fd, SRV_TIMEOUT_MS);
    conn_close(fd);
    json_decref(scrape_open(&s, &sc, 0));
    /* two agents fill --max-connections 2; a third is closed at once */
    int a = conn_open(s.port), b = conn_open(s.port);
    assert_int_equal(agent_handshake(a, CP_PROTOCOL_V2, "pod-1", "svc", "ok"), CP_PROTOCOL_V2);
    assert_int_equal(agent_handshake(b, CP_PROTOCOL_V2, "pod-2", "svc", "ok"), CP_PROTOCOL_V2);
    int c = conn_open(s.port);
    conn_expect_eof(c, SRV_TIMEOUT_MS);
    conn_close(c);
    json_t *m = scrape_open(&s, &sc, 2);
    assert_int_equal(val(m, "cloudprof_agent_connections_blacklisted_total{}"), 1);
    assert_int_equal(val(m, "cloudprof_agent_acks_total{result=error}"), 1);
    assert_int_equal(val(m, "cloudprof_agent_acks_total{result=ok}"), 0);
    assert_int_equal(val(m, "cloudprof_agent_connections_refused_total{reason=max_connections}"), 1);
    assert_int_equal(val(m, "cloudprof_agent_connections_refused_total{reason=tls}"), 1);
    assert_int_equal(val(m, "cloudprof_agent_connections_accepted_total{}"), 5);
    assert_int_equal(val(m, "cloudprof_agent_commands_total{command=handshake}"), 3);
    assert_int_equal(val(m, "cloudprof_agent_commands_total{command=data}"), 1);
    json_decref(m);
    conn_close(a);
    conn_close(b);
    json_decref(scrape_open(&s, &sc, 0));
    cp_buf_free(&cmds);
    server_end(&s, certs);
}

/* One request with an optional Authorization header; returns the status. */
static int status_of(const test_server *s, const char *method, const char *path, const char *auth)
{
    char hdr[256] = "";
    if (auth) snprintf(hdr, sizeof hdr, "Authorization: Basic %s\r\n", auth);
    int status = 0;
    if (http_request(s->http_port, method, path, auth ? hdr : NULL, NULL, 0, &status, NULL, NULL) != 0)
        server_fail(s, "%s %s failed", method, path);
    return status;
}

static void test_auth_failures(void **state)
{
    (void)state;
    scraper sc = {.python = find_python()};
    if (!sc.python || !in_path("openssl")) skip();
    char *dir = make_temp_dir("metrics-auth");
    char users[1100], groups[1100], cmd[3000];
    snprintf(users, sizeof users, "%s/htpasswd", dir);
    snprintf(groups, sizeof groups, "%s/groups", dir);
    /* SHA-512 crypt hashes of "secret" (the password is never written anywhere else) */
    snprintf(cmd, sizeof cmd, "h=$(openssl passwd -6 secret) && printf 'alice:%%s\\nbob:%%s\\n' \"$h\" \"$h\" > %s",
             users);
    assert_int_equal(system(cmd), 0);
    write_file(groups, "admin: alice\nviewer: bob\n", strlen("admin: alice\nviewer: bob\n"));
    const char *const extra[] = {"--auth", "basic", "--auth-users", users, "--auth-groups", groups, NULL};
    test_server s;
    server_start_scraped(&s, &sc, "metrics-auth", extra);

    static const char bob[] = "Ym9iOnNlY3JldA==";         /* bob:secret */
    static const char alice_wrong[] = "YWxpY2U6d3Jvbmc="; /* alice:wrong */
    assert_int_equal(status_of(&s, "GET", "/api/v1/services", NULL), 401);        /* missing */
    assert_int_equal(status_of(&s, "GET", "/api/v1/services", bob), 200);
    assert_int_equal(status_of(&s, "DELETE", "/api/v1/dumps/12345", bob), 403);   /* a viewer: forbidden */
    /* wrong passwords until the backoff answers 429 (after a few free failures) */
    int wrong = 0, slowed = 0;
    for (int i = 0; i < 30 && slowed < 2; i++) {
        int st = status_of(&s, "GET", "/api/v1/time", alice_wrong);
        if (st == 401) wrong++;
        else if (st == 429) slowed++;
        else server_fail(&s, "a wrong password: %d", st);
    }
    assert_true(wrong >= 1 && slowed == 2);

    /* /metrics needs no login */
    json_t *m = scrape(&s, &sc);
    assert_int_equal(val(m, "cloudprof_http_auth_failures_total{reason=missing}"), 1);
    assert_int_equal(val(m, "cloudprof_http_auth_failures_total{reason=bad_credentials}"), wrong);
    assert_int_equal(val(m, "cloudprof_http_auth_failures_total{reason=backoff}"), slowed);
    assert_int_equal(val(m, "cloudprof_http_auth_failures_total{reason=forbidden}"), 1);
    assert_int_equal(val(m, "cloudprof_http_auth_failures_total{reason=expired}"), 0);
    assert_int_equal(val0(m, "cloudprof_http_requests_total{code=401,route=services}"), 1);
    assert_int_equal(val0(m, "cloudprof_http_requests_total{code=403,route=dump}"), 1);
    assert_int_equal(val0(m, "cloudprof_http_requests_total{code=429,route=time}"), slowed);
    json_decref(m);
    server_end(&s, dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_counters_move, servers_teardown),
        cmocka_unit_test_teardown(test_refusals, servers_teardown),
        cmocka_unit_test_teardown(test_auth_failures, servers_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
