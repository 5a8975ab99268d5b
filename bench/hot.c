/* hot.c -- the hot tier on SQLite: insert rate and query latency (bench_hot).
 *
 * Insert: N calls (default 10 000 000; --quick 1 000 000) through cp_catalog_call_put into
 * a fresh catalog, committed every --commit rows (default 10 000, a busy loop iteration),
 * timed on the calling thread (wall clock and the thread's CPU time). The data: 50 pods
 * (5 namespaces, 10 services) over one hour (--minutes) = 12 windows of 5 minutes
 * (prepared ahead, as the server does), time rising with up to 2 s of per-pod skew,
 * durations log-normal (median 5 ms, 0.4 % above 1 s), 4 params (~130 bytes of JSON), a
 * 250..350-byte trace blob per call, 2 % errors. Field values come from pools built
 * before the clock starts, so the figure is the catalog's cost. As in the server, a
 * second thread runs cp_catalog_maintain() (the WAL checkpoint) every 2 s; scripts/
 * bench.sh pins the process to one core, so that thread's work competes with the writer.
 * A writer that never pauses keeps the WAL from starting over (catalog_sqlite.c
 * sq_maintain), so the WAL grows by every call until the catalog is closed: the report
 * shows its size.
 *
 * Query: a reader on the same file (as the HTTP server would have) runs each search
 * --runs times (default 20; fewer once a search has taken 15 s, at least 3) and reports
 * the median and p95 latency, rows returned, windows queried and rows scanned (rows
 * through cp_match when the search has a predicate, else rows read from the windows).
 *
 * usage: bench_hot [--rows N] [--quick] [--commit N] [--runs N] [--minutes M] [--dir DIR]
 *                  [--keep] [--json] [--insert-only]
 *   --dir   where the temporary data directory goes (default $TMPDIR or /tmp); 10M rows
 *           take about 17 GB at the peak (7.3 GB catalog + the WAL)
 * Exit status 1 if a catalog call fails, 2 on bad usage.
 */
#include "common/cp_common.h"
#include "store/cp_catalog.h"
#include "store/cp_hot.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define T0 1767268800000LL /* 2026-01-01 12:00 UTC */
#define HOUR_MS 3600000LL
#define NPODS 50
#define POOL 4096
#define NMETHODS 300
#define NTHREADS 200
#define NUSERS 100000
#define NRESOURCES 100

typedef struct opts {
    uint64_t rows, commit, runs, minutes;
    const char *dir;
    int keep, json, insert_only;
} opts;

/* ---- data -------------------------------------------------------------------------------------- */

typedef struct pools {
    char ns[NPODS][16], svc[NPODS][32], pod[NPODS][48], pod_id[NPODS][64];
    int64_t restart[NPODS];
    char method[NMETHODS][96];
    char thread[NTHREADS][32];
    char params[POOL][192];
    size_t params_len[POOL];
    int error[POOL];
    uint8_t blob[1 << 20];
} pools;

static uint64_t rnd(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static double unit(uint64_t *s) { return (double)(rnd(s) >> 11) / 9007199254740992.0; }

/* Log-normal duration: median 5 ms, sigma 2 (e-base), capped at 5 minutes. */
static int32_t duration(uint64_t *s)
{
    double u1 = unit(s), u2 = unit(s);
    if (u1 < 1e-12) u1 = 1e-12;
    double z = sqrt(-2.0 * log(u1)) * cos(2 * M_PI * u2);
    double d = exp(log(5.0) + 2.0 * z);
    return d > 300000 ? 300000 : (int32_t)d;
}

static void pools_init(pools *p, uint64_t *s)
{
    for (int i = 0; i < NPODS; i++) {
        snprintf(p->ns[i], sizeof p->ns[i], "ns-%d", i % 5);
        snprintf(p->svc[i], sizeof p->svc[i], "service-%d", i % 10);
        snprintf(p->pod[i], sizeof p->pod[i], "service-%d-7f9c4b%02d-x%d", i % 10, i, i % 3);
        snprintf(p->pod_id[i], sizeof p->pod_id[i], "%s/%s", p->ns[i], p->pod[i]);
        p->restart[i] = T0 - 86400000LL + i * 1000;
    }
    for (int i = 0; i < NMETHODS; i++)
        snprintf(p->method[i], sizeof p->method[i], "com.acme.svc%d.Handler%d.process%d(Ljava/lang/String;)V", i % 10,
                 i / 10, i % 7);
    for (int i = 0; i < NTHREADS; i++) snprintf(p->thread[i], sizeof p->thread[i], "http-nio-8080-exec-%d", i);
    for (int i = 0; i < POOL; i++) {
        p->error[i] = rnd(s) % 50 == 0;
        int n = snprintf(p->params[i], sizeof p->params[i],
                         "{\"_thread.state\":[\"RUNNABLE\"],%s\"endpoint\":[\"/api/v1/res%u/%u\"],"
                         "\"request.id\":[\"%016llx\"],\"user.id\":[\"user-%u\"]}",
                         p->error[i] ? "\"call.red\":[\"1\"]," : "", (unsigned)(rnd(s) % NRESOURCES),
                         (unsigned)(rnd(s) % 100000), (unsigned long long)rnd(s), (unsigned)(rnd(s) % NUSERS));
        p->params_len[i] = (size_t)n;
    }
    for (size_t i = 0; i < sizeof p->blob; i++) p->blob[i] = (uint8_t)(rnd(s) >> 13);
}

/* Call i of n: time rises over the hour, each pod a little off. */
static void make_call(const pools *p, uint64_t i, uint64_t n, int64_t span_ms, uint64_t *s, int32_t *seq, cp_call *c)
{
    int k = (int)(rnd(s) % NPODS);
    int pi = (int)(rnd(s) % POOL);
    memset(c, 0, sizeof *c);
    int64_t ts = T0 + (int64_t)((double)i / (double)n * (double)(span_ms - 3000)) + (k * 37) % 2000;
    c->ts_ms = ts;
    c->duration_ms = duration(s);
    c->cpu_time = c->duration_ms * (int64_t)(rnd(s) % 1000);
    c->wait_time = (int64_t)(rnd(s) % 50);
    c->memory_used = (int64_t)(rnd(s) % (64u << 20));
    c->queue_wait_ms = (int32_t)(rnd(s) % 3);
    c->suspend_ms = (int32_t)(rnd(s) % 100 == 0 ? rnd(s) % 200 : 0);
    c->calls = (int32_t)(rnd(s) % 40);
    c->transactions = (int64_t)(rnd(s) % 5);
    c->logs_generated = (int32_t)(rnd(s) % 10);
    c->logs_written = c->logs_generated / 2;
    c->file_read = (int64_t)(rnd(s) % 100000);
    c->file_written = (int64_t)(rnd(s) % 10000);
    c->net_read = (int64_t)(rnd(s) % 1000000);
    c->net_written = (int64_t)(rnd(s) % 1000000);
    c->ns = p->ns[k], c->ns_len = strlen(p->ns[k]);
    c->service = p->svc[k], c->service_len = strlen(p->svc[k]);
    c->pod = p->pod[k], c->pod_len = strlen(p->pod[k]);
    c->restart_ms = p->restart[k];
    c->method_id = (int32_t)(rnd(s) % NMETHODS);
    c->method = p->method[c->method_id], c->method_len = strlen(c->method);
    const char *th = p->thread[rnd(s) % NTHREADS];
    c->thread = th, c->thread_len = strlen(th);
    c->params_json = p->params[pi], c->params_json_len = p->params_len[pi];
    c->error = p->error[pi];
    c->trace_file_index = 1;
    c->record_index = seq[k]++;
    c->buffer_offset = c->record_index * 40;
    size_t len = 250 + rnd(s) % 100;
    c->trace = p->blob + rnd(s) % (sizeof p->blob - len), c->trace_len = len;
}

/* ---- checkpoints on a second thread (as the server) ----------------------------------------------- */

typedef struct ckpt {
    cp_catalog *cat;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stop;
    int runs;
} ckpt;

static void *ckpt_main(void *arg)
{
    ckpt *k = arg;
    pthread_mutex_lock(&k->mu);
    while (!k->stop) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_sec += 2;
        pthread_cond_timedwait(&k->cv, &k->mu, &t);
        if (k->stop) break;
        pthread_mutex_unlock(&k->mu);
        (void)cp_catalog_maintain(k->cat);
        pthread_mutex_lock(&k->mu);
        k->runs++;
    }
    pthread_mutex_unlock(&k->mu);
    return NULL;
}

/* ---- insert phase -------------------------------------------------------------------------------- */

static double now_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

typedef struct insert_result {
    double wall_s, cpu_s, rate, cpu_rate;
    uint64_t bytes_db, bytes_wal;
    int checkpoints;
} insert_result;

static uint64_t file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

static int insert_all(const opts *o, const pools *p, const char *db, insert_result *res)
{
    char err[512];
    cp_catalog *cat;
    if (cp_catalog_open_sqlite(db, &cat, err, sizeof err) != CP_OK) {
        fprintf(stderr, "bench_hot: %s\n", err);
        return 1;
    }
    int st = cp_catalog_set_windows(cat, 5 * 60000, 3 * HOUR_MS);
    for (int k = 0; st == CP_OK && k < NPODS; k++) {
        cp_catalog_pod pod = {p->ns[k], p->svc[k], p->pod[k], p->pod_id[k], p->restart[k]};
        st = cp_catalog_pod_register(cat, &pod, T0);
    }
    if (st == CP_OK) st = cp_catalog_windows_prepare(cat, T0);
    if (st == CP_OK) st = cp_catalog_commit(cat);
    ckpt k = {.cat = cat};
    pthread_mutex_init(&k.mu, NULL);
    pthread_cond_init(&k.cv, NULL);
    pthread_t th;
    pthread_create(&th, NULL, ckpt_main, &k);
    uint64_t s = 12345;
    int32_t seq[NPODS] = {0};
    double w0 = now_s(CLOCK_MONOTONIC), c0 = now_s(CLOCK_THREAD_CPUTIME_ID);
    for (uint64_t i = 0; st == CP_OK && i < o->rows; i++) {
        cp_call c;
        make_call(p, i, o->rows, (int64_t)o->minutes * 60000, &s, seq, &c);
        st = cp_catalog_call_put(cat, &c);
        if (st == CP_OK && (i + 1) % o->commit == 0) st = cp_catalog_commit(cat);
        if (!o->json && (i + 1) % 1000000 == 0)
            fprintf(stderr, "  %llu rows, %.0f rows/s\n", (unsigned long long)(i + 1),
                    (double)(i + 1) / (now_s(CLOCK_MONOTONIC) - w0));
    }
    if (st == CP_OK) st = cp_catalog_commit(cat);
    res->wall_s = now_s(CLOCK_MONOTONIC) - w0;
    res->cpu_s = now_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    pthread_mutex_lock(&k.mu);
    k.stop = 1;
    pthread_cond_signal(&k.cv);
    pthread_mutex_unlock(&k.mu);
    pthread_join(th, NULL);
    res->checkpoints = k.runs;
    if (st != CP_OK) fprintf(stderr, "bench_hot: insert: %s\n", cp_catalog_errmsg(cat));
    char wal[4300];
    snprintf(wal, sizeof wal, "%s-wal", db);
    res->bytes_wal = file_size(wal); /* at its largest: right after the inserts */
    res->rate = (double)o->rows / res->wall_s;
    res->cpu_rate = (double)o->rows / res->cpu_s;
    cp_catalog_close(cat); /* checkpoints everything into the database file */
    res->bytes_db = file_size(db);
    pthread_cond_destroy(&k.cv);
    pthread_mutex_destroy(&k.mu);
    return st == CP_OK ? 0 : 1;
}

/* ---- query phase --------------------------------------------------------------------------------- */

typedef struct qres {
    const char *name;
    size_t rows, windows, runs;
    uint64_t scanned;
    int more, partial;
    double median_ms, p95_ms;
} qres;

typedef struct sink {
    size_t rows;
    cp_sort_key last;
    cp_sort_col col;
    int desc;
} sink;

static int on_call(void *ud, const cp_call *c)
{
    sink *k = ud;
    k->rows++;
    /* the key of the row, as a cursor would keep it */
    memset(&k->last, 0, sizeof k->last);
    k->last.col = k->col;
    k->last.desc = k->desc;
    k->last.num = k->col == CP_SORT_DURATION ? c->duration_ms : c->ts_ms;
    cp_call_ref_of(c, &k->last.ref);
    return 0;
}

static int match_param(void *ud, const cp_call_view *v)
{
    const char *needle = ud;
    return memmem(v->params_json, v->params_json_len, needle, strlen(needle)) != NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Runs one search o->runs times (fewer if it is slow); median and p95 latency. */
static int time_query(const opts *o, cp_reader *rd, const char *name, const cp_call_filter *f, qres *q)
{
    double *lat = calloc(o->runs, sizeof *lat);
    memset(q, 0, sizeof *q);
    q->name = name;
    double spent = 0;
    size_t n = 0;
    while (n < o->runs && (n < 3 || spent < 15.0)) {
        sink k = {.col = f->sort, .desc = f->desc};
        cp_search_stats st;
        double t0 = now_s(CLOCK_MONOTONIC);
        if (cp_reader_search(rd, f, on_call, &k, &st) != CP_OK) {
            fprintf(stderr, "bench_hot: %s: %s\n", name, cp_reader_errmsg(rd));
            free(lat);
            return 1;
        }
        lat[n] = (now_s(CLOCK_MONOTONIC) - t0) * 1000;
        spent += lat[n] / 1000;
        n++;
        q->rows = k.rows, q->windows = st.windows, q->scanned = st.scanned, q->more = st.more, q->partial = st.partial;
    }
    qsort(lat, n, sizeof *lat, cmp_double);
    q->runs = n;
    q->median_ms = lat[n / 2];
    q->p95_ms = lat[(size_t)((double)(n - 1) * 0.95 + 0.5)];
    free(lat);
    return 0;
}

static cp_call_filter whole_hour(cp_sort_col col, int desc)
{
    cp_call_filter f;
    memset(&f, 0, sizeof f);
    f.from_ms = T0;
    f.to_ms = T0 + HOUR_MS;
    f.max_duration_ms = INT64_MAX;
    f.sort = col;
    f.desc = desc;
    f.limit = 100;
    return f;
}

/* The key of the row at the middle of the hour (a page deep into a time-sorted listing). */
static int middle_key(cp_reader *rd, cp_sort_key *key)
{
    cp_call_filter f = whole_hour(CP_SORT_TS, 1);
    f.to_ms = T0 + HOUR_MS / 2;
    f.limit = 1;
    sink k = {.col = CP_SORT_TS, .desc = 1};
    if (cp_reader_search(rd, &f, on_call, &k, NULL) != CP_OK || k.rows != 1) return 1;
    *key = k.last;
    return 0;
}

/* The key of the last row of the 10th page of -duration (limit 100). */
static int page10_key(cp_reader *rd, cp_sort_key *key)
{
    cp_call_filter f = whole_hour(CP_SORT_DURATION, 1);
    sink k = {.col = CP_SORT_DURATION, .desc = 1};
    for (int page = 0; page < 10; page++) {
        k.rows = 0;
        if (cp_reader_search(rd, &f, on_call, &k, NULL) != CP_OK || k.rows != 100) return 1;
        *key = k.last;
        f.after = key;
    }
    return 0;
}

#define NQ 12

static int query_all(const opts *o, const pools *p, const char *db, qres *q, size_t *nq)
{
    char err[512];
    cp_reader *rd;
    if (cp_reader_open_sqlite(db, &rd, err, sizeof err) != CP_OK) {
        fprintf(stderr, "bench_hot: %s\n", err);
        return 1;
    }
    cp_sort_key ts_key, dur_key, mid_key;
    if (middle_key(rd, &ts_key) || page10_key(rd, &dur_key)) {
        fprintf(stderr, "bench_hot: no rows to page into\n");
        cp_reader_close(rd);
        return 1;
    }
    cp_call_filter f[NQ];
    const char *names[NQ];
    size_t n = 0;
    names[n] = "-duration limit 100, whole hour", f[n++] = whole_hour(CP_SORT_DURATION, 1);
    names[n] = "-ts_ms limit 100, whole hour", f[n++] = whole_hour(CP_SORT_TS, 1);
    names[n] = "-ts_ms page after the middle of the hour", f[n] = whole_hour(CP_SORT_TS, 1), f[n++].after = &ts_key;
    names[n] = "-duration 11th page", f[n] = whole_hour(CP_SORT_DURATION, 1), f[n++].after = &dur_key;
    /* worst case: the median duration, where a group of equal durations is sorted per page */
    mid_key = ts_key;
    mid_key.col = CP_SORT_DURATION;
    mid_key.num = 5;
    names[n] = "-duration page at the median (5 ms)", f[n] = whole_hour(CP_SORT_DURATION, 1), f[n++].after = &mid_key;
    names[n] = "+duration limit 100, whole hour", f[n++] = whole_hour(CP_SORT_DURATION, 0);
    names[n] = "pod filter, -ts_ms limit 100", f[n] = whole_hour(CP_SORT_TS, 1), f[n].ns = p->ns[17];
    f[n++].pod = p->pod[17];
    names[n] = "pod filter, -duration limit 100", f[n] = whole_hour(CP_SORT_DURATION, 1), f[n].ns = p->ns[17];
    f[n++].pod = p->pod[17];
    names[n] = "match params \"/res42/\" (1%), -ts_ms", f[n] = whole_hour(CP_SORT_TS, 1), f[n].match = match_param;
    f[n++].match_ud = "/res42/";
    names[n] = "match params \"/res42/\" (1%), -duration", f[n] = whole_hour(CP_SORT_DURATION, 1);
    f[n].match = match_param;
    f[n++].match_ud = "/res42/";
    names[n] = "-duration limit 100, 10 minutes", f[n] = whole_hour(CP_SORT_DURATION, 1), f[n].from_ms = T0 + 1234567;
    f[n].to_ms = f[n].from_ms + 600000, n++;
    names[n] = "-cpu_time limit 100 (no index), 10 minutes", f[n] = whole_hour(CP_SORT_CPU, 1);
    f[n].from_ms = T0 + 1234567, f[n].to_ms = f[n].from_ms + 600000, n++;
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        rc = time_query(o, rd, names[i], &f[i], &q[i]);
        if (!o->json)
            fprintf(stderr, "  %-46s %8.2f ms median\n", names[i], rc ? 0.0 : q[i].median_ms);
    }
    *nq = n;
    cp_reader_close(rd);
    return rc;
}

/* ---- output -------------------------------------------------------------------------------------- */

static void print_text(const opts *o, const insert_result *ins, const qres *q, size_t nq)
{
    printf("hot tier (SQLite): %llu calls, 50 pods, 12 windows of 5 min, ~300-byte blobs, commit every %llu\n\n",
           (unsigned long long)o->rows, (unsigned long long)o->commit);
    printf("insert: %.0f calls/s wall (%.1f s), %.0f calls per CPU-second of the writer thread (%.1f s);\n"
           "        %d checkpoint rounds on the side; WAL at the end %.2f GB; catalog %.2f GB = %.0f bytes per call\n\n",
           ins->rate, ins->wall_s, ins->cpu_rate, ins->cpu_s, ins->checkpoints, (double)ins->bytes_wal / 1e9,
           (double)ins->bytes_db / 1e9, (double)ins->bytes_db / (double)o->rows);
    printf("%-46s %9s %9s %5s %5s %9s %5s\n", "query (limit 100)", "median ms", "p95 ms", "rows", "wins", "scanned",
           "runs");
    for (size_t i = 0; i < nq; i++)
        printf("%-46s %9.2f %9.2f %5zu %5zu %9llu %5zu\n", q[i].name, q[i].median_ms, q[i].p95_ms, q[i].rows,
               q[i].windows, (unsigned long long)q[i].scanned, q[i].runs);
}

static void print_json(const opts *o, const insert_result *ins, const qres *q, size_t nq)
{
    printf("{\"bench\":\"hot\",\"rows\":%llu,\"commit_every\":%llu,\"insert\":{\"wall_s\":%.3f,\"calls_per_s\":%.0f,"
           "\"cpu_s\":%.3f,\"calls_per_cpu_s\":%.0f,\"checkpoints\":%d,\"db_bytes\":%llu,\"wal_bytes\":%llu},"
           "\"queries\":[",
           (unsigned long long)o->rows, (unsigned long long)o->commit, ins->wall_s, ins->rate, ins->cpu_s,
           ins->cpu_rate, ins->checkpoints, (unsigned long long)ins->bytes_db, (unsigned long long)ins->bytes_wal);
    for (size_t i = 0; i < nq; i++) {
        cp_buf b;
        cp_buf_init(&b);
        cp_json_str(&b, q[i].name, strlen(q[i].name));
        printf("%s\n{\"name\":%.*s,\"median_ms\":%.3f,\"p95_ms\":%.3f,\"rows\":%zu,\"windows\":%zu,\"scanned\":%llu,"
               "\"runs\":%zu}",
               i ? "," : "", (int)b.len, (const char *)b.data, q[i].median_ms, q[i].p95_ms, q[i].rows, q[i].windows,
               (unsigned long long)q[i].scanned, q[i].runs);
        cp_buf_free(&b);
    }
    printf("\n]}\n");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_hot [--rows N] [--quick] [--commit N] [--runs N] [--minutes M] [--dir DIR]\n"
               "                 [--keep] [--json] [--insert-only]\n");
}

static int parse_opts(int argc, char **argv, opts *o)
{
    const char *tmp = getenv("TMPDIR");
    *o = (opts){.rows = 10000000, .commit = 10000, .runs = 20, .minutes = 60, .dir = tmp && *tmp ? tmp : "/tmp"};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int st = CP_OK;
        if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--keep")) o->keep = 1;
        else if (!strcmp(a, "--insert-only")) o->insert_only = 1;
        else if (!strcmp(a, "--quick")) o->rows = 1000000;
        else if (v && !strcmp(a, "--rows")) st = cp_parse_u64(argv[++i], 1000000000, &o->rows);
        else if (v && !strcmp(a, "--commit")) st = cp_parse_u64(argv[++i], 10000000, &o->commit);
        else if (v && !strcmp(a, "--runs")) st = cp_parse_u64(argv[++i], 10000, &o->runs);
        else if (v && !strcmp(a, "--minutes")) st = cp_parse_u64(argv[++i], 60, &o->minutes);
        else if (v && !strcmp(a, "--dir")) o->dir = argv[++i];
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else st = CP_EINVAL;
        if (st != CP_OK) {
            fprintf(stderr, "bench_hot: bad argument '%s'\n", a);
            usage(stderr);
            return 2;
        }
    }
    if (o->rows < 1000 || o->commit == 0 || o->runs == 0 || o->minutes == 0) {
        fprintf(stderr, "bench_hot: --rows >= 1000, --commit, --runs and --minutes > 0\n");
        return 2;
    }
    return 0;
}

static void remove_dir(const char *dir, const char *db)
{
    char p[4300];
    const char *sfx[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < CP_ARRAY_LEN(sfx); i++) {
        snprintf(p, sizeof p, "%s%s", db, sfx[i]);
        unlink(p);
    }
    rmdir(dir);
}

int main(int argc, char **argv)
{
    opts o;
    int rc = parse_opts(argc, argv, &o);
    if (rc) return rc;
    char dir[4096], db[4200];
    snprintf(dir, sizeof dir, "%s/bench-hot-XXXXXX", o.dir);
    if (!mkdtemp(dir)) {
        perror("bench_hot: mkdtemp");
        return 1;
    }
    snprintf(db, sizeof db, "%s/catalog.db", dir);
    pools *p = malloc(sizeof *p);
    uint64_t s = 99;
    pools_init(p, &s);
    insert_result ins = {0};
    qres q[NQ];
    size_t nq = 0;
    if (!o.json) fprintf(stderr, "bench_hot: inserting %llu calls into %s\n", (unsigned long long)o.rows, db);
    rc = insert_all(&o, p, db, &ins);
    if (!rc && !o.insert_only) rc = query_all(&o, p, db, q, &nq);
    if (!rc) {
        if (o.json) print_json(&o, &ins, q, nq);
        else print_text(&o, &ins, q, nq);
    }
    if (!o.keep) remove_dir(dir, db);
    else if (!o.json) printf("\nkept %s\n", dir);
    free(p);
    return rc;
}
