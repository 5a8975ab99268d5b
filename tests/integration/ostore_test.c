/* ostore_test.c -- the object stores (src/store/cp_ostore.h): the same cases against a
 * directory store (always) and against S3 when CP_S3_ENDPOINT is set:
 *
 *   CP_S3_ENDPOINT    http://127.0.0.1:18080 (e.g. from scripts/swift-test.sh start)
 *   CP_S3_ACCESS_KEY  default "test:tester"     CP_S3_SECRET_KEY  default "testing"
 *   CP_S3_BUCKET      default "cloudprof-test"  CP_S3_REGION      default "us-east-1"
 *
 * Each S3 run works under its own prefix (ostore-test-<ms>-<pid>/) and deletes what it
 * made. Cases: put / put_file / put_stream / get_file / read ranges / size / list with
 * prefixes and more than 1000 keys (continuation tokens), delete, missing keys, bad keys,
 * multipart (12 MiB with 5 MiB parts), an aborted stream leaves nothing, a bad secret
 * is a 403. Without any server: retries against a dead port and against a small fake
 * S3 that answers 503 / 429 / 403 (counting attempts, checking the signed headers). */
#include "testutil.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cp_fsutil.h"
#include "store/cp_ostore.h"

#define MIB (1024u * 1024u)
#define EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

typedef struct fixture {
    const char *kind;          /* "dir" | "s3" */
    cp_ostore *st;             /* multipart above 8 MiB, 5 MiB parts */
    cp_ostore_config cfg;
    char url[256];
    char *tmp;                 /* local scratch directory */
    char *root;                /* the dir store's root */
    uint64_t t0;
} fixture;

static fixture dir_fx, s3_fx;

static double secs_since(uint64_t t0) { return (double)(cp_mono_ns() - t0) / 1e9; }

static const char *env_or(const char *name, const char *def)
{
    const char *v = getenv(name);
    return v && v[0] ? v : def;
}

/* A local path in the fixture's scratch directory (static buffer, one at a time). */
static const char *local(fixture *f, const char *name)
{
    static char p[1024];
    snprintf(p, sizeof p, "%s/%s", f->tmp, name);
    return p;
}

static void fill_random(uint8_t *p, size_t n, uint64_t seed)
{
    uint64_t s = seed | 1;
    for (size_t i = 0; i < n; i += 8) {
        uint64_t r = test_rand(&s);
        memcpy(p + i, &r, n - i < 8 ? n - i : 8);
    }
}

static void write_local(const char *path, const uint8_t *p, size_t n)
{
    assert_int_equal(cp_write_file_atomic(path, p, n), CP_OK);
}

/* Fails the test unless the local file holds exactly p[0..n). */
static void assert_file_is(const char *path, const uint8_t *p, size_t n)
{
    cp_buf b;
    cp_buf_init(&b);
    load_file(path, &b);
    assert_int_equal(b.len, n);
    assert_true(n == 0 || memcmp(b.data, p, n) == 0);
    cp_buf_free(&b);
}

/* ---- list helpers ---------------------------------------------------------------------- */

typedef struct listed {
    char **keys;
    uint64_t *sizes;
    size_t n, cap;
    size_t stop_after; /* 0: never */
} listed;

static int collect(void *ud, const cp_ostore_item *it)
{
    listed *l = ud;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        l->keys = realloc(l->keys, l->cap * sizeof *l->keys);
        l->sizes = realloc(l->sizes, l->cap * sizeof *l->sizes);
        assert_non_null(l->keys);
        assert_non_null(l->sizes);
    }
    l->keys[l->n] = strdup(it->key);
    l->sizes[l->n] = it->size;
    l->n++;
    return l->stop_after && l->n >= l->stop_after;
}

static void listed_free(listed *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->keys[i]);
    free(l->keys);
    free(l->sizes);
    memset(l, 0, sizeof *l);
}

static void list_into(fixture *f, const char *prefix, listed *l)
{
    char err[512] = "";
    int st = f->st->ops->list(f->st, prefix, collect, l, err, sizeof err);
    if (st != CP_OK) fail_msg("list %s: %s", prefix, err);
}

/* list(prefix) must give exactly the keys of want (a NULL-terminated array, in order). */
static void assert_list(fixture *f, const char *prefix, const char *const *want)
{
    listed l = {0};
    list_into(f, prefix, &l);
    size_t n = 0;
    while (want[n]) n++;
    for (size_t i = 0; i < l.n || i < n; i++) {
        const char *got = i < l.n ? l.keys[i] : "(none)", *exp = i < n ? want[i] : "(none)";
        if (strcmp(got, exp) != 0) fail_msg("list \"%s\" item %zu: got %s, want %s", prefix, i, got, exp);
    }
    listed_free(&l);
}

/* ---- small wrappers that fail the test with the store's message ---------------------- */

#define OK(call)                                                                                                      \
    do {                                                                                                              \
        char err_[512] = "";                                                                                          \
        int st_ = (call);                                                                                             \
        if (st_ != CP_OK) fail_msg("%s: %s (%s)", #call, cp_strstatus(st_), err_);                                   \
    } while (0)

#define PUT(f, key, p, n) OK((f)->st->ops->put((f)->st, key, p, n, err_, sizeof err_))

static uint64_t obj_size(fixture *f, const char *key)
{
    uint64_t sz = 0;
    OK(f->st->ops->size(f->st, key, &sz, err_, sizeof err_));
    return sz;
}

static int status_of_size(fixture *f, const char *key)
{
    char err[512];
    uint64_t sz;
    return f->st->ops->size(f->st, key, &sz, err, sizeof err);
}

/* Deletes everything under prefix (threads for S3: each delete is a round trip). */
static void delete_all(fixture *f, const char *prefix);

/* ---- fixtures --------------------------------------------------------------------------- */

static int open_store(fixture *f)
{
    char err[512] = "";
    int st = cp_ostore_open(&f->cfg, &f->st, err, sizeof err);
    if (st != CP_OK) fprintf(stderr, "ostore_test: cannot open %s: %s\n", f->cfg.url, err);
    return st == CP_OK ? 0 : -1;
}

static int setup_dir(void **state)
{
    fixture *f = &dir_fx;
    f->kind = "dir";
    f->t0 = cp_mono_ns();
    f->tmp = make_temp_dir("ostore");
    if (asprintf(&f->root, "%s/store/root", f->tmp) < 0) return -1;
    f->cfg.url = f->root;
    if (open_store(f) != 0) return -1;
    *state = f;
    return 0;
}

/* The endpoint of the S3 cases: CP_S3_ENDPOINT, or the one scripts/test.sh starts. */
static const char *s3_endpoint(void)
{
    const char *e = getenv("CP_S3_ENDPOINT");
    if (!e || !*e) e = getenv("CP_TEST_S3_ENDPOINT");
    return e && *e ? e : NULL;
}

static int setup_s3(void **state)
{
    fixture *f = &s3_fx;
    f->kind = "s3";
    f->t0 = cp_mono_ns();
    f->tmp = make_temp_dir("ostore-s3");
    snprintf(f->url, sizeof f->url, "s3://%s/ostore-test-%lld-%ld", env_or("CP_S3_BUCKET", "cloudprof-test"),
             (long long)cp_now_ms(), (long)getpid());
    f->cfg.url = f->url;
    f->cfg.endpoint = s3_endpoint();
    f->cfg.region = env_or("CP_S3_REGION", "us-east-1");
    f->cfg.access_key = env_or("CP_S3_ACCESS_KEY", "test:tester");
    f->cfg.secret_key = env_or("CP_S3_SECRET_KEY", "testing");
    f->cfg.multipart_threshold = 8 * MIB;
    f->cfg.part_size = 5 * MIB;
    f->cfg.retries = 2;
    f->cfg.backoff_ms = 100;
    f->cfg.timeout_s = 120;
    f->cfg.list_page = atoi(env_or("CP_S3_LIST_PAGE", "50"));
    if (open_store(f) != 0) return -1;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    if (f->st) {
        delete_all(f, "");
        listed l = {0};
        list_into(f, "", &l);
        if (l.n) fprintf(stderr, "ostore_test: %zu objects left under %s\n", l.n, f->cfg.url);
        listed_free(&l);
        if (!strcmp(f->kind, "dir")) {
            /* nothing but the (now empty) root may remain */
            DIR *d = opendir(f->root);
            struct dirent *e;
            int n = 0;
            while (d && (e = readdir(d)) != NULL)
                if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) fprintf(stderr, "left: %s\n", e->d_name), n++;
            if (d) closedir(d);
            if (n) fprintf(stderr, "ostore_test: %d entries left in the dir store's root\n", n);
        }
        cp_ostore_close(f->st);
    }
    printf("ostore_test: %s store cases took %.2f s\n", f->kind, secs_since(f->t0));
    remove_tree(f->tmp);
    free(f->tmp);
    free(f->root);
    return 0;
}

/* ---- cases ------------------------------------------------------------------------------- */

static void test_key_rules(void **state)
{
    static const char *const good[] = {"a", "a/b", "2026/01/02/13/ns/cloud_profiler_10ms.parquet", "...", ".a/b_c-d",
                                       "A-Z.0_9"};
    static const char *const bad[] = {"", "/a", "a/", "a//b", ".", "..", "./a", "a/..", "a/../b", "a b", "a\\b",
                                      "a:b", "caf\xc3\xa9", "a?b", "a%2Fb", "a\nb"};
    for (size_t i = 0; i < CP_ARRAY_LEN(good); i++)
        if (!cp_ostore_key_ok(good[i])) fail_msg("key \"%s\" should be accepted", good[i]);
    for (size_t i = 0; i < CP_ARRAY_LEN(bad); i++)
        if (cp_ostore_key_ok(bad[i])) fail_msg("key \"%s\" should be refused", bad[i]);
    assert_false(cp_ostore_key_ok(NULL));
    char k[CP_OSTORE_MAX_KEY + 2];
    memset(k, 'k', sizeof k);
    k[CP_OSTORE_MAX_KEY] = 0;
    assert_true(cp_ostore_key_ok(k));
    k[CP_OSTORE_MAX_KEY] = 'k';
    k[CP_OSTORE_MAX_KEY + 1] = 0;
    assert_false(cp_ostore_key_ok(k));

    /* configurations that cannot work are refused before any I/O */
    char err[256];
    cp_ostore *s = NULL;
    cp_ostore_config c = {.url = "s3://b"};
    assert_int_equal(cp_ostore_open(&c, &s, err, sizeof err), CP_EINVAL); /* no endpoint, short bucket */
    c = (cp_ostore_config){.url = "s3://bucket/p", .endpoint = "http://127.0.0.1:1", .access_key = "a",
                           .secret_key = "b", .part_size = MIB};
    assert_int_equal(cp_ostore_open(&c, &s, err, sizeof err), CP_EINVAL); /* part below 5 MiB */
    assert_non_null(strstr(err, "part_size"));
    c.part_size = 0;
    c.url = "s3://bucket/a//b";
    assert_int_equal(cp_ostore_open(&c, &s, err, sizeof err), CP_EINVAL);
    c.url = "ftp://x/y";
    assert_int_equal(cp_ostore_open(&c, &s, err, sizeof err), CP_EINVAL);
    assert_null(s);
}

static void test_put_read(void **state)
{
    fixture *f = *state;
    const char *k = "pr/a/b/hello.txt";
    PUT(f, k, "hello world", 11);
    assert_int_equal(obj_size(f, k), 11);
    char buf[16] = "";
    OK(f->st->ops->read(f->st, k, buf, 5, 0, err_, sizeof err_));
    assert_memory_equal(buf, "hello", 5);
    OK(f->st->ops->read(f->st, k, buf, 5, 6, err_, sizeof err_));
    assert_memory_equal(buf, "world", 5);
    OK(f->st->ops->read(f->st, k, buf, 11, 0, err_, sizeof err_));
    assert_memory_equal(buf, "hello world", 11);
    OK(f->st->ops->read(f->st, k, buf, 0, 11, err_, sizeof err_)); /* nothing, at the very end */

    /* ranges past the end: CP_ECORRUPT */
    char err[512];
    assert_int_equal(f->st->ops->read(f->st, k, buf, 6, 6, err, sizeof err), CP_ECORRUPT);
    assert_int_equal(f->st->ops->read(f->st, k, buf, 1, 11, err, sizeof err), CP_ECORRUPT);
    assert_int_equal(f->st->ops->read(f->st, k, buf, 1, 1000, err, sizeof err), CP_ECORRUPT);
    assert_int_equal(f->st->ops->read(f->st, k, buf, 0, 12, err, sizeof err), CP_ECORRUPT);

    /* replacing */
    PUT(f, k, "bye", 3);
    assert_int_equal(obj_size(f, k), 3);
    OK(f->st->ops->get_file(f->st, k, local(f, "hello.out"), err_, sizeof err_));
    assert_file_is(local(f, "hello.out"), (const uint8_t *)"bye", 3);

    /* an empty object */
    PUT(f, "pr/empty", "", 0);
    assert_int_equal(obj_size(f, "pr/empty"), 0);
    OK(f->st->ops->get_file(f->st, "pr/empty", local(f, "empty.out"), err_, sizeof err_));
    assert_file_is(local(f, "empty.out"), NULL, 0);

    /* url */
    cp_buf u;
    cp_buf_init(&u);
    assert_int_equal(f->st->ops->url(f->st, k, &u), CP_OK);
    assert_int_equal(cp_buf_putc(&u, 0), CP_OK);
    if (!strcmp(f->kind, "dir")) {
        char want[1200];
        snprintf(want, sizeof want, "file://%s/%s", f->root, k);
        assert_string_equal((char *)u.data, want);
    } else {
        char want[1200];
        snprintf(want, sizeof want, "%s/%s", f->url, k);
        assert_string_equal((char *)u.data, want);
    }
    cp_buf_reset(&u);
    assert_int_equal(f->st->ops->url(f->st, "../x", &u), CP_EINVAL);
    cp_buf_free(&u);
    delete_all(f, "pr/");
}

static void test_put_file_get_file(void **state)
{
    fixture *f = *state;
    size_t n = 300 * 1024 + 7;
    uint8_t *data = malloc(n);
    fill_random(data, n, 42);
    write_local(local(f, "src.bin"), data, n);
    OK(f->st->ops->put_file(f->st, "pf/src.bin", local(f, "src.bin"), err_, sizeof err_));
    assert_int_equal(obj_size(f, "pf/src.bin"), n);
    OK(f->st->ops->get_file(f->st, "pf/src.bin", local(f, "dst.bin"), err_, sizeof err_));
    assert_file_is(local(f, "dst.bin"), data, n);
    /* get_file replaces an existing local file */
    write_local(local(f, "dst2.bin"), (const uint8_t *)"old", 3);
    OK(f->st->ops->get_file(f->st, "pf/src.bin", local(f, "dst2.bin"), err_, sizeof err_));
    assert_file_is(local(f, "dst2.bin"), data, n);
    /* a range in the middle */
    uint8_t mid[1000];
    OK(f->st->ops->read(f->st, "pf/src.bin", mid, sizeof mid, 123456, err_, sizeof err_));
    assert_memory_equal(mid, data + 123456, sizeof mid);
    free(data);
    delete_all(f, "pf/");
}

/* put_file_move: the object is the file; a directory store on the same file system took
 * the file itself (renamed, so it is gone locally), S3 copied it. */
static void test_put_file_move(void **state)
{
    fixture *f = *state;
    size_t n = 200 * 1024 + 3;
    uint8_t *data = malloc(n);
    fill_random(data, n, 7);
    write_local(local(f, "mv.bin"), data, n);
    OK(cp_ostore_put_file_move(f->st, "mv/a/b.bin", local(f, "mv.bin"), err_, sizeof err_));
    assert_int_equal(obj_size(f, "mv/a/b.bin"), n);
    OK(f->st->ops->get_file(f->st, "mv/a/b.bin", local(f, "mv.out"), err_, sizeof err_));
    assert_file_is(local(f, "mv.out"), data, n);
    struct stat sb;
    int gone = stat(local(f, "mv.bin"), &sb) != 0;
    assert_int_equal(gone, !strcmp(f->st->ops->name, "dir"));
    free(data);
    delete_all(f, "mv/");
}

typedef struct mem_reader {
    const uint8_t *p;
    size_t n, pos;
    uint64_t rng;
    size_t abort_at; /* return -1 once pos reaches this (SIZE_MAX: never) */
    int calls;
} mem_reader;

/* Gives the bytes in irregular chunks (1 byte to 100 KB), as a real producer would. */
static long mem_read(void *ud, void *dst, size_t cap)
{
    mem_reader *m = ud;
    m->calls++;
    if (m->pos >= m->abort_at) return -1;
    size_t left = m->n - m->pos;
    if (!left) return 0;
    size_t k = 1 + (size_t)(test_rand(&m->rng) % 100000);
    if (k > cap) k = cap;
    if (k > left) k = left;
    if (m->pos + k > m->abort_at) k = m->abort_at - m->pos;
    memcpy(dst, m->p + m->pos, k);
    m->pos += k;
    return (long)k;
}

static void put_stream_roundtrip(fixture *f, const char *key, size_t n, uint64_t seed)
{
    uint8_t *data = malloc(n ? n : 1);
    fill_random(data, n, seed);
    mem_reader m = {.p = data, .n = n, .rng = seed, .abort_at = SIZE_MAX};
    OK(f->st->ops->put_stream(f->st, key, mem_read, &m, err_, sizeof err_));
    assert_int_equal(m.pos, n);
    assert_int_equal(obj_size(f, key), n);
    OK(f->st->ops->get_file(f->st, key, local(f, "stream.out"), err_, sizeof err_));
    assert_file_is(local(f, "stream.out"), data, n);
    free(data);
}

static void test_put_stream(void **state)
{
    fixture *f = *state;
    put_stream_roundtrip(f, "ps/empty", 0, 1);
    put_stream_roundtrip(f, "ps/small", 100 * 1000 + 3, 2);
    put_stream_roundtrip(f, "ps/exactly-one-part", 5 * MIB, 3);
    /* three parts on S3 (5 + 5 + 2 MiB and a bit) */
    put_stream_roundtrip(f, "ps/large", 12 * MIB + 123, 4);
    delete_all(f, "ps/");
}

static void test_multipart_file(void **state)
{
    fixture *f = *state;
    size_t n = 12 * MIB;
    uint8_t *data = malloc(n);
    fill_random(data, n, 7);
    write_local(local(f, "big.bin"), data, n);
    uint64_t t0 = cp_mono_ns();
    OK(f->st->ops->put_file(f->st, "mp/big.bin", local(f, "big.bin"), err_, sizeof err_));
    double up = secs_since(t0);
    assert_int_equal(obj_size(f, "mp/big.bin"), n);
    t0 = cp_mono_ns();
    OK(f->st->ops->get_file(f->st, "mp/big.bin", local(f, "big.out"), err_, sizeof err_));
    double down = secs_since(t0);
    assert_file_is(local(f, "big.out"), data, n);
    /* ranges across the part boundaries (5 MiB, 10 MiB) and at the very end */
    uint8_t buf[64];
    const uint64_t offs[] = {5 * MIB - 10, 10 * MIB - 32, n - 64, 0};
    for (size_t i = 0; i < CP_ARRAY_LEN(offs); i++) {
        OK(f->st->ops->read(f->st, "mp/big.bin", buf, sizeof buf, offs[i], err_, sizeof err_));
        assert_memory_equal(buf, data + offs[i], sizeof buf);
    }
    char err[512];
    assert_int_equal(f->st->ops->read(f->st, "mp/big.bin", buf, sizeof buf, n - 63, err, sizeof err), CP_ECORRUPT);
    printf("ostore_test: %s: 12 MiB put_file %.2f s, get_file %.2f s\n", f->kind, up, down);
    free(data);
    delete_all(f, "mp/");
}

static void test_missing(void **state)
{
    fixture *f = *state;
    char err[512] = "";
    uint8_t b[4];
    uint64_t sz;
    assert_int_equal(f->st->ops->size(f->st, "missing/key", &sz, err, sizeof err), CP_ENOTFOUND);
    assert_int_equal(f->st->ops->read(f->st, "missing/key", b, 4, 0, err, sizeof err), CP_ENOTFOUND);
    assert_int_equal(f->st->ops->read(f->st, "missing/key", b, 0, 0, err, sizeof err), CP_ENOTFOUND);
    unlink(local(f, "never"));
    assert_int_equal(f->st->ops->get_file(f->st, "missing/key", local(f, "never"), err, sizeof err), CP_ENOTFOUND);
    assert_int_equal(access(local(f, "never"), F_OK), -1); /* nothing written locally */
    assert_int_equal(f->st->ops->del(f->st, "missing/key", err, sizeof err), CP_OK);
    assert_list(f, "missing/", (const char *const[]){NULL});
    /* a "directory" is no object */
    PUT(f, "missing/dir/x", "x", 1);
    assert_int_equal(f->st->ops->size(f->st, "missing/dir", &sz, err, sizeof err), CP_ENOTFOUND);
    assert_int_equal(f->st->ops->del(f->st, "missing/dir", err, sizeof err), CP_OK);
    assert_int_equal(obj_size(f, "missing/dir/x"), 1);
    /* a local file that does not exist is an I/O error, not a missing key */
    int st = f->st->ops->put_file(f->st, "missing/up", local(f, "no-such-file"), err, sizeof err);
    assert_int_equal(st, CP_EIO);
    assert_non_null(strstr(err, "no-such-file"));
    delete_all(f, "missing/");
}

static void test_bad_keys(void **state)
{
    fixture *f = *state;
    static const char *const bad[] = {"", "/abs", "trail/", "a//b", "./a", "a/../../etc/passwd", "..", "a b",
                                      "caf\xc3\xa9", "a?x=1"};
    char err[512];
    uint8_t b[1];
    uint64_t sz;
    long (*rd)(void *, void *, size_t) = mem_read;
    mem_reader m = {.abort_at = SIZE_MAX};
    write_local(local(f, "one"), (const uint8_t *)"1", 1);
    for (size_t i = 0; i < CP_ARRAY_LEN(bad); i++) {
        const char *k = bad[i];
        assert_int_equal(f->st->ops->put(f->st, k, "x", 1, err, sizeof err), CP_EINVAL);
        assert_non_null(strstr(err, "invalid object key"));
        assert_int_equal(f->st->ops->put_file(f->st, k, local(f, "one"), err, sizeof err), CP_EINVAL);
        assert_int_equal(f->st->ops->put_stream(f->st, k, rd, &m, err, sizeof err), CP_EINVAL);
        assert_int_equal(f->st->ops->size(f->st, k, &sz, err, sizeof err), CP_EINVAL);
        assert_int_equal(f->st->ops->read(f->st, k, b, 1, 0, err, sizeof err), CP_EINVAL);
        assert_int_equal(f->st->ops->get_file(f->st, k, local(f, "bad.out"), err, sizeof err), CP_EINVAL);
        assert_int_equal(f->st->ops->del(f->st, k, err, sizeof err), CP_EINVAL);
    }
    assert_int_equal(m.calls, 0);
    char long_key[CP_OSTORE_MAX_KEY + 2];
    memset(long_key, 'k', sizeof long_key - 1);
    long_key[sizeof long_key - 1] = 0;
    assert_int_equal(f->st->ops->put(f->st, long_key, "x", 1, err, sizeof err), CP_EINVAL);
    /* list prefixes may end anywhere, but not climb out or hold foreign characters */
    static const char *const bad_prefixes[] = {"../", "a/../", "a//", "/a", "a b", "./"};
    listed l = {0};
    for (size_t i = 0; i < CP_ARRAY_LEN(bad_prefixes); i++)
        assert_int_equal(f->st->ops->list(f->st, bad_prefixes[i], collect, &l, err, sizeof err), CP_EINVAL);
    assert_int_equal(l.n, 0);
    assert_int_equal(access(local(f, "bad.out"), F_OK), -1);
}

static void test_list(void **state)
{
    fixture *f = *state;
    /* byte order: '-' < '.' < '/' < '0' < 'a' */
    static const char *const keys[] = {"l/b", "l/a/c/d", "l/a0", "l/a.txt", "l/ab", "l/a/b", "l/a-", "lz"};
    for (size_t i = 0; i < CP_ARRAY_LEN(keys); i++) PUT(f, keys[i], keys[i], strlen(keys[i]));
    assert_list(f, "l/", (const char *const[]){"l/a-", "l/a.txt", "l/a/b", "l/a/c/d", "l/a0", "l/ab", "l/b", NULL});
    assert_list(f, "l",
                (const char *const[]){"l/a-", "l/a.txt", "l/a/b", "l/a/c/d", "l/a0", "l/ab", "l/b", "lz", NULL});
    assert_list(f, "l/a", (const char *const[]){"l/a-", "l/a.txt", "l/a/b", "l/a/c/d", "l/a0", "l/ab", NULL});
    assert_list(f, "l/a/", (const char *const[]){"l/a/b", "l/a/c/d", NULL});
    assert_list(f, "l/a/c", (const char *const[]){"l/a/c/d", NULL});
    assert_list(f, "l/a/c/d", (const char *const[]){"l/a/c/d", NULL});
    assert_list(f, "l/zz", (const char *const[]){NULL});
    assert_list(f, "l/zz/", (const char *const[]){NULL});
    assert_list(f, "l/a.txt/", (const char *const[]){NULL}); /* below a file */

    /* sizes, and stopping early */
    listed l = {.stop_after = 2};
    list_into(f, "l/", &l);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.keys[1], "l/a.txt");
    assert_int_equal(l.sizes[1], strlen("l/a.txt"));
    listed_free(&l);

    if (!strcmp(f->kind, "dir")) {
        /* temporary and foreign files in the tree are not objects */
        char p[1200];
        snprintf(p, sizeof p, "%s/l/a/.cp-tmp~0123456789abcdef", f->root);
        write_local(p, (const uint8_t *)"t", 1);
        snprintf(p, sizeof p, "%s/l/a/with space", f->root);
        write_local(p, (const uint8_t *)"t", 1);
        assert_list(f, "l/a/", (const char *const[]){"l/a/b", "l/a/c/d", NULL});
        snprintf(p, sizeof p, "%s/l/a/.cp-tmp~0123456789abcdef", f->root);
        unlink(p);
        snprintf(p, sizeof p, "%s/l/a/with space", f->root);
        unlink(p);
    }
    delete_all(f, "l");
    assert_list(f, "l", (const char *const[]){NULL});
}

/* ---- many keys, from several threads ---------------------------------------------------- */

typedef struct par_job {
    fixture *f;
    size_t n, nthreads, id;
    int del; /* delete instead of put */
    const char *const *keys; /* del: these keys */
    int failures;
    char err[512];
} par_job;

static void *par_worker(void *arg)
{
    par_job *j = arg;
    char key[64];
    for (size_t i = j->id; i < j->n; i += j->nthreads) {
        int st;
        if (j->del) {
            st = j->f->st->ops->del(j->f->st, j->keys[i], j->err, sizeof j->err);
        } else {
            snprintf(key, sizeof key, "many/k%05zu", i);
            st = j->f->st->ops->put(j->f->st, key, key, strlen(key), j->err, sizeof j->err);
        }
        if (st != CP_OK) j->failures++;
    }
    return NULL;
}

#define NTHREADS 8

/* Puts n "many/kNNNNN" objects, or deletes the n keys, from NTHREADS threads. */
static void run_parallel(fixture *f, size_t n, int del, const char *const *keys)
{
    pthread_t th[NTHREADS];
    par_job jobs[NTHREADS];
    for (size_t t = 0; t < NTHREADS; t++) {
        jobs[t] = (par_job){.f = f, .n = n, .nthreads = NTHREADS, .id = t, .del = del, .keys = keys};
        assert_int_equal(pthread_create(&th[t], NULL, par_worker, &jobs[t]), 0);
    }
    for (size_t t = 0; t < NTHREADS; t++) {
        pthread_join(th[t], NULL);
        if (jobs[t].failures) fail_msg("%d %s failures, e.g. %s", jobs[t].failures, del ? "del" : "put", jobs[t].err);
    }
}

static void delete_all(fixture *f, const char *prefix)
{
    listed l = {0};
    list_into(f, prefix, &l);
    run_parallel(f, l.n, 1, (const char *const *)l.keys);
    listed_free(&l);
}

static void test_list_many(void **state)
{
    fixture *f = *state;
    /* more keys than one list page holds, so continuation tokens are used: 1100 for the
     * directory (S3 pages hold 1000); on S3 (Swift does 20 to 50 PUTs or DELETEs a second
     * on a 2-core machine) 150 keys with 50-key pages, unless CP_S3_MANY and
     * CP_S3_LIST_PAGE say otherwise (CP_S3_MANY=1100 CP_S3_LIST_PAGE=1000: full pages) */
    size_t n = 1100;
    if (!strcmp(f->kind, "s3")) n = (size_t)atoi(env_or("CP_S3_MANY", "150"));
    uint64_t t0 = cp_mono_ns();
    run_parallel(f, n, 0, NULL);
    double put_s = secs_since(t0);
    t0 = cp_mono_ns();
    listed l = {0};
    list_into(f, "many/", &l);
    double list_s = secs_since(t0);
    assert_int_equal(l.n, n);
    for (size_t i = 0; i < n; i++) {
        char key[64];
        snprintf(key, sizeof key, "many/k%05zu", i);
        assert_string_equal(l.keys[i], key);
        assert_int_equal(l.sizes[i], strlen(key));
    }
    /* prefixes that end or start where pages do */
    static const char *const prefixes[] = {"many/k0099", "many/k010", "many/k0009", "many/k001", "many/k00", "many/k1"};
    for (size_t p = 0; p < CP_ARRAY_LEN(prefixes); p++) {
        size_t want = 0, pl = strlen(prefixes[p]);
        for (size_t i = 0; i < n; i++) want += strncmp(l.keys[i], prefixes[p], pl) == 0;
        listed l2 = {0};
        list_into(f, prefixes[p], &l2);
        if (l2.n != want) fail_msg("list %s: %zu keys, want %zu", prefixes[p], l2.n, want);
        for (size_t i = 0; i < l2.n; i++) assert_int_equal(strncmp(l2.keys[i], prefixes[p], pl), 0);
        listed_free(&l2);
    }
    t0 = cp_mono_ns();
    run_parallel(f, l.n, 1, (const char *const *)l.keys);
    double del_s = secs_since(t0);
    listed_free(&l);
    assert_list(f, "many/", (const char *const[]){NULL});
    printf("ostore_test: %s: %zu objects: put %.2f s, list %.2f s, delete %.2f s (%d threads)\n", f->kind, n, put_s,
           list_s, del_s, NTHREADS);
}

static void test_delete(void **state)
{
    fixture *f = *state;
    PUT(f, "d/x/keep", "k", 1);
    PUT(f, "d/x/y/z/obj", "o", 1);
    OK(f->st->ops->del(f->st, "d/x/y/z/obj", err_, sizeof err_));
    assert_int_equal(status_of_size(f, "d/x/y/z/obj"), CP_ENOTFOUND);
    OK(f->st->ops->del(f->st, "d/x/y/z/obj", err_, sizeof err_)); /* twice is fine */
    assert_int_equal(obj_size(f, "d/x/keep"), 1);
    if (!strcmp(f->kind, "dir")) {
        /* the emptied directories are gone, the one still holding an object stays */
        char p[1200];
        snprintf(p, sizeof p, "%s/d/x/y", f->root);
        assert_int_equal(access(p, F_OK), -1);
        snprintf(p, sizeof p, "%s/d/x", f->root);
        assert_int_equal(access(p, F_OK), 0);
    }
    OK(f->st->ops->del(f->st, "d/x/keep", err_, sizeof err_));
    if (!strcmp(f->kind, "dir")) {
        char p[1200];
        snprintf(p, sizeof p, "%s/d", f->root);
        assert_int_equal(access(p, F_OK), -1);
        assert_int_equal(access(f->root, F_OK), 0); /* never the root */
    }
    assert_list(f, "d/", (const char *const[]){NULL});
}

/* Files anywhere under dir (the dir store's leftovers). */
static int count_files(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char p[2048];
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (lstat(p, &sb) != 0) continue;
        n += S_ISDIR(sb.st_mode) ? count_files(p) : 1;
    }
    closedir(d);
    return n;
}

/* Multipart uploads in progress under the fixture's prefix (S3 ListMultipartUploads,
 * sent with libcurl directly). */
static int s3_uploads_in_progress(fixture *f, const char *key_prefix);

static void test_stream_abort(void **state)
{
    fixture *f = *state;
    size_t n = 12 * MIB;
    uint8_t *data = malloc(n);
    fill_random(data, n, 9);
    /* aborted at once, inside the first part, and after two parts went up */
    const size_t aborts[] = {0, 100000, 11 * MIB};
    for (size_t i = 0; i < CP_ARRAY_LEN(aborts); i++) {
        mem_reader m = {.p = data, .n = n, .rng = i + 1, .abort_at = aborts[i]};
        char err[512] = "";
        int st = f->st->ops->put_stream(f->st, "ab/heap.hprof", mem_read, &m, err, sizeof err);
        assert_int_equal(st, CP_EABORT);
        assert_non_null(strstr(err, "abort"));
        assert_int_equal(status_of_size(f, "ab/heap.hprof"), CP_ENOTFOUND);
        assert_list(f, "ab/", (const char *const[]){NULL});
    }
    /* an abort does not hurt an object already there */
    PUT(f, "ab/heap.hprof", "old", 3);
    mem_reader m = {.p = data, .n = n, .rng = 5, .abort_at = 6 * MIB};
    char err[512];
    assert_int_equal(f->st->ops->put_stream(f->st, "ab/heap.hprof", mem_read, &m, err, sizeof err), CP_EABORT);
    assert_int_equal(obj_size(f, "ab/heap.hprof"), 3);
    OK(f->st->ops->del(f->st, "ab/heap.hprof", err_, sizeof err_));
    if (!strcmp(f->kind, "dir")) {
        assert_int_equal(count_files(f->root), 0); /* no temporary file left behind */
    } else {
        assert_int_equal(s3_uploads_in_progress(f, "ab/"), 0); /* every multipart upload aborted */
    }
    free(data);
}

static void test_bad_secret(void **state)
{
    fixture *f = *state;
    if (strcmp(f->kind, "s3") != 0) skip();
    cp_ostore_config c = f->cfg;
    c.secret_key = "not-the-secret";
    c.retries = 3; /* a 403 is never retried */
    cp_ostore *s = NULL;
    char err[512] = "";
    uint64_t t0 = cp_mono_ns();
    int st = cp_ostore_open(&c, &s, err, sizeof err);
    assert_int_not_equal(st, CP_OK);
    assert_null(s);
    printf("ostore_test: bad secret: %s\n", err);
    assert_non_null(strstr(err, "403"));
    assert_null(strstr(err, "attempts"));
    assert_true(secs_since(t0) < 2.0);
}

/* ---- retries, without a real server ---------------------------------------------------- */

static void test_retries_dead_port(void **state)
{
    /* a bound but not listening socket: connections are refused, and no one else can
     * take the port meanwhile */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &al), 0);
    char ep[64];
    snprintf(ep, sizeof ep, "http://127.0.0.1:%d", ntohs(a.sin_port));
    cp_ostore_config c = {.url = "s3://dead-bucket/x", .endpoint = ep, .access_key = "test:tester",
                          .secret_key = "testing", .retries = 2, .backoff_ms = 100};
    cp_ostore *s = NULL;
    char err[512] = "";
    uint64_t t0 = cp_mono_ns();
    int st = cp_ostore_open(&c, &s, err, sizeof err);
    double el = secs_since(t0);
    close(fd);
    printf("ostore_test: dead endpoint after %.2f s: %s\n", el, err);
    assert_int_equal(st, CP_EIO);
    assert_null(s);
    assert_non_null(strstr(err, "after 3 attempts"));
    assert_non_null(strstr(err, ep));
    /* 100 + 200 ms of backoff; the upper bound only catches a backoff gone wild (a loaded
     * machine can stretch three refused connects a lot) */
    assert_true(el >= 0.29 && el < 30.0);
}

/* A fake S3: answers each connection with the next canned answer (the last one repeats)
 * and "Connection: close", and records the requests' heads. */
typedef struct fake_s3 {
    int lfd;
    int port;
    const char *const *answers;
    int nanswers;
    int nreq;
    char heads[16][2048];
    volatile int stop;
    pthread_t th;
} fake_s3;

static void *fake_main(void *arg)
{
    fake_s3 *fk = arg;
    while (!fk->stop) {
        struct pollfd p = {.fd = fk->lfd, .events = POLLIN};
        if (poll(&p, 1, 50) <= 0) continue;
        int c = accept(fk->lfd, NULL, NULL);
        if (c < 0) continue;
        char buf[8192];
        size_t len = 0;
        char *end = NULL;
        while (len < sizeof buf - 1 && !end) {
            ssize_t r = recv(c, buf + len, sizeof buf - 1 - len, 0);
            if (r <= 0) break;
            len += (size_t)r;
            buf[len] = 0;
            end = strstr(buf, "\r\n\r\n");
        }
        if (end) {
            int i = fk->nreq < 16 ? fk->nreq : 15;
            snprintf(fk->heads[i], sizeof fk->heads[i], "%.*s", (int)(end - buf), buf);
            const char *ans = fk->answers[fk->nreq < fk->nanswers ? fk->nreq : fk->nanswers - 1];
            fk->nreq++;
            size_t n = strlen(ans);
            while (n) {
                ssize_t w = send(c, ans, n, MSG_NOSIGNAL);
                if (w <= 0) break;
                ans += w;
                n -= (size_t)w;
            }
        }
        close(c);
    }
    return NULL;
}

static void fake_start(fake_s3 *fk, const char *const *answers, int n)
{
    memset(fk, 0, sizeof *fk);
    fk->answers = answers;
    fk->nanswers = n;
    fk->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    assert_int_equal(bind(fk->lfd, (struct sockaddr *)&a, sizeof a), 0);
    assert_int_equal(listen(fk->lfd, 16), 0);
    socklen_t al = sizeof a;
    assert_int_equal(getsockname(fk->lfd, (struct sockaddr *)&a, &al), 0);
    fk->port = ntohs(a.sin_port);
    assert_int_equal(pthread_create(&fk->th, NULL, fake_main, fk), 0);
}

static void fake_stop(fake_s3 *fk)
{
    fk->stop = 1;
    pthread_join(fk->th, NULL);
    close(fk->lfd);
}

/* answers are built at run time: the Content-Length must match */
static char *answer(const char *status, const char *body)
{
    char *a = NULL;
    if (asprintf(&a, "HTTP/1.1 %s\r\nContent-Type: application/xml\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n%s",
                 status, strlen(body), body) < 0)
        return NULL;
    return a;
}

static cp_ostore_config fake_cfg(char *ep, size_t eplen, int port)
{
    snprintf(ep, eplen, "http://127.0.0.1:%d", port);
    return (cp_ostore_config){.url = "s3://fake-bucket/pre", .endpoint = ep, .access_key = "test:tester",
                              .secret_key = "testing", .retries = 2, .backoff_ms = 20};
}

static void test_retries_fake_server(void **state)
{
    char *e503 = answer("503 Service Unavailable", "<?xml version='1.0'?><Error><Code>SlowDown</Code>"
                                                   "<Message>Please reduce your request rate.</Message></Error>");
    char *e429 = answer("429 Too Many Requests", "<Error><Code>TooManyRequests</Code></Error>");
    char *e500 = answer("500 Internal Server Error", "");
    char *e403 = answer("403 Forbidden", "<Error><Code>AccessDenied</Code><Message>Access &amp; more "
                                         "denied</Message></Error>");
    char *list = answer("200 OK", "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
    char *part = "HTTP/1.1 206 Partial Content\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello";
    char ep[64], err[512];
    cp_ostore *s = NULL;

    /* 503 every time: retried, then the S3 error is reported */
    fake_s3 fk;
    const char *a1[] = {e503};
    fake_start(&fk, a1, 1);
    cp_ostore_config c = fake_cfg(ep, sizeof ep, fk.port);
    int st = cp_ostore_open(&c, &s, err, sizeof err);
    fake_stop(&fk);
    printf("ostore_test: fake 503: %s\n", err);
    assert_int_equal(st, CP_EIO);
    assert_int_equal(fk.nreq, 3);
    assert_non_null(strstr(err, "503 SlowDown (Please reduce your request rate.)"));
    assert_non_null(strstr(err, "after 3 attempts"));
    assert_non_null(strstr(err, "GET s3://fake-bucket"));

    /* a 403 is final at once */
    const char *a2[] = {e403};
    fake_start(&fk, a2, 1);
    c = fake_cfg(ep, sizeof ep, fk.port);
    st = cp_ostore_open(&c, &s, err, sizeof err);
    fake_stop(&fk);
    assert_int_equal(st, CP_EIO);
    assert_int_equal(fk.nreq, 1);
    assert_non_null(strstr(err, "403 AccessDenied (Access & more denied)"));

    /* the bucket probe works, then a read meets 500 and 429 before its 206 */
    const char *a3[] = {list, e500, e429, part};
    fake_start(&fk, a3, 4);
    c = fake_cfg(ep, sizeof ep, fk.port);
    st = cp_ostore_open(&c, &s, err, sizeof err);
    if (st != CP_OK) fail_msg("open: %s", err);
    char buf[5];
    st = s->ops->read(s, "obj/k", buf, 5, 10, err, sizeof err);
    cp_ostore_close(s);
    fake_stop(&fk);
    if (st != CP_OK) fail_msg("read: %s", err);
    assert_memory_equal(buf, "hello", 5);
    assert_int_equal(fk.nreq, 4);
    /* what was sent: the probe's sorted query, path-style URLs, SigV4 with the payload hash */
    assert_non_null(strstr(fk.heads[0], "GET /fake-bucket?list-type=2&max-keys=1 HTTP/1.1"));
    assert_non_null(strstr(fk.heads[3], "GET /fake-bucket/pre/obj/k HTTP/1.1"));
    assert_non_null(strstr(fk.heads[3], "Range: bytes=10-14"));
    assert_non_null(strstr(fk.heads[3], "x-amz-content-sha256: " EMPTY_SHA256));
    assert_non_null(strstr(fk.heads[3], "Authorization: AWS4-HMAC-SHA256 Credential=test:tester/"));
    assert_non_null(strstr(fk.heads[3], "/us-east-1/s3/aws4_request"));

    /* a server that ignores Range (200, the whole object): the range is cut out */
    char *whole = "HTTP/1.1 200 OK\r\nContent-Length: 20\r\nConnection: close\r\n\r\n0123456789abcdefghij";
    const char *a4[] = {list, whole};
    fake_start(&fk, a4, 2);
    c = fake_cfg(ep, sizeof ep, fk.port);
    st = cp_ostore_open(&c, &s, err, sizeof err);
    if (st != CP_OK) fail_msg("open: %s", err);
    st = s->ops->read(s, "obj/k", buf, 5, 10, err, sizeof err);
    if (st != CP_OK) fail_msg("read: %s", err);
    assert_memory_equal(buf, "abcde", 5);
    st = s->ops->read(s, "obj/k", buf, 5, 18, err, sizeof err);
    assert_int_equal(st, CP_ECORRUPT);
    cp_ostore_close(s);
    fake_stop(&fk);

    free(e503);
    free(e429);
    free(e500);
    free(e403);
    free(list);
}

/* Two list pages: the continuation token goes back %-encoded, in the sorted query. */
static void test_list_pages_fake_server(void **state)
{
    char *probe = answer("200 OK", "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
    char *page1 = answer("200 OK",
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/"
                         "doc/2006-03-01/\"><Name>fake-bucket</Name><Prefix>pre/d/</Prefix><KeyCount>3</KeyCount>"
                         "<IsTruncated>true</IsTruncated><NextContinuationToken>a+b/c=&amp;d</NextContinuationToken>"
                         "<Contents><Key>pre/d/1</Key><Size>10</Size><ETag>&quot;x&quot;</ETag></Contents>"
                         "<Contents>\n  <Key>pre/d/2&#x2e;txt</Key>\n  <Size>20</Size>\n</Contents>"
                         "<Contents><Key>pre/d/bad key</Key><Size>1</Size></Contents></ListBucketResult>");
    char *page2 = answer("200 OK", "<ListBucketResult><IsTruncated>false</IsTruncated>"
                                   "<Contents><Key>pre/d/3</Key><Size>30</Size></Contents></ListBucketResult>");
    char *broken = answer("200 OK", "<ListBucketResult><IsTruncated>true</IsTruncated>"
                                    "<Contents><Key>pre/d/4</Key><Size>40</Size></Contents></ListBucketResult>");
    char ep[64], err[512];
    cp_ostore *s = NULL;
    fake_s3 fk;
    const char *a[] = {probe, page1, page2};
    fake_start(&fk, a, 3);
    cp_ostore_config c = fake_cfg(ep, sizeof ep, fk.port);
    int st = cp_ostore_open(&c, &s, err, sizeof err);
    if (st != CP_OK) fail_msg("open: %s", err);
    listed l = {0};
    st = s->ops->list(s, "d/", collect, &l, err, sizeof err);
    cp_ostore_close(s);
    fake_stop(&fk);
    if (st != CP_OK) fail_msg("list: %s", err);
    assert_int_equal(fk.nreq, 3);
    assert_int_equal(l.n, 3); /* "bad key" is no key of ours */
    assert_string_equal(l.keys[0], "d/1");
    assert_string_equal(l.keys[1], "d/2.txt");
    assert_string_equal(l.keys[2], "d/3");
    assert_int_equal(l.sizes[0], 10);
    assert_int_equal(l.sizes[1], 20);
    assert_int_equal(l.sizes[2], 30);
    listed_free(&l);
    assert_non_null(strstr(fk.heads[1], "GET /fake-bucket?list-type=2&max-keys=1000&prefix=pre%2Fd%2F HTTP/1.1"));
    assert_non_null(strstr(fk.heads[2], "GET /fake-bucket?continuation-token=a%2Bb%2Fc%3D%26d&list-type=2&"
                                        "max-keys=1000&prefix=pre%2Fd%2F HTTP/1.1"));

    /* a truncated page without a token is an error, not an endless loop */
    const char *b[] = {probe, broken};
    fake_start(&fk, b, 2);
    c = fake_cfg(ep, sizeof ep, fk.port);
    st = cp_ostore_open(&c, &s, err, sizeof err);
    if (st != CP_OK) fail_msg("open: %s", err);
    st = s->ops->list(s, "", collect, &l, err, sizeof err);
    cp_ostore_close(s);
    fake_stop(&fk);
    assert_int_equal(st, CP_EPROTO);
    assert_non_null(strstr(err, "NextContinuationToken"));
    assert_int_equal(l.n, 1);
    listed_free(&l);
    free(probe);
    free(page1);
    free(page2);
    free(broken);
}

/* ---- raw S3 for the checks the API cannot make ----------------------------------------- */

static size_t raw_write(char *p, size_t size, size_t n, void *ud)
{
    cp_buf *b = ud;
    return cp_buf_append(b, p, size * n) == CP_OK ? size * n : 0;
}

static int s3_uploads_in_progress(fixture *f, const char *key_prefix)
{
    /* the store's prefix is the part of f->url after the bucket */
    const char *bucket = f->url + 5, *slash = strchr(bucket, '/');
    char url[1024], sig[64];
    snprintf(url, sizeof url, "%s/%.*s?prefix=%s%%2F%s&uploads=", f->cfg.endpoint, (int)(slash - bucket), bucket,
             slash + 1, key_prefix);
    /* '/' in the key prefix must be %-encoded too */
    for (char *q = strstr(url, "?prefix=") + 8; *q && *q != '&'; q++)
        if (*q == '/') {
            memmove(q + 3, q + 1, strlen(q + 1) + 1);
            memcpy(q, "%2F", 3);
        }
    snprintf(sig, sizeof sig, "aws:amz:%s:s3", f->cfg.region);
    CURL *h = curl_easy_init();
    cp_buf body;
    cp_buf_init(&body);
    struct curl_slist *hdr = curl_slist_append(NULL, "x-amz-content-sha256: " EMPTY_SHA256);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sig);
    curl_easy_setopt(h, CURLOPT_USERNAME, f->cfg.access_key);
    curl_easy_setopt(h, CURLOPT_PASSWORD, f->cfg.secret_key);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, raw_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &body);
    CURLcode rc = curl_easy_perform(h);
    long code = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    cp_buf_putc(&body, 0);
    if (rc != CURLE_OK || code != 200) fail_msg("ListMultipartUploads %s: %d %ld %s", url, rc, code, body.data);
    int n = 0;
    for (const char *p = (char *)body.data; (p = strstr(p, "<Upload>")) != NULL; p++) n++;
    cp_buf_free(&body);
    return n;
}

/* ---- main --------------------------------------------------------------------------------- */

#define STORE_CASES                                                                                                   \
    cmocka_unit_test(test_put_read), cmocka_unit_test(test_put_file_get_file), cmocka_unit_test(test_put_stream),   \
        cmocka_unit_test(test_put_file_move),                                                                       \
        cmocka_unit_test(test_multipart_file), cmocka_unit_test(test_missing), cmocka_unit_test(test_bad_keys),     \
        cmocka_unit_test(test_list), cmocka_unit_test(test_list_many), cmocka_unit_test(test_delete),               \
        cmocka_unit_test(test_stream_abort), cmocka_unit_test(test_bad_secret)

int main(void)
{
    const struct CMUnitTest common[] = {
        cmocka_unit_test(test_key_rules),
        cmocka_unit_test(test_retries_dead_port),
        cmocka_unit_test(test_retries_fake_server),
        cmocka_unit_test(test_list_pages_fake_server),
    };
    const struct CMUnitTest dir_cases[] = {STORE_CASES};
    const struct CMUnitTest s3_cases[] = {STORE_CASES};
    int failed = cmocka_run_group_tests_name("ostore common", common, NULL, NULL);
    failed += cmocka_run_group_tests_name("ostore dir", dir_cases, setup_dir, teardown);
    if (s3_endpoint()) {
        failed += cmocka_run_group_tests_name("ostore s3", s3_cases, setup_s3, teardown);
    } else {
        printf("ostore_test: S3 cases skipped: CP_S3_ENDPOINT (or scripts/test.sh's CP_TEST_S3_ENDPOINT) is not set "
               "(eval \"$(scripts/swift-test.sh start /tmp/swift-os 18080)\"; export CP_S3_ENDPOINT=$S3_ENDPOINT)\n");
    }
    return failed ? 1 : 0;
}
