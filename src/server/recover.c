/* recover.c -- recovery of the hot tier from the raw log, on a thread of its own.
 *
 * A flush ack promises that the agent's bytes are in the raw log, not that its calls are
 * in the hot tier. A pod restart whose calls may be missing there is one with a stream
 * file still "open" in the catalog that no live connection of this node owns (the server
 * was killed while its agent was connected), or one left with hot_complete = 0 (a
 * hot-tier write of its calls failed -- a full disk -- or its last transaction did not
 * commit): the catalog says so, whatever happened to the process. Such a restart is
 * assembled again from its raw files, through the same decoders and cp_asm as live
 * ingest; a call the hot tier already has (same ref) is skipped, so a pass adds exactly
 * the missing ones and can itself be interrupted and rerun. A stream file that ends in a
 * torn record (cut off by the crash; only bytes no flush ack covered, since the agent
 * flushes whole records) is cut back to its last whole record and fsynced, and the cut is
 * noted on its streams row; then the restart is marked complete.
 *
 * The worker runs a pass when the server starts (agents are accepted meanwhile: their
 * restarts are new and live) and whenever the loop asks for one (a commit of the hot tier
 * failed, so its connections were closed), and again every RETRY_MS while a pass could
 * not finish (the disk is still full). It writes through a catalog connection of its own,
 * committing every BATCH_CALLS calls. Live restarts are known from a registry the loop
 * keeps (cp_srv_recovery_live); a connection leaves it only after the commit that follows
 * its close, so a pass never races the loop for the same restart's calls.
 */
#include "common/cp_fsutil.h"
#include "common/cp_map.h"
#include "server_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RECOVER_MAX_FILES 4096 /* stream files of one restart we re-read */
#define RECOVER_CHUNK (256 * 1024)
#define BATCH_CALLS 2000       /* calls per recovery transaction (the loop shares the database) */
#define RETRY_MS 5000          /* a pass that could not finish is retried this often */

typedef struct rfile {
    cp_stream_kind kind;
    int32_t index;
    int fd;
    uint64_t size;
    uint64_t cut;              /* bytes of a torn tail cut off */
    char stream[32];
    size_t path_off;           /* its path in recovery.paths */
} rfile;

typedef struct recovery {
    cp_server *s;
    cp_catalog *cat;           /* the worker's own connection */
    const cp_catalog_pod *pod;
    rfile files[RECOVER_MAX_FILES];
    size_t nfiles;
    cp_asm *asm_;
    cp_buf utf8;
    cp_buf paths;              /* the files' paths, NUL-terminated */
    uint64_t found, added, pending;
    size_t foreign;            /* files outside our data directory: another collector's restart */
    int err;
} recovery;

/* ---- the live registry (loop thread writes, worker reads; under rc->mu) ------------------ */

uint64_t cp_srv_restart_key(const cp_catalog_pod *pod)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (const char *p = pod->pod_id; *p; p++) h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
    return cp_mix64(h ^ (uint64_t)pod->restart_ms);
}

void cp_srv_recovery_live(cp_server *s, uint64_t k, int live)
{
    cp_recovery *rc = &s->recovery;
    uint64_t n = 0;
    pthread_mutex_lock(&rc->mu);
    cp_u64map_get(&rc->live, k, &n);
    if (live) cp_u64map_put(&rc->live, k, n + 1);
    else if (n > 1) cp_u64map_put(&rc->live, k, n - 1);
    else cp_u64map_del(&rc->live, k);
    pthread_mutex_unlock(&rc->mu);
}

static int is_live(cp_recovery *rc, const cp_catalog_pod *pod)
{
    pthread_mutex_lock(&rc->mu);
    int live = cp_u64map_get(&rc->live, cp_srv_restart_key(pod), NULL);
    pthread_mutex_unlock(&rc->mu);
    return live;
}

void cp_srv_recovery_kick(cp_server *s)
{
    cp_recovery *rc = &s->recovery;
    pthread_mutex_lock(&rc->mu);
    rc->kicked = 1;
    pthread_cond_signal(&rc->cv);
    pthread_mutex_unlock(&rc->mu);
}

void cp_srv_recovery_status(cp_server *s, cp_recovery_status *out)
{
    cp_recovery *rc = &s->recovery;
    pthread_mutex_lock(&rc->mu);
    *out = rc->status;
    if (rc->kicked) out->running = 1; /* a pass is due: the last one's verdict is stale */
    pthread_mutex_unlock(&rc->mu);
}

static void status_update(cp_recovery *rc, const recovery *r, int done_one)
{
    pthread_mutex_lock(&rc->mu);
    if (done_one) rc->status.restarts_done++;
    if (r) {
        rc->status.calls_found += r->found;
        rc->status.calls_added += r->added;
    }
    pthread_mutex_unlock(&rc->mu);
}

/* ---- one restart ------------------------------------------------------------------------- */

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
    if (++r->found % 256 == 0) { /* a stop waits for at most this many calls */
        cp_recovery *rc = &r->s->recovery;
        pthread_mutex_lock(&rc->mu);
        int stop = rc->stop;
        pthread_mutex_unlock(&rc->mu);
        if (stop) {
            r->err = CP_EABORT;
            return 1;
        }
    }
    int have = cp_catalog_call_exists(r->cat, call);
    if (have < 0) {
        r->err = have;
        return 1;
    }
    if (have) return 0;
    if (cp_catalog_call_put(r->cat, call) != CP_OK) {
        r->err = CP_EIO;
        return 1;
    }
    r->added++;
    if (++r->pending >= BATCH_CALLS) { /* short transactions: the loop writes the same database */
        r->pending = 0;
        if (cp_catalog_commit(r->cat) != CP_OK) {
            r->err = CP_EIO;
            return 1;
        }
    }
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
    int fd = open(path, O_RDWR | O_CLOEXEC); /* RDWR: a torn tail is cut */
    if (fd < 0) return 0; /* never created (INIT without data) or removed: nothing to recover */
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return 0;
    }
    rfile *f = &r->files[r->nfiles++];
    *f = (rfile){kind, (int32_t)file_index, fd, (uint64_t)sb.st_size, 0, "", r->paths.len};
    snprintf(f->stream, sizeof f->stream, "%s", stream);
    if (cp_buf_append(&r->paths, path, strlen(path) + 1) != CP_OK) return 1;
    return 0;
}

/* Dictionary words and params go into the catalog again too (idempotent puts): a commit
 * the disk refused may have lost them, and the trees need the words. */
static int path_of(recovery *r, const rfile *f, char *out, size_t cap)
{
    const char *p = (const char *)r->paths.data + f->path_off;
    return (size_t)snprintf(out, cap, "%s", p) < cap ? CP_OK : CP_ELIMIT;
}

static int on_word(void *ud, const cp_word_rec *w)
{
    recovery *r = ud;
    cp_buf_reset(&r->utf8);
    if (cp_str16_to_utf8(&r->utf8, w->word) != CP_OK) return 1;
    if (cp_catalog_dict_put(r->cat, r->pod, w->id, (const char *)r->utf8.data, r->utf8.len) != CP_OK) {
        r->err = CP_EIO;
        return 1;
    }
    return cp_asm_word(r->asm_, w->id, (const char *)r->utf8.data, r->utf8.len) == CP_ENOMEM;
}

static int on_param(void *ud, const cp_param_rec *p)
{
    recovery *r = ud;
    cp_buf_reset(&r->utf8);
    if (cp_str16_to_utf8(&r->utf8, p->name) != CP_OK) return 1;
    size_t name_len = r->utf8.len;
    if (cp_str16_to_utf8(&r->utf8, p->signature) != CP_OK || cp_buf_putc(&r->utf8, 0) != CP_OK) return 1;
    const char *base = (const char *)r->utf8.data;
    cp_catalog_param prm = {.name = base, .name_len = name_len, .index = p->index, .list = p->list,
                            .order = p->order, .signature = base + name_len,
                            .signature_len = r->utf8.len - 1 - name_len};
    if (cp_catalog_param_put(r->cat, r->pod, &prm) != CP_OK) {
        r->err = CP_EIO;
        return 1;
    }
    return 0;
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

/* A file that ends in a torn record is cut back to its last whole one (the cut bytes
 * kept beside it, cp_rawlog_cut_tail), and fsynced. */
static void cut_tail(recovery *r, rfile *f, uint64_t clean)
{
    if (clean >= f->size) return;
    char path[4200];
    if (path_of(r, f, path, sizeof path) != CP_OK || cp_rawlog_cut_tail(f->fd, path, f->size, clean) != CP_OK) {
        cp_srv_log(r->s, CP_LOG_ERROR, "recovery: pod %s: %s file %d: cannot cut its torn tail: %s", r->pod->pod_id,
                   f->stream, f->index, strerror(errno));
        if (r->err == CP_OK) r->err = CP_EIO; /* the restart stays incomplete: the next pass retries */
        return;
    }
    f->cut = f->size - clean;
    f->size = clean;
}

/* Decodes one stored file to the end of its last whole record (words, pauses, extents or
 * calls into the assembler) and cuts what follows. */
static int32_t feed_file(recovery *r, rfile *f, int32_t first_id)
{
    trace_ud tu = {r, f->index};
    cp_dec_sink sink = {.ud = r, .on_word = on_word, .on_suspend = on_pause, .on_call = on_call};
    if (f->kind == CP_STREAM_TRACE) sink = (cp_dec_sink){.ud = &tu, .on_trace = on_trace};
    cp_dec *d = cp_dec_new(f->kind, NULL, &sink, first_id);
    if (!d) return first_id;
    uint8_t *buf = malloc(RECOVER_CHUNK);
    int st = buf ? CP_OK : CP_ENOMEM;
    for (uint64_t off = 0; st == CP_OK && off < f->size;) {
        long n = io_read(r, f->kind, f->index, off, buf, RECOVER_CHUNK);
        if (n <= 0) break;
        st = cp_dec_feed(d, buf, (size_t)n);
        off += (uint64_t)n;
    }
    free(buf);
    if (st == CP_OK) st = cp_dec_finish(d);
    /* clean end, or a torn tail (CP_AGAIN): everything after the last whole record goes;
     * a file that does not decode at all (an error) is left as it is, for a person */
    if (st == CP_OK || st == CP_AGAIN) cut_tail(r, f, cp_dec_committed(d));
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
    /* files of the other decoded kinds (params, sql, xml) are cut too */
    for (size_t i = 0; i < r->nfiles; i++) {
        rfile *f = &r->files[i];
        int kind_fed = 0;
        for (size_t k = 0; k < CP_ARRAY_LEN(order); k++) kind_fed |= f->kind == order[k];
        if (kind_fed) continue;
        cp_dec_sink ps = {.ud = r, .on_param = on_param};
        cp_dec *d = cp_dec_new(f->kind, NULL, f->kind == CP_STREAM_PARAMS ? &ps : NULL, 0);
        uint8_t *buf = malloc(RECOVER_CHUNK);
        int st = d && buf ? CP_OK : CP_ENOMEM;
        for (uint64_t off = 0; st == CP_OK && off < f->size;) {
            long n = io_read(r, f->kind, f->index, off, buf, RECOVER_CHUNK);
            if (n <= 0) break;
            st = cp_dec_feed(d, buf, (size_t)n);
            off += (uint64_t)n;
        }
        if (st == CP_OK) st = cp_dec_finish(d);
        if (d && (st == CP_OK || st == CP_AGAIN)) cut_tail(r, f, cp_dec_committed(d));
        free(buf);
        cp_dec_free(d);
    }
}

/* The streams rows: a file cut back says how much, the rest is closed with the note. */
static int note_files(recovery *r)
{
    for (size_t i = 0; i < r->nfiles; i++) {
        rfile *f = &r->files[i];
        if (!f->cut) continue;
        char note[160];
        snprintf(note, sizeof note, "recovery cut %" PRIu64 " trailing bytes (a record torn by a crash)", f->cut);
        cp_catalog_stream x = {.pod = r->pod, .stream = f->stream, .file_index = f->index,
                               .closed_ms = cp_now_ms(), .bytes = f->size, .status = "closed", .error = note};
        if (cp_catalog_stream_close(r->cat, &x) != CP_OK) return CP_EIO;
        cp_srv_log(r->s, CP_LOG_INFO, "recovery: pod %s: %s file %d: %s", r->pod->pod_id, f->stream, f->index, note);
    }
    return CP_OK;
}

static int recover_restart(recovery *r, const cp_catalog_pod *pod)
{
    r->pod = pod;
    r->nfiles = 0;
    cp_buf_reset(&r->paths);
    r->found = r->added = r->pending = 0;
    r->foreign = 0;
    r->err = CP_OK;
    cp_server *s = r->s;
    if (cp_catalog_restart_files(r->cat, pod, on_file, r) != CP_OK) {
        cp_srv_log(s, CP_LOG_ERROR, "recovery: pod %s: %s", pod->pod_id, cp_catalog_errmsg(r->cat));
        return CP_EIO;
    }
    if (r->foreign || !r->nfiles) {
        for (size_t i = 0; i < r->nfiles; i++) close(r->files[i].fd);
        return CP_OK;
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
    if (r->err == CP_OK && note_files(r) != CP_OK) r->err = CP_EIO;
    for (size_t i = 0; i < r->nfiles; i++) close(r->files[i].fd);
    if (r->err == CP_OK && cp_catalog_restart_finish(r->cat, pod, "closed by recovery") != CP_OK) r->err = CP_EIO;
    int cst = cp_catalog_commit(r->cat);
    if (r->err != CP_OK || cst != CP_OK) {
        cp_srv_log(s, CP_LOG_ERROR, "recovery: pod %s restart %lld: %s (retried later)", pod->pod_id,
                   (long long)pod->restart_ms, r->err != CP_OK ? cp_strstatus(r->err) : cp_catalog_errmsg(r->cat));
        return r->err != CP_OK ? r->err : cst;
    }
    cp_srv_log(s, CP_LOG_INFO, "recovery: pod %s restart %lld: %llu calls in the raw log, %llu were missing and are stored",
               pod->pod_id, (long long)pod->restart_ms, (unsigned long long)r->found, (unsigned long long)r->added);
    return CP_OK;
}

/* ---- passes ---------------------------------------------------------------------------------- */

/* The restarts to recover, copied out of the catalog's callback (recovering writes). */
typedef struct todo {
    cp_catalog_pod *v;
    cp_buf text;
    size_t n, cap;
} todo;

typedef struct list_ctx {
    todo *t;
    cp_recovery *rc;
} list_ctx;

static int collect(void *ud, const cp_catalog_pod *p)
{
    list_ctx *x = ud;
    if (is_live(x->rc, p)) return 0;
    todo *t = x->t;
    if (cp_grow((void **)&t->v, &t->cap, t->n + 1, sizeof *t->v, 16) != CP_OK) return 1;
    /* strings as offsets while the buffer grows; fixed up after the listing */
    size_t at[4];
    const char *s[4] = {p->ns, p->service, p->pod, p->pod_id};
    for (int i = 0; i < 4; i++) {
        at[i] = t->text.len;
        if (cp_buf_append(&t->text, s[i], strlen(s[i]) + 1) != CP_OK) return 1;
    }
    t->v[t->n++] = (cp_catalog_pod){(const char *)(uintptr_t)at[0], (const char *)(uintptr_t)at[1],
                                    (const char *)(uintptr_t)at[2], (const char *)(uintptr_t)at[3], p->restart_ms};
    return 0;
}

/* One pass: CP_OK when every restart that needed it was recovered. */
static int run_pass(cp_server *s, recovery *r)
{
    cp_recovery *rc = &s->recovery;
    todo t = {0};
    cp_buf_init(&t.text);
    list_ctx x = {&t, rc};
    int st = cp_catalog_unfinished(r->cat, collect, &x);
    cp_catalog_commit(r->cat); /* the listing's read transaction (PostgreSQL) */
    if (st != CP_OK) {
        cp_srv_log(s, CP_LOG_ERROR, "recovery: listing restarts: %s", cp_catalog_errmsg(r->cat));
        st = CP_EIO;
    }
    for (size_t i = 0; i < t.n; i++) {
        const char *base = (const char *)t.text.data;
        t.v[i].ns = base + (uintptr_t)t.v[i].ns;
        t.v[i].service = base + (uintptr_t)t.v[i].service;
        t.v[i].pod = base + (uintptr_t)t.v[i].pod;
        t.v[i].pod_id = base + (uintptr_t)t.v[i].pod_id;
    }
    pthread_mutex_lock(&rc->mu);
    rc->status.running = 1;
    rc->status.passes++;
    rc->status.restarts_total = t.n;
    rc->status.restarts_done = 0;
    pthread_mutex_unlock(&rc->mu);
    for (size_t i = 0; i < t.n; i++) {
        pthread_mutex_lock(&rc->mu);
        int stop = rc->stop;
        pthread_mutex_unlock(&rc->mu);
        if (stop) break;
        if (is_live(rc, &t.v[i])) continue; /* it reconnected? no: restarts are unique -- but be safe */
        int rst = recover_restart(r, &t.v[i]);
        status_update(rc, r, 1);
        if (rst != CP_OK) st = rst;
    }
    pthread_mutex_lock(&rc->mu);
    rc->status.running = 0;
    rc->status.last_ok = st == CP_OK;
    pthread_mutex_unlock(&rc->mu);
    free(t.v);
    cp_buf_free(&t.text);
    return st;
}

static void *worker(void *arg)
{
    cp_server *s = arg;
    cp_recovery *rc = &s->recovery;
    recovery *r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->s = s;
    r->cat = rc->cat;
    cp_buf_init(&r->utf8);
    cp_buf_init(&r->paths);
    /* Test hook (tests/integration/hardening_test.c): CLOUDPROF_TEST_RECOVERY_DELAY_MS holds
     * the start-up pass back, so a test sees agents served while recovery is pending. */
    const char *delay = getenv("CLOUDPROF_TEST_RECOVERY_DELAY_MS");
    if (delay && *delay) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        long ms = strtol(delay, NULL, 10);
        ts.tv_sec += ms / 1000;
        ts.tv_nsec += (ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) ts.tv_sec++, ts.tv_nsec -= 1000000000L;
        pthread_mutex_lock(&rc->mu);
        while (!rc->stop && pthread_cond_timedwait(&rc->cv, &rc->mu, &ts) == 0) {
        }
        pthread_mutex_unlock(&rc->mu);
    }
    int again = 1; /* the pass at start */
    for (;;) {
        if (again) {
            int st = run_pass(s, r);
            again = 0;
            pthread_mutex_lock(&rc->mu);
            rc->retry = st != CP_OK;
            pthread_mutex_unlock(&rc->mu);
        }
        pthread_mutex_lock(&rc->mu);
        while (!rc->stop && !rc->kicked) {
            if (rc->retry) {
                struct timespec ts;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += RETRY_MS / 1000;
                if (pthread_cond_timedwait(&rc->cv, &rc->mu, &ts) != 0) break; /* timed out: retry */
            } else {
                pthread_cond_wait(&rc->cv, &rc->mu);
            }
        }
        int stop = rc->stop;
        rc->kicked = 0;
        pthread_mutex_unlock(&rc->mu);
        if (stop) break;
        again = 1;
    }
    cp_buf_free(&r->utf8);
    cp_buf_free(&r->paths);
    free(r);
    return NULL;
}

int cp_srv_recovery_init(cp_server *s)
{
    cp_recovery *rc = &s->recovery;
    memset(rc, 0, sizeof *rc);
    pthread_mutex_init(&rc->mu, NULL);
    pthread_cond_init(&rc->cv, NULL);
    cp_u64map_init(&rc->live);
    return CP_OK;
}

int cp_srv_recovery_start(cp_server *s, char *err, size_t errlen)
{
    cp_recovery *rc = &s->recovery;
    const cp_server_config *cfg = s->cfg;
    char path[4096];
    snprintf(path, sizeof path, "%s/catalog.db", cfg->data_dir);
    int st = cp_catalog_open(cfg->catalog ? cfg->catalog : path, &rc->cat, err, errlen);
    if (st == CP_OK && cfg->idle_methods) cp_catalog_set_idle(rc->cat, cfg->idle_methods, cfg->nidle_methods);
    if (st == CP_OK && cp_catalog_set_windows(rc->cat, cfg->hot_window_ms, cfg->hot_ahead_ms) != CP_OK) {
        snprintf(err, errlen, "catalog: %s", cp_catalog_errmsg(rc->cat));
        st = CP_EINVAL;
    }
    if (st == CP_OK && pthread_create(&rc->thread, NULL, worker, s) != 0) {
        snprintf(err, errlen, "cannot start the recovery thread");
        st = CP_ENOMEM;
    }
    if (st != CP_OK) {
        cp_catalog_close(rc->cat);
        rc->cat = NULL;
        return st;
    }
    rc->started = 1;
    return CP_OK;
}

void cp_srv_recovery_stop(cp_server *s)
{
    cp_recovery *rc = &s->recovery;
    if (rc->started) {
        pthread_mutex_lock(&rc->mu);
        rc->stop = 1;
        pthread_cond_signal(&rc->cv);
        pthread_mutex_unlock(&rc->mu);
        pthread_join(rc->thread, NULL);
        rc->started = 0;
    }
    if (rc->cat) cp_catalog_close(rc->cat);
    rc->cat = NULL;
}

void cp_srv_recovery_free(cp_server *s)
{
    cp_recovery *rc = &s->recovery;
    cp_u64map_free(&rc->live);
    pthread_cond_destroy(&rc->cv);
    pthread_mutex_destroy(&rc->mu);
}
