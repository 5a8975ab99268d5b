/* tptp_enc.c -- the TPTP encoders: messages to .trcbin (little-endian, version 1.0, data
 * offset 12) and to .trcxml (spec §2.5: one empty element per line, every attribute in
 * table order). A message that cannot be written leaves `out` as it was. */
#include "tptp_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

static const char xml_head[] = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<TRACE>\n";
static const uint8_t bin_head[12] = {'0', 'T', 'B', 'F', 1, 0, 1, 1, 12, 0, 0, 0};

void cp_tptp_enc_init(cp_tptp_enc *e, cp_tptp_form form)
{
    memset(e, 0, sizeof *e);
    e->form = form;
    e->frequency = CP_TPTP_DEFAULT_FREQUENCY;
}

int cp_tptp_enc_begin(cp_tptp_enc *e, cp_buf *out)
{
    if (e->form == CP_TPTP_BIN) return cp_buf_append(out, bin_head, sizeof bin_head);
    return cp_buf_puts(out, xml_head);
}

int cp_tptp_enc_end(cp_tptp_enc *e, cp_buf *out)
{
    return e->form == CP_TPTP_XML ? cp_buf_puts(out, "</TRACE>\n") : CP_OK;
}

__attribute__((format(printf, 2, 3))) static int fail(cp_tptp_enc *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->err, sizeof e->err, fmt, ap);
    va_end(ap);
    return CP_EINVAL;
}

/* The code point of the UTF-8 sequence at s[0..left), its length in *k (0: invalid). */
static uint32_t utf8_cp(const uint8_t *s, size_t left, size_t *k)
{
    *k = cp_utf8_seq(s, left);
    if (*k <= 1) return s[0];
    uint32_t cp = s[0] & (0xFF >> (*k + 1));
    for (size_t i = 1; i < *k; i++) cp = (cp << 6) | (s[i] & 0x3F);
    return cp;
}

/* The system messages the encoders follow (spec: "the encoder follows the encoding and
 * frequency messages it writes"). Checked before the message is written. */
static int system_check(cp_tptp_enc *e, const cp_tptp_msg *m, int *latin1)
{
    *latin1 = e->latin1;
    if (m->def->id == CP_TPTP_FREQUENCY && m->v[0].i <= 0)
        return fail(e, "<%s>: %s must be positive", "frequency", "ticksPerSecond");
    if (m->def->id == CP_TPTP_ENCODING) {
        int kind = cp_tptp_encoding_kind(m->v[0].s.p, m->v[0].s.len);
        /* XML is UTF-8 whatever the name says: only .trcbin needs to know the encoding */
        if (kind < 0 && e->form == CP_TPTP_BIN)
            return fail(e, "<%s>: unsupported %s (UTF-8 or ISO-8859-1)", "encoding", "name");
        if (kind >= 0) *latin1 = kind;
    }
    return CP_OK;
}

static void system_apply(cp_tptp_enc *e, const cp_tptp_msg *m, int latin1)
{
    if (m->def->id == CP_TPTP_FREQUENCY) e->frequency = m->v[0].i;
    if (m->def->id == CP_TPTP_ENCODING) e->latin1 = latin1;
}

/* The value of the last INT attribute before attribute i: a String[] / Long[] count. */
static int64_t count_of(const cp_tptp_msg *m, size_t i)
{
    while (i-- > 0)
        if (m->def->attrs[i].type == CP_TPTP_INT) return m->v[i].i;
    return 0;
}

/* ---- .trcbin ----------------------------------------------------------------------------- */

static int put_le(cp_buf *out, uint64_t v, size_t n)
{
    uint8_t b[8];
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * i));
    return cp_buf_append(out, b, n);
}

/* A string in the encoding in effect, NUL-terminated. */
static int bin_string(cp_tptp_enc *e, cp_buf *out, const cp_tptp_text *t, const char *el, const char *attr)
{
    const uint8_t *s = (const uint8_t *)t->p;
    if (cp_buf_reserve(out, t->len + 1) != CP_OK) return CP_ENOMEM;
    for (size_t i = 0; i < t->len;) {
        size_t k;
        uint32_t cp = utf8_cp(s + i, t->len - i, &k);
        if (cp == 0) return fail(e, "<%s>: NUL inside %s (a .trcbin string ends at NUL)", el, attr);
        if (k == 0) return fail(e, "<%s>: invalid UTF-8 in %s", el, attr);
        if (e->latin1 && cp > 0xFF) return fail(e, "<%s>: %s has a character ISO-8859-1 cannot hold", el, attr);
        int st = e->latin1 ? cp_buf_putc(out, (uint8_t)cp) : cp_buf_append(out, s + i, k);
        if (st != CP_OK) return st;
        i += k;
    }
    return cp_buf_putc(out, 0);
}

static int bin_attr(cp_tptp_enc *e, const cp_tptp_msg *m, size_t i, cp_buf *out)
{
    static const size_t size[] = {[CP_TPTP_BYTE] = 1, [CP_TPTP_SHORT] = 2, [CP_TPTP_INT] = 4, [CP_TPTP_LONG] = 8};
    const cp_tptp_attr_def *a = &m->def->attrs[i];
    const cp_tptp_value *v = &m->v[i];
    int st = CP_OK;
    switch (a->type) {
    case CP_TPTP_BYTE:
    case CP_TPTP_SHORT:
    case CP_TPTP_INT:
    case CP_TPTP_LONG:
        return put_le(out, (uint64_t)v->i, size[a->type]);
    case CP_TPTP_DOUBLE: {
        uint64_t u;
        memcpy(&u, &v->d, sizeof u);
        return put_le(out, u, 8);
    }
    case CP_TPTP_STRING:
        return bin_string(e, out, &v->s, m->def->element, a->name);
    case CP_TPTP_STRINGS:
    case CP_TPTP_LONGS:
        if ((int64_t)v->n != count_of(m, i)) return fail(e, "<%s>: %s count differs from stackDepth", m->def->element, a->name);
        for (uint32_t k = 0; k < v->n && st == CP_OK; k++)
            st = a->type == CP_TPTP_STRINGS ? bin_string(e, out, &v->strs[k], m->def->element, a->name)
                                            : put_le(out, (uint64_t)v->longs[k], 8);
        return st;
    }
    return CP_EINVAL;
}

static int bin_msg(cp_tptp_enc *e, const cp_tptp_msg *m, cp_buf *out)
{
    size_t start = out->len;
    int st = put_le(out, m->def->id, 2);
    if (st == CP_OK) st = put_le(out, 0, 4); /* the size, patched below */
    for (size_t i = 0; i < m->def->nattrs && st == CP_OK; i++) st = bin_attr(e, m, i, out);
    if (st != CP_OK) return st;
    size_t size = out->len - start - 6;
    if (size > UINT32_MAX) return fail(e, "<%s>: %s", m->def->element, "message over 4 GiB");
    for (size_t i = 0; i < 4; i++) out->data[start + 2 + i] = (uint8_t)(size >> (8 * i));
    return CP_OK;
}

/* ---- .trcxml ----------------------------------------------------------------------------- */

/* Appends UTF-8 text XML-escaped. In a String[] element (sep set) '\' and '|' are
 * escaped first (spec §2.5). Tab, newline and CR go as character references so that
 * attribute-value normalisation keeps them; other control characters (and U+FFFE/U+FFFF)
 * XML 1.0 cannot carry at all. */
static int xml_text(cp_tptp_enc *e, cp_buf *out, const cp_tptp_text *t, int sep, const char *el, const char *attr)
{
    const uint8_t *s = (const uint8_t *)t->p;
    if (cp_buf_reserve(out, t->len) != CP_OK) return CP_ENOMEM;
    for (size_t i = 0; i < t->len;) {
        size_t run = i; /* plain bytes go in one copy */
        while (run < t->len && s[run] >= 0x20 && s[run] < 0x80 && !strchr("&<>\"\\|", s[run])) run++;
        if (run > i) {
            if (cp_buf_append(out, s + i, run - i) != CP_OK) return CP_ENOMEM;
            i = run;
            continue;
        }
        uint8_t c = s[i];
        const char *esc = NULL;
        char ref[8];
        switch (c) {
        case '&': esc = "&amp;"; break;
        case '<': esc = "&lt;"; break;
        case '>': esc = "&gt;"; break;
        case '"': esc = "&quot;"; break;
        case '\\': esc = sep ? "\\\\" : "\\"; break;
        case '|': esc = sep ? "\\|" : "|"; break;
        case '\t':
        case '\n':
        case '\r':
            snprintf(ref, sizeof ref, "&#%u;", c);
            esc = ref;
            break;
        default:
            break;
        }
        if (esc) {
            if (cp_buf_puts(out, esc) != CP_OK) return CP_ENOMEM;
            i++;
            continue;
        }
        if (c < 0x20) return fail(e, "<%s>: %s has a control character XML cannot hold", el, attr);
        size_t k;
        uint32_t cp = utf8_cp(s + i, t->len - i, &k);
        if (k == 0) return fail(e, "<%s>: invalid UTF-8 in %s", el, attr);
        if (cp == 0xFFFE || cp == 0xFFFF) return fail(e, "<%s>: %s has a character XML cannot hold", el, attr);
        if (cp_buf_append(out, s + i, k) != CP_OK) return CP_ENOMEM;
        i += k;
    }
    return CP_OK;
}

/* Ticks as decimal seconds at freq: the integer part, then '.' and up to 9 fraction
 * digits without trailing zeros (none when the fraction is 0), rounded to the nearest
 * nanosecond. */
static int xml_time(cp_buf *out, int64_t ticks, int64_t freq)
{
    uint64_t mag = ticks < 0 ? (uint64_t)0 - (uint64_t)ticks : (uint64_t)ticks;
    uint64_t f = (uint64_t)freq;
    uint64_t ip = mag / f;
    uint64_t frac = (uint64_t)(((unsigned __int128)(mag % f) * 2000000000u + f) / (2 * (unsigned __int128)f));
    if (frac == 1000000000u) { /* rounded up to the next second (only when freq > 10^9) */
        ip++;
        frac = 0;
    }
    char digits[16] = "";
    int n = 0;
    if (frac) {
        n = snprintf(digits, sizeof digits, ".%09" PRIu64, frac);
        while (digits[n - 1] == '0') n--;
    }
    return cp_buf_printf(out, "%s%" PRIu64 "%.*s", ticks < 0 && (ip || frac) ? "-" : "", ip, n, digits);
}

static int xml_attr(cp_tptp_enc *e, const cp_tptp_msg *m, size_t i, cp_buf *out)
{
    const cp_tptp_attr_def *a = &m->def->attrs[i];
    const cp_tptp_value *v = &m->v[i];
    const char *el = m->def->element;
    int st;
    if (cp_buf_printf(out, " %s=\"", a->name) != CP_OK) return CP_ENOMEM;
    switch (a->type) {
    case CP_TPTP_BYTE:
    case CP_TPTP_SHORT:
    case CP_TPTP_INT:
    case CP_TPTP_LONG:
        st = cp_tptp_is_time(a) ? xml_time(out, v->i, e->frequency) : cp_buf_printf(out, "%" PRId64, v->i);
        break;
    case CP_TPTP_DOUBLE:
        st = cp_buf_printf(out, "%.17g", v->d);
        break;
    case CP_TPTP_STRING:
        st = xml_text(e, out, &v->s, 0, el, a->name);
        break;
    case CP_TPTP_STRINGS:
    case CP_TPTP_LONGS:
        if ((int64_t)v->n != count_of(m, i)) return fail(e, "<%s>: %s count differs from stackDepth", el, a->name);
        st = CP_OK;
        for (uint32_t k = 0; k < v->n && st == CP_OK; k++) {
            if (k) st = cp_buf_putc(out, '|');
            if (st != CP_OK) break;
            st = a->type == CP_TPTP_STRINGS ? xml_text(e, out, &v->strs[k], 1, el, a->name)
                                            : cp_buf_printf(out, "%" PRId64, v->longs[k]);
        }
        break;
    default:
        return CP_EINVAL;
    }
    return st == CP_OK ? cp_buf_putc(out, '"') : st;
}

static int xml_msg(cp_tptp_enc *e, const cp_tptp_msg *m, cp_buf *out)
{
    const cp_tptp_def *def = m->def;
    if (def->id == CP_TPTP_CUSTOM) {
        int st = cp_buf_puts(out, "<custom>");
        if (st == CP_OK) st = xml_text(e, out, &m->v[0].s, 0, def->element, "body");
        return st == CP_OK ? cp_buf_puts(out, "</custom>\n") : st;
    }
    int st = cp_buf_printf(out, "<%s", def->element);
    for (size_t i = 0; i < def->nattrs && st == CP_OK; i++) st = xml_attr(e, m, i, out);
    return st == CP_OK ? cp_buf_puts(out, "/>\n") : st;
}

int cp_tptp_enc_msg(cp_tptp_enc *e, const cp_tptp_msg *m, cp_buf *out)
{
    size_t start = out->len;
    e->err[0] = 0;
    if (!m->def) {
        if (e->form == CP_TPTP_BIN) return CP_OK; /* its bytes are not kept */
        int st = cp_buf_printf(out, "<unknown id=\"%u\" size=\"%u\"/>\n", m->id, m->size);
        if (st != CP_OK) cp_set_err(e->err, sizeof e->err, "out of memory");
        return st;
    }
    int latin1;
    int st = system_check(e, m, &latin1);
    if (st == CP_OK) st = e->form == CP_TPTP_BIN ? bin_msg(e, m, out) : xml_msg(e, m, out);
    if (st != CP_OK) {
        out->len = start;
        if (st == CP_ENOMEM) cp_set_err(e->err, sizeof e->err, "out of memory");
        return st;
    }
    system_apply(e, m, latin1);
    return CP_OK;
}
