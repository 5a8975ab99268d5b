/* tptp_test.c -- the TPTP codec (streams/cp_tptp.h) against the foreign fixtures: every
 * fixture decodes with the right messages, .trcbin and .trcxml of the same trace agree
 * attribute by attribute, conversions reproduce the fixtures byte for byte, any slicing
 * of the input decodes the same, ISO-8859-1 streams convert, and bad input (binary and
 * XML) and unwritable values fail with a clear error naming an offset. */
#include "testutil.h"

#include "streams/cp_tptp.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FOREIGN "foreign/"

/* ---- what a decode produced ------------------------------------------------------------------ */

typedef struct got {
    int text;               /* also dump every message canonically into out */
    int with_pos;           /* the dump includes offset, size and extra */
    cp_buf out;
    uint64_t digest;        /* of every field of every message (positions included) */
    uint64_t seen, with_extra, stop_at;
    int headers;
    cp_tptp_header hdr;
    int64_t last_freq;
} got;

typedef struct result {
    int status;             /* of the first failing feed, else of finish */
    uint64_t messages, unknown, offset;
    char err[256];
} result;

static void mix(uint64_t *h, uint64_t v)
{
    uint64_t x = (*h ^ v) * 0x9E3779B97F4A7C15ull;
    *h = x ^ (x >> 29);
}
static void mix_bytes(uint64_t *h, const void *p, size_t n)
{
    const uint8_t *b = p;
    mix(h, n);
    for (size_t i = 0; i < n; i++) mix(h, b[i]);
}

/* A canonical line per message: element, then every attribute name=value in table order. */
static void dump(cp_buf *b, const cp_tptp_msg *m, int with_pos)
{
    if (with_pos) cp_buf_printf(b, "@%" PRIu64 " size=%u extra=%u ", m->offset, m->size, m->extra);
    if (!m->def) {
        cp_buf_printf(b, "unknown id=%u\n", m->id);
        return;
    }
    cp_buf_printf(b, "%s freq=%" PRId64, m->def->element, m->frequency);
    for (size_t i = 0; i < m->def->nattrs; i++) {
        const cp_tptp_value *v = &m->v[i];
        cp_buf_printf(b, " %s=", m->def->attrs[i].name);
        switch (m->def->attrs[i].type) {
        case CP_TPTP_STRING: cp_buf_printf(b, "[%.*s]", (int)v->s.len, v->s.p); break;
        case CP_TPTP_STRINGS:
            for (uint32_t k = 0; k < v->n; k++) cp_buf_printf(b, "[%.*s]", (int)v->strs[k].len, v->strs[k].p);
            break;
        case CP_TPTP_LONGS:
            for (uint32_t k = 0; k < v->n; k++) cp_buf_printf(b, "%s%" PRId64, k ? "|" : "", v->longs[k]);
            break;
        case CP_TPTP_DOUBLE: cp_buf_printf(b, "%.17g", v->d); break;
        default: cp_buf_printf(b, "%" PRId64, v->i); break;
        }
    }
    cp_buf_putc(b, '\n');
}

static int on_header(void *ud, const cp_tptp_header *h)
{
    got *g = ud;
    g->headers++;
    g->hdr = *h;
    mix(&g->digest, h->minor);
    mix(&g->digest, h->data_offset);
    return 0;
}

static int on_msg(void *ud, const cp_tptp_msg *m)
{
    got *g = ud;
    g->seen++;
    if (g->stop_at && g->seen == g->stop_at) return 1;
    g->with_extra += m->extra > 0;
    g->last_freq = m->frequency;
    if (g->text) dump(&g->out, m, g->with_pos);
    uint64_t *h = &g->digest;
    mix(h, m->id);
    mix(h, m->def != NULL);
    mix(h, m->offset);
    mix(h, m->size);
    mix(h, m->extra);
    mix(h, (uint64_t)m->frequency);
    for (size_t i = 0; m->def && i < m->def->nattrs; i++) {
        const cp_tptp_value *v = &m->v[i];
        switch (m->def->attrs[i].type) {
        case CP_TPTP_STRING: mix_bytes(h, v->s.p, v->s.len); break;
        case CP_TPTP_STRINGS:
            for (uint32_t k = 0; k < v->n; k++) mix_bytes(h, v->strs[k].p, v->strs[k].len);
            break;
        case CP_TPTP_LONGS: mix_bytes(h, v->longs, v->n * sizeof *v->longs); break;
        case CP_TPTP_DOUBLE: mix_bytes(h, &v->d, sizeof v->d); break;
        default: mix(h, (uint64_t)v->i); break;
        }
    }
    return 0;
}

enum { WHOLE, SPLIT, RANDOM, BYTES };

/* Decodes p[0..n) fed whole, in two pieces cut at `arg`, in random slices (seed arg) or
 * byte by byte. */
static void decode(cp_tptp_form form, const cp_tptp_limits *lim, const uint8_t *p, size_t n, int mode, uint64_t arg,
                   got *g, result *r)
{
    cp_tptp_sink sink = {.ud = g, .on_header = on_header, .on_msg = on_msg};
    cp_tptp_dec *d = cp_tptp_dec_new(form, lim, &sink);
    assert_non_null(d);
    memset(r, 0, sizeof *r);
    r->status = CP_OK;
    uint64_t rng = arg;
    for (size_t pos = 0, feeds = 0; pos < n && r->status == CP_OK; feeds++) {
        size_t k = n - pos;
        if (mode == SPLIT && feeds == 0) k = (size_t)arg;
        else if (mode == BYTES) k = 1;
        else if (mode == RANDOM) k = (size_t)(test_rand(&rng) % 9);
        if (k > n - pos) k = n - pos;
        r->status = cp_tptp_dec_feed(d, p + pos, k);
        pos += k;
    }
    int fin = cp_tptp_dec_finish(d);
    if (r->status == CP_OK) r->status = fin;
    else assert_int_equal(fin, r->status); /* the error sticks */
    assert_int_equal(cp_tptp_dec_finish(d), fin);
    r->messages = cp_tptp_dec_messages(d);
    r->unknown = cp_tptp_dec_unknown(d);
    r->offset = cp_tptp_dec_offset(d);
    snprintf(r->err, sizeof r->err, "%s", cp_tptp_dec_error(d));
    if (r->status < 0) assert_non_null(strstr(r->err, " at offset "));
    else assert_string_equal(r->err, "");
    cp_tptp_dec_free(d);
}

/* Decodes whole into a canonical dump (g->out, caller frees). */
static result decode_text(cp_tptp_form form, const uint8_t *p, size_t n, int with_pos, got *g)
{
    memset(g, 0, sizeof *g);
    g->text = 1;
    g->with_pos = with_pos;
    cp_buf_init(&g->out);
    result r;
    decode(form, NULL, p, n, WHOLE, 0, g, &r);
    cp_buf_putc(&g->out, 0);
    return r;
}

static result decode_quiet(cp_tptp_form form, const cp_tptp_limits *lim, const void *p, size_t n)
{
    got g;
    memset(&g, 0, sizeof g);
    result r;
    decode(form, lim, p, n, WHOLE, 0, &g, &r);
    return r;
}

static void assert_error(const result *r, int status, const char *what, uint64_t offset)
{
    if (r->status != status || !strstr(r->err, what))
        fail_msg("expected status %d with \"%s\", got %d \"%s\"", status, what, r->status, r->err);
    char at[48];
    snprintf(at, sizeof at, " at offset %" PRIu64, offset);
    if (!strstr(r->err, at)) fail_msg("error \"%s\" does not name offset %" PRIu64, r->err, offset);
    assert_int_equal(r->offset, offset);
}

/* ---- converting (decode -> encode) ------------------------------------------------------------- */

typedef struct conv {
    cp_tptp_enc enc;
    cp_buf out;
    int status;
} conv;

static int conv_msg(void *ud, const cp_tptp_msg *m)
{
    conv *c = ud;
    c->status = cp_tptp_enc_msg(&c->enc, m, &c->out);
    if (c->status != CP_OK) fail_msg("encoding message %u at offset %" PRIu64 ": %s", m->id, m->offset, c->enc.err);
    return 0;
}

/* p[0..n) in form `from` re-encoded in form `to` (caller frees out). */
static void convert(cp_tptp_form from, const uint8_t *p, size_t n, cp_tptp_form to, cp_buf *out)
{
    conv c;
    cp_tptp_enc_init(&c.enc, to);
    cp_buf_init(&c.out);
    assert_int_equal(cp_tptp_enc_begin(&c.enc, &c.out), CP_OK);
    cp_tptp_sink sink = {.ud = &c, .on_msg = conv_msg};
    cp_tptp_dec *d = cp_tptp_dec_new(from, NULL, &sink);
    assert_non_null(d);
    assert_int_equal(cp_tptp_dec_feed(d, p, n), CP_OK);
    if (cp_tptp_dec_finish(d) != CP_OK) fail_msg("decoding: %s", cp_tptp_dec_error(d));
    cp_tptp_dec_free(d);
    assert_int_equal(cp_tptp_enc_end(&c.enc, &c.out), CP_OK);
    *out = c.out;
}

static void assert_same_bytes(const cp_buf *a, const cp_buf *b, const char *what)
{
    if (a->len == b->len && memcmp(a->data, b->data, a->len) == 0) return;
    size_t i = 0;
    while (i < a->len && i < b->len && a->data[i] == b->data[i]) i++;
    fail_msg("%s: %zu vs %zu bytes, first difference at byte %zu", what, a->len, b->len, i);
}

/* ---- building messages ------------------------------------------------------------------------- */

static void msg_init(cp_tptp_msg *m, uint16_t id)
{
    memset(m, 0, sizeof *m);
    m->id = id;
    m->def = cp_tptp_def_of(id);
    assert_non_null(m->def);
}
static int attr(const cp_tptp_msg *m, const char *name)
{
    int i = cp_tptp_attr_index(m->def, name);
    if (i < 0) fail_msg("<%s> has no attribute %s", m->def->element, name);
    return i;
}
static void set_str(cp_tptp_msg *m, const char *name, const char *s)
{
    m->v[attr(m, name)].s = (cp_tptp_text){s, strlen(s)};
}
static void set_int(cp_tptp_msg *m, const char *name, int64_t v) { m->v[attr(m, name)].i = v; }

static void enc_ok(cp_tptp_enc *e, const cp_tptp_msg *m, cp_buf *out)
{
    if (cp_tptp_enc_msg(e, m, out) != CP_OK) fail_msg("encoding <%s>: %s", m->def->element, e->err);
}

/* Raw .trcbin pieces (little-endian) for hand-made bad files. */
static void put_le(cp_buf *b, uint64_t v, size_t n)
{
    for (size_t i = 0; i < n; i++) cp_buf_putc(b, (uint8_t)(v >> (8 * i)));
}
static void bin_header(cp_buf *b)
{
    cp_buf_init(b);
    cp_tptp_enc e;
    cp_tptp_enc_init(&e, CP_TPTP_BIN);
    assert_int_equal(cp_tptp_enc_begin(&e, b), CP_OK);
}
static void raw_msg(cp_buf *b, uint16_t id, uint32_t size, const void *body, size_t n)
{
    put_le(b, id, 2);
    put_le(b, size, 4);
    cp_buf_append(b, body, n);
}

/* ---- known answers ------------------------------------------------------------------------------ */

/* Finds the n-th (0-based) message with this element in a canonical dump. */
static const char *nth_line(const char *dump, const char *element, int n)
{
    size_t len = strlen(element);
    for (const char *p = dump; *p;) {
        if (!strncmp(p, element, len) && p[len] == ' ' && n-- == 0) return p;
        const char *nl = strchr(p, '\n');
        if (!nl) break;
        p = nl + 1;
    }
    fail_msg("no <%s> number %d", element, n);
    return NULL;
}
static void assert_line_has(const char *line, const char *what)
{
    const char *nl = strchr(line, '\n');
    size_t n = nl ? (size_t)(nl - line) : strlen(line);
    char *copy = strndup(line, n);
    if (!strstr(copy, what)) fail_msg("\"%s\" lacks \"%s\"", copy, what);
    free(copy);
}

static void test_fixtures_decode(void **state)
{
    (void)state;
    cp_buf f;
    got g;
    result r;

    load_fixture(FOREIGN "shop.trcbin", &f);
    r = decode_text(CP_TPTP_BIN, f.data, f.len, 0, &g);
    assert_int_equal(r.status, CP_OK);
    assert_int_equal(r.messages, 146);
    assert_int_equal(r.unknown, 0);
    assert_int_equal(r.offset, f.len);
    assert_int_equal(g.headers, 1);
    assert_int_equal(g.hdr.major, 1);
    assert_int_equal(g.hdr.minor, 0);
    assert_int_equal(g.hdr.platform, 1);
    assert_int_equal(g.hdr.big_endian, 0);
    assert_int_equal(g.hdr.data_offset, 12);
    assert_int_equal(g.with_extra, 0);
    const char *t = (const char *)g.out.data;
    assert_line_has(nth_line(t, "frequency", 0), "ticksPerSecond=1000000");
    assert_line_has(nth_line(t, "node", 0), "hostname=[shop-backend-7d9f8c6b5-s7x4d]");
    assert_line_has(nth_line(t, "node", 0), "time=1711546831682057");
    assert_line_has(nth_line(t, "classDef", 11), "name=[com.acme.shop.payment.\xC3\x9C" "berweisung]");
    assert_line_has(nth_line(t, "methodDef", 29), "name=[ausf\xC3\xBChren]");
    assert_line_has(nth_line(t, "monWait", 0),
                    "stackDepth=6 stackMethods=[com.acme.shop.payment.PaymentClient.ping][com.acme.shop.cache."
                    "ProductCache.put]");
    assert_line_has(nth_line(t, "monWait", 0), "stackLines=130|98|94|53|76|91");
    assert_line_has(nth_line(t, "methodEntry", 0), "freq=1000000");
    assert_line_has(nth_line(t, "methodEntry", 0), "threadCpuTime=37000");
    cp_buf_free(&g.out);
    cp_buf_free(&f);

    load_fixture(FOREIGN "shop.trcxml", &f);
    r = decode_text(CP_TPTP_XML, f.data, f.len, 0, &g);
    assert_int_equal(r.status, CP_OK);
    assert_int_equal(r.messages, 146);
    assert_int_equal(r.unknown, 0);
    assert_int_equal(r.offset, f.len - strlen("\n</TRACE>\n")); /* after the last message */
    assert_int_equal(g.headers, 0);
    cp_buf_free(&g.out);
    cp_buf_free(&f);

    load_fixture(FOREIGN "shop-be.trcbin", &f);
    r = decode_text(CP_TPTP_BIN, f.data, f.len, 0, &g);
    assert_int_equal(r.status, CP_OK);
    assert_int_equal(r.messages, 122);
    assert_int_equal(g.hdr.big_endian, 1);
    assert_int_equal(g.last_freq, 1000000000);
    t = (const char *)g.out.data;
    assert_null(strstr(t, "frequency "));
    assert_line_has(nth_line(t, "node", 0), "hostname=[shop-backend-7d9f8c6b5-9qq4c]");
    assert_line_has(nth_line(t, "node", 0), "time=1712899750601569573");
    assert_line_has(nth_line(t, "methodEntry", 0), "freq=1000000000");
    cp_buf_free(&g.out);
    cp_buf_free(&f);

    load_fixture(FOREIGN "shop-extras.trcbin", &f);
    r = decode_text(CP_TPTP_BIN, f.data, f.len, 1, &g);
    assert_int_equal(r.status, CP_OK);
    assert_int_equal(r.messages, 177);
    assert_int_equal(r.unknown, 2);
    assert_int_equal(g.hdr.minor, 1);
    assert_int_equal(g.hdr.data_offset, 20);
    assert_true(g.with_extra > 0);
    t = (const char *)g.out.data;
    assert_non_null(strstr(t, "@20 size=8 extra=0 frequency freq=1000000 ticksPerSecond=1000000\n"));
    assert_non_null(strstr(t, "@7913 size=13 extra=0 unknown id=1500\n"));
    assert_non_null(strstr(t, "@9024 size=6 extra=0 unknown id=77\n"));
    assert_non_null(strstr(t, "custom freq=1000000 body=[<annotation kind=\"deploy\" by=\"ci\">release 2024.03 &amp; "
                              "hotfix-7 | canary</annotation>]\n"));
    /* the appended bytes were skipped: the next message starts right after its size */
    const char *x = strstr(t, "extra=");
    int extras = 0;
    for (; x; x = strstr(x + 1, "extra=")) extras += x[6] != '0';
    assert_int_equal(extras, (int)g.with_extra);
    assert_non_null(strstr(t, "aggMethodEntry "));
    assert_non_null(strstr(t, "objReference "));
    assert_non_null(strstr(t, "runtimeShutdown "));
    cp_buf_free(&g.out);
    cp_buf_free(&f);
}

static void test_bin_and_xml_agree(void **state)
{
    (void)state;
    cp_buf bin, xml;
    got gb, gx;
    load_fixture(FOREIGN "shop.trcbin", &bin);
    load_fixture(FOREIGN "shop.trcxml", &xml);
    assert_int_equal(decode_text(CP_TPTP_BIN, bin.data, bin.len, 0, &gb).status, CP_OK);
    assert_int_equal(decode_text(CP_TPTP_XML, xml.data, xml.len, 0, &gx).status, CP_OK);
    assert_string_equal((const char *)gb.out.data, (const char *)gx.out.data);
    cp_buf_free(&gb.out);
    cp_buf_free(&gx.out);
    cp_buf_free(&bin);
    cp_buf_free(&xml);
}

static void test_conversions_are_byte_identical(void **state)
{
    (void)state;
    cp_buf bin, xml, out, back;
    load_fixture(FOREIGN "shop.trcbin", &bin);
    load_fixture(FOREIGN "shop.trcxml", &xml);
    convert(CP_TPTP_XML, xml.data, xml.len, CP_TPTP_BIN, &out);
    assert_same_bytes(&out, &bin, "shop.trcxml -> .trcbin vs shop.trcbin");
    cp_buf_free(&out);
    convert(CP_TPTP_BIN, bin.data, bin.len, CP_TPTP_XML, &out);
    assert_same_bytes(&out, &xml, "shop.trcbin -> .trcxml vs shop.trcxml");
    convert(CP_TPTP_XML, out.data, out.len, CP_TPTP_BIN, &back);
    assert_same_bytes(&back, &bin, "shop.trcbin -> .trcxml -> .trcbin");
    cp_buf_free(&out);
    cp_buf_free(&back);
    cp_buf_free(&bin);
    cp_buf_free(&xml);

    /* files cloudprof did not write: the re-encoded .trcbin (little-endian, offset 12, no
     * appended or unknown bytes) survives the trip through XML exactly */
    static const char *const others[] = {FOREIGN "shop-be.trcbin", FOREIGN "shop-extras.trcbin"};
    for (size_t i = 0; i < CP_ARRAY_LEN(others); i++) {
        cp_buf direct, x, via;
        load_fixture(others[i], &bin);
        convert(CP_TPTP_BIN, bin.data, bin.len, CP_TPTP_BIN, &direct);
        convert(CP_TPTP_BIN, bin.data, bin.len, CP_TPTP_XML, &x);
        convert(CP_TPTP_XML, x.data, x.len, CP_TPTP_BIN, &via);
        assert_same_bytes(&via, &direct, others[i]);
        got g1, g2;
        assert_int_equal(decode_text(CP_TPTP_BIN, bin.data, bin.len, 0, &g1).status, CP_OK);
        assert_int_equal(decode_text(CP_TPTP_XML, x.data, x.len, 0, &g2).status, CP_OK);
        assert_string_equal((const char *)g1.out.data, (const char *)g2.out.data);
        cp_buf_free(&g1.out);
        cp_buf_free(&g2.out);
        cp_buf_free(&direct);
        cp_buf_free(&x);
        cp_buf_free(&via);
        cp_buf_free(&bin);
    }
}

/* ---- slicing -------------------------------------------------------------------------------------- */

static void same(const result *a, const got *ga, const result *b, const got *gb, const char *what, uint64_t arg)
{
    if (a->status != b->status || a->messages != b->messages || a->unknown != b->unknown || a->offset != b->offset ||
        ga->digest != gb->digest || strcmp(a->err, b->err) != 0)
        fail_msg("%s (%" PRIu64 "): status %d/%d messages %" PRIu64 "/%" PRIu64 " offset %" PRIu64 "/%" PRIu64
                 " digest %s, errors \"%s\" / \"%s\"",
                 what, arg, a->status, b->status, a->messages, b->messages, a->offset, b->offset,
                 ga->digest == gb->digest ? "same" : "differs", a->err, b->err);
}

/* The next two-piece split after cut: every one, or in a quick run (testutil.h
 * test_quick(): the sanitizer build) every one in the first 512 and the last 64 bytes
 * (headers, the end) and every 13th between (the records' sizes vary, so the cuts still
 * fall at all kinds of offsets within them). */
static size_t next_cut(size_t cut, size_t n)
{
    if (!test_quick() || cut < 512 || cut + 64 >= n) return cut + 1;
    return cut + 13 < n - 64 ? cut + 13 : n - 64;
}

/* Whole vs every two-piece split vs random small slices. */
static void check_slicings(cp_tptp_form form, const cp_tptp_limits *lim, const uint8_t *p, size_t n, int every_split)
{
    got gw, gc;
    result w, c;
    memset(&gw, 0, sizeof gw);
    decode(form, lim, p, n, WHOLE, 0, &gw, &w);
    for (size_t cut = every_split ? 0 : n + 1; cut <= n; cut = next_cut(cut, n)) {
        memset(&gc, 0, sizeof gc);
        decode(form, lim, p, n, SPLIT, cut, &gc, &c);
        same(&w, &gw, &c, &gc, "split at", cut);
    }
    for (uint64_t seed = 1; seed <= 8; seed++) {
        memset(&gc, 0, sizeof gc);
        decode(form, lim, p, n, RANDOM, seed, &gc, &c);
        same(&w, &gw, &c, &gc, "random slices, seed", seed);
    }
}

static void test_any_slicing_decodes_the_same(void **state)
{
    (void)state;
    static const struct {
        const char *file;
        cp_tptp_form form;
    } fx[] = {{FOREIGN "shop.trcbin", CP_TPTP_BIN},
              {FOREIGN "shop-be.trcbin", CP_TPTP_BIN},
              {FOREIGN "shop-extras.trcbin", CP_TPTP_BIN},
              {FOREIGN "shop.trcxml", CP_TPTP_XML}};
    for (size_t i = 0; i < CP_ARRAY_LEN(fx); i++) {
        cp_buf f;
        load_fixture(fx[i].file, &f);
        check_slicings(fx[i].form, NULL, f.data, f.len, 1);
        /* cut files too: every message up to the cut, then the same truncation error */
        for (size_t cut = 1; cut < f.len; cut += f.len / 7) check_slicings(fx[i].form, NULL, f.data, cut, 0);
        cp_buf_free(&f);
    }
}

/* A file cut anywhere gives exactly the whole file's messages up to the cut. */
static void test_prefixes(void **state)
{
    (void)state;
    cp_buf f;
    load_fixture(FOREIGN "shop-extras.trcbin", &f);
    got whole;
    result w = decode_text(CP_TPTP_BIN, f.data, f.len, 1, &whole);
    assert_int_equal(w.status, CP_OK);
    for (size_t cut = 0; cut < f.len; cut += 97) {
        got g;
        result r = decode_text(CP_TPTP_BIN, f.data, cut, 1, &g);
        assert_int_equal(strncmp((const char *)whole.out.data, (const char *)g.out.data, g.out.len - 1), 0);
        if (r.status == CP_OK) assert_int_equal(r.offset, cut); /* cut on a message boundary */
        else assert_non_null(strstr(r.err, "truncated"));
        cp_buf_free(&g.out);
    }
    cp_buf_free(&whole.out);
    cp_buf_free(&f);

    /* .trcxml: a cut right after an element ends cleanly (leniently), one inside fails */
    load_fixture(FOREIGN "shop.trcxml", &f);
    const char *text = (const char *)f.data;
    const char *third = strstr(strstr(strstr(text, "/>\n") + 1, "/>\n") + 1, "/>\n");
    size_t cut = (size_t)(third - text) + 3;
    result r = decode_quiet(CP_TPTP_XML, NULL, f.data, cut);
    assert_int_equal(r.status, CP_OK);
    assert_int_equal(r.messages, 3);
    r = decode_quiet(CP_TPTP_XML, NULL, f.data, cut - 3);
    assert_int_equal(r.status, CP_EPROTO);
    assert_int_equal(r.messages, 2);
    assert_non_null(strstr(r.err, "truncated"));
    cp_buf_free(&f);
}

/* ---- encodings ------------------------------------------------------------------------------------ */

static void test_latin1_stream(void **state)
{
    (void)state;
    cp_tptp_enc e;
    cp_buf bin;
    cp_buf_init(&bin);
    cp_tptp_enc_init(&e, CP_TPTP_BIN);
    assert_int_equal(cp_tptp_enc_begin(&e, &bin), CP_OK);
    cp_tptp_msg m;
    msg_init(&m, CP_TPTP_ENCODING);
    set_str(&m, "name", "ISO-8859-1");
    enc_ok(&e, &m, &bin);
    assert_int_equal(e.latin1, 1);
    msg_init(&m, CP_TPTP_NODE);
    set_str(&m, "nodeId", "n1");
    set_str(&m, "hostname", "Krak\xC3\xB3w");
    set_str(&m, "ipaddress", "M\xC3\xBCller");
    set_int(&m, "time", 1234567890123456789);
    enc_ok(&e, &m, &bin);
    /* the file holds Latin-1 bytes, not UTF-8 */
    assert_non_null(memmem(bin.data, bin.len, "Krak\xF3w\0M\xFCller\0", 14));

    got g;
    result r = decode_text(CP_TPTP_BIN, bin.data, bin.len, 0, &g);
    assert_int_equal(r.status, CP_OK);
    assert_int_equal(r.messages, 2);
    assert_line_has(nth_line((const char *)g.out.data, "encoding", 0), "name=[ISO-8859-1]");
    assert_line_has(nth_line((const char *)g.out.data, "node", 0),
                    "hostname=[Krak\xC3\xB3w] ipaddress=[M\xC3\xBCller]");
    cp_buf_free(&g.out);

    cp_buf xml, back;
    convert(CP_TPTP_BIN, bin.data, bin.len, CP_TPTP_XML, &xml);
    cp_buf_putc(&xml, 0);
    assert_non_null(strstr((const char *)xml.data, "<encoding name=\"ISO-8859-1\"/>\n"));
    assert_non_null(strstr((const char *)xml.data, "hostname=\"Krak\xC3\xB3w\" ipaddress=\"M\xC3\xBCller\""));
    assert_non_null(strstr((const char *)xml.data, "time=\"1234567890.123456789\""));
    convert(CP_TPTP_XML, xml.data, xml.len - 1, CP_TPTP_BIN, &back);
    assert_same_bytes(&back, &bin, "Latin-1 .trcbin -> .trcxml -> .trcbin");
    cp_buf_free(&xml);
    cp_buf_free(&back);
    cp_buf_free(&bin);
}

static void test_encoding_names_and_repair(void **state)
{
    (void)state;
    static const char *const ok[] = {"UTF8", "UTF-8", "utf-8", "ISO-8859-1", "ISO8859_1", "latin1"};
    for (size_t i = 0; i < CP_ARRAY_LEN(ok); i++) {
        cp_buf b;
        bin_header(&b);
        raw_msg(&b, CP_TPTP_ENCODING, (uint32_t)strlen(ok[i]) + 1, ok[i], strlen(ok[i]) + 1);
        result r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
        if (r.status != CP_OK) fail_msg("encoding %s: %s", ok[i], r.err);
        cp_buf_free(&b);
    }
    cp_buf b;
    bin_header(&b);
    raw_msg(&b, CP_TPTP_ENCODING, 7, "KOI8-R", 7);
    result r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "unsupported encoding \"KOI8-R\"", 12);
    cp_buf_free(&b);

    /* invalid UTF-8 in a UTF-8 stream is repaired to U+FFFD, not refused */
    bin_header(&b);
    raw_msg(&b, CP_TPTP_GC_ROOT, 8 + 8 + 6, "\1\0\0\0\0\0\0\0\2\0\0\0\0\0\0\0a\xFF\xC3(b", 22);
    got g;
    r = decode_text(CP_TPTP_BIN, b.data, b.len, 0, &g);
    assert_int_equal(r.status, CP_OK);
    assert_string_equal((const char *)g.out.data,
                        "gcRoot freq=1000000000 classIdRef=1 objIdRef=2 type=[a\xEF\xBF\xBD\xEF\xBF\xBD(b]\n");
    cp_buf_free(&g.out);
    cp_buf_free(&b);
}

/* Times: ticks <-> decimal seconds at the frequency in effect. */
static void test_time_conversion(void **state)
{
    (void)state;
    static const struct {
        int64_t freq, ticks;
        const char *text;
    } cases[] = {
        {1000000, 1711546931024015, "1711546931.024015"},
        {1000000, 1711546930024880, "1711546930.02488"},
        {1000000, 5000000, "5"},
        {1000000000, 1185890426304424453, "1185890426.304424453"},
        {1000000000, -1, "-0.000000001"},
        {1000000000, INT64_MIN, "-9223372036.854775808"},
        {1000000000, INT64_MAX, "9223372036.854775807"},
        {3, 4, "1.333333333"},
        {3, -5, "-1.666666667"},
        {1, INT64_MAX, "9223372036854775807"},
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(cases); i++) {
        cp_tptp_enc e;
        cp_buf x;
        cp_buf_init(&x);
        cp_tptp_enc_init(&e, CP_TPTP_XML);
        assert_int_equal(cp_tptp_enc_begin(&e, &x), CP_OK);
        cp_tptp_msg m;
        msg_init(&m, CP_TPTP_FREQUENCY);
        set_int(&m, "ticksPerSecond", cases[i].freq);
        enc_ok(&e, &m, &x);
        msg_init(&m, CP_TPTP_AGENT_DESTROY);
        set_str(&m, "agentIdRef", "a");
        set_int(&m, "time", cases[i].ticks);
        enc_ok(&e, &m, &x);
        assert_int_equal(cp_tptp_enc_end(&e, &x), CP_OK);
        cp_buf_putc(&x, 0);
        char want[80];
        snprintf(want, sizeof want, "<agentDestroy agentIdRef=\"a\" time=\"%s\"/>\n", cases[i].text);
        if (!strstr((const char *)x.data, want)) fail_msg("case %zu: %s lacks %s", i, (const char *)x.data, want);
        got g;
        result r = decode_text(CP_TPTP_XML, x.data, x.len - 1, 0, &g);
        assert_int_equal(r.status, CP_OK);
        char line[128];
        snprintf(line, sizeof line, "agentDestroy freq=%" PRId64 " agentIdRef=[a] time=%" PRId64 "\n", cases[i].freq,
                 cases[i].ticks);
        assert_non_null(strstr((const char *)g.out.data, line));
        cp_buf_free(&g.out);
        cp_buf_free(&x);
    }
    /* rounding to the nearest tick when the decimal is finer than a tick */
    static const char doc[] = "<TRACE><frequency ticksPerSecond=\"1000\"/><agentDestroy time=\"1.0004\"/>"
                              "<agentDestroy time=\"1.0005\"/><agentDestroy time=\"-1.0005\"/></TRACE>";
    got g;
    result r = decode_text(CP_TPTP_XML, (const uint8_t *)doc, strlen(doc), 0, &g);
    assert_int_equal(r.status, CP_OK);
    assert_string_equal((const char *)g.out.data, "frequency freq=1000 ticksPerSecond=1000\n"
                                                  "agentDestroy freq=1000 agentIdRef=[] time=1000\n"
                                                  "agentDestroy freq=1000 agentIdRef=[] time=1001\n"
                                                  "agentDestroy freq=1000 agentIdRef=[] time=-1001\n");
    cp_buf_free(&g.out);
}

/* XML specifics: any attribute order, defaults, escapes in String[], custom text, unknown. */
static void test_xml_details(void **state)
{
    (void)state;
    static const char doc[] =
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- made by hand -->\n<TRACE>\n"
        "<gcRoot type=\"a&amp;b&#9;c\" classIdRef=\"-7\"/>\n"
        "<monWait stackLines=\"1|-2|3\" stackDepth=\"3\" stackMethods=\"a\\|b|c\\\\|\"/>\n"
        "<monWaited stackDepth=\"0\"/>\n"
        "<monContendedEntered stackDepth=\"1\" stackMethods=\"\" stackLines=\"9\"/>\n"
        "<custom>x &lt;y&gt;<b>z</b> &#10;</custom>\n"
        "<unknown id=\"1500\" size=\"13\"/>\n"
        "<somethingElse a=\"1\"><node/></somethingElse>\n"
        "<node hostname=\"h\"><ignored nodeId=\"x\"/>text</node>\n"
        "</TRACE>\n";
    got g;
    result r = decode_text(CP_TPTP_XML, (const uint8_t *)doc, strlen(doc), 1, &g);
    assert_int_equal(r.status, CP_OK);
    assert_int_equal(r.messages, 7);
    assert_int_equal(r.unknown, 2);
    const char *want =
        "@69 size=0 extra=0 gcRoot freq=1000000000 classIdRef=-7 objIdRef=0 type=[a&b\tc]\n"
        "@115 size=0 extra=0 monWait freq=1000000000 threadIdRef=0 time=0 objIdRef=0 timeout=0 stackDepth=3 "
        "stackMethods=[a|b][c\\][] stackLines=1|-2|3\n"
        "@186 size=0 extra=0 monWaited freq=1000000000 threadIdRef=0 time=0 objIdRef=0 timeout=0 stackDepth=0 "
        "stackMethods= stackLines=\n"
        "@214 size=0 extra=0 monContendedEntered freq=1000000000 threadIdRef=0 time=0 objIdRef=0 stackDepth=1 "
        "stackMethods=[] stackLines=9\n"
        "@283 size=0 extra=0 custom freq=1000000000 body=[x <y>z \n]\n"
        "@326 size=13 extra=0 unknown id=1500\n"
        "@402 size=0 extra=0 node freq=1000000000 nodeId=[] hostname=[h] ipaddress=[] timezone=0 time=0\n";
    assert_string_equal((const char *)g.out.data, want);
    cp_buf_free(&g.out);

    /* and back: escapes survive the encoder */
    cp_buf bin, xml, back;
    convert(CP_TPTP_XML, (const uint8_t *)doc, strlen(doc), CP_TPTP_BIN, &bin);
    convert(CP_TPTP_BIN, bin.data, bin.len, CP_TPTP_XML, &xml);
    cp_buf_putc(&xml, 0);
    assert_non_null(strstr((const char *)xml.data, "type=\"a&amp;b&#9;c\""));
    assert_non_null(strstr((const char *)xml.data, "stackMethods=\"a\\|b|c\\\\|\""));
    assert_non_null(strstr((const char *)xml.data, "<custom>x &lt;y&gt;z &#10;</custom>\n"));
    convert(CP_TPTP_XML, xml.data, xml.len - 1, CP_TPTP_BIN, &back);
    assert_same_bytes(&back, &bin, "hand-made XML -> .trcbin -> .trcxml -> .trcbin");
    cp_buf_free(&bin);
    cp_buf_free(&xml);
    cp_buf_free(&back);
}

/* ---- bad input -------------------------------------------------------------------------------------- */

static void test_bad_binary(void **state)
{
    (void)state;
    cp_buf b;
    result r;
    bin_header(&b);
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, 7);
    assert_error(&r, CP_EPROTO, "truncated file header", 0);
    r = decode_quiet(CP_TPTP_BIN, NULL, "", 0);
    assert_error(&r, CP_EPROTO, "truncated file header", 0);
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len); /* just a header: a valid empty trace */
    assert_int_equal(r.status, CP_OK);
    assert_int_equal(r.offset, 12);

    b.data[0] = 'X';
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "magic", 0);
    b.data[0] = '0';
    b.data[4] = 2;
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "unsupported major version 2", 4);
    b.data[4] = 1;
    b.data[7] = 5;
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "byte order 5", 7);
    b.data[7] = 1;
    b.data[8] = 11;
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "data offset 11", 8);
    b.data[8] = 40;
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "truncated before the data offset 40", 12);
    b.data[8] = 12;

    /* a good message, then one whose size ends inside its attributes */
    raw_msg(&b, CP_TPTP_FREQUENCY, 8, "\x40\x42\x0f\0\0\0\0\0", 8);
    size_t bad_at = b.len;
    raw_msg(&b, CP_TPTP_AGENT_DESTROY, 6, "abc\0\1\2", 6);
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "message 1004: size 6 ends inside attribute time", bad_at);
    assert_int_equal(r.messages, 1);
    /* a string without its NUL inside the size */
    b.len = bad_at;
    raw_msg(&b, CP_TPTP_AGENT_DESTROY, 3, "abc", 3);
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "ends inside attribute agentIdRef", bad_at);
    /* size 2^32-1 */
    b.len = bad_at;
    raw_msg(&b, 1500, UINT32_MAX, "", 0);
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_ELIMIT, "size 4294967295 over the limit", bad_at);
    /* a string without a NUL where the file ends: truncated */
    b.len = bad_at;
    raw_msg(&b, CP_TPTP_AGENT_DESTROY, 20, "abcdef", 6);
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "truncated message 1004 (6 of 20 bytes)", bad_at);
    assert_int_equal(r.messages, 1);
    b.len = bad_at + 3;
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "truncated message header", bad_at);
    /* a stackDepth of 10^9 */
    b.len = bad_at;
    uint8_t body[64] = {0};
    uint32_t depth = 1000000000;
    memcpy(body + 32, &depth, 4); /* threadIdRef, time, objIdRef, timeout, then stackDepth (LE host) */
    raw_msg(&b, CP_TPTP_MON_WAIT, sizeof body, body, sizeof body);
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_ELIMIT, "stackDepth 1000000000 over the limit 65536", bad_at);
    /* a negative one, and one the size cannot hold */
    depth = UINT32_MAX;
    memcpy(body + 32, &depth, 4);
    b.len = bad_at;
    raw_msg(&b, CP_TPTP_MON_WAIT, sizeof body, body, sizeof body);
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "negative stackDepth -1", bad_at);
    depth = 60;
    memcpy(body + 32, &depth, 4);
    b.len = bad_at;
    raw_msg(&b, CP_TPTP_MON_WAIT, sizeof body, body, sizeof body);
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "ends inside attribute stackMethods", bad_at);
    /* a zero frequency */
    b.len = bad_at;
    raw_msg(&b, CP_TPTP_FREQUENCY, 8, "\0\0\0\0\0\0\0\0", 8);
    r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
    assert_error(&r, CP_EPROTO, "frequency 0 is not positive", bad_at);
    /* smaller limits */
    cp_tptp_limits lim;
    cp_tptp_limits_default(&lim);
    lim.max_string = 3;
    b.len = bad_at;
    raw_msg(&b, CP_TPTP_AGENT_DESTROY, 13, "abcd\0\0\0\0\0\0\0\0\0", 13);
    r = decode_quiet(CP_TPTP_BIN, &lim, b.data, b.len);
    assert_error(&r, CP_ELIMIT, "attribute agentIdRef is 4 bytes (limit 3)", bad_at);
    cp_buf_free(&b);

    /* random bytes: never a crash, always an error (alone, and after a valid header) */
    uint64_t rng = 42;
    for (int i = 0; i < 200; i++) {
        uint8_t junk[512];
        size_t n = 1 + (size_t)(test_rand(&rng) % sizeof junk);
        for (size_t k = 0; k < n; k++) junk[k] = (uint8_t)test_rand(&rng);
        r = decode_quiet(CP_TPTP_BIN, NULL, junk, n);
        assert_true(r.status < 0);
        bin_header(&b);
        cp_buf_append(&b, junk, n);
        r = decode_quiet(CP_TPTP_BIN, NULL, b.data, b.len);
        assert_true(r.status < 0);
        assert_true(strlen(r.err) > 0);
        cp_buf_free(&b);
        r = decode_quiet(CP_TPTP_XML, NULL, junk, n);
        assert_true(r.status < 0);
    }
}

static result xml(const char *doc, const cp_tptp_limits *lim)
{
    result r = decode_quiet(CP_TPTP_XML, lim, doc, strlen(doc));
    /* and byte by byte: the same */
    got g;
    memset(&g, 0, sizeof g);
    result b;
    decode(CP_TPTP_XML, lim, (const uint8_t *)doc, strlen(doc), BYTES, 0, &g, &b);
    assert_int_equal(b.status, r.status);
    assert_string_equal(b.err, r.err);
    assert_int_equal(b.messages, r.messages);
    return r;
}

static void test_bad_xml(void **state)
{
    (void)state;
    result r;
    r = xml("<TRACE><node hostname=\"a\"/><node hostname=\"b\" <x/></TRACE>", NULL);
    assert_error(&r, CP_EPROTO, "not well-formed", 46);
    assert_int_equal(r.messages, 1);
    r = xml("<TRACE><node></nodx></TRACE>", NULL);
    assert_error(&r, CP_EPROTO, "mismatched tag", 15);
    r = xml("<trace></trace>", NULL);
    assert_error(&r, CP_EPROTO, "root element <trace> is not <TRACE>", 0);
    r = xml("", NULL);
    assert_error(&r, CP_EPROTO, "truncated", 0);
    r = xml("<TRACE><node hostname=\"a\"", NULL);
    assert_error(&r, CP_EPROTO, "truncated", 7);
    r = xml("<TRACE><custom>abc", NULL);
    assert_error(&r, CP_EPROTO, "truncated", 7);
    r = xml("<TRACE></TRACE><TRACE/>", NULL);
    assert_error(&r, CP_EPROTO, "malformed content after </TRACE>", 15);
    /* expat words this one differently when the name is cut: one error however fed */
    r = xml("<TRACE/>\n  race8\"/>", NULL);
    assert_error(&r, CP_EPROTO, "malformed content after </TRACE>", 11);
    r = xml("<TRACE/><!-- a -- b -->", NULL);
    assert_error(&r, CP_EPROTO, "malformed content after </TRACE>", 8);
    r = xml("<TRACE/>\n<!-- fine --><?pi fine?>\n", NULL);
    assert_int_equal(r.status, CP_OK);

    static const char laughs[] = "<?xml version=\"1.0\"?>\n"
                                 "<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;&lol;\">]>\n"
                                 "<TRACE><node hostname=\"&lol2;\"/></TRACE>\n";
    r = xml(laughs, NULL);
    assert_error(&r, CP_EPROTO, "DOCTYPE is not allowed", 22);
    assert_int_equal(r.messages, 0);

    cp_tptp_limits lim;
    cp_tptp_limits_default(&lim);
    lim.max_string = 4;
    r = xml("<TRACE><node hostname=\"abcd\"/><node hostname=\"abcde\"/></TRACE>", &lim);
    assert_error(&r, CP_ELIMIT, "attribute hostname is 5 bytes (limit 4)", 30);
    assert_int_equal(r.messages, 1);
    r = xml("<TRACE><custom>abcde</custom></TRACE>", &lim);
    assert_error(&r, CP_ELIMIT, "text longer than 4 bytes", 7);

    cp_tptp_limits_default(&lim);
    lim.max_depth = 3;
    r = xml("<TRACE><node><a/></node><node><a><b/></a></node></TRACE>", &lim);
    assert_error(&r, CP_ELIMIT, "nested deeper than 3", 33);
    assert_int_equal(r.messages, 1);

    r = xml("<TRACE><node time=\"1.5\"/><node time=\"1.1234567891\"/></TRACE>", NULL);
    assert_error(&r, CP_EPROTO, "<node>: bad time value in attribute time", 25);
    r = xml("<TRACE><node time=\"1e9\"/></TRACE>", NULL);
    assert_error(&r, CP_EPROTO, "bad time value", 7);
    r = xml("<TRACE><node time=\"99999999999999999999\"/></TRACE>", NULL);
    assert_error(&r, CP_EPROTO, "bad time value", 7);
    r = xml("<TRACE><node timezone=\"2147483648\"/></TRACE>", NULL);
    assert_error(&r, CP_EPROTO, "bad integer value in attribute timezone", 7);
    r = xml("<TRACE><frequency ticksPerSecond=\"-5\"/></TRACE>", NULL);
    assert_error(&r, CP_EPROTO, "frequency -5 is not positive", 7);
    r = xml("<TRACE><unknown id=\"70000\"/></TRACE>", NULL);
    assert_error(&r, CP_EPROTO, "<unknown>: bad id", 7);

    r = xml("<TRACE><monWait stackDepth=\"2\" stackMethods=\"a|b|c\" stackLines=\"1|2\"/></TRACE>", NULL);
    assert_error(&r, CP_EPROTO, "stackMethods has 3 elements but stackDepth is 2", 7);
    r = xml("<TRACE><monWait stackDepth=\"2\" stackMethods=\"a\\|b\" stackLines=\"1|2\"/></TRACE>", NULL);
    assert_error(&r, CP_EPROTO, "stackMethods has 1 elements but stackDepth is 2", 7);
    r = xml("<TRACE><monWait stackDepth=\"2\" stackMethods=\"a|b\" stackLines=\"1|x\"/></TRACE>", NULL);
    assert_error(&r, CP_EPROTO, "bad integer value in attribute stackLines", 7);
    r = xml("<TRACE><monWait stackDepth=\"1000000000\" stackMethods=\"a\"/></TRACE>", NULL);
    assert_error(&r, CP_ELIMIT, "stackDepth 1000000000 over the limit 65536", 7);
    r = xml("<TRACE><monWait stackDepth=\"-1\"/></TRACE>", NULL);
    assert_error(&r, CP_EPROTO, "negative stackDepth -1", 7);

    /* expat guesses UTF-16 from the first two bytes: the same guess however the bytes come */
    check_slicings(CP_TPTP_XML, NULL, (const uint8_t *)"a\0\0\0", 4, 1);
    check_slicings(CP_TPTP_XML, NULL, (const uint8_t *)"<\0T\0R\0A\0C\0E\0/\0>\0", 16, 1);
    check_slicings(CP_TPTP_XML, NULL, (const uint8_t *)"\xEF\xBB\xBF<TRACE/>", 11, 1);

    /* one piece of markup longer than max_message: refused at the same offset however fed */
    cp_tptp_limits_default(&lim);
    lim.max_message = 100;
    cp_buf big;
    cp_buf_init(&big);
    cp_buf_puts(&big, "<TRACE><node hostname=\"a\"/><node hostname=\"");
    for (int i = 0; i < 500; i++) cp_buf_putc(&big, 'x');
    cp_buf_puts(&big, "\"/></TRACE>");
    cp_buf_putc(&big, 0);
    r = xml((const char *)big.data, &lim);
    assert_error(&r, CP_ELIMIT, "XML markup longer than 100 bytes", 27);
    assert_int_equal(r.messages, 1);
    check_slicings(CP_TPTP_XML, &lim, big.data, big.len - 1, 1);
    cp_buf_free(&big);
}

/* ---- the encoders' refusals and the consumer stopping ----------------------------------------------- */

static void test_encoder_errors(void **state)
{
    (void)state;
    cp_tptp_enc e;
    cp_buf out;
    cp_buf_init(&out);
    cp_tptp_msg m;

    cp_tptp_enc_init(&e, CP_TPTP_BIN);
    assert_int_equal(cp_tptp_enc_begin(&e, &out), CP_OK);
    msg_init(&m, CP_TPTP_AGENT_DESTROY);
    m.v[0].s = (cp_tptp_text){"a\0b", 3};
    assert_int_equal(cp_tptp_enc_msg(&e, &m, &out), CP_EINVAL);
    assert_non_null(strstr(e.err, "NUL inside agentIdRef"));
    assert_int_equal(out.len, 12); /* nothing of the message was left */

    msg_init(&m, CP_TPTP_ENCODING);
    set_str(&m, "name", "KOI8-R");
    assert_int_equal(cp_tptp_enc_msg(&e, &m, &out), CP_EINVAL);
    assert_non_null(strstr(e.err, "unsupported"));
    set_str(&m, "name", "latin1");
    enc_ok(&e, &m, &out);
    size_t before = out.len;
    msg_init(&m, CP_TPTP_AGENT_DESTROY);
    set_str(&m, "agentIdRef", "\xC5\x81\xC3\xB3\x64\xC5\xBA"); /* Łódź: Ł and ź are not Latin-1 */
    assert_int_equal(cp_tptp_enc_msg(&e, &m, &out), CP_EINVAL);
    assert_non_null(strstr(e.err, "ISO-8859-1 cannot hold"));
    assert_int_equal(out.len, before);
    set_str(&m, "agentIdRef", "\xC3\xB3\xFF");
    assert_int_equal(cp_tptp_enc_msg(&e, &m, &out), CP_EINVAL);
    assert_non_null(strstr(e.err, "invalid UTF-8"));

    msg_init(&m, CP_TPTP_MON_WAIT);
    set_int(&m, "stackDepth", 2);
    cp_tptp_text one[1] = {{"a", 1}};
    m.v[attr(&m, "stackMethods")].n = 1;
    m.v[attr(&m, "stackMethods")].strs = one;
    assert_int_equal(cp_tptp_enc_msg(&e, &m, &out), CP_EINVAL);
    assert_non_null(strstr(e.err, "stackMethods count differs from stackDepth"));
    msg_init(&m, CP_TPTP_FREQUENCY);
    assert_int_equal(cp_tptp_enc_msg(&e, &m, &out), CP_EINVAL);
    assert_non_null(strstr(e.err, "must be positive"));
    assert_int_equal(out.len, before);

    /* XML cannot carry most control characters, even as references */
    cp_buf_reset(&out);
    cp_tptp_enc_init(&e, CP_TPTP_XML);
    msg_init(&m, CP_TPTP_AGENT_DESTROY);
    set_str(&m, "agentIdRef", "a\x01");
    assert_int_equal(cp_tptp_enc_msg(&e, &m, &out), CP_EINVAL);
    assert_non_null(strstr(e.err, "control character"));
    set_str(&m, "agentIdRef", "\xEF\xBF\xBE");
    assert_int_equal(cp_tptp_enc_msg(&e, &m, &out), CP_EINVAL);
    assert_int_equal(out.len, 0);
    set_str(&m, "agentIdRef", "\"<&>\t\r\n|\\");
    enc_ok(&e, &m, &out);
    cp_buf_putc(&out, 0);
    assert_string_equal((const char *)out.data,
                        "<agentDestroy agentIdRef=\"&quot;&lt;&amp;&gt;&#9;&#13;&#10;|\\\" time=\"0\"/>\n");

    /* an unknown message: <unknown/> in XML, nothing in .trcbin */
    cp_buf_reset(&out);
    memset(&m, 0, sizeof m);
    m.id = 1500;
    m.size = 13;
    enc_ok(&e, &m, &out);
    cp_buf_putc(&out, 0);
    assert_string_equal((const char *)out.data, "<unknown id=\"1500\" size=\"13\"/>\n");
    cp_buf_reset(&out);
    cp_tptp_enc_init(&e, CP_TPTP_BIN);
    assert_int_equal(cp_tptp_enc_msg(&e, &m, &out), CP_OK);
    assert_int_equal(out.len, 0);
    cp_buf_free(&out);
}

static void test_consumer_stops(void **state)
{
    (void)state;
    static const char *const files[] = {FOREIGN "shop-extras.trcbin", FOREIGN "shop.trcxml"};
    for (size_t i = 0; i < CP_ARRAY_LEN(files); i++) {
        cp_buf f;
        load_fixture(files[i], &f);
        cp_tptp_form form = i == 0 ? CP_TPTP_BIN : CP_TPTP_XML;
        for (uint64_t k = 1; k <= 146; k += 29) {
            got g;
            memset(&g, 0, sizeof g);
            g.stop_at = k;
            result r;
            decode(form, NULL, f.data, f.len, RANDOM, k, &g, &r);
            assert_int_equal(r.status, CP_EABORT);
            assert_int_equal(r.messages, k - 1);
            assert_non_null(strstr(r.err, "stopped by the consumer"));
        }
        cp_buf_free(&f);
    }
}

static void test_schema(void **state)
{
    (void)state;
    const cp_tptp_def *d = cp_tptp_def_of(CP_TPTP_CLASS_DEF);
    assert_non_null(d);
    assert_int_equal(d->nattrs, 19);
    assert_string_equal(d->element, "classDef");
    assert_ptr_equal(cp_tptp_def_by_element("classDef", 8), d);
    assert_null(cp_tptp_def_by_element("classDe", 7));
    assert_null(cp_tptp_def_of(1013));
    assert_null(cp_tptp_def_of(77));
    d = cp_tptp_def_of(CP_TPTP_METHOD_EXIT);
    assert_int_equal(d->attrs[cp_tptp_attr_index(d, "sequenceCounter")].type, CP_TPTP_STRING);
    d = cp_tptp_def_of(CP_TPTP_ENCODING);
    assert_string_equal(d->element, "encoding");
    assert_int_equal(d->nattrs, 1);
    assert_int_equal(d->attrs[0].type, CP_TPTP_STRING);
    d = cp_tptp_def_of(CP_TPTP_FREQUENCY);
    assert_string_equal(d->attrs[0].name, "ticksPerSecond");
    assert_int_equal(d->attrs[0].type, CP_TPTP_LONG);
    assert_int_equal(cp_tptp_attr_index(d, "nope"), -1);
    /* every id 0..65535 resolves consistently, element names are unique */
    size_t known = 0;
    for (uint32_t id = 0; id <= UINT16_MAX; id++) {
        const cp_tptp_def *x = cp_tptp_def_of((uint16_t)id);
        if (!x) continue;
        known++;
        assert_int_equal(x->id, id);
        assert_true(x->nattrs <= CP_TPTP_MAX_ATTRS);
        assert_ptr_equal(cp_tptp_def_by_element(x->element, strlen(x->element)), x);
    }
    assert_int_equal(known, 32);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schema),
        cmocka_unit_test(test_fixtures_decode),
        cmocka_unit_test(test_bin_and_xml_agree),
        cmocka_unit_test(test_conversions_are_byte_identical),
        cmocka_unit_test(test_any_slicing_decodes_the_same),
        cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_latin1_stream),
        cmocka_unit_test(test_encoding_names_and_repair),
        cmocka_unit_test(test_time_conversion),
        cmocka_unit_test(test_xml_details),
        cmocka_unit_test(test_bad_binary),
        cmocka_unit_test(test_bad_xml),
        cmocka_unit_test(test_encoder_errors),
        cmocka_unit_test(test_consumer_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
