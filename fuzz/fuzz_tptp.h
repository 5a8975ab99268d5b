/* fuzz_tptp.h -- the checks shared by the TPTP targets (fuzz_tptp_bin.c, fuzz_tptp_xml.c),
 * header-only like fuzz_common.h. fzt_check() decodes the input several ways and aborts
 * when the results disagree:
 *
 *   1. Slicing does not matter: whole, two pieces, random pieces or byte by byte give the
 *      same messages (a digest of every field, offsets included), the same status, the
 *      same cp_tptp_dec_offset(), the same counters and the same error text.
 *   2. Messages are sane: strings are valid UTF-8, arrays hold what their counts say and
 *      the counts equal the stackDepth before them, frequencies are positive, an error
 *      always has a text naming an offset.
 *   3. A sink that stops at message k stops the decoder with CP_EABORT after k-1.
 *   4. Round trips, for inputs that decode cleanly (default limits): re-encoding the
 *      messages in the input's own form succeeds (XML can carry everything the XML
 *      decoder produced, .trcbin everything the .trcbin decoder produced) and decoding
 *      that gives the same messages (positions aside) and re-encodes to the same bytes;
 *      when the other form can hold the messages too, going through it gives the same
 *      messages and the same bytes again. Times survive XML exactly only when every
 *      frequency is at most 10^9 ticks/s (9 fraction digits), so the XML legs are
 *      checked only then.
 *
 * The last two bytes of the input choose the slicing and (one input in eight) tiny
 * limits: the first ones are the same in every file ("0TBF", "<?xml").
 */
#ifndef FUZZ_TPTP_H
#define FUZZ_TPTP_H

#include "fuzz_common.h"
#include "streams/cp_tptp.h"

typedef struct fzt_sink {
    uint64_t seen, stop_at;
    uint64_t nodef;       /* unknown messages delivered (.trcbin drops them) */
    uint64_t digest;      /* every field of every message, positions included */
    uint64_t content;     /* known messages without positions: what a round trip keeps */
    int64_t max_freq;
    int encode;           /* also encode every message in both forms */
    cp_tptp_enc ebin, exml;
    cp_buf bin, xml;
    int bin_st, xml_st;   /* the first encoder refusal */
} fzt_sink;

typedef struct fzt_result {
    int status;           /* the first failing feed's, else finish's */
    uint64_t messages, unknown, offset, seen, digest, content;
    int64_t max_freq;
    char err[256];
} fzt_result;

static inline void fzt_text(uint64_t *h, const cp_tptp_text *t)
{
    FZ_CHECK(t->len == 0 || t->p != NULL, "string of %zu bytes with a NULL pointer", t->len);
    FZ_CHECK(fz_valid_utf8((const uint8_t *)t->p, t->len), "invalid UTF-8 in a decoded string");
    fz_hash(h, t->p, t->len);
}

/* Folds the message's values into h (and checks them). */
static inline void fzt_values(uint64_t *h, const cp_tptp_msg *m)
{
    int64_t last_int = 0;
    FZ_HASHV(h, m->id);
    FZ_HASHV(h, m->frequency);
    if (!m->def) return;
    FZ_CHECK(m->def->id == m->id, "message %u with the definition of %u", m->id, m->def->id);
    for (size_t i = 0; i < m->def->nattrs; i++) {
        const cp_tptp_value *v = &m->v[i];
        switch (m->def->attrs[i].type) {
        case CP_TPTP_STRING: fzt_text(h, &v->s); break;
        case CP_TPTP_STRINGS:
        case CP_TPTP_LONGS:
            FZ_CHECK((int64_t)v->n == last_int, "%s has %u elements, stackDepth %lld", m->def->attrs[i].name, v->n,
                     (long long)last_int);
            FZ_CHECK(v->n == 0 || (m->def->attrs[i].type == CP_TPTP_STRINGS ? v->strs != NULL : v->longs != NULL),
                     "%u elements with a NULL array", v->n);
            FZ_HASHV(h, v->n);
            for (uint32_t k = 0; k < v->n; k++) {
                if (m->def->attrs[i].type == CP_TPTP_STRINGS) fzt_text(h, &v->strs[k]);
                else FZ_HASHV(h, v->longs[k]);
            }
            break;
        case CP_TPTP_DOUBLE: fz_hash(h, &v->d, sizeof v->d); break;
        case CP_TPTP_INT: last_int = v->i; /* fall through */
        default: FZ_HASHV(h, v->i); break;
        }
    }
}

static inline int fzt_on_msg(void *ud, const cp_tptp_msg *m)
{
    fzt_sink *s = ud;
    s->seen++;
    if (s->stop_at && s->seen == s->stop_at) return 1;
    FZ_CHECK(m->frequency > 0, "frequency %lld", (long long)m->frequency);
    if (m->frequency > s->max_freq) s->max_freq = m->frequency;
    FZ_HASHV(&s->digest, m->offset);
    FZ_HASHV(&s->digest, m->size);
    FZ_HASHV(&s->digest, m->extra);
    FZ_HASHV(&s->digest, m->def != NULL);
    fzt_values(&s->digest, m);
    if (m->def) fzt_values(&s->content, m);
    else s->nodef++;
    if (s->encode) {
        if (s->bin_st == CP_OK) s->bin_st = cp_tptp_enc_msg(&s->ebin, m, &s->bin);
        if (s->xml_st == CP_OK) s->xml_st = cp_tptp_enc_msg(&s->exml, m, &s->xml);
        FZ_CHECK(s->bin_st == CP_OK || s->bin_st == CP_EINVAL, "encoder returned %d", s->bin_st);
        FZ_CHECK(s->xml_st == CP_OK || s->xml_st == CP_EINVAL, "encoder returned %d", s->xml_st);
    }
    return 0;
}

static inline int fzt_on_header(void *ud, const cp_tptp_header *h)
{
    fzt_sink *s = ud;
    FZ_CHECK(h->major == 1 && h->data_offset >= 12 && h->big_endian <= 1, "header %u.%u offset %u order %u", h->major,
             h->minor, h->data_offset, h->big_endian);
    FZ_HASHV(&s->digest, h->minor);
    FZ_HASHV(&s->digest, h->platform);
    FZ_HASHV(&s->digest, h->big_endian);
    FZ_HASHV(&s->digest, h->data_offset);
    return 0;
}

/* Decodes data[0..size) with the slicing `mode` (FZ_WHOLE, FZ_HALVES, FZ_RANDOM, FZ_BYTES).
 * With encode set, s->bin / s->xml receive the messages re-encoded as whole files. The
 * caller frees s (fzt_sink_free). */
static inline void fzt_decode(cp_tptp_form form, const cp_tptp_limits *lim, const uint8_t *data, size_t size, int mode,
                              uint64_t seed, uint64_t stop_at, int encode, fzt_sink *s, fzt_result *out)
{
    memset(s, 0, sizeof *s);
    s->stop_at = stop_at;
    s->encode = encode;
    s->digest = s->content = 0xCBF29CE484222325ull;
    cp_tptp_enc_init(&s->ebin, CP_TPTP_BIN);
    cp_tptp_enc_init(&s->exml, CP_TPTP_XML);
    cp_buf_init(&s->bin);
    cp_buf_init(&s->xml);
    if (encode) {
        FZ_CHECK(cp_tptp_enc_begin(&s->ebin, &s->bin) == CP_OK, "enc_begin");
        FZ_CHECK(cp_tptp_enc_begin(&s->exml, &s->xml) == CP_OK, "enc_begin");
    }
    cp_tptp_sink sink = {.ud = s, .on_header = fzt_on_header, .on_msg = fzt_on_msg};
    cp_tptp_dec *d = cp_tptp_dec_new(form, lim, &sink);
    FZ_CHECK(d != NULL, "cp_tptp_dec_new returned NULL");
    memset(out, 0, sizeof *out);
    uint64_t rng = seed;
    size_t pos = 0;
    for (unsigned feeds = 0; pos < size && out->status == CP_OK; feeds++) {
        size_t n = size - pos;
        if (mode == FZ_BYTES) n = 1;
        else if (mode == FZ_HALVES && feeds == 0) n = (size_t)(seed % (size + 1));
        else if (mode == FZ_RANDOM) {
            uint64_t r = fz_rand(&rng);
            n = (r & 3) == 0 ? 0 : (r & 3) == 1 ? 1 + (size_t)((r >> 8) % 8) : 1 + (size_t)((r >> 8) % 512);
        }
        if (n > size - pos) n = size - pos;
        out->status = cp_tptp_dec_feed(d, data + pos, n);
        FZ_CHECK(out->status == CP_OK || out->status < 0, "feed returned %d", out->status);
        pos += n;
    }
    int fin = cp_tptp_dec_finish(d);
    if (out->status == CP_OK) out->status = fin;
    FZ_CHECK(fin == out->status, "feed failed with %d, finish says %d", out->status, fin);
    FZ_CHECK(cp_tptp_dec_finish(d) == fin, "cp_tptp_dec_finish is not idempotent");
    out->messages = cp_tptp_dec_messages(d);
    out->unknown = cp_tptp_dec_unknown(d);
    out->offset = cp_tptp_dec_offset(d);
    out->seen = s->seen;
    out->digest = s->digest;
    out->content = s->content;
    out->max_freq = s->max_freq;
    snprintf(out->err, sizeof out->err, "%s", cp_tptp_dec_error(d));
    cp_tptp_dec_free(d);
    if (encode) {
        FZ_CHECK(cp_tptp_enc_end(&s->ebin, &s->bin) == CP_OK, "enc_end");
        FZ_CHECK(cp_tptp_enc_end(&s->exml, &s->xml) == CP_OK, "enc_end");
    }

    FZ_CHECK(out->status == CP_OK || out->status < 0, "status %d", out->status);
    if (out->status < 0) FZ_CHECK(strstr(out->err, " at offset ") != NULL, "error without an offset: %s", out->err);
    else FZ_CHECK(out->err[0] == 0, "status OK with an error text: %s", out->err);
    if (out->status == CP_OK) FZ_CHECK(out->offset <= size, "offset %llu past %zu", (unsigned long long)out->offset, size);
    FZ_CHECK(out->unknown <= out->messages || form == CP_TPTP_XML, "unknown %llu > messages %llu",
             (unsigned long long)out->unknown, (unsigned long long)out->messages);
    uint64_t expect_seen = out->messages + (out->status == CP_EABORT ? 1 : 0);
    FZ_CHECK(out->seen == expect_seen, "sink saw %llu, decoder counts %llu (status %d)", (unsigned long long)out->seen,
             (unsigned long long)out->messages, out->status);
}

static inline void fzt_sink_free(fzt_sink *s)
{
    cp_buf_free(&s->bin);
    cp_buf_free(&s->xml);
}

static inline void fzt_same(const char *what, const fzt_result *a, const fzt_result *b)
{
    FZ_CHECK(a->status == b->status, "%s: status %d vs %d (%s | %s)", what, a->status, b->status, a->err, b->err);
    FZ_CHECK(a->messages == b->messages && a->unknown == b->unknown, "%s: %llu/%llu messages vs %llu/%llu", what,
             (unsigned long long)a->messages, (unsigned long long)a->unknown, (unsigned long long)b->messages,
             (unsigned long long)b->unknown);
    FZ_CHECK(a->digest == b->digest, "%s: same count, different messages", what);
    FZ_CHECK(a->offset == b->offset, "%s: offset %llu vs %llu", what, (unsigned long long)a->offset,
             (unsigned long long)b->offset);
    FZ_CHECK(strcmp(a->err, b->err) == 0, "%s: error text differs:\n  %s\n  %s", what, a->err, b->err);
}

static inline int fzt_same_bytes(const cp_buf *a, const cp_buf *b)
{
    return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

/* Decodes an encoder's output (which must decode cleanly, with the messages of `want`)
 * and returns its sink, whose bin/xml hold the messages re-encoded again. */
static inline void fzt_reread(const char *what, cp_tptp_form form, const cp_buf *bytes, const fzt_result *want,
                              fzt_sink *s)
{
    fzt_result r;
    fzt_decode(form, NULL, bytes->data, bytes->len, FZ_WHOLE, 0, 0, 1, s, &r);
    FZ_CHECK(r.status == CP_OK, "%s: the encoder's output does not decode: %s", what, r.err);
    FZ_CHECK(r.content == want->content, "%s: different messages after the round trip", what);
}

static inline void fzt_round_trips(cp_tptp_form form, const fzt_sink *orig, const fzt_result *whole)
{
    int xml_exact = whole->max_freq <= 1000000000;
    fzt_sink s1, s2;
    if (form == CP_TPTP_BIN) {
        FZ_CHECK(orig->bin_st == CP_OK, ".trcbin encoder refused a decoded .trcbin message: %s", orig->ebin.err);
        fzt_reread(".trcbin -> .trcbin", CP_TPTP_BIN, &orig->bin, whole, &s1);
        FZ_CHECK(fzt_same_bytes(&s1.bin, &orig->bin), ".trcbin re-encoding is not a fixpoint");
        fzt_sink_free(&s1);
        if (orig->xml_st == CP_OK && xml_exact) {
            fzt_reread(".trcbin -> .trcxml", CP_TPTP_XML, &orig->xml, whole, &s2);
            FZ_CHECK(s2.bin_st == CP_OK, ".trcxml -> .trcbin refused: %s", s2.ebin.err);
            FZ_CHECK(fzt_same_bytes(&s2.bin, &orig->bin), ".trcbin -> .trcxml -> .trcbin differs from .trcbin -> .trcbin");
            fzt_sink_free(&s2);
        }
    } else {
        FZ_CHECK(orig->xml_st == CP_OK, ".trcxml encoder refused a decoded .trcxml message: %s", orig->exml.err);
        if (xml_exact) {
            fzt_reread(".trcxml -> .trcxml", CP_TPTP_XML, &orig->xml, whole, &s1);
            FZ_CHECK(fzt_same_bytes(&s1.xml, &orig->xml), ".trcxml re-encoding is not a fixpoint");
            fzt_sink_free(&s1);
        }
        if (orig->bin_st == CP_OK) {
            fzt_reread(".trcxml -> .trcbin", CP_TPTP_BIN, &orig->bin, whole, &s2);
            FZ_CHECK(fzt_same_bytes(&s2.bin, &orig->bin), ".trcbin re-encoding is not a fixpoint");
            if (xml_exact && orig->nodef == 0)
                FZ_CHECK(fzt_same_bytes(&s2.xml, &orig->xml), ".trcxml -> .trcbin -> .trcxml differs");
            fzt_sink_free(&s2);
        }
    }
}

/* Small limits, so that every CP_ELIMIT path is reached by short inputs. */
static inline void fzt_tiny_limits(cp_tptp_limits *l, uint64_t r)
{
    cp_tptp_limits_default(l);
    l->max_message = 1 + (uint32_t)(r % 256);
    l->max_string = 1 + (uint32_t)((r >> 8) % 64);
    l->max_stack_depth = (uint32_t)((r >> 16) % 8);
    l->max_depth = 1 + (uint32_t)((r >> 24) % 8);
}

static inline void fzt_check(cp_tptp_form form, const uint8_t *data, size_t size)
{
    uint8_t b0 = size > 0 ? data[size - 1] : 0;
    uint8_t b1 = size > 1 ? data[size - 2] : 0;
    uint64_t seed = ((uint64_t)b0 << 8 | b1) * 0x9E3779B97F4A7C15ull + size;
    cp_tptp_limits lim;
    const cp_tptp_limits *limp = NULL;
    if ((b1 & 7) == 7) {
        fzt_tiny_limits(&lim, fz_rand(&seed));
        limp = &lim;
    }

    fzt_sink whole_sink, cut_sink;
    fzt_result whole, cut;
    fzt_decode(form, limp, data, size, FZ_WHOLE, seed, 0, limp == NULL, &whole_sink, &whole);

    int mode = (b0 & 3) == 0 ? FZ_HALVES : FZ_RANDOM;
    if ((b0 & 3) == 1 && size <= 8192) mode = FZ_BYTES;
    fzt_decode(form, limp, data, size, mode, seed, 0, 0, &cut_sink, &cut);
    fzt_same(mode == FZ_BYTES ? "whole vs byte by byte" : mode == FZ_HALVES ? "whole vs two pieces" : "whole vs random",
             &whole, &cut);
    fzt_sink_free(&cut_sink);

    if (whole.messages > 0) {
        uint64_t k = 1 + fz_rand(&seed) % whole.messages;
        fzt_result stopped;
        fzt_decode(form, limp, data, size, FZ_RANDOM, seed, k, 0, &cut_sink, &stopped);
        FZ_CHECK(stopped.status == CP_EABORT && stopped.messages == k - 1,
                 "sink stopped at message %llu: status %d, %llu messages", (unsigned long long)k, stopped.status,
                 (unsigned long long)stopped.messages);
        fzt_sink_free(&cut_sink);
    }

    if (whole.status == CP_OK && !limp) fzt_round_trips(form, &whole_sink, &whole);
    fzt_sink_free(&whole_sink);
}

#endif
