/* cp_metrics.c -- the metrics registry (cp_metrics.h): one array of atomics, and the text
 * exposition format 0.0.4 (https://prometheus.io/docs/instrumenting/exposition_formats/).
 *
 * Each family owns a run of slots: one per series for counters and gauges (a gauge keeps
 * its int64 as two's complement, so a relaxed fetch_add of a negative delta works), and
 * for histograms per series nbuckets + 1 bucket counts (not cumulative; the last one is
 * the +Inf overflow) and the sum as the bits of a double (added with a CAS loop). The
 * _count written is the total of the buckets, so a scrape always shows a histogram whose
 * +Inf bucket equals its _count even while observations land.
 */
#include "common/cp_metrics.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct family {
    const cp_metric_def *def;
    size_t first;    /* its first slot */
    size_t nseries;
    size_t stride;   /* slots per series */
} family;

struct cp_metrics {
    family *fam;
    size_t nfam;
    _Atomic uint64_t *slots;
    size_t nslots;
    char *version;   /* cloudprof_build_info */
};

/* ---- the cloudprof families ----------------------------------------------------------------- */

static const char *const refuse_values[CP_M_REFUSE_COUNT] = {"max_connections", "file_descriptors", "tls"};
static const char *const command_values[CP_M_CMD_COUNT] = {"handshake", "version",   "init",   "init_legacy",
                                                           "data",      "ack_flush", "report", "close"};
/* cp_stream_kind order from CP_STREAM_TRACE (streams/cp_streams.h; the server checks it) */
static const char *const stream_values[CP_M_STREAM_COUNT] = {"trace",      "calls",         "xml",     "sql",
                                                             "dictionary", "posDictionary", "suspend", "params",
                                                             "gc",         "td",            "top",     "heap"};
static const char *const ack_values[CP_M_ACK_COUNT] = {"ok", "error"};
static const char *const hot_values[CP_M_HOT_COUNT] = {"assembly", "transaction"};
static const char *const mem_values[CP_M_MEM_COUNT] = {"tail_copies", "partial_records", "assembly",
                                                       "writer_queue"};
static const char *const asm_values[CP_M_ASM_COUNT] = {"extents", "waiting_calls", "values", "words", "other"};
static const char *const auth_values[CP_M_AUTH_COUNT] = {"missing", "bad_credentials", "expired", "forbidden",
                                                         "backoff"};
/* cp_m_route order */
static const char *const route_values[CP_M_ROUTE_COUNT] = {
    "other",       "ui",          "metrics",       "health",         "time",      "config",    "me",
    "services",    "calls",       "calls_csv",     "calls_stats",    "call",      "call_tree", "call_trace",
    "call_export", "tree",        "tree_export",   "import",         "dumps",     "dumps_summary",
    "dumps_download", "dump",     "dump_view",     "gc",             "upload",    "cdt_download", "auth",
    "calls_xlsx"};
/* the statuses the server sends; anything else counts as its class */
static const unsigned known_codes[] = {200, 201, 202, 204, 206, 301, 302, 303, 304, 307, 400, 401, 403, 404, 405,
                                       408, 409, 410, 413, 415, 416, 422, 429, 500, 501, 502, 503, 504, 507};
#define NCODES (sizeof known_codes / sizeof known_codes[0])
static const char *const code_values[NCODES + 6] = {
    "200", "201", "202", "204", "206", "301", "302", "303", "304", "307", "400", "401", "403", "404", "405",
    "408", "409", "410", "413", "415", "416", "422", "429", "500", "501", "502", "503", "504", "507",
    "1xx", "2xx", "3xx", "4xx", "5xx", "other"};

/* agent acks: a loop turn (~0) to a busy disk's fsync; fsyncs likewise */
static const double latency_buckets[] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                         0.1,    0.25,  0.5,    1,     2.5,  5,     10};

/* every member spelled out: clang's -Wmissing-field-initializers (the fuzz build) */
#define L1(name, vals) {name, NULL}, {vals, NULL}, {CP_ARRAY_LEN(vals), 0}, NULL, 0, 0
#define NOL {NULL, NULL}, {NULL, NULL}, {0, 0}, NULL, 0, 0
#define HIST(b) {NULL, NULL}, {NULL, NULL}, {0, 0}, b, CP_ARRAY_LEN(b), 0

static const cp_metric_def builtin[CP_M_COUNT] = {
    [CP_M_AGENT_CONNECTIONS_OPEN] = {"cloudprof_agent_connections_open", "Agent connections open now.",
                                     CP_METRIC_GAUGE, NOL},
    [CP_M_AGENT_CONNECTIONS_ACCEPTED] = {"cloudprof_agent_connections_accepted_total",
                                         "Agent connections accepted.", CP_METRIC_COUNTER, NOL},
    [CP_M_AGENT_CONNECTIONS_REFUSED] = {"cloudprof_agent_connections_refused_total",
                                        "Agent connections closed without being served, by reason.", CP_METRIC_COUNTER,
                                        L1("reason", refuse_values)},
    [CP_M_AGENT_CONNECTIONS_BLACKLISTED] = {"cloudprof_agent_connections_blacklisted_total",
                                            "Agent handshakes refused because their namespace is blacklisted.",
                                            CP_METRIC_COUNTER, NOL},
    [CP_M_AGENT_COMMANDS] = {"cloudprof_agent_commands_total", "Agent protocol commands received, by command.",
                             CP_METRIC_COUNTER, L1("command", command_values)},
    [CP_M_AGENT_RECEIVED_BYTES] = {"cloudprof_agent_received_bytes_total",
                                   "Bytes of agent protocol commands received, by command.", CP_METRIC_COUNTER,
                                   L1("command", command_values)},
    [CP_M_AGENT_STREAM_BYTES] = {"cloudprof_agent_stream_bytes_total",
                                 "RCV_DATA payload bytes stored in the raw log, by stream kind.", CP_METRIC_COUNTER,
                                 L1("stream", stream_values)},
    [CP_M_AGENT_ACKS] = {"cloudprof_agent_acks_total",
                         "Ack bytes sent to agents: ok (0x00, RCV_DATA and REQUEST_ACK_FLUSH) or error (0xFF).",
                         CP_METRIC_COUNTER, L1("result", ack_values)},
    [CP_M_AGENT_ACK_LATENCY] = {"cloudprof_agent_ack_latency_seconds",
                                "Time from a REQUEST_ACK_FLUSH arriving (the last of the bytes it covers) to its "
                                "ack being written, after the fsync of everything before it.",
                                CP_METRIC_HISTOGRAM, HIST(latency_buckets)},
    [CP_M_FSYNC_BATCHES] = {"cloudprof_fsync_batches_total", "Group-commit fsync batches run.", CP_METRIC_COUNTER,
                            NOL},
    [CP_M_FSYNC_FAILURES] = {"cloudprof_fsync_failures_total", "Group-commit fsync batches that failed.",
                             CP_METRIC_COUNTER, NOL},
    [CP_M_FSYNC_DURATION] = {"cloudprof_fsync_duration_seconds",
                             "Time one group-commit batch took to fsync its files and directories.",
                             CP_METRIC_HISTOGRAM, HIST(latency_buckets)},
    [CP_M_CALLS_ASSEMBLED] = {"cloudprof_calls_assembled_total", "Calls assembled from agent streams.",
                              CP_METRIC_COUNTER, NOL},
    [CP_M_CALLS_STORED] = {"cloudprof_calls_stored_total",
                           "Assembled calls committed to the hot tier (recovery not counted).", CP_METRIC_COUNTER,
                           NOL},
    [CP_M_CALLS_STORE_FAILURES] = {"cloudprof_calls_store_failures_total",
                                   "Assembled calls the hot tier did not take (left for recovery from the raw log).",
                                   CP_METRIC_COUNTER, NOL},
    [CP_M_HOT_QUEUE] = {"cloudprof_hot_queue_calls",
                        "Calls on their way to the hot tier: waiting in assembly (for their trace) or in the "
                        "catalog transaction not yet committed.",
                        CP_METRIC_GAUGE, L1("stage", hot_values)},
    [CP_M_INGEST_MEMORY] = {"cloudprof_ingest_memory_bytes",
                            "Memory ingest holds, by part: copies of recent trace/sql/xml bytes, partial records, "
                            "call assembly state (the first two within --ingest-memory).",
                            CP_METRIC_GAUGE, L1("part", mem_values)},
    [CP_M_ASSEMBLY_MEMORY] = {"cloudprof_assembly_memory_bytes",
                              "Call assembly state, by part: where root calls' events lie until their calls records "
                              "come, calls waiting, resolved sql/xml values, dictionary words, the rest "
                              "(the parts of cloudprof_ingest_memory_bytes{part=\"assembly\"}).",
                              CP_METRIC_GAUGE, L1("part", asm_values)},
    [CP_M_INGEST_GATED] = {"cloudprof_ingest_gated_connections",
                           "Agent connections stopped at a trace payload, not read for now: call assembly holds "
                           "more than its share of --ingest-memory for calls records not yet sent (their agents "
                           "wait for an ack; let in first come, first served).",
                           CP_METRIC_GAUGE, NOL},
    [CP_M_INGEST_GATE_CLOSINGS] = {"cloudprof_ingest_gate_closings_total",
                                   "Times call assembly went over its share of --ingest-memory and the gate closed "
                                   "(trace payloads then wait for a ticket).",
                                   CP_METRIC_COUNTER, NOL},
    [CP_M_COMPACTION_RUNS] = {"cloudprof_compaction_runs_total", "Compaction runs of the cold-tier task.",
                              CP_METRIC_COUNTER, NOL},
    [CP_M_COMPACTION_FAILURES] = {"cloudprof_compaction_failures_total",
                                  "Compaction runs that failed (retried at the next run).", CP_METRIC_COUNTER, NOL},
    [CP_M_COMPACTION_CALLS] = {"cloudprof_compaction_calls_total", "Calls written to the cold tier by compaction.",
                               CP_METRIC_COUNTER, NOL},
    [CP_M_HTTP_REQUESTS] = {"cloudprof_http_requests_total", "HTTP requests answered, by route and status code.",
                            CP_METRIC_COUNTER,
                            {"route", "code"},
                            {route_values, code_values},
                            {CP_ARRAY_LEN(route_values), CP_ARRAY_LEN(code_values)},
                            NULL,
                            0,
                            1},
    [CP_M_HTTP_UPLOAD_BYTES] = {"cloudprof_http_upload_bytes_total",
                                "Body bytes received by diagnostic-file uploads (/diagnostic/...).",
                                CP_METRIC_COUNTER, NOL},
    [CP_M_HTTP_AUTH_FAILURES] = {"cloudprof_http_auth_failures_total", "HTTP requests refused by login, by reason.",
                                 CP_METRIC_COUNTER, L1("reason", auth_values)},
    [CP_M_PROCESS_START] = {"process_start_time_seconds", "Start time of the process since the Unix epoch in seconds.",
                            CP_METRIC_GAUGE, NOL},
};

/* ---- registry -------------------------------------------------------------------------------- */

static int name_ok(const char *s)
{
    if (!s || !*s || (*s >= '0' && *s <= '9')) return 0;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              *s == ':'))
            return 0;
    return 1;
}

static int def_ok(const cp_metric_def *d)
{
    if (!name_ok(d->name) || !d->help) return 0;
    for (int k = 0; k < 2; k++) {
        if (!d->label[k]) continue;
        if (!name_ok(d->label[k]) || strchr(d->label[k], ':') || !strncmp(d->label[k], "__", 2) || !d->values[k] ||
            !d->nvalues[k])
            return 0;
        for (size_t i = 0; i < d->nvalues[k]; i++)
            if (!d->values[k][i]) return 0; /* a value list shorter than its enum */
        if (d->type == CP_METRIC_HISTOGRAM && !strcmp(d->label[k], "le")) return 0;
    }
    if (!d->label[0] && d->label[1]) return 0;
    if (d->type != CP_METRIC_HISTOGRAM) return 1;
    if (d->nbuckets > CP_METRIC_MAX_BUCKETS || (d->nbuckets && !d->buckets)) return 0;
    for (size_t i = 0; i < d->nbuckets; i++)
        if (!isfinite(d->buckets[i]) || (i && d->buckets[i] <= d->buckets[i - 1])) return 0;
    return 1;
}

cp_metrics *cp_metrics_new_defs(const cp_metric_def *defs, size_t ndefs)
{
    for (size_t i = 0; i < ndefs; i++)
        if (!def_ok(&defs[i])) return NULL;
    cp_metrics *m = calloc(1, sizeof *m);
    if (!m || !(m->fam = calloc(ndefs ? ndefs : 1, sizeof *m->fam))) {
        free(m);
        return NULL;
    }
    m->nfam = ndefs;
    size_t at = 0;
    for (size_t i = 0; i < ndefs; i++) {
        const cp_metric_def *d = &defs[i];
        family *f = &m->fam[i];
        f->def = d;
        f->first = at;
        f->nseries = (d->label[0] ? d->nvalues[0] : 1) * (d->label[1] ? d->nvalues[1] : 1);
        f->stride = d->type == CP_METRIC_HISTOGRAM ? d->nbuckets + 2 : 1;
        at += f->nseries * f->stride;
    }
    m->nslots = at;
    m->slots = calloc(at ? at : 1, sizeof *m->slots);
    if (!m->slots) {
        free(m->fam);
        free(m);
        return NULL;
    }
    for (size_t i = 0; i < at; i++) atomic_init(&m->slots[i], 0);
    return m;
}

cp_metrics *cp_metrics_new(void)
{
    cp_metrics *m = cp_metrics_new_defs(builtin, CP_M_COUNT);
    if (m) cp_metrics_set(m, CP_M_PROCESS_START, 0, (int64_t)time(NULL));
    return m;
}

void cp_metrics_free(cp_metrics *m)
{
    if (!m) return;
    free(m->slots);
    free(m->fam);
    free(m->version);
    free(m);
}

int cp_metrics_set_build_info(cp_metrics *m, const char *version)
{
    if (!m) return CP_OK;
    char *v = strdup(version ? version : "");
    if (!v) return CP_ENOMEM;
    free(m->version);
    m->version = v;
    return CP_OK;
}

/* The first slot of a series, or NULL when id or series is out of range or the family is
 * not of the given kind (histogram or not). */
static _Atomic uint64_t *series_slot(const cp_metrics *m, int id, size_t series, int histogram)
{
    if (!m || id < 0 || (size_t)id >= m->nfam) return NULL;
    const family *f = &m->fam[id];
    if (series >= f->nseries || (f->def->type == CP_METRIC_HISTOGRAM) != histogram) return NULL;
    return &m->slots[f->first + series * f->stride];
}

void cp_metrics_add(cp_metrics *m, int id, size_t series, uint64_t n)
{
    _Atomic uint64_t *s = series_slot(m, id, series, 0);
    if (s) atomic_fetch_add_explicit(s, n, memory_order_relaxed);
}

void cp_metrics_gauge_add(cp_metrics *m, int id, size_t series, int64_t d)
{
    _Atomic uint64_t *s = series_slot(m, id, series, 0);
    if (s) atomic_fetch_add_explicit(s, (uint64_t)d, memory_order_relaxed);
}

void cp_metrics_set(cp_metrics *m, int id, size_t series, int64_t v)
{
    _Atomic uint64_t *s = series_slot(m, id, series, 0);
    if (s) atomic_store_explicit(s, (uint64_t)v, memory_order_relaxed);
}

void cp_metrics_observe(cp_metrics *m, int id, size_t series, double v)
{
    _Atomic uint64_t *s = series_slot(m, id, series, 1);
    if (!s || isnan(v)) return;
    const cp_metric_def *d = m->fam[id].def;
    size_t b = 0;
    while (b < d->nbuckets && v > d->buckets[b]) b++; /* le is inclusive */
    atomic_fetch_add_explicit(&s[b], 1, memory_order_relaxed);
    _Atomic uint64_t *sum = &s[d->nbuckets + 1];
    uint64_t old = atomic_load_explicit(sum, memory_order_relaxed), next;
    do {
        double x;
        memcpy(&x, &old, sizeof x);
        x += v;
        memcpy(&next, &x, sizeof next);
    } while (!atomic_compare_exchange_weak_explicit(sum, &old, next, memory_order_relaxed, memory_order_relaxed));
}

int64_t cp_metrics_get(const cp_metrics *m, int id, size_t series)
{
    _Atomic uint64_t *s = series_slot(m, id, series, 0);
    if (s) return (int64_t)atomic_load_explicit(s, memory_order_relaxed);
    if (!(s = series_slot(m, id, series, 1))) return 0;
    uint64_t n = 0;
    for (size_t b = 0; b <= m->fam[id].def->nbuckets; b++) n += atomic_load_explicit(&s[b], memory_order_relaxed);
    return (int64_t)n;
}

void cp_metrics_http_request(cp_metrics *m, cp_m_route route, unsigned status)
{
    size_t code = NCODES + 5; /* "other" */
    for (size_t i = 0; i < NCODES; i++)
        if (known_codes[i] == status) code = i;
    if (code == NCODES + 5 && status >= 100 && status <= 599) code = NCODES + status / 100 - 1;
    cp_metrics_inc(m, CP_M_HTTP_REQUESTS, (size_t)route * CP_ARRAY_LEN(code_values) + code);
}

/* ---- exposition ------------------------------------------------------------------------------- */

/* HELP text: backslash and line feed escaped; label values also the double quote. */
static int put_escaped(cp_buf *out, const char *s, int quote)
{
    int st = CP_OK;
    for (; *s && st == CP_OK; s++) {
        if (*s == '\\') st = cp_buf_puts(out, "\\\\");
        else if (*s == '\n') st = cp_buf_puts(out, "\\n");
        else if (*s == '"' && quote) st = cp_buf_puts(out, "\\\"");
        else st = cp_buf_putc(out, (uint8_t)*s);
    }
    return st;
}

/* The shortest of %.15g / %.17g that reads back as the same double; Inf and NaN as
 * Prometheus spells them. */
static void fmt_double(char *buf, size_t n, double v)
{
    if (isnan(v)) snprintf(buf, n, "NaN");
    else if (isinf(v)) snprintf(buf, n, v > 0 ? "+Inf" : "-Inf");
    else {
        snprintf(buf, n, "%.15g", v);
        if (strtod(buf, NULL) != v) snprintf(buf, n, "%.17g", v);
    }
}

/* name<suffix>{l0="v0",l1="v1",le="x"} value\n */
static int put_sample(cp_buf *out, const family *f, const char *suffix, size_t series, const char *le,
                      const char *value)
{
    const cp_metric_def *d = f->def;
    int st = cp_buf_puts(out, d->name);
    if (st == CP_OK) st = cp_buf_puts(out, suffix);
    size_t idx[2] = {0, 0};
    if (d->label[1]) {
        idx[0] = series / d->nvalues[1];
        idx[1] = series % d->nvalues[1];
    } else {
        idx[0] = series;
    }
    char sep = '{';
    for (int k = 0; k < 2 && st == CP_OK; k++) {
        if (!d->label[k]) continue;
        st = cp_buf_printf(out, "%c%s=\"", sep, d->label[k]);
        if (st == CP_OK) st = put_escaped(out, d->values[k][idx[k]], 1);
        if (st == CP_OK) st = cp_buf_putc(out, '"');
        sep = ',';
    }
    if (st == CP_OK && le) {
        st = cp_buf_printf(out, "%cle=\"%s\"", sep, le);
        sep = ',';
    }
    if (st == CP_OK && sep == ',') st = cp_buf_putc(out, '}');
    if (st == CP_OK) st = cp_buf_printf(out, " %s\n", value);
    return st;
}

static int write_histogram(cp_buf *out, const family *f, size_t series, const _Atomic uint64_t *s)
{
    const cp_metric_def *d = f->def;
    uint64_t counts[CP_METRIC_MAX_BUCKETS + 1], total = 0;
    for (size_t b = 0; b <= d->nbuckets; b++) total += counts[b] = atomic_load_explicit(&s[b], memory_order_relaxed);
    if (d->sparse && total == 0) return CP_OK;
    uint64_t bits = atomic_load_explicit(&s[d->nbuckets + 1], memory_order_relaxed);
    double sum;
    memcpy(&sum, &bits, sizeof sum);
    char le[40], val[40];
    uint64_t cum = 0;
    int st = CP_OK;
    for (size_t b = 0; b <= d->nbuckets && st == CP_OK; b++) {
        cum += counts[b];
        fmt_double(le, sizeof le, b < d->nbuckets ? d->buckets[b] : INFINITY);
        snprintf(val, sizeof val, "%llu", (unsigned long long)cum);
        st = put_sample(out, f, "_bucket", series, le, val);
    }
    fmt_double(val, sizeof val, sum);
    if (st == CP_OK) st = put_sample(out, f, "_sum", series, NULL, val);
    snprintf(val, sizeof val, "%llu", (unsigned long long)total);
    if (st == CP_OK) st = put_sample(out, f, "_count", series, NULL, val);
    return st;
}

static int write_family(const cp_metrics *m, const family *f, cp_buf *out)
{
    static const char *const type_name[] = {"counter", "gauge", "histogram"};
    const cp_metric_def *d = f->def;
    int st = cp_buf_printf(out, "# HELP %s ", d->name);
    if (st == CP_OK) st = put_escaped(out, d->help, 0);
    if (st == CP_OK) st = cp_buf_printf(out, "\n# TYPE %s %s\n", d->name, type_name[d->type]);
    for (size_t i = 0; i < f->nseries && st == CP_OK; i++) {
        const _Atomic uint64_t *s = &m->slots[f->first + i * f->stride];
        if (d->type == CP_METRIC_HISTOGRAM) {
            st = write_histogram(out, f, i, s);
            continue;
        }
        uint64_t v = atomic_load_explicit(s, memory_order_relaxed);
        if (d->sparse && v == 0) continue;
        char val[32];
        if (d->type == CP_METRIC_GAUGE) snprintf(val, sizeof val, "%lld", (long long)(int64_t)v);
        else snprintf(val, sizeof val, "%llu", (unsigned long long)v);
        st = put_sample(out, f, "", i, NULL, val);
    }
    return st;
}

int cp_metrics_write(const cp_metrics *m, cp_buf *out)
{
    if (!m) return CP_OK;
    int st = CP_OK;
    for (size_t i = 0; i < m->nfam && st == CP_OK; i++) st = write_family(m, &m->fam[i], out);
    if (st == CP_OK && m->version) {
        st = cp_buf_puts(out, "# HELP cloudprof_build_info The cloudprof version running (always 1).\n"
                              "# TYPE cloudprof_build_info gauge\ncloudprof_build_info{version=\"");
        if (st == CP_OK) st = put_escaped(out, m->version, 1);
        if (st == CP_OK) st = cp_buf_puts(out, "\"} 1\n");
    }
    return st;
}
