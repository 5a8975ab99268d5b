/* sqldb_test.c -- the SQL layer both catalogs share (src/store/sql/sqldb.h), on SQLite and
 * (as sqldb_test@pg-s3) on PostgreSQL: values in and out, the statement cache (a row
 * callback running the same statement again, more statements than the cache holds, a
 * table changed under a cached statement), wrapping a connection its owner keeps,
 * statements taken from the cache and stepped directly (SQLite), and which text each
 * database takes as it is.
 *
 * CP_TEST_BOTH_PAIRS */
#include "pair_util.h"
#include "testutil.h"

#include "store/cp_catalog.h"
#include "store/sql/sqldb.h"

#include <libpq-fe.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    char *dir, *spec;
    cp_sqldb *db;
} fixture;

static void fixture_open(fixture *fx)
{
    test_pair_require();
    memset(fx, 0, sizeof *fx);
    fx->dir = make_temp_dir("sqldb");
    fx->spec = test_catalog_spec(fx->dir);
    char err[256];
    cp_catalog *cat = NULL;
    if (cp_catalog_open(fx->spec, &cat, err, sizeof err) != CP_OK) fail_msg("catalog: %s", err);
    cp_catalog_close(cat);
    if (cp_sqldb_open(fx->spec, &fx->db, err, sizeof err) != CP_OK) fail_msg("sqldb: %s", err);
}

static void fixture_close(fixture *fx)
{
    cp_sqldb_close(fx->db);
    test_pair_free(fx->dir, fx->spec, NULL);
}

static void run(cp_sqldb *db, const char *sql)
{
    if (cp_sqldb_exec(db, sql, NULL, 0, NULL, NULL, NULL) != CP_OK) fail_msg("%s: %s", sql, cp_sqldb_errmsg(db));
}

/* ---- values ---------------------------------------------------------------------------------- */

typedef struct row_copy {
    int rows;
    int64_t i;
    char text[64];
    unsigned char blob[8];
    size_t blob_len;
    int null_type;
} row_copy;

static int on_values(void *ud, const cp_sql_val *c, size_t n)
{
    row_copy *r = ud;
    assert_int_equal(n, 4);
    r->rows++;
    assert_int_equal(c[0].type, CP_SQL_I64);
    r->i = c[0].i;
    assert_int_equal(c[1].type, CP_SQL_TEXT);
    assert_true(c[1].n < sizeof r->text);
    memcpy(r->text, c[1].p, c[1].n);
    r->text[c[1].n] = 0;
    assert_int_equal(c[2].type, CP_SQL_BLOB);
    assert_true(c[2].n <= sizeof r->blob);
    memcpy(r->blob, c[2].p, c[2].n);
    r->blob_len = c[2].n;
    r->null_type = c[3].type;
    return 0;
}

static void test_values(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx);
    run(fx.db, cp_sqldb_is_pg(fx.db) ? "CREATE TABLE t (i bigint, s text, b bytea, n text)"
                                     : "CREATE TABLE t (i INTEGER, s TEXT, b BLOB, n TEXT)");
    static const unsigned char bytes[] = {0, 1, 0xff, 0x80, 7};
    cp_sql_val p[4] = {cp_sql_i64(-1234567890123LL), cp_sql_text("caf\xc3\xa9"), cp_sql_blob(bytes, sizeof bytes),
                       cp_sql_null()};
    int64_t changes = 0;
    assert_int_equal(cp_sqldb_exec(fx.db, "INSERT INTO t (i, s, b, n) VALUES ($1, $2, $3, $4)", p, 4, NULL, NULL,
                                   &changes),
                     CP_OK);
    assert_int_equal(changes, 1);
    row_copy r = {0};
    assert_int_equal(cp_sqldb_exec(fx.db, "SELECT i, s, b, n FROM t", NULL, 0, on_values, &r, NULL), CP_OK);
    assert_int_equal(r.rows, 1);
    assert_int_equal(r.i, -1234567890123LL);
    assert_string_equal(r.text, "caf\xc3\xa9");
    assert_int_equal(r.blob_len, sizeof bytes);
    assert_memory_equal(r.blob, bytes, sizeof bytes);
    assert_int_equal(r.null_type, CP_SQL_NULL);
    /* a statement that fails says why, and the next one runs */
    assert_true(cp_sqldb_exec(fx.db, "SELECT nope FROM t", NULL, 0, NULL, NULL, NULL) < 0);
    assert_true(strlen(cp_sqldb_errmsg(fx.db)) > 0);
    r.rows = 0;
    assert_int_equal(cp_sqldb_exec(fx.db, "SELECT i, s, b, n FROM t", NULL, 0, on_values, &r, NULL), CP_OK);
    assert_int_equal(r.rows, 1);
    fixture_close(&fx);
}

/* ---- the statement cache --------------------------------------------------------------------- */

typedef struct nest {
    cp_sqldb *db;
    int depth;
    int64_t sum;
} nest;

/* Each row of "SELECT v FROM n WHERE v <= $1" runs the same statement for v - 1. */
static int on_nested(void *ud, const cp_sql_val *c, size_t n)
{
    nest *k = ud;
    assert_int_equal(n, 1);
    k->sum += c[0].i;
    if (c[0].i > 1 && k->depth < 3) {
        k->depth++;
        cp_sql_val p[1] = {cp_sql_i64(c[0].i - 1)};
        int st = cp_sqldb_exec(k->db, "SELECT v FROM n WHERE v = $1", p, 1, on_nested, k, NULL);
        k->depth--;
        return st;
    }
    return 0;
}

static int on_one(void *ud, const cp_sql_val *c, size_t n)
{
    assert_true(n >= 1);
    *(int64_t *)ud = cp_sql_int(&c[0], -1);
    return 0;
}

static int stop_at_two(void *ud, const cp_sql_val *c, size_t n)
{
    (void)c;
    (void)n;
    return ++*(int *)ud == 2 ? 42 : 0;
}

static void test_cache(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx);
    run(fx.db, "CREATE TABLE n (v bigint)");
    for (int i = 1; i <= 5; i++) {
        cp_sql_val p[1] = {cp_sql_i64(i)};
        assert_int_equal(cp_sqldb_exec(fx.db, "INSERT INTO n (v) VALUES ($1)", p, 1, NULL, NULL, NULL), CP_OK);
    }
    /* the same statement inside its own row callback */
    nest k = {fx.db, 0, 0};
    cp_sql_val p[1] = {cp_sql_i64(5)};
    assert_int_equal(cp_sqldb_exec(fx.db, "SELECT v FROM n WHERE v = $1", p, 1, on_nested, &k, NULL), CP_OK);
    assert_int_equal(k.sum, 5 + 4 + 3 + 2);
    /* a callback that stops: its status comes back, and the statement runs again */
    int seen = 0;
    assert_int_equal(cp_sqldb_exec(fx.db, "SELECT v FROM n ORDER BY v", NULL, 0, stop_at_two, &seen, NULL), 42);
    seen = 0;
    assert_int_equal(cp_sqldb_exec(fx.db, "SELECT v FROM n ORDER BY v", NULL, 0, stop_at_two, &seen, NULL), 42);
    /* more distinct statements than the cache holds, twice over, each answering its own */
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 100; i++) {
            char sql[96];
            snprintf(sql, sizeof sql, "SELECT count(*) + %d FROM n WHERE v >= $1", i);
            cp_sql_val q[1] = {cp_sql_i64(3)};
            int64_t got = -1;
            assert_int_equal(cp_sqldb_exec(fx.db, sql, q, 1, on_one, &got, NULL), CP_OK);
            assert_int_equal(got, 3 + i);
        }
    /* the table changed under a cached statement: it answers from the new table */
    int64_t got = -1;
    assert_int_equal(cp_sqldb_exec(fx.db, "SELECT count(*) FROM n", NULL, 0, on_one, &got, NULL), CP_OK);
    assert_int_equal(got, 5);
    run(fx.db, "DROP TABLE n");
    assert_true(cp_sqldb_exec(fx.db, "SELECT count(*) FROM n", NULL, 0, on_one, &got, NULL) < 0);
    run(fx.db, "CREATE TABLE n (w text, v bigint)");
    run(fx.db, "INSERT INTO n (w, v) VALUES ('a', 7)");
    assert_int_equal(cp_sqldb_exec(fx.db, "SELECT count(*) FROM n", NULL, 0, on_one, &got, NULL), CP_OK);
    assert_int_equal(got, 1);
    assert_int_equal(cp_sqldb_exec(fx.db, "SELECT v FROM n", NULL, 0, on_one, &got, NULL), CP_OK);
    assert_int_equal(got, 7);
    fixture_close(&fx);
}

/* ---- a wrapped connection --------------------------------------------------------------------- */

static void owner_exec(void *conn, int pg, const char *sql)
{
    if (pg) {
        PGresult *r = PQexec(conn, sql);
        ExecStatusType s = PQresultStatus(r);
        if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK) fail_msg("%s: %s", sql, PQresultErrorMessage(r));
        PQclear(r);
    } else {
        char *e = NULL;
        if (sqlite3_exec(conn, sql, NULL, NULL, &e) != SQLITE_OK) fail_msg("%s: %s", sql, e ? e : "?");
    }
}

static void test_wrap(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx);
    int pg = cp_sqldb_is_pg(fx.db);
    run(fx.db, "CREATE TABLE w (v bigint)");
    void *conn = NULL;
    cp_sqldb *w = NULL;
    if (pg) {
        conn = PQconnectdb(fx.spec);
        assert_int_equal(PQstatus(conn), CONNECTION_OK);
        assert_int_equal(cp_sqldb_wrap_pg(conn, &w), CP_OK);
    } else {
        assert_int_equal(sqlite3_open(fx.spec, (sqlite3 **)&conn), SQLITE_OK);
        sqlite3_busy_timeout(conn, 5000);
        assert_int_equal(cp_sqldb_wrap_sqlite(conn, &w), CP_OK);
    }
    assert_int_equal(cp_sqldb_is_pg(w), pg);
    /* statements run in the owner's transaction */
    owner_exec(conn, pg, "BEGIN");
    run(w, "INSERT INTO w (v) VALUES (1)");
    int64_t got = -1;
    assert_int_equal(cp_sqldb_exec(w, "SELECT count(*) FROM w", NULL, 0, on_one, &got, NULL), CP_OK);
    assert_int_equal(got, 1);
    owner_exec(conn, pg, "ROLLBACK");
    assert_int_equal(cp_sqldb_exec(w, "SELECT count(*) FROM w", NULL, 0, on_one, &got, NULL), CP_OK);
    assert_int_equal(got, 0);
    /* closing the wrapper leaves the owner's connection open */
    cp_sqldb_close(w);
    owner_exec(conn, pg, "INSERT INTO w (v) VALUES (2)");
    if (pg) PQfinish(conn);
    else sqlite3_close(conn);
    assert_int_equal(cp_sqldb_exec(fx.db, "SELECT CAST(sum(v) AS bigint) FROM w", NULL, 0, on_one, &got, NULL), CP_OK);
    assert_int_equal(got, 2);
    fixture_close(&fx);
}

/* ---- statements stepped directly (SQLite) ----------------------------------------------------- */

/* SQLite code takes a statement from the same cache exec uses, steps it, and gives it
 * back; two taken at once are two statements. PostgreSQL has none to give. */
static void test_stmt_take(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx);
    cp_sqldb_stmt a, b;
    if (cp_sqldb_is_pg(fx.db)) {
        assert_int_equal(cp_sqldb_stmt_take(fx.db, "SELECT 1", &a), CP_EINVAL);
        assert_null(a.st);
        fixture_close(&fx);
        return;
    }
    run(fx.db, "CREATE TABLE s (v INTEGER)");
    run(fx.db, "INSERT INTO s (v) VALUES (1), (2), (3)");
    int64_t got = -1;
    assert_int_equal(cp_sqldb_exec(fx.db, "SELECT v FROM s ORDER BY v", NULL, 0, on_one, &got, NULL), CP_OK);
    assert_int_equal(cp_sqldb_stmt_take(fx.db, "SELECT v FROM s ORDER BY v", &a), CP_OK);
    assert_int_equal(cp_sqldb_stmt_take(fx.db, "SELECT v FROM s ORDER BY v", &b), CP_OK);
    assert_ptr_not_equal(a.st, b.st);
    assert_int_equal(sqlite3_step(a.st), SQLITE_ROW);
    assert_int_equal(sqlite3_step(b.st), SQLITE_ROW);
    assert_int_equal(sqlite3_step(a.st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int64(a.st, 0), 2);
    assert_int_equal(sqlite3_column_int64(b.st, 0), 1);
    cp_sqldb_stmt_give(fx.db, &a, 1);
    cp_sqldb_stmt_give(fx.db, &b, 0); /* failed: finalized, not cached */
    assert_null(a.st);
    assert_null(b.st);
    /* the one given back starts over */
    assert_int_equal(cp_sqldb_stmt_take(fx.db, "SELECT v FROM s ORDER BY v", &a), CP_OK);
    assert_int_equal(sqlite3_step(a.st), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int64(a.st, 0), 1);
    cp_sqldb_stmt_give(fx.db, &a, 1);
    assert_true(cp_sqldb_stmt_take(fx.db, "SELECT nope FROM s", &a) < 0);
    assert_true(strlen(cp_sqldb_errmsg(fx.db)) > 0);
    fixture_close(&fx);
}

/* ---- text each database takes ------------------------------------------------------------------ */

static void test_text_ok(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx);
    int pg = cp_sqldb_is_pg(fx.db);
    assert_true(cp_sqldb_text_ok(fx.db, "caf\xc3\xa9", 5));
    assert_true(cp_sqldb_text_ok(fx.db, "", 0));
    assert_int_equal(cp_sqldb_text_ok(fx.db, "a\xff", 2), !pg);
    assert_int_equal(cp_sqldb_text_ok(fx.db, "a\0b", 3), !pg);
    assert_int_equal(cp_sqldb_text_ok(fx.db, "\xc3", 1), !pg); /* a cut sequence */
    fixture_close(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_wrap),
        cmocka_unit_test(test_stmt_take),
        cmocka_unit_test(test_text_ok),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
