/* sqldb_sqlite.c -- sqldb.h on a SQLite file: a connection of its own beside the
 * catalog's, with synchronous=FULL so a commit is on disk when it returns; or a wrapper
 * of a connection its owner keeps (cp_sqldb_wrap_sqlite).
 *
 * Statements are kept prepared (STMT_CACHE of them, by SQL text, the least recently
 * used one replaced): the same few statements run again and again, and preparing one
 * costs more than running a point lookup. SQLite-only code on a wrapped connection (the
 * reader's searches) takes its statements from the same cache (cp_sqldb_stmt_take). */
#include "store/sql/sqldb_internal.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUSY_TIMEOUT_MS 10000
#define STMT_CACHE 64

typedef struct sq_db {
    cp_sqldb base; /* first */
    sqlite3 *db;
    int borrowed; /* cp_sqldb_wrap_sqlite: the owner closes db */
    cp_sqldb_stmt cache[STMT_CACHE];
    size_t ncache;
    uint64_t tick;
} sq_db;

static int fail(sq_db *d, const char *what)
{
    snprintf(d->base.err, sizeof d->base.err, "%s: %s", what, sqlite3_errmsg(d->db));
    return CP_EIO;
}

/* Binds "$N" to p[N-1]; other parameter names are a programming error. */
static int bind_all(sq_db *d, sqlite3_stmt *s, const cp_sql_val *p, size_t np)
{
    int n = sqlite3_bind_parameter_count(s);
    for (int i = 1; i <= n; i++) {
        const char *name = sqlite3_bind_parameter_name(s, i);
        char *end = NULL;
        long k = name && name[0] == '$' ? strtol(name + 1, &end, 10) : 0;
        if (k < 1 || (size_t)k > np || !end || *end) {
            snprintf(d->base.err, sizeof d->base.err, "parameter %s has no value", name ? name : "?");
            return CP_EINVAL;
        }
        const cp_sql_val *v = &p[k - 1];
        int rc;
        switch (v->type) {
        case CP_SQL_I64: rc = sqlite3_bind_int64(s, i, v->i); break;
        case CP_SQL_TEXT:
            rc = sqlite3_bind_text64(s, i, v->p ? v->p : "", (sqlite3_uint64)v->n, SQLITE_STATIC, SQLITE_UTF8);
            break;
        case CP_SQL_BLOB: rc = sqlite3_bind_blob64(s, i, v->p ? v->p : "", (sqlite3_uint64)v->n, SQLITE_STATIC); break;
        default: rc = sqlite3_bind_null(s, i);
        }
        if (rc != SQLITE_OK) return fail(d, "bind");
    }
    return CP_OK;
}

#define COLS_MAX 64

static uint64_t fnv64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ULL;
    for (; *s; s++) h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
    return h;
}

/* Taken out of the cache while in use: a row callback may run another statement, even the
 * same one. */
static int stmt_take(sq_db *d, const char *sql, cp_sqldb_stmt *out)
{
    uint64_t h = fnv64(sql);
    for (size_t i = 0; i < d->ncache; i++)
        if (d->cache[i].hash == h && !strcmp(d->cache[i].sql, sql)) {
            *out = d->cache[i];
            d->cache[i] = d->cache[--d->ncache];
            return CP_OK;
        }
    *out = (cp_sqldb_stmt){NULL, strdup(sql), h, 0};
    if (!out->sql) {
        snprintf(d->base.err, sizeof d->base.err, "out of memory");
        return CP_ENOMEM;
    }
    if (sqlite3_prepare_v3(d->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &out->st, NULL) != SQLITE_OK) {
        int st = fail(d, "prepare");
        sqlite3_finalize(out->st);
        free(out->sql);
        *out = (cp_sqldb_stmt){0};
        return st;
    }
    return CP_OK;
}

static void stmt_give(sq_db *d, cp_sqldb_stmt *s, int ok)
{
    if (!s->st) return;
    if (!ok || sqlite3_reset(s->st) != SQLITE_OK || sqlite3_clear_bindings(s->st) != SQLITE_OK) {
        sqlite3_finalize(s->st);
        free(s->sql);
        *s = (cp_sqldb_stmt){0};
        return;
    }
    if (d->ncache == STMT_CACHE) {
        size_t lru = 0;
        for (size_t i = 1; i < d->ncache; i++)
            if (d->cache[i].used < d->cache[lru].used) lru = i;
        sqlite3_finalize(d->cache[lru].st);
        free(d->cache[lru].sql);
        d->cache[lru] = d->cache[--d->ncache];
    }
    s->used = ++d->tick;
    d->cache[d->ncache++] = *s;
    *s = (cp_sqldb_stmt){0};
}

static void cache_clear(sq_db *d)
{
    for (size_t i = 0; i < d->ncache; i++) {
        sqlite3_finalize(d->cache[i].st);
        free(d->cache[i].sql);
    }
    d->ncache = 0;
}

static int sq_exec(cp_sqldb *base, const char *sql, const cp_sql_val *p, size_t np, cp_sqldb_row_fn fn, void *ud,
                   int64_t *changes)
{
    sq_db *d = (sq_db *)base;
    cp_sqldb_stmt cs;
    int st = stmt_take(d, sql, &cs);
    if (st != CP_OK) return st;
    sqlite3_stmt *s = cs.st;
    st = bind_all(d, s, p, np);
    int ncols = sqlite3_column_count(s);
    if (ncols > COLS_MAX) {
        snprintf(d->base.err, sizeof d->base.err, "too many result columns");
        st = CP_EINVAL;
    }
    int rc = SQLITE_DONE;
    while (st == CP_OK && (rc = sqlite3_step(s)) == SQLITE_ROW) {
        if (!fn) continue;
        cp_sql_val cols[COLS_MAX];
        for (int i = 0; i < ncols; i++) {
            cp_sql_val *c = &cols[i];
            *c = cp_sql_null();
            switch (sqlite3_column_type(s, i)) {
            case SQLITE_INTEGER: c->type = CP_SQL_I64, c->i = sqlite3_column_int64(s, i); break;
            case SQLITE_FLOAT: c->type = CP_SQL_I64, c->i = (int64_t)sqlite3_column_double(s, i); break;
            case SQLITE_TEXT:
                c->type = CP_SQL_TEXT;
                c->p = sqlite3_column_text(s, i);
                c->n = (size_t)sqlite3_column_bytes(s, i);
                break;
            case SQLITE_BLOB:
                c->type = CP_SQL_BLOB;
                c->p = sqlite3_column_blob(s, i);
                c->n = (size_t)sqlite3_column_bytes(s, i);
                if (!c->p) c->p = ""; /* an empty blob is not NULL */
                break;
            default: break;
            }
        }
        st = fn(ud, cols, (size_t)ncols);
    }
    if (st == CP_OK && rc != SQLITE_DONE) st = fail(d, "step");
    if (st == CP_OK && changes) *changes = sqlite3_changes64(d->db);
    stmt_give(d, &cs, 1); /* a reset that fails (the step failed) drops it */
    return st;
}

static int run(sq_db *d, const char *sql, const char *what)
{
    return sqlite3_exec(d->db, sql, NULL, NULL, NULL) == SQLITE_OK ? CP_OK : fail(d, what);
}

static int sq_begin(cp_sqldb *base)
{
    sq_db *d = (sq_db *)base;
    int st = run(d, "BEGIN IMMEDIATE", "begin");
    if (st == CP_OK) base->in_txn = 1;
    return st;
}

static int sq_commit(cp_sqldb *base)
{
    sq_db *d = (sq_db *)base;
    int st = run(d, "COMMIT", "commit");
    if (st != CP_OK) sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
    base->in_txn = 0;
    return st;
}

static void sq_rollback(cp_sqldb *base)
{
    sq_db *d = (sq_db *)base;
    if (!sqlite3_get_autocommit(d->db)) sqlite3_exec(d->db, "ROLLBACK", NULL, NULL, NULL);
    base->in_txn = 0;
}

static int sq_lock(cp_sqldb *base, int32_t cls, int32_t key)
{
    (void)cls;
    (void)key;
    return base->in_txn ? CP_OK : CP_EINVAL;
}

static int sq_broken(const cp_sqldb *base)
{
    (void)base;
    return 0;
}

static void sq_close(cp_sqldb *base)
{
    sq_db *d = (sq_db *)base;
    cache_clear(d);
    if (!d->borrowed) sqlite3_close(d->db);
    free(d);
}

static const sqldb_ops sq_ops = {sq_exec, sq_begin, sq_commit, sq_rollback, sq_lock, sq_broken, sq_close};

int cp_sqldb_open_sqlite(const char *path, cp_sqldb **out, char *err, size_t errlen)
{
    *out = NULL;
    sq_db *d = calloc(1, sizeof *d);
    if (!d) {
        snprintf(err, errlen, "out of memory");
        return CP_ENOMEM;
    }
    d->base.ops = &sq_ops;
    int st = CP_OK;
    if (sqlite3_open_v2(path, &d->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        st = fail(d, path);
    else if (sqlite3_busy_timeout(d->db, BUSY_TIMEOUT_MS) != SQLITE_OK)
        st = fail(d, "busy timeout");
    /* the catalog made the file WAL; FULL fsyncs the WAL at each commit of ours (the
     * catalog's own connection keeps NORMAL) */
    if (st == CP_OK) st = run(d, "PRAGMA journal_mode = WAL", "set WAL");
    if (st == CP_OK) st = run(d, "PRAGMA synchronous = FULL", "set synchronous");
    if (st != CP_OK) {
        snprintf(err, errlen, "%s", d->base.err);
        sqlite3_close(d->db);
        free(d);
        return st;
    }
    *out = &d->base;
    return CP_OK;
}

int cp_sqldb_wrap_sqlite(struct sqlite3 *conn, cp_sqldb **out)
{
    sq_db *d = calloc(1, sizeof *d);
    *out = d ? &d->base : NULL;
    if (!d) return CP_ENOMEM;
    d->base.ops = &sq_ops;
    d->db = conn;
    d->borrowed = 1;
    return CP_OK;
}

int cp_sqldb_stmt_take(cp_sqldb *db, const char *sql, cp_sqldb_stmt *out)
{
    *out = (cp_sqldb_stmt){0};
    if (db->pg) {
        snprintf(db->err, sizeof db->err, "not a SQLite connection");
        return CP_EINVAL;
    }
    db->err[0] = 0;
    return stmt_take((sq_db *)db, sql, out);
}

void cp_sqldb_stmt_give(cp_sqldb *db, cp_sqldb_stmt *s, int ok)
{
    if (!db->pg) stmt_give((sq_db *)db, s, ok);
}
