/* emulate.c -- `cloudprof emulate`: options (flags over environment) -> cp_agent_run, a
 * progress line on stderr, and the summary (human readable, or one JSON object). */
#include "agent/cp_agent.h"
#include "cli/cp_cli.h"
#include "wire/cp_wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_text[] =
    "usage: cloudprof emulate [options]\n"
    "\n"
    "Emulates profiler agents against a collector: each virtual agent is one TCP connection\n"
    "that speaks the agent protocol (handshake, INIT of every stream, RCV_DATA, 0x11 flush\n"
    "cycles, rotation, reconnects, CLOSE) and streams generated calls, traces, sql/xml values,\n"
    "dictionary, suspend and params. Every ack is checked. Each option can also be given by\n"
    "the environment variable shown; a flag wins.\n"
    "\n"
    "  --target HOST:PORT       collector agent port (CLOUDPROF_EMULATE_TARGET, default\n"
    "                           127.0.0.1:1715)\n"
    "  --agents N               virtual agents (CLOUDPROF_EMULATE_AGENTS, default 10)\n"
    "  --duration S             seconds to stream before the final flush and CLOSE\n"
    "                           (CLOUDPROF_EMULATE_DURATION, default 10)\n"
    "  --calls-per-sec R        root calls per second per agent; 0 = as fast as the server\n"
    "                           acknowledges (CLOUDPROF_EMULATE_CALLS_PER_SEC, default 100)\n"
    "  --calls-per-flush K      instead of a rate: K root calls per agent after each flush cycle,\n"
    "                           so what each flush carries does not depend on timing (tests)\n"
    "                           (CLOUDPROF_EMULATE_CALLS_PER_FLUSH, default 0 = use the rate)\n"
    "  --max-calls N            root calls per agent, at most: an agent that made N sends its\n"
    "                           final flush cycle and CLOSE at once, and the run ends when every\n"
    "                           agent is done or at --duration, whichever comes first\n"
    "                           (CLOUDPROF_EMULATE_MAX_CALLS, default 0 = no limit)\n"
    "  --trace-depth D          deepest call level, 1..64 (CLOUDPROF_EMULATE_TRACE_DEPTH,\n"
    "                           default 4)\n"
    "  --namespaces K           namespaces the agents are spread over\n"
    "                           (CLOUDPROF_EMULATE_NAMESPACES, default 1)\n"
    "  --services M             services per namespace (CLOUDPROF_EMULATE_SERVICES, default 1)\n"
    "  --seed N                 generator seed; the same seed gives the same streams\n"
    "                           (CLOUDPROF_EMULATE_SEED, default 1)\n"
    "  --reconnect-every S      drop each connection (without CLOSE, after a flush cycle) and\n"
    "                           reconnect every S seconds, 0 = never\n"
    "                           (CLOUDPROF_EMULATE_RECONNECT_EVERY, default 0)\n"
    "  --reconnect-delay MS     wait before reconnecting after a drop or an error (the real\n"
    "                           agent waits 10000) (CLOUDPROF_EMULATE_RECONNECT_DELAY, default 1000)\n"
    "  --flush-interval MS      flush cycle period: tails, 0x11, ack drain per stream\n"
    "                           (CLOUDPROF_EMULATE_FLUSH_INTERVAL, default 5000)\n"
    "  --protocol-version V     client version in the handshake: 100705 or 100605\n"
    "                           (CLOUDPROF_EMULATE_PROTOCOL_VERSION, default 100705)\n"
    "  --tls                    connect with TLS 1.2/1.3 (the collector's --agent-tls-port);\n"
    "                           the server's chain is verified, its host name is not, as by\n"
    "                           the real agent (CLOUDPROF_EMULATE_TLS=1)\n"
    "  --ca FILE                PEM CA certificate(s) to verify the server with\n"
    "                           (CLOUDPROF_EMULATE_CA, default the system's trust store)\n"
    "  --cert FILE, --key FILE  PEM client certificate and key, sent when the server asks\n"
    "                           for one (mutual TLS) (CLOUDPROF_EMULATE_CERT, _KEY)\n"
    "  --json                   print the summary as one JSON object (the last line of stdout);\n"
    "                           the human-readable summary then goes to stderr\n"
    "  --quiet                  no progress lines (and no human summary with --json)\n"
    "  --help                   this text\n"
    "\n"
    "Exit status: 0 if every ack arrived and was 0x00 and no connection failed, 1 otherwise,\n"
    "2 on usage errors.\n";

typedef struct emu_opts {
    cp_agent_opts run;
    char host[256];
    int json, quiet;
} emu_opts;

enum {
    OPT_TARGET, OPT_AGENTS, OPT_DURATION, OPT_RATE, OPT_DEPTH, OPT_NAMESPACES, OPT_SERVICES, OPT_SEED,
    OPT_RECONNECT_EVERY, OPT_RECONNECT_DELAY, OPT_FLUSH, OPT_VERSION, OPT_PER_FLUSH, OPT_MAX_CALLS, OPT_TLS_CA,
    OPT_TLS_CERT, OPT_TLS_KEY, OPT_TLS, OPT_COUNT
};

static const struct {
    const char *flag;
    const char *env;
} options[OPT_COUNT] = {
    [OPT_TARGET] = {"--target", "CLOUDPROF_EMULATE_TARGET"},
    [OPT_AGENTS] = {"--agents", "CLOUDPROF_EMULATE_AGENTS"},
    [OPT_DURATION] = {"--duration", "CLOUDPROF_EMULATE_DURATION"},
    [OPT_RATE] = {"--calls-per-sec", "CLOUDPROF_EMULATE_CALLS_PER_SEC"},
    [OPT_DEPTH] = {"--trace-depth", "CLOUDPROF_EMULATE_TRACE_DEPTH"},
    [OPT_NAMESPACES] = {"--namespaces", "CLOUDPROF_EMULATE_NAMESPACES"},
    [OPT_SERVICES] = {"--services", "CLOUDPROF_EMULATE_SERVICES"},
    [OPT_SEED] = {"--seed", "CLOUDPROF_EMULATE_SEED"},
    [OPT_RECONNECT_EVERY] = {"--reconnect-every", "CLOUDPROF_EMULATE_RECONNECT_EVERY"},
    [OPT_RECONNECT_DELAY] = {"--reconnect-delay", "CLOUDPROF_EMULATE_RECONNECT_DELAY"},
    [OPT_FLUSH] = {"--flush-interval", "CLOUDPROF_EMULATE_FLUSH_INTERVAL"},
    [OPT_VERSION] = {"--protocol-version", "CLOUDPROF_EMULATE_PROTOCOL_VERSION"},
    [OPT_PER_FLUSH] = {"--calls-per-flush", "CLOUDPROF_EMULATE_CALLS_PER_FLUSH"},
    [OPT_MAX_CALLS] = {"--max-calls", "CLOUDPROF_EMULATE_MAX_CALLS"},
    [OPT_TLS_CA] = {"--ca", "CLOUDPROF_EMULATE_CA"},
    [OPT_TLS_CERT] = {"--cert", "CLOUDPROF_EMULATE_CERT"},
    [OPT_TLS_KEY] = {"--key", "CLOUDPROF_EMULATE_KEY"},
    [OPT_TLS] = {"--tls", "CLOUDPROF_EMULATE_TLS"}, /* a flag without a value; 1/0 in the environment */
};

/* Seconds with up to three decimals ("3", "0.5") -> milliseconds. */
static int parse_seconds_ms(const char *s, uint64_t max_ms, uint64_t *out)
{
    char whole[24];
    const char *dot = strchr(s, '.');
    size_t n = dot ? (size_t)(dot - s) : strlen(s);
    if (n == 0 || n >= sizeof whole) return CP_EINVAL;
    memcpy(whole, s, n);
    whole[n] = 0;
    uint64_t sec, ms = 0;
    if (cp_parse_u64(whole, max_ms / 1000, &sec) != CP_OK) return CP_EINVAL;
    if (dot) {
        const char *f = dot + 1;
        size_t k = strlen(f);
        if (!k || k > 3) return CP_EINVAL;
        for (size_t i = 0; i < 3; i++) {
            if (i < k && (f[i] < '0' || f[i] > '9')) return CP_EINVAL;
            ms = ms * 10 + (i < k ? (uint64_t)(f[i] - '0') : 0);
        }
    }
    if (sec * 1000 + ms > max_ms) return CP_EINVAL;
    *out = sec * 1000 + ms;
    return CP_OK;
}

static int parse_target(emu_opts *o, const char *v)
{
    const char *colon = strrchr(v, ':');
    uint64_t port;
    if (!colon || colon == v || (size_t)(colon - v) >= sizeof o->host || cp_parse_u64(colon + 1, 65535, &port) != CP_OK ||
        !port)
        return CP_EINVAL;
    const char *h = v;
    size_t n = (size_t)(colon - v);
    if (h[0] == '[' && n >= 2 && h[n - 1] == ']') { /* [::1]:1715 */
        h++;
        n -= 2;
    }
    memcpy(o->host, h, n);
    o->host[n] = 0;
    o->run.host = o->host;
    o->run.port = (int)port;
    return CP_OK;
}

/* Applies one option value; `source` names the flag or variable in messages. */
static int apply(emu_opts *o, int opt, const char *v, const char *source)
{
    cp_agent_opts *r = &o->run;
    uint64_t n = 0;
    int st = CP_OK;
    const char *want = "";
    switch (opt) {
    case OPT_TARGET:
        st = parse_target(o, v);
        want = "HOST:PORT";
        break;
    case OPT_AGENTS:
        if ((st = cp_parse_u64(v, 100000, &n)) == CP_OK && n) r->agents = (uint32_t)n;
        else st = CP_EINVAL;
        want = "a number of agents (1-100000)";
        break;
    case OPT_DURATION:
        if ((st = parse_seconds_ms(v, 100000000, &n)) == CP_OK) r->duration_ms = (uint32_t)n;
        want = "seconds (e.g. 10 or 2.5)";
        break;
    case OPT_RATE:
        if ((st = cp_parse_u64(v, 10000000, &n)) == CP_OK) r->calls_per_sec = (uint32_t)n;
        want = "calls per second (0 = as fast as acknowledged)";
        break;
    case OPT_PER_FLUSH:
        if ((st = cp_parse_u64(v, 1000000, &n)) == CP_OK) r->calls_per_flush = (uint32_t)n;
        want = "calls per flush cycle (0-1000000, 0 = use the rate)";
        break;
    case OPT_MAX_CALLS:
        if ((st = cp_parse_u64(v, UINT64_MAX, &n)) == CP_OK) r->max_calls = n;
        want = "a number of calls (0 = no limit)";
        break;
    case OPT_DEPTH:
        if ((st = cp_parse_u64(v, CP_AGENT_MAX_DEPTH, &n)) == CP_OK && n) r->trace_depth = (int)n;
        else st = CP_EINVAL;
        want = "a depth (1-64)";
        break;
    case OPT_NAMESPACES:
    case OPT_SERVICES:
        if ((st = cp_parse_u64(v, 100000, &n)) == CP_OK && n) {
            if (opt == OPT_NAMESPACES) r->namespaces = (uint32_t)n;
            else r->services = (uint32_t)n;
        } else {
            st = CP_EINVAL;
        }
        want = "a count (1-100000)";
        break;
    case OPT_SEED:
        if ((st = cp_parse_u64(v, UINT64_MAX, &n)) == CP_OK) r->seed = n;
        want = "a number";
        break;
    case OPT_RECONNECT_EVERY:
        if ((st = parse_seconds_ms(v, 100000000, &n)) == CP_OK) r->reconnect_every_ms = (uint32_t)n;
        want = "seconds (0 = never)";
        break;
    case OPT_RECONNECT_DELAY:
        if ((st = cp_parse_u64(v, 3600000, &n)) == CP_OK) r->reconnect_delay_ms = (uint32_t)n;
        want = "milliseconds";
        break;
    case OPT_FLUSH:
        if ((st = cp_parse_u64(v, 3600000, &n)) == CP_OK && n) r->flush_interval_ms = (uint32_t)n;
        else st = CP_EINVAL;
        want = "milliseconds (> 0)";
        break;
    case OPT_VERSION:
        if (cp_parse_u64(v, INT64_MAX, &n) == CP_OK && (n == CP_PROTOCOL_V2 || n == CP_PROTOCOL_V3))
            r->protocol_version = (int64_t)n;
        else st = CP_EINVAL;
        want = "100705 or 100605";
        break;
    case OPT_TLS_CA: r->tls_ca = v; break;
    case OPT_TLS_CERT: r->tls_cert = v; break;
    case OPT_TLS_KEY: r->tls_key = v; break;
    case OPT_TLS:
        if ((st = cp_parse_u64(v, 1, &n)) == CP_OK) r->tls = (int)n;
        want = "1 or 0";
        break;
    }
    if (st != CP_OK) fprintf(stderr, "cloudprof emulate: %s: '%s' is not %s\n", source, v, want);
    return st;
}

/* Environment first, then flags. Returns 0 to run, 1 after --help, 2 on a usage error. */
static int parse_args(emu_opts *o, int argc, char **argv)
{
    for (int i = 0; i < OPT_COUNT; i++) {
        const char *v = getenv(options[i].env);
        if (v && *v && apply(o, i, v, options[i].env) != CP_OK) return 2;
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(usage_text, stdout);
            return 1;
        }
        if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        }
        if (!strcmp(a, "--quiet")) {
            o->quiet = 1;
            continue;
        }
        if (!strcmp(a, "--tls")) {
            o->run.tls = 1;
            continue;
        }
        int opt = -1;
        const char *v = NULL;
        for (int k = 0; k < OPT_COUNT && opt < 0; k++) {
            size_t n = strlen(options[k].flag);
            if (strncmp(a, options[k].flag, n) != 0) continue;
            if (a[n] == '=') v = a + n + 1;
            else if (a[n] == 0 && i + 1 < argc) v = argv[++i];
            else if (a[n] != 0) continue;
            opt = k;
        }
        if (opt < 0 || !v) {
            fprintf(stderr, "cloudprof emulate: %s '%s'\n\n%s", opt < 0 ? "unknown option" : "missing value for", a,
                    usage_text);
            return 2;
        }
        if (apply(o, opt, v, options[opt].flag) != CP_OK) return 2;
    }
    return 0;
}

/* ---- output ------------------------------------------------------------------------------- */

typedef struct progress {
    double t;
    uint64_t calls, generated, bytes;
} progress;

static void on_progress(void *ud, const cp_agent_stats *st)
{
    progress *p = ud;
    double dt = st->elapsed_s - p->t;
    if (dt <= 0) dt = 1;
    fprintf(stderr,
            "[%7.1fs] agents %u/%u connected, %.0f calls/s acknowledged (%.0f generated), %.2f MB/s, "
            "acks %llu, errors %llu\n",
            st->elapsed_s, st->connected, st->agents, (double)(st->calls_sent - p->calls) / dt,
            (double)(st->calls_generated - p->generated) / dt, (double)(st->bytes_sent - p->bytes) / 1e6 / dt,
            (unsigned long long)st->acks, (unsigned long long)st->errors);
    p->t = st->elapsed_s;
    p->calls = st->calls_sent;
    p->generated = st->calls_generated;
    p->bytes = st->bytes_sent;
}

static double per(double a, double b) { return b > 0 ? a / b : 0; }

static void print_human(FILE *f, const cp_agent_stats *st)
{
    double secs = st->elapsed_s;
    fprintf(f, "agents:        %u (%llu connections, %llu reconnects, %llu blacklisted)\n", st->agents,
            (unsigned long long)st->connects, (unsigned long long)st->reconnects, (unsigned long long)st->blacklisted);
    fprintf(f, "duration:      %.3f s\n", secs);
    fprintf(f, "calls:         %llu acknowledged of %llu generated (%.0f calls/s)\n",
            (unsigned long long)st->calls_sent, (unsigned long long)st->calls_generated,
            per((double)st->calls_sent, secs));
    fprintf(f, "stream bytes:  %llu acknowledged (%.2f MB/s), %llu on the wire\n", (unsigned long long)st->bytes_sent,
            per((double)st->bytes_sent / 1e6, secs), (unsigned long long)st->wire_bytes);
    for (int k = CP_STREAM_TRACE; k <= CP_STREAM_PARAMS; k++)
        if (st->stream_bytes[k])
            fprintf(f, "  %-13s %llu\n", cp_stream_kind_name((cp_stream_kind)k),
                    (unsigned long long)st->stream_bytes[k]);
    fprintf(f, "per call:      %.1f trace bytes, %.1f calls bytes\n",
            per((double)st->stream_bytes[CP_STREAM_TRACE], (double)st->calls_sent),
            per((double)st->stream_bytes[CP_STREAM_CALLS], (double)st->calls_sent));
    fprintf(f, "acks:          %llu (%llu flushes, %llu rotations), latency p50 %.3f ms, p99 %.3f ms\n",
            (unsigned long long)st->acks, (unsigned long long)st->flushes, (unsigned long long)st->rotations,
            cp_agent_hist_quantile_ms(&st->latency, 0.50), cp_agent_hist_quantile_ms(&st->latency, 0.99));
    fprintf(f, "               RCV_DATA p50 %.3f ms, p99 %.3f ms; 0x11 p50 %.3f ms, p99 %.3f ms\n",
            cp_agent_hist_quantile_ms(&st->latency_data, 0.50), cp_agent_hist_quantile_ms(&st->latency_data, 0.99),
            cp_agent_hist_quantile_ms(&st->latency_flush, 0.50), cp_agent_hist_quantile_ms(&st->latency_flush, 0.99));
    fprintf(f, "errors:        %llu (%llu acks missing)%s%s\n", (unsigned long long)st->errors,
            (unsigned long long)st->missing_acks, st->last_error[0] ? ", last: " : "", st->last_error);
}

static void print_json(const cp_agent_stats *st)
{
    cp_buf b;
    cp_buf_init(&b);
    double secs = st->elapsed_s;
    cp_buf_printf(&b,
                  "{\"agents\":%u,\"duration_s\":%.3f,\"calls_sent\":%llu,\"bytes_sent\":%llu,\"acks\":%llu,"
                  "\"errors\":%llu,\"ack_p50_ms\":%.3f,\"ack_p99_ms\":%.3f,\"ack_data_p50_ms\":%.3f,"
                  "\"ack_data_p99_ms\":%.3f,\"ack_flush_p50_ms\":%.3f,\"ack_flush_p99_ms\":%.3f,\"missing_acks\":%llu,"
                  "\"calls_generated\":%llu,\"calls_per_sec\":%.1f,\"mb_per_sec\":%.3f,\"wire_bytes\":%llu,"
                  "\"flushes\":%llu,\"connects\":%llu,\"reconnects\":%llu,\"rotations\":%llu,\"blacklisted\":%u,"
                  "\"threads\":%llu,\"dictionary_words\":%llu,\"trace_bytes_per_call\":%.1f,"
                  "\"calls_bytes_per_call\":%.1f,\"stream_bytes\":{",
                  st->agents, secs, (unsigned long long)st->calls_sent, (unsigned long long)st->bytes_sent,
                  (unsigned long long)st->acks, (unsigned long long)st->errors,
                  cp_agent_hist_quantile_ms(&st->latency, 0.50), cp_agent_hist_quantile_ms(&st->latency, 0.99),
                  cp_agent_hist_quantile_ms(&st->latency_data, 0.50), cp_agent_hist_quantile_ms(&st->latency_data, 0.99),
                  cp_agent_hist_quantile_ms(&st->latency_flush, 0.50),
                  cp_agent_hist_quantile_ms(&st->latency_flush, 0.99), (unsigned long long)st->missing_acks, (unsigned long long)st->calls_generated,
                  per((double)st->calls_sent, secs), per((double)st->bytes_sent / 1e6, secs),
                  (unsigned long long)st->wire_bytes, (unsigned long long)st->flushes,
                  (unsigned long long)st->connects, (unsigned long long)st->reconnects,
                  (unsigned long long)st->rotations, st->blacklisted, (unsigned long long)st->threads,
                  (unsigned long long)st->words, per((double)st->stream_bytes[CP_STREAM_TRACE], (double)st->calls_sent),
                  per((double)st->stream_bytes[CP_STREAM_CALLS], (double)st->calls_sent));
    for (int k = CP_STREAM_TRACE; k <= CP_STREAM_PARAMS; k++)
        cp_buf_printf(&b, "%s\"%s\":%llu", k == CP_STREAM_TRACE ? "" : ",", cp_stream_kind_name((cp_stream_kind)k),
                      (unsigned long long)st->stream_bytes[k]);
    cp_buf_puts(&b, "},\"last_error\":");
    cp_json_str(&b, st->last_error, strlen(st->last_error));
    cp_buf_puts(&b, "}\n");
    fwrite(b.data, 1, b.len, stdout);
    fflush(stdout);
    cp_buf_free(&b);
}

int cp_cli_emulate(int argc, char **argv)
{
    emu_opts o;
    memset(&o, 0, sizeof o);
    cp_agent_opts_default(&o.run);
    int pr = parse_args(&o, argc, argv);
    if (pr) return pr == 1 ? 0 : 2;
    if (!o.run.tls && (o.run.tls_ca || o.run.tls_cert || o.run.tls_key)) {
        fprintf(stderr, "cloudprof emulate: --ca, --cert and --key need --tls\n");
        return 2;
    }
    progress p = {0};
    if (!o.quiet) {
        o.run.progress = on_progress;
        o.run.progress_ud = &p;
        o.run.progress_ms = 2000;
    }
    cp_agent_stats *st = calloc(1, sizeof *st);
    if (!st) {
        fprintf(stderr, "cloudprof emulate: out of memory\n");
        return 1;
    }
    char why[256] = "";
    int rc = cp_agent_run(&o.run, st, why, sizeof why);
    if (rc != CP_OK) {
        fprintf(stderr, "cloudprof emulate: %s\n", why[0] ? why : cp_strstatus(rc));
        free(st);
        return rc == CP_EINVAL ? 2 : 1;
    }
    if (!o.json) print_human(stdout, st);
    else if (!o.quiet) print_human(stderr, st);
    if (o.json) print_json(st);
    int failed = st->errors || st->missing_acks;
    free(st);
    return failed ? 1 : 0;
}
