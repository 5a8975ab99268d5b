/* assembly.c -- call assembly + hot-tier insert rate on one core (bench_assembly).
 *
 * Emulated agents (src/agent's generator, the same bytes `cloudprof emulate` sends)
 * produce their stream files in batches; each batch is run, in one thread, through what
 * `serve` does with it after the socket: the stream decoders, call assembly (cp_asm:
 * extents, blob building from the stored bytes, params JSON, suspend overlap) and the
 * SQLite hot tier (cp_catalog_call_put, one commit per 10 000 calls like a busy loop
 * iteration). Generation is not timed. Three modes over the same batches, measured in
 * the same run:
 *   decode    decoders with the assembly's sinks off (what ingest cost before issue 4)
 *   assemble  + call assembly, calls discarded
 *   insert    + the SQLite hot tier: the figure the issue asks for
 * Times are the CPU time of the thread doing the work (not the checkpointing thread),
 * so calls/s is per core.
 *
 * usage: bench_assembly [--calls N] [--agents N] [--depth D] [--dir DIR] [--only MODE] [--json]
 *   --only runs one mode (for profiling it); the others report 0.
 */
#include "agent/cp_agent.h"
#include "common/cp_common.h"
#include "model/cp_asm.h"
#include "store/cp_catalog.h"
#include "streams/cp_streams.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

enum { MODE_DECODE, MODE_ASSEMBLE, MODE_INSERT, NMODES };
#ifndef COMMIT_EVERY
#define COMMIT_EVERY 10000 /* calls per transaction: what the server commits in 100 ms at 100 000 calls/s */
#endif
static const char *const mode_names[NMODES] = {"decode", "assemble", "insert"};

typedef struct agent {
    cp_agent_gen *gen;
    cp_buf file[CP_AGENT_NSTREAMS];     /* the stream files as stored (from base[s] on) */
    size_t base[CP_AGENT_NSTREAMS];     /* file offset of file[s].data[0]: old trace bytes are dropped */
    cp_dec *dec[NMODES][CP_AGENT_NSTREAMS];
    size_t fed[NMODES][CP_AGENT_NSTREAMS];
    cp_asm *asm_[NMODES];
    char pod[64];
    struct bench *b;
    int mode;
    cp_buf utf8;
} agent;

typedef struct bench {
    agent *agents;
    uint32_t nagents;
    cp_catalog *catalog;
    uint64_t emitted[NMODES], without_trace[NMODES], since_commit;
    double cpu[NMODES];
} bench;

static double cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* this thread: not the checkpointer */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The server checkpoints the catalog's WAL on a worker thread (server.c
 * maybe_maintain, every 500 ms); so does the benchmark, so the writer's figure is the server's. */
typedef struct maint {
    cp_catalog *c;
    volatile int stop;
} maint;

static void *maintain_loop(void *arg)
{
    maint *m = arg;
    int behind = 0;
    while (!m->stop) {
        for (int i = 0; i < 5 && !m->stop && !behind; i++) {
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
        if (!m->stop) behind = cp_catalog_maintain(m->c) == CP_AGAIN; /* behind: at once */
    }
    return NULL;
}

/* ---- assembly io: the in-memory stored files ------------------------------------------ */

static cp_buf *file_of(agent *a, cp_stream_kind kind, int32_t idx, size_t *avail, size_t *base)
{
    cp_agent_stream s;
    switch (kind) {
    case CP_STREAM_TRACE: s = CP_AGENT_TRACE; break;
    case CP_STREAM_SQL: s = CP_AGENT_SQL; break;
    case CP_STREAM_XML: s = CP_AGENT_XML; break;
    default: return NULL;
    }
    if (idx != 1) return NULL;
    *avail = a->fed[a->mode][s];
    *base = a->base[s];
    return &a->file[s];
}

static int64_t io_size(void *ud, cp_stream_kind kind, int32_t idx)
{
    size_t avail, base;
    return file_of(ud, kind, idx, &avail, &base) ? (int64_t)avail : -1;
}

static long io_read(void *ud, cp_stream_kind kind, int32_t idx, uint64_t off, void *buf, size_t n)
{
    size_t avail, base;
    cp_buf *f = file_of(ud, kind, idx, &avail, &base);
    if (!f || off + n > avail || off < base) return CP_EIO;
    memcpy(buf, f->data + (off - base), n);
    return (long)n;
}

static int io_emit(void *ud, const cp_call *c)
{
    agent *a = ud;
    bench *b = a->b;
    b->emitted[a->mode]++;
    if (!c->trace) b->without_trace[a->mode]++;
    if (a->mode != MODE_INSERT) return 0;
    if (cp_catalog_call_put(b->catalog, c) != CP_OK) {
        fprintf(stderr, "bench_assembly: insert: %s\n", cp_catalog_errmsg(b->catalog));
        exit(1);
    }
    if (++b->since_commit == COMMIT_EVERY) {
        b->since_commit = 0;
        cp_catalog_commit(b->catalog);
    }
    return 0;
}

/* ---- sinks -------------------------------------------------------------------------------- */

static int s_word(void *ud, const cp_word_rec *r)
{
    agent *a = ud;
    cp_buf_reset(&a->utf8);
    cp_str16_to_utf8(&a->utf8, r->word);
    return cp_asm_word(a->asm_[a->mode], r->id, (const char *)a->utf8.data, a->utf8.len) == CP_ENOMEM;
}
static int s_pause(void *ud, const cp_suspend_rec *r) { return cp_asm_pause(((agent *)ud)->asm_[((agent *)ud)->mode], r) != CP_OK; }
static int s_trace(void *ud, const cp_trace_rec *r)
{
    agent *a = ud;
    return cp_asm_trace(a->asm_[a->mode], 1, r, 0) != CP_OK;
}
static int s_call(void *ud, const cp_call_rec *r)
{
    agent *a = ud;
    return cp_asm_call(a->asm_[a->mode], r, 0) != CP_OK;
}

static void agent_init(bench *b, agent *a, uint32_t i, int depth)
{
    memset(a, 0, sizeof *a);
    a->b = b;
    cp_buf_init(&a->utf8);
    snprintf(a->pod, sizeof a->pod, "bench-svc-%u-5d8f7c9b4-x%04u", i % 10, i);
    cp_agent_gen_opts o;
    cp_agent_gen_opts_default(&o);
    o.node_name = a->pod;
    o.trace_depth = depth;
    a->gen = cp_agent_gen_new(&o, 1000 + i);
    cp_agent_gen_reset(a->gen, 0);
    int64_t t0 = 1700000000000;
    for (int s = 0; s < CP_AGENT_NSTREAMS; s++) {
        cp_buf_init(&a->file[s]);
        cp_agent_gen_open(a->gen, (cp_agent_stream)s, 0, t0);
    }
    for (int m = 0; m < NMODES; m++) {
        cp_asm_pod pod = {"bench", "bench-svc", a->pod, t0};
        cp_asm_io io = {.ud = a, .read = io_read, .size = io_size, .emit = io_emit};
        a->asm_[m] = cp_asm_new(&pod, NULL, &io);
        for (int s = 0; s < CP_AGENT_NSTREAMS; s++) {
            cp_stream_kind k = cp_agent_stream_kind((cp_agent_stream)s, 0);
            cp_dec_sink sink = {.ud = a};
            if (m != MODE_DECODE) {
                sink.on_word = s_word;
                sink.on_suspend = s_pause;
                sink.on_trace = s_trace;
                sink.on_call = s_call;
            }
            a->dec[m][s] = cp_dec_new(k, NULL, &sink, 0);
        }
    }
}

static void agent_free(agent *a)
{
    for (int m = 0; m < NMODES; m++) {
        for (int s = 0; s < CP_AGENT_NSTREAMS; s++) cp_dec_free(a->dec[m][s]);
        cp_asm_free(a->asm_[m]);
    }
    for (int s = 0; s < CP_AGENT_NSTREAMS; s++) cp_buf_free(&a->file[s]);
    cp_agent_gen_free(a->gen);
    cp_buf_free(&a->utf8);
}

/* Feeds what the batch added to every stream file through one mode's pipeline. The
 * dictionary and suspend go first, as the agent flushes them before the calls. */
static void feed(agent *a, int mode)
{
    static const cp_agent_stream order[] = {CP_AGENT_DICT, CP_AGENT_SUSPEND, CP_AGENT_PARAMS, CP_AGENT_SQL,
                                            CP_AGENT_XML, CP_AGENT_TRACE, CP_AGENT_CALLS};
    a->mode = mode;
    for (size_t i = 0; i < CP_ARRAY_LEN(order); i++) {
        cp_agent_stream s = order[i];
        size_t from = a->fed[mode][s], to = a->base[s] + a->file[s].len;
        if (to > from && cp_dec_feed(a->dec[mode][s], a->file[s].data + (from - a->base[s]), to - from) != CP_OK) {
            fprintf(stderr, "bench_assembly: decode %s: %s\n", cp_agent_stream_name(s, 0), cp_dec_error(a->dec[mode][s]));
            exit(1);
        }
        a->fed[mode][s] = to;
        if (mode != MODE_DECODE) cp_asm_pump(a->asm_[mode], 0, 0);
    }
}

int main(int argc, char **argv)
{
    uint64_t ncalls = 1000000;
    uint32_t nagents = 20;
    int depth = 4, json = 0, only = -1;
    const char *dir = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--calls") && i + 1 < argc) ncalls = strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--agents") && i + 1 < argc) nagents = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--depth") && i + 1 < argc) depth = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) {
            i++;
            for (int m = 0; m < NMODES; m++)
                if (!strcmp(argv[i], mode_names[m])) only = m;
            if (only < 0) {
                fprintf(stderr, "bench_assembly: --only decode|assemble|insert\n");
                return 2;
            }
        }
        else {
            fprintf(stderr, "usage: bench_assembly [--calls N] [--agents N] [--depth D] [--dir DIR] [--only MODE] [--json]\n");
            return 2;
        }
    }
    if (!nagents) nagents = 1;
    char tmpl[] = "/tmp/cp-bench-asm-XXXXXX";
    if (!dir && !(dir = mkdtemp(tmpl))) return 1;
    char path[4096], err[256];
    snprintf(path, sizeof path, "%s/catalog.db", dir);
    bench b = {.nagents = nagents};
    if (cp_catalog_open_sqlite(path, &b.catalog, err, sizeof err) != CP_OK ||
        cp_catalog_set_windows(b.catalog, 300000, 3 * 3600000) != CP_OK) {
        fprintf(stderr, "bench_assembly: catalog: %s\n", err);
        return 1;
    }
    maint mnt = {.c = b.catalog};
    pthread_t mt;
    if (pthread_create(&mt, NULL, maintain_loop, &mnt) != 0) return 1;
    b.agents = calloc(nagents, sizeof *b.agents);
    for (uint32_t i = 0; i < nagents; i++) agent_init(&b, &b.agents[i], i, depth);

    /* one hour of calls: 12 hot windows */
    uint64_t done = 0, batch = 2000;
    int64_t t0 = 1700000000000, span = 3600000;
    uint64_t trace_bytes = 0;
    while (done < ncalls) {
        for (uint32_t i = 0; i < nagents && done < ncalls; i++) {
            agent *a = &b.agents[i];
            uint64_t n = batch < ncalls - done ? batch : ncalls - done;
            int64_t now = t0 + (int64_t)((double)done / (double)ncalls * (double)span);
            cp_agent_gen_calls(a->gen, (uint32_t)n, now);
            cp_agent_gen_flush_all(a->gen);
            for (int s = 0; s < CP_AGENT_NSTREAMS; s++) {
                size_t len;
                const uint8_t *p = cp_agent_gen_pending(a->gen, (cp_agent_stream)s, &len);
                cp_buf_append(&a->file[s], p, len);
                cp_agent_gen_consume(a->gen, (cp_agent_stream)s, len);
                if (s == CP_AGENT_TRACE) trace_bytes += len;
            }
            for (int m = 0; m < NMODES; m++) {
                if (only >= 0 && m != only) continue;
                double c0 = cpu_now();
                feed(a, m);
                b.cpu[m] += cpu_now() - c0;
            }
            /* every call of the batch is assembled: its trace bytes are not needed again
             * (sql/xml are kept: later calls may point back into them) */
            a->base[CP_AGENT_TRACE] += a->file[CP_AGENT_TRACE].len;
            cp_buf_reset(&a->file[CP_AGENT_TRACE]);
            done += n;
        }
    }
    for (int m = 0; m < NMODES; m++) {
        if (only >= 0 && m != only) continue;
        double c0 = cpu_now();
        for (uint32_t i = 0; i < nagents; i++)
            if (m != MODE_DECODE) cp_asm_pump(b.agents[i].asm_[m], 0, 1);
        if (m == MODE_INSERT) cp_catalog_commit(b.catalog);
        b.cpu[m] += cpu_now() - c0;
    }
    mnt.stop = 1;
    pthread_join(mt, NULL);
    char wal[4200];
    snprintf(wal, sizeof wal, "%s-wal", path);
    struct stat sb;
    double wal_mb = stat(wal, &sb) == 0 ? (double)sb.st_size / 1e6 : 0;
    uint64_t records = 0;
    for (uint32_t i = 0; i < nagents; i++) {
        cp_agent_gen_stats gs;
        cp_agent_gen_get_stats(b.agents[i].gen, &gs);
        records += gs.records;
    }
    if (json) {
        printf("{\"calls\":%llu,\"records\":%llu,\"agents\":%u,\"trace_bytes_per_call\":%.1f",
               (unsigned long long)done, (unsigned long long)records, nagents,
               (double)trace_bytes / (double)(records ? records : 1));
        for (int md = 0; md < NMODES; md++)
            if (b.cpu[md] > 0)
                printf(",\"%s_calls_per_s\":%.0f,\"%s_cpu_s\":%.3f", mode_names[md],
                       (double)records / b.cpu[md], mode_names[md], b.cpu[md]);
        printf(",\"wal_mb\":%.1f", wal_mb);
        printf(",\"stored\":%llu,\"without_trace\":%llu}\n", (unsigned long long)b.emitted[MODE_INSERT],
               (unsigned long long)b.without_trace[MODE_INSERT]);
    } else {
        printf("assembly + hot insert, one core: %llu calls records from %u agents (depth %d, %.0f trace bytes/call)\n",
               (unsigned long long)records, nagents, depth, (double)trace_bytes / (double)(records ? records : 1));
        for (int md = 0; md < NMODES; md++)
            if (b.cpu[md] > 0)
                printf("  %-9s %9.0f calls/s  (%.2f s CPU, %.2f us/call)\n", mode_names[md],
                       (double)records / b.cpu[md], b.cpu[md], b.cpu[md] * 1e6 / (double)records);
        printf("  catalog WAL at the end: %.1f MB (checkpointed every 500 ms by a second thread, as in serve)\n", wal_mb);
        printf("  stored %llu calls, %llu without a trace\n", (unsigned long long)b.emitted[MODE_INSERT],
               (unsigned long long)b.without_trace[MODE_INSERT]);
    }
    int check = only >= 0 ? only : MODE_INSERT;
    int bad = check != MODE_DECODE && (b.emitted[check] != records || b.without_trace[check] != 0);
    for (uint32_t i = 0; i < nagents; i++) agent_free(&b.agents[i]);
    free(b.agents);
    cp_catalog_close(b.catalog);
    if (bad) fprintf(stderr, "bench_assembly: not every call was stored with its trace\n");
    return bad;
}
