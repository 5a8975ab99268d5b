/* zipout.c -- streaming zip writer for bulk downloads (dumps-http.md §7.2).
 *
 * Layout of what goes to the sink, per entry:
 *   local header (CRC zero, sizes 0xFFFFFFFF, flag bit 3) + name + a ZIP64 extra holding
 *   zero sizes + the extended-timestamp extra,
 *   the data (stored, or raw deflate at the archive's level, 6 unless cp_zipw_level),
 *   a data descriptor: signature, CRC-32, 8-byte compressed and uncompressed sizes;
 * and at the end the central directory, a ZIP64 end record and locator when the entry
 * count, the directory's size or its offset do not fit the classic end record, and the
 * classic end record.
 *
 * Why every local header carries a ZIP64 extra: its size is not known when it is
 * written, and APPNOTE 4.3.9.2 gives the descriptor 8-byte sizes only when the local
 * header has that extra. Writers that add 8-byte descriptors without it (Go, Java) make
 * archives that libarchive rejects for entries of 4 GiB and more ("data is wrong size",
 * streaming, and seekable too for deflated entries): it picks the descriptor's form from
 * the local extra. Costs 20 bytes per entry; readers that take everything from the
 * central directory do not care. A classic archive (cp_zipw_classic, for .xlsx) has no
 * ZIP64 field anywhere and 4-byte descriptor sizes instead, and refuses to grow past what
 * they can hold.
 * The central directory, whose sizes are known, gets a ZIP64 extra only with the fields
 * that overflow (APPNOTE 4.5.3: uncompressed size, compressed size, local header offset).
 *
 * Memory: zlib's state, one output chunk (deflate output, headers and central directory
 * records are staged there; stored data goes to the sink without a copy), and the list of
 * entries for the central directory (about 56 bytes plus the name per entry), which no
 * zip writer can avoid.
 */
#include "http/cp_zipout.h"

#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define ZW_CHUNK (128u << 10)       /* holds the largest header: 46 + 65535 + 28 + 9 bytes */
#define ZW_MAX_NAME 65535u
#define ZW_U32 0xFFFFFFFFull        /* at or above this a 32-bit field becomes a ZIP64 marker */
#define ZW_U16 0xFFFFu
#define ZW_STEP (1u << 30)          /* zlib's lengths are 32-bit: feed it at most this at once */

#define ZW_SIG_LOCAL 0x04034b50u
#define ZW_SIG_DESC 0x08074b50u
#define ZW_SIG_CENTRAL 0x02014b50u
#define ZW_SIG_END64 0x06064b50u
#define ZW_SIG_LOC64 0x07064b50u
#define ZW_SIG_END 0x06054b50u

#define ZW_FLAGS 0x0808u            /* bit 3: data descriptor; bit 11: UTF-8 name */
#define ZW_MADE_BY 0x032Du          /* Unix, APPNOTE 4.5 */
#define ZW_EXT_ATTR (0100644u << 16) /* a regular rw-r--r-- file, for unzip on Unix */

typedef struct zw_entry {
    size_t name_off;                /* in the name arena */
    uint16_t name_len;              /* 1..65535 */
    uint16_t method;                /* 0 stored, 8 deflate */
    uint16_t dos_time, dos_date;
    int32_t mtime;                  /* extended timestamp: Unix seconds */
    uint32_t crc;
    uint64_t csize, usize, offset;
} zw_entry;

enum { ZW_IDLE, ZW_ENTRY, ZW_FINISHED };

struct cp_zipw {
    cp_zipw_sink_fn sink;
    void *ud;
    uint64_t bytes;                 /* given to the sink */
    int err;                        /* sticky: the sink's or zlib's failure */
    int state;
    int classic;                    /* no ZIP64 fields: everything below 4 GiB */
    zw_entry *ents;
    size_t nents, cap;
    cp_buf names;                   /* every entry's name, back to back */
    z_stream zs;
    int zs_ready;
    int level, zs_level;            /* zlib level asked for, and the one zs was made with */
    uint8_t *out;                   /* the output chunk */
    size_t outlen;
};

/* ---- little-endian staging ------------------------------------------------------------ */

static uint8_t *put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    return p + 2;
}
static uint8_t *put32(uint8_t *p, uint32_t v)
{
    put16(p, v & 0xFFFF);
    put16(p + 2, v >> 16);
    return p + 4;
}
static uint8_t *put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
    return p + 8;
}
static uint32_t clamp32(uint64_t v) { return v >= ZW_U32 ? (uint32_t)ZW_U32 : (uint32_t)v; }

/* ---- output ------------------------------------------------------------------------- */

static int give(cp_zipw *z, const void *p, size_t n)
{
    if (z->err) return z->err;
    if (n == 0) return CP_OK;
    int st = z->sink(z->ud, p, n);
    if (st != 0) return z->err = st;
    z->bytes += n;
    return CP_OK;
}

static int flush(cp_zipw *z)
{
    int st = give(z, z->out, z->outlen);
    z->outlen = 0;
    return st;
}

/* Room for n more bytes in the output chunk (n <= ZW_CHUNK). */
static int room(cp_zipw *z, size_t n)
{
    return z->outlen + n <= ZW_CHUNK ? CP_OK : flush(z);
}

/* ---- times ------------------------------------------------------------------------------ */

/* Civil date of a day count since 1970-01-01 (H. Hinnant's days_from_civil, inverted). */
static void civil(int64_t days, int64_t *y, unsigned *m, unsigned *d)
{
    days += 719468;
    int64_t era = (days >= 0 ? days : days - 146096) / 146097;
    unsigned doe = (unsigned)(days - era * 146097);
    unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    unsigned mp = (5 * doy + 2) / 153;
    *d = doy - (153 * mp + 2) / 5 + 1;
    *m = mp < 10 ? mp + 3 : mp - 9;
    *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* DOS date and time (UTC) of an epoch-ms time, clamped to DOS's 1980..2107 range; and the
 * Unix seconds of the extended timestamp, clamped to its signed 32 bits. */
static void zip_times(int64_t ms, zw_entry *e)
{
    /* floor division, without overflow for any int64 */
    int64_t s = ms / 1000 - (ms % 1000 < 0);
    e->mtime = s < INT32_MIN ? INT32_MIN : s > INT32_MAX ? INT32_MAX : (int32_t)s;
    int64_t days = s / 86400 - (s % 86400 < 0);
    int64_t sod = s - days * 86400;
    int64_t y;
    unsigned mo, d;
    civil(days, &y, &mo, &d);
    if (y < 1980) {
        y = 1980, mo = 1, d = 1, sod = 0;
    } else if (y > 2107) {
        y = 2107, mo = 12, d = 31, sod = 86399;
    }
    unsigned h = (unsigned)(sod / 3600), mi = (unsigned)(sod / 60 % 60), se = (unsigned)(sod % 60);
    e->dos_time = (uint16_t)(h << 11 | mi << 5 | se / 2);
    e->dos_date = (uint16_t)((unsigned)(y - 1980) << 9 | mo << 5 | d);
}

/* ---- names ------------------------------------------------------------------------------ */

/* A name a reader can extract safely: well-formed UTF-8 without control bytes or
 * backslashes, '/'-separated relative path components, none empty, "." or "..". */
static int name_ok(const uint8_t *p, size_t n)
{
    if (n < 1 || n > ZW_MAX_NAME) return 0;
    size_t comp = 0; /* start of the current component */
    for (size_t i = 0; i <= n; i++) {
        if (i == n || p[i] == '/') {
            size_t cl = i - comp;
            if (cl == 0 || (cl == 1 && p[comp] == '.') || (cl == 2 && p[comp] == '.' && p[comp + 1] == '.')) return 0;
            comp = i + 1;
            continue;
        }
        uint8_t c = p[i];
        if (c < 0x20 || c == 0x7F || c == '\\') return 0;
        if (c < 0x80) continue;
        size_t k;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) k = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) k = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) k = 4, cp = c & 0x07;
        else return 0;
        if (n - i < k) return 0;
        for (size_t j = 1; j < k; j++) {
            if ((p[i + j] & 0xC0) != 0x80) return 0;
            cp = cp << 6 | (p[i + j] & 0x3F);
        }
        if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += k - 1;
    }
    return 1;
}

/* ---- API -------------------------------------------------------------------------------- */

int cp_zipw_new(cp_zipw_sink_fn sink, void *ud, cp_zipw **out)
{
    *out = NULL;
    if (!sink) return CP_EINVAL;
    cp_zipw *z = calloc(1, sizeof *z);
    if (!z) return CP_ENOMEM;
    z->out = malloc(ZW_CHUNK);
    if (!z->out) {
        free(z);
        return CP_ENOMEM;
    }
    z->sink = sink;
    z->ud = ud;
    z->level = 6;
    cp_buf_init(&z->names);
    *out = z;
    return CP_OK;
}

void cp_zipw_classic(cp_zipw *z) { z->classic = 1; }

void cp_zipw_level(cp_zipw *z, int level) { z->level = level < 1 ? 1 : level > 9 ? 9 : level; }

/* Version needed to extract: 4.5 for ZIP64 (every local header of a normal archive has its
 * extra), 2.0 for deflate and data descriptors. */
static unsigned version_needed(const cp_zipw *z) { return z->classic ? 20 : 45; }

int cp_zipw_begin(cp_zipw *z, const char *name, int64_t mtime_ms, int deflate)
{
    if (z->err) return z->err;
    if (z->state != ZW_IDLE || !name) return CP_EINVAL;
    size_t nlen = strlen(name);
    if (!name_ok((const uint8_t *)name, nlen)) return CP_EINVAL;
    /* a classic archive's offsets and entry count have 32 and 16 bits */
    if (z->classic && (z->bytes >= ZW_U32 || z->nents + 1 >= ZW_U16)) return z->err = CP_ELIMIT;
    if (cp_grow((void **)&z->ents, &z->cap, z->nents + 1, sizeof *z->ents, 64) != CP_OK) return z->err = CP_ENOMEM;
    zw_entry *e = &z->ents[z->nents];
    memset(e, 0, sizeof *e);
    e->name_off = z->names.len;
    e->name_len = (uint16_t)nlen;
    e->method = deflate ? 8 : 0;
    e->offset = z->bytes;
    zip_times(mtime_ms, e);
    if (cp_buf_append(&z->names, name, nlen) != CP_OK) return z->err = CP_ENOMEM;
    if (deflate) {
        if (z->zs_ready && z->zs_level != z->level) { /* made for another level */
            deflateEnd(&z->zs);
            z->zs_ready = 0;
        }
        int zst = z->zs_ready ? deflateReset(&z->zs)
                              : deflateInit2(&z->zs, z->level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
        if (zst != Z_OK) return z->err = CP_ENOMEM;
        z->zs_ready = 1;
        z->zs_level = z->level;
    }
    e->crc = (uint32_t)crc32(0, Z_NULL, 0);

    /* the output chunk is empty between entries */
    uint8_t *p = z->out;
    p = put32(p, ZW_SIG_LOCAL);
    p = put16(p, version_needed(z));
    p = put16(p, ZW_FLAGS);
    p = put16(p, e->method);
    p = put16(p, e->dos_time);
    p = put16(p, e->dos_date);
    p = put32(p, 0);                /* CRC: in the data descriptor */
    /* sizes: in the data descriptor (classic: zero here, APPNOTE 4.4.4), otherwise the
     * ZIP64 marker and the extra below */
    p = put32(p, z->classic ? 0 : (uint32_t)ZW_U32);
    p = put32(p, z->classic ? 0 : (uint32_t)ZW_U32);
    p = put16(p, (unsigned)nlen);
    p = put16(p, z->classic ? 9 : 20 + 9); /* extra length */
    memcpy(p, name, nlen);
    p += nlen;
    if (!z->classic) {
        p = put16(p, 0x0001);       /* ZIP64: uncompressed and compressed size, unknown yet */
        p = put16(p, 16);
        p = put64(p, 0);
        p = put64(p, 0);
    }
    p = put16(p, 0x5455);           /* extended timestamp: mtime only */
    p = put16(p, 5);
    *p++ = 1;
    p = put32(p, (uint32_t)e->mtime);
    z->outlen = (size_t)(p - z->out);
    int st = flush(z);
    if (st != CP_OK) return st;
    z->nents++;
    z->state = ZW_ENTRY;
    return CP_OK;
}

/* Runs deflate over the current input with the given flush mode until it needs more input
 * (or, for Z_FINISH, until the stream ends), flushing full output chunks to the sink. */
static int run_deflate(cp_zipw *z, zw_entry *e, int mode)
{
    for (;;) {
        z->zs.next_out = z->out + z->outlen;
        z->zs.avail_out = (uInt)(ZW_CHUNK - z->outlen);
        int zst = deflate(&z->zs, mode);
        size_t made = ZW_CHUNK - z->outlen - z->zs.avail_out;
        z->outlen += made;
        e->csize += made;
        if (z->classic && e->csize >= ZW_U32) return z->err = CP_ELIMIT;
        if (zst == Z_STREAM_END) return CP_OK;
        if (zst != Z_OK && zst != Z_BUF_ERROR) return z->err = CP_EIO;
        if (z->outlen == ZW_CHUNK) {
            int st = flush(z);
            if (st != CP_OK) return st;
            continue;
        }
        if (mode != Z_FINISH && z->zs.avail_in == 0) return CP_OK;
    }
}

int cp_zipw_data(cp_zipw *z, const void *data, size_t n)
{
    if (z->err) return z->err;
    if (z->state != ZW_ENTRY || (n && !data)) return CP_EINVAL;
    zw_entry *e = &z->ents[z->nents - 1];
    if (z->classic && n >= ZW_U32 - e->usize) return z->err = CP_ELIMIT;
    const uint8_t *p = data;
    while (n) {
        size_t step = n < ZW_STEP ? n : ZW_STEP;
        e->crc = (uint32_t)crc32(e->crc, p, (uInt)step);
        e->usize += step;
        int st;
        if (e->method == 0) {
            e->csize += step;
            st = give(z, p, step);
        } else {
            z->zs.next_in = (Bytef *)(uintptr_t)p; /* zlib's API is not const-correct */
            z->zs.avail_in = (uInt)step;
            st = run_deflate(z, e, Z_NO_FLUSH);
        }
        if (st != CP_OK) return st;
        p += step;
        n -= step;
    }
    return CP_OK;
}

int cp_zipw_end(cp_zipw *z)
{
    if (z->err) return z->err;
    if (z->state != ZW_ENTRY) return CP_EINVAL;
    zw_entry *e = &z->ents[z->nents - 1];
    int st;
    if (e->method == 8) {
        z->zs.next_in = NULL;
        z->zs.avail_in = 0;
        if ((st = run_deflate(z, e, Z_FINISH)) != CP_OK) return st;
    }
    if ((st = room(z, 24)) != CP_OK) return st;
    uint8_t *p = z->out + z->outlen;
    p = put32(p, ZW_SIG_DESC);
    p = put32(p, e->crc);
    if (z->classic) {               /* both below 4 GiB (checked as they grew) */
        p = put32(p, (uint32_t)e->csize);
        p = put32(p, (uint32_t)e->usize);
    } else {
        p = put64(p, e->csize);     /* 8 bytes: the local header has a ZIP64 extra */
        p = put64(p, e->usize);
    }
    z->outlen = (size_t)(p - z->out);
    if ((st = flush(z)) != CP_OK) return st;
    z->state = ZW_IDLE;
    return CP_OK;
}

int cp_zipw_finish(cp_zipw *z)
{
    if (z->err) return z->err;
    if (z->state != ZW_IDLE) return CP_EINVAL;
    uint64_t cd_off = z->bytes;
    int st;
    for (size_t i = 0; i < z->nents; i++) {
        const zw_entry *e = &z->ents[i];
        int big_u = e->usize >= ZW_U32, big_c = e->csize >= ZW_U32, big_o = e->offset >= ZW_U32;
        unsigned x64 = 8u * (unsigned)(big_u + big_c + big_o);
        unsigned extra = (x64 ? 4 + x64 : 0) + 9;
        if ((st = room(z, 46 + (size_t)e->name_len + extra)) != CP_OK) return st;
        uint8_t *p = z->out + z->outlen;
        p = put32(p, ZW_SIG_CENTRAL);
        p = put16(p, ZW_MADE_BY);
        p = put16(p, version_needed(z)); /* as in the local header */
        p = put16(p, ZW_FLAGS);
        p = put16(p, e->method);
        p = put16(p, e->dos_time);
        p = put16(p, e->dos_date);
        p = put32(p, e->crc);
        p = put32(p, clamp32(e->csize));
        p = put32(p, clamp32(e->usize));
        p = put16(p, e->name_len);
        p = put16(p, extra);
        p = put16(p, 0);            /* comment */
        p = put16(p, 0);            /* disk */
        p = put16(p, 0);            /* internal attributes */
        p = put32(p, ZW_EXT_ATTR);
        p = put32(p, clamp32(e->offset));
        memcpy(p, z->names.data + e->name_off, e->name_len);
        p += e->name_len;
        if (x64) {
            p = put16(p, 0x0001);
            p = put16(p, x64);
            if (big_u) p = put64(p, e->usize);
            if (big_c) p = put64(p, e->csize);
            if (big_o) p = put64(p, e->offset);
        }
        p = put16(p, 0x5455);
        p = put16(p, 5);
        *p++ = 1;
        p = put32(p, (uint32_t)e->mtime);
        z->outlen = (size_t)(p - z->out);
    }
    if ((st = flush(z)) != CP_OK) return st;
    uint64_t cd_size = z->bytes - cd_off, n = z->nents;
    if (z->classic && (cd_off >= ZW_U32 || cd_size >= ZW_U32)) return z->err = CP_ELIMIT;
    uint8_t *p = z->out;
    if (n >= ZW_U16 || cd_size >= ZW_U32 || cd_off >= ZW_U32) {
        uint64_t end64 = z->bytes;
        p = put32(p, ZW_SIG_END64);
        p = put64(p, 44);           /* size of the rest of this record */
        p = put16(p, ZW_MADE_BY);
        p = put16(p, 45);
        p = put32(p, 0);            /* this disk */
        p = put32(p, 0);            /* the directory's disk */
        p = put64(p, n);
        p = put64(p, n);
        p = put64(p, cd_size);
        p = put64(p, cd_off);
        p = put32(p, ZW_SIG_LOC64);
        p = put32(p, 0);
        p = put64(p, end64);
        p = put32(p, 1);            /* disks */
    }
    p = put32(p, ZW_SIG_END);
    p = put16(p, 0);
    p = put16(p, 0);
    p = put16(p, n >= ZW_U16 ? ZW_U16 : (unsigned)n);
    p = put16(p, n >= ZW_U16 ? ZW_U16 : (unsigned)n);
    p = put32(p, clamp32(cd_size));
    p = put32(p, clamp32(cd_off));
    p = put16(p, 0);                /* comment */
    z->outlen = (size_t)(p - z->out);
    if ((st = flush(z)) != CP_OK) return st;
    z->state = ZW_FINISHED;
    return CP_OK;
}

uint64_t cp_zipw_bytes(const cp_zipw *z) { return z->bytes; }

void cp_zipw_free(cp_zipw *z)
{
    if (!z) return;
    if (z->zs_ready) deflateEnd(&z->zs);
    free(z->ents);
    cp_buf_free(&z->names);
    free(z->out);
    free(z);
}
