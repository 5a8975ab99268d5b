/* catwriter.c -- the catalog's write side of ingest (issue 18): on a writer thread when
 * the process has a second CPU, on the loop thread when it has one.
 *
 * What ingest writes into the catalog (pod and stream rows, dictionary words, params,
 * calls, restarts made complete, windows made ahead) the loop turns into *ops*. With a
 * writer thread (`threaded`), an op is copied into the loop's open chunk (256 KiB; no
 * allocation per op) and the loop goes on: chunks are handed over once per loop
 * iteration (cp_catw_publish) or when full, so SQL never runs on the loop thread and
 * never delays an ack. Inline, the op is applied at once (the same code, on the loop
 * thread): with one CPU a second thread only adds copies and switches.
 *
 * The writer applies ops in order into one open transaction and commits CW_COMMIT_MS
 * after its first op (fewer, larger transactions write far fewer WAL pages), or earlier
 * when someone waits for an op (cp_catw_settle).
 *
 * Sync points. Recovery finds a restart and its files through their catalog rows, so a
 * handshake's pod row and an INIT's stream row must be committed before the agent is
 * answered. The connection does not wait on the loop: it joins the fsync batch with the
 * op's number, and the batch settles the catalog up to it (syncbatch.c) before its
 * members hear back; a transaction that failed with such an op in it turns the reply
 * into a refusal (cp_catw_failed_since).
 *
 * Failures. A commit that fails loses its transaction: the connections that had ops in it
 * are reported back, and the loop closes them (their agents reconnect, the recovery
 * worker stores their calls from the raw log). One op that fails (a bad row) only marks
 * its connection's restart incomplete. A restart's completion is applied only if none of
 * its connection's ops failed; either way its key is reported once that transaction
 * ended, so that it leaves the live registry (recover.c) only then.
 *
 * Reports reach the loop through w->rep_* (under mu) and a uv_async, in both modes.
 * Backpressure: the chunks in flight are bounded (cp_catw_full); past the bound the loop
 * stops reading agents (conn.c) until the writer has brought them below half.
 */
#include "server_internal.h"

#include "common/cp_metrics.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Catalog writes are committed at most every CW_COMMIT_MS: every commit rewrites the
 * index pages it touched into the WAL, so fewer, larger transactions write much less.
 * The catalog is not what a flush ack promises (the raw log is), and calls still show
 * up in queries within CW_COMMIT_MS plus one assembly tick. */
#define CW_COMMIT_MS 100
#define CW_CHUNK ((size_t)256 << 10)
#define CW_KEEP_CHUNKS 8 /* spare chunks kept for reuse (warm, no malloc) */
#define CW_ALIGN 16

typedef enum {
    CW_POD_REGISTER,
    CW_POD_TOUCH,
    CW_STREAM_OPEN,
    CW_STREAM_CLOSE,
    CW_DICT,
    CW_PARAM,
    CW_CALL,
    CW_RESTART_COMPLETE,
    CW_WINDOWS
} cw_kind;

/* An op; its strings (and a call's trace) follow it in the same chunk. */
typedef struct cw_op {
    size_t size;             /* of the op and its data, a multiple of CW_ALIGN */
    uint64_t gen;            /* its number: ops are numbered from 1 in the order made */
    uint64_t conn_id;
    uint64_t restart_key;    /* CW_RESTART_COMPLETE */
    int64_t now_ms;          /* -1 on CW_RESTART_COMPLETE: it stays incomplete */
    int kind;
    cp_catalog_pod pod;
    union {
        cp_catalog_stream stream;
        cp_catalog_param param;
        cp_call call;
        struct {
            int32_t id;
            const char *text;
            size_t len;
        } word;
    } u;
} cw_op;

struct cp_catw_chunk {
    cp_catw_chunk *next;
    size_t used, cap;
    _Alignas(CW_ALIGN) char data[];
};

/* The transaction's side: the writer thread's, or the loop's when inline. */
struct cp_catw_state {
    cp_server *s;
    cp_catalog *cat;
    /* connections with ops in the open transaction; connections whose ops failed (until
     * their restart's completion op); restart keys that ended in the transaction */
    uint64_t *txn_conns, *lost_conns, *txn_keys;
    size_t ntxn, captxn, nlost, caplost, nkeys, capkeys;
    /* what the loop must hear next: connections to close, connections whose restart is
     * incomplete now, restart keys done */
    uint64_t *rep_close, *rep_lost, *rep_keys;
    size_t nrep_close, caprep_close, nrep_lost, caprep_lost, nrep_keys, caprep_keys;
    int kick;                /* the recovery worker has work (a restart left incomplete) */
    int txn_open;
    int64_t first_ms;        /* monotonic time of the open transaction's first op */
    int64_t txn_calls;
    uint64_t applied;        /* the last op applied */
    uint64_t last_conn;      /* the connection of the last op (in txn_conns already) */
    uint64_t row_failed;     /* the last pod or stream row a reply waits for that failed */
    uint64_t calls_failed;
};

/* ---- small sets of ids (a transaction's connections: linear scans) ------------------------ */

static int id_has(const uint64_t *v, size_t n, uint64_t id)
{
    for (size_t i = n; i-- > 0;)
        if (v[i] == id) return 1;
    return 0;
}

static void id_add(uint64_t **v, size_t *n, size_t *cap, uint64_t id)
{
    if (!id || id_has(*v, *n, id)) return;
    if (cp_grow((void **)v, cap, *n + 1, sizeof **v, 64) == CP_OK) (*v)[(*n)++] = id;
}

static void id_del(uint64_t *v, size_t *n, uint64_t id)
{
    for (size_t i = 0; i < *n; i++)
        if (v[i] == id) {
            v[i] = v[--*n];
            return;
        }
}

/* Moves src's ids onto the end of dst (dst may repeat them: the loop's handling is idempotent). */
static void id_move(uint64_t **dst, size_t *ndst, size_t *capdst, uint64_t *src, size_t *nsrc)
{
    if (*nsrc && cp_grow((void **)dst, capdst, *ndst + *nsrc, sizeof **dst, 64) == CP_OK) {
        memcpy(*dst + *ndst, src, *nsrc * sizeof *src);
        *ndst += *nsrc;
    }
    *nsrc = 0;
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- applying ops (the writer thread, or the loop when inline) ---------------------------- */

static void log_err(cp_catw_state *x, const char *what)
{
    cp_srv_log(x->s, CP_LOG_ERROR, "catalog: %s: %s", what, cp_catalog_errmsg(x->cat));
}

static void apply(cp_catw_state *x, const cw_op *op)
{
    int st = CP_OK;
    if (!x->txn_open) {
        x->txn_open = 1;
        x->first_ms = mono_ms();
    }
    /* ops come in runs of one connection's: the set is searched only when it changes */
    if (op->conn_id != x->last_conn) {
        id_add(&x->txn_conns, &x->ntxn, &x->captxn, op->conn_id);
        x->last_conn = op->conn_id;
    }
    switch (op->kind) {
    case CW_POD_REGISTER: st = cp_catalog_pod_register(x->cat, &op->pod, op->now_ms); break;
    case CW_POD_TOUCH: st = cp_catalog_pod_touch(x->cat, &op->pod, op->now_ms); break;
    case CW_STREAM_OPEN: st = cp_catalog_stream_open(x->cat, &op->u.stream); break;
    case CW_STREAM_CLOSE: st = cp_catalog_stream_close(x->cat, &op->u.stream); break;
    case CW_DICT: st = cp_catalog_dict_put(x->cat, &op->pod, op->u.word.id, op->u.word.text, op->u.word.len); break;
    case CW_PARAM: st = cp_catalog_param_put(x->cat, &op->pod, &op->u.param); break;
    case CW_CALL:
        st = cp_catalog_call_put(x->cat, &op->u.call);
        if (st == CP_OK) {
            x->txn_calls++;
        } else {
            cp_metrics_gauge_add(x->s->cfg->metrics, CP_M_HOT_QUEUE, CP_M_HOT_TRANSACTION, -1);
            cp_metrics_inc(x->s->cfg->metrics, CP_M_CALLS_STORE_FAILURES, 0);
            if (x->calls_failed++ % 1000 == 0) log_err(x, "cannot store a call");
        }
        break;
    case CW_RESTART_COMPLETE:
        /* complete only if none of its connection's ops ever failed */
        if (op->now_ms >= 0 && !id_has(x->lost_conns, x->nlost, op->conn_id))
            st = cp_catalog_restart_complete(x->cat, &op->pod);
        else
            x->kick = 1;
        id_del(x->lost_conns, &x->nlost, op->conn_id);
        id_add(&x->txn_keys, &x->nkeys, &x->capkeys, op->restart_key);
        if (st != CP_OK) x->kick = 1; /* it stays incomplete: recovery finishes it */
        break;
    case CW_WINDOWS:
        if (cp_catalog_windows_prepare(x->cat, op->now_ms) != CP_OK) log_err(x, "hot windows");
        break;
    default: break;
    }
    if (st != CP_OK && op->kind != CW_CALL) log_err(x, "write");
    /* a reply waits for these rows: it becomes a refusal (cp_catw_failed_since) */
    if (st != CP_OK && (op->kind == CW_POD_REGISTER || op->kind == CW_STREAM_OPEN)) x->row_failed = op->gen;
    /* one bad row must not stop the others: the raw log keeps the bytes, the restart
     * stays incomplete and recovery stores them later */
    if (st != CP_OK && op->conn_id && op->kind != CW_RESTART_COMPLETE) {
        id_add(&x->lost_conns, &x->nlost, &x->caplost, op->conn_id);
        id_add(&x->rep_lost, &x->nrep_lost, &x->caprep_lost, op->conn_id);
    }
    x->applied = op->gen;
}

/* Ends the transaction: CP_OK or the commit's failure. */
static int commit(cp_catw_state *x)
{
    cp_metrics *m = x->s->cfg->metrics;
    int st = cp_catalog_commit(x->cat);
    if (st != CP_OK) {
        log_err(x, "commit");
        for (size_t i = 0; i < x->ntxn; i++) {
            id_add(&x->lost_conns, &x->nlost, &x->caplost, x->txn_conns[i]);
            id_add(&x->rep_close, &x->nrep_close, &x->caprep_close, x->txn_conns[i]);
        }
        x->kick = 1;
    }
    cp_metrics_add(m, st == CP_OK ? CP_M_CALLS_STORED : CP_M_CALLS_STORE_FAILURES, 0, (uint64_t)x->txn_calls);
    cp_metrics_gauge_add(m, CP_M_HOT_QUEUE, CP_M_HOT_TRANSACTION, -x->txn_calls);
    /* the restarts that ended in it leave the live registry, whatever the outcome */
    id_move(&x->rep_keys, &x->nrep_keys, &x->caprep_keys, x->txn_keys, &x->nkeys);
    x->ntxn = 0;
    x->last_conn = 0;
    x->txn_calls = 0;
    x->txn_open = 0;
    return st;
}

/* Under mu: the reports go to the loop (woken by the caller after unlocking). 1 if any. */
static int hand_reports(cp_catw *w, cp_catw_state *x)
{
    int any = x->nrep_close || x->nrep_lost || x->nrep_keys || x->kick;
    id_move(&w->rep_close, &w->nrep_close, &w->caprep_close, x->rep_close, &x->nrep_close);
    id_move(&w->rep_lost, &w->nrep_lost, &w->caprep_lost, x->rep_lost, &x->nrep_lost);
    id_move(&w->rep_keys, &w->nrep_keys, &w->caprep_keys, x->rep_keys, &x->nrep_keys);
    if (x->kick) w->rep_kick = 1;
    x->kick = 0;
    return any;
}

/* Under mu: the transaction ended with st; every op applied is done. */
static int settled(cp_catw *w, cp_catw_state *x, int st)
{
    w->done = x->applied;
    if (x->row_failed > w->fail_hi) w->fail_hi = x->row_failed;
    if (st != CP_OK) w->fail_hi = x->applied;
    pthread_cond_broadcast(&w->done_cv);
    return hand_reports(w, x);
}

/* Commits the open transaction and tells whoever waits (any thread of the mode's owner). */
static void commit_and_report(cp_catw *w)
{
    cp_catw_state *x = w->x;
    int st = x->txn_open ? commit(x) : CP_OK;
    pthread_mutex_lock(&w->mu);
    int any = settled(w, x, st);
    pthread_mutex_unlock(&w->mu);
    if (any) uv_async_send(&w->async);
}

/* ---- the writer thread ------------------------------------------------------------------- */

static int commit_due(const cp_catw *w, const cp_catw_state *x, int64_t now)
{
    if (!x->txn_open) return 0;
    return now - x->first_ms >= CW_COMMIT_MS || w->stop || (w->want > w->done && x->applied >= w->want);
}

static void wait_until(cp_catw *w, int64_t at_ms)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t left = at_ms - mono_ms();
    if (left <= 0) return;
    ts.tv_nsec += (long)(left % 1000) * 1000000L;
    ts.tv_sec += left / 1000 + ts.tv_nsec / 1000000000L;
    ts.tv_nsec %= 1000000000L;
    pthread_cond_timedwait(&w->cv, &w->mu, &ts);
}

/* The bytes in flight change under mu; the loop also reads them without it (metrics, the gate). */
static uint64_t bytes_add(cp_catw *w, int64_t d)
{
    return __atomic_add_fetch(&w->bytes, (uint64_t)d, __ATOMIC_RELAXED);
}

/* Back to the spares (a few, for reuse) or freed; under mu. */
static void chunk_release(cp_catw *w, cp_catw_chunk *ch)
{
    bytes_add(w, -(int64_t)ch->cap);
    if (ch->cap == CW_CHUNK && w->nspare < CW_KEEP_CHUNKS) {
        ch->next = w->spare;
        w->spare = ch;
        w->nspare++;
    } else {
        free(ch);
    }
}

static void *writer_main(void *arg)
{
    cp_catw *w = arg;
    cp_catw_state *x = w->x;
    pthread_setname_np(pthread_self(), "cp-catwriter"); /* top -H, perf */
    pthread_mutex_lock(&w->mu);
    for (;;) {
        while (!w->head && !(w->stop && !x->txn_open) && !commit_due(w, x, mono_ms())) {
            w->idle = 1;
            if (x->txn_open) wait_until(w, x->first_ms + CW_COMMIT_MS);
            else pthread_cond_wait(&w->cv, &w->mu);
            w->idle = 0;
        }
        cp_catw_chunk *batch = w->head;
        w->head = NULL;
        w->tail = &w->head;
        pthread_mutex_unlock(&w->mu);

        /* each chunk leaves the count once applied, so the bound is on what waits */
        while (batch) {
            cp_catw_chunk *ch = batch;
            batch = ch->next;
            for (size_t off = 0; off < ch->used;) {
                const cw_op *op = (const cw_op *)(ch->data + off);
                apply(x, op);
                off += op->size;
            }
            pthread_mutex_lock(&w->mu);
            chunk_release(w, ch);
            if (w->full && __atomic_load_n(&w->bytes, __ATOMIC_RELAXED) <= w->limit / 2) {
                __atomic_store_n(&w->full, 0, __ATOMIC_RELAXED);
                w->rep_unfull = 1;
                uv_async_send(&w->async);
            }
            pthread_mutex_unlock(&w->mu);
        }

        pthread_mutex_lock(&w->mu);
        int due = commit_due(w, x, mono_ms());
        if (due) {
            pthread_mutex_unlock(&w->mu); /* the loop may queue meanwhile */
            int st = commit(x);
            pthread_mutex_lock(&w->mu);
            if (settled(w, x, st)) uv_async_send(&w->async);
        } else if (x->nrep_lost && hand_reports(w, x)) { /* a failed op: its connection hears it now */
            uv_async_send(&w->async);
        }
        if (w->stop && !w->head && !x->txn_open) break;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* ---- making ops (loop thread) ---------------------------------------------------------------- */

static size_t align_up(size_t n) { return (n + CW_ALIGN - 1) & ~(size_t)(CW_ALIGN - 1); }

/* The open chunk goes to the writer (under mu). */
static void publish_locked(cp_catw *w)
{
    cp_catw_chunk *ch = w->cur;
    if (!ch || !ch->used) return;
    w->cur = NULL;
    ch->next = NULL;
    *w->tail = ch;
    w->tail = &ch->next;
    w->published = w->gen;
    if (w->idle) pthread_cond_signal(&w->cv);
}

/* Room for `need` bytes in the open chunk, starting a new one when it is full. */
static void *chunk_room(cp_catw *w, size_t need)
{
    cp_catw_chunk *ch = w->cur;
    if (ch && ch->cap - ch->used >= need) return ch->data + ch->used;
    pthread_mutex_lock(&w->mu);
    publish_locked(w);
    if (w->cur) { /* an empty chunk too small for this op */
        bytes_add(w, -(int64_t)w->cur->cap);
        free(w->cur);
        w->cur = NULL;
    }
    if (need <= CW_CHUNK && w->spare) {
        ch = w->spare;
        w->spare = ch->next;
        w->nspare--;
    } else {
        size_t cap = need > CW_CHUNK ? need : CW_CHUNK;
        ch = malloc(sizeof *ch + cap);
        if (ch) ch->cap = cap;
    }
    if (ch) {
        ch->used = 0;
        ch->next = NULL;
        w->cur = ch;
        if (w->limit && bytes_add(w, (int64_t)ch->cap) > w->limit) __atomic_store_n(&w->full, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&w->mu);
    return ch ? ch->data : NULL;
}

/* Room for the inline mode's one op at a time. */
static void *scratch_room(cp_catw *w, size_t need)
{
    if (cp_buf_reserve(&w->scratch, need) != CP_OK) return NULL;
    return w->scratch.data;
}

static size_t sz(const char *p, size_t n) { return p ? n + 1 : 0; }
static size_t szs(const char *p) { return p ? strlen(p) + 1 : 0; }

static const char *put(char **at, const char *p, size_t n)
{
    if (!p) return NULL;
    char *d = *at;
    memcpy(d, p, n);
    d[n] = 0;
    *at = d + n + 1;
    return d;
}
static const char *puts0(char **at, const char *p) { return p ? put(at, p, strlen(p)) : NULL; }

static size_t pod_size(const cp_catalog_pod *p)
{
    return p ? szs(p->ns) + szs(p->service) + szs(p->pod) + szs(p->pod_id) : 0;
}

/* A new op with `extra` bytes of data after it (and its pod's strings); *at is where the
 * data goes. NULL: no memory. */
static cw_op *op_new(cp_server *s, uint64_t conn_id, int kind, size_t extra, const cp_catalog_pod *pod, char **at)
{
    cp_catw *w = &s->catw;
    size_t need = align_up(sizeof(cw_op) + extra + pod_size(pod));
    cw_op *op = w->threaded ? chunk_room(w, need) : scratch_room(w, need);
    if (!op) return NULL;
    memset(op, 0, sizeof *op);
    op->size = need;
    op->kind = kind;
    op->conn_id = conn_id;
    *at = (char *)(op + 1);
    if (pod) {
        op->pod.ns = puts0(at, pod->ns);
        op->pod.service = puts0(at, pod->service);
        op->pod.pod = puts0(at, pod->pod);
        op->pod.pod_id = puts0(at, pod->pod_id);
        op->pod.restart_ms = pod->restart_ms;
    }
    return op;
}

/* The op is made: queued, or applied now. */
static void op_done(cp_server *s, cw_op *op)
{
    cp_catw *w = &s->catw;
    op->gen = ++w->gen;
    if (w->threaded) w->cur->used += op->size;
    else apply(w->x, op);
}

/* The op could not be made (no memory): the connection's calls go to recovery. */
static int lost(cp_conn *c)
{
    if (c) c->hot_lost = 1;
    return CP_ENOMEM;
}

int cp_catw_pod(cp_conn *c, int register_it, int64_t now_ms)
{
    char *at;
    cw_op *op = op_new(c->srv, c->id, register_it ? CW_POD_REGISTER : CW_POD_TOUCH, 0, &c->pod, &at);
    if (!op) return lost(c);
    op->now_ms = now_ms;
    op_done(c->srv, op);
    return CP_OK;
}

int cp_catw_stream(cp_conn *c, const cp_catalog_stream *row, int open)
{
    size_t n = szs(row->stream) + szs(row->handle) + szs(row->status) + szs(row->error) + szs(row->path);
    char *at;
    cw_op *op = op_new(c->srv, c->id, open ? CW_STREAM_OPEN : CW_STREAM_CLOSE, n, row->pod, &at);
    if (!op) return lost(c);
    op->u.stream = *row;
    op->u.stream.pod = &op->pod;
    op->u.stream.stream = puts0(&at, row->stream);
    op->u.stream.handle = puts0(&at, row->handle);
    op->u.stream.status = puts0(&at, row->status);
    op->u.stream.error = puts0(&at, row->error);
    op->u.stream.path = puts0(&at, row->path);
    op_done(c->srv, op);
    return CP_OK;
}

int cp_catw_word(cp_conn *c, int32_t id, const char *text, size_t len)
{
    char *at;
    cw_op *op = op_new(c->srv, c->id, CW_DICT, len + 1, &c->pod, &at);
    if (!op) return lost(c);
    op->u.word.id = id;
    op->u.word.text = put(&at, text, len);
    op->u.word.len = len;
    op_done(c->srv, op);
    return CP_OK;
}

int cp_catw_param(cp_conn *c, const cp_catalog_param *prm)
{
    char *at;
    cw_op *op = op_new(c->srv, c->id, CW_PARAM, sz(prm->name, prm->name_len) + sz(prm->signature, prm->signature_len),
                       &c->pod, &at);
    if (!op) return lost(c);
    op->u.param = *prm;
    op->u.param.name = put(&at, prm->name, prm->name_len);
    op->u.param.signature = put(&at, prm->signature, prm->signature_len);
    op_done(c->srv, op);
    return CP_OK;
}

int cp_catw_call(cp_conn *c, const cp_call *call)
{
    size_t n = sz(call->ns, call->ns_len) + sz(call->service, call->service_len) + sz(call->pod, call->pod_len) +
               sz(call->method, call->method_len) + sz(call->thread, call->thread_len) +
               sz(call->params_json, call->params_json_len) + (call->trace ? call->trace_len : 0) +
               szs(call->trace_reason);
    char *at;
    cw_op *op = op_new(c->srv, c->id, CW_CALL, n, NULL, &at);
    if (!op) return lost(c);
    op->u.call = *call;
    op->u.call.ns = put(&at, call->ns, call->ns_len);
    op->u.call.service = put(&at, call->service, call->service_len);
    op->u.call.pod = put(&at, call->pod, call->pod_len);
    op->u.call.method = put(&at, call->method, call->method_len);
    op->u.call.thread = put(&at, call->thread, call->thread_len);
    op->u.call.params_json = put(&at, call->params_json, call->params_json_len);
    op->u.call.trace_reason = puts0(&at, call->trace_reason);
    if (call->trace) {
        memcpy(at, call->trace, call->trace_len);
        op->u.call.trace = (const uint8_t *)at;
    }
    /* counted as stored once its transaction commits */
    cp_metrics_gauge_add(c->srv->cfg->metrics, CP_M_HOT_QUEUE, CP_M_HOT_TRANSACTION, 1);
    op_done(c->srv, op);
    return CP_OK;
}

void cp_catw_restart_done(cp_conn *c)
{
    char *at;
    cw_op *op = op_new(c->srv, c->id, CW_RESTART_COMPLETE, 0, &c->pod, &at);
    if (!op) { /* it stays incomplete: recovery finishes it once the key leaves the registry */
        cp_srv_recovery_live(c->srv, c->restart_key, 0);
        cp_srv_recovery_kick(c->srv);
        return;
    }
    op->restart_key = c->restart_key;
    if (c->hot_lost) op->now_ms = -1; /* a connection that lost calls leaves it incomplete */
    op_done(c->srv, op);
}

void cp_catw_windows(cp_server *s, int64_t now_ms)
{
    char *at;
    cw_op *op = op_new(s, 0, CW_WINDOWS, 0, NULL, &at);
    if (!op) return;
    op->now_ms = now_ms;
    op_done(s, op);
}

/* ---- the loop's side of the pipeline ----------------------------------------------------------- */

void cp_catw_publish(cp_server *s)
{
    cp_catw *w = &s->catw;
    if (w->threaded) {
        if (w->published == w->gen) return;
        pthread_mutex_lock(&w->mu);
        publish_locked(w);
        pthread_mutex_unlock(&w->mu);
    } else if (w->x->txn_open && mono_ms() - w->x->first_ms >= CW_COMMIT_MS) {
        commit_and_report(w);
    }
}

uint64_t cp_catw_gen(const cp_server *s) { return s->catw.gen; }

int cp_catw_threaded(const cp_server *s) { return s->catw.threaded; }

void cp_catw_settle(cp_server *s, uint64_t gen)
{
    cp_catw *w = &s->catw;
    if (!w->threaded) { /* the loop thread: every op is applied */
        if (w->done < gen) commit_and_report(w);
        return;
    }
    pthread_mutex_lock(&w->mu);
    if (w->want < gen) w->want = gen;
    if (w->done < gen && w->idle) pthread_cond_signal(&w->cv);
    while (w->done < gen && w->started) pthread_cond_wait(&w->done_cv, &w->mu);
    pthread_mutex_unlock(&w->mu);
}

int cp_catw_failed_since(cp_server *s, uint64_t gen)
{
    cp_catw *w = &s->catw;
    pthread_mutex_lock(&w->mu);
    int failed = gen && w->fail_hi >= gen;
    pthread_mutex_unlock(&w->mu);
    return failed;
}

int cp_catw_full(const cp_server *s) { return __atomic_load_n(&s->catw.full, __ATOMIC_RELAXED); }

/* The writer's reports, on the loop. */
static void on_async(uv_async_t *h)
{
    cp_server *s = h->data;
    cp_catw *w = &s->catw;
    pthread_mutex_lock(&w->mu);
    uint64_t *closev = w->rep_close, *lostv = w->rep_lost, *keys = w->rep_keys;
    size_t nclose = w->nrep_close, nlost = w->nrep_lost, nkeys = w->nrep_keys;
    int kick = w->rep_kick, unfull = w->rep_unfull;
    w->rep_close = w->rep_lost = w->rep_keys = NULL;
    w->nrep_close = w->caprep_close = w->nrep_lost = w->caprep_lost = w->nrep_keys = w->caprep_keys = 0;
    w->rep_kick = w->rep_unfull = 0;
    pthread_mutex_unlock(&w->mu);
    size_t closed = 0;
    for (cp_conn *c = s->conns, *next; c && (nclose || nlost); c = next) {
        next = c->next;
        if (id_has(lostv, nlost, c->id)) c->hot_lost = 1;
        if (!id_has(closev, nclose, c->id) || c->closed || c->state == CONN_CLOSING) continue;
        c->hot_lost = 1;
        cp_conn_close(c, "the hot tier could not store its calls; they will be recovered from the raw log");
        closed++;
    }
    if (closed)
        cp_srv_log(s, CP_LOG_WARN, "hot tier: a commit failed: %zu connections closed, their calls are recovered from "
                                   "the raw log once the catalog takes writes again", closed);
    for (size_t i = 0; i < nkeys; i++) cp_srv_recovery_live(s, keys[i], 0);
    /* a pass kicked while the incomplete restarts were still live skipped them */
    if (kick || (nkeys && s->recovery_due)) {
        s->recovery_due = 0;
        cp_srv_recovery_kick(s);
    }
    if (unfull) cp_srv_reading_resume(s);
    free(closev);
    free(lostv);
    free(keys);
}

/* ---- start and stop ----------------------------------------------------------------------------- */

int cp_catw_mode_parse(const char *v, int *mode)
{
    if (!strcmp(v, "auto")) *mode = CP_CATW_AUTO;
    else if (!strcmp(v, "thread")) *mode = CP_CATW_THREAD;
    else if (!strcmp(v, "inline")) *mode = CP_CATW_INLINE;
    else return CP_EINVAL;
    return CP_OK;
}

/* auto: a thread when this process may run on two CPUs or more. */
static int want_thread(int mode)
{
    if (mode != CP_CATW_AUTO) return mode == CP_CATW_THREAD;
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return 0;
    return CPU_COUNT(&set) >= 2;
}

int cp_catw_start(cp_server *s, uint64_t limit, int mode)
{
    cp_catw *w = &s->catw;
    memset(w, 0, sizeof *w);
    w->tail = &w->head;
    w->limit = limit;
    w->threaded = want_thread(mode);
    w->x = calloc(1, sizeof *w->x);
    if (!w->x) return CP_ENOMEM;
    w->x->s = s;
    w->x->cat = s->catalog;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&w->done_cv, NULL);
    w->inited = 1;
    w->async.data = s;
    if (uv_async_init(&s->loop, &w->async, on_async) != 0) return CP_EIO;
    uv_unref((uv_handle_t *)&w->async); /* the loop ends when the rest is closed */
    w->started = 1;
    if (w->threaded && pthread_create(&w->th, NULL, writer_main, w) != 0) {
        w->started = 0;
        return CP_EIO;
    }
    return CP_OK;
}

void cp_catw_stop(cp_server *s)
{
    cp_catw *w = &s->catw;
    if (!w->started) return;
    if (w->threaded) {
        pthread_mutex_lock(&w->mu);
        publish_locked(w);
        w->stop = 1;
        pthread_cond_signal(&w->cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->th, NULL);
    } else {
        commit_and_report(w);
    }
    pthread_mutex_lock(&w->mu);
    w->started = 0;
    pthread_cond_broadcast(&w->done_cv);
    pthread_mutex_unlock(&w->mu);
    on_async(&w->async); /* the last reports */
}

static void chunks_free(cp_catw_chunk *ch)
{
    while (ch) {
        cp_catw_chunk *next = ch->next;
        free(ch);
        ch = next;
    }
}

void cp_catw_free(cp_server *s)
{
    cp_catw *w = &s->catw;
    if (!w->inited) return;
    free(w->cur);
    chunks_free(w->head);
    chunks_free(w->spare);
    cp_buf_free(&w->scratch);
    free(w->rep_close);
    free(w->rep_lost);
    free(w->rep_keys);
    if (w->x) {
        free(w->x->txn_conns);
        free(w->x->lost_conns);
        free(w->x->txn_keys);
        free(w->x->rep_close);
        free(w->x->rep_lost);
        free(w->x->rep_keys);
        free(w->x);
    }
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->done_cv);
    w->inited = 0;
}
