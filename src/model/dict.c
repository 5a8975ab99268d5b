/* dict.c -- a pod restart's dictionary: id -> word, words kept back to back in its own
 * text, or shared with other dictionaries through a word pool (cp_model.h). */
#include "cp_model.h"

#include <stdlib.h>
#include <string.h>

/* ---- the word pool: open addressing over refcounted words ------------------------------- */

struct cp_pword {
    uint64_t hash;
    uint32_t refs, len;
    char text[];            /* len bytes and a NUL */
};

struct cp_wordpool {
    cp_pword **slot;        /* power of two, at most half full */
    size_t cap, n, bytes;   /* bytes: the words' allocations */
};

static uint64_t word_hash(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL ^ n;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 0x100000001b3ULL;
    return cp_mix64(h) | 1; /* never 0 */
}

cp_wordpool *cp_wordpool_new(void) { return calloc(1, sizeof(cp_wordpool)); }

void cp_wordpool_free(cp_wordpool *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->cap; i++) free(p->slot[i]);
    free(p->slot);
    free(p);
}

size_t cp_wordpool_words(const cp_wordpool *p) { return p ? p->n : 0; }
size_t cp_wordpool_bytes(const cp_wordpool *p) { return p ? p->bytes + p->cap * sizeof *p->slot : 0; }

static int pool_grow(cp_wordpool *p)
{
    size_t cap = p->cap ? p->cap * 2 : 1024;
    cp_pword **slot = calloc(cap, sizeof *slot);
    if (!slot) return CP_ENOMEM;
    for (size_t i = 0; i < p->cap; i++) {
        cp_pword *w = p->slot[i];
        if (!w) continue;
        size_t j = w->hash & (cap - 1);
        while (slot[j]) j = (j + 1) & (cap - 1);
        slot[j] = w;
    }
    free(p->slot);
    p->slot = slot;
    p->cap = cap;
    return CP_OK;
}

/* The pooled word with that text, one more reference to it; NULL on ENOMEM. */
static cp_pword *pool_get(cp_wordpool *p, const char *text, size_t len)
{
    if ((p->n + 1) * 2 > p->cap && pool_grow(p) != CP_OK) return NULL;
    uint64_t h = word_hash(text, len);
    size_t j = h & (p->cap - 1);
    for (; p->slot[j]; j = (j + 1) & (p->cap - 1)) {
        cp_pword *w = p->slot[j];
        if (w->hash == h && w->len == len && !memcmp(w->text, text, len)) {
            w->refs++;
            return w;
        }
    }
    cp_pword *w = malloc(sizeof *w + len + 1);
    if (!w) return NULL;
    w->hash = h;
    w->refs = 1;
    w->len = (uint32_t)len;
    memcpy(w->text, text, len);
    w->text[len] = 0;
    p->slot[j] = w;
    p->n++;
    p->bytes += sizeof *w + len + 1 + 16; /* with malloc's overhead */
    return w;
}

/* One reference less; the last one frees the word (backward-shift delete). */
static void pool_put(cp_wordpool *p, cp_pword *w)
{
    if (--w->refs) return;
    size_t mask = p->cap - 1, j = w->hash & mask;
    while (p->slot[j] != w) j = (j + 1) & mask;
    p->slot[j] = NULL;
    for (size_t i = (j + 1) & mask; p->slot[i]; i = (i + 1) & mask) {
        size_t home = p->slot[i]->hash & mask;
        int stays = j <= i ? (home > j && home <= i) : (home > j || home <= i);
        if (stays) continue;
        p->slot[j] = p->slot[i];
        p->slot[i] = NULL;
        j = i;
    }
    p->n--;
    p->bytes -= sizeof *w + w->len + 1 + 16;
    free(w);
}

/* ---- the dictionary ---------------------------------------------------------------------- */

void cp_dict_init(cp_dict *d)
{
    memset(d, 0, sizeof *d);
    cp_buf_init(&d->text);
}

void cp_dict_init_pooled(cp_dict *d, cp_wordpool *pool)
{
    cp_dict_init(d);
    d->pool = pool;
}

void cp_dict_free(cp_dict *d)
{
    for (size_t i = 0; d->pw && i < d->cap; i++)
        if (d->pw[i]) pool_put(d->pool, d->pw[i]);
    cp_buf_free(&d->text);
    free(d->off);
    free(d->len);
    free(d->pw);
    memset(d, 0, sizeof *d);
}

static int grow(cp_dict *d, size_t need)
{
    if (need <= d->cap) return CP_OK;
    size_t cap = d->cap ? d->cap : 256;
    while (cap < need) cap *= 2;
    if (d->pool) {
        cp_pword **pw = realloc(d->pw, cap * sizeof *pw);
        if (!pw) return CP_ENOMEM;
        memset(pw + d->cap, 0, (cap - d->cap) * sizeof *pw);
        d->pw = pw;
        d->cap = cap;
        return CP_OK;
    }
    uint32_t *off = realloc(d->off, cap * sizeof *off);
    if (!off) return CP_ENOMEM;
    d->off = off;
    uint32_t *len = realloc(d->len, cap * sizeof *len);
    if (!len) return CP_ENOMEM;
    d->len = len;
    memset(d->off + d->cap, 0, (cap - d->cap) * sizeof *off);
    memset(d->len + d->cap, 0, (cap - d->cap) * sizeof *len);
    d->cap = cap;
    return CP_OK;
}

int cp_dict_put(cp_dict *d, int32_t id, const char *word, size_t len)
{
    if (id < 0 || id >= CP_DICT_MAX_ID) return CP_ELIMIT;
    /* offsets are 32-bit: a dictionary over 4 GiB of text is hostile */
    if (len > UINT32_MAX / 2 || d->text.len + len + 1 > UINT32_MAX - 1) return CP_ELIMIT;
    if (grow(d, (size_t)id + 1) != CP_OK) return CP_ENOMEM;
    if (d->pool) {
        cp_pword *w = pool_get(d->pool, word, len);
        if (!w) return CP_ENOMEM;
        if (d->pw[id]) pool_put(d->pool, d->pw[id]);
        else d->count++;
        d->pw[id] = w;
        return CP_OK;
    }
    /* a re-sent id replaces the word; the old text stays (re-sends are rare) */
    uint32_t at = (uint32_t)d->text.len;
    if (cp_buf_append(&d->text, word, len) != CP_OK || cp_buf_putc(&d->text, 0) != CP_OK) return CP_ENOMEM;
    if (!d->off[id]) d->count++;
    d->off[id] = at + 1;
    d->len[id] = (uint32_t)len;
    return CP_OK;
}

const char *cp_dict_get(const cp_dict *d, int32_t id, size_t *len)
{
    if (id < 0 || (size_t)id >= d->cap) return NULL;
    if (d->pool) {
        const cp_pword *w = d->pw[id];
        if (!w) return NULL;
        if (len) *len = w->len;
        return w->text;
    }
    if (!d->off[id]) return NULL;
    if (len) *len = d->len[id];
    return (const char *)d->text.data + d->off[id] - 1;
}

size_t cp_dict_bytes(const cp_dict *d)
{
    if (d->pool) return d->cap * sizeof *d->pw;
    return d->text.cap + d->cap * 2 * sizeof(uint32_t);
}
