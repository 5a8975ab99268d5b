/* decoder_errors_test.c -- corrupt and hostile stream bytes: each is rejected with a
 * clear error, the committed offset stops at the last good record, and the error sticks. */
#include "testutil.h"

#include "streams/cp_streams.h"

#include <stdio.h>
#include <stdlib.h>

/* Builders for synthetic stream bytes. */
static void put_str16(cp_buf *b, const char *ascii)
{
    size_t n = strlen(ascii);
    cp_buf_putc(b, (uint8_t)n); /* test strings are < 128 units */
    for (size_t i = 0; i < n; i++) {
        cp_buf_putc(b, 0);
        cp_buf_putc(b, (uint8_t)ascii[i]);
    }
}
static void put_be32(cp_buf *b, uint32_t v)
{
    uint8_t x[4];
    cp_put_be32(x, v);
    cp_buf_append(b, x, 4);
}
static void put_be64(cp_buf *b, uint64_t v)
{
    uint8_t x[8];
    cp_put_be64(x, v);
    cp_buf_append(b, x, 8);
}
/* Wraps body as one phrase. */
static void phrase(cp_buf *out, const cp_buf *body)
{
    put_be32(out, (uint32_t)body->len);
    cp_buf_append(out, body->data, body->len);
}

static int feed_all(cp_stream_kind kind, const cp_buf *b, const cp_dec_limits *lim, uint64_t *committed,
                    uint64_t *records)
{
    cp_dec *d = cp_dec_new(kind, lim, NULL, 0);
    assert_non_null(d);
    int st = cp_dec_feed(d, b->data, b->len);
    if (st == CP_OK) st = cp_dec_finish(d);
    if (st < 0) {
        assert_true(strlen(cp_dec_error(d)) > 0);
        assert_int_equal(cp_dec_feed(d, (const uint8_t *)"x", 1), st); /* sticky */
    }
    *committed = cp_dec_committed(d);
    *records = cp_dec_records(d);
    cp_dec_free(d);
    return st;
}

static void test_phrase_errors(void **state)
{
    (void)state;
    cp_buf body, b;
    uint64_t c, n;
    cp_buf_init(&body);
    cp_buf_init(&b);
    put_str16(&body, "call.info");
    put_str16(&body, "call.red");
    phrase(&b, &body);
    size_t good = b.len;
    assert_int_equal(feed_all(CP_STREAM_DICTIONARY, &b, NULL, &c, &n), CP_OK);
    assert_int_equal(n, 2);
    /* a phrase longer than the agent's 10240-byte buffer */
    put_be32(&b, 10241);
    assert_int_equal(feed_all(CP_STREAM_DICTIONARY, &b, NULL, &c, &n), CP_EPROTO);
    assert_int_equal(c, good);
    b.len = good;
    put_be32(&b, 0x80000000u); /* negative */
    assert_int_equal(feed_all(CP_STREAM_DICTIONARY, &b, NULL, &c, &n), CP_EPROTO);
    /* a record that runs past its phrase's end */
    b.len = good;
    cp_buf_reset(&body);
    cp_buf_putc(&body, 10); /* claims 10 units, holds 1 */
    cp_buf_putc(&body, 0);
    cp_buf_putc(&body, 'x');
    phrase(&b, &body);
    cp_buf_append(&b, "\0x\0y\0z\0z\0z\0z\0z\0z\0z", 18);
    assert_int_equal(feed_all(CP_STREAM_DICTIONARY, &b, NULL, &c, &n), CP_EPROTO);
    assert_int_equal(c, good);
    assert_int_equal(n, 2);
    /* a good record then a corrupt one in the same phrase: the phrase delivers nothing */
    b.len = good;
    cp_buf_reset(&body);
    put_str16(&body, "ok");
    cp_buf_putc(&body, 0x64); /* claims 100 units */
    cp_buf_append(&body, "\0e", 2);
    phrase(&b, &body);
    assert_int_equal(feed_all(CP_STREAM_DICTIONARY, &b, NULL, &c, &n), CP_EPROTO);
    assert_int_equal(n, 2);
    assert_int_equal(c, good);
    /* a torn phrase is not an error, just incomplete */
    b.len = good;
    put_be32(&b, 40);
    cp_buf_append(&b, "abc", 3);
    assert_int_equal(feed_all(CP_STREAM_DICTIONARY, &b, NULL, &c, &n), CP_AGAIN);
    assert_int_equal(c, good);
    cp_buf_free(&body);
    cp_buf_free(&b);
}

static void test_params_errors(void **state)
{
    (void)state;
    cp_buf body, b;
    uint64_t c, n;
    cp_buf_init(&body);
    cp_buf_init(&b);
    cp_buf_putc(&body, 2); /* format version 2 does not exist */
    phrase(&b, &body);
    assert_int_equal(feed_all(CP_STREAM_PARAMS, &b, NULL, &c, &n), CP_EPROTO);
    cp_buf_reset(&body);
    cp_buf_reset(&b);
    cp_buf_putc(&body, 1);
    put_str16(&body, "web.url");
    cp_buf_putc(&body, 7); /* a bool byte that no writer produces */
    cp_buf_putc(&body, 0);
    cp_buf_putc(&body, 100);
    put_str16(&body, "");
    phrase(&b, &body);
    assert_int_equal(feed_all(CP_STREAM_PARAMS, &b, NULL, &c, &n), CP_EPROTO);
    assert_int_equal(c, 0);
    cp_buf_free(&body);
    cp_buf_free(&b);
}

static void calls_header(cp_buf *b, uint32_t format)
{
    put_be64(b, ((uint64_t)0xFFFEFDFCu << 32) | format);
    put_be64(b, 1690201585956ull);
}

/* A minimal format-4 record: thread `thread` (new if == table size). */
static void calls_record(cp_buf *b, uint8_t thread, const char *name, uint8_t nparams)
{
    static const uint8_t head[] = {0x02, 0x09, 0x05, 0x01}; /* dt=+1, method 9, duration 5, calls 1 */
    cp_buf_append(b, head, sizeof head);
    cp_buf_putc(b, thread);
    if (name) put_str16(b, name);
    static const uint8_t tail[] = {0, 0, 1, 8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}; /* logs, trace ptr, counters */
    cp_buf_append(b, tail, sizeof tail);
    cp_buf_putc(b, nparams);
}

static void test_calls_errors(void **state)
{
    (void)state;
    cp_buf b;
    uint64_t c, n;
    cp_buf_init(&b);
    calls_header(&b, 9);
    assert_int_equal(feed_all(CP_STREAM_CALLS, &b, NULL, &c, &n), CP_EPROTO);
    cp_buf_reset(&b);
    calls_header(&b, 4);
    calls_record(&b, 0, "main", 0);
    calls_record(&b, 0, NULL, 0);
    size_t good = b.len;
    assert_int_equal(feed_all(CP_STREAM_CALLS, &b, NULL, &c, &n), CP_OK);
    assert_int_equal(n, 2);
    calls_record(&b, 5, NULL, 0); /* thread 5 of a 1-entry table */
    assert_int_equal(feed_all(CP_STREAM_CALLS, &b, NULL, &c, &n), CP_EPROTO);
    assert_int_equal(c, good);
    assert_int_equal(n, 2);
    b.len = good;
    calls_record(&b, 0, NULL, 0);
    b.data[b.len - 1] = 0x7F; /* 127 params, then the file ends: incomplete, not an error */
    assert_int_equal(feed_all(CP_STREAM_CALLS, &b, NULL, &c, &n), CP_AGAIN);
    assert_int_equal(c, good);
    cp_dec_limits lim;
    cp_dec_limits_default(&lim);
    lim.max_params = 16;
    assert_int_equal(feed_all(CP_STREAM_CALLS, &b, &lim, &c, &n), CP_ELIMIT);
    /* a thread name over the string limit */
    b.len = good;
    calls_record(&b, 1, "a-very-long-thread-name", 0);
    lim.max_string_units = 8;
    assert_int_equal(feed_all(CP_STREAM_CALLS, &b, &lim, &c, &n), CP_ELIMIT);
    assert_int_equal(c, good);
    cp_buf_free(&b);
}

static void test_trace_errors(void **state)
{
    (void)state;
    cp_buf b;
    uint64_t c, n;
    cp_buf_init(&b);
    put_be64(&b, 1690201577657ull);
    put_be64(&b, 1);                /* thread */
    put_be64(&b, 1690201583767ull); /* chunk time */
    static const uint8_t ok[] = {0xF8, 0xBE, 0x01, 0x09, 0x01, 0x03}; /* ENTER m9, EXIT, FINISH */
    cp_buf_append(&b, ok, sizeof ok);
    size_t good = b.len;
    assert_int_equal(feed_all(CP_STREAM_TRACE, &b, NULL, &c, &n), CP_OK);
    put_be64(&b, 1);
    put_be64(&b, 1690201583767ull);
    static const uint8_t badtype[] = {0x02, 0x05, 0x07, 0x00}; /* TAG with param type 7 */
    cp_buf_append(&b, badtype, sizeof badtype);
    assert_int_equal(feed_all(CP_STREAM_TRACE, &b, NULL, &c, &n), CP_EPROTO);
    assert_int_equal(c, good);
    b.len = good + 16;
    cp_buf_putc(&b, 0x07); /* type bits 3 but not exactly 0x03 */
    assert_int_equal(feed_all(CP_STREAM_TRACE, &b, NULL, &c, &n), CP_EPROTO);
    b.len = good + 16;
    cp_buf_append(&b, ok, 4); /* chunk never finished: torn, committed stays at the last chunk */
    assert_int_equal(feed_all(CP_STREAM_TRACE, &b, NULL, &c, &n), CP_AGAIN);
    assert_int_equal(c, good);
    cp_buf_free(&b);
}

static int stop_at_second(void *ud, const cp_value_rec *r)
{
    (void)r;
    return ++*(int *)ud == 2;
}

static void test_consumer_abort_and_posdictionary(void **state)
{
    (void)state;
    cp_buf b;
    cp_buf_init(&b);
    put_str16(&b, "select 1");
    put_str16(&b, "select 2");
    put_str16(&b, "select 3");
    int seen = 0;
    cp_dec_sink sink = {.ud = &seen, .on_value = stop_at_second};
    cp_dec *d = cp_dec_new(CP_STREAM_SQL, NULL, &sink, 0);
    assert_int_equal(cp_dec_feed(d, b.data, b.len), CP_EABORT);
    assert_int_equal(seen, 2);
    cp_dec_free(d);
    /* posDictionary: explicit ids, phrase framed */
    cp_buf body;
    cp_buf_init(&body);
    cp_buf_reset(&b);
    cp_buf_putc(&body, 0);
    put_str16(&body, "call.info");
    cp_buf_putc(&body, 7);
    put_str16(&body, "call.red");
    phrase(&b, &body);
    uint64_t c, n;
    assert_int_equal(feed_all(CP_STREAM_POSDICTIONARY, &b, NULL, &c, &n), CP_OK);
    assert_int_equal(n, 2);
    assert_int_equal(c, b.len);
    d = cp_dec_new(CP_STREAM_POSDICTIONARY, NULL, NULL, 0);
    assert_int_equal(cp_dec_feed(d, b.data, b.len), CP_OK);
    assert_int_equal(cp_dec_next_word_id(d), 8);
    cp_dec_free(d);
    /* raw-only kinds have no decoder */
    assert_null(cp_dec_new(CP_STREAM_GC, NULL, NULL, 0));
    assert_int_equal(cp_stream_kind_from_name("posDictionary", 13), CP_STREAM_POSDICTIONARY);
    assert_int_equal(cp_stream_kind_from_name("posdictionary", 13), CP_STREAM_UNKNOWN); /* wire names are exact */
    assert_int_equal(cp_stream_kind_parse("posdictionary"), CP_STREAM_POSDICTIONARY);
    cp_buf_free(&body);
    cp_buf_free(&b);
}


/* Inputs the fuzzers found undefined behaviour on (integer overflow on hostile times and
 * ids, NULL pointer offsets). Under UBSan (the ASan suite) any regression aborts. */
static void test_fuzz_regressions(void **state)
{
    (void)state;
    static const struct {
        cp_stream_kind kind;
        const char *hex;
        int status;
        uint64_t records;
    } cases[] = {
        {CP_STREAM_POSDICTIONARY, "00000006ffffffff0700", CP_EPROTO, 0},
        {CP_STREAM_SUSPEND, "0000000a7fffffffffffffff0100", CP_OK, 1},
        {CP_STREAM_CALLS, "7fffffffffffffff0200000000000000", CP_OK, 1},
        {CP_STREAM_TRACE, "7fffffffffffffff000000000000000000000000000000000400", CP_AGAIN, 3},
        {CP_STREAM_CALLS, "000000000000000000000000000000010000", CP_OK, 1},
        {CP_STREAM_CALLS, "fffefdfc00000001" "00000000000000000000000000000000000000000000000000000000000000",
         CP_OK, 2},
    };
    for (size_t i = 0; i < CP_ARRAY_LEN(cases); i++) {
        cp_buf b;
        cp_buf_init(&b);
        for (const char *h = cases[i].hex; h[0] && h[1]; h += 2) {
            unsigned v;
            sscanf(h, "%2x", &v);
            cp_buf_putc(&b, (uint8_t)v);
        }
        uint64_t c, n;
        int st = feed_all(cases[i].kind, &b, NULL, &c, &n);
        if (getenv("CP_PRINT")) printf("case %zu: %d %llu\n", i, st, (unsigned long long)n);
        if (st != cases[i].status || n != cases[i].records)
            fail_msg("case %zu: status %d records %llu", i, st, (unsigned long long)n);
        cp_buf_free(&b);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_phrase_errors),
        cmocka_unit_test(test_params_errors),
        cmocka_unit_test(test_calls_errors),
        cmocka_unit_test(test_trace_errors),
        cmocka_unit_test(test_consumer_abort_and_posdictionary),
        cmocka_unit_test(test_fuzz_regressions),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
