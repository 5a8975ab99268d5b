/* hardening_test.c -- what a fault probe found (issue 16), each a test against the real
 * [CP_TEST_INLINE_WRITER: runs again with the catalog writer inline, tests/CMakeLists.txt]
 * server:
 *   1. a torn tail left by kill -9 is cut at recovery (every stored file decodes), the cut
 *      noted on its streams row, and nothing a flush ack covered is lost;
 *   2. calls whose hot-tier commit a full disk refused reach the hot tier once space
 *      returns (tmpfs; root only);
 *   3. below --min-free nothing is created: agents get 0xFF at the handshake, no directory
 *      appears, /health says so; above it again, agents are served (tmpfs; root only);
 *   4. one connection cannot open files without bound (INIT flood), and partial records
 *      are held within a shared budget (--max-buffered); the SQLite WAL is cut back to its
 *      bound (--wal-max) once ingest stops;
 *   5. a legal 1024-byte pod name (and namespace) is stored under a hashed directory and
 *      listed by its full name;
 *   8. the server listens at once after a crash and recovers beside new agents (the
 *      start-up pass held back by a test hook), /health reporting its progress.
 * The HTTP findings (6, 7) are http_hardening_test's; the test command's (9) is shown by
 * running scripts/test.sh under load.
 */
#include "server_util.h"

#include "http_util.h"
#include "replay_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "streams/cp_streams.h"
#include "wire/cp_wire.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static json_t *health(const test_server *s) { return http_get_json(s->http_port, "/api/v1/health", 200); }

static json_int_t jpath(json_t *o, const char *a, const char *b)
{
    json_t *x = json_object_get(o, a);
    return json_integer_value(b ? json_object_get(x, b) : x);
}

static void put_be64(cp_buf *b, int64_t v)
{
    uint8_t t[8];
    cp_put_be64(t, (uint64_t)v);
    cp_buf_append(b, t, 8);
}

/* A trace file's start and one whole chunk: a root ENTER and its EXIT. */
static void trace_whole(cp_buf *b, int64_t t0)
{
    put_be64(b, t0);
    put_be64(b, 1);  /* thread */
    put_be64(b, t0); /* chunk start */
    cp_buf_putc(b, 0x00);
    cp_buf_putc(b, 0x01); /* ENTER method 1 */
    cp_buf_putc(b, 0x05); /* EXIT delta 1 */
    cp_buf_putc(b, 0x03);
}

/* A chunk that never ends: header and n ENTER/EXIT pairs, no FINISH byte. */
static void trace_open_chunk(cp_buf *b, int64_t t0, size_t pairs)
{
    put_be64(b, 2);
    put_be64(b, t0);
    for (size_t i = 0; i < pairs; i++) {
        cp_buf_putc(b, 0x00);
        cp_buf_putc(b, 0x01);
        cp_buf_putc(b, 0x01);
    }
}

static int decodes(const char *stream, const char *path, char *why, size_t whylen)
{
    cp_buf b;
    cp_buf_init(&b);
    load_file(path, &b);
    uint64_t records = 0;
    int rc = decode_file(stream, b.data, b.len, &records, why, whylen);
    cp_buf_free(&b);
    return rc;
}

/* The decoded stream files of the data directory that do not decode whole (the first
 * one's path and reason in bad); *checked counts those looked at. */
static size_t undecodable(const test_server *s, size_t *checked, char *bad, size_t badlen)
{
    raw_entry *e;
    size_t n = raw_list(s, &e), nbad = 0;
    *checked = 0;
    for (size_t i = 0; i < n; i++) {
        cp_stream_kind k = cp_stream_kind_parse(e[i].stream);
        if (!cp_stream_kind_is_decoded(k)) continue;
        char path[2048], why[256];
        raw_tree_path(s, e[i].ns, e[i].pod, e[i].restart, e[i].stream, e[i].index, path, sizeof path);
        if (decodes(e[i].stream, path, why, sizeof why) != CP_OK && nbad++ == 0)
            snprintf(bad, badlen, "%s does not decode: %s", path, why);
        (*checked)++;
    }
    free(e);
    return nbad;
}

/* Every decoded stream file of the data directory decodes whole. */
static size_t assert_all_decode(const test_server *s)
{
    char bad[2400] = "";
    size_t checked;
    if (undecodable(s, &checked, bad, sizeof bad)) server_fail(s, "%s", bad);
    return checked;
}

/* ---- 1. torn tails ------------------------------------------------------------------------ */

static void test_torn_tail_cut(void **state)
{
    test_server s;
    server_start(&s, "torn", NULL);
    int fd = conn_open(s.port);
    assert_int_equal(agent_handshake(fd, 100605, "torn-pod", "svc", "ns"), 100605);
    uint8_t reply[36];
    agent_init(fd, "trace", 0, 0, reply);
    cp_buf whole, part, cmds;
    cp_buf_init(&whole);
    cp_buf_init(&part);
    cp_buf_init(&cmds);
    trace_whole(&whole, 1767225600000LL);
    agent_send_stream(fd, reply, whole.data, whole.len, 1024); /* flushed: durable */
    trace_open_chunk(&part, 1767225600100LL, 10);               /* acked, never flushed */
    size_t n = agent_put_data(&cmds, reply, part.data, part.len, 1024);
    conn_send_buf(fd, &cmds);
    uint8_t acks[16];
    conn_read_exact(fd, acks, n, SRV_TIMEOUT_MS);
    for (size_t i = 0; i < n; i++) assert_int_equal(acks[i], 0);
    server_kill(&s);
    conn_close(fd);
    /* the torn chunk reached the file (the kernel had it) */
    raw_entry *e;
    size_t ne = raw_list(&s, &e);
    assert_int_equal(ne, 1);
    char path[2048];
    raw_tree_path(&s, e[0].ns, e[0].pod, e[0].restart, e[0].stream, e[0].index, path, sizeof path);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal((size_t)sb.st_size, whole.len + part.len);
    server_restart(&s, NULL);
    server_wait_recovered(&s);
    assert_int_equal(stat(path, &sb), 0);
    assert_int_equal((size_t)sb.st_size, whole.len); /* cut to the last whole chunk, nothing flushed lost */
    assert_true(assert_all_decode(&s) == 1);
    assert_int_equal(catalog_count(&s, "SELECT count(*) FROM streams WHERE error LIKE 'recovery cut % trailing bytes%'", NULL),
                     1);
    assert_int_equal(catalog_count(&s, "SELECT min(hot_complete) FROM pod_restarts", NULL), 1);
    free(e);
    cp_buf_free(&whole);
    cp_buf_free(&part);
    cp_buf_free(&cmds);
    server_stop(&s);
    server_destroy(&s);
}

/* ---- 8. listening at once, recovering beside new agents ---------------------------------- */

static void test_recovery_in_background(void **state)
{
    test_server s;
    server_start(&s, "bgrec", NULL);
    /* a conversation cut by a crash: its calls are only in the raw log */
    replay_capture cap;
    replay_capture_parser_test(&cap);
    replay_opts ro;
    memset(&ro, 0, sizeof ro);
    ro.stop_after_flush = 1000; /* every 0x11, the connection left open */
    replay_result rr;
    replay_run(s.port, &cap, &ro, &rr);
    server_kill(&s);
    if (rr.fd >= 0) conn_close(rr.fd);
    setenv("CLOUDPROF_TEST_RECOVERY_DELAY_MS", "4000", 1);
    server_restart(&s, NULL);
    unsetenv("CLOUDPROF_TEST_RECOVERY_DELAY_MS");
    /* ready at once: a new agent is served while the pass waits */
    json_t *h = health(&s);
    assert_int_equal(jpath(h, "recovery", "passes"), 0);
    json_decref(h);
    int fd = conn_open(s.port);
    assert_int_equal(agent_handshake(fd, 100605, "new-pod", "svc", "ns2"), 100605);
    uint8_t reply[36];
    agent_init(fd, "trace", 0, 0, reply);
    cp_buf whole;
    cp_buf_init(&whole);
    trace_whole(&whole, 1767225600000LL);
    agent_send_stream(fd, reply, whole.data, whole.len, 1024);
    conn_close(fd);
    server_wait_recovered(&s);
    h = health(&s);
    assert_true(jpath(h, "recovery", "restarts_done") >= 1); /* the cut-off restart, after the new agent */
    json_decref(h);
    json_t *page = http_get_json(s.http_port, "/api/v1/calls?from=1690200000000&to=1690210000000&limit=1000", 200);
    assert_true(json_array_size(json_object_get(page, "calls")) > 0);
    json_decref(page);
    cp_buf_free(&whole);
    replay_capture_free(&cap);
    server_stop(&s);
    server_destroy(&s);
}

/* ---- 5. long names ------------------------------------------------------------------------- */

static void test_long_names(void **state)
{
    test_server s;
    server_start(&s, "longname", NULL);
    char pod[1025], ns[1025];
    for (int i = 0; i < 1024; i++) pod[i] = (char)('a' + i % 26), ns[i] = (char)('A' + i % 26);
    pod[1024] = ns[1024] = 0;
    pod[7] = '/'; /* escaped: three bytes in the directory name */
    int fd = conn_open(s.port);
    assert_int_equal(agent_handshake(fd, 100605, pod, "svc", ns), 100605);
    uint8_t reply[36];
    agent_init(fd, "trace", 0, 0, reply);
    cp_buf whole;
    cp_buf_init(&whole);
    trace_whole(&whole, 1767225600000LL);
    agent_send_stream(fd, reply, whole.data, whole.len, 1024);
    conn_close(fd);
    /* `cloudprof raw --list` names it in full (the hashed directory's .name file) */
    const char *const argv[] = {"raw", "--data", s.data, "--list", NULL};
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    assert_int_equal(cli_run(&out, &err, argv), 0);
    cp_buf_putc(&out, 0);
    if (!strstr((const char *)out.data, pod) || !strstr((const char *)out.data, ns))
        server_fail(&s, "raw --list does not name the pod in full:\n%s", (const char *)out.data);
    /* and its data is there, cp_rawlog_restart_create's hashed path: no name over 255 bytes */
    raw_entry *e;
    size_t n = raw_list(&s, &e);
    assert_int_equal(n, 1);
    assert_int_equal(e[0].bytes, (long long)whole.len);
    free(e);
    cp_buf_free(&out);
    cp_buf_free(&err);
    cp_buf_free(&whole);
    server_stop(&s);
    server_destroy(&s);
}

/* ---- 4. bounded resources ----------------------------------------------------------------- */

/* Sends an INIT and reads its reply: 1 if a handle came back, 0 for the refusal (the
 * 16-byte null handle, then the connection closes). */
static int try_init(int fd, const char *stream, int32_t seq)
{
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(cp_wire_put_init(&b, stream, seq, 0), CP_OK);
    conn_send_buf(fd, &b);
    cp_buf_free(&b);
    uint8_t reply[16];
    conn_read_exact(fd, reply, 16, SRV_TIMEOUT_MS);
    static const uint8_t zero[16];
    if (memcmp(reply, zero, 16) != 0) {
        uint8_t rest[20];
        conn_read_exact(fd, rest, 20, SRV_TIMEOUT_MS);
        return 1;
    }
    return 0;
}

static void test_init_flood(void **state)
{
    test_server s;
    const char *const args[] = {"--max-rotations-per-minute", "50", "--max-files-per-connection", "80", NULL};
    server_start(&s, "initflood", args);
    /* one name: the 51st INIT within the minute is refused and the connection closed */
    int fd = conn_open(s.port);
    assert_int_equal(agent_handshake(fd, 100605, "flood-1", "svc", "ns"), 100605);
    int ok = 0;
    while (ok < 1000 && try_init(fd, "trace", ok)) ok++;
    assert_int_equal(ok, 50);
    conn_expect_eof(fd, SRV_TIMEOUT_MS);
    conn_close(fd);
    /* several names: the 81st file of the connection is refused */
    static const char *const names[] = {"trace", "calls", "sql", "xml", "suspend"};
    fd = conn_open(s.port);
    assert_int_equal(agent_handshake(fd, 100605, "flood-2", "svc", "ns"), 100605);
    ok = 0;
    while (ok < 1000 && try_init(fd, names[ok % 5], ok / 5)) ok++;
    assert_int_equal(ok, 80);
    conn_expect_eof(fd, SRV_TIMEOUT_MS);
    conn_close(fd);
    raw_entry *e;
    size_t n = raw_list(&s, &e); /* files exist only once data arrives: none here */
    free(e);
    assert_int_equal(catalog_count(&s, "SELECT count(*) FROM streams", NULL), 50 + 80);
    (void)n;
    server_stop(&s);
    server_destroy(&s);
}

static long rss_kb(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    long v = -1;
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "VmRSS:", 6)) v = strtol(line + 6, NULL, 10);
    if (f) fclose(f);
    return v;
}

#define NBUF 8
static void test_partial_budget(void **state)
{
    test_server s;
    const char *const args[] = {"--max-buffered", "4M", NULL};
    server_start(&s, "partial", args);
    long rss0 = rss_kb(s.pid);
    int fds[NBUF], alive[NBUF];
    uint8_t handles[NBUF][36];
    /* a trace chunk whose one TAG value (4 Mi UTF-16 units: 8 MiB) never ends: the decoder
     * must hold the event whole, so it keeps every byte of it */
    cp_buf start, fill;
    cp_buf_init(&start);
    cp_buf_init(&fill);
    put_be64(&start, 1767225600000LL); /* file header */
    put_be64(&start, 2);               /* chunk: thread, start */
    put_be64(&start, 1767225600000LL);
    cp_buf_putc(&start, 0x00); /* ENTER method 1 */
    cp_buf_putc(&start, 0x01);
    cp_buf_putc(&start, 0x02); /* TAG tag 5, inline, 4 Mi units */
    cp_buf_putc(&start, 0x05);
    cp_buf_putc(&start, 0x00);
    static const uint8_t units[] = {0x80, 0x80, 0x80, 0x02};
    cp_buf_append(&start, units, sizeof units);
    for (int i = 0; i < 1024; i++) cp_buf_putc(&fill, (uint8_t)(i & 1 ? 'a' : 0));
    for (int i = 0; i < NBUF; i++) {
        char pod[32];
        snprintf(pod, sizeof pod, "partial-%d", i);
        fds[i] = conn_open(s.port);
        assert_int_equal(agent_handshake(fds[i], 100605, pod, "svc", "ns"), 100605);
        agent_init(fds[i], "trace", 0, 0, handles[i]);
        cp_buf cmd;
        cp_buf_init(&cmd);
        agent_put_data(&cmd, handles[i], start.data, start.len, 1024);
        conn_send_buf(fds[i], &cmd);
        uint8_t ack;
        conn_read_exact(fds[i], &ack, 1, SRV_TIMEOUT_MS);
        assert_int_equal(ack, 0);
        cp_buf_free(&cmd);
        alive[i] = 1;
    }
    /* 1 KiB payloads round-robin: six modest agents stop at 256 KiB (under an equal share of
     * the budget, 512 KiB), two greedy ones go on to 2 MiB: 5.5 MiB asked for, 4 MiB allowed,
     * so the greedy ones are refused and the modest ones never are */
    int refused = 0;
    for (int k = 0; k < 2048; k++)
        for (int i = 0; i < NBUF; i++) {
            if (!alive[i] || (i < NBUF - 2 && k >= 256)) continue;
            cp_buf cmd;
            cp_buf_init(&cmd);
            agent_put_data(&cmd, handles[i], fill.data, fill.len, 1024);
            conn_send_buf(fds[i], &cmd);
            cp_buf_free(&cmd);
            uint8_t ack;
            conn_read_exact(fds[i], &ack, 1, SRV_TIMEOUT_MS);
            if (ack == 0xFF) {
                alive[i] = 0;
                refused++;
                conn_expect_eof(fds[i], SRV_TIMEOUT_MS);
            } else {
                assert_int_equal(ack, 0);
            }
        }
    json_t *h = health(&s);
    json_int_t held = jpath(h, "ingest", "buffered");
    json_decref(h);
    long rss1 = rss_kb(s.pid);
    printf("refused %d of %d agents; %lld bytes held; RSS %ld -> %ld KiB\n", refused, NBUF, (long long)held, rss0, rss1);
    assert_int_equal(refused, 2); /* the greedy two */
    for (int i = 0; i < NBUF - 2; i++) { /* the modest ones are served on */
        assert_true(alive[i]);
        cp_buf cmd;
        cp_buf_init(&cmd);
        agent_put_data(&cmd, handles[i], fill.data, fill.len, 1024);
        conn_send_buf(fds[i], &cmd);
        cp_buf_free(&cmd);
        uint8_t ack;
        conn_read_exact(fds[i], &ack, 1, SRV_TIMEOUT_MS);
        assert_int_equal(ack, 0);
    }
    assert_true(held <= 2 * (4 << 20));         /* at most each agent's share over the budget */
#ifndef CP_TEST_SANITIZED /* ASan's quarantine keeps freed blocks resident: RSS says nothing there */
    assert_true(rss1 - rss0 < 2 * 4 * 1024 + 32 * 1024);
#endif
    for (int i = 0; i < NBUF; i++) conn_close(fds[i]);
    cp_buf_free(&start);
    cp_buf_free(&fill);
    server_stop(&s);
    server_destroy(&s);
}

static long long file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (long long)sb.st_size : 0;
}

static void test_wal_bound(void **state)
{
    test_server s;
    const char *const args[] = {"--wal-max", "2M", NULL};
    server_start(&s, "walbound", args);
    char wal[1200], target[64];
    snprintf(wal, sizeof wal, "%s/catalog.db-wal", s.data);
    snprintf(target, sizeof target, "127.0.0.1:%d", s.port);
    const char *const emu[] = {"emulate", "--target", target, "--agents", "4", "--duration", "4", "--calls-per-sec",
                               "2000", "--quiet", NULL};
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    int rc = cli_run(&out, &err, emu);
    cp_buf_putc(&err, 0);
    if (rc != 0) server_fail(&s, "emulate: %s", (const char *)err.data);
    /* idle: the WAL is cut back to its bound */
    long long size = 0;
    for (int i = 0; i < 600; i++) {
        size = file_size(wal);
        if (size <= 2 << 20) break;
        sleep_ms(50);
    }
    printf("WAL %lld bytes once idle\n", size);
    assert_true(size <= 2 << 20);
    assert_true(catalog_count(&s, "SELECT count(*) FROM inventory", NULL) > 0);
    cp_buf_free(&out);
    cp_buf_free(&err);
    server_stop(&s);
    server_destroy(&s);
}

/* ---- 2, 3. a small file system --------------------------------------------------------------- */

/* A tmpfs of mb megabytes at dir (root only): 1, or 0 (the caller skips). */
static int small_fs(const char *dir, int mb)
{
    if (geteuid() != 0) return 0;
    char opts[64];
    snprintf(opts, sizeof opts, "size=%dm", mb);
    mkdir(dir, 0755);
    return mount("tmpfs", dir, "tmpfs", 0, opts) == 0;
}

/* Fills the file system at dir until `leave` bytes are free. */
static void fill(const char *file, const char *dir, long long leave)
{
    struct statvfs v;
    assert_int_equal(statvfs(dir, &v), 0);
    long long avail = (long long)v.f_bavail * (long long)v.f_frsize;
    FILE *f = fopen(file, "wb");
    assert_non_null(f);
    static char block[1 << 16];
    for (long long left = avail - leave; left > 0; left -= (long long)sizeof block)
        if (fwrite(block, 1, left < (long long)sizeof block ? (size_t)left : sizeof block, f) == 0) break;
    fclose(f);
}

static void test_min_free(void **state)
{
    char *dir = make_temp_dir("minfree");
    char mnt[1100], filler[1200];
    snprintf(mnt, sizeof mnt, "%s/fs", dir);
    if (!small_fs(mnt, 64)) {
        printf("skipped: mounting a tmpfs needs root\n");
        remove_tree(dir);
        free(dir);
        skip();
    }
    snprintf(filler, sizeof filler, "%s/filler", mnt);
    test_server s;
    char data[1200];
    snprintf(data, sizeof data, "%s/data", mnt);
    const char *const args[] = {"--data", data, "--min-free", "24M", NULL};
    server_start(&s, "minfree", args);
    snprintf(s.data, sizeof s.data, "%.1000s", data); /* where the helpers look */
    fill(filler, mnt, 12 << 20); /* 12 MiB left, under the 24 MiB floor */
    int low = 0;
    for (int i = 0; i < 200 && !low; i++) { /* the server looks once a second */
        json_t *h = health(&s);
        low = json_is_true(json_object_get(json_object_get(h, "disk"), "low"));
        json_decref(h);
        if (!low) sleep_ms(50);
    }
    assert_true(low);
    /* an agent: 0xFF at the handshake, no directory made */
    int fd = conn_open(s.port);
    cp_buf b, r;
    cp_buf_init(&b);
    cp_buf_init(&r);
    assert_int_equal(cp_wire_put_handshake(&b, 100605, "low-pod", "svc", "ns"), CP_OK);
    conn_send_buf(fd, &b);
    conn_read_to_eof(fd, &r, SRV_TIMEOUT_MS);
    assert_int_equal(r.len, 1);
    assert_int_equal(r.data[0], 0xFF);
    conn_close(fd);
    char rawdir[1300];
    snprintf(rawdir, sizeof rawdir, "%s/raw/ns", data);
    struct stat sb;
    assert_true(stat(rawdir, &sb) != 0);
    /* an upload: 507 */
    int st;
    cp_buf body;
    cp_buf_init(&body);
    assert_int_equal(http_request(s.http_port, "PUT", "/diagnostic/ns/2026/01/01/00/00/00/low-pod/a.td.txt", NULL,
                                  "x", 1, &st, &body, NULL),
                     0);
    assert_int_equal(st, 507);
    /* room again: served */
    unlink(filler);
    for (int i = 0; i < 200 && low; i++) {
        json_t *h = health(&s);
        low = json_is_true(json_object_get(json_object_get(h, "disk"), "low"));
        json_decref(h);
        if (low) sleep_ms(50);
    }
    assert_false(low);
    fd = conn_open(s.port);
    assert_int_equal(agent_handshake(fd, 100605, "low-pod", "svc", "ns"), 100605);
    conn_close(fd);
    cp_buf_free(&b);
    cp_buf_free(&r);
    cp_buf_free(&body);
    server_stop(&s);
    server_destroy(&s);
    umount(mnt);
    remove_tree(dir);
    free(dir);
}

static void test_disk_full_recovery(void **state)
{
    char *dir = make_temp_dir("diskfull");
    char mnt[1100], filler[1200], data[1200];
    snprintf(mnt, sizeof mnt, "%s/fs", dir);
    if (!small_fs(mnt, 48)) {
        printf("skipped: mounting a tmpfs needs root\n");
        remove_tree(dir);
        free(dir);
        skip();
    }
    snprintf(filler, sizeof filler, "%s/filler", mnt);
    snprintf(data, sizeof data, "%s/data", mnt);
    test_server s;
    const char *const args[] = {"--data", data, "--min-free", "0", NULL};
    server_start(&s, "diskfull", args);
    snprintf(s.data, sizeof s.data, "%.1000s", data); /* where the helpers look */
    fill(filler, mnt, 6 << 20); /* a few MiB: agents fill them */
    int64_t from = cp_now_ms() - 3600000;
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", s.port);
    const char *const emu[] = {"emulate", "--target", target, "--agents", "4", "--duration", "6", "--calls-per-sec",
                               "500", "--reconnect-delay", "200", "--quiet", NULL};
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    cli_run(&out, &err, emu); /* errors expected: the disk fills */
    cp_buf_free(&out);
    cp_buf_free(&err);
    unlink(filler); /* room again */
    int64_t to = cp_now_ms() + 3600000;
    long long raw = raw_calls_total(&s), api = -1;
    for (int i = 0; i < 1200; i++) { /* generous: 60 s for recovery to catch up */
        api = api_calls_total(&s, from, to);
        if (api == raw) break;
        sleep_ms(50);
    }
    printf("%lld calls in the raw log, %lld in the API\n", raw, api);
    cp_buf log;
    cp_buf_init(&log);
    load_file(s.log, &log);
    cp_buf_putc(&log, 0);
    int disk_errors = strstr((const char *)log.data, "disk is full") || strstr((const char *)log.data, "No space");
    cp_buf_free(&log);
    assert_true(disk_errors); /* the disk did fill */
    assert_true(raw > 0);
    if (api != raw) server_fail(&s, "%lld calls in the raw log but %lld in the API", raw, api);
    /* a tail the full disk kept from being cut is cut by recovery's next try (every 5 s):
     * the calls before it can be in the API already */
    char bad[2400] = "";
    size_t checked = 0;
    for (int i = 0; i < 1200 && undecodable(&s, &checked, bad, sizeof bad); i++) sleep_ms(50);
    assert_true(assert_all_decode(&s) > 0);
    server_stop(&s);
    server_destroy(&s);
    umount(mnt);
    remove_tree(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_torn_tail_cut, servers_teardown),
        cmocka_unit_test_teardown(test_recovery_in_background, servers_teardown),
        cmocka_unit_test_teardown(test_long_names, servers_teardown),
        cmocka_unit_test_teardown(test_init_flood, servers_teardown),
        cmocka_unit_test_teardown(test_partial_budget, servers_teardown),
        cmocka_unit_test_teardown(test_wal_bound, servers_teardown),
        cmocka_unit_test_teardown(test_min_free, servers_teardown),
        cmocka_unit_test_teardown(test_disk_full_recovery, servers_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
