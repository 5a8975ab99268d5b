/* enc.c -- value encodings (parquet.md §5): the RLE/bit-packed hybrid used for levels,
 * dictionary indices and booleans, and the DELTA_BINARY_PACKED decoder. The encoders
 * run on every value the writer stores, so they have fast paths for the common shapes
 * (long runs of one level, short bit-packed groups); the decoders check every length. */
#include "pq_internal.h"

#include <endian.h>

/* ---- hybrid encoder --------------------------------------------------------------------- */

/* Length of the run of equal values starting at v[i], at most max. */
static size_t run_u8(const uint8_t *v, size_t n, size_t i, size_t max)
{
    size_t end = n - i < max ? n : i + max, j = i + 1;
    uint8_t x = v[i];
    /* eight bytes at a time while they all equal x */
    uint64_t pat = 0x0101010101010101ull * x;
    while (j + 8 <= end) {
        uint64_t w;
        memcpy(&w, v + j, 8);
        if (w != pat) break;
        j += 8;
    }
    while (j < end && v[j] == x) j++;
    return j - i;
}

static size_t run_u32(const uint32_t *v, size_t n, size_t i, size_t max)
{
    size_t end = n - i < max ? n : i + max, j = i + 1;
    uint32_t x = v[i];
    while (j < end && v[j] == x) j++;
    return j - i;
}

/* Appends an RLE run: header (count << 1), then the value in ceil(w/8) bytes. */
static int put_rle(cp_buf *out, size_t count, uint32_t value, int w)
{
    int st = cp_buf_reserve(out, 10 + 4);
    if (st != CP_OK) return st;
    uint8_t *o = out->data + out->len;
    size_t k = pq_put_uvarint(o, (uint64_t)count << 1);
    for (int b = 0; b < (w + 7) / 8; b++) o[k++] = (uint8_t)(value >> (8 * b));
    out->len += k;
    return CP_OK;
}

/* Packs 8 values of w bits, LSB first, into exactly w bytes at o. */
#define PACK8(o, v, w)                                                                                                 \
    do {                                                                                                               \
        uint64_t acc_ = 0;                                                                                             \
        int bits_ = 0;                                                                                                 \
        uint8_t *o_ = (o);                                                                                             \
        for (int k_ = 0; k_ < 8; k_++) {                                                                               \
            acc_ |= (uint64_t)(v)[k_] << bits_;                                                                        \
            bits_ += (w);                                                                                              \
            while (bits_ >= 8) {                                                                                       \
                *o_++ = (uint8_t)acc_;                                                                                 \
                acc_ >>= 8;                                                                                            \
                bits_ -= 8;                                                                                            \
            }                                                                                                          \
        }                                                                                                              \
    } while (0)

/* The encoder of §5.2, written once for both element sizes: a run of >= 8 equal values
 * becomes an RLE run; anything else becomes bit-packed groups of 8 that stop where the
 * next group would start such a run. Only the final group is padded. */
#define HYBRID_ENCODE(T, RUN)                                                                                          \
    size_t i = 0;                                                                                                      \
    while (i < n) {                                                                                                    \
        size_t r = RUN(v, n, i, SIZE_MAX);                                                                             \
        if (r >= 8) {                                                                                                  \
            int st = put_rle(out, r, v[i], w);                                                                         \
            if (st != CP_OK) return st;                                                                                \
            i += r;                                                                                                    \
            continue;                                                                                                  \
        }                                                                                                              \
        size_t start = i, groups = 0;                                                                                  \
        do {                                                                                                           \
            groups++;                                                                                                  \
            i += 8;                                                                                                    \
        } while (i < n && RUN(v, n, i, 8) < 8);                                                                        \
        if (i > n) i = n;                                                                                              \
        int st = cp_buf_reserve(out, 10 + groups * (size_t)w);                                                         \
        if (st != CP_OK) return st;                                                                                    \
        uint8_t *o = out->data + out->len;                                                                             \
        o += pq_put_uvarint(o, (uint64_t)groups << 1 | 1);                                                             \
        size_t j = start;                                                                                              \
        for (; j + 8 <= i; j += 8, o += w) PACK8(o, v + j, w);                                                         \
        if (j < i) { /* the padded last group */                                                                       \
            T pad[8] = {0};                                                                                            \
            memcpy(pad, v + j, (i - j) * sizeof(T));                                                                   \
            PACK8(o, pad, w);                                                                                          \
            o += w;                                                                                                    \
        }                                                                                                              \
        out->len = (size_t)(o - out->data);                                                                            \
    }                                                                                                                  \
    return CP_OK

int pq_hybrid_encode_u8(cp_buf *out, const uint8_t *v, size_t n, int w) { HYBRID_ENCODE(uint8_t, run_u8); }

int pq_hybrid_encode_u32(cp_buf *out, const uint32_t *v, size_t n, int w) { HYBRID_ENCODE(uint32_t, run_u32); }

/* ---- hybrid decoder --------------------------------------------------------------------- */

static int bad(const char **why, const char *msg)
{
    if (why) *why = msg;
    return CP_ECORRUPT;
}

/* ULEB128 of at most 10 bytes from p[*pos..len). */
static int get_uvarint(const uint8_t *p, size_t len, size_t *pos, uint64_t *v)
{
    uint64_t acc = 0;
    for (int i = 0; i < 10; i++) {
        if (*pos >= len) return CP_ECORRUPT;
        uint8_t b = p[(*pos)++];
        if (i == 9 && b > 1) return CP_ECORRUPT;
        acc |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            *v = acc;
            return CP_OK;
        }
    }
    return CP_ECORRUPT;
}

static inline void store(void *out, int esize, size_t i, uint32_t x)
{
    if (esize == 1) ((uint8_t *)out)[i] = (uint8_t)x;
    else ((uint32_t *)out)[i] = x;
}

/* Unpacks `take` (<= 8 * groups) values of w (1..32) bits from the groups at p. */
static void unpack(const uint8_t *p, size_t groups, int w, void *out, int esize, size_t at, size_t take)
{
    uint64_t mask = ((uint64_t)1 << w) - 1;
    size_t g = 0;
    for (; g < groups && take; g++, p += w) {
        /* a group is exactly w bytes; a padded copy lets every value be one 8-byte load */
        uint8_t tmp[40] = {0};
        memcpy(tmp, p, (size_t)w);
        size_t k_end = take < 8 ? take : 8;
        for (size_t k = 0; k < k_end; k++) {
            size_t off = k * (size_t)w;
            uint64_t x;
            memcpy(&x, tmp + (off >> 3), 8);
            x = le64toh(x);
            store(out, esize, at + k, (uint32_t)((x >> (off & 7)) & mask));
        }
        at += k_end;
        take -= k_end;
    }
}

int pq_hybrid_decode(const uint8_t *p, size_t len, int w, void *out, int esize, size_t n, size_t *used,
                     const char **why)
{
    if (w < 0 || w > 32 || (esize == 1 && w > 8)) return bad(why, "bit width out of range");
    size_t pos = 0, i = 0;
    size_t vbytes = (size_t)(w + 7) / 8;
    while (i < n) {
        uint64_t h;
        if (get_uvarint(p, len, &pos, &h) != CP_OK) return bad(why, "truncated run header");
        if (h & 1) { /* bit-packed: groups of 8 values, w bytes each */
            uint64_t groups = h >> 1;
            if (w && groups > (len - pos) / (size_t)w) return bad(why, "bit-packed run past the end");
            size_t count = groups > (n - i + 7) / 8 ? n - i : (size_t)groups * 8;
            if (count > n - i) count = n - i;
            if (w == 0) memset((uint8_t *)out + i * (size_t)esize, 0, count * (size_t)esize);
            else unpack(p + pos, (size_t)groups, w, out, esize, i, count);
            pos += (size_t)groups * (size_t)w;
            i += count;
        } else {
            uint64_t count = h >> 1;
            if (count == 0) return bad(why, "empty RLE run");
            if (len - pos < vbytes) return bad(why, "truncated RLE value");
            uint32_t x = 0;
            for (size_t b = 0; b < vbytes; b++) x |= (uint32_t)p[pos + b] << (8 * b);
            pos += vbytes;
            if (w < 32 && (x >> w) != 0) return bad(why, "RLE value wider than the bit width");
            size_t take = count < n - i ? (size_t)count : n - i;
            if (esize == 1) memset((uint8_t *)out + i, (int)x, take);
            else
                for (size_t k = 0; k < take; k++) ((uint32_t *)out)[i + k] = x;
            i += take;
        }
    }
    if (used) *used = pos;
    return CP_OK;
}

/* ---- DELTA_BINARY_PACKED ---------------------------------------------------------------- */

/* w (0..64) bits at bit offset `off` of p; the caller has checked they are all there. */
static uint64_t get_bits(const uint8_t *p, uint64_t off, int w)
{
    if (w == 0) return 0;
    size_t byte = (size_t)(off >> 3);
    int sh = (int)(off & 7);
    uint64_t v = (uint64_t)p[byte++] >> sh;
    int got = 8 - sh;
    while (got < w) {
        v |= (uint64_t)p[byte++] << got;
        got += 8;
    }
    return w == 64 ? v : v & (((uint64_t)1 << w) - 1);
}

#define PQ_DELTA_MAX_BLOCK 32768 /* values per block; writers use 128 (parquet-mr) to 2048 */

int pq_delta_decode(const uint8_t *p, size_t len, int is32, int64_t *out, size_t n, size_t *used, const char **why)
{
    size_t pos = 0;
    uint64_t block, nmini, total, z;
    if (get_uvarint(p, len, &pos, &block) || get_uvarint(p, len, &pos, &nmini) ||
        get_uvarint(p, len, &pos, &total) || get_uvarint(p, len, &pos, &z))
        return bad(why, "truncated delta header");
    if (block == 0 || block % 128 || block > PQ_DELTA_MAX_BLOCK || nmini == 0 || block % nmini ||
        (block / nmini) % 32)
        return bad(why, "bad delta block shape");
    if (total != n) return bad(why, "delta value count differs from the page's");
    size_t per_mini = (size_t)(block / nmini);
    /* INT32 deltas may be up to 33 bits wide: DuckDB computes them in 64 bits. Adding in
     * 64 bits and truncating gives the same values mod 2^32 either way. */
    int maxw = 64;
    uint64_t prev = (uint64_t)pq_unzigzag(z);
    size_t got = 0;
    if (n > 0) out[got++] = is32 ? (int32_t)(uint32_t)prev : (int64_t)prev;
    while (got < n) {
        uint64_t zmin;
        if (get_uvarint(p, len, &pos, &zmin)) return bad(why, "truncated delta block");
        uint64_t min_delta = (uint64_t)pq_unzigzag(zmin);
        if (len - pos < nmini) return bad(why, "truncated delta bit widths");
        const uint8_t *widths = p + pos;
        pos += (size_t)nmini;
        for (size_t m = 0; m < nmini && got < n; m++) {
            int w = widths[m];
            if (w > maxw) return bad(why, "delta bit width too large");
            size_t bytes = per_mini * (size_t)w / 8;
            if (len - pos < bytes) return bad(why, "truncated delta miniblock");
            size_t take = n - got < per_mini ? n - got : per_mini;
            for (size_t k = 0; k < take; k++) {
                prev += min_delta + get_bits(p + pos, (uint64_t)k * (uint64_t)w, w); /* wraps, as specified */
                out[got++] = is32 ? (int32_t)(uint32_t)prev : (int64_t)prev;
            }
            pos += bytes;
        }
    }
    if (used) *used = pos;
    return CP_OK;
}
