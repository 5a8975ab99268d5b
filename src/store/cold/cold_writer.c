/* cold_writer.c -- calls -> local Parquet files (cp_cold.h "the cold writer"): one calls
 * file per namespace x duration range, rows in time order, and one rollup file per
 * namespace. The compactor's step 3; bench/cold_query writes its data set with it too.
 *
 * Memory: one row at a time goes to the Parquet writer (which buffers a row group), the
 * distinct indexed values of the open calls file, and the rollup entries of the open
 * namespace -- at most rollup_max_entries, then they are written out as a batch (keys
 * may then repeat in the file; entries are additive).
 */
#include "store/cp_cold.h"
#include "query/cp_query.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define INDEX_MAX_PARAMS 1024             /* indexed param names considered (the rest are not indexed) */
#define INDEX_MAX_VALUES (1u << 20)       /* distinct values per param per file */
#define INDEX_MAX_VALUE_LEN 512           /* longer values are not indexed (a search still scans) */
#define FILE_MAX_SERVICES 256
#define PARAM_SLOTS (2 * INDEX_MAX_PARAMS) /* power of two */

typedef struct ix_entry {
    uint64_t hash;
    size_t off;                           /* into text */
    uint32_t len;
    uint16_t param;
    uint16_t used;
} ix_entry;

typedef struct out_file {
    int type;
    char *ns;
    size_t ns_len;
    int range;
    char *path;                           /* local Parquet file */
    char *key;                            /* object key (= uuid) */
    int64_t rows, size, min_ts, max_ts;
    char *services;                       /* JSON array */
    char *indexed;                        /* JSON array of the params indexed for it */
    char *maxlen;                         /* JSON object: param -> longest value */
    ix_entry *ix;                         /* distinct (param, value) pairs */
    size_t nix, capix;
    cp_buf ix_text;
    uint32_t nvalues[INDEX_MAX_PARAMS];
    uint32_t longest[INDEX_MAX_PARAMS];
    uint8_t overflow[INDEX_MAX_PARAMS];
} out_file;

/* A Parquet file being written. */
typedef struct pq_out {
    FILE *fp;
    cp_pq_writer *w;
    size_t file;                          /* index in files */
} pq_out;

struct cp_cold_writer {
    cp_cold_writer_config cfg;
    char *params[INDEX_MAX_PARAMS];       /* indexed param names */
    size_t nparams;
    uint16_t param_slot[PARAM_SLOTS];     /* open addressing on the names: index + 1, 0 = empty */
    out_file *files;
    size_t nfiles, capfiles;
    pq_out calls, rollup;                 /* the open calls file and rollup file */
    int has_calls, has_rollup;
    cp_rollup_acc *acc;                   /* the open namespace's entries */
    cp_cold_rowbuf *rb;
    char *svc[FILE_MAX_SERVICES];
    size_t nsvc;
    cp_call_ref last;                     /* the previous call of the open calls file */
    char err[512];
};

static int failf(cp_cold_writer *w, int st, const char *fmt, const char *a, const char *b)
{
    snprintf(w->err, sizeof w->err, fmt, a ? a : "", b ? b : "");
    return st;
}

static void out_file_free(out_file *f)
{
    free(f->ns);
    free(f->path);
    free(f->key);
    free(f->services);
    free(f->indexed);
    free(f->maxlen);
    free(f->ix);
    cp_buf_free(&f->ix_text);
}

/* ---- the index set -------------------------------------------------------------------------- */

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

static int ix_add(out_file *f, size_t param, const char *raw, size_t n)
{
    if (f->overflow[param]) return CP_OK;
    if (n > INDEX_MAX_VALUE_LEN || f->nvalues[param] >= INDEX_MAX_VALUES) {
        f->overflow[param] = 1; /* not indexed for this file: never skipped for it */
        return CP_OK;
    }
    if (n > f->longest[param]) f->longest[param] = (uint32_t)n;
    char v[INDEX_MAX_VALUE_LEN]; /* ASCII-lowercased, as the search compares */
    for (size_t i = 0; i < n; i++) v[i] = raw[i] >= 'A' && raw[i] <= 'Z' ? (char)(raw[i] + 32) : raw[i];
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
static int param_find(const cp_cold_writer *w, const uint8_t *name, size_t len)
{
    if (!w->nparams) return -1;
    for (size_t i = param_hash((const char *)name, len);; i = (i + 1) & (PARAM_SLOTS - 1)) {
        uint16_t v = w->param_slot[i];
        if (!v) return -1;
        const char *p = w->params[v - 1];
        if (strlen(p) == len && !memcmp(p, name, len)) return v - 1;
    }
}

/* The call's values of indexed params, from the row's already parsed params map. */
static int index_row(cp_cold_writer *w, out_file *f, const cp_pq_value *params)
{
    for (size_t i = 0; i < params->nmap; i++) {
        const cp_pq_map_entry *e = &params->map[i];
        int pi = param_find(w, e->key.p, e->key.len);
        for (size_t j = 0; pi >= 0 && j < e->nvalues; j++)
            if (ix_add(f, (size_t)pi, (const char *)e->values[j].p, e->values[j].len) != CP_OK) return CP_ENOMEM;
    }
    return CP_OK;
}

/* ---- files ---------------------------------------------------------------------------------- */

static int sink(void *ud, const void *p, size_t n)
{
    FILE *fp = ud;
    return fwrite(p, 1, n, fp) == n ? 0 : CP_EIO;
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

/* {"param":longest,...} of the params indexed for the file. */
static int json_maxlen(char **out, char *const *names, size_t n, const out_file *f)
{
    cp_buf b;
    cp_buf_init(&b);
    int st = cp_buf_putc(&b, '{');
    size_t k = 0;
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        if (f->overflow[i]) continue;
        if (k++) st = cp_buf_putc(&b, ',');
        if (st == CP_OK) st = cp_json_str(&b, names[i], strlen(names[i]));
        if (st == CP_OK) st = cp_buf_printf(&b, ":%u", (unsigned)f->longest[i]);
    }
    if (st == CP_OK) st = cp_buf_append(&b, "}", 2);
    if (st != CP_OK) {
        cp_buf_free(&b);
        return st;
    }
    *out = (char *)b.data;
    return CP_OK;
}

/* A new entry in files for (type, namespace of c, range), with its key and local path. */
static int file_new(cp_cold_writer *w, int type, const char *ns, size_t ns_len, int range, out_file **out)
{
    if (cp_grow((void **)&w->files, &w->capfiles, w->nfiles + 1, sizeof *w->files, 16) != CP_OK) return CP_ENOMEM;
    out_file *f = &w->files[w->nfiles++];
    memset(f, 0, sizeof *f);
    cp_buf_init(&f->ix_text);
    f->type = type;
    f->range = range;
    f->min_ts = INT64_MAX;
    f->max_ts = INT64_MIN;
    f->ns = malloc(ns_len + 1);
    if (!f->ns) return CP_ENOMEM;
    memcpy(f->ns, ns, ns_len);
    f->ns[ns_len] = 0;
    f->ns_len = ns_len;
    cp_buf key;
    cp_buf_init(&key);
    int st = type == CP_COLD_FILE_CALLS ? cp_cold_calls_key(w->cfg.hour_ms, ns, ns_len, range, w->cfg.claim, &key)
                                        : cp_cold_rollup_key(w->cfg.hour_ms, ns, ns_len, w->cfg.claim, &key);
    if (st == CP_OK) st = cp_buf_putc(&key, 0);
    if (st != CP_OK) {
        cp_buf_free(&key);
        return st;
    }
    f->key = (char *)key.data;
    size_t plen = strlen(w->cfg.dir) + 32;
    f->path = malloc(plen);
    if (!f->path) return CP_ENOMEM;
    snprintf(f->path, plen, "%s/%zu.parquet", w->cfg.dir, w->nfiles - 1);
    *out = f;
    return CP_OK;
}

static int pq_open(cp_cold_writer *w, pq_out *o, const out_file *f, const cp_pq_column *schema, size_t ncols,
                   const cp_pq_writer_opts *opts)
{
    o->file = (size_t)(f - w->files);
    o->fp = fopen(f->path, "wb");
    if (!o->fp) return failf(w, CP_EIO, "create %s: %s", f->path, strerror(errno));
    char err[256];
    int st = cp_pq_writer_new(schema, ncols, opts, sink, o->fp, &o->w, err, sizeof err);
    if (st != CP_OK) return failf(w, st, "parquet writer: %s%s", err, NULL);
    return CP_OK;
}

/* Finishes, fsyncs and closes a Parquet file; its size goes to its entry. */
static int pq_close(cp_cold_writer *w, pq_out *o)
{
    out_file *f = &w->files[o->file];
    int st = o->w ? cp_pq_writer_finish(o->w) : CP_OK;
    if (st != CP_OK) failf(w, st, "write %s: %s", f->path, cp_pq_writer_errmsg(o->w));
    if (o->w) f->size = (int64_t)cp_pq_writer_bytes(o->w);
    cp_pq_writer_free(o->w);
    o->w = NULL;
    if (o->fp) {
        if (st == CP_OK && (fflush(o->fp) != 0 || fsync(fileno(o->fp)) != 0))
            st = failf(w, CP_EIO, "write %s: %s", f->path, strerror(errno));
        if (fclose(o->fp) != 0 && st == CP_OK) st = failf(w, CP_EIO, "close %s: %s", f->path, strerror(errno));
        o->fp = NULL;
    }
    return st;
}

/* ---- calls files ----------------------------------------------------------------------------- */

static int calls_open(cp_cold_writer *w, const cp_call *c)
{
    out_file *f;
    int st = file_new(w, CP_COLD_FILE_CALLS, c->ns, c->ns_len, cp_cold_range_of(c->duration_ms), &f);
    if (st != CP_OK) return failf(w, st, "out of memory%s%s", NULL, NULL);
    cp_pq_writer_opts o;
    if (w->cfg.pq) o = *w->cfg.pq;
    else memset(&o, 0, sizeof o), o.row_group_rows = o.page_rows = CP_COLD_ROW_GROUP_ROWS;
    const char *kv[] = {CP_COLD_KV_ORDER, CP_COLD_ORDER_TIME};
    o.kv = kv;
    o.nkv = 1;
    st = pq_open(w, &w->calls, f, cp_cold_calls_schema, CP_COLD_C_COUNT, &o);
    if (st != CP_OK) return st;
    w->has_calls = 1;
    w->nsvc = 0;
    return CP_OK;
}

static int calls_close(cp_cold_writer *w)
{
    if (!w->has_calls) return CP_OK;
    w->has_calls = 0;
    out_file *f = &w->files[w->calls.file];
    int st = pq_close(w, &w->calls);
    if (st == CP_OK && (json_names(&f->services, w->svc, w->nsvc, NULL) != CP_OK ||
                        json_names(&f->indexed, w->params, w->nparams, f->overflow) != CP_OK ||
                        json_maxlen(&f->maxlen, w->params, w->nparams, f) != CP_OK))
        st = failf(w, CP_ENOMEM, "out of memory%s%s", NULL, NULL);
    for (size_t i = 0; i < w->nsvc; i++) free(w->svc[i]);
    w->nsvc = 0;
    return st;
}

static int note_service(cp_cold_writer *w, const cp_call *c)
{
    for (size_t i = 0; i < w->nsvc; i++)
        if (strlen(w->svc[i]) == c->service_len && !memcmp(w->svc[i], c->service, c->service_len)) return CP_OK;
    if (w->nsvc == FILE_MAX_SERVICES) return CP_OK;
    char *s = malloc(c->service_len + 1);
    if (!s) return CP_ENOMEM;
    memcpy(s, c->service, c->service_len);
    s[c->service_len] = 0;
    w->svc[w->nsvc++] = s;
    return CP_OK;
}

/* ---- rollup files ---------------------------------------------------------------------------- */

static int rollup_row(void *ud, const cp_rollup_entry *e)
{
    cp_cold_writer *w = ud;
    out_file *f = &w->files[w->rollup.file];
    cp_pq_value row[CP_COLD_R_COUNT];
    cp_cold_rollup_row(e, row);
    int st = cp_pq_writer_add(w->rollup.w, row);
    if (st != CP_OK) return failf(w, st, "write %s: %s", f->path, cp_pq_writer_errmsg(w->rollup.w));
    f->rows++;
    if (e->cell_ms < f->min_ts) f->min_ts = e->cell_ms;
    if (e->cell_ms > f->max_ts) f->max_ts = e->cell_ms;
    return 0;
}

/* Writes the entries held (a batch) into the namespace's rollup file, opened on first use. */
static int rollup_flush(cp_cold_writer *w, const char *ns, size_t ns_len)
{
    if (!cp_rollup_acc_count(w->acc)) return CP_OK;
    int st;
    if (!w->has_rollup) {
        out_file *f;
        st = file_new(w, CP_COLD_FILE_ROLLUP, ns, ns_len, -1, &f);
        if (st != CP_OK) return failf(w, st, "out of memory%s%s", NULL, NULL);
        char fp[24];
        snprintf(fp, sizeof fp, "%lld", (long long)w->cfg.idle_fp);
        const char *kv[] = {CP_COLD_KV_ROLLUP, CP_COLD_ROLLUP_FORMAT, CP_COLD_KV_IDLE_FP, fp};
        cp_pq_writer_opts o = {.row_group_rows = 65536, .kv = kv, .nkv = 2};
        st = pq_open(w, &w->rollup, f, cp_cold_rollup_schema, CP_COLD_R_COUNT, &o);
        if (st != CP_OK) return st;
        w->has_rollup = 1;
    }
    st = cp_rollup_acc_each(w->acc, rollup_row, w);
    cp_rollup_acc_clear(w->acc);
    return st;
}

static int rollup_close(cp_cold_writer *w)
{
    if (!w->has_rollup) return CP_OK;
    w->has_rollup = 0;
    out_file *f = &w->files[w->rollup.file];
    int st = pq_close(w, &w->rollup);
    if (st == CP_OK && (!(f->services = strdup("[]")) || !(f->indexed = strdup("[]"))))
        st = failf(w, CP_ENOMEM, "out of memory%s%s", NULL, NULL);
    return st;
}

/* ---- API ------------------------------------------------------------------------------------- */

int cp_cold_writer_new(const cp_cold_writer_config *cfg, cp_cold_writer **out, char *err, size_t errlen)
{
    *out = NULL;
    cp_cold_writer *w = calloc(1, sizeof *w);
    if (!w || cp_cold_rowbuf_new(&w->rb) != CP_OK ||
        cp_rollup_acc_new(cfg->rollup_max_entries, cfg->idle_fp, &w->acc) != CP_OK) {
        cp_cold_writer_free(w);
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    w->cfg = *cfg;
    for (size_t i = 0; i < cfg->nindex && w->nparams < INDEX_MAX_PARAMS; i++) {
        const char *name = cfg->index_params[i];
        if (param_find(w, (const uint8_t *)name, strlen(name)) >= 0) continue;
        if (!(w->params[w->nparams] = strdup(name))) {
            cp_cold_writer_free(w);
            snprintf(err, errlen, "out of memory");
            return CP_ENOMEM;
        }
        size_t j = param_hash(name, strlen(name));
        while (w->param_slot[j]) j = (j + 1) & (PARAM_SLOTS - 1);
        w->param_slot[j] = (uint16_t)++w->nparams;
    }
    *out = w;
    return CP_OK;
}

/* The order check of the calls of one file: (time, restart, pod_hash signed, trace
 * position) ascending. */
static int ref_cmp(const cp_call_ref *a, const cp_call_ref *b)
{
#define CMP(x, y) if ((x) != (y)) return (x) < (y) ? -1 : 1
    CMP(a->ts_ms, b->ts_ms);
    CMP(a->restart_ms, b->restart_ms);
    CMP((int64_t)a->pod_hash, (int64_t)b->pod_hash);
    CMP(a->trace_file_index, b->trace_file_index);
    CMP(a->buffer_offset, b->buffer_offset);
    CMP(a->record_index, b->record_index);
#undef CMP
    return 0;
}

int cp_cold_writer_add(cp_cold_writer *w, const cp_call *c)
{
    if (w->cfg.stop && *w->cfg.stop) return failf(w, CP_EABORT, "compaction stopped%s%s", NULL, NULL);
    out_file *f = w->has_calls ? &w->files[w->calls.file] : NULL;
    int range = cp_cold_range_of(c->duration_ms);
    int same_ns = f && f->ns_len == c->ns_len && !memcmp(f->ns, c->ns, c->ns_len);
    cp_call_ref ref;
    cp_call_ref_of(c, &ref);
    int st;
    if (!f || !same_ns || f->range != range) {
        if (f && same_ns && range < f->range)
            return failf(w, CP_EINVAL, "calls out of order: duration range after a longer one in %s%s", f->ns, NULL);
        if (f && !same_ns) {
            size_t n = f->ns_len < c->ns_len ? f->ns_len : c->ns_len;
            int k = n ? memcmp(c->ns, f->ns, n) : 0;
            if (k < 0 || (k == 0 && c->ns_len < f->ns_len))
                return failf(w, CP_EINVAL, "calls out of order: namespace after %s%s", f->ns, NULL);
        }
        if (f && !same_ns) {
            /* the namespace is done: its rollups too */
            st = rollup_flush(w, f->ns, f->ns_len);
            if (st == CP_OK) st = rollup_close(w);
            if (st != CP_OK) return st;
        }
        if ((st = calls_close(w)) != CP_OK || (st = calls_open(w, c)) != CP_OK) return st;
        f = &w->files[w->calls.file];
    } else if (ref_cmp(&ref, &w->last) < 0) {
        char ts[32];
        snprintf(ts, sizeof ts, "%lld", (long long)c->ts_ms);
        return failf(w, CP_EINVAL, "calls out of order: time %s in %s", ts, f->key);
    }
    w->last = ref;
    cp_pq_value row[CP_COLD_C_COUNT];
    st = cp_cold_call_row(w->rb, c, row);
    if (st != CP_OK) {
        char ts[32];
        snprintf(ts, sizeof ts, "%lld", (long long)c->ts_ms);
        return failf(w, st, "call at %s of pod %s: params are not valid JSON", ts, c->pod);
    }
    st = cp_pq_writer_add(w->calls.w, row);
    if (st != CP_OK) return failf(w, st, "write %s: %s", f->path, cp_pq_writer_errmsg(w->calls.w));
    f->rows++;
    if (c->ts_ms < f->min_ts) f->min_ts = c->ts_ms;
    if (c->ts_ms > f->max_ts) f->max_ts = c->ts_ms;
    if (note_service(w, c) != CP_OK || (w->nparams && index_row(w, f, &row[CP_COLD_C_PARAMS]) != CP_OK))
        return failf(w, CP_ENOMEM, "out of memory%s%s", NULL, NULL);
    /* the error flag as readers of the file see it: a call.red param (cold_rows.c) */
    int red = 0;
    const cp_pq_value *pm = &row[CP_COLD_C_PARAMS];
    for (size_t i = 0; i < pm->nmap && !red; i++)
        red = pm->map[i].key.len == 8 && !memcmp(pm->map[i].key.p, "call.red", 8);
    int flags = cp_rollup_flags_of(c, red, w->cfg.idle, w->cfg.nidle);
    st = cp_rollup_acc_add(w->acc, c, flags);
    if (st == CP_ELIMIT) { /* a batch full: out with it (the namespace's file grows) */
        st = rollup_flush(w, c->ns, c->ns_len);
        if (st == CP_OK) st = cp_rollup_acc_add(w->acc, c, flags);
    }
    if (st != CP_OK) return st == CP_ENOMEM ? failf(w, st, "out of memory%s%s", NULL, NULL) : st;
    return CP_OK;
}

int cp_cold_writer_finish(cp_cold_writer *w)
{
    int st = CP_OK;
    if (w->has_calls) {
        out_file *f = &w->files[w->calls.file];
        char *ns = f->ns;
        size_t ns_len = f->ns_len;
        st = calls_close(w);
        if (st == CP_OK) st = rollup_flush(w, ns, ns_len);
    }
    if (st == CP_OK) st = rollup_close(w);
    return st;
}

size_t cp_cold_writer_count(const cp_cold_writer *w) { return w->nfiles; }

void cp_cold_writer_output(const cp_cold_writer *w, size_t i, cp_cold_output *o)
{
    const out_file *f = &w->files[i];
    memset(o, 0, sizeof *o);
    o->type = f->type;
    o->path = f->path;
    o->key = f->key;
    o->ns = f->ns;
    o->ns_len = f->ns_len;
    o->range = f->range;
    o->rows = f->rows;
    o->size = f->size;
    o->min_ts = f->rows ? f->min_ts : 0;
    o->max_ts = f->rows ? f->max_ts : 0;
    o->services = f->services ? f->services : "[]";
    o->indexed = f->indexed ? f->indexed : "[]";
    o->indexed_maxlen = f->maxlen ? f->maxlen : "{}";
}

int cp_cold_writer_index_each(const cp_cold_writer *w, size_t i,
                              int (*fn)(void *ud, const char *param, const char *v, size_t vlen), void *ud)
{
    const out_file *f = &w->files[i];
    for (size_t j = 0; j < f->capix; j++) {
        const ix_entry *e = &f->ix[j];
        if (!e->used || f->overflow[e->param]) continue;
        int r = fn(ud, w->params[e->param], (const char *)f->ix_text.data + e->off, e->len);
        if (r) return r;
    }
    return CP_OK;
}

const char *cp_cold_writer_errmsg(const cp_cold_writer *w) { return w->err; }

void cp_cold_writer_free(cp_cold_writer *w)
{
    if (!w) return;
    pq_out *o[2] = {&w->calls, &w->rollup};
    for (int k = 0; k < 2; k++) {
        if (o[k]->w) cp_pq_writer_free(o[k]->w);
        if (o[k]->fp) fclose(o[k]->fp);
    }
    for (size_t i = 0; i < w->nsvc; i++) free(w->svc[i]);
    for (size_t i = 0; i < w->nfiles; i++) out_file_free(&w->files[i]);
    free(w->files);
    for (size_t i = 0; i < w->nparams; i++) free(w->params[i]);
    cp_cold_rowbuf_free(w->rb);
    cp_rollup_acc_free(w->acc);
    free(w);
}
