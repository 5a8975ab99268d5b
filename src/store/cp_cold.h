/* cp_cold.h -- the cold tier: Parquet objects of compacted calls (storage.md "Cold tier").
 *
 *   names      duration ranges (seed 004 Appendix A), object keys, inverted-index tables
 *   schemas    the calls and dumps Parquet schemas and the cp_call <-> row mapping
 *   compactor  closed hot windows -> Parquet -> object store -> catalog (compact.c)
 *   retention  old objects and rows -> to_delete -> deleted (retention.c)
 *   tiered     a cp_reader that answers from the hot tier and the cold files alike
 *
 * Object layout: <YYYY>/<MM>/<DD>/<HH>/<namespace>/cloud_profiler_<range>.parquet, the
 * hour of the claim's windows (UTC); a claim that does not start the hour (a late batch,
 * or a window closed early by `compact --until`) adds its key: cloud_profiler_10ms.
 * 20260102_1305_1.parquet. Namespaces that are not plain [A-Za-z0-9._-] names are
 * written "x-<hex>" so every key is safe in a path and a URL.
 */
#ifndef CP_COLD_H
#define CP_COLD_H

#include "common/cp_common.h"
#include "model/cp_model.h"
#include "parquet/cp_parquet.h"
#include "query/cp_rollup.h"
#include "store/cp_catalog.h"
#include "store/cp_hot.h"
#include "store/cp_ostore.h"

#include <stdint.h>

/* ---- names ------------------------------------------------------------------------------ */

#define CP_COLD_RANGES 8
/* Range index 0..7 of a duration: [0,1) [1,10) [10,100) [100,1000) [1000,5000)
 * [5000,30000) [30000,90000) [90000,inf) ms. */
int cp_cold_range_of(int64_t duration_ms);
int64_t cp_cold_range_lower(int range);          /* inclusive, ms */
int32_t cp_cold_range_upper(int range);          /* exclusive, ms; INT32_MAX for the last: s3_files.duration_range */
const char *cp_cold_range_name(int range);       /* "0ms", "1ms", ..., "90s" */
/* Range index of an s3_files.duration_range value, -1 if it is none of the above. */
int cp_cold_range_of_upper(int64_t upper);

/* The object key of a calls file (see above). claim: the claim key ("20260102_1300"). */
int cp_cold_calls_key(int64_t hour_ms, const char *ns, size_t ns_len, int range, const char *claim, cp_buf *out);
/* A namespace as a key component. */
int cp_cold_ns_component(const char *ns, size_t ns_len, cp_buf *out);

/* Inverted-index table of a param: "inv_" + up to 32 characters of the name lowercased
 * ([a-z0-9], others '_') + "_" + 8 hex digits of the name's FNV-1a 32: unique per name,
 * safe to splice into SQL, the same in SQLite and PostgreSQL. */
#define CP_COLD_INV_NAME 48
void cp_cold_inv_table(const char *param, size_t len, char out[CP_COLD_INV_NAME]);
/* 1 if name has the form cp_cold_inv_table makes ("inv_" then [a-z0-9_]): names read back
 * from inverted_indexes are spliced into SQL only then. */
int cp_cold_inv_name_ok(const char *name);

/* ---- schemas ---------------------------------------------------------------------------- */

/* Calls: the seed's CallParquet columns in snake_case, then what the API needs that the
 * seed's table lacks (thread, method_id, trace_reason):
 *   time ts, cpu_time i64, wait_time i64, memory_used i64, duration i32, non_blocking i64,
 *   queue_wait_duration i32, suspend_duration i32, calls i32, transactions u64,
 *   logs_generated i32, logs_written i32, file_read u64, file_written u64, net_read u64,
 *   net_written u64, namespace str, service_name str, pod_name str, restart_time ts,
 *   method str, params map<str, list<str>>, trace_index str
 *   ("<trace_file_index>_<buffer_offset>_<record_index>"), trace binary (null when the
 *   call has none), thread str, method_id i32, trace_reason str (null with a trace),
 *   has_sql bool (the `sql` tag: the trace references a value of the sql stream). */
enum {
    CP_COLD_C_TIME, CP_COLD_C_CPU, CP_COLD_C_WAIT, CP_COLD_C_MEMORY, CP_COLD_C_DURATION, CP_COLD_C_NONBLOCKING,
    CP_COLD_C_QUEUE, CP_COLD_C_SUSPEND, CP_COLD_C_CALLS, CP_COLD_C_TRANSACTIONS, CP_COLD_C_LOGS_GENERATED,
    CP_COLD_C_LOGS_WRITTEN, CP_COLD_C_FILE_READ, CP_COLD_C_FILE_WRITTEN, CP_COLD_C_NET_READ, CP_COLD_C_NET_WRITTEN,
    CP_COLD_C_NAMESPACE, CP_COLD_C_SERVICE, CP_COLD_C_POD, CP_COLD_C_RESTART, CP_COLD_C_METHOD, CP_COLD_C_PARAMS,
    CP_COLD_C_TRACE_INDEX, CP_COLD_C_TRACE, CP_COLD_C_THREAD, CP_COLD_C_METHOD_ID, CP_COLD_C_TRACE_REASON,
    CP_COLD_C_HAS_SQL, CP_COLD_C_COUNT
};
extern const cp_pq_column cp_cold_calls_schema[CP_COLD_C_COUNT];

/* Dumps: the seed's DumpParquet columns: time ts, namespace, service_name, pod_name str,
 * restart_time ts, pod_type, dump_type str, bytes_size i64, params map<str, str>,
 * binary_data binary. */
enum {
    CP_COLD_D_TIME, CP_COLD_D_NAMESPACE, CP_COLD_D_SERVICE, CP_COLD_D_POD, CP_COLD_D_RESTART, CP_COLD_D_POD_TYPE,
    CP_COLD_D_DUMP_TYPE, CP_COLD_D_BYTES, CP_COLD_D_PARAMS, CP_COLD_D_BINARY, CP_COLD_D_COUNT
};
extern const cp_pq_column cp_cold_dumps_schema[CP_COLD_D_COUNT];

/* cp_call -> one row of cp_cold_calls_schema. Owns the scratch the row points into
 * (params parsed out of params_json); the row is valid until the next call or free. */
typedef struct cp_cold_rowbuf cp_cold_rowbuf;
int cp_cold_rowbuf_new(cp_cold_rowbuf **out);
void cp_cold_rowbuf_free(cp_cold_rowbuf *rb);
int cp_cold_call_row(cp_cold_rowbuf *rb, const cp_call *c, cp_pq_value row[CP_COLD_C_COUNT]);

/* ---- rollup files ------------------------------------------------------------------------- *
 *
 * Beside its calls files, a claim writes one rollup file per namespace
 * (<hour>/<namespace>/cloud_profiler_rollup[.<claim>].parquet): the cp_rollup_entry rows
 * of its calls (query/cp_rollup.h), sorted by cell, namespace, service, pod, class, flags
 * (a key may repeat: entries are additive). The key/value metadata says which cell
 * length, classes and idle-list fingerprint the entries were made with; a reader that
 * does not know them reads the calls instead. */
enum {
    CP_COLD_R_CELL, CP_COLD_R_NAMESPACE, CP_COLD_R_SERVICE, CP_COLD_R_POD, CP_COLD_R_CLASS, CP_COLD_R_FLAGS,
    CP_COLD_R_COUNT_CALLS, CP_COLD_R_SUM_DURATION, CP_COLD_R_SUM_SUSPEND, CP_COLD_R_SUM_QUEUE,
    CP_COLD_R_SUM_TRANSACTIONS, CP_COLD_R_MAX_TIME, CP_COLD_R_MAX_DURATION, CP_COLD_R_MAX_CALLS,
    CP_COLD_R_MAX_RESTART, CP_COLD_R_MAX_TFI, CP_COLD_R_MAX_BO, CP_COLD_R_MAX_RI, CP_COLD_R_COUNT
};
extern const cp_pq_column cp_cold_rollup_schema[CP_COLD_R_COUNT];

#define CP_COLD_KV_ORDER "cloudprof.calls.order"     /* calls files: "time" = the layout below */
#define CP_COLD_ORDER_TIME "time"
#define CP_COLD_KV_ROLLUP "cloudprof.rollup"         /* rollup files: CP_COLD_ROLLUP_FORMAT */
#define CP_COLD_KV_IDLE_FP "cloudprof.rollup.idle_fp" /* decimal cp_rollup_idle_fp */
/* cell length and class bounds, so a change of either is never misread */
#define CP_COLD_ROLLUP_FORMAT "1;cell=10000;classes=0,1,10,100,500,1000,3000,5000,30000,90000"

/* The object key of a claim's rollup file of a namespace. */
int cp_cold_rollup_key(int64_t hour_ms, const char *ns, size_t ns_len, const char *claim, cp_buf *out);

/* One entry -> one row of cp_cold_rollup_schema (the row points into e). */
void cp_cold_rollup_row(const cp_rollup_entry *e, cp_pq_value row[CP_COLD_R_COUNT]);

/* ---- the cold writer (cold_writer.c) ---------------------------------------------------------
 *
 * Calls -> local Parquet files, the compactor's step 3 (and bench/cold_query's). Calls
 * must come ordered by namespace, duration range (cp_cold_range_of), then time, restart,
 * pod_hash (signed), trace_file_index, buffer_offset, record_index: the writer checks it,
 * because every calls file says in its metadata (CP_COLD_KV_ORDER = "time") that its rows
 * are in that order, and readers rely on it to read only the end of a file they need
 * (ARCHITECTURE.md "Cold file layout"). One calls file per namespace x range, one rollup
 * file per namespace; the distinct values of the indexed params are collected per calls
 * file (a param with more than a million values in a file is left out of that file's
 * indexed_params). */

#define CP_COLD_ROW_GROUP_ROWS 8192    /* calls files: rows per row group and per page */

enum { CP_COLD_FILE_CALLS = 1, CP_COLD_FILE_ROLLUP = 2 };

typedef struct cp_cold_writer_config {
    const char *dir;                     /* where the files go (exists) */
    int64_t hour_ms;                     /* the claim's hour (object keys) */
    const char *claim;                   /* the claim key */
    const cp_pq_writer_opts *pq;         /* calls files; NULL = CP_COLD_ROW_GROUP_ROWS rows per group */
    const char *const *index_params;     /* names of the params to index */
    size_t nindex;
    const char *const *idle;             /* idle list of the rollups' system flag */
    size_t nidle;
    int64_t idle_fp;                     /* cp_rollup_idle_fp(idle, nidle) */
    size_t rollup_max_entries;           /* entries held before a batch is written (0 = 1 << 20) */
    volatile int *stop;                  /* non-zero: add fails with CP_EABORT */
} cp_cold_writer_config;

typedef struct cp_cold_output {
    int type;                            /* CP_COLD_FILE_* */
    const char *path;                    /* the local file */
    const char *key;                     /* its object key (= s3_files uuid) */
    const char *ns;
    size_t ns_len;
    int range;                           /* calls: cp_cold_range_of; rollup: -1 */
    int64_t rows, size, min_ts, max_ts;  /* rollup: cells */
    const char *services;                /* JSON array of the service names (calls) */
    const char *indexed;                 /* JSON array of the params indexed (calls; rollup "[]") */
    const char *indexed_maxlen;          /* JSON object: indexed param -> longest value (calls) */
} cp_cold_output;

typedef struct cp_cold_writer cp_cold_writer;
int cp_cold_writer_new(const cp_cold_writer_config *cfg, cp_cold_writer **out, char *err, size_t errlen);
/* One call (with its trace). CP_EINVAL when out of order; errors name the call. */
int cp_cold_writer_add(cp_cold_writer *w, const cp_call *c);
/* Closes the last files. */
int cp_cold_writer_finish(cp_cold_writer *w);
size_t cp_cold_writer_count(const cp_cold_writer *w);
/* The i-th file written (valid until free). */
void cp_cold_writer_output(const cp_cold_writer *w, size_t i, cp_cold_output *out);
/* fn(param, value) for every distinct indexed value of calls file i, ASCII-lowercased
 * (the search compares so; values differing only in case are one). */
int cp_cold_writer_index_each(const cp_cold_writer *w, size_t i,
                              int (*fn)(void *ud, const char *param, const char *v, size_t vlen), void *ud);
const char *cp_cold_writer_errmsg(const cp_cold_writer *w);
/* Frees; the local files stay (the caller removes its directory). */
void cp_cold_writer_free(cp_cold_writer *w);

/* ---- compactor ---------------------------------------------------------------------------- */

/* A claim not refreshed for this long is abandoned (another compactor takes it over). A
 * live compactor refreshes it with every file it uploads. */
#define CP_COMPACT_LEASE_MS ((int64_t)30 * 60 * 1000)

typedef struct cp_compact_stats {
    uint64_t claims, windows, calls, files, bytes, index_rows;
    uint64_t taken_over;                 /* claims redone after an earlier run died */
} cp_compact_stats;

/* Test hook: the compactor calls it at each step ("claimed", "written", "uploaded",
 * "indexed", "finished") with the claim; a non-zero return makes the compactor _exit(3)
 * right there (crash-safety tests). NULL in production. */
typedef int (*cp_compact_crash_fn)(void *ud, const char *step, const cp_compact_job *job);

typedef struct cp_compactor_config {
    cp_catalog *cat;                     /* the compactor's own catalog connection */
    cp_ostore *store;
    const char *tmp_dir;                 /* where Parquet files are written before upload */
    const char *node;                    /* claimed_by */
    int64_t lease_ms;                    /* see cp_compact_opts */
    const cp_pq_writer_opts *pq;         /* calls files; NULL = the cold writer's defaults */
    /* the idle-method list of the rollups' system flag (cp_system_call): serve's list,
     * so "hide system calls" is answered from the rollups; NULL = the built-in list */
    const char *const *idle;
    size_t nidle;
    /* progress: one line per file / claim (NULL = quiet) */
    void (*progress)(void *ud, const char *line);
    void *progress_ud;
    cp_compact_crash_fn crash;
    void *crash_ud;
    /* set non-zero (from any thread) to stop between calls: the claim is released */
    volatile int *stop;
} cp_compactor_config;

/* Compacts every eligible claim (windows ending at or before until_ms), one after the
 * other, until none is left or max_claims were done (0 = no limit). */
int cp_compact_run(const cp_compactor_config *cfg, int64_t until_ms, int64_t now_ms, size_t max_claims,
                   cp_compact_stats *st, char *err, size_t errlen);

/* ---- retention ---------------------------------------------------------------------------- */

typedef struct cp_retention_stats {
    int64_t marked, deleted;
} cp_retention_stats;

/* Marks what ended before before_ms and deletes the marked objects and their rows. */
int cp_retention_run(cp_catalog *cat, cp_ostore *store, int64_t before_ms, cp_retention_stats *st, char *err,
                     size_t errlen);

/* ---- the tiered reader ------------------------------------------------------------------------ */

typedef struct cp_tiered_config {
    cp_ostore *store;                    /* shared, thread-safe */
    const char *cache_dir;               /* local copies of remote objects (S3); NULL: read in place */
    uint64_t cache_bytes;                /* cap of the cache directory */
} cp_tiered_config;

/* A cp_reader that answers from `hot` (taking ownership) and the cold files it lists:
 * search merges both in sort order, get looks in the hot tier then in the files of the
 * call's hour, pods/words/bounds pass through.
 *
 * The hot reader must list cold files (ops->cold_files), else CP_EINVAL. cache_dir:
 * set it for remote stores (S3: each object is downloaded once, then read locally);
 * NULL reads objects in place with ranged reads (a directory store). It is created if
 * missing, and may be shared by any number of tiered readers, threads and processes: no
 * lock, no shared object (downloads are renamed into place, the least recently used
 * copies are unlinked above cache_bytes, 0 = 1 GiB; see tiered.c). Like every
 * cp_reader, one tiered reader is used by one thread at a time; close() closes `hot`
 * but not the store. cp_call_filter.params / nparams (the $name=value terms) let the
 * search skip cold files by the inverted index. */
int cp_reader_open_tiered(cp_reader *hot, const cp_tiered_config *cfg, cp_reader **out, char *err, size_t errlen);

/* ---- reading calls files back (cold_rows.c) ----------------------------------------------------
 *
 * The inverse of cp_cold_call_row: a calls row -> cp_call. Strings, the method and the
 * trace point into the row's bytes; params_json is re-created exactly as the hot tier
 * stores it ({"name":["v1","v2"],...} in the map's order, cp_json_str, "name":[] for no
 * values, {} for a null or empty map); error = the params have a "call.red" key (the hot
 * tier's rule, asm.c); the trace index string "<tfi>_<bo>_<ri>" is parsed back. */

/* Columns of a calls file as a bit set. */
#define CP_COLD_COL(c) (1u << (c))
#define CP_COLD_COLS_ALL ((1u << CP_COLD_C_COUNT) - 1u)

/* One full row -> call. json receives params_json (reset first); *out points into row and
 * json. CP_ECORRUPT when the trace index does not parse. */
int cp_cold_call_from_row(const cp_pq_value row[CP_COLD_C_COUNT], cp_buf *json, cp_call *out);

/* A decoder of the row groups of one calls file: columns are found by name (so a file
 * whose columns are in another order reads the same); thread, method_id, trace_reason and
 * has_sql may be absent (files of other writers or older ones: empty, 0, NULL, 0). Any other column
 * of cp_cold_calls_schema missing or of another kind is CP_ECORRUPT. The decoder keeps
 * the pq reader borrowed: free it first. */
typedef struct cp_cold_rows cp_cold_rows;
int cp_cold_rows_open(cp_pq_reader *r, cp_cold_rows **out, char *err, size_t errlen);
void cp_cold_rows_free(cp_cold_rows *d);
/* Frees the decoded row group (the pq reader's arena): an open file that waits for its
 * next use keeps only its footer. */
void cp_cold_rows_release(cp_cold_rows *d);
/* The file's column index of a schema column, -1 when the file lacks it (for
 * cp_pq_reader_stats). */
int cp_cold_rows_column(const cp_cold_rows *d, int col);
/* Decodes the columns of `cols` (CP_COLD_COL bits) of row group rg that are not decoded
 * yet. Moving to another row group resets the pq reader's arena first, so the memory
 * held is one row group's worth of the columns asked for. */
int cp_cold_rows_read(cp_cold_rows *d, size_t rg, uint32_t cols, char *err, size_t errlen);
/* Rows of the row group read last. */
size_t cp_cold_rows_count(const cp_cold_rows *d);
/* The values of an integer column of that row group (NULL unless decoded): direct access
 * for the loops that look at one column of every row (the time of a time-sorted file). */
const int64_t *cp_cold_rows_ints(const cp_cold_rows *d, int col);
/* 1 if one of the lowercase needles occurs (ASCII case-insensitively) in row i's method,
 * pod name, a param name or value -- among the decoded columns (method, pod and params
 * must be). The prefilter of cp_call_filter.needles, without building the row. */
int cp_cold_rows_contains(const cp_cold_rows *d, size_t i, const cp_name *needles, size_t n);
/* Row i of that row group as a call. Columns not decoded are zero / empty / NULL (error
 * is 0 unless params were decoded). params_json is built only when json is non-zero and
 * the params were decoded (else it is "{}"). Valid until the next call or read. */
int cp_cold_rows_call(cp_cold_rows *d, size_t i, int json, cp_call *out);

#endif
