/* cp_strtab.h -- interned strings: each distinct text stored once in one buffer and named
 * by a dense index (0, 1, 2, ... in first-seen order), looked up by an open-addressing
 * hash. Trees name their methods, param names and frames this way, and write the
 * dictionary out in index order. */
#ifndef CP_STRTAB_H
#define CP_STRTAB_H

#include "common/cp_common.h"

#include <stddef.h>
#include <stdint.h>

#define CP_STRTAB_NONE UINT32_MAX
#define CP_STRTAB_MAX (UINT32_MAX - 2) /* indexes stay clear of NONE and of "+1" encodings */

typedef struct cp_strtab {
    cp_buf text;         /* every text, back to back */
    size_t *off, *len;   /* of text i */
    uint64_t *hash;
    size_t n, cap;       /* texts; room in off/len/hash */
    uint32_t *slot;      /* index + 1, 0 = empty */
    size_t nslot;        /* a power of two, at most half full */
} cp_strtab;

/* A zeroed cp_strtab is empty and valid. */
void cp_strtab_free(cp_strtab *s);
/* Text i (i < n), with its length. */
const char *cp_strtab_get(const cp_strtab *s, uint32_t i, size_t *len);
/* The index of p[0..n), or CP_STRTAB_NONE. */
uint32_t cp_strtab_find(const cp_strtab *s, const char *p, size_t n);
/* The index of p[0..n), added if new. CP_OK, CP_ENOMEM or CP_ELIMIT (CP_STRTAB_MAX texts). */
int cp_strtab_intern(cp_strtab *s, const char *p, size_t n, uint32_t *idx);

#endif
