/* decode.c -- stream decoder throughput, one core (bench_decode).
 *
 * For each fixture stream file (the test-service streams and the agent-v2 streams),
 * the whole file is decoded from memory again and again -- a fresh cp_dec per pass,
 * fed the file in one piece -- until at least --min-time seconds have passed. The sink
 * counts records and folds a few fields of each into a checksum, so the decoding cannot
 * be optimized away. The baseline is memcpy of the same bytes, timed the same way, and
 * the table shows decode speed as a fraction of memcpy speed.
 *
 * usage: bench_decode [--json] [--min-time SECONDS] [--fixtures DIR] [--kind KIND]
 *   MB is 10^6 bytes. Exit status 1 if a fixture is missing or does not decode cleanly.
 */
#include "common/cp_common.h"
#include "streams/cp_streams.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef CP_FIXTURES_DIR
#define CP_FIXTURES_DIR "../shared/fixtures"
#endif

/* The inputs: a stream kind and a file under the fixtures folder. */
static const struct {
    cp_stream_kind kind;
    const char *file;
} inputs[] = {
    {CP_STREAM_TRACE, "streams/test-service.traces.0.protocol"},
    {CP_STREAM_TRACE, "conversations/agent-v2/stream.trace.bin"},
    {CP_STREAM_CALLS, "streams/test-service.calls.0.protocol"},
    {CP_STREAM_CALLS, "conversations/agent-v2/stream.calls.bin"},
    {CP_STREAM_DICTIONARY, "streams/test-service.dictionary.protocol"},
    {CP_STREAM_DICTIONARY, "conversations/agent-v2/stream.dictionary.bin"},
    {CP_STREAM_PARAMS, "streams/test-service.params.protocol"},
    {CP_STREAM_PARAMS, "conversations/agent-v2/stream.params.bin"},
    {CP_STREAM_SUSPEND, "streams/test-service.suspend.protocol"},
    {CP_STREAM_SUSPEND, "conversations/agent-v2/stream.suspend.bin"},
    {CP_STREAM_SQL, "streams/test-service.sql.0.protocol"},
    {CP_STREAM_SQL, "conversations/agent-v2/stream.sql.bin"},
    {CP_STREAM_XML, "streams/test-service.xml.0.protocol"},
    {CP_STREAM_XML, "conversations/agent-v2/stream.xml.bin"},
};

/* ---- the sink: count records, touch fields ---------------------------------------------- */

typedef struct counter {
    uint64_t records;
    uint64_t sum; /* checksum of a few fields per record */
} counter;

/* Touches a string: its length and its first and last code units. */
static uint64_t touch(cp_str16 s)
{
    if (s.n == 0) return 1;
    return s.n + s.be[0] + s.be[2 * (size_t)s.n - 1];
}

static int on_word(void *ud, const cp_word_rec *r)
{
    counter *c = ud;
    c->records++;
    c->sum += (uint64_t)r->id + touch(r->word);
    return 0;
}

static int on_param(void *ud, const cp_param_rec *r)
{
    counter *c = ud;
    c->records++;
    c->sum += touch(r->name) + r->index + r->list + (uint64_t)r->order + touch(r->signature);
    return 0;
}

static int on_suspend(void *ud, const cp_suspend_rec *r)
{
    counter *c = ud;
    c->records++;
    c->sum += (uint64_t)r->end_ms + (uint64_t)r->duration_ms;
    return 0;
}

static int on_call(void *ud, const cp_call_rec *r)
{
    counter *c = ud;
    c->records++;
    c->sum += (uint64_t)r->start_ms + (uint64_t)r->method + (uint64_t)r->duration_ms + touch(r->thread_name) +
              (uint64_t)r->cpu_time + r->nparams;
    for (uint32_t i = 0; i < r->nparams; i++) {
        c->sum += (uint64_t)r->params[i].id;
        for (uint32_t k = 0; k < r->params[i].nvalues; k++) c->sum += touch(r->params[i].values[k]);
    }
    return 0;
}

static int on_trace(void *ud, const cp_trace_rec *r)
{
    counter *c = ud;
    c->records++;
    c->sum += (uint64_t)r->type + (uint64_t)r->time_ms + (uint64_t)r->id + r->index;
    if (r->type == CP_TRACE_TAG) c->sum += touch(r->value) + (uint64_t)r->ref_offset;
    return 0;
}

static int on_value(void *ud, const cp_value_rec *r)
{
    counter *c = ud;
    c->records++;
    c->sum += r->offset + touch(r->value);
    return 0;
}

/* One pass: a fresh decoder over the whole file. Returns cp_dec_finish()'s status. */
static int decode_once(cp_stream_kind kind, const cp_buf *file, counter *c, char *err, size_t errsz)
{
    cp_dec_sink sink = {
        .ud = c,
        .on_word = on_word,
        .on_param = on_param,
        .on_suspend = on_suspend,
        .on_call = on_call,
        .on_trace = on_trace,
        .on_value = on_value,
    };
    cp_dec *d = cp_dec_new(kind, NULL, &sink, 0);
    if (!d) {
        snprintf(err, errsz, "cp_dec_new failed");
        return CP_ENOMEM;
    }
    cp_dec_feed(d, file->data, file->len); /* an error is kept and returned by finish */
    int st = cp_dec_finish(d);
    if (st != CP_OK) snprintf(err, errsz, "%s", st < 0 ? cp_dec_error(d) : "torn tail at end of file");
    cp_dec_free(d);
    return st;
}

/* ---- timing ---------------------------------------------------------------------------- */

typedef struct result {
    const char *kind, *file;
    size_t bytes;
    uint64_t records;  /* per pass */
    uint64_t passes;
    double seconds;
    double mbps, recps;
    double memcpy_mbps;
    int status;
    char err[200];
} result;

/* Keeps the compiler from dropping the copies: it must assume dst is read. */
static void clobber(void *p) { __asm__ volatile("" : : "r"(p) : "memory"); }

static double secs_since(uint64_t t0) { return (double)(cp_mono_ns() - t0) / 1e9; }

static void bench_one(cp_stream_kind kind, const char *file, const cp_buf *data, double min_time, result *r,
                      uint64_t *checksum)
{
    memset(r, 0, sizeof *r);
    r->kind = cp_stream_kind_name(kind);
    r->file = file;
    r->bytes = data->len;

    /* warm-up pass; it also gives the per-pass record count */
    counter c = {0, 0};
    r->status = decode_once(kind, data, &c, r->err, sizeof r->err);
    r->records = c.records;
    if (r->status != CP_OK) return;

    c.records = 0;
    uint64_t t0 = cp_mono_ns();
    do {
        decode_once(kind, data, &c, r->err, sizeof r->err);
        r->passes++;
    } while (secs_since(t0) < min_time);
    r->seconds = secs_since(t0);
    if (c.records != r->records * r->passes) {
        snprintf(r->err, sizeof r->err, "record count changed between passes");
        r->status = CP_EPROTO;
        return;
    }
    *checksum += c.sum;
    r->mbps = (double)r->bytes * (double)r->passes / r->seconds / 1e6;
    r->recps = (double)c.records / r->seconds;

    /* baseline: memcpy of the same bytes, same loop, at least half the time */
    uint8_t *dst = malloc(data->len ? data->len : 1);
    if (!dst) return;
    uint64_t copies = 0;
    t0 = cp_mono_ns();
    do {
        memcpy(dst, data->data, data->len);
        clobber(dst);
        copies++;
    } while (secs_since(t0) < min_time / 2);
    double s = secs_since(t0);
    *checksum += dst[0];
    free(dst);
    r->memcpy_mbps = (double)data->len * (double)copies / s / 1e6;
}

/* ---- output ----------------------------------------------------------------------------- */

static void json_string(const char *s)
{
    cp_buf b;
    cp_buf_init(&b);
    cp_json_str(&b, s, strlen(s));
    fwrite(b.data, 1, b.len, stdout);
    cp_buf_free(&b);
}

static void print_table(const result *res, size_t n, double min_time)
{
    printf("decode throughput, one core, fresh decoder per pass, >= %.2f s per input (MB = 10^6 bytes)\n\n", min_time);
    printf("%-14s %-44s %9s %8s %9s %10s %12s %11s %8s\n", "kind", "file", "bytes", "records", "passes", "MB/s",
           "records/s", "memcpy MB/s", "dec/cpy");
    for (size_t i = 0; i < n; i++) {
        const result *r = &res[i];
        if (r->status != CP_OK) {
            printf("%-14s %-44s %9zu  FAILED: %s\n", r->kind, r->file, r->bytes, r->err);
            continue;
        }
        printf("%-14s %-44s %9zu %8llu %9llu %10.1f %12.0f %11.0f %7.2f%%\n", r->kind, r->file, r->bytes,
               (unsigned long long)r->records, (unsigned long long)r->passes, r->mbps, r->recps, r->memcpy_mbps,
               100.0 * r->mbps / r->memcpy_mbps);
    }
}

static void print_json(const result *res, size_t n, double min_time)
{
    printf("{\"bench\":\"decode\",\"min_time_s\":%.3f,\"results\":[", min_time);
    for (size_t i = 0; i < n; i++) {
        const result *r = &res[i];
        printf("%s\n{\"kind\":", i ? "," : "");
        json_string(r->kind);
        printf(",\"file\":");
        json_string(r->file);
        printf(",\"bytes\":%zu,\"status\":", r->bytes);
        json_string(r->status == CP_OK ? "ok" : r->err);
        if (r->status == CP_OK)
            printf(",\"records\":%llu,\"passes\":%llu,\"seconds\":%.4f,\"mb_per_s\":%.2f,\"records_per_s\":%.0f,"
                   "\"memcpy_mb_per_s\":%.1f,\"decode_over_memcpy\":%.5f",
                   (unsigned long long)r->records, (unsigned long long)r->passes, r->seconds, r->mbps, r->recps,
                   r->memcpy_mbps, r->mbps / r->memcpy_mbps);
        printf("}");
    }
    printf("\n]}\n");
}

static void usage(FILE *f)
{
    fprintf(f, "usage: bench_decode [--json] [--min-time SECONDS] [--fixtures DIR] [--kind KIND]\n");
}

int main(int argc, char **argv)
{
    int json = 0;
    double min_time = 0.5;
    const char *dir = CP_FIXTURES_DIR;
    cp_stream_kind only = CP_STREAM_UNKNOWN;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--json")) json = 1;
        else if (!strcmp(argv[i], "--min-time") && i + 1 < argc) min_time = atof(argv[++i]);
        else if (!strcmp(argv[i], "--fixtures") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--kind") && i + 1 < argc) {
            only = cp_stream_kind_parse(argv[++i]);
            if (only == CP_STREAM_UNKNOWN) {
                fprintf(stderr, "bench_decode: unknown kind '%s'\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (!(min_time > 0)) min_time = 0.5;

    result res[CP_ARRAY_LEN(inputs)];
    size_t n = 0;
    int failed = 0;
    uint64_t checksum = 0;
    for (size_t i = 0; i < CP_ARRAY_LEN(inputs); i++) {
        if (only != CP_STREAM_UNKNOWN && inputs[i].kind != only) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, inputs[i].file);
        cp_buf data;
        cp_buf_init(&data);
        if (cp_read_file(path, (size_t)1 << 30, &data) != CP_OK) {
            fprintf(stderr, "bench_decode: cannot read %s\n", path);
            failed = 1;
            continue;
        }
        bench_one(inputs[i].kind, inputs[i].file, &data, min_time, &res[n], &checksum);
        if (res[n].status != CP_OK) failed = 1;
        n++;
        cp_buf_free(&data);
    }
    if (json) print_json(res, n, min_time);
    else print_table(res, n, min_time);
    /* the checksum keeps the sinks' work observable; it means nothing */
    if (!json) printf("\n(checksum %016llx)\n", (unsigned long long)checksum);
    return failed;
}
