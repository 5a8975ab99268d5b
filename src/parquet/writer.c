/* writer.c -- the Parquet writer (cp_parquet.h): rows in, file bytes out through a sink.
 *
 * Rows are shredded at once into per-leaf flat buffers (levels one byte per entry, integer
 * values in an int64 array, byte arrays as lengths + one data buffer), so adding a row
 * allocates nothing in the steady state. When a row group is full each leaf becomes one
 * column chunk: an optional dictionary page, then one v1 data page per page_rows rows,
 * each compressed on its own with a reused ZSTD context. The footer is built at the end
 * from what every chunk remembered (offsets, sizes, counts, statistics).
 *
 * Output depends only on the rows and options: no clocks, no random seeds, no padding. */
#include "pq_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

#define PQ_STAT_MAX 64 /* byte-array min/max longer than this are left out (parquet.md §8.1) */

/* One leaf column being buffered. */
typedef struct wleaf {
    int ptype;                  /* PQ_INT32 ... */
    int max_def, max_rep;
    int dict;                   /* the column asks for a dictionary (not booleans) */
    int is_unsigned;            /* U64: unsigned statistics order */
    const char *path[5];
    int npath;
    /* the current row group */
    cp_buf def, rep;            /* one byte per entry, only when the max level is > 0 */
    size_t nentries;
    int64_t *iv;                /* integer and boolean values (non-null only) */
    size_t niv, civ;
    uint32_t *blen;             /* byte-array value lengths (non-null only) */
    size_t nb, cb;
    cp_buf bdata;               /* byte-array value bytes, back to back */
    size_t *pages;              /* (entry, value) index pairs where each page starts */
    size_t npages, cpages;
} wleaf;

/* What the footer needs of one written column chunk. */
typedef struct wchunk {
    int64_t num_values, unc, comp, data_off, dict_off;
    int64_t null_count;
    uint8_t dict, levels, has_minmax, min_len, max_len;
    uint8_t min[PQ_STAT_MAX], max[PQ_STAT_MAX];
} wchunk;

typedef struct wrg {
    int64_t rows, offset, unc, comp;
} wrg;

/* The dictionary of the chunk being written. Byte-array entries point at their first
 * occurrence in the leaf's bdata (off, len); integer entries are values (ival). The
 * open-addressing table holds entry index + 1 (0 = empty). */
typedef struct wdict {
    size_t *off;
    uint32_t *len, *hash;
    int64_t *ival;
    size_t n, cap;
    uint32_t *slots;
    size_t nslots;
    uint32_t *idx;              /* per value: its entry */
    size_t cidx;
    size_t bytes;               /* PLAIN size of the dictionary page */
} wdict;

struct cp_pq_writer {
    const cp_pq_column *cols;
    size_t ncols;
    wleaf *leaves;
    size_t nleaves;
    size_t col_leaf[CP_PQ_MAX_COLUMNS];
    size_t row_group_rows, row_group_bytes, page_rows, dict_max_bytes;
    int zstd_level;             /* < 0: no compression */
    char *created_by;
    char **kv;                  /* owned copies, key/value pairs */
    size_t nkv;
    cp_pq_sink_fn sink;
    void *sink_ud;
    uint64_t offset;            /* bytes given to the sink */
    uint64_t rows;
    size_t rg_rows, rg_bytes;
    wchunk *chunks;             /* nleaves per row group */
    size_t nchunks, cchunks;
    wrg *rgs;
    size_t nrgs, crgs;
    ZSTD_CCtx *cctx;
    cp_buf out;                 /* bytes of the chunk being written, then the footer */
    cp_buf page;                /* uncompressed body of the page being written */
    cp_buf comp;                /* its compressed form */
    wdict d;
    int64_t chunk_unc;          /* headers + uncompressed bodies of the chunk being written */
    int failed;                 /* sticky status after an error */
    int finished;
    char err[256];
};

static int fail(cp_pq_writer *w, int st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(cp_pq_writer *w, int st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->err, sizeof w->err, fmt, ap);
    va_end(ap);
    return st;
}

/* A failure that leaves the buffers or the output inconsistent: the writer stops. */
static int broken(cp_pq_writer *w, int st, const char *what)
{
    if (st == CP_ENOMEM) fail(w, st, "parquet writer: out of memory (%s)", what);
    else if (!w->err[0]) fail(w, st, "parquet writer: %s failed (%d)", what, st);
    w->failed = st;
    return st;
}

/* ---- setup ------------------------------------------------------------------------------ */

static wleaf *add_leaf(cp_pq_writer *w, int ptype, int max_def, int max_rep, int dict, const char *name)
{
    wleaf *l = &w->leaves[w->nleaves++];
    memset(l, 0, sizeof *l);
    l->ptype = ptype;
    l->max_def = max_def;
    l->max_rep = max_rep;
    l->dict = dict && ptype != PQ_BOOLEAN;
    l->path[l->npath++] = name;
    cp_buf_init(&l->def);
    cp_buf_init(&l->rep);
    cp_buf_init(&l->bdata);
    return l;
}

static int physical(cp_pq_type t)
{
    switch (t) {
    case CP_PQ_I32: return PQ_INT32;
    case CP_PQ_I64:
    case CP_PQ_U64:
    case CP_PQ_TS_MS: return PQ_INT64;
    case CP_PQ_BOOL: return PQ_BOOLEAN;
    case CP_PQ_STRING:
    case CP_PQ_BINARY:
    case CP_PQ_MAP_STR_LIST:
    case CP_PQ_MAP_STR_STR: return PQ_BYTE_ARRAY;
    default: return -1;
    }
}

/* Leaves of each column with their levels (parquet.md §6): a flat column is one leaf
 * (max_def 1 when optional); the maps are key (2, 1) and element (5, 2) or value (3, 1). */
static int make_leaves(cp_pq_writer *w, char *err, size_t errlen)
{
    w->leaves = calloc(w->ncols * 2, sizeof *w->leaves);
    if (!w->leaves) return CP_ENOMEM;
    for (size_t c = 0; c < w->ncols; c++) {
        const cp_pq_column *col = &w->cols[c];
        int pt = physical(col->type);
        if (!col->name || !col->name[0] || pt < 0) {
            snprintf(err, errlen, "parquet writer: column %zu has no name or an unknown type", c);
            return CP_EINVAL;
        }
        for (size_t k = 0; k < c; k++)
            if (strcmp(w->cols[k].name, col->name) == 0) {
                snprintf(err, errlen, "parquet writer: two columns named '%s'", col->name);
                return CP_EINVAL;
            }
        w->col_leaf[c] = w->nleaves;
        if (col->type == CP_PQ_MAP_STR_LIST || col->type == CP_PQ_MAP_STR_STR) {
            wleaf *k = add_leaf(w, pt, 2, 1, col->dict, col->name);
            k->path[k->npath++] = "key_value";
            k->path[k->npath++] = "key";
            int list = col->type == CP_PQ_MAP_STR_LIST;
            wleaf *v = add_leaf(w, pt, list ? 5 : 3, list ? 2 : 1, col->dict, col->name);
            v->path[v->npath++] = "key_value";
            v->path[v->npath++] = "value";
            if (list) {
                v->path[v->npath++] = "list";
                v->path[v->npath++] = "element";
            }
        } else {
            wleaf *l = add_leaf(w, pt, col->optional ? 1 : 0, 0, col->dict, col->name);
            l->is_unsigned = col->type == CP_PQ_U64;
        }
    }
    /* value bytes always have storage, so offsets into them are valid even when every
     * value so far was empty */
    for (size_t i = 0; i < w->nleaves; i++)
        if (cp_buf_reserve(&w->leaves[i].bdata, 1) != CP_OK) return CP_ENOMEM;
    return CP_OK;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static int sink(cp_pq_writer *w, const void *p, size_t n)
{
    if (n == 0) return CP_OK;
    int st = w->sink(w->sink_ud, p, n);
    if (st != 0) {
        fail(w, st, "parquet writer: the sink failed (%d)", st);
        return broken(w, st, "sink");
    }
    w->offset += n;
    return CP_OK;
}

int cp_pq_writer_new(const cp_pq_column *cols, size_t ncols, const cp_pq_writer_opts *opts, cp_pq_sink_fn sinkfn,
                     void *sink_ud, cp_pq_writer **out, char *err, size_t errlen)
{
    char scratch[8];
    if (!err || !errlen) err = scratch, errlen = sizeof scratch;
    err[0] = 0;
    *out = NULL;
    if (!cols || ncols == 0 || ncols > CP_PQ_MAX_COLUMNS || !sinkfn) {
        snprintf(err, errlen, "parquet writer: 1 to %d columns and a sink are needed", CP_PQ_MAX_COLUMNS);
        return CP_EINVAL;
    }
    cp_pq_writer *w = calloc(1, sizeof *w);
    if (!w) return CP_ENOMEM;
    w->cols = cols;
    w->ncols = ncols;
    w->sink = sinkfn;
    w->sink_ud = sink_ud;
    cp_pq_writer_opts o = {0};
    if (opts) o = *opts;
    w->row_group_rows = o.row_group_rows ? o.row_group_rows : 65536;
    w->row_group_bytes = o.row_group_bytes ? o.row_group_bytes : (size_t)64 << 20;
    w->page_rows = o.page_rows ? o.page_rows : 16384;
    w->dict_max_bytes = o.dict_max_bytes ? o.dict_max_bytes : (size_t)1 << 20;
    w->zstd_level = o.zstd_level == 0 ? 1 : o.zstd_level == -1 ? -1 : o.zstd_level;
    cp_buf_init(&w->out);
    cp_buf_init(&w->page);
    cp_buf_init(&w->comp);
    int st = make_leaves(w, err, errlen);
    if (st == CP_OK) {
        w->created_by = dup_str(o.created_by ? o.created_by : PQ_CREATED_BY);
        w->kv = calloc(o.nkv * 2 + 1, sizeof *w->kv);
        if (!w->created_by || !w->kv) st = CP_ENOMEM;
        for (size_t i = 0; st == CP_OK && i < o.nkv * 2; i++) {
            if (!o.kv[i] && i % 2 == 0) {
                snprintf(err, errlen, "parquet writer: key/value metadata %zu has no key", i / 2);
                st = CP_EINVAL;
            } else if (o.kv[i] && !(w->kv[i] = dup_str(o.kv[i]))) {
                st = CP_ENOMEM;
            }
        }
        w->nkv = o.nkv;
    }
    if (st == CP_OK && w->zstd_level >= 0 && !(w->cctx = ZSTD_createCCtx())) st = CP_ENOMEM;
    if (st == CP_OK) st = sink(w, "PAR1", 4);
    if (st != CP_OK) {
        if (!err[0]) snprintf(err, errlen, "%s", st == CP_ENOMEM ? "parquet writer: out of memory" : w->err);
        cp_pq_writer_free(w);
        return st;
    }
    *out = w;
    return CP_OK;
}

/* ---- adding rows ------------------------------------------------------------------------ */

static int bytes_ok(cp_pq_bytes b) { return (b.p || b.len == 0) && b.len <= UINT32_MAX; }

/* Checks a row before any of it is buffered, so a bad row changes nothing. */
static int check_row(cp_pq_writer *w, const cp_pq_value *row)
{
    for (size_t c = 0; c < w->ncols; c++) {
        const cp_pq_column *col = &w->cols[c];
        const cp_pq_value *v = &row[c];
        int is_map = col->type == CP_PQ_MAP_STR_LIST || col->type == CP_PQ_MAP_STR_STR;
        if (v->null) {
            if (!col->optional && !is_map) return fail(w, CP_EINVAL, "parquet writer: column '%s' is required", col->name);
            continue;
        }
        switch (col->type) {
        case CP_PQ_I32:
            if (v->i < INT32_MIN || v->i > INT32_MAX)
                return fail(w, CP_EINVAL, "parquet writer: column '%s': %lld does not fit INT32", col->name,
                            (long long)v->i);
            break;
        case CP_PQ_STRING:
        case CP_PQ_BINARY:
            if (!bytes_ok(v->b)) return fail(w, CP_EINVAL, "parquet writer: column '%s': bad bytes", col->name);
            break;
        case CP_PQ_MAP_STR_LIST:
        case CP_PQ_MAP_STR_STR:
            if (v->nmap && !v->map) return fail(w, CP_EINVAL, "parquet writer: column '%s': no map entries", col->name);
            for (size_t e = 0; e < v->nmap; e++) {
                const cp_pq_map_entry *me = &v->map[e];
                if (!bytes_ok(me->key) || (me->nvalues && !me->values) ||
                    (col->type == CP_PQ_MAP_STR_STR && me->nvalues > 1))
                    return fail(w, CP_EINVAL, "parquet writer: column '%s': bad map entry %zu", col->name, e);
                for (size_t k = 0; k < me->nvalues; k++)
                    if (me->values[k].len > UINT32_MAX || (!me->values[k].p && me->values[k].len))
                        return fail(w, CP_EINVAL, "parquet writer: column '%s': bad value in entry %zu", col->name, e);
            }
            break;
        default:
            break;
        }
    }
    return CP_OK;
}

static inline int put_levels(wleaf *l, int rep, int def)
{
    if (l->max_rep && cp_buf_putc(&l->rep, (uint8_t)rep) != CP_OK) return CP_ENOMEM;
    if (l->max_def && cp_buf_putc(&l->def, (uint8_t)def) != CP_OK) return CP_ENOMEM;
    l->nentries++;
    return CP_OK;
}

static inline int put_int(wleaf *l, int64_t v)
{
    if (l->niv == l->civ && cp_grow((void **)&l->iv, &l->civ, l->niv + 1, sizeof *l->iv, 1024) != CP_OK) return CP_ENOMEM;
    l->iv[l->niv++] = v;
    return CP_OK;
}

static inline int put_bytes(wleaf *l, const uint8_t *p, size_t n)
{
    if (l->nb == l->cb && cp_grow((void **)&l->blen, &l->cb, l->nb + 1, sizeof *l->blen, 1024) != CP_OK) return CP_ENOMEM;
    if (cp_buf_append(&l->bdata, p, n) != CP_OK) return CP_ENOMEM;
    l->blen[l->nb++] = (uint32_t)n;
    return CP_OK;
}

/* One map value into its key leaf and its element (or value) leaf, as in the shredding
 * pseudo-code of parquet.md §6.3. */
static int put_map(cp_pq_writer *w, const cp_pq_column *col, wleaf *k, wleaf *e, const cp_pq_value *v)
{
    int list = col->type == CP_PQ_MAP_STR_LIST;
    if (v->null || v->nmap == 0) {
        int def = v->null ? 0 : 1;
        if (put_levels(k, 0, def) != CP_OK || put_levels(e, 0, def) != CP_OK) return CP_ENOMEM;
        return CP_OK;
    }
    for (size_t i = 0; i < v->nmap; i++) {
        const cp_pq_map_entry *me = &v->map[i];
        int rk = i ? 1 : 0;
        if (put_levels(k, rk, 2) != CP_OK || put_bytes(k, me->key.p, me->key.len) != CP_OK) return CP_ENOMEM;
        w->rg_bytes += me->key.len + 4;
        if (!list) { /* value: 2 null, 3 present */
            int present = me->nvalues == 1 && me->values[0].p;
            if (put_levels(e, rk, present ? 3 : 2) != CP_OK) return CP_ENOMEM;
            if (present) {
                if (put_bytes(e, me->values[0].p, me->values[0].len) != CP_OK) return CP_ENOMEM;
                w->rg_bytes += me->values[0].len + 4;
            }
            continue;
        }
        if (me->nvalues == 0) { /* 2: null list, 3: empty list */
            if (put_levels(e, rk, me->values ? 3 : 2) != CP_OK) return CP_ENOMEM;
            continue;
        }
        for (size_t j = 0; j < me->nvalues; j++) {
            const cp_pq_bytes *b = &me->values[j];
            if (put_levels(e, j ? 2 : rk, b->p ? 5 : 4) != CP_OK) return CP_ENOMEM;
            if (b->p) {
                if (put_bytes(e, b->p, b->len) != CP_OK) return CP_ENOMEM;
                w->rg_bytes += b->len + 4;
            }
        }
    }
    return CP_OK;
}

static int put_flat(cp_pq_writer *w, const cp_pq_column *col, wleaf *l, const cp_pq_value *v)
{
    if (col->optional && put_levels(l, 0, v->null ? 0 : 1) != CP_OK) return CP_ENOMEM;
    if (!col->optional) l->nentries++;
    if (v->null) return CP_OK;
    if (l->ptype == PQ_BYTE_ARRAY) {
        w->rg_bytes += v->b.len + 4;
        return put_bytes(l, v->b.p, v->b.len);
    }
    w->rg_bytes += 8;
    return put_int(l, col->type == CP_PQ_BOOL ? v->i != 0 : v->i);
}

/* Remembers where a page starts in every leaf (pages start at row boundaries). */
static int mark_pages(cp_pq_writer *w)
{
    for (size_t i = 0; i < w->nleaves; i++) {
        wleaf *l = &w->leaves[i];
        if (cp_grow((void **)&l->pages, &l->cpages, 2 * (l->npages + 1), sizeof *l->pages, 1024) != CP_OK) return CP_ENOMEM;
        l->pages[2 * l->npages] = l->nentries;
        l->pages[2 * l->npages + 1] = l->ptype == PQ_BYTE_ARRAY ? l->nb : l->niv;
        l->npages++;
    }
    return CP_OK;
}

static int flush_row_group(cp_pq_writer *w);

int cp_pq_writer_add(cp_pq_writer *w, const cp_pq_value *row)
{
    if (w->failed) return w->failed;
    if (w->finished) return fail(w, CP_EINVAL, "parquet writer: add after finish");
    int st = check_row(w, row);
    if (st != CP_OK) return st;
    if (w->rg_rows % w->page_rows == 0 && mark_pages(w) != CP_OK) return broken(w, CP_ENOMEM, "add");
    for (size_t c = 0; c < w->ncols; c++) {
        const cp_pq_column *col = &w->cols[c];
        wleaf *l = &w->leaves[w->col_leaf[c]];
        if (col->type == CP_PQ_MAP_STR_LIST || col->type == CP_PQ_MAP_STR_STR) st = put_map(w, col, l, l + 1, &row[c]);
        else st = put_flat(w, col, l, &row[c]);
        if (st != CP_OK) return broken(w, st, "add");
    }
    w->rg_rows++;
    w->rows++;
    if (w->rg_rows >= w->row_group_rows || w->rg_bytes >= w->row_group_bytes) return flush_row_group(w);
    return CP_OK;
}

/* ---- pages ------------------------------------------------------------------------------ */

/* Compresses w->page and appends header + body to w->out. */
static int emit_page(cp_pq_writer *w, pq_page_header *h)
{
    const uint8_t *body = w->page.data;
    size_t n = w->page.len, clen = n;
    if (n > INT32_MAX) return fail(w, CP_ELIMIT, "parquet writer: a page of %zu bytes (over 2 GiB)", n);
    if (w->zstd_level >= 0) {
        size_t bound = ZSTD_compressBound(n);
        cp_buf_reset(&w->comp);
        if (cp_buf_reserve(&w->comp, bound) != CP_OK) return CP_ENOMEM;
        clen = ZSTD_compressCCtx(w->cctx, w->comp.data, bound, body, n, w->zstd_level);
        if (ZSTD_isError(clen)) return fail(w, CP_EINVAL, "parquet writer: zstd: %s", ZSTD_getErrorName(clen));
        if (clen > INT32_MAX) return fail(w, CP_ELIMIT, "parquet writer: a compressed page over 2 GiB");
        body = w->comp.data;
    }
    h->uncompressed = (int32_t)n;
    h->compressed = (int32_t)clen;
    size_t at = w->out.len;
    int st = pq_page_header_write(&w->out, h);
    if (st == CP_OK) st = cp_buf_append(&w->out, body, clen);
    w->chunk_unc += (int64_t)(w->out.len - at - clen + n);
    return st;
}

/* [u32le length][hybrid levels] as a v1 page wants them. */
static int put_level_section(cp_buf *b, const uint8_t *lv, size_t n, int max)
{
    size_t at = b->len;
    uint8_t zero[4] = {0};
    if (cp_buf_append(b, zero, 4) != CP_OK) return CP_ENOMEM;
    if (pq_hybrid_encode_u8(b, lv, n, pq_bit_width((uint64_t)max)) != CP_OK) return CP_ENOMEM;
    pq_put_le32(b->data + at, (uint32_t)(b->len - at - 4));
    return CP_OK;
}

/* PLAIN values v0..v1 of a leaf; boff is the byte offset of value v0 in bdata. */
static int put_plain(cp_buf *b, const wleaf *l, size_t v0, size_t v1, size_t boff)
{
    size_t n = v1 - v0;
    switch (l->ptype) {
    case PQ_INT32: {
        if (cp_buf_reserve(b, n * 4) != CP_OK) return CP_ENOMEM;
        uint8_t *o = b->data + b->len;
        for (size_t i = 0; i < n; i++) pq_put_le32(o + 4 * i, (uint32_t)l->iv[v0 + i]);
        b->len += n * 4;
        return CP_OK;
    }
    case PQ_INT64: {
        if (cp_buf_reserve(b, n * 8) != CP_OK) return CP_ENOMEM;
        uint8_t *o = b->data + b->len;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        memcpy(o, l->iv + v0, n * 8);
#else
        for (size_t i = 0; i < n; i++) pq_put_le64(o + 8 * i, (uint64_t)l->iv[v0 + i]);
#endif
        b->len += n * 8;
        return CP_OK;
    }
    case PQ_BOOLEAN: {
        size_t nb = (n + 7) / 8;
        if (cp_buf_reserve(b, nb) != CP_OK) return CP_ENOMEM;
        uint8_t *o = b->data + b->len;
        memset(o, 0, nb);
        for (size_t i = 0; i < n; i++) o[i / 8] |= (uint8_t)((l->iv[v0 + i] & 1) << (i % 8));
        b->len += nb;
        return CP_OK;
    }
    default: { /* BYTE_ARRAY: u32le length + bytes */
        size_t total = 0;
        for (size_t i = v0; i < v1; i++) total += 4 + (size_t)l->blen[i];
        if (cp_buf_reserve(b, total) != CP_OK) return CP_ENOMEM;
        uint8_t *o = b->data + b->len;
        const uint8_t *src = l->bdata.data + boff;
        for (size_t i = v0; i < v1; i++) {
            uint32_t len = l->blen[i];
            pq_put_le32(o, len);
            if (len) memcpy(o + 4, src, len);
            o += 4 + (size_t)len;
            src += len;
        }
        b->len += total;
        return CP_OK;
    }
    }
}

/* ---- dictionary ------------------------------------------------------------------------- */

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ ((uint64_t)n * 0xC2B2AE3D27D4EB4Full);
    while (n >= 8) {
        uint64_t x;
        memcpy(&x, p, 8);
        h = (h ^ x) * 0xFF51AFD7ED558CCDull;
        h ^= h >> 32;
        p += 8;
        n -= 8;
    }
    uint64_t x = 0;
    memcpy(&x, p, n);
    return cp_mix64(h ^ x);
}

static int dict_rehash(wdict *d, size_t nslots)
{
    uint32_t *s = calloc(nslots, sizeof *s);
    if (!s) return CP_ENOMEM;
    size_t mask = nslots - 1;
    for (size_t e = 0; e < d->n; e++) {
        size_t i = d->hash[e] & mask;
        while (s[i]) i = (i + 1) & mask;
        s[i] = (uint32_t)(e + 1);
    }
    free(d->slots);
    d->slots = s;
    d->nslots = nslots;
    return CP_OK;
}

/* Doubles the entry arrays (parallel arrays of one capacity). */
static int dict_grow(wdict *d)
{
    size_t cap = d->cap ? d->cap * 2 : 1024;
    size_t *off = realloc(d->off, cap * sizeof *off);
    if (off) d->off = off;
    uint32_t *len = realloc(d->len, cap * sizeof *len);
    if (len) d->len = len;
    uint32_t *hash = realloc(d->hash, cap * sizeof *hash);
    if (hash) d->hash = hash;
    int64_t *ival = realloc(d->ival, cap * sizeof *ival);
    if (ival) d->ival = ival;
    if (!off || !len || !hash || !ival) return CP_ENOMEM;
    d->cap = cap;
    return CP_OK;
}

/* Empties the dictionary for a chunk of nvals values. */
static int dict_start(wdict *d, size_t nvals)
{
    d->n = 0;
    d->bytes = 0;
    if (cp_grow((void **)&d->idx, &d->cidx, nvals, sizeof *d->idx, 1024) != CP_OK) return CP_ENOMEM;
    if (!d->slots && dict_rehash(d, 4096) != CP_OK) return CP_ENOMEM;
    memset(d->slots, 0, d->nslots * sizeof *d->slots);
    return CP_OK;
}

/* Adds a new entry in the empty slot i; the caller fills its value. */
static int dict_add(wdict *d, size_t i, uint32_t h, uint32_t *e)
{
    if (d->n == d->cap && dict_grow(d) != CP_OK) return CP_ENOMEM;
    *e = (uint32_t)d->n++;
    d->hash[*e] = h;
    d->slots[i] = *e + 1;
    return CP_OK;
}

static int dict_width(const wdict *d) { return d->n > 1 ? pq_bit_width(d->n - 1) : 1; }

/* Builds the dictionary of a byte-array leaf. Returns 1 when the chunk uses it, 0 when it
 * grew past dict_max_bytes (the chunk is then written PLAIN), <0 on error. */
static int dict_build_bytes(cp_pq_writer *w, const wleaf *l)
{
    wdict *d = &w->d;
    if (dict_start(d, l->nb) != CP_OK) return CP_ENOMEM;
    size_t off = 0, mask = d->nslots - 1;
    for (size_t v = 0; v < l->nb; v++) {
        const uint8_t *p = l->bdata.data + off;
        uint32_t len = l->blen[v];
        uint32_t h = (uint32_t)hash_bytes(p, len), e;
        size_t i = h & mask;
        for (;;) {
            e = d->slots[i];
            if (!e) break;
            e--;
            if (d->hash[e] == h && d->len[e] == len && memcmp(l->bdata.data + d->off[e], p, len) == 0) break;
            i = (i + 1) & mask;
        }
        if (!d->slots[i]) {
            d->bytes += 4 + (size_t)len;
            if (d->bytes > w->dict_max_bytes || d->n >= INT32_MAX) return 0; /* n is an i32 */
            if (dict_add(d, i, h, &e) != CP_OK) return CP_ENOMEM;
            d->off[e] = off;
            d->len[e] = len;
            if (d->n * 2 > d->nslots) {
                if (dict_rehash(d, d->nslots * 2) != CP_OK) return CP_ENOMEM;
                mask = d->nslots - 1;
            }
        }
        d->idx[v] = e;
        off += len;
    }
    return 1;
}

/* The same for an integer leaf that asks for one. Also gives up as soon as the values
 * look mostly distinct (times, ids, byte counts): the indices would cost as much as the
 * values, and hashing them all would be wasted. */
static int dict_build_ints(cp_pq_writer *w, const wleaf *l)
{
    wdict *d = &w->d;
    if (dict_start(d, l->niv) != CP_OK) return CP_ENOMEM;
    size_t vsize = l->ptype == PQ_INT32 ? 4 : 8, mask = d->nslots - 1;
    for (size_t v = 0; v < l->niv; v++) {
        int64_t x = l->iv[v];
        uint32_t h = (uint32_t)cp_mix64((uint64_t)x), e;
        size_t i = h & mask;
        for (;;) {
            e = d->slots[i];
            if (!e) break;
            e--;
            if (d->ival[e] == x) break;
            i = (i + 1) & mask;
        }
        if (!d->slots[i]) {
            d->bytes += vsize;
            if (d->bytes > w->dict_max_bytes || d->n * 2 > l->niv || (v >= 1024 && d->n * 4 > v * 3)) return 0;
            if (dict_add(d, i, h, &e) != CP_OK) return CP_ENOMEM;
            d->ival[e] = x;
            if (d->n * 2 > d->nslots) {
                if (dict_rehash(d, d->nslots * 2) != CP_OK) return CP_ENOMEM;
                mask = d->nslots - 1;
            }
        }
        d->idx[v] = e;
    }
    return d->bytes + l->niv * (size_t)dict_width(d) / 8 < l->niv * vsize;
}

static int put_dict_page(cp_pq_writer *w, const wleaf *l)
{
    wdict *d = &w->d;
    cp_buf_reset(&w->page);
    if (cp_buf_reserve(&w->page, d->bytes) != CP_OK) return CP_ENOMEM;
    uint8_t *o = w->page.data;
    for (size_t e = 0; e < d->n; e++) {
        if (l->ptype == PQ_INT32) {
            pq_put_le32(o, (uint32_t)d->ival[e]);
            o += 4;
        } else if (l->ptype == PQ_INT64) {
            pq_put_le64(o, (uint64_t)d->ival[e]);
            o += 8;
        } else {
            pq_put_le32(o, d->len[e]);
            memcpy(o + 4, l->bdata.data + d->off[e], d->len[e]);
            o += 4 + (size_t)d->len[e];
        }
    }
    w->page.len = d->bytes;
    pq_page_header h = {.type = PQ_PAGE_DICTIONARY, .num_values = (int32_t)d->n, .encoding = PQ_ENC_PLAIN};
    return emit_page(w, &h);
}

/* ---- statistics ------------------------------------------------------------------------- */

static int cmp_bytes(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c ? c : (an > bn) - (an < bn);
}

static void set_stat(uint8_t *dst, uint8_t *len, const void *p, size_t n)
{
    memcpy(dst, p, n);
    *len = (uint8_t)n;
}

/* min/max in the column's order (§8.1): signed ints, unsigned U64, memcmp for bytes.
 * With a dictionary only its entries need comparing. */
static void compute_minmax(cp_pq_writer *w, const wleaf *l, int dict, wchunk *c)
{
    c->has_minmax = 0;
    if (l->ptype != PQ_BYTE_ARRAY) {
        const int64_t *iv = dict ? w->d.ival : l->iv;
        size_t n = dict ? w->d.n : l->niv;
        if (n == 0) return;
        int64_t mn = iv[0], mx = iv[0];
        if (l->is_unsigned) {
            for (size_t i = 1; i < n; i++) {
                if ((uint64_t)iv[i] < (uint64_t)mn) mn = iv[i];
                if ((uint64_t)iv[i] > (uint64_t)mx) mx = iv[i];
            }
        } else {
            for (size_t i = 1; i < n; i++) {
                if (iv[i] < mn) mn = iv[i];
                if (iv[i] > mx) mx = iv[i];
            }
        }
        uint8_t a[8], b[8];
        size_t size = l->ptype == PQ_INT32 ? 4 : l->ptype == PQ_BOOLEAN ? 1 : 8;
        pq_put_le64(a, (uint64_t)mn);
        pq_put_le64(b, (uint64_t)mx);
        set_stat(c->min, &c->min_len, a, size);
        set_stat(c->max, &c->max_len, b, size);
        c->has_minmax = 1;
        return;
    }
    size_t count = dict ? w->d.n : l->nb;
    if (count == 0) return;
    const uint8_t *mn = NULL, *mx = NULL;
    size_t mnl = 0, mxl = 0, off = 0;
    for (size_t i = 0; i < count; i++) {
        const uint8_t *p;
        size_t n;
        if (dict) {
            p = l->bdata.data + w->d.off[i];
            n = w->d.len[i];
        } else {
            p = l->bdata.data + off;
            n = l->blen[i];
            off += n;
        }
        if (!mn || cmp_bytes(p, n, mn, mnl) < 0) mn = p, mnl = n;
        if (!mx || cmp_bytes(p, n, mx, mxl) > 0) mx = p, mxl = n;
    }
    if (mnl > PQ_STAT_MAX || mxl > PQ_STAT_MAX) return;
    set_stat(c->min, &c->min_len, mn, mnl);
    set_stat(c->max, &c->max_len, mx, mxl);
    c->has_minmax = 1;
}

/* ---- column chunks and row groups ------------------------------------------------------- */

static int write_chunk(cp_pq_writer *w, wleaf *l, wchunk *c)
{
    memset(c, 0, sizeof *c);
    cp_buf_reset(&w->out);
    w->chunk_unc = 0;
    int64_t start = (int64_t)w->offset;
    size_t nvals = l->ptype == PQ_BYTE_ARRAY ? l->nb : l->niv;
    int dict = 0, st;
    if (l->dict && nvals > 0) {
        dict = l->ptype == PQ_BYTE_ARRAY ? dict_build_bytes(w, l) : dict_build_ints(w, l);
        if (dict < 0) return dict;
    }
    compute_minmax(w, l, dict, c);
    c->null_count = (int64_t)(l->nentries - nvals);
    c->num_values = (int64_t)l->nentries;
    c->levels = l->max_def || l->max_rep;
    c->dict = (uint8_t)dict;
    c->dict_off = -1;
    int width = 0;
    if (dict) {
        c->dict_off = start;
        if ((st = put_dict_page(w, l)) != CP_OK) return st;
        width = dict_width(&w->d);
    }
    c->data_off = start + (int64_t)w->out.len;
    size_t boff = 0;
    for (size_t p = 0; p < l->npages; p++) {
        size_t e0 = l->pages[2 * p], v0 = l->pages[2 * p + 1];
        size_t e1 = p + 1 < l->npages ? l->pages[2 * p + 2] : l->nentries;
        size_t v1 = p + 1 < l->npages ? l->pages[2 * p + 3] : nvals;
        if (e1 - e0 > INT32_MAX) return fail(w, CP_ELIMIT, "parquet writer: over 2^31 entries in a page");
        cp_buf_reset(&w->page);
        if (l->max_rep && put_level_section(&w->page, l->rep.data + e0, e1 - e0, l->max_rep) != CP_OK)
            return CP_ENOMEM;
        if (l->max_def && put_level_section(&w->page, l->def.data + e0, e1 - e0, l->max_def) != CP_OK)
            return CP_ENOMEM;
        if (dict) {
            st = cp_buf_putc(&w->page, (uint8_t)width);
            if (st == CP_OK) st = pq_hybrid_encode_u32(&w->page, w->d.idx + v0, v1 - v0, width);
        } else {
            st = put_plain(&w->page, l, v0, v1, boff);
        }
        if (st != CP_OK) return st;
        if (l->ptype == PQ_BYTE_ARRAY)
            for (size_t i = v0; i < v1; i++) boff += l->blen[i];
        pq_page_header h = {.type = PQ_PAGE_DATA,
                            .num_values = (int32_t)(e1 - e0),
                            .encoding = dict ? PQ_ENC_RLE_DICTIONARY : PQ_ENC_PLAIN};
        if ((st = emit_page(w, &h)) != CP_OK) return st;
    }
    c->comp = (int64_t)w->out.len;
    c->unc = w->chunk_unc;
    return CP_OK;
}

static void leaf_reset(wleaf *l)
{
    cp_buf_reset(&l->def);
    cp_buf_reset(&l->rep);
    cp_buf_reset(&l->bdata);
    l->nentries = l->niv = l->nb = l->npages = 0;
}

static int flush_row_group(cp_pq_writer *w)
{
    if (w->rg_rows == 0) return CP_OK;
    if (cp_grow((void **)&w->rgs, &w->crgs, w->nrgs + 1, sizeof *w->rgs, 1024) != CP_OK ||
        cp_grow((void **)&w->chunks, &w->cchunks, w->nchunks + w->nleaves, sizeof *w->chunks, 1024) != CP_OK)
        return broken(w, CP_ENOMEM, "row group");
    wrg *g = &w->rgs[w->nrgs];
    memset(g, 0, sizeof *g);
    g->rows = (int64_t)w->rg_rows;
    g->offset = (int64_t)w->offset;
    for (size_t i = 0; i < w->nleaves; i++) {
        wchunk *c = &w->chunks[w->nchunks + i];
        int st = write_chunk(w, &w->leaves[i], c);
        if (st == CP_OK) st = sink(w, w->out.data, w->out.len);
        if (st != CP_OK) return broken(w, st, "column chunk");
        g->unc += c->unc;
        g->comp += c->comp;
        leaf_reset(&w->leaves[i]);
    }
    w->nchunks += w->nleaves;
    w->nrgs++;
    w->rg_rows = 0;
    w->rg_bytes = 0;
    return CP_OK;
}

/* ---- footer ----------------------------------------------------------------------------- */

static void put_column_meta(pq_tw *t, const cp_pq_writer *w, const wleaf *l, const wchunk *c)
{
    pq_tw_struct_begin(t, 3); /* ColumnChunk.meta_data */
    pq_tw_i32(t, 1, l->ptype);
    pq_tw_list_begin(t, 2, PQ_T_I32, c->dict ? 3 : c->levels ? 2 : 1);
    pq_tw_elem_i32(t, PQ_ENC_PLAIN);
    if (c->dict || c->levels) pq_tw_elem_i32(t, PQ_ENC_RLE);
    if (c->dict) pq_tw_elem_i32(t, PQ_ENC_RLE_DICTIONARY);
    pq_tw_list_begin(t, 3, PQ_T_BINARY, (size_t)l->npath);
    for (int i = 0; i < l->npath; i++) pq_tw_elem_binary(t, l->path[i], strlen(l->path[i]));
    pq_tw_i32(t, 4, w->zstd_level >= 0 ? PQ_CODEC_ZSTD : PQ_CODEC_UNCOMPRESSED);
    pq_tw_i64(t, 5, c->num_values);
    pq_tw_i64(t, 6, c->unc);
    pq_tw_i64(t, 7, c->comp);
    pq_tw_i64(t, 9, c->data_off);
    if (c->dict_off >= 0) pq_tw_i64(t, 11, c->dict_off);
    pq_tw_struct_begin(t, 12); /* Statistics */
    pq_tw_i64(t, 3, c->null_count);
    if (c->has_minmax) {
        pq_tw_binary(t, 5, c->max, c->max_len);
        pq_tw_binary(t, 6, c->min, c->min_len);
    }
    pq_tw_struct_end(t);
    pq_tw_struct_end(t);
}

static int write_footer(cp_pq_writer *w)
{
    cp_buf_reset(&w->out);
    pq_tw t;
    pq_tw_init(&t, &w->out);
    pq_tw_i32(&t, 1, 1); /* version */
    size_t nschema = 1;
    for (size_t c = 0; c < w->ncols; c++)
        nschema += w->cols[c].type == CP_PQ_MAP_STR_LIST ? 6 : w->cols[c].type == CP_PQ_MAP_STR_STR ? 4 : 1;
    pq_tw_list_begin(&t, 2, PQ_T_STRUCT, nschema);
    pq_tw_elem_struct_begin(&t); /* the root: name and num_children only */
    pq_tw_string(&t, 4, "schema");
    pq_tw_i32(&t, 5, (int32_t)w->ncols);
    pq_tw_struct_end(&t);
    for (size_t c = 0; c < w->ncols; c++) pq_schema_write_column(&t, &w->cols[c]);
    pq_tw_i64(&t, 3, (int64_t)w->rows);
    pq_tw_list_begin(&t, 4, PQ_T_STRUCT, w->nrgs);
    for (size_t g = 0; g < w->nrgs; g++) {
        const wrg *rg = &w->rgs[g];
        pq_tw_elem_struct_begin(&t);
        pq_tw_list_begin(&t, 1, PQ_T_STRUCT, w->nleaves);
        for (size_t i = 0; i < w->nleaves; i++) {
            pq_tw_elem_struct_begin(&t);
            pq_tw_i64(&t, 2, 0); /* file_offset: deprecated but required */
            put_column_meta(&t, w, &w->leaves[i], &w->chunks[g * w->nleaves + i]);
            pq_tw_struct_end(&t);
        }
        pq_tw_i64(&t, 2, rg->unc);
        pq_tw_i64(&t, 3, rg->rows);
        pq_tw_i64(&t, 5, rg->offset);
        pq_tw_i64(&t, 6, rg->comp);
        pq_tw_struct_end(&t);
    }
    if (w->nkv) {
        pq_tw_list_begin(&t, 5, PQ_T_STRUCT, w->nkv);
        for (size_t i = 0; i < w->nkv; i++) {
            pq_tw_elem_struct_begin(&t);
            pq_tw_string(&t, 1, w->kv[2 * i]);
            if (w->kv[2 * i + 1]) pq_tw_string(&t, 2, w->kv[2 * i + 1]);
            pq_tw_struct_end(&t);
        }
    }
    pq_tw_string(&t, 6, w->created_by);
    pq_tw_list_begin(&t, 7, PQ_T_STRUCT, w->nleaves);
    for (size_t i = 0; i < w->nleaves; i++) {
        pq_tw_elem_struct_begin(&t); /* ColumnOrder union */
        pq_tw_empty_struct(&t, 1);   /* TYPE_ORDER */
        pq_tw_struct_end(&t);
    }
    pq_tw_struct_end(&t); /* FileMetaData */
    if (t.err != CP_OK) return t.err;
    if (w->out.len > UINT32_MAX) return fail(w, CP_ELIMIT, "parquet writer: footer over 4 GiB");
    uint8_t tail[8];
    pq_put_le32(tail, (uint32_t)w->out.len);
    memcpy(tail + 4, "PAR1", 4);
    int st = sink(w, w->out.data, w->out.len);
    if (st == CP_OK) st = sink(w, tail, 8);
    return st;
}

int cp_pq_writer_finish(cp_pq_writer *w)
{
    if (w->failed) return w->failed;
    if (w->finished) return CP_OK;
    int st = flush_row_group(w);
    if (st != CP_OK) return st;
    st = write_footer(w);
    if (st != CP_OK) return broken(w, st, "footer");
    w->finished = 1;
    return CP_OK;
}

uint64_t cp_pq_writer_rows(const cp_pq_writer *w) { return w->rows; }
uint64_t cp_pq_writer_bytes(const cp_pq_writer *w) { return w->offset; }
const char *cp_pq_writer_errmsg(const cp_pq_writer *w) { return w->err; }

void cp_pq_writer_free(cp_pq_writer *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->nleaves; i++) {
        wleaf *l = &w->leaves[i];
        cp_buf_free(&l->def);
        cp_buf_free(&l->rep);
        cp_buf_free(&l->bdata);
        free(l->iv);
        free(l->blen);
        free(l->pages);
    }
    free(w->leaves);
    free(w->created_by);
    if (w->kv)
        for (size_t i = 0; i < w->nkv * 2; i++) free(w->kv[i]);
    free(w->kv);
    free(w->chunks);
    free(w->rgs);
    ZSTD_freeCCtx(w->cctx);
    cp_buf_free(&w->out);
    cp_buf_free(&w->page);
    cp_buf_free(&w->comp);
    free(w->d.off);
    free(w->d.len);
    free(w->d.hash);
    free(w->d.ival);
    free(w->d.slots);
    free(w->d.idx);
    free(w);
}
