/* hotcold_pages_test.c -- the calls search pages identically before, during and after
 * compaction: same rows, same order, same keyset keys, same `more`, for every sort column
 * in both directions, under every filter the calls API has.
 *
 * CP_TEST_BOTH_PAIRS: CTest runs this suite on SQLite + a directory store, and again as
 * hotcold_pages_test@pg-s3 on PostgreSQL + S3 (pair_util.h).
 *
 * The data set (about 3000 calls, written through cp_catalog_call_put) spans 12:00 to
 * 14:30 of 2026-01-01 UTC in 5-minute windows: three namespaces (one whose name is not a
 * plain key component), services and pods sharing names across namespaces, a pod that
 * restarts in the middle, few distinct times and values (ties everywhere, so the
 * tie-breaks decide the order), durations in all eight cold duration ranges (0 ms up to
 * INT32_MAX), errors (a "call.red" param), an indexed param ("tenant", declared through
 * cp_catalog_param_put, so the compactor builds its inverted index) whose values differ by
 * namespace and duration range, empty and UTF-8 threads and methods, calls exactly on
 * window and hour edges.
 *
 * For each sort column x direction x filter set a walk pages through everything with a
 * small limit (37 rows, larger for the filters selecting many calls so that no walk has
 * more than 10 pages), each page continuing after the previous page's last row the way an
 * API client does (the row's cp_sort_key, through the cursor's text form). Filters are built
 * as src/http/http_query.c builds them (cp_duration_parse, cp_search_parse + the
 * cp_search_match predicate, the required $name=value terms for index pruning).
 *
 *   1. all hot: the walks are the baseline, checked against a plain-C filter and sort;
 *   2. the real compactor (cp_compact_run) up to 13:20: hour 12 and the first windows of
 *      hour 13 are cold, the rest hot; every walk again = the baseline;
 *   3. the compactor up to the far future: all cold; every walk again = the baseline, each
 *      page asked for with the cursor the all-hot walk issued (before any compaction);
 *   4. a cursor issued by an all-hot walk, continued on the cold data by a fresh reader
 *      with the cursors the cold pages give: the rest of the baseline.
 *
 * A difference fails with the pair, the state, the sort, the filter, the page and both
 * pages' rows side by side (call id and sort value).
 *
 * A quick run (the sanitizer build, testutil.h test_quick()) makes one walk per sort
 * column and direction: ascending with no filter, descending with another filter set
 * (every filter for some sorts). The same four states and checks, a fifteenth of the walks.
 */
#include "testutil.h"

#include "pair_util.h"
#include "query/cp_query.h"
#include "store/cp_catalog.h"
#include "store/cp_cold.h"
#include "store/cp_hot.h"
#include "store/cp_ostore.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIN_MS 60000LL
#define HOUR_MS 3600000LL
#define T0 1767268800000LL /* 2026-01-01 12:00:00 UTC */
#define SPAN_MS (150 * MIN_MS)  /* data in [T0, T0 + 2 h 30) */
#define TICK_MS 15000LL         /* times on a 15 s grid: ~5 calls per distinct time */
#define NCALLS 3000
#define PAGE 37          /* rows per page ... */
#define MAX_PAGES 10     /* ... or more, so that no walk is longer than this */
#define MIXED_UNTIL (T0 + 80 * MIN_MS) /* hour 12 and 13:00..13:20 go cold first */
#define RESTART_AT (T0 + 70 * MIN_MS)  /* ns-a/pod-1 restarts here */

/* ---- the data set ------------------------------------------------------------------------ */

typedef struct tpod {
    cp_catalog_pod p;
    const char *tenant; /* prefix of the indexed param's values */
} tpod;

static const tpod pods[] = {
    {{"ns-a", "svc-1", "pod-1", "ns-a/pod-1", T0 - 2 * HOUR_MS}, "Acme"},   /* until RESTART_AT */
    {{"ns-a", "svc-1", "pod-1", "ns-a/pod-1", RESTART_AT}, "Acme"},         /* after it */
    {{"ns-a", "svc-1", "pod-2", "ns-a/pod-2", T0 - HOUR_MS}, "Acme"},
    {{"ns-a", "web", "web-0", "ns-a/web-0", T0 - HOUR_MS}, "Acme"},
    {{"ns-b", "svc-1", "pod-1", "ns-b/pod-1", T0 - HOUR_MS}, "beta"},     /* same service and pod names */
    {{"ns-b", "svc-2", "pod-9", "ns-b/pod-9", T0 - 3 * HOUR_MS}, "acme"},
    {{"\xc3\xa9quipe \xc3\xbc", "svc \xc3\xbc", "pod-\xc3\xbc", "\xc3\xa9quipe \xc3\xbc/pod-\xc3\xbc", T0 - HOUR_MS},
     "\xc3\xbcn\xc3\xaf"},
};
#define NPODS CP_ARRAY_LEN(pods)

/* Text sort columns compare bytes: upper case before lower case, prefixes first, the
 * empty string first of all, UTF-8 after ASCII. */
static const char *const methods[] = {
    "com.acme.OrderService.place(Ljava/lang/String;)V",
    "com.acme.OrderService.placeAll()V",
    "com.acme.orderservice.Cancel()V",
    "Zeta.run()V",
    "org.Foo.bar()I",
    "#17",
    "",
    "\xc3\x9cnicode.m\xc3\xa9thod()V",
    "\xc3\xbcnicode.lower()V",
    "a",
    "a b",
};
static const char *const threads[] = {
    "http-nio-8080-exec-1", "http-nio-8080-exec-10", "http-nio-8080-exec-2", "main", "Main", "",
    "\xd0\x9f\xd0\xbe\xd1\x82\xd0\xbe\xd0\xba-1", "worker \xc3\xbc",
};
/* Durations: every range of cp_cold_range_of, both edges of each. */
static const int32_t durations[] = {
    0, 0, 0, 1, 5, 9, 10, 10, 50, 99, 100, 100, 500, 999, 1000, 1000, 2500, 4999, 5000, 5000, 12000, 29999, 30000,
    45000, 89999, 90000, 90000, 120000, 600000, INT32_MAX,
};

typedef struct tcall {
    cp_call c;
    char params[400];
    uint8_t trace[100];
    char id[CP_CALL_ID_MAX];
} tcall;

static uint64_t rnd(uint64_t *s, uint64_t n) { return test_rand(s) % n; }

static int ref_cmp(const cp_call_ref *a, const cp_call_ref *b)
{
#define C(f)                                                                                                           \
    if (a->f != b->f) return a->f < b->f ? -1 : 1;
    C(ts_ms) C(restart_ms) C(pod_hash) C(trace_file_index) C(buffer_offset) C(record_index)
#undef C
    return 0;
}

/* One deterministic call. Refs are unique (record_index is bumped on a clash) but share
 * time, restart, pod, trace file and offset often, so every tie-break level is used. */
static void make_call(tcall *t, size_t i, uint64_t *rng)
{
    cp_call *c = &t->c;
    memset(t, 0, sizeof *t);
    if (rnd(rng, 25) == 0) /* right on a window (and sometimes hour) edge, or 1 ms from it */
        c->ts_ms = T0 + (int64_t)(1 + rnd(rng, 29)) * 5 * MIN_MS + (int64_t)rnd(rng, 3) - 1;
    else
        c->ts_ms = T0 + (int64_t)rnd(rng, (uint64_t)(SPAN_MS / TICK_MS)) * TICK_MS;
    size_t pi = rnd(rng, NPODS - 1);
    if (pi >= 1) pi++;                    /* 1 is the restart of 0: by time */
    if (pi == 0 && c->ts_ms >= RESTART_AT) pi = 1;
    const tpod *p = &pods[pi];
    c->duration_ms = rnd(rng, 3) ? durations[rnd(rng, CP_ARRAY_LEN(durations))] : (int32_t)rnd(rng, 150000);
    c->cpu_time = (int64_t)rnd(rng, 40) * 1000 - 5000;
    c->wait_time = (int64_t)rnd(rng, 10);
    c->memory_used = (int64_t)rnd(rng, 20) << 30;
    c->non_blocking = (int64_t)rnd(rng, 3);
    c->queue_wait_ms = (int32_t)rnd(rng, 7);
    c->suspend_ms = (int32_t)rnd(rng, 5);
    c->calls = (int32_t)rnd(rng, 50);
    c->transactions = (int64_t)rnd(rng, 4);
    c->logs_generated = (int32_t)rnd(rng, 9);
    c->logs_written = (int32_t)rnd(rng, 9);
    c->file_read = (int64_t)rnd(rng, 3) * 5000000000LL;
    c->file_written = (int64_t)rnd(rng, 1000);
    c->net_read = (int64_t)rnd(rng, 30) * 100;
    c->net_written = (int64_t)rnd(rng, 2);
    if (i == 7) c->memory_used = INT64_MAX, c->cpu_time = INT64_MIN + 1; /* extremes of the keys */
    if (i == 8) c->cpu_time = INT64_MAX;
    c->ns = p->p.ns, c->ns_len = strlen(p->p.ns);
    c->service = p->p.service, c->service_len = strlen(p->p.service);
    c->pod = p->p.pod, c->pod_len = strlen(p->p.pod);
    c->restart_ms = p->p.restart_ms;
    c->method_id = (int32_t)rnd(rng, CP_ARRAY_LEN(methods));
    c->method = methods[c->method_id], c->method_len = strlen(c->method);
    c->thread = threads[rnd(rng, CP_ARRAY_LEN(threads))], c->thread_len = strlen(c->thread);
    c->error = rnd(rng, 6) == 0;
    c->sql = i % 5 == 2;

    /* params as the hot tier keeps them: names sorted, cp_json_str escaping */
    cp_buf b;
    cp_buf_init(&b);
    cp_buf_putc(&b, '{');
    int first = 1;
#define SEP() (first ? (void)(first = 0) : (void)cp_buf_putc(&b, ','))
    if (rnd(rng, 10) == 0) SEP(), cp_buf_puts(&b, "\"_internal\":[\"order-secret\"]");
    if (c->error) {
        SEP();
        cp_buf_puts(&b, rnd(rng, 2) ? "\"call.red\":[\"1\"]"
                                    : "\"call.red\":[\"java.lang.IllegalStateException: \xc3\xbc\"]");
    }
    if (rnd(rng, 8) == 0) SEP(), cp_buf_puts(&b, "\"empty\":[]");
    if (rnd(rng, 12) != 0) { /* tenant-<range>: most files lack a given value (index pruning) */
        SEP();
        cp_buf_printf(&b, "\"tenant\":[\"%s-%d\"", p->tenant, cp_cold_range_of(c->duration_ms));
        if (rnd(rng, 40) == 0) cp_buf_puts(&b, ",\"acme-1\"");
        cp_buf_putc(&b, ']');
    }
    SEP();
    cp_buf_printf(&b, "\"user\":[\"%s-%u\"]", rnd(rng, 5) ? "user" : "User", (unsigned)rnd(rng, 20));
    if (rnd(rng, 15) == 0) SEP(), cp_buf_puts(&b, "\"zq\":[\"a\\\"b\\\\c\\u0001\\t\",\"\xc3\xa9\xe2\x82\xac\"]");
#undef SEP
    cp_buf_putc(&b, '}');
    assert_true(b.len < sizeof t->params);
    memcpy(t->params, b.data, b.len);
    c->params_json = t->params, c->params_json_len = b.len;
    cp_buf_free(&b);

    c->trace_file_index = 1 + (int32_t)rnd(rng, 2);
    c->buffer_offset = (int32_t)rnd(rng, 8) * 1000 - 3000; /* some negative */
    c->record_index = (int32_t)rnd(rng, 4);
    if (rnd(rng, 3) == 0) {
        c->trace_reason = rnd(rng, 2) ? CP_TRACE_NOT_FOUND : CP_TRACE_TOO_LARGE;
    } else {
        size_t len = 20 + rnd(rng, 80);
        for (size_t k = 0; k < len; k++) t->trace[k] = (uint8_t)(test_rand(rng) >> 7);
        c->trace = t->trace, c->trace_len = len;
    }
}

/* ---- filter sets (as http_query.c builds them) ---------------------------------------------- */

typedef struct fdef {
    const char *name;
    int64_t from, to;           /* 0, 0: the whole data set */
    const char *ns, *service, *pod, *method, *duration, *q;
    int errors_only;
} fdef;

static const fdef fdefs[] = {
    {"none", 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, 0},
    {"duration=>=1s", 0, 0, NULL, NULL, NULL, NULL, ">=1s", NULL, 0},
    {"duration=<=9ms", 0, 0, NULL, NULL, NULL, NULL, "<=9ms", NULL, 0},
    {"duration=10ms..5s", 0, 0, NULL, NULL, NULL, NULL, "10ms..5s", NULL, 0},
    {"namespace=ns-b", 0, 0, "ns-b", NULL, NULL, NULL, NULL, NULL, 0},
    {"service=svc-1", 0, 0, NULL, "svc-1", NULL, NULL, NULL, NULL, 0},
    {"pod=pod-1", 0, 0, NULL, NULL, "pod-1", NULL, NULL, NULL, 0},
    {"error=true", 0, 0, NULL, NULL, NULL, NULL, NULL, NULL, 1},
    {"method=SERVICE.place", 0, 0, NULL, NULL, NULL, "SERVICE.place", NULL, NULL, 0},
    {"q=order", 0, 0, NULL, NULL, NULL, NULL, NULL, "order", 0},
    {"q=$tenant=ACME-1", 0, 0, NULL, NULL, NULL, NULL, NULL, "$tenant=ACME-1", 0},
    {"from=12:37:01.234&to=14:03:00.017", T0 + 37 * MIN_MS + 1234, T0 + 123 * MIN_MS + 17, NULL, NULL, NULL, NULL,
     NULL, NULL, 0},
    {"namespace=ns-a&pod=pod-1&duration=>=100ms&q=+user -cancel&from=12:20:00.5&to=14:19:59.75",
     T0 + 20 * MIN_MS + 500, T0 + 140 * MIN_MS - 250, "ns-a", NULL, "pod-1", NULL, ">=100ms", "+user -cancel", 0},
    {"service=web&error=true&method=order&q=$tenant=acme", 0, 0, NULL, "web", NULL, "order", NULL, "$tenant=acme", 1},
    {"q=$tenant=nobody", 0, 0, NULL, NULL, NULL, NULL, NULL, "$tenant=nobody", 0}, /* none: one empty page */
};
#define EMPTY_FILTER (NFILTERS - 1)
#define NFILTERS CP_ARRAY_LEN(fdefs)

typedef struct qfilter {
    cp_call_filter f;           /* sort, desc, after, limit set per walk */
    cp_search *search;
    cp_cold_param params[8];
    size_t nparams;
} qfilter;

static void add_param(void *ud, const char *name, size_t nlen, const char *val, size_t vlen)
{
    qfilter *q = ud;
    if (q->nparams < CP_ARRAY_LEN(q->params)) q->params[q->nparams++] = (cp_cold_param){name, val, nlen, vlen};
}

static int match_search(void *ud, const cp_call_view *v) { return cp_search_match(ud, v); }

static int ref_selects(const struct qfilter *q, const cp_call *c);

static void qfilter_build(const fdef *d, qfilter *q)
{
    memset(q, 0, sizeof *q);
    cp_call_filter *f = &q->f;
    f->from_ms = d->from ? d->from : T0 - HOUR_MS;
    f->to_ms = d->to ? d->to : T0 + 4 * HOUR_MS;
    f->ns = d->ns;
    f->service = d->service;
    f->pod = d->pod;
    f->min_duration_ms = 0;
    f->max_duration_ms = INT64_MAX;
    char why[200];
    if (d->duration) {
        cp_duration_filter df;
        if (cp_duration_parse(d->duration, strlen(d->duration), &df, why, sizeof why) != CP_OK)
            fail_msg("duration %s: %s", d->duration, why);
        f->min_duration_ms = df.min_ms;
        f->max_duration_ms = df.max_ms;
    }
    f->errors_only = d->errors_only;
    if (d->q) {
        if (cp_search_parse(d->q, strlen(d->q), &q->search, why, sizeof why) != CP_OK) fail_msg("q %s: %s", d->q, why);
        cp_search_required_params(q->search, add_param, q);
        assert_false(cp_search_is_empty(q->search));
        f->match = match_search;
        f->match_ud = q->search;
        f->params = q->params;
        f->nparams = q->nparams;
    }
    f->method_substr = d->method;
    f->max_scan = 20000000; /* the API's default budget */
}

/* ---- the fixture ---------------------------------------------------------------------------- */

typedef struct wpage {
    uint32_t first, n;          /* rows[first .. first + n) of the walk */
    int more;
    char cursor[CP_CURSOR_MAX]; /* issued after this page (its last row's key) */
    cp_sort_key key;            /* what the cursor says */
} wpage;

typedef struct walk {
    uint32_t *rows;             /* indexes into fx->calls */
    size_t nrows, caprows;
    wpage *pages;
    size_t npages, cappages;
    size_t cold_files, cold_skipped; /* summed over the pages */
} walk;

#define NWALKS (CP_SORT_COUNT * 2 * NFILTERS)

typedef struct fixture {
    char *dir, *spec, *url, *cache, *tmp;
    cp_catalog *cat;
    cp_ostore *store;
    cp_reader *rd;              /* one tiered reader for the whole suite, as a pooled API reader */
    tcall *calls;
    size_t n;
    uint32_t *by_ref;           /* call indexes sorted by ref (lookup of returned rows) */
    qfilter qf[NFILTERS];
    size_t limit[NFILTERS];     /* page size of the filter's walks */
    walk base[NWALKS];          /* the all-hot walks */
    int have_base;
    size_t hot_after_mixed;     /* calls left hot by the first compaction */
} fixture;

static size_t walk_index(cp_sort_col col, int desc, size_t fi)
{
    return ((size_t)col * 2 + (size_t)desc) * NFILTERS + fi;
}

/* The filter besides "none" whose walks 4. continues for (col, desc). */
static size_t other_filter(int col, int desc) { return 1 + (size_t)(col * 2 + desc) % (NFILTERS - 1); }

/* Whether the walk is made: all of them, or in a quick run (testutil.h test_quick(): the
 * sanitizer build) one per sort column and direction: ascending with no filter,
 * descending with filter set 1 + col % 14 (each of them for some column) -- the same
 * checks on a fifteenth of the walks. */
static int walk_selected(int col, int desc, size_t fi)
{
    return !test_quick() || fi == (desc ? 1 + (size_t)col % (NFILTERS - 1) : 0);
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
    size_t lo = 0, hi = fx->n;
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

static cp_reader *open_tiered(const fixture *fx)
{
    char err[512];
    cp_reader *hot, *rd;
    if (cp_reader_open(fx->spec, &hot, err, sizeof err) != CP_OK) fail_msg("open reader: %s", err);
    cp_tiered_config cfg = {fx->store, test_pair_pg() ? fx->cache : NULL, 0};
    if (cp_reader_open_tiered(hot, &cfg, &rd, err, sizeof err) != CP_OK) fail_msg("open tiered: %s", err);
    return rd;
}

static char *path_in(const char *dir, const char *name)
{
    size_t n = strlen(dir) + strlen(name) + 2;
    char *s = malloc(n);
    snprintf(s, n, "%s/%s", dir, name);
    return s;
}

static int group_setup(void **state)
{
    test_pair_require();
    test_pair_env();
    fixture *fx = calloc(1, sizeof *fx);
    fx->dir = make_temp_dir("hotcold-pages");
    fx->spec = test_catalog_spec(fx->dir);
    fx->url = test_store_url(fx->dir);
    fx->cache = path_in(fx->dir, "cache");
    fx->tmp = path_in(fx->dir, "tmp");
    assert_int_equal(cp_mkdirs(fx->tmp, 0755), CP_OK);
    char err[512];
    if (cp_catalog_open(fx->spec, &fx->cat, err, sizeof err) != CP_OK) fail_msg("open catalog: %s", err);
    assert_int_equal(cp_catalog_set_windows(fx->cat, 5 * MIN_MS, 3 * HOUR_MS), CP_OK);
    for (size_t i = 0; i < NPODS; i++) {
        assert_int_equal(cp_catalog_pod_register(fx->cat, &pods[i].p, pods[i].p.restart_ms), CP_OK);
        /* the agent's params stream: tenant indexed, user not */
        cp_catalog_param t = {"tenant", 6, 1, 1, 0, "", 0}, u = {"user", 4, 0, 0, 1, "", 0};
        assert_int_equal(cp_catalog_param_put(fx->cat, &pods[i].p, &t), CP_OK);
        assert_int_equal(cp_catalog_param_put(fx->cat, &pods[i].p, &u), CP_OK);
    }
    assert_int_equal(cp_catalog_windows_prepare(fx->cat, T0), CP_OK); /* 12:00 .. 15:00, empty ones too */
    assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);

    fx->n = NCALLS;
    fx->calls = calloc(fx->n, sizeof *fx->calls);
    uint64_t rng = 20260101;
    for (size_t i = 0; i < fx->n; i++) {
        tcall *t = &fx->calls[i];
        make_call(t, i, &rng);
        /* unique refs: bump record_index past any clash */
        for (int clash = 1; clash;) {
            clash = 0;
            cp_call_ref r;
            cp_call_ref_of(&t->c, &r);
            for (size_t j = 0; j < i && !clash; j++) {
                cp_call_ref o;
                cp_call_ref_of(&fx->calls[j].c, &o);
                if (ref_cmp(&r, &o) == 0) clash = 1;
            }
            if (clash) t->c.record_index += 4;
        }
        cp_call_ref r;
        cp_call_ref_of(&t->c, &r);
        cp_call_id_format(&r, t->id);
        if (cp_catalog_call_put(fx->cat, &t->c) != CP_OK) fail_msg("call_put %zu: %s", i, cp_catalog_errmsg(fx->cat));
        if (i % 500 == 499) assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    }
    assert_int_equal(cp_catalog_commit(fx->cat), CP_OK);
    fx->by_ref = calloc(fx->n, sizeof *fx->by_ref);
    for (size_t i = 0; i < fx->n; i++) fx->by_ref[i] = (uint32_t)i;
    g_fx = fx;
    qsort(fx->by_ref, fx->n, sizeof *fx->by_ref, by_ref_cmp);
    for (size_t i = 0; i < NFILTERS; i++) {
        qfilter_build(&fdefs[i], &fx->qf[i]);
        size_t n = 0;
        for (size_t k = 0; k < fx->n; k++) n += ref_selects(&fx->qf[i], &fx->calls[k].c);
        fx->limit[i] = (n + MAX_PAGES - 1) / MAX_PAGES > PAGE ? (n + MAX_PAGES - 1) / MAX_PAGES : PAGE;
    }
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

static int group_teardown(void **state)
{
    fixture *fx = *state;
    if (!fx) return 0;
    cp_reader_close(fx->rd);
    cp_catalog_close(fx->cat);
    /* S3: the objects under the run's prefix (a directory store goes with the directory) */
    cp_buf keys;
    cp_buf_init(&keys);
    char err[256];
    if (fx->store && fx->store->ops->list(fx->store, "", on_key, &keys, err, sizeof err) == CP_OK)
        for (size_t o = 0; o < keys.len; o += strlen((const char *)keys.data + o) + 1)
            fx->store->ops->del(fx->store, (const char *)keys.data + o, err, sizeof err);
    cp_buf_free(&keys);
    cp_ostore_close(fx->store);
    for (size_t i = 0; i < NFILTERS; i++) cp_search_free(fx->qf[i].search);
    for (size_t i = 0; i < NWALKS; i++) {
        free(fx->base[i].rows);
        free(fx->base[i].pages);
    }
    remove_tree(fx->dir);
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

/* ---- describing rows ----------------------------------------------------------------------- */

/* The first field in which got differs from want (trace: search rows carry none), or NULL. */
static const char *call_diff(const cp_call *w, const cp_call *g)
{
#define NUM(f)                                                                                                         \
    if (g->f != w->f) return #f;
#define STR(f)                                                                                                         \
    if (g->f##_len != w->f##_len || (w->f##_len && memcmp(g->f, w->f, w->f##_len))) return #f;
    NUM(ts_ms) NUM(duration_ms) NUM(cpu_time) NUM(wait_time) NUM(memory_used) NUM(non_blocking) NUM(queue_wait_ms)
    NUM(suspend_ms) NUM(calls) NUM(transactions) NUM(logs_generated) NUM(logs_written) NUM(file_read)
    NUM(file_written) NUM(net_read) NUM(net_written) STR(ns) STR(service) STR(pod) NUM(restart_ms) NUM(method_id)
    STR(method) STR(thread) STR(params_json) NUM(error) NUM(sql) NUM(trace_file_index) NUM(buffer_offset) NUM(record_index)
#undef NUM
#undef STR
    if (g->trace) return "trace";
    if (!w->trace_reason != !g->trace_reason || (w->trace_reason && strcmp(w->trace_reason, g->trace_reason)))
        return "trace_reason";
    return NULL;
}

static void call_dump(const cp_call *c, cp_buf *b)
{
    cp_buf_printf(b,
                  "{ts %lld dur %d cpu %lld wait %lld mem %lld nb %lld queue %d susp %d calls %d tx %lld logs %d/%d"
                  " file %lld/%lld net %lld/%lld ns '%.*s' svc '%.*s' pod '%.*s' restart %lld method %d '%.*s'"
                  " thread '%.*s' params %.*s error %d ref %d/%d/%d trace %s reason %s}",
                  (long long)c->ts_ms, c->duration_ms, (long long)c->cpu_time, (long long)c->wait_time,
                  (long long)c->memory_used, (long long)c->non_blocking, c->queue_wait_ms, c->suspend_ms, c->calls,
                  (long long)c->transactions, c->logs_generated, c->logs_written, (long long)c->file_read,
                  (long long)c->file_written, (long long)c->net_read, (long long)c->net_written, (int)c->ns_len,
                  c->ns, (int)c->service_len, c->service, (int)c->pod_len, c->pod, (long long)c->restart_ms,
                  c->method_id, (int)c->method_len, c->method, (int)c->thread_len, c->thread,
                  (int)c->params_json_len, c->params_json, c->error, c->trace_file_index, c->buffer_offset,
                  c->record_index, c->trace ? "yes" : "no", c->trace_reason ? c->trace_reason : "-");
}

/* "<id> <col>=<value>" of a data set call. */
static void row_desc(const fixture *fx, uint32_t i, cp_sort_col col, char *out, size_t n)
{
    const cp_call *c = &fx->calls[i].c;
    size_t tl;
    const char *t = cp_call_sort_text(c, col, &tl);
    if (t)
        snprintf(out, n, "%s %s='%.*s'", fx->calls[i].id, cp_sort_name(col), (int)(tl > 40 ? 40 : tl), t);
    else
        snprintf(out, n, "%s %s=%lld", fx->calls[i].id, cp_sort_name(col), (long long)cp_call_sort_num(c, col));
}

static int key_equal(const cp_sort_key *a, const cp_sort_key *b)
{
    return a->col == b->col && !a->desc == !b->desc && a->num == b->num && a->text_len == b->text_len &&
           !memcmp(a->text, b->text, a->text_len) && ref_cmp(&a->ref, &b->ref) == 0;
}

static void key_desc(const cp_sort_key *k, char *out, size_t n)
{
    char id[CP_CALL_ID_MAX];
    cp_call_id_format(&k->ref, id);
    if (cp_sort_is_text(k->col))
        snprintf(out, n, "{%s%s '%.*s' after %s}", k->desc ? "-" : "", cp_sort_name(k->col),
                 (int)(k->text_len > 40 ? 40 : k->text_len), k->text, id);
    else
        snprintf(out, n, "{%s%s %lld after %s}", k->desc ? "-" : "", cp_sort_name(k->col), (long long)k->num, id);
}

/* ---- walking the pages ----------------------------------------------------------------------- */

typedef struct walkctx {
    const fixture *fx;
    walk *w;
    cp_sort_col col;
    int desc;
    size_t page_rows;
    cp_sort_key last;
    char err[8192];             /* the first problem (no cmocka jump out of the reader's callback) */
} walkctx;

static int on_row(void *ud, const cp_call *c)
{
    walkctx *x = ud;
    cp_call_ref r;
    cp_call_ref_of(c, &r);
    char id[CP_CALL_ID_MAX];
    cp_call_id_format(&r, id);
    long i = find_call(x->fx, &r);
    if (i < 0) {
        if (!x->err[0])
            snprintf(x->err, sizeof x->err, "row %zu of the page: call id %s is not in the data set", x->page_rows, id);
        return 0;
    }
    const tcall *t = &x->fx->calls[i];
    const char *d = call_diff(&t->c, c);
    if (d && !x->err[0]) {
        cp_buf b;
        cp_buf_init(&b);
        cp_buf_printf(&b, "row %zu of the page: call %s differs in %s\n  got  ", x->page_rows, id, d);
        call_dump(c, &b);
        cp_buf_puts(&b, "\n  want ");
        call_dump(&t->c, &b);
        cp_buf_putc(&b, 0);
        snprintf(x->err, sizeof x->err, "%s", (const char *)b.data);
        cp_buf_free(&b);
    }
    if (strcmp(id, t->id) && !x->err[0]) snprintf(x->err, sizeof x->err, "call id %s, the data set's %s", id, t->id);
    walk *w = x->w;
    if (w->nrows == w->caprows) {
        w->caprows = w->caprows ? w->caprows * 2 : 256;
        w->rows = realloc(w->rows, w->caprows * sizeof *w->rows);
    }
    w->rows[w->nrows++] = (uint32_t)i;
    x->page_rows++;
    cp_sort_key_of(c, x->col, x->desc, &x->last);
    return 0;
}

static const char *g_state = "";

/* Both pages side by side. */
/* cmocka cuts its messages short: the details go to stdout first. */
static void fail_long(const char *head, const char *detail)
{
    printf("%s\n%s\n", head, detail);
    fflush(stdout);
    fail_msg("%s (details above)", head);
}

/* The context of a walk's failure: pair, state, sort, filter, page. */
static void walk_head(char *out, size_t n, cp_sort_col col, int desc, size_t fi, size_t page, const char *what)
{
    snprintf(out, n, "[%s] state '%s', sort=%s%s, filter '%s', page %zu: %s", test_pair_name(), g_state,
             desc ? "-" : "", cp_sort_name(col), fdefs[fi].name, page, what);
}

static void fail_page(const fixture *fx, cp_sort_col col, int desc, size_t fi, size_t page, const walk *got,
                      const wpage *gp, const walk *want, const wpage *wp, const char *what)
{
    char head[600];
    walk_head(head, sizeof head, col, desc, fi, page, what);
    cp_buf b;
    cp_buf_init(&b);
    char kd[256];
    if (gp) {
        key_desc(&gp->key, kd, sizeof kd);
        cp_buf_printf(&b, "  got  %u rows, more %d, cursor key %s\n", gp->n, gp->more, kd);
    }
    if (wp) {
        key_desc(&wp->key, kd, sizeof kd);
        cp_buf_printf(&b, "  want %u rows, more %d, cursor key %s\n", wp->n, wp->more, kd);
    }
    /* the rows around the first difference ('!' = not the same call) */
    size_t n = 0, first = SIZE_MAX, ndiff = 0;
    if (gp && gp->n > n) n = gp->n;
    if (wp && wp->n > n) n = wp->n;
    for (size_t k = 0; k < n; k++) {
        int same = gp && wp && k < gp->n && k < wp->n && got->rows[gp->first + k] == want->rows[wp->first + k];
        if (!same) ndiff++;
        if (!same && first == SIZE_MAX) first = k;
    }
    cp_buf_printf(&b, "  %zu of %zu row positions differ; from row %zu of the page:\n", ndiff, n,
                  first == SIZE_MAX ? 0 : first);
    size_t from = first == SIZE_MAX || first < 3 ? 0 : first - 3;
    for (size_t k = from; k < n && k < from + 14; k++) {
        char a[160] = "-", c[160] = "-";
        int same = gp && wp && k < gp->n && k < wp->n && got->rows[gp->first + k] == want->rows[wp->first + k];
        if (gp && k < gp->n) row_desc(fx, got->rows[gp->first + k], col, a, sizeof a);
        if (wp && k < wp->n) row_desc(fx, want->rows[wp->first + k], col, c, sizeof c);
        cp_buf_printf(&b, "  %s %3zu got %-72s want %s\n", same ? " " : "!", k, a, c);
    }
    cp_buf_putc(&b, 0);
    fail_long(head, (const char *)b.data);
}

/* One walk of (col, desc, filter fi) from the page after `start` (NULL: the first page):
 * every page into *out; with `want`, each page is compared with want's page
 * want_first + k at once. Each page continues after the previous page's last row: by the
 * cursor this walk issued, or with hot_cursors by the one want issued (parsed from its
 * text, as the API receives it); the two carry the same key (checked). Returns the
 * number of pages. */
static size_t walk_run(const fixture *fx, cp_reader *rd, cp_sort_col col, int desc, size_t fi,
                       const cp_sort_key *start, walk *out, const walk *want, size_t want_first, int hot_cursors)
{
    cp_call_filter f = fx->qf[fi].f;
    f.sort = col;
    f.desc = desc;
    f.limit = fx->limit[fi];
    cp_sort_key after;
    if (start) after = *start, f.after = &after;
    memset(out, 0, sizeof *out);
    walkctx x;
    memset(&x, 0, sizeof x);
    x.fx = fx;
    x.w = out;
    x.col = col;
    x.desc = desc;
    for (size_t page = 0;; page++) {
        if (page > fx->n / f.limit + 2)
            fail_page(fx, col, desc, fi, page, out, NULL, NULL, NULL, "the walk does not end");
        size_t first = out->nrows;
        x.page_rows = 0;
        cp_search_stats st;
        memset(&st, 0, sizeof st);
        int rc = cp_reader_search(rd, &f, on_row, &x, &st);
        if (rc != CP_OK)
            fail_msg("[%s] state '%s', sort=%s%s, filter '%s', page %zu: search failed: %d %s", test_pair_name(),
                     g_state, desc ? "-" : "", cp_sort_name(col), fdefs[fi].name, page, rc, cp_reader_errmsg(rd));
        if (x.err[0]) {
            char head[600];
            walk_head(head, sizeof head, col, desc, fi, page, "a row differs from the data set's call");
            fail_long(head, x.err);
        }
        if (st.partial)
            fail_msg("[%s] state '%s', sort=%s%s, filter '%s', page %zu: partial (scanned %llu)", test_pair_name(),
                     g_state, desc ? "-" : "", cp_sort_name(col), fdefs[fi].name, page,
                     (unsigned long long)st.scanned);
        out->cold_files += st.cold_files;
        out->cold_skipped += st.cold_skipped;
        if (out->npages == out->cappages) {
            out->cappages = out->cappages ? out->cappages * 2 : 16;
            out->pages = realloc(out->pages, out->cappages * sizeof *out->pages);
        }
        wpage *p = &out->pages[out->npages++];
        memset(p, 0, sizeof *p);
        p->first = (uint32_t)first;
        p->n = (uint32_t)(out->nrows - first);
        p->more = st.more;
        if (p->n) {
            /* the cursor as the API issues it, and what a client sending it back asks for */
            cp_cursor cur;
            memset(&cur, 0, sizeof cur);
            cur.filter_hash = 0x5eed0000u + fi;
            cur.issued_ms = T0;
            cur.key = x.last;
            cp_cursor_format(&cur, p->cursor);
            cp_cursor back;
            assert_int_equal(cp_cursor_parse(p->cursor, strlen(p->cursor), &back), CP_OK);
            if (!key_equal(&back.key, &x.last)) fail_msg("the cursor does not give its key back");
            p->key = back.key;
        }
        if (want) {
            size_t wi = want_first + out->npages - 1;
            const wpage *wp = wi < want->npages ? &want->pages[wi] : NULL;
            if (!wp) fail_page(fx, col, desc, fi, wi, out, p, NULL, NULL, "a page the baseline does not have");
            int same = p->n == wp->n && p->more == wp->more &&
                       (!p->n || !memcmp(out->rows + p->first, want->rows + wp->first, p->n * sizeof *out->rows));
            if (!same) fail_page(fx, col, desc, fi, wi, out, p, want, wp, "rows or more differ from the baseline");
            if (p->n && (strcmp(p->cursor, wp->cursor) || !key_equal(&p->key, &wp->key)))
                fail_page(fx, col, desc, fi, wi, out, p, want, wp, "the cursor differs from the baseline");
        }
        if (!st.more) break;
        if (p->n == 0) fail_page(fx, col, desc, fi, page, out, p, NULL, NULL, "more is set on an empty page");
        after = p->key;
        if (want && hot_cursors) {
            const char *text = want->pages[want_first + out->npages - 1].cursor;
            cp_cursor cur;
            assert_int_equal(cp_cursor_parse(text, strlen(text), &cur), CP_OK);
            after = cur.key;
        }
        f.after = &after;
    }
    if (want && want_first + out->npages != want->npages)
        fail_page(fx, col, desc, fi, want_first + out->npages, out, NULL, want,
                  want_first + out->npages < want->npages ? &want->pages[want_first + out->npages] : NULL,
                  "the walk ends before the baseline");
    return out->npages;
}

/* ---- the reference: filter and order in plain C -------------------------------------------------- */

static int cmp64(int64_t a, int64_t b) { return (a > b) - (a < b); }

typedef struct order {
    const fixture *fx;
    cp_sort_col col;
    int desc;
} order;

static int ref_order(const void *pa, const void *pb, void *ud)
{
    const order *o = ud;
    const cp_call *a = &o->fx->calls[*(const uint32_t *)pa].c, *b = &o->fx->calls[*(const uint32_t *)pb].c;
    int c;
    if (cp_sort_is_text(o->col)) {
        size_t la, lb;
        const char *ta = cp_call_sort_text(a, o->col, &la), *tb = cp_call_sort_text(b, o->col, &lb);
        c = memcmp(ta, tb, la < lb ? la : lb);
        c = c ? (c > 0) - (c < 0) : cmp64((int64_t)la, (int64_t)lb);
    } else {
        c = cmp64(cp_call_sort_num(a, o->col), cp_call_sort_num(b, o->col));
    }
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

static int str_is(const char *s, size_t n, const char *want)
{
    return !want || (strlen(want) == n && !memcmp(s, want, n));
}

static int ref_selects(const qfilter *q, const cp_call *c)
{
    const cp_call_filter *f = &q->f;
    if (c->ts_ms < f->from_ms || c->ts_ms >= f->to_ms) return 0;
    if (!str_is(c->ns, c->ns_len, f->ns) || !str_is(c->service, c->service_len, f->service) ||
        !str_is(c->pod, c->pod_len, f->pod))
        return 0;
    if (c->duration_ms < f->min_duration_ms || c->duration_ms > f->max_duration_ms) return 0;
    if (f->errors_only && !c->error) return 0;
    if (f->method_substr && !ci_has(c->method, c->method_len, f->method_substr)) return 0;
    if (q->search) {
        cp_call_view v = {c->method, c->method_len, c->pod, c->pod_len, c->params_json, c->params_json_len};
        if (!cp_search_match(q->search, &v)) return 0;
    }
    return 1;
}

static size_t reference(const fixture *fx, cp_sort_col col, int desc, size_t fi, uint32_t **out)
{
    uint32_t *v = calloc(fx->n + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < fx->n; i++)
        if (ref_selects(&fx->qf[fi], &fx->calls[i].c)) v[n++] = (uint32_t)i;
    order o = {fx, col, desc};
    qsort_r(v, n, sizeof *v, ref_order, &o);
    *out = v;
    return n;
}

/* ---- running the compactor ------------------------------------------------------------------ */

static void progress(void *ud, const char *line)
{
    (void)ud;
    printf("  %s\n", line);
}

static void compact(const fixture *fx, int64_t until, const cp_pq_writer_opts *pq, cp_compact_stats *st)
{
    cp_catalog *cat = NULL; /* the compactor's own connection */
    char err[1024];
    if (cp_catalog_open(fx->spec, &cat, err, sizeof err) != CP_OK) fail_msg("compactor catalog: %s", err);
    cp_compactor_config cfg = {.cat = cat,
                               .store = fx->store,
                               .tmp_dir = fx->tmp,
                               .node = "hotcold-pages-test",
                               .lease_ms = CP_COMPACT_LEASE_MS,
                               .pq = pq,
                               .progress = progress};
    int rc = cp_compact_run(&cfg, until, cp_now_ms(), 0, st, err, sizeof err);
    cp_catalog_close(cat);
    if (rc != CP_OK) fail_msg("compact until %lld: %d %s", (long long)until, rc, err);
    printf("compacted %llu claims: %llu windows, %llu calls -> %llu files, %llu index rows\n",
           (unsigned long long)st->claims, (unsigned long long)st->windows, (unsigned long long)st->calls,
           (unsigned long long)st->files, (unsigned long long)st->index_rows);
}

/* Calls the hot tier alone still answers. */
static size_t hot_count(const fixture *fx)
{
    cp_reader *hot;
    char err[512];
    if (cp_reader_open(fx->spec, &hot, err, sizeof err) != CP_OK) fail_msg("open reader: %s", err);
    walk w;
    memset(&w, 0, sizeof w);
    walkctx x;
    memset(&x, 0, sizeof x);
    x.fx = fx;
    x.w = &w;
    cp_call_filter f = fx->qf[0].f;
    f.sort = CP_SORT_TS;
    f.limit = fx->n + 1;
    f.max_scan = 0;
    cp_search_stats st;
    if (cp_reader_search(hot, &f, on_row, &x, &st) != CP_OK) fail_msg("hot search: %s", cp_reader_errmsg(hot));
    if (x.err[0]) fail_long("hot search", x.err);
    cp_reader_close(hot);
    free(w.rows);
    return w.nrows;
}

typedef struct cold_count {
    size_t files, rows;
} cold_count;

static int on_cold_file(void *ud, const struct cp_cold_file *f)
{
    cold_count *c = ud;
    c->files++;
    c->rows += (size_t)f->rows;
    return 0;
}

static cold_count cold_files(const fixture *fx)
{
    cold_count c = {0, 0};
    cp_cold_query q = {T0 - HOUR_MS, T0 + 4 * HOUR_MS, NULL, 0, INT64_MAX, NULL, 0, NULL};
    assert_int_equal(cp_reader_cold_files(fx->rd, &q, on_cold_file, &c, NULL), CP_OK);
    return c;
}

/* Every walk again, each page compared with the baseline's at once. */
static void rewalk_all(fixture *fx, cp_reader *rd, int hot_cursors, size_t *pages, size_t *cold_read,
                       size_t *skipped_param)
{
    assert_true(fx->have_base);
    *pages = *cold_read = *skipped_param = 0;
    for (int col = 0; col < CP_SORT_COUNT; col++)
        for (int desc = 0; desc < 2; desc++)
            for (size_t fi = 0; fi < NFILTERS; fi++) {
                if (!walk_selected(col, desc, fi)) continue;
                walk w;
                const walk *b = &fx->base[walk_index(col, desc, fi)];
                *pages += walk_run(fx, rd, (cp_sort_col)col, desc, fi, NULL, &w, b, 0, hot_cursors);
                *cold_read += w.cold_files;
                if (fdefs[fi].q && fdefs[fi].q[0] == '$') *skipped_param += w.cold_skipped;
                free(w.rows);
                free(w.pages);
            }
}

static double secs_since(const struct timespec *t0)
{
    struct timespec t1;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/* ---- the tests -------------------------------------------------------------------------------- */

/* The data set has what the walks are meant to exercise. */
static void test_data_set(void **state)
{
    fixture *fx = *state;
    int ranges[CP_COLD_RANGES] = {0};
    size_t zero = 0, long_ = 0, errors = 0, tied_ts = 0, edges = 0, hour[3] = {0, 0, 0};
    for (size_t i = 0; i < fx->n; i++) {
        const cp_call *c = &fx->calls[i].c;
        ranges[cp_cold_range_of(c->duration_ms)]++;
        zero += c->duration_ms == 0;
        long_ += c->duration_ms > 90000;
        errors += c->error;
        edges += (c->ts_ms - T0) % (5 * MIN_MS) == 0 || (c->ts_ms - T0 + 1) % (5 * MIN_MS) == 0;
        hour[(c->ts_ms - T0) / HOUR_MS < 3 ? (c->ts_ms - T0) / HOUR_MS : 2]++;
    }
    for (int r = 0; r < CP_COLD_RANGES; r++) assert_true(ranges[r] > 20);
    assert_true(zero > 50 && long_ > 50 && errors > 300 && edges > 100);
    assert_true(hour[0] > 1000 && hour[1] > 1000 && hour[2] > 400);
    /* ties on the time alone: sort by ts, then the equal times by the ref */
    uint32_t *v;
    size_t n = reference(fx, CP_SORT_TS, 1, 0, &v);
    assert_int_equal(n, fx->n);
    for (size_t i = 0; i + 1 < n; i++) tied_ts += fx->calls[v[i]].c.ts_ms == fx->calls[v[i + 1]].c.ts_ms;
    free(v);
    assert_true(tied_ts > 1000);
    /* pod hashes of both signs: the tie-break compares them as signed 64-bit numbers */
    int sign[2] = {0, 0};
    for (size_t i = 0; i < NPODS; i++) {
        const cp_catalog_pod *p = &pods[i].p;
        sign[cp_pod_hash(p->ns, strlen(p->ns), p->pod, strlen(p->pod)) >> 63] = 1;
    }
    assert_true(sign[0] && sign[1]);
    /* every filter selects some calls but not all (the first selects all, the last none) */
    for (size_t fi = 0; fi < NFILTERS; fi++) {
        n = reference(fx, CP_SORT_TS, 1, fi, &v);
        free(v);
        printf("filter %-40.40s %4zu calls\n", fdefs[fi].name, n);
        if (fi == 0) assert_int_equal(n, fx->n);
        else if (fi == EMPTY_FILTER) assert_int_equal(n, 0);
        else assert_true(n > 0 && n < fx->n);
        assert_true(n <= fx->limit[fi] * MAX_PAGES);
    }
    assert_int_equal(hot_count(fx), fx->n);
}

/* 1. All hot: the baseline, each walk equal to the reference. */
static void test_hot_baseline(void **state)
{
    fixture *fx = *state;
    g_state = "all hot";
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t pages = 0, walks = 0;
    for (int col = 0; col < CP_SORT_COUNT; col++)
        for (int desc = 0; desc < 2; desc++)
            for (size_t fi = 0; fi < NFILTERS; fi++) {
                if (!walk_selected(col, desc, fi)) continue;
                walks++;
                walk *w = &fx->base[walk_index(col, desc, fi)];
                pages += walk_run(fx, fx->rd, (cp_sort_col)col, desc, fi, NULL, w, NULL, 0, 0);
                uint32_t *want;
                size_t n = reference(fx, (cp_sort_col)col, desc, fi, &want);
                /* full pages but the last, more on all but the last */
                for (size_t p = 0; p < w->npages; p++) {
                    int last = p + 1 == w->npages;
                    size_t lim = fx->limit[fi];
                    if (w->pages[p].more != !last || (!last && w->pages[p].n != lim) || w->pages[p].n > lim)
                        fail_msg("all hot, sort=%s%s, filter '%s': page %zu of %zu has %u rows, more %d",
                                 desc ? "-" : "", cp_sort_name((cp_sort_col)col), fdefs[fi].name, p, w->npages,
                                 w->pages[p].n, w->pages[p].more);
                }
                for (size_t k = 0; k < n || k < w->nrows; k++) {
                    if (k < n && k < w->nrows && w->rows[k] == want[k]) continue;
                    char a[160] = "(none)", b[160] = "(none)";
                    if (k < w->nrows) row_desc(fx, w->rows[k], (cp_sort_col)col, a, sizeof a);
                    if (k < n) row_desc(fx, want[k], (cp_sort_col)col, b, sizeof b);
                    fail_msg("[%s] all hot, sort=%s%s, filter '%s': row %zu (page %zu) is %s, the reference's %s"
                             " (%zu rows, reference %zu)",
                             test_pair_name(), desc ? "-" : "", cp_sort_name((cp_sort_col)col), fdefs[fi].name, k,
                             k / fx->limit[fi], a, b, w->nrows, n);
                }
                free(want);
            }
    fx->have_base = 1;
    printf("[%s] all hot: %zu walks, %zu pages in %.1f s\n", test_pair_name(), walks, pages, secs_since(&t0));
    assert_true(walks >= CP_SORT_COUNT * 2);
}

/* 2. Some hours cold, the others hot. */
static void test_mixed_equals_hot(void **state)
{
    fixture *fx = *state;
    assert_true(fx->have_base);
    /* small row groups and pages: the cold search skips row groups by their statistics */
    cp_pq_writer_opts pq;
    memset(&pq, 0, sizeof pq);
    pq.row_group_rows = 64;
    pq.page_rows = 16;
    cp_compact_stats cs;
    compact(fx, MIXED_UNTIL, &pq, &cs);
    assert_true(cs.claims >= 2); /* hour 12, and 13:00..13:20 */
    size_t want_hot = 0;
    for (size_t i = 0; i < fx->n; i++) want_hot += fx->calls[i].c.ts_ms >= MIXED_UNTIL;
    assert_int_equal(cs.calls, fx->n - want_hot);
    fx->hot_after_mixed = hot_count(fx);
    assert_int_equal(fx->hot_after_mixed, want_hot);
    cold_count cc = cold_files(fx);
    assert_int_equal(cc.rows, fx->n - want_hot);
    assert_true(cc.files > 16);

    g_state = "mixed: hot from 13:20";
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t pages, cold_read, skipped;
    rewalk_all(fx, fx->rd, 0, &pages, &cold_read, &skipped);
    printf("[%s] mixed (%zu cold files, %zu calls hot): %zu pages equal to all hot in %.1f s, %zu file reads,"
           " %zu skipped by the index\n",
           test_pair_name(), cc.files, want_hot, pages, secs_since(&t0), cold_read, skipped);
    assert_true(cold_read > 0);
    assert_true(skipped > 0);
}

/* 3. Everything cold. */
static void test_cold_equals_hot(void **state)
{
    fixture *fx = *state;
    assert_true(fx->have_base);
    cp_compact_stats cs;
    compact(fx, T0 + 400 * 24 * HOUR_MS, NULL, &cs);
    assert_int_equal(cs.calls, fx->hot_after_mixed);
    assert_int_equal(hot_count(fx), 0);
    cold_count cc = cold_files(fx);
    assert_int_equal(cc.rows, fx->n);

    g_state = "all cold";
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t pages, cold_read, skipped;
    rewalk_all(fx, fx->rd, 1, &pages, &cold_read, &skipped);
    printf("[%s] all cold (%zu files): %zu pages equal to all hot in %.1f s, %zu file reads, %zu skipped by the"
           " index\n",
           test_pair_name(), cc.files, pages, secs_since(&t0), cold_read, skipped);
    assert_true(skipped > 0);
}

/* 4. A client that got a cursor before any compaction comes back when everything is cold,
 * to a reader of its own: from the middle of a walk it pages on with the cursors the cold
 * pages give, and gets the rest of the baseline. (3. sent every page's hot cursor; here
 * the walk goes on by itself.) Every sort and direction, with no filter and with one
 * other filter set in turn. */
static void test_hot_cursors_on_cold(void **state)
{
    fixture *fx = *state;
    assert_true(fx->have_base);
    assert_int_equal(hot_count(fx), 0);
    cp_reader *rd = open_tiered(fx);
    g_state = "all cold, hot cursors";
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    size_t pages = 0, walks = 0;
    for (int col = 0; col < CP_SORT_COUNT; col++)
        for (int desc = 0; desc < 2; desc++)
            for (size_t fi = 0; fi < NFILTERS; fi++) {
                if (!walk_selected(col, desc, fi)) continue;
                if (!test_quick() && fi != 0 && fi != other_filter(col, desc)) continue;
                const walk *b = &fx->base[walk_index(col, desc, fi)];
                if (b->npages < 2) continue;
                size_t from = b->npages / 2; /* continue after page from - 1 */
                cp_cursor cur;
                const char *text = b->pages[from - 1].cursor;
                assert_int_equal(cp_cursor_parse(text, strlen(text), &cur), CP_OK);
                walk w;
                pages += walk_run(fx, rd, (cp_sort_col)col, desc, fi, &cur.key, &w, b, from, 0);
                walks++;
                free(w.rows);
                free(w.pages);
            }
    cp_reader_close(rd);
    printf("[%s] %zu hot cursors continued on cold data: %zu pages equal to the baseline in %.1f s\n",
           test_pair_name(), walks, pages, secs_since(&t0));
    assert_true(walks > test_scaled(CP_SORT_COUNT * 2, CP_SORT_COUNT)); /* (walks of one page have no cursor) */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_data_set),
        cmocka_unit_test(test_hot_baseline),
        cmocka_unit_test(test_mixed_equals_hot),
        cmocka_unit_test(test_cold_equals_hot),
        cmocka_unit_test(test_hot_cursors_on_cold),
    };
    test_pair_require();
    return cmocka_run_group_tests_name(test_pair_name(), tests, group_setup, group_teardown);
}
