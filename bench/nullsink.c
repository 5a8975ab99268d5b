/* nullsink.c -- the "null collector", baseline of the ingest benchmark (bench_nullsink).
 *
 * It speaks the agent protocol (protocol.md §3) with the least possible work, the network
 * equivalent of `cat > /dev/null`: one thread, one epoll set, each readable socket is read
 * into one big buffer, complete commands are walked with cp_wire_parse and answered, and
 * nothing is stored or decoded:
 *   0x14 handshake  -> the --protocol-version (default 100705)
 *   0x15/0x01 INIT  -> a non-null handle derived from a counter, the rotation period/size
 *                      (0/0 unless --rotation says otherwise), seq = the requested one
 *   0x02 RCV_DATA   -> 0x00          0x11 REQUEST_ACK_FLUSH -> 0x00
 *   anything else that parses (0x13, 0x04, 0x08) -> ignored; EOF or a parse error -> close
 * The replies produced by one read go out in one write. The handle is not checked
 * against the connection's streams, so RCV_DATA costs one parse and one reply byte.
 *
 * usage: bench_nullsink [--port N] [--host ADDR] [--ready-file FILE] [--duration SEC]
 *                       [--protocol-version V] [--rotation KIND=PERIOD_MS:SIZE[,...]] [--json]
 * Runs until SIGTERM/SIGINT (or --duration seconds), then prints what it received.
 */
#include "common/cp_common.h"
#include "streams/cp_streams.h"
#include "wire/cp_wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define READ_BUF (1u << 20)  /* one read takes up to 1 MiB */
#define MAX_EVENTS 256
#define TAG_LISTEN ((uint64_t)-1)
#define TAG_SIGNAL ((uint64_t)-2)

typedef struct conn {
    int fd;
    uint32_t carry_len;            /* a partial command kept from the last read */
    uint8_t carry[CP_WIRE_MAX_CMD];
    uint8_t *out;                  /* replies a full socket did not take (rare) */
    size_t out_len, out_cap;
} conn;

typedef struct stats {
    uint64_t bytes;        /* every byte read from agent sockets */
    uint64_t commands;
    uint64_t data;         /* RCV_DATA commands */
    uint64_t payload;      /* their payload bytes */
    uint64_t flushes;      /* REQUEST_ACK_FLUSH */
    uint64_t inits;
    uint64_t handshakes;
    uint64_t connections;
    uint64_t errors;       /* connections closed on a parse error */
} stats;

static struct {
    int64_t version;
    int64_t period[CP_STREAM_KIND_COUNT];
    int64_t size[CP_STREAM_KIND_COUNT];
    uint64_t handle_counter;
    int ep;
    uint8_t *buf;          /* CP_WIRE_MAX_CMD of room for a carry, then READ_BUF */
    uint8_t *reply;        /* replies of one read */
    size_t reply_cap;
    stats st;
} g;

static void die(const char *what)
{
    fprintf(stderr, "bench_nullsink: %s: %s\n", what, strerror(errno));
    exit(1);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- options ------------------------------------------------------------------------------ */

static int parse_rotation(const char *spec)
{
    char *copy = strdup(spec);
    if (!copy) return -1;
    int rc = 0;
    for (char *save = NULL, *item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '='), *colon = eq ? strchr(eq, ':') : NULL;
        if (!eq || !colon) {
            rc = -1;
            break;
        }
        *eq = *colon = 0;
        char *e1, *e2;
        long long period = strtoll(eq + 1, &e1, 10), size = strtoll(colon + 1, &e2, 10);
        int all = !strcasecmp(item, "all");
        cp_stream_kind kind = all ? CP_STREAM_UNKNOWN : cp_stream_kind_parse(item);
        if (*e1 || *e2 || e1 == eq + 1 || e2 == colon + 1 || period < 0 || size < 0 ||
            (!all && kind == CP_STREAM_UNKNOWN)) {
            rc = -1;
            break;
        }
        for (int k = 0; k < CP_STREAM_KIND_COUNT; k++) {
            if (!all && k != (int)kind) continue;
            g.period[k] = period;
            g.size[k] = size;
        }
    }
    free(copy);
    return rc;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: bench_nullsink [--port N] [--host ADDR] [--ready-file FILE] [--duration SEC]\n"
            "                      [--protocol-version V] [--rotation KIND=PERIOD_MS:SIZE[,...]] [--json]\n"
            "\n"
            "The null collector: answers the agent protocol with the least possible work and\n"
            "stores nothing (the baseline of bench/ingest.sh).\n"
            "  --port N              agent port, 0 = any free port (default 1715)\n"
            "  --host ADDR           IPv4 listen address (default 0.0.0.0)\n"
            "  --ready-file FILE     once listening, write 'agent_port=N' to FILE (atomically)\n"
            "  --duration SEC        stop after SEC seconds (default: run until SIGTERM/SIGINT)\n"
            "  --protocol-version V  handshake reply (default 100705)\n"
            "  --rotation SPEC       INIT rotation period/size per stream, as `cloudprof serve\n"
            "                        --rotation` (default 0:0 for every stream)\n"
            "  --json                print the totals at exit as one JSON object\n");
}

/* ---- connections -------------------------------------------------------------------------- */

static void conn_close(conn *c)
{
    close(c->fd); /* also removes it from the epoll set */
    free(c->out);
    free(c);
}

static int set_events(conn *c, uint32_t ev)
{
    struct epoll_event e = {.events = ev, .data.ptr = c};
    return epoll_ctl(g.ep, EPOLL_CTL_MOD, c->fd, &e);
}

/* Writes replies; what the socket does not take waits in c->out (reading pauses until it
 * has drained, so replies stay in order and memory stays bounded). */
static int conn_send(conn *c, const uint8_t *p, size_t n)
{
    if (c->out_len == 0) {
        while (n > 0) {
            ssize_t w = write(c->fd, p, n);
            if (w < 0) {
                if (errno == EINTR) continue;
                if (errno == EAGAIN || errno == EWOULDBLOCK) break;
                return -1;
            }
            p += w;
            n -= (size_t)w;
        }
        if (n == 0) return 0;
    }
    if (c->out_len + n > c->out_cap) {
        size_t cap = c->out_cap ? c->out_cap : 4096;
        while (cap < c->out_len + n) cap *= 2;
        uint8_t *o = realloc(c->out, cap);
        if (!o) return -1;
        c->out = o;
        c->out_cap = cap;
    }
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
    return set_events(c, EPOLLOUT);
}

static int conn_drain_out(conn *c)
{
    size_t off = 0;
    while (off < c->out_len) {
        ssize_t w = write(c->fd, c->out + off, c->out_len - off);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            return -1;
        }
        off += (size_t)w;
    }
    memmove(c->out, c->out + off, c->out_len - off);
    c->out_len -= off;
    return c->out_len ? 0 : set_events(c, EPOLLIN);
}

static uint8_t *reply_room(size_t *len, size_t need)
{
    if (*len + need > g.reply_cap) {
        size_t cap = g.reply_cap * 2;
        while (cap < *len + need) cap *= 2;
        uint8_t *r = realloc(g.reply, cap);
        if (!r) return NULL;
        g.reply = r;
        g.reply_cap = cap;
    }
    return g.reply + *len;
}

/* One read: the carried partial command, then whatever the socket has. Returns -1 when
 * the connection is finished (EOF, error, bad command). */
static int conn_read(conn *c)
{
    uint8_t *start = g.buf + CP_WIRE_MAX_CMD - c->carry_len;
    memcpy(start, c->carry, c->carry_len);
    ssize_t r;
    do r = read(c->fd, g.buf + CP_WIRE_MAX_CMD, READ_BUF);
    while (r < 0 && errno == EINTR);
    if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
    if (r == 0) return -1;
    g.st.bytes += (uint64_t)r;

    size_t n = c->carry_len + (size_t)r, off = 0, rlen = 0;
    cp_cmd cmd;
    size_t used;
    int st;
    while ((st = cp_wire_parse(start + off, n - off, &cmd, &used)) == CP_OK) {
        off += used;
        g.st.commands++;
        uint8_t *o;
        switch (cmd.type) {
        case CP_CMD_DATA:
            g.st.data++;
            g.st.payload += cmd.u.data.payload.n;
            __attribute__((fallthrough));
        case CP_CMD_ACK_FLUSH:
            if (!(o = reply_room(&rlen, 1))) return -1;
            *o = CP_ACK_OK;
            rlen++;
            g.st.flushes += cmd.type == CP_CMD_ACK_FLUSH;
            break;
        case CP_CMD_HANDSHAKE:
            g.st.handshakes++;
            if (!(o = reply_room(&rlen, 8))) return -1;
            rlen += cp_wire_put_version(o, g.version);
            break;
        case CP_CMD_INIT:
        case CP_CMD_INIT_LEGACY: {
            g.st.inits++;
            uint8_t handle[16] = {0x4e, 0x55, 0x4c, 0x4c}; /* "NULL" + counter: never all zero */
            cp_put_be64(handle + 8, ++g.handle_counter);
            cp_stream_kind k = cp_stream_kind_from_name((const char *)cmd.u.init.stream.p, cmd.u.init.stream.n);
            if (!(o = reply_room(&rlen, 36))) return -1;
            rlen += cp_wire_put_init_ok(o, handle, g.period[k], g.size[k], cmd.u.init.seq);
            break;
        }
        default: /* 0x13 report, 0x04 close (EOF follows), 0x08 legacy: nothing to answer */
            break;
        }
    }
    if (st != CP_AGAIN) {
        g.st.errors++;
        return -1;
    }
    c->carry_len = (uint32_t)(n - off); /* < CP_WIRE_MAX_CMD: a longer command parses */
    memcpy(c->carry, start + off, c->carry_len);
    return rlen ? conn_send(c, g.reply, rlen) : 0;
}

/* ---- listener, loop ----------------------------------------------------------------------- */

static int listen_on(const char *host, int port, int *bound)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) die("socket");
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        fprintf(stderr, "bench_nullsink: --host '%s' is not an IPv4 address\n", host);
        exit(2);
    }
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0) die("bind");
    if (listen(fd, 4096) < 0) die("listen");
    socklen_t len = sizeof a;
    if (getsockname(fd, (struct sockaddr *)&a, &len) < 0) die("getsockname");
    *bound = ntohs(a.sin_port);
    return fd;
}

static void accept_all(int lfd)
{
    for (;;) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno != EAGAIN && errno != EWOULDBLOCK)
                fprintf(stderr, "bench_nullsink: accept: %s\n", strerror(errno));
            return;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one); /* acks are single bytes */
        conn *c = calloc(1, sizeof *c);
        if (!c) {
            close(fd);
            continue;
        }
        c->fd = fd;
        struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
        if (epoll_ctl(g.ep, EPOLL_CTL_ADD, fd, &e) < 0) {
            conn_close(c);
            continue;
        }
        g.st.connections++;
    }
}

static void write_ready_file(const char *path, int port)
{
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
    FILE *f = fopen(tmp, "w");
    if (!f) die(tmp);
    fprintf(f, "agent_port=%d\n", port);
    if (fclose(f) != 0 || rename(tmp, path) != 0) die(path);
}

int main(int argc, char **argv)
{
    const char *host = "0.0.0.0", *ready = NULL;
    int port = 1715, json = 0;
    double duration = 0;
    g.version = CP_PROTOCOL_V3;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--json")) {
            json = 1;
            continue;
        }
        if (!v) {
            usage(stderr);
            return 2;
        }
        i++;
        char *end;
        if (!strcmp(a, "--port")) {
            long p = strtol(v, &end, 10);
            if (*end || end == v || p < 0 || p > 65535) goto bad;
            port = (int)p;
        } else if (!strcmp(a, "--host")) {
            host = v;
        } else if (!strcmp(a, "--ready-file")) {
            ready = v;
        } else if (!strcmp(a, "--duration")) {
            duration = strtod(v, &end);
            if (*end || end == v || duration < 0) goto bad;
        } else if (!strcmp(a, "--protocol-version")) {
            g.version = strtoll(v, &end, 10);
            if (*end || end == v) goto bad;
        } else if (!strcmp(a, "--rotation")) {
            if (parse_rotation(v) != 0) goto bad;
        } else {
            fprintf(stderr, "bench_nullsink: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        }
        continue;
    bad:
        fprintf(stderr, "bench_nullsink: bad value for %s: '%s'\n", a, v);
        return 2;
    }

    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    signal(SIGPIPE, SIG_IGN);
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0) die("sigprocmask");
    int sfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
    if (sfd < 0) die("signalfd");

    g.buf = malloc(CP_WIRE_MAX_CMD + READ_BUF);
    g.reply_cap = 64 * 1024;
    g.reply = malloc(g.reply_cap);
    if (!g.buf || !g.reply) die("malloc");
    g.ep = epoll_create1(EPOLL_CLOEXEC);
    if (g.ep < 0) die("epoll_create1");

    int bound;
    int lfd = listen_on(host, port, &bound);
    struct epoll_event e = {.events = EPOLLIN, .data.u64 = TAG_LISTEN};
    if (epoll_ctl(g.ep, EPOLL_CTL_ADD, lfd, &e) < 0) die("epoll_ctl");
    e = (struct epoll_event){.events = EPOLLIN, .data.u64 = TAG_SIGNAL};
    if (epoll_ctl(g.ep, EPOLL_CTL_ADD, sfd, &e) < 0) die("epoll_ctl");
    if (ready) write_ready_file(ready, bound);
    fprintf(stderr, "bench_nullsink: listening on %s:%d\n", host, bound);

    double t0 = now_s(), deadline = duration > 0 ? t0 + duration : 0;
    struct epoll_event evs[MAX_EVENTS];
    int running = 1;
    while (running) {
        int timeout = -1;
        if (deadline > 0) {
            double left = deadline - now_s();
            if (left <= 0) break;
            timeout = (int)(left * 1000) + 1;
        }
        int n = epoll_wait(g.ep, evs, MAX_EVENTS, timeout);
        if (n < 0) {
            if (errno == EINTR) continue;
            die("epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            if (evs[i].data.u64 == TAG_LISTEN) {
                accept_all(lfd);
            } else if (evs[i].data.u64 == TAG_SIGNAL) {
                running = 0;
            } else {
                conn *c = evs[i].data.ptr;
                int rc = 0;
                if (evs[i].events & EPOLLOUT) rc = conn_drain_out(c);
                else if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) rc = conn_read(c);
                if (rc < 0) conn_close(c);
            }
        }
    }
    double elapsed = now_s() - t0;

    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    double cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
                 (double)ru.ru_stime.tv_usec / 1e6;
    const stats *s = &g.st;
    if (json) {
        printf("{\"elapsed_s\":%.3f,\"bytes\":%llu,\"commands\":%llu,\"rcv_data\":%llu,\"payload_bytes\":%llu,"
               "\"ack_flushes\":%llu,\"inits\":%llu,\"handshakes\":%llu,\"connections\":%llu,\"errors\":%llu,"
               "\"cpu_s\":%.3f,\"max_rss_kb\":%ld}\n",
               elapsed, (unsigned long long)s->bytes, (unsigned long long)s->commands, (unsigned long long)s->data,
               (unsigned long long)s->payload, (unsigned long long)s->flushes, (unsigned long long)s->inits,
               (unsigned long long)s->handshakes, (unsigned long long)s->connections,
               (unsigned long long)s->errors, cpu, ru.ru_maxrss);
    } else {
        printf("bench_nullsink: %.1f s: received %llu bytes, %llu commands (%llu RCV_DATA with %llu payload "
               "bytes, %llu REQUEST_ACK_FLUSH, %llu INIT, %llu handshakes) on %llu connections, %llu closed on "
               "a bad command; CPU %.2f s, max RSS %ld KiB\n",
               elapsed, (unsigned long long)s->bytes, (unsigned long long)s->commands, (unsigned long long)s->data,
               (unsigned long long)s->payload, (unsigned long long)s->flushes, (unsigned long long)s->inits,
               (unsigned long long)s->handshakes, (unsigned long long)s->connections,
               (unsigned long long)s->errors, cpu, ru.ru_maxrss);
    }
    return 0;
}
