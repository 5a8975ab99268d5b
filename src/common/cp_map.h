/* cp_map.h -- an open-addressing hash map from uint64_t keys to uint64_t values.
 *
 * For decoders and assemblers that look ids up by the million (method ids, thread ids,
 * string ids from untrusted files): no per-entry allocation, linear probing over a
 * power-of-two table kept at most 3/4 full, keys spread by cp_mix64. The caller bounds
 * the count (cp_u64map_count) before inserting what a file asks for. Values that are
 * pointers or indexes go in as uint64_t. */
#ifndef CP_MAP_H
#define CP_MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct cp_u64map {
    uint64_t *keys;
    uint64_t *vals;
    uint8_t *used;
    size_t cap;      /* slots, a power of two (0 before the first put) */
    size_t count;
} cp_u64map;

void cp_u64map_init(cp_u64map *m);
void cp_u64map_free(cp_u64map *m);
void cp_u64map_clear(cp_u64map *m); /* keeps the table */
/* Inserts or replaces. CP_OK or CP_ENOMEM (the map is unchanged then). */
int cp_u64map_put(cp_u64map *m, uint64_t key, uint64_t val);
/* 1 and *val set if present, else 0. val may be NULL. */
int cp_u64map_get(const cp_u64map *m, uint64_t key, uint64_t *val);
/* Pointer to the value slot of key (stable until the next put), NULL if absent. */
uint64_t *cp_u64map_ref(const cp_u64map *m, uint64_t key);
/* 1 if it was there. */
int cp_u64map_del(cp_u64map *m, uint64_t key);
static inline size_t cp_u64map_count(const cp_u64map *m) { return m->count; }
/* Bytes held (for memory accounting). */
static inline size_t cp_u64map_bytes(const cp_u64map *m) { return m->cap * (2 * sizeof(uint64_t) + 1); }

/* Iteration: for (size_t i = 0; cp_u64map_next(m, &i, &k, &v); ) -- any order; no puts or
 * dels meanwhile. */
int cp_u64map_next(const cp_u64map *m, size_t *i, uint64_t *key, uint64_t *val);

#endif
