/* compact.c -- closed hot windows -> Parquet -> object store -> catalog (cp_cold.h;
 * storage.md "Cold tier").
 *
 * One claim at a time:
 *   1. claim          the oldest hour's closed windows (catalog: ready -> persisting)
 *   2. reset          whatever an earlier run of the same claim left (objects + rows of
 *                     files not completed): a rerun starts from a clean slate
 *   3. write          the claim's calls, ordered by namespace, duration range, time,
 *                     through a cold writer (cold_writer.c): one local Parquet file per
 *                     namespace x range in time order, one rollup file per namespace;
 *                     the indexed params' distinct values per file in memory
 *   4. upload         per file: s3_files row "created", then "transferring", then the
 *                     object (deterministic key: the same claim always gives the same key)
 *   5. index          inverted-index rows (file ids are not completed yet: invisible)
 *   6. finish         one transaction: files completed, windows persisted, tables dropped
 * Readers see the hot rows until 6 commits and the files after it, never both, never
 * neither. A crash anywhere leaves the claim persisting; after its lease (or at once with
 * `cloudprof compact`) it is taken over and redone from 2, giving the same objects and
 * rows.
 */
#include "store/cp_cold.h"
#include "query/cp_query.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define INDEX_MAX_PARAMS 1024             /* indexed param names considered (the rest are not indexed) */
#define INDEX_COMMIT_EVERY 5000
#define CLAIM_RETRIES 50                  /* x 200 ms while a claim is contended */

typedef struct compactor {
    const cp_compactor_config *cfg;
    const cp_compact_job *job;
    char *dir;                            /* tmp_dir/<claim> */
    char *params[INDEX_MAX_PARAMS];       /* indexed param names */
    size_t nparams;
    cp_cold_writer *w;
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

static int on_call(void *ud, const cp_call *c)
{
    compactor *k = ud;
    int st = cp_cold_writer_add(k->w, c);
    if (st != CP_OK) failf(k, st, "%s%s", cp_cold_writer_errmsg(k->w), NULL);
    return st;
}

/* ---- steps ---------------------------------------------------------------------------------- */

static int load_param(void *ud, const char *name)
{
    compactor *k = ud;
    if (k->nparams == INDEX_MAX_PARAMS) return 0;
    k->params[k->nparams] = strdup(name);
    if (!k->params[k->nparams]) return CP_ENOMEM;
    k->nparams++;
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

static void file_desc(const compactor *k, const cp_cold_output *f, const char *status, cp_buf *url,
                      cp_cold_file *d)
{
    memset(d, 0, sizeof *d);
    cp_buf_reset(url);
    if (k->cfg->store->ops->url(k->cfg->store, f->key, url) != CP_OK || cp_buf_putc(url, 0) != CP_OK)
        cp_buf_reset(url);
    d->uuid = f->key;
    d->key = f->key;
    d->url = url->len ? (const char *)url->data : f->key;
    d->local_path = f->path;
    d->file_type = f->type == CP_COLD_FILE_ROLLUP ? "rollup" : "calls";
    d->ns = f->ns;
    d->duration_range = f->type == CP_COLD_FILE_CALLS ? cp_cold_range_upper(f->range) : 0;
    d->start_ms = k->job->from_ms;
    d->end_ms = k->job->to_ms;
    d->min_ts = f->min_ts;
    d->max_ts = f->max_ts;
    d->rows = f->rows;
    d->size = f->size;
    d->status = status;
    d->services = f->services;
    d->indexed_params = f->indexed;
    d->indexed_maxlen = f->type == CP_COLD_FILE_CALLS ? f->indexed_maxlen : NULL;
    d->claim = k->job->claim;
}

static int upload(compactor *k, cp_compact_stats *st)
{
    cp_catalog *cat = k->cfg->cat;
    cp_buf url;
    cp_buf_init(&url);
    int r = CP_OK;
    size_t nfiles = cp_cold_writer_count(k->w);
    for (size_t i = 0; r == CP_OK && i < nfiles; i++) {
        cp_cold_output o, *f = &o;
        cp_cold_writer_output(k->w, i, &o);
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
        snprintf(line, sizeof line, "compact: %s: %lld %s, %lld bytes", f->key, (long long)f->rows,
                 f->type == CP_COLD_FILE_ROLLUP ? "rollup entries" : "calls", (long long)f->size);
        progress(k, line);
    }
    cp_buf_free(&url);
    if (r != CP_OK) return failf(k, r, "catalog: %s%s", cp_catalog_errmsg(cat), NULL);
    crash_point(k, "uploaded");
    return CP_OK;
}

typedef struct ix_put {
    compactor *k;
    const char *uuid;
    size_t pending;
    cp_compact_stats *st;
} ix_put;

static int index_one(void *ud, const char *param, const char *v, size_t vlen)
{
    ix_put *x = ud;
    cp_catalog *cat = x->k->cfg->cat;
    int r = cp_catalog_index_put(cat, param, strlen(param), v, vlen, x->uuid);
    x->st->index_rows++;
    if (r == CP_OK && ++x->pending == INDEX_COMMIT_EVERY) {
        r = cp_catalog_commit(cat);
        x->pending = 0;
    }
    return r;
}

static int index_files(compactor *k, cp_compact_stats *st)
{
    cp_catalog *cat = k->cfg->cat;
    ix_put x = {k, NULL, 0, st};
    int r = CP_OK;
    for (size_t i = 0; r == CP_OK && i < cp_cold_writer_count(k->w); i++) {
        cp_cold_output o;
        cp_cold_writer_output(k->w, i, &o);
        if (o.type != CP_COLD_FILE_CALLS) continue;
        x.uuid = o.key;
        r = cp_cold_writer_index_each(k->w, i, index_one, &x);
    }
    if (r == CP_OK) r = cp_catalog_commit(cat);
    if (r != CP_OK) return failf(k, r, "inverted index: %s%s", cp_catalog_errmsg(cat), NULL);
    crash_point(k, "indexed");
    return CP_OK;
}

static int finish(compactor *k)
{
    size_t n = cp_cold_writer_count(k->w);
    const char **uuids = calloc(n ? n : 1, sizeof *uuids);
    if (!uuids) return CP_ENOMEM;
    for (size_t i = 0; i < n; i++) {
        cp_cold_output o;
        cp_cold_writer_output(k->w, i, &o);
        uuids[i] = o.key;
    }
    int r = cp_catalog_compact_finish(k->cfg->cat, k->job, uuids, n);
    free(uuids);
    if (r != CP_OK) return failf(k, r, "finish: %s%s", cp_catalog_errmsg(k->cfg->cat), NULL);
    crash_point(k, "finished");
    return CP_OK;
}

static void compactor_free(compactor *k)
{
    cp_cold_writer_free(k->w);
    for (size_t i = 0; i < k->nparams; i++) free(k->params[i]);
    if (k->dir) rm_tree(k->dir);
    free(k->dir);
}

/* The claim's calls through a cold writer into k->dir. */
static int write_files(compactor *k)
{
    const cp_compactor_config *cfg = k->cfg;
    cp_cold_writer_config wc = {
        .dir = k->dir,
        .hour_ms = k->job->hour_ms,
        .claim = k->job->claim,
        .pq = cfg->pq,
        .index_params = (const char *const *)k->params,
        .nindex = k->nparams,
        /* no list given: the built-in one, as serve's default */
        .idle = cfg->idle ? cfg->idle : cp_system_idle_default,
        .nidle = cfg->idle ? cfg->nidle : cp_system_idle_default_count,
        .idle_fp = cfg->idle ? cp_rollup_idle_fp(cfg->idle, cfg->nidle)
                             : cp_rollup_idle_fp(cp_system_idle_default, cp_system_idle_default_count),
        .stop = cfg->stop,
    };
    char err[256];
    int r = cp_cold_writer_new(&wc, &k->w, err, sizeof err);
    if (r != CP_OK) return failf(k, r, "%s%s", err, NULL);
    k->err[0] = 0;
    r = cp_catalog_compact_calls(cfg->cat, k->job, on_call, k);
    if (r == CP_OK) {
        r = cp_cold_writer_finish(k->w);
        if (r != CP_OK) failf(k, r, "%s%s", cp_cold_writer_errmsg(k->w), NULL);
    } else if (!k->err[0]) {
        failf(k, r, "read the claim: %s%s", cp_catalog_errmsg(cfg->cat), NULL);
    }
    return r;
}

static int compact_one(const cp_compactor_config *cfg, const cp_compact_job *job, cp_compact_stats *st, char *err,
                       size_t errlen)
{
    compactor k = {.cfg = cfg, .job = job, .err = err, .errlen = errlen};
    size_t dlen = strlen(cfg->tmp_dir) + sizeof job->claim + 16;
    k.dir = malloc(dlen);
    int r = k.dir ? CP_OK : CP_ENOMEM;
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
    if (r == CP_OK) r = write_files(&k);
    if (r == CP_OK) r = upload(&k, st);
    if (r == CP_OK) r = index_files(&k, st);
    if (r == CP_OK) r = finish(&k);
    if (r == CP_OK) {
        st->claims++;
        st->windows += job->windows;
        for (size_t i = 0; i < cp_cold_writer_count(k.w); i++) {
            cp_cold_output o;
            cp_cold_writer_output(k.w, i, &o);
            if (o.type == CP_COLD_FILE_CALLS) st->calls += (uint64_t)o.rows;
        }
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
