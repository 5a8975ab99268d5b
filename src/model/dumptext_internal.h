/* dumptext_internal.h -- what the text-dump parsers (td.c, top.c, gclog.c) share: an arena
 * that owns every string of one parsed value, a line iterator and bounded scanners over
 * spans of untrusted text (never NUL-terminated: the input may hold NUL bytes anywhere).
 * The arena and the number/time readers live in textscan.c.
 */
#ifndef DUMPTEXT_INTERNAL_H
#define DUMPTEXT_INTERNAL_H

#include "cp_dumptext.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* ---- arena ------------------------------------------------------------------------------ */

typedef struct dt_block dt_block;
typedef struct dt_arena {
    dt_block *head; /* newest block first */
} dt_arena;

void dt_arena_init(dt_arena *a);
void dt_arena_free(dt_arena *a);
/* n bytes aligned for any scalar; NULL when out of memory. */
void *dt_alloc(dt_arena *a, size_t n);
/* A NUL-terminated copy of p[0..n); "" (static) when n == 0; NULL when out of memory. */
const char *dt_strdup(dt_arena *a, const char *p, size_t n);

/* Writes a reason into err (when given) and returns st. */
int dt_fail(char *err, size_t errlen, int st, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* ---- spans and lines -------------------------------------------------------------------- */

typedef struct dt_span {
    const char *p;
    size_t n;
} dt_span;

typedef struct dt_lines {
    const char *p;
    size_t n, pos;
} dt_lines;

static inline void dt_lines_init(dt_lines *it, const char *p, size_t n)
{
    it->p = p;
    it->n = n;
    it->pos = 0;
}

/* Next line without its '\n' (and a '\r' before it). A last line without '\n' counts:
 * files are often cut or written without a final newline. 0 at the end. */
static inline int dt_next_line(dt_lines *it, dt_span *line)
{
    if (it->pos >= it->n) return 0;
    const char *s = it->p + it->pos;
    size_t left = it->n - it->pos;
    const char *nl = memchr(s, '\n', left);
    size_t len = nl ? (size_t)(nl - s) : left;
    it->pos += nl ? len + 1 : len;
    if (len && s[len - 1] == '\r') len--;
    line->p = s;
    line->n = len;
    return 1;
}

static inline int dt_is_space(char c) { return c == ' ' || c == '\t'; }
static inline int dt_is_digit(char c) { return c >= '0' && c <= '9'; }
static inline int dt_is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

static inline void dt_ltrim(dt_span *s)
{
    while (s->n && dt_is_space(s->p[0])) s->p++, s->n--;
}
static inline void dt_rtrim(dt_span *s)
{
    while (s->n && dt_is_space(s->p[s->n - 1])) s->n--;
}
static inline void dt_trim(dt_span *s)
{
    dt_ltrim(s);
    dt_rtrim(s);
}

static inline int dt_starts(dt_span s, const char *lit)
{
    size_t k = strlen(lit);
    return s.n >= k && memcmp(s.p, lit, k) == 0;
}
static inline int dt_ends(dt_span s, const char *lit)
{
    size_t k = strlen(lit);
    return s.n >= k && memcmp(s.p + s.n - k, lit, k) == 0;
}

/* If s starts with lit, steps over it and returns 1. */
static inline int dt_eat(dt_span *s, const char *lit)
{
    size_t k = strlen(lit);
    if (s->n < k || memcmp(s->p, lit, k) != 0) return 0;
    s->p += k;
    s->n -= k;
    return 1;
}

static inline void dt_skip(dt_span *s, size_t k)
{
    if (k > s->n) k = s->n;
    s->p += k;
    s->n -= k;
}

/* Offset of the first lit in s, or SIZE_MAX. */
static inline size_t dt_find(dt_span s, const char *lit)
{
    const char *f = memmem(s.p, s.n, lit, strlen(lit));
    return f ? (size_t)(f - s.p) : SIZE_MAX;
}

/* The next run of non-blank bytes (leading blanks skipped); an empty span at the end. */
static inline dt_span dt_token(dt_span *s)
{
    dt_ltrim(s);
    dt_span t = {s->p, 0};
    while (t.n < s->n && !dt_is_space(s->p[t.n])) t.n++;
    dt_skip(s, t.n);
    return t;
}

/* ---- numbers and times (textscan.c) ----------------------------------------------------
 * Each reads a prefix of s, steps over what it used and returns 1, or returns 0 and
 * leaves s alone. */

/* [+-]digits with overflow checked. */
int dt_int(dt_span *s, int64_t *out);
/* "0x" optional, then 1..16 hex digits. */
int dt_hex(dt_span *s, uint64_t *out);
/* [+-]digits[.digits] or [+-].digits; a finite double. No exponent, no locale. */
int dt_num(dt_span *s, double *out);
/* A whole span that is exactly a number (dt_num) / an integer (dt_int). */
int dt_num_all(dt_span s, double *out);
int dt_int_all(dt_span s, int64_t *out);
/* Epoch ms of a Gregorian UTC date and time (years 1970..9999); -1 when a field is out of
 * range (times before 1970 in a dump are garbage, and -1 is what callers call "absent"). */
int64_t dt_epoch_ms(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t sec, int64_t ms);
/* "YYYY-MM-DD[T ]HH:MM:SS[.fff...][Z|+HHMM|+HH:MM]" -> UTC epoch ms (the fraction cut to
 * ms); no offset reads as UTC. A result before 1970 is refused. */
int dt_iso_ms(dt_span *s, int64_t *out);

#endif
