/* fuzz_hprof.c -- libFuzzer target: the HPROF decoder (streams/cp_hprof.h) and the heap
 * dump summary over it (model/cp_hprofsum.h, a bare HPROF).
 *
 * The input is an HPROF file as it is (seeds are dumps written by tests/util/hprof_gen.c);
 * the slicing and the limits come from a hash of it. Checked properties:
 *   1. Status: CP_OK, or CP_EPROTO / CP_ELIMIT with a message naming an offset; after an
 *      error every feed and finish returns it.
 *   2. Slicing does not matter: whole, random cuts and (small inputs) byte by byte give the
 *      same status, error text, header, totals and histogram (rows and names).
 *   3. The histogram is consistent: sorted, every row with objects, their objects and
 *      bytes adding up to the totals (bytes unless saturated), no more rows than classes
 *      with objects, a shorter list is its head; names are valid UTF-8.
 *   4. Memory stays within the limits' bound (class table, strings, fixed parts).
 *   5. cp_hprof_summarize over the same bytes (a bare HPROF read in pieces through a
 *      pread callback) gives the same status, totals and rows.
 *
 * Compiled with -DFZ_HPROF_SEEDS (no libFuzzer), with tests/util/hprof_gen.c and
 * src/common/buf.c, this file is a small program writing seed dumps into the directory
 * given (scripts/fuzz-seed.sh).
 */
#include "common/cp_common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FZ_HPROF_SEEDS

#include "fuzz_common.h"
#include "model/cp_hprofsum.h"
#include "streams/cp_hprof.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_ROWS 64

typedef struct outcome {
    int status;
    char err[256];
    cp_hprof_header hdr;
    cp_hprof_totals t;
    size_t nrows;
    uint64_t with_objects;
    cp_hprof_class rows[FZ_ROWS];
    uint64_t names;            /* digest of the rows' names */
    size_t memory;
} outcome;

enum { WHOLE, RANDOM, BYTES };

/* Field by field: the structs have padding. */
static int rows_eq(const cp_hprof_class *a, const cp_hprof_class *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i].id != b[i].id || a[i].prim_type != b[i].prim_type || a[i].named != b[i].named ||
            a[i].objects != b[i].objects || a[i].shallow_bytes != b[i].shallow_bytes)
            return 0;
    return 1;
}

static int hdr_eq(const cp_hprof_header *a, const cp_hprof_header *b)
{
    return !strcmp(a->format, b->format) && a->id_size == b->id_size && a->time_ms == b->time_ms;
}

static void histogram(const cp_hprof_dec *d, outcome *o)
{
    FZ_CHECK(cp_hprof_dec_top(d, FZ_ROWS, o->rows, &o->nrows, &o->with_objects) == CP_OK, "top failed");
    FZ_CHECK(o->nrows <= FZ_ROWS && o->nrows <= o->with_objects, "%zu rows, %llu with objects", o->nrows,
             (unsigned long long)o->with_objects);
    FZ_CHECK(o->nrows == FZ_ROWS || o->nrows == o->with_objects, "rows missing: %zu of %llu", o->nrows,
             (unsigned long long)o->with_objects);
    uint64_t objects = 0, bytes = 0;
    int saturated = 0;
    cp_buf name;
    cp_buf_init(&name);
    o->names = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < o->nrows; i++) {
        const cp_hprof_class *c = &o->rows[i];
        FZ_CHECK(c->objects > 0, "row %zu without objects", i);
        if (i) FZ_CHECK(o->rows[i - 1].shallow_bytes >= c->shallow_bytes, "rows not sorted at %zu", i);
        objects += c->objects;
        if (bytes > UINT64_MAX - c->shallow_bytes) saturated = 1;
        else bytes += c->shallow_bytes;
        cp_buf_reset(&name);
        FZ_CHECK(cp_hprof_dec_class_name(d, c, &name) == CP_OK, "no name");
        FZ_CHECK(name.len > 0 && fz_valid_utf8(name.data, name.len), "row %zu: name is not UTF-8", i);
        fz_hash(&o->names, name.data, name.len);
    }
    cp_buf_free(&name);
    if (o->nrows == o->with_objects) {
        FZ_CHECK(objects == o->t.objects, "rows hold %llu objects, totals %llu", (unsigned long long)objects,
                 (unsigned long long)o->t.objects);
        if (!saturated && o->t.shallow_bytes != UINT64_MAX)
            FZ_CHECK(bytes == o->t.shallow_bytes, "rows hold %llu bytes, totals %llu", (unsigned long long)bytes,
                     (unsigned long long)o->t.shallow_bytes);
    }
    if (o->nrows >= 2) { /* a shorter list is the head of the longer one */
        cp_hprof_class two[2];
        size_t n = 0;
        cp_hprof_dec_top(d, 2, two, &n, NULL);
        FZ_CHECK(n == 2 && rows_eq(two, o->rows, 2), "top 2 is not the head");
    }
}

static void decode(const uint8_t *p, size_t n, const cp_hprof_limits *lim, int mode, uint64_t seed, outcome *o)
{
    memset(o, 0, sizeof *o);
    cp_hprof_dec *d = cp_hprof_dec_new(lim);
    FZ_CHECK(d != NULL, "no decoder");
    size_t pos = 0;
    int st = CP_OK;
    while (pos < n && st == CP_OK) {
        size_t k = n - pos;
        if (mode == BYTES) k = 1;
        if (mode == RANDOM) {
            uint64_t r = fz_rand(&seed);
            k = (r & 3) == 0 ? 0 : 1 + (size_t)((r >> 8) % ((r & 3) == 1 ? 9 : (r & 3) == 2 ? 200 : 70000));
            if (k > n - pos) k = n - pos;
        }
        st = cp_hprof_dec_feed(d, p + pos, k);
        FZ_CHECK(st == CP_OK || st < 0, "feed returned %d", st);
        pos += k;
    }
    o->status = cp_hprof_dec_finish(d);
    if (st != CP_OK) FZ_CHECK(o->status == st, "feed failed with %d, finish says %d", st, o->status);
    FZ_CHECK(cp_hprof_dec_finish(d) == o->status, "finish is not idempotent");
    snprintf(o->err, sizeof o->err, "%s", cp_hprof_dec_error(d));
    if (o->status < 0) {
        FZ_CHECK(o->status == CP_EPROTO || o->status == CP_ELIMIT, "status %d", o->status);
        FZ_CHECK(strstr(o->err, " at offset ") != NULL, "error without an offset: %s", o->err);
    } else {
        FZ_CHECK(o->status == CP_OK && o->err[0] == 0, "ok with an error text");
    }
    o->hdr = *cp_hprof_dec_header(d);
    cp_hprof_dec_totals(d, &o->t);
    o->memory = cp_hprof_dec_memory(d);
    if (o->status == CP_OK) histogram(d, o);
    else FZ_CHECK(cp_hprof_dec_feed(d, p, n) == o->status, "a feed after an error does not return it");
    cp_hprof_dec_free(d);
}

static void same(const char *what, const outcome *a, const outcome *b)
{
    FZ_CHECK(a->status == b->status && !strcmp(a->err, b->err), "%s: %d '%s' vs %d '%s'", what, a->status, a->err,
             b->status, b->err);
    FZ_CHECK(hdr_eq(&a->hdr, &b->hdr), "%s: headers differ", what);
    if (a->status != CP_OK) return; /* totals stop at different steps of a failing input */
    FZ_CHECK(!memcmp(&a->t, &b->t, sizeof a->t), "%s: totals differ", what);
    FZ_CHECK(a->nrows == b->nrows && rows_eq(a->rows, b->rows, a->nrows) && a->names == b->names,
             "%s: histograms differ", what);
}

typedef struct mem {
    const uint8_t *p;
    size_t n;
} mem;

static int mem_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    mem *m = ud;
    FZ_CHECK(off <= m->n && n <= m->n - off, "read past the end");
    memcpy(dst, m->p + off, n);
    return CP_OK;
}

/* The summary of the same bytes as a bare HPROF agrees with the decoder. */
static void check_summary(const uint8_t *p, size_t n, const cp_hprof_limits *lim, const outcome *whole)
{
    mem m = {p, n};
    cp_hprof_sum_opts o = {.limits = lim, .top = FZ_ROWS, .zipped = 0};
    cp_hprof_summary s;
    char err[512];
    int st = cp_hprof_summarize(mem_pread, &m, n, &o, &s, err, sizeof err);
    int want = whole->status == CP_EPROTO ? CP_ECORRUPT : whole->status;
    FZ_CHECK(st == want, "summary %d, decoder %d (%s)", st, whole->status, err);
    if (st != CP_OK) {
        FZ_CHECK(strstr(err, whole->err) != NULL, "summary error '%s' lacks '%s'", err, whole->err);
        return;
    }
    FZ_CHECK(!memcmp(&s.totals, &whole->t, sizeof s.totals), "summary totals differ");
    FZ_CHECK(s.nclasses == whole->nrows && s.classes_with_objects == whole->with_objects, "summary rows differ");
    for (size_t i = 0; i < s.nclasses; i++) {
        FZ_CHECK(s.classes[i].objects == whole->rows[i].objects &&
                     s.classes[i].shallow_bytes == whole->rows[i].shallow_bytes,
                 "summary row %zu differs", i);
        FZ_CHECK(fz_valid_utf8((const uint8_t *)s.classes[i].name, strlen(s.classes[i].name)), "name not UTF-8");
    }
    cp_hprof_summary_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    fz_hash(&seed, data, size < 64 ? size : 64);
    fz_mix(&seed, size);
    cp_hprof_limits lim, *limp = NULL;
    size_t mem_bound = 64u << 20; /* default limits: strings 64 MiB, classes by count below */
    if ((seed & 7) == 7) {        /* one input in eight: tiny limits */
        cp_hprof_limits_default(&lim);
        lim.max_classes = 1 + (uint32_t)((seed >> 8) % 16);
        lim.max_string_bytes = (seed >> 16) % 2048;
        lim.max_name = (uint32_t)((seed >> 32) % 64);
        limp = &lim;
        mem_bound = 64u << 10;
    }
    outcome whole, cut;
    decode(data, size, limp, WHOLE, seed, &whole);
    /* class table and strings: the input can name at most size / 9 classes */
    FZ_CHECK(whole.memory <= mem_bound + 128 * (size / 9) + (1u << 16), "decoder holds %zu bytes for %zu of input",
             whole.memory, size);
    decode(data, size, limp, RANDOM, seed, &cut);
    same("whole vs random cuts", &whole, &cut);
    if (size <= 8192 && (seed & 0x30) == 0) {
        decode(data, size, limp, BYTES, seed, &cut);
        same("whole vs bytes", &whole, &cut);
    }
    check_summary(data, size, limp, &whole);
    return 0;
}

#else /* FZ_HPROF_SEEDS: seed writer */

#include "hprof_gen.h"

static int write_seed(const char *dir, const char *name, const hg_spec *s)
{
    cp_buf b;
    cp_buf_init(&b);
    if (hg_write_buf(s, &b, NULL) != 0) return 1;
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b.data, 1, b.len, f) != b.len || fclose(f) != 0) {
        fprintf(stderr, "fuzz_hprof seeds: cannot write %s\n", path);
        return 1;
    }
    cp_buf_free(&b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    static const uint8_t fields[] = {2, 11, 4};
    static const hg_class one[] = {{"a/B", 2, fields, 3}};
    hg_spec s;
    int bad = 0;
    hg_spec_small(&s, 8);
    bad |= write_seed(argv[1], "small8", &s);
    hg_spec_small(&s, 4);
    s.symbols = 5;
    bad |= write_seed(argv[1], "small4", &s);
    hg_spec_small(&s, 8);
    s.format = "JAVA PROFILE 1.0.1";
    s.segment_bytes = 0;
    s.symbols = 0;
    bad |= write_seed(argv[1], "one-segment", &s);
    memset(&s, 0, sizeof s); /* a tiny dump: one class, two instances, one int[] */
    s.id_size = 4;
    s.classes = one;
    s.nclasses = 1;
    s.int_arrays = 1, s.int_len = 2;
    bad |= write_seed(argv[1], "tiny", &s);
    return bad;
}

#endif
