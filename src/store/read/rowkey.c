/* rowkey.c -- what the SQLite and PostgreSQL readers' k-way merges share
 * (reader_internal.h): a row's position in the search order (cp_rowkey) and a binary
 * heap of cursor indexes (cp_idxheap). */
#include "store/read/reader_internal.h"

#include <string.h>

static int cmp64(int64_t a, int64_t b) { return (a > b) - (a < b); }

/* ---- the order ------------------------------------------------------------------------------- */

int cp_rowkey_cmp(const cp_rowkey *a, const cp_rowkey *b, int text, int desc)
{
    int c;
    if (text) {
        /* bytewise; of two texts where one is a prefix of the other, the shorter first */
        size_t n = a->text_len < b->text_len ? a->text_len : b->text_len;
        c = n ? memcmp(a->text, b->text, n) : 0;
        c = c ? (c > 0) - (c < 0) : cmp64((int64_t)a->text_len, (int64_t)b->text_len);
    } else {
        c = cmp64(a->num, b->num);
    }
    if (desc) c = -c;
    if (c) return c;
    /* the tie-breaks, all descending (pod_hash as a signed int64, as stored) */
    if ((c = cmp64(b->time, a->time))) return c;
    if ((c = cmp64(b->restart, a->restart))) return c;
    if ((c = cmp64(b->pod_hash, a->pod_hash))) return c;
    if ((c = cmp64(b->tfi, a->tfi))) return c;
    if ((c = cmp64(b->bo, a->bo))) return c;
    return cmp64(b->ri, a->ri);
}

/* ---- the index heap -------------------------------------------------------------------------- */

/* 1 if the element at position i goes above the one at position j. */
static int heap_less(const cp_idxheap *h, size_t i, size_t j) { return h->less(h->ud, h->v[i], h->v[j]); }

static void heap_swap(cp_idxheap *h, size_t i, size_t j)
{
    size_t t = h->v[i];
    h->v[i] = h->v[j];
    h->v[j] = t;
}

void cp_idxheap_down(cp_idxheap *h, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, best = i;
        if (l < h->n && heap_less(h, l, best)) best = l;
        if (l + 1 < h->n && heap_less(h, l + 1, best)) best = l + 1;
        if (best == i) return;
        heap_swap(h, i, best);
        i = best;
    }
}

void cp_idxheap_push(cp_idxheap *h, size_t k)
{
    size_t i = h->n++;
    h->v[i] = k;
    while (i > 0 && heap_less(h, i, (i - 1) / 2)) {
        heap_swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

void cp_idxheap_pop(cp_idxheap *h)
{
    h->v[0] = h->v[--h->n];
    cp_idxheap_down(h, 0);
}
