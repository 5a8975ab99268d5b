/* params.c -- reading a call's params JSON ({"name":["v",...],...}, cp_call.params_json)
 * for output: strict, because what it hands out goes into API responses.
 *
 * Accepted: exactly that shape (JSON white space allowed between tokens), strings of
 * valid UTF-8 without raw control characters, the JSON escapes, \u surrogates only in
 * pairs. Strings without escapes are handed out in place; escaped ones are unescaped
 * into one buffer that grows on demand and never beyond the input's size (unescaping
 * only shrinks text). The matcher (search.c) has its own lenient, allocation-free walk. */
#include "query/cp_query.h"

#include <string.h>

typedef struct pj {
    const unsigned char *p, *end;
    cp_buf buf;   /* unescaped strings: the name first, then the current value */
} pj;

static void pj_ws(pj *j)
{
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}

/* Skips white space, then consumes c if it is next. */
static int pj_take(pj *j, unsigned char c)
{
    pj_ws(j);
    if (j->p >= j->end || *j->p != c) return 0;
    j->p++;
    return 1;
}

static int pj_hex4(const unsigned char *p, const unsigned char *end, unsigned *v)
{
    if (end - p < 4) return 0;
    unsigned x = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') d = (c | 0x20) - 'a' + 10;
        else return 0;
        x = x << 4 | d;
    }
    *v = x;
    return 1;
}

/* Length of the valid UTF-8 sequence at p (lead byte >= 0x80), 0 if invalid: no
 * overlongs, no surrogates, nothing above U+10FFFF. */
static size_t pj_utf8(const unsigned char *p, const unsigned char *end)
{
    unsigned c = p[0], cp;
    size_t k;
    if (c >= 0xC2 && c <= 0xDF) { k = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { k = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { k = 4; cp = c & 0x07; }
    else return 0;
    if ((size_t)(end - p) < k) return 0;
    for (size_t i = 1; i < k; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    if ((k == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return k;
}

static int pj_put_cp(cp_buf *b, unsigned cp)
{
    unsigned char u[4];
    size_t k;
    if (cp < 0x80) { u[0] = (unsigned char)cp; k = 1; }
    else if (cp < 0x800) { u[0] = (unsigned char)(0xC0 | cp >> 6); u[1] = (unsigned char)(0x80 | (cp & 0x3F)); k = 2; }
    else if (cp < 0x10000) {
        u[0] = (unsigned char)(0xE0 | cp >> 12);
        u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp & 0x3F));
        k = 3;
    } else {
        u[0] = (unsigned char)(0xF0 | cp >> 18);
        u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        u[3] = (unsigned char)(0x80 | (cp & 0x3F));
        k = 4;
    }
    return cp_buf_append(b, u, k);
}

/* The escape at j->p (after its backslash) appended to the buffer. */
static int pj_escape(pj *j)
{
    if (j->p >= j->end) return CP_ECORRUPT;
    unsigned char e = *j->p++;
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    const char *k = e ? strchr(from, e) : NULL;
    if (k) return cp_buf_putc(&j->buf, (uint8_t)to[k - from]);
    unsigned cp, lo;
    if (e != 'u' || !pj_hex4(j->p, j->end, &cp)) return CP_ECORRUPT;
    j->p += 4;
    if (cp >= 0xDC00 && cp <= 0xDFFF) return CP_ECORRUPT; /* a low surrogate first */
    if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (j->end - j->p < 6 || j->p[0] != '\\' || j->p[1] != 'u' || !pj_hex4(j->p + 2, j->end, &lo) || lo < 0xDC00 ||
            lo > 0xDFFF)
            return CP_ECORRUPT;
        j->p += 6;
        cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
    }
    return pj_put_cp(&j->buf, cp);
}

/* A string at j->p (after white space). *s, *n: its text, in place when it has no
 * escape, else in the buffer from its current length on (the caller's earlier strings
 * there stay intact). */
static int pj_string(pj *j, const char **s, size_t *n)
{
    if (!pj_take(j, '"')) return CP_ECORRUPT;
    const unsigned char *start = j->p;
    size_t from = j->buf.len;
    int escaped = 0;
    for (;;) {
        if (j->p >= j->end) return CP_ECORRUPT;
        unsigned char c = *j->p;
        if (c == '"') break;
        if (c < 0x20) return CP_ECORRUPT;
        if (c == '\\') {
            if (!escaped && cp_buf_append(&j->buf, start, (size_t)(j->p - start)) != CP_OK) return CP_ENOMEM;
            escaped = 1;
            j->p++;
            int st = pj_escape(j);
            if (st != CP_OK) return st;
            continue;
        }
        size_t k = c < 0x80 ? 1 : pj_utf8(j->p, j->end);
        if (k == 0) return CP_ECORRUPT;
        if (escaped && cp_buf_append(&j->buf, j->p, k) != CP_OK) return CP_ENOMEM;
        j->p += k;
    }
    if (escaped) {
        *s = (const char *)j->buf.data + from;
        *n = j->buf.len - from;
    } else {
        *s = (const char *)start;
        *n = (size_t)(j->p - start);
    }
    j->p++;
    return CP_OK;
}

/* One "name":[values] member; fn's non-zero result comes back through *stop. */
static int pj_member(pj *j, cp_params_name_fn name_fn, cp_params_fn fn, void *ud, int *stop)
{
    const char *name, *val;
    size_t nlen, vlen;
    cp_buf_reset(&j->buf);
    int st = pj_string(j, &name, &nlen);
    if (st != CP_OK) return st;
    if (!pj_take(j, ':') || !pj_take(j, '[')) return CP_ECORRUPT;
    if (name_fn && (*stop = name_fn(ud, name, nlen)) != 0) return CP_OK;
    if (pj_take(j, ']')) return CP_OK;
    /* an escaped name sits at the buffer's start (never empty: an escape gives >= 1 byte) */
    size_t keep = j->buf.len;
    do {
        j->buf.len = keep;
        pj_ws(j);
        st = pj_string(j, &val, &vlen);
        if (st != CP_OK) return st;
        /* the buffer may have moved while the value grew it: re-point the name */
        if (keep) name = (const char *)j->buf.data;
        *stop = fn(ud, name, nlen, val, vlen);
        if (*stop) return CP_OK;
    } while (pj_take(j, ','));
    return pj_take(j, ']') ? CP_OK : CP_ECORRUPT;
}

int cp_params_each(const char *json, size_t n, cp_params_fn fn, void *ud)
{
    return cp_params_walk(json, n, NULL, fn, ud);
}

int cp_params_walk(const char *json, size_t n, cp_params_name_fn name_fn, cp_params_fn fn, void *ud)
{
    if (!json) return CP_ECORRUPT;
    pj j = {(const unsigned char *)json, (const unsigned char *)json + n, {0}};
    cp_buf_init(&j.buf);
    int st = CP_OK, stop = 0;
    if (!pj_take(&j, '{')) st = CP_ECORRUPT;
    else if (!pj_take(&j, '}')) {
        do {
            pj_ws(&j);
            st = pj_member(&j, name_fn, fn, ud, &stop);
        } while (st == CP_OK && !stop && pj_take(&j, ','));
        if (st == CP_OK && !stop && !pj_take(&j, '}')) st = CP_ECORRUPT;
    }
    if (st == CP_OK && !stop) {
        pj_ws(&j);
        if (j.p != j.end) st = CP_ECORRUPT;
    }
    cp_buf_free(&j.buf);
    return st != CP_OK ? st : stop;
}
