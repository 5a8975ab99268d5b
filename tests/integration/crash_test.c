/* crash_test.c -- SIGKILL right after a flush ack loses nothing that was acked.
 * [CP_TEST_INLINE_WRITER: runs again with the catalog writer inline, tests/CMakeLists.txt]
 *
 * parser.test.protocol is replayed at the agent's pace up to and including its Nth 0x11;
 * once all acks up to it have arrived the server is killed with SIGKILL. A server started
 * again on the same data directory must come up, and every stream must hold at least the
 * bytes sent before that 0x11, as an exact prefix of the fixture stream. The restarted
 * server then takes a whole new replay of the same pod into a new restart directory
 * without touching the old one. */
#include "server_util.h"
#include "replay_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cp_common.h"

typedef struct stored {
    char restart[32];
    long long bytes[16]; /* per replay stream, -1 if not stored */
} stored;

static const raw_entry *find_entry(const raw_entry *e, size_t n, const char *pod, const char *restart,
                                   const char *stream, int index)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(e[i].pod, pod) && (!restart || !strcmp(e[i].restart, restart)) && !strcmp(e[i].stream, stream) &&
            e[i].index == index)
            return &e[i];
    return NULL;
}

/* Reads a file of the raw tree whole. */
static void read_tree_file(const test_server *s, const replay_capture *c, const char *restart, const char *stream,
                           int index, cp_buf *out)
{
    char path[2048];
    raw_tree_path(s, c->ns, c->pod, restart, stream, index, path, sizeof path);
    cp_buf_init(out);
    int st = cp_read_file(path, (size_t)1 << 30, out);
    if (st != CP_OK) fail_msg("cannot read stored file %s: %s", path, cp_strstatus(st));
}

/* After the crash: one restart directory for the pod, and every stream is a prefix of its
 * fixture at least as long as what was sent. */
static void check_after_crash(const test_server *s, const replay_capture *c, const replay_result *r, stored *out)
{
    raw_entry *e;
    size_t n = raw_list(s, &e);
    const char *restart = NULL;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(e[i].pod, c->pod) != 0) continue;
        if (restart && strcmp(restart, e[i].restart) != 0)
            fail_msg("two restart directories (%s, %s) after one connection", restart, e[i].restart);
        restart = e[i].restart;
    }
    if (!restart) fail_msg("nothing stored for pod %s after the crash", c->pod);
    snprintf(out->restart, sizeof out->restart, "%s", restart);

    for (size_t i = 0; i < r->nstreams; i++) {
        const replay_stream *st = &r->streams[i];
        const raw_entry *en = find_entry(e, n, c->pod, restart, st->name, st->seq + 1);
        out->bytes[i] = en ? en->bytes : -1;
        if (!en) {
            if (st->sent > 0) fail_msg("stream '%s': %llu bytes acked, nothing stored", st->name,
                                       (unsigned long long)st->sent);
            continue;
        }
        cp_buf want, got;
        load_fixture(replay_capture_stream_fixture(c, st->name), &want);
        raw_fetch(s, c->ns, c->pod, st->name, st->seq + 1, &got);
        if ((long long)got.len != en->bytes)
            fail_msg("stream '%s': raw --list says %lld bytes, raw gives %zu", st->name, en->bytes, got.len);
        if (got.len < st->sent)
            fail_msg("stream '%s': %zu bytes stored, but %llu were acked before the crash", st->name, got.len,
                     (unsigned long long)st->sent);
        if (got.len > want.len)
            fail_msg("stream '%s': %zu bytes stored, more than the %zu the stream has", st->name, got.len, want.len);
        char what[128];
        snprintf(what, sizeof what, "stream '%s' after the crash (prefix of the fixture)", st->name);
        assert_bytes_equal(what, got.data, got.len, want.data, got.len);
        cp_buf_free(&want);
        cp_buf_free(&got);
    }
    free(e);
}

/* Replays up to the Nth 0x11, kills the server, restarts it and checks the streams. */
static void crash_after_flush(test_server *s, const replay_capture *c, int nflush, replay_result *r, stored *after)
{
    server_start(s, "crash", NULL);
    replay_opts o = {.stop_after_flush = nflush};
    replay_run(s->port, c, &o, r);
    assert_int_equal(r->flushes, (size_t)nflush);
    server_kill(s); /* with the connection still open */
    conn_close(r->fd);
    server_restart(s, NULL); /* fails the test unless it comes up */
    server_wait_recovered(s); /* it cuts the torn tails this test reads */
    check_after_crash(s, c, r, after);
}

static void test_crash_after_first_flush(void **state)
{
    (void)state;
    replay_capture c;
    replay_capture_parser_test(&c);
    test_server s;
    replay_result r;
    stored after;
    crash_after_flush(&s, &c, 1, &r, &after);
    server_stop(&s);
    server_destroy(&s);
    replay_capture_free(&c);
}

static void test_crash_mid_conversation(void **state)
{
    (void)state;
    replay_capture c;
    replay_capture_parser_test(&c);
    test_server s;
    replay_result r;
    stored after;
    crash_after_flush(&s, &c, 60, &r, &after);
    /* the dictionary is partly sent at this point: the crash cut a stream in the middle */
    const replay_stream *dict = replay_find_stream(&r, "dictionary");
    assert_non_null(dict);
    assert_true(dict->sent > 0);
    server_stop(&s);
    server_destroy(&s);
    replay_capture_free(&c);
}

static void test_crash_late_then_fresh_replay(void **state)
{
    (void)state;
    replay_capture c;
    replay_capture_parser_test(&c);
    test_server s;
    replay_result r;
    stored after;
    crash_after_flush(&s, &c, 130, &r, &after);

    /* the same pod connects again: a new restart directory, stored in full */
    replay_opts o = {0};
    replay_result r2;
    replay_run(s.port, &c, &o, &r2);
    assert_int_equal(r2.acks, r2.capture_acks);
    server_stop(&s);

    raw_entry *e;
    size_t n = raw_list(&s, &e);
    const char *fresh = NULL;
    for (size_t i = 0; i < n; i++)
        if (!strcmp(e[i].pod, c.pod) && strcmp(e[i].restart, after.restart) != 0) {
            if (fresh && strcmp(fresh, e[i].restart) != 0) fail_msg("more than one new restart directory");
            fresh = e[i].restart;
        }
    if (!fresh) fail_msg("the second connection was not stored in a new restart directory");
    for (size_t i = 0; i < r2.nstreams; i++) {
        const replay_stream *st = &r2.streams[i];
        cp_buf want, got;
        load_fixture(replay_capture_stream_fixture(&c, st->name), &want);
        assert_non_null(find_entry(e, n, c.pod, fresh, st->name, st->seq + 1));
        read_tree_file(&s, &c, fresh, st->name, st->seq + 1, &got);
        char what[128];
        snprintf(what, sizeof what, "stream '%s' of the fresh replay", st->name);
        assert_bytes_equal(what, got.data, got.len, want.data, want.len);
        cp_buf_free(&got);
        cp_buf_free(&want);
    }
    /* the crashed connection's files are untouched */
    for (size_t i = 0; i < r.nstreams; i++) {
        const replay_stream *st = &r.streams[i];
        const raw_entry *en = find_entry(e, n, c.pod, after.restart, st->name, st->seq + 1);
        long long now = en ? en->bytes : -1;
        if (now != after.bytes[i])
            fail_msg("stream '%s' of the crashed connection changed from %lld to %lld bytes", st->name,
                     after.bytes[i], now);
    }
    free(e);
    server_destroy(&s);
    replay_capture_free(&c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_crash_after_first_flush, servers_teardown),
        cmocka_unit_test_teardown(test_crash_mid_conversation, servers_teardown),
        cmocka_unit_test_teardown(test_crash_late_then_fresh_replay, servers_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
