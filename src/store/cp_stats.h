/* cp_stats.h -- /calls/stats: chart points and status-line totals over every matching call
 * (docs/API.md), answered from rollups (query/cp_rollup.h) where they can, by scanning the
 * calls elsewhere (issue 14; ARCHITECTURE.md "Stats from rollups").
 *
 * The plan of a filter:
 *   - a filter the rollups cannot answer (a search text, a method substring, a predicate
 *     without its spelled-out selection) scans every matching call;
 *   - otherwise the whole cells [a, b) inside the window come from rollup entries of the
 *     duration classes the duration filter holds whole, and scans cover the rest: the
 *     calls of [from, a) and [b, to) (the window's edges, less than a cell each), and in
 *     [a, b) the calls of the (at most two) classes the duration filter cuts;
 *   - a source without rollups (a hot window written before rollups existed, a cold file
 *     of an older layout) is scanned whole: every call is counted exactly once.
 * Scans stop at the filter's max_scan rows (then `partial`); the filter's progress
 * callback hears about windows, files and rows, and may cancel.
 */
#ifndef CP_STATS_H
#define CP_STATS_H

#include "query/cp_rollup.h"
#include "store/cp_hot.h"

typedef struct cp_stats_plan {
    int rollups;            /* 0: everything is scanned */
    int64_t a, b;           /* cells [a, b) from rollups */
    uint32_t full;          /* classes (bits) whose entries count */
    uint32_t partial;       /* classes cut by the duration filter: scanned in [a, b) */
} cp_stats_plan;

typedef struct cp_stats_info {
    uint64_t scanned;       /* rows examined by scans */
    uint64_t scanned_calls; /* calls counted from scans */
    uint64_t rollup_entries;/* entries counted */
    size_t windows;         /* hot windows read */
    size_t cold_files;      /* cold calls files scanned */
    size_t rollup_files;    /* cold rollup files read */
    int partial;            /* the scan budget ran out: totals cover part of the calls */
} cp_stats_info;

void cp_stats_plan_of(const cp_call_filter *f, cp_stats_plan *p);

/* 1 if the entry counts, 0 if not, -1 if the rollups cannot tell (the system flag was
 * made with another idle list): then the source must be scanned. */
int cp_stats_entry_matches(const cp_call_filter *f, const cp_stats_plan *p, const cp_rollup_entry *e);

/* The scans of one source: covered = its calls of [a, b) are in rollup entries the plan
 * uses. fn(sub) for each sub-filter (f with a narrower time or duration range), in
 * order; a non-zero return stops (returned). */
int cp_stats_scans(const cp_call_filter *f, const cp_stats_plan *p, int covered,
                   int (*fn)(void *ud, const cp_call_filter *sub), void *ud);

/* The stats of f over reader r: out is initialised (cp_stats_init with columns) and
 * filled; free it with cp_stats_free. CP_EINVAL for a bad window or column count,
 * CP_EABORT when the progress callback cancelled (out then holds what was counted). */
int cp_stats_run(cp_reader *r, const cp_call_filter *f, unsigned columns, cp_stats *out, cp_stats_info *info);

#endif
