/* recover.c -- crash recovery of the hot tier, at start, before agents are accepted.
 *
 * A flush ack promises that the agent's bytes are in the raw log, not that its calls are
 * in the hot tier: after a kill -9 the calls waiting for assembly and those in the
 * uncommitted catalog transaction are only in the raw log. Pod restarts whose stream
 * files are still "open" in the catalog (their connection never ended) are therefore
 * assembled again from their raw files, through the same decoders and cp_asm as live
 * ingest; a call the hot tier already has (same ref) is skipped, so the pass adds exactly
 * the missing ones and can itself be interrupted and rerun. Then the restart's files
 * are marked closed.
 */
#include "common/cp_fsutil.h"
#include "server_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define RECOVER_MAX_FILES 4096 /* stream files of one restart we re-read */
#define RECOVER_CHUNK (256 * 1024)

typedef struct rfile {
    cp_stream_kind kind;
    int32_t index;
    int fd;
    uint64_t size;
} rfile;

typedef struct recovery {
    cp_server *s;
    const cp_catalog_pod *pod;
    rfile files[RECOVER_MAX_FILES];
    size_t nfiles;
    cp_asm *asm_;
    cp_buf utf8;
    uint64_t found, added;
    size_t foreign;     /* files outside our data directory: another collector's restart */
    int err;
} recovery;

static rfile *rfile_find(recovery *r, cp_stream_kind kind, int32_t index)
{
    for (size_t i = 0; i < r->nfiles; i++)
        if (r->files[i].kind == kind && r->files[i].index == index) return &r->files[i];
    return NULL;
}

static long io_read(void *ud, cp_stream_kind kind, int32_t file_index, uint64_t off, void *buf, size_t n)
{
    rfile *f = rfile_find(ud, kind, file_index);
    if (!f) return CP_ENOTFOUND;
    long got = cp_pread_all(f->fd, buf, n, off);
    return got < 0 ? CP_EIO : got;
}

static int64_t io_size(void *ud, cp_stream_kind kind, int32_t file_index)
{
    rfile *f = rfile_find(ud, kind, file_index);
    return f ? (int64_t)f->size : -1;
}

static int io_emit(void *ud, const cp_call *call)
{
    recovery *r = ud;
    cp_catalog *cat = r->s->catalog;
    r->found++;
    int have = cp_catalog_call_exists(cat, call);
    if (have < 0) {
        r->err = have;
        return 1;
    }
    if (have) return 0;
    if (cp_catalog_call_put(cat, call) != CP_OK) {
        r->err = CP_EIO;
        return 1;
    }
    r->added++;
    return 0;
}

static int on_file(void *ud, const char *stream, int64_t file_index, const char *path)
{
    recovery *r = ud;
    cp_stream_kind kind = cp_stream_kind_from_name(stream, strlen(stream));
    if (kind == CP_STREAM_UNKNOWN || !cp_stream_kind_is_decoded(kind) || file_index < 0 || file_index > INT32_MAX)
        return 0;
    /* collectors sharing one catalog each recover only their own restarts: a restart
     * still open in the catalog may be live on another node */
    const char *dir = r->s->cfg->data_dir;
    size_t dl = strlen(dir);
    if (strncmp(path, dir, dl) != 0 || path[dl] != '/') {
        r->foreign++;
        return 0;
    }
    if (r->nfiles == RECOVER_MAX_FILES) return 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0; /* never created (INIT without data) or removed: nothing to recover */
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return 0;
    }
    r->files[r->nfiles++] = (rfile){kind, (int32_t)file_index, fd, (uint64_t)sb.st_size};
    return 0;
}

/* ---- feeding the decoders ------------------------------------------------------------- */

static int on_word(void *ud, const cp_word_rec *w)
{
    recovery *r = ud;
    cp_buf_reset(&r->utf8);
    if (cp_str16_to_utf8(&r->utf8, w->word) != CP_OK) return 1;
    return cp_asm_word(r->asm_, w->id, (const char *)r->utf8.data, r->utf8.len) == CP_ENOMEM;
}

static int on_pause(void *ud, const cp_suspend_rec *p) { return cp_asm_pause(((recovery *)ud)->asm_, p) != CP_OK; }

typedef struct trace_ud {
    recovery *r;
    int32_t index;
} trace_ud;

static int on_trace(void *ud, const cp_trace_rec *t)
{
    trace_ud *x = ud;
    return cp_asm_trace(x->r->asm_, x->index, t, 0) != CP_OK;
}

static int on_call(void *ud, const cp_call_rec *c) { return cp_asm_call(((recovery *)ud)->asm_, c, 0) != CP_OK; }

/* Decodes one stored file (they were cut to clean record boundaries, but a file of a
 * killed connection can end in a torn record: the decoder stops at its last whole one). */
static int32_t feed_file(recovery *r, rfile *f, int32_t first_id)
{
    trace_ud tu = {r, f->index};
    cp_dec_sink sink = {.ud = r, .on_word = on_word, .on_suspend = on_pause, .on_call = on_call};
    if (f->kind == CP_STREAM_TRACE) sink = (cp_dec_sink){.ud = &tu, .on_trace = on_trace};
    cp_dec *d = cp_dec_new(f->kind, NULL, &sink, first_id);
    if (!d) return first_id;
    uint8_t *buf = malloc(RECOVER_CHUNK);
    for (uint64_t off = 0; buf && off < f->size;) {
        long n = io_read(r, f->kind, f->index, off, buf, RECOVER_CHUNK);
        if (n <= 0 || cp_dec_feed(d, buf, (size_t)n) != CP_OK) break;
        off += (uint64_t)n;
    }
    free(buf);
    int32_t next = cp_dec_next_word_id(d);
    cp_dec_free(d);
    return next;
}

static int cmp_rfile(const void *a, const void *b)
{
    const rfile *x = a, *y = b;
    if (x->kind != y->kind) return x->kind < y->kind ? -1 : 1;
    return (x->index > y->index) - (x->index < y->index);
}

/* Words and pauses first, then every trace file (extents), then the calls. */
static void feed_all(recovery *r)
{
    qsort(r->files, r->nfiles, sizeof *r->files, cmp_rfile);
    static const cp_stream_kind order[] = {CP_STREAM_DICTIONARY, CP_STREAM_POSDICTIONARY, CP_STREAM_SUSPEND,
                                           CP_STREAM_TRACE, CP_STREAM_CALLS};
    for (size_t k = 0; k < CP_ARRAY_LEN(order); k++) {
        int32_t next_id = 0;
        for (size_t i = 0; i < r->nfiles; i++)
            if (r->files[i].kind == order[k]) next_id = feed_file(r, &r->files[i], next_id);
    }
}

static int recover_restart(void *ud, const cp_catalog_pod *pod)
{
    recovery *r = ud;
    r->pod = pod;
    r->nfiles = 0;
    r->found = r->added = 0;
    r->foreign = 0;
    r->err = CP_OK;
    cp_server *s = r->s;
    if (cp_catalog_restart_files(s->catalog, pod, on_file, r) != CP_OK) {
        cp_srv_log(s, CP_LOG_ERROR, "recovery: pod %s: %s", pod->pod_id, cp_catalog_errmsg(s->catalog));
        return 0;
    }
    if (r->foreign) {
        for (size_t i = 0; i < r->nfiles; i++) close(r->files[i].fd);
        return 0;
    }
    cp_asm_pod ap = {pod->ns, pod->service, pod->pod, pod->restart_ms};
    cp_asm_io io = {.ud = r, .read = io_read, .size = io_size, .emit = io_emit};
    r->asm_ = cp_asm_new(&ap, NULL, &io);
    if (r->asm_) {
        feed_all(r);
        int st = cp_asm_pump(r->asm_, 0, 1);
        if (st != CP_OK && r->err == CP_OK) r->err = st;
        cp_asm_free(r->asm_);
        r->asm_ = NULL;
    } else {
        r->err = CP_ENOMEM;
    }
    for (size_t i = 0; i < r->nfiles; i++) close(r->files[i].fd);
    if (r->err == CP_OK && cp_catalog_restart_finish(s->catalog, pod, "closed by recovery after a crash") != CP_OK)
        r->err = CP_EIO;
    int cst = cp_catalog_commit(s->catalog);
    if (r->err != CP_OK || cst != CP_OK)
        cp_srv_log(s, CP_LOG_ERROR, "recovery: pod %s restart %lld: %s", pod->pod_id, (long long)pod->restart_ms,
                   r->err != CP_OK ? cp_strstatus(r->err) : cp_catalog_errmsg(s->catalog));
    else
        cp_srv_log(s, CP_LOG_INFO, "recovery: pod %s restart %lld: %llu calls in the raw log, %llu were missing and are stored",
                   pod->pod_id, (long long)pod->restart_ms, (unsigned long long)r->found, (unsigned long long)r->added);
    return 0;
}

int cp_srv_recover(cp_server *s)
{
    recovery *r = calloc(1, sizeof *r);
    if (!r) return CP_ENOMEM;
    r->s = s;
    cp_buf_init(&r->utf8);
    int st = cp_catalog_unfinished(s->catalog, recover_restart, r);
    if (st != CP_OK) cp_srv_log(s, CP_LOG_ERROR, "recovery: %s", cp_catalog_errmsg(s->catalog));
    cp_buf_free(&r->utf8);
    free(r);
    return st;
}
