/* cold_files_test.c -- the readers' cold-file listing (cp_reader_ops.cold_files), bounds
 * over hot and cold calls, and a window table dropped under a search, on both catalogs
 * (CP_TEST_BOTH_PAIRS: SQLite, and PostgreSQL with CP_TEST_PAIR=pg-s3).
 *
 * The catalog's schema is made by the catalog (cp_catalog_open: its migrations); the rows
 * are written with plain SQL (sqlite3 / libpq): s3_files rows, the inverted_indexes
 * registry and its inv_* tables, a few hot window tables. Every listing
 * is checked against the same rules done here in plain C over the fixture:
 *   - calls files, status completed, [start, end) overlapping [from, to), the namespace;
 *   - the file's duration range [lower, upper) (seed Appendix A, duration_range = the
 *     exclusive upper bound; an unknown value: any duration) overlapping [min, max];
 *   - a $name=value term skips a file whose indexed_params has the name (ASCII
 *     case-insensitively) when no inverted-index row of that name for the file has a
 *     value containing the term's value (ASCII case-insensitively);
 *   - order: start, namespace (bytes), duration_range, uuid.
 */
#include "testutil.h"

#include "pair_util.h"
#include "store/cp_catalog.h"
#include "store/cp_cold.h"
#include "store/cp_hot.h"
#include "store/cp_ostore.h"
#include "store/cp_stats.h"
#include "store/hot/hot_internal.h"
#include "store/catalog/pg_internal.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define H0 1767358800000LL /* 2026-01-02 13:00:00 UTC */
#define HOUR 3600000LL
#define MIN_MS 60000LL

/* ---- a catalog reached with plain SQL ------------------------------------------------------ */

typedef struct rawdb {
    sqlite3 *lite;
    PGconn *pg;
} rawdb;

static void raw_exec(rawdb *d, const char *sql)
{
    if (d->lite) {
        char *msg = NULL;
        if (sqlite3_exec(d->lite, sql, NULL, NULL, &msg) != SQLITE_OK) fail_msg("%s: %s", sql, msg);
        return;
    }
    PGresult *r = PQexec(d->pg, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("%s: %s", sql, PQerrorMessage(d->pg));
    PQclear(r);
}

/* SQL string literal of s (quotes doubled). */
static void lit(cp_buf *b, const char *s)
{
    if (!s) {
        assert_int_equal(cp_buf_puts(b, "NULL"), CP_OK);
        return;
    }
    cp_buf_putc(b, '\'');
    for (; *s; s++) {
        if (*s == '\'') cp_buf_putc(b, '\'');
        cp_buf_putc(b, (uint8_t)*s);
    }
    cp_buf_putc(b, '\'');
}

typedef struct fixture {
    char *dir;
    char *spec;
    rawdb db;
    cp_catalog *cat; /* made the schema (its migrations) */
    cp_reader *rd;
} fixture;

static void fixture_open(fixture *fx)
{
    memset(fx, 0, sizeof *fx);
    fx->dir = make_temp_dir("cold");
    fx->spec = test_catalog_spec(fx->dir);
    char err[256];
    if (cp_catalog_open(fx->spec, &fx->cat, err, sizeof err) != CP_OK) fail_msg("catalog: %s", err);
    if (!test_pair_pg()) {
        assert_int_equal(sqlite3_open(fx->spec, &fx->db.lite), SQLITE_OK);
        sqlite3_busy_timeout(fx->db.lite, 5000);
    } else {
        fx->db.pg = PQconnectdb(fx->spec);
        if (PQstatus(fx->db.pg) != CONNECTION_OK) fail_msg("connect: %s", PQerrorMessage(fx->db.pg));
    }
    if (cp_reader_open(fx->spec, &fx->rd, err, sizeof err) != CP_OK) fail_msg("reader: %s", err);
}

static void fixture_close(fixture *fx)
{
    cp_reader_close(fx->rd);
    cp_catalog_close(fx->cat);
    if (fx->db.lite) sqlite3_close(fx->db.lite);
    if (fx->db.pg) PQfinish(fx->db.pg);
    remove_tree(fx->dir);
    free(fx->dir);
    free(fx->spec);
}

/* ---- the cold fixture -------------------------------------------------------------------- */

typedef struct ffile {
    const char *uuid, *type, *ns, *status;
    int64_t range;             /* s3_files.duration_range */
    int start_h, end_h;        /* hours after H0 */
    int64_t min_off, max_off;  /* min_time / max_time - H0 */
    const char *indexed;       /* indexed_params as stored (JSON) */
    const char *names[3];      /* ... the names it holds, for the reference */
    const char *claim;
} ffile;

static const ffile files[] = {
    {"f01", "calls", "ns-a", "completed", 10, 0, 1, 60000, 3000000, "[\"user\",\"Region\"]", {"user", "Region"},
     "20260102_1300"},
    {"f02", "calls", "ns-a", "completed", 100, 0, 1, 1000, 3500000, "[\"user\"]", {"user"}, "20260102_1300"},
    {"f03", "calls", "ns-b", "completed", 1, 0, 1, 5, 3599999, "[]", {0}, "20260102_1300"},
    {"f04", "calls", "ns-a", "completed", 10, 1, 2, HOUR + 10, HOUR + 20, "[\"user\"]", {"user"}, "20260102_1400"},
    {"f05", "calls", "ns-a", "transferring", 1000, 0, 1, -500000, 100, "[\"user\"]", {"user"}, "20260102_1300"},
    {"f06", "dumps", "ns-a", "completed", 0, 0, 1, -400000, 100, "[]", {0}, "20260102_1300"},
    {"f07", "calls", "ns-b", "completed", 2147483647, 2, 3, 2 * HOUR, 3 * HOUR - 1, " [ \"US\\u0045R\" , \"x\\\"y\" ] ",
     {"USER", "x\"y"}, "20260102_1500"},
    {"f08", "calls", "ns-a", "completed", 5000, 0, 1, 400000, 900000, "[\"user\"]", {"user"}, "20260102_1305_1"},
    {"f09", "calls", "x", "completed", 7, 0, 1, 2, 3, "[\"user\"]", {"user"}, "20260102_1300"},
    {"f10", "calls", "ns-a", "to_delete", 10, 0, 1, -600000, 5000000, "[]", {0}, "20260102_1300"},
    {"f11", "calls", "ns-b", "completed", 30000, 1, 2, HOUR + 5, 2 * HOUR - 5, "not json", {0}, "20260102_1400"},
    {"f12", "calls", "ns-a", "completed", 90000, 0, 1, 1, 2, "[\"Region\",\"user\"]", {"Region", "user"},
     "20260102_1300"},
};

typedef struct frow {
    const char *param, *uuid, *value;
} frow;

static const frow inv_rows[] = {
    {"user", "f01", "Alice"},   {"user", "f01", "bob"},    {"user", "f02", "carol"},
    {"user", "f04", "alice-2"}, {"user", "f08", "Zed%_\\"}, {"USER", "f07", "ALICE"},
    {"Region", "f01", "eu-west"}, {"user", "f05", "alice"}, {"user", "f12", "dave"},
    {"Region", "f12", "US-east"}, {"user", "f09", "\xc3\x9cml"},
};

static const char *const params[] = {"user", "USER", "Region"};

static void put_files(fixture *fx)
{
    cp_buf b;
    cp_buf_init(&b);
    for (size_t i = 0; i < CP_ARRAY_LEN(files); i++) {
        const ffile *f = &files[i];
        char key[128], url[160];
        snprintf(key, sizeof key, "2026/01/02/%02d/%s/%s.parquet", 13 + f->start_h, f->ns, f->uuid);
        snprintf(url, sizeof url, "s3://bucket/pre/%s", key);
        cp_buf_reset(&b);
        cp_buf_puts(&b, "INSERT INTO s3_files (uuid, start_time, end_time, file_type, dump_type, namespace,"
                        " duration_range, file_name, status, services, created_time, api_version, rows_count,"
                        " file_size, remote_storage_path, local_file_path, object_key, min_time, max_time,"
                        " indexed_params, claim) VALUES (");
        lit(&b, f->uuid);
        cp_buf_printf(&b, ", %lld, %lld, ", (long long)(H0 + f->start_h * HOUR), (long long)(H0 + f->end_h * HOUR));
        lit(&b, f->type);
        cp_buf_puts(&b, ", ");
        lit(&b, strcmp(f->type, "dumps") ? NULL : "td");
        cp_buf_puts(&b, ", ");
        lit(&b, f->ns);
        cp_buf_printf(&b, ", %lld, 'file', ", (long long)f->range);
        lit(&b, f->status);
        cp_buf_printf(&b, ", '[\"svc-1\",\"svc-2\"]', 1, 'v1', %zu, %zu, ", 100 + i, 1000 + i);
        lit(&b, url);
        cp_buf_puts(&b, ", NULL, ");
        lit(&b, key);
        cp_buf_printf(&b, ", %lld, %lld, ", (long long)(H0 + f->min_off), (long long)(H0 + f->max_off));
        lit(&b, f->indexed);
        cp_buf_puts(&b, ", ");
        lit(&b, f->claim);
        cp_buf_puts(&b, ")");
        cp_buf_putc(&b, 0);
        raw_exec(&fx->db, (const char *)b.data);
    }
    for (size_t i = 0; i < CP_ARRAY_LEN(params); i++) {
        char table[CP_COLD_INV_NAME], sql[512];
        cp_cold_inv_table(params[i], strlen(params[i]), table);
        snprintf(sql, sizeof sql,
                 "CREATE TABLE \"%s\" (value TEXT NOT NULL, file_id TEXT NOT NULL, PRIMARY KEY (value, file_id));"
                 "INSERT INTO inverted_indexes (param_name, table_name, created_time) VALUES ('%s', '%s', 1)",
                 table, params[i], table);
        raw_exec(&fx->db, sql);
    }
    /* a registered name whose table is not ours: never read */
    raw_exec(&fx->db, "INSERT INTO inverted_indexes (param_name, table_name, created_time)"
                      " VALUES ('uSeR ', 'users; DROP TABLE s3_files', 1)");
    for (size_t i = 0; i < CP_ARRAY_LEN(inv_rows); i++) {
        char table[CP_COLD_INV_NAME];
        cp_cold_inv_table(inv_rows[i].param, strlen(inv_rows[i].param), table);
        cp_buf_reset(&b);
        cp_buf_printf(&b, "INSERT INTO \"%s\" (value, file_id) VALUES (", table);
        lit(&b, inv_rows[i].value);
        cp_buf_puts(&b, ", ");
        lit(&b, inv_rows[i].uuid);
        cp_buf_puts(&b, ")");
        cp_buf_putc(&b, 0);
        raw_exec(&fx->db, (const char *)b.data);
    }
    cp_buf_free(&b);
}

/* ---- the reference --------------------------------------------------------------------------- */

static int ci_eq(const char *a, size_t an, const char *b, size_t bn)
{
    if (an != bn) return 0;
    for (size_t i = 0; i < an; i++) {
        unsigned char x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x >= 'A' && x <= 'Z') x = (unsigned char)(x + 32);
        if (y >= 'A' && y <= 'Z') y = (unsigned char)(y + 32);
        if (x != y) return 0;
    }
    return 1;
}

static int ci_has(const char *h, const char *n, size_t nn)
{
    size_t hn = strlen(h);
    for (size_t i = 0; i + nn <= hn; i++)
        if (ci_eq(h + i, nn, n, nn)) return 1;
    return 0;
}

/* [lo, hi) of a duration range (the seed's table, written out again). */
static void range_span(int64_t upper, int64_t *lo, int64_t *hi)
{
    static const int64_t up[] = {1, 10, 100, 1000, 5000, 30000, 90000, 2147483647};
    static const int64_t low[] = {0, 1, 10, 100, 1000, 5000, 30000, 90000};
    *lo = 0;
    *hi = INT64_MAX;
    for (size_t i = 0; i < 8; i++)
        if (up[i] == upper) {
            *lo = low[i];
            *hi = i == 7 ? INT64_MAX : up[i];
        }
}

static int term_skips(const ffile *f, const cp_cold_param *t)
{
    int indexed = 0;
    for (size_t k = 0; k < 3 && f->names[k]; k++)
        if (ci_eq(f->names[k], strlen(f->names[k]), t->name, t->name_len)) indexed = 1;
    if (!indexed) return 0;
    for (size_t i = 0; i < CP_ARRAY_LEN(inv_rows); i++) {
        const frow *v = &inv_rows[i];
        if (strcmp(v->uuid, f->uuid) || !ci_eq(v->param, strlen(v->param), t->name, t->name_len)) continue;
        if (ci_has(v->value, t->value, t->value_len)) return 0;
    }
    return 1;
}

static int file_cmp(const void *pa, const void *pb)
{
    const ffile *a = *(const ffile *const *)pa, *b = *(const ffile *const *)pb;
    if (a->start_h != b->start_h) return a->start_h < b->start_h ? -1 : 1;
    int c = strcmp(a->ns, b->ns);
    if (c) return c;
    if (a->range != b->range) return a->range < b->range ? -1 : 1;
    return strcmp(a->uuid, b->uuid);
}

/* The files q lists, in order (uuids into out), and how many the index skips. */
static size_t expected(const cp_cold_query *q, const ffile **out, size_t *skipped)
{
    size_t n = 0;
    *skipped = 0;
    for (size_t i = 0; i < CP_ARRAY_LEN(files); i++) {
        const ffile *f = &files[i];
        int64_t start = H0 + f->start_h * HOUR, end = H0 + f->end_h * HOUR, lo, hi;
        if (strcmp(f->type, "calls") || strcmp(f->status, "completed")) continue;
        if (!(start < q->to_ms && end > q->from_ms)) continue;
        if (q->ns && strcmp(q->ns, f->ns)) continue;
        range_span(f->range, &lo, &hi);
        if (!(lo <= q->max_duration_ms && hi > q->min_duration_ms && q->min_duration_ms <= q->max_duration_ms))
            continue;
        int skip = 0;
        for (size_t k = 0; k < q->nparams && !skip; k++) skip = term_skips(f, &q->params[k]);
        if (skip) {
            (*skipped)++;
            continue;
        }
        out[n++] = f;
    }
    qsort(out, n, sizeof *out, file_cmp);
    return n;
}

/* ---- listing ----------------------------------------------------------------------------------- */

typedef struct listed {
    char uuid[32][8];
    size_t n;
} listed;

static int on_file(void *ud, const cp_cold_file *f)
{
    listed *l = ud;
    assert_true(l->n < 32);
    snprintf(l->uuid[l->n++], sizeof l->uuid[0], "%s", f->uuid);
    return 0;
}

static void check_query(fixture *fx, const cp_cold_query *q)
{
    const ffile *want[32];
    size_t want_skipped;
    size_t n = expected(q, want, &want_skipped);
    listed got = {0};
    size_t skipped = 99;
    int st = cp_reader_cold_files(fx->rd, q, on_file, &got, &skipped);
    if (st != CP_OK) fail_msg("cold_files: %d %s", st, cp_reader_errmsg(fx->rd));
    if (got.n != n || skipped != want_skipped) {
        fprintf(stderr, "query [%lld, %lld) ns %s dur [%lld, %lld] %zu terms:", (long long)(q->from_ms - H0),
                (long long)(q->to_ms - H0), q->ns ? q->ns : "-", (long long)q->min_duration_ms,
                (long long)q->max_duration_ms, q->nparams);
        for (size_t i = 0; i < q->nparams; i++)
            fprintf(stderr, " %.*s=%.*s", (int)q->params[i].name_len, q->params[i].name,
                    (int)q->params[i].value_len, q->params[i].value);
        fprintf(stderr, "\n  got %zu (skipped %zu):", got.n, skipped);
        for (size_t i = 0; i < got.n; i++) fprintf(stderr, " %s", got.uuid[i]);
        fprintf(stderr, "\n  want %zu (skipped %zu):", n, want_skipped);
        for (size_t i = 0; i < n; i++) fprintf(stderr, " %s", want[i]->uuid);
        fprintf(stderr, "\n");
    }
    assert_int_equal(got.n, n);
    assert_int_equal(skipped, want_skipped);
    for (size_t i = 0; i < n; i++) assert_string_equal(got.uuid[i], want[i]->uuid);
}

static cp_cold_param term(const char *name, const char *value)
{
    cp_cold_param p = {name, value, strlen(name), strlen(value)};
    return p;
}

static void test_cold_files(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx);
    put_files(&fx);

    static const int64_t ranges[][2] = {
        {0, INT64_MAX}, {H0, H0 + HOUR}, {H0 + HOUR - 1, H0 + HOUR + 1}, {H0 + HOUR, H0 + 2 * HOUR},
        {H0 - HOUR, H0}, {H0 + 3 * HOUR, INT64_MAX}, {H0 + 30 * MIN_MS, H0 + 150 * MIN_MS},
    };
    static const char *const nss[] = {NULL, "ns-a", "ns-b", "x", "nope", "NS-A"};
    static const int64_t durs[][2] = {
        {0, INT64_MAX}, {0, 0}, {5, 5}, {10, 99}, {9, 10}, {1000, 1000}, {999, 999}, {90000, INT64_MAX},
        {100000, 100000}, {89999, 89999}, {50, 20}, {2147483647, INT64_MAX},
    };
    cp_cold_param t[][3] = {
        {{0}},
        {term("user", "alice")},
        {term("USER", "ALI")},
        {term("user", "zed%_\\")},
        {term("user", "%")},
        {term("user", "_")},
        {term("user", "nobody")},
        {term("region", "EU")},
        {term("Region", "west"), term("user", "bob")},
        {term("Region", "west"), term("user", "carol")},
        {term("unknown", "x")},
        {term("user", "")},
        {term("x\"y", "anything")},
        {term("user", "\xc3\xbcml")},  /* no Unicode folding: the search folds ASCII only */
        {term("user", "\xc3\x9cML")},
        {term("user", "a"), term("user", "e"), term("region", "-")},
    };
    static const size_t nt[] = {0, 1, 1, 1, 1, 1, 1, 1, 2, 2, 1, 1, 1, 1, 1, 3};
    size_t queries = 0;
    for (size_t a = 0; a < CP_ARRAY_LEN(ranges); a++)
        for (size_t b = 0; b < CP_ARRAY_LEN(nss); b++)
            for (size_t c = 0; c < CP_ARRAY_LEN(durs); c++)
                for (size_t d = 0; d < CP_ARRAY_LEN(nt); d++) {
                    /* all terms on the widest queries; a few elsewhere */
                    if ((a || b || c) && d % 5 != (a + b + c) % 5) continue;
                    cp_cold_query q = {ranges[a][0], ranges[a][1], nss[b], durs[c][0], durs[c][1], t[d], nt[d], NULL};
                    check_query(&fx, &q);
                    queries++;
                }
    assert_true(queries > 500);
    /* an empty or inverted range */
    cp_cold_query q = {H0, H0, NULL, 0, INT64_MAX, NULL, 0, NULL};
    check_query(&fx, &q);
    q.from_ms = H0 + HOUR;
    check_query(&fx, &q);
    fixture_close(&fx);
}

/* A term PostgreSQL cannot take as text (not UTF-8) proves nothing there: no file is
 * skipped for it, nor a namespace that is not UTF-8 listed. SQLite takes any bytes, so
 * its index rules as for any other term. */
static void test_term_not_text(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx);
    put_files(&fx);
    cp_cold_param t[2] = {term("user", "\xff"), term("us\xfer", "alice")};
    for (size_t i = 0; i < 2; i++) {
        cp_cold_query q = {0, INT64_MAX, NULL, 0, INT64_MAX, &t[i], 1, NULL};
        if (!test_pair_pg()) {
            check_query(&fx, &q);
            continue;
        }
        cp_cold_query all = {0, INT64_MAX, NULL, 0, INT64_MAX, NULL, 0, NULL};
        listed want = {0}, got = {0};
        size_t skipped = 99;
        assert_int_equal(cp_reader_cold_files(fx.rd, &all, on_file, &want, &skipped), CP_OK);
        assert_int_equal(cp_reader_cold_files(fx.rd, &q, on_file, &got, &skipped), CP_OK);
        assert_int_equal(skipped, 0);
        assert_true(want.n > 0);
        assert_int_equal(got.n, want.n);
        for (size_t k = 0; k < got.n; k++) assert_string_equal(got.uuid[k], want.uuid[k]);
    }
    cp_cold_query q = {0, INT64_MAX, "ns-\xff", 0, INT64_MAX, NULL, 0, NULL};
    check_query(&fx, &q); /* no such namespace either way */
    fixture_close(&fx);
}

/* Every field of a listed file comes from its row. */
typedef struct one_file {
    int seen;
} one_file;

static int on_f01(void *ud, const cp_cold_file *f)
{
    one_file *o = ud;
    if (strcmp(f->uuid, "f01")) return 0;
    o->seen++;
    assert_string_equal(f->key, "2026/01/02/13/ns-a/f01.parquet");
    assert_string_equal(f->url, "s3://bucket/pre/2026/01/02/13/ns-a/f01.parquet");
    assert_null(f->local_path);
    assert_string_equal(f->file_type, "calls");
    assert_null(f->dump_type);
    assert_string_equal(f->ns, "ns-a");
    assert_int_equal(f->duration_range, 10);
    assert_int_equal(f->start_ms, H0);
    assert_int_equal(f->end_ms, H0 + HOUR);
    assert_int_equal(f->min_ts, H0 + 60000);
    assert_int_equal(f->max_ts, H0 + 3000000);
    assert_int_equal(f->rows, 100);
    assert_int_equal(f->size, 1000);
    assert_string_equal(f->status, "completed");
    assert_string_equal(f->services, "[\"svc-1\",\"svc-2\"]");
    assert_string_equal(f->indexed_params, "[\"user\",\"Region\"]");
    assert_string_equal(f->claim, "20260102_1300");
    return 0;
}

static int stop_second(void *ud, const cp_cold_file *f)
{
    (void)f;
    int *n = ud;
    return ++*n == 2 ? 42 : 0;
}

static void test_cold_file_fields(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx);
    put_files(&fx);
    one_file o = {0};
    cp_cold_query q = {0, INT64_MAX, NULL, 0, INT64_MAX, NULL, 0, NULL};
    assert_int_equal(cp_reader_cold_files(fx.rd, &q, on_f01, &o, NULL), CP_OK);
    assert_int_equal(o.seen, 1);
    /* the callback's non-zero result stops the listing and comes back */
    int n = 0;
    assert_int_equal(cp_reader_cold_files(fx.rd, &q, stop_second, &n, NULL), 42);
    assert_int_equal(n, 2);
    /* the reader is fine afterwards */
    o.seen = 0;
    assert_int_equal(cp_reader_cold_files(fx.rd, &q, on_f01, &o, NULL), CP_OK);
    assert_int_equal(o.seen, 1);
    fixture_close(&fx);
}

/* ---- hot windows by hand ------------------------------------------------------------------------ */

/* A window table pair (suffix "YYYYMMDD_HHMM") with its inventory rows. */
static void put_window(fixture *fx, const char *suffix, int64_t start, int64_t end, int rows)
{
    cp_buf b;
    cp_buf_init(&b);
    /* the writers' own DDL */
    if (fx->db.lite) assert_int_equal(cp_hot_window_ddl(&b, suffix), CP_OK);
    else assert_int_equal(cp_pg_window_ddl(&b, suffix), CP_OK);
    cp_buf_putc(&b, 0);
    raw_exec(&fx->db, (const char *)b.data);
    cp_buf_reset(&b);
    cp_buf_printf(&b,
                  "INSERT INTO inventory (uuid, start_time, end_time, status, table_type, table_name, created_time,"
                  " rows_count, table_size, total_table_size) VALUES"
                  " ('c-%s', %lld, %lld, 'ready', 'calls', 'calls_%s', 1, %d, 0, 0)",
                  suffix, (long long)start, (long long)end, suffix, rows);
    cp_buf_putc(&b, 0);
    raw_exec(&fx->db, (const char *)b.data);
    cp_buf_free(&b);
}

/* One call row (id = record index) at ts. */
static void put_call(fixture *fx, const char *suffix, int id, int64_t ts)
{
    char sql[1024];
    snprintf(sql, sizeof sql,
             "INSERT INTO calls_%s (id, time, cpu_time, wait_time, memory_used, duration, non_blocking,"
             " queue_wait_duration, suspend_duration, calls, transactions, logs_generated, logs_written, file_read,"
             " file_written, net_read, net_written, namespace, service_name, pod_name, restart_time, method, params,"
             " trace_file_index, buffer_offset, record_index, method_name, thread, error, pod_hash, trace_reason)"
             " VALUES (%d, %lld, 1, 2, 3, 4, 0, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 'ns-a', 'svc-1', 'pod-1', 1000,"
             " 3, '{}', 1, 2, %d, 'm.M()V', 'main', 0, 77, 'trace_not_found')",
             suffix, id, (long long)ts, id);
    raw_exec(&fx->db, sql);
}

static void test_bounds(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx);
    int64_t a = 1, b = 1;
    assert_int_equal(cp_reader_bounds(fx.rd, &a, &b), CP_OK); /* nothing at all */
    assert_int_equal(a, 0);
    assert_int_equal(b, 0);
    put_files(&fx);
    /* completed calls files only (f05, f06, f10 reach further) */
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (size_t i = 0; i < CP_ARRAY_LEN(files); i++) {
        if (strcmp(files[i].type, "calls") || strcmp(files[i].status, "completed")) continue;
        if (H0 + files[i].min_off < lo) lo = H0 + files[i].min_off;
        if (H0 + files[i].max_off > hi) hi = H0 + files[i].max_off;
    }
    assert_int_equal(cp_reader_bounds(fx.rd, &a, &b), CP_OK);
    assert_int_equal(a, lo);
    assert_int_equal(b, hi);
    /* hot calls after and before them */
    put_window(&fx, "20260102_1600", H0 + 3 * HOUR, H0 + 3 * HOUR + 5 * MIN_MS, 1);
    put_call(&fx, "20260102_1600", 1, H0 + 3 * HOUR + 7);
    assert_int_equal(cp_reader_bounds(fx.rd, &a, &b), CP_OK);
    assert_int_equal(a, lo);
    assert_int_equal(b, H0 + 3 * HOUR + 7);
    put_window(&fx, "20260102_1200", H0 - HOUR, H0 - HOUR + 5 * MIN_MS, 1);
    put_call(&fx, "20260102_1200", 2, H0 - HOUR + 3);
    assert_int_equal(cp_reader_bounds(fx.rd, &a, &b), CP_OK);
    assert_int_equal(a, H0 - HOUR + 3);
    assert_int_equal(b, H0 + 3 * HOUR + 7);
    fixture_close(&fx);
}

/* ---- a window dropped under a search ------------------------------------------------------------- */

typedef struct ids {
    int id[8];
    size_t n;
} ids;

static int on_call(void *ud, const cp_call *c)
{
    ids *v = ud;
    assert_true(v->n < 8);
    v->id[v->n++] = c->record_index;
    assert_int_equal(c->duration_ms, 4);
    assert_int_equal(c->restart_ms, 1000);
    assert_string_equal(c->trace_reason, "trace_not_found");
    return 0;
}

static cp_call_filter all_calls(void)
{
    cp_call_filter f;
    memset(&f, 0, sizeof f);
    f.to_ms = INT64_MAX;
    f.max_duration_ms = INT64_MAX;
    f.sort = CP_SORT_TS;
    f.desc = 1;
    f.limit = 100;
    return f;
}

typedef struct committer {
    PGconn *conn;
    int delay_ms;
} committer;

static void *commit_later(void *arg)
{
    committer *c = arg;
    usleep((useconds_t)c->delay_ms * 1000);
    PGresult *r = PQexec(c->conn, "COMMIT");
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok ? arg : NULL;
}

/* Windows 15:00 and 15:05 of 2026-01-02, one call each (ids 1 and 2). */
static void put_two_windows(fixture *fx)
{
    put_window(fx, "20260102_1500", H0 + 2 * HOUR, H0 + 2 * HOUR + 5 * MIN_MS, 1);
    put_call(fx, "20260102_1500", 1, H0 + 2 * HOUR + 10);
    put_window(fx, "20260102_1505", H0 + 2 * HOUR + 5 * MIN_MS, H0 + 2 * HOUR + 10 * MIN_MS, 1);
    put_call(fx, "20260102_1505", 2, H0 + 2 * HOUR + 5 * MIN_MS + 10);
}

/* What a compaction does to window 15:05 once its file is stored. */
static const char drop_1505[] = "DROP TABLE calls_20260102_1505;"
                                "UPDATE inventory SET status = 'persisted' WHERE table_name = 'calls_20260102_1505'";

/* Stats through a tiered reader take one snapshot of the hot tier and the cold listing; a
 * compaction that drops a window under it (its transaction holds the drop while the stats
 * start: the stats' lock waits, then finds the table gone) makes them begin again on a new
 * snapshot instead of failing (PostgreSQL; SQLite readers never see a half-dropped window). */
static void test_stats_window_dropped(void **state)
{
    (void)state;
    if (!test_pair_pg()) skip();
    fixture fx;
    fixture_open(&fx);
    put_two_windows(&fx);
    char store_dir[1200], err[512];
    snprintf(store_dir, sizeof store_dir, "%s/store", fx.dir);
    cp_ostore_config oc = {.url = store_dir};
    cp_ostore *store;
    if (cp_ostore_open(&oc, &store, err, sizeof err) != CP_OK) fail_msg("store: %s", err);
    cp_reader *hot, *rd;
    if (cp_reader_open(fx.spec, &hot, err, sizeof err) != CP_OK) fail_msg("reader: %s", err);
    cp_tiered_config cfg = {store, NULL, 0};
    if (cp_reader_open_tiered(hot, &cfg, &rd, err, sizeof err) != CP_OK) fail_msg("tiered: %s", err);
    cp_call_filter f = all_calls();
    cp_stats out;
    cp_stats_info info;
    assert_int_equal(cp_stats_run(rd, &f, 10, &out, &info), CP_OK);
    assert_int_equal(out.total, 2);
    cp_stats_free(&out);

    PGconn *c2 = PQconnectdb(fx.spec);
    assert_int_equal(PQstatus(c2), CONNECTION_OK);
    PQclear(PQexec(c2, "BEGIN"));
    PGresult *r = PQexec(c2, drop_1505);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) fail_msg("drop: %s", PQerrorMessage(c2));
    PQclear(r);
    committer cm = {c2, 300};
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, commit_later, &cm), 0);
    int rc = cp_stats_run(rd, &f, 10, &out, &info);
    void *ok;
    pthread_join(th, &ok);
    assert_non_null(ok);
    if (rc != CP_OK) fail_msg("stats: %s", cp_reader_errmsg(rd));
    printf("stats after the drop: total %llu, windows %zu\n", (unsigned long long)out.total, info.windows);
    assert_int_equal(out.total, 1); /* the dropped window is persisted: not listed any more */
    cp_stats_free(&out);
    PQfinish(c2);
    cp_reader_close(rd);
    cp_ostore_close(store);
    fixture_close(&fx);
}

/* A compaction drops a window and marks it persisted while a search is about to read it:
 * the search sees the window's rows (an older snapshot, table locked first) or, when the
 * drop wins, runs again on a new snapshot and does not list the window. Never an error. */
static void test_window_dropped(void **state)
{
    (void)state;
    fixture fx;
    fixture_open(&fx);
    put_two_windows(&fx);
    cp_call_filter f = all_calls();
    ids got = {0};
    cp_search_stats st;
    assert_int_equal(cp_reader_search(fx.rd, &f, on_call, &got, &st), CP_OK);
    assert_int_equal(got.n, 2);
    assert_int_equal(got.id[0], 2);

    if (test_pair_pg()) {
        /* the compactor's transaction holds the drop while the search starts */
        PGconn *c2 = PQconnectdb(fx.spec);
        assert_int_equal(PQstatus(c2), CONNECTION_OK);
        PGresult *r = PQexec(c2, "BEGIN");
        PQclear(r);
        r = PQexec(c2, drop_1505);
        if (PQresultStatus(r) != PGRES_COMMAND_OK) fail_msg("drop: %s", PQerrorMessage(c2));
        PQclear(r);
        committer cm = {c2, 300};
        pthread_t th;
        assert_int_equal(pthread_create(&th, NULL, commit_later, &cm), 0);
        got.n = 0;
        int rc = cp_reader_search(fx.rd, &f, on_call, &got, &st);
        void *ok;
        pthread_join(th, &ok);
        assert_non_null(ok);
        if (rc != CP_OK) fail_msg("search: %s", cp_reader_errmsg(fx.rd));
        assert_int_equal(got.n, 1);
        assert_int_equal(got.id[0], 1);
        PQfinish(c2);
    } else {
        raw_exec(&fx.db, drop_1505);
        got.n = 0;
        assert_int_equal(cp_reader_search(fx.rd, &f, on_call, &got, &st), CP_OK);
        assert_int_equal(got.n, 1);
    }
    /* get: the dropped call is gone, the other found (with and without its trace) */
    cp_call_ref ref = {H0 + 2 * HOUR + 5 * MIN_MS + 10, 1000, 1, 2, 2, 77};
    ids g = {0};
    assert_int_equal(cp_reader_get(fx.rd, &ref, 1, on_call, &g), CP_ENOTFOUND);
    ref = (cp_call_ref){H0 + 2 * HOUR + 10, 1000, 1, 2, 1, 77};
    assert_int_equal(cp_reader_get(fx.rd, &ref, 1, on_call, &g), CP_OK);
    assert_int_equal(cp_reader_get(fx.rd, &ref, 0, on_call, &g), CP_OK);
    assert_int_equal(g.n, 2);

    /* a window listed as ready whose table does not exist is an error (after the one
     * retry), and the reader works afterwards */
    raw_exec(&fx.db, "UPDATE inventory SET status = 'ready' WHERE table_name = 'calls_20260102_1505'");
    got.n = 0;
    assert_int_not_equal(cp_reader_search(fx.rd, &f, on_call, &got, &st), CP_OK);
    assert_int_equal(got.n, 0);
    assert_true(strlen(cp_reader_errmsg(fx.rd)) > 0);
    raw_exec(&fx.db, "UPDATE inventory SET status = 'persisted' WHERE table_name = 'calls_20260102_1505'");
    got.n = 0;
    assert_int_equal(cp_reader_search(fx.rd, &f, on_call, &got, &st), CP_OK);
    assert_int_equal(got.n, 1);
    if (test_pair_pg()) {
        /* the server ends the reader's session: the next operation reconnects */
        raw_exec(&fx.db, "SELECT pg_terminate_backend(pid, 5000) FROM pg_stat_activity"
                         " WHERE datname = current_database() AND application_name = 'cloudprof-reader'");
        got.n = 0;
        if (cp_reader_search(fx.rd, &f, on_call, &got, &st) != CP_OK) fail_msg("%s", cp_reader_errmsg(fx.rd));
        assert_int_equal(got.n, 1);
        int64_t a, b;
        assert_int_equal(cp_reader_bounds(fx.rd, &a, &b), CP_OK);
        assert_int_equal(b, H0 + 2 * HOUR + 10);
    }
    fixture_close(&fx);
}

int main(void)
{
    test_pair_require();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cold_files),
        cmocka_unit_test(test_cold_file_fields),
        cmocka_unit_test(test_term_not_text),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_window_dropped),
        cmocka_unit_test(test_stats_window_dropped),
    };
    return cmocka_run_group_tests_name(test_pair_name(), tests, NULL, NULL);
}
