/* connections.c -- server memory and descriptors per idle agent connection (issue #3:
 * "<= 16 KB of server RSS per idle agent connection at 10,000 connections").
 *
 * Starts `cloudprof serve` on a fresh temporary data directory (pinned to core 0), reads
 * its RSS, then opens N connections from one epoll loop (pinned to core 1 when there is
 * one). Each connection does what an idle agent does (protocol.md §3):
 *
 *   handshake (client version 100705; pods spread over namespaces and services)
 *   INIT of trace, calls, xml, sql, dictionary (posDictionary if the server replied
 *   100705), suspend, params -- each reply awaited
 *   the headers an agent writes at open, each stream's followed by 0x11 and its acks:
 *   trace 8-byte timer start, calls 16-byte header, dictionary one phrase of a few
 *   words, params one phrase (phrase lengths go as their own 4-byte payloads)
 *   then only flush cycles: every 5 s one 0x11 per stream, each ack awaited (the
 *   cycles of all connections are spread evenly over the 5 s)
 *
 * Once every connection is set up and a couple of cycles have passed (--settle), the
 * server's RSS is read again: rss_per_connection_kb = (after - before) / established.
 * Also reported: the server's fds (and how many are stream files), failed connections,
 * the set-up time, and the acks (every one must be 0x00; as many as commands needing
 * one). Then all connections close, the server gets SIGTERM and must exit 0, and the
 * temporary directory is removed (unless --keep).
 *
 *   bench_connections [--connections N] [--server PATH] [--settle SEC] [--concurrency K]
 *                     [--tmp DIR] [--protocol-version V] [--log-level L] [--json] [--keep]
 *
 * Exit status 0 when everything checked out (no failed connection, no bad ack, clean
 * server exit), 1 otherwise, 2 on bad usage. */
#include "common/cp_common.h"
#include "wire/cp_wire.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <signal.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NSTREAMS 7
#define CYCLE_MS 5000
#define CLIENT_VERSION CP_PROTOCOL_V3
#define PORTS_PER_IP 25000 /* connections per loopback source address */

enum { S_TRACE, S_CALLS, S_XML, S_SQL, S_DICT, S_SUSPEND, S_PARAMS };
static const char *const stream_names[NSTREAMS] = {"trace", "calls", "xml", "sql", "dictionary", "suspend", "params"};

/* ---- options ------------------------------------------------------------------------------ */

typedef struct opts {
    size_t connections;
    const char *server;
    double settle_s;
    size_t concurrency;
    const char *tmp;
    const char *protocol_version;
    const char *log_level;
    int json;
    int keep;
} opts;

static void usage(FILE *f)
{
    fputs("usage: bench_connections [--connections N] [--server PATH] [--settle SEC] [--concurrency K]\n"
          "                         [--tmp DIR] [--protocol-version V] [--log-level L] [--json] [--keep]\n"
          "  --connections N      idle agent connections to hold (default 10000)\n"
          "  --server PATH        cloudprof binary (default: ../cloudprof beside this program,\n"
          "                       else build-bench/cloudprof)\n"
          "  --settle SEC         seconds to keep flush cycles going after set-up (default 12)\n"
          "  --concurrency K      connections being set up at once (default 200)\n"
          "  --tmp DIR            where the temporary data directory goes (default /dev/shm if\n"
          "                       writable, else $TMPDIR or /tmp; use a disk path to include\n"
          "                       the file system's costs in the set-up time)\n"
          "  --protocol-version V server's handshake reply: 100605 (default) or 100705\n"
          "  --log-level L        server log level (default info; the log stays in the temp dir)\n"
          "  --json               print one JSON object\n"
          "  --keep               keep the temporary directory\n",
          f);
}

static int parse_opts(int argc, char **argv, opts *o)
{
    memset(o, 0, sizeof *o);
    o->connections = 10000;
    o->settle_s = 12;
    o->concurrency = 200;
    o->log_level = "info";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--json")) o->json = 1;
        else if (!strcmp(a, "--keep")) o->keep = 1;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            exit(0);
        } else if (v && !strcmp(a, "--connections")) o->connections = strtoul(argv[++i], NULL, 10);
        else if (v && !strcmp(a, "--server")) o->server = argv[++i];
        else if (v && !strcmp(a, "--settle")) o->settle_s = strtod(argv[++i], NULL);
        else if (v && !strcmp(a, "--concurrency")) o->concurrency = strtoul(argv[++i], NULL, 10);
        else if (v && !strcmp(a, "--tmp")) o->tmp = argv[++i];
        else if (v && !strcmp(a, "--protocol-version")) o->protocol_version = argv[++i];
        else if (v && !strcmp(a, "--log-level")) o->log_level = argv[++i];
        else {
            fprintf(stderr, "bench_connections: bad argument '%s'\n", a);
            usage(stderr);
            return -1;
        }
    }
    if (o->connections == 0 || o->concurrency == 0 || o->settle_s < 0) {
        fprintf(stderr, "bench_connections: --connections and --concurrency must be > 0\n");
        return -1;
    }
    return 0;
}

/* ---- small helpers -------------------------------------------------------------------------- */

static uint64_t now_ms(void) { return cp_mono_ns() / 1000000u; }

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void pin_to_cpu(pid_t pid, int cpu)
{
    if (cpu >= sysconf(_SC_NPROCESSORS_ONLN)) return;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    sched_setaffinity(pid, sizeof set, &set); /* best effort */
}

static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

/* The server binary: --server, else <dir of this program>/../cloudprof, else build-bench. */
static const char *find_server(const opts *o, char *buf, size_t len)
{
    if (o->server) return o->server;
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            snprintf(buf, len, "%s/../cloudprof", self);
            if (access(buf, X_OK) == 0) return buf;
        }
    }
    return "build-bench/cloudprof";
}

/* ---- the server process ---------------------------------------------------------------------- */

typedef struct server {
    pid_t pid;
    int port;
    char root[PATH_MAX];
    char data[PATH_MAX + 16];
    char ready[PATH_MAX + 16];
    char log[PATH_MAX + 16];
} server;

/* tmpfs when there is one: the bench measures memory, and on a disk file system the
 * creation and removal of 70,000 stream files (and their fsyncs) dominate the run. */
static const char *default_tmp(void)
{
    struct stat sb;
    if (stat("/dev/shm", &sb) == 0 && S_ISDIR(sb.st_mode) && access("/dev/shm", W_OK) == 0) return "/dev/shm";
    const char *t = getenv("TMPDIR");
    return t && *t ? t : "/tmp";
}

static int server_start(server *s, const opts *o, const char *bin)
{
    const char *base = o->tmp ? o->tmp : default_tmp();
    snprintf(s->root, sizeof s->root, "%s/cloudprof-bench-conn-XXXXXX", base);
    if (!mkdtemp(s->root)) {
        fprintf(stderr, "bench_connections: mkdtemp %s: %s\n", s->root, strerror(errno));
        return -1;
    }
    snprintf(s->data, sizeof s->data, "%s/data", s->root);
    snprintf(s->ready, sizeof s->ready, "%s/ready", s->root);
    snprintf(s->log, sizeof s->log, "%s/server.log", s->root);
    char maxconn[32];
    snprintf(maxconn, sizeof maxconn, "%zu", o->connections + 100 > 20000 ? o->connections + 100 : 20000);
    const char *argv[24];
    size_t n = 0;
    const char *fixed[] = {bin, "serve", "--agent-host", "127.0.0.1", "--agent-port", "auto", "--http-port", "0", "--data", s->data,
                           "--ready-file", s->ready, "--idle-timeout", "0", "--max-connections", maxconn,
                           "--log-level", o->log_level};
    for (size_t i = 0; i < CP_ARRAY_LEN(fixed); i++) argv[n++] = fixed[i];
    if (o->protocol_version) {
        argv[n++] = "--protocol-version";
        argv[n++] = o->protocol_version;
    }
    argv[n] = NULL;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        pin_to_cpu(0, 0);
        int fd = open(s->log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execv(bin, (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", bin, strerror(errno));
        _exit(127);
    }
    s->pid = pid;
    for (uint64_t deadline = now_ms() + 10000; now_ms() < deadline; sleep_ms(10)) {
        int status;
        if (waitpid(pid, &status, WNOHANG) == pid) {
            fprintf(stderr, "bench_connections: the server exited before it was ready (log: %s)\n", s->log);
            s->pid = 0;
            return -1;
        }
        FILE *f = fopen(s->ready, "r");
        if (!f) continue;
        int ok = fscanf(f, "agent_port=%d", &s->port) == 1;
        fclose(f);
        if (ok) return 0;
    }
    fprintf(stderr, "bench_connections: no ready file after 10 s (log: %s)\n", s->log);
    return -1;
}

/* SIGTERM and wait (<= timeout_ms); returns the wait status, or -1 if it had to be killed. */
static int server_stop(server *s, int timeout_ms)
{
    if (!s->pid) return -1;
    kill(s->pid, SIGTERM);
    int status = 0;
    for (uint64_t deadline = now_ms() + (uint64_t)timeout_ms;;) {
        pid_t r = waitpid(s->pid, &status, WNOHANG);
        if (r == s->pid) break;
        if (now_ms() > deadline) {
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &status, 0);
            s->pid = 0;
            return -1;
        }
        sleep_ms(20);
    }
    s->pid = 0;
    return status;
}

static void remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (d) {
        for (struct dirent *e; (e = readdir(d));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char sub[PATH_MAX];
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
            struct stat sb;
            if (lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode)) remove_tree(sub);
            else unlink(sub);
        }
        closedir(d);
    }
    rmdir(path);
}

/* ---- the server's memory and descriptors ------------------------------------------------------ */

typedef struct mem {
    long rss_kb, anon_kb, file_kb, hwm_kb;
} mem;

static int read_mem(pid_t pid, mem *m)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    memset(m, 0, sizeof *m);
    while (fgets(line, sizeof line, f)) {
        sscanf(line, "VmRSS: %ld", &m->rss_kb);
        sscanf(line, "RssAnon: %ld", &m->anon_kb);
        sscanf(line, "RssFile: %ld", &m->file_kb);
        sscanf(line, "VmHWM: %ld", &m->hwm_kb);
    }
    fclose(f);
    return 0;
}

/* The server's open fds, and how many of them are files of its raw log. */
static void count_fds(const server *s, long *total, long *stream_files)
{
    char dir[64], raw[PATH_MAX + 8], real[PATH_MAX];
    *total = *stream_files = 0;
    if (!realpath(s->data, real)) return;
    snprintf(raw, sizeof raw, "%s/raw/", real);
    snprintf(dir, sizeof dir, "/proc/%d/fd", (int)s->pid);
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.') continue;
        (*total)++;
        char link[PATH_MAX + 64], target[PATH_MAX];
        snprintf(link, sizeof link, "%s/%s", dir, e->d_name);
        ssize_t n = readlink(link, target, sizeof target - 1);
        if (n <= 0) continue;
        target[n] = 0;
        if (!strncmp(target, raw, strlen(raw))) (*stream_files)++;
    }
    closedir(d);
}

/* ---- stream headers --------------------------------------------------------------------------- */

static void put_varint(cp_buf *b, uint32_t v)
{
    while (v >= 0x80) {
        cp_buf_putc(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    cp_buf_putc(b, (uint8_t)v);
}

/* varstring of an ASCII text: UTF-16 unit count, then the units big-endian */
static void put_vs(cp_buf *b, const char *s)
{
    size_t n = strlen(s);
    put_varint(b, (uint32_t)n);
    for (size_t i = 0; i < n; i++) {
        cp_buf_putc(b, 0);
        cp_buf_putc(b, (uint8_t)s[i]);
    }
}

static void put_be64(cp_buf *b, uint64_t v)
{
    for (int i = 7; i >= 0; i--) cp_buf_putc(b, (uint8_t)(v >> (8 * i)));
}

/* The bytes an agent writes to stream k when it opens it (empty: none). Phrase streams
 * are given as [4-byte length][body], which the agent sends as two payloads. */
static void stream_header(int k, int pos_dictionary, uint64_t start_ms, cp_buf *out)
{
    static const char *const words[] = {"call.info", "profiler.title", "call.red", "java.lang.Thread.run",
                                        "org.example.Service.handle"};
    cp_buf body;
    cp_buf_init(&body);
    cp_buf_reset(out);
    switch (k) {
    case S_TRACE: put_be64(out, start_ms); break;
    case S_CALLS:
        put_be64(out, 0xFFFEFDFC00000004ull);
        put_be64(out, start_ms);
        break;
    case S_DICT:
        for (size_t i = 0; i < CP_ARRAY_LEN(words); i++) {
            if (pos_dictionary) put_varint(&body, (uint32_t)i);
            put_vs(&body, words[i]);
        }
        break;
    case S_PARAMS:
        cp_buf_putc(&body, 1); /* format version */
        put_vs(&body, "request.id");
        cp_buf_putc(&body, 1);
        cp_buf_putc(&body, 0);
        put_varint(&body, 100);
        put_vs(&body, "");
        break;
    default: break; /* xml, sql: no header; suspend: nothing until a pause */
    }
    if (body.len) {
        uint8_t len[4] = {(uint8_t)(body.len >> 24), (uint8_t)(body.len >> 16), (uint8_t)(body.len >> 8),
                          (uint8_t)body.len};
        cp_buf_append(out, len, 4);
        cp_buf_append(out, body.data, body.len);
    }
    cp_buf_free(&body);
}

/* ---- the client connections ------------------------------------------------------------------- */

enum { C_NEW, C_CONNECTING, C_HANDSHAKE, C_INIT, C_HEADERS, C_IDLE, C_CYCLE, C_FAILED, C_CLOSED };

typedef struct bconn {
    int fd;
    uint8_t state;
    uint8_t stream;        /* INIT / header / cycle position */
    uint8_t want, have;    /* reply bytes expected in this step, and gathered */
    uint8_t pos_dict;      /* the server replied 100705 */
    uint8_t handles[NSTREAMS][16];
    uint8_t reply[36];
} bconn;

typedef struct bench {
    const opts *o;
    server srv;
    int ep;
    bconn *c;
    size_t n, next_open, in_setup, established, failed, cycling;
    uint64_t acks, acks_expected, bad_acks, cycles, late_cycles;
    uint64_t t_start, t_established;
    uint64_t cycle_seq;    /* cycle starts scheduled so far (connection = seq % n) */
    uint64_t start_ms;     /* wall-clock ms written into headers */
    char first_error[256];
    cp_buf scratch;
} bench;

static void conn_fail(bench *b, bconn *c, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void conn_fail(bench *b, bconn *c, const char *fmt, ...)
{
    if (c->state == C_FAILED) return;
    if (!b->first_error[0]) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(b->first_error, sizeof b->first_error, fmt, ap);
        va_end(ap);
    }
    if (c->state < C_IDLE) b->in_setup--;
    else b->established--;
    if (c->state == C_CYCLE) b->cycling--;
    c->state = C_FAILED;
    b->failed++;
    if (c->fd >= 0) close(c->fd);
    c->fd = -1;
}

static int send_all(bench *b, bconn *c, const void *p, size_t n)
{
    ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
    if (w == (ssize_t)n) return 0;
    conn_fail(b, c, "send: %s", w < 0 ? strerror(errno) : "short write on an idle socket");
    return -1;
}

static void expect(bconn *c, int state, size_t want)
{
    c->state = (uint8_t)state;
    c->want = (uint8_t)want;
    c->have = 0;
}

static void send_handshake(bench *b, bconn *c, size_t i)
{
    char pod[96], service[32], ns[32];
    snprintf(pod, sizeof pod, "bench-svc-%zu-%08zx-pod%zu_1700000000000", i % 16, i * 2654435761u % 0xFFFFFFFFu, i);
    snprintf(service, sizeof service, "bench-svc-%zu", i % 16);
    snprintf(ns, sizeof ns, "bench-ns-%zu", i % 4);
    cp_buf_reset(&b->scratch);
    cp_wire_put_handshake(&b->scratch, CLIENT_VERSION, pod, service, ns);
    if (send_all(b, c, b->scratch.data, b->scratch.len) == 0) expect(c, C_HANDSHAKE, 8);
}

static const char *stream_wire_name(const bconn *c, int k)
{
    return k == S_DICT && c->pos_dict ? "posDictionary" : stream_names[k];
}

static void send_init(bench *b, bconn *c)
{
    cp_buf_reset(&b->scratch);
    cp_wire_put_init(&b->scratch, stream_wire_name(c, c->stream), 0, c->stream == S_DICT);
    if (send_all(b, c, b->scratch.data, b->scratch.len) == 0) expect(c, C_INIT, 36);
}

/* Sends the next stream's header (skipping streams without one) with its 0x11; after
 * the last one the connection is set up. */
static void send_next_header(bench *b, bconn *c)
{
    cp_buf hdr;
    cp_buf_init(&hdr);
    for (; c->stream < NSTREAMS; c->stream++) {
        stream_header(c->stream, c->pos_dict, b->start_ms, &hdr);
        if (hdr.len) break;
    }
    if (c->stream == NSTREAMS) {
        cp_buf_free(&hdr);
        c->state = C_IDLE;
        b->in_setup--;
        b->established++;
        if (b->established + b->failed == b->n) b->t_established = now_ms();
        return;
    }
    cp_buf_reset(&b->scratch);
    size_t nacks = 1;
    int phrased = c->stream == S_DICT || c->stream == S_PARAMS;
    if (phrased) { /* the phrase length goes as its own payload, as the agent sends it */
        cp_wire_put_data(&b->scratch, c->handles[c->stream], hdr.data, 4);
        cp_wire_put_data(&b->scratch, c->handles[c->stream], hdr.data + 4, (uint32_t)(hdr.len - 4));
        nacks += 2;
    } else {
        cp_wire_put_data(&b->scratch, c->handles[c->stream], hdr.data, (uint32_t)hdr.len);
        nacks += 1;
    }
    cp_buf_putc(&b->scratch, CP_CMD_ACK_FLUSH);
    cp_buf_free(&hdr);
    b->acks_expected += nacks;
    if (send_all(b, c, b->scratch.data, b->scratch.len) == 0) expect(c, C_HEADERS, nacks);
}

static void send_cycle_flush(bench *b, bconn *c)
{
    uint8_t cmd = CP_CMD_ACK_FLUSH;
    b->acks_expected++;
    if (send_all(b, c, &cmd, 1) == 0) expect(c, C_CYCLE, 1);
}

/* Starts connection i: non-blocking connect from 127.0.0.(1 + i / PORTS_PER_IP). */
static void conn_start(bench *b, size_t i)
{
    bconn *c = &b->c[i];
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    b->in_setup++;
    c->state = C_CONNECTING;
    if (c->fd < 0) {
        conn_fail(b, c, "socket: %s", strerror(errno));
        return;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    size_t ip = i / PORTS_PER_IP;
    if (ip > 0) {
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK + (uint32_t)ip);
        if (bind(c->fd, (struct sockaddr *)&a, sizeof a) != 0) {
            conn_fail(b, c, "bind 127.0.0.%zu: %s", 1 + ip, strerror(errno));
            return;
        }
    }
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)b->srv.port);
    if (connect(c->fd, (struct sockaddr *)&a, sizeof a) != 0 && errno != EINPROGRESS) {
        conn_fail(b, c, "connect: %s", strerror(errno));
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.u64 = i};
    if (epoll_ctl(b->ep, EPOLL_CTL_ADD, c->fd, &ev) != 0) conn_fail(b, c, "epoll_ctl: %s", strerror(errno));
}

static void on_connected(bench *b, bconn *c, size_t i)
{
    int err = 0;
    socklen_t len = sizeof err;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err) {
        conn_fail(b, c, "connect: %s", strerror(err));
        return;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = i};
    epoll_ctl(b->ep, EPOLL_CTL_MOD, c->fd, &ev);
    send_handshake(b, c, i);
}

/* A complete reply for the current step arrived. */
static void step_done(bench *b, bconn *c)
{
    switch (c->state) {
    case C_HANDSHAKE: {
        int64_t v = (int64_t)cp_be64(c->reply);
        if (v != CP_PROTOCOL_V2 && v != CP_PROTOCOL_V3) {
            conn_fail(b, c, "handshake reply %lld", (long long)v);
            return;
        }
        c->pos_dict = v == CP_PROTOCOL_V3;
        c->stream = 0;
        send_init(b, c);
        return;
    }
    case C_INIT: {
        static const uint8_t null_handle[16];
        if (!memcmp(c->reply, null_handle, 16)) {
            conn_fail(b, c, "INIT %s: null handle", stream_wire_name(c, c->stream));
            return;
        }
        memcpy(c->handles[c->stream], c->reply, 16);
        if (++c->stream < NSTREAMS) send_init(b, c);
        else {
            c->stream = 0;
            send_next_header(b, c);
        }
        return;
    }
    case C_HEADERS:
        c->stream++;
        send_next_header(b, c);
        return;
    case C_CYCLE:
        if (++c->stream < NSTREAMS) send_cycle_flush(b, c);
        else {
            c->state = C_IDLE;
            b->cycling--;
            b->cycles++;
        }
        return;
    default: conn_fail(b, c, "reply in state %d", c->state);
    }
}

/* Reply bytes: INIT and handshake replies gather into c->reply; ack bytes must be 0x00. */
static void on_readable(bench *b, bconn *c)
{
    uint8_t buf[64];
    ssize_t n = recv(c->fd, buf, sizeof buf, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
    if (n <= 0) {
        conn_fail(b, c, "server closed the connection (%s) in state %d", n < 0 ? strerror(errno) : "EOF", c->state);
        return;
    }
    int acks = c->state == C_HEADERS || c->state == C_CYCLE;
    if ((size_t)n > (size_t)(c->want - c->have)) {
        conn_fail(b, c, "%zd unexpected bytes in state %d", n - (c->want - c->have), c->state);
        return;
    }
    int bad = -1;
    for (ssize_t i = 0; i < n; i++) {
        if (acks) {
            b->acks++;
            if (buf[i] != CP_ACK_OK) {
                b->bad_acks++;
                bad = buf[i];
            }
        } else {
            c->reply[c->have + i] = buf[i];
        }
    }
    c->have = (uint8_t)(c->have + n);
    if (bad >= 0) {
        conn_fail(b, c, "ack 0x%02x", bad);
        return;
    }
    if (c->have == c->want) step_done(b, c);
}

/* Cycle k belongs to connection k % n and is due at t_start + (k / n) * 5 s + its
 * phase (k % n) * 5 s / n: every connection flushes every 5 s, all evenly spread. */
static void start_due_cycles(bench *b, uint64_t now, int allow)
{
    for (;;) {
        uint64_t k = b->cycle_seq;
        size_t i = (size_t)(k % b->n);
        uint64_t due = b->t_start + (k / b->n) * CYCLE_MS + (uint64_t)i * CYCLE_MS / b->n;
        if (due > now) return;
        b->cycle_seq++;
        bconn *c = &b->c[i];
        if (!allow) continue;
        if (c->state == C_CYCLE) b->late_cycles++;
        if (c->state != C_IDLE) continue;
        b->cycling++;
        c->stream = 0;
        send_cycle_flush(b, c);
    }
}

/* One pass of the loop: open connections up to the concurrency, start due cycles, and
 * handle what the sockets have. */
static void loop_once(bench *b, int timeout_ms, int allow_cycles)
{
    while (b->next_open < b->n && b->in_setup < b->o->concurrency) conn_start(b, b->next_open++);
    start_due_cycles(b, now_ms(), allow_cycles);
    struct epoll_event ev[512];
    int n = epoll_wait(b->ep, ev, 512, timeout_ms);
    for (int j = 0; j < n; j++) {
        size_t i = (size_t)ev[j].data.u64;
        bconn *c = &b->c[i];
        if (c->state == C_FAILED || c->fd < 0) continue;
        if (c->state == C_CONNECTING) {
            if (ev[j].events & (EPOLLOUT | EPOLLERR | EPOLLHUP)) on_connected(b, c, i);
            continue;
        }
        if (ev[j].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) on_readable(b, c);
    }
}

/* ---- report -------------------------------------------------------------------------------- */

typedef struct result {
    mem before, after;
    long fds, stream_fds;
    double establish_s, stop_s;
    int exit_status;
    double per_conn_kb;
} result;

/* A JSON string (quoted) of s, in b; returns it as a C string. */
static const char *json_text(cp_buf *b, const char *s)
{
    cp_buf_init(b);
    cp_json_str(b, s, strlen(s));
    cp_buf_putc(b, 0);
    return (const char *)b->data;
}

static void report(const bench *b, const result *r)
{
    const opts *o = b->o;
    if (o->json) {
        cp_buf dir, err;
        printf("{\"connections\":%zu,\"established\":%zu,\"failed\":%zu,\"establish_s\":%.2f,"
               "\"rss_before_kb\":%ld,\"rss_after_kb\":%ld,\"rss_anon_after_kb\":%ld,\"rss_file_after_kb\":%ld,"
               "\"hwm_kb\":%ld,\"rss_per_connection_kb\":%.2f,\"server_fds\":%ld,\"server_stream_fds\":%ld,"
               "\"flush_cycles\":%llu,\"late_cycles\":%llu,\"acks\":%llu,\"acks_expected\":%llu,\"bad_acks\":%llu,"
               "\"stop_s\":%.2f,\"server_exit\":%d,\"data_dir\":%s,\"first_error\":%s}\n",
               b->n, b->established, b->failed, r->establish_s, r->before.rss_kb, r->after.rss_kb,
               r->after.anon_kb, r->after.file_kb, r->after.hwm_kb, r->per_conn_kb, r->fds, r->stream_fds,
               (unsigned long long)b->cycles, (unsigned long long)b->late_cycles, (unsigned long long)b->acks,
               (unsigned long long)b->acks_expected, (unsigned long long)b->bad_acks, r->stop_s, r->exit_status,
               json_text(&dir, b->srv.data), json_text(&err, b->first_error));
        cp_buf_free(&dir);
        cp_buf_free(&err);
        return;
    }
    printf("connections          %zu requested, %zu established, %zu failed\n", b->n, b->established, b->failed);
    printf("set-up time          %.2f s\n", r->establish_s);
    printf("server RSS before    %ld kB (anon %ld, file %ld)\n", r->before.rss_kb, r->before.anon_kb,
           r->before.file_kb);
    printf("server RSS after     %ld kB (anon %ld, file %ld), peak %ld kB\n", r->after.rss_kb, r->after.anon_kb,
           r->after.file_kb, r->after.hwm_kb);
    printf("rss_per_connection   %.2f kB\n", r->per_conn_kb);
    printf("server fds           %ld (stream files %ld)\n", r->fds, r->stream_fds);
    printf("flush cycles         %llu done, %llu late\n", (unsigned long long)b->cycles,
           (unsigned long long)b->late_cycles);
    printf("acks                 %llu received, %llu expected, %llu not 0x00\n", (unsigned long long)b->acks,
           (unsigned long long)b->acks_expected, (unsigned long long)b->bad_acks);
    printf("server stop          %.2f s, exit status %d\n", r->stop_s, r->exit_status);
    printf("data directory       %s\n", b->srv.data);
}

/* ---- main -------------------------------------------------------------------------------------- */

/* Finishes the cycles in progress (no new ones) so every ack can be counted. */
static void drain_cycles(bench *b)
{
    for (uint64_t deadline = now_ms() + 5000; b->cycling && now_ms() < deadline;) loop_once(b, 10, 0);
}

static int run(bench *b, result *r)
{
    const opts *o = b->o;
    sleep_ms(300); /* let the server settle before the baseline */
    read_mem(b->srv.pid, &r->before);
    b->ep = epoll_create1(EPOLL_CLOEXEC);
    if (b->ep < 0) return -1;
    b->t_start = now_ms();
    b->start_ms = (uint64_t)cp_now_ms();
    uint64_t setup_deadline = b->t_start + 120000;
    while (b->established + b->failed < b->n && now_ms() < setup_deadline) loop_once(b, 10, 1);
    if (!b->t_established) b->t_established = now_ms();
    r->establish_s = (double)(b->t_established - b->t_start) / 1000.0;
    if (!o->json)
        fprintf(stderr, "set up %zu connections (%zu failed) in %.2f s; settling %.0f s\n", b->established,
                b->failed, r->establish_s, o->settle_s);
    for (uint64_t end = now_ms() + (uint64_t)(o->settle_s * 1000); now_ms() < end;) loop_once(b, 10, 1);
    drain_cycles(b);
    read_mem(b->srv.pid, &r->after);
    count_fds(&b->srv, &r->fds, &r->stream_fds);
    r->per_conn_kb = b->established ? (double)(r->after.rss_kb - r->before.rss_kb) / (double)b->established : 0;
    for (size_t i = 0; i < b->n; i++)
        if (b->c[i].fd >= 0) {
            close(b->c[i].fd);
            b->c[i].fd = -1;
        }
    close(b->ep);
    uint64_t t = now_ms();
    int status = server_stop(&b->srv, 60000);
    r->stop_s = (double)(now_ms() - t) / 1000.0;
    r->exit_status = status < 0 ? -1 : WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return 0;
}

int main(int argc, char **argv)
{
    opts o;
    if (parse_opts(argc, argv, &o) != 0) return 2;
    signal(SIGPIPE, SIG_IGN);
    raise_nofile();
    char buf[PATH_MAX + 32];
    const char *bin = find_server(&o, buf, sizeof buf);
    bench b;
    memset(&b, 0, sizeof b);
    b.o = &o;
    b.n = o.connections;
    b.c = calloc(b.n, sizeof *b.c);
    if (!b.c) return 1;
    for (size_t i = 0; i < b.n; i++) b.c[i].fd = -1;
    if (server_start(&b.srv, &o, bin) != 0) {
        server_stop(&b.srv, 5000);
        return 1;
    }
    pin_to_cpu(0, 1);
    result r;
    memset(&r, 0, sizeof r);
    int st = run(&b, &r);
    report(&b, &r);
    int ok = st == 0 && b.failed == 0 && b.bad_acks == 0 && b.acks == b.acks_expected && r.exit_status == 0;
    if (b.first_error[0]) fprintf(stderr, "bench_connections: first failure: %s\n", b.first_error);
    if (!ok || o.keep) fprintf(stderr, "bench_connections: data and server log kept in %s\n", b.srv.root);
    else remove_tree(b.srv.root);
    cp_buf_free(&b.scratch);
    free(b.c);
    return ok ? 0 : 1;
}
