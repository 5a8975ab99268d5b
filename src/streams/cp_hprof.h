/* cp_hprof.h -- a pure, incremental decoder of HPROF heap dumps (the JVM's binary heap
 * dump, dumps-http.md §8.4): bytes in, a class histogram out. No I/O, no clocks, no
 * globals.
 *
 * Input: the header -- the NUL-terminated "JAVA PROFILE 1.0.<digits>", a u4 identifier
 * size (4 or 8) and a u8 time in ms -- then records (u1 tag, u4 time delta, u4 body
 * length), all big-endian. Fed in any slicing, it gives the same result as the whole
 * input: a record or a sub-record may span any number of feeds. Only small fixed-size
 * parts are ever gathered (at most CP_HPROF_MAX_STEP bytes); bulk data -- the bodies of
 * records it does not read, instance field bytes, array elements -- is passed over
 * without being held, so a HEAP_DUMP_SEGMENT of gigabytes is walked sub-record by
 * sub-record in constant memory.
 *
 * What it keeps:
 *   - STRING (0x01) texts, as long as they fit max_string_bytes (text + CP_HPROF_STRING_COST
 *     per string): they are needed for class names, and HotSpot writes every string before
 *     the LOAD_CLASS records that say which ones are class names. At the first heap dump
 *     record after new strings, the strings no LOAD_CLASS names are dropped (HotSpot
 *     writes no LOAD_CLASS after its heap dump). A string that does not fit is dropped:
 *     its class is then listed as "class@0x<id>" (cp_hprof_totals.names_dropped counts
 *     them, cp_hprof_dec_top tells whether a listed class lacks its name).
 *   - one entry per class object id (LOAD_CLASS, CLASS_DUMP, or an object naming it), at
 *     most max_classes (CP_ELIMIT beyond): its name's string id, objects and shallow bytes.
 *   - per primitive array type (int[], byte[], ...): objects and shallow bytes.
 * Memory is thus bounded by max_classes and max_string_bytes whatever the input's size.
 *
 * Shallow size (what the class table adds up): the bytes the dump records for the object
 * -- an INSTANCE_DUMP's field bytes, an array's elements (length x element size, an
 * identifier for object arrays) -- plus a fixed header of 2 identifiers (8 or 16 bytes).
 * It approximates the JVM's layout (real headers are 12 or 16 bytes plus an array's
 * length, objects are padded to 8 bytes); analysers like Eclipse MAT differ by those bytes.
 *
 * Errors stop decoding with a message naming the byte offset (of the record or
 * sub-record at fault, from the start of the input): no header or a header that is not
 * "JAVA PROFILE 1.0.x", an identifier size other than 4 or 8, an unknown record tag or
 * heap dump sub-record type, a basic type that does not exist, a record whose length
 * cannot hold its fixed fields, a sub-record running past the end of its record, more
 * classes than max_classes, and (at finish) input that ends inside the header or a record.
 * Android's PRIMITIVE_ARRAY_NODATA (0xC3) is refused; its other sub-records (roots
 * 0x89..0x8E, 0x90, HEAP_DUMP_INFO 0xFE) are read.
 */
#ifndef CP_HPROF_H
#define CP_HPROF_H

#include "common/cp_common.h"

#include <stdint.h>

#define CP_HPROF_MAX_STEP 128          /* the largest fixed part gathered across feeds */
#define CP_HPROF_STRING_COST 48        /* bytes a kept string costs beyond its text */
#define CP_HPROF_MAX_FORMAT 32         /* "JAVA PROFILE 1.0.2" and its NUL fit with room */

typedef struct cp_hprof_limits {
    uint32_t max_classes;          /* class ids tracked (default 1 000 000) */
    uint64_t max_string_bytes;     /* strings kept for names (default 64 MiB) */
    uint32_t max_name;             /* bytes of one string kept, longer ones cut (default
                                    * 4096, at most 65535) */
} cp_hprof_limits;

void cp_hprof_limits_default(cp_hprof_limits *l);

typedef struct cp_hprof_header {
    char format[CP_HPROF_MAX_FORMAT]; /* "JAVA PROFILE 1.0.2"; "" until read */
    uint32_t id_size;              /* 4 or 8; 0 until read */
    int64_t time_ms;               /* the dump's time, epoch ms */
} cp_hprof_header;

typedef struct cp_hprof_totals {
    uint64_t bytes;                /* input decoded so far (whole steps) */
    uint64_t records;              /* top-level records whose header was read */
    uint64_t heap_records;         /* HEAP_DUMP and HEAP_DUMP_SEGMENT records */
    uint64_t strings;              /* STRING records */
    uint64_t classes_loaded;       /* LOAD_CLASS records */
    uint64_t class_dumps;          /* CLASS_DUMP sub-records */
    uint64_t gc_roots;             /* root sub-records */
    uint64_t objects;              /* instances and arrays */
    uint64_t shallow_bytes;        /* their shallow sizes (saturating) */
    uint64_t classes;              /* entries of the class table */
    uint64_t names_dropped;        /* strings not kept for the memory budget */
} cp_hprof_totals;

/* One row of the histogram. */
typedef struct cp_hprof_class {
    uint64_t id;                   /* the class object id; 0 for a primitive array type */
    uint8_t prim_type;             /* the element type of a primitive array type, else 0 */
    uint8_t named;                 /* its name is known and not empty (else cp_hprof_dec_class_name
                                    * gives "class@0x<id>") */
    uint64_t objects;
    uint64_t shallow_bytes;
} cp_hprof_class;

typedef struct cp_hprof_dec cp_hprof_dec;

/* limits may be NULL for the defaults. NULL on ENOMEM. */
cp_hprof_dec *cp_hprof_dec_new(const cp_hprof_limits *limits);
void cp_hprof_dec_free(cp_hprof_dec *d);
/* CP_OK or a negative status (CP_EPROTO bad bytes, CP_ELIMIT a limit, CP_ENOMEM); after an
 * error every later call returns it. */
int cp_hprof_dec_feed(cp_hprof_dec *d, const uint8_t *p, size_t n);
/* End of input: CP_OK at a record boundary after the header, else CP_EPROTO ("truncated
 * ... at offset N"), or the stored error. */
int cp_hprof_dec_finish(cp_hprof_dec *d);
const char *cp_hprof_dec_error(const cp_hprof_dec *d);   /* "<what> at offset N", or "" */
const cp_hprof_header *cp_hprof_dec_header(const cp_hprof_dec *d);
void cp_hprof_dec_totals(const cp_hprof_dec *d, cp_hprof_totals *out);
/* Bytes the decoder holds now (class table, strings, scratch). */
size_t cp_hprof_dec_memory(const cp_hprof_dec *d);

/* The n rows with the largest shallow bytes (ties: more objects first, then the smaller
 * id, primitive arrays by type), only classes with objects: *nout <= n rows in out.
 * *with_objects (may be NULL) gets how many classes have objects. CP_OK or CP_ENOMEM. */
int cp_hprof_dec_top(const cp_hprof_dec *d, size_t n, cp_hprof_class *out, size_t *nout, uint64_t *with_objects);
/* Appends the row's class name in Java form: "java.lang.String", "int[]",
 * "java.lang.Object[][]" (internal names like "[Ljava/lang/Object;" are converted),
 * "class@0x<id>" when unknown. CP_OK or CP_ENOMEM. */
int cp_hprof_dec_class_name(const cp_hprof_dec *d, const cp_hprof_class *c, cp_buf *out);
/* The same conversion for a name as the dump stores it. */
int cp_hprof_java_name(cp_buf *out, const char *s, size_t n);

#endif
