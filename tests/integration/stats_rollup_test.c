/* stats_rollup_test.c -- /calls/stats from rollups is exact (issue 14's acceptance test).
 *
 * CP_TEST_BOTH_PAIRS: CTest runs this suite on SQLite + a directory store, and again as
 * stats_rollup_test@pg-s3 on PostgreSQL + S3 (pair_util.h).
 *
 * For random windows, selections and duration filters the answer under test,
 * cp_stats_run (rollup entries for the whole cells and whole duration classes, scans for
 * the window's edges, the classes a duration filter cuts and the sources without
 * rollups), must equal a scan of every matching call: the same reader's stats op with a
 * plan without rollups (cp_stats_plan {0}), through the same code paths. Equal means the
 * totals (count, duration, suspension, queue wait, transactions) exactly, and in every
 * chart column the slowest point (duration, time, restart, trace position, pod hash,
 * calls) exactly; a column with no point on one side has none on the other. The scan
 * itself is checked in every case against plain C over the generated calls (the same
 * totals, the column rule of cp_stats_init re-derived, and each column's kept points).
 *
 * The data set (written through cp_catalog_call_put): 2026-01-01 12:00 .. 15:00 UTC in
 * 5-minute windows; namespaces ns-a, ns-b and a UTF-8 one; the pod name pod-1 (and the
 * service svc-1) in two namespaces, two restarts of ns-a/pod-1; durations on both edges
 * of every class of cp_rollup_class_of (0 .. INT32_MAX) and inside the classes a filter
 * cuts (250, 777, 1500, 2000), mostly from a short list (ties everywhere); twins: calls
 * identical but for the pod or the restart, so the slowest point's tie-breaks down to
 * the pod hash decide; errors (a call.red param, cp_call.error set as assembly does);
 * system calls (an idle method of cp_system_idle_default, a socket read, call.idle,
 * web.url /actuator/health) and calls that are system calls only under an extended
 * idle list; times unaligned, on a 2.5 s grid (cell edges) and on window edges +-1 ms.
 * Most calls from 14:20 on (all from 14:40) go in under the extended idle list
 * (cp_catalog_set_idle), so their rollup entries carry another fingerprint.
 *
 * States, each compared with a few hundred random cases (fixed seeds):
 *   1. all hot, through a tiered reader and through the bare catalog reader;
 *   2. a hot window that predates rollups (inventory.rollup = 0, its hot_rollups rows
 *      deleted, as a catalog from before migration 5 has it): scanned instead;
 *   3. mixed: the real compactor (cp_compact_run, default idle list) up to 13:20; the
 *      rollup file of one claim x namespace loses its s3_files row, another its object;
 *      late calls arrive for the compacted windows (batch tables, hot, with rollups);
 *   4. all cold (the compactor with the extended idle list: cold rollups of two
 *      fingerprints);
 *   5. plus calls files of the old layout for 10:00 .. 11:00, written by hand (rows by
 *      pod then time, no key/value metadata, 65536-row groups, no rollup file): stats
 *      and searches (time asc/desc, duration desc, keyset cursors) over them are exact.
 * Besides the random cases, in every state fixed cases check the work done: a whole
 * aligned window with no filter scans exactly the calls of the sources without usable
 * rollups; a hide_system query uses only entries made with its own idle list (a list no
 * entry was made with: none at all); a search or a method substring uses none. Two tie
 * groups (seven calls of one duration in one cell, each slower than the one before by the
 * next tie-break, down to the pod hash), each call in a transaction of its own, in both
 * orders, check the hot_rollups upsert and the cold writer's merge of the slowest call.
 * The progress callback is heard, and cancelling returns CP_EABORT and leaves the reader
 * answering exactly.
 *
 * A difference fails with the pair, the state, the reader, the case (window, columns,
 * every filter), the plan, both runs' work, the column and both points (with the data
 * set's call each is). CP_STATS_CASES overrides the number of random cases per state (a
 * quick run, testutil.h test_quick(), makes 60 % of them);
 * CP_STATS_VERBOSE=1 prints every case.
 */
#include "testutil.h"

#include "pair_util.h"
#include "query/cp_query.h"
#include "query/cp_rollup.h"
#include "store/cp_catalog.h"
#include "store/cp_cold.h"
#include "store/cp_hot.h"
#include "store/cp_ostore.h"
#include "store/cp_stats.h"

#include <libpq-fe.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIN_MS 60000LL
#define HOUR_MS 3600000LL
#define WIN_MS (5 * MIN_MS)
#define CELL ((int64_t)CP_ROLLUP_CELL_MS)
#define T0 1767268800000LL            /* 2026-01-01 12:00:00 UTC */
#define SPAN_MS (180 * MIN_MS)        /* the calls: [T0, T0 + 3 h) */
#define T_OLD (T0 - 2 * HOUR_MS)      /* 10:00: the hour of the old-layout files */
#define RESTART_AT (T0 + 70 * MIN_MS) /* ns-a/pod-1 restarts */
#define EXT_FROM (T0 + 140 * MIN_MS)  /* 14:20: most calls from here on under the extended idle list */
#define EXT_ONLY (T0 + 160 * MIN_MS)  /* 14:40: all of them */
#define PREDATES (T0 + 100 * MIN_MS)  /* 13:40: the hot window "from before rollups" */
#define MIXED_UNTIL (T0 + 80 * MIN_MS)
#define CLAIM_12 "20260101_1200"      /* the first claims of the mixed compaction */
#define CLAIM_13 "20260101_1300"
#define CLAIM_OLD "20260101_1000"
#define NBASE 3600
#define NLATE 150
#define NOLD 500
#define NALL (NBASE + NLATE + NOLD)
#define NTIE 14                        /* the last base calls: two tie groups */
#define TIE_CELL_1 (T0 + 65 * MIN_MS)  /* 13:05 (cold from the mixed state on) */
#define TIE_CELL_2 (T0 + 125 * MIN_MS) /* 14:05 (hot until all is cold) */
#define TIE_DURATION 4321

/* ---- the data set ------------------------------------------------------------------------ */

static const cp_catalog_pod pods[] = {
    {"ns-a", "svc-1", "pod-1", "ns-a/pod-1", T0 - 2 * HOUR_MS}, /* until RESTART_AT */
    {"ns-a", "svc-1", "pod-1", "ns-a/pod-1", RESTART_AT},       /* after it */
    {"ns-a", "svc-1", "pod-2", "ns-a/pod-2", T0 - HOUR_MS},
    {"ns-a", "web", "web-0", "ns-a/web-0", T0 - HOUR_MS},
    {"ns-b", "svc-1", "pod-1", "ns-b/pod-1", T0 - HOUR_MS}, /* the same service and pod names */
    {"ns-b", "svc-2", "pod-9", "ns-b/pod-9", T0 - 3 * HOUR_MS},
    {"\xc3\xa9quipe", "svc \xc3\xbc", "Pod-\xc3\xbc", "\xc3\xa9quipe/Pod-\xc3\xbc", T0 - HOUR_MS},
};
#define NPODS CP_ARRAY_LEN(pods)

static const char *const sel_ns[] = {"ns-a", "ns-b", "\xc3\xa9quipe", "ns-none"};
static const char *const sel_services[] = {"svc-1", "svc-2", "web", "svc \xc3\xbc", "svc-none"};
static const char *const sel_pods[] = {"pod-1", "pod-2", "pod-9", "web-0", "Pod-\xc3\xbc", "pod-none"};

/* 3..5 are system calls: an idle method of the default list, a socket read (a marker),
 * and one that only the extended list names. */
static const char *const methods[] = {
    "com.acme.OrderService.place(Ljava/lang/String;)V",
    "com.acme.OrderService.cancel()V",
    "org.Foo.bar()I",
    "org.quartz.core.QuartzSchedulerThread.run()V",
    "java.net.SocketInputStream.read([BII)I",
    "com.acme.Poller.idleLoop()V",
    "#17",
};
#define M_EXT_ONLY 5

/* Both edges of every class, values inside the classes filters cut, and big ones. */
static const int32_t durs[] = {0,     1,     9,     10,    99,    100,   499,    500,   999,   1000,
                               2999,  3000,  4999,  5000,  29999, 30000, 89999,  90000, 250000, INT32_MAX,
                               249,   250,   251,   777,   1500,  2000,  120000, 0,     1000,  5000};

/* The extended idle list (the default one and one more substring), and a third list
 * nobody wrote entries with. The catalog keeps the pointer: static storage. */
static const char *g_idle_ext[64];
static size_t g_nidle_ext;
static const char *const g_idle_third[] = {"OrderService.cancel"};

typedef struct tcall {
    cp_call c;
    char params[200];
    uint64_t pod_hash;
    int twin;                 /* a copy of another call but for the pod or the restart */
    int tie;                  /* of a tie group: written in a transaction of its own */
} tcall;

typedef struct fixture {
    char *dir, *spec, *url, *cache, *tmp;
    cp_catalog *cat;
    cp_ostore *store;
    cp_reader *rd;            /* the tiered reader (an API thread's) */
    tcall *calls;             /* base, late, old calls */
    size_t n;                 /* the calls stored so far: calls[0 .. n) */
    uint32_t *by_ref;         /* indexes sorted by ref (NALL) */
    int64_t lo, hi;           /* random windows are drawn from [lo, hi) */
    cp_search *searches[4];
    const char *state;
    size_t ncases;
    char *old_keys[32];
    size_t nold_keys;
} fixture;

static uint64_t rnd(uint64_t *s, uint64_t n) { return n ? test_rand(s) % n : 0; }

static int cmp64(int64_t a, int64_t b) { return (a > b) - (a < b); }

static int ref_cmp(const cp_call_ref *a, const cp_call_ref *b)
{
#define C(f)                                                                                                           \
    if (a->f != b->f) return a->f < b->f ? -1 : 1;
    C(ts_ms) C(restart_ms) C(pod_hash) C(trace_file_index) C(buffer_offset) C(record_index)
#undef C
    return 0;
}

static int64_t floor_div(int64_t v, int64_t d)
{
    int64_t q = v / d;
    return (v % d != 0 && v < 0) ? q - 1 : q;
}

static double secs_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

static void set_pod(cp_call *c, const cp_catalog_pod *p)
{
    c->ns = p->ns, c->ns_len = strlen(p->ns);
    c->service = p->service, c->service_len = strlen(p->service);
    c->pod = p->pod, c->pod_len = strlen(p->pod);
}

/* params as the hot tier keeps them: names sorted, cp_json_str escaping */
static void make_params(tcall *t, uint64_t *rng)
{
    cp_call *c = &t->c;
    cp_buf b;
    cp_buf_init(&b);
    int first = 1;
#define SEP() (first ? (void)(first = 0) : (void)cp_buf_putc(&b, ','))
    cp_buf_putc(&b, '{');
    uint64_t sys = rnd(rng, 14);
    if (sys == 0) SEP(), cp_buf_puts(&b, "\"call.idle\":[\"1\"]");
    if (c->error) {
        SEP();
        cp_buf_puts(&b, rnd(rng, 2) ? "\"call.red\":[\"1\"]" : "\"call.red\":[\"java.lang.IllegalStateException\"]");
    }
    if (rnd(rng, 3) == 0) SEP(), cp_buf_printf(&b, "\"tenant\":[\"%s\"]", rnd(rng, 2) ? "acme" : "beta");
    SEP();
    cp_buf_printf(&b, "\"user\":[\"u-%u\"]", (unsigned)rnd(rng, 12));
    if (sys == 1) SEP(), cp_buf_puts(&b, "\"web.url\":[\"http://svc:8080/actuator/health\"]");
    else if (rnd(rng, 4) == 0) SEP(), cp_buf_puts(&b, "\"web.url\":[\"/api/orders\"]");
#undef SEP
    cp_buf_putc(&b, '}');
    assert_true(b.len < sizeof t->params);
    memcpy(t->params, b.data, b.len);
    c->params_json = t->params, c->params_json_len = b.len;
    cp_buf_free(&b);
}

/* Call i, in [lo, lo + span). A twin copies an earlier call of [first, i) but for the
 * pod (same restart time: only the pod hash tells them apart) or the restart. */
static void make_call(fixture *fx, size_t i, size_t first, int64_t lo, int64_t span, uint64_t *rng)
{
    tcall *t = &fx->calls[i];
    memset(t, 0, sizeof *t);
    cp_call *c = &t->c;
    if (i > first && rnd(rng, 8) == 0) {
        const tcall *src = &fx->calls[first + rnd(rng, i - first)];
        *t = *src;
        memcpy(t->params, src->params, sizeof t->params);
        c->params_json = t->params;
        t->twin = 1;
        if (src->c.restart_ms == pods[0].restart_ms && rnd(rng, 2)) {
            c->restart_ms = pods[1].restart_ms; /* the other restart of ns-a/pod-1 */
        } else if (src->c.restart_ms == pods[1].restart_ms && rnd(rng, 2)) {
            c->restart_ms = pods[0].restart_ms;
        } else {
            size_t pi;
            do pi = rnd(rng, NPODS);
            while (!strcmp(pods[pi].ns, src->c.ns) && !strcmp(pods[pi].pod, src->c.pod));
            set_pod(c, &pods[pi]); /* restart_ms stays the source's */
        }
    } else {
        uint64_t k = rnd(rng, 20);
        if (k < 11) c->ts_ms = lo + (int64_t)rnd(rng, (uint64_t)span);
        else if (k < 18) c->ts_ms = lo + (int64_t)rnd(rng, (uint64_t)(span / 2500)) * 2500; /* a quarter on cell edges */
        else c->ts_ms = lo + (int64_t)(1 + rnd(rng, (uint64_t)(span / WIN_MS) - 1)) * WIN_MS + (int64_t)rnd(rng, 3) - 1;
        if ((c->ts_ms >= TIE_CELL_1 && c->ts_ms < TIE_CELL_1 + CELL) || (c->ts_ms >= TIE_CELL_2 && c->ts_ms < TIE_CELL_2 + CELL))
            c->ts_ms += CELL; /* the tie groups' cells hold them alone */
        size_t pi = rnd(rng, NPODS - 1);
        if (pi >= 1) pi++; /* 1 is the restart of 0: by time */
        if (pi == 0 && c->ts_ms >= RESTART_AT) pi = 1;
        set_pod(c, &pods[pi]);
        c->restart_ms = pods[pi].restart_ms;
        c->duration_ms = rnd(rng, 4) ? durs[rnd(rng, CP_ARRAY_LEN(durs))] : (int32_t)rnd(rng, 120000);
        c->cpu_time = (int64_t)rnd(rng, 40) * 1000;
        c->wait_time = (int64_t)rnd(rng, 10);
        c->memory_used = (int64_t)rnd(rng, 20) << 20;
        c->queue_wait_ms = (int32_t)rnd(rng, 7);
        c->suspend_ms = (int32_t)rnd(rng, 5) * (rnd(rng, 50) == 0 ? 100000 : 1);
        c->calls = (int32_t)rnd(rng, 50);
        c->transactions = (int64_t)rnd(rng, 4);
        static const uint8_t mw[] = {0, 0, 0, 1, 1, 2, 3, 4, 5, 6};
        c->method_id = mw[rnd(rng, sizeof mw)];
        c->method = methods[c->method_id], c->method_len = strlen(c->method);
        c->thread = "main", c->thread_len = 4;
        c->error = rnd(rng, 6) == 0;
        make_params(t, rng);
        c->trace_file_index = 1 + (int32_t)rnd(rng, 2);
        c->buffer_offset = (int32_t)rnd(rng, 8) * 1000 - 3000;
        c->record_index = (int32_t)i;
        c->trace_reason = CP_TRACE_NOT_FOUND;
    }
    /* refs are unique: a clash moves the record index */
    for (int clash = 1; clash;) {
        clash = 0;
        t->pod_hash = cp_pod_hash(c->ns, c->ns_len, c->pod, c->pod_len);
        cp_call_ref r;
        cp_call_ref_of(c, &r);
        for (size_t j = 0; j < i && !clash; j++) {
            cp_call_ref o;
            cp_call_ref_of(&fx->calls[j].c, &o);
            clash = ref_cmp(&r, &o) == 0;
        }
        if (clash) c->record_index += 1000000;
    }
}

/* A tie group in one cell, one entry of ns-a/svc-1/pod-1 (class, flags alike): seven
 * calls of one duration, each slower than the one before by the next tie-break (time,
 * restart, trace file, offset, record), the last one's twin in ns-a/pod-2 (only the pod
 * hash tells them apart). Each goes into the hot tier in a transaction of its own, so
 * the hot_rollups upsert decides the entry's slowest call: in the order slower-last in
 * the first cell, slower-first (reversed) in the second. */
static void make_ties(fixture *fx, size_t first)
{
    for (int g = 0; g < 2; g++) {
        int64_t cell = g ? TIE_CELL_2 : TIE_CELL_1;
        int64_t r0 = pods[0].restart_ms;
        struct {
            int64_t dts, restart;
            int32_t tfi, bo, ri;
            int other_pod;
        } m[7] = {
            {9000, r0, 2, 500, 900005, 0},        {4000, r0, 2, 500, 900004, 0},
            {4000, r0 - 5000, 2, 500, 900003, 0}, {4000, r0 - 5000, 1, 500, 900002, 0},
            {4000, r0 - 5000, 1, -700, 900001, 0}, {4000, r0 - 5000, 1, -700, 900000, 0},
            {4000, r0 - 5000, 1, -700, 900000, 1},
        };
        for (int k = 0; k < 7; k++) {
            int j = g ? 6 - k : k;
            tcall *t = &fx->calls[first + (size_t)(g * 7 + k)];
            memset(t, 0, sizeof *t);
            cp_call *c = &t->c;
            c->ts_ms = cell + m[j].dts;
            set_pod(c, &pods[m[j].other_pod ? 2 : 0]);
            c->restart_ms = m[j].restart;
            c->duration_ms = TIE_DURATION;
            c->calls = 10 + j;
            c->suspend_ms = 1;
            c->method_id = 0;
            c->method = methods[0], c->method_len = strlen(methods[0]);
            c->thread = "main", c->thread_len = 4;
            snprintf(t->params, sizeof t->params, "{\"user\":[\"u-0\"]}");
            c->params_json = t->params, c->params_json_len = strlen(t->params);
            c->trace_file_index = m[j].tfi;
            c->buffer_offset = m[j].bo;
            c->record_index = m[j].ri;
            c->trace_reason = CP_TRACE_NOT_FOUND;
            t->pod_hash = cp_pod_hash(c->ns, c->ns_len, c->pod, c->pod_len);
            t->tie = 1;
        }
    }
}

static const fixture *g_fx; /* for qsort */

static int by_ref_cmp(const void *a, const void *b)
{
    cp_call_ref ra, rb;
    cp_call_ref_of(&g_fx->calls[*(const uint32_t *)a].c, &ra);
    cp_call_ref_of(&g_fx->calls[*(const uint32_t *)b].c, &rb);
    return ref_cmp(&ra, &rb);
}

static long find_call(const fixture *fx, const cp_call_ref *r)
{
    size_t lo = 0, hi = NALL;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        cp_call_ref m;
        cp_call_ref_of(&fx->calls[fx->by_ref[mid]].c, &m);
        int c = ref_cmp(&m, r);
        if (c == 0) return (long)fx->by_ref[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

/* ---- the catalog and the store -------------------------------------------------------------- */

static void open_store(fixture *fx)
{
    cp_ostore_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.url = fx->url;
    if (test_pair_pg()) {
        cfg.endpoint = test_s3_endpoint();
        cfg.access_key = test_s3_access_key();
        cfg.secret_key = test_s3_secret_key();
        cfg.retries = 2;
        cfg.backoff_ms = 100;
        cfg.timeout_s = 60;
    }
    char err[512];
    if (cp_ostore_open(&cfg, &fx->store, err, sizeof err) != CP_OK) fail_msg("open store %s: %s", fx->url, err);
}

static cp_reader *open_hot(const fixture *fx)
{
    char err[512];
    cp_reader *hot;
    if (cp_reader_open(fx->spec, &hot, err, sizeof err) != CP_OK) fail_msg("open reader: %s", err);
    return hot;
}

static cp_reader *open_tiered(const fixture *fx)
{
    char err[512];
    cp_reader *rd;
    cp_tiered_config cfg = {fx->store, test_pair_pg() ? fx->cache : NULL, 0};
    if (cp_reader_open_tiered(open_hot(fx), &cfg, &rd, err, sizeof err) != CP_OK) fail_msg("open tiered: %s", err);
    return rd;
}

/* Runs SQL (several statements) on the catalog's database. */
static void db_exec(const fixture *fx, const char *sql)
{
    if (!test_pair_pg()) {
        sqlite3 *db;
        assert_int_equal(sqlite3_open_v2(fx->spec, &db, SQLITE_OPEN_READWRITE, NULL), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        char *e = NULL;
        if (sqlite3_exec(db, sql, NULL, NULL, &e) != SQLITE_OK) fail_msg("sql: %s\n%.300s", e, sql);
        sqlite3_close(db);
        return;
    }
    PGconn *c = PQconnectdb(fx->spec);
    if (PQstatus(c) != CONNECTION_OK) fail_msg("connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        fail_msg("sql: %s\n%.300s", PQerrorMessage(c), sql);
    PQclear(r);
    PQfinish(c);
}

/* The first column of the first row as text ("" when there is no row). */
static void db_text(const fixture *fx, const char *sql, char *out, size_t outlen)
{
    out[0] = 0;
    if (!test_pair_pg()) {
        sqlite3 *db;
        sqlite3_stmt *st;
        assert_int_equal(sqlite3_open_v2(fx->spec, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) fail_msg("sql: %s\n%s", sqlite3_errmsg(db), sql);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
            snprintf(out, outlen, "%s", (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        sqlite3_close(db);
        return;
    }
    PGconn *c = PQconnectdb(fx->spec);
    if (PQstatus(c) != CONNECTION_OK) fail_msg("connect: %s", PQerrorMessage(c));
    PGresult *r = PQexec(c, sql);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) fail_msg("sql: %s\n%s", PQerrorMessage(c), sql);
    if (PQntuples(r) > 0 && !PQgetisnull(r, 0, 0)) snprintf(out, outlen, "%s", PQgetvalue(r, 0, 0));
    PQclear(r);
    PQfinish(c);
}

static long long db_count(const fixture *fx, const char *sql)
{
    char v[64];
    db_text(fx, sql, v, sizeof v);
    return strtoll(v, NULL, 10);
}

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *s = malloc(n);
    snprintf(s, n, "%s/%s", dir, name);
    return s;
}

static void put_calls(fixture *fx, size_t from, size_t to, int (*want)(const tcall *t, size_t i))
{
    size_t k = 0;
    for (size_t i = from; i < to; i++) {
        if (want && !want(&fx->calls[i], i)) continue;
        if (fx->calls[i].tie) assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
        if (cp_catalog_call_put(fx->cat, &fx->calls[i].c) != CP_OK)
            fail_msg("call_put %zu: %s", i, cp_catalog_errmsg(fx->cat));
        if (++k % 500 == 0 || fx->calls[i].tie) assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    }
    assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
}

/* Phase 1 (default idle list): everything before 14:20, a quarter of 14:20 .. 14:40. */
static int phase1(const tcall *t, size_t i)
{
    return t->c.ts_ms < EXT_FROM || (t->c.ts_ms < EXT_ONLY && i % 4 == 0);
}
static int phase2(const tcall *t, size_t i) { return !phase1(t, i); }

static int group_setup(void **state)
{
    test_pair_require();
    test_pair_env();
    g_nidle_ext = 0;
    for (size_t i = 0; i < cp_system_idle_default_count; i++) g_idle_ext[g_nidle_ext++] = cp_system_idle_default[i];
    g_idle_ext[g_nidle_ext++] = "Poller.idleLoop";

    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    fixture *fx = calloc(1, sizeof *fx);
    fx->dir = make_temp_dir("stats-rollup");
    fx->spec = test_catalog_spec(fx->dir);
    fx->url = test_store_url(fx->dir);
    fx->cache = path_in(fx->dir, "cache");
    fx->tmp = path_in(fx->dir, "tmp");
    assert_int_equal(cp_mkdirs(fx->tmp, 0755), CP_OK);
    const char *nc = getenv("CP_STATS_CASES");
    fx->ncases = nc && *nc ? (size_t)strtoul(nc, NULL, 10)
                         : test_pair_pg() ? test_scaled(200, 120) : test_scaled(400, 240);
    char err[512];
    if (cp_catalog_open(fx->spec, &fx->cat, err, sizeof err) != CP_OK) fail_msg("open catalog: %s", err);
    assert_int_equal(cp_catalog_set_windows(fx->cat, WIN_MS, 3 * HOUR_MS), CP_OK);
    for (size_t i = 0; i < NPODS; i++)
        assert_int_equal(cp_catalog_pod_register(fx->cat, &pods[i], pods[i].restart_ms), CP_OK);
    assert_int_equal(cp_catalog_windows_prepare(fx->cat, T0), CP_OK);
    assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);

    /* every call, refs unique across all three sets */
    fx->calls = calloc(NALL, sizeof *fx->calls);
    uint64_t rng = 14014;
    for (size_t i = 0; i < NBASE - NTIE; i++) make_call(fx, i, 0, T0, SPAN_MS, &rng);
    make_ties(fx, NBASE - NTIE);
    for (size_t i = 0; i < NBASE - NTIE; i++) { /* no clash with a tie call */
        cp_call_ref r;
        cp_call_ref_of(&fx->calls[i].c, &r);
        for (size_t j = NBASE - NTIE; j < NBASE; j++) {
            cp_call_ref o;
            cp_call_ref_of(&fx->calls[j].c, &o);
            assert_true(ref_cmp(&r, &o) != 0);
        }
    }
    for (size_t i = NBASE; i < NBASE + NLATE; i++) make_call(fx, i, NBASE, T0, MIXED_UNTIL - T0, &rng);
    for (size_t i = NBASE + NLATE; i < NALL; i++) make_call(fx, i, NBASE + NLATE, T_OLD, HOUR_MS, &rng);
    fx->by_ref = calloc(NALL, sizeof *fx->by_ref);
    for (size_t i = 0; i < NALL; i++) fx->by_ref[i] = (uint32_t)i;
    g_fx = fx;
    qsort(fx->by_ref, NALL, sizeof *fx->by_ref, by_ref_cmp);

    /* phase 1 under the default idle list, phase 2 under the extended one */
    put_calls(fx, 0, NBASE, phase1);
    cp_catalog_set_idle(fx->cat, g_idle_ext, g_nidle_ext);
    put_calls(fx, 0, NBASE, phase2);
    cp_catalog_set_idle(fx->cat, cp_system_idle_default, cp_system_idle_default_count);
    fx->n = NBASE;
    printf("[%s] %d calls generated and stored in %.1f s\n", test_pair_name(), NBASE, secs_since(&t0));
    fx->lo = T0 - 10 * MIN_MS;
    fx->hi = T0 + SPAN_MS + 10 * MIN_MS;

    static const char *const sq[] = {"place", "-cancel", "$user=u-1", "acme pod-9"};
    for (size_t i = 0; i < CP_ARRAY_LEN(sq); i++)
        if (cp_search_parse(sq[i], strlen(sq[i]), &fx->searches[i], err, sizeof err) != CP_OK)
            fail_msg("search %s: %s", sq[i], err);
    open_store(fx);
    fx->rd = open_tiered(fx);
    *state = fx;
    return 0;
}

static int on_key(void *ud, const cp_ostore_item *it)
{
    cp_buf *b = ud;
    cp_buf_puts(b, it->key);
    cp_buf_putc(b, 0);
    return 0;
}

typedef struct deleter {
    cp_ostore *store;
    const cp_buf *keys;
    size_t part, parts;
} deleter;

static void *delete_main(void *ud)
{
    deleter *d = ud;
    char err[256];
    size_t k = 0;
    for (size_t o = 0; o < d->keys->len; o += strlen((const char *)d->keys->data + o) + 1, k++)
        if (k % d->parts == d->part) d->store->ops->del(d->store, (const char *)d->keys->data + o, err, sizeof err);
    return NULL;
}

static int group_teardown(void **state)
{
    fixture *fx = *state;
    if (!fx) return 0;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cp_reader_close(fx->rd);
    cp_catalog_close(fx->cat);
    if (test_pair_pg() && fx->store) { /* the run's objects (a directory store goes with the directory) */
        cp_buf keys;
        cp_buf_init(&keys);
        char err[256];
        if (fx->store->ops->list(fx->store, "", on_key, &keys, err, sizeof err) == CP_OK) {
            pthread_t th[8];
            deleter d[8];
            for (size_t i = 0; i < 8; i++) {
                d[i] = (deleter){fx->store, &keys, i, 8};
                assert_int_equal(pthread_create(&th[i], NULL, delete_main, &d[i]), 0);
            }
            for (size_t i = 0; i < 8; i++) pthread_join(th[i], NULL);
        }
        cp_buf_free(&keys);
    }
    cp_ostore_close(fx->store);
    if (test_pair_pg()) { /* the run's database */
        const char *slash = strrchr(fx->spec, '/');
        char db[128];
        snprintf(db, sizeof db, "%.*s", (int)strcspn(slash + 1, "?"), slash + 1);
        PGconn *c = PQconnectdb(getenv("CP_TEST_PG_URL"));
        if (PQstatus(c) == CONNECTION_OK) {
            char sql[256];
            snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s WITH (FORCE)", db);
            PQclear(PQexec(c, sql));
        }
        PQfinish(c);
    }
    for (size_t i = 0; i < CP_ARRAY_LEN(fx->searches); i++) cp_search_free(fx->searches[i]);
    for (size_t i = 0; i < fx->nold_keys; i++) free(fx->old_keys[i]);
    remove_tree(fx->dir);
    printf("[%s] cleaned up in %.1f s\n", test_pair_name(), secs_since(&t0));
    free(fx->dir);
    free(fx->spec);
    free(fx->url);
    free(fx->cache);
    free(fx->tmp);
    free(fx->calls);
    free(fx->by_ref);
    free(fx);
    return 0;
}

/* ---- the cases ---------------------------------------------------------------------------- */

/* What the match predicate holds (as http_query.c match_call): a pod-name list, system
 * calls left out under an idle list, a search. */
typedef struct qmatch {
    const cp_name *pods;
    size_t npods;
    int hide_system;
    const char *const *idle;
    size_t nidle;
    const cp_search *search;
} qmatch;

typedef struct qcase {
    cp_call_filter f;
    cp_rollup_sel sel;
    qmatch m;
    cp_name pods[4];
    unsigned columns;
    char desc[600];
} qcase;

static int name_cmp(const void *x, const void *y)
{
    const cp_name *a = x, *b = y;
    size_t n = a->len < b->len ? a->len : b->len;
    int c = n ? memcmp(a->p, b->p, n) : 0;
    return c ? c : (a->len > b->len) - (a->len < b->len);
}

static int match_fn(void *ud, const cp_call_view *v)
{
    const qmatch *m = ud;
    if (m->npods) {
        cp_name k = {v->pod ? v->pod : "", v->pod ? v->pod_len : 0};
        if (!bsearch(&k, m->pods, m->npods, sizeof *m->pods, name_cmp)) return 0;
    }
    if (m->hide_system && cp_system_call(v, m->idle, m->nidle)) return 0;
    return !m->search || cp_search_match(m->search, v);
}

typedef struct dfilter {
    int64_t min, max;
    const char *name;
} dfilter;

static const dfilter dfilters[] = {
    {0, INT64_MAX, "any"},        {0, INT64_MAX, "any"},          {500, INT64_MAX, ">=500"},
    {1000, INT64_MAX, ">=1000"},  {0, 99, "<100"},                {90000, INT64_MAX, ">=90s"},
    {10, 4999, "10..4999"},       {5000, 29999, "5s..<30s"},      {0, 0, "<=0"},
    {250, INT64_MAX, ">=250"},    {0, 1500, "<=1500"},            {100, 2000, "100..2000"},
    {777, 777, "=777"},           {500, 100, "empty (500..100)"}, {1, 9, "1..9"},
    {3000, 3000, "=3000"},        {2999, 30000, "2999..30000"},   {251, 89999, "251..89999"},
};

static const char *idle_name(const char *const *idle)
{
    return idle == cp_system_idle_default ? "default" : idle == g_idle_ext ? "extended" : "third";
}

/* Finishes a case: the match predicate and its spelled-out selection, the description. */
static void case_finish(qcase *q, const cp_search *search, const char *search_text)
{
    cp_call_filter *f = &q->f;
    q->m.search = search;
    if (q->m.npods || q->m.hide_system || q->m.search) {
        f->match = match_fn;
        f->match_ud = &q->m;
        q->sel.pods = q->m.npods ? q->m.pods : NULL;
        q->sel.npods = q->m.npods;
        q->sel.hide_system = q->m.hide_system;
        q->sel.idle_fp = q->m.hide_system ? cp_rollup_idle_fp(q->m.idle, q->m.nidle) : 0;
        q->sel.opaque = q->m.search != NULL;
        f->sel = &q->sel;
    }
    char pl[200] = "";
    size_t o = 0;
    for (size_t i = 0; i < q->m.npods; i++)
        o += (size_t)snprintf(pl + o, sizeof pl - o, "%s'%.*s'", i ? "," : "", (int)q->pods[i].len, q->pods[i].p);
    const char *dn = "?";
    for (size_t i = 0; i < CP_ARRAY_LEN(dfilters); i++)
        if (dfilters[i].min == f->min_duration_ms && dfilters[i].max == f->max_duration_ms) dn = dfilters[i].name;
    snprintf(q->desc, sizeof q->desc,
             "window [T0%+lld ms, T0%+lld ms) = [%lld, %lld) (%lld ms), columns %u, namespace %s%s%s, service %s%s%s,"
             " pod %s%s%s, pods [%s], duration %s (min %lld, max %lld), errors_only %d, hide_system %s, q %s%s%s,"
             " method %s",
             (long long)(f->from_ms - T0), (long long)(f->to_ms - T0), (long long)f->from_ms, (long long)f->to_ms,
             (long long)(f->to_ms - f->from_ms), q->columns, f->ns ? "'" : "", f->ns ? f->ns : "-", f->ns ? "'" : "",
             f->service ? "'" : "", f->service ? f->service : "-", f->service ? "'" : "", f->pod ? "'" : "",
             f->pod ? f->pod : "-", f->pod ? "'" : "", pl, dn, (long long)f->min_duration_ms,
             (long long)f->max_duration_ms, f->errors_only, q->m.hide_system ? idle_name(q->m.idle) : "no",
             search_text ? "'" : "", search_text ? search_text : "-", search_text ? "'" : "",
             f->method_substr ? f->method_substr : "-");
}

static void case_base(qcase *q, int64_t from, int64_t to, unsigned columns)
{
    memset(q, 0, sizeof *q);
    q->f.from_ms = from;
    q->f.to_ms = to;
    q->f.min_duration_ms = 0;
    q->f.max_duration_ms = INT64_MAX;
    q->columns = columns;
}

static void case_hide(qcase *q, const char *const *idle, size_t n)
{
    q->m.hide_system = 1;
    q->m.idle = idle;
    q->m.nidle = n;
}

static void gen_case(const fixture *fx, uint64_t *rng, qcase *q)
{
    int64_t lo = fx->lo, span = fx->hi - fx->lo, from, to;
    uint64_t kind = rnd(rng, 10);
    switch (kind) {
    case 0: /* everything */
        from = lo, to = fx->hi;
        break;
    case 1: /* whole cells */
        from = lo + (int64_t)rnd(rng, (uint64_t)(span / CELL)) * CELL;
        to = from + (int64_t)(1 + rnd(rng, (uint64_t)(span / CELL))) * CELL;
        break;
    case 2: /* whole windows */
        from = lo + (int64_t)rnd(rng, (uint64_t)(span / WIN_MS)) * WIN_MS;
        to = from + (int64_t)(1 + rnd(rng, 24)) * WIN_MS;
        break;
    case 3: /* inside a cell or across one edge */
        from = lo + (int64_t)rnd(rng, (uint64_t)span);
        to = from + 1 + (int64_t)rnd(rng, CELL - 1);
        break;
    case 4: /* under a minute */
        from = lo + (int64_t)rnd(rng, (uint64_t)span);
        to = from + 1 + (int64_t)rnd(rng, MIN_MS);
        break;
    case 5: /* from inside a window to a cell edge */
        from = lo + (int64_t)rnd(rng, (uint64_t)span);
        to = floor_div(from + (int64_t)rnd(rng, (uint64_t)span / 2), CELL) * CELL + CELL;
        break;
    case 6: /* columns of two or more cells over a day or more; 5001 of them (the most) */
        from = lo - (int64_t)rnd(rng, (uint64_t)(20 * HOUR_MS));
        to = rnd(rng, 2) ? from + 5000 * CELL : fx->hi + (int64_t)rnd(rng, (uint64_t)(20 * HOUR_MS));
        break;
    default: /* anywhere, long or short */
        from = lo + (int64_t)rnd(rng, (uint64_t)span);
        to = from + 1 + (int64_t)rnd(rng, (uint64_t)(fx->hi - from + 10 * MIN_MS));
        break;
    }
    static const unsigned cols[] = {1, 2, 7, 60, 100, 500, 1000, 5000};
    unsigned columns = kind == 6 ? (rnd(rng, 2) ? CP_STATS_MAX_COLUMNS : 1 + (unsigned)rnd(rng, CP_STATS_MAX_COLUMNS))
                       : rnd(rng, 9) == 0 ? 1 + (unsigned)rnd(rng, CP_STATS_MAX_COLUMNS)
                                          : cols[rnd(rng, CP_ARRAY_LEN(cols))];
    case_base(q, from, to, columns);
    cp_call_filter *f = &q->f;
    switch (rnd(rng, 10)) {
    case 0: f->ns = sel_ns[rnd(rng, CP_ARRAY_LEN(sel_ns))]; break;
    case 1: f->service = sel_services[rnd(rng, CP_ARRAY_LEN(sel_services))]; break;
    case 2: f->pod = sel_pods[rnd(rng, CP_ARRAY_LEN(sel_pods))]; break;
    case 3: /* the same pod name in another namespace */
        f->ns = rnd(rng, 2) ? "ns-b" : "ns-a";
        f->pod = "pod-1";
        break;
    case 4:
    case 5: { /* a pods list (the UI's multi-selection), sometimes within a namespace */
        size_t k = 1 + rnd(rng, 3);
        for (size_t j = 0; j < k; j++) {
            const char *p = sel_pods[rnd(rng, CP_ARRAY_LEN(sel_pods))];
            int dup = 0;
            for (size_t x = 0; x < q->m.npods; x++) dup |= !strcmp(q->pods[x].p, p);
            if (!dup) q->pods[q->m.npods++] = (cp_name){p, strlen(p)};
        }
        qsort(q->pods, q->m.npods, sizeof *q->pods, name_cmp);
        q->m.pods = q->pods;
        if (rnd(rng, 3) == 0) f->ns = sel_ns[rnd(rng, 2)];
        if (rnd(rng, 4) == 0) f->service = "svc-1";
        break;
    }
    default: break;
    }
    const dfilter *d = &dfilters[rnd(rng, CP_ARRAY_LEN(dfilters))];
    f->min_duration_ms = d->min;
    f->max_duration_ms = d->max;
    f->errors_only = rnd(rng, 5) == 0;
    if (rnd(rng, 3) == 0) {
        uint64_t k = rnd(rng, 10);
        if (k < 6) case_hide(q, cp_system_idle_default, cp_system_idle_default_count);
        else if (k < 9) case_hide(q, g_idle_ext, g_nidle_ext);
        else case_hide(q, g_idle_third, CP_ARRAY_LEN(g_idle_third));
    }
    static const char *const sq[] = {"place", "-cancel", "$user=u-1", "acme pod-9"};
    int si = rnd(rng, 10) == 0 ? (int)rnd(rng, CP_ARRAY_LEN(sq)) : -1;
    /* lowercase: a folded needle; "orderservice.c" holds one method where its prefix
     * "orderservice." holds two (a needle cut short would count both) */
    static const char *const needles[] = {"orderservice", "idleloop", "orderservice.c"};
    if (rnd(rng, 8) == 0) f->method_substr = needles[rnd(rng, CP_ARRAY_LEN(needles))];
    case_finish(q, si >= 0 ? fx->searches[si] : NULL, si >= 0 ? sq[si] : NULL);
}

/* ---- checking ------------------------------------------------------------------------------ */

static int str_is(const char *s, size_t n, const char *want) { return !want || (strlen(want) == n && !memcmp(s, want, n)); }

static int ci_has(const char *h, size_t hn, const char *n)
{
    size_t nn = strlen(n);
    for (size_t i = 0; i + nn <= hn; i++) {
        size_t k = 0;
        while (k < nn) {
            char x = h[i + k], y = n[k];
            if (x >= 'A' && x <= 'Z') x = (char)(x + 32);
            if (y >= 'A' && y <= 'Z') y = (char)(y + 32);
            if (x != y) break;
            k++;
        }
        if (k == nn) return 1;
    }
    return 0;
}

/* The filter in plain C. */
static int c_selects(const qcase *q, const cp_call *c)
{
    const cp_call_filter *f = &q->f;
    if (c->ts_ms < f->from_ms || c->ts_ms >= f->to_ms) return 0;
    if (!str_is(c->ns, c->ns_len, f->ns) || !str_is(c->service, c->service_len, f->service) ||
        !str_is(c->pod, c->pod_len, f->pod))
        return 0;
    if (f->min_duration_ms > 0 && c->duration_ms < f->min_duration_ms) return 0;
    if (f->max_duration_ms < INT64_MAX && c->duration_ms > f->max_duration_ms) return 0;
    if (f->errors_only && !c->error) return 0;
    if (f->method_substr && !ci_has(c->method, c->method_len, f->method_substr)) return 0;
    if (q->m.npods) {
        int any = 0;
        for (size_t i = 0; i < q->m.npods; i++) any |= str_is(c->pod, c->pod_len, q->m.pods[i].p);
        if (!any) return 0;
    }
    cp_call_view v = {c->method, c->method_len, c->pod, c->pod_len, c->params_json, c->params_json_len};
    if (q->m.hide_system && cp_system_call(&v, q->m.idle, q->m.nidle)) return 0;
    if (q->m.search && !cp_search_match(q->m.search, &v)) return 0;
    return 1;
}

/* The slower call first: duration desc, then time, restart, trace position, pod hash asc. */
static int slower_cmp(const tcall *a, const tcall *b)
{
    int c;
    if ((c = cmp64(b->c.duration_ms, a->c.duration_ms))) return c;
    if ((c = cmp64(a->c.ts_ms, b->c.ts_ms))) return c;
    if ((c = cmp64(a->c.restart_ms, b->c.restart_ms))) return c;
    if ((c = cmp64(a->c.trace_file_index, b->c.trace_file_index))) return c;
    if ((c = cmp64(a->c.buffer_offset, b->c.buffer_offset))) return c;
    if ((c = cmp64(a->c.record_index, b->c.record_index))) return c;
    return (a->pod_hash > b->pod_hash) - (a->pod_hash < b->pod_hash);
}

typedef struct colrow {
    uint32_t i;
    uint32_t col;
} colrow;

static int colrow_cmp(const void *x, const void *y)
{
    const colrow *a = x, *b = y;
    if (a->col != b->col) return a->col < b->col ? -1 : 1;
    return slower_cmp(&g_fx->calls[a->i], &g_fx->calls[b->i]);
}

static int point_is_call(const cp_stats_point *p, const tcall *t)
{
    const cp_call *c = &t->c;
    return p->p.ts_ms == c->ts_ms && p->p.restart_ms == c->restart_ms && p->p.duration_ms == c->duration_ms &&
           p->p.calls == c->calls && p->p.trace_file_index == c->trace_file_index &&
           p->p.buffer_offset == c->buffer_offset && p->p.record_index == c->record_index && p->pod_hash == t->pod_hash;
}

static int point_eq(const cp_stats_point *a, const cp_stats_point *b)
{
    return a->p.ts_ms == b->p.ts_ms && a->p.restart_ms == b->p.restart_ms && a->p.duration_ms == b->p.duration_ms &&
           a->p.calls == b->p.calls && a->p.trace_file_index == b->p.trace_file_index &&
           a->p.buffer_offset == b->p.buffer_offset && a->p.record_index == b->p.record_index &&
           a->pod_hash == b->pod_hash;
}

static void point_desc(const fixture *fx, const cp_stats_point *p, cp_buf *b)
{
    if (!p) {
        cp_buf_puts(b, "(no point)");
        return;
    }
    cp_call_ref r = {p->p.ts_ms, p->p.restart_ms, p->p.trace_file_index, p->p.buffer_offset, p->p.record_index,
                     p->pod_hash};
    long i = find_call(fx, &r);
    cp_buf_printf(b, "{duration %d ms, ts %lld (T0%+lld ms), restart %lld, trace %d/%d/%d, pod_hash %016llx, calls %d",
                  p->p.duration_ms, (long long)p->p.ts_ms, (long long)(p->p.ts_ms - T0), (long long)p->p.restart_ms,
                  p->p.trace_file_index, p->p.buffer_offset, p->p.record_index, (unsigned long long)p->pod_hash,
                  p->p.calls);
    if (i >= 0) {
        const cp_call *c = &fx->calls[i].c;
        cp_buf_printf(b, " = call #%ld %.*s/%.*s (service %.*s), error %d, method '%.*s', params %.*s%s}", i,
                      (int)c->ns_len, c->ns, (int)c->pod_len, c->pod, (int)c->service_len, c->service, c->error,
                      (int)c->method_len, c->method, (int)c->params_json_len, c->params_json,
                      fx->calls[i].twin ? ", a twin" : "");
    } else {
        cp_buf_puts(b, " = no call of the data set}");
    }
}

static void info_desc(const cp_stats_info *i, cp_buf *b)
{
    cp_buf_printf(b, "{scanned %llu, scanned_calls %llu, rollup_entries %llu, windows %zu, cold_files %zu,"
                     " rollup_files %zu, partial %d}",
                  (unsigned long long)i->scanned, (unsigned long long)i->scanned_calls,
                  (unsigned long long)i->rollup_entries, i->windows, i->cold_files, i->rollup_files, i->partial);
}

/* Fails with the case and what differs. */
static void case_fail(const fixture *fx, const char *reader, size_t caseno, const qcase *q, const cp_stats_info *gi,
                      const cp_stats_info *ri, const char *what)
{
    cp_buf b;
    cp_buf_init(&b);
    cp_buf_printf(&b, "[%s] state '%s', reader %s, case %zu: %s\n  case: %s\n", test_pair_name(), fx->state, reader,
                  caseno, what, q->desc);
    if (gi) cp_buf_puts(&b, "  rollup run: "), info_desc(gi, &b), cp_buf_putc(&b, '\n');
    if (ri) cp_buf_puts(&b, "  full scan:  "), info_desc(ri, &b), cp_buf_putc(&b, '\n');
    cp_stats_plan p;
    cp_stats_plan_of(&q->f, &p);
    cp_buf_printf(&b, "  plan: rollups %d, cells [T0%+lld, T0%+lld), full classes 0x%x, cut classes 0x%x", p.rollups,
                  (long long)(p.a - T0), (long long)(p.b - T0), p.full, p.partial);
    cp_buf_putc(&b, 0);
    fail_msg("%s", (const char *)b.data);
}

/* The scan (ref) against plain C: the column rule, the totals, every kept point. */
static void check_plain(const fixture *fx, const char *reader, size_t caseno, const qcase *q, const cp_stats *ref,
                        const cp_stats_info *ri)
{
    int64_t from = q->f.from_ms, to = q->f.to_ms;
    uint64_t span = (uint64_t)(to - from), per = (span + q->columns - 1) / q->columns;
    uint64_t cells = (per + (uint64_t)CELL - 1) / (uint64_t)CELL;
    if (cells < 1) cells = 1;
    int64_t colms = (int64_t)cells * CELL, col0 = floor_div(from, colms) * colms;
    size_t ncols = (size_t)((to - col0 + colms - 1) / colms);
    size_t per_col = CP_STATS_MAX_POINTS / ncols;
    if (per_col > CP_STATS_PER_COLUMN) per_col = CP_STATS_PER_COLUMN;
    if (per_col < 1) per_col = 1;
    char what[512];
    if (ref->column_ms != colms || ref->col0_ms != col0 || ref->ncols != ncols || ref->per_col != per_col) {
        snprintf(what, sizeof what,
                 "columns: %zu of %lld ms from %lld, %zu points each; plain C: %zu of %lld ms from %lld, %zu each",
                 ref->ncols, (long long)ref->column_ms, (long long)ref->col0_ms, ref->per_col, ncols, (long long)colms,
                 (long long)col0, per_col);
        case_fail(fx, reader, caseno, q, NULL, ri, what);
    }
    colrow *v = malloc((fx->n + 1) * sizeof *v);
    size_t n = 0;
    uint64_t total = 0;
    int64_t sd = 0, ss = 0, sq = 0, st = 0;
    for (size_t i = 0; i < fx->n; i++) {
        const cp_call *c = &fx->calls[i].c;
        if (!c_selects(q, c)) continue;
        total++;
        sd += c->duration_ms, ss += c->suspend_ms, sq += c->queue_wait_ms, st += c->transactions;
        v[n++] = (colrow){(uint32_t)i, (uint32_t)((c->ts_ms - col0) / colms)};
    }
    if (ref->total != total || ref->sum_duration != sd || ref->sum_suspend != ss || ref->sum_queue != sq ||
        ref->sum_transactions != st) {
        snprintf(what, sizeof what,
                 "the full scan's totals differ from plain C: total %llu / %llu, duration %lld / %lld, suspend %lld /"
                 " %lld, queue %lld / %lld, transactions %lld / %lld",
                 (unsigned long long)ref->total, (unsigned long long)total, (long long)ref->sum_duration, (long long)sd,
                 (long long)ref->sum_suspend, (long long)ss, (long long)ref->sum_queue, (long long)sq,
                 (long long)ref->sum_transactions, (long long)st);
        free(v);
        case_fail(fx, reader, caseno, q, NULL, ri, what);
    }
    qsort(v, n, sizeof *v, colrow_cmp);
    size_t k = 0;
    for (size_t col = 0; col < ncols; col++) {
        size_t k0 = k;
        while (k < n && v[k].col == col) k++;
        size_t want = k - k0 < per_col ? k - k0 : per_col;
        int bad = ref->used[col] != want;
        size_t j = 0;
        for (; !bad && j < want; j++) bad = !point_is_call(&ref->pts[col * per_col + j], &fx->calls[v[k0 + j].i]);
        if (!bad) continue;
        cp_buf b;
        cp_buf_init(&b);
        cp_buf_printf(&b, "the full scan's column %zu [T0%+lld, T0%+lld) differs from plain C at point %zu (%u kept,"
                          " plain C %zu):\n    scan    ",
                      col, (long long)(col0 + (int64_t)col * colms - T0), (long long)(col0 + (int64_t)(col + 1) * colms - T0),
                      j ? j - 1 : 0, ref->used[col], want);
        size_t at = j ? j - 1 : 0;
        point_desc(fx, at < ref->used[col] ? &ref->pts[col * per_col + at] : NULL, &b);
        cp_buf_puts(&b, "\n    plain C ");
        if (at < want) {
            const tcall *t = &fx->calls[v[k0 + at].i];
            cp_stats_point p = {{t->c.ts_ms, t->c.restart_ms, t->c.duration_ms, t->c.calls, t->c.trace_file_index,
                                 t->c.buffer_offset, t->c.record_index},
                                t->pod_hash};
            point_desc(fx, &p, &b);
        } else {
            point_desc(fx, NULL, &b);
        }
        cp_buf_putc(&b, 0);
        snprintf(what, sizeof what, "%s", (const char *)b.data);
        cp_buf_free(&b);
        free(v);
        case_fail(fx, reader, caseno, q, NULL, ri, what);
    }
    free(v);
}

/* The rollup answer against the scan. */
static void check_equal(const fixture *fx, const char *reader, size_t caseno, const qcase *q, const cp_stats *got,
                        const cp_stats_info *gi, const cp_stats *ref, const cp_stats_info *ri)
{
    char what[4096];
    if (got->ncols != ref->ncols || got->column_ms != ref->column_ms || got->col0_ms != ref->col0_ms) {
        snprintf(what, sizeof what, "columns differ: %zu of %lld ms from %lld, the scan's %zu of %lld ms from %lld",
                 got->ncols, (long long)got->column_ms, (long long)got->col0_ms, ref->ncols, (long long)ref->column_ms,
                 (long long)ref->col0_ms);
        case_fail(fx, reader, caseno, q, gi, ri, what);
    }
    if (got->total != ref->total || got->sum_duration != ref->sum_duration || got->sum_suspend != ref->sum_suspend ||
        got->sum_queue != ref->sum_queue || got->sum_transactions != ref->sum_transactions) {
        snprintf(what, sizeof what,
                 "totals differ (rollups / scan): total %llu / %llu (%+lld), duration %lld / %lld, suspend %lld / %lld,"
                 " queue %lld / %lld, transactions %lld / %lld",
                 (unsigned long long)got->total, (unsigned long long)ref->total,
                 (long long)got->total - (long long)ref->total, (long long)got->sum_duration,
                 (long long)ref->sum_duration, (long long)got->sum_suspend, (long long)ref->sum_suspend,
                 (long long)got->sum_queue, (long long)ref->sum_queue, (long long)got->sum_transactions,
                 (long long)ref->sum_transactions);
        case_fail(fx, reader, caseno, q, gi, ri, what);
    }
    for (size_t col = 0; col < got->ncols; col++) {
        const cp_stats_point *g = got->used[col] ? &got->pts[col * got->per_col] : NULL;
        const cp_stats_point *r = ref->used[col] ? &ref->pts[col * ref->per_col] : NULL;
        if (!g && !r) continue;
        if (g && r && point_eq(g, r)) continue;
        cp_buf b;
        cp_buf_init(&b);
        cp_buf_printf(&b, "column %zu [T0%+lld, T0%+lld) has another slowest point:\n    rollups ", col,
                      (long long)(got->col0_ms + (int64_t)col * got->column_ms - T0),
                      (long long)(got->col0_ms + (int64_t)(col + 1) * got->column_ms - T0));
        point_desc(fx, g, &b);
        cp_buf_puts(&b, "\n    scan    ");
        point_desc(fx, r, &b);
        cp_buf_putc(&b, 0);
        snprintf(what, sizeof what, "%s", (const char *)b.data);
        cp_buf_free(&b);
        case_fail(fx, reader, caseno, q, gi, ri, what);
    }
}

typedef struct agg {
    size_t cases, answerable;
    uint64_t total, scanned_calls, entries; /* of the answerable cases of two cells or more */
} agg;

/* One case on one reader: the scan, checked against plain C, and the rollup run against
 * the scan. */
static void run_case(const fixture *fx, cp_reader *rd, const char *reader, size_t caseno, const qcase *q, agg *a,
                     cp_stats_info *gi_out, uint64_t *total_out)
{
    cp_stats ref, got;
    cp_stats_info ri, gi;
    memset(&ri, 0, sizeof ri);
    cp_stats_plan p0;
    memset(&p0, 0, sizeof p0);
    assert_int_equal(cp_stats_init(&ref, q->f.from_ms, q->f.to_ms, q->columns), CP_OK);
    int st = rd->ops->stats(rd, &q->f, &p0, &ref, &ri);
    if (st != CP_OK) {
        char what[700];
        snprintf(what, sizeof what, "the full scan failed: %d %s", st, cp_reader_errmsg(rd));
        case_fail(fx, reader, caseno, q, NULL, &ri, what);
    }
    if (ri.rollup_entries || ri.partial) case_fail(fx, reader, caseno, q, NULL, &ri, "the full scan used rollups");
    check_plain(fx, reader, caseno, q, &ref, &ri);
    st = cp_stats_run(rd, &q->f, q->columns, &got, &gi);
    if (st != CP_OK) {
        char what[700];
        snprintf(what, sizeof what, "cp_stats_run failed: %d %s", st, cp_reader_errmsg(rd));
        case_fail(fx, reader, caseno, q, &gi, &ri, what);
    }
    check_equal(fx, reader, caseno, q, &got, &gi, &ref, &ri);
    if (gi.partial) case_fail(fx, reader, caseno, q, &gi, &ri, "partial");
    /* the work: a search or a method substring leaves the rollups out; a query's idle list
     * no entry was made with uses none of them */
    cp_stats_plan p;
    cp_stats_plan_of(&q->f, &p);
    if ((q->sel.opaque || q->f.method_substr) && (p.rollups || gi.rollup_entries))
        case_fail(fx, reader, caseno, q, &gi, &ri, "an opaque filter was answered from rollups");
    if (q->m.hide_system && q->m.idle == g_idle_third && gi.rollup_entries)
        case_fail(fx, reader, caseno, q, &gi, &ri, "entries of another idle list were used for hide_system");
    if (gi.scanned_calls > ri.scanned_calls)
        case_fail(fx, reader, caseno, q, &gi, &ri, "the rollup run counted more calls by scanning than the full scan");
    if (getenv("CP_STATS_VERBOSE")) {
        cp_buf b;
        cp_buf_init(&b);
        cp_buf_printf(&b, "  case %zu: %s\n    total %llu, plan rollups %d full 0x%x cut 0x%x; rollup run ", caseno, q->desc,
                      (unsigned long long)got.total, p.rollups, p.full, p.partial);
        info_desc(&gi, &b);
        cp_buf_puts(&b, "\n    full scan ");
        info_desc(&ri, &b);
        cp_buf_putc(&b, 0);
        printf("%s\n", (const char *)b.data);
        cp_buf_free(&b);
    }
    if (a) {
        a->cases++;
        /* (hide_system may meet entries of another idle list, cut classes are scanned) */
        if (p.rollups && p.b - p.a >= 2 * CELL && !p.partial && !q->m.hide_system) {
            a->answerable++;
            a->total += got.total;
            a->scanned_calls += gi.scanned_calls;
            a->entries += gi.rollup_entries;
        }
    }
    if (gi_out) *gi_out = gi;
    if (total_out) *total_out = got.total;
    cp_stats_free(&ref);
    cp_stats_free(&got);
}

/* ncases random cases on rd. */
static void run_random(const fixture *fx, cp_reader *rd, const char *reader, uint64_t seed, size_t ncases)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    uint64_t rng = seed;
    agg a;
    memset(&a, 0, sizeof a);
    qcase *q = malloc(sizeof *q);
    for (size_t i = 0; i < ncases; i++) {
        gen_case(fx, &rng, q);
        run_case(fx, rd, reader, i, q, &a, NULL, NULL);
    }
    free(q);
    printf("[%s] %s, %s: %zu random cases (seed %llu) equal in %.1f s; %zu answerable (2+ cells, no cut class, no"
           " hide_system): %llu calls,"
           " %llu counted by scans, %llu rollup entries\n",
           test_pair_name(), fx->state, reader, a.cases, (unsigned long long)seed, secs_since(&t0), a.answerable,
           (unsigned long long)a.total, (unsigned long long)a.scanned_calls, (unsigned long long)a.entries);
    /* rollups do most of the work where they can */
    if (ncases < 60) return;
    assert_true(a.answerable > ncases / 8);
    assert_true(a.entries > 0);
    if (a.scanned_calls * 2 > a.total)
        fail_msg("[%s] %s, %s: scans counted %llu of %llu calls in answerable cases", test_pair_name(), fx->state,
                 reader, (unsigned long long)a.scanned_calls, (unsigned long long)a.total);
}

/* calls in [from, to) (of namespace ns, NULL = any; of calls[first, last)) */
static size_t count_calls(const fixture *fx, int64_t from, int64_t to, const char *ns, size_t first, size_t last)
{
    size_t n = 0;
    for (size_t i = first; i < last && i < fx->n; i++) {
        const cp_call *c = &fx->calls[i].c;
        n += c->ts_ms >= from && c->ts_ms < to && str_is(c->ns, c->ns_len, ns);
    }
    return n;
}

/* An aligned window, no filter: the scans count exactly the calls of the sources without
 * usable rollups (between lo and hi of them), and rollup entries are used (entries = 1) or
 * not (0). */
static void check_work(const fixture *fx, cp_reader *rd, const char *reader, int64_t from, int64_t to, size_t lo,
                       size_t hi, int entries)
{
    qcase q;
    case_base(&q, from, to, 1000);
    case_finish(&q, NULL, NULL);
    cp_stats_info gi;
    run_case(fx, rd, reader, 0, &q, NULL, &gi, NULL);
    printf("[%s] %s, %s: [T0%+lld, T0%+lld) no filter: %llu scanned, %llu calls by scans (want %zu..%zu), %llu"
           " entries, %zu windows, %zu cold files, %zu rollup files\n",
           test_pair_name(), fx->state, reader, (long long)(from - T0), (long long)(to - T0),
           (unsigned long long)gi.scanned, (unsigned long long)gi.scanned_calls, lo, hi,
           (unsigned long long)gi.rollup_entries, gi.windows, gi.cold_files, gi.rollup_files);
    if (gi.scanned_calls < lo || gi.scanned_calls > hi || !gi.rollup_entries != !entries) {
        char what[200];
        snprintf(what, sizeof what, "scans counted %llu calls, want %zu..%zu (and %s rollup entries)",
                 (unsigned long long)gi.scanned_calls, lo, hi, entries ? "some" : "no");
        case_fail(fx, reader, 0, &q, &gi, NULL, what);
    }
}

/* hide_system under each idle list over [from, to): exact, and entries used only when
 * some exist for that list (want_entries: 1 some, 0 none, -1 either). */
static void check_idle(const fixture *fx, cp_reader *rd, const char *reader, int64_t from, int64_t to,
                       int want_default, int want_ext, int want_third)
{
    const char *const *lists[3] = {cp_system_idle_default, g_idle_ext, g_idle_third};
    size_t nl[3] = {cp_system_idle_default_count, g_nidle_ext, CP_ARRAY_LEN(g_idle_third)};
    int want[3] = {want_default, want_ext, want_third};
    for (int k = 0; k < 3; k++) {
        for (int dur = 0; dur < 2; dur++) {
            qcase q;
            case_base(&q, from, to, 100);
            if (dur) q.f.min_duration_ms = 500;
            case_hide(&q, lists[k], nl[k]);
            case_finish(&q, NULL, NULL);
            cp_stats_info gi;
            run_case(fx, rd, reader, (size_t)(k * 2 + dur), &q, NULL, &gi, NULL);
            if ((want[k] == 1 && gi.rollup_entries == 0) || (want[k] == 0 && gi.rollup_entries != 0)) {
                char what[200];
                snprintf(what, sizeof what, "hide_system with the %s idle list used %llu entries, want %s", idle_name(lists[k]),
                         (unsigned long long)gi.rollup_entries, want[k] ? "some" : "none");
                case_fail(fx, reader, (size_t)k, &q, &gi, NULL, what);
            }
        }
    }
}

/* The tie groups' cells: exact, and whole cells from the entries alone. */
static void check_ties(const fixture *fx, cp_reader *rd, const char *reader)
{
    for (int g = 0; g < 2; g++) {
        int64_t cell = g ? TIE_CELL_2 : TIE_CELL_1;
        for (int k = 0; k < 9; k++) {
            qcase q;
            case_base(&q, cell, cell + CELL, 1);
            switch (k) {
            case 0: break;
            case 1: q.f.ns = "ns-a", q.f.pod = "pod-1"; break;
            case 2:
                q.pods[0] = (cp_name){"pod-1", 5};
                q.m.pods = q.pods, q.m.npods = 1;
                break;
            case 3: q.f.service = "svc-1", q.f.min_duration_ms = 3000, q.f.max_duration_ms = 4999; break;
            case 4: q.f.errors_only = 1; break;
            case 5: q.f.min_duration_ms = TIE_DURATION, q.f.max_duration_ms = TIE_DURATION; break; /* a cut class */
            case 6: q.f.from_ms = cell + 3999, q.f.to_ms = cell + 9001; break;                      /* inside the cell */
            case 7: q.f.from_ms = cell - CELL, q.f.to_ms = cell + 2 * CELL, q.columns = 3; break;
            case 8: case_hide(&q, cp_system_idle_default, cp_system_idle_default_count); break;
            }
            case_finish(&q, NULL, NULL);
            cp_stats_info gi;
            uint64_t total;
            run_case(fx, rd, reader, (size_t)(g * 9 + k), &q, NULL, &gi, &total);
            int whole = k <= 3;
            if (whole && (gi.scanned_calls != 0 || gi.rollup_entries == 0 || total == 0))
                case_fail(fx, reader, (size_t)(g * 9 + k), &q, &gi, NULL,
                          "a whole cell of a covered source was not answered from its entries alone");
        }
    }
}

/* The progress callback: heard between units of work; a cancel stops the run with
 * CP_EABORT, and the reader answers exactly afterwards. */
typedef struct prog {
    size_t calls, cancel_at;
    cp_progress last;
    int bad;
} prog;

static int on_progress(void *ud, const cp_progress *p)
{
    prog *g = ud;
    g->calls++;
    if (p->windows_done > p->windows_total || p->files_done > p->files_total || p->scanned < g->last.scanned)
        g->bad = 1;
    g->last = *p;
    return g->cancel_at && g->calls >= g->cancel_at;
}

static void check_progress(const fixture *fx, cp_reader *rd, const char *reader)
{
    for (size_t cancel_at = 0; cancel_at < 3; cancel_at++) {
        qcase q;
        case_base(&q, fx->lo + 1234, fx->hi - 4321, 100);
        q.f.min_duration_ms = 250; /* edges and a cut class are scanned */
        case_finish(&q, NULL, NULL);
        prog g;
        memset(&g, 0, sizeof g);
        g.cancel_at = cancel_at;
        q.f.progress = on_progress;
        q.f.progress_ud = &g;
        cp_stats got;
        cp_stats_info gi;
        int st = cp_stats_run(rd, &q.f, q.columns, &got, &gi);
        uint64_t total = got.total;
        cp_stats_free(&got);
        if (!cancel_at) {
            printf("[%s] %s, %s: progress heard %zu times, last: windows %zu/%zu, files %zu/%zu, %llu scanned\n",
                   test_pair_name(), fx->state, reader, g.calls, g.last.windows_done, g.last.windows_total,
                   g.last.files_done, g.last.files_total, (unsigned long long)g.last.scanned);
            if (st != CP_OK || g.calls < 1 || g.bad) case_fail(fx, reader, 0, &q, &gi, NULL, "progress not heard, or inconsistent");
            q.f.progress = NULL;
            uint64_t want;
            run_case(fx, rd, reader, 0, &q, NULL, NULL, &want);
            if (want != total) case_fail(fx, reader, 0, &q, &gi, NULL, "another total with a progress callback");
            continue;
        }
        if (st != CP_EABORT || g.calls != cancel_at) {
            char what[200];
            snprintf(what, sizeof what, "cancelled at progress call %zu: status %d after %zu calls, want CP_EABORT", cancel_at,
                     st, g.calls);
            case_fail(fx, reader, cancel_at, &q, &gi, NULL, what);
        }
        /* the same reader afterwards */
        q.f.progress = NULL;
        run_case(fx, rd, reader, cancel_at, &q, NULL, NULL, NULL);
    }
}

/* ---- compaction --------------------------------------------------------------------------- */

static void compact(const fixture *fx, int64_t until, const char *const *idle, size_t nidle, cp_compact_stats *st)
{
    cp_catalog *cat = NULL; /* the compactor's own connection */
    char err[1024];
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (cp_catalog_open(fx->spec, &cat, err, sizeof err) != CP_OK) fail_msg("compactor catalog: %s", err);
    cp_compactor_config cfg = {.cat = cat,
                               .store = fx->store,
                               .tmp_dir = fx->tmp,
                               .node = "stats-rollup-test",
                               .lease_ms = CP_COMPACT_LEASE_MS,
                               .idle = idle,
                               .nidle = nidle};
    int rc = cp_compact_run(&cfg, until, cp_now_ms(), 0, st, err, sizeof err);
    cp_catalog_close(cat);
    if (rc != CP_OK) fail_msg("compact until %lld: %d %s", (long long)until, rc, err);
    printf("[%s] compacted until T0%+lld: %llu claims, %llu windows, %llu calls -> %llu files in %.1f s\n",
           test_pair_name(), (long long)(until - T0), (unsigned long long)st->claims, (unsigned long long)st->windows,
           (unsigned long long)st->calls, (unsigned long long)st->files, secs_since(&t0));
}

/* The hot tier alone holds no call any more (its own full scan). */
static uint64_t hot_total(const fixture *fx)
{
    cp_reader *hot = open_hot(fx);
    cp_stats s;
    cp_stats_info i;
    memset(&i, 0, sizeof i);
    cp_stats_plan p0;
    memset(&p0, 0, sizeof p0);
    cp_call_filter f;
    memset(&f, 0, sizeof f);
    f.from_ms = T_OLD - HOUR_MS;
    f.to_ms = T0 + 4 * HOUR_MS;
    f.max_duration_ms = INT64_MAX;
    assert_int_equal(cp_stats_init(&s, f.from_ms, f.to_ms, 10), CP_OK);
    if (hot->ops->stats(hot, &f, &p0, &s, &i) != CP_OK) fail_msg("hot stats: %s", cp_reader_errmsg(hot));
    uint64_t n = s.total;
    cp_stats_free(&s);
    cp_reader_close(hot);
    return n;
}

/* ---- the old layout: calls files written by hand ----------------------------------------- */

static int sink_buf(void *ud, const void *p, size_t n) { return cp_buf_append(ud, p, n); }

/* The old order: pod, then time, then the rest of the ref. */
static int cmp_pod_time(const void *pa, const void *pb)
{
    const cp_call *a = &(*(tcall *const *)pa)->c, *b = &(*(tcall *const *)pb)->c;
    int c = strcmp(a->pod, b->pod);
    if (c) return c;
    if (a->ts_ms != b->ts_ms) return a->ts_ms < b->ts_ms ? -1 : 1;
    if (a->restart_ms != b->restart_ms) return a->restart_ms < b->restart_ms ? -1 : 1;
    return a->record_index - b->record_index;
}

static void write_old_file(fixture *fx, tcall **v, size_t n, const char *ns, int range, cp_buf *sql)
{
    qsort(v, n, sizeof *v, cmp_pod_time);
    cp_buf key, file, url;
    cp_buf_init(&key);
    cp_buf_init(&file);
    cp_buf_init(&url);
    assert_int_equal(cp_cold_calls_key(T_OLD, ns, strlen(ns), range, CLAIM_OLD, &key), CP_OK);
    assert_int_equal(cp_buf_putc(&key, 0), CP_OK);
    const char *k = (const char *)key.data;
    cp_pq_writer *w;
    char err[256];
    /* default options: 65536-row groups, no key/value metadata */
    if (cp_pq_writer_new(cp_cold_calls_schema, CP_COLD_C_COUNT, NULL, sink_buf, &file, &w, err, sizeof err) != CP_OK)
        fail_msg("writer: %s", err);
    cp_cold_rowbuf *rb;
    assert_int_equal(cp_cold_rowbuf_new(&rb), CP_OK);
    int64_t min_ts = INT64_MAX, max_ts = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        cp_pq_value row[CP_COLD_C_COUNT];
        assert_int_equal(cp_cold_call_row(rb, &v[i]->c, row), CP_OK);
        if (cp_pq_writer_add(w, row) != CP_OK) fail_msg("add: %s", cp_pq_writer_errmsg(w));
        if (v[i]->c.ts_ms < min_ts) min_ts = v[i]->c.ts_ms;
        if (v[i]->c.ts_ms > max_ts) max_ts = v[i]->c.ts_ms;
    }
    if (cp_pq_writer_finish(w) != CP_OK) fail_msg("finish: %s", cp_pq_writer_errmsg(w));
    cp_pq_writer_free(w);
    cp_cold_rowbuf_free(rb);
    if (fx->store->ops->put(fx->store, k, file.data, file.len, err, sizeof err) != CP_OK) fail_msg("put %s: %s", k, err);
    assert_int_equal(fx->store->ops->url(fx->store, k, &url), CP_OK);
    assert_int_equal(cp_buf_putc(&url, 0), CP_OK);
    const char *service = v[0]->c.service;
    if (!test_pair_pg()) {
        assert_int_equal(cp_buf_printf(sql,
                                       "INSERT INTO s3_files (uuid, start_time, end_time, file_type, namespace,"
                                       " duration_range, file_name, status, services, created_time, api_version,"
                                       " rows_count, file_size, remote_storage_path, object_key, min_time, max_time,"
                                       " indexed_params, claim) VALUES ('%s', %lld, %lld, 'calls', '%s', %d, '%s',"
                                       " 'completed', '[\"%s\"]', 0, '1', %zu, %zu, '%s', '%s', %lld, %lld, '[]', '%s');\n",
                                       k, (long long)T_OLD, (long long)(T_OLD + HOUR_MS), ns,
                                       (int)cp_cold_range_upper(range), strrchr(k, '/') + 1, service, n, file.len,
                                       (const char *)url.data, k, (long long)min_ts, (long long)max_ts, CLAIM_OLD),
                         CP_OK);
    } else {
        cp_compact_job job;
        memset(&job, 0, sizeof job);
        snprintf(job.claim, sizeof job.claim, "%s", CLAIM_OLD);
        job.hour_ms = T_OLD;
        job.from_ms = T_OLD;
        job.to_ms = T_OLD + HOUR_MS;
        char services[64];
        snprintf(services, sizeof services, "[\"%s\"]", service);
        cp_cold_file f = {.uuid = k, .key = k, .url = (const char *)url.data, .file_type = "calls", .ns = ns,
                          .duration_range = cp_cold_range_upper(range), .start_ms = T_OLD, .end_ms = T_OLD + HOUR_MS,
                          .min_ts = min_ts, .max_ts = max_ts, .rows = (int64_t)n, .size = (int64_t)file.len,
                          .status = "completed", .services = services, .indexed_params = "[]", .claim = CLAIM_OLD};
        if (cp_catalog_cold_file_put(fx->cat, &job, &f) != CP_OK) fail_msg("file put: %s", cp_catalog_errmsg(fx->cat));
        assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    }
    assert_true(fx->nold_keys < CP_ARRAY_LEN(fx->old_keys));
    fx->old_keys[fx->nold_keys++] = strdup(k);
    cp_buf_free(&key);
    cp_buf_free(&file);
    cp_buf_free(&url);
}

/* The old calls into one file per namespace x duration range, as compaction wrote them
 * before rollups existed. */
static void make_old_files(fixture *fx)
{
    tcall **v = calloc(NOLD, sizeof *v);
    cp_buf sql;
    cp_buf_init(&sql);
    const char *done[NPODS];
    size_t ndone = 0;
    for (size_t p = 0; p < NPODS; p++) {
        const char *ns = pods[p].ns;
        int seen = 0;
        for (size_t j = 0; j < ndone; j++) seen |= !strcmp(done[j], ns);
        if (seen) continue;
        done[ndone++] = ns;
        for (int r = 0; r < CP_COLD_RANGES; r++) {
            size_t n = 0;
            for (size_t i = NBASE + NLATE; i < NALL; i++)
                if (!strcmp(fx->calls[i].c.ns, ns) && cp_cold_range_of(fx->calls[i].c.duration_ms) == r)
                    v[n++] = &fx->calls[i];
            if (n) write_old_file(fx, v, n, ns, r, &sql);
        }
    }
    if (sql.len) {
        assert_int_equal(cp_buf_putc(&sql, 0), CP_OK);
        db_exec(fx, (const char *)sql.data);
    }
    cp_buf_free(&sql);
    free(v);
}

/* ---- searches ------------------------------------------------------------------------------- */

typedef struct walkctx {
    const fixture *fx;
    uint32_t *rows;
    size_t n, cap;
    cp_sort_col col;
    int desc;
    cp_sort_key last;
    size_t page_rows;
    char err[2048];
} walkctx;

static int on_row(void *ud, const cp_call *c)
{
    walkctx *x = ud;
    cp_call_ref r;
    cp_call_ref_of(c, &r);
    long i = find_call(x->fx, &r);
    const cp_call *w = i >= 0 ? &x->fx->calls[i].c : NULL;
    if (!w || w->duration_ms != c->duration_ms || !str_is(c->ns, c->ns_len, w->ns) ||
        !str_is(c->service, c->service_len, w->service) || !str_is(c->pod, c->pod_len, w->pod) ||
        c->params_json_len != w->params_json_len || memcmp(c->params_json, w->params_json, w->params_json_len) ||
        c->error != w->error || c->calls != w->calls || c->suspend_ms != w->suspend_ms) {
        if (!x->err[0])
            snprintf(x->err, sizeof x->err, "row %zu of a page: ts %lld, duration %d, %.*s/%.*s, params %.*s: %s",
                     x->page_rows, (long long)c->ts_ms, c->duration_ms, (int)c->ns_len, c->ns, (int)c->pod_len, c->pod,
                     (int)c->params_json_len, c->params_json, w ? "differs from the data set's call" : "not in the data set");
        return 0;
    }
    if (x->n == x->cap) {
        x->cap = x->cap ? x->cap * 2 : 256;
        x->rows = realloc(x->rows, x->cap * sizeof *x->rows);
    }
    x->rows[x->n++] = (uint32_t)i;
    x->page_rows++;
    cp_sort_key_of(c, x->col, x->desc, &x->last);
    return 0;
}

typedef struct order {
    cp_sort_col col;
    int desc;
} order;

/* The API's order: the column in its direction, then ts desc, then the ref desc. */
static int order_cmp(const void *pa, const void *pb, void *ud)
{
    const order *o = ud;
    const cp_call *a = &g_fx->calls[*(const uint32_t *)pa].c, *b = &g_fx->calls[*(const uint32_t *)pb].c;
    int c = cmp64(cp_call_sort_num(a, o->col), cp_call_sort_num(b, o->col));
    if (o->desc) c = -c;
    if (c) return c;
    cp_call_ref ra, rb;
    cp_call_ref_of(a, &ra);
    cp_call_ref_of(b, &rb);
    if ((c = cmp64(rb.ts_ms, ra.ts_ms))) return c;
    if ((c = cmp64(rb.restart_ms, ra.restart_ms))) return c;
    if ((c = cmp64((int64_t)rb.pod_hash, (int64_t)ra.pod_hash))) return c;
    if ((c = cmp64(rb.trace_file_index, ra.trace_file_index))) return c;
    if ((c = cmp64(rb.buffer_offset, ra.buffer_offset))) return c;
    return cmp64(rb.record_index, ra.record_index);
}

/* Pages through [from, to) (pod: NULL = any) sorted by col, each page after the previous
 * one's cursor (formatted and parsed as the API does); compared with plain C. */
static void check_walk(const fixture *fx, int64_t from, int64_t to, const char *pod, cp_sort_col col, int desc,
                       size_t limit)
{
    qcase q;
    case_base(&q, from, to, 1);
    q.f.pod = pod;
    uint32_t *want = malloc(fx->n * sizeof *want);
    size_t nw = 0;
    for (size_t i = 0; i < fx->n; i++)
        if (c_selects(&q, &fx->calls[i].c)) want[nw++] = (uint32_t)i;
    order o = {col, desc};
    qsort_r(want, nw, sizeof *want, order_cmp, &o);

    walkctx x;
    memset(&x, 0, sizeof x);
    x.fx = fx;
    x.col = col;
    x.desc = desc;
    cp_call_filter f = q.f;
    f.sort = col;
    f.desc = desc;
    f.limit = limit;
    cp_cursor cur;
    size_t pages = 0;
    for (;;) {
        cp_search_stats st;
        x.page_rows = 0;
        size_t before = x.n;
        int rc = cp_reader_search(fx->rd, &f, on_row, &x, &st);
        if (rc != CP_OK) fail_msg("search: %d %s", rc, cp_reader_errmsg(fx->rd));
        if (x.err[0]) fail_msg("[%s] %s, sort %s%s, pod %s, page %zu: %s", test_pair_name(), fx->state, desc ? "-" : "",
                               cp_sort_name(col), pod ? pod : "-", pages, x.err);
        pages++;
        if (x.n - before > limit || (st.more && x.n - before != limit))
            fail_msg("[%s] %s: page %zu has %zu rows, more %d (limit %zu)", test_pair_name(), fx->state, pages,
                     x.n - before, st.more, limit);
        if (!st.more) break;
        cp_cursor c0 = {0x5157, cp_now_ms(), x.last};
        char text[CP_CURSOR_MAX];
        cp_cursor_format(&c0, text);
        assert_int_equal(cp_cursor_parse(text, strlen(text), &cur), CP_OK);
        f.after = &cur.key;
        assert_true(pages < 1000);
    }
    for (size_t k = 0; k < nw || k < x.n; k++) {
        if (k < nw && k < x.n && want[k] == x.rows[k]) continue;
        fail_msg("[%s] %s, sort %s%s, pod %s, [T0%+lld, T0%+lld): row %zu (page %zu) is call #%ld, plain C's #%ld"
                 " (%zu rows, plain C %zu)",
                 test_pair_name(), fx->state, desc ? "-" : "", cp_sort_name(col), pod ? pod : "-",
                 (long long)(from - T0), (long long)(to - T0), k, k / limit, k < x.n ? (long)x.rows[k] : -1L,
                 k < nw ? (long)want[k] : -1L, x.n, nw);
    }
    printf("[%s] %s: sort %s%s pod %s over [T0%+lld, T0%+lld): %zu rows in %zu pages equal to plain C\n",
           test_pair_name(), fx->state, desc ? "-" : "", cp_sort_name(col), pod ? pod : "-", (long long)(from - T0),
           (long long)(to - T0), x.n, pages);
    free(x.rows);
    free(want);
}

/* ---- the tests ------------------------------------------------------------------------------ */

/* The data set has what the cases are meant to exercise. */
static void test_data_set(void **state)
{
    fixture *fx = *state;
    size_t cls[CP_ROLLUP_CLASSES] = {0}, errors = 0, sys_default = 0, sys_ext_only = 0, twins = 0, unaligned = 0;
    size_t on_cells = 0, ext_phase = 0, late_in_compacted = 0, old = 0;
    for (size_t i = 0; i < NALL; i++) {
        const tcall *t = &fx->calls[i];
        const cp_call *c = &t->c;
        cp_call_view v = {c->method, c->method_len, c->pod, c->pod_len, c->params_json, c->params_json_len};
        if (i < NBASE) {
            cls[cp_rollup_class_of(c->duration_ms)]++;
            errors += c->error;
            int d = cp_system_call(&v, cp_system_idle_default, cp_system_idle_default_count);
            int e = cp_system_call(&v, g_idle_ext, g_nidle_ext);
            sys_default += d;
            sys_ext_only += e && !d;
            twins += t->twin;
            unaligned += c->ts_ms % 1000 != 0;
            on_cells += c->ts_ms % CELL == 0;
            ext_phase += phase2(t, i);
            assert_true(c->error == (strstr(c->params_json, "\"call.red\"") != NULL));
        } else if (i < NBASE + NLATE) {
            late_in_compacted += c->ts_ms >= T0 && c->ts_ms < MIXED_UNTIL;
        } else {
            old += c->ts_ms >= T_OLD && c->ts_ms < T_OLD + HOUR_MS;
        }
    }
    for (int k = 0; k < CP_ROLLUP_CLASSES; k++) {
        printf("class %d [%lld, %lld): %zu calls\n", k, (long long)(k ? cp_rollup_class_lo(k) : 0),
               (long long)cp_rollup_class_hi(k), cls[k]);
        assert_true(cls[k] >= 40);
    }
    printf("%zu errors, %zu system calls (%zu more under the extended list), %zu twins, %zu unaligned, %zu on cell"
           " edges, %zu under the extended list\n",
           errors, sys_default, sys_ext_only, twins, unaligned, on_cells, ext_phase);
    assert_true(errors > 300 && sys_default > 300 && sys_ext_only > 100 && twins > 300);
    assert_true(unaligned > 1500 && on_cells > 200 && ext_phase > 200);
    assert_int_equal(late_in_compacted, NLATE);
    assert_int_equal(old, NOLD);
    /* the duration ties that decide points: many calls share the slowest durations */
    size_t maxdur = 0;
    for (size_t i = 0; i < NBASE; i++) maxdur += fx->calls[i].c.duration_ms == INT32_MAX;
    assert_true(maxdur > 50);
}

/* 1. All hot: the tiered reader, and the catalog reader alone. */
static void test_all_hot(void **state)
{
    fixture *fx = *state;
    fx->state = "all hot";
    check_work(fx, fx->rd, "tiered", T0, T0 + SPAN_MS, 0, 0, 1);
    check_idle(fx, fx->rd, "tiered", T0, EXT_FROM, 1, 0, 0);          /* default entries only */
    check_idle(fx, fx->rd, "tiered", EXT_ONLY, T0 + SPAN_MS, 0, 1, 0); /* extended entries only */
    check_idle(fx, fx->rd, "tiered", EXT_FROM, EXT_ONLY, 0, 0, 0);     /* windows with both */
    check_ties(fx, fx->rd, "tiered");
    check_progress(fx, fx->rd, "tiered");
    run_random(fx, fx->rd, "tiered", 1, fx->ncases);
    cp_reader *hot = open_hot(fx);
    check_work(fx, hot, test_pair_pg() ? "reader_pg" : "reader_sqlite", T0, T0 + SPAN_MS, 0, 0, 1);
    check_ties(fx, hot, test_pair_pg() ? "reader_pg" : "reader_sqlite");
    check_progress(fx, hot, test_pair_pg() ? "reader_pg" : "reader_sqlite");
    run_random(fx, hot, test_pair_pg() ? "reader_pg" : "reader_sqlite", 2, fx->ncases / 2);
    cp_reader_close(hot);
}

/* 2. A hot window as a catalog from before migration 5 has it: no rollup flag, no entries. */
static void test_predates_rollups(void **state)
{
    fixture *fx = *state;
    fx->state = "hot, 13:40 without rollups";
    const char *tbl = "calls_20260101_1340";
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM hot_rollups WHERE tbl = '%s'", tbl);
    assert_true(db_count(fx, sql) > 0);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM inventory WHERE table_name = '%s' AND rollup = 1", tbl);
    assert_int_equal(db_count(fx, sql), 1);
    snprintf(sql, sizeof sql, "UPDATE inventory SET rollup = 0 WHERE table_name = '%s';"
                              " DELETE FROM hot_rollups WHERE tbl = '%s';", tbl, tbl);
    db_exec(fx, sql);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM hot_rollups WHERE tbl = '%s'", tbl);
    assert_int_equal(db_count(fx, sql), 0);
    size_t w = count_calls(fx, PREDATES, PREDATES + WIN_MS, NULL, 0, fx->n);
    assert_true(w > 20);
    check_work(fx, fx->rd, "tiered", T0, T0 + SPAN_MS, w, w, 1);
    check_idle(fx, fx->rd, "tiered", T0, EXT_FROM, 1, 0, 0);
    check_ties(fx, fx->rd, "tiered");
    check_progress(fx, fx->rd, "tiered");
    run_random(fx, fx->rd, "tiered", 3, fx->ncases);
}

static int is_late(const tcall *t, size_t i)
{
    (void)t;
    return i >= NBASE && i < NBASE + NLATE;
}

/* 3. Mixed: hour 12 and 13:00 .. 13:20 compacted, one rollup file without its row, one
 * without its object, late calls for the compacted windows. */
static void test_mixed(void **state)
{
    fixture *fx = *state;
    fx->state = "mixed";
    cp_compact_stats cs;
    compact(fx, MIXED_UNTIL, cp_system_idle_default, cp_system_idle_default_count, &cs);
    assert_true(cs.claims >= 2);
    assert_int_equal(cs.calls, count_calls(fx, T0, MIXED_UNTIL, NULL, 0, fx->n));
    char sql[512], key[512];
    snprintf(sql, sizeof sql,
             "SELECT count(*) FROM s3_files WHERE file_type = 'rollup' AND status = 'completed' AND claim IN ('%s', '%s')",
             CLAIM_12, CLAIM_13);
    long long rollup_files = db_count(fx, sql);
    printf("[%s] %lld rollup files for claims %s and %s\n", test_pair_name(), rollup_files, CLAIM_12, CLAIM_13);
    assert_int_equal(rollup_files, 6); /* three namespaces each */
    /* ns-a of hour 12: the row goes (the file is as good as missing) */
    snprintf(sql, sizeof sql, "DELETE FROM s3_files WHERE file_type = 'rollup' AND claim = '%s' AND namespace = 'ns-a'",
             CLAIM_12);
    db_exec(fx, sql);
    /* ns-b of 13:00 .. 13:20: the object goes, the row stays */
    snprintf(sql, sizeof sql,
             "SELECT object_key FROM s3_files WHERE file_type = 'rollup' AND claim = '%s' AND namespace = 'ns-b'",
             CLAIM_13);
    db_text(fx, sql, key, sizeof key);
    assert_true(key[0] != 0);
    char err[512];
    if (fx->store->ops->del(fx->store, key, err, sizeof err) != CP_OK) fail_msg("delete %s: %s", key, err);
    snprintf(sql, sizeof sql, "SELECT count(*) FROM s3_files WHERE file_type = 'rollup' AND claim IN ('%s', '%s')",
             CLAIM_12, CLAIM_13);
    assert_int_equal(db_count(fx, sql), 5);

    /* late calls: the compacted windows' next batch tables, with rollups */
    put_calls(fx, NBASE, NBASE + NLATE, is_late);
    fx->n = NBASE + NLATE;
    snprintf(sql, sizeof sql, "SELECT count(*) FROM inventory WHERE table_type = 'calls' AND batch > 0 AND rollup = 1"
                              " AND status = 'ready'");
    assert_true(db_count(fx, sql) > 0);

    size_t uncovered = count_calls(fx, PREDATES, PREDATES + WIN_MS, NULL, 0, NBASE) +
                       count_calls(fx, T0, T0 + HOUR_MS, "ns-a", 0, NBASE) +
                       count_calls(fx, T0 + HOUR_MS, MIXED_UNTIL, "ns-b", 0, NBASE);
    check_work(fx, fx->rd, "tiered", T0, T0 + SPAN_MS, uncovered, uncovered, 1);
    /* cold default entries, hot ones of both lists: per part of the day */
    check_idle(fx, fx->rd, "tiered", T0, EXT_FROM, 1, 0, 0);
    check_idle(fx, fx->rd, "tiered", T0, MIXED_UNTIL, 1, 0, 0);
    check_idle(fx, fx->rd, "tiered", EXT_ONLY, T0 + SPAN_MS, 0, 1, 0);
    check_ties(fx, fx->rd, "tiered");
    check_progress(fx, fx->rd, "tiered");
    run_random(fx, fx->rd, "tiered", 4, fx->ncases);
    /* a reader that never read the files before */
    cp_reader *rd = open_tiered(fx);
    run_random(fx, rd, "fresh tiered", 5, fx->ncases / 4);
    cp_reader_close(rd);
}

/* 4. All cold; the rest compacted under the extended idle list. */
static void test_all_cold(void **state)
{
    fixture *fx = *state;
    fx->state = "all cold";
    cp_compact_stats cs;
    compact(fx, T0 + 400 * 24 * HOUR_MS, g_idle_ext, g_nidle_ext, &cs);
    assert_int_equal(cs.calls, fx->n - count_calls(fx, T0, MIXED_UNTIL, NULL, 0, NBASE));
    assert_int_equal(hot_total(fx), 0);
    size_t a = count_calls(fx, T0, T0 + HOUR_MS, "ns-a", 0, NBASE),
           b = count_calls(fx, T0 + HOUR_MS, MIXED_UNTIL, "ns-b", 0, NBASE);
    check_work(fx, fx->rd, "tiered", T0, T0 + SPAN_MS, a + b, a + b, 1);
    /* cold entries: default ones up to 13:20 (but the missing two), extended ones after */
    check_idle(fx, fx->rd, "tiered", T0, MIXED_UNTIL, 1, -1, 0); /* the late calls' claims: extended */
    check_idle(fx, fx->rd, "tiered", MIXED_UNTIL, T0 + SPAN_MS, 0, 1, 0);
    check_idle(fx, fx->rd, "tiered", T0, T0 + SPAN_MS, 1, 1, 0);
    check_ties(fx, fx->rd, "tiered");
    check_progress(fx, fx->rd, "tiered");
    run_random(fx, fx->rd, "tiered", 6, fx->ncases);
}

/* 5. Calls files of the old layout beside the new ones. */
static void test_old_layout(void **state)
{
    fixture *fx = *state;
    fx->state = "all cold + old layout";
    make_old_files(fx);
    printf("[%s] %zu old-layout files for 10:00 .. 11:00\n", test_pair_name(), fx->nold_keys);
    assert_true(fx->nold_keys >= 10);
    fx->n = NALL;
    fx->lo = T_OLD - 10 * MIN_MS;
    size_t a = count_calls(fx, T0, T0 + HOUR_MS, "ns-a", 0, NBASE),
           b = count_calls(fx, T0 + HOUR_MS, MIXED_UNTIL, "ns-b", 0, NBASE);
    check_work(fx, fx->rd, "tiered", T_OLD, T0 + SPAN_MS, a + b + NOLD, a + b + NOLD, 1);
    check_work(fx, fx->rd, "tiered", T_OLD, T_OLD + HOUR_MS, NOLD, NOLD, 0);
    /* a window that is all old: nothing but scans, exact */
    qcase q;
    case_base(&q, T_OLD - 7 * MIN_MS - 3, T_OLD + HOUR_MS + 1234, 250);
    case_finish(&q, NULL, NULL);
    cp_stats_info gi;
    run_case(fx, fx->rd, "tiered", 0, &q, NULL, &gi, NULL);
    assert_int_equal(gi.rollup_entries, 0);
    assert_int_equal(gi.scanned_calls, NOLD);
    check_ties(fx, fx->rd, "tiered");
    check_progress(fx, fx->rd, "tiered");
    run_random(fx, fx->rd, "tiered", 7, fx->ncases);
    /* searches over the old files, alone and with new ones */
    check_walk(fx, T_OLD - MIN_MS, T0 + 20 * MIN_MS, NULL, CP_SORT_TS, 1, 37);
    check_walk(fx, T_OLD - MIN_MS, T0 + 20 * MIN_MS, NULL, CP_SORT_TS, 0, 37);
    check_walk(fx, T_OLD + 5 * MIN_MS + 17, T_OLD + 47 * MIN_MS, "pod-1", CP_SORT_TS, 1, 11);
    check_walk(fx, T_OLD + 5 * MIN_MS + 17, T_OLD + 47 * MIN_MS, "pod-1", CP_SORT_TS, 0, 11);
    check_walk(fx, T_OLD, T_OLD + HOUR_MS, NULL, CP_SORT_DURATION, 1, 50);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_set),   cmocka_unit_test(test_all_hot), cmocka_unit_test(test_predates_rollups),
        cmocka_unit_test(test_mixed),      cmocka_unit_test(test_all_cold), cmocka_unit_test(test_old_layout),
    };
    test_pair_require();
    return cmocka_run_group_tests_name(test_pair_name(), tests, group_setup, group_teardown);
}
