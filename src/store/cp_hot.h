/* cp_hot.h -- reading calls back: the query side of the catalog (storage.md "Hot tier").
 *
 * A cp_reader is a read-only connection to the catalog, used by one thread at a time
 * (the HTTP server keeps a small pool). It sees every call the writer (cp_catalog, on
 * the loop thread) has committed. SQLite: WAL readers never block the writer.
 *
 * Calls are stored in window tables (calls_YYYYMMDD_HHMM, the trace blob in the row,
 * one table per window, default 5 minutes, listed in `inventory`). A search runs one ordered
 * query per window that overlaps [from, to) and merges them, so a page costs about
 * `limit` rows per window when the sort column is indexed (ts_ms, duration_ms).
 */
#ifndef CP_HOT_H
#define CP_HOT_H

#include "common/cp_common.h"
#include "model/cp_model.h"

#include <stdint.h>
#include <string.h>

/* A name with its length (not NUL-terminated). */
typedef struct cp_name {
    const char *p;
    size_t len;
} cp_name;

/* Byte order, a prefix first (the order of cp_call_filter.ns_in). */
static inline int cp_name_cmp(const cp_name *a, const cp_name *b)
{
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->p, b->p, n) : 0;
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

/* 1 if (p, len) is one of v[0..n) (sorted by cp_name_cmp). */
static inline int cp_name_in(const cp_name *v, size_t n, const char *p, size_t len)
{
    cp_name k = {p ? p : "", p ? len : 0};
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = cp_name_cmp(&v[mid], &k);
        if (c == 0) return 1;
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

/* What a filter's `match` predicate holds besides the search syntax, spelled out so the
 * stats can be answered from rollups (cp_stats.h): match must still apply all of it. */
typedef struct cp_rollup_sel {
    const cp_name *pods;               /* a pod-name list (any of them), sorted bytewise; NULL = any */
    size_t npods;
    int hide_system;                   /* system calls left out (cp_system_call with the idle list below) */
    int64_t idle_fp;                   /* cp_rollup_idle_fp of that list */
    int opaque;                        /* match does more (a search): rollups cannot answer */
} cp_rollup_sel;

/* Where a long operation is (search, stats): reported between units of work. */
typedef int (*cp_call_fn)(void *ud, const struct cp_call *c);

typedef struct cp_progress {
    size_t files_done, files_total;    /* cold files */
    size_t windows_done, windows_total;/* hot windows */
    uint64_t scanned;                  /* rows examined so far */
    /* a search's best rows so far, in its order (at most its limit): rows(rows_ctx, fn,
     * ud) calls fn for each (NULL: none to show). Valid during the callback only. */
    int (*rows)(void *ctx, cp_call_fn fn, void *ud);
    void *rows_ctx;
} cp_progress;

typedef struct cp_call_filter {
    int64_t from_ms, to_ms;            /* ts_ms in [from, to) */
    const char *ns, *service, *pod;    /* exact names; NULL = any */
    /* The namespaces the asker may see (issue 17, http/cp_auth.h): with ns_limited set
     * only calls whose namespace is one of ns_in[0..nns_in) match (sorted bytewise by
     * cp_name_cmp, distinct); ns_limited with nns_in == 0 matches nothing. Every reader
     * applies it (in the SQL, per cold row, to cold files and to rollup entries), on top
     * of ns. 0 = any namespace. */
    int ns_limited;
    const cp_name *ns_in;
    size_t nns_in;
    int64_t min_duration_ms;           /* inclusive; 0 = none */
    int64_t max_duration_ms;           /* inclusive; INT64_MAX = none */
    int errors_only;
    /* Extra predicate (method substring, search syntax); NULL = none. Called from inside
     * the query (SQLite: as an SQL function), so the database applies LIMIT after it. */
    int (*match)(void *ud, const cp_call_view *v);
    void *match_ud;
    const char *method_substr;         /* case-insensitive substring of method; NULL = none */
    cp_sort_col sort;
    int desc;
    const cp_sort_key *after;          /* keyset: rows strictly after this key; NULL = first page */
    size_t limit;                      /* rows wanted (the reader fetches limit + 1 to tell "more") */
    uint64_t max_scan;                 /* rows the database may examine in total; 0 = no cap */
    /* $name=value terms every matching call satisfies (cp_search_required_params), for
     * the tiered reader to skip cold files by the inverted index (cp_cold_query). Only
     * pruning: match must still apply them. NULL / 0 = none. */
    const struct cp_cold_param *params;
    size_t nparams;
    /* match spelled out for the stats rollups; NULL with a match = not answerable */
    const cp_rollup_sel *sel;
    /* A prefilter implied by match (cp_search_needles): a call can match only if one of
     * these lowercase texts occurs in its method, pod, a param name or value. Lets a
     * reader reject most rows without building them. NULL / 0 = none. */
    const cp_name *needles;
    size_t nneedles;
    /* Called between units of work (a hot window, a cold file, every ~64k rows scanned);
     * a non-zero return cancels the operation, which then returns CP_EABORT. NULL = none. */
    int (*progress)(void *ud, const cp_progress *p);
    void *progress_ud;
} cp_call_filter;

/* 1 if a call of namespace (ns, len) passes f's ns_limited set (not its ns). */
static inline int cp_call_filter_ns_ok(const cp_call_filter *f, const char *ns, size_t len)
{
    return !f->ns_limited || cp_name_in(f->ns_in, f->nns_in, ns, len);
}

typedef struct cp_search_stats {
    uint64_t scanned;                  /* rows examined (approximate: rows passed to match) */
    size_t windows;                    /* window tables queried */
    int partial;                       /* max_scan was reached: rows are right, maybe not all */
    int more;                          /* another page exists */
    size_t cold_files;                 /* cold files read (tiered reader) */
    size_t cold_skipped;               /* cold files skipped by the inverted index */
} cp_search_stats;

/* cp_call_fn (above) receives one call; its pointers are valid during the callback only
 * (trace is NULL in search results). Non-zero return stops the scan (returned by the
 * caller). */

/* One pod restart with its call count in a time range (discovery). */
typedef struct cp_pod_row {
    const char *ns, *service, *pod;
    int64_t restart_ms;
    int64_t first_ms, last_ms;         /* pod_restarts.active_since / last_active */
    int64_t calls;                     /* calls with ts_ms in [from, to) */
} cp_pod_row;
typedef int (*cp_pod_fn)(void *ud, const cp_pod_row *p);

/* Which cold files a calls search must read (storage.md "Cold tier"). */
typedef struct cp_cold_param {
    const char *name, *value;          /* a $name=value term (value: case-insensitive substring) */
    size_t name_len, value_len;
} cp_cold_param;

typedef struct cp_cold_query {
    int64_t from_ms, to_ms;            /* files whose [start_ms, end_ms) overlaps [from, to) */
    const char *ns;                    /* NULL = any namespace */
    int64_t min_duration_ms, max_duration_ms;   /* files whose duration range overlaps */
    /* Every term must hold for a call to match. A file is skipped when, for some term,
     * the param is in the file's indexed_params and the inverted index has no value of
     * that param for the file containing the term's value (case-insensitively). */
    const cp_cold_param *params;
    size_t nparams;
    /* "calls" (NULL) or "rollup": which files. Rollup files are not pruned by duration
     * range or params. */
    const char *file_type;
} cp_cold_query;

struct cp_cold_file;
typedef int (*cp_cold_file_fn)(void *ud, const struct cp_cold_file *f);
struct cp_stats;
struct cp_stats_plan;
struct cp_stats_info;

typedef struct cp_reader cp_reader;

typedef struct cp_reader_ops {
    /* Calls matching f in sort order (at most f->limit of them). */
    int (*search)(cp_reader *r, const cp_call_filter *f, cp_call_fn fn, void *ud, cp_search_stats *st);
    /* One call by its ref, with its trace blob if with_trace. CP_ENOTFOUND if absent. */
    int (*get)(cp_reader *r, const cp_call_ref *ref, int with_trace, cp_call_fn fn, void *ud);
    /* Many calls by their refs (an aggregate profile): fn(ud, i, call) for each refs[i]
     * found, in any order; refs not found are not reported. A nonzero fn return stops
     * with CP_EABORT. NULL = not offered: cp_reader_get_many asks get for each. */
    int (*get_many)(cp_reader *r, const cp_call_ref *refs, size_t n, int with_trace,
                    int (*fn)(void *ud, size_t i, const cp_call *c), void *ud);
    /* Pod restarts active in [from, to) with call counts, ordered by namespace, service,
     * pod, restart. */
    int (*pods)(cp_reader *r, int64_t from_ms, int64_t to_ms, cp_pod_fn fn, void *ud);
    /* Dictionary words of one pod restart (the catalog's `dictionary`, pod_id =
     * "<ns>/<pod>"): fn(id, text) for each of ids[0..n) the catalog has. A tree attaches
     * them to blobs (cp_blob_attach_words), which do not carry words. */
    int (*words)(cp_reader *r, const char *ns, const char *pod, int64_t restart_ms, const int32_t *ids, size_t n,
                 int (*fn)(void *ud, int32_t id, const char *text, size_t len), void *ud);
    /* Completed calls files for q (cp_catalog.h cp_cold_file), ordered by start_ms,
     * namespace, duration_range. *skipped (may be NULL) = files left out by the inverted
     * index. The file's strings are valid during the callback only. */
    int (*cold_files)(cp_reader *r, const cp_cold_query *q, cp_cold_file_fn fn, void *ud, size_t *skipped);
    /* Smallest and largest ts_ms of all calls, hot and cold (0, 0 when there are none). */
    int (*bounds)(cp_reader *r, int64_t *min_ts, int64_t *max_ts);
    /* /calls/stats over what the reader holds (cp_stats.h): rollup entries where they
     * exist, the matching calls elsewhere, added to acc. NULL = not offered (cp_stats_run
     * then pages through search). */
    int (*stats)(cp_reader *r, const cp_call_filter *f, const struct cp_stats_plan *p, struct cp_stats *acc,
                 struct cp_stats_info *info);
    /* begin != 0: every operation until snapshot(r, 0) sees one snapshot of the catalog
     * (calls may) nest. NULL = each operation is its own snapshot. */
    int (*snapshot)(cp_reader *r, int begin);
    const char *(*errmsg)(const cp_reader *r);
    void (*close)(cp_reader *r);
} cp_reader_ops;

struct cp_reader {
    const cp_reader_ops *ops;
};

/* Opens a reader on the SQLite catalog at path (which the writer created). */
int cp_reader_open_sqlite(const char *path, cp_reader **out, char *err, size_t errlen);

static inline int cp_reader_search(cp_reader *r, const cp_call_filter *f, cp_call_fn fn, void *ud,
                                   cp_search_stats *st)
{
    return r->ops->search(r, f, fn, ud, st);
}
static inline int cp_reader_get(cp_reader *r, const cp_call_ref *ref, int with_trace, cp_call_fn fn, void *ud)
{
    return r->ops->get(r, ref, with_trace, fn, ud);
}
/* See get_many: fn(ud, i, call) for each refs[i] found, in any order. */
int cp_reader_get_many(cp_reader *r, const cp_call_ref *refs, size_t n, int with_trace,
                       int (*fn)(void *ud, size_t i, const cp_call *c), void *ud);
static inline int cp_reader_pods(cp_reader *r, int64_t from_ms, int64_t to_ms, cp_pod_fn fn, void *ud)
{
    return r->ops->pods(r, from_ms, to_ms, fn, ud);
}
static inline int cp_reader_bounds(cp_reader *r, int64_t *min_ts, int64_t *max_ts)
{
    return r->ops->bounds(r, min_ts, max_ts);
}
static inline int cp_reader_words(cp_reader *r, const char *ns, const char *pod, int64_t restart_ms,
                                  const int32_t *ids, size_t n,
                                  int (*fn)(void *ud, int32_t id, const char *text, size_t len), void *ud)
{
    return r->ops->words(r, ns, pod, restart_ms, ids, n, fn, ud);
}
static inline int cp_reader_cold_files(cp_reader *r, const cp_cold_query *q, cp_cold_file_fn fn, void *ud,
                                       size_t *skipped)
{
    return r->ops->cold_files(r, q, fn, ud, skipped);
}
/* Opens a reader on the PostgreSQL catalog (libpq URI). */
int cp_reader_open_pg(const char *conninfo, cp_reader **out, char *err, size_t errlen);
/* Either, by the catalog spec (cp_catalog_open). */
int cp_reader_open(const char *spec, cp_reader **out, char *err, size_t errlen);

/* ---- one call with its tree (fetch.c) ---------------------------------------------------- */

/* A call fetched by id and kept: the call owns its strings, and its blob is opened with
 * every dictionary word its trace uses (from the blob, else from the catalog). */
typedef struct cp_fetched {
    int found;
    cp_call call;            /* valid while found */
    cp_blob *blob;           /* NULL: the call has no trace (call.trace_reason says why) */
    cp_buf mem;              /* the call's strings and blob bytes */
    cp_buf words;            /* texts of the words looked up */
    cp_blob_word *w;
    size_t nw, capw;
} cp_fetched;

void cp_fetched_init(cp_fetched *f);
void cp_fetched_free(cp_fetched *f);
/* CP_OK (f->found tells whether there is such a call), CP_ECORRUPT for a stored trace
 * that does not decode (err says why), or the reader's failure (cp_reader_errmsg). */
int cp_reader_fetch(cp_reader *r, const cp_call_ref *ref, cp_fetched *f, char *err, size_t errlen);
/* cp_reader_fetch for many refs at once (cold calls are read file by file, not one by one):
 * fn(ud, i, f) for each refs[i] found, in any order, with f as cp_reader_fetch leaves it
 * (valid during the call only). A nonzero fn return stops with CP_EABORT. */
int cp_reader_fetch_many(cp_reader *r, const cp_call_ref *refs, size_t n,
                         int (*fn)(void *ud, size_t i, cp_fetched *f), void *ud, char *err, size_t errlen);

static inline const char *cp_reader_errmsg(const cp_reader *r) { return r->ops->errmsg(r); }
static inline void cp_reader_close(cp_reader *r)
{
    if (r) r->ops->close(r);
}

#endif
