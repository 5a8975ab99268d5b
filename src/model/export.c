/* export.c -- calls (a cp_call and its trace blob) written as a TPTP trace through the
 * encoders of cp_tptp.h. The layout is in cp_import.h; the goal is that cp_import of the
 * result gives back the same calls: method texts, times to the ms, threads, tree shapes
 * and params. */
#include "common/cp_map.h"
#include "model/cp_import.h"
#include "streams/cp_streams.h"
#include "streams/cp_tptp.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FREQ 1000000 /* µs: our times are ms, so every time is exact */

struct cp_export {
    cp_tptp_enc enc;
    int begun;
    cp_u64map methods;      /* hash of the method text -> method id */
    cp_u64map classes;      /* hash of class name + source -> class id */
    cp_u64map threads;      /* hash of pod + thread -> thread id */
    int64_t next_method, next_class, next_thread, next_ticket;
    int64_t first_ms, last_ms;
    cp_buf tmp, esc;
};

/* ---- messages ------------------------------------------------------------------------ */

static void msg_init(cp_tptp_msg *m, uint16_t id)
{
    memset(m, 0, sizeof *m);
    m->id = id;
    m->def = cp_tptp_def_of(id);
}

static void put_i(cp_tptp_msg *m, const char *name, int64_t v)
{
    int i = cp_tptp_attr_index(m->def, name);
    if (i >= 0) m->v[i].i = v;
}

static void put_s(cp_tptp_msg *m, const char *name, const char *s, size_t n)
{
    int i = cp_tptp_attr_index(m->def, name);
    if (i >= 0) m->v[i].s = (cp_tptp_text){s, n};
}

static void put_z(cp_tptp_msg *m, const char *name, const char *s) { put_s(m, name, s, strlen(s)); }

static int emit(cp_export *e, const cp_tptp_msg *m, cp_buf *out, char *err, size_t errlen)
{
    int st = cp_tptp_enc_msg(&e->enc, m, out);
    if (st != CP_OK) cp_set_err(err, errlen, "export: %s", e->enc.err[0] ? e->enc.err : cp_strstatus(st));
    return st;
}

static uint64_t fnv(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
    return h;
}
#define FNV0 0xcbf29ce484222325ULL

/* ---- setup ------------------------------------------------------------------------------ */

cp_export *cp_export_new(int xml)
{
    cp_export *e = calloc(1, sizeof *e);
    if (!e) return NULL;
    cp_tptp_enc_init(&e->enc, xml ? CP_TPTP_XML : CP_TPTP_BIN);
    cp_u64map_init(&e->methods);
    cp_u64map_init(&e->classes);
    cp_u64map_init(&e->threads);
    cp_buf_init(&e->tmp);
    cp_buf_init(&e->esc);
    e->next_method = e->next_class = e->next_thread = 1;
    return e;
}

void cp_export_free(cp_export *e)
{
    if (!e) return;
    cp_u64map_free(&e->methods);
    cp_u64map_free(&e->classes);
    cp_u64map_free(&e->threads);
    cp_buf_free(&e->tmp);
    cp_buf_free(&e->esc);
    free(e);
}

/* A pod named "<host>_<ms>" (what an agent's pod string and a TPTP import look like)
 * gives the host and the process start back; otherwise the pod and its restart. */
static void split_pod(const cp_call *c, size_t *host_len, int64_t *start_ms)
{
    *host_len = c->pod_len;
    *start_ms = c->restart_ms;
    size_t i = c->pod_len;
    while (i > 0 && c->pod[i - 1] >= '0' && c->pod[i - 1] <= '9') i--;
    size_t digits = c->pod_len - i;
    if (i < 2 || c->pod[i - 1] != '_' || digits == 0 || digits > 15 || c->pod[i] == '0') return;
    *host_len = i - 1;
    *start_ms = strtoll(c->pod + i, NULL, 10);
}

static int prelude(cp_export *e, const cp_call *c, cp_buf *out, char *err, size_t errlen)
{
    int st = cp_tptp_enc_begin(&e->enc, out);
    if (st != CP_OK) return st;
    cp_tptp_msg m;
    msg_init(&m, CP_TPTP_FREQUENCY);
    m.v[0].i = FREQ;
    if ((st = emit(e, &m, out, err, errlen)) != CP_OK) return st;
    size_t host_len = 0;
    int64_t start_ms = 0, ts = 0;
    const char *host = "cloudprof", *svc = "cloudprof";
    size_t svc_len = strlen(svc);
    if (c) {
        split_pod(c, &host_len, &start_ms);
        host = c->pod;
        svc = c->service, svc_len = c->service_len;
        ts = c->ts_ms;
    } else {
        host_len = strlen(host);
    }
    msg_init(&m, CP_TPTP_NODE);
    put_z(&m, "nodeId", "node-1");
    put_s(&m, "hostname", host, host_len);
    put_i(&m, "time", start_ms * 1000);
    if ((st = emit(e, &m, out, err, errlen)) != CP_OK) return st;
    msg_init(&m, CP_TPTP_PROCESS_CREATE);
    put_z(&m, "processId", "process-1");
    put_s(&m, "name", svc, svc_len);
    put_z(&m, "nodeIdRef", "node-1");
    put_i(&m, "time", start_ms * 1000);
    if ((st = emit(e, &m, out, err, errlen)) != CP_OK) return st;
    msg_init(&m, CP_TPTP_AGENT_CREATE);
    put_z(&m, "agentId", "agent-1");
    put_z(&m, "processIdRef", "process-1");
    put_s(&m, "agentName", svc, svc_len);
    put_z(&m, "agentType", "cloudprof");
    put_i(&m, "time", start_ms * 1000);
    put_z(&m, "version", "1");
    if ((st = emit(e, &m, out, err, errlen)) != CP_OK) return st;
    msg_init(&m, CP_TPTP_TRACE_START);
    put_z(&m, "traceId", "trace-1");
    put_z(&m, "agentIdRef", "agent-1");
    put_i(&m, "time", ts * 1000);
    e->first_ms = e->last_ms = ts;
    e->begun = 1;
    return emit(e, &m, out, err, errlen);
}

/* ---- methods ----------------------------------------------------------------------------- */

typedef struct parts {
    const char *cls, *name, *sig, *src;
    size_t cls_len, name_len, sig_len, src_len;
    int64_t line;
} parts;

/* The inverse of the import's "<class>.<name><signature> (<source>:<line>)": a trailing
 * " (S:L)" (L a positive decimal without leading zero) or " (S)" is the source; the text
 * before the first '(' of the rest splits at its last '.' into class and name. */
static void split_method(const char *t, size_t n, parts *p)
{
    memset(p, 0, sizeof *p);
    size_t body = n;
    if (n >= 4 && t[n - 1] == ')') {
        size_t open = n - 1;
        while (open > 0 && !(t[open - 1] == ' ' && t[open] == '(')) open--;
        if (open > 0 && open + 2 < n) {
            const char *s = t + open + 1;
            size_t sl = n - 1 - (open + 1);
            int ok = memchr(s, '(', sl) == NULL && memchr(s, ')', sl) == NULL;
            const char *colon = NULL;
            for (size_t i = sl; ok && i > 0; i--)
                if (s[i - 1] == ':') {
                    colon = s + i - 1;
                    break;
                }
            if (ok && colon) {
                size_t dl = (size_t)(s + sl - colon - 1);
                for (size_t i = 1; i <= dl; i++) ok = ok && colon[i] >= '0' && colon[i] <= '9';
                ok = ok && dl > 0 && dl <= 9 && colon[1] != '0' && colon > s;
                if (ok) {
                    p->src = s, p->src_len = (size_t)(colon - s);
                    p->line = strtoll(colon + 1, NULL, 10);
                }
            } else if (ok && sl > 0) {
                p->src = s, p->src_len = sl;
            }
            if (p->src) body = open - 1;
        }
    }
    const char *paren = memchr(t, '(', body);
    size_t head = paren ? (size_t)(paren - t) : body;
    size_t dot = head;
    while (dot > 0 && t[dot - 1] != '.') dot--;
    if (dot > 1) {
        p->cls = t, p->cls_len = dot - 1;
        p->name = t + dot, p->name_len = head - dot;
    } else if (dot == 1) { /* ".name": an empty class would lose the dot on import */
        p->name = t, p->name_len = head;
    } else {
        p->name = t, p->name_len = head;
    }
    p->sig = t + head, p->sig_len = body - head;
}

/* The method id of a text, writing its class and method definitions the first time. */
static int method_id(cp_export *e, const char *text, size_t n, int64_t thread, cp_buf *out, int64_t *id,
                     int64_t *class_id, char *err, size_t errlen)
{
    uint64_t h = fnv(FNV0, text, n), v;
    if (cp_u64map_get(&e->methods, h, &v)) { /* a hash collision costs a second definition */
        *id = (int64_t)(v >> 24);
        *class_id = (int64_t)(v & 0xFFFFFF);
        return CP_OK;
    }
    parts p;
    split_method(text, n, &p);
    int st;
    uint64_t ch = fnv(fnv(FNV0, p.cls ? p.cls : "", p.cls_len), "\n", 1);
    ch = fnv(ch, p.src ? p.src : "", p.src_len);
    uint64_t cid;
    if (!cp_u64map_get(&e->classes, ch, &cid)) {
        cid = (uint64_t)e->next_class++;
        if (cp_u64map_put(&e->classes, ch, cid) != CP_OK) return CP_ENOMEM;
        cp_tptp_msg m;
        msg_init(&m, CP_TPTP_CLASS_DEF);
        put_i(&m, "threadIdRef", thread);
        put_i(&m, "time", e->last_ms * 1000);
        put_i(&m, "classId", (int64_t)cid);
        put_s(&m, "sourceName", p.src ? p.src : "", p.src_len);
        put_s(&m, "name", p.cls ? p.cls : "", p.cls_len);
        put_z(&m, "traceIdRef", "trace-1");
        if ((st = emit(e, &m, out, err, errlen)) != CP_OK) return st;
    }
    int64_t mid = e->next_method++;
    if (mid >= (1LL << 39) || cid >= (1u << 24)) return CP_ELIMIT;
    if (cp_u64map_put(&e->methods, h, ((uint64_t)mid << 24) | cid) != CP_OK) return CP_ENOMEM;
    cp_tptp_msg m;
    msg_init(&m, CP_TPTP_METHOD_DEF);
    put_s(&m, "name", p.name, p.name_len);
    put_s(&m, "signature", p.sig, p.sig_len);
    put_i(&m, "startLineNumber", p.line);
    put_i(&m, "endLineNumber", p.line);
    put_z(&m, "signatureNotation", "JVM");
    put_i(&m, "classIdRef", (int64_t)cid);
    put_i(&m, "methodId", mid);
    put_z(&m, "traceIdRef", "trace-1");
    *id = mid;
    *class_id = (int64_t)cid;
    return emit(e, &m, out, err, errlen);
}

/* ---- params: <cloudprof.param .../> ---------------------------------------------------------- */

static int xml_attr(cp_buf *b, const char *name, const char *v, size_t n)
{
    int st = cp_buf_printf(b, " %s=\"", name);
    for (size_t i = 0; st == CP_OK && i < n; i++) {
        unsigned char ch = (unsigned char)v[i];
        switch (ch) {
        case '&': st = cp_buf_puts(b, "&amp;"); break;
        case '<': st = cp_buf_puts(b, "&lt;"); break;
        case '>': st = cp_buf_puts(b, "&gt;"); break;
        case '"': st = cp_buf_puts(b, "&quot;"); break;
        default:
            /* characters XML 1.0 cannot carry at all are dropped; the others survive
             * attribute-value normalisation as references */
            if (ch < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') break;
            st = ch < 0x20 ? cp_buf_printf(b, "&#%d;", ch) : cp_buf_putc(b, ch);
        }
    }
    return st == CP_OK ? cp_buf_putc(b, '"') : st;
}

static int param_msg(cp_export *e, int64_t thread, int64_t ticket, int call_scope, const char *name, size_t nl,
                     const char *v, size_t vl, cp_buf *out, char *err, size_t errlen)
{
    cp_buf *b = &e->esc;
    cp_buf_reset(b);
    int st = cp_buf_printf(b, "<cloudprof.param threadIdRef=\"%" PRId64 "\" ticket=\"%" PRId64 "\" scope=\"%s\"", thread,
                           ticket, call_scope ? "call" : "node");
    if (st == CP_OK) st = xml_attr(b, "name", name, nl);
    if (st == CP_OK) st = xml_attr(b, "value", v, vl);
    if (st == CP_OK) st = cp_buf_puts(b, "/>");
    if (st != CP_OK) return st;
    cp_tptp_msg m;
    msg_init(&m, CP_TPTP_CUSTOM);
    m.v[0].s = (cp_tptp_text){(const char *)b->data, b->len};
    return emit(e, &m, out, err, errlen);
}

/* The call's params_json ({"name":["v",...],...}, as the stores keep it) as call-scope
 * params, without the import's own. A tiny reader: the text is ours (cp_json_str). */
static int json_string(const char **p, const char *end, cp_buf *to)
{
    const char *s = *p;
    if (s >= end || *s != '"') return CP_ECORRUPT;
    for (s++; s < end && *s != '"'; s++) {
        if (*s != '\\') {
            if (cp_buf_putc(to, (uint8_t)*s) != CP_OK) return CP_ENOMEM;
            continue;
        }
        if (++s >= end) return CP_ECORRUPT;
        char c = *s;
        if (c == 'u') {
            if (end - s < 5) return CP_ECORRUPT;
            unsigned cp = (unsigned)strtoul((char[5]){s[1], s[2], s[3], s[4], 0}, NULL, 16);
            s += 4;
            /* only control characters are written as \u (cp_json_str) */
            if (cp_buf_putc(to, (uint8_t)(cp < 0x80 ? cp : '?')) != CP_OK) return CP_ENOMEM;
            continue;
        }
        char o = c == 'n' ? '\n' : c == 't' ? '\t' : c == 'r' ? '\r' : c == 'b' ? '\b' : c == 'f' ? '\f' : c;
        if (cp_buf_putc(to, (uint8_t)o) != CP_OK) return CP_ENOMEM;
    }
    if (s >= end) return CP_ECORRUPT;
    *p = s + 1;
    return CP_OK;
}

static int call_params(cp_export *e, const cp_call *c, int64_t thread, int64_t ticket, cp_buf *out, char *err,
                       size_t errlen)
{
    const char *p = c->params_json, *end = p ? p + c->params_json_len : NULL;
    if (!p || c->params_json_len < 2) return CP_OK;
    cp_buf name, val;
    cp_buf_init(&name);
    cp_buf_init(&val);
    int st = *p == '{' ? CP_OK : CP_ECORRUPT;
    p++;
    while (st == CP_OK && p < end && *p != '}') {
        cp_buf_reset(&name);
        st = json_string(&p, end, &name);
        if (st == CP_OK && (p >= end || *p++ != ':' || p >= end || *p++ != '[')) st = CP_ECORRUPT;
        int skip = name.len >= 7 && !memcmp(name.data, "import.", 7);
        while (st == CP_OK && p < end && *p != ']') {
            cp_buf_reset(&val);
            st = json_string(&p, end, &val);
            if (st == CP_OK && !skip)
                st = param_msg(e, thread, ticket, 1, (const char *)name.data, name.len, (const char *)val.data,
                               val.len, out, err, errlen);
            if (st == CP_OK && p < end && *p == ',') p++;
        }
        if (st == CP_OK && (p >= end || *p++ != ']')) st = CP_ECORRUPT;
        if (st == CP_OK && p < end && *p == ',') p++;
    }
    if (st == CP_ECORRUPT) cp_set_err(err, errlen, "export: the call's params are not the stored JSON form");
    cp_buf_free(&name);
    cp_buf_free(&val);
    return st;
}

/* ---- one call ------------------------------------------------------------------------------ */

typedef struct walk {
    cp_export *e;
    const cp_call *c;
    const cp_blob *b;
    cp_buf *out;
    char *err;
    size_t errlen;
    int64_t thread;
    struct {
        int64_t ticket;
    } stack[4096];
    size_t depth;
    int started, done, status;
    int64_t last_ms;
} walk;

static int walk_fail(walk *w, int st)
{
    w->status = st;
    return 1;
}

static int entry_msg(walk *w, const char *text, size_t n, int64_t ms)
{
    cp_export *e = w->e;
    if (w->depth >= sizeof w->stack / sizeof w->stack[0]) {
        cp_set_err(w->err, w->errlen, "export: a tree deeper than %zu", sizeof w->stack / sizeof w->stack[0]);
        return CP_ELIMIT;
    }
    int64_t mid, cid;
    int st = method_id(e, text, n, w->thread, w->out, &mid, &cid, w->err, w->errlen);
    if (st != CP_OK) return st;
    cp_tptp_msg m;
    msg_init(&m, CP_TPTP_METHOD_ENTRY);
    int64_t ticket = ++e->next_ticket;
    put_i(&m, "transientThreadIdRef", w->thread);
    put_i(&m, "threadIdRef", w->thread);
    put_i(&m, "time", ms * 1000);
    put_i(&m, "methodIdRef", mid);
    put_i(&m, "ticket", ticket);
    put_i(&m, "classIdRef", cid);
    int root = w->depth == 0;
    if (root && w->c->cpu_time > 0) put_i(&m, "threadCpuTime", 1000); /* cpu = exit - entry, both non-zero */
    put_i(&m, "sequenceCounter", ticket);
    put_i(&m, "stackDepth", (int64_t)w->depth + 1);
    if ((st = emit(e, &m, w->out, w->err, w->errlen)) != CP_OK) return st;
    w->stack[w->depth++].ticket = ticket;
    if (!root) return CP_OK;
    /* what the list shows of the call: its params, memory and wait */
    st = call_params(e, w->c, w->thread, ticket, w->out, w->err, w->errlen);
    if (st == CP_OK && w->c->memory_used > 0) {
        msg_init(&m, CP_TPTP_OBJ_ALLOC);
        put_i(&m, "transientThreadIdRef", w->thread);
        put_i(&m, "threadIdRef", w->thread);
        put_i(&m, "time", ms * 1000);
        put_i(&m, "size", w->c->memory_used);
        st = emit(e, &m, w->out, w->err, w->errlen);
    }
    if (st == CP_OK && w->c->wait_time > 0 && w->c->wait_time <= w->c->duration_ms) {
        for (int k = 0; st == CP_OK && k < 2; k++) {
            msg_init(&m, k ? CP_TPTP_MON_WAITED : CP_TPTP_MON_WAIT);
            put_i(&m, "threadIdRef", w->thread);
            put_i(&m, "time", (ms + (k ? w->c->wait_time : 0)) * 1000);
            st = emit(e, &m, w->out, w->err, w->errlen);
        }
    }
    for (size_t i = 0; st == CP_OK && w->b && i < w->b->npauses; i++) {
        const cp_blob_pause *p = &w->b->pauses[i];
        int64_t end = p->end_ms, start = end - p->duration_ms;
        if (end < w->c->ts_ms || start > w->c->ts_ms + w->c->duration_ms) continue;
        msg_init(&m, CP_TPTP_GC_START);
        put_i(&m, "time", start * 1000);
        put_z(&m, "traceIdRef", "trace-1");
        st = emit(e, &m, w->out, w->err, w->errlen);
        msg_init(&m, CP_TPTP_GC_FINISH);
        put_i(&m, "time", end * 1000);
        put_z(&m, "traceIdRef", "trace-1");
        if (st == CP_OK) st = emit(e, &m, w->out, w->err, w->errlen);
    }
    return st;
}

static int exit_msg(walk *w, int64_t ms)
{
    cp_export *e = w->e;
    cp_tptp_msg m;
    msg_init(&m, CP_TPTP_METHOD_EXIT);
    int64_t ticket = w->stack[--w->depth].ticket;
    put_i(&m, "transientThreadIdRef", w->thread);
    put_i(&m, "threadIdRef", w->thread);
    put_i(&m, "time", ms * 1000);
    put_i(&m, "ticket", ticket);
    if (w->depth == 0 && w->c->cpu_time > 0) put_i(&m, "threadCpuTime", 1000 + w->c->cpu_time * 1000);
    if (ms > e->last_ms) e->last_ms = ms;
    return emit(e, &m, w->out, w->err, w->errlen);
}

static int on_trace(void *ud, const cp_trace_rec *r)
{
    walk *w = ud;
    if (r->type != CP_TRACE_ENTER && r->type != CP_TRACE_EXIT && r->type != CP_TRACE_TAG) return 0;
    int st = CP_OK;
    if (!w->started && r->type != CP_TRACE_ENTER) {
        cp_set_err(w->err, w->errlen, "export: the trace does not start with an ENTER");
        return walk_fail(w, CP_ECORRUPT);
    }
    w->started = 1;
    w->last_ms = r->time_ms;
    if (r->type == CP_TRACE_ENTER) {
        const cp_blob_word *word = cp_blob_find_word(w->b, r->id);
        char tmp[24];
        const char *text = tmp;
        size_t n;
        if (word) text = word->text, n = word->len;
        else n = (size_t)snprintf(tmp, sizeof tmp, "#%d", r->id);
        if (w->depth == 0 && w->c->method) text = w->c->method, n = w->c->method_len;
        st = entry_msg(w, text, n, r->time_ms);
    } else if (r->type == CP_TRACE_EXIT) {
        st = exit_msg(w, r->time_ms);
        if (st == CP_OK && w->depth == 0) {
            w->done = 1;
            return 1;
        }
    } else if (w->depth > 0) {
        const cp_blob_word *word = cp_blob_find_word(w->b, r->id);
        char tmp[24];
        const char *name = tmp;
        size_t nl;
        if (word) name = word->text, nl = word->len;
        else nl = (size_t)snprintf(tmp, sizeof tmp, "#%d", r->id);
        if (nl == 9 && !memcmp(name, "call.info", 9) && (r->param_type == 0 || r->param_type == 2) && r->value.n == 0)
            return 0; /* the agent's end-of-call marker (protocol.md §5.5) */
        cp_buf *v = &w->e->tmp;
        cp_buf_reset(v);
        if (r->param_type == 0 || r->param_type == 2) {
            st = cp_str16_to_utf8(v, r->value);
        } else {
            const cp_blob_value *bv = cp_blob_find_value(w->b, r->param_type, r->ref_file, r->ref_offset);
            st = bv ? cp_buf_append(v, bv->text, bv->len)
                    : cp_buf_printf(v, "%s:%d:%d", r->param_type == 3 ? "sql" : "xml", r->ref_file, r->ref_offset);
        }
        if (st == CP_OK)
            st = param_msg(w->e, w->thread, w->stack[w->depth - 1].ticket, 0, name, nl, (const char *)v->data, v->len,
                           w->out, w->err, w->errlen);
    }
    return st == CP_OK ? 0 : walk_fail(w, st);
}

static int64_t thread_id(cp_export *e, const cp_call *c, cp_buf *out, int *st, char *err, size_t errlen)
{
    uint64_t h = fnv(fnv(fnv(FNV0, c->pod, c->pod_len), "\n", 1), c->thread ? c->thread : "", c->thread_len), v;
    *st = CP_OK;
    if (cp_u64map_get(&e->threads, h, &v)) return (int64_t)v;
    int64_t id = e->next_thread++;
    if (cp_u64map_put(&e->threads, h, (uint64_t)id) != CP_OK) {
        *st = CP_ENOMEM;
        return 0;
    }
    cp_tptp_msg m;
    msg_init(&m, CP_TPTP_THREAD_START);
    put_i(&m, "transientThreadId", id);
    put_i(&m, "threadId", id);
    put_i(&m, "time", c->ts_ms * 1000);
    put_s(&m, "threadName", c->thread ? c->thread : "", c->thread_len);
    put_z(&m, "traceIdRef", "trace-1");
    *st = emit(e, &m, out, err, errlen);
    return id;
}

int cp_export_add(cp_export *e, const cp_call *c, const cp_blob *b, cp_buf *out, char *err, size_t errlen)
{
    int st = e->begun ? CP_OK : prelude(e, c, out, err, errlen);
    if (st != CP_OK) return st;
    walk *w = calloc(1, sizeof *w);
    if (!w) return CP_ENOMEM;
    w->e = e, w->c = c, w->b = b, w->out = out, w->err = err, w->errlen = errlen;
    w->thread = thread_id(e, c, out, &st, err, errlen);
    if (st == CP_OK && b) {
        cp_dec_sink s = {.ud = w, .on_trace = on_trace};
        cp_dec *d = cp_dec_new(CP_STREAM_TRACE, NULL, &s, 0);
        if (!d) st = CP_ENOMEM;
        else {
            int rc = cp_dec_feed(d, b->trace, b->trace_len);
            if (rc == CP_OK) rc = cp_dec_finish(d);
            if (w->status != CP_OK) st = w->status;
            else if (!w->done && rc < 0) {
                cp_set_err(err, errlen, "export: the call's trace does not decode: %s", cp_dec_error(d));
                st = CP_ECORRUPT;
            }
            cp_dec_free(d);
        }
    }
    if (st == CP_OK && !w->started) { /* no tree: the root alone */
        st = entry_msg(w, c->method ? c->method : "", c->method ? c->method_len : 0, c->ts_ms);
        w->last_ms = c->ts_ms + c->duration_ms;
        w->started = 1;
    }
    /* a cut trace closes what is open at its last event; a bare root at the call's end */
    while (st == CP_OK && w->depth > 0) st = exit_msg(w, w->depth == 1 && !b ? c->ts_ms + c->duration_ms : w->last_ms);
    free(w);
    return st;
}

int cp_export_end(cp_export *e, cp_buf *out, char *err, size_t errlen)
{
    int st = e->begun ? CP_OK : prelude(e, NULL, out, err, errlen);
    if (st != CP_OK) return st;
    cp_tptp_msg m;
    msg_init(&m, CP_TPTP_TRACE_END);
    put_z(&m, "traceIdRef", "trace-1");
    put_i(&m, "time", e->last_ms * 1000);
    if ((st = emit(e, &m, out, err, errlen)) != CP_OK) return st;
    msg_init(&m, CP_TPTP_AGENT_DESTROY);
    put_z(&m, "agentIdRef", "agent-1");
    put_i(&m, "time", e->last_ms * 1000);
    if ((st = emit(e, &m, out, err, errlen)) != CP_OK) return st;
    return cp_tptp_enc_end(&e->enc, out);
}
