/* fdcache_test.c -- the server's open-file cache: with a tiny cap on open stream files,
 * many agents writing all seven streams at once still store every byte exactly, every
 * acked byte survives SIGKILL, a torn tail is cut from a file whose fd was closed, and
 * running out of descriptors refuses connections without hurting the others.
 *
 * Agents here send the shared test-service fixtures (trace, calls, xml, sql, dictionary,
 * suspend, params) in random slices, interleaved across agents, with flush cycles
 * (0x11) in between: rounds alternate between "one agent after the other" and "every
 * agent at once" (then many files are dirty together, beyond the cap). Whenever every
 * agent has its flush acks, all files are synced, so the server must hold at most the
 * cap of stream-file fds: that is checked through /proc/PID/fd. */
#include "server_util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "streams/cp_streams.h"
#include "wire/cp_wire.h"

#define NS "fdcache"
#define NSTREAMS 7
#define MAX_AGENTS 96
#define ROUNDS 10

static const char *const stream_names[NSTREAMS] = {"trace", "calls", "xml", "sql", "dictionary", "suspend", "params"};
static const char *const stream_fixtures[NSTREAMS] = {
    "streams/test-service.traces.0.protocol", "streams/test-service.calls.0.protocol",
    "streams/test-service.xml.0.protocol",    "streams/test-service.sql.0.protocol",
    "streams/test-service.dictionary.protocol", "streams/test-service.suspend.protocol",
    "streams/test-service.params.protocol",
};

typedef struct agent {
    int fd;
    char pod[64];
    uint8_t handle[NSTREAMS][16];
    int index[NSTREAMS];      /* stored file index (server seq + 1) */
    size_t sent[NSTREAMS];    /* payload bytes sent */
    size_t acked[NSTREAMS];   /* bytes sent before a 0x11 whose ack arrived */
    size_t pending;           /* ack bytes expected */
    cp_buf out;               /* commands not yet sent */
} agent;

typedef struct world {
    test_server srv;
    cp_buf fixture[NSTREAMS];
    agent agents[MAX_AGENTS];
    size_t nagents;
    uint64_t rng;
} world;

static void world_init(world *w, uint64_t seed)
{
    memset(w, 0, sizeof *w);
    w->rng = seed;
    for (int k = 0; k < NSTREAMS; k++) load_fixture(stream_fixtures[k], &w->fixture[k]);
}

static void world_free(world *w)
{
    for (size_t i = 0; i < w->nagents; i++) {
        conn_close(w->agents[i].fd);
        cp_buf_free(&w->agents[i].out);
    }
    for (int k = 0; k < NSTREAMS; k++) cp_buf_free(&w->fixture[k]);
}

/* ---- agents ------------------------------------------------------------------------------ */

/* Handshake and INIT of all seven streams, each reply awaited (as the agent does). */
static void agent_open(world *w, agent *a, size_t n)
{
    memset(a, 0, sizeof *a);
    snprintf(a->pod, sizeof a->pod, "fdcache-pod-%zu_1700000000%03zu", n, n);
    a->fd = conn_open(w->srv.port);
    assert_int_equal(agent_handshake(a->fd, CP_PROTOCOL_V2, a->pod, "fdcache-svc", NS), CP_PROTOCOL_V2);
    for (int k = 0; k < NSTREAMS; k++) {
        uint8_t reply[36];
        agent_init(a->fd, stream_names[k], 0, !strcmp(stream_names[k], "dictionary"), reply);
        memcpy(a->handle[k], reply, 16);
        a->index[k] = (int32_t)cp_be32(reply + 32) + 1;
    }
}

/* Queues the next n bytes of stream k as RCV_DATA payloads of random sizes (1..1024). */
static void agent_queue_data(world *w, agent *a, int k, size_t n)
{
    const cp_buf *f = &w->fixture[k];
    if (n > f->len - a->sent[k]) n = f->len - a->sent[k];
    while (n > 0) {
        size_t piece = 1 + (size_t)(test_rand(&w->rng) % 1024);
        if (piece > n) piece = n;
        assert_int_equal(cp_wire_put_data(&a->out, a->handle[k], f->data + a->sent[k], (uint32_t)piece), CP_OK);
        a->sent[k] += piece;
        a->pending++;
        n -= piece;
    }
}

static void agent_queue_flush(agent *a)
{
    cp_buf_putc(&a->out, CP_CMD_ACK_FLUSH);
    a->pending++;
}

static void agent_send(agent *a)
{
    conn_send_buf(a->fd, &a->out);
    cp_buf_reset(&a->out);
}

/* Reads every pending ack (all must be 0x00). The last command sent was a 0x11, so now
 * everything sent is acked. */
static void agent_read_acks(agent *a)
{
    if (!a->pending) return;
    uint8_t *acks = malloc(a->pending);
    conn_read_exact(a->fd, acks, a->pending, SRV_TIMEOUT_MS);
    for (size_t i = 0; i < a->pending; i++)
        if (acks[i] != CP_ACK_OK) fail_msg("pod %s: ack %zu of %zu is 0x%02x", a->pod, i + 1, a->pending, acks[i]);
    free(acks);
    a->pending = 0;
    memcpy(a->acked, a->sent, sizeof a->acked);
}

/* One agent's share of a round: a slice of every stream (about 1/ROUNDS of the fixture,
 * give or take), with a 0x11 after some streams and always one at the end. */
static void agent_queue_round(world *w, agent *a)
{
    for (int k = 0; k < NSTREAMS; k++) {
        size_t len = w->fixture[k].len;
        size_t base = len / ROUNDS + 1;
        size_t n = base / 2 + (size_t)(test_rand(&w->rng) % (base + 1));
        agent_queue_data(w, a, k, n);
        if (test_rand(&w->rng) % 3 == 0) agent_queue_flush(a);
    }
    agent_queue_flush(a);
}

/* A round: odd rounds one agent after the other, even rounds all agents at once. */
static void run_round(world *w, int round)
{
    for (size_t i = 0; i < w->nagents; i++) {
        agent *a = &w->agents[i];
        agent_queue_round(w, a);
        agent_send(a);
        if (round % 2) agent_read_acks(a);
    }
    for (size_t i = 0; i < w->nagents; i++) agent_read_acks(&w->agents[i]);
}

/* ---- the server's descriptors -------------------------------------------------------------- */

/* Number of the server's fds that point into its raw log; path_open (may be NULL) is
 * set if one of them is that file. */
static size_t server_stream_fds(const test_server *s, const char *path, int *path_open)
{
    char dir[64], raw[PATH_MAX + 8], real[PATH_MAX];
    if (!realpath(s->data, real)) fail_msg("realpath %s: %s", s->data, strerror(errno));
    snprintf(raw, sizeof raw, "%s/raw/", real);
    char want[PATH_MAX] = "";
    if (path && !realpath(path, want)) fail_msg("realpath %s: %s", path, strerror(errno));
    if (path_open) *path_open = 0;
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)s->pid);
    DIR *d = opendir(dir);
    if (!d) fail_msg("opendir %s: %s", dir, strerror(errno));
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        char link[PATH_MAX + 64], target[PATH_MAX];
        snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
        ssize_t len = readlink(link, target, sizeof target - 1);
        if (len <= 0) continue;
        target[len] = 0;
        if (strncmp(target, raw, strlen(raw)) != 0) continue;
        n++;
        if (path_open && want[0] && !strcmp(target, want)) *path_open = 1;
    }
    closedir(d);
    return n;
}

/* With every flush acked, every file is synced: at most the cap may be open. */
static void check_quiet_fds(const world *w, size_t cap)
{
    size_t n = server_stream_fds(&w->srv, NULL, NULL);
    if (n > cap) server_fail(&w->srv, "%zu stream files open with nothing unsynced; the cap is %zu", n, cap);
}

/* The counters the server logs when it stops. */
static void log_counters(const test_server *s, unsigned long long *opens, unsigned long long *evictions)
{
    cp_buf log;
    cp_buf_init(&log);
    load_file(s->log, &log);
    cp_buf_putc(&log, 0);
    const char *p = strstr((const char *)log.data, "stream-file opens ");
    if (!p || sscanf(p, "stream-file opens %llu, fds closed by the cache %llu", opens, evictions) != 2)
        server_fail(s, "no fd cache counters in the server log");
    cp_buf_free(&log);
}

static int log_contains(const test_server *s, const char *text)
{
    cp_buf log;
    cp_buf_init(&log);
    load_file(s->log, &log);
    cp_buf_putc(&log, 0);
    int found = strstr((const char *)log.data, text) != NULL;
    cp_buf_free(&log);
    return found;
}

/* The restart directory name of a pod with one restart (static buffer). */
static const char *restart_of(const test_server *s, const char *pod)
{
    static char restart[32];
    raw_entry *e;
    size_t n = raw_list(s, &e);
    restart[0] = 0;
    for (size_t i = 0; i < n && !restart[0]; i++)
        if (!strcmp(e[i].pod, pod)) snprintf(restart, sizeof restart, "%s", e[i].restart);
    free(e);
    if (!restart[0]) fail_msg("nothing stored for pod %s", pod);
    return restart;
}

/* ---- rounds -------------------------------------------------------------------------------- */

/* Runs rounds until every fixture is sent whole (or max_rounds), checking the open
 * stream-file count after each. */
static void run_rounds(world *w, size_t cap, int max_rounds)
{
    for (int round = 0; round < max_rounds; round++) {
        int left = 0;
        for (size_t i = 0; i < w->nagents; i++)
            for (int k = 0; k < NSTREAMS; k++) left |= w->agents[i].sent[k] < w->fixture[k].len;
        if (!left) return;
        run_round(w, round);
        check_quiet_fds(w, cap);
    }
}

static void open_agents(world *w, size_t n)
{
    for (size_t i = 0; i < n; i++) agent_open(w, &w->agents[i], i);
    w->nagents = n;
}

/* Stored bytes of one agent's stream (raw --pod picks the pod's only restart). */
static void fetch(const world *w, const agent *a, int k, cp_buf *out)
{
    raw_fetch(&w->srv, NS, a->pod, stream_names[k], a->index[k], out);
}

/* With a torn tail cut off after a crash (a flush ack may cover it: these agents flush
 * mid-record, which the real agent never does). */
static void fetch_sent(const world *w, const agent *a, int k, cp_buf *out)
{
    raw_fetch_sent(&w->srv, NS, a->pod, stream_names[k], a->index[k], out);
}

/* ---- tests ----------------------------------------------------------------------------------- */

/* Six agents, 42 stream files, at most 8 open: every stored file is byte-identical to
 * its fixture, and the cache really closed and reopened fds. */
static void test_interleaved_agents_cap_8(void **state)
{
    (void)state;
    static world w;
    world_init(&w, 0x5eed0001);
    const char *extra[] = {"--max-open-files", "8", NULL};
    server_start(&w.srv, "fdcache", extra);
    open_agents(&w, 6);
    check_quiet_fds(&w, 8);
    run_rounds(&w, 8, 4 * ROUNDS);
    for (size_t i = 0; i < w.nagents; i++) {
        agent *a = &w.agents[i];
        for (int k = 0; k < NSTREAMS; k++) assert_int_equal(a->sent[k], w.fixture[k].len);
        if (i % 2) { /* half say goodbye, half just vanish */
            uint8_t bye = CP_CMD_CLOSE;
            conn_send(a->fd, &bye, 1);
            conn_expect_eof(a->fd, SRV_TIMEOUT_MS);
        }
        conn_close(a->fd);
        a->fd = -1;
    }
    server_stop(&w.srv);
    for (size_t i = 0; i < w.nagents; i++)
        for (int k = 0; k < NSTREAMS; k++) {
            cp_buf got;
            fetch(&w, &w.agents[i], k, &got);
            char what[160];
            snprintf(what, sizeof what, "pod %s stream %s", w.agents[i].pod, stream_names[k]);
            assert_bytes_equal(what, got.data, got.len, w.fixture[k].data, w.fixture[k].len);
            cp_buf_free(&got);
        }
    unsigned long long opens, evictions;
    log_counters(&w.srv, &opens, &evictions);
    if (evictions == 0 || opens <= 42)
        server_fail(&w.srv, "the cache never closed an fd (opens %llu, closed %llu)", opens, evictions);
    server_destroy(&w.srv);
    world_free(&w);
}

/* Five agents with at most 4 files open; SIGKILL right after the last flush acks, with
 * more unacked data sent after them. Every acked byte is stored, nothing but a prefix
 * of what was sent. */
static void test_sigkill_after_flush_ack_cap_4(void **state)
{
    (void)state;
    static world w;
    world_init(&w, 0x5eed0002);
    const char *extra[] = {"--max-open-files", "4", NULL};
    server_start(&w.srv, "fdcache-crash", extra);
    open_agents(&w, 5);
    run_rounds(&w, 4, ROUNDS / 2);
    /* the last flush is acked; then every agent sends more without a 0x11 */
    for (size_t i = 0; i < w.nagents; i++) {
        agent *a = &w.agents[i];
        for (int k = 0; k < NSTREAMS; k++) agent_queue_data(&w, a, k, 3000);
        agent_send(a);
    }
    server_kill(&w.srv);
    server_restart(&w.srv, extra);
    server_wait_recovered(&w.srv); /* it cuts the torn tails this test reads */
    size_t acked_total = 0;
    for (size_t i = 0; i < w.nagents; i++) {
        agent *a = &w.agents[i];
        for (int k = 0; k < NSTREAMS; k++) {
            cp_buf got;
            fetch_sent(&w, a, k, &got);
            char what[160];
            snprintf(what, sizeof what, "pod %s stream %s after SIGKILL", a->pod, stream_names[k]);
            if (got.len < a->acked[k])
                fail_msg("%s: %zu bytes stored, %zu were acked", what, got.len, a->acked[k]);
            if (got.len > a->sent[k]) fail_msg("%s: %zu bytes stored, only %zu sent", what, got.len, a->sent[k]);
            assert_bytes_equal(what, got.data, got.len, w.fixture[k].data, got.len);
            acked_total += a->acked[k];
            cp_buf_free(&got);
        }
    }
    assert_true(acked_total > 0);
    server_stop(&w.srv);
    server_destroy(&w.srv);
    world_free(&w);
}

/* A torn tail is cut at close even when the file's fd was closed by the cache: the
 * server reopens it to truncate and sync it. */
static void test_torn_tail_of_closed_file(void **state)
{
    (void)state;
    static world w;
    world_init(&w, 0x5eed0003);
    const char *extra[] = {"--max-open-files", "2", NULL};
    server_start(&w.srv, "fdcache-torn", extra);
    open_agents(&w, 2);
    agent *a = &w.agents[0], *b = &w.agents[1];
    const int calls = 1;
    /* a cut that ends mid-record */
    const cp_buf *fx = &w.fixture[calls];
    uint64_t records;
    size_t cut = fx->len / 2;
    for (; cut < fx->len; cut++)
        if (decode_file("calls", fx->data, cut, &records, NULL, 0) == CP_AGAIN) break;
    assert_true(cut < fx->len);
    agent_queue_data(&w, a, calls, cut);
    agent_queue_flush(a);
    agent_send(a);
    agent_read_acks(a);
    /* b writes all its streams: a's clean calls file is the least recently used fd */
    agent_queue_round(&w, b);
    agent_send(b);
    agent_read_acks(b);
    char path[2048];
    raw_tree_path(&w.srv, NS, a->pod, restart_of(&w.srv, a->pod), "calls", a->index[calls], path, sizeof path);
    int open_now;
    server_stream_fds(&w.srv, path, &open_now);
    if (open_now) server_fail(&w.srv, "%s is still open; the test needs it closed by the cache", path);
    /* a goes away: its calls file ends mid-record */
    conn_close(a->fd);
    a->fd = -1;
    agent_queue_round(&w, b); /* b keeps working meanwhile */
    agent_send(b);
    agent_read_acks(b);
    server_stop(&w.srv);
    cp_buf got;
    fetch(&w, a, calls, &got);
    char why[256] = "";
    if (decode_file("calls", got.data, got.len, &records, why, sizeof why) != CP_OK)
        fail_msg("the stored calls file does not end cleanly (%zu bytes): %s", got.len, why);
    if (got.len >= cut) fail_msg("torn tail not cut: %zu bytes stored, %zu sent", got.len, cut);
    assert_bytes_equal("calls file cut to whole records", got.data, got.len, fx->data, got.len);
    assert_true(log_contains(&w.srv, "dropping a torn tail"));
    cp_buf_free(&got);
    server_destroy(&w.srv);
    world_free(&w);
}

/* ---- running out of descriptors ------------------------------------------------------------- */

/* Reads what the server sends until EOF (a reset counts as EOF) or timeout; returns
 * the bytes read, or -1 on timeout. */
static long read_until_eof(int fd, uint8_t *buf, size_t cap, int timeout_ms)
{
    size_t have = 0;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int r = poll(&p, 1, timeout_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return -1;
        uint8_t tmp[256];
        ssize_t got = recv(fd, tmp, sizeof tmp, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return (long)have; /* EOF or reset */
        size_t take = (size_t)got < cap - have ? (size_t)got : cap - have;
        memcpy(buf + have, tmp, take);
        have += take;
    }
}

/* The server's fd limit is 128 (RLIMIT_NOFILE, inherited): it keeps 64 in reserve and
 * its file cache at 16, so of 80 connections some must be refused (closed at once).
 * The others work normally: all their streams are stored exactly. This lowers the
 * test process's own hard limit for good, so it runs last. */
static void test_out_of_descriptors(void **state)
{
    (void)state;
    struct rlimit rl = {128, 128};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) fail_msg("setrlimit: %s", strerror(errno));
    static world w;
    world_init(&w, 0x5eed0004);
    server_start(&w.srv, "fdcache-emfile", NULL);
    size_t refused = 0;
    for (size_t i = 0; i < 80; i++) {
        agent *a = &w.agents[w.nagents];
        memset(a, 0, sizeof *a);
        snprintf(a->pod, sizeof a->pod, "fdcache-many-%zu_1700000000000", i);
        a->fd = conn_open(w.srv.port);
        cp_buf hs;
        cp_buf_init(&hs);
        assert_int_equal(cp_wire_put_handshake(&hs, CP_PROTOCOL_V2, a->pod, "fdcache-svc", NS), CP_OK);
        conn_send_buf(a->fd, &hs);
        cp_buf_free(&hs);
        uint8_t reply[8];
        struct pollfd p = {a->fd, POLLIN, 0};
        if (poll(&p, 1, SRV_TIMEOUT_MS) != 1) server_fail(&w.srv, "no answer to handshake %zu", i);
        ssize_t got = recv(a->fd, reply, sizeof reply, MSG_PEEK);
        if (got <= 0) { /* refused: closed without a reply */
            assert_int_equal(read_until_eof(a->fd, reply, sizeof reply, SRV_TIMEOUT_MS), 0);
            conn_close(a->fd);
            refused++;
            continue;
        }
        conn_read_exact(a->fd, reply, 8, SRV_TIMEOUT_MS);
        assert_int_equal((int64_t)cp_be64(reply), CP_PROTOCOL_V2);
        for (int k = 0; k < NSTREAMS; k++) {
            uint8_t init[36];
            agent_init(a->fd, stream_names[k], 0, !strcmp(stream_names[k], "dictionary"), init);
            memcpy(a->handle[k], init, 16);
            a->index[k] = (int32_t)cp_be32(init + 32) + 1;
        }
        w.nagents++;
    }
    if (refused == 0) server_fail(&w.srv, "all 80 connections were accepted with 128 fds");
    if (w.nagents < 20) server_fail(&w.srv, "only %zu connections accepted", w.nagents);
    assert_true(log_contains(&w.srv, "out of file descriptors"));
    /* the accepted agents send one round, all at once, then the rest one by one */
    run_round(&w, 0);
    check_quiet_fds(&w, 16);
    for (size_t i = 0; i < w.nagents; i++) {
        agent *a = &w.agents[i];
        for (int k = 0; k < NSTREAMS; k++) agent_queue_data(&w, a, k, w.fixture[k].len);
        agent_queue_flush(a);
        agent_send(a);
        agent_read_acks(a);
    }
    check_quiet_fds(&w, 16);
    for (size_t i = 0; i < w.nagents; i++) {
        conn_close(w.agents[i].fd);
        w.agents[i].fd = -1;
    }
    server_stop(&w.srv);
    for (size_t i = 0; i < w.nagents; i += 7) /* a sample: raw_fetch runs the CLI */
        for (int k = 0; k < NSTREAMS; k++) {
            cp_buf got;
            fetch(&w, &w.agents[i], k, &got);
            char what[160];
            snprintf(what, sizeof what, "pod %s stream %s", w.agents[i].pod, stream_names[k]);
            assert_bytes_equal(what, got.data, got.len, w.fixture[k].data, w.fixture[k].len);
            cp_buf_free(&got);
        }
    server_destroy(&w.srv);
    world_free(&w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_interleaved_agents_cap_8, servers_teardown),
        cmocka_unit_test_teardown(test_sigkill_after_flush_ack_cap_4, servers_teardown),
        cmocka_unit_test_teardown(test_torn_tail_of_closed_file, servers_teardown),
        cmocka_unit_test_teardown(test_out_of_descriptors, servers_teardown), /* last: lowers RLIMIT_NOFILE */
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
