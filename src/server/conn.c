/* conn.c -- one agent TCP connection: input buffering, reply flushing, back-pressure and
 * the close sequence.
 *
 * Input: libuv reads into the server's one shared buffer; complete commands are parsed
 * straight from it and only a trailing partial command (or input that arrives while the
 * connection waits for a sync) is copied into c->in. Output: replies collect in c->out
 * and leave with uv_try_write after each read's commands are processed, so acks go out
 * within the loop iteration; what the kernel does not take goes into one owned uv_write.
 *
 * Close: finalize files -> (sync batch if anything is unsynced) -> flush replies ->
 * uv_shutdown -> read and discard until the peer closes (bounded by the sweep) ->
 * uv_close -> free. A connection in a sync batch is never freed; see conn_release.
 *
 * TLS (a connection of the TLS port, tls.c): what is read is fed to its cp_tls and the
 * plaintext that comes out is `input` as above; replies are sealed from c->out into
 * c->tls_out, which is what goes to the socket. The handshake must end within its
 * deadline and byte budget; a failed one is logged and closed (its alert sent).
 */
#include "server_internal.h"

#include "common/cp_metrics.h"
#include "common/cp_tls.h"
#include "common/cp_fsutil.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

typedef struct write_req {
    uv_write_t req;
    cp_conn *c;
    size_t len;
    uint8_t data[];
} write_req;

static void read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);
static void hard_close(cp_conn *c, const char *why);

static uv_stream_t *stream_of(cp_conn *c) { return (uv_stream_t *)&c->tcp; }

/* ---- reading on/off ----------------------------------------------------------------------- */

static void alloc_cb(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    cp_conn *c = h->data;
    buf->base = (char *)c->srv->rbuf;
    /* a read that may stop at the gate is kept until the gate lets it in: small ones */
    buf->len = cp_srv_gate_may_stop(c) ? CP_SRV_GATE_READ : CP_SRV_READ_BUF;
}

/* One place decides whether we read: not after EOF, not while replies pile up (the peer
 * is not reading), not while waiting for a sync (what the agent sends meanwhile waits in
 * the kernel, not in our memory), not past its share of a loop iteration (held), and while
 * closing only to drain. */
static void update_reading(cp_conn *c)
{
    int want;
    if (c->closed || c->eof) want = 0;
    else if (c->state == CONN_CLOSING) want = c->shut == 2;
    else want = c->state == CONN_ACTIVE && !c->held && !c->gated && !c->paused &&
                !(c->identified && cp_catw_full(c->srv)) &&
                c->write_queued + c->out.len + c->tls_out.len <= CP_SRV_WRITE_HIGH && c->in.len <= CP_SRV_STASH_HIGH;
    if (want && !c->reading) {
        if (uv_read_start(stream_of(c), alloc_cb, read_cb) == 0) c->reading = 1;
        else hard_close(c, "cannot read");
    } else if (!want && c->reading) {
        uv_read_stop(stream_of(c));
        c->reading = 0;
    }
}

void cp_conn_update_reading(cp_conn *c) { update_reading(c); }

/* ---- output ------------------------------------------------------------------------------- */

void cp_conn_reply(cp_conn *c, const void *p, size_t n)
{
    if (c->closed) return;
    if (cp_buf_append(&c->out, p, n) != CP_OK) hard_close(c, "out of memory for replies");
}

static void write_cb(uv_write_t *req, int status)
{
    write_req *w = (write_req *)req;
    cp_conn *c = w->c;
    free(w);
    c->writing = 0;
    c->write_queued = 0;
    if (c->closed) return;
    if (status < 0) {
        hard_close(c, uv_strerror(status));
        return;
    }
    cp_conn_flush(c);
    update_reading(c);
}

/* TLS: the replies so far become records in c->tls_out, behind the handshake's. */
static int tls_seal(cp_conn *c)
{
    if (c->out.len) {
        int st = cp_tls_write(c->tls, c->out.data, c->out.len);
        if (st == CP_OK) cp_buf_reset(&c->out);
        else if (st != CP_AGAIN) { /* CP_AGAIN: no replies exist before the handshake is done */
            hard_close(c, cp_tls_errmsg(c->tls));
            return CP_EPROTO;
        }
    }
    if (cp_tls_take(c->tls, &c->tls_out) != CP_OK) {
        hard_close(c, "out of memory for replies");
        return CP_ENOMEM;
    }
    return CP_OK;
}

void cp_conn_flush(cp_conn *c)
{
    if (c->closed || c->writing) return;
    if (c->tls && tls_seal(c) != CP_OK) return;
    cp_buf *o = c->tls ? &c->tls_out : &c->out; /* what goes to the socket */
    if (o->len == 0) return;
    uv_buf_t b = uv_buf_init((char *)o->data, (unsigned)o->len);
    int r = uv_try_write(stream_of(c), &b, 1);
    if (r == UV_EAGAIN || r == UV_ENOSYS) r = 0;
    if (r < 0) {
        hard_close(c, uv_strerror(r));
        return;
    }
    cp_buf_consume(o, (size_t)r);
    if (o->len) { /* the kernel is full: hand the rest to libuv in one owned buffer */
        write_req *w = malloc(sizeof *w + o->len);
        if (!w) {
            hard_close(c, "out of memory for replies");
            return;
        }
        w->c = c;
        w->len = o->len;
        memcpy(w->data, o->data, w->len);
        b = uv_buf_init((char *)w->data, (unsigned)w->len);
        r = uv_write(&w->req, stream_of(c), &b, 1, write_cb);
        if (r != 0) {
            free(w);
            hard_close(c, uv_strerror(r));
            return;
        }
        c->writing = 1;
        c->write_queued = w->len;
    }
    cp_buf_free(&c->out); /* idle connections hold no output buffer */
    cp_buf_free(&c->tls_out);
    update_reading(c);
}

/* ---- input -------------------------------------------------------------------------------- */

/* cloudprof_agent_commands_total / _received_bytes_total of one handled command. */
static void count_command(cp_server *s, int type, size_t bytes)
{
    int k;
    switch (type) {
    case CP_CMD_HANDSHAKE: k = CP_M_CMD_HANDSHAKE; break;
    case CP_CMD_VERSION_LEGACY: k = CP_M_CMD_VERSION; break;
    case CP_CMD_INIT: k = CP_M_CMD_INIT; break;
    case CP_CMD_INIT_LEGACY: k = CP_M_CMD_INIT_LEGACY; break;
    case CP_CMD_DATA: k = CP_M_CMD_DATA; break;
    case CP_CMD_ACK_FLUSH: k = CP_M_CMD_ACK_FLUSH; break;
    case CP_CMD_REPORT: k = CP_M_CMD_REPORT; break;
    case CP_CMD_CLOSE: k = CP_M_CMD_CLOSE; break;
    default: return;
    }
    cp_metrics_inc(s->cfg->metrics, CP_M_AGENT_COMMANDS, (size_t)k);
    cp_metrics_add(s->cfg->metrics, CP_M_AGENT_RECEIVED_BYTES, (size_t)k, bytes);
}

/* Consecutive RCV_DATA commands of one file, written with one writev (the raw log then
 * costs one system call per file and read, not one per ~1 KiB payload). */
typedef struct data_run {
    cp_sfile *f;
    struct iovec v[CP_IOV_MAX];
    int n;
    size_t start, bytes; /* offset of its first command; the commands' wire bytes */
} data_run;

/* Writes the run; returns the offset to go on from: after it, or its start when it must
 * be parsed again after a sync (RETRY), or SIZE_MAX when the connection stopped. */
static size_t run_flush(cp_conn *c, data_run *r, size_t off)
{
    if (!r->n) return off;
    int st = cp_proto_data_run(c, r->f, r->v, r->n);
    size_t next = st == CP_PROTO_RETRY ? r->start : st == CP_PROTO_NEXT ? off : SIZE_MAX;
    if (st != CP_PROTO_RETRY) {
        for (int i = 0; i < r->n; i++) count_command(c->srv, CP_CMD_DATA, 0);
        cp_metrics_add(c->srv->cfg->metrics, CP_M_AGENT_RECEIVED_BYTES, CP_M_CMD_DATA, r->bytes);
    }
    r->n = 0;
    r->bytes = 0;
    r->f = NULL;
    return next;
}

/* Parses and handles complete commands from p[0..n) while the connection is active.
 * Returns the bytes consumed. */
static size_t process(cp_conn *c, const uint8_t *p, size_t n)
{
    size_t off = 0;
    data_run run = {.n = 0};
    while (c->state == CONN_ACTIVE && !c->gated && off < n) {
        if (c->identified && cp_catw_full(c->srv)) { /* the rest waits for the catalog writer */
            c->paused = 1;
            break;
        }
        cp_cmd cmd;
        size_t used;
        int st = cp_wire_parse(p + off, n - off, &cmd, &used);
        if (st == CP_AGAIN) break;
        if (st != CP_OK || cmd.type != CP_CMD_DATA || !c->identified) {
            /* whatever comes next answers after the payloads before it */
            size_t next = run_flush(c, &run, off);
            if (next != off) return next == SIZE_MAX ? off : next;
            if (c->state != CONN_ACTIVE) break;
        }
        if (st != CP_OK) {
            cp_conn_fail(c, "%s (command byte 0x%02x)", cp_wire_strerror(st), p[off]);
            break;
        }
        if (c->tls_ns && !c->identified && (cmd.type == CP_CMD_HANDSHAKE || cmd.type == CP_CMD_INIT_LEGACY) &&
            !cp_srv_tls_ns_ok(c, cmd.type == CP_CMD_HANDSHAKE ? cmd.u.hs.ns : cmd.u.init.ns)) {
            cp_conn_fail(c, "namespace not allowed by the client certificate");
            break;
        }
        if (cmd.type == CP_CMD_DATA && c->identified) {
            cp_sfile *f = run.n && run.f ? run.f : NULL;
            if (!f || run.n == CP_IOV_MAX || memcmp(f->handle, cmd.u.data.handle, 16) != 0) {
                size_t next = run_flush(c, &run, off);
                if (next != off) {
                    off = next == SIZE_MAX ? off : next;
                    return off;
                }
                if (!(f = cp_proto_data_target(c, &cmd))) break;
                if (cp_srv_gate_stream(c, f->kind)) return off; /* in the line: the rest waits */
                run.f = f;
                run.start = off;
            }
            run.v[run.n].iov_base = (void *)cmd.u.data.payload.p;
            run.v[run.n].iov_len = cmd.u.data.payload.n;
            run.n++;
            run.bytes += used;
            off += used;
            continue;
        }
        if (cp_proto_handle(c, &cmd) == CP_PROTO_RETRY) break; /* parsed again later: counted then */
        count_command(c->srv, cmd.type, used);
        off += used;
    }
    size_t next = run_flush(c, &run, off);
    return next == SIZE_MAX ? off : next;
}

static void stash(cp_conn *c, const uint8_t *p, size_t n)
{
    if (!n) return;
    if (!c->in.cap) { /* the usual case: what is left of one read, kept as it is */
        c->in.data = malloc(n);
        if (c->in.data) c->in.cap = n;
    }
    if (cp_buf_append(&c->in, p, n) != CP_OK) hard_close(c, "out of memory for input");
}

/* New bytes from the socket (p aliases the shared read buffer). */
static void input(cp_conn *c, const uint8_t *p, size_t n)
{
    if (c->state == CONN_ACTIVE && c->in.len) {
        /* complete the buffered partial command with just enough new bytes */
        size_t old = c->in.len;
        size_t take = n < CP_WIRE_MAX_CMD ? n : CP_WIRE_MAX_CMD;
        stash(c, p, take);
        if (c->closed) return;
        size_t k = process(c, c->in.data, c->in.len);
        if (k >= old) { /* the partial is done; the rest is still in p */
            cp_buf_reset(&c->in);
            p += k - old;
            n -= k - old;
        } else {
            cp_buf_consume(&c->in, k);
            p += take;
            n -= take;
        }
    }
    if (c->state == CONN_ACTIVE && c->in.len == 0) {
        size_t k = process(c, p, n);
        p += k;
        n -= k;
    }
    if (c->state != CONN_CLOSING) stash(c, p, n); /* a partial command, or input held during a sync */
    if (c->in.len == 0) cp_buf_free(&c->in);
}

/* The peer closed its side (err: UV_EOF, a socket error, or a TLS close_notify). */
static void peer_gone(cp_conn *c, int err)
{
    c->eof = 1;
    update_reading(c);
    if (c->state == CONN_CLOSING) hard_close(c, NULL); /* drained: the peer is gone */
    else if (c->state == CONN_ACTIVE && !c->gated && !c->paused)
        cp_conn_close(c, err != UV_EOF ? uv_strerror(err) : c->in.len ? "peer closed mid-command" : "peer closed");
    /* CONN_WAIT_SYNC, in the gate's line, or paused for the catalog writer: handled when
     * the sync is done, the gate lets it in or the writer caught up (stashed commands come
     * first) */
}

/* A TLS handshake failed, stalled or presented a refused certificate (metrics). */
static void tls_refused(cp_conn *c)
{
    cp_metrics_inc(c->srv->cfg->metrics, CP_M_AGENT_CONNECTIONS_REFUSED, CP_M_REFUSE_TLS);
}

/* Ciphertext from a TLS connection: the handshake goes on inside cp_tls_read; each piece
 * of plaintext it yields is input like a plain socket read. */
static void tls_input(cp_conn *c, const uint8_t *p, size_t n)
{
    cp_server *s = c->srv;
    if (!c->tls_ready && (c->tls_fed += n) > CP_SRV_TLS_HANDSHAKE_MAX) {
        cp_srv_log(s, CP_LOG_WARN, "%s: TLS handshake refused: more than %d bytes", c->peer, CP_SRV_TLS_HANDSHAKE_MAX);
        tls_refused(c);
        hard_close(c, NULL);
        return;
    }
    if (cp_tls_feed(c->tls, p, n) != CP_OK) {
        hard_close(c, "out of memory for TLS input");
        return;
    }
    while (!c->closed && c->state != CONN_CLOSING) {
        long k = cp_tls_read(c->tls, s->tls_buf, CP_SRV_READ_BUF);
        if (!c->tls_ready && cp_tls_done(c->tls) && cp_srv_tls_ready(c) != CP_OK) {
            tls_refused(c);
            cp_conn_close(c, "TLS client certificate refused");
            return;
        }
        if (k == 0) return;
        if (k == CP_TLS_CLOSED) {
            peer_gone(c, UV_EOF);
            return;
        }
        if (k < 0) {
            cp_srv_log(s, CP_LOG_WARN, "%s: %s: %s", c->peer, c->tls_ready ? "TLS error" : "TLS handshake failed",
                       cp_tls_errmsg(c->tls));
            if (!c->tls_ready) tls_refused(c);
            cp_conn_close(c, c->tls_ready ? "TLS error" : "TLS handshake failed"); /* its alert goes first */
            return;
        }
        input(c, s->tls_buf, (size_t)k);
    }
}

static void read_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    cp_conn *c = st->data;
    if (nread == 0 || c->closed) return;
    if (nread < 0) {
        peer_gone(c, (int)nread);
        return;
    }
    cp_server *s = c->srv;
    c->last_io_ms = uv_now(&s->loop);
    if (c->state == CONN_CLOSING) return; /* lingering: discard */
    if (c->tls) tls_input(c, (const uint8_t *)buf->base, (size_t)nread);
    else input(c, (const uint8_t *)buf->base, (size_t)nread);
    cp_conn_flush(c);
    if (!c->closed) cp_srv_gate_account(c);
    if (cp_catw_full(s) && !s->writer_held) { /* the catalog writer is behind: nobody reads on */
        s->writer_held = 1;
        s->last_reader = c;
        cp_srv_reading_resume(s); /* (re-evaluates every connection: they stop) */
    }
    /* its share of the iteration read: the rest waits for the next one */
    if (c->iter_gen != s->iter_gen) c->iter_gen = s->iter_gen, c->iter_read = 0;
    c->iter_read += (uint32_t)nread;
    if (c->iter_read >= CP_SRV_CONN_ITER_MAX && !c->closed && c->state != CONN_CLOSING && !c->held &&
        cp_grow((void **)&s->held, &s->capheld, s->nheld + 1, sizeof *s->held, 64) == CP_OK) {
        c->held = 1;
        s->held[s->nheld++] = c;
    }
    update_reading(c);
}

static void resume(cp_conn *c);

/* Every connection re-evaluated. Those after the last one that read before the writer's
 * queue filled up start first: sockets are polled in the order they are armed, so the
 * same order every time would starve the connections at the end of the list. */
void cp_srv_reading_resume(cp_server *s)
{
    if (!cp_catw_full(s)) s->writer_held = 0;
    /* first the connections that stopped mid-input: their stashed commands go on (until
     * the queue is full again; the rest go on next time) */
    for (cp_conn *k = s->conns, *next; k && !cp_catw_full(s); k = next) {
        next = k->next;
        if (!k->paused) continue;
        k->paused = 0;
        if (!k->closed && k->state == CONN_ACTIVE) resume(k);
    }
    cp_conn *mark = s->last_reader;
    for (cp_conn *k = mark ? mark->next : s->conns; k; k = k->next) update_reading(k);
    for (cp_conn *k = s->conns; mark && k; k = k->next) {
        update_reading(k);
        if (k == mark) break;
    }
}

void cp_srv_release_held(cp_server *s)
{
    for (size_t i = 0; i < s->nheld; i++) {
        cp_conn *k = s->held[i];
        if (!k) continue; /* freed since */
        k->held = 0;
        update_reading(k);
    }
    s->nheld = 0;
    s->iter_gen++;
}

/* Runs the commands stashed while the connection waited for a sync (or in the gate's
 * line). */
static void resume(cp_conn *c)
{
    c->state = CONN_ACTIVE;
    if (c->in.len && !c->gated) {
        size_t k = process(c, c->in.data, c->in.len);
        if (c->state != CONN_CLOSING) cp_buf_consume(&c->in, k);
        if (c->in.len == 0) cp_buf_free(&c->in);
    }
    if (c->state == CONN_ACTIVE && c->eof && !c->gated && !c->paused)
        cp_conn_close(c, c->in.len ? "peer closed mid-command" : "peer closed");
    cp_conn_flush(c);
    if (!c->closed) cp_srv_gate_account(c);
    update_reading(c);
}

void cp_conn_ungate(cp_conn *c)
{
    if (c->closed || c->state != CONN_ACTIVE) { /* a sync or the close sequence goes on by itself */
        update_reading(c);
        return;
    }
    resume(c);
}

/* ---- close sequence ------------------------------------------------------------------------ */

static void conn_release(cp_conn *c)
{
    if (c->in_batch || !c->handle_gone) return; /* the batch or libuv still uses it */
    cp_server *s = c->srv;
    for (size_t i = 0; i < CP_STREAM_KIND_COUNT; i++)
        if (c->slots[i].file) cp_sfile_finalize(c->slots[i].file);
    cp_srv_gate_drop(c);
    cp_srv_asm_finish(c); /* reads the files: before they are freed */
    /* every call of the connection is queued for the catalog writer before this: the
     * restart is complete (unless one was lost) when that transaction commits */
    if (c->identified) cp_catw_restart_done(c);
    cp_srv_buffered(c, 0); /* its decoders go */
    for (size_t i = 0; c->held && i < s->nheld; i++)
        if (s->held[i] == c) s->held[i] = NULL;
    if (s->last_reader == c) s->last_reader = c->prev;
    for (size_t i = 0; i < CP_STREAM_KIND_COUNT; i++) cp_sfile_free(c->slots[i].file);
    while (c->retired) {
        cp_sfile *f = c->retired;
        c->retired = f->next_retired;
        cp_sfile_free(f);
    }
    if (c->prev) c->prev->next = c->next;
    else s->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    __atomic_sub_fetch(&s->nconns, 1, __ATOMIC_RELAXED);
    cp_metrics_set(s->cfg->metrics, CP_M_AGENT_CONNECTIONS_OPEN, 0, (int64_t)s->nconns);
    cp_srv_fd_budget(s);
    cp_rawlog_restart_free(&c->restart);
    cp_proto_free_ident(c);
    cp_buf_free(&c->in);
    cp_buf_free(&c->out);
    cp_tls_free(c->tls);
    cp_buf_free(&c->tls_out);
    free(c->tls_ns);
    free(c);
    cp_srv_maybe_finish(s);
}

static void close_cb(uv_handle_t *h)
{
    cp_conn *c = h->data;
    c->handle_gone = 1;
    conn_release(c);
}

/* Closes the socket now (queued replies are dropped). why != NULL is logged. */
static void hard_close(cp_conn *c, const char *why)
{
    if (c->closed) return;
    if (why) cp_srv_log(c->srv, CP_LOG_INFO, "%s: connection dropped: %s", c->peer, why);
    c->closed = 1;
    c->reading = 0;
    c->state = CONN_CLOSING; /* stops command processing in a caller's loop */
    uv_close((uv_handle_t *)&c->tcp, close_cb);
}

static void shutdown_cb(uv_shutdown_t *req, int status)
{
    cp_conn *c = req->data;
    free(req);
    if (c->closed) return;
    if (status < 0 || c->eof || c->srv->stopping) {
        hard_close(c, NULL);
        return;
    }
    /* our FIN is out; read until the peer's, so unread input cannot turn into an RST
     * that destroys the replies still in flight */
    c->shut = 2;
    update_reading(c);
}

/* Replies are flushed, then the write side is shut down once libuv has written them. */
static void conn_shutdown(cp_conn *c)
{
    if (c->tls && !c->closed && tls_seal(c) == CP_OK) cp_tls_close_notify(c->tls); /* after the replies */
    cp_conn_flush(c);
    if (c->closed) return;
    uv_shutdown_t *req = malloc(sizeof *req);
    if (!req) {
        hard_close(c, NULL);
        return;
    }
    req->data = c;
    c->shut = 1;
    if (uv_shutdown(req, stream_of(c), shutdown_cb) != 0) {
        free(req);
        hard_close(c, NULL);
    }
}

static const char *pod_label(const cp_conn *c) { return c->identified ? c->pod.pod_id : "(not identified)"; }

void cp_conn_close(cp_conn *c, const char *reason)
{
    if (c->state == CONN_CLOSING || c->closed) return;
    if (c->in_batch) { /* the batch still needs its fds: close when it is done */
        if (!c->close_reason) c->close_reason = reason;
        return;
    }
    c->state = CONN_CLOSING;
    c->closing_since = uv_now(&c->srv->loop);
    update_reading(c);
    cp_srv_log(c->srv, CP_LOG_INFO, "%s: pod %s: connection closed (%s)", c->peer, pod_label(c), reason);
    for (size_t i = 0; i < CP_STREAM_KIND_COUNT; i++)
        if (c->slots[i].file) cp_sfile_finalize(c->slots[i].file);
    cp_srv_asm_finish(c); /* every call of the connection goes to the hot tier now */
    if (c->identified) cp_catw_pod(c, 0, cp_now_ms());
    if (cp_conn_has_unsynced(c) && cp_sync_join(c, 0) == CP_OK) return; /* shut down after the sync */
    conn_shutdown(c);
}

void cp_conn_fail(cp_conn *c, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    cp_srv_log(c->srv, CP_LOG_WARN, "%s: pod %s: protocol error: %s; replying 0xFF", c->peer, pod_label(c), msg);
    uint8_t ff = CP_ACK_ERROR;
    cp_conn_reply(c, &ff, 1); /* after every earlier reply, so the agent's ack count stays right */
    cp_metrics_inc(c->srv->cfg->metrics, CP_M_AGENT_ACKS, CP_M_ACK_ERROR);
    cp_conn_close(c, "protocol error");
}

void cp_conn_sync_done(cp_conn *c, int err)
{
    if (c->handle_gone) {
        conn_release(c);
        return;
    }
    if (c->closed) return;
    if (c->state == CONN_CLOSING) { /* the final sync of a close */
        conn_shutdown(c);
        return;
    }
    c->state = CONN_ACTIVE;
    if (c->reply_len) { /* a handshake's or an INIT's reply waited for its catalog rows */
        int refused = err || cp_catw_failed_since(c->srv, c->catw_lo);
        size_t n = c->reply_len;
        c->reply_len = 0;
        c->catw_lo = 0;
        if (refused && c->reply_init) {
            cp_proto_init_fail(c, err ? "fsync failed" : "the catalog did not take the stream file's row");
            return;
        }
        if (refused) {
            if (err) cp_conn_fail(c, "fsync failed: %s", strerror(err));
            else cp_conn_fail(c, "cannot register the pod in the catalog");
            cp_conn_flush(c);
            return;
        }
        cp_conn_reply(c, c->reply, n);
    }
    if (err) {
        cp_conn_fail(c, "fsync failed: %s", strerror(err));
        cp_conn_flush(c);
        return;
    }
    if (c->close_reason) {
        const char *why = c->close_reason;
        c->close_reason = NULL;
        cp_conn_close(c, why);
        return;
    }
    if (c->sync_ack) {
        uint8_t ok = CP_ACK_OK;
        cp_conn_reply(c, &ok, 1);
        cp_srv_ack_flushed(c);
    }
    resume(c);
}

/* ---- accept / sweep ------------------------------------------------------------------------- */

static void peer_name(cp_conn *c)
{
    struct sockaddr_storage ss;
    int len = sizeof ss;
    char ip[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) == 0) {
        if (ss.ss_family == AF_INET6) {
            struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
            uv_ip6_name(a, ip, sizeof ip);
            port = ntohs(a->sin6_port);
            snprintf(c->peer, sizeof c->peer, "[%s]:%d", ip, port);
            return;
        }
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        uv_ip4_name(a, ip, sizeof ip);
        port = ntohs(a->sin_port);
    }
    snprintf(c->peer, sizeof c->peer, "%s:%d", ip, port);
}

static void free_unaccepted(uv_handle_t *h) { free(h->data); }

void cp_conn_accept(cp_server *s, uv_stream_t *listener, int tls)
{
    cp_conn *c = calloc(1, sizeof *c);
    if (!c) {
        cp_srv_log(s, CP_LOG_ERROR, "out of memory accepting a connection");
        return;
    }
    c->srv = s;
    uv_tcp_init(&s->loop, &c->tcp);
    c->tcp.data = c;
    if (uv_accept(listener, stream_of(c)) != 0) {
        uv_close((uv_handle_t *)&c->tcp, free_unaccepted);
        return;
    }
    c->next = s->conns;
    if (s->conns) s->conns->prev = c;
    s->conns = c;
    __atomic_add_fetch(&s->nconns, 1, __ATOMIC_RELAXED); /* /api/v1/health reads it */
    c->id = ++s->next_conn_id;
    cp_metrics_set(s->cfg->metrics, CP_M_AGENT_CONNECTIONS_OPEN, 0, (int64_t)s->nconns);
    for (size_t i = 0; i < CP_STREAM_KIND_COUNT; i++) c->slots[i].last_seq = -1;
    c->accept_ms = cp_now_ms();
    c->last_io_ms = uv_now(&s->loop);
    peer_name(c);
    if (s->cfg->max_connections && s->nconns > s->cfg->max_connections) {
        cp_srv_log(s, CP_LOG_WARN, "%s: refused: %zu connections is the maximum", c->peer, (size_t)s->cfg->max_connections);
        cp_metrics_inc(s->cfg->metrics, CP_M_AGENT_CONNECTIONS_REFUSED, CP_M_REFUSE_MAX_CONNECTIONS);
        c->state = CONN_CLOSING;
        hard_close(c, NULL);
        return;
    }
    if (!cp_srv_fd_budget(s)) { /* this socket leaves too few fds for the files and the reserve */
        cp_srv_fd_shortage(s, "fd reserve reached");
        cp_metrics_inc(s->cfg->metrics, CP_M_AGENT_CONNECTIONS_REFUSED, CP_M_REFUSE_FDS);
        c->state = CONN_CLOSING;
        hard_close(c, NULL);
        return;
    }
    if (tls && cp_srv_tls_start(c) != CP_OK) {
        cp_srv_log(s, CP_LOG_ERROR, "%s: out of memory for a TLS session", c->peer);
        c->state = CONN_CLOSING;
        hard_close(c, NULL);
        return;
    }
    cp_metrics_inc(s->cfg->metrics, CP_M_AGENT_CONNECTIONS_ACCEPTED, 0);
    uv_tcp_nodelay(&c->tcp, 1); /* acks are single bytes: never hold them back */
    uv_tcp_keepalive(&c->tcp, 1, 60);
    cp_srv_log(s, CP_LOG_DEBUG, "%s: connection accepted%s", c->peer, tls ? " (TLS)" : "");
    update_reading(c);
}

void cp_conn_sweep(cp_conn *c, uint64_t now)
{
    if (c->closed || c->in_batch) return;
    if (c->state == CONN_CLOSING) {
        if (now - c->closing_since >= CP_SRV_LINGER_MS) hard_close(c, NULL);
        return;
    }
    if (c->tls && !c->tls_ready && now >= c->tls_deadline) { /* a stalled or trickling handshake */
        cp_srv_log(c->srv, CP_LOG_WARN, "%s: TLS handshake not done within %u ms: closed", c->peer,
                   (unsigned)c->srv->cfg->tls_handshake_ms);
        tls_refused(c);
        hard_close(c, NULL);
        return;
    }
    uint32_t idle = c->srv->cfg->idle_timeout_ms;
    if (idle && !c->gated && !c->paused && now - c->last_io_ms >= idle)
        cp_conn_close(c, "idle timeout"); /* gated or paused: ours */
}
