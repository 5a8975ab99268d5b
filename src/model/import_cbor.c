/* import_cbor.c -- CBOR raw-trace events (cp_cbortrace.h) to calls, per spec §3.3: each
 * top-level record with a TraceBegin is a call, its sub-records are its tree, attributes
 * become node parameters (the top-level record's also the call's params), an exception
 * becomes the `exception` parameter and, on the top-level record, the error flag. Times:
 * ticks of 2^16 ns from the prolog, anchored at the TraceBegin clock. */
#include "import_internal.h"

#include <stdlib.h>
#include <string.h>

#define TICK_NS 65536

struct imp_cbor {
    imp_call call;
    uint64_t start_tick;   /* the top-level record's prolog */
    int open;              /* a top-level record is being built */
    cp_buf thread;         /* its `thread` attribute */
    cp_u64map threads;     /* hashes of the thread names seen (the report's count) */
};

static int on_event(void *ud, const cp_cbt_event *e);

int imp_cbor_new(cp_import *im)
{
    imp_cbor *cb = calloc(1, sizeof *cb);
    if (!cb) return CP_ENOMEM;
    im->cbor = cb;
    imp_call_init(&cb->call);
    cp_buf_init(&cb->thread);
    cp_u64map_init(&cb->threads);
    cp_cbt_sink sink = {.ud = im, .on_event = on_event};
    im->cbor_dec = cp_cbt_dec_new(NULL, &sink);
    return im->cbor_dec ? CP_OK : CP_ENOMEM;
}

void imp_cbor_free(cp_import *im)
{
    if (im->cbor_dec) cp_cbt_dec_free(im->cbor_dec);
    im->cbor_dec = NULL;
    imp_cbor *cb = im->cbor;
    if (!cb) return;
    imp_call_free(&cb->call);
    cp_buf_free(&cb->thread);
    cp_u64map_free(&cb->threads);
    free(cb);
    im->cbor = NULL;
}

/* Milliseconds from the call's start to tick, rounded down (ticks are 2^16 ns). */
static int64_t rel_ms(const imp_cbor *cb, uint64_t tick)
{
    if (tick < cb->start_tick) return 0;
    return imp_scale((int64_t)(tick - cb->start_tick), TICK_NS, 1000000);
}

static uint64_t hash_text(const char *s, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)s[i]) * 0x100000001b3ULL;
    return h;
}

static int begin(cp_import *im, const cp_cbt_event *e)
{
    imp_cbor *cb = im->cbor;
    int32_t word;
    int st = imp_words_id(&im->words, e->method.p, e->method.len, &word);
    if (st != CP_OK) return imp_fail(im, st, st == CP_ELIMIT ? "more than 2^24 distinct method texts" : "out of memory");
    if (e->depth == 0) {
        cb->start_tick = e->start_tick;
        cb->open = 1;
        cp_buf_reset(&cb->thread);
        st = imp_call_begin(im, &cb->call, e->clock_ms, 0, e->offset);
        if (st == CP_OK) st = imp_call_enter(im, &cb->call, 0, word);
    } else if (cb->open) {
        st = imp_call_enter(im, &cb->call, rel_ms(cb, e->start_tick), word);
    }
    return st == CP_OK ? CP_OK : imp_fail(im, st, "out of memory");
}

static int tag(cp_import *im, const cp_cbt_event *e, const char *key, size_t klen, const char *v, size_t vlen)
{
    imp_cbor *cb = im->cbor;
    int32_t w;
    int st = imp_words_id(&im->words, key, klen, &w);
    if (st == CP_OK) st = imp_call_tag(im, &cb->call, w, v, vlen);
    if (st == CP_OK && e->depth == 0) {
        /* a call param needs a NUL-terminated name */
        cp_buf_reset(&im->tmp);
        st = cp_buf_append(&im->tmp, key, klen);
        if (st == CP_OK) st = cp_buf_putc(&im->tmp, 0);
        if (st == CP_OK) st = imp_call_param(im, &cb->call, (const char *)im->tmp.data, v, vlen);
    }
    return st == CP_OK ? CP_OK : imp_fail(im, st, "out of memory");
}

static int end(cp_import *im, const cp_cbt_event *e)
{
    imp_cbor *cb = im->cbor;
    int st = imp_call_exit(im, &cb->call, rel_ms(cb, e->end_tick));
    if (st != CP_OK) return imp_fail(im, st, "out of memory");
    if (e->depth > 0) return CP_OK;
    imp_done d;
    memset(&d, 0, sizeof d);
    d.duration_ms = rel_ms(cb, e->end_tick);
    d.method_word = cb->call.root_word;
    d.thread = cb->thread.len ? (const char *)cb->thread.data : NULL;
    d.thread_len = cb->thread.len;
    d.calls = e->calls > INT32_MAX ? INT32_MAX : (int64_t)e->calls;
    d.record_index = (int32_t)(im->record_ordinal++ & 0x7FFFFFFF);
    if (cb->thread.len) {
        uint64_t h = hash_text((const char *)cb->thread.data, cb->thread.len);
        if (!cp_u64map_get(&cb->threads, h, NULL) && cp_u64map_put(&cb->threads, h, 1) == CP_OK)
            im->threads = cp_u64map_count(&cb->threads);
    }
    cb->open = 0;
    return imp_call_finish(im, &cb->call, &d);
}

static int on_event(void *ud, const cp_cbt_event *e)
{
    cp_import *im = ud;
    imp_cbor *cb = im->cbor;
    int st = CP_OK;
    switch (e->type) {
    case CP_CBT_BEGIN: st = begin(im, e); break;
    case CP_CBT_ATTR:
        if (!cb->open) break;
        if (e->depth == 0 && e->key.len == 6 && !memcmp(e->key.p, "thread", 6)) {
            cp_buf_reset(&cb->thread);
            if (cp_buf_append(&cb->thread, e->value.p, e->value.len) != CP_OK) {
                st = imp_fail(im, CP_ENOMEM, "out of memory");
                break;
            }
        }
        st = tag(im, e, e->key.p, e->key.len, e->value.p, e->value.len);
        break;
    case CP_CBT_EXCEPTION:
        if (!cb->open) break;
        st = tag(im, e, "exception", 9, e->text.p, e->text.len);
        if (st == CP_OK && e->depth == 0) {
            cb->call.error = 1;
            /* the agent's error marker: what every tier (and the cold files) read as the flag */
            st = imp_call_param(im, &cb->call, "call.red", "true", 4);
            if (st != CP_OK) st = imp_fail(im, st, "out of memory");
        }
        break;
    case CP_CBT_END:
        if (cb->open) st = end(im, e);
        break;
    case CP_CBT_SKIPPED: break; /* counted by the decoder */
    }
    return st == CP_OK && !im->failed ? 0 : -1;
}
