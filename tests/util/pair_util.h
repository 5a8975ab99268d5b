/* pair_util.h -- which storage pair a test runs on (storage.md "Two tiers, two deployments").
 *
 * CTest registers the storage-dependent suites twice: as themselves (SQLite + a local
 * directory) and as "<suite>@pg-s3" with CP_TEST_PAIR=pg-s3 (PostgreSQL + S3). The
 * PostgreSQL server and the S3 endpoint are started by scripts/test.sh, which exports
 *   CP_TEST_PG_URL       a libpq URI of the server's maintenance database
 *   CP_TEST_S3_ENDPOINT  http://127.0.0.1:PORT of Swift's s3api
 *   CP_TEST_S3_ACCESS_KEY / CP_TEST_S3_SECRET_KEY (default test:tester / testing)
 * A pg-s3 run without them skips (exit 77) with a message saying how to start them. */
#ifndef CP_PAIR_UTIL_H
#define CP_PAIR_UTIL_H

#include <stddef.h>

/* 1 when this run is the PostgreSQL + S3 pair. */
int test_pair_pg(void);
/* Exits 77 (CTest "skipped") when the pair is pg-s3 and the servers are not given. */
void test_pair_require(void);
/* "sqlite+dir" or "pg+s3". */
const char *test_pair_name(void);
/* A fresh empty catalog: a SQLite path inside dir, or a new PostgreSQL database
 * (CREATE DATABASE on the test server). malloc'ed. */
char *test_catalog_spec(const char *dir);
/* A fresh empty store: dir/store, or s3://cloudprof-test/<unique prefix>. malloc'ed. */
char *test_store_url(const char *dir);
/* The serve/compact flags for the pair, NULL-terminated, static storage:
 * {"--catalog", spec, "--store", url, "--s3-endpoint", ep, NULL} (SQLite: catalog and
 * store flags only). spec/url from the two functions above. */
const char *const *test_pair_flags(const char *catalog_spec, const char *store_url);
/* `cloudprof compact --data data` with the pair's flags, now; fails the test unless it
 * exits 0. */
void test_pair_compact(const char *data, const char *catalog_spec, const char *store_url);
/* The end of a suite's storage: removes dir (make_temp_dir) and frees it, spec and url
 * (the two functions above): every suite on a pair cleans up alike. */
void test_pair_free(char *dir, char *catalog_spec, char *store_url);
/* Sets CLOUDPROF_S3_ACCESS_KEY / _SECRET_KEY in this process's environment for S3. */
void test_pair_env(void);
/* S3 connection settings (NULL for the dir pair). */
const char *test_s3_endpoint(void);
const char *test_s3_access_key(void);
const char *test_s3_secret_key(void);

#endif
