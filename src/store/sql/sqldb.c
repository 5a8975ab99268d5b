/* sqldb.c -- the backend a spec names, and the calls that pass through to it (sqldb.h). */
#include "store/sql/sqldb_internal.h"
#include "store/catalog/pg_internal.h"
#include "store/cp_catalog.h"

int cp_sqldb_open(const char *spec, cp_sqldb **out, char *err, size_t errlen)
{
    if (cp_catalog_is_postgres(spec)) return cp_sqldb_open_pg(spec, out, err, errlen);
    return cp_sqldb_open_sqlite(spec, out, err, errlen);
}

void cp_sqldb_close(cp_sqldb *db)
{
    if (db) db->ops->close(db);
}

int cp_sqldb_is_pg(const cp_sqldb *db) { return db->pg; }

const char *cp_sqldb_bytewise(const cp_sqldb *db) { return db->pg ? " COLLATE \"C\"" : ""; }

int cp_sqldb_text_ok(const cp_sqldb *db, const char *s, size_t n) { return !db->pg || cp_pg_text_ok(s, n); }

int cp_sqldb_exec(cp_sqldb *db, const char *sql, const cp_sql_val *p, size_t np, cp_sqldb_row_fn fn, void *ud,
                  int64_t *changes)
{
    if (changes) *changes = 0;
    db->retryable = 0;
    db->err[0] = 0; /* stays empty when fn stopped the statement */
    return db->ops->exec(db, sql, p, np, fn, ud, changes);
}

int cp_sqldb_begin(cp_sqldb *db) { return db->ops->begin(db); }
int cp_sqldb_commit(cp_sqldb *db) { return db->ops->commit(db); }
void cp_sqldb_rollback(cp_sqldb *db) { db->ops->rollback(db); }
int cp_sqldb_lock(cp_sqldb *db, int32_t cls, int32_t key) { return db->ops->lock(db, cls, key); }
int cp_sqldb_broken(const cp_sqldb *db) { return db->ops->broken(db); }
const char *cp_sqldb_errmsg(const cp_sqldb *db) { return db->err; }
int cp_sqldb_retryable(const cp_sqldb *db) { return db->retryable; }

/* ---- WHERE clauses (sqldb.h) ------------------------------------------------------------------ */

void cp_sqlq_init(cp_sqlq *q)
{
    cp_buf_init(&q->sql);
    q->n = 0;
    q->st = CP_OK;
}

void cp_sqlq_and2(cp_sqlq *q, const char *cond, cp_sql_val a, const cp_sql_val *b)
{
    if (q->st != CP_OK) return;
    if (q->n + 2 > CP_ARRAY_LEN(q->v)) {
        q->st = CP_ELIMIT;
        return;
    }
    size_t ia = ++q->n, ib = 0;
    q->v[ia - 1] = a;
    if (b) q->v[(ib = ++q->n) - 1] = *b;
    q->st = cp_buf_puts(&q->sql, " AND ");
    for (const char *c = cond; q->st == CP_OK && *c; c++)
        q->st = *c == '?' ? cp_buf_printf(&q->sql, "$%zu", ia)
              : *c == '@' && ib ? cp_buf_printf(&q->sql, "$%zu", ib)
                                : cp_buf_putc(&q->sql, (uint8_t)*c);
}

void cp_sqlq_in(cp_sqlq *q, const char *column, int limited, const char *const *names, size_t n, size_t max)
{
    if (q->st != CP_OK || !limited) return;
    if (n > max || q->n + n > CP_ARRAY_LEN(q->v)) {
        q->st = CP_ELIMIT;
        return;
    }
    if (n == 0) {
        q->st = cp_buf_puts(&q->sql, " AND 0 = 1");
        return;
    }
    q->st = cp_buf_printf(&q->sql, " AND %s IN (", column);
    for (size_t i = 0; q->st == CP_OK && i < n; i++) {
        q->v[q->n++] = cp_sql_text(names[i]);
        q->st = cp_buf_printf(&q->sql, "%s$%zu", i ? ", " : "", q->n);
    }
    if (q->st == CP_OK) q->st = cp_buf_putc(&q->sql, ')');
}
