/* gclog.c -- JVM unified-logging GC logs read into a cp_gc_log (cp_dumptext.h,
 * dumps-http.md §8.3).
 *
 * A line is "decorated" when it starts with one or more [..] groups whose content has no
 * blank inside (time, uptime, level, tags, pid...: "[2023-12-19T05:29:51.464+0000]
 * [7252.712s][info ][gc]"); the message follows. A message "GC(<id>) Pause <words>
 * (<cause>)... <before>-><after>(<capacity>) <ms>ms" is an event when it carries sizes or
 * a duration (G1's "gc,start" line repeats the pause without them). Everything else is
 * counted and skipped. A file with JDK 8 lines ("...: [GC (Allocation Failure) ...") and
 * no decorated line is a legacy log: no events, only its time range.
 */
#include "dumptext_internal.h"

#include <stdlib.h>

typedef struct gc_owned {
    cp_gc_log gc; /* first: cp_gc_free gets back to the rest */
    dt_arena arena;
    cp_gc_event *events;
    size_t cap_events;
} gc_owned;

typedef struct gc_parser {
    gc_owned *o;
    cp_buf cause;       /* scratch: the joined parenthesised parts */
    size_t decorated;   /* decorated lines */
    size_t legacy;      /* JDK 8 GC lines */
    int64_t legacy_first, legacy_last;
    char *err;
    size_t errlen;
} gc_parser;

typedef struct gc_deco {
    int64_t time_ms;
    double uptime_s;
    dt_span msg;
} gc_deco;

/* A decoration's content: no blanks or brackets inside (level padding is trimmed). */
static int deco_ok(dt_span g)
{
    if (!g.n) return 0;
    for (size_t i = 0; i < g.n; i++) {
        char c = g.p[i];
        if (!(dt_is_alpha(c) || dt_is_digit(c) || c == '.' || c == ':' || c == '+' || c == '-' || c == '_' || c == ','))
            return 0;
    }
    return 1;
}

/* Reads the decorations of a line; 0 if it has none. */
static int decorations(dt_span s, gc_deco *d)
{
    d->time_ms = -1;
    d->uptime_s = -1;
    size_t groups = 0;
    while (s.n && s.p[0] == '[') {
        const char *close = memchr(s.p, ']', s.n);
        if (!close) break;
        dt_span g = {s.p + 1, (size_t)(close - s.p) - 1};
        dt_rtrim(&g);
        if (!deco_ok(g)) break;
        groups++;
        dt_skip(&s, (size_t)(close - s.p) + 1);
        int64_t ms;
        double v;
        dt_span t = g;
        if (d->time_ms < 0 && dt_iso_ms(&t, &ms) && t.n == 0) {
            d->time_ms = ms;
            continue;
        }
        t = g;
        if (dt_num(&t, &v) && v >= 0) {
            /* uptime "7252.712s"; the millis/nanos decorators are time or uptime by size */
            double up = -1;
            if (t.n == 1 && t.p[0] == 's') up = v;
            else if (t.n == 2 && t.p[0] == 'm' && t.p[1] == 's') {
                if (v >= 1e11 && v < 4e14 && d->time_ms < 0) d->time_ms = (int64_t)v;
                else if (v < 1e11) up = v / 1e3;
            } else if (t.n == 2 && t.p[0] == 'n' && t.p[1] == 's') {
                if (v >= 1e17 && v < 4e20 && d->time_ms < 0) d->time_ms = (int64_t)(v / 1e6);
                else if (v < 1e17) up = v / 1e9;
            }
            if (up >= 0 && d->uptime_s < 0) d->uptime_s = up;
        }
    }
    if (!groups) return 0;
    dt_ltrim(&s);
    d->msg = s;
    return 1;
}

/* "195M->62M(494M)" (capacity optional); sizes in B, K, M, G, T or bare bytes. */
static int size_kib(dt_span *s, int64_t *out)
{
    double v, k = 1.0 / 1024;
    if (!dt_num(s, &v) || v < 0) return 0;
    if (s->n) {
        switch (s->p[0]) {
        case 'B': k = 1.0 / 1024; break;
        case 'K': k = 1; break;
        case 'M': k = 1024; break;
        case 'G': k = 1024.0 * 1024; break;
        case 'T': k = 1024.0 * 1024 * 1024; break;
        default: k = 0; break;
        }
        if (k) dt_skip(s, 1);
        else k = 1.0 / 1024;
    }
    v *= k;
    if (v >= 9e18) return 0;
    *out = (int64_t)(v + 0.5);
    return 1;
}

static int heap_sizes(dt_span t, cp_gc_event *e)
{
    int64_t before, after, cap = -1;
    if (!size_kib(&t, &before) || !dt_eat(&t, "->") || !size_kib(&t, &after)) return 0;
    if (dt_eat(&t, "(")) {
        if (!size_kib(&t, &cap) || !dt_eat(&t, ")")) return 0;
    }
    if (t.n) return 0;
    e->before_kib = before;
    e->after_kib = after;
    e->capacity_kib = cap;
    return 1;
}

/* A copy of s, or the previous event's identical string (pauses repeat a few kinds). */
static const char *keep_like(gc_parser *ps, dt_span s, const char *prev)
{
    if (s.n == 0) return "";
    if (prev && strlen(prev) == s.n && memcmp(prev, s.p, s.n) == 0) return prev;
    return dt_strdup(&ps->o->arena, s.p, s.n);
}

/* m starts at "Pause". */
static int pause_line(gc_parser *ps, const gc_deco *d, int64_t id, dt_span m)
{
    gc_owned *o = ps->o;
    cp_gc_event e = {.gc_id = id, .time_ms = d->time_ms, .uptime_s = d->uptime_s, .before_kib = -1,
                     .after_kib = -1, .capacity_kib = -1, .pause_ms = -1};
    /* kind: "Pause" and the words after it, up to a '(' or a number */
    dt_span kind = {m.p, 5};
    dt_skip(&m, 5);
    for (;;) {
        dt_ltrim(&m);
        if (!m.n || m.p[0] == '(' || dt_is_digit(m.p[0])) break;
        size_t w = 0;
        while (w < m.n && !dt_is_space(m.p[w]) && m.p[w] != '(') w++;
        dt_skip(&m, w);
        kind.n = (size_t)(m.p - kind.p);
    }
    /* cause: the parenthesised parts, nesting allowed ("(System.gc())") */
    cp_buf_reset(&ps->cause);
    while (m.n && m.p[0] == '(') {
        size_t depth = 0, i = 0;
        for (; i < m.n; i++) {
            if (m.p[i] == '(') depth++;
            else if (m.p[i] == ')' && --depth == 0) break;
        }
        if (i == m.n) break; /* unbalanced: a cut line */
        if ((ps->cause.len && cp_buf_putc(&ps->cause, ' ') != CP_OK) ||
            cp_buf_append(&ps->cause, m.p + 1, i - 1) != CP_OK)
            return dt_fail(ps->err, ps->errlen, CP_ENOMEM, "out of memory");
        dt_skip(&m, i + 1);
        dt_ltrim(&m);
    }
    /* then heap sizes and the duration, in any order */
    for (;;) {
        dt_span tok = dt_token(&m);
        if (!tok.n) break;
        double v;
        if (heap_sizes(tok, &e)) continue;
        if (dt_num(&tok, &v) && v >= 0) {
            if (tok.n == 2 && tok.p[0] == 'm' && tok.p[1] == 's') e.pause_ms = v;
            else if (tok.n == 1 && tok.p[0] == 's') e.pause_ms = v * 1e3;
            else if (tok.n == 2 && tok.p[0] == 'u' && tok.p[1] == 's') e.pause_ms = v / 1e3;
        }
    }
    if (e.before_kib < 0 && e.pause_ms < 0) return CP_OK; /* a start line, not a pause */

    if (o->gc.nevents >= CP_GC_MAX_EVENTS)
        return dt_fail(ps->err, ps->errlen, CP_ELIMIT, "more than %d GC events", CP_GC_MAX_EVENTS);
    if (cp_grow((void **)&o->events, &o->cap_events, o->gc.nevents + 1, sizeof *o->events, 256) != CP_OK)
        return dt_fail(ps->err, ps->errlen, CP_ENOMEM, "out of memory");
    const cp_gc_event *prev = o->gc.nevents ? &o->events[o->gc.nevents - 1] : NULL;
    e.kind = keep_like(ps, kind, prev ? prev->kind : NULL);
    e.cause = keep_like(ps, (dt_span){(const char *)ps->cause.data, ps->cause.len}, prev ? prev->cause : NULL);
    if (!e.kind || !e.cause) return dt_fail(ps->err, ps->errlen, CP_ENOMEM, "out of memory");
    o->events[o->gc.nevents++] = e;
    return CP_OK;
}

static int gc_line(gc_parser *ps, dt_span line)
{
    cp_gc_log *gc = &ps->o->gc;
    gc_deco d;
    if (!decorations(line, &d)) {
        /* JDK 8: "2023-12-19T05:29:51.464+0000: 7252.712: [GC (Allocation Failure) ..." */
        if (dt_find(line, "[GC") != SIZE_MAX || dt_find(line, "[Full GC") != SIZE_MAX) {
            int64_t ms;
            ps->legacy++;
            if (dt_iso_ms(&line, &ms) && dt_starts(line, ":")) {
                if (ps->legacy_first < 0) ps->legacy_first = ms;
                ps->legacy_last = ms;
            }
        }
        return CP_OK;
    }
    ps->decorated++;
    if (d.time_ms >= 0) {
        if (gc->first_ms < 0) gc->first_ms = d.time_ms;
        gc->last_ms = d.time_ms;
    }
    dt_span m = d.msg;
    int64_t id;
    if (dt_eat(&m, "GC(")) {
        if (!dt_int(&m, &id) || id < 0 || !dt_eat(&m, ")")) return CP_OK;
        dt_ltrim(&m);
        if (dt_starts(m, "Pause") && (m.n == 5 || dt_is_space(m.p[5]) || m.p[5] == '(')) return pause_line(ps, &d, id, m);
    } else if (gc->collector[0] == '\0' && dt_eat(&m, "Using ") && m.n && !dt_is_digit(m.p[0])) {
        dt_rtrim(&m);
        gc->collector = dt_strdup(&ps->o->arena, m.p, m.n);
        if (!gc->collector) return dt_fail(ps->err, ps->errlen, CP_ENOMEM, "out of memory");
    }
    return CP_OK;
}

/* ---- API ------------------------------------------------------------------------------------------- */

void cp_gc_free(cp_gc_log *gc)
{
    if (!gc) return;
    gc_owned *o = (gc_owned *)gc;
    dt_arena_free(&o->arena);
    free(o->events);
    free(o);
}

int cp_gc_parse(const char *text, size_t n, cp_gc_log **out, char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!out || (!text && n)) return dt_fail(err, errlen, CP_EINVAL, "bad arguments");
    *out = NULL;
    if (n > CP_DUMPTEXT_MAX_BYTES)
        return dt_fail(err, errlen, CP_ELIMIT, "GC log of %zu bytes (limit %u)", n, CP_DUMPTEXT_MAX_BYTES);
    gc_owned *o = calloc(1, sizeof *o);
    if (!o) return dt_fail(err, errlen, CP_ENOMEM, "out of memory");
    dt_arena_init(&o->arena);
    cp_gc_log *gc = &o->gc;
    gc->first_ms = gc->last_ms = -1;
    gc->collector = "";
    gc_parser ps = {.o = o, .legacy_first = -1, .legacy_last = -1, .err = err, .errlen = errlen};
    cp_buf_init(&ps.cause);

    int st = CP_OK;
    dt_lines it;
    dt_span line;
    dt_lines_init(&it, text, n);
    while (st == CP_OK && dt_next_line(&it, &line)) {
        gc->lines++;
        st = gc_line(&ps, line);
    }
    cp_buf_free(&ps.cause);
    if (st != CP_OK) {
        cp_gc_free(gc);
        return st;
    }
    if (ps.decorated == 0 && ps.legacy > 0) {
        gc->legacy = 1;
        gc->first_ms = ps.legacy_first;
        gc->last_ms = ps.legacy_last;
    }
    gc->events = o->events;
    *out = gc;
    return CP_OK;
}
