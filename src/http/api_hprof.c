/* api_hprof.c -- GET /api/v1/dumps/{id}/hprof: a heap dump's summary (ui.md §10.5;
 * docs/API.md): HPROF header, identifier size, dump time, totals and the classes with
 * the most shallow bytes, computed lazily and cached.
 *
 * Computing. The stored file (a .hprof.zip's first entry, or a bare .hprof uploaded as
 * `other`) is streamed through cp_hprof_summarize from the dump store in 256 KiB pieces,
 * wherever it lives: memory stays at the decoder's bound (class table and names, about
 * 45 bytes a class) plus ~1 MiB, for any size of dump. A 1 GB dump takes seconds, so it
 * runs on the summary worker (h->hprofs, one thread) while the request's connection is
 * suspended, as uploads are finished (upload.c): the HTTP threads keep serving. One
 * worker means one summary at a time (one decoder's memory, one core), and a request
 * for a dump whose summary is queued or being made finds it in the cache when its turn
 * comes: the same dump is never computed twice, nor two at once. At most
 * HPROF_MAX_PENDING summaries wait (then 503). A stopping server cancels the running one.
 *
 * Caching. The answer for the largest `top` (HPROF_TOP_MAX classes) is kept as JSON text
 * under the key "<id>-<sha256>" (a replaced file has another SHA-256), in memory (the
 * HPROF_MEM_ENTRIES most recently used) and, with cfg->hprof_cache_dir (serve:
 * <data>/hprof-cache), as a file <key>.json written atomically: the cache survives
 * restarts and works the same for a local-directory and an S3 dump store, since it sits
 * on this node's disk (each node of a scale-out computes its own once). The directory
 * keeps the HPROF_FILE_ENTRIES newest files. A dump that does not parse is cached too
 * ({"unparsable": reason}), so a bad 1 GB file is read once; read failures are not.
 */
#include "http_internal.h"
#include "model/cp_hprofsum.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HPROF_TOP_DEFAULT 50
#define HPROF_TOP_MAX 1000
#define HPROF_MEM_ENTRIES 8
#define HPROF_FILE_ENTRIES 256
#define HPROF_FILE_MAX (4u << 20)     /* a cache file is ~100 KB at most; more is not ours */
#define HPROF_MAX_PENDING 16
#define HPROF_KEY_MAX 96              /* "<id>-<sha256 hex>" */

typedef struct cache_entry {
    char key[HPROF_KEY_MAX];
    char *text;                       /* NULL: free slot */
    uint64_t used;                    /* LRU clock */
} cache_entry;

struct http_hprof_cache {
    pthread_mutex_t mu;
    cache_entry e[HPROF_MEM_ENTRIES];
    uint64_t clock;
    size_t pending;                   /* summaries queued or running */
};

enum { JOB_RUNNING = 1, JOB_DONE = 2 };

/* One request waiting for the worker (http_req.hprof). */
struct http_hprof {
    cp_http *h;
    struct MHD_Connection *conn;
    cp_dump_meta meta;
    int zipped;
    char key[HPROF_KEY_MAX];
    _Atomic int state;                /* written by the worker before it resumes the connection */
    char *text;                       /* the answer's JSON text (cached form), or NULL: */
    unsigned status;                  /* the error */
    char code[32];
    char msg[512];
    int cached;                       /* text came from the cache */
    int answered;                     /* the answer was made (the request is no longer suspended) */
};

/* ---- the cache ---------------------------------------------------------------------------- */

int http_hprof_cache_init(cp_http *h)
{
    h->hprof_cache = calloc(1, sizeof *h->hprof_cache);
    if (!h->hprof_cache) return CP_ENOMEM;
    if (pthread_mutex_init(&h->hprof_cache->mu, NULL) != 0) {
        free(h->hprof_cache);
        h->hprof_cache = NULL;
        return CP_ENOMEM;
    }
    return CP_OK;
}

void http_hprof_cache_free(cp_http *h)
{
    struct http_hprof_cache *c = h->hprof_cache;
    if (!c) return;
    for (size_t i = 0; i < HPROF_MEM_ENTRIES; i++) free(c->e[i].text);
    pthread_mutex_destroy(&c->mu);
    free(c);
    h->hprof_cache = NULL;
}

/* A copy of key's text from memory, or NULL. */
static char *mem_get(cp_http *h, const char *key)
{
    struct http_hprof_cache *c = h->hprof_cache;
    char *t = NULL;
    pthread_mutex_lock(&c->mu);
    for (size_t i = 0; i < HPROF_MEM_ENTRIES; i++)
        if (c->e[i].text && !strcmp(c->e[i].key, key)) {
            c->e[i].used = ++c->clock;
            t = strdup(c->e[i].text);
            break;
        }
    pthread_mutex_unlock(&c->mu);
    return t;
}

/* Keeps a copy of text under key, in the slot of the same key, a free one or the least
 * recently used. Out of memory: not kept (it is only a cache). */
static void mem_put(cp_http *h, const char *key, const char *text)
{
    struct http_hprof_cache *c = h->hprof_cache;
    char *t = strdup(text);
    if (!t) return;
    pthread_mutex_lock(&c->mu);
    cache_entry *slot = &c->e[0];
    for (size_t i = 0; i < HPROF_MEM_ENTRIES; i++) {
        cache_entry *e = &c->e[i];
        if (e->text && !strcmp(e->key, key)) {
            slot = e;
            break;
        }
        if (!e->text || (slot->text && e->used < slot->used)) slot = e;
    }
    free(slot->text);
    snprintf(slot->key, sizeof slot->key, "%s", key);
    slot->text = t;
    slot->used = ++c->clock;
    pthread_mutex_unlock(&c->mu);
}

static int file_path(const cp_http *h, const char *key, const char *suffix, char *out, size_t cap)
{
    const char *dir = h->cfg->hprof_cache_dir;
    if (!dir || !*dir) return -1;
    int n = snprintf(out, cap, "%s/%s.json%s", dir, key, suffix);
    return n > 0 && (size_t)n < cap ? 0 : -1;
}

/* key's text from the cache directory, or NULL (absent, unreadable: a miss). */
static char *file_get(cp_http *h, const char *key)
{
    char path[4200];
    if (file_path(h, key, "", path, sizeof path)) return NULL;
    cp_buf b;
    cp_buf_init(&b);
    if (cp_read_file(path, HPROF_FILE_MAX, &b) != CP_OK || cp_buf_putc(&b, 0) != CP_OK) {
        cp_buf_free(&b);
        return NULL;
    }
    json_t *j = json_loads((const char *)b.data, 0, NULL);
    if (!j || !json_is_object(j)) { /* not what we write: dropped, made again */
        json_decref(j);
        cp_buf_free(&b);
        unlink(path);
        return NULL;
    }
    json_decref(j);
    return (char *)b.data; /* NUL-terminated; the caller frees it */
}

/* Removes the oldest cache files beyond HPROF_FILE_ENTRIES. */
static void file_prune(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    size_t n = 0;
    time_t oldest = 0;
    char oldest_name[256] = "";
    for (struct dirent *de; (de = readdir(d));) {
        size_t len = strlen(de->d_name);
        if (len < 6 || strcmp(de->d_name + len - 5, ".json") || len >= sizeof oldest_name) continue;
        char path[4400];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st) != 0) continue;
        if (!n++ || st.st_mtime < oldest) {
            oldest = st.st_mtime;
            snprintf(oldest_name, sizeof oldest_name, "%s", de->d_name);
        }
    }
    closedir(d);
    if (n > HPROF_FILE_ENTRIES && oldest_name[0]) { /* one per write keeps the count bounded */
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, oldest_name);
        unlink(path);
    }
}

/* Writes key's text as a file: a temporary file renamed into place, so a reader sees the
 * whole text or nothing. Failures only cost a recomputation after a restart: logged. */
static void file_put(cp_http *h, const char *key, const char *text)
{
    char path[4200], tmp[4200];
    if (file_path(h, key, "", path, sizeof path) || file_path(h, key, ".tmp", tmp, sizeof tmp)) return;
    if (cp_mkdirs(h->cfg->hprof_cache_dir, 0755) != CP_OK) {
        http_log(h, HTTP_LOG_WARN, "hprof: cannot create %s: %s", h->cfg->hprof_cache_dir, strerror(errno));
        return;
    }
    FILE *f = fopen(tmp, "w");
    size_t n = strlen(text);
    int ok = f && fwrite(text, 1, n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok || rename(tmp, path) != 0) {
        http_log(h, HTTP_LOG_WARN, "hprof: cannot write the cache file %s: %s", path, strerror(errno));
        unlink(tmp);
        return;
    }
    file_prune(h->cfg->hprof_cache_dir);
}

/* The cached text of key: memory first, then the directory (then kept in memory). */
static char *cache_get(cp_http *h, const char *key)
{
    char *t = mem_get(h, key);
    if (t) return t;
    t = file_get(h, key);
    if (t) mem_put(h, key, t);
    return t;
}

static void cache_put(cp_http *h, const char *key, const char *text)
{
    mem_put(h, key, text);
    file_put(h, key, text);
}

/* ---- computing (on the worker) ------------------------------------------------------------ */

typedef struct reader_ctx {
    cp_dump_reader *r;
    char err[256];
} reader_ctx;

/* cp_dump_pread_fn over a dump reader, which may return fewer bytes than asked. */
static int reader_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    reader_ctx *c = ud;
    uint8_t *p = dst;
    while (n) {
        long got = cp_dump_reader_pread(c->r, p, n, off);
        if (got <= 0) {
            snprintf(c->err, sizeof c->err, "%s", got < 0 ? cp_dump_reader_errmsg(c->r) : "the file ends early");
            return got < 0 ? (int)got : CP_ECORRUPT;
        }
        p += got;
        n -= (size_t)got;
        off += (uint64_t)got;
    }
    return CP_OK;
}

static int stopping(void *ud) { return ((cp_http *)ud)->stopping; }

/* The cached form of a summary: everything but the request's own fields (id, type,
 * cached, top). NULL when out of memory. */
static char *summary_text(const cp_hprof_summary *s, uint64_t elapsed_ms)
{
    json_t *classes = json_array();
    for (size_t i = 0; classes && i < s->nclasses; i++) {
        const cp_hprof_sum_class *c = &s->classes[i];
        json_t *row = json_pack("{s:s,s:I,s:I}", "name", c->name, "instances", (json_int_t)c->objects, "shallow_bytes",
                                (json_int_t)c->shallow_bytes);
        if (!row || json_array_append_new(classes, row) != 0) {
            json_decref(classes);
            classes = NULL;
        }
    }
    if (!classes) return NULL;
    const cp_hprof_totals *t = &s->totals;
    json_t *j = json_pack("{s:s,s:I,s:I,s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o,s:b,s:I,s:I,s:I}", "format",
                          s->hdr.format, "id_size", (json_int_t)s->hdr.id_size, "time_ms", (json_int_t)s->hdr.time_ms,
                          "entry", s->entry, "file_bytes", (json_int_t)s->file_bytes, "bytes", (json_int_t)t->bytes,
                          "records", (json_int_t)t->records, "heap_records", (json_int_t)t->heap_records, "gc_roots",
                          (json_int_t)t->gc_roots, "classes_loaded", (json_int_t)t->classes_loaded, "instances",
                          (json_int_t)t->objects, "shallow_bytes", (json_int_t)t->shallow_bytes, "class_count",
                          (json_int_t)s->classes_with_objects, "classes", classes, "names_incomplete",
                          s->names_incomplete, "names_dropped", (json_int_t)t->names_dropped, "elapsed_ms",
                          (json_int_t)elapsed_ms, "computed_ms", (json_int_t)cp_now_ms());
    if (!j) return NULL;
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    return text;
}

static char *unparsable_text(const char *why)
{
    json_t *j = json_pack("{s:s}", "unparsable", why);
    char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    return text;
}

static void job_error(http_hprof *x, unsigned status, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void job_error(http_hprof *x, unsigned status, const char *code, const char *fmt, ...)
{
    x->status = status;
    snprintf(x->code, sizeof x->code, "%s", code);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(x->msg, sizeof x->msg, fmt, ap);
    va_end(ap);
}

static void compute(http_hprof *x)
{
    cp_http *h = x->h;
    reader_ctx rc = {NULL, ""};
    char err[512] = "";
    int st = cp_dumps_reader_open(h->cfg->dumps, &x->meta, &rc.r, err, sizeof err);
    if (st != CP_OK) {
        job_error(x, st == CP_ENOMEM ? 503 : 500, st == CP_ENOMEM ? "overloaded" : "reader_error",
                  "dump read failed: %s", err);
        return;
    }
    cp_hprof_sum_opts o = {.top = HPROF_TOP_MAX, .zipped = x->zipped, .cancel = stopping, .cancel_ud = h};
    cp_hprof_summary s;
    uint64_t t0 = cp_mono_ns();
    st = cp_hprof_summarize(reader_pread, &rc, x->meta.bytes, &o, &s, err, sizeof err);
    uint64_t ms = (cp_mono_ns() - t0) / 1000000;
    cp_dump_reader_close(rc.r);
    if (st == CP_OK) {
        x->text = summary_text(&s, ms);
        http_log(h, HTTP_LOG_INFO, "hprof: dump %lld summarized in %" PRIu64 " ms (%" PRIu64 " HPROF bytes, %" PRIu64
                 " objects, %" PRIu64 " classes, decoder %zu bytes)", (long long)x->meta.id, ms, s.totals.bytes,
                 s.totals.objects, s.classes_with_objects, s.decoder_memory);
        cp_hprof_summary_free(&s);
    } else if (st == CP_ECORRUPT || st == CP_ELIMIT) {
        x->text = unparsable_text(err);
    } else if (st == CP_EABORT) {
        job_error(x, 503, "unavailable", "the server is stopping");
        return;
    } else if (st == CP_ENOMEM) {
        job_error(x, 503, "overloaded", "out of memory while summarizing the heap dump");
        return;
    } else {
        job_error(x, 500, "reader_error", "dump read failed: %s%s%s", err, rc.err[0] ? ": " : "", rc.err);
        return;
    }
    if (!x->text) job_error(x, 503, "overloaded", "out of memory while building the summary");
    else cache_put(h, x->key, x->text);
}

static void job_done(cp_http *h)
{
    pthread_mutex_lock(&h->hprof_cache->mu);
    h->hprof_cache->pending--;
    pthread_mutex_unlock(&h->hprof_cache->mu);
}

static void hprof_job(void *arg)
{
    http_hprof *x = arg;
    cp_http *h = x->h;
    if (h->stopping) job_error(x, 503, "unavailable", "the server is stopping");
    else if ((x->text = cache_get(h, x->key))) x->cached = 1; /* made while this one waited */
    else compute(x);
    job_done(h);
    struct MHD_Connection *conn = x->conn;
    x->state = JOB_DONE;
    MHD_resume_connection(conn); /* x belongs to the request again from here */
}

/* ---- the endpoint ------------------------------------------------------------------------------ */

/* Not the job's state: a fast job may resume the connection before the call that
 * suspended it has returned, and that call must still send nothing. */
int http_hprof_waiting(const http_hprof *x) { return x && !x->answered; }

void http_hprof_free(http_hprof *x)
{
    if (!x) return;
    free(x->text);
    free(x);
}

/* The answer from a cached text: 200 with the request's fields, or the 422 it records. */
static void answer_text(http_out *o, const cp_dump_meta *m, const char *text, int cached, size_t top)
{
    json_t *j = json_loads(text, 0, NULL);
    if (!j) {
        http_oom(o);
        return;
    }
    const char *why = json_string_value(json_object_get(j, "unparsable"));
    if (why) {
        http_error(o, 422, "unparsable", "the file does not parse as a heap dump: %s", why);
        json_decref(j);
        return;
    }
    json_t *classes = json_object_get(j, "classes");
    while (json_array_size(classes) > top) json_array_remove(classes, json_array_size(classes) - 1);
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)m->id);
    json_object_set_new(j, "id", json_string(id));
    json_object_set_new(j, "type", json_string(cp_dump_kind_name(m->kind)));
    json_object_set_new(j, "top", json_integer((json_int_t)top));
    json_object_set_new(j, "cached", json_boolean(cached));
    o->json = j;
}

/* Heap dumps are zips; a bare HPROF may come as `other` (*.hprof). 0 if neither. */
static int hprof_source(const cp_dump_meta *m, int *zipped)
{
    size_t n = strlen(m->name);
    *zipped = m->kind == CP_DUMP_HEAP;
    return *zipped || (m->kind == CP_DUMP_OTHER && n > 6 && !strcmp(m->name + n - 6, ".hprof"));
}

/* Queues the summary and suspends the connection. 0, or -1 with the answer in o. */
static int start_job(cp_http *h, struct MHD_Connection *conn, const cp_dump_meta *m, int zipped, const char *key,
                     http_req *rq, http_out *o)
{
    struct http_hprof_cache *c = h->hprof_cache;
    pthread_mutex_lock(&c->mu);
    int full = c->pending >= HPROF_MAX_PENDING;
    if (!full) c->pending++;
    pthread_mutex_unlock(&c->mu);
    if (full) {
        http_error(o, 503, "overloaded", "%d heap dump summaries are queued already", HPROF_MAX_PENDING);
        o->retry_after = 10;
        return -1;
    }
    http_hprof *x = calloc(1, sizeof *x);
    if (!x) {
        job_done(h);
        http_oom(o);
        return -1;
    }
    x->h = h;
    x->conn = conn;
    x->meta = *m;
    x->zipped = zipped;
    snprintf(x->key, sizeof x->key, "%s", key);
    x->state = JOB_RUNNING;
    rq->hprof = x;
    MHD_suspend_connection(conn);
    if (http_hprofs_submit(h, hprof_job, x) != CP_OK) {
        job_done(h);
        job_error(x, 503, "unavailable", "the server is stopping");
        x->state = JOB_DONE;
        MHD_resume_connection(conn);
    }
    return 0;
}

static int parse_top(const http_args *a, size_t *top, http_out *o)
{
    const http_arg *t = http_arg_get(a, "top");
    uint64_t v = HPROF_TOP_DEFAULT;
    if (t && t->vlen && cp_parse_u64(t->val, HPROF_TOP_MAX, &v) != CP_OK) {
        http_bad_param(o, "top", "bad_parameter", "'top' must be 0..%d", HPROF_TOP_MAX);
        return -1;
    }
    *top = (size_t)v;
    return 0;
}

void http_api_dump_hprof(cp_http *h, struct MHD_Connection *conn, const http_args *a, const char *id, http_req *rq,
                         http_out *o)
{
    static const char *const allowed[] = {"top", NULL};
    size_t top;
    if (http_check_args(a, allowed, o) || parse_top(a, &top, o)) return;
    http_hprof *x = rq->hprof;
    if (x) { /* called again after the worker resumed the connection (or spuriously before) */
        if (x->state != JOB_DONE) return;
        x->answered = 1;
        if (x->text) answer_text(o, &x->meta, x->text, x->cached, top);
        else http_error(o, x->status, x->code, "%s", x->msg);
        if (o->status == 503) o->retry_after = 5;
        return;
    }
    cp_dump_meta m;
    if (http_dump_get(h, a, id, &m, o)) return;
    int zipped;
    if (!hprof_source(&m, &zipped)) {
        http_error(o, 400, "wrong_type", "dump %lld is of type %s, not heap (nor an .hprof file)", (long long)m.id,
                   cp_dump_kind_name(m.kind));
        return;
    }
    /* the key names a file and a version of the dump: its sha256 when it has a whole one
     * (64 hex digits), else its version number */
    char key[HPROF_KEY_MAX];
    int hex = strlen(m.sha256) == 64;
    for (const char *p = m.sha256; hex && *p; p++) hex = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f');
    if (hex) snprintf(key, sizeof key, "%lld-%.64s", (long long)m.id, m.sha256);
    else snprintf(key, sizeof key, "%lld-v%lld", (long long)m.id, (long long)m.version);
    char *text = cache_get(h, key);
    if (text) {
        answer_text(o, &m, text, 1, top);
        free(text);
        return;
    }
    start_job(h, conn, &m, zipped, key, rq, o);
}
