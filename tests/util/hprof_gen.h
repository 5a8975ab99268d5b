/* hprof_gen.h -- writes valid HPROF heap dumps as HotSpot lays them out, for the tests
 * (tests/unit/hprof_test.c, tests/integration/hprof_api_test.c), the fuzz seeds
 * (fuzz/fuzz_hprof.c) and the benchmark (bench/hprof_gen.c).
 *
 * The dump: the header; STRING records (unrelated symbols first, then field and class
 * names); LOAD_CLASS for every class, the object array class and int[]/byte[]; a
 * STACK_TRACE; then HEAP_DUMP_SEGMENT records holding GC roots of several kinds, a
 * CLASS_DUMP per class (a constant pool, static fields of every basic type, the instance
 * fields given), the instances (INSTANCE_DUMP with their field bytes), int[] and byte[]
 * arrays (PRIM_ARRAY_DUMP) and object arrays of the first class (OBJ_ARRAY_DUMP); a
 * segment is closed once it holds segment_bytes, never inside a sub-record; then
 * HEAP_DUMP_END. Plain C (cp_buf only), no cmocka: fuzz and bench builds use it too.
 */
#ifndef CP_HPROF_GEN_H
#define CP_HPROF_GEN_H

#include "common/cp_common.h"

#include <stddef.h>
#include <stdint.h>

typedef struct hg_class {
    const char *name;              /* internal form, as HotSpot writes it: "com/shop/Order" */
    uint64_t instances;
    const uint8_t *fields;         /* basic types of its instance fields (2 = object, 4..11) */
    size_t nfields;
} hg_class;

typedef struct hg_spec {
    uint32_t id_size;              /* 4 or 8 */
    const char *format;            /* NULL: "JAVA PROFILE 1.0.2" */
    int64_t time_ms;
    const hg_class *classes;       /* at least one when obj_arrays > 0 */
    size_t nclasses;
    uint64_t int_arrays, int_len;  /* int[] arrays and their length */
    uint64_t byte_arrays, byte_len;
    uint64_t obj_arrays, obj_len;  /* arrays of classes[0] */
    uint64_t segment_bytes;        /* 0: everything in one segment */
    uint32_t symbols;              /* unrelated STRING records written first */
} hg_spec;

/* Where things landed (offsets from the start of the dump). */
typedef struct hg_layout {
    uint64_t bytes;                /* the whole dump */
    uint64_t first_segment;        /* the first HEAP_DUMP_SEGMENT record */
    uint64_t first_class_dump;     /* the first CLASS_DUMP sub-record */
    uint64_t first_instance;       /* the first INSTANCE_DUMP sub-record */
    uint64_t segments, records;
} hg_layout;

/* Receives the dump's bytes in order. Non-zero stops writing (returned). */
typedef int (*hg_write_fn)(void *ud, const void *p, size_t n);

int hg_write(const hg_spec *s, hg_write_fn w, void *ud, hg_layout *layout);
/* The whole dump appended to out. */
int hg_write_buf(const hg_spec *s, cp_buf *out, hg_layout *layout);

/* What a decoder must find: one row per class with objects, in Java form. */
typedef struct hg_expect {
    char name[256];
    uint64_t objects, shallow_bytes;
} hg_expect;
/* The rows (classes with instances, "<first class>[]", "int[]", "byte[]"), unsorted;
 * returns how many (at most cap written). */
size_t hg_expected(const hg_spec *s, hg_expect *out, size_t cap);

/* A small dump with every feature (4 classes with various fields, arrays, 3 segments). */
void hg_spec_small(hg_spec *s, uint32_t id_size);

#endif
