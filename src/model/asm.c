/* asm.c -- call assembly for one pod restart (cp_asm.h).
 *
 * Three kinds of state:
 *   threads  thread id -> nesting depth and the root call being tracked (its extent);
 *   extents  (traceFileIndex, chunk offset, record index) -> where a root call's events
 *            lie: one segment per chunk of its thread, byte ranges in the trace files;
 *   calls    calls records waiting: for their extent (keyed like it), to be assembled
 *            (ready), or for a sql/xml value or a word that has not arrived (retry).
 * An extent holds positions only; the bytes are read back from the stored stream files
 * when its call is assembled, so a pod restart costs memory in proportion to the calls
 * in flight, not to its trace volume.
 *
 * Complete extents of the common shape (one segment, numbers that fit) wait for their
 * calls record as *slim* entries: 64 bytes in a ring kept in completion order (and 8 per
 * sql/xml reference in a second ring), found through a table of 4-byte slots, instead of
 * ~370 bytes of extent, arrays and map entry. The agent flushes its streams one after the
 * other, each waiting for its acks (protocol.md §3.10), so a flush cycle's calls records
 * arrive after the trace they claim: under load hundreds of thousands of complete extents
 * wait at once.
 */
#include "cp_asm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONTAINER(p, type, field) ((type *)(void *)((char *)(p) - offsetof(type, field)))
#define MAX_SEGS 65536          /* chunks per call: beyond, the call is too large */
#define MAX_THREADS 1000000     /* thread states per connection */
#define MAX_SPARE 16            /* recycled pcalls / extents kept per connection */
#define VCACHE_MIN_SLOTS 16     /* resolved-value cache entries per connection, to begin with */
#define VCACHE_SLOTS 512        /* ... at most */
#define VCACHE_BYTES (1u << 20) /* ... and the memory they may hold together */
#define VALUE_FIRST_READ 1024   /* bytes read at a value's offset in the first go */

/* ---- intrusive lists ------------------------------------------------------------------ */

typedef struct link {
    struct link *prev, *next;
} link;

static void list_init(link *h) { h->prev = h->next = h; }
static int list_empty(const link *h) { return h->next == h; }
static void list_push(link *h, link *e)
{
    e->prev = h->prev;
    e->next = h;
    h->prev->next = e;
    h->prev = e;
}
static void list_del(link *e)
{
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = e;
}

/* ---- a small hash map: (a, b) -> pointer, linear probing, backward-shift delete -------- */

typedef struct kent {
    uint64_t a, b;
    void *v;                    /* NULL = empty */
} kent;

typedef struct kmap {
    kent *e;
    size_t cap, n;              /* cap is a power of two */
} kmap;

static uint64_t kmix(uint64_t a, uint64_t b) { return cp_mix64(a ^ cp_mix64(b + 0x632BE59BD9B4E019ULL)); }

static int kmap_grow(kmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    kent *e = calloc(cap, sizeof *e);
    if (!e) return CP_ENOMEM;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->e[i].v) continue;
        size_t j = kmix(m->e[i].a, m->e[i].b) & (cap - 1);
        while (e[j].v) j = (j + 1) & (cap - 1);
        e[j] = m->e[i];
    }
    free(m->e);
    m->e = e;
    m->cap = cap;
    return CP_OK;
}

static void *kmap_get(const kmap *m, uint64_t a, uint64_t b)
{
    if (!m->cap) return NULL;
    for (size_t j = kmix(a, b) & (m->cap - 1);; j = (j + 1) & (m->cap - 1)) {
        if (!m->e[j].v) return NULL;
        if (m->e[j].a == a && m->e[j].b == b) return m->e[j].v;
    }
}

/* Inserts or replaces. */
static int kmap_put(kmap *m, uint64_t a, uint64_t b, void *v)
{
    if ((m->n + 1) * 4 > m->cap * 3 && kmap_grow(m) != CP_OK) return CP_ENOMEM;
    size_t j = kmix(a, b) & (m->cap - 1);
    while (m->e[j].v && !(m->e[j].a == a && m->e[j].b == b)) j = (j + 1) & (m->cap - 1);
    if (!m->e[j].v) m->n++;
    m->e[j] = (kent){a, b, v};
    return CP_OK;
}

static void kmap_del(kmap *m, uint64_t a, uint64_t b)
{
    if (!m->cap) return;
    size_t mask = m->cap - 1, j = kmix(a, b) & mask;
    for (;; j = (j + 1) & mask) {
        if (!m->e[j].v) return;
        if (m->e[j].a == a && m->e[j].b == b) break;
    }
    m->e[j].v = NULL;
    m->n--;
    /* shift back the entries of the probe run that follows, so lookups stay correct */
    for (size_t i = (j + 1) & mask; m->e[i].v; i = (i + 1) & mask) {
        size_t home = kmix(m->e[i].a, m->e[i].b) & mask;
        /* move e[i] to the hole j unless its home lies cyclically in (j, i] */
        int stays = j <= i ? (home > j && home <= i) : (home > j || home <= i);
        if (stays) continue;
        m->e[j] = m->e[i];
        m->e[i].v = NULL;
        j = i;
    }
}

static void kmap_free(kmap *m)
{
    free(m->e);
    memset(m, 0, sizeof *m);
}

/* ---- state ------------------------------------------------------------------------------ */

typedef struct seg {
    int32_t file;
    uint64_t off, len;          /* event bytes of one chunk */
    int64_t thread_id, chunk_time;
} seg;

/* A big-value reference (TAG paramType 1 = xml, 3 = sql) inside a call's events. */
typedef struct vref {
    uint8_t kind;
    int32_t file, offset;
} vref;

typedef struct extent {
    int32_t file, rec;          /* key: the calls record's pointer */
    uint64_t chunk_off;
    int64_t timer_start;
    int64_t root_time;          /* absolute time of the root ENTER */
    int32_t root_method;
    uint8_t complete;
    uint8_t too_large;
    uint8_t want_start;         /* the current segment starts at the next record */
    uint8_t want_end;           /* ... ends at the next record (depth-0 EXIT seen) */
    uint8_t info_seen;          /* the root's call.info tag came (its end is near) */
    uint8_t info_tags;          /* ... and root-level tags after it: the agent persisted it */
    seg *segs;
    size_t nsegs, capsegs;
    vref *refs;                 /* sql/xml references met in its events */
    size_t nrefs, caprefs;
    uint64_t bytes;
    int64_t done_ms;
    link fifo;                  /* complete extents, oldest first */
    struct extent *spare;       /* in cp_asm.spare_extents */
} extent;

/* A complete one-segment extent (see the top of the file), 64 bytes. Dead when
 * len == SLIM_DEAD (claimed or dropped; the ring's head skips it). Its sql/xml
 * references are nrefs entries of the reference ring from ref_at on. */
typedef struct slim {
    int32_t file, rec;          /* key, with chunk_off */
    uint64_t chunk_off;
    int64_t root_time, timer_start;
    uint32_t off;               /* the segment: its start - chunk_off, */
    uint32_t len;               /* ... its length */
    int32_t root_method;
    int32_t thread_id;          /* of the chunk */
    int32_t chunk_age;          /* root_time - the chunk's time */
    uint32_t done_s;            /* completed (now_ms / 1000) */
    uint32_t ref_at, nrefs;     /* ref_at: the first reference's index in the ring */
} slim;
#define SLIM_DEAD UINT32_MAX

/* A sql/xml reference of a slim extent: (file << 1 | xml) and the value's offset. */
typedef struct slim_ref {
    uint32_t file_kind;
    int32_t offset;
} slim_ref;

typedef struct slim_set {
    slim *ring;                 /* positions [head, tail), at ring[pos % cap] */
    uint64_t head, tail;
    size_t cap, nlive;
    uint32_t *slot;             /* open addressing: 0 = empty, else ring index + 1 */
    size_t nslot;               /* a power of two, at least 1.5 cap */
    slim_ref *refs;             /* positions [rhead, rtail), at refs[pos % rcap] */
    uint64_t rhead, rtail;
    size_t rcap, rlive;         /* rlive: references of live entries */
    vref *scratch;              /* the references of the entry being assembled */
    size_t capscratch;
} slim_set;

typedef struct thread_state {
    int64_t id;
    int32_t depth;
    extent *cur;                /* the root call being tracked, or NULL */
} thread_state;

typedef struct pcall {
    link q;                     /* in waiting / ready / retry */
    struct pcall *dup;          /* other waiting calls with the same pointer */
    int64_t arrived_ms;         /* when it came in (trace wait) */
    int64_t first_try_ms;       /* first assembly attempt (value/word wait); 0 = none */
    cp_call_rec rec;            /* pointers cleared; strings in data */
    size_t thread_len;
    size_t nparams;
    size_t nvalues;             /* values over all params, a param without values counting 1 */
    cp_buf data;                /* thread name, then params: i32 id, u32 n, n x (u32 len, bytes) */
} pcall;

typedef struct pause_vec {
    cp_blob_pause *p;
    size_t n, cap;
    int32_t max_dur;            /* longest pause kept: bounds the scan for overlaps */
} pause_vec;

struct cp_asm {
    cp_asm_limits lim;
    cp_asm_io io;
    char *ns, *service, *pod;
    size_t ns_len, service_len, pod_len;
    int64_t restart_ms;
    cp_dict dict;
    int32_t call_red_id;        /* dictionary id of "call.red", -1 if unknown */
    int32_t call_info_id;       /* ... of "call.info" */
    /* trace */
    int64_t timer_start;        /* of the current trace file */
    thread_state *thr;          /* the chunk being decoded belongs to it */
    uint64_t chunk_off;
    int64_t chunk_thread, chunk_time;
    kmap threads;               /* thread id -> thread_state */
    kmap extents;               /* (file << 32 | rec, chunk_off) -> extent */
    size_t ext_bytes;           /* what the extents in it hold (ext_size), kept as they change */
    link done;                  /* complete extents, oldest first */
    slim_set slims;             /* complete extents of the common shape, oldest first */
    size_t nextents;            /* extents kept, slim ones included */
    /* calls */
    kmap waiting_by_key;        /* same key -> pcall (chain through dup) */
    link waiting, ready, retry;
    size_t npending;
    pause_vec pauses;
    /* recycled allocations: a busy pod makes and drops one pcall and one extent per call */
    pcall *spare_calls;         /* chained through dup */
    extent *spare_extents;      /* chained through spare */
    size_t nspare_calls, nspare_extents;
    /* recently resolved sql/xml values: the sql stream is deduplicated, so many calls
     * point at the same few values. Direct-mapped; a slot first only remembers the last
     * value read into it and keeps its text when that value is read again (a value read
     * once costs no text); the table doubles (up to VCACHE_SLOTS) when a kept value
     * would push out another. Bounded by VCACHE_BYTES and the thread's pool (io.values). */
    struct vcache_ent {
        int32_t file, offset;
        uint8_t kind;           /* 0 = empty slot */
        uint32_t units;         /* UTF-16 length, for the budget */
        uint32_t len;
        char *text;             /* UTF-8, len bytes; NULL = read once, not kept */
    } *vcache;                  /* vslots entries, made on the first value read */
    size_t vslots;
    size_t vmem;                /* the table and the texts */
    /* assembly scratch */
    cp_buf tbuf;                /* trace bytes */
    cp_buf vbuf;                /* value bytes read */
    cp_buf sbuf;                /* UTF-8 conversions */
    cp_buf params_json;
    cp_buf names;               /* "#<id>" names of params the dictionary lacks */
    struct pv *pv;              /* params of the call being emitted */
    size_t cappv;
    cp_buf method_buf;
    cp_buf blob;
    cp_blob_builder bb;
    cp_asm_stats st;
};

/* ---- limits, lifecycle ------------------------------------------------------------------- */

void cp_asm_limits_default(cp_asm_limits *l)
{
    l->max_pending = 200000;
    l->max_extents = 100000;
    l->max_trace_bytes = 64u << 20;
    l->max_values_bytes = 64u << 20;
    l->max_pauses = 65536;
    l->trace_wait_ms = 60000;
    l->ref_wait_ms = 1000;
    l->extent_ttl_ms = 600000;
}

cp_asm *cp_asm_new(const cp_asm_pod *pod, const cp_asm_limits *limits, const cp_asm_io *io)
{
    cp_asm *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    if (limits) a->lim = *limits;
    else cp_asm_limits_default(&a->lim);
    a->io = *io;
    a->ns = strdup(pod->ns ? pod->ns : "");
    a->service = strdup(pod->service ? pod->service : "");
    a->pod = strdup(pod->pod ? pod->pod : "");
    a->restart_ms = pod->restart_ms;
    a->ns_len = a->ns ? strlen(a->ns) : 0;
    a->service_len = a->service ? strlen(a->service) : 0;
    a->pod_len = a->pod ? strlen(a->pod) : 0;
    a->call_red_id = -1;
    a->call_info_id = -1;
    cp_dict_init_pooled(&a->dict, a->io.words);
    list_init(&a->done);
    list_init(&a->waiting);
    list_init(&a->ready);
    list_init(&a->retry);
    cp_buf_init(&a->tbuf);
    cp_buf_init(&a->vbuf);
    cp_buf_init(&a->sbuf);
    cp_buf_init(&a->params_json);
    cp_buf_init(&a->names);
    cp_buf_init(&a->method_buf);
    cp_buf_init(&a->blob);
    cp_blob_builder_init(&a->bb);
    if (!a->ns || !a->service || !a->pod) {
        cp_asm_free(a);
        return NULL;
    }
    return a;
}

static void extent_free(extent *e)
{
    if (!e) return;
    free(e->segs);
    free(e->refs);
    free(e);
}

static void pcall_free(pcall *p)
{
    if (!p) return;
    cp_buf_free(&p->data);
    free(p);
}

static void free_list(link *h)
{
    while (!list_empty(h)) {
        link *e = h->next;
        list_del(e);
        pcall *p = CONTAINER(e, pcall, q);
        while (p) {
            pcall *d = p->dup;
            pcall_free(p);
            p = d;
        }
    }
}

void cp_asm_free(cp_asm *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->extents.cap; i++) extent_free(a->extents.e[i].v);
    for (size_t i = 0; i < a->threads.cap; i++) free(a->threads.e[i].v);
    kmap_free(&a->extents);
    free(a->slims.ring);
    free(a->slims.slot);
    free(a->slims.refs);
    free(a->slims.scratch);
    kmap_free(&a->threads);
    kmap_free(&a->waiting_by_key);
    /* waiting calls are on the list once, with their duplicates chained */
    free_list(&a->waiting);
    free_list(&a->ready);
    free_list(&a->retry);
    free(a->pauses.p);
    while (a->spare_calls) {
        pcall *p = a->spare_calls;
        a->spare_calls = p->dup;
        pcall_free(p);
    }
    while (a->spare_extents) {
        extent *e = a->spare_extents;
        a->spare_extents = e->spare;
        extent_free(e);
    }
    cp_dict_free(&a->dict);
    cp_buf_free(&a->tbuf);
    cp_buf_free(&a->vbuf);
    cp_buf_free(&a->sbuf);
    for (size_t i = 0; a->vcache && i < a->vslots; i++) free(a->vcache[i].text);
    free(a->vcache);
    cp_membudget_sub(a->io.values, a->vmem);
    cp_buf_free(&a->params_json);
    cp_buf_free(&a->names);
    free(a->pv);
    cp_buf_free(&a->method_buf);
    cp_buf_free(&a->blob);
    cp_blob_builder_free(&a->bb);
    free(a->ns);
    free(a->service);
    free(a->pod);
    free(a);
}

/* ---- dictionary, pauses ----------------------------------------------------------------- */

int cp_asm_word(cp_asm *a, int32_t id, const char *word, size_t len)
{
    if (len == 8 && !memcmp(word, "call.red", 8)) a->call_red_id = id;
    else if (id == a->call_red_id) a->call_red_id = -1;
    if (len == 9 && !memcmp(word, "call.info", 9)) a->call_info_id = id;
    else if (id == a->call_info_id) a->call_info_id = -1;
    return cp_dict_put(&a->dict, id, word, len);
}

void cp_asm_dict_reset(cp_asm *a)
{
    cp_dict_free(&a->dict);
    cp_dict_init_pooled(&a->dict, a->io.words);
    a->call_red_id = -1;
    a->call_info_id = -1;
}

int cp_asm_pause(cp_asm *a, const cp_suspend_rec *r)
{
    pause_vec *v = &a->pauses;
    if (r->duration_ms <= 0) return CP_OK;
    if (v->n == v->cap) {
        if (v->cap >= a->lim.max_pauses) {
            /* keep the most recent: calls being assembled are recent */
            size_t drop = v->n / 4 ? v->n / 4 : 1;
            memmove(v->p, v->p + drop, (v->n - drop) * sizeof *v->p);
            v->n -= drop;
        } else {
            size_t cap = v->cap ? v->cap * 2 : 64;
            if (cap > a->lim.max_pauses) cap = a->lim.max_pauses ? a->lim.max_pauses : 1;
            cp_blob_pause *p = realloc(v->p, cap * sizeof *p);
            if (!p) return CP_ENOMEM;
            v->p = p;
            v->cap = cap;
        }
    }
    /* pauses arrive in end order; an out-of-order one is inserted in place */
    size_t i = v->n;
    while (i > 0 && v->p[i - 1].end_ms > r->end_ms) i--;
    memmove(v->p + i + 1, v->p + i, (v->n - i) * sizeof *v->p);
    v->p[i] = (cp_blob_pause){r->end_ms, r->duration_ms};
    v->n++;
    if (r->duration_ms > v->max_dur) v->max_dur = r->duration_ms;
    return CP_OK;
}

/* ---- trace: extents ---------------------------------------------------------------------- */

static uint64_t key_a(int32_t file, int32_t rec) { return ((uint64_t)(uint32_t)file << 32) | (uint32_t)rec; }

static thread_state *thread_get(cp_asm *a, int64_t id)
{
    thread_state *t = kmap_get(&a->threads, (uint64_t)id, 0);
    if (t) return t;
    if (a->threads.n >= MAX_THREADS) return NULL;
    t = calloc(1, sizeof *t);
    if (!t) return NULL;
    t->id = id;
    if (kmap_put(&a->threads, (uint64_t)id, 0, t) != CP_OK) {
        free(t);
        return NULL;
    }
    return t;
}

/* An extent's memory with its arrays (~16 bytes of malloc's overhead a block). */
static size_t ext_size(const extent *e)
{
    return sizeof *e + 16 + (e->capsegs ? e->capsegs * sizeof(seg) + 16 : 0) +
           (e->caprefs ? e->caprefs * sizeof(vref) + 16 : 0);
}

/* a: the assembler whose map holds e (its ext_bytes follows a growth), or NULL. */
static int seg_open(cp_asm *a, extent *e, int32_t file, uint64_t off, int64_t thread_id, int64_t chunk_time)
{
    if (e->too_large) return CP_OK;
    if (e->nsegs == e->capsegs) {
        if (e->capsegs >= MAX_SEGS) {
            e->too_large = 1;
            return CP_OK;
        }
        size_t cap = e->capsegs ? e->capsegs * 2 : 1;
        seg *s = realloc(e->segs, cap * sizeof *s);
        if (!s) return CP_ENOMEM;
        if (a) a->ext_bytes += (cap - e->capsegs) * sizeof *s + (e->capsegs ? 0 : 16);
        e->segs = s;
        e->capsegs = cap;
    }
    e->segs[e->nsegs++] = (seg){file, off, 0, thread_id, chunk_time};
    return CP_OK;
}

static void seg_close(cp_asm *a, extent *e, uint64_t end)
{
    if (e->too_large || !e->nsegs) return;
    seg *s = &e->segs[e->nsegs - 1];
    s->len = end > s->off ? end - s->off : 0;
    e->bytes += s->len + 17;
    if (e->bytes > a->lim.max_trace_bytes) e->too_large = 1;
}

static void pcall_wake(cp_asm *a, int32_t file, uint64_t chunk_off, int32_t rec);

static void extent_drop(cp_asm *a, extent *e)
{
    kmap_del(&a->extents, key_a(e->file, e->rec), e->chunk_off);
    if (e->complete) list_del(&e->fifo);
    a->nextents--;
    a->ext_bytes -= ext_size(e);
    if (a->nspare_extents < MAX_SPARE && e->capsegs <= 64 && e->caprefs <= 256) {
        e->spare = a->spare_extents;
        a->spare_extents = e;
        a->nspare_extents++;
    } else {
        extent_free(e);
    }
}

static extent *extent_new(cp_asm *a)
{
    extent *e = a->spare_extents;
    if (!e) return calloc(1, sizeof *e);
    a->spare_extents = e->spare;
    a->nspare_extents--;
    seg *segs = e->segs;
    vref *refs = e->refs;
    size_t cap = e->capsegs, caprefs = e->caprefs;
    memset(e, 0, sizeof *e);
    e->segs = segs; /* keeps their capacity */
    e->capsegs = cap;
    e->refs = refs;
    e->caprefs = caprefs;
    return e;
}

/* ---- slim extents ---------------------------------------------------------------------- */

static size_t slim_home(const slim_set *m, int32_t file, int32_t rec, uint64_t chunk_off)
{
    return kmix(key_a(file, rec), chunk_off) & (m->nslot - 1);
}

/* The slot of the live entry with that key, or SIZE_MAX. */
static size_t slim_find(const slim_set *m, int32_t file, int32_t rec, uint64_t chunk_off)
{
    if (!m->nslot) return SIZE_MAX;
    for (size_t j = slim_home(m, file, rec, chunk_off);; j = (j + 1) & (m->nslot - 1)) {
        if (!m->slot[j]) return SIZE_MAX;
        const slim *x = &m->ring[m->slot[j] - 1];
        if (x->file == file && x->rec == rec && x->chunk_off == chunk_off) return j;
    }
}

static void slim_index(slim_set *m, size_t ring_idx)
{
    const slim *x = &m->ring[ring_idx];
    size_t j = slim_home(m, x->file, x->rec, x->chunk_off);
    while (m->slot[j]) j = (j + 1) & (m->nslot - 1);
    m->slot[j] = (uint32_t)ring_idx + 1;
}

static size_t pow2_at_least(size_t n)
{
    size_t c = 64;
    while (c < n) c *= 2;
    return c;
}

/* Ring capacity for n entries and half as many again (the rings need no power of two:
 * rounding up would waste up to half of the memory this form exists to save). */
static size_t ring_cap(size_t n)
{
    n += n / 2;
    return n < 64 ? 64 : n;
}

/* Lays the live entries and their references out again from position 0, in rings of cap
 * entries and rcap references (at least the live ones), and rebuilds the slots. */
static int slim_relayout(slim_set *m, size_t cap, size_t rcap)
{
    size_t nslot = pow2_at_least(cap + cap / 2);
    slim *ring = malloc(cap * sizeof *ring);
    uint32_t *slot = calloc(nslot, sizeof *slot);
    slim_ref *refs = malloc(rcap * sizeof *refs);
    if (!ring || !slot || !refs) {
        free(ring);
        free(slot);
        free(refs);
        return CP_ENOMEM;
    }
    size_t n = 0, rn = 0;
    for (uint64_t pos = m->head; pos < m->tail; pos++) {
        const slim *x = &m->ring[pos % m->cap];
        if (x->len == SLIM_DEAD) continue;
        ring[n] = *x;
        ring[n].ref_at = (uint32_t)rn;
        for (uint32_t k = 0; k < x->nrefs; k++) refs[rn++] = m->refs[(x->ref_at + k) % m->rcap];
        n++;
    }
    free(m->ring);
    free(m->slot);
    free(m->refs);
    m->ring = ring, m->slot = slot, m->refs = refs;
    m->cap = cap, m->nslot = nslot, m->rcap = rcap;
    m->head = 0, m->tail = n;
    m->rhead = 0, m->rtail = rn;
    for (size_t i = 0; i < n; i++) slim_index(m, i);
    return CP_OK;
}

/* Room for one more entry with nrefs references: the dead squeezed out, or the rings grown. */
static int slim_room(slim_set *m, size_t nrefs)
{
    int full = m->tail - m->head == m->cap, rfull = m->rtail - m->rhead + nrefs > m->rcap;
    if (!full && !rfull) return CP_OK;
    size_t cap = ring_cap(m->nlive + 1), rcap = ring_cap(m->rlive + nrefs);
    if (cap < m->cap) cap = m->cap;
    if (rcap < m->rcap) rcap = m->rcap;
    if (cap > UINT32_MAX / 4 || rcap > UINT32_MAX / 4) return CP_ENOMEM;
    return slim_relayout(m, cap, rcap);
}

/* Keeps a complete one-segment extent as a slim entry (the caller then drops the
 * extent). CP_EINVAL: it does not fit the slim form. */
static int slim_add(slim_set *m, const extent *e)
{
    const seg *g = &e->segs[0];
    int64_t age;
    if (__builtin_sub_overflow(e->root_time, g->chunk_time, &age)) return CP_EINVAL; /* hostile times */
    if (e->nsegs != 1 || e->too_large || g->off < e->chunk_off || g->off - e->chunk_off >= UINT32_MAX ||
        g->len >= SLIM_DEAD || g->thread_id != (int32_t)g->thread_id || age != (int32_t)age ||
        e->nrefs > UINT16_MAX || e->done_ms < 0)
        return CP_EINVAL;
    for (size_t k = 0; k < e->nrefs; k++)
        if (e->refs[k].file < 0 || (uint32_t)e->refs[k].file > UINT32_MAX / 2) return CP_EINVAL;
    if (slim_room(m, e->nrefs) != CP_OK) return CP_ENOMEM;
    size_t i = m->tail++ % m->cap;
    m->ring[i] = (slim){e->file,
                        e->rec,
                        e->chunk_off,
                        e->root_time,
                        e->timer_start,
                        (uint32_t)(g->off - e->chunk_off),
                        (uint32_t)g->len,
                        e->root_method,
                        (int32_t)g->thread_id,
                        (int32_t)age,
                        (uint32_t)(e->done_ms / 1000),
                        (uint32_t)(m->rtail % m->rcap),
                        (uint32_t)e->nrefs};
    for (size_t k = 0; k < e->nrefs; k++) {
        const vref *v = &e->refs[k];
        m->refs[m->rtail++ % m->rcap] = (slim_ref){(uint32_t)v->file << 1 | (v->kind == 1), v->offset};
    }
    m->nlive++;
    m->rlive += e->nrefs;
    slim_index(m, i);
    return CP_OK;
}

/* Removes the entry in slot j (backward-shift delete, as kmap_del) and moves the heads
 * past dead entries. */
static void slim_del(slim_set *m, size_t j)
{
    size_t mask = m->nslot - 1;
    slim *dead = &m->ring[m->slot[j] - 1];
    dead->len = SLIM_DEAD;
    m->rlive -= dead->nrefs;
    m->slot[j] = 0;
    m->nlive--;
    for (size_t i = (j + 1) & mask; m->slot[i]; i = (i + 1) & mask) {
        const slim *x = &m->ring[m->slot[i] - 1];
        size_t home = slim_home(m, x->file, x->rec, x->chunk_off);
        int stays = j <= i ? (home > j && home <= i) : (home > j || home <= i);
        if (stays) continue;
        m->slot[j] = m->slot[i];
        m->slot[i] = 0;
        j = i;
    }
    /* the head passes dead entries; their references go with them */
    for (const slim *h; m->head < m->tail && (h = &m->ring[m->head % m->cap])->len == SLIM_DEAD; m->head++)
        m->rhead += h->nrefs;
}

static size_t slim_bytes(const slim_set *m)
{
    return m->cap * sizeof(slim) + m->nslot * sizeof(uint32_t) + m->rcap * sizeof(slim_ref) +
           m->capscratch * sizeof(vref);
}

/* The oldest live entry, or NULL. */
static const slim *slim_oldest(const slim_set *m)
{
    return m->head < m->tail ? &m->ring[m->head % m->cap] : NULL;
}

/* A just completed extent becomes a slim entry when it fits the form (stays as it is
 * otherwise, or when there is no memory for the rings). */
static void extent_slim(cp_asm *a, extent *e)
{
    size_t before = slim_bytes(&a->slims);
    int st = slim_add(&a->slims, e);
    a->ext_bytes += slim_bytes(&a->slims) - before;
    if (st != CP_OK) return;
    extent_drop(a, e);
    a->nextents++; /* still kept, in the other form */
}

/* An extent of the slim entry in slot j, for assembly: g is its one segment, its
 * references are in the set's scratch array. CP_ENOMEM without room for them. */
static int slim_inflate(cp_asm *a, size_t j, extent *e, seg *g)
{
    slim_set *m = &a->slims;
    const slim *x = &m->ring[m->slot[j] - 1];
    if (x->nrefs > m->capscratch) {
        size_t cap = pow2_at_least(x->nrefs);
        vref *v = realloc(m->scratch, cap * sizeof *v);
        if (!v) return CP_ENOMEM;
        a->ext_bytes += (cap - m->capscratch) * sizeof *v;
        m->scratch = v;
        m->capscratch = cap;
    }
    memset(e, 0, sizeof *e);
    *g = (seg){x->file, x->chunk_off + x->off, x->len, x->thread_id, x->root_time - x->chunk_age};
    e->file = x->file, e->rec = x->rec, e->chunk_off = x->chunk_off;
    e->timer_start = x->timer_start, e->root_time = x->root_time, e->root_method = x->root_method;
    e->complete = 1;
    e->segs = g, e->nsegs = e->capsegs = 1;
    e->bytes = (uint64_t)x->len + 17;
    e->done_ms = (int64_t)x->done_s * 1000;
    for (uint32_t k = 0; k < x->nrefs; k++) {
        slim_ref r = m->refs[(x->ref_at + k) % m->rcap];
        m->scratch[k] = (vref){(uint8_t)(r.file_kind & 1 ? 1 : 3), (int32_t)(r.file_kind >> 1), r.offset};
    }
    e->refs = m->scratch, e->nrefs = x->nrefs;
    return CP_OK;
}

/* Removes the entry in slot j; rings mostly empty after a burst are made smaller (their
 * memory goes back), with room for twice what is left. */
static void slim_drop(cp_asm *a, size_t j)
{
    slim_set *m = &a->slims;
    slim_del(m, j);
    a->nextents--;
    if (!m->nlive) { /* between two flush cycles a connection keeps no rings at all */
        size_t before = slim_bytes(m);
        free(m->ring);
        free(m->slot);
        free(m->refs);
        m->ring = NULL, m->slot = NULL, m->refs = NULL;
        m->cap = m->nslot = m->rcap = 0;
        m->head = m->tail = m->rhead = m->rtail = 0;
        a->ext_bytes -= before - slim_bytes(m);
        return;
    }
    if (m->cap > 64 && m->nlive < m->cap / 8) {
        size_t before = slim_bytes(m);
        size_t rcap = ring_cap(m->rlive);
        if (slim_relayout(m, ring_cap(m->nlive), rcap < m->rcap ? rcap : m->rcap) == CP_OK)
            a->ext_bytes -= before - slim_bytes(m);
    }
}

/* Drops complete extents nobody claimed: too old, or too many (the older form first). */
static void extents_expire(cp_asm *a, int64_t now_ms)
{
    for (;;) {
        extent *e = list_empty(&a->done) ? NULL : CONTAINER(a->done.next, extent, fifo);
        const slim *x = slim_oldest(&a->slims);
        if (!e && !x) break;
        int64_t xdone = x ? (int64_t)x->done_s * 1000 : 0;
        int64_t done = e && (!x || e->done_ms <= xdone) ? e->done_ms : xdone;
        if (a->nextents <= a->lim.max_extents && now_ms - done <= a->lim.extent_ttl_ms) break;
        a->st.extents_dropped++;
        if (e && (!x || e->done_ms <= xdone)) extent_drop(a, e);
        else slim_drop(a, slim_find(&a->slims, x->file, x->rec, x->chunk_off));
    }
}

/* A root call the agent did not persist has no calls record, ever (protocol.md §5.5: the
 * synthetic tags after call.info are written only for persisted calls), so its extent is
 * not kept -- with a real agent that is many root calls (40 of the 85 in the test-service
 * capture; each one kept would wait for the extents' TTL). Kept anyway when a call
 * already waits for it. */
static void extent_complete(cp_asm *a, thread_state *t, uint64_t end, int64_t now_ms)
{
    extent *e = t->cur;
    t->cur = NULL;
    seg_close(a, e, end);
    e->want_end = 0;
    e->complete = 1;
    e->done_ms = now_ms;
    list_push(&a->done, &e->fifo);
    if (e->info_seen && !e->info_tags && !kmap_get(&a->waiting_by_key, key_a(e->file, e->rec), e->chunk_off)) {
        a->st.extents_unpersisted++;
        extent_drop(a, e);
        return;
    }
    pcall_wake(a, e->file, e->chunk_off, e->rec);
    extent_slim(a, e);
}

/* The record after an event fixes where a pending segment starts or ends. */
static void next_record(cp_asm *a, thread_state *t, uint64_t offset, int64_t now_ms)
{
    extent *e = t->cur;
    if (!e) return;
    if (e->want_start) {
        e->want_start = 0;
        if (e->nsegs) e->segs[e->nsegs - 1].off = offset;
    }
    if (e->want_end) extent_complete(a, t, offset, now_ms);
}

static int root_enter(cp_asm *a, thread_state *t, int32_t file, const cp_trace_rec *r)
{
    extent *old = kmap_get(&a->extents, key_a(file, (int32_t)r->index), a->chunk_off);
    if (old) {
        /* same pointer twice (a hostile or broken stream): the newer one wins */
        for (size_t i = 0; i < a->threads.cap; i++) {
            thread_state *o = a->threads.e[i].v;
            if (o && o->cur == old) o->cur = NULL;
        }
        extent_drop(a, old);
    }
    size_t j = slim_find(&a->slims, file, (int32_t)r->index, a->chunk_off);
    if (j != SIZE_MAX) slim_drop(a, j);
    extent *e = extent_new(a);
    if (!e) return CP_ENOMEM;
    e->file = file;
    e->rec = (int32_t)r->index;
    e->chunk_off = a->chunk_off;
    e->timer_start = a->timer_start;
    e->root_time = r->time_ms;
    e->root_method = r->id;
    e->want_start = 1;
    e->fifo.prev = e->fifo.next = &e->fifo;
    if (seg_open(NULL, e, file, 0, a->chunk_thread, a->chunk_time) != CP_OK ||
        kmap_put(&a->extents, key_a(file, e->rec), e->chunk_off, e) != CP_OK) {
        extent_free(e);
        return CP_ENOMEM;
    }
    a->nextents++;
    a->ext_bytes += ext_size(e);
    a->st.extents++;
    t->cur = e;
    return CP_OK;
}

int cp_asm_trace(cp_asm *a, int32_t file_index, const cp_trace_rec *r, int64_t now_ms)
{
    thread_state *t = a->thr;
    switch (r->type) {
    case CP_TRACE_HEADER:
        a->timer_start = r->timer_start_ms;
        a->thr = NULL;
        return CP_OK;
    case CP_TRACE_CHUNK_BEGIN:
        t = a->thr = thread_get(a, r->thread_id);
        if (!t) return CP_ENOMEM;
        a->chunk_off = r->chunk_offset;
        a->chunk_thread = r->thread_id;
        a->chunk_time = r->chunk_time_ms;
        /* a root call that spans chunks continues with this one's events */
        if (t->cur) return seg_open(a, t->cur, file_index, r->chunk_offset + 16, r->thread_id, r->chunk_time_ms);
        return CP_OK;
    default: break;
    }
    if (!t) return CP_OK; /* events outside a chunk cannot happen; be safe */
    next_record(a, t, r->offset, now_ms);
    switch (r->type) {
    case CP_TRACE_ENTER:
        if (t->depth == 0) {
            int st = root_enter(a, t, file_index, r);
            if (st != CP_OK) return st;
        }
        if (t->depth < INT32_MAX) t->depth++;
        break;
    case CP_TRACE_EXIT:
        /* an EXIT without its ENTER (the tail of a call begun before this connection)
         * leaves the depth at 0 */
        if (t->depth > 0 && --t->depth == 0 && t->cur) t->cur->want_end = 1;
        break;
    case CP_TRACE_TAG:
        if (t->cur && t->depth == 1) { /* a root-level tag: call.info, then the persisted call's */
            if (t->cur->info_seen) t->cur->info_tags = 1;
            else if (r->id == a->call_info_id && a->call_info_id >= 0 && r->param_type == 0 && r->value.n == 0)
                t->cur->info_seen = 1;
        }
        if (t->cur && (r->param_type == 1 || r->param_type == 3) && !t->cur->too_large) {
            extent *e = t->cur;
            if (e->nrefs == e->caprefs) {
                size_t cap = e->caprefs ? e->caprefs * 2 : 4;
                vref *v = realloc(e->refs, cap * sizeof *v);
                if (!v) return CP_ENOMEM;
                a->ext_bytes += (cap - e->caprefs) * sizeof *v + (e->caprefs ? 0 : 16);
                e->refs = v;
                e->caprefs = cap;
            }
            e->refs[e->nrefs++] = (vref){r->param_type, r->ref_file, r->ref_offset};
        }
        break;
    case CP_TRACE_CHUNK_END:
        if (t->cur) seg_close(a, t->cur, r->offset);
        a->thr = NULL;
        break;
    default: break;
    }
    extents_expire(a, now_ms);
    return CP_OK;
}

/* ---- calls: waiting ---------------------------------------------------------------------- */

static int copy_str16(cp_buf *b, cp_str16 s, size_t *len)
{
    size_t before = b->len;
    int st = cp_str16_to_utf8(b, s);
    *len = b->len - before;
    return st;
}

static int put_u32(cp_buf *b, uint32_t v) { return cp_buf_append(b, &v, sizeof v); }

static pcall *pcall_new(cp_asm *a, const cp_call_rec *r, int64_t now_ms)
{
    pcall *p = a->spare_calls;
    if (p) {
        a->spare_calls = p->dup;
        a->nspare_calls--;
        cp_buf data = p->data; /* keeps its capacity */
        memset(p, 0, sizeof *p);
        p->data = data;
        cp_buf_reset(&p->data);
    } else {
        p = calloc(1, sizeof *p);
        if (!p) return NULL;
        cp_buf_init(&p->data);
    }
    p->q.prev = p->q.next = &p->q;
    p->rec = *r;
    p->rec.params = NULL;
    p->rec.thread_name = (cp_str16){0};
    p->arrived_ms = now_ms;
    int st = copy_str16(&p->data, r->thread_name, &p->thread_len);
    for (uint32_t i = 0; st == CP_OK && i < r->nparams; i++) {
        const cp_call_param *prm = &r->params[i];
        st = cp_buf_append(&p->data, &prm->id, sizeof prm->id);
        if (st == CP_OK) st = put_u32(&p->data, prm->nvalues);
        p->nvalues += prm->nvalues ? prm->nvalues : 1;
        for (uint32_t j = 0; st == CP_OK && j < prm->nvalues; j++) {
            size_t at = p->data.len, n;
            st = put_u32(&p->data, 0);
            if (st == CP_OK) st = copy_str16(&p->data, prm->values[j], &n);
            if (st == CP_OK) {
                uint32_t n32 = (uint32_t)n;
                memcpy(p->data.data + at, &n32, sizeof n32);
            }
        }
    }
    p->nparams = r->nparams;
    if (st != CP_OK) {
        pcall_free(p);
        return NULL;
    }
    return p;
}

/* One param of a pcall's packed data; pparam_next moves *s past it. */
typedef struct pparam {
    int32_t id;
    uint32_t n;                 /* values */
    const uint8_t *vals;        /* n x (u32 len, bytes) */
} pparam;

static void pparam_next(const uint8_t **s, pparam *out)
{
    memcpy(&out->id, *s, 4);
    memcpy(&out->n, *s + 4, 4);
    const uint8_t *q = out->vals = *s + 8;
    for (uint32_t i = 0; i < out->n; i++) {
        uint32_t l;
        memcpy(&l, q, 4);
        q += 4 + l;
    }
    *s = q;
}

/* (NULL, NULL) for a call with no thread name and no params: nothing was ever allocated,
 * and an offset added to NULL is undefined even when it is 0 (fuzz_asm found it) */
static const uint8_t *pparams_begin(const pcall *p) { return p->data.data ? p->data.data + p->thread_len : NULL; }
static const uint8_t *pparams_end(const pcall *p) { return p->data.data ? p->data.data + p->data.len : NULL; }

static void waiting_remove(cp_asm *a, pcall *p)
{
    /* p is the head of its chain (the one in the map and on the list) */
    list_del(&p->q);
    uint64_t ka = key_a(p->rec.trace_file_index, p->rec.record_index);
    uint64_t kb = (uint64_t)(uint32_t)p->rec.buffer_offset;
    if (p->dup) {
        pcall *d = p->dup;
        p->dup = NULL;
        kmap_put(&a->waiting_by_key, ka, kb, d); /* replaces: cannot fail */
        list_push(&a->waiting, &d->q);
    } else {
        kmap_del(&a->waiting_by_key, ka, kb);
    }
}

static void to_ready(cp_asm *a, pcall *p)
{
    list_push(&a->ready, &p->q);
}

/* An extent completed: the call waiting for it (the oldest, if several) can go. */
static void pcall_wake(cp_asm *a, int32_t file, uint64_t chunk_off, int32_t rec)
{
    pcall *p = kmap_get(&a->waiting_by_key, key_a(file, rec), chunk_off);
    if (!p) return;
    waiting_remove(a, p);
    to_ready(a, p);
}

int cp_asm_call(cp_asm *a, const cp_call_rec *r, int64_t now_ms)
{
    a->st.calls_in++;
    pcall *p = pcall_new(a, r, now_ms);
    if (!p) return CP_ENOMEM;
    a->npending++;
    uint64_t ka = key_a(r->trace_file_index, r->record_index), kb = (uint64_t)(uint32_t)r->buffer_offset;
    extent *e = kmap_get(&a->extents, ka, kb);
    if ((e && e->complete) || slim_find(&a->slims, r->trace_file_index, r->record_index, kb) != SIZE_MAX) {
        to_ready(a, p);
        return CP_OK;
    }
    pcall *head = kmap_get(&a->waiting_by_key, ka, kb);
    if (head) { /* a second call with the same pointer: it waits behind the first */
        pcall *t = head;
        while (t->dup) t = t->dup;
        t->dup = p;
        return CP_OK;
    }
    if (kmap_put(&a->waiting_by_key, ka, kb, p) != CP_OK) {
        a->npending--;
        pcall_free(p);
        return CP_ENOMEM;
    }
    list_push(&a->waiting, &p->q);
    return CP_OK;
}

/* ---- assembly ---------------------------------------------------------------------------- */

/* The stream files hold what we need, or not yet. */
enum { ASM_DONE, ASM_LATER };

static void put_varint(cp_buf *b, uint32_t v)
{
    uint8_t tmp[5];
    size_t n = 0;
    do {
        uint8_t c = v & 0x7F;
        v >>= 7;
        tmp[n++] = (uint8_t)(c | (v ? 0x80 : 0));
    } while (v);
    cp_buf_append(b, tmp, n);
}

/* The root ENTER with its delta made absolute (protocol.md §5.5 header byte). */
static void put_root_enter(cp_buf *b, int64_t elapsed, int32_t method)
{
    uint32_t d = (uint32_t)(int32_t)elapsed;
    uint8_t h = (uint8_t)((d & 31u) << 2); /* type 0 = ENTER */
    uint32_t high = (uint32_t)((int32_t)d >> 5);
    if (d > 31u) {
        cp_buf_putc(b, (uint8_t)(h | 0x80));
        put_varint(b, high);
    } else {
        cp_buf_putc(b, h);
    }
    put_varint(b, (uint32_t)method);
}

static void put_be64(cp_buf *b, int64_t v)
{
    uint8_t t[8];
    cp_put_be64(t, (uint64_t)v);
    cp_buf_append(b, t, 8);
}

/* Reads [off, off+n) of a stream file into b; ASM_LATER if not all stored yet. */
static int read_range(cp_asm *a, cp_stream_kind kind, int32_t file, uint64_t off, uint64_t n, cp_buf *b, int *err)
{
    int64_t size = a->io.size(a->io.ud, kind, file);
    if (size < 0 || (uint64_t)size < off || (uint64_t)size - off < n) return ASM_LATER;
    if (cp_buf_reserve(b, (size_t)n) != CP_OK) {
        *err = CP_ENOMEM;
        return ASM_DONE;
    }
    long got = n ? a->io.read(a->io.ud, kind, file, off, b->data + b->len, (size_t)n) : 0;
    if (got < 0 || (uint64_t)got != n) {
        *err = got < 0 ? (int)got : CP_EIO;
        return ASM_DONE;
    }
    b->len += (size_t)n;
    return ASM_DONE;
}

/* Builds the trace part of the blob from the extent's segments. */
static int build_trace(cp_asm *a, const extent *e, int *err)
{
    cp_buf *b = &a->bb.trace;
    cp_buf_reset(b);
    put_be64(b, e->timer_start);
    for (size_t i = 0; i < e->nsegs; i++) {
        const seg *s = &e->segs[i];
        put_be64(b, s->thread_id);
        put_be64(b, s->chunk_time);
        if (i == 0) put_root_enter(b, e->root_time - e->timer_start, e->root_method);
        if (read_range(a, CP_STREAM_TRACE, s->file, s->off, s->len, b, err) == ASM_LATER) return ASM_LATER;
        if (*err) return ASM_DONE;
        cp_buf_putc(b, 0x03);
        a->st.trace_bytes_read += s->len;
    }
    return ASM_DONE;
}

static int cmp_vref(const void *x, const void *y)
{
    const vref *a = x, *b = y;
    if (a->kind != b->kind) return a->kind < b->kind ? -1 : 1;
    if (a->file != b->file) return a->file < b->file ? -1 : 1;
    return (a->offset > b->offset) - (a->offset < b->offset);
}

/* The cache's memory, in this assembler and in the thread's pool. */
static int vmem_room(cp_asm *a, size_t n)
{
    return a->vmem + n <= VCACHE_BYTES && cp_membudget_room(a->io.values, n);
}

static void vmem_add(cp_asm *a, size_t n)
{
    a->vmem += n;
    cp_membudget_add(a->io.values, n);
}

static void vmem_sub(cp_asm *a, size_t n)
{
    a->vmem -= n;
    cp_membudget_sub(a->io.values, n);
}

static size_t vslot(const cp_asm *a, uint8_t kind, int32_t file, int32_t offset)
{
    return (size_t)kmix(((uint64_t)kind << 32) | (uint32_t)file, (uint32_t)offset) & (a->vslots - 1);
}

/* The kept value at (kind, file, offset), or NULL. */
static const struct vcache_ent *vcache_get(const cp_asm *a, uint8_t kind, int32_t file, int32_t offset)
{
    if (!a->vcache) return NULL;
    const struct vcache_ent *e = &a->vcache[vslot(a, kind, file, offset)];
    return e->text && e->kind == kind && e->file == file && e->offset == offset ? e : NULL;
}

/* Doubles the table (entries that meet in a slot of the new one: the kept one stays). */
static void vcache_grow(cp_asm *a)
{
    size_t n = a->vslots * 2, bytes = n * sizeof *a->vcache;
    if (n > VCACHE_SLOTS || !vmem_room(a, bytes - a->vslots * sizeof *a->vcache)) return;
    struct vcache_ent *old = a->vcache, *t = calloc(n, sizeof *t);
    if (!t) return;
    size_t old_n = a->vslots;
    a->vcache = t;
    a->vslots = n;
    vmem_add(a, bytes - old_n * sizeof *old);
    for (size_t i = 0; i < old_n; i++) {
        if (!old[i].kind) continue;
        struct vcache_ent *e = &t[vslot(a, old[i].kind, old[i].file, old[i].offset)];
        if (e->text) { /* both kept: the second one goes */
            vmem_sub(a, old[i].len);
            free(old[i].text);
        } else {
            *e = old[i];
        }
    }
    free(old);
}

/* The value just read (in a->sbuf): remembered in its slot, its text kept if the slot
 * remembered it already (a stored file's bytes never change). Best effort: without room
 * or memory, values are read again. */
static void vcache_put(cp_asm *a, uint8_t kind, int32_t file, int32_t offset, uint32_t units)
{
    if (a->sbuf.len > VCACHE_BYTES / 4) return;
    if (!a->vcache) {
        if (!vmem_room(a, VCACHE_MIN_SLOTS * sizeof *a->vcache)) return;
        if (!(a->vcache = calloc(VCACHE_MIN_SLOTS, sizeof *a->vcache))) return;
        a->vslots = VCACHE_MIN_SLOTS;
        vmem_add(a, VCACHE_MIN_SLOTS * sizeof *a->vcache);
    }
    struct vcache_ent *e = &a->vcache[vslot(a, kind, file, offset)];
    int again = e->kind == kind && e->file == file && e->offset == offset;
    if (again && e->text) return;
    if (e->text) { /* a kept value would go: more slots first, if there is room */
        vcache_grow(a);
        e = &a->vcache[vslot(a, kind, file, offset)];
        again = e->kind == kind && e->file == file && e->offset == offset;
        if (again && e->text) return;
    }
    if (e->text) {
        vmem_sub(a, e->len);
        free(e->text);
    }
    *e = (struct vcache_ent){file, offset, kind, units, 0, NULL};
    if (!again || !vmem_room(a, a->sbuf.len)) return;
    if (!(e->text = malloc(a->sbuf.len ? a->sbuf.len : 1))) return;
    if (a->sbuf.len) memcpy(e->text, a->sbuf.data, a->sbuf.len); /* an empty value has no buffer */
    e->len = (uint32_t)a->sbuf.len;
    vmem_add(a, e->len);
}

static int read_value(cp_asm *a, uint8_t kind, int32_t file, int32_t offset, size_t *budget, int *resolved, int *err)
{
    cp_stream_kind sk = kind == 3 ? CP_STREAM_SQL : CP_STREAM_XML;
    *resolved = 0;
    if (offset < 0) return ASM_DONE;
    const struct vcache_ent *ce = vcache_get(a, kind, file, offset);
    if (ce) {
        if ((uint64_t)ce->units * 2 > *budget) return ASM_DONE;
        cp_buf_reset(&a->sbuf);
        if (cp_buf_append(&a->sbuf, ce->text, ce->len) != CP_OK) {
            *err = CP_ENOMEM;
            return ASM_DONE;
        }
        *budget -= (uint64_t)ce->units * 2;
        *resolved = 1;
        a->st.values_cached++;
        return ASM_DONE;
    }
    int64_t size = a->io.size(a->io.ud, sk, file);
    if (size < 0 || size <= offset) return ASM_LATER;
    /* one read for the length and, for most values, the text too */
    uint8_t hdr[VALUE_FIRST_READ];
    uint64_t left = (uint64_t)size - (uint64_t)offset;
    size_t hn = left < sizeof hdr ? (size_t)left : sizeof hdr;
    long got = a->io.read(a->io.ud, sk, file, (uint64_t)offset, hdr, hn);
    if (got < 0) {
        *err = (int)got;
        return ASM_DONE;
    }
    cp_rd rd;
    cp_rd_init(&rd, hdr, (size_t)got);
    int32_t units;
    int st = cp_rd_varint(&rd, &units);
    if (st == CP_AGAIN) return ASM_LATER;
    if (st != CP_OK || units < 0) return ASM_DONE; /* not a value start: unresolved */
    uint64_t bytes = (uint64_t)units * 2;
    if (bytes > *budget) return ASM_DONE;
    cp_buf_reset(&a->vbuf);
    if (rd.pos + bytes <= (uint64_t)got) {
        if (cp_buf_append(&a->vbuf, hdr + rd.pos, (size_t)bytes) != CP_OK) {
            *err = CP_ENOMEM;
            return ASM_DONE;
        }
    } else {
        if (read_range(a, sk, file, (uint64_t)offset + rd.pos, bytes, &a->vbuf, err) == ASM_LATER) return ASM_LATER;
        if (*err) return ASM_DONE;
    }
    cp_buf_reset(&a->sbuf);
    cp_str16 s = {a->vbuf.data, (uint32_t)units};
    if (cp_str16_to_utf8(&a->sbuf, s) != CP_OK) {
        *err = CP_ENOMEM;
        return ASM_DONE;
    }
    *budget -= bytes;
    *resolved = 1;
    a->st.values_read++;
    vcache_put(a, kind, file, offset, (uint32_t)units);
    return ASM_DONE;
}

/* Name of a dictionary id, or "#<id>". Returns a pointer valid until the next call. */
static const char *word_or_id(cp_asm *a, int32_t id, size_t *len, cp_buf *tmp)
{
    const char *w = cp_dict_get(&a->dict, id, len);
    if (w) return w;
    cp_buf_reset(tmp);
    cp_buf_printf(tmp, "#%d", id);
    *len = tmp->len;
    return (const char *)tmp->data;
}

/* Params of a waiting call as a list of (name, value) for JSON: sorted by name. */
struct pv {
    const char *name;
    size_t nlen;
    int32_t id;
    uint32_t idx;               /* position, to keep value order within a name */
    const char *val;
    size_t vlen;
};
typedef struct pv pv;

static int cmp_pv(const void *x, const void *y)
{
    const pv *a = x, *b = y;
    size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
    int c = memcmp(a->name, b->name, n);
    if (c) return c;
    if (a->nlen != b->nlen) return a->nlen < b->nlen ? -1 : 1;
    return (a->idx > b->idx) - (a->idx < b->idx);
}

/* Fills a->params_json (names the dictionary lacks become "#<id>"). */
static int params_json(cp_asm *a, const pcall *p, int *error)
{
    cp_buf *j = &a->params_json;
    cp_buf_reset(j);
    *error = 0;
    size_t count = p->nvalues;
    if (count > a->cappv) {
        size_t cap = a->cappv ? a->cappv : 16;
        while (cap < count) cap *= 2;
        pv *nv = realloc(a->pv, cap * sizeof *nv);
        if (!nv) return CP_ENOMEM;
        a->pv = nv;
        a->cappv = cap;
    }
    pv *v = a->pv;
    size_t k = 0;
    cp_buf names = a->names; /* reused storage; handed back below */
    cp_buf_reset(&names);
    for (const uint8_t *s = pparams_begin(p), *end = pparams_end(p); s < end;) {
        pparam prm;
        pparam_next(&s, &prm);
        size_t nlen;
        const char *name = cp_dict_get(&a->dict, prm.id, &nlen);
        if (prm.id == a->call_red_id) *error = 1;
        const uint8_t *q = prm.vals;
        for (uint32_t i = 0; i < (prm.n ? prm.n : 1); i++) {
            uint32_t l = 0;
            const char *val = NULL;
            if (prm.n) {
                memcpy(&l, q, 4);
                val = (const char *)q + 4;
                q += 4 + l;
            }
            v[k] = (pv){name, name ? nlen : 0, prm.id, (uint32_t)k, val, l};
            k++;
        }
    }
    /* unknown names as "#<id>": the text must outlive the sort, so build it first */
    for (size_t i = 0; i < k; i++) {
        if (v[i].name) continue;
        v[i].nlen = (size_t)snprintf(NULL, 0, "#%d", v[i].id);
    }
    size_t total = 0;
    for (size_t i = 0; i < k; i++)
        if (!v[i].name) total += v[i].nlen + 1;
    if (cp_buf_reserve(&names, total + 1) != CP_OK) {
        a->names = names;
        return CP_ENOMEM;
    }
    for (size_t i = 0; i < k; i++) {
        if (v[i].name) continue;
        char *at = (char *)names.data + names.len;
        snprintf(at, v[i].nlen + 1, "#%d", v[i].id);
        names.len += v[i].nlen + 1;
        v[i].name = at;
    }
    if (k > 1) qsort(v, k, sizeof *v, cmp_pv);
    int st = cp_buf_putc(j, '{');
    for (size_t i = 0; st == CP_OK && i < k; i++) {
        int same = i && v[i].nlen == v[i - 1].nlen && !memcmp(v[i].name, v[i - 1].name, v[i].nlen);
        if (!same) {
            if (i) st = cp_buf_append(j, "],", 2);
            if (st == CP_OK) st = cp_json_str(j, v[i].name, v[i].nlen);
            if (st == CP_OK) st = cp_buf_append(j, ":[", 2);
        }
        if (st == CP_OK && v[i].val) {
            if (same && j->data[j->len - 1] != '[') st = cp_buf_putc(j, ',');
            if (st == CP_OK) st = cp_json_str(j, v[i].val, v[i].vlen);
        }
    }
    if (st == CP_OK && k) st = cp_buf_putc(j, ']');
    if (st == CP_OK) st = cp_buf_putc(j, '}');
    a->names = names;
    return st;
}

/* The pauses that can overlap [from, to]: [*lo, *hi) of the sorted vector. */
static void pauses_near(const pause_vec *v, int64_t from, int64_t to, size_t *lo, size_t *hi)
{
    size_t l = 0, h = v->n;
    while (l < h) { /* the first pause ending at or after from */
        size_t mid = l + (h - l) / 2;
        if (v->p[mid].end_ms < from) l = mid + 1;
        else h = mid;
    }
    *lo = l;
    while (l < v->n && v->p[l].end_ms - v->max_dur <= to) l++;
    *hi = l;
}

static int64_t pauses_overlap(const pause_vec *v, int64_t from, int64_t to)
{
    size_t lo, hi;
    pauses_near(v, from, to, &lo, &hi);
    return hi > lo ? cp_pause_overlap(v->p + lo, hi - lo, from, to) : 0;
}

/* Emits the call (with the blob in a->blob if have_blob; sql: the trace references a
 * value of the deduplicated big-value stream, the `sql` tag of ui.md §3.3). */
static int emit(cp_asm *a, pcall *p, int have_blob, int sql, const char *reason)
{
    int error = 0;
    int st = params_json(a, p, &error);
    if (st != CP_OK) return st;
    const cp_call_rec *r = &p->rec;
    cp_call c = {0};
    c.ts_ms = r->start_ms;
    c.duration_ms = r->duration_ms;
    c.cpu_time = r->cpu_time;
    c.wait_time = r->wait_time;
    c.memory_used = r->memory_used;
    c.queue_wait_ms = r->queue_wait_ms;
    c.suspend_ms = (int32_t)pauses_overlap(&a->pauses, r->start_ms, cp_add_wrap64(r->start_ms, r->duration_ms));
    c.calls = r->calls;
    c.transactions = r->transactions;
    c.logs_generated = r->logs_generated;
    c.logs_written = r->logs_written;
    c.file_read = r->file_read;
    c.file_written = r->file_written;
    c.net_read = r->net_read;
    c.net_written = r->net_written;
    c.ns = a->ns;
    c.ns_len = a->ns_len;
    c.service = a->service;
    c.service_len = a->service_len;
    c.pod = a->pod;
    c.pod_len = a->pod_len;
    c.restart_ms = a->restart_ms;
    c.method_id = r->method;
    c.method = word_or_id(a, r->method, &c.method_len, &a->method_buf);
    c.thread = (const char *)p->data.data;
    c.thread_len = p->thread_len;
    c.params_json = (const char *)a->params_json.data;
    c.params_json_len = a->params_json.len;
    c.error = error;
    c.sql = sql;
    c.trace_file_index = r->trace_file_index;
    c.buffer_offset = r->buffer_offset;
    c.record_index = r->record_index;
    if (have_blob) {
        c.trace = a->blob.data;
        c.trace_len = a->blob.len;
    } else {
        c.trace_reason = reason;
        a->st.without_trace++;
    }
    a->st.calls_out++;
    return a->io.emit(a->io.ud, &c) ? CP_EIO : CP_OK;
}

/* The dictionary knows the call's method and parameter names. */
static int names_known(const cp_asm *a, const pcall *p)
{
    if (!cp_dict_get(&a->dict, p->rec.method, NULL)) return 0;
    for (const uint8_t *s = pparams_begin(p), *end = pparams_end(p); s < end;) {
        pparam prm;
        pparam_next(&s, &prm);
        if (!cp_dict_get(&a->dict, prm.id, NULL)) return 0;
    }
    return 1;
}

/* The extent its call claimed is no longer kept: the full one, or the slim entry in slot sj. */
static void claim_drop(cp_asm *a, extent *e, size_t sj)
{
    if (sj != SIZE_MAX) slim_drop(a, sj);
    else extent_drop(a, e);
}

/* Tries to assemble p. ASM_LATER: something it needs has not arrived and its wait is
 * not over. Otherwise the call was emitted (with or without its trace). */
static int assemble(cp_asm *a, pcall *p, int64_t now_ms, int final, int *err)
{
    const cp_call_rec *r = &p->rec;
    uint64_t ka = key_a(r->trace_file_index, r->record_index), kb = (uint64_t)(uint32_t)r->buffer_offset;
    extent *e = kmap_get(&a->extents, ka, kb), slim_e;
    seg slim_seg;
    size_t sj = e ? SIZE_MAX : slim_find(&a->slims, r->trace_file_index, r->record_index, kb);
    if (sj != SIZE_MAX) {
        if (slim_inflate(a, sj, &slim_e, &slim_seg) != CP_OK) {
            *err = CP_ENOMEM;
            return ASM_DONE;
        }
        e = &slim_e;
    }
    if (!e || !e->complete) {
        *err = emit(a, p, 0, 0, e ? CP_TRACE_INCOMPLETE : CP_TRACE_NOT_FOUND);
        return ASM_DONE;
    }
    if (!p->first_try_ms) p->first_try_ms = now_ms;
    int give_up = final || now_ms - p->first_try_ms >= a->lim.ref_wait_ms;
    if (!give_up && !names_known(a, p)) return ASM_LATER;
    if (e->too_large) {
        claim_drop(a, e, sj);
        *err = emit(a, p, 0, 0, CP_TRACE_TOO_LARGE);
        return ASM_DONE;
    }
    if (e->root_method != r->method) {
        claim_drop(a, e, sj);
        *err = emit(a, p, 0, 0, CP_TRACE_BAD_POINTER);
        return ASM_DONE;
    }
    cp_blob_builder_reset(&a->bb);
    if (build_trace(a, e, err) == ASM_LATER) return give_up ? (*err = emit(a, p, 0, 0, CP_TRACE_INCOMPLETE), ASM_DONE)
                                                           : ASM_LATER;
    if (*err) return ASM_DONE;
    /* the values its events reference, each once (found by the live pass over the trace) */
    if (e->nrefs > 1) qsort(e->refs, e->nrefs, sizeof *e->refs, cmp_vref);
    size_t nref = 0;
    for (size_t i = 0; i < e->nrefs; i++)
        if (!nref || cmp_vref(&e->refs[nref - 1], &e->refs[i])) e->refs[nref++] = e->refs[i];
    e->nrefs = nref;
    int later = 0, st = CP_OK;
    size_t budget = a->lim.max_values_bytes;
    for (size_t i = 0; st == CP_OK && i < e->nrefs; i++) {
        const vref *v = &e->refs[i];
        int resolved = 0;
        if (read_value(a, v->kind, v->file, v->offset, &budget, &resolved, err) == ASM_LATER) later = 1;
        if (*err) return ASM_DONE;
        if (resolved) {
            st = cp_blob_add_value(&a->bb, v->kind, v->file, v->offset, 1, (const char *)a->sbuf.data, a->sbuf.len);
        } else if (give_up || !later) {
            char ref[48];
            int n = snprintf(ref, sizeof ref, "%u:%d:%d", v->kind, v->file, v->offset);
            st = cp_blob_add_value(&a->bb, v->kind, v->file, v->offset, 0, ref, (size_t)n);
        }
    }
    if (st != CP_OK) {
        *err = st;
        return ASM_DONE;
    }
    if (later && !give_up) return ASM_LATER;
    /* pauses overlapping the call, for the tree's per-node suspension */
    int64_t from = r->start_ms, to = cp_add_wrap64(r->start_ms, r->duration_ms);
    size_t lo, hi;
    pauses_near(&a->pauses, from, to, &lo, &hi);
    for (size_t i = lo; i < hi; i++) {
        const cp_blob_pause *q = &a->pauses.p[i];
        if (q->end_ms - q->duration_ms <= to) cp_blob_add_pause(&a->bb, q->end_ms, q->duration_ms);
    }
    int sql = 0; /* before the drop frees the references */
    for (size_t i = 0; i < e->nrefs && !sql; i++) sql = e->refs[i].kind == 3;
    cp_buf_reset(&a->blob);
    st = cp_blob_build(&a->bb, &a->blob);
    claim_drop(a, e, sj);
    if (st != CP_OK) {
        *err = st;
        return ASM_DONE;
    }
    *err = emit(a, p, 1, sql, NULL);
    return ASM_DONE;
}

static int pcall_done(cp_asm *a, pcall *p)
{
    a->npending--;
    if (a->nspare_calls < MAX_SPARE && p->data.cap <= 65536) {
        p->dup = a->spare_calls;
        a->spare_calls = p;
        a->nspare_calls++;
    } else {
        pcall_free(p);
    }
    return CP_OK;
}

/* Emits waiting calls whose trace wait is over (or all of them when final). */
static int expire_waiting(cp_asm *a, int64_t now_ms, int final)
{
    int first = CP_OK;
    while (!list_empty(&a->waiting)) {
        pcall *p = CONTAINER(a->waiting.next, pcall, q);
        int over = final || now_ms - p->arrived_ms >= a->lim.trace_wait_ms || a->npending > a->lim.max_pending;
        if (!over) break;
        int backlog = !final && now_ms - p->arrived_ms < a->lim.trace_wait_ms;
        waiting_remove(a, p);
        int err = CP_OK;
        if (backlog) err = emit(a, p, 0, 0, CP_TRACE_BACKLOG);
        else assemble(a, p, now_ms, 1, &err); /* emits with the right reason */
        pcall_done(a, p);
        if (err && first == CP_OK) first = err;
    }
    return first;
}

int cp_asm_pump(cp_asm *a, int64_t now_ms, int final)
{
    int first = CP_OK;
    /* retries first: they are older */
    link *lists[2] = {&a->retry, &a->ready};
    for (int li = 0; li < 2; li++) {
        link *h = lists[li];
        link *stop = h->prev; /* calls moved to retry during this pass are not revisited */
        while (!list_empty(h)) {
            link *n = h->next;
            int last = n == stop;
            pcall *p = CONTAINER(n, pcall, q);
            list_del(n);
            int err = CP_OK;
            if (assemble(a, p, now_ms, final, &err) == ASM_LATER) {
                list_push(&a->retry, &p->q);
            } else {
                pcall_done(a, p);
            }
            if (err && first == CP_OK) first = err;
            if (last) break;
        }
    }
    int st = expire_waiting(a, now_ms, final);
    if (st && first == CP_OK) first = st;
    if (final) { /* everything must be out: retries that still wait give up now */
        while (!list_empty(&a->retry)) {
            pcall *p = CONTAINER(a->retry.next, pcall, q);
            list_del(&p->q);
            int err = CP_OK;
            assemble(a, p, now_ms, 1, &err);
            pcall_done(a, p);
            if (err && first == CP_OK) first = err;
        }
    }
    extents_expire(a, now_ms);
    return first;
}

size_t cp_asm_pending(const cp_asm *a) { return a->npending; }

int64_t cp_asm_next_deadline(const cp_asm *a)
{
    int64_t d = INT64_MAX;
    if (!list_empty(&a->ready)) return INT64_MIN;
    if (!list_empty(&a->retry)) {
        const pcall *p = CONTAINER(a->retry.next, pcall, q);
        d = p->first_try_ms + a->lim.ref_wait_ms;
    }
    if (!list_empty(&a->waiting)) {
        const pcall *p = CONTAINER(a->waiting.next, pcall, q);
        int64_t w = p->arrived_ms + a->lim.trace_wait_ms;
        if (w < d) d = w;
    }
    return d;
}

/* extents as kept (ext_bytes); pending calls and scratch buffers at their sizes */
static size_t mem_extents(const cp_asm *a)
{
    return a->extents.cap * sizeof(kent) + a->ext_bytes + a->nspare_extents * sizeof(extent);
}

static size_t mem_calls(const cp_asm *a)
{
    return a->npending * (sizeof(pcall) + 128) + a->waiting_by_key.cap * sizeof(kent) +
           a->nspare_calls * sizeof(pcall);
}

/* Extents as kept (the slim rings at their capacity: they are let go when empty) and
 * waiting calls; not the recycled allocations, which stay with the connection (bounded
 * per connection) and do not shrink by waiting. */
size_t cp_asm_waiting_bytes(const cp_asm *a) { return a->ext_bytes + a->npending * (sizeof(pcall) + 128); }

int cp_asm_idle(const cp_asm *a) { return a->npending == 0 && list_empty(&a->done) && a->slims.nlive == 0; }

void cp_asm_get_stats(const cp_asm *a, cp_asm_stats *st)
{
    *st = a->st;
    st->pending = a->npending;
    st->extents_live = a->nextents;
    st->mem_extents = mem_extents(a);
    st->mem_calls = mem_calls(a);
    st->mem_values = a->vmem;
    st->mem_dict = cp_dict_bytes(&a->dict);
    st->memory = sizeof *a + st->mem_dict + st->mem_extents + st->mem_calls + st->mem_values +
                 a->threads.cap * (sizeof(kent) + sizeof(thread_state)) + a->pauses.cap * sizeof(cp_blob_pause) +
                 a->tbuf.cap + a->vbuf.cap + a->sbuf.cap + a->blob.cap;
}
