/* td.c -- Java thread dumps (jstack / attach "threaddump" text) read into a cp_td
 * (cp_dumptext.h, dumps-http.md §8.1).
 *
 * One pass over the lines. A line starting with '"' whose closing quote is followed by a
 * header field opens a thread block; indented lines feed the open block (state line,
 * "at" frames, "- ..." lock lines, the ownable-synchronizer list); blank lines keep it
 * open (the ownable list follows one); any other unindented line closes it, which keeps
 * the deadlock report's '"name":' stacks out of the threads. Everything else is a
 * top-level line (time, VM name, SMR length, deadlock counts, JNI trailer) or skipped.
 *
 * Memory: strings in one arena; threads, frames and locks in three growable arrays whose
 * per-thread slices are pointed at once the arrays stop moving (at the end).
 */
#include "dumptext_internal.h"

#include <limits.h>
#include <stdlib.h>

typedef struct td_state {
    const char *key;
    size_t len;
    uint64_t hash;
    size_t count;
} td_state;

/* The value handed out is the first member, so cp_td_free and cp_td_state_counts get
 * back to the rest from the cp_td pointer. */
typedef struct td_owned {
    cp_td td;
    dt_arena arena;
    cp_td_thread *threads;
    size_t cap_threads;
    cp_td_frame *frames;
    size_t nframes, cap_frames;
    cp_td_lock *locks;
    size_t nlocks, cap_locks;
    td_state *states; /* distinct state keys in first-seen order (arena) */
    size_t nstates;
} td_owned;

typedef struct td_parser {
    td_owned *o;
    int open;        /* the last thread accepts body lines */
    int ownable;     /* inside its "Locked ownable synchronizers:" list */
    int state_seen;  /* its java.lang.Thread.State line was read */
    size_t found_one;
    int64_t found_n;
    char *err;
    size_t errlen;
} td_parser;

static const char *keep(td_parser *ps, dt_span s) { return dt_strdup(&ps->o->arena, s.p, s.n); }

static int oom(td_parser *ps) { return dt_fail(ps->err, ps->errlen, CP_ENOMEM, "out of memory"); }

static int to_int(int64_t v) { return v >= INT_MIN && v <= INT_MAX ? (int)v : -1; }

/* ---- thread header ------------------------------------------------------------------------ */

/* 1 if s (what follows `" `) starts with a field of a thread header. */
static int header_field(dt_span s)
{
    if (s.n >= 2 && s.p[0] == '#' && dt_is_digit(s.p[1])) return 1;
    return dt_starts(s, "daemon ") || dt_starts(s, "prio=") || dt_starts(s, "os_prio=") || dt_starts(s, "cpu=") ||
           dt_starts(s, "elapsed=") || dt_starts(s, "tid=") || dt_starts(s, "nid=");
}

/* Offset of the quote that ends the thread name: the last '"' followed by " <field>"
 * (names may hold quotes, the fields after the name never do); 0 when none. */
static size_t name_end(dt_span line)
{
    for (size_t q = line.n; q-- > 1;) {
        if (line.p[q] != '"' || q + 1 >= line.n || line.p[q + 1] != ' ') continue;
        dt_span rest = {line.p + q + 2, line.n - q - 2};
        if (header_field(rest)) return q;
    }
    return 0;
}

static int new_thread(td_parser *ps, dt_span line, size_t q)
{
    td_owned *o = ps->o;
    if (o->td.nthreads >= CP_TD_MAX_THREADS)
        return dt_fail(ps->err, ps->errlen, CP_ELIMIT, "more than %d threads", CP_TD_MAX_THREADS);
    if (cp_grow((void **)&o->threads, &o->cap_threads, o->td.nthreads + 1, sizeof *o->threads, 64) != CP_OK)
        return oom(ps);
    cp_td_thread *t = &o->threads[o->td.nthreads];
    memset(t, 0, sizeof *t);
    t->seq = -1;
    t->prio = t->os_prio = -1;
    t->cpu_ms = t->elapsed_s = -1;
    t->nid = -1;
    t->state = t->state_detail = t->header_state = "";
    t->name = keep(ps, (dt_span){line.p + 1, q - 1});
    if (!t->name) return oom(ps);

    dt_span r = {line.p + q + 1, line.n - q - 1};
    for (;;) {
        dt_span tok = dt_token(&r);
        if (!tok.n) break;
        int64_t v;
        double d;
        uint64_t h;
        if (tok.p[0] == '#') {
            dt_skip(&tok, 1);
            if (t->seq < 0 && dt_int_all(tok, &v) && v >= 0) t->seq = v;
        } else if (tok.n == 6 && memcmp(tok.p, "daemon", 6) == 0) {
            t->daemon = 1;
        } else if (dt_eat(&tok, "prio=")) {
            if (dt_int_all(tok, &v)) t->prio = to_int(v);
        } else if (dt_eat(&tok, "os_prio=")) {
            if (dt_int_all(tok, &v)) t->os_prio = to_int(v);
        } else if (dt_eat(&tok, "cpu=")) {
            if (dt_num(&tok, &d) && d >= 0 && tok.n == 2 && memcmp(tok.p, "ms", 2) == 0) t->cpu_ms = d;
        } else if (dt_eat(&tok, "elapsed=")) {
            if (dt_num(&tok, &d) && d >= 0 && tok.n == 1 && tok.p[0] == 's') t->elapsed_s = d;
        } else if (dt_eat(&tok, "tid=")) {
            if (dt_hex(&tok, &h) && tok.n == 0) t->tid = h;
        } else if (dt_eat(&tok, "nid=")) {
            /* hex up to JDK 18, decimal from JDK 19 on */
            if (dt_starts(tok, "0x") || dt_starts(tok, "0X")) {
                if (dt_hex(&tok, &h) && tok.n == 0 && h <= INT64_MAX) t->nid = (int64_t)h;
            } else if (dt_int_all(tok, &v) && v >= 0) {
                t->nid = v;
            }
            /* the rest is the state text, less the stack address "[0x...]" */
            dt_trim(&r);
            if (dt_ends(r, "]")) {
                size_t i = r.n;
                while (i > 0 && r.p[i - 1] != '[' && !dt_is_space(r.p[i - 1])) i--;
                if (i > 0 && r.p[i - 1] == '[' && dt_starts((dt_span){r.p + i, r.n - i}, "0x")) {
                    r.n = i - 1;
                    dt_rtrim(&r);
                }
            }
            t->header_state = keep(ps, r);
            if (!t->header_state) return oom(ps);
            break;
        }
    }
    if (t->seq >= 0) o->td.java_threads++;
    o->td.nthreads++;
    ps->open = 1;
    ps->ownable = 0;
    ps->state_seen = 0;
    return CP_OK;
}

/* ---- thread body ---------------------------------------------------------------------------- */

static int state_line(td_parser *ps, cp_td_thread *t, dt_span s)
{
    if (ps->state_seen) return CP_OK;
    ps->state_seen = 1;
    dt_trim(&s);
    dt_span state = s, detail = {s.p, 0};
    size_t k = dt_find(s, " (");
    if (k != SIZE_MAX && dt_ends(s, ")")) {
        state.n = k;
        detail.p = s.p + k + 2;
        detail.n = s.n - k - 3;
    }
    dt_rtrim(&state);
    t->state = keep(ps, state);
    t->state_detail = keep(ps, detail);
    return t->state && t->state_detail ? CP_OK : oom(ps);
}

static int frame_line(td_parser *ps, cp_td_thread *t, dt_span s)
{
    td_owned *o = ps->o;
    if (o->nframes >= CP_TD_MAX_FRAMES)
        return dt_fail(ps->err, ps->errlen, CP_ELIMIT, "more than %d stack frames", CP_TD_MAX_FRAMES);
    if (cp_grow((void **)&o->frames, &o->cap_frames, o->nframes + 1, sizeof *o->frames, 1024) != CP_OK) return oom(ps);
    dt_trim(&s);
    o->frames[o->nframes].text = keep(ps, s);
    if (!o->frames[o->nframes].text) return oom(ps);
    o->nframes++;
    t->nframes++;
    ps->ownable = 0;
    return CP_OK;
}

/* s: what follows "- ". */
static int lock_line(td_parser *ps, cp_td_thread *t, dt_span s)
{
    static const struct {
        const char *prefix;
        cp_td_lock_kind kind;
    } kinds[] = {
        {"locked ", CP_TD_LOCKED},
        {"waiting on ", CP_TD_WAITING_ON},
        {"waiting to lock ", CP_TD_WAITING_TO_LOCK},
        {"waiting to re-lock in wait() ", CP_TD_WAITING_TO_LOCK}, /* JDK 8 */
        {"parking to wait for ", CP_TD_PARKING},
        {"eliminated ", CP_TD_ELIMINATED},
    };
    cp_td_lock_kind kind = 0;
    for (size_t i = 0; i < CP_ARRAY_LEN(kinds) && !kind; i++)
        if (dt_eat(&s, kinds[i].prefix)) kind = kinds[i].kind;
    if (!kind) {
        if (!ps->ownable || !dt_starts(s, "<")) return CP_OK; /* "- None" and unknown lines */
        kind = CP_TD_OWNABLE;
    }
    td_owned *o = ps->o;
    if (o->nlocks >= CP_TD_MAX_FRAMES)
        return dt_fail(ps->err, ps->errlen, CP_ELIMIT, "more than %d lock lines", CP_TD_MAX_FRAMES);
    if (cp_grow((void **)&o->locks, &o->cap_locks, o->nlocks + 1, sizeof *o->locks, 256) != CP_OK) return oom(ps);

    dt_span addr = {s.p, 0}, cls = {s.p, 0};
    dt_ltrim(&s);
    if (dt_eat(&s, "<")) {
        const char *gt = memchr(s.p, '>', s.n);
        size_t k = gt ? (size_t)(gt - s.p) : s.n;
        if (dt_starts((dt_span){s.p, k}, "0x")) addr = (dt_span){s.p, k};
        dt_skip(&s, gt ? k + 1 : k);
        dt_trim(&s);
        if (dt_eat(&s, "(a ")) {
            if (dt_ends(s, ")")) s.n--;
            cls = s;
        }
    }
    cp_td_lock *l = &o->locks[o->nlocks];
    l->kind = kind;
    l->addr = keep(ps, addr);
    l->cls = keep(ps, cls);
    l->frame = kind != CP_TD_OWNABLE && t->nframes ? (int)(t->nframes - 1) : -1;
    if (!l->addr || !l->cls) return oom(ps);
    o->nlocks++;
    t->nlocks++;
    return CP_OK;
}

static int body_line(td_parser *ps, dt_span s)
{
    cp_td_thread *t = &ps->o->threads[ps->o->td.nthreads - 1];
    dt_trim(&s);
    if (dt_eat(&s, "java.lang.Thread.State:")) return state_line(ps, t, s);
    if (dt_eat(&s, "at ")) return frame_line(ps, t, s);
    if (dt_eat(&s, "- ")) return lock_line(ps, t, s);
    if (dt_starts(s, "Locked ownable synchronizers:")) ps->ownable = 1;
    return CP_OK;
}

/* ---- top-level lines ------------------------------------------------------------------------ */

static int top_line(td_parser *ps, dt_span s)
{
    cp_td *td = &ps->o->td;
    int64_t v;
    dt_rtrim(&s);
    if (td->time_ms < 0 && td->nthreads == 0 && s.n && dt_is_digit(s.p[0])) {
        dt_span t = s;
        int64_t ms;
        if (dt_iso_ms(&t, &ms) && t.n == 0) td->time_ms = ms;
    } else if (dt_eat(&s, "Full thread dump ")) {
        if (td->vm[0] == '\0') {
            if (dt_ends(s, ":")) s.n--;
            td->vm = keep(ps, s);
            if (!td->vm) return oom(ps);
        }
    } else if (dt_starts(s, "_java_thread_list=")) {
        size_t k = dt_find(s, ", length=");
        if (k != SIZE_MAX && td->smr_length < 0) {
            dt_skip(&s, k + 9);
            if (dt_int(&s, &v) && v >= 0) td->smr_length = v;
        }
    } else if (dt_eat(&s, "JNI global refs:") || dt_eat(&s, "JNI global references:")) {
        dt_ltrim(&s);
        if (td->jni_global_refs < 0 && dt_int(&s, &v) && v >= 0) {
            td->jni_global_refs = v;
            size_t k = dt_find(s, "weak refs:");
            if (k != SIZE_MAX) {
                dt_skip(&s, k + 10);
                dt_ltrim(&s);
                if (dt_int(&s, &v) && v >= 0) td->jni_weak_refs = v;
            }
        }
    } else if (dt_starts(s, "Found one Java-level deadlock:")) {
        ps->found_one++;
    } else if (dt_eat(&s, "Found ")) {
        if (dt_int(&s, &v) && v >= 0 && dt_starts(s, " deadlock") && v > ps->found_n) ps->found_n = v;
    }
    return CP_OK;
}

/* ---- state counts ----------------------------------------------------------------------------- */

static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return cp_mix64(h);
}

/* Distinct "<STATE>[ (<detail>)]" keys with their counts, through a hash table so a dump
 * of many distinct (garbage) states stays linear. */
static int count_states(td_parser *ps)
{
    td_owned *o = ps->o;
    size_t n = o->td.nthreads;
    size_t cap = 16;
    while (cap < 2 * n) cap *= 2;
    size_t *slot = calloc(cap, sizeof *slot); /* index + 1 into states, 0 = empty */
    o->states = dt_alloc(&o->arena, n * sizeof *o->states);
    cp_buf key;
    cp_buf_init(&key);
    int st = slot && o->states ? CP_OK : CP_ENOMEM;
    for (size_t i = 0; i < n && st == CP_OK; i++) {
        const cp_td_thread *t = &o->threads[i];
        cp_buf_reset(&key);
        st = cp_buf_puts(&key, t->state);
        if (st == CP_OK && t->state_detail[0]) {
            st = cp_buf_puts(&key, " (");
            if (st == CP_OK) st = cp_buf_puts(&key, t->state_detail);
            if (st == CP_OK) st = cp_buf_putc(&key, ')');
        }
        if (st != CP_OK) break;
        uint64_t h = hash_bytes(key.data, key.len);
        size_t j = (size_t)h & (cap - 1);
        for (;; j = (j + 1) & (cap - 1)) {
            if (slot[j] == 0) {
                td_state *e = &o->states[o->nstates];
                e->key = key.len ? dt_strdup(&o->arena, (const char *)key.data, key.len) : "";
                if (!e->key) {
                    st = CP_ENOMEM;
                    break;
                }
                e->len = key.len;
                e->hash = h;
                e->count = 1;
                slot[j] = ++o->nstates;
                break;
            }
            td_state *e = &o->states[slot[j] - 1];
            if (e->hash == h && e->len == key.len && (key.len == 0 || memcmp(e->key, key.data, key.len) == 0)) {
                e->count++;
                break;
            }
        }
    }
    cp_buf_free(&key);
    free(slot);
    return st == CP_OK ? CP_OK : oom(ps);
}

/* ---- API ---------------------------------------------------------------------------------------- */

void cp_td_free(cp_td *td)
{
    if (!td) return;
    td_owned *o = (td_owned *)td;
    dt_arena_free(&o->arena);
    free(o->threads);
    free(o->frames);
    free(o->locks);
    free(o);
}

int cp_td_parse(const char *text, size_t n, cp_td **out, char *err, size_t errlen)
{
    if (err && errlen) err[0] = '\0';
    if (!out || (!text && n)) return dt_fail(err, errlen, CP_EINVAL, "bad arguments");
    *out = NULL;
    if (n > CP_DUMPTEXT_MAX_BYTES)
        return dt_fail(err, errlen, CP_ELIMIT, "thread dump of %zu bytes (limit %u)", n, CP_DUMPTEXT_MAX_BYTES);
    td_owned *o = calloc(1, sizeof *o);
    if (!o) return dt_fail(err, errlen, CP_ENOMEM, "out of memory");
    dt_arena_init(&o->arena);
    o->td.time_ms = o->td.smr_length = o->td.jni_global_refs = o->td.jni_weak_refs = -1;
    o->td.vm = "";
    td_parser ps = {.o = o, .err = err, .errlen = errlen};

    int st = CP_OK;
    dt_lines it;
    dt_span line;
    dt_lines_init(&it, text, n);
    while (st == CP_OK && dt_next_line(&it, &line)) {
        size_t q;
        if (line.n && line.p[0] == '"' && (q = name_end(line)) > 0) st = new_thread(&ps, line, q);
        else if (line.n && dt_is_space(line.p[0])) st = ps.open ? body_line(&ps, line) : CP_OK;
        else if (line.n == 0) continue;
        else {
            ps.open = 0;
            st = top_line(&ps, line);
        }
    }
    if (st == CP_OK && o->td.nthreads == 0) st = dt_fail(err, errlen, CP_ECORRUPT, "not a thread dump");
    if (st == CP_OK) st = count_states(&ps);
    if (st != CP_OK) {
        cp_td_free(&o->td);
        return st;
    }
    /* the arrays stop moving here: point every thread at its slices */
    size_t f = 0, l = 0;
    for (size_t i = 0; i < o->td.nthreads; i++) {
        cp_td_thread *t = &o->threads[i];
        t->frames = t->nframes ? o->frames + f : NULL;
        t->locks = t->nlocks ? o->locks + l : NULL;
        f += t->nframes;
        l += t->nlocks;
    }
    o->td.threads = o->threads;
    o->td.deadlocks = ps.found_one > (size_t)ps.found_n ? ps.found_one : (size_t)ps.found_n;
    *out = &o->td;
    return CP_OK;
}

void cp_td_state_counts(const cp_td *td, void (*fn)(void *ud, const char *key, size_t count), void *ud)
{
    if (!td) return;
    const td_owned *o = (const td_owned *)td;
    for (size_t i = 0; i < o->nstates; i++) fn(ud, o->states[i].key, o->states[i].count);
}
