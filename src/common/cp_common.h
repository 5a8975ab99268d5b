/* cp_common.h -- status codes, growable buffers and byte primitives shared by every layer.
 *
 * Everything that reads untrusted bytes goes through cp_rd: a bounded cursor whose
 * readers return CP_AGAIN when the bytes end early (the caller rewinds and waits for
 * more) and a negative status when the bytes cannot be valid. Nothing here allocates
 * except cp_buf. */
#ifndef CP_COMMON_H
#define CP_COMMON_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Status codes. Zero is success, CP_AGAIN means "incomplete, feed more bytes",
 * negatives are errors. Functions return these; they never print. */
enum {
    CP_OK = 0,
    CP_AGAIN = 1,
    CP_EPROTO = -1,   /* bytes that no valid sender produces */
    CP_ELIMIT = -2,   /* a length, count or size over its bound */
    CP_ENOMEM = -3,
    CP_EIO = -4,
    CP_EABORT = -5,   /* a consumer callback asked to stop */
    CP_EINVAL = -6,   /* bad argument or configuration */
    CP_ENOTFOUND = -7,
    CP_ECORRUPT = -8, /* stored data (a blob, a file) that does not parse */
};

const char *cp_strstatus(int status);

/* ---- growable byte buffer --------------------------------------------------------- */

typedef struct cp_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} cp_buf;

void cp_buf_init(cp_buf *b);
void cp_buf_free(cp_buf *b);
int cp_buf_reserve(cp_buf *b, size_t extra);          /* CP_OK or CP_ENOMEM */
int cp_buf_append(cp_buf *b, const void *p, size_t n);
int cp_buf_putc(cp_buf *b, uint8_t c);
int cp_buf_puts(cp_buf *b, const char *s);
/* Appends v in plain decimal (no printf: JSON writers call it for every number). */
int cp_buf_put_i64(cp_buf *b, int64_t v);
/* Appends name[0..n) (a JSON field's `,"name":` text) and then v, as cp_buf_put_i64. */
int cp_buf_put_named_i64(cp_buf *b, const char *name, size_t n, int64_t v);
/* The same for a string literal name: its length is known at compile time. */
#define cp_buf_put_field(b, lit, v) cp_buf_put_named_i64((b), (lit), sizeof(lit) - 1, (v))
int cp_buf_printf(cp_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cp_buf_consume(cp_buf *b, size_t n);             /* drop n bytes from the front */

/* Grows the array *arr of elem-byte elements to hold at least need of them, doubling
 * from `first` (or the current capacity). CP_OK, or CP_ENOMEM (also on overflow). */
int cp_grow(void **arr, size_t *cap, size_t need, size_t elem, size_t first);
static inline void cp_buf_reset(cp_buf *b) { b->len = 0; }

/* ---- bounded reader over untrusted bytes ------------------------------------------ */

/* The readers below sit in the decoders' hot loops; inlining them lets the cursor live in
 * registers (an out-of-line call would force it to memory on every field). */
#define CP_INLINE static inline __attribute__((always_inline))

typedef struct cp_rd {
    const uint8_t *p;
    size_t len;
    size_t pos;
} cp_rd;

static inline void cp_rd_init(cp_rd *r, const uint8_t *p, size_t len)
{
    r->p = p;
    r->len = len;
    r->pos = 0;
}
static inline size_t cp_rd_left(const cp_rd *r) { return r->len - r->pos; }

CP_INLINE int cp_rd_u8(cp_rd *r, uint8_t *v)
{
    if (r->pos >= r->len) return CP_AGAIN;
    *v = r->p[r->pos++];
    return CP_OK;
}

static inline uint32_t cp_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
static inline uint64_t cp_be64(const uint8_t *p) { return ((uint64_t)cp_be32(p) << 32) | cp_be32(p + 4); }
static inline void cp_put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}
static inline void cp_put_be64(uint8_t *p, uint64_t v)
{
    cp_put_be32(p, (uint32_t)(v >> 32));
    cp_put_be32(p + 4, (uint32_t)v);
}

CP_INLINE int cp_rd_i32(cp_rd *r, int32_t *v)
{
    if (cp_rd_left(r) < 4) return CP_AGAIN;
    *v = (int32_t)cp_be32(r->p + r->pos);
    r->pos += 4;
    return CP_OK;
}
CP_INLINE int cp_rd_i64(cp_rd *r, int64_t *v)
{
    if (cp_rd_left(r) < 8) return CP_AGAIN;
    *v = (int64_t)cp_be64(r->p + r->pos);
    r->pos += 8;
    return CP_OK;
}

CP_INLINE int32_t cp_rd_varint_unchecked(cp_rd *r)
{
    const uint8_t *p = r->p + r->pos;
    uint32_t b = p[0], acc = b;
    size_t n = 1;
    if (b >= 0x80) {
        acc &= 0x7F;
        b = p[1]; acc |= (b & 0x7F) << 7; n = 2;
        if (b >= 0x80) {
            b = p[2]; acc |= (b & 0x7F) << 14; n = 3;
            if (b >= 0x80) {
                b = p[3]; acc |= (b & 0x7F) << 21; n = 4;
                if (b >= 0x80) {
                    acc |= (uint32_t)p[4] << 28;
                    n = 5;
                }
            }
        }
    }
    r->pos += n;
    return (int32_t)acc;
}

/* varint of the agent's DataOutputStreamEx (protocol.md §1.4): unsigned LEB128 of the
 * 32-bit pattern, at most 5 bytes; the 5th byte's high bit is ignored (Java semantics). */
CP_INLINE int cp_rd_varint(cp_rd *r, int32_t *v)
{
    const uint8_t *p = r->p + r->pos;
    size_t left = r->len - r->pos;
    if (left >= 5) { /* enough bytes for the longest form: no per-byte bounds checks */
        *v = cp_rd_varint_unchecked(r);
        return CP_OK;
    }
    uint32_t acc = 0;
    for (size_t i = 0; i < 5; i++) {
        if (i >= left) return CP_AGAIN;
        uint8_t b = p[i];
        if (i == 4) {
            acc |= (uint32_t)b << 28;
            r->pos += 5;
            *v = (int32_t)acc;
            return CP_OK;
        }
        acc |= (uint32_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            r->pos += i + 1;
            *v = (int32_t)acc;
            return CP_OK;
        }
    }
    return CP_EPROTO; /* unreachable */
}

/* varint for callers that have already checked at least 5 bytes remain (e.g. once per
 * record instead of once per field). */
/* varlong (§1.5): standard unsigned LEB128 of 64 bits, at most 10 bytes. */
CP_INLINE int cp_rd_varlong(cp_rd *r, int64_t *v)
{
    const uint8_t *p = r->p + r->pos;
    size_t left = r->len - r->pos;
    if (left && p[0] < 0x80) {
        *v = p[0];
        r->pos++;
        return CP_OK;
    }
    size_t max = left < 10 ? left : 10;
    uint64_t acc = 0;
    for (size_t i = 0; i < max; i++) {
        uint8_t b = p[i];
        acc |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            r->pos += i + 1;
            *v = (int64_t)acc;
            return CP_OK;
        }
    }
    return left < 10 ? CP_AGAIN : CP_EPROTO; /* an 11th byte: no valid writer does this */
}

/* varlong for callers that have checked at least 10 bytes remain. CP_EPROTO if all ten
 * bytes carry the continuation bit (as cp_rd_varlong). */
CP_INLINE int cp_rd_varlong_unchecked(cp_rd *r, int64_t *v)
{
    const uint8_t *p = r->p + r->pos;
    uint64_t acc = 0;
    for (size_t i = 0; i < 10; i++) {
        uint8_t b = p[i];
        acc |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            r->pos += i + 1;
            *v = (int64_t)acc;
            return CP_OK;
        }
    }
    return CP_EPROTO;
}

/* zig-zag varint (§1.6), only the calls time delta. */
CP_INLINE int cp_rd_zigzag(cp_rd *r, int32_t *v)
{
    int32_t u;
    int st = cp_rd_varint(r, &u);
    if (st != CP_OK) return st;
    uint32_t x = (uint32_t)u;
    *v = (int32_t)((x >> 1) ^ (0u - (x & 1u)));
    return CP_OK;
}

/* A Java string on the wire: n UTF-16 code units, big-endian, not yet converted. The
 * pointer aliases the decoder's input and is valid only during the callback. */
typedef struct cp_str16 {
    const uint8_t *be;
    uint32_t n; /* code units */
} cp_str16;

/* varstring (§1.7): varint unit count then 2*n bytes. max_units bounds the count. */
CP_INLINE int cp_rd_str16(cp_rd *r, uint32_t max_units, cp_str16 *s)
{
    size_t start = r->pos;
    int32_t n;
    int st = cp_rd_varint(r, &n);
    if (st != CP_OK) return st;
    if (n < 0 || (uint32_t)n > max_units) {
        r->pos = start;
        return CP_ELIMIT;
    }
    if (cp_rd_left(r) < (size_t)n * 2) {
        r->pos = start;
        return CP_AGAIN;
    }
    s->be = r->p + r->pos;
    s->n = (uint32_t)n;
    r->pos += (size_t)n * 2;
    return CP_OK;
}

/* Appends s as UTF-8; unpaired surrogates become U+FFFD. */
int cp_str16_to_utf8(cp_buf *out, cp_str16 s);
/* Equality of a wire string with an ASCII/UTF-8 literal without converting. */
int cp_str16_eq_ascii(cp_str16 s, const char *ascii);

/* ---- JSON text helpers (JSON Lines output of the CLI) ------------------------------ */

/* Appends "..." with the UTF-8 text escaped for JSON. Invalid UTF-8 becomes U+FFFD. */
int cp_json_str(cp_buf *out, const char *s, size_t n);
/* Formats an error reason into err[0..errlen) (nothing when err is NULL or errlen 0). */
void cp_set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same from a va_list, followed by " at offset <at>" (the decoders' reasons). */
void cp_vset_err_at(char *err, size_t errlen, uint64_t at, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));
/* Length of the well-formed UTF-8 sequence at p[0..left) (1..4; no overlongs, surrogates
 * or code points past U+10FFFF), 0 if there is none. */
size_t cp_utf8_seq(const uint8_t *p, size_t left);
/* Appends s[0..n) as valid UTF-8, each byte that starts no valid sequence as U+FFFD
 * (untrusted text on its way into JSON). CP_OK or CP_ENOMEM. */
int cp_utf8_repair(cp_buf *out, const char *s, size_t n);
int cp_json_str16(cp_buf *out, cp_str16 s);

/* ---- writing stream content (protocol.md §1.4, §1.7) ------------------------------- */

/* Unsigned LEB128 of the 32-bit pattern (minimal). */
int cp_buf_put_varint(cp_buf *b, uint32_t v);
/* varstring of UTF-8 text: the UTF-16 unit count, then each unit big-endian; a byte that
 * starts no valid UTF-8 sequence becomes U+FFFD. CP_ELIMIT past 2^31 units. */
int cp_buf_put_varstring(cp_buf *b, const char *s, size_t n);

/* ---- misc -------------------------------------------------------------------------- */

int64_t cp_now_ms(void);      /* wall clock, epoch ms */
uint64_t cp_mono_ns(void);    /* monotonic */
int cp_random_bytes(void *p, size_t n);
/* Formats a 16-byte UUID as 8-4-4-4-12 lowercase hex into out[37]. */
void cp_uuid_str(const uint8_t u[16], char out[37]);
/* Escapes a name from the network into a safe single path component: [A-Za-z0-9._-]
 * kept, everything else (and a leading '.') as %XX; empty becomes "_". */
int cp_path_component(cp_buf *out, const char *s, size_t n);
/* mkdir -p; fsyncs nothing. Returns CP_OK or CP_EIO (errno set). */
int cp_mkdirs(const char *path, int mode);
/* A decimal number (digits only, at most 19) no larger than max, for command-line
 * values. CP_EINVAL otherwise. */
int cp_parse_u64(const char *s, uint64_t max, uint64_t *out);
/* Reads a whole file (bounded by max bytes) into out. */
int cp_read_file(const char *path, size_t max, cp_buf *out);

#define CP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/* Two's-complement addition without undefined behaviour: times read from the network
 * can be anything, and a garbage time must stay garbage, not become UB. */
static inline int64_t cp_add_wrap64(int64_t a, int64_t b) { return (int64_t)((uint64_t)a + (uint64_t)b); }

/* Memory that several holders of one thread may take together (a share of
 * --ingest-memory: the raw log's tail copies, assembly's value caches): a holder grows
 * only while there is room, and gives back what it frees. Not locked. A NULL budget
 * counts nothing and never refuses. */
typedef struct cp_membudget {
    size_t used;      /* bytes taken now */
    size_t budget;    /* growth stops at this (0 = no limit) */
    uint64_t refused; /* growths refused for lack of room */
} cp_membudget;

/* 1 if n more bytes fit (the caller then takes them with cp_membudget_add); 0, counted
 * as refused, if not. */
static inline int cp_membudget_room(cp_membudget *b, size_t n)
{
    if (!b || !b->budget || b->used + n <= b->budget) return 1;
    b->refused++;
    return 0;
}
static inline void cp_membudget_add(cp_membudget *b, size_t n)
{
    if (b) b->used += n;
}
static inline void cp_membudget_sub(cp_membudget *b, size_t n)
{
    if (b) b->used -= n;
}

/* murmur3's 64-bit finaliser: every input bit reaches every output bit, so the low bits
 * can index a power-of-two hash table. */
static inline uint64_t cp_mix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#endif
