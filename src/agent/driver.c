/* driver.c -- many emulated agents against one collector, on one libuv loop.
 *
 * Each virtual agent is one TCP connection driving one generator through the agent side
 * of protocol.md §3:
 *
 *   connect -> 0x14 handshake, 8-byte version (100605: dictionary, 100705: posDictionary,
 *   88888888: blacklisted, stop) -> 0x15 INIT of every stream in the agent's order, one at
 *   a time, each after draining every pending ack (§3.2) -> streaming: RCV_DATA payloads of
 *   <= 1024 bytes cut anywhere in the byte stream -> every flush interval a flush cycle
 *   (§3.10: per stream its tail, 0x11, wait for every pending ack) -> rotation when the
 *   server's period/size says so (§3.9: flush the old file, 0x11, drain, INIT seq + 1) ->
 *   at the end a final flush cycle, 0x04 CLOSE.
 *
 * Every ack byte is checked: one per RCV_DATA and per 0x11, in order, 0x00. Anything else,
 * EOF, a null handle or 30 s without an awaited byte is an error: the connection is
 * abandoned (no CLOSE) and a new one made after the reconnect delay, which re-initialises
 * everything with seq 0 and re-sends the dictionary and params (unacked data is lost, as
 * with the real agent). A deliberate drop (--reconnect-every) first completes a flush
 * cycle, so every byte sent was acknowledged and no stored file has a torn tail.
 *
 * Writes are batched per connection in one buffer and handed to uv_try_write (uv_write
 * for what does not fit); one global 10 ms timer paces generation, flush cycles, timeouts
 * and progress reports. Nothing is allocated per call or per command.
 *
 * Generation is paced by --calls-per-sec (or fills the window at 0), or, with
 * --calls-per-flush K, is K calls after each flush cycle: then what every flush carries, and
 * so where the files rotate by size, does not depend on how fast the machine is.
 * --max-calls N ends each agent (final flush cycle, CLOSE) once it has made N calls.
 *
 * With --tls each connection is a TLS client (cp_tls over memory BIOs, as the collector's
 * side): the ClientHello goes out at connect, the commands batched in wbuf are sealed
 * into tls_out once the handshake is done, and what is read is decrypted before the ack
 * accounting sees it. A CLOSE is followed by a close_notify.
 */
#include "agent/cp_agent.h"
#include "common/cp_tls.h"
#include "wire/cp_wire.h"

#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

#define NSTREAMS CP_AGENT_NSTREAMS
#define TICK_MS 10
#define ACK_TIMEOUT_MS 30000
#define WINDOW_BYTES (128 * 1024)   /* unacknowledged payload bytes per connection, at most */
#define FIFO_MAX 4096               /* unacknowledged commands per connection, at most */
#define UNSENT_MAX (4u << 20)       /* generation pauses while this much waits to be sent */
#define FILL_UNSENT (64u << 10)     /* --calls-per-sec 0: generate until this much waits */
#define FILL_MAX_CALLS 4096         /* --calls-per-sec 0: calls per step, at most */
#define GEN_BATCH 16
#define END_GRACE_MS 30000          /* after --duration: time for the final flush cycles */

/* The agent's local rotation thresholds (§3.9), 0 = none. */
static const uint64_t local_rotation_size[NSTREAMS] = {
    [CP_AGENT_TRACE] = 100u << 20, [CP_AGENT_CALLS] = 10u << 20, [CP_AGENT_XML] = 100u << 20,
    [CP_AGENT_SQL] = 100u << 20,
};

typedef enum agent_state {
    ST_IDLE,       /* not connected: (re)connect at wake_ms */
    ST_CONNECTING,
    ST_HANDSHAKE,  /* waiting for the 8-byte version */
    ST_OPEN,       /* opening stream `cur`: drain acks, INIT, wait for the 36-byte reply */
    ST_STREAM,
    ST_FLUSH,      /* a flush cycle over streams cur..last, then `after` */
    ST_CLOSING,    /* CLOSE sent and waiting for the shutdown, or uv_close in progress */
    ST_DONE,
} agent_state;

enum { AFTER_RESUME, AFTER_ROTATE, AFTER_DROP, AFTER_FINAL };

typedef struct ack_ent {
    uint64_t t_ns;   /* when the command was queued */
    uint32_t len;    /* payload bytes */
    int32_t stream;  /* -1 for 0x11 */
} ack_ent;

typedef struct drv drv;

typedef struct agent {
    drv *d;
    uint32_t idx;
    char ns[64], service[64], pod[160];
    cp_agent_gen *gen;
    uint64_t rng;
    agent_state state;
    uv_tcp_t tcp;
    uv_connect_t creq;
    uv_write_t wreq;
    uv_shutdown_t sreq;
    int live;              /* tcp initialised and not closed */
    int reconnect;         /* after the close: reconnect (else done) */
    int ever_connected;
    int bye;               /* CLOSE queued: EOF is expected */
    int shutdown_wanted, shutdown_started;
    int64_t wake_ms;
    /* protocol */
    int pos;
    int setup;             /* ST_OPEN as part of the connection setup (else a rotation) */
    int cur, last, after;
    int init_sent, flush_sent, any_flush;
    uint8_t reply[36];
    size_t reply_len;
    uint8_t handle[NSTREAMS][16];
    int32_t seq[NSTREAMS];
    int64_t rot_period[NSTREAMS], rot_size[NSTREAMS];
    uint8_t dirty[NSTREAMS];
    uint32_t phrase_left[NSTREAMS];
    /* acks */
    ack_ent *fifo;
    uint32_t fifo_head, fifo_n;
    uint64_t unacked;
    uint64_t calls_acked;  /* calls-stream bytes acknowledged on this connection */
    int64_t wait_ms;       /* last byte received, or start of the current wait */
    /* output */
    cp_buf wbuf, wfly;
    int writing;
    cp_tls *tls;           /* --tls: the session of this connection */
    cp_buf tls_out;        /* sealed records not yet handed to the socket */
    int tls_bye;           /* close_notify queued */
    /* schedule */
    int64_t next_flush_ms, drop_ms, gen_ms;
    double due;
    uint64_t made;         /* root calls generated (all connections) */
    uint32_t pending;      /* --calls-per-flush: calls to generate before the next flush */
} agent;

struct drv {
    const cp_agent_opts *o;
    uv_loop_t loop;
    uv_timer_t tick;
    uv_idle_t slice;       /* continues a tick's round of agents after yielding to I/O */
    uint32_t cursor;       /* next agent of the current round; == agents when the round is done */
    struct sockaddr_storage addr;
    agent *agents;
    cp_agent_stats *st;
    int64_t epoch0;
    uint64_t hr0;
    int64_t start_ms, end_ms, hard_end_ms, next_progress_ms;
    int ending;
    uint32_t live;         /* agents not done */
    struct ssl_ctx_st *tls_ctx; /* --tls: the client context shared by every connection */
    char rbuf[65536];
    uint8_t pbuf[65536];   /* plaintext of one TLS read */
};

static void agent_step(agent *a);

/* ---- latency histogram ------------------------------------------------------------------- */

void cp_agent_hist_add(cp_agent_hist *h, uint64_t us)
{
    size_t i;
    if (us < 8) {
        i = (size_t)us;
    } else {
        int e = 63 - __builtin_clzll(us);
        i = (size_t)(e - 2) * 8 + ((us >> (e - 3)) & 7);
    }
    h->bucket[i]++;
    h->n++;
}

double cp_agent_hist_quantile_ms(const cp_agent_hist *h, double q)
{
    if (!h->n) return 0;
    uint64_t want = (uint64_t)(q * (double)h->n), seen = 0;
    if (want >= h->n) want = h->n - 1;
    for (size_t i = 0; i < CP_ARRAY_LEN(h->bucket); i++) {
        seen += h->bucket[i];
        if (seen > want) {
            if (i < 8) return (double)i / 1000.0;
            int e = (int)(i / 8) + 2;
            double lo = (double)((8 + i % 8) << (e - 3)), width = (double)(1ULL << (e - 3));
            return (lo + width / 2) / 1000.0;
        }
    }
    return 0;
}

/* ---- small helpers ------------------------------------------------------------------------- */

/* Wall-clock milliseconds, advanced by the monotonic clock (not the loop's cached time:
 * calls generated in one loop iteration should not all end in the same millisecond). */
static int64_t now_ms(const drv *d) { return d->epoch0 + (int64_t)((uv_hrtime() - d->hr0) / 1000000); }

static uint32_t arand(agent *a, uint32_t n)
{
    a->rng ^= a->rng << 13;
    a->rng ^= a->rng >> 7;
    a->rng ^= a->rng << 17;
    return n ? (uint32_t)(a->rng % n) : 0;
}

static int is_connected(const agent *a)
{
    return a->state == ST_HANDSHAKE || a->state == ST_OPEN || a->state == ST_STREAM || a->state == ST_FLUSH;
}

static void on_close(uv_handle_t *h)
{
    agent *a = h->data;
    drv *d = a->d;
    a->writing = 0;
    a->fifo_n = a->fifo_head = 0;
    a->unacked = 0;
    cp_buf_reset(&a->wbuf);
    cp_tls_free(a->tls);
    a->tls = NULL;
    cp_buf_reset(&a->tls_out);
    if (a->reconnect && !d->ending) {
        a->state = ST_IDLE;
        a->wake_ms = now_ms(d) + d->o->reconnect_delay_ms;
    } else {
        a->state = ST_DONE;
        d->live--;
    }
}

/* Abandons the connection (no CLOSE): reconnect later unless the run is ending. */
static void agent_close(agent *a, int reconnect)
{
    a->reconnect = reconnect;
    if (!a->live) {
        a->state = ST_CLOSING;
        on_close((uv_handle_t *)&a->tcp);
        return;
    }
    a->live = 0;
    a->state = ST_CLOSING;
    uv_close((uv_handle_t *)&a->tcp, on_close);
}

static void agent_fail(agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void agent_fail(agent *a, const char *fmt, ...)
{
    drv *d = a->d;
    d->st->errors++;
    d->st->missing_acks += a->fifo_n;
    char why[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    snprintf(d->st->last_error, sizeof d->st->last_error, "agent %u (%s/%s): %s", a->idx, a->ns, a->pod, why);
    agent_close(a, 1);
}

/* ---- output ------------------------------------------------------------------------------------ */

static void kick(agent *a);

static void on_shutdown(uv_shutdown_t *req, int status)
{
    agent *a = req->data;
    (void)status;
    if (a->live) agent_close(a, 0);
}

static void on_write(uv_write_t *req, int status)
{
    agent *a = req->data;
    a->writing = 0;
    if (status == UV_ECANCELED || !a->live) return;
    if (status < 0) {
        agent_fail(a, "write: %s", uv_strerror(status));
        return;
    }
    a->d->st->wire_bytes += a->wfly.len;
    cp_buf_reset(&a->wfly);
    kick(a);
    agent_step(a);
}

/* TLS: the batched commands become records once the handshake is done (until then
 * only the handshake's own records go out); after a CLOSE, a close_notify. */
static int tls_seal(agent *a)
{
    if (a->wbuf.len) {
        int st = cp_tls_write(a->tls, a->wbuf.data, a->wbuf.len);
        if (st == CP_OK) cp_buf_reset(&a->wbuf);
        else if (st != CP_AGAIN) {
            agent_fail(a, "TLS: %s", cp_tls_errmsg(a->tls));
            return st;
        }
    }
    if (a->shutdown_wanted && !a->wbuf.len && !a->tls_bye) {
        a->tls_bye = 1;
        cp_tls_close_notify(a->tls);
    }
    if (cp_tls_take(a->tls, &a->tls_out) != CP_OK) {
        agent_fail(a, "TLS: out of memory");
        return CP_ENOMEM;
    }
    return CP_OK;
}

/* Hands the batched commands to the socket: uv_try_write, then uv_write for the rest. */
static void kick(agent *a)
{
    if (!a->live || a->writing) return;
    if (a->tls && tls_seal(a) != CP_OK) return;
    cp_buf *o = a->tls ? &a->tls_out : &a->wbuf; /* the bytes for the socket */
    if (o->len) {
        uv_buf_t b = uv_buf_init((char *)o->data, (unsigned)o->len);
        int r = uv_try_write((uv_stream_t *)&a->tcp, &b, 1);
        if (r == UV_EAGAIN) r = 0;
        if (r < 0) {
            agent_fail(a, "write: %s", uv_strerror(r));
            return;
        }
        a->d->st->wire_bytes += (uint64_t)r;
        if ((size_t)r < o->len) { /* the rest goes through uv_write from wfly */
            cp_buf tmp = a->wfly;
            cp_buf_reset(&tmp);
            a->wfly = *o;
            *o = tmp;
            memmove(a->wfly.data, a->wfly.data + r, a->wfly.len - (size_t)r);
            a->wfly.len -= (size_t)r;
            b = uv_buf_init((char *)a->wfly.data, (unsigned)a->wfly.len);
            a->wreq.data = a;
            int st = uv_write(&a->wreq, (uv_stream_t *)&a->tcp, &b, 1, on_write);
            if (st < 0) {
                agent_fail(a, "write: %s", uv_strerror(st));
                return;
            }
            a->writing = 1;
            return;
        }
        cp_buf_reset(o);
    }
    if (a->tls && (a->wbuf.len || (a->shutdown_wanted && !a->tls_bye))) return; /* the handshake is not done */
    if (a->shutdown_wanted && !a->shutdown_started) {
        a->shutdown_started = 1;
        a->sreq.data = a;
        if (uv_shutdown(&a->sreq, (uv_stream_t *)&a->tcp, on_shutdown) < 0) agent_close(a, 0);
    }
}

static int window_open(const agent *a) { return a->fifo_n < FIFO_MAX - 2 && a->unacked < WINDOW_BYTES; }

static void fifo_push(agent *a, int32_t stream, uint32_t len)
{
    ack_ent *e = &a->fifo[(a->fifo_head + a->fifo_n) % FIFO_MAX];
    if (!a->fifo_n) a->wait_ms = now_ms(a->d); /* the ack timeout runs from here */
    e->t_ns = uv_hrtime();
    e->len = len;
    e->stream = stream;
    a->fifo_n++;
}

/* One RCV_DATA of the next n pending bytes of stream s. */
static void send_piece(agent *a, int s, size_t n)
{
    size_t len;
    const uint8_t *p = cp_agent_gen_pending(a->gen, (cp_agent_stream)s, &len);
    cp_wire_put_data(&a->wbuf, a->handle[s], p, (uint32_t)n);
    cp_agent_gen_consume(a->gen, (cp_agent_stream)s, n);
    fifo_push(a, s, (uint32_t)n);
    a->unacked += n;
    a->dirty[s] = 1;
}

/* Payload sizes like the agent's: mostly 1024, often 1023, now and then anything. */
static size_t piece_size(agent *a)
{
    uint32_t r = arand(a, 100);
    return r < 85 ? 1024 : r < 93 ? 1023 : 1 + arand(a, 1023);
}

/* Sends pending bytes of stream s while the window allows. Phrase streams go out whole
 * phrases at a time, the 4-byte length as its own payload (§3.3); other streams only in
 * full pieces unless `tail` (a flush sends the tail too). Returns 1 if all was sent. */
static int send_stream(agent *a, int s, int tail)
{
    int phrased = cp_agent_stream_is_phrased((cp_agent_stream)s);
    for (;;) {
        size_t len;
        const uint8_t *p = cp_agent_gen_pending(a->gen, (cp_agent_stream)s, &len);
        if (!len) return 1;
        if (!window_open(a)) return 0;
        size_t n;
        if (phrased) {
            if (!a->phrase_left[s]) { /* a phrase length: pending holds whole phrases */
                a->phrase_left[s] = cp_be32(p);
                n = 4;
            } else {
                n = piece_size(a);
                if (n > a->phrase_left[s]) n = a->phrase_left[s];
                a->phrase_left[s] -= (uint32_t)n;
            }
        } else {
            n = piece_size(a);
            if (n > len) {
                if (!tail && len < 1024) return 0; /* the tail waits for a flush */
                n = len;
            }
        }
        send_piece(a, s, n);
    }
}

/* ---- generation -------------------------------------------------------------------------------- */

static int can_generate(const agent *a)
{
    if (a->state != ST_STREAM && !(a->state == ST_FLUSH && a->after == AFTER_RESUME)) return 0;
    return !a->d->ending && cp_agent_gen_unsent(a->gen) < UNSENT_MAX;
}

/* --max-calls: n cut to what the agent may still make. */
static uint32_t calls_left(const agent *a, uint32_t n)
{
    uint64_t max = a->d->o->max_calls;
    if (!max) return n;
    return a->made >= max ? 0 : max - a->made < n ? (uint32_t)(max - a->made) : n;
}

static int agent_finished(const agent *a) { return a->d->o->max_calls && a->made >= a->d->o->max_calls; }

static int generate(agent *a, uint32_t n)
{
    int st = cp_agent_gen_calls(a->gen, n, now_ms(a->d));
    if (st != CP_OK) {
        agent_fail(a, "generator: %s", cp_strstatus(st));
        return st;
    }
    a->d->st->calls_generated += n;
    a->made += n;
    return CP_OK;
}

/* --calls-per-sec R: the calls due since the last tick (at most one second's worth is
 * caught up after a pause). */
static void generate_due(agent *a, int64_t now)
{
    if (a->d->o->calls_per_flush) { /* a fixed number per flush cycle, whenever the tick comes */
        if (a->pending && a->state == ST_STREAM && can_generate(a)) {
            uint32_t n = calls_left(a, a->pending);
            if (!n || generate(a, n) == CP_OK) a->pending = 0;
        }
        return;
    }
    uint32_t rate = a->d->o->calls_per_sec;
    if (!rate) return;
    if (!can_generate(a)) {
        if (!is_connected(a)) a->gen_ms = now; /* nothing is owed while disconnected */
        return;
    }
    a->due += (double)rate * (double)(now - a->gen_ms) / 1000.0;
    a->gen_ms = now;
    if (a->due > rate) a->due = rate;
    uint32_t n = calls_left(a, (uint32_t)a->due);
    if (n && generate(a, n) == CP_OK) a->due -= n;
}

/* --calls-per-sec 0: as fast as the server acknowledges. */
static void generate_fill(agent *a)
{
    for (uint32_t made = 0; made < FILL_MAX_CALLS && a->state == ST_STREAM; made += GEN_BATCH) {
        if (!window_open(a) || cp_agent_gen_unsent(a->gen) >= FILL_UNSENT) return;
        uint32_t n = calls_left(a, GEN_BATCH);
        if (!n || generate(a, n) != CP_OK) return;
        for (int s = 0; s < NSTREAMS; s++) send_stream(a, s, 0);
    }
}

/* ---- the protocol state machine ------------------------------------------------------------------ */

static void begin_flush(agent *a, int first, int last, int after)
{
    int st = first == last ? cp_agent_gen_flush(a->gen, (cp_agent_stream)first) : cp_agent_gen_flush_all(a->gen);
    if (st != CP_OK) {
        agent_fail(a, "generator flush: %s", cp_strstatus(st));
        return;
    }
    a->state = ST_FLUSH;
    a->cur = first;
    a->last = last;
    a->after = after;
    a->flush_sent = a->any_flush = 0;
}

/* The stream whose file must rotate now (§3.9), or -1. */
static int rotation_due(agent *a, int64_t now)
{
    for (int s = 0; s < NSTREAMS; s++) {
        uint64_t limit = local_rotation_size[s], server = (uint64_t)a->rot_size[s];
        if (server && (!limit || server < limit)) limit = server;
        if (limit && cp_agent_gen_file_size(a->gen, (cp_agent_stream)s) > limit) return s;
        if (a->rot_period[s] > 0 && now - cp_agent_gen_file_opened_ms(a->gen, (cp_agent_stream)s) > a->rot_period[s])
            return s;
    }
    return -1;
}

static void step_stream(agent *a)
{
    drv *d = a->d;
    int64_t now = now_ms(d);
    int r = rotation_due(a, now);
    if (d->ending || agent_finished(a)) begin_flush(a, 0, NSTREAMS - 1, AFTER_FINAL);
    else if (a->drop_ms && now >= a->drop_ms) begin_flush(a, 0, NSTREAMS - 1, AFTER_DROP);
    else if (r >= 0) begin_flush(a, r, r, AFTER_ROTATE);
    else if (now >= a->next_flush_ms) begin_flush(a, 0, NSTREAMS - 1, AFTER_RESUME);
    if (a->state != ST_STREAM) return;
    for (int s = 0; s < NSTREAMS; s++) send_stream(a, s, 0);
    if (!d->o->calls_per_sec && !d->o->calls_per_flush) generate_fill(a);
}

/* One flush cycle step; returns 1 when the state changed (the caller steps again). */
static int step_flush(agent *a)
{
    drv *d = a->d;
    while (a->cur <= a->last) {
        int s = a->cur;
        if (!a->flush_sent) {
            if (!send_stream(a, s, 1)) return 0; /* window full: wait for acks */
            int keepalive = a->after == AFTER_RESUME && s == a->last && !a->any_flush;
            if (a->dirty[s] || a->after == AFTER_ROTATE || keepalive) {
                cp_buf_putc(&a->wbuf, CP_CMD_ACK_FLUSH);
                fifo_push(a, -1, 0);
                a->dirty[s] = 0;
                a->any_flush = 1;
                d->st->flushes++;
            }
            a->flush_sent = 1;
        }
        if (a->fifo_n) return 0; /* §3.10: block until every pending ack is read */
        a->cur++;
        a->flush_sent = 0;
    }
    switch (a->after) {
    case AFTER_RESUME:
        a->state = ST_STREAM;
        a->next_flush_ms = now_ms(d) + d->o->flush_interval_ms;
        a->pending = d->o->calls_per_flush;
        return 1;
    case AFTER_ROTATE:
        a->state = ST_OPEN;
        a->setup = 0;
        a->cur = a->last;
        a->init_sent = 0;
        return 1;
    case AFTER_DROP: /* everything acknowledged: drop without CLOSE */
        agent_close(a, 1);
        return 0;
    default: /* AFTER_FINAL */
        cp_buf_putc(&a->wbuf, CP_CMD_CLOSE);
        a->bye = 1;
        a->shutdown_wanted = 1;
        a->state = ST_CLOSING;
        return 0;
    }
}

static void step_open(agent *a)
{
    if (a->init_sent || a->fifo_n) return; /* waiting for the reply, or draining acks (§3.2) */
    int s = a->cur;
    int32_t seq = a->setup ? 0 : a->seq[s] + 1;
    int reset = a->setup && s == CP_AGENT_DICT;
    cp_wire_put_init(&a->wbuf, cp_agent_stream_name((cp_agent_stream)s, a->pos), seq, reset);
    a->init_sent = 1;
    a->reply_len = 0;
    a->wait_ms = now_ms(a->d);
}

static void agent_step(agent *a)
{
    for (int guard = 0; guard < 64; guard++) {
        if (a->state == ST_STREAM) step_stream(a);
        else if (a->state == ST_OPEN) step_open(a);
        if (a->state != ST_FLUSH || !step_flush(a)) break;
    }
    kick(a);
}

/* ---- replies and acks ---------------------------------------------------------------------------- */

static void on_version(agent *a)
{
    drv *d = a->d;
    int64_t v = (int64_t)cp_be64(a->reply);
    if (v == CP_PROTOCOL_BLACKLISTED) {
        d->st->blacklisted++;
        agent_close(a, 0);
        return;
    }
    if (v != CP_PROTOCOL_V2 && v != CP_PROTOCOL_V3) {
        agent_fail(a, "handshake reply %lld", (long long)v);
        return;
    }
    a->pos = v == CP_PROTOCOL_V3;
    cp_agent_gen_reset(a->gen, a->pos);
    memset(a->phrase_left, 0, sizeof a->phrase_left);
    memset(a->dirty, 0, sizeof a->dirty);
    a->calls_acked = 0;
    a->state = ST_OPEN;
    a->setup = 1;
    a->cur = 0;
    a->init_sent = 0;
}

static void on_init_reply(agent *a)
{
    static const uint8_t null_uuid[16];
    drv *d = a->d;
    int s = a->cur;
    if (!memcmp(a->reply, null_uuid, 16)) {
        agent_fail(a, "INIT %s: null handle", cp_agent_stream_name((cp_agent_stream)s, a->pos));
        return;
    }
    memcpy(a->handle[s], a->reply, 16);
    a->rot_period[s] = (int64_t)cp_be64(a->reply + 16);
    a->rot_size[s] = (int64_t)cp_be64(a->reply + 24);
    a->seq[s] = (int32_t)cp_be32(a->reply + 32);
    int64_t now = now_ms(d);
    int st = cp_agent_gen_open(a->gen, (cp_agent_stream)s, a->seq[s], now);
    if (st != CP_OK) {
        agent_fail(a, "INIT %s: seq %d: %s", cp_agent_stream_name((cp_agent_stream)s, a->pos), a->seq[s],
                   cp_strstatus(st));
        return;
    }
    a->init_sent = 0;
    if (!a->setup) {
        d->st->rotations++;
        a->state = ST_STREAM;
        return;
    }
    if (++a->cur < NSTREAMS) return;
    a->state = ST_STREAM; /* every stream open */
    a->next_flush_ms = now + d->o->flush_interval_ms;
    a->drop_ms = d->o->reconnect_every_ms ? now + d->o->reconnect_every_ms : 0;
    a->gen_ms = now;
    a->pending = d->o->calls_per_flush;
}

/* One ack byte for the oldest outstanding command. Returns 0 after a failure. */
static int on_ack(agent *a, uint8_t b)
{
    drv *d = a->d;
    ack_ent *e = &a->fifo[a->fifo_head];
    if (b != CP_ACK_OK) {
        agent_fail(a, "ack 0x%02x for %s", b, e->stream < 0 ? "0x11" : "RCV_DATA");
        return 0;
    }
    uint64_t us = (uv_hrtime() - e->t_ns) / 1000;
    cp_agent_hist_add(&d->st->latency, us);
    cp_agent_hist_add(e->stream >= 0 ? &d->st->latency_data : &d->st->latency_flush, us);
    d->st->acks++;
    if (e->stream >= 0) {
        d->st->bytes_sent += e->len;
        d->st->stream_bytes[cp_agent_stream_kind((cp_agent_stream)e->stream, a->pos)] += e->len;
        a->unacked -= e->len;
        if (e->stream == CP_AGENT_CALLS) { /* calls whose whole record is now acknowledged */
            a->calls_acked += e->len;
            d->st->calls_sent += cp_agent_gen_calls_acked(a->gen, a->calls_acked);
        }
    }
    a->fifo_head = (a->fifo_head + 1) % FIFO_MAX;
    a->fifo_n--;
    return 1;
}

static void on_bytes(agent *a, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (a->fifo_n) {
            if (!on_ack(a, p[i])) return;
            continue;
        }
        size_t need = a->state == ST_HANDSHAKE ? 8 : a->state == ST_OPEN && a->init_sent ? 36 : 0;
        if (!need) {
            agent_fail(a, "unexpected byte 0x%02x from the server", p[i]);
            return;
        }
        a->reply[a->reply_len++] = p[i];
        if (a->reply_len < need) continue;
        a->reply_len = 0;
        if (need == 8) on_version(a);
        else on_init_reply(a);
        if (!a->live) return;
    }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    agent *a = h->data;
    (void)suggested;
    *buf = uv_buf_init(a->d->rbuf, sizeof a->d->rbuf);
}

static void on_eof(agent *a, int err)
{
    if (a->bye && !a->fifo_n) agent_close(a, 0);
    else agent_fail(a, "%s", err == UV_EOF ? "connection closed by the server" : uv_strerror(err));
}

/* Records from the server: the handshake advances, the plaintext goes to on_bytes. */
static void tls_read(agent *a, const uint8_t *p, size_t n)
{
    if (cp_tls_feed(a->tls, p, n) != CP_OK) {
        agent_fail(a, "TLS: out of memory");
        return;
    }
    while (a->live) {
        long k = cp_tls_read(a->tls, a->d->pbuf, sizeof a->d->pbuf);
        if (k == 0) break;
        if (k == CP_TLS_CLOSED) {
            on_eof(a, UV_EOF);
            return;
        }
        if (k < 0) {
            kick(a); /* our alert, if any */
            if (a->live) agent_fail(a, "TLS: %s", cp_tls_errmsg(a->tls));
            return;
        }
        on_bytes(a, a->d->pbuf, (size_t)k);
    }
    if (a->live) kick(a); /* handshake records, and commands that waited for it */
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    agent *a = s->data;
    (void)buf;
    if (!a->live || nread == 0) return;
    if (nread < 0) {
        on_eof(a, (int)nread);
        return;
    }
    a->wait_ms = now_ms(a->d);
    if (a->tls) tls_read(a, (const uint8_t *)a->d->rbuf, (size_t)nread);
    else on_bytes(a, (const uint8_t *)a->d->rbuf, (size_t)nread);
    if (a->live) agent_step(a);
}

static void on_connect(uv_connect_t *req, int status)
{
    agent *a = req->data;
    drv *d = a->d;
    if (status == UV_ECANCELED || !a->live) return;
    if (status < 0) {
        agent_fail(a, "connect: %s", uv_strerror(status));
        return;
    }
    d->st->connects++;
    if (a->ever_connected) d->st->reconnects++;
    a->ever_connected = 1;
    uv_tcp_nodelay(&a->tcp, 1);
    int st = uv_read_start((uv_stream_t *)&a->tcp, on_alloc, on_read);
    if (st < 0) {
        agent_fail(a, "read: %s", uv_strerror(st));
        return;
    }
    a->state = ST_HANDSHAKE;
    a->reply_len = 0;
    a->wait_ms = now_ms(d);
    if (d->tls_ctx) { /* the ClientHello first; the handshake command waits in wbuf for the session */
        a->tls_bye = 0;
        if (cp_tls_new(d->tls_ctx, 0, &a->tls) != CP_OK || cp_tls_handshake(a->tls) == CP_EPROTO) {
            agent_fail(a, "TLS: cannot start a session%s%s", a->tls ? ": " : "", a->tls ? cp_tls_errmsg(a->tls) : "");
            return;
        }
    }
    cp_wire_put_handshake(&a->wbuf, d->o->protocol_version, a->pod, a->service, a->ns);
    kick(a);
}

static void start_connect(agent *a)
{
    drv *d = a->d;
    a->bye = a->shutdown_wanted = a->shutdown_started = 0;
    a->fifo_n = a->fifo_head = 0;
    a->unacked = 0;
    cp_buf_reset(&a->wbuf);
    int st = uv_tcp_init(&d->loop, &a->tcp);
    if (st < 0) {
        agent_fail(a, "socket: %s", uv_strerror(st));
        return;
    }
    a->tcp.data = a;
    a->live = 1;
    a->state = ST_CONNECTING;
    a->wait_ms = now_ms(d);
    a->creq.data = a;
    st = uv_tcp_connect(&a->creq, &a->tcp, (const struct sockaddr *)&d->addr, on_connect);
    if (st < 0) agent_fail(a, "connect: %s", uv_strerror(st));
}

/* ---- the timer: pacing, timeouts, the end, progress ------------------------------------------------ */

static void agent_tick(agent *a, int64_t now)
{
    drv *d = a->d;
    if (a->state == ST_IDLE) {
        if (d->ending || agent_finished(a)) {
            a->state = ST_DONE;
            d->live--;
        } else if (now >= a->wake_ms) {
            start_connect(a);
        }
        return;
    }
    if (a->state == ST_DONE || !a->live) return;
    int waiting = a->fifo_n || a->state == ST_CONNECTING || a->state == ST_HANDSHAKE ||
                  (a->state == ST_OPEN && a->init_sent);
    if (waiting && now - a->wait_ms > ACK_TIMEOUT_MS) {
        agent_fail(a, "no reply for %d s (%u acks pending)", ACK_TIMEOUT_MS / 1000, a->fifo_n);
        return;
    }
    generate_due(a, now);
    if (a->live) agent_step(a);
}

static void snapshot(drv *d, int64_t now)
{
    cp_agent_stats *st = d->st;
    st->elapsed_s = (double)(now - d->start_ms) / 1000.0;
    st->connected = 0;
    for (uint32_t i = 0; i < d->o->agents; i++) st->connected += is_connected(&d->agents[i]);
}

/* A round visits every agent once (generate what is due, send, check timeouts). It runs
 * in slices of at most SLICE_NS, yielding to the loop in between, so ack bytes are read
 * (and timestamped) promptly instead of after the whole round's generation: otherwise the
 * emulator's own work would show up as ack latency. */
#define SLICE_NS 500000u

static void on_slice(uv_idle_t *h);

static void run_slice(drv *d)
{
    uint64_t t0 = uv_hrtime();
    int64_t now = now_ms(d);
    while (d->cursor < d->o->agents) {
        agent_tick(&d->agents[d->cursor++], now);
        if (uv_hrtime() - t0 > SLICE_NS) break;
    }
    if (d->cursor < d->o->agents) {
        if (!uv_is_active((uv_handle_t *)&d->slice)) uv_idle_start(&d->slice, on_slice);
    } else if (uv_is_active((uv_handle_t *)&d->slice)) {
        uv_idle_stop(&d->slice);
    }
    if (!d->live) {
        if (!uv_is_closing((uv_handle_t *)&d->tick)) uv_close((uv_handle_t *)&d->tick, NULL);
        if (!uv_is_closing((uv_handle_t *)&d->slice)) uv_close((uv_handle_t *)&d->slice, NULL);
    }
}

static void on_slice(uv_idle_t *h) { run_slice(h->data); }

static void on_tick(uv_timer_t *t)
{
    drv *d = t->data;
    int64_t now = now_ms(d);
    if (!d->ending && now >= d->end_ms) d->ending = 1;
    if (now >= d->hard_end_ms) { /* the final flush cycles did not finish: give up */
        for (uint32_t i = 0; i < d->o->agents; i++) {
            agent *a = &d->agents[i];
            if (!a->live) continue; /* done, idle (done at the next tick) or closing */
            snprintf(d->st->last_error, sizeof d->st->last_error,
                     "agent %u (%s/%s): not finished %d s after the end (%u acks missing)", a->idx, a->ns, a->pod,
                     END_GRACE_MS / 1000, a->fifo_n);
            d->st->errors++;
            d->st->missing_acks += a->fifo_n;
            a->fifo_n = 0;
            agent_close(a, 0);
        }
    }
    if (d->o->progress && d->o->progress_ms && now >= d->next_progress_ms) {
        d->next_progress_ms = now + d->o->progress_ms;
        snapshot(d, now);
        d->o->progress(d->o->progress_ud, d->st);
    }
    if (d->cursor >= d->o->agents) d->cursor = 0; /* a new round; else the last one is still running */
    run_slice(d);
}

/* ---- setup ---------------------------------------------------------------------------------------- */

void cp_agent_opts_default(cp_agent_opts *o)
{
    memset(o, 0, sizeof *o);
    o->host = "127.0.0.1";
    o->port = 1715;
    o->agents = 10;
    o->duration_ms = 10000;
    o->calls_per_sec = 100;
    o->trace_depth = 4;
    o->namespaces = 1;
    o->services = 1;
    o->seed = 1;
    o->reconnect_delay_ms = 1000;
    o->flush_interval_ms = 5000;
    o->protocol_version = CP_PROTOCOL_V3;
}

static const char *const service_names[] = {"orders",   "billing", "catalog", "payments", "accounts",
                                            "shipping", "stock",   "pricing", "notifications", "search"};

/* k8s-style name parts: a replica-set hash and a pod suffix, from the alphabet k8s uses. */
static void k8s_chars(uint64_t v, size_t n, char *out)
{
    static const char alpha[] = "bcdfghjklmnpqrstvwxz2456789";
    for (size_t i = 0; i < n; i++, v /= 27) out[i] = alpha[v % 27];
    out[n] = 0;
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Agent i: namespace i % K, service (i / K) % M, pod <service>-<hash>-<suffix>_<jvmStartMs>. */
static int agent_init(drv *d, agent *a, uint32_t i)
{
    const cp_agent_opts *o = d->o;
    uint32_t k = i % o->namespaces, m = (i / o->namespaces) % o->services;
    uint32_t n = i / (o->namespaces * o->services);
    a->d = d;
    a->idx = i;
    a->rng = mix64(o->seed * 0x9E3779B97F4A7C15ULL + i + 1) | 1;
    snprintf(a->ns, sizeof a->ns, "emulated-%u", k);
    if (m < CP_ARRAY_LEN(service_names)) snprintf(a->service, sizeof a->service, "%s-service", service_names[m]);
    else
        snprintf(a->service, sizeof a->service, "%s%u-service", service_names[m % CP_ARRAY_LEN(service_names)],
                 m / (uint32_t)CP_ARRAY_LEN(service_names));
    char hash[12], suffix[8], node[128];
    k8s_chars(mix64(o->seed * 0x9E3779B97F4A7C15ULL + ((uint64_t)k << 32 | m) + 1), 10, hash);
    /* n -> suffix is a bijection on [0, 27^5) (the multiplier is prime to 3): unique pods */
    const uint64_t space = 27ULL * 27 * 27 * 27 * 27;
    k8s_chars((n * 4194301ULL + mix64(o->seed + m + 7)) % space, 5, suffix);
    int64_t jvm_start = d->start_ms - 30000 - (int64_t)(mix64(a->rng) % 600000);
    snprintf(node, sizeof node, "%s-%s-%s", a->service, hash, suffix);
    snprintf(a->pod, sizeof a->pod, "%s_%lld", node, (long long)jvm_start);

    cp_agent_gen_opts go;
    cp_agent_gen_opts_default(&go);
    go.service = a->service;
    go.node_name = node;
    go.timer_start_ms = jvm_start;
    go.trace_depth = o->trace_depth;
    a->gen = cp_agent_gen_new(&go, mix64(a->rng));
    a->fifo = malloc(FIFO_MAX * sizeof *a->fifo);
    cp_buf_init(&a->wbuf);
    cp_buf_init(&a->wfly);
    cp_buf_init(&a->tls_out);
    if (!a->gen || !a->fifo) return CP_ENOMEM;
    a->state = ST_IDLE;
    a->wake_ms = d->start_ms;
    return CP_OK;
}

static int resolve(drv *d, char *why, size_t whylen)
{
    char port[16];
    snprintf(port, sizeof port, "%d", d->o->port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res = NULL;
    int rc = getaddrinfo(d->o->host, port, &hints, &res);
    if (rc != 0 || !res) {
        snprintf(why, whylen, "cannot resolve '%s': %s", d->o->host, gai_strerror(rc));
        return CP_EINVAL;
    }
    memcpy(&d->addr, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return CP_OK;
}

static int check_opts(const cp_agent_opts *o, char *why, size_t whylen)
{
    const char *bad = !o->agents || o->agents > 100000      ? "agents must be 1..100000"
                      : !o->namespaces || !o->services      ? "namespaces and services must be >= 1"
                      : o->trace_depth < 1 || o->trace_depth > CP_AGENT_MAX_DEPTH ? "trace depth must be 1..64"
                      : !o->flush_interval_ms               ? "flush interval must be > 0"
                      : o->port <= 0 || o->port > 65535     ? "port must be 1..65535"
                      : o->protocol_version != CP_PROTOCOL_V2 && o->protocol_version != CP_PROTOCOL_V3
                          ? "protocol version must be 100605 or 100705"
                          : NULL;
    if (!bad) return CP_OK;
    snprintf(why, whylen, "%s", bad);
    return CP_EINVAL;
}

/* Generator facts summed over the agents, for the summary. */
static void gen_totals(drv *d)
{
    d->st->threads = d->st->words = 0;
    for (uint32_t i = 0; i < d->o->agents; i++) {
        cp_agent_gen_stats gs;
        cp_agent_gen_get_stats(d->agents[i].gen, &gs);
        d->st->threads += gs.threads;
        d->st->words += gs.words;
    }
}

static void drv_free(drv *d)
{
    for (uint32_t i = 0; d->agents && i < d->o->agents; i++) {
        agent *a = &d->agents[i];
        cp_agent_gen_free(a->gen);
        free(a->fifo);
        cp_buf_free(&a->wbuf);
        cp_buf_free(&a->wfly);
        cp_tls_free(a->tls);
        cp_buf_free(&a->tls_out);
    }
    free(d->agents);
    cp_tls_ctx_free(d->tls_ctx);
}

int cp_agent_run(const cp_agent_opts *o, cp_agent_stats *st, char *why, size_t whylen)
{
    memset(st, 0, sizeof *st);
    st->agents = o->agents;
    int rc = check_opts(o, why, whylen);
    if (rc != CP_OK) return rc;
    drv *d = calloc(1, sizeof *d);
    if (!d) return CP_ENOMEM;
    d->o = o;
    d->st = st;
    if (o->tls && (rc = cp_tls_client_ctx(o->tls_ca, o->tls_cert, o->tls_key, &d->tls_ctx, why, whylen)) != CP_OK) {
        free(d);
        return CP_EINVAL;
    }
    if ((rc = resolve(d, why, whylen)) != CP_OK || (rc = uv_loop_init(&d->loop)) != 0) {
        if (rc < 0 && rc != CP_EINVAL) snprintf(why, whylen, "event loop: %s", uv_strerror(rc));
        cp_tls_ctx_free(d->tls_ctx);
        free(d);
        return CP_EINVAL;
    }
    d->hr0 = uv_hrtime();
    d->epoch0 = cp_now_ms();
    d->start_ms = d->epoch0;
    d->end_ms = d->start_ms + o->duration_ms;
    d->hard_end_ms = d->end_ms + END_GRACE_MS;
    d->next_progress_ms = d->start_ms + o->progress_ms;
    d->agents = calloc(o->agents, sizeof *d->agents);
    rc = d->agents ? CP_OK : CP_ENOMEM;
    for (uint32_t i = 0; rc == CP_OK && i < o->agents; i++) rc = agent_init(d, &d->agents[i], i);
    if (rc != CP_OK) {
        snprintf(why, whylen, "out of memory setting up %u agents", o->agents);
        drv_free(d);
        uv_loop_close(&d->loop);
        free(d);
        return rc;
    }
    d->live = o->agents;
    uv_timer_init(&d->loop, &d->tick);
    d->tick.data = d;
    uv_idle_init(&d->loop, &d->slice);
    d->slice.data = d;
    d->cursor = o->agents;
    uv_timer_start(&d->tick, on_tick, 0, TICK_MS);
    uv_run(&d->loop, UV_RUN_DEFAULT);
    snapshot(d, now_ms(d));
    gen_totals(d);
    st->elapsed_s = (double)(now_ms(d) - d->start_ms) / 1000.0;
    uv_loop_close(&d->loop);
    drv_free(d);
    free(d);
    return CP_OK;
}
