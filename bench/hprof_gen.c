/* bench/hprof_gen.c -- writes a large heap dump as diagtools uploads it (a .hprof.zip with
 * one deflated entry, streamed: data descriptor, ZIP64) for bench/hprof.sh, and prints
 * what its summary must say.
 *
 * usage: bench_hprof_gen OUT.hprof.zip [MB]      (default 1024: the HPROF's size, about)
 * stdout: one JSON line {"hprof_bytes","zip_bytes","classes":N,"instances":N,
 *         "top":[{"name","instances","shallow_bytes"},...5]}
 *
 * The dump looks like a service's heap: Strings, HashMap nodes, boxed longs, domain
 * objects, 2 000 small classes, byte[] and int[] buffers, object arrays, and 200 000
 * unrelated symbols before the classes (as HotSpot writes every symbol it has). The
 * generator is tests/util/hprof_gen.c, compiled in.
 */
#include "../tests/util/hprof_gen.c"

#include "http/cp_zipout.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SMALL_CLASSES 2000

typedef struct zctx {
    cp_zipw *z;
    FILE *f;
} zctx;

static int to_file(void *ud, const void *p, size_t n) { return fwrite(p, 1, n, ud) == n ? 0 : CP_EIO; }
static int to_zip(void *ud, const void *p, size_t n) { return cp_zipw_data(((zctx *)ud)->z, p, n); }

static int by_bytes(const void *a, const void *b)
{
    const hg_expect *x = a, *y = b;
    return x->shallow_bytes > y->shallow_bytes ? -1 : x->shallow_bytes < y->shallow_bytes;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: %s OUT.hprof.zip [MB]\n", argv[0]);
        return 2;
    }
    double scale = (argc == 3 ? atof(argv[2]) : 1024) / 1024.0;
    if (scale <= 0) return 2;
    static const uint8_t string_f[] = {2, 10, 8, 4}, node_f[] = {10, 2, 2, 2}, long_f[] = {11};
    static const uint8_t order_f[] = {2, 2, 2, 2, 11, 11, 10, 10, 4}, small_f[] = {2, 10};
    hg_class *cls = calloc(4 + SMALL_CLASSES, sizeof *cls);
    char (*names)[32] = calloc(SMALL_CLASSES, sizeof *names);
    if (!cls || !names) return 1;
    cls[0] = (hg_class){"com/shop/Order", (uint64_t)(1000000 * scale), order_f, sizeof order_f};
    cls[1] = (hg_class){"java/lang/String", (uint64_t)(6000000 * scale), string_f, sizeof string_f};
    cls[2] = (hg_class){"java/util/HashMap$Node", (uint64_t)(4000000 * scale), node_f, sizeof node_f};
    cls[3] = (hg_class){"java/lang/Long", (uint64_t)(2000000 * scale), long_f, sizeof long_f};
    for (size_t i = 0; i < SMALL_CLASSES; i++) {
        snprintf(names[i], sizeof names[i], "com/shop/gen/C%zu", i);
        cls[4 + i] = (hg_class){names[i], 10, small_f, sizeof small_f};
    }
    hg_spec s = {.id_size = 8, .time_ms = 1702966680000LL, .classes = cls, .nclasses = 4 + SMALL_CLASSES};
    s.byte_arrays = (uint64_t)(200000 * scale), s.byte_len = 1500;
    s.int_arrays = (uint64_t)(100000 * scale), s.int_len = 100;
    s.obj_arrays = (uint64_t)(50000 * scale), s.obj_len = 64;
    s.segment_bytes = 64u << 20;
    s.symbols = 200000;

    zctx z = {NULL, fopen(argv[1], "wb")};
    if (!z.f || cp_zipw_new(to_file, z.f, &z.z) != CP_OK || cp_zipw_begin(z.z, "java_pid4242.hprof", s.time_ms, 1)) {
        fprintf(stderr, "hprof_gen: cannot write %s\n", argv[1]);
        return 1;
    }
    hg_layout lay;
    int st = hg_write(&s, to_zip, &z, &lay);
    if (st == 0) st = cp_zipw_end(z.z);
    if (st == 0) st = cp_zipw_finish(z.z);
    uint64_t zip_bytes = cp_zipw_bytes(z.z);
    cp_zipw_free(z.z);
    if (fclose(z.f) != 0 || st != 0) {
        fprintf(stderr, "hprof_gen: writing %s failed (%d)\n", argv[1], st);
        return 1;
    }
    size_t cap = s.nclasses + 3;
    hg_expect *rows = calloc(cap, sizeof *rows);
    size_t n = hg_expected(&s, rows, cap);
    qsort(rows, n, sizeof *rows, by_bytes);
    uint64_t objects = 0;
    for (size_t i = 0; i < n; i++) objects += rows[i].objects;
    printf("{\"hprof_bytes\":%" PRIu64 ",\"zip_bytes\":%" PRIu64 ",\"classes\":%zu,\"instances\":%" PRIu64 ",\"top\":[",
           lay.bytes, zip_bytes, n, objects);
    for (size_t i = 0; i < n && i < 5; i++)
        printf("%s{\"name\":\"%s\",\"instances\":%" PRIu64 ",\"shallow_bytes\":%" PRIu64 "}", i ? "," : "", rows[i].name,
               rows[i].objects, rows[i].shallow_bytes);
    printf("]}\n");
    free(rows);
    free(cls);
    free(names);
    return 0;
}
