/* chaos_test.c -- a bad day, bounded (issue 16's acceptance): emulated agents stream while
 * [CP_TEST_INLINE_WRITER: runs again with the catalog writer inline, tests/CMakeLists.txt]
 * the test kills the server (SIGKILL) at random moments, fills its file system and frees
 * it again (a tmpfs of its own when run as root), and, on PostgreSQL + S3, makes S3
 * unreachable during a compaction. At the end:
 *   - every byte an ack covered is in the raw log (stream files plus the torn tails cut off
 *     beside them), stream by stream;
 *   - every stored stream file decodes;
 *   - every call in the raw log is listed exactly once by the API (hot, then cold);
 *   - compaction finishes.
 * The random moments come from a fixed seed; the checks are invariants that hold whatever
 * the moments were. CP_TEST_BOTH_PAIRS: SQLite + directory, and PostgreSQL + S3.
 */
#include "server_util.h"

#include "http_util.h"
#include "pair_util.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

typedef struct env {
    test_server s;
    char *dir, *catalog, *store;
    char mnt[1100], data[1200], filler[1200], agent_port[16], http_port[16];
    int mounted;
    const char *args[40];
} env;

/* ---- the file system ---------------------------------------------------------------------------- */

static void fill(const env *e, long long leave)
{
    struct statvfs v;
    if (statvfs(e->mnt, &v) != 0) return;
    long long avail = (long long)v.f_bavail * (long long)v.f_frsize;
    FILE *f = fopen(e->filler, "wb");
    if (!f) return;
    static char block[1 << 16];
    for (long long left = avail - leave; left > 0; left -= (long long)sizeof block)
        if (fwrite(block, 1, left < (long long)sizeof block ? (size_t)left : sizeof block, f) == 0) break;
    fclose(f);
}

/* ---- checks ------------------------------------------------------------------------------------- */

/* `cloudprof compact` on the server's storage; s3_endpoint overrides the pair's. */
static int compact(const env *e, const char *s3_endpoint, int64_t until, cp_buf *out)
{
    const char *argv[32];
    size_t n = 0;
    char untilv[32];
    snprintf(untilv, sizeof untilv, "%lld", (long long)until);
    argv[n++] = "compact";
    argv[n++] = "--data";
    argv[n++] = e->data;
    for (const char *const *pf = test_pair_flags(e->catalog, e->store); *pf; pf++) argv[n++] = *pf;
    if (s3_endpoint) {
        argv[n++] = "--s3-endpoint";
        argv[n++] = s3_endpoint;
    }
    argv[n++] = "--until";
    argv[n++] = untilv;
    argv[n++] = "--take-over";
    argv[n] = NULL;
    cp_buf err;
    cp_buf_init(&err);
    cp_buf_reset(out);
    int rc = cli_run(out, &err, argv);
    cp_buf_append(out, err.data, err.len);
    cp_buf_putc(out, 0);
    cp_buf_free(&err);
    return rc;
}

static void test_chaos(void **state)
{
    test_pair_require();
    test_pair_env();
    env e;
    memset(&e, 0, sizeof e);
    e.dir = make_temp_dir("chaos");
    e.catalog = test_catalog_spec(e.dir);
    e.store = test_store_url(e.dir);
    snprintf(e.mnt, sizeof e.mnt, "%s/fs", e.dir);
    mkdir(e.mnt, 0755);
    e.mounted = geteuid() == 0 && mount("tmpfs", e.mnt, "tmpfs", 0, "size=96m") == 0;
    if (!e.mounted) printf("note: not root: no tmpfs, so the disk-full part is left out\n");
    snprintf(e.data, sizeof e.data, "%s/data", e.mnt);
    snprintf(e.filler, sizeof e.filler, "%s/filler", e.mnt);
    size_t n = 0;
    for (const char *const *pf = test_pair_flags(e.catalog, e.store); *pf; pf++) e.args[n++] = *pf;
    e.args[n++] = "--data";
    e.args[n++] = e.data;
    e.args[n++] = "--min-free";
    e.args[n++] = "0"; /* the disk really fills */
    e.args[n] = NULL;
    server_start(&e.s, "chaos", e.args);
    snprintf(e.s.data, sizeof e.s.data, "%.1000s", e.data);
    /* the agents reconnect to the same ports after each kill (the later flags win) */
    snprintf(e.agent_port, sizeof e.agent_port, "%d", e.s.port);
    snprintf(e.http_port, sizeof e.http_port, "%d", e.s.http_port);
    e.args[n++] = "--agent-port";
    e.args[n++] = e.agent_port;
    e.args[n++] = "--http-port";
    e.args[n++] = e.http_port;
    e.args[n] = NULL;
    int64_t from = cp_now_ms() - 3600000;

    /* the agents reconnect after each kill; their summary says what was acknowledged */
    const char *const emu_args[] = {"--agents", "4", "--duration", "32", "--calls-per-sec", "200",
                                    "--reconnect-delay", "300", "--flush-interval", "1000", NULL};
    bg_emulator emu;
    emulate_start(&emu, &e.s, emu_args);
    uint64_t seed = 0xc4a05;
    for (int round = 0; round < 8; round++) {
        sleep_ms(1500 + (long)(test_rand(&seed) % 2500));
        if (round == 3 && e.mounted) { /* the disk fills up for two seconds */
            fill(&e, 16 << 10); /* a few flushes from full */
            sleep_ms(2000);
            unlink(e.filler);
            continue;
        }
        server_kill(&e.s);
        sleep_ms(200 + (long)(test_rand(&seed) % 600));
        server_restart(&e.s, e.args);
        snprintf(e.s.data, sizeof e.s.data, "%.1000s", e.data);
    }
    json_t *sum = emulate_finish(&emu, &e.s, 180000);
    server_wait_recovered(&e.s);
    int64_t to = cp_now_ms() + 3600000;

    /* every acknowledged byte is stored; every file decodes; the API has every call once */
    long long stored[RAW_STREAMS];
    long long raw_calls = raw_check(&e.s, stored), api = -1;
    json_t *sb = json_object_get(sum, "stream_bytes");
    for (size_t k = 0; k < RAW_STREAMS; k++) {
        long long acked = json_integer_value(json_object_get(sb, raw_stream_names[k]));
        printf("  %-14s acked %lld bytes, stored %lld\n", raw_stream_names[k], acked, stored[k]);
        if (stored[k] < acked)
            server_fail(&e.s, "%s: %lld bytes acknowledged, only %lld stored", raw_stream_names[k], acked, stored[k]);
    }
    assert_true(raw_calls >= json_integer_value(json_object_get(sum, "calls_sent")));
    /* the agents came back after the kills: the test saw more than the first seconds */
    if (json_integer_value(json_object_get(sum, "reconnects")) < 1) server_fail(&e.s, "the agents never reconnected");
    for (int i = 0; i < 1200 && (api = api_calls_total(&e.s, from, to)) != raw_calls; i++) sleep_ms(50);
    printf("%lld calls in the raw log, %lld in the API\n", raw_calls, api);
    if (api != raw_calls) server_fail(&e.s, "%lld calls in the raw log but %lld in the API", raw_calls, api);
    server_stop(&e.s); /* the compactor is the CLI's, below */

    /* compaction: with S3 out of reach it fails and keeps everything; then it finishes */
    cp_buf out;
    cp_buf_init(&out);
    if (test_pair_pg()) {
        int rc = compact(&e, "http://127.0.0.1:9", to, &out);
        printf("compact with S3 unreachable: exit %d\n%s", rc, (const char *)out.data);
        assert_true(rc != 0);
    }
    int rc = compact(&e, NULL, to, &out);
    printf("compact: exit %d\n%s", rc, (const char *)out.data);
    assert_int_equal(rc, 0);
    assert_null(strstr((const char *)out.data, "compacted 0 claims"));
    server_restart(&e.s, e.args);
    snprintf(e.s.data, sizeof e.s.data, "%.1000s", e.data);
    api = api_calls_total(&e.s, from, to);
    printf("after compaction: %lld calls in the API\n", api);
    assert_int_equal(api, raw_calls);
    cp_buf_free(&out);
    json_decref(sum);
    server_stop(&e.s);
    server_destroy(&e.s);
    if (e.mounted) umount(e.mnt);
    remove_tree(e.dir);
    free(e.dir);
    free(e.catalog);
    free(e.store);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test_teardown(test_chaos, servers_teardown)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
