/* cp_dumps.h -- diagnostic files in storage (dumps-http.md §4, §5, §7; storage.md).
 *
 * Where the bytes live (cp_dump_meta.location):
 *   hot    -- files up to inline_max (thread dumps, top, GC logs, pprof): the catalog's
 *             `dumps` row holds them in binary_data, so every node sharing a PostgreSQL
 *             catalog sees them at once;
 *   object -- heap dumps, and any file above inline_max: a separate object in the object
 *             store, `YYYY/MM/DD/HH/<ns>/<pod>/<name>` by directory time (storage.md
 *             "<pod>/<timestamp>.hprof.zip"), never inside Parquet and never in memory;
 *   cold   -- hot files after compaction: one row of a per-type Parquet file
 *             `YYYY/MM/DD/HH/<ns>/profiler-<type>.parquet` (cp_cold_dumps_schema), the
 *             catalog row keeping its metadata, the file's key and the row number.
 *
 * Intake: the body is streamed to a temporary file in tmp_dir (hashed with SHA-256 as it
 * comes), and only a commit makes it visible: fsync, then (hot) one catalog transaction
 * with the blob, or (object) upload of the file, then one catalog transaction. A commit
 * is durable when it returns (SQLite: synchronous=FULL on these connections; PostgreSQL:
 * a committed transaction), so the HTTP layer answers 2xx only after it. An aborted or
 * failed upload leaves nothing: the temp file is removed, no row is written, an object
 * put before a failed transaction is deleted (and one orphaned by a crash is swept: the
 * `dump_pending` table lists objects being put).
 *
 * One row per upload path (namespace, directory time, pod, file name): a PUT to a path
 * that exists replaces the file in place -- same id, version + 1 -- as the active gc.log
 * is re-sent as it grows (dumps-http.md §4.1, §7.1 "gc extras").
 *
 * Pod join (§5): the pod segment as uploaded is kept (pod); restart_pod is the pod restart
 * it attaches to: an exact (namespace, pod_name) in pod_restarts, else for a segment
 * without `_<digits>` the restart of the same namespace whose pod_name starts with
 * "<segment>_" and whose lifetime covers the file time (latest first), else NULL. service
 * is the restart's service when joined, else derived (cp_dump_pod_split).
 *
 * Thread-safe: a cp_dumps keeps a small pool of catalog connections of its own, used by
 * the HTTP threads, the compaction thread and the CLI alike. Functions return CP_OK,
 * CP_ENOTFOUND, CP_ELIMIT or another negative status with the reason in err.
 */
#ifndef CP_DUMPS_H
#define CP_DUMPS_H

#include "common/cp_common.h"
#include "model/cp_dumpfmt.h"
#include "store/cp_ostore.h"

#include <stddef.h>
#include <stdint.h>

#define CP_DUMPS_DEFAULT_INLINE_MAX (16u << 20)

typedef struct cp_dumps_config {
    const char *catalog;         /* SQLite path or postgres:// (cp_catalog_open's spec); its
                                  * migrations are applied by cp_dumps_open if needed */
    cp_ostore *store;            /* heap objects and Parquet files; shared, not owned */
    const char *tmp_dir;         /* local directory for bodies being received (created) */
    uint64_t inline_max;         /* 0: CP_DUMPS_DEFAULT_INLINE_MAX */
    unsigned connections;        /* pool size, 0: 4 */
    const char *node;            /* this process in compaction claims (default hostname:pid) */
} cp_dumps_config;

typedef enum cp_dump_location { CP_DUMP_HOT = 1, CP_DUMP_OBJECT, CP_DUMP_COLD } cp_dump_location;

/* One file's record (dumps-http.md §7.1). */
typedef struct cp_dump_meta {
    int64_t id;                  /* stable, > 0 */
    char ns[CP_DUMP_MAX_NAME + 1];
    char pod[CP_DUMP_MAX_NAME + 1];          /* the segment as uploaded */
    char restart_pod[CP_DUMP_MAX_NAME + 1];  /* joined pod restart's pod_name; "" = none */
    char service[CP_DUMP_MAX_NAME + 1];
    char name[CP_DUMP_MAX_NAME + 1];         /* original file name (last URL segment) */
    cp_dump_kind kind;
    int gc_rotation;             /* cp_dump_name.gc_rotation */
    int64_t dir_ms;              /* URL date parts: what lists and filters use */
    int64_t capture_ms;          /* name stamp, -1 when none */
    int64_t received_ms;         /* server clock at the last commit */
    int64_t restart_ms;          /* joined restart, else the pod suffix, else 0 (unknown) */
    uint64_t bytes;
    char sha256[65];             /* lower-case hex of the stored bytes */
    int64_t version;             /* 1, + 1 per replacement */
    cp_dump_location location;
    char key[CP_OSTORE_MAX_KEY + 1]; /* object: its key; cold: the Parquet file's key; hot: "" */
    int64_t cold_row;            /* cold: the row number in that file; else -1 */
    char info[2048];             /* extras as a JSON object text ("{}" when none): td/top:
                                  * {"threads":N,"states":{"RUNNABLE":19,...}}; heap:
                                  * {"entry":"java_pid1.hprof","entry_bytes":N}; pprof:
                                  * {"samples":N,"sample_types":["alloc_objects/count",...]} */
} cp_dump_meta;

typedef struct cp_dumps cp_dumps;

int cp_dumps_open(const cp_dumps_config *cfg, cp_dumps **out, char *err, size_t errlen);
void cp_dumps_close(cp_dumps *d);

/* ---- intake ------------------------------------------------------------------------------ */

typedef struct cp_dump_upload cp_dump_upload;

/* Starts receiving a file for path (already validated by cp_dump_path_parse, its name by
 * cp_dump_name_classify). max_bytes: the kind's size limit (0 = none); writing past it is
 * CP_ELIMIT (HTTP 413). */
int cp_dumps_upload_begin(cp_dumps *d, const cp_dump_path *path, uint64_t max_bytes, cp_dump_upload **out,
                          char *err, size_t errlen);
/* Appends body bytes (to the temp file; hashed). CP_ELIMIT past max_bytes, CP_EIO. */
int cp_dumps_upload_write(cp_dump_upload *u, const void *p, size_t n);
uint64_t cp_dumps_upload_bytes(const cp_dump_upload *u);
/* Makes the file durable and visible (see the file comment); out = its record,
 * *created = 1 for a new path, 0 when an existing file was replaced. The extras are read
 * here: thread/state counts of td and top, the zip's first entry of heap (a heap upload
 * that is not a zip is still stored, info "{}"), the pprof summary (a pprof whose name
 * did not say its kind gets cp_pprof_guess_kind). An empty body is CP_EINVAL ("empty
 * file"). The upload is freed whatever the result; on failure nothing is left behind. */
int cp_dumps_upload_commit(cp_dump_upload *u, int64_t now_ms, cp_dump_meta *out, int *created, char *err,
                           size_t errlen);
/* Drops the upload: temp file removed, nothing recorded. */
void cp_dumps_upload_abort(cp_dump_upload *u);

/* ---- reading ------------------------------------------------------------------------------ */

typedef struct cp_dump_filter {
    const char *ns, *service, *pod; /* NULL = any; pod matches pod or restart_pod */
    cp_dump_kind kind;           /* 0 = any */
    int64_t from_ms, to_ms;      /* dir_ms in [from, to) */
    size_t limit;                /* rows; 0 = no limit */
    int64_t before_ms, before_id;/* paging: rows strictly before (dir_ms, id) in list
                                  * order; before_id 0 = from the newest */
    /* The namespaces the asker may see (issue 17, http/cp_auth.h): with ns_limited only
     * files of one of ns_in[0..nns_in) match (on top of ns), none when nns_in is 0; at
     * most CP_DUMP_FILTER_MAX_NS names (more: CP_ELIMIT). 0 = any namespace. */
    int ns_limited;
    const char *const *ns_in;
    size_t nns_in;
} cp_dump_filter;
#define CP_DUMP_FILTER_MAX_NS 256

/* Records (complete, not deleted) newest first: dir_ms desc, id desc. fn returns non-zero
 * to stop (returned). */
int cp_dumps_list(cp_dumps *d, const cp_dump_filter *f, int (*fn)(void *ud, const cp_dump_meta *m), void *ud,
                  char *err, size_t errlen);
/* CP_ENOTFOUND when absent or deleted. */
int cp_dumps_get(cp_dumps *d, int64_t id, cp_dump_meta *out, char *err, size_t errlen);

/* Per (namespace, pod, kind) totals for the summary of §7.2 (filter's limit and paging
 * ignored), ordered by namespace, pod, kind. */
typedef struct cp_dump_sum {
    const char *ns, *pod, *restart_pod, *service; /* restart_pod "" when none */
    int64_t restart_ms;
    cp_dump_kind kind;
    uint64_t count, bytes;
    int64_t first_ms, last_ms;   /* dir_ms */
    int64_t last_received_ms;
} cp_dump_sum;
int cp_dumps_summary(cp_dumps *d, const cp_dump_filter *f, int (*fn)(void *ud, const cp_dump_sum *s), void *ud,
                     char *err, size_t errlen);

/* Reads a stored file's bytes, wherever they are. Opening a hot or cold file loads it (at
 * most inline_max bytes); an object file is read in ranges as asked. */
typedef struct cp_dump_reader cp_dump_reader;
int cp_dumps_reader_open(cp_dumps *d, const cp_dump_meta *m, cp_dump_reader **out, char *err, size_t errlen);
/* Up to n bytes at off: bytes read (0 at or past the end), or a negative status
 * (cp_dump_reader_errmsg says why). Bytes that do not match the record's size are
 * CP_ECORRUPT. */
long cp_dump_reader_pread(cp_dump_reader *r, void *dst, size_t n, uint64_t off);
const char *cp_dump_reader_errmsg(const cp_dump_reader *r);
void cp_dump_reader_close(cp_dump_reader *r);
/* The whole file in memory (for the parsers); CP_ELIMIT above max bytes. *p is malloc'd. */
int cp_dumps_load(cp_dumps *d, const cp_dump_meta *m, size_t max, uint8_t **p, size_t *n, char *err,
                  size_t errlen);

/* ---- removal -------------------------------------------------------------------------------- */

/* Deletes a file: the record is kept with state 'deleted' (deletions recorded, §7.1), the
 * blob cleared, an object deleted from the store; a cold file's bytes stay in its Parquet
 * file until that file's retention. CP_ENOTFOUND when absent or already deleted. */
int cp_dumps_delete(cp_dumps *d, int64_t id, int64_t now_ms, char *err, size_t errlen);
/* The same by upload path (DELETE /diagnostic/..., §4.3). */
int cp_dumps_delete_path(cp_dumps *d, const cp_dump_path *path, int64_t now_ms, char *err, size_t errlen);
/* Both, writing the audit entry audit (store/cp_audit.h: who, action, target set by the
 * caller) in the deletion's transaction, so a deletion is never without its entry and an
 * entry never names a deletion that did not happen. The entry's namespace, time (now_ms),
 * outcome ("ok") and detail ({"id","name","pod","type","bytes"}) come from the record. */
struct cp_audit_entry;
int cp_dumps_delete_audited(cp_dumps *d, int64_t id, int64_t now_ms, struct cp_audit_entry *audit, char *err,
                            size_t errlen);
int cp_dumps_delete_path_audited(cp_dumps *d, const cp_dump_path *path, int64_t now_ms,
                                 struct cp_audit_entry *audit, char *err, size_t errlen);

/* ---- compaction and retention (run by serve's cold task and `cloudprof compact`) ------------ */

typedef struct cp_dumps_compact_stats {
    uint64_t files_written;      /* Parquet files */
    uint64_t dumps_moved;        /* hot -> cold */
    uint64_t bytes_written;
} cp_dumps_compact_stats;

/* Moves hot files whose dir_ms < until_ms into Parquet: claims them (a claim key, this
 * node, now; rows claimed by another live node are left alone unless take_over, or their
 * claim is older than the lease CP_COMPACT_LEASE_MS), writes one file per (hour,
 * namespace, kind) sorted by pod then time, uploads it, records it in s3_files
 * (file_type 'dumps', dump_type = kind), then in one transaction points the rows at it
 * and clears their blobs. A file replaced while it was being compacted stays hot (its
 * version changed). Crash-safe like the calls' compaction: object keys are deterministic
 * per claim, a rerun redoes the claim. progress(ud, line) may be NULL. */
int cp_dumps_compact(cp_dumps *d, int64_t until_ms, int64_t now_ms, int take_over,
                     void (*progress)(void *ud, const char *line), void *ud, cp_dumps_compact_stats *st,
                     char *err, size_t errlen);

typedef struct cp_dumps_retention_stats {
    uint64_t expired;            /* records deleted for age */
    uint64_t heaps_trimmed;      /* heap dumps beyond the newest heap_keep of their pod */
    uint64_t objects_deleted;
    uint64_t pending_swept;      /* orphaned objects of crashed uploads */
} cp_dumps_retention_stats;

/* Deletes every file with dir_ms < before_ms (rows and objects; a cold file's rows -- its
 * Parquet file goes with the calls' retention of s3_files, same cutoff), heap dumps beyond
 * the newest heap_keep per (namespace, pod) (0 = keep all), and objects listed in
 * dump_pending for more than pending_ms (0: one hour). */
int cp_dumps_retention(cp_dumps *d, int64_t before_ms, unsigned heap_keep, int64_t pending_ms, int64_t now_ms,
                       cp_dumps_retention_stats *st, char *err, size_t errlen);

#endif
