/* duration.c -- the calls list's duration filter (ui.md §3.4).
 *
 * The text is read through a cursor that skips white space, so "1 0 0 ms" is "100ms" and
 * nothing is copied: the input can be any length without a buffer to bound. Amounts are
 * converted to whole milliseconds in integer arithmetic (no double rounding surprises:
 * "0.0005s" is exactly half a millisecond and rounds up to 1). */
#include "query_internal.h"

#include <stdarg.h>
#include <stdio.h>

/* Reading position in the filter text; peek/take skip white space. */
typedef struct dur_rd {
    const char *s;
    size_t n, i;
} dur_rd;

static int dur_is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

/* Next significant character, or 0 at the end (a NUL byte in the text is junk anyway,
 * and every caller rejects 0 where it expects something). */
static char dur_peek(dur_rd *r)
{
    while (r->i < r->n && dur_is_space(r->s[r->i])) r->i++;
    return r->i < r->n ? r->s[r->i] : 0;
}

static int dur_take(dur_rd *r, char c)
{
    if (dur_peek(r) != c || r->i >= r->n) return 0;
    r->i++;
    return 1;
}

/* The character after the next significant one (skipping spaces), without consuming:
 * needed to tell the decimal point of "1.5" from the range operator of "1..5". */
static char dur_peek2(dur_rd *r)
{
    dur_peek(r);
    size_t j = r->i + 1;
    while (j < r->n && dur_is_space(r->s[j])) j++;
    return j < r->n ? r->s[j] : 0;
}

static int dur_is_digit(char c) { return c >= '0' && c <= '9'; }


/* v = v * 10 + d, refusing to reach INT64_MAX: that value means "no upper bound". */
static int dur_push_digit(int64_t *v, int d)
{
    if (*v > (INT64_MAX - 1 - d) / 10) return 0;
    *v = *v * 10 + d;
    return 1;
}

/* amount := number [ "ms" | "s" ] -> whole ms, half up. Fraction digits beyond the
 * rounding digit cannot change a half-up result, so they are only skipped. */
static int dur_amount(dur_rd *r, int64_t *ms, char *err, size_t errlen)
{
    if (!dur_is_digit(dur_peek(r))) return cp_query_fail(err, errlen, "a number expected at offset %zu", r->i);
    int64_t whole = 0;
    while (dur_is_digit(dur_peek(r))) {
        if (!dur_push_digit(&whole, r->s[r->i] - '0')) return cp_query_fail(err, errlen, "number too large");
        r->i++;
    }
    char frac[4] = {'0', '0', '0', '0'}; /* the digits that matter for seconds: ms + rounding */
    if (dur_peek(r) == '.' && dur_is_digit(dur_peek2(r))) {
        r->i++;
        for (size_t k = 0; dur_is_digit(dur_peek(r)); k++, r->i++)
            if (k < sizeof frac) frac[k] = r->s[r->i];
    }
    int seconds = 1; /* no unit = seconds */
    if (dur_peek(r) == 'm' && dur_peek2(r) == 's') {
        dur_take(r, 'm');
        dur_take(r, 's');
        seconds = 0;
    } else if (dur_peek(r) == 's') {
        dur_take(r, 's');
    }
    int64_t v = whole;
    int round_digit = frac[0] - '0';
    if (seconds) {
        for (int k = 0; k < 3; k++)
            if (!dur_push_digit(&v, frac[k] - '0')) return cp_query_fail(err, errlen, "number too large");
        round_digit = frac[3] - '0';
    }
    if (round_digit >= 5) {
        if (v == INT64_MAX - 1) return cp_query_fail(err, errlen, "number too large");
        v++;
    }
    *ms = v;
    return CP_OK;
}

int cp_duration_parse(const char *s, size_t n, cp_duration_filter *out, char *err, size_t errlen)
{
    dur_rd r = {s ? s : "", s ? n : 0, 0};
    if (err && errlen) err[0] = '\0';
    out->min_ms = 0;
    out->max_ms = INT64_MAX;
    if (dur_peek(&r) == 0 && r.i >= r.n) return CP_OK; /* empty = no filter */

    /* ">" means "at least" like ">=" (ui.md §3.4: both anchors did this) */
    enum { LOWER, UPPER, EXACT } op = LOWER;
    int has_op = 1;
    if (dur_take(&r, '>')) dur_take(&r, '=');
    else if (dur_take(&r, '<')) { dur_take(&r, '='); op = UPPER; }
    else if (dur_take(&r, '=')) op = EXACT;
    else has_op = 0;

    int64_t a, b;
    int st = dur_amount(&r, &a, err, errlen);
    if (st != CP_OK) return st;
    cp_duration_filter f = {a, INT64_MAX};
    if (op == UPPER) f = (cp_duration_filter){0, a};
    if (op == EXACT) f = (cp_duration_filter){a, a};

    if (!has_op && dur_peek(&r) == '.') { /* range: amount ".." { "." } amount */
        if (!(dur_take(&r, '.') && dur_take(&r, '.'))) return cp_query_fail(err, errlen, "\"..\" expected at offset %zu", r.i);
        while (dur_take(&r, '.')) {
        }
        st = dur_amount(&r, &b, err, errlen);
        if (st != CP_OK) return st;
        f = a <= b ? (cp_duration_filter){a, b} : (cp_duration_filter){b, a};
    }
    if (dur_peek(&r) != 0 || r.i < r.n) return cp_query_fail(err, errlen, "unexpected text at offset %zu", r.i);
    *out = f;
    return CP_OK;
}
