/* pq_internal.h -- private pieces of the Parquet layer, shared by its files and its tests.
 *
 *   thrift.c   Thrift compact protocol: a writer into a cp_buf and a bounded reader.
 *   enc.c      value encodings: RLE/bit-packed hybrid, bit unpacking, DELTA_BINARY_PACKED.
 *   meta.c     Parquet structs on the wire: page headers, schema elements.
 *   footer.c   FileMetaData decoding and recognition of the column shapes (reader side).
 *   writer.c   the writer: row buffering, shredding, pages, footer.
 *   reader.c   the reader: pages, decompression, assembly of rows.
 *
 * Names and numbers follow parquet.md (§2.2 type codes, §2.6 enums).
 */
#ifndef PQ_INTERNAL_H
#define PQ_INTERNAL_H

#include "cp_parquet.h"

#include <stddef.h>
#include <stdint.h>

/* Default for cp_pq_writer_opts.created_by (the layer cannot see the CLI's version). */
#define PQ_CREATED_BY "cloudprof version 0.1.0"

/* ---- enums of parquet.thrift ----------------------------------------------------------- */

enum { /* Thrift compact type codes */
    PQ_T_STOP = 0, PQ_T_TRUE = 1, PQ_T_FALSE = 2, PQ_T_I8 = 3, PQ_T_I16 = 4, PQ_T_I32 = 5,
    PQ_T_I64 = 6, PQ_T_DOUBLE = 7, PQ_T_BINARY = 8, PQ_T_LIST = 9, PQ_T_SET = 10, PQ_T_MAP = 11,
    PQ_T_STRUCT = 12, PQ_T_UUID = 13,
};
enum { /* Type */
    PQ_BOOLEAN = 0, PQ_INT32 = 1, PQ_INT64 = 2, PQ_INT96 = 3, PQ_FLOAT = 4, PQ_DOUBLE = 5,
    PQ_BYTE_ARRAY = 6, PQ_FIXED_LEN_BYTE_ARRAY = 7,
};
enum { PQ_REQUIRED = 0, PQ_OPTIONAL = 1, PQ_REPEATED = 2 }; /* FieldRepetitionType */
enum { /* ConvertedType (the ones we look at) */
    PQ_CT_UTF8 = 0, PQ_CT_MAP = 1, PQ_CT_MAP_KEY_VALUE = 2, PQ_CT_LIST = 3, PQ_CT_ENUM = 4,
    PQ_CT_DECIMAL = 5, PQ_CT_DATE = 6, PQ_CT_TIMESTAMP_MILLIS = 9, PQ_CT_TIMESTAMP_MICROS = 10, PQ_CT_UINT_8 = 11,
    PQ_CT_UINT_16 = 12, PQ_CT_UINT_32 = 13, PQ_CT_UINT_64 = 14, PQ_CT_INT_8 = 15, PQ_CT_INT_16 = 16,
    PQ_CT_INT_32 = 17, PQ_CT_INT_64 = 18, PQ_CT_JSON = 19, PQ_CT_BSON = 20,
};
enum { /* LogicalType union members */
    PQ_LT_STRING = 1, PQ_LT_MAP = 2, PQ_LT_LIST = 3, PQ_LT_ENUM = 4, PQ_LT_DECIMAL = 5,
    PQ_LT_DATE = 6, PQ_LT_TIME = 7, PQ_LT_TIMESTAMP = 8, PQ_LT_INTEGER = 10, PQ_LT_UNKNOWN = 11,
    PQ_LT_JSON = 12, PQ_LT_BSON = 13,
};
enum { /* Encoding */
    PQ_ENC_PLAIN = 0, PQ_ENC_PLAIN_DICTIONARY = 2, PQ_ENC_RLE = 3, PQ_ENC_BIT_PACKED = 4,
    PQ_ENC_DELTA_BINARY_PACKED = 5, PQ_ENC_DELTA_LENGTH_BYTE_ARRAY = 6, PQ_ENC_DELTA_BYTE_ARRAY = 7,
    PQ_ENC_RLE_DICTIONARY = 8,
};
enum { PQ_CODEC_UNCOMPRESSED = 0, PQ_CODEC_SNAPPY = 1, PQ_CODEC_GZIP = 2, PQ_CODEC_ZSTD = 6 };
enum { PQ_PAGE_DATA = 0, PQ_PAGE_INDEX = 1, PQ_PAGE_DICTIONARY = 2, PQ_PAGE_DATA_V2 = 3 };

/* ---- Thrift compact writer (thrift.c) -------------------------------------------------- */

#define PQ_TW_DEPTH 16

/* Field ids are written as deltas from the previous field of the same struct, so the
 * writer keeps one "last id" per open struct. Errors (ENOMEM) are sticky: build the
 * whole message, then check err once. */
typedef struct pq_tw {
    cp_buf *out;
    int err;
    int depth;
    int16_t last[PQ_TW_DEPTH];
} pq_tw;

void pq_tw_init(pq_tw *w, cp_buf *out);
void pq_tw_i8(pq_tw *w, int id, int8_t v);
void pq_tw_i32(pq_tw *w, int id, int32_t v);
void pq_tw_i64(pq_tw *w, int id, int64_t v);
void pq_tw_bool(pq_tw *w, int id, int v);
void pq_tw_binary(pq_tw *w, int id, const void *p, size_t n);
void pq_tw_string(pq_tw *w, int id, const char *s);
void pq_tw_struct_begin(pq_tw *w, int id);     /* a struct field: header, then a new id scope */
void pq_tw_struct_end(pq_tw *w);               /* STOP; also ends a struct list element */
void pq_tw_empty_struct(pq_tw *w, int id);     /* {} (StringType, MilliSeconds, ...) */
void pq_tw_list_begin(pq_tw *w, int id, int elem_type, size_t n);
void pq_tw_elem_i32(pq_tw *w, int32_t v);
void pq_tw_elem_binary(pq_tw *w, const void *p, size_t n);
void pq_tw_elem_struct_begin(pq_tw *w);        /* end it with pq_tw_struct_end */

/* Raw ULEB128 into dst (room for 10 bytes); returns the byte count. */
size_t pq_put_uvarint(uint8_t *dst, uint64_t v);
static inline uint64_t pq_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63)); }
static inline int64_t pq_unzigzag(uint64_t z) { return (int64_t)((z >> 1) ^ (0 - (z & 1))); }

/* ---- Thrift compact reader (thrift.c) -------------------------------------------------- */

#define PQ_TR_DEPTH 32 /* nesting bound of the generic skipper */

/* A bounded cursor. Every function returns CP_OK or CP_ECORRUPT and then leaves a short
 * reason in why (static text). */
typedef struct pq_tr {
    const uint8_t *p;
    size_t len;
    size_t pos;
    const char *why;
} pq_tr;

static inline void pq_tr_init(pq_tr *r, const uint8_t *p, size_t len)
{
    r->p = p;
    r->len = len;
    r->pos = 0;
    r->why = NULL;
}
static inline size_t pq_tr_left(const pq_tr *r) { return r->len - r->pos; }

int pq_tr_uvarint(pq_tr *r, uint64_t *v);
/* Next field header of the current struct. *type is PQ_T_STOP at the end of the struct;
 * last is that struct's previous field id (start with 0). */
int pq_tr_field(pq_tr *r, int16_t *last, int16_t *id, int *type);
/* Values of a field (type from the header) or of a list element (the list's type).
 * Integer readers accept any integer type whose value fits. */
int pq_tr_i32(pq_tr *r, int type, int32_t *v);
int pq_tr_i64(pq_tr *r, int type, int64_t *v);
int pq_tr_bool(pq_tr *r, int type, int elem, int *v);
int pq_tr_binary(pq_tr *r, int type, const uint8_t **p, size_t *n);
/* A list (or set) header; n is checked against the bytes left (an element is >= 1 byte). */
int pq_tr_list(pq_tr *r, int type, int *elem_type, uint32_t *n);
/* Skips one value of any type; elem says it is a list element (bools then take a byte). */
int pq_tr_skip(pq_tr *r, int type, int elem);
/* Checks that type is a struct (for a field expected to be one). */
int pq_tr_expect(pq_tr *r, int type, int want);

/* ---- encodings (enc.c) ----------------------------------------------------------------- */

/* Bits needed for v (0 for 0). */
static inline int pq_bit_width(uint64_t v) { return v ? 64 - __builtin_clzll(v) : 0; }

/* Appends the RLE/bit-packed hybrid encoding (§5.2) of v[0..n) with bit width w (1..32),
 * without any length prefix. */
int pq_hybrid_encode_u8(cp_buf *out, const uint8_t *v, size_t n, int w);
int pq_hybrid_encode_u32(cp_buf *out, const uint32_t *v, size_t n, int w);
/* Decodes exactly n values of width w (0..32) from p[0..len) into out (esize 1: uint8_t,
 * values must fit; esize 4: uint32_t). *used = bytes consumed. CP_ECORRUPT with *why set
 * when the data ends early or a value does not fit. */
int pq_hybrid_decode(const uint8_t *p, size_t len, int w, void *out, int esize, size_t n, size_t *used,
                     const char **why);
/* DELTA_BINARY_PACKED (§5.4): decodes exactly n values (32-bit results when is32; the
 * deltas themselves may be 64-bit wide, as DuckDB writes them for INT32). */
int pq_delta_decode(const uint8_t *p, size_t len, int is32, int64_t *out, size_t n, size_t *used, const char **why);

static inline void pq_put_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}
static inline uint32_t pq_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t pq_le64(const uint8_t *p) { return (uint64_t)pq_le32(p) | (uint64_t)pq_le32(p + 4) << 32; }
static inline void pq_put_le64(uint8_t *p, uint64_t v)
{
    pq_put_le32(p, (uint32_t)v);
    pq_put_le32(p + 4, (uint32_t)(v >> 32));
}

/* ---- page headers and schema elements (meta.c) ----------------------------------------- */

typedef struct pq_page_header {
    int type;                 /* PQ_PAGE_* */
    int32_t uncompressed;     /* uncompressed_page_size */
    int32_t compressed;       /* compressed_page_size */
    int32_t num_values;       /* data pages: level entries; dictionary: entries */
    int encoding;
    /* data page v2 only */
    int32_t num_nulls, num_rows, def_len, rep_len;
    int is_compressed;        /* default 1 */
} pq_page_header;

/* Appends a v1 data page or dictionary page header (the writer's two kinds) or v2. */
int pq_page_header_write(cp_buf *out, const pq_page_header *h);
/* Decodes a header from p[0..len); *used = its size. Checks the sizes are >= 0 and that
 * the sub-header matching the type is present. */
int pq_page_header_read(const uint8_t *p, size_t len, pq_page_header *h, size_t *used, const char **why);

/* Appends the schema elements of one top-level column (1 for flat columns, 6 or 4 for
 * the maps), with both converted_type and logicalType (§3.1). */
void pq_schema_write_column(pq_tw *w, const cp_pq_column *c);

/* ---- decoded FileMetaData (footer.c) ---------------------------------------------------- */

typedef struct pq_stats {
    int present;              /* ColumnMetaData.statistics was there */
    int64_t null_count;       /* -1 when absent */
    const uint8_t *min, *max; /* min_value / max_value, NULL when absent (point into the footer) */
    size_t min_len, max_len;
} pq_stats;

typedef struct pq_chunk {
    int type;                 /* physical type */
    int codec;
    int64_t num_values;
    int64_t total_compressed;
    int64_t data_off;
    int64_t dict_off;         /* -1 when absent */
    pq_stats stats;
} pq_chunk;

typedef struct pq_rowgroup {
    int64_t num_rows;
    pq_chunk *chunks;         /* one per leaf */
    size_t nchunks;
} pq_rowgroup;

/* One leaf column of the schema, with its levels. */
typedef struct pq_leaf {
    int type;
    int max_def, max_rep;
} pq_leaf;

/* One top-level column as the reader sees it. Definition thresholds for maps (§6.3,
 * generalised so REQUIRED variants of the optional nodes read too):
 *   def <  d_map        the map is null        def == d_map (< d_kv)  the map is empty
 *   key present at d_kv
 *   element leaf:  def < d_val null list  ·  def == d_val (< d_list) empty list
 *                  def == d_list (< max) null element  ·  def == max_def present
 *   value leaf (MAP_STR_STR):  def == d_kv (< max) null value  ·  max_def present */
typedef struct pq_col {
    cp_pq_column pub;
    size_t leaf;              /* first leaf */
    size_t nleaves;
    int d_map, d_kv, d_val, d_list;
    int64_t ts_div;           /* TS_MS read from micros (1000) or nanos (1000000); 0 = as is */
    const char *why;          /* type 0: why this reader cannot read it */
} pq_col;

typedef struct pq_meta {
    int64_t num_rows;
    pq_rowgroup *rgs;
    size_t nrgs;
    pq_leaf *leaves;
    size_t nleaves;
    pq_col *cols;
    size_t ncols;
    char *names;              /* NUL-terminated copies of the column names */
    char **kv;                /* key, value, key, value... (NUL-terminated copies) */
    size_t nkv;
} pq_meta;

/* Decodes the FileMetaData in p[0..len) (the caller keeps p alive: stats point into it). */
int pq_meta_decode(const uint8_t *p, size_t len, pq_meta *m, char *err, size_t errlen);
void pq_meta_free(pq_meta *m);

#endif
