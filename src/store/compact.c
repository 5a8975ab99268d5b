/* compact.c -- closed hot windows -> Parquet -> object store -> catalog (cp_cold.h;
 * storage.md "Cold tier").
 *
 * One claim at a time:
 *   1. claim          the oldest hour's closed windows (catalog: ready -> persisting)
 *   2. reset          whatever an earlier run of the same claim left (objects + rows of
 *                     files not completed): a rerun starts from a clean slate
 *   3. write          the claim's calls, ordered by namespace, duration range, pod, time,
 *                     into one local Parquet file per namespace x range; the indexed
 *                     params' distinct values per file are collected in memory
 *   4. upload         per file: s3_files row "created", then "transferring", then the
 *                     object (deterministic key: the same claim always gives the same key)
 *   5. index          inverted-index rows (file ids are not completed yet: invisible)
 *   6. finish         one transaction: files completed, windows persisted, tables dropped
 * Readers see the hot rows until 6 commits and the files after it, never both, never
 * neither. A crash anywhere leaves the claim persisting; after its lease (or at once with
 * `cloudprof compact`) it is taken over and redone from 2, giving the same objects and
 * rows. A param whose distinct values in one file exceed INDEX_MAX_VALUES is left out of
 * that file's indexed_params, so the index never claims to cover what it does not.
 */
#include "cp_cold.h"
#include "query/cp_query.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define INDEX_MAX_PARAMS 1024             /* indexed param names considered (the rest are not indexed) */
#define INDEX_MAX_VALUES (1u << 20)       /* distinct values per param per file */
#define INDEX_MAX_VALUE_LEN 512           /* longer values are not indexed (a search still scans) */
#define FILE_MAX_SERVICES 256
#define INDEX_COMMIT_EVERY 5000
#define CLAIM_RETRIES 50                  /* x 200 ms while a claim is contended */
#define PARAM_SLOTS (2 * INDEX_MAX_PARAMS)  /* power of two */

/* ---- one output file ---------------------------------------------------------------------- */

typedef struct ix_entry {
    uint64_t hash;
    size_t off;                           /* into text */
    uint32_t len;
    uint16_t param;
    uint16_t used;
} ix_entry;

typedef struct out_file {
    char *ns;
    size_t ns_len;
    int range;
    char *path;                           /* local Parquet file */
    char *key;                            /* object key (= uuid) */
    int64_t rows, size, min_ts, max_ts;
    char *services;                       /* JSON array */
    char *indexed;                        /* JSON array of the params indexed for it */
    /* distinct (param, value) pairs */
    ix_entry *ix;
    size_t nix, capix;
    cp_buf ix_text;
    uint32_t nvalues[INDEX_MAX_PARAMS];
    uint8_t overflow[INDEX_MAX_PARAMS];
} out_file;

typedef struct compactor {
    const cp_compactor_config *cfg;
    const cp_compact_job *job;
    char *dir;                            /* tmp_dir/<claim> */
    char *params[INDEX_MAX_PARAMS];       /* indexed param names */
    size_t nparams;
    uint16_t param_slot[PARAM_SLOTS];     /* open addressing on the names: index + 1, 0 = empty */
    out_file *files;
    size_t nfiles, capfiles;
    /* the file being written */
    out_file *cur;
    FILE *fp;
    cp_pq_writer *w;
    cp_cold_rowbuf *rb;
    char *svc[FILE_MAX_SERVICES];
    size_t nsvc;
    cp_buf scratch;
    char *err;
    size_t errlen;
} compactor;

static int failf(compactor *k, int st, const char *fmt, const char *a, const char *b)
{
    snprintf(k->err, k->errlen, fmt, a ? a : "", b ? b : "");
    return st;
}

static void progress(const compactor *k, const char *line)
{
    if (k->cfg->progress) k->cfg->progress(k->cfg->progress_ud, line);
}

static void crash_point(const compactor *k, const char *step)
{
    if (k->cfg->crash && k->cfg->crash(k->cfg->crash_ud, step, k->job)) _exit(3);
}

static void out_file_free(out_file *f)
{
    free(f->ns);
    free(f->path);
    free(f->key);
    free(f->services);
    free(f->indexed);
    free(f->ix);
    cp_buf_free(&f->ix_text);
}

/* ---- the index set ---------------------------------------------------------------------- */

static uint64_t ix_hash(size_t param, const char *v, size_t n)
{
    return cp_fnv64(CP_FNV_SEED ^ (param * 0x9e3779b97f4a7c15ULL), v, n);
}

static int ix_grow(out_file *f)
{
    size_t cap = f->capix ? f->capix * 2 : 1024;
    ix_entry *n = calloc(cap, sizeof *n);
    if (!n) return CP_ENOMEM;
    for (size_t i = 0; i < f->capix; i++) {
        if (!f->ix[i].used) continue;
        size_t j = f->ix[i].hash & (cap - 1);
        while (n[j].used) j = (j + 1) & (cap - 1);
        n[j] = f->ix[i];
    }
    free(f->ix);
    f->ix = n;
    f->capix = cap;
    return CP_OK;
}

static int ix_add(out_file *f, size_t param, const char *v, size_t n)
{
    if (f->overflow[param]) return CP_OK;
    if (n > INDEX_MAX_VALUE_LEN || f->nvalues[param] >= INDEX_MAX_VALUES) {
        f->overflow[param] = 1; /* not indexed for this file: never skipped for it */
        return CP_OK;
    }
    if ((f->nix + 1) * 2 > f->capix && ix_grow(f) != CP_OK) return CP_ENOMEM;
    uint64_t h = ix_hash(param, v, n);
    size_t j = h & (f->capix - 1);
    const uint8_t *t = f->ix_text.data;
    for (; f->ix[j].used; j = (j + 1) & (f->capix - 1)) {
        const ix_entry *e = &f->ix[j];
        if (e->hash == h && e->param == param && e->len == n && !memcmp(t + e->off, v, n)) return CP_OK;
    }
    ix_entry *e = &f->ix[j];
    e->hash = h;
    e->param = (uint16_t)param;
    e->len = (uint32_t)n;
    e->used = 1;
    e->off = f->ix_text.len;
    f->nix++;
    f->nvalues[param]++;
    return cp_buf_append(&f->ix_text, v, n);
}

static size_t param_hash(const char *name, size_t len)
{
    return (size_t)cp_fnv64(CP_FNV_SEED, name, len) & (PARAM_SLOTS - 1);
}

/* Index of an indexed param name, or -1 (every value of every call asks: a hash, not a
 * scan of the names). */
static int param_find(const compactor *k, const uint8_t *name, size_t len)
{
    for (size_t i = param_hash((const char *)name, len);; i = (i + 1) & (PARAM_SLOTS - 1)) {
        uint16_t v = k->param_slot[i];
        if (!v) return -1;
        const char *p = k->params[v - 1];
        if (strlen(p) == len && !memcmp(p, name, len)) return v - 1;
    }
}

/* The call's values of indexed params, from the row's already parsed params map. */
static int index_row(compactor *k, const cp_pq_value *params)
{
    for (size_t i = 0; i < params->nmap; i++) {
        const cp_pq_map_entry *e = &params->map[i];
        int pi = param_find(k, e->key.p, e->key.len);
        for (size_t j = 0; pi >= 0 && j < e->nvalues; j++)
            if (ix_add(k->cur, (size_t)pi, (const char *)e->values[j].p, e->values[j].len) != CP_OK) return CP_ENOMEM;
    }
    return CP_OK;
}

/* ---- writing files -------------------------------------------------------------------- */

static int sink(void *ud, const void *p, size_t n)
{
    compactor *k = ud;
    return fwrite(p, 1, n, k->fp) == n ? 0 : CP_EIO;
}

static int json_names(char **out, char *const *names, size_t n, const uint8_t *skip)
{
    cp_buf b;
    cp_buf_init(&b);
    int st = cp_buf_putc(&b, '[');
    size_t k = 0;
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        if (skip && skip[i]) continue;
        if (k++) st = cp_buf_putc(&b, ',');
        if (st == CP_OK) st = cp_json_str(&b, names[i], strlen(names[i]));
    }
    if (st == CP_OK) st = cp_buf_append(&b, "]", 2);
    if (st != CP_OK) {
        cp_buf_free(&b);
        return st;
    }
    *out = (char *)b.data;
    return CP_OK;
}

static int file_open(compactor *k, const cp_call *c)
{
    if (k->nfiles == k->capfiles) {
        size_t cap = k->capfiles ? k->capfiles * 2 : 16;
        out_file *n = realloc(k->files, cap * sizeof *n);
        if (!n) return CP_ENOMEM;
        k->files = n;
        k->capfiles = cap;
    }
    out_file *f = &k->files[k->nfiles++];
    memset(f, 0, sizeof *f);
    cp_buf_init(&f->ix_text);
    k->cur = f;
    f->range = cp_cold_range_of(c->duration_ms);
    f->ns = malloc(c->ns_len + 1);
    if (!f->ns) return CP_ENOMEM;
    memcpy(f->ns, c->ns, c->ns_len);
    f->ns[c->ns_len] = 0;
    f->ns_len = c->ns_len;
    f->min_ts = INT64_MAX;
    f->max_ts = INT64_MIN;
    cp_buf key;
    cp_buf_init(&key);
    int st = cp_cold_calls_key(k->job->hour_ms, c->ns, c->ns_len, f->range, k->job->claim, &key);
    if (st == CP_OK) st = cp_buf_putc(&key, 0);
    if (st != CP_OK) {
        cp_buf_free(&key);
        return st;
    }
    f->key = (char *)key.data;
    size_t plen = strlen(k->dir) + 32;
    f->path = malloc(plen);
    if (!f->path) return CP_ENOMEM;
    snprintf(f->path, plen, "%s/%zu.parquet", k->dir, k->nfiles - 1);
    k->fp = fopen(f->path, "wb");
    if (!k->fp) return failf(k, CP_EIO, "create %s: %s", f->path, strerror(errno));
    k->nsvc = 0;
    char err[256];
    st = cp_pq_writer_new(cp_cold_calls_schema, CP_COLD_C_COUNT, k->cfg->pq, sink, k, &k->w, err, sizeof err);
    if (st != CP_OK) return failf(k, st, "parquet writer: %s%s", err, NULL);
    return CP_OK;
}

static int file_close(compactor *k)
{
    out_file *f = k->cur;
    if (!f) return CP_OK;
    int st = k->w ? cp_pq_writer_finish(k->w) : CP_OK;
    if (st != CP_OK) failf(k, st, "write %s: %s", f->path, cp_pq_writer_errmsg(k->w));
    if (k->w) f->size = (int64_t)cp_pq_writer_bytes(k->w);
    cp_pq_writer_free(k->w);
    k->w = NULL;
    if (k->fp) {
        if (st == CP_OK && (fflush(k->fp) != 0 || fsync(fileno(k->fp)) != 0))
            st = failf(k, CP_EIO, "write %s: %s", f->path, strerror(errno));
        if (fclose(k->fp) != 0 && st == CP_OK) st = failf(k, CP_EIO, "close %s: %s", f->path, strerror(errno));
        k->fp = NULL;
    }
    if (st == CP_OK) st = json_names(&f->services, k->svc, k->nsvc, NULL);
    if (st == CP_OK) st = json_names(&f->indexed, k->params, k->nparams, f->overflow);
    for (size_t i = 0; i < k->nsvc; i++) free(k->svc[i]);
    k->nsvc = 0;
    k->cur = NULL;
    return st;
}

static int note_service(compactor *k, const cp_call *c)
{
    for (size_t i = 0; i < k->nsvc; i++)
        if (strlen(k->svc[i]) == c->service_len && !memcmp(k->svc[i], c->service, c->service_len)) return CP_OK;
    if (k->nsvc == FILE_MAX_SERVICES) return CP_OK;
    char *s = malloc(c->service_len + 1);
    if (!s) return CP_ENOMEM;
    memcpy(s, c->service, c->service_len);
    s[c->service_len] = 0;
    k->svc[k->nsvc++] = s;
    return CP_OK;
}

static int on_call(void *ud, const cp_call *c)
{
    compactor *k = ud;
    if (k->cfg->stop && *k->cfg->stop) return failf(k, CP_EABORT, "compaction stopped%s%s", NULL, NULL);
    out_file *f = k->cur;
    int st = CP_OK;
    if (!f || f->range != cp_cold_range_of(c->duration_ms) || f->ns_len != c->ns_len ||
        memcmp(f->ns, c->ns, c->ns_len) != 0) {
        st = file_close(k);
        if (st == CP_OK) st = file_open(k, c);
        if (st != CP_OK) return st;
        f = k->cur;
    }
    cp_pq_value row[CP_COLD_C_COUNT];
    st = cp_cold_call_row(k->rb, c, row);
    if (st != CP_OK) {
        char ts[32];
        snprintf(ts, sizeof ts, "%lld", (long long)c->ts_ms);
        return failf(k, st, "call at %s of pod %s: params are not valid JSON", ts, c->pod);
    }
    st = cp_pq_writer_add(k->w, row);
    if (st != CP_OK) return failf(k, st, "write %s: %s", f->path, cp_pq_writer_errmsg(k->w));
    f->rows++;
    if (c->ts_ms < f->min_ts) f->min_ts = c->ts_ms;
    if (c->ts_ms > f->max_ts) f->max_ts = c->ts_ms;
    st = note_service(k, c);
    if (st == CP_OK && k->nparams) st = index_row(k, &row[CP_COLD_C_PARAMS]);
    return st;
}

/* ---- steps ---------------------------------------------------------------------------------- */

static int load_param(void *ud, const char *name)
{
    compactor *k = ud;
    if (k->nparams == INDEX_MAX_PARAMS) return 0;
    k->params[k->nparams] = strdup(name);
    if (!k->params[k->nparams]) return CP_ENOMEM;
    size_t i = param_hash(name, strlen(name));
    while (k->param_slot[i]) i = (i + 1) & (PARAM_SLOTS - 1);
    k->param_slot[i] = (uint16_t)++k->nparams;
    return 0;
}

static int delete_object(void *ud, const char *key)
{
    compactor *k = ud;
    char err[512];
    int st = k->cfg->store->ops->del(k->cfg->store, key, err, sizeof err);
    if (st != CP_OK && st != CP_ENOTFOUND) return failf(k, st, "delete %s: %s", key, err);
    return CP_OK;
}

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char p[4096];
            snprintf(p, sizeof p, "%s/%s", path, e->d_name);
            struct stat sb;
            if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
                rm_tree(p);
            else
                unlink(p);
        }
        closedir(d);
    }
    rmdir(path);
}

static void file_desc(const compactor *k, const out_file *f, const char *status, cp_buf *url, cp_cold_file *d)
{
    memset(d, 0, sizeof *d);
    cp_buf_reset(url);
    if (k->cfg->store->ops->url(k->cfg->store, f->key, url) != CP_OK || cp_buf_putc(url, 0) != CP_OK)
        cp_buf_reset(url);
    d->uuid = f->key;
    d->key = f->key;
    d->url = url->len ? (const char *)url->data : f->key;
    d->local_path = f->path;
    d->file_type = "calls";
    d->ns = f->ns;
    d->duration_range = cp_cold_range_upper(f->range);
    d->start_ms = k->job->from_ms;
    d->end_ms = k->job->to_ms;
    d->min_ts = f->min_ts;
    d->max_ts = f->max_ts;
    d->rows = f->rows;
    d->size = f->size;
    d->status = status;
    d->services = f->services;
    d->indexed_params = f->indexed;
    d->claim = k->job->claim;
}

static int upload(compactor *k, cp_compact_stats *st)
{
    cp_catalog *cat = k->cfg->cat;
    cp_buf url;
    cp_buf_init(&url);
    int r = CP_OK;
    for (size_t i = 0; r == CP_OK && i < k->nfiles; i++) {
        out_file *f = &k->files[i];
        cp_cold_file d;
        file_desc(k, f, "created", &url, &d);
        r = cp_catalog_cold_file_put(cat, k->job, &d);
        if (r != CP_OK) break;
        crash_point(k, "written");
        file_desc(k, f, "transferring", &url, &d);
        r = cp_catalog_cold_file_put(cat, k->job, &d);
        if (r != CP_OK) break;
        char err[512];
        r = k->cfg->store->ops->put_file(k->cfg->store, f->key, f->path, err, sizeof err);
        if (r != CP_OK) {
            failf(k, r, "upload %s: %s", f->key, err);
            cp_buf_free(&url);
            return r;
        }
        st->files++;
        st->bytes += (uint64_t)f->size;
        char line[1024];
        snprintf(line, sizeof line, "compact: %s: %lld calls, %lld bytes", f->key, (long long)f->rows,
                 (long long)f->size);
        progress(k, line);
    }
    cp_buf_free(&url);
    if (r != CP_OK) return failf(k, r, "catalog: %s%s", cp_catalog_errmsg(cat), NULL);
    crash_point(k, "uploaded");
    return CP_OK;
}

static int index_files(compactor *k, cp_compact_stats *st)
{
    cp_catalog *cat = k->cfg->cat;
    size_t pending = 0;
    int r = CP_OK;
    for (size_t i = 0; r == CP_OK && i < k->nfiles; i++) {
        out_file *f = &k->files[i];
        for (size_t j = 0; r == CP_OK && j < f->capix; j++) {
            const ix_entry *e = &f->ix[j];
            if (!e->used || f->overflow[e->param]) continue;
            const char *name = k->params[e->param];
            r = cp_catalog_index_put(cat, name, strlen(name), (const char *)f->ix_text.data + e->off, e->len, f->key);
            st->index_rows++;
            if (r == CP_OK && ++pending == INDEX_COMMIT_EVERY) {
                r = cp_catalog_commit(cat);
                pending = 0;
            }
        }
    }
    if (r == CP_OK) r = cp_catalog_commit(cat);
    if (r != CP_OK) return failf(k, r, "inverted index: %s%s", cp_catalog_errmsg(cat), NULL);
    crash_point(k, "indexed");
    return CP_OK;
}

static int finish(compactor *k)
{
    const char **uuids = calloc(k->nfiles ? k->nfiles : 1, sizeof *uuids);
    if (!uuids) return CP_ENOMEM;
    for (size_t i = 0; i < k->nfiles; i++) uuids[i] = k->files[i].key;
    int r = cp_catalog_compact_finish(k->cfg->cat, k->job, uuids, k->nfiles);
    free(uuids);
    if (r != CP_OK) return failf(k, r, "finish: %s%s", cp_catalog_errmsg(k->cfg->cat), NULL);
    crash_point(k, "finished");
    return CP_OK;
}

static void compactor_free(compactor *k)
{
    if (k->w) cp_pq_writer_free(k->w);
    if (k->fp) fclose(k->fp);
    for (size_t i = 0; i < k->nsvc; i++) free(k->svc[i]);
    for (size_t i = 0; i < k->nfiles; i++) out_file_free(&k->files[i]);
    free(k->files);
    for (size_t i = 0; i < k->nparams; i++) free(k->params[i]);
    cp_cold_rowbuf_free(k->rb);
    cp_buf_free(&k->scratch);
    if (k->dir) rm_tree(k->dir);
    free(k->dir);
}

static int compact_one(const cp_compactor_config *cfg, const cp_compact_job *job, cp_compact_stats *st, char *err,
                       size_t errlen)
{
    compactor k = {.cfg = cfg, .job = job, .err = err, .errlen = errlen};
    cp_buf_init(&k.scratch);
    size_t dlen = strlen(cfg->tmp_dir) + sizeof job->claim + 16;
    k.dir = malloc(dlen);
    int r = k.dir && cp_cold_rowbuf_new(&k.rb) == CP_OK ? CP_OK : CP_ENOMEM;
    if (r == CP_OK) {
        snprintf(k.dir, dlen, "%s/compact-%s", cfg->tmp_dir, job->claim);
        rm_tree(k.dir); /* a crashed run's local files */
        if (cp_mkdirs(k.dir, 0755) != CP_OK) r = failf(&k, CP_EIO, "create %s: %s", k.dir, strerror(errno));
    }
    if (r == CP_OK) {
        r = cp_catalog_indexed_params(cfg->cat, load_param, &k);
        if (r != CP_OK) failf(&k, r, "indexed params: %s%s", cp_catalog_errmsg(cfg->cat), NULL);
    }
    if (r == CP_OK) {
        r = cp_catalog_compact_reset(cfg->cat, job, delete_object, &k);
        if (r != CP_OK && !err[0]) failf(&k, r, "reset: %s%s", cp_catalog_errmsg(cfg->cat), NULL);
    }
    if (r == CP_OK) {
        err[0] = 0;
        r = cp_catalog_compact_calls(cfg->cat, job, on_call, &k);
        if (r == CP_OK) r = file_close(&k);
        else if (!err[0]) failf(&k, r, "read the claim: %s%s", cp_catalog_errmsg(cfg->cat), NULL);
    }
    if (r == CP_OK) r = upload(&k, st);
    if (r == CP_OK) r = index_files(&k, st);
    if (r == CP_OK) r = finish(&k);
    if (r == CP_OK) {
        st->claims++;
        st->windows += job->windows;
        for (size_t i = 0; i < k.nfiles; i++) st->calls += (uint64_t)k.files[i].rows;
        if (job->taken_over) st->taken_over++;
    }
    compactor_free(&k);
    return r;
}

int cp_compact_run(const cp_compactor_config *cfg, int64_t until_ms, int64_t now_ms, size_t max_claims,
                   cp_compact_stats *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    err[0] = 0;
    for (size_t n = 0; max_claims == 0 || n < max_claims; n++) {
        cp_compact_opts o = {until_ms, cfg->node, cfg->lease_ms, now_ms};
        cp_compact_job job;
        int r = cp_catalog_compact_claim(cfg->cat, &o, &job);
        /* CP_AGAIN: the windows are locked by writers or other claimers for now */
        for (int tries = 0; r == CP_AGAIN && tries < CLAIM_RETRIES && !(cfg->stop && *cfg->stop); tries++) {
            struct timespec ts = {0, 200000000};
            nanosleep(&ts, NULL);
            r = cp_catalog_compact_claim(cfg->cat, &o, &job);
        }
        if (r == CP_ENOTFOUND || r == CP_AGAIN) return CP_OK;
        if (r != CP_OK) {
            snprintf(err, errlen, "claim: %s", cp_catalog_errmsg(cfg->cat));
            return r;
        }
        snprintf(job.node, sizeof job.node, "%s", cfg->node ? cfg->node : "");
        if (cfg->crash && cfg->crash(cfg->crash_ud, "claimed", &job)) _exit(3);
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        uint64_t files0 = st->files, calls0 = st->calls, bytes0 = st->bytes;
        r = compact_one(cfg, &job, st, err, errlen);
        if (r != CP_OK) {
            cp_catalog_compact_release(cfg->cat, &job);
            return r;
        }
        clock_gettime(CLOCK_MONOTONIC, &t1);
        char line[256];
        snprintf(line, sizeof line, "compact: claim %s%s: %zu windows, %llu calls -> %llu files, %llu bytes in %.2f s",
                 job.claim, job.taken_over ? " (taken over)" : "", job.windows,
                 (unsigned long long)(st->calls - calls0), (unsigned long long)(st->files - files0),
                 (unsigned long long)(st->bytes - bytes0),
                 (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
        if (cfg->progress) cfg->progress(cfg->progress_ud, line);
    }
    return CP_OK;
}
