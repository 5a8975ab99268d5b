/* tptp.c -- bench_tptp: a generator of large TPTP binary traces and the baseline the import
 * benchmark compares with (issue 15).
 *
 *   bench_tptp gen --out FILE [--size BYTES] [--threads N] [--seed S]
 *       writes a .trcbin of about BYTES (default 1 GiB) with cloudprof's encoder: the usual
 *       prelude (frequency in µs, node, process, agent, trace), N threads (default 16),
 *       4 000 methods of 400 classes, then calls one thread after another in turns: call
 *       trees of 20..600 entries (depth up to 40, fan-out 1..8), method entries/exits with
 *       tickets and cpu times, an objAlloc every 7 entries, a monWait/monWaited pair every
 *       50, a GC every 2 000 calls; prints messages and calls written.
 *   bench_tptp walk FILE
 *       the baseline: reads the file in 1 MiB blocks and walks its message headers only
 *       (id, size; every message skipped by its size), prints messages, bytes and seconds.
 *
 * scripts: bench/import.sh runs both and `cloudprof import` on the same file.
 */
#include "common/cp_common.h"
#include "streams/cp_tptp.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NMETHODS 4000
#define NCLASSES 400
#define BLOCK (1u << 20)

static uint64_t rnd(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* ---- gen --------------------------------------------------------------------------------- */

typedef struct gen {
    cp_tptp_enc enc;
    cp_buf out;
    FILE *f;
    uint64_t seed, messages, calls, bytes;
    int64_t ticks;     /* µs */
    int64_t ticket;
    char names[NMETHODS][48];
    char classes[NCLASSES][64];
} gen;

static void msg(cp_tptp_msg *m, uint16_t id)
{
    memset(m, 0, sizeof *m);
    m->id = id;
    m->def = cp_tptp_def_of(id);
}

static void set_i(cp_tptp_msg *m, const char *k, int64_t v) { m->v[cp_tptp_attr_index(m->def, k)].i = v; }
static void set_s(cp_tptp_msg *m, const char *k, const char *s)
{
    m->v[cp_tptp_attr_index(m->def, k)].s = (cp_tptp_text){s, strlen(s)};
}

static int emit(gen *g, const cp_tptp_msg *m)
{
    if (cp_tptp_enc_msg(&g->enc, m, &g->out) != CP_OK) return -1;
    g->messages++;
    if (g->out.len >= BLOCK) {
        if (fwrite(g->out.data, 1, g->out.len, g->f) != g->out.len) return -1;
        g->bytes += g->out.len;
        g->out.len = 0;
    }
    return 0;
}

static int prelude(gen *g, int threads)
{
    cp_tptp_msg m;
    msg(&m, CP_TPTP_FREQUENCY);
    m.v[0].i = 1000000;
    if (emit(g, &m)) return -1;
    msg(&m, CP_TPTP_NODE);
    set_s(&m, "nodeId", "node-1");
    set_s(&m, "hostname", "bench-host");
    set_i(&m, "time", g->ticks);
    if (emit(g, &m)) return -1;
    msg(&m, CP_TPTP_PROCESS_CREATE);
    set_s(&m, "processId", "p-1");
    set_s(&m, "name", "java");
    set_s(&m, "nodeIdRef", "node-1");
    set_i(&m, "time", g->ticks);
    if (emit(g, &m)) return -1;
    msg(&m, CP_TPTP_AGENT_CREATE);
    set_s(&m, "agentId", "a-1");
    set_s(&m, "processIdRef", "p-1");
    set_s(&m, "agentName", "bench-service");
    set_i(&m, "time", g->ticks);
    if (emit(g, &m)) return -1;
    for (int c = 0; c < NCLASSES; c++) {
        snprintf(g->classes[c], sizeof g->classes[c], "com.acme.bench.pkg%d.Service%d", c % 17, c);
        msg(&m, CP_TPTP_CLASS_DEF);
        set_i(&m, "classId", c + 1);
        set_s(&m, "name", g->classes[c]);
        char src[64];
        snprintf(src, sizeof src, "Service%d.java", c);
        set_s(&m, "sourceName", src);
        if (emit(g, &m)) return -1;
    }
    for (int i = 0; i < NMETHODS; i++) {
        snprintf(g->names[i], sizeof g->names[i], "handle%d", i);
        msg(&m, CP_TPTP_METHOD_DEF);
        set_s(&m, "name", g->names[i]);
        set_s(&m, "signature", i % 3 ? "(Ljava/lang/String;)V" : "(JI)Ljava/lang/Object;");
        set_i(&m, "startLineNumber", 10 + i % 500);
        set_i(&m, "classIdRef", i % NCLASSES + 1);
        set_i(&m, "methodId", i + 1);
        if (emit(g, &m)) return -1;
    }
    for (int t = 0; t < threads; t++) {
        char name[64];
        snprintf(name, sizeof name, "http-nio-8080-exec-%d", t + 1);
        msg(&m, CP_TPTP_THREAD_START);
        set_i(&m, "threadId", t + 1);
        set_s(&m, "threadName", name);
        if (emit(g, &m)) return -1;
    }
    return 0;
}

/* One call tree on thread t: entries and exits, depth-first. */
static int call_tree(gen *g, int t, int depth, int *budget)
{
    cp_tptp_msg m;
    int64_t ticket = ++g->ticket;
    int method = (int)(rnd(&g->seed) % NMETHODS) + 1;
    msg(&m, CP_TPTP_METHOD_ENTRY);
    set_i(&m, "threadIdRef", t);
    set_i(&m, "time", g->ticks);
    set_i(&m, "methodIdRef", method);
    set_i(&m, "ticket", ticket);
    set_i(&m, "classIdRef", (method - 1) % NCLASSES + 1);
    set_i(&m, "threadCpuTime", g->ticks / 2);
    set_i(&m, "stackDepth", depth);
    if (emit(g, &m)) return -1;
    (*budget)--;
    g->ticks += 3 + (int64_t)(rnd(&g->seed) % 40);
    if (g->ticket % 7 == 0) {
        msg(&m, CP_TPTP_OBJ_ALLOC);
        set_i(&m, "threadIdRef", t);
        set_i(&m, "time", g->ticks);
        set_i(&m, "size", 16 + (int64_t)(rnd(&g->seed) % 4096));
        if (emit(g, &m)) return -1;
    }
    if (g->ticket % 50 == 0) {
        for (int k = 0; k < 2; k++) {
            msg(&m, k ? CP_TPTP_MON_WAITED : CP_TPTP_MON_WAIT);
            set_i(&m, "threadIdRef", t);
            set_i(&m, "time", g->ticks);
            if (emit(g, &m)) return -1;
            g->ticks += 20;
        }
    }
    int kids = depth < 40 && *budget > 0 ? (int)(rnd(&g->seed) % 9) : 0;
    for (int k = 0; k < kids && *budget > 0; k++)
        if (call_tree(g, t, depth + 1, budget)) return -1;
    g->ticks += 1 + (int64_t)(rnd(&g->seed) % 25);
    msg(&m, CP_TPTP_METHOD_EXIT);
    set_i(&m, "threadIdRef", t);
    set_i(&m, "time", g->ticks);
    set_i(&m, "ticket", ticket);
    set_i(&m, "threadCpuTime", g->ticks / 2);
    set_i(&m, "methodIdRef", method);
    return emit(g, &m);
}

static int cmd_gen(int argc, char **argv)
{
    const char *out = NULL;
    uint64_t size = 1ull << 30, threads = 16, seed = 1;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--out")) out = argv[i + 1];
        else if (!strcmp(argv[i], "--size")) size = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--threads")) threads = strtoull(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--seed")) seed = strtoull(argv[i + 1], NULL, 10);
    }
    if (!out || !threads || threads > 10000) {
        fprintf(stderr, "usage: bench_tptp gen --out FILE [--size BYTES] [--threads N] [--seed S]\n");
        return 2;
    }
    gen *g = calloc(1, sizeof *g);
    g->f = fopen(out, "wb");
    if (!g->f) {
        perror(out);
        return 1;
    }
    cp_buf_init(&g->out);
    cp_tptp_enc_init(&g->enc, CP_TPTP_BIN);
    g->seed = seed * 0x9E3779B97F4A7C15ULL + 1;
    g->ticks = 1711546836000000LL;
    if (cp_tptp_enc_begin(&g->enc, &g->out) != CP_OK || prelude(g, (int)threads)) return 1;
    for (uint64_t n = 0; g->bytes + g->out.len < size; n++) {
        int budget = 20 + (int)(rnd(&g->seed) % 580);
        if (call_tree(g, (int)(n % threads) + 1, 1, &budget)) return 1;
        g->calls++;
        if (g->calls % 2000 == 0) {
            cp_tptp_msg m;
            msg(&m, CP_TPTP_GC_START);
            set_i(&m, "time", g->ticks);
            if (emit(g, &m)) return 1;
            g->ticks += 5000;
            msg(&m, CP_TPTP_GC_FINISH);
            set_i(&m, "time", g->ticks);
            if (emit(g, &m)) return 1;
        }
    }
    if (fwrite(g->out.data, 1, g->out.len, g->f) != g->out.len || fclose(g->f) != 0) {
        perror(out);
        return 1;
    }
    g->bytes += g->out.len;
    printf("gen: %s: %" PRIu64 " bytes, %" PRIu64 " messages, %" PRIu64 " calls\n", out, g->bytes, g->messages, g->calls);
    cp_buf_free(&g->out);
    free(g);
    return 0;
}

/* ---- walk: the baseline -------------------------------------------------------------------- */

static int cmd_walk(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    uint8_t *buf = malloc(BLOCK + 16);
    double t0 = now_s();
    uint64_t messages = 0, bytes = 0, pos = 0, next = 12; /* the next header's file offset */
    uint8_t hdr[6];
    size_t have = 0; /* header bytes gathered across blocks */
    size_t n;
    int le = 1;
    while ((n = fread(buf, 1, BLOCK, f)) > 0) {
        if (pos == 0 && n >= 12) le = buf[7] == 1;
        uint64_t end = pos + n;
        while (next + have < end) { /* next: the header's offset; have: its bytes gathered */
            size_t at = (size_t)(next + have - pos);
            size_t take = 6 - have < n - at ? 6 - have : n - at;
            memcpy(hdr + have, buf + at, take);
            have += take;
            if (have < 6) break; /* cut by the block: the rest comes with the next one */
            uint32_t size = le ? (uint32_t)hdr[2] | (uint32_t)hdr[3] << 8 | (uint32_t)hdr[4] << 16 | (uint32_t)hdr[5] << 24
                               : cp_be32(hdr + 2);
            next += 6 + size;
            messages++;
            have = 0;
        }
        pos = end;
        bytes += n;
    }
    double secs = now_s() - t0;
    fclose(f);
    free(buf);
    printf("walk: %" PRIu64 " messages, %" PRIu64 " bytes, %.3f s, %.0f messages/s, %.1f MB/s\n", messages, bytes, secs,
           (double)messages / secs, (double)bytes / 1e6 / secs);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "gen")) return cmd_gen(argc, argv);
    if (argc == 3 && !strcmp(argv[1], "walk")) return cmd_walk(argv[2]);
    fprintf(stderr, "usage: bench_tptp gen --out FILE [--size BYTES] [--threads N] | bench_tptp walk FILE\n");
    return 2;
}
