/* cp_rollup.h -- call rollups: the aggregates /calls/stats answers from instead of the calls
 * themselves (issue 14; ARCHITECTURE.md "Stats from rollups").
 *
 * A rollup entry sums the calls of one *cell* (CP_ROLLUP_CELL_MS of time, aligned to the
 * epoch), one pod (namespace, service, pod name), one duration class and one flag set:
 * their count, the sums the status line shows, and the slowest of them (its id, time,
 * duration and calls). Entries are additive: two entries with the same key merge into
 * one, so writers may emit several partial entries for a key (a hot writer per commit,
 * a compactor per memory-sized batch) and readers simply sum what they find.
 *
 * The classes are the union of the cold files' duration ranges (seed 004 Appendix A) and
 * the UI's duration chips (ui.md §3.4), so every chip and every range is a union of whole
 * classes; a duration filter with another bound needs the calls of the one class it cuts.
 * The flags make "errors only" and "hide system calls" answerable too; the system flag
 * depends on the idle-method list (`serve --idle-methods`), so every entry carries the
 * list's fingerprint and a reader with another list cannot use the flag.
 *
 * Pure: no I/O. The accumulators allocate, within the bounds their callers give.
 */
#ifndef CP_ROLLUP_H
#define CP_ROLLUP_H

#include "model/cp_model.h"
#include "query/cp_query.h"

#include <stddef.h>
#include <stdint.h>

#define CP_ROLLUP_CELL_MS 10000
#define CP_ROLLUP_CLASSES 10

/* Class 0..9 of a duration: [0,1) [1,10) [10,100) [100,500) [500,1000) [1000,3000)
 * [3000,5000) [5000,30000) [30000,90000) [90000,inf) ms; negatives are class 0. */
int cp_rollup_class_of(int64_t duration_ms);
int64_t cp_rollup_class_lo(int cls); /* inclusive (class 0: INT64_MIN, it holds negatives too) */
int64_t cp_rollup_class_hi(int cls); /* exclusive; INT64_MAX for the last */

/* The start of the cell holding ts (floor, also below the epoch). */
int64_t cp_rollup_cell_of(int64_t ts_ms);

enum { CP_ROLLUP_F_ERROR = 1, CP_ROLLUP_F_SYSTEM = 2 };

/* Fingerprint of an idle-method list (cp_system_call's idle argument): the same list in
 * the same order gives the same value in every process and version of this format. */
int64_t cp_rollup_idle_fp(const char *const *idle, size_t n);
/* The flags of a call under the idle list; error: it carries `call.red` (cp_call.error
 * where the caller has it right, else cp_params_has_red). */
int cp_rollup_flags_of(const cp_call *c, int error, const char *const *idle, size_t n);
/* The same through a memo of method verdicts (cp_system_call_memo); memo NULL = none. */
int cp_rollup_flags_memo(cp_system_memo *memo, const cp_call *c, int error, const char *const *idle, size_t n);

/* The slowest call of an entry (its pod is the entry's). */
typedef struct cp_rollup_point {
    int64_t ts_ms, restart_ms;
    int32_t duration_ms, calls;
    int32_t trace_file_index, buffer_offset, record_index;
} cp_rollup_point;

/* <0 when a is the slower one: duration desc, then time, restart and trace position
 * ascending. Points of one pod only (across pods, see cp_stats_point_cmp). */
int cp_rollup_point_cmp(const cp_rollup_point *a, const cp_rollup_point *b);
void cp_rollup_point_of(const cp_call *c, cp_rollup_point *out);

typedef struct cp_rollup_entry {
    int64_t cell_ms;
    const char *ns, *service, *pod;
    size_t ns_len, service_len, pod_len;
    int32_t cls, flags;
    int64_t idle_fp;
    int64_t n, sum_duration, sum_suspend, sum_queue, sum_transactions;
    cp_rollup_point max;
} cp_rollup_entry;

/* into += from (keys are not compared). */
void cp_rollup_entry_merge(cp_rollup_entry *into, const cp_rollup_entry *from);

/* ---- the accumulator: entries by key, in memory ----------------------------------------- */

typedef struct cp_rollup_acc cp_rollup_acc;

/* At most max_entries entries (0 = 1 << 20); the names are copied once per distinct pod. */
int cp_rollup_acc_new(size_t max_entries, int64_t idle_fp, cp_rollup_acc **out);
void cp_rollup_acc_free(cp_rollup_acc *a);
/* Adds one call with its flags. CP_ELIMIT when a new key would pass max_entries (nothing
 * added: write the entries out, clear, add again). */
int cp_rollup_acc_add(cp_rollup_acc *a, const cp_call *c, int flags);
/* Adds (merges) one entry (its idle_fp is ignored: the accumulator's is used). */
int cp_rollup_acc_add_entry(cp_rollup_acc *a, const cp_rollup_entry *e);
size_t cp_rollup_acc_count(const cp_rollup_acc *a);
/* fn(entry) for every entry, ordered by cell, namespace, service, pod, class, flags.
 * The entries' strings are valid until clear or free. A non-zero return stops (returned). */
int cp_rollup_acc_each(cp_rollup_acc *a, int (*fn)(void *ud, const cp_rollup_entry *e), void *ud);
void cp_rollup_acc_clear(cp_rollup_acc *a);

/* ---- the stats answer: chart columns and totals ------------------------------------------
 *
 * The window [from, to) is cut into columns of column_ms, a multiple of the cell aligned
 * to the epoch (so a cell lies in one column: rollups and scans put a call in the same
 * column), as few as needed for at most `columns` of them over the window. Each column
 * keeps its per_col slowest points; totals sum every call added. */

#define CP_STATS_MAX_COLUMNS 5000
#define CP_STATS_MAX_POINTS 5000
#define CP_STATS_PER_COLUMN 5

typedef struct cp_stats_point {
    cp_rollup_point p;
    uint64_t pod_hash;
} cp_stats_point;

/* <0 when a is the slower one: as cp_rollup_point_cmp, pod_hash ascending last. */
int cp_stats_point_cmp(const cp_stats_point *a, const cp_stats_point *b);

typedef struct cp_stats {
    int64_t from_ms, to_ms;
    int64_t column_ms, col0_ms;     /* column k is [col0 + k * column_ms, + column_ms) */
    size_t ncols, per_col;
    cp_stats_point *pts;            /* ncols x per_col, each column slowest first */
    uint32_t *used;
    uint64_t total;
    int64_t sum_duration, sum_suspend, sum_queue, sum_transactions;
} cp_stats;

/* columns: 1..CP_STATS_MAX_COLUMNS wanted. CP_EINVAL for an empty window or a bad count. */
int cp_stats_init(cp_stats *s, int64_t from_ms, int64_t to_ms, unsigned columns);
/* Back to nothing counted (same columns). */
void cp_stats_clear(cp_stats *s);
void cp_stats_free(cp_stats *s);
/* One call (its time must lie in [from, to)). */
void cp_stats_add_call(cp_stats *s, const cp_call *c);
/* One entry (its cell must lie in [from, to)); pod_hash = cp_pod_hash(ns, pod). */
void cp_stats_add_entry(cp_stats *s, const cp_rollup_entry *e, uint64_t pod_hash);
/* s += o (same plan). */
void cp_stats_merge(cp_stats *s, const cp_stats *o);
/* The kept points in time order into out[0..*n) (out: room for ncols * per_col). */
void cp_stats_points(const cp_stats *s, cp_stats_point *out, size_t *n);

#endif
