/* cp_parquet.h -- Apache Parquet files written and read by hand (spec/parquet.md).
 *
 * A pure layer: bytes in, bytes out. The writer hands finished bytes to a sink callback
 * and the reader pulls byte ranges through a source callback, so files, object stores
 * and memory all work the same and no I/O happens here.
 *
 * What is supported is what cloudprof's two schemas need (storage.md "Cold tier"):
 *   leaves INT32 / INT64 (plain, signed or unsigned, or TIMESTAMP(MILLIS, UTC)),
 *   BOOLEAN, BYTE_ARRAY (STRING or raw binary), each REQUIRED or OPTIONAL, and two map
 *   shapes: map<string, list<string>> and map<string, string> (OPTIONAL map, REQUIRED key,
 *   OPTIONAL value/element, the 3-level layout of parquet.md §6).
 * Pages: data page v1, one page per column chunk per PAGE_ROWS rows, ZSTD (or none),
 * dictionary encoding (RLE_DICTIONARY) for columns that ask for it, falling back to
 * PLAIN (for the whole chunk) when the dictionary grows past its limit. Statistics (min_value, max_value,
 * null_count) on every chunk; column_orders TYPE_ORDER on every leaf.
 *
 * The reader reads what the writer writes and the common shapes other writers produce
 * (DuckDB): v1 and v2 pages, PLAIN / PLAIN_DICTIONARY / RLE_DICTIONARY / RLE booleans /
 * DELTA_BINARY_PACKED / DELTA_LENGTH_BYTE_ARRAY (DuckDB's V2 strings) / DELTA_BYTE_ARRAY,
 * UNCOMPRESSED / ZSTD / GZIP; TIMESTAMP(MICROS) and (NANOS) read as CP_PQ_TS_MS, in
 * milliseconds (DuckDB writes micros). Everything read is untrusted: every
 * length, count and offset is checked against the file and against CP_PQ_MAX_* bounds;
 * a bad file gives CP_ECORRUPT (or CP_ELIMIT) with a reason, never a crash.
 */
#ifndef CP_PARQUET_H
#define CP_PARQUET_H

#include "common/cp_common.h"

#include <stddef.h>
#include <stdint.h>

#define CP_PQ_MAX_COLUMNS 64              /* top-level columns of a schema */
#define CP_PQ_MAX_FOOTER (64u << 20)      /* bytes of FileMetaData */
#define CP_PQ_MAX_PAGE (256u << 20)       /* uncompressed bytes of one page */
#define CP_PQ_MAX_ROW_GROUPS 100000
#define CP_PQ_MAX_VALUES (1u << 24)       /* reader: rows of a row group, level entries of a chunk */

/* ---- schema ---------------------------------------------------------------------------- */

typedef enum cp_pq_type {
    CP_PQ_I32 = 1,        /* INT32, INTEGER(32, signed) */
    CP_PQ_I64,            /* INT64, INTEGER(64, signed) */
    CP_PQ_U64,            /* INT64, INTEGER(64, unsigned) / UINT_64 */
    CP_PQ_TS_MS,          /* INT64, TIMESTAMP(MILLIS, isAdjustedToUTC) / TIMESTAMP_MILLIS */
    CP_PQ_BOOL,           /* BOOLEAN */
    CP_PQ_STRING,         /* BYTE_ARRAY, STRING / UTF8 */
    CP_PQ_BINARY,         /* BYTE_ARRAY, no annotation */
    CP_PQ_MAP_STR_LIST,   /* MAP<STRING, LIST<STRING>> (two leaves: key, element) */
    CP_PQ_MAP_STR_STR,    /* MAP<STRING, STRING> (two leaves: key, value) */
} cp_pq_type;

typedef struct cp_pq_column {
    const char *name;
    cp_pq_type type;
    int optional;         /* maps are always optional */
    int dict;             /* ask for dictionary encoding (strings, binary, maps: always,
                           * unless the chunk's dictionary passes dict_max_bytes; integers:
                           * when at most half of a chunk's values are distinct) */
} cp_pq_column;

/* ---- values: one row is an array of cp_pq_value, one per column, in schema order ------ */

typedef struct cp_pq_bytes {
    const uint8_t *p;
    size_t len;
} cp_pq_bytes;

/* One map entry. For MAP_STR_LIST: values[0..nvalues); a NULL values pointer (with
 * nvalues 0) is a null list, a non-NULL one with nvalues 0 an empty list, and an element
 * whose p is NULL a null element (an empty string has a non-NULL p). For MAP_STR_STR:
 * nvalues is 1 and values[0] is the value (a NULL values pointer with nvalues 0 = a null
 * value). The reader hands back the same conventions. */
typedef struct cp_pq_map_entry {
    cp_pq_bytes key;
    const cp_pq_bytes *values;
    size_t nvalues;
} cp_pq_map_entry;

typedef struct cp_pq_value {
    int null;                       /* only for optional columns */
    int64_t i;                      /* I32, I64, U64, TS_MS, BOOL (0/1) */
    cp_pq_bytes b;                  /* STRING, BINARY */
    const cp_pq_map_entry *map;     /* maps: entries[0..nmap) */
    size_t nmap;
} cp_pq_value;

/* ---- writer ---------------------------------------------------------------------------- */

/* Receives the file's bytes in order. Non-zero return aborts the writer (returned). */
typedef int (*cp_pq_sink_fn)(void *ud, const void *p, size_t n);

typedef struct cp_pq_writer_opts {
    /* zero fields take the defaults */
    size_t row_group_rows;          /* rows per row group (default 65536) */
    size_t row_group_bytes;         /* or earlier when this many value bytes are buffered (default 64 MiB) */
    size_t page_rows;               /* rows per data page (default 16384) */
    int zstd_level;                 /* default (0) is 1; negative = no compression */
    size_t dict_max_bytes;          /* a dictionary above this falls back to PLAIN (default 1 MiB) */
    const char *created_by;         /* default "cloudprof version <v>" */
    /* key/value metadata pairs (optional): kv[0 .. 2*nkv) as key, value, key, value...
     * (a NULL value is left out). created_by and kv are copied by cp_pq_writer_new. */
    const char *const *kv;
    size_t nkv;
} cp_pq_writer_opts;

typedef struct cp_pq_writer cp_pq_writer;

/* Starts a file: writes "PAR1" to the sink. The columns array and its strings must stay
 * valid until cp_pq_writer_free. opts may be NULL (defaults). */
int cp_pq_writer_new(const cp_pq_column *cols, size_t ncols, const cp_pq_writer_opts *opts,
                     cp_pq_sink_fn sink, void *sink_ud, cp_pq_writer **out, char *err, size_t errlen);
/* Appends one row (copies what it needs). Flushes a row group when it is full. Rows are
 * stored in the order given: sort them first (calls: by pod, then time). */
int cp_pq_writer_add(cp_pq_writer *w, const cp_pq_value *row);
/* Flushes the last row group and writes the footer. No rows at all is valid (a file
 * with zero row groups). */
int cp_pq_writer_finish(cp_pq_writer *w);
uint64_t cp_pq_writer_rows(const cp_pq_writer *w);
uint64_t cp_pq_writer_bytes(const cp_pq_writer *w);      /* bytes given to the sink */
const char *cp_pq_writer_errmsg(const cp_pq_writer *w);
void cp_pq_writer_free(cp_pq_writer *w);

/* ---- reader ---------------------------------------------------------------------------- */

/* Reads exactly n bytes at offset into dst; CP_OK or a negative status. */
typedef int (*cp_pq_pread_fn)(void *ud, void *dst, size_t n, uint64_t offset);

typedef struct cp_pq_reader cp_pq_reader;

/* Statistics of one column chunk (a top-level column; for maps: the key leaf). */
typedef struct cp_pq_stats {
    int has_minmax;
    int64_t min_i, max_i;                 /* integer and boolean columns */
    const uint8_t *min_b, *max_b;         /* byte-array columns (valid while the reader lives) */
    size_t min_len, max_len;
    int64_t null_count;                   /* -1 when absent */
} cp_pq_stats;

/* One column of one row group, decoded. Rows are 0..nrows. */
typedef struct cp_pq_column_data {
    size_t nrows;
    uint8_t *nulls;                       /* nulls[i] != 0: row i is null (optional columns, else NULL) */
    int64_t *i;                           /* integer / boolean columns */
    cp_pq_bytes *b;                       /* byte-array columns (point into the reader's arena) */
    /* maps: row i has entries map_off[i] .. map_off[i+1] of map_entries */
    size_t *map_off;
    cp_pq_map_entry *map_entries;
} cp_pq_column_data;

/* Opens a file of `size` bytes: reads and checks the footer and the schema. */
int cp_pq_reader_open(cp_pq_pread_fn pread, void *ud, uint64_t size, cp_pq_reader **out, char *err, size_t errlen);
uint64_t cp_pq_reader_rows(const cp_pq_reader *r);
size_t cp_pq_reader_row_groups(const cp_pq_reader *r);
uint64_t cp_pq_reader_row_group_rows(const cp_pq_reader *r, size_t rg);
/* Top-level columns of the file's schema (maps count once), with their types as
 * recognised above; a column of a shape this reader does not know has type 0. */
size_t cp_pq_reader_columns(const cp_pq_reader *r);
const cp_pq_column *cp_pq_reader_column(const cp_pq_reader *r, size_t col);
/* Index of the column called name, or -1. */
int cp_pq_reader_find(const cp_pq_reader *r, const char *name);
/* Chunk statistics, to skip row groups. CP_ENOTFOUND when the chunk has none. */
int cp_pq_reader_stats(cp_pq_reader *r, size_t rg, size_t col, cp_pq_stats *out);
/* Decodes one column of one row group. The data is valid until the next read_column or
 * cp_pq_reader_reset_arena / free; several columns of one row group may be read before a
 * reset (they share the arena). */
int cp_pq_reader_read(cp_pq_reader *r, size_t rg, size_t col, cp_pq_column_data *out);
/* Frees every column_data handed out so far. */
void cp_pq_reader_reset_arena(cp_pq_reader *r);
/* key/value metadata (NULL when absent) */
const char *cp_pq_reader_kv(const cp_pq_reader *r, const char *key);
const char *cp_pq_reader_errmsg(const cp_pq_reader *r);
void cp_pq_reader_free(cp_pq_reader *r);

#endif
