/* fetch.c -- cp_reader_fetch: one call by id, kept past the reader's callback, with its
 * trace blob opened and given the dictionary words it uses. The agent path stores blobs
 * without words (the catalog has them per pod restart); imports store them inside. */
#include "store/cp_hot.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cp_fetched_init(cp_fetched *f)
{
    memset(f, 0, sizeof *f);
    cp_buf_init(&f->mem);
    cp_buf_init(&f->words);
}

void cp_fetched_free(cp_fetched *f)
{
    cp_blob_free(f->blob);
    cp_buf_free(&f->mem);
    cp_buf_free(&f->words);
    free(f->w);
    memset(f, 0, sizeof *f);
}

typedef struct fetch_ctx {
    cp_fetched *f;
    int status;
} fetch_ctx;

static int got_call(void *ud, const cp_call *c)
{
    fetch_ctx *x = ud;
    x->f->found = 1;
    x->status = cp_call_copy(c, &x->f->call, &x->f->mem);
    return x->status != CP_OK;
}

/* Word texts are kept as offsets while the buffer grows; pointers are set at the end. */
static int got_word(void *ud, int32_t id, const char *text, size_t len)
{
    cp_fetched *f = ud;
    if (cp_grow((void **)&f->w, &f->capw, f->nw + 1, sizeof *f->w, 64) != CP_OK) return 1;
    f->w[f->nw++] = (cp_blob_word){id, (const char *)(uintptr_t)f->words.len, len};
    return cp_buf_append(&f->words, text, len) != CP_OK;
}

static void fetched_reset(cp_fetched *f)
{
    cp_blob_free(f->blob);
    f->blob = NULL;
    f->found = 0;
    f->nw = 0;
    cp_buf_reset(&f->words);
}

/* The found call's trace opened, with the pod's dictionary words it uses attached. */
static int open_trace(cp_reader *r, cp_fetched *f, char *err, size_t errlen)
{
    if (!f->found || !f->call.trace) return CP_OK;
    int st = cp_blob_open(f->call.trace, f->call.trace_len, &f->blob, err, errlen);
    if (st != CP_OK || f->blob->nwords) return st;
    int32_t *ids = NULL;
    size_t nids = 0;
    st = cp_blob_word_ids(f->blob, &ids, &nids);
    if (st == CP_ECORRUPT) cp_set_err(err, errlen, "the trace does not decode");
    if (st == CP_OK && nids) {
        st = cp_reader_words(r, f->call.ns, f->call.pod, f->call.restart_ms, ids, nids, got_word, f);
    }
    free(ids);
    if (st != CP_OK) return st;
    for (size_t i = 0; i < f->nw; i++) f->w[i].text = (const char *)f->words.data + (uintptr_t)f->w[i].text;
    return f->nw ? cp_blob_attach_words(f->blob, f->w, f->nw) : CP_OK;
}

int cp_reader_fetch(cp_reader *r, const cp_call_ref *ref, cp_fetched *f, char *err, size_t errlen)
{
    fetched_reset(f);
    fetch_ctx x = {f, CP_OK};
    int st = cp_reader_get(r, ref, 1, got_call, &x);
    if (st == CP_ENOTFOUND) return CP_OK;
    if (st < 0) return st;
    if (x.status != CP_OK) return x.status;
    return open_trace(r, f, err, errlen);
}

/* ---- many at once ---------------------------------------------------------------------- */

/* One call copied inside the reader's get and reported after it returned: the report may
 * ask the same reader again (dictionary words), which must not nest in its get. */
typedef struct one_ctx {
    cp_call call;
    cp_buf mem;
    int found, status;
} one_ctx;

static int one_call(void *ud, const cp_call *c)
{
    one_ctx *x = ud;
    x->found = 1;
    x->status = cp_call_copy(c, &x->call, &x->mem);
    return x->status != CP_OK;
}

int cp_reader_get_many(cp_reader *r, const cp_call_ref *refs, size_t n, int with_trace,
                       int (*fn)(void *ud, size_t i, const cp_call *c), void *ud)
{
    if (r->ops->get_many) return r->ops->get_many(r, refs, n, with_trace, fn, ud);
    one_ctx x;
    memset(&x, 0, sizeof x);
    cp_buf_init(&x.mem);
    int st = CP_OK;
    for (size_t i = 0; i < n && st == CP_OK; i++) {
        x.found = 0;
        x.status = CP_OK;
        cp_buf_reset(&x.mem);
        int g = cp_reader_get(r, &refs[i], with_trace, one_call, &x);
        if (x.status != CP_OK) st = x.status;
        else if (g < 0 && g != CP_ENOTFOUND) st = g;
        else if (x.found && fn(ud, i, &x.call)) st = CP_EABORT;
    }
    cp_buf_free(&x.mem);
    return st;
}

typedef struct many_ctx {
    cp_reader *r;
    cp_fetched *f;
    int (*fn)(void *ud, size_t i, cp_fetched *f);
    void *ud;
    char *err;
    size_t errlen;
    int status;                         /* a failure of ours (not fn's stop) */
} many_ctx;

static int many_call(void *ud, size_t i, const cp_call *c)
{
    many_ctx *x = ud;
    fetched_reset(x->f);
    x->f->found = 1;
    int st = cp_call_copy(c, &x->f->call, &x->f->mem);
    if (st == CP_OK) st = open_trace(x->r, x->f, x->err, x->errlen);
    if (st != CP_OK) {
        x->status = st;
        return 1;
    }
    return x->fn(x->ud, i, x->f);
}

int cp_reader_fetch_many(cp_reader *r, const cp_call_ref *refs, size_t n,
                         int (*fn)(void *ud, size_t i, cp_fetched *f), void *ud, char *err, size_t errlen)
{
    cp_fetched f;
    cp_fetched_init(&f);
    many_ctx x = {r, &f, fn, ud, err, errlen, CP_OK};
    int st = cp_reader_get_many(r, refs, n, 1, many_call, &x);
    cp_fetched_free(&f);
    if (x.status != CP_OK) return x.status;
    return st;
}
