/* dumps_store_test.c -- the diagnostic-file store (src/store/cp_dumps.h) on both storage
 * pairs (CP_TEST_BOTH_PAIRS: SQLite + directory, and PostgreSQL + S3 as
 * dumps_store_test@pg-s3):
 *  - every fixture of shared/fixtures/dumps goes in through begin / write (odd chunks) /
 *    commit and comes back byte-identical (whole, ranged, load), listed with the right
 *    kind, pod, directory time, size, SHA-256 and extras (dumps-http.md §10's facts);
 *  - a re-upload of a path replaces it in place; large files and heap dumps live in the
 *    object store; aborted and failed uploads leave nothing (row, temp file, object);
 *  - deletion, the pod join of §5 (test 7 of §9), the summary;
 *  - compaction into per-hour Parquet files (read back through the reader, and by DuckDB),
 *    a second claim of the same hour, a replacement of a cold file, an abandoned claim
 *    taken over; retention of old files, of heap dumps beyond heap_keep, of orphans.
 */
#include "pair_util.h"
#include "server_util.h"
#include "testutil.h"

#include "model/cp_dumpfmt.h"
#include "store/cp_catalog.h"
#include "store/cp_dumps.h"
#include "store/cp_ostore.h"
#include "store/sql/sqldb.h"

#include <dirent.h>
#include <pthread.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define T_2024 1722470280000LL /* 2024-07-31 23:58:00 UTC */
#define T_2023 1702966654000LL /* 2023-12-19 06:17:34 UTC */
#define HOUR 3600000LL

/* ---- the environment -------------------------------------------------------------------- */

typedef struct env {
    char *dir, *catalog, *store_url;
    char tmp[1024];
    cp_ostore *store;
    cp_dumps *d;
    cp_sqldb *db; /* the test's own look at the catalog */
} env;

static void env_open(env *e, const char *tag, uint64_t inline_max)
{
    test_pair_require();
    memset(e, 0, sizeof *e);
    e->dir = make_temp_dir(tag);
    e->catalog = test_catalog_spec(e->dir);
    e->store_url = test_store_url(e->dir);
    snprintf(e->tmp, sizeof e->tmp, "%s/dumps-tmp", e->dir);
    cp_ostore_config oc = {0};
    oc.url = e->store_url;
    oc.endpoint = test_s3_endpoint();
    oc.access_key = test_s3_access_key();
    oc.secret_key = test_s3_secret_key();
    char err[1024];
    if (cp_ostore_open(&oc, &e->store, err, sizeof err) != CP_OK) fail_msg("store %s: %s", e->store_url, err);
    cp_dumps_config dc = {.catalog = e->catalog, .store = e->store, .tmp_dir = e->tmp, .inline_max = inline_max,
                          .node = "test-node"};
    if (cp_dumps_open(&dc, &e->d, err, sizeof err) != CP_OK) fail_msg("cp_dumps_open: %s", err);
    if (cp_sqldb_open(e->catalog, &e->db, err, sizeof err) != CP_OK) fail_msg("sqldb: %s", err);
}

static void env_close(env *e)
{
    cp_sqldb_close(e->db);
    cp_dumps_close(e->d);
    cp_ostore_close(e->store);
    remove_tree(e->dir);
    free(e->dir);
    free(e->catalog);
    free(e->store_url);
}

/* One SQL statement on the catalog (test set-up and checks). */
static void sql(env *e, const char *q, const cp_sql_val *p, size_t np)
{
    if (cp_sqldb_exec(e->db, q, p, np, NULL, NULL, NULL) != CP_OK) fail_msg("%s: %s", q, cp_sqldb_errmsg(e->db));
}

static int on_i64(void *ud, const cp_sql_val *c, size_t n)
{
    if (n) *(int64_t *)ud = cp_sql_int(&c[0], -1);
    return 0;
}

static int64_t sql_int(env *e, const char *q, const cp_sql_val *p, size_t np)
{
    int64_t v = -1;
    if (cp_sqldb_exec(e->db, q, p, np, on_i64, &v, NULL) != CP_OK) fail_msg("%s: %s", q, cp_sqldb_errmsg(e->db));
    return v;
}

static void sha_hex(const void *p, size_t n, char out[65])
{
    uint8_t md[32];
    unsigned len = 0;
    EVP_Digest(p, n, md, &len, EVP_sha256(), NULL);
    for (int i = 0; i < 32; i++) snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static cp_dump_path mkpath(const char *ns, int64_t dir_ms, const char *pod, const char *file)
{
    cp_dump_path p;
    memset(&p, 0, sizeof p);
    snprintf(p.ns, sizeof p.ns, "%s", ns);
    snprintf(p.pod, sizeof p.pod, "%s", pod);
    snprintf(p.file, sizeof p.file, "%s", file);
    p.dir_ms = dir_ms;
    return p;
}

/* begin / write in odd-sized chunks / commit; returns commit's status. */
static int upload(env *e, const char *ns, int64_t dir_ms, const char *pod, const char *file, const void *body,
                  size_t n, cp_dump_meta *m, int *created)
{
    static const size_t chunks[] = {1, 3, 1000, 4093, 17, 65537};
    cp_dump_path p = mkpath(ns, dir_ms, pod, file);
    cp_dump_upload *u = NULL;
    char err[1024];
    int st = cp_dumps_upload_begin(e->d, &p, 0, &u, err, sizeof err);
    if (st != CP_OK) fail_msg("begin %s: %s", file, err);
    const uint8_t *b = body;
    for (size_t off = 0, k = 0; off < n; k++) {
        size_t c = chunks[k % CP_ARRAY_LEN(chunks)];
        if (c > n - off) c = n - off;
        assert_int_equal(cp_dumps_upload_write(u, b + off, c), CP_OK);
        off += c;
    }
    assert_int_equal(cp_dumps_upload_bytes(u), n);
    int cr = -1;
    st = cp_dumps_upload_commit(u, cp_now_ms(), m, &cr, err, sizeof err);
    if (created) *created = cr;
    if (st != CP_OK) printf("commit %s: %s (%s)\n", file, err, cp_strstatus(st));
    return st;
}

static void upload_ok(env *e, const char *ns, int64_t dir_ms, const char *pod, const char *file, const void *body,
                      size_t n, cp_dump_meta *m, int *created)
{
    assert_int_equal(upload(e, ns, dir_ms, pod, file, body, n, m, created), CP_OK);
}

/* The file's bytes through a reader (whole, then at odd offsets) and through load. */
static void assert_bytes(env *e, const cp_dump_meta *m, const uint8_t *want, size_t n)
{
    char err[1024];
    cp_dump_reader *r = NULL;
    int st = cp_dumps_reader_open(e->d, m, &r, err, sizeof err);
    if (st != CP_OK) fail_msg("reader %lld: %s", (long long)m->id, err);
    uint8_t *got = malloc(n + 16);
    size_t off = 0;
    while (off < n) {
        long k = cp_dump_reader_pread(r, got + off, 100000, off);
        if (k <= 0) fail_msg("pread at %zu: %ld %s", off, k, cp_dump_reader_errmsg(r));
        off += (size_t)k;
    }
    assert_int_equal(cp_dump_reader_pread(r, got, 10, n), 0);
    assert_memory_equal(got, want, n);
    const size_t offs[] = {0, 1, 7, 4095, 4096, n / 3, n / 2, n > 3 ? n - 3 : 0, n - 1};
    const size_t lens[] = {1, 13, 5000, (1u << 20) + 5, n};
    for (size_t i = 0; i < CP_ARRAY_LEN(offs); i++)
        for (size_t j = 0; j < CP_ARRAY_LEN(lens); j++) {
            if (offs[i] >= n) continue;
            size_t want_n = lens[j] < n - offs[i] ? lens[j] : n - offs[i];
            long k = cp_dump_reader_pread(r, got, lens[j] < n ? lens[j] : n, offs[i]);
            if (k != (long)want_n) fail_msg("pread(%zu, %zu) = %ld, want %zu", lens[j], offs[i], k, want_n);
            assert_memory_equal(got, want + offs[i], want_n);
        }
    cp_dump_reader_close(r);
    free(got);
    uint8_t *p = NULL;
    size_t pn = 0;
    st = cp_dumps_load(e->d, m, n + 1, &p, &pn, err, sizeof err);
    if (st != CP_OK) fail_msg("load %lld: %s", (long long)m->id, err);
    assert_int_equal(pn, n);
    assert_memory_equal(p, want, n);
    free(p);
    if (n > 1) assert_int_equal(cp_dumps_load(e->d, m, n - 1, &p, &pn, err, sizeof err), CP_ELIMIT);
}

typedef struct metas {
    cp_dump_meta *v;
    size_t n;
} metas;

static int collect(void *ud, const cp_dump_meta *m)
{
    metas *l = ud;
    l->v = realloc(l->v, (l->n + 1) * sizeof *l->v);
    l->v[l->n++] = *m;
    return 0;
}

static metas list(env *e, const cp_dump_filter *f)
{
    metas l = {0};
    char err[1024];
    cp_dump_filter all = {0};
    if (cp_dumps_list(e->d, f ? f : &all, collect, &l, err, sizeof err) != CP_OK) fail_msg("list: %s", err);
    return l;
}

/* Object keys in the store (prefix ""). */
typedef struct keys {
    char k[256][512];
    size_t n;
} keys;

static int on_item(void *ud, const cp_ostore_item *it)
{
    keys *l = ud;
    if (l->n < 256) snprintf(l->k[l->n++], sizeof l->k[0], "%s", it->key);
    return 0;
}

static keys *store_keys(env *e)
{
    keys *l = calloc(1, sizeof *l);
    char err[512];
    if (e->store->ops->list(e->store, "", on_item, l, err, sizeof err) != CP_OK) fail_msg("list store: %s", err);
    return l;
}

static int has_key(const keys *l, const char *k)
{
    for (size_t i = 0; i < l->n; i++)
        if (!strcmp(l->k[i], k)) return 1;
    return 0;
}

static size_t count_keys_with(const keys *l, const char *sub)
{
    size_t c = 0;
    for (size_t i = 0; i < l->n; i++) c += strstr(l->k[i], sub) != NULL;
    return c;
}

static size_t tmp_files(env *e)
{
    DIR *d = opendir(e->tmp);
    if (!d) return 0;
    size_t n = 0;
    struct dirent *x;
    while ((x = readdir(d)))
        if (x->d_name[0] != '.') n++;
    closedir(d);
    return n;
}

static void get_ok(env *e, int64_t id, cp_dump_meta *m)
{
    char err[512];
    if (cp_dumps_get(e->d, id, m, err, sizeof err) != CP_OK) fail_msg("get %lld: %s", (long long)id, err);
}

/* ---- the fixtures ----------------------------------------------------------------------- */

typedef struct fixture {
    const char *file;
    const char *kind;
    int64_t capture_ms; /* -1: no stamp */
    const char *info[3]; /* substrings of the extras */
} fixture;

static const fixture fixtures[] = {
    {"20231219T061734UTC.td.txt", "td", 1702966654000LL,
     {"\"threads\":73", "\"RUNNABLE\":19", "\"TIMED_WAITING (parking)\":25"}},
    {"20230804T164402.td.txt", "td", 1691167442000LL,
     {"\"threads\":258", "\"WAITING (parking)\":220", "\"RUNNABLE\":26"}},
    {"20231219T061734UTC.top.txt", "top", 1702966654000LL, {"\"threads\":76", NULL, NULL}},
    {"20231219T062953UTC.gc.log", "gc", 1702967393000LL, {"{}", NULL, NULL}},
    {"test-service.heap.hprof.zip", "heap", -1, {"\"entry\":\"-\"", "\"entry_bytes\":9450", NULL}},
    {"go-alloc.pprof", "alloc", -1, {"\"samples\":2164", "\"alloc_objects/count\"", "\"inuse_space/bytes\""}},
    {"go-heap.pprof", "pprof_heap", -1, {"\"samples\":2174", "\"alloc_space/bytes\"", NULL}},
    {"go-goroutine.pprof", "goroutine", -1, {"\"samples\":28", "\"goroutine/count\"", NULL}},
    {"go-profile.pprof", "profile", -1, {"\"samples\":1", "\"cpu/nanoseconds\"", "\"samples/count\""}},
};

static void test_fixtures(void **state)
{
    (void)state;
    env e;
    env_open(&e, "dumps-fixtures", 0);
    const char *pod = "orders-5cbcd847d-l2t7t_1719318147399";
    int64_t ids[CP_ARRAY_LEN(fixtures)];
    for (size_t i = 0; i < CP_ARRAY_LEN(fixtures); i++) {
        char rel[256];
        snprintf(rel, sizeof rel, "dumps/%s", fixtures[i].file);
        cp_buf b;
        cp_buf_init(&b);
        load_fixture(rel, &b);
        cp_dump_meta m;
        int created = -1;
        upload_ok(&e, "shop", T_2024 + (int64_t)i * 1000, pod, fixtures[i].file, b.data, b.len, &m, &created);
        assert_int_equal(created, 1);
        char sha[65];
        sha_hex(b.data, b.len, sha);
        assert_string_equal(m.sha256, sha);
        assert_int_equal(m.bytes, b.len);
        assert_string_equal(cp_dump_kind_name(m.kind), fixtures[i].kind);
        assert_string_equal(m.name, fixtures[i].file);
        assert_string_equal(m.ns, "shop");
        assert_string_equal(m.pod, pod);
        assert_string_equal(m.restart_pod, ""); /* no pod restart registered */
        assert_string_equal(m.service, "orders");
        assert_int_equal(m.restart_ms, 1719318147399LL);
        assert_int_equal(m.dir_ms, T_2024 + (int64_t)i * 1000);
        assert_int_equal(m.capture_ms, fixtures[i].capture_ms);
        assert_int_equal(m.version, 1);
        assert_true(m.received_ms > 0);
        assert_int_equal(m.cold_row, -1);
        for (int k = 0; k < 3; k++)
            if (fixtures[i].info[k] && !strstr(m.info, fixtures[i].info[k]))
                fail_msg("%s: info %s lacks %s", fixtures[i].file, m.info, fixtures[i].info[k]);
        json_error_t je;
        json_t *j = json_loads(m.info, 0, &je);
        if (!j) fail_msg("%s: info is not JSON: %s", fixtures[i].file, m.info);
        json_decref(j);
        if (!strcmp(fixtures[i].kind, "heap")) {
            assert_int_equal(m.location, CP_DUMP_OBJECT);
            assert_string_equal(m.key, "2024/07/31/23/shop/orders-5cbcd847d-l2t7t_1719318147399/"
                                       "test-service.heap.hprof.zip");
        } else {
            assert_int_equal(m.location, CP_DUMP_HOT);
            assert_string_equal(m.key, "");
        }
        ids[i] = m.id;
        assert_bytes(&e, &m, b.data, b.len);
        cp_dump_meta g;
        get_ok(&e, m.id, &g);
        assert_memory_equal(&g, &m, sizeof g);
        cp_buf_free(&b);
    }
    /* td thread states of the larger dump, all of them (§10) */
    cp_dump_meta m;
    get_ok(&e, ids[1], &m);
    assert_non_null(strstr(m.info, "\"TIMED_WAITING (parking)\":7"));
    assert_non_null(strstr(m.info, "\"TIMED_WAITING (sleeping)\":3"));
    get_ok(&e, ids[0], &m);
    assert_non_null(strstr(m.info, "\"WAITING (parking)\":25"));
    assert_non_null(strstr(m.info, "\"TIMED_WAITING (sleeping)\":2"));
    assert_non_null(strstr(m.info, "\"WAITING (on object monitor)\":1"));

    /* the list: newest first, all of them, with filters and paging */
    metas l = list(&e, NULL);
    assert_int_equal(l.n, CP_ARRAY_LEN(fixtures));
    for (size_t i = 0; i < l.n; i++) assert_int_equal(l.v[i].id, ids[CP_ARRAY_LEN(fixtures) - 1 - i]);
    free(l.v);
    cp_dump_filter f = {.kind = CP_DUMP_TD};
    l = list(&e, &f);
    assert_int_equal(l.n, 2);
    assert_int_equal(l.v[0].id, ids[1]);
    free(l.v);
    f = (cp_dump_filter){.ns = "shop", .pod = pod, .from_ms = T_2024 + 2000, .to_ms = T_2024 + 5000};
    l = list(&e, &f);
    assert_int_equal(l.n, 3);
    assert_int_equal(l.v[0].id, ids[4]);
    assert_int_equal(l.v[2].id, ids[2]);
    free(l.v);
    f = (cp_dump_filter){.ns = "other"};
    l = list(&e, &f);
    assert_int_equal(l.n, 0);
    free(l.v);
    f = (cp_dump_filter){.service = "orders", .limit = 4};
    l = list(&e, &f);
    assert_int_equal(l.n, 4);
    f.before_ms = l.v[3].dir_ms;
    f.before_id = l.v[3].id;
    free(l.v);
    l = list(&e, &f);
    assert_int_equal(l.n, 4);
    assert_int_equal(l.v[0].id, ids[4]);
    free(l.v);

    keys *k = store_keys(&e);
    assert_int_equal(k->n, 1); /* the heap dump only: the rest is in the catalog */
    assert_true(has_key(k, "2024/07/31/23/shop/orders-5cbcd847d-l2t7t_1719318147399/test-service.heap.hprof.zip"));
    free(k);
    assert_int_equal(tmp_files(&e), 0);
    env_close(&e);
}

/* ---- replacement ------------------------------------------------------------------------ */

static void test_replace(void **state)
{
    (void)state;
    env e;
    env_open(&e, "dumps-replace", 64 * 1024);
    cp_dump_meta a, b;
    int created;
    upload_ok(&e, "shop", T_2024, "p1", "gc.log", "first version\n", 14, &a, &created);
    assert_int_equal(created, 1);
    assert_string_equal(cp_dump_kind_name(a.kind), "gc");
    assert_int_equal(a.gc_rotation, -1);
    upload_ok(&e, "shop", T_2024, "p1", "gc.log", "second, longer version\n", 23, &b, &created);
    assert_int_equal(created, 0);
    assert_int_equal(b.id, a.id);
    assert_int_equal(b.version, 2);
    assert_int_equal(b.bytes, 23);
    assert_bytes(&e, &b, (const uint8_t *)"second, longer version\n", 23);
    /* a reader of the old version is refused instead of serving other bytes */
    char err[512];
    cp_dump_reader *r = NULL;
    assert_int_equal(cp_dumps_reader_open(e.d, &a, &r, err, sizeof err), CP_ENOTFOUND);
    metas l = list(&e, NULL);
    assert_int_equal(l.n, 1);
    free(l.v);
    cp_dump_meta c;
    upload_ok(&e, "shop", T_2024, "p1", "gc.log.3", "rotated\n", 8, &c, &created);
    assert_int_equal(c.gc_rotation, 3);
    assert_true(c.id != a.id);

    /* an object replaced: a new key, the old object goes after the switch */
    size_t n = 200000;
    uint8_t *big = malloc(n);
    for (size_t i = 0; i < n; i++) big[i] = (uint8_t)(i * 31 + 7);
    upload_ok(&e, "shop", T_2024, "p1", "core", big, n, &a, &created);
    assert_int_equal(a.location, CP_DUMP_OBJECT);
    assert_string_equal(a.key, "2024/07/31/23/shop/p1/core");
    big[5] ^= 0xff;
    upload_ok(&e, "shop", T_2024, "p1", "core", big, n - 10, &b, &created);
    assert_int_equal(created, 0);
    assert_int_equal(b.id, a.id);
    assert_int_equal(b.version, 2);
    assert_string_equal(b.key, "2024/07/31/23/shop/p1/core.v2");
    assert_bytes(&e, &b, big, n - 10);
    keys *k = store_keys(&e);
    assert_int_equal(k->n, 1);
    assert_true(has_key(k, "2024/07/31/23/shop/p1/core.v2"));
    free(k);
    /* replaced by a small one: back in the catalog, the object deleted */
    upload_ok(&e, "shop", T_2024, "p1", "core", "tiny", 4, &c, &created);
    assert_int_equal(c.version, 3);
    assert_int_equal(c.location, CP_DUMP_HOT);
    assert_bytes(&e, &c, (const uint8_t *)"tiny", 4);
    k = store_keys(&e);
    assert_int_equal(k->n, 0);
    free(k);
    /* the same name in another second of the hour: another path, another key */
    upload_ok(&e, "shop", T_2024 + 1000, "p1", "core", big, n, &a, &created);
    upload_ok(&e, "shop", T_2024 + 2000, "p1", "core", big, n, &b, &created);
    assert_int_equal(created, 1);
    assert_string_equal(a.key, "2024/07/31/23/shop/p1/core");
    assert_true(strncmp(b.key, "2024/07/31/23/shop/p1/core.u", 28) == 0);
    assert_bytes(&e, &a, big, n);
    assert_bytes(&e, &b, big, n);
    /* a deleted file uploaded again is created again, same id */
    assert_int_equal(cp_dumps_delete(e.d, c.id, cp_now_ms(), err, sizeof err), CP_OK);
    cp_dump_meta d2;
    upload_ok(&e, "shop", T_2024, "p1", "core", "again", 5, &d2, &created);
    assert_int_equal(created, 1);
    assert_int_equal(d2.id, c.id);
    assert_int_equal(d2.version, 4);
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM dump_pending", NULL, 0), 0);
    free(big);
    env_close(&e);
}

/* ---- the object path ---------------------------------------------------------------------- */

static void test_object(void **state)
{
    (void)state;
    env e;
    env_open(&e, "dumps-object", 1 << 20);
    size_t n = 3u << 20;
    uint8_t *body = malloc(n);
    uint64_t seed = 42;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t v = test_rand(&seed);
        memcpy(body + i, &v, 8);
    }
    cp_dump_meta m;
    int created;
    /* a thread dump above inline_max goes to the object store too, extras still read */
    cp_buf td;
    cp_buf_init(&td);
    load_fixture("dumps/20231219T061734UTC.td.txt", &td);
    cp_buf big;
    cp_buf_init(&big);
    while (big.len < (1u << 20) + 10) cp_buf_append(&big, td.data, td.len);
    upload_ok(&e, "team a", T_2024, "web-1", "20240731T235800.td.txt", big.data, big.len, &m, &created);
    assert_int_equal(m.location, CP_DUMP_OBJECT);
    assert_string_equal(m.key, "2024/07/31/23/x-7465616d2061/web-1/20240731T235800.td.txt");
    assert_non_null(strstr(m.info, "\"threads\":"));
    assert_bytes(&e, &m, big.data, big.len);
    upload_ok(&e, "shop", T_2024, "web-1", "core.1234", body, n, &m, &created);
    assert_int_equal(m.location, CP_DUMP_OBJECT);
    assert_string_equal(cp_dump_kind_name(m.kind), "other");
    assert_string_equal(m.key, "2024/07/31/23/shop/web-1/core.1234");
    char sha[65];
    sha_hex(body, n, sha);
    assert_string_equal(m.sha256, sha);
    assert_bytes(&e, &m, body, n);
    keys *k = store_keys(&e);
    assert_int_equal(k->n, 2);
    assert_true(has_key(k, "2024/07/31/23/shop/web-1/core.1234"));
    free(k);
    cp_buf_free(&td);
    cp_buf_free(&big);
    free(body);
    env_close(&e);
}

/* ---- nothing left behind ----------------------------------------------------------------- */

static void test_abort_and_failure(void **state)
{
    (void)state;
    env e;
    env_open(&e, "dumps-abort", 4096);
    char err[512];
    cp_dump_path p = mkpath("shop", T_2024, "p1", "20240731T235800.td.txt");
    cp_dump_upload *u = NULL;
    assert_int_equal(cp_dumps_upload_begin(e.d, &p, 0, &u, err, sizeof err), CP_OK);
    assert_int_equal(tmp_files(&e), 1);
    assert_int_equal(cp_dumps_upload_write(u, "half a dump", 11), CP_OK);
    cp_dumps_upload_abort(u);
    assert_int_equal(tmp_files(&e), 0);
    /* the size limit */
    assert_int_equal(cp_dumps_upload_begin(e.d, &p, 10, &u, err, sizeof err), CP_OK);
    assert_int_equal(cp_dumps_upload_write(u, "0123456789", 10), CP_OK);
    assert_int_equal(cp_dumps_upload_write(u, "x", 1), CP_ELIMIT);
    cp_dumps_upload_abort(u);
    /* an empty body */
    cp_dump_meta m;
    int created;
    assert_int_equal(upload(&e, "shop", T_2024, "p1", "20240731T235800.td.txt", "", 0, &m, &created), CP_EINVAL);
    /* a name no kind fits */
    cp_dump_path bad = mkpath("shop", T_2024, "p1", "picture.png");
    assert_int_equal(cp_dumps_upload_begin(e.d, &bad, 0, &u, err, sizeof err), CP_EINVAL);
    /* the catalog refusing the row, for a hot file and after an object was put */
    if (test_pair_pg()) {
        sql(&e, "CREATE FUNCTION cp_test_fail() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'refused by the test';"
                " END $$ LANGUAGE plpgsql", NULL, 0);
        sql(&e, "CREATE TRIGGER cp_test_fail BEFORE INSERT ON dumps FOR EACH ROW WHEN (NEW.namespace = 'failing')"
                " EXECUTE FUNCTION cp_test_fail()", NULL, 0);
    } else {
        sql(&e, "CREATE TRIGGER cp_test_fail BEFORE INSERT ON dumps WHEN NEW.namespace = 'failing'"
                " BEGIN SELECT RAISE(ABORT, 'refused by the test'); END", NULL, 0);
    }
    cp_buf heap;
    cp_buf_init(&heap);
    load_fixture("dumps/test-service.heap.hprof.zip", &heap);
    assert_int_equal(
        upload(&e, "failing", T_2024, "p1", "20240731T225935.hprof.zip", heap.data, heap.len, &m, &created), CP_EIO);
    assert_int_equal(upload(&e, "failing", T_2024, "p1", "20240731T235800.td.txt", "x", 1, &m, &created), CP_EIO);
    assert_int_equal(tmp_files(&e), 0);
    metas l = list(&e, NULL);
    assert_int_equal(l.n, 0);
    free(l.v);
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM dumps", NULL, 0), 0);
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM dump_pending", NULL, 0), 0);
    keys *k = store_keys(&e);
    assert_int_equal(k->n, 0);
    free(k);
    /* and a good upload afterwards works */
    upload_ok(&e, "shop", T_2024, "p1", "20240731T225935.hprof.zip", heap.data, heap.len, &m, &created);
    assert_bytes(&e, &m, heap.data, heap.len);
    cp_buf_free(&heap);
    env_close(&e);
}

/* ---- deletion ------------------------------------------------------------------------------ */

static void test_delete(void **state)
{
    (void)state;
    env e;
    env_open(&e, "dumps-delete", 0);
    cp_buf heap;
    cp_buf_init(&heap);
    load_fixture("dumps/test-service.heap.hprof.zip", &heap);
    cp_dump_meta a, b, c;
    int created;
    char err[512];
    upload_ok(&e, "shop", T_2024, "p1", "20240731T225935.hprof.zip", heap.data, heap.len, &a, &created);
    upload_ok(&e, "shop", T_2024, "p1", "gc.log", "gc\n", 3, &b, &created);
    upload_ok(&e, "shop", T_2024, "p1", "gc.log.1", "gc1\n", 4, &c, &created);
    assert_int_equal(cp_dumps_delete(e.d, a.id, T_2024 + 5, err, sizeof err), CP_OK);
    assert_int_equal(cp_dumps_delete(e.d, a.id, T_2024 + 6, err, sizeof err), CP_ENOTFOUND);
    cp_dump_meta g;
    assert_int_equal(cp_dumps_get(e.d, a.id, &g, err, sizeof err), CP_ENOTFOUND);
    keys *k = store_keys(&e);
    assert_int_equal(k->n, 0);
    free(k);
    cp_sql_val v[] = {cp_sql_i64(a.id)};
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM dumps WHERE uuid = $1 AND state = 'deleted'"
                                 " AND deleted_time = 1722470280005", v, 1), 1);
    cp_dump_path p = mkpath("shop", T_2024, "p1", "gc.log");
    assert_int_equal(cp_dumps_delete_path(e.d, &p, cp_now_ms(), err, sizeof err), CP_OK);
    assert_int_equal(cp_dumps_delete_path(e.d, &p, cp_now_ms(), err, sizeof err), CP_ENOTFOUND);
    p = mkpath("shop", T_2024 + 1000, "p1", "gc.log.1"); /* another second: another path */
    assert_int_equal(cp_dumps_delete_path(e.d, &p, cp_now_ms(), err, sizeof err), CP_ENOTFOUND);
    metas l = list(&e, NULL);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0].id, c.id);
    free(l.v);
    cp_dump_reader *r = NULL;
    assert_int_equal(cp_dumps_reader_open(e.d, &b, &r, err, sizeof err), CP_ENOTFOUND);
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM dumps", NULL, 0), 3); /* deletions are recorded */
    cp_buf_free(&heap);
    env_close(&e);
}

/* ---- the pod join (dumps-http.md §5, §9 test 7) -------------------------------------------- */

static void test_pod_join(void **state)
{
    (void)state;
    env e;
    env_open(&e, "dumps-join", 0);
    cp_catalog *cat = NULL;
    char err[512];
    if (cp_catalog_open(e.catalog, &cat, err, sizeof err) != CP_OK) fail_msg("catalog: %s", err);
    cp_catalog_pod pod = {"shop", "orders-svc", "orders-x_1719318147399", "shop/orders-x_1719318147399",
                          1719318147399LL};
    assert_int_equal(cp_catalog_pod_register(cat, &pod, 1719318150000LL), CP_OK);
    cp_catalog_pod older = {"shop", "orders-svc", "orders-x_1719000000000", "shop/orders-x_1719000000000",
                            1719000000000LL};
    assert_int_equal(cp_catalog_pod_register(cat, &older, 1719000001000LL), CP_OK);
    cp_catalog_pod tricky = {"shop", "orders-svc", "orders-x_y_1719318147400", "shop/orders-x_y_1719318147400",
                             1719318147400LL};
    assert_int_equal(cp_catalog_pod_register(cat, &tricky, 1719318150000LL), CP_OK);
    /* as the collector registers them: restart time = its accept time, after the agent
     * started (the suffix), twice for one pod string (a reconnect) */
    cp_catalog_pod web1 = {"shop", "web-svc", "web_1719318147399", "shop/web_1719318147399", 1730000000000LL};
    cp_catalog_pod web2 = {"shop", "web-svc", "web_1719318147399", "shop/web_1719318147399", 1731000000000LL};
    assert_int_equal(cp_catalog_pod_register(cat, &web1, 1730000000000LL), CP_OK);
    assert_int_equal(cp_catalog_pod_register(cat, &web2, 1731000000000LL), CP_OK);
    assert_int_equal(cp_catalog_commit(cat), CP_OK);
    cp_catalog_close(cat);

    cp_dump_meta a, b, c, d2, x;
    int created;
    upload_ok(&e, "shop", T_2024, "orders-x_1719318147399", "20240731T235800.td.txt", "td\n", 3, &a, &created);
    upload_ok(&e, "shop", T_2024, "orders-x", "20240731T235801.td.txt", "td\n", 3, &b, &created);
    assert_string_equal(a.restart_pod, "orders-x_1719318147399");
    assert_string_equal(b.restart_pod, "orders-x_1719318147399");
    assert_string_equal(a.service, "orders-svc");
    assert_string_equal(b.service, "orders-svc");
    assert_int_equal(a.restart_ms, 1719318147399LL);
    assert_int_equal(b.restart_ms, 1719318147399LL);
    assert_string_equal(b.pod, "orders-x");
    /* a file from before the latest restart started joins the one active then */
    upload_ok(&e, "shop", 1719100000000LL, "orders-x", "20240623T000000.td.txt", "td\n", 3, &c, &created);
    assert_string_equal(c.restart_pod, "orders-x_1719000000000");
    /* before any restart, another namespace, another pod: no join, the pod string's service */
    upload_ok(&e, "shop", 1700000000000LL, "orders-x", "20231114T221320.td.txt", "td\n", 3, &d2, &created);
    assert_string_equal(d2.restart_pod, "");
    assert_string_equal(d2.service, "orders");
    assert_int_equal(d2.restart_ms, 0);
    upload_ok(&e, "other", T_2024, "orders-x", "20240731T235800.td.txt", "td\n", 3, &x, &created);
    assert_string_equal(x.restart_pod, "");
    upload_ok(&e, "shop", T_2024, "db-0", "20240731T235800.td.txt", "td\n", 3, &x, &created);
    assert_string_equal(x.restart_pod, "");
    assert_string_equal(x.service, "db");
    /* a dump taken after the agent started, before it connected: the first connection */
    upload_ok(&e, "shop", T_2024, "web", "20240731T235800.td.txt", "td\n", 3, &x, &created);
    assert_string_equal(x.restart_pod, "web_1719318147399");
    assert_string_equal(x.service, "web-svc");
    assert_int_equal(x.restart_ms, 1730000000000LL);
    upload_ok(&e, "shop", T_2024, "web_1719318147399", "20240731T235800.td.txt", "td\n", 3, &x, &created);
    assert_int_equal(x.restart_ms, 1730000000000LL);
    /* during the second connection: that one */
    upload_ok(&e, "shop", 1731000500000LL, "web", "20241107T052820.td.txt", "td\n", 3, &x, &created);
    assert_int_equal(x.restart_ms, 1731000000000LL);
    upload_ok(&e, "shop", 1730500000000LL, "web_1719318147399", "20241101T222640.td.txt", "td\n", 3, &x, &created);
    assert_int_equal(x.restart_ms, 1730000000000LL);
    /* the list's pod filter matches the segment or the joined restart */
    cp_dump_filter f = {.ns = "shop", .pod = "orders-x_1719318147399"};
    metas l = list(&e, &f);
    assert_int_equal(l.n, 2);
    free(l.v);
    f = (cp_dump_filter){.ns = "shop", .service = "orders-svc"};
    l = list(&e, &f);
    assert_int_equal(l.n, 3);
    free(l.v);
    env_close(&e);
}

/* ---- the summary ---------------------------------------------------------------------------- */

typedef struct sums {
    char line[32][256];
    size_t n;
} sums;

static int on_sum(void *ud, const cp_dump_sum *s)
{
    sums *x = ud;
    if (x->n < 32)
        snprintf(x->line[x->n++], sizeof x->line[0], "%s|%s|%s|%s|%s|%llu|%llu|%lld|%lld", s->ns, s->pod,
                 s->restart_pod, s->service, cp_dump_kind_name(s->kind), (unsigned long long)s->count,
                 (unsigned long long)s->bytes, (long long)(s->first_ms - T_2024), (long long)(s->last_ms - T_2024));
    return 0;
}

static void test_summary(void **state)
{
    (void)state;
    env e;
    env_open(&e, "dumps-summary", 0);
    cp_dump_meta m;
    int created;
    upload_ok(&e, "shop", T_2024, "b-pod_1719318147399", "20240731T235800.td.txt", "12345", 5, &m, &created);
    upload_ok(&e, "shop", T_2024 + 60000, "b-pod_1719318147399", "20240731T235900.td.txt", "123", 3, &m, &created);
    upload_ok(&e, "shop", T_2024 + 1000, "b-pod_1719318147399", "20240731T235801.top.txt", "1", 1, &m, &created);
    upload_ok(&e, "shop", T_2024, "a-pod", "gc.log", "gc", 2, &m, &created);
    upload_ok(&e, "ZZ", T_2024, "a-pod", "gc.log", "gc", 2, &m, &created);
    upload_ok(&e, "shop", T_2024 + 2000, "a-pod", "gc.log", "gone", 4, &m, &created);
    char err[512];
    assert_int_equal(cp_dumps_delete(e.d, m.id, cp_now_ms(), err, sizeof err), CP_OK);
    sums s = {0};
    cp_dump_filter f = {0};
    assert_int_equal(cp_dumps_summary(e.d, &f, on_sum, &s, err, sizeof err), CP_OK);
    assert_int_equal(s.n, 4);
    assert_string_equal(s.line[0], "ZZ|a-pod||a|gc|1|2|0|0");
    assert_string_equal(s.line[1], "shop|a-pod||a|gc|1|2|0|0");
    assert_string_equal(s.line[2], "shop|b-pod_1719318147399||b|td|2|8|0|60000");
    assert_string_equal(s.line[3], "shop|b-pod_1719318147399||b|top|1|1|1000|1000");
    memset(&s, 0, sizeof s);
    f = (cp_dump_filter){.ns = "shop", .kind = CP_DUMP_TD};
    assert_int_equal(cp_dumps_summary(e.d, &f, on_sum, &s, err, sizeof err), CP_OK);
    assert_int_equal(s.n, 1);
    env_close(&e);
}

/* ---- compaction ------------------------------------------------------------------------------ */

static int have_node_tools(void)
{
    struct stat sb;
    return stat(CP_SOURCE_DIR "/tests/tools/node_modules/@duckdb/node-api", &sb) == 0;
}

static void to_hex(const uint8_t *p, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++) snprintf(out + 2 * i, 3, "%02x", p[i]);
}

/* DuckDB reads the file: one row per compacted record, in the file's order, with its
 * bytes, type, pod and id. */
static void duckdb_check(env *e, const char *key, const cp_dump_meta *rows, const cp_buf *bodies, size_t n)
{
    if (!have_node_tools()) {
        printf("note: tests/tools/node_modules missing (scripts/node-tools.sh): DuckDB check skipped\n");
        return;
    }
    char local[1200], err[512], cmd[2048];
    snprintf(local, sizeof local, "%s/check.parquet", e->dir);
    if (e->store->ops->get_file(e->store, key, local, err, sizeof err) != CP_OK) fail_msg("get %s: %s", key, err);
    snprintf(cmd, sizeof cmd, "node %s/tests/tools/pqread.mjs duckdb rows '%s'", CP_SOURCE_DIR, local);
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    size_t cap = 8u << 20, got = 0;
    char *line = malloc(cap), *hex = malloc(cap);
    while (fgets(line, (int)cap, p)) {
        json_error_t je;
        json_t *row = json_loads(line, 0, &je);
        if (!row) fail_msg("duckdb %s: not JSON: %.200s", key, line);
        const char *id = NULL;
        json_t *params = json_object_get(row, "params"), *kv;
        size_t i;
        json_array_foreach(params, i, kv) if (!strcmp(json_string_value(json_array_get(kv, 0)), "id")) id =
            json_string_value(json_array_get(kv, 1));
        assert_non_null(id);
        size_t k = 0;
        while (k < n && rows[k].id != strtoll(id, NULL, 10)) k++;
        if (k == n) fail_msg("duckdb %s: row of id %s is not expected here", key, id);
        assert_int_equal(rows[k].cold_row, (int64_t)got);
        assert_string_equal(json_string_value(json_object_get(row, "dump_type")), cp_dump_kind_name(rows[k].kind));
        assert_string_equal(json_string_value(json_object_get(row, "pod_name")), rows[k].pod);
        assert_string_equal(json_string_value(json_object_get(row, "bytes_size")),
                            (snprintf(cmd, sizeof cmd, "%llu", (unsigned long long)rows[k].bytes), cmd));
        to_hex(bodies[k].data, bodies[k].len, hex);
        assert_string_equal(json_string_value(json_object_get(row, "binary_data")), hex);
        json_decref(row);
        got++;
    }
    free(line);
    free(hex);
    assert_int_equal(pclose(p), 0);
    assert_int_equal(got, n);
    printf("DuckDB reads %s: %zu rows, bytes identical (%s)\n", key, got, test_pair_name());
}

static void test_compaction(void **state)
{
    (void)state;
    env e;
    env_open(&e, "dumps-compact", 0);
    static const char *const names[] = {"20231219T061734UTC.td.txt", "20230804T164402.td.txt",
                                        "20231219T061734UTC.top.txt", "20231219T062953UTC.gc.log"};
    cp_buf fx[4];
    for (int i = 0; i < 4; i++) {
        char rel[128];
        snprintf(rel, sizeof rel, "dumps/%s", names[i]);
        cp_buf_init(&fx[i]);
        load_fixture(rel, &fx[i]);
    }
    /* hour 06: td x3 (two pods, out of order), top, gc; hour 07: td; namespace "x y": td */
    struct { const char *ns, *pod; int64_t t; int fx; } up[] = {
        {"shop", "p2", T_2023, 0},          {"shop", "p1", T_2023 + 60000, 1}, {"shop", "p1", T_2023 + 1000, 0},
        {"shop", "p1", T_2023 + 2000, 2},   {"shop", "p1", T_2023 + 3000, 3}, {"shop", "p1", T_2023 + HOUR, 1},
        {"x y", "p1", T_2023, 0},
    };
    enum { N = 7 };
    cp_dump_meta m[N + 1];
    cp_buf body[N + 1];
    int created;
    for (int i = 0; i < N; i++) {
        char name[64];
        snprintf(name, sizeof name, "%s", names[up[i].fx]);
        if (i == 1 || i == 5) snprintf(name, sizeof name, "2023121%dT0%d1800.td.txt", 9, i == 1 ? 6 : 7);
        if (i == 2) snprintf(name, sizeof name, "20231219T061735.td.txt");
        upload_ok(&e, up[i].ns, up[i].t, up[i].pod, name, fx[up[i].fx].data, fx[up[i].fx].len, &m[i], &created);
        body[i] = fx[up[i].fx];
    }
    /* a heap dump is an object and stays one */
    cp_buf heap;
    cp_buf_init(&heap);
    load_fixture("dumps/test-service.heap.hprof.zip", &heap);
    cp_dump_meta hm;
    upload_ok(&e, "shop", T_2023, "p1", "20231219T061734.hprof.zip", heap.data, heap.len, &hm, &created);

    char err[1024];
    cp_dumps_compact_stats st;
    assert_int_equal(cp_dumps_compact(e.d, T_2023 - HOUR, cp_now_ms(), 0, NULL, NULL, &st, err, sizeof err), CP_OK);
    assert_int_equal(st.dumps_moved, 0); /* nothing before `until` */
    assert_int_equal(cp_dumps_compact(e.d, cp_now_ms(), cp_now_ms(), 0, NULL, NULL, &st, err, sizeof err), CP_OK);
    assert_int_equal(st.dumps_moved, N);
    assert_int_equal(st.files_written, 5);
    assert_true(st.bytes_written > 0);
    keys *k = store_keys(&e);
    assert_int_equal(k->n, 6);
    static const char *const want[] = {
        "2023/12/19/06/shop/profiler-td.parquet", "2023/12/19/06/shop/profiler-top.parquet",
        "2023/12/19/06/shop/profiler-gc.parquet", "2023/12/19/07/shop/profiler-td.parquet",
        "2023/12/19/06/x-782079/profiler-td.parquet"};
    for (size_t i = 0; i < CP_ARRAY_LEN(want); i++)
        if (!has_key(k, want[i])) fail_msg("no object %s", want[i]);
    free(k);
    for (int i = 0; i < N; i++) {
        cp_dump_meta g;
        get_ok(&e, m[i].id, &g);
        assert_int_equal(g.location, CP_DUMP_COLD);
        assert_int_equal(g.version, 1);
        assert_string_equal(g.sha256, m[i].sha256);
        assert_bytes(&e, &g, body[i].data, body[i].len);
        m[i] = g;
    }
    /* sorted by pod then time within a file */
    assert_string_equal(m[2].key, "2023/12/19/06/shop/profiler-td.parquet");
    assert_int_equal(m[2].cold_row, 0);
    assert_int_equal(m[1].cold_row, 1);
    assert_int_equal(m[0].cold_row, 2);
    assert_string_equal(m[5].key, "2023/12/19/07/shop/profiler-td.parquet");
    assert_string_equal(m[6].key, "2023/12/19/06/x-782079/profiler-td.parquet");
    cp_dump_meta g;
    get_ok(&e, hm.id, &g);
    assert_int_equal(g.location, CP_DUMP_OBJECT);
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM dumps WHERE binary_data IS NOT NULL", NULL, 0), 0);
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM s3_files WHERE file_type = 'dumps' AND status = 'completed'"
                                 " AND start_time = 1702965600000 AND end_time = 1702969200000",
                             NULL, 0),
                     4);
    cp_dump_meta rows3[3] = {m[2], m[1], m[0]};
    cp_buf bodies3[3] = {body[2], body[1], body[0]};
    duckdb_check(&e, "2023/12/19/06/shop/profiler-td.parquet", rows3, bodies3, 3);

    /* a second upload into the same hour: a second claim, a file of its own */
    upload_ok(&e, "shop", T_2023 + 5000, "p3", "20231219T061739.td.txt", fx[0].data, fx[0].len, &m[N], &created);
    body[N] = fx[0];
    assert_int_equal(cp_dumps_compact(e.d, cp_now_ms(), cp_now_ms(), 0, NULL, NULL, &st, err, sizeof err), CP_OK);
    assert_int_equal(st.dumps_moved, 1);
    get_ok(&e, m[N].id, &g);
    assert_int_equal(g.location, CP_DUMP_COLD);
    char want_key[256];
    snprintf(want_key, sizeof want_key, "2023/12/19/06/shop/profiler-td.d20231219_06_%lldv1.parquet",
             (long long)m[N].id);
    assert_string_equal(g.key, want_key);
    assert_int_equal(g.cold_row, 0);
    assert_bytes(&e, &g, body[N].data, body[N].len);
    k = store_keys(&e);
    assert_true(has_key(k, want_key));
    free(k);

    /* a cold file replaced: hot again with the new bytes, the others untouched */
    upload_ok(&e, "shop", T_2023 + 60000, "p1", "20231219T061800.td.txt", "new bytes", 9, &g, &created);
    assert_int_equal(created, 0);
    assert_int_equal(g.id, m[1].id);
    assert_int_equal(g.version, 2);
    assert_int_equal(g.location, CP_DUMP_HOT);
    assert_int_equal(g.cold_row, -1);
    assert_bytes(&e, &g, (const uint8_t *)"new bytes", 9);
    assert_bytes(&e, &m[0], body[0].data, body[0].len);
    /* ... and compacted again into a file of another claim */
    assert_int_equal(cp_dumps_compact(e.d, cp_now_ms(), cp_now_ms(), 0, NULL, NULL, &st, err, sizeof err), CP_OK);
    assert_int_equal(st.dumps_moved, 1);
    get_ok(&e, m[1].id, &g);
    assert_int_equal(g.location, CP_DUMP_COLD);
    snprintf(want_key, sizeof want_key, "2023/12/19/06/shop/profiler-td.d20231219_06_%lldv2.parquet",
             (long long)m[1].id);
    assert_string_equal(g.key, want_key);
    assert_bytes(&e, &g, (const uint8_t *)"new bytes", 9);
    /* nothing left to do */
    assert_int_equal(cp_dumps_compact(e.d, cp_now_ms(), cp_now_ms(), 0, NULL, NULL, &st, err, sizeof err), CP_OK);
    assert_int_equal(st.dumps_moved, 0);
    assert_int_equal(tmp_files(&e), 0);
    for (int i = 0; i < 4; i++) cp_buf_free(&fx[i]);
    cp_buf_free(&heap);
    env_close(&e);
}

static void progress_line(void *ud, const char *line)
{
    (void)ud;
    printf("%s\n", line);
}

static void test_takeover(void **state)
{
    (void)state;
    env e;
    env_open(&e, "dumps-takeover", 0);
    cp_dump_meta a, b, c;
    int created;
    upload_ok(&e, "shop", T_2023, "p1", "20231219T061734.td.txt", "aaaa", 4, &a, &created);
    upload_ok(&e, "shop", T_2023 + 1000, "p2", "20231219T061735.td.txt", "bbbbb", 5, &b, &created);
    upload_ok(&e, "shop", T_2023 + 2 * HOUR, "p1", "20231219T081734.td.txt", "cc", 2, &c, &created);
    /* a compactor that died in hour 06 (claim a day old, a file half made), one alive in 08 */
    sql(&e, "UPDATE dumps SET claim = 'd20231219_06_1', claimed_by = 'dead', claimed_at = 1000"
            " WHERE dir_time < 1702969200000", NULL, 0);
    cp_sql_val now[] = {cp_sql_i64(cp_now_ms())};
    sql(&e, "UPDATE dumps SET claim = 'd20231219_08_3', claimed_by = 'alive', claimed_at = $1"
            " WHERE dir_time >= 1702969200000", now, 1);
    sql(&e, "INSERT INTO s3_files (uuid, start_time, end_time, file_type, dump_type, namespace, status, object_key,"
            " claim) VALUES ('2023/12/19/06/shop/profiler-td.parquet', 1702965600000, 1702969200000, 'dumps', 'td',"
            " 'shop', 'transferring', '2023/12/19/06/shop/profiler-td.parquet', 'd20231219_06_1')", NULL, 0);
    char err[1024];
    assert_int_equal(e.store->ops->put(e.store, "2023/12/19/06/shop/profiler-td.parquet", "junk", 4, err, sizeof err),
                     CP_OK);
    cp_dumps_compact_stats st;
    assert_int_equal(cp_dumps_compact(e.d, cp_now_ms(), cp_now_ms(), 0, progress_line, NULL, &st, err, sizeof err),
                     CP_OK);
    assert_int_equal(st.dumps_moved, 2); /* the dead one's; the live claim is left alone */
    cp_dump_meta g;
    get_ok(&e, a.id, &g);
    assert_int_equal(g.location, CP_DUMP_COLD);
    assert_string_equal(g.key, "2023/12/19/06/shop/profiler-td.parquet");
    assert_bytes(&e, &g, (const uint8_t *)"aaaa", 4);
    get_ok(&e, b.id, &g);
    assert_bytes(&e, &g, (const uint8_t *)"bbbbb", 5);
    get_ok(&e, c.id, &g);
    assert_int_equal(g.location, CP_DUMP_HOT);
    /* `compact --take-over` takes the live one too */
    assert_int_equal(cp_dumps_compact(e.d, cp_now_ms(), cp_now_ms(), 1, progress_line, NULL, &st, err, sizeof err),
                     CP_OK);
    assert_int_equal(st.dumps_moved, 1);
    get_ok(&e, c.id, &g);
    assert_int_equal(g.location, CP_DUMP_COLD);
    assert_string_equal(g.key, "2023/12/19/08/shop/profiler-td.parquet");
    assert_bytes(&e, &g, (const uint8_t *)"cc", 2);
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM dumps WHERE claim IS NOT NULL", NULL, 0), 0);
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM s3_files WHERE status <> 'completed'", NULL, 0), 0);
    env_close(&e);
}

/* ---- retention ------------------------------------------------------------------------------- */

static void test_retention(void **state)
{
    (void)state;
    env e;
    env_open(&e, "dumps-retention", 0);
    cp_buf heap;
    cp_buf_init(&heap);
    load_fixture("dumps/test-service.heap.hprof.zip", &heap);
    cp_dump_meta old_td, old_heap, recent, m;
    int created;
    char err[1024];
    upload_ok(&e, "shop", T_2023, "p1", "20231219T061734.td.txt", "old", 3, &old_td, &created);
    upload_ok(&e, "shop", T_2023, "p1", "20231219T061734.hprof.zip", heap.data, heap.len, &old_heap, &created);
    upload_ok(&e, "shop", T_2024, "p1", "20240731T235800.td.txt", "recent", 6, &recent, &created);
    cp_dumps_compact_stats cs;
    assert_int_equal(cp_dumps_compact(e.d, T_2023 + HOUR, cp_now_ms(), 0, NULL, NULL, &cs, err, sizeof err), CP_OK);
    assert_int_equal(cs.dumps_moved, 1);
    /* heap dumps of 2024: five of p1, two of p2 */
    int64_t p1[5];
    for (int i = 0; i < 5; i++) {
        char name[64];
        snprintf(name, sizeof name, "20240731T23580%d.hprof.zip", i);
        upload_ok(&e, "shop", T_2024 + i * 1000, "p1", name, heap.data, heap.len, &m, &created);
        p1[i] = m.id;
    }
    upload_ok(&e, "shop", T_2024, "p2", "20240731T235800.hprof.zip", heap.data, heap.len, &m, &created);
    upload_ok(&e, "shop", T_2024 + 1000, "p2", "20240731T235801.hprof.zip", heap.data, heap.len, &m, &created);
    /* an upload that died between its put and its commit */
    cp_sql_val pv[] = {cp_sql_text("2024/07/31/23/shop/p9/orphan.hprof.zip")};
    sql(&e, "INSERT INTO dump_pending (object_key, node, created_time) VALUES ($1, 'dead', 1000)", pv, 1);
    assert_int_equal(e.store->ops->put(e.store, "2024/07/31/23/shop/p9/orphan.hprof.zip", "x", 1, err, sizeof err),
                     CP_OK);
    keys *k = store_keys(&e);
    assert_int_equal(k->n, 1 + 1 + 5 + 2 + 1); /* parquet, old heap, 7 heaps, orphan */
    free(k);

    cp_dumps_retention_stats rs;
    assert_int_equal(cp_dumps_retention(e.d, 1704067200000LL /* 2024-01-01 */, 2, 0, cp_now_ms(), &rs, err, sizeof err),
                     CP_OK);
    assert_int_equal(rs.expired, 2);
    assert_int_equal(rs.heaps_trimmed, 3);
    assert_int_equal(rs.pending_swept, 1);
    assert_int_equal(rs.objects_deleted, 1 + 1 + 3); /* old heap, the Parquet file, 3 heaps */
    cp_dump_meta g;
    assert_int_equal(cp_dumps_get(e.d, old_td.id, &g, err, sizeof err), CP_ENOTFOUND);
    assert_int_equal(cp_dumps_get(e.d, old_heap.id, &g, err, sizeof err), CP_ENOTFOUND);
    get_ok(&e, recent.id, &g);
    for (int i = 0; i < 5; i++)
        assert_int_equal(cp_dumps_get(e.d, p1[i], &g, err, sizeof err), i < 3 ? CP_ENOTFOUND : CP_OK);
    cp_dump_filter f = {.kind = CP_DUMP_HEAP};
    metas l = list(&e, &f);
    assert_int_equal(l.n, 4);
    free(l.v);
    k = store_keys(&e);
    assert_int_equal(k->n, 4);
    assert_int_equal(count_keys_with(k, "p9/orphan"), 0);
    assert_int_equal(count_keys_with(k, ".parquet"), 0);
    assert_int_equal(count_keys_with(k, "2023/"), 0);
    free(k);
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM s3_files", NULL, 0), 0);
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM dump_pending", NULL, 0), 0);
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM dumps WHERE state = 'deleted'", NULL, 0), 3);
    /* a second run has nothing left to do */
    assert_int_equal(cp_dumps_retention(e.d, 1704067200000LL, 2, 0, cp_now_ms(), &rs, err, sizeof err), CP_OK);
    assert_int_equal(rs.expired + rs.heaps_trimmed + rs.objects_deleted + rs.pending_swept, 0);
    cp_buf_free(&heap);
    env_close(&e);
}

/* ---- `cloudprof compact` ---------------------------------------------------------------------- */

static void test_cli(void **state)
{
    (void)state;
    env e;
    env_open(&e, "dumps-cli", 0);
    cp_buf heap;
    cp_buf_init(&heap);
    load_fixture("dumps/test-service.heap.hprof.zip", &heap);
    cp_dump_meta td, m;
    int created;
    upload_ok(&e, "shop", T_2023, "p1", "20231219T061734.td.txt", "a thread dump", 13, &td, &created);
    for (int i = 0; i < 3; i++) {
        char name[64];
        snprintf(name, sizeof name, "20240731T23580%d.hprof.zip", i);
        upload_ok(&e, "shop", T_2024 + i * 1000, "p1", name, heap.data, heap.len, &m, &created);
    }
    char data[1200];
    snprintf(data, sizeof data, "%s/data", e.dir);
    const char *argv[24];
    size_t n = 0;
    argv[n++] = "compact";
    argv[n++] = "--data";
    argv[n++] = data;
    for (const char *const *pf = test_pair_flags(e.catalog, e.store_url); *pf; pf++) argv[n++] = *pf;
    argv[n++] = "--retention";
    argv[n++] = "3650d";
    argv[n++] = "--heap-keep";
    argv[n++] = "x";
    argv[n] = NULL;
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    assert_int_equal(cli_run(&out, &err, argv), 2);
    cp_buf_putc(&err, 0);
    assert_non_null(strstr((const char *)err.data, "--heap-keep"));
    argv[n - 1] = "1";
    cp_buf_reset(&out);
    cp_buf_reset(&err);
    int rc = cli_run(&out, &err, argv);
    cp_buf_putc(&out, 0);
    cp_buf_putc(&err, 0);
    if (rc != 0) fail_msg("compact exited %d: %s", rc, (const char *)err.data);
    printf("%s%s", (const char *)err.data, (const char *)out.data);
    assert_non_null(strstr((const char *)out.data, "compacted 1 diagnostic files -> 1 files"));
    assert_non_null(strstr((const char *)out.data, "0 diagnostic files expired, 2 heap dumps trimmed, 2 objects"));
    assert_non_null(strstr((const char *)err.data, "dumps: 2023/12/19/06/shop/profiler-td.parquet: 1 dumps"));
    cp_dump_meta g;
    get_ok(&e, td.id, &g);
    assert_int_equal(g.location, CP_DUMP_COLD);
    assert_bytes(&e, &g, (const uint8_t *)"a thread dump", 13);
    cp_dump_filter f = {.kind = CP_DUMP_HEAP};
    metas l = list(&e, &f);
    assert_int_equal(l.n, 1);
    assert_int_equal(l.v[0].id, m.id);
    free(l.v);
    cp_buf_free(&out);
    cp_buf_free(&err);
    cp_buf_free(&heap);
    env_close(&e);
}

/* ---- many threads on one cp_dumps ---------------------------------------------------------- */

enum { CONC_THREADS = 4, CONC_EACH = 12 };

typedef struct conc {
    env *e;
    int t;
    int failures;
    char err[512];
} conc;

static void *conc_main(void *arg)
{
    conc *c = arg;
    for (int i = 0; i < CONC_EACH; i++) {
        char body[2600], file[64];
        /* every third upload replaces the shared small file, every third the shared large
         * one (an object: inline_max is 1 KiB), the rest are files of their own */
        size_t n = (size_t)snprintf(body, sizeof body, "thread %d upload %d ", c->t, i);
        int kind = i % 3;
        if (kind == 1) {
            memset(body + n, 'a' + c->t, 2000);
            n += 2000;
        }
        if (kind == 2) snprintf(file, sizeof file, "20231219T0617%02d.td.txt", c->t * CONC_EACH + i);
        cp_dump_meta m;
        int created;
        int st = upload(c->e, "shop", T_2023, "p1", kind == 0 ? "gc.log" : kind == 1 ? "core" : file, body, n, &m,
                        &created);
        if (st != CP_OK) c->failures++;
        else {
            char sha[65];
            sha_hex(body, n, sha);
            if (strcmp(sha, m.sha256)) c->failures++;
        }
    }
    return NULL;
}

typedef struct compactor_arg {
    env *e;
    volatile int stop;
    int runs, failures;
    uint64_t moved;
    char err[1024];
} compactor_arg;

static void *compactor_main(void *arg)
{
    compactor_arg *a = arg;
    while (!a->stop) {
        cp_dumps_compact_stats st;
        if (cp_dumps_compact(a->e->d, cp_now_ms(), cp_now_ms(), 0, NULL, NULL, &st, a->err, sizeof a->err) != CP_OK)
            a->failures++;
        a->moved += st.dumps_moved;
        a->runs++;
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    (void)state;
    env e;
    env_open(&e, "dumps-concurrent", 1024);
    cp_dumps_close(e.d); /* again with a pool smaller than the threads */
    char err[1024];
    cp_dumps_config dc = {.catalog = e.catalog, .store = e.store, .tmp_dir = e.tmp, .inline_max = 1024,
                          .connections = 2, .node = "test-node"};
    if (cp_dumps_open(&dc, &e.d, err, sizeof err) != CP_OK) fail_msg("cp_dumps_open: %s", err);
    pthread_t th[CONC_THREADS], ct;
    conc c[CONC_THREADS];
    compactor_arg ca = {.e = &e};
    pthread_create(&ct, NULL, compactor_main, &ca);
    for (int i = 0; i < CONC_THREADS; i++) {
        c[i] = (conc){.e = &e, .t = i};
        pthread_create(&th[i], NULL, conc_main, &c[i]);
    }
    for (int i = 0; i < CONC_THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(c[i].failures, 0);
    }
    ca.stop = 1;
    pthread_join(ct, NULL);
    if (ca.failures) fail_msg("compaction failed: %s", ca.err);
    printf("%d compaction runs moved %llu files while %d threads uploaded\n", ca.runs, (unsigned long long)ca.moved,
           CONC_THREADS);
    /* one row per path, each replacement counted once */
    metas l = list(&e, NULL);
    assert_int_equal(l.n, 2 + CONC_THREADS * CONC_EACH / 3);
    int objects = 0;
    for (size_t i = 0; i < l.n; i++) {
        cp_dump_meta *m = &l.v[i];
        if (!strcmp(m->name, "gc.log") || !strcmp(m->name, "core"))
            assert_int_equal(m->version, CONC_THREADS * CONC_EACH / 3);
        else
            assert_int_equal(m->version, 1);
        objects += m->location == CP_DUMP_OBJECT;
        uint8_t *p = NULL;
        size_t n = 0;
        if (cp_dumps_load(e.d, m, 1 << 20, &p, &n, err, sizeof err) != CP_OK) fail_msg("load %s: %s", m->name, err);
        char sha[65];
        sha_hex(p, n, sha);
        assert_string_equal(sha, m->sha256); /* the bytes are those of the recorded version */
        free(p);
    }
    free(l.v);
    /* the store holds exactly the objects the records point at (no orphan, none missing) */
    cp_dumps_compact_stats st;
    assert_int_equal(cp_dumps_compact(e.d, cp_now_ms(), cp_now_ms(), 0, NULL, NULL, &st, err, sizeof err), CP_OK);
    int64_t files = sql_int(&e, "SELECT count(*) FROM s3_files WHERE status = 'completed'", NULL, 0);
    keys *k = store_keys(&e);
    assert_int_equal(objects, 1);
    assert_int_equal((int64_t)k->n, files + objects);
    assert_int_equal(sql_int(&e, "SELECT count(*) FROM dump_pending", NULL, 0), 0);
    free(k);
    assert_int_equal(tmp_files(&e), 0);
    env_close(&e);
}

int main(void)
{
    test_pair_require();
    test_pair_env();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixtures),   cmocka_unit_test(test_replace),  cmocka_unit_test(test_object),
        cmocka_unit_test(test_abort_and_failure), cmocka_unit_test(test_delete), cmocka_unit_test(test_pod_join),
        cmocka_unit_test(test_summary),    cmocka_unit_test(test_compaction), cmocka_unit_test(test_takeover),
        cmocka_unit_test(test_retention),  cmocka_unit_test(test_cli),      cmocka_unit_test(test_concurrent),
    };
    printf("storage pair: %s\n", test_pair_name());
    return cmocka_run_group_tests(tests, NULL, NULL);
}
