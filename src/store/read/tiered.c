/* tiered.c -- the tiered reader (cp_cold.h): one cp_reader over the hot tier and the cold
 * Parquet files, so the calls API answers the same before and after compaction.
 *
 * search  1. the hot search, as asked; its rows are copied (at most `limit`);
 *         2. the cold search: the files cp_reader_cold_files lists for the filter (time,
 *            namespace, duration range, inverted index of the $param=value terms); each
 *            file's row groups are skipped by their statistics (time, namespace, service,
 *            pod, duration, and the sort column against the keyset and the rows kept so
 *            far), the rest decoded in two steps -- first the columns the filters and the
 *            sort key need, then, only for a row group with a row worth keeping, the
 *            others (never the trace) -- and the best limit + 1 rows kept in a bounded
 *            heap;
 *         3. both merged in the order, the first `limit` handed over.
 *         Hot first, then cold: a compaction finishing in between moves calls from the
 *         hot tier to a file after the hot search saw them, so they are seen twice, never
 *         missed; the merge drops the second copy (same call = same key).
 *         Time- and duration-sorted searches visit the files best-first by the file's
 *         span (s3_files min/max time, or the duration range) and skip the files that
 *         cannot beat the rows kept: a page usually opens a file or two.
 * get     hot first; then the files holding the call's time (any namespace).
 * others  pods, words, bounds, cold_files: the hot reader's.
 *
 * Bounds: limit <= TR_MAX_LIMIT; at most TR_MAX_FILES files per search (more: the search
 * is partial); the row-group arena is reset per row group, and the trace column is only
 * decoded by get; max_scan counts, across both tiers, the rows that reach the method /
 * match predicates.
 *
 * Reading the files. With cache_dir NULL an object is read in place through the store's
 * ranged read (a directory store: preads of the file). With a cache_dir (remote stores)
 * an object is downloaded whole once, to <cache_dir>/<sha256 of its URL>.parquet, and
 * read from there. The cache is shared by every tiered reader (and process) using the
 * directory, and needs no lock: a download goes to a unique temporary name and is
 * renamed into place (objects never change once completed, so any complete copy is
 * right); the file's mtime is its last use (touched on every use); after a download the
 * least recently used files are unlinked until the directory is under cache_bytes.
 * Unlinking a file another reader has open is harmless (POSIX keeps it until closed);
 * one that vanishes before being opened is downloaded again. Each reader keeps up to
 * TR_OPEN_FILES files open (footer parsed), least recently used closed first.
 *
 * A listed object that no longer exists (retention deleted it after the listing) is
 * skipped; any other failure to read a file fails the operation.
 */
#include "store/read/reader_internal.h"
#include "query/cp_query.h"
#include "store/cp_cold.h"
#include "store/cp_stats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TR_MAX_LIMIT 100000
#define TR_MAX_FILES 20000
#define TR_OPEN_FILES 128
#define TR_READAHEAD (512u << 10)        /* bytes fetched at once when reading in place */
#define TR_DEFAULT_CACHE_BYTES (1ULL << 30)
#define TR_CACHE_SCAN_MAX 100000         /* entries of the cache directory looked at by an eviction */
#define TR_STALE_TMP_S 3600              /* a temporary download older than this is left over by a crash */
#define TR_STOP 0x7472                   /* internal: a callback asked to stop listing */

/* An owned copy of a call (the strings in one allocation). */
typedef struct tr_row {
    cp_call c;
    uint64_t pod_hash;
    char *mem;
    size_t cap;
} tr_row;

/* A cold file listed for one operation. */
typedef struct tr_file {
    char *key;
    char *claim, *ns;                   /* the claim that wrote it, its namespace (NULL: unknown) */
    int64_t min_ts, max_ts;             /* call times in the file (0, 0 = unknown) */
    int32_t duration_range;
    int has_bounds;                     /* lo..hi bound the sort column in the file */
    int64_t lo, hi;
    int covered;                        /* stats: its calls are in rollup entries in use */
} tr_file;

typedef struct tr_files {
    tr_file *v;
    size_t n, cap;
    int truncated;                      /* more than TR_MAX_FILES */
    int oom;
    size_t skipped;                     /* left out by the inverted index */
    const char *type;                   /* file_type listed ("calls" when NULL) */
    const cp_call_filter *scope;        /* its ns_limited set: files of other namespaces are
                                         * left out (never opened); NULL = every file */
} tr_files;

typedef struct tiered_reader tiered_reader;

/* An open cold file. */
typedef struct tr_open {
    tiered_reader *tr;
    char *key;
    int fd;                             /* the cached copy, or -1: read in place */
    uint64_t size;
    cp_pq_reader *pq;
    cp_cold_rows *rows;
    uint64_t used;
    int time_sorted;                    /* rows in time order (CP_COLD_KV_ORDER): read from the end needed */
    /* a rollup file (rows is NULL then): its columns, and whether this reader can use it */
    int is_rollup, rollup_ok;
    int rcol[CP_COLD_R_COUNT];
    int64_t idle_fp;
} tr_open;

struct tiered_reader {
    cp_reader base; /* first: the interface pointer is the object pointer */
    cp_reader *hot;
    cp_ostore *store;
    char *cache_dir;                    /* NULL: read in place */
    uint64_t cache_bytes;
    tr_open *open[TR_OPEN_FILES];
    size_t nopen;
    uint64_t tick;
    /* read-ahead for in-place reads: bytes [ra_off, ra_off + ra_len) of ra_owner's
     * object (a row group's column chunks are contiguous: one ranged read for several) */
    uint8_t *ra;
    size_t ra_len;
    uint64_t ra_off;
    const tr_open *ra_owner;
    cp_buf needle;                      /* folded method substring */
    cp_buf path;                        /* scratch for paths */
    char err[512];
};

static int tr_oom(tiered_reader *tr)
{
    snprintf(tr->err, sizeof tr->err, "out of memory");
    return CP_ENOMEM;
}

/* A failure of the hot reader: its message becomes ours. */
static int tr_hot_fail(tiered_reader *tr, int st)
{
    snprintf(tr->err, sizeof tr->err, "%s", cp_reader_errmsg(tr->hot));
    return st;
}

/* ---- owned rows ------------------------------------------------------------------------------ */

/* Copies c (without its trace) into r, reusing r's memory. */
static int row_own(tr_row *r, const cp_call *c, uint64_t pod_hash)
{
    size_t reason = c->trace_reason ? strlen(c->trace_reason) + 1 : 0;
    size_t need = c->ns_len + c->service_len + c->pod_len + c->method_len + c->thread_len + c->params_json_len +
                  reason + 6;
    if (need > r->cap) {
        char *m = realloc(r->mem, need);
        if (!m) return CP_ENOMEM;
        r->mem = m;
        r->cap = need;
    }
    r->c = *c;
    r->c.trace = NULL;
    r->c.trace_len = 0;
    r->pod_hash = pod_hash;
    char *p = r->mem;
#define TR_COPY(field, len)                                                                                    \
    do {                                                                                                       \
        if (c->len) memcpy(p, c->field, c->len);                                                               \
        p[c->len] = 0;                                                                                         \
        r->c.field = p;                                                                                        \
        p += c->len + 1;                                                                                       \
    } while (0)
    TR_COPY(ns, ns_len);
    TR_COPY(service, service_len);
    TR_COPY(pod, pod_len);
    TR_COPY(method, method_len);
    TR_COPY(thread, thread_len);
    TR_COPY(params_json, params_json_len);
#undef TR_COPY
    if (c->trace_reason) {
        memcpy(p, c->trace_reason, reason);
        r->c.trace_reason = p;
    }
    return CP_OK;
}

typedef struct tr_rows {
    tr_row *v;
    size_t n, cap;
} tr_rows;

static void rows_free(tr_rows *rs)
{
    for (size_t i = 0; i < rs->cap; i++) free(rs->v[i].mem);
    free(rs->v);
    memset(rs, 0, sizeof *rs);
}

/* A new slot at the end (memory of an earlier use kept). */
static tr_row *rows_push(tr_rows *rs)
{
    if (rs->n == rs->cap) {
        size_t cap = rs->cap ? rs->cap * 2 : 64;
        tr_row *v = realloc(rs->v, cap * sizeof *v);
        if (!v) return NULL;
        memset(v + rs->cap, 0, (cap - rs->cap) * sizeof *v);
        rs->v = v;
        rs->cap = cap;
    }
    return &rs->v[rs->n++];
}

/* ---- the order (cp_sort_key): column in its direction, then the ref, all descending ---------- */

static int cmp64(int64_t a, int64_t b) { return (a > b) - (a < b); }

static int cmp_text(const char *a, size_t al, const char *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? (c > 0) - (c < 0) : cmp64((int64_t)al, (int64_t)bl);
}

/* The tie-breaks after the sort column: time, restart, pod_hash (signed), trace
 * position, all descending. */
static int cmp_ref(const cp_call *a, uint64_t ha, int64_t b_ts, int64_t b_restart, uint64_t hb, int32_t b_tfi,
                   int32_t b_bo, int32_t b_ri)
{
    int c;
    if ((c = cmp64(b_ts, a->ts_ms))) return c;
    if ((c = cmp64(b_restart, a->restart_ms))) return c;
    if ((c = cmp64((int64_t)hb, (int64_t)ha))) return c;
    if ((c = cmp64(b_tfi, a->trace_file_index))) return c;
    if ((c = cmp64(b_bo, a->buffer_offset))) return c;
    return cmp64(b_ri, a->record_index);
}

/* <0: a comes first in f's order. */
static int cmp_calls(const cp_call_filter *f, const cp_call *a, uint64_t ha, const cp_call *b, uint64_t hb)
{
    int c;
    if (cp_sort_is_text(f->sort)) {
        size_t al, bl;
        const char *at = cp_call_sort_text(a, f->sort, &al), *bt = cp_call_sort_text(b, f->sort, &bl);
        c = cmp_text(at, al, bt, bl);
    } else {
        c = cmp64(cp_call_sort_num(a, f->sort), cp_call_sort_num(b, f->sort));
    }
    if (f->desc) c = -c;
    if (c) return c;
    return cmp_ref(a, ha, b->ts_ms, b->restart_ms, hb, b->trace_file_index, b->buffer_offset, b->record_index);
}

/* >0: the call comes strictly after the keyset k. The key's text is a prefix of at most
 * 1023 bytes, compared as it is (as the hot tier compares it). */
static int cmp_after(const cp_call_filter *f, const cp_call *a, uint64_t ha, const cp_sort_key *k)
{
    int c;
    if (cp_sort_is_text(f->sort)) {
        size_t al;
        const char *at = cp_call_sort_text(a, f->sort, &al);
        size_t kl = k->text_len < sizeof k->text ? k->text_len : sizeof k->text - 1;
        c = cmp_text(at, al, k->text, kl);
    } else {
        c = cmp64(cp_call_sort_num(a, f->sort), k->num);
    }
    if (f->desc) c = -c;
    if (c) return c;
    const cp_call_ref *r = &k->ref;
    return cmp_ref(a, ha, r->ts_ms, r->restart_ms, r->pod_hash, r->trace_file_index, r->buffer_offset,
                   r->record_index);
}

/* ---- the cold search's state ---------------------------------------------------------------- */

typedef struct tr_search {
    tiered_reader *tr;
    const cp_call_filter *f;
    int64_t from, to;                   /* narrowed by a time keyset */
    size_t ns_len, service_len, pod_len;
    const char *needle;                 /* folded method substring */
    size_t needle_len;
    uint64_t budget;                    /* rows that may still reach the predicates (0 = none left) */
    int capped;                         /* there is a budget */
    /* the kept rows: a max-heap (worst first) of at most cap rows */
    tr_rows heap;
    size_t cap;
    uint64_t scanned;
    size_t files;
    size_t skipped;                     /* files the inverted index ruled out */
    int partial;                        /* the budget ran out, or too many files */
    int over;                           /* the budget ran out: stop reading */
    size_t *cand;                       /* candidate rows of the current row group */
    size_t ncand, capcand;
    const tr_rows *hot;                 /* the hot tier's rows (sorted), for progress snapshots */
    uint64_t hot_scanned;
    size_t hot_windows;
} tr_search;

/* heap order: worst at the root */
static int heap_worse(const tr_search *s, size_t i, size_t j)
{
    const tr_row *a = &s->heap.v[i], *b = &s->heap.v[j];
    return cmp_calls(s->f, &a->c, a->pod_hash, &b->c, b->pod_hash) > 0;
}

static void heap_swap(tr_search *s, size_t i, size_t j)
{
    tr_row t = s->heap.v[i];
    s->heap.v[i] = s->heap.v[j];
    s->heap.v[j] = t;
}

static void heap_down(tr_search *s, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, w = i;
        if (l < s->heap.n && heap_worse(s, l, w)) w = l;
        if (l + 1 < s->heap.n && heap_worse(s, l + 1, w)) w = l + 1;
        if (w == i) return;
        heap_swap(s, i, w);
        i = w;
    }
}

static void heap_up(tr_search *s, size_t i)
{
    while (i > 0 && heap_worse(s, i, (i - 1) / 2)) {
        heap_swap(s, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

static int heap_full(const tr_search *s) { return s->heap.n >= s->cap; }

/* 1 if a call would be kept now (the heap has room or it beats the worst kept). */
static int heap_wants(const tr_search *s, const cp_call *c, uint64_t h)
{
    if (!heap_full(s)) return 1;
    const tr_row *w = &s->heap.v[0];
    return cmp_calls(s->f, c, h, &w->c, w->pod_hash) < 0;
}

static int heap_offer(tr_search *s, const cp_call *c, uint64_t h)
{
    if (!heap_wants(s, c, h)) return CP_OK;
    if (!heap_full(s)) {
        tr_row *r = rows_push(&s->heap);
        if (!r || row_own(r, c, h) != CP_OK) {
            if (r) s->heap.n--;
            return CP_ENOMEM;
        }
        heap_up(s, s->heap.n - 1);
        return CP_OK;
    }
    if (row_own(&s->heap.v[0], c, h) != CP_OK) return CP_ENOMEM;
    heap_down(s, 0);
    return CP_OK;
}

/* Sorts the kept rows best first (heap sort in place: the worst goes to the end). */
static void heap_sort(tr_search *s)
{
    size_t n = s->heap.n;
    while (s->heap.n > 1) {
        heap_swap(s, 0, s->heap.n - 1);
        s->heap.n--;
        heap_down(s, 0);
    }
    s->heap.n = n;
}

/* ---- skipping by bounds ------------------------------------------------------------------------ */

/* 1 if no call whose sort value lies in [lo, hi] can be returned: all of them come
 * strictly before the keyset, or strictly after the worst row kept while the heap is
 * full. Numeric sort columns only. */
static int bounds_skip(const tr_search *s, int64_t lo, int64_t hi)
{
    const cp_call_filter *f = s->f;
    if (f->after) {
        int64_t k = f->after->num;
        if (f->desc ? lo > k : hi < k) return 1;
    }
    if (heap_full(s)) {
        int64_t w = cp_call_sort_num(&s->heap.v[0].c, f->sort);
        if (f->desc ? hi < w : lo > w) return 1;
    }
    return 0;
}

/* The calls file column of a numeric sort column, -1 for text columns and error. */
static int sort_column(cp_sort_col col)
{
    switch (col) {
    case CP_SORT_TS: return CP_COLD_C_TIME;
    case CP_SORT_DURATION: return CP_COLD_C_DURATION;
    case CP_SORT_CPU: return CP_COLD_C_CPU;
    case CP_SORT_WAIT: return CP_COLD_C_WAIT;
    case CP_SORT_MEMORY: return CP_COLD_C_MEMORY;
    case CP_SORT_SUSPEND: return CP_COLD_C_SUSPEND;
    case CP_SORT_CALLS: return CP_COLD_C_CALLS;
    case CP_SORT_TRANSACTIONS: return CP_COLD_C_TRANSACTIONS;
    case CP_SORT_QUEUE: return CP_COLD_C_QUEUE;
    case CP_SORT_LOGS_GENERATED: return CP_COLD_C_LOGS_GENERATED;
    case CP_SORT_LOGS_WRITTEN: return CP_COLD_C_LOGS_WRITTEN;
    case CP_SORT_FILE_READ: return CP_COLD_C_FILE_READ;
    case CP_SORT_FILE_WRITTEN: return CP_COLD_C_FILE_WRITTEN;
    case CP_SORT_NET_READ: return CP_COLD_C_NET_READ;
    case CP_SORT_NET_WRITTEN: return CP_COLD_C_NET_WRITTEN;
    case CP_SORT_RESTART: return CP_COLD_C_RESTART;
    default: return -1;
    }
}

/* The columns a sort column reads (text ones and error included). */
static uint32_t sort_columns_needed(cp_sort_col col)
{
    int c = sort_column(col);
    if (c >= 0) return CP_COLD_COL(c);
    switch (col) {
    case CP_SORT_METHOD: return CP_COLD_COL(CP_COLD_C_METHOD);
    case CP_SORT_NAMESPACE: return CP_COLD_COL(CP_COLD_C_NAMESPACE);
    case CP_SORT_SERVICE: return CP_COLD_COL(CP_COLD_C_SERVICE);
    case CP_SORT_POD: return CP_COLD_COL(CP_COLD_C_POD);
    case CP_SORT_THREAD: return CP_COLD_COL(CP_COLD_C_THREAD);
    case CP_SORT_ERROR: return CP_COLD_COL(CP_COLD_C_PARAMS);
    default: return 0;
    }
}

/* Integer statistics of a chunk, when usable: unsigned columns are ordered as unsigned
 * by some writers, so their bounds are used only when both are non-negative (then no
 * value is negative under either order). */
static int stats_int(cp_cold_rows *d, cp_pq_reader *pq, size_t rg, int col, int64_t *lo, int64_t *hi)
{
    int fc = cp_cold_rows_column(d, col);
    cp_pq_stats st;
    if (fc < 0 || cp_pq_reader_stats(pq, rg, (size_t)fc, &st) != CP_OK || !st.has_minmax) return 0;
    if (cp_cold_calls_schema[col].type == CP_PQ_U64 && (st.min_i < 0 || st.max_i < 0)) return 0;
    if (st.min_i > st.max_i) return 0;
    *lo = st.min_i;
    *hi = st.max_i;
    return 1;
}

/* 1 if the chunk's byte-array statistics exclude the value v. */
static int stats_exclude_text(cp_cold_rows *d, cp_pq_reader *pq, size_t rg, int col, const char *v, size_t vl)
{
    int fc = cp_cold_rows_column(d, col);
    cp_pq_stats st;
    if (fc < 0 || cp_pq_reader_stats(pq, rg, (size_t)fc, &st) != CP_OK || !st.has_minmax) return 0;
    if (!st.min_b || !st.max_b) return 0;
    return cmp_text(v, vl, (const char *)st.min_b, st.min_len) < 0 ||
           cmp_text(v, vl, (const char *)st.max_b, st.max_len) > 0;
}

/* 1 if no row of row group rg can match the search. */
static int rg_skip(tr_search *s, tr_open *o, size_t rg)
{
    const cp_call_filter *f = s->f;
    int64_t lo, hi;
    if (stats_int(o->rows, o->pq, rg, CP_COLD_C_TIME, &lo, &hi) && (hi < s->from || lo >= s->to)) return 1;
    if ((f->min_duration_ms > 0 || f->max_duration_ms < INT64_MAX) &&
        stats_int(o->rows, o->pq, rg, CP_COLD_C_DURATION, &lo, &hi) &&
        ((f->min_duration_ms > 0 && hi < f->min_duration_ms) ||
         (f->max_duration_ms < INT64_MAX && lo > f->max_duration_ms)))
        return 1;
    if (f->ns && stats_exclude_text(o->rows, o->pq, rg, CP_COLD_C_NAMESPACE, f->ns, s->ns_len)) return 1;
    if (f->service && stats_exclude_text(o->rows, o->pq, rg, CP_COLD_C_SERVICE, f->service, s->service_len)) return 1;
    if (f->pod && stats_exclude_text(o->rows, o->pq, rg, CP_COLD_C_POD, f->pod, s->pod_len)) return 1;
    int sc = sort_column(f->sort);
    if (sc >= 0 && stats_int(o->rows, o->pq, rg, sc, &lo, &hi) && bounds_skip(s, lo, hi)) return 1;
    return 0;
}

/* ---- the cold files of an operation ----------------------------------------------------------- */

static void files_free(tr_files *fl)
{
    for (size_t i = 0; i < fl->n; i++) {
        free(fl->v[i].key);
        free(fl->v[i].claim);
        free(fl->v[i].ns);
    }
    free(fl->v);
    memset(fl, 0, sizeof *fl);
}

static int on_cold_file(void *ud, const cp_cold_file *cf)
{
    tr_files *fl = ud;
    if (cf->file_type && strcmp(cf->file_type, fl->type ? fl->type : "calls") != 0) return 0;
    /* a file holds one namespace's calls (storage.md "Object layout") */
    if (fl->scope && fl->scope->ns_limited && !cp_call_filter_ns_ok(fl->scope, cf->ns ? cf->ns : "", cf->ns ? strlen(cf->ns) : 0))
        return 0;
    const char *key = cf->key ? cf->key : cf->uuid;
    if (!key || !cp_ostore_key_ok(key)) return 0; /* not an object we could have written */
    if (fl->n == TR_MAX_FILES) {
        fl->truncated = 1;
        return TR_STOP;
    }
    if (fl->n == fl->cap) {
        size_t cap = fl->cap ? fl->cap * 2 : 16;
        tr_file *v = realloc(fl->v, cap * sizeof *v);
        if (!v) {
            fl->oom = 1;
            return TR_STOP;
        }
        fl->v = v;
        fl->cap = cap;
    }
    tr_file *t = &fl->v[fl->n];
    memset(t, 0, sizeof *t);
    t->key = strdup(key);
    t->claim = cf->claim ? strdup(cf->claim) : NULL;
    t->ns = cf->ns ? strdup(cf->ns) : NULL;
    if (!t->key || (cf->claim && !t->claim) || (cf->ns && !t->ns)) {
        free(t->key);
        free(t->claim);
        free(t->ns);
        fl->oom = 1;
        return TR_STOP;
    }
    t->min_ts = cf->min_ts;
    t->max_ts = cf->max_ts;
    t->duration_range = cf->duration_range;
    fl->n++;
    return 0;
}

static int list_files(tiered_reader *tr, const cp_cold_query *q, tr_files *fl)
{
    int st = cp_reader_cold_files(tr->hot, q, on_cold_file, fl, &fl->skipped);
    if (fl->oom) return tr_oom(tr);
    if (fl->truncated || st == CP_OK) return CP_OK;
    return tr_hot_fail(tr, st);
}

/* 1 if the file's min/max time are known and miss [from, to). */
static int file_misses_time(const tr_file *t, int64_t from, int64_t to)
{
    if (t->min_ts == 0 && t->max_ts == 0) return 0;
    if (t->min_ts > t->max_ts) return 0;
    return t->max_ts < from || t->min_ts >= to;
}

/* What the catalog says about the sort column in a file: the time span, or the
 * duration range. */
static void file_bounds(tr_file *t, cp_sort_col col)
{
    t->has_bounds = 0;
    if (col == CP_SORT_TS && !(t->min_ts == 0 && t->max_ts == 0) && t->min_ts <= t->max_ts) {
        t->lo = t->min_ts;
        t->hi = t->max_ts;
        t->has_bounds = 1;
    } else if (col == CP_SORT_DURATION) {
        int r = cp_cold_range_of_upper(t->duration_range);
        if (r >= 0) { /* the first and last ranges also hold whatever lies beyond */
            t->lo = r == 0 ? INT32_MIN : cp_cold_range_lower(r);
            t->hi = r == CP_COLD_RANGES - 1 ? INT32_MAX : (int64_t)cp_cold_range_upper(r) - 1;
            t->has_bounds = 1;
        }
    }
}

/* Best-first: the files that may hold the first rows come first. */
static int file_cmp(const void *pa, const void *pb, void *ud)
{
    const tr_file *a = pa, *b = pb;
    int desc = *(const int *)ud;
    if (a->has_bounds != b->has_bounds) return a->has_bounds ? 1 : -1; /* unknown ones first: cannot be skipped */
    if (!a->has_bounds) return 0;
    return desc ? cmp64(b->hi, a->hi) : cmp64(a->lo, b->lo);
}

/* ---- the file cache ------------------------------------------------------------------------- */

/* <cache_dir>/<first 32 hex digits of sha256(object URL)>.parquet: the URL names the
 * store too, so readers of different stores may share a directory. */
static int cache_path(tiered_reader *tr, const char *key, cp_buf *out)
{
    cp_buf url;
    cp_buf_init(&url);
    int st = tr->store->ops->url ? tr->store->ops->url(tr->store, key, &url) : CP_EINVAL;
    if (st != CP_OK) {
        cp_buf_reset(&url);
        st = cp_buf_puts(&url, key);
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    if (st == CP_OK && EVP_Digest(url.data, url.len, md, &mdlen, EVP_sha256(), NULL) != 1) st = CP_EIO;
    cp_buf_free(&url);
    if (st != CP_OK) return st;
    cp_buf_reset(out);
    st = cp_buf_printf(out, "%s/", tr->cache_dir);
    for (unsigned i = 0; st == CP_OK && i < 16 && i < mdlen; i++) st = cp_buf_printf(out, "%02x", md[i]);
    if (st == CP_OK) st = cp_buf_puts(out, ".parquet");
    if (st == CP_OK) st = cp_buf_putc(out, 0);
    return st;
}

typedef struct tr_cached {
    char name[64];
    time_t mtime;
    long mtime_ns;
    uint64_t size;
} tr_cached;

static int cached_cmp(const void *pa, const void *pb)
{
    const tr_cached *a = pa, *b = pb;
    if (a->mtime != b->mtime) return a->mtime < b->mtime ? -1 : 1;
    return (a->mtime_ns > b->mtime_ns) - (a->mtime_ns < b->mtime_ns);
}

static int is_cache_name(const char *n)
{
    size_t l = strlen(n);
    return l == 32 + 8 && !strcmp(n + 32, ".parquet");
}

/* Unlinks the least recently used copies until the directory is under cache_bytes; keep
 * (the copy just made) stays. Temporary downloads left by a crash are removed. Files
 * that vanish meanwhile (another reader's eviction) are fine. Best effort: errors are
 * ignored, the cache only grows a little over its cap. */
static void cache_evict(tiered_reader *tr, const char *keep)
{
    DIR *dir = opendir(tr->cache_dir);
    if (!dir) return;
    tr_cached *v = NULL;
    size_t n = 0, cap = 0;
    uint64_t total = 0;
    time_t now = time(NULL);
    struct dirent *e;
    int dfd = dirfd(dir);
    while ((e = readdir(dir)) != NULL && n < TR_CACHE_SCAN_MAX) {
        struct stat sb;
        if (fstatat(dfd, e->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(sb.st_mode)) continue;
        if (!strncmp(e->d_name, ".tmp-", 5)) {
            if (now - sb.st_mtime > TR_STALE_TMP_S) unlinkat(dfd, e->d_name, 0);
            continue;
        }
        if (!is_cache_name(e->d_name)) continue;
        total += (uint64_t)sb.st_size;
        if (keep && !strcmp(e->d_name, keep)) continue;
        if (n == cap) {
            size_t nc = cap ? cap * 2 : 64;
            tr_cached *nv = realloc(v, nc * sizeof *nv);
            if (!nv) break;
            v = nv;
            cap = nc;
        }
        snprintf(v[n].name, sizeof v[n].name, "%.63s", e->d_name); /* 40 bytes: is_cache_name */
        v[n].mtime = sb.st_mtim.tv_sec;
        v[n].mtime_ns = sb.st_mtim.tv_nsec;
        v[n].size = (uint64_t)sb.st_size;
        n++;
    }
    if (total > tr->cache_bytes && n) {
        qsort(v, n, sizeof *v, cached_cmp);
        for (size_t i = 0; i < n && total > tr->cache_bytes; i++) {
            if (unlinkat(dfd, v[i].name, 0) == 0 || errno == ENOENT) total -= v[i].size;
        }
    }
    free(v);
    closedir(dir);
}

/* Downloads key to path: a unique temporary name, then rename (atomic for the readers of
 * the directory), then eviction. */
static int cache_download(tiered_reader *tr, const char *key, const char *path)
{
    uint8_t rnd[8];
    if (cp_random_bytes(rnd, sizeof rnd) != CP_OK) memset(rnd, 0, sizeof rnd);
    cp_buf tmp;
    cp_buf_init(&tmp);
    int st = cp_buf_printf(&tmp, "%s/.tmp-%ld-", tr->cache_dir, (long)getpid());
    for (size_t i = 0; st == CP_OK && i < sizeof rnd; i++) st = cp_buf_printf(&tmp, "%02x", rnd[i]);
    if (st == CP_OK) st = cp_buf_putc(&tmp, 0);
    if (st != CP_OK) {
        cp_buf_free(&tmp);
        return tr_oom(tr);
    }
    const char *t = (const char *)tmp.data;
    char err[256] = "";
    if (cp_mkdirs(tr->cache_dir, 0700) != CP_OK) { /* removed behind our back: made again */
        snprintf(tr->err, sizeof tr->err, "cache directory %s: %s", tr->cache_dir, strerror(errno));
        cp_buf_free(&tmp);
        return CP_EIO;
    }
    st = tr->store->ops->get_file(tr->store, key, t, err, sizeof err);
    if (st != CP_OK) {
        unlink(t);
        if (st != CP_ENOTFOUND) snprintf(tr->err, sizeof tr->err, "download %s: %s", key, err);
        cp_buf_free(&tmp);
        return st;
    }
    if (rename(t, path) != 0) {
        snprintf(tr->err, sizeof tr->err, "cache %s: rename: %s", path, strerror(errno));
        unlink(t);
        cp_buf_free(&tmp);
        return CP_EIO;
    }
    cp_buf_free(&tmp);
    const char *base = strrchr(path, '/');
    cache_evict(tr, base ? base + 1 : path);
    return CP_OK;
}

/* Opens the cached copy of key (downloading it when missing or when fresh says so) and
 * marks it used now. */
static int cache_open(tiered_reader *tr, const char *key, int fresh, int *fd, uint64_t *size)
{
    int st = cache_path(tr, key, &tr->path);
    if (st != CP_OK) return tr_oom(tr);
    char *path = strdup((const char *)tr->path.data);
    if (!path) return tr_oom(tr);
    if (fresh) unlink(path);
    *fd = -1;
    for (int attempt = 0; attempt < 3 && st == CP_OK; attempt++) {
        *fd = open(path, O_RDONLY | O_CLOEXEC);
        if (*fd >= 0) break;
        if (errno != ENOENT) {
            snprintf(tr->err, sizeof tr->err, "cache %s: %s", path, strerror(errno));
            st = CP_EIO;
            break;
        }
        /* missing, or evicted by another reader between the download and the open */
        st = cache_download(tr, key, path);
    }
    if (st == CP_OK && *fd < 0) {
        snprintf(tr->err, sizeof tr->err, "cache %s: evicted as soon as downloaded (cache too small?)", path);
        st = CP_EIO;
    }
    struct stat sb;
    if (st == CP_OK && fstat(*fd, &sb) != 0) {
        snprintf(tr->err, sizeof tr->err, "cache %s: %s", path, strerror(errno));
        st = CP_EIO;
    }
    if (st == CP_OK) {
        *size = (uint64_t)sb.st_size;
        futimens(*fd, NULL); /* the LRU clock */
    } else if (*fd >= 0) {
        close(*fd);
        *fd = -1;
    }
    free(path);
    return st;
}

/* ---- open files ------------------------------------------------------------------------------ */

static int pread_local(void *ud, void *dst, size_t n, uint64_t off)
{
    tr_open *o = ud;
    uint8_t *p = dst;
    while (n) {
        ssize_t k = pread(o->fd, p, n, (off_t)off);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            snprintf(o->tr->err, sizeof o->tr->err, "read %s: %s", o->key, strerror(errno));
            return CP_EIO;
        }
        if (k == 0) return CP_ECORRUPT;
        p += k;
        n -= (size_t)k;
        off += (uint64_t)k;
    }
    return CP_OK;
}

static int store_read(tr_open *o, void *dst, size_t n, uint64_t off)
{
    cp_ostore *s = o->tr->store;
    char err[256] = "";
    int st = s->ops->read(s, o->key, dst, n, off, err, sizeof err);
    if (st != CP_OK) snprintf(o->tr->err, sizeof o->tr->err, "read %s: %s", o->key, err);
    return st;
}

/* In place, through the store: small reads are served from a window of TR_READAHEAD
 * bytes fetched at once. */
static int pread_store(void *ud, void *dst, size_t n, uint64_t off)
{
    tr_open *o = ud;
    tiered_reader *tr = o->tr;
    if (tr->ra_owner == o && off >= tr->ra_off && off - tr->ra_off <= tr->ra_len &&
        n <= tr->ra_len - (off - tr->ra_off)) {
        memcpy(dst, tr->ra + (off - tr->ra_off), n);
        return CP_OK;
    }
    if (n >= TR_READAHEAD / 2 || off >= o->size) return store_read(o, dst, n, off);
    if (!tr->ra && !(tr->ra = malloc(TR_READAHEAD))) return store_read(o, dst, n, off);
    size_t len = o->size - off < TR_READAHEAD ? (size_t)(o->size - off) : TR_READAHEAD;
    if (len < n) return store_read(o, dst, n, off); /* past the end: the store says so */
    tr->ra_owner = NULL;
    int st = store_read(o, tr->ra, len, off);
    if (st != CP_OK) return st;
    tr->ra_owner = o;
    tr->ra_off = off;
    tr->ra_len = len;
    memcpy(dst, tr->ra, n);
    return CP_OK;
}

static void open_free(tr_open *o)
{
    if (!o) return;
    if (o->tr->ra_owner == o) o->tr->ra_owner = NULL;
    cp_cold_rows_free(o->rows);
    cp_pq_reader_free(o->pq);
    if (o->fd >= 0) close(o->fd);
    free(o->key);
    free(o);
}

/* A rollup file: its columns by name, and whether its entries are ones this reader
 * understands (the same format: cell length and classes). */
static void rollup_columns(tr_open *o)
{
    o->is_rollup = 1;
    const char *fmt = cp_pq_reader_kv(o->pq, CP_COLD_KV_ROLLUP);
    const char *fp = cp_pq_reader_kv(o->pq, CP_COLD_KV_IDLE_FP);
    o->rollup_ok = fmt && !strcmp(fmt, CP_COLD_ROLLUP_FORMAT);
    o->idle_fp = fp ? strtoll(fp, NULL, 10) : -1;
    for (int c = 0; c < CP_COLD_R_COUNT; c++) {
        int i = cp_pq_reader_find(o->pq, cp_cold_rollup_schema[c].name);
        const cp_pq_column *col = i >= 0 ? cp_pq_reader_column(o->pq, (size_t)i) : NULL;
        int want_text = cp_cold_rollup_schema[c].type == CP_PQ_STRING;
        int is_text = col && (col->type == CP_PQ_STRING || col->type == CP_PQ_BINARY);
        int is_int = col && (col->type == CP_PQ_I32 || col->type == CP_PQ_I64 || col->type == CP_PQ_TS_MS);
        if (!col || (want_text ? !is_text : !is_int)) o->rollup_ok = 0;
        o->rcol[c] = i;
    }
}

/* Opens the Parquet reader and the row decoder of an object whose bytes o reaches. */
static int open_parquet(tiered_reader *tr, tr_open *o, uint64_t size)
{
    char err[256] = "";
    o->size = size;
    int st = cp_pq_reader_open(o->fd >= 0 ? pread_local : pread_store, o, size, &o->pq, err, sizeof err);
    if (st == CP_OK && cp_pq_reader_kv(o->pq, CP_COLD_KV_ROLLUP)) {
        rollup_columns(o);
        return CP_OK;
    }
    if (st == CP_OK) st = cp_cold_rows_open(o->pq, &o->rows, err, sizeof err);
    if (st == CP_OK) {
        const char *order = cp_pq_reader_kv(o->pq, CP_COLD_KV_ORDER);
        o->time_sorted = order && !strcmp(order, CP_COLD_ORDER_TIME);
    }
    if (st != CP_OK && st != CP_ENOTFOUND) snprintf(tr->err, sizeof tr->err, "cold file %s: %s", o->key, err);
    return st;
}

/* One attempt at opening key; fresh: throw away a cached copy first. */
static int open_once(tiered_reader *tr, tr_open *o, int fresh)
{
    uint64_t size = 0;
    int st;
    if (tr->cache_dir) {
        st = cache_open(tr, o->key, fresh, &o->fd, &size);
    } else {
        char err[256] = "";
        st = tr->store->ops->size(tr->store, o->key, &size, err, sizeof err);
        if (st != CP_OK && st != CP_ENOTFOUND) snprintf(tr->err, sizeof tr->err, "size of %s: %s", o->key, err);
    }
    if (st == CP_OK) st = open_parquet(tr, o, size);
    return st;
}

/* The open file for key: from the reader's open files, or opened now (closing the least
 * recently used one when all slots are taken). CP_ENOTFOUND: the object is gone. */
static int file_open(tiered_reader *tr, const char *key, tr_open **out)
{
    for (size_t i = 0; i < tr->nopen; i++) {
        tr_open *o = tr->open[i];
        if (!strcmp(o->key, key)) {
            o->used = ++tr->tick;
            if (o->fd >= 0) futimens(o->fd, NULL);
            *out = o;
            return CP_OK;
        }
    }
    if (tr->nopen == TR_OPEN_FILES) {
        size_t lru = 0;
        for (size_t i = 1; i < tr->nopen; i++)
            if (tr->open[i]->used < tr->open[lru]->used) lru = i;
        open_free(tr->open[lru]);
        tr->open[lru] = tr->open[--tr->nopen];
    }
    tr_open *o = calloc(1, sizeof *o);
    if (!o) return tr_oom(tr);
    o->tr = tr;
    o->fd = -1;
    o->key = strdup(key);
    if (!o->key) {
        free(o);
        return tr_oom(tr);
    }
    int st = open_once(tr, o, 0);
    if (st == CP_ECORRUPT && tr->cache_dir) {
        /* a damaged local copy: fetch it again once */
        cp_cold_rows_free(o->rows);
        cp_pq_reader_free(o->pq);
        if (o->fd >= 0) close(o->fd);
        o->rows = NULL;
        o->pq = NULL;
        o->fd = -1;
        st = open_once(tr, o, 1);
    }
    if (st != CP_OK) {
        open_free(o);
        return st;
    }
    o->used = ++tr->tick;
    tr->open[tr->nopen++] = o;
    *out = o;
    return CP_OK;
}

/* Forgets an open file after a read failed (it may be damaged or replaced). */
static void file_drop(tiered_reader *tr, tr_open *o)
{
    for (size_t i = 0; i < tr->nopen; i++) {
        if (tr->open[i] == o) {
            tr->open[i] = tr->open[--tr->nopen];
            open_free(o);
            return;
        }
    }
}

/* A local copy that does not decode is removed, so the next use downloads it again. */
static void cache_forget(tiered_reader *tr, const char *key)
{
    if (cache_path(tr, key, &tr->path) == CP_OK) unlink((const char *)tr->path.data);
}

static int rows_read(tiered_reader *tr, tr_open *o, size_t rg, uint32_t cols)
{
    char err[256] = "";
    int st = cp_cold_rows_read(o->rows, rg, cols, err, sizeof err);
    if (st != CP_OK) {
        snprintf(tr->err, sizeof tr->err, "cold file %s: %s", o->key, err);
        if (o->fd >= 0 && st == CP_ECORRUPT) cache_forget(tr, o->key);
        file_drop(tr, o);
    }
    return st;
}

static int rows_call(tiered_reader *tr, tr_open *o, size_t i, int json, cp_call *c)
{
    int st = cp_cold_rows_call(o->rows, i, json, c);
    if (st != CP_OK) snprintf(tr->err, sizeof tr->err, "cold file %s: row %zu does not decode", o->key, i);
    return st;
}

/* ---- the cold search ------------------------------------------------------------------------ */


static int str_eq(const char *a, size_t al, const char *b, size_t bl) { return al == bl && !memcmp(a, b, al); }

/* The columns the filters and the order look at (step 1). */
static uint32_t step1_columns(const cp_call_filter *f)
{
    uint32_t c = CP_COLD_COL(CP_COLD_C_TIME) | CP_COLD_COL(CP_COLD_C_RESTART) | CP_COLD_COL(CP_COLD_C_TRACE_INDEX) |
                 CP_COLD_COL(CP_COLD_C_NAMESPACE) | CP_COLD_COL(CP_COLD_C_POD);
    c |= sort_columns_needed(f->sort);
    if (f->service) c |= CP_COLD_COL(CP_COLD_C_SERVICE);
    if (f->min_duration_ms > 0 || f->max_duration_ms < INT64_MAX) c |= CP_COLD_COL(CP_COLD_C_DURATION);
    if (f->errors_only || f->match) c |= CP_COLD_COL(CP_COLD_C_PARAMS);
    if (f->method_substr || f->match) c |= CP_COLD_COL(CP_COLD_C_METHOD);
    return c;
}

/* Step 1 for row i (c built without its params JSON): 1 if it matches every filter,
 * comes after the keyset and would be kept now; counts it against the budget. The
 * search's prefilter runs on the decoded columns before the row is built with its
 * params JSON for the predicate; *c is that row then. */
static int row_wanted(tr_search *s, tr_open *o, size_t i, cp_call *c, uint64_t h, int *err)
{
    const cp_call_filter *f = s->f;
    *err = CP_OK;
    if (c->ts_ms < s->from || c->ts_ms >= s->to) return 0;
    if (f->ns && !str_eq(c->ns, c->ns_len, f->ns, s->ns_len)) return 0;
    if (!cp_call_filter_ns_ok(f, c->ns, c->ns_len)) return 0;
    if (f->service && !str_eq(c->service, c->service_len, f->service, s->service_len)) return 0;
    if (f->pod && !str_eq(c->pod, c->pod_len, f->pod, s->pod_len)) return 0;
    if (f->min_duration_ms > 0 && c->duration_ms < f->min_duration_ms) return 0;
    if (f->max_duration_ms < INT64_MAX && c->duration_ms > f->max_duration_ms) return 0;
    if (f->errors_only && !c->error) return 0;
    if (f->after && cmp_after(f, c, h, f->after) <= 0) return 0;
    if (!heap_wants(s, c, h)) return 0;
    /* what reaches the predicates counts (the hot tier counts rows given to cp_match) */
    if (s->capped) {
        if (s->budget == 0) {
            s->partial = s->over = 1;
            return 0;
        }
        s->budget--;
    }
    s->scanned++;
    if (s->needle && !cp_ci_contains(c->method, c->method_len, s->needle, s->needle_len)) return 0;
    if (f->nneedles && !cp_cold_rows_contains(o->rows, i, f->needles, f->nneedles)) return 0;
    if (f->match) {
        if ((*err = rows_call(s->tr, o, i, 1, c)) != CP_OK) return 0;
        cp_call_view v = {c->method, c->method_len, c->pod, c->pod_len, c->params_json, c->params_json_len};
        if (!f->match(f->match_ud, &v)) return 0;
    }
    return 1;
}

static int cand_push(tr_search *s, size_t i)
{
    if (s->ncand == s->capcand) {
        size_t cap = s->capcand ? s->capcand * 2 : 256;
        size_t *v = realloc(s->cand, cap * sizeof *v);
        if (!v) return CP_ENOMEM;
        s->cand = v;
        s->capcand = cap;
    }
    s->cand[s->ncand++] = i;
    return CP_OK;
}

/* One row group: step 1 over the filter columns, step 2 (the other columns) for the
 * rows worth keeping. */
static int search_rg(tr_search *s, tr_open *o, size_t rg)
{
    tiered_reader *tr = s->tr;
    const cp_call_filter *f = s->f;
    uint32_t c1 = step1_columns(f);
    int st = rows_read(tr, o, rg, c1);
    if (st != CP_OK) return st;
    size_t n = cp_cold_rows_count(o->rows);
    s->ncand = 0;
    for (size_t i = 0; i < n && !s->over; i++) {
        cp_call c;
        if ((st = rows_call(tr, o, i, 0, &c)) != CP_OK) return st;
        uint64_t h = cp_pod_hash(c.ns, c.ns_len, c.pod, c.pod_len);
        int ok = row_wanted(s, o, i, &c, h, &st);
        if (st != CP_OK) return st;
        if (ok && cand_push(s, i) != CP_OK) return tr_oom(tr);
    }
    if (!s->ncand) return CP_OK;
    uint32_t all = CP_COLD_COLS_ALL & ~CP_COLD_COL(CP_COLD_C_TRACE);
    if ((st = rows_read(tr, o, rg, all)) != CP_OK) return st;
    for (size_t k = 0; k < s->ncand; k++) {
        cp_call c;
        if ((st = rows_call(tr, o, s->cand[k], 1, &c)) != CP_OK) return st;
        if (heap_offer(s, &c, cp_pod_hash(c.ns, c.ns_len, c.pod, c.pod_len)) != CP_OK) return tr_oom(tr);
    }
    return CP_OK;
}

/* ---- time-sorted files, time order ------------------------------------------------------------
 *
 * A file whose rows are in time order (the layout since issue 14) is read from the end a
 * time-ordered page needs: row groups in the page's direction, and in each only the rows
 * that can still make the page -- the time column first (rows outside the range found by
 * binary search), then the filter columns for the rows the time allows, stopping once
 * `cap` rows passed and the time moved on (the rest of the row group is worse), then the
 * other columns only if a row is kept. A row group entirely worse than the kept rows ends
 * the file: the next ones are worse still. */

/* First index in [0, n) with v[i] >= t (v ascending). */
static size_t lower_bound64(const int64_t *v, size_t n, int64_t t)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] < t) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* 1 when no row at time t (or past it, in the walk's direction) can be kept any more. */
static int time_done(const tr_search *s, int64_t t)
{
    if (!heap_full(s)) return 0;
    int64_t w = s->heap.v[0].c.ts_ms;
    return s->f->desc ? t < w : t > w;
}

static int search_rg_time(tr_search *s, tr_open *o, size_t rg)
{
    tiered_reader *tr = s->tr;
    const cp_call_filter *f = s->f;
    int st = rows_read(tr, o, rg, CP_COLD_COL(CP_COLD_C_TIME));
    if (st != CP_OK) return st;
    size_t n = cp_cold_rows_count(o->rows);
    const int64_t *ts = cp_cold_rows_ints(o->rows, CP_COLD_C_TIME);
    if (!ts || !n) return CP_OK;
    size_t i0 = lower_bound64(ts, n, s->from), i1 = lower_bound64(ts, n, s->to);
    if (i0 >= i1) return CP_OK;
    /* the first row the walk meets must be wanted by time at all */
    if (time_done(s, f->desc ? ts[i1 - 1] : ts[i0])) return CP_OK;
    if ((st = rows_read(tr, o, rg, step1_columns(f))) != CP_OK) return st;
    s->ncand = 0;
    size_t passed = 0;
    int64_t last_pass = 0;
    for (size_t k = 0; k < i1 - i0 && !s->over; k++) {
        size_t i = f->desc ? i1 - 1 - k : i0 + k;
        if (time_done(s, ts[i])) break;
        if (passed >= s->cap && ts[i] != last_pass) break; /* the rest of the group is worse than these */
        cp_call c;
        if ((st = rows_call(tr, o, i, 0, &c)) != CP_OK) return st;
        uint64_t h = cp_pod_hash(c.ns, c.ns_len, c.pod, c.pod_len);
        int ok = row_wanted(s, o, i, &c, h, &st);
        if (st != CP_OK) return st;
        if (!ok) continue;
        if (cand_push(s, i) != CP_OK) return tr_oom(tr);
        passed++;
        last_pass = ts[i];
    }
    if (!s->ncand) return CP_OK;
    uint32_t all = CP_COLD_COLS_ALL & ~CP_COLD_COL(CP_COLD_C_TRACE);
    if ((st = rows_read(tr, o, rg, all)) != CP_OK) return st;
    for (size_t k = 0; k < s->ncand; k++) {
        cp_call c;
        if ((st = rows_call(tr, o, s->cand[k], 1, &c)) != CP_OK) return st;
        if (heap_offer(s, &c, cp_pod_hash(c.ns, c.ns_len, c.pod, c.pod_len)) != CP_OK) return tr_oom(tr);
    }
    return CP_OK;
}

/* 1 if row group rg of a time-sorted file, and every one after it in the walk, is past
 * the range or worse than the kept rows. *skip: only this one can be skipped. */
static int rg_time_end(tr_search *s, tr_open *o, size_t rg, int *skip)
{
    int64_t lo, hi;
    *skip = 0;
    if (!stats_int(o->rows, o->pq, rg, CP_COLD_C_TIME, &lo, &hi)) return 0;
    if (s->f->desc) {
        if (hi < s->from || time_done(s, hi)) return 1;
        if (lo >= s->to) *skip = 1;
    } else {
        if (lo >= s->to || time_done(s, lo)) return 1;
        if (hi < s->from) *skip = 1;
    }
    return 0;
}

/* After a row group of a local copy did not decode (rows_read dropped the file and
 * removed the copy): the file again, downloaded afresh, with as many row groups. */
static int reopen_damaged(tiered_reader *tr, const tr_file *t, size_t nrg, tr_open **o)
{
    int st = file_open(tr, t->key, o);
    if (st == CP_OK && cp_pq_reader_row_groups((*o)->pq) != nrg) {
        snprintf(tr->err, sizeof tr->err, "cold file %s: changed while read", t->key);
        st = CP_ECORRUPT;
    }
    return st;
}

static int search_file(tr_search *s, const tr_file *t)
{
    tr_open *o;
    int st = file_open(s->tr, t->key, &o);
    if (st == CP_ENOTFOUND) return CP_OK; /* deleted by retention since it was listed */
    if (st != CP_OK) return st;
    s->files++;
    size_t nrg = cp_pq_reader_row_groups(o->pq);
    int retried = 0;
    int by_time = o->time_sorted && s->f->sort == CP_SORT_TS;
    for (size_t k = 0; k < nrg && !s->over; k++) {
        /* a time-ordered page walks a time-sorted file from the end it needs */
        size_t rg = by_time && s->f->desc ? nrg - 1 - k : k;
        if (by_time) {
            int skip;
            if (rg_time_end(s, o, rg, &skip)) break;
            if (skip) continue;
        }
        if (rg_skip(s, o, rg)) continue;
        st = by_time ? search_rg_time(s, o, rg) : search_rg(s, o, rg);
        if (st == CP_ECORRUPT && s->tr->cache_dir && !retried) {
            /* a damaged local copy: once more from a new one, this row group again (the
             * rows kept so far decoded, so they stay) */
            retried = 1;
            st = reopen_damaged(s->tr, t, nrg, &o);
            if (st == CP_ENOTFOUND) return CP_OK;
            if (st != CP_OK) return st;
            k--; /* unsigned wrap-around at 0 is defined: the loop's ++ brings it back */
            continue;
        }
        if (st != CP_OK) return st;
    }
    cp_cold_rows_release(o->rows); /* the rows kept are copies */
    return CP_OK;
}

static int row_ptr_cmp(const void *pa, const void *pb, void *ud)
{
    const tr_row *a = *(const tr_row *const *)pa, *b = *(const tr_row *const *)pb;
    return cmp_calls(ud, &a->c, a->pod_hash, &b->c, b->pod_hash);
}

/* cp_progress.rows of a search under way: the hot rows and the cold rows kept so far,
 * merged in the order, the first `limit`. */
static int tr_snapshot(void *ctx, cp_call_fn fn, void *ud)
{
    tr_search *s = ctx;
    size_t n = s->heap.n;
    const tr_row **v = malloc((n ? n : 1) * sizeof *v);
    if (!v) return CP_ENOMEM;
    for (size_t i = 0; i < n; i++) v[i] = &s->heap.v[i];
    qsort_r(v, n, sizeof *v, row_ptr_cmp, (void *)s->f);
    const tr_rows *hot = s->hot;
    size_t i = 0, j = 0, emitted = 0, nh = hot ? hot->n : 0;
    int r = 0;
    while (!r && emitted < s->f->limit && (i < nh || j < n)) {
        const tr_row *h = i < nh ? &hot->v[i] : NULL, *c = j < n ? v[j] : NULL;
        int k = !h ? 1 : !c ? -1 : cmp_calls(s->f, &h->c, h->pod_hash, &c->c, c->pod_hash);
        if (k == 0) j++; /* the same call in both tiers */
        const tr_row *x = k <= 0 ? h : c;
        if (k <= 0) i++;
        else j++;
        r = fn(ud, &x->c);
        emitted++;
    }
    free(v);
    return r;
}

/* Reports progress; CP_EABORT when the caller cancels. */
static int search_progress(tr_search *s, size_t files_done, size_t files_total)
{
    const cp_call_filter *f = s->f;
    if (!f->progress) return CP_OK;
    cp_progress p;
    memset(&p, 0, sizeof p);
    p.files_done = files_done;
    p.files_total = files_total;
    p.windows_done = p.windows_total = s->hot_windows;
    p.scanned = s->hot_scanned + s->scanned;
    p.rows = tr_snapshot;
    p.rows_ctx = s;
    if (!f->progress(f->progress_ud, &p)) return CP_OK;
    snprintf(s->tr->err, sizeof s->tr->err, "cancelled");
    return CP_EABORT;
}

/* The cold half of a search: the best cap rows into s->heap, sorted. */
static int cold_search(tr_search *s)
{
    tiered_reader *tr = s->tr;
    const cp_call_filter *f = s->f;
    if (s->from >= s->to) return CP_OK;
    cp_cold_query q;
    memset(&q, 0, sizeof q);
    q.from_ms = s->from;
    q.to_ms = s->to;
    q.ns = f->ns;
    q.min_duration_ms = f->min_duration_ms;
    q.max_duration_ms = f->max_duration_ms;
    q.params = f->params;
    q.nparams = f->params ? f->nparams : 0;
    tr_files fl;
    memset(&fl, 0, sizeof fl);
    fl.scope = f;
    int st = list_files(tr, &q, &fl);
    if (st == CP_OK && fl.truncated) s->partial = 1;
    s->skipped = fl.skipped;
    int desc = f->desc;
    for (size_t i = 0; st == CP_OK && i < fl.n; i++) file_bounds(&fl.v[i], f->sort);
    if (st == CP_OK && fl.n > 1 && (f->sort == CP_SORT_TS || f->sort == CP_SORT_DURATION))
        qsort_r(fl.v, fl.n, sizeof *fl.v, file_cmp, &desc);
    if (st == CP_OK) st = search_progress(s, 0, fl.n);
    for (size_t i = 0; st == CP_OK && i < fl.n && !s->over; i++) {
        const tr_file *t = &fl.v[i];
        if (file_misses_time(t, s->from, s->to)) continue;
        if (t->has_bounds && bounds_skip(s, t->lo, t->hi)) continue;
        st = search_file(s, t);
        if (st == CP_OK) st = search_progress(s, i + 1, fl.n);
    }
    files_free(&fl);
    if (st == CP_OK) heap_sort(s);
    return st;
}

/* ---- search: hot, cold, merge ------------------------------------------------------------------ */

typedef struct tr_collect {
    tr_rows rows;
    int oom;
} tr_collect;

static int collect_hot(void *ud, const cp_call *c)
{
    tr_collect *k = ud;
    tr_row *r = rows_push(&k->rows);
    if (!r || row_own(r, c, cp_pod_hash(c->ns, c->ns_len, c->pod, c->pod_len)) != CP_OK) {
        if (r) k->rows.n--;
        k->oom = 1;
        return CP_ENOMEM;
    }
    return 0;
}

static int check_filter(tiered_reader *tr, const cp_call_filter *f)
{
    if ((unsigned)f->sort >= CP_SORT_COUNT || f->limit > TR_MAX_LIMIT) {
        snprintf(tr->err, sizeof tr->err, "bad search: sort column %d, limit %zu (at most %d)", (int)f->sort, f->limit,
                 TR_MAX_LIMIT);
        return CP_EINVAL;
    }
    if (f->after && (f->after->col != f->sort || !f->after->desc != !f->desc)) {
        snprintf(tr->err, sizeof tr->err, "bad search: the keyset is for another sort order");
        return CP_EINVAL;
    }
    if (f->nparams && !f->params) {
        snprintf(tr->err, sizeof tr->err, "bad search: %zu params without their array", f->nparams);
        return CP_EINVAL;
    }
    return CP_OK;
}

/* The search's range, budget and needle. */
static int search_setup(tiered_reader *tr, tr_search *s, const cp_call_filter *f, uint64_t hot_scanned)
{
    s->tr = tr;
    s->f = f;
    s->from = f->from_ms;
    s->to = f->to_ms;
    if (f->after && f->sort == CP_SORT_TS) {
        int64_t t = f->after->ref.ts_ms;
        if (f->desc && t < INT64_MAX && t + 1 < s->to) s->to = t + 1;
        if (!f->desc && t > s->from) s->from = t;
    }
    s->ns_len = f->ns ? strlen(f->ns) : 0;
    s->service_len = f->service ? strlen(f->service) : 0;
    s->pod_len = f->pod ? strlen(f->pod) : 0;
    s->cap = f->limit + 1;
    if (f->max_scan) {
        s->capped = 1;
        s->budget = f->max_scan > hot_scanned ? f->max_scan - hot_scanned : 0;
    }
    if (f->method_substr) {
        size_t n = strlen(f->method_substr);
        if (cp_rd_fold_into(&tr->needle, f->method_substr, n) != CP_OK) return tr_oom(tr);
        s->needle = (const char *)tr->needle.data;
        s->needle_len = n;
    }
    return CP_OK;
}

/* Hands over the first limit rows of the two sorted lists; a cold row equal to the hot
 * row beside it is the same call seen twice (see the top) and is dropped. *rest = rows
 * left over. */
static int merge_emit(const cp_call_filter *f, const tr_rows *hot, const tr_rows *cold, cp_call_fn fn, void *ud,
                      int *rest)
{
    size_t i = 0, j = 0, emitted = 0;
    while (i < hot->n || j < cold->n) {
        const tr_row *h = i < hot->n ? &hot->v[i] : NULL, *c = j < cold->n ? &cold->v[j] : NULL;
        int k = !h ? 1 : !c ? -1 : cmp_calls(f, &h->c, h->pod_hash, &c->c, c->pod_hash);
        if (k == 0) { /* the same call in both tiers */
            j++;
            continue;
        }
        if (emitted == f->limit) break;
        const tr_row *r = k < 0 ? h : c;
        if (k < 0) i++;
        else j++;
        int u = fn(ud, &r->c);
        if (u) return u;
        emitted++;
    }
    /* a leftover cold row equal to the last hot row handed over is not "more" */
    if (j < cold->n && i > 0 && i <= hot->n &&
        cmp_calls(f, &hot->v[i - 1].c, hot->v[i - 1].pod_hash, &cold->v[j].c, cold->v[j].pod_hash) == 0)
        j++;
    *rest = i < hot->n || j < cold->n;
    return 0;
}

static int tr_search_calls(cp_reader *base, const cp_call_filter *f, cp_call_fn fn, void *ud, cp_search_stats *stats)
{
    tiered_reader *tr = (tiered_reader *)base;
    cp_search_stats dummy;
    if (!stats) stats = &dummy;
    memset(stats, 0, sizeof *stats);
    int st = check_filter(tr, f);
    if (st != CP_OK) return st;
    /* 1. hot */
    tr_collect hot;
    memset(&hot, 0, sizeof hot);
    cp_search_stats hs;
    memset(&hs, 0, sizeof hs);
    st = cp_reader_search(tr->hot, f, collect_hot, &hot, &hs);
    if (st != CP_OK) {
        if (hot.oom) tr_oom(tr);
        else tr_hot_fail(tr, st);
        rows_free(&hot.rows);
        return st;
    }
    /* 2. cold */
    tr_search s;
    memset(&s, 0, sizeof s);
    st = search_setup(tr, &s, f, hs.scanned);
    s.hot = &hot.rows;
    s.hot_scanned = hs.scanned;
    s.hot_windows = hs.windows;
    if (st == CP_OK) st = cold_search(&s);
    /* 3. merge */
    int rest = 0;
    if (st == CP_OK) st = merge_emit(f, &hot.rows, &s.heap, fn, ud, &rest);
    stats->scanned = hs.scanned + s.scanned;
    stats->windows = hs.windows + s.files;
    stats->cold_files = s.files;
    stats->cold_skipped = s.skipped;
    stats->partial = hs.partial || s.partial;
    stats->more = hs.more || rest || stats->partial;
    rows_free(&hot.rows);
    rows_free(&s.heap);
    free(s.cand);
    return st;
}

/* ---- stats (cp_stats.h) ------------------------------------------------------------------------
 *
 * The hot reader counts the hot tier (its rollups and scans) and lists the cold files in
 * the same snapshot, so a compaction finishing meanwhile is seen entirely or not at all:
 * every call counted once. Then the cold tier: the rollup files' entries of [a, b) for the
 * calls files they cover (same claim and namespace, a format this reader knows, the idle
 * list of the query when it hides system calls), and the scans cp_stats_scans asks for on
 * every calls file -- the edges and the cut classes of covered ones, everything of the
 * others (files written before rollups existed). */

typedef struct tr_stats {
    tiered_reader *tr;
    const cp_call_filter *f;
    const cp_stats_plan *p;
    cp_stats *acc;
    cp_stats_info *info;
    const tr_file *cur;                 /* the calls file a scan runs on */
    cp_progress prog;
    const char *needle;
    size_t needle_len;
} tr_stats;

static int stats_progress(tr_stats *k, uint64_t extra)
{
    const cp_call_filter *f = k->f;
    k->prog.scanned = k->info->scanned + extra;
    if (f->progress && f->progress(f->progress_ud, &k->prog)) {
        snprintf(k->tr->err, sizeof k->tr->err, "cancelled");
        return CP_EABORT;
    }
    return CP_OK;
}

/* The entries of one rollup file in [a, b). */
static int stats_rollup_rows(tr_stats *k, tr_open *o)
{
    const cp_stats_plan *p = k->p;
    size_t nrg = cp_pq_reader_row_groups(o->pq);
    cp_pq_column_data cd[CP_COLD_R_COUNT];
    for (size_t rg = 0; rg < nrg; rg++) {
        cp_pq_stats ps;
        if (cp_pq_reader_stats(o->pq, rg, (size_t)o->rcol[CP_COLD_R_CELL], &ps) == CP_OK && ps.has_minmax &&
            (ps.max_i < p->a || ps.min_i >= p->b))
            continue;
        cp_pq_reader_reset_arena(o->pq);
        for (int c = 0; c < CP_COLD_R_COUNT; c++) {
            if (cp_pq_reader_read(o->pq, rg, (size_t)o->rcol[c], &cd[c]) != CP_OK) {
                snprintf(k->tr->err, sizeof k->tr->err, "rollup file %s: %s", o->key, cp_pq_reader_errmsg(o->pq));
                cp_pq_reader_reset_arena(o->pq);
                return CP_ECORRUPT;
            }
        }
        size_t n = cd[0].nrows;
        for (int c = 1; c < CP_COLD_R_COUNT; c++) {
            if (cd[c].nrows != n) {
                snprintf(k->tr->err, sizeof k->tr->err, "rollup file %s: columns of unequal length", o->key);
                cp_pq_reader_reset_arena(o->pq);
                return CP_ECORRUPT;
            }
        }
#define RI(c) (cd[c].i ? cd[c].i[i] : 0)
#define RB(c, field, flen)                                                                                     \
    do {                                                                                                       \
        cp_pq_bytes b_ = cd[c].b ? cd[c].b[i] : (cp_pq_bytes){NULL, 0};                                        \
        e.field = b_.p ? (const char *)b_.p : "";                                                              \
        e.flen = b_.len;                                                                                       \
    } while (0)
        for (size_t i = 0; i < n; i++) {
            cp_rollup_entry e;
            e.cell_ms = RI(CP_COLD_R_CELL);
            if (e.cell_ms < p->a || e.cell_ms >= p->b) continue;
            RB(CP_COLD_R_NAMESPACE, ns, ns_len);
            RB(CP_COLD_R_SERVICE, service, service_len);
            RB(CP_COLD_R_POD, pod, pod_len);
            e.cls = (int32_t)RI(CP_COLD_R_CLASS);
            e.flags = (int32_t)RI(CP_COLD_R_FLAGS);
            e.idle_fp = o->idle_fp;
            e.n = RI(CP_COLD_R_COUNT_CALLS);
            e.sum_duration = RI(CP_COLD_R_SUM_DURATION);
            e.sum_suspend = RI(CP_COLD_R_SUM_SUSPEND);
            e.sum_queue = RI(CP_COLD_R_SUM_QUEUE);
            e.sum_transactions = RI(CP_COLD_R_SUM_TRANSACTIONS);
            e.max.ts_ms = RI(CP_COLD_R_MAX_TIME);
            e.max.duration_ms = (int32_t)RI(CP_COLD_R_MAX_DURATION);
            e.max.calls = (int32_t)RI(CP_COLD_R_MAX_CALLS);
            e.max.restart_ms = RI(CP_COLD_R_MAX_RESTART);
            e.max.trace_file_index = (int32_t)RI(CP_COLD_R_MAX_TFI);
            e.max.buffer_offset = (int32_t)RI(CP_COLD_R_MAX_BO);
            e.max.record_index = (int32_t)RI(CP_COLD_R_MAX_RI);
            if (cp_stats_entry_matches(k->f, p, &e) != 1) continue;
            cp_stats_add_entry(k->acc, &e, cp_pod_hash(e.ns, e.ns_len, e.pod, e.pod_len));
            k->info->rollup_entries++;
        }
#undef RI
#undef RB
    }
    cp_pq_reader_reset_arena(o->pq);
    return CP_OK;
}

static int same_opt(const char *a, const char *b) { return a && b && !strcmp(a, b); }

/* Reads the usable rollup files and marks the calls files they cover. */
static int stats_rollups(tr_stats *k, tr_files *rl, tr_files *calls)
{
    const cp_rollup_sel *sel = k->f->sel;
    for (size_t i = 0; i < rl->n; i++) {
        tr_file *t = &rl->v[i];
        tr_open *o;
        int st = file_open(k->tr, t->key, &o);
        if (st == CP_ENOTFOUND) continue; /* deleted since it was listed: its calls files too */
        if (st != CP_OK) return st;
        if (!o->is_rollup || !o->rollup_ok || !t->claim || !t->ns) continue;
        if (sel && sel->hide_system && o->idle_fp != sel->idle_fp) continue;
        st = stats_rollup_rows(k, o);
        if (st != CP_OK) return st;
        k->info->rollup_files++;
        for (size_t j = 0; j < calls->n; j++)
            if (same_opt(calls->v[j].claim, t->claim) && same_opt(calls->v[j].ns, t->ns)) calls->v[j].covered = 1;
    }
    return CP_OK;
}

/* The columns a stats scan reads. */
static uint32_t stats_columns(const cp_call_filter *f)
{
    uint32_t c = CP_COLD_COL(CP_COLD_C_TIME) | CP_COLD_COL(CP_COLD_C_DURATION) | CP_COLD_COL(CP_COLD_C_CALLS) |
                 CP_COLD_COL(CP_COLD_C_SUSPEND) | CP_COLD_COL(CP_COLD_C_QUEUE) |
                 CP_COLD_COL(CP_COLD_C_TRANSACTIONS) | CP_COLD_COL(CP_COLD_C_RESTART) |
                 CP_COLD_COL(CP_COLD_C_TRACE_INDEX) | CP_COLD_COL(CP_COLD_C_NAMESPACE) | CP_COLD_COL(CP_COLD_C_POD);
    if (f->service) c |= CP_COLD_COL(CP_COLD_C_SERVICE);
    if (f->errors_only || f->match) c |= CP_COLD_COL(CP_COLD_C_PARAMS);
    if (f->method_substr || f->match) c |= CP_COLD_COL(CP_COLD_C_METHOD);
    return c;
}

static int stats_row_ok(tr_stats *k, const cp_call_filter *f, const cp_call *c)
{
    if (c->ts_ms < f->from_ms || c->ts_ms >= f->to_ms) return 0;
    if (f->min_duration_ms > 0 && c->duration_ms < f->min_duration_ms) return 0;
    if (f->max_duration_ms < INT64_MAX && c->duration_ms > f->max_duration_ms) return 0;
    if (f->ns && !str_eq(c->ns, c->ns_len, f->ns, strlen(f->ns))) return 0;
    if (!cp_call_filter_ns_ok(f, c->ns, c->ns_len)) return 0;
    if (f->service && !str_eq(c->service, c->service_len, f->service, strlen(f->service))) return 0;
    if (f->pod && !str_eq(c->pod, c->pod_len, f->pod, strlen(f->pod))) return 0;
    if (f->errors_only && !c->error) return 0;
    if (k->needle && !cp_ci_contains(c->method, c->method_len, k->needle, k->needle_len)) return 0;
    if (f->match) {
        cp_call_view v = {c->method, c->method_len, c->pod, c->pod_len, c->params_json, c->params_json_len};
        if (!f->match(f->match_ud, &v)) return 0;
    }
    return 1;
}

/* One scan of the current calls file: the calls of sub counted into acc. 1 when the
 * scan budget ran out. */
static int stats_scan(void *ud, const cp_call_filter *sub)
{
    tr_stats *k = ud;
    tiered_reader *tr = k->tr;
    const tr_file *t = k->cur;
    if (sub->from_ms >= sub->to_ms || sub->min_duration_ms > sub->max_duration_ms) return 0;
    if (file_misses_time(t, sub->from_ms, sub->to_ms)) return 0;
    if (!cp_rd_cold_range_overlaps(t->duration_range, sub->min_duration_ms, sub->max_duration_ms)) return 0;
    tr_open *o;
    int st = file_open(tr, t->key, &o);
    if (st == CP_ENOTFOUND) return 0;
    if (st != CP_OK) return st;
    if (o->is_rollup) return 0;
    k->info->cold_files++;
    uint32_t cols = stats_columns(sub);
    int json = sub->match != NULL;
    size_t nrg = cp_pq_reader_row_groups(o->pq);
    for (size_t rg = 0; rg < nrg; rg++) {
        int64_t lo, hi;
        if (stats_int(o->rows, o->pq, rg, CP_COLD_C_TIME, &lo, &hi) && (hi < sub->from_ms || lo >= sub->to_ms)) continue;
        if (stats_int(o->rows, o->pq, rg, CP_COLD_C_DURATION, &lo, &hi) &&
            ((sub->min_duration_ms > 0 && hi < sub->min_duration_ms) ||
             (sub->max_duration_ms < INT64_MAX && lo > sub->max_duration_ms)))
            continue;
        if (sub->ns && stats_exclude_text(o->rows, o->pq, rg, CP_COLD_C_NAMESPACE, sub->ns, strlen(sub->ns))) continue;
        if (sub->service &&
            stats_exclude_text(o->rows, o->pq, rg, CP_COLD_C_SERVICE, sub->service, strlen(sub->service)))
            continue;
        if (sub->pod && stats_exclude_text(o->rows, o->pq, rg, CP_COLD_C_POD, sub->pod, strlen(sub->pod))) continue;
        size_t i0 = 0, n = 0;
        if (o->time_sorted) { /* the rows of the range, by binary search on the time */
            if ((st = rows_read(tr, o, rg, CP_COLD_COL(CP_COLD_C_TIME))) != CP_OK) return st;
            n = cp_cold_rows_count(o->rows);
            const int64_t *ts = cp_cold_rows_ints(o->rows, CP_COLD_C_TIME);
            if (!ts) continue;
            i0 = lower_bound64(ts, n, sub->from_ms);
            n = lower_bound64(ts, n, sub->to_ms);
            if (i0 >= n) continue;
        }
        if ((st = rows_read(tr, o, rg, cols)) != CP_OK) return st;
        if (!o->time_sorted) n = cp_cold_rows_count(o->rows);
        uint64_t examined = 0;
        for (size_t i = i0; i < n; i++) {
            if (sub->max_scan && k->info->scanned + examined >= sub->max_scan) {
                k->info->scanned += examined;
                k->info->partial = 1;
                cp_cold_rows_release(o->rows);
                return 1;
            }
            cp_call c;
            examined++;
            if (sub->nneedles && !cp_cold_rows_contains(o->rows, i, sub->needles, sub->nneedles)) continue;
            if ((st = rows_call(tr, o, i, json, &c)) != CP_OK) return st;
            if (!stats_row_ok(k, sub, &c)) continue;
            cp_stats_add_call(k->acc, &c);
            k->info->scanned_calls++;
        }
        k->info->scanned += examined;
        if ((st = stats_progress(k, 0)) != CP_OK) break;
    }
    cp_cold_rows_release(o->rows);
    return st;
}

static int tr_stats_run(cp_reader *base, const cp_call_filter *f, const cp_stats_plan *p, cp_stats *acc,
                        cp_stats_info *info)
{
    tiered_reader *tr = (tiered_reader *)base;
    tr_stats k;
    memset(&k, 0, sizeof k);
    k.tr = tr;
    k.f = f;
    k.p = p;
    k.acc = acc;
    k.info = info;
    if (f->method_substr) {
        size_t n = strlen(f->method_substr);
        if (cp_rd_fold_into(&tr->needle, f->method_substr, n) != CP_OK) return tr_oom(tr);
        k.needle = (const char *)tr->needle.data;
        k.needle_len = n;
    }
    /* 1. the hot tier and the cold listing, in one snapshot */
    tr_files calls, rollups;
    memset(&calls, 0, sizeof calls);
    memset(&rollups, 0, sizeof rollups);
    rollups.type = "rollup";
    calls.scope = rollups.scope = f;
    cp_reader *hot = tr->hot;
    int snap = hot->ops->snapshot != NULL;
    int st = CP_OK;
    /* a window compacted (dropped) under the snapshot: again with a new one (PostgreSQL) */
    for (int attempt = 0; attempt < 4; attempt++) {
        st = snap ? hot->ops->snapshot(hot, 1) : CP_OK;
        if (st != CP_OK) return tr_hot_fail(tr, st);
        if (hot->ops->stats) st = hot->ops->stats(hot, f, p, acc, info);
        else st = CP_EINVAL, snprintf(tr->err, sizeof tr->err, "the hot reader has no stats");
        if (st != CP_AGAIN || !snap) break;
        hot->ops->snapshot(hot, 0);
        cp_stats_clear(acc);
        memset(info, 0, sizeof *info);
    }
    if (st == CP_AGAIN) st = CP_EIO; /* compactions kept winning the race: an error, with its reason */
    if (st < 0 && hot->ops->stats) tr_hot_fail(tr, st);
    cp_cold_query q;
    memset(&q, 0, sizeof q);
    q.from_ms = f->from_ms;
    q.to_ms = f->to_ms;
    q.ns = f->ns;
    q.min_duration_ms = f->min_duration_ms;
    q.max_duration_ms = f->max_duration_ms;
    if (st == CP_OK) st = list_files(tr, &q, &calls);
    q.file_type = "rollup";
    if (st == CP_OK && p->rollups) st = list_files(tr, &q, &rollups);
    if (snap) hot->ops->snapshot(hot, 0);
    if (st == CP_AGAIN) { /* the listing under the snapshot raced a compaction too */
        snprintf(tr->err, sizeof tr->err, "the cold listing raced a compaction: try again");
        st = CP_EIO;
    }
    if (st == CP_OK && (calls.truncated || rollups.truncated)) info->partial = 1;
    /* 2. the cold tier */
    k.prog.windows_done = k.prog.windows_total = info->windows;
    k.prog.files_total = calls.n + rollups.n;
    if (st == CP_OK && p->rollups) st = stats_rollups(&k, &rollups, &calls);
    k.prog.files_done = rollups.n;
    for (size_t i = 0; st == CP_OK && i < calls.n && !info->partial; i++) {
        k.cur = &calls.v[i];
        int r = cp_stats_scans(f, p, calls.v[i].covered, stats_scan, &k);
        if (r < 0) st = r;
        k.prog.files_done++;
        if (st == CP_OK) st = stats_progress(&k, 0);
    }
    files_free(&calls);
    files_free(&rollups);
    return st;
}

/* ---- get -------------------------------------------------------------------------------------- */

typedef struct tr_get {
    const cp_call_ref *ref;
    int with_trace;
    cp_call_fn fn;
    void *ud;
    int found;
    int ret;                            /* fn's return */
} tr_get;

/* Looks for the call in one row group. */
/* fn(tr, o, rg, ud) on the row groups of file t in order until *stop is set. A damaged
 * local copy is fetched again once and the row group read again (as in search_file); a
 * file gone from the store holds no call. */
typedef int (*rg_fn)(tiered_reader *tr, tr_open *o, size_t rg, void *ud);

static int each_row_group(tiered_reader *tr, const tr_file *t, rg_fn fn, void *ud, const int *stop)
{
    tr_open *o;
    int st = file_open(tr, t->key, &o);
    if (st == CP_ENOTFOUND) return CP_OK;
    if (st != CP_OK) return st;
    size_t nrg = cp_pq_reader_row_groups(o->pq);
    int retried = 0;
    for (size_t rg = 0; rg < nrg && !*stop; rg++) {
        st = fn(tr, o, rg, ud);
        if (st == CP_ECORRUPT && tr->cache_dir && !retried && !*stop) {
            retried = 1;
            st = reopen_damaged(tr, t, nrg, &o);
            if (st == CP_ENOTFOUND) return CP_OK;
            if (st != CP_OK) return st;
            rg--; /* unsigned wrap-around at 0 is defined: the loop's ++ brings it back */
            continue;
        }
        if (st != CP_OK) return st;
    }
    cp_cold_rows_release(o->rows);
    return CP_OK;
}

static int get_rg(tiered_reader *tr, tr_open *o, size_t rg, void *ud)
{
    tr_get *g = ud;
    const cp_call_ref *ref = g->ref;
    int64_t lo, hi;
    if (stats_int(o->rows, o->pq, rg, CP_COLD_C_TIME, &lo, &hi) && (ref->ts_ms < lo || ref->ts_ms > hi)) return CP_OK;
    int st = rows_read(tr, o, rg, CP_COLD_COL(CP_COLD_C_TIME));
    if (st != CP_OK) return st;
    size_t n = cp_cold_rows_count(o->rows);
    uint32_t keycols = CP_COLD_COL(CP_COLD_C_TIME) | CP_COLD_COL(CP_COLD_C_RESTART) |
                       CP_COLD_COL(CP_COLD_C_TRACE_INDEX) | CP_COLD_COL(CP_COLD_C_NAMESPACE) |
                       CP_COLD_COL(CP_COLD_C_POD);
    int keys = 0;
    for (size_t i = 0; i < n; i++) {
        cp_call c;
        if ((st = rows_call(tr, o, i, 0, &c)) != CP_OK) return st;
        if (c.ts_ms != ref->ts_ms) continue;
        if (!keys) { /* a row of that time: now the identity columns */
            if ((st = rows_read(tr, o, rg, keycols)) != CP_OK) return st;
            keys = 1;
            if ((st = rows_call(tr, o, i, 0, &c)) != CP_OK) return st;
        }
        if (c.restart_ms != ref->restart_ms || c.trace_file_index != ref->trace_file_index ||
            c.buffer_offset != ref->buffer_offset || c.record_index != ref->record_index ||
            cp_pod_hash(c.ns, c.ns_len, c.pod, c.pod_len) != ref->pod_hash)
            continue;
        uint32_t all = CP_COLD_COLS_ALL;
        if (!g->with_trace) all &= ~CP_COLD_COL(CP_COLD_C_TRACE);
        if ((st = rows_read(tr, o, rg, all)) != CP_OK) return st;
        if ((st = rows_call(tr, o, i, 1, &c)) != CP_OK) return st;
        if (!g->with_trace) c.trace = NULL, c.trace_len = 0;
        g->found = 1;
        g->ret = g->fn(g->ud, &c);
        return CP_OK;
    }
    return CP_OK;
}

static int get_file(tiered_reader *tr, const tr_file *t, tr_get *g)
{
    return each_row_group(tr, t, get_rg, g, &g->found);
}

static int tr_get_call(cp_reader *base, const cp_call_ref *ref, int with_trace, cp_call_fn fn, void *ud)
{
    tiered_reader *tr = (tiered_reader *)base;
    int st = cp_reader_get(tr->hot, ref, with_trace, fn, ud);
    if (st != CP_ENOTFOUND) {
        if (st < 0) tr_hot_fail(tr, st);
        return st;
    }
    if (ref->ts_ms == INT64_MAX) {
        snprintf(tr->err, sizeof tr->err, "no such call");
        return CP_ENOTFOUND;
    }
    cp_cold_query q;
    memset(&q, 0, sizeof q);
    q.from_ms = ref->ts_ms;
    q.to_ms = ref->ts_ms + 1;
    q.max_duration_ms = INT64_MAX;
    tr_files fl;
    memset(&fl, 0, sizeof fl);
    st = list_files(tr, &q, &fl);
    tr_get g = {ref, with_trace, fn, ud, 0, 0};
    for (size_t i = 0; st == CP_OK && !g.found && i < fl.n; i++) {
        if (file_misses_time(&fl.v[i], q.from_ms, q.to_ms)) continue;
        st = get_file(tr, &fl.v[i], &g);
    }
    files_free(&fl);
    if (st != CP_OK) return st;
    if (!g.found) {
        snprintf(tr->err, sizeof tr->err, "no such call");
        return CP_ENOTFOUND;
    }
    return g.ret;
}

/* ---- many calls by ref (an aggregate profile) ------------------------------------------------ */

/* Cold calls are read file by file and row group by row group: each row group whose time
 * range holds wanted refs has its time column read once, its identity columns and then
 * all columns at most once (each only when needed), whatever the number of refs in it. (One call at a time reads a
 * whole row group per call: 100 000 calls from one file were ~15 minutes.) Refs no file has
 * are asked of the hot tier one by one, as get does. */

typedef struct tr_many {
    const cp_call_ref *refs;
    size_t *order;                      /* ref indexes by ts_ms */
    size_t n;
    uint8_t *found;
    int with_trace;
    int (*fn)(void *ud, size_t i, const cp_call *c);
    void *ud;
    int stopped;                        /* fn asked to stop */
} tr_many;

static int by_ts(const void *a, const void *b, void *ud)
{
    const cp_call_ref *refs = ud;
    int64_t x = refs[*(const size_t *)a].ts_ms, y = refs[*(const size_t *)b].ts_ms;
    return x < y ? -1 : x > y;
}

/* The first position in m->order whose ref's ts_ms >= ts. */
static size_t many_lower(const tr_many *m, int64_t ts)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->refs[m->order[mid]].ts_ms < ts) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static int ref_is(const cp_call_ref *ref, const cp_call *c)
{
    return c->restart_ms == ref->restart_ms && c->trace_file_index == ref->trace_file_index &&
           c->buffer_offset == ref->buffer_offset && c->record_index == ref->record_index &&
           cp_pod_hash(c->ns, c->ns_len, c->pod, c->pod_len) == ref->pod_hash;
}

/* Whether an unfound ref has a time in [lo, hi]. */
static int many_wants(const tr_many *m, int64_t lo, int64_t hi)
{
    for (size_t k = many_lower(m, lo); k < m->n && m->refs[m->order[k]].ts_ms <= hi; k++)
        if (!m->found[m->order[k]]) return 1;
    return 0;
}

/* The ref a row of the identity columns is (m->order position), or SIZE_MAX. */
static size_t many_match(const tr_many *m, const cp_call *c)
{
    for (size_t k = many_lower(m, c->ts_ms); k < m->n && m->refs[m->order[k]].ts_ms == c->ts_ms; k++) {
        size_t i = m->order[k];
        if (!m->found[i] && ref_is(&m->refs[i], c)) return i;
    }
    return SIZE_MAX;
}

/* Like get_rg for many refs: the time column, then the identity columns of the row group
 * only if a row has a wanted time, then every column only if a row is a wanted call. */
static int many_rg(tiered_reader *tr, tr_open *o, size_t rg, void *ud)
{
    tr_many *m = ud;
    int64_t lo, hi;
    if (stats_int(o->rows, o->pq, rg, CP_COLD_C_TIME, &lo, &hi) && !many_wants(m, lo, hi)) return CP_OK;
    int st = rows_read(tr, o, rg, CP_COLD_COL(CP_COLD_C_TIME));
    if (st != CP_OK) return st;
    size_t nrows = cp_cold_rows_count(o->rows), cap = 0;
    size_t *hits = NULL, nhits = 0;     /* rows of wanted calls */
    int keys = 0;
    uint32_t keycols = CP_COLD_COL(CP_COLD_C_TIME) | CP_COLD_COL(CP_COLD_C_RESTART) |
                       CP_COLD_COL(CP_COLD_C_TRACE_INDEX) | CP_COLD_COL(CP_COLD_C_NAMESPACE) |
                       CP_COLD_COL(CP_COLD_C_POD);
    for (size_t i = 0; i < nrows; i++) {
        cp_call c;
        if ((st = rows_call(tr, o, i, 0, &c)) != CP_OK) break;
        if (!many_wants(m, c.ts_ms, c.ts_ms)) continue;
        if (!keys) { /* a row of a wanted time: now the identity columns */
            if ((st = rows_read(tr, o, rg, keycols)) != CP_OK) break;
            keys = 1;
            if ((st = rows_call(tr, o, i, 0, &c)) != CP_OK) break;
        }
        if (many_match(m, &c) == SIZE_MAX) continue;
        if (cp_grow((void **)&hits, &cap, nhits + 1, sizeof *hits, 64) != CP_OK) {
            st = tr_oom(tr);
            break;
        }
        hits[nhits++] = i;
    }
    if (st == CP_OK && nhits) {
        uint32_t cols = CP_COLD_COLS_ALL;
        if (!m->with_trace) cols &= ~CP_COLD_COL(CP_COLD_C_TRACE);
        st = rows_read(tr, o, rg, cols);
        for (size_t h = 0; st == CP_OK && h < nhits && !m->stopped; h++) {
            cp_call c;
            if ((st = rows_call(tr, o, hits[h], 1, &c)) != CP_OK) break;
            size_t i = many_match(m, &c);
            if (i == SIZE_MAX) continue; /* a duplicate row of one call: reported once */
            m->found[i] = 1;
            if (!m->with_trace) c.trace = NULL, c.trace_len = 0;
            if (m->fn(m->ud, i, &c)) m->stopped = 1;
        }
    }
    free(hits);
    return st;
}

static int many_file(tiered_reader *tr, const tr_file *t, tr_many *m)
{
    return each_row_group(tr, t, many_rg, m, &m->stopped);
}

/* The hot fallback copies the call and reports it after the hot reader's get returned:
 * the report opens the trace and asks the same reader for dictionary words, which must
 * not run inside its get (PostgreSQL: one transaction at a time). */
typedef struct one_hot {
    cp_call call;
    cp_buf mem;
    int found, status;
} one_hot;

static int many_hot_copy(void *ud, const cp_call *c)
{
    one_hot *x = ud;
    x->found = 1;
    x->status = cp_call_copy(c, &x->call, &x->mem);
    return x->status != CP_OK;
}

static int tr_get_many(cp_reader *base, const cp_call_ref *refs, size_t n, int with_trace,
                       int (*fn)(void *ud, size_t i, const cp_call *c), void *ud)
{
    tiered_reader *tr = (tiered_reader *)base;
    if (!n) return CP_OK;
    tr_many m = {refs, malloc(n * sizeof(size_t)), n, calloc(n, 1), with_trace, fn, ud, 0};
    if (!m.order || !m.found) {
        free(m.order);
        free(m.found);
        return tr_oom(tr);
    }
    size_t known = 0;                   /* refs with a time (ts_ms INT64_MAX: unknown) */
    for (size_t i = 0; i < n; i++)
        if (refs[i].ts_ms != INT64_MAX) m.order[known++] = i;
    m.n = known;
    qsort_r(m.order, m.n, sizeof *m.order, by_ts, (void *)refs);
    int st = CP_OK;
    if (m.n) {
        cp_cold_query q;
        memset(&q, 0, sizeof q);
        q.from_ms = refs[m.order[0]].ts_ms;
        q.to_ms = refs[m.order[m.n - 1]].ts_ms + 1;
        q.max_duration_ms = INT64_MAX;
        tr_files fl;
        memset(&fl, 0, sizeof fl);
        st = list_files(tr, &q, &fl);
        for (size_t i = 0; st == CP_OK && !m.stopped && i < fl.n; i++) {
            const tr_file *t = &fl.v[i];
            if (file_misses_time(t, q.from_ms, q.to_ms)) continue;
            if ((t->min_ts || t->max_ts) && t->min_ts <= t->max_ts && !many_wants(&m, t->min_ts, t->max_ts)) continue;
            st = many_file(tr, t, &m);
        }
        files_free(&fl);
    }
    /* the rest from the hot tier (and whatever a truncated file list left out), one by one */
    one_hot x;
    memset(&x, 0, sizeof x);
    cp_buf_init(&x.mem);
    for (size_t i = 0; st == CP_OK && !m.stopped && i < n; i++) {
        if (m.found[i]) continue;
        x.found = 0;
        x.status = CP_OK;
        cp_buf_reset(&x.mem);
        int g = tr_get_call(base, &refs[i], with_trace, many_hot_copy, &x);
        if (x.status != CP_OK) st = x.status;
        else if (g < 0 && g != CP_ENOTFOUND) st = g;
        else if (x.found) {
            m.found[i] = 1;
            if (m.fn(m.ud, i, &x.call)) m.stopped = 1;
        }
    }
    cp_buf_free(&x.mem);
    free(m.order);
    free(m.found);
    if (st != CP_OK) return st;
    return m.stopped ? CP_EABORT : CP_OK;
}

/* ---- pass-through ----------------------------------------------------------------------------- */

static int tr_pods(cp_reader *base, int64_t from_ms, int64_t to_ms, cp_pod_fn fn, void *ud)
{
    tiered_reader *tr = (tiered_reader *)base;
    int st = cp_reader_pods(tr->hot, from_ms, to_ms, fn, ud);
    return st < 0 ? tr_hot_fail(tr, st) : st;
}

static int tr_words(cp_reader *base, const char *ns, const char *pod, int64_t restart_ms, const int32_t *ids, size_t n,
                    int (*fn)(void *ud, int32_t id, const char *text, size_t len), void *ud)
{
    tiered_reader *tr = (tiered_reader *)base;
    int st = cp_reader_words(tr->hot, ns, pod, restart_ms, ids, n, fn, ud);
    return st < 0 ? tr_hot_fail(tr, st) : st;
}

static int tr_cold_files(cp_reader *base, const cp_cold_query *q, cp_cold_file_fn fn, void *ud, size_t *skipped)
{
    tiered_reader *tr = (tiered_reader *)base;
    int st = cp_reader_cold_files(tr->hot, q, fn, ud, skipped);
    return st < 0 ? tr_hot_fail(tr, st) : st;
}

static int tr_bounds(cp_reader *base, int64_t *min_ts, int64_t *max_ts)
{
    tiered_reader *tr = (tiered_reader *)base;
    int st = cp_reader_bounds(tr->hot, min_ts, max_ts);
    return st < 0 ? tr_hot_fail(tr, st) : st;
}

static const char *tr_errmsg(const cp_reader *base) { return ((const tiered_reader *)base)->err; }

static void tr_close(cp_reader *base)
{
    tiered_reader *tr = (tiered_reader *)base;
    for (size_t i = 0; i < tr->nopen; i++) open_free(tr->open[i]);
    cp_reader_close(tr->hot);
    cp_buf_free(&tr->needle);
    cp_buf_free(&tr->path);
    free(tr->ra);
    free(tr->cache_dir);
    free(tr);
}

static const cp_reader_ops tiered_ops = {
    .search = tr_search_calls,
    .get_many = tr_get_many,
    .get = tr_get_call,
    .pods = tr_pods,
    .words = tr_words,
    .cold_files = tr_cold_files,
    .bounds = tr_bounds,
    .stats = tr_stats_run,
    .errmsg = tr_errmsg,
    .close = tr_close,
};

int cp_reader_open_tiered(cp_reader *hot, const cp_tiered_config *cfg, cp_reader **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!hot || !cfg || !cfg->store || !hot->ops->cold_files) {
        snprintf(err, errlen, "tiered reader: a hot reader that lists cold files and a store are required");
        cp_reader_close(hot);
        return CP_EINVAL;
    }
    tiered_reader *tr = calloc(1, sizeof *tr);
    if (!tr) {
        snprintf(err, errlen, "out of memory");
        cp_reader_close(hot);
        return CP_ENOMEM;
    }
    tr->base.ops = &tiered_ops;
    tr->hot = hot;
    tr->store = cfg->store;
    tr->cache_bytes = cfg->cache_bytes ? cfg->cache_bytes : TR_DEFAULT_CACHE_BYTES;
    cp_buf_init(&tr->needle);
    cp_buf_init(&tr->path);
    if (cfg->cache_dir) {
        tr->cache_dir = strdup(cfg->cache_dir);
        if (!tr->cache_dir) {
            snprintf(err, errlen, "out of memory");
            tr_close(&tr->base);
            return CP_ENOMEM;
        }
        size_t n = strlen(tr->cache_dir);
        while (n > 1 && tr->cache_dir[n - 1] == '/') tr->cache_dir[--n] = 0;
        if (cp_mkdirs(tr->cache_dir, 0700) != CP_OK) {
            snprintf(err, errlen, "cache directory %s: %s", tr->cache_dir, strerror(errno));
            tr_close(&tr->base);
            return CP_EIO;
        }
    }
    *out = &tr->base;
    return CP_OK;
}
