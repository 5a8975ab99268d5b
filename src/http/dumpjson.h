/* dumpjson.h -- parsed dumps as the API's JSON (docs/API.md "Dumps"): thread dumps for
 * /dumps/{id}/threads, top snapshots for /dumps/{id}/top, GC pauses for /gc, pprof
 * profiles for /dumps/{id}/profile. Each returns a new jansson value, NULL when out of
 * memory. Strings that are not valid UTF-8 are repaired (bad bytes become U+FFFD), since
 * dump text is untrusted and jansson refuses invalid UTF-8.
 */
#ifndef CP_DUMPJSON_H
#define CP_DUMPJSON_H

#include "model/cp_dumpfmt.h"
#include "model/cp_dumptext.h"

#include <jansson.h>

/* A JSON string of s (NULL: ""), invalid UTF-8 repaired (each bad byte U+FFFD). */
json_t *http_json_text(const char *s);

/* {"time_ms", "vm", "smr_length", "java_threads", "jni_global_refs", "jni_weak_refs",
 *  "deadlocks", "states": {"RUNNABLE": 19, "TIMED_WAITING (parking)": 25, ...},
 *  "threads": [{"name", "seq", "daemon", "priority", "os_priority", "cpu_ms", "elapsed_s",
 *    "tid" ("0x..."), "nid" (decimal), "state", "state_detail", "header_state",
 *    "frames": ["java.lang.Thread.sleep(Native Method)", ...],
 *    "locks_held": [{"addr", "class", "frame"}],     (locked, ownable synchronizers)
 *    "locks_waited": [{"kind", "addr", "class", "frame"}]}]}  (waiting on / to lock, parking)
 * Absent numbers (-1 in the parse) are null. */
json_t *http_td_json(const cp_td *td);

/* {"pid", "clock", "uptime", "users", "load": [1m, 5m, 15m],
 *  "threads": {"total", "running", "sleeping", "stopped", "zombie"},
 *  "cpu": {"us", "sy", "ni", "id", "wa", "hi", "si", "st"},
 *  "memory_kib": {"total", "free", "used", "buff_cache", "avail", "swap_total", "swap_free", "swap_used"},
 *  "rows": [{"pid", "user", "pr", "ni", "virt_kib", "res_kib", "shr_kib", "state",
 *            "cpu_pct", "mem_pct", "time_s", "command"}]}   (absent numbers: null) */
json_t *http_top_json(const cp_top *top);

/* {"time_ms", "gc_id", "kind", "cause", "duration_ms", "heap_before_kib",
 *  "heap_after_kib", "heap_capacity_kib", "uptime_s"} (absent numbers: null) */
json_t *http_gc_event_json(const cp_gc_event *e);

/* {"sample_types": [{"type", "unit"}], "default_sample_type" (index or null),
 *  "period_type": {"type", "unit"} or null, "period", "time_ms" (from time_nanos, or null),
 *  "duration_ms", "samples", "locations", "functions", "mappings",
 *  "sample_type": st, "top": [{"name", "file", "flat", "cum"}] (at most top entries)} */
json_t *http_pprof_json(const cp_pprof *pf, size_t st, size_t top);

#endif
