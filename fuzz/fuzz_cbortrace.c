/* fuzz_cbortrace.c -- libFuzzer target: the CBOR raw trace decoder (cp_cbortrace.h). The
 * input is a raw trace; it is decoded whole, then cut into pieces (two halves, random
 * slices or byte by byte), then with a sink that stops early, and the target aborts when
 * the results disagree. Properties checked:
 *
 *   1. Slicing does not matter: the same events (count and a digest of every field), the
 *      same final status, offset, error text and counters.
 *   2. Bookkeeping is sane: offset <= input size, and == size when finish says CP_OK; an
 *      error text names an offset and is never an internal error; the counters match
 *      the events the sink saw (BEGINs = records, SKIPPEDs = skipped).
 *   3. Events nest: BEGIN opens depth d only under d open records (and depth 0 always
 *      has TraceBegin), ATTR / EXCEPTION / END belong to the innermost open record,
 *      SKIPPED comes between records; nothing is left open unless the sink stopped.
 *   4. Every text is valid UTF-8.
 *   5. A sink that stops at event k stops the decoder with CP_EABORT after exactly k
 *      callbacks.
 *
 * Bytes 0..1 of the input choose the slicing and the limits; the whole input (those
 * bytes included) is what the decoder sees, so a raw trace file is a valid seed. */
#include "fuzz_common.h"

#include "streams/cp_cbortrace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct cbt_sink {
    uint64_t events, begins, skipped;
    uint64_t digest;
    uint64_t stop_at;       /* 1-based event whose callback returns non-zero; 0 = never */
    uint32_t open;          /* records open (BEGIN without END) */
    int last;               /* type of the last event */
} cbt_sink;

static void cbt_text(cbt_sink *s, cp_cbt_text t)
{
    FZ_HASHV(&s->digest, t.len);
    if (!t.len) return;
    FZ_CHECK(t.p != NULL, "text of %zu bytes with a NULL pointer", t.len);
    fz_hash(&s->digest, t.p, t.len);
    FZ_CHECK(fz_valid_utf8((const uint8_t *)t.p, t.len), "invalid UTF-8 in an event text (%zu bytes)", t.len);
}

static int cbt_on_event(void *ud, const cp_cbt_event *e)
{
    cbt_sink *s = ud;
    s->events++;
    s->last = (int)e->type;
    FZ_HASHV(&s->digest, (int)e->type);
    FZ_HASHV(&s->digest, e->offset);
    FZ_HASHV(&s->digest, e->depth);
    switch (e->type) {
    case CP_CBT_BEGIN:
        FZ_CHECK(e->depth == s->open, "BEGIN at depth %u with %u records open", e->depth, s->open);
        FZ_CHECK(e->depth > 0 || e->has_begin, "a top-level BEGIN without TraceBegin");
        FZ_CHECK(e->method_id < (UINT64_C(1) << 24) && e->start_tick < (UINT64_C(1) << 40), "prolog fields too wide");
        s->open++;
        s->begins++;
        FZ_HASHV(&s->digest, e->big_endian);
        FZ_HASHV(&s->digest, e->method_id);
        cbt_text(s, e->method);
        FZ_HASHV(&s->digest, e->start_tick);
        FZ_HASHV(&s->digest, e->has_begin);
        FZ_HASHV(&s->digest, e->clock_ms);
        cbt_text(s, e->trace_id);
        break;
    case CP_CBT_ATTR:
        FZ_CHECK(e->depth + 1 == s->open, "ATTR at depth %u with %u records open", e->depth, s->open);
        cbt_text(s, e->key);
        cbt_text(s, e->value);
        break;
    case CP_CBT_EXCEPTION:
        FZ_CHECK(e->depth + 1 == s->open, "EXCEPTION at depth %u with %u records open", e->depth, s->open);
        cbt_text(s, e->text);
        break;
    case CP_CBT_END:
        FZ_CHECK(e->depth + 1 == s->open, "END at depth %u with %u records open", e->depth, s->open);
        FZ_CHECK(e->end_tick < (UINT64_C(1) << 40), "epilog tick too wide");
        s->open--;
        FZ_HASHV(&s->digest, e->big_endian);
        FZ_HASHV(&s->digest, e->end_tick);
        FZ_HASHV(&s->digest, e->calls);
        break;
    case CP_CBT_SKIPPED:
        FZ_CHECK(s->open == 0 && e->depth == 0, "SKIPPED inside a record");
        FZ_CHECK(memmem(e->text.p, e->text.len, " at offset ", 11) != NULL, "SKIPPED without a reason naming an offset");
        s->skipped++;
        cbt_text(s, e->text);
        break;
    default:
        FZ_CHECK(0, "unknown event type %d", (int)e->type);
    }
    return s->stop_at && s->events == s->stop_at;
}

typedef struct cbt_result {
    int feed_status, finish_status;
    uint64_t events, digest, offset, items, records, skipped, methods;
    uint32_t open;
    char err[256];
} cbt_result;

static void cbt_decode(const cp_cbt_limits *lim, const uint8_t *data, size_t size, int mode, uint64_t seed,
                       uint64_t stop_at, cbt_result *out)
{
    cbt_sink s;
    memset(&s, 0, sizeof s);
    s.stop_at = stop_at;
    s.digest = 0xCBF29CE484222325ull;
    cp_cbt_sink sink = {&s, cbt_on_event};
    cp_cbt_dec *d = cp_cbt_dec_new(lim, &sink);
    FZ_CHECK(d != NULL, "cp_cbt_dec_new returned NULL");
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
        int st = cp_cbt_dec_feed(d, data + pos, n);
        FZ_CHECK(st == CP_OK || st < 0, "cp_cbt_dec_feed returned %d", st);
        if (st != CP_OK && out->feed_status == CP_OK) out->feed_status = st;
        if (out->feed_status != CP_OK)
            FZ_CHECK(st == out->feed_status, "decoder failed with %d, a later feed returned %d", out->feed_status, st);
        FZ_CHECK(cp_cbt_dec_offset(d) <= pos + n, "offset %llu past the %zu bytes fed",
                 (unsigned long long)cp_cbt_dec_offset(d), pos + n);
        pos += n;
    }
    out->finish_status = cp_cbt_dec_finish(d);
    FZ_CHECK(cp_cbt_dec_finish(d) == out->finish_status, "cp_cbt_dec_finish is not idempotent");
    if (out->feed_status != CP_OK)
        FZ_CHECK(out->finish_status == out->feed_status, "feed failed with %d but finish says %d", out->feed_status,
                 out->finish_status);
    out->events = s.events;
    out->digest = s.digest;
    out->open = s.open;
    out->offset = cp_cbt_dec_offset(d);
    out->items = cp_cbt_dec_items(d);
    out->records = cp_cbt_dec_records(d);
    out->skipped = cp_cbt_dec_skipped(d);
    out->methods = cp_cbt_dec_methods(d);
    snprintf(out->err, sizeof out->err, "%s", cp_cbt_dec_error(d));

    FZ_CHECK(out->offset <= size, "offset %llu > size %zu", (unsigned long long)out->offset, size);
    FZ_CHECK(out->finish_status == CP_OK || out->finish_status < 0, "finish returned %d", out->finish_status);
    if (out->finish_status == CP_OK) {
        FZ_CHECK(out->offset == size, "finish OK at offset %llu of %zu", (unsigned long long)out->offset, size);
        FZ_CHECK(out->err[0] == '\0', "no error but an error text: %s", out->err);
    } else {
        FZ_CHECK(strstr(out->err, " at offset ") != NULL, "error without an offset: \"%s\"", out->err);
        FZ_CHECK(strstr(out->err, "internal") == NULL, "%s", out->err);
    }
    /* the event of a stopping callback is seen but not counted */
    int stopped = out->finish_status == CP_EABORT;
    FZ_CHECK(stopped || out->open == 0, "%u records left open (status %d)", out->open, out->finish_status);
    uint64_t begins = s.begins - (stopped && s.last == CP_CBT_BEGIN), skips = s.skipped - (stopped && s.last == CP_CBT_SKIPPED);
    FZ_CHECK(out->records == begins, "records %llu vs %llu BEGIN events", (unsigned long long)out->records,
             (unsigned long long)begins);
    FZ_CHECK(out->skipped == skips, "skipped %llu vs %llu SKIPPED events", (unsigned long long)out->skipped,
             (unsigned long long)skips);
    cp_cbt_dec_free(d);
}

static void cbt_same(const char *what, const cbt_result *a, const cbt_result *b)
{
    FZ_CHECK(a->events == b->events, "%s: %llu events vs %llu", what, (unsigned long long)a->events,
             (unsigned long long)b->events);
    FZ_CHECK(a->digest == b->digest, "%s: same event count, different event contents", what);
    FZ_CHECK(a->finish_status == b->finish_status, "%s: status %d vs %d (%s | %s)", what, a->finish_status,
             b->finish_status, a->err, b->err);
    FZ_CHECK(a->offset == b->offset, "%s: offset %llu vs %llu", what, (unsigned long long)a->offset,
             (unsigned long long)b->offset);
    FZ_CHECK(strcmp(a->err, b->err) == 0, "%s: error text differs:\n  %s\n  %s", what, a->err, b->err);
    FZ_CHECK(a->items == b->items && a->records == b->records && a->skipped == b->skipped && a->methods == b->methods,
             "%s: counters differ", what);
}

/* Small limits, so that every limit is reached with short inputs. */
static void cbt_tiny_limits(cp_cbt_limits *l, uint64_t r)
{
    cp_cbt_limits_default(l);
    l->max_item = 1 + (uint32_t)(r % 4096);
    l->max_depth = 1 + (uint32_t)((r >> 12) % 24);
    l->max_string = 1 + (uint32_t)((r >> 20) % 64);
    l->max_symbols = (uint32_t)((r >> 28) % 32);
    l->max_symbol_bytes = (r >> 36) % 512;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t b0 = size > 0 ? data[0] : 0;
    uint8_t b1 = size > 1 ? data[1] : 0;
    uint64_t seed = ((uint64_t)b0 << 8 | b1) * 0x9E3779B97F4A7C15ull + size;
    cp_cbt_limits lim;
    const cp_cbt_limits *limp = NULL;
    if ((b1 & 7) == 7) { /* one input in eight: tiny limits */
        cbt_tiny_limits(&lim, fz_rand(&seed));
        limp = &lim;
    }
    cbt_result whole, cut;
    cbt_decode(limp, data, size, FZ_WHOLE, seed, 0, &whole);
    int mode = (b0 & 3) == 0 ? FZ_HALVES : FZ_RANDOM;
    if ((b0 & 3) == 1 && size <= 8192) mode = FZ_BYTES;
    cbt_decode(limp, data, size, mode, seed, 0, &cut);
    cbt_same(mode == FZ_BYTES ? "whole vs byte-by-byte" : mode == FZ_HALVES ? "whole vs two halves" : "whole vs random cuts",
             &whole, &cut);
    if (whole.events > 0) {
        uint64_t k = 1 + fz_rand(&seed) % whole.events;
        cbt_result stopped;
        cbt_decode(limp, data, size, FZ_RANDOM, seed, k, &stopped);
        FZ_CHECK(stopped.finish_status == CP_EABORT, "sink stopped at event %llu, status %d", (unsigned long long)k,
                 stopped.finish_status);
        FZ_CHECK(stopped.events == k, "sink stopped at event %llu, saw %llu", (unsigned long long)k,
                 (unsigned long long)stopped.events);
    }
    return 0;
}
