/* hot_schema.c -- window arithmetic, window table names and their DDL (hot_internal.h). */
#include "store/hot/hot_internal.h"


int cp_hot_window_check(int64_t window_ms, int64_t ahead_ms)
{
    if (window_ms < 60000 || window_ms > CP_HOT_DAY_MS) return CP_EINVAL;
    if (window_ms % 60000 != 0 || CP_HOT_DAY_MS % window_ms != 0) return CP_EINVAL;
    if (ahead_ms < 0 || ahead_ms / window_ms > CP_HOT_MAX_AHEAD_WINDOWS) return CP_EINVAL;
    return CP_OK;
}

int cp_hot_window_start(int64_t ts_ms, int64_t window_ms, int64_t *start_ms)
{
    if (ts_ms < 0 || ts_ms >= CP_HOT_MAX_TS || window_ms <= 0) return CP_EINVAL;
    *start_ms = ts_ms - ts_ms % window_ms;
    return CP_OK;
}

/* Proleptic Gregorian date of a day number since 1970-01-01 (H. Hinnant's
 * civil_from_days), so names do not depend on the C library's time zone handling. */
static void civil_from_days(int64_t z, int *y, unsigned *m, unsigned *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    unsigned doe = (unsigned)(z - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t yy = (int64_t)yoe + era * 400;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int)(yy + (*m <= 2));
}

void cp_hot_window_suffix(int64_t start_ms, char out[CP_HOT_SUFFIX_LEN])
{
    int64_t days = start_ms / CP_HOT_DAY_MS;
    int64_t minute = (start_ms % CP_HOT_DAY_MS) / 60000;
    int y;
    unsigned m, d;
    civil_from_days(days, &y, &m, &d);
    /* digits by hand: every field's range is known, and snprintf's truncation warnings
     * cannot see that */
    unsigned v[5] = {(unsigned)y % 10000u, m % 100u, d % 100u, (unsigned)(minute / 60) % 100u,
                     (unsigned)(minute % 60)};
    static const int width[5] = {4, 2, 2, 2, 2};
    size_t o = 0;
    for (int f = 0; f < 5; f++) {
        if (f == 3) out[o++] = '_';
        for (int k = width[f] - 1; k >= 0; k--) {
            out[o + (size_t)k] = (char)('0' + v[f] % 10);
            v[f] /= 10;
        }
        o += (size_t)width[f];
    }
    out[o] = 0;
}

int cp_hot_calls_name_ok(const char *name)
{
    static const char pat[] = "calls_dddddddd_dddd";
    for (size_t i = 0; i < sizeof pat - 1; i++) {
        char c = name[i];
        if (pat[i] == 'd' ? (c < '0' || c > '9') : c != pat[i]) return 0;
    }
    const char *rest = name + sizeof pat - 1;
    if (*rest == 0) return 1;
    /* a late batch: "_<n>", 1 to 6 digits, no leading zero */
    if (rest[0] != '_' || rest[1] < '1' || rest[1] > '9') return 0;
    size_t d = 1;
    while (rest[1 + d] >= '0' && rest[1 + d] <= '9') d++;
    return d <= 6 && rest[1 + d] == 0;
}

/* Index choices (every index is paid on every insert, so only what the reads need):
 *  - calls_*_time (time): time-sorted pages (the default -ts_ms listing), time-range cuts
 *    of a partially covered window, and lookups by call id (time is its first part).
 *    Calls arrive roughly in time order, so this index grows at its right edge: cheap.
 *  - calls_*_duration (duration, time DESC): the "slowest calls" page and duration
 *    filters. time DESC makes an ascending duration scan already come out in the API's
 *    tie-break order (ts desc), so `+duration` needs no big sort of the many calls with
 *    equal small durations; `-duration` scans it backwards and sorts only groups of equal
 *    duration, which are tiny at the top of a log-like distribution.
 *  - calls_*_pod (pod_hash, time): pages filtered by namespace or pod. A rare pod's calls
 *    are a few rows among hundreds of thousands per window; the time index alone walks
 *    them all (issue 18 measured 0.3-4 s per poll at 100 000 calls/s). With this index the
 *    reader walks one range per pod of the filter (call_counts lists a window's pods),
 *    newest first, and merges them. Each pod appends at its own right edge: cheap.
 *  - the trace blob is a column of the call's row (since migration 7; it was a second
 *    table, traces_*, before): one b-tree insert per call instead of two, and no second
 *    copy of the reference columns. SQLite keeps a blob past the page's local limit in
 *    overflow pages, so scans of the other columns do not read it.
 * Other sort columns (cpu, memory, text columns, ...) scan the window with a top-N sort;
 * windows are small, and an index per column would multiply the insert cost. */
int cp_hot_window_ddl(cp_buf *out, const char *s)
{
    return cp_buf_printf(
        out,
        "CREATE TABLE IF NOT EXISTS calls_%s ("
        " id INTEGER PRIMARY KEY,"
        " time INTEGER NOT NULL, cpu_time INTEGER NOT NULL, wait_time INTEGER NOT NULL,"
        " memory_used INTEGER NOT NULL, duration INTEGER NOT NULL, non_blocking INTEGER NOT NULL,"
        " queue_wait_duration INTEGER NOT NULL, suspend_duration INTEGER NOT NULL, calls INTEGER NOT NULL,"
        " transactions INTEGER NOT NULL, logs_generated INTEGER NOT NULL, logs_written INTEGER NOT NULL,"
        " file_read INTEGER NOT NULL, file_written INTEGER NOT NULL, net_read INTEGER NOT NULL,"
        " net_written INTEGER NOT NULL, namespace TEXT NOT NULL, service_name TEXT NOT NULL,"
        " pod_name TEXT NOT NULL, restart_time INTEGER NOT NULL, method INTEGER NOT NULL,"
        " params TEXT NOT NULL, trace_file_index INTEGER NOT NULL, buffer_offset INTEGER NOT NULL,"
        " record_index INTEGER NOT NULL, method_name TEXT NOT NULL, thread TEXT NOT NULL,"
        " error INTEGER NOT NULL, pod_hash INTEGER NOT NULL, trace_reason TEXT, trace BLOB,"
        " has_sql INTEGER NOT NULL DEFAULT 0);"
        "CREATE INDEX IF NOT EXISTS calls_%s_time ON calls_%s (time);"
        "CREATE INDEX IF NOT EXISTS calls_%s_duration ON calls_%s (duration, time DESC);"
        "CREATE INDEX IF NOT EXISTS calls_%s_pod ON calls_%s (pod_hash, time);",
        s, s, s, s, s, s, s);
}
