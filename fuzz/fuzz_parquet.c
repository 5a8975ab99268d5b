/* fuzz_parquet.c -- libFuzzer target: the Parquet reader, and the writer on what it read.
 *
 * The input is a whole file, read through cp_pq_reader's pread callback from an
 * exact-size copy (so ASan sees any read past the end). It either opens or fails with
 * CP_ECORRUPT / CP_ELIMIT and a reason. When it opens, the statistics and the data of
 * every column of every row group are read; every decoded byte is folded into a per-row
 * digest, which also lets ASan catch a value pointing outside live memory, and the
 * shapes are checked (row counts, map offsets, 0/1 nulls).
 *
 * Round trip: when every column reads and the file is small, its rows are written again
 * with cp_pq_writer and read back; each column must give the same per-row digests. So
 * what the reader accepts, the writer can write and the reader reads the same way.
 *
 * Built with -DFZ_PARQUET_SEEDS this file is instead a program that writes the seed
 * corpus (scripts/fuzz-seed.sh): small files from the writer, and two files built by
 * hand with the shapes our writer never produces (v2 pages, GZIP, DELTA encodings,
 * PLAIN_DICTIONARY). */
#include "common/cp_common.h"
#include "parquet/cp_parquet.h"
#include "parquet/pq_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#ifndef FZ_PARQUET_SEEDS
#include "fuzz_common.h"
#endif

typedef struct mem {
    const uint8_t *p;
    size_t n;
} mem;

static int mem_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    const mem *m = ud;
    if (off > m->n || n > m->n - off) return CP_EIO;
    memcpy(dst, m->p + off, n);
    return CP_OK;
}

static int mem_sink(void *ud, const void *p, size_t n) { return cp_buf_append(ud, p, n); }

#ifndef FZ_PARQUET_SEEDS

#define FZ_MAX_ROUNDTRIP_ROWS 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t bytes_digest(uint64_t h, cp_pq_bytes b)
{
    if (!b.p) {
        FZ_CHECK(b.len == 0, "a null value with %zu bytes", b.len);
        FZ_HASHV(&h, 0xD1CE);
        return h;
    }
    FZ_HASHV(&h, b.len);
    fz_hash(&h, b.p, b.len);
    return h;
}

/* Digest of row i of a decoded column; checks the column's shape on the way. */
static uint64_t row_digest(const cp_pq_column *col, const cp_pq_column_data *d, size_t i)
{
    uint64_t h = 0xCBF29CE484222325ull;
    int is_map = col->type == CP_PQ_MAP_STR_LIST || col->type == CP_PQ_MAP_STR_STR;
    int null = d->nulls ? d->nulls[i] : 0;
    FZ_CHECK(null == 0 || null == 1, "null flag %d", null);
    FZ_CHECK(!d->nulls || col->optional, "nulls for a required column");
    FZ_HASHV(&h, null);
    if (is_map) {
        size_t o0 = d->map_off[i], o1 = d->map_off[i + 1];
        FZ_CHECK(o0 <= o1, "map offsets go back at row %zu", i);
        FZ_CHECK(!null || o0 == o1, "a null map with entries");
        for (size_t e = o0; e < o1; e++) {
            const cp_pq_map_entry *me = &d->map_entries[e];
            FZ_CHECK(me->key.p != NULL, "a null map key");
            h = bytes_digest(h, me->key);
            FZ_HASHV(&h, me->values != NULL);
            FZ_HASHV(&h, me->nvalues);
            FZ_CHECK(me->nvalues == 0 || me->values, "values without a pointer");
            if (col->type == CP_PQ_MAP_STR_STR) FZ_CHECK(me->nvalues <= 1, "%zu values in a string map", me->nvalues);
            for (size_t k = 0; k < me->nvalues; k++) h = bytes_digest(h, me->values[k]);
        }
    } else if (col->type == CP_PQ_STRING || col->type == CP_PQ_BINARY) {
        FZ_CHECK(null || d->b[i].p != NULL, "a present value without bytes");
        h = bytes_digest(h, d->b[i]);
    } else {
        FZ_CHECK(!null || d->i[i] == 0, "a null integer that is not 0");
        if (col->type == CP_PQ_BOOL) FZ_CHECK(d->i[i] == 0 || d->i[i] == 1, "boolean %lld", (long long)d->i[i]);
        if (col->type == CP_PQ_I32) FZ_CHECK(d->i[i] >= INT32_MIN && d->i[i] <= INT32_MAX, "INT32 out of range");
        FZ_HASHV(&h, d->i[i]);
    }
    return h;
}

static void check_stats(cp_pq_reader *r, size_t g, size_t c)
{
    cp_pq_stats s;
    int st = cp_pq_reader_stats(r, g, c, &s);
    FZ_CHECK(st == CP_OK || st == CP_ENOTFOUND || st == CP_EINVAL, "stats returned %d", st);
    if (st != CP_OK || !s.has_minmax || !s.min_b) return;
    uint64_t h = 0;
    fz_hash(&h, s.min_b, s.min_len);
    fz_hash(&h, s.max_b, s.max_len);
}

/* The rows of one row group (all its columns read) as writer input. */
static void write_rows(cp_pq_writer *w, const cp_pq_column *cols, size_t ncols, const cp_pq_column_data *d,
                       cp_pq_value *row)
{
    for (size_t i = 0; i < d[0].nrows; i++) {
        for (size_t c = 0; c < ncols; c++) {
            cp_pq_value *v = &row[c];
            memset(v, 0, sizeof *v);
            v->null = d[c].nulls ? d[c].nulls[i] : 0;
            if (cols[c].type == CP_PQ_MAP_STR_LIST || cols[c].type == CP_PQ_MAP_STR_STR) {
                v->map = d[c].map_entries + d[c].map_off[i];
                v->nmap = d[c].map_off[i + 1] - d[c].map_off[i];
            } else if (d[c].b) {
                v->b = d[c].b[i];
            } else {
                v->i = d[c].i[i];
            }
        }
        int st = cp_pq_writer_add(w, row);
        FZ_CHECK(st == CP_OK, "writing back a row that was read: %s", cp_pq_writer_errmsg(w));
    }
}

/* Reads every column of every group; digests[c][row] when they all read (else NULL). */
static int read_file(const uint8_t *p, size_t n, uint64_t **digests, cp_pq_writer *w, int must_open)
{
    mem m = {p, n};
    cp_pq_reader *r = NULL;
    char err[256] = "";
    int st = cp_pq_reader_open(mem_pread, &m, n, &r, err, sizeof err);
    if (must_open) FZ_CHECK(st == CP_OK, "our own file does not open: %s", err);
    FZ_CHECK(st == CP_OK || st == CP_ECORRUPT || st == CP_ELIMIT, "open returned %d (%s)", st, err);
    if (st != CP_OK) {
        FZ_CHECK(r == NULL && err[0], "failed open: reader %p, reason '%s'", (void *)r, err);
        return 0;
    }
    size_t ncols = cp_pq_reader_columns(r), ngroups = cp_pq_reader_row_groups(r);
    uint64_t rows = cp_pq_reader_rows(r), seen = 0;
    FZ_CHECK(ncols <= CP_PQ_MAX_COLUMNS, "%zu columns", ncols);
    int all_ok = rows <= FZ_MAX_ROUNDTRIP_ROWS;
    cp_pq_column_data *d = calloc(ncols + 1, sizeof *d);
    cp_pq_value *row = calloc(ncols + 1, sizeof *row);
    for (size_t c = 0; c < ncols && all_ok; c++) {
        const cp_pq_column *col = cp_pq_reader_column(r, c);
        FZ_CHECK(col && col->name, "column %zu has no name", c);
        FZ_CHECK(cp_pq_reader_find(r, col->name) >= 0, "column '%s' not found by name", col->name);
        if (col->type == 0) all_ok = 0;
        if (digests) digests[c] = calloc(rows + 1, sizeof **digests);
    }
    for (size_t g = 0; g < ngroups; g++) {
        uint64_t grows = cp_pq_reader_row_group_rows(r, g);
        int group_ok = 1;
        for (size_t c = 0; c < ncols; c++) {
            const cp_pq_column *col = cp_pq_reader_column(r, c);
            check_stats(r, g, c);
            st = cp_pq_reader_read(r, g, c, &d[c]);
            FZ_CHECK(st == CP_OK || st == CP_ECORRUPT || st == CP_ELIMIT || st == CP_EINVAL || st == CP_EIO,
                     "read returned %d (%s)", st, cp_pq_reader_errmsg(r));
            if (st != CP_OK) {
                FZ_CHECK(cp_pq_reader_errmsg(r)[0] != 0, "read failed (%d) without a reason", st);
                FZ_CHECK(d[c].nrows == 0 && !d[c].i && !d[c].b && !d[c].map_off, "failed read left data");
                group_ok = all_ok = 0;
                continue;
            }
            FZ_CHECK(d[c].nrows == grows, "%zu rows read, the group has %llu", d[c].nrows, (unsigned long long)grows);
            if (col->type == CP_PQ_MAP_STR_LIST || col->type == CP_PQ_MAP_STR_STR)
                FZ_CHECK(d[c].map_off[0] == 0, "map offsets start at %zu", d[c].map_off[0]);
            for (size_t i = 0; i < d[c].nrows; i++) {
                uint64_t h = row_digest(col, &d[c], i);
                if (all_ok && digests && digests[c]) digests[c][seen + i] = h;
            }
        }
        if (group_ok && all_ok && w) {
            cp_pq_column cols[CP_PQ_MAX_COLUMNS];
            for (size_t c = 0; c < ncols; c++) cols[c] = *cp_pq_reader_column(r, c);
            write_rows(w, cols, ncols, d, row);
        }
        seen += grows;
        cp_pq_reader_reset_arena(r);
    }
    free(d);
    free(row);
    cp_pq_reader_free(r);
    return all_ok;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    FZ_CHECK(copy != NULL, "malloc");
    memcpy(copy, data, size);

    /* A first pass tells whether the file reads whole and what its columns are. */
    uint64_t *dig[CP_PQ_MAX_COLUMNS] = {0};
    int all_ok = read_file(copy, size, dig, NULL, 0);
    cp_pq_column cols[CP_PQ_MAX_COLUMNS];
    size_t ncols = 0;
    uint64_t rows = 0;
    if (all_ok) {
        mem m = {copy, size};
        cp_pq_reader *r;
        FZ_CHECK(cp_pq_reader_open(mem_pread, &m, size, &r, NULL, 0) == CP_OK, "reopen");
        ncols = cp_pq_reader_columns(r);
        rows = cp_pq_reader_rows(r);
        /* the names point into this reader: it stays open until the copy was read */
        for (size_t c = 0; c < ncols; c++) cols[c] = *cp_pq_reader_column(r, c);
        cp_buf out;
        cp_buf_init(&out);
        cp_pq_writer *w = NULL;
        for (size_t c = 0; c < ncols; c++) cols[c].dict = (c & 1) == 0;
        int st = ncols ? cp_pq_writer_new(cols, ncols, NULL, mem_sink, &out, &w, NULL, 0) : CP_EINVAL;
        /* foreign files may have empty or duplicate names, which the writer refuses */
        if (st == CP_OK) {
            read_file(copy, size, NULL, w, 1);
            FZ_CHECK(cp_pq_writer_finish(w) == CP_OK, "finish: %s", cp_pq_writer_errmsg(w));
            FZ_CHECK(cp_pq_writer_rows(w) == rows, "wrote %llu of %llu rows",
                     (unsigned long long)cp_pq_writer_rows(w), (unsigned long long)rows);
            uint64_t *back[CP_PQ_MAX_COLUMNS] = {0};
            FZ_CHECK(read_file(out.data, out.len, back, NULL, 1), "the written copy does not read whole");
            for (size_t c = 0; c < ncols; c++) {
                for (uint64_t i = 0; i < rows; i++) {
                    /* a required map is written optional: its rows digest as not null either way */
                    FZ_CHECK(dig[c][i] == back[c][i], "column '%s' row %llu differs after writing back", cols[c].name,
                             (unsigned long long)i);
                }
                free(back[c]);
            }
            cp_pq_writer_free(w);
        }
        cp_buf_free(&out);
        cp_pq_reader_free(r);
    }
    for (size_t c = 0; c < CP_PQ_MAX_COLUMNS; c++) free(dig[c]);
    free(copy);
    return 0;
}

#else /* FZ_PARQUET_SEEDS: the seed corpus writer */

static cp_pq_bytes lit(const char *s) { return (cp_pq_bytes){(const uint8_t *)s, strlen(s)}; }

static void save(const char *dir, const char *name, const cp_buf *b)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b->data, 1, b->len, f) != b->len || fclose(f) != 0) {
        fprintf(stderr, "seed: cannot write %s\n", path);
        exit(1);
    }
}

static void must(int st, const char *what)
{
    if (st != CP_OK) {
        fprintf(stderr, "seed: %s failed (%d)\n", what, st);
        exit(1);
    }
}

static const cp_pq_column ALL[] = {
    {"id", CP_PQ_I32, 0, 0},        {"n", CP_PQ_I64, 1, 0},        {"u", CP_PQ_U64, 0, 0},
    {"ts", CP_PQ_TS_MS, 0, 0},      {"flag", CP_PQ_BOOL, 1, 0},    {"pod", CP_PQ_STRING, 1, 1},
    {"trace", CP_PQ_BINARY, 1, 0},  {"params", CP_PQ_MAP_STR_LIST, 1, 1}, {"tags", CP_PQ_MAP_STR_STR, 1, 0},
};
#define NALL (sizeof ALL / sizeof ALL[0])

/* Small rows of every type: nulls, empty and null maps, null lists and elements. */
static void all_types(cp_buf *out, size_t nrows, const cp_pq_writer_opts *o)
{
    static const uint8_t empty_list[1];
    static const char *pods[] = {"pod-a", "pod-b", ""};
    cp_pq_bytes vals[] = {lit("x"), {NULL, 0}, lit("yy")};
    cp_pq_bytes one[] = {lit("v")};
    cp_pq_map_entry params[] = {{lit("a"), vals, 3}, {lit("b"), (const cp_pq_bytes *)empty_list, 0}, {lit("c"), NULL, 0}};
    cp_pq_map_entry tags[] = {{lit("k"), one, 1}, {lit("z"), NULL, 0}};
    cp_pq_writer *w;
    must(cp_pq_writer_new(ALL, NALL, o, mem_sink, out, &w, NULL, 0), "writer");
    for (size_t i = 0; i < nrows; i++) {
        cp_pq_value v[NALL];
        memset(v, 0, sizeof v);
        v[0].i = (int64_t)i * 1000 - 3;
        v[1].null = i % 3 == 0;
        v[1].i = (int64_t)(i * 0x9E3779B97F4A7C15ull);
        v[2].i = -(int64_t)i;
        v[3].i = 1700000000000 + (int64_t)i * 250;
        v[4].null = i % 5 == 4;
        v[4].i = i & 1;
        v[5].null = i % 4 == 3;
        v[5].b = lit(pods[i % 3]);
        v[6].null = i % 2;
        v[6].b = (cp_pq_bytes){(const uint8_t *)"\x00\x01\x02trace-bytes", 3 + i % 9};
        v[7].null = i % 7 == 6;
        v[7].map = params;
        v[7].nmap = i % 4;
        v[8].null = i % 3 == 1;
        v[8].map = tags;
        v[8].nmap = i % 3;
        must(cp_pq_writer_add(w, v), "add");
    }
    must(cp_pq_writer_finish(w), "finish");
    cp_pq_writer_free(w);
}

/* ---- files built by hand: one column, one row group ---- */

static void put_uv(cp_buf *b, uint64_t v)
{
    uint8_t t[10];
    cp_buf_append(b, t, pq_put_uvarint(t, v));
}

/* DELTA_BINARY_PACKED (block 128, 4 miniblocks) of small non-decreasing-ish values. */
static void delta(cp_buf *b, const int64_t *v, size_t n)
{
    put_uv(b, 128);
    put_uv(b, 4);
    put_uv(b, n);
    put_uv(b, pq_zigzag(n ? v[0] : 0));
    for (size_t i = 1; i < n; i += 128) {
        size_t cnt = n - i < 128 ? n - i : 128;
        int64_t min = INT64_MAX;
        for (size_t k = 0; k < cnt; k++)
            if (v[i + k] - v[i + k - 1] < min) min = v[i + k] - v[i + k - 1];
        put_uv(b, pq_zigzag(min));
        uint8_t wd[4] = {0};
        for (size_t k = 0; k < cnt; k++) {
            int x = pq_bit_width((uint64_t)(v[i + k] - v[i + k - 1] - min));
            if (x > wd[k / 32]) wd[k / 32] = (uint8_t)x;
        }
        cp_buf_append(b, wd, 4);
        for (size_t m = 0; m < 4 && m * 32 < cnt; m++) {
            uint8_t data[256] = {0};
            for (size_t k = 0; k < 32 && m * 32 + k < cnt; k++) {
                uint64_t x = (uint64_t)(v[i + m * 32 + k] - v[i + m * 32 + k - 1] - min);
                for (int bit = 0; bit < wd[m]; bit++)
                    if ((x >> bit) & 1) data[(k * wd[m] + (size_t)bit) / 8] |= (uint8_t)(1u << ((k * wd[m] + (size_t)bit) % 8));
            }
            cp_buf_append(b, data, 4 * (size_t)wd[m]);
        }
    }
}

static void gzip(const uint8_t *p, size_t n, cp_buf *out)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) exit(1);
    cp_buf_reserve(out, deflateBound(&zs, (uLong)n) + 32);
    zs.next_in = (Bytef *)p;
    zs.avail_in = (uInt)n;
    zs.next_out = out->data + out->len;
    zs.avail_out = (uInt)(out->cap - out->len);
    if (deflate(&zs, Z_FINISH) != Z_STREAM_END) exit(1);
    out->len += zs.total_out;
    deflateEnd(&zs);
}

/* Appends header + body; v2 levels (the first rep_len + def_len bytes) stay raw. */
static void page(cp_buf *chunk, pq_page_header h, const cp_buf *body, int codec)
{
    size_t lv = h.type == PQ_PAGE_DATA_V2 ? (size_t)(h.rep_len + h.def_len) : 0;
    cp_buf c;
    cp_buf_init(&c);
    cp_buf_append(&c, body->data, lv);
    if (codec == PQ_CODEC_GZIP) gzip(body->data + lv, body->len - lv, &c);
    else cp_buf_append(&c, body->data + lv, body->len - lv);
    h.uncompressed = (int32_t)body->len;
    h.compressed = (int32_t)c.len;
    must(pq_page_header_write(chunk, &h), "page header");
    cp_buf_append(chunk, c.data, c.len);
    cp_buf_free(&c);
}

static void hand_file(cp_buf *f, int type, int rep, int conv, int codec, int64_t nvalues, int64_t rows,
                      size_t dict_len, const cp_buf *chunk)
{
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
    pq_tw_i32(&w, 1, type);
    pq_tw_i32(&w, 3, rep);
    pq_tw_string(&w, 4, "v");
    if (conv >= 0) pq_tw_i32(&w, 6, conv);
    pq_tw_struct_end(&w);
    pq_tw_i64(&w, 3, rows);
    pq_tw_list_begin(&w, 4, PQ_T_STRUCT, 1);
    pq_tw_elem_struct_begin(&w);
    pq_tw_list_begin(&w, 1, PQ_T_STRUCT, 1);
    pq_tw_elem_struct_begin(&w);
    pq_tw_i64(&w, 2, 0);
    pq_tw_struct_begin(&w, 3);
    pq_tw_i32(&w, 1, type);
    pq_tw_list_begin(&w, 2, PQ_T_I32, 1);
    pq_tw_elem_i32(&w, 0);
    pq_tw_list_begin(&w, 3, PQ_T_BINARY, 1);
    pq_tw_elem_binary(&w, "v", 1);
    pq_tw_i32(&w, 4, codec);
    pq_tw_i64(&w, 5, nvalues);
    pq_tw_i64(&w, 6, (int64_t)chunk->len);
    pq_tw_i64(&w, 7, (int64_t)chunk->len);
    pq_tw_i64(&w, 9, 4 + (int64_t)dict_len);
    if (dict_len) pq_tw_i64(&w, 11, 4);
    pq_tw_struct_end(&w);
    pq_tw_struct_end(&w);
    pq_tw_i64(&w, 2, (int64_t)chunk->len);
    pq_tw_i64(&w, 3, rows);
    pq_tw_struct_end(&w);
    pq_tw_struct_end(&w);
    must(w.err, "footer");
    cp_buf_append(f, meta.data, meta.len);
    uint8_t tail[8];
    pq_put_le32(tail, (uint32_t)meta.len);
    memcpy(tail + 4, "PAR1", 4);
    cp_buf_append(f, tail, 8);
    cp_buf_free(&meta);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    cp_buf b;
    cp_buf_init(&b);
    cp_pq_writer_opts zstd = {.row_group_rows = 9, .page_rows = 4};
    all_types(&b, 20, &zstd);
    save(dir, "all-zstd", &b);
    cp_buf_reset(&b);
    cp_pq_writer_opts plain = {.row_group_rows = 12, .page_rows = 5, .zstd_level = -1};
    all_types(&b, 20, &plain);
    save(dir, "all-plain", &b);
    cp_buf_reset(&b);
    all_types(&b, 0, &plain);
    save(dir, "empty", &b);

    /* INT64 optional: a v2 page, DELTA_BINARY_PACKED values, GZIP */
    cp_buf body, chunk;
    cp_buf_init(&body);
    cp_buf_init(&chunk);
    uint8_t defs[40];
    int64_t v[40];
    size_t nv = 0;
    for (int i = 0; i < 40; i++) {
        defs[i] = i % 6 != 5;
        if (defs[i]) v[nv++] = 1700000000000 + i * 37 - (i % 3) * 5;
    }
    must(pq_hybrid_encode_u8(&body, defs, 40, 1), "levels");
    int32_t dl = (int32_t)body.len;
    delta(&body, v, nv);
    pq_page_header h = {.type = PQ_PAGE_DATA_V2, .num_values = 40, .num_nulls = 40 - (int32_t)nv, .num_rows = 40,
                        .encoding = PQ_ENC_DELTA_BINARY_PACKED, .def_len = dl, .is_compressed = 1};
    page(&chunk, h, &body, PQ_CODEC_GZIP);
    cp_buf_reset(&b);
    hand_file(&b, PQ_INT64, PQ_OPTIONAL, PQ_CT_TIMESTAMP_MILLIS, PQ_CODEC_GZIP, 40, 40, 0, &chunk);
    save(dir, "v2-delta-gzip", &b);

    /* BYTE_ARRAY required: a PLAIN dictionary page, a PLAIN_DICTIONARY v1 page, then a
     * v2 DELTA_LENGTH_BYTE_ARRAY page (a writer that gave up on its dictionary) */
    cp_buf_reset(&chunk);
    cp_buf_reset(&body);
    const char *words[] = {"alpha", "be", "", "gamma-delta"};
    for (int i = 0; i < 4; i++) {
        uint8_t l[4];
        pq_put_le32(l, (uint32_t)strlen(words[i]));
        cp_buf_append(&body, l, 4);
        cp_buf_append(&body, words[i], strlen(words[i]));
    }
    pq_page_header dh = {.type = PQ_PAGE_DICTIONARY, .num_values = 4, .encoding = PQ_ENC_PLAIN_DICTIONARY};
    page(&chunk, dh, &body, PQ_CODEC_UNCOMPRESSED);
    size_t dict_len = chunk.len;
    uint32_t idx[10] = {0, 1, 2, 3, 3, 3, 3, 3, 3, 1};
    cp_buf_reset(&body);
    cp_buf_putc(&body, 2);
    must(pq_hybrid_encode_u32(&body, idx, 10, 2), "indices");
    pq_page_header d1 = {.type = PQ_PAGE_DATA, .num_values = 10, .encoding = PQ_ENC_PLAIN_DICTIONARY};
    page(&chunk, d1, &body, PQ_CODEC_UNCOMPRESSED);
    cp_buf_reset(&body);
    int64_t lens[6];
    for (int i = 0; i < 6; i++) lens[i] = (int64_t)strlen(words[i % 4]);
    delta(&body, lens, 6);
    for (int i = 0; i < 6; i++) cp_buf_append(&body, words[i % 4], strlen(words[i % 4]));
    pq_page_header d2 = {.type = PQ_PAGE_DATA_V2, .num_values = 6, .num_rows = 6,
                         .encoding = PQ_ENC_DELTA_LENGTH_BYTE_ARRAY, .is_compressed = 0};
    page(&chunk, d2, &body, PQ_CODEC_UNCOMPRESSED);
    cp_buf_reset(&b);
    hand_file(&b, PQ_BYTE_ARRAY, PQ_REQUIRED, PQ_CT_UTF8, PQ_CODEC_UNCOMPRESSED, 16, 16, dict_len, &chunk);
    save(dir, "dict-delta-length", &b);

    cp_buf_free(&body);
    cp_buf_free(&chunk);
    cp_buf_free(&b);
    return 0;
}

#endif
