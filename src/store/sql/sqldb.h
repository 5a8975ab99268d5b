/* sqldb.h -- private to src/store: one small SQL interface over SQLite and PostgreSQL, so
 * logic that is the same on both catalogs (the diagnostic files, cp_dumps.h) is written
 * once.
 *
 * SQL is written in the dialect both accept: "$1".."$n" placeholders (SQLite binds them
 * as named parameters), ON CONFLICT, RETURNING, CAST(x AS bigint) instead of "::", no
 * GREATEST, aggregates of bigints cast back to bigint (PostgreSQL's sum() is numeric).
 *
 * A connection is used by one thread at a time. Every function returns CP_OK or a
 * negative status; cp_sqldb_errmsg() tells why.
 */
#ifndef CP_SQLDB_H
#define CP_SQLDB_H

#include "common/cp_common.h"

#include <stddef.h>
#include <stdint.h>

typedef enum cp_sql_type { CP_SQL_NULL = 0, CP_SQL_I64, CP_SQL_TEXT, CP_SQL_BLOB } cp_sql_type;

/* A parameter or a result column. TEXT and BLOB point at n bytes; a TEXT result is
 * also NUL-terminated. Results are valid during the row callback only. */
typedef struct cp_sql_val {
    cp_sql_type type;
    int64_t i;
    const void *p;
    size_t n;
} cp_sql_val;

static inline cp_sql_val cp_sql_null(void) { return (cp_sql_val){CP_SQL_NULL, 0, NULL, 0}; }
static inline cp_sql_val cp_sql_i64(int64_t v) { return (cp_sql_val){CP_SQL_I64, v, NULL, 0}; }
/* NULL s is SQL NULL. */
static inline cp_sql_val cp_sql_text(const char *s)
{
    return s ? (cp_sql_val){CP_SQL_TEXT, 0, s, strlen(s)} : cp_sql_null();
}
static inline cp_sql_val cp_sql_textn(const char *s, size_t n) { return (cp_sql_val){CP_SQL_TEXT, 0, s, n}; }
static inline cp_sql_val cp_sql_blob(const void *p, size_t n) { return (cp_sql_val){CP_SQL_BLOB, 0, p, n}; }

/* A result column as text ("" for NULL) / integer (dflt for NULL). */
static inline const char *cp_sql_str(const cp_sql_val *v)
{
    return v->type == CP_SQL_TEXT && v->p ? (const char *)v->p : "";
}
static inline int64_t cp_sql_int(const cp_sql_val *v, int64_t dflt) { return v->type == CP_SQL_I64 ? v->i : dflt; }
/* A result column as text, NULL when it is not text (SQL NULL). */
static inline const char *cp_sql_opt(const cp_sql_val *v) { return v->type == CP_SQL_TEXT ? (const char *)v->p : NULL; }
/* As cp_sql_str, with its length in *len (0 for NULL). */
static inline const char *cp_sql_strn(const cp_sql_val *v, size_t *len)
{
    *len = v->type == CP_SQL_TEXT ? v->n : 0;
    return cp_sql_str(v);
}

/* Called once per result row; non-zero stops the statement and is returned by exec. */
typedef int (*cp_sqldb_row_fn)(void *ud, const cp_sql_val *cols, size_t ncols);

typedef struct cp_sqldb cp_sqldb;

/* Opens a connection: "postgres://..." / "postgresql://..." (libpq URI) or a SQLite file
 * (WAL, busy timeout 10 s, synchronous=FULL: a commit is durable when it returns). The
 * schema is not touched (cp_catalog_open migrates). */
int cp_sqldb_open(const char *spec, cp_sqldb **out, char *err, size_t errlen);
void cp_sqldb_close(cp_sqldb *db);
int cp_sqldb_is_pg(const cp_sqldb *db);

struct sqlite3;
struct pg_conn;
/* A sqldb over a connection its owner keeps (a reader's, a catalog's): statements run in
 * whatever transaction the owner has open, and cp_sqldb_close frees only the wrapper.
 * Code written once for both catalogs runs on the owner's connection this way. */
int cp_sqldb_wrap_sqlite(struct sqlite3 *conn, cp_sqldb **out);
int cp_sqldb_wrap_pg(struct pg_conn *conn, cp_sqldb **out);

/* The collation that orders text bytewise, to append to a column in ORDER BY:
 * " COLLATE \"C\"" on PostgreSQL (whatever the database's locale), "" on SQLite (which
 * compares text bytewise already). */
const char *cp_sqldb_bytewise(const cp_sqldb *db);

/* 1 if the database stores s[0..n) as text unchanged. PostgreSQL takes only valid UTF-8
 * without NUL (exec cleans other text, so a lookup of it would find nothing); SQLite
 * takes any bytes. */
int cp_sqldb_text_ok(const cp_sqldb *db, const char *s, size_t n);

/* Runs one statement with params p[0..np) ($1 = p[0]); fn(ud, row) for each result row
 * (may be NULL); *changes (may be NULL) = rows inserted, updated or deleted. When fn's
 * non-zero return stopped it, cp_sqldb_errmsg() is "" (the reason is fn's). */
int cp_sqldb_exec(cp_sqldb *db, const char *sql, const cp_sql_val *p, size_t np, cp_sqldb_row_fn fn, void *ud,
                  int64_t *changes);

/* A write transaction (SQLite: BEGIN IMMEDIATE, so it never has to upgrade a read lock). */
int cp_sqldb_begin(cp_sqldb *db);
int cp_sqldb_commit(cp_sqldb *db);
/* Rolls back the open transaction, if any (never fails: a broken connection is noted). */
void cp_sqldb_rollback(cp_sqldb *db);
/* Inside a transaction: waits for the lock called (cls, key) until the transaction ends
 * (PostgreSQL: pg_advisory_xact_lock, serialising nodes; SQLite: nothing to do, the
 * write transaction already excludes every other writer). */
int cp_sqldb_lock(cp_sqldb *db, int32_t cls, int32_t key);

/* 1 when the connection is unusable (PostgreSQL connection lost): close it. */
int cp_sqldb_broken(const cp_sqldb *db);
const char *cp_sqldb_errmsg(const cp_sqldb *db);
/* 1 if the last exec failed in a way the same work may not in a new transaction
 * (PostgreSQL: a table dropped under the snapshot, a deadlock, a serialization failure). */
int cp_sqldb_retryable(const cp_sqldb *db);

/* ---- WHERE clauses built with their parameters (the dumps and audit lists) ------------------- */

#define CP_SQLQ_MAX_PARAMS (16 + 256)

/* sql grows by " AND ..." terms whose placeholders ($n) number v[0..n). The first error
 * sticks in st (CP_ENOMEM; CP_ELIMIT past CP_SQLQ_MAX_PARAMS) and later calls do nothing.
 * Start with cp_sqlq_init; the caller frees sql. */
typedef struct cp_sqlq {
    cp_buf sql;
    cp_sql_val v[CP_SQLQ_MAX_PARAMS];
    size_t n;
    int st;
} cp_sqlq;

void cp_sqlq_init(cp_sqlq *q);
/* " AND <cond>": each '?' in cond is the placeholder of a, each '@' that of b (only when b
 * is given), e.g. "(time < ? OR (time = ? AND id < @))". */
void cp_sqlq_and2(cp_sqlq *q, const char *cond, cp_sql_val a, const cp_sql_val *b);
static inline void cp_sqlq_and(cp_sqlq *q, const char *cond, cp_sql_val a) { cp_sqlq_and2(q, cond, a, NULL); }
/* " AND <column> IN (names...)" when limited (" AND 0 = 1" for no names; more than max:
 * CP_ELIMIT); nothing when not limited. column is a trusted literal. */
void cp_sqlq_in(cp_sqlq *q, const char *column, int limited, const char *const *names, size_t n, size_t max);

/* ---- SQLite only: statements stepped directly, from the connection's cache ------------------- */

struct sqlite3_stmt;

/* A prepared statement taken from a SQLite connection's cache (the same cache exec uses). */
typedef struct cp_sqldb_stmt {
    struct sqlite3_stmt *st; /* NULL: none */
    char *sql;               /* the cache key, owned while taken */
    uint64_t hash, used;
} cp_sqldb_stmt;

/* The statement for sql, taken out of the cache (so nothing else uses it meanwhile) or
 * prepared. CP_EINVAL on PostgreSQL. On failure cp_sqldb_errmsg() says why. */
int cp_sqldb_stmt_take(cp_sqldb *db, const char *sql, cp_sqldb_stmt *out);
/* Gives it back: reset into the cache (the least recently used one dropped when full), or
 * finalized when !ok (it failed: its table may be gone). *s is cleared. */
void cp_sqldb_stmt_give(cp_sqldb *db, cp_sqldb_stmt *s, int ok);

#endif
