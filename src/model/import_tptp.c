/* import_tptp.c -- TPTP messages (.trcbin / .trcxml, cp_tptp.h) to calls, per spec §2.6:
 * per thread, method entries and exits nest (paired by ticket when non-zero, else by
 * stack order); an entry with nothing open below it on its thread starts a call, whose
 * tree is everything entered until its exit. Object allocations, monitor waits and GC
 * intervals inside a call give its memory, wait and suspension; definitions give the
 * method texts; node / process / agent messages the identity. */
#include "import_internal.h"

#include <expat.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GC_KEEP 100000 /* closed GC intervals kept for the open calls' suspension */

typedef struct entry {
    int64_t ticket, start, cpu;
} entry;

typedef struct imp_thread {
    int64_t id;
    size_t name_off, name_len;   /* in imp_tptp.strs */
    entry *stack;
    size_t depth, cap;
    imp_call call;               /* active while depth > 0 */
    int64_t memory, wait_ticks;  /* of the open call */
    int64_t wait_start;
    int waiting;
} imp_thread;

typedef struct cls {
    size_t name_off, name_len, src_off, src_len;
} cls;

typedef struct mth {
    size_t name_off, name_len, sig_off, sig_len;
    int64_t line, class_id;
    int32_t word;                /* -1 until first entered */
} mth;

typedef struct gc_iv {
    int64_t start, end;
} gc_iv;

/* Attribute positions, looked up by name in the schema once. */
typedef struct ix {
    int node_host, proc_name, proc_time, agent_name;
    int ts_thread, ts_name;
    int cd_id, cd_source, cd_name;
    int md_name, md_sig, md_line, md_class, md_id;
    int en_thread, en_time, en_method, en_ticket, en_cpu;
    int ex_thread, ex_time, ex_ticket, ex_cpu;
    int oa_thread, oa_size;
    int mon_thread, mon_time;     /* the same positions in 1032..1035 */
    int gc_time;                  /* 1023 and 1027 */
} ix;

struct imp_tptp {
    ix ix;
    int8_t time_at[CP_TPTP_CUSTOM + 1]; /* per known id: index of `time`, -1 none, -2 not looked up */
    cp_u64map threads;           /* thread id -> index in th */
    imp_thread *th;
    size_t nth, capth;
    cp_u64map classes;           /* class id -> index in cl */
    cls *cl;
    size_t ncl, capcl;
    cp_u64map methods;           /* method id -> index in mt */
    mth *mt;
    size_t nmt, capmt;
    cp_buf strs;                 /* definitions' and threads' texts, at most max_def_bytes */
    size_t max_def_bytes;
    int64_t freq;
    int64_t last_time;
    int has_time;
    gc_iv *gc;
    size_t ngc, capgc;
    int gc_open;
    int64_t gc_start;
    size_t open_calls;
    cp_blob_pause *pauses;
    size_t cappauses;
    XML_Parser xp;               /* custom bodies */
    struct {                     /* the cloudprof.param being parsed */
        int seen;
        int64_t thread, ticket;
        int call_scope;
        cp_buf name, value;
    } cp;
};

/* ---- setup --------------------------------------------------------------------------------- */

static int at(uint16_t id, const char *name)
{
    const cp_tptp_def *d = cp_tptp_def_of(id);
    return d ? cp_tptp_attr_index(d, name) : -1;
}

static int ix_init(ix *x)
{
    x->node_host = at(CP_TPTP_NODE, "hostname");
    x->proc_name = at(CP_TPTP_PROCESS_CREATE, "name");
    x->proc_time = at(CP_TPTP_PROCESS_CREATE, "time");
    x->agent_name = at(CP_TPTP_AGENT_CREATE, "agentName");
    x->ts_thread = at(CP_TPTP_THREAD_START, "threadId");
    x->ts_name = at(CP_TPTP_THREAD_START, "threadName");
    x->cd_id = at(CP_TPTP_CLASS_DEF, "classId");
    x->cd_source = at(CP_TPTP_CLASS_DEF, "sourceName");
    x->cd_name = at(CP_TPTP_CLASS_DEF, "name");
    x->md_name = at(CP_TPTP_METHOD_DEF, "name");
    x->md_sig = at(CP_TPTP_METHOD_DEF, "signature");
    x->md_line = at(CP_TPTP_METHOD_DEF, "startLineNumber");
    x->md_class = at(CP_TPTP_METHOD_DEF, "classIdRef");
    x->md_id = at(CP_TPTP_METHOD_DEF, "methodId");
    x->en_thread = at(CP_TPTP_METHOD_ENTRY, "threadIdRef");
    x->en_time = at(CP_TPTP_METHOD_ENTRY, "time");
    x->en_method = at(CP_TPTP_METHOD_ENTRY, "methodIdRef");
    x->en_ticket = at(CP_TPTP_METHOD_ENTRY, "ticket");
    x->en_cpu = at(CP_TPTP_METHOD_ENTRY, "threadCpuTime");
    x->ex_thread = at(CP_TPTP_METHOD_EXIT, "threadIdRef");
    x->ex_time = at(CP_TPTP_METHOD_EXIT, "time");
    x->ex_ticket = at(CP_TPTP_METHOD_EXIT, "ticket");
    x->ex_cpu = at(CP_TPTP_METHOD_EXIT, "threadCpuTime");
    x->oa_thread = at(CP_TPTP_OBJ_ALLOC, "threadIdRef");
    x->oa_size = at(CP_TPTP_OBJ_ALLOC, "size");
    x->mon_thread = at(CP_TPTP_MON_WAIT, "threadIdRef");
    x->mon_time = at(CP_TPTP_MON_WAIT, "time");
    x->gc_time = at(CP_TPTP_GC_START, "time");
    const int *v = &x->node_host;
    for (size_t i = 0; i < sizeof *x / sizeof(int); i++)
        if (v[i] < 0) return CP_EINVAL; /* the schema and this file disagree: a bug, not input */
    /* 1032..1035 and 1027 share the positions of 1032 and 1023 */
    if (at(CP_TPTP_MON_CONTENDED_ENTERED, "time") != x->mon_time || at(CP_TPTP_GC_FINISH, "time") != x->gc_time)
        return CP_EINVAL;
    return CP_OK;
}

static void XMLCALL custom_start(void *ud, const XML_Char *name, const XML_Char **attrs);

static int on_msg(void *ud, const cp_tptp_msg *m);

int imp_tptp_new(cp_import *im, cp_tptp_form form)
{
    imp_tptp *tp = calloc(1, sizeof *tp);
    if (!tp) return CP_ENOMEM;
    im->tptp = tp;
    if (ix_init(&tp->ix) != CP_OK) return CP_EINVAL;
    memset(tp->time_at, -2, sizeof tp->time_at);
    cp_u64map_init(&tp->threads);
    cp_u64map_init(&tp->classes);
    cp_u64map_init(&tp->methods);
    cp_buf_init(&tp->strs);
    cp_buf_init(&tp->cp.name);
    cp_buf_init(&tp->cp.value);
    tp->freq = 1000000000;
    tp->max_def_bytes = im->o.max_def_bytes;
    cp_tptp_sink sink = {.ud = im, .on_msg = on_msg};
    im->tptp_dec = cp_tptp_dec_new(form, NULL, &sink);
    tp->xp = XML_ParserCreate("UTF-8");
    if (!im->tptp_dec || !tp->xp) return CP_ENOMEM;
    return CP_OK;
}

void imp_tptp_free(cp_import *im)
{
    imp_tptp *tp = im->tptp;
    if (im->tptp_dec) cp_tptp_dec_free(im->tptp_dec);
    im->tptp_dec = NULL;
    if (!tp) return;
    for (size_t i = 0; i < tp->nth; i++) {
        free(tp->th[i].stack);
        imp_call_free(&tp->th[i].call);
    }
    free(tp->th);
    free(tp->cl);
    free(tp->mt);
    free(tp->gc);
    free(tp->pauses);
    cp_u64map_free(&tp->threads);
    cp_u64map_free(&tp->classes);
    cp_u64map_free(&tp->methods);
    cp_buf_free(&tp->strs);
    cp_buf_free(&tp->cp.name);
    cp_buf_free(&tp->cp.value);
    if (tp->xp) XML_ParserFree(tp->xp);
    free(tp);
    im->tptp = NULL;
}

/* ---- tables -------------------------------------------------------------------------------- */

static int keep(imp_tptp *tp, cp_tptp_text t, size_t *off, size_t *len)
{
    if (t.len > tp->max_def_bytes - tp->strs.len) return CP_ELIMIT;
    *off = tp->strs.len;
    *len = t.len;
    return cp_buf_append(&tp->strs, t.p, t.len);
}

static int def_fail(cp_import *im, int st, const cp_tptp_msg *m)
{
    if (st == CP_ELIMIT)
        return imp_fail(im, st, "definitions take more than %zu bytes at offset %" PRIu64, im->o.max_def_bytes, m->offset);
    return imp_fail(im, st, "out of memory");
}

static imp_thread *thread_of(cp_import *im, int64_t id)
{
    imp_tptp *tp = im->tptp;
    uint64_t k;
    if (cp_u64map_get(&tp->threads, (uint64_t)id, &k)) return &tp->th[k];
    if (tp->nth >= im->o.max_threads) {
        imp_fail(im, CP_ELIMIT, "more than %zu threads", im->o.max_threads);
        return NULL;
    }
    if (cp_grow((void **)&tp->th, &tp->capth, tp->nth + 1, sizeof *tp->th, 16) != CP_OK ||
        cp_u64map_put(&tp->threads, (uint64_t)id, tp->nth) != CP_OK) {
        imp_fail(im, CP_ENOMEM, "out of memory");
        return NULL;
    }
    imp_thread *t = &tp->th[tp->nth++];
    memset(t, 0, sizeof *t);
    t->id = id;
    imp_call_init(&t->call);
    im->threads = tp->nth;
    return t;
}

static int class_def(cp_import *im, const cp_tptp_msg *m)
{
    imp_tptp *tp = im->tptp;
    const ix *x = &tp->ix;
    uint64_t k;
    if (!cp_u64map_get(&tp->classes, (uint64_t)m->v[x->cd_id].i, &k)) {
        if (tp->ncl + tp->nmt >= im->o.max_methods) return imp_fail(im, CP_ELIMIT, "more than %zu definitions", im->o.max_methods);
        if (cp_grow((void **)&tp->cl, &tp->capcl, tp->ncl + 1, sizeof *tp->cl, 64) != CP_OK ||
            cp_u64map_put(&tp->classes, (uint64_t)m->v[x->cd_id].i, tp->ncl) != CP_OK)
            return imp_fail(im, CP_ENOMEM, "out of memory");
        k = tp->ncl++;
    }
    cls *c = &tp->cl[k];
    int st = keep(tp, m->v[x->cd_name].s, &c->name_off, &c->name_len);
    if (st == CP_OK) st = keep(tp, m->v[x->cd_source].s, &c->src_off, &c->src_len);
    if (st != CP_OK) return def_fail(im, st, m);
    return CP_OK;
}

static int method_def(cp_import *im, const cp_tptp_msg *m)
{
    imp_tptp *tp = im->tptp;
    const ix *x = &tp->ix;
    uint64_t k;
    if (!cp_u64map_get(&tp->methods, (uint64_t)m->v[x->md_id].i, &k)) {
        if (tp->ncl + tp->nmt >= im->o.max_methods) return imp_fail(im, CP_ELIMIT, "more than %zu definitions", im->o.max_methods);
        if (cp_grow((void **)&tp->mt, &tp->capmt, tp->nmt + 1, sizeof *tp->mt, 64) != CP_OK ||
            cp_u64map_put(&tp->methods, (uint64_t)m->v[x->md_id].i, tp->nmt) != CP_OK)
            return imp_fail(im, CP_ENOMEM, "out of memory");
        k = tp->nmt++;
        im->methods = tp->nmt;
    }
    mth *d = &tp->mt[k];
    int st = keep(tp, m->v[x->md_name].s, &d->name_off, &d->name_len);
    if (st == CP_OK) st = keep(tp, m->v[x->md_sig].s, &d->sig_off, &d->sig_len);
    if (st != CP_OK) return def_fail(im, st, m);
    d->line = m->v[x->md_line].i;
    d->class_id = m->v[x->md_class].i;
    d->word = -1; /* a redefinition may change the text */
    return CP_OK;
}

/* The word of a method id: "<class>.<name><signature> (<source>:<line>)" (spec §2.6);
 * the source part only when the class names one; "#<id>" for an undefined method. */
static int method_word(cp_import *im, int64_t id, int32_t *word)
{
    imp_tptp *tp = im->tptp;
    uint64_t k;
    cp_buf *b = &im->tmp;
    cp_buf_reset(b);
    int st;
    if (!cp_u64map_get(&tp->methods, (uint64_t)id, &k)) {
        st = cp_buf_printf(b, "#%" PRId64, id);
    } else {
        mth *d = &tp->mt[k];
        if (d->word >= 0) {
            *word = d->word;
            return CP_OK;
        }
        const char *s = (const char *)tp->strs.data;
        uint64_t ci;
        const cls *c = cp_u64map_get(&tp->classes, (uint64_t)d->class_id, &ci) ? &tp->cl[ci] : NULL;
        st = CP_OK;
        if (c && c->name_len) {
            st = cp_buf_append(b, s + c->name_off, c->name_len);
            if (st == CP_OK) st = cp_buf_putc(b, '.');
        }
        if (st == CP_OK) st = cp_buf_append(b, s + d->name_off, d->name_len);
        if (st == CP_OK) st = cp_buf_append(b, s + d->sig_off, d->sig_len);
        if (st == CP_OK && c && c->src_len) {
            st = cp_buf_puts(b, " (");
            if (st == CP_OK) st = cp_buf_append(b, s + c->src_off, c->src_len);
            if (st == CP_OK && d->line > 0) st = cp_buf_printf(b, ":%" PRId64, d->line);
            if (st == CP_OK) st = cp_buf_putc(b, ')');
        }
    }
    if (st == CP_OK) st = imp_words_id(&im->words, (const char *)b->data, b->len, word);
    if (st != CP_OK) return imp_fail(im, st, st == CP_ELIMIT ? "more than 2^24 distinct method texts" : "out of memory");
    if (cp_u64map_get(&tp->methods, (uint64_t)id, &k)) tp->mt[k].word = *word;
    return CP_OK;
}

/* ---- time ---------------------------------------------------------------------------------- */

static int64_t ms_of(const imp_tptp *tp, int64_t ticks) { return imp_scale(ticks, 1000, tp->freq); }

/* Overlap of [a, b] with the GC intervals (an open one runs until b), in ticks. The
 * intervals come in file order and may overlap: merged on the fly after sorting by
 * start would be exact; they rarely overlap, so overlapping parts are cut instead. */
static int64_t gc_overlap(const imp_tptp *tp, int64_t a, int64_t b, int64_t *cover_end)
{
    int64_t sum = 0, done = a; /* everything before `done` is counted */
    for (size_t i = 0; i <= tp->ngc; i++) {
        int64_t s, e;
        if (i < tp->ngc) s = tp->gc[i].start, e = tp->gc[i].end;
        else if (tp->gc_open) s = tp->gc_start, e = b;
        else break;
        if (s < done) s = done;
        if (e > b) e = b;
        if (e > s) {
            sum += e - s;
            done = e;
        }
    }
    if (cover_end) *cover_end = done;
    return sum;
}

/* The pauses overlapping [a, b] for the blob, absolute ms, sorted by end. */
static size_t gc_pauses(cp_import *im, int64_t a, int64_t b)
{
    imp_tptp *tp = im->tptp;
    size_t n = 0;
    for (size_t i = 0; i <= tp->ngc; i++) {
        int64_t s, e;
        if (i < tp->ngc) s = tp->gc[i].start, e = tp->gc[i].end;
        else if (tp->gc_open) s = tp->gc_start, e = b;
        else break;
        if (e < a || s > b) continue;
        if (cp_grow((void **)&tp->pauses, &tp->cappauses, n + 1, sizeof *tp->pauses, 8) != CP_OK) break;
        int64_t d = ms_of(tp, e - s);
        tp->pauses[n].end_ms = ms_of(tp, e);
        tp->pauses[n].duration_ms = d > INT32_MAX ? INT32_MAX : (int32_t)d;
        /* keep sorted by end: intervals arrive by start, so a later one rarely ends earlier */
        for (size_t j = n; j > 0 && tp->pauses[j].end_ms < tp->pauses[j - 1].end_ms; j--) {
            cp_blob_pause t = tp->pauses[j];
            tp->pauses[j] = tp->pauses[j - 1];
            tp->pauses[j - 1] = t;
        }
        n++;
    }
    return n;
}

static void gc_prune(imp_tptp *tp)
{
    if (tp->open_calls == 0) tp->ngc = 0;
    else if (tp->ngc >= GC_KEEP) { /* keep the newer half: calls open that long are rare */
        memmove(tp->gc, tp->gc + tp->ngc / 2, (tp->ngc - tp->ngc / 2) * sizeof *tp->gc);
        tp->ngc -= tp->ngc / 2;
    }
}

/* ---- calls --------------------------------------------------------------------------------- */

static int call_start(cp_import *im, imp_thread *t, const cp_tptp_msg *m, int64_t time)
{
    imp_tptp *tp = im->tptp;
    int st = imp_call_begin(im, &t->call, ms_of(tp, time), t->id, m->offset);
    if (st != CP_OK) return imp_fail(im, st, "out of memory");
    t->call.start_ticks = time;
    t->memory = 0;
    t->wait_ticks = 0;
    t->waiting = 0;
    tp->open_calls++;
    return CP_OK;
}

/* Closes the top entry at `time` (its EXIT event); the last one finishes the call. */
static int pop_entry(cp_import *im, imp_thread *t, int64_t time, int64_t exit_cpu, int incomplete)
{
    imp_tptp *tp = im->tptp;
    entry e = t->stack[--t->depth];
    int st = imp_call_exit(im, &t->call, ms_of(tp, time - t->call.start_ticks));
    if (st != CP_OK) return imp_fail(im, st, "out of memory");
    if (t->depth > 0) return CP_OK;
    imp_done d;
    memset(&d, 0, sizeof d);
    d.duration_ms = ms_of(tp, time - e.start);
    d.method_word = t->call.root_word;
    d.thread = t->name_len ? (const char *)tp->strs.data + t->name_off : NULL;
    d.thread_len = t->name_len;
    d.cpu_ms = !incomplete && e.cpu && exit_cpu ? ms_of(tp, exit_cpu - e.cpu) : 0;
    d.wait_ms = ms_of(tp, t->wait_ticks);
    d.memory = t->memory;
    d.suspend_ms = ms_of(tp, gc_overlap(tp, e.start, time, NULL));
    d.calls = (int64_t)t->call.entries;
    d.npauses = gc_pauses(im, e.start, time); /* may move tp->pauses */
    d.pauses = tp->pauses;
    d.record_index = (int32_t)(im->record_ordinal++ & 0x7FFFFFFF);
    if (incomplete) {
        st = imp_call_param(im, &t->call, "import.incomplete", "true", 4);
        im->incomplete++;
        if (st != CP_OK) return imp_fail(im, st, "out of memory");
    }
    tp->open_calls--;
    st = imp_call_finish(im, &t->call, &d);
    gc_prune(tp);
    return st;
}

static int method_entry(cp_import *im, const cp_tptp_msg *m)
{
    imp_tptp *tp = im->tptp;
    const ix *x = &tp->ix;
    imp_thread *t = thread_of(im, m->v[x->en_thread].i);
    if (!t) return im->status;
    int64_t time = m->v[x->en_time].i;
    if (t->depth >= IMP_MAX_STACK)
        return imp_fail(im, CP_ELIMIT, "more than %d open entries on thread %" PRId64 " at offset %" PRIu64,
                        IMP_MAX_STACK, t->id, m->offset);
    int32_t word;
    int st = method_word(im, m->v[x->en_method].i, &word);
    if (st != CP_OK) return st;
    if (t->depth == 0 && (st = call_start(im, t, m, time)) != CP_OK) return st;
    if (cp_grow((void **)&t->stack, &t->cap, t->depth + 1, sizeof *t->stack, 16) != CP_OK)
        return imp_fail(im, CP_ENOMEM, "out of memory");
    t->stack[t->depth++] = (entry){m->v[x->en_ticket].i, time, m->v[x->en_cpu].i};
    st = imp_call_enter(im, &t->call, ms_of(tp, time - t->call.start_ticks), word);
    return st == CP_OK ? CP_OK : imp_fail(im, st, "out of memory");
}

static int method_exit(cp_import *im, const cp_tptp_msg *m)
{
    imp_tptp *tp = im->tptp;
    const ix *x = &tp->ix;
    imp_thread *t = thread_of(im, m->v[x->ex_thread].i);
    if (!t) return im->status;
    if (t->depth == 0) return CP_OK; /* an exit of something entered before the trace began */
    int64_t ticket = m->v[x->ex_ticket].i, time = m->v[x->ex_time].i;
    size_t k = t->depth; /* entries k-1 .. depth-1 close */
    if (ticket != 0) {
        while (k > 0 && t->stack[k - 1].ticket != ticket) k--;
        if (k == 0) return CP_OK; /* no such entry open: nothing to close */
    }
    k = k ? k - 1 : 0;
    while (t->depth > k) {
        int st = pop_entry(im, t, time, m->v[x->ex_cpu].i, 0);
        if (st != CP_OK) return st;
    }
    return CP_OK;
}

static void monitor(cp_import *im, const cp_tptp_msg *m, int start)
{
    imp_tptp *tp = im->tptp;
    imp_thread *t = thread_of(im, m->v[tp->ix.mon_thread].i);
    if (!t || t->depth == 0) return;
    int64_t time = m->v[tp->ix.mon_time].i;
    if (start) {
        t->wait_start = time;
        t->waiting = 1;
    } else if (t->waiting) {
        if (time > t->wait_start) t->wait_ticks += time - t->wait_start;
        t->waiting = 0;
    }
}

static int gc_event(cp_import *im, int64_t time, int start)
{
    imp_tptp *tp = im->tptp;
    if (start) {
        if (!tp->gc_open) tp->gc_start = time;
        tp->gc_open = 1;
        return CP_OK;
    }
    if (!tp->gc_open) return CP_OK;
    tp->gc_open = 0;
    if (!tp->open_calls) return CP_OK; /* no call can overlap it any more */
    if (cp_grow((void **)&tp->gc, &tp->capgc, tp->ngc + 1, sizeof *tp->gc, 16) != CP_OK)
        return imp_fail(im, CP_ENOMEM, "out of memory");
    tp->gc[tp->ngc++] = (gc_iv){tp->gc_start, time};
    gc_prune(tp);
    return CP_OK;
}

/* ---- custom messages: <cloudprof.param .../> --------------------------------------------- */

static void XMLCALL custom_start(void *ud, const XML_Char *name, const XML_Char **attrs)
{
    imp_tptp *tp = ud;
    if (strcmp(name, "cloudprof.param") != 0) return;
    tp->cp.seen = 1;
    for (size_t i = 0; attrs[i] && attrs[i + 1]; i += 2) {
        const char *k = attrs[i], *v = attrs[i + 1];
        if (!strcmp(k, "threadIdRef")) tp->cp.thread = strtoll(v, NULL, 10);
        else if (!strcmp(k, "ticket")) tp->cp.ticket = strtoll(v, NULL, 10);
        else if (!strcmp(k, "scope")) tp->cp.call_scope = !strcmp(v, "call");
        else if (!strcmp(k, "name")) cp_buf_puts(&tp->cp.name, v);
        else if (!strcmp(k, "value")) cp_buf_puts(&tp->cp.value, v);
    }
}

/* A custom body that is one cloudprof.param element attaches a parameter to the open call
 * of its thread: a TAG on the top entry (scope node, the default) or a call param (scope
 * call). Other bodies are kept for nothing: they make no calls (spec §2.6). */
static int custom(cp_import *im, const cp_tptp_msg *m)
{
    imp_tptp *tp = im->tptp;
    cp_tptp_text body = m->v[0].s;
    if (body.len < 17 || memcmp(body.p, "<cloudprof.param", 16) != 0) return CP_OK;
    tp->cp.seen = 0;
    tp->cp.thread = tp->cp.ticket = 0;
    tp->cp.call_scope = 0;
    cp_buf_reset(&tp->cp.name);
    cp_buf_reset(&tp->cp.value);
    XML_ParserReset(tp->xp, "UTF-8");
    XML_SetUserData(tp->xp, tp);
    XML_SetStartElementHandler(tp->xp, custom_start);
    if (body.len > INT32_MAX || XML_Parse(tp->xp, body.p, (int)body.len, 1) != XML_STATUS_OK || !tp->cp.seen ||
        !tp->cp.name.len)
        return CP_OK; /* not ours after all: a custom message like any other */
    uint64_t k;
    if (!cp_u64map_get(&tp->threads, (uint64_t)tp->cp.thread, &k)) return CP_OK;
    imp_thread *t = &tp->th[k];
    if (t->depth == 0) return CP_OK;
    cp_buf_putc(&tp->cp.name, 0);
    const char *name = (const char *)tp->cp.name.data;
    const char *val = tp->cp.value.len ? (const char *)tp->cp.value.data : "";
    int st;
    if (tp->cp.call_scope) {
        st = imp_call_param(im, &t->call, name, val, tp->cp.value.len);
    } else {
        int32_t w;
        st = imp_words_id(&im->words, name, tp->cp.name.len - 1, &w);
        if (st == CP_OK) st = imp_call_tag(im, &t->call, w, val, tp->cp.value.len);
    }
    return st == CP_OK ? CP_OK : imp_fail(im, st, "out of memory");
}

/* ---- the message loop ---------------------------------------------------------------------- */

static int set_buf(cp_buf *b, cp_tptp_text t)
{
    cp_buf_reset(b);
    return cp_buf_append(b, t.p, t.len);
}

static int on_msg(void *ud, const cp_tptp_msg *m)
{
    cp_import *im = ud;
    imp_tptp *tp = im->tptp;
    const ix *x = &tp->ix;
    if (!m->def) return 0; /* unknown: counted by the decoder */
    if (m->id <= CP_TPTP_CUSTOM) {
        int8_t *ta = &tp->time_at[m->id];
        if (*ta == -2) *ta = (int8_t)cp_tptp_attr_index(m->def, "time");
        if (*ta >= 0) {
            tp->last_time = m->v[*ta].i;
            tp->has_time = 1;
        }
    }
    int st = CP_OK;
    switch (m->id) {
    case CP_TPTP_FREQUENCY:
        if (m->v[0].i > 0) tp->freq = m->v[0].i;
        break;
    case CP_TPTP_NODE:
        st = set_buf(&im->file_host, m->v[x->node_host].s);
        break;
    case CP_TPTP_PROCESS_CREATE:
        st = set_buf(&im->file_process, m->v[x->proc_name].s);
        im->file_process_ms = ms_of(tp, m->v[x->proc_time].i);
        im->has_process_ms = 1;
        break;
    case CP_TPTP_AGENT_CREATE:
        st = set_buf(&im->file_agent, m->v[x->agent_name].s);
        break;
    case CP_TPTP_THREAD_START: {
        imp_thread *t = thread_of(im, m->v[x->ts_thread].i);
        if (!t) return -1;
        if ((st = keep(tp, m->v[x->ts_name].s, &t->name_off, &t->name_len)) != CP_OK) return def_fail(im, st, m), -1;
        break;
    }
    case CP_TPTP_CLASS_DEF: return class_def(im, m) == CP_OK ? 0 : -1;
    case CP_TPTP_METHOD_DEF: return method_def(im, m) == CP_OK ? 0 : -1;
    case CP_TPTP_METHOD_ENTRY: return method_entry(im, m) == CP_OK ? 0 : -1;
    case CP_TPTP_METHOD_EXIT: return method_exit(im, m) == CP_OK ? 0 : -1;
    case CP_TPTP_OBJ_ALLOC: {
        uint64_t k;
        if (cp_u64map_get(&tp->threads, (uint64_t)m->v[x->oa_thread].i, &k) && tp->th[k].depth)
            tp->th[k].memory += m->v[x->oa_size].i;
        break;
    }
    case CP_TPTP_MON_WAIT:
    case CP_TPTP_MON_CONTENDED_ENTER: monitor(im, m, 1); break;
    case CP_TPTP_MON_WAITED:
    case CP_TPTP_MON_CONTENDED_ENTERED: monitor(im, m, 0); break;
    case CP_TPTP_GC_START: return gc_event(im, m->v[x->gc_time].i, 1) == CP_OK ? 0 : -1;
    case CP_TPTP_GC_FINISH: return gc_event(im, m->v[x->gc_time].i, 0) == CP_OK ? 0 : -1;
    case CP_TPTP_CUSTOM: return custom(im, m) == CP_OK ? 0 : -1;
    default: break; /* aggregated, heap and the rest: counted, no calls */
    }
    if (st != CP_OK) {
        imp_fail(im, st, "out of memory");
        return -1;
    }
    return im->failed ? -1 : 0;
}

/* Entries still open at the end close at the file's last timestamp (spec §2.6). */
int imp_tptp_finish(cp_import *im)
{
    imp_tptp *tp = im->tptp;
    for (size_t i = 0; i < tp->nth; i++) {
        imp_thread *t = &tp->th[i];
        int64_t end = tp->has_time ? tp->last_time : 0;
        while (t->depth > 0) {
            if (end < t->stack[t->depth - 1].start) end = t->stack[t->depth - 1].start;
            int st = pop_entry(im, t, end, 0, t->depth == 1);
            if (st != CP_OK) return st;
        }
    }
    return CP_OK;
}
