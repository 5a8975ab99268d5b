/* hprof_test.c -- the HPROF decoder (streams/cp_hprof.h) and the heap dump summary
 * (model/cp_hprofsum.h) on dumps written by tests/util/hprof_gen.c:
 *  - fed whole, in 7-byte pieces and byte by byte, with 4- and 8-byte identifiers: the
 *    header, the totals and every class's objects and shallow bytes are exactly what was
 *    generated;
 *  - every prefix: complete at record boundaries, else "truncated" naming the end offset;
 *  - corrupt variants (header, identifier size, record tag, sub-record type, basic type,
 *    record lengths, a sub-record overrunning its segment) fail with the offset of the
 *    item at fault; random byte flips never crash;
 *  - bounds: max_classes, the string budget (names dropped, classes still counted), the
 *    decoder's memory independent of the dump's size (strings no LOAD_CLASS names are
 *    dropped at the heap dump);
 *  - names in Java form; the summary of .hprof.zip files (deflated and stored, with data
 *    descriptors), of a bare HPROF, of a bad zip, and cancellation.
 */
#include "hprof_gen.h"
#include "testutil.h"

#include "http/cp_zipout.h"
#include "model/cp_hprofsum.h"
#include "streams/cp_hprof.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- helpers ------------------------------------------------------------------------------- */

/* Decodes p[0..n) in pieces of `chunk` bytes (0 = whole); returns finish's status. */
static int decode(cp_hprof_dec *d, const uint8_t *p, size_t n, size_t chunk)
{
    size_t step = chunk ? chunk : (n ? n : 1);
    for (size_t off = 0; off < n; off += step) {
        size_t k = n - off < step ? n - off : step;
        int st = cp_hprof_dec_feed(d, p + off, k);
        if (st != CP_OK) {
            assert_int_equal(cp_hprof_dec_finish(d), st); /* the error sticks */
            return st;
        }
    }
    return cp_hprof_dec_finish(d);
}

static int decode_err(const uint8_t *p, size_t n, const cp_hprof_limits *lim, char *err, size_t errlen)
{
    cp_hprof_dec *d = cp_hprof_dec_new(lim);
    assert_non_null(d);
    int st = decode(d, p, n, 0);
    snprintf(err, errlen, "%s", cp_hprof_dec_error(d));
    cp_hprof_dec_free(d);
    return st;
}

static const hg_expect *find_row(const hg_expect *rows, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(rows[i].name, name)) return &rows[i];
    return NULL;
}

/* The decoder's histogram equals the generator's, row for row, sorted by shallow bytes. */
static void assert_histogram(const cp_hprof_dec *d, const hg_spec *s)
{
    hg_expect want[16];
    size_t nwant = hg_expected(s, want, 16);
    cp_hprof_class rows[32];
    size_t n = 0;
    uint64_t with = 0;
    assert_int_equal(cp_hprof_dec_top(d, 32, rows, &n, &with), CP_OK);
    assert_int_equal(n, nwant);
    assert_int_equal(with, nwant);
    uint64_t objects = 0, bytes = 0;
    cp_buf name;
    cp_buf_init(&name);
    for (size_t i = 0; i < n; i++) {
        cp_buf_reset(&name);
        assert_int_equal(cp_hprof_dec_class_name(d, &rows[i], &name), CP_OK);
        cp_buf_putc(&name, 0);
        const hg_expect *e = find_row(want, nwant, (const char *)name.data);
        if (!e) fail_msg("unexpected class %s", (const char *)name.data);
        assert_true(rows[i].named);
        assert_int_equal(rows[i].objects, e->objects);
        assert_int_equal(rows[i].shallow_bytes, e->shallow_bytes);
        if (i) assert_true(rows[i - 1].shallow_bytes >= rows[i].shallow_bytes);
        objects += e->objects;
        bytes += e->shallow_bytes;
    }
    cp_buf_free(&name);
    cp_hprof_totals t;
    cp_hprof_dec_totals(d, &t);
    assert_int_equal(t.objects, objects);
    assert_int_equal(t.shallow_bytes, bytes);
    /* a shorter list is the same list's head */
    cp_hprof_class two[2];
    assert_int_equal(cp_hprof_dec_top(d, 2, two, &n, NULL), CP_OK);
    assert_int_equal(n, 2);
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(two[i].id, rows[i].id);
        assert_int_equal(two[i].prim_type, rows[i].prim_type);
        assert_int_equal(two[i].shallow_bytes, rows[i].shallow_bytes);
    }
}

/* Offsets of every record boundary (after the header) of a valid dump. */
static size_t record_ends(const uint8_t *p, size_t n, uint64_t *ends, size_t cap)
{
    size_t hdr = strlen((const char *)p) + 1 + 12, k = 0;
    for (size_t off = hdr;; off += 9 + cp_be32(p + off + 5)) {
        assert_true(k < cap);
        ends[k++] = off;
        if (off >= n) break;
    }
    return k;
}

/* ---- the generated dump, in any slicing -------------------------------------------------- */

static void check_slicings(uint32_t id_size)
{
    hg_spec s;
    hg_spec_small(&s, id_size);
    cp_buf dump;
    cp_buf_init(&dump);
    hg_layout lay;
    assert_int_equal(hg_write_buf(&s, &dump, &lay), 0);
    assert_int_equal(lay.bytes, dump.len);
    assert_true(lay.segments >= 3);
    const size_t chunks[] = {0, 7, 1, 4096};
    for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
        cp_hprof_dec *d = cp_hprof_dec_new(NULL);
        assert_non_null(d);
        int st = decode(d, dump.data, dump.len, chunks[c]);
        if (st != CP_OK) fail_msg("chunk %zu: %s", chunks[c], cp_hprof_dec_error(d));
        const cp_hprof_header *h = cp_hprof_dec_header(d);
        assert_string_equal(h->format, "JAVA PROFILE 1.0.2");
        assert_int_equal(h->id_size, id_size);
        assert_int_equal(h->time_ms, s.time_ms);
        cp_hprof_totals t;
        cp_hprof_dec_totals(d, &t);
        assert_int_equal(t.bytes, dump.len);
        assert_int_equal(t.records, lay.records);
        assert_int_equal(t.heap_records, lay.segments);
        assert_int_equal(t.strings, s.symbols + 1 + s.nclasses + 3);
        assert_int_equal(t.classes_loaded, s.nclasses + 3);
        assert_int_equal(t.class_dumps, s.nclasses);
        assert_int_equal(t.gc_roots, 9);
        assert_int_equal(t.names_dropped, 0);
        assert_histogram(d, &s);
        assert_string_equal(cp_hprof_dec_error(d), "");
        cp_hprof_dec_free(d);
    }
    cp_buf_free(&dump);
}

static void test_slicings(void **state)
{
    (void)state;
    check_slicings(8);
    check_slicings(4);
}

/* The older format name and 1.0.1 are taken too. */
static void test_format_101(void **state)
{
    (void)state;
    hg_spec s;
    hg_spec_small(&s, 8);
    s.format = "JAVA PROFILE 1.0.1";
    s.segment_bytes = 0; /* one segment */
    cp_buf dump;
    cp_buf_init(&dump);
    hg_layout lay;
    assert_int_equal(hg_write_buf(&s, &dump, &lay), 0);
    assert_int_equal(lay.segments, 1);
    cp_hprof_dec *d = cp_hprof_dec_new(NULL);
    assert_int_equal(decode(d, dump.data, dump.len, 13), CP_OK);
    assert_string_equal(cp_hprof_dec_header(d)->format, "JAVA PROFILE 1.0.1");
    assert_histogram(d, &s);
    cp_hprof_dec_free(d);
    cp_buf_free(&dump);
}

/* ---- truncation and corruption -------------------------------------------------------------- */

static void test_prefixes(void **state)
{
    (void)state;
    hg_spec s;
    hg_spec_small(&s, 8);
    cp_buf dump;
    cp_buf_init(&dump);
    assert_int_equal(hg_write_buf(&s, &dump, NULL), 0);
    uint64_t ends[4096];
    size_t nends = record_ends(dump.data, dump.len, ends, 4096), e = 0;
    size_t stride = test_quick() ? 3 : 1;
    char err[256], want[64];
    for (size_t n = 0; n <= dump.len; n += stride) {
        int st = decode_err(dump.data, n, NULL, err, sizeof err);
        while (e < nends && ends[e] < n) e++;
        if (e < nends && ends[e] == n) {
            if (st != CP_OK) fail_msg("prefix %zu ends at a record boundary but: %s", n, err);
            continue;
        }
        assert_int_equal(st, CP_EPROTO);
        snprintf(want, sizeof want, " at offset %zu", n);
        if (!strstr(err, n ? "truncated" : "empty input") || !strstr(err, want))
            fail_msg("prefix %zu: %s", n, err);
    }
    cp_buf_free(&dump);
}

/* A copy of the dump with f applied decodes to status want with `text` and "at offset at". */
static void expect_error(const cp_buf *dump, void (*f)(uint8_t *p, const hg_layout *lay), const hg_layout *lay,
                         int want, const char *text, uint64_t at)
{
    uint8_t *p = malloc(dump->len);
    memcpy(p, dump->data, dump->len);
    f(p, lay);
    char err[256], off[64];
    for (size_t chunk = 0; chunk <= 7; chunk += 7) { /* whole, and in pieces: the same error */
        cp_hprof_dec *d = cp_hprof_dec_new(NULL);
        int st = decode(d, p, dump->len, chunk);
        snprintf(err, sizeof err, "%s", cp_hprof_dec_error(d));
        cp_hprof_dec_free(d);
        snprintf(off, sizeof off, " at offset %" PRIu64, at);
        if (st != want || !strstr(err, text) || !strstr(err, off))
            fail_msg("want %d \"%s ...%s\", got %d \"%s\"", want, text, off, st, err);
    }
    free(p);
}

static void bad_magic(uint8_t *p, const hg_layout *l) { (void)l, p[13] = '2'; }
static void bad_id_size(uint8_t *p, const hg_layout *l) { (void)l, cp_put_be32(p + 19, 5); }
static void bad_tag(uint8_t *p, const hg_layout *l) { (void)l, p[31] = 0x55; }
static void bad_sub(uint8_t *p, const hg_layout *l) { p[l->first_class_dump] = 0x99; }
static void nodata(uint8_t *p, const hg_layout *l) { p[l->first_class_dump] = 0xC3; }
/* the first constant pool entry's type (after the CLASS_DUMP's 7 ids + 10 bytes, its u2 index) */
static void bad_basic(uint8_t *p, const hg_layout *l) { p[l->first_class_dump + 1 + 7 * 8 + 10 + 2] = 3; }
/* the first segment ends 5 bytes into its first CLASS_DUMP */
static void overrun(uint8_t *p, const hg_layout *l)
{
    cp_put_be32(p + l->first_segment + 5, (uint32_t)(l->first_class_dump - l->first_segment - 9 + 5));
}
/* the first instance claims more field bytes than its segment holds */
static void big_instance(uint8_t *p, const hg_layout *l) { cp_put_be32(p + l->first_instance + 1 + 8 + 4 + 8, 1u << 30); }
static void short_string(uint8_t *p, const hg_layout *l) { (void)l, cp_put_be32(p + 31 + 5, 3); }

static uint64_t first_load_class(const cp_buf *dump)
{
    for (size_t off = 31; off < dump->len; off += 9 + cp_be32(dump->data + off + 5))
        if (dump->data[off] == 0x02) return off;
    fail_msg("no LOAD_CLASS");
    return 0;
}

static uint64_t lc_at;
static void bad_load_class(uint8_t *p, const hg_layout *l) { (void)l, cp_put_be32(p + lc_at + 5, 7); }

static void test_corrupt(void **state)
{
    (void)state;
    hg_spec s;
    hg_spec_small(&s, 8);
    cp_buf dump;
    cp_buf_init(&dump);
    hg_layout lay;
    assert_int_equal(hg_write_buf(&s, &dump, &lay), 0);
    lc_at = first_load_class(&dump);
    expect_error(&dump, bad_magic, &lay, CP_EPROTO, "not an HPROF heap dump", 0);
    expect_error(&dump, bad_id_size, &lay, CP_EPROTO, "identifier size 5", 19);
    expect_error(&dump, bad_tag, &lay, CP_EPROTO, "unknown record tag 0x55", 31);
    expect_error(&dump, short_string, &lay, CP_EPROTO, "STRING record of 3 bytes", 31);
    expect_error(&dump, bad_load_class, &lay, CP_EPROTO, "LOAD_CLASS record of 7 bytes", lc_at);
    expect_error(&dump, bad_sub, &lay, CP_EPROTO, "unknown heap dump sub-record type 0x99", lay.first_class_dump);
    expect_error(&dump, nodata, &lay, CP_EPROTO, "PRIMITIVE_ARRAY_NODATA", lay.first_class_dump);
    expect_error(&dump, bad_basic, &lay, CP_EPROTO, "basic type 3", lay.first_class_dump);
    expect_error(&dump, overrun, &lay, CP_EPROTO, "runs past the end of its record", lay.first_class_dump);
    expect_error(&dump, big_instance, &lay, CP_EPROTO, "runs past the end of its record", lay.first_instance);
    cp_buf_free(&dump);
}

/* Random byte flips: any status, never a crash; an error always names an offset. */
static void test_flips(void **state)
{
    (void)state;
    hg_spec s;
    hg_spec_small(&s, 4);
    cp_buf dump;
    cp_buf_init(&dump);
    assert_int_equal(hg_write_buf(&s, &dump, NULL), 0);
    uint8_t *p = malloc(dump.len);
    uint64_t rng = 19;
    size_t rounds = test_scaled(3000, 300);
    char err[256];
    for (size_t r = 0; r < rounds; r++) {
        memcpy(p, dump.data, dump.len);
        for (int k = 0; k < 3; k++) p[test_rand(&rng) % dump.len] = (uint8_t)test_rand(&rng);
        int st = decode_err(p, dump.len, NULL, err, sizeof err);
        if (st != CP_OK && !strstr(err, " at offset ")) fail_msg("status %d without an offset: %s", st, err);
    }
    free(p);
    cp_buf_free(&dump);
}

/* ---- bounds --------------------------------------------------------------------------------- */

static void test_limits(void **state)
{
    (void)state;
    hg_spec s;
    hg_spec_small(&s, 8);
    cp_buf dump;
    cp_buf_init(&dump);
    assert_int_equal(hg_write_buf(&s, &dump, NULL), 0);
    cp_hprof_limits lim;
    cp_hprof_limits_default(&lim);
    lim.max_classes = 3;
    char err[256];
    assert_int_equal(decode_err(dump.data, dump.len, &lim, err, sizeof err), CP_ELIMIT);
    assert_non_null(strstr(err, "more than 3 classes"));

    /* a string budget too small for every name: classes still counted, shown by id */
    cp_hprof_limits_default(&lim);
    lim.max_string_bytes = 60 * CP_HPROF_STRING_COST; /* the 50 symbols and a few names fit */
    cp_hprof_dec *d = cp_hprof_dec_new(&lim);
    assert_int_equal(decode(d, dump.data, dump.len, 0), CP_OK);
    cp_hprof_totals t;
    cp_hprof_dec_totals(d, &t);
    assert_true(t.names_dropped > 0);
    cp_hprof_class rows[16];
    size_t n = 0, unnamed = 0;
    assert_int_equal(cp_hprof_dec_top(d, 16, rows, &n, NULL), CP_OK);
    hg_expect want[16];
    assert_int_equal(n, hg_expected(&s, want, 16));
    cp_buf name;
    cp_buf_init(&name);
    for (size_t i = 0; i < n; i++) {
        if (rows[i].named) continue;
        unnamed++;
        cp_buf_reset(&name);
        cp_hprof_dec_class_name(d, &rows[i], &name);
        assert_true(name.len > 8 && !memcmp(name.data, "class@0x", 8));
    }
    assert_true(unnamed > 0);
    cp_buf_free(&name);
    cp_hprof_dec_free(d);
    cp_buf_free(&dump);
}

/* Memory does not grow with the dump: 40x the objects and 2000 more symbols cost the same. */
static void test_memory_bound(void **state)
{
    (void)state;
    static const uint8_t fields[] = {2, 10, 11};
    hg_class cls[3] = {{"a/Small", 10, fields, 3}, {"a/Big", 10, fields, 3}, {"a/Other", 1, NULL, 0}};
    hg_spec s;
    memset(&s, 0, sizeof s);
    s.id_size = 8;
    s.classes = cls;
    s.nclasses = 3;
    s.byte_arrays = 2, s.byte_len = 10;
    s.segment_bytes = 4096;
    size_t mem[2];
    for (int big = 0; big < 2; big++) {
        cls[1].instances = big ? test_scaled(400000, 40000) : 10;
        s.byte_arrays = big ? 2000 : 2;
        s.byte_len = big ? 10000 : 10;
        s.symbols = big ? 2000 : 0;
        cp_buf dump;
        cp_buf_init(&dump);
        assert_int_equal(hg_write_buf(&s, &dump, NULL), 0);
        cp_hprof_dec *d = cp_hprof_dec_new(NULL);
        assert_int_equal(decode(d, dump.data, dump.len, 65536), CP_OK);
        assert_histogram(d, &s);
        mem[big] = cp_hprof_dec_memory(d);
        printf("dump of %zu bytes: decoder holds %zu bytes\n", dump.len, mem[big]);
        cp_hprof_dec_free(d);
        cp_buf_free(&dump);
    }
    assert_true(mem[1] <= mem[0] + 4096); /* the symbols' memory went at the heap dump */
    assert_true(mem[1] < 256 * 1024);
}

/* ---- names ----------------------------------------------------------------------------------- */

static void assert_name(const char *internal, const char *want)
{
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(cp_hprof_java_name(&b, internal, strlen(internal)), CP_OK);
    cp_buf_putc(&b, 0);
    assert_string_equal((const char *)b.data, want);
    cp_buf_free(&b);
}

static void test_names(void **state)
{
    (void)state;
    assert_name("java/lang/String", "java.lang.String");
    assert_name("java/util/HashMap$Node", "java.util.HashMap$Node");
    assert_name("[I", "int[]");
    assert_name("[[J", "long[][]");
    assert_name("[Z", "boolean[]");
    assert_name("[Ljava/lang/Object;", "java.lang.Object[]");
    assert_name("[[Ljava/util/Map$Entry;", "java.util.Map$Entry[][]");
    assert_name("java.lang.String[]", "java.lang.String[]"); /* Android writes Java names */
    assert_name("[X", "[X");
    assert_name("[L;", "[L;");
    assert_name("bad\xff/x", "bad\xef\xbf\xbd.x");
    assert_name("", "");
}

/* ---- the summary of stored files ------------------------------------------------------------ */

typedef struct mem_file {
    const uint8_t *p;
    size_t n;
    int reads;
} mem_file;

static int mem_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    mem_file *f = ud;
    f->reads++;
    if (off > f->n || n > f->n - off) return CP_EIO;
    memcpy(dst, f->p + off, n);
    return CP_OK;
}

static int zip_sink(void *ud, const void *p, size_t n) { return cp_buf_append(ud, p, n); }

static void zip_of(const cp_buf *dump, int deflate, cp_buf *out)
{
    cp_zipw *z = NULL;
    assert_int_equal(cp_zipw_new(zip_sink, out, &z), CP_OK);
    assert_int_equal(cp_zipw_begin(z, "java_pid4242.hprof", 1702966654000LL, deflate), CP_OK);
    for (size_t off = 0; off < dump->len; off += 1000)
        assert_int_equal(cp_zipw_data(z, dump->data + off, dump->len - off < 1000 ? dump->len - off : 1000), CP_OK);
    assert_int_equal(cp_zipw_end(z), CP_OK);
    assert_int_equal(cp_zipw_finish(z), CP_OK);
    cp_zipw_free(z);
}

static int cancel_after(void *ud) { return --*(int *)ud < 0; }

static int expect_cmp(const void *a, const void *b)
{
    const hg_expect *x = a, *y = b;
    return x->shallow_bytes > y->shallow_bytes ? -1 : x->shallow_bytes < y->shallow_bytes;
}

/* The summary lists the 3 largest classes (the small dump's sizes are all different). */
static void assert_summary(const cp_hprof_summary *sum, const hg_spec *s, size_t hprof_bytes)
{
    assert_string_equal(sum->hdr.format, "JAVA PROFILE 1.0.2");
    assert_int_equal(sum->hdr.id_size, s->id_size);
    assert_int_equal(sum->hdr.time_ms, s->time_ms);
    assert_int_equal(sum->totals.bytes, hprof_bytes);
    hg_expect want[16];
    size_t nwant = hg_expected(s, want, 16);
    qsort(want, nwant, sizeof *want, expect_cmp);
    assert_int_equal(sum->classes_with_objects, nwant);
    assert_int_equal(sum->nclasses, 3);
    assert_false(sum->names_incomplete);
    for (size_t i = 0; i < sum->nclasses; i++) {
        assert_string_equal(sum->classes[i].name, want[i].name);
        assert_true(sum->classes[i].named);
        assert_int_equal(sum->classes[i].objects, want[i].objects);
        assert_int_equal(sum->classes[i].shallow_bytes, want[i].shallow_bytes);
    }
}

static void test_summary(void **state)
{
    (void)state;
    hg_spec s;
    hg_spec_small(&s, 8);
    cp_buf dump, zip;
    cp_buf_init(&dump);
    assert_int_equal(hg_write_buf(&s, &dump, NULL), 0);
    cp_hprof_sum_opts o = {.top = 3, .zipped = 1};
    char err[512];
    for (int deflate = 0; deflate < 2; deflate++) {
        cp_buf_init(&zip);
        zip_of(&dump, deflate, &zip);
        mem_file f = {zip.data, zip.len, 0};
        cp_hprof_summary sum;
        int st = cp_hprof_summarize(mem_pread, &f, zip.len, &o, &sum, err, sizeof err);
        if (st != CP_OK) fail_msg("deflate %d: %s", deflate, err);
        assert_string_equal(sum.entry, "java_pid4242.hprof");
        assert_int_equal(sum.file_bytes, zip.len);
        assert_summary(&sum, &s, dump.len);
        cp_hprof_summary_free(&sum);
        /* cancelled before the first piece */
        int left = 0;
        cp_hprof_sum_opts oc = o;
        oc.cancel = cancel_after;
        oc.cancel_ud = &left;
        f.reads = 0;
        assert_int_equal(cp_hprof_summarize(mem_pread, &f, zip.len, &oc, &sum, err, sizeof err), CP_EABORT);
        assert_int_equal(sum.nclasses, 0);
        cp_buf_free(&zip);
    }
    /* a bare HPROF */
    mem_file f = {dump.data, dump.len, 0};
    cp_hprof_sum_opts raw = {.top = 3, .zipped = 0};
    cp_hprof_summary sum;
    assert_int_equal(cp_hprof_summarize(mem_pread, &f, dump.len, &raw, &sum, err, sizeof err), CP_OK);
    assert_string_equal(sum.entry, "");
    assert_summary(&sum, &s, dump.len);
    cp_hprof_summary_free(&sum);
    /* not a zip */
    assert_int_equal(cp_hprof_summarize(mem_pread, &f, dump.len, &o, &sum, err, sizeof err), CP_ECORRUPT);
    assert_non_null(strstr(err, "no readable zip"));
    /* a zip of something else: the HPROF decoder's message, naming the entry */
    cp_buf junk;
    cp_buf_init(&junk);
    cp_buf_puts(&junk, "top - 10:11:12 up 3 min\n");
    cp_buf_init(&zip);
    zip_of(&junk, 1, &zip);
    f = (mem_file){zip.data, zip.len, 0};
    assert_int_equal(cp_hprof_summarize(mem_pread, &f, zip.len, &o, &sum, err, sizeof err), CP_ECORRUPT);
    assert_non_null(strstr(err, "the HPROF in entry java_pid4242.hprof: not an HPROF heap dump"));
    cp_buf_free(&zip);
    /* a truncated HPROF inside a good zip */
    junk.len = 0;
    cp_buf_append(&junk, dump.data, dump.len - 10);
    cp_buf_init(&zip);
    zip_of(&junk, 1, &zip);
    f = (mem_file){zip.data, zip.len, 0};
    assert_int_equal(cp_hprof_summarize(mem_pread, &f, zip.len, &o, &sum, err, sizeof err), CP_ECORRUPT);
    assert_non_null(strstr(err, "truncated"));
    /* a deflate stream damaged in the middle */
    zip.data[zip.len / 2] ^= 0x55;
    zip.data[zip.len / 2 + 1] ^= 0xAA;
    int st = cp_hprof_summarize(mem_pread, &f, zip.len, &o, &sum, err, sizeof err);
    assert_int_equal(st, CP_ECORRUPT);
    cp_buf_free(&zip);
    cp_buf_free(&junk);
    cp_buf_free(&dump);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slicings),      cmocka_unit_test(test_format_101), cmocka_unit_test(test_prefixes),
        cmocka_unit_test(test_corrupt),       cmocka_unit_test(test_flips),      cmocka_unit_test(test_limits),
        cmocka_unit_test(test_memory_bound),  cmocka_unit_test(test_names),      cmocka_unit_test(test_summary),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
