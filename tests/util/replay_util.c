/* replay_util.c -- see replay_util.h. */
#include "replay_util.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_util.h"
#include "server_util.h"
#include "wire/cp_wire.h"

/* ---- captures -------------------------------------------------------------------------------- */

void replay_capture_parser_test(replay_capture *c)
{
    memset(c, 0, sizeof *c);
    c->name = "parser.test.protocol";
    load_fixture("conversations/parser.test.protocol", &c->client);
    cp_buf_init(&c->server);
    c->concatenated = 1;
    c->ns = "profiler";
    c->pod = "esc-ui-service-84967fdd77-pwhw4_1690201584049";
}

void replay_capture_agent_v2(replay_capture *c)
{
    memset(c, 0, sizeof *c);
    c->name = "agent-v2";
    load_fixture("conversations/agent-v2/client-to-server.bin", &c->client);
    load_fixture("conversations/agent-v2/server-to-client.bin", &c->server);
    c->ns = "test-ns";
    c->pod = "demo-pod-1_1795327868460";
}

void replay_capture_free(replay_capture *c)
{
    cp_buf_free(&c->client);
    cp_buf_free(&c->server);
}

const char *replay_capture_stream_fixture(const replay_capture *c, const char *stream)
{
    static char rel[256];
    if (!c->concatenated) {
        snprintf(rel, sizeof rel, "conversations/agent-v2/stream.%s.bin", stream);
        return rel;
    }
    /* parser.test.protocol demultiplexes into the test-service stream fixtures (§6.1) */
    static const struct {
        const char *stream, *file;
    } map[] = {
        {"dictionary", "test-service.dictionary.protocol"}, {"params", "test-service.params.protocol"},
        {"suspend", "test-service.suspend.protocol"},       {"calls", "test-service.calls.0.protocol"},
        {"trace", "test-service.traces.0.protocol"},        {"sql", "test-service.sql.0.protocol"},
        {"xml", "test-service.xml.0.protocol"},             {"gc", "test-service.gc.0.protocol"},
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(map); i++)
        if (strcmp(map[i].stream, stream) == 0) {
            snprintf(rel, sizeof rel, "streams/%s", map[i].file);
            return rel;
        }
    fail_msg("no fixture for stream '%s' of %s", stream, c->name);
    return NULL;
}

const replay_stream *replay_find_stream(const replay_result *r, const char *name)
{
    for (size_t i = 0; i < r->nstreams; i++)
        if (strcmp(r->streams[i].name, name) == 0) return &r->streams[i];
    return NULL;
}

/* ---- the replay engine ------------------------------------------------------------------------ */

/* A reply the server owes, in command order. */
typedef struct expect {
    int type;               /* CP_CMD_HANDSHAKE, CP_CMD_INIT, or 0 for one ack byte */
    const uint8_t *reply;   /* the capture's reply (handshake, INIT) */
    size_t stream;          /* INIT: index in replay_result.streams */
    size_t command;         /* 1-based number of the command it answers */
} expect;

typedef struct replay {
    const replay_capture *cap;
    const replay_opts *o;
    replay_result *r;
    int fd;
    cp_capture walk;
    cp_capture_item next;   /* the next capture command, valid if have_next */
    int have_next;
    cp_buf out;             /* encoded commands; out_pos bytes of it are sent */
    size_t out_pos;
    cp_buf in;              /* received bytes not yet matched to an expectation */
    expect *q;              /* expectations: q[qhead..qlen) are outstanding */
    size_t qhead, qlen, qcap;
    uint64_t rng;           /* write sizes of random_cuts */
} replay;

static size_t outstanding(const replay *p) { return p->qlen - p->qhead; }

static void push_expect(replay *p, int type, const uint8_t *reply, size_t stream)
{
    if (p->qlen == p->qcap) {
        p->qcap = p->qcap ? p->qcap * 2 : 256;
        p->q = realloc(p->q, p->qcap * sizeof *p->q);
    }
    p->q[p->qlen++] = (expect){type, reply, stream, p->r->commands};
}

static void advance(replay *p)
{
    int st = cp_capture_next(&p->walk, &p->next);
    if (st < 0) fail_msg("%s: cannot walk the capture: %s", p->cap->name, p->walk.err);
    p->have_next = st == CP_OK;
}

static replay_stream *stream_by_capture_handle(replay *p, const uint8_t *h)
{
    for (size_t i = 0; i < p->r->nstreams; i++)
        if (memcmp(p->r->streams[i].capture_handle, h, 16) == 0) return &p->r->streams[i];
    return NULL;
}

static int has_pending_init(const replay *p)
{
    for (size_t i = p->qhead; i < p->qlen; i++)
        if (p->q[i].type == CP_CMD_INIT) return 1;
    return 0;
}

/* Whether the next command can be encoded now: a RCV_DATA needs the server's handle. */
static int can_encode_next(replay *p)
{
    const cp_capture_item *it = &p->next;
    if (it->cmd.type != CP_CMD_DATA) return 1;
    replay_stream *s = stream_by_capture_handle(p, it->cmd.u.data.handle);
    if (s && s->open) return 1;
    if (!has_pending_init(p))
        fail_msg("%s: RCV_DATA at capture offset %llu uses a handle no INIT returned", p->cap->name,
                 (unsigned long long)it->offset);
    return 0;
}

/* Appends the next capture command (with the server's handle) to the output buffer. */
static void encode_next(replay *p)
{
    const cp_capture_item *it = &p->next;
    replay_result *r = p->r;
    r->commands++;
    r->capture_acks += it->nacks;
    switch (it->cmd.type) {
    case CP_CMD_HANDSHAKE:
        cp_buf_append(&p->out, p->cap->client.data + it->offset, it->cmd_len);
        if (it->reply_len != 8) fail_msg("%s: handshake without an 8-byte reply in the capture", p->cap->name);
        push_expect(p, CP_CMD_HANDSHAKE, it->reply, 0);
        break;
    case CP_CMD_INIT: {
        if (it->reply_len != 36) fail_msg("%s: INIT without a 36-byte reply in the capture", p->cap->name);
        if (r->nstreams == CP_ARRAY_LEN(r->streams)) fail_msg("%s: too many INITs", p->cap->name);
        replay_stream *s = &r->streams[r->nstreams];
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "%.*s", (int)it->cmd.u.init.stream.n,
                 (const char *)it->cmd.u.init.stream.p);
        memcpy(s->capture_handle, it->reply, 16);
        cp_buf_append(&p->out, p->cap->client.data + it->offset, it->cmd_len);
        push_expect(p, CP_CMD_INIT, it->reply, r->nstreams);
        r->nstreams++;
        break;
    }
    case CP_CMD_DATA: {
        replay_stream *s = stream_by_capture_handle(p, it->cmd.u.data.handle);
        if (!s || !s->open) fail_msg("%s: RCV_DATA encoded before its handle is known", p->cap->name);
        assert_int_equal(cp_wire_put_data(&p->out, s->server_handle, it->cmd.u.data.payload.p,
                                          it->cmd.u.data.payload.n),
                         CP_OK);
        s->sent += it->cmd.u.data.payload.n;
        push_expect(p, 0, NULL, 0);
        break;
    }
    case CP_CMD_ACK_FLUSH:
        cp_buf_putc(&p->out, CP_CMD_ACK_FLUSH);
        r->flushes++;
        push_expect(p, 0, NULL, 0);
        break;
    case CP_CMD_CLOSE:
        cp_buf_putc(&p->out, CP_CMD_CLOSE);
        break;
    default:
        fail_msg("%s: unexpected command 0x%02x at capture offset %llu", p->cap->name, it->cmd.type,
                 (unsigned long long)it->offset);
    }
    advance(p);
}

/* Matches received bytes against the outstanding expectations. */
static void match_replies(replay *p)
{
    static const uint8_t zero[16];
    replay_result *r = p->r;
    size_t used = 0;
    while (p->qhead < p->qlen) {
        expect *e = &p->q[p->qhead];
        const uint8_t *b = p->in.data + used;
        size_t left = p->in.len - used;
        if (e->type == 0) {
            if (left < 1) break;
            if (b[0] != CP_ACK_OK)
                fail_msg("%s: ack for command %zu is 0x%02x, expected 0x00", p->cap->name, e->command, b[0]);
            r->acks++;
            used += 1;
        } else if (e->type == CP_CMD_HANDSHAKE) {
            if (left < 8) break;
            if (memcmp(b, e->reply, 8) != 0)
                fail_msg("%s: handshake reply %016llx, capture has %016llx", p->cap->name,
                         (unsigned long long)cp_be64(b), (unsigned long long)cp_be64(e->reply));
            used += 8;
        } else {
            if (left < 36) break;
            replay_stream *s = &r->streams[e->stream];
            if (memcmp(b, zero, 16) == 0) fail_msg("%s: INIT of '%s' got a null handle", p->cap->name, s->name);
            for (size_t i = 0; i < r->nstreams; i++)
                if (i != e->stream && memcmp(r->streams[i].server_handle, b, 16) == 0)
                    fail_msg("%s: INIT of '%s' got the handle already given to '%s'", p->cap->name, s->name,
                             r->streams[i].name);
            if (memcmp(b + 16, e->reply + 16, 20) != 0)
                fail_msg("%s: INIT of '%s': period/size/seq %lld/%lld/%d, capture has %lld/%lld/%d", p->cap->name,
                         s->name, (long long)cp_be64(b + 16), (long long)cp_be64(b + 24), (int)cp_be32(b + 32),
                         (long long)cp_be64(e->reply + 16), (long long)cp_be64(e->reply + 24),
                         (int)cp_be32(e->reply + 32));
            memcpy(s->server_handle, b, 16);
            s->seq = (int32_t)cp_be32(b + 32);
            s->open = 1;
            used += 36;
        }
        p->qhead++;
    }
    cp_buf_consume(&p->in, used);
    if (p->in.len && p->qhead == p->qlen)
        fail_msg("%s: %zu unsolicited bytes from the server (first 0x%02x) after command %zu", p->cap->name,
                 p->in.len, p->in.data[0], p->r->commands);
}

/* One round: send what the policy allows, read what is there. Blocks at most until
 * something happens (10 s: then the test fails). */
static void pump(replay *p, int want_write)
{
    size_t unsent = p->out.len - p->out_pos;
    struct pollfd pfd = {p->fd, (short)(POLLIN | (want_write && unsent ? POLLOUT : 0)), 0};
    int r = poll(&pfd, 1, SRV_TIMEOUT_MS);
    if (r < 0 && errno == EINTR) return;
    if (r < 0) fail_msg("poll: %s", strerror(errno));
    if (r == 0)
        fail_msg("%s: nothing happened for %d ms: %zu replies outstanding after command %zu, %zu bytes unsent",
                 p->cap->name, SRV_TIMEOUT_MS, outstanding(p), p->r->commands, unsent);
    if (pfd.revents & (POLLIN | POLLHUP | POLLERR)) {
        uint8_t tmp[65536];
        ssize_t got = recv(p->fd, tmp, sizeof tmp, 0);
        if (got < 0 && errno != EAGAIN && errno != EINTR && errno != ECONNRESET)
            fail_msg("recv: %s", strerror(errno));
        if (got == 0 || (got < 0 && errno == ECONNRESET)) {
            match_replies(p);
            fail_msg("%s: the server closed the connection with %zu replies outstanding after command %zu",
                     p->cap->name, outstanding(p), p->r->commands);
        }
        if (got > 0) {
            cp_buf_append(&p->in, tmp, (size_t)got);
            match_replies(p);
        }
    }
    if ((pfd.revents & POLLOUT) && unsent) {
        size_t n = unsent;
        if (p->o->random_cuts) {
            size_t max = p->o->max_write ? p->o->max_write : 3000;
            n = 1 + (size_t)(test_rand(&p->rng) % max);
            if (n > unsent) n = unsent;
        }
        ssize_t w = send(p->fd, p->out.data + p->out_pos, n, MSG_NOSIGNAL);
        if (w < 0 && errno != EAGAIN && errno != EINTR) fail_msg("%s: send: %s", p->cap->name, strerror(errno));
        if (w > 0) p->out_pos += (size_t)w;
        if (p->out_pos == p->out.len) {
            cp_buf_reset(&p->out);
            p->out_pos = 0;
        }
    }
}

static void send_all(replay *p)
{
    while (p->out_pos < p->out.len) pump(p, 1);
}

static void drain(replay *p)
{
    while (outstanding(p)) pump(p, 1);
}

static int stop_reached(const replay *p)
{
    return p->o->stop_after_flush > 0 && p->r->flushes >= (size_t)p->o->stop_after_flush;
}

/* The agent's pace: one write per command; handshake/INIT replies read before going on;
 * all pending acks drained after each 0x11 and before each INIT. */
static void run_agent_paced(replay *p)
{
    while (p->have_next && !stop_reached(p)) {
        int type = p->next.cmd.type;
        if (type == CP_CMD_INIT) drain(p);
        encode_next(p);
        send_all(p);
        if (type == CP_CMD_HANDSHAKE || type == CP_CMD_INIT || type == CP_CMD_ACK_FLUSH) drain(p);
    }
    drain(p);
}

/* Everything pipelined, cut at random byte boundaries; waits only when a RCV_DATA needs
 * a handle whose INIT reply has not arrived yet. */
static void run_random_cuts(replay *p)
{
    for (;;) {
        while (p->have_next && !stop_reached(p) && p->out.len - p->out_pos < 65536 && can_encode_next(p))
            encode_next(p);
        int more = p->have_next && !stop_reached(p);
        if (!more && p->out_pos == p->out.len && !outstanding(p)) break;
        pump(p, 1);
    }
}

void replay_run(int port, const replay_capture *c, const replay_opts *o, replay_result *r)
{
    replay p;
    memset(&p, 0, sizeof p);
    memset(r, 0, sizeof *r);
    r->fd = -1;
    p.cap = c;
    p.o = o;
    p.r = r;
    p.rng = o->seed ? o->seed : 1;
    cp_buf_init(&p.out);
    cp_buf_init(&p.in);
    if (c->concatenated) cp_capture_init_concat(&p.walk, c->client.data, c->client.len);
    else cp_capture_init_split(&p.walk, c->client.data, c->client.len, c->server.data, c->server.len);
    advance(&p);

    p.fd = conn_open(port);
    int fl = fcntl(p.fd, F_GETFL);
    fcntl(p.fd, F_SETFL, fl | O_NONBLOCK);

    if (o->random_cuts) run_random_cuts(&p);
    else run_agent_paced(&p);

    fcntl(p.fd, F_SETFL, fl);
    if (stop_reached(&p)) {
        r->fd = p.fd; /* the caller decides what happens to the connection */
    } else {
        /* all replies are in: the server must now close without another byte, after the
         * capture's CLOSE or after our end of the connection is shut */
        shutdown(p.fd, SHUT_WR);
        conn_expect_eof(p.fd, SRV_TIMEOUT_MS);
        conn_close(p.fd);
    }
    free(p.q);
    cp_buf_free(&p.out);
    cp_buf_free(&p.in);
}

/* ---- waiting for the stored calls ---------------------------------------------------------------- */

size_t replay_capture_calls(const replay_capture *c)
{
    cp_buf b;
    load_fixture(replay_capture_stream_fixture(c, "calls"), &b);
    uint64_t records = 0;
    char why[256];
    if (decode_file("calls", b.data, b.len, &records, why, sizeof why) != CP_OK)
        fail_msg("%s: the calls stream does not decode: %s", c->name, why);
    cp_buf_free(&b);
    return (size_t)records;
}

json_t *replay_wait_calls(const test_server *s, const char *path, size_t want)
{
    size_t n = 0;
    for (int64_t deadline = test_now_ms() + TEST_WAIT_MS;;) {
        json_t *doc = http_get_json(s->http_port, path, 200);
        n = json_array_size(json_object_get(doc, "calls"));
        if (n == want) return doc;
        json_decref(doc);
        if (n > want || test_now_ms() > deadline) break;
        sleep_ms(50);
    }
    server_fail(s, "GET %s: %zu calls, want %zu (waited up to %d s)", path, n, want, TEST_WAIT_MS / 1000);
    return NULL;
}
