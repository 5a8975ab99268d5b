/* reader.c -- the Parquet reader (cp_parquet.h): checks the frame, hands the footer to
 * footer.c, then decodes column chunks page by page and assembles rows (parquet.md §9).
 *
 * Everything read is untrusted. A chunk must lie between the leading magic and the
 * footer; a page must fit in its chunk; a decompressed page must come out exactly as
 * long as its header says (and no longer than CP_PQ_MAX_PAGE); level and value counts
 * must agree with the page, chunk and row group counts; dictionary indices must be in
 * range. Memory is bounded by the counts of the metadata, which are bounded by
 * CP_PQ_MAX_VALUES before anything is allocated for them.
 *
 * Byte-array values are never copied: they point into the chunk's raw bytes or into
 * decompressed pages, which live in the reader's arena with the output arrays, so a
 * column stays valid until cp_pq_reader_reset_arena. Levels, integer values and
 * dictionary indices go through scratch arrays reused from call to call. */
#include "pq_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_decompressBound */
#include <zlib.h>
#include <zstd.h>

/* ---- arena ------------------------------------------------------------------------------ */

typedef struct ablock {
    struct ablock *next;
    size_t size, used;
    _Alignas(16) uint8_t data[];
} ablock;

#define ARENA_BLOCK ((size_t)1 << 20)

/* The decoded form of one leaf of one chunk: every level entry, the non-null values,
 * and the dictionary when there is one. Scratch memory, reused. */
typedef struct leafdata {
    uint8_t *def, *rep;
    size_t n, cap;
    int64_t *iv;                /* integer / boolean values */
    cp_pq_bytes *bv;            /* byte-array values */
    size_t nv, capi, capb;
    int64_t *div;               /* dictionary entries */
    cp_pq_bytes *dbv;
    size_t nd, capdi, capdb;
    int has_dict;
} leafdata;

struct cp_pq_reader {
    cp_pq_pread_fn pread;
    void *ud;
    uint64_t size;
    uint64_t data_end;          /* where the footer starts: chunks end before it */
    uint8_t *footer;
    pq_meta m;
    ablock *arena;
    leafdata ld[2];
    uint32_t *idx;              /* dictionary indices of one page */
    size_t cidx;
    int64_t *lens[2];           /* DELTA_(LENGTH_)BYTE_ARRAY lengths of one page */
    size_t clens[2];
    cp_buf scratch;             /* raw chunk or decompressed page when nothing points into it */
    cp_buf scratch2;
    ZSTD_DCtx *dctx;
    char ctx[96];               /* "row group 3 column 'x'" for messages */
    char err[256];
};

static void *arena_alloc(cp_pq_reader *r, size_t n)
{
    if (n > SIZE_MAX / 2) return NULL;
    n = (n + 15) & ~(size_t)15;
    if (n == 0) n = 16;
    ablock *b = r->arena;
    if (!b || b->size - b->used < n) {
        size_t size = n > ARENA_BLOCK / 4 ? n : ARENA_BLOCK;
        if (size > SIZE_MAX - sizeof *b) return NULL;
        ablock *nb = malloc(sizeof *nb + size);
        if (!nb) return NULL;
        nb->size = size;
        nb->used = 0;
        if (b && size != ARENA_BLOCK) { /* a big one-off goes behind the current block */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            r->arena = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

/* n elements of size elem, or NULL (also when n * elem overflows). */
static void *arena_array(cp_pq_reader *r, size_t n, size_t elem)
{
    if (n > SIZE_MAX / elem) return NULL;
    return arena_alloc(r, n * elem);
}

void cp_pq_reader_reset_arena(cp_pq_reader *r)
{
    while (r->arena) {
        ablock *b = r->arena;
        r->arena = b->next;
        free(b);
    }
}

/* ---- errors ----------------------------------------------------------------------------- */

static int rfail(cp_pq_reader *r, int st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int rfail(cp_pq_reader *r, int st, const char *fmt, ...)
{
    int k = snprintf(r->err, sizeof r->err, "parquet: %s%s", r->ctx, r->ctx[0] ? ": " : "");
    size_t at = k < 0 ? 0 : (size_t)k < sizeof r->err ? (size_t)k : sizeof r->err - 1;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err + at, sizeof r->err - at, fmt, ap);
    va_end(ap);
    return st;
}

static int nomem(cp_pq_reader *r) { return rfail(r, CP_ENOMEM, "out of memory"); }

static int do_pread(cp_pq_reader *r, void *dst, size_t n, uint64_t off)
{
    if (n == 0) return CP_OK;
    int st = r->pread(r->ud, dst, n, off);
    if (st == CP_OK) return CP_OK;
    return rfail(r, st < 0 ? st : CP_EIO, "reading %zu bytes at offset %llu failed (%d)", n, (unsigned long long)off,
                 st);
}

/* ---- scratch arrays --------------------------------------------------------------------- */

static int leaf_levels_room(leafdata *ld, size_t need)
{
    size_t cap = ld->cap;
    if (cp_grow((void **)&ld->def, &cap, need, 1, 256) != CP_OK) return CP_ENOMEM;
    cap = ld->cap;
    if (cp_grow((void **)&ld->rep, &cap, need, 1, 256) != CP_OK) return CP_ENOMEM;
    ld->cap = cap;
    return CP_OK;
}

static int leaf_values_room(leafdata *ld, size_t need, int bytes)
{
    return bytes ? cp_grow((void **)&ld->bv, &ld->capb, need, sizeof *ld->bv, 256)
                 : cp_grow((void **)&ld->iv, &ld->capi, need, sizeof *ld->iv, 256);
}

/* ---- decompression ---------------------------------------------------------------------- */

/* Gives the uncompressed form (exactly ulen bytes) of src[0..n). The output goes to the
 * arena when values will point into it (keep), else to a scratch buffer. */
static int decompress(cp_pq_reader *r, int codec, const uint8_t *src, size_t n, size_t ulen, int keep,
                      const uint8_t **out)
{
    if (ulen > CP_PQ_MAX_PAGE) return rfail(r, CP_ELIMIT, "a page of %zu bytes (at most %u)", ulen, CP_PQ_MAX_PAGE);
    if (codec == PQ_CODEC_UNCOMPRESSED) {
        if (n != ulen) return rfail(r, CP_ECORRUPT, "uncompressed page of %zu bytes says %zu", n, ulen);
        *out = src;
        return CP_OK;
    }
    if (ulen == 0 && n == 0) {
        *out = src;
        return CP_OK;
    }
    if (codec == PQ_CODEC_ZSTD) {
        /* the frame headers bound the output: a page cannot claim more than it holds */
        unsigned long long bound = ZSTD_decompressBound(src, n);
        if (bound == ZSTD_CONTENTSIZE_ERROR) return rfail(r, CP_ECORRUPT, "bad zstd frame");
        if (ulen > bound) return rfail(r, CP_ECORRUPT, "zstd page claims %zu bytes, holds at most %llu", ulen, bound);
    } else if (codec == PQ_CODEC_GZIP) {
        if (ulen > n * (size_t)1032 + 1024) /* deflate cannot expand more than ~1032:1 */
            return rfail(r, CP_ECORRUPT, "gzip page claims %zu bytes from %zu", ulen, n);
    } else {
        return rfail(r, CP_EINVAL, "compression codec %d not supported", codec);
    }
    uint8_t *dst;
    if (keep) {
        dst = arena_alloc(r, ulen);
    } else {
        cp_buf_reset(&r->scratch2);
        dst = cp_buf_reserve(&r->scratch2, ulen ? ulen : 1) == CP_OK ? r->scratch2.data : NULL;
    }
    if (!dst) return nomem(r);
    if (codec == PQ_CODEC_ZSTD) {
        if (!r->dctx && !(r->dctx = ZSTD_createDCtx())) return nomem(r);
        size_t got = ZSTD_decompressDCtx(r->dctx, dst, ulen, src, n);
        if (ZSTD_isError(got)) return rfail(r, CP_ECORRUPT, "zstd: %s", ZSTD_getErrorName(got));
        if (got != ulen) return rfail(r, CP_ECORRUPT, "zstd page gave %zu bytes, header says %zu", got, ulen);
    } else {
        z_stream zs;
        memset(&zs, 0, sizeof zs);
        if (inflateInit2(&zs, 15 + 32) != Z_OK) return nomem(r);
        zs.next_in = (Bytef *)src;
        zs.avail_in = (uInt)n;
        zs.next_out = dst;
        zs.avail_out = (uInt)ulen;
        int zr;
        for (;;) { /* several gzip members may follow each other */
            zr = inflate(&zs, Z_NO_FLUSH);
            if (zr == Z_STREAM_END && zs.avail_in > 0 && zs.avail_out > 0) {
                inflateReset(&zs);
                continue;
            }
            if (zr != Z_OK) break;
        }
        size_t got = ulen - zs.avail_out;
        inflateEnd(&zs);
        if (zr != Z_STREAM_END || got != ulen)
            return rfail(r, CP_ECORRUPT, "gzip page gave %zu bytes (header says %zu)", got, ulen);
    }
    *out = dst;
    return CP_OK;
}

/* ---- values ----------------------------------------------------------------------------- */

/* PLAIN values of physical type t: n of them from p[0..len) into iv / bv. *used = bytes. */
static int plain_decode(cp_pq_reader *r, int t, const uint8_t *p, size_t len, size_t n, int64_t *iv,
                        cp_pq_bytes *bv, size_t *used)
{
    switch (t) {
    case PQ_INT32:
        if (n > len / 4) return rfail(r, CP_ECORRUPT, "%zu INT32 values in %zu bytes", n, len);
        for (size_t i = 0; i < n; i++) iv[i] = (int32_t)pq_le32(p + 4 * i);
        *used = n * 4;
        return CP_OK;
    case PQ_INT64:
        if (n > len / 8) return rfail(r, CP_ECORRUPT, "%zu INT64 values in %zu bytes", n, len);
        for (size_t i = 0; i < n; i++) iv[i] = (int64_t)pq_le64(p + 8 * i);
        *used = n * 8;
        return CP_OK;
    case PQ_BOOLEAN:
        if ((n + 7) / 8 > len) return rfail(r, CP_ECORRUPT, "%zu booleans in %zu bytes", n, len);
        for (size_t i = 0; i < n; i++) iv[i] = (p[i / 8] >> (i % 8)) & 1;
        *used = (n + 7) / 8;
        return CP_OK;
    case PQ_BYTE_ARRAY: {
        size_t pos = 0;
        for (size_t i = 0; i < n; i++) {
            if (len - pos < 4) return rfail(r, CP_ECORRUPT, "byte array %zu of %zu past the end of the page", i, n);
            uint32_t l = pq_le32(p + pos);
            pos += 4;
            if (l > len - pos) return rfail(r, CP_ECORRUPT, "byte array of %u bytes past the end of the page", l);
            bv[i].p = p + pos;
            bv[i].len = l;
            pos += l;
        }
        *used = pos;
        return CP_OK;
    }
    default:
        return rfail(r, CP_EINVAL, "physical type %d not supported", t);
    }
}

static int read_dictionary(cp_pq_reader *r, const pq_chunk *c, leafdata *ld, const pq_page_header *h,
                           const uint8_t *body, size_t blen)
{
    if (ld->has_dict) return rfail(r, CP_ECORRUPT, "two dictionary pages");
    if (ld->n > 0) return rfail(r, CP_ECORRUPT, "dictionary page after a data page");
    if (h->encoding != PQ_ENC_PLAIN && h->encoding != PQ_ENC_PLAIN_DICTIONARY)
        return rfail(r, CP_ECORRUPT, "dictionary page in encoding %d", h->encoding);
    const uint8_t *p;
    int st = decompress(r, c->codec, body, blen, (size_t)h->uncompressed, c->type == PQ_BYTE_ARRAY, &p);
    if (st != CP_OK) return st;
    size_t n = (size_t)h->num_values, used;
    /* bound the allocation by the page: an entry takes at least 32 bits (1 for booleans) */
    size_t bits = c->type == PQ_BOOLEAN ? 1 : c->type == PQ_INT64 ? 64 : 32;
    if (n > (size_t)h->uncompressed * 8 / bits)
        return rfail(r, CP_ECORRUPT, "%zu dictionary entries in %d bytes", n, h->uncompressed);
    if (c->type == PQ_BYTE_ARRAY ? cp_grow((void **)&ld->dbv, &ld->capdb, n, sizeof *ld->dbv, 256)
                                 : cp_grow((void **)&ld->div, &ld->capdi, n, sizeof *ld->div, 256))
        return nomem(r);
    st = plain_decode(r, c->type, p, (size_t)h->uncompressed, n, ld->div, ld->dbv, &used);
    if (st != CP_OK) return st;
    ld->nd = n;
    ld->has_dict = 1;
    return CP_OK;
}

/* DELTA_LENGTH_BYTE_ARRAY: the lengths (DELTA_BINARY_PACKED), then the bytes back to
 * back. The values point into the page. */
static int delta_length_decode(cp_pq_reader *r, const uint8_t *p, size_t len, size_t nv, cp_pq_bytes *bv)
{
    const char *why = NULL;
    size_t pos;
    if (cp_grow((void **)&r->lens[0], &r->clens[0], nv, sizeof *r->lens[0], 256) != CP_OK) return nomem(r);
    if (pq_delta_decode(p, len, 1, r->lens[0], nv, &pos, &why) != CP_OK)
        return rfail(r, CP_ECORRUPT, "DELTA_LENGTH_BYTE_ARRAY lengths: %s", why);
    for (size_t i = 0; i < nv; i++) {
        int64_t l = r->lens[0][i];
        if (l < 0 || (uint64_t)l > len - pos)
            return rfail(r, CP_ECORRUPT, "DELTA_LENGTH_BYTE_ARRAY value of %lld bytes past the page", (long long)l);
        bv[i].p = p + pos;
        bv[i].len = (size_t)l;
        pos += (size_t)l;
    }
    return CP_OK;
}

/* DELTA_BYTE_ARRAY: prefix lengths, suffix lengths (both DELTA_BINARY_PACKED), then the
 * suffixes; value i is the first prefix[i] bytes of value i-1 followed by its suffix.
 * Values are rebuilt in the arena; shared prefixes could expand a small page into a
 * huge output, so the rebuilt bytes are bounded like a page. */
static int delta_byte_array_decode(cp_pq_reader *r, const uint8_t *p, size_t len, size_t nv, cp_pq_bytes *bv)
{
    const char *why = NULL;
    size_t u1, u2;
    for (int k = 0; k < 2; k++)
        if (cp_grow((void **)&r->lens[k], &r->clens[k], nv, sizeof *r->lens[k], 256) != CP_OK) return nomem(r);
    int64_t *pre = r->lens[0], *suf = r->lens[1];
    if (pq_delta_decode(p, len, 1, pre, nv, &u1, &why) != CP_OK ||
        pq_delta_decode(p + u1, len - u1, 1, suf, nv, &u2, &why) != CP_OK)
        return rfail(r, CP_ECORRUPT, "DELTA_BYTE_ARRAY lengths: %s", why);
    size_t pos = u1 + u2, total = 0, prev = 0, sbytes = 0;
    for (size_t i = 0; i < nv; i++) {
        if (pre[i] < 0 || suf[i] < 0 || (uint64_t)pre[i] > prev || (uint64_t)suf[i] > len - pos - sbytes)
            return rfail(r, CP_ECORRUPT, "DELTA_BYTE_ARRAY value %zu: bad prefix or suffix length", i);
        prev = (size_t)pre[i] + (size_t)suf[i];
        sbytes += (size_t)suf[i];
        total += prev;
        if (total > CP_PQ_MAX_PAGE)
            return rfail(r, CP_ELIMIT, "DELTA_BYTE_ARRAY page expands past %u bytes", CP_PQ_MAX_PAGE);
    }
    uint8_t *o = arena_alloc(r, total);
    if (!o) return nomem(r);
    const uint8_t *last = o;
    for (size_t i = 0; i < nv; i++) {
        size_t pl = (size_t)pre[i], sl = (size_t)suf[i];
        memmove(o, last, pl); /* last is the previous value, just before o */
        memcpy(o + pl, p + pos, sl);
        pos += sl;
        bv[i].p = o;
        bv[i].len = pl + sl;
        last = o;
        o += pl + sl;
    }
    return CP_OK;
}

/* The values section of a data page: nv non-null values appended to ld. */
static int decode_values(cp_pq_reader *r, const pq_chunk *c, leafdata *ld, int enc, const uint8_t *p, size_t len,
                         size_t nv)
{
    int t = c->type, bytes = t == PQ_BYTE_ARRAY;
    if (leaf_values_room(ld, ld->nv + nv, bytes) != CP_OK) return nomem(r);
    if (nv == 0) return CP_OK;
    int64_t *iv = bytes ? NULL : ld->iv + ld->nv; /* only one of the arrays exists */
    cp_pq_bytes *bv = bytes ? ld->bv + ld->nv : NULL;
    size_t used;
    const char *why = NULL;
    int st;
    switch (enc) {
    case PQ_ENC_PLAIN:
        st = plain_decode(r, t, p, len, nv, iv, bv, &used);
        break;
    case PQ_ENC_PLAIN_DICTIONARY:
    case PQ_ENC_RLE_DICTIONARY: {
        if (!ld->has_dict) return rfail(r, CP_ECORRUPT, "dictionary-encoded page without a dictionary");
        if (len < 1) return rfail(r, CP_ECORRUPT, "dictionary-encoded page without its bit width");
        if (cp_grow((void **)&r->idx, &r->cidx, nv, sizeof *r->idx, 256) != CP_OK) return nomem(r);
        if (pq_hybrid_decode(p + 1, len - 1, p[0], r->idx, 4, nv, &used, &why) != CP_OK)
            return rfail(r, CP_ECORRUPT, "dictionary indices: %s", why);
        for (size_t i = 0; i < nv; i++) {
            uint32_t k = r->idx[i];
            if (k >= ld->nd) return rfail(r, CP_ECORRUPT, "dictionary index %u of %zu entries", k, ld->nd);
            if (bytes) bv[i] = ld->dbv[k];
            else iv[i] = ld->div[k];
        }
        st = CP_OK;
        break;
    }
    case PQ_ENC_RLE: { /* booleans: u32le length, then hybrid with width 1 */
        if (t != PQ_BOOLEAN) return rfail(r, CP_EINVAL, "RLE encoding for a non-boolean column");
        if (len < 4 || pq_le32(p) > len - 4) return rfail(r, CP_ECORRUPT, "RLE booleans: bad length");
        if (cp_grow((void **)&r->idx, &r->cidx, nv, sizeof *r->idx, 256) != CP_OK) return nomem(r);
        if (pq_hybrid_decode(p + 4, pq_le32(p), 1, r->idx, 4, nv, &used, &why) != CP_OK)
            return rfail(r, CP_ECORRUPT, "RLE booleans: %s", why);
        for (size_t i = 0; i < nv; i++) iv[i] = r->idx[i];
        st = CP_OK;
        break;
    }
    case PQ_ENC_DELTA_BINARY_PACKED:
        if (t != PQ_INT32 && t != PQ_INT64) return rfail(r, CP_EINVAL, "DELTA_BINARY_PACKED for a non-integer column");
        if (pq_delta_decode(p, len, t == PQ_INT32, iv, nv, &used, &why) != CP_OK)
            return rfail(r, CP_ECORRUPT, "DELTA_BINARY_PACKED: %s", why);
        st = CP_OK;
        break;
    case PQ_ENC_DELTA_LENGTH_BYTE_ARRAY:
    case PQ_ENC_DELTA_BYTE_ARRAY:
        if (!bytes) return rfail(r, CP_EINVAL, "encoding %d for a non-byte-array column", enc);
        st = enc == PQ_ENC_DELTA_BYTE_ARRAY ? delta_byte_array_decode(r, p, len, nv, bv)
                                            : delta_length_decode(r, p, len, nv, bv);
        break;
    default:
        return rfail(r, CP_EINVAL, "encoding %d not supported", enc);
    }
    if (st == CP_OK) ld->nv += nv;
    return st;
}

/* ---- pages ------------------------------------------------------------------------------ */

/* Decodes n levels of a page (or zeros when the max level is 0), checking their range. */
static int decode_levels(cp_pq_reader *r, const uint8_t *p, size_t len, int max, uint8_t *out, size_t n,
                         const char *what)
{
    if (max == 0) {
        memset(out, 0, n);
        return CP_OK;
    }
    const char *why = NULL;
    if (pq_hybrid_decode(p, len, pq_bit_width((uint64_t)max), out, 1, n, NULL, &why) != CP_OK)
        return rfail(r, CP_ECORRUPT, "%s levels: %s", what, why);
    for (size_t i = 0; i < n; i++)
        if (out[i] > max) return rfail(r, CP_ECORRUPT, "%s level %u over the maximum %d", what, out[i], max);
    return CP_OK;
}

/* v1 level section: u32le length, then the hybrid bytes. Advances *pos. */
static int level_section(cp_pq_reader *r, const uint8_t *p, size_t len, size_t *pos, int max, uint8_t *out,
                         size_t n, const char *what)
{
    if (max == 0) return decode_levels(r, p, 0, 0, out, n, what);
    if (len - *pos < 4) return rfail(r, CP_ECORRUPT, "%s levels past the end of the page", what);
    uint32_t l = pq_le32(p + *pos);
    *pos += 4;
    if (l > len - *pos) return rfail(r, CP_ECORRUPT, "%s levels of %u bytes past the end of the page", what, l);
    int st = decode_levels(r, p + *pos, l, max, out, n, what);
    *pos += l;
    return st;
}

static int read_data_page(cp_pq_reader *r, const pq_chunk *c, const pq_leaf *lf, leafdata *ld,
                          const pq_page_header *h, const uint8_t *body, size_t blen)
{
    size_t n = (size_t)h->num_values;
    if ((uint64_t)ld->n + n > (uint64_t)c->num_values)
        return rfail(r, CP_ECORRUPT, "pages hold more values than the chunk's %lld", (long long)c->num_values);
    if (leaf_levels_room(ld, ld->n + n + 1) != CP_OK) return nomem(r); /* + 1: never NULL */
    uint8_t *def = ld->def + ld->n, *rep = ld->rep + ld->n;
    int keep = c->type == PQ_BYTE_ARRAY;
    const uint8_t *vals;
    size_t vlen;
    int st;
    if (h->type == PQ_PAGE_DATA) {
        const uint8_t *p;
        st = decompress(r, c->codec, body, blen, (size_t)h->uncompressed, keep, &p);
        if (st != CP_OK) return st;
        size_t len = (size_t)h->uncompressed, pos = 0;
        if ((st = level_section(r, p, len, &pos, lf->max_rep, rep, n, "repetition")) != CP_OK) return st;
        if ((st = level_section(r, p, len, &pos, lf->max_def, def, n, "definition")) != CP_OK) return st;
        vals = p + pos;
        vlen = len - pos;
    } else { /* v2: levels first, uncompressed, lengths in the header */
        size_t rl = (size_t)h->rep_len, dl = (size_t)h->def_len;
        if (rl > blen || dl > blen - rl || rl + dl > (size_t)h->uncompressed)
            return rfail(r, CP_ECORRUPT, "v2 level lengths past the end of the page");
        if ((st = decode_levels(r, body, rl, lf->max_rep, rep, n, "repetition")) != CP_OK) return st;
        if ((st = decode_levels(r, body + rl, dl, lf->max_def, def, n, "definition")) != CP_OK) return st;
        size_t ulen = (size_t)h->uncompressed - rl - dl;
        int codec = h->is_compressed ? c->codec : PQ_CODEC_UNCOMPRESSED;
        st = decompress(r, codec, body + rl + dl, blen - rl - dl, ulen, keep, &vals);
        if (st != CP_OK) return st;
        vlen = ulen;
    }
    size_t nv = 0;
    for (size_t i = 0; i < n; i++) nv += def[i] == lf->max_def;
    if ((st = decode_values(r, c, ld, h->encoding, vals, vlen, nv)) != CP_OK) return st;
    ld->n += n;
    return CP_OK;
}

/* Decodes every page of one leaf's chunk into ld. */
static int read_leaf(cp_pq_reader *r, const pq_chunk *c, const pq_leaf *lf, leafdata *ld)
{
    ld->n = ld->nv = ld->nd = 0;
    ld->has_dict = 0;
    if (c->num_values > CP_PQ_MAX_VALUES)
        return rfail(r, CP_ELIMIT, "%lld values in a chunk (at most %u)", (long long)c->num_values, CP_PQ_MAX_VALUES);
    if (c->codec != PQ_CODEC_UNCOMPRESSED && c->codec != PQ_CODEC_ZSTD && c->codec != PQ_CODEC_GZIP)
        return rfail(r, CP_EINVAL, "compression codec %d not supported", c->codec);
    int64_t start = c->dict_off > 0 && c->dict_off < c->data_off ? c->dict_off : c->data_off;
    if (start < 4 || (uint64_t)start > r->data_end || (uint64_t)c->total_compressed > r->data_end - (uint64_t)start)
        return rfail(r, CP_ECORRUPT, "chunk [%lld, +%lld) outside the data of the file", (long long)start,
                     (long long)c->total_compressed);
    size_t tlen = (size_t)c->total_compressed;
    uint8_t *buf;
    if (c->type == PQ_BYTE_ARRAY) { /* values may point into the raw bytes */
        buf = arena_alloc(r, tlen);
    } else {
        cp_buf_reset(&r->scratch);
        buf = cp_buf_reserve(&r->scratch, tlen ? tlen : 1) == CP_OK ? r->scratch.data : NULL;
    }
    if (!buf) return nomem(r);
    int st = do_pread(r, buf, tlen, (uint64_t)start);
    if (st != CP_OK) return st;
    size_t pos = 0;
    while (pos < tlen) {
        pq_page_header h;
        size_t used;
        const char *why = NULL;
        if (pq_page_header_read(buf + pos, tlen - pos, &h, &used, &why) != CP_OK)
            return rfail(r, CP_ECORRUPT, "page header at %lld: %s", (long long)start + (long long)pos, why);
        pos += used;
        if ((size_t)h.compressed > tlen - pos)
            return rfail(r, CP_ECORRUPT, "page of %d bytes past the end of the chunk", h.compressed);
        const uint8_t *body = buf + pos;
        pos += (size_t)h.compressed;
        if (h.type == PQ_PAGE_DICTIONARY) st = read_dictionary(r, c, ld, &h, body, (size_t)h.compressed);
        else if (h.type == PQ_PAGE_DATA || h.type == PQ_PAGE_DATA_V2)
            st = read_data_page(r, c, lf, ld, &h, body, (size_t)h.compressed);
        else st = CP_OK; /* index pages and page types we do not know are skipped */
        if (st != CP_OK) return st;
    }
    if ((int64_t)ld->n != c->num_values)
        return rfail(r, CP_ECORRUPT, "pages hold %zu values, the chunk says %lld", ld->n, (long long)c->num_values);
    return CP_OK;
}

/* ---- assembly --------------------------------------------------------------------------- */

/* Floor division, so converted timestamps keep their order below the epoch too. */
static int64_t floor_div(int64_t v, int64_t d)
{
    int64_t q = v / d;
    return (v % d != 0 && v < 0) ? q - 1 : q;
}

static int assemble_flat(cp_pq_reader *r, const pq_col *col, const pq_leaf *lf, const leafdata *ld, size_t nrows,
                         cp_pq_column_data *out)
{
    if (ld->n != nrows) return rfail(r, CP_ECORRUPT, "%zu values for %zu rows", ld->n, nrows);
    int bytes = lf->type == PQ_BYTE_ARRAY;
    if (col->pub.optional && !(out->nulls = arena_alloc(r, nrows))) return nomem(r);
    if (bytes ? !(out->b = arena_array(r, nrows, sizeof *out->b)) : !(out->i = arena_array(r, nrows, sizeof *out->i)))
        return nomem(r);
    size_t k = 0;
    for (size_t j = 0; j < nrows; j++) {
        int present = ld->def[j] == lf->max_def;
        if (out->nulls) out->nulls[j] = !present;
        if (bytes) out->b[j] = present ? ld->bv[k] : (cp_pq_bytes){NULL, 0};
        else out->i[j] = present ? ld->iv[k] : 0;
        k += present;
    }
    if (col->ts_div > 1)
        for (size_t j = 0; j < nrows; j++) out->i[j] = floor_div(out->i[j], col->ts_div);
    return CP_OK;
}

/* The key leaf of a map: rows, null and empty maps, and one entry per key. */
static int assemble_keys(cp_pq_reader *r, const pq_col *col, const leafdata *k, size_t nrows,
                         cp_pq_column_data *out)
{
    out->map_off = arena_array(r, nrows + 1, sizeof *out->map_off);
    out->map_entries = arena_array(r, k->nv ? k->nv : 1, sizeof *out->map_entries);
    if (!out->map_off || !out->map_entries) return nomem(r);
    if (col->pub.optional && !(out->nulls = arena_alloc(r, nrows))) return nomem(r);
    size_t row = 0, ne = 0; /* row = rows started so far */
    int open = 0;
    for (size_t j = 0; j < k->n; j++) {
        int rep = k->rep[j], def = k->def[j];
        if (rep == 0) {
            if (row == nrows) return rfail(r, CP_ECORRUPT, "map keys hold more than %zu rows", nrows);
            out->map_off[row] = ne;
            if (out->nulls) out->nulls[row] = def < col->d_map;
            row++;
            open = def >= col->d_kv;
        } else if (!open || def < col->d_kv) {
            return rfail(r, CP_ECORRUPT, "map key entry %zu continues a null or empty map", j);
        }
        if (def >= col->d_kv) {
            if (ne >= k->nv) return rfail(r, CP_ECORRUPT, "map keys: more entries than values");
            memset(&out->map_entries[ne], 0, sizeof out->map_entries[ne]);
            out->map_entries[ne].key = k->bv[ne];
            ne++;
        }
    }
    if (row != nrows) return rfail(r, CP_ECORRUPT, "map keys hold %zu rows, the row group %zu", row, nrows);
    if (ne != k->nv) return rfail(r, CP_ECORRUPT, "map keys: %zu entries for %zu values", ne, k->nv);
    out->map_off[nrows] = ne;
    return CP_OK;
}

/* The element (MAP_STR_LIST) or value (MAP_STR_STR) leaf, paired entry by entry with the
 * keys already assembled (§6.3 "Assembly on read"). */
static int assemble_values(cp_pq_reader *r, const pq_col *col, const pq_leaf *lf, const leafdata *e, size_t nrows,
                           cp_pq_column_data *out)
{
    int list = col->pub.type == CP_PQ_MAP_STR_LIST;
    size_t nslots = 0;
    if (list) {
        for (size_t j = 0; j < e->n; j++) nslots += e->def[j] >= col->d_list;
    } else {
        nslots = e->nv;
    }
    cp_pq_bytes *slots = arena_array(r, nslots ? nslots : 1, sizeof *slots);
    if (!slots) return nomem(r);
    size_t row = 0, next = 0, si = 0, vi = 0; /* rows started, entries started, slots, values */
    cp_pq_map_entry *cur = NULL;
    for (size_t j = 0; j < e->n; j++) {
        int rep = e->rep[j], def = e->def[j];
        if (rep == 0) {
            if (row == nrows) return rfail(r, CP_ECORRUPT, "map values hold more than %zu rows", nrows);
            size_t first = out->map_off[row], end = out->map_off[row + 1];
            int nul = out->nulls ? out->nulls[row] : 0;
            row++;
            if (next != first) return rfail(r, CP_ECORRUPT, "map row %zu: values and keys disagree", row - 1);
            cur = NULL;
            if (def < col->d_kv) {
                if (end != first || nul != (def < col->d_map))
                    return rfail(r, CP_ECORRUPT, "map row %zu: values and keys disagree", row - 1);
                continue;
            }
            if (end == first) return rfail(r, CP_ECORRUPT, "map row %zu: values and keys disagree", row - 1);
        } else if (rep == 1) {
            if (row == 0 || next >= out->map_off[row] || def < col->d_kv)
                return rfail(r, CP_ECORRUPT, "map value entry %zu does not match a key", j);
        } else { /* rep 2: the next element of the current list */
            if (!cur || !cur->values || cur->nvalues == 0 || def < col->d_list)
                return rfail(r, CP_ECORRUPT, "list element %zu outside a list", j);
            slots[si] = def == lf->max_def ? e->bv[vi++] : (cp_pq_bytes){NULL, 0};
            si++;
            cur->nvalues++;
            continue;
        }
        /* a new map entry */
        cur = &out->map_entries[next++];
        cur->values = NULL;
        cur->nvalues = 0;
        if (!list) {
            if (def == lf->max_def) {
                slots[si] = e->bv[vi++];
                cur->values = &slots[si++];
                cur->nvalues = 1;
            }
            cur = NULL;
            continue;
        }
        if (def < col->d_val) continue; /* null list */
        cur->values = &slots[si];      /* empty list: a pointer with no elements */
        if (def < col->d_list) {
            cur = NULL;
            continue;
        }
        slots[si] = def == lf->max_def ? e->bv[vi++] : (cp_pq_bytes){NULL, 0};
        si++;
        cur->nvalues = 1;
    }
    if (row != nrows || next != out->map_off[nrows] || vi != e->nv)
        return rfail(r, CP_ECORRUPT, "map values hold %zu rows and %zu entries, keys %zu and %zu", row, next, nrows,
                     out->map_off[nrows]);
    return CP_OK;
}

/* ---- API -------------------------------------------------------------------------------- */

int cp_pq_reader_open(cp_pq_pread_fn pread, void *ud, uint64_t size, cp_pq_reader **out, char *err, size_t errlen)
{
    char scratch[8];
    if (!err || !errlen) err = scratch, errlen = sizeof scratch;
    err[0] = 0;
    *out = NULL;
    cp_pq_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "parquet: out of memory");
        return CP_ENOMEM;
    }
    r->pread = pread;
    r->ud = ud;
    r->size = size;
    cp_buf_init(&r->scratch);
    cp_buf_init(&r->scratch2);
    uint8_t tail[8], head[4];
    int st;
    if (size < 12) {
        st = rfail(r, CP_ECORRUPT, "a file of %llu bytes is not parquet", (unsigned long long)size);
        goto out;
    }
    if ((st = do_pread(r, head, 4, 0)) != CP_OK || (st = do_pread(r, tail, 8, size - 8)) != CP_OK) goto out;
    if (memcmp(head, "PAR1", 4) != 0 || memcmp(tail + 4, "PAR1", 4) != 0) {
        st = rfail(r, CP_ECORRUPT, "no PAR1 magic (encrypted files, PARE, are not supported)");
        goto out;
    }
    uint32_t flen = pq_le32(tail);
    if (flen > CP_PQ_MAX_FOOTER) {
        st = rfail(r, CP_ELIMIT, "footer of %u bytes (at most %u)", flen, CP_PQ_MAX_FOOTER);
        goto out;
    }
    if ((uint64_t)flen + 12 > size) {
        st = rfail(r, CP_ECORRUPT, "footer of %u bytes in a file of %llu", flen, (unsigned long long)size);
        goto out;
    }
    r->data_end = size - 8 - flen;
    if (!(r->footer = malloc(flen ? flen : 1))) {
        st = nomem(r);
        goto out;
    }
    if ((st = do_pread(r, r->footer, flen, r->data_end)) != CP_OK) goto out;
    st = pq_meta_decode(r->footer, flen, &r->m, r->err, sizeof r->err);
out:
    if (st != CP_OK) {
        snprintf(err, errlen, "%s", r->err);
        cp_pq_reader_free(r);
        return st;
    }
    *out = r;
    return CP_OK;
}

uint64_t cp_pq_reader_rows(const cp_pq_reader *r) { return (uint64_t)r->m.num_rows; }
size_t cp_pq_reader_row_groups(const cp_pq_reader *r) { return r->m.nrgs; }

uint64_t cp_pq_reader_row_group_rows(const cp_pq_reader *r, size_t rg)
{
    return rg < r->m.nrgs ? (uint64_t)r->m.rgs[rg].num_rows : 0;
}

size_t cp_pq_reader_columns(const cp_pq_reader *r) { return r->m.ncols; }

const cp_pq_column *cp_pq_reader_column(const cp_pq_reader *r, size_t col)
{
    return col < r->m.ncols ? &r->m.cols[col].pub : NULL;
}

int cp_pq_reader_find(const cp_pq_reader *r, const char *name)
{
    for (size_t i = 0; i < r->m.ncols; i++)
        if (strcmp(r->m.cols[i].pub.name, name) == 0) return (int)i;
    return -1;
}

static int set_ctx(cp_pq_reader *r, size_t rg, size_t col)
{
    r->ctx[0] = 0;
    if (rg >= r->m.nrgs || col >= r->m.ncols)
        return rfail(r, CP_EINVAL, "row group %zu column %zu out of range (%zu, %zu)", rg, col, r->m.nrgs, r->m.ncols);
    snprintf(r->ctx, sizeof r->ctx, "row group %zu column '%.40s'", rg, r->m.cols[col].pub.name);
    if (r->m.cols[col].pub.type == 0) return rfail(r, CP_EINVAL, "cannot be read: %s", r->m.cols[col].why);
    return CP_OK;
}

int cp_pq_reader_stats(cp_pq_reader *r, size_t rg, size_t col, cp_pq_stats *out)
{
    memset(out, 0, sizeof *out);
    out->null_count = -1;
    int st = set_ctx(r, rg, col);
    if (st != CP_OK) return st;
    const pq_col *c = &r->m.cols[col];
    const pq_chunk *ch = &r->m.rgs[rg].chunks[c->leaf];
    const pq_stats *s = &ch->stats;
    if (!s->present) return CP_ENOTFOUND;
    out->null_count = s->null_count;
    if (!s->min || !s->max) return CP_OK;
    size_t want = ch->type == PQ_INT32 ? 4 : ch->type == PQ_INT64 ? 8 : ch->type == PQ_BOOLEAN ? 1 : 0;
    if (ch->type == PQ_BYTE_ARRAY) {
        out->min_b = s->min;
        out->min_len = s->min_len;
        out->max_b = s->max;
        out->max_len = s->max_len;
    } else if (want && s->min_len == want && s->max_len == want) {
        if (c->ts_div > 1) {
            out->min_i = floor_div((int64_t)pq_le64(s->min), c->ts_div);
            out->max_i = floor_div((int64_t)pq_le64(s->max), c->ts_div);
        } else if (want == 4) {
            out->min_i = (int32_t)pq_le32(s->min);
            out->max_i = (int32_t)pq_le32(s->max);
        } else if (want == 8) {
            out->min_i = (int64_t)pq_le64(s->min);
            out->max_i = (int64_t)pq_le64(s->max);
        } else {
            out->min_i = s->min[0] != 0;
            out->max_i = s->max[0] != 0;
        }
    } else {
        return CP_OK; /* bounds of a shape we do not understand */
    }
    out->has_minmax = 1;
    return CP_OK;
}

int cp_pq_reader_read(cp_pq_reader *r, size_t rg, size_t col, cp_pq_column_data *out)
{
    memset(out, 0, sizeof *out);
    int st = set_ctx(r, rg, col);
    if (st != CP_OK) return st;
    const pq_col *c = &r->m.cols[col];
    const pq_rowgroup *g = &r->m.rgs[rg];
    if (g->num_rows > CP_PQ_MAX_VALUES)
        return rfail(r, CP_ELIMIT, "%lld rows in a row group (at most %u)", (long long)g->num_rows, CP_PQ_MAX_VALUES);
    size_t nrows = (size_t)g->num_rows;
    for (size_t k = 0; k < c->nleaves && k < 2; k++) {
        st = read_leaf(r, &g->chunks[c->leaf + k], &r->m.leaves[c->leaf + k], &r->ld[k]);
        if (st != CP_OK) return st;
    }
    if (c->pub.type == CP_PQ_MAP_STR_LIST || c->pub.type == CP_PQ_MAP_STR_STR) {
        st = assemble_keys(r, c, &r->ld[0], nrows, out);
        if (st == CP_OK) st = assemble_values(r, c, &r->m.leaves[c->leaf + 1], &r->ld[1], nrows, out);
    } else {
        st = assemble_flat(r, c, &r->m.leaves[c->leaf], &r->ld[0], nrows, out);
    }
    if (st != CP_OK) {
        memset(out, 0, sizeof *out);
        return st;
    }
    out->nrows = nrows;
    return CP_OK;
}

const char *cp_pq_reader_kv(const cp_pq_reader *r, const char *key)
{
    for (size_t i = 0; i < r->m.nkv; i++)
        if (strcmp(r->m.kv[2 * i], key) == 0) return r->m.kv[2 * i + 1];
    return NULL;
}

const char *cp_pq_reader_errmsg(const cp_pq_reader *r) { return r->err; }

void cp_pq_reader_free(cp_pq_reader *r)
{
    if (!r) return;
    cp_pq_reader_reset_arena(r);
    for (int k = 0; k < 2; k++) {
        leafdata *ld = &r->ld[k];
        free(ld->def);
        free(ld->rep);
        free(ld->iv);
        free(ld->bv);
        free(ld->div);
        free(ld->dbv);
    }
    free(r->idx);
    free(r->lens[0]);
    free(r->lens[1]);
    cp_buf_free(&r->scratch);
    cp_buf_free(&r->scratch2);
    ZSTD_freeDCtx(r->dctx);
    pq_meta_free(&r->m);
    free(r->footer);
    free(r);
}
