/* decode_cli_test.c -- `cloudprof decode`: the JSON Lines field names are a contract
 * (issue #2), so every line of every fixture is parsed and its key set checked, plus
 * values that tie the output to the decoders' known answers. */
#include "testutil.h"
#include "server_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

/* Runs `cloudprof decode ARGS...`, returns the exit status; stdout parsed into lines. */
static int decode(const char *kind, const char *rel, const char *extra, json_t ***lines, size_t *n)
{
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    char path[4096];
    snprintf(path, sizeof path, "%s", fixture_path(rel));
    const char *argv[] = {"decode", kind, path, extra ? "--replies" : NULL, extra, NULL};
    int rc = cli_run(&out, &err, argv);
    cp_buf_putc(&out, 0);
    char **text;
    size_t count = split_lines((char *)out.data, out.len ? out.len - 1 : 0, &text);
    *lines = calloc(count + 1, sizeof **lines);
    for (size_t i = 0; i < count; i++) {
        json_error_t je;
        (*lines)[i] = json_loads(text[i], 0, &je);
        if (!(*lines)[i]) fail_msg("%s line %zu is not JSON: %s", rel, i + 1, je.text);
        assert_true(json_is_object((*lines)[i]));
    }
    *n = count;
    free(text);
    cp_buf_free(&out);
    cp_buf_free(&err);
    return rc;
}

static void free_lines(json_t **lines, size_t n)
{
    for (size_t i = 0; i < n; i++) json_decref(lines[i]);
    free(lines);
}

/* The object has exactly these keys (optional ones may be absent). */
static void check_keys(json_t *o, const char *const *required, const char *const *optional)
{
    size_t want = 0;
    for (; required[want]; want++)
        if (!json_object_get(o, required[want])) fail_msg("missing key '%s'", required[want]);
    size_t opt = 0;
    for (size_t i = 0; optional && optional[i]; i++) opt += json_object_get(o, optional[i]) != NULL;
    assert_int_equal(json_object_size(o), want + opt);
}

static long long num(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_integer(v)) fail_msg("'%s' is not an integer", k);
    return json_integer_value(v);
}

static const char *str(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    if (!json_is_string(v)) fail_msg("'%s' is not a string", k);
    return json_string_value(v);
}

static void test_dictionary_params_suspend(void **state)
{
    (void)state;
    json_t **l;
    size_t n;
    static const char *const word[] = {"id", "word", NULL};
    assert_int_equal(decode("dictionary", "streams/test-service.dictionary.protocol", NULL, &l, &n), 0);
    assert_int_equal(n, 942);
    for (size_t i = 0; i < n; i++) {
        check_keys(l[i], word, NULL);
        assert_int_equal(num(l[i], "id"), (long long)i);
    }
    assert_string_equal(str(l[1], "word"), "call.red");
    free_lines(l, n);

    static const char *const param[] = {"name", "index", "list", "order", "signature", NULL};
    assert_int_equal(decode("params", "streams/test-service.params.protocol", NULL, &l, &n), 0);
    assert_int_equal(n, 122);
    for (size_t i = 0; i < n; i++) {
        check_keys(l[i], param, NULL);
        assert_true(json_is_boolean(json_object_get(l[i], "index")));
        assert_true(json_is_boolean(json_object_get(l[i], "list")));
    }
    assert_string_equal(str(l[0], "name"), "exception");
    assert_true(json_is_false(json_object_get(l[0], "index")));
    assert_true(json_is_true(json_object_get(l[0], "list")));
    assert_int_equal(num(l[0], "order"), 100);
    free_lines(l, n);

    static const char *const susp[] = {"end_ms", "delta_ms", "duration_ms", NULL};
    assert_int_equal(decode("suspend", "streams/test-service.suspend.protocol", NULL, &l, &n), 0);
    assert_int_equal(n, 504);
    for (size_t i = 0; i < n; i++) check_keys(l[i], susp, NULL);
    assert_int_equal(num(l[0], "end_ms"), 1690201577743LL);
    assert_int_equal(num(l[503], "end_ms"), 1690201726143LL);
    free_lines(l, n);

    /* posdictionary: the agent-v2 dictionary is not position-framed; KIND is accepted */
    assert_int_equal(decode("posdictionary", "conversations/agent-v2/stream.params.bin", NULL, &l, &n), 1);
    free_lines(l, n);
}

static void test_calls(void **state)
{
    (void)state;
    static const char *const keys[] = {"start_ms",     "time_delta",    "method",        "duration_ms",
                                       "calls",        "thread_index",  "thread_name",   "logs_written",
                                       "logs_generated", "trace_file_index", "buffer_offset", "record_index",
                                       "cpu_time",     "wait_time",     "memory_used",   "file_read",
                                       "file_written", "net_read",      "net_written",   "transactions",
                                       "queue_wait_ms", "params",       NULL};
    json_t **l;
    size_t n;
    assert_int_equal(decode("calls", "streams/test-service.calls.0.protocol", NULL, &l, &n), 0);
    assert_int_equal(n, 45);
    for (size_t i = 0; i < n; i++) {
        check_keys(l[i], keys, NULL);
        json_t *p = json_object_get(l[i], "params");
        assert_true(json_is_object(p));
        const char *k;
        json_t *v;
        json_object_foreach(p, k, v) {
            assert_true(atoi(k) >= 0);
            assert_true(json_is_array(v));
        }
    }
    assert_int_equal(num(l[0], "start_ms"), 1690201583767LL);
    assert_int_equal(num(l[0], "time_delta"), -2189);
    assert_string_equal(str(l[0], "thread_name"), "main");
    json_t *p7 = json_object_get(l[6], "params");
    assert_int_equal(json_object_size(p7), 4);
    assert_string_equal(json_string_value(json_array_get(json_object_get(p7, "119"), 0)), "GET");
    free_lines(l, n);
}

static void test_trace(void **state)
{
    (void)state;
    static const char *const keys[] = {"chunk_offset", "thread_id", "chunk_time_ms", "index", "type", "time_ms", NULL};
    static const char *const opt[] = {"id", "param_type", "value", "ref_file", "ref_offset", NULL};
    json_t **l;
    size_t n;
    assert_int_equal(decode("trace", "streams/test-service.traces.0.protocol", NULL, &l, &n), 0);
    assert_int_equal(n, 3521);
    size_t enter = 0, exit_ = 0, tag = 0;
    for (size_t i = 0; i < n; i++) {
        check_keys(l[i], keys, opt);
        const char *t = str(l[i], "type");
        if (!strcmp(t, "exit")) {
            exit_++;
            assert_null(json_object_get(l[i], "id"));
        } else if (!strcmp(t, "enter")) {
            enter++;
            num(l[i], "id");
            assert_null(json_object_get(l[i], "param_type"));
        } else {
            assert_string_equal(t, "tag");
            tag++;
            long long pt = num(l[i], "param_type");
            if (pt == 0 || pt == 2) {
                str(l[i], "value");
                assert_null(json_object_get(l[i], "ref_file"));
            } else {
                num(l[i], "ref_file");
                num(l[i], "ref_offset");
                assert_null(json_object_get(l[i], "value"));
            }
        }
    }
    assert_int_equal(enter + exit_ + tag, 3521);
    assert_int_equal(num(l[0], "time_ms"), 1690201583767LL);
    assert_int_equal(num(l[0], "chunk_offset"), 8);
    free_lines(l, n);
}

static void test_sql_xml(void **state)
{
    (void)state;
    static const char *const keys[] = {"offset", "value", NULL};
    json_t **l;
    size_t n;
    assert_int_equal(decode("sql", "streams/test-service.sql.0.protocol", NULL, &l, &n), 0);
    assert_int_equal(n, 9);
    for (size_t i = 0; i < n; i++) check_keys(l[i], keys, NULL);
    assert_int_equal(num(l[0], "offset"), 0);
    assert_int_equal(num(l[1], "offset"), 274);
    free_lines(l, n);
    assert_int_equal(decode("xml", "streams/test-service.xml.0.protocol", NULL, &l, &n), 0);
    assert_int_equal(n, 36);
    free_lines(l, n);
}

static void test_conversations(void **state)
{
    (void)state;
    json_t **l;
    size_t n;
    assert_int_equal(decode("conversation", "conversations/parser.test.protocol", NULL, &l, &n), 0);
    assert_int_equal(n, 1 + 8 + 533 + 165);
    static const char *const hs[] = {"offset", "command", "client_version", "pod", "service", "namespace",
                                     "reply_version", NULL};
    check_keys(l[0], hs, NULL);
    assert_string_equal(str(l[0], "command"), "GET_PROTOCOL_VERSION_V2");
    assert_string_equal(str(l[0], "pod"), "esc-ui-service-84967fdd77-pwhw4_1690201584049");
    assert_int_equal(num(l[0], "reply_version"), 100605);
    static const char *const init[] = {"offset",    "command",    "stream",       "requested_seq", "reset_required",
                                       "handle",    "rotation_period_ms", "rotation_size", "seq", NULL};
    check_keys(l[1], init, NULL);
    assert_int_equal(num(l[1], "offset"), 96);
    assert_string_equal(str(l[1], "handle"), "2c2a5bc5-9ec8-43bf-a253-1aba278ab47f");
    assert_int_equal(num(l[1], "rotation_period_ms"), 3600000);
    size_t acks = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *a = json_object_get(l[i], "acks");
        if (a) acks += json_array_size(a);
        if (!strcmp(str(l[i], "command"), "RCV_DATA")) {
            str(l[i], "stream");
            assert_true(num(l[i], "length") <= 1024);
        }
    }
    assert_int_equal(acks, 698);
    free_lines(l, n);
    /* split directions: the directory form and --replies give the same answer */
    assert_int_equal(decode("conversation", "conversations/agent-v2", NULL, &l, &n), 0);
    assert_int_equal(n, 1 + 7 + 74 + 54 + 1);
    assert_string_equal(str(l[n - 1], "command"), "CLOSE");
    assert_int_equal(num(l[0], "client_version"), 100705);
    free_lines(l, n);
    char replies[4096]; /* fixture_path() returns a static buffer */
    snprintf(replies, sizeof replies, "%s", fixture_path("conversations/agent-v2/server-to-client.bin"));
    assert_int_equal(decode("conversation", "conversations/agent-v2/client-to-server.bin", replies, &l, &n), 0);
    assert_int_equal(n, 137);
    free_lines(l, n);
}

static void test_bad_usage(void **state)
{
    (void)state;
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    const char *unknown[] = {"decode", "bogus", "/dev/null", NULL};
    assert_int_equal(cli_run(&out, &err, unknown), 2);
    const char *missing[] = {"decode", "calls", "/nonexistent/file", NULL};
    assert_int_equal(cli_run(&out, &err, missing), 1);
    cp_buf_reset(&out);
    const char *help[] = {"decode", "--help", NULL};
    assert_int_equal(cli_run(&out, &err, help), 0);
    cp_buf_putc(&out, 0);
    assert_non_null(strstr((char *)out.data, "conversation"));
    cp_buf_free(&out);
    cp_buf_free(&err);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dictionary_params_suspend),
        cmocka_unit_test(test_calls),
        cmocka_unit_test(test_trace),
        cmocka_unit_test(test_sql_xml),
        cmocka_unit_test(test_conversations),
        cmocka_unit_test(test_bad_usage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
