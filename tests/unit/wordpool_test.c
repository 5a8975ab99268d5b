/* wordpool_test.c -- dictionaries sharing their words through a cp_wordpool
 * (src/model/dict.c): one copy per distinct word, counted by the dictionaries holding
 * it, gone with the last of them; the same answers as a dictionary of its own. */
#include "testutil.h"

#include "model/cp_model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put_ok(cp_dict *d, int32_t id, const char *w) { assert_int_equal(cp_dict_put(d, id, w, strlen(w)), CP_OK); }

static void get_is(const cp_dict *d, int32_t id, const char *w)
{
    size_t len = 0;
    const char *got = cp_dict_get(d, id, &len);
    if (!w) {
        assert_null(got);
        return;
    }
    assert_non_null(got);
    assert_int_equal(len, strlen(w));
    assert_memory_equal(got, w, len);
    assert_int_equal(got[len], 0);
}

/* Two pods of one service: their common words are held once. */
static void test_shared_words(void **state)
{
    (void)state;
    cp_wordpool *pool = cp_wordpool_new();
    assert_non_null(pool);
    cp_dict a, b;
    cp_dict_init_pooled(&a, pool);
    cp_dict_init_pooled(&b, pool);
    put_ok(&a, 0, "com.acme.OrderService.place");
    put_ok(&a, 1, "java.lang.Thread.run");
    put_ok(&b, 0, "java.lang.Thread.run"); /* other ids, same words */
    put_ok(&b, 5, "com.acme.OrderService.place");
    put_ok(&b, 6, "");
    assert_int_equal(cp_wordpool_words(pool), 3);
    assert_ptr_equal(cp_dict_get(&a, 0, NULL), cp_dict_get(&b, 5, NULL)); /* one copy */
    get_is(&b, 6, "");
    get_is(&b, 2, NULL);
    get_is(&a, -1, NULL);
    get_is(&a, 1000, NULL);
    assert_int_equal(a.count, 2);
    assert_int_equal(b.count, 3);
    /* a re-sent id replaces the word; the old one stays while b holds it */
    put_ok(&a, 0, "com.acme.OrderService.cancel");
    get_is(&a, 0, "com.acme.OrderService.cancel");
    get_is(&b, 5, "com.acme.OrderService.place");
    assert_int_equal(cp_wordpool_words(pool), 4);
    assert_int_equal(a.count, 2);
    cp_dict_free(&b);
    /* b's words go unless a holds them too */
    assert_int_equal(cp_wordpool_words(pool), 2);
    get_is(&a, 0, "com.acme.OrderService.cancel");
    get_is(&a, 1, "java.lang.Thread.run");
    size_t table_only = cp_wordpool_bytes(pool);
    cp_dict_free(&a);
    assert_int_equal(cp_wordpool_words(pool), 0);
    assert_true(cp_wordpool_bytes(pool) < table_only);
    assert_int_equal(cp_dict_put(&a, CP_DICT_MAX_ID, "x", 1), CP_ELIMIT); /* freed = empty */
    cp_wordpool_free(pool);
}

/* Many dictionaries with random puts and replacements: the pooled ones answer exactly as
 * dictionaries of their own, and the pool holds exactly the distinct words in use. */
static void test_pool_like_own(void **state)
{
    (void)state;
    enum { NDICT = 8, NIDS = 3000, NWORDS = 2500 };
    const size_t ops = test_quick() ? 20000 : 120000;
    cp_wordpool *pool = cp_wordpool_new();
    cp_dict pooled[NDICT], own[NDICT];
    for (int i = 0; i < NDICT; i++) {
        cp_dict_init_pooled(&pooled[i], pool);
        cp_dict_init(&own[i]);
    }
    char w[64];
    uint64_t rng = 42;
    for (size_t k = 0; k < ops; k++) {
        int d = (int)(test_rand(&rng) % NDICT);
        int32_t id = (int32_t)(test_rand(&rng) % NIDS);
        int n = snprintf(w, sizeof w, "com.acme.m%u()V", (unsigned)(test_rand(&rng) % NWORDS));
        assert_int_equal(cp_dict_put(&pooled[d], id, w, (size_t)n), CP_OK);
        assert_int_equal(cp_dict_put(&own[d], id, w, (size_t)n), CP_OK);
        if (k % 4000 == 3999) { /* a dictionary reset now and then */
            cp_dict_free(&pooled[d]);
            cp_dict_free(&own[d]);
            cp_dict_init_pooled(&pooled[d], pool);
            cp_dict_init(&own[d]);
        }
    }
    /* distinct words in use, counted from the reference dictionaries */
    char (*seen)[64] = calloc((size_t)NDICT * NIDS, sizeof *seen);
    size_t distinct = 0;
    for (int d = 0; d < NDICT; d++) {
        assert_int_equal(pooled[d].count, own[d].count);
        for (int32_t id = 0; id < NIDS; id++) {
            size_t l1 = 0, l2 = 0;
            const char *p = cp_dict_get(&pooled[d], id, &l1), *o = cp_dict_get(&own[d], id, &l2);
            assert_true((p == NULL) == (o == NULL));
            if (!o) continue;
            assert_int_equal(l1, l2);
            assert_memory_equal(p, o, l2);
            size_t j = 0;
            while (j < distinct && strcmp(seen[j], o)) j++;
            if (j == distinct) snprintf(seen[distinct++], sizeof seen[0], "%s", o);
        }
    }
    assert_int_equal(cp_wordpool_words(pool), distinct);
    for (int d = 0; d < NDICT; d++) {
        cp_dict_free(&pooled[d]);
        cp_dict_free(&own[d]);
    }
    assert_int_equal(cp_wordpool_words(pool), 0);
    free(seen);
    cp_wordpool_free(pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_words),
        cmocka_unit_test(test_pool_like_own),
    };
    return cmocka_run_group_tests_name("word pool", tests, NULL, NULL);
}
