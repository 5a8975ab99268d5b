/* dumpjson.c -- thread dumps, top snapshots and GC pauses as the API's JSON (dumpjson.h).
 * (http_pprof_json lives in its own file.)
 *
 * Dump text is untrusted: every string goes through dj_str, which repairs invalid UTF-8
 * (each bad byte becomes U+FFFD) because jansson refuses it. A build failure anywhere
 * (out of memory) makes the whole value NULL, never a half-filled object.
 */
#include "dumpjson.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

/* s as valid UTF-8 in b (NUL-terminated); CP_OK or CP_ENOMEM. */
static int repair(cp_buf *b, const char *s)
{
    cp_buf_reset(b);
    int st = cp_utf8_repair(b, s, strlen(s));
    return st == CP_OK ? cp_buf_putc(b, '\0') : st;
}

json_t *http_json_text(const char *s)
{
    if (!s) s = "";
    size_t n = strlen(s), i = 0, k;
    while (i < n && (k = cp_utf8_seq((const uint8_t *)s + i, n - i)) > 0) i += k;
    if (i == n) return json_stringn_nocheck(s, n);
    cp_buf b;
    cp_buf_init(&b);
    json_t *v = cp_utf8_repair(&b, s, n) == CP_OK ? json_stringn_nocheck((const char *)b.data, b.len) : NULL;
    cp_buf_free(&b);
    return v;
}

/* -1 is "absent" for integers (other negatives, e.g. a nice value, are real). */
static json_t *dj_int(int64_t v) { return v == -1 ? json_null() : json_integer((json_int_t)v); }

/* Doubles that cannot be negative: below 0 (the -1 of "absent") or not finite is null. */
static json_t *dj_real(double v) { return v < 0 || !isfinite(v) ? json_null() : json_real(v); }

/* Sets o[k] = v, remembering a failure (v NULL or the set failing) in *bad. */
static void dj_set(json_t *o, const char *k, json_t *v, int *bad)
{
    if (!v || json_object_set_new_nocheck(o, k, v) != 0) *bad = 1;
}

static void dj_push(json_t *a, json_t *v, int *bad)
{
    if (!v || json_array_append_new(a, v) != 0) *bad = 1;
}

static json_t *dj_done(json_t *v, int bad)
{
    if (bad) {
        json_decref(v);
        return NULL;
    }
    return v;
}

/* ---- thread dump -------------------------------------------------------------------------- */

typedef struct states_ctx {
    json_t *obj;
    cp_buf key;
    int bad;
} states_ctx;

static void on_state(void *ud, const char *key, size_t count)
{
    states_ctx *c = ud;
    if (c->bad) return;
    if (repair(&c->key, key) != CP_OK) {
        c->bad = 1;
        return;
    }
    /* two invalid keys may repair to the same text: their counts add up */
    const char *k = (const char *)c->key.data;
    json_t *old = json_object_get(c->obj, k);
    json_int_t n = (json_int_t)count + (old ? json_integer_value(old) : 0);
    dj_set(c->obj, k, json_integer(n), &c->bad);
}

static const char *wait_kind(cp_td_lock_kind k)
{
    switch (k) {
    case CP_TD_WAITING_ON: return "waiting_on";
    case CP_TD_WAITING_TO_LOCK: return "waiting_to_lock";
    case CP_TD_PARKING: return "parking";
    default: return NULL; /* held: locked, eliminated, ownable */
    }
}

static json_t *thread_json(const cp_td_thread *t)
{
    int bad = 0;
    json_t *o = json_object();
    if (!o) return NULL;
    char tid[24];
    snprintf(tid, sizeof tid, "0x%016" PRIx64, t->tid);
    dj_set(o, "name", http_json_text(t->name), &bad);
    dj_set(o, "seq", dj_int(t->seq), &bad);
    dj_set(o, "daemon", json_boolean(t->daemon), &bad);
    dj_set(o, "priority", dj_int(t->prio), &bad);
    dj_set(o, "os_priority", dj_int(t->os_prio), &bad);
    dj_set(o, "cpu_ms", dj_real(t->cpu_ms), &bad);
    dj_set(o, "elapsed_s", dj_real(t->elapsed_s), &bad);
    dj_set(o, "tid", t->tid ? json_string_nocheck(tid) : json_null(), &bad);
    dj_set(o, "nid", dj_int(t->nid), &bad);
    dj_set(o, "state", http_json_text(t->state), &bad);
    dj_set(o, "state_detail", http_json_text(t->state_detail), &bad);
    dj_set(o, "header_state", http_json_text(t->header_state), &bad);
    json_t *frames = json_array(), *held = json_array(), *waited = json_array();
    for (size_t i = 0; frames && i < t->nframes; i++) dj_push(frames, http_json_text(t->frames[i].text), &bad);
    for (size_t i = 0; held && waited && i < t->nlocks; i++) {
        const cp_td_lock *l = &t->locks[i];
        const char *wk = wait_kind(l->kind);
        json_t *lo = json_object();
        if (!lo) {
            bad = 1;
            break;
        }
        if (wk) dj_set(lo, "kind", json_string_nocheck(wk), &bad);
        dj_set(lo, "addr", http_json_text(l->addr), &bad);
        dj_set(lo, "class", http_json_text(l->cls), &bad);
        dj_set(lo, "frame", l->frame >= 0 ? json_integer(l->frame) : json_null(), &bad);
        dj_push(wk ? waited : held, lo, &bad);
    }
    dj_set(o, "frames", frames, &bad);
    dj_set(o, "locks_held", held, &bad);
    dj_set(o, "locks_waited", waited, &bad);
    return dj_done(o, bad);
}

json_t *http_td_json(const cp_td *td)
{
    if (!td) return NULL;
    int bad = 0;
    json_t *o = json_object();
    if (!o) return NULL;
    dj_set(o, "time_ms", dj_int(td->time_ms), &bad);
    dj_set(o, "vm", http_json_text(td->vm), &bad);
    dj_set(o, "smr_length", dj_int(td->smr_length), &bad);
    dj_set(o, "java_threads", json_integer((json_int_t)td->java_threads), &bad);
    dj_set(o, "jni_global_refs", dj_int(td->jni_global_refs), &bad);
    dj_set(o, "jni_weak_refs", dj_int(td->jni_weak_refs), &bad);
    dj_set(o, "deadlocks", json_integer((json_int_t)td->deadlocks), &bad);
    states_ctx sc = {.obj = json_object()};
    cp_buf_init(&sc.key);
    if (sc.obj) cp_td_state_counts(td, on_state, &sc);
    cp_buf_free(&sc.key);
    if (sc.bad) bad = 1;
    dj_set(o, "states", sc.obj, &bad);
    json_t *threads = json_array();
    for (size_t i = 0; threads && !bad && i < td->nthreads; i++) dj_push(threads, thread_json(&td->threads[i]), &bad);
    dj_set(o, "threads", threads, &bad);
    return dj_done(o, bad);
}

/* ---- top ------------------------------------------------------------------------------------- */

static json_t *row_json(const cp_top_row *r)
{
    int bad = 0;
    json_t *o = json_object();
    if (!o) return NULL;
    char state[2] = {r->state, '\0'};
    if (!memchr("RSDTZI", r->state, 6) || !r->state) state[0] = '?';
    dj_set(o, "pid", dj_int(r->pid), &bad);
    dj_set(o, "user", http_json_text(r->user), &bad);
    dj_set(o, "pr", http_json_text(r->pr), &bad);
    dj_set(o, "ni", json_integer(r->ni), &bad);
    dj_set(o, "virt_kib", dj_real(r->virt_kib), &bad);
    dj_set(o, "res_kib", dj_real(r->res_kib), &bad);
    dj_set(o, "shr_kib", dj_real(r->shr_kib), &bad);
    dj_set(o, "state", json_string_nocheck(state), &bad);
    dj_set(o, "cpu_pct", dj_real(r->cpu_pct), &bad);
    dj_set(o, "mem_pct", dj_real(r->mem_pct), &bad);
    dj_set(o, "time_s", dj_real(r->time_s), &bad);
    dj_set(o, "command", http_json_text(r->command), &bad);
    return dj_done(o, bad);
}

json_t *http_top_json(const cp_top *top)
{
    if (!top) return NULL;
    int bad = 0;
    json_t *o = json_object();
    if (!o) return NULL;
    dj_set(o, "pid", dj_int(top->pid), &bad);
    dj_set(o, "clock", http_json_text(top->clock), &bad);
    dj_set(o, "uptime", http_json_text(top->uptime), &bad);
    dj_set(o, "users", dj_int(top->users), &bad);
    json_t *load = json_array();
    for (int i = 0; load && i < 3; i++) dj_push(load, dj_real(top->load[i]), &bad);
    dj_set(o, "load", load, &bad);

    json_t *th = json_object();
    if (th) {
        dj_set(th, "total", dj_int(top->threads_total), &bad);
        dj_set(th, "running", dj_int(top->running), &bad);
        dj_set(th, "sleeping", dj_int(top->sleeping), &bad);
        dj_set(th, "stopped", dj_int(top->stopped), &bad);
        dj_set(th, "zombie", dj_int(top->zombie), &bad);
    }
    dj_set(o, "threads", th, &bad);

    json_t *cpu = json_object();
    if (cpu) {
        dj_set(cpu, "us", dj_real(top->cpu_us), &bad);
        dj_set(cpu, "sy", dj_real(top->cpu_sy), &bad);
        dj_set(cpu, "ni", dj_real(top->cpu_ni), &bad);
        dj_set(cpu, "id", dj_real(top->cpu_id), &bad);
        dj_set(cpu, "wa", dj_real(top->cpu_wa), &bad);
        dj_set(cpu, "hi", dj_real(top->cpu_hi), &bad);
        dj_set(cpu, "si", dj_real(top->cpu_si), &bad);
        dj_set(cpu, "st", dj_real(top->cpu_st), &bad);
    }
    dj_set(o, "cpu", cpu, &bad);

    json_t *mem = json_object();
    if (mem) {
        dj_set(mem, "total", dj_real(top->mem_total), &bad);
        dj_set(mem, "free", dj_real(top->mem_free), &bad);
        dj_set(mem, "used", dj_real(top->mem_used), &bad);
        dj_set(mem, "buff_cache", dj_real(top->mem_buff_cache), &bad);
        dj_set(mem, "avail", dj_real(top->mem_avail), &bad);
        dj_set(mem, "swap_total", dj_real(top->swap_total), &bad);
        dj_set(mem, "swap_free", dj_real(top->swap_free), &bad);
        dj_set(mem, "swap_used", dj_real(top->swap_used), &bad);
    }
    dj_set(o, "memory_kib", mem, &bad);

    json_t *rows = json_array();
    for (size_t i = 0; rows && !bad && i < top->nrows; i++) dj_push(rows, row_json(&top->rows[i]), &bad);
    dj_set(o, "rows", rows, &bad);
    return dj_done(o, bad);
}

/* ---- GC ----------------------------------------------------------------------------------------- */

json_t *http_gc_event_json(const cp_gc_event *e)
{
    if (!e) return NULL;
    int bad = 0;
    json_t *o = json_object();
    if (!o) return NULL;
    dj_set(o, "time_ms", dj_int(e->time_ms), &bad);
    dj_set(o, "gc_id", dj_int(e->gc_id), &bad);
    dj_set(o, "kind", http_json_text(e->kind), &bad);
    dj_set(o, "cause", http_json_text(e->cause), &bad);
    dj_set(o, "duration_ms", dj_real(e->pause_ms), &bad);
    dj_set(o, "heap_before_kib", dj_int(e->before_kib), &bad);
    dj_set(o, "heap_after_kib", dj_int(e->after_kib), &bad);
    dj_set(o, "heap_capacity_kib", dj_int(e->capacity_kib), &bad);
    dj_set(o, "uptime_s", dj_real(e->uptime_s), &bad);
    return dj_done(o, bad);
}
