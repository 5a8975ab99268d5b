/* dict.c -- a pod restart's dictionary: id -> word, words kept back to back. */
#include "cp_model.h"

#include <stdlib.h>
#include <string.h>

void cp_dict_init(cp_dict *d)
{
    memset(d, 0, sizeof *d);
    cp_buf_init(&d->text);
}

void cp_dict_free(cp_dict *d)
{
    cp_buf_free(&d->text);
    free(d->off);
    free(d->len);
    memset(d, 0, sizeof *d);
}

static int grow(cp_dict *d, size_t need)
{
    if (need <= d->cap) return CP_OK;
    size_t cap = d->cap ? d->cap : 256;
    while (cap < need) cap *= 2;
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
    if (id < 0 || (size_t)id >= d->cap || !d->off[id]) return NULL;
    if (len) *len = d->len[id];
    return (const char *)d->text.data + d->off[id] - 1;
}

size_t cp_dict_bytes(const cp_dict *d) { return d->text.cap + d->cap * 2 * sizeof(uint32_t); }
