/* tptp_xml.c -- the incremental .trcxml decoder (foreign-formats.md §2.5) on libexpat.
 *
 * The root element is TRACE; each child is one message, named by its element, with its
 * attributes by name in any order (missing ones take the default: 0 or ""). A message is
 * delivered at its end tag, so a file cut inside an element delivers nothing of it.
 * Expat does the XML; this file maps elements to messages and bounds what expat may
 * hold: element nesting (max_depth), attribute values (max_string), custom's text
 * (max_string), and the bytes of one piece of markup (max_message, see feed below).
 * Any DOCTYPE is refused, so no entity can be declared (billion laughs). */
#include "tptp_internal.h"

#include <expat.h>
#include <stdlib.h>
#include <string.h>

#define XML_CHUNK_MAX 65536

static XML_Parser parser_of(cp_tptp_dec *d) { return (XML_Parser)d->xml.parser; }

/* Byte offset of the event expat is reporting. */
static uint64_t event_at(cp_tptp_dec *d)
{
    XML_Index i = XML_GetCurrentByteIndex(parser_of(d));
    return i < 0 ? d->fed : (uint64_t)i;
}

/* Moves the mark past the event expat is reporting (every handler calls this). */
static void mark(cp_tptp_dec *d)
{
    uint64_t end = event_at(d) + (uint64_t)XML_GetCurrentByteCount(parser_of(d));
    if (end > d->xml.mark) d->xml.mark = end;
}

/* Records the error and makes expat return from XML_Parse. */
#define FAIL(d, ...)                                                                                                   \
    do {                                                                                                               \
        cp_tptp_fail((d), __VA_ARGS__);                                                                                \
        XML_StopParser(parser_of(d), XML_FALSE);                                                                       \
    } while (0)

/* ---- attribute values ------------------------------------------------------------------ */

/* A decimal integer in [min, max]: an optional '-', then digits only. */
static int parse_int(const char *s, size_t n, int64_t min, int64_t max, int64_t *out)
{
    size_t i = 0;
    int neg = n > 0 && s[0] == '-';
    i += (size_t)neg;
    if (i == n) return CP_EPROTO;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return CP_EPROTO;
        unsigned dgt = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - dgt) / 10) return CP_EPROTO;
        v = v * 10 + dgt;
    }
    uint64_t limit = neg ? (uint64_t)0 - (uint64_t)min : (uint64_t)max;
    if (v > limit) return CP_EPROTO;
    *out = neg ? (int64_t)((uint64_t)0 - v) : (int64_t)v;
    return CP_OK;
}

/* Decimal seconds ("-"? digits ("." 1..9 digits)?) -> ticks at freq, rounded to the
 * nearest tick (halves away from zero), in integer arithmetic. */
static int parse_time(const char *s, size_t n, int64_t freq, int64_t *out)
{
    size_t i = 0;
    int neg = n > 0 && s[0] == '-';
    i += (size_t)neg;
    uint64_t ip = 0, frac = 0;
    size_t start = i;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned dgt = (unsigned)(s[i] - '0');
        if (ip > (UINT64_MAX - dgt) / 10) return CP_EPROTO;
        ip = ip * 10 + dgt;
    }
    if (i == start) return CP_EPROTO;
    if (i < n && s[i] == '.') {
        size_t f0 = ++i;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) frac = frac * 10 + (unsigned)(s[i] - '0');
        size_t k = i - f0;
        if (k == 0 || k > 9) return CP_EPROTO;
        for (; k < 9; k++) frac *= 10;
    }
    if (i != n) return CP_EPROTO;
    /* ip * freq < 2^64 * 2^63 = 2^127: fits unsigned 128 bits */
    unsigned __int128 t = (unsigned __int128)ip * (uint64_t)freq;
    t += ((unsigned __int128)frac * (uint64_t)freq + 500000000u) / 1000000000u;
    unsigned __int128 limit = neg ? (unsigned __int128)1 << 63 : ((unsigned __int128)1 << 63) - 1;
    if (t > limit) return CP_EPROTO;
    *out = neg ? (int64_t)((uint64_t)0 - (uint64_t)t) : (int64_t)(uint64_t)t;
    return CP_OK;
}

static int parse_double(const char *s, size_t n, double *out)
{
    if (n == 0) return CP_EPROTO;
    char *end;
    *out = strtod(s, &end);
    return end == s + n ? CP_OK : CP_EPROTO;
}

/* A copy of s[0..n) in scratch (reserved beforehand: it does not move). */
static cp_tptp_text keep(cp_tptp_dec *d, const char *s, size_t n)
{
    cp_tptp_text t = {"", 0};
    if (n == 0) return t;
    t.p = (const char *)d->scratch.data + d->scratch.len;
    t.len = n;
    memcpy(d->scratch.data + d->scratch.len, s, n);
    d->scratch.len += n;
    return t;
}

/* Elements in a String[] value: '|' separators, "\|" and "\\" escapes (spec §2.5); an
 * empty value is no element when stackDepth is 0. */
static size_t count_strings(const char *s, size_t n, int64_t depth)
{
    if (n == 0 && depth == 0) return 0;
    size_t count = 1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\\' && i + 1 < n) i++;
        else if (s[i] == '|') count++;
    }
    return count;
}

static size_t count_longs(const char *s, size_t n, int64_t depth)
{
    if (n == 0 && depth == 0) return 0;
    size_t count = 1;
    for (size_t i = 0; i < n; i++) count += s[i] == '|';
    return count;
}

/* Splits a String[] value into d->texts[first..], unescaped into scratch. */
static void split_strings(cp_tptp_dec *d, const char *s, size_t n, size_t first)
{
    cp_tptp_text *t = &d->texts[first];
    t->p = (const char *)d->scratch.data + d->scratch.len;
    t->len = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '|') {
            t++;
            t->p = (const char *)d->scratch.data + d->scratch.len;
            t->len = 0;
            continue;
        }
        if (c == '\\' && i + 1 < n && (s[i + 1] == '|' || s[i + 1] == '\\')) c = s[++i];
        d->scratch.data[d->scratch.len++] = (uint8_t)c;
        t->len++;
    }
}

static int split_longs(const char *s, size_t n, int64_t *out)
{
    size_t start = 0, k = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && s[i] != '|') continue;
        if (parse_int(s + start, i - start, INT64_MIN, INT64_MAX, &out[k++]) != CP_OK) return CP_EPROTO;
        start = i + 1;
    }
    return CP_OK;
}

/* The element count of a String[] / Long[] against the stackDepth before it. */
static int check_count(cp_tptp_dec *d, const char *el, const char *attr, size_t count, int64_t depth)
{
    uint64_t at = d->xml.msg_off;
    if (depth < 0) return cp_tptp_fail(d, CP_EPROTO, at, "<%s>: negative stackDepth %lld", el, (long long)depth);
    if (depth > d->lim.max_stack_depth)
        return cp_tptp_fail(d, CP_ELIMIT, at, "<%s>: stackDepth %lld over the limit %u", el, (long long)depth,
                            d->lim.max_stack_depth);
    if (count != (uint64_t)depth)
        return cp_tptp_fail(d, CP_EPROTO, at, "<%s>: %s has %zu elements but stackDepth is %lld", el, attr, count,
                            (long long)depth);
    return CP_OK;
}

static const int64_t int_min[] = {[CP_TPTP_BYTE] = INT8_MIN, [CP_TPTP_SHORT] = INT16_MIN,
                                  [CP_TPTP_INT] = INT32_MIN, [CP_TPTP_LONG] = INT64_MIN};
static const int64_t int_max[] = {[CP_TPTP_BYTE] = INT8_MAX, [CP_TPTP_SHORT] = INT16_MAX,
                                  [CP_TPTP_INT] = INT32_MAX, [CP_TPTP_LONG] = INT64_MAX};

/* One attribute value (s[0..n), the default "" when absent) into v. */
static int parse_value(cp_tptp_dec *d, const cp_tptp_def *def, size_t i, const char *s, size_t n, int64_t *last_int,
                       size_t *texts, size_t *longs)
{
    const cp_tptp_attr_def *a = &def->attrs[i];
    cp_tptp_value *v = &d->msg.v[i];
    uint64_t at = d->xml.msg_off;
    int bad = CP_OK;
    size_t count;
    switch (a->type) {
    case CP_TPTP_BYTE:
    case CP_TPTP_SHORT:
    case CP_TPTP_INT:
    case CP_TPTP_LONG:
        if (n == 0) v->i = 0; /* absent: the default */
        else if (cp_tptp_is_time(a)) bad = parse_time(s, n, d->frequency, &v->i);
        else bad = parse_int(s, n, int_min[a->type], int_max[a->type], &v->i);
        if (a->type == CP_TPTP_INT) *last_int = v->i;
        break;
    case CP_TPTP_DOUBLE:
        if (n == 0) v->d = 0;
        else bad = parse_double(s, n, &v->d);
        break;
    case CP_TPTP_STRING:
        v->s = keep(d, s, n);
        break;
    case CP_TPTP_STRINGS:
        count = count_strings(s, n, *last_int);
        if (check_count(d, def->element, a->name, count, *last_int) != CP_OK) return d->status;
        if (cp_tptp_reserve_texts(d, *texts + count) != CP_OK) return cp_tptp_fail(d, CP_ENOMEM, at, "out of memory");
        if (count) split_strings(d, s, n, *texts);
        v->n = (uint32_t)count;
        *texts += count;
        break;
    case CP_TPTP_LONGS:
        count = count_longs(s, n, *last_int);
        if (check_count(d, def->element, a->name, count, *last_int) != CP_OK) return d->status;
        if (cp_tptp_reserve_longs(d, *longs + count) != CP_OK) return cp_tptp_fail(d, CP_ENOMEM, at, "out of memory");
        if (count) bad = split_longs(s, n, d->longs + *longs);
        v->n = (uint32_t)count;
        *longs += count;
        break;
    }
    if (bad != CP_OK)
        return cp_tptp_fail(d, CP_EPROTO, at, "<%s>: bad %s value in attribute %s", def->element,
                            cp_tptp_is_time(a) ? "time" : a->type == CP_TPTP_DOUBLE ? "number" : "integer", a->name);
    return CP_OK;
}

/* A known message's attributes (expat's name/value pairs) into d->msg. */
static int parse_message(cp_tptp_dec *d, const cp_tptp_def *def, const XML_Char **atts)
{
    const char *val[CP_TPTP_MAX_ATTRS] = {0};
    size_t len[CP_TPTP_MAX_ATTRS] = {0};
    size_t total = 1;
    for (size_t k = 0; atts[k]; k += 2) {
        int i = def->id == CP_TPTP_CUSTOM ? -1 : cp_tptp_attr_index(def, atts[k]); /* custom: body is text */
        if (i < 0) continue;
        val[i] = atts[k + 1];
        len[i] = strlen(atts[k + 1]);
        total += len[i];
    }
    /* every string and String[] element is a copy of (a part of) one value: reserving
     * their total keeps scratch in place while the message points into it */
    cp_buf_reset(&d->scratch);
    if (cp_buf_reserve(&d->scratch, total) != CP_OK) return cp_tptp_fail(d, CP_ENOMEM, d->xml.msg_off, "out of memory");
    memset(d->msg.v, 0, def->nattrs * sizeof d->msg.v[0]);
    int64_t last_int = 0;
    size_t texts = 0, longs = 0;
    for (size_t i = 0; i < def->nattrs; i++) {
        int st = parse_value(d, def, i, val[i] ? val[i] : "", len[i], &last_int, &texts, &longs);
        if (st != CP_OK) return st;
    }
    /* the element arrays are final only now (they may have grown) */
    for (size_t i = 0, t = 0, l = 0; i < def->nattrs; i++) {
        cp_tptp_value *v = &d->msg.v[i];
        if (def->attrs[i].type == CP_TPTP_STRINGS && v->n) v->strs = d->texts + t;
        if (def->attrs[i].type == CP_TPTP_LONGS && v->n) v->longs = d->longs + l;
        if (def->attrs[i].type == CP_TPTP_STRINGS) t += v->n;
        if (def->attrs[i].type == CP_TPTP_LONGS) l += v->n;
    }
    if (def->id == CP_TPTP_FREQUENCY) {
        if (d->msg.v[0].i <= 0)
            return cp_tptp_fail(d, CP_EPROTO, d->xml.msg_off, "frequency %lld is not positive",
                                (long long)d->msg.v[0].i);
        d->frequency = d->msg.v[0].i;
    }
    return CP_OK;
}

/* <unknown id="N" size="S"/>: an unknown binary message (only its id and size). */
static int parse_unknown(cp_tptp_dec *d, const XML_Char **atts)
{
    for (size_t k = 0; atts[k]; k += 2) {
        int64_t v;
        int is_id = !strcmp(atts[k], "id");
        if (!is_id && strcmp(atts[k], "size")) continue;
        if (parse_int(atts[k + 1], strlen(atts[k + 1]), 0, is_id ? UINT16_MAX : UINT32_MAX, &v) != CP_OK)
            return cp_tptp_fail(d, CP_EPROTO, d->xml.msg_off, "<unknown>: bad %s", atts[k]);
        if (is_id) d->msg.id = (uint16_t)v;
        else d->msg.size = (uint32_t)v;
    }
    return CP_OK;
}

/* ---- expat handlers ---------------------------------------------------------------------- */

static int begin_message(cp_tptp_dec *d, const XML_Char *name, const XML_Char **atts)
{
    tptp_xml_state *x = &d->xml;
    x->msg_off = event_at(d);
    d->msg.id = 0;
    d->msg.def = NULL;
    d->msg.offset = x->msg_off;
    d->msg.size = 0;
    d->msg.extra = 0;
    if (!strcmp(name, "unknown")) {
        x->in_msg = 2;
        return parse_unknown(d, atts);
    }
    const cp_tptp_def *def = cp_tptp_def_by_element(name, strlen(name));
    if (!def) {
        x->in_msg = 3;
        return CP_OK;
    }
    x->in_msg = 1;
    d->msg.id = def->id;
    d->msg.def = def;
    if (def->id == CP_TPTP_CUSTOM) {
        x->in_custom = 1;
        cp_buf_reset(&x->body);
    }
    return parse_message(d, def, atts);
}

static void XMLCALL on_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    cp_tptp_dec *d = ud;
    tptp_xml_state *x = &d->xml;
    if (d->status < 0) return;
    mark(d);
    uint64_t at = event_at(d);
    if (++x->depth > d->lim.max_depth) {
        FAIL(d, CP_ELIMIT, at, "elements nested deeper than %u", d->lim.max_depth);
        return;
    }
    for (size_t k = 0; atts[k]; k += 2) {
        size_t n = strlen(atts[k + 1]);
        if (n > d->lim.max_string) {
            FAIL(d, CP_ELIMIT, at, "<%.40s>: attribute %.40s is %zu bytes (limit %u)", name, atts[k], n,
                 d->lim.max_string);
            return;
        }
    }
    if (x->depth == 1) {
        if (strcmp(name, "TRACE") != 0) {
            FAIL(d, CP_EPROTO, at, "root element <%.40s> is not <TRACE>", name);
            return;
        }
        x->root_seen = 1;
        d->done = x->mark;
    } else if (x->depth == 2 && begin_message(d, name, atts) != CP_OK) {
        XML_StopParser(parser_of(d), XML_FALSE);
    }
}

static void XMLCALL on_end(void *ud, const XML_Char *name)
{
    cp_tptp_dec *d = ud;
    tptp_xml_state *x = &d->xml;
    if (d->status < 0) return;
    mark(d);
    if (x->depth-- != 2) return;
    int kind = x->in_msg;
    x->in_msg = 0;
    x->in_custom = 0;
    if (kind == 3) { /* an element that is no message: skipped */
        d->unknown++;
        d->done = x->mark;
        return;
    }
    d->msg.frequency = d->frequency;
    if (d->msg.def && d->msg.def->id == CP_TPTP_CUSTOM) {
        d->msg.v[0].s.p = x->body.len ? (const char *)x->body.data : "";
        d->msg.v[0].s.len = x->body.len;
    }
    if (cp_tptp_deliver(d, x->mark) != CP_OK) XML_StopParser(parser_of(d), XML_FALSE);
}

static void XMLCALL on_text(void *ud, const XML_Char *s, int len)
{
    cp_tptp_dec *d = ud;
    tptp_xml_state *x = &d->xml;
    if (d->status < 0) return;
    mark(d);
    if (!x->in_custom) return;
    if (x->body.len + (size_t)len > d->lim.max_string) {
        FAIL(d, CP_ELIMIT, x->msg_off, "<custom>: text longer than %u bytes", d->lim.max_string);
        return;
    }
    if (cp_buf_append(&x->body, s, (size_t)len) != CP_OK) FAIL(d, CP_ENOMEM, x->msg_off, "out of memory");
}

/* Everything else expat reads (declaration, comments, processing instructions, white
 * space outside elements) only moves the mark. */
static void XMLCALL on_other(void *ud, const XML_Char *s, int len)
{
    cp_tptp_dec *d = ud;
    if (d->status < 0) return;
    mark(d);
}

static void XMLCALL on_doctype(void *ud, const XML_Char *name, const XML_Char *sysid, const XML_Char *pubid,
                               int has_internal_subset)
{
    cp_tptp_dec *d = ud;
    if (d->status < 0) return;
    /* expat reports it at its internal subset; nothing since the mark was reported */
    FAIL(d, CP_EPROTO, d->xml.mark, "DOCTYPE is not allowed in a .trcxml file");
}

static void XMLCALL on_entity(void *ud, const XML_Char *name, int is_param, const XML_Char *value, int value_len,
                              const XML_Char *base, const XML_Char *sysid, const XML_Char *pubid,
                              const XML_Char *notation)
{
    cp_tptp_dec *d = ud;
    if (d->status < 0) return;
    FAIL(d, CP_EPROTO, event_at(d), "entity declarations are not allowed in a .trcxml file");
}

/* ---- feeding expat ------------------------------------------------------------------------- */

int cp_tptp_xml_init(cp_tptp_dec *d)
{
    XML_Parser p = XML_ParserCreate(NULL);
    if (!p) return CP_ENOMEM;
    d->xml.parser = p;
    XML_SetUserData(p, d);
    XML_SetElementHandler(p, on_start, on_end);
    XML_SetCharacterDataHandler(p, on_text);
    XML_SetDefaultHandlerExpand(p, on_other);
    XML_SetStartDoctypeDeclHandler(p, on_doctype);
    XML_SetEntityDeclHandler(p, on_entity);
#if XML_MAJOR_VERSION > 2 || (XML_MAJOR_VERSION == 2 && XML_MINOR_VERSION >= 6)
    /* a complete token must be reported as soon as it is fed (see feed) */
    XML_SetReparseDeferralEnabled(p, XML_FALSE);
#endif
    d->xml.chunk = d->lim.max_message < XML_CHUNK_MAX ? d->lim.max_message : XML_CHUNK_MAX;
    if (d->xml.chunk < CP_TPTP_XML_HEAD) d->xml.chunk = CP_TPTP_XML_HEAD; /* the head goes in one piece */
    return CP_OK;
}

void cp_tptp_xml_free(cp_tptp_dec *d)
{
    if (d->xml.parser) XML_ParserFree(parser_of(d));
    d->xml.parser = NULL;
}

static int parse_error(cp_tptp_dec *d, const char *prefix)
{
    if (d->status < 0) return d->status; /* a handler stopped expat */
    /* after the root element expat reports a name cut by the end of a feed as junk at its
     * start, and the same name whole as an invalid token at its end: one error for both,
     * at the end of the last thing that was well-formed */
    if (d->xml.root_seen && d->xml.depth == 0)
        return cp_tptp_fail(d, CP_EPROTO, d->xml.mark, "malformed content after </TRACE>");
    XML_Parser p = parser_of(d);
    return cp_tptp_fail(d, CP_EPROTO, event_at(d), "%s%s", prefix, XML_ErrorString(XML_GetErrorCode(p)));
}

/* Expat keeps a piece of markup it has not seen the end of, however long. To bound that
 * and still decode the same whatever the slicing, input goes to expat cut at multiples of
 * `chunk` (absolute offsets) and only there are the bytes held since the mark checked:
 * at those points expat has seen exactly the same bytes whatever the feeds were, so it
 * has reported the same events and the mark is the same. */
static int feed_chunks(cp_tptp_dec *d, const uint8_t *p, size_t n)
{
    tptp_xml_state *x = &d->xml;
    while (n > 0) {
        uint64_t next = (d->fed / x->chunk + 1) * x->chunk;
        size_t k = next - d->fed < n ? (size_t)(next - d->fed) : n;
        if (XML_Parse(parser_of(d), (const char *)p, (int)k, XML_FALSE) != XML_STATUS_OK) return parse_error(d, "");
        d->fed += k;
        p += k;
        n -= k;
        if (d->fed == next && d->fed - x->mark > d->lim.max_message)
            return cp_tptp_fail(d, CP_ELIMIT, x->mark, "XML markup longer than %u bytes", d->lim.max_message);
    }
    return d->status;
}

/* Expat guesses the encoding from the first bytes, from a lone first byte differently
 * than from more (UTF-16 detection): the first CP_TPTP_XML_HEAD bytes go to it together. */
int cp_tptp_xml_feed(cp_tptp_dec *d, const uint8_t *p, size_t n)
{
    tptp_xml_state *x = &d->xml;
    if (d->fed == 0) {
        size_t k = CP_TPTP_XML_HEAD - x->head_len < n ? CP_TPTP_XML_HEAD - x->head_len : n;
        memcpy(x->head + x->head_len, p, k);
        x->head_len += k;
        p += k;
        n -= k;
        if (x->head_len < CP_TPTP_XML_HEAD) return CP_OK;
        int st = feed_chunks(d, x->head, x->head_len);
        if (st != CP_OK) return st;
    }
    return feed_chunks(d, p, n);
}

int cp_tptp_xml_finish(cp_tptp_dec *d)
{
    tptp_xml_state *x = &d->xml;
    if (d->fed == 0 && x->head_len > 0 && feed_chunks(d, x->head, x->head_len) != CP_OK) return d->status;
    if (XML_Parse(parser_of(d), "", 0, XML_TRUE) == XML_STATUS_OK) return CP_OK;
    if (d->status < 0) return d->status;
    switch (XML_GetErrorCode(parser_of(d))) {
    case XML_ERROR_NO_ELEMENTS: /* the input ended with elements open */
        if (x->root_seen && x->depth == 1) return CP_OK; /* after a complete element: lenient */
        if (x->depth >= 2) return cp_tptp_fail(d, CP_EPROTO, x->msg_off, "truncated inside a message element");
        return cp_tptp_fail(d, CP_EPROTO, d->fed, "truncated: no <TRACE> element");
    case XML_ERROR_UNCLOSED_TOKEN:
    case XML_ERROR_PARTIAL_CHAR:
        return parse_error(d, "truncated: ");
    default:
        return parse_error(d, "");
    }
}
