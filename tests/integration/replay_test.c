/* replay_test.c -- the recorded agent conversations replayed to a live `cloudprof serve`.
 *
 * Each replay checks every reply byte against the capture (replay_util.h), then that every
 * stored stream file is byte-identical to the fixture stream and that the catalog holds
 * the conversation's dictionary and params. The replay runs at the agent's pace and, with
 * several fixed seeds, cut at random byte boundaries with pipelined commands.
 *
 * Also: protocol V3 (posDictionary), rotation (a second INIT of a name opens file
 * seq + 1 and dictionary ids continue), and acks that must arrive without a 0x11. */
#include "server_util.h"
#include "replay_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "streams/cp_streams.h"
#include "wire/cp_wire.h"

/* What the parser.test.protocol and agent-v2 conversations hold. */
#define PARSER_TEST_ACKS 698
#define PARSER_TEST_STREAMS 8
#define PARSER_TEST_WORDS 942
#define PARSER_TEST_PARAMS 122
#define AGENT_V2_ACKS 128
#define AGENT_V2_STREAMS 7
#define AGENT_V2_WORDS 56
#define AGENT_V2_PARAMS 14

/* The agent-v2 collector answered 0/0 rotation for every stream. */
static const char *const agent_v2_args[] = {"--rotation", "all=0:0", NULL};

/* Every stream of the replay is stored byte-identical to its fixture, and nothing else is
 * stored for the pod. */
static void check_stored_streams(const test_server *s, const replay_capture *c, const replay_result *r)
{
    for (size_t i = 0; i < r->nstreams; i++) {
        const replay_stream *st = &r->streams[i];
        cp_buf want, got;
        load_fixture(replay_capture_stream_fixture(c, st->name), &want);
        assert_int_equal(st->sent, want.len); /* the replay sent the whole stream */
        raw_fetch(s, c->ns, c->pod, st->name, st->seq + 1, &got);
        char what[160];
        snprintf(what, sizeof what, "%s: stored stream '%s'", c->name, st->name);
        assert_bytes_equal(what, got.data, got.len, want.data, want.len);
        cp_buf_free(&want);
        cp_buf_free(&got);
    }
    raw_entry *e;
    size_t n = raw_list(s, &e);
    size_t mine = 0;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(e[i].pod, c->pod) != 0) continue;
        mine++;
        assert_string_equal(e[i].ns, c->ns);
        const replay_stream *st = replay_find_stream(r, e[i].stream);
        if (!st) fail_msg("%s: stored stream '%s' was never opened", c->name, e[i].stream);
        assert_int_equal(e[i].index, st->seq + 1);
        assert_int_equal(e[i].bytes, (long long)st->sent);
    }
    free(e);
    assert_int_equal(mine, r->nstreams);
}

/* The catalog holds the conversation's dictionary (every word at its id) and params,
 * exactly the rows of the stored streams. */
static void check_catalog(const test_server *s, const replay_capture *c, long long words, long long params)
{
    assert_int_equal(catalog_count(s, "SELECT count(*) FROM dictionary WHERE pod_name = ?1", c->pod), words);
    assert_int_equal(catalog_count(s, "SELECT count(*) FROM params WHERE pod_name = ?1", c->pod), params);
    cp_buf dict, prm;
    load_fixture(replay_capture_stream_fixture(c, "dictionary"), &dict);
    load_fixture(replay_capture_stream_fixture(c, "params"), &prm);
    assert_int_equal(catalog_check_dictionary(s, c->pod, dict.data, dict.len), words);
    assert_int_equal(catalog_check_params(s, c->pod, prm.data, prm.len), params);
    cp_buf_free(&dict);
    cp_buf_free(&prm);
}

/* One replay on a fresh server, with every check. */
static void replay_and_check(const char *tag, int agent_v2, const replay_opts *o)
{
    replay_capture c;
    if (agent_v2) replay_capture_agent_v2(&c);
    else replay_capture_parser_test(&c);
    test_server s;
    server_start(&s, tag, agent_v2 ? agent_v2_args : NULL);

    replay_result r;
    replay_run(s.port, &c, o, &r);
    assert_int_equal(r.acks, agent_v2 ? AGENT_V2_ACKS : PARSER_TEST_ACKS);
    assert_int_equal(r.acks, r.capture_acks);
    assert_int_equal(r.nstreams, agent_v2 ? AGENT_V2_STREAMS : PARSER_TEST_STREAMS);

    /* everything was acked by a 0x11, so it is stored while the server runs */
    check_stored_streams(&s, &c, &r);
    server_stop(&s);
    check_catalog(&s, &c, agent_v2 ? AGENT_V2_WORDS : PARSER_TEST_WORDS,
                  agent_v2 ? AGENT_V2_PARAMS : PARSER_TEST_PARAMS);

    server_destroy(&s);
    replay_capture_free(&c);
}

static void test_parser_test_agent_paced(void **state)
{
    (void)state;
    replay_opts o = {0};
    replay_and_check("replay-pt", 0, &o);
}

static void test_agent_v2_agent_paced(void **state)
{
    (void)state;
    replay_opts o = {0};
    replay_and_check("replay-v2", 1, &o);
}

/* Fixed seeds: each a different cut of the same bytes. The last one splits finely (writes
 * of 1..40 bytes: most command headers and varints cross a write boundary). */
static const struct {
    uint64_t seed;
    size_t max_write;
} cuts[] = {{0x5EED0001, 3000}, {0x5EED0002, 3000}, {0x5EED0003, 1500}, {0x5EED0004, 40}};

static void test_parser_test_random_cuts(void **state)
{
    (void)state;
    for (size_t i = 0; i < CP_ARRAY_LEN(cuts); i++) {
        replay_opts o = {.random_cuts = 1, .seed = cuts[i].seed, .max_write = cuts[i].max_write};
        print_message("parser.test.protocol, seed %#llx, writes of 1..%zu bytes\n", (unsigned long long)o.seed,
                      o.max_write);
        replay_and_check("replay-pt-cut", 0, &o);
    }
}

static void test_agent_v2_random_cuts(void **state)
{
    (void)state;
    for (size_t i = 0; i < CP_ARRAY_LEN(cuts); i++) {
        replay_opts o = {.random_cuts = 1, .seed = cuts[i].seed, .max_write = cuts[i].max_write};
        print_message("agent-v2, seed %#llx, writes of 1..%zu bytes\n", (unsigned long long)o.seed, o.max_write);
        replay_and_check("replay-v2-cut", 1, &o);
    }
}

/* ---- protocol V3: posDictionary ----------------------------------------------------------- */

typedef struct words {
    cp_buf text;      /* UTF-16BE units back to back */
    uint32_t n;
    uint32_t off[128], units[128];
} words;

static int collect_word(void *ud, const cp_word_rec *w)
{
    words *ws = ud;
    if (ws->n == CP_ARRAY_LEN(ws->off)) return 1;
    ws->off[ws->n] = (uint32_t)ws->text.len;
    ws->units[ws->n] = w->word.n;
    cp_buf_append(&ws->text, w->word.be, (size_t)w->word.n * 2);
    ws->n++;
    return 0;
}

static void put_varint(cp_buf *b, uint32_t v)
{
    while (v >= 0x80) {
        cp_buf_putc(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    cp_buf_putc(b, (uint8_t)v);
}

/* A posDictionary stream (§5.1, §4.3) made of the agent-v2 dictionary words: records
 * `varint id, varstring word`, committed into phrases of at most ~1500 bytes. */
static void build_pos_dictionary(cp_buf *out, uint32_t *nwords)
{
    cp_buf dict;
    load_fixture("conversations/agent-v2/stream.dictionary.bin", &dict);
    words ws;
    memset(&ws, 0, sizeof ws);
    cp_buf_init(&ws.text);
    cp_dec_sink sink = {.ud = &ws, .on_word = collect_word};
    cp_dec *d = cp_dec_new(CP_STREAM_DICTIONARY, NULL, &sink, 0);
    assert_int_equal(cp_dec_feed(d, dict.data, dict.len), CP_OK);
    assert_int_equal(cp_dec_finish(d), CP_OK);
    cp_dec_free(d);
    assert_int_equal(ws.n, AGENT_V2_WORDS);

    cp_buf_init(out);
    cp_buf phrase;
    cp_buf_init(&phrase);
    for (uint32_t i = 0; i <= ws.n; i++) {
        if (phrase.len && (i == ws.n || phrase.len > 1500)) { /* commit a phrase */
            uint8_t len[4];
            cp_put_be32(len, (uint32_t)phrase.len);
            cp_buf_append(out, len, 4);
            cp_buf_append(out, phrase.data, phrase.len);
            cp_buf_reset(&phrase);
        }
        if (i == ws.n) break;
        put_varint(&phrase, i);
        put_varint(&phrase, ws.units[i]);
        cp_buf_append(&phrase, ws.text.data + ws.off[i], (size_t)ws.units[i] * 2);
    }
    *nwords = ws.n;
    cp_buf_free(&phrase);
    cp_buf_free(&ws.text);
    cp_buf_free(&dict);
}

static void test_protocol_v3_pos_dictionary(void **state)
{
    (void)state;
    static const char *const args[] = {"--protocol-version", "100705", NULL};
    static const uint8_t v3[8] = {0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x89, 0x61};
    const char *pod = "v3-pod-1_1795327868460", *ns = "itest-v3";
    test_server s;
    server_start(&s, "replay-v3", args);

    cp_buf stream;
    uint32_t nwords;
    build_pos_dictionary(&stream, &nwords);
    uint64_t records;
    char why[256];
    assert_int_equal(decode_file("posDictionary", stream.data, stream.len, &records, why, sizeof why), CP_OK);
    assert_int_equal(records, nwords);

    int fd = conn_open(s.port);
    cp_buf hs;
    cp_buf_init(&hs);
    assert_int_equal(cp_wire_put_handshake(&hs, CP_PROTOCOL_V3, pod, "demo-svc", ns), CP_OK);
    conn_send_buf(fd, &hs);
    cp_buf_free(&hs);
    uint8_t reply[36];
    conn_read_exact(fd, reply, 8, SRV_TIMEOUT_MS);
    assert_memory_equal(reply, v3, 8);

    agent_init(fd, "posDictionary", 0, 1, reply);
    assert_int_equal(cp_be64(reply + 16), 0); /* no rotation for a dictionary */
    assert_int_equal(cp_be64(reply + 24), 0);
    int32_t seq = (int32_t)cp_be32(reply + 32);
    assert_int_equal(seq, 0);

    /* like the agent: each phrase length prefix is its own 4-byte payload, bodies are
     * chopped at 1024 bytes */
    cp_buf cmds;
    cp_buf_init(&cmds);
    size_t nacks = 1;
    for (size_t off = 0; off < stream.len;) {
        uint32_t body = cp_be32(stream.data + off);
        nacks += agent_put_data(&cmds, reply, stream.data + off, 4, 4);
        nacks += agent_put_data(&cmds, reply, stream.data + off + 4, body, 1024);
        off += 4 + body;
    }
    cp_buf_putc(&cmds, CP_CMD_ACK_FLUSH);
    conn_send_buf(fd, &cmds);
    cp_buf_free(&cmds);
    uint8_t acks[64];
    assert_true(nacks <= sizeof acks);
    conn_read_exact(fd, acks, nacks, SRV_TIMEOUT_MS);
    for (size_t i = 0; i < nacks; i++) assert_int_equal(acks[i], CP_ACK_OK);
    cp_buf_putc(&cmds, CP_CMD_CLOSE);
    conn_send_buf(fd, &cmds);
    conn_expect_eof(fd, SRV_TIMEOUT_MS);
    conn_close(fd);

    cp_buf got;
    raw_fetch(&s, ns, pod, "posDictionary", seq + 1, &got);
    assert_bytes_equal("stored posDictionary", got.data, got.len, stream.data, stream.len);
    cp_buf_free(&got);
    cp_buf_free(&cmds);
    cp_buf_free(&stream);
    server_stop(&s);
    /* the words went to the catalog under their explicit ids */
    assert_int_equal(catalog_count(&s, "SELECT count(DISTINCT position) FROM dictionary WHERE pod_name = ?1", pod),
                     nwords);
    server_destroy(&s);
}

/* ---- rotation and ack timing ---------------------------------------------------------------- */

/* A second INIT of a stream name starts file seq + 1 with a new handle (§3.9, §4.2), and
 * dictionary ids continue across the rotated files of a connection (§5.1). */
static void test_rotation_opens_new_files(void **state)
{
    (void)state;
    const char *pod = "rotating-pod_1700000000000", *ns = "itest-rot";
    test_server s;
    server_start(&s, "rotation", NULL);
    cp_buf dict, calls;
    load_fixture("streams/test-service.dictionary.protocol", &dict);
    load_fixture("streams/test-service.calls.0.protocol", &calls);
    size_t split = 4 + cp_be32(dict.data); /* file 1: the first phrase; file 2: the others */

    int fd = conn_open(s.port);
    assert_int_equal(agent_handshake(fd, CP_PROTOCOL_V3, pod, "svc", ns), CP_PROTOCOL_V2);
    uint8_t d1[36], c1[36], c2[36], d2[36];
    agent_init(fd, "dictionary", 0, 1, d1);
    assert_int_equal(cp_be32(d1 + 32), 0);
    agent_send_stream(fd, d1, dict.data, split, 1024);
    agent_init(fd, "calls", 0, 0, c1);
    assert_int_equal(cp_be32(c1 + 32), 0);
    agent_send_stream(fd, c1, calls.data, calls.len, 1024);
    agent_init(fd, "calls", 1, 0, c2); /* rotation: the agent asks for previous seq + 1 */
    assert_int_equal(cp_be32(c2 + 32), 1);
    assert_memory_not_equal(c1, c2, 16);
    agent_send_stream(fd, c2, calls.data, calls.len, 1000);
    agent_init(fd, "dictionary", 1, 0, d2);
    assert_int_equal(cp_be32(d2 + 32), 1);
    agent_send_stream(fd, d2, dict.data + split, dict.len - split, 1024);
    uint8_t close_cmd = CP_CMD_CLOSE;
    conn_send(fd, &close_cmd, 1);
    conn_expect_eof(fd, SRV_TIMEOUT_MS);
    conn_close(fd);

    cp_buf got;
    raw_fetch(&s, ns, pod, "calls", 1, &got);
    assert_bytes_equal("calls file 1", got.data, got.len, calls.data, calls.len);
    cp_buf_free(&got);
    raw_fetch(&s, ns, pod, "calls", 2, &got);
    assert_bytes_equal("calls file 2", got.data, got.len, calls.data, calls.len);
    cp_buf_free(&got);
    raw_fetch(&s, ns, pod, "dictionary", 1, &got);
    assert_bytes_equal("dictionary file 1", got.data, got.len, dict.data, split);
    cp_buf_free(&got);
    raw_fetch(&s, ns, pod, "dictionary", 2, &got);
    assert_bytes_equal("dictionary file 2", got.data, got.len, dict.data + split, dict.len - split);
    cp_buf_free(&got);

    server_stop(&s);
    /* the two files together are the fixture: every word at its id, numbering continued */
    assert_int_equal(catalog_check_dictionary(&s, pod, dict.data, dict.len), PARSER_TEST_WORDS);
    assert_int_equal(catalog_count(&s, "SELECT count(*) FROM dictionary WHERE pod_name = ?1", pod), PARSER_TEST_WORDS);
    cp_buf_free(&dict);
    cp_buf_free(&calls);
    server_destroy(&s);
}

/* RCV_DATA acks must reach the agent without a 0x11: before an INIT the agent blocks on
 * them without asking for a flush (§3.2, §3.3: flushed within 500 ms; 2 s allowed here). */
static void test_acks_arrive_without_flush_request(void **state)
{
    (void)state;
    test_server s;
    server_start(&s, "ack-timing", NULL);
    cp_buf calls, m;
    load_fixture("streams/test-service.calls.0.protocol", &calls);
    int fd = conn_open(s.port);
    assert_int_equal(agent_handshake(fd, CP_PROTOCOL_V3, "ack-pod_1700000000000", "svc", "itest"), CP_PROTOCOL_V2);
    uint8_t reply[36];
    agent_init(fd, "calls", 0, 0, reply);
    cp_buf_init(&m);
    size_t n = agent_put_data(&m, reply, calls.data, 3000, 1024);
    assert_int_equal(n, 3);
    conn_send_buf(fd, &m);
    uint8_t acks[3];
    conn_read_exact(fd, acks, n, 2000);
    for (size_t i = 0; i < n; i++) assert_int_equal(acks[i], CP_ACK_OK);
    /* a zero-length payload is legal too, and REPORT_COMMAND_RESULT has no reply */
    cp_buf_reset(&m);
    assert_int_equal(cp_wire_put_data(&m, reply, calls.data, 0), CP_OK);
    uint8_t report[18] = {CP_CMD_REPORT};
    report[17] = 0x4B;
    cp_buf_append(&m, report, sizeof report);
    cp_buf_putc(&m, CP_CMD_ACK_FLUSH);
    conn_send_buf(fd, &m);
    conn_read_exact(fd, acks, 2, 2000);
    assert_int_equal(acks[0], CP_ACK_OK);
    assert_int_equal(acks[1], CP_ACK_OK);
    cp_buf_reset(&m);
    cp_buf_putc(&m, CP_CMD_CLOSE);
    conn_send_buf(fd, &m);
    conn_expect_eof(fd, SRV_TIMEOUT_MS);
    conn_close(fd);
    cp_buf_free(&m);
    cp_buf_free(&calls);
    server_stop(&s);
    server_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_parser_test_agent_paced, servers_teardown),
        cmocka_unit_test_teardown(test_agent_v2_agent_paced, servers_teardown),
        cmocka_unit_test_teardown(test_parser_test_random_cuts, servers_teardown),
        cmocka_unit_test_teardown(test_agent_v2_random_cuts, servers_teardown),
        cmocka_unit_test_teardown(test_protocol_v3_pos_dictionary, servers_teardown),
        cmocka_unit_test_teardown(test_rotation_opens_new_files, servers_teardown),
        cmocka_unit_test_teardown(test_acks_arrive_without_flush_request, servers_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
