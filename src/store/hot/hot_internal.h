/* hot_internal.h -- private to src/store: the SQLite hot tier's window tables (storage.md
 * "Hot tier"; seed 004 "Calls temp table", "Trace temp table", "Temporary Inventory Table").
 *
 * One table per time window, named by the window's start in UTC:
 *   calls_YYYYMMDD_HHMM   one row per call (seed columns + what the API needs + the
 *                         call's trace blob; the seed's traces_ table was folded into
 *                         it by migration 7, issue 18)
 * Each table has an `inventory` row (table_type 'calls'). The writer side
 * (hot_writer.c) is driven by catalog_sqlite.c; the reader is reader_sqlite.c.
 */
#ifndef CP_HOT_INTERNAL_H
#define CP_HOT_INTERNAL_H

#include "common/cp_common.h"
#include "model/cp_model.h"

#include <sqlite3.h>
#include <stdint.h>

#define CP_HOT_DEFAULT_WINDOW_MS ((int64_t)5 * 60 * 1000)
#define CP_HOT_DEFAULT_AHEAD_MS ((int64_t)3 * 3600 * 1000)
#define CP_HOT_DAY_MS ((int64_t)86400000)
/* Table names carry a 4-digit year: calls must be in [1970, 10000). */
#define CP_HOT_MAX_TS ((int64_t)253402300800000)
/* windows_prepare creates at most this many windows (ahead_ms / window_ms). */
#define CP_HOT_MAX_AHEAD_WINDOWS 1024
/* "YYYYMMDD_HHMM" + NUL */
#define CP_HOT_SUFFIX_LEN 24 /* "YYYYMMDD_HHMM_<batch>" + NUL, with room */
/* "calls_" + suffix, with room to spare */
#define CP_HOT_NAME_LEN 32

/* Window length rules: a whole number of minutes (names are per minute) that divides a
 * day, so windows line up with hours and days. CP_EINVAL otherwise. */
int cp_hot_window_check(int64_t window_ms, int64_t ahead_ms);

/* Start of the window holding ts (floor to a multiple of window_ms). CP_EINVAL when ts
 * is outside [0, CP_HOT_MAX_TS). */
int cp_hot_window_start(int64_t ts_ms, int64_t window_ms, int64_t *start_ms);

/* "YYYYMMDD_HHMM" of a window start (UTC). */
void cp_hot_window_suffix(int64_t start_ms, char out[CP_HOT_SUFFIX_LEN]);

/* 1 if name is "calls_YYYYMMDD_HHMM" or "calls_YYYYMMDD_HHMM_<batch>" (digits only): names read back from `inventory` are
 * spliced into SQL text, so they are checked first. */
int cp_hot_calls_name_ok(const char *name);

/* Appends the DDL of a window's table pair and indexes (idempotent: IF NOT EXISTS). */
int cp_hot_window_ddl(cp_buf *out, const char *suffix);

/* The hot_rollups upsert (SQLite and PostgreSQL alike): CP_HOT_ROLLUP_INSERT, then one
 * or more rows of the 20 columns in order, then CP_HOT_ROLLUP_CONFLICT. Counts and sums add up; the slowest call is
 * the better of the two (cp_rollup_point_cmp: duration desc, then time, restart and
 * trace position ascending), each column of it picked by the same condition on the old
 * row. */
#define CP_HOT_ROLLUP_BETTER                                                                                   \
    "(excluded.max_duration > hot_rollups.max_duration OR (excluded.max_duration = hot_rollups.max_duration"   \
    " AND (excluded.max_time, excluded.max_restart_time, excluded.max_trace_file_index,"                       \
    " excluded.max_buffer_offset, excluded.max_record_index) < (hot_rollups.max_time,"                         \
    " hot_rollups.max_restart_time, hot_rollups.max_trace_file_index, hot_rollups.max_buffer_offset,"          \
    " hot_rollups.max_record_index)))"
#define CP_HOT_ROLLUP_PICK(col) " " col " = CASE WHEN " CP_HOT_ROLLUP_BETTER " THEN excluded." col " ELSE hot_rollups." col " END"
#define CP_HOT_ROLLUP_INSERT                                                                                   \
    "INSERT INTO hot_rollups (cell, namespace, service_name, pod_name, duration_class, flags, idle_fp, tbl,"    \
    " calls_count, sum_duration, sum_suspend_duration, sum_queue_wait_duration, sum_transactions, max_time,"   \
    " max_duration, max_calls, max_restart_time, max_trace_file_index, max_buffer_offset, max_record_index)"   \
    " VALUES "
#define CP_HOT_ROLLUP_CONFLICT                                                                                 \
    " ON CONFLICT (cell, namespace, service_name, pod_name, duration_class, flags, idle_fp, tbl) DO UPDATE SET" \
    " calls_count = hot_rollups.calls_count + excluded.calls_count,"                                           \
    " sum_duration = hot_rollups.sum_duration + excluded.sum_duration,"                                        \
    " sum_suspend_duration = hot_rollups.sum_suspend_duration + excluded.sum_suspend_duration,"                \
    " sum_queue_wait_duration = hot_rollups.sum_queue_wait_duration + excluded.sum_queue_wait_duration,"       \
    " sum_transactions = hot_rollups.sum_transactions + excluded.sum_transactions,"                            \
    CP_HOT_ROLLUP_PICK("max_time") "," CP_HOT_ROLLUP_PICK("max_calls") ","                                     \
    CP_HOT_ROLLUP_PICK("max_restart_time") "," CP_HOT_ROLLUP_PICK("max_trace_file_index") ","                  \
    CP_HOT_ROLLUP_PICK("max_buffer_offset") "," CP_HOT_ROLLUP_PICK("max_record_index") ","                     \
    CP_HOT_ROLLUP_PICK("max_duration")

/* ---- the writer (catalog_sqlite.c owns one) --------------------------------------------
 * Every function except new/free must run inside the catalog's open write transaction
 * (the catalog calls its begin() first). Errors: a status, the text in err. */
typedef struct cp_hot_writer cp_hot_writer;

int cp_hot_writer_new(sqlite3 *db, cp_hot_writer **out, char *err, size_t errlen);
void cp_hot_writer_free(cp_hot_writer *w);
int cp_hot_writer_set_windows(cp_hot_writer *w, int64_t window_ms, int64_t ahead_ms, char *err, size_t errlen);
/* The idle-method list of the rollups' system flag (kept by pointer; default: the
 * built-in list). */
void cp_hot_writer_set_idle(cp_hot_writer *w, const char *const *idle, size_t n);
int cp_hot_writer_put(cp_hot_writer *w, const cp_call *call, char *err, size_t errlen);
int cp_hot_writer_prepare(cp_hot_writer *w, int64_t now_ms, char *err, size_t errlen);
/* 1 if rows or counters wait for cp_hot_writer_flush. */
int cp_hot_writer_dirty(const cp_hot_writer *w);
/* Writes the aggregated counters (inventory rows_count, call_counts) into the open
 * transaction; the catalog calls it right before COMMIT. */
int cp_hot_writer_flush(cp_hot_writer *w, char *err, size_t errlen);
/* The transaction was rolled back: forget pending counters and every window learnt in it
 * (the map is a cache and is reloaded from `inventory` on demand). */
void cp_hot_writer_rollback(cp_hot_writer *w);
/* The transaction committed: every window's status is read again at its next insert
 * (a compactor may claim it between transactions). */
void cp_hot_writer_end_txn(cp_hot_writer *w);

#endif
