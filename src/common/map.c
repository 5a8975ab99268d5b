/* map.c -- cp_u64map: linear probing with backward-shift deletion (no tombstones). */
#include "common/cp_map.h"

#include "common/cp_common.h"

#include <stdlib.h>
#include <string.h>

void cp_u64map_init(cp_u64map *m) { memset(m, 0, sizeof *m); }

void cp_u64map_free(cp_u64map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
    memset(m, 0, sizeof *m);
}

void cp_u64map_clear(cp_u64map *m)
{
    if (m->used) memset(m->used, 0, m->cap);
    m->count = 0;
}

static size_t slot_of(const cp_u64map *m, uint64_t key) { return (size_t)cp_mix64(key) & (m->cap - 1); }

/* The slot holding key, or the empty slot where it would go. */
static size_t find(const cp_u64map *m, uint64_t key)
{
    size_t i = slot_of(m, key);
    while (m->used[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
    return i;
}

static int resize(cp_u64map *m, size_t cap)
{
    cp_u64map n = {0};
    n.cap = cap;
    n.keys = malloc(cap * sizeof *n.keys);
    n.vals = malloc(cap * sizeof *n.vals);
    n.used = calloc(cap, 1);
    if (!n.keys || !n.vals || !n.used) {
        cp_u64map_free(&n);
        return CP_ENOMEM;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i]) continue;
        size_t j = find(&n, m->keys[i]);
        n.used[j] = 1;
        n.keys[j] = m->keys[i];
        n.vals[j] = m->vals[i];
    }
    n.count = m->count;
    cp_u64map_free(m);
    *m = n;
    return CP_OK;
}

int cp_u64map_put(cp_u64map *m, uint64_t key, uint64_t val)
{
    if ((m->count + 1) * 4 > m->cap * 3) {
        if (m->cap > SIZE_MAX / 2 / sizeof(uint64_t)) return CP_ENOMEM;
        int st = resize(m, m->cap ? m->cap * 2 : 16);
        if (st != CP_OK) return st;
    }
    size_t i = find(m, key);
    if (!m->used[i]) {
        m->used[i] = 1;
        m->keys[i] = key;
        m->count++;
    }
    m->vals[i] = val;
    return CP_OK;
}

uint64_t *cp_u64map_ref(const cp_u64map *m, uint64_t key)
{
    if (!m->count) return NULL;
    size_t i = find(m, key);
    return m->used[i] ? &m->vals[i] : NULL;
}

int cp_u64map_get(const cp_u64map *m, uint64_t key, uint64_t *val)
{
    uint64_t *v = cp_u64map_ref(m, key);
    if (!v) return 0;
    if (val) *val = *v;
    return 1;
}

int cp_u64map_del(cp_u64map *m, uint64_t key)
{
    if (!m->count) return 0;
    size_t i = find(m, key);
    if (!m->used[i]) return 0;
    /* backward shift: move later members of the probe run into the hole when their home
     * slot does not lie cyclically in (hole, their slot] */
    size_t mask = m->cap - 1, j = i;
    m->used[i] = 0;
    for (;;) {
        j = (j + 1) & mask;
        if (!m->used[j]) break;
        size_t home = slot_of(m, m->keys[j]);
        int stays = i <= j ? (i < home && home <= j) : (i < home || home <= j);
        if (stays) continue;
        m->keys[i] = m->keys[j];
        m->vals[i] = m->vals[j];
        m->used[i] = 1;
        m->used[j] = 0;
        i = j;
    }
    m->count--;
    return 1;
}

int cp_u64map_next(const cp_u64map *m, size_t *i, uint64_t *key, uint64_t *val)
{
    for (; *i < m->cap; (*i)++) {
        if (!m->used[*i]) continue;
        if (key) *key = m->keys[*i];
        if (val) *val = m->vals[*i];
        (*i)++;
        return 1;
    }
    return 0;
}
