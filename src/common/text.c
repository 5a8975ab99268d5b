/* text.c -- UTF-16BE (Java strings on the wire) to UTF-8, and JSON string escaping. */
#include "cp_common.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static int put_utf8(cp_buf *out, uint32_t cp)
{
    uint8_t tmp[4];
    size_t n;
    if (cp < 0x80) {
        tmp[0] = (uint8_t)cp;
        n = 1;
    } else if (cp < 0x800) {
        tmp[0] = (uint8_t)(0xC0 | (cp >> 6));
        tmp[1] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        tmp[0] = (uint8_t)(0xE0 | (cp >> 12));
        tmp[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        tmp[2] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        tmp[0] = (uint8_t)(0xF0 | (cp >> 18));
        tmp[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
        tmp[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        tmp[3] = (uint8_t)(0x80 | (cp & 0x3F));
        n = 4;
    }
    return cp_buf_append(out, tmp, n);
}

int cp_str16_to_utf8(cp_buf *out, cp_str16 s)
{
    if (cp_buf_reserve(out, (size_t)s.n * 3) != CP_OK) return CP_ENOMEM;
    uint32_t i = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* four ASCII units at a time: high bytes zero, low bytes below 0x80 (most text is
     * ASCII: method names, URLs, SQL) */
    for (; i + 4 <= s.n; i += 4) {
        uint64_t w;
        memcpy(&w, s.be + 2 * (size_t)i, 8);
        if (w & 0x80FF80FF80FF80FFULL) break;
        uint8_t *o = out->data + out->len;
        o[0] = (uint8_t)(w >> 8);
        o[1] = (uint8_t)(w >> 24);
        o[2] = (uint8_t)(w >> 40);
        o[3] = (uint8_t)(w >> 56);
        out->len += 4;
    }
#endif
    for (; i < s.n; i++) {
        uint32_t u = ((uint32_t)s.be[2 * i] << 8) | s.be[2 * i + 1];
        if (u < 0x80) { /* capacity reserved above: ASCII never reallocates */
            out->data[out->len++] = (uint8_t)u;
            continue;
        }
        if (u >= 0xD800 && u <= 0xDBFF && i + 1 < s.n) {
            uint32_t lo = ((uint32_t)s.be[2 * i + 2] << 8) | s.be[2 * i + 3];
            if (lo >= 0xDC00 && lo <= 0xDFFF) {
                if (put_utf8(out, 0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00)) != CP_OK) return CP_ENOMEM;
                i++;
                continue;
            }
        }
        if (u >= 0xD800 && u <= 0xDFFF) u = 0xFFFD; /* unpaired surrogate */
        if (put_utf8(out, u) != CP_OK) return CP_ENOMEM;
    }
    return CP_OK;
}

int cp_str16_eq_ascii(cp_str16 s, const char *ascii)
{
    size_t n = strlen(ascii);
    if (n != s.n) return 0;
    for (size_t i = 0; i < n; i++)
        if (s.be[2 * i] != 0 || s.be[2 * i + 1] != (uint8_t)ascii[i]) return 0;
    return 1;
}

void cp_set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || errlen == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

void cp_vset_err_at(char *err, size_t errlen, uint64_t at, const char *fmt, va_list ap)
{
    if (!err || errlen == 0) return;
    int n = vsnprintf(err, errlen, fmt, ap);
    if (n < 0) n = 0;
    if ((size_t)n < errlen) snprintf(err + n, errlen - (size_t)n, " at offset %" PRIu64, at);
}

size_t cp_utf8_seq(const uint8_t *p, size_t left)
{
    uint8_t c = p[0];
    size_t n;
    uint32_t cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; }
    else return 0;
    if (left < n) return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (p[i] & 0x3F);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    return n;
}

int cp_utf8_repair(cp_buf *out, const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    if (cp_buf_reserve(out, n) != CP_OK) return CP_ENOMEM;
    for (size_t i = 0; i < n;) {
        size_t k = cp_utf8_seq(p + i, n - i);
        int st = k ? cp_buf_append(out, p + i, k) : cp_buf_append(out, "\xEF\xBF\xBD", 3);
        if (st != CP_OK) return st;
        i += k ? k : 1;
    }
    return CP_OK;
}

int cp_json_str(cp_buf *out, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const uint8_t *p = (const uint8_t *)s;
    if (cp_buf_reserve(out, n + 2) != CP_OK) return CP_ENOMEM;
    cp_buf_putc(out, '"');
    size_t i = 0;
    while (i < n) {
        /* runs of plain ASCII go in one copy: they are most of every string */
        size_t j = i;
        while (j < n && p[j] >= 0x20 && p[j] < 0x80 && p[j] != '"' && p[j] != '\\') j++;
        if (j > i) {
            if (cp_buf_append(out, p + i, j - i) != CP_OK) return CP_ENOMEM;
            i = j;
            continue;
        }
        uint8_t c = p[i];
        int st = CP_OK;
        if (c == '"') st = cp_buf_append(out, "\\\"", 2);
        else if (c == '\\') st = cp_buf_append(out, "\\\\", 2);
        else if (c == '\n') st = cp_buf_append(out, "\\n", 2);
        else if (c == '\r') st = cp_buf_append(out, "\\r", 2);
        else if (c == '\t') st = cp_buf_append(out, "\\t", 2);
        else if (c < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
            st = cp_buf_append(out, e, 6);
        } else {
            size_t k = cp_utf8_seq(p + i, n - i);
            if (k == 0) {
                st = cp_buf_append(out, "\xEF\xBF\xBD", 3);
                k = 1;
            } else {
                st = cp_buf_append(out, p + i, k);
            }
            i += k;
            if (st != CP_OK) return st;
            continue;
        }
        if (st != CP_OK) return st;
        i++;
    }
    return cp_buf_putc(out, '"');
}

int cp_json_str16(cp_buf *out, cp_str16 s)
{
    cp_buf tmp;
    cp_buf_init(&tmp);
    int st = cp_str16_to_utf8(&tmp, s);
    if (st == CP_OK) st = cp_json_str(out, (const char *)tmp.data, tmp.len);
    cp_buf_free(&tmp);
    return st;
}

int cp_buf_put_varint(cp_buf *b, uint32_t v)
{
    uint8_t tmp[5];
    size_t n = 0;
    do {
        uint8_t c = v & 0x7F;
        v >>= 7;
        tmp[n++] = (uint8_t)(c | (v ? 0x80 : 0));
    } while (v);
    return cp_buf_append(b, tmp, n);
}

/* The code point of the UTF-8 sequence at p (len bytes, already checked by cp_utf8_seq). */
static uint32_t utf8_decode(const uint8_t *p, size_t len)
{
    if (len == 1) return p[0];
    uint32_t cp = p[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) cp = (cp << 6) | (p[i] & 0x3F);
    return cp;
}

int cp_buf_put_varstring(cp_buf *b, const char *s, size_t n)
{
    const uint8_t *p = (const uint8_t *)s;
    uint64_t units = 0;
    for (size_t i = 0; i < n;) {
        size_t len = cp_utf8_seq(p + i, n - i);
        units += len == 4 ? 2 : 1;
        i += len ? len : 1;
    }
    if (units > INT32_MAX) return CP_ELIMIT;
    int st = cp_buf_put_varint(b, (uint32_t)units);
    if (st == CP_OK) st = cp_buf_reserve(b, (size_t)units * 2);
    if (st != CP_OK) return st;
    uint8_t *o = b->data + b->len;
    for (size_t i = 0; i < n;) {
        size_t len = cp_utf8_seq(p + i, n - i);
        uint32_t cp = len ? utf8_decode(p + i, len) : 0xFFFD;
        i += len ? len : 1;
        if (cp >= 0x10000) { /* a surrogate pair */
            cp -= 0x10000;
            uint32_t hi = 0xD800 | (cp >> 10), lo = 0xDC00 | (cp & 0x3FF);
            *o++ = (uint8_t)(hi >> 8), *o++ = (uint8_t)hi, *o++ = (uint8_t)(lo >> 8), *o++ = (uint8_t)lo;
        } else {
            *o++ = (uint8_t)(cp >> 8), *o++ = (uint8_t)cp;
        }
    }
    b->len = (size_t)(o - b->data);
    return CP_OK;
}

int cp_parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    if (!*s || strlen(s) > 19) return CP_EINVAL; /* 19 digits cannot overflow 64 bits */
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9') return CP_EINVAL;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    if (v > max) return CP_EINVAL;
    *out = v;
    return CP_OK;
}
