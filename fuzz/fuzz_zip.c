/* fuzz_zip.c -- libFuzzer target: cp_zip_probe, the zip central-directory reader of heap
 * dump uploads (cp_dumpfmt.h, dumps-http.md §8.4).
 *
 * The input is the whole zip file, read through pread from an exact-size copy (a read
 * past the end is an invariant failure here and an ASan report in the library).
 * Checked properties:
 *   1. Status is CP_OK, CP_ECORRUPT or CP_ELIMIT; a failure has a reason and leaves the
 *      info zeroed.
 *   2. A success is consistent: entries <= 1 000 000, the first name is NUL-terminated
 *      without control bytes, total >= the first entry's size, the compressed size fits
 *      the file; an empty directory reports no first entry.
 *   3. Only the end records and the directory are read: flipping every byte the probe
 *      did not read gives the same result (so entry data never matters).
 *   4. The same input gives the same result twice, and a pread that fails at read k
 *      makes the probe fail with that status when it makes k reads or more, and changes
 *      nothing when it makes fewer.
 *
 * Compiled with -DFZ_ZIP_SEEDS (no libFuzzer), this file is a small program writing seed
 * zips made with zlib into the directory given: stored, deflated, data descriptors,
 * ZIP64 extras and end records, a comment, several entries (scripts/fuzz-seed.sh).
 */
#include "common/cp_common.h"
#include "model/cp_dumpfmt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FZ_ZIP_SEEDS

#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct fzfile {
    const uint8_t *p;
    size_t size;
    uint8_t *touched;      /* per byte: read by the probe */
    unsigned reads;
    unsigned fail_at;      /* 1-based read that fails with CP_EIO; 0 = none */
} fzfile;

static int fz_pread(void *ud, void *dst, size_t n, uint64_t off)
{
    fzfile *f = ud;
    FZ_CHECK(off <= f->size && n <= f->size - off, "read of %zu bytes at %llu past the end (%zu)", n,
             (unsigned long long)off, f->size);
    f->reads++;
    if (f->fail_at && f->reads == f->fail_at) return CP_EIO;
    memcpy(dst, f->p + off, n);
    if (f->touched) memset(f->touched + off, 1, n);
    return CP_OK;
}

typedef struct result {
    int status;
    cp_zip_info zi;
    char err[256];
    unsigned reads;
} result;

static void run(const uint8_t *p, size_t size, uint8_t *touched, unsigned fail_at, result *r)
{
    fzfile f = {p, size, touched, 0, fail_at};
    memset(r, 0, sizeof *r);
    memset(&r->zi, 0x5A, sizeof r->zi); /* the probe must set every field */
    r->status = cp_zip_probe(fz_pread, &f, size, &r->zi, r->err, sizeof r->err);
    r->reads = f.reads;
}

static int same(const result *a, const result *b)
{
    return a->status == b->status && memcmp(&a->zi, &b->zi, sizeof a->zi) == 0 && strcmp(a->err, b->err) == 0;
}

static void check_result(const result *r, size_t size)
{
    const cp_zip_info *z = &r->zi;
    FZ_CHECK(r->status == CP_OK || r->status == CP_ECORRUPT || r->status == CP_ELIMIT, "status %d", r->status);
    FZ_CHECK(memchr(r->err, 0, sizeof r->err) != NULL, "err not terminated");
    FZ_CHECK(memchr(z->first_name, 0, sizeof z->first_name) != NULL, "first_name not terminated");
    if (r->status != CP_OK) {
        FZ_CHECK(r->err[0] != '\0', "failure %d without a reason", r->status);
        FZ_CHECK(z->entries == 0 && z->first_name[0] == 0 && z->first_size == 0 && z->first_comp_size == 0 &&
                     z->first_method == 0 && z->total_size == 0,
                 "failure with a half-filled info");
        return;
    }
    FZ_CHECK(r->err[0] == '\0', "success with a reason: %s", r->err);
    FZ_CHECK(size >= 22, "a %zu-byte zip accepted", size);
    FZ_CHECK(z->entries <= 1000000, "%llu entries", (unsigned long long)z->entries);
    /* every entry costs 46 directory bytes at least */
    FZ_CHECK(z->entries * 46 <= size, "%llu entries in %zu bytes", (unsigned long long)z->entries, size);
    for (const char *c = z->first_name; *c; c++)
        FZ_CHECK((uint8_t)*c >= 0x20 && (uint8_t)*c != 0x7f, "control byte in the first name");
    if (z->entries == 0) {
        FZ_CHECK(z->first_name[0] == 0 && z->first_size == 0 && z->first_comp_size == 0 && z->total_size == 0,
                 "an empty directory with a first entry");
    } else {
        FZ_CHECK(z->total_size >= z->first_size, "total %llu < first %llu", (unsigned long long)z->total_size,
                 (unsigned long long)z->first_size);
        FZ_CHECK(z->first_comp_size + 30 <= size, "compressed size %llu in a %zu-byte file",
                 (unsigned long long)z->first_comp_size, size);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    uint8_t *touched = calloc(1, size ? size : 1);
    FZ_CHECK(copy && touched, "malloc");
    memcpy(copy, data, size);

    result a, b;
    run(copy, size, touched, 0, &a);
    check_result(&a, size);

    /* bytes never read do not matter */
    for (size_t i = 0; i < size; i++)
        if (!touched[i]) copy[i] ^= 0xA5;
    run(copy, size, NULL, 0, &b);
    FZ_CHECK(same(&a, &b), "changing unread bytes changed the result (%d -> %d)", a.status, b.status);
    memcpy(copy, data, size);

    /* deterministic */
    run(copy, size, NULL, 0, &b);
    FZ_CHECK(same(&a, &b) && a.reads == b.reads, "two probes of the same bytes differ");

    /* a read error at read k */
    unsigned k = 1 + (size ? data[size - 1] : 0) % (a.reads + 1);
    run(copy, size, NULL, k, &b);
    if (k <= a.reads) {
        FZ_CHECK(b.status == CP_EIO, "read %u of %u failed, probe says %d", k, a.reads, b.status);
        FZ_CHECK(b.reads == k, "probe read on after a failed read (%u reads, failed at %u)", b.reads, k);
        FZ_CHECK(b.zi.entries == 0 && b.zi.first_name[0] == 0, "a failed probe with entries");
    } else {
        FZ_CHECK(same(&a, &b), "an unused read failure changed the result");
    }
    free(copy);
    free(touched);
    return 0;
}

#else /* FZ_ZIP_SEEDS: seed writer */

#include <zlib.h>

static void put16(cp_buf *b, uint16_t v)
{
    uint8_t x[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
    cp_buf_append(b, x, 2);
}
static void put32(cp_buf *b, uint32_t v)
{
    put16(b, (uint16_t)v);
    put16(b, (uint16_t)(v >> 16));
}
static void put64(cp_buf *b, uint64_t v)
{
    put32(b, (uint32_t)v);
    put32(b, (uint32_t)(v >> 32));
}

typedef struct zent {
    const char *name;
    const void *data;
    size_t len;
    int method, descriptor, zip64;
} zent;

static void deflate_raw(const void *p, size_t n, cp_buf *out)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    deflateInit2(&z, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
    size_t bound = deflateBound(&z, (uLong)n);
    cp_buf_reserve(out, bound);
    z.next_in = (Bytef *)p;
    z.avail_in = (uInt)n;
    z.next_out = out->data + out->len;
    z.avail_out = (uInt)bound;
    deflate(&z, Z_FINISH);
    out->len += bound - z.avail_out;
    deflateEnd(&z);
}

static void build(cp_buf *z, const zent *e, size_t n, int zip64_end, const char *comment)
{
    uint64_t offs[4], cs[4];
    uint32_t crc[4];
    for (size_t i = 0; i < n; i++) {
        cp_buf d;
        cp_buf_init(&d);
        if (e[i].method == 8) deflate_raw(e[i].data, e[i].len, &d);
        else cp_buf_append(&d, e[i].data, e[i].len);
        crc[i] = (uint32_t)crc32(0, e[i].data, (uInt)e[i].len);
        cs[i] = d.len;
        offs[i] = z->len;
        size_t nl = strlen(e[i].name);
        put32(z, 0x04034b50);
        put16(z, 45);
        put16(z, e[i].descriptor ? 8 : 0);
        put16(z, (uint16_t)e[i].method);
        put32(z, 0x571b5bd3);
        put32(z, e[i].descriptor ? 0 : crc[i]);
        put32(z, e[i].zip64 ? 0xFFFFFFFFu : e[i].descriptor ? 0 : (uint32_t)d.len);
        put32(z, e[i].zip64 ? 0xFFFFFFFFu : e[i].descriptor ? 0 : (uint32_t)e[i].len);
        put16(z, (uint16_t)nl);
        put16(z, e[i].zip64 ? 20 : 0);
        cp_buf_append(z, e[i].name, nl);
        if (e[i].zip64) {
            put16(z, 1);
            put16(z, 16);
            put64(z, e[i].descriptor ? 0 : e[i].len);
            put64(z, e[i].descriptor ? 0 : d.len);
        }
        cp_buf_append(z, d.data, d.len);
        if (e[i].descriptor) {
            put32(z, 0x08074b50);
            put32(z, crc[i]);
            if (e[i].zip64) {
                put64(z, d.len);
                put64(z, e[i].len);
            } else {
                put32(z, (uint32_t)d.len);
                put32(z, (uint32_t)e[i].len);
            }
        }
        cp_buf_free(&d);
    }
    uint64_t cd = z->len;
    for (size_t i = 0; i < n; i++) {
        size_t nl = strlen(e[i].name);
        put32(z, 0x02014b50);
        put16(z, 0x031e);
        put16(z, 45);
        put16(z, e[i].descriptor ? 8 : 0);
        put16(z, (uint16_t)e[i].method);
        put32(z, 0x571b5bd3);
        put32(z, crc[i]);
        put32(z, e[i].zip64 ? 0xFFFFFFFFu : (uint32_t)cs[i]);
        put32(z, e[i].zip64 ? 0xFFFFFFFFu : (uint32_t)e[i].len);
        put16(z, (uint16_t)nl);
        put16(z, e[i].zip64 ? 28 : 0);
        put16(z, 0);
        put16(z, 0);
        put16(z, 0);
        put32(z, 0);
        put32(z, e[i].zip64 ? 0xFFFFFFFFu : (uint32_t)offs[i]);
        cp_buf_append(z, e[i].name, nl);
        if (e[i].zip64) {
            put16(z, 1);
            put16(z, 24);
            put64(z, e[i].len);
            put64(z, cs[i]);
            put64(z, offs[i]);
        }
    }
    uint64_t cdsize = z->len - cd;
    if (zip64_end) {
        uint64_t rec = z->len;
        put32(z, 0x06064b50);
        put64(z, 44);
        put32(z, 0x002d002d);
        put32(z, 0);
        put32(z, 0);
        put64(z, n);
        put64(z, n);
        put64(z, cdsize);
        put64(z, cd);
        put32(z, 0x07064b50);
        put32(z, 0);
        put64(z, rec);
        put32(z, 1);
    }
    size_t cl = comment ? strlen(comment) : 0;
    put32(z, 0x06054b50);
    put32(z, 0);
    put16(z, zip64_end ? 0xFFFF : (uint16_t)n);
    put16(z, zip64_end ? 0xFFFF : (uint16_t)n);
    put32(z, zip64_end ? 0xFFFFFFFFu : (uint32_t)cdsize);
    put32(z, zip64_end ? 0xFFFFFFFFu : (uint32_t)cd);
    put16(z, (uint16_t)cl);
    cp_buf_append(z, comment, cl);
}

static void save(const char *dir, const char *name, const zent *e, size_t n, int zip64_end, const char *comment)
{
    cp_buf z;
    cp_buf_init(&z);
    build(&z, e, n, zip64_end, comment);
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(z.data, 1, z.len, f) != z.len || fclose(f) != 0) {
        fprintf(stderr, "cannot write %s\n", path);
        exit(1);
    }
    cp_buf_free(&z);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s DIR\n", argv[0]);
        return 2;
    }
    static char text[3000];
    for (size_t i = 0; i < sizeof text; i++) text[i] = "  PID USER      PR  NI    VIRT    RES\n"[i % 38];
    zent stored = {"java_pid1.hprof", "JAVA PROFILE 1.0.2\0\0\0\4", 23, 0, 0, 0};
    zent deflated = {"20240731T225935.hprof", text, sizeof text, 8, 0, 0};
    zent streamed = {"-", text, sizeof text, 8, 1, 1};
    zent three[3] = {{"a", text, 10, 8, 1, 0}, {"b", text, 20, 0, 0, 0}, {"c", text, 30, 8, 1, 1}};
    save(argv[1], "stored", &stored, 1, 0, NULL);
    save(argv[1], "deflated", &deflated, 1, 0, NULL);
    save(argv[1], "zip64", &streamed, 1, 1, NULL);
    save(argv[1], "comment", &stored, 1, 0, "a comment PK\x05\x06 with a false signature");
    save(argv[1], "three", three, 3, 1, "x");
    save(argv[1], "empty", NULL, 0, 0, NULL);
    return 0;
}

#endif
