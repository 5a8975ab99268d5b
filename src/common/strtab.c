/* strtab.c -- interned strings (cp_strtab.h). */
#include "common/cp_strtab.h"

#include <stdlib.h>
#include <string.h>

/* FNV-1a over the bytes, mixed with the length. */
static uint64_t text_hash(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)p[i]) * 0x100000001b3ULL;
    return cp_mix64(h ^ n);
}

void cp_strtab_free(cp_strtab *s)
{
    cp_buf_free(&s->text);
    free(s->off);
    free(s->len);
    free(s->hash);
    free(s->slot);
    memset(s, 0, sizeof *s);
}

const char *cp_strtab_get(const cp_strtab *s, uint32_t i, size_t *len)
{
    *len = s->len[i];
    return s->len[i] ? (const char *)s->text.data + s->off[i] : "";
}

static int rehash(cp_strtab *s)
{
    size_t nslot = s->nslot ? s->nslot * 2 : 64;
    uint32_t *slot = calloc(nslot, sizeof *slot);
    if (!slot) return CP_ENOMEM;
    for (size_t i = 0; i < s->n; i++) {
        size_t j = s->hash[i] & (nslot - 1);
        while (slot[j]) j = (j + 1) & (nslot - 1);
        slot[j] = (uint32_t)i + 1;
    }
    free(s->slot);
    s->slot = slot;
    s->nslot = nslot;
    return CP_OK;
}

/* The slot holding p[0..n) (hash h), or the empty slot where it would go. */
static size_t slot_of(const cp_strtab *s, const char *p, size_t n, uint64_t h)
{
    size_t mask = s->nslot - 1, i = h & mask;
    for (;; i = (i + 1) & mask) {
        uint32_t v = s->slot[i];
        if (!v) return i;
        v--;
        if (s->hash[v] == h && s->len[v] == n && (n == 0 || memcmp(s->text.data + s->off[v], p, n) == 0)) return i;
    }
}

uint32_t cp_strtab_find(const cp_strtab *s, const char *p, size_t n)
{
    if (!s->nslot) return CP_STRTAB_NONE;
    uint32_t v = s->slot[slot_of(s, p, n, text_hash(p, n))];
    return v ? v - 1 : CP_STRTAB_NONE;
}

/* off, len and hash grow together. */
static int reserve(cp_strtab *s)
{
    if (s->n < s->cap) return CP_OK;
    size_t cap = s->cap ? s->cap * 2 : 64;
    size_t *off = realloc(s->off, cap * sizeof *off);
    if (off) s->off = off;
    size_t *len = off ? realloc(s->len, cap * sizeof *len) : NULL;
    if (len) s->len = len;
    uint64_t *hash = len ? realloc(s->hash, cap * sizeof *hash) : NULL;
    if (!hash) return CP_ENOMEM;
    s->hash = hash;
    s->cap = cap;
    return CP_OK;
}

int cp_strtab_intern(cp_strtab *s, const char *p, size_t n, uint32_t *idx)
{
    if ((s->n + 1) * 2 > s->nslot && rehash(s) != CP_OK) return CP_ENOMEM;
    uint64_t h = text_hash(p, n);
    size_t at = slot_of(s, p, n, h);
    if (s->slot[at]) {
        *idx = s->slot[at] - 1;
        return CP_OK;
    }
    if (s->n >= CP_STRTAB_MAX) return CP_ELIMIT;
    if (reserve(s) != CP_OK || cp_buf_append(&s->text, p, n) != CP_OK) return CP_ENOMEM;
    s->off[s->n] = s->text.len - n;
    s->len[s->n] = n;
    s->hash[s->n] = h;
    s->slot[at] = (uint32_t)s->n + 1;
    *idx = (uint32_t)s->n++;
    return CP_OK;
}
