/* audit_store_test.c -- the audit log in the catalog (src/store/cp_audit.h), on SQLite and
 * (as audit_store_test@pg-s3) on PostgreSQL:
 *  - entries recorded and listed newest first, every field back as written; filters by
 *    time, action and user; keyset pages (ties on time_ms included) that walk every entry
 *    once; a reader limited to namespaces sees only theirs (never entries without one);
 *  - fields bounded and cleaned: cut at a character boundary, control characters and bad
 *    bytes as '?', a long target stored within its size;
 *  - an entry's end (cp_audit_finish), and an unknown id;
 *  - retention: cp_audit_prune, and the pass when the log opens;
 *  - threads recording at once get distinct ids;
 *  - a catalog of schema version 8 (before the audit log) gets the table when opened (SQLite).
 *
 * CP_TEST_BOTH_PAIRS */
#include "pair_util.h"
#include "testutil.h"

#include "store/cp_audit.h"
#include "store/cp_catalog.h"

#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DAY_MS ((int64_t)86400000)

typedef struct fixture {
    char *dir, *spec;
    cp_audit *a;
} fixture;

static void fixture_open(fixture *fx, int64_t retention_ms)
{
    test_pair_require();
    memset(fx, 0, sizeof *fx);
    fx->dir = make_temp_dir("audit-store");
    fx->spec = test_catalog_spec(fx->dir);
    char err[512];
    cp_audit_config c = {.catalog = fx->spec, .retention_ms = retention_ms};
    if (cp_audit_open(&c, &fx->a, err, sizeof err) != CP_OK) fail_msg("audit open: %s", err);
}

static void fixture_reopen(fixture *fx, int64_t retention_ms)
{
    cp_audit_close(fx->a);
    char err[512];
    cp_audit_config c = {.catalog = fx->spec, .retention_ms = retention_ms};
    if (cp_audit_open(&c, &fx->a, err, sizeof err) != CP_OK) fail_msg("audit reopen: %s", err);
}

static void fixture_close(fixture *fx)
{
    cp_audit_close(fx->a);
    test_pair_free(fx->dir, fx->spec, NULL);
}

static int64_t record(fixture *fx, int64_t t, const char *user, const char *action, const char *target, const char *ns)
{
    cp_audit_entry e;
    memset(&e, 0, sizeof e);
    e.time_ms = t;
    cp_audit_sets(e.user, sizeof e.user, user);
    cp_audit_sets(e.role, sizeof e.role, "admin");
    cp_audit_sets(e.action, sizeof e.action, action);
    cp_audit_sets(e.target, sizeof e.target, target);
    cp_audit_sets(e.ns, sizeof e.ns, ns);
    cp_audit_sets(e.outcome, sizeof e.outcome, "ok");
    cp_audit_sets(e.remote, sizeof e.remote, "127.0.0.1");
    snprintf(e.detail, sizeof e.detail, "{\"n\":%lld}", (long long)t);
    char err[512];
    if (cp_audit_record(fx->a, &e, err, sizeof err) != CP_OK) fail_msg("record: %s", err);
    assert_true(e.id > 0);
    return e.id;
}

/* What a listing returned. */
typedef struct listed {
    cp_audit_entry e[64];
    size_t n;
} listed;

static int on_entry(void *ud, const cp_audit_entry *e)
{
    listed *l = ud;
    if (l->n == CP_ARRAY_LEN(l->e)) return 1;
    l->e[l->n++] = *e;
    return 0;
}

static void list(fixture *fx, const cp_audit_filter *f, listed *out)
{
    out->n = 0;
    char err[512];
    int st = cp_audit_list(fx->a, f, on_entry, out, err, sizeof err);
    if (st != CP_OK) fail_msg("list: %s (%d)", err, st);
}

/* ---- record and list ----------------------------------------------------------------------- */

static void test_record_list(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx, 0);
    const int64_t t0 = 1700000000000LL;
    /* three entries share a time: the keyset must order them by id */
    record(&fx, t0, "alice", "dump.delete", "1", "shop");
    record(&fx, t0 + 10, "bob", "calls.export_csv", "from=1&to=2", "");
    int64_t tie1 = record(&fx, t0 + 20, "alice", "import", "name=a.trcbin", "shop");
    int64_t tie2 = record(&fx, t0 + 20, "carol", "dump.delete", "2", "other");
    int64_t tie3 = record(&fx, t0 + 20, "alice", "dumps.download", "namespace=shop", "shop");
    record(&fx, t0 + 30, "bob", "tree.export", "x", "other");
    assert_true(tie1 < tie2 && tie2 < tie3);

    listed l;
    cp_audit_filter f;
    memset(&f, 0, sizeof f);
    list(&fx, &f, &l);
    assert_int_equal(l.n, 6);
    for (size_t i = 1; i < l.n; i++) /* newest first, ids descending among equal times */
        assert_true(l.e[i - 1].time_ms > l.e[i].time_ms ||
                    (l.e[i - 1].time_ms == l.e[i].time_ms && l.e[i - 1].id > l.e[i].id));
    assert_int_equal(l.e[0].time_ms, t0 + 30);
    assert_int_equal(l.e[1].id, tie3);
    /* every field back as written */
    const cp_audit_entry *e = &l.e[4];
    assert_string_equal(e->user, "bob");
    assert_string_equal(e->role, "admin");
    assert_string_equal(e->action, "calls.export_csv");
    assert_string_equal(e->target, "from=1&to=2");
    assert_string_equal(e->ns, "");
    assert_string_equal(e->outcome, "ok");
    assert_string_equal(e->remote, "127.0.0.1");
    assert_string_equal(e->detail, "{\"n\":1700000000010}");

    /* filters */
    f.action = "dump.delete";
    list(&fx, &f, &l);
    assert_int_equal(l.n, 2);
    f.action = NULL;
    f.user = "alice";
    list(&fx, &f, &l);
    assert_int_equal(l.n, 3);
    f.user = NULL;
    f.from_ms = t0 + 10;
    f.to_ms = t0 + 30;
    list(&fx, &f, &l);
    assert_int_equal(l.n, 4); /* [t0+10, t0+30) */

    /* keyset pages of 1: every entry once, in order */
    memset(&f, 0, sizeof f);
    listed all;
    list(&fx, &f, &all);
    f.limit = 1;
    size_t seen = 0;
    for (;;) {
        list(&fx, &f, &l);
        if (!l.n) break;
        assert_int_equal(l.n, 1);
        assert_true(seen < all.n);
        assert_int_equal(l.e[0].id, all.e[seen].id);
        seen++;
        f.before_ms = l.e[0].time_ms;
        f.before_id = l.e[0].id;
    }
    assert_int_equal(seen, all.n);

    /* namespace scoping: only the listed namespaces, never an entry without one */
    memset(&f, 0, sizeof f);
    const char *shop[] = {"shop"};
    f.ns_limited = 1;
    f.ns_in = shop;
    f.nns_in = 1;
    list(&fx, &f, &l);
    assert_int_equal(l.n, 3);
    for (size_t i = 0; i < l.n; i++) assert_string_equal(l.e[i].ns, "shop");
    const char *both[] = {"other", "shop"};
    f.ns_in = both;
    f.nns_in = 2;
    list(&fx, &f, &l);
    assert_int_equal(l.n, 5);
    f.nns_in = 0; /* limited to nothing */
    list(&fx, &f, &l);
    assert_int_equal(l.n, 0);
    fixture_close(&fx);
}

/* ---- bounds ---------------------------------------------------------------------------------- */

static void test_bounds(void **state)
{
    (void)state;
    char small[6];
    cp_audit_set(small, sizeof small, "abcdefgh", 8);
    assert_string_equal(small, "abcde");
    cp_audit_sets(small, sizeof small, "abcd\xc3\xa9"); /* "é" would need bytes 5 and 6: left out */
    assert_string_equal(small, "abcd");
    char buf[64];
    cp_audit_set(buf, sizeof buf, "a\x01" "b\nc\x7f" "d\xff" "e\xc2\x85" "f\0g", 14);
    assert_string_equal(buf, "a?b?c?d?e?f?g");
    cp_audit_sets(buf, sizeof buf, "caf\xc3\xa9 \xe2\x82\xac"); /* valid UTF-8 stays */
    assert_string_equal(buf, "caf\xc3\xa9 \xe2\x82\xac");

    fixture fx;
    fixture_open(&fx, 0);
    char *big = malloc(5000);
    assert_non_null(big);
    memset(big, 'x', 4999);
    big[4999] = 0;
    record(&fx, 1700000000000LL, "u", "import", big, "");
    free(big);
    listed l;
    cp_audit_filter f;
    memset(&f, 0, sizeof f);
    list(&fx, &f, &l);
    assert_int_equal(l.n, 1);
    assert_int_equal(strlen(l.e[0].target), CP_AUDIT_MAX_TARGET - 1);
    fixture_close(&fx);
}

/* ---- finish ---------------------------------------------------------------------------------- */

static void test_finish(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx, 0);
    int64_t id = record(&fx, 1700000000000LL, "u", "calls.export_csv", "q", "");
    char err[512];
    assert_int_equal(cp_audit_finish(fx.a, id, "ok", "{\"rows\":7,\"complete\":true}", err, sizeof err), CP_OK);
    assert_int_equal(cp_audit_finish(fx.a, id + 1000, "ok", "{}", err, sizeof err), CP_ENOTFOUND);
    listed l;
    cp_audit_filter f;
    memset(&f, 0, sizeof f);
    list(&fx, &f, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.e[0].detail, "{\"rows\":7,\"complete\":true}");
    fixture_close(&fx);
}

/* ---- retention ------------------------------------------------------------------------------- */

static void test_retention(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx, 0);
    int64_t now = cp_now_ms();
    record(&fx, now - 400 * DAY_MS, "u", "import", "very old", "");
    record(&fx, now - 10 * DAY_MS, "u", "import", "ten days", "");
    record(&fx, now, "u", "import", "now", "");
    uint64_t removed = 0;
    char err[512];
    assert_int_equal(cp_audit_prune(fx.a, now - 365 * DAY_MS, &removed, err, sizeof err), CP_OK);
    assert_int_equal(removed, 1);
    /* the pass when the log opens: a day's retention leaves the newest only */
    fixture_reopen(&fx, DAY_MS);
    listed l;
    cp_audit_filter f;
    memset(&f, 0, sizeof f);
    list(&fx, &f, &l);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.e[0].target, "now");
    fixture_close(&fx);
}

/* ---- threads --------------------------------------------------------------------------------- */

#define THREADS 4
#define PER_THREAD 40

typedef struct rec_arg {
    cp_audit *a;
    int64_t ids[PER_THREAD];
    int st;
} rec_arg;

static void *rec_main(void *p)
{
    rec_arg *r = p;
    for (int i = 0; i < PER_THREAD && r->st == CP_OK; i++) {
        cp_audit_entry e;
        memset(&e, 0, sizeof e);
        cp_audit_sets(e.user, sizeof e.user, "t");
        cp_audit_sets(e.action, sizeof e.action, "import");
        cp_audit_sets(e.outcome, sizeof e.outcome, "ok");
        char err[256];
        r->st = cp_audit_record(r->a, &e, err, sizeof err);
        r->ids[i] = e.id;
    }
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void test_threads(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx, 0);
    pthread_t th[THREADS];
    static rec_arg args[THREADS];
    for (int i = 0; i < THREADS; i++) {
        args[i] = (rec_arg){.a = fx.a};
        assert_int_equal(pthread_create(&th[i], NULL, rec_main, &args[i]), 0);
    }
    int64_t ids[THREADS * PER_THREAD];
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].st, CP_OK);
        memcpy(ids + i * PER_THREAD, args[i].ids, sizeof args[i].ids);
    }
    qsort(ids, THREADS * PER_THREAD, sizeof ids[0], cmp_i64);
    for (int i = 1; i < THREADS * PER_THREAD; i++) assert_true(ids[i] > ids[i - 1]);
    fixture_close(&fx);
}

/* ---- an older catalog ------------------------------------------------------------------------- */

static void test_migration(void **state)
{
    (void)state;
    if (test_pair_pg()) skip(); /* SQLite's migrations; pg_catalog_test checks PostgreSQL's count */
    char *dir = make_temp_dir("audit-mig");
    char path[1200];
    snprintf(path, sizeof path, "%s/catalog.db", dir);
    sqlite3 *db;
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    assert_int_equal(sqlite3_exec(db,
                                  "PRAGMA journal_mode = WAL;"
                                  "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, applied_ms INTEGER NOT NULL);",
                                  NULL, NULL, NULL),
                     SQLITE_OK);
    for (int v = 1; v <= 8; v++) { /* a data directory of the version before the audit log */
        assert_int_equal(sqlite3_exec(db, cp_catalog_sqlite_migration(v), NULL, NULL, NULL), SQLITE_OK);
        char rec[128];
        snprintf(rec, sizeof rec, "INSERT INTO schema_migrations VALUES (%d, 1)", v);
        assert_int_equal(sqlite3_exec(db, rec, NULL, NULL, NULL), SQLITE_OK);
    }
    sqlite3_close(db);
    fixture fx = {.dir = dir, .spec = strdup(path)};
    char err[512];
    cp_audit_config c = {.catalog = fx.spec, .retention_ms = 365 * DAY_MS};
    if (cp_audit_open(&c, &fx.a, err, sizeof err) != CP_OK) fail_msg("audit open: %s", err);
    record(&fx, cp_now_ms(), "u", "dump.delete", "1", "shop");
    assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *s;
    assert_int_equal(sqlite3_prepare_v2(db, "SELECT max(version), (SELECT count(*) FROM audit_log) FROM schema_migrations",
                                        -1, &s, NULL),
                     SQLITE_OK);
    assert_int_equal(sqlite3_step(s), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(s, 0), cp_catalog_sqlite_schema_version());
    assert_int_equal(sqlite3_column_int(s, 1), 1);
    sqlite3_finalize(s);
    sqlite3_close(db);
    fixture_close(&fx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_record_list), cmocka_unit_test(test_bounds),  cmocka_unit_test(test_finish),
        cmocka_unit_test(test_retention),   cmocka_unit_test(test_threads), cmocka_unit_test(test_migration),
    };
    return cmocka_run_group_tests_name(test_pair_name(), tests, NULL, NULL);
}
