/* proto.c -- the agent commands (protocol.md §3, matrix §3.11, checklist §8).
 *
 * Each handler either answers (replies are appended to the connection's output and
 * flushed after the read's commands are processed) or fails the connection with 0xFF.
 * Acks: exactly one byte per RCV_DATA and per REQUEST_ACK_FLUSH, in order, only 0x00
 * or 0xFF. Nothing is ever sent unsolicited.
 */
#include "server_internal.h"

#include "common/cp_metrics.h"

#include "common/cp_fsutil.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

static const uint8_t ack_ok = CP_ACK_OK;
_Static_assert(CP_STREAM_KIND_COUNT - CP_STREAM_TRACE == CP_M_STREAM_COUNT, "cp_metrics.c's stream kinds");

/* ---- identification ------------------------------------------------------------------------ */

static int is_blacklisted(const cp_server *s, cp_field ns)
{
    for (size_t i = 0; i < s->cfg->nblacklist; i++) {
        const char *b = s->cfg->blacklist[i];
        if (strlen(b) == ns.n && !memcmp(b, ns.p, ns.n)) return 1;
    }
    return 0;
}

void cp_proto_free_ident(cp_conn *c)
{
    free(c->ident);
    c->ident = NULL;
}

/* Copies a field as a C string into *at (a NUL inside the field ends the catalog text;
 * the raw log path still escapes the full bytes). */
static const char *put_str(char **at, cp_field f)
{
    char *s = *at;
    memcpy(s, f.p, f.n);
    s[f.n] = 0;
    *at += f.n + 1;
    return s;
}

/* Makes the connection a pod restart: its raw log directory and catalog rows. */
static int identify(cp_conn *c, cp_field ns, cp_field service, cp_field pod)
{
    cp_server *s = c->srv;
    char *b = malloc((size_t)ns.n + service.n + pod.n + ns.n + 1 + pod.n + 4);
    if (!b) return CP_ENOMEM;
    c->ident = b;
    c->pod.ns = put_str(&b, ns);
    c->pod.service = put_str(&b, service);
    c->pod.pod = put_str(&b, pod);
    c->pod.pod_id = b;
    memcpy(b, ns.p, ns.n);
    b[ns.n] = '/';
    memcpy(b + ns.n + 1, pod.p, pod.n);
    b[ns.n + 1 + pod.n] = 0;
    int st = cp_rawlog_restart_create(s->cfg->data_dir, (const char *)ns.p, ns.n, (const char *)pod.p, pod.n,
                                      c->accept_ms, &c->restart);
    if (st != CP_OK) {
        cp_srv_log(s, CP_LOG_ERROR, "%s: pod %s: cannot create its raw log directory: %s", c->peer, c->pod.pod_id,
                   st == CP_ELIMIT ? "name too long" : strerror(errno));
        cp_proto_free_ident(c);
        return st;
    }
    c->pod.restart_ms = c->restart.restart_ms;
    c->touched_ms = cp_now_ms();
    /* committed before the agent is answered (the reply waits in a sync batch: callers):
     * recovery finds a restart through its rows, so none may hold data the catalog does
     * not know of */
    if (cp_catw_pod(c, 1, c->touched_ms) != CP_OK) {
        cp_srv_log(s, CP_LOG_ERROR, "%s: pod %s: out of memory for its catalog row", c->peer, c->pod.pod_id);
        cp_rawlog_restart_free(&c->restart);
        cp_proto_free_ident(c);
        return CP_EIO;
    }
    c->identified = 1;
    c->restart_key = cp_srv_restart_key(&c->pod);
    cp_srv_recovery_live(s, c->restart_key, 1); /* recovery leaves it alone while it lives */
    if (cp_srv_asm_open(c) != CP_OK) {
        cp_srv_log(s, CP_LOG_ERROR, "%s: pod %s: out of memory for call assembly", c->peer, c->pod.pod_id);
        return CP_ENOMEM;
    }
    cp_srv_log(s, CP_LOG_INFO, "%s: pod %s (service %s) connected, restart %lld", c->peer, c->pod.pod_id,
               c->pod.service, (long long)c->pod.restart_ms);
    return CP_OK;
}

static int need_identified(cp_conn *c, const cp_cmd *cmd)
{
    if (c->identified) return 1;
    cp_conn_fail(c, "%s before the handshake", cp_wire_cmd_name(cmd->type));
    return 0;
}

/* ---- 0x14 handshake, 0x08 legacy version ------------------------------------------------------ */

static int on_handshake(cp_conn *c, const cp_cmd *cmd)
{
    uint8_t reply[8];
    if (c->identified) {
        cp_conn_fail(c, "second handshake");
        return CP_PROTO_STOP;
    }
    if (cp_srv_disk_refuse(c->srv, "an agent's handshake")) { /* before its directory is made */
        cp_conn_fail(c, "the data directory is below its free-space floor");
        return CP_PROTO_STOP;
    }
    if (is_blacklisted(c->srv, cmd->u.hs.ns)) {
        cp_conn_reply(c, reply, cp_wire_put_version(reply, CP_PROTOCOL_BLACKLISTED));
        cp_metrics_inc(c->srv->cfg->metrics, CP_M_AGENT_CONNECTIONS_BLACKLISTED, 0);
        cp_srv_log(c->srv, CP_LOG_INFO, "%s: namespace %.*s is blacklisted", c->peer, (int)cmd->u.hs.ns.n,
                   (const char *)cmd->u.hs.ns.p);
        cp_conn_close(c, "blacklisted namespace");
        return CP_PROTO_STOP;
    }
    uint64_t lo = cp_catw_gen(c->srv) + 1; /* its first catalog row */
    if (identify(c, cmd->u.hs.ns, cmd->u.hs.service, cmd->u.hs.pod) != CP_OK ||
        cp_sync_join_reply(c, lo, reply, cp_wire_put_version(reply, c->srv->cfg->protocol_version), 0) != CP_OK) {
        cp_conn_fail(c, "cannot register the pod"); /* 0xFF: the agent retries in 10 s */
        return CP_PROTO_STOP;
    }
    return CP_PROTO_NEXT;
}

static int on_version_legacy(cp_conn *c)
{
    uint8_t reply[8];
    cp_conn_reply(c, reply, cp_wire_put_version(reply, CP_PROTOCOL_V1));
    return CP_PROTO_NEXT;
}

/* ---- 0x15 INIT_STREAM_V2 (and the legacy 0x01 that carries one) ------------------------------ */

int cp_proto_init_fail(cp_conn *c, const char *why)
{
    uint8_t reply[16];
    cp_conn_reply(c, reply, cp_wire_put_init_fail(reply));
    cp_srv_log(c->srv, CP_LOG_WARN, "%s: pod %s: INIT refused: %s", c->peer,
               c->identified ? c->pod.pod_id : "(not identified)", why);
    cp_conn_close(c, why);
    return CP_PROTO_STOP;
}

/* A second INIT of a name ends the previous file. Its bytes (and a torn-tail cut) must
 * be durable first, so a dirty file sends the connection through a sync batch and the
 * INIT is handled again afterwards. */
static int rotate(cp_conn *c, cp_stream_slot *slot)
{
    cp_sfile *old = slot->file;
    cp_sfile_finalize(old);
    if (old->raw.dirty) {
        if (cp_sync_join(c, 0) != CP_OK) return cp_proto_init_fail(c, "cannot schedule fsync");
        return CP_PROTO_RETRY;
    }
    cp_srv_log(c->srv, CP_LOG_INFO, "%s: pod %s: %s file %lld rotated (%llu bytes)", c->peer, c->pod.pod_id,
               cp_stream_kind_name(old->kind), (long long)old->seq + 1, (unsigned long long)old->raw.size);
    slot->file = NULL;
    if (old->kind == CP_STREAM_TRACE || old->kind == CP_STREAM_SQL || old->kind == CP_STREAM_XML) {
        /* calls may still point into it (a call spanning the rotation, an older sql ref) */
        old->next_retired = c->retired;
        c->retired = old;
    } else {
        cp_sfile_free(old);
    }
    return CP_PROTO_NEXT;
}

static int on_init(cp_conn *c, const cp_cmd *cmd)
{
    const cp_server_config *cfg = c->srv->cfg;
    uint64_t lo = cp_catw_gen(c->srv) + 1; /* its first catalog row (the pod's, for a legacy INIT) */
    if (cmd->type == CP_CMD_INIT_LEGACY && !c->identified) {
        if (is_blacklisted(c->srv, cmd->u.init.ns)) {
            cp_metrics_inc(c->srv->cfg->metrics, CP_M_AGENT_CONNECTIONS_BLACKLISTED, 0);
            return cp_proto_init_fail(c, "blacklisted namespace");
        }
        if (identify(c, cmd->u.init.ns, cmd->u.init.service, cmd->u.init.pod) != CP_OK)
            return cp_proto_init_fail(c, "cannot register the pod");
    }
    if (!need_identified(c, cmd)) return CP_PROTO_STOP;
    cp_field name = cmd->u.init.stream;
    cp_stream_kind kind = cp_stream_kind_from_name((const char *)name.p, name.n);
    if (kind == CP_STREAM_UNKNOWN) {
        char why[96];
        snprintf(why, sizeof why, "unknown stream name '%.*s'", name.n > 40 ? 40 : (int)name.n, (const char *)name.p);
        return cp_proto_init_fail(c, why);
    }
    cp_stream_slot *slot = &c->slots[kind];
    if (cp_srv_disk_refuse(c->srv, "an INIT"))
        return cp_proto_init_fail(c, "the data directory is below its free-space floor");
    /* bounded files per connection: an INIT loop must not fill the disk and the catalog */
    uint64_t now = uv_now(&c->srv->loop);
    if (now - slot->inits_since >= 60000) {
        slot->inits_since = now;
        slot->inits = 0;
    }
    if (cfg->max_rotations_per_min && ++slot->inits > cfg->max_rotations_per_min)
        return cp_proto_init_fail(c, "more INITs of one stream in a minute than --max-rotations-per-minute allows");
    if (cfg->max_files_per_conn && c->files_opened >= cfg->max_files_per_conn)
        return cp_proto_init_fail(c, "more stream files than --max-files-per-connection allows");
    if (slot->file) {
        int r = rotate(c, slot);
        if (r != CP_PROTO_NEXT) {
            slot->inits--; /* handled again after the sync: counted then */
            return r;
        }
    }
    /* rollingSequenceId: never reuse a file index on this connection (§3.9) */
    int32_t seq = cmd->u.init.seq < 0 ? 0 : cmd->u.init.seq;
    if (slot->last_seq >= 0 && seq <= slot->last_seq) {
        if (slot->last_seq == INT32_MAX) return cp_proto_init_fail(c, "rollingSequenceId overflow");
        seq = slot->last_seq + 1;
    }
    int32_t first_id = cmd->u.init.reset ? 0 : slot->next_word_id;
    if (cmd->u.init.reset && kind == CP_STREAM_DICTIONARY && c->asm_) cp_asm_dict_reset(c->asm_);
    cp_sfile *f;
    if (cp_sfile_open(c, kind, seq, first_id, &f) != CP_OK) return cp_proto_init_fail(c, "cannot open the stream file");
    c->files_opened++;
    slot->file = f;
    slot->last_seq = seq;
    slot->next_word_id = first_id;
    uint8_t reply[36];
    size_t n = cp_wire_put_init_ok(reply, f->handle, cfg->rotation_period_ms[kind], cfg->rotation_size[kind], seq);
    /* answered once the file's row is committed */
    if (cp_sync_join_reply(c, lo, reply, n, 1) != CP_OK) return cp_proto_init_fail(c, "cannot schedule the reply");
    char h[37];
    cp_sfile_handle_str(f, h);
    cp_srv_log(c->srv, CP_LOG_INFO, "%s: pod %s: %s file %lld opened (handle %s, requested seq %d, reset %d)", c->peer,
               c->pod.pod_id, cp_stream_kind_name(kind), (long long)seq + 1, h, cmd->u.init.seq, cmd->u.init.reset);
    return CP_PROTO_NEXT;
}

/* ---- 0x02 RCV_DATA -------------------------------------------------------------------------------- */

static cp_sfile *find_file(cp_conn *c, const uint8_t handle[16])
{
    static const uint8_t null_uuid[16];
    if (!memcmp(handle, null_uuid, 16)) return NULL;
    for (size_t i = 0; i < CP_STREAM_KIND_COUNT; i++) {
        cp_sfile *f = c->slots[i].file;
        if (f && !memcmp(f->handle, handle, 16)) return f;
    }
    return NULL;
}

/* No fd for the file: every open stream file is dirty or pinned (or sockets use the
 * budget). Syncing dirty files makes them closable, so this connection and others with
 * dirty files join a sync batch and the RCV_DATA is handled again afterwards. */
static int on_fd_shortage(cp_conn *c, cp_sfile *f)
{
    if (c->fd_retries >= CP_SRV_FD_RETRIES) {
        c->fd_retries = 0;
        cp_conn_fail(c, "%s file %lld: no file descriptor available (%zu stream files open, %zu connections)",
                     cp_stream_kind_name(f->kind), (long long)f->seq + 1, c->srv->files.open, c->srv->nconns);
        return CP_PROTO_STOP;
    }
    c->fd_retries++;
    if (cp_sync_pressure(c) != CP_OK) {
        cp_conn_fail(c, "cannot schedule fsync: out of memory");
        return CP_PROTO_STOP;
    }
    cp_srv_log(c->srv, CP_LOG_DEBUG, "%s: pod %s: waiting for a sync to free a file descriptor", c->peer,
               c->pod.pod_id);
    return CP_PROTO_RETRY;
}

/* What the connection's decoders hold of records not yet complete. */
static uint64_t conn_buffered(const cp_conn *c)
{
    uint64_t n = 0;
    for (size_t i = 0; i < CP_STREAM_KIND_COUNT; i++)
        if (c->slots[i].file && c->slots[i].file->dec) n += cp_dec_buffered(c->slots[i].file->dec);
    return n;
}

cp_sfile *cp_proto_data_target(cp_conn *c, const cp_cmd *cmd)
{
    if (!need_identified(c, cmd)) return NULL;
    cp_sfile *f = find_file(c, cmd->u.data.handle);
    if (!f) {
        char h[37];
        cp_uuid_str(cmd->u.data.handle, h);
        cp_conn_fail(c, "RCV_DATA for unknown handle %s", h);
        return NULL;
    }
    if (cp_srv_disk_refuse(c->srv, "RCV_DATA")) {
        cp_conn_fail(c, "the data directory is below its free-space floor");
        return NULL;
    }
    return f;
}

static void ack_data(cp_conn *c, size_t n)
{
    uint8_t acks[CP_IOV_MAX];
    if (!n) return;
    memset(acks, CP_ACK_OK, n);
    cp_conn_reply(c, acks, n);
    cp_metrics_add(c->srv->cfg->metrics, CP_M_AGENT_ACKS, CP_M_ACK_OK, n);
}

int cp_proto_data_run(cp_conn *c, cp_sfile *f, const struct iovec *v, int n)
{
    size_t ok = 0;
    int st = cp_sfile_writev(f, v, n, &ok);
    if (st == CP_AGAIN) return on_fd_shortage(c, f);
    c->fd_retries = 0;
    size_t bytes = 0;
    for (size_t i = 0; i < ok; i++) bytes += v[i].iov_len;
    cp_metrics_add(c->srv->cfg->metrics, CP_M_AGENT_STREAM_BYTES, (size_t)f->kind - CP_STREAM_TRACE, bytes);
    if (st != CP_OK) {
        ack_data(c, ok); /* the payloads before the one that failed were stored and decoded */
        cp_conn_fail(c, "%s file %lld rejected: %s", cp_stream_kind_name(f->kind), (long long)f->seq + 1,
                     f->error ? f->error : "?");
        return CP_PROTO_STOP;
    }
    if (cp_srv_buffered(c, conn_buffered(c)) != 0) {
        ack_data(c, ok - 1); /* the last one made the decoders hold too much */
        cp_conn_fail(c, "partial records of %llu bytes: more than its share of --max-buffered (%llu bytes held "
                        "for %zu agents)",
                     (unsigned long long)c->buffered, (unsigned long long)c->srv->buffered, c->srv->nbuffering);
        return CP_PROTO_STOP;
    }
    ack_data(c, ok);
    return CP_PROTO_NEXT;
}

static int on_data(cp_conn *c, const cp_cmd *cmd)
{
    cp_sfile *f = cp_proto_data_target(c, cmd);
    if (!f) return CP_PROTO_STOP;
    struct iovec v = {(void *)cmd->u.data.payload.p, cmd->u.data.payload.n};
    return cp_proto_data_run(c, f, &v, 1);
}

/* ---- 0x11 REQUEST_ACK_FLUSH ------------------------------------------------------------------------ */

/* The latency runs from the loop time of the read that brought the 0x11 (or, when it was
 * stashed behind another sync, the last read before it was handled) to now: the 0x00
 * leaves in this loop iteration. */
void cp_srv_ack_flushed(cp_conn *c)
{
    cp_metrics *m = c->srv->cfg->metrics;
    if (!m) return;
    uint64_t now = uv_now(&c->srv->loop);
    cp_metrics_inc(m, CP_M_AGENT_ACKS, CP_M_ACK_OK);
    cp_metrics_observe(m, CP_M_AGENT_ACK_LATENCY, 0, now > c->flush_since ? (double)(now - c->flush_since) / 1000 : 0);
}

static int on_ack_flush(cp_conn *c, const cp_cmd *cmd)
{
    if (!need_identified(c, cmd)) return CP_PROTO_STOP;
    c->flush_since = c->last_io_ms;
    int64_t now = cp_now_ms();
    if (now - c->touched_ms >= CP_SRV_TOUCH_MS) {
        c->touched_ms = now;
        cp_catw_pod(c, 0, now);
    }
    if (!cp_conn_has_unsynced(c)) { /* everything received is already durable */
        cp_conn_reply(c, &ack_ok, 1);
        cp_srv_ack_flushed(c);
        return CP_PROTO_NEXT;
    }
    if (cp_sync_join(c, 1) != CP_OK) {
        cp_conn_fail(c, "cannot schedule fsync: out of memory");
        return CP_PROTO_STOP;
    }
    return CP_PROTO_STOP; /* the batch answers 0x00 when the data is durable */
}

/* ---- dispatch -------------------------------------------------------------------------------------- */

int cp_proto_handle(cp_conn *c, const cp_cmd *cmd)
{
    switch (cmd->type) {
    case CP_CMD_HANDSHAKE: return on_handshake(c, cmd);
    case CP_CMD_VERSION_LEGACY: return on_version_legacy(c);
    case CP_CMD_INIT:
    case CP_CMD_INIT_LEGACY: return on_init(c, cmd);
    case CP_CMD_DATA: return on_data(c, cmd);
    case CP_CMD_ACK_FLUSH: return on_ack_flush(c, cmd);
    case CP_CMD_REPORT: return need_identified(c, cmd) ? CP_PROTO_NEXT : CP_PROTO_STOP;
    case CP_CMD_CLOSE:
        if (!need_identified(c, cmd)) return CP_PROTO_STOP;
        cp_conn_close(c, "agent sent CLOSE");
        return CP_PROTO_STOP;
    default: /* cp_wire_parse only returns known commands */
        cp_conn_fail(c, "unexpected command 0x%02x", cmd->type);
        return CP_PROTO_STOP;
    }
}
