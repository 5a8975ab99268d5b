/* multipart_test.c -- the streaming multipart/form-data parser (cp_multipart.h) on the
 * bodies heap-dump uploads by POST arrive as (dumps-http.md §4.2: field "file", filename =
 * the zip's base name, part Content-Type application/octet-stream), in the exact formats
 * curl -F and Go's mime/multipart produce, and on the RFC 2046 corners (preamble,
 * transport padding, near-miss delimiters, epilogue). Every well-formed body is also fed in
 * every chunk size and cut at every point: the callbacks must see the same parts. */
#include "testutil.h"

#include "http/cp_multipart.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- recording callbacks ----------------------------------------------------------------- */

typedef struct rec_part {
    char *field, *filename, *ctype;
    cp_buf body;
    int ended;
} rec_part;

typedef struct rec {
    rec_part *parts;
    size_t n, cap;
    int calls;        /* callbacks seen */
    int fail_at;      /* 1-based callback that returns fail_status (0: never) */
    int fail_status;
    int failed;       /* a callback returned non-zero: no callback may follow */
} rec;

static int rec_next(rec *r)
{
    assert_false(r->failed); /* the parse must stop at the callback's error */
    r->calls++;
    if (r->fail_at && r->calls == r->fail_at) {
        r->failed = 1;
        return r->fail_status;
    }
    return 0;
}

static int on_begin(void *ud, const char *field, const char *filename, const char *ctype)
{
    rec *r = ud;
    assert_non_null(field);
    assert_non_null(filename);
    assert_non_null(ctype);
    if (r->n) assert_true(r->parts[r->n - 1].ended); /* the previous part ended first */
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 8;
        r->parts = realloc(r->parts, r->cap * sizeof *r->parts);
    }
    rec_part *p = &r->parts[r->n++];
    p->field = strdup(field);
    p->filename = strdup(filename);
    p->ctype = strdup(ctype);
    cp_buf_init(&p->body);
    p->ended = 0;
    return rec_next(r);
}

static int on_data(void *ud, const void *p, size_t n)
{
    rec *r = ud;
    assert_true(r->n > 0 && !r->parts[r->n - 1].ended);
    assert_true(n > 0);
    assert_int_equal(cp_buf_append(&r->parts[r->n - 1].body, p, n), CP_OK);
    return rec_next(r);
}

static int on_end(void *ud)
{
    rec *r = ud;
    assert_true(r->n > 0 && !r->parts[r->n - 1].ended);
    r->parts[r->n - 1].ended = 1;
    return rec_next(r);
}

static const cp_mp_callbacks cbs = {on_begin, on_data, on_end};

static void rec_free(rec *r)
{
    for (size_t i = 0; i < r->n; i++) {
        free(r->parts[i].field);
        free(r->parts[i].filename);
        free(r->parts[i].ctype);
        cp_buf_free(&r->parts[i].body);
    }
    free(r->parts);
    memset(r, 0, sizeof *r);
}

static void rec_assert_equal(const rec *a, const rec *b)
{
    assert_int_equal(a->n, b->n);
    for (size_t i = 0; i < a->n; i++) {
        assert_string_equal(a->parts[i].field, b->parts[i].field);
        assert_string_equal(a->parts[i].filename, b->parts[i].filename);
        assert_string_equal(a->parts[i].ctype, b->parts[i].ctype);
        assert_int_equal(a->parts[i].body.len, b->parts[i].body.len);
        if (a->parts[i].body.len)
            assert_memory_equal(a->parts[i].body.data, b->parts[i].body.data, a->parts[i].body.len);
        assert_int_equal(a->parts[i].ended, b->parts[i].ended);
    }
}

/* ---- running the parser ---------------------------------------------------------------------- */

/* A chunking: 0 = whole; c > 0 = pieces of c bytes; cuts = explicit cut points. */
typedef struct chunking {
    size_t size;
    const size_t *cuts;
    size_t ncuts;
} chunking;

/* Parses body[0..len) cut as ch into r; returns the final status (the first failing feed's,
 * else finish's) and copies the error message to msg. */
static int run(const char *ct, const void *body, size_t len, chunking ch, rec *r, char *msg, size_t msglen)
{
    cp_mp *m = NULL;
    char err[256];
    int st = cp_mp_new(ct, &cbs, r, &m, err, sizeof err);
    assert_int_equal(st, CP_OK);
    assert_string_equal(cp_mp_errmsg(m), "");
    const uint8_t *p = body;
    size_t pos = 0, cut = 0;
    st = CP_OK;
    while (pos < len && st == CP_OK) {
        size_t n;
        if (ch.cuts) n = (cut < ch.ncuts ? ch.cuts[cut++] : len) - pos;
        else n = ch.size ? ch.size : len;
        if (n > len - pos) n = len - pos;
        st = cp_mp_feed(m, p + pos, n);
        pos += n;
    }
    if (st != CP_OK) {
        /* sticky: later calls give the same status */
        assert_int_equal(cp_mp_feed(m, "x", 1), st);
        assert_int_equal(cp_mp_finish(m), st);
    } else {
        st = cp_mp_finish(m);
        assert_int_equal(cp_mp_finish(m), st);
    }
    if (st == CP_OK) assert_string_equal(cp_mp_errmsg(m), "");
    else assert_true(cp_mp_errmsg(m)[0] != 0);
    snprintf(msg, msglen, "%s", cp_mp_errmsg(m));
    cp_mp_free(m);
    return st;
}

/* Parses body whole into *ref (returned status), then in every chunk size 1..len and cut
 * in two at every point, each time expecting the same parts, status and message. */
static int run_all(const char *ct, const void *body, size_t len, rec *ref, char *msg, size_t msglen)
{
    memset(ref, 0, sizeof *ref);
    int st = run(ct, body, len, (chunking){0, NULL, 0}, ref, msg, msglen);
    for (size_t c = 1; c <= len; c++) {
        rec r = {0};
        char m2[256];
        assert_int_equal(run(ct, body, len, (chunking){c, NULL, 0}, &r, m2, sizeof m2), st);
        assert_string_equal(m2, msg);
        rec_assert_equal(&r, ref);
        rec_free(&r);
    }
    for (size_t cut = 0; cut <= len; cut++) {
        rec r = {0};
        char m2[256];
        assert_int_equal(run(ct, body, len, (chunking){0, &cut, 1}, &r, m2, sizeof m2), st);
        assert_string_equal(m2, msg);
        rec_assert_equal(&r, ref);
        rec_free(&r);
    }
    return st;
}

static void put(cp_buf *b, const char *s) { assert_int_equal(cp_buf_puts(b, s), CP_OK); }
static void putn(cp_buf *b, const void *p, size_t n) { assert_int_equal(cp_buf_append(b, p, n), CP_OK); }

static void assert_part(const rec *r, size_t i, const char *field, const char *filename, const char *ctype,
                        const void *body, size_t len)
{
    assert_true(i < r->n);
    assert_string_equal(r->parts[i].field, field);
    assert_string_equal(r->parts[i].filename, filename);
    assert_string_equal(r->parts[i].ctype, ctype);
    assert_int_equal(r->parts[i].body.len, len);
    if (len) assert_memory_equal(r->parts[i].body.data, body, len);
    assert_true(r->parts[i].ended);
}

/* ---- the uploaders' formats ------------------------------------------------------------------ */

/* Go's mime/multipart Writer (diagtools' "heap zip upload"): a 60-hex-digit boundary, the
 * first part without a leading CRLF, CreateFormFile's two headers, and "\r\n--B--\r\n". */
static void test_go_format(void **state)
{
    (void)state;
    cp_buf zip, body;
    load_fixture("dumps/test-service.heap.hprof.zip", &zip);
    assert_int_equal(zip.len, 1456); /* dumps-http.md §10 */
    cp_buf_init(&body);
    const char *b = "9f1c2d3e4a5b60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7";
    assert_int_equal(strlen(b), 60);
    put(&body, "--");
    put(&body, b);
    put(&body, "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"20240731T225935.hprof.zip\"\r\n"
               "Content-Type: application/octet-stream\r\n\r\n");
    putn(&body, zip.data, zip.len);
    put(&body, "\r\n--");
    put(&body, b);
    put(&body, "--\r\n");
    char ct[128], msg[256];
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", b);
    rec r;
    assert_int_equal(run_all(ct, body.data, body.len, &r, msg, sizeof msg), CP_OK);
    assert_int_equal(r.n, 1);
    assert_part(&r, 0, "file", "20240731T225935.hprof.zip", "application/octet-stream", zip.data, zip.len);
    rec_free(&r);
    cp_buf_free(&body);
    cp_buf_free(&zip);
}

/* curl -F "file=@x.hprof.zip;type=application/octet-stream" (curl 7.88): boundary of 24
 * dashes and 16 hex digits, the same two headers, "\r\n--B--\r\n". */
static void test_curl_format(void **state)
{
    (void)state;
    cp_buf zip, body;
    load_fixture("dumps/test-service.heap.hprof.zip", &zip);
    cp_buf_init(&body);
    const char *b = "------------------------513596b516824120";
    put(&body, "--");
    put(&body, b);
    put(&body, "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.hprof.zip\"\r\n"
               "Content-Type: application/octet-stream\r\n\r\n");
    putn(&body, zip.data, zip.len);
    put(&body, "\r\n--");
    put(&body, b);
    put(&body, "--\r\n");
    char ct[128], msg[256];
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", b);
    rec r;
    assert_int_equal(run_all(ct, body.data, body.len, &r, msg, sizeof msg), CP_OK);
    assert_int_equal(r.n, 1);
    assert_part(&r, 0, "file", "x.hprof.zip", "application/octet-stream", zip.data, zip.len);
    rec_free(&r);
    cp_buf_free(&body);
    cp_buf_free(&zip);
}

/* ---- well-formed corners ------------------------------------------------------------------- */

#define BND "xYz'()+_,-./:=?"

/* A body whose bytes look like delimiters without being one (RFC 2046 forbids only the
 * exact delimiter inside a part). */
static size_t tricky_bytes(uint8_t *out)
{
    static const char *const pieces[] = {
        "\r\n--" BND "X",              /* the boundary then a byte that cannot follow it */
        "\r\n--" BND "-x",             /* one dash, then not a second */
        "\r\n--xYz'()+_,-./:=!",     /* the boundary's last byte differs */
        "\r\n--xYz",                 /* a prefix of it */
        "\r\r\n-\r\n--\r",           /* CRs restarting the match */
        "\n--" BND "\r\n",             /* LF alone: not a delimiter */
        "a--" BND "\r\n",              /* not at a line start */
        "\r\n\r\n",                  /* blank lines */
        "--" BND "--",                 /* the close delimiter without its CRLF */
    };
    size_t n = 0;
    for (size_t i = 0; i < CP_ARRAY_LEN(pieces); i++) {
        memcpy(out + n, pieces[i], strlen(pieces[i]));
        n += strlen(pieces[i]);
        out[n++] = (uint8_t)i; /* binary bytes between, NUL included */
        out[n++] = 0xFF;
    }
    out[n++] = '\r'; /* the part ends in CR, right before the delimiter's own CRLF */
    return n;
}

static void test_several_parts(void **state)
{
    (void)state;
    uint8_t tricky[512];
    size_t tn = tricky_bytes(tricky);
    cp_buf body;
    cp_buf_init(&body);
    put(&body, "This is the preamble.\r\n--" BND "x\r\n--notit\r\n"); /* ignored */
    put(&body, "\r\n--" BND " \t \r\n");                                /* transport padding */
    put(&body, "Content-Disposition: form-data; name=\"comment\"\r\n\r\n");
    put(&body, "line one\r\nline two\r\n");                          /* CRLF inside the body */
    put(&body, "\r\n--" BND "\r\n");
    put(&body, "content-disposition: form-data; name=file; filename=\"20240731T225935.hprof.zip\"\r\n"
               "CONTENT-TYPE:application/octet-stream \r\n"
               "X-Other: ignored\r\n\r\n");
    putn(&body, tricky, tn);
    put(&body, "\r\n--" BND "\t\r\n");
    put(&body, "Content-Disposition: form-data; name=\"file\"; filename=\"empty.hprof.zip\"\r\n"
               "Content-Type: application/octet-stream\r\n\r\n"); /* an empty body */
    put(&body, "\r\n--" BND "\r\n");
    put(&body, "\r\n");                                                /* no headers at all */
    put(&body, "x");
    put(&body, "\r\n--" BND "\r\n");
    put(&body, "Content-Disposition: form-data; name=\"after\"\r\n\r\n\r\n"); /* the body is CRLF */
    put(&body, "\r\n--" BND "--  \r\nThe epilogue, with --" BND "\r\n and \r\n--" BND "--\r\n in it.");
    rec r;
    char msg[256];
    const char *ct = "Multipart/Form-Data; charset=utf-8; boundary=\"" BND "\"";
    assert_int_equal(run_all(ct, body.data, body.len, &r, msg, sizeof msg), CP_OK);
    assert_int_equal(r.n, 5);
    assert_part(&r, 0, "comment", "", "", "line one\r\nline two\r\n", 20);
    assert_part(&r, 1, "file", "20240731T225935.hprof.zip", "application/octet-stream", tricky, tn);
    assert_part(&r, 2, "file", "empty.hprof.zip", "application/octet-stream", "", 0);
    assert_part(&r, 3, "", "", "", "x", 1);
    assert_part(&r, 4, "after", "", "", "\r\n", 2);
    rec_free(&r);
    cp_buf_free(&body);
}

/* Random binary bodies with delimiter look-alikes spliced in, fed in random slices. */
static void test_random_binary(void **state)
{
    (void)state;
    uint64_t seed = 0x5EED;
    uint8_t tricky[512];
    size_t tn = tricky_bytes(tricky);
    for (int round = 0; round < 40; round++) {
        size_t len = 1 + (size_t)(test_rand(&seed) % 6000);
        uint8_t *data = malloc(len + tn);
        for (size_t i = 0; i < len; i++) {
            uint64_t x = test_rand(&seed);
            /* CR and LF and dashes often, so partial matches happen all the time */
            data[i] = (x & 3) == 0 ? "\r\n-x"[(x >> 8) & 3] : (uint8_t)(x >> 16);
        }
        size_t at = (size_t)(test_rand(&seed) % len);
        memmove(data + at + tn, data + at, len - at);
        memcpy(data + at, tricky, tn);
        len += tn;
        cp_buf body;
        cp_buf_init(&body);
        put(&body, "--" BND "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"r.bin\"\r\n\r\n");
        putn(&body, data, len);
        put(&body, "\r\n--" BND "--\r\n");
        rec whole = {0};
        char msg[256], m2[256];
        assert_int_equal(run("multipart/form-data; boundary=\"" BND "\"", body.data, body.len,
                             (chunking){0, NULL, 0}, &whole, msg, sizeof msg),
                         CP_OK);
        assert_int_equal(whole.n, 1);
        assert_part(&whole, 0, "file", "r.bin", "", data, len);
        for (int k = 0; k < 20; k++) {
            size_t cuts[64], nc = 0, pos = 0;
            while (nc < 64 && pos < body.len) {
                pos += 1 + (size_t)(test_rand(&seed) % (k < 10 ? 7 : 300));
                cuts[nc++] = pos < body.len ? pos : body.len;
            }
            rec r = {0};
            assert_int_equal(run("multipart/form-data; boundary=\"" BND "\"", body.data, body.len,
                                 (chunking){0, cuts, nc}, &r, m2, sizeof m2),
                             CP_OK);
            rec_assert_equal(&r, &whole);
            rec_free(&r);
        }
        rec_free(&whole);
        cp_buf_free(&body);
        free(data);
    }
}

/* One part with the given Content-Disposition parameters; returns the parsed filename. */
static int one_part(const char *ct, const char *boundary, const char *headers, rec *r, char *msg)
{
    cp_buf body;
    cp_buf_init(&body);
    put(&body, "--");
    put(&body, boundary);
    put(&body, "\r\n");
    put(&body, headers);
    put(&body, "\r\n\r\nDATA\r\n--");
    put(&body, boundary);
    put(&body, "--\r\n");
    int st = run_all(ct, body.data, body.len, r, msg, 256);
    cp_buf_free(&body);
    return st;
}

static void test_header_values(void **state)
{
    (void)state;
    static const struct {
        const char *headers, *field, *filename, *ctype;
    } t[] = {
        /* quoted-string escapes; a backslash before a non-special byte stays (Windows paths) */
        {"Content-Disposition: form-data; name=\"fi\\\"le\"; filename=\"a\\\"b\\\\c.zip\"", "fi\"le", "a\"b\\c.zip",
         ""},
        {"Content-Disposition: form-data; name=\"file\"; filename=\"C:\\dir\\x.zip\"", "file", "C:\\dir\\x.zip", ""},
        /* filename* is percent-decoded and preferred, in either order */
        {"Content-Disposition: form-data; name=\"file\"; filename=\"fallback.zip\"; "
         "filename*=UTF-8''%E2%82%AC%20rates.zip",
         "file", "\xE2\x82\xAC rates.zip", ""},
        {"Content-Disposition: form-data; filename*=utf-8'en'na%C3%AFve.zip; name=file; filename=\"fallback.zip\"",
         "file", "na\xC3\xAFve.zip", ""},
        {"Content-Disposition: form-data; name=file; filename*=ISO-8859-1''caf%E9.zip", "file", "caf\xC3\xA9.zip", ""},
        /* an unknown charset is ignored (RFC 6266 §4.3) */
        {"Content-Disposition: form-data; name=file; filename=\"plain.zip\"; filename*=KOI8-R''%C1.zip", "file",
         "plain.zip", ""},
        /* raw UTF-8 in a quoted filename, as browsers send it */
        {"Content-Disposition: form-data; name=\"file\"; filename=\"\xC3\x9C.zip\"", "file", "\xC3\x9C.zip", ""},
        /* case, white space, unknown parameters and headers */
        {"cOnTeNt-DiSpOsItIoN:FORM-DATA;NAME=\"file\" ;  FileName = \"a b.zip\" ; size=3\r\n"
         "Content-type:   application/octet-stream; x=\"1\"  \r\nContent-Length: 4",
         "file", "a b.zip", "application/octet-stream; x=\"1\""},
        {"Content-Type: text/plain", "", "", "text/plain"},
        {"Content-Disposition: form-data; name=\"\"; filename=\"\"", "", "", ""},
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(t); i++) {
        rec r;
        char msg[256];
        assert_int_equal(one_part("multipart/form-data; boundary=bb", "bb", t[i].headers, &r, msg), CP_OK);
        assert_int_equal(r.n, 1);
        assert_part(&r, 0, t[i].field, t[i].filename, t[i].ctype, "DATA", 4);
        rec_free(&r);
    }
}

static void test_content_types(void **state)
{
    (void)state;
    static const struct {
        const char *ct, *boundary; /* the boundary the body uses */
    } ok[] = {
        {"multipart/form-data; boundary=simple", "simple"},
        {"MULTIPART/FORM-DATA;BOUNDARY=Up", "Up"},
        {" multipart/form-data ; charset=utf-8 ; boundary=\"a b:c?\" ; x=y", "a b:c?"},
        {"multipart/form-data; boundary=\"q\\\"t\"", "q\"t"},
        {"multipart/form-data; boundary=0123456789012345678901234567890123456789012345678901234567890123456789",
         "0123456789012345678901234567890123456789012345678901234567890123456789"}, /* 70 bytes */
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(ok); i++) {
        rec r;
        char msg[256];
        assert_int_equal(one_part(ok[i].ct, ok[i].boundary, "Content-Disposition: form-data; name=\"file\"", &r, msg),
                         CP_OK);
        assert_int_equal(r.n, 1);
        assert_part(&r, 0, "file", "", "", "DATA", 4);
        rec_free(&r);
    }
    static const char *const bad[] = {
        "",
        "application/octet-stream",
        "multipart/mixed; boundary=x",
        "multipart/form-datax; boundary=x",
        "text/plain; boundary=x",
        "multipart/form-data",                           /* no boundary */
        "multipart/form-data; charset=utf-8",
        "multipart/form-data; boundary=",
        "multipart/form-data; boundary=\"\"",
        "multipart/form-data; boundary=\"abc",           /* no closing quote */
        "multipart/form-data; boundary=a; boundary=a",   /* two */
        "multipart/form-data; boundary=\"ab \"",         /* ends in a space */
        "multipart/form-data; boundary=\"a\tb\"",        /* a control byte */
        "multipart/form-data; boundary=\"\xC3\xA9\"",    /* not ASCII */
        "multipart/form-data boundary=x",                /* no ';' */
        "multipart/form-data; =x",
        /* 71 bytes */
        "multipart/form-data; boundary=01234567890123456789012345678901234567890123456789012345678901234567890",
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(bad); i++) {
        cp_mp *m = (cp_mp *)&m;
        char err[128] = "";
        assert_int_equal(cp_mp_new(bad[i], &cbs, NULL, &m, err, sizeof err), CP_EINVAL);
        assert_null(m);
        assert_true(err[0] != 0);
    }
    cp_mp *m = NULL;
    char err[128] = "";
    assert_int_equal(cp_mp_new(NULL, &cbs, NULL, &m, err, sizeof err), CP_EINVAL);
    assert_true(err[0] != 0);
    assert_int_equal(cp_mp_new(bad[1], &cbs, NULL, &m, NULL, 0), CP_EINVAL); /* no err buffer */
}

/* Malformed bodies: the status and message do not depend on the chunking either. */
static void test_malformed(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int status;
        size_t parts; /* part_begin calls before the error */
    } t[] = {
        {"--bb\r\nContent-Disposition: form-data;\r\n name=\"file\"\r\n\r\nx\r\n--bb--", CP_ECORRUPT, 0}, /* folding */
        {"--bb\r\nContent-Disposition: form-data\r\n\tname=\"file\"\r\n\r\nx\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Disposition: form-data; name=\"file\"\n\r\nx\r\n--bb--", CP_ECORRUPT, 0},  /* bare LF */
        {"--bb\r\nContent-Disposition: form-data; name=\"file\"\r\n\n", CP_ECORRUPT, 0},
        {"--bb\r\nno colon here\r\n\r\nx\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Type : text/plain\r\n\r\nx\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\n: empty name\r\n\r\nx\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Type: a\rb\r\n\r\nx\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Type: a\001b\r\n\r\nx\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Disposition: attachment; name=\"file\"\r\n\r\nx\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Disposition: form-data; name=a\r\nContent-Disposition: form-data; name=b\r\n\r\n--bb--",
         CP_ECORRUPT, 0},
        {"--bb\r\nContent-Type: a\r\ncontent-type: b\r\n\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Disposition: form-data; name=a; NAME=b\r\n\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Disposition: form-data; name=\"a\r\n\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Disposition: form-data; name\r\n\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Disposition: form-data; filename*=UTF-8''%zz.zip\r\n\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Disposition: form-data; filename*=UTF-8''a%00.zip\r\n\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Disposition: form-data; filename*=UTF-8''a%4\r\n\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb\r\nContent-Disposition: form-data; filename*=noquotes.zip\r\n\r\n--bb--", CP_ECORRUPT, 0},
        {"--bb x\r\n\r\n--bb--", CP_ECORRUPT, 0},                    /* junk after the padding */
        {"--bb\rX\r\n\r\n--bb--", CP_ECORRUPT, 0},                   /* CR without LF */
        {"--bb\r\n\r\nbody\r\n--bb \r\r\n", CP_ECORRUPT, 1},
        {"--bb\r\n\r\nbody\r\n--bb--", CP_OK, 1},                    /* (control: fine) */
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(t); i++) {
        rec r;
        char msg[256];
        int st = run_all("multipart/form-data; boundary=bb", t[i].body, strlen(t[i].body), &r, msg, sizeof msg);
        if (st != t[i].status) fail_msg("case %zu: status %d (%s), want %d", i, st, msg, t[i].status);
        assert_int_equal(r.n, t[i].parts);
        rec_free(&r);
    }
}

/* The header block may be CP_MP_MAX_HEADER bytes, its final CRLF CRLF included. */
static void test_header_limit(void **state)
{
    (void)state;
    for (int over = 0; over <= 1; over++) {
        cp_buf body;
        cp_buf_init(&body);
        put(&body, "--bb\r\n");
        const char *cd = "Content-Disposition: form-data; name=\"file\"\r\nX-Pad: ";
        put(&body, cd);
        size_t pad = CP_MP_MAX_HEADER - strlen(cd) - 4 + (size_t)over;
        for (size_t i = 0; i < pad; i++) put(&body, "p");
        put(&body, "\r\n\r\nDATA\r\n--bb--\r\n");
        rec r = {0};
        char msg[256];
        for (size_t c = 1; c <= 4096; c = c * 4 + 1) { /* the limit holds in any chunking */
            rec r2 = {0};
            char m2[256];
            int st = run("multipart/form-data; boundary=bb", body.data, body.len, (chunking){c, NULL, 0}, &r2, m2,
                         sizeof m2);
            assert_int_equal(st, over ? CP_ELIMIT : CP_OK);
            rec_free(&r2);
        }
        int st = run("multipart/form-data; boundary=bb", body.data, body.len, (chunking){0, NULL, 0}, &r, msg,
                     sizeof msg);
        if (over) {
            assert_int_equal(st, CP_ELIMIT);
            assert_int_equal(r.n, 0);
            assert_non_null(strstr(msg, "header"));
        } else {
            assert_int_equal(st, CP_OK);
            assert_int_equal(r.n, 1);
            assert_part(&r, 0, "file", "", "", "DATA", 4);
        }
        rec_free(&r);
        cp_buf_free(&body);
    }
}

static void test_part_limit(void **state)
{
    (void)state;
    for (int over = 0; over <= 1; over++) {
        cp_buf body;
        cp_buf_init(&body);
        for (unsigned i = 0; i < CP_MP_MAX_PARTS + (unsigned)over; i++) {
            char part[128];
            snprintf(part, sizeof part, "--bb\r\nContent-Disposition: form-data; name=\"f%u\"\r\n\r\n%u\r\n", i, i);
            put(&body, part);
        }
        put(&body, "--bb--\r\n");
        rec r = {0};
        char msg[256];
        for (size_t c = 0; c <= 7; c += 7) {
            rec_free(&r);
            int st = run("multipart/form-data; boundary=bb", body.data, body.len, (chunking){c, NULL, 0}, &r, msg,
                         sizeof msg);
            assert_int_equal(st, over ? CP_ELIMIT : CP_OK);
            assert_int_equal(r.n, CP_MP_MAX_PARTS); /* the 1001st never begins */
        }
        assert_string_equal(r.parts[999].field, "f999");
        assert_memory_equal(r.parts[999].body.data, "999", 3);
        if (over) assert_non_null(strstr(msg, "parts"));
        rec_free(&r);
        cp_buf_free(&body);
    }
}

/* A body cut anywhere before its close delimiter is complete fails at finish with
 * "truncated", and a part whose delimiter was not seen gets no part_end. */
static void test_truncated(void **state)
{
    (void)state;
    cp_buf body;
    cp_buf_init(&body);
    put(&body, "preamble\r\n--bb\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nfirst\r\n");
    size_t end1 = body.len; /* the first part's delimiter starts at end1 - 2 */
    put(&body, "--bb\r\nContent-Disposition: form-data; name=\"file\"; filename=\"x.hprof.zip\"\r\n"
               "Content-Type: application/octet-stream\r\n\r\nPK\x03\x04\r\n-\r\n--b");
    put(&body, "\r\n");
    size_t end2 = body.len;
    put(&body, "--bb--");
    size_t full = body.len;
    put(&body, "\r\nepilogue");
    size_t dl = strlen("\r\n--bb");
    for (size_t t = 0; t <= body.len; t++) {
        for (int bytewise = 0; bytewise <= 1; bytewise++) {
            rec r = {0};
            char msg[256];
            int st = run("multipart/form-data; boundary=bb", body.data, t, (chunking){bytewise, NULL, 0}, &r, msg,
                         sizeof msg);
            if (t < full) {
                assert_int_equal(st, CP_ECORRUPT);
                assert_non_null(strstr(msg, "truncated"));
            } else {
                assert_int_equal(st, CP_OK);
            }
            /* part 1 ends once its delimiter and the byte after it are in; part 2, the last,
             * once the close delimiter's two dashes are */
            int ended1 = t >= end1 - 2 + dl + 1, ended2 = t >= end2 - 2 + dl + 2;
            assert_true(r.n <= 2);
            if (r.n >= 1) {
                assert_int_equal(r.parts[0].ended, ended1);
                assert_true(r.parts[0].body.len <= 5);
                assert_memory_equal(r.parts[0].body.data, "first", r.parts[0].body.len);
            }
            if (r.n == 2) {
                assert_int_equal(r.parts[1].ended, ended2);
                assert_string_equal(r.parts[1].filename, "x.hprof.zip");
            }
            if (ended2) assert_int_equal(r.n, 2);
            rec_free(&r);
        }
    }
    cp_buf_free(&body);
}

/* Zero parts: a close delimiter alone (what Go's Writer produces with no part) is a
 * well-formed empty form; a body without any delimiter is truncated. */
static void test_empty_forms(void **state)
{
    (void)state;
    static const struct {
        const char *body;
        int status;
    } t[] = {
        {"--bb--", CP_OK},
        {"\r\n--bb--\r\n", CP_OK},
        {"junk\r\n--bb--", CP_OK},
        {"", CP_ECORRUPT},
        {"just a preamble", CP_ECORRUPT},
        {"--bb-", CP_ECORRUPT},
        {"x--bb--", CP_ECORRUPT}, /* not at a line start */
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(t); i++) {
        rec r;
        char msg[256];
        assert_int_equal(run_all("multipart/form-data; boundary=bb", t[i].body, strlen(t[i].body), &r, msg, sizeof msg),
                         t[i].status);
        assert_int_equal(r.n, 0);
        rec_free(&r);
    }
}

/* A callback's non-zero return stops the parse with that status at that very callback. */
static void test_callback_errors(void **state)
{
    (void)state;
    const char *body = "--bb\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nfirst\r\n"
                       "--bb\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nsecond\r\n"
                       "--bb\r\n\r\n\r\n--bb--\r\n";
    size_t len = strlen(body);
    rec all = {0};
    char msg[256];
    assert_int_equal(run("multipart/form-data; boundary=bb", body, len, (chunking){0, NULL, 0}, &all, msg, sizeof msg),
                     CP_OK);
    assert_int_equal(all.n, 3);
    assert_int_equal(all.calls, 8); /* begin, data, end, begin, data, end, begin, end */
    static const int statuses[] = {CP_EABORT, CP_EIO, -42, 7};
    for (int k = 1; k <= all.calls; k++) {
        for (size_t c = 0; c <= 3; c += 3) {
            rec r = {0};
            r.fail_at = k;
            r.fail_status = statuses[k % 4];
            int st = run("multipart/form-data; boundary=bb", body, len, (chunking){c, NULL, 0}, &r, msg, sizeof msg);
            assert_int_equal(st, r.fail_status);
            if (c == 0) assert_int_equal(r.calls, k); /* whole: exactly k callbacks */
            assert_true(r.calls >= 1);
            assert_true(r.failed);
            assert_non_null(strstr(msg, "callback"));
            rec_free(&r);
        }
    }
    /* which callback failed is named */
    rec r = {0};
    r.fail_at = 2; /* part_data */
    r.fail_status = CP_EIO;
    assert_int_equal(run("multipart/form-data; boundary=bb", body, len, (chunking){0, NULL, 0}, &r, msg, sizeof msg),
                     CP_EIO);
    assert_non_null(strstr(msg, "part_data"));
    rec_free(&r);
    rec_free(&all);
}

/* Callbacks may be NULL: the parser still checks the body. */
static void test_null_callbacks(void **state)
{
    (void)state;
    cp_mp_callbacks none = {NULL, NULL, NULL};
    cp_mp *m = NULL;
    char err[64];
    assert_int_equal(cp_mp_new("multipart/form-data; boundary=bb", &none, NULL, &m, err, sizeof err), CP_OK);
    const char *body = "--bb\r\n\r\nx\r\n--bb--";
    assert_int_equal(cp_mp_feed(m, body, strlen(body)), CP_OK);
    assert_int_equal(cp_mp_finish(m), CP_OK);
    assert_int_equal(cp_mp_feed(m, "epilogue", 8), CP_OK);
    cp_mp_free(m);
    cp_mp_free(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_go_format),      cmocka_unit_test(test_curl_format),
        cmocka_unit_test(test_several_parts),  cmocka_unit_test(test_random_binary),
        cmocka_unit_test(test_header_values),  cmocka_unit_test(test_content_types),
        cmocka_unit_test(test_malformed),      cmocka_unit_test(test_header_limit),
        cmocka_unit_test(test_part_limit),     cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_empty_forms),    cmocka_unit_test(test_callback_errors),
        cmocka_unit_test(test_null_callbacks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
