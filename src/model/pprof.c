/* pprof.c -- Go pprof profiles (dumps-http.md §8.5): gzip, then the protobuf `Profile`
 * message read with a minimal wire-format reader, into sample types, functions,
 * locations and samples; per-function flat/cum totals for listing.
 *
 * The input is untrusted. Inflation stops at max_inflated bytes (a gzip bomb is
 * CP_ELIMIT), every element consumes at least one input byte so counts are bounded by
 * the protobuf's size, and every id and string index is resolved and checked once at
 * the end of parsing, so the queries below never see a dangling reference. */
#include "model/cp_dumpfmt.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <zlib.h>

/* ---- the parsed profile ------------------------------------------------------------------ */

typedef struct pf_func {
    uint64_t id;
    int64_t name, sysname, file;      /* string indexes until resolved */
    const char *name_s, *file_s;
} pf_func;

typedef struct pf_loc {
    uint64_t id;
    uint64_t address;                 /* names a frame without lines (an unsymbolized profile) */
    uint32_t line_off, nline;         /* into lines[] */
} pf_loc;

typedef struct pf_sample {
    uint32_t loc_off, nloc;           /* into loc_ids[] */
    uint32_t val_off, nval;           /* into values[] */
} pf_sample;

struct cp_pprof {
    cp_pprof_info info;
    char *strbuf;                     /* every string, NUL-terminated */
    const char **strs;
    size_t nstrs;

    pf_func *funcs;
    size_t nfuncs, funcs_cap;
    pf_loc *locs;
    size_t nlocs, locs_cap;
    uint64_t *lines;                  /* function ids, then function indexes */
    size_t nlines, lines_cap;
    pf_sample *samples;
    size_t nsamples, samples_cap;
    uint64_t *loc_ids;                /* location ids, then location indexes */
    size_t nloc_ids, loc_ids_cap;
    uint64_t *values;                 /* as read; int64 two's complement */
    size_t nvalues, values_cap;

    /* string indexes until resolved */
    int64_t st_idx[16][2], period_idx[2], default_idx;
    int has_period_type;
    struct { uint32_t off, len; } *str_spans;
    size_t nspans, spans_cap;
};

/* ---- gzip -------------------------------------------------------------------------------- */

/* Inflates every gzip member of p[0..n) into out, at most max bytes. */
static int gunzip(const uint8_t *p, size_t n, size_t max, cp_buf *out, char *err, size_t errlen)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK) return CP_ENOMEM;
    size_t in_left = n;
    z.next_in = (Bytef *)p;
    int st = CP_OK;
    for (;;) {
        if (z.avail_in == 0 && in_left > 0) {
            z.avail_in = in_left > UINT32_MAX ? UINT32_MAX : (uInt)in_left;
            in_left -= z.avail_in;
        }
        if (out->len == out->cap) {
            size_t want = out->len < 65536 ? 65536 : out->len; /* doubling, up to max + 1 */
            if (want > max + 1 - out->len) want = max + 1 - out->len;
            if (cp_buf_reserve(out, want) != CP_OK) {
                st = CP_ENOMEM;
                break;
            }
        }
        size_t room = out->cap - out->len;
        if (room > max + 1 - out->len) room = max + 1 - out->len;
        z.next_out = out->data + out->len;
        z.avail_out = room > UINT32_MAX ? UINT32_MAX : (uInt)room;
        uInt before_out = z.avail_out;
        int rc = inflate(&z, Z_NO_FLUSH);
        out->len += before_out - z.avail_out;
        if (out->len > max) {
            cp_set_err(err, errlen, "profile inflates to more than %zu bytes", max);
            st = CP_ELIMIT;
            break;
        }
        if (rc == Z_STREAM_END) {
            /* another member may follow (concatenated gzip); anything else is ignored */
            size_t used = n - (z.avail_in + in_left);
            if (n - used >= 2 && p[used] == 0x1f && p[used + 1] == 0x8b) {
                inflateReset(&z);
                continue;
            }
            break;
        }
        if (rc == Z_MEM_ERROR) {
            st = CP_ENOMEM;
            break;
        }
        if (rc != Z_OK && rc != Z_BUF_ERROR) {
            cp_set_err(err, errlen, "corrupt gzip stream: %s", z.msg ? z.msg : "bad data");
            st = CP_ECORRUPT;
            break;
        }
        /* no progress possible with every input byte consumed: the stream was cut short */
        if (rc == Z_BUF_ERROR && z.avail_in == 0 && in_left == 0) {
            cp_set_err(err, errlen, "truncated gzip stream");
            st = CP_ECORRUPT;
            break;
        }
    }
    inflateEnd(&z);
    return st;
}

/* ---- protobuf wire format ------------------------------------------------------------------ */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct pb {
    const uint8_t *p;
    size_t len, pos;
} pb;

static int pb_varint(pb *r, uint64_t *v)
{
    uint64_t acc = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (r->pos >= r->len) return CP_ECORRUPT;
        uint8_t b = r->p[r->pos++];
        acc |= (uint64_t)(b & 0x7f) << (7 * i);
        if (b < 0x80) {
            *v = acc;
            return CP_OK;
        }
    }
    return CP_ECORRUPT; /* an 11th byte: no encoder writes that */
}

/* Field number and wire type; groups (3, 4) and undefined types are corrupt. */
static int pb_key(pb *r, uint32_t *field, int *wt)
{
    uint64_t k;
    if (pb_varint(r, &k) != CP_OK) return CP_ECORRUPT;
    *wt = (int)(k & 7);
    if (k >> 3 == 0 || k >> 3 > 0x1fffffff) return CP_ECORRUPT;
    if (*wt != WT_VARINT && *wt != WT_I64 && *wt != WT_LEN && *wt != WT_I32) return CP_ECORRUPT;
    *field = (uint32_t)(k >> 3);
    return CP_OK;
}

static int pb_len(pb *r, pb *sub)
{
    uint64_t n;
    if (pb_varint(r, &n) != CP_OK || n > r->len - r->pos) return CP_ECORRUPT;
    sub->p = r->p + r->pos;
    sub->len = (size_t)n;
    sub->pos = 0;
    r->pos += (size_t)n;
    return CP_OK;
}

static int pb_skip(pb *r, int wt)
{
    uint64_t v;
    pb sub;
    switch (wt) {
    case WT_VARINT: return pb_varint(r, &v);
    case WT_LEN: return pb_len(r, &sub);
    case WT_I64:
    case WT_I32: {
        size_t k = wt == WT_I64 ? 8 : 4;
        if (r->len - r->pos < k) return CP_ECORRUPT;
        r->pos += k;
        return CP_OK;
    }
    default: return CP_ECORRUPT;
    }
}

/* A scalar field that must be a varint. */
static int pb_scalar(pb *r, int wt, uint64_t *v)
{
    if (wt != WT_VARINT) return CP_ECORRUPT;
    return pb_varint(r, v);
}

/* Appends one repeated numeric field's values: a single varint (unpacked) or a packed
 * run of them. *cap / *arr grow as cp_grow does. */
static int pb_repeated(pb *r, int wt, uint64_t **arr, size_t *n, size_t *cap)
{
    if (wt == WT_VARINT) {
        uint64_t v;
        if (pb_varint(r, &v) != CP_OK) return CP_ECORRUPT;
        if (cp_grow((void **)arr, cap, *n + 1, sizeof **arr, 64) != CP_OK) return CP_ENOMEM;
        (*arr)[(*n)++] = v;
        return CP_OK;
    }
    if (wt != WT_LEN) return CP_ECORRUPT;
    pb sub;
    if (pb_len(r, &sub) != CP_OK) return CP_ECORRUPT;
    /* one value per byte at most: grow once */
    if (cp_grow((void **)arr, cap, *n + sub.len, sizeof **arr, 64) != CP_OK) return CP_ENOMEM;
    while (sub.pos < sub.len) {
        uint64_t v;
        if (pb_varint(&sub, &v) != CP_OK) return CP_ECORRUPT;
        (*arr)[(*n)++] = v;
    }
    return CP_OK;
}

/* ---- Profile messages ---------------------------------------------------------------------- */

typedef struct pctx {
    cp_pprof *pf;
    char *err;
    size_t errlen;
} pctx;

static int corrupt(pctx *c, const char *what)
{
    cp_set_err(c->err, c->errlen, "malformed profile: bad %s", what);
    return CP_ECORRUPT;
}

/* ValueType {type = 1, unit = 2} */
static int parse_value_type(pctx *c, pb *m, int64_t idx[2])
{
    idx[0] = idx[1] = 0;
    while (m->pos < m->len) {
        uint32_t f;
        int wt;
        uint64_t v;
        if (pb_key(m, &f, &wt) != CP_OK) return corrupt(c, "value type");
        if (f == 1 || f == 2) {
            if (pb_scalar(m, wt, &v) != CP_OK) return corrupt(c, "value type");
            idx[f - 1] = (int64_t)v;
        } else if (pb_skip(m, wt) != CP_OK) {
            return corrupt(c, "value type");
        }
    }
    return CP_OK;
}

/* Sample {location_id = 1 repeated, value = 2 repeated, label = 3 repeated} */
static int parse_sample(pctx *c, pb *m)
{
    cp_pprof *pf = c->pf;
    if (cp_grow((void **)&pf->samples, &pf->samples_cap, pf->nsamples + 1, sizeof *pf->samples, 64) != CP_OK)
        return CP_ENOMEM;
    pf_sample *s = &pf->samples[pf->nsamples];
    s->loc_off = (uint32_t)pf->nloc_ids;
    s->val_off = (uint32_t)pf->nvalues;
    while (m->pos < m->len) {
        uint32_t f;
        int wt, st = CP_OK;
        if (pb_key(m, &f, &wt) != CP_OK) return corrupt(c, "sample");
        if (f == 1) st = pb_repeated(m, wt, &pf->loc_ids, &pf->nloc_ids, &pf->loc_ids_cap);
        else if (f == 2) st = pb_repeated(m, wt, &pf->values, &pf->nvalues, &pf->values_cap);
        else st = pb_skip(m, wt);
        if (st == CP_ENOMEM) return st;
        if (st != CP_OK) return corrupt(c, "sample");
    }
    s->nloc = (uint32_t)(pf->nloc_ids - s->loc_off);
    s->nval = (uint32_t)(pf->nvalues - s->val_off);
    pf->nsamples++;
    return CP_OK;
}

/* Line {function_id = 1, line = 2, column = 3}: only the function matters here. */
static int parse_line(pctx *c, pb *m)
{
    cp_pprof *pf = c->pf;
    uint64_t fid = 0;
    while (m->pos < m->len) {
        uint32_t f;
        int wt;
        if (pb_key(m, &f, &wt) != CP_OK) return corrupt(c, "line");
        if (f == 1) {
            if (pb_scalar(m, wt, &fid) != CP_OK) return corrupt(c, "line");
        } else if (pb_skip(m, wt) != CP_OK) {
            return corrupt(c, "line");
        }
    }
    if (cp_grow((void **)&pf->lines, &pf->lines_cap, pf->nlines + 1, sizeof *pf->lines, 64) != CP_OK)
        return CP_ENOMEM;
    pf->lines[pf->nlines++] = fid;
    return CP_OK;
}

/* Location {id = 1, mapping_id = 2, address = 3, line = 4 repeated, is_folded = 5} */
static int parse_location(pctx *c, pb *m)
{
    cp_pprof *pf = c->pf;
    if (cp_grow((void **)&pf->locs, &pf->locs_cap, pf->nlocs + 1, sizeof *pf->locs, 64) != CP_OK) return CP_ENOMEM;
    pf_loc *l = &pf->locs[pf->nlocs];
    l->id = 0;
    l->address = 0;
    l->line_off = (uint32_t)pf->nlines;
    while (m->pos < m->len) {
        uint32_t f;
        int wt, st;
        if (pb_key(m, &f, &wt) != CP_OK) return corrupt(c, "location");
        if (f == 1) {
            if (pb_scalar(m, wt, &l->id) != CP_OK) return corrupt(c, "location");
        } else if (f == 3 && wt == WT_VARINT) { /* another wire type is skipped, as before */
            if (pb_varint(m, &l->address) != CP_OK) return corrupt(c, "location");
        } else if (f == 4) {
            pb sub;
            if (wt != WT_LEN || pb_len(m, &sub) != CP_OK) return corrupt(c, "location");
            if ((st = parse_line(c, &sub)) != CP_OK) return st;
        } else if (pb_skip(m, wt) != CP_OK) {
            return corrupt(c, "location");
        }
    }
    l->nline = (uint32_t)(pf->nlines - l->line_off);
    pf->nlocs++;
    return CP_OK;
}

/* Function {id = 1, name = 2, system_name = 3, filename = 4, start_line = 5} */
static int parse_function(pctx *c, pb *m)
{
    cp_pprof *pf = c->pf;
    if (cp_grow((void **)&pf->funcs, &pf->funcs_cap, pf->nfuncs + 1, sizeof *pf->funcs, 64) != CP_OK)
        return CP_ENOMEM;
    pf_func *fn = &pf->funcs[pf->nfuncs];
    memset(fn, 0, sizeof *fn);
    while (m->pos < m->len) {
        uint32_t f;
        int wt;
        uint64_t v;
        if (pb_key(m, &f, &wt) != CP_OK) return corrupt(c, "function");
        if (f >= 1 && f <= 4) {
            if (pb_scalar(m, wt, &v) != CP_OK) return corrupt(c, "function");
            if (f == 1) fn->id = v;
            else if (f == 2) fn->name = (int64_t)v;
            else if (f == 3) fn->sysname = (int64_t)v;
            else fn->file = (int64_t)v;
        } else if (pb_skip(m, wt) != CP_OK) {
            return corrupt(c, "function");
        }
    }
    pf->nfuncs++;
    return CP_OK;
}

/* A message that is only counted (mapping): still walked, so a malformed one is caught. */
static int walk_message(pctx *c, pb *m, const char *what)
{
    while (m->pos < m->len) {
        uint32_t f;
        int wt;
        if (pb_key(m, &f, &wt) != CP_OK || pb_skip(m, wt) != CP_OK) return corrupt(c, what);
    }
    return CP_OK;
}

static int parse_profile(pctx *c, const uint8_t *p, size_t n)
{
    cp_pprof *pf = c->pf;
    pb r = {p, n, 0};
    while (r.pos < r.len) {
        uint32_t f;
        int wt, st = CP_OK;
        uint64_t v;
        pb sub;
        if (pb_key(&r, &f, &wt) != CP_OK) return corrupt(c, "field key");
        switch (f) {
        case 1: case 2: case 3: case 4: case 5: case 6: case 11:
            if (wt != WT_LEN || pb_len(&r, &sub) != CP_OK) return corrupt(c, "length-delimited field");
            if (f == 1) {
                if (pf->info.nsample_types == CP_ARRAY_LEN(pf->st_idx)) {
                    cp_set_err(c->err, c->errlen, "more than %zu sample types", CP_ARRAY_LEN(pf->st_idx));
                    return CP_ELIMIT;
                }
                st = parse_value_type(c, &sub, pf->st_idx[pf->info.nsample_types++]);
            } else if (f == 2) {
                st = parse_sample(c, &sub);
            } else if (f == 3) {
                st = walk_message(c, &sub, "mapping");
                pf->info.mappings++;
            } else if (f == 4) {
                st = parse_location(c, &sub);
            } else if (f == 5) {
                st = parse_function(c, &sub);
            } else if (f == 6) {
                if (cp_grow((void **)&pf->str_spans, &pf->spans_cap, pf->nspans + 1, sizeof *pf->str_spans, 256) != CP_OK)
                    return CP_ENOMEM;
                pf->str_spans[pf->nspans].off = (uint32_t)(sub.p - p);
                pf->str_spans[pf->nspans].len = (uint32_t)sub.len;
                pf->nspans++;
            } else {
                st = parse_value_type(c, &sub, pf->period_idx);
                pf->has_period_type = 1;
            }
            break;
        case 9: case 10: case 12: case 14:
            if (pb_scalar(&r, wt, &v) != CP_OK) return corrupt(c, "scalar field");
            if (f == 9) pf->info.time_nanos = (int64_t)v;
            else if (f == 10) pf->info.duration_nanos = (int64_t)v;
            else if (f == 12) pf->info.period = (int64_t)v;
            else pf->default_idx = (int64_t)v;
            break;
        default:
            /* drop_frames, keep_frames, comment and anything newer */
            if (pb_skip(&r, wt) != CP_OK) return corrupt(c, "field");
            break;
        }
        if (st != CP_OK) return st;
    }
    return CP_OK;
}

/* ---- resolving ids and string indexes -------------------------------------------------------- */

static int build_strings(pctx *c, const uint8_t *p)
{
    cp_pprof *pf = c->pf;
    if (pf->nspans == 0 || pf->str_spans[0].len != 0) {
        cp_set_err(c->err, c->errlen, "malformed profile: %s", pf->nspans ? "string_table[0] is not empty" : "no string table");
        return CP_ECORRUPT;
    }
    size_t total = 0;
    for (size_t i = 0; i < pf->nspans; i++) total += (size_t)pf->str_spans[i].len + 1;
    pf->strbuf = malloc(total);
    pf->strs = malloc(pf->nspans * sizeof *pf->strs);
    if (!pf->strbuf || !pf->strs) return CP_ENOMEM;
    char *q = pf->strbuf;
    for (size_t i = 0; i < pf->nspans; i++) {
        memcpy(q, p + pf->str_spans[i].off, pf->str_spans[i].len);
        q[pf->str_spans[i].len] = '\0';
        pf->strs[i] = q;
        q += pf->str_spans[i].len + 1;
    }
    pf->nstrs = pf->nspans;
    return CP_OK;
}

static int get_str(pctx *c, int64_t idx, const char **out, const char *what)
{
    if (idx < 0 || (uint64_t)idx >= c->pf->nstrs) {
        cp_set_err(c->err, c->errlen, "malformed profile: %s string index %lld out of range (%zu strings)", what,
                (long long)idx, c->pf->nstrs);
        return CP_ECORRUPT;
    }
    *out = c->pf->strs[idx];
    return CP_OK;
}

typedef struct idmap {
    uint64_t id;
    uint32_t idx;
} idmap;

static int cmp_idmap(const void *a, const void *b)
{
    const idmap *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* id -> index for n records: direct when ids are 1..n in order (what Go writes), else a
 * sorted table. Ids must be non-zero and unique. */
typedef struct idindex {
    idmap *map;       /* NULL when dense */
    size_t n;
} idindex;

static int idindex_build(pctx *c, idindex *ix, size_t n, uint64_t (*id_at)(const cp_pprof *, size_t),
                         const char *what)
{
    ix->map = NULL;
    ix->n = n;
    size_t i = 0;
    while (i < n && id_at(c->pf, i) == i + 1) i++;
    if (i == n) return CP_OK;
    ix->map = malloc(n * sizeof *ix->map);
    if (!ix->map) return CP_ENOMEM;
    for (i = 0; i < n; i++) ix->map[i] = (idmap){id_at(c->pf, i), (uint32_t)i};
    qsort(ix->map, n, sizeof *ix->map, cmp_idmap);
    for (i = 0; i < n; i++) {
        if (ix->map[i].id == 0 || (i > 0 && ix->map[i].id == ix->map[i - 1].id)) {
            cp_set_err(c->err, c->errlen, "malformed profile: %s id %llu is %s", what, (unsigned long long)ix->map[i].id,
                    ix->map[i].id ? "duplicated" : "zero");
            return CP_ECORRUPT;
        }
    }
    return CP_OK;
}

static int idindex_find(const idindex *ix, uint64_t id, uint32_t *idx)
{
    if (!ix->map) {
        if (id == 0 || id > ix->n) return 0;
        *idx = (uint32_t)(id - 1);
        return 1;
    }
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ix->map[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    if (lo == ix->n || ix->map[lo].id != id) return 0;
    *idx = ix->map[lo].idx;
    return 1;
}

static uint64_t func_id_at(const cp_pprof *pf, size_t i) { return pf->funcs[i].id; }
static uint64_t loc_id_at(const cp_pprof *pf, size_t i) { return pf->locs[i].id; }

static int resolve(pctx *c, const uint8_t *p)
{
    cp_pprof *pf = c->pf;
    cp_pprof_info *in = &pf->info;
    int st = build_strings(c, p);
    if (st != CP_OK) return st;

    for (size_t i = 0; i < in->nsample_types; i++) {
        if ((st = get_str(c, pf->st_idx[i][0], &in->sample_types[i].type, "sample type")) != CP_OK) return st;
        if ((st = get_str(c, pf->st_idx[i][1], &in->sample_types[i].unit, "sample unit")) != CP_OK) return st;
    }
    if (pf->has_period_type) {
        if ((st = get_str(c, pf->period_idx[0], &in->period_type.type, "period type")) != CP_OK) return st;
        if ((st = get_str(c, pf->period_idx[1], &in->period_type.unit, "period unit")) != CP_OK) return st;
    }
    const char *def = NULL;
    if ((st = get_str(c, pf->default_idx, &def, "default sample type")) != CP_OK) return st;
    in->default_sample_type = -1;
    if (pf->default_idx != 0)
        for (size_t i = 0; i < in->nsample_types && in->default_sample_type < 0; i++)
            if (strcmp(in->sample_types[i].type, def) == 0) in->default_sample_type = (int)i;

    for (size_t i = 0; i < pf->nfuncs; i++) {
        pf_func *f = &pf->funcs[i];
        const char *sys;
        if ((st = get_str(c, f->name, &f->name_s, "function name")) != CP_OK) return st;
        if ((st = get_str(c, f->sysname, &sys, "function system name")) != CP_OK) return st;
        if ((st = get_str(c, f->file, &f->file_s, "function file")) != CP_OK) return st;
    }

    idindex fix, lix;
    lix.map = NULL;
    if ((st = idindex_build(c, &fix, pf->nfuncs, func_id_at, "function")) != CP_OK) goto out_f;
    if ((st = idindex_build(c, &lix, pf->nlocs, loc_id_at, "location")) != CP_OK) goto out;
    for (size_t i = 0; i < pf->nlines; i++) {
        uint32_t k;
        if (!idindex_find(&fix, pf->lines[i], &k)) {
            cp_set_err(c->err, c->errlen, "malformed profile: a line refers to function %llu, which does not exist",
                    (unsigned long long)pf->lines[i]);
            st = CP_ECORRUPT;
            goto out;
        }
        pf->lines[i] = k;
    }
    for (size_t i = 0; i < pf->nloc_ids; i++) {
        uint32_t k;
        if (!idindex_find(&lix, pf->loc_ids[i], &k)) {
            cp_set_err(c->err, c->errlen, "malformed profile: a sample refers to location %llu, which does not exist",
                    (unsigned long long)pf->loc_ids[i]);
            st = CP_ECORRUPT;
            goto out;
        }
        pf->loc_ids[i] = k;
    }
    for (size_t i = 0; i < pf->nsamples; i++) {
        if (pf->samples[i].nval != in->nsample_types) {
            cp_set_err(c->err, c->errlen, "malformed profile: sample %zu has %u values for %zu sample types", i,
                    pf->samples[i].nval, in->nsample_types);
            st = CP_ECORRUPT;
            goto out;
        }
    }
    in->samples = pf->nsamples;
    in->locations = pf->nlocs;
    in->functions = pf->nfuncs;
out:
    free(lix.map);
out_f:
    free(fix.map);
    return st;
}

/* ---- public ------------------------------------------------------------------------------ */

void cp_pprof_free(cp_pprof *pf)
{
    if (!pf) return;
    free(pf->strbuf);
    free(pf->strs);
    free(pf->funcs);
    free(pf->locs);
    free(pf->lines);
    free(pf->samples);
    free(pf->loc_ids);
    free(pf->values);
    free(pf->str_spans);
    free(pf);
}

int cp_pprof_parse(const uint8_t *p, size_t n, size_t max_inflated, cp_pprof **out, char *err, size_t errlen)
{
    *out = NULL;
    cp_set_err(err, errlen, "%s", "");
    if (max_inflated == 0) max_inflated = CP_PPROF_MAX_INFLATED;
    /* 32-bit indexes inside: every element costs at least one byte */
    if (max_inflated > UINT32_MAX - 1) max_inflated = UINT32_MAX - 1;
    if (n == 0) {
        cp_set_err(err, errlen, "empty profile");
        return CP_ECORRUPT;
    }
    cp_buf raw;
    cp_buf_init(&raw);
    const uint8_t *pb_data = p;
    size_t pb_len_ = n;
    int st;
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b) {
        st = gunzip(p, n, max_inflated, &raw, err, errlen);
        if (st != CP_OK) {
            if (st == CP_ENOMEM) cp_set_err(err, errlen, "out of memory inflating the profile");
            cp_buf_free(&raw);
            return st;
        }
        pb_data = raw.data;
        pb_len_ = raw.len;
    } else if (n > max_inflated) {
        cp_set_err(err, errlen, "profile of %zu bytes is over the limit of %zu", n, max_inflated);
        return CP_ELIMIT;
    }

    cp_pprof *pf = calloc(1, sizeof *pf);
    if (!pf) {
        cp_buf_free(&raw);
        return CP_ENOMEM;
    }
    pctx c = {pf, err, errlen};
    st = parse_profile(&c, pb_data ? pb_data : (const uint8_t *)"", pb_len_);
    if (st == CP_OK) st = resolve(&c, pb_data);
    cp_buf_free(&raw);
    /* the spans pointed into the inflated bytes; not needed any more */
    free(pf->str_spans);
    pf->str_spans = NULL;
    if (st != CP_OK) {
        if (st == CP_ENOMEM) cp_set_err(err, errlen, "out of memory decoding the profile");
        cp_pprof_free(pf);
        return st;
    }
    *out = pf;
    return CP_OK;
}

const cp_pprof_info *cp_pprof_get_info(const cp_pprof *pf) { return &pf->info; }

static int has_type(const cp_pprof_info *in, const char *t)
{
    for (size_t i = 0; i < in->nsample_types; i++)
        if (strcmp(in->sample_types[i].type, t) == 0) return 1;
    return 0;
}

cp_dump_kind cp_pprof_guess_kind(const cp_pprof *pf)
{
    const cp_pprof_info *in = &pf->info;
    if (has_type(in, "goroutine")) return CP_DUMP_GOROUTINE;
    if (has_type(in, "cpu") || has_type(in, "samples")) return CP_DUMP_PROFILE;
    /* Go writes the same four types for allocs and heap; only the default differs:
     * alloc_space for allocs, unset (or inuse_*) for heap. */
    if (has_type(in, "inuse_space") || has_type(in, "inuse_objects")) {
        const char *def = in->default_sample_type >= 0 ? in->sample_types[in->default_sample_type].type : "";
        return strncmp(def, "alloc_", 6) == 0 ? CP_DUMP_ALLOC : CP_DUMP_PPROF_HEAP;
    }
    return CP_DUMP_ALLOC;
}

/* Saturating: values are untrusted and a sum must not be undefined behaviour. */
static int64_t sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
    return a + b;
}

static int cmp_total(const void *a, const void *b)
{
    const cp_pprof_fn_total *x = a, *y = b;
    if (x->flat != y->flat) return x->flat > y->flat ? -1 : 1;
    int r = strcmp(x->name, y->name);
    if (r) return r;
    r = strcmp(x->file, y->file);
    if (r) return r;
    if (x->cum != y->cum) return x->cum > y->cum ? -1 : 1;
    return 0;
}

int cp_pprof_top(const cp_pprof *pf, size_t st, cp_pprof_fn_total *out, size_t cap, size_t *n)
{
    *n = 0;
    if (st >= pf->info.nsample_types) return CP_EINVAL;
    size_t nf = pf->nfuncs;
    if (nf == 0 || cap == 0) return CP_OK;
    cp_pprof_fn_total *t = malloc(nf * sizeof *t);
    uint32_t *seen = calloc(nf, sizeof *seen); /* sample number + 1 that last counted it */
    if (!t || !seen) {
        free(t);
        free(seen);
        return CP_ENOMEM;
    }
    for (size_t i = 0; i < nf; i++) t[i] = (cp_pprof_fn_total){pf->funcs[i].name_s, pf->funcs[i].file_s, 0, 0};
    for (size_t s = 0; s < pf->nsamples; s++) {
        const pf_sample *sm = &pf->samples[s];
        int64_t v = (int64_t)pf->values[sm->val_off + st];
        for (uint32_t k = 0; k < sm->nloc; k++) {
            const pf_loc *l = &pf->locs[pf->loc_ids[sm->loc_off + k]];
            for (uint32_t j = 0; j < l->nline; j++) {
                uint32_t fi = (uint32_t)pf->lines[l->line_off + j];
                /* the leaf: first location's first (innermost inlined) line */
                if (k == 0 && j == 0) t[fi].flat = sat_add(t[fi].flat, v);
                if (seen[fi] != s + 1) {
                    seen[fi] = (uint32_t)(s + 1);
                    t[fi].cum = sat_add(t[fi].cum, v);
                }
            }
        }
    }
    qsort(t, nf, sizeof *t, cmp_total);
    size_t k = nf < cap ? nf : cap;
    memcpy(out, t, k * sizeof *t);
    *n = k;
    free(t);
    free(seen);
    return CP_OK;
}

int cp_pprof_sample_stack(const cp_pprof *pf, size_t i, size_t st, int64_t *value, cp_pprof_frame *frames,
                          size_t cap, size_t *depth)
{
    if (i >= pf->nsamples || st >= pf->info.nsample_types) return CP_EINVAL;
    const pf_sample *sm = &pf->samples[i];
    *value = (int64_t)pf->values[sm->val_off + st];
    size_t n = 0;
    /* locations are listed leaf first and a location's lines innermost first: walk both
     * backwards for the root first */
    for (uint32_t k = sm->nloc; k-- > 0;) {
        const pf_loc *l = &pf->locs[pf->loc_ids[sm->loc_off + k]];
        if (l->nline == 0) {
            if (n < cap) frames[n] = (cp_pprof_frame){"", l->address};
            n++;
        }
        for (uint32_t j = l->nline; j-- > 0; n++)
            if (n < cap) frames[n] = (cp_pprof_frame){pf->funcs[pf->lines[l->line_off + j]].name_s, l->address};
    }
    *depth = n;
    return CP_OK;
}
