/* rawlog_tail_test.c -- the tail copy of recently appended bytes (cp_rawlog_file_pread
 * serves reads of them without a system call) and the pool that bounds all copies
 * together (issue 18's --ingest-memory share): reads are right whatever the copy holds,
 * a copy grows only while the pool has room, and what it holds is given back. */
#include "testutil.h"

#include "store/cp_rawlog.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct fixture {
    char *dir;
    cp_rawlog_fdcache cache;
    cp_rawlog_restart restart;
} fixture;

static int setup(void **state)
{
    fixture *fx = calloc(1, sizeof *fx);
    fx->dir = make_temp_dir("rawtail");
    cp_rawlog_fdcache_init(&fx->cache, 16);
    assert_int_equal(cp_rawlog_restart_create(fx->dir, "ns", 2, "pod", 3, 1000, &fx->restart), CP_OK);
    *state = fx;
    return 0;
}

static int teardown(void **state)
{
    fixture *fx = *state;
    cp_rawlog_restart_free(&fx->restart);
    remove_tree(fx->dir);
    free(fx->dir);
    free(fx);
    return 0;
}

/* Byte i of the test stream. */
static uint8_t byte_at(uint64_t i) { return (uint8_t)(i * 131 + (i >> 9)); }

static void append_n(cp_rawlog_file *f, uint64_t *written, size_t n)
{
    uint8_t buf[4096];
    while (n) {
        size_t k = n < sizeof buf ? n : sizeof buf;
        for (size_t i = 0; i < k; i++) buf[i] = byte_at(*written + i);
        assert_int_equal(cp_rawlog_file_append(f, buf, k), CP_OK);
        *written += k;
        n -= k;
    }
}

/* Reads [off, off + n) and checks every byte. */
static void read_check(cp_rawlog_file *f, uint64_t off, size_t n)
{
    uint8_t *buf = malloc(n);
    assert_int_equal(cp_rawlog_file_pread(f, buf, n, off), (long)n);
    for (size_t i = 0; i < n; i++)
        if (buf[i] != byte_at(off + i)) fail_msg("byte %llu differs", (unsigned long long)(off + i));
    free(buf);
}

static void test_reads_right_and_copy_grows(void **state)
{
    fixture *fx = *state;
    cp_rawlog_file f;
    assert_int_equal(cp_rawlog_file_open(&fx->cache, &fx->restart, "trace", 1, &f), CP_OK);
    cp_membudget pool = {.budget = 0}; /* no limit: counted only */
    cp_rawlog_file_keep_tail_in(&f, 1024, 8192, &pool);
    uint64_t w = 0;
    append_n(&f, &w, 700);
    assert_int_equal(pool.used, 1024);
    read_check(&f, 0, 700);
    append_n(&f, &w, 5000);
    read_check(&f, w - 1000, 1000); /* in the copy */
    read_check(&f, 0, (size_t)w);   /* not: from the file, and the copy doubles */
    assert_int_equal(pool.used, 2048);
    read_check(&f, 0, (size_t)w);
    read_check(&f, 0, (size_t)w);
    assert_int_equal(pool.used, 8192); /* up to max */
    read_check(&f, 0, (size_t)w);
    assert_int_equal(pool.used, 8192);
    cp_rawlog_file_drop_tail(&f);
    assert_int_equal(pool.used, 0);
    read_check(&f, 100, 3000);
    append_n(&f, &w, 10); /* the copy starts again, at the size it had grown to */
    assert_int_equal(pool.used, 8192);
    read_check(&f, w - 10, 10);
    cp_rawlog_file_close(&f);
    assert_int_equal(pool.used, 0);
}

static void test_pool_bounds_all_copies(void **state)
{
    fixture *fx = *state;
    enum { N = 6 };
    cp_rawlog_file f[N];
    uint64_t w[N] = {0};
    cp_membudget pool = {.budget = 4 * 4096};
    for (int i = 0; i < N; i++) {
        assert_int_equal(cp_rawlog_file_open(&fx->cache, &fx->restart, "trace", 10 + i, &f[i]), CP_OK);
        cp_rawlog_file_keep_tail_in(&f[i], 4096, 65536, &pool);
        append_n(&f[i], &w[i], 3000);
    }
    /* four copies fit; the other files have none, and their reads still come right */
    assert_int_equal(pool.used, 4 * 4096);
    assert_true(pool.refused >= 2);
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            append_n(&f[i], &w[i], 9000);
            read_check(&f[i], 0, (size_t)w[i]); /* would double a copy: no room */
            read_check(&f[i], w[i] - 500, 500);
            assert_true(pool.used <= pool.budget);
        }
    }
    /* a copy given back makes room for another */
    cp_rawlog_file_drop_tail(&f[0]);
    assert_int_equal(pool.used, 3 * 4096);
    append_n(&f[5], &w[5], 100);
    read_check(&f[5], w[5] - 100, 100);
    assert_int_equal(pool.used, 4 * 4096);
    for (int i = 0; i < N; i++) cp_rawlog_file_close(&f[i]);
    assert_int_equal(pool.used, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_reads_right_and_copy_grows, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pool_bounds_all_copies, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
