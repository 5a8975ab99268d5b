/* bad_input_test.c -- a misbehaving connection must be refused as protocol.md §3.11 says,
 * [CP_TEST_INLINE_WRITER: runs again with the catalog writer inline, tests/CMakeLists.txt]
 * must not store anything that does not decode, and must not disturb anyone else.
 *
 * Every test keeps a healthy agent connection A open (handshake, INIT calls, part of the
 * calls fixture acked by a 0x11) while connection B misbehaves. After the server has
 * closed B, A sends the rest of the fixture and must get every ack, and A's stored file
 * must be byte-identical to what A sent. Then every file stored for B's pod must decode
 * cleanly (complete records only), and where B's bytes were refused the catalog must not
 * keep anything derived from them. */
#include "server_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "streams/cp_streams.h"
#include "wire/cp_wire.h"

#define NS_OK "itest"
#define NS_BAD "itest-bad"
#define HEALTHY_POD "healthy-pod_1700000000000"
#define CALLS_FIXTURE "streams/test-service.calls.0.protocol"
#define TRACE_FIXTURE "streams/test-service.traces.0.protocol"
#define DICT_FIXTURE "streams/test-service.dictionary.protocol"

static const uint8_t ACK_ERR[] = {CP_ACK_ERROR};

/* ---- the healthy connection A --------------------------------------------------------------- */

typedef struct healthy {
    int fd;
    uint8_t handle[16];
    int index;           /* stored file index of its calls stream */
    cp_buf calls;        /* the whole calls fixture; the first half is sent by healthy_open */
    size_t sent;
} healthy;

static void healthy_open(healthy *a, const test_server *s)
{
    load_fixture(CALLS_FIXTURE, &a->calls);
    a->fd = conn_open(s->port);
    assert_int_equal(agent_handshake(a->fd, CP_PROTOCOL_V3, HEALTHY_POD, "healthy-svc", NS_OK), CP_PROTOCOL_V2);
    uint8_t reply[36];
    agent_init(a->fd, "calls", 0, 0, reply);
    memcpy(a->handle, reply, 16);
    a->index = (int32_t)cp_be32(reply + 32) + 1;
    a->sent = a->calls.len / 2;
    agent_send_stream(a->fd, a->handle, a->calls.data, a->sent, 1024);
}

/* A still works after B: the rest of its stream is acked and everything A sent is stored. */
static void healthy_finish(healthy *a, const test_server *s)
{
    agent_send_stream(a->fd, a->handle, a->calls.data + a->sent, a->calls.len - a->sent, 1000);
    a->sent = a->calls.len;
    cp_buf got;
    raw_fetch(s, NS_OK, HEALTHY_POD, "calls", a->index, &got);
    assert_bytes_equal("healthy connection's stored calls", got.data, got.len, a->calls.data, a->calls.len);
    cp_buf_free(&got);
    uint8_t close_cmd = CP_CMD_CLOSE;
    conn_send(a->fd, &close_cmd, 1);
    conn_expect_eof(a->fd, SRV_TIMEOUT_MS);
    conn_close(a->fd);
    cp_buf_free(&a->calls);
}

/* ---- the bad connection B ------------------------------------------------------------------- */

/* Opens B: a handshake for pod, and when handle is non-NULL an INIT of stream. */
static int bad_open(const test_server *s, const char *pod, const char *stream, uint8_t handle[16])
{
    int fd = conn_open(s->port);
    assert_int_equal(agent_handshake(fd, CP_PROTOCOL_V2, pod, "bad-svc", NS_BAD), CP_PROTOCOL_V2);
    if (handle) {
        uint8_t reply[36];
        agent_init(fd, stream, 0, 0, reply);
        memcpy(handle, reply, 16);
    }
    return fd;
}

/* Reads until the server closes B; everything it sent must equal want. */
static void expect_reply_then_eof(int fd, const uint8_t *want, size_t n, const char *what)
{
    cp_buf got;
    cp_buf_init(&got);
    conn_read_to_eof(fd, &got, SRV_TIMEOUT_MS);
    char msg[200];
    snprintf(msg, sizeof msg, "%s: bytes from the server before it closed", what);
    assert_bytes_equal(msg, got.data, got.len, want, n);
    cp_buf_free(&got);
}

/* Every file stored for pod decodes cleanly, and it has exactly nfiles of them. The server
 * may still be finishing the closed connection, so this retries for up to TEST_WAIT_MS
 * before it fails. */
static void check_pod_stored_cleanly(const test_server *s, const char *pod, size_t nfiles)
{
    char why[512] = "";
    for (int64_t deadline = test_now_ms() + TEST_WAIT_MS; test_now_ms() < deadline;) {
        raw_entry *e;
        size_t n = raw_list(s, &e);
        size_t mine = 0;
        why[0] = 0;
        for (size_t i = 0; i < n && !why[0]; i++) {
            if (strcmp(e[i].pod, pod) != 0) continue;
            mine++;
            cp_buf got;
            raw_fetch(s, e[i].ns, pod, e[i].stream, e[i].index, &got);
            uint64_t records;
            char err[256];
            if ((long long)got.len != e[i].bytes)
                snprintf(why, sizeof why, "%s: listed with %lld bytes, raw gives %zu", e[i].stream, e[i].bytes,
                         got.len);
            else if (decode_file(e[i].stream, got.data, got.len, &records, err, sizeof err) != CP_OK)
                snprintf(why, sizeof why, "stored %s file %d does not decode cleanly: %s", e[i].stream, e[i].index,
                         err);
            cp_buf_free(&got);
        }
        free(e);
        if (!why[0] && mine != nfiles)
            snprintf(why, sizeof why, "%zu files stored for pod %s, expected %zu", mine, pod, nfiles);
        if (!why[0]) return;
        usleep(100 * 1000);
    }
    fail_msg("%s", why);
}

/* The stored file of B's stream equals want (retrying while the server finishes). */
static void check_stored(const test_server *s, const char *pod, const char *stream, const uint8_t *want, size_t n)
{
    cp_buf got;
    for (int64_t deadline = test_now_ms() + TEST_WAIT_MS;;) {
        raw_fetch(s, NS_BAD, pod, stream, 1, &got);
        if ((got.len == n && (n == 0 || memcmp(got.data, want, n) == 0)) || test_now_ms() > deadline) break;
        cp_buf_free(&got);
        usleep(100 * 1000);
    }
    char what[200];
    snprintf(what, sizeof what, "stored %s of pod %s", stream, pod);
    assert_bytes_equal(what, got.data, got.len, want, n);
    cp_buf_free(&got);
}

/* Offsets where a stream fixture's complete units end (header, record, trace chunk or
 * phrase), found by feeding the decoder byte by byte. */
static size_t unit_ends(const char *stream, const cp_buf *b, uint64_t *ends, size_t max)
{
    cp_dec *d = cp_dec_new(cp_stream_kind_parse(stream), NULL, NULL, 0);
    size_t n = 0;
    uint64_t last = 0;
    for (size_t i = 0; i < b->len && n < max; i++) {
        assert_int_equal(cp_dec_feed(d, b->data + i, 1), CP_OK);
        if (cp_dec_committed(d) != last) ends[n++] = last = cp_dec_committed(d);
    }
    cp_dec_free(d);
    return n;
}

/* A server with a healthy connection A already open. */
typedef struct fixture {
    test_server s;
    healthy a;
} fixture;

static void setup(fixture *f, const char *tag, const char *const *extra)
{
    server_start(&f->s, tag, extra);
    healthy_open(&f->a, &f->s);
}

/* A must still work; then the server stops (the catalog is committed) but its data stays. */
static void finish_keep(fixture *f)
{
    healthy_finish(&f->a, &f->s);
    server_stop(&f->s);
}

static void finish(fixture *f)
{
    finish_keep(f);
    server_destroy(&f->s);
}

/* ---- the cases ------------------------------------------------------------------------------ */

/* RCV_DATA header whose payload field claims len bytes (the payload itself is not sent:
 * the server must refuse on the length alone). */
static void put_data_header(cp_buf *b, const uint8_t handle[16], int32_t len)
{
    uint8_t h[21];
    h[0] = CP_CMD_DATA;
    memcpy(h + 1, handle, 16);
    cp_put_be32(h + 17, (uint32_t)len);
    cp_buf_append(b, h, sizeof h);
}

static void bad_field_length(int32_t len, const char *tag)
{
    fixture f;
    setup(&f, tag, NULL);
    char pod[64];
    snprintf(pod, sizeof pod, "%s_1700000000001", tag);
    uint8_t h[16];
    int b = bad_open(&f.s, pod, "calls", h);
    cp_buf calls, m;
    load_fixture(CALLS_FIXTURE, &calls);
    cp_buf_init(&m);
    agent_put_data(&m, h, calls.data, 1024, 1024); /* a good payload first: acked 0x00 */
    put_data_header(&m, h, len);
    conn_send_buf(b, &m);
    static const uint8_t want[] = {CP_ACK_OK, CP_ACK_ERROR};
    expect_reply_then_eof(b, want, sizeof want, tag);
    conn_close(b);
    check_pod_stored_cleanly(&f.s, pod, 1); /* 1024 bytes end mid-record: torn tail dropped */
    finish(&f);
    cp_buf_free(&m);
    cp_buf_free(&calls);
}

static void test_field_length_over_1024(void **state)
{
    (void)state;
    bad_field_length(1025, "field-1025");
}

static void test_field_length_negative(void **state)
{
    (void)state;
    bad_field_length(-1, "field-negative");
}

/* Also a field length far out of range in a handshake string. */
static void test_handshake_field_too_long(void **state)
{
    (void)state;
    fixture f;
    setup(&f, "hs-field", NULL);
    int b = conn_open(f.s.port);
    uint8_t m[1 + 8 + 4];
    m[0] = CP_CMD_HANDSHAKE;
    cp_put_be64(m + 1, CP_PROTOCOL_V2);
    cp_put_be32(m + 9, 0x7FFFFFFF);
    conn_send(b, m, sizeof m);
    expect_reply_then_eof(b, ACK_ERR, 1, "handshake with a 2 GiB pod name");
    conn_close(b);
    finish(&f);
}

static void test_unknown_command_bytes(void **state)
{
    (void)state;
    static const uint8_t bytes[] = {0x10, 0x12, 0x00, 0x7E};
    fixture f;
    setup(&f, "unknown-cmd", NULL);
    cp_buf calls;
    load_fixture(CALLS_FIXTURE, &calls);
    for (size_t i = 0; i < CP_ARRAY_LEN(bytes); i++) {
        char pod[64], what[64];
        snprintf(pod, sizeof pod, "unknown-cmd-%02x_1700000000001", bytes[i]);
        snprintf(what, sizeof what, "command byte 0x%02x", bytes[i]);
        uint8_t h[16];
        int b = bad_open(&f.s, pod, "calls", h);
        /* a good payload and a 0x11 first: their acks come before the 0xFF */
        cp_buf m;
        cp_buf_init(&m);
        agent_put_data(&m, h, calls.data, 48, 1024); /* header + the first record */
        cp_buf_putc(&m, CP_CMD_ACK_FLUSH);
        cp_buf_putc(&m, bytes[i]);
        conn_send_buf(b, &m);
        static const uint8_t want[] = {CP_ACK_OK, CP_ACK_OK, CP_ACK_ERROR};
        expect_reply_then_eof(b, want, sizeof want, what);
        conn_close(b);
        cp_buf_free(&m);
        check_pod_stored_cleanly(&f.s, pod, 1);
    }
    cp_buf_free(&calls);
    finish(&f);
}

static void test_data_for_unknown_handle(void **state)
{
    (void)state;
    fixture f;
    setup(&f, "unknown-handle", NULL);
    cp_buf calls;
    load_fixture(CALLS_FIXTURE, &calls);
    /* 1: the handle of A, a different connection; 2: a handle nobody was given */
    uint8_t never[16];
    for (size_t i = 0; i < 16; i++) never[i] = (uint8_t)(0xA5 ^ (i * 29));
    const uint8_t *foreign[] = {f.a.handle, never};
    for (size_t i = 0; i < CP_ARRAY_LEN(foreign); i++) {
        char pod[64];
        snprintf(pod, sizeof pod, "unknown-handle-%zu_1700000000001", i);
        uint8_t h[16];
        int b = bad_open(&f.s, pod, "calls", h);
        cp_buf m;
        cp_buf_init(&m);
        agent_put_data(&m, h, calls.data, 48, 1024);
        /* bytes that would corrupt A's calls file if the server took them */
        agent_put_data(&m, foreign[i], (const uint8_t *)"\x7f\x7f\x7f\x7f", 4, 1024);
        conn_send_buf(b, &m);
        static const uint8_t want[] = {CP_ACK_OK, CP_ACK_ERROR};
        expect_reply_then_eof(b, want, sizeof want, i == 0 ? "RCV_DATA with another connection's handle"
                                                          : "RCV_DATA with a handle never issued");
        conn_close(b);
        cp_buf_free(&m);
        check_pod_stored_cleanly(&f.s, pod, 1);
    }
    cp_buf_free(&calls);
    finish(&f); /* A's file holds exactly A's bytes */
}

static void test_init_unknown_stream(void **state)
{
    (void)state;
    /* wire names are case-sensitive; "traces" is only a CLI alias */
    static const char *const names[] = {"bogus", "traces", "CALLS"};
    static const uint8_t null_handle[16];
    fixture f;
    setup(&f, "unknown-stream", NULL);
    for (size_t i = 0; i < CP_ARRAY_LEN(names); i++) {
        char pod[64], what[64];
        snprintf(pod, sizeof pod, "unknown-stream-%zu_1700000000001", i);
        snprintf(what, sizeof what, "INIT of stream '%s'", names[i]);
        int b = bad_open(&f.s, pod, NULL, NULL);
        cp_buf m;
        cp_buf_init(&m);
        assert_int_equal(cp_wire_put_init(&m, names[i], 0, 0), CP_OK);
        conn_send_buf(b, &m);
        expect_reply_then_eof(b, null_handle, sizeof null_handle, what);
        conn_close(b);
        cp_buf_free(&m);
        check_pod_stored_cleanly(&f.s, pod, 0);
    }
    finish(&f);
}

/* Random bytes whose first byte is no command: the server can only refuse them. */
static void fill_garbage(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t st = seed;
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)test_rand(&st);
    p[0] = (uint8_t)(0x80 | (p[0] & 0x7E)); /* 0x80..0xFE: not a command byte */
}

static void test_garbage(void **state)
{
    (void)state;
    static const uint64_t seeds[] = {0x6A6B01, 0x6A6B02, 0x6A6B03};
    fixture f;
    setup(&f, "garbage", NULL);
    cp_buf calls;
    load_fixture(CALLS_FIXTURE, &calls);
    uint8_t junk[4096];
    for (size_t i = 0; i < CP_ARRAY_LEN(seeds); i++) {
        fill_garbage(junk, sizeof junk, seeds[i]);
        /* instead of a handshake */
        int b = conn_open(f.s.port);
        conn_send(b, junk, sizeof junk);
        expect_reply_then_eof(b, ACK_ERR, 1, "garbage instead of a handshake");
        conn_close(b);

        /* in the middle of a healthy calls stream */
        char pod[64];
        snprintf(pod, sizeof pod, "garbage-%zu_1700000000001", i);
        uint8_t h[16];
        b = bad_open(&f.s, pod, "calls", h);
        cp_buf m;
        cp_buf_init(&m);
        agent_put_data(&m, h, calls.data, 2048, 1024);
        cp_buf_putc(&m, CP_CMD_ACK_FLUSH);
        cp_buf_append(&m, junk, sizeof junk);
        conn_send_buf(b, &m);
        static const uint8_t want[] = {CP_ACK_OK, CP_ACK_OK, CP_ACK_OK, CP_ACK_ERROR};
        expect_reply_then_eof(b, want, sizeof want, "garbage after a calls stream");
        conn_close(b);
        cp_buf_free(&m);
        check_pod_stored_cleanly(&f.s, pod, 1);
    }
    cp_buf_free(&calls);
    finish(&f);
}

/* B sends a stream up to the middle of a unit, has it acked by a 0x11, and disconnects:
 * the stored file keeps only the complete units, and `cloudprof decode` reads it. */
static void drop_mid_unit(fixture *f, const char *stream, const char *fixture_rel, size_t complete_units)
{
    cp_buf data;
    load_fixture(fixture_rel, &data);
    uint64_t ends[64];
    size_t n = unit_ends(stream, &data, ends, CP_ARRAY_LEN(ends));
    assert_true(n > complete_units + 1);
    uint64_t clean = ends[complete_units];
    uint64_t cut = clean + (ends[complete_units + 1] - clean) / 2;

    char pod[64];
    snprintf(pod, sizeof pod, "dropped-%s_1700000000001", stream);
    uint8_t h[16];
    int b = bad_open(&f->s, pod, stream, h);
    agent_send_stream(b, h, data.data, cut, 1024);
    conn_close(b); /* mid-unit, without CLOSE */

    check_stored(&f->s, pod, stream, data.data, clean);
    uint64_t records;
    assert_int_equal(decode_file(stream, data.data, clean, &records, NULL, 0), CP_OK);
    size_t lines;
    assert_int_equal(cli_decode(&f->s, stream, data.data, clean, &lines), 0);
    assert_int_equal(lines, records);
    assert_true(records > 0);
    cp_buf_free(&data);
}

static void test_dropped_mid_record(void **state)
{
    (void)state;
    fixture f;
    setup(&f, "dropped", NULL);
    /* calls: header + 3 records + half of the 4th (unit 0 is the 16-byte header) */
    drop_mid_unit(&f, "calls", CALLS_FIXTURE, 3);
    /* trace: header + 2 chunks + half of the 3rd */
    drop_mid_unit(&f, "trace", TRACE_FIXTURE, 2);
    /* dictionary: 2 phrases + half of the 3rd (units are phrases) */
    drop_mid_unit(&f, "dictionary", DICT_FIXTURE, 1);
    finish(&f);
}

/* B sends a clean prefix (acked), then a payload that cannot decode: 0xFF, close, and
 * the stored file is the clean part only. */
static void corrupt_stream(fixture *f, const char *stream, const cp_buf *prefix, const cp_buf *bad, uint64_t clean_min,
                           uint64_t clean_max)
{
    char pod[64];
    snprintf(pod, sizeof pod, "corrupt-%s_1700000000001", stream);
    uint8_t h[16];
    int b = bad_open(&f->s, pod, stream, h);
    agent_send_stream(b, h, prefix->data, prefix->len, 1024);
    cp_buf m;
    cp_buf_init(&m);
    agent_put_data(&m, h, bad->data, bad->len, 1024);
    conn_send_buf(b, &m);
    cp_buf_free(&m);
    char what[64];
    snprintf(what, sizeof what, "corrupt %s records", stream);
    expect_reply_then_eof(b, ACK_ERR, 1, what);
    conn_close(b);

    /* all that is stored is a clean prefix of what was sent */
    cp_buf all;
    cp_buf_init(&all);
    cp_buf_append(&all, prefix->data, prefix->len);
    cp_buf_append(&all, bad->data, bad->len);
    cp_buf got;
    for (int64_t deadline = test_now_ms() + TEST_WAIT_MS;;) {
        raw_fetch(&f->s, NS_BAD, pod, stream, 1, &got);
        if ((got.len == clean_min || got.len == clean_max) || test_now_ms() > deadline) break;
        cp_buf_free(&got);
        usleep(100 * 1000);
    }
    if (got.len != clean_min && got.len != clean_max)
        fail_msg("stored %s: %zu bytes, expected the clean prefix (%llu or %llu bytes)", stream, got.len,
                 (unsigned long long)clean_min, (unsigned long long)clean_max);
    assert_bytes_equal(what, got.data, got.len, all.data, got.len);
    uint64_t records;
    char why[256];
    if (decode_file(stream, got.data, got.len, &records, why, sizeof why) != CP_OK)
        fail_msg("stored %s does not decode cleanly: %s", stream, why);
    size_t lines;
    assert_int_equal(cli_decode(&f->s, stream, got.data, got.len, &lines), 0);
    assert_int_equal(lines, records);
    cp_buf_free(&got);
    cp_buf_free(&all);
    check_pod_stored_cleanly(&f->s, pod, 1);
}

static void test_corrupt_calls_record(void **state)
{
    (void)state;
    fixture f;
    setup(&f, "corrupt-calls", NULL);
    cp_buf data, prefix, bad;
    load_fixture(CALLS_FIXTURE, &data);
    uint64_t ends[8];
    assert_int_equal(unit_ends("calls", &data, ends, 8), 8);
    cp_buf_init(&prefix);
    cp_buf_append(&prefix, data.data, ends[2]); /* header + 2 records: 2 threads known */
    /* a record naming thread #7 of a 2-entry thread table: delta 0, method 1, duration 1,
     * calls 1, threadIndex 7, then zeros */
    static const uint8_t rec[] = {0x00, 0x01, 0x01, 0x01, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    cp_buf_init(&bad);
    cp_buf_append(&bad, rec, sizeof rec);
    uint64_t records;
    char why[256];
    assert_true(decode_file("calls", prefix.data, prefix.len, &records, why, sizeof why) == CP_OK);
    cp_buf_append(&prefix, bad.data, bad.len);
    assert_true(decode_file("calls", prefix.data, prefix.len, &records, why, sizeof why) < 0); /* really corrupt */
    prefix.len = ends[2];
    corrupt_stream(&f, "calls", &prefix, &bad, ends[2], ends[2]);
    cp_buf_free(&data);
    cp_buf_free(&prefix);
    cp_buf_free(&bad);
    finish(&f);
}

/* Many payloads of one stream in one write (the server writes such a run with one
 * writev, then decodes and acknowledges each): the clean pieces before the corrupt one
 * get 0x00 each, the corrupt one 0xFF, nothing after it is answered or kept. */
static void test_corrupt_payload_inside_a_run(void **state)
{
    (void)state;
    fixture f;
    setup(&f, "corrupt-run", NULL);
    cp_buf data, m;
    load_fixture(CALLS_FIXTURE, &data);
    uint64_t ends[8];
    assert_int_equal(unit_ends("calls", &data, ends, 8), 8);
    static const uint8_t rec[] = {0x00, 0x01, 0x01, 0x01, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
    const char *pod = "corrupt-run_1700000000001";
    uint8_t h[16];
    int b = bad_open(&f.s, pod, "calls", h);
    cp_buf_init(&m);
    enum { PIECE = 16 };
    size_t clean_pieces = (size_t)(ends[2] + PIECE - 1) / PIECE;
    agent_put_data(&m, h, data.data, ends[2], PIECE);             /* header + 2 records */
    agent_put_data(&m, h, rec, sizeof rec, sizeof rec);           /* a record naming thread #7 of 2 */
    agent_put_data(&m, h, data.data + ends[2], ends[4] - ends[2], PIECE); /* clean, but after it */
    conn_send_buf(b, &m);
    uint8_t want[64];
    assert_true(clean_pieces + 1 <= sizeof want);
    memset(want, CP_ACK_OK, clean_pieces);
    want[clean_pieces] = CP_ACK_ERROR;
    expect_reply_then_eof(b, want, clean_pieces + 1, "a run with a corrupt payload");
    conn_close(b);
    cp_buf got;
    for (int64_t deadline = test_now_ms() + TEST_WAIT_MS;;) {
        raw_fetch(&f.s, NS_BAD, pod, "calls", 1, &got);
        if (got.len == ends[2] || test_now_ms() > deadline) break;
        cp_buf_free(&got);
        usleep(100 * 1000);
    }
    if (got.len != ends[2]) fail_msg("stored %zu bytes, expected the clean prefix of %llu", got.len, (unsigned long long)ends[2]);
    assert_bytes_equal("the clean prefix", got.data, got.len, data.data, got.len);
    cp_buf_free(&got);
    cp_buf_free(&m);
    cp_buf_free(&data);
    check_pod_stored_cleanly(&f.s, pod, 1);
    finish(&f);
}

static void test_corrupt_trace_param_type(void **state)
{
    (void)state;
    fixture f;
    setup(&f, "corrupt-trace", NULL);
    cp_buf data, prefix, bad;
    load_fixture(TRACE_FIXTURE, &data);
    uint64_t ends[4];
    assert_int_equal(unit_ends("trace", &data, ends, 4), 4); /* header, chunk 1, chunk 2, chunk 3 */
    cp_buf_init(&prefix);
    cp_buf_append(&prefix, data.data, ends[1]); /* header + chunk 1 */
    /* one more good chunk, then a chunk whose TAG has paramType 7 (only 0..3 exist) */
    cp_buf_init(&bad);
    cp_buf_append(&bad, data.data + ends[1], ends[2] - ends[1]);
    uint8_t chunk[16 + 12] = {0};
    cp_put_be64(chunk, 1);                /* threadId */
    cp_put_be64(chunk + 8, 1690201583767); /* chunkStartTime */
    static const uint8_t ev[] = {0x00, 0x09, 0x02, 0x05, 0x07, 0x00, 0x00, 0x01, 0x01, 0x03};
    memcpy(chunk + 16, ev, sizeof ev);    /* ENTER m=9; TAG tag=5 type=7 ...; EXIT; FINISH */
    cp_buf_append(&bad, chunk, 16 + sizeof ev);
    uint64_t records;
    char why[256];
    cp_buf all;
    cp_buf_init(&all);
    cp_buf_append(&all, prefix.data, prefix.len);
    cp_buf_append(&all, bad.data, bad.len);
    assert_true(decode_file("trace", all.data, all.len, &records, why, sizeof why) < 0); /* really corrupt */
    cp_buf_free(&all);
    /* the server may keep the good chunk of the refused payload or drop the payload whole */
    corrupt_stream(&f, "trace", &prefix, &bad, ends[1], ends[2]);
    cp_buf_free(&data);
    cp_buf_free(&prefix);
    cp_buf_free(&bad);
    finish(&f);
}

/* B opens a phrase-framed stream, sends clean phrases (acked), then one phrase that is
 * corrupt after some good records. Records never cross phrases (§4.3), so the whole
 * phrase is refused: 0xFF, close, the raw log keeps the clean phrases only, and the
 * catalog must not keep rows from the refused phrase either. */
static void corrupt_phrase(fixture *f, const char *stream, int32_t reset, const uint8_t *clean, size_t nclean,
                           const uint8_t *body, size_t nbody)
{
    char pod[64];
    snprintf(pod, sizeof pod, "corrupt-%s_1700000000001", stream);
    int b = conn_open(f->s.port);
    assert_int_equal(agent_handshake(b, CP_PROTOCOL_V2, pod, "bad-svc", NS_BAD), CP_PROTOCOL_V2);
    uint8_t h[36];
    agent_init(b, stream, 0, reset, h);
    if (nclean) agent_send_stream(b, h, clean, nclean, 1024);
    cp_buf m;
    cp_buf_init(&m);
    uint8_t len[4];
    cp_put_be32(len, (uint32_t)nbody);
    agent_put_data(&m, h, len, 4, 4);
    agent_put_data(&m, h, body, nbody, 1024);
    conn_send_buf(b, &m);
    cp_buf_free(&m);
    char what[64];
    snprintf(what, sizeof what, "corrupt %s phrase", stream);
    /* the 4-byte length payload is fine on its own: acked; the body is refused */
    static const uint8_t want[] = {CP_ACK_OK, CP_ACK_ERROR};
    expect_reply_then_eof(b, want, sizeof want, what);
    conn_close(b);
    check_stored(&f->s, pod, stream, clean, nclean);
}

static void test_corrupt_phrase_leaves_no_catalog_rows(void **state)
{
    (void)state;
    fixture f;
    setup(&f, "corrupt-phrase", NULL);
    /* dictionary: phrase 1 of the fixture, then two good words ("ab", "cd") and a word
     * claiming 100 UTF-16 units where 1 is left */
    cp_buf dict;
    load_fixture(DICT_FIXTURE, &dict);
    size_t clean = 4 + cp_be32(dict.data);
    static const uint8_t words[] = {0x02, 0x00, 'a', 0x00, 'b', 0x02, 0x00, 'c', 0x00, 'd', 0x64, 0x00, 'e'};
    corrupt_phrase(&f, "dictionary", 1, dict.data, clean, words, sizeof words);
    /* params: format byte, one good record ("p1": index 1, list 0, order 5, ""), then a
     * record whose isIndex flag is 7 */
    static const uint8_t params[] = {0x01, 0x02, 0x00, 'p', 0x00, '1', 0x01, 0x00, 0x05, 0x00,
                                     0x02, 0x00, 'p', 0x00, '2', 0x07, 0x00, 0x05, 0x00};
    corrupt_phrase(&f, "params", 0, NULL, 0, params, sizeof params);
    finish_keep(&f);

    uint64_t nwords;
    assert_int_equal(decode_file("dictionary", dict.data, clean, &nwords, NULL, 0), CP_OK);
    const char *dpod = "corrupt-dictionary_1700000000001", *ppod = "corrupt-params_1700000000001";
    assert_int_equal(catalog_check_dictionary(&f.s, dpod, dict.data, clean), nwords);
    long long rows = catalog_count(&f.s, "SELECT count(*) FROM dictionary WHERE pod_name = ?1", dpod);
    long long prows = catalog_count(&f.s, "SELECT count(*) FROM params WHERE pod_name = ?1", ppod);
    if (rows != (long long)nwords || prows != 0)
        fail_msg("the catalog kept rows of refused phrases: %lld dictionary rows for %llu stored words, "
                 "%lld params rows for an empty params file",
                 rows, (unsigned long long)nwords, prows);
    server_destroy(&f.s);
    cp_buf_free(&dict);
}

/* Names from the network are escaped into single path components: a pod named like a
 * path cannot write outside the raw tree, and the names read back unchanged. */
static void test_hostile_names_stay_in_the_raw_tree(void **state)
{
    (void)state;
    const char *ns = "..", *pod = "../../../outside/evil_1700000000001";
    fixture f;
    setup(&f, "names", NULL);
    cp_buf calls;
    load_fixture(CALLS_FIXTURE, &calls);
    int b = conn_open(f.s.port);
    assert_int_equal(agent_handshake(b, CP_PROTOCOL_V2, pod, "svc/..", ns), CP_PROTOCOL_V2);
    uint8_t reply[36];
    agent_init(b, "calls", 0, 0, reply);
    agent_send_stream(b, reply, calls.data, 48, 1024);
    uint8_t close_cmd = CP_CMD_CLOSE;
    conn_send(b, &close_cmd, 1);
    conn_expect_eof(b, SRV_TIMEOUT_MS);
    conn_close(b);

    raw_entry *e;
    size_t n = raw_list(&f.s, &e);
    const raw_entry *mine = NULL;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(e[i].pod, pod)) mine = &e[i];
    if (!mine) fail_msg("raw --list does not show pod '%s' under its own name", pod);
    assert_string_equal(mine->ns, ns);
    char path[2048];
    raw_tree_path(&f.s, ns, pod, mine->restart, "calls", mine->index, path, sizeof path);
    cp_buf got;
    load_file(path, &got); /* the escaped path, inside <data>/raw */
    assert_bytes_equal("stored calls of the hostile pod", got.data, got.len, calls.data, 48);
    cp_buf_free(&got);
    free(e);
    cp_buf_free(&calls);
    finish(&f);
}

static void test_commands_before_handshake(void **state)
{
    (void)state;
    fixture f;
    setup(&f, "no-handshake", NULL);
    /* INIT first */
    int b = conn_open(f.s.port);
    cp_buf m;
    cp_buf_init(&m);
    assert_int_equal(cp_wire_put_init(&m, "calls", 0, 0), CP_OK);
    conn_send_buf(b, &m);
    expect_reply_then_eof(b, ACK_ERR, 1, "INIT before the handshake");
    conn_close(b);
    /* RCV_DATA first, with A's (valid, but foreign) handle */
    cp_buf_reset(&m);
    agent_put_data(&m, f.a.handle, (const uint8_t *)"\x7f\x7f\x7f\x7f", 4, 1024);
    b = conn_open(f.s.port);
    conn_send_buf(b, &m);
    expect_reply_then_eof(b, ACK_ERR, 1, "RCV_DATA before the handshake");
    conn_close(b);
    cp_buf_free(&m);
    finish(&f);
}

static void test_blacklisted_namespace(void **state)
{
    (void)state;
    static const char *const args[] = {"--blacklist", "blocked-ns,other-blocked", NULL};
    static const uint8_t blacklisted[8] = {0x00, 0x00, 0x00, 0x00, 0x05, 0x4C, 0x56, 0x38}; /* 88888888 */
    static const char *const namespaces[] = {"blocked-ns", "other-blocked"};
    fixture f;
    setup(&f, "blacklist", args); /* A's namespace is not listed */
    for (size_t i = 0; i < CP_ARRAY_LEN(namespaces); i++) {
        char pod[64];
        snprintf(pod, sizeof pod, "blacklisted-%zu_1700000000001", i);
        int b = conn_open(f.s.port);
        cp_buf m;
        cp_buf_init(&m);
        assert_int_equal(cp_wire_put_handshake(&m, CP_PROTOCOL_V3, pod, "svc", namespaces[i]), CP_OK);
        conn_send_buf(b, &m);
        cp_buf_free(&m);
        expect_reply_then_eof(b, blacklisted, sizeof blacklisted, namespaces[i]);
        conn_close(b);
        check_pod_stored_cleanly(&f.s, pod, 0);
    }
    finish(&f);
}

static void test_legacy_version_command(void **state)
{
    (void)state;
    static const uint8_t v1[8] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x88, 0x99}; /* 100505 */
    fixture f;
    setup(&f, "legacy", NULL);
    int b = conn_open(f.s.port);
    uint8_t cmd = CP_CMD_VERSION_LEGACY;
    conn_send(b, &cmd, 1);
    uint8_t reply[8];
    conn_read_exact(b, reply, 8, SRV_TIMEOUT_MS);
    assert_memory_equal(reply, v1, 8);
    conn_close(b);
    finish(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_field_length_over_1024, servers_teardown),
        cmocka_unit_test_teardown(test_field_length_negative, servers_teardown),
        cmocka_unit_test_teardown(test_handshake_field_too_long, servers_teardown),
        cmocka_unit_test_teardown(test_unknown_command_bytes, servers_teardown),
        cmocka_unit_test_teardown(test_data_for_unknown_handle, servers_teardown),
        cmocka_unit_test_teardown(test_init_unknown_stream, servers_teardown),
        cmocka_unit_test_teardown(test_garbage, servers_teardown),
        cmocka_unit_test_teardown(test_dropped_mid_record, servers_teardown),
        cmocka_unit_test_teardown(test_corrupt_calls_record, servers_teardown),
        cmocka_unit_test_teardown(test_corrupt_payload_inside_a_run, servers_teardown),
        cmocka_unit_test_teardown(test_corrupt_trace_param_type, servers_teardown),
        cmocka_unit_test_teardown(test_corrupt_phrase_leaves_no_catalog_rows, servers_teardown),
        cmocka_unit_test_teardown(test_hostile_names_stay_in_the_raw_tree, servers_teardown),
        cmocka_unit_test_teardown(test_commands_before_handshake, servers_teardown),
        cmocka_unit_test_teardown(test_blacklisted_namespace, servers_teardown),
        cmocka_unit_test_teardown(test_legacy_version_command, servers_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
