/* fuzz_common.h -- shared code of the libFuzzer targets (header-only; each target is
 * one translation unit, so everything here is static inline: unused parts cost nothing).
 *
 * The decoder targets all call fz_check_decoder(): it decodes the same input several
 * ways and abort()s when the results disagree, so the fuzzer finds wrong answers, not
 * only crashes. The properties checked come from the cp_streams.h contract:
 *
 *   1. Slicing does not matter: feeding the input whole and feeding it cut at split
 *      points derived from the data give the same records (count and a digest of every
 *      field), the same final status, the same cp_dec_committed() and the same error text.
 *   2. Bookkeeping is sane: committed <= fed, fed == input size, the sink saw exactly
 *      cp_dec_records() records; cp_dec_finish() == CP_OK means committed == fed, and
 *      CP_AGAIN means a torn tail (committed < fed).
 *   3. A sink that stops at record k stops the decoder with CP_EABORT after exactly k-1
 *      delivered records.
 *   4. Strings converted to UTF-8 are valid UTF-8 (cp_str16_to_utf8, cp_json_str16).
 *   5. dictionary: cp_dec_next_word_id() == first_id + records.
 *
 * Bytes 0..1 of the input choose the slicing and the limits; the whole input (those
 * bytes included) is what the decoder sees, so fixture seeds stay valid stream files.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include "common/cp_common.h"
#include "streams/cp_streams.h"
#include "wire/cp_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small helpers -------------------------------------------------------------------- */

/* Prints why and aborts: libFuzzer reports the abort as a crash and saves the input. */
#define FZ_CHECK(cond, ...)                                                                                            \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "fuzz invariant failed: %s (%s:%d)\n  ", #cond, __FILE__, __LINE__);                     \
            fprintf(stderr, __VA_ARGS__);                                                                              \
            fprintf(stderr, "\n");                                                                                     \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)

/* Deterministic PRNG (xorshift64*), seeded from the input. */
static inline uint64_t fz_rand(uint64_t *s)
{
    uint64_t x = *s ? *s : 0x9E3779B97F4A7C15ull;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* A cheap 64-bit mix used to fold every field of every record into one digest (the
 * digest only has to differ when records differ; it is not a cryptographic hash). */
static inline void fz_mix(uint64_t *h, uint64_t v)
{
    uint64_t x = (*h ^ v) * 0x9E3779B97F4A7C15ull;
    *h = x ^ (x >> 29);
}
static inline void fz_hash(uint64_t *h, const void *p, size_t n)
{
    const uint8_t *b = p;
    uint64_t w;
    for (; n >= 8; n -= 8, b += 8) {
        memcpy(&w, b, 8);
        fz_mix(h, w);
    }
    w = 0;
    memcpy(&w, b, n);
    fz_mix(h, w ^ ((uint64_t)n << 56));
}
#define FZ_HASHV(h, v) fz_mix((h), (uint64_t)(v))

/* 1 if p[0..n) is well-formed UTF-8 without surrogates or overlongs. */
static inline int fz_valid_utf8(const uint8_t *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        size_t k;
        uint32_t cp;
        if (c < 0x80) { i++; continue; }
        if (c >= 0xC2 && c <= 0xDF) { k = 2; cp = c & 0x1F; }
        else if (c >= 0xE0 && c <= 0xEF) { k = 3; cp = c & 0x0F; }
        else if (c >= 0xF0 && c <= 0xF4) { k = 4; cp = c & 0x07; }
        else return 0;
        if (n - i < k) return 0;
        for (size_t j = 1; j < k; j++) {
            if ((p[i + j] & 0xC0) != 0x80) return 0;
            cp = (cp << 6) | (p[i + j] & 0x3F);
        }
        if ((k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10FFFF))) return 0;
        if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
        i += k;
    }
    return 1;
}

/* ---- wire commands ------------------------------------------------------------------ */

static inline int same_field(cp_field a, cp_field b) { return a.n == b.n && (a.n == 0 || a.p == b.p); }

/* Two parses of the same bytes must give the same command (fields alias the same input). */
static inline int same_cmd(const cp_cmd *a, const cp_cmd *b)
{
    if (a->type != b->type) return 0;
    switch (a->type) {
    case CP_CMD_HANDSHAKE:
        return a->u.hs.version == b->u.hs.version && same_field(a->u.hs.pod, b->u.hs.pod) &&
               same_field(a->u.hs.service, b->u.hs.service) && same_field(a->u.hs.ns, b->u.hs.ns);
    case CP_CMD_INIT_LEGACY:
    case CP_CMD_INIT:
        return same_field(a->u.init.ns, b->u.init.ns) && same_field(a->u.init.service, b->u.init.service) &&
               same_field(a->u.init.pod, b->u.init.pod) && same_field(a->u.init.stream, b->u.init.stream) &&
               a->u.init.seq == b->u.init.seq && a->u.init.reset == b->u.init.reset;
    case CP_CMD_DATA:
        return a->u.data.handle == b->u.data.handle && same_field(a->u.data.payload, b->u.data.payload);
    case CP_CMD_REPORT:
        return a->u.report.id == b->u.report.id && a->u.report.success == b->u.report.success;
    default:
        return 1;
    }
}

/* ---- the checking sink ---------------------------------------------------------------- */

typedef struct fz_sink {
    uint64_t records;   /* callbacks seen */
    uint64_t digest;    /* FNV of every field of every record */
    uint64_t stop_at;   /* 1-based record number whose callback returns non-zero; 0 = never */
    int convert;        /* also convert strings to UTF-8 / JSON and validate them */
    cp_buf tmp;
} fz_sink;

/* Folds a string's content (never its address) into the digest and, when asked, checks
 * the text converters on it. Reading every byte also lets ASan catch a string that
 * points outside the decoder's input or buffer. */
static inline void fz_str(fz_sink *s, cp_str16 str)
{
    FZ_HASHV(&s->digest, str.n);
    if (str.n) {
        FZ_CHECK(str.be != NULL, "string of %u units with a NULL pointer", str.n);
        fz_hash(&s->digest, str.be, (size_t)str.n * 2);
    }
    if (!s->convert) return;
    cp_buf_reset(&s->tmp);
    FZ_CHECK(cp_str16_to_utf8(&s->tmp, str) == CP_OK, "cp_str16_to_utf8 failed");
    FZ_CHECK(fz_valid_utf8(s->tmp.data, s->tmp.len), "cp_str16_to_utf8 produced invalid UTF-8 (%zu bytes)",
             s->tmp.len);
    FZ_CHECK(s->tmp.len <= (size_t)str.n * 3, "UTF-8 of %u units is %zu bytes (> 3 per unit)", str.n, s->tmp.len);
    cp_buf_reset(&s->tmp);
    FZ_CHECK(cp_json_str16(&s->tmp, str) == CP_OK, "cp_json_str16 failed");
    FZ_CHECK(s->tmp.len >= 2 && s->tmp.data[0] == '"' && s->tmp.data[s->tmp.len - 1] == '"',
             "cp_json_str16 output is not a quoted string");
    FZ_CHECK(fz_valid_utf8(s->tmp.data, s->tmp.len), "cp_json_str16 produced invalid UTF-8");
    for (size_t i = 0; i < s->tmp.len; i++)
        FZ_CHECK(s->tmp.data[i] >= 0x20, "raw control byte 0x%02x in JSON output", s->tmp.data[i]);
}

/* Common tail of every callback: counts, and says whether to stop here. */
static inline int fz_next(fz_sink *s, int tag)
{
    s->records++;
    FZ_HASHV(&s->digest, tag);
    return s->stop_at && s->records == s->stop_at;
}

static inline int fz_on_word(void *ud, const cp_word_rec *r)
{
    fz_sink *s = ud;
    FZ_HASHV(&s->digest, r->id);
    fz_str(s, r->word);
    return fz_next(s, 1);
}

static inline int fz_on_param(void *ud, const cp_param_rec *r)
{
    fz_sink *s = ud;
    fz_str(s, r->name);
    FZ_HASHV(&s->digest, r->index);
    FZ_HASHV(&s->digest, r->list);
    FZ_HASHV(&s->digest, r->order);
    fz_str(s, r->signature);
    return fz_next(s, 2);
}

static inline int fz_on_suspend(void *ud, const cp_suspend_rec *r)
{
    fz_sink *s = ud;
    FZ_HASHV(&s->digest, r->end_ms);
    FZ_HASHV(&s->digest, r->delta_ms);
    FZ_HASHV(&s->digest, r->duration_ms);
    return fz_next(s, 3);
}

static inline int fz_on_call(void *ud, const cp_call_rec *r)
{
    fz_sink *s = ud;
    FZ_HASHV(&s->digest, r->offset);
    FZ_HASHV(&s->digest, r->format);
    FZ_HASHV(&s->digest, r->start_ms);
    FZ_HASHV(&s->digest, r->time_delta);
    FZ_HASHV(&s->digest, r->method);
    FZ_HASHV(&s->digest, r->duration_ms);
    FZ_HASHV(&s->digest, r->calls);
    FZ_HASHV(&s->digest, r->thread_index);
    fz_str(s, r->thread_name);
    FZ_HASHV(&s->digest, r->logs_written);
    FZ_HASHV(&s->digest, r->logs_generated);
    FZ_HASHV(&s->digest, r->trace_file_index);
    FZ_HASHV(&s->digest, r->buffer_offset);
    FZ_HASHV(&s->digest, r->record_index);
    FZ_HASHV(&s->digest, r->cpu_time);
    FZ_HASHV(&s->digest, r->wait_time);
    FZ_HASHV(&s->digest, r->memory_used);
    FZ_HASHV(&s->digest, r->file_read);
    FZ_HASHV(&s->digest, r->file_written);
    FZ_HASHV(&s->digest, r->net_read);
    FZ_HASHV(&s->digest, r->net_written);
    FZ_HASHV(&s->digest, r->transactions);
    FZ_HASHV(&s->digest, r->queue_wait_ms);
    FZ_HASHV(&s->digest, r->nparams);
    FZ_CHECK(r->nparams == 0 || r->params != NULL, "%u params with a NULL array", r->nparams);
    for (uint32_t i = 0; i < r->nparams; i++) {
        const cp_call_param *p = &r->params[i];
        FZ_HASHV(&s->digest, p->id);
        FZ_HASHV(&s->digest, p->nvalues);
        FZ_CHECK(p->nvalues == 0 || p->values != NULL, "%u values with a NULL array", p->nvalues);
        for (uint32_t k = 0; k < p->nvalues; k++) fz_str(s, p->values[k]);
    }
    return fz_next(s, 4);
}

static inline int fz_on_trace(void *ud, const cp_trace_rec *r)
{
    fz_sink *s = ud;
    FZ_HASHV(&s->digest, (int)r->type);
    FZ_HASHV(&s->digest, r->timer_start_ms);
    FZ_HASHV(&s->digest, r->chunk_offset);
    FZ_HASHV(&s->digest, r->offset);
    FZ_HASHV(&s->digest, r->thread_id);
    FZ_HASHV(&s->digest, r->chunk_time_ms);
    FZ_HASHV(&s->digest, r->index);
    FZ_HASHV(&s->digest, r->time_ms);
    FZ_HASHV(&s->digest, r->id);
    FZ_HASHV(&s->digest, r->param_type);
    if (r->type == CP_TRACE_TAG && (r->param_type == 0 || r->param_type == 2)) fz_str(s, r->value);
    FZ_HASHV(&s->digest, r->ref_file);
    FZ_HASHV(&s->digest, r->ref_offset);
    return fz_next(s, 5);
}

static inline int fz_on_value(void *ud, const cp_value_rec *r)
{
    fz_sink *s = ud;
    FZ_HASHV(&s->digest, r->offset);
    fz_str(s, r->value);
    return fz_next(s, 6);
}

/* ---- one decode ----------------------------------------------------------------------- */

/* What one decode of an input produced. */
typedef struct fz_result {
    int feed_status;      /* first non-OK cp_dec_feed() status, or CP_OK */
    int finish_status;    /* cp_dec_finish() */
    uint64_t records;     /* cp_dec_records() */
    uint64_t seen;        /* callbacks the sink saw */
    uint64_t digest;
    uint64_t committed;
    uint64_t fed;
    int32_t next_id;      /* cp_dec_next_word_id() */
    char err[256];        /* cp_dec_error() */
} fz_result;

/* How to cut the input into feeds. */
enum { FZ_WHOLE, FZ_RANDOM, FZ_BYTES, FZ_HALVES };

/* Decodes data[0..size) with the given slicing. stop_at: see fz_sink. */
static inline void fz_decode(cp_stream_kind kind, const cp_dec_limits *lim, int32_t first_id, const uint8_t *data,
                      size_t size, int mode, uint64_t seed, uint64_t stop_at, int convert, fz_result *out)
{
    fz_sink s;
    memset(&s, 0, sizeof s);
    s.stop_at = stop_at;
    s.convert = convert;
    s.digest = 0xCBF29CE484222325ull;
    cp_buf_init(&s.tmp);
    cp_dec_sink sink = {
        .ud = &s,
        .on_word = fz_on_word,
        .on_param = fz_on_param,
        .on_suspend = fz_on_suspend,
        .on_call = fz_on_call,
        .on_trace = fz_on_trace,
        .on_value = fz_on_value,
    };
    cp_dec *d = cp_dec_new(kind, lim, &sink, first_id);
    FZ_CHECK(d != NULL, "cp_dec_new(%s) returned NULL", cp_stream_kind_name(kind));
    FZ_CHECK(cp_dec_kind(d) == kind, "cp_dec_kind mismatch");

    memset(out, 0, sizeof *out);
    size_t pos = 0;
    uint64_t rng = seed;
    for (unsigned feeds = 0; pos < size || feeds == 0; feeds++) {
        size_t n;
        switch (mode) {
        case FZ_WHOLE: n = size; break;
        case FZ_BYTES: n = 1; break;
        case FZ_HALVES: n = feeds == 0 ? (size_t)(seed % (size + 1)) : size - pos; break;
        default: {
            /* mostly small pieces (they cut fields), sometimes big ones, sometimes empty */
            uint64_t r = fz_rand(&rng);
            switch (r & 3) {
            case 0: n = 0; break;
            case 1: n = 1 + (size_t)((r >> 8) % 8); break;
            case 2: n = 1 + (size_t)((r >> 8) % 64); break;
            default: n = 1 + (size_t)((r >> 8) % 4096); break;
            }
            break;
        }
        }
        if (n > size - pos) n = size - pos;
        uint64_t before_fed = cp_dec_fed(d);
        int st = cp_dec_feed(d, data + pos, n);
        FZ_CHECK(st == CP_OK || st < 0, "cp_dec_feed returned %d (only CP_OK or an error are allowed)", st);
        if (st != CP_OK && out->feed_status == CP_OK) out->feed_status = st;
        /* once failed, every later call returns the same error */
        if (out->feed_status != CP_OK)
            FZ_CHECK(st == out->feed_status, "decoder failed with %d, later feed returned %d", out->feed_status, st);
        if (st == CP_OK) FZ_CHECK(cp_dec_fed(d) == before_fed + n, "cp_dec_fed did not grow by %zu", n);
        FZ_CHECK(cp_dec_committed(d) <= cp_dec_fed(d), "committed %llu > fed %llu",
                 (unsigned long long)cp_dec_committed(d), (unsigned long long)cp_dec_fed(d));
        pos += n;
    }
    out->finish_status = cp_dec_finish(d);
    FZ_CHECK(cp_dec_finish(d) == out->finish_status, "cp_dec_finish is not idempotent");
    out->records = cp_dec_records(d);
    out->seen = s.records;
    out->digest = s.digest;
    out->committed = cp_dec_committed(d);
    out->fed = cp_dec_fed(d);
    out->next_id = cp_dec_next_word_id(d);
    snprintf(out->err, sizeof out->err, "%s", cp_dec_error(d));

    /* per-decode bookkeeping */
    if (out->feed_status != CP_OK)
        FZ_CHECK(out->finish_status == out->feed_status, "feed failed with %d but finish says %d", out->feed_status,
                 out->finish_status);
    else
        FZ_CHECK(out->fed == size, "fed %llu of %zu bytes", (unsigned long long)out->fed, size);
    FZ_CHECK(out->committed <= out->fed, "committed %llu > fed %llu", (unsigned long long)out->committed,
             (unsigned long long)out->fed);
    if (out->finish_status == CP_OK)
        FZ_CHECK(out->committed == out->fed, "finish OK but committed %llu != fed %llu",
                 (unsigned long long)out->committed, (unsigned long long)out->fed);
    if (out->finish_status == CP_AGAIN)
        FZ_CHECK(out->committed < out->fed, "finish AGAIN (torn tail) but committed %llu == fed",
                 (unsigned long long)out->committed);
    FZ_CHECK(out->finish_status == CP_OK || out->finish_status == CP_AGAIN || out->finish_status < 0,
             "finish returned %d", out->finish_status);
    if (out->finish_status < 0) FZ_CHECK(out->err[0] != '\0', "failed (%d) without an error text", out->finish_status);
    /* the sink sees one callback per record; a callback that stops is not counted */
    uint64_t expect_seen = out->records + (out->finish_status == CP_EABORT ? 1 : 0);
    FZ_CHECK(out->seen == expect_seen, "sink saw %llu callbacks, decoder counts %llu records (status %d)",
             (unsigned long long)out->seen, (unsigned long long)out->records, out->finish_status);
    /* (after a sink stop inside a phrase, next id stays at the last whole phrase) */
    if (kind == CP_STREAM_DICTIONARY && out->finish_status != CP_EABORT)
        FZ_CHECK(out->next_id == first_id + (int32_t)out->records, "dictionary next id %d != %d + %llu records",
                 out->next_id, first_id, (unsigned long long)out->records);

    cp_dec_free(d);
    cp_buf_free(&s.tmp);
}

static inline void fz_same(const char *what, const fz_result *a, const fz_result *b)
{
    FZ_CHECK(a->records == b->records, "%s: %llu records vs %llu", what, (unsigned long long)a->records,
             (unsigned long long)b->records);
    FZ_CHECK(a->digest == b->digest, "%s: same record count, different record contents", what);
    FZ_CHECK(a->finish_status == b->finish_status, "%s: status %d vs %d (%s | %s)", what, a->finish_status,
             b->finish_status, a->err, b->err);
    FZ_CHECK(a->committed == b->committed, "%s: committed %llu vs %llu", what, (unsigned long long)a->committed,
             (unsigned long long)b->committed);
    FZ_CHECK(a->next_id == b->next_id, "%s: next word id %d vs %d", what, a->next_id, b->next_id);
    FZ_CHECK(strcmp(a->err, b->err) == 0, "%s: error text differs:\n  %s\n  %s", what, a->err, b->err);
}

/* Small limits, so that the fuzzer reaches every CP_ELIMIT path with short inputs. */
static inline void fz_tiny_limits(cp_dec_limits *l, uint64_t r)
{
    cp_dec_limits_default(l);
    l->max_string_units = 1 + (uint32_t)(r % 64);
    l->max_phrase = 1 + (uint32_t)((r >> 8) % 256);
    l->max_params = (uint32_t)((r >> 16) % 8);
    l->max_values = (uint32_t)((r >> 24) % 8);
    l->max_threads = (uint32_t)((r >> 32) % 8);
    l->max_chunk_events = 1 + (uint32_t)((r >> 40) % 64);
}

/* The whole property check for one decoder kind. Returns the whole-input result so
 * a target can compare kinds that share a format (sql/xml). */
static inline void fz_check_decoder(cp_stream_kind kind, const uint8_t *data, size_t size, fz_result *whole_out)
{
    /* bytes 0..1 steer the run; 0 when the input is shorter */
    uint8_t b0 = size > 0 ? data[0] : 0;
    uint8_t b1 = size > 1 ? data[1] : 0;
    uint64_t seed = ((uint64_t)b0 << 8 | b1) * 0x9E3779B97F4A7C15ull + size;

    cp_dec_limits lim;
    const cp_dec_limits *limp = NULL; /* defaults, as the server uses */
    if ((b1 & 7) == 7) {              /* one input in eight: tiny limits */
        fz_tiny_limits(&lim, fz_rand(&seed));
        limp = &lim;
    }
    int32_t first_id = (b1 & 8) ? (int32_t)(b0 % 100) : 0;

    fz_result whole, cut;
    fz_decode(kind, limp, first_id, data, size, FZ_WHOLE, seed, 0, 1, &whole);

    int mode = (b0 & 3) == 0 ? FZ_HALVES : FZ_RANDOM;
    if ((b0 & 3) == 1 && size <= 8192) mode = FZ_BYTES; /* byte by byte is slow on big inputs */
    fz_decode(kind, limp, first_id, data, size, mode, seed, 0, 0, &cut);
    fz_same(mode == FZ_BYTES ? "whole vs byte-by-byte" : mode == FZ_HALVES ? "whole vs two halves" : "whole vs random cuts",
            &whole, &cut);

    /* a sink that stops at record k, 1 <= k <= records */
    if (whole.records > 0) {
        uint64_t k = 1 + fz_rand(&seed) % whole.records;
        fz_result stopped;
        fz_decode(kind, limp, first_id, data, size, FZ_RANDOM, seed, k, 0, &stopped);
        FZ_CHECK(stopped.finish_status == CP_EABORT, "sink stopped at record %llu, status %d", (unsigned long long)k,
                 stopped.finish_status);
        FZ_CHECK(stopped.records == k - 1, "sink stopped at record %llu, decoder counts %llu", (unsigned long long)k,
                 (unsigned long long)stopped.records);
    }
    if (whole_out) *whole_out = whole;
}

#endif
