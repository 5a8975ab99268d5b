/* tree.c -- merged call trees (cp_tree.h is the contract; ui.md §4.1, §4.10, §8.5).
 *
 * Layout: everything is index-based (uint32) so arrays can grow without invalidating
 * references, and lookups go through open-addressing hash tables:
 *   - methods and param names are interned per tree (text -> index), so blobs with
 *     different dictionaries merge by text;
 *   - node 0 is a super-root; a call's root is its child. A node's child for a method is
 *     found in one tree-wide table keyed by (parent, method);
 *   - parameter groups live in containers (a node's params, the params nested in an SQL
 *     group, the variants of a signature group); one tree-wide table finds a group by
 *     (container, param, key). Groups and containers are recycled through free lists
 *     when the 256-group cap folds them into "::other".
 * Derived numbers (self, calls, ...) and the child order are computed only when the tree
 * is written (cp_tree_json), without recursion: a trace may nest a million levels deep.
 */
#include "cp_tree.h"
#include "common/cp_strtab.h"
#include "streams/cp_streams.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#define NONE UINT32_MAX
#define MAX_INDEX (UINT32_MAX - 2) /* indexes stay clear of NONE and of "+1" encodings */

void cp_tree_limits_default(cp_tree_limits *l)
{
    l->max_nodes = 1000000;
    l->max_events = 50000000;
    l->max_groups = 256;
    l->max_variants = 20;
    l->trim_chars = 15000;
}

/* ---- small helpers ------------------------------------------------------------------ */


static uint64_t hash_bytes(const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return cp_mix64(h ^ n);
}

static int set_err(char *err, size_t errlen, int st, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int set_err(char *err, size_t errlen, int st, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* Characters (code points) of UTF-8 text: the unit of the trim limit and of "length". */
static size_t utf8_chars(const char *p, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((uint8_t)p[i] & 0xC0) != 0x80;
    return c;
}

/* Bytes of the first `chars` characters of p[0..n). */
static size_t utf8_prefix(const char *p, size_t n, size_t chars)
{
    size_t seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (((uint8_t)p[i] & 0xC0) == 0x80) continue;
        if (seen == chars) return i;
        seen++;
    }
    return n;
}

/* ---- tree structures ---------------------------------------------------------------- */

typedef struct tnode {
    uint32_t method, parent, first_child, next_sibling;
    uint32_t cont;               /* params container, NONE until a value arrives */
    int64_t total, susp, inv;
    int64_t first, last;         /* absolute ms: earliest enter, latest exit */
} tnode;

enum { KEY_EXACT = 0, KEY_SIG, KEY_REF, KEY_OTHER };

typedef struct tgroup {
    uint32_t cont, param;
    uint8_t type;                /* KEY_*: exact text, SQL signature, unresolved ref, ::other */
    uint8_t ref_kind;            /* 1 xml / 3 sql for a big value (its reference is shown), else 0 */
    int32_t ref_file, ref_offset;
    uint64_t khash;              /* key: hash and byte length of the whole key text ... */
    size_t klen;
    char *ktext;                 /* ... and its first trim_chars characters (kstored bytes) */
    size_t kstored;
    char *vtext;                 /* representative (first) value: == ktext unless a signature */
    size_t vstored, vchars;      /* bytes kept, characters of the whole value */
    uint64_t vhash;              /* hash_bytes of the whole representative value: its "key" */
    int64_t dur, count;
    uint64_t last_inv, born;
    uint32_t sub;                /* params nested under this group (binds under SQL) */
    uint32_t var;                /* variants of a signature group */
    uint32_t next_free;
    uint32_t source;             /* a trimmed value: 1 + its call's index in `sources`, 0 = none */
} tgroup;

typedef struct tcont {
    uint32_t *g;                 /* groups, ::other ones included */
    size_t n, cap;
    size_t regular;              /* groups counting toward the cap (all but ::other) */
    uint8_t variants;            /* capped by max_variants instead of max_groups */
    uint64_t touched;            /* last invocation that added to it */
    uint32_t next_free;
} tcont;

/* The one whole value cp_tree_want_value asked for (GET /calls/{id}/value). */
enum { WANT_OFF = 0, WANT_LOOKING, WANT_FOUND, WANT_TOO_LARGE };

typedef struct tree_want {
    int state;                   /* WANT_* */
    char *param;                 /* the param's name (plen bytes) */
    size_t plen;
    uint64_t key;
    size_t max_bytes;
    char *text;                  /* WANT_FOUND: the whole value */
    size_t len;                  /* its bytes (WANT_TOO_LARGE: only these are known) */
} tree_want;

struct cp_tree {
    cp_tree_limits lim;
    cp_strtab methods, params;
    uint32_t p_binds, p_call_info; /* param indexes of "binds" and "call.info" (NONE: not seen) */

    tnode *nodes;
    size_t nnodes, capnodes;
    uint32_t *nslot;             /* node index, 0 = empty (node 0 is never a child) */
    size_t nslots;

    tcont *conts;
    size_t nconts, capconts;
    uint32_t cont_free;
    tgroup *groups;              /* group 0 unused, so that 0 can mean "empty slot" */
    size_t ngroups, capgroups, live_groups;
    uint32_t group_free;
    uint32_t *gslot;
    size_t gslots;

    uint32_t *touched;           /* containers an invocation added to (cap checks) */
    size_t ntouched, captouched;
    uint64_t inv_serial, born_serial;

    size_t calls, events;
    int truncated;
    int64_t start_ms, end_ms;

    tree_want want;              /* cp_tree_want_value */

    /* cp_tree_set_source: the call being added, interned into `sources` only when one of
     * its values is the first of a trimmed group (src_idx NONE until then) */
    char *src;
    size_t srclen;
    uint32_t src_idx;
    cp_strtab sources;
};

cp_tree *cp_tree_new(const cp_tree_limits *l)
{
    cp_tree *t = calloc(1, sizeof *t);
    if (!t) return NULL;
    if (l) t->lim = *l;
    else cp_tree_limits_default(&t->lim);
    t->p_binds = t->p_call_info = NONE;
    t->cont_free = t->group_free = NONE;
    t->src_idx = NONE;
    /* node 0: the super-root; group 0: a placeholder */
    if (cp_grow((void **)&t->nodes, &t->capnodes, 1, sizeof *t->nodes, 16) != CP_OK ||
        cp_grow((void **)&t->groups, &t->capgroups, 1, sizeof *t->groups, 16) != CP_OK) {
        cp_tree_free(t);
        return NULL;
    }
    memset(&t->nodes[0], 0, sizeof t->nodes[0]);
    t->nodes[0].method = t->nodes[0].parent = t->nodes[0].first_child = t->nodes[0].next_sibling = NONE;
    t->nodes[0].cont = NONE;
    t->nnodes = 1;
    memset(&t->groups[0], 0, sizeof t->groups[0]);
    t->ngroups = 1;
    return t;
}

void cp_tree_free(cp_tree *t)
{
    if (!t) return;
    cp_strtab_free(&t->methods);
    cp_strtab_free(&t->params);
    for (size_t i = 1; i < t->ngroups; i++) {
        if (t->groups[i].vtext != t->groups[i].ktext) free(t->groups[i].vtext);
        free(t->groups[i].ktext);
    }
    for (size_t i = 0; i < t->nconts; i++) free(t->conts[i].g);
    free(t->nodes);
    free(t->nslot);
    free(t->conts);
    free(t->groups);
    free(t->gslot);
    free(t->touched);
    free(t->want.param);
    free(t->want.text);
    free(t->src);
    cp_strtab_free(&t->sources);
    free(t);
}

int cp_tree_set_source(cp_tree *t, const char *id, size_t len)
{
    if (len > t->srclen || !t->src) {
        char *p = realloc(t->src, len + 1);
        if (!p) return CP_ENOMEM;
        t->src = p;
    }
    memcpy(t->src, id, len);
    t->src[len] = 0;
    t->srclen = len;
    t->src_idx = NONE;
    return CP_OK;
}

size_t cp_tree_calls(const cp_tree *t) { return t->calls; }

/* ---- one whole value (GET /calls/{id}/value) -------------------------------------------- */

uint64_t cp_tree_value_key(const char *text, size_t len) { return hash_bytes(text, len); }

int cp_tree_want_value(cp_tree *t, const char *param, size_t plen, uint64_t key, size_t max_bytes)
{
    tree_want *x = &t->want;
    free(x->param);
    free(x->text);
    memset(x, 0, sizeof *x);
    if (!(x->param = malloc(plen ? plen : 1))) return CP_ENOMEM;
    if (plen) memcpy(x->param, param, plen);
    x->plen = plen;
    x->key = key;
    x->max_bytes = max_bytes;
    x->state = WANT_LOOKING;
    return CP_OK;
}

int cp_tree_find_value(const cp_tree *t, const char **text, size_t *len)
{
    *text = NULL;
    *len = t->want.len;
    switch (t->want.state) {
    case WANT_FOUND: *text = t->want.text; return CP_OK;
    case WANT_TOO_LARGE: return CP_ELIMIT;
    case WANT_LOOKING: return CP_ENOTFOUND;
    default: return CP_EINVAL;
    }
}
size_t cp_tree_nodes(const cp_tree *t) { return t->nnodes - 1; }

/* ---- nodes ---------------------------------------------------------------------------- */

static size_t node_slot(uint32_t parent, uint32_t method, size_t mask)
{
    return cp_mix64(((uint64_t)parent << 32) | method) & mask;
}

static int node_rehash(cp_tree *t)
{
    size_t n = t->nslots ? t->nslots * 2 : 1024;
    uint32_t *slot = calloc(n, sizeof *slot);
    if (!slot) return CP_ENOMEM;
    for (size_t i = 1; i < t->nnodes; i++) {
        size_t j = node_slot(t->nodes[i].parent, t->nodes[i].method, n - 1);
        while (slot[j]) j = (j + 1) & (n - 1);
        slot[j] = (uint32_t)i;
    }
    free(t->nslot);
    t->nslot = slot;
    t->nslots = n;
    return CP_OK;
}

/* The parent's child running `method`, created on first use (ui.md §4.1 merging). */
static int node_child(cp_tree *t, uint32_t parent, uint32_t method, uint32_t *out)
{
    if (t->nnodes * 2 >= t->nslots && node_rehash(t) != CP_OK) return CP_ENOMEM;
    size_t mask = t->nslots - 1, i = node_slot(parent, method, mask);
    for (; t->nslot[i]; i = (i + 1) & mask) {
        const tnode *c = &t->nodes[t->nslot[i]];
        if (c->parent == parent && c->method == method) {
            *out = t->nslot[i];
            return CP_OK;
        }
    }
    if (t->nnodes - 1 >= t->lim.max_nodes || t->nnodes >= MAX_INDEX) return CP_ELIMIT;
    if (cp_grow((void **)&t->nodes, &t->capnodes, t->nnodes + 1, sizeof *t->nodes, 16) != CP_OK) return CP_ENOMEM;
    uint32_t id = (uint32_t)t->nnodes++;
    tnode *c = &t->nodes[id];
    memset(c, 0, sizeof *c);
    c->method = method;
    c->parent = parent;
    c->first_child = NONE;
    c->cont = NONE;
    c->next_sibling = t->nodes[parent].first_child;
    c->first = INT64_MAX;
    c->last = INT64_MIN;
    t->nodes[parent].first_child = id;
    t->nslot[i] = id;
    *out = id;
    return CP_OK;
}

/* ---- parameter groups --------------------------------------------------------------- */

/* What a group is looked up by. text/len is the whole key (exact value or signature). */
typedef struct gkey {
    uint32_t cont, param;
    uint8_t type;
    uint64_t hash;
    const char *text;
    size_t len;
} gkey;

/* One value being folded: its text and the facts computed once per value. */
typedef struct tval {
    const char *text;
    size_t len, chars;
    uint64_t hash;
    uint8_t ref_kind;            /* big value: 1 / 3, with its reference */
    int32_t ref_file, ref_offset;
} tval;

static uint64_t gkey_hash(const gkey *k)
{
    return cp_mix64(k->hash ^ ((uint64_t)k->cont << 32 ^ (uint64_t)k->param * 0x9E3779B97F4A7C15ULL) ^ k->type);
}

/* Keys longer than the trim limit are compared by hash, length and the kept prefix:
 * keeping whole multi-megabyte values only to tell them apart is not worth it. */
static int gkey_eq(const tgroup *g, const gkey *k)
{
    return g->cont == k->cont && g->param == k->param && g->type == k->type && g->khash == k->hash &&
           g->klen == k->len && (g->kstored == 0 || memcmp(g->ktext, k->text, g->kstored) == 0);
}

static int group_rehash(cp_tree *t)
{
    size_t n = t->gslots ? t->gslots * 2 : 256;
    uint32_t *slot = calloc(n, sizeof *slot);
    if (!slot) return CP_ENOMEM;
    for (size_t s = 0; s < t->gslots; s++) {
        uint32_t gi = t->gslot[s];
        if (!gi) continue;
        const tgroup *g = &t->groups[gi];
        gkey k = {g->cont, g->param, g->type, g->khash, NULL, g->klen};
        size_t j = gkey_hash(&k) & (n - 1);
        while (slot[j]) j = (j + 1) & (n - 1);
        slot[j] = gi;
    }
    free(t->gslot);
    t->gslot = slot;
    t->gslots = n;
    return CP_OK;
}

static uint32_t group_find(const cp_tree *t, const gkey *k, size_t *slot)
{
    size_t mask = t->gslots - 1, i = gkey_hash(k) & mask;
    for (; t->gslot[i]; i = (i + 1) & mask)
        if (gkey_eq(&t->groups[t->gslot[i]], k)) break;
    *slot = i;
    return t->gslot[i];
}

/* Backward-shift deletion keeps linear probing correct without tombstones. */
static void group_unmap(cp_tree *t, uint32_t gi)
{
    const tgroup *g = &t->groups[gi];
    gkey k = {g->cont, g->param, g->type, g->khash, g->ktext, g->klen};
    size_t mask = t->gslots - 1, i = gkey_hash(&k) & mask;
    while (t->gslot[i] != gi) i = (i + 1) & mask;
    for (size_t j = i;;) {
        j = (j + 1) & mask;
        uint32_t gj = t->gslot[j];
        if (!gj) break;
        const tgroup *h = &t->groups[gj];
        gkey hk = {h->cont, h->param, h->type, h->khash, NULL, h->klen};
        size_t home = gkey_hash(&hk) & mask;
        /* move gj into the hole unless its home lies cyclically in (i, j] */
        if ((i <= j) ? (home <= i || home > j) : (home <= i && home > j)) {
            t->gslot[i] = gj;
            i = j;
        }
    }
    t->gslot[i] = 0;
}

static int cont_new(cp_tree *t, int variants, uint32_t *out)
{
    uint32_t ci = t->cont_free;
    if (ci != NONE) {
        t->cont_free = t->conts[ci].next_free;
    } else {
        if (t->nconts >= MAX_INDEX) return CP_ELIMIT;
        if (cp_grow((void **)&t->conts, &t->capconts, t->nconts + 1, sizeof *t->conts, 16) != CP_OK) return CP_ENOMEM;
        ci = (uint32_t)t->nconts++;
        memset(&t->conts[ci], 0, sizeof t->conts[ci]);
    }
    tcont *c = &t->conts[ci];
    c->n = c->regular = 0;
    c->variants = (uint8_t)variants;
    c->touched = 0;
    c->next_free = NONE;
    *out = ci;
    return CP_OK;
}

static void group_release(cp_tree *t, uint32_t gi);

/* A container goes back to the free list with all its groups (and theirs). */
static void cont_release(cp_tree *t, uint32_t ci)
{
    if (ci == NONE) return;
    while (t->conts[ci].n) group_release(t, t->conts[ci].g[t->conts[ci].n - 1]);
    t->conts[ci].next_free = t->cont_free;
    t->cont_free = ci;
}

/* Removes a group from its container and the lookup table and frees it. Nesting is at
 * most two levels (variants, binds under SQL), so the recursion is shallow. */
static void group_release(cp_tree *t, uint32_t gi)
{
    tgroup *g = &t->groups[gi];
    tcont *c = &t->conts[g->cont];
    for (size_t i = 0; i < c->n; i++)
        if (c->g[i] == gi) {
            c->g[i] = c->g[--c->n];
            break;
        }
    if (g->type != KEY_OTHER) c->regular--;
    group_unmap(t, gi);
    uint32_t sub = g->sub, var = g->var;
    if (g->vtext != g->ktext) free(g->vtext);
    free(g->ktext);
    g->vtext = g->ktext = NULL;
    g->next_free = t->group_free;
    t->group_free = gi;
    t->live_groups--;
    cont_release(t, sub);
    cont_release(t, var);
}

static int copy_prefix(const char *p, size_t keep, char **out)
{
    *out = NULL;
    if (!keep) return CP_OK;
    if (!(*out = malloc(keep))) return CP_ENOMEM;
    memcpy(*out, p, keep);
    return CP_OK;
}

/* Fills a fresh group from its key and first value. */
static int group_init(cp_tree *t, tgroup *g, const gkey *k, const tval *v)
{
    memset(g, 0, sizeof *g);
    g->cont = k->cont;
    g->param = k->param;
    g->type = k->type;
    g->khash = k->hash;
    g->klen = k->len;
    g->sub = g->var = g->next_free = NONE;
    g->born = ++t->born_serial;
    g->kstored = utf8_prefix(k->text, k->len, t->lim.trim_chars);
    if (copy_prefix(k->text, g->kstored, &g->ktext) != CP_OK) return CP_ENOMEM;
    if (!v) return CP_OK; /* ::other */
    g->ref_kind = v->ref_kind;
    g->ref_file = v->ref_file;
    g->ref_offset = v->ref_offset;
    g->vchars = v->chars;
    g->vhash = v->hash;
    if (v->chars > t->lim.trim_chars && t->srclen) { /* where to get it whole */
        int st = t->src_idx == NONE ? cp_strtab_intern(&t->sources, t->src, t->srclen, &t->src_idx) : CP_OK;
        if (st != CP_OK) return st;
        g->source = t->src_idx + 1;
    }
    if (k->type != KEY_SIG) { /* the key is the value */
        g->vtext = g->ktext;
        g->vstored = g->kstored;
        return CP_OK;
    }
    g->vstored = utf8_prefix(v->text, v->len, t->lim.trim_chars);
    return copy_prefix(v->text, g->vstored, &g->vtext);
}

/* The group for key k, created with v as its representative if absent. */
static int group_get(cp_tree *t, const gkey *k, const tval *v, uint32_t *out)
{
    if ((t->live_groups + 2) * 2 > t->gslots && group_rehash(t) != CP_OK) return CP_ENOMEM;
    size_t slot;
    uint32_t gi = group_find(t, k, &slot);
    if (gi) {
        *out = gi;
        return CP_OK;
    }
    tcont *c = &t->conts[k->cont];
    if (cp_grow((void **)&c->g, &c->cap, c->n + 1, sizeof *c->g, 16) != CP_OK) return CP_ENOMEM;
    gi = t->group_free;
    if (gi != NONE) {
        t->group_free = t->groups[gi].next_free;
    } else {
        if (t->ngroups >= MAX_INDEX) return CP_ELIMIT;
        if (cp_grow((void **)&t->groups, &t->capgroups, t->ngroups + 1, sizeof *t->groups, 16) != CP_OK) return CP_ENOMEM;
        gi = (uint32_t)t->ngroups++;
    }
    tgroup *g = &t->groups[gi];
    if (group_init(t, g, k, v) != CP_OK) {
        free(g->ktext);
        g->ktext = g->vtext = NULL;
        g->next_free = t->group_free;
        t->group_free = gi;
        return CP_ENOMEM;
    }
    c->g[c->n++] = gi;
    if (k->type != KEY_OTHER) c->regular++;
    t->gslot[slot] = gi;
    t->live_groups++;
    *out = gi;
    return CP_OK;
}

/* An invocation counts once per group, however many of its values fell into it. */
static void group_credit(tgroup *g, int64_t dur, uint64_t inv)
{
    if (g->last_inv == inv) return;
    g->last_inv = inv;
    g->dur = cp_add_wrap64(g->dur, dur);
    g->count++;
}

static int touch(cp_tree *t, uint32_t ci, uint64_t inv)
{
    if (t->conts[ci].touched == inv) return CP_OK;
    if (cp_grow((void **)&t->touched, &t->captouched, t->ntouched + 1, sizeof *t->touched, 16) != CP_OK) return CP_ENOMEM;
    t->conts[ci].touched = inv;
    t->touched[t->ntouched++] = ci;
    return CP_OK;
}

/* Smallest duration goes first; among equals the youngest, so incumbents stay. */
static uint32_t smallest_group(const cp_tree *t, const tcont *c)
{
    uint32_t best = 0;
    for (size_t i = 0; i < c->n; i++) {
        const tgroup *g = &t->groups[c->g[i]];
        if (g->type == KEY_OTHER) continue;
        const tgroup *b = best ? &t->groups[best] : NULL;
        if (!b || g->dur < b->dur || (g->dur == b->dur && g->born > b->born)) best = c->g[i];
    }
    return best;
}

/* ui.md §4.1: over the cap, the smallest group folds into its param's "::other", which
 * keeps only totals and does not count toward the cap. */
static int enforce_cap(cp_tree *t, uint32_t ci)
{
    size_t cap = t->conts[ci].variants ? t->lim.max_variants : t->lim.max_groups;
    while (t->conts[ci].regular > cap) {
        uint32_t gi = smallest_group(t, &t->conts[ci]);
        gkey ok = {ci, t->groups[gi].param, KEY_OTHER, 0, "", 0};
        uint32_t oi;
        int st = group_get(t, &ok, NULL, &oi);
        if (st != CP_OK) return st;
        tgroup *o = &t->groups[oi], *g = &t->groups[gi];
        o->dur = cp_add_wrap64(o->dur, g->dur);
        o->count = cp_add_wrap64(o->count, g->count);
        group_release(t, gi);
    }
    return CP_OK;
}

/* ---- one call's walk ---------------------------------------------------------------- */

/* A value attached to the invocation on top of the stack, waiting for its EXIT. */
typedef struct ptag {
    uint32_t param;
    uint8_t sql;                 /* paramType 3 (the deduplicated big-value stream) */
    uint8_t binds;               /* the `binds` param */
    uint8_t unresolved;
    uint8_t ref_kind;
    int32_t ref_file, ref_offset;
    const char *ext;             /* text in the blob, or NULL: text at `off` in the arena */
    size_t off, len;
    size_t vidx;                 /* blob value index (per-value cache) or SIZE_MAX */
} ptag;

typedef struct frame {
    uint32_t node;
    int64_t enter;
    size_t tags, arena;          /* where this invocation's values start */
} frame;

/* Per blob value, computed on first use: a big SQL text used by 10 000 invocations is
 * hashed and reduced to its signature once. */
typedef struct vcache {
    uint8_t done, sig_done;
    uint64_t hash, sighash;
    size_t chars;
    char *sig;
    size_t siglen;
} vcache;

/* The merged pause timeline of one blob: disjoint runs, ascending, with prefix sums, so
 * an invocation's suspension is two binary searches. */
typedef struct timeline {
    int64_t *s, *e, *cum;        /* cum[i] = total length of runs before i */
    size_t n;
    int exact;                   /* 0 if a sum saturated: fall back to cp_pause_overlap */
} timeline;

typedef struct walk {
    cp_tree *t;
    const cp_blob *b;
    char *err;
    size_t errlen;
    frame *st;
    size_t depth, capst;
    ptag *tags;
    size_t ntags, captags;
    cp_buf arena;                /* UTF-8 text of inline values, LIFO with the frames */
    cp_buf scratch;              /* the signature of the value being folded */
    uint32_t *mcache, *pcache;   /* blob word index -> interned method / param, NONE = not yet */
    vcache *vc;
    timeline tl;
    int status, done, started;
    int partial;                 /* pass 2 ran out of nodes: part of the call is merged */
    int64_t root_enter, last_time;
    size_t events;
} walk;

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

static int timeline_build(timeline *tl, const cp_blob_pause *p, size_t n)
{
    memset(tl, 0, sizeof *tl);
    tl->exact = 1;
    if (!n) return CP_OK;
    tl->s = malloc(n * sizeof *tl->s);
    tl->e = malloc(n * sizeof *tl->e);
    tl->cum = malloc((n + 1) * sizeof *tl->cum);
    if (!tl->s || !tl->e || !tl->cum) return CP_ENOMEM;
    /* same backwards merge as cp_pause_overlap (blob.c): runs come out descending */
    for (size_t i = n; i-- > 0;) {
        int64_t e = p[i].end_ms, s;
        if (__builtin_sub_overflow(e, (int64_t)(p[i].duration_ms > 0 ? p[i].duration_ms : 0), &s)) s = INT64_MIN;
        if (tl->n && e >= tl->s[tl->n - 1]) {
            if (s < tl->s[tl->n - 1]) tl->s[tl->n - 1] = s;
            continue;
        }
        tl->s[tl->n] = s;
        tl->e[tl->n] = e;
        tl->n++;
    }
    for (size_t i = 0, j = tl->n - 1; i < j; i++, j--) {
        int64_t x = tl->s[i], y = tl->e[i];
        tl->s[i] = tl->s[j], tl->e[i] = tl->e[j];
        tl->s[j] = x, tl->e[j] = y;
    }
    tl->cum[0] = 0;
    for (size_t i = 0; i < tl->n; i++) {
        int64_t len;
        if (__builtin_sub_overflow(tl->e[i], tl->s[i], &len) || __builtin_add_overflow(tl->cum[i], len, &tl->cum[i + 1]))
            tl->exact = 0, tl->cum[i + 1] = 0;
    }
    return CP_OK;
}

static void timeline_free(timeline *tl)
{
    free(tl->s);
    free(tl->e);
    free(tl->cum);
}

/* Overlap of [a, z] with the runs; equals cp_pause_overlap on the blob's pauses. */
static int64_t timeline_overlap(const timeline *tl, const cp_blob *b, int64_t a, int64_t z)
{
    if (z <= a || !tl->n) return 0;
    if (!tl->exact) return cp_pause_overlap(b->pauses, b->npauses, a, z);
    size_t lo = 0, hi = tl->n; /* first run ending after a */
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (tl->e[m] <= a) lo = m + 1;
        else hi = m;
    }
    size_t i = lo;
    hi = tl->n; /* first run starting at or after z */
    while (lo < hi) {
        size_t m = lo + (hi - lo) / 2;
        if (tl->s[m] < z) lo = m + 1;
        else hi = m;
    }
    size_t j = lo;
    if (i >= j) return 0;
    int64_t sum = tl->cum[j] - tl->cum[i];
    if (tl->s[i] < a) sum -= a - tl->s[i];         /* cannot overflow: within run i */
    if (tl->e[j - 1] > z) sum -= tl->e[j - 1] - z; /* likewise */
    return sum;
}

static int walk_fail(walk *w, int st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int walk_fail(walk *w, int st, const char *fmt, ...)
{
    if (w->status == CP_OK) {
        w->status = st;
        if (w->err && w->errlen) {
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(w->err, w->errlen, fmt, ap);
            va_end(ap);
        }
    }
    return 1; /* stops the decoder */
}

/* Interned index of a word of this blob; an unknown id becomes "#<id>". `is_param`
 * picks the table (a word may be both a method and a param name, in theory). */
static int intern_word(walk *w, int32_t id, int is_param, uint32_t *out)
{
    cp_tree *t = w->t;
    cp_strtab *tab = is_param ? &t->params : &t->methods;
    uint32_t *cache = is_param ? w->pcache : w->mcache;
    const cp_blob_word *wd = cp_blob_find_word(w->b, id);
    size_t wi = wd ? (size_t)(wd - w->b->words) : 0;
    if (wd && cache[wi] != NONE) {
        *out = cache[wi];
        return CP_OK;
    }
    int st;
    if (wd) {
        st = cp_strtab_intern(tab, wd->text, wd->len, out);
    } else {
        char name[16];
        int n = snprintf(name, sizeof name, "#%d", (int)id);
        st = cp_strtab_intern(tab, name, (size_t)n, out);
    }
    if (st != CP_OK) return st;
    if (wd) cache[wi] = *out;
    if (is_param) { /* the two names the tree treats specially */
        size_t len;
        const char *s = cp_strtab_get(tab, *out, &len);
        if (len == 5 && memcmp(s, "binds", 5) == 0) t->p_binds = *out;
        if (len == 9 && memcmp(s, "call.info", 9) == 0) t->p_call_info = *out;
    }
    return CP_OK;
}

static int walk_enter(walk *w, const cp_trace_rec *r)
{
    cp_tree *t = w->t;
    uint32_t method, node;
    int st = intern_word(w, r->id, 0, &method);
    if (st == CP_OK) st = node_child(t, w->depth ? w->st[w->depth - 1].node : 0, method, &node);
    if (st == CP_OK) st = cp_grow((void **)&w->st, &w->capst, w->depth + 1, sizeof *w->st, 16);
    if (st == CP_ELIMIT) return walk_fail(w, st, "tree over its budget of %zu nodes", t->lim.max_nodes);
    if (st != CP_OK) return walk_fail(w, st, "%s", cp_strstatus(st));
    frame *f = &w->st[w->depth++];
    f->node = node;
    f->enter = r->time_ms;
    f->tags = w->ntags;
    f->arena = w->arena.len;
    if (!w->started) w->root_enter = r->time_ms;
    w->started = 1;
    return 0;
}

/* The reference text "<kind>:<file>:<offset>" goes to the arena like an inline value. */
static int ref_text(walk *w, ptag *p)
{
    p->off = w->arena.len;
    int st = cp_buf_printf(&w->arena, "%u:%d:%d", p->ref_kind, (int)p->ref_file, (int)p->ref_offset);
    p->len = w->arena.len - p->off;
    return st;
}

/* Where a TAG's value text comes from (protocol.md §5.5 paramType). */
static int tag_value(walk *w, const cp_trace_rec *r, ptag *p)
{
    p->ext = NULL;
    p->vidx = SIZE_MAX;
    if (r->param_type == 0 || r->param_type == 2) {
        p->off = w->arena.len;
        int st = cp_str16_to_utf8(&w->arena, r->value);
        p->len = w->arena.len - p->off;
        return st;
    }
    p->ref_kind = r->param_type;
    p->ref_file = r->ref_file;
    p->ref_offset = r->ref_offset;
    const cp_blob_value *v = cp_blob_find_value(w->b, r->param_type, r->ref_file, r->ref_offset);
    if (v && v->resolved) {
        p->ext = v->text;
        p->len = v->len;
        p->vidx = (size_t)(v - w->b->values);
        return CP_OK;
    }
    p->unresolved = 1;
    return ref_text(w, p);
}

static int walk_tag(walk *w, const cp_trace_rec *r)
{
    cp_tree *t = w->t;
    if (w->depth == 0) return 0; /* (pass 1 guarantees an ENTER first) */
    ptag p;
    memset(&p, 0, sizeof p);
    size_t mark = w->arena.len;
    int st = intern_word(w, r->id, 1, &p.param);
    if (st == CP_OK) st = tag_value(w, r, &p);
    if (st != CP_OK) return walk_fail(w, st, "%s", cp_strstatus(st));
    /* the agent's CallInfo record (protocol.md §5.5) is not a parameter */
    if (p.param == t->p_call_info && p.len == 0 && !p.ext) {
        w->arena.len = mark;
        return 0;
    }
    p.sql = r->param_type == 3;
    p.binds = p.param == t->p_binds;
    if (cp_grow((void **)&w->tags, &w->captags, w->ntags + 1, sizeof *w->tags, 16) != CP_OK)
        return walk_fail(w, CP_ENOMEM, "out of memory");
    w->tags[w->ntags++] = p;
    return 0;
}

/* Hash, character count and (for SQL-like values) signature of a value; for big values
 * from the per-value cache. A signature not cached lands in w->scratch. */
static int value_facts(walk *w, const ptag *p, int want_sig, tval *v, gkey *k)
{
    v->text = p->len ? (p->ext ? p->ext : (const char *)w->arena.data + p->off) : "";
    v->len = p->len;
    v->ref_kind = p->ref_kind;
    v->ref_file = p->ref_file;
    v->ref_offset = p->ref_offset;
    vcache *c = p->vidx != SIZE_MAX ? &w->vc[p->vidx] : NULL;
    if (c && c->done) {
        v->hash = c->hash;
        v->chars = c->chars;
    } else {
        v->hash = hash_bytes(v->text, v->len);
        v->chars = utf8_chars(v->text, v->len);
        if (c) c->done = 1, c->hash = v->hash, c->chars = v->chars;
    }
    k->text = v->text;
    k->len = v->len;
    k->hash = v->hash;
    if (!want_sig) return CP_OK;
    if (c && c->sig_done) {
        k->text = c->siglen ? c->sig : "";
        k->len = c->siglen;
        k->hash = c->sighash;
        return CP_OK;
    }
    cp_buf_reset(&w->scratch);
    if (cp_sql_signature(v->text, v->len, &w->scratch) != CP_OK) return CP_ENOMEM;
    k->text = w->scratch.len ? (const char *)w->scratch.data : "";
    k->len = w->scratch.len;
    k->hash = hash_bytes(k->text, k->len);
    if (c) {
        if (k->len && !(c->sig = malloc(k->len))) return CP_ENOMEM;
        if (k->len) memcpy(c->sig, k->text, k->len);
        c->siglen = k->len;
        c->sighash = k->hash;
        c->sig_done = 1;
    }
    return CP_OK;
}

static int cont_of_node(cp_tree *t, uint32_t node, uint32_t *out)
{
    if (t->nodes[node].cont == NONE) {
        uint32_t ci;
        int st = cont_new(t, 0, &ci);
        if (st != CP_OK) return st;
        t->nodes[node].cont = ci;
    }
    *out = t->nodes[node].cont;
    return CP_OK;
}

/* The sub-container (binds) or variant container of a group, created on first use. */
static int cont_of_group(cp_tree *t, uint32_t gi, int variants, uint32_t *out)
{
    uint32_t cur = variants ? t->groups[gi].var : t->groups[gi].sub;
    if (cur == NONE) {
        int st = cont_new(t, variants, &cur);
        if (st != CP_OK) return st;
        if (variants) t->groups[gi].var = cur;
        else t->groups[gi].sub = cur;
    }
    *out = cur;
    return CP_OK;
}

/* A value whose key is the one cp_tree_want_value asked for: kept whole if it is a value
 * of the asked param. Only called on a key match, so the name comparison costs the walk
 * nothing. Equal keys mean equal texts (a 64-bit hash of the whole text), so the first
 * match is the answer and later ones are not looked at. */
static int want_offer(cp_tree *t, uint32_t param, const tval *v)
{
    tree_want *x = &t->want;
    size_t plen;
    const char *name = cp_strtab_get(&t->params, param, &plen);
    if (plen != x->plen || (plen && memcmp(name, x->param, plen) != 0)) return CP_OK;
    x->len = v->len;
    if (v->len > x->max_bytes) { /* its length is all the caller gets: the 413 says it */
        x->state = WANT_TOO_LARGE;
        return CP_OK;
    }
    if (!(x->text = malloc(v->len ? v->len : 1))) return CP_ENOMEM;
    if (v->len) memcpy(x->text, v->text, v->len);
    x->state = WANT_FOUND;
    return CP_OK;
}

/* One value of an invocation into its container; *gi gets the group. */
static int fold_value(walk *w, const ptag *p, uint32_t ci, int64_t dur, uint64_t inv, uint32_t *gi)
{
    cp_tree *t = w->t;
    tval v;
    gkey k;
    int sig = !p->unresolved && (p->sql || p->binds);
    int st = value_facts(w, p, sig, &v, &k);
    if (st != CP_OK) return st;
    /* every value passes here (a node's, binds under SQL, each variant's text) */
    if (t->want.state == WANT_LOOKING && v.hash == t->want.key && (st = want_offer(t, p->param, &v)) != CP_OK)
        return st;
    k.cont = ci;
    k.param = p->param;
    k.type = p->unresolved ? KEY_REF : sig ? KEY_SIG : KEY_EXACT;
    if ((st = group_get(t, &k, &v, gi)) != CP_OK) return st;
    group_credit(&t->groups[*gi], dur, inv);
    if ((st = touch(t, ci, inv)) != CP_OK || !sig) return st;
    /* a signature group keeps the exact texts it folded as variants */
    uint32_t vc, vi;
    if ((st = cont_of_group(t, *gi, 1, &vc)) != CP_OK) return st;
    gkey vk = {vc, p->param, KEY_EXACT, v.hash, v.text, v.len};
    if ((st = group_get(t, &vk, &v, &vi)) != CP_OK) return st;
    group_credit(&t->groups[vi], dur, inv);
    return touch(t, vc, inv);
}

/* At EXIT: the invocation's values become groups of the node (ui.md §4.1 params). */
static int fold_invocation(walk *w, uint32_t node, int64_t dur, size_t from)
{
    cp_tree *t = w->t;
    if (from == w->ntags) return CP_OK;
    uint64_t inv = ++t->inv_serial;
    uint32_t ci, last_sql = NONE;
    int st = cont_of_node(t, node, &ci);
    t->ntouched = 0;
    for (size_t i = from; i < w->ntags && st == CP_OK; i++) {
        const ptag *p = &w->tags[i];
        uint32_t target = ci, gi;
        /* binds nest under the most recent SQL value of the same invocation */
        if (p->binds && last_sql != NONE) st = cont_of_group(t, last_sql, 0, &target);
        if (st == CP_OK) st = fold_value(w, p, target, dur, inv, &gi);
        if (st == CP_OK && p->sql && !p->binds) last_sql = gi;
    }
    /* caps only now, so no group referenced above disappears mid-way; innermost first */
    for (size_t i = t->ntouched; i-- > 0 && st == CP_OK;) st = enforce_cap(t, t->touched[i]);
    return st;
}

static int walk_exit(walk *w, const cp_trace_rec *r)
{
    cp_tree *t = w->t;
    if (w->depth == 0) return 1; /* (pass 1 stops there; never reached) */
    frame f = w->st[--w->depth];
    tnode *n = &t->nodes[f.node];
    int64_t exit = r->time_ms;
    int64_t dur = (int64_t)((uint64_t)exit - (uint64_t)f.enter); /* garbage times wrap, never UB */
    n->total = cp_add_wrap64(n->total, dur);
    n->inv++;
    n->susp = sat_add(n->susp, timeline_overlap(&w->tl, w->b, f.enter, exit));
    if (f.enter < n->first) n->first = f.enter;
    if (exit > n->last) n->last = exit;
    int st = fold_invocation(w, f.node, dur, f.tags);
    w->ntags = f.tags;
    w->arena.len = f.arena;
    if (st != CP_OK) return walk_fail(w, st, "%s", cp_strstatus(st));
    if (w->depth == 0) {
        w->done = 1;
        return 1; /* the depth-0 EXIT: the call is complete, ignore what follows */
    }
    return 0;
}

/* Pass 2 sink: builds the tree. */
static int build_sink(void *ud, const cp_trace_rec *r)
{
    walk *w = ud;
    if (r->type != CP_TRACE_ENTER && r->type != CP_TRACE_EXIT && r->type != CP_TRACE_TAG) return 0;
    w->last_time = r->time_ms;
    if (r->type == CP_TRACE_ENTER) return walk_enter(w, r);
    if (r->type == CP_TRACE_TAG) return walk_tag(w, r);
    return walk_exit(w, r);
}

/* Pass 1 sink: the trace must be well-formed and start with an ENTER, and the events up
 * to the depth-0 EXIT must fit the budget -- all checked before the tree is touched. */
static int check_sink(void *ud, const cp_trace_rec *r)
{
    walk *w = ud;
    if (r->type != CP_TRACE_ENTER && r->type != CP_TRACE_EXIT && r->type != CP_TRACE_TAG) return 0;
    if (!w->started && r->type != CP_TRACE_ENTER)
        return walk_fail(w, CP_ECORRUPT, "trace: the first event (offset %llu) is not an ENTER",
                         (unsigned long long)r->offset);
    w->started = 1;
    if (++w->events > w->t->lim.max_events - w->t->events)
        return walk_fail(w, CP_ELIMIT, "trees over the budget of %zu events", w->t->lim.max_events);
    if (r->type == CP_TRACE_ENTER) w->depth++;
    if (r->type == CP_TRACE_EXIT && --w->depth == 0) {
        w->done = 1;
        return 1;
    }
    return 0;
}

/* Decodes the blob's trace into a sink. Returns CP_OK when the events ran out or the
 * sink finished the call, CP_ECORRUPT for bytes that are not a trace file, or the
 * sink's own failure. *cut is set when the trace ends before its depth-0 EXIT. */
static int run_trace(walk *w, int (*sink)(void *, const cp_trace_rec *), int *cut)
{
    cp_dec_sink s = {.ud = w, .on_trace = sink};
    cp_dec *d = cp_dec_new(CP_STREAM_TRACE, NULL, &s, 0);
    if (!d) return set_err(w->err, w->errlen, CP_ENOMEM, "out of memory");
    int st = cp_dec_feed(d, w->b->trace, w->b->trace_len);
    if (st == CP_OK) st = cp_dec_finish(d);
    if (w->status != CP_OK) st = w->status;
    else if (w->done) st = CP_OK;
    else if (st == CP_OK || st == CP_AGAIN) /* clean or torn end without the depth-0 EXIT */
        st = w->started ? (*cut = 1, CP_OK) : set_err(w->err, w->errlen, CP_ECORRUPT, "trace: no events");
    else
        st = set_err(w->err, w->errlen, CP_ECORRUPT, "trace: %s", cp_dec_error(d));
    cp_dec_free(d);
    return st;
}

static void walk_reset(walk *w)
{
    w->status = CP_OK;
    w->done = w->started = 0;
    w->depth = w->ntags = w->events = 0;
}

static void walk_free(walk *w)
{
    free(w->st);
    free(w->tags);
    cp_buf_free(&w->arena);
    cp_buf_free(&w->scratch);
    free(w->mcache);
    free(w->pcache);
    if (w->vc)
        for (size_t i = 0; i < w->b->nvalues; i++) free(w->vc[i].sig);
    free(w->vc);
    timeline_free(&w->tl);
}

static int walk_init(walk *w)
{
    size_t nw = w->b->nwords;
    if (nw) {
        w->mcache = malloc(nw * sizeof *w->mcache);
        w->pcache = malloc(nw * sizeof *w->pcache);
        if (!w->mcache || !w->pcache) return CP_ENOMEM;
        memset(w->mcache, 0xFF, nw * sizeof *w->mcache); /* NONE */
        memset(w->pcache, 0xFF, nw * sizeof *w->pcache);
    }
    if (w->b->nvalues && !(w->vc = calloc(w->b->nvalues, sizeof *w->vc))) return CP_ENOMEM;
    return timeline_build(&w->tl, w->b->pauses, w->b->npauses);
}

/* A cut trace: the open invocations end at the last event's time. */
static int close_open(walk *w)
{
    cp_trace_rec r;
    memset(&r, 0, sizeof r);
    r.type = CP_TRACE_EXIT;
    r.time_ms = w->last_time;
    while (w->depth > 0 && w->status == CP_OK) walk_exit(w, &r);
    return w->status;
}

/* Pass 2. The node budget can only be checked while merging; when it runs out, the
 * invocations already open are closed at the last event, so that the part merged is
 * consistent and counted like a cut trace (the caller decides whether to show it). */
static int build(walk *w, int *cut)
{
    walk_reset(w);
    *cut = 0;
    int st = run_trace(w, build_sink, cut);
    if (st == CP_OK && *cut) return close_open(w);
    if (st == CP_ELIMIT && w->started) {
        w->status = CP_OK;
        close_open(w);
        *cut = 1;
        w->partial = 1;
    }
    return st;
}

static void note_call(cp_tree *t, const walk *w, int cut)
{
    t->events += w->events;
    if (cut) t->truncated = 1;
    if (t->calls == 0 || w->root_enter < t->start_ms) t->start_ms = w->root_enter;
    if (t->calls == 0 || w->last_time > t->end_ms) t->end_ms = w->last_time;
    t->calls++;
}

int cp_tree_add(cp_tree *t, const cp_blob *b, char *err, size_t errlen)
{
    walk w;
    memset(&w, 0, sizeof w);
    w.t = t;
    w.b = b;
    w.err = err;
    w.errlen = errlen;
    if (err && errlen) err[0] = '\0';
    int cut = 0;
    int st = run_trace(&w, check_sink, &cut);
    size_t events = w.events;
    if (st == CP_OK) st = walk_init(&w);
    if (st == CP_OK) st = build(&w, &cut);
    if (st == CP_ENOMEM && err && errlen && !err[0]) snprintf(err, errlen, "out of memory");
    if (st == CP_OK || w.partial) {
        w.events = events;
        note_call(t, &w, cut);
    }
    walk_free(&w);
    return st;
}

/* ---- JSON --------------------------------------------------------------------------- */


/* Derived numbers of every node, computed once per output. */
typedef struct derived {
    int64_t *ctotal, *csusp, *calls; /* sums over children / descendants */
    uint32_t *kids;                  /* children in output order, grouped by parent ... */
    size_t *kstart;                  /* ... node i's are kids[kstart[i] .. kstart[i+1]) */
} derived;

static void derived_free(derived *d)
{
    free(d->ctotal);
    free(d->csusp);
    free(d->calls);
    free(d->kids);
    free(d->kstart);
}

typedef struct child_key {
    int64_t total, self, susp, ssusp, invcalls, inv;
    const char *m;
    size_t mlen;
    uint32_t node;
} child_key;

static int desc64(int64_t a, int64_t b) { return a > b ? -1 : a < b ? 1 : 0; }

/* cp_tree.h order: total, self, suspension, self suspension, invocations + calls,
 * invocations (all descending), then method text. */
static int child_cmp(const void *pa, const void *pb)
{
    const child_key *a = pa, *b = pb;
    int c;
    if ((c = desc64(a->total, b->total)) || (c = desc64(a->self, b->self)) || (c = desc64(a->susp, b->susp)) ||
        (c = desc64(a->ssusp, b->ssusp)) || (c = desc64(a->invcalls, b->invcalls)) || (c = desc64(a->inv, b->inv)))
        return c;
    size_t n = a->mlen < b->mlen ? a->mlen : b->mlen;
    if (n && (c = memcmp(a->m, b->m, n))) return c;
    if (a->mlen != b->mlen) return a->mlen < b->mlen ? -1 : 1;
    return a->node < b->node ? -1 : a->node > b->node;
}

/* Children are created after their parents (higher index), so one reverse sweep sums
 * every subtree without recursion. */
static void sum_children(const cp_tree *t, derived *d)
{
    for (size_t i = t->nnodes; i-- > 1;) {
        const tnode *n = &t->nodes[i];
        uint32_t p = n->parent;
        d->ctotal[p] = cp_add_wrap64(d->ctotal[p], n->total);
        d->csusp[p] = cp_add_wrap64(d->csusp[p], n->susp);
        d->calls[p] = cp_add_wrap64(d->calls[p], cp_add_wrap64(n->inv, d->calls[i]));
    }
}

/* The super-root has no invocations of its own: its numbers are its children's sums. */
static void super_root(const cp_tree *t, const derived *d, tnode *out)
{
    *out = t->nodes[0];
    out->total = d->ctotal[0];
    out->susp = d->csusp[0];
    out->inv = 0;
    out->first = INT64_MAX;
    out->last = INT64_MIN;
    for (uint32_t c = t->nodes[0].first_child; c != NONE; c = t->nodes[c].next_sibling) {
        out->inv = cp_add_wrap64(out->inv, t->nodes[c].inv);
        if (t->nodes[c].first < out->first) out->first = t->nodes[c].first;
        if (t->nodes[c].last > out->last) out->last = t->nodes[c].last;
    }
}

static void fill_key(const cp_tree *t, const derived *d, uint32_t c, child_key *k)
{
    const tnode *n = &t->nodes[c];
    k->total = n->total;
    k->self = (int64_t)((uint64_t)n->total - (uint64_t)d->ctotal[c]);
    k->susp = n->susp;
    k->ssusp = (int64_t)((uint64_t)n->susp - (uint64_t)d->csusp[c]);
    k->inv = n->inv;
    k->invcalls = cp_add_wrap64(n->inv, d->calls[c]);
    k->m = cp_strtab_get(&t->methods, n->method, &k->mlen);
    k->node = c;
}

static int order_children(const cp_tree *t, derived *d)
{
    size_t n = t->nnodes;
    d->kstart = calloc(n + 1, sizeof *d->kstart);
    d->kids = malloc(n * sizeof *d->kids);
    child_key *keys = malloc(n * sizeof *keys);
    if (!d->kstart || !d->kids || !keys) {
        free(keys);
        return CP_ENOMEM;
    }
    for (size_t i = 1; i < n; i++) d->kstart[t->nodes[i].parent + 1]++;
    for (size_t i = 0; i < n; i++) d->kstart[i + 1] += d->kstart[i];
    for (size_t i = 0; i < n; i++) {
        size_t k = d->kstart[i];
        for (uint32_t c = t->nodes[i].first_child; c != NONE; c = t->nodes[c].next_sibling) fill_key(t, d, c, &keys[k++]);
        size_t cnt = k - d->kstart[i];
        if (cnt > 1) qsort(&keys[d->kstart[i]], cnt, sizeof *keys, child_cmp);
    }
    for (size_t i = 0; i + 1 < n; i++) d->kids[i] = keys[i].node;
    free(keys);
    return CP_OK;
}

static int derive(const cp_tree *t, derived *d)
{
    memset(d, 0, sizeof *d);
    size_t n = t->nnodes;
    d->ctotal = calloc(n, sizeof *d->ctotal);
    d->csusp = calloc(n, sizeof *d->csusp);
    d->calls = calloc(n, sizeof *d->calls);
    if (!d->ctotal || !d->csusp || !d->calls) return CP_ENOMEM;
    sum_children(t, d);
    return order_children(t, d);
}

typedef struct group_key {
    const char *pname;
    size_t plen;
    int other;
    int64_t dur, count;
    const char *v;
    size_t vlen;
    uint64_t born;
    uint32_t g;
} group_key;

static int bytes_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : an < bn ? -1 : an > bn;
}

/* Params by name; within one, groups by duration desc, "::other" last. */
static int group_cmp(const void *pa, const void *pb)
{
    const group_key *a = pa, *b = pb;
    int c;
    if ((c = bytes_cmp(a->pname, a->plen, b->pname, b->plen))) return c;
    if (a->other != b->other) return a->other - b->other;
    if ((c = desc64(a->dur, b->dur)) || (c = desc64(a->count, b->count))) return c;
    if ((c = bytes_cmp(a->v, a->vlen, b->v, b->vlen))) return c;
    return a->born < b->born ? -1 : a->born > b->born;
}

/* A container's groups in output order (malloc'ed; NULL with n = 0 when empty). */
static int sorted_groups(const cp_tree *t, uint32_t ci, group_key **out, size_t *n)
{
    const tcont *c = &t->conts[ci];
    *out = NULL;
    *n = c->n;
    if (!c->n) return CP_OK;
    group_key *k = malloc(c->n * sizeof *k);
    if (!k) return CP_ENOMEM;
    for (size_t i = 0; i < c->n; i++) {
        const tgroup *g = &t->groups[c->g[i]];
        k[i].pname = cp_strtab_get(&t->params, g->param, &k[i].plen);
        k[i].other = g->type == KEY_OTHER;
        k[i].dur = g->dur;
        k[i].count = g->count;
        k[i].v = g->vtext ? g->vtext : "";
        k[i].vlen = g->vstored;
        k[i].born = g->born;
        k[i].g = c->g[i];
    }
    qsort(k, c->n, sizeof *k, group_cmp);
    *out = k;
    return CP_OK;
}

/* value, duration, count and the flags every value entry may carry. */
static int put_value(const cp_tree *t, cp_buf *out, const tgroup *g)
{
    int st = cp_buf_puts(out, "{\"value\":");
    if (g->type == KEY_OTHER) st = st ? st : cp_json_str(out, "::other", 7);
    else st = st ? st : cp_json_str(out, g->vtext ? g->vtext : "", g->vstored);
    st = st ? st : cp_buf_put_field(out, ",\"duration\":", g->dur);
    st = st ? st : cp_buf_put_field(out, ",\"count\":", g->count);
    if (g->type == KEY_REF) st = st ? st : cp_buf_puts(out, ",\"unresolved\":true");
    if (g->type != KEY_OTHER && g->vchars > t->lim.trim_chars) {
        st = st ? st : cp_buf_puts(out, ",\"trimmed\":true");
        st = st ? st : cp_buf_put_field(out, ",\"length\":", (int64_t)g->vchars);
    }
    if (g->ref_kind && g->type != KEY_OTHER)
        st = st ? st : cp_buf_printf(out, ",\"ref\":\"%u:%d:%d\"", g->ref_kind, (int)g->ref_file, (int)g->ref_offset);
    /* appended last, and only where the text was cut: what the client sends back to get
     * the whole value (cp_tree_want_value) */
    if (g->type != KEY_OTHER && g->vchars > t->lim.trim_chars)
        st = st ? st : cp_buf_printf(out, ",\"key\":\"%016" PRIx64 "\"", g->vhash);
    if (g->type != KEY_OTHER && g->source) {
        size_t n;
        const char *id = cp_strtab_get(&t->sources, g->source - 1, &n);
        st = st ? st : cp_buf_puts(out, ",\"source\":");
        st = st ? st : cp_json_str(out, id, n);
    }
    return st;
}

static int put_params(const cp_tree *t, cp_buf *out, uint32_t ci);

/* Variants only when there is a choice: a single text equal to the group's is noise. */
static int put_variants(const cp_tree *t, cp_buf *out, uint32_t vc)
{
    if (vc == NONE || t->conts[vc].n < 2) return CP_OK;
    group_key *k;
    size_t n;
    int st = sorted_groups(t, vc, &k, &n);
    st = st ? st : cp_buf_puts(out, ",\"variants\":[");
    for (size_t i = 0; i < n && st == CP_OK; i++) {
        if (i) st = cp_buf_putc(out, ',');
        st = st ? st : put_value(t, out, &t->groups[k[i].g]);
        st = st ? st : cp_buf_putc(out, '}');
    }
    st = st ? st : cp_buf_putc(out, ']');
    free(k);
    return st;
}

static int put_group(const cp_tree *t, cp_buf *out, uint32_t gi)
{
    const tgroup *g = &t->groups[gi];
    int st = put_value(t, out, g);
    st = st ? st : put_variants(t, out, g->var);
    if (g->sub != NONE && t->conts[g->sub].n) st = st ? st : put_params(t, out, g->sub);
    return st ? st : cp_buf_putc(out, '}');
}

/* ,"params":[{"param":i,"groups":[...]},...] for a container; nothing when empty. */
static int put_params(const cp_tree *t, cp_buf *out, uint32_t ci)
{
    group_key *k;
    size_t n;
    int st = sorted_groups(t, ci, &k, &n);
    if (st != CP_OK || n == 0) return st;
    st = cp_buf_puts(out, ",\"params\":[");
    for (size_t i = 0; i < n && st == CP_OK; i++) {
        uint32_t param = t->groups[k[i].g].param;
        int first = i == 0 || t->groups[k[i - 1].g].param != param;
        int last = i + 1 == n || t->groups[k[i + 1].g].param != param;
        if (first) {
            st = cp_buf_puts(out, i ? ",{\"param\":" : "{\"param\":");
            st = st ? st : cp_buf_put_i64(out, param);
            st = st ? st : cp_buf_puts(out, ",\"groups\":[");
        } else {
            st = cp_buf_putc(out, ',');
        }
        st = st ? st : put_group(t, out, k[i].g);
        if (last) st = st ? st : cp_buf_puts(out, "]}");
    }
    free(k);
    return st ? st : cp_buf_putc(out, ']');
}

/* Everything of a node up to (not including) its children. */
static int put_node_head(const cp_tree *t, const derived *d, cp_buf *out, const tnode *n, uint32_t id,
                         uint32_t method, int64_t start)
{
    int st = cp_buf_put_field(out, "{\"method\":", method);
    st = st ? st : cp_buf_put_field(out, ",\"total\":", n->total);
    st = st ? st : cp_buf_put_field(out, ",\"self\":", (int64_t)((uint64_t)n->total - (uint64_t)d->ctotal[id]));
    st = st ? st : cp_buf_put_field(out, ",\"suspension\":", n->susp);
    st = st ? st : cp_buf_put_field(out, ",\"self_suspension\":", (int64_t)((uint64_t)n->susp - (uint64_t)d->csusp[id]));
    st = st ? st : cp_buf_put_field(out, ",\"invocations\":", n->inv);
    st = st ? st : cp_buf_put_field(out, ",\"calls\":", d->calls[id]);
    st = st ? st : cp_buf_put_field(out, ",\"first\":", (int64_t)((uint64_t)n->first - (uint64_t)start));
    st = st ? st : cp_buf_put_field(out, ",\"last\":", (int64_t)((uint64_t)n->last - (uint64_t)start));
    if (n->cont != NONE) st = st ? st : put_params(t, out, n->cont);
    return st;
}

/* Depth-first with an explicit stack of (node, next child position). */
static int put_tree(const cp_tree *t, const derived *d, cp_buf *out, uint32_t root, const tnode *root_node,
                    uint32_t root_method)
{
    typedef struct level { uint32_t node; size_t next; } level;
    level *stack = NULL;
    size_t depth = 0, cap = 0;
    int st = put_node_head(t, d, out, root_node, root, root_method, t->start_ms);
    if (st == CP_OK && cp_grow((void **)&stack, &cap, 1, sizeof *stack, 16) != CP_OK) st = CP_ENOMEM;
    if (st == CP_OK) stack[depth++] = (level){root, d->kstart[root]};
    while (st == CP_OK && depth) {
        level *l = &stack[depth - 1];
        if (l->next == d->kstart[l->node + 1]) { /* all children written */
            st = cp_buf_puts(out, l->next > d->kstart[l->node] ? "]}" : "}");
            depth--;
            continue;
        }
        uint32_t c = d->kids[l->next];
        st = cp_buf_puts(out, l->next == d->kstart[l->node] ? ",\"children\":[" : ",");
        l->next++;
        st = st ? st : put_node_head(t, d, out, &t->nodes[c], c, t->nodes[c].method, t->start_ms);
        if (st == CP_OK && cp_grow((void **)&stack, &cap, depth + 1, sizeof *stack, 16) != CP_OK) st = CP_ENOMEM;
        if (st == CP_OK) stack[depth++] = (level){c, d->kstart[c]};
    }
    free(stack);
    return st;
}

static int put_strtab(cp_buf *out, const cp_strtab *s, const char *extra)
{
    int st = cp_buf_putc(out, '[');
    for (size_t i = 0; i < s->n && st == CP_OK; i++) {
        size_t len;
        const char *p = cp_strtab_get(s, (uint32_t)i, &len);
        if (i) st = cp_buf_putc(out, ',');
        st = st ? st : cp_json_str(out, p, len);
    }
    if (extra) {
        if (s->n) st = st ? st : cp_buf_putc(out, ',');
        st = st ? st : cp_json_str(out, extra, strlen(extra));
    }
    return st ? st : cp_buf_putc(out, ']');
}

static int put_json(const cp_tree *t, const derived *d, const char *calls_json, size_t calls_len, cp_buf *out)
{
    /* several calls: a synthetic "<N> calls" root, appended to the method names */
    char synth[32];
    int multi = t->calls > 1;
    snprintf(synth, sizeof synth, "%zu calls", t->calls);
    int st = cp_buf_puts(out, "{\"version\":1,\"methods\":");
    st = st ? st : put_strtab(out, &t->methods, multi ? synth : NULL);
    st = st ? st : cp_buf_puts(out, ",\"params\":");
    st = st ? st : put_strtab(out, &t->params, NULL);
    st = st ? st : cp_buf_puts(out, ",\"calls\":");
    st = st ? st : (calls_json ? cp_buf_append(out, calls_json, calls_len) : cp_buf_puts(out, "[]"));
    st = st ? st : cp_buf_puts(out, ",\"root\":");
    if (t->calls == 0) {
        st = st ? st : cp_buf_puts(out, "null");
    } else if (multi) {
        tnode sr;
        super_root(t, d, &sr);
        st = st ? st : put_tree(t, d, out, 0, &sr, (uint32_t)t->methods.n);
    } else {
        uint32_t r = t->nodes[0].first_child;
        st = st ? st : put_tree(t, d, out, r, &t->nodes[r], t->nodes[r].method);
    }
    st = st ? st : cp_buf_puts(out, t->truncated ? ",\"truncated\":true" : ",\"truncated\":false");
    st = st ? st : cp_buf_put_field(out, ",\"nodes\":", (int64_t)cp_tree_nodes(t));
    st = st ? st : cp_buf_put_field(out, ",\"start_ms\":", t->calls ? t->start_ms : 0);
    st = st ? st : cp_buf_put_field(out, ",\"end_ms\":", t->calls ? t->end_ms : 0);
    return st ? st : cp_buf_putc(out, '}');
}

int cp_tree_json(const cp_tree *t, const char *calls_json, size_t calls_len, cp_buf *out)
{
    size_t start = out->len;
    derived d;
    int st = derive(t, &d);
    if (st == CP_OK) st = put_json(t, &d, calls_json, calls_len, out);
    derived_free(&d);
    if (st != CP_OK) out->len = start;
    return st;
}
