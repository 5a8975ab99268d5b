/* metrics_test.c -- the metrics registry (common/cp_metrics.h) and its text exposition:
 * HELP and label escaping, every type's lines, histograms cumulative with +Inf, _sum and
 * _count, sparse families, the cloudprof families' HTTP code mapping, NULL registries,
 * bad definitions refused, and exact totals when threads update at once. The integration
 * test (tests/integration/metrics_test.c) parses a live server's text with a real
 * Prometheus parser. */
#include "testutil.h"

#include "common/cp_metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const colors[] = {"red", "a\"b\\c\nd"};
static const char *const sizes[] = {"s", "m", "l"};
static const double bounds[] = {0.125, 1, 10}; /* exact in binary: sums compare as text */

enum { T_COUNTER, T_GAUGE, T_HIST, T_PAIR, T_PLAIN_HIST, T_COUNT };

static const cp_metric_def defs[T_COUNT] = {
    [T_COUNTER] = {"t_things_total", "Things with a back\\slash\nand a new line.", CP_METRIC_COUNTER,
                   {"color", NULL}, {colors, NULL}, {2, 0}},
    [T_GAUGE] = {"t_level", "A level.", CP_METRIC_GAUGE},
    [T_HIST] = {"t_wait_seconds", "Waits.", CP_METRIC_HISTOGRAM, {"color", NULL}, {colors, NULL}, {2, 0}, bounds, 3},
    [T_PAIR] = {"t_pairs_total", "Pairs.", CP_METRIC_COUNTER, {"color", "size"}, {colors, sizes}, {2, 3}, NULL, 0, 1},
    [T_PLAIN_HIST] = {"t_plain_seconds", "No labels.", CP_METRIC_HISTOGRAM, {NULL, NULL}, {NULL, NULL}, {0, 0},
                      bounds, 3},
};

static char *render(const cp_metrics *m)
{
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(cp_metrics_write(m, &b), CP_OK);
    assert_int_equal(cp_buf_putc(&b, 0), CP_OK);
    return (char *)b.data; /* cp_buf's storage is malloc'ed */
}

static void assert_has(const char *text, const char *line)
{
    if (!strstr(text, line)) fail_msg("missing:\n%s\nin:\n%s", line, text);
}

static void test_exposition(void **state)
{
    (void)state;
    cp_metrics *m = cp_metrics_new_defs(defs, T_COUNT);
    assert_non_null(m);
    cp_metrics_add(m, T_COUNTER, 0, 3);
    cp_metrics_inc(m, T_COUNTER, 1);
    cp_metrics_set(m, T_GAUGE, 0, 5);
    cp_metrics_gauge_add(m, T_GAUGE, 0, -7);
    double obs[] = {0.0625, 0.125 /* le is inclusive */, 0.5, 20};
    for (size_t i = 0; i < CP_ARRAY_LEN(obs); i++) cp_metrics_observe(m, T_HIST, 1, obs[i]);
    cp_metrics_observe(m, T_HIST, 1, NAN); /* ignored */
    cp_metrics_inc(m, T_PAIR, 1 * 3 + 2);         /* color 1, size "l" */
    /* out of range, wrong kind: ignored */
    cp_metrics_inc(m, T_COUNTER, 2);
    cp_metrics_inc(m, T_COUNT, 0);
    cp_metrics_inc(m, T_HIST, 0);
    cp_metrics_observe(m, T_COUNTER, 0, 1);
    assert_int_equal(cp_metrics_set_build_info(m, "1.2 \"beta\"\\x"), CP_OK);
    char *t = render(m);

    assert_has(t, "# HELP t_things_total Things with a back\\\\slash\\nand a new line.\n"
                  "# TYPE t_things_total counter\n"
                  "t_things_total{color=\"red\"} 3\n"
                  "t_things_total{color=\"a\\\"b\\\\c\\nd\"} 1\n");
    assert_has(t, "# TYPE t_level gauge\nt_level -2\n");
    assert_has(t, "# TYPE t_wait_seconds histogram\n"
                  "t_wait_seconds_bucket{color=\"red\",le=\"0.125\"} 0\n");
    assert_has(t, "t_wait_seconds_bucket{color=\"a\\\"b\\\\c\\nd\",le=\"0.125\"} 2\n"
                  "t_wait_seconds_bucket{color=\"a\\\"b\\\\c\\nd\",le=\"1\"} 3\n"
                  "t_wait_seconds_bucket{color=\"a\\\"b\\\\c\\nd\",le=\"10\"} 3\n"
                  "t_wait_seconds_bucket{color=\"a\\\"b\\\\c\\nd\",le=\"+Inf\"} 4\n"
                  "t_wait_seconds_sum{color=\"a\\\"b\\\\c\\nd\"} 20.6875\n"
                  "t_wait_seconds_count{color=\"a\\\"b\\\\c\\nd\"} 4\n");
    assert_has(t, "t_wait_seconds_count{color=\"red\"} 0\n");
    /* sparse: only the series that moved */
    assert_has(t, "# TYPE t_pairs_total counter\nt_pairs_total{color=\"a\\\"b\\\\c\\nd\",size=\"l\"} 1\n# HELP");
    assert_has(t, "# TYPE t_plain_seconds histogram\n"
                  "t_plain_seconds_bucket{le=\"0.125\"} 0\n"
                  "t_plain_seconds_bucket{le=\"1\"} 0\n"
                  "t_plain_seconds_bucket{le=\"10\"} 0\n"
                  "t_plain_seconds_bucket{le=\"+Inf\"} 0\n"
                  "t_plain_seconds_sum 0\n"
                  "t_plain_seconds_count 0\n");
    assert_has(t, "# TYPE cloudprof_build_info gauge\ncloudprof_build_info{version=\"1.2 \\\"beta\\\"\\\\x\"} 1\n");
    /* every line is a comment or a sample; the text ends with a line feed */
    assert_true(t[strlen(t) - 1] == '\n');
    assert_int_equal(cp_metrics_get(m, T_HIST, 1), 4);
    assert_int_equal(cp_metrics_get(m, T_GAUGE, 0), -2);
    assert_int_equal(cp_metrics_get(m, T_COUNTER, 2), 0);
    free(t);
    cp_metrics_free(m);
}

static void test_bad_defs_and_null(void **state)
{
    (void)state;
    static const double unsorted[] = {1, 0.5};
#define BAD(n, t, ...) {.name = n, .help = "x", .type = t, __VA_ARGS__}
    cp_metric_def bad[] = {
        BAD("1starts_with_digit", CP_METRIC_COUNTER, .sparse = 0),
        BAD("has-dash", CP_METRIC_COUNTER, .sparse = 0),
        BAD("ok_seconds", CP_METRIC_HISTOGRAM, .buckets = unsorted, .nbuckets = 2),
        BAD("ok_seconds", CP_METRIC_HISTOGRAM, .label = {"le"}, .values = {colors}, .nvalues = {2}, .buckets = bounds,
            .nbuckets = 3),
        BAD("ok_total", CP_METRIC_COUNTER, .label = {"__reserved"}, .values = {colors}, .nvalues = {2}),
        BAD("ok_total", CP_METRIC_COUNTER, .label = {"color"}, .values = {colors}, .nvalues = {0}),
    };
#undef BAD
    for (size_t i = 0; i < CP_ARRAY_LEN(bad); i++) assert_null(cp_metrics_new_defs(&bad[i], 1));
    /* a NULL registry takes updates and writes nothing */
    cp_metrics_inc(NULL, 0, 0);
    cp_metrics_observe(NULL, 0, 0, 1);
    cp_metrics_http_request(NULL, CP_M_ROUTE_HEALTH, 200);
    cp_metrics_auth_failure(NULL, CP_M_AUTH_MISSING);
    assert_int_equal(cp_metrics_set_build_info(NULL, "x"), CP_OK);
    cp_buf b;
    cp_buf_init(&b);
    assert_int_equal(cp_metrics_write(NULL, &b), CP_OK);
    assert_int_equal(b.len, 0);
    cp_metrics_free(NULL);
}

static void test_builtin(void **state)
{
    (void)state;
    cp_metrics *m = cp_metrics_new();
    assert_non_null(m);
    cp_metrics_http_request(m, CP_M_ROUTE_HEALTH, 200);
    cp_metrics_http_request(m, CP_M_ROUTE_HEALTH, 200);
    cp_metrics_http_request(m, CP_M_ROUTE_CALLS, 418); /* unknown code: its class */
    cp_metrics_http_request(m, CP_M_ROUTE_OTHER, 42);  /* not a status: other */
    cp_metrics_auth_failure(m, CP_M_AUTH_BACKOFF);
    cp_metrics_observe(m, CP_M_AGENT_ACK_LATENCY, 0, 0.003);
    cp_metrics_add(m, CP_M_AGENT_STREAM_BYTES, 11, 9); /* heap */
    char *t = render(m);
    assert_has(t, "cloudprof_http_requests_total{route=\"health\",code=\"200\"} 2\n");
    assert_has(t, "cloudprof_http_requests_total{route=\"calls\",code=\"4xx\"} 1\n");
    assert_has(t, "cloudprof_http_requests_total{route=\"other\",code=\"other\"} 1\n");
    assert_null(strstr(t, "route=\"health\",code=\"404\"")); /* sparse */
    assert_has(t, "cloudprof_http_auth_failures_total{reason=\"backoff\"} 1\n");
    assert_has(t, "cloudprof_http_auth_failures_total{reason=\"missing\"} 0\n");
    assert_has(t, "cloudprof_agent_ack_latency_seconds_bucket{le=\"0.0025\"} 0\n"
                  "cloudprof_agent_ack_latency_seconds_bucket{le=\"0.005\"} 1\n");
    assert_has(t, "cloudprof_agent_ack_latency_seconds_bucket{le=\"+Inf\"} 1\n"
                  "cloudprof_agent_ack_latency_seconds_sum 0.003\n"
                  "cloudprof_agent_ack_latency_seconds_count 1\n");
    assert_has(t, "cloudprof_agent_stream_bytes_total{stream=\"heap\"} 9\n");
    assert_has(t, "# TYPE cloudprof_agent_connections_open gauge\ncloudprof_agent_connections_open 0\n");
    assert_has(t, "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds ");
    assert_true(cp_metrics_get(m, CP_M_PROCESS_START, 0) > 1600000000);
    free(t);
    cp_metrics_free(m);
}

/* ---- several threads at once: nothing lost ------------------------------------------------ */

#define THREADS 4
#define ROUNDS 20000

static void *hammer(void *arg)
{
    cp_metrics *m = arg;
    for (int i = 0; i < ROUNDS; i++) {
        cp_metrics_inc(m, T_COUNTER, (size_t)(i & 1));
        cp_metrics_gauge_add(m, T_GAUGE, 0, i & 1 ? 1 : -1);
        cp_metrics_observe(m, T_PLAIN_HIST, 0, 0.5);
    }
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    cp_metrics *m = cp_metrics_new_defs(defs, T_COUNT);
    assert_non_null(m);
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) assert_int_equal(pthread_create(&th[i], NULL, hammer, m), 0);
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    assert_int_equal(cp_metrics_get(m, T_COUNTER, 0) + cp_metrics_get(m, T_COUNTER, 1), THREADS * ROUNDS);
    assert_int_equal(cp_metrics_get(m, T_GAUGE, 0), 0);
    assert_int_equal(cp_metrics_get(m, T_PLAIN_HIST, 0), THREADS * ROUNDS);
    char *t = render(m);
    char want[128];
    snprintf(want, sizeof want, "t_plain_seconds_bucket{le=\"1\"} %d\n", THREADS * ROUNDS);
    assert_has(t, want);
    snprintf(want, sizeof want, "t_plain_seconds_sum %d\n", THREADS * ROUNDS / 2); /* 0.5 adds up exactly */
    assert_has(t, want);
    free(t);
    cp_metrics_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_exposition),
        cmocka_unit_test(test_bad_defs_and_null),
        cmocka_unit_test(test_builtin),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
