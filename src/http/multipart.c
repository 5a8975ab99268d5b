/* multipart.c -- streaming multipart/form-data parser (RFC 7578, RFC 2046 §5.1) for heap-dump
 * uploads by POST (dumps-http.md §4.2).
 *
 * The body is a sequence of states: a preamble, then per part a delimiter line
 * ("--boundary", transport padding, CRLF), a header block ending in an empty line, and the
 * part's body, which ends at the next "\r\n--boundary"; "--boundary--" closes the body and
 * everything after it (the epilogue) is ignored.
 *
 * Bodies can be gigabytes and arrive in pieces of any size, so a body is never buffered: it
 * is scanned for the delimiter and given to part_data as it goes, except for the few bytes
 * that could be the start of a delimiter. Those are not copied anywhere: while they match,
 * they are by definition a prefix of the delimiter, so a count of matched bytes (k) is all
 * the state needed, and on a mismatch the held bytes are given out from the delimiter itself.
 * Since the delimiter's only CR is its first byte (a boundary has no CR), a mismatch can only
 * restart the match at the mismatching byte, never inside the matched prefix.
 *
 * Like Go's mime/multipart, "\r\n--boundary" followed by anything other than "--", a space,
 * a tab or a CR is body data (a near miss), not a delimiter; followed by space/tab/CR it must
 * then be a well-formed delimiter line.
 *
 * The preamble is scanned as if it started with "\r\n", so a body that begins with
 * "--boundary" (the usual case) needs no special path.
 */
#include "http/cp_multipart.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MP_MAX_BOUNDARY 70

enum {
    MP_PREAMBLE, /* before the first delimiter: bytes dropped */
    MP_PAD,      /* after a delimiter: transport padding, then CR */
    MP_LF,       /* the LF ending a delimiter line */
    MP_HEADERS,  /* a part's header block */
    MP_BODY,     /* a part's body */
    MP_DONE,     /* the close delimiter was seen: the epilogue is ignored */
};

struct cp_mp {
    cp_mp_callbacks cb;
    void *ud;
    /* "\r\n--" boundary "--": the delimiter, then the two dashes that make it the close
     * delimiter. delim[0..k) are the bytes held back from the body. */
    uint8_t delim[4 + MP_MAX_BOUNDARY + 2];
    size_t dlen;               /* 4 + boundary length */
    size_t k;                  /* delimiter bytes matched so far, 0..dlen+1 */
    int state;
    int err;                   /* sticky status of the first error */
    uint64_t off;              /* body bytes consumed before the current feed */
    size_t parts;              /* parts begun */
    cp_buf hdr;                /* the current part's header block, bounded by CP_MP_MAX_HEADER */
    size_t line;               /* offset in hdr of the current header line */
    cp_buf field, filename, ctype;     /* part_begin's strings (NUL-terminated) */
    cp_buf tmp, star;                  /* a parameter's value; a decoded filename* */
    char msg[192];
};

/* ---- small helpers --------------------------------------------------------------------- */

static int fail(cp_mp *m, int st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(cp_mp *m, int st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->msg, sizeof m->msg, fmt, ap);
    va_end(ap);
    m->err = st;
    return st;
}

static void set_err(char *err, size_t errlen, const char *msg)
{
    if (err && errlen) snprintf(err, errlen, "%s", msg);
}

static int is_ows(int c) { return c == ' ' || c == '\t'; }

/* RFC 2045 tspecials: the characters a backslash may escape inside a quoted string. */
static int is_tspecial(int c) { return c && strchr("()<>@,;:\\\"/[]?=", c) != NULL; }

static int is_tchar(int c) { return c > 0x20 && c < 0x7F && !is_tspecial(c); }

static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

/* Case-insensitive equality of s[0..n) with the lower-case literal lit. */
static int eq_ci(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    if (n != l) return 0;
    for (size_t i = 0; i < n; i++)
        if (lower((unsigned char)s[i]) != lit[i]) return 0;
    return 1;
}

static void skip_ows(const char *s, size_t n, size_t *i)
{
    while (*i < n && is_ows((unsigned char)s[*i])) (*i)++;
}

/* Copies s[0..n) into b as a C string. */
static int set_str(cp_buf *b, const void *s, size_t n)
{
    cp_buf_reset(b);
    if (cp_buf_append(b, s, n) != CP_OK || cp_buf_putc(b, 0) != CP_OK) return CP_ENOMEM;
    return CP_OK;
}

/* ---- header parameters ------------------------------------------------------------------ */

/* Reads the next `; name=value` parameter of a header value from s[*i..n). Returns 1 with
 * the name in *name and *nlen and the value in val (quoted-string escapes resolved, not
 * NUL-terminated), 0 at the end, CP_ECORRUPT when malformed, CP_ENOMEM.
 *
 * Inside quotes a backslash escapes only a tspecial (as Go's mime package does): browsers
 * send Windows paths such as "C:\dir\x.zip" unescaped, and a strict quoted-pair reading
 * would silently eat their backslashes. Unquoted values are read leniently up to ';' or
 * white space. */
static int next_param(const char *s, size_t n, size_t *i, const char **name, size_t *nlen, cp_buf *val)
{
    skip_ows(s, n, i);
    if (*i == n) return 0;
    if (s[*i] != ';') return CP_ECORRUPT;
    (*i)++;
    skip_ows(s, n, i);
    if (*i == n) return 0; /* a trailing ';' */
    size_t start = *i;
    while (*i < n && is_tchar((unsigned char)s[*i])) (*i)++;
    if (*i == start) return CP_ECORRUPT;
    *name = s + start;
    *nlen = *i - start;
    skip_ows(s, n, i);
    if (*i == n || s[*i] != '=') return CP_ECORRUPT;
    (*i)++;
    skip_ows(s, n, i);
    cp_buf_reset(val);
    if (*i < n && s[*i] == '"') {
        (*i)++;
        for (;;) {
            if (*i == n) return CP_ECORRUPT; /* no closing quote */
            unsigned char c = (unsigned char)s[(*i)++];
            if (c == '"') break;
            if (c == '\\' && *i < n && is_tspecial((unsigned char)s[*i])) c = (unsigned char)s[(*i)++];
            if (cp_buf_putc(val, c) != CP_OK) return CP_ENOMEM;
        }
    } else {
        size_t vs = *i;
        while (*i < n && s[*i] != ';' && !is_ows((unsigned char)s[*i])) (*i)++;
        if (*i == vs) return CP_ECORRUPT;
        if (cp_buf_append(val, s + vs, *i - vs) != CP_OK) return CP_ENOMEM;
    }
    return 1;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = lower(c);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Decodes an RFC 8187 ext-value (charset'language'percent-encoded) into out as a C string.
 * Returns 1 when decoded, 0 for a charset other than UTF-8 / ISO-8859-1 (the value is then
 * ignored, RFC 6266 §4.3), CP_ECORRUPT when malformed or decoding to a NUL, CP_ENOMEM. */
static int decode_ext_value(const uint8_t *v, size_t n, cp_buf *out)
{
    const uint8_t *q1 = memchr(v, '\'', n);
    if (!q1) return CP_ECORRUPT;
    size_t cs = (size_t)(q1 - v);
    const uint8_t *q2 = memchr(q1 + 1, '\'', n - cs - 1);
    if (!q2) return CP_ECORRUPT;
    int latin1;
    if (eq_ci((const char *)v, cs, "utf-8")) latin1 = 0;
    else if (eq_ci((const char *)v, cs, "iso-8859-1")) latin1 = 1;
    else return 0;
    cp_buf_reset(out);
    for (size_t i = (size_t)(q2 - v) + 1; i < n; i++) {
        unsigned c = v[i];
        if (c == '%') {
            int hi = i + 2 < n ? hexval(v[i + 1]) : -1, lo = i + 2 < n ? hexval(v[i + 2]) : -1;
            if (hi < 0 || lo < 0) return CP_ECORRUPT;
            c = (unsigned)(hi << 4 | lo);
            i += 2;
        }
        if (c == 0) return CP_ECORRUPT;
        int st;
        if (latin1 && c >= 0x80) {
            st = cp_buf_putc(out, (uint8_t)(0xC0 | c >> 6));
            if (st == CP_OK) st = cp_buf_putc(out, (uint8_t)(0x80 | (c & 0x3F)));
        } else {
            st = cp_buf_putc(out, (uint8_t)c);
        }
        if (st != CP_OK) return CP_ENOMEM;
    }
    return cp_buf_putc(out, 0) == CP_OK ? 1 : CP_ENOMEM;
}

/* ---- the part's header block ---------------------------------------------------------- */

/* Content-Disposition: form-data; name="..."; filename="..."; filename*=UTF-8''... */
static int parse_disposition(cp_mp *m, const char *s, size_t n)
{
    size_t i = 0, start;
    skip_ows(s, n, &i);
    start = i;
    while (i < n && is_tchar((unsigned char)s[i])) i++;
    if (!eq_ci(s + start, i - start, "form-data"))
        return fail(m, CP_ECORRUPT, "part %zu: Content-Disposition is not form-data", m->parts);
    int have_name = 0, have_fn = 0, have_star = 0, use_star = 0;
    const char *name;
    size_t nlen;
    int st;
    while ((st = next_param(s, n, &i, &name, &nlen, &m->tmp)) == 1) {
        const uint8_t *v = m->tmp.data;
        size_t vn = m->tmp.len;
        int *seen = eq_ci(name, nlen, "name") ? &have_name
                    : eq_ci(name, nlen, "filename") ? &have_fn
                    : eq_ci(name, nlen, "filename*") ? &have_star : NULL;
        if (!seen) continue; /* other parameters mean nothing here */
        /* two names would let two readers of the same body disagree about it */
        if (*seen) return fail(m, CP_ECORRUPT, "part %zu: duplicate Content-Disposition parameter %.*s", m->parts,
                               (int)nlen, name);
        *seen = 1;
        if (vn && memchr(v, 0, vn)) return fail(m, CP_ECORRUPT, "part %zu: NUL in a parameter", m->parts);
        if (seen == &have_name) st = set_str(&m->field, v, vn);
        else if (seen == &have_fn) st = set_str(&m->filename, v, vn);
        else {
            st = decode_ext_value(v, vn, &m->star);
            if (st == CP_ECORRUPT) return fail(m, st, "part %zu: malformed filename*", m->parts);
            use_star = st == 1;
        }
        if (st == CP_ENOMEM) return fail(m, st, "out of memory");
    }
    if (st == CP_ENOMEM) return fail(m, st, "out of memory");
    if (st < 0) return fail(m, CP_ECORRUPT, "part %zu: malformed Content-Disposition parameters", m->parts);
    if (use_star && set_str(&m->filename, m->star.data, m->star.len - 1) != CP_OK)
        return fail(m, CP_ENOMEM, "out of memory");
    return CP_OK;
}

/* Parses the complete header block hdr[0..len) (lines ending in CRLF; the empty line that
 * ends the block excluded) into field, filename and ctype. */
static int parse_headers(cp_mp *m, size_t len)
{
    const char *h = (const char *)m->hdr.data;
    int have_cd = 0, have_ct = 0;
    if (set_str(&m->field, "", 0) || set_str(&m->filename, "", 0) || set_str(&m->ctype, "", 0))
        return fail(m, CP_ENOMEM, "out of memory");
    size_t pos = 0;
    while (pos < len) {
        const char *line = h + pos;
        const char *end = memchr(line, '\n', len - pos); /* always found: every line ends in CRLF */
        size_t ln = (size_t)(end - line) - 1;            /* without the CRLF */
        pos += ln + 2;
        if (is_ows((unsigned char)line[0]))
            return fail(m, CP_ECORRUPT, "part %zu: obsolete header line folding", m->parts);
        size_t c = 0;
        while (c < ln && is_tchar((unsigned char)line[c])) c++;
        if (c == 0 || c == ln || line[c] != ':')
            return fail(m, CP_ECORRUPT, "part %zu: malformed header line", m->parts);
        for (size_t j = c + 1; j < ln; j++) {
            unsigned char b = (unsigned char)line[j];
            if ((b < 0x20 && b != '\t') || b == 0x7F)
                return fail(m, CP_ECORRUPT, "part %zu: control byte 0x%02x in a header", m->parts, b);
        }
        size_t vs = c + 1, ve = ln;
        while (vs < ve && is_ows((unsigned char)line[vs])) vs++;
        while (ve > vs && is_ows((unsigned char)line[ve - 1])) ve--;
        if (eq_ci(line, c, "content-disposition")) {
            if (have_cd++) return fail(m, CP_ECORRUPT, "part %zu: duplicate Content-Disposition", m->parts);
            int st = parse_disposition(m, line + vs, ve - vs);
            if (st != CP_OK) return st;
        } else if (eq_ci(line, c, "content-type")) {
            if (have_ct++) return fail(m, CP_ECORRUPT, "part %zu: duplicate Content-Type", m->parts);
            if (set_str(&m->ctype, line + vs, ve - vs) != CP_OK) return fail(m, CP_ENOMEM, "out of memory");
        }
    }
    return CP_OK;
}

/* Takes header bytes from p[0..n) up to the end of a line; at the empty line ending the
 * block, parses it and starts the part. Returns the bytes consumed. */
static size_t take_headers(cp_mp *m, const uint8_t *p, size_t n)
{
    const uint8_t *q = memchr(p, '\n', n);
    size_t take = q ? (size_t)(q - p) + 1 : n;
    if (take > CP_MP_MAX_HEADER - m->hdr.len) {
        fail(m, CP_ELIMIT, "part %zu: header block longer than %u bytes", m->parts, CP_MP_MAX_HEADER);
        return 0;
    }
    if (cp_buf_append(&m->hdr, p, take) != CP_OK) {
        fail(m, CP_ENOMEM, "out of memory");
        return 0;
    }
    if (!q) return take;
    size_t len = m->hdr.len;
    if (len - m->line < 2 || m->hdr.data[len - 2] != '\r') {
        fail(m, CP_ECORRUPT, "part %zu: header line ends in a bare LF", m->parts);
        return 0;
    }
    if (len - m->line > 2) { /* a header line; the block goes on */
        m->line = len;
        return take;
    }
    if (parse_headers(m, m->line) != CP_OK) return 0;
    if (m->cb.part_begin) {
        int st = m->cb.part_begin(m->ud, (const char *)m->field.data, (const char *)m->filename.data,
                                  (const char *)m->ctype.data);
        if (st != 0) {
            fail(m, st, "part_begin callback failed (status %d)", st);
            return 0;
        }
    }
    m->state = MP_BODY;
    m->k = 0;
    return take;
}

/* ---- delimiter scanning ------------------------------------------------------------- */

static int emit(cp_mp *m, const void *p, size_t n)
{
    if (m->state != MP_BODY || n == 0 || !m->cb.part_data) return CP_OK;
    int st = m->cb.part_data(m->ud, p, n);
    if (st != 0) fail(m, st, "part_data callback failed (status %d)", st);
    return st;
}

/* Scans p[0..n) of the preamble or a body for the delimiter, giving body bytes out as
 * they are known not to belong to it. Returns the bytes consumed: n, or up to the end of
 * a delimiter (the byte after it when that byte is padding or CR, which MP_PAD reads). */
static size_t scan(cp_mp *m, const uint8_t *p, size_t n)
{
    size_t held = m->k; /* matched bytes from earlier feeds, not given out yet */
    size_t run = 0;     /* start of the body bytes of p not given out yet */
    size_t ms = 0;      /* where the current match started in p (when held == 0) */
    size_t i = 0;
    while (i < n) {
        if (m->k == 0) {
            const uint8_t *q = memchr(p + i, '\r', n - i);
            if (!q) {
                i = n;
                break;
            }
            ms = (size_t)(q - p);
            i = ms + 1;
            m->k = 1;
            continue;
        }
        uint8_t c = p[i];
        int verdict; /* 1 extends the match, 0 breaks it, 2 delimiter, 3 close delimiter */
        if (m->k < m->dlen) verdict = c == m->delim[m->k];
        else if (m->k == m->dlen) verdict = c == '-' ? 1 : (c == ' ' || c == '\t' || c == '\r') ? 2 : 0;
        else verdict = c == '-' ? 3 : 0;
        if (verdict == 1) {
            m->k++;
            i++;
            continue;
        }
        if (verdict == 0) {
            /* the held bytes were body after all; c may start a new match */
            if (held && emit(m, m->delim, held) != CP_OK) return i;
            held = 0;
            m->k = 0;
            continue;
        }
        if (!held && emit(m, p + run, ms - run) != CP_OK) return i;
        m->k = 0;
        if (verdict == 3) i++;
        if (m->state == MP_BODY && m->cb.part_end) {
            int st = m->cb.part_end(m->ud);
            if (st != 0) {
                fail(m, st, "part_end callback failed (status %d)", st);
                return i;
            }
        }
        m->state = verdict == 3 ? MP_DONE : MP_PAD;
        return i;
    }
    size_t end = m->k ? (held ? 0 : ms) : n;
    if (end > run) emit(m, p + run, end - run);
    return n;
}

/* ---- public API ----------------------------------------------------------------------- */

int cp_mp_new(const char *content_type, const cp_mp_callbacks *cb, void *ud, cp_mp **out, char *err, size_t errlen)
{
    *out = NULL;
    if (!content_type) {
        set_err(err, errlen, "no Content-Type");
        return CP_EINVAL;
    }
    const char *s = content_type;
    size_t n = strlen(s), i = 0;
    skip_ows(s, n, &i);
    size_t start = i;
    while (i < n && s[i] != ';' && !is_ows((unsigned char)s[i])) i++;
    if (!eq_ci(s + start, i - start, "multipart/form-data")) {
        set_err(err, errlen, "Content-Type is not multipart/form-data");
        return CP_EINVAL;
    }
    cp_buf val, boundary;
    cp_buf_init(&val);
    cp_buf_init(&boundary);
    const char *name;
    size_t nlen;
    int st, have = 0, rc = CP_EINVAL;
    const char *why = NULL;
    while ((st = next_param(s, n, &i, &name, &nlen, &val)) == 1) {
        if (!eq_ci(name, nlen, "boundary")) continue;
        if (have++) {
            why = "two boundary parameters";
            break;
        }
        if (cp_buf_append(&boundary, val.data, val.len) != CP_OK) st = CP_ENOMEM;
    }
    if (st == CP_ENOMEM) why = "out of memory", rc = CP_ENOMEM;
    else if (!why && st < 0) why = "malformed Content-Type parameters";
    else if (!why && !have) why = "no boundary parameter";
    else if (!why && (boundary.len < 1 || boundary.len > MP_MAX_BOUNDARY)) why = "boundary is not 1..70 bytes";
    /* RFC 2046 bchars are a subset of these; what matters here is that the boundary has no
     * CR (the scanner relies on it) and does not end in a space. */
    for (size_t j = 0; !why && j < boundary.len; j++)
        if (boundary.data[j] < 0x20 || boundary.data[j] > 0x7E) why = "boundary has a byte outside printable ASCII";
    if (!why && boundary.data[boundary.len - 1] == ' ') why = "boundary ends in a space";
    cp_mp *m = NULL;
    if (!why && !(m = calloc(1, sizeof *m))) why = "out of memory", rc = CP_ENOMEM;
    if (why) {
        set_err(err, errlen, why);
        cp_buf_free(&val);
        cp_buf_free(&boundary);
        return rc;
    }
    if (cb) m->cb = *cb;
    m->ud = ud;
    memcpy(m->delim, "\r\n--", 4);
    memcpy(m->delim + 4, boundary.data, boundary.len);
    m->dlen = 4 + boundary.len;
    memcpy(m->delim + m->dlen, "--", 2);
    m->k = 2; /* the preamble starts as if after a CRLF */
    m->state = MP_PREAMBLE;
    cp_buf_init(&m->hdr);
    cp_buf_init(&m->field);
    cp_buf_init(&m->filename);
    cp_buf_init(&m->ctype);
    cp_buf_init(&m->star);
    m->tmp = val; /* reused for parameter values */
    cp_buf_free(&boundary);
    *out = m;
    set_err(err, errlen, "");
    return CP_OK;
}

int cp_mp_feed(cp_mp *m, const void *data, size_t n)
{
    const uint8_t *p = data;
    size_t i = 0;
    while (i < n && !m->err) {
        switch (m->state) {
        case MP_PREAMBLE:
        case MP_BODY:
            i += scan(m, p + i, n - i);
            break;
        case MP_PAD:
            if (is_ows(p[i])) i++;
            else if (p[i] == '\r') {
                m->state = MP_LF;
                i++;
            } else {
                fail(m, CP_ECORRUPT, "malformed delimiter line at byte %llu", (unsigned long long)(m->off + i));
            }
            break;
        case MP_LF:
            if (p[i] != '\n') {
                fail(m, CP_ECORRUPT, "malformed delimiter line at byte %llu", (unsigned long long)(m->off + i));
                break;
            }
            i++;
            if (m->parts == CP_MP_MAX_PARTS) {
                fail(m, CP_ELIMIT, "more than %u parts", CP_MP_MAX_PARTS);
                break;
            }
            m->parts++;
            cp_buf_reset(&m->hdr);
            m->line = 0;
            m->state = MP_HEADERS;
            break;
        case MP_HEADERS:
            i += take_headers(m, p + i, n - i);
            break;
        default: /* MP_DONE: the epilogue */
            i = n;
            break;
        }
    }
    m->off += i;
    return m->err;
}

int cp_mp_finish(cp_mp *m)
{
    if (m->err) return m->err;
    if (m->state == MP_DONE) return CP_OK;
    static const char *const where[] = {"in the preamble", "in a delimiter line", "in a delimiter line",
                                        "in part headers", "in a part body"};
    return fail(m, CP_ECORRUPT, "truncated %s: no close delimiter", where[m->state]);
}

const char *cp_mp_errmsg(const cp_mp *m) { return m->err ? m->msg : ""; }

void cp_mp_free(cp_mp *m)
{
    if (!m) return;
    cp_buf_free(&m->hdr);
    cp_buf_free(&m->field);
    cp_buf_free(&m->filename);
    cp_buf_free(&m->ctype);
    cp_buf_free(&m->tmp);
    cp_buf_free(&m->star);
    free(m);
}
