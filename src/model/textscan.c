/* textscan.c -- the arena and the bounded number/time readers of the text-dump parsers
 * (dumptext_internal.h). Nothing here reads past the span it is given. */
#include "dumptext_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- arena ------------------------------------------------------------------------------ */

struct dt_block {
    dt_block *next;
    size_t cap, used;
    _Alignas(max_align_t) unsigned char data[];
};

/* Big enough that a dump of a few hundred KB takes a handful of blocks. */
#define DT_BLOCK 65536

void dt_arena_init(dt_arena *a) { a->head = NULL; }

void dt_arena_free(dt_arena *a)
{
    dt_block *b = a->head;
    while (b) {
        dt_block *next = b->next;
        free(b);
        b = next;
    }
    a->head = NULL;
}

void *dt_alloc(dt_arena *a, size_t n)
{
    const size_t align = _Alignof(max_align_t);
    if (n > SIZE_MAX / 2) return NULL;
    n = (n + align - 1) & ~(align - 1);
    dt_block *b = a->head;
    if (!b || b->cap - b->used < n) {
        /* a big request gets a block of its own, behind the current one, so the free
         * space of the current block is not thrown away */
        size_t cap = n > DT_BLOCK / 4 ? n : DT_BLOCK;
        dt_block *nb = malloc(sizeof *nb + cap);
        if (!nb) return NULL;
        nb->cap = cap;
        nb->used = 0;
        if (b && cap != DT_BLOCK) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    return p;
}

const char *dt_strdup(dt_arena *a, const char *p, size_t n)
{
    if (n == 0) return "";
    char *s = dt_alloc(a, n + 1);
    if (!s) return NULL;
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

int dt_fail(char *err, size_t errlen, int st, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return st;
}

/* ---- numbers ------------------------------------------------------------------------------ */

int dt_int(dt_span *s, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    if (i < s->n && (s->p[i] == '-' || s->p[i] == '+')) neg = s->p[i++] == '-';
    if (i >= s->n || !dt_is_digit(s->p[i])) return 0;
    uint64_t v = 0;
    for (; i < s->n && dt_is_digit(s->p[i]); i++) {
        unsigned d = (unsigned)(s->p[i] - '0');
        if (v > (UINT64_C(9223372036854775807) - d) / 10) return 0;
        v = v * 10 + d;
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    dt_skip(s, i);
    return 1;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

int dt_hex(dt_span *s, uint64_t *out)
{
    size_t i = 0;
    if (s->n >= 2 && s->p[0] == '0' && (s->p[1] == 'x' || s->p[1] == 'X')) i = 2;
    size_t start = i;
    uint64_t v = 0;
    for (; i < s->n && hexval(s->p[i]) >= 0; i++) {
        if (i - start >= 16) return 0;
        v = (v << 4) | (uint64_t)hexval(s->p[i]);
    }
    if (i == start) return 0;
    *out = v;
    dt_skip(s, i);
    return 1;
}

int dt_num(dt_span *s, double *out)
{
    static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    size_t i = 0;
    int neg = 0;
    if (i < s->n && (s->p[i] == '-' || s->p[i] == '+')) neg = s->p[i++] == '-';
    /* up to 19 significant digits in an integer; the value is mant * 10^exp */
    uint64_t mant = 0;
    int sig = 0, digits = 0;
    int64_t exp = 0;
    for (; i < s->n && dt_is_digit(s->p[i]); i++, digits++) {
        if (sig < 19) {
            if (mant || s->p[i] != '0') sig++;
            mant = mant * 10 + (uint64_t)(s->p[i] - '0');
        } else if (exp < 100000) {
            exp++;
        }
    }
    if (i + 1 < s->n && s->p[i] == '.' && dt_is_digit(s->p[i + 1])) {
        for (i++; i < s->n && dt_is_digit(s->p[i]); i++, digits++) {
            if (sig < 19) {
                if (mant || s->p[i] != '0') sig++;
                mant = mant * 10 + (uint64_t)(s->p[i] - '0');
                exp--;
            }
        }
    }
    if (!digits) return 0;
    double v = (double)mant;
    /* an exact power of ten divides or multiplies exactly-representable mantissas into a
     * correctly rounded result, which is all dumps ever print */
    if (exp < 0) v = -exp < (int64_t)CP_ARRAY_LEN(p10) ? v / p10[-exp] : v / pow(10, (double)-exp);
    else if (exp > 0) v = exp < (int64_t)CP_ARRAY_LEN(p10) ? v * p10[exp] : v * pow(10, (double)exp);
    if (!isfinite(v)) return 0;
    *out = neg ? -v : v;
    dt_skip(s, i);
    return 1;
}

int dt_num_all(dt_span s, double *out) { return dt_num(&s, out) && s.n == 0; }
int dt_int_all(dt_span s, int64_t *out) { return dt_int(&s, out) && s.n == 0; }

/* ---- times ------------------------------------------------------------------------------- */

int64_t dt_epoch_ms(int64_t y, int64_t mo, int64_t d, int64_t h, int64_t mi, int64_t sec, int64_t ms)
{
    if (y < 1970 || y > 9999 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || h < 0 || mi < 0 || mi > 59 ||
        sec < 0 || sec > 60 || ms < 0 || ms > 999)
        return -1;
    /* days from civil (H. Hinnant), era-based so it needs no tables */
    y -= mo <= 2;
    int64_t era = y / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    int64_t days = era * 146097 + doe - 719468;
    return ((days * 24 + h) * 60 + mi) * 60000 + sec * 1000 + ms;
}

/* Exactly k digits. */
static int fixed(dt_span *s, size_t k, int64_t *out)
{
    if (s->n < k) return 0;
    int64_t v = 0;
    for (size_t i = 0; i < k; i++) {
        if (!dt_is_digit(s->p[i])) return 0;
        v = v * 10 + (s->p[i] - '0');
    }
    *out = v;
    dt_skip(s, k);
    return 1;
}

int dt_iso_ms(dt_span *s, int64_t *out)
{
    dt_span t = *s;
    int64_t y, mo, d, h, mi, sec, ms = 0;
    if (!fixed(&t, 4, &y) || !dt_eat(&t, "-") || !fixed(&t, 2, &mo) || !dt_eat(&t, "-") || !fixed(&t, 2, &d))
        return 0;
    if (!dt_eat(&t, "T") && !dt_eat(&t, " ")) return 0;
    if (!fixed(&t, 2, &h) || !dt_eat(&t, ":") || !fixed(&t, 2, &mi) || !dt_eat(&t, ":") || !fixed(&t, 2, &sec))
        return 0;
    if (t.n >= 2 && (t.p[0] == '.' || t.p[0] == ',') && dt_is_digit(t.p[1])) {
        dt_skip(&t, 1);
        int k = 0;
        while (t.n && dt_is_digit(t.p[0])) {
            if (k < 3) ms = ms * 10 + (t.p[0] - '0');
            k++;
            dt_skip(&t, 1);
        }
        for (; k < 3; k++) ms *= 10;
    }
    int64_t off = 0; /* minutes east of UTC */
    if (t.n && t.p[0] == 'Z') {
        dt_skip(&t, 1);
    } else if (t.n >= 3 && (t.p[0] == '+' || t.p[0] == '-') && dt_is_digit(t.p[1])) {
        dt_span o = t;
        int neg = o.p[0] == '-';
        int64_t oh, om = 0;
        dt_skip(&o, 1);
        if (fixed(&o, 2, &oh)) {
            dt_span o2 = o;
            if ((dt_eat(&o2, ":") && fixed(&o2, 2, &om)) || (o2 = o, fixed(&o2, 2, &om))) o = o2;
            else om = 0;
            if (oh <= 23 && om <= 59) {
                off = (oh * 60 + om) * (neg ? -1 : 1);
                t = o;
            }
        }
    }
    int64_t v = dt_epoch_ms(y, mo, d, h, mi, sec, ms);
    if (v < 0 || v - off * 60000 < 0) return 0; /* -1 means "absent" to the callers */
    *out = v - off * 60000;
    *s = t;
    return 1;
}
