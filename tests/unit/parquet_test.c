/* parquet_test.c -- the Parquet layer (cp_parquet.h, spec/parquet.md §11.1): Thrift
 * compact golden bytes and skipping, the hybrid and delta encodings, whole files through
 * writer -> reader for every column type and the §6.3 map rows, dictionary fallback,
 * row groups, statistics, foreign page shapes built by hand (v2 pages, GZIP, DELTA,
 * PLAIN_DICTIONARY, RLE booleans) and corrupt input.
 *
 * Files live in memory: the writer's sink appends to a cp_buf, the reader's pread copies
 * out of it (and fails when asked for bytes past the end). */
#include "testutil.h"

#include "parquet/cp_parquet.h"
#include "parquet/pq_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* ---- memory files ------------------------------------------------------------------------ */

static int sink_buf(void *ud, const void *p, size_t n) { return cp_buf_append(ud, p, n); }

typedef struct mfile {
    const uint8_t *p;
    size_t n;
} mfile;

static int pread_mem(void *ud, void *dst, size_t n, uint64_t off)
{
    const mfile *f = ud;
    if (off > f->n || n > f->n - off) return CP_EIO;
    memcpy(dst, f->p + off, n);
    return CP_OK;
}

static cp_pq_reader *open_mem(const uint8_t *p, size_t n, mfile *f)
{
    f->p = p;
    f->n = n;
    cp_pq_reader *r = NULL;
    char err[256];
    int st = cp_pq_reader_open(pread_mem, f, n, &r, err, sizeof err);
    if (st != CP_OK) fail_msg("open: %d %s", st, err);
    return r;
}

static int try_open(const uint8_t *p, size_t n, char *err, size_t errlen)
{
    mfile f = {p, n};
    cp_pq_reader *r = NULL;
    int st = cp_pq_reader_open(pread_mem, &f, n, &r, err, errlen);
    if (st == CP_OK) {
        assert_non_null(r);
        cp_pq_reader_free(r);
    } else {
        assert_null(r);
        assert_true(err[0] != 0);
    }
    return st;
}

/* Opens and reads every column of every row group; returns the first failure. */
static int read_all(const uint8_t *p, size_t n, char *err, size_t errlen)
{
    mfile f = {p, n};
    cp_pq_reader *r = NULL;
    int st = cp_pq_reader_open(pread_mem, &f, n, &r, err, errlen);
    if (st != CP_OK) return st;
    int first = CP_OK;
    for (size_t g = 0; g < cp_pq_reader_row_groups(r); g++) {
        for (size_t c = 0; c < cp_pq_reader_columns(r); c++) {
            cp_pq_column_data d;
            cp_pq_stats s;
            cp_pq_reader_stats(r, g, c, &s);
            st = cp_pq_reader_read(r, g, c, &d);
            if (st != CP_OK && first == CP_OK) {
                first = st;
                snprintf(err, errlen, "%s", cp_pq_reader_errmsg(r));
            }
        }
        cp_pq_reader_reset_arena(r);
    }
    cp_pq_reader_free(r);
    return first;
}

/* ---- hex --------------------------------------------------------------------------------- */

static size_t unhex(const char *hex, uint8_t *out, size_t cap)
{
    size_t n = 0;
    for (const char *s = hex; *s;) {
        if (*s == ' ') {
            s++;
            continue;
        }
        unsigned v;
        assert_int_equal(sscanf(s, "%2x", &v), 1);
        assert_true(n < cap);
        out[n++] = (uint8_t)v;
        s += 2;
    }
    return n;
}

static void assert_hex(const uint8_t *p, size_t n, const char *hex)
{
    uint8_t want[512];
    size_t wn = unhex(hex, want, sizeof want);
    if (wn != n || memcmp(p, want, n) != 0) {
        char got[1600];
        size_t k = 0;
        for (size_t i = 0; i < n && k + 4 < sizeof got; i++) k += (size_t)snprintf(got + k, sizeof got - k, "%02x ", p[i]);
        got[k] = 0;
        fail_msg("bytes differ\n  got:  %s\n  want: %s", got, hex);
    }
}

/* ---- Thrift compact ------------------------------------------------------------------- */

static void test_varint_zigzag(void **state)
{
    (void)state;
    uint8_t b[10];
    size_t n = pq_put_uvarint(b, 50399);
    assert_hex(b, n, "df 89 03");
    pq_tr r;
    pq_tr_init(&r, b, n);
    uint64_t v;
    assert_int_equal(pq_tr_uvarint(&r, &v), CP_OK);
    assert_int_equal(v, 50399);
    assert_int_equal(r.pos, 3);

    int64_t in[] = {0, -1, 1, -2, 20};
    uint64_t out[] = {0, 1, 2, 3, 40};
    for (size_t i = 0; i < 5; i++) {
        assert_int_equal(pq_zigzag(in[i]), out[i]);
        assert_int_equal(pq_unzigzag(out[i]), in[i]);
    }
    int64_t ext[] = {INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < 6; i++) {
        n = pq_put_uvarint(b, pq_zigzag(ext[i]));
        pq_tr_init(&r, b, n);
        assert_int_equal(pq_tr_uvarint(&r, &v), CP_OK);
        assert_true(pq_unzigzag(v) == ext[i]);
    }
    assert_int_equal(pq_zigzag(INT64_MIN), UINT64_MAX);
    /* truncated and over-long varints */
    uint8_t bad[11];
    memset(bad, 0xFF, sizeof bad);
    pq_tr_init(&r, bad, 3);
    assert_int_equal(pq_tr_uvarint(&r, &v), CP_ECORRUPT);
    pq_tr_init(&r, bad, 11);
    assert_int_equal(pq_tr_uvarint(&r, &v), CP_ECORRUPT);
}

static void test_thrift_golden(void **state)
{
    (void)state;
    cp_buf b;
    cp_buf_init(&b);
    pq_page_header h = {.type = PQ_PAGE_DATA, .uncompressed = 20, .compressed = 20, .num_values = 5,
                        .encoding = PQ_ENC_PLAIN};
    assert_int_equal(pq_page_header_write(&b, &h), CP_OK);
    assert_hex(b.data, b.len, "15 00 15 28 15 28 2c 15 0a 15 00 15 06 15 06 00 00");

    cp_buf_reset(&b);
    pq_page_header d = {.type = PQ_PAGE_DICTIONARY, .uncompressed = 12, .compressed = 12, .num_values = 2,
                        .encoding = PQ_ENC_PLAIN};
    assert_int_equal(pq_page_header_write(&b, &d), CP_OK);
    assert_hex(b.data, b.len, "15 04 15 18 15 18 4c 15 04 15 00 00 00");

    cp_buf_reset(&b);
    pq_page_header v2 = {.type = PQ_PAGE_DATA_V2, .uncompressed = 30, .compressed = 25, .num_values = 9,
                         .num_nulls = 5, .num_rows = 5, .encoding = PQ_ENC_PLAIN, .def_len = 7, .rep_len = 5,
                         .is_compressed = 1};
    assert_int_equal(pq_page_header_write(&b, &v2), CP_OK);
    assert_hex(b.data, b.len, "15 06 15 3c 15 32 5c 15 12 15 0a 15 0a 15 00 15 0e 15 0a 00 00");
    /* and back */
    pq_page_header back;
    size_t used;
    const char *why = NULL;
    assert_int_equal(pq_page_header_read(b.data, b.len, &back, &used, &why), CP_OK);
    assert_int_equal(used, b.len);
    assert_int_equal(back.type, PQ_PAGE_DATA_V2);
    assert_int_equal(back.uncompressed, 30);
    assert_int_equal(back.compressed, 25);
    assert_int_equal(back.num_values, 9);
    assert_int_equal(back.num_nulls, 5);
    assert_int_equal(back.def_len, 7);
    assert_int_equal(back.rep_len, 5);
    assert_int_equal(back.is_compressed, 1);

    /* schema elements of §2.5 */
    pq_tw w;
    cp_buf_reset(&b);
    pq_tw_init(&w, &b);
    cp_pq_column ts = {"ts", CP_PQ_TS_MS, 1, 0};
    pq_schema_write_column(&w, &ts);
    assert_int_equal(w.err, CP_OK);
    assert_hex(b.data, b.len, "15 04 25 02 18 02 74 73 25 12 4c 8c 11 1c 1c 00 00 00 00 00");
    cp_buf_reset(&b);
    pq_tw_init(&w, &b);
    cp_pq_column id = {"id", CP_PQ_I32, 0, 0};
    pq_schema_write_column(&w, &id);
    assert_hex(b.data, b.len, "15 02 25 00 18 02 69 64 25 22 4c ac 13 20 11 00 00 00");

    /* long-form field header: field 20 after field 1 */
    cp_buf_reset(&b);
    pq_tw_init(&w, &b);
    pq_tw_i32(&w, 1, 0);
    pq_tw_i32(&w, 20, 7);
    assert_hex(b.data, b.len, "15 00 05 28 0e");
    pq_tr r;
    pq_tr_init(&r, b.data, b.len);
    int16_t last = 0, fid;
    int t;
    int32_t v;
    assert_int_equal(pq_tr_field(&r, &last, &fid, &t), CP_OK);
    assert_int_equal(fid, 1);
    assert_int_equal(pq_tr_i32(&r, t, &v), CP_OK);
    assert_int_equal(pq_tr_field(&r, &last, &fid, &t), CP_OK);
    assert_int_equal(fid, 20);
    assert_int_equal(t, PQ_T_I32);
    assert_int_equal(pq_tr_i32(&r, t, &v), CP_OK);
    assert_int_equal(v, 7);
    cp_buf_free(&b);
}

/* A page header with unknown fields of every type between the known ones still reads,
 * and a skipper gets through nested unknown values. */
static void test_thrift_skip_unknown(void **state)
{
    (void)state;
    cp_buf b;
    cp_buf_init(&b);
    pq_tw w;
    pq_tw_init(&w, &b);
    pq_tw_i32(&w, 1, PQ_PAGE_DATA);
    pq_tw_i32(&w, 2, 3);
    pq_tw_i32(&w, 3, 3);
    pq_tw_i32(&w, 4, 12345); /* crc */
    pq_tw_struct_begin(&w, 5);
    pq_tw_i32(&w, 1, 1);
    pq_tw_i32(&w, 2, 0);
    pq_tw_i32(&w, 3, 3);
    pq_tw_i32(&w, 4, 3);
    pq_tw_struct_begin(&w, 5); /* page statistics: skipped */
    pq_tw_binary(&w, 5, "max", 3);
    pq_tw_struct_end(&w);
    pq_tw_struct_end(&w);
    assert_int_equal(w.err, CP_OK);
    /* raw unknown fields: 20 double, 21 uuid, 22 map<i32,string>, 23 set<i64>,
     * 24 list<bool>, 25 i8, 26 i16, 27 bool, 28 nested struct with a list of structs */
    uint8_t raw[] = {
        0x07, 0x28, 1, 2, 3, 4, 5, 6, 7, 8,                          /* double */
        0x1d, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, /* uuid (delta 1) */
        0x1b, 0x02, 0x58, 0x02, 0x01, 'a', 0x04, 0x02, 'b', 'c',  /* map: 2 pairs i32 -> binary */
        0x1a, 0x26, 0x02, 0x04,                                     /* set<i64> of 2 */
        0x19, 0x31, 0x01, 0x02, 0x01,                               /* list<bool> of 3 */
        0x13, 0xff,                                                 /* i8 */
        0x14, 0x04,                                                 /* i16 */
        0x11,                                                       /* bool true */
        0x1c, 0x19, 0x2c, 0x15, 0x02, 0x00, 0x00, 0x18, 0x00, 0x00, /* struct { list<struct> of 2 } */
        0x1b, 0x00,                                                 /* empty map (field 29) */
        0x00,                                                       /* STOP PageHeader */
    };
    /* the page header's own STOP was not written yet: append the unknowns, then STOP */
    cp_buf_append(&b, raw, sizeof raw);
    pq_page_header h;
    size_t used;
    const char *why = NULL;
    int st = pq_page_header_read(b.data, b.len, &h, &used, &why);
    if (st != CP_OK) fail_msg("read: %s", why);
    assert_int_equal(used, b.len);
    assert_int_equal(h.type, PQ_PAGE_DATA);
    assert_int_equal(h.num_values, 1);
    assert_int_equal(h.uncompressed, 3);

    /* every prefix is truncated */
    for (size_t n = 0; n < b.len; n++)
        assert_int_equal(pq_page_header_read(b.data, n, &h, &used, &why), CP_ECORRUPT);

    /* nesting is bounded */
    cp_buf_reset(&b);
    for (int i = 0; i < 200; i++) cp_buf_putc(&b, 0x1c);
    pq_tr r;
    pq_tr_init(&r, b.data, b.len);
    assert_int_equal(pq_tr_skip(&r, PQ_T_STRUCT, 0), CP_ECORRUPT);
    /* a list that claims more elements than bytes */
    uint8_t lie[] = {0xF5, 0xFF, 0xFF, 0x03, 0x00};
    pq_tr_init(&r, lie, sizeof lie);
    assert_int_equal(pq_tr_skip(&r, PQ_T_LIST, 0), CP_ECORRUPT);
    cp_buf_free(&b);
}

/* ---- hybrid ---------------------------------------------------------------------------- */

static void hybrid_golden(const uint32_t *v, size_t n, int w, const char *hex)
{
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(pq_hybrid_encode_u32(&b, v, n, w), CP_OK);
    assert_hex(b.data, b.len, hex);
    if (w <= 8) { /* the u8 encoder gives the same bytes */
        uint8_t v8[1024];
        for (size_t i = 0; i < n; i++) v8[i] = (uint8_t)v[i];
        cp_buf_reset(&b);
        assert_int_equal(pq_hybrid_encode_u8(&b, v8, n, w), CP_OK);
        assert_hex(b.data, b.len, hex);
    }
    uint32_t back[1024];
    size_t used;
    assert_int_equal(pq_hybrid_decode(b.data, b.len, w, back, 4, n, &used, NULL), CP_OK);
    assert_int_equal(used, b.len);
    assert_memory_equal(back, v, n * 4);
    cp_buf_free(&b);
}

static void test_hybrid_golden(void **state)
{
    (void)state;
    uint32_t seq[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    hybrid_golden(seq, 8, 3, "03 88 c6 fa");
    uint32_t zeros[1000] = {0};
    hybrid_golden(zeros, 1000, 1, "d0 0f 00");
    uint32_t ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1};
    hybrid_golden(ones, 12, 1, "14 01 03 02");
    uint32_t def[5] = {1, 0, 1, 1, 1};
    hybrid_golden(def, 5, 1, "03 1d");
    /* the §6.3 level streams */
    uint32_t krep[] = {0, 0, 0, 1, 0, 0, 1}, kdef[] = {1, 2, 2, 2, 0, 2, 2};
    uint32_t erep[] = {0, 0, 0, 2, 1, 0, 0, 1, 2}, edef[] = {1, 5, 5, 5, 3, 0, 2, 4, 5};
    hybrid_golden(krep, 7, 1, "03 48");
    hybrid_golden(kdef, 7, 2, "03 a9 28");
    hybrid_golden(erep, 9, 2, "05 80 41 02 00");
    hybrid_golden(edef, 9, 3, "05 69 3b 88 05 00 00");
    /* a v1 level section around 1000 zeros */
    cp_buf b;
    cp_buf_init(&b);
    uint8_t z8[1000] = {0};
    assert_int_equal(pq_hybrid_encode_u8(&b, z8, 1000, 1), CP_OK);
    assert_int_equal(b.len, 3);
    cp_buf_free(&b);
}

/* Random values with long runs mixed in, every width, lengths up to 10000. */
static void test_hybrid_random(void **state)
{
    (void)state;
    uint64_t rng = 42;
    size_t cap = 10000;
    uint32_t *v = malloc(cap * 4), *back = malloc((cap + 8) * 4);
    uint8_t *v8 = malloc(cap), *b8 = malloc(cap + 8);
    cp_buf b;
    cp_buf_init(&b);
    for (int iter = 0; iter < 400; iter++) {
        int w = 1 + iter % 32;
        size_t n = iter < 32 ? (size_t)iter : (size_t)(test_rand(&rng) % (cap + 1));
        uint64_t mask = w == 32 ? 0xFFFFFFFFull : ((1ull << w) - 1);
        size_t i = 0;
        while (i < n) {
            uint64_t r = test_rand(&rng);
            size_t run = (r & 3) == 0 ? 1 + (size_t)((r >> 8) % 300) : 1 + (size_t)((r >> 8) % 5);
            uint32_t x = (uint32_t)((r >> 20) & mask);
            if ((r & 0x30) == 0) x = (uint32_t)mask; /* extremes too */
            for (size_t k = 0; k < run && i < n; k++, i++) v[i] = (r & 4) ? x : (uint32_t)(test_rand(&rng) & mask);
        }
        cp_buf_reset(&b);
        assert_int_equal(pq_hybrid_encode_u32(&b, v, n, w), CP_OK);
        size_t used;
        const char *why = NULL;
        assert_int_equal(pq_hybrid_decode(b.data, b.len, w, back, 4, n, &used, &why), CP_OK);
        assert_int_equal(used, b.len);
        if (n) assert_memory_equal(back, v, n * 4);
        if (n && b.len) /* a byte short is always corrupt */
            assert_int_equal(pq_hybrid_decode(b.data, b.len - 1, w, back, 4, n, &used, &why), CP_ECORRUPT);
        if (w <= 8) {
            for (size_t k = 0; k < n; k++) v8[k] = (uint8_t)v[k];
            cp_buf_reset(&b);
            assert_int_equal(pq_hybrid_encode_u8(&b, v8, n, w), CP_OK);
            assert_int_equal(pq_hybrid_decode(b.data, b.len, w, b8, 1, n, &used, &why), CP_OK);
            if (n) assert_memory_equal(b8, v8, n);
        }
    }
    /* RLE value wider than the width, and width 0 */
    uint8_t wide[] = {0x10, 0x05};
    uint32_t out[8];
    assert_int_equal(pq_hybrid_decode(wide, 2, 2, out, 4, 8, NULL, NULL), CP_ECORRUPT);
    uint8_t w0[] = {0x10};
    assert_int_equal(pq_hybrid_decode(w0, 1, 0, out, 4, 8, NULL, NULL), CP_OK);
    assert_int_equal(out[7], 0);
    cp_buf_free(&b);
    free(v);
    free(back);
    free(v8);
    free(b8);
}

/* ---- DELTA_BINARY_PACKED --------------------------------------------------------------- */

static void put_uv(cp_buf *b, uint64_t v)
{
    uint8_t t[10];
    cp_buf_append(b, t, pq_put_uvarint(t, v));
}

/* A straightforward encoder (block 128, 4 miniblocks of 32) to test the decoder with. */
static void delta_encode(cp_buf *b, const int64_t *v, size_t n)
{
    put_uv(b, 128);
    put_uv(b, 4);
    put_uv(b, n);
    put_uv(b, pq_zigzag(n ? v[0] : 0));
    for (size_t i = 1; i < n; i += 128) {
        size_t cnt = n - i < 128 ? n - i : 128;
        uint64_t d[128];
        int64_t min = INT64_MAX;
        for (size_t k = 0; k < cnt; k++) {
            d[k] = (uint64_t)v[i + k] - (uint64_t)v[i + k - 1];
            if ((int64_t)d[k] < min) min = (int64_t)d[k];
        }
        put_uv(b, pq_zigzag(min));
        uint8_t widths[4] = {0};
        for (size_t m = 0; m < 4; m++)
            for (size_t k = m * 32; k < cnt && k < m * 32 + 32; k++) {
                int wd = pq_bit_width(d[k] - (uint64_t)min);
                if (wd > widths[m]) widths[m] = (uint8_t)wd;
            }
        cp_buf_append(b, widths, 4);
        for (size_t m = 0; m < 4 && m * 32 < cnt; m++) {
            uint8_t data[32 * 8] = {0};
            for (size_t k = 0; k < 32 && m * 32 + k < cnt; k++) {
                uint64_t x = d[m * 32 + k] - (uint64_t)min;
                for (int bit = 0; bit < widths[m]; bit++)
                    if ((x >> bit) & 1) {
                        size_t at = k * widths[m] + (size_t)bit;
                        data[at / 8] |= (uint8_t)(1u << (at % 8));
                    }
            }
            cp_buf_append(b, data, 4 * (size_t)widths[m]);
        }
    }
}

static void test_delta(void **state)
{
    (void)state;
    uint8_t g[64];
    int64_t out[16];
    size_t n, used;
    n = unhex("80 01 04 05 02 02 00 00 00 00", g, sizeof g);
    assert_int_equal(pq_delta_decode(g, n, 0, out, 5, &used, NULL), CP_OK);
    assert_int_equal(used, n);
    for (int i = 0; i < 5; i++) assert_int_equal(out[i], i + 1);
    n = unhex("80 01 04 08 0e 03 02 00 00 00 c0 3f 00 00 00 00 00 00", g, sizeof g);
    int64_t want[] = {7, 5, 3, 1, 2, 3, 4, 5};
    assert_int_equal(pq_delta_decode(g, n, 1, out, 8, &used, NULL), CP_OK);
    assert_memory_equal(out, want, sizeof want);
    n = unhex("80 01 04 01 80 a0 ab fe f9 62", g, sizeof g);
    assert_int_equal(pq_delta_decode(g, n, 0, out, 1, &used, NULL), CP_OK);
    assert_int_equal(out[0], INT64_C(1700000000000));
    /* count mismatch and truncation */
    assert_int_equal(pq_delta_decode(g, n, 0, out, 2, &used, NULL), CP_ECORRUPT);
    n = unhex("80 01 04 08 0e 03 02 00 00 00 c0 3f", g, sizeof g);
    assert_int_equal(pq_delta_decode(g, n, 1, out, 8, &used, NULL), CP_ECORRUPT);

    /* random int64 with the extremes and their neighbours (deltas wrap) */
    size_t sizes[] = {0, 1, 2, 127, 128, 129, 1000};
    uint64_t rng = 7;
    int64_t *v = malloc(1000 * sizeof *v), *back = malloc(1000 * sizeof *back);
    cp_buf b;
    cp_buf_init(&b);
    for (size_t s = 0; s < CP_ARRAY_LEN(sizes); s++) {
        for (size_t i = 0; i < sizes[s]; i++) {
            uint64_t r = test_rand(&rng);
            switch (r % 6) {
            case 0: v[i] = INT64_MIN + (int64_t)(r >> 60); break;
            case 1: v[i] = INT64_MAX - (int64_t)(r >> 60); break;
            case 2: v[i] = (int64_t)(r >> 40); break;
            case 3: v[i] = i ? cp_add_wrap64(v[i - 1], 1) : 0; break;
            default: v[i] = (int64_t)test_rand(&rng); break;
            }
        }
        cp_buf_reset(&b);
        delta_encode(&b, v, sizes[s]);
        assert_int_equal(pq_delta_decode(b.data, b.len, 0, back, sizes[s], &used, NULL), CP_OK);
        assert_int_equal(used, b.len);
        if (sizes[s]) assert_memory_equal(back, v, sizes[s] * sizeof *v);
    }
    /* INT32 with deltas computed in 64 bits (DuckDB): 33-bit widths, 32-bit results */
    int64_t i32[] = {INT32_MIN, INT32_MAX, INT32_MIN, 0, INT32_MAX, -1};
    cp_buf_reset(&b);
    delta_encode(&b, i32, 6);
    assert_int_equal(pq_delta_decode(b.data, b.len, 1, back, 6, &used, NULL), CP_OK);
    assert_memory_equal(back, i32, sizeof i32);
    cp_buf_free(&b);
    free(v);
    free(back);
}

/* ---- a random table of every column type ---------------------------------------------- */

typedef struct pool {
    uint8_t *mem;
    size_t used, cap;
} pool;

static void *palloc(pool *p, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    assert_true(p->used + n <= p->cap);
    void *r = p->mem + p->used;
    p->used += n;
    return r;
}

static const cp_pq_column ALL_COLS[] = {
    {"id", CP_PQ_I32, 0, 0},         {"n", CP_PQ_I64, 1, 0},          {"u", CP_PQ_U64, 0, 0},
    {"ts", CP_PQ_TS_MS, 0, 0},       {"flag", CP_PQ_BOOL, 1, 0},      {"pod", CP_PQ_STRING, 1, 1},
    {"method", CP_PQ_STRING, 0, 0},  {"trace", CP_PQ_BINARY, 1, 0},   {"params", CP_PQ_MAP_STR_LIST, 1, 1},
    {"tags", CP_PQ_MAP_STR_STR, 1, 0},
};
#define NCOLS CP_ARRAY_LEN(ALL_COLS)

static const uint8_t EMPTY_LIST_MARK[1];

static cp_pq_bytes rand_bytes(pool *p, uint64_t *rng, size_t maxlen, const char *alphabet)
{
    size_t n = (size_t)(test_rand(rng) % (maxlen + 1));
    uint8_t *b = palloc(p, n + 1);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = test_rand(rng);
        b[i] = alphabet ? (uint8_t)alphabet[r % strlen(alphabet)] : (uint8_t)r;
    }
    return (cp_pq_bytes){b, n};
}

static cp_pq_bytes lit(const char *s) { return (cp_pq_bytes){(const uint8_t *)s, strlen(s)}; }

static void gen_row(pool *p, uint64_t *rng, size_t i, cp_pq_value *row)
{
    static const char *pods[] = {"pod-a", "pod-b", "", "pod-cc", "pod-d"};
    static const char *keys[] = {"web.url", "user", "a", "zz", "", "sql.id"};
    memset(row, 0, NCOLS * sizeof *row);
#define R() test_rand(rng)
    row[0].i = (int32_t)R();
    row[1].null = R() % 5 == 0;
    row[1].i = (int64_t)R();
    row[2].i = (int64_t)R();
    row[3].i = INT64_C(1700000000000) + (int64_t)i * 7;
    row[4].null = R() % 7 == 0;
    row[4].i = (int64_t)(R() & 1);
    row[5].null = R() % 6 == 0;
    row[5].b = lit(pods[R() % 5]);
    row[6].b = rand_bytes(p, rng, 20, NULL);
    row[7].null = R() % 4 == 0;
    row[7].b = rand_bytes(p, rng, 300, NULL);
    /* params */
    row[8].null = R() % 5 == 0;
    if (!row[8].null) {
        size_t nm = (size_t)(R() % 5);
        cp_pq_map_entry *e = palloc(p, (nm + 1) * sizeof *e);
        for (size_t k = 0; k < nm; k++) {
            e[k].key = lit(keys[R() % 6]);
            uint64_t kind = R() % 6;
            if (kind == 0) {
                e[k].values = NULL, e[k].nvalues = 0; /* null list */
            } else if (kind == 1) {
                e[k].values = (const cp_pq_bytes *)EMPTY_LIST_MARK, e[k].nvalues = 0; /* empty list */
            } else {
                size_t nv = 1 + (size_t)(R() % 3);
                cp_pq_bytes *v = palloc(p, nv * sizeof *v);
                for (size_t j = 0; j < nv; j++)
                    v[j] = R() % 5 == 0 ? (cp_pq_bytes){NULL, 0} : rand_bytes(p, rng, 8, "abcdef");
                e[k].values = v, e[k].nvalues = nv;
            }
        }
        row[8].map = e;
        row[8].nmap = nm;
    }
    /* tags */
    row[9].null = R() % 5 == 0;
    if (!row[9].null) {
        size_t nm = (size_t)(R() % 4);
        cp_pq_map_entry *e = palloc(p, (nm + 1) * sizeof *e);
        for (size_t k = 0; k < nm; k++) {
            e[k].key = lit(keys[R() % 6]);
            if (R() % 4 == 0) {
                e[k].values = NULL, e[k].nvalues = 0;
            } else {
                cp_pq_bytes *v = palloc(p, sizeof *v);
                *v = rand_bytes(p, rng, 10, "xyz");
                e[k].values = v, e[k].nvalues = 1;
            }
        }
        row[9].map = e;
        row[9].nmap = nm;
    }
#undef R
}

static void assert_bytes_eq(cp_pq_bytes got, cp_pq_bytes want)
{
    assert_int_equal(got.len, want.len);
    assert_non_null(got.p); /* empty strings are present, not null */
    if (want.len) assert_memory_equal(got.p, want.p, want.len);
}

/* Compares one decoded column of rows[first .. first + d->nrows) with what was written. */
static void check_column(const cp_pq_column *col, size_t c, const cp_pq_value *rows, size_t first,
                         const cp_pq_column_data *d)
{
    for (size_t i = 0; i < d->nrows; i++) {
        const cp_pq_value *v = &rows[(first + i) * NCOLS + c];
        int is_map = col->type == CP_PQ_MAP_STR_LIST || col->type == CP_PQ_MAP_STR_STR;
        if (col->optional || is_map) {
            assert_non_null(d->nulls);
            assert_int_equal(d->nulls[i] != 0, v->null != 0);
        } else {
            assert_null(d->nulls);
        }
        if (is_map) {
            size_t o0 = d->map_off[i], o1 = d->map_off[i + 1];
            assert_int_equal(o1 - o0, v->null ? 0 : v->nmap);
            for (size_t k = 0; !v->null && k < v->nmap; k++) {
                const cp_pq_map_entry *we = &v->map[k], *ge = &d->map_entries[o0 + k];
                assert_bytes_eq(ge->key, we->key);
                if (col->type == CP_PQ_MAP_STR_STR) {
                    if (!we->values) {
                        assert_null(ge->values);
                        assert_int_equal(ge->nvalues, 0);
                    } else {
                        assert_int_equal(ge->nvalues, 1);
                        assert_bytes_eq(ge->values[0], we->values[0]);
                    }
                    continue;
                }
                if (!we->values) {
                    assert_null(ge->values);
                    assert_int_equal(ge->nvalues, 0);
                    continue;
                }
                assert_non_null(ge->values);
                assert_int_equal(ge->nvalues, we->nvalues);
                for (size_t j = 0; j < we->nvalues; j++) {
                    if (!we->values[j].p) assert_null(ge->values[j].p);
                    else assert_bytes_eq(ge->values[j], we->values[j]);
                }
            }
            continue;
        }
        if (v->null) continue;
        if (col->type == CP_PQ_STRING || col->type == CP_PQ_BINARY) assert_bytes_eq(d->b[i], v->b);
        else assert_true(d->i[i] == v->i);
    }
}

static int cmpb(cp_pq_bytes a, cp_pq_bytes b)
{
    int c = memcmp(a.p, b.p, a.len < b.len ? a.len : b.len);
    return c ? c : (a.len > b.len) - (a.len < b.len);
}

/* Expected statistics of rows[first .. first+n) of column c, computed from the rows. */
static void check_stats(cp_pq_reader *r, size_t g, size_t c, const cp_pq_value *rows, size_t first, size_t n)
{
    const cp_pq_column *col = &ALL_COLS[c];
    cp_pq_stats s;
    assert_int_equal(cp_pq_reader_stats(r, g, c, &s), CP_OK);
    int64_t nulls = 0, imin = 0, imax = 0;
    cp_pq_bytes bmin = {0}, bmax = {0};
    int any = 0;
    for (size_t i = first; i < first + n; i++) {
        const cp_pq_value *v = &rows[i * NCOLS + c];
        if (col->type == CP_PQ_MAP_STR_LIST || col->type == CP_PQ_MAP_STR_STR) {
            if (v->null || v->nmap == 0) {
                nulls++;
                continue;
            }
            for (size_t k = 0; k < v->nmap; k++) {
                cp_pq_bytes key = v->map[k].key;
                if (!any || cmpb(key, bmin) < 0) bmin = key;
                if (!any || cmpb(key, bmax) > 0) bmax = key;
                any = 1;
            }
            continue;
        }
        if (v->null) {
            nulls++;
            continue;
        }
        if (col->type == CP_PQ_STRING || col->type == CP_PQ_BINARY) {
            if (!any || cmpb(v->b, bmin) < 0) bmin = v->b;
            if (!any || cmpb(v->b, bmax) > 0) bmax = v->b;
        } else if (col->type == CP_PQ_U64) {
            if (!any || (uint64_t)v->i < (uint64_t)imin) imin = v->i;
            if (!any || (uint64_t)v->i > (uint64_t)imax) imax = v->i;
        } else {
            if (!any || v->i < imin) imin = v->i;
            if (!any || v->i > imax) imax = v->i;
        }
        any = 1;
    }
    assert_int_equal(s.null_count, nulls);
    int bytes = col->type == CP_PQ_STRING || col->type == CP_PQ_BINARY || col->type >= CP_PQ_MAP_STR_LIST;
    if (!any || (bytes && (bmin.len > 64 || bmax.len > 64))) {
        assert_int_equal(s.has_minmax, 0);
        return;
    }
    assert_int_equal(s.has_minmax, 1);
    if (bytes) {
        assert_int_equal(s.min_len, bmin.len);
        assert_int_equal(s.max_len, bmax.len);
        if (bmin.len) assert_memory_equal(s.min_b, bmin.p, bmin.len);
        if (bmax.len) assert_memory_equal(s.max_b, bmax.p, bmax.len);
    } else {
        assert_true(s.min_i == imin);
        assert_true(s.max_i == imax);
    }
}

typedef struct table {
    pool p;
    cp_pq_value *rows;
    size_t nrows;
} table;

static void table_make(table *t, size_t nrows, uint64_t seed)
{
    t->p.cap = 4096 + nrows * 2048;
    t->p.mem = malloc(t->p.cap);
    t->p.used = 0;
    t->rows = malloc((nrows + 1) * NCOLS * sizeof *t->rows);
    t->nrows = nrows;
    uint64_t rng = seed;
    for (size_t i = 0; i < nrows; i++) gen_row(&t->p, &rng, i, &t->rows[i * NCOLS]);
}

static void table_free(table *t)
{
    free(t->p.mem);
    free(t->rows);
}

static void write_table(const table *t, const cp_pq_column *cols, size_t ncols, const cp_pq_writer_opts *o,
                        cp_buf *out)
{
    cp_pq_writer *w;
    char err[256];
    int st = cp_pq_writer_new(cols, ncols, o, sink_buf, out, &w, err, sizeof err);
    if (st != CP_OK) fail_msg("writer_new: %s", err);
    for (size_t i = 0; i < t->nrows; i++) {
        st = cp_pq_writer_add(w, &t->rows[i * NCOLS]);
        if (st != CP_OK) fail_msg("add row %zu: %s", i, cp_pq_writer_errmsg(w));
    }
    st = cp_pq_writer_finish(w);
    if (st != CP_OK) fail_msg("finish: %s", cp_pq_writer_errmsg(w));
    assert_int_equal(cp_pq_writer_rows(w), t->nrows);
    assert_int_equal(cp_pq_writer_bytes(w), out->len);
    cp_pq_writer_free(w);
}

/* Reads the whole file back and compares every row group, column and statistic. */
static void verify_table(const table *t, const cp_buf *file, size_t expect_groups)
{
    mfile f;
    cp_pq_reader *r = open_mem(file->data, file->len, &f);
    assert_int_equal(cp_pq_reader_rows(r), t->nrows);
    assert_int_equal(cp_pq_reader_columns(r), NCOLS);
    if (expect_groups) assert_int_equal(cp_pq_reader_row_groups(r), expect_groups);
    for (size_t c = 0; c < NCOLS; c++) {
        const cp_pq_column *col = cp_pq_reader_column(r, c);
        assert_string_equal(col->name, ALL_COLS[c].name);
        assert_int_equal(col->type, ALL_COLS[c].type);
        int opt = ALL_COLS[c].optional || ALL_COLS[c].type >= CP_PQ_MAP_STR_LIST;
        assert_int_equal(col->optional, opt);
        assert_int_equal(cp_pq_reader_find(r, ALL_COLS[c].name), (int)c);
    }
    size_t first = 0;
    for (size_t g = 0; g < cp_pq_reader_row_groups(r); g++) {
        size_t n = (size_t)cp_pq_reader_row_group_rows(r, g);
        cp_pq_column_data d[NCOLS];
        for (size_t c = 0; c < NCOLS; c++) { /* all columns of a group before the reset */
            int st = cp_pq_reader_read(r, g, c, &d[c]);
            if (st != CP_OK) fail_msg("read rg %zu col %zu: %s", g, c, cp_pq_reader_errmsg(r));
            assert_int_equal(d[c].nrows, n);
        }
        for (size_t c = 0; c < NCOLS; c++) {
            check_column(&ALL_COLS[c], c, t->rows, first, &d[c]);
            check_stats(r, g, c, t->rows, first, n);
        }
        cp_pq_reader_reset_arena(r);
        first += n;
    }
    assert_int_equal(first, t->nrows);
    cp_pq_reader_free(r);
}

static void test_roundtrip_all_types(void **state)
{
    (void)state;
    table t;
    table_make(&t, 2500, 1);
    cp_pq_writer_opts o = {.row_group_rows = 1000, .page_rows = 128};
    cp_buf f;
    cp_buf_init(&f);
    write_table(&t, ALL_COLS, NCOLS, &o, &f);
    verify_table(&t, &f, 3);
    /* uncompressed, one page per group */
    cp_buf g;
    cp_buf_init(&g);
    o.zstd_level = -1;
    o.page_rows = 100000;
    write_table(&t, ALL_COLS, NCOLS, &o, &g);
    verify_table(&t, &g, 3);
    assert_true(g.len > f.len); /* zstd did something */
    /* defaults: one row group */
    cp_buf_reset(&g);
    write_table(&t, ALL_COLS, NCOLS, NULL, &g);
    verify_table(&t, &g, 1);
    /* deterministic: the same rows give the same bytes */
    cp_buf h;
    cp_buf_init(&h);
    write_table(&t, ALL_COLS, NCOLS, NULL, &h);
    assert_int_equal(h.len, g.len);
    assert_memory_equal(h.data, g.data, g.len);
    cp_buf_free(&f);
    cp_buf_free(&g);
    cp_buf_free(&h);
    table_free(&t);
}

static void test_many_row_groups(void **state)
{
    (void)state;
    table t;
    table_make(&t, 100, 2);
    cp_pq_writer_opts o = {.row_group_rows = 3, .page_rows = 2};
    cp_buf f;
    cp_buf_init(&f);
    write_table(&t, ALL_COLS, NCOLS, &o, &f);
    verify_table(&t, &f, 34);
    /* row groups cut by bytes */
    cp_buf_reset(&f);
    cp_pq_writer_opts ob = {.row_group_bytes = 4096, .page_rows = 1};
    write_table(&t, ALL_COLS, NCOLS, &ob, &f);
    mfile mf;
    cp_pq_reader *r = open_mem(f.data, f.len, &mf);
    assert_true(cp_pq_reader_row_groups(r) > 3);
    cp_pq_reader_free(r);
    verify_table(&t, &f, 0);
    cp_buf_free(&f);
    table_free(&t);
}

static void test_zero_rows(void **state)
{
    (void)state;
    table t;
    table_make(&t, 0, 3);
    cp_buf f;
    cp_buf_init(&f);
    const char *kv[] = {"cloudprof.kind", "calls", "empty", NULL};
    cp_pq_writer_opts o = {.kv = kv, .nkv = 2, .created_by = "test version 1"};
    write_table(&t, ALL_COLS, NCOLS, &o, &f);
    mfile mf;
    cp_pq_reader *r = open_mem(f.data, f.len, &mf);
    assert_int_equal(cp_pq_reader_rows(r), 0);
    assert_int_equal(cp_pq_reader_row_groups(r), 0);
    assert_int_equal(cp_pq_reader_columns(r), NCOLS);
    assert_string_equal(cp_pq_reader_kv(r, "cloudprof.kind"), "calls");
    assert_null(cp_pq_reader_kv(r, "empty"));
    assert_null(cp_pq_reader_kv(r, "missing"));
    cp_pq_column_data d;
    assert_int_equal(cp_pq_reader_read(r, 0, 0, &d), CP_EINVAL);
    assert_int_equal(cp_pq_reader_find(r, "nope"), -1);
    cp_pq_reader_free(r);
    assert_non_null(memmem(f.data, f.len, "test version 1", 14));
    /* the guide's FileMetaData start: version 1, 11 schema elements, root "schema" with 5 */
    static const cp_pq_column five[] = {{"id", CP_PQ_I32, 0, 0},
                                        {"name", CP_PQ_STRING, 1, 0},
                                        {"ts", CP_PQ_TS_MS, 1, 0},
                                        {"ok", CP_PQ_BOOL, 0, 0},
                                        {"params", CP_PQ_MAP_STR_LIST, 1, 0}};
    cp_buf_reset(&f);
    cp_pq_writer *w;
    assert_int_equal(cp_pq_writer_new(five, 5, NULL, sink_buf, &f, &w, NULL, 0), CP_OK);
    assert_int_equal(cp_pq_writer_finish(w), CP_OK);
    cp_pq_writer_free(w);
    assert_hex(f.data, 4, "50 41 52 31");
    assert_hex(f.data + 4, 15, "15 02 19 bc 48 06 73 63 68 65 6d 61 15 0a 00");
    assert_memory_equal(f.data + f.len - 4, "PAR1", 4);
    assert_int_equal(pq_le32(f.data + f.len - 8), f.len - 12);
    cp_buf_free(&f);
    table_free(&t);
}

/* ---- the §6.3 rows ---------------------------------------------------------------------- */

static void test_map_rows_6_3(void **state)
{
    (void)state;
    static const cp_pq_column cols[] = {{"params", CP_PQ_MAP_STR_LIST, 1, 0}};
    cp_pq_bytes x = lit("x"), y = lit("y"), z = lit("z"), nul = {NULL, 0};
    cp_pq_bytes l1[] = {x}, l2[] = {x, y}, l4[] = {nul, z};
    cp_pq_map_entry r1[] = {{lit("a"), l1, 1}};
    cp_pq_map_entry r2[] = {{lit("a"), l2, 2}, {lit("b"), (const cp_pq_bytes *)EMPTY_LIST_MARK, 0}};
    cp_pq_map_entry r4[] = {{lit("c"), NULL, 0}, {lit("d"), l4, 2}};
    cp_pq_value rows[5] = {{0}};
    rows[0].map = NULL, rows[0].nmap = 0; /* {} */
    rows[1].map = r1, rows[1].nmap = 1;
    rows[2].map = r2, rows[2].nmap = 2;
    rows[3].null = 1;
    rows[4].map = r4, rows[4].nmap = 2;
    cp_pq_writer_opts o = {.zstd_level = -1};
    cp_buf f;
    cp_buf_init(&f);
    cp_pq_writer *w;
    assert_int_equal(cp_pq_writer_new(cols, 1, &o, sink_buf, &f, &w, NULL, 0), CP_OK);
    for (int i = 0; i < 5; i++) assert_int_equal(cp_pq_writer_add(w, &rows[i]), CP_OK);
    assert_int_equal(cp_pq_writer_finish(w), CP_OK);
    cp_pq_writer_free(w);
    /* the exact page bodies of the guide (uncompressed, PLAIN). The guide prints the key's
     * repetition section with length 03, but its hybrid data "03 48" is 2 bytes (one
     * group of width 1): a typo there, 02 is right */
    uint8_t kbody[64], ebody[64];
    size_t kn = unhex("02000000 0348 03000000 03a928 0100000061 0100000061 0100000062 0100000063 0100000064",
                      kbody, sizeof kbody);
    size_t en = unhex("05000000 0580410200 07000000 05693b88050000 0100000078 0100000078 0100000079 010000007a",
                      ebody, sizeof ebody);
    assert_non_null(memmem(f.data, f.len, kbody, kn));
    assert_non_null(memmem(f.data, f.len, ebody, en));
    /* chunk metadata: num_values 7 and 9, null counts by level */
    size_t flen = pq_le32(f.data + f.len - 8);
    pq_meta m;
    char err[256];
    assert_int_equal(pq_meta_decode(f.data + f.len - 8 - flen, flen, &m, err, sizeof err), CP_OK);
    assert_int_equal(m.nleaves, 2);
    assert_int_equal(m.leaves[0].max_def, 2);
    assert_int_equal(m.leaves[0].max_rep, 1);
    assert_int_equal(m.leaves[1].max_def, 5);
    assert_int_equal(m.leaves[1].max_rep, 2);
    assert_int_equal(m.rgs[0].chunks[0].num_values, 7);
    assert_int_equal(m.rgs[0].chunks[1].num_values, 9);
    assert_int_equal(m.rgs[0].chunks[0].stats.null_count, 2);
    assert_int_equal(m.rgs[0].chunks[1].stats.null_count, 5);
    assert_int_equal(m.rgs[0].chunks[0].codec, PQ_CODEC_UNCOMPRESSED);
    pq_meta_free(&m);
    /* and back */
    mfile mf;
    cp_pq_reader *r = open_mem(f.data, f.len, &mf);
    cp_pq_column_data d;
    assert_int_equal(cp_pq_reader_read(r, 0, 0, &d), CP_OK);
    assert_int_equal(d.nrows, 5);
    size_t offs[] = {0, 0, 1, 3, 3, 5};
    for (int i = 0; i <= 5; i++) assert_int_equal(d.map_off[i], offs[i]);
    uint8_t nulls[] = {0, 0, 0, 1, 0};
    assert_memory_equal(d.nulls, nulls, 5);
    const cp_pq_map_entry *e = d.map_entries;
    assert_memory_equal(e[0].key.p, "a", 1);
    assert_int_equal(e[0].nvalues, 1);
    assert_memory_equal(e[0].values[0].p, "x", 1);
    assert_int_equal(e[1].nvalues, 2);
    assert_memory_equal(e[1].values[1].p, "y", 1);
    assert_memory_equal(e[2].key.p, "b", 1);
    assert_non_null(e[2].values); /* empty list */
    assert_int_equal(e[2].nvalues, 0);
    assert_memory_equal(e[3].key.p, "c", 1);
    assert_null(e[3].values); /* null list */
    assert_int_equal(e[4].nvalues, 2);
    assert_null(e[4].values[0].p); /* null element */
    assert_memory_equal(e[4].values[1].p, "z", 1);
    cp_pq_stats s;
    assert_int_equal(cp_pq_reader_stats(r, 0, 0, &s), CP_OK);
    assert_int_equal(s.has_minmax, 1);
    assert_int_equal(s.min_len, 1);
    assert_memory_equal(s.min_b, "a", 1);
    assert_memory_equal(s.max_b, "d", 1);
    cp_pq_reader_free(r);
    cp_buf_free(&f);
}

/* ---- dictionary --------------------------------------------------------------------------- */

/* Reads the footer of a file written here. */
static void footer_meta(const cp_buf *f, pq_meta *m)
{
    size_t flen = pq_le32(f->data + f->len - 8);
    char err[256];
    int st = pq_meta_decode(f->data + f->len - 8 - flen, flen, m, err, sizeof err);
    if (st != CP_OK) fail_msg("meta: %s", err);
}

static void test_dictionary_fallback(void **state)
{
    (void)state;
    enum { N = 3000, NC = 7 };
    static const cp_pq_column cols[NC] = {{"few", CP_PQ_STRING, 0, 1}, {"many", CP_PQ_STRING, 1, 1},
                                          {"nodict", CP_PQ_STRING, 0, 0}, {"ifew", CP_PQ_I64, 1, 1},
                                          {"iuniq", CP_PQ_I32, 0, 1},     {"inodict", CP_PQ_I64, 0, 0},
                                          {"ufew", CP_PQ_U64, 0, 1}};
    char (*text)[24] = malloc(N * sizeof *text);
    cp_pq_value *rows = calloc(N * NC, sizeof *rows);
    for (int i = 0; i < N; i++) {
        cp_pq_value *v = &rows[i * NC];
        snprintf(text[i], sizeof text[i], "value-%d", i);
        v[0].b = lit(i % 3 == 0 ? "alpha" : i % 3 == 1 ? "beta" : "gamma");
        v[1].b = lit(text[i]);
        v[1].null = i % 10 == 0;
        v[2].b = lit("same");
        v[3].i = (i % 7) * INT64_C(1000000000000) - 5;
        v[3].null = i % 11 == 0;
        v[4].i = i * 31 - 1000;
        v[5].i = i % 2;
        v[6].i = i % 4 == 0 ? -1 : i % 4; /* -1: UINT64_MAX, the unsigned max */
    }
    /* "many" has 3000 distinct values of ~14 bytes: over a 4 KiB dictionary limit in the
     * first group, under it in the small second group */
    cp_pq_writer_opts o = {.dict_max_bytes = 4096, .row_group_rows = 2900, .page_rows = 1000};
    cp_buf f;
    cp_buf_init(&f);
    cp_pq_writer *w;
    assert_int_equal(cp_pq_writer_new(cols, NC, &o, sink_buf, &f, &w, NULL, 0), CP_OK);
    for (int i = 0; i < N; i++) assert_int_equal(cp_pq_writer_add(w, &rows[i * NC]), CP_OK);
    assert_int_equal(cp_pq_writer_finish(w), CP_OK);
    cp_pq_writer_free(w);
    pq_meta m;
    footer_meta(&f, &m);
    assert_int_equal(m.nrgs, 2);
    assert_true(m.rgs[0].chunks[0].dict_off > 0);   /* few: dictionary */
    assert_int_equal(m.rgs[0].chunks[1].dict_off, -1); /* many: fell back to PLAIN */
    assert_int_equal(m.rgs[0].chunks[2].dict_off, -1); /* nodict */
    /* many, second group: 100 rows, 90 distinct values: under the limit, so a dictionary */
    assert_true(m.rgs[1].chunks[1].dict_off > 0);
    /* integers that ask: few values get one, distinct values do not; no ask, none */
    assert_true(m.rgs[0].chunks[3].dict_off > 0);
    assert_int_equal(m.rgs[0].chunks[4].dict_off, -1);
    assert_int_equal(m.rgs[0].chunks[5].dict_off, -1);
    assert_true(m.rgs[0].chunks[6].dict_off > 0);
    pq_meta_free(&m);
    mfile mf;
    cp_pq_reader *r = open_mem(f.data, f.len, &mf);
    size_t first = 0;
    for (size_t g = 0; g < 2; g++) {
        cp_pq_column_data d[NC];
        for (size_t c = 0; c < NC; c++) assert_int_equal(cp_pq_reader_read(r, g, c, &d[c]), CP_OK);
        for (size_t i = 0; i < d[0].nrows; i++) {
            const cp_pq_value *v = &rows[(first + i) * NC];
            assert_bytes_eq(d[0].b[i], v[0].b);
            assert_int_equal(d[1].nulls[i], v[1].null);
            if (!v[1].null) assert_bytes_eq(d[1].b[i], v[1].b);
            assert_bytes_eq(d[2].b[i], v[2].b);
            assert_int_equal(d[3].nulls[i], v[3].null);
            for (size_t c = 3; c < NC; c++)
                if (!v[c].null) assert_true(d[c].i[i] == v[c].i);
        }
        first += d[0].nrows;
        cp_pq_reader_reset_arena(r);
    }
    cp_pq_stats s;
    assert_int_equal(cp_pq_reader_stats(r, 0, 0, &s), CP_OK);
    assert_int_equal(s.min_len, 5);
    assert_memory_equal(s.min_b, "alpha", 5);
    assert_memory_equal(s.max_b, "gamma", 5);
    assert_int_equal(s.null_count, 0);
    assert_int_equal(cp_pq_reader_stats(r, 0, 1, &s), CP_OK);
    assert_int_equal(s.null_count, 290);
    assert_memory_equal(s.min_b, "value-1", 7); /* memcmp order */
    assert_int_equal(s.min_len, 7);
    assert_memory_equal(s.max_b, "value-999", 9);
    assert_int_equal(cp_pq_reader_stats(r, 0, 3, &s), CP_OK); /* from the dictionary */
    assert_true(s.min_i == -5 && s.max_i == 6 * INT64_C(1000000000000) - 5);
    assert_int_equal(cp_pq_reader_stats(r, 0, 6, &s), CP_OK);
    assert_true(s.min_i == 1 && s.max_i == -1); /* unsigned order */
    cp_pq_reader_free(r);
    cp_buf_free(&f);
    free(text);
    free(rows);
}

/* ---- statistics for pruning ----------------------------------------------------------- */

static void test_stats_pruning(void **state)
{
    (void)state;
    static const cp_pq_column cols[] = {{"ts", CP_PQ_TS_MS, 0, 0}, {"pod", CP_PQ_STRING, 1, 1},
                                        {"small", CP_PQ_I32, 1, 0}, {"big", CP_PQ_U64, 0, 0},
                                        {"long", CP_PQ_BINARY, 1, 0}, {"b", CP_PQ_BOOL, 0, 0}};
    enum { N = 1000, NC = 6 };
    cp_pq_value *rows = calloc(N * NC, sizeof *rows);
    char pods[N][16];
    static uint8_t longval[100];
    memset(longval, 'q', sizeof longval);
    for (int i = 0; i < N; i++) {
        cp_pq_value *v = &rows[i * NC];
        v[0].i = INT64_C(1700000000000) + i * 1000;
        snprintf(pods[i], sizeof pods[i], "pod-%03d", i / 100);
        v[1].b = lit(pods[i]);
        v[2].null = (i / 100) % 2 == 1; /* odd groups: all null */
        v[2].i = -i;
        v[3].i = i % 2 ? -1 : i; /* -1 = UINT64_MAX: the max of every group */
        v[4].b = (cp_pq_bytes){longval, i % 100 == 0 ? 100 : 10};
        v[5].i = 1;
    }
    cp_pq_writer_opts o = {.row_group_rows = 100};
    cp_buf f;
    cp_buf_init(&f);
    cp_pq_writer *w;
    assert_int_equal(cp_pq_writer_new(cols, NC, &o, sink_buf, &f, &w, NULL, 0), CP_OK);
    for (int i = 0; i < N; i++) assert_int_equal(cp_pq_writer_add(w, &rows[i * NC]), CP_OK);
    assert_int_equal(cp_pq_writer_finish(w), CP_OK);
    cp_pq_writer_free(w);
    mfile mf;
    cp_pq_reader *r = open_mem(f.data, f.len, &mf);
    assert_int_equal(cp_pq_reader_row_groups(r), 10);
    /* a time range query touches exactly the groups whose [min, max] overlap it */
    int64_t from = INT64_C(1700000000000) + 250000, to = INT64_C(1700000000000) + 420000;
    int hits = 0;
    for (size_t g = 0; g < 10; g++) {
        cp_pq_stats s;
        assert_int_equal(cp_pq_reader_stats(r, g, 0, &s), CP_OK);
        assert_int_equal(s.has_minmax, 1);
        assert_true(s.min_i == INT64_C(1700000000000) + (int64_t)g * 100000);
        assert_true(s.max_i == INT64_C(1700000000000) + (int64_t)g * 100000 + 99000);
        assert_int_equal(s.null_count, 0);
        hits += !(s.max_i < from || s.min_i > to);
        assert_int_equal(cp_pq_reader_stats(r, g, 1, &s), CP_OK);
        char want[16];
        snprintf(want, sizeof want, "pod-%03zu", g);
        assert_int_equal(s.min_len, 7);
        assert_memory_equal(s.min_b, want, 7);
        assert_memory_equal(s.max_b, want, 7);
        assert_int_equal(cp_pq_reader_stats(r, g, 2, &s), CP_OK);
        if (g % 2) {
            assert_int_equal(s.has_minmax, 0);
            assert_int_equal(s.null_count, 100);
        } else {
            assert_int_equal(s.has_minmax, 1);
            assert_true(s.min_i == -(int64_t)(g * 100 + 99));
            assert_true(s.max_i == -(int64_t)(g * 100));
        }
        assert_int_equal(cp_pq_reader_stats(r, g, 3, &s), CP_OK);
        assert_true(s.min_i == (int64_t)(g * 100)); /* unsigned order */
        assert_true(s.max_i == -1);
        assert_int_equal(cp_pq_reader_stats(r, g, 4, &s), CP_OK);
        assert_int_equal(s.has_minmax, 0); /* the 100-byte value is the max: over 64 bytes */
        assert_int_equal(s.null_count, 0);
        assert_int_equal(cp_pq_reader_stats(r, g, 5, &s), CP_OK);
        assert_true(s.min_i == 1 && s.max_i == 1);
    }
    assert_int_equal(hits, 3); /* groups 2, 3 and 4 */
    cp_pq_stats s;
    assert_int_equal(cp_pq_reader_stats(r, 10, 0, &s), CP_EINVAL);
    cp_pq_reader_free(r);
    cp_buf_free(&f);
    free(rows);
}

/* ---- writer errors --------------------------------------------------------------------- */

static int failing_sink(void *ud, const void *p, size_t n)
{
    (void)p;
    size_t *budget = ud;
    if (n > *budget) return CP_EIO;
    *budget -= n;
    return 0;
}

static void test_writer_errors(void **state)
{
    (void)state;
    cp_buf f;
    cp_buf_init(&f);
    cp_pq_writer *w;
    char err[256];
    static const cp_pq_column dup[] = {{"a", CP_PQ_I32, 0, 0}, {"a", CP_PQ_I64, 0, 0}};
    assert_int_equal(cp_pq_writer_new(dup, 2, NULL, sink_buf, &f, &w, err, sizeof err), CP_EINVAL);
    assert_non_null(strstr(err, "two columns"));
    static const cp_pq_column bad[] = {{"a", (cp_pq_type)99, 0, 0}};
    assert_int_equal(cp_pq_writer_new(bad, 1, NULL, sink_buf, &f, &w, err, sizeof err), CP_EINVAL);
    assert_int_equal(cp_pq_writer_new(dup, 0, NULL, sink_buf, &f, &w, err, sizeof err), CP_EINVAL);

    static const cp_pq_column cols[] = {{"a", CP_PQ_I32, 0, 0}, {"s", CP_PQ_STRING, 0, 0}};
    cp_buf_reset(&f);
    assert_int_equal(cp_pq_writer_new(cols, 2, NULL, sink_buf, &f, &w, err, sizeof err), CP_OK);
    cp_pq_value row[2] = {{.i = 1, .b = lit("x")}, {.b = lit("y")}};
    row[0].null = 1; /* required */
    assert_int_equal(cp_pq_writer_add(w, row), CP_EINVAL);
    assert_non_null(strstr(cp_pq_writer_errmsg(w), "required"));
    row[0].null = 0;
    row[0].i = INT64_C(1) << 40; /* does not fit INT32 */
    assert_int_equal(cp_pq_writer_add(w, row), CP_EINVAL);
    row[0].i = 5;
    row[1].b = (cp_pq_bytes){NULL, 3};
    assert_int_equal(cp_pq_writer_add(w, row), CP_EINVAL);
    row[1].b = lit("ok");
    assert_int_equal(cp_pq_writer_add(w, row), CP_OK); /* the bad rows changed nothing */
    assert_int_equal(cp_pq_writer_finish(w), CP_OK);
    assert_int_equal(cp_pq_writer_add(w, row), CP_EINVAL);
    cp_pq_writer_free(w);
    mfile mf;
    cp_pq_reader *r = open_mem(f.data, f.len, &mf);
    assert_int_equal(cp_pq_reader_rows(r), 1);
    cp_pq_column_data d;
    assert_int_equal(cp_pq_reader_read(r, 0, 0, &d), CP_OK);
    assert_int_equal(d.i[0], 5);
    cp_pq_reader_free(r);

    /* a sink that fails: the error comes back and sticks */
    size_t budget = 10;
    assert_int_equal(cp_pq_writer_new(cols, 2, NULL, failing_sink, &budget, &w, err, sizeof err), CP_OK);
    assert_int_equal(cp_pq_writer_add(w, row), CP_OK);
    assert_int_equal(cp_pq_writer_finish(w), CP_EIO);
    assert_int_equal(cp_pq_writer_add(w, row), CP_EIO);
    assert_int_equal(cp_pq_writer_finish(w), CP_EIO);
    assert_true(cp_pq_writer_errmsg(w)[0] != 0);
    cp_pq_writer_free(w);
    budget = 2;
    assert_int_equal(cp_pq_writer_new(cols, 2, NULL, failing_sink, &budget, &w, err, sizeof err), CP_EIO);
    cp_buf_free(&f);
}

/* Values that are all empty (or all null) leave no value bytes at all. */
static void test_empty_values(void **state)
{
    (void)state;
    static const cp_pq_column cols[] = {{"e", CP_PQ_STRING, 0, 1},   {"f", CP_PQ_BINARY, 0, 0},
                                        {"g", CP_PQ_STRING, 1, 1},   {"m", CP_PQ_MAP_STR_STR, 1, 1},
                                        {"l", CP_PQ_MAP_STR_LIST, 1, 0}};
    static const uint8_t nothing[1];
    cp_pq_bytes empty = {nothing, 0};
    cp_pq_map_entry me[] = {{empty, &empty, 1}};
    cp_pq_map_entry le[] = {{empty, &empty, 1}};
    for (int level = -1; level <= 1; level += 2) {
        cp_buf f;
        cp_buf_init(&f);
        cp_pq_writer_opts o = {.zstd_level = level, .page_rows = 3};
        cp_pq_writer *w;
        assert_int_equal(cp_pq_writer_new(cols, 5, &o, sink_buf, &f, &w, NULL, 0), CP_OK);
        for (int i = 0; i < 10; i++) {
            cp_pq_value row[5] = {{.b = empty}, {.b = {NULL, 0}}, {.null = 1}, {.map = me, .nmap = 1},
                                  {.map = le, .nmap = 1}};
            assert_int_equal(cp_pq_writer_add(w, row), CP_OK);
        }
        assert_int_equal(cp_pq_writer_finish(w), CP_OK);
        cp_pq_writer_free(w);
        mfile mf;
        cp_pq_reader *r = open_mem(f.data, f.len, &mf);
        cp_pq_column_data d[5];
        for (size_t c = 0; c < 5; c++) assert_int_equal(cp_pq_reader_read(r, 0, c, &d[c]), CP_OK);
        for (int i = 0; i < 10; i++) {
            assert_non_null(d[0].b[i].p);
            assert_int_equal(d[0].b[i].len, 0);
            assert_non_null(d[1].b[i].p);
            assert_int_equal(d[2].nulls[i], 1);
            assert_int_equal(d[3].map_off[i + 1] - d[3].map_off[i], 1);
            assert_int_equal(d[3].map_entries[i].nvalues, 1);
            assert_int_equal(d[3].map_entries[i].values[0].len, 0);
            assert_non_null(d[4].map_entries[i].values[0].p);
        }
        cp_pq_stats s;
        assert_int_equal(cp_pq_reader_stats(r, 0, 0, &s), CP_OK);
        assert_int_equal(s.has_minmax, 1);
        assert_int_equal(s.min_len, 0);
        cp_pq_reader_free(r);
        cp_buf_free(&f);
    }
}

/* ---- files built by hand: shapes our writer does not produce ---------------------------- */

/* A gzip member of p[0..n). */
static void gzip(const uint8_t *p, size_t n, cp_buf *out)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    cp_buf_reserve(out, deflateBound(&zs, (uLong)n) + 32);
    zs.next_in = (Bytef *)p;
    zs.avail_in = (uInt)n;
    zs.next_out = out->data + out->len;
    zs.avail_out = (uInt)(out->cap - out->len);
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    out->len += zs.total_out;
    deflateEnd(&zs);
}

/* Appends a page (header + body) to a chunk. v2 pages: levels (rl + dl bytes) are the
 * first bytes of body and stay uncompressed. */
static void add_page(cp_buf *chunk, pq_page_header h, const uint8_t *body, size_t n, int codec)
{
    size_t lv = h.type == PQ_PAGE_DATA_V2 ? (size_t)(h.rep_len + h.def_len) : 0;
    cp_buf c;
    cp_buf_init(&c);
    cp_buf_append(&c, body, lv);
    if (codec == PQ_CODEC_GZIP && (h.type != PQ_PAGE_DATA_V2 || h.is_compressed)) gzip(body + lv, n - lv, &c);
    else cp_buf_append(&c, body + lv, n - lv);
    h.uncompressed = (int32_t)n;
    h.compressed = (int32_t)c.len;
    assert_int_equal(pq_page_header_write(chunk, &h), CP_OK);
    cp_buf_append(chunk, c.data, c.len);
    cp_buf_free(&c);
}

typedef struct hand {
    int ptype, rep, conv; /* conv < 0: none */
    int codec;
    int64_t num_values, rows;
    size_t dict_len;      /* bytes of the dictionary page at the chunk start, 0: none */
} hand;

/* PAR1, one column chunk, a footer of one row group. */
static void hand_file(cp_buf *f, const hand *hd, const cp_buf *chunk)
{
    cp_buf_reset(f);
    cp_buf_append(f, "PAR1", 4);
    cp_buf_append(f, chunk->data, chunk->len);
    cp_buf meta;
    cp_buf_init(&meta);
    pq_tw w;
    pq_tw_init(&w, &meta);
    pq_tw_i32(&w, 1, 1);
    pq_tw_list_begin(&w, 2, PQ_T_STRUCT, 2);
    pq_tw_elem_struct_begin(&w);
    pq_tw_string(&w, 4, "schema");
    pq_tw_i32(&w, 5, 1);
    pq_tw_struct_end(&w);
    pq_tw_elem_struct_begin(&w);
    pq_tw_i32(&w, 1, hd->ptype);
    pq_tw_i32(&w, 3, hd->rep);
    pq_tw_string(&w, 4, "v");
    if (hd->conv >= 0) pq_tw_i32(&w, 6, hd->conv);
    pq_tw_struct_end(&w);
    pq_tw_i64(&w, 3, hd->rows);
    pq_tw_list_begin(&w, 4, PQ_T_STRUCT, 1);
    pq_tw_elem_struct_begin(&w);
    pq_tw_list_begin(&w, 1, PQ_T_STRUCT, 1);
    pq_tw_elem_struct_begin(&w);
    pq_tw_i64(&w, 2, 0);
    pq_tw_struct_begin(&w, 3);
    pq_tw_i32(&w, 1, hd->ptype);
    pq_tw_list_begin(&w, 2, PQ_T_I32, 1);
    pq_tw_elem_i32(&w, 0);
    pq_tw_list_begin(&w, 3, PQ_T_BINARY, 1);
    pq_tw_elem_binary(&w, "v", 1);
    pq_tw_i32(&w, 4, hd->codec);
    pq_tw_i64(&w, 5, hd->num_values);
    pq_tw_i64(&w, 6, (int64_t)chunk->len);
    pq_tw_i64(&w, 7, (int64_t)chunk->len);
    pq_tw_i64(&w, 9, 4 + (int64_t)hd->dict_len);
    if (hd->dict_len) pq_tw_i64(&w, 11, 4);
    pq_tw_struct_end(&w);
    pq_tw_struct_end(&w);
    pq_tw_i64(&w, 2, (int64_t)chunk->len);
    pq_tw_i64(&w, 3, hd->rows);
    pq_tw_struct_end(&w);
    pq_tw_struct_end(&w);
    assert_int_equal(w.err, CP_OK);
    cp_buf_append(f, meta.data, meta.len);
    uint8_t tail[8];
    pq_put_le32(tail, (uint32_t)meta.len);
    memcpy(tail + 4, "PAR1", 4);
    cp_buf_append(f, tail, 8);
    cp_buf_free(&meta);
}

static int read_hand(const cp_buf *f, cp_pq_column_data *d, cp_pq_reader **rp)
{
    static mfile mf;
    *rp = open_mem(f->data, f->len, &mf);
    return cp_pq_reader_read(*rp, 0, 0, d);
}

/* INT64 required, data page v2, DELTA_BINARY_PACKED values, GZIP. */
static void test_hand_v2_delta_gzip(void **state)
{
    (void)state;
    enum { N = 1000 };
    int64_t v[N];
    uint64_t rng = 9;
    for (int i = 0; i < N; i++) v[i] = i % 100 == 0 ? INT64_MIN + i : (int64_t)(test_rand(&rng) >> (i % 60));
    cp_buf body, chunk, f;
    cp_buf_init(&body);
    cp_buf_init(&chunk);
    cp_buf_init(&f);
    /* two pages: 400 and 600 values */
    delta_encode(&body, v, 400);
    pq_page_header h = {.type = PQ_PAGE_DATA_V2, .num_values = 400, .num_rows = 400,
                        .encoding = PQ_ENC_DELTA_BINARY_PACKED, .is_compressed = 1};
    add_page(&chunk, h, body.data, body.len, PQ_CODEC_GZIP);
    cp_buf_reset(&body);
    delta_encode(&body, v + 400, 600);
    h.num_values = h.num_rows = 600;
    add_page(&chunk, h, body.data, body.len, PQ_CODEC_GZIP);
    hand hd = {PQ_INT64, PQ_REQUIRED, -1, PQ_CODEC_GZIP, N, N, 0};
    hand_file(&f, &hd, &chunk);
    cp_pq_column_data d;
    cp_pq_reader *r;
    int st = read_hand(&f, &d, &r);
    if (st != CP_OK) fail_msg("%s", cp_pq_reader_errmsg(r));
    assert_int_equal(cp_pq_reader_column(r, 0)->type, CP_PQ_I64);
    assert_int_equal(d.nrows, N);
    assert_memory_equal(d.i, v, sizeof v);
    cp_pq_reader_free(r);
    /* the chunk claims one value more than its pages hold */
    hd.num_values = N + 1;
    hand_file(&f, &hd, &chunk);
    assert_int_equal(read_hand(&f, &d, &r), CP_ECORRUPT);
    cp_pq_reader_free(r);
    cp_buf_free(&body);
    cp_buf_free(&chunk);
    cp_buf_free(&f);
}

/* A v1 body: definition levels (u32 length + hybrid), then the width byte and indices. */
static void dict_body(cp_buf *body, const uint8_t *defs, size_t n, const uint32_t *idx, size_t nidx)
{
    uint8_t zero[4] = {0};
    cp_buf_reset(body);
    cp_buf_append(body, zero, 4);
    pq_hybrid_encode_u8(body, defs, n, 1);
    pq_put_le32(body->data, (uint32_t)(body->len - 4));
    cp_buf_putc(body, 2);
    pq_hybrid_encode_u32(body, idx, nidx, 2);
}

/* INT64 optional with a PLAIN dictionary page and PLAIN_DICTIONARY v1 data pages
 * (DuckDB's v1 shape), GZIP; then a dictionary index out of range. */
static void test_hand_dictionary_v1(void **state)
{
    (void)state;
    cp_buf body, chunk, f;
    cp_buf_init(&body);
    cp_buf_init(&chunk);
    cp_buf_init(&f);
    int64_t dict[3] = {-5, 1000000000000, 7};
    uint8_t db[24];
    for (int i = 0; i < 3; i++) pq_put_le64(db + 8 * i, (uint64_t)dict[i]);
    pq_page_header dh = {.type = PQ_PAGE_DICTIONARY, .num_values = 3, .encoding = PQ_ENC_PLAIN_DICTIONARY};
    add_page(&chunk, dh, db, sizeof db, PQ_CODEC_GZIP);
    size_t dict_len = chunk.len;
    /* 10 rows: def 1,1,0,1,1,1,0,1,1,1 ; indices of the 8 present values */
    uint8_t defs[10] = {1, 1, 0, 1, 1, 1, 0, 1, 1, 1};
    uint32_t idx[8] = {0, 1, 2, 2, 1, 0, 0, 2};
    dict_body(&body, defs, 10, idx, 8);
    pq_page_header h = {.type = PQ_PAGE_DATA, .num_values = 10, .encoding = PQ_ENC_PLAIN_DICTIONARY};
    add_page(&chunk, h, body.data, body.len, PQ_CODEC_GZIP);
    hand hd = {PQ_INT64, PQ_OPTIONAL, PQ_CT_INT_64, PQ_CODEC_GZIP, 10, 10, dict_len};
    hand_file(&f, &hd, &chunk);
    cp_pq_column_data d;
    cp_pq_reader *r;
    int st = read_hand(&f, &d, &r);
    if (st != CP_OK) fail_msg("%s", cp_pq_reader_errmsg(r));
    assert_int_equal(d.nrows, 10);
    int k = 0;
    for (int i = 0; i < 10; i++) {
        assert_int_equal(d.nulls[i], !defs[i]);
        if (defs[i]) assert_true(d.i[i] == dict[idx[k++]]);
    }
    cp_pq_reader_free(r);
    /* index 3 of a 3-entry dictionary */
    cp_buf_reset(&chunk);
    add_page(&chunk, dh, db, sizeof db, PQ_CODEC_UNCOMPRESSED);
    idx[5] = 3;
    dict_body(&body, defs, 10, idx, 8);
    add_page(&chunk, h, body.data, body.len, PQ_CODEC_UNCOMPRESSED);
    hd.codec = PQ_CODEC_UNCOMPRESSED;
    {
        pq_page_header back; /* the dictionary page's length: header + body */
        size_t used;
        const char *why;
        assert_int_equal(pq_page_header_read(chunk.data, chunk.len, &back, &used, &why), CP_OK);
        hd.dict_len = used + (size_t)back.compressed;
    }
    hand_file(&f, &hd, &chunk);
    assert_int_equal(read_hand(&f, &d, &r), CP_ECORRUPT);
    assert_non_null(strstr(cp_pq_reader_errmsg(r), "dictionary index"));
    cp_pq_reader_free(r);
    /* a data page before the dictionary */
    cp_buf_reset(&chunk);
    idx[5] = 1;
    dict_body(&body, defs, 10, idx, 8);
    add_page(&chunk, h, body.data, body.len, PQ_CODEC_UNCOMPRESSED);
    add_page(&chunk, dh, db, sizeof db, PQ_CODEC_UNCOMPRESSED);
    hd.dict_len = 0;
    hand_file(&f, &hd, &chunk);
    assert_int_equal(read_hand(&f, &d, &r), CP_ECORRUPT);
    cp_pq_reader_free(r);
    cp_buf_free(&body);
    cp_buf_free(&chunk);
    cp_buf_free(&f);
}

/* BOOLEAN optional with RLE values in a v2 page, uncompressed (is_compressed = false);
 * INT32 with DELTA in a v1 page; a DOUBLE column this reader does not read. */
static void test_hand_booleans_and_others(void **state)
{
    (void)state;
    cp_buf body, chunk, f;
    cp_buf_init(&body);
    cp_buf_init(&chunk);
    cp_buf_init(&f);
    uint8_t defs[20], vals[20];
    size_t nv = 0;
    for (int i = 0; i < 20; i++) {
        defs[i] = i % 4 != 3;
        if (defs[i]) vals[nv++] = (uint8_t)(i % 3 == 0);
    }
    pq_hybrid_encode_u8(&body, defs, 20, 1);
    int32_t dl = (int32_t)body.len;
    uint8_t zero[4] = {0};
    size_t at = body.len;
    cp_buf_append(&body, zero, 4);
    pq_hybrid_encode_u8(&body, vals, nv, 1);
    pq_put_le32(body.data + at, (uint32_t)(body.len - at - 4));
    pq_page_header h = {.type = PQ_PAGE_DATA_V2, .num_values = 20, .num_rows = 20, .num_nulls = 5,
                        .encoding = PQ_ENC_RLE, .def_len = dl, .is_compressed = 0};
    add_page(&chunk, h, body.data, body.len, PQ_CODEC_ZSTD);
    hand hd = {PQ_BOOLEAN, PQ_OPTIONAL, -1, PQ_CODEC_ZSTD, 20, 20, 0};
    hand_file(&f, &hd, &chunk);
    cp_pq_column_data d;
    cp_pq_reader *r;
    int st = read_hand(&f, &d, &r);
    if (st != CP_OK) fail_msg("%s", cp_pq_reader_errmsg(r));
    assert_int_equal(cp_pq_reader_column(r, 0)->type, CP_PQ_BOOL);
    size_t k = 0;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(d.nulls[i], !defs[i]);
        if (defs[i]) assert_int_equal(d.i[i], vals[k++]);
    }
    cp_pq_reader_free(r);

    /* INT32 DELTA in a v1 page: the guide's 7,5,3,1,2,3,4,5 */
    uint8_t g[32];
    size_t gn = unhex("80 01 04 08 0e 03 02 00 00 00 c0 3f 00 00 00 00 00 00", g, sizeof g);
    cp_buf_reset(&chunk);
    pq_page_header h1 = {.type = PQ_PAGE_DATA, .num_values = 8, .encoding = PQ_ENC_DELTA_BINARY_PACKED};
    add_page(&chunk, h1, g, gn, PQ_CODEC_UNCOMPRESSED);
    hand h32 = {PQ_INT32, PQ_REQUIRED, -1, PQ_CODEC_UNCOMPRESSED, 8, 8, 0};
    hand_file(&f, &h32, &chunk);
    st = read_hand(&f, &d, &r);
    if (st != CP_OK) fail_msg("%s", cp_pq_reader_errmsg(r));
    int64_t want[] = {7, 5, 3, 1, 2, 3, 4, 5};
    assert_memory_equal(d.i, want, sizeof want);
    cp_pq_reader_free(r);
    /* an encoding we do not read: DELTA_BYTE_ARRAY */
    cp_buf_reset(&chunk);
    h1.encoding = 7;
    add_page(&chunk, h1, g, gn, PQ_CODEC_UNCOMPRESSED);
    hand_file(&f, &h32, &chunk);
    assert_int_equal(read_hand(&f, &d, &r), CP_EINVAL);
    cp_pq_reader_free(r);

    /* DOUBLE: type 0, and reading it says why */
    hand hdbl = {PQ_DOUBLE, PQ_REQUIRED, -1, PQ_CODEC_UNCOMPRESSED, 8, 1, 0};
    hand_file(&f, &hdbl, &chunk);
    assert_int_equal(read_hand(&f, &d, &r), CP_EINVAL);
    assert_int_equal(cp_pq_reader_column(r, 0)->type, 0);
    assert_non_null(strstr(cp_pq_reader_errmsg(r), "not supported"));
    cp_pq_reader_free(r);
    cp_buf_free(&body);
    cp_buf_free(&chunk);
    cp_buf_free(&f);
}

/* ---- corrupt input ---------------------------------------------------------------------- */

static void small_file(cp_buf *f, int zstd_level, size_t page_rows)
{
    table t;
    table_make(&t, 30, 5);
    cp_pq_writer_opts o = {.row_group_rows = 12, .page_rows = page_rows, .zstd_level = zstd_level};
    write_table(&t, ALL_COLS, NCOLS, &o, f);
    table_free(&t);
}

static void test_corrupt_frame(void **state)
{
    (void)state;
    cp_buf f;
    cp_buf_init(&f);
    small_file(&f, 0, 5);
    char err[256];
    assert_int_equal(read_all(f.data, f.len, err, sizeof err), CP_OK);
    /* truncated anywhere: the footer frame is gone */
    for (size_t n = 0; n < f.len; n += n < 64 ? 1 : 37) assert_int_equal(try_open(f.data, n, err, sizeof err), CP_ECORRUPT);
    /* bad magic at either end */
    uint8_t *c = malloc(f.len);
    memcpy(c, f.data, f.len);
    c[0] = 'X';
    assert_int_equal(try_open(c, f.len, err, sizeof err), CP_ECORRUPT);
    assert_non_null(strstr(err, "magic"));
    memcpy(c, f.data, f.len);
    c[f.len - 1] = '2';
    assert_int_equal(try_open(c, f.len, err, sizeof err), CP_ECORRUPT);
    /* footer length too large for the file, and over the bound */
    memcpy(c, f.data, f.len);
    pq_put_le32(c + f.len - 8, (uint32_t)f.len - 11);
    assert_int_equal(try_open(c, f.len, err, sizeof err), CP_ECORRUPT);
    pq_put_le32(c + f.len - 8, 0xFFFFFFF0u);
    assert_int_equal(try_open(c, f.len, err, sizeof err), CP_ELIMIT);
    /* footer length too small: the metadata is cut */
    pq_put_le32(c + f.len - 8, pq_le32(f.data + f.len - 8) - 10);
    assert_int_equal(try_open(c, f.len, err, sizeof err), CP_ECORRUPT);
    free(c);
    cp_buf_free(&f);
}

/* Finds the first data page header of leaf `leaf` in row group 0 and lets fn change it
 * (in place, keeping its length). */
static void patch_page(cp_buf *f, size_t leaf, void (*fn)(pq_page_header *))
{
    pq_meta m;
    footer_meta(f, &m);
    int64_t off = m.rgs[0].chunks[leaf].data_off;
    pq_meta_free(&m);
    pq_page_header h;
    size_t used;
    const char *why;
    assert_int_equal(pq_page_header_read(f->data + off, f->len - (size_t)off, &h, &used, &why), CP_OK);
    fn(&h);
    cp_buf nb;
    cp_buf_init(&nb);
    assert_int_equal(pq_page_header_write(&nb, &h), CP_OK);
    assert_int_equal(nb.len, used);
    memcpy(f->data + off, nb.data, used);
    cp_buf_free(&nb);
}

static void lie_compressed(pq_page_header *h) { h->compressed += 1; }
static void lie_uncompressed(pq_page_header *h) { h->uncompressed += 1; }
static void lie_values(pq_page_header *h) { h->num_values += 1; }
static void lie_smaller(pq_page_header *h) { h->compressed -= 1; }

static void expect_read_fails(cp_buf *f, size_t col, int want, const char *needle)
{
    mfile mf;
    cp_pq_reader *r = open_mem(f->data, f->len, &mf);
    cp_pq_column_data d;
    int st = cp_pq_reader_read(r, 0, col, &d);
    if (st != want || (needle && !strstr(cp_pq_reader_errmsg(r), needle)))
        fail_msg("status %d (want %d): %s", st, want, cp_pq_reader_errmsg(r));
    assert_int_equal(d.nrows, 0);
    cp_pq_reader_free(r);
}

static void test_corrupt_pages(void **state)
{
    (void)state;
    cp_buf f;
    cp_buf_init(&f);
    /* leaf 0 is "id" (INT32 required, 12 rows: 48 bytes); leaf 5 "pod" (dictionary);
     * one page per chunk, so a page that grows runs past its chunk */
    small_file(&f, -1, 100);
    patch_page(&f, 0, lie_compressed);
    expect_read_fails(&f, 0, CP_ECORRUPT, "past the end of the chunk");
    cp_buf_reset(&f);
    small_file(&f, -1, 100);
    patch_page(&f, 0, lie_uncompressed);
    expect_read_fails(&f, 0, CP_ECORRUPT, "uncompressed page");
    cp_buf_reset(&f);
    small_file(&f, 0, 100); /* zstd: the frame gives another size */
    patch_page(&f, 0, lie_uncompressed);
    expect_read_fails(&f, 0, CP_ECORRUPT, "zstd");
    cp_buf_reset(&f);
    small_file(&f, 0, 100);
    patch_page(&f, 0, lie_values);
    expect_read_fails(&f, 0, CP_ECORRUPT, NULL);
    cp_buf_reset(&f);
    small_file(&f, 0, 100);
    patch_page(&f, 5, lie_smaller);
    expect_read_fails(&f, 5, CP_ECORRUPT, NULL);
    cp_buf_free(&f);
}

/* Every single-byte change of a small file (two kinds of flips) either reads or fails
 * cleanly; under ASan/UBSan this also proves no bad access. */
static void test_corrupt_mutations(void **state)
{
    (void)state;
    int levels[] = {-1, 1};
    for (int li = 0; li < 2; li++) {
        cp_buf f;
        cp_buf_init(&f);
        table t;
        table_make(&t, 12, 11);
        cp_pq_writer_opts o = {.row_group_rows = 7, .page_rows = 4, .zstd_level = levels[li]};
        write_table(&t, ALL_COLS, NCOLS, &o, &f);
        table_free(&t);
        uint8_t *c = malloc(f.len);
        int ok = 0, bad = 0;
        for (size_t i = 0; i < f.len; i++) {
            for (int k = 0; k < 2; k++) {
                memcpy(c, f.data, f.len);
                c[i] ^= k ? 0xFF : 0x01;
                char err[256] = "";
                int st = read_all(c, f.len, err, sizeof err);
                if (st == CP_OK) {
                    ok++;
                } else {
                    if (st != CP_ECORRUPT && st != CP_ELIMIT && st != CP_EINVAL && st != CP_EIO)
                        fail_msg("byte %zu: status %d", i, st);
                    if (!err[0]) fail_msg("byte %zu: status %d without a message", i, st);
                    bad++;
                }
            }
        }
        assert_true(bad > 0);
        free(c);
        cp_buf_free(&f);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varint_zigzag),
        cmocka_unit_test(test_thrift_golden),
        cmocka_unit_test(test_thrift_skip_unknown),
        cmocka_unit_test(test_hybrid_golden),
        cmocka_unit_test(test_hybrid_random),
        cmocka_unit_test(test_delta),
        cmocka_unit_test(test_roundtrip_all_types),
        cmocka_unit_test(test_many_row_groups),
        cmocka_unit_test(test_zero_rows),
        cmocka_unit_test(test_map_rows_6_3),
        cmocka_unit_test(test_dictionary_fallback),
        cmocka_unit_test(test_stats_pruning),
        cmocka_unit_test(test_writer_errors),
        cmocka_unit_test(test_empty_values),
        cmocka_unit_test(test_hand_v2_delta_gzip),
        cmocka_unit_test(test_hand_dictionary_v1),
        cmocka_unit_test(test_hand_booleans_and_others),
        cmocka_unit_test(test_corrupt_frame),
        cmocka_unit_test(test_corrupt_pages),
        cmocka_unit_test(test_corrupt_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
