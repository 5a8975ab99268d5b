/* rollup.c -- rollup entries, their accumulator and the stats answer (cp_rollup.h). */
#include "cp_rollup.h"
#include "cp_query.h"

#include <stdlib.h>
#include <string.h>

/* ---- classes, cells, flags ------------------------------------------------------------- */

static const int64_t class_lo[CP_ROLLUP_CLASSES] = {0, 1, 10, 100, 500, 1000, 3000, 5000, 30000, 90000};

int cp_rollup_class_of(int64_t d)
{
    int c = 0;
    while (c + 1 < CP_ROLLUP_CLASSES && d >= class_lo[c + 1]) c++;
    return c;
}

int64_t cp_rollup_class_lo(int cls)
{
    if (cls <= 0) return INT64_MIN;
    return cls < CP_ROLLUP_CLASSES ? class_lo[cls] : INT64_MAX;
}

int64_t cp_rollup_class_hi(int cls)
{
    if (cls < 0) return INT64_MIN;
    return cls + 1 < CP_ROLLUP_CLASSES ? class_lo[cls + 1] : INT64_MAX;
}

int64_t cp_rollup_cell_of(int64_t ts)
{
    int64_t q = ts / CP_ROLLUP_CELL_MS;
    if (ts % CP_ROLLUP_CELL_MS != 0 && ts < 0) q--;
    return q * CP_ROLLUP_CELL_MS;
}

int64_t cp_rollup_idle_fp(const char *const *idle, size_t n)
{
    uint64_t h = cp_fnv64(CP_FNV_SEED, "cp-rollup-idle-1", 16);
    for (size_t i = 0; i < n; i++) {
        size_t len = idle[i] ? strlen(idle[i]) : 0;
        uint8_t sep[9] = {0xff};
        for (int k = 0; k < 8; k++) sep[1 + k] = (uint8_t)(len >> (8 * k));
        h = cp_fnv64(h, sep, sizeof sep); /* lengths keep ["ab","c"] apart from ["a","bc"] */
        if (len) h = cp_fnv64(h, idle[i], len);
    }
    /* non-negative, so it fits a signed column everywhere */
    return (int64_t)(cp_mix64(h) >> 1);
}

int cp_rollup_flags_memo(cp_system_memo *memo, const cp_call *c, int error, const char *const *idle, size_t n)
{
    int f = error ? CP_ROLLUP_F_ERROR : 0;
    cp_call_view v = {c->method ? c->method : "", c->method ? c->method_len : 0,
                      c->pod ? c->pod : "",       c->pod ? c->pod_len : 0,
                      c->params_json ? c->params_json : "", c->params_json ? c->params_json_len : 0};
    if (memo ? cp_system_call_memo(memo, &v, idle, n) : cp_system_call(&v, idle, n)) f |= CP_ROLLUP_F_SYSTEM;
    return f;
}

int cp_rollup_flags_of(const cp_call *c, int error, const char *const *idle, size_t n)
{
    return cp_rollup_flags_memo(NULL, c, error, idle, n);
}

/* ---- points and entries ------------------------------------------------------------------ */

static int cmp64(int64_t a, int64_t b) { return (a > b) - (a < b); }

int cp_rollup_point_cmp(const cp_rollup_point *a, const cp_rollup_point *b)
{
    int c;
    if ((c = cmp64(b->duration_ms, a->duration_ms))) return c;
    if ((c = cmp64(a->ts_ms, b->ts_ms))) return c;
    if ((c = cmp64(a->restart_ms, b->restart_ms))) return c;
    if ((c = cmp64(a->trace_file_index, b->trace_file_index))) return c;
    if ((c = cmp64(a->buffer_offset, b->buffer_offset))) return c;
    return cmp64(a->record_index, b->record_index);
}

int cp_stats_point_cmp(const cp_stats_point *a, const cp_stats_point *b)
{
    int c = cp_rollup_point_cmp(&a->p, &b->p);
    if (c) return c;
    return (a->pod_hash > b->pod_hash) - (a->pod_hash < b->pod_hash);
}

void cp_rollup_point_of(const cp_call *c, cp_rollup_point *p)
{
    p->ts_ms = c->ts_ms;
    p->restart_ms = c->restart_ms;
    p->duration_ms = c->duration_ms;
    p->calls = c->calls;
    p->trace_file_index = c->trace_file_index;
    p->buffer_offset = c->buffer_offset;
    p->record_index = c->record_index;
}

void cp_rollup_entry_merge(cp_rollup_entry *into, const cp_rollup_entry *from)
{
    if (into->n == 0 || (from->n > 0 && cp_rollup_point_cmp(&from->max, &into->max) < 0)) into->max = from->max;
    into->n = cp_add_wrap64(into->n, from->n);
    into->sum_duration = cp_add_wrap64(into->sum_duration, from->sum_duration);
    into->sum_suspend = cp_add_wrap64(into->sum_suspend, from->sum_suspend);
    into->sum_queue = cp_add_wrap64(into->sum_queue, from->sum_queue);
    into->sum_transactions = cp_add_wrap64(into->sum_transactions, from->sum_transactions);
}

/* ---- the accumulator ----------------------------------------------------------------------- */

/* A distinct (namespace, service, pod), names in one allocation. */
typedef struct ra_pod {
    char *mem;
    size_t ns_len, service_len, pod_len;
    uint64_t hash;
} ra_pod;

typedef struct ra_entry {
    cp_rollup_entry e;
    uint32_t pod;
} ra_entry;

struct cp_rollup_acc {
    int64_t idle_fp;
    size_t max_entries;
    ra_entry *v;
    size_t n, cap;
    uint32_t *slot;              /* open addressing on v: index + 1, 0 = empty */
    size_t nslot;                /* power of two, >= 2 * cap */
    ra_pod *pods;
    size_t npods, cappods;
    uint32_t *pslot;
    size_t npslot;
    /* the last pod looked up (calls often arrive in runs of one pod) */
    uint32_t last_id;
    int has_last;
};

int cp_rollup_acc_new(size_t max_entries, int64_t idle_fp, cp_rollup_acc **out)
{
    *out = NULL;
    cp_rollup_acc *a = calloc(1, sizeof *a);
    if (!a) return CP_ENOMEM;
    a->idle_fp = idle_fp;
    a->max_entries = max_entries ? max_entries : (size_t)1 << 20;
    if (a->max_entries > ((size_t)1 << 28)) a->max_entries = (size_t)1 << 28;
    *out = a;
    return CP_OK;
}

void cp_rollup_acc_clear(cp_rollup_acc *a)
{
    for (size_t i = 0; i < a->npods; i++) free(a->pods[i].mem);
    a->npods = 0;
    a->n = 0;
    if (a->slot) memset(a->slot, 0, a->nslot * sizeof *a->slot);
    if (a->pslot) memset(a->pslot, 0, a->npslot * sizeof *a->pslot);
    a->has_last = 0;
}

void cp_rollup_acc_free(cp_rollup_acc *a)
{
    if (!a) return;
    cp_rollup_acc_clear(a);
    free(a->v);
    free(a->slot);
    free(a->pods);
    free(a->pslot);
    free(a);
}

size_t cp_rollup_acc_count(const cp_rollup_acc *a) { return a->n; }

static uint64_t pod_hash3(const char *ns, size_t nl, const char *sv, size_t sl, const char *pd, size_t pl)
{
    uint64_t h = cp_fnv64(CP_FNV_SEED, ns, nl);
    h = cp_fnv64(h ^ 0x1f, sv, sl);
    return cp_mix64(cp_fnv64(h ^ 0x2f, pd, pl));
}

static int pod_eq(const ra_pod *p, const char *ns, size_t nl, const char *sv, size_t sl, const char *pd, size_t pl)
{
    return p->ns_len == nl && p->service_len == sl && p->pod_len == pl && !memcmp(p->mem, ns, nl) &&
           !memcmp(p->mem + nl + 1, sv, sl) && !memcmp(p->mem + nl + sl + 2, pd, pl);
}

static int pslot_grow(cp_rollup_acc *a)
{
    size_t ns = a->npslot ? a->npslot * 2 : 256;
    uint32_t *s = calloc(ns, sizeof *s);
    if (!s) return CP_ENOMEM;
    for (size_t i = 0; i < a->npods; i++) {
        size_t j = a->pods[i].hash & (ns - 1);
        while (s[j]) j = (j + 1) & (ns - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(a->pslot);
    a->pslot = s;
    a->npslot = ns;
    return CP_OK;
}

/* The id of a pod, interned on first sight. */
static int pod_id(cp_rollup_acc *a, const char *ns, size_t nl, const char *sv, size_t sl, const char *pd, size_t pl,
                  uint32_t *id)
{
    if (a->has_last && pod_eq(&a->pods[a->last_id], ns, nl, sv, sl, pd, pl)) {
        *id = a->last_id;
        return CP_OK;
    }
    uint64_t h = pod_hash3(ns, nl, sv, sl, pd, pl);
    if ((a->npods + 1) * 2 > a->npslot && pslot_grow(a) != CP_OK) return CP_ENOMEM;
    size_t j = h & (a->npslot - 1);
    for (; a->pslot[j]; j = (j + 1) & (a->npslot - 1)) {
        const ra_pod *p = &a->pods[a->pslot[j] - 1];
        if (p->hash == h && pod_eq(p, ns, nl, sv, sl, pd, pl)) {
            *id = a->pslot[j] - 1;
            goto found;
        }
    }
    if (a->npods >= UINT32_MAX - 1) return CP_ELIMIT;
    if (cp_grow((void **)&a->pods, &a->cappods, a->npods + 1, sizeof *a->pods, 64) != CP_OK) return CP_ENOMEM;
    ra_pod *p = &a->pods[a->npods];
    p->mem = malloc(nl + sl + pl + 3);
    if (!p->mem) return CP_ENOMEM;
    memcpy(p->mem, ns, nl);
    p->mem[nl] = 0;
    memcpy(p->mem + nl + 1, sv, sl);
    p->mem[nl + sl + 1] = 0;
    memcpy(p->mem + nl + sl + 2, pd, pl);
    p->mem[nl + sl + pl + 2] = 0;
    p->ns_len = nl;
    p->service_len = sl;
    p->pod_len = pl;
    p->hash = h;
    a->pslot[j] = (uint32_t)++a->npods;
    *id = (uint32_t)(a->npods - 1);
found:
    a->has_last = 1;
    a->last_id = *id;
    return CP_OK;
}

static uint64_t key_hash(int64_t cell, uint32_t pod, int32_t cls, int32_t flags)
{
    return cp_mix64((uint64_t)cell * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)pod << 8) ^ ((uint64_t)cls << 3) ^
                    (uint64_t)flags);
}

static int slot_grow(cp_rollup_acc *a)
{
    size_t ns = a->nslot ? a->nslot * 2 : 1024;
    uint32_t *s = calloc(ns, sizeof *s);
    if (!s) return CP_ENOMEM;
    for (size_t i = 0; i < a->n; i++) {
        const ra_entry *x = &a->v[i];
        size_t j = key_hash(x->e.cell_ms, x->pod, x->e.cls, x->e.flags) & (ns - 1);
        while (s[j]) j = (j + 1) & (ns - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(a->slot);
    a->slot = s;
    a->nslot = ns;
    return CP_OK;
}

/* The entry of a key, created (zero) when new. */
static int entry_for(cp_rollup_acc *a, int64_t cell, uint32_t pod, int32_t cls, int32_t flags, ra_entry **out)
{
    if ((a->n + 1) * 2 > a->nslot && slot_grow(a) != CP_OK) return CP_ENOMEM;
    size_t j = key_hash(cell, pod, cls, flags) & (a->nslot - 1);
    for (; a->slot[j]; j = (j + 1) & (a->nslot - 1)) {
        ra_entry *x = &a->v[a->slot[j] - 1];
        if (x->e.cell_ms == cell && x->pod == pod && x->e.cls == cls && x->e.flags == flags) {
            *out = x;
            return CP_OK;
        }
    }
    if (a->n >= a->max_entries) return CP_ELIMIT;
    if (cp_grow((void **)&a->v, &a->cap, a->n + 1, sizeof *a->v, 1024) != CP_OK) return CP_ENOMEM;
    ra_entry *x = &a->v[a->n];
    memset(x, 0, sizeof *x);
    x->e.cell_ms = cell;
    x->e.cls = cls;
    x->e.flags = flags;
    x->pod = pod;
    a->slot[j] = (uint32_t)++a->n;
    *out = x;
    return CP_OK;
}

int cp_rollup_acc_add(cp_rollup_acc *a, const cp_call *c, int flags)
{
    uint32_t pod;
    int st = pod_id(a, c->ns ? c->ns : "", c->ns_len, c->service ? c->service : "", c->service_len,
                    c->pod ? c->pod : "", c->pod_len, &pod);
    if (st != CP_OK) return st;
    ra_entry *x;
    st = entry_for(a, cp_rollup_cell_of(c->ts_ms), pod, cp_rollup_class_of(c->duration_ms), flags, &x);
    if (st != CP_OK) return st;
    cp_rollup_point p;
    cp_rollup_point_of(c, &p);
    if (x->e.n == 0 || cp_rollup_point_cmp(&p, &x->e.max) < 0) x->e.max = p;
    x->e.n++;
    x->e.sum_duration = cp_add_wrap64(x->e.sum_duration, c->duration_ms);
    x->e.sum_suspend = cp_add_wrap64(x->e.sum_suspend, c->suspend_ms);
    x->e.sum_queue = cp_add_wrap64(x->e.sum_queue, c->queue_wait_ms);
    x->e.sum_transactions = cp_add_wrap64(x->e.sum_transactions, c->transactions);
    return CP_OK;
}

int cp_rollup_acc_add_entry(cp_rollup_acc *a, const cp_rollup_entry *e)
{
    uint32_t pod;
    int st = pod_id(a, e->ns ? e->ns : "", e->ns_len, e->service ? e->service : "", e->service_len,
                    e->pod ? e->pod : "", e->pod_len, &pod);
    if (st != CP_OK) return st;
    ra_entry *x;
    st = entry_for(a, e->cell_ms, pod, e->cls, e->flags, &x);
    if (st != CP_OK) return st;
    cp_rollup_entry_merge(&x->e, e);
    return CP_OK;
}

static int text_cmp(const char *a, size_t al, const char *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : cmp64((int64_t)al, (int64_t)bl);
}

static int entry_cmp(const void *pa, const void *pb, void *ud)
{
    const ra_entry *x = pa, *y = pb;
    const cp_rollup_acc *a = ud;
    int c;
    if ((c = cmp64(x->e.cell_ms, y->e.cell_ms))) return c;
    if (x->pod != y->pod) {
        const ra_pod *p = &a->pods[x->pod], *q = &a->pods[y->pod];
        if ((c = text_cmp(p->mem, p->ns_len, q->mem, q->ns_len))) return c;
        if ((c = text_cmp(p->mem + p->ns_len + 1, p->service_len, q->mem + q->ns_len + 1, q->service_len))) return c;
        if ((c = text_cmp(p->mem + p->ns_len + p->service_len + 2, p->pod_len, q->mem + q->ns_len + q->service_len + 2,
                          q->pod_len)))
            return c;
    }
    if ((c = cmp64(x->e.cls, y->e.cls))) return c;
    return cmp64(x->e.flags, y->e.flags);
}

int cp_rollup_acc_each(cp_rollup_acc *a, int (*fn)(void *ud, const cp_rollup_entry *e), void *ud)
{
    if (a->n > 1) {
        qsort_r(a->v, a->n, sizeof *a->v, entry_cmp, a);
        /* the slots index the old order */
        memset(a->slot, 0, a->nslot * sizeof *a->slot);
        for (size_t i = 0; i < a->n; i++) {
            const ra_entry *x = &a->v[i];
            size_t j = key_hash(x->e.cell_ms, x->pod, x->e.cls, x->e.flags) & (a->nslot - 1);
            while (a->slot[j]) j = (j + 1) & (a->nslot - 1);
            a->slot[j] = (uint32_t)i + 1;
        }
    }
    for (size_t i = 0; i < a->n; i++) {
        ra_entry *x = &a->v[i];
        const ra_pod *p = &a->pods[x->pod];
        x->e.ns = p->mem;
        x->e.ns_len = p->ns_len;
        x->e.service = p->mem + p->ns_len + 1;
        x->e.service_len = p->service_len;
        x->e.pod = p->mem + p->ns_len + p->service_len + 2;
        x->e.pod_len = p->pod_len;
        x->e.idle_fp = a->idle_fp;
        int r = fn(ud, &x->e);
        if (r) return r;
    }
    return CP_OK;
}

/* ---- the stats answer ---------------------------------------------------------------------- */

static int64_t floor_div(int64_t v, int64_t d)
{
    int64_t q = v / d;
    return (v % d != 0 && v < 0) ? q - 1 : q;
}

void cp_stats_clear(cp_stats *s)
{
    if (s->used) memset(s->used, 0, s->ncols * sizeof *s->used);
    s->total = 0;
    s->sum_duration = s->sum_suspend = s->sum_queue = s->sum_transactions = 0;
}

int cp_stats_init(cp_stats *s, int64_t from, int64_t to, unsigned columns)
{
    memset(s, 0, sizeof *s);
    if (from >= to || columns < 1 || columns > CP_STATS_MAX_COLUMNS) return CP_EINVAL;
    uint64_t span = (uint64_t)to - (uint64_t)from;
    uint64_t per = (span + columns - 1) / columns;
    uint64_t cells = (per + CP_ROLLUP_CELL_MS - 1) / CP_ROLLUP_CELL_MS;
    if (cells < 1) cells = 1;
    if (cells > (uint64_t)INT64_MAX / CP_ROLLUP_CELL_MS) return CP_EINVAL;
    s->column_ms = (int64_t)cells * CP_ROLLUP_CELL_MS;
    s->col0_ms = floor_div(from, s->column_ms) * s->column_ms;
    /* aligned columns may need one more than asked for */
    uint64_t n = ((uint64_t)to - (uint64_t)s->col0_ms + (uint64_t)s->column_ms - 1) / (uint64_t)s->column_ms;
    if (n < 1 || n > CP_STATS_MAX_COLUMNS + 1) return CP_EINVAL;
    s->ncols = (size_t)n;
    s->per_col = CP_STATS_MAX_POINTS / s->ncols;
    if (s->per_col > CP_STATS_PER_COLUMN) s->per_col = CP_STATS_PER_COLUMN;
    if (s->per_col < 1) s->per_col = 1;
    s->from_ms = from;
    s->to_ms = to;
    s->pts = calloc(s->ncols * s->per_col, sizeof *s->pts);
    s->used = calloc(s->ncols, sizeof *s->used);
    if (!s->pts || !s->used) {
        cp_stats_free(s);
        return CP_ENOMEM;
    }
    return CP_OK;
}

void cp_stats_free(cp_stats *s)
{
    free(s->pts);
    free(s->used);
    s->pts = NULL;
    s->used = NULL;
}

static size_t column_of(const cp_stats *s, int64_t ts)
{
    int64_t k = floor_div(ts - s->col0_ms, s->column_ms);
    if (k < 0) return 0;
    if ((uint64_t)k >= s->ncols) return s->ncols - 1;
    return (size_t)k;
}

/* Keeps the point if it is among the per_col slowest of its column. */
static void offer(cp_stats *s, const cp_stats_point *p)
{
    size_t col = column_of(s, p->p.ts_ms);
    cp_stats_point *slots = s->pts + col * s->per_col;
    uint32_t n = s->used[col];
    if (n == s->per_col && cp_stats_point_cmp(p, &slots[n - 1]) >= 0) return;
    size_t i = n < s->per_col ? n : n - 1;
    while (i > 0 && cp_stats_point_cmp(p, &slots[i - 1]) < 0) {
        slots[i] = slots[i - 1];
        i--;
    }
    slots[i] = *p;
    if (n < s->per_col) s->used[col] = n + 1;
}

void cp_stats_add_call(cp_stats *s, const cp_call *c)
{
    s->total++;
    s->sum_duration = cp_add_wrap64(s->sum_duration, c->duration_ms);
    s->sum_suspend = cp_add_wrap64(s->sum_suspend, c->suspend_ms);
    s->sum_queue = cp_add_wrap64(s->sum_queue, c->queue_wait_ms);
    s->sum_transactions = cp_add_wrap64(s->sum_transactions, c->transactions);
    cp_stats_point p;
    cp_rollup_point_of(c, &p.p);
    p.pod_hash = cp_pod_hash(c->ns ? c->ns : "", c->ns_len, c->pod ? c->pod : "", c->pod_len);
    offer(s, &p);
}

void cp_stats_add_entry(cp_stats *s, const cp_rollup_entry *e, uint64_t pod_hash)
{
    if (e->n <= 0) return;
    s->total += (uint64_t)e->n;
    s->sum_duration = cp_add_wrap64(s->sum_duration, e->sum_duration);
    s->sum_suspend = cp_add_wrap64(s->sum_suspend, e->sum_suspend);
    s->sum_queue = cp_add_wrap64(s->sum_queue, e->sum_queue);
    s->sum_transactions = cp_add_wrap64(s->sum_transactions, e->sum_transactions);
    cp_stats_point p = {e->max, pod_hash};
    offer(s, &p);
}

void cp_stats_merge(cp_stats *s, const cp_stats *o)
{
    s->total += o->total;
    s->sum_duration = cp_add_wrap64(s->sum_duration, o->sum_duration);
    s->sum_suspend = cp_add_wrap64(s->sum_suspend, o->sum_suspend);
    s->sum_queue = cp_add_wrap64(s->sum_queue, o->sum_queue);
    s->sum_transactions = cp_add_wrap64(s->sum_transactions, o->sum_transactions);
    for (size_t c = 0; c < o->ncols; c++)
        for (uint32_t i = 0; i < o->used[c]; i++) offer(s, &o->pts[c * o->per_col + i]);
}

static int by_time(const void *x, const void *y)
{
    const cp_stats_point *a = x, *b = y;
    if (a->p.ts_ms != b->p.ts_ms) return a->p.ts_ms < b->p.ts_ms ? -1 : 1;
    return cp_stats_point_cmp(a, b);
}

void cp_stats_points(const cp_stats *s, cp_stats_point *out, size_t *n)
{
    size_t k = 0;
    for (size_t c = 0; c < s->ncols; c++)
        for (uint32_t i = 0; i < s->used[c]; i++) out[k++] = s->pts[c * s->per_col + i];
    qsort(out, k, sizeof *out, by_time);
    *n = k;
}
