/* pair_util.c -- see pair_util.h. */
#include "pair_util.h"
#include "server_util.h"
#include "testutil.h"

#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int test_pair_pg(void)
{
    const char *p = getenv("CP_TEST_PAIR");
    return p && !strcmp(p, "pg-s3");
}

const char *test_pair_name(void) { return test_pair_pg() ? "pg+s3" : "sqlite+dir"; }

void test_pair_require(void)
{
    if (!test_pair_pg()) return;
    if (!getenv("CP_TEST_PG_URL") || !getenv("CP_TEST_S3_ENDPOINT")) {
        printf("skipped: CP_TEST_PAIR=pg-s3 needs CP_TEST_PG_URL and CP_TEST_S3_ENDPOINT "
               "(scripts/test.sh starts PostgreSQL and Swift; or scripts/pg-test.sh / scripts/swift-test.sh)\n");
        fflush(stdout);
        exit(77);
    }
}

const char *test_s3_endpoint(void) { return test_pair_pg() ? getenv("CP_TEST_S3_ENDPOINT") : NULL; }

const char *test_s3_access_key(void)
{
    const char *k = getenv("CP_TEST_S3_ACCESS_KEY");
    return k ? k : "test:tester";
}

const char *test_s3_secret_key(void)
{
    const char *k = getenv("CP_TEST_S3_SECRET_KEY");
    return k ? k : "testing";
}

void test_pair_env(void)
{
    setenv("CLOUDPROF_S3_ACCESS_KEY", test_s3_access_key(), 1);
    setenv("CLOUDPROF_S3_SECRET_KEY", test_s3_secret_key(), 1);
}

static unsigned long unique_counter(void)
{
    static unsigned long n;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return ((unsigned long)ts.tv_nsec / 1000) * 1000 + (++n % 1000);
}

/* The server URL with its database replaced by db. */
static char *url_with_db(const char *server, const char *db)
{
    const char *q = strchr(server, '?');
    size_t base_len = q ? (size_t)(q - server) : strlen(server);
    /* the database is the path after host[:port]: find the third '/' */
    const char *p = strstr(server, "://");
    const char *slash = p ? strchr(p + 3, '/') : NULL;
    if (slash && (size_t)(slash - server) < base_len) base_len = (size_t)(slash - server);
    size_t n = base_len + 1 + strlen(db) + (q ? strlen(q) : 0) + 1;
    char *out = malloc(n);
    if (!out) abort();
    snprintf(out, n, "%.*s/%s%s", (int)base_len, server, db, q ? q : "");
    return out;
}

char *test_catalog_spec(const char *dir)
{
    if (!test_pair_pg()) {
        size_t n = strlen(dir) + 32;
        char *s = malloc(n);
        if (!s) abort();
        snprintf(s, n, "%s/catalog.db", dir);
        return s;
    }
    test_pair_require();
    const char *server = getenv("CP_TEST_PG_URL");
    PGconn *c = PQconnectdb(server);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "test: cannot connect to %s: %s\n", server, PQerrorMessage(c));
        abort();
    }
    char db[64], sql[128];
    snprintf(db, sizeof db, "cpt_%d_%lu", (int)getpid(), unique_counter());
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK) {
        fprintf(stderr, "test: %s: %s\n", sql, PQerrorMessage(c));
        abort();
    }
    PQclear(r);
    PQfinish(c);
    return url_with_db(server, db);
}

char *test_store_url(const char *dir)
{
    size_t n = strlen(dir) + 96;
    char *s = malloc(n);
    if (!s) abort();
    if (!test_pair_pg())
        snprintf(s, n, "%s/store", dir);
    else
        snprintf(s, n, "s3://cloudprof-test/run-%d-%lu", (int)getpid(), unique_counter());
    return s;
}

const char *const *test_pair_flags(const char *catalog_spec, const char *store_url)
{
    static const char *flags[8];
    size_t i = 0;
    flags[i++] = "--catalog";
    flags[i++] = catalog_spec;
    flags[i++] = "--store";
    flags[i++] = store_url;
    if (test_pair_pg()) {
        flags[i++] = "--s3-endpoint";
        flags[i++] = test_s3_endpoint();
    }
    flags[i] = NULL;
    return flags;
}

void test_pair_free(char *dir, char *catalog_spec, char *store_url)
{
    remove_tree(dir);
    free(dir);
    free(catalog_spec);
    free(store_url);
}

void test_pair_compact(const char *data, const char *catalog_spec, const char *store_url)
{
    const char *argv[24];
    size_t n = 0;
    argv[n++] = "compact";
    argv[n++] = "--data";
    argv[n++] = data;
    for (const char *const *pf = test_pair_flags(catalog_spec, store_url); *pf; pf++) argv[n++] = *pf;
    argv[n] = NULL;
    cp_buf err;
    cp_buf_init(&err);
    int rc = cli_run(NULL, &err, argv);
    if (rc != 0) fail_msg("compact exited %d: %.*s", rc, (int)err.len, (char *)err.data);
    cp_buf_free(&err);
}
