/* pg_internal.h -- private to src/store: the PostgreSQL catalog (catalog_pg.c), its hot
 * tier writer (pg_hot.c) and the binary COPY encoder (pg_copy.c).
 *
 * Layout of the PostgreSQL catalog: the same tables, names and columns as the SQLite one
 * (catalog_sqlite.c migrations 1-4, hot_schema.c), times as bigint epoch milliseconds.
 * Differences that come from PostgreSQL being shared by several nodes:
 *   - row ids of the window tables come from one sequence (hot_ids, INCREMENT BY 1024:
 *     each nextval() is a block of 1024 ids), because several collectors write the same
 *     window table (one table per window since migration 7: the trace blob is a column).
 *   - hot rows are buffered as binary COPY data per window during the transaction and
 *     sent at commit, after the window's inventory row was locked (FOR KEY SHARE) and its
 *     status checked: a window that is being compacted sends its rows to the next batch
 *     table (calls_<suffix>_<n>), see pg_hot.c.
 */
#ifndef CP_PG_INTERNAL_H
#define CP_PG_INTERNAL_H

#include "common/cp_common.h"
#include "store/catalog/catalog_core.h"
#include "store/hot/hot_internal.h"
#include "model/cp_model.h"
#include "store/cp_catalog.h"
#include "store/cp_cold.h"

#include <libpq-fe.h>
#include <stdint.h>

/* ---- text and binary COPY (pg_copy.c) ---------------------------------------------------- */

/* 1 if s[0..n) is valid UTF-8 (as PostgreSQL checks it: no overlong forms, no surrogates,
 * nothing above U+10FFFF) and holds no NUL byte: text PostgreSQL accepts as is. */
int cp_pg_text_ok(const char *s, size_t n);
/* Appends s[0..n) with every invalid sequence and NUL replaced by U+FFFD. Text from the
 * network is passed through this before it reaches the server, so one bad name never
 * fails a whole batch. */
int cp_pg_text_clean(cp_buf *out, const char *s, size_t n);

/* PGCOPY binary format: header, tuples (int16 field count, then per field an int32
 * length, -1 for NULL, and the bytes in network order), trailer int16 -1. A tuple is
 * written by reserving its worst-case size with cp_pgcopy_tuple() and then appending the
 * fields with the put functions, which do not check space. */
#define CP_PGCOPY_HEADER_LEN 19
extern const uint8_t cp_pgcopy_header[CP_PGCOPY_HEADER_LEN];
extern const uint8_t cp_pgcopy_trailer[2];

/* Worst case bytes of a text field of n bytes (cleaning can triple it) and of the fixed
 * fields, for cp_pgcopy_tuple's reservation. */
#define CP_PGCOPY_TEXT_MAX(n) (4 + 3 * (size_t)(n))
#define CP_PGCOPY_I64 12
#define CP_PGCOPY_I32 8

/* Reserves room for one tuple of nfields fields taking at most `bytes` (field headers
 * included) and writes the field count. */
int cp_pgcopy_tuple(cp_buf *b, uint16_t nfields, size_t bytes);
void cp_pgcopy_i64(cp_buf *b, int64_t v);
void cp_pgcopy_i32(cp_buf *b, int32_t v);
void cp_pgcopy_null(cp_buf *b);
/* A text field, cleaned (cp_pg_text_clean) when it needs to be. */
void cp_pgcopy_text(cp_buf *b, const char *s, size_t n);
/* A bytea field. */
void cp_pgcopy_bytes(cp_buf *b, const void *p, size_t n);

/* Sends one COPY ... FROM STDIN (FORMAT binary): sql is the COPY statement, data[0..len)
 * the tuples (header and trailer are added here). On failure err gets the server's
 * message. */
int cp_pgcopy_send(PGconn *conn, const char *sql, const uint8_t *data, size_t len, char *err, size_t errlen);

/* DDL of a window's table on PostgreSQL (hot_schema.c's columns with PostgreSQL
 * types; idempotent). suffix: "YYYYMMDD_HHMM" or "YYYYMMDD_HHMM_<batch>". */
int cp_pg_window_ddl(cp_buf *out, const char *suffix);
/* The column list of calls_X in COPY order (the hot writer's tuples). */
extern const char cp_pg_calls_columns[];
#define CP_PG_CALLS_FIELDS 33
/* Appends the COPY tuple of one call (calls_X, its trace blob included) with row id `id`. */
int cp_pg_call_tuple(cp_buf *calls, const cp_call *c, int64_t id);

/* ---- the catalog object (catalog_pg.c) --------------------------------------------------- */

typedef struct pg_hot pg_hot;

typedef struct pg_catalog {
    cp_catalog_core core;  /* first: the interface pointer is the object pointer */
    PGconn *conn;
    int in_txn;            /* BEGIN was sent */
    int batched;           /* the open transaction holds batched writes (not only a compactor step) */
    int lost;              /* batched writes were rolled back after a failure */
    char lost_msg[256];
    char err[512];
    char sqlstate[6];      /* SQLSTATE of the last failed statement */
    int64_t window_ms, ahead_ms;
    pg_hot *hot;
    cp_buf scratch;        /* cleaned text parameters */
    cp_buf sql;            /* SQL text being built */
    /* dictionary words of this transaction: COPY tuples for the temp table cp_dict_in */
    cp_buf dict;
    int64_t dict_rows;
    /* inverted-index rows of this transaction: COPY tuples for cp_inv_in, and the params
     * they belong to (index = the tuple's first field) */
    cp_buf inv;
    int64_t inv_rows;
    struct pg_inv_param { char *name; size_t len; char table[CP_COLD_INV_NAME]; } *inv_params;
    size_t ninv_params, capinv_params;
} pg_catalog;

/* Formats err as "what: <server message>". If the server aborted the open transaction
 * (any error inside one does), it is rolled back with cp_pg_abort(). Returns CP_EIO. */
int cp_pg_fail(pg_catalog *c, const char *what);
/* Same with a message of ours (no server message). Returns st. */
int cp_pg_failf(pg_catalog *c, int st, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Rolls the open transaction back at once, forgets everything pending, and makes the
 * next commit() report the loss if batched writes were in it. */
void cp_pg_abort(pg_catalog *c);
/* Runs SQL without parameters that returns no rows. */
int cp_pg_exec(pg_catalog *c, const char *sql, const char *what);
/* Runs SQL with parameters. types: one letter per parameter, 't' text, 'b' bigint,
 * 'i' integer, 'y' bytea; vals/lens the values (bigint/integer: pointers to int64_t / int32_t in
 * host order). Returns the result (caller PQclear()s) or NULL after cp_pg_fail. */
PGresult *cp_pg_query(pg_catalog *c, const char *sql, const char *types, const void *const *vals,
                      const size_t *lens, int binary_result, const char *what);
/* Opens the batch transaction if it is not open. */
int cp_pg_begin(pg_catalog *c);

/* ---- the hot tier writer (pg_hot.c) --------------------------------------------------------- */

int cp_pg_hot_new(pg_catalog *c, pg_hot **out);
/* The idle-method list of the rollups' system flag (kept by pointer). */
void cp_pg_hot_set_idle(pg_hot *h, const char *const *idle, size_t n);
/* The COPY buffers' bound: their capacity stays within `bytes` (a flush into the open
 * transaction when their contents reach half of it). */
void cp_pg_hot_set_max_bytes(pg_hot *h, uint64_t bytes);
void cp_pg_hot_free(pg_hot *h);
/* Buffers one call (no server round trip except a new block of row ids). */
int cp_pg_hot_put(pg_hot *h, const cp_call *call);
/* Creates the windows from the one holding now up to now + ahead that do not exist. */
int cp_pg_hot_prepare(pg_hot *h, int64_t now_ms);
/* Sends everything buffered into the open transaction (status checks, COPY, counters). */
int cp_pg_hot_flush(pg_hot *h);
/* 1 if rows or counters are buffered. */
int cp_pg_hot_pending(const pg_hot *h);
/* The transaction ended (commit: ok = 1, rollback: 0): drop what was buffered. */
void cp_pg_hot_end(pg_hot *h, int ok);

#endif
