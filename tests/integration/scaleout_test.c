/* scaleout_test.c -- issue 5's scale-out acceptance (CP_TEST_PG_S3_ONLY: registered as
 * scaleout_test@pg-s3 only): two `cloudprof serve` processes share one PostgreSQL catalog
 * and one S3 bucket; agents are split across them (the recorded conversation to one,
 * emulated agents to the other); either node answers queries for all the data; with both
 * nodes compacting on a timer and two `cloudprof compact` runs racing them, every window
 * is compacted exactly once: the cold files hold every call once, none twice, none lost.
 */
#include "http_util.h"
#include "pair_util.h"
#include "replay_util.h"
#include "server_util.h"

#include <jansson.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OLD_FROM 1690200000000LL
#define OLD_TO 1690210000000LL

static long long count_calls(const test_server *s, long long from, long long to)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/calls/stats?from=%lld&to=%lld", from, to);
    json_t *j = http_get_json(s->http_port, path, 200);
    long long n = json_integer_value(json_object_get(j, "total"));
    json_decref(j);
    return n;
}

static long long pg_ll(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) fail_msg("%s: %s", sql, PQerrorMessage(c));
    long long v = PQgetisnull(r, 0, 0) ? 0 : atoll(PQgetvalue(r, 0, 0));
    PQclear(r);
    return v;
}

static pid_t spawn_compact(const char *data, const char *catalog, const char *store, const char *node,
                           long long until)
{
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char u[32];
        snprintf(u, sizeof u, "%lld", until);
        execl(CLOUDPROF_BIN, CLOUDPROF_BIN, "compact", "--data", data, "--catalog", catalog, "--store", store,
              "--s3-endpoint", test_s3_endpoint(), "--until", u, "--node", node, "--quiet", (char *)NULL);
        _exit(127);
    }
    return pid;
}

static void test_two_nodes_share_pg_and_s3(void **state)
{
    (void)state;
    test_pair_require();
    test_pair_env();
    char *dir = make_temp_dir("scaleout");
    char *catalog = test_catalog_spec(dir);
    char *store = test_store_url(dir);
    const char *const *pf = test_pair_flags(catalog, store);
    const char *args_a[16], *args_b[16];
    size_t n = 0;
    for (; pf[n]; n++) args_a[n] = args_b[n] = pf[n];
    const char *tail_a[] = {"--compact-every", "1", "--compact-delay", "0", "--node", "node-a", NULL};
    const char *tail_b[] = {"--compact-every", "1", "--compact-delay", "0", "--node", "node-b", NULL};
    for (size_t i = 0; i < 7; i++) args_a[n + i] = tail_a[i], args_b[n + i] = tail_b[i];
    test_server a, b;
    server_start(&a, "scaleout-a", args_a);
    server_start(&b, "scaleout-b", args_b);

    /* agents split across the nodes */
    replay_capture cap;
    replay_capture_parser_test(&cap);
    replay_opts o = {0};
    replay_result r;
    replay_run(a.port, &cap, &o, &r);
    replay_capture_free(&cap);
    long long t0 = (long long)cp_now_ms();
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", b.port);
    /* a fixed amount of work: 4 agents x 100 calls, 25 after each flush cycle */
    const char *em[] = {"emulate", "--target", target, "--agents", "4", "--duration", "100", "--max-calls", "100",
                        "--calls-per-flush", "25", "--namespaces", "2", "--flush-interval", "250", "--json", "--quiet",
                        NULL};
    cp_buf out, err;
    cp_buf_init(&out);
    cp_buf_init(&err);
    int rc = cli_run(&out, &err, em);
    if (rc != 0) server_fail(&b, "emulate exited %d: %.*s", rc, (int)err.len, (char *)err.data);
    cp_buf_putc(&out, 0);
    /* --json: the summary is the last line */
    char *text = (char *)out.data;
    size_t len = strlen(text);
    while (len && text[len - 1] == '\n') text[--len] = 0;
    const char *last = strrchr(text, '\n');
    last = last ? last + 1 : text;
    json_t *summary = json_loads(last, 0, NULL);
    assert_non_null(summary);
    long long emulated = json_integer_value(json_object_get(summary, "calls_sent"));
    json_decref(summary);
    assert_int_equal(emulated, 4 * 100);
    long long t1 = (long long)cp_now_ms() + 1000;

    /* either node answers for all the data (hot on one node's writes, cold once compacted) */
    long long old_a = 0, old_b = 0, new_a = 0, new_b = 0;
    for (int64_t deadline = test_now_ms() + TEST_WAIT_MS; test_now_ms() < deadline;) {
        old_a = count_calls(&a, OLD_FROM, OLD_TO);
        old_b = count_calls(&b, OLD_FROM, OLD_TO);
        new_a = count_calls(&a, t0 - 60000, t1);
        new_b = count_calls(&b, t0 - 60000, t1);
        if (old_a == 45 && old_b == 45 && new_a == emulated && new_b == emulated) break;
        sleep_ms(100);
    }
    printf("node a: %lld + %lld calls, node b: %lld + %lld calls (45 replayed to a, %lld emulated to b)\n", old_a,
           new_a, old_b, new_b, emulated);
    assert_int_equal(old_a, 45);
    assert_int_equal(old_b, 45);
    assert_int_equal(new_a, emulated);
    assert_int_equal(new_b, emulated);

    /* two more compactors race the nodes' own timers over every window, open ones too */
    long long until = (long long)cp_now_ms() + 3600000;
    pid_t c1 = spawn_compact(dir, catalog, store, "cli-1", until);
    pid_t c2 = spawn_compact(dir, catalog, store, "cli-2", until);
    int s1, s2;
    waitpid(c1, &s1, 0);
    waitpid(c2, &s2, 0);
    assert_true(WIFEXITED(s1) && WEXITSTATUS(s1) == 0);
    assert_true(WIFEXITED(s2) && WEXITSTATUS(s2) == 0);

    PGconn *pg = PQconnectdb(catalog);
    assert_int_equal(PQstatus(pg), CONNECTION_OK);
    /* every window that had calls was compacted, exactly once */
    char sql[256];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM inventory WHERE table_type = 'calls' AND rows_count > 0 AND status <> 'persisted'"
             " AND end_time <= %lld",
             until);
    long long open_windows = pg_ll(pg, sql);
    long long cold_rows =
        pg_ll(pg, "SELECT sum(rows_count) FROM s3_files WHERE status = 'completed' AND file_type = 'calls'");
    long long claimers = pg_ll(pg, "SELECT count(DISTINCT claimed_by) FROM inventory WHERE status = 'persisted'");
    long long dup_claims =
        pg_ll(pg, "SELECT count(*) FROM (SELECT claim FROM s3_files GROUP BY claim, namespace, duration_range"
                  " HAVING count(*) > 1) d");
    long long not_done = pg_ll(pg, "SELECT count(*) FROM s3_files WHERE status <> 'completed'");
    PQfinish(pg);
    printf("cold: %lld rows in completed files, %lld compactors took part, %lld windows left hot\n", cold_rows,
           claimers, open_windows);
    assert_int_equal(open_windows, 0);
    assert_int_equal(dup_claims, 0);
    assert_int_equal(not_done, 0);
    assert_int_equal(cold_rows, 45 + emulated);

    /* and still every call once, from either node */
    assert_int_equal(count_calls(&a, OLD_FROM, OLD_TO), 45);
    assert_int_equal(count_calls(&b, OLD_FROM, OLD_TO), 45);
    assert_int_equal(count_calls(&a, t0 - 60000, t1), emulated);
    assert_int_equal(count_calls(&b, t0 - 60000, t1), emulated);

    server_stop(&a);
    server_stop(&b);
    server_destroy(&a);
    server_destroy(&b);
    cp_buf_free(&out);
    cp_buf_free(&err);
    remove_tree(dir);
    free(dir);
    free(catalog);
    free(store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_two_nodes_share_pg_and_s3, servers_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
