/* import.c -- the part of a foreign-trace import that does not depend on the format: the
 * word table, the call under construction (an agent-format trace, protocol.md §5.5, built
 * event by event), the hand-over of a finished call as a cp_call with its blob, the
 * identity, the report, format detection and the feed loop. */
#include "import_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- words ---------------------------------------------------------------------------- */

void imp_words_init(imp_words *w)
{
    memset(w, 0, sizeof *w);
    cp_buf_init(&w->text);
    cp_u64map_init(&w->by_hash);
}

void imp_words_free(imp_words *w)
{
    cp_buf_free(&w->text);
    free(w->off);
    free(w->len);
    free(w->stamp);
    cp_u64map_free(&w->by_hash);
    memset(w, 0, sizeof *w);
}

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
    return h;
}

int imp_words_id(imp_words *w, const char *s, size_t n, int32_t *id)
{
    uint64_t h = fnv1a(s, n), v;
    /* a hash taken by another text moves on to h + 1: rare, and the map stays exact */
    for (;; h++) {
        if (!cp_u64map_get(&w->by_hash, h, &v)) break;
        if (w->len[v] == n && !memcmp(w->text.data + w->off[v], s, n)) {
            *id = (int32_t)v;
            return CP_OK;
        }
    }
    if (w->count >= IMP_MAX_WORDS) return CP_ELIMIT;
    if (w->text.len + n > UINT32_MAX) return CP_ELIMIT;
    if (w->count == w->cap) {
        size_t cap = w->cap ? w->cap * 2 : 256;
        uint32_t *off = realloc(w->off, cap * sizeof *off);
        if (!off) return CP_ENOMEM;
        w->off = off;
        uint32_t *len = realloc(w->len, cap * sizeof *len);
        if (!len) return CP_ENOMEM;
        w->len = len;
        uint64_t *stamp = realloc(w->stamp, cap * sizeof *stamp);
        if (!stamp) return CP_ENOMEM;
        w->stamp = stamp;
        w->cap = cap;
    }
    size_t at = w->text.len;
    if (cp_buf_append(&w->text, s, n) != CP_OK || cp_u64map_put(&w->by_hash, h, w->count) != CP_OK) return CP_ENOMEM;
    w->off[w->count] = (uint32_t)at;
    w->len[w->count] = (uint32_t)n;
    w->stamp[w->count] = 0;
    *id = (int32_t)w->count++;
    return CP_OK;
}

/* ---- errors and arithmetic ------------------------------------------------------------- */

int imp_fail(cp_import *im, int st, const char *fmt, ...)
{
    if (im->failed) return im->status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(im->err, sizeof im->err, fmt, ap);
    va_end(ap);
    im->failed = 1;
    im->status = st < 0 ? st : CP_EPROTO;
    return im->status;
}

int64_t imp_scale(int64_t ticks, int64_t num, int64_t den)
{
    __int128 v = (__int128)ticks * num;
    __int128 q = v / den;
    if (v % den != 0 && v < 0) q--; /* floor, not truncation */
    if (q > INT64_MAX) return INT64_MAX;
    if (q < INT64_MIN) return INT64_MIN;
    return (int64_t)q;
}

/* ---- the call under construction --------------------------------------------------------- */

void imp_call_init(imp_call *c)
{
    memset(c, 0, sizeof *c);
    cp_buf_init(&c->trace);
    cp_buf_init(&c->pstr);
}

void imp_call_free(imp_call *c)
{
    cp_buf_free(&c->trace);
    cp_buf_free(&c->pstr);
    free(c->wids);
    free(c->params);
    memset(c, 0, sizeof *c);
}

static void put_be64(cp_buf *b, int64_t v)
{
    uint8_t t[8];
    cp_put_be64(t, (uint64_t)v);
    cp_buf_append(b, t, 8);
}

/* Accounts trace bytes against both budgets; a call that passes one loses its trace. */
static void budget(cp_import *im, imp_call *c, size_t before)
{
    if (c->too_large) return;
    im->open_bytes += c->trace.len - before;
    c->counted += c->trace.len - before;
    if (c->trace.len > im->o.max_call_bytes || im->open_bytes > im->o.max_open_bytes) {
        im->open_bytes -= c->counted;
        c->counted = 0;
        cp_buf_free(&c->trace);
        c->too_large = 1;
    }
}

int imp_call_begin(cp_import *im, imp_call *c, int64_t ts_ms, int64_t thread_id, uint64_t offset)
{
    c->active = 1;
    c->serial = ++im->next_serial;
    c->ts_ms = ts_ms;
    c->last_rel_ms = 0;
    c->offset = offset;
    c->too_large = 0;
    c->error = 0;
    c->entries = 0;
    c->nwids = c->nparams = 0;
    cp_buf_reset(&c->trace);
    cp_buf_reset(&c->pstr);
    size_t before = c->trace.len;
    put_be64(&c->trace, ts_ms);     /* timer start: the call's start, so the root's delta is 0 */
    put_be64(&c->trace, thread_id); /* the one chunk's header */
    put_be64(&c->trace, ts_ms);
    if (c->trace.len != before + 24) return CP_ENOMEM;
    budget(im, c, before);
    return CP_OK;
}

static int use_word(cp_import *im, imp_call *c, int32_t word)
{
    if (im->words.stamp[word] == c->serial) return CP_OK;
    im->words.stamp[word] = c->serial;
    if (cp_grow((void **)&c->wids, &c->capwids, c->nwids + 1, sizeof *c->wids, 16) != CP_OK) return CP_ENOMEM;
    c->wids[c->nwids++] = word;
    return CP_OK;
}

/* Event header byte(s): type in bits 0-1, the delta's low 5 bits in 2-6, the rest as a
 * varint when bit 7 is set (protocol.md §5.5). */
static int put_event(cp_import *im, imp_call *c, int type, int64_t rel_ms)
{
    if (rel_ms < c->last_rel_ms) rel_ms = c->last_rel_ms; /* times never run backwards in a tree */
    int64_t d64 = rel_ms - c->last_rel_ms;
    if (d64 > INT32_MAX) d64 = INT32_MAX;
    c->last_rel_ms += d64;
    uint32_t d = (uint32_t)d64;
    if (d <= 31) return cp_buf_putc(&c->trace, (uint8_t)((d << 2) | (uint32_t)type));
    int st = cp_buf_putc(&c->trace, (uint8_t)(0x80 | ((d & 31) << 2) | (uint32_t)type));
    return st == CP_OK ? cp_buf_put_varint(&c->trace, d >> 5) : st;
}

int imp_call_enter(cp_import *im, imp_call *c, int64_t rel_ms, int32_t word)
{
    if (c->entries++ == 0) c->root_word = word;
    int st = use_word(im, c, word);
    if (st != CP_OK || c->too_large) return st;
    size_t before = c->trace.len;
    st = put_event(im, c, 0, rel_ms);
    if (st == CP_OK) st = cp_buf_put_varint(&c->trace, (uint32_t)word);
    budget(im, c, before);
    return st;
}

int imp_call_exit(cp_import *im, imp_call *c, int64_t rel_ms)
{
    if (c->too_large) return CP_OK;
    size_t before = c->trace.len;
    int st = put_event(im, c, 1, rel_ms);
    budget(im, c, before);
    return st;
}

int imp_call_tag(cp_import *im, imp_call *c, int32_t word, const char *v, size_t n)
{
    int st = use_word(im, c, word);
    if (st != CP_OK || c->too_large) return st;
    size_t before = c->trace.len;
    st = put_event(im, c, 2, c->last_rel_ms);
    if (st == CP_OK) st = cp_buf_put_varint(&c->trace, (uint32_t)word);
    if (st == CP_OK) st = cp_buf_putc(&c->trace, 0); /* paramType 0: inline */
    if (st == CP_OK) st = cp_buf_put_varstring(&c->trace, v, n);
    budget(im, c, before);
    return st;
}

int imp_call_param(cp_import *im, imp_call *c, const char *name, const char *v, size_t n)
{
    if (c->nparams >= IMP_MAX_PARAMS) return CP_OK; /* the list shows enough; the tree has them all */
    if (cp_grow((void **)&c->params, &c->capparams, c->nparams + 1, sizeof *c->params, 8) != CP_OK) return CP_ENOMEM;
    imp_param *p = &c->params[c->nparams];
    size_t nl = strlen(name);
    p->name_off = c->pstr.len, p->name_len = nl;
    if (cp_buf_append(&c->pstr, name, nl) != CP_OK) return CP_ENOMEM;
    p->val_off = c->pstr.len, p->val_len = n;
    if (cp_buf_append(&c->pstr, v, n) != CP_OK) return CP_ENOMEM;
    c->nparams++;
    return CP_OK;
}

void imp_call_drop(cp_import *im, imp_call *c)
{
    im->open_bytes -= c->counted;
    c->counted = 0;
    cp_buf_reset(&c->trace);
    c->active = 0;
}

/* ---- hand-over --------------------------------------------------------------------------- */

static int cmp_param(const void *a, const void *b, void *ud)
{
    const imp_param *x = a, *y = b;
    const uint8_t *s = ud;
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(s + x->name_off, s + y->name_off, n);
    if (c) return c;
    if (x->name_len != y->name_len) return x->name_len < y->name_len ? -1 : 1;
    return x->val_off < y->val_off ? -1 : x->val_off > y->val_off; /* values keep their order */
}

/* {"name":["v1","v2"],...}, names sorted, as the agent path writes params_json. */
static int params_json(cp_import *im, imp_call *c, cp_buf *out)
{
    cp_buf_reset(out);
    qsort_r(c->params, c->nparams, sizeof *c->params, cmp_param, c->pstr.data);
    int st = cp_buf_putc(out, '{');
    const uint8_t *s = c->pstr.data;
    for (size_t i = 0; st == CP_OK && i < c->nparams; i++) {
        const imp_param *p = &c->params[i];
        int same = i > 0 && c->params[i - 1].name_len == p->name_len &&
                   !memcmp(s + c->params[i - 1].name_off, s + p->name_off, p->name_len);
        if (!same) {
            if (i > 0) st = cp_buf_puts(out, "],");
            if (st == CP_OK) st = cp_json_str(out, (const char *)s + p->name_off, p->name_len);
            if (st == CP_OK) st = cp_buf_puts(out, ":[");
        } else {
            st = cp_buf_putc(out, ',');
        }
        if (st == CP_OK) st = cp_json_str(out, (const char *)s + p->val_off, p->val_len);
    }
    if (st == CP_OK && c->nparams) st = cp_buf_putc(out, ']');
    if (st == CP_OK) st = cp_buf_putc(out, '}');
    return st;
}

static int set_text(cp_buf *b, const char *s, size_t n)
{
    cp_buf_reset(b);
    int st = cp_buf_append(b, s, n);
    return st == CP_OK ? cp_buf_putc(b, 0) : st;
}

/* The identity (cp_import.h), fixed at the first call. */
static int fix_identity(cp_import *im)
{
    if (im->identity_fixed) return CP_OK;
    const char *fmt = im->o.format == CP_IMPORT_CBOR ? "cbor" : "tptp";
    const char *ns = im->o.ns && *im->o.ns ? im->o.ns : fmt;
    int st = set_text(&im->id_ns, ns, strlen(ns));
    const char *svc = im->o.service && *im->o.service ? im->o.service : NULL;
    if (st == CP_OK) {
        if (svc) st = set_text(&im->id_service, svc, strlen(svc));
        else if (im->file_agent.len) st = set_text(&im->id_service, (const char *)im->file_agent.data, im->file_agent.len);
        else if (im->file_process.len)
            st = set_text(&im->id_service, (const char *)im->file_process.data, im->file_process.len);
        else st = set_text(&im->id_service, fmt, strlen(fmt));
    }
    im->restart_ms = im->has_process_ms ? im->file_process_ms : im->o.now_ms;
    if (st == CP_OK) {
        cp_buf_reset(&im->id_pod);
        if (im->o.pod && *im->o.pod) st = cp_buf_puts(&im->id_pod, im->o.pod);
        else if (im->file_host.len)
            st = cp_buf_append(&im->id_pod, im->file_host.data, im->file_host.len) == CP_OK
                     ? cp_buf_printf(&im->id_pod, "_%" PRId64, im->restart_ms)
                     : CP_ENOMEM;
        else st = cp_buf_printf(&im->id_pod, "%s_%" PRId64, fmt, im->restart_ms);
        if (st == CP_OK) st = cp_buf_putc(&im->id_pod, 0);
    }
    if (st != CP_OK) return imp_fail(im, st, "out of memory");
    im->identity_fixed = 1;
    return CP_OK;
}

/* Word ids (< 2^24) in ascending order: two 12-bit counting passes through tmp (n
 * entries), linear where a comparison sort of every call's few hundred words showed up in
 * profiles. */
static void sort_ids(int32_t *v, int32_t *tmp, size_t n)
{
    for (int shift = 0; shift < 24; shift += 12) {
        size_t count[4097] = {0};
        for (size_t i = 0; i < n; i++) count[(((uint32_t)v[i] >> shift) & 4095) + 1]++;
        for (size_t k = 1; k <= 4096; k++) count[k] += count[k - 1];
        for (size_t i = 0; i < n; i++) tmp[count[((uint32_t)v[i] >> shift) & 4095]++] = v[i];
        memcpy(v, tmp, n * sizeof *v);
    }
}

int imp_call_finish(cp_import *im, imp_call *c, const imp_done *d)
{
    int st = fix_identity(im);
    if (st != CP_OK) return st;
    /* the agent's error marker makes an error call on every path (an export of one) */
    for (size_t i = 0; i < c->nparams; i++)
        if (c->params[i].name_len == 8 && !memcmp(c->pstr.data + c->params[i].name_off, "call.red", 8)) c->error = 1;
    st = imp_call_param(im, c, "import.format", cp_import_format_name(im->o.format),
                        strlen(cp_import_format_name(im->o.format)));
    if (st == CP_OK) st = params_json(im, c, &im->params_json);
    /* the blob: trace (+ FINISH byte), its words, the pauses */
    cp_blob_builder *bb = &im->bb;
    cp_blob_builder_reset(bb);
    int have_trace = !c->too_large;
    if (st == CP_OK && have_trace) {
        st = cp_buf_putc(&c->trace, 0x03);
        if (st == CP_OK) st = cp_buf_append(&bb->trace, c->trace.data, c->trace.len);
        /* sorted and unique, the builder appends each word (no insertion in the middle) */
        if (cp_grow((void **)&im->sort_tmp, &im->sort_cap, c->nwids, sizeof *im->sort_tmp, 256) != CP_OK)
            st = CP_ENOMEM;
        else sort_ids(c->wids, im->sort_tmp, c->nwids);
        for (size_t i = 0; st == CP_OK && i < c->nwids; i++) {
            if (i && c->wids[i] == c->wids[i - 1]) continue;
            size_t len;
            const char *t = imp_words_text(&im->words, c->wids[i], &len);
            st = cp_blob_add_word(bb, c->wids[i], t, len);
        }
        for (size_t i = 0; st == CP_OK && i < d->npauses; i++)
            st = cp_blob_add_pause(bb, d->pauses[i].end_ms, d->pauses[i].duration_ms);
        cp_buf_reset(&im->blob);
        if (st == CP_OK) st = cp_blob_build(bb, &im->blob);
    }
    if (st != CP_OK) {
        imp_call_drop(im, c);
        return imp_fail(im, st, "out of memory building a call at offset %" PRIu64, c->offset);
    }
    size_t mlen;
    const char *mtext = imp_words_text(&im->words, d->method_word, &mlen);
    cp_call call;
    memset(&call, 0, sizeof call);
    call.ts_ms = c->ts_ms;
    call.duration_ms = d->duration_ms > INT32_MAX ? INT32_MAX : (int32_t)(d->duration_ms < 0 ? 0 : d->duration_ms);
    call.cpu_time = d->cpu_ms;
    call.wait_time = d->wait_ms;
    call.memory_used = d->memory;
    call.suspend_ms = d->suspend_ms > INT32_MAX ? INT32_MAX : (int32_t)d->suspend_ms;
    call.calls = d->calls > INT32_MAX ? INT32_MAX : (int32_t)d->calls;
    call.ns = (const char *)im->id_ns.data, call.ns_len = im->id_ns.len - 1;
    call.service = (const char *)im->id_service.data, call.service_len = im->id_service.len - 1;
    call.pod = (const char *)im->id_pod.data, call.pod_len = im->id_pod.len - 1;
    call.restart_ms = im->restart_ms;
    call.method_id = d->method_word;
    call.method = mtext, call.method_len = mlen;
    call.thread = d->thread ? d->thread : "", call.thread_len = d->thread ? d->thread_len : 0;
    call.params_json = (const char *)im->params_json.data, call.params_json_len = im->params_json.len;
    call.error = c->error;
    call.trace_file_index = 0;
    call.buffer_offset = (int32_t)(c->offset & 0x7FFFFFFF);
    call.record_index = d->record_index;
    if (have_trace) {
        call.trace = im->blob.data, call.trace_len = im->blob.len;
    } else {
        call.trace_reason = CP_TRACE_TOO_LARGE;
        im->too_large++;
    }
    imp_call_drop(im, c);
    if (im->sink.on_call) {
        int rc = im->sink.on_call(im->sink.ud, &call);
        if (rc != 0) return imp_fail(im, rc < 0 ? rc : CP_EABORT, "the store refused a call: %s", cp_strstatus(rc));
    }
    if (!im->calls_out || call.ts_ms < im->first_ms) im->first_ms = call.ts_ms;
    if (!im->calls_out || call.ts_ms + call.duration_ms > im->last_ms) im->last_ms = call.ts_ms + call.duration_ms;
    im->calls_out++;
    return CP_OK;
}

/* ---- formats ------------------------------------------------------------------------------ */

const char *cp_import_format_name(cp_import_format f)
{
    switch (f) {
    case CP_IMPORT_TRCBIN: return "trcbin";
    case CP_IMPORT_TRCXML: return "trcxml";
    case CP_IMPORT_CBOR: return "cbor";
    default: return "unknown";
    }
}

cp_import_format cp_import_format_parse(const char *s)
{
    if (!s) return CP_IMPORT_UNKNOWN;
    if (!strcmp(s, "trcbin")) return CP_IMPORT_TRCBIN;
    if (!strcmp(s, "trcxml")) return CP_IMPORT_TRCXML;
    if (!strcmp(s, "cbor")) return CP_IMPORT_CBOR;
    return CP_IMPORT_UNKNOWN;
}

cp_import_format cp_import_detect(const uint8_t *p, size_t n)
{
    if (n >= 4 && !memcmp(p, "0TBF", 4)) return CP_IMPORT_TRCBIN;
    size_t i = 0;
    if (n >= 3 && p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) i = 3;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) i++;
    if (i < n && p[i] == '<') return CP_IMPORT_TRCXML;
    /* a raw trace starts with a tag (major type 6: symbols 1, 2, records 10, 11) or, leniently,
     * an array of them; a self-described CBOR prefix (tag 55799) too */
    if (n >= 1 && ((p[0] >> 5) == 6 || (p[0] >> 5) == 4)) return CP_IMPORT_CBOR;
    return CP_IMPORT_UNKNOWN;
}

void cp_import_opts_default(cp_import_opts *o)
{
    memset(o, 0, sizeof *o);
    o->max_call_bytes = 16u << 20;
    o->max_open_bytes = 48u << 20;
    o->max_threads = 100000;
    o->max_methods = 1u << 20;
    o->max_def_bytes = (size_t)64 << 20;
}

cp_import *cp_import_new(const cp_import_opts *o, const cp_import_sink *sink)
{
    if (o->format == CP_IMPORT_UNKNOWN) return NULL;
    cp_import *im = calloc(1, sizeof *im);
    if (!im) return NULL;
    im->o = *o;
    cp_import_opts def;
    cp_import_opts_default(&def);
    if (!im->o.max_call_bytes) im->o.max_call_bytes = def.max_call_bytes;
    if (!im->o.max_open_bytes) im->o.max_open_bytes = def.max_open_bytes;
    if (!im->o.max_threads) im->o.max_threads = def.max_threads;
    if (!im->o.max_methods) im->o.max_methods = def.max_methods;
    if (!im->o.max_def_bytes) im->o.max_def_bytes = def.max_def_bytes;
    if (sink) im->sink = *sink;
    imp_words_init(&im->words);
    cp_blob_builder_init(&im->bb);
    cp_buf_init(&im->blob);
    cp_buf_init(&im->params_json);
    cp_buf_init(&im->tmp);
    cp_buf_init(&im->id_ns);
    cp_buf_init(&im->id_service);
    cp_buf_init(&im->id_pod);
    cp_buf_init(&im->file_host);
    cp_buf_init(&im->file_agent);
    cp_buf_init(&im->file_process);
    int st = o->format == CP_IMPORT_CBOR ? imp_cbor_new(im)
                                         : imp_tptp_new(im, o->format == CP_IMPORT_TRCXML ? CP_TPTP_XML : CP_TPTP_BIN);
    if (st != CP_OK) {
        cp_import_free(im);
        return NULL;
    }
    return im;
}

void cp_import_free(cp_import *im)
{
    if (!im) return;
    imp_tptp_free(im);
    imp_cbor_free(im);
    imp_words_free(&im->words);
    cp_blob_builder_free(&im->bb);
    cp_buf_free(&im->blob);
    cp_buf_free(&im->params_json);
    cp_buf_free(&im->tmp);
    free(im->sort_tmp);
    cp_buf_free(&im->id_ns);
    cp_buf_free(&im->id_service);
    cp_buf_free(&im->id_pod);
    cp_buf_free(&im->file_host);
    cp_buf_free(&im->file_agent);
    cp_buf_free(&im->file_process);
    free(im);
}

/* A decoder's error becomes the import's (the decoder's text names the offset). */
static int dec_status(cp_import *im, int st)
{
    if (st == CP_OK || im->failed) return im->failed ? im->status : st;
    if (st == CP_EABORT) return im->failed ? im->status : imp_fail(im, st, "stopped");
    const char *why = im->tptp_dec ? cp_tptp_dec_error(im->tptp_dec) : cp_cbt_dec_error(im->cbor_dec);
    return imp_fail(im, st, "%s", why && *why ? why : cp_strstatus(st));
}

int cp_import_feed(cp_import *im, const uint8_t *p, size_t n)
{
    if (im->failed) return im->status;
    im->bytes += n;
    int st = im->tptp_dec ? cp_tptp_dec_feed(im->tptp_dec, p, n) : cp_cbt_dec_feed(im->cbor_dec, p, n);
    return dec_status(im, st);
}

int cp_import_finish(cp_import *im)
{
    if (im->failed) return im->status;
    int st = im->tptp_dec ? cp_tptp_dec_finish(im->tptp_dec) : cp_cbt_dec_finish(im->cbor_dec);
    st = dec_status(im, st);
    if (st == CP_OK && im->tptp) st = imp_tptp_finish(im);
    return st;
}

void cp_import_get_report(const cp_import *im, cp_import_report *r)
{
    memset(r, 0, sizeof *r);
    r->format = im->o.format;
    r->calls = im->calls_out;
    r->threads = im->threads;
    r->methods = im->methods;
    r->too_large = im->too_large;
    r->incomplete = im->incomplete;
    r->bytes = im->bytes;
    if (im->tptp_dec) {
        r->events = cp_tptp_dec_messages(im->tptp_dec);
        r->unknown_messages = cp_tptp_dec_unknown(im->tptp_dec);
        r->skipped = r->unknown_messages + im->skipped;
        r->stopped_at = im->failed ? cp_tptp_dec_offset(im->tptp_dec) : im->bytes;
    } else if (im->cbor_dec) {
        r->events = cp_cbt_dec_records(im->cbor_dec);
        r->skipped = cp_cbt_dec_skipped(im->cbor_dec) + im->skipped;
        r->unknown_messages = im->unknown;
        r->methods = cp_cbt_dec_methods(im->cbor_dec);
        r->stopped_at = im->failed ? cp_cbt_dec_offset(im->cbor_dec) : im->bytes;
    }
    r->error = im->failed ? im->err : NULL;
    r->has_span = im->calls_out > 0;
    r->first_ms = im->first_ms;
    r->last_ms = im->last_ms;
    if (im->identity_fixed) {
        r->ns = (const char *)im->id_ns.data;
        r->service = (const char *)im->id_service.data;
        r->pod = (const char *)im->id_pod.data;
        r->restart_ms = im->restart_ms;
    }
}

static int json_text_or_null(cp_buf *out, const char *s)
{
    return s ? cp_json_str(out, s, strlen(s)) : cp_buf_puts(out, "null");
}

int cp_import_report_json(const cp_import_report *r, cp_buf *out)
{
    int st = cp_buf_printf(out,
                           "{\"format\":\"%s\",\"calls\":%" PRIu64 ",\"threads\":%" PRIu64 ",\"methods\":%" PRIu64
                           ",\"events\":%" PRIu64 ",\"skipped\":%" PRIu64 ",\"unknown_messages\":%" PRIu64
                           ",\"too_large\":%" PRIu64 ",\"incomplete\":%" PRIu64 ",\"stopped_at\":%" PRIu64
                           ",\"bytes\":%" PRIu64 ",\"error\":",
                           cp_import_format_name(r->format), r->calls, r->threads, r->methods, r->events, r->skipped,
                           r->unknown_messages, r->too_large, r->incomplete, r->stopped_at, r->bytes);
    if (st == CP_OK) st = json_text_or_null(out, r->error);
    if (st == CP_OK) st = cp_buf_puts(out, ",\"namespace\":");
    if (st == CP_OK) st = json_text_or_null(out, r->ns);
    if (st == CP_OK) st = cp_buf_puts(out, ",\"service\":");
    if (st == CP_OK) st = json_text_or_null(out, r->service);
    if (st == CP_OK) st = cp_buf_puts(out, ",\"pod\":");
    if (st == CP_OK) st = json_text_or_null(out, r->pod);
    if (st == CP_OK && r->has_span)
        st = cp_buf_printf(out, ",\"first_ms\":%" PRId64 ",\"last_ms\":%" PRId64 "}", r->first_ms, r->last_ms);
    else if (st == CP_OK) st = cp_buf_puts(out, ",\"first_ms\":null,\"last_ms\":null}");
    return st;
}
