/* search.c -- the classic search syntax of the calls list (ui.md §3.5): parsing once per
 * request, matching once per candidate row.
 *
 * Matching runs over millions of rows per query, so it never allocates and avoids work:
 *   - needles are lowercased once at parse; the text side is folded byte by byte while
 *     comparing (ASCII folding only: bytes >= 0x80, i.e. non-ASCII letters, compare
 *     exactly);
 *   - the substring search filters 16 start positions at a time on the needle's first and
 *     last bytes (SSE2 where available, a byte loop elsewhere) and checks only those;
 *   - before walking a row's params JSON, the needle is searched in the raw JSON text: a
 *     string without escapes is a verbatim slice of that text, so when the text has no
 *     backslash at all and the needle is not in it, no param name or value can contain it
 *     and the walk is skipped. Most rows of a selective search end there.
 * Only rows that pass this prefilter walk the JSON structurally (to respect param names,
 * "_"-params and value boundaries). Strings with escapes are unescaped on the fly, in
 * windows of a fixed stack buffer for substring search.
 *
 * The params JSON is the product's own (cp_call.params_json), but it comes from storage;
 * the walker never reads outside it and treats malformed text as ending where it breaks
 * (params seen before still count). */
#include "query_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* The text limit is in characters; UTF-8 needs at most 4 bytes per character. */
#define SEARCH_MAX_BYTES (4 * (size_t)CP_SEARCH_MAX_TEXT)
/* Window for substring search in escaped strings: must exceed the longest needle
 * (SEARCH_MAX_BYTES) by enough to make progress per refill. */
#define SEARCH_WINDOW 8192

enum { TERM_ANY, TERM_PARAM, TERM_METHOD, TERM_POD };
enum { SIGN_REQUIRED, SIGN_EXCLUDED, SIGN_OPTIONAL };

typedef struct search_term {
    int kind;            /* TERM_* */
    int sign;            /* SIGN_* */
    const char *needle;  /* lowercased, in the arena */
    size_t nlen;
    const char *name;    /* TERM_PARAM: the param name, lowercased */
    size_t name_len;
} search_term;

struct cp_search {
    /* sorted required, excluded, optional: cheap rejections first */
    search_term terms[CP_SEARCH_MAX_TERMS];
    size_t nterms;
    size_t nopt;
    char arena[];        /* lowercased needles and names, at most the query's size */
};

/* ---- byte helpers ----------------------------------------------------------------- */

static inline unsigned char fold(unsigned char c) { return (unsigned char)(c - 'A') < 26u ? (unsigned char)(c | 0x20) : c; }

static inline int is_space(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

static inline int is_quote(unsigned char c) { return c == '"' || c == '\'' || c == '`'; }

/* Folded text == lowercased needle, over n bytes. */
static inline int eq_folded(const unsigned char *t, const unsigned char *lower, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fold(t[i]) != lower[i]) return 0;
    return 1;
}

/* A needle byte as a probe: text byte t matches lowercased byte c iff (t | mask) == c.
 * For a letter, t | 0x20 == c holds exactly for c and its uppercase form; other bytes
 * compare exactly. */
static inline unsigned char probe_mask(unsigned char c) { return (unsigned char)(c - 'a') < 26u ? 0x20 : 0; }

/* Case-insensitive substring search: 1 if the lowercased needle nd occurs in h.
 *
 * Candidates are filtered on two bytes at once, the needle's first and last (a pair
 * is far rarer than one byte: "s" is everywhere, "s...m" 6 bytes apart is not), 16
 * start positions per step with SSE2, then checked in full. */
int cp_ci_contains(const char *h, size_t hn, const char *nd, size_t nn)
{
    if (nn == 0) return 1;
    if (nn > hn) return 0;
    const unsigned char *t = (const unsigned char *)h, *ln = (const unsigned char *)nd;
    unsigned char c0 = ln[0], c1 = ln[nn - 1], m0 = probe_mask(c0), m1 = probe_mask(c1);
    size_t starts = hn - nn + 1, i = 0; /* candidate start positions: [0, starts) */
#ifdef __SSE2__
    const __m128i v0 = _mm_set1_epi8((char)c0), v1 = _mm_set1_epi8((char)c1);
    const __m128i k0 = _mm_set1_epi8((char)m0), k1 = _mm_set1_epi8((char)m1);
    for (; i + 16 <= starts; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(t + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(t + i + nn - 1));
        __m128i hit = _mm_and_si128(_mm_cmpeq_epi8(_mm_or_si128(a, k0), v0), _mm_cmpeq_epi8(_mm_or_si128(b, k1), v1));
        unsigned mask = (unsigned)_mm_movemask_epi8(hit);
        while (mask) {
            size_t k = i + (size_t)__builtin_ctz(mask);
            if (nn <= 2 || eq_folded(t + k + 1, ln + 1, nn - 2)) return 1;
            mask &= mask - 1;
        }
    }
#endif
    for (; i < starts; i++)
        if ((t[i] | m0) == c0 && (t[i + nn - 1] | m1) == c1 && (nn <= 2 || eq_folded(t + i + 1, ln + 1, nn - 2)))
            return 1;
    return 0;
}

/* ---- the params JSON, allocation-free ------------------------------------------------ */

/* One JSON string of the params text: raw content between the quotes. */
typedef struct js_str {
    const char *p;
    size_t n;
    int esc;   /* holds at least one backslash escape */
} js_str;

static const char *js_ws(const char *p, const char *end)
{
    while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) p++;
    return p;
}

/* p at an opening quote: fills s, returns the byte after the closing quote (NULL if there
 * is no string). Quotes and backslashes are found with memchr; only escaped strings look
 * closer, and only from their first backslash. may_esc = 0 says the whole text has no
 * backslash (known per row), which saves the backslash search per string. */
static const char *js_string(const char *p, const char *end, int may_esc, js_str *s)
{
    if (p >= end || *p != '"') return NULL;
    const char *start = ++p;
    int esc = 0;
    for (;;) {
        const char *q = memchr(p, '"', (size_t)(end - p));
        if (!q) return NULL;
        const char *b;
        while (may_esc && p < q && (b = memchr(p, '\\', (size_t)(q - p))) != NULL) {
            esc = 1;
            p = b + 2; /* the escaped byte: q itself when b == q - 1 */
        }
        if (p <= q) {
            s->p = start;
            s->n = (size_t)(q - start);
            s->esc = esc;
            return q + 1;
        }
        /* p == q + 1: that quote was escaped; look for the next one */
    }
}

static int js_hex4(const char *p, const char *end, unsigned *v)
{
    if (end - p < 4) return 0;
    unsigned x = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = (unsigned char)p[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') d = (c | 0x20) - 'a' + 10;
        else return 0;
        x = x << 4 | d;
    }
    *v = x;
    return 1;
}

static size_t utf8_put(unsigned cp, unsigned char out[4])
{
    if (cp < 0x80) { out[0] = (unsigned char)cp; return 1; }
    if (cp < 0x800) {
        out[0] = (unsigned char)(0xC0 | cp >> 6);
        out[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (unsigned char)(0xE0 | cp >> 12);
        out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        out[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | cp >> 18);
    out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    out[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Next unescaped bytes of string content [*pp, end): 1..4 bytes into out, *pp advanced.
 * Lenient (this is matching, not validation): an unknown escape yields the escaped byte,
 * a bad or lone-surrogate \u yields U+FFFD. Always advances. */
static size_t js_next(const char **pp, const char *end, unsigned char out[4])
{
    const char *p = *pp;
    if (*p != '\\' || end - p < 2) {
        *pp = p + 1;
        out[0] = (unsigned char)*p;
        return 1;
    }
    char e = p[1];
    *pp = p + 2;
    switch (e) {
    case 'n': out[0] = '\n'; return 1;
    case 't': out[0] = '\t'; return 1;
    case 'r': out[0] = '\r'; return 1;
    case 'b': out[0] = '\b'; return 1;
    case 'f': out[0] = '\f'; return 1;
    case 'u': break;
    default: out[0] = (unsigned char)e; return 1;
    }
    unsigned cp, lo;
    if (!js_hex4(p + 2, end, &cp)) return utf8_put(0xFFFD, out);
    *pp = p + 6;
    if (cp >= 0xD800 && cp <= 0xDBFF && end - (p + 6) >= 6 && p[6] == '\\' && p[7] == 'u' && js_hex4(p + 8, end, &lo) &&
        lo >= 0xDC00 && lo <= 0xDFFF) {
        *pp = p + 12;
        return utf8_put(0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00), out);
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) cp = 0xFFFD;
    return utf8_put(cp, out);
}

/* Substring search in an escaped string: unescape into windows of a fixed buffer; each
 * window keeps the previous one's last nn-1 bytes so a match across the cut is found. */
static __attribute__((noinline)) int esc_contains(const js_str *s, const char *nd, size_t nn)
{
    char win[SEARCH_WINDOW];
    size_t len = 0;
    const char *p = s->p, *end = s->p + s->n;
    while (p < end) {
        while (p < end && len + 4 <= sizeof win) len += js_next(&p, end, (unsigned char *)win + len);
        if (cp_ci_contains(win, len, nd, nn)) return 1;
        size_t keep = nn == 0 ? 0 : nn - 1 < len ? nn - 1 : len;
        memmove(win, win + len - keep, keep);
        len = keep;
    }
    return 0;
}

static int str_contains(const js_str *s, const char *nd, size_t nn)
{
    return s->esc ? esc_contains(s, nd, nn) : cp_ci_contains(s->p, s->n, nd, nn);
}

/* Param name == lowercased name (case-insensitive equality, streaming over escapes). */
static int str_equals(const js_str *s, const char *name, size_t nlen)
{
    if (!s->esc) return s->n == nlen && eq_folded((const unsigned char *)s->p, (const unsigned char *)name, nlen);
    const char *p = s->p, *end = s->p + s->n;
    size_t i = 0;
    unsigned char b[4];
    while (p < end) {
        size_t k = js_next(&p, end, b);
        if (i + k > nlen) return 0;
        for (size_t j = 0; j < k; j++)
            if (fold(b[j]) != (unsigned char)name[i + j]) return 0;
        i += k;
    }
    return i == nlen;
}

/* "_"-params are internal: unnamed atoms ignore them (ui.md §3.5). */
static int str_is_hidden(const js_str *s)
{
    if (s->n == 0) return 0;
    if (!s->esc) return s->p[0] == '_';
    const char *p = s->p;
    unsigned char b[4];
    return js_next(&p, s->p + s->n, b) >= 1 && b[0] == '_';
}

/* Walks {"name":["v",...],...}: 1 if a param the term looks at has a matching name
 * (unnamed terms) or value. Separators are not checked (validation is cp_params_each's
 * job); every step advances, and a break in the structure ends the walk. */
static int params_hit(const search_term *t, const char *json, size_t n, int may_esc)
{
    const char *p = js_ws(json, json + n), *end = json + n;
    if (p >= end || *p != '{') return 0;
    p++;
    for (;;) {
        p = js_ws(p, end);
        if (p < end && *p == ',') p = js_ws(p + 1, end);
        js_str name;
        if (p >= end || *p == '}' || !(p = js_string(p, end, may_esc, &name))) return 0;
        p = js_ws(p, end);
        if (p >= end || *p != ':') return 0;
        p = js_ws(p + 1, end);
        if (p >= end || *p != '[') return 0;
        p++;
        int want;
        if (t->kind == TERM_ANY) {
            want = !str_is_hidden(&name);
            if (want && str_contains(&name, t->needle, t->nlen)) return 1;
        } else {
            want = str_equals(&name, t->name, t->name_len);
        }
        for (;;) {
            p = js_ws(p, end);
            if (p < end && *p == ',') p = js_ws(p + 1, end);
            if (p >= end) return 0;
            if (*p == ']') break;
            js_str val;
            if (!(p = js_string(p, end, may_esc, &val))) return 0;
            if (want && str_contains(&val, t->needle, t->nlen)) return 1;
        }
        p++;
    }
}

/* ---- matching ---------------------------------------------------------------------- */

/* Per-row facts computed at most once, shared by the row's terms. */
typedef struct row_ctx {
    const cp_call_view *v;
    int json_esc;   /* -1 unknown, else whether params_json holds a backslash */
} row_ctx;

static int params_term_hits(const search_term *t, row_ctx *r)
{
    const cp_call_view *v = r->v;
    if (!v->params_json || v->params_json_len == 0) return 0;
    int raw_hit = cp_ci_contains(v->params_json, v->params_json_len, t->needle, t->nlen);
    if (r->json_esc < 0) r->json_esc = memchr(v->params_json, '\\', v->params_json_len) != NULL;
    /* without escapes every string is a verbatim slice of the text: no raw hit, no hit */
    if (!raw_hit && !r->json_esc) return 0;
    return params_hit(t, v->params_json, v->params_json_len, r->json_esc);
}

static int term_hits(const search_term *t, row_ctx *r)
{
    const cp_call_view *v = r->v;
    switch (t->kind) {
    case TERM_METHOD: return cp_ci_contains(v->method ? v->method : "", v->method_len, t->needle, t->nlen);
    case TERM_POD: return cp_ci_contains(v->pod ? v->pod : "", v->pod_len, t->needle, t->nlen);
    case TERM_ANY:
        if (cp_ci_contains(v->method ? v->method : "", v->method_len, t->needle, t->nlen)) return 1;
        if (cp_ci_contains(v->pod ? v->pod : "", v->pod_len, t->needle, t->nlen)) return 1;
        /* fallthrough */
    default:
        return params_term_hits(t, r);
    }
}

int cp_search_match(const cp_search *q, const cp_call_view *v)
{
    row_ctx r = {v, -1};
    size_t i = 0;
    for (; i < q->nterms && q->terms[i].sign == SIGN_REQUIRED; i++)
        if (!term_hits(&q->terms[i], &r)) return 0;
    for (; i < q->nterms && q->terms[i].sign == SIGN_EXCLUDED; i++)
        if (term_hits(&q->terms[i], &r)) return 0;
    if (i == q->nterms) return 1; /* no optional terms */
    for (; i < q->nterms; i++)
        if (term_hits(&q->terms[i], &r)) return 1;
    return 0;
}

/* ---- parsing ----------------------------------------------------------------------- */


/* Copies s[0..n) lowercased into the arena; returns the copy. */
static const char *arena_lower(cp_search *q, size_t *used, const char *s, size_t n)
{
    char *d = q->arena + *used;
    for (size_t i = 0; i < n; i++) d[i] = (char)fold((unsigned char)s[i]);
    *used += n;
    return d;
}

/* A phrase starting at s[i] (a quote): its content's bounds, or -1 if unterminated. */
static int scan_phrase(const char *s, size_t n, size_t i, size_t *from, size_t *to)
{
    const char *close = memchr(s + i + 1, s[i], n - i - 1);
    if (!close) return -1;
    *from = i + 1;
    *to = (size_t)(close - s);
    return 0;
}

static size_t word_end(const char *s, size_t n, size_t i)
{
    while (i < n && !is_space((unsigned char)s[i])) i++;
    return i;
}

static int is_name(const char *s, size_t n, const char *lit)
{
    size_t m = strlen(lit);
    return n == m && eq_folded((const unsigned char *)s, (const unsigned char *)lit, n);
}

/* Reads the term at s[*i] (not a space) into t; *i moves past it. */
static int parse_term(cp_search *q, size_t *used, const char *s, size_t n, size_t *i, search_term *t, char *err,
                      size_t errlen)
{
    size_t at = *i, from, to, next;
    t->sign = SIGN_OPTIONAL;
    /* a lone "+" or "-" is a word, not a sign */
    if ((s[at] == '+' || s[at] == '-') && at + 1 < n && !is_space((unsigned char)s[at + 1])) {
        t->sign = s[at] == '+' ? SIGN_REQUIRED : SIGN_EXCLUDED;
        at++;
    }
    t->kind = TERM_ANY;
    t->name = NULL;
    t->name_len = 0;
    if (is_quote((unsigned char)s[at])) {
        if (scan_phrase(s, n, at, &from, &to) < 0) return cp_query_fail(err, errlen, "unterminated quote at offset %zu", at);
        next = to + 1;
    } else {
        next = word_end(s, n, at);
        from = at;
        to = next;
        const char *eq = s[at] == '$' ? memchr(s + at + 1, '=', next - at - 1) : NULL;
        if (eq) { /* $name=value; "$name" alone stays a word */
            size_t name_from = at + 1, name_to = (size_t)(eq - s);
            if (name_to == name_from) return cp_query_fail(err, errlen, "empty param name at offset %zu", at);
            size_t v = name_to + 1;
            if (v < n && is_quote((unsigned char)s[v])) {
                if (scan_phrase(s, n, v, &from, &to) < 0)
                    return cp_query_fail(err, errlen, "unterminated quote at offset %zu", v);
                next = to + 1;
            } else {
                from = v;
            }
            const char *name = s + name_from;
            size_t nlen = name_to - name_from;
            if (is_name(name, nlen, "method")) t->kind = TERM_METHOD;
            else if (is_name(name, nlen, "node.name")) t->kind = TERM_POD;
            else {
                t->kind = TERM_PARAM;
                t->name = arena_lower(q, used, name, nlen);
                t->name_len = nlen;
            }
        }
    }
    t->needle = arena_lower(q, used, s + from, to - from);
    t->nlen = to - from;
    *i = next;
    return CP_OK;
}

/* Keeps required, then excluded, then optional terms, each in query order. */
static void sort_terms(cp_search *q)
{
    search_term tmp[CP_SEARCH_MAX_TERMS];
    size_t k = 0;
    for (int sign = SIGN_REQUIRED; sign <= SIGN_OPTIONAL; sign++)
        for (size_t i = 0; i < q->nterms; i++)
            if (q->terms[i].sign == sign) tmp[k++] = q->terms[i];
    memcpy(q->terms, tmp, k * sizeof tmp[0]);
    q->nopt = 0;
    for (size_t i = 0; i < q->nterms; i++) q->nopt += q->terms[i].sign == SIGN_OPTIONAL;
}

static size_t utf8_chars(const char *s, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++) c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

int cp_search_parse(const char *s, size_t n, cp_search **out, char *err, size_t errlen)
{
    *out = NULL;
    if (err && errlen) err[0] = '\0';
    if (!s) n = 0;
    if (n > SEARCH_MAX_BYTES || utf8_chars(s, n) > CP_SEARCH_MAX_TEXT)
        return cp_query_fail(err, errlen, "query longer than %d characters", CP_SEARCH_MAX_TEXT);
    /* needles and names are disjoint slices of the text: n bytes of arena suffice */
    cp_search *q = calloc(1, sizeof *q + n + 1);
    if (!q) return CP_ENOMEM;
    size_t used = 0, i = 0;
    for (;;) {
        while (i < n && is_space((unsigned char)s[i])) i++;
        if (i >= n) break;
        if (q->nterms == CP_SEARCH_MAX_TERMS) {
            free(q);
            return cp_query_fail(err, errlen, "more than %d terms", CP_SEARCH_MAX_TERMS);
        }
        int st = parse_term(q, &used, s, n, &i, &q->terms[q->nterms], err, errlen);
        if (st != CP_OK) {
            free(q);
            return st;
        }
        q->nterms++;
    }
    sort_terms(q);
    *out = q;
    return CP_OK;
}

void cp_search_free(cp_search *q) { free(q); }

int cp_search_is_empty(const cp_search *q) { return q->nterms == 0; }

size_t cp_search_required_params(const cp_search *q,
                                 void (*fn)(void *ud, const char *name, size_t nlen, const char *val, size_t vlen),
                                 void *ud)
{
    size_t count = 0;
    for (size_t i = 0; i < q->nterms; i++) {
        const search_term *t = &q->terms[i];
        /* an optional term binds only when it is the only one: then it must match */
        int binding = t->sign == SIGN_REQUIRED || (t->sign == SIGN_OPTIONAL && q->nopt == 1);
        if (t->kind != TERM_PARAM || !binding) continue;
        if (fn) fn(ud, t->name, t->name_len, t->needle, t->nlen);
        count++;
    }
    return count;
}

size_t cp_search_needles(const cp_search *q, const char **needles, size_t *lens, size_t max)
{
    const search_term *best = NULL;
    for (size_t i = 0; i < q->nterms; i++) {
        const search_term *t = &q->terms[i];
        if (t->sign == SIGN_REQUIRED && (!best || t->nlen > best->nlen)) best = t;
    }
    if (best) {
        if (best->nlen == 0 || max < 1) return 0;
        needles[0] = best->needle;
        lens[0] = best->nlen;
        return 1;
    }
    size_t n = 0;
    for (size_t i = 0; i < q->nterms; i++) {
        const search_term *t = &q->terms[i];
        if (t->sign != SIGN_OPTIONAL) continue;
        if (t->nlen == 0 || n == max) return 0;
        needles[n] = t->needle;
        lens[n++] = t->nlen;
    }
    return n;
}
