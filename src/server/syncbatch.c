/* syncbatch.c -- group commit (storage.md ingest rule 2).
 *
 * A connection that needs durability (a REQUEST_ACK_FLUSH, a rotation, a close, or a
 * write that found no free fd -- see cp_sync_pressure) joins the pending batch with the
 * fds of its files written since its last sync and the directories whose new entries
 * are not yet durable, and stops processing input. A handshake or an INIT joins too: its
 * reply waits until its catalog rows are committed (cp_sync_join_reply). Once per loop
 * iteration (the check phase) the pending batch goes to the threadpool if no batch
 * is in flight; a worker fdatasyncs every fd and fsyncs every directory (or, for a batch
 * of 8 or more on the data directory's file system, runs one syncfs); back on the loop
 * each member gets its answer. So the fsyncs of all connections that flushed while one
 * batch ran are shared by the next batch. A batch with a member waiting for catalog rows
 * also waits, on the worker, for the catalog writer to commit them (inline: they are
 * committed on the loop before the batch is handed over).
 *
 * The worker only reads the batch's own copies (fds, paths). A member connection is
 * never freed while it is in a batch (conn.c defers that), and the fds handed to the
 * worker are pinned in the fd cache (cp_rawlog_file_sync_begin), so no other
 * connection's open can close or reuse them; they are unpinned on the loop thread
 * before the members hear the result.
 */
#include "server_internal.h"

#include "common/cp_metrics.h"

#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* Batches keep their arrays between uses, but not when a burst made them large. */
#define KEEP_MEMBERS 1024

void cp_sync_init(cp_server *s)
{
    memset(s->batches, 0, sizeof s->batches);
    for (int i = 0; i < 2; i++) s->batches[i].srv = s;
    s->pending = &s->batches[0];
    s->inflight = NULL;
}

static void batch_release(cp_sync_batch *b)
{
    free(b->members);
    free(b->fds);
    free(b->files);
    cp_buf_free(&b->dirs);
    b->members = NULL;
    b->fds = NULL;
    b->files = NULL;
    b->nmembers = b->cap_members = b->nfds = b->cap_fds = b->cap_files = 0;
}

void cp_sync_free(cp_server *s)
{
    for (int i = 0; i < 2; i++) batch_release(&s->batches[i]);
}

int cp_conn_has_unsynced(const cp_conn *c)
{
    if (c->restart.unsynced_dirs.len) return 1;
    for (size_t i = 0; i < CP_STREAM_KIND_COUNT; i++)
        if (c->slots[i].file && c->slots[i].file->raw.dirty) return 1;
    return 0;
}

/* Makes room for one more member and its files. */
static int batch_reserve(cp_sync_batch *b)
{
    size_t need = b->nfds + CP_STREAM_KIND_COUNT;
    if (cp_grow((void **)&b->members, &b->cap_members, b->nmembers + 1, sizeof *b->members, 16) != CP_OK ||
        cp_grow((void **)&b->fds, &b->cap_fds, need, sizeof *b->fds, 16) != CP_OK ||
        cp_grow((void **)&b->files, &b->cap_files, need, sizeof *b->files, 16) != CP_OK)
        return CP_ENOMEM;
    return CP_OK;
}

int cp_sync_join(cp_conn *c, int ack)
{
    cp_sync_batch *b = c->srv->pending;
    if (batch_reserve(b) != CP_OK || cp_rawlog_restart_take_dirs(&c->restart, &b->dirs) != CP_OK) return CP_ENOMEM;
    for (size_t i = 0; i < CP_STREAM_KIND_COUNT; i++) {
        cp_sfile *f = c->slots[i].file;
        int fd = f ? cp_rawlog_file_sync_begin(&f->raw) : -1; /* pins the fd, marks the file clean */
        if (fd < 0) continue;
        b->fds[b->nfds] = fd;
        b->files[b->nfds++] = &f->raw;
    }
    b->members[b->nmembers++] = c;
    c->in_batch = 1;
    c->sync_ack = (uint8_t)ack;
    if (c->state == CONN_ACTIVE) c->state = CONN_WAIT_SYNC;
    return CP_OK;
}

int cp_sync_join_reply(cp_conn *c, uint64_t lo, const uint8_t *reply, size_t n, int init)
{
    if (n > sizeof c->reply) return CP_EINVAL;
    if (cp_sync_join(c, 0) != CP_OK) return CP_ENOMEM;
    memcpy(c->reply, reply, n);
    c->reply_len = (uint8_t)n;
    c->reply_init = (uint8_t)init;
    c->catw_lo = lo;
    cp_sync_batch *b = c->srv->pending;
    uint64_t gen = cp_catw_gen(c->srv);
    if (b->catw_gen < gen) b->catw_gen = gen;
    return CP_OK;
}

static size_t dirty_files(const cp_conn *c)
{
    size_t n = 0;
    for (size_t i = 0; i < CP_STREAM_KIND_COUNT; i++)
        if (c->slots[i].file && c->slots[i].file->raw.dirty) n++;
    return n;
}

/* A connection may be made to sync when it is parsing commands (not closing, not already
 * in a batch). Joining pauses it like a 0x11 would, without the ack byte. */
int cp_sync_pressure(cp_conn *c)
{
    size_t files = dirty_files(c);
    if (cp_sync_join(c, 0) != CP_OK) return CP_ENOMEM;
    for (cp_conn *v = c->srv->conns; v && files < CP_SRV_PRESSURE_FILES; v = v->next) {
        if (v == c || v->state != CONN_ACTIVE || v->in_batch || v->closed) continue;
        size_t n = dirty_files(v);
        if (n == 0) continue;
        if (cp_sync_join(v, 0) != CP_OK) break; /* c is in: it will retry */
        files += n;
    }
    return CP_OK;
}

/* Threadpool: the only code of this file that runs off the loop thread. */
static void work_cb(uv_work_t *w)
{
    cp_sync_batch *b = (cp_sync_batch *)w;
    cp_metrics *m = b->srv->cfg->metrics; /* atomics: fine from this thread */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (cp_rawlog_sync_all(b->srv->fs_fd, b->fds, b->nfds, b->dirs.data, b->dirs.len) != CP_OK) b->err = errno;
    /* the writer thread commits the rows a member's reply waits for (inline: done) */
    if (b->catw_gen && cp_catw_threaded(b->srv)) cp_catw_settle(b->srv, b->catw_gen);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    cp_metrics_inc(m, CP_M_FSYNC_BATCHES, 0);
    if (b->err) cp_metrics_inc(m, CP_M_FSYNC_FAILURES, 0);
    cp_metrics_observe(m, CP_M_FSYNC_DURATION, 0, (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
}

/* Members that wait for an fd resume first, so that busy connections resumed before
 * them cannot take the freed fds again and again. */
static void retriers_first(cp_sync_batch *b)
{
    size_t k = 0;
    for (size_t i = 0; i < b->nmembers; i++) {
        if (!b->members[i]->fd_retries) continue;
        cp_conn *t = b->members[k];
        b->members[k++] = b->members[i];
        b->members[i] = t;
    }
}

static void after_cb(uv_work_t *w, int status)
{
    cp_sync_batch *b = (cp_sync_batch *)w;
    cp_server *s = b->srv;
    int err = status == UV_ECANCELED ? ECANCELED : b->err;
    s->inflight = NULL;
    if (err)
        cp_srv_log(s, CP_LOG_ERROR, "fsync of %zu files / %zu members failed: %s", b->nfds, b->nmembers,
                   strerror(err));
    else
        cp_srv_log(s, CP_LOG_DEBUG, "synced %zu files for %zu connections", b->nfds, b->nmembers);
    /* unpin first: a member's callback may free its files; a failed sync leaves the
     * files dirty so they stay open and are synced again before any later ack */
    for (size_t i = 0; i < b->nfds; i++) cp_rawlog_file_sync_end(b->files[i], err == 0);
    /* members may join the next (pending) batch from their callbacks */
    retriers_first(b);
    for (size_t i = 0; i < b->nmembers; i++) {
        cp_conn *c = b->members[i];
        c->in_batch = 0;
        cp_conn_sync_done(c, err);
    }
    b->nmembers = b->nfds = 0;
    b->err = 0;
    b->catw_gen = 0;
    if (b->cap_members > KEEP_MEMBERS || b->dirs.cap > 65536) batch_release(b);
    else cp_buf_reset(&b->dirs);
    cp_sync_submit(s);
    cp_srv_maybe_finish(s);
}

void cp_sync_submit(cp_server *s)
{
    if (s->inflight || s->pending->nmembers == 0) return;
    cp_sync_batch *b = s->pending;
    if (b->catw_gen) { /* the rows its replies wait for: to the writer, or committed now */
        if (cp_catw_threaded(s)) cp_catw_publish(s);
        else cp_catw_settle(s, b->catw_gen);
    }
    s->pending = b == &s->batches[0] ? &s->batches[1] : &s->batches[0];
    s->inflight = b;
    b->err = 0;
    int r = uv_queue_work(&s->loop, &b->work, work_cb, after_cb);
    if (r != 0) { /* cannot happen with valid arguments; never leave members hanging */
        b->err = 0;
        work_cb(&b->work);
        after_cb(&b->work, 0);
    }
}
