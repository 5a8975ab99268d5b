/* fuzz_gc.c -- libFuzzer target: the GC-log parser, cp_gc_parse(), and the event JSON,
 * http_gc_event_json().
 *
 * The input is the log text. The target checks:
 *   - the status is CP_OK (every input below the bounds is a log, maybe an empty one);
 *   - lines = the input's line count (a last line without '\n' counts);
 *   - events are sane: kind non-NULL and starting "Pause", cause non-NULL, gc_id >= 0,
 *     sizes -1 or >= 0 (after with before), pause -1 or >= 0, at least one of sizes and
 *     pause; first_ms/last_ms both -1 or both set; a legacy log has no events;
 *   - determinism: a second parse gives the same digest;
 *   - line endings: without '\r' in the input, the CRLF text parses the same;
 *   - prefixes: a cut anywhere parses; a cut at a line end gives exactly the whole's
 *     first events and the prefix's line count;
 *   - every event's JSON builds and dumps as valid UTF-8.
 * Bytes 0..1 of the input choose the cut (the whole input is the text).
 */
#include "fuzz_common.h"
#include "http/dumpjson.h"
#include "model/cp_dumptext.h"

#include <math.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void hash_str(uint64_t *h, const char *s)
{
    FZ_CHECK(s != NULL, "NULL string");
    fz_hash(h, s, strlen(s));
}

static uint64_t event_digest(const cp_gc_event *e)
{
    FZ_CHECK(e->kind != NULL && strncmp(e->kind, "Pause", 5) == 0, "event kind \"%s\"", e->kind ? e->kind : "(null)");
    FZ_CHECK(e->gc_id >= 0 && e->time_ms >= -1, "gc_id %lld time %lld", (long long)e->gc_id, (long long)e->time_ms);
    FZ_CHECK(e->uptime_s == -1 || (e->uptime_s >= 0 && isfinite(e->uptime_s)), "uptime %g", e->uptime_s);
    FZ_CHECK(e->before_kib >= -1 && e->after_kib >= -1 && e->capacity_kib >= -1, "negative size");
    FZ_CHECK((e->before_kib == -1) == (e->after_kib == -1), "before %lld after %lld", (long long)e->before_kib,
             (long long)e->after_kib);
    FZ_CHECK(e->capacity_kib == -1 || e->before_kib >= 0, "capacity without sizes");
    FZ_CHECK(e->pause_ms == -1 || (e->pause_ms >= 0 && isfinite(e->pause_ms)), "pause %g", e->pause_ms);
    FZ_CHECK(e->before_kib >= 0 || e->pause_ms >= 0, "an event with neither sizes nor a pause");
    uint64_t h = 11, u;
    FZ_HASHV(&h, e->gc_id);
    FZ_HASHV(&h, e->time_ms);
    memcpy(&u, &e->uptime_s, sizeof u);
    fz_mix(&h, u);
    hash_str(&h, e->kind);
    hash_str(&h, e->cause);
    FZ_HASHV(&h, e->before_kib);
    FZ_HASHV(&h, e->after_kib);
    FZ_HASHV(&h, e->capacity_kib);
    memcpy(&u, &e->pause_ms, sizeof u);
    fz_mix(&h, u);
    return h;
}

static size_t count_lines(const uint8_t *p, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += p[i] == '\n';
    return k + (n > 0 && p[n - 1] != '\n');
}

static uint64_t check_gc(const cp_gc_log *gc, const uint8_t *p, size_t n)
{
    FZ_CHECK(gc->lines == count_lines(p, n), "lines %zu, the text has %zu", gc->lines, count_lines(p, n));
    FZ_CHECK(gc->nevents <= gc->lines && gc->nevents <= CP_GC_MAX_EVENTS, "%zu events", gc->nevents);
    FZ_CHECK(gc->nevents == 0 || gc->events != NULL, "NULL events");
    FZ_CHECK((gc->first_ms == -1) == (gc->last_ms == -1) && gc->first_ms >= -1 && gc->last_ms >= -1,
             "first %lld last %lld", (long long)gc->first_ms, (long long)gc->last_ms);
    FZ_CHECK(gc->legacy == 0 || (gc->legacy == 1 && gc->nevents == 0), "legacy %d with %zu events", gc->legacy,
             gc->nevents);
    uint64_t h = 13;
    FZ_HASHV(&h, gc->lines);
    FZ_HASHV(&h, gc->first_ms);
    FZ_HASHV(&h, gc->last_ms);
    hash_str(&h, gc->collector);
    FZ_HASHV(&h, gc->legacy);
    FZ_HASHV(&h, gc->nevents);
    for (size_t i = 0; i < gc->nevents; i++) fz_mix(&h, event_digest(&gc->events[i]));
    return h;
}

static cp_gc_log *parse(const uint8_t *p, size_t n)
{
    char err[128];
    cp_gc_log *gc = (cp_gc_log *)1; /* must be overwritten */
    int st = cp_gc_parse((const char *)p, n, &gc, err, sizeof err);
    FZ_CHECK(st == CP_OK && gc != NULL, "status %d (%s) for %zu bytes", st, err, n);
    return gc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cp_gc_log *gc = parse(data, size), *again;
    uint64_t h = check_gc(gc, data, size);

    again = parse(data, size);
    FZ_CHECK(check_gc(again, data, size) == h, "second parse differs");
    cp_gc_free(again);

    if (!memchr(data, '\r', size)) {
        uint8_t *c = malloc(2 * size + 1);
        size_t n = 0;
        for (size_t i = 0; i < size; i++) {
            if (data[i] == '\n') c[n++] = '\r';
            c[n++] = data[i];
        }
        again = parse(c, n);
        FZ_CHECK(check_gc(again, c, n) == h, "CRLF changes the parse");
        cp_gc_free(again);
        free(c);
    }

    size_t cut = size >= 2 ? (size_t)(data[0] | data[1] << 8) % (size + 1) : size;
    cp_gc_log *pre = parse(data, cut);
    check_gc(pre, data, cut);
    cp_gc_free(pre);
    while (cut > 0 && data[cut - 1] != '\n') cut--;
    pre = parse(data, cut);
    check_gc(pre, data, cut);
    FZ_CHECK(pre->nevents <= gc->nevents, "a prefix has more events");
    for (size_t i = 0; i < pre->nevents; i++)
        FZ_CHECK(event_digest(&pre->events[i]) == event_digest(&gc->events[i]), "event %zu differs in a prefix", i);
    cp_gc_free(pre);

    for (size_t i = 0; i < gc->nevents; i++) {
        json_t *j = http_gc_event_json(&gc->events[i]);
        FZ_CHECK(j != NULL, "http_gc_event_json returned NULL");
        char *s = json_dumps(j, JSON_COMPACT);
        FZ_CHECK(s != NULL, "json_dumps failed");
        FZ_CHECK(fz_valid_utf8((const uint8_t *)s, strlen(s)), "JSON is not valid UTF-8");
        free(s);
        json_decref(j);
    }
    cp_gc_free(gc);
    return 0;
}
