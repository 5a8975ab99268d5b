/* reader_internal.h -- private to src/store: what the SQLite and PostgreSQL readers
 * (reader_sqlite.c, reader_pg.c) share. Implemented in reader_open.c, except the search
 * order and the merge heap (cp_rowkey, cp_idxheap), in rowkey.c, and the cold-file
 * listing itself, in cold_list.c.
 *
 * Mostly the cold-file listing's rules (cp_hot.h cp_reader_ops.cold_files), written once
 * so both catalogs answer alike:
 *   - a calls file of s3_files.duration_range u holds durations in [lower(r), upper(r))
 *     with r = cp_cold_range_of_upper(u) (an unknown u: [0, inf), never left out);
 *   - a file is skipped for a $name=value term when `name` is in its indexed_params
 *     (names compared with ASCII case folding, as the search does) and the term's set
 *     of matching files (from the inverted index) does not hold its uuid.
 */
#ifndef CP_READER_INTERNAL_H
#define CP_READER_INTERNAL_H

#include "store/cp_catalog.h"
#include "store/cp_cold.h"
#include "store/cp_hot.h"
#include "store/cp_stats.h"
#include "store/hot/hot_internal.h"
#include "store/sql/sqldb.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Hot windows a search or stats may span (a guard against a runaway range). */
#define CP_RD_MAX_WINDOWS 8192

/* Cold files listed at most per cold_files call (a guard against a runaway catalog). */
#define CP_RD_MAX_COLD_FILES 1000000

/* Per-pod walks (hot_schema.c's pod index): a time-sorted page filtered by namespace or
 * pod reads a window once per matching pod, when call_counts lists at most this many. */
#define CP_RD_MAX_POD_ARMS 64

static inline int cp_rd_walks_pods(const cp_call_filter *f)
{
    return f->sort == CP_SORT_TS && (f->ns || f->pod);
}

/* A window's call_counts row (ns, pod) against the filter: 1 and *hash = the pod's hash as
 * stored (signed) if the filter takes it. */
static inline int cp_rd_pod_taken(const cp_call_filter *f, const char *ns, size_t nl, const char *pod, size_t pl,
                                  int64_t *hash)
{
    if ((f->ns && strcmp(ns, f->ns)) || (f->pod && strcmp(pod, f->pod))) return 0;
    *hash = (int64_t)cp_pod_hash(ns, nl, pod, pl);
    return 1;
}

/* ASCII case folding, as the search does (bytes >= 0x80 are left alone). */
static inline unsigned char cp_rd_fold(unsigned char c) { return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c; }

/* Appends s[0..n) folded and a NUL to out (which is reset first). */
int cp_rd_fold_into(cp_buf *out, const char *s, size_t n);

/* 1 if the JSON array of strings json[0..len) holds name[0..name_len) (ASCII
 * case-insensitively). 0 if not, or if json is not such an array (then the index cannot
 * prove anything, and nothing is skipped). */
int cp_rd_json_names_has(const char *json, size_t len, const char *name, size_t name_len);

/* The longest value of param `name` (ASCII case-insensitively) in a file's
 * s3_files.indexed_maxlen JSON object ({"request.id":16,...}); -1 when unknown. A term
 * value at least that long can only be contained in a value equal to it, so the index
 * is looked up exactly for such files (their values are stored ASCII-lowercased). */
int64_t cp_rd_json_maxlen(const char *json, const char *name, size_t name_len);

/* 1 if a calls file of this s3_files.duration_range may hold a duration in [min, max]. */
int cp_rd_cold_range_overlaps(int64_t duration_range, int64_t min_ms, int64_t max_ms);

/* A set of strings (file uuids): add, then seal (sorts), then look up. `all`: the set
 * holds every string (a term the catalog cannot look up proves nothing). */
typedef struct cp_rd_strset {
    char **v;
    size_t n, cap;
    int all;
} cp_rd_strset;

int cp_rd_strset_add(cp_rd_strset *s, const char *p, size_t n);
void cp_rd_strset_seal(cp_rd_strset *s);
int cp_rd_strset_has(const cp_rd_strset *s, const char *p);
void cp_rd_strset_free(cp_rd_strset *s);

/* The index rule for one file: 1 when some term (q->params[i], with sets[i] the uuids of
 * the files that have a matching value) rules the file out. */
int cp_rd_cold_pruned(const cp_cold_query *q, const cp_rd_strset *sets, const cp_cold_file *f);

/* ---- operations written once for both readers (cold_list.c, lookups.c) ------------------------ */

/* What a shared operation needs from the reader running it. */
typedef struct cp_rd_ctx {
    cp_sqldb *db;  /* the reader's connection (cp_sqldb_wrap_*), inside its read transaction */
    int *emitted;  /* set to 1 before anything reaches the caller's callback (NULL: not kept) */
    int *retry;    /* set to 1 when a failure may pass in a new snapshot (NULL: not kept) */
    char *err;     /* why it failed */
    size_t errlen;
} cp_rd_ctx;

/* cp_sqldb_exec; a failure of the database (not of fn) is described in x->err as
 * "what: ..." and noted in x->retry. */
int cp_rd_exec(const cp_rd_ctx *x, const char *sql, const cp_sql_val *p, size_t np, cp_sqldb_row_fn fn, void *ud,
               const char *what);
int cp_rd_oom(const cp_rd_ctx *x);

static inline void cp_rd_emit(const cp_rd_ctx *x)
{
    if (x->emitted) *x->emitted = 1;
}

/* cp_reader_ops.cold_files: the term sets of the inverted index first, then the completed
 * files of q's range in order (start_time, namespace, duration_range, uuid; bytewise) to
 * fn, those a term rules out counted in *skipped. has_maxlen: s3_files has
 * indexed_maxlen (SQLite migration 5). */
int cp_rd_cold_list(const cp_rd_ctx *x, const cp_cold_query *q, int has_maxlen, cp_cold_file_fn fn, void *ud,
                    size_t *skipped);

/* The columns a reader reads a call with, in this order, on both databases. */
#define CP_RD_COLUMNS                                                                                          \
    "time, duration, cpu_time, wait_time, memory_used, non_blocking, queue_wait_duration, suspend_duration,"   \
    " calls, transactions, logs_generated, logs_written, file_read, file_written, net_read, net_written,"      \
    " namespace, service_name, pod_name, restart_time, method, method_name, thread, params,"                  \
    " CAST(error AS integer) AS error, trace_file_index, buffer_offset, record_index, pod_hash, trace_reason,"  \
    " CAST(has_sql AS integer) AS has_sql, id"

enum {
    CP_RDC_TIME, CP_RDC_DURATION, CP_RDC_CPU, CP_RDC_WAIT, CP_RDC_MEMORY, CP_RDC_NONBLOCKING, CP_RDC_QUEUE,
    CP_RDC_SUSPEND, CP_RDC_CALLS, CP_RDC_TRANSACTIONS, CP_RDC_LOGS_GENERATED, CP_RDC_LOGS_WRITTEN,
    CP_RDC_FILE_READ, CP_RDC_FILE_WRITTEN, CP_RDC_NET_READ, CP_RDC_NET_WRITTEN, CP_RDC_NS, CP_RDC_SERVICE,
    CP_RDC_POD, CP_RDC_RESTART, CP_RDC_METHOD_ID, CP_RDC_METHOD, CP_RDC_THREAD, CP_RDC_PARAMS, CP_RDC_ERROR,
    CP_RDC_TFI, CP_RDC_BO, CP_RDC_RI, CP_RDC_POD_HASH, CP_RDC_TRACE_REASON, CP_RDC_HAS_SQL, CP_RDC_ID, CP_RDC_COUNT
};

/* What a search sorts by: the SQL expression and its column in CP_RD_COLUMNS. Text
 * columns compare bytewise (PostgreSQL adds COLLATE "C" to the expression). */
typedef struct cp_rd_sort_col {
    const char *expr;
    int col;
} cp_rd_sort_col;

extern const cp_rd_sort_col cp_rd_sort_cols[CP_SORT_COUNT];

/* A row of CP_RD_COLUMNS -> c (its pointers live as long as the row). */
void cp_rd_call_of(const cp_sql_val *cols, cp_call *c);

/* cp_reader_ops.get: the call in the windows whose span holds its time (more than one
 * after a window length change, and late batches), their tables locked on PostgreSQL;
 * CP_ENOTFOUND (err says "no such call") when none has it. */
int cp_rd_get(const cp_rd_ctx *x, const cp_call_ref *ref, int with_trace, cp_call_fn fn, void *ud);

/* PostgreSQL: ACCESS SHARE locks on n tables until the transaction ends, so no compaction
 * drops them meanwhile; taken in name order (every reader takes them in one order). The
 * names are NUL-terminated (at most CP_HOT_NAME_LEN bytes) at names, names + stride, ...:
 * a list of names, or of structs that start with one. Nothing to do on SQLite (its
 * snapshot keeps the tables). */
int cp_rd_lock_tables(const cp_rd_ctx *x, const void *names, size_t n, size_t stride);

/* cp_reader_ops.pods, .words and .bounds (has_cold: the catalog has s3_files). */
int cp_rd_pods(const cp_rd_ctx *x, int64_t from_ms, int64_t to_ms, cp_pod_fn fn, void *ud);
int cp_rd_words(const cp_rd_ctx *x, const char *ns, const char *pod, int64_t restart_ms, const int32_t *ids, size_t n,
                int (*fn)(void *ud, int32_t id, const char *text, size_t len), void *ud);
int cp_rd_bounds(const cp_rd_ctx *x, int has_cold, int64_t *min_ts, int64_t *max_ts);

/* ---- stats over the hot tier (hot_stats.c) ---------------------------------------------------- */

/* A window of the stats: its table, time span, rows, and whether its rollups count. */
typedef struct cp_rd_window {
    char name[CP_HOT_NAME_LEN];
    int64_t start, end, rows;
    int covered;
} cp_rd_window;

/* One run of cp_reader_ops.stats. The reader fills x, f, p, acc, info, scan and ud; the
 * run owns w (free it after). */
typedef struct cp_rd_stats {
    const cp_rd_ctx *x;
    const cp_call_filter *f;
    const cp_stats_plan *p;
    cp_stats *acc;
    cp_stats_info *info;
    cp_rd_window *w;
    size_t nw;
    const cp_rd_window *cur; /* the window being scanned */
    cp_progress prog;
    /* the database's own scan of cur for sub (cp_stats_scans' callback), counting into
     * acc and info: 0 done, 1 the scan budget ran out (info->partial set), < 0 an error */
    int (*scan)(struct cp_rd_stats *k, const cp_call_filter *sub);
    void *ud; /* the reader's state for scan */
} cp_rd_stats;

/* The windows (locked on PostgreSQL), the rollup entries of those that keep them, then per
 * window the scans. has_rollups: the catalog has hot_rollups (SQLite migration 5). */
int cp_rd_stats_run(cp_rd_stats *k, int has_rollups);
/* Reports progress (extra: rows of the running scan not yet in info->scanned);
 * CP_EABORT when the caller cancels. */
int cp_rd_stats_progress(cp_rd_stats *k, uint64_t extra);

/* ---- the search order and the merge heap (rowkey.c) ------------------------------------------ */

/* A row's position in a search's order: the sort column's value (num, or text[0..text_len)
 * for a text column; text need not be NUL-terminated), then the tie-breaks. */
typedef struct cp_rowkey {
    int64_t num;
    const char *text;
    size_t text_len;
    int64_t time, restart, pod_hash, tfi, bo, ri;
} cp_rowkey;

/* <0 if row a comes first, >0 if b does, 0 for the same position. The sort column first,
 * in its direction (desc != 0: descending): text bytewise with a prefix before the longer
 * text (text != 0), else num; then time, restart, pod_hash (signed), trace_file_index,
 * buffer_offset, record_index, all descending. */
int cp_rowkey_cmp(const cp_rowkey *a, const cp_rowkey *b, int text, int desc);

/* A binary heap of indexes (the readers' cursors), the first in less's order on top.
 * v is the caller's array (allocated and freed by it, room for every index pushed); n the
 * count. less(ud, a, b): 1 if index a goes before index b. */
typedef struct cp_idxheap {
    size_t *v;
    size_t n;
    int (*less)(void *ud, size_t a, size_t b);
    void *ud;
} cp_idxheap;

/* Adds index k (v must have room). */
void cp_idxheap_push(cp_idxheap *h, size_t k);

/* Restores the order below position i after the element there moved back (as the top
 * does when its cursor steps to its next row). */
void cp_idxheap_down(cp_idxheap *h, size_t i);

/* Removes the top (n > 0). */
void cp_idxheap_pop(cp_idxheap *h);

/* The top index (n > 0). */
static inline size_t cp_idxheap_top(const cp_idxheap *h) { return h->v[0]; }

#endif
