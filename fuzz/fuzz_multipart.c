/* fuzz_multipart.c -- libFuzzer target: the streaming multipart/form-data parser
 * (cp_multipart.h) of heap-dump uploads by POST (dumps-http.md §4.2).
 *
 * Input: byte 0 picks the request's Content-Type (and so the boundary: short, curl's,
 * Go's, quoted with specials, one dash, or taken from the input), byte 1 seeds the
 * slicing, byte 2 picks the callback that aborts; the rest is the body. Checked:
 *
 *   1. Slicing does not matter: the body fed whole, in random slices, byte by byte and
 *      cut in two gives the same callback sequence (a digest of every field, filename,
 *      content type, part boundary and body byte -- body bytes hashed as a stream, so
 *      part_data's own chunking is free), the same final status and the same message.
 *   2. Sanity: callbacks nest (begin, data*, end), part_data never gets 0 bytes, at most
 *      CP_MP_MAX_PARTS parts begin, the strings are NUL-terminated and shorter than a
 *      header block, no more body bytes come out than went in; the status is CP_OK,
 *      CP_ECORRUPT or CP_ELIMIT, with a message exactly when it is not CP_OK; CP_OK means
 *      every part that began also ended.
 *   3. A callback returning non-zero at call k stops the parse there with that status:
 *      no callback after it, and every later feed/finish returns it.
 *   4. Round trip: the body split into parts and written as a well-formed form (when the
 *      delimiter does not occur inside it) parses back to exactly those parts.
 */
#include "fuzz_common.h"
#include "http/cp_multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FM_HEAD 3       /* variant, slicing seed, abort choice */
#define FM_MAX_RT 8     /* parts in the round trip */

/* ---- the checking callbacks ------------------------------------------------------------- */

typedef struct fm_sink {
    uint64_t h;         /* FNV-1a over the event stream */
    uint64_t calls, begins, ends, bytes, run;
    int open;           /* a part began and has not ended */
    uint64_t stop_at;   /* 1-based callback that returns stop_code; 0 = never */
    int stop_code;
    int stopped;
    cp_buf *rt;         /* round trip: each part's body (FM_MAX_RT + 1 of them), or NULL */
    cp_buf rt_names;    /* round trip: "field\1filename\1ctype\2" per part */
} fm_sink;

static void fm_fnv(uint64_t *h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) *h = (*h ^ b[i]) * 0x100000001B3ull;
}

/* Marks an event: its tag and how many body bytes came since the previous event. */
static void fm_event(fm_sink *s, uint8_t tag)
{
    fm_fnv(&s->h, &tag, 1);
    fm_fnv(&s->h, &s->run, sizeof s->run);
    s->run = 0;
}

static void fm_str(fm_sink *s, const char *str)
{
    FZ_CHECK(str != NULL, "a NULL string");
    size_t n = strlen(str); /* ASan catches a missing NUL */
    FZ_CHECK(n < CP_MP_MAX_HEADER, "a %zu-byte string from a header block", n);
    fm_fnv(&s->h, &n, sizeof n);
    fm_fnv(&s->h, str, n);
}

static int fm_next(fm_sink *s)
{
    FZ_CHECK(!s->stopped, "a callback after one returned %d", s->stop_code);
    s->calls++;
    if (s->stop_at && s->calls == s->stop_at) {
        s->stopped = 1;
        return s->stop_code;
    }
    return 0;
}

static int fm_begin(void *ud, const char *field, const char *filename, const char *ctype)
{
    fm_sink *s = ud;
    FZ_CHECK(!s->open, "part_begin inside a part");
    s->open = 1;
    s->begins++;
    FZ_CHECK(s->begins <= CP_MP_MAX_PARTS, "%llu parts", (unsigned long long)s->begins);
    fm_event(s, 1);
    fm_str(s, field);
    fm_str(s, filename);
    fm_str(s, ctype);
    if (s->rt) {
        cp_buf_printf(&s->rt_names, "%s\1%s\1%s\2", field, filename, ctype);
        if (s->begins <= FM_MAX_RT + 1) cp_buf_reset(&s->rt[s->begins - 1]);
    }
    return fm_next(s);
}

static int fm_data(void *ud, const void *p, size_t n)
{
    fm_sink *s = ud;
    FZ_CHECK(s->open, "part_data outside a part");
    FZ_CHECK(n > 0 && p != NULL, "part_data with %zu bytes at %p", n, p);
    fm_fnv(&s->h, p, n);
    s->run += n;
    s->bytes += n;
    if (s->rt && s->begins <= FM_MAX_RT + 1) cp_buf_append(&s->rt[s->begins - 1], p, n);
    return fm_next(s);
}

static int fm_end(void *ud)
{
    fm_sink *s = ud;
    FZ_CHECK(s->open, "part_end outside a part");
    s->open = 0;
    s->ends++;
    fm_event(s, 2);
    return fm_next(s);
}

static const cp_mp_callbacks fm_cbs = {fm_begin, fm_data, fm_end};

/* ---- one parse ------------------------------------------------------------------------------ */

typedef struct fm_result {
    int status;
    uint64_t h, calls, begins, ends, bytes;
    char msg[256];
} fm_result;

enum { FM_WHOLE, FM_RANDOM, FM_BYTES, FM_HALVES };

static void fm_parse(const char *ct, const uint8_t *body, size_t n, int mode, uint64_t seed, fm_sink *s,
                     fm_result *out)
{
    cp_mp *m = NULL;
    char err[128];
    FZ_CHECK(cp_mp_new(ct, &fm_cbs, s, &m, err, sizeof err) == CP_OK, "cp_mp_new(%s): %s", ct, err);
    s->h = 0xCBF29CE484222325ull;
    int st = CP_OK;
    size_t pos = 0;
    uint64_t rng = seed;
    for (unsigned feeds = 0; st == CP_OK && (pos < n || feeds == 0); feeds++) {
        size_t k;
        switch (mode) {
        case FM_WHOLE: k = n; break;
        case FM_BYTES: k = 1; break;
        case FM_HALVES: k = feeds == 0 ? (size_t)(seed % (n + 1)) : n - pos; break;
        default: {
            uint64_t r = fz_rand(&rng);
            switch (r & 3) {
            case 0: k = 0; break;
            case 1: k = 1 + (size_t)((r >> 8) % 8); break;
            case 2: k = 1 + (size_t)((r >> 8) % 80); break;
            default: k = 1 + (size_t)((r >> 8) % 4096); break;
            }
        }
        }
        if (k > n - pos) k = n - pos;
        st = cp_mp_feed(m, body + pos, k);
        pos += k;
    }
    if (st == CP_OK) st = cp_mp_finish(m);
    /* sticky */
    FZ_CHECK(cp_mp_finish(m) == st, "finish changed the status %d", st);
    FZ_CHECK(cp_mp_feed(m, "--", 2) == st, "a feed after the end changed the status %d", st);
    const char *msg = cp_mp_errmsg(m);
    FZ_CHECK(msg != NULL, "NULL message");
    FZ_CHECK((st == CP_OK) == (msg[0] == 0), "status %d with message '%s'", st, msg);
    memset(out, 0, sizeof *out);
    out->status = st;
    out->h = s->h;
    out->calls = s->calls;
    out->begins = s->begins;
    out->ends = s->ends;
    out->bytes = s->bytes;
    snprintf(out->msg, sizeof out->msg, "%s", msg);
    cp_mp_free(m);
}

static void fm_same(const fm_result *a, const fm_result *b, const char *how)
{
    FZ_CHECK(a->status == b->status, "%s: status %d vs %d (%s | %s)", how, a->status, b->status, a->msg, b->msg);
    FZ_CHECK(!strcmp(a->msg, b->msg), "%s: message '%s' vs '%s'", how, a->msg, b->msg);
    FZ_CHECK(a->h == b->h, "%s: callback digests differ", how);
    FZ_CHECK(a->begins == b->begins && a->ends == b->ends && a->bytes == b->bytes,
             "%s: %llu/%llu parts, %llu bytes vs %llu/%llu, %llu", how, (unsigned long long)a->begins,
             (unsigned long long)a->ends, (unsigned long long)a->bytes, (unsigned long long)b->begins,
             (unsigned long long)b->ends, (unsigned long long)b->bytes);
}

/* ---- content types ---------------------------------------------------------------------------- */

/* Fills ct (and the boundary) from the variant; may take boundary bytes from the input. */
static void fm_content_type(uint8_t v, const uint8_t **p, size_t *n, char *ct, size_t ctlen, char *b, size_t blen)
{
    static const char *const fixed[] = {
        "bb",
        "------------------------513596b516824120",                     /* curl 7.88 */
        "9f1c2d3e4a5b60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7", /* Go: 60 hex digits */
        "xYz'()+_,-./:=?",                                              /* needs quotes */
        "-",
    };
    size_t which = (size_t)(v & 0x7F) % (CP_ARRAY_LEN(fixed) + 1);
    if (which < CP_ARRAY_LEN(fixed)) {
        snprintf(b, blen, "%s", fixed[which]);
    } else {
        /* a boundary from the input: 1..70 printable bytes without '"' or '\' */
        size_t len = *n ? 1 + (*p)[0] % 70 : 1;
        if (*n) (*p)++, (*n)--;
        size_t i = 0;
        for (; i < len; i++) {
            uint8_t c = i < *n ? (*p)[i] : 'q';
            c = (uint8_t)(0x21 + c % 94);
            if (c == '"' || c == '\\') c = '_';
            b[i] = (char)c;
        }
        b[i] = 0;
        size_t used = len < *n ? len : *n;
        *p += used;
        *n -= used;
    }
    if (v & 0x80) snprintf(ct, ctlen, "Multipart/Form-Data; charset=utf-8; boundary=\"%s\"", b);
    else snprintf(ct, ctlen, "multipart/form-data; boundary=\"%s\"", b);
}

/* ---- round trip ------------------------------------------------------------------------------- */

static void fm_roundtrip(const char *ct, const char *bnd, const uint8_t *p, size_t n, uint64_t seed)
{
    cp_buf delim;
    cp_buf_init(&delim);
    cp_buf_printf(&delim, "\r\n--%s", bnd);
    if (n >= delim.len && memmem(p, n, delim.data, delim.len)) {
        cp_buf_free(&delim);
        return; /* the delimiter occurs in the content: not a valid form */
    }
    /* cut the content into 1..FM_MAX_RT parts */
    size_t nparts = 1 + (size_t)(seed % FM_MAX_RT), cuts[FM_MAX_RT + 1];
    uint64_t rng = seed ^ n;
    cuts[0] = 0;
    for (size_t i = 1; i < nparts; i++) cuts[i] = n ? (size_t)(fz_rand(&rng) % (n + 1)) : 0;
    cuts[nparts] = n;
    for (size_t i = 1; i < nparts; i++) /* sort the cut points */
        for (size_t j = i; j > 1 && cuts[j - 1] > cuts[j]; j--) {
            size_t t = cuts[j];
            cuts[j] = cuts[j - 1];
            cuts[j - 1] = t;
        }
    cp_buf body, names;
    cp_buf_init(&body);
    cp_buf_init(&names);
    cp_buf_puts(&body, "preamble\r\n");
    for (size_t i = 0; i < nparts; i++) {
        cp_buf_printf(&body, "--%s\r\nContent-Disposition: form-data; name=\"f%zu\"; filename=\"a\\\"%zu.bin\"\r\n"
                             "Content-Type: application/octet-stream\r\n\r\n", bnd, i, i);
        cp_buf_append(&body, p + cuts[i], cuts[i + 1] - cuts[i]);
        cp_buf_puts(&body, "\r\n");
        cp_buf_printf(&names, "f%zu\1a\"%zu.bin\1application/octet-stream\2", i, i);
    }
    cp_buf_printf(&body, "--%s--\r\nepilogue", bnd);

    fm_sink s;
    memset(&s, 0, sizeof s);
    cp_buf rt[FM_MAX_RT + 1];
    for (size_t i = 0; i <= FM_MAX_RT; i++) cp_buf_init(&rt[i]);
    s.rt = rt;
    cp_buf_init(&s.rt_names);
    fm_result r;
    fm_parse(ct, body.data, body.len, seed & 1 ? FM_RANDOM : FM_WHOLE, seed, &s, &r);
    FZ_CHECK(r.status == CP_OK, "a well-formed form fails: %s", r.msg);
    FZ_CHECK(r.begins == nparts && r.ends == nparts, "%llu parts back of %zu", (unsigned long long)r.begins, nparts);
    FZ_CHECK(s.rt_names.len == names.len && !memcmp(s.rt_names.data, names.data, names.len),
             "the parts' names came back different");
    for (size_t i = 0; i < nparts; i++) {
        size_t len = cuts[i + 1] - cuts[i];
        FZ_CHECK(rt[i].len == len && (len == 0 || !memcmp(rt[i].data, p + cuts[i], len)),
                 "part %zu: %zu bytes back of %zu, or different", i, rt[i].len, len);
    }
    for (size_t i = 0; i <= FM_MAX_RT; i++) cp_buf_free(&rt[i]);
    cp_buf_free(&s.rt_names);
    cp_buf_free(&body);
    cp_buf_free(&names);
    cp_buf_free(&delim);
}

/* ---- entry point --------------------------------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < FM_HEAD) return 0;
    uint8_t variant = data[0], seed = data[1], abort_at = data[2];
    const uint8_t *p = data + FM_HEAD;
    size_t n = size - FM_HEAD;
    char ct[256], bnd[80];
    fm_content_type(variant, &p, &n, ct, sizeof ct, bnd, sizeof bnd);

    /* an exact-size copy, so ASan sees any read past the body */
    uint8_t *body = malloc(n ? n : 1);
    FZ_CHECK(body != NULL, "malloc");
    memcpy(body, p, n);

    fm_sink s;
    fm_result whole, other;
    memset(&s, 0, sizeof s);
    fm_parse(ct, body, n, FM_WHOLE, seed, &s, &whole);
    FZ_CHECK(whole.status == CP_OK || whole.status == CP_ECORRUPT || whole.status == CP_ELIMIT,
             "status %d (%s)", whole.status, whole.msg);
    FZ_CHECK(whole.ends <= whole.begins && whole.begins <= whole.ends + 1, "%llu begins, %llu ends",
             (unsigned long long)whole.begins, (unsigned long long)whole.ends);
    FZ_CHECK(whole.status != CP_OK || whole.begins == whole.ends, "CP_OK with a part that did not end");
    FZ_CHECK(whole.bytes <= n, "%llu body bytes out of %zu in", (unsigned long long)whole.bytes, n);

    static const int modes[] = {FM_RANDOM, FM_BYTES, FM_HALVES, FM_RANDOM};
    static const char *const names[] = {"random slices", "bytes", "halves", "random slices (2)"};
    for (size_t i = 0; i < CP_ARRAY_LEN(modes); i++) {
        memset(&s, 0, sizeof s);
        fm_parse(ct, body, n, modes[i], seed + i * 0x9E37, &s, &other);
        fm_same(&whole, &other, names[i]);
    }

    /* a callback that fails stops the parse at once with its status */
    if (whole.calls) {
        memset(&s, 0, sizeof s);
        s.stop_at = 1 + abort_at % whole.calls;
        s.stop_code = abort_at & 1 ? CP_EABORT : -1000 - (int)abort_at;
        fm_parse(ct, body, n, FM_WHOLE, seed, &s, &other);
        FZ_CHECK(other.status == s.stop_code, "stopping at callback %llu gave %d, not %d",
                 (unsigned long long)s.stop_at, other.status, s.stop_code);
        FZ_CHECK(other.calls == s.stop_at, "%llu callbacks, stopped at %llu", (unsigned long long)other.calls,
                 (unsigned long long)s.stop_at);
        memset(&s, 0, sizeof s);
        s.stop_at = 1 + abort_at % whole.calls;
        s.stop_code = CP_EIO;
        fm_parse(ct, body, n, FM_RANDOM, seed, &s, &other);
        FZ_CHECK(other.status == CP_EIO && s.stopped, "a sliced parse did not stop at callback %llu (status %d)",
                 (unsigned long long)s.stop_at, other.status);
    }

    fm_roundtrip(ct, bnd, body, n, (uint64_t)seed * 0x9E3779B97F4A7C15ull + n);
    free(body);
    return 0;
}
