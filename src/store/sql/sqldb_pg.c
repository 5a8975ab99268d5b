/* sqldb_pg.c -- sqldb.h on PostgreSQL: PQexecParams with binary parameters and results,
 * columns decoded by their type. Text parameters that are not valid UTF-8 (names from
 * URLs) are cleaned the way the catalog cleans them (pg_copy.c), since the server would
 * refuse them. */
#include "store/catalog/pg_internal.h"
#include "store/sql/sqldb_internal.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>

/* type oids (pg_type.h) */
#define OID_BOOL 16
#define OID_BYTEA 17
#define OID_NAME 19
#define OID_INT8 20
#define OID_INT2 21
#define OID_INT4 23
#define OID_TEXT 25
#define OID_FLOAT8 701
#define OID_UNKNOWN 705
#define OID_VARCHAR 1043

#define PARAMS_MAX 64
#define COLS_MAX 64

typedef struct pg_db {
    cp_sqldb base; /* first */
    PGconn *conn;
    cp_buf scratch; /* cleaned text parameters */
    int borrowed;   /* cp_sqldb_wrap_pg: the owner closes conn */
} pg_db;

static void one_line(char *dst, size_t cap, const char *what, const char *msg)
{
    int o = snprintf(dst, cap, "%s: ", what);
    size_t k = o > 0 && (size_t)o < cap ? (size_t)o : 0;
    for (const char *p = msg && *msg ? msg : "unknown error"; *p && k + 1 < cap; p++) dst[k++] = *p == '\n' ? ' ' : *p;
    while (k && dst[k - 1] == ' ') k--;
    dst[k] = 0;
}

static int fail_res(pg_db *d, const char *what, const PGresult *r)
{
    /* undefined table (a window dropped under the snapshot), deadlock, serialization */
    const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
    d->base.retryable = state && (!strcmp(state, "42P01") || !strcmp(state, "40P01") || !strcmp(state, "40001"));
    one_line(d->base.err, sizeof d->base.err, what, r ? PQresultErrorMessage(r) : PQerrorMessage(d->conn));
    return CP_EIO;
}

static void no_notices(void *arg, const char *message)
{
    (void)arg;
    (void)message;
}

static int decode(pg_db *d, const PGresult *r, int row, int ncols, cp_sql_val *cols)
{
    for (int i = 0; i < ncols; i++) {
        cp_sql_val *c = &cols[i];
        *c = cp_sql_null();
        if (PQgetisnull(r, row, i)) continue;
        const uint8_t *v = (const uint8_t *)PQgetvalue(r, row, i);
        size_t n = (size_t)PQgetlength(r, row, i);
        Oid t = PQftype(r, i);
        switch (t) {
        case OID_INT8:
            if (n != 8) goto bad;
            c->type = CP_SQL_I64, c->i = (int64_t)cp_be64(v);
            break;
        case OID_INT4:
            if (n != 4) goto bad;
            c->type = CP_SQL_I64, c->i = (int32_t)cp_be32(v);
            break;
        case OID_INT2:
            if (n != 2) goto bad;
            c->type = CP_SQL_I64, c->i = (int16_t)(((uint16_t)v[0] << 8) | v[1]);
            break;
        case OID_BOOL:
            if (n != 1) goto bad;
            c->type = CP_SQL_I64, c->i = v[0] != 0;
            break;
        case OID_FLOAT8: {
            if (n != 8) goto bad;
            uint64_t u = cp_be64(v);
            double x;
            memcpy(&x, &u, sizeof x);
            c->type = CP_SQL_I64, c->i = (int64_t)x;
            break;
        }
        case OID_TEXT:
        case OID_VARCHAR:
        case OID_NAME:
        case OID_UNKNOWN:
            c->type = CP_SQL_TEXT, c->p = v, c->n = n; /* libpq ends every value with a NUL */
            break;
        case OID_BYTEA: c->type = CP_SQL_BLOB, c->p = v, c->n = n; break;
        default:
            snprintf(d->base.err, sizeof d->base.err, "column %d: unsupported type oid %u (cast it)", i, (unsigned)t);
            return CP_EINVAL;
        }
    }
    return CP_OK;
bad:
    snprintf(d->base.err, sizeof d->base.err, "result: bad binary value");
    return CP_ECORRUPT;
}

static int pg_exec(cp_sqldb *base, const char *sql, const cp_sql_val *p, size_t np, cp_sqldb_row_fn fn, void *ud,
                   int64_t *changes)
{
    pg_db *d = (pg_db *)base;
    if (np > PARAMS_MAX) {
        snprintf(d->base.err, sizeof d->base.err, "too many parameters");
        return CP_EINVAL;
    }
    Oid oid[PARAMS_MAX];
    const char *val[PARAMS_MAX];
    int len[PARAMS_MAX], fmt[PARAMS_MAX];
    uint8_t num[PARAMS_MAX][8];
    size_t clean[PARAMS_MAX]; /* offset + 1 in scratch, 0 = none */
    cp_buf_reset(&d->scratch);
    for (size_t i = 0; i < np; i++) {
        const cp_sql_val *v = &p[i];
        fmt[i] = 1;
        clean[i] = 0;
        len[i] = 0;
        val[i] = NULL;
        if (v->n > INT32_MAX) {
            snprintf(d->base.err, sizeof d->base.err, "parameter %zu too long", i + 1);
            return CP_ELIMIT;
        }
        switch (v->type) {
        case CP_SQL_I64:
            oid[i] = OID_INT8;
            cp_put_be64(num[i], (uint64_t)v->i);
            val[i] = (const char *)num[i], len[i] = 8;
            break;
        case CP_SQL_TEXT:
            oid[i] = OID_TEXT;
            val[i] = v->p ? v->p : "", len[i] = (int)v->n;
            if (!cp_pg_text_ok(val[i], v->n)) {
                clean[i] = d->scratch.len + 1;
                if (cp_pg_text_clean(&d->scratch, val[i], v->n) != CP_OK) {
                    snprintf(d->base.err, sizeof d->base.err, "out of memory");
                    return CP_ENOMEM;
                }
                len[i] = (int)(d->scratch.len - (clean[i] - 1));
            }
            break;
        case CP_SQL_BLOB:
            oid[i] = OID_BYTEA;
            val[i] = v->p ? v->p : "", len[i] = (int)v->n;
            break;
        default: oid[i] = 0; /* NULL: the server infers the type */
        }
    }
    for (size_t i = 0; i < np; i++) /* scratch no longer moves */
        if (clean[i]) val[i] = (const char *)d->scratch.data + clean[i] - 1;
    PGresult *r = PQexecParams(d->conn, sql, (int)np, oid, val, len, fmt, 1);
    ExecStatusType s = PQresultStatus(r);
    if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) {
        int st = fail_res(d, "query", r);
        PQclear(r);
        return st;
    }
    int st = CP_OK, ncols = PQnfields(r);
    if (ncols > COLS_MAX) {
        snprintf(d->base.err, sizeof d->base.err, "too many result columns");
        st = CP_EINVAL;
    }
    for (int i = 0; st == CP_OK && fn && i < PQntuples(r); i++) {
        cp_sql_val cols[COLS_MAX];
        st = decode(d, r, i, ncols, cols);
        if (st == CP_OK) st = fn(ud, cols, (size_t)ncols);
    }
    if (st == CP_OK && changes) {
        const char *t = PQcmdTuples(r);
        *changes = t && *t ? strtoll(t, NULL, 10) : 0;
    }
    PQclear(r);
    return st;
}

static int run(pg_db *d, const char *sql, const char *what)
{
    PGresult *r = PQexec(d->conn, sql);
    ExecStatusType s = PQresultStatus(r);
    int st = s == PGRES_COMMAND_OK || s == PGRES_TUPLES_OK ? CP_OK : fail_res(d, what, r);
    PQclear(r);
    return st;
}

static int pg_begin(cp_sqldb *base)
{
    pg_db *d = (pg_db *)base;
    int st = run(d, "BEGIN", "begin");
    if (st == CP_OK) base->in_txn = 1;
    return st;
}

static int pg_commit(cp_sqldb *base)
{
    pg_db *d = (pg_db *)base;
    /* COMMIT of a transaction the server aborted answers ROLLBACK, not an error */
    int aborted = PQtransactionStatus(d->conn) == PQTRANS_INERROR;
    int st = run(d, "COMMIT", "commit");
    base->in_txn = 0;
    if (st == CP_OK && aborted) {
        snprintf(d->base.err, sizeof d->base.err, "commit: the transaction was rolled back after an error");
        st = CP_EIO;
    }
    return st;
}

static void pg_rollback(cp_sqldb *base)
{
    pg_db *d = (pg_db *)base;
    if (PQtransactionStatus(d->conn) != PQTRANS_IDLE) {
        PGresult *r = PQexec(d->conn, "ROLLBACK");
        PQclear(r);
    }
    base->in_txn = 0;
}

static int pg_lock(cp_sqldb *base, int32_t cls, int32_t key)
{
    pg_db *d = (pg_db *)base;
    char sql[96];
    snprintf(sql, sizeof sql, "SELECT pg_advisory_xact_lock(%d, %d)", (int)cls, (int)key);
    return run(d, sql, "lock");
}

static int pg_broken(const cp_sqldb *base)
{
    const pg_db *d = (const pg_db *)base;
    return PQstatus(d->conn) != CONNECTION_OK;
}

static void pg_close(cp_sqldb *base)
{
    pg_db *d = (pg_db *)base;
    if (d->conn && !d->borrowed) PQfinish(d->conn);
    cp_buf_free(&d->scratch);
    free(d);
}

static const sqldb_ops pg_ops = {pg_exec, pg_begin, pg_commit, pg_rollback, pg_lock, pg_broken, pg_close};

int cp_sqldb_open_pg(const char *conninfo, cp_sqldb **out, char *err, size_t errlen)
{
    *out = NULL;
    pg_db *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    d->base.ops = &pg_ops;
    d->base.pg = 1;
    cp_buf_init(&d->scratch);
    d->conn = PQconnectdb(conninfo);
    int st = CP_OK;
    if (!d->conn) {
        snprintf(d->base.err, sizeof d->base.err, "out of memory");
        st = CP_ENOMEM;
    } else if (PQstatus(d->conn) != CONNECTION_OK) {
        st = fail_res(d, "connect", NULL);
    } else {
        PQsetNoticeProcessor(d->conn, no_notices, NULL);
        if (PQsetClientEncoding(d->conn, "UTF8") != 0) st = fail_res(d, "client encoding", NULL);
    }
    if (st != CP_OK) {
        snprintf(err, errlen, "%s", d->base.err);
        pg_close(&d->base);
        return st;
    }
    *out = &d->base;
    return CP_OK;
}

int cp_sqldb_wrap_pg(struct pg_conn *conn, cp_sqldb **out)
{
    pg_db *d = calloc(1, sizeof *d);
    *out = d ? &d->base : NULL;
    if (!d) return CP_ENOMEM;
    d->base.ops = &pg_ops;
    d->base.pg = 1;
    cp_buf_init(&d->scratch);
    d->conn = conn;
    d->borrowed = 1;
    return CP_OK;
}
