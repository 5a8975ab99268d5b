/* ids.c -- the small text forms of the calls API: sort column names, call ids, keyset
 * cursors, and the FNV-1a hash that binds a cursor to its filters.
 *
 * All parsers take text from a query string: they accept exactly what the formatters
 * write (one text per value: no leading zeros, no "+", no padding), so a parsed id or
 * cursor re-formats to the same text, and reject everything else before touching it. */
#include "query/cp_query.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

/* ---- sort columns ------------------------------------------------------------------ */

static const char *const sort_names[CP_SORT_COUNT] = {
    [CP_SORT_TS] = "ts_ms",
    [CP_SORT_DURATION] = "duration_ms",
    [CP_SORT_CPU] = "cpu_time",
    [CP_SORT_WAIT] = "wait_time",
    [CP_SORT_MEMORY] = "memory_used",
    [CP_SORT_SUSPEND] = "suspend_ms",
    [CP_SORT_CALLS] = "calls",
    [CP_SORT_TRANSACTIONS] = "transactions",
    [CP_SORT_QUEUE] = "queue_wait_ms",
    [CP_SORT_LOGS_GENERATED] = "logs_generated",
    [CP_SORT_LOGS_WRITTEN] = "logs_written",
    [CP_SORT_FILE_READ] = "file_read",
    [CP_SORT_FILE_WRITTEN] = "file_written",
    [CP_SORT_NET_READ] = "net_read",
    [CP_SORT_NET_WRITTEN] = "net_written",
    [CP_SORT_METHOD] = "method",
    [CP_SORT_NAMESPACE] = "namespace",
    [CP_SORT_SERVICE] = "service",
    [CP_SORT_POD] = "pod",
    [CP_SORT_RESTART] = "restart_ms",
    [CP_SORT_THREAD] = "thread",
    [CP_SORT_ERROR] = "error",
};

const char *cp_sort_name(cp_sort_col col)
{
    return (unsigned)col < CP_SORT_COUNT ? sort_names[col] : NULL;
}

int cp_sort_parse(const char *s, size_t n, cp_sort_col *col, int *desc)
{
    if (n == 0) { /* newest first: the list's natural order */
        *col = CP_SORT_TS;
        *desc = 1;
        return CP_OK;
    }
    int d = s[0] == '-';
    if (s[0] == '-' || s[0] == '+') {
        s++;
        n--;
    }
    for (int c = 0; c < CP_SORT_COUNT; c++) {
        if (strlen(sort_names[c]) == n && memcmp(sort_names[c], s, n) == 0) {
            *col = (cp_sort_col)c;
            *desc = d;
            return CP_OK;
        }
    }
    return CP_EINVAL;
}

/* ---- call ids ---------------------------------------------------------------------- */

void cp_call_id_format(const cp_call_ref *r, char *out)
{
    snprintf(out, CP_CALL_ID_MAX, "%" PRId64 "-%" PRId64 "-%" PRId32 "-%" PRId32 "-%" PRId32 "-%016" PRIx64, r->ts_ms,
             r->restart_ms, r->trace_file_index, r->buffer_offset, r->record_index, r->pod_hash);
}

/* A decimal in [lo, hi] at s[*i]: optional '-', digits, no leading zero and no "-0"
 * (each value has one text). lo < 0 < hi. */
static int id_dec(const char *s, size_t n, size_t *i, int64_t lo, int64_t hi, int64_t *v)
{
    size_t k = *i;
    int neg = k < n && s[k] == '-';
    k += (size_t)neg;
    uint64_t limit = neg ? (uint64_t)(-(lo + 1)) + 1 : (uint64_t)hi, mag = 0;
    size_t first = k;
    while (k < n && s[k] >= '0' && s[k] <= '9') {
        unsigned d = (unsigned)(s[k] - '0');
        if (mag > (limit - d) / 10) return CP_EINVAL;
        mag = mag * 10 + d;
        k++;
    }
    size_t digits = k - first;
    if (digits == 0 || (digits > 1 && s[first] == '0') || (neg && mag == 0)) return CP_EINVAL;
    *v = neg ? (int64_t)(0 - mag) : (int64_t)mag; /* two's complement: INT64_MIN included */
    *i = k;
    return CP_OK;
}

static int id_sep(const char *s, size_t n, size_t *i)
{
    if (*i >= n || s[*i] != '-') return 0;
    (*i)++;
    return 1;
}

int cp_call_id_parse(const char *s, size_t n, cp_call_ref *out)
{
    if (!s || n >= CP_CALL_ID_MAX) return CP_EINVAL;
    int64_t f[5];
    /* epoch ms may be anything an agent's clock said; the int32 fields too (hostile
     * agents send negatives) */
    static const int64_t lo[5] = {INT64_MIN, INT64_MIN, INT32_MIN, INT32_MIN, INT32_MIN};
    static const int64_t hi[5] = {INT64_MAX, INT64_MAX, INT32_MAX, INT32_MAX, INT32_MAX};
    size_t i = 0;
    for (int k = 0; k < 5; k++)
        if (id_dec(s, n, &i, lo[k], hi[k], &f[k]) != CP_OK || !id_sep(s, n, &i)) return CP_EINVAL;
    if (n - i != 16) return CP_EINVAL;
    uint64_t h = 0;
    for (; i < n; i++) {
        char c = s[i];
        unsigned d;
        if (c >= '0' && c <= '9') d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') d = (unsigned)(c - 'a' + 10);
        else return CP_EINVAL;
        h = h << 4 | d;
    }
    out->ts_ms = f[0];
    out->restart_ms = f[1];
    out->trace_file_index = (int32_t)f[2];
    out->buffer_offset = (int32_t)f[3];
    out->record_index = (int32_t)f[4];
    out->pod_hash = h;
    return CP_OK;
}

/* ---- cursors ------------------------------------------------------------------------
 *
 * Binary form, big-endian, then base64url without padding:
 *   u8 version (1), u8 sort column, u8 desc (0/1), u64 filter_hash, i64 issued_ms,
 *   ref: i64 ts_ms, i64 restart_ms, i32 trace_file_index, i32 buffer_offset,
 *        i32 record_index, u64 pod_hash,
 *   key: i64 num for a numeric column | u16 length (<= 1023) + bytes for a text column.
 * At most 55 + 2 + 1023 = 1080 bytes -> 1440 characters, within CP_CURSOR_MAX. The
 * cursor is not signed: a forged one only moves the caller's own page start. */

#define CURSOR_VERSION 1
#define CURSOR_FIXED 55
#define CURSOR_TEXT_MAX (sizeof(((cp_sort_key *)0)->text) - 1)
#define CURSOR_BIN_MAX (CURSOR_FIXED + 2 + CURSOR_TEXT_MAX)

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static size_t b64_encode(const uint8_t *p, size_t n, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        out[o++] = b64_alphabet[v >> 18];
        out[o++] = b64_alphabet[v >> 12 & 63];
        out[o++] = b64_alphabet[v >> 6 & 63];
        out[o++] = b64_alphabet[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        out[o++] = b64_alphabet[v >> 18];
        out[o++] = b64_alphabet[v >> 12 & 63];
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        out[o++] = b64_alphabet[v >> 18];
        out[o++] = b64_alphabet[v >> 12 & 63];
        out[o++] = b64_alphabet[v >> 6 & 63];
    }
    out[o] = '\0';
    return o;
}

static int b64_value(char c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '-') return 62;
    if (c == '_') return 63;
    return -1;
}

/* Strict: alphabet only, no padding, a tail of 2 or 3 characters whose unused bits are
 * zero (so each byte string has exactly one text). Returns the byte count, or -1. */
static long b64_decode(const char *s, size_t n, uint8_t *out, size_t cap)
{
    if (n % 4 == 1 || n / 4 * 3 + (n % 4 ? n % 4 - 1 : 0) > cap) return -1;
    size_t o = 0;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value(s[i]);
        if (v < 0) return -1;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (uint8_t)(acc >> bits);
            acc &= (1u << bits) - 1;
        }
    }
    if (acc != 0) return -1; /* leftover bits must be zero */
    return (long)o;
}

void cp_cursor_format(const cp_cursor *c, char *out)
{
    uint8_t b[CURSOR_BIN_MAX], *p = b;
    const cp_sort_key *k = &c->key;
    *p++ = CURSOR_VERSION;
    *p++ = (uint8_t)k->col;
    *p++ = k->desc != 0;
    cp_put_be64(p, c->filter_hash), p += 8;
    cp_put_be64(p, (uint64_t)c->issued_ms), p += 8;
    cp_put_be64(p, (uint64_t)k->ref.ts_ms), p += 8;
    cp_put_be64(p, (uint64_t)k->ref.restart_ms), p += 8;
    cp_put_be32(p, (uint32_t)k->ref.trace_file_index), p += 4;
    cp_put_be32(p, (uint32_t)k->ref.buffer_offset), p += 4;
    cp_put_be32(p, (uint32_t)k->ref.record_index), p += 4;
    cp_put_be64(p, k->ref.pod_hash), p += 8;
    if (cp_sort_is_text(k->col)) {
        size_t len = k->text_len < CURSOR_TEXT_MAX ? k->text_len : CURSOR_TEXT_MAX; /* the key's own cut */
        *p++ = (uint8_t)(len >> 8);
        *p++ = (uint8_t)len;
        memcpy(p, k->text, len);
        p += len;
    } else {
        cp_put_be64(p, (uint64_t)k->num), p += 8;
    }
    b64_encode(b, (size_t)(p - b), out);
}

int cp_cursor_parse(const char *s, size_t n, cp_cursor *out)
{
    uint8_t b[CURSOR_BIN_MAX];
    if (!s || n >= CP_CURSOR_MAX) return CP_EINVAL;
    long len = b64_decode(s, n, b, sizeof b);
    if (len < CURSOR_FIXED || b[0] != CURSOR_VERSION || b[1] >= CP_SORT_COUNT || b[2] > 1) return CP_EINVAL;
    cp_cursor c;
    memset(&c, 0, sizeof c);
    cp_sort_key *k = &c.key;
    k->col = (cp_sort_col)b[1];
    k->desc = b[2];
    const uint8_t *p = b + 3;
    c.filter_hash = cp_be64(p), p += 8;
    c.issued_ms = (int64_t)cp_be64(p), p += 8;
    k->ref.ts_ms = (int64_t)cp_be64(p), p += 8;
    k->ref.restart_ms = (int64_t)cp_be64(p), p += 8;
    k->ref.trace_file_index = (int32_t)cp_be32(p), p += 4;
    k->ref.buffer_offset = (int32_t)cp_be32(p), p += 4;
    k->ref.record_index = (int32_t)cp_be32(p), p += 4;
    k->ref.pod_hash = cp_be64(p), p += 8;
    size_t left = (size_t)len - CURSOR_FIXED;
    if (cp_sort_is_text(k->col)) {
        if (left < 2) return CP_EINVAL;
        size_t tlen = (size_t)p[0] << 8 | p[1];
        if (tlen > CURSOR_TEXT_MAX || left != 2 + tlen) return CP_EINVAL;
        memcpy(k->text, p + 2, tlen);
        k->text[tlen] = '\0';
        k->text_len = tlen;
    } else {
        if (left != 8) return CP_EINVAL;
        k->num = (int64_t)cp_be64(p);
    }
    *out = c;
    return CP_OK;
}

/* ---- hashing ----------------------------------------------------------------------- */

uint64_t cp_fnv64(uint64_t seed, const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t h = seed;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}
